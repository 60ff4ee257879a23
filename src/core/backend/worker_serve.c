/* worker_serve.c - see worker_serve.h.
 *
 * Everything here runs in the worker process; the library's code runs
 * nowhere else.  The worker ends when the daemon's end of the socket
 * closes, and frees what it holds before returning, so that a leak
 * checker run on the daemon's binary sees a clean exit.  A backend busy
 * in init or execute reads no socket: for a daemon that dies then (even
 * by SIGKILL), the kernel kills the worker (PR_SET_PDEATHSIG; the daemon
 * spawns every worker from a thread that lives as long as it does,
 * worker_spawn.h). */
#include "worker_serve.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "backend_lib.h"
#include "config.h"
#include "worker_proto.h"

typedef struct worker {
	int sock;
	mfs_shm shm;
	mfs_backend_lib *lib;
	const modelfs_backend_api *api;
	void *state;
	bool initialised;
	mfs_model_config cfg;
	modelfs_io_decl *in_decl, *out_decl;
	modelfs_parameter *params;
	mfs_tensor *outs;          /* n_outputs, filled by alloc_output */
} worker;

static int reply(worker *w, uint64_t seq, int status, uint64_t len, const char *text)
{
	mfs_wmsg m = { .op = MFS_WOP_REPLY, .status = status, .seq = seq, .len = len };
	mfs_error err;

	snprintf(m.text, sizeof(m.text), "%s", text ? text : "");
	return mfs_wire_send(w->sock, &m, -1, &err);
}

static void decls(const mfs_io_config *io, int n, modelfs_io_decl *out)
{
	for (int i = 0; i < n; i++) {
		out[i].name = io[i].name;
		out[i].dtype = io[i].dtype;
		out[i].rank = io[i].rank;
		for (int d = 0; d < io[i].rank && d < MODELFS_MAX_RANK; d++)
			out[i].dims[d] = io[i].dims[d];
	}
}

/* INIT: the JSON envelope, the library, the backend's init. */
static int do_init(worker *w, const mfs_wmsg *m, char *why, size_t why_size)
{
	json_error_t jerr;
	json_t *env = NULL, *cfg_json;
	char *cfg_text = NULL;
	const char *library, *model, *dir;
	mfs_error err;
	int rc = -1;

	if (mfs_shm_sync(&w->shm, m->len, &err)) {
		snprintf(why, why_size, "%s", err.msg);
		return -1;
	}
	env = json_loadb(w->shm.base, m->len, 0, &jerr);
	library = json_string_value(json_object_get(env, "library"));
	model = json_string_value(json_object_get(env, "model"));
	dir = json_string_value(json_object_get(env, "version_dir"));
	cfg_json = json_object_get(env, "config");
	if (!env || !library || !model || !dir || !cfg_json ||
	    !(cfg_text = json_dumps(cfg_json, JSON_COMPACT))) {
		snprintf(why, why_size, "the worker's start message is malformed");
		goto out;
	}
	if (mfs_config_parse_json(cfg_text, strlen(cfg_text), "config", &w->cfg, &err) ||
	    mfs_config_complete_declared(&w->cfg, model, &err)) {
		snprintf(why, why_size, "%s", err.msg);
		goto out;
	}
	if (mfs_backend_lib_open(library, &w->lib, &err)) {
		snprintf(why, why_size, "%s", err.msg);
		goto out;
	}
	w->api = mfs_backend_lib_api(w->lib);
	w->in_decl = calloc((size_t)w->cfg.n_inputs, sizeof(*w->in_decl));
	w->out_decl = calloc((size_t)w->cfg.n_outputs, sizeof(*w->out_decl));
	w->params = calloc((size_t)w->cfg.n_parameters + 1, sizeof(*w->params));
	w->outs = calloc((size_t)w->cfg.n_outputs, sizeof(*w->outs));
	if (!w->in_decl || !w->out_decl || !w->params || !w->outs) {
		snprintf(why, why_size, "out of memory");
		goto out;
	}
	decls(w->cfg.inputs, w->cfg.n_inputs, w->in_decl);
	decls(w->cfg.outputs, w->cfg.n_outputs, w->out_decl);
	for (int i = 0; i < w->cfg.n_parameters; i++) {
		w->params[i].key = w->cfg.parameters[i].key;
		w->params[i].value = w->cfg.parameters[i].value;
	}
	modelfs_backend_config bc = {
		.model_name = model,
		.version = (int64_t)json_integer_value(json_object_get(env, "version")),
		.version_dir = dir,
		.instance = (int32_t)json_integer_value(json_object_get(env, "instance")),
		.max_batch_size = w->cfg.max_batch_size,
		.inputs = w->in_decl, .n_inputs = w->cfg.n_inputs,
		.outputs = w->out_decl, .n_outputs = w->cfg.n_outputs,
		.parameters = w->params, .n_parameters = w->cfg.n_parameters,
	};
	why[0] = '\0';
	if (w->api->init(&bc, &w->state, why, why_size) != 0) {
		if (!why[0])
			snprintf(why, why_size, "init failed and gave no reason");
		goto out;
	}
	w->initialised = true;
	rc = 0;
out:
	free(cfg_text);
	json_decref(env);
	return rc;
}

