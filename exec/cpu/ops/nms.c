/* NonMaxSuppression (10): per batch and class, greedily keep the best
 * scoring boxes (score > score_threshold), dropping any whose IoU with a
 * kept box exceeds iou_threshold, at most max_output_boxes_per_class each.
 * Output [n, 3] int64 (batch, class, box); n depends on the data.
 *
 * As ONNX Runtime computes it (float arithmetic, the same IoU formula and
 * order, ties in score broken by the lower box index), but faster where a
 * class has thousands of candidates (SSDlite's post-processing hands one
 * NMS ~27,000 boxes, every class's shifted apart by torchvision's
 * coordinate trick): the candidates' corners and areas are computed once,
 * sorted once, and each candidate is compared only with the kept boxes
 * whose x-extent shares one of NMS_BUCKETS slices of the candidates'
 * x-range with its own (boxes that share no slice cannot overlap), the
 * comparison stopping at the first box that suppresses it.  Nodes with
 * this output shape run it twice (infer, then run): both are this. */
#include <math.h>
#include <stdlib.h>

#include "op_common.h"

typedef struct cand {
	float score;
	int64_t box;
} cand;

/* A box as the IoU reads it: corners normalised, and its area. */
typedef struct nbox {
	float y1, x1, y2, x2, area;
} nbox;

/* The kept boxes overlapping one slice of the x-range. */
typedef struct bucket {
	nbox *b;
	int64_t n, cap;
} bucket;

#define NMS_BUCKETS 256

static int cand_cmp(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return (x->box > y->box) - (x->box < y->box);
}

static inline float elem(const mfs_tensor *t, int64_t i)
{
	return t->dtype == MFS_DT_FLOAT ? ((const float *)t->data)[i] : (float)mfs_tensor_get_f64(t, i);
}

/* ONNX Runtime's MaxMin (NaN goes where it does). */
static inline void ordered(float l, float r, float *lo, float *hi)
{
	if (l >= r) {
		*lo = r;
		*hi = l;
	} else {
		*lo = l;
		*hi = r;
	}
}

/* std::max and std::min, as ONNX Runtime's IoU uses them. */
static inline float fmax_std(float a, float b) { return a < b ? b : a; }
static inline float fmin_std(float a, float b) { return b < a ? b : a; }

/* Box i of boxes (an offset into the flat tensor), as ONNX Runtime reads
 * it: [y1, x1, y2, x2] in any corner order, or [x_center, y_center,
 * width, height]. */
static nbox box_at(const mfs_tensor *boxes, int64_t i, bool center)
{
	float v[4];
	nbox r;
	for (int k = 0; k < 4; k++)
		v[k] = elem(boxes, i * 4 + k);
	if (center) {
		float hw = v[2] / 2, hh = v[3] / 2;
		r.x1 = v[0] - hw;
		r.x2 = v[0] + hw;
		r.y1 = v[1] - hh;
		r.y2 = v[1] + hh;
	} else {
		ordered(v[1], v[3], &r.x1, &r.x2);
		ordered(v[0], v[2], &r.y1, &r.y2);
	}
	r.area = (r.x2 - r.x1) * (r.y2 - r.y1);
	return r;
}

