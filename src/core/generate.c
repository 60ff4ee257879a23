/* generate.c - the generator of a decoder model (generate.h): which
 * graph inputs and outputs are the convention's, the generations waiting
 * to start, the running batch and its cache, and the steps, each a job
 * on the version's queue whose done() picks the ids and submits the next
 * step.  One step is in flight at a time per generator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate_internal.h"
#include "log.h"

#define DEFAULT_MAX_BATCH 16
#define MAX_BATCH 256

struct mfs_generator {
	pthread_mutex_t lock;          /* everything below but the immutable layout */
	char label[128];
	mfs_queue *queue;
	/* The layout: graph input and output indexes. */
	int n_in, n_out;
	int in_ids, in_mask, in_pos;   /* in_pos -1: the model has no position_ids */
	int n_layers;
	int *in_past, *out_present;    /* [2 * layer + (0 key, 1 value)] */
	int out_logits;
	mfs_dtype ids_dt, mask_dt, pos_dt, kv_dt;
	int64_t heads, head_dim;
	int max_batch;
	/* Generations waiting for their first step, in order. */
	mfs_gen *pending, **pending_tail;
	/* The batch: rows[0..n_rows), its cache kv[2 * n_layers], each
	 * [n_rows, heads, pmax, head_dim], row b's positions right-aligned
	 * (pmax - rows[b]->len of padding first). */
	mfs_gen **rows;
	int n_rows;
	mfs_tensor *kv;
	int64_t pmax;
	mfs_waiter *later;             /* readers to wake once the lock is released */
	/* The step in flight. */
	bool busy;
	mfs_job job;
	mfs_tensor *in, *out;
	mfs_gen *prefill;              /* its prompt; NULL: a step of the batch */
	void *scratch;
	size_t scratch_bytes;
};

/* ---- the layout ---- */

static int layer_of(const char *name, const char *prefix, int *layer, int *val)
{
	size_t pl = strlen(prefix);
	if (strncmp(name, prefix, pl) != 0)
		return 0;
	char *end;
	long n = strtol(name + pl, &end, 10);
	if (end == name + pl || n < 0 || n >= 1024)
		return 0;
	if (strcmp(end, ".key") == 0)
		*val = 0;
	else if (strcmp(end, ".value") == 0)
		*val = 1;
	else
		return 0;
	*layer = (int)n;
	return 1;
}

static bool int_dtype(mfs_dtype dt)
{
	return dt == MFS_DT_INT64 || dt == MFS_DT_INT32;
}

/* 0 (g's layout filled), or -EINVAL with err saying what does not
 * follow the convention. */
