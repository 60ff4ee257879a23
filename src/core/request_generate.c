/* request_generate.c - a request directory on a generator model
 * (generate.h, SPEC.md section 5b): committing input_ids starts a
 * generation with the parameters of the dot files beside it
 * (".max_tokens", ".temperature", ".top_k", ".top_p", ".seed", ".stop"),
 * instead of waiting for the model's other inputs; output_ids.txt reads
 * it.  Called by request.c; calls nothing of it (as request_params.c).
 */
#include "request.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "request_internal.h"

bool req_gen_input_locked(const mfs_request *r, int idx)
{
	return r->v->gen && strcmp(r->cfg->inputs[idx].name, "input_ids") == 0;
}

int req_gen_start_locked(mfs_request *r, int idx, mfs_error *err)
{
	mfs_gen_params p;
	mfs_gen_params_init(&p);
	for (int i = 0; i < r->n_staged; i++) {
		const staged_file *f = &r->staged[i];
		int rc = mfs_gen_param_parse(&p, f->name + 1, f->blob, f->len, err);
		if (rc < 0 && rc != -ENOENT)
			return rc;
	}
	const mfs_tensor *t = &r->in[idx].t;
	int64_t n = mfs_shape_numel(&t->shape);
	int64_t *prompt = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
	if (!prompt)
		return mfs_fail(err, ENOMEM, "out of memory");
	for (int64_t i = 0; i < n; i++)
		prompt[i] = mfs_tensor_get_i64(t, i);
	mfs_gen *gen;
	int rc = mfs_gen_start(r->v->gen, prompt, n, &p, &gen, err);
	free(prompt);
	if (rc < 0)
		return rc;
	if (r->generation) {
		mfs_gen_cancel(r->generation);
		mfs_gen_put(r->generation);
	}
	r->generation = gen;
	return 0;
}

mfs_gen *mfs_request_gen(mfs_request *r)
{
	pthread_mutex_lock(&r->lock);
	mfs_gen *gen = r->generation;
	if (gen)
		mfs_gen_get(gen);
	pthread_mutex_unlock(&r->lock);
	return gen;
}
