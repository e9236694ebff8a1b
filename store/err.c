/* err.c — error reasons beside errno codes, and id checks shared by every layer. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runstore.h"

int rs_err_set(rs_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

const char *rs_errno_name(int code)
{
    switch (code < 0 ? -code : code) {
    case 0: return "OK";
    case EINVAL: return "EINVAL";
    case EMSGSIZE: return "EMSGSIZE";
    case EEXIST: return "EEXIST";
    case EPERM: return "EPERM";
    case EROFS: return "EROFS";
    case ENOENT: return "ENOENT";
    case ENOSPC: return "ENOSPC";
    case ENOMEM: return "ENOMEM";
    case EIO: return "EIO";
    case EBUSY: return "EBUSY";
    case EAGAIN: return "EAGAIN";
    case EACCES: return "EACCES";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ENOSYS: return "ENOSYS";
    case EBADF: return "EBADF";
    case EINTR: return "EINTR";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    default: return "EIO";
    }
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
