/* linebuf.c — see linebuf.h. */
#include <errno.h>
#include <string.h>

#include "linebuf.h"
#include "rs_util.h"

/* 1 when a '\n'-terminated line in s[0..len) (each line ends in '\n') is over max bytes. */
static int long_line(const char *s, size_t len, size_t max)
{
    const char *p = s, *end = s + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            nl = end;
        if ((size_t)(nl - p) > max)
            return 1;
        p = nl + 1;
    }
    return 0;
}

int rfs_linebuf_feed(rs_buf *pending, int *skipping, size_t max, const char *buf, size_t size,
                     rfs_lines *out)
{
    out->data = buf;
    out->len = 0;
    out->tail = buf + size;
    out->tail_len = 0;
    out->joined = (rs_buf)RS_BUF_INIT;
    const char *data = buf;
    size_t len = size;
    if (*skipping) {
        const char *nl = size ? memchr(buf, '\n', size) : NULL;
        if (!nl)
            return 0; /* still inside the long line: dropped */
        data = nl + 1;
        len = size - (size_t)(data - buf);
    }
    const char *last_nl = len ? memrchr(data, '\n', len) : NULL;
    size_t tail = last_nl ? len - (size_t)(last_nl + 1 - data) : len;
    if (!last_nl) {
        if (pending->len + tail > max) {
            /* The partial line crosses the limit: refuse this write, skip the line. */
            rs_buf_reset(pending);
            *skipping = 1;
            return -EMSGSIZE;
        }
        if (rs_buf_add(pending, data, len))
            return -ENOMEM;
        *skipping = 0;
        return 0;
    }
    size_t head = (size_t)(last_nl + 1 - data);
    /* Every line of the write is checked: the first continues the pending one. */
    const char *first_nl = memchr(data, '\n', head);
    const char *rest = first_nl + 1;
    if (pending->len + (size_t)(first_nl - data) > max ||
        long_line(rest, head - (size_t)(rest - data), max) || tail > max) {
        /* The write is refused whole; when the last, unterminated line is the long one,
         * its remaining bytes are dropped up to its newline. */
        rs_buf_reset(pending);
        *skipping = tail > max;
        return -EMSGSIZE;
    }
    if (pending->len) {
        if (rs_buf_add(&out->joined, pending->buf, pending->len) ||
            rs_buf_add(&out->joined, data, head)) {
            rs_buf_release(&out->joined);
            return -ENOMEM;
        }
        out->data = out->joined.buf;
        out->len = out->joined.len;
    } else {
        out->data = data;
        out->len = head;
    }
    rs_buf_reset(pending);
    *skipping = 0;
    out->tail = last_nl + 1;
    out->tail_len = tail;
    return 0;
}

int rfs_lines_done(rs_buf *pending, rfs_lines *out, int committed)
{
    int rc = 0;
    rs_buf_reset(pending);
    if (committed && out->tail_len && rs_buf_add(pending, out->tail, out->tail_len))
        rc = -ENOMEM;
    rs_buf_release(&out->joined);
    out->len = out->tail_len = 0;
    return rc;
}
