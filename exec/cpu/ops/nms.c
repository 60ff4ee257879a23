/* NonMaxSuppression (10): per batch and class, greedily keep the best
 * scoring boxes (score > score_threshold), dropping any whose IoU with a
 * kept box exceeds iou_threshold, at most max_output_boxes_per_class each.
 * Output [n, 3] int64 (batch, class, box); n depends on the data. */
#include <math.h>
#include <stdlib.h>

#include "op_common.h"

typedef struct cand {
	float score;
	int64_t box;
} cand;

static int cand_cmp(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return (x->box > y->box) - (x->box < y->box);
}

/* Corners (y1, x1, y2, x2) of box i, normalised so y1 <= y2, x1 <= x2. */
static void corners(const mfs_tensor *boxes, int64_t i, bool center, double *c)
{
	double v[4];
	for (int k = 0; k < 4; k++)
		v[k] = mfs_tensor_get_f64(boxes, i * 4 + k);
	if (center) {  /* [x_center, y_center, width, height] */
		c[0] = v[1] - v[3] / 2;
		c[1] = v[0] - v[2] / 2;
		c[2] = v[1] + v[3] / 2;
		c[3] = v[0] + v[2] / 2;
		return;
	}
	c[0] = fmin(v[0], v[2]);
	c[1] = fmin(v[1], v[3]);
	c[2] = fmax(v[0], v[2]);
	c[3] = fmax(v[1], v[3]);
}

static double iou(const double *a, const double *b)
{
	double ih = fmin(a[2], b[2]) - fmax(a[0], b[0]);
	double iw = fmin(a[3], b[3]) - fmax(a[1], b[1]);
	double inter, uni;

	if (ih <= 0 || iw <= 0)
		return 0;
	inter = ih * iw;
	uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
	return uni > 0 ? inter / uni : 0;
}

static int opt_scalar(mfs_op_ctx *ctx, int i, double def, double *v)
{
	const mfs_tensor *t = oc_in(ctx, i);

	*v = def;
	if (!t || mfs_shape_numel(&t->shape) == 0)
		return 0;
	if (mfs_shape_numel(&t->shape) != 1)
		return mfs_op_fail(ctx, EINVAL, "input %d must be a scalar", i);
	if (!t->data)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	*v = mfs_tensor_get_f64(t, 0);
	return 0;
}

/* Run the selection; writes up to cap triples to out (may be NULL) and
 * counts them all in *n. */
static int nms(mfs_op_ctx *ctx, int64_t *out, int64_t cap, int64_t *n)
{
	const mfs_tensor *boxes = ctx->in[0], *scores;
	bool center = onnx_attr_int(ctx->node, "center_point_box", 0) != 0;
	double maxo, iou_t, score_t;
	int64_t B, C, N, cnt = 0;
	int rc;

	if ((rc = oc_need(ctx, 1)))
		return rc;
	scores = ctx->in[1];
	if (boxes->shape.rank != 3 || boxes->shape.dims[2] != 4 || scores->shape.rank != 3 ||
	    scores->shape.dims[0] != boxes->shape.dims[0] ||
	    scores->shape.dims[2] != boxes->shape.dims[1])
		return mfs_op_fail(ctx, EINVAL, "expected boxes [B,N,4] and scores [B,C,N]");
	if ((rc = opt_scalar(ctx, 2, 0, &maxo)) || (rc = opt_scalar(ctx, 3, 0, &iou_t)) ||
	    (rc = opt_scalar(ctx, 4, -INFINITY, &score_t)))
		return rc;
	if ((boxes->shape.dims[1] && !boxes->data) || (mfs_shape_numel(&scores->shape) && !scores->data))
		return MFS_SHAPE_DEPENDS_ON_DATA;
	B = boxes->shape.dims[0];
	C = scores->shape.dims[1];
	N = boxes->shape.dims[1];
	if (maxo <= 0 || !N) {
		*n = 0;
		return 0;
	}
	cand *cs = malloc((size_t)N * sizeof(*cs));
	double *kept = malloc((size_t)N * 4 * sizeof(double));
	if (!cs || !kept) {
		free(cs);
		free(kept);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	for (int64_t b = 0; b < B; b++)
		for (int64_t c = 0; c < C; c++) {
			int64_t m = 0, nk = 0;
			for (int64_t i = 0; i < N; i++) {
				float s = (float)mfs_tensor_get_f64(scores, (b * C + c) * N + i);
				if (s > score_t)
					cs[m++] = (cand){ s, i };
			}
			qsort(cs, (size_t)m, sizeof(*cs), cand_cmp);
			for (int64_t j = 0; j < m && nk < maxo; j++) {
				double box[4];
				bool keep = true;
				corners(boxes, b * N + cs[j].box, center, box);
				for (int64_t k = 0; k < nk && keep; k++)
					keep = iou(box, kept + 4 * k) <= iou_t;
				if (!keep)
					continue;
				for (int q = 0; q < 4; q++)
					kept[4 * nk + q] = box[q];
				nk++;
				if (out && cnt < cap) {
					out[3 * cnt] = b;
					out[3 * cnt + 1] = c;
					out[3 * cnt + 2] = cs[j].box;
				}
				cnt++;
			}
		}
	free(cs);
	free(kept);
	*n = cnt;
	return 0;
}

static int nms_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	int64_t n = 0;
	mfs_shape s = { .rank = 2, .dims = { 0, 3 } };
	int rc = nms(ctx, NULL, 0, &n);

	if (rc)
		return rc;
	s.dims[0] = n;
	oc_set_out(ctx, 0, MFS_DT_INT64, &s);
	return 0;
}

static int nms_run(mfs_op_ctx *ctx)
{
	int64_t n = 0;
	int rc = nms(ctx, ctx->out[0]->data, ctx->out[0]->shape.dims[0], &n);

	if (rc)
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "inputs unknown at run");
	if (n != ctx->out[0]->shape.dims[0])
		return mfs_op_fail(ctx, EIO, "selection changed between infer and run");
	return 0;
}

MFS_OP(NonMaxSuppression, 10, .infer = nms_infer, .run = nms_run);
