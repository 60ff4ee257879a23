/* request_files.c - the request directory as files (request.h): what
 * a name is (find_file), the room a file may still take, an input's
 * bytes and symlink read back, the listing, and an input removed.
 * Decoding and committing are request.c's; the outputs are
 * request_output.c's.
 */
#include "request.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "request_internal.h"

static int output_index(const mfs_request *r, const char *name)
{
	for (int i = 0; i < r->n_out; i++)
		if (strcmp(r->cfg->outputs[i].name, name) == 0)
			return i;
	return -1;
}

static input_slot *slot_by_file(mfs_request *r, const char *filename)
{
	for (int i = 0; i < r->n_in; i++)
		if (r->in[i].present && r->in[i].filename && strcmp(r->in[i].filename, filename) == 0)
			return &r->in[i];
	return NULL;
}

int mfs_request_remove_input(mfs_request *r, const char *filename)
{
	pthread_mutex_lock(&r->lock);
	input_slot *s = slot_by_file(r, filename);
	int i = req_find_staged(r, filename);
	if (s)
		req_clear_slot(s);
	else if (i >= 0)
		req_drop_staged(r, i);
	req_recharge_locked(r);
	pthread_mutex_unlock(&r->lock);
	return s || i >= 0 ? 0 : -ENOENT;
}

/* Bytes held by the committed input or temporary named filename, or -1
 * (lock held). */
static int64_t file_size_locked(mfs_request *r, const char *filename)
{
	input_slot *s = slot_by_file(r, filename);
	int i = s ? -1 : req_find_staged(r, filename);
	return s ? (int64_t)s->blob_len : i >= 0 ? (int64_t)r->staged[i].len : -1;
}

mfs_file_kind mfs_request_find_file(mfs_request *r, const char *filename,
				    mfs_file_info *info)
{
	size_t nl;
	char base[256];
	int f = mfs_format_split_filename(filename, &nl);
	memset(info, 0, sizeof(*info));
	if (f >= 0 && nl < sizeof(base)) {
		memcpy(base, filename, nl);
		base[nl] = '\0';
		/* Config names are fixed for the request's life: no lock. */
		if ((info->idx = output_index(r, base)) >= 0) {
			info->fmt = (mfs_format)f;
			return info->kind = MFS_FILE_OUTPUT;
		}
		/* "OUTPUT.top5.txt": the classification view. */
		char *dot = strrchr(base, '.');
		int64_t k = f == MFS_FMT_TXT && dot ? mfs_classify_parse_topk(dot + 1, strlen(dot + 1)) : 0;
		if (k > 0 && k <= MFS_VIEW_TOPK_MAX) {
			*dot = '\0';
			if ((info->idx = output_index(r, base)) >= 0) {
				info->fmt = MFS_VIEW_TOPK(k);
				return info->kind = MFS_FILE_OUTPUT;
			}
		}
	}
	pthread_mutex_lock(&r->lock);
	info->size = file_size_locked(r, filename);
	input_slot *s = slot_by_file(r, filename);
	info->link = s && s->link;
	pthread_mutex_unlock(&r->lock);
	if (info->size >= 0)
		info->kind = MFS_FILE_INPUT;
	else if (filename[0] == '.' || (f >= 0 && nl < sizeof(base) && req_input_index(r, base) >= 0))
		info->kind = MFS_FILE_INPUT_NAME;
	return info->kind;
}

uint64_t mfs_request_room(mfs_request *r, const char *filename)
{
	pthread_mutex_lock(&r->lock);
	int64_t mine = file_size_locked(r, filename);
	uint64_t others = req_input_bytes_locked(r) - (mine > 0 ? (uint64_t)mine : 0);
	uint64_t room = others < r->max_bytes ? r->max_bytes - others : 0;
	pthread_mutex_unlock(&r->lock);
	return room;
}

int mfs_request_input_file(mfs_request *r, const char *filename,
			   char **buf, size_t *len)
{
	int rc = 0;
	pthread_mutex_lock(&r->lock);
	input_slot *s = slot_by_file(r, filename);
	int i = req_find_staged(r, filename);
	const char *src = s ? s->blob : i >= 0 ? r->staged[i].blob : NULL;
	size_t n = s ? s->blob_len : i >= 0 ? r->staged[i].len : 0;
	if (!s && i < 0) {
		rc = -ENOENT;
	} else if (!(*buf = malloc(n ? n : 1))) {
		rc = -ENOMEM;
	} else {
		if (n)
			memcpy(*buf, src, n);
		*len = n;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

char *mfs_request_input_link(mfs_request *r, const char *filename)
{
	pthread_mutex_lock(&r->lock);
	char *link = NULL;
	for (int i = 0; i < r->n_in && !link; i++)
		if (r->in[i].present && r->in[i].link && strcmp(r->in[i].filename, filename) == 0)
			link = strdup(r->in[i].link);
	pthread_mutex_unlock(&r->lock);
	return link;
}

int mfs_request_list(mfs_request *r, char ***names, int *n)
{
	pthread_mutex_lock(&r->lock);
	char **v = calloc((size_t)(r->n_in + r->n_out + r->n_staged) + 2, sizeof(char *));
	int k = 0;
	bool oom = !v;
	for (int i = 0; !oom && i < r->n_staged; i++)
		oom = !(v[k++] = strdup(r->staged[i].name));
	for (int i = 0; !oom && i < r->n_in; i++)
		if (r->in[i].present && r->in[i].filename)
			oom = !(v[k++] = strdup(r->in[i].filename));
	if (r->generation) {
		/* a generator's request: its streamed ids, not the model's outputs */
		oom = oom || !(v[k++] = strdup("output_ids.txt"));
	} else if (r->have_fmt) {
		const char *ext = mfs_format_ext(r->list_fmt);
		for (int i = 0; !oom && i < r->n_out; i++) {
			size_t len = strlen(r->cfg->outputs[i].name) + strlen(ext) + 2;
			if ((v[k] = malloc(len)))
				snprintf(v[k++], len, "%s.%s", r->cfg->outputs[i].name, ext);
			else
				oom = true;
		}
	}
	pthread_mutex_unlock(&r->lock);
	if (oom) {
		for (int i = 0; v && i < k; i++)
			free(v[i]);
		free(v);
		return -ENOMEM;
	}
	*names = v;
	*n = k;
	return 0;
}
