/* test_infer_json.c - KServe v2 request parsing and response rendering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "infer_json.h"

static const char *CFG =
	"name: \"m\"\n"
	"max_batch_size: 4\n"
	"input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 2 ] },\n"
	"        { name: \"ids\" data_type: TYPE_INT64 dims: [ 2 ] } ]\n"
	"output [ { name: \"y\" data_type: TYPE_FP32 dims: [ 2 ] },\n"
	"         { name: \"z\" data_type: TYPE_INT64 dims: [ 2 ] } ]\n";

static void load(mfs_model_config *c)
{
	mfs_error err;
	assert_int_equal(mfs_config_parse_pbtxt(CFG, strlen(CFG), "config.pbtxt", c, &err), 0);
}

static int parse(const mfs_model_config *c, const char *text, mfs_infer_req *req, mfs_error *err)
{
	mfs_error_clear(err);
	return mfs_infer_parse(c, text, strlen(text), req, err);
}

static void test_parse_request(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_infer_req req;
	mfs_error err;
	load(&c);
	assert_int_equal(parse(&c, "{\"id\":\"q1\",\"inputs\":["
			 "{\"name\":\"ids\",\"shape\":[1,2],\"datatype\":\"INT64\",\"data\":[7,8]},"
			 "{\"name\":\"x\",\"shape\":[2,2],\"datatype\":\"FP32\",\"data\":[[1,2],[3,4.5]]}],"
			 "\"outputs\":[{\"name\":\"z\"}]}", &req, &err), 0);
	assert_string_equal(req.id, "q1");
	assert_int_equal(req.inputs[0].dtype, MFS_DT_FLOAT);
	assert_int_equal(req.inputs[0].shape.rank, 2);
	assert_int_equal(req.inputs[0].shape.dims[0], 2);
	assert_true(((float *)req.inputs[0].data)[3] == 4.5f);
	assert_int_equal(req.inputs[1].dtype, MFS_DT_INT64);
	assert_int_equal(((int64_t *)req.inputs[1].data)[1], 8);
	assert_false(req.want[0]);
	assert_true(req.want[1]);
	mfs_infer_req_release(&req);
	mfs_config_release(&c);
}

static void test_parse_errors(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_infer_req req;
	mfs_error err;
	load(&c);
	assert_int_equal(parse(&c, "{", &req, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not JSON"));
	assert_int_equal(parse(&c, "[]", &req, &err), -EINVAL);
	assert_int_equal(parse(&c, "{\"inputs\":{}}", &req, &err), -EINVAL);
	assert_int_equal(parse(&c, "{\"inputs\":[{\"shape\":[1]}]}", &req, &err), -EINVAL);
	assert_int_equal(parse(&c, "{\"inputs\":[{\"name\":\"nope\",\"data\":[1]}]}", &req, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "nope"));
	assert_int_equal(parse(&c, "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2],\"datatype\":\"FP32\",\"data\":[1,2]},"
			 "{\"name\":\"x\",\"shape\":[1,2],\"datatype\":\"FP32\",\"data\":[1,2]}]}", &req, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "twice"));
	assert_int_equal(parse(&c, "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,3],\"datatype\":\"FP32\",\"data\":[1,2,3]}]}",
			       &req, &err), -EINVAL);
	assert_int_equal(parse(&c, "{\"inputs\":[{\"name\":\"ids\",\"shape\":[1,2],\"datatype\":\"INT64\",\"data\":[1,2.5]}]}",
			       &req, &err), -EINVAL);
	assert_int_equal(parse(&c, "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2],\"datatype\":\"FP32\","
			       "\"parameters\":{\"binary_data_size\":8}}]}", &req, &err), -EINVAL);
	assert_int_equal(parse(&c, "{\"inputs\":[],\"outputs\":[{\"name\":\"w\"}]}", &req, &err), -ENOENT);
	mfs_config_release(&c);
}

static void test_response(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_infer_req req;
	mfs_error err;
	load(&c);
	assert_int_equal(parse(&c, "{\"id\":\"abc\",\"inputs\":[]}", &req, &err), 0);
	mfs_tensor y, z;
	mfs_shape s = { .rank = 2, .dims = { 1, 2 } };
	assert_int_equal(mfs_tensor_alloc(&y, MFS_DT_FLOAT, &s, &err), 0);
	assert_int_equal(mfs_tensor_alloc(&z, MFS_DT_INT64, &s, &err), 0);
	((float *)y.data)[0] = 0.5f;
	((float *)y.data)[1] = -2.0f;
	((int64_t *)z.data)[1] = 42;
	const mfs_tensor *outs[2] = { &y, &z };
	size_t len;
	char *text = mfs_infer_response(&c, "m", 3, &req, outs, NULL, &len, &err);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	json_error_t jerr;
	json_t *r = json_loads(text, 0, &jerr);
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(r, "model_name")), "m");
	assert_string_equal(json_string_value(json_object_get(r, "model_version")), "3");
	assert_string_equal(json_string_value(json_object_get(r, "id")), "abc");
	json_t *o = json_object_get(r, "outputs");
	assert_int_equal(json_array_size(o), 2);
	json_t *o0 = json_array_get(o, 0), *o1 = json_array_get(o, 1);
	assert_string_equal(json_string_value(json_object_get(o0, "name")), "y");
	assert_string_equal(json_string_value(json_object_get(o0, "datatype")), "FP32");
	assert_true(json_real_value(json_array_get(json_object_get(o0, "data"), 1)) == -2.0 ||
		    json_integer_value(json_array_get(json_object_get(o0, "data"), 1)) == -2);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(o1, "data"), 1)), 42);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(o1, "shape"), 1)), 2);
	json_decref(r);
	free(text);
	text = mfs_infer_error_json("bad \"thing\"", &len);
	assert_string_equal(text, "{\"error\":\"bad \\\"thing\\\"\"}\n");
	free(text);
	mfs_tensor_release(&y);
	mfs_tensor_release(&z);
	mfs_infer_req_release(&req);
	mfs_config_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_request),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_response),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
