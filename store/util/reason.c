/* reason.c — error reasons beside errno codes, and the clock. */
#include <stdarg.h>
#include <time.h>

#include "rs_util.h"

int rs_err_set(rs_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        (void)rs_vfmt(err->msg, sizeof err->msg, fmt, ap); /* a reason: a cut is marked */
        va_end(ap);
        err->code = code;
    }
    return code;
}

int64_t rs_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
