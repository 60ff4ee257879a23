/* string_util.h - what the string operators share (exec/cpu/ops/
 * cast_string.c, string_*.c): numbers to and from text, and element loops
 * over string tensors (tensor.h: mfs_string). */
#ifndef MFS_STRING_UTIL_H
#define MFS_STRING_UTIL_H

#include "op.h"

/* Cast and CastLike where the source or the target is STRING: numbers
 * become decimal text as numpy's str() writes them (shortest text that
 * reads back to the same value: "0.1", "1.0", "1e-05", "NaN", "INF",
 * "-INF"; integers in decimal; bool "True"/"False"), and text becomes
 * numbers as strtod/strtoll read them (whole element, surrounding spaces
 * allowed; "NaN", "INF", "+INF"; bool from "True"/"False"/"1"/"0", any
 * case).  Text that is no number of the target type fails with EINVAL
 * naming the element. */
int cast_string_run(mfs_op_ctx *ctx);

/* Shortest decimal text of element i of a numeric array of type dt into
 * buf (64 bytes are always enough); returns its length. */
size_t str_from_number(char *buf, size_t size, mfs_dtype dt, const void *p, int64_t i);

/* len bytes of UTF-8 at s with every character upper- (upper) or lower-
 * cased by Unicode's default case mapping (C.UTF-8; bytes that are not
 * UTF-8 pass unchanged) into out, which has room for 4 * len bytes;
 * returns the bytes written. */
size_t str_case_map(const char *s, size_t len, bool upper, char *out);

/* Flat index into a tensor of shape in (numpy-broadcast to out) of the
 * element at flat index i of out. */
int64_t str_bcast_index(const mfs_shape *out, const mfs_shape *in, int64_t i);

/* Infer for two string inputs broadcast into output 0 of type dt. */
int str_binary_infer(mfs_op_ctx *ctx, mfs_dtype dt);

#endif
