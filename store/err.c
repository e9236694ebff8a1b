/* err.c — what every layer shares: error reasons beside errno codes, id checks, the clock. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runstore.h"

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

const char *rs_errno_name(int code)
{
    int e = code < 0 ? -code : code;
    if (e == 0)
        return "OK";
    const char *name = strerrorname_np(e);
    if (name)
        return name;
    /* Not an errno this C library knows: say which number, never pass it off as another. */
    static _Thread_local char unknown[24];
    (void)rs_fmt(unknown, sizeof unknown, "errno %d", e); /* 24 bytes: any int */
    return unknown;
}

int rs_id_valid_n(const char *s, size_t len)
{
    if (len < 1 || len > RS_ID_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int rs_id_valid(const char *s)
{
    return s && rs_id_valid_n(s, strlen(s));
}

int64_t rs_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
