/* fuzz_same.h - whether two tensors of one dtype and byte count hold the
 * same values: the bytes, except for STRING, whose data is pointers into
 * each tensor's own arena (compare the elements' bytes instead). */
#ifndef FUZZ_SAME_H
#define FUZZ_SAME_H

#include <stdbool.h>
#include <string.h>

#include "tensor.h"

static inline bool fuzz_same_values(const mfs_tensor *a, const mfs_tensor *b)
{
	if (a->nbytes != b->nbytes)
		return false;
	if (!a->nbytes)
		return true;
	if (a->dtype != MFS_DT_STRING)
		return memcmp(a->data, b->data, a->nbytes) == 0;
	for (size_t i = 0; i < a->nbytes / sizeof(mfs_string); i++) {
		const mfs_string *x = mfs_string_at(a, (int64_t)i), *y = mfs_string_at(b, (int64_t)i);
		if (x->len != y->len || (x->len && memcmp(x->ptr, y->ptr, x->len) != 0))
			return false;
	}
	return true;
}

#endif
