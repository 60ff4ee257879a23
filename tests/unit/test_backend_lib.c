/* test_backend_lib.c - a custom backend's library opened and called
 * through the ABI of include/modelfs_backend.h, as the worker does:
 * the ABI version check, a library that is not a backend, and the
 * example backend (examples/backends/preprocess.c) computing
 * (x/255 - mean) / std from uint8 HWC into float NCHW. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libgen.h>

#include <cmocka.h>

#include "backend_lib.h"
#include "build_dir.h"

static char build_dir[4096];   /* $(BUILD): this binary is $(BUILD)/tests/test_backend_lib */

static void lib_path(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", build_dir, rel);
}

static void test_abi_mismatch_names_library_and_versions(void **state)
{
	(void)state;
	char path[4200];
	mfs_backend_lib *lib = NULL;
	mfs_error err;

	lib_path(path, sizeof(path), "tests/backends/libmodelfs_badabi.so");
	assert_int_equal(mfs_backend_lib_open(path, &lib, &err), -EINVAL);
	assert_null(lib);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "declares backend ABI version 99"));
	assert_non_null(strstr(err.msg, "speaks version 1"));
}

static void test_missing_and_foreign_libraries(void **state)
{
	(void)state;
	mfs_backend_lib *lib = NULL;
	mfs_error err;

	assert_int_equal(mfs_backend_lib_open("/nonexistent/libmodelfs_x.so", &lib, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "cannot load /nonexistent/libmodelfs_x.so"));
	/* A real shared library that is no backend. */
	assert_int_equal(mfs_backend_lib_open("libm.so.6", &lib, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "exports no 'modelfs_backend'"));
	assert_null(lib);
}

/* The host side of alloc_output, as simple as can be: malloc'd, zeroed. */
static void *alloc_output(modelfs_batch *b, int32_t index, int32_t rank, const int64_t *shape)
{
	modelfs_tensor *t = &b->outputs[index];
	uint64_t n = 1;

	if (rank < 0 || rank > MODELFS_MAX_RANK)
		return NULL;
	for (int i = 0; i < rank; i++) {
		t->shape[i] = shape[i];
		n *= (uint64_t)shape[i];
	}
	t->rank = rank;
	t->byte_size = n * 4;
	t->data = calloc(n ? n : 1, 4);
	return t->data;
}

static modelfs_io_decl in_decl = { "IMAGE", MODELFS_UINT8, 3, { -1, -1, 3 } };
static modelfs_io_decl out_decl = { "PIXELS", MODELFS_FP32, 3, { 3, -1, -1 } };

static int init_preprocess_as(const modelfs_io_decl *input, mfs_backend_lib **lib, void **inst,
			      const modelfs_parameter *params, int n_params, char *msg,
			      size_t msg_size)
{
	char path[4200];
	mfs_error err;
	modelfs_backend_config cfg = {
		.model_name = "preprocess", .version = 1, .version_dir = "/tmp",
		.max_batch_size = 8, .inputs = input, .n_inputs = 1,
		.outputs = &out_decl, .n_outputs = 1,
		.parameters = params, .n_parameters = n_params,
	};

	lib_path(path, sizeof(path), "examples/libmodelfs_preprocess.so");
	assert_int_equal(mfs_backend_lib_open(path, lib, &err), 0);
	return mfs_backend_lib_api(*lib)->init(&cfg, inst, msg, msg_size);
}

static int init_preprocess(mfs_backend_lib **lib, void **inst, const modelfs_parameter *params,
			   int n_params, char *msg, size_t msg_size)
{
	return init_preprocess_as(&in_decl, lib, inst, params, n_params, msg, msg_size);
}

/* A 2x2 image, batch of 2, through execute. */
static void run_image(const modelfs_backend_api *api, void *inst, float *out /* 2*3*2*2 */)
{
	uint8_t pixels[2 * 2 * 2 * 3];
	modelfs_tensor in = { .name = "IMAGE", .dtype = MODELFS_UINT8, .rank = 4,
			      .shape = { 2, 2, 2, 3 }, .data = pixels, .byte_size = sizeof(pixels) };
	modelfs_tensor o = { .name = "PIXELS", .dtype = MODELFS_FP32 };
	modelfs_batch b = { .inputs = &in, .n_inputs = 1, .outputs = &o, .n_outputs = 1,
			    .alloc_output = alloc_output };
	char msg[256] = "";

	for (size_t i = 0; i < sizeof(pixels); i++)
		pixels[i] = (uint8_t)(i * 10);
	assert_int_equal(api->execute(inst, &b, msg, sizeof(msg)), 0);
	assert_int_equal(o.rank, 4);
	assert_int_equal(o.shape[0], 2);
	assert_int_equal(o.shape[1], 3);
	assert_int_equal(o.shape[2], 2);
	assert_int_equal(o.shape[3], 2);
	assert_int_equal(o.byte_size, 2 * 3 * 2 * 2 * 4);
	memcpy(out, o.data, o.byte_size);
	free(o.data);
}

