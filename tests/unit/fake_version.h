/* fake_version.h - a served version of add_sub without a model file or
 * a registry: a config parsed from text (graph indices set by hand, in
 * the reverse of the config's order to prove the mapping) and a real
 * scheduler queue whose runner computes add/sub.  For unit tests of what
 * sits on requests (request.c, the FUSE layer's node table).  Include
 * after <cmocka.h>; use setup/teardown as cmocka fixtures, the state is
 * a fixture *. */
#ifndef MFS_FAKE_VERSION_H
#define MFS_FAKE_VERSION_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "registry.h"
#include "scheduler.h"

static const char *ADD_SUB =
	"name: \"add_sub\"\n"
	"input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 4 ] },\n"
	"        { name: \"INPUT1\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
	"output [ { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 4 ] },\n"
	"         { name: \"OUTPUT1\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n";

typedef struct fixture {
	mfs_sched *sched;
	mfs_model_config cfg;
	mfs_version *v;
	int runs;
	int fail_next;
	int delay_ms;
} fixture;

/* The graph's order is reversed from the config's, to prove the mapping. */
static int add_sub_run(void *ctx, int instance, const mfs_tensor *in, mfs_tensor *out, mfs_error *err)
{
	fixture *f = ctx;
	(void)instance;
	__atomic_add_fetch(&f->runs, 1, __ATOMIC_RELAXED);
	if (f->delay_ms)
		usleep((useconds_t)f->delay_ms * 1000);
	if (f->fail_next)
		return mfs_fail(err, EIO, "node 'Add': injected failure");
	const mfs_tensor *a = &in[1], *b = &in[0];   /* graph inputs: INPUT1, INPUT0 */
	for (int o = 0; o < 2; o++) {
		int rc = mfs_tensor_alloc(&out[o], MFS_DT_FLOAT, &a->shape, err);
		if (rc < 0)
			return rc;
	}
	for (int64_t i = 0; i < mfs_shape_numel(&a->shape); i++) {
		float x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
		((float *)out[1].data)[i] = x + y;   /* graph output 1: OUTPUT0 */
		((float *)out[0].data)[i] = x - y;   /* graph output 0: OUTPUT1 */
	}
	return 0;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	mfs_error err;
	assert_int_equal(mfs_sched_new(2, &f->sched, &err), 0);
	assert_int_equal(mfs_config_parse_pbtxt(ADD_SUB, strlen(ADD_SUB), "config.pbtxt", &f->cfg, &err), 0);
	f->cfg.inputs[0].graph_index = 1;
	f->cfg.inputs[1].graph_index = 0;
	f->cfg.outputs[0].graph_index = 1;
	f->cfg.outputs[1].graph_index = 0;
	mfs_version *v = calloc(1, sizeof(*v));
	v->model_name = strdup("add_sub");
	v->version = 1;
	v->config = &f->cfg;
	v->n_graph_inputs = 2;
	v->n_graph_outputs = 2;
	snprintf(v->device, sizeof(v->device), "cpu");
	mfs_stats_init(&v->stats);
	v->refs = 1;
	mfs_runner r = { .run = add_sub_run, .ctx = f, .n_inputs = 2, .n_outputs = 2 };
	mfs_queue_conf qc = { .label = "add_sub v1", .instances = 1, .stats = &v->stats };
	assert_int_equal(mfs_sched_queue_new(f->sched, &qc, &r, &v->queue, &err), 0);
	f->v = v;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	mfs_version_put(f->v);   /* the last reference: frees queue and version */
	mfs_sched_stop(f->sched, 0);
	mfs_sched_free(f->sched);
	mfs_config_release(&f->cfg);
	free(f);
	return 0;
}

#endif
