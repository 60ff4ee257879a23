/* test_reload.c - hot reload's pieces without FUSE: tree signatures, the
 * watcher (inotify and polling) and the reloader's reconcile (versions
 * added, replaced, corrupt, removed; bad config; version_policy; draining
 * leaves bound requests running) and its loader thread.  Uses a copy of
 * examples/add_sub in a temporary directory (run from the top of the
 * tree, or with MODELFS_EXAMPLES set). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "registry.h"
#include "reloader.h"
#include "request.h"
#include "watcher.h"
#include "tmp_tree.h"

typedef struct fixture {
	tmp_tree tmp;
	char repo[512];
	char examples[4096];
	mfs_sched *sched;
	mfs_registry *reg;
	int calls;                 /* atomic */
	char last[256];
} fixture;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	const char *ex = getenv("MODELFS_EXAMPLES");
	if (!realpath(ex ? ex : "examples", f->examples))
		fail_msg("examples/ not found: run from the top of the tree");
	assert_int_equal(tmp_tree_make(&f->tmp, "mfs-reload"), 0);
	snprintf(f->repo, sizeof(f->repo), "%s/repo", f->tmp.root);
	tmp_sh("mkdir -p %s && cp -r %s/add_sub %s/ && rm -rf %s/add_sub/samples", f->repo, f->examples,
	       f->repo, f->repo);
	mfs_error err;
	assert_int_equal(mfs_sched_new(1, &f->sched, &err), 0);
	mfs_registry_conf rc = { .repository = f->repo, .sched = f->sched };
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
	assert_int_equal(tmp_tree_remove(&f->tmp), 0);
	free(f);
	return 0;
}

static void on_change(void *ctx, const char *model)
{
	fixture *f = ctx;
	snprintf(f->last, sizeof(f->last), "%s", model ? model : "*");
	__atomic_add_fetch(&f->calls, 1, __ATOMIC_ACQ_REL);
}

static bool wait_calls(fixture *f, int n, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (__atomic_load_n(&f->calls, __ATOMIC_ACQUIRE) >= n)
			return true;
		sleep_ms(10);
	}
	return false;
}

static int64_t current(fixture *f)
{
	mfs_model_info mi;
	if (mfs_registry_model_snapshot(f->reg, "add_sub", &mi) < 0)
		return -1;
	int64_t c = mi.current;
	mfs_model_info_release(&mi);
	return c;
}

static int n_served(fixture *f)
{
	mfs_model_info mi;
	if (mfs_registry_model_snapshot(f->reg, "add_sub", &mi) < 0)
		return -1;
	int n = 0;
	for (int i = 0; i < mi.n_versions; i++)
		n += mi.versions[i].served;
	mfs_model_info_release(&mi);
	return n;
}

static void test_tree_signature(void **state)
{
	fixture *f = *state;
	char p[600];
	snprintf(p, sizeof(p), "%s/add_sub", f->repo);
	unsigned long long a = mfs_tree_signature(p);
	assert_true(a != 0);
	assert_true(mfs_tree_signature(p) == a);
	tmp_sh("echo x > %s/1/extra", p);
	unsigned long long b = mfs_tree_signature(p);
	assert_true(b != a);
	tmp_sh("rm %s/1/extra", p);
	assert_true(mfs_tree_signature(p) != b);
	snprintf(p, sizeof(p), "%s/nosuch", f->repo);
	assert_true(mfs_tree_signature(p) == 0);
}

static void test_watcher_inotify(void **state)
{
	fixture *f = *state;
	mfs_error err;
	mfs_watcher *w, *w2;
	mfs_watcher_conf wc = { .repository = f->repo, .changed = on_change, .ctx = f };
	assert_int_equal(mfs_watcher_start(&wc, &w, &err), 0);
	/* libinotifytools is process-global: one inotify watcher at a time */
	assert_int_equal(mfs_watcher_start(&wc, &w2, &err), -EBUSY);
	tmp_sh("echo x > %s/add_sub/1/extra", f->repo);
	assert_true(wait_calls(f, 1, 3000));
	assert_string_equal(f->last, "add_sub");
	/* a new directory is watched at once: a file in it is seen */
	tmp_sh("mkdir %s/add_sub/2", f->repo);
	assert_true(wait_calls(f, 2, 3000));
	sleep_ms(100);
	int n = __atomic_load_n(&f->calls, __ATOMIC_ACQUIRE);
	tmp_sh("echo y > %s/add_sub/2/model.onnx", f->repo);
	assert_true(wait_calls(f, n + 1, 3000));
	/* a new model directory */
	tmp_sh("mkdir %s/other", f->repo);
	assert_true(wait_calls(f, n + 2, 3000));
	sleep_ms(100);
	assert_string_equal(f->last, "other");
	mfs_watcher_stop(w);
	/* and another may start once it is stopped */
	assert_int_equal(mfs_watcher_start(&wc, &w, &err), 0);
	mfs_watcher_stop(w);
}

