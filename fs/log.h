/* log.h — the daemon's log lines: stderr in the foreground, syslog once daemonised. */
#ifndef RFS_LOG_H
#define RFS_LOG_H

/* One line, prefixed "runfs: " on stderr. */
void rfs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From now on, lines go to syslog (the daemon has no terminal). */
void rfs_log_to_syslog(void);

#endif
