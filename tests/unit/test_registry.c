/* test_registry.c - loading, serving, unloading and swapping versions of
 * the example repository (run from the top of the tree, or with
 * MODELFS_EXAMPLES set), with reference counts keeping a version alive
 * for the requests that hold it.  The example pipeline's first step is
 * the example custom backend (build/examples/libmodelfs_preprocess.so):
 * this binary is its own backend worker, as `modelfs --backend-worker`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "membudget.h"
#include "registry.h"
#include "request.h"
#include "worker_serve.h"
#include "build_dir.h"

typedef struct fixture {
	mfs_sched *sched;
	mfs_registry *reg;
	char repo[4096];
} fixture;

static char backend_dir[4096];   /* $(BUILD)/examples: this binary is $(BUILD)/tests/test_registry */

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	mfs_error err;
	const char *ex = getenv("MODELFS_EXAMPLES");
	if (!realpath(ex ? ex : "examples", f->repo))
		fail_msg("examples/ not found: run from the top of the tree");
	assert_int_equal(mfs_sched_new(1, &f->sched, &err), 0);
	mfs_registry_conf rc = { .repository = f->repo, .sched = f->sched,
				.backend_dir = backend_dir };
	assert_int_equal(mfs_registry_new(&rc, &f->reg, &err), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	mfs_registry_free(f->reg);
	mfs_sched_stop(f->sched, 0);
	mfs_sched_free(f->sched);
	free(f);
	return 0;
}

static void test_load_all_and_snapshot(void **state)
{
	fixture *f = *state;
	mfs_error err;
	assert_int_equal(mfs_registry_load_all(f->reg, &err), 0);
	mfs_model_info *ms;
	int n;
	assert_int_equal(mfs_registry_snapshot(f->reg, &ms, &n), 0);
	assert_true(n >= 3);
	bool seen_add_sub = false;
	for (int i = 0; i < n; i++) {
		if (strcmp(ms[i].name, "add_sub") != 0)
			continue;
		seen_add_sub = true;
		assert_int_equal(ms[i].n_versions, 1);
		assert_int_equal(ms[i].versions[0].version, 1);
		assert_int_equal(ms[i].versions[0].state, MFS_VS_READY);
		assert_true(ms[i].versions[0].served);
		assert_string_equal(ms[i].versions[0].device, "cpu");
		assert_int_equal(ms[i].current, 1);
	}
	assert_true(seen_add_sub);
	mfs_registry_snapshot_free(ms, n);

	mfs_version *v;
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 0, &v, &err), 0);
	assert_int_equal(v->version, 1);
	assert_int_equal(v->config->n_inputs, 2);
	assert_int_equal(v->n_graph_outputs, 2);
	assert_true(v->load_seconds >= 0);
	mfs_version_put(v);
	assert_int_equal(mfs_registry_get(f->reg, "nosuch", 0, &v, &err), -ENOENT);
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 7, &v, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "version 7"));

	mfs_version **vs;
	assert_int_equal(mfs_registry_served(f->reg, &vs, &n), 0);
	assert_true(n >= 3);
	for (int i = 0; i < n; i++)
		mfs_version_put(vs[i]);
	free(vs);
}

