/* ocl_device.c - see ocl_device.h. */
#include "ocl_device.h"

#include "cache_dir.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64

typedef struct device_ref {
	cl_platform_id platform;
	cl_device_id device;
	char name[256];
	bool is_gpu;
} device_ref;

const char *mfs_ocl_strerror(cl_int status)
{
	switch (status) {
#define E(x) case x: return #x
	E(CL_SUCCESS); E(CL_DEVICE_NOT_FOUND); E(CL_DEVICE_NOT_AVAILABLE);
	E(CL_COMPILER_NOT_AVAILABLE); E(CL_MEM_OBJECT_ALLOCATION_FAILURE);
	E(CL_OUT_OF_RESOURCES); E(CL_OUT_OF_HOST_MEMORY);
	E(CL_PROFILING_INFO_NOT_AVAILABLE); E(CL_MEM_COPY_OVERLAP);
	E(CL_IMAGE_FORMAT_MISMATCH); E(CL_IMAGE_FORMAT_NOT_SUPPORTED);
	E(CL_BUILD_PROGRAM_FAILURE); E(CL_MAP_FAILURE);
	E(CL_MISALIGNED_SUB_BUFFER_OFFSET); E(CL_INVALID_VALUE);
	E(CL_INVALID_DEVICE_TYPE); E(CL_INVALID_PLATFORM); E(CL_INVALID_DEVICE);
	E(CL_INVALID_CONTEXT); E(CL_INVALID_QUEUE_PROPERTIES);
	E(CL_INVALID_COMMAND_QUEUE); E(CL_INVALID_HOST_PTR);
	E(CL_INVALID_MEM_OBJECT); E(CL_INVALID_BINARY);
	E(CL_INVALID_BUILD_OPTIONS); E(CL_INVALID_PROGRAM);
	E(CL_INVALID_PROGRAM_EXECUTABLE); E(CL_INVALID_KERNEL_NAME);
	E(CL_INVALID_KERNEL_DEFINITION); E(CL_INVALID_KERNEL);
	E(CL_INVALID_ARG_INDEX); E(CL_INVALID_ARG_VALUE); E(CL_INVALID_ARG_SIZE);
	E(CL_INVALID_KERNEL_ARGS); E(CL_INVALID_WORK_DIMENSION);
	E(CL_INVALID_WORK_GROUP_SIZE); E(CL_INVALID_WORK_ITEM_SIZE);
	E(CL_INVALID_GLOBAL_OFFSET); E(CL_INVALID_EVENT_WAIT_LIST);
	E(CL_INVALID_EVENT); E(CL_INVALID_OPERATION); E(CL_INVALID_BUFFER_SIZE);
	E(CL_INVALID_GLOBAL_WORK_SIZE);
#undef E
	default: return "unknown OpenCL error";
	}
}

/* Every device of every platform, in loader order. */
static int enumerate(device_ref *refs, int max)
{
	cl_platform_id platforms[MAX_PLATFORMS];
	cl_uint n_platforms = 0;
	int n = 0;

	if (clGetPlatformIDs(MAX_PLATFORMS, platforms, &n_platforms) != CL_SUCCESS)
		return 0;
	for (cl_uint p = 0; p < n_platforms && p < MAX_PLATFORMS; p++) {
		cl_device_id devices[MAX_DEVICES];
		cl_uint n_devices = 0;
		char pname[128] = "";

		clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof(pname), pname, NULL);
		if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devices,
				   &n_devices) != CL_SUCCESS)
			continue;
		for (cl_uint d = 0; d < n_devices && d < MAX_DEVICES && n < max; d++) {
			char dname[120] = "";
			cl_device_type type = 0;
			clGetDeviceInfo(devices[d], CL_DEVICE_NAME, sizeof(dname), dname, NULL);
			clGetDeviceInfo(devices[d], CL_DEVICE_TYPE, sizeof(type), &type, NULL);
			refs[n].platform = platforms[p];
			refs[n].device = devices[d];
			refs[n].is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
			snprintf(refs[n].name, sizeof(refs[n].name), "%s / %s", pname, dname);
			n++;
		}
	}
	return n;
}

