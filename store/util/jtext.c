/* jtext.c — JSON string text: the project's one quoter and one string scanner. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jtext.h"
#include "rs_util.h"

int rs_buf_add_json_string(rs_buf *out, const char *s, size_t len)
{
    int rc = rs_buf_grow(out, len + 2);
    if (rc)
        return rc;
    const u8 *p = (const u8 *)s, *end = p + len;
    size_t start = out->len, at = start;
    out->buf[at++] = '"';
    for (;;) {
        size_t n = plain_run(p, end);
        memcpy(out->buf + at, p, n);
        at += n;
        p += n;
        if (p >= end)
            break;
        int cls = str_class[*p];
        if (cls >= C_U2) {
            size_t k = utf8_seq(p, end, cls);
            if (k) {
                memcpy(out->buf + at, p, k);
                at += k;
                p += k;
                continue;
            }
        }
        /* An escape or a replacement: up to 6 bytes for 1 input byte. */
        rs_buf_setlen(out, at);
        if ((rc = rs_buf_grow(out, (size_t)(end - p) + 8))) {
            rs_buf_setlen(out, start);
            return rc;
        }
        if (cls == C_QUOTE || cls == C_BSLASH) {
            out->buf[at++] = '\\';
            out->buf[at++] = (char)*p++;
        } else if (cls == C_CTRL) {
            at += put_ctrl(out->buf + at, *p++);
        } else {
            p += utf8_bad_len(p, end);
            memcpy(out->buf + at, "\xef\xbf\xbd", 3);
            at += 3;
        }
    }
    out->buf[at++] = '"';
    rs_buf_setlen(out, at);
    return 0;
}

int rs_json_string_plain(const char *s, size_t len)
{
    const u8 *p = (const u8 *)s, *end = p + len;
    for (;;) {
        p += plain_run(p, end);
        if (p >= end)
            return 1;
        int cls = str_class[*p];
        size_t k = cls >= C_U2 ? utf8_seq(p, end, cls) : 0;
        if (!k)
            return 0;
        p += k;
    }
}

/* memchr finds the candidate quotes. */
const char *rs_quote_end(const char *p, const char *end)
{
    while (p < end) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            return NULL;
        const char *b = q;
        while (b > p && b[-1] == '\\')
            b--;
        if (((q - b) & 1) == 0)
            return q + 1;
        p = q + 1;
    }
    return NULL;
}