static void test_watcher_poll(void **state)
{
	fixture *f = *state;
	mfs_error err;
	mfs_watcher *w;
	mfs_watcher_conf wc = { .repository = f->repo, .poll_secs = 1, .changed = on_change, .ctx = f };
	assert_int_equal(mfs_watcher_start(&wc, &w, &err), 0);
	sleep_ms(1200);
	assert_int_equal(__atomic_load_n(&f->calls, __ATOMIC_ACQUIRE), 0);   /* nothing changed */
	tmp_sh("echo x > %s/add_sub/1/extra", f->repo);
	assert_true(wait_calls(f, 1, 2500));
	assert_string_equal(f->last, "add_sub");
	tmp_sh("rm -rf %s/add_sub", f->repo);     /* removal is a change too */
	assert_true(wait_calls(f, 2, 2500));
	mfs_watcher_stop(w);
}

static void test_reconcile(void **state)
{
	fixture *f = *state;
	mfs_error err;
	mfs_reloader *rl;
	mfs_reloader_conf c = { .repository = f->repo, .registry = f->reg, .poll_secs = 60, .quiet_ms = 10 };
	assert_int_equal(mfs_reloader_new(&c, &rl, &err), 0);
	/* listed at once, LOADING, before anything loads */
	mfs_model_info mi;
	assert_int_equal(mfs_registry_model_snapshot(f->reg, "add_sub", &mi), 0);
	assert_int_equal(mi.n_versions, 1);
	assert_int_equal(mi.versions[0].state, MFS_VS_LOADING);
	mfs_model_info_release(&mi);
	assert_false(mfs_reloader_first_load_done(rl));
	assert_int_equal(mfs_reloader_load_first(rl), 0);
	assert_true(mfs_reloader_first_load_done(rl));
	assert_int_equal(mfs_reloader_wait_first_load(rl), 0);
	assert_int_equal(current(f), 1);
	/* unchanged: nothing is loaded again */
	mfs_version *v1;
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 0, &v1, &err), 0);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 0);
	assert_false(mfs_version_unloaded(v1));
	/* a request bound to v1 before v2 arrives */
	mfs_request *r;
	assert_int_equal(mfs_request_new(v1, "held", 1 << 20, &r, &err), 0);
	mfs_version_put(v1);

	tmp_sh("cp -r %s/add_sub/1 %s/add_sub/2", f->repo, f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 0);
	assert_int_equal(current(f), 2);
	assert_int_equal(n_served(f), 1);          /* latest{1}: v1 left */
	assert_true(mfs_version_unloaded(mfs_request_version(r)));
	/* draining: the bound request still runs on v1 */
	const char *in = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16";
	assert_int_equal(mfs_request_commit_file(r, "INPUT0.txt", in, strlen(in), &err), 0);
	assert_int_equal(mfs_request_commit_file(r, "INPUT1.txt", in, strlen(in), &err), 0);
	for (int i = 0; i < 200 && mfs_request_state(r) != MFS_REQ_DONE &&
			mfs_request_state(r) != MFS_REQ_FAILED; i++)
		sleep_ms(10);
	assert_int_equal(mfs_request_state(r), MFS_REQ_DONE);
	mfs_request_put(r);

	/* a corrupt v3: v2 keeps serving, v3 shows the reason */
	tmp_sh("mkdir %s/add_sub/3 && echo garbage > %s/add_sub/3/model.onnx", f->repo, f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 1);
	assert_int_equal(current(f), 2);
	assert_int_equal(mfs_registry_model_snapshot(f->reg, "add_sub", &mi), 0);
	assert_int_equal(mi.versions[mi.n_versions - 1].version, 3);
	assert_int_equal(mi.versions[mi.n_versions - 1].state, MFS_VS_UNAVAILABLE);
	assert_non_null(strstr(mi.versions[mi.n_versions - 1].reason, "model.onnx"));
	mfs_model_info_release(&mi);
	/* no change: no retry */
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 0);
	/* fixed: v3 serves, v2 leaves */
	tmp_sh("cp %s/add_sub/1/model.onnx %s/add_sub/3/model.onnx", f->repo, f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 0);
	assert_int_equal(current(f), 3);
	assert_int_equal(n_served(f), 1);
	/* the serving version's file broken: its earlier load keeps serving,
	 * READY with the reason */
	tmp_sh("echo garbage > %s/add_sub/3/model.onnx", f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 1);
	assert_int_equal(current(f), 3);
	assert_int_equal(mfs_registry_model_snapshot(f->reg, "add_sub", &mi), 0);
	assert_int_equal(mi.versions[mi.n_versions - 1].state, MFS_VS_READY);
	assert_non_null(strstr(mi.versions[mi.n_versions - 1].reason, "still serving"));
	mfs_model_info_release(&mi);
	tmp_sh("cp %s/add_sub/1/model.onnx %s/add_sub/3/model.onnx", f->repo, f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 0);

	/* a bad config keeps what serves; fixing it reloads */
	tmp_sh("cp %s/add_sub/config.pbtxt %s/good && echo 'bogus_field: 1' >> %s/add_sub/config.pbtxt",
	       f->repo, f->tmp.root, f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 1);
	assert_int_equal(current(f), 3);
	assert_int_equal(mfs_registry_model_snapshot(f->reg, "add_sub", &mi), 0);
	assert_non_null(strstr(mi.versions[mi.n_versions - 1].reason, "bogus_field"));
	assert_int_equal(mi.versions[mi.n_versions - 1].state, MFS_VS_READY);
	/* said once, by the registry */
	const char *said = strstr(mi.versions[mi.n_versions - 1].reason,
				  "still serving the previous load: config not loaded: ");
	assert_non_null(said);
	assert_null(strstr(said + 1, "still serving"));
	mfs_model_info_release(&mi);
	/* the fix: version_policy all serves every version */
	tmp_sh("cp %s/good %s/add_sub/config.pbtxt && echo 'version_policy { all { } }' >> %s/add_sub/config.pbtxt",
	       f->tmp.root, f->repo, f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 0);
	assert_int_equal(n_served(f), 3);
	assert_int_equal(current(f), 3);
	/* specific: only version 1 */
	tmp_sh("cp %s/good %s/add_sub/config.pbtxt && echo 'version_policy { specific { versions: [1] } }' >> %s/add_sub/config.pbtxt",
	       f->tmp.root, f->repo, f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 0);
	assert_int_equal(n_served(f), 1);
	assert_int_equal(current(f), 1);
	/* a removed version directory leaves */
	tmp_sh("cp %s/good %s/add_sub/config.pbtxt && echo 'version_policy { latest { num_versions: 2 } }' >> %s/add_sub/config.pbtxt",
	       f->tmp.root, f->repo, f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 0);
	assert_int_equal(n_served(f), 2);
	tmp_sh("rm -rf %s/add_sub/3", f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 0);
	assert_int_equal(n_served(f), 2);          /* 1 and 2 */
	assert_int_equal(current(f), 2);
	/* the model removed */
	tmp_sh("rm -rf %s/add_sub", f->repo);
	assert_int_equal(mfs_reloader_reconcile(rl, "add_sub"), 0);
	assert_int_equal(mfs_registry_get(f->reg, "add_sub", 0, &v1, &err), -ENOENT);
	mfs_reloader_free(rl);
}

