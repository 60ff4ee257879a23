/* op_registry.c - the table of operator definitions, built from every
 * MFS_OP line in exec/cpu/ops/ (the Makefile generates op_table.inc). */
#include <pthread.h>
#include <string.h>

#include "op_half.h"

#define MFS_OP_ENTRY(name, ver) extern const mfs_op_def mfs_op_def_##name##_##ver;
#include "op_table.inc"
#undef MFS_OP_ENTRY

static const mfs_op_def *const defined[] = {
#define MFS_OP_ENTRY(name, ver) &mfs_op_def_##name##_##ver,
#include "op_table.inc"
#undef MFS_OP_ENTRY
	NULL
};

#define N_DEFS (sizeof(defined) / sizeof(defined[0]) - 1)

/* What lookups see: the definitions, with MFS_OP_HALF_VIA_FLOAT ones
 * replaced by their FP16/BF16 wrapper (op_half.c).  Built once. */
static const mfs_op_def *registry_tab[N_DEFS + 1];
static mfs_half_def half_defs[N_DEFS + 1];
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

static void registry_build(void)
{
	for (size_t i = 0; i < N_DEFS; i++) {
		registry_tab[i] = defined[i];
		if (defined[i]->flags & MFS_OP_HALF_VIA_FLOAT) {
			mfs_op_half_wrap(&half_defs[i], defined[i]);
			registry_tab[i] = &half_defs[i].def;
		}
	}
}

static const mfs_op_def *const *registry_get(void)
{
	pthread_once(&registry_once, registry_build);
	return registry_tab;
}

static bool domain_is_default(const char *d)
{
	return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

static bool same_domain(const char *a, const char *b)
{
	if (domain_is_default(a) || domain_is_default(b))
		return domain_is_default(a) && domain_is_default(b);
	return strcmp(a, b) == 0;
}

const mfs_op_def *mfs_op_find(const char *domain, const char *op_type,
			      int64_t opset)
{
	const mfs_op_def *const *registry = registry_get();
	const mfs_op_def *best = NULL;
	for (int i = 0; registry[i]; i++) {
		const mfs_op_def *d = registry[i];
		if (strcmp(d->op_type, op_type) != 0 || !same_domain(d->domain, domain))
			continue;
		if (d->since_version > opset)
			continue;
		if (!best || d->since_version > best->since_version)
			best = d;
	}
	return best;
}

const mfs_op_def *const *mfs_op_all(int *count)
{
	*count = (int)N_DEFS;
	return registry_get();
}
