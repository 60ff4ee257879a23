/* test_fuse_loop.c - the FUSE loop serves a real mount with several
 * threads at once, and stops when asked (from any thread, also while
 * every thread is blocked in the device read) or when the mount goes
 * away from outside.  Needs /dev/fuse (root), as the end-to-end tests. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmp_tree.h"
#include "fuse_loop.h"

/* A file system of one empty directory whose getattr takes 50 ms: four
 * stats at once finish in about one sleep only if four threads serve. */
static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = S_IFDIR | 0755;
	st.st_nlink = 2;
	struct timespec d = { 0, 50000000 };
	nanosleep(&d, NULL);
	fuse_reply_attr(req, &st, 0);
}

static const struct fuse_lowlevel_ops ops = { .getattr = op_getattr };

typedef struct fixture {
	tmp_tree t;
	char mnt[300];
	struct fuse_session *se;
	mfs_fuse_loop *loop;
	bool stuck;                  /* a join timed out: leave the threads */
} fixture;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int setup(void **state)
{
	*state = NULL;
	if (access("/dev/fuse", R_OK | W_OK) != 0)
		return 0;   /* the tests skip */
	fixture *f = calloc(1, sizeof(*f));
	if (!f || tmp_tree_make(&f->t, "fuse-loop") < 0)
		return -1;
	snprintf(f->mnt, sizeof(f->mnt), "%s/mnt", f->t.root);
	mkdir(f->mnt, 0755);
	char *argv[] = { "test_fuse_loop", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	f->se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	fuse_opt_free_args(&args);
	if (!f->se || fuse_session_mount(f->se, f->mnt) != 0)
		return -1;
	f->loop = mfs_fuse_loop_start(f->se, 4);
	if (!f->loop)
		return -1;
	*state = f;
	return 0;
}

static void *join_loop(void *arg)
{
	mfs_fuse_loop_join(arg);
	return NULL;
}

/* Join the loop within 2 s; false (and f->stuck) if it did not end. */
static bool timed_join(fixture *f)
{
	pthread_t th;
	if (pthread_create(&th, NULL, join_loop, f->loop) != 0)
		return false;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 2;
	if (pthread_timedjoin_np(th, NULL, &ts) != 0)
		f->stuck = true;
	return !f->stuck;
}

/* join, failing the test (not hanging it) after 2 s */
static void join_within(fixture *f)
{
	if (!timed_join(f))
		fail_msg("the loop did not end within 2 s");
}

static int teardown(void **state)
{
	fixture *f = *state;
	if (!f)
		return 0;
	if (!f->stuck) {
		mfs_fuse_loop_stop(f->loop);
		timed_join(f);
	}
	if (f->stuck) {
		/* threads left blocked: take the mount away under them */
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "umount -l %s", f->mnt);
		if (system(cmd) != 0)
			return -1;
		return -1;
	}
	mfs_fuse_loop_free(f->loop);
	fuse_session_unmount(f->se);
	fuse_session_destroy(f->se);
	rmdir(f->mnt);
	rmdir(f->t.root);
	free(f);
	return 0;
}

static void *stat_mount(void *arg)
{
	struct stat st;
	return (void *)(intptr_t)(stat((const char *)arg, &st) == 0 && S_ISDIR(st.st_mode));
}

static void test_serves_in_parallel(void **state)
{
	fixture *f = *state;
	if (!f)
		skip();
	pthread_t th[4];
	double t0 = now_s();
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, stat_mount, f->mnt), 0);
	for (int i = 0; i < 4; i++) {
		void *ok;
		pthread_join(th[i], &ok);
		assert_true((intptr_t)ok);
	}
	/* one after another would take 200 ms */
	assert_true(now_s() - t0 < 0.17);
}

static void *stop_later(void *arg)
{
	struct timespec d = { 0, 20000000 };
	nanosleep(&d, NULL);
	mfs_fuse_loop_stop(arg);
	return NULL;
}

/* Every thread is blocked reading the device: stop from another thread
 * ends them all at once (not at the next request). */
static void test_stop_wakes_blocked_threads(void **state)
{
	fixture *f = *state;
	if (!f)
		skip();
	pthread_t th;
	double t0 = now_s();
	assert_int_equal(pthread_create(&th, NULL, stop_later, f->loop), 0);
	join_within(f);
	pthread_join(th, NULL);
	assert_true(now_s() - t0 < 1.0);
	/* stopping again does nothing more */
	mfs_fuse_loop_stop(f->loop);
}

/* Unmounted from outside: the device read ends (ENODEV), and so does
 * the loop. */
static void test_ends_when_unmounted(void **state)
{
	fixture *f = *state;
	if (!f)
		skip();
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "fusermount3 -u %s 2>/dev/null || umount %s", f->mnt, f->mnt);
	double t0 = now_s();
	assert_int_equal(system(cmd), 0);
	join_within(f);
	assert_true(now_s() - t0 < 2.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_serves_in_parallel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_wakes_blocked_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ends_when_unmounted, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
