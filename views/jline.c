/* jline.c — see jline.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jline.h"
#include "rs_util.h"

/* Just past the closing quote of the string whose body starts at p; end when it never closes. */
static const char *string_close(const char *p, const char *end)
{
    const char *q = rs_quote_end(p, end);
    return q ? q : end;
}

size_t rfs_jl_value_len(const char *v, const char *end)
{
    const char *p = v;
    if (*p == '"')
        return (size_t)(string_close(p + 1, end) - v);
    if (*p != '{' && *p != '[') {
        while (p < end && *p != ',' && *p != '}' && *p != ']')
            p++;
        return (size_t)(p - v);
    }
    for (int depth = 0; p < end; p++) {
        if (*p == '"')
            p = string_close(p + 1, end) - 1;
        else if (*p == '{' || *p == '[')
            depth++;
        else if ((*p == '}' || *p == ']') && --depth == 0)
            return (size_t)(p + 1 - v);
    }
    return (size_t)(end - v);
}

int rfs_jl_next(rfs_span c, const char **at, rfs_span *key, rfs_span *val)
{
    const char *p = *at, *end = c.p + c.n;
    p += *p == ',' || *p == '{' || *p == '[';
    if (p >= end || *p == '}' || *p == ']')
        return 0;
    if (c.p[0] == '{') {
        key->p = p;
        key->n = rfs_jl_value_len(p, end);
        p += key->n + 1;
    }
    val->p = p;
    val->n = rfs_jl_value_len(p, end);
    *at = p + val->n;
    return 1;
}

/* Whether key (a literal, with its quotes) is name: by the first letter before the length,
 * as most keys a walk meets are not the ones looked for. */
static int key_is(rfs_span key, const char *name)
{
    return key.n > 2 && key.p[1] == name[0] && key.n - 2 == strlen(name) &&
           memcmp(key.p + 1, name, key.n - 2) == 0;
}

void rfs_jl_members(rfs_span o, const char *const *names, rfs_span *vals, int n)
{
    rfs_span key, val;
    const char *at = o.p;
    int left = n;
    memset(vals, 0, (size_t)n * sizeof *vals);
    if (!o.p || o.p[0] != '{')
        return;
    while (left && rfs_jl_next(o, &at, &key, &val))
        for (int i = 0; i < n; i++)
            if (!vals[i].p && key_is(key, names[i])) {
                vals[i] = val;
                left--;
                break;
            }
}

size_t rfs_jl_members_len(rfs_span o, const char *const *names, rfs_span *vals, int n)
{
    rfs_span key, val;
    const char *at = o.p;
    memset(vals, 0, (size_t)n * sizeof *vals);
    if (!o.p || !o.n || o.p[0] != '{')
        return o.p && o.n ? rfs_jl_value_len(o.p, o.p + o.n) : 0;
    while (rfs_jl_next(o, &at, &key, &val))
        for (int i = 0; i < n; i++)
            if (!vals[i].p && key_is(key, names[i])) {
                vals[i] = val;
                break;
            }
    /* at is on the last member's end (or the opening brace): the closing brace follows. */
    at += *at == '{';
    return at < o.p + o.n && *at == '}' ? (size_t)(at + 1 - o.p) : o.n;
}

rfs_span rfs_jl_member(rfs_span o, const char *name)
{
    rfs_span v;
    rfs_jl_members(o, &name, &v, 1);
    return v;
}

/* content is the line's first member of that name: a '"' inside a string is escaped, so
 * the bytes ,"content": cannot occur in the short ids and names before it. */
