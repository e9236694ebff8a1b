/* log.h — the daemon's log lines: to --log FILE when given, stderr in the foreground, syslog
 * once daemonised where the host has one. */
#ifndef RFS_LOG_H
#define RFS_LOG_H

/* One line, prefixed "runfs: " on stderr, with a UTC time in the file. */
void rfs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Open the log file (before the daemon changes directory); -errno with a message printed. */
int rfs_log_open(const char *file);
/* Going to the background: stderr is gone; syslog if /dev/log exists (containers have none,
 * where --log keeps the lines). */
void rfs_log_daemonised(void);

#endif
