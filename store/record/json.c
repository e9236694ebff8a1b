/* json.c — a strict RFC 8259 scanner that checks JSON text and writes its canonical bytes in
 * one linear pass, plus the small string helpers the encoder needs. No trees: see json.h. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jtext.h"
#include "rs_util.h"

static inline int hexval(u8 c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static inline long hex4(const u8 *p, const u8 *end)
{
    if (end - p < 4)
        return -1;
    int a = hexval(p[0]), b = hexval(p[1]), c = hexval(p[2]), d = hexval(p[3]);
    if ((a | b | c | d) < 0)
        return -1;
    return (a << 12) | (b << 8) | (c << 4) | d;
}

static inline size_t put_utf8(char *o, unsigned long cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* ---- the scanner ---------------------------------------------------------------------- */

typedef struct scan {
    const u8 *start, *p, *end;
    char *o;
    unsigned flags;
    rs_err *err;
} scan;

#define AT(sc) ((size_t)((sc)->p - (sc)->start))

static int fail(scan *sc, const char *what)
{
    if (sc->p >= sc->end)
        return rs_err_set(sc->err, -EINVAL, "invalid JSON at byte %zu: unexpected end of input, %s",
                          AT(sc), what);
    if (*sc->p == 0)
        return rs_err_set(sc->err, -EINVAL, "invalid JSON at byte %zu: NUL byte", AT(sc));
    return rs_err_set(sc->err, -EINVAL, "invalid JSON at byte %zu: %s", AT(sc), what);
}

static inline void skip_ws(scan *sc)
{
    const u8 *p = sc->p, *end = sc->end;
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    sc->p = p;
}

/* A string literal at sc->p (on its '"'), written canonically. */
static int scan_string(scan *sc)
{
    const u8 *p = sc->p + 1, *end = sc->end;
    char *o = sc->o;
    *o++ = '"';
    for (;;) {
        size_t n = plain_run(p, end);
        memcpy(o, p, n);
        o += n;
        p += n;
        if (p >= end) {
            sc->p = p;
            return rs_err_set(sc->err, -EINVAL, "invalid JSON at byte %zu: unterminated string",
                              AT(sc));
        }
        int cls = str_class[*p];
        if (cls == C_QUOTE) {
            *o++ = '"';
            sc->p = p + 1;
            sc->o = o;
            return 0;
        }
        if (cls >= C_U2) {
            size_t k = utf8_seq(p, end, cls);
            if (!k) {
                sc->p = p;
                return rs_err_set(sc->err, -EINVAL, "invalid UTF-8 at byte %zu", AT(sc));
            }
            memcpy(o, p, k);
            o += k;
            p += k;
            continue;
        }
        if (cls == C_CTRL) {
            sc->p = p;
            if (*p == 0)
                return rs_err_set(sc->err, -EINVAL, "NUL byte in a string at byte %zu", AT(sc));
            return rs_err_set(sc->err, -EINVAL,
                              "raw control character 0x%02x in a string at byte %zu", *p, AT(sc));
        }
        /* backslash */
        if (end - p < 2) {
            sc->p = p + 1;
            return rs_err_set(sc->err, -EINVAL, "invalid JSON at byte %zu: unterminated string",
                              AT(sc));
        }
        u8 e = p[1];
        switch (e) {
        case '"':
            *o++ = '\\';
            *o++ = '"';
            p += 2;
            continue;
        case '\\':
            *o++ = '\\';
            *o++ = '\\';
            p += 2;
            continue;
        case '/':
            *o++ = '/';
            p += 2;
            continue;
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            *o++ = '\\';
            *o++ = (char)e;
            p += 2;
            continue;
        case 'u': break;
        default:
            sc->p = p;
            return rs_err_set(sc->err, -EINVAL, "invalid JSON at byte %zu: bad escape '\\%c'",
                              AT(sc), e >= 0x20 && e < 0x7f ? e : '?');
        }
        long cp = hex4(p + 2, end);
        if (cp < 0) {
            sc->p = p;
            return rs_err_set(sc->err, -EINVAL, "invalid JSON at byte %zu: bad \\u escape", AT(sc));
        }
        if (cp >= 0xd800 && cp <= 0xdfff) {
            long lo = -1;
            if (cp <= 0xdbff && end - p >= 12 && p[6] == '\\' && p[7] == 'u')
                lo = hex4(p + 8, end);
            if (lo < 0xdc00 || lo > 0xdfff) {
                sc->p = p;
                return rs_err_set(sc->err, -EINVAL, "lone surrogate \\u%04lx at byte %zu",
                                  (unsigned long)cp, AT(sc));
            }
            o += put_utf8(o, 0x10000 + (((unsigned long)cp - 0xd800) << 10) +
                                 ((unsigned long)lo - 0xdc00));
            p += 12;
            continue;
        }
        if (cp == 0) {
            sc->p = p;
            return rs_err_set(sc->err, -EINVAL,
                              "\\u0000 at byte %zu: NUL is refused, it would truncate C strings",
                              AT(sc));
        }
        if (cp < 0x20)
            o += put_ctrl(o, (unsigned)cp);
        else if (cp == '"' || cp == '\\') {
            *o++ = '\\';
            *o++ = (char)cp;
        } else
            o += put_utf8(o, (unsigned long)cp);
        p += 6;
    }
}

