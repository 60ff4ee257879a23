/* health.h - Triton's v2/health/ready in modelfs's terms (SPEC.md
 * section 3, MOUNT/.ready; systemd's READY=1 uses the same rule).
 *
 * Ready: the first load is over and, when strict (Triton's
 * --strict-readiness, the default), every version of every model is
 * READY; a version not loaded on purpose (explicit model control's "not
 * loaded" and "unloaded", as Triton excepts "unloaded") does not count.
 * Not strict: ready once the first load is over.
 */
#ifndef MFS_HEALTH_H
#define MFS_HEALTH_H

#include <stdbool.h>
#include <stddef.h>

#include "registry.h"

/* The rule over a snapshot (registry.h): true, or false with why naming
 * the first model and version that is not READY. */
bool mfs_health_models_ready(const mfs_model_info *ms, int n, char *why, size_t size);

/* The rule over reg now: 0 ready, -EAGAIN not (why says so), -ENOMEM. */
int mfs_health_ready(mfs_registry *reg, bool first_load_done, bool strict, char *why,
		     size_t size);

#endif
