/* fuzz_fuse_infer.c - libFuzzer target: the transaction file
 * MOUNT/add_sub/infer (fs/ over infer_json.c and request.c), driven by
 * raw FUSE requests without a kernel (fuse_fuzz_common.h).  After INIT,
 * the lookups and an open of infer, each input is a session: chunks
 * (two length bytes, then the bytes) written at the offset the next byte
 * gives, and a read of the response after each chunk whose first length
 * byte is odd.  So requests of any bytes, split anywhere, reads before,
 * between and after: no input may crash, leak, hang a read, or get a
 * reply of the wrong length. */
#include "fuse_fuzz_common.h"

#include <fcntl.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz z;
	fz_in in = { data, size };

	if (fz_start(&z) < 0)
		abort();
	remember_node(&z, 1);
	if (fz_lookup(&z, 1, "add_sub") != 0)
		abort();
	uint64_t model = z.nodes[z.n_nodes - 1];
	if (fz_lookup(&z, model, "infer") != 0)
		abort();
	uint64_t node = z.nodes[z.n_nodes - 1];
	uint64_t fh = fz_open(&z, node, O_RDWR);
	if (!fh)
		abort();
	for (int steps = 0; in.n && steps < 32; steps++) {
		int read_after = in.n && (in.p[0] & 1);
		const uint8_t *p;
		size_t n = fz_chunk(&in, &p, 1 << 16);
		uint64_t off = fz_byte(&in);
		fz_rw(&z, OP_WRITE, node, fh, off, p, (uint32_t)n);
		if (read_after)
			fz_rw(&z, OP_READ, node, fh, 0, NULL, 1 << 16);
	}
	fz_rw(&z, OP_READ, node, fh, 0, NULL, 1 << 16);
	fz_stop(&z);
	return 0;
}
