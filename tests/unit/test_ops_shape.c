/* Unit tests for the shape, data-movement, reduction and normalisation
 * operators: each builds an onnx_node and mfs_op_ctx by hand, runs infer,
 * allocates the outputs and runs the operator, without the engine. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "op_harness.h"

static void assert_floats(const mfs_tensor *t, const float *want, int n, double tol)
{
	assert_int_equal(mfs_shape_numel(&t->shape), n);
	for (int i = 0; i < n; i++)
		if (fabs(((const float *)t->data)[i] - want[i]) > tol) {
			fprintf(stderr, "element %d: %g, want %g\n", i,
				((const float *)t->data)[i], want[i]);
			fail();
		}
}

static float seq[64];

/* ---- tests ----------------------------------------------------------- */

static void test_reshape(void **st)
{
	harness h;
	int64_t xd[] = { 2, 3, 4 }, sd[] = { 3 }, shp[] = { 0, -1, 2 };
	(void)st;
	h_init(&h, "Reshape", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 3, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, sd, shp);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 3, 2, 6, 2);
	assert_floats(&h.out[0], seq, 24, 0);
	h_free(&h);

	/* Shape unknown at load: the engine must try again at run. */
	h_init(&h, "Reshape", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 3, xd, NULL);
	h_in(&h, MFS_DT_INT64, 1, sd, NULL);
	assert_int_equal(h_infer(&h), MFS_SHAPE_DEPENDS_ON_DATA);

	/* Element counts that do not match, two -1s, negative dims. */
	int64_t bad[][3] = { { 5, -1, 0 }, { -1, -1, 2 }, { 2, -3, 4 }, { 7, 1, 1 } };
	for (int i = 0; i < 4; i++) {
		h_init(&h, "Reshape", 13, 1);
		h_in(&h, MFS_DT_FLOAT, 3, xd, seq);
		h_in(&h, MFS_DT_INT64, 1, sd, bad[i]);
		assert_int_equal(h_infer(&h), -EINVAL);
		assert_non_null(strstr(h.err.msg, "Reshape 'n'"));
	}
	/* allowzero (opset 14): a 0 is a real zero-size dim. */
	int64_t z[] = { 0, 4 }, zd[] = { 2 }, ed[] = { 0, 3 };
	h_init(&h, "Reshape", 14, 1);
	h_attr_int(&h, "allowzero", 1);
	h_in(&h, MFS_DT_FLOAT, 2, ed, seq);
	h_in(&h, MFS_DT_INT64, 1, zd, z);
	assert_int_equal(h_infer(&h), 0);
	assert_shape(&h.out[0], 2, 0, 4);
}

static void test_squeeze_unsqueeze(void **st)
{
	harness h;
	int64_t xd[] = { 1, 3, 1, 2 }, ad[] = { 1 }, ax[] = { -2 };
	(void)st;
	h_init(&h, "Squeeze", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 4, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, ad, ax);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 3, 1, 3, 2);
	h_free(&h);

	h_init(&h, "Squeeze", 11, 1);  /* no axes: every 1 goes */
	h_in(&h, MFS_DT_FLOAT, 4, xd, seq);
	assert_int_equal(h_infer(&h), 0);
	assert_shape(&h.out[0], 2, 3, 2);

	int64_t a1[] = { 1 };  /* squeezing a dim of 3 is an error */
	h_init(&h, "Squeeze", 11, 1);
	h_attr_ints(&h, "axes", a1, 1);
	h_in(&h, MFS_DT_FLOAT, 4, xd, seq);
	assert_int_equal(h_infer(&h), -EINVAL);

	int64_t ua[] = { 0, -1 }, ud[] = { 2 }, yd[] = { 3, 2 };
	h_init(&h, "Unsqueeze", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, yd, seq);
	h_in(&h, MFS_DT_INT64, 1, ud, ua);
	assert_int_equal(h_infer(&h), 0);
	assert_shape(&h.out[0], 4, 1, 3, 2, 1);
}

static void test_transpose(void **st)
{
	harness h;
	int64_t xd[] = { 2, 3, 4 }, perm[] = { 2, 0, 1 };
	(void)st;
	h_init(&h, "Transpose", 13, 1);
	h_attr_ints(&h, "perm", perm, 3);
	h_in(&h, MFS_DT_FLOAT, 3, xd, seq);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 3, 4, 2, 3);
	const float *y = h.out[0].data;
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 3; j++)
				assert_true(y[(k * 2 + i) * 3 + j] == seq[(i * 3 + j) * 4 + k]);
	h_free(&h);

	/* A large 2-D transpose takes the tiled path: check every element. */
	int64_t bd[] = { 37, 129 };
	int64_t *big = malloc(sizeof(int64_t) * 37 * 129);
	for (int i = 0; i < 37 * 129; i++)
		big[i] = i;
	h_init(&h, "Transpose", 13, 1);
	h_in(&h, MFS_DT_INT64, 2, bd, big);
	assert_int_equal(h_run(&h), 0);
	const int64_t *t = h.out[0].data;
	for (int i = 0; i < 37; i++)
		for (int j = 0; j < 129; j++)
			assert_int_equal(t[j * 37 + i], i * 129 + j);
	h_free(&h);
	free(big);

	int64_t dup[] = { 0, 0, 1 };
	h_init(&h, "Transpose", 13, 1);
	h_attr_ints(&h, "perm", dup, 3);
	h_in(&h, MFS_DT_FLOAT, 3, xd, seq);
	assert_int_equal(h_infer(&h), -EINVAL);
}

static void test_slice(void **st)
{
	harness h;
	int64_t xd[] = { 4, 5 }, one[] = { 1 }, two[] = { 2 };
	int64_t starts[] = { -1, 4 }, ends[] = { INT64_MIN, 0 }, axes[] = { 0, 1 },
		steps[] = { -2, -3 };
	(void)st;
	h_init(&h, "Slice", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, two, starts);
	h_in(&h, MFS_DT_INT64, 1, two, ends);
	h_in(&h, MFS_DT_INT64, 1, two, axes);
	h_in(&h, MFS_DT_INT64, 1, two, steps);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, 2, 2);
	float want[] = { 19, 16, 9, 6 };
	assert_floats(&h.out[0], want, 4, 0);
	h_free(&h);

	int64_t s1[] = { 1 }, e1[] = { INT64_MAX }, zero[] = { 0 };
	h_init(&h, "Slice", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, one, s1);
	h_in(&h, MFS_DT_INT64, 1, one, e1);
	h_skip_in(&h);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, 3, 5);
	assert_floats(&h.out[0], seq + 5, 15, 0);
	h_free(&h);

	/* A negative step over an empty dim takes nothing (no read). */
	int64_t ed[] = { 0, 5 }, neg[] = { -1 }, big[] = { 5 };
	h_init(&h, "Slice", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, ed, seq);
	h_in(&h, MFS_DT_INT64, 1, one, big);
	h_in(&h, MFS_DT_INT64, 1, one, neg);
	h_in(&h, MFS_DT_INT64, 1, one, zero);
	h_in(&h, MFS_DT_INT64, 1, one, neg);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, 0, 5);
	h_free(&h);

	h_init(&h, "Slice", 13, 1);  /* step 0 */
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, one, s1);
	h_in(&h, MFS_DT_INT64, 1, one, e1);
	h_in(&h, MFS_DT_INT64, 1, one, zero);
	h_in(&h, MFS_DT_INT64, 1, one, zero);
	assert_int_equal(h_infer(&h), -EINVAL);
}