/* 2^1024 - 2^970: the smallest decimal magnitude strtod rounds to infinity. */
static const char dbl_overflow[] =
    "1797693134862315807937289714053034150799341327100378269361737789804449682927647509466490"
    "1797758720709633028641669288791094655554785194040263065748867150582068190890200070838367"
    "6273854845817711531764475730270069855571366959622842914819860834936475292719074168444365"
    "510704342711559699508093042880177904174497792";

/* 1 when the number lexeme (already checked for grammar) is too large for a double.
 * Decided from its digits, without strtod, so the locale cannot matter. */
static int number_overflows(const u8 *s, const u8 *end)
{
    const u8 *p = s;
    if (*p == '-')
        p++;
    const u8 *mant = p;
    long lead = -1; /* decimal exponent of the first significant digit */
    long intdigits = 0;
    const u8 *q = p;
    while (q < end && *q >= '0' && *q <= '9')
        q++, intdigits++;
    const u8 *mant_end = q;
    if (q < end && *q == '.') {
        q++;
        while (q < end && *q >= '0' && *q <= '9')
            q++;
        mant_end = q;
    }
    long exp = 0;
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        int neg = 0;
        if (*q == '+' || *q == '-')
            neg = *q++ == '-';
        while (q < end && *q >= '0' && *q <= '9') {
            if (exp < 100000000)
                exp = exp * 10 + (*q - '0');
            q++;
        }
        if (neg)
            exp = -exp;
    }
    /* Find the first significant digit and its position. */
    long pos = intdigits - 1; /* power of ten of the current digit */
    const u8 *first = NULL;
    for (const u8 *d = mant; d < mant_end; d++) {
        if (*d == '.')
            continue;
        if (*d != '0') {
            first = d;
            lead = pos;
            break;
        }
        pos--;
    }
    if (!first)
        return 0; /* zero */
    long e10 = lead + exp;
    if (e10 < 308)
        return 0;
    if (e10 > 308)
        return 1;
    /* Same order of magnitude as DBL_MAX: compare digit strings. */
    size_t i = 0;
    for (const u8 *d = first; d < mant_end; d++) {
        if (*d == '.')
            continue;
        if (i >= sizeof dbl_overflow - 1) {
            if (*d != '0')
                return 1;
            continue;
        }
        if (*d != (u8)dbl_overflow[i])
            return *d > (u8)dbl_overflow[i];
        i++;
    }
    /* Ran out of digits: the rest are zeros. Equal means overflow (ties round up). */
    for (; i < sizeof dbl_overflow - 1; i++)
        if (dbl_overflow[i] != '0')
            return 0;
    return 1;
}

static int scan_number(scan *sc)
{
    const u8 *s = sc->p, *p = s, *end = sc->end;
    if (*p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9') {
        sc->p = p;
        return fail(sc, "expected a digit");
    }
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9') {
            sc->p = p - 1;
            return rs_err_set(sc->err, -EINVAL,
                              "invalid JSON at byte %zu: leading zero in a number", AT(sc));
        }
    } else {
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    int big = 0;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9') {
            sc->p = p;
            return fail(sc, "expected a digit after '.'");
        }
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9') {
            sc->p = p;
            return fail(sc, "expected a digit in the exponent");
        }
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        big = 1;
    }
    if (big || p - s > 300) {
        if (number_overflows(s, p))
            return rs_err_set(sc->err, -EINVAL, "number at byte %zu is too large for a double",
                              AT(sc));
    }
    memcpy(sc->o, s, (size_t)(p - s));
    sc->o += p - s;
    sc->p = p;
    return 0;
}

