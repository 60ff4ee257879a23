/* log.h - one logger for the daemon and the tools: stderr, or syslog once
 * daemonized, or a file (--log-file).  Thread-safe; each call writes one
 * line, stamped with the date, the time and the zone (--log-format). */
#ifndef MFS_LOG_H
#define MFS_LOG_H

#include <stddef.h>
#include <time.h>

typedef enum mfs_log_level {
	MFS_LOG_OFF = -1,   /* for mfs_log_set_level only: nothing is logged */
	MFS_LOG_ERROR = 0,
	MFS_LOG_WARN,
	MFS_LOG_INFO,
	MFS_LOG_DEBUG,
} mfs_log_level;

/* Triton's --log-format. */
typedef enum mfs_log_format {
	MFS_LOG_FORMAT_DEFAULT = 0,   /* 2026-11-28 14:03:07.123 +0100 modelfs info: MESSAGE (local) */
	MFS_LOG_FORMAT_ISO8601,       /* 2026-11-28T13:03:07.123Z I modelfs[PID] MESSAGE (UTC) */
} mfs_log_format;

void mfs_log_set_level(mfs_log_level level);
/* "error|warn|info|debug" -> level; -1 when unknown. */
int mfs_log_level_parse(const char *name);
/* "default" | "ISO8601" (Triton's spelling; "iso8601" too) -> format; -1
 * when unknown. */
int mfs_log_format_parse(const char *name);
void mfs_log_set_format(mfs_log_format format);
void mfs_log_use_syslog(int on);
/* Log to fd from now on instead of stderr or syslog (the logger owns it
 * then).  Set once, before threads log. */
void mfs_log_use_fd(int fd);
/* The line for level and message at time ts, as the log writes it (no
 * newline); for the tests. */
void mfs_log_format_line(char *out, size_t size, mfs_log_level level,
			 const struct timespec *ts, const char *msg);
void mfs_log(mfs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define mfs_log_error(...) mfs_log(MFS_LOG_ERROR, __VA_ARGS__)
#define mfs_log_warn(...) mfs_log(MFS_LOG_WARN, __VA_ARGS__)
#define mfs_log_info(...) mfs_log(MFS_LOG_INFO, __VA_ARGS__)
#define mfs_log_debug(...) mfs_log(MFS_LOG_DEBUG, __VA_ARGS__)

#endif
