/* fuse_fuzz_common.h - the FUSE layer driven without a kernel, for the
 * libFuzzer targets fuzz_fuse_requests.c and fuzz_fuse_infer.c (issue 17).
 *
 * libfuse 3.14's fuse_session_custom_io() lets a session reply through
 * our own writev instead of /dev/fuse; requests are raw FUSE messages
 * (fuse_kernel.h's layout, protocol 7.31) handed to
 * fuse_session_process_buf() one at a time, as the kernel would send
 * them.  Replies are parsed to learn the node ids and file handles the
 * daemon gave out, so later requests can use them.  A read that waits
 * for a run is answered from a compute thread: send() waits for its
 * reply, and interrupts it (FUSE_INTERRUPT) after 2 s as the kernel
 * would.  The served repository is examples/ with add_sub loaded (CPU),
 * shared by every input; each input gets a fresh mfs_fs and session.
 */
#ifndef FUSE_FUZZ_COMMON_H
#define FUSE_FUZZ_COMMON_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "log.h"
#include "membudget.h"
#include "registry.h"
#include "scheduler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* fuse_kernel.h (not installed by libfuse): the stable wire layout. */
enum {
	OP_LOOKUP = 1, OP_FORGET = 2, OP_GETATTR = 3, OP_SETATTR = 4,
	OP_READLINK = 5, OP_SYMLINK = 6,
	OP_MKDIR = 9, OP_UNLINK = 10, OP_RMDIR = 11, OP_RENAME = 12,
	OP_OPEN = 14, OP_READ = 15, OP_WRITE = 16, OP_RELEASE = 18,
	OP_FSYNC = 20, OP_FLUSH = 25, OP_INIT = 26, OP_OPENDIR = 27,
	OP_READDIR = 28, OP_RELEASEDIR = 29, OP_CREATE = 35, OP_INTERRUPT = 36,
};

struct in_header {
	uint32_t len, opcode;
	uint64_t unique, nodeid;
	uint32_t uid, gid, pid;
	uint16_t total_extlen, padding;
};

struct out_header {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

struct rw_in {           /* fuse_read_in and fuse_write_in */
	uint64_t fh, offset;
	uint32_t size, rw_flags;
	uint64_t lock_owner;
	uint32_t flags, padding;
};

#define ENTRY_OUT_SIZE 128   /* fuse_entry_out: nodeid first */
#define MAX_IDS 32

typedef struct fz {
	struct fuse_session *se;
	mfs_fs *fs;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t unique;
	/* The reply to the request last sent (under lock). */
	uint64_t want;
	bool got;
	int32_t error;
	uint64_t id;                  /* nodeid (entry) or fh (open) */
	uint64_t id2;                 /* CREATE: the fh after the entry */
	/* What the daemon gave out, used as the kernel would: a node until
	 * its lookups are forgotten, a handle until released. */
	uint64_t nodes[MAX_IDS], lookups[MAX_IDS], fhs[MAX_IDS];
	int n_nodes, n_fhs;
} fz;

static mfs_registry *fz_registry;
static mfs_sched *fz_sched;
static mfs_version *fz_version;      /* add_sub 1, for its queue */

/* The fz being driven: writev's userdata is the session's (the mfs_fs),
 * so the harness finds itself here (one input at a time). */
static fz *fz_current;

static ssize_t fz_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	fz *z = fz_current;
	uint8_t head[sizeof(struct out_header) + ENTRY_OUT_SIZE + 16];
	size_t total = 0, got = 0;
	(void)fd;
	(void)userdata;
	for (int i = 0; i < count; i++) {
		size_t n = iov[i].iov_len;
		if (got < sizeof(head)) {
			size_t k = n < sizeof(head) - got ? n : sizeof(head) - got;
			memcpy(head + got, iov[i].iov_base, k);
			got += k;
		}
		total += n;
	}
	if (!z || got < sizeof(struct out_header))
		return (ssize_t)total;
	struct out_header oh;
	memcpy(&oh, head, sizeof(oh));
	if (oh.len != total)
		abort();   /* libfuse or the daemon built a reply of the wrong length */
	pthread_mutex_lock(&z->lock);
	if (oh.unique == z->want) {
		z->got = true;
		z->error = oh.error;
		z->id = z->id2 = 0;
		if (got >= sizeof(oh) + 8)
			memcpy(&z->id, head + sizeof(oh), 8);
		if (got >= sizeof(oh) + ENTRY_OUT_SIZE + 8)
			memcpy(&z->id2, head + sizeof(oh) + ENTRY_OUT_SIZE, 8);
		pthread_cond_broadcast(&z->cond);
	}
	pthread_mutex_unlock(&z->lock);
	return (ssize_t)total;
}