/* Concat of NHWC inputs (the channels of [1, C, 2, 3] images as NHWC
 * stores them: channel innermost) along the channels and along the batch
 * into an NHWC output, as the layout plan hands them over between
 * GoogLeNet's convolutions; mixed layouts are refused at infer, which
 * makes the plan keep them plain. */
static void concat_nhwc_check(int64_t axis, const float *want)
{
	harness h;
	int64_t ad[] = { 1, 2, 2, 3 }, bd[] = { 1, 3, 2, 3 };
	float a[12], b[18];
	for (int i = 0; i < 12; i++)
		a[i] = (float)i;           /* pixel i / 2, channel i % 2 */
	for (int i = 0; i < 18; i++)
		b[i] = (float)(100 + i);   /* pixel i / 3, channel i % 3 */
	if (axis == 0)
		bd[1] = 2;
	h_init(&h, "Concat", 13, 1);
	h_attr_int(&h, "axis", axis);
	h_in(&h, MFS_DT_FLOAT, 4, ad, a);
	h_in(&h, MFS_DT_FLOAT, 4, bd, axis == 0 ? a : b);
	h.in[0].layout = h.in[1].layout = MFS_LAYOUT_NHWC;
	assert_int_equal(h_infer(&h), 0);
	mfs_shape ys = h.out[0].shape;
	assert_int_equal(mfs_tensor_alloc(&h.out[0], MFS_DT_FLOAT, &ys, &h.err), 0);
	h.out[0].layout = MFS_LAYOUT_NHWC;
	assert_int_equal(h.ctx.def->run(&h.ctx), 0);
	assert_floats(&h.out[0], want, axis == 0 ? 24 : 30, 0);
	h.in[1].layout = MFS_LAYOUT_PLAIN;
	assert_int_equal(h_infer(&h), -EINVAL);
	h_free(&h);
}

static void test_concat_nhwc(void **st)
{
	(void)st;
	float ch[30], bt[24];
	for (int p = 0; p < 6; p++) {
		for (int c = 0; c < 2; c++)
			ch[p * 5 + c] = (float)(p * 2 + c);
		for (int c = 0; c < 3; c++)
			ch[p * 5 + 2 + c] = (float)(100 + p * 3 + c);
	}
	for (int i = 0; i < 24; i++)
		bt[i] = (float)(i % 12);
	concat_nhwc_check(1, ch);
	concat_nhwc_check(0, bt);
	assert_true(mfs_op_find("", "Concat", 13)->flags & MFS_OP_NHWC_ANY_INPUT);
}

static void test_concat_split(void **st)
{
	harness h;
	int64_t ad[] = { 2, 2 }, bd[] = { 2, 3 };
	(void)st;
	h_init(&h, "Concat", 13, 1);
	h_attr_int(&h, "axis", -1);
	h_in(&h, MFS_DT_FLOAT, 2, ad, seq);
	h_in(&h, MFS_DT_FLOAT, 2, bd, seq + 10);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, 2, 5);
	float want[] = { 0, 1, 10, 11, 12, 2, 3, 13, 14, 15 };
	assert_floats(&h.out[0], want, 10, 0);
	h_free(&h);

	int64_t xd[] = { 2, 5 }, sd[] = { 2 }, sizes[] = { 2, 3 };
	h_init(&h, "Split", 13, 2);
	h_attr_int(&h, "axis", 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, sd, sizes);
	assert_int_equal(h_run(&h), 0);
	float w0[] = { 0, 1, 5, 6 }, w1[] = { 2, 3, 4, 7, 8, 9 };
	assert_floats(&h.out[0], w0, 4, 0);
	assert_floats(&h.out[1], w1, 6, 0);
	h_free(&h);

	/* Opset 18: num_outputs with a short last part (5 = 2 + 2 + 1). */
	h_init(&h, "Split", 18, 3);
	h_attr_int(&h, "axis", 1);
	h_attr_int(&h, "num_outputs", 3);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[2], 2, 2, 1);
	h_free(&h);

	h_init(&h, "Split", 13, 2);  /* 5 does not split in 2 equal parts */
	h_attr_int(&h, "axis", 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	assert_int_equal(h_infer(&h), -EINVAL);
}

static void test_gather(void **st)
{
	harness h;
	int64_t xd[] = { 3, 2 }, id[] = { 2, 2 }, idx[] = { 0, -1, 2, 1 };
	(void)st;
	h_init(&h, "Gather", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 2, id, idx);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 3, 2, 2, 2);
	float want[] = { 0, 1, 4, 5, 4, 5, 2, 3 };
	assert_floats(&h.out[0], want, 8, 0);
	h_free(&h);

	int64_t bad[] = { 0, 3, 0, 0 };  /* out of range: an error, no read */
	h_init(&h, "Gather", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 2, id, bad);
	assert_int_equal(h_run(&h), -EINVAL);
	h_free(&h);
}

static void test_expand_tile(void **st)
{
	harness h;
	int64_t xd[] = { 3, 1 }, sd[] = { 3 }, shp[] = { 2, 1, 4 };
	(void)st;
	h_init(&h, "Expand", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, sd, shp);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 3, 2, 3, 4);
	assert_true(((float *)h.out[0].data)[23] == 2);
	assert_true(((float *)h.out[0].data)[5] == 1);
	h_free(&h);

	int64_t td[] = { 2, 2 }, rd[] = { 2 }, reps[] = { 1, 2 };
	h_init(&h, "Tile", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, td, seq);
	h_in(&h, MFS_DT_INT64, 1, rd, reps);
	assert_int_equal(h_run(&h), 0);
	float want[] = { 0, 1, 0, 1, 2, 3, 2, 3 };
	assert_floats(&h.out[0], want, 8, 0);
	h_free(&h);

	int64_t huge[] = { INT64_MAX, 1, 1 };
	h_init(&h, "Expand", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, sd, huge);
	assert_int_equal(h_infer(&h), -EINVAL);
}

