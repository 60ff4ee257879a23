/* classify.h - Triton's classification extension: an output's K highest
 * scores as "score index label" (SPEC.md section 4, `OUTPUT.topK.txt`)
 * or as Triton's BYTES strings "score:index:label" (the infer file's
 * "classification" parameter, section 5).
 *
 * The last dim is the class dim; every other position (the batch item
 * of a batched output) is one row, classified on its own: the text has
 * one block of K lines per row, blocks separated by an empty line; the
 * strings have the output's shape with the class dim replaced by K.
 * K larger than the number of classes gives every class.  Highest score
 * first; equal scores by index; NaN last.  The label is left out
 * (text: two columns; strings: "score:index", as Triton does) when the
 * output has no label file, or the file's line for that index is empty
 * or missing.
 * Scores are printed as Triton does (C's %f). */
#ifndef MFS_CLASSIFY_H
#define MFS_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "labels.h"
#include "tensor.h"

/* Can output `name` of this type and rank (batch dim included) be
 * classified?  -EINVAL naming the output and why not (a scalar, a BOOL). */
int mfs_classify_check(const char *name, mfs_dtype dtype, int rank, mfs_error *err);

/* "OUTPUT.top5.txt": K from "top5" (positive, decimal, no sign, no
 * leading zero); 0 when s is not of that form. */
int64_t mfs_classify_parse_topk(const char *s, size_t len);

/* The text view; *buf malloc'd.  labels may be NULL. */
int mfs_classify_text(const mfs_tensor *t, const char *name, int64_t k,
		      const mfs_labels *labels, char **buf, size_t *len, mfs_error *err);

/* The KServe JSON tensor {"name","datatype":"BYTES","shape","data"}
 * (no trailing newline); *buf malloc'd. */
int mfs_classify_json(const mfs_tensor *t, const char *name, int64_t k,
		      const mfs_labels *labels, char **buf, size_t *len, mfs_error *err);

#endif
