/* fuzz_onnx_value.c - libFuzzer target: a sequence or optional value
 * (SequenceProto, OptionalProto: a .pb file of a sequence or optional
 * input) from arbitrary bytes through onnx_value_decode and the mount's
 * mfs_value_decode.  The first byte picks what the model declares (a
 * sequence, an optional of a tensor, an optional of a sequence), the rest
 * is the file.  What decodes must be consistent (every tensor's bytes
 * match its shape, one dtype) and survive encode -> decode unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const mfs_tensor *t)
{
	if (t->kind == MFS_KIND_TENSOR) {
		int64_t numel = mfs_shape_numel(&t->shape);
		if (numel < 0 || (size_t)numel * mfs_dtype_size(t->dtype) != t->nbytes)
			abort();
		return;
	}
	for (int i = 0; i < t->n_items; i++) {
		if (t->items[i].dtype != t->dtype)
			abort();
		check(&t->items[i]);
	}
}

static void same(const mfs_tensor *a, const mfs_tensor *b)
{
	if (a->kind != b->kind || a->n_items != b->n_items || a->dtype != b->dtype)
		abort();
	if (a->kind == MFS_KIND_TENSOR) {
		if (!mfs_shape_equal(&a->shape, &b->shape) || a->nbytes != b->nbytes ||
		    (a->nbytes && memcmp(a->data, b->data, a->nbytes)))
			abort();
		return;
	}
	for (int i = 0; i < a->n_items; i++)
		same(&a->items[i], &b->items[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const mfs_kind kinds[3][2] = {
		{ MFS_KIND_SEQUENCE, MFS_KIND_TENSOR },
		{ MFS_KIND_OPTIONAL, MFS_KIND_TENSOR },
		{ MFS_KIND_OPTIONAL, MFS_KIND_SEQUENCE },
	};
	mfs_tensor like = { .dtype = MFS_DT_FLOAT }, t, back;
	mfs_error err;
	void *buf;
	size_t len;

	if (size < 1)
		return 0;
	like.kind = kinds[data[0] % 3][0];
	like.elem_kind = kinds[data[0] % 3][1];
	memset(&err, 0, sizeof(err));
	if (onnx_value_decode(data + 1, size - 1, NULL, &like, &t, &err)) {
		if (t.items || err.msg[0] == '\0' || err.code <= 0)
			abort();
		return 0;
	}
	check(&t);
	if (onnx_value_encode(&t, "v", &buf, &len, &err))
		abort();
	if (onnx_value_decode(buf, len, NULL, &like, &back, &err))
		abort();
	same(&t, &back);
	mfs_tensor_release(&back);
	free(buf);

	/* The mount's entry point: same bytes, same verdict (its dtype
	 * check aside). */
	mfs_tensor_spec spec = { .name = "v", .dtype = t.dtype, .rank = -1 };
	if (t.dtype != MFS_DT_UNDEFINED) {
		if (mfs_value_decode(MFS_FMT_PB, data + 1, size - 1, &spec, like.kind,
				     like.elem_kind, &back, &err))
			abort();
		mfs_tensor_release(&back);
	}
	mfs_tensor_release(&t);
	return 0;
}