static void test_softmax(void **st)
{
	harness h;
	int64_t xd[] = { 2, 3 };
	float x[] = { 1, 2, 3, 0, 0, 0 };
	(void)st;
	h_init(&h, "Softmax", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, x);
	assert_int_equal(h_run(&h), 0);
	float want[] = { 0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.f, 1 / 3.f, 1 / 3.f };
	assert_floats(&h.out[0], want, 6, 1e-6);
	h_free(&h);

	/* Opset 13 along axis 0 (not trailing: gathered and scattered). */
	h_init(&h, "Softmax", 13, 1);
	h_attr_int(&h, "axis", 0);
	h_in(&h, MFS_DT_FLOAT, 2, xd, x);
	assert_int_equal(h_run(&h), 0);
	const float *y = h.out[0].data;
	assert_true(fabs(y[0] + y[3] - 1) < 1e-6 && fabs(y[2] - 0.95257413f) < 1e-6);
	h_free(&h);

	h_init(&h, "Hardmax", 11, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, x);
	assert_int_equal(h_run(&h), 0);
	float hw[] = { 0, 0, 1, 1, 0, 0 };
	assert_floats(&h.out[0], hw, 6, 0);
	h_free(&h);
}

static void test_reduce(void **st)
{
	harness h;
	int64_t xd[] = { 2, 3, 2 }, ad[] = { 2 }, axes[] = { 0, 2 };
	(void)st;
	h_init(&h, "ReduceSum", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 3, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, ad, axes);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 3, 1, 3, 1);
	float want[] = { 0 + 1 + 6 + 7, 2 + 3 + 8 + 9, 4 + 5 + 10 + 11 };
	assert_floats(&h.out[0], want, 3, 0);
	h_free(&h);

	h_init(&h, "ReduceMean", 13, 1);  /* attribute axes before 18 */
	h_attr_ints(&h, "axes", axes + 1, 1);
	h_attr_int(&h, "keepdims", 0);
	h_in(&h, MFS_DT_FLOAT, 3, xd, seq);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, 2, 3);
	float mw[] = { 0.5f, 2.5f, 4.5f, 6.5f, 8.5f, 10.5f };
	assert_floats(&h.out[0], mw, 6, 1e-6);
	h_free(&h);

	h_init(&h, "ReduceMax", 18, 1);  /* no axes: everything */
	h_in(&h, MFS_DT_FLOAT, 3, xd, seq);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 3, 1, 1, 1);
	assert_true(((float *)h.out[0].data)[0] == 11);
	h_free(&h);

	/* bool ReduceMax/ReduceMin (opset 20) are any/all. */
	int64_t bd[] = { 2, 2 };
	uint8_t bools[] = { 0, 1, 0, 0 };
	int64_t last[] = { 1 }, one[] = { 1 };
	h_init(&h, "ReduceMax", 20, 1);
	h_attr_int(&h, "keepdims", 0);
	h_in(&h, MFS_DT_BOOL, 2, bd, bools);
	h_in(&h, MFS_DT_INT64, 1, one, last);
	assert_int_equal(h_run(&h), 0);
	assert_int_equal(h.out[0].dtype, MFS_DT_BOOL);
	assert_true(((uint8_t *)h.out[0].data)[0] == 1 && ((uint8_t *)h.out[0].data)[1] == 0);
	h_free(&h);
	h_init(&h, "ReduceSum", 13, 1);  /* but not a bool sum */
	h_in(&h, MFS_DT_BOOL, 2, bd, bools);
	assert_int_equal(h_infer(&h), -ENOTSUP);

	int64_t dup[] = { 1, -2 };
	h_init(&h, "ReduceSum", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 3, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, ad, dup);
	assert_int_equal(h_infer(&h), -EINVAL);
}

static void test_layernorm(void **st)
{
	harness h;
	int64_t xd[] = { 2, 2 }, sd[] = { 2 };
	float x[] = { 1, 3, 5, 5 }, sc[] = { 2, 1 }, b[] = { 0, 1 };
	(void)st;
	h_init(&h, "LayerNormalization", 17, 3);
	h_in(&h, MFS_DT_FLOAT, 2, xd, x);
	h_in(&h, MFS_DT_FLOAT, 1, sd, sc);
	h_in(&h, MFS_DT_FLOAT, 1, sd, b);
	assert_int_equal(h_run(&h), 0);
	float want[] = { -2 / sqrtf(1 + 1e-5f), 1 + 1 / sqrtf(1 + 1e-5f), 0, 1 };
	assert_floats(&h.out[0], want, 4, 1e-5);
	float mean[] = { 2, 5 };
	assert_floats(&h.out[1], mean, 2, 0);
	assert_shape(&h.out[2], 2, 2, 1);
	h_free(&h);
}

static void test_constant(void **st)
{
	harness h;
	int64_t vals[] = { 4, 5, 6 };
	(void)st;
	h_init(&h, "Constant", 13, 1);
	h_attr_ints(&h, "value_ints", vals, 3);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 1, 3);
	assert_int_equal(((int64_t *)h.out[0].data)[2], 6);
	h_free(&h);

	int64_t sd[] = { 2 }, shp[] = { 2, 3 };
	h_init(&h, "ConstantOfShape", 9, 1);
	h_in(&h, MFS_DT_INT64, 1, sd, shp);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, 2, 3);
	assert_true(((float *)h.out[0].data)[5] == 0);
	h_free(&h);
}


