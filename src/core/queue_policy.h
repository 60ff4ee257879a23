/* queue_policy.h - Triton's queue policy of a model config
 * (dynamic_batching: default_queue_policy, priority_levels,
 * default_priority_level, priority_queue_policy) in the scheduler's terms,
 * and a request's own priority and timeout (SPEC.md section 4:
 * $req/.priority, $req/.timeout, the infer parameters "priority" and
 * "timeout") checked against it.
 *
 * Every check fails with -EINVAL and a message that names the model and
 * says what is allowed; nothing here keeps state.
 */
#ifndef MFS_QUEUE_POLICY_H
#define MFS_QUEUE_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "scheduler.h"

/* The levels of the version's queue: *levels (malloc'd, *n of them,
 * level 1 first) and the level a request without a priority gets.  A
 * config without priority levels has one level: the default policy.
 * max_queue_size 0 becomes MFS_DEFAULT_MAX_QUEUE_SIZE (no queue grows
 * without bound).  -ENOMEM only. */
int mfs_queue_policy_levels(const mfs_model_config *c, mfs_queue_level **levels,
			    int *n, int *default_level, mfs_error *err);

/* The policy that governs requests of priority (0: the default level). */
const mfs_queue_policy *mfs_queue_policy_of(const mfs_model_config *c, int64_t priority);

/* May a request of model ask for this priority?  0 (the default level)
 * always; 1..priority_levels when the config has levels. */
int mfs_queue_check_priority(const mfs_model_config *c, const char *model,
			     int64_t priority, mfs_error *err);

/* May a request of that priority set its own queue timeout (µs; 0: the
 * level's default)?  Only where allow_timeout_override is true, and at
 * most MFS_MAX_QUEUE_TIMEOUT_US. */
int mfs_queue_check_timeout(const mfs_model_config *c, const char *model,
			    int64_t priority, int64_t timeout_us, mfs_error *err);

/* A request parameter as a file holds it: decimal digits, optionally
 * surrounded by blanks and a final newline (what `echo 2 > .priority`
 * writes); at most max.  what names it in the message. */
int mfs_queue_parse_param(const char *what, const char *text, size_t len,
			  int64_t max, int64_t *out, mfs_error *err);

#endif
