/* membudget.c - see membudget.h. */
#include "membudget.h"

#include <inttypes.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>

/* Above this, malloc uses mmap, and free() unmaps: a large request's
 * memory leaves with it.  glibc's own threshold starts at 128 KiB but
 * rises (to 32 MiB) after each large free, which is how the daemon kept
 * 4.5 GB after one 50 MB JSON input. */
#define MMAP_THRESHOLD (1 << 20)
#define TRIM_EVERY ((uint64_t)32 << 20)

static _Atomic uint64_t limit_bytes;
static _Atomic uint64_t used_bytes;
static _Atomic uint64_t given_since_trim;

void mfs_membudget_init(uint64_t limit)
{
	atomic_store(&limit_bytes, limit);
	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
}

uint64_t mfs_membudget_limit(void) { return atomic_load(&limit_bytes); }

uint64_t mfs_membudget_used(void) { return atomic_load(&used_bytes); }

uint64_t mfs_membudget_default(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kb = 0;

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
				break;
		fclose(f);
	}
	return kb ? (uint64_t)kb * 1024 / 2 : (uint64_t)1 << 30;
}

int mfs_membudget_take(uint64_t n, mfs_error *err)
{
	uint64_t limit = atomic_load(&limit_bytes);
	uint64_t cur = atomic_load(&used_bytes);

	do {
		if (limit && (cur + n > limit || cur + n < cur))
			return mfs_fail(err, ENOSPC,
					"the daemon's requests hold %" PRIu64 " bytes; %" PRIu64
					" more would pass --max-memory=%" PRIu64,
					cur, n, limit);
	} while (!atomic_compare_exchange_weak(&used_bytes, &cur, cur + n));
	return 0;
}

void mfs_membudget_force(uint64_t n) { atomic_fetch_add(&used_bytes, n); }

void mfs_membudget_give(uint64_t n)
{
	uint64_t cur = atomic_load(&used_bytes);
	if (!n)
		return;
	/* Never below zero: a give without its take would wrap the count
	 * and refuse every write from then on. */
	while (!atomic_compare_exchange_weak(&used_bytes, &cur, cur > n ? cur - n : 0))
		;
	/* Freed memory below the heap's top stays with the process until
	 * trimmed; trimming walks the heap, so not on every free. */
	if (atomic_fetch_add(&given_since_trim, n) + n >= TRIM_EVERY) {
		atomic_store(&given_since_trim, 0);
		malloc_trim(0);
	}
}
