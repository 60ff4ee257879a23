/* json_stream.c - see json_stream.h. */
#include "json_stream.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec_impl.h"
#include "float_text.h"

/* Deeper than this is refused (jansson's own limit is 2048): skipping is
 * recursive, and no tensor or request needs more. */
#define MAX_DEPTH 256

typedef struct jcur {
	const char *doc, *p, *end;
	bool checked;      /* inside a document already checked whole */
} jcur;

/* "invalid JSON at line L column C: why KEY", for the position at. */
static int fail_at_key(const char *doc, const char *at, mfs_error *err,
		       const char *why, const char *key)
{
	int line = 1, col = 1;
	for (const char *q = doc; q < at; q++) {
		if (*q == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	return mfs_fail(err, EINVAL, "invalid JSON at line %d column %d: %s%s",
			line, col, why, key);
}

static int fail_at(const char *doc, const char *at, mfs_error *err, const char *why)
{
	return fail_at_key(doc, at, err, why, "");
}

static int cfail(const jcur *c, mfs_error *err, const char *why)
{
	return fail_at(c->doc, c->p, err, c->p < c->end ? why : "unexpected end of text");
}

static void skip_ws(jcur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' ||
				 *c->p == '\t'))
		c->p++;
}

static bool at(const jcur *c, char ch) { return c->p < c->end && *c->p == ch; }

static bool is_digit(const jcur *c) { return c->p < c->end && *c->p >= '0' && *c->p <= '9'; }

