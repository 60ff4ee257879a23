/* log.h - one logger for the daemon and the tools: stderr, or syslog once
 * daemonized.  Thread-safe; each call writes one line. */
#ifndef MFS_LOG_H
#define MFS_LOG_H

typedef enum mfs_log_level {
	MFS_LOG_OFF = -1,   /* for mfs_log_set_level only: nothing is logged */
	MFS_LOG_ERROR = 0,
	MFS_LOG_WARN,
	MFS_LOG_INFO,
	MFS_LOG_DEBUG,
} mfs_log_level;

void mfs_log_set_level(mfs_log_level level);
/* "error|warn|info|debug" -> level; -1 when unknown. */
int mfs_log_level_parse(const char *name);
void mfs_log_use_syslog(int on);
void mfs_log(mfs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define mfs_log_error(...) mfs_log(MFS_LOG_ERROR, __VA_ARGS__)
#define mfs_log_warn(...) mfs_log(MFS_LOG_WARN, __VA_ARGS__)
#define mfs_log_info(...) mfs_log(MFS_LOG_INFO, __VA_ARGS__)
#define mfs_log_debug(...) mfs_log(MFS_LOG_DEBUG, __VA_ARGS__)

#endif