static void test_unload_keeps_holders_alive(void **state)
{
	fixture *f = *state;
	mfs_error err;
	assert_int_equal(mfs_registry_load_version(f->reg, "add_sub", 1, &err), 0);
	mfs_version *v;
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 0, &v, &err), 0);
	mfs_request *r;
	assert_int_equal(mfs_request_new(v, "held", 1 << 20, &r, &err), 0);
	mfs_version_put(v);

	assert_int_equal(mfs_registry_unload_version(f->reg, "add_sub", 1, "test"), 0);
	assert_int_equal(mfs_registry_unload_version(f->reg, "add_sub", 1, "test"), -ENOENT);
	/* The model is known but serves nothing: EAGAIN for new requests. */
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 0, &v, &err), -EAGAIN);
	/* The request still holds the version: it is unloaded, not freed, and
	 * running it fails with a clear error (the queue is closed). */
	assert_true(mfs_version_unloaded(mfs_request_version(r)));
	assert_int_equal(mfs_request_commit_file(r, "INPUT0.txt", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16", 38, &err), 0);
	assert_int_equal(mfs_request_commit_file(r, "INPUT1.txt", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16", 38, &err), 0);
	assert_int_equal(mfs_request_state(r), MFS_REQ_FAILED);
	char *s = mfs_request_error_text(r);
	assert_non_null(strstr(s, "unloaded"));
	free(s);
	mfs_request_put(r);   /* the last reference: the version is freed now */

	assert_int_equal(mfs_registry_unload_model(f->reg, "add_sub", "test"), 0);
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 0, &v, &err), -ENOENT);
}

static void test_reload_swaps_and_failure_keeps_serving(void **state)
{
	fixture *f = *state;
	mfs_error err;
	assert_int_equal(mfs_registry_load_version(f->reg, "add_sub", 1, &err), 0);
	mfs_version *old, *now;
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 1, &old, &err), 0);
	/* Loading the same version again swaps in a new object. */
	assert_int_equal(mfs_registry_load_version(f->reg, "add_sub", 1, &err), 0);
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 1, &now, &err), 0);
	assert_ptr_not_equal(old, now);
	assert_true(mfs_version_unloaded(old));
	assert_false(mfs_version_unloaded(now));
	mfs_version_put(old);
	mfs_version_put(now);
	/* A version that does not exist fails, is shown UNAVAILABLE, and what
	 * was serving stays. */
	assert_true(mfs_registry_load_version(f->reg, "add_sub", 9, &err) < 0);
	mfs_model_info mi;
	assert_int_equal(mfs_registry_model_snapshot(f->reg, "add_sub", &mi), 0);
	assert_int_equal(mi.n_versions, 2);
	assert_int_equal(mi.versions[1].version, 9);
	assert_int_equal(mi.versions[1].state, MFS_VS_UNAVAILABLE);
	assert_true(strlen(mi.versions[1].reason) > 0);
	assert_int_equal(mi.current, 1);
	mfs_model_info_release(&mi);
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 0, &now, &err), 0);
	assert_int_equal(now->version, 1);
	mfs_version_put(now);
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 9, &now, &err), -EAGAIN);
}

static mfs_vstate state_of(fixture *f, const char *model, char *reason, size_t size)
{
	mfs_model_info mi;
	assert_int_equal(mfs_registry_model_snapshot(f->reg, model, &mi), 0);
	assert_int_equal(mi.n_versions, 1);
	mfs_vstate st = mi.versions[0].state;
	snprintf(reason, size, "%s", mi.versions[0].reason);
	mfs_model_info_release(&mi);
	return st;
}

/* One run of the example pipeline through a request (the infer file's
 * path): its probabilities sum to 1. */
static void run_pipeline(fixture *f)
{
	mfs_error err;
	mfs_version *v;
	mfs_request *r;
	assert_int_equal(mfs_registry_get(f->reg, "pipeline", 0, &v, &err), 0);
	assert_int_equal(mfs_request_new(v, "p", 1 << 20, &r, &err), 0);
	mfs_version_put(v);
	mfs_tensor in;
	mfs_shape sh = { .rank = 3, .dims = { 1, 28, 28 } };
	assert_int_equal(mfs_tensor_alloc(&in, MFS_DT_UINT8, &sh, &err), 0);
	memset(in.data, 200, in.nbytes);
	assert_int_equal(mfs_request_submit_tensors(r, &in, &err), 0);
	for (int i = 0; i < 1000 && mfs_request_state(r) != MFS_REQ_DONE &&
			mfs_request_state(r) != MFS_REQ_FAILED; i++)
		usleep(5000);
	const mfs_tensor *outs[2];
	if (mfs_request_outputs(r, outs, &err) < 0)
		fail_msg("the pipeline failed: %s", err.msg);
	assert_int_equal(outs[0]->shape.rank, 2);
	assert_int_equal(outs[0]->shape.dims[1], 10);
	float sum = 0;
	for (int i = 0; i < 10; i++)
		sum += ((const float *)outs[0]->data)[i];
	assert_true(sum > 0.999f && sum < 1.001f);
	/* The intermediate tensors were counted in --max-memory while they
	 * lived, and are given back with the request's own bytes. */
	mfs_request_put(r);
	assert_int_equal(mfs_membudget_used(), 0);
}