int mfs_ocl_list(FILE *f)
{
	device_ref refs[MAX_DEVICES];
	int n = enumerate(refs, MAX_DEVICES);
	for (int i = 0; i < n; i++)
		fprintf(f, "%d: %s (%s)\n", i, refs[i].name, refs[i].is_gpu ? "GPU" : "other");
	return n;
}

static bool contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return true;
	return n == 0;
}

static int choose(const device_ref *refs, int n, const char *selector)
{
	if (!selector || !*selector) {
		for (int i = 0; i < n; i++)
			if (refs[i].is_gpu)
				return i;
		return n > 0 ? 0 : -1;
	}
	bool numeric = true;
	for (const char *c = selector; *c; c++)
		numeric &= isdigit((unsigned char)*c) != 0;
	if (numeric) {
		long idx = strtol(selector, NULL, 10);
		return idx < n ? (int)idx : -1;
	}
	for (int i = 0; i < n; i++)
		if (contains_ci(refs[i].name, selector))
			return i;
	return -1;
}

int mfs_ocl_open(const char *selector, mfs_ocl_device **out, mfs_error *err)
{
	device_ref refs[MAX_DEVICES];
	int n = enumerate(refs, MAX_DEVICES);
	int pick = choose(refs, n, selector);
	cl_int status;
	mfs_ocl_device *d;

	*out = NULL;
	if (n == 0)
		return mfs_fail(err, ENODEV, "no OpenCL device: no platform is installed "
				"(an ICD such as pocl-opencl-icd, or OCL_ICD_VENDORS)");
	if (pick < 0) {
		char names[512] = "";
		size_t used = 0;
		for (int i = 0; i < n && used < sizeof(names); i++)
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%d: %s",
						 i ? "; " : "", i, refs[i].name);
		return mfs_fail(err, ENODEV, "no OpenCL device matches '%s' (%d devices: %s)",
				selector, n, names);
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return mfs_fail(err, ENOMEM, "out of memory");
	d->platform = refs[pick].platform;
	d->device = refs[pick].device;
	memcpy(d->name, refs[pick].name, sizeof(d->name));
	clGetDeviceInfo(d->device, CL_DRIVER_VERSION, sizeof(d->driver) - 1, d->driver, NULL);
	clGetDeviceInfo(d->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(d->global_mem),
			&d->global_mem, NULL);
	clGetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(d->max_work_group),
			&d->max_work_group, NULL);
	clGetDeviceInfo(d->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(d->compute_units),
			&d->compute_units, NULL);
	d->context = clCreateContext(NULL, 1, &d->device, NULL, NULL, &status);
	if (status != CL_SUCCESS) {
		free(d);
		return mfs_fail(err, EIO, "OpenCL device %s: cannot create a context: %s",
				refs[pick].name, mfs_ocl_strerror(status));
	}
	d->queue = clCreateCommandQueue(d->context, d->device, 0, &status);
	if (status != CL_SUCCESS) {
		clReleaseContext(d->context);
		free(d);
		return mfs_fail(err, EIO, "OpenCL device %s: cannot create a queue: %s",
				refs[pick].name, mfs_ocl_strerror(status));
	}
	*out = d;
	return 0;
}

void mfs_ocl_close(mfs_ocl_device *d)
{
	if (!d)
		return;
	clReleaseCommandQueue(d->queue);
	clReleaseContext(d->context);
	free(d);
}

/* Where the program cache lives; NULL if none. */
static const char *cache_dir(void)
{
	static _Thread_local char dir[1024];
	const char *env = getenv("MODELFS_CACHE_DIR");
	if (env && *env)
		snprintf(dir, sizeof(dir), "%s", env);
	else if (!mfs_cache_path("opencl", dir, sizeof(dir)))
		return NULL;
	return dir;
}

