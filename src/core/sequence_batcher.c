/* sequence_batcher.c - see sequence_batcher.h.
 *
 * sb->lock protects the sequences, their steps and states, the slot
 * count and the closed flag.  A step is one request of a sequence: it
 * waits in its sequence's list until the sequence holds a slot and has
 * no step in the queue, then its job (step->inner) goes to the
 * scheduler; step_done() moves the state outputs into the sequence and
 * launches the sequence's next step.  A thread (the reaper) frees
 * sequences that idled past max_sequence_idle_microseconds, so that their
 * state and slot go back without waiting for another request.
 */
#include "sequence_batcher.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "file_util.h"
#include "log.h"
#include "membudget.h"

/* Ids of sequences freed (ended or idle), remembered to say so. */
#define N_TOMBS 256

typedef struct tomb {
	mfs_seq_id id;
	bool idled;                  /* freed for idling; else it ended */
} tomb;

typedef struct ctl_slot {
	int graph;                   /* graph input */
	const mfs_seq_control *def;
} ctl_slot;

typedef struct state_slot {
	int in, out;                 /* graph input and output */
	const mfs_seq_state *def;
	mfs_shape shape;             /* of one sequence's initial state (batch dim included) */
	char *init;                  /* data_file's bytes; NULL: zeros */
	size_t bytes;
} state_slot;

typedef struct step step;

typedef struct seq {
	mfs_seq_id id;
	struct seq *next;
	bool active;                 /* holds a slot */
	bool busy;                   /* a step is in the queue */
	bool ended;                  /* its END request came: only a START goes on */
	bool begun;                  /* its START step went to the queue */
	uint64_t since;              /* idle since (a slot: when it asked for one) */
	mfs_tensor *state;           /* n_states */
	uint64_t charged;            /* state bytes in the memory budget */
	step *head, *tail;           /* steps waiting */
} seq;

struct step {
	mfs_job inner;
	mfs_job *outer;
	mfs_seqb *sb;
	seq *sq;
	bool start, end;
	step *next;
	mfs_tensor *in;              /* graph inputs: views, control and state tensors */
};

struct mfs_seqb {
	pthread_mutex_t lock;
	pthread_cond_t wake;         /* the reaper's */
	pthread_t reaper;
	bool quit, reaper_frees;
	char *label;
	const mfs_model_config *cfg;
	mfs_queue *queue;
	int n_in, n_out, slots, active;
	uint64_t idle_ns;
	ctl_slot *ctl; int n_ctl;
	state_slot *st; int n_st;
	bool *owned;                 /* n_in: filled here */
	seq *seqs;
	step *orphans;               /* failed steps of other requests: the reaper ends them */
	bool closed;
	char why[MFS_ERROR_MSG_MAX];
	tomb tombs[N_TOMBS];
	int n_tombs, next_tomb;
};

/* ---- ids and flags ---- */

/* buf without one trailing newline, as a C string: -EINVAL if too long
 * or holding a NUL or a control character. */
static int text_of(const char *what, const void *buf, size_t len, char *out, size_t size,
		   mfs_error *err)
{
	const char *p = buf;
	if (len && p[len - 1] == '\n')
		len--;
	if (len >= size)
		return mfs_fail(err, EINVAL, "%s: longer than %zu bytes", what, size - 1);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return mfs_fail(err, EINVAL, "%s: holds a control character", what);
	memcpy(out, p, len);
	out[len] = '\0';
	return 0;
}

int mfs_seq_parse_id(const char *what, const void *buf, size_t len, mfs_seq_id *out,
		     mfs_error *err)
{
	mfs_seq_id id = { .set = true };
	if (text_of(what, buf, len, id.str, sizeof(id.str), err) < 0)
		return -EINVAL;
	if (!id.str[0])
		return mfs_fail(err, EINVAL, "%s: empty (a sequence id is a number from 1 or a string)", what);
	if (strspn(id.str, "0123456789") == strlen(id.str)) {
		errno = 0;
		id.num = strtoull(id.str, NULL, 10);
		if (errno == ERANGE)
			return mfs_fail(err, EINVAL, "%s: %s is more than 2^64-1", what, id.str);
		if (id.num == 0)
			return mfs_fail(err, EINVAL, "%s: 0 is not a sequence id (Triton: a correlation "
					"ID is not 0)", what);
		id.str[0] = '\0';
	} else {
		id.is_string = true;
	}
	*out = id;
	return 0;
}

