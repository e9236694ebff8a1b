/* log.c — log lines to stderr or syslog. */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

#include "log.h"

static int use_syslog;

void rfs_log_to_syslog(void)
{
    openlog("runfs", LOG_PID, LOG_DAEMON);
    use_syslog = 1;
}

void rfs_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (use_syslog) {
        vsyslog(LOG_NOTICE, fmt, ap);
    } else {
        fputs("runfs: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
}
