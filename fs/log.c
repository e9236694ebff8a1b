/* log.c — log lines to a file, stderr or syslog. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "runstore.h"
#include "rs_util.h"

/* Where lines go: set by rfs_log_open and rfs_log_daemonised while the process has one
 * thread (before the session starts), only read after, so they need no lock. */
static int use_syslog;
static int use_stderr = 1;
static int log_fd = -1;

int rfs_log_open(const char *file)
{
    if (!file)
        return 0;
    log_fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (log_fd < 0) {
        int e = errno;
        fprintf(stderr, "runfs: --log %s: %s\n", file, strerror(e));
        return -e;
    }
    return 0;
}

void rfs_log_daemonised(void)
{
    use_stderr = 0;
    if (access("/dev/log", W_OK) == 0) {
        openlog("runfs", LOG_PID, LOG_DAEMON);
        use_syslog = 1;
    }
}

void rfs_log(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    (void)rs_vfmt(msg, sizeof msg, fmt, ap); /* a longer message is kept cut, marked */
    va_end(ap);
    if (use_syslog)
        syslog(LOG_NOTICE, "%s", msg);
    if (use_stderr)
        fprintf(stderr, "runfs: %s\n", msg);
    if (log_fd < 0)
        return;
    char line[1200], when[32];
    time_t secs = (time_t)(rs_clock_ns(CLOCK_REALTIME) / 1000000000LL);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int n = rs_fmt(line, sizeof line, "%s runfs[%ld]: %s\n", when, (long)getpid(), msg);
    if (n < 0)
        return;
    /* One write() per line: O_APPEND keeps the lines of concurrent threads whole. */
    if (write(log_fd, line, (size_t)n) < 0)
        return;
}