int rfs_jl_body(rfs_span line, const char *const *cn, rfs_span *cv, int nc, const char *const *mn,
                rfs_span *mv, int nm, rfs_span *content, rfs_span *metadata)
{
    static const char ckey[] = ",\"content\":", mkey[] = ",\"metadata\":";
    const char *end = line.p + line.n;
    /* By its comma: the few before it (after the ids and the seq) are cheaper to step
     * over than memmem's set-up is on every row. */
    const char *p = line.p;
    while ((p = memchr(p, ',', (size_t)(end - p))) &&
           ((size_t)(end - p) < sizeof ckey - 1 || memcmp(p, ckey, sizeof ckey - 1) != 0))
        p++;
    if (!p)
        return 0;
    p += sizeof ckey - 1;
    rfs_span rest = {p, (size_t)(end - p)};
    size_t n = nc ? rfs_jl_members_len(rest, cn, cv, nc) : rfs_jl_value_len(p, end);
    *content = (rfs_span){p, n};
    p += n;
    if ((size_t)(end - p) <= sizeof mkey - 1 || memcmp(p, mkey, sizeof mkey - 1) != 0)
        return 0;
    p += sizeof mkey - 1;
    rest = (rfs_span){p, (size_t)(end - p)};
    n = nm ? rfs_jl_members_len(rest, mn, mv, nm) : rfs_jl_value_len(p, end);
    *metadata = (rfs_span){p, n};
    return 1;
}

int rfs_jl_is(rfs_span v, char kind)
{
    return v.p && v.n && v.p[0] == kind;
}

int rfs_jl_text(rs_buf *out, rfs_span s, int one_line)
{
    const char *p = s.p + 1, *end = s.p + s.n - 1;
    int rc = 0;
    while (!rc && p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        if (!bs)
            return rs_buf_add(out, p, (size_t)(end - p));
        if ((rc = rs_buf_add(out, p, (size_t)(bs - p))))
            break;
        char c = bs[1];
        p = bs + 2;
        if (c == 'u') { /* only control characters are \u-escaped */
            c = (char)strtol((char[]){bs[4], bs[5], 0}, NULL, 16);
            p = bs + 6;
        } else if (c != '"' && c != '\\' && c != '/') {
            c = c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r' : '\t';
        }
        rc = one_line && c == '\n'   ? rs_buf_addlit(out, "\\n")
             : one_line && c == '\r' ? 0
                                     : rs_buf_addch(out, c);
    }
    return rc;
}

int rfs_jl_str_is(rfs_span v, const char *s)
{
    size_t n = strlen(s);
    return rfs_jl_is(v, '"') && v.n == n + 2 && memcmp(v.p + 1, s, n) == 0;
}

int rfs_jl_count(rfs_span v, int64_t *out)
{
    if (!v.p || v.n == 0 || v.n > 18)
        return 0;
    int64_t x = 0;
    for (size_t i = 0; i < v.n; i++) {
        if (v.p[i] < '0' || v.p[i] > '9')
            return 0;
        x = x * 10 + (v.p[i] - '0');
    }
    *out = x;
    return 1;
}

rfs_span rfs_jl_line(const rs_record *rec)
{
    rfs_span line = {rec->line, rec->line_len};
    while (line.n && line.p[line.n - 1] == '\n')
        line.n--;
    return line;
}

static int digits(const char *p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -EINVAL;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int rfs_jl_time_us(rfs_span v, int64_t *us)
{
    /* "2026-03-04T05:06:07.123456+00:00" with its quotes: 34 bytes. */
    const char *p = v.p + 1;
    int y, mo, d, h, mi, s, f;
    if (!rfs_jl_is(v, '"') || v.n != 34 || p[4] != '-' || p[7] != '-' || p[10] != 'T' ||
        p[13] != ':' || p[16] != ':' || p[19] != '.' || memcmp(p + 26, "+00:00", 6) != 0 ||
        digits(p, 4, &y) || digits(p + 5, 2, &mo) || digits(p + 8, 2, &d) ||
        digits(p + 11, 2, &h) || digits(p + 14, 2, &mi) || digits(p + 17, 2, &s) ||
        digits(p + 20, 6, &f))
        return -EINVAL;
    int64_t days = days_from_civil(y, mo, d);
    *us = ((days * 24 + h) * 60 + mi) * 60 * INT64_C(1000000) + s * INT64_C(1000000) + f;
    return 0;
}
