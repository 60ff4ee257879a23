/* config_pbtxt.c - protobuf text format (what Triton's config.pbtxt is
 * written in) into the schema-free tree of config_tree.h.
 *
 * The grammar is protobuf's TextFormat, all of it that a ModelConfig can
 * use: `name: scalar`, `name { ... }` or `name: { ... }` (also `< ... >`),
 * repeated fields as repeated entries or as `name: [a, b]` lists (of
 * scalars or of messages), optional ',' or ';' after a field, '#'
 * comments, strings in single or double quotes with C escapes (octal,
 * \x, \u, \U) and adjacent strings concatenated, numbers in decimal, hex
 * or octal.  Extensions (`[pkg.ext]`) and google.protobuf.Any are not part
 * of ModelConfig and are refused.  Which names are fields is decided by
 * config_schema.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tree.h"

typedef struct lexer {
	const char *p, *end;
	int line;
	const char *source;
	mfs_error *err;
	int nodes;
	/* growing buffer for string values */
	char *buf;
	size_t buf_len, buf_cap;
} lexer;

static int lx_fail(lexer *lx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int lx_fail(lexer *lx, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mfs_fail(lx->err, EINVAL, "%s:%d: %s", lx->source, lx->line, msg);
}

/* Skip spaces, newlines and comments. */
static void skip_blank(lexer *lx)
{
	while (lx->p < lx->end) {
		char c = *lx->p;
		if (c == '\n') {
			lx->line++;
			lx->p++;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			lx->p++;
		} else if (c == '#') {
			while (lx->p < lx->end && *lx->p != '\n')
				lx->p++;
		} else {
			break;
		}
	}
}

/* The next significant character, or 0 at the end. */
static char peek(lexer *lx)
{
	skip_blank(lx);
	return lx->p < lx->end ? *lx->p : 0;
}

static bool is_ident_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool is_ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Describe the next token for "expected X, got Y" messages. */
static const char *describe_next(lexer *lx, char *buf, size_t size)
{
	size_t n = 0;

	if (lx->p >= lx->end)
		return "the end of the file";
	if (*lx->p == '\0')
		return "a NUL byte";
	while (lx->p + n < lx->end && n < 20 && is_ident_char(lx->p[n]))
		n++;
	if (n == 0)
		n = 1;
	if (!isprint((unsigned char)lx->p[0]))
		snprintf(buf, size, "byte 0x%02x", (unsigned char)lx->p[0]);
	else
		snprintf(buf, size, "'%.*s'", (int)n, lx->p);
	return buf;
}

static int buf_put(lexer *lx, char c)
{
	if (lx->buf_len + 1 >= lx->buf_cap) {
		size_t cap = lx->buf_cap ? 2 * lx->buf_cap : 64;
		char *b = realloc(lx->buf, cap);
		if (!b)
			return mfs_fail(lx->err, ENOMEM, "%s: out of memory", lx->source);
		lx->buf = b;
		lx->buf_cap = cap;
	}
	lx->buf[lx->buf_len++] = c;
	return 0;
}

static int buf_put_utf8(lexer *lx, unsigned long cp)
{
	int rc = 0;

	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return lx_fail(lx, "bad character U+%04lX in a string", cp);
	if (cp < 0x80) {
		rc = buf_put(lx, (char)cp);
	} else if (cp < 0x800) {
		rc = buf_put(lx, (char)(0xC0 | (cp >> 6)));
		rc = rc ? rc : buf_put(lx, (char)(0x80 | (cp & 0x3F)));
	} else if (cp < 0x10000) {
		rc = buf_put(lx, (char)(0xE0 | (cp >> 12)));
		rc = rc ? rc : buf_put(lx, (char)(0x80 | ((cp >> 6) & 0x3F)));
		rc = rc ? rc : buf_put(lx, (char)(0x80 | (cp & 0x3F)));
	} else {
		rc = buf_put(lx, (char)(0xF0 | (cp >> 18)));
		rc = rc ? rc : buf_put(lx, (char)(0x80 | ((cp >> 12) & 0x3F)));
		rc = rc ? rc : buf_put(lx, (char)(0x80 | ((cp >> 6) & 0x3F)));
		rc = rc ? rc : buf_put(lx, (char)(0x80 | (cp & 0x3F)));
	}
	return rc;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One quoted string at lx->p, appended to lx->buf. */
static int lex_string(lexer *lx)
{
	char quote = *lx->p++;
	int rc;

	for (;;) {
		char c;

		if (lx->p >= lx->end || *lx->p == '\n')
			return lx_fail(lx, "unterminated string");
		c = *lx->p++;
		if (c == quote)
			return 0;
		if (c == '\0')
			return lx_fail(lx, "NUL byte in a string");
		if (c != '\\') {
			if ((rc = buf_put(lx, c)))
				return rc;
			continue;
		}
		if (lx->p >= lx->end)
			return lx_fail(lx, "unterminated string");
		c = *lx->p++;
		switch (c) {
		case 'n': rc = buf_put(lx, '\n'); break;
		case 't': rc = buf_put(lx, '\t'); break;
		case 'r': rc = buf_put(lx, '\r'); break;
		case 'a': rc = buf_put(lx, '\a'); break;
		case 'b': rc = buf_put(lx, '\b'); break;
		case 'f': rc = buf_put(lx, '\f'); break;
		case 'v': rc = buf_put(lx, '\v'); break;
		case '\\': case '\'': case '"': case '?':
			rc = buf_put(lx, c);
			break;
		case 'x': case 'X': {
			int v = 0, n = 0, h;
			while (n < 2 && lx->p < lx->end && (h = hex_value(*lx->p)) >= 0) {
				v = v * 16 + h;
				lx->p++;
				n++;
			}
			if (n == 0)
				return lx_fail(lx, "\\x without hex digits in a string");
			if (v == 0)
				return lx_fail(lx, "NUL byte in a string");
			rc = buf_put(lx, (char)v);
			break;
		}
		case 'u': case 'U': {
			int want = c == 'u' ? 4 : 8, h;
			unsigned long cp = 0;
			for (int i = 0; i < want; i++) {
				if (lx->p >= lx->end || (h = hex_value(*lx->p)) < 0)
					return lx_fail(lx, "\\%c needs %d hex digits", c, want);
				cp = cp * 16 + (unsigned long)h;
				lx->p++;
			}
			rc = buf_put_utf8(lx, cp);
			break;
		}
		default:
			if (c >= '0' && c <= '7') {
				int v = c - '0', n = 1;
				while (n < 3 && lx->p < lx->end && *lx->p >= '0' && *lx->p <= '7') {
					v = v * 8 + (*lx->p++ - '0');
					n++;
				}
				if (v == 0 || v > 255)
					return lx_fail(lx, "bad octal escape in a string");
				rc = buf_put(lx, (char)v);
				break;
			}
			return lx_fail(lx, "unknown escape '\\%c' in a string",
				       isprint((unsigned char)c) ? c : '?');
		}
		if (rc)
			return rc;
	}
}

/* A scalar value into node (kind and text). */
static int parse_scalar(lexer *lx, cfg_node *node)
{
	char c = peek(lx), what[40];
	const char *start;
	int rc;

	if (c == '"' || c == '\'') {
		lx->buf_len = 0;
		/* Adjacent literals concatenate, as in C and protobuf. */
		while (c == '"' || c == '\'') {
			if ((rc = lex_string(lx)))
				return rc;
			c = peek(lx);
		}
		node->kind = CFG_STRING;
		node->text = strndup(lx->buf ? lx->buf : "", lx->buf_len);
		return node->text ? 0 : mfs_fail(lx->err, ENOMEM, "%s: out of memory", lx->source);
	}
	start = lx->p;
	if (c == '-') {
		lx->p++;
		skip_blank(lx);
		if (lx->p >= lx->end || !(isalnum((unsigned char)*lx->p) || *lx->p == '.'))
			return lx_fail(lx, "expected a number after '-', got %s",
				       describe_next(lx, what, sizeof(what)));
	}
	if (lx->p < lx->end && (isdigit((unsigned char)*lx->p) || *lx->p == '.')) {
		const char *s = lx->p;
		bool hex = lx->end - s > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
		while (lx->p < lx->end &&
		       (isalnum((unsigned char)*lx->p) || *lx->p == '.' ||
			((*lx->p == '+' || *lx->p == '-') && !hex &&
			 (lx->p[-1] == 'e' || lx->p[-1] == 'E'))))
			lx->p++;
		node->kind = CFG_NUMBER;
		/* "-  5" is "-5" */
		if (*start == '-') {
			if (asprintf(&node->text, "-%.*s", (int)(lx->p - s), s) < 0)
				node->text = NULL;
		} else {
			node->text = strndup(s, (size_t)(lx->p - s));
		}
	} else if (lx->p < lx->end && is_ident_start(*lx->p)) {
		const char *s = lx->p;
		while (lx->p < lx->end && is_ident_char(*lx->p))
			lx->p++;
		node->kind = *start == '-' ? CFG_NUMBER : CFG_IDENT;   /* -inf */
		if (*start == '-') {
			if (asprintf(&node->text, "-%.*s", (int)(lx->p - s), s) < 0)
				node->text = NULL;
		} else {
			node->text = strndup(s, (size_t)(lx->p - s));
		}
	} else {
		return lx_fail(lx, "expected a value for '%s', got %s", node->name,
			       describe_next(lx, what, sizeof(what)));
	}
	return node->text ? 0 : mfs_fail(lx->err, ENOMEM, "%s: out of memory", lx->source);
}

static int parse_fields(lexer *lx, cfg_node *msg, char close, int depth);

static int parse_message(lexer *lx, cfg_node *node, int depth)
{
	char open = *lx->p++;

	node->kind = CFG_MESSAGE;
	if (depth >= CFG_MAX_DEPTH)
		return lx_fail(lx, "messages nested more than %d deep", CFG_MAX_DEPTH);
	return parse_fields(lx, node, open == '{' ? '}' : '>', depth + 1);
}

/* Add a field named name[0..len) to msg and parse its value. */
static int parse_value(lexer *lx, cfg_node *msg, const char *name, size_t len,
		       bool colon, int index, int depth)
{
	cfg_node *node;
	char c = peek(lx);

	if (++lx->nodes > CFG_MAX_NODES)
		return lx_fail(lx, "too many fields (more than %d)", CFG_MAX_NODES);
	node = cfg_node_add(msg, name, len, lx->line);
	if (!node)
		return mfs_fail(lx->err, ENOMEM, "%s: out of memory", lx->source);
	node->index = index;
	if (c == '{' || c == '<')
		return parse_message(lx, node, depth);
	if (!colon)
		return lx_fail(lx, "expected ':' after field '%s'", node->name);
	return parse_scalar(lx, node);
}

static int parse_fields(lexer *lx, cfg_node *msg, char close, int depth)
{
	char what[40];
	int rc;

	for (;;) {
		const char *name;
		size_t len;
		bool colon = false;
		char c = peek(lx);

		if (c == close && close) {
			lx->p++;
			return 0;
		}
		if (lx->p >= lx->end) {
			if (close)
				return lx_fail(lx, "missing '%c' at the end of the file", close);
			return 0;
		}
		if (c == '[')
			return lx_fail(lx, "extensions and Any ('[...]' field names) are not part of a model config");
		if (!is_ident_start(c))
			return lx_fail(lx, "expected a field name, got %s",
				       describe_next(lx, what, sizeof(what)));
		name = lx->p;
		while (lx->p < lx->end && is_ident_char(*lx->p))
			lx->p++;
		len = (size_t)(lx->p - name);
		if (peek(lx) == ':') {
			lx->p++;
			colon = true;
		}
		if (peek(lx) == '[') {
			int index = 0;
			lx->p++;
			if (peek(lx) == ']') {
				lx->p++;
			} else {
				for (;;) {
					/* A list of messages needs no colon; of scalars, one. */
					rc = parse_value(lx, msg, name, len, colon, index++, depth);
					if (rc)
						return rc;
					c = peek(lx);
					if (c == ']') {
						lx->p++;
						break;
					}
					if (c != ',')
						return lx_fail(lx, "expected ',' or ']' in the list '%.*s', got %s",
							       (int)len, name,
							       describe_next(lx, what, sizeof(what)));
					lx->p++;
				}
			}
		} else {
			rc = parse_value(lx, msg, name, len, colon, -1, depth);
			if (rc)
				return rc;
		}
		c = peek(lx);
		if (c == ',' || c == ';')
			lx->p++;
	}
}

int mfs_config_parse_pbtxt(const char *text, size_t len, const char *source,
			   mfs_model_config *out, mfs_error *err)
{
	lexer lx = {
		.p = text, .end = text + len, .line = 1,
		.source = source ? source : "config.pbtxt", .err = err,
	};
	cfg_node root;
	int rc;

	memset(&root, 0, sizeof(root));
	root.kind = CFG_MESSAGE;
	root.index = -1;
	mfs_config_init(out);
	rc = parse_fields(&lx, &root, 0, 0);
	free(lx.buf);
	if (rc == 0) {
		cfg_node_link(&root);
		rc = cfg_tree_to_config(&root, lx.source, false, out, err);
	}
	cfg_node_release(&root);
	if (rc)
		mfs_config_release(out);
	return rc;
}