static void test_preprocess_normalises_hwc_into_nchw(void **state)
{
	(void)state;
	static const modelfs_parameter unit[] = { { "mean", "0, 0, 0" }, { "std", "1 1 1" } };
	mfs_backend_lib *lib;
	void *inst = NULL;
	char msg[256] = "";
	float out[24];

	/* mean 0, std 1: out[n,c,y,x] = in[n,y,x,c] / 255. */
	assert_int_equal(init_preprocess(&lib, &inst, unit, 2, msg, sizeof(msg)), 0);
	run_image(mfs_backend_lib_api(lib), inst, out);
	for (int n = 0; n < 2; n++)
		for (int c = 0; c < 3; c++)
			for (int px = 0; px < 4; px++)
				assert_float_equal(out[n * 12 + c * 4 + px],
						   (float)((n * 12 + px * 3 + c) * 10) / 255.0f, 1e-6);
	mfs_backend_lib_api(lib)->finalize(inst);
	mfs_backend_lib_close(lib);

	/* No parameters: ImageNet's mean and std. */
	assert_int_equal(init_preprocess(&lib, &inst, NULL, 0, msg, sizeof(msg)), 0);
	run_image(mfs_backend_lib_api(lib), inst, out);
	assert_float_equal(out[0], (0.0f - 0.485f) / 0.229f, 1e-5);            /* n0 c0 px0: 0 */
	assert_float_equal(out[4], (10.0f / 255.0f - 0.456f) / 0.224f, 1e-5);  /* n0 c1 px0: 10 */
	assert_float_equal(out[12 + 8 + 3], (230.0f / 255.0f - 0.406f) / 0.225f, 1e-5); /* n1 c2 px3 */
	mfs_backend_lib_api(lib)->finalize(inst);
	mfs_backend_lib_close(lib);
}

static void test_preprocess_refuses_bad_parameters_and_channels(void **state)
{
	(void)state;
	static const modelfs_parameter typo[] = { { "meam", "0,0,0" } };
	static const modelfs_parameter two[] = { { "mean", "0.5, 0.5" } };
	static const modelfs_parameter zero_std[] = { { "std", "1, 0, 1" } };
	mfs_backend_lib *lib;
	void *inst = NULL;
	char msg[256] = "";

	assert_int_not_equal(init_preprocess(&lib, &inst, typo, 1, msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "unknown parameter 'meam'"));
	mfs_backend_lib_close(lib);
	assert_int_not_equal(init_preprocess(&lib, &inst, two, 1, msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "'0.5, 0.5' is not one number or 3 numbers (one per channel)"));
	mfs_backend_lib_close(lib);
	assert_int_not_equal(init_preprocess(&lib, &inst, zero_std, 1, msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "above 0"));
	mfs_backend_lib_close(lib);

	/* Four channels at run time: an error, not a wrong answer. */
	assert_int_equal(init_preprocess(&lib, &inst, NULL, 0, msg, sizeof(msg)), 0);
	uint8_t px[4] = { 0 };
	modelfs_tensor in = { .name = "IMAGE", .dtype = MODELFS_UINT8, .rank = 3,
			      .shape = { 1, 1, 4 }, .data = px, .byte_size = 4 };
	modelfs_tensor o = { .name = "PIXELS", .dtype = MODELFS_FP32 };
	modelfs_batch b = { .inputs = &in, .n_inputs = 1, .outputs = &o, .n_outputs = 1,
			    .alloc_output = alloc_output };
	assert_int_not_equal(mfs_backend_lib_api(lib)->execute(inst, &b, msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "must have 3 channels"));
	assert_null(o.data);
	mfs_backend_lib_api(lib)->finalize(inst);
	mfs_backend_lib_close(lib);
}

