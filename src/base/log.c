/* log.c - see log.h. */
#include "log.h"

#include "error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <unistd.h>

static mfs_log_level current_level = MFS_LOG_INFO;
static mfs_log_format current_format = MFS_LOG_FORMAT_DEFAULT;
static int use_syslog;
static int log_fd = -1;        /* --log-file; -1: stderr */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = { "error", "warn", "info", "debug" };

void mfs_log_set_level(mfs_log_level level) { current_level = level; }
void mfs_log_set_format(mfs_log_format format) { current_format = format; }

int mfs_log_level_parse(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

int mfs_log_format_parse(const char *name)
{
	if (strcmp(name, "default") == 0)
		return MFS_LOG_FORMAT_DEFAULT;
	if (strcasecmp(name, "ISO8601") == 0)
		return MFS_LOG_FORMAT_ISO8601;
	return -1;
}

void mfs_log_use_syslog(int on)
{
	use_syslog = on;
	if (on)
		openlog("modelfs", LOG_PID, LOG_DAEMON);
}

void mfs_log_use_fd(int fd)
{
	log_fd = fd;
}

void mfs_log_format_line(char *out, size_t size, mfs_log_level level,
			 const struct timespec *ts, const char *msg)
{
	struct tm tm;
	char stamp[48];
	long ms = ts->tv_nsec / 1000000;
	if (current_format == MFS_LOG_FORMAT_ISO8601) {
		gmtime_r(&ts->tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(out, size, "%s.%03ldZ %c modelfs[%d] %s", stamp, ms,
			 "EWID"[level], (int)getpid(), msg);
		return;
	}
	char zone[8];
	localtime_r(&ts->tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	snprintf(out, size, "%s.%03ld %s modelfs %s: %s", stamp, ms, zone, level_names[level], msg);
}

void mfs_log(mfs_log_level level, const char *fmt, ...)
{
	static const int syslog_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char raw[2048], line[2048], out[2200];
	va_list ap;

	if (level > current_level)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* Names in the line may come from clients and model files: one call,
	 * one line, whatever they hold. */
	mfs_escape(line, sizeof(line), raw);
	if (use_syslog && log_fd < 0) {
		syslog(syslog_prio[level], "%s", line);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	mfs_log_format_line(out, sizeof(out) - 1, level, &ts, line);
	size_t n = strlen(out);
	out[n++] = '\n';
	/* One write per line under a lock keeps lines from interleaving. */
	pthread_mutex_lock(&log_lock);
	if (log_fd >= 0) {
		ssize_t w = write(log_fd, out, n);
		(void)w;
	} else {
		fwrite(out, 1, n, stderr);
		fflush(stderr);
	}
	pthread_mutex_unlock(&log_lock);
}
