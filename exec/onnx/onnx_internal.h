/* onnx_internal.h - what onnx_reader.c and onnx_tensor.c share beyond
 * onnx.h.
 *
 * The external-data budget: a model may reference each byte of its data
 * files once.  Without it, a few hundred bytes of initializers could each
 * point at the same 1 GiB range of a file next to the model and ask for
 * terabytes.  The budget is the summed size of the distinct files
 * referenced (by device and inode); the bytes loaded may not exceed it.
 */
#ifndef MFS_ONNX_INTERNAL_H
#define MFS_ONNX_INTERNAL_H

#include <sys/types.h>

#include "onnx.h"

typedef struct onnx_ext_file {
	dev_t dev;
	ino_t ino;
} onnx_ext_file;

typedef struct onnx_ext_budget {
	onnx_ext_file *files;
	size_t n_files, cap;
	uint64_t allowed;   /* summed sizes of the distinct files */
	uint64_t used;      /* bytes loaded so far */
} onnx_ext_budget;

/* onnx_tensor_decode, charging external data to budget (may be NULL). */
int onnx_tensor_decode_budget(const void *buf, size_t len,
			      const char *base_dir, onnx_ext_budget *budget,
			      mfs_tensor *out, char **name, mfs_error *err);

void onnx_ext_budget_release(onnx_ext_budget *b);

/* String tensors (onnx_string.c).  onnx_fill_strings copies the elements
 * of repeated bytes field `field` of a TensorProto into t (allocated,
 * STRING, with as many elements as the field has: the caller counted).
 * onnx_strings_encoded_len is the bytes onnx_strings_encode writes at p:
 * each element as one `field` entry; it returns the end. */
int onnx_fill_strings(const uint8_t *buf, size_t len, uint32_t field,
		      mfs_tensor *t, mfs_error *err);
size_t onnx_strings_encoded_len(const mfs_tensor *t, uint32_t field);
uint8_t *onnx_strings_encode(const mfs_tensor *t, uint32_t field, uint8_t *p);

#endif