static void test_pad(void **st)
{
	harness h;
	int64_t xd[] = { 1, 3 }, pd[] = { 4 }, pads[] = { 0, 2, 0, 3 };
	(void)st;
	h_init(&h, "Pad", 18, 1);
	h_attr_str(&h, "mode", "reflect");
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, pd, pads);
	assert_int_equal(h_run(&h), 0);
	float want[] = { 2, 1, 0, 1, 2, 1, 0, 1 };
	assert_floats(&h.out[0], want, 8, 0);
	h_free(&h);

	float cv = 7;
	int64_t crop[] = { 0, -1, 0, 1 }, sc[] = { 1 };
	h_init(&h, "Pad", 18, 1);  /* negative pads crop; constant fill */
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, pd, crop);
	h_in(&h, MFS_DT_FLOAT, 1, sc, &cv);
	assert_int_equal(h_run(&h), 0);
	float w2[] = { 1, 2, 7 };
	assert_floats(&h.out[0], w2, 3, 0);
	h_free(&h);

	/* CenterCropPad: rows padded 3 -> 5 (1 before), columns cropped 4 -> 2. */
	int64_t cd[] = { 3, 4 }, td[] = { 2 }, target[] = { 5, 2 };
	h_init(&h, "CenterCropPad", 18, 1);
	h_in(&h, MFS_DT_FLOAT, 2, cd, seq);
	h_in(&h, MFS_DT_INT64, 1, td, target);
	assert_int_equal(h_run(&h), 0);
	float w3[] = { 0, 0, 1, 2, 5, 6, 9, 10, 0, 0 };
	assert_floats(&h.out[0], w3, 10, 0);
	h_free(&h);

	int64_t over[] = { 0, -5, 0, 0 };
	h_init(&h, "Pad", 18, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 1, pd, over);
	assert_int_equal(h_infer(&h), -EINVAL);
}

static void test_gather_scatter_nd(void **st)
{
	harness h;
	int64_t xd[] = { 2, 2 }, id[] = { 2, 2 }, idx[] = { 0, 0, 1, 1 };
	(void)st;
	h_init(&h, "GatherND", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	h_in(&h, MFS_DT_INT64, 2, id, idx);
	assert_int_equal(h_run(&h), 0);
	float want[] = { 0, 3 };
	assert_floats(&h.out[0], want, 2, 0);
	h_free(&h);

	float data[4] = { 1, 1, 1, 1 }, upd[2] = { 5, 6 };
	int64_t ud[] = { 2 };
	h_init(&h, "ScatterND", 16, 1);
	h_attr_str(&h, "reduction", "add");
	h_in(&h, MFS_DT_FLOAT, 2, xd, data);
	h_in(&h, MFS_DT_INT64, 2, id, idx);
	h_in(&h, MFS_DT_FLOAT, 1, ud, upd);
	assert_int_equal(h_run(&h), 0);
	float w2[] = { 6, 1, 1, 7 };
	assert_floats(&h.out[0], w2, 4, 0);
	h_free(&h);

	int64_t bad[] = { 0, 2, 0, 0 };
	h_init(&h, "ScatterND", 16, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, data);
	h_in(&h, MFS_DT_INT64, 2, id, bad);
	h_in(&h, MFS_DT_FLOAT, 1, ud, upd);
	assert_int_equal(h_run(&h), -EINVAL);
	h_free(&h);

	int64_t ei[] = { 1, 0, 5, 0 };  /* ScatterElements: index 5 of 2 */
	h_init(&h, "ScatterElements", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, data);
	h_in(&h, MFS_DT_INT64, 2, id, ei);
	h_in(&h, MFS_DT_FLOAT, 2, xd, seq);
	assert_int_equal(h_run(&h), -EINVAL);
	h_free(&h);
}

static void test_topk_argmax(void **st)
{
	harness h;
	int64_t xd[] = { 2, 3 }, kd[] = { 1 }, k[] = { 2 };
	float x[] = { 3, 1, 3, 0, 5, 4 };
	(void)st;
	h_init(&h, "TopK", 11, 2);
	h_in(&h, MFS_DT_FLOAT, 2, xd, x);
	h_in(&h, MFS_DT_INT64, 1, kd, k);
	assert_int_equal(h_run(&h), 0);
	float want[] = { 3, 3, 5, 4 };
	assert_floats(&h.out[0], want, 4, 0);
	int64_t *ix = h.out[1].data;
	assert_true(ix[0] == 0 && ix[1] == 2 && ix[2] == 1 && ix[3] == 2);
	h_free(&h);

	h_init(&h, "ArgMax", 13, 1);
	h_attr_int(&h, "axis", 1);
	h_attr_int(&h, "select_last_index", 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, x);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, 2, 1);
	assert_int_equal(((int64_t *)h.out[0].data)[0], 2);
	assert_int_equal(((int64_t *)h.out[0].data)[1], 1);
	h_free(&h);
}

static void test_data_dependent(void **st)
{
	harness h;
	int64_t xd[] = { 2, 2 }, one[] = { 0 };
	float x[] = { 0, 2, 3, 0 };
	(void)st;
	h_init(&h, "NonZero", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, NULL);
	assert_int_equal(h_infer(&h), MFS_SHAPE_DEPENDS_ON_DATA);
	h_init(&h, "NonZero", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, x);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, 2, 2);
	int64_t *o = h.out[0].data;
	assert_true(o[0] == 0 && o[1] == 1 && o[2] == 1 && o[3] == 0);
	h_free(&h);

	int64_t a = 10, l = 4, d = -3;
	h_init(&h, "Range", 11, 1);
	h_in(&h, MFS_DT_INT64, 0, one, &a);
	h_in(&h, MFS_DT_INT64, 0, one, &l);
	h_in(&h, MFS_DT_INT64, 0, one, &d);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 1, 2);
	assert_int_equal(((int64_t *)h.out[0].data)[1], 7);
	h_free(&h);

	int64_t zero = 0;
	h_init(&h, "Range", 11, 1);
	h_in(&h, MFS_DT_INT64, 0, one, &a);
	h_in(&h, MFS_DT_INT64, 0, one, &l);
	h_in(&h, MFS_DT_INT64, 0, one, &zero);
	assert_int_equal(h_infer(&h), -EINVAL);

	uint8_t cond[] = { 0, 1 };
	int64_t cd[] = { 2 };
	h_init(&h, "Compress", 11, 1);
	h_attr_int(&h, "axis", 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, x);
	h_in(&h, MFS_DT_BOOL, 1, cd, cond);
	assert_int_equal(h_run(&h), 0);
	float cw[] = { 2, 0 };
	assert_floats(&h.out[0], cw, 2, 0);
	h_free(&h);
}

