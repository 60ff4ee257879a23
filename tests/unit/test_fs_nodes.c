/* test_fs_nodes.c - the FUSE layer's parts that run without the kernel:
 * the node table (by ino and by name, growth, O(1) removal), the names
 * of a request directory's files, attributes and synthetic contents of
 * request files, the per-model request count, and expiry (idle requests
 * removed, busy ones kept, 100,000 of them within a bound).  The
 * operations themselves are covered by tests/e2e against a real mount. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs_internal.h"
#include "log.h"
#include "metrics.h"
#include "request.h"

#include "fake_version.h"

static mfs_fs *new_fs(uint64_t ttl_ns)
{
	mfs_fs *fs;
	mfs_error err;
	mfs_fs_conf conf = { .registry = NULL, .max_request_bytes = 1 << 20,
			     .request_ttl_ns = ttl_ns, .read_deadline_ns = 60000000000ull };
	assert_int_equal(mfs_fs_new(&conf, &fs, &err), 0);
	return fs;
}

/* Children on parent's list, counted by walking it (proves the list
 * stays whole after removals in its middle, head and tail). */
static size_t count_children(const node *parent)
{
	size_t n = 0;
	for (const node *c = parent->children; c; c = c->sibling)
		n++;
	return n;
}

static void test_node_table(void **state)
{
	(void)state;
	mfs_fs *fs = new_fs(0);
	assert_int_equal(fs->root->ino, FUSE_ROOT_ID);
	assert_ptr_equal(fs_node_find(fs, FUSE_ROOT_ID), fs->root);
	pthread_mutex_lock(&fs->lock);
	node *m = fs_node_add(fs, fs->root, "add_sub", N_MODEL, 0, "add_sub", 0, NULL, 0, 0);
	node *reqs = fs_node_add(fs, m, "requests", N_REQS, 0, "add_sub", 0, NULL, 0, 0);
	/* Enough nodes to grow both tables several times. */
	enum { N = 20000 };
	static fuse_ino_t inos[N];
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		node *c = fs_node_add(fs, reqs, name, N_RFILE, RF_STATUS, "add_sub", 0, NULL, 0, 0);
		assert_non_null(c);
		inos[i] = c->ino;
	}
	assert_true(fs->inos.n_buckets > 4096);
	assert_true(fs->names.n_buckets > 4096);
	for (int i = 0; i < N; i += 997) {
		snprintf(name, sizeof(name), "r%d", i);
		node *c = fs_node_child(fs, reqs, name);
		assert_non_null(c);
		assert_int_equal(c->ino, inos[i]);
		assert_ptr_equal(fs_node_find(fs, inos[i]), c);
	}
	/* The same name under another parent is another node. */
	assert_null(fs_node_child(fs, m, "r5"));
	assert_ptr_equal(fs_node_child(fs, fs->root, "add_sub"), m);
	assert_ptr_equal(fs_node_child(fs, m, "requests"), reqs);
	assert_int_equal(count_children(reqs), N);

	/* Kill the newest (list head), the oldest (tail) and one between;
	 * one of them is still looked up by the kernel, so it stays
	 * findable by ino (dead) until forgotten. */
	node *held = fs_node_find(fs, inos[N / 2]);
	held->nlookup = 1;
	fs_node_kill(fs, fs_node_find(fs, inos[N - 1]));
	fs_node_kill(fs, fs_node_find(fs, inos[0]));
	fs_node_kill(fs, held);
	assert_int_equal(count_children(reqs), N - 3);
	assert_null(fs_node_child(fs, reqs, "r0"));
	snprintf(name, sizeof(name), "r%d", N / 2);
	assert_null(fs_node_child(fs, reqs, name));
	assert_null(fs_node_find(fs, inos[0]));
	assert_ptr_equal(fs_node_find(fs, inos[N / 2]), held);
	assert_true(held->dead);
	assert_null(held->parent);
	/* A name can be made again at once: a new node, a new ino. */
	node *again = fs_node_add(fs, reqs, name, N_RFILE, RF_STATUS, "add_sub", 0, NULL, 0, 0);
	assert_ptr_equal(fs_node_child(fs, reqs, name), again);
	assert_true(again->ino != held->ino);
	fs_node_free(fs, held);   /* what forget does at nlookup 0 */
	assert_null(fs_node_find(fs, inos[N / 2]));

	/* Killing a directory kills what is below it. */
	fs_node_kill(fs, reqs);
	assert_null(fs_node_child(fs, m, "requests"));
	assert_null(fs_node_find(fs, inos[7]));
	assert_int_equal(fs->names.count, 1);   /* add_sub only */
	pthread_mutex_unlock(&fs->lock);
	mfs_fs_free(fs);
}

