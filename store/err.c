/* err.c — errno names and the id rule, as runstore.h gives them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runstore.h"
#include "rs_util.h"

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