static ssize_t fz_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)fd; (void)buf; (void)len; (void)userdata;
	errno = EAGAIN;   /* never called: requests go in by process_buf */
	return -1;
}

static void remember_fh(fz *z, uint64_t fh)
{
	if (fh && z->n_fhs < MAX_IDS)
		z->fhs[z->n_fhs++] = fh;
}

static void forget_fh(fz *z, uint64_t fh)
{
	for (int i = 0; i < z->n_fhs; i++)
		if (z->fhs[i] == fh) {
			z->fhs[i] = z->fhs[--z->n_fhs];
			return;
		}
}

/* An entry reply: one more lookup of the node (the kernel counts them;
 * a node past the table's size is forgotten at once, as a kernel
 * short of memory would). */
static void remember_node(fz *z, uint64_t node)
{
	for (int i = 0; i < z->n_nodes; i++)
		if (z->nodes[i] == node) {
			z->lookups[i]++;
			return;
		}
	if (z->n_nodes < MAX_IDS) {
		z->nodes[z->n_nodes] = node;
		z->lookups[z->n_nodes++] = 1;
	}
}

/* Send one request; returns the reply's error (0 or -errno), or 1 when
 * the request gets no reply (FORGET, INTERRUPT).  The id it names (entry
 * or open) is remembered. */
static int fz_send(fz *z, uint32_t opcode, uint64_t nodeid, const void *a,
		   size_t alen, const void *b, size_t blen)
{
	size_t total = sizeof(struct in_header) + alen + blen;
	uint8_t *buf = malloc(total);
	struct in_header h = {
		.len = (uint32_t)total, .opcode = opcode, .unique = ++z->unique,
		.nodeid = nodeid, .uid = 0, .gid = 0, .pid = (uint32_t)getpid(),
	};
	if (!buf)
		return -ENOMEM;
	memcpy(buf, &h, sizeof(h));
	if (alen)
		memcpy(buf + sizeof(h), a, alen);
	if (blen)
		memcpy(buf + sizeof(h) + alen, b, blen);
	pthread_mutex_lock(&z->lock);
	z->want = h.unique;
	z->got = false;
	pthread_mutex_unlock(&z->lock);
	struct fuse_buf fb = { .size = total, .mem = buf };
	fuse_session_process_buf(z->se, &fb);
	free(buf);
	if (opcode == OP_FORGET || opcode == OP_INTERRUPT)
		return 1;
	pthread_mutex_lock(&z->lock);
	for (int round = 0; !z->got && round < 2; round++) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 2;
		while (!z->got && pthread_cond_timedwait(&z->cond, &z->lock, &until) == 0)
			;
		if (!z->got && round == 0) {
			/* A read waiting for a run: interrupt it, as the
			 * kernel does when the reader gets a signal. */
			uint64_t target = h.unique;
			pthread_mutex_unlock(&z->lock);
			struct in_header ih = {
				.len = sizeof(ih) + 8, .opcode = OP_INTERRUPT,
				.unique = ++z->unique, .pid = (uint32_t)getpid(),
			};
			uint8_t ib[sizeof(ih) + 8];
			memcpy(ib, &ih, sizeof(ih));
			memcpy(ib + sizeof(ih), &target, 8);
			struct fuse_buf ifb = { .size = sizeof(ib), .mem = ib };
			fuse_session_process_buf(z->se, &ifb);
			pthread_mutex_lock(&z->lock);
		}
	}
	if (!z->got)
		abort();   /* a request the daemon never answered: a hang */
	int err = z->error;
	uint64_t id = z->id, id2 = z->id2;
	pthread_mutex_unlock(&z->lock);
	/* FUSE_FUZZ_TRACE=1: each request and its answer, to read a finding. */
	if (getenv("FUSE_FUZZ_TRACE"))
		fprintf(stderr, "fuse fuzz: op %u node %llu (%zu bytes) -> %d, id %llu\n", opcode,
			(unsigned long long)nodeid, total, err, (unsigned long long)id);
	if (err == 0) {
		if (opcode == OP_LOOKUP || opcode == OP_MKDIR || opcode == OP_CREATE ||
		    opcode == OP_SYMLINK)
			remember_node(z, id);
		if (opcode == OP_CREATE)
			remember_fh(z, id2);
		if (opcode == OP_OPEN || opcode == OP_OPENDIR)
			remember_fh(z, id);
	}
	return err;
}

static int fz_named(fz *z, uint32_t op, uint64_t parent, const void *arg,
		    size_t alen, const char *name)
{
	return fz_send(z, op, parent, arg, alen, name, strlen(name) + 1);
}

static int fz_lookup(fz *z, uint64_t parent, const char *name)
{
	return fz_named(z, OP_LOOKUP, parent, NULL, 0, name);
}