/* A config that is bad from the start: nothing serves, so the version
 * is UNAVAILABLE and the reason does not claim a previous one. */
static void test_bad_config_first_load(void **state)
{
	fixture *f = *state;
	mfs_error err;
	mfs_reloader *rl;
	mfs_model_info mi;
	mfs_reloader_conf c = { .repository = f->repo, .registry = f->reg, .poll_secs = 60, .quiet_ms = 10 };

	tmp_sh("echo 'bogus_field: 1' >> %s/add_sub/config.pbtxt", f->repo);
	assert_int_equal(mfs_reloader_new(&c, &rl, &err), 0);
	assert_int_equal(mfs_reloader_load_first(rl), 1);   /* one failure */
	assert_int_equal(mfs_registry_model_snapshot(f->reg, "add_sub", &mi), 0);
	assert_int_equal(mi.current, 0);
	assert_int_equal(mi.n_versions, 1);
	assert_int_equal(mi.versions[0].state, MFS_VS_UNAVAILABLE);
	assert_non_null(strstr(mi.versions[0].reason, "config not loaded: "));
	assert_non_null(strstr(mi.versions[0].reason, "bogus_field"));
	assert_null(strstr(mi.versions[0].reason, "still serving"));
	assert_null(strstr(mi.versions[0].reason, "previous"));
	mfs_model_info_release(&mi);
	mfs_reloader_free(rl);
}