static inline int scan_word(scan *sc, const char *w, size_t n)
{
    if ((size_t)(sc->end - sc->p) < n || memcmp(sc->p, w, n) != 0)
        return fail(sc, "expected a value");
    memcpy(sc->o, w, n);
    sc->o += n;
    sc->p += n;
    return 0;
}

int rs_json_truthy(const char *v, size_t n)
{
    if (n == 0)
        return 0;
    if ((n == 5 && !memcmp(v, "false", 5)) || (n == 4 && !memcmp(v, "null", 4)) ||
        (n == 2 && (!memcmp(v, "\"\"", 2) || !memcmp(v, "[]", 2) || !memcmp(v, "{}", 2))))
        return 0;
    if (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
        for (size_t i = 0; i < n && v[i] != 'e' && v[i] != 'E'; i++)
            if (v[i] >= '1' && v[i] <= '9')
                return 1;
        return 0;
    }
    return 1;
}

enum { K_ARR = 0, K_OBJ = 1 };

/* The scanner: canonical bytes into dst, each token shown to vis (may be NULL) as written. */
static int canon_scan(char *dst, size_t *dst_len, const char *in, size_t len, unsigned flags,
                      unsigned *markers, const rs_json_visitor *vis, void *vctx, rs_err *err)
{
    scan sc = {(const u8 *)in, (const u8 *)in, (const u8 *)in + len, dst, flags, err};
    u8 stack[RS_JSON_MAX_DEPTH + 1];
    int depth = 0, rc;
    int drop_top = (flags & RS_JSON_DROP_MARKERS) != 0;
    char *member_start = NULL; /* top-level member being written (drop_top) */
    int dropping = 0;          /* 1: json marker, 2: dict marker, 0: keep */
    size_t kept = 0;
    char *scalar_at;
    if (markers)
        *markers = 0;

value:
    skip_ws(&sc);
    if (sc.p >= sc.end)
        return fail(&sc, "expected a value");
    scalar_at = sc.o;
    switch (*sc.p) {
    case '{':
    case '[': {
        /* An object or an array: one opening, and an empty one closes at once. */
        char open = (char)*sc.p, close = open == '{' ? '}' : ']';
        if (depth >= RS_JSON_MAX_DEPTH)
            return rs_err_set(err, -EINVAL, "nesting deeper than %d at byte %zu", RS_JSON_MAX_DEPTH,
                              AT(&sc));
        stack[depth++] = open == '{' ? K_OBJ : K_ARR;
        if (vis && (rc = vis->open(vctx, open, sc.o)))
            return rc;
        *sc.o++ = open;
        sc.p++;
        skip_ws(&sc);
        if (sc.p < sc.end && *sc.p == close) {
            *sc.o++ = close;
            sc.p++;
            depth--;
            if (vis && (rc = vis->close(vctx, sc.o)))
                return rc;
            goto after;
        }
        if (open == '{')
            goto key;
        goto value;
    }
    case '"':
        if ((rc = scan_string(&sc)))
            return rc;
        goto scalar;
    case 't':
        if ((rc = scan_word(&sc, "true", 4)))
            return rc;
        goto scalar;
    case 'f':
        if ((rc = scan_word(&sc, "false", 5)))
            return rc;
        goto scalar;
    case 'n':
        if ((rc = scan_word(&sc, "null", 4)))
            return rc;
        goto scalar;
    case 'N':
        if (!(flags & RS_JSON_LENIENT))
            return fail(&sc, "expected a value");
        if ((rc = scan_word(&sc, "NaN", 3)))
            return rc;
        goto scalar;
    case 'I':
        if (!(flags & RS_JSON_LENIENT))
            return fail(&sc, "expected a value");
        if ((rc = scan_word(&sc, "Infinity", 8)))
            return rc;
        goto scalar;
    case '-':
        if ((flags & RS_JSON_LENIENT) && sc.end - sc.p >= 9 && sc.p[1] == 'I') {
            if ((rc = scan_word(&sc, "-Infinity", 9)))
                return rc;
            goto scalar;
        }
        /* fall through */
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
        if ((rc = scan_number(&sc)))
            return rc;
        goto scalar;
    default:
        if (*sc.p >= 0x80 && !utf8_seq(sc.p, sc.end, str_class[*sc.p]))
            return rs_err_set(err, -EINVAL, "invalid UTF-8 at byte %zu", AT(&sc));
        return fail(&sc, "expected a value");
    }

scalar:
    if (vis && (rc = vis->scalar(vctx, scalar_at, (size_t)(sc.o - scalar_at))))
        return rc;
    goto after;

key:
    /* sc.p is past white space, on what must be a key. */
    if (sc.p >= sc.end || *sc.p != '"')
        return fail(&sc, "expected a string key");
    if (drop_top && depth == 1) {
        member_start = sc.o;
        if (kept)
            *sc.o++ = ',';
        char *k = sc.o;
        if ((rc = scan_string(&sc)))
            return rc;
        size_t kl = (size_t)(sc.o - k);
        dropping = 0;
        if (kl == 17 && !memcmp(k, "\"content_is_json\"", 17))
            dropping = 1;
        else if (kl == 17 && !memcmp(k, "\"content_is_dict\"", 17))
            dropping = 2;
    } else {
        char *k = sc.o;
        if ((rc = scan_string(&sc)))
            return rc;
        if (vis && (rc = vis->key(vctx, k, (size_t)(sc.o - k))))
            return rc;
    }
    skip_ws(&sc);
    if (sc.p >= sc.end || *sc.p != ':')
        return fail(&sc, "expected ':'");
    *sc.o++ = ':';
    sc.p++;
    goto value;

after:
    if (depth == 0) {
        skip_ws(&sc);
        if (sc.p < sc.end)
            return fail(&sc, "unexpected data after the value");
        *dst_len = (size_t)(sc.o - dst);
        dst[*dst_len] = '\0';
        return 0;
    }
    if (drop_top && depth == 1 && stack[0] == K_OBJ) {
        /* A top-level member just ended. */
        if (dropping) {
            char *v = member_start + (kept ? 1 : 0) + 18;
            if (markers && rs_json_truthy(v, (size_t)(sc.o - v)))
                *markers |= (unsigned)dropping;
            sc.o = member_start;
            dropping = 0;
        } else
            kept++;
    }
    skip_ws(&sc);
    if (sc.p >= sc.end)
        return fail(&sc, stack[depth - 1] == K_OBJ ? "expected ',' or '}'" : "expected ',' or ']'");
    if (stack[depth - 1] == K_OBJ) {
        if (*sc.p == ',') {
            sc.p++;
            if (!(drop_top && depth == 1))
                *sc.o++ = ',';
            skip_ws(&sc);
            goto key;
        }
        if (*sc.p == '}') {
            sc.p++;
            *sc.o++ = '}';
            depth--;
            if (vis && (rc = vis->close(vctx, sc.o)))
                return rc;
            goto after;
        }
        return fail(&sc, "expected ',' or '}'");
    }
    if (*sc.p == ',') {
        sc.p++;
        *sc.o++ = ',';
        goto value;
    }
    if (*sc.p == ']') {
        sc.p++;
        *sc.o++ = ']';
        depth--;
        if (vis && (rc = vis->close(vctx, sc.o)))
            return rc;
        goto after;
    }
    return fail(&sc, "expected ',' or ']'");
}