/* Open node (flags as open(2)); the fh, or 0. */
static uint64_t fz_open(fz *z, uint64_t node, uint32_t flags)
{
	uint32_t in[2] = { flags, 0 };
	if (fz_send(z, OP_OPEN, node, in, sizeof(in), NULL, 0) != 0)
		return 0;
	return z->fhs[z->n_fhs - 1];
}

static int fz_rw(fz *z, uint32_t op, uint64_t node, uint64_t fh, uint64_t off,
		 const void *data, uint32_t size)
{
	struct rw_in in = { .fh = fh, .offset = off, .size = size };
	return fz_send(z, op, node, &in, sizeof(in), op == OP_WRITE ? data : NULL,
		       op == OP_WRITE ? size : 0);
}

static int fz_release(fz *z, uint64_t node, uint64_t fh)
{
	uint64_t in[3] = { fh, 0, 0 };
	fz_send(z, OP_FLUSH, node, in, sizeof(in), NULL, 0);
	forget_fh(z, fh);
	return fz_send(z, OP_RELEASE, node, in, sizeof(in), NULL, 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	mfs_error err;
	char repo[PATH_MAX];
	(void)argc; (void)argv;
	mfs_log_set_level(MFS_LOG_ERROR);
	mfs_membudget_init((uint64_t)512 << 20);
	if (!realpath("examples", repo)) {
		fprintf(stderr, "fuse fuzz: run from the top of the tree (examples/ missing)\n");
		exit(1);
	}
	mfs_registry_conf rc = { .repository = repo, .engine_threads = 1,
				 .route = { .device = MFS_DEVICE_CPU } };
	if (mfs_sched_new(1, &fz_sched, &err) < 0)
		goto fail;
	rc.sched = fz_sched;
	if (mfs_registry_new(&rc, &fz_registry, &err) < 0 ||
	    mfs_registry_load_version(fz_registry, "add_sub", 1, &err) < 0 ||
	    mfs_registry_get(fz_registry, "add_sub", 1, &fz_version, &err) < 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "fuse fuzz: %s\n", err.msg);
	exit(1);
}

/* A fresh filesystem and session, INIT sent; 0 or -1. */
static int fz_start(fz *z)
{
	mfs_error err;
	int sv[2];
	memset(z, 0, sizeof(*z));
	pthread_mutex_init(&z->lock, NULL);
	pthread_cond_init(&z->cond, NULL);
	mfs_fs_conf fc = {
		.registry = fz_registry,
		.max_request_bytes = 1 << 20,
		.max_json_bytes = 1 << 20,
		.request_ttl_ns = 300000000000ull,
		.read_deadline_ns = 60000000000ull,
	};
	if (mfs_fs_new(&fc, &z->fs, &err) < 0)
		return -1;
	char *argv[] = { "fuzz", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	z->se = fuse_session_new(&args, mfs_fs_ops(), sizeof(struct fuse_lowlevel_ops), z->fs);
	fuse_opt_free_args(&args);   /* the parser copied argv into it */
	static const struct fuse_custom_io io = { .writev = fz_writev, .read = fz_read };
	if (!z->se || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return -1;
	close(sv[1]);
	if (fuse_session_custom_io(z->se, &io, sv[0]) != 0)
		return -1;
	mfs_fs_set_session(z->fs, z->se);
	fz_current = z;
	uint32_t init[16] = { 7, 31, 1 << 20, 0 };
	if (fz_send(z, OP_INIT, 0, init, sizeof(init), NULL, 0) != 0)
		return -1;
	return 0;
}

/* Close what is open, wait for runs in flight, free. */
static void fz_stop(fz *z)
{
	while (z->n_fhs)
		fz_release(z, 1, z->fhs[0]);
	while (mfs_sched_queue_depth(fz_version->queue, false) > 0)
		usleep(1000);
	mfs_fs_cancel_reads(z->fs, EINTR);
	if (z->se)
		fuse_session_destroy(z->se);
	mfs_fs_free(z->fs);
	fz_current = NULL;
	pthread_mutex_destroy(&z->lock);
	pthread_cond_destroy(&z->cond);
}

/* Bytes of the input, consumed from the front. */
typedef struct fz_in {
	const uint8_t *p;
	size_t n;
} fz_in;

static unsigned fz_byte(fz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

/* Up to max bytes, their count given by the next two bytes. */
static size_t fz_chunk(fz_in *in, const uint8_t **out, size_t max)
{
	size_t want = fz_byte(in) | (size_t)fz_byte(in) << 8;
	if (want > max)
		want %= max + 1;
	if (want > in->n)
		want = in->n;
	*out = in->p;
	in->p += want;
	in->n -= want;
	return want;
}

#endif