static void test_loader_thread(void **state)
{
	fixture *f = *state;
	mfs_error err;
	mfs_reloader *rl;
	mfs_reloader_conf c = { .repository = f->repo, .registry = f->reg, .quiet_ms = 50,
				.changed = on_change, .ctx = f };
	assert_int_equal(mfs_reloader_new(&c, &rl, &err), 0);
	assert_int_equal(mfs_reloader_run(rl, &err), 0);
	/* the loader thread's first load: the model loaded, then a change */
	assert_int_equal(mfs_reloader_wait_first_load(rl), 0);
	assert_int_equal(__atomic_load_n(&f->calls, __ATOMIC_ACQUIRE), 1);
	assert_int_equal(current(f), 1);
	tmp_sh("cp -r %s/add_sub/1 %s/add_sub/2", f->repo, f->repo);
	assert_true(wait_calls(f, 2, 5000));
	assert_string_equal(f->last, "add_sub");
	assert_int_equal(current(f), 2);
	mfs_registry_counts n;
	mfs_registry_get_counts(f->reg, &n);
	assert_int_equal(n.loads, 2);
	assert_int_equal(n.unloads, 1);
	assert_int_equal(n.load_failures, 0);
	mfs_reloader_free(rl);
}

/* "STATE reason" of model's newest entry; "" when not listed. */
static void state_of(fixture *f, const char *model, char *buf, size_t size)
{
	mfs_model_info mi;
	buf[0] = '\0';
	if (mfs_registry_model_snapshot(f->reg, model, &mi) < 0)
		return;
	if (mi.n_versions > 0)
		snprintf(buf, size, "%s %s", mfs_vstate_name(mi.versions[mi.n_versions - 1].state),
			 mi.versions[mi.n_versions - 1].reason);
	mfs_model_info_release(&mi);
}

/* Explicit model control (model_control.h): only what is named loads;
 * the rest is listed "not loaded"; control commands load and unload on
 * the loader thread and return when done; nothing is watched. */