static void test_misc(void **st)
{
	harness h;
	int64_t xd[] = { 1, 4 }, ad[] = { 1 }, axis = 1;
	float x[] = { 1, 2, 3, 4 };
	(void)st;
	h_init(&h, "CumSum", 14, 1);
	h_attr_int(&h, "exclusive", 1);
	h_attr_int(&h, "reverse", 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, x);
	h_in(&h, MFS_DT_INT64, 0, ad, &axis);
	assert_int_equal(h_run(&h), 0);
	float cw[] = { 9, 7, 4, 0 };
	assert_floats(&h.out[0], cw, 4, 0);
	h_free(&h);

	/* DepthToSpace CRD on [1,4,1,1] -> [1,1,2,2] keeps channel order. */
	int64_t dd[] = { 1, 4, 1, 1 };
	h_init(&h, "DepthToSpace", 13, 1);
	h_attr_int(&h, "blocksize", 2);
	h_attr_str(&h, "mode", "CRD");
	h_in(&h, MFS_DT_FLOAT, 4, dd, x);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 4, 1, 1, 2, 2);
	assert_floats(&h.out[0], x, 4, 0);
	h_free(&h);

	int64_t id[] = { 3 }, idx[] = { 0, -1, 9 }, sd[] = { 1 }, vd[] = { 2 };
	float depth = 3, vals[] = { 0, 1 };
	h_init(&h, "OneHot", 11, 1);
	h_in(&h, MFS_DT_INT64, 1, id, idx);
	h_in(&h, MFS_DT_FLOAT, 1, sd, &depth);
	h_in(&h, MFS_DT_FLOAT, 1, vd, vals);
	assert_int_equal(h_run(&h), 0);
	float ow[] = { 1, 0, 0, 0, 0, 1, 0, 0, 0 };
	assert_floats(&h.out[0], ow, 9, 0);
	h_free(&h);

	int64_t td[] = { 3, 3 };
	h_init(&h, "Trilu", 14, 1);
	h_attr_int(&h, "upper", 0);
	h_in(&h, MFS_DT_FLOAT, 2, td, seq);
	assert_int_equal(h_run(&h), 0);
	float tw[] = { 0, 0, 0, 3, 4, 0, 6, 7, 8 };
	assert_floats(&h.out[0], tw, 9, 0);
	h_free(&h);
}

static void test_resize(void **st)
{
	harness h;
	int64_t xd[] = { 1, 1, 2, 2 }, sd[] = { 4 }, sizes[] = { 1, 1, 4, 4 };
	float x[] = { 1, 2, 3, 4 };
	(void)st;
	h_init(&h, "Resize", 13, 1);
	h_attr_str(&h, "mode", "linear");
	h_in(&h, MFS_DT_FLOAT, 4, xd, x);
	h_skip_in(&h);
	h_skip_in(&h);
	h_in(&h, MFS_DT_INT64, 1, sd, sizes);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 4, 1, 1, 4, 4);
	/* half_pixel: row 0 is [1, 1.25, 1.75, 2], edges clamp. */
	float row0[] = { 1, 1.25f, 1.75f, 2 };
	for (int i = 0; i < 4; i++)
		assert_true(fabsf(((float *)h.out[0].data)[i] - row0[i]) < 1e-6f);
	assert_true(fabsf(((float *)h.out[0].data)[15] - 4) < 1e-6f);
	h_free(&h);

	float scales[] = { 1, 1, 2, 1.5f };
	h_init(&h, "Upsample", 9, 1);
	h_in(&h, MFS_DT_FLOAT, 4, xd, x);
	h_in(&h, MFS_DT_FLOAT, 1, sd, scales);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 4, 1, 1, 4, 3);
	float want[] = { 1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4 };
	assert_floats(&h.out[0], want, 12, 0);
	h_free(&h);

	/* Opset 19's half_pixel_symmetric (ONNX's own example). */
	int64_t rd[] = { 1, 1, 1, 4 };
	float r4[] = { 1, 2, 3, 4 }, sc4[] = { 1, 1, 1, 0.6f };
	h_init(&h, "Resize", 19, 1);
	h_attr_str(&h, "mode", "linear");
	h_attr_str(&h, "coordinate_transformation_mode", "half_pixel_symmetric");
	h_in(&h, MFS_DT_FLOAT, 4, rd, r4);
	h_skip_in(&h);
	h_in(&h, MFS_DT_FLOAT, 1, sd, sc4);
	assert_int_equal(h_run(&h), 0);
	float sym[] = { 1.6666666f, 3.3333333f };
	assert_floats(&h.out[0], sym, 2, 1e-5);
	h_free(&h);

	/* keep_aspect_ratio_policy not_larger: sizes 7x8 of 2x2 give 7x7. */
	int64_t ax[] = { 2, 3 }, s2d[] = { 2 }, s78[] = { 7, 8 };
	h_init(&h, "Resize", 18, 1);
	h_attr_ints(&h, "axes", ax, 2);
	h_attr_str(&h, "keep_aspect_ratio_policy", "not_larger");
	h_in(&h, MFS_DT_FLOAT, 4, xd, x);
	h_skip_in(&h);
	h_skip_in(&h);
	h_in(&h, MFS_DT_INT64, 1, s2d, s78);
	assert_int_equal(h_infer(&h), 0);
	assert_shape(&h.out[0], 4, 1, 1, 7, 7);

	h_init(&h, "Resize", 13, 1);  /* both scales and sizes: refused */
	h_in(&h, MFS_DT_FLOAT, 4, xd, x);
	h_skip_in(&h);
	h_in(&h, MFS_DT_FLOAT, 1, sd, scales);
	h_in(&h, MFS_DT_INT64, 1, sd, sizes);
	assert_int_equal(h_infer(&h), -EINVAL);
}

static void test_loss_unique(void **st)
{
	harness h;
	int64_t xd[] = { 2, 3 }, td[] = { 2 }, tgt[] = { 2, -1 };
	float logp[] = { -1, -2, -3, -4, -5, -6 };
	(void)st;
	h_init(&h, "NegativeLogLikelihoodLoss", 13, 1);
	h_attr_int(&h, "ignore_index", -1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, logp);
	h_in(&h, MFS_DT_INT64, 1, td, tgt);
	assert_int_equal(h_run(&h), 0);
	assert_int_equal(h.out[0].shape.rank, 0);
	assert_true(((float *)h.out[0].data)[0] == 3);  /* mean over 1 counted */
	h_free(&h);

	int64_t bad[] = { 3, 0 };  /* class 3 of 3 */
	h_init(&h, "SoftmaxCrossEntropyLoss", 13, 1);
	h_in(&h, MFS_DT_FLOAT, 2, xd, logp);
	h_in(&h, MFS_DT_INT64, 1, td, bad);
	assert_int_equal(h_run(&h), -EINVAL);
	h_free(&h);

	int64_t ud[] = { 6 };
	float u[] = { 2, 1, 1, 3, 4, 3 };
	h_init(&h, "Unique", 11, 4);
	h_attr_int(&h, "sorted", 0);
	h_in(&h, MFS_DT_FLOAT, 1, ud, u);
	assert_int_equal(h_run(&h), 0);
	float uw[] = { 2, 1, 3, 4 };
	assert_floats(&h.out[0], uw, 4, 0);
	int64_t *inv = h.out[2].data, *cnt = h.out[3].data;
	assert_true(inv[0] == 0 && inv[2] == 1 && inv[5] == 2 && cnt[1] == 2 && cnt[3] == 1);
	h_free(&h);
}

