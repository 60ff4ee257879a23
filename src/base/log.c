#include "log.h"

#include "error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static mfs_log_level current_level = MFS_LOG_INFO;
static int use_syslog;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = { "error", "warn", "info", "debug" };

void mfs_log_set_level(mfs_log_level level) { current_level = level; }

int mfs_log_level_parse(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

void mfs_log_use_syslog(int on)
{
	use_syslog = on;
	if (on)
		openlog("modelfs", LOG_PID, LOG_DAEMON);
}

void mfs_log(mfs_log_level level, const char *fmt, ...)
{
	static const int syslog_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char raw[2048], line[2048];
	va_list ap;

	if (level > current_level)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* Names in the line may come from clients and model files: one call,
	 * one line, whatever they hold. */
	mfs_escape(line, sizeof(line), raw);
	if (use_syslog) {
		syslog(syslog_prio[level], "%s", line);
		return;
	}
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	/* One fprintf per line under a lock keeps lines from interleaving. */
	pthread_mutex_lock(&log_lock);
	fprintf(stderr, "%s.%03ld modelfs %s: %s\n", stamp, ts.tv_nsec / 1000000,
		level_names[level], line);
	pthread_mutex_unlock(&log_lock);
}
