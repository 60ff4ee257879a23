/* Unique (11): the distinct elements (or, with `axis`, distinct slices
 * along it), sorted ascending (default) or in order of first occurrence,
 * with first-occurrence indices, inverse indices and counts.  Output sizes
 * depend on the data. */
#include <stdlib.h>
#include <string.h>

#include "op_common.h"

typedef struct uq {
	const mfs_tensor *x;
	int64_t n, outer, inner;      /* slices along the axis */
	int64_t *order;               /* slice ids, sorted */
	int64_t *group;               /* per slice: its unique's position */
	int64_t *first, *count;       /* per unique */
	int64_t u;                    /* number of uniques */
} uq;

static int slice_cmp(const uq *q, int64_t a, int64_t b)
{
	for (int64_t o = 0; o < q->outer; o++)
		for (int64_t j = 0; j < q->inner; j++) {
			double x = oc_load(q->x->dtype, q->x->data, (o * q->n + a) * q->inner + j);
			double y = oc_load(q->x->dtype, q->x->data, (o * q->n + b) * q->inner + j);
			if (x != y)
				return x < y ? -1 : 1;
		}
	return 0;
}

static int order_cmp(const void *pa, const void *pb, void *arg)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
	int c = slice_cmp(arg, a, b);
	return c ? c : (a > b) - (a < b);
}

static int first_cmp(const void *pa, const void *pb, void *arg)
{
	const uq *q = arg;
	int64_t a = q->first[*(const int64_t *)pa], b = q->first[*(const int64_t *)pb];
	return (a > b) - (a < b);
}

static void uq_free(uq *q)
{
	free(q->order);
	free(q->group);
	free(q->first);
	free(q->count);
}

/* Find the uniques; `sorted` orders them by value, else by first use. */
static int uq_build(mfs_op_ctx *ctx, uq *q, int *axis)
{
	const mfs_tensor *x = ctx->in[0];
	const onnx_attr *a = onnx_node_attr(ctx->node, "axis");
	bool sorted = onnx_attr_int(ctx->node, "sorted", 1) != 0;
	int64_t *perm = NULL, *rank = NULL;
	int rc;

	memset(q, 0, sizeof(*q));
	q->x = x;
	*axis = -1;
	if ((rc = oc_need_numeric(ctx, x, true)) && x->dtype != MFS_DT_BOOL)
		return rc;
	if (a && (rc = oc_axis(ctx, a->i, x->shape.rank, axis)))
		return rc;
	q->outer = q->inner = 1;
	if (*axis < 0)
		q->n = mfs_shape_numel(&x->shape);
	else
		oc_split_at(&x->shape, *axis, &q->outer, &q->n, &q->inner);
	if (q->n && !x->data)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	size_t sz = (size_t)(q->n + 1) * sizeof(int64_t);
	q->order = malloc(sz);
	q->group = malloc(sz);
	q->first = malloc(sz);
	q->count = malloc(sz);
	perm = malloc(sz);
	rank = malloc(sz);
	if (!q->order || !q->group || !q->first || !q->count || !perm || !rank) {
		free(perm);
		free(rank);
		uq_free(q);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	for (int64_t i = 0; i < q->n; i++)
		q->order[i] = i;
	qsort_r(q->order, (size_t)q->n, sizeof(int64_t), order_cmp, q);
	for (int64_t i = 0; i < q->n; i++) {
		int64_t s = q->order[i];
		if (!i || slice_cmp(q, q->order[i - 1], s)) {
			q->first[q->u] = s;  /* ties sort by index: s is the first */
			q->count[q->u++] = 0;
		}
		q->group[s] = q->u - 1;
		q->count[q->u - 1]++;
	}
	if (!sorted) {
		/* Renumber the uniques by first occurrence. */
		for (int64_t i = 0; i < q->u; i++)
			perm[i] = i;
		qsort_r(perm, (size_t)q->u, sizeof(int64_t), first_cmp, q);
		for (int64_t i = 0; i < q->u; i++)
			rank[perm[i]] = i;
		for (int64_t i = 0; i < q->n; i++)
			q->group[i] = rank[q->group[i]];
		for (int64_t i = 0; i < q->u; i++)
			q->order[i] = q->count[perm[i]];
		for (int64_t i = 0; i < q->u; i++) {
			q->count[i] = q->order[i];
			q->order[i] = q->first[perm[i]];
		}
		memcpy(q->first, q->order, (size_t)q->u * sizeof(int64_t));
	}
	free(perm);
	free(rank);
	return 0;
}

static void uq_shapes(mfs_op_ctx *ctx, const uq *q, int axis)
{
	mfs_shape y = ctx->in[0]->shape, v = { .rank = 1 };

	if (axis < 0) {
		y.rank = 1;
		y.dims[0] = q->u;
	} else {
		y.dims[axis] = q->u;
	}
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &y);
	v.dims[0] = q->u;
	oc_set_out(ctx, 1, MFS_DT_INT64, &v);
	v.dims[0] = q->n;
	oc_set_out(ctx, 2, MFS_DT_INT64, &v);
	v.dims[0] = q->u;
	oc_set_out(ctx, 3, MFS_DT_INT64, &v);
}

static int unique_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	uq q;
	int axis, rc = uq_build(ctx, &q, &axis);

	if (rc)
		return rc;
	uq_shapes(ctx, &q, axis);
	uq_free(&q);
	return 0;
}

static int unique_run(mfs_op_ctx *ctx)
{
	mfs_tensor *y = oc_out(ctx, 0), *ix = oc_out(ctx, 1), *inv = oc_out(ctx, 2),
		   *cnt = oc_out(ctx, 3);
	size_t es = mfs_dtype_size(ctx->in[0]->dtype);
	uq q;
	int axis, rc = uq_build(ctx, &q, &axis);

	if (rc)
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "input unknown at run");
	for (int64_t k = 0; k < q.u; k++) {
		for (int64_t o = 0; y && q.inner && o < q.outer; o++)
			memcpy((char *)y->data + ((o * q.u + k) * q.inner) * (int64_t)es,
			       (const char *)q.x->data + ((o * q.n + q.first[k]) * q.inner) * (int64_t)es,
			       (size_t)q.inner * es);
		if (ix)
			((int64_t *)ix->data)[k] = q.first[k];
		if (cnt)
			((int64_t *)cnt->data)[k] = q.count[k];
	}
	for (int64_t i = 0; inv && i < q.n; i++)
		((int64_t *)inv->data)[i] = q.group[i];
	uq_free(&q);
	return 0;
}

MFS_OP(Unique, 11, .infer = unique_infer, .run = unique_run);
