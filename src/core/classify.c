/* classify.c - see classify.h. */
#include "classify.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

int mfs_classify_check(const char *name, mfs_dtype dtype, int rank, mfs_error *err)
{
	if (rank < 1)
		return mfs_fail(err, EINVAL, "output '%s' is a scalar: there are no classes to rank",
				name);
	if (dtype == MFS_DT_BOOL || !mfs_dtype_size(dtype))
		return mfs_fail(err, EINVAL, "output '%s' is %s: only numeric scores can be ranked",
				name, mfs_dtype_config_name(dtype) ? mfs_dtype_config_name(dtype) : "not numeric");
	return 0;
}

int64_t mfs_classify_parse_topk(const char *s, size_t len)
{
	int64_t k = 0;

	if (len < 4 || memcmp(s, "top", 3) != 0 || s[3] == '0')
		return 0;
	for (size_t i = 3; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' || k > (INT64_MAX - 9) / 10)
			return 0;
		k = k * 10 + (s[i] - '0');
	}
	return k;
}

typedef struct row_ctx {
	const mfs_tensor *t;
	int64_t base;          /* the row's first element */
} row_ctx;

static double score(const row_ctx *c, int64_t i)
{
	return mfs_dtype_load_f64(c->t->dtype, c->t->data, c->base + i);
}

/* Highest first, then lower index; NaN after every number. */
static int by_score(const void *a, const void *b, void *arg)
{
	const row_ctx *c = arg;
	int64_t ia = *(const int64_t *)a, ib = *(const int64_t *)b;
	double sa = score(c, ia), sb = score(c, ib);
	int na = isnan(sa), nb = isnan(sb);

	if (na != nb)
		return na - nb;
	if (!na && sa != sb)
		return sa > sb ? -1 : 1;
	return ia < ib ? -1 : ia > ib;
}

/* Each row's top k, one callback per entry (row, rank, index, score). */
typedef int (*emit_fn)(void *arg, int64_t row, int64_t rank, int64_t index, double score);

static int rank_rows(const mfs_tensor *t, const char *name, int64_t k, int64_t *rows_out,
		     int64_t *kept_out, emit_fn emit, void *arg, mfs_error *err)
{
	int64_t classes, rows, numel = mfs_shape_numel(&t->shape);
	int64_t *idx;
	int rc;

	if ((rc = mfs_classify_check(name, t->dtype, t->shape.rank, err)))
		return rc;
	if (k < 1)
		return mfs_fail(err, EINVAL, "output '%s': top-K needs K of at least 1", name);
	classes = t->shape.dims[t->shape.rank - 1];
	if (classes < 1)
		return mfs_fail(err, EINVAL, "output '%s' has no classes (its last dim is 0)", name);
	rows = numel / classes;
	if (k > classes)
		k = classes;
	*rows_out = rows;
	*kept_out = k;
	idx = malloc((size_t)classes * sizeof(*idx));
	if (!idx)
		return mfs_fail(err, ENOMEM, "out of memory");
	for (int64_t r = 0; r < rows && rc == 0; r++) {
		row_ctx c = { .t = t, .base = r * classes };
		for (int64_t i = 0; i < classes; i++)
			idx[i] = i;
		qsort_r(idx, (size_t)classes, sizeof(*idx), by_score, &c);
		for (int64_t j = 0; j < k && rc == 0; j++)
			rc = emit(arg, r, j, idx[j], score(&c, idx[j]));
	}
	free(idx);
	if (rc)
		return mfs_fail(err, ENOMEM, "out of memory");
	return 0;
}

/* ---- text ---- */

typedef struct text_out {
	FILE *f;
	const mfs_labels *labels;
} text_out;

static int emit_line(void *arg, int64_t row, int64_t rank, int64_t index, double s)
{
	text_out *o = arg;
	const char *label = mfs_labels_get(o->labels, index);

	if (label && !*label)
		label = NULL;
	if (rank == 0 && row > 0 && fputc('\n', o->f) == EOF)
		return -1;
	return fprintf(o->f, "%f %lld%s%s\n", s, (long long)index, label ? " " : "",
		       label ? label : "") < 0 ? -1 : 0;
}

int mfs_classify_text(const mfs_tensor *t, const char *name, int64_t k,
		      const mfs_labels *labels, char **buf, size_t *len, mfs_error *err)
{
	text_out o = { .labels = labels };
	int64_t rows, kept;
	int rc;

	*buf = NULL;
	*len = 0;
	o.f = open_memstream(buf, len);
	if (!o.f)
		return mfs_fail(err, ENOMEM, "out of memory");
	rc = rank_rows(t, name, k, &rows, &kept, emit_line, &o, err);
	if (fclose(o.f) != 0 && rc == 0)
		rc = mfs_fail(err, ENOMEM, "out of memory");
	if (rc) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return rc;
}

/* ---- Triton's strings ---- */

static int emit_string(void *arg, int64_t row, int64_t rank, int64_t index, double s)
{
	json_t *data = ((json_t **)arg)[0];
	const mfs_labels *labels = ((const mfs_labels **)arg)[1];
	const char *label = mfs_labels_get(labels, index);
	char *str;

	if (label && !*label)
		label = NULL;
	int rc;

	(void)row;
	(void)rank;
	if (asprintf(&str, "%f:%lld%s%s", s, (long long)index, label ? ":" : "",
		     label ? label : "") < 0)
		return -1;
	rc = json_array_append_new(data, json_string(str));
	free(str);
	return rc;
}

int mfs_classify_json(const mfs_tensor *t, const char *name, int64_t k,
		      const mfs_labels *labels, char **buf, size_t *len, mfs_error *err)
{
	json_t *data = json_array(), *shape = json_array(), *o = NULL;
	void *arg[2] = { data, (void *)labels };
	int64_t rows, kept;
	int rc;

	*buf = NULL;
	if (!data || !shape) {
		rc = mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	rc = rank_rows(t, name, k, &rows, &kept, emit_string, arg, err);
	if (rc)
		goto out;
	for (int d = 0; d + 1 < t->shape.rank; d++)
		json_array_append_new(shape, json_integer(t->shape.dims[d]));
	json_array_append_new(shape, json_integer(kept));
	o = json_pack("{s:s, s:s, s:O, s:O}", "name", name, "datatype", "BYTES", "shape", shape,
		      "data", data);
	*buf = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (!*buf)
		rc = mfs_fail(err, ENOMEM, "out of memory");
	else
		*len = strlen(*buf);
out:
	json_decref(o);
	json_decref(data);
	json_decref(shape);
	return rc;
}