/* ONNX Runtime's SuppressByIOU. */
static inline bool suppresses(const nbox *a, const nbox *b, float iou_t)
{
	float ix1 = fmax_std(a->x1, b->x1), ix2 = fmin_std(a->x2, b->x2);
	if (ix2 <= ix1)
		return false;
	float iy1 = fmax_std(a->y1, b->y1), iy2 = fmin_std(a->y2, b->y2);
	if (iy2 <= iy1)
		return false;
	float inter = (ix2 - ix1) * (iy2 - iy1);
	if (inter <= 0)
		return false;
	float uni = a->area + b->area - inter;
	if (a->area <= 0 || b->area <= 0 || uni <= 0)
		return false;
	return inter / uni > iou_t;
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

/* The work space of one selection. */
typedef struct nms_ws {
	cand *cs;
	nbox *bx;               /* the candidates' boxes, in sorted order */
	bucket bk[NMS_BUCKETS];
	float x0, scale;        /* slice of x: (x - x0) * scale */
	int nb;                 /* slices in use */
} nms_ws;

static void ws_free(nms_ws *w)
{
	free(w->cs);
	free(w->bx);
	for (int i = 0; i < NMS_BUCKETS; i++)
		free(w->bk[i].b);
}

/* The slices of the x-range [x1, x2] covers. */
static void slices(const nms_ws *w, const nbox *b, int *lo, int *hi)
{
	if (w->nb == 1) {
		*lo = *hi = 0;
		return;
	}
	float a = (b->x1 - w->x0) * w->scale, z = (b->x2 - w->x0) * w->scale;
	*lo = a <= 0 ? 0 : a >= w->nb - 1 ? w->nb - 1 : (int)a;
	*hi = z <= 0 ? 0 : z >= w->nb - 1 ? w->nb - 1 : (int)z;
}

/* Set the slices for the m candidates' boxes: one slice when their
 * x-range is not finite and wide, or when they are few. */
static void slices_plan(nms_ws *w, int64_t m)
{
	float lo = INFINITY, hi = -INFINITY;
	bool finite = true;
	for (int64_t j = 0; j < m; j++) {
		finite &= isfinite(w->bx[j].x1) && isfinite(w->bx[j].x2);
		lo = fminf(lo, w->bx[j].x1);
		hi = fmaxf(hi, w->bx[j].x2);
	}
	w->nb = m < 64 || !finite || !(hi > lo) ? 1 : (int)(m / 16 < NMS_BUCKETS ? m / 16 : NMS_BUCKETS);
	w->x0 = lo;
	w->scale = w->nb > 1 ? (float)w->nb / (hi - lo) : 0;
	if (!isfinite(w->scale))
		w->nb = 1;
	for (int i = 0; i < NMS_BUCKETS; i++)
		w->bk[i].n = 0;
}

static bool bucket_add(bucket *k, const nbox *b)
{
	if (k->n == k->cap) {
		int64_t cap = k->cap ? 2 * k->cap : 16;
		nbox *nb = realloc(k->b, (size_t)cap * sizeof(*nb));
		if (!nb)
			return false;
		k->b = nb;
		k->cap = cap;
	}
	k->b[k->n++] = *b;
	return true;
}

/* Whether a kept box suppresses b. */
static bool suppressed(const nms_ws *w, const nbox *b, float iou_t)
{
	int lo, hi;
	slices(w, b, &lo, &hi);
	for (int s = lo; s <= hi; s++) {
		const bucket *k = &w->bk[s];
		for (int64_t i = 0; i < k->n; i++)
			if (suppresses(b, &k->b[i], iou_t))
				return true;
	}
	return false;
}

/* Select in class c of batch b; writes up to cap triples to out (may be
 * NULL) from *cnt on, counting them all. */
static int nms_class(nms_ws *w, const mfs_tensor *boxes, const mfs_tensor *scores, int64_t b,
		     int64_t c, bool center, float iou_t, float score_t, int64_t maxo,
		     int64_t *out, int64_t cap, int64_t *cnt)
{
	int64_t C = scores->shape.dims[1], N = boxes->shape.dims[1], m = 0, nk = 0;

	for (int64_t i = 0; i < N; i++) {
		float s = elem(scores, (b * C + c) * N + i);
		if (s > score_t)
			w->cs[m++] = (cand){ s, i };
	}
	qsort(w->cs, (size_t)m, sizeof(*w->cs), cand_cmp);
	for (int64_t j = 0; j < m; j++)
		w->bx[j] = box_at(boxes, b * N + w->cs[j].box, center);
	slices_plan(w, m);
	for (int64_t j = 0; j < m && nk < maxo; j++) {
		int lo, hi;
		if (suppressed(w, &w->bx[j], iou_t))
			continue;
		slices(w, &w->bx[j], &lo, &hi);
		for (int s = lo; s <= hi; s++)
			if (!bucket_add(&w->bk[s], &w->bx[j]))
				return -ENOMEM;
		nk++;
		if (out && *cnt < cap) {
			out[3 * *cnt] = b;
			out[3 * *cnt + 1] = c;
			out[3 * *cnt + 2] = w->cs[j].box;
		}
		(*cnt)++;
	}
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
	*n = 0;
	if (maxo <= 0 || !N)
		return 0;
	nms_ws w = { 0 };
	w.cs = malloc((size_t)N * sizeof(*w.cs));
	w.bx = malloc((size_t)N * sizeof(*w.bx));
	rc = w.cs && w.bx ? 0 : -ENOMEM;
	for (int64_t b = 0; b < B && !rc; b++)
		for (int64_t c = 0; c < C && !rc; c++)
			rc = nms_class(&w, boxes, scores, b, c, center, (float)iou_t, (float)score_t,
				       maxo >= (double)INT64_MAX ? INT64_MAX : (int64_t)maxo, out, cap, &cnt);
	ws_free(&w);
	if (rc)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
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