/* 64-bit FNV-1a over everything that changes the binary. */
static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h ^ 0xff; /* separator so "ab"+"c" != "a"+"bc" */
}

static void cache_path(mfs_ocl_device *d, const char *source, const char *options,
		       char *path, size_t size)
{
	char driver[128] = "", version[128] = "";
	const char *dir = cache_dir();
	uint64_t h = 1469598103934665603ull;

	clGetDeviceInfo(d->device, CL_DRIVER_VERSION, sizeof(driver), driver, NULL);
	clGetDeviceInfo(d->device, CL_DEVICE_VERSION, sizeof(version), version, NULL);
	h = fnv1a(h, d->name);
	h = fnv1a(h, driver);
	h = fnv1a(h, version);
	h = fnv1a(h, options);
	h = fnv1a(h, source);
	if (!dir) {
		path[0] = '\0';
		return;
	}
	snprintf(path, size, "%s/%016" PRIx64 ".bin", dir, h);
}

static unsigned char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long n;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

/* Try the cache; returns a built program or NULL. */
static cl_program load_cached(mfs_ocl_device *d, const char *path, const char *options)
{
	size_t len = 0;
	unsigned char *bin = path[0] ? read_all(path, &len) : NULL;
	cl_int status, bin_status;
	cl_program prog;

	if (!bin)
		return NULL;
	prog = clCreateProgramWithBinary(d->context, 1, &d->device, &len,
					 (const unsigned char **)&bin, &bin_status, &status);
	free(bin);
	if (status != CL_SUCCESS || bin_status != CL_SUCCESS)
		return NULL;
	if (clBuildProgram(prog, 1, &d->device, options, NULL, NULL) != CL_SUCCESS) {
		clReleaseProgram(prog);
		return NULL;
	}
	return prog;
}

static void store_cached(mfs_ocl_device *d, const char *path, cl_program prog)
{
	size_t len = 0;
	unsigned char *bin;
	char tmp[1100];
	FILE *f;

	(void)d;
	if (!path[0] || clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(len), &len,
					 NULL) != CL_SUCCESS || len == 0)
		return;
	bin = malloc(len);
	if (!bin)
		return;
	if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(bin), &bin, NULL) == CL_SUCCESS) {
		char dir[1024];
		snprintf(dir, sizeof(dir), "%s", path);
		*strrchr(dir, '/') = '\0';
		/* Write then rename: concurrent loaders never read half a file. */
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
		if (mfs_make_dirs(dir) == 0 && (f = fopen(tmp, "wb"))) {
			bool ok = fwrite(bin, 1, len, f) == len;
			ok &= fclose(f) == 0;
			if (!ok || rename(tmp, path) != 0)
				unlink(tmp);
		}
	}
	free(bin);
}

int mfs_ocl_build(mfs_ocl_device *d, const char *label, const char *source,
		  const char *options, cl_program *out, mfs_error *err)
{
	char path[1024];
	cl_int status;
	cl_program prog;

	if (!options)
		options = "";
	cache_path(d, source, options, path, sizeof(path));
	prog = load_cached(d, path, options);
	if (prog) {
		*out = prog;
		return 0;
	}
	prog = clCreateProgramWithSource(d->context, 1, &source, NULL, &status);
	if (status != CL_SUCCESS)
		return mfs_fail(err, EIO, "OpenCL program %s: %s", label, mfs_ocl_strerror(status));
	status = clBuildProgram(prog, 1, &d->device, options, NULL, NULL);
	if (status != CL_SUCCESS) {
		char log[768] = "";
		clGetProgramBuildInfo(prog, d->device, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1,
				      log, NULL);
		log[sizeof(log) - 1] = '\0';
		for (char *c = log; *c; c++)
			if (*c == '\n')
				*c = ' ';
		clReleaseProgram(prog);
		return mfs_fail(err, EIO, "OpenCL program %s failed to build on %s: %s: %s",
				label, d->name, mfs_ocl_strerror(status), log);
	}
	store_cached(d, path, prog);
	*out = prog;
	return 0;
}