int rs_json_canon_to(char *dst, size_t *dst_len, const char *in, size_t len, unsigned flags,
                     unsigned *markers, rs_err *err)
{
    return canon_scan(dst, dst_len, in, len, flags, markers, NULL, NULL, err);
}

int rs_json_scan(char *dst, size_t *dst_len, const char *in, size_t len, const rs_json_visitor *vis,
                 void *ctx, rs_err *err)
{
    return canon_scan(dst, dst_len, in, len, 0, NULL, vis, ctx, err);
}

int rs_json_canon(rs_buf *out, const char *in, size_t len, unsigned flags, rs_err *err)
{
    /* Canonical text is never longer than its input: grow once. */
    int rc = rs_buf_grow(out, len);
    if (rc)
        return rs_err_set(err, rc, "out of memory");
    size_t n = 0;
    rc = rs_json_canon_to(out->buf + out->len, &n, in, len, flags, NULL, err);
    rs_buf_setlen(out, out->len + (rc ? 0 : n));
    return rc;
}

int rs_json_markers(const char *meta, size_t len, unsigned *markers)
{
    *markers = 0;
    if (!meta || !len)
        return 0;
    char small[512];
    char *dst = len < sizeof small ? small : malloc(len + 1);
    if (!dst)
        return -ENOMEM;
    size_t n;
    if (rs_json_canon_to(dst, &n, meta, len, RS_JSON_LENIENT | RS_JSON_DROP_MARKERS, markers,
                         NULL) != 0)
        *markers = 0;
    if (dst != small)
        free(dst);
    return 0;
}

/* ---- strings ------------------------------------------------------------------------------ */

