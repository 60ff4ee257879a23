/* tmp_tree.h - a temporary directory tree for unit tests that need real
 * files (repositories, model files, caches): made under /tmp, filled with
 * directories and small files by relative path, removed at teardown.
 * Header-only; include after <cmocka.h>.  A helper that cannot do what it
 * is asked fails the test (fail_msg): a fixture that silently did not
 * appear would make the test prove nothing. */
#ifndef MFS_TMP_TREE_H
#define MFS_TMP_TREE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct tmp_tree {
	char root[256];
} tmp_tree;

/* mkdtemp("/tmp/<prefix>-XXXXXX"); 0 or -1 (for a cmocka setup). */
static inline int tmp_tree_make(tmp_tree *t, const char *prefix)
{
	snprintf(t->root, sizeof(t->root), "/tmp/%s-XXXXXX", prefix);
	return mkdtemp(t->root) ? 0 : -1;
}

/* Run a shell command built like printf; the test fails unless it exits 0. */
static inline void tmp_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tmp_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

/* Remove the whole tree; 0 or -1 (for a cmocka teardown). */
static inline int tmp_tree_remove(tmp_tree *t)
{
	char cmd[512];
	if (!t->root[0])
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	return system(cmd) == 0 ? 0 : -1;
}

static inline void tmp_path(const tmp_tree *t, const char *rel, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", t->root, rel);
}

static inline void tmp_mkdir(const tmp_tree *t, const char *rel)
{
	char path[512];
	tmp_path(t, rel, path, sizeof(path));
	if (mkdir(path, 0755) != 0)
		fail_msg("mkdir %s", path);
}

/* Create (or replace) a file holding text ("" for an empty file). */
static inline void tmp_put(const tmp_tree *t, const char *rel, const char *text)
{
	char path[512];
	tmp_path(t, rel, path, sizeof(path));
	FILE *f = fopen(path, "w");
	if (!f)
		fail_msg("create %s", path);
	fputs(text, f);
	if (fclose(f) != 0)
		fail_msg("write %s", path);
}

static inline void tmp_unlink(const tmp_tree *t, const char *rel)
{
	char path[512];
	tmp_path(t, rel, path, sizeof(path));
	unlink(path);
}

#endif
