/* build_id.c - see build_id.h. */
#include "build_id.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static char id[96];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The notes of one PT_NOTE segment: the GNU build ID as hex into id. */
static bool scan_notes(const unsigned char *p, size_t size)
{
	size_t off = 0;
	while (off + sizeof(ElfW(Nhdr)) <= size) {
		const ElfW(Nhdr) *n = (const void *)(p + off);
		size_t name = (n->n_namesz + 3) & ~(size_t)3, desc = (n->n_descsz + 3) & ~(size_t)3;
		const unsigned char *np = p + off + sizeof(*n), *dp = np + name;
		if (off + sizeof(*n) + name + desc > size)
			return false;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(np, "GNU", 4) &&
		    n->n_descsz > 0 && n->n_descsz * 2 < sizeof(id)) {
			for (size_t i = 0; i < n->n_descsz; i++)
				snprintf(id + 2 * i, 3, "%02x", dp[i]);
			return true;
		}
		off += sizeof(*n) + name + desc;
	}
	return false;
}

/* dl_iterate_phdr's first object is the main program. */
static int main_program(struct dl_phdr_info *info, size_t size, void *arg)
{
	bool *found = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum && !*found; i++)
		if (info->dlpi_phdr[i].p_type == PT_NOTE)
			*found = scan_notes((const unsigned char *)(info->dlpi_addr +
								    info->dlpi_phdr[i].p_vaddr),
					    info->dlpi_phdr[i].p_memsz);
	return 1;
}

static void compute(void)
{
	bool found = false;
	struct stat st;

	dl_iterate_phdr(main_program, &found);
	if (found)
		return;
	if (stat("/proc/self/exe", &st) == 0)
		snprintf(id, sizeof(id), "exe-%lld-%lld", (long long)st.st_size,
			 (long long)st.st_mtime);
	else
		snprintf(id, sizeof(id), "unknown");
}

const char *mfs_build_id(void)
{
	pthread_once(&once, compute);
	return id;
}
