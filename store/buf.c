/* buf.c — rs_buf, the project's one growable byte buffer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "runstore.h"

char rs_buf_empty[1];

int rs_buf_grow(rs_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return -ENOMEM;
    size_t need = b->len + extra + 1;
    if (need <= b->alloc)
        return 0;
    size_t alloc = b->alloc ? b->alloc : 64;
    while (alloc < need)
        alloc = alloc < SIZE_MAX / 2 ? alloc * 2 : need;
    char *p = realloc(b->alloc ? b->buf : NULL, alloc);
    if (!p)
        return -ENOMEM;
    if (!b->alloc)
        p[0] = '\0';
    b->buf = p;
    b->alloc = alloc;
    return 0;
}

int rs_buf_add(rs_buf *b, const void *data, size_t len)
{
    int rc = rs_buf_grow(b, len);
    if (rc)
        return rc;
    memcpy(b->buf + b->len, data, len);
    b->len += len;
    b->buf[b->len] = '\0';
    return 0;
}

int rs_buf_addstr(rs_buf *b, const char *s)
{
    return rs_buf_add(b, s, strlen(s));
}

int rs_buf_addch(rs_buf *b, char c)
{
    return rs_buf_add(b, &c, 1);
}

int rs_buf_addf(rs_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -EINVAL;
    int rc = rs_buf_grow(b, (size_t)n);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void rs_buf_reset(rs_buf *b)
{
    b->len = 0;
    if (b->alloc)
        b->buf[0] = '\0';
}

void rs_buf_release(rs_buf *b)
{
    if (b->alloc)
        free(b->buf);
    b->buf = rs_buf_empty;
    b->len = 0;
    b->alloc = 0;
}

char *rs_buf_detach(rs_buf *b, size_t *len)
{
    char *p = b->alloc ? b->buf : calloc(1, 1);
    if (len)
        *len = p ? b->len : 0;
    b->buf = rs_buf_empty;
    b->len = 0;
    b->alloc = 0;
    return p;
}

void rs_buf_remove_front(rs_buf *b, size_t n)
{
    if (n >= b->len) {
        rs_buf_reset(b);
        return;
    }
    memmove(b->buf, b->buf + n, b->len - n);
    b->len -= n;
    b->buf[b->len] = '\0';
}

int rs_buf_add_json_string(rs_buf *b, const char *s, size_t len)
{
    if (rs_utf8_valid(s, len))
        return rs_json_quote(b, s, len);
    rs_buf clean = RS_BUF_INIT;
    int rc = 0;
    for (size_t i = 0; !rc && i < len;) {
        size_t n = 1;
        while (n <= 4 && i + n <= len && !rs_utf8_valid(s + i, n))
            n++;
        if (n <= 4 && i + n <= len) {
            rc = rs_buf_add(&clean, s + i, n);
            i += n;
        } else {
            rc = rs_buf_addstr(&clean, "\xef\xbf\xbd");
            i++;
        }
    }
    if (!rc)
        rc = rs_json_quote(b, clean.buf, clean.len);
    rs_buf_release(&clean);
    return rc;
}