/* A grey [H, W] input (C = 1) and a 2-channel HWC one: mean and std as
 * one number for every channel or one per channel, needed when C != 3. */
static void test_preprocess_takes_any_channel_count(void **state)
{
	(void)state;
	static const modelfs_io_decl grey = { "IMAGE", MODELFS_UINT8, 2, { -1, -1 } };
	static const modelfs_io_decl two = { "IMAGE", MODELFS_UINT8, 3, { -1, -1, 2 } };
	static const modelfs_parameter half[] = { { "mean", "0.5" }, { "std", "0.5" } };
	static const modelfs_parameter per_channel[] = { { "mean", "0, 1" }, { "std", "1, 2" } };
	mfs_backend_lib *lib;
	void *inst = NULL;
	char msg[256] = "";
	uint8_t px[6] = { 0, 51, 102, 153, 204, 255 };
	modelfs_tensor o = { .name = "PIXELS", .dtype = MODELFS_FP32 };
	modelfs_tensor in = { .name = "IMAGE", .dtype = MODELFS_UINT8, .rank = 3,
			      .shape = { 1, 2, 3 }, .data = px, .byte_size = 6 };
	modelfs_batch b = { .inputs = &in, .n_inputs = 1, .outputs = &o, .n_outputs = 1,
			    .alloc_output = alloc_output };

	/* Grey, batch of one 2x3 image: out = (x / 255 - 0.5) / 0.5, [1,1,2,3]. */
	assert_int_equal(init_preprocess_as(&grey, &lib, &inst, half, 2, msg, sizeof(msg)), 0);
	assert_int_equal(mfs_backend_lib_api(lib)->execute(inst, &b, msg, sizeof(msg)), 0);
	assert_int_equal(o.rank, 4);
	assert_true(o.shape[0] == 1 && o.shape[1] == 1 && o.shape[2] == 2 && o.shape[3] == 3);
	for (int i = 0; i < 6; i++)
		assert_float_equal(((float *)o.data)[i], px[i] / 127.5f - 1.0f, 1e-6);
	free(o.data);
	o.data = NULL;
	mfs_backend_lib_api(lib)->finalize(inst);
	mfs_backend_lib_close(lib);
	/* Without mean and std a grey image has no default. */
	assert_int_not_equal(init_preprocess_as(&grey, &lib, &inst, NULL, 0, msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "'mean' and 'std' are needed for 1 channels"));
	mfs_backend_lib_close(lib);

	/* Two channels, one 1x3 image given unbatched as [H, W, C] = [1, 3, 2]:
	 * channel 0 is x / 255, channel 1 is (x / 255 - 1) / 2. */
	assert_int_equal(init_preprocess_as(&two, &lib, &inst, per_channel, 2, msg, sizeof(msg)), 0);
	in.shape[0] = 1, in.shape[1] = 3, in.shape[2] = 2;
	assert_int_equal(mfs_backend_lib_api(lib)->execute(inst, &b, msg, sizeof(msg)), 0);
	assert_true(o.shape[0] == 1 && o.shape[1] == 2 && o.shape[2] == 1 && o.shape[3] == 3);
	for (int x = 0; x < 3; x++) {
		assert_float_equal(((float *)o.data)[x], px[2 * x] / 255.0f, 1e-6);
		assert_float_equal(((float *)o.data)[3 + x], (px[2 * x + 1] / 255.0f - 1) / 2, 1e-6);
	}
	free(o.data);
	o.data = NULL;
	/* Three channels into a 2-channel model: refused at run time. */
	in.shape[2] = 3;
	in.shape[1] = 2;
	assert_int_not_equal(mfs_backend_lib_api(lib)->execute(inst, &b, msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "must have 2 channels"));
	assert_null(o.data);
	mfs_backend_lib_api(lib)->finalize(inst);
	mfs_backend_lib_close(lib);
}

int main(void)
{
	if (test_build_path(build_dir, sizeof(build_dir), "") < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abi_mismatch_names_library_and_versions),
		cmocka_unit_test(test_missing_and_foreign_libraries),
		cmocka_unit_test(test_preprocess_normalises_hwc_into_nchw),
		cmocka_unit_test(test_preprocess_refuses_bad_parameters_and_channels),
		cmocka_unit_test(test_preprocess_takes_any_channel_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