static void test_detection_and_sampling(void **st)
{
	harness h;
	/* Two overlapping boxes and one apart; IoU(0,1) = 0.81 > 0.5. */
	float boxes[] = { 0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6 };
	float scores[] = { 0.9f, 0.8f, 0.7f };
	int64_t bd[] = { 1, 3, 4 }, sd[] = { 1, 1, 3 }, one[] = { 1 }, mx = 3;
	float iou = 0.5f;
	(void)st;
	h_init(&h, "NonMaxSuppression", 11, 1);
	h_in(&h, MFS_DT_FLOAT, 3, bd, boxes);
	h_in(&h, MFS_DT_FLOAT, 3, sd, scores);
	h_in(&h, MFS_DT_INT64, 1, one, &mx);
	h_in(&h, MFS_DT_FLOAT, 1, one, &iou);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 2, 2, 3);
	int64_t *sel = h.out[0].data;
	assert_true(sel[2] == 0 && sel[5] == 2);
	h_free(&h);

	/* GridSample at the corners with align_corners reads the corners. */
	int64_t xd[] = { 1, 1, 2, 2 }, gd[] = { 1, 1, 2, 2 };
	float x[] = { 1, 2, 3, 4 }, grid[] = { -1, -1, 1, 1 };
	h_init(&h, "GridSample", 16, 1);
	h_attr_int(&h, "align_corners", 1);
	h_in(&h, MFS_DT_FLOAT, 4, xd, x);
	h_in(&h, MFS_DT_FLOAT, 4, gd, grid);
	assert_int_equal(h_run(&h), 0);
	float gw[] = { 1, 4 };
	assert_floats(&h.out[0], gw, 2, 1e-6);
	h_free(&h);

	/* AffineGrid against torch.nn.functional.affine_grid. */
	float theta[] = { 1, 0.5f, 0.1f, -0.2f, 0.8f, 0.3f };
	int64_t thd[] = { 1, 2, 3 }, szd[] = { 4 }, size[] = { 1, 1, 2, 3 };
	float ag0[] = { -0.81667f, 0.03333f, -0.15f, -0.1f, 0.51667f, -0.23333f,
			-0.31667f, 0.83333f, 0.35f, 0.7f, 1.01667f, 0.56667f };
	float ag1[] = { -1.4f, -0.3f, -0.4f, -0.5f, 0.6f, -0.7f,
			-0.4f, 1.3f, 0.6f, 1.1f, 1.6f, 0.9f };
	for (int ac = 0; ac < 2; ac++) {
		h_init(&h, "AffineGrid", 20, 1);
		h_attr_int(&h, "align_corners", ac);
		h_in(&h, MFS_DT_FLOAT, 3, thd, theta);
		h_in(&h, MFS_DT_INT64, 1, szd, size);
		assert_int_equal(h_run(&h), 0);
		assert_shape(&h.out[0], 4, 1, 2, 3, 2);
		assert_floats(&h.out[0], ac ? ag1 : ag0, 12, 1e-5);
		h_free(&h);
	}

	/* Col2Im against torch.nn.functional.fold (pads 1,0 / 1,0, strides 1,2). */
	float cols[64];
	for (int i = 0; i < 64; i++)
		cols[i] = (float)(i % 7);
	int64_t cold[] = { 1, 8, 8 }, two[] = { 2 }, img[] = { 3, 4 }, blk[] = { 2, 2 };
	int64_t pads[] = { 1, 0, 1, 0 }, strides[] = { 1, 2 };
	float fold[] = { 4, 6, 6, 8, 8, 10, 10, 12, 12, 0, 0, 2,
			 12, 0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10 };
	h_init(&h, "Col2Im", 18, 1);
	h_attr_ints(&h, "pads", pads, 4);
	h_attr_ints(&h, "strides", strides, 2);
	h_in(&h, MFS_DT_FLOAT, 3, cold, cols);
	h_in(&h, MFS_DT_INT64, 1, two, img);
	h_in(&h, MFS_DT_INT64, 1, two, blk);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 4, 1, 2, 3, 4);
	assert_floats(&h.out[0], fold, 24, 0);
	h_free(&h);

	int64_t md[] = { 2, 2 };
	float m[] = { 3, 8, 4, 6 };
	h_init(&h, "Det", 11, 1);
	h_in(&h, MFS_DT_FLOAT, 2, md, m);
	assert_int_equal(h_run(&h), 0);
	assert_true(fabsf(((float *)h.out[0].data)[0] + 14) < 1e-5f);
	h_free(&h);
}

static void test_signal(void **st)
{
	harness h;
	int64_t one[] = { 1 }, n = 4;
	(void)st;
	h_init(&h, "HannWindow", 17, 1);
	h_in(&h, MFS_DT_INT64, 0, one, &n);
	assert_int_equal(h_run(&h), 0);
	float hw[] = { 0, 0.5f, 1, 0.5f };
	assert_floats(&h.out[0], hw, 4, 1e-6);
	h_free(&h);

	/* DFT of [1, 0, 0, 0] is all ones; of [0, 1, 0, 0] the 4 roots. */
	int64_t xd[] = { 1, 4, 1 };
	float x[] = { 0, 1, 0, 0 };
	h_init(&h, "DFT", 17, 1);
	h_in(&h, MFS_DT_FLOAT, 3, xd, x);
	assert_int_equal(h_run(&h), 0);
	assert_shape(&h.out[0], 3, 1, 4, 2);
	float dw[] = { 1, 0, 0, -1, -1, 0, 0, 1 };
	assert_floats(&h.out[0], dw, 8, 1e-6);
	h_free(&h);

	/* Opset 20: the axis is an input (-2: the last signal axis). */
	int64_t ax = -2;
	h_init(&h, "DFT", 20, 1);
	h_in(&h, MFS_DT_FLOAT, 3, xd, x);
	h_skip_in(&h);
	h_in(&h, MFS_DT_INT64, 0, one, &ax);
	assert_int_equal(h_run(&h), 0);
	assert_floats(&h.out[0], dw, 8, 1e-6);
	h_free(&h);

	/* Length 8 (FFT) and 6 (direct sum) against a naive DFT, complex in. */
	for (int L = 6; L <= 8; L += 2) {
		int64_t cd[] = { 1, L, 2 };
		float sig[16];
		for (int i = 0; i < 2 * L; i++)
			sig[i] = (float)((i * 7) % 5) - 2;
		h_init(&h, "DFT", 17, 1);
		h_in(&h, MFS_DT_FLOAT, 3, cd, sig);
		assert_int_equal(h_run(&h), 0);
		for (int k = 0; k < L; k++) {
			double re = 0, im = 0;
			for (int n = 0; n < L; n++) {
				double a = -2 * M_PI * k * n / L;
				re += sig[2 * n] * cos(a) - sig[2 * n + 1] * sin(a);
				im += sig[2 * n] * sin(a) + sig[2 * n + 1] * cos(a);
			}
			assert_true(fabs(((float *)h.out[0].data)[2 * k] - re) < 1e-4);
			assert_true(fabs(((float *)h.out[0].data)[2 * k + 1] - im) < 1e-4);
		}
		h_free(&h);
	}

	int64_t rd[] = { 3, 2 }, ld[] = { 2 }, lens[] = { 3, 1 };
	h_init(&h, "ReverseSequence", 10, 1);
	h_in(&h, MFS_DT_FLOAT, 2, rd, seq);
	h_in(&h, MFS_DT_INT64, 1, ld, lens);
	assert_int_equal(h_run(&h), 0);
	float rw[] = { 4, 1, 2, 3, 0, 5 };
	assert_floats(&h.out[0], rw, 6, 0);
	h_free(&h);
}

