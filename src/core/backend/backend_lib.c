/* backend_lib.c - see backend_lib.h. */
#include "backend_lib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

struct mfs_backend_lib {
	void *handle;
	const modelfs_backend_api *api;
};

int mfs_backend_lib_open(const char *path, mfs_backend_lib **out, mfs_error *err)
{
	mfs_backend_lib *lib;
	const modelfs_backend_api *api;
	void *handle;

	*out = NULL;
	/* RTLD_NOW: an unresolved symbol is a load error now, not a crash
	 * in the middle of a request.  RTLD_LOCAL: two backends may use the
	 * same symbol names. */
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!handle)
		return mfs_fail(err, ENOENT, "cannot load %s: %s", path, dlerror());
	api = dlsym(handle, MODELFS_BACKEND_SYMBOL);
	if (!api) {
		dlclose(handle);
		return mfs_fail(err, EINVAL,
				"%s is not a modelfs backend: it exports no '%s' (include/modelfs_backend.h)",
				path, MODELFS_BACKEND_SYMBOL);
	}
	/* Only abi_version is read before it is known to match: the rest of
	 * the struct may have another layout in another version. */
	if (api->abi_version != MODELFS_BACKEND_ABI_VERSION) {
		unsigned declared = api->abi_version;
		dlclose(handle);
		return mfs_fail(err, EINVAL,
				"%s declares backend ABI version %u, this modelfs speaks version %u "
				"(rebuild the backend against this modelfs's modelfs_backend.h)",
				path, declared, MODELFS_BACKEND_ABI_VERSION);
	}
	if (!api->init || !api->execute) {
		dlclose(handle);
		return mfs_fail(err, EINVAL, "%s: its '%s' has no %s function", path,
				MODELFS_BACKEND_SYMBOL, api->init ? "execute" : "init");
	}
	lib = calloc(1, sizeof(*lib));
	if (!lib) {
		dlclose(handle);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	lib->handle = handle;
	lib->api = api;
	*out = lib;
	return 0;
}

const modelfs_backend_api *mfs_backend_lib_api(const mfs_backend_lib *lib)
{
	return lib->api;
}

void mfs_backend_lib_close(mfs_backend_lib *lib)
{
	if (!lib)
		return;
	dlclose(lib->handle);
	free(lib);
}
