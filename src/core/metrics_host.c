/* metrics_host.c - see metrics_host.h. */
#include "metrics_host.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_router.h"
#include "ocl_backend.h"

/* The previous /proc/stat reading, for the utilization since then. */
static pthread_mutex_t cpu_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t prev_busy, prev_total;

/* Busy and total jiffies of the "cpu" line of /proc/stat. */
static bool read_cpu(uint64_t *busy, uint64_t *total)
{
	unsigned long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int n;
	if (!f)
		return false;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
	fclose(f);
	if (n < 4)
		return false;
	/* user nice system idle iowait irq softirq steal (guest is in user) */
	*total = 0;
	for (int i = 0; i < 8 && i < n; i++)
		*total += v[i];
	*busy = *total - v[3] - (n > 4 ? v[4] : 0);
	return true;
}

static bool cpu_utilization(double *out)
{
	uint64_t busy, total;
	if (!read_cpu(&busy, &total))
		return false;
	pthread_mutex_lock(&cpu_lock);
	uint64_t db = busy - prev_busy, dt = total - prev_total;
	if (total <= prev_total) {   /* read twice within a jiffy */
		db = busy;
		dt = total;
	}
	prev_busy = busy;
	prev_total = total;
	pthread_mutex_unlock(&cpu_lock);
	*out = dt ? (double)db / (double)dt : 0.0;
	return true;
}

/* MemTotal and MemAvailable in bytes. */
static bool read_meminfo(uint64_t *total, uint64_t *avail)
{
	char line[256];
	unsigned long long kb;
	int found = 0;
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return false;
	while (found < 2 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
			*total = kb * 1024;
			found++;
		} else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
			*avail = kb * 1024;
			found++;
		}
	}
	fclose(f);
	return found == 2;
}

static void gpu_line(const mfs_opencl_info *info, void *arg)
{
	FILE *f = arg;
	fprintf(f, "nv_gpu_memory_total_bytes{gpu_uuid=\"");
	for (const char *c = info->name; *c; c++)   /* label value escapes */
		fprintf(f, *c == '"' || *c == '\\' ? "\\%c" : *c == '\n' ? " " : "%c", *c);
	fprintf(f, "\"} %llu\n", (unsigned long long)info->global_mem_bytes);
}

char *mfs_metrics_host_text(void)
{
	char *buf = NULL;
	size_t len = 0;
	double util;
	uint64_t total = 0, avail = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	if (cpu_utilization(&util))
		fprintf(f, "# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0]\n"
			   "# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization %.6f\n", util);
	if (read_meminfo(&total, &avail))
		fprintf(f, "# HELP nv_cpu_memory_total_bytes CPU total memory (RAM), in bytes\n"
			   "# TYPE nv_cpu_memory_total_bytes gauge\nnv_cpu_memory_total_bytes %llu\n"
			   "# HELP nv_cpu_memory_used_bytes CPU used memory (RAM), in bytes\n"
			   "# TYPE nv_cpu_memory_used_bytes gauge\nnv_cpu_memory_used_bytes %llu\n",
			(unsigned long long)total,
			(unsigned long long)(total > avail ? total - avail : 0));
	if (mfs_router_opencl_count() > 0) {
		fprintf(f, "# HELP nv_gpu_memory_total_bytes GPU total memory, in bytes\n"
			   "# TYPE nv_gpu_memory_total_bytes gauge\n");
		mfs_router_opencl_each(gpu_line, f);
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
