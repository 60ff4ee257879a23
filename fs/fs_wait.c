/* fs_wait.c - reads that wait for a run without holding a FUSE thread.
 *
 * A waiting read is an fwait: it is on the request's waiter list (wake()
 * answers it from the compute thread), on fs->waits (for the deadline and
 * shutdown), and registered as the fuse_req_t's interrupt callback
 * (EINTR).  Exactly one of the three answers it: whoever wins
 * mfs_request_cancel_wait() (interrupt, deadline, shutdown) or is woken by
 * the request.  Before freeing an fwait the winner clears the interrupt
 * callback; libfuse serialises that with a callback in progress, so the
 * callback never sees freed memory.  The callback is registered before
 * the fwait joins the request's list, so a request that ends at once never
 * races with registration.
 */
#include <stdlib.h>
#include <string.h>

#include "fs_internal.h"
#include "log.h"
#include "metrics.h"

static void unlink_wait(mfs_fs *fs, fwait *w)
{
	pthread_mutex_lock(&fs->wlock);
	if (w->prev)
		w->prev->next = w->next;
	else if (fs->waits == w)
		fs->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->next = w->prev = NULL;
	pthread_mutex_unlock(&fs->wlock);
}

static void free_wait(fwait *w)
{
	if (w->req)
		mfs_request_put(w->req);
	if (w->gen)
		mfs_gen_put(w->gen);
	free(w);
}

static bool cancel_wait(fwait *w)
{
	return w->gen ? mfs_gen_cancel_wait(w->gen, &w->w) : mfs_request_cancel_wait(w->req, &w->w);
}

static void on_interrupt(fuse_req_t freq, void *data);

/* A generation's read woken by a new id or its end: answer, or wait on
 * for the next (a read past what a reader already has). */
static void wake_gen(fwait *w)
{
	for (;;) {
		if (fs_answer_gen(w->freq, w->h, w->size, w->off) == 0)
			break;
		w->w.wstate = 0;   /* new again */
		/* the deadline bounds the wait for each id, not the whole generation */
		pthread_mutex_lock(&w->fs->wlock);
		w->deadline = mfs_now_ns() + w->fs->conf.read_deadline_ns;
		pthread_mutex_unlock(&w->fs->wlock);
		fuse_req_interrupt_func(w->freq, on_interrupt, w);
		pthread_mutex_lock(&w->h->lock);
		size_t have = w->h->gtok;
		pthread_mutex_unlock(&w->h->lock);
		int rc = mfs_gen_wait(w->gen, have, &w->w);
		if (rc == 1)
			return;
		fuse_req_interrupt_func(w->freq, NULL, NULL);
		if (rc == -EINTR) {
			fuse_reply_err(w->freq, EINTR);
			break;
		}
	}
	unlink_wait(w->fs, w);
	free_wait(w);
}

/* The run ended: answer (compute thread, no lock held). */
static void wake(mfs_waiter *mw)
{
	fwait *w = (fwait *)mw;
	fuse_req_interrupt_func(w->freq, NULL, NULL);
	if (w->gen) {
		wake_gen(w);
		return;
	}
	unlink_wait(w->fs, w);
	if (w->h->kind == H_INFER)
		fs_answer_infer(w->fs, w->freq, w->h, w->size);
	else
		fs_answer_output(w->freq, w->h, w->size, w->off);
	free_wait(w);
}

/* The kernel interrupted the read (libfuse thread, req lock held). */
static void on_interrupt(fuse_req_t freq, void *data)
{
	fwait *w = data;
	if (!cancel_wait(w))
		return;   /* woken, or not yet registered: someone else answers */
	unlink_wait(w->fs, w);
	if (w->h->kind == H_INFER) {
		pthread_mutex_lock(&w->h->lock);
		w->h->inflight = false;
		pthread_mutex_unlock(&w->h->lock);
	}
	mfs_log_debug("request '%s': a waiting read was interrupted",
		      w->req ? mfs_request_name(w->req) : "(generate)");
	fuse_reply_err(freq, EINTR);
	free_wait(w);
}