/* The example ensemble: READY once its steps are, UNAVAILABLE naming the
 * step that leaves (new requests: EAGAIN with the reason), READY again
 * when it comes back, without the ensemble being loaded again. */
static void test_ensemble_follows_its_steps(void **state)
{
	fixture *f = *state;
	mfs_error err;
	char why[MFS_ERROR_MSG_MAX];
	/* The ensemble first: its steps are not there yet. */
	assert_int_equal(mfs_registry_load_version(f->reg, "pipeline", 1, &err), 0);
	assert_int_equal(state_of(f, "pipeline", why, sizeof(why)), MFS_VS_UNAVAILABLE);
	assert_string_equal(why, "step 0 (model 'pipeline_preprocess'): no model named 'pipeline_preprocess' is loaded");
	mfs_version *v;
	assert_int_equal(mfs_registry_get(f->reg, "pipeline", 0, &v, &err), -EAGAIN);
	assert_non_null(strstr(err.msg, "step 0 (model 'pipeline_preprocess')"));
	assert_int_equal(mfs_registry_load_version(f->reg, "pipeline_preprocess", 1, &err), 0);
	assert_int_equal(mfs_registry_load_version(f->reg, "cnn", 1, &err), 0);
	assert_int_equal(state_of(f, "pipeline", why, sizeof(why)), MFS_VS_UNAVAILABLE);
	assert_string_equal(why, "step 2 (model 'pipeline_softmax'): no model named 'pipeline_softmax' is loaded");
	assert_int_equal(mfs_registry_load_version(f->reg, "pipeline_softmax", 1, &err), 0);
	assert_int_equal(state_of(f, "pipeline", why, sizeof(why)), MFS_VS_READY);
	assert_string_equal(why, "3 steps: pipeline_preprocess, cnn, pipeline_softmax");
	run_pipeline(f);

	/* A step leaves and comes back. */
	assert_int_equal(mfs_registry_unload_model(f->reg, "cnn", "test"), 0);
	assert_int_equal(state_of(f, "pipeline", why, sizeof(why)), MFS_VS_UNAVAILABLE);
	assert_string_equal(why, "step 1 (model 'cnn'): no model named 'cnn' is loaded");
	assert_int_equal(mfs_registry_get(f->reg, "pipeline", 0, &v, &err), -EAGAIN);
	assert_int_equal(mfs_registry_load_version(f->reg, "cnn", 1, &err), 0);
	assert_int_equal(state_of(f, "pipeline", why, sizeof(why)), MFS_VS_READY);
	run_pipeline(f);
	/* A step whose version the ensemble names is not READY. */
	assert_int_equal(mfs_registry_unload_version(f->reg, "pipeline_softmax", 1, "test"), 0);
	assert_int_equal(state_of(f, "pipeline", why, sizeof(why)), MFS_VS_UNAVAILABLE);
	assert_string_equal(why, "step 2 (model 'pipeline_softmax'): it has no READY version");
	assert_int_equal(mfs_registry_unload_model(f->reg, "pipeline", "test"), 0);
}

/* Every queue is bounded: a config that sets no max_queue_size gets the
 * default (issue 17), one that sets it keeps it. */
static void test_queue_limit_default(void **state)
{
	(void)state;
	mfs_model_config c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(mfs_registry_queue_limit(&c), MFS_DEFAULT_MAX_QUEUE_SIZE);
	assert_true(MFS_DEFAULT_MAX_QUEUE_SIZE > 0);
	c.dynamic_batching.default_queue_policy.max_queue_size = 7;
	assert_int_equal(mfs_registry_queue_limit(&c), 7);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], MFS_WORKER_FLAG) == 0)
		return mfs_worker_serve(MFS_WORKER_FD);
	if (test_build_path(backend_dir, sizeof(backend_dir), "/examples") < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_limit_default),
		cmocka_unit_test_setup_teardown(test_load_all_and_snapshot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unload_keeps_holders_alive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_swaps_and_failure_keeps_serving, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ensemble_follows_its_steps, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