static int find_layout(mfs_generator *g, const mfs_graph *graph, mfs_error *err)
{
	int n_in = mfs_graph_n_inputs(graph), n_out = mfs_graph_n_outputs(graph), layer, val;
	g->n_in = n_in;
	g->n_out = n_out;
	g->in_ids = g->in_mask = g->in_pos = g->out_logits = -1;
	for (int i = 0; i < n_in; i++)
		if (layer_of(mfs_graph_input(graph, i)->name, "past_key_values.", &layer, &val) &&
		    layer + 1 > g->n_layers)
			g->n_layers = layer + 1;
	if (g->n_layers == 0)
		return mfs_fail(err, EINVAL, "no input named past_key_values.N.key");
	g->in_past = malloc(2 * (size_t)g->n_layers * sizeof(int));
	g->out_present = malloc(2 * (size_t)g->n_layers * sizeof(int));
	if (!g->in_past || !g->out_present)
		return mfs_fail(err, ENOMEM, "out of memory");
	for (int j = 0; j < 2 * g->n_layers; j++)
		g->in_past[j] = g->out_present[j] = -1;
	for (int i = 0; i < n_in; i++) {
		const mfs_io_desc *d = mfs_graph_input(graph, i);
		if (d->kind != MFS_KIND_TENSOR)
			return mfs_fail(err, EINVAL, "input '%s' is not a tensor", d->name);
		if (strcmp(d->name, "input_ids") == 0 && int_dtype(d->dtype) && d->rank == 2)
			g->in_ids = i, g->ids_dt = d->dtype;
		else if (strcmp(d->name, "attention_mask") == 0 && int_dtype(d->dtype) && d->rank == 2)
			g->in_mask = i, g->mask_dt = d->dtype;
		else if (strcmp(d->name, "position_ids") == 0 && int_dtype(d->dtype) && d->rank == 2)
			g->in_pos = i, g->pos_dt = d->dtype;
		else if (layer_of(d->name, "past_key_values.", &layer, &val) && d->rank == 4 &&
			 (d->dtype == MFS_DT_FLOAT || d->dtype == MFS_DT_FLOAT16) &&
			 d->dims[1] > 0 && d->dims[3] > 0) {
			g->in_past[2 * layer + val] = i;
			g->kv_dt = d->dtype;
			g->heads = d->dims[1];
			g->head_dim = d->dims[3];
		} else {
			return mfs_fail(err, EINVAL, "input '%s' is not one of input_ids [B,S], attention_mask "
					"[B,T], position_ids [B,S] (integers) or past_key_values.N.key|value "
					"[B,H,P,D] (float, H and D fixed)", d->name);
		}
	}
	for (int i = 0; i < n_out; i++) {
		const mfs_io_desc *d = mfs_graph_output(graph, i);
		if (strcmp(d->name, "logits") == 0 &&
		    (d->dtype == MFS_DT_FLOAT || d->dtype == MFS_DT_UNDEFINED))
			g->out_logits = i;
		else if (layer_of(d->name, "present.", &layer, &val) && layer < g->n_layers)
			g->out_present[2 * layer + val] = i;
	}
	if (g->in_ids < 0 || g->in_mask < 0)
		return mfs_fail(err, EINVAL, "no input input_ids and attention_mask (integer, [B,S])");
	if (g->out_logits < 0)
		return mfs_fail(err, EINVAL, "no output logits (float, [B,S,V])");
	for (int j = 0; j < 2 * g->n_layers; j++)
		if (g->in_past[j] < 0 || g->out_present[j] < 0)
			return mfs_fail(err, EINVAL, "layer %d has no %s (past_key_values.%d.%s in, present.%d.%s out)",
					j / 2, j % 2 ? "value" : "key", j / 2, j % 2 ? "value" : "key",
					j / 2, j % 2 ? "value" : "key");
	return 0;
}

/* The config's "generator" parameter: 1 "true", 0 "false", -1 absent. */
static int config_says(const mfs_model_config *cfg)
{
	for (int i = 0; i < cfg->n_parameters; i++)
		if (strcmp(cfg->parameters[i].key, "generator") == 0)
			return strcmp(cfg->parameters[i].value, "true") == 0 ? 1 : 0;
	return -1;
}