size_t rs_json_string_len(const char *s, size_t len)
{
    const u8 *p = (const u8 *)s, *end = p + len;
    size_t n = 2;
    for (;;) {
        size_t k = plain_run(p, end);
        n += k;
        p += k;
        if (p >= end)
            return n;
        int cls = str_class[*p];
        if (cls >= C_U2 && (k = utf8_seq(p, end, cls))) {
            n += k;
            p += k;
        } else if (cls == C_QUOTE || cls == C_BSLASH) {
            n += 2;
            p++;
        } else if (cls == C_CTRL) {
            char esc[8];
            n += put_ctrl(esc, *p++);
        } else {
            p += utf8_bad_len(p, end);
            n += 3;
        }
    }
}

int rs_utf8_valid(const char *s, size_t len)
{
    const u8 *p = (const u8 *)s, *end = p + len;
    while (p < end) {
        while (end - p >= 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            if (((x - ONES) & ~x & HIGHS) | (x & HIGHS))
                break;
            p += 8;
        }
        if (p >= end)
            break;
        if (*p < 0x80) {
            if (*p == 0)
                return 0;
            p++;
            continue;
        }
        size_t k = utf8_seq(p, end, str_class[*p]);
        if (!k)
            return 0;
        p += k;
    }
    return 1;
}

static const char *skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return rs_quote_end(p + 1, end);
    if (*p == '{' || *p == '[') {
        long depth = 0;
        for (; p < end; p++) {
            char c = *p;
            if (c == '"') {
                if (!(p = rs_quote_end(p + 1, end)))
                    return NULL;
                p--;
            } else if (c == '{' || c == '[')
                depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0)
                    return p + 1;
            }
        }
        return NULL;
    }
    const char *s = p;
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' &&
           *p != '\t' && *p != '\r')
        p++;
    return p > s ? p : NULL;
}

static const char *ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

int rs_json_members(const char *obj, size_t len, rs_json_member_fn fn, void *ctx)
{
    const char *p = obj, *end = obj + len;
    p = ws(p, end);
    if (p >= end || *p != '{')
        return -EINVAL;
    p = ws(p + 1, end);
    if (p < end && *p == '}')
        return 0;
    for (;;) {
        if (p >= end || *p != '"')
            return -EINVAL;
        const char *ke = skip_value(p, end);
        if (!ke)
            return -EINVAL;
        const char *key = p + 1;
        size_t key_len = (size_t)(ke - 1 - key);
        p = ws(ke, end);
        if (p >= end || *p != ':')
            return -EINVAL;
        p = ws(p + 1, end);
        const char *ve = skip_value(p, end);
        if (!ve)
            return -EINVAL;
        int rc = fn(ctx, key, key_len, p, (size_t)(ve - p));
        if (rc)
            return rc;
        p = ws(ve, end);
        if (p < end && *p == ',') {
            p = ws(p + 1, end);
            continue;
        }
        if (p < end && *p == '}')
            return 0;
        return -EINVAL;
    }
}

int rs_json_unquote(rs_buf *out, const char *lit, size_t len)
{
    if (len < 2 || lit[0] != '"' || lit[len - 1] != '"')
        return -EINVAL;
    int rc = rs_buf_grow(out, len);
    if (rc)
        return rc;
    const u8 *p = (const u8 *)lit + 1, *end = (const u8 *)lit + len - 1;
    char *o = out->buf + out->len;
    while (p < end) {
        const u8 *b = memchr(p, '\\', (size_t)(end - p));
        size_t n = b ? (size_t)(b - p) : (size_t)(end - p);
        memcpy(o, p, n);
        o += n;
        p += n;
        if (p >= end)
            break;
        if (end - p < 2)
            goto bad;
        switch (p[1]) {
        case '"':
            *o++ = '"';
            p += 2;
            continue;
        case '\\':
            *o++ = '\\';
            p += 2;
            continue;
        case '/':
            *o++ = '/';
            p += 2;
            continue;
        case 'b':
            *o++ = '\b';
            p += 2;
            continue;
        case 'f':
            *o++ = '\f';
            p += 2;
            continue;
        case 'n':
            *o++ = '\n';
            p += 2;
            continue;
        case 'r':
            *o++ = '\r';
            p += 2;
            continue;
        case 't':
            *o++ = '\t';
            p += 2;
            continue;
        case 'u': break;
        default: goto bad;
        }
        long cp = hex4(p + 2, end);
        if (cp < 0)
            goto bad;
        p += 6;
        if (cp >= 0xd800 && cp <= 0xdbff) {
            long lo = (end - p >= 6 && p[0] == '\\' && p[1] == 'u') ? hex4(p + 2, end) : -1;
            if (lo < 0xdc00 || lo > 0xdfff)
                goto bad;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            p += 6;
        } else if (cp >= 0xdc00 && cp <= 0xdfff)
            goto bad;
        o += put_utf8(o, (unsigned long)cp);
    }
    rs_buf_setlen(out, (size_t)(o - out->buf));
    return 0;
bad:
    rs_buf_setlen(out, out->len);
    return -EINVAL;
}

