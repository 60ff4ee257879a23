/* StringSplit (opset 20): splits every element of a string tensor at
 * `delimiter` (each occurrence; consecutive ones give empty strings) or,
 * without one, at runs of whitespace (none at either end), into at most
 * maxsplit + 1 pieces.  Output 0 has X's shape plus the largest count,
 * short rows padded with empty strings; output 1 (int64, X's shape) the
 * count of each.  An empty element gives one empty piece with a
 * delimiter, none without (Python's str.split, as ONNX's reference):
 * after maxsplit pieces the rest of the element is the last piece, less
 * its leading whitespace but with its trailing whitespace. */
#include <ctype.h>
#include <string.h>

#include "string_util.h"

typedef struct split_args {
	const char *delim;
	size_t dl;
	int64_t maxsplit;   /* -1: no limit */
} split_args;

static int split_args_read(mfs_op_ctx *ctx, split_args *a)
{
	a->delim = onnx_attr_string(ctx->node, "delimiter", "");
	a->dl = strlen(a->delim);
	a->maxsplit = onnx_attr_int(ctx->node, "maxsplit", -1);
	if (a->maxsplit < -1)
		return mfs_op_fail(ctx, EINVAL, "maxsplit %lld is negative", (long long)a->maxsplit);
	return 0;
}

/* Walk the pieces of s: call put(k, start, len) for each (put may be
 * NULL); returns their count. */
typedef int (*piece_fn)(void *u, int64_t k, const char *p, size_t len);

static int64_t split_one(const split_args *a, const mfs_string *s, piece_fn put, void *u)
{
	const char *p = s->ptr ? s->ptr : "", *end = p + s->len;
	int64_t k = 0;

	if (a->dl) {
		for (;;) {
			const char *hit = a->maxsplit >= 0 && k >= a->maxsplit ? NULL
					  : memmem(p, (size_t)(end - p), a->delim, a->dl);
			const char *stop = hit ? hit : end;
			if (put && put(u, k, p, (size_t)(stop - p)))
				return -1;
			k++;
			if (!hit)
				return k;
			p = hit + a->dl;
		}
	}
	while (p < end) {
		const char *q;
		while (p < end && isspace((unsigned char)*p))
			p++;
		if (p == end)
			break;
		q = p;
		if (a->maxsplit >= 0 && k >= a->maxsplit) {
			q = end;   /* the rest, its trailing space kept (str.split) */
		} else {
			while (q < end && !isspace((unsigned char)*q))
				q++;
		}
		if (put && put(u, k, p, (size_t)(q - p)))
			return -1;
		k++;
		p = q;
	}
	return k;
}

static int ssplit_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	int64_t n = mfs_shape_numel(&x->shape), most = 0;
	split_args a;
	int rc;

	if (x->dtype != MFS_DT_STRING)
		return mfs_op_fail(ctx, EINVAL, "input is %s, expected string",
				   mfs_dtype_onnx_name(x->dtype));
	if (x->shape.rank >= MFS_MAX_RANK)
		return mfs_op_fail(ctx, EINVAL, "input rank %d leaves no room for the pieces",
				   x->shape.rank);
	if ((rc = split_args_read(ctx, &a)))
		return rc;
	if (ctx->n_out > 1 && ctx->out[1]) {
		ctx->out[1]->dtype = MFS_DT_INT64;
		ctx->out[1]->shape = x->shape;
	}
	if (!x->data && n)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	for (int64_t i = 0; i < n; i++) {
		int64_t c = split_one(&a, mfs_string_at(x, i), NULL, NULL);
		most = c > most ? c : most;
	}
	ctx->out[0]->dtype = MFS_DT_STRING;
	ctx->out[0]->shape = x->shape;
	ctx->out[0]->shape.dims[x->shape.rank] = most;
	ctx->out[0]->shape.rank = x->shape.rank + 1;
	return 0;
}

typedef struct put_ctx {
	mfs_op_ctx *ctx;
	int64_t base;
} put_ctx;

static int put_piece(void *u, int64_t k, const char *p, size_t len)
{
	put_ctx *pc = u;
	return mfs_string_set(pc->ctx->out[0], pc->base + k, p, len, pc->ctx->err);
}

static int ssplit_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *y = ctx->out[0], *z = ctx->n_out > 1 ? ctx->out[1] : NULL;
	int64_t n = mfs_shape_numel(&x->shape), w = y->shape.dims[y->shape.rank - 1];
	split_args a;
	int rc = split_args_read(ctx, &a);

	if (y->nbytes)
		memset(y->data, 0, y->nbytes);   /* the padding: empty strings */
	for (int64_t i = 0; !rc && i < n; i++) {
		put_ctx pc = { ctx, i * w };
		int64_t c = split_one(&a, mfs_string_at(x, i), put_piece, &pc);
		if (c < 0)
			return -ctx->err->code;
		if (z)
			((int64_t *)z->data)[i] = c;
	}
	return rc;
}

MFS_OP(StringSplit, 20, .flags = MFS_OP_STRINGS, .infer = ssplit_infer, .run = ssplit_run);