static int skip_string(jcur *c, mfs_error *err)
{
	c->p++;   /* the opening quote */
	while (c->p < c->end) {
		unsigned char ch = (unsigned char)*c->p;
		if (ch == '"') {
			c->p++;
			return 0;
		}
		if (ch < 0x20)
			return cfail(c, err, "control character in a string");
		if (ch == '\\') {
			c->p++;
			if (at(c, 'u')) {
				for (int k = 1; k <= 4; k++) {
					c->p++;
					if (c->p >= c->end ||
					    !strchr("0123456789abcdefABCDEF", *c->p) || !*c->p)
						return cfail(c, err, "invalid \\u escape");
				}
			} else if (c->p >= c->end || !*c->p || !strchr("\"\\/bfnrt", *c->p)) {
				return cfail(c, err, "invalid escape in a string");
			}
		}
		c->p++;
	}
	return fail_at(c->doc, c->p, err, "unterminated string");
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int skip_number(jcur *c, mfs_error *err)
{
	if (at(c, '-'))
		c->p++;
	if (at(c, '0')) {
		c->p++;
	} else if (is_digit(c)) {
		while (is_digit(c))
			c->p++;
	} else {
		return cfail(c, err, "invalid number");
	}
	if (at(c, '.')) {
		c->p++;
		if (!is_digit(c))
			return cfail(c, err, "invalid number");
		while (is_digit(c))
			c->p++;
	}
	if (at(c, 'e') || at(c, 'E')) {
		c->p++;
		if (at(c, '+') || at(c, '-'))
			c->p++;
		if (!is_digit(c))
			return cfail(c, err, "invalid number");
		while (is_digit(c))
			c->p++;
	}
	return 0;
}

static int skip_literal(jcur *c, const char *word, mfs_error *err)
{
	size_t n = strlen(word);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
		return cfail(c, err, "invalid literal");
	c->p += n;
	return 0;
}

/* A scalar: string, number, true, false or null. */
static int skip_scalar(jcur *c, mfs_error *err)
{
	if (c->p >= c->end)
		return cfail(c, err, "");
	switch (*c->p) {
	case '"': return skip_string(c, err);
	case 't': return skip_literal(c, "true", err);
	case 'f': return skip_literal(c, "false", err);
	case 'n': return skip_literal(c, "null", err);
	default:
		if (*c->p == '-' || is_digit(c))
			return skip_number(c, err);
		return cfail(c, err, "unexpected character");
	}
}

static int skip_value(jcur *c, int depth, mfs_error *err);

/* After an element or member: ',' (then more) or the closing bracket.
 * Returns 1 to go on, 0 at the end. */
static int next_or_close(jcur *c, char close, mfs_error *err)
{
	skip_ws(c);
	if (at(c, ',')) {
		c->p++;
		skip_ws(c);
		return 1;
	}
	if (at(c, close)) {
		c->p++;
		return 0;
	}
	return cfail(c, err, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
}

static int skip_container(jcur *c, int depth, mfs_error *err)
{
	char close = *c->p == '[' ? ']' : '}';
	int rc;

	if (depth >= MAX_DEPTH)
		return cfail(c, err, "nested too deeply");
	c->p++;
	skip_ws(c);
	if (at(c, close)) {
		c->p++;
		return 0;
	}
	do {
		if (close == '}') {
			if (!at(c, '"'))
				return cfail(c, err, "expected a string key");
			if ((rc = skip_string(c, err)))
				return rc;
			skip_ws(c);
			if (!at(c, ':'))
				return cfail(c, err, "expected ':'");
			c->p++;
		}
		if ((rc = skip_value(c, depth + 1, err)))
			return rc;
	} while ((rc = next_or_close(c, close, err)) == 1);
	return rc;
}

/* Skip a value of a checked document: only strings and brackets need
 * looking at (a string may hold brackets); no error is possible. */
static void skip_checked(jcur *c)
{
	int depth = 0;
	do {
		char ch = *c->p++;
		if (ch == '"') {
			while (c->p < c->end && *c->p != '"')
				c->p += *c->p == '\\' ? 2 : 1;
			c->p++;
		} else if (ch == '[' || ch == '{') {
			depth++;
		} else if (ch == ']' || ch == '}') {
			depth--;
		} else if (depth == 0) {
			/* a number or literal: to the first character that
			 * cannot be in one */
			while (c->p < c->end && !strchr(",]} \n\r\t", *c->p))
				c->p++;
		}
	} while (depth > 0 && c->p < c->end);
}

static int skip_value(jcur *c, int depth, mfs_error *err)
{
	skip_ws(c);
	if (c->checked && c->p < c->end) {
		skip_checked(c);
		return 0;
	}
	if (at(c, '[') || at(c, '{'))
		return skip_container(c, depth, err);
	return skip_scalar(c, err);
}

mfs_jspan mfs_jspan_doc(const char *text, size_t len)
{
	return (mfs_jspan){ text, text, len, false };
}

int mfs_json_value(mfs_jspan *span, mfs_error *err)
{
	jcur c = { span->doc, span->p, span->p + span->len, false };
	const char *start;
	int rc;

	skip_ws(&c);
	if (c.p >= c.end)
		return cfail(&c, err, "");
	start = c.p;
	if ((rc = skip_value(&c, 0, err)))
		return rc;
	span->p = start;
	span->len = (size_t)(c.p - start);
	skip_ws(&c);
	if (c.p < c.end)
		return cfail(&c, err, "text after the value");
	span->checked = true;
	return 0;
}

/* Decode the key at c (a validated string) into key[256]. */
static int read_key(jcur *c, char key[256], mfs_error *err)
{
	const char *start = c->p;
	int rc = skip_string(c, err);
	if (rc)
		return rc;
	size_t n = (size_t)(c->p - start) - 2;
	if (!memchr(start + 1, '\\', n)) {
		n = n < 255 ? n : 255;
		memcpy(key, start + 1, n);
		key[n] = '\0';
		return 0;
	}
	/* Escapes: rare in keys, left to jansson. */
	json_t *s = mfs_json_load((mfs_jspan){ c->doc, start, (size_t)(c->p - start), false },
				  "a key", err);
	if (!s)
		return err && err->code == ENOMEM ? -ENOMEM : -EINVAL;
	snprintf(key, 256, "%s", json_string_value(s));
	json_decref(s);
	return 0;
}

/* Walk the container in span (its first character is open), calling
 * member(key, value) or element(i, value). */
static int walk_container(mfs_jspan span, char open, mfs_json_member_fn member,
			  mfs_json_element_fn element, void *ctx, mfs_error *err)
{
	jcur c = { span.doc, span.p, span.p + span.len, span.checked };
	char close = open == '[' ? ']' : '}';
	char key[256];
	size_t i = 0;
	int rc;

	skip_ws(&c);
	if (!at(&c, open))
		return cfail(&c, err, open == '[' ? "expected an array" : "expected an object");
	c.p++;
	skip_ws(&c);
	if (at(&c, close))
		return 0;
	do {
		if (open == '{') {
			if (!at(&c, '"'))
				return cfail(&c, err, "expected a string key");
			if ((rc = read_key(&c, key, err)))
				return rc;
			skip_ws(&c);
			if (!at(&c, ':'))
				return cfail(&c, err, "expected ':'");
			c.p++;
		}
		skip_ws(&c);
		const char *v = c.p;
		if ((rc = skip_value(&c, 1, err)))
			return rc;
		mfs_jspan val = { span.doc, v, (size_t)(c.p - v), span.checked };
		rc = open == '{' ? member(ctx, key, val, err) : element(ctx, i++, val, err);
		if (rc)
			return rc;
	} while ((rc = next_or_close(&c, close, err)) == 1);
	return rc;
}

int mfs_json_members(mfs_jspan obj, mfs_json_member_fn fn, void *ctx,
		     mfs_error *err)
{
	return walk_container(obj, '{', fn, NULL, ctx, err);
}

int mfs_json_elements(mfs_jspan arr, mfs_json_element_fn fn, void *ctx,
		      mfs_error *err)
{
	return walk_container(arr, '[', NULL, fn, ctx, err);
}

json_t *mfs_json_load(mfs_jspan span, const char *what, mfs_error *err)
{
	json_error_t jerr;
	json_t *j = json_loadb(span.p, span.len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
			       &jerr);
	if (j)
		return j;
	/* jansson reports running out of memory either with its code or,
	 * when its first buffer cannot be had, with no text at all (line -1,
	 * column -1): both are said as what they are. */
	if (json_error_code(&jerr) == json_error_out_of_memory || !jerr.text[0]) {
		mfs_fail(err, ENOMEM, "out of memory while reading %s", what);
		return NULL;
	}
	size_t pos = jerr.position > 0 && (size_t)jerr.position <= span.len ?
		     (size_t)jerr.position : 0;
	fail_at(span.doc, span.p + pos, err, jerr.text);
	mfs_error_prefix(err, "%s: ", what);
	return NULL;
}

bool mfs_json_plain_string(mfs_jspan span, char *out, size_t size)
{
	if (span.len < 2 || span.p[0] != '"' || span.p[span.len - 1] != '"' || span.len - 2 >= size)
		return false;
	for (size_t i = 1; i + 1 < span.len; i++) {
		unsigned char ch = (unsigned char)span.p[i];
		if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\')
			return false;
	}
	memcpy(out, span.p + 1, span.len - 2);
	out[span.len - 2] = '\0';
	return true;
}

char *mfs_json_quoted(const char *s)
{
	size_t n = 0;
	while (s[n] >= 0x20 && s[n] <= 0x7e && s[n] != '"' && s[n] != '\\')
		n++;
	if (s[n] == '\0') {
		char *q = malloc(n + 3);
		if (q) {
			q[0] = '"';
			memcpy(q + 1, s, n);
			memcpy(q + 1 + n, "\"", 2);
		}
		return q;
	}
	json_t *j = json_string(s);
	char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return q;
}

/* A "shape" of plain non-negative integers ([1, 3, 224, 224]) without a
 * parser; false for anything else (leading zeros, signs, fractions,
 * exponents, too many dims or digits), which jansson then reads and
 * judges. */
static bool plain_shape(const mfs_jspan *span, mfs_shape *s)
{
	jcur c = { span->doc, span->p, span->p + span->len, false };
	if (!at(&c, '['))
		return false;
	c.p++;
	skip_ws(&c);
	s->rank = 0;
	if (at(&c, ']'))
		return c.p + 1 == c.end;
	for (;;) {
		if (!is_digit(&c) || s->rank >= MFS_MAX_RANK)
			return false;
		const char *start = c.p;
		int64_t v = 0;
		while (is_digit(&c) && c.p - start < 18)
			v = v * 10 + (*c.p++ - '0');
		if (is_digit(&c) || (*start == '0' && c.p - start > 1))
			return false;
		s->dims[s->rank++] = v;
		skip_ws(&c);
		if (at(&c, ']'))
			return c.p + 1 == c.end;
		if (!at(&c, ','))
			return false;
		c.p++;
		skip_ws(&c);
	}
}

/* ---- tensor objects ---- */

struct split_ctx {
	mfs_json_tensor *parts;
};

static int tensor_member(void *vctx, const char *key, mfs_jspan val, mfs_error *err)
{
	struct split_ctx *ctx = vctx;
	static const char *const keys[] = { "name", "shape", "datatype", "data", "parameters" };
	mfs_jspan *slots[] = { &ctx->parts->name, &ctx->parts->shape, &ctx->parts->datatype,
			       &ctx->parts->data, &ctx->parts->parameters };

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		if (strcmp(key, keys[k]) != 0)
			continue;
		if (slots[k]->p)
			return fail_at_key(val.doc, val.p, err, "duplicate key ", key);
		*slots[k] = val;
		return 0;
	}
	return mfs_fail(err, EINVAL,
			"unknown key \"%.64s\" (a tensor has name, shape, datatype, data, parameters)",
			key);
}

int mfs_json_tensor_split(mfs_jspan obj, mfs_json_tensor *parts, mfs_error *err)
{
	struct split_ctx ctx = { parts };

	memset(parts, 0, sizeof(*parts));
	return mfs_json_members(obj, tensor_member, &ctx, err);
}

/* Pass 1: the nesting of "data".  The first array closed at each level
 * sets that level's length, every later one must match; the first value
 * (or the first empty array) sets the rank, and every value must sit at
 * it.  Counts the values; allocates nothing. */
typedef struct nest {
	mfs_shape shape;
	bool have_rank;
	bool have_dim[MFS_MAX_RANK];
	size_t n_values;
} nest;

static int not_regular(size_t idx, int level, mfs_error *err)
{
	return mfs_fail(err, EINVAL, "data is not a regular nested array (at index %zu, level %d)",
			idx, level);
}

static int walk_nest(jcur *c, nest *ns, int level, mfs_error *err)
{
	int rc;

	skip_ws(c);
	if (!at(c, '[')) {
		if (!ns->have_rank) {
			ns->have_rank = true;
			ns->shape.rank = level;
		} else if (level != ns->shape.rank) {
			return not_regular(ns->n_values, level, err);
		}
		if (at(c, '{'))
			return mfs_fail(err, EINVAL, "value at index %zu is not a number (an object)",
					ns->n_values);
		if ((rc = skip_scalar(c, err)))
			return rc;
		ns->n_values++;
		return 0;
	}
	if (level >= MFS_MAX_RANK)
		return mfs_fail(err, EINVAL, "data is nested deeper than %d levels", MFS_MAX_RANK);
	if (ns->have_rank && level >= ns->shape.rank)
		return mfs_fail(err, EINVAL,
				"data is not a regular nested array (too deep at index %zu)",
				ns->n_values);
	size_t first = ns->n_values;
	int64_t count = 0;
	c->p++;
	skip_ws(c);
	if (at(c, ']')) {
		c->p++;
	} else {
		do {
			count++;
			if ((rc = walk_nest(c, ns, level + 1, err)))
				return rc;
		} while ((rc = next_or_close(c, ']', err)) == 1);
		if (rc)
			return rc;
	}
	if (!ns->have_rank) {   /* an empty array before any value */
		ns->have_rank = true;
		ns->shape.rank = level + 1;
	}
	if (!ns->have_dim[level]) {
		ns->have_dim[level] = true;
		ns->shape.dims[level] = count;
	} else if (ns->shape.dims[level] != count) {
		return not_regular(first, level, err);
	}
	return 0;
}

/* Pass 2 helpers: one value at c (checked by pass 1) into slot i. */
static int put_string(mfs_tensor *t, size_t i, const char *s, size_t n, mfs_error *err)
{
	static const struct { const char *word; double v; } words[] = {
		{ "nan", NAN }, { "inf", INFINITY }, { "infinity", INFINITY },
		{ "+inf", INFINITY }, { "+infinity", INFINITY },
		{ "-inf", -INFINITY }, { "-infinity", -INFINITY },
	};
	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
		if (strlen(words[k].word) == n && strncasecmp(s, words[k].word, n) == 0)
			return mfs_codec_put_f64(t, i, words[k].v, err);
	return mfs_fail(err, EINVAL, "string value at index %zu is not a number", i);
}

static int put_number(mfs_tensor *t, size_t i, const char *s, size_t n, mfs_error *err)
{
	char buf[128];
	bool neg = s[0] == '-', integral = true, overflow = false;
	uint64_t acc = 0;

	for (size_t k = neg; k < n; k++) {
		if (s[k] < '0' || s[k] > '9') {
			integral = false;
			break;
		}
		unsigned d = (unsigned)(s[k] - '0');
		if (acc > (UINT64_MAX - d) / 10)
			overflow = true;
		acc = acc * 10 + d;
	}
	if (integral && !overflow) {
		if (!neg && acc <= (uint64_t)INT64_MAX)
			return mfs_codec_put_i64(t, i, (int64_t)acc, err);
		if (neg && acc <= (uint64_t)INT64_MAX + 1)
			return mfs_codec_put_i64(t, i, (int64_t)(0 - acc), err);
		if (!neg)
			return mfs_codec_put_u64(t, i, acc, err);
	}
	/* A fraction, an exponent, or an integer past 64 bits: as a double
	 * (put_f64 refuses what does not fit the datatype). */
	if (n >= sizeof(buf))
		return mfs_fail(err, EINVAL, "number at index %zu has more than %zu characters",
				i, sizeof(buf) - 1);
	double d;
	if (mfs_decimal_to_double(s, n, &d))
		return mfs_codec_put_f64(t, i, d, err);
	memcpy(buf, s, n);
	buf[n] = '\0';
	return mfs_codec_put_f64(t, i, strtod(buf, NULL), err);
}

static int put_one(jcur *c, mfs_tensor *t, size_t i, mfs_error *err)
{
	const char *s = c->p;
	int rc = skip_scalar(c, err);
	size_t n = (size_t)(c->p - s);

	if (rc)
		return rc;
	switch (*s) {
	case '"':
		return put_string(t, i, s + 1, n - 2, err);
	case 't':
	case 'f':
		if (t->dtype != MFS_DT_BOOL)
			return mfs_fail(err, EINVAL, "value %s at index %zu is not a number",
					*s == 't' ? "true" : "false", i);
		return mfs_codec_put_i64(t, i, *s == 't', err);
	case 'n':
		return mfs_fail(err, EINVAL, "value at index %zu is not a number (null)", i);
	default:
		return put_number(t, i, s, n, err);
	}
}

/* Pass 2: the values in text order; brackets and commas are known to
 * be right (pass 1), so they are only stepped over. */
static int fill_values(mfs_jspan data, mfs_tensor *t, size_t count, mfs_error *err)
{
	jcur c = { data.doc, data.p, data.p + data.len, false };
	size_t i = 0;
	int rc;

	while (c.p < c.end) {
		char ch = *c.p;
		if (ch == '[' || ch == ']' || ch == ',' || ch == ' ' || ch == '\n' ||
		    ch == '\r' || ch == '\t') {
			c.p++;
			continue;
		}
		if (i >= count)
			return mfs_fail(err, EINVAL, "data has more values than the shape holds");
		if ((rc = put_one(&c, t, i++, err)))
			return rc;
	}
	return 0;
}

static int parse_shape(const mfs_jspan *span, mfs_shape *s, mfs_error *err)
{
	if (plain_shape(span, s))
		return 0;
	json_t *j = mfs_json_load(*span, "\"shape\"", err);
	int rc = 0;

	if (!j)
		return err && err->code == ENOMEM ? -ENOMEM : -EINVAL;
	if (!json_is_array(j)) {
		rc = mfs_fail(err, EINVAL, "\"shape\" is not an array");
	} else if (json_array_size(j) > MFS_MAX_RANK) {
		rc = mfs_fail(err, EINVAL, "\"shape\" has more than %d dims", MFS_MAX_RANK);
	} else {
		s->rank = (int)json_array_size(j);
		for (int i = 0; i < s->rank && !rc; i++) {
			json_t *d = json_array_get(j, (size_t)i);
			if (!json_is_integer(d) || json_integer_value(d) < 0)
				rc = mfs_fail(err, EINVAL,
					      "\"shape\" must hold non-negative integers");
			else
				s->dims[i] = json_integer_value(d);
		}
	}
	json_decref(j);
	return rc;
}

/* Numbers only: BYTES data go to the string reader (codec_string.c)
 * when the model expects strings, so here they are a mismatch. */
static int numeric_dtype(mfs_dtype dt, const mfs_tensor_spec *spec, mfs_error *err)
{
	const char *want = spec ? mfs_dtype_kserve_name(spec->dtype) : NULL;

	if (dt != MFS_DT_STRING)
		return 0;
	return mfs_fail(err, EINVAL, "\"datatype\" is BYTES, but the model expects %s",
			want ? want : "numbers");
}

static int parse_dtype(const mfs_json_tensor *parts, const mfs_tensor_spec *spec,
		       mfs_dtype *dt, mfs_error *err)
{
	if (!parts->datatype.p)
		return mfs_codec_text_dtype(spec, dt, err);
	char name[32];
	if (mfs_json_plain_string(parts->datatype, name, sizeof(name)) &&
	    (*dt = mfs_dtype_from_kserve(name)) != MFS_DT_UNDEFINED && mfs_dtype_size(*dt) != 0)
		return numeric_dtype(*dt, spec, err);   /* the other errors are said below */
	json_t *j = mfs_json_load(parts->datatype, "\"datatype\"", err);
	int rc = 0;
	if (!j)
		return err && err->code == ENOMEM ? -ENOMEM : -EINVAL;
	if (!json_is_string(j)) {
		rc = mfs_fail(err, EINVAL, "\"datatype\" is not a string");
	} else {
		*dt = mfs_dtype_from_kserve(json_string_value(j));
		if (*dt == MFS_DT_UNDEFINED)
			rc = mfs_fail(err, EINVAL, "unknown datatype \"%.32s\"",
				      json_string_value(j));
		else if (mfs_dtype_size(*dt) == 0)
			rc = mfs_fail(err, ENOTSUP, "datatype %s is not supported",
				      json_string_value(j));
	}
	json_decref(j);
	return rc;
}

int mfs_json_tensor_decode(const mfs_json_tensor *parts,
			   const mfs_tensor_spec *spec, mfs_tensor *out,
			   mfs_error *err)
{
	mfs_dtype dt = MFS_DT_UNDEFINED;
	nest ns;
	mfs_shape shape;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&ns, 0, sizeof(ns));
	if ((rc = parse_dtype(parts, spec, &dt, err)))
		return rc;
	jcur c = { parts->data.doc, parts->data.p, parts->data.p + parts->data.len, false };
	if ((rc = walk_nest(&c, &ns, 0, err)))
		return rc;
	shape = ns.shape;
	if (parts->shape.p) {
		if ((rc = parse_shape(&parts->shape, &shape, err)))
			return rc;
		int64_t n_shape = mfs_codec_numel(shape.dims, shape.rank, -1);
		if (n_shape < 0)
			return mfs_fail(err, EINVAL, "\"shape\" is too large");
		if ((uint64_t)n_shape != ns.n_values) {
			char a[128], b[128];
			return mfs_fail(err, EINVAL,
					"\"shape\" %s holds %lld values, but \"data\" %s has %zu",
					mfs_shape_format(&shape, a, sizeof(a)), (long long)n_shape,
					mfs_shape_format(&ns.shape, b, sizeof(b)), ns.n_values);
		}
	}
	/* The element count is bounded by the text (pass 1 counted it), so
	 * this is never a huge allocation. */
	if ((rc = mfs_tensor_alloc(out, dt, &shape, err)))
		return rc;
	if ((rc = fill_values(parts->data, out, ns.n_values, err))) {
		mfs_tensor_release(out);
		memset(out, 0, sizeof(*out));
	}
	return rc;
}