static void *alloc_output(modelfs_batch *b, int32_t index, int32_t rank, const int64_t *shape)
{
	worker *w = b->host;
	mfs_tensor *t;
	mfs_shape s;
	mfs_error err;

	if (index < 0 || index >= b->n_outputs || rank < 0 || rank > MFS_MAX_RANK)
		return NULL;
	s.rank = rank;
	for (int d = 0; d < rank; d++) {
		if (shape[d] < 0)
			return NULL;
		s.dims[d] = shape[d];
	}
	t = &w->outs[index];
	mfs_tensor_release(t);
	if (mfs_tensor_alloc(t, (mfs_dtype)b->outputs[index].dtype, &s, &err))
		return NULL;
	modelfs_tensor *o = &b->outputs[index];
	o->rank = rank;
	memcpy(o->shape, s.dims, sizeof(int64_t) * (size_t)rank);
	o->data = t->data;
	o->byte_size = t->nbytes;
	/* A zero-element tensor has no storage, but it was given. */
	if (!o->data)
		o->data = o->shape;
	return o->data;
}

static void release_outputs(worker *w)
{
	for (int i = 0; i < w->cfg.n_outputs; i++)
		mfs_tensor_release(&w->outs[i]);
}

/* EXEC: the inputs from the shared memory, execute, the outputs back. */
static int do_exec(worker *w, const mfs_wmsg *m, uint64_t *len, char *why, size_t why_size)
{
	int n_in = w->cfg.n_inputs, n_out = w->cfg.n_outputs;
	mfs_tensor views[n_in > 0 ? n_in : 1];
	modelfs_tensor ins[n_in > 0 ? n_in : 1], outs[n_out > 0 ? n_out : 1];
	mfs_error err;
	int rc = -1;

	if (mfs_shm_sync(&w->shm, m->len, &err) ||
	    mfs_wire_get_tensors(&w->shm, m->len, views, n_in, 0, &err)) {
		snprintf(why, why_size, "%s", err.msg);
		return -1;
	}
	for (int i = 0; i < n_in; i++) {
		memset(&ins[i], 0, sizeof(ins[i]));
		ins[i].name = w->cfg.inputs[i].name;
		ins[i].dtype = views[i].dtype;
		ins[i].rank = views[i].shape.rank;
		memcpy(ins[i].shape, views[i].shape.dims, sizeof(int64_t) * (size_t)views[i].shape.rank);
		ins[i].data = views[i].data;
		ins[i].byte_size = views[i].nbytes;
	}
	for (int i = 0; i < n_out; i++) {
		memset(&outs[i], 0, sizeof(outs[i]));
		outs[i].name = w->cfg.outputs[i].name;
		outs[i].dtype = w->cfg.outputs[i].dtype;
	}
	modelfs_batch b = { .inputs = ins, .n_inputs = n_in, .outputs = outs, .n_outputs = n_out,
			    .alloc_output = alloc_output, .host = w };
	why[0] = '\0';
	if (w->api->execute(w->state, &b, why, why_size) != 0) {
		if (!why[0])
			snprintf(why, why_size, "execute failed and gave no reason");
		goto out;
	}
	for (int i = 0; i < n_out; i++) {
		if (!outs[i].data) {
			snprintf(why, why_size, "output '%s' was not given data (alloc_output was not called for it)",
				 outs[i].name);
			goto out;
		}
	}
	if (mfs_wire_put_tensors(&w->shm, w->outs, n_out, len, &err)) {
		snprintf(why, why_size, "%s", err.msg);
		goto out;
	}
	rc = 0;
out:
	release_outputs(w);
	return rc;
}

static void worker_release(worker *w)
{
	if (w->initialised && w->api->finalize)
		w->api->finalize(w->state);
	release_outputs(w);
	mfs_backend_lib_close(w->lib);
	mfs_config_release(&w->cfg);
	free(w->in_decl);
	free(w->out_decl);
	free(w->params);
	free(w->outs);
	mfs_shm_release(&w->shm);
}

/* Die with the daemon: the parent-death signal, then a check that the
 * parent is still the daemon (it may have died before the prctl, and
 * then no signal comes).  The socketpair's peer credentials name the
 * process that made it: the daemon. */
static int die_with_daemon(int sock)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
	    getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -1;
	return getppid() == cred.pid ? 0 : -1;
}

int mfs_worker_serve(int sock)
{
	worker w = { .sock = sock, .shm = { .fd = -1 } };
	char why[1024];
	int status = 0;

	if (die_with_daemon(sock) != 0) {
		close(sock);
		return 1;
	}

	mfs_config_init(&w.cfg);
	for (;;) {
		mfs_wmsg m;
		mfs_error err;
		int fd = -1;

		if (mfs_wire_recv(sock, &m, &fd, &err)) {
			status = err.code == EPIPE ? 0 : 1;
			break;
		}
		if (m.op == MFS_WOP_QUIT) {
			if (fd >= 0)
				close(fd);
			break;
		}
		if (m.op == MFS_WOP_INIT && !w.initialised && fd >= 0 && w.shm.fd < 0) {
			mfs_shm_adopt(&w.shm, fd, &err);
			int rc = do_init(&w, &m, why, sizeof(why));
			if (reply(&w, m.seq, rc, 0, rc ? why : NULL) || rc)
				break;
			continue;
		}
		if (fd >= 0)
			close(fd);
		if (m.op == MFS_WOP_EXEC && w.initialised) {
			uint64_t len = 0;
			int rc = do_exec(&w, &m, &len, why, sizeof(why));
			if (reply(&w, m.seq, rc, rc ? 0 : len, rc ? why : NULL))
				break;
			continue;
		}
		status = 1;   /* a message out of order: the daemon and we disagree */
		break;
	}
	worker_release(&w);
	close(sock);
	return status;
}