static void test_group_norm(void **st)
{
	harness h;
	int64_t xd[] = { 2, 4, 3 }, gd[] = { 2 }, cd[] = { 4 };
	float x[24], s2[] = { 1.5f, -0.5f }, b2[] = { 0.25f, 1 };
	float s4[] = { 1, 2, 3, 4 }, b4[] = { 0, 1, 0, 1 };
	/* numpy: per-group statistics, per-group (opset 18) and per-channel
	 * (opset 21 form) affine. */
	float want_g[] = { -1.94577f, -1.06746f, -0.18915f, 0.68915f, 1.56746f, 2.44577f,
			   0.15485f, 1.67612f, 1.42258f, 1.16903f, 0.91548f, 0.66194f,
			   1.78681f, 2.49611f, -1.75968f, -1.05038f, -0.34108f, 0.36822f,
			   0.76855f, 0.53709f, 0.30564f, 1.69436f, 1.46291f, 1.23145f };
	float want_c[] = { -1.46385f, -0.87831f, -0.29277f, 1.58554f, 2.75662f, 3.92770f,
			   5.07092f, -4.05674f, -2.53546f, -0.35224f, 1.67612f, 3.70449f,
			   1.02454f, 1.49741f, -1.33979f, -0.73384f, 0.21189f, 1.15762f,
			   1.38873f, 2.77746f, 4.16619f, -4.55491f, -2.70328f, -0.85164f };
	(void)st;
	for (int i = 0; i < 24; i++)
		x[i] = (float)(i % 7) - 3;
	for (int pc = 0; pc < 2; pc++) {
		h_init(&h, "GroupNormalization", 18, 1);
		h_attr_int(&h, "num_groups", 2);
		h_in(&h, MFS_DT_FLOAT, 3, xd, x);
		h_in(&h, MFS_DT_FLOAT, 1, pc ? cd : gd, pc ? s4 : s2);
		h_in(&h, MFS_DT_FLOAT, 1, pc ? cd : gd, pc ? b4 : b2);
		assert_int_equal(h_run(&h), 0);
		assert_floats(&h.out[0], pc ? want_c : want_g, 24, 1e-4);
		h_free(&h);
	}
	h_init(&h, "GroupNormalization", 18, 1);  /* 3 groups do not divide 4 */
	h_attr_int(&h, "num_groups", 3);
	h_in(&h, MFS_DT_FLOAT, 3, xd, x);
	h_in(&h, MFS_DT_FLOAT, 1, gd, s2);
	h_in(&h, MFS_DT_FLOAT, 1, gd, b2);
	assert_int_equal(h_infer(&h), -EINVAL);
}

/* Large enough for the threaded paths (oc_copy_view splits copies over
 * 1 MiB; row maps and reductions go parallel above 64K elements). */
static void test_large_threaded(void **st)
{
	harness h;
	int64_t xd[] = { 3, 600, 700 }, perm[] = { 2, 0, 1 }, n = 3 * 600 * 700;
	float *x = malloc(sizeof(float) * (size_t)n);
	(void)st;
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)(i % 1000) / 100.f;
	h_init(&h, "Transpose", 13, 1);
	h_attr_ints(&h, "perm", perm, 3);
	h_in(&h, MFS_DT_FLOAT, 3, xd, x);
	assert_int_equal(h_run(&h), 0);
	const float *y = h.out[0].data;
	for (int64_t k = 0; k < 700; k += 7)
		for (int64_t i = 0; i < 3; i++)
			for (int64_t j = 0; j < 600; j += 3)
				assert_true(y[(k * 3 + i) * 600 + j] == x[(i * 600 + j) * 700 + k]);
	h_free(&h);

	h_init(&h, "Softmax", 13, 1);
	h_attr_int(&h, "axis", 1);  /* not innermost: gathered rows */
	h_in(&h, MFS_DT_FLOAT, 3, xd, x);
	assert_int_equal(h_run(&h), 0);
	y = h.out[0].data;
	for (int64_t i = 0; i < 3; i++)
		for (int64_t k = 0; k < 700; k += 50) {
			double sum = 0;
			for (int64_t j = 0; j < 600; j++)
				sum += y[(i * 600 + j) * 700 + k];
			assert_true(fabs(sum - 1) < 1e-4);
		}
	h_free(&h);

	int64_t axes[] = { 2 };
	h_init(&h, "ReduceSum", 11, 1);
	h_attr_ints(&h, "axes", axes, 1);
	h_in(&h, MFS_DT_FLOAT, 3, xd, x);
	assert_int_equal(h_run(&h), 0);
	for (int64_t r = 0; r < 1800; r += 37) {
		double sum = 0;
		for (int64_t k = 0; k < 700; k++)
			sum += x[r * 700 + k];
		assert_true(fabs(((float *)h.out[0].data)[r] - sum) < 1e-2);
	}
	h_free(&h);
	free(x);
}

/* ---- random inputs: no crash, no out-of-bounds, a clean error -------- */