static void test_file_names(void **state)
{
	(void)state;
	assert_int_equal(fs_rfile_index("status"), RF_STATUS);
	assert_int_equal(fs_rfile_index("error"), RF_ERROR);
	assert_int_equal(fs_rfile_index("trace.json"), RF_TRACE);
	assert_int_equal(fs_rfile_index("OUTPUT0.npy"), -1);
	assert_int_equal(fs_mfile_index("infer"), MF_INFER);
	assert_int_equal(fs_mfile_index("config.json"), MF_CONFIG);
	assert_int_equal(fs_mfile_index("requests"), -1);
	assert_true(fs_is_dir(N_REQ));
	assert_true(fs_is_dir(N_REQS));
	assert_false(fs_is_dir(N_RFILE));
	assert_false(fs_is_dir(N_MFILE));
}

/* A model directory with requests/ and count request directories. */
static node *add_requests(mfs_fs *fs, fixture *f, int count, mfs_request **keep)
{
	mfs_error err;
	char name[32];
	pthread_mutex_lock(&fs->lock);
	node *m = fs_node_add(fs, fs->root, "add_sub", N_MODEL, 0, "add_sub", 0, NULL, 0, 0);
	node *reqs = fs_node_add(fs, m, "requests", N_REQS, 0, "add_sub", 0, NULL, 0, 0);
	pthread_mutex_unlock(&fs->lock);
	for (int i = 0; i < count; i++) {
		mfs_request *r;
		snprintf(name, sizeof(name), "job%d", i);
		assert_int_equal(mfs_request_new(f->v, name, 1 << 20, &r, &err), 0);
		pthread_mutex_lock(&fs->lock);
		assert_non_null(fs_node_add(fs, reqs, name, N_REQ, 0, "add_sub", 0, r, 0, 0));
		pthread_mutex_unlock(&fs->lock);
		if (keep && i == 0)
			*keep = r;
		else
			mfs_request_put(r);
	}
	return reqs;
}

static void test_request_files(void **state)
{
	fixture *f = *state;
	mfs_fs *fs = new_fs(300000000000ull);
	mfs_request *r = NULL;
	mfs_error err;
	node *reqs = add_requests(fs, f, 1, &r);
	node *req = fs_node_child(fs, reqs, "job0");
	assert_non_null(req);
	assert_ptr_equal(fs_node_model(req), reqs->parent);
	assert_int_equal(reqs->parent->live_reqs, 1);

	target t;
	struct stat st;
	assert_int_equal(fs_resolve(fs, req->ino, &t), 0);
	fs_fill_attr(fs, &t, &st);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);   /* its maker's alone */
	fs_target_release(&t);
	/* requests/ is like /tmp (filled directly: resolving it would ask
	 * the registry, which this test has none of) */
	fs_fill_target(reqs, &t);
	fs_fill_attr(fs, &t, &st);
	assert_int_equal(st.st_mode & 07777, 01777);
	fs_target_release(&t);
	/* mkdir records its caller; the request's files inherit the owner */
	req->uid = 65534;
	req->gid = 65533;

	/* status is generated from the request; an input's size is what
	 * was written. */
	assert_int_equal(mfs_request_commit_file(r, "INPUT0.txt", "1 2 3 4", 7, &err), 0);
	pthread_mutex_lock(&fs->lock);
	node *status = fs_node_add(fs, req, "status", N_RFILE, RF_STATUS, "add_sub", 0, r, 0, 0);
	node *input = fs_node_add(fs, req, "INPUT0.txt", N_RFILE, RF_INPUT, "add_sub", 0, r, 0, 0);
	pthread_mutex_unlock(&fs->lock);
	char *buf;
	size_t len;
	assert_int_equal(fs_resolve(fs, status->ino, &t), 0);
	assert_int_equal(fs_content(fs, &t, &buf, &len), 0);
	assert_string_equal(buf, "WAITING INPUT1\n");
	free(buf);
	fs_fill_attr(fs, &t, &st);
	assert_int_equal(st.st_size, strlen("WAITING INPUT1\n"));
	assert_int_equal(st.st_mode & 0777, 0400);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_gid, 65533);
	fs_target_release(&t);
	assert_int_equal(fs_resolve(fs, input->ino, &t), 0);
	fs_fill_attr(fs, &t, &st);
	assert_int_equal(st.st_size, 7);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_uid, 65534);
	fs_target_release(&t);

	/* rmdir: the request is marked removed and its nodes die with it;
	 * a stale ino resolves to ENOENT. */
	fuse_ino_t ino = status->ino;
	pthread_mutex_lock(&fs->lock);
	mfs_request_mark_removed(r);
	fs_node_kill(fs, req);
	pthread_mutex_unlock(&fs->lock);
	assert_int_equal(reqs->parent->live_reqs, 0);
	assert_int_equal(fs->n_reqs, 0);
	assert_int_equal(fs_resolve(fs, ino, &t), -ENOENT);
	mfs_request_put(r);
	mfs_fs_free(fs);
}

