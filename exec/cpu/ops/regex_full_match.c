/* RegexFullMatch (opset 20): whether every element of a string tensor
 * matches the `pattern` attribute as a whole, into a bool tensor of its
 * shape.
 *
 * ONNX specifies RE2's syntax; PCRE2 reads it (RE2's syntax is nearly a
 * subset of Perl's, which PCRE2 implements), so a pattern PCRE2 cannot
 * compile is refused at load as unsupported, naming the node.  The match
 * is anchored at both ends (PCRE2_ANCHORED | PCRE2_ENDANCHORED: the
 * whole element, as RE2::FullMatch), in UTF-8 mode: bytes that are not
 * UTF-8 match nothing, so an element holding any never matches.
 * PCRE2 backtracks where RE2 would not, so a match limit bounds the work
 * of one element: a pattern that reaches it on some input fails that run
 * with EINVAL instead of holding a worker for minutes.
 *
 * The pattern is compiled once when the model loads, to refuse it there
 * (check), and once per node and execution context to match with
 * (prepare, kept in the node's state); never per run. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>

#include "op.h"

/* Steps of the matcher per element (PCRE2's default is 10 million: a
 * few seconds of catastrophic backtracking). */
#define REGEX_MATCH_LIMIT 1000000u

typedef struct regex_state {
	pcre2_code *code;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
} regex_state;

static void regex_release(void *p)
{
	regex_state *s = p;

	if (!s)
		return;
	pcre2_match_data_free(s->md);
	pcre2_match_context_free(s->mctx);
	pcre2_code_free(s->code);
	free(s);
}

/* The node's pattern compiled, or NULL with ctx->err filled. */
static pcre2_code *regex_compile(mfs_op_ctx *ctx)
{
	const onnx_attr *a = onnx_node_attr(ctx->node, "pattern");
	PCRE2_UCHAR msg[160];
	PCRE2_SIZE at = 0;
	pcre2_code *code;
	int ec = 0;

	if (!a || a->type != ONNX_ATTR_STRING) {
		mfs_op_fail(ctx, EINVAL, "the attribute 'pattern' (a string) is missing");
		return NULL;
	}
	code = pcre2_compile((PCRE2_SPTR)a->s, a->s_len,
			     PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED,
			     &ec, &at, NULL);
	if (!code) {
		pcre2_get_error_message(ec, msg, sizeof(msg));
		mfs_op_fail(ctx, ENOTSUP, "pattern '%.80s' is not supported: %s at offset %zu",
			    a->s, (const char *)msg, (size_t)at);
	}
	return code;
}

static int regex_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];

	if (x->dtype != MFS_DT_STRING)
		return mfs_op_fail(ctx, EINVAL, "input is %s, expected string",
				   mfs_dtype_onnx_name(x->dtype));
	ctx->out[0]->dtype = MFS_DT_BOOL;
	ctx->out[0]->shape = x->shape;
	return 0;
}

static int regex_check(mfs_op_ctx *ctx)
{
	pcre2_code *code = regex_compile(ctx);

	if (!code)
		return -ctx->err->code;
	pcre2_code_free(code);
	return 0;
}

static int regex_prepare(mfs_op_ctx *ctx)
{
	regex_state *s;

	if (*ctx->state)   /* new shapes, the same pattern */
		return 0;
	if (!(s = calloc(1, sizeof(*s))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	if (!(s->code = regex_compile(ctx))) {
		free(s);
		return -ctx->err->code;
	}
	s->md = pcre2_match_data_create_from_pattern(s->code, NULL);
	s->mctx = pcre2_match_context_create(NULL);
	if (!s->md || !s->mctx) {
		regex_release(s);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	pcre2_set_match_limit(s->mctx, REGEX_MATCH_LIMIT);
	*ctx->state = s;
	return 0;
}

static int regex_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	regex_state *s = *ctx->state;
	uint8_t *y = ctx->out[0]->data;
	const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
	int64_t n = mfs_shape_numel(&x->shape);

	for (int64_t i = 0; i < n; i++) {
		const mfs_string *e = mfs_string_at(x, i);
		int rc = pcre2_match(s->code, (PCRE2_SPTR)(e->ptr ? e->ptr : ""), e->len, 0, 0,
				     s->md, s->mctx);
		if (rc == PCRE2_ERROR_MATCHLIMIT)
			return mfs_op_fail(ctx, EINVAL,
					   "element %lld: the pattern backtracks past the match limit (%u steps)",
					   (long long)i, REGEX_MATCH_LIMIT);
		if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
			PCRE2_UCHAR msg[160];
			pcre2_get_error_message(rc, msg, sizeof(msg));
			return mfs_op_fail(ctx, EINVAL, "element %lld: %s", (long long)i,
					   (const char *)msg);
		}
		/* PCRE2_MATCH_INVALID_UTF treats bytes that are not UTF-8 as an
		 * end of the subject, ENDANCHORED included: the match must
		 * really reach the element's end */
		y[i] = rc >= 0 && ov[0] == 0 && ov[1] == e->len;
	}
	return 0;
}

MFS_OP(RegexFullMatch, 20, .flags = MFS_OP_STRINGS, .infer = regex_infer,
       .prepare = regex_prepare, .run = regex_run, .release = regex_release,
       .check = regex_check);
