/* test_cred_open.c - mfs_open_as and mfs_read_file_as: as root, the open
 * happens with the client's fsuid, fsgid and groups (directory search and
 * group permission included) and the thread is root again afterwards; as
 * another user (a forked child that gave up root), only the daemon's own
 * user or the file's owner may read.  Needs root; skipped otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cred_open.h"
#include "tmp_tree.h"

#define NOBODY 65534

static tmp_tree tree;

static void put(const char *name, mode_t mode, uid_t uid, gid_t gid, char *path, size_t size)
{
	tmp_put(&tree, name, "1 2 3\n");
	tmp_path(&tree, name, path, size);
	assert_int_equal(chown(path, uid, gid), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
	(void)state;
	return tmp_tree_make(&tree, "mfs-cred") == 0 ? chmod(tree.root, 0755) : -1;
}

static int teardown(void **state)
{
	(void)state;
	return tmp_tree_remove(&tree);
}

/* The calling thread's filesystem identity is root's again. */
static void assert_root_again(void)
{
	assert_int_equal((int)syscall(SYS_setfsuid, (uid_t)-1), 0);
	assert_int_equal((int)syscall(SYS_setfsgid, (gid_t)-1), 0);
	gid_t g[64];
	int n = (int)syscall(SYS_getgroups, 64, g);
	for (int i = 0; i < n; i++)
		assert_int_not_equal(g[i], NOBODY);
}

static void test_root_opens_as_the_client(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char secret[300], open_in_private[300], group[300];
	mfs_error err;
	mfs_cred nobody = { NOBODY, NOBODY, NULL, 0 };
	put("secret", 0600, 0, 0, secret, sizeof(secret));
	put("group", 0640, 0, 4321, group, sizeof(group));
	tmp_mkdir(&tree, "private");
	tmp_sh("chmod 700 '%s/private'", tree.root);
	put("private/open", 0644, 0, 0, open_in_private, sizeof(open_in_private));

	assert_int_equal(mfs_open_as(&nobody, secret, &err), -EACCES);
	assert_non_null(strstr(err.msg, "opened as uid 65534"));
	assert_root_again();
	/* Readable itself, but behind a directory nobody may search. */
	assert_int_equal(mfs_open_as(&nobody, open_in_private, &err), -EACCES);
	assert_root_again();
	/* Group 4321's file: only with that group among the client's. */
	assert_int_equal(mfs_open_as(&nobody, group, &err), -EACCES);
	gid_t groups[] = { 100, 4321 };
	mfs_cred member = { NOBODY, NOBODY, groups, 2 };
	char *buf;
	size_t len;
	assert_int_equal(mfs_read_file_as(&member, group, 1024, &buf, &len, &err), 0);
	assert_int_equal(len, 6);
	assert_memory_equal(buf, "1 2 3\n", 6);
	free(buf);
	assert_root_again();
	/* A root client reads as root. */
	mfs_cred root = { 0, 0, NULL, 0 };
	assert_int_equal(mfs_read_file_as(&root, secret, 1024, &buf, &len, &err), 0);
	free(buf);
	/* Not a regular file; too large; missing. */
	assert_int_equal(mfs_read_file_as(&member, "/dev/zero", 1024, &buf, &len, &err), -EINVAL);
	assert_int_equal(mfs_read_file_as(&member, group, 3, &buf, &len, &err), -EFBIG);
	assert_int_equal(mfs_read_file_as(&member, "/nonexistent/x", 3, &buf, &len, &err), -ENOENT);
	assert_null(buf);
	assert_root_again();
}

/* What the daemon has open, its own /proc, and links that lead there,
 * are refused for every client, root included: the kernel would let any
 * thread of the daemon through (a descriptor link skips the checks of
 * the path the file was opened by; /proc/self is the daemon's process). */