static void test_expiry_keeps_busy(void **state)
{
	fixture *f = *state;
	mfs_fs *fs = new_fs(0);   /* everything idle is past its TTL */
	mfs_request *busy = NULL;
	mfs_error err;
	f->delay_ms = 300;
	node *reqs = add_requests(fs, f, 5, &busy);
	assert_int_equal(fs->n_reqs, 5);
	/* job0 runs for 300 ms: busy, kept. */
	assert_int_equal(mfs_request_commit_file(busy, "INPUT0.txt", "1 2 3 4", 7, &err), 0);
	assert_int_equal(mfs_request_commit_file(busy, "INPUT1.txt", "1 2 3 4", 7, &err), 0);
	usleep(2000);
	mfs_fs_expire(fs);
	assert_int_equal(fs->n_reqs, 1);
	assert_int_equal(reqs->parent->live_reqs, 1);
	assert_ptr_equal(fs_node_child(fs, reqs, "job0")->req, busy);
	assert_null(fs_node_child(fs, reqs, "job1"));
	assert_false(mfs_request_removed(busy));
	while (mfs_request_busy(busy))
		usleep(10000);
	usleep(2000);
	mfs_fs_expire(fs);
	assert_int_equal(fs->n_reqs, 0);
	assert_true(mfs_request_removed(busy));
	mfs_request_put(busy);
	f->delay_ms = 0;
	mfs_fs_free(fs);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Issue 17: 100,000 request directories took 671 s to create and their
 * expiry stalled the mount.  Adding and expiring them here is linear;
 * the bound is generous (a loaded machine, ASan) but far below what a
 * quadratic walk takes. */
static void test_expiry_scale(void **state)
{
	fixture *f = *state;
	mfs_fs *fs = new_fs(0);
	mfs_log_set_level(MFS_LOG_WARN);   /* not 100,000 "removed" lines */
	double t0 = now_s();
	node *reqs = add_requests(fs, f, 100000, NULL);
	assert_int_equal(fs->n_reqs, 100000);
	assert_int_equal(reqs->parent->live_reqs, 100000);
	/* Every name found again (what mkdir's EEXIST check and lookup do):
	 * a walk of the child list here was the quadratic part. */
	pthread_mutex_lock(&fs->lock);
	for (int i = 0; i < 100000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "job%d", i);
		assert_non_null(fs_node_child(fs, reqs, name));
	}
	pthread_mutex_unlock(&fs->lock);
	double t1 = now_s();
	usleep(2000);
	mfs_fs_expire(fs);
	double t2 = now_s();
	print_message("100000 request directories: added and found in %.2f s, expired in %.2f s\n",
		      t1 - t0, t2 - t1);
	assert_int_equal(fs->n_reqs, 0);
	assert_int_equal(count_children(reqs), 0);
	assert_true(t2 - t0 < 30.0);
	mfs_log_set_level(MFS_LOG_INFO);
	mfs_fs_free(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_table),
		cmocka_unit_test(test_file_names),
		cmocka_unit_test_setup_teardown(test_request_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry_keeps_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry_scale, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
