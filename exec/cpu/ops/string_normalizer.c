/* StringNormalizer (opset 10): drops stopwords from a string tensor of
 * shape [C] or [1, C] and changes the case of the rest
 * (case_change_action NONE, LOWER, UPPER).  Stopwords match exactly, or
 * ignoring case when is_case_sensitive is 0.  Case mapping is Unicode's
 * default (string_util.h: str_case_map) whatever `locale` says: locales
 * change it only for a few languages (Turkish dotted i), and the daemon
 * does not depend on the locales installed.  When every word goes, the
 * output is one empty string ([1] or [1, 1]), as ONNX specifies. */
#include <stdlib.h>
#include <string.h>

#include "string_util.h"

typedef struct norm_args {
	int action;      /* 0 NONE, 1 LOWER, 2 UPPER */
	bool sensitive;
	char **stop;     /* attribute strings, borrowed */
	size_t n_stop;
} norm_args;

static int norm_args_read(mfs_op_ctx *ctx, norm_args *a)
{
	const char *act = onnx_attr_string(ctx->node, "case_change_action", "NONE");
	const onnx_attr *sw = onnx_node_attr(ctx->node, "stopwords");

	a->action = !strcmp(act, "NONE") ? 0 : !strcmp(act, "LOWER") ? 1 : !strcmp(act, "UPPER") ? 2 : -1;
	if (a->action < 0)
		return mfs_op_fail(ctx, EINVAL, "case_change_action '%s' is not NONE, LOWER or UPPER", act);
	a->sensitive = onnx_attr_int(ctx->node, "is_case_sensitive", 0) != 0;
	a->stop = sw && sw->type == ONNX_ATTR_STRINGS ? sw->strings : NULL;
	a->n_stop = a->stop ? (size_t)sw->n_strings : 0;
	return 0;
}

/* Is s a stopword?  scratch has room for 4 * (longest of s, stopword). */
static bool is_stop(const norm_args *a, const mfs_string *s, char *scratch, char *scratch2)
{
	for (size_t k = 0; k < a->n_stop; k++) {
		size_t wl = strlen(a->stop[k]);
		if (a->sensitive) {
			if (wl == s->len && !memcmp(a->stop[k], s->ptr ? s->ptr : "", wl))
				return true;
			continue;
		}
		size_t l1 = str_case_map(s->ptr ? s->ptr : "", s->len, false, scratch);
		size_t l2 = str_case_map(a->stop[k], wl, false, scratch2);
		if (l1 == l2 && !memcmp(scratch, scratch2, l1))
			return true;
	}
	return false;
}

static size_t longest(const mfs_tensor *x, const norm_args *a)
{
	size_t m = 1;
	int64_t n = mfs_shape_numel(&x->shape);
	for (int64_t i = 0; i < n; i++)
		if (mfs_string_at(x, i)->len > m)
			m = mfs_string_at(x, i)->len;
	for (size_t k = 0; k < a->n_stop; k++)
		if (strlen(a->stop[k]) > m)
			m = strlen(a->stop[k]);
	return m;
}

/* Keep marks (NULL: count only); returns the words kept, or -ENOMEM. */
static int64_t norm_scan(mfs_op_ctx *ctx, const norm_args *a, bool *keep)
{
	const mfs_tensor *x = ctx->in[0];
	int64_t n = mfs_shape_numel(&x->shape), kept = 0;
	size_t m = longest(x, a);
	char *s1 = a->sensitive ? NULL : malloc(4 * m), *s2 = a->sensitive ? NULL : malloc(4 * m);

	if (!a->sensitive && (!s1 || !s2)) {
		free(s1);
		free(s2);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	for (int64_t i = 0; i < n; i++) {
		bool k = !is_stop(a, mfs_string_at(x, i), s1, s2);
		if (keep)
			keep[i] = k;
		kept += k;
	}
	free(s1);
	free(s2);
	return kept;
}

static int norm_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	norm_args a;
	int64_t kept;
	int rc;

	if (x->dtype != MFS_DT_STRING)
		return mfs_op_fail(ctx, EINVAL, "input is %s, expected string",
				   mfs_dtype_onnx_name(x->dtype));
	if (!(x->shape.rank == 1 || (x->shape.rank == 2 && x->shape.dims[0] == 1)))
		return mfs_op_fail(ctx, EINVAL, "input must have shape [C] or [1, C]");
	if ((rc = norm_args_read(ctx, &a)))
		return rc;
	ctx->out[0]->dtype = MFS_DT_STRING;
	ctx->out[0]->shape = x->shape;
	if (!a.n_stop)
		return 0;
	if (!x->data && mfs_shape_numel(&x->shape))
		return MFS_SHAPE_DEPENDS_ON_DATA;
	if ((kept = norm_scan(ctx, &a, NULL)) < 0)
		return (int)kept;
	ctx->out[0]->shape.dims[x->shape.rank - 1] = kept ? kept : 1;
	return 0;
}

static int norm_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *y = ctx->out[0];
	int64_t n = mfs_shape_numel(&x->shape), j = 0;
	bool *keep = calloc((size_t)n + 1, sizeof(*keep));
	char *buf = malloc(4 * longest(x, &(norm_args){ 0 }));
	norm_args a;
	int rc = keep && buf ? norm_args_read(ctx, &a) : mfs_op_fail(ctx, ENOMEM, "out of memory");

	if (!rc && norm_scan(ctx, &a, keep) < 0)
		rc = -ctx->err->code;
	for (int64_t i = 0; !rc && i < n; i++) {
		const mfs_string *s = mfs_string_at(x, i);
		size_t l;
		if (!keep[i])
			continue;
		if (a.action == 0) {
			rc = mfs_string_set(y, j++, s->ptr, s->len, ctx->err);
			continue;
		}
		l = str_case_map(s->ptr ? s->ptr : "", s->len, a.action == 2, buf);
		rc = mfs_string_set(y, j++, buf, l, ctx->err);
	}
	if (!rc && j == 0)   /* every word was a stopword: one empty string */
		rc = mfs_string_set(y, 0, "", 0, ctx->err);
	free(keep);
	free(buf);
	return rc;
}

MFS_OP(StringNormalizer, 10, .flags = MFS_OP_STRINGS, .infer = norm_infer, .run = norm_run);
