/* NonMaxSuppression with thousands of boxes a class (SSDlite's
 * post-processing, torchvision's coordinate trick that shifts each class
 * apart) against a plain greedy selection written here: every candidate
 * compared with every kept box, as ONNX Runtime does.  The operator's
 * slices of the x-range must select exactly the same boxes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "op_harness.h"

/* ONNX Runtime's IoU test, corners [y1, x1, y2, x2] in any order. */
static bool ref_suppress(const float *a, const float *b, float t)
{
	float ax1 = fminf(a[1], a[3]), ax2 = fmaxf(a[1], a[3]), ay1 = fminf(a[0], a[2]), ay2 = fmaxf(a[0], a[2]);
	float bx1 = fminf(b[1], b[3]), bx2 = fmaxf(b[1], b[3]), by1 = fminf(b[0], b[2]), by2 = fmaxf(b[0], b[2]);
	float ix1 = fmaxf(ax1, bx1), ix2 = fminf(ax2, bx2), iy1 = fmaxf(ay1, by1), iy2 = fminf(ay2, by2);
	if (ix2 <= ix1 || iy2 <= iy1)
		return false;
	float inter = (ix2 - ix1) * (iy2 - iy1);
	float aa = (ax2 - ax1) * (ay2 - ay1), ab = (bx2 - bx1) * (by2 - by1);
	float uni = aa + ab - inter;
	if (inter <= 0 || aa <= 0 || ab <= 0 || uni <= 0)
		return false;
	return inter / uni > t;
}

/* The greedy selection of one class: indices into *sel, returns count. */
static int64_t ref_class(const float *boxes, const float *scores, int64_t n, int64_t maxo,
			 float iou_t, float score_t, int64_t *sel)
{
	int64_t *order = malloc(sizeof(int64_t) * (size_t)n), m = 0, k = 0;
	assert_non_null(order);
	for (int64_t i = 0; i < n; i++)
		if (scores[i] > score_t)
			order[m++] = i;
	for (int64_t i = 1; i < m; i++)   /* insertion sort: score down, index up */
		for (int64_t j = i; j > 0; j--) {
			int64_t a = order[j - 1], b = order[j];
			if (scores[a] > scores[b] || (scores[a] == scores[b] && a < b))
				break;
			order[j - 1] = b;
			order[j] = a;
		}
	for (int64_t i = 0; i < m && k < maxo; i++) {
		bool keep = true;
		for (int64_t j = 0; j < k && keep; j++)
			keep = !ref_suppress(boxes + 4 * order[i], boxes + 4 * sel[j], iou_t);
		if (keep)
			sel[k++] = order[i];
	}
	free(order);
	return k;
}

static float frand(void)
{
	return (float)rand() / (float)RAND_MAX;
}

/* n boxes in `classes` groups, each group shifted by 1000 * group along
 * both axes (the coordinate trick), clustered so that many overlap;
 * scores with ties. */
static void make_boxes(float *boxes, float *scores, int64_t n, int groups)
{
	for (int64_t i = 0; i < n; i++) {
		float off = 1000.0f * (float)(i % groups);
		float cy = off + 300 * frand(), cx = off + 300 * frand();
		float h = 5 + 60 * frand(), w = 5 + 60 * frand();
		float *b = boxes + 4 * i;
		b[0] = cy; b[1] = cx; b[2] = cy + h; b[3] = cx + w;
		if (i % 7 == 0) {   /* flipped corners */
			b[0] = cy + h;
			b[2] = cy;
		}
		scores[i] = (float)(rand() % 500) / 500.0f;
	}
}

static void nms_check(int64_t n, int groups, int64_t maxo, float iou_t, float score_t)
{
	float *boxes = malloc(sizeof(float) * 4 * (size_t)n), *scores = malloc(sizeof(float) * (size_t)n);
	int64_t *sel = malloc(sizeof(int64_t) * (size_t)n);
	harness h;
	int64_t bd[3] = { 1, n, 4 }, sd[3] = { 1, 1, n }, one[1] = { 1 };

	assert_true(boxes && scores && sel);
	make_boxes(boxes, scores, n, groups);
	int64_t k = ref_class(boxes, scores, n, maxo, iou_t, score_t, sel);
	h_init(&h, "NonMaxSuppression", 11, 1);
	h_in(&h, MFS_DT_FLOAT, 3, bd, boxes);
	h_in(&h, MFS_DT_FLOAT, 3, sd, scores);
	h_in(&h, MFS_DT_INT64, 1, one, &maxo);
	h_in(&h, MFS_DT_FLOAT, 1, one, &iou_t);
	h_in(&h, MFS_DT_FLOAT, 1, one, &score_t);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, (int)k, 3);
	const int64_t *o = h.out[0].data;
	for (int64_t i = 0; i < k; i++) {
		assert_int_equal(o[3 * i], 0);
		assert_int_equal(o[3 * i + 1], 0);
		assert_int_equal(o[3 * i + 2], sel[i]);
	}
	h_free(&h);
	free(boxes);
	free(scores);
	free(sel);
}

static void test_nms_many_boxes(void **st)
{
	(void)st;
	srand(7);
	nms_check(3000, 1, 3000, 0.5f, 0.0f);     /* one cluster: slices overlap */
	nms_check(6000, 30, 6000, 0.45f, 0.01f);  /* 30 classes shifted apart */
	nms_check(4000, 10, 50, 0.3f, 0.2f);      /* the output limit first */
	nms_check(40, 3, 40, 0.5f, 0.0f);         /* few: one slice */
}

/* A NaN or infinite corner keeps the selection to one slice and still
 * answers as the plain selection does. */
static void test_nms_non_finite(void **st)
{
	(void)st;
	float boxes[4 * 200], scores[200];
	int64_t sel[200], maxo = 200, bd[3] = { 1, 200, 4 }, sd[3] = { 1, 1, 200 }, one[1] = { 1 };
	float iou_t = 0.5f, score_t = 0.0f;
	harness h;

	srand(3);
	make_boxes(boxes, scores, 200, 4);
	boxes[4 * 5 + 1] = NAN;
	boxes[4 * 9 + 3] = INFINITY;
	int64_t k = ref_class(boxes, scores, 200, maxo, iou_t, score_t, sel);
	h_init(&h, "NonMaxSuppression", 11, 1);
	h_in(&h, MFS_DT_FLOAT, 3, bd, boxes);
	h_in(&h, MFS_DT_FLOAT, 3, sd, scores);
	h_in(&h, MFS_DT_INT64, 1, one, &maxo);
	h_in(&h, MFS_DT_FLOAT, 1, one, &iou_t);
	h_in(&h, MFS_DT_FLOAT, 1, one, &score_t);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, (int)k, 3);
	h_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nms_many_boxes),
		cmocka_unit_test(test_nms_non_finite),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
