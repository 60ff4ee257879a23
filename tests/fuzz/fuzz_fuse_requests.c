/* fuzz_fuse_requests.c - libFuzzer target: the request-directory path of
 * the FUSE layer (fs/ over request.c), driven by raw FUSE requests
 * without a kernel (fuse_fuzz_common.h).  After INIT and the lookups of
 * add_sub/requests, each input is a program: one byte picks an operation
 * (mkdir, lookup, create, open, write, flush, release, read, unlink,
 * rmdir, rename, getattr, setattr/truncate, readdir, forget, fsync,
 * symlink to one of a few files or to raw bytes, readlink), the
 * next bytes pick its node, handle, name, offset and data from what the
 * daemon gave out so far.  No input may crash, leak, hang a request, or
 * get a reply of the wrong length. */
#include "fuse_fuzz_common.h"

#include <fcntl.h>

static const char *const names[] = {
	"r", "q", "INPUT0.txt", "INPUT1.txt", "INPUT0.json", "INPUT1.npy",
	"INPUT0.raw", "INPUT1.pb", "OUTPUT0.txt", "OUTPUT1.json", "OUTPUT0.npy",
	".INPUT0.txt.tmp", "status", "error", "trace.json", "..", ".", "",
	"requests", "infer", "add_sub",
};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