static void test_no_daemon_descriptor_or_proc(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char secret[300], fdlink[64], devfd[64], chain[300], loop[300], path[300];
	mfs_error err;
	mfs_cred nobody = { NOBODY, NOBODY, NULL, 0 }, root = { 0, 0, NULL, 0 };
	tmp_mkdir(&tree, "vault");
	tmp_sh("chmod 700 '%s/vault'", tree.root);
	put("vault/secret", 0644, 0, 0, secret, sizeof(secret));
	int held = open(secret, O_RDONLY);   /* the daemon holds it open */
	assert_true(held >= 0);
	snprintf(fdlink, sizeof(fdlink), "/proc/self/fd/%d", held);
	snprintf(devfd, sizeof(devfd), "/dev/fd/%d", held);
	tmp_path(&tree, "chain", chain, sizeof(chain));
	tmp_path(&tree, "chain2", path, sizeof(path));
	assert_int_equal(symlink(fdlink, path), 0);       /* chain -> chain2 -> /proc/self/fd/N */
	assert_int_equal(symlink(path, chain), 0);
	const char *const through_fd[] = { fdlink, devfd, chain, "/dev/stdin", "/proc/self/cwd/x" };
	for (size_t i = 0; i < sizeof(through_fd) / sizeof(through_fd[0]); i++) {
		assert_int_equal(mfs_open_as(&nobody, through_fd[i], &err), -EACCES);
		assert_non_null(strstr(err.msg, "descriptor link"));
		assert_root_again();
		assert_int_equal(mfs_open_as(&root, through_fd[i], &err), -EACCES);
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)getpid());
	const char *const in_proc[] = { "/proc/self/status", "/proc/thread-self/status", path };
	for (size_t i = 0; i < sizeof(in_proc) / sizeof(in_proc[0]); i++) {
		assert_int_equal(mfs_open_as(&nobody, in_proc[i], &err), -EACCES);
		assert_non_null(strstr(err.msg, "in /proc"));
		assert_root_again();
		assert_int_equal(mfs_open_as(&root, in_proc[i], &err), -EACCES);
	}
	/* A true loop of links is still ELOOP. */
	tmp_path(&tree, "loop", loop, sizeof(loop));
	assert_int_equal(symlink(loop, loop), 0);
	assert_int_equal(mfs_open_as(&nobody, loop, &err), -ELOOP);
	/* A chain of ordinary links to a file the client may read is read. */
	char plain[300];
	put("plain", 0644, 0, 0, plain, sizeof(plain));
	tmp_path(&tree, "to-plain", path, sizeof(path));
	assert_int_equal(symlink(plain, path), 0);
	int fd = mfs_open_as(&nobody, path, &err);
	assert_true(fd >= 0);
	close(fd);
	close(held);
}

/* In a child that became uid 1000: the non-root rule. */
static int child_not_root(const char *own, const char *clients, const char *theirs)
{
	mfs_error err;
	if (setgroups(0, NULL) < 0 || setgid(1000) < 0 || setuid(1000) < 0)
		return 10;
	mfs_cred same = { 1000, 1000, NULL, 0 }, other = { 1001, 1001, NULL, 0 };
	int fd = mfs_open_as(&same, own, &err);     /* the daemon's own user: as itself */
	if (fd < 0)
		return 11;
	close(fd);
	if (mfs_open_as(&other, own, &err) != -EACCES || !strstr(err.msg, "does not own the file"))
		return 12;                          /* readable to the daemon, not the client's */
	if ((fd = mfs_open_as(&other, clients, &err)) < 0)
		return 13;                          /* the client's own file */
	close(fd);
	if (mfs_open_as(&other, theirs, &err) != -EACCES)
		return 14;                          /* the daemon cannot read it at all */
	return 0;
}

static void test_not_root_reads_only_the_owners_files(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char own[300], clients[300], theirs[300];
	put("own", 0644, 1000, 1000, own, sizeof(own));
	put("clients", 0644, 1001, 1001, clients, sizeof(clients));
	put("theirs", 0600, 1001, 1001, theirs, sizeof(theirs));
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_not_root(own, clients, theirs));
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_opens_as_the_client),
		cmocka_unit_test(test_not_root_reads_only_the_owners_files),
		cmocka_unit_test(test_no_daemon_descriptor_or_proc),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