static void test_explicit_control(void **state)
{
	fixture *f = *state;
	mfs_error err;
	mfs_reloader *rl;
	char st[512];
	tmp_sh("cp -r %s/add_sub %s/other", f->repo, f->repo);
	tmp_sh("sed -i 's/name: \"add_sub\"/name: \"other\"/' %s/other/config.pbtxt", f->repo);
	char *named[] = { "nosuch" };
	mfs_reloader_conf c = { .repository = f->repo, .registry = f->reg, .quiet_ms = 20,
				.mode = MFS_CONTROL_EXPLICIT, .load_models = named, .n_load_models = 1,
				.changed = on_change, .ctx = f };
	mfs_error_clear(&err);
	assert_int_equal(mfs_reloader_new(&c, &rl, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "--load-model=nosuch"));
	named[0] = "other";
	assert_int_equal(mfs_reloader_new(&c, &rl, &err), 0);
	state_of(f, "other", st, sizeof(st));
	assert_string_equal(st, "LOADING ");
	assert_int_equal(mfs_reloader_load_first(rl), 0);
	state_of(f, "other", st, sizeof(st));
	assert_true(strncmp(st, "READY", 5) == 0);
	state_of(f, "add_sub", st, sizeof(st));
	assert_string_equal(st, "UNAVAILABLE not loaded");
	assert_int_equal(current(f), 0);
	/* before the loader runs, a command is refused rather than left waiting */
	assert_int_equal(mfs_reloader_control(rl, "add_sub", MFS_CONTROL_LOAD, &err), -ESHUTDOWN);
	assert_int_equal(mfs_reloader_run(rl, &err), 0);

	assert_int_equal(mfs_reloader_control(rl, "add_sub", MFS_CONTROL_LOAD, &err), 0);
	assert_int_equal(current(f), 1);   /* READY when the call returns */
	assert_string_equal(f->last, "add_sub");
	assert_int_equal(mfs_reloader_control(rl, "add_sub", MFS_CONTROL_UNLOAD, &err), 0);
	state_of(f, "add_sub", st, sizeof(st));
	assert_string_equal(st, "UNAVAILABLE unloaded");
	assert_int_equal(current(f), 0);
	assert_int_equal(mfs_reloader_control(rl, "add_sub", MFS_CONTROL_UNLOAD, &err), 0);
	assert_int_equal(mfs_reloader_control(rl, "nosuch", MFS_CONTROL_LOAD, &err), -ENOENT);
	assert_int_equal(mfs_reloader_control(rl, "nosuch", MFS_CONTROL_UNLOAD, &err), -ENOENT);
	/* a load that fails: EIO, the reason in the state, not loaded */
	tmp_sh("echo garbage > %s/add_sub/1/model.onnx", f->repo);
	assert_int_equal(mfs_reloader_control(rl, "add_sub", MFS_CONTROL_LOAD, &err), -EIO);
	state_of(f, "add_sub", st, sizeof(st));
	assert_true(strncmp(st, "UNAVAILABLE", 11) == 0);
	assert_non_null(strstr(st, "model.onnx"));
	/* nothing watched: a new model is not seen until a rescan */
	tmp_sh("cp -r %s/other %s/third", f->repo, f->repo);
	sleep_ms(200);
	state_of(f, "third", st, sizeof(st));
	assert_string_equal(st, "");
	mfs_reloader_rescan(rl);
	for (int i = 0; i < 300 && !st[0]; i++) {
		sleep_ms(10);
		state_of(f, "third", st, sizeof(st));
	}
	assert_string_equal(st, "UNAVAILABLE not loaded");
	mfs_reloader_stop(rl);
	assert_int_equal(mfs_reloader_control(rl, "other", MFS_CONTROL_UNLOAD, &err), -ESHUTDOWN);
	mfs_reloader_free(rl);
}

/* The first load on several threads (load_pool.h): every model is
 * listed LOADING first, then each loads once; the per-model records
 * made side by side are all kept (a second look reloads nothing). */
static void test_first_load_parallel(void **state)
{
	fixture *f = *state;
	mfs_error err;
	mfs_reloader *rl;
	for (int i = 1; i <= 5; i++)
		tmp_sh("cp -r %s/add_sub %s/m%d && sed -i 's/name: \"add_sub\"/name: \"m%d\"/' %s/m%d/config.pbtxt",
		       f->repo, f->repo, i, i, f->repo, i);
	tmp_sh("mkdir -p %s/broken/1 && echo garbage > %s/broken/1/model.onnx", f->repo, f->repo);
	mfs_reloader_conf c = { .repository = f->repo, .registry = f->reg, .poll_secs = 60,
				.quiet_ms = 10, .load_threads = 3 };
	assert_int_equal(mfs_reloader_new(&c, &rl, &err), 0);
	mfs_model_info *ms;
	int n;
	assert_int_equal(mfs_registry_snapshot(f->reg, &ms, &n), 0);
	assert_int_equal(n, 7);
	for (int i = 0; i < n; i++)
		assert_int_equal(ms[i].versions[0].state, MFS_VS_LOADING);
	mfs_registry_snapshot_free(ms, n);
	assert_int_equal(mfs_reloader_load_first(rl), 1);
	assert_int_equal(mfs_reloader_load_first(rl), 1);   /* once */
	assert_int_equal(mfs_registry_snapshot(f->reg, &ms, &n), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(ms[i].versions[0].state,
				 strcmp(ms[i].name, "broken") == 0 ? MFS_VS_UNAVAILABLE : MFS_VS_READY);
	mfs_registry_snapshot_free(ms, n);
	mfs_registry_counts before, after;
	mfs_registry_get_counts(f->reg, &before);
	assert_int_equal(before.loads, 6);
	for (int i = 1; i <= 5; i++) {
		char name[8];
		snprintf(name, sizeof(name), "m%d", i);
		assert_int_equal(mfs_reloader_reconcile(rl, name), 0);
	}
	mfs_registry_get_counts(f->reg, &after);
	assert_int_equal(after.loads, before.loads);
	mfs_reloader_free(rl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tree_signature, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watcher_inotify, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watcher_poll, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconcile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_config_first_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loader_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_explicit_control, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_load_parallel, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