/* A name from the list, or (1 in 8) raw bytes of the input. */
static const char *pick_name(fz_in *in, char *buf, size_t cap)
{
	unsigned b = fz_byte(in);
	if ((b & 7) != 7)
		return names[b % N_NAMES];
	const uint8_t *p;
	size_t n = fz_chunk(in, &p, cap - 1);
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

/* What a symlink may point to: a good add_sub input, files that are not
 * regular, a file in /proc (refused, EACCES: docs/SECURITY.md), a
 * relative path, nothing; or (1 in 8) raw bytes. */
static const char *pick_target(fz_in *in, char *buf, size_t cap)
{
	static char good[64];
	if (!good[0]) {
		snprintf(good, sizeof(good), "/tmp/mfs-fuzz-link.XXXXXX");
		int fd = mkstemp(good);
		if (fd < 0)
			abort();
		static const char text[] = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n";
		if (write(fd, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1))
			abort();
		close(fd);
	}
	const char *const targets[] = { good, "/dev/null", "/tmp", "/proc/self/status", "x.txt", "" };
	unsigned b = fz_byte(in);
	if ((b & 7) != 7)
		return targets[b % 6];
	const uint8_t *p;
	size_t n = fz_chunk(in, &p, cap - 1);
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

static uint64_t pick(fz_in *in, const uint64_t *ids, int n)
{
	unsigned b = fz_byte(in);
	return ids[b % (unsigned)n];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz z;
	fz_in in = { data, size };
	char nb[300], nb2[300];

	if (fz_start(&z) < 0)
		abort();
	remember_node(&z, 1);
	fz_lookup(&z, 1, "add_sub");
	fz_lookup(&z, z.nodes[z.n_nodes - 1], "requests");
	for (int steps = 0; in.n && steps < 64; steps++) {
		unsigned op = fz_byte(&in) % 18;
		uint64_t node = pick(&in, z.nodes, z.n_nodes);
		const char *name = pick_name(&in, nb, sizeof(nb));
		switch (op) {
		case 0: {
			uint32_t mk[2] = { 0755, 022 };
			fz_named(&z, OP_MKDIR, node, mk, sizeof(mk), name);
			break;
		}
		case 1:
			fz_lookup(&z, node, name);
			break;
		case 2: {
			uint32_t cr[4] = { O_WRONLY | O_CREAT | (fz_byte(&in) & 1 ? O_TRUNC : 0), 0644, 022, 0 };
			if (z.n_fhs < MAX_IDS)
				fz_named(&z, OP_CREATE, node, cr, sizeof(cr), name);
			break;
		}
		case 3:
			if (z.n_fhs < MAX_IDS)
				fz_open(&z, node, (fz_byte(&in) % 3) | (fz_byte(&in) & 1 ? O_TRUNC : 0));
			break;
		case 4: {
			if (!z.n_fhs)
				break;
			const uint8_t *p;
			size_t n = fz_chunk(&in, &p, 4096);
			fz_rw(&z, OP_WRITE, node, pick(&in, z.fhs, z.n_fhs), fz_byte(&in) < 200 ? 0 : fz_byte(&in), p, (uint32_t)n);
			break;
		}
		case 5: {
			if (!z.n_fhs)
				break;
			uint64_t fl[3] = { pick(&in, z.fhs, z.n_fhs), 0, 0 };
			fz_send(&z, OP_FLUSH, node, fl, sizeof(fl), NULL, 0);
			break;
		}
		case 6: {
			if (z.n_fhs) {
				uint64_t fh = pick(&in, z.fhs, z.n_fhs);
				uint64_t rl[3] = { fh, 0, 0 };
				forget_fh(&z, fh);
				fz_send(&z, OP_RELEASE, node, rl, sizeof(rl), NULL, 0);
			}
			break;
		}
		case 7:
			if (!z.n_fhs)
				break;
			fz_rw(&z, OP_READ, node, pick(&in, z.fhs, z.n_fhs), fz_byte(&in), NULL, 1 + fz_byte(&in) * 64);
			break;
		case 8:
			fz_named(&z, OP_UNLINK, node, NULL, 0, name);
			break;
		case 9:
			fz_named(&z, OP_RMDIR, node, NULL, 0, name);
			break;
		case 10: {
			uint64_t newdir = pick(&in, z.nodes, z.n_nodes);
			const char *to = pick_name(&in, nb2, sizeof(nb2));
			size_t a = strlen(name) + 1, b = strlen(to) + 1;
			char *both = malloc(a + b);
			memcpy(both, name, a);
			memcpy(both + a, to, b);
			fz_send(&z, OP_RENAME, node, &newdir, sizeof(newdir), both, a + b);
			free(both);
			break;
		}
		case 11: {
			uint32_t ga[4] = { 0 };
			fz_send(&z, OP_GETATTR, node, ga, sizeof(ga), NULL, 0);
			break;
		}
		case 12: {
			uint8_t sa[88] = { 0 };
			uint32_t valid = (1u << 3) | (fz_byte(&in) & 1);   /* FATTR_SIZE, maybe FATTR_MODE */
			uint64_t sz = fz_byte(&in);
			uint32_t mode = 0100600;
			memcpy(sa, &valid, 4);
			memcpy(sa + 16, &sz, 8);
			memcpy(sa + 68, &mode, 4);
			fz_send(&z, OP_SETATTR, node, sa, sizeof(sa), NULL, 0);
			break;
		}
		case 13: {
			uint32_t od[2] = { O_RDONLY, 0 };
			if (z.n_fhs < MAX_IDS && fz_send(&z, OP_OPENDIR, node, od, sizeof(od), NULL, 0) == 0) {
				uint64_t fh = z.fhs[z.n_fhs - 1];
				fz_rw(&z, OP_READDIR, node, fh, fz_byte(&in) % 4, NULL, 4096);
				uint64_t rl[3] = { fh, 0, 0 };
				fz_send(&z, OP_RELEASEDIR, node, rl, sizeof(rl), NULL, 0);
				z.n_fhs--;
			}
			break;
		}
		case 14: {
			/* The kernel forgets no node with a file open on it; to
			 * keep to that simply, only when nothing is open. */
			/* Nor a directory before its entries: the last
			 * learned goes first. */
			int k = z.n_nodes - 1;
			if (z.n_fhs == 0 && z.nodes[k] != 1) {
				uint64_t n = z.lookups[k];
				fz_send(&z, OP_FORGET, z.nodes[k], &n, sizeof(n), NULL, 0);
				z.nodes[k] = z.nodes[--z.n_nodes];
				z.lookups[k] = z.lookups[z.n_nodes];
			}
			break;
		}
		case 16: {
			const char *to = pick_target(&in, nb2, sizeof(nb2));
			size_t a = strlen(name) + 1, b = strlen(to) + 1;
			char *both = malloc(a + b);
			memcpy(both, name, a);
			memcpy(both + a, to, b);
			fz_send(&z, OP_SYMLINK, node, NULL, 0, both, a + b);
			free(both);
			break;
		}
		case 17:
			fz_send(&z, OP_READLINK, node, NULL, 0, NULL, 0);
			break;
		default: {
			if (!z.n_fhs)
				break;
			uint32_t fs_in[4] = { 0 };
			memcpy(fs_in, &(uint64_t){ pick(&in, z.fhs, z.n_fhs) }, 8);
			fz_send(&z, OP_FSYNC, node, fs_in, sizeof(fs_in), NULL, 0);
			break;
		}
		}
	}
	fz_stop(&z);
	return 0;
}