/* Store a read: a new fwait on fs->waits with its interrupt callback,
 * then registered by reg (the request's or the generation's wait).
 * Returns as fs_wait_read. */
static int store(mfs_fs *fs, fuse_req_t freq, handle *h, mfs_request *req, mfs_gen *gen,
		 size_t have, size_t size, off_t off)
{
	fwait *w = calloc(1, sizeof(*w));
	if (!w) {
		fuse_reply_err(freq, ENOMEM);
		return 1;
	}
	w->w.wake = wake;
	w->fs = fs;
	w->freq = freq;
	w->h = h;
	if (req)
		mfs_request_get(req);
	if (gen)
		mfs_gen_get(gen);
	w->req = req;
	w->gen = gen;
	w->size = size;
	w->off = off;
	w->deadline = mfs_now_ns() + fs->conf.read_deadline_ns;
	pthread_mutex_lock(&fs->wlock);
	w->next = fs->waits;
	if (fs->waits)
		fs->waits->prev = w;
	fs->waits = w;
	pthread_mutex_unlock(&fs->wlock);

	fuse_req_interrupt_func(freq, on_interrupt, w);
	int rc = gen ? mfs_gen_wait(gen, have, &w->w) : mfs_request_wait(req, &w->w);
	if (rc == 1)
		return 1;
	/* Not registered: nobody else can answer it now. */
	fuse_req_interrupt_func(freq, NULL, NULL);
	unlink_wait(fs, w);
	free_wait(w);
	if (rc == -EINTR) {
		fuse_reply_err(freq, EINTR);
		return 1;
	}
	return 0;
}

int fs_wait_read(mfs_fs *fs, fuse_req_t freq, handle *h, mfs_request *req,
		 size_t size, off_t off)
{
	/* Ended already (a short run computes on the thread that submitted
	 * it): nothing to register, the caller answers. */
	mfs_req_state st = mfs_request_state(req);
	if (st != MFS_REQ_QUEUED && st != MFS_REQ_RUNNING)
		return 0;
	return store(fs, freq, h, req, NULL, 0, size, off);
}

int fs_wait_gen(mfs_fs *fs, fuse_req_t freq, handle *h, size_t size, off_t off)
{
	pthread_mutex_lock(&h->lock);
	mfs_gen *gen = h->gen;
	size_t have = h->gtok;
	pthread_mutex_unlock(&h->lock);
	return store(fs, freq, h, NULL, gen, have, size, off);
}

/* Take every stored read that should be answered now off the lists
 * (deadline passed, or all when all is set). */
static fwait *take(mfs_fs *fs, bool all, uint64_t now)
{
	fwait *mine = NULL;
	pthread_mutex_lock(&fs->wlock);
	for (fwait *w = fs->waits, *next; w; w = next) {
		next = w->next;
		if (!all && now < w->deadline)
			continue;
		if (!cancel_wait(w))
			continue;   /* being woken right now */
		if (w->prev)
			w->prev->next = w->next;
		else
			fs->waits = w->next;
		if (w->next)
			w->next->prev = w->prev;
		w->prev = NULL;
		w->next = mine;
		mine = w;
	}
	pthread_mutex_unlock(&fs->wlock);
	return mine;
}

static void answer_all(fwait *list, int err)
{
	while (list) {
		fwait *next = list->next;
		fuse_req_interrupt_func(list->freq, NULL, NULL);
		if (list->h->kind == H_INFER) {
			pthread_mutex_lock(&list->h->lock);
			list->h->inflight = false;
			pthread_mutex_unlock(&list->h->lock);
		}
		mfs_log_warn("model '%s' request '%s': a waiting read was answered %s",
			     list->h->model, list->req ? mfs_request_name(list->req) : list->h->name,
			     err == ETIMEDOUT ? "ETIMEDOUT (read deadline passed)" : "early (shutting down)");
		fuse_reply_err(list->freq, err);
		free_wait(list);
		list = next;
	}
}

void fs_expire_reads(mfs_fs *fs)
{
	answer_all(take(fs, false, mfs_now_ns()), ETIMEDOUT);
}

void mfs_fs_cancel_reads(mfs_fs *fs, int err)
{
	answer_all(take(fs, true, 0), err);
}
