/* device_router.h - which engine runs a model (SPEC.md section 9).
 *
 *   instance_group kind   --device     engine
 *   KIND_CPU              any          CPU
 *   KIND_GPU              any          OpenCL (a load error if no device)
 *   KIND_AUTO / none      cpu          CPU
 *   KIND_AUTO / none      opencl       OpenCL (a load error if no device)
 *   KIND_AUTO / none      auto         both timed on a warm-up input, the
 *                                      faster kept (and stored)
 *
 * The warm-up input is the config's first model_warmup sample when it has
 * one (warmup.h); otherwise it is made up (floats 0.5, other types zeros,
 * variable dims 1).  With auto and no OpenCL device, the CPU is chosen
 * and the note says why; so it is when the made-up warm-up input cannot
 * run (an input that is a shape or a count): that never fails a load.  A
 * given sample that fails on the CPU does fail it (the sample is the
 * user's, and the registry would run it anyway).
 * The CPU is timed first, then OpenCL, stopped as soon as it is clearly
 * slower (device_router.c K_RUN, K_SETUP; engine_trial.h).  With
 * defer_trial (the daemon) a model with no stored choice is not timed
 * during its load: it is placed on the CPU with trial_pending, and the
 * daemon loads it again without defer_trial once no load is waiting
 * (registry.h mfs_registry_time_next), so a start is not held up by
 * trials and trials never run beside each other or beside loads.  The choice
 * is stored per model file, config, device and batch size
 * (route_cache.h) and reused by later loads: the note then says
 * "cached".
 * The OpenCL device (--opencl-device selects it) is opened once per process
 * and shared by every model and instance (each execution context has its
 * own queue).  Used by the daemon's registry and by `modelfs run`.
 */
#ifndef MFS_DEVICE_ROUTER_H
#define MFS_DEVICE_ROUTER_H

#include "config.h"
#include "engine.h"
#include "error.h"

/* --device: which engine a KIND_AUTO model gets. */
typedef enum mfs_device_choice {
	MFS_DEVICE_AUTO = 0,
	MFS_DEVICE_CPU,
	MFS_DEVICE_OPENCL,
} mfs_device_choice;

typedef struct mfs_route_opts {
	mfs_device_choice device;      /* --device (for KIND_AUTO configs) */
	const char *opencl_device;     /* --opencl-device; NULL = first GPU */
	bool defer_trial;              /* KIND_AUTO with no stored choice: the CPU
					* now, trial_pending set (the daemon times
					* the engines after its loads) */
} mfs_route_opts;

typedef struct mfs_placement {
	mfs_backend *backend;          /* borrowed (process-wide) */
	char device[16];               /* "cpu" or "opencl" */
	char opencl_name[192];         /* the OpenCL device when one was used */
	const char *kind;              /* "KIND_AUTO", "KIND_CPU", "KIND_GPU" */
	bool measured;                 /* auto: both engines timed */
	bool cached;                   /* auto: the stored choice of an earlier trial */
	bool trial_pending;            /* auto, defer_trial: on the CPU until timed */
	double cpu_ms, opencl_ms;      /* warm-up run medians; -1 = not run */
	char note[320];                /* "auto: cpu 1.234 ms, opencl 5.678 ms" */
} mfs_placement;

/* Choose the engine for graph under cfg's instance_group.  model_path:
 * the model file (its bytes key the stored choice; NULL: none is kept).
 * sample: the
 * engine's inputs (graph order) to time on, NULL to make some up;
 * sample_name names it in the note.  Errors (no OpenCL device for
 * KIND_GPU, a given sample that fails on the CPU) name the reason; the
 * caller prefixes the model. */
int mfs_route(const mfs_graph *graph, const mfs_model_config *cfg,
	      const mfs_route_opts *opts, const char *model_path,
	      const mfs_tensor *sample, const char *sample_name,
	      mfs_placement *out, mfs_error *err);

/* The shared OpenCL backend for selector (opened on first use). */
int mfs_router_opencl(const char *selector, mfs_backend **out, mfs_error *err);

/* The shared OpenCL backends opened so far, and each one's description
 * (ocl_backend.h mfs_opencl_info) handed to fn under the router's lock. */
struct mfs_opencl_info;
int mfs_router_opencl_count(void);
void mfs_router_opencl_each(void (*fn)(const struct mfs_opencl_info *info, void *arg), void *arg);

/* Close the shared OpenCL backends (at exit, after every exec is freed). */
void mfs_router_shutdown(void);

#endif