static void generator_release(mfs_generator *g)
{
	free(g->in_past);
	free(g->out_present);
	free(g->rows);
	free(g->kv);
	free(g->in);
	free(g->out);
	free(g->scratch);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

int mfs_generator_new(const mfs_model_config *cfg, const mfs_graph *graph,
		      mfs_queue *queue, const char *label, mfs_generator **out,
		      mfs_error *err)
{
	*out = NULL;
	int says = config_says(cfg);
	if (!graph || says == 0)
		return says == 1 ? mfs_fail(err, EINVAL, "%s: parameter generator is \"true\" but the "
					    "model has no ONNX graph", label) : 0;
	mfs_generator *g = calloc(1, sizeof(*g));
	if (!g)
		return mfs_fail(err, ENOMEM, "out of memory");
	pthread_mutex_init(&g->lock, NULL);
	snprintf(g->label, sizeof(g->label), "%s", label);
	g->queue = queue;
	g->pending_tail = &g->pending;
	g->max_batch = cfg->max_batch_size > 0 ? cfg->max_batch_size : DEFAULT_MAX_BATCH;
	if (g->max_batch > MAX_BATCH)
		g->max_batch = MAX_BATCH;
	mfs_error why;
	mfs_error_clear(&why);
	int rc = find_layout(g, graph, &why);
	if (rc == 0 && (!(g->rows = calloc((size_t)g->max_batch, sizeof(mfs_gen *))) ||
			!(g->kv = calloc(2 * (size_t)g->n_layers, sizeof(mfs_tensor))) ||
			!(g->in = calloc((size_t)g->n_in, sizeof(mfs_tensor))) ||
			!(g->out = calloc((size_t)g->n_out, sizeof(mfs_tensor)))))
		rc = mfs_fail(&why, ENOMEM, "out of memory");
	if (rc < 0) {
		generator_release(g);
		if (says == 1 || why.code == ENOMEM)
			return mfs_fail(err, why.code, "%s: parameter generator is \"true\" but %s", label, why.msg);
		return 0;   /* not a generator */
	}
	mfs_log_info("%s: a generator (%d layers, %lld heads of %lld%s)", label, g->n_layers,
		     (long long)g->heads, (long long)g->head_dim,
		     g->in_pos < 0 ? ", no position_ids: one generation at a time" : "");
	*out = g;
	return 0;
}

/* ---- the batch ---- */

static void drop_kv(mfs_generator *g)
{
	for (int j = 0; j < 2 * g->n_layers; j++)
		mfs_tensor_release(&g->kv[j]);
	g->pmax = 0;
}

/* End every generation of the batch (and of the prefill) with err. */
static void fail_batch(mfs_generator *g, const mfs_error *err)
{
	for (int b = 0; b < g->n_rows; b++) {
		gen_end(g->rows[b], NULL, err, &g->later);
		mfs_gen_put(g->rows[b]);
	}
	g->n_rows = 0;
	drop_kv(g);
	if (g->prefill) {
		gen_end(g->prefill, NULL, err, &g->later);
		mfs_gen_put(g->prefill);
		g->prefill = NULL;
	}
}

/* A host copy of every device tensor (engine.h) among ts[0..n) that
 * rows are copied from: into host[], or host[j] zeroed where ts[j] is on
 * the host already.  0 or -errno (host[] released). */
static int host_copies(const mfs_tensor *ts, const int *idx, int n, mfs_tensor *host,
		       mfs_error *err)
{
	for (int j = 0; j < n; j++) {
		const mfs_tensor *t = idx ? &ts[idx[j]] : &ts[j];
		memset(&host[j], 0, sizeof(host[j]));
		if (!mfs_tensor_on_device(t))
			continue;
		int rc = mfs_tensor_to_host(t, &host[j], err);
		if (rc < 0) {
			for (int k = 0; k < j; k++)
				mfs_tensor_release(&host[k]);
			return rc;
		}
	}
	return 0;
}

/* The first row of an empty batch: its present tensors are the cache as
 * they are (on the device, when the engine kept them there). */
static void adopt_join(mfs_generator *g, mfs_gen *join)
{
	drop_kv(g);
	for (int j = 0; j < 2 * g->n_layers; j++) {
		g->kv[j] = g->out[g->out_present[j]];
		memset(&g->out[g->out_present[j]], 0, sizeof(mfs_tensor));
	}
	g->pmax = join->len;
	g->rows[0] = join;
	g->n_rows = 1;
}

/* repack() with row copies. */
static int repack_rows(mfs_generator *g, const bool *keep, mfs_gen *join, mfs_error *err)
{
	int n = 0;
	int64_t p = join ? join->len : 0;
	for (int b = 0; b < g->n_rows; b++)
		if (keep[b]) {
			n++;
			p = g->rows[b]->len > p ? g->rows[b]->len : p;
		}
	if (join)
		n++;
	int L2 = 2 * g->n_layers;
	mfs_tensor *nkv = calloc((size_t)L2, sizeof(mfs_tensor));
	/* rows are copied on the host: device tensors come back first */
	mfs_tensor *tmp = calloc(2 * (size_t)L2, sizeof(mfs_tensor));
	if (!nkv || !tmp) {
		free(nkv);
		free(tmp);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	mfs_tensor *hkv = tmp, *hjoin = tmp + L2;
	int rc = host_copies(g->kv, NULL, g->n_rows ? L2 : 0, hkv, err);
	if (rc == 0 && join && (rc = host_copies(g->out, g->out_present, L2, hjoin, err)) < 0)
		for (int j = 0; j < L2; j++)
			mfs_tensor_release(&hkv[j]);
	if (rc < 0) {
		free(nkv);
		free(tmp);
		return rc;
	}
	size_t es = mfs_dtype_size(g->kv_dt), row = (size_t)g->head_dim * es;
	mfs_shape sh = { 4, { n, g->heads, p, g->head_dim } };
	for (int j = 0; j < L2; j++) {
		if (mfs_tensor_alloc(&nkv[j], g->kv_dt, &sh, err) < 0) {
			for (int k = 0; k < L2; k++) {
				mfs_tensor_release(&tmp[k]);
				mfs_tensor_release(&tmp[L2 + k]);
				if (k < j)
					mfs_tensor_release(&nkv[k]);
			}
			free(nkv);
			free(tmp);
			return -ENOMEM;
		}
		int nb = 0;
		for (int b = 0; b <= g->n_rows; b++) {
			bool is_join = b == g->n_rows;
			if (is_join ? !join : !keep[b])
				continue;
			int64_t len = is_join ? join->len : g->rows[b]->len;
			int64_t sp = is_join ? len : g->pmax, sb = is_join ? 0 : b;
			const mfs_tensor *ht = is_join ? &hjoin[j] : &hkv[j];
			const char *src = ht->data ? ht->data
					  : is_join ? g->out[g->out_present[j]].data : g->kv[j].data;
			char *dst = nkv[j].data;
			for (int64_t h = 0; h < g->heads; h++)
				memcpy(dst + ((nb * g->heads + h) * p + (p - len)) * row,
				       src + ((sb * g->heads + h) * sp + (sp - len)) * row, (size_t)len * row);
			nb++;
		}
	}
	for (int j = 0; j < 2 * L2; j++)
		mfs_tensor_release(&tmp[j]);
	free(tmp);
	drop_kv(g);
	free(g->kv);
	g->kv = nkv;
	g->pmax = p;
	int nb = 0;
	for (int b = 0; b < g->n_rows; b++)
		if (keep[b])
			g->rows[nb++] = g->rows[b];
		else
			mfs_gen_put(g->rows[b]);
	if (join)
		g->rows[nb++] = join;
	g->n_rows = nb;
	if (nb == 0)
		drop_kv(g);
	return 0;
}

/* The batch again: the rows of rows[] whose keep[] is set, then join (a
 * generation whose prompt ran, its cache the step's present outputs,
 * [1,H,len,D]) if not NULL.  Each row's positions are copied right-aligned into new tensors
 * as long as the longest row (read back from the device first where the
 * engine kept them there), except for a join into an empty batch, whose
 * present tensors become the cache as they are.  0, or -errno (nothing
 * changed). */
static int repack(mfs_generator *g, const bool *keep, mfs_gen *join, mfs_error *err)
{
	if (join && g->n_rows == 0) {
		adopt_join(g, join);
		return 0;
	}
	return repack_rows(g, keep, join, err);
}

/* ---- the steps ---- */

/* Release g->lock, then wake the readers the step's ids concern. */
static void unlock_and_wake(mfs_generator *g)
{
	mfs_waiter *list = g->later;
	g->later = NULL;
	pthread_mutex_unlock(&g->lock);
	gen_wake(list);
}

static void set_int(mfs_tensor *t, int64_t i, int64_t v)
{
	if (t->dtype == MFS_DT_INT64)
		((int64_t *)t->data)[i] = v;
	else
		((int32_t *)t->data)[i] = (int32_t)v;
}

/* Inputs of the next step (lock held): the prompt of gen with an empty
 * past, or (gen NULL) one id per row of the batch with its cache. */
static int make_inputs(mfs_generator *g, mfs_gen *gen, mfs_error *err)
{
	int64_t B = gen ? 1 : g->n_rows, S = gen ? gen->n_prompt : 1;
	int64_t T = gen ? S : g->pmax + 1;
	mfs_shape ids = { 2, { B, S } }, mask = { 2, { B, T } };
	memset(g->in, 0, (size_t)g->n_in * sizeof(mfs_tensor));
	if (mfs_tensor_alloc(&g->in[g->in_ids], g->ids_dt, &ids, err) < 0 ||
	    mfs_tensor_alloc(&g->in[g->in_mask], g->mask_dt, &mask, err) < 0 ||
	    (g->in_pos >= 0 && mfs_tensor_alloc(&g->in[g->in_pos], g->pos_dt, &ids, err) < 0))
		return -ENOMEM;
	for (int64_t b = 0; b < B; b++) {
		mfs_gen *r = gen ? gen : g->rows[b];
		int64_t past = gen ? 0 : r->len;
		for (int64_t s = 0; s < S; s++) {
			set_int(&g->in[g->in_ids], b * S + s, gen ? gen->prompt[s] : r->last);
			if (g->in_pos >= 0)
				set_int(&g->in[g->in_pos], b * S + s, past + s);
		}
		for (int64_t t = 0; t < T; t++)
			set_int(&g->in[g->in_mask], b * T + t, t >= T - past - S);
	}
	for (int j = 0; j < 2 * g->n_layers; j++) {
		mfs_tensor *t = &g->in[g->in_past[j]];
		if (gen) {
			t->dtype = g->kv_dt;
			t->shape = (mfs_shape){ 4, { 1, g->heads, 0, g->head_dim } };
			t->kind = MFS_KIND_TENSOR;
		} else {
			*t = g->kv[j];
			t->owns_data = false;   /* a view of the batch's cache */
		}
	}
	return 0;
}

static void release_inputs(mfs_generator *g)
{
	mfs_tensor_release(&g->in[g->in_ids]);
	mfs_tensor_release(&g->in[g->in_mask]);
	if (g->in_pos >= 0)
		mfs_tensor_release(&g->in[g->in_pos]);
}

static void step_done(mfs_job *job);

/* Start the next step if there is one and none is in flight (lock
 * held).  Generations cancelled before their first step end here. */
static void kick(mfs_generator *g)
{
	while (!g->busy) {
		mfs_gen *gen = g->pending;
		if (gen && gen_cancelled(gen)) {
			if (!(g->pending = gen->next))
				g->pending_tail = &g->pending;
			gen_end(gen, "cancelled", NULL, &g->later);
			mfs_gen_put(gen);
			continue;
		}
		/* Without position_ids a row's positions come from the
		 * padded past: only one generation runs at a time. */
		if (gen && g->n_rows < g->max_batch && (g->in_pos >= 0 || g->n_rows == 0)) {
			if (!(g->pending = gen->next))
				g->pending_tail = &g->pending;
			gen->next = NULL;
		} else if (g->n_rows > 0) {
			gen = NULL;
		} else {
			return;
		}
		mfs_error err;
		mfs_error_clear(&err);
		g->prefill = gen;
		int rc = make_inputs(g, gen, &err);
		if (rc == 0) {
			/* the cache stays in the engine's device memory where it
			 * has one (engine.h, "Resident tensors") */
			for (int j = 0; j < 2 * g->n_layers; j++)
				mfs_tensor_want_device(&g->out[g->out_present[j]]);
			memset(&g->job, 0, sizeof(g->job));
			g->job.inputs = g->in;
			g->job.outputs = g->out;
			g->job.done = step_done;
			g->job.arg = g;
			g->busy = true;
			rc = mfs_sched_submit(g->queue, &g->job, &err);
		}
		if (rc == 0)
			return;
		g->busy = false;
		release_inputs(g);
		mfs_error_prefix(&err, "%s: ", g->label);
		mfs_log_warn("%s", err.msg);
		fail_batch(g, &err);
	}
}

/* The next id of row b of the step's logits [B,S,V] (its last position). */
static int64_t pick(mfs_generator *g, mfs_gen *gen, int64_t b)
{
	const mfs_tensor *lg = &g->out[g->out_logits];
	int64_t S = lg->shape.dims[1], V = lg->shape.dims[2];
	size_t need = mfs_gen_scratch_bytes(V);
	if (gen->p.temperature > 0 && need > g->scratch_bytes) {
		void *s = realloc(g->scratch, need);
		if (!s)
			return -1;
		g->scratch = s;
		g->scratch_bytes = need;
	}
	return mfs_gen_sample((const float *)lg->data + (b * S + S - 1) * V, V, &gen->p, &gen->rng,
			      g->scratch);
}

/* The step's outputs (lock held): pick the ids, grow or re-pack the
 * cache.  0, or -errno with err (the caller fails the batch). */
static int take_outputs(mfs_generator *g, mfs_error *err)
{
	const mfs_tensor *lg = &g->out[g->out_logits];
	int64_t B = g->prefill ? 1 : g->n_rows;
	if (lg->dtype != MFS_DT_FLOAT || lg->shape.rank != 3 || lg->shape.dims[0] != B || lg->shape.dims[2] < 1)
		return mfs_fail(err, EIO, "logits is not float [B,S,V] (B %lld)", (long long)B);
	if (g->prefill) {
		mfs_gen *gen = g->prefill;
		int64_t id = pick(g, gen, 0);
		if (id < 0)
			return mfs_fail(err, ENOMEM, "out of memory");
		g->prefill = NULL;
		gen->len = gen->n_prompt;
		gen->last = id;
		bool keep[g->max_batch + 1];
		for (int b = 0; b < g->n_rows; b++)
			keep[b] = true;
		if (gen_push(gen, id, &g->later)) {
			mfs_gen_put(gen);
			return 0;
		}
		int rc = repack(g, keep, gen, err);
		if (rc < 0) {
			gen_end(gen, NULL, err, &g->later);
			mfs_gen_put(gen);
		}
		return 0;
	}
	bool keep[g->max_batch + 1], all = true;
	for (int b = 0; b < g->n_rows; b++) {
		mfs_gen *gen = g->rows[b];
		int64_t id = pick(g, gen, b);
		if (id < 0)
			return mfs_fail(err, ENOMEM, "out of memory");
		gen->len++;
		gen->last = id;
		keep[b] = !gen_push(gen, id, &g->later);
		all &= keep[b];
	}
	/* The present tensors are the next past as they are. */
	drop_kv(g);
	for (int j = 0; j < 2 * g->n_layers; j++) {
		g->kv[j] = g->out[g->out_present[j]];
		memset(&g->out[g->out_present[j]], 0, sizeof(mfs_tensor));
	}
	g->pmax = g->kv[0].shape.dims[2];
	return all ? 0 : repack(g, keep, NULL, err);
}

static void step_done(mfs_job *job)
{
	mfs_generator *g = job->arg;
	pthread_mutex_lock(&g->lock);
	g->busy = false;
	release_inputs(g);
	mfs_error err;
	mfs_error_clear(&err);
	int rc = job->status;
	if (rc < 0)
		err = job->err;
	else
		rc = take_outputs(g, &err);
	for (int i = 0; job->status == 0 && i < g->n_out; i++)
		mfs_tensor_release(&g->out[i]);
	if (rc < 0) {
		mfs_error_prefix(&err, "%s: generation step: ", g->label);
		mfs_log_warn("%s", err.msg);
		fail_batch(g, &err);
	}
	kick(g);
	unlock_and_wake(g);
}

int mfs_gen_start(mfs_generator *g, const int64_t *prompt, int64_t n, const mfs_gen_params *p,
		  mfs_gen **out, mfs_error *err)
{
	int rc = mfs_gen_params_check(p, err);
	if (rc < 0)
		return rc;
	if (n < 1)
		return mfs_fail(err, EINVAL, "the prompt has no ids");
	mfs_gen *gen = gen_new(prompt, n, p);
	if (!gen)
		return mfs_fail(err, ENOMEM, "out of memory");
	mfs_gen_get(gen);   /* the generator's */
	pthread_mutex_lock(&g->lock);
	*g->pending_tail = gen;
	g->pending_tail = &gen->next;
	kick(g);
	unlock_and_wake(g);
	*out = gen;
	return 0;
}

void mfs_generator_free(mfs_generator *g)
{
	if (!g)
		return;
	mfs_error err;
	mfs_fail(&err, ESHUTDOWN, "%s: the model was unloaded", g->label);
	pthread_mutex_lock(&g->lock);
	fail_batch(g, &err);
	while (g->pending) {
		mfs_gen *gen = g->pending;
		g->pending = gen->next;
		gen_end(gen, NULL, &err, &g->later);
		mfs_gen_put(gen);
	}
	unlock_and_wake(g);
	generator_release(g);
}
