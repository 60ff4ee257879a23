/* labels.h - an output's class labels: Triton's label_filename, a text
 * file in the model directory with one label per line (line i is class
 * i).  Read once when a version loads (model_load.c) and used by the
 * classification views (classify.h). */
#ifndef MFS_LABELS_H
#define MFS_LABELS_H

#include <stdint.h>

#include "error.h"

typedef struct mfs_labels {
	char **label;       /* label[i]: class i, without its line end */
	int64_t n;
	char *text;         /* the file's bytes, which label[] points into */
} mfs_labels;

/* Read path.  Each line is one label, "\n" or "\r\n" ended (the last
 * line's end is optional); an empty line is an empty label, so indices
 * stay the file's line numbers less one.  Labels must be UTF-8 (they are
 * written into JSON); at most 16 MiB.  Errors (-ENOENT, -EINVAL, -EFBIG)
 * name path and the line. */
int mfs_labels_load(const char *path, mfs_labels **out, mfs_error *err);

/* Class i's label, or NULL when the file has no line i. */
const char *mfs_labels_get(const mfs_labels *l, int64_t i);

void mfs_labels_free(mfs_labels *l);

#endif
