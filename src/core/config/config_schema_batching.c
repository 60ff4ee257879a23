/* config_schema_batching.c - dynamic_batching (config_schema.c's
 * table): the batcher's delay and preferred sizes, the default queue
 * policy, priority levels and each level's policy (queue_policy.h uses
 * them), and Triton's rules between the priority fields.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "config_fields.h"

/* dynamic_batching { max_queue_delay_microseconds preferred_batch_size
 *   max_queue_size default_queue_policy { ... } priority_levels
 *   default_priority_level priority_queue_policy { key value { ... } } }
 * where a queue policy is Triton's ModelQueuePolicy: timeout_action,
 * default_timeout_microseconds, allow_timeout_override, max_queue_size. */

static int db_delay(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	/* An hour: a longer wait is a typo, and keeps arithmetic in ns safe. */
	return cfg_get_i64(cv, n, 0, 3600000000LL, &c->dynamic_batching.max_queue_delay_us);
}

int cfg_preferred_batch_size(cfg_conv *cv, const cfg_node *n, int **sizes, int *count)
{
	int v, *grown;

	if (cfg_get_int(cv, n, 1, INT32_MAX, &v))
		return -EINVAL;
	if (*count >= 1024)
		return cfg_fail_at(cv, n, "too many preferred batch sizes");
	grown = realloc(*sizes, (size_t)(*count + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	*sizes = grown;
	grown[(*count)++] = v;
	return 0;
}

static int db_preferred(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return cfg_preferred_batch_size(cv, n, &c->dynamic_batching.preferred_batch_size,
					&c->dynamic_batching.n_preferred_batch_size);
}

static int qp_max_queue_size(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_i64(cv, n, 0, INT64_MAX, &((mfs_queue_policy *)obj)->max_queue_size);
}

static int qp_timeout_action(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_enum_def actions[] = { { "REJECT", 0 }, { "DELAY", 1 } };
	int v = 0;

	if (cfg_get_enum(cv, n, actions, N_OF(actions), &v))
		return -EINVAL;
	((mfs_queue_policy *)obj)->timeout_delay = v == 1;
	return 0;
}

static int qp_default_timeout(cfg_conv *cv, const cfg_node *n, void *obj)
{
	/* About 11 days: keeps the deadline's arithmetic in ns safe. */
	return cfg_get_i64(cv, n, 0, MFS_MAX_QUEUE_TIMEOUT_US,
			   &((mfs_queue_policy *)obj)->default_timeout_us);
}

static int qp_allow_override(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_bool(cv, n, &((mfs_queue_policy *)obj)->allow_timeout_override);
}

static int queue_policy(cfg_conv *cv, const cfg_node *n, const char *what, mfs_queue_policy *p)
{
	static const cfg_field_def defs[] = {
		{ "timeout_action", false, qp_timeout_action },
		{ "default_timeout_microseconds", false, qp_default_timeout },
		{ "allow_timeout_override", false, qp_allow_override },
		{ "max_queue_size", false, qp_max_queue_size },
	};
	return cfg_conv_message(cv, n, what, defs, N_OF(defs), NULL, p);
}

static int db_queue_size(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return qp_max_queue_size(cv, n, &c->dynamic_batching.default_queue_policy);
}

static int db_queue_policy(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return queue_policy(cv, n, "default_queue_policy", &c->dynamic_batching.default_queue_policy);
}

static int db_priority_levels(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return cfg_get_int(cv, n, 0, MFS_MAX_PRIORITY_LEVELS, &c->dynamic_batching.priority_levels);
}

static int db_default_priority(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return cfg_get_int(cv, n, 0, MFS_MAX_PRIORITY_LEVELS, &c->dynamic_batching.default_priority_level);
}

static int lp_key(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_i64(cv, n, 1, MFS_MAX_PRIORITY_LEVELS, &((mfs_level_policy *)obj)->level);
}

static int lp_value(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return queue_policy(cv, n, "priority_queue_policy value", &((mfs_level_policy *)obj)->policy);
}

static int db_priority_policy(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "key", false, lp_key }, { "value", false, lp_value },
	};
	mfs_model_config *c = obj;
	mfs_level_policy *grown, *p;
	int rc;

	if (c->dynamic_batching.n_level_policies >= MFS_MAX_PRIORITY_LEVELS)
		return cfg_fail_at(cv, n, "too many priority_queue_policy entries");
	grown = realloc(c->dynamic_batching.level_policies,
			(size_t)(c->dynamic_batching.n_level_policies + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	c->dynamic_batching.level_policies = grown;
	p = &grown[c->dynamic_batching.n_level_policies++];
	memset(p, 0, sizeof(*p));
	rc = cfg_conv_message(cv, n, "priority_queue_policy", defs, N_OF(defs), NULL, p);
	if (rc)
		return rc;
	if (!p->level)
		return cfg_fail_at(cv, n, "priority_queue_policy entry without a key (its priority level)");
	for (int i = 0; i < c->dynamic_batching.n_level_policies - 1; i++)
		if (grown[i].level == p->level)
			return cfg_fail_at(cv, n, "priority_queue_policy for level %lld given twice",
					   (long long)p->level);
	return 0;
}

int cfg_dynamic_batching(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "max_queue_delay_microseconds", false, db_delay },
		{ "preferred_batch_size", true, db_preferred },
		{ "max_queue_size", false, db_queue_size },
		{ "default_queue_policy", false, db_queue_policy },
		{ "priority_levels", false, db_priority_levels },
		{ "default_priority_level", false, db_default_priority },
		{ "priority_queue_policy", true, db_priority_policy },
	};
	static const char *const triton[] = { "preserve_ordering", NULL };
	mfs_model_config *c = obj;

	c->has_dynamic_batching = true;
	return cfg_conv_message(cv, n, "dynamic_batching", defs, N_OF(defs), triton, obj);
}

/* Triton's rules between the priority fields. */
int cfg_check_priorities(cfg_conv *cv, const cfg_node *root, const mfs_model_config *c)
{
	int levels = c->dynamic_batching.priority_levels;
	int def = c->dynamic_batching.default_priority_level;

	if (levels == 0 && def != 0)
		return cfg_fail_at(cv, root, "dynamic_batching: default_priority_level %d needs priority_levels", def);
	if (levels > 0 && (def < 1 || def > levels))
		return cfg_fail_at(cv, root, "dynamic_batching: default_priority_level must be 1..%d "
				   "(priority_levels), not %d", levels, def);
	for (int i = 0; i < c->dynamic_batching.n_level_policies; i++)
		if (c->dynamic_batching.level_policies[i].level > levels)
			return cfg_fail_at(cv, root, "dynamic_batching: priority_queue_policy for level %lld, "
					   "but priority_levels is %d",
					   (long long)c->dynamic_batching.level_policies[i].level, levels);
	return 0;
}
