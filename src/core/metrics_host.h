/* metrics_host.h - the host's part of MOUNT/.metrics, as Triton's CPU
 * and GPU metrics (SPEC.md section 7):
 *
 *   nv_cpu_utilization          all cores, since the page was last read
 *                               (since boot the first time), 0.0 - 1.0
 *   nv_cpu_memory_total_bytes   MemTotal of /proc/meminfo
 *   nv_cpu_memory_used_bytes    MemTotal - MemAvailable
 *   nv_gpu_memory_total_bytes   each OpenCL device the daemon opened
 *                               (CL_DEVICE_GLOBAL_MEM_SIZE); label
 *                               gpu_uuid holds its "platform / device"
 *                               name: OpenCL 1.2 gives no UUID
 *
 * OpenCL tells neither a device's utilization nor its used memory, so
 * nv_gpu_utilization and nv_gpu_memory_used_bytes are not given.  A
 * /proc file that cannot be read leaves its gauge out.
 */
#ifndef MFS_METRICS_HOST_H
#define MFS_METRICS_HOST_H

/* The families above as Prometheus text (malloc'd); NULL on
 * out-of-memory. */
char *mfs_metrics_host_text(void);

#endif
