/* buf.c — rs_buf, the project's one growable byte buffer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_util.h"

char rs_buf_empty[1];

int rs_array_grow(void *items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : (size < 64 ? 64 / size : 1);
    while (n < need)
        n = n <= SIZE_MAX / 2 ? n * 2 : need;
    if (n > SIZE_MAX / size)
        return -ENOMEM;
    void *old;
    memcpy(&old, items, sizeof old);
    void *p = realloc(old, n * size);
    if (!p)
        return -ENOMEM;
    memcpy(items, &p, sizeof p);
    *cap = n;
    return 0;
}

int rs_buf_grow(rs_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return -ENOMEM;
    /* Before the first allocation buf is the shared rs_buf_empty, never realloc'd. */
    char *p = b->alloc ? b->buf : NULL;
    size_t alloc = b->alloc;
    int rc = rs_array_grow(&p, &alloc, b->len + extra + 1, 1);
    if (rc)
        return rc;
    if (!b->alloc)
        p[0] = '\0';
    b->buf = p;
    b->alloc = alloc;
    return 0;
}

void rs_buf_setlen(rs_buf *b, size_t len)
{
    b->len = len;
    if (b->alloc)
        b->buf[len] = '\0';
}

int rs_buf_add(rs_buf *b, const void *data, size_t len)
{
    /* Most adds fit the room there is: only the others grow. */
    int rc = b->alloc && len < b->alloc - b->len ? 0 : rs_buf_grow(b, len);
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
    if (b->alloc && b->alloc - b->len > 1) {
        b->buf[b->len++] = c;
        b->buf[b->len] = '\0';
        return 0;
    }
    return rs_buf_add(b, &c, 1);
}

int rs_buf_addf(rs_buf *b, const char *fmt, ...)
{
    /* Formatted into the room there is, and only when it did not fit a second time (the
     * glance documents format numbers by the thousand: a second formatting each was a
     * fifth of a run's rendering). */
    size_t room = b->alloc ? b->alloc - b->len : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(room ? b->buf + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < room) {
        b->len += (size_t)n;
        return 0;
    }
    /* What did not fit was cut into the room: the buffer's end is its own again. */
    if (room)
        b->buf[b->len] = '\0';
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
    rs_buf_setlen(b, 0);
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
    rs_buf_setlen(b, b->len - n);
}

int rs_vfmt(char *dst, size_t cap, const char *fmt, va_list ap)
{
    if (cap == 0)
        return -EOVERFLOW;
    int n = vsnprintf(dst, cap, fmt, ap);
    if (n < 0) {
        dst[0] = '\0';
        return -EINVAL;
    }
    if ((size_t)n < cap)
        return n;
    /* Mark the cut where it is, so that a kept reason cannot pass for the whole text. */
    size_t end = cap - 1, dots = end < 3 ? end : 3;
    memset(dst + end - dots, '.', dots);
    return -EOVERFLOW;
}

int rs_fmt(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = rs_vfmt(dst, cap, fmt, ap);
    va_end(ap);
    return rc;
}

const char rs_hex_digits[16] = "0123456789abcdef";

void rs_hex(char *dst, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        *dst++ = rs_hex_digits[p[i] >> 4];
        *dst++ = rs_hex_digits[p[i] & 15];
    }
    *dst = '\0';
}

int rs_buf_add_hex(rs_buf *out, const void *data, size_t n)
{
    if (n > (SIZE_MAX - 1) / 2 || rs_buf_grow(out, 2 * n))
        return -ENOMEM;
    rs_hex(out->buf + out->len, data, n);
    rs_buf_setlen(out, out->len + 2 * n);
    return 0;
}
