/* op_registry.c - the table of operator definitions, built from every
 * MFS_OP line in exec/ops/ (the Makefile generates op_table.inc). */
#include <string.h>

#include "op.h"

#define MFS_OP_ENTRY(name, ver) extern const mfs_op_def mfs_op_def_##name##_##ver;
#include "op_table.inc"
#undef MFS_OP_ENTRY

static const mfs_op_def *const registry[] = {
#define MFS_OP_ENTRY(name, ver) &mfs_op_def_##name##_##ver,
#include "op_table.inc"
#undef MFS_OP_ENTRY
	NULL
};

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
	*count = (int)(sizeof(registry) / sizeof(registry[0])) - 1;
	return registry;
}
