/* repo.c - scanning a Triton-style model repository (see repo.h).
 * Only names and file types are looked at; loading is model_load.c's. */
#include "repo.h"

#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool mfs_repo_version_name(const char *name, int64_t *version)
{
	int64_t v = 0;

	if (!name || name[0] < '1' || name[0] > '9')
		return false;
	for (const char *p = name; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		if (v > (INT64_MAX - (*p - '0')) / 10)
			return false;
		v = v * 10 + (*p - '0');
	}
	if (version)
		*version = v;
	return true;
}

bool mfs_repo_model_name_ok(const char *name)
{
	size_t n = 0;

	if (!name || name[0] == '.' || name[0] == '\0')
		return false;
	for (const char *p = name; *p; p++, n++) {
		char c = *p;
		if (n >= 64)
			return false;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static bool is_type(const char *path, mode_t type)
{
	struct stat st;

	return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == type;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void mfs_repo_entry_release(mfs_repo_entry *e)
{
	if (!e)
		return;
	free(e->name);
	free(e->dir);
	free(e->config_path);
	free(e->versions);
	memset(e, 0, sizeof(*e));
}

void mfs_repo_entries_free(mfs_repo_entry *entries, int n)
{
	for (int i = 0; entries && i < n; i++)
		mfs_repo_entry_release(&entries[i]);
	free(entries);
}

int mfs_repo_scan_model(const char *root, const char *name,
			mfs_repo_entry *out, mfs_error *err)
{
	DIR *d;
	struct dirent *de;
	int cap = 0;
	char *path = NULL;

	memset(out, 0, sizeof(*out));
	if (!mfs_repo_model_name_ok(name))
		return mfs_fail(err, ENOENT, "'%s' is not a model name", name);
	out->name = strdup(name);
	if (!out->name || asprintf(&out->dir, "%s/%s", root, name) < 0) {
		out->dir = NULL;
		mfs_repo_entry_release(out);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	d = opendir(out->dir);
	if (!d) {
		int e = errno;
		mfs_repo_entry_release(out);
		if (e == ENOTDIR)
			e = ENOENT;
		return mfs_fail(err, e, "model '%s': %s/%s: %s", name, root, name,
				strerror(e));
	}
	/* config.pbtxt wins over config.json: it is what Triton reads. */
	static const char *const configs[] = { "config.pbtxt", "config.json" };
	for (size_t i = 0; i < 2 && !out->config_path; i++) {
		if (asprintf(&path, "%s/%s", out->dir, configs[i]) < 0)
			goto nomem;
		if (is_type(path, S_IFREG))
			out->config_path = path;
		else
			free(path);
		path = NULL;
	}
	while ((de = readdir(d)) != NULL) {
		int64_t v;

		if (!mfs_repo_version_name(de->d_name, &v))
			continue;
		if (asprintf(&path, "%s/%s", out->dir, de->d_name) < 0)
			goto nomem;
		if (!is_type(path, S_IFDIR)) {
			free(path);
			continue;
		}
		free(path);
		path = NULL;
		if (out->n_versions == cap) {
			int64_t *grown;
			cap = cap ? 2 * cap : 8;
			grown = realloc(out->versions, (size_t)cap * sizeof(*grown));
			if (!grown)
				goto nomem;
			out->versions = grown;
		}
		out->versions[out->n_versions++] = v;
	}
	closedir(d);
	if (out->n_versions > 1)
		qsort(out->versions, (size_t)out->n_versions, sizeof(int64_t), cmp_i64);
	return 0;
nomem:
	closedir(d);
	mfs_repo_entry_release(out);
	return mfs_fail(err, ENOMEM, "out of memory");
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const mfs_repo_entry *)a)->name,
		      ((const mfs_repo_entry *)b)->name);
}

int mfs_repo_scan(const char *root, mfs_repo_entry **out, int *n,
		  mfs_error *err)
{
	DIR *d;
	struct dirent *de;
	mfs_repo_entry *list = NULL;
	int count = 0, cap = 0, rc;

	*out = NULL;
	*n = 0;
	d = opendir(root);
	if (!d)
		return mfs_fail(err, errno, "repository %s: %s", root, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		mfs_repo_entry e;
		char *path;

		if (!mfs_repo_model_name_ok(de->d_name))
			continue;     /* dot-directories and odd names */
		if (asprintf(&path, "%s/%s", root, de->d_name) < 0) {
			rc = mfs_fail(err, ENOMEM, "out of memory");
			goto fail;
		}
		if (!is_type(path, S_IFDIR)) {
			free(path);
			continue;
		}
		free(path);
		rc = mfs_repo_scan_model(root, de->d_name, &e, err);
		if (rc == -ENOMEM)
			goto fail;
		if (rc) {
			/* Removed while we looked, or unreadable: one model's
			 * trouble does not hide the others. */
			if (rc != -ENOENT)
				mfs_log_warn("%s", err ? err->msg : "repository scan");
			continue;
		}
		if (count == cap) {
			mfs_repo_entry *grown;
			cap = cap ? 2 * cap : 8;
			grown = realloc(list, (size_t)cap * sizeof(*grown));
			if (!grown) {
				mfs_repo_entry_release(&e);
				rc = mfs_fail(err, ENOMEM, "out of memory");
				goto fail;
			}
			list = grown;
		}
		list[count++] = e;
	}
	closedir(d);
	if (count > 1)
		qsort(list, (size_t)count, sizeof(*list), cmp_entry);
	*out = list;
	*n = count;
	return 0;
fail:
	closedir(d);
	mfs_repo_entries_free(list, count);
	return rc;
}

void mfs_repo_note_unversioned(const mfs_repo_entry *e)
{
	if (e->config_path)
		mfs_log_warn("model '%s': no version directories, nothing to serve", e->name);
	else
		mfs_log_debug("'%s': no config and no version directories: not a model", e->name);
}