int mfs_seq_parse_flag(const char *what, const void *buf, size_t len, bool *out,
		       mfs_error *err)
{
	char t[8];
	if (text_of(what, buf, len, t, sizeof(t), err) < 0)
		return -EINVAL;
	if (strcmp(t, "1") == 0 || strcmp(t, "true") == 0)
		*out = true;
	else if (!t[0] || strcmp(t, "0") == 0 || strcmp(t, "false") == 0)
		*out = false;
	else
		return mfs_fail(err, EINVAL, "%s: '%s' is not 1, 0, true or false", what, t);
	return 0;
}

const char *mfs_seq_id_format(const mfs_seq_id *id, char *buf, size_t size)
{
	if (id->is_string)
		snprintf(buf, size, "'%s'", id->str);
	else
		snprintf(buf, size, "%" PRIu64, id->num);
	return buf;
}

static bool same_id(const mfs_seq_id *a, const mfs_seq_id *b)
{
	return a->is_string == b->is_string &&
	       (a->is_string ? strcmp(a->str, b->str) == 0 : a->num == b->num);
}

/* ---- setup ---- */

static int find_name(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/* A data_file's bytes: exactly the state's. */
static int load_initial(const mfs_seqb_conf *conf, state_slot *s, mfs_error *err)
{
	char path[4096];
	size_t len = 0;
	snprintf(path, sizeof(path), "%s/initial_state/%s", conf->model_dir, s->def->init_file);
	int rc = mfs_read_file(path, s->bytes, &s->init, &len, err);
	if (rc < 0)
		return mfs_fail(err, -rc, "state '%s': initial_state data_file '%s': %s",
				s->def->input_name, path, err->msg);
	if (len != s->bytes)
		return mfs_fail(err, EINVAL, "state '%s': initial_state data_file '%s' has %zu bytes, "
				"the state needs %zu", s->def->input_name, path, len, s->bytes);
	return 0;
}

static int setup_states(mfs_seqb *sb, const mfs_seqb_conf *conf, mfs_error *err)
{
	const mfs_model_config *c = conf->cfg;
	for (int i = 0; i < sb->n_st; i++) {
		state_slot *s = &sb->st[i];
		s->def = &c->sequence_batching.states[i];
		s->in = find_name(conf->input_names, conf->n_inputs, s->def->input_name);
		s->out = find_name(conf->output_names, conf->n_outputs, s->def->output_name);
		if (s->in < 0 || s->out < 0)
			return mfs_fail(err, EINVAL, "sequence_batching state: the graph has no %s '%s'",
					s->in < 0 ? "input" : "output",
					s->in < 0 ? s->def->input_name : s->def->output_name);
		if (conf->input_dtypes[s->in] != s->def->dtype)
			return mfs_fail(err, EINVAL, "sequence_batching state '%s' is %s, the graph's input is %s",
					s->def->input_name, mfs_dtype_config_name(s->def->dtype),
					mfs_dtype_config_name(conf->input_dtypes[s->in]));
		sb->owned[s->in] = true;
		const int64_t *dims = s->def->has_initial ? s->def->init_dims : s->def->dims;
		int rank = s->def->rank, b = c->max_batch_size > 0;
		if (rank + b > MFS_MAX_RANK)
			return mfs_fail(err, EINVAL, "state '%s': too many dims", s->def->input_name);
		s->shape.rank = rank + b;
		s->shape.dims[0] = 1;
		memcpy(&s->shape.dims[b], dims, (size_t)rank * sizeof(int64_t));
		mfs_tensor probe = { .dtype = s->def->dtype, .shape = s->shape };
		if (!mfs_tensor_bytes(&probe, &s->bytes))
			return mfs_fail(err, EINVAL, "state '%s' is too large", s->def->input_name);
		if (s->def->init_file && load_initial(conf, s, err) < 0)
			return -err->code;
	}
	return 0;
}

static int setup(mfs_seqb *sb, const mfs_seqb_conf *conf, mfs_error *err)
{
	const mfs_model_config *c = conf->cfg;
	for (int i = 0; i < sb->n_ctl; i++) {
		ctl_slot *k = &sb->ctl[i];
		k->def = &c->sequence_batching.controls[i];
		k->graph = find_name(conf->input_names, conf->n_inputs, k->def->name);
		if (k->graph < 0)
			return mfs_fail(err, EINVAL, "sequence_batching control_input '%s' is not an input "
					"of the graph", k->def->name);
		if (conf->input_dtypes[k->graph] != k->def->dtype)
			return mfs_fail(err, EINVAL, "sequence_batching control_input '%s' is %s, the graph's "
					"input is %s", k->def->name, mfs_dtype_config_name(k->def->dtype),
					mfs_dtype_config_name(conf->input_dtypes[k->graph]));
		sb->owned[k->graph] = true;
	}
	return setup_states(sb, conf, err);
}

static void *reaper(void *arg);

static void destroy(mfs_seqb *sb)
{
	for (int i = 0; sb->st && i < sb->n_st; i++)
		free(sb->st[i].init);
	free(sb->st);
	free(sb->ctl);
	free(sb->owned);
	free(sb->label);
	pthread_cond_destroy(&sb->wake);
	pthread_mutex_destroy(&sb->lock);
	free(sb);
}

int mfs_seqb_new(const mfs_seqb_conf *conf, mfs_seqb **out, mfs_error *err)
{
	const mfs_model_config *c = conf->cfg;
	mfs_seqb *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return mfs_fail(err, ENOMEM, "out of memory");
	pthread_mutex_init(&sb->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sb->wake, &ca);
	pthread_condattr_destroy(&ca);
	sb->label = strdup(conf->label ? conf->label : "model");
	sb->cfg = c;
	sb->queue = conf->queue;
	sb->n_in = conf->n_inputs;
	sb->n_out = conf->n_outputs;
	sb->n_ctl = c->sequence_batching.n_controls;
	sb->n_st = c->sequence_batching.n_states;
	int per = c->max_batch_size > 0 ? c->max_batch_size : 1;
	sb->slots = c->sequence_batching.oldest ? c->sequence_batching.max_candidate_sequences
						: per * (conf->instances > 0 ? conf->instances : 1);
	if (sb->slots < 1)
		sb->slots = 1;
	int64_t idle = c->sequence_batching.max_idle_us ? c->sequence_batching.max_idle_us
							: MFS_SEQ_DEFAULT_IDLE_US;
	sb->idle_ns = (uint64_t)idle * 1000u;
	sb->ctl = calloc((size_t)sb->n_ctl + 1, sizeof(*sb->ctl));
	sb->st = calloc((size_t)sb->n_st + 1, sizeof(*sb->st));
	sb->owned = calloc((size_t)sb->n_in + 1, sizeof(bool));
	if (!sb->label || !sb->ctl || !sb->st || !sb->owned) {
		destroy(sb);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	int rc = setup(sb, conf, err);
	if (rc == 0 && (rc = pthread_create(&sb->reaper, NULL, reaper, sb)) != 0)
		rc = -mfs_fail(err, rc, "cannot start the sequence batcher's thread: %s", strerror(rc));
	if (rc < 0) {
		destroy(sb);
		return rc;
	}
	*out = sb;
	return 0;
}

/* ---- sequences ---- */

static seq *find_seq(mfs_seqb *sb, const mfs_seq_id *id)
{
	for (seq *s = sb->seqs; s; s = s->next)
		if (same_id(&s->id, id))
			return s;
	return NULL;
}

static void release_state(mfs_seqb *sb, seq *sq)
{
	for (int i = 0; i < sb->n_st; i++)
		mfs_tensor_release(&sq->state[i]);
	mfs_membudget_give(sq->charged);
	sq->charged = 0;
}

static void bury(mfs_seqb *sb, const mfs_seq_id *id, bool idled)
{
	sb->tombs[sb->next_tomb] = (tomb){ *id, idled };
	sb->next_tomb = (sb->next_tomb + 1) % N_TOMBS;
	if (sb->n_tombs < N_TOMBS)
		sb->n_tombs++;
}

/* Unlink and free a sequence with no step (lock held); its slot goes. */
static void free_seq(mfs_seqb *sb, seq *sq)
{
	for (seq **p = &sb->seqs; *p; p = &(*p)->next)
		if (*p == sq) {
			*p = sq->next;
			break;
		}
	if (sq->active)
		sb->active--;
	release_state(sb, sq);
	free(sq->state);
	free(sq);
}

/* How the sequence id ended, newest first: NULL if not remembered. */
static const tomb *find_tomb(const mfs_seqb *sb, const mfs_seq_id *id)
{
	for (int k = 1; k <= sb->n_tombs; k++) {
		const tomb *t = &sb->tombs[(sb->next_tomb - k + N_TOMBS) % N_TOMBS];
		if (t->id.set && same_id(&t->id, id))
			return t;
	}
	return NULL;
}

static void forget_tomb(mfs_seqb *sb, const mfs_seq_id *id)
{
	for (int i = 0; i < sb->n_tombs; i++)
		if (same_id(&sb->tombs[i].id, id))
			sb->tombs[i].id.set = false;   /* matches no id */
}

/* Sequences idle past the limit are freed (lock held); returns the
 * earliest time another will be, or 0. */
static uint64_t sweep(mfs_seqb *sb, uint64_t now)
{
	uint64_t next = 0;
	for (seq *s = sb->seqs, *n; s; s = n) {
		n = s->next;
		if (s->busy || s->head)
			continue;
		uint64_t due = s->since + sb->idle_ns;
		if (due > now) {
			if (!next || due < next)
				next = due;
			continue;
		}
		char id[MFS_SEQ_ID_MAX + 8];
		mfs_log_info("%s: sequence %s idled more than %" PRIu64 " µs: freed", sb->label,
			     mfs_seq_id_format(&s->id, id, sizeof(id)), sb->idle_ns / 1000u);
		bury(sb, &s->id, true);
		free_seq(sb, s);
	}
	return next;
}

/* ---- steps ---- */

static void free_step(step *st)
{
	free(st->in);
	free(st);
}

/* The control tensors of a step (lock held). */
static int make_controls(mfs_seqb *sb, step *st, mfs_error *err)
{
	mfs_shape shape = { .rank = 1, .dims = { 1 } };
	if (sb->cfg->max_batch_size > 0) {
		shape.rank = 2;
		shape.dims[1] = 1;
	}
	for (int i = 0; i < sb->n_ctl; i++) {
		const mfs_seq_control *d = sb->ctl[i].def;
		mfs_tensor *t = &st->in[sb->ctl[i].graph];
		int rc = mfs_tensor_alloc(t, d->dtype, &shape, err);
		if (rc < 0)
			return rc;
		bool on = d->kind == MFS_SEQ_CTRL_START ? st->start :
			  d->kind == MFS_SEQ_CTRL_END ? st->end : true;
		double v = d->false_true[on];
		uint64_t id = st->sq->id.num;
		switch (d->dtype) {
		case MFS_DT_INT32: *(int32_t *)t->data = d->kind == MFS_SEQ_CTRL_CORRID ? (int32_t)id : (int32_t)v; break;
		case MFS_DT_FLOAT: *(float *)t->data = (float)v; break;
		case MFS_DT_BOOL: *(uint8_t *)t->data = v != 0; break;
		case MFS_DT_UINT32: *(uint32_t *)t->data = (uint32_t)id; break;
		case MFS_DT_INT64: *(int64_t *)t->data = (int64_t)id; break;
		default: *(uint64_t *)t->data = id; break;
		}
	}
	return 0;
}

static void drop_controls(mfs_seqb *sb, step *st)
{
	for (int i = 0; i < sb->n_ctl; i++)
		mfs_tensor_release(&st->in[sb->ctl[i].graph]);
}

/* A sequence's state at its START: the initial state, counted in the
 * memory budget (lock held). */
static int reset_state(mfs_seqb *sb, seq *sq, mfs_error *err)
{
	uint64_t need = 0;
	for (int i = 0; i < sb->n_st; i++)
		need += sb->st[i].bytes;
	release_state(sb, sq);
	int rc = mfs_membudget_take(need, err);
	if (rc < 0) {
		mfs_error_prefix(err, "%s: the sequence's state: ", sb->label);
		return rc;
	}
	sq->charged = need;
	for (int i = 0; i < sb->n_st; i++) {
		rc = mfs_tensor_alloc(&sq->state[i], sb->st[i].def->dtype, &sb->st[i].shape, err);
		if (rc < 0)
			return rc;
		if (sb->st[i].init && sb->st[i].bytes)
			memcpy(sq->state[i].data, sb->st[i].init, sb->st[i].bytes);
	}
	return 0;
}

static void step_done(mfs_job *inner);

static void step_started(mfs_job *inner)
{
	step *st = inner->arg;
	if (st->outer->started)
		st->outer->started(st->outer);
}

/* Send the sequence's first waiting step to the queue (lock held). */
static int launch(mfs_seqb *sb, seq *sq, mfs_error *err)
{
	step *st = sq->head;
	int rc = 0;
	if (!st->start && !sq->begun) {
		char id[MFS_SEQ_ID_MAX + 8];
		return mfs_fail(err, EIO, "%s: sequence %s is not started: its sequence_start "
				"request failed", sb->label, mfs_seq_id_format(&sq->id, id, sizeof(id)));
	}
	if (st->start)
		rc = reset_state(sb, sq, err);
	for (int i = 0; rc == 0 && i < sb->n_in; i++)
		if (!sb->owned[i]) {
			st->in[i] = st->outer->inputs[i];
			st->in[i].owns_data = false;
		}
	for (int i = 0; rc == 0 && i < sb->n_st; i++) {
		st->in[sb->st[i].in] = sq->state[i];
		st->in[sb->st[i].in].owns_data = false;
	}
	if (rc == 0)
		rc = make_controls(sb, st, err);
	if (rc == 0) {
		st->inner = (mfs_job){
			.inputs = st->in, .outputs = st->outer->outputs, .done = step_done,
			.started = step_started, .arg = st,
		};
		rc = mfs_sched_submit(sb->queue, &st->inner, err);
	}
	if (rc < 0) {
		drop_controls(sb, st);
		return rc;
	}
	sq->head = st->next;
	if (!sq->head)
		sq->tail = NULL;
	st->next = NULL;
	sq->busy = true;
	sq->begun |= st->start;
	return 0;
}

/* A step that cannot run: its job fails with err (done() later). */
static void fail_step(step *st, int rc, const mfs_error *err, step **failed)
{
	st->outer->status = rc;
	st->outer->err = *err;
	st->outer->t_start = st->outer->t_input = st->outer->t_infer = st->outer->t_end = mfs_now_ns();
	st->next = *failed;
	*failed = st;
}

/* Free the sequences that are over, give free slots to those that wait
 * longest, and launch the next step of each sequence that can go (only
 * that of `only` when not NULL) (lock held).  Steps that cannot launch
 * go to *failed. */
static void pump(mfs_seqb *sb, seq *only, step **failed)
{
	for (seq *s = sb->seqs, *n; s; s = n) {
		n = s->next;
		if (!s->busy && !s->head && (s->ended || !s->begun)) {
			if (s->ended)
				bury(sb, &s->id, false);
			free_seq(sb, s);   /* ended, or its START never ran */
		}
	}
	for (;;) {
		seq *oldest = NULL;
		for (seq *s = sb->seqs; s && sb->active < sb->slots; s = s->next)
			if (!s->active && s->head && (!oldest || s->since < oldest->since))
				oldest = s;
		if (!oldest)
			break;
		oldest->active = true;
		sb->active++;
	}
	for (seq *s = sb->seqs; s; s = s->next) {
		if (only && s != only)
			continue;
		while (s->active && !s->busy && s->head) {
			mfs_error err;
			int rc = launch(sb, s, &err);
			if (rc == 0)
				break;
			step *st = s->head;
			s->head = st->next;
			if (!s->head)
				s->tail = NULL;
			fail_step(st, rc, &err, failed);
		}
	}
}

static void finish(step *failed)
{
	while (failed) {
		step *next = failed->next;
		mfs_job *outer = failed->outer;
		free_step(failed);
		outer->done(outer);
		failed = next;
	}
}

/* Copy the run's outcome to the request's job. */
static void copy_outcome(mfs_job *outer, const mfs_job *inner)
{
	outer->status = inner->status;
	outer->err = inner->err;
	outer->batch_size = inner->batch_size;
	outer->batch_requests = inner->batch_requests;
	outer->t_start = inner->t_start;
	outer->t_input = inner->t_input;
	outer->t_infer = inner->t_infer;
	outer->t_end = inner->t_end;
}

static void step_done(mfs_job *inner)
{
	step *st = inner->arg;
	mfs_seqb *sb = st->sb;
	seq *sq = st->sq;
	mfs_job *outer = st->outer;
	step *failed = NULL;

	pthread_mutex_lock(&sb->lock);
	if (inner->status == 0) {
		uint64_t held = 0;
		for (int i = 0; i < sb->n_st; i++) {
			mfs_tensor_release(&sq->state[i]);
			sq->state[i] = outer->outputs[sb->st[i].out];
			outer->outputs[sb->st[i].out] = (mfs_tensor){ 0 };
			held += sq->state[i].nbytes;
		}
		if (held > sq->charged)
			mfs_membudget_force(held - sq->charged);
		else
			mfs_membudget_give(sq->charged - held);
		sq->charged = held;
	}
	drop_controls(sb, st);
	copy_outcome(outer, inner);
	sq->busy = false;
	sq->since = mfs_now_ns();
	if (st->end && !sq->head)
		sq->ended = true;
	pump(sb, NULL, &failed);
	pthread_cond_signal(&sb->wake);
	pthread_mutex_unlock(&sb->lock);
	/* outer->done may drop the last reference to the version, which
	 * frees sb: nothing of sb is touched from here on. */
	free_step(st);
	outer->done(outer);
	finish(failed);
}

/* -EIO: the request of a sequence that does not run (lock held). */
static int not_running(mfs_seqb *sb, const seq *sq, const mfs_seq_id *idp, mfs_error *err)
{
	char id[MFS_SEQ_ID_MAX + 8];
	mfs_seq_id_format(idp, id, sizeof(id));
	const tomb *t = sq ? NULL : find_tomb(sb, idp);
	if (sq || (t && !t->idled))
		return mfs_fail(err, EIO, "%s: sequence %s has ended (its last request had "
				"sequence_end); start it again with sequence_start", sb->label, id);
	if (t)
		return mfs_fail(err, EIO, "%s: sequence %s was freed after idling more than %" PRIu64
				" µs (max_sequence_idle_microseconds); its state is gone: start it "
				"again with sequence_start", sb->label, id, sb->idle_ns / 1000u);
	return mfs_fail(err, EIO, "%s: sequence %s is not started: its first request needs "
			"sequence_start (a sequence lives in the version it started on)", sb->label, id);
}

/* The request's own checks, before any lock. */
static int check_request(mfs_seqb *sb, const mfs_job *job, const mfs_seq_params *p,
			 mfs_error *err)
{
	if (!p->id.set)
		return mfs_fail(err, EINVAL, "%s uses sequence batching: a request needs a sequence id "
				"($req/.sequence_id, or \"sequence_id\" in the infer file's parameters)",
				sb->label);
	for (int i = 0; sb->cfg->max_batch_size > 0 && i < sb->n_in; i++)
		if (!sb->owned[i] && job->inputs[i].kind == MFS_KIND_TENSOR &&
		    job->inputs[i].shape.rank > 0 && job->inputs[i].shape.dims[0] != 1)
			return mfs_fail(err, EINVAL, "%s: a request of a sequence carries one row (batch "
					"size 1), not %lld", sb->label,
					(long long)job->inputs[i].shape.dims[0]);
	for (int i = 0; p->id.is_string && i < sb->n_ctl; i++)
		if (sb->ctl[i].def->kind == MFS_SEQ_CTRL_CORRID)
			return mfs_fail(err, EINVAL, "%s: sequence id '%s' is a string; control_input '%s' "
					"(CONTROL_SEQUENCE_CORRID) takes a number", sb->label, p->id.str,
					sb->ctl[i].def->name);
	return 0;
}

static step *step_new(mfs_seqb *sb, mfs_job *job, const mfs_seq_params *p)
{
	step *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->in = calloc((size_t)sb->n_in + 1, sizeof(mfs_tensor));
	if (!st->in) {
		free(st);
		return NULL;
	}
	st->outer = job;
	st->sb = sb;
	st->start = p->start;
	st->end = p->end;
	return st;
}

static seq *seq_new(mfs_seqb *sb, const mfs_seq_id *id)
{
	seq *sq = calloc(1, sizeof(*sq));
	if (!sq || !(sq->state = calloc((size_t)sb->n_st + 1, sizeof(mfs_tensor)))) {
		free(sq);
		return NULL;
	}
	sq->id = *id;
	sq->since = mfs_now_ns();
	sq->next = sb->seqs;
	sb->seqs = sq;
	return sq;
}

int mfs_seqb_submit(mfs_seqb *sb, mfs_job *job, const mfs_seq_params *p, mfs_error *err)
{
	int rc = check_request(sb, job, p, err);
	if (rc < 0)
		return rc;
	step *st = step_new(sb, job, p);
	if (!st)
		return mfs_fail(err, ENOMEM, "out of memory");
	job->t_enqueue = mfs_now_ns();
	pthread_mutex_lock(&sb->lock);
	sweep(sb, mfs_now_ns());
	seq *sq = find_seq(sb, &p->id);
	if (sb->closed) {
		rc = mfs_fail(err, ESHUTDOWN, "%s", sb->why);
	} else if (!p->start && (!sq || sq->ended)) {
		rc = not_running(sb, sq, &p->id, err);
	} else if (!sq && !(sq = seq_new(sb, &p->id))) {
		rc = mfs_fail(err, ENOMEM, "out of memory");
	}
	if (rc < 0) {
		pthread_mutex_unlock(&sb->lock);
		free_step(st);
		return rc;
	}
	if (p->start)
		forget_tomb(sb, &p->id);
	sq->ended = p->end;
	st->sq = sq;
	if (sq->tail)
		sq->tail->next = st;
	else
		sq->head = st;
	sq->tail = st;
	if (!sq->active)
		sq->since = mfs_now_ns();   /* its place among those waiting for a slot */
	step *failed = NULL;
	pump(sb, sq, &failed);
	/* This request's own step failed at once: say so to the caller
	 * rather than through done(). */
	for (step **pp = &failed; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			rc = st->outer->status;
			*err = st->outer->err;
			free_step(st);
			if (!sq->busy && !sq->head && !sq->begun)
				free_seq(sb, sq);   /* its START did not go */
			break;
		}
	/* Others' jobs end on the reaper: their done() takes their
	 * request's lock, and the caller holds this one's. */
	while (failed) {
		step *next = failed->next;
		failed->next = sb->orphans;
		sb->orphans = failed;
		failed = next;
	}
	pthread_cond_signal(&sb->wake);
	pthread_mutex_unlock(&sb->lock);
	return rc;
}

int mfs_seqb_live(mfs_seqb *sb)
{
	int n = 0;
	pthread_mutex_lock(&sb->lock);
	for (seq *s = sb->seqs; s; s = s->next)
		n++;
	pthread_mutex_unlock(&sb->lock);
	return n;
}

/* ---- the reaper, closing, freeing ---- */

static void *reaper(void *arg)
{
	mfs_seqb *sb = arg;
	pthread_mutex_lock(&sb->lock);
	while (!sb->quit) {
		uint64_t next = sweep(sb, mfs_now_ns());
		step *failed = sb->orphans;
		sb->orphans = NULL;
		if (!sb->closed)
			pump(sb, NULL, &failed);
		if (failed) {
			pthread_mutex_unlock(&sb->lock);
			finish(failed);   /* may free the version, and with it sb */
			pthread_mutex_lock(&sb->lock);
			continue;
		}
		if (next) {
			struct timespec ts = { (time_t)(next / 1000000000u), (long)(next % 1000000000u) };
			pthread_cond_timedwait(&sb->wake, &sb->lock, &ts);
		} else {
			pthread_cond_wait(&sb->wake, &sb->lock);
		}
	}
	bool frees = sb->reaper_frees;
	pthread_mutex_unlock(&sb->lock);
	if (frees)
		destroy(sb);
	return NULL;
}

void mfs_seqb_close(mfs_seqb *sb, const char *reason)
{
	step *failed = NULL;
	mfs_error err;
	pthread_mutex_lock(&sb->lock);
	if (!sb->closed) {
		sb->closed = true;
		snprintf(sb->why, sizeof(sb->why), "%s: %s", sb->label,
			 reason ? reason : "the version was unloaded");
	}
	mfs_fail(&err, ESHUTDOWN, "%s", sb->why);
	for (seq *s = sb->seqs; s; s = s->next)
		while (s->head) {
			step *st = s->head;
			s->head = st->next;
			fail_step(st, -ESHUTDOWN, &err, &failed);
		}
	for (seq *s = sb->seqs; s; s = s->next)
		s->tail = NULL;
	pthread_mutex_unlock(&sb->lock);
	finish(failed);
}

void mfs_seqb_free(mfs_seqb *sb)
{
	if (!sb)
		return;
	mfs_seqb_close(sb, NULL);
	pthread_mutex_lock(&sb->lock);
	while (sb->seqs)
		free_seq(sb, sb->seqs);
	sb->quit = true;
	bool self = pthread_equal(pthread_self(), sb->reaper);
	sb->reaper_frees = self;
	pthread_cond_signal(&sb->wake);
	pthread_mutex_unlock(&sb->lock);
	if (self) {
		pthread_detach(sb->reaper);   /* it frees sb on its way out */
		return;
	}
	pthread_join(sb->reaper, NULL);
	destroy(sb);
}