static const char *const my_ops[] = {
	"ArgMax", "ArgMin", "Concat", "ConstantOfShape", "CumSum", "DepthToSpace",
	"SpaceToDepth", "Det", "DFT", "STFT", "Dropout", "Expand", "Tile", "Gather",
	"GatherND", "ScatterND", "GridSample", "LayerNormalization",
	"MeanVarianceNormalization", "NegativeLogLikelihoodLoss",
	"SoftmaxCrossEntropyLoss", "MelWeightMatrix", "NonMaxSuppression", "NonZero",
	"Compress", "OneHot", "Pad", "Range", "ReduceSum", "ReduceMean", "ReduceMax",
	"ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
	"ReduceLogSumExp", "ReduceSumSquare", "Reshape", "Flatten", "Upsample",
	"Resize", "ReverseSequence", "GatherElements", "ScatterElements", "Scatter",
	"Shape", "Size", "Slice", "Softmax", "LogSoftmax", "Hardmax", "Split",
	"Squeeze", "Unsqueeze", "TfIdfVectorizer", "TopK", "Transpose", "Trilu",
	"EyeLike", "Unique", "HannWindow", "HammingWindow", "BlackmanWindow",
	"GroupNormalization", "CenterCropPad", "AffineGrid", "Col2Im", NULL
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static int64_t rnd(int64_t lo, int64_t hi)  /* inclusive */
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return lo + (int64_t)(rng_state % (uint64_t)(hi - lo + 1));
}

static void fuzz_one(const char *op, int64_t opset)
{
	static const char *const int_attrs[] = { "axis", "keepdims", "select_last_index",
		"blocksize", "k", "upper", "exclusive", "reverse", "batch_dims", "num_outputs",
		"allowzero", "noop_with_empty_axes", "largest", "sorted", "center_point_box",
		"onesided", "inverse", "periodic", "time_axis", "batch_axis", "ignore_index",
		"start", "end", "max_gram_length", "min_gram_length", "max_skip_count",
		"exclude_outside", "align_corners" };
	static const char *const list_attrs[] = { "axes", "perm", "split", "starts", "ends",
		"pads", "ngram_counts", "ngram_indexes", "pool_int64s" };
	static const char *const str_attrs[][2] = { { "mode", "linear" }, { "mode", "reflect" },
		{ "mode", "CRD" }, { "reduction", "add" }, { "mode", "TFIDF" },
		{ "coordinate_transformation_mode", "align_corners" }, { "mode", "cubic" } };
	static int64_t lists[8][8];
	static float fdata[MAXT][256];
	static int64_t idata[MAXT][256];
	harness h;
	int n_out = (int)rnd(1, 4), n_in = (int)rnd(1, 5), rc;

	h_init(&h, op, opset, n_out);
	for (int i = 0; i < (int)rnd(0, 5); i++) {
		int which = (int)rnd(0, 2);
		if (which == 0) {
			h_attr_int(&h, int_attrs[rnd(0, sizeof(int_attrs) / sizeof(*int_attrs) - 1)],
				   rnd(-3, 4));
		} else if (which == 1) {
			int64_t *l = lists[i];
			size_t n = (size_t)rnd(0, 6);
			for (size_t j = 0; j < n; j++)
				l[j] = rnd(-3, 4);
			h_attr_ints(&h, list_attrs[rnd(0, sizeof(list_attrs) / sizeof(*list_attrs) - 1)],
				    l, n);
		} else {
			int k = (int)rnd(0, sizeof(str_attrs) / sizeof(*str_attrs) - 1);
			h_attr_str(&h, str_attrs[k][0], str_attrs[k][1]);
		}
	}
	for (int i = 0; i < n_in; i++) {
		int64_t dims[4];
		int rank = (int)rnd(0, 4);
		int64_t numel = 1;
		bool is_int = rnd(0, 1) || i > 0;
		for (int d = 0; d < rank; d++)
			numel *= dims[d] = rnd(0, 4);
		if (numel > 256)
			rank = 0;
		if (rnd(0, 6) == 0) {
			h_skip_in(&h);
			continue;
		}
		for (int j = 0; j < 256; j++) {
			fdata[i][j] = (float)rnd(-8, 8) / 2;
			idata[i][j] = rnd(-5, 6);
		}
		h_in(&h, is_int ? MFS_DT_INT64 : MFS_DT_FLOAT, rank, dims,
		     is_int ? (void *)idata[i] : (void *)fdata[i]);
	}
	rc = h_infer(&h);
	assert_true(rc <= 0 || rc == MFS_SHAPE_DEPENDS_ON_DATA);
	if (rc)
		return;
	for (int i = 0; i < n_out; i++) {
		mfs_shape sh = h.out[i].shape;
		if (h.out[i].dtype == MFS_DT_UNDEFINED || mfs_shape_numel(&sh) > (1 << 20)) {
			/* an output the op does not have; or too big to bother */
			if (mfs_shape_numel(&sh) > (1 << 20))
				return;
			h.outp[i] = NULL;
			continue;
		}
		assert_int_equal(mfs_tensor_alloc(&h.out[i], h.out[i].dtype, &sh, &h.err), 0);
	}
	rc = h.ctx.def->run(&h.ctx);
	assert_true(rc <= 0);
	h_free(&h);
}

static void test_random_inputs(void **st)
{
	static const int64_t opsets[] = { 9, 11, 13, 17, 18, 20 };
	(void)st;
	for (int i = 0; my_ops[i]; i++)
		for (int k = 0; k < 6; k++) {
			if (!mfs_op_find("", my_ops[i], opsets[k]))
				continue;
			for (int n = 0; n < 300; n++)
				fuzz_one(my_ops[i], opsets[k]);
		}
}

int main(void)
{
	for (int i = 0; i < 64; i++)
		seq[i] = (float)i;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reshape),
		cmocka_unit_test(test_squeeze_unsqueeze),
		cmocka_unit_test(test_transpose),
		cmocka_unit_test(test_slice),
		cmocka_unit_test(test_concat_split),
		cmocka_unit_test(test_gather),
		cmocka_unit_test(test_expand_tile),
		cmocka_unit_test(test_softmax),
		cmocka_unit_test(test_reduce),
		cmocka_unit_test(test_layernorm),
		cmocka_unit_test(test_constant),
		cmocka_unit_test(test_pad),
		cmocka_unit_test(test_gather_scatter_nd),
		cmocka_unit_test(test_topk_argmax),
		cmocka_unit_test(test_data_dependent),
		cmocka_unit_test(test_misc),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_loss_unique),
		cmocka_unit_test(test_detection_and_sampling),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_group_norm),
		cmocka_unit_test(test_concat_nhwc),
		cmocka_unit_test(test_large_threaded),
		cmocka_unit_test(test_random_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
