/* health.c - see health.h. */
#include "health.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Taken out of service on purpose, not failed (reloader.c's reasons;
 * Triton excepts "unloaded" the same way). */
static bool not_loaded_on_purpose(const mfs_version_info *v)
{
	return v->state == MFS_VS_UNAVAILABLE &&
	       (strcmp(v->reason, "not loaded") == 0 || strcmp(v->reason, "unloaded") == 0);
}

bool mfs_health_models_ready(const mfs_model_info *ms, int n, char *why, size_t size)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < ms[i].n_versions; k++) {
			const mfs_version_info *v = &ms[i].versions[k];
			if (v->state == MFS_VS_READY || not_loaded_on_purpose(v))
				continue;
			snprintf(why, size, "model '%s' version %" PRId64 " is %s%s%s", ms[i].name,
				 v->version, mfs_vstate_name(v->state), *v->reason ? ": " : "", v->reason);
			return false;
		}
	return true;
}

int mfs_health_ready(mfs_registry *reg, bool first_load_done, bool strict, char *why,
		     size_t size)
{
	if (!first_load_done) {
		snprintf(why, size, "the models are loading");
		return -EAGAIN;
	}
	if (!strict)
		return 0;
	mfs_model_info *ms;
	int n;
	if (mfs_registry_snapshot(reg, &ms, &n) < 0)
		return -ENOMEM;
	bool ready = mfs_health_models_ready(ms, n, why, size);
	mfs_registry_snapshot_free(ms, n);
	return ready ? 0 : -EAGAIN;
}
