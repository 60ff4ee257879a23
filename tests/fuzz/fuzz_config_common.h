/* fuzz_config_common.h - what both config fuzz targets check about a parse.
 * A failed parse leaves an error message and nothing allocated; a
 * successful one renders to JSON that config.json reads back to the same
 * config (render -> parse -> render is a fixed point); an ensemble's is
 * then completed and planned (ensemble_plan.h): an error or a plan, never
 * a crash or a leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ensemble_plan.h"

static void check_parse(int rc, mfs_model_config *c, const mfs_error *err)
{
	mfs_model_config back;
	mfs_error err2;
	json_t *j, *j2;
	char *text;

	if (rc) {
		if (rc != -EINVAL && rc != -ENOMEM)
			abort();
		if (err->msg[0] == '\0' || c->inputs || c->name || c->parameters)
			abort();
		return;
	}
	j = mfs_config_to_json(c);
	if (!j)
		abort();
	text = json_dumps(j, 0);
	if (!text)
		abort();
	if (mfs_config_parse_json(text, strlen(text), "rendered", &back, &err2))
		abort();
	j2 = mfs_config_to_json(&back);
	if (!json_equal(j, j2))
		abort();
	json_decref(j2);
	json_decref(j);
	free(text);
	mfs_config_release(&back);
	if (mfs_config_is_ensemble(c) && mfs_config_complete_ensemble(c, "fuzz", &err2) == 0) {
		mfs_ensemble_plan *p = NULL;
		int prc = mfs_ensemble_plan_new(c, &p, &err2);
		if ((prc == 0) != (p != NULL) || (prc && err2.msg[0] == '\0'))
			abort();
		mfs_ensemble_plan_free(p);
	}
	mfs_config_release(c);
}
