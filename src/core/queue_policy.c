/* queue_policy.c - see queue_policy.h. */
#include "queue_policy.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>

#include "registry.h"

const mfs_queue_policy *mfs_queue_policy_of(const mfs_model_config *c, int64_t priority)
{
	if (priority == 0)
		priority = c->dynamic_batching.default_priority_level;
	for (int i = 0; i < c->dynamic_batching.n_level_policies; i++)
		if (c->dynamic_batching.level_policies[i].level == priority)
			return &c->dynamic_batching.level_policies[i].policy;
	return &c->dynamic_batching.default_queue_policy;
}

int mfs_queue_policy_levels(const mfs_model_config *c, mfs_queue_level **levels,
			    int *n, int *default_level, mfs_error *err)
{
	int count = c->dynamic_batching.priority_levels > 0 ? c->dynamic_batching.priority_levels : 1;
	mfs_queue_level *lv = calloc((size_t)count, sizeof(*lv));
	if (!lv)
		return mfs_fail(err, ENOMEM, "out of memory");
	for (int i = 0; i < count; i++) {
		const mfs_queue_policy *p = mfs_queue_policy_of(c, c->dynamic_batching.priority_levels ? i + 1 : 0);
		lv[i].max_queue_size = p->max_queue_size > 0 ? p->max_queue_size : MFS_DEFAULT_MAX_QUEUE_SIZE;
		lv[i].default_timeout_ns = (uint64_t)p->default_timeout_us * 1000u;
		lv[i].delay_on_timeout = p->timeout_delay;
	}
	*levels = lv;
	*n = count;
	*default_level = c->dynamic_batching.priority_levels ? c->dynamic_batching.default_priority_level : 1;
	return 0;
}

int mfs_queue_check_priority(const mfs_model_config *c, const char *model,
			     int64_t priority, mfs_error *err)
{
	int levels = c->dynamic_batching.priority_levels;
	if (priority == 0 || (priority >= 1 && priority <= levels))
		return 0;
	if (levels == 0)
		return mfs_fail(err, EINVAL, "model '%s' has no priority levels (its config sets no "
				"dynamic_batching priority_levels): priority %" PRId64 " refused; 0 is the default",
				model, priority);
	return mfs_fail(err, EINVAL, "model '%s': priority %" PRId64 " is not one of its levels "
			"1..%d (1 runs first; 0 is the default, %d)", model, priority, levels,
			c->dynamic_batching.default_priority_level);
}

int mfs_queue_check_timeout(const mfs_model_config *c, const char *model,
			    int64_t priority, int64_t timeout_us, mfs_error *err)
{
	if (timeout_us == 0)
		return 0;
	if (timeout_us < 0 || timeout_us > MFS_MAX_QUEUE_TIMEOUT_US)
		return mfs_fail(err, EINVAL, "model '%s': timeout %" PRId64 " µs is outside 0..%lld",
				model, timeout_us, (long long)MFS_MAX_QUEUE_TIMEOUT_US);
	if (!mfs_queue_policy_of(c, priority)->allow_timeout_override)
		return mfs_fail(err, EINVAL, "model '%s': a request may not set its own timeout "
				"(the queue policy of %s has allow_timeout_override false)", model,
				c->dynamic_batching.priority_levels ? "its priority level" : "the model");
	return 0;
}

int mfs_queue_parse_param(const char *what, const char *text, size_t len,
			  int64_t max, int64_t *out, mfs_error *err)
{
	size_t i = 0, digits = 0;
	int64_t v = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\t'))
		i++;
	for (; i < len && isdigit((unsigned char)text[i]); i++, digits++) {
		int d = text[i] - '0';
		if (v > (max - d) / 10)
			return mfs_fail(err, EINVAL, "%s: more than %" PRId64, what, max);
		v = v * 10 + d;
	}
	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
		i++;
	if (!digits || i != len)
		return mfs_fail(err, EINVAL, "%s: expected a whole number from 0 to %" PRId64
				" (as `echo N` writes it)", what, max);
	*out = v;
	return 0;
}