double rs_json_number(const char *v, size_t len)
{
    /* An integer of at most 15 digits is exact in a double: strtod would say the same. */
    size_t neg = len && v[0] == '-', i = neg;
    if (len - neg >= 1 && len - neg <= 15) {
        double d = 0;
        while (i < len && v[i] >= '0' && v[i] <= '9')
            d = d * 10 + (v[i++] - '0');
        if (i == len)
            return neg ? -d : d;
    }
    char small[64];
    char *num = len < sizeof small ? small : malloc(len + 1);
    if (!num)
        return NAN;
    memcpy(num, v, len);
    num[len] = '\0';
    double d = strtod(num, NULL);
    if (num != small)
        free(num);
    return d;
}

const char *rs_json_kind(const char *v)
{
    switch (v[0]) {
    case '"': return "string";
    case '{': return "object";
    case '[': return "array";
    case 't':
    case 'f': return "boolean";
    case 'n': return "null";
    default: return "number";
    }
}

typedef struct member_find {
    const char *key; /* raw, as inside the quotes */
    size_t key_len;
    const char *val;
    size_t val_len;
} member_find;

static int on_member_find(void *ctx, const char *key, size_t key_len, const char *val,
                          size_t val_len)
{
    member_find *f = ctx;
    if (key_len != f->key_len || memcmp(key, f->key, key_len) != 0)
        return 0;
    f->val = val;
    f->val_len = val_len;
    return 1;
}

int rs_json_get(const char *obj, size_t len, const char *key, size_t key_len, const char **val,
                size_t *val_len)
{
    member_find f = {.key = key, .key_len = key_len};
    if (rs_json_members(obj, len, on_member_find, &f) != 1)
        return 0;
    *val = f.val;
    *val_len = f.val_len;
    return 1;
}

typedef struct eq_find {
    const char *other; /* the object searched */
    size_t other_len;
    int missing;
} eq_find;

/* Each member of one object has an equal value under the same key in the other. */
static int on_member_eq(void *ctx, const char *key, size_t key_len, const char *val, size_t val_len)
{
    eq_find *f = ctx;
    const char *v;
    size_t vl;
    if (!rs_json_get(f->other, f->other_len, key, key_len, &v, &vl) ||
        !rs_json_equal(val, val_len, v, vl)) {
        f->missing = 1;
        return 1;
    }
    return 0;
}

int rs_json_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    if (!alen || !blen)
        return 0;
    char ka = a[0], kb = b[0];
    int na = ka == '-' || (ka >= '0' && ka <= '9'), nb = kb == '-' || (kb >= '0' && kb <= '9');
    if (na || nb) {
        if (!(na && nb))
            return 0;
        double x = rs_json_number(a, alen), y = rs_json_number(b, blen);
        double m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
        return fabs(x - y) <= m * DBL_EPSILON;
    }
    if (ka != kb)
        return 0;
    if (ka == '{') {
        eq_find ab = {.other = b, .other_len = blen}, ba = {.other = a, .other_len = alen};
        return rs_json_members(a, alen, on_member_eq, &ab) == 0 && !ab.missing &&
               rs_json_members(b, blen, on_member_eq, &ba) == 0 && !ba.missing;
    }
    if (ka == '[') {
        const char *p = a + 1, *pe = a + alen - 1, *q = b + 1, *qe = b + blen - 1;
        while (p < pe && q < qe) {
            const char *pn = skip_value(p, pe), *qn = skip_value(q, qe);
            if (!pn || !qn || !rs_json_equal(p, (size_t)(pn - p), q, (size_t)(qn - q)))
                return 0;
            p = pn < pe && *pn == ',' ? pn + 1 : pn;
            q = qn < qe && *qn == ',' ? qn + 1 : qn;
        }
        return p >= pe && q >= qe;
    }
    /* strings (one canonical spelling each), true, false, null */
    return alen == blen && memcmp(a, b, alen) == 0;
}
