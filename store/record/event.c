/* event.c — the one gate into the store (parsing and validating an input line) and the one
 * encoder out of it (a stored row as its canonical line), plus UTC timestamp handling. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "event.h"
#include "json.h"
#include "rs_util.h"

/* ---- time --------------------------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

static void civil_from_days(long long z, long long *y, unsigned *m, unsigned *d)
{
    z += 719468;
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (long long)yoe + era * 400 + (*m <= 2);
}

static int leap(long long y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned month_days(long long y, unsigned m)
{
    static const unsigned char md[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : md[m - 1];
}

/* n decimal digits at s into *v; 0 on success. */
static int digits(const char *s, const char *end, int n, unsigned *v)
{
    if (end - s < n)
        return -1;
    unsigned x = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        x = x * 10 + (unsigned)(s[i] - '0');
    }
    *v = x;
    return 0;
}

static inline void put2(char *o, unsigned v)
{
    o[0] = (char)('0' + v / 10);
    o[1] = (char)('0' + v % 10);
}

/* Both renderings of a UTC instant: seconds since the epoch and microseconds. */
static void format_time(long long secs, unsigned usec, char *canon, char *db)
{
    long long days = secs / 86400, rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    long long y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    char t[27];
    unsigned yy = (unsigned)y;
    t[0] = (char)('0' + yy / 1000);
    t[1] = (char)('0' + yy / 100 % 10);
    t[2] = (char)('0' + yy / 10 % 10);
    t[3] = (char)('0' + yy % 10);
    t[4] = '-';
    put2(t + 5, m);
    t[7] = '-';
    put2(t + 8, d);
    t[10] = ' ';
    put2(t + 11, (unsigned)(rem / 3600));
    t[13] = ':';
    put2(t + 14, (unsigned)(rem / 60 % 60));
    t[16] = ':';
    put2(t + 17, (unsigned)(rem % 60));
    t[19] = '.';
    for (int i = 25; i >= 20; i--) {
        t[i] = (char)('0' + usec % 10);
        usec /= 10;
    }
    t[26] = '\0';
    if (db)
        memcpy(db, t, 27);
    if (canon) {
        memcpy(canon, t, 26);
        canon[10] = 'T';
        memcpy(canon + 26, "+00:00", 7);
    }
}

/* s as seconds since the epoch and microseconds. */
static int time_parse(const char *s, size_t len, long long *secs_out, unsigned *usec_out)
{
    if (!s || len < 16) /* the shortest form is YYYY-MM-DDTHH:MM */
        return -EINVAL;
    const char *p = s, *end = s + len;
    unsigned y, mo, d, h, mi, sec = 0, usec = 0;
    if (digits(p, end, 4, &y) || p[4] != '-' || digits(p + 5, end, 2, &mo) || p[7] != '-' ||
        digits(p + 8, end, 2, &d))
        return -EINVAL;
    p += 10;
    if (p >= end || (*p != 'T' && *p != 't' && *p != ' '))
        return -EINVAL;
    p++;
    if (digits(p, end, 2, &h) || end - p < 5 || p[2] != ':' || digits(p + 3, end, 2, &mi))
        return -EINVAL;
    p += 5;
    if (p < end && *p == ':') {
        if (digits(p + 1, end, 2, &sec))
            return -EINVAL;
        p += 3;
        if (p < end && *p == '.') {
            p++;
            int n = 0;
            while (p < end && *p >= '0' && *p <= '9') {
                if (n < 6)
                    usec = usec * 10 + (unsigned)(*p - '0');
                n++;
                p++;
            }
            if (n < 1 || n > 9)
                return -EINVAL;
            for (; n < 6; n++)
                usec *= 10;
        }
    }
    long off = 0;
    if (p < end) {
        if ((*p == 'Z' || *p == 'z') && p + 1 == end) {
            p++;
        } else if (*p == '+' || *p == '-') {
            int neg = *p == '-';
            unsigned oh, om;
            p++;
            if (digits(p, end, 2, &oh))
                return -EINVAL;
            p += 2;
            if (p < end && *p == ':')
                p++;
            if (digits(p, end, 2, &om))
                return -EINVAL;
            p += 2;
            if (oh > 23 || om > 59)
                return -EINVAL;
            off = (long)(oh * 3600 + om * 60);
            if (neg)
                off = -off;
        } else
            return -EINVAL;
    }
    if (p != end)
        return -EINVAL;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo) || h > 23 || mi > 59 ||
        sec > 59)
        return -EINVAL;
    long long secs = days_from_civil(y, mo, d) * 86400LL + h * 3600LL + mi * 60LL + sec - off;
    /* 0001-01-01T00:00:00 .. 9999-12-31T23:59:59 */
    if (secs < -62135596800LL || secs > 253402300799LL)
        return -EINVAL;
    *secs_out = secs;
    *usec_out = usec;
    return 0;
}

int rs_time_parse(const char *s, size_t len, char *canon, char *db)
{
    long long secs;
    unsigned usec;
    int rc = time_parse(s, len, &secs, &usec);
    if (!rc)
        format_time(secs, usec, canon, db);
    return rc;
}

int rs_time_ns(const char *s, int64_t *ns)
{
    long long secs;
    unsigned usec;
    int rc = time_parse(s, s ? strlen(s) : 0, &secs, &usec);
    if (rc)
        return rc;
    /* int64 nanoseconds span 1677..2262, what a file's time can hold. */
    if (secs < INT64_MIN / 1000000000LL + 1 || secs > INT64_MAX / 1000000000LL - 1)
        return -ERANGE;
    *ns = (int64_t)secs * 1000000000LL + (int64_t)usec * 1000;
    return 0;
}

void rs_time_now(char *canon, char *db)
{
    int64_t ns = rs_clock_ns(CLOCK_REALTIME);
    format_time((long long)(ns / 1000000000LL), (unsigned)(ns % 1000000000LL / 1000), canon, db);
}

/* ---- parsing -------------------------------------------------------------------------- */

const char *const rs_event_field_names[RS_F_COUNT] = {
    "event_type", "category", "content",         "metadata", "created_at",
    "thread_id",  "run_id",   "idempotency_key", "seq",
};

static int key_is(const char *k, size_t kl, const char *name)
{
    return strlen(name) == kl && !memcmp(k, name, kl);
}

int rs_event_member(const rs_event_fields *f, const char *key, size_t kl, int import, rs_err *err)
{
    if (key_is(key, kl, "seq") && !import)
        return rs_err_set(err, -EINVAL, "seq is assigned by the store");
    for (int i = 0; i < RS_F_COUNT; i++)
        if (key_is(key, kl, rs_event_field_names[i])) {
            if (f->val[i])
                return rs_err_set(err, -EINVAL, "duplicate field '%s'", rs_event_field_names[i]);
            return i;
        }
    if (key_is(key, kl, "user_id"))
        return rs_err_set(err, -EINVAL, "user_id is set by the mount, not the event");
    return rs_err_set(err, -EINVAL, "unknown field '%.*s'", kl > 64 ? 64 : (int)kl, key);
}

/* The string value of field i, decoded into dst (cap bytes): 0, or -EINVAL when it is not a
 * string, -E2BIG when longer than cap - 1 bytes. */
static int field_str(const rs_event_fields *f, int i, char *dst, size_t cap, size_t *out_len)
{
    const char *v = f->val[i];
    size_t n = f->len[i];
    if (v[0] != '"')
        return -EINVAL;
    if (!memchr(v, '\\', n)) {
        if (n - 2 >= cap)
            return -E2BIG;
        memcpy(dst, v + 1, n - 2);
        dst[n - 2] = '\0';
        *out_len = n - 2;
        return 0;
    }
    rs_buf b = RS_BUF_INIT;
    int rc = rs_json_unquote(&b, v, n);
    if (rc) {
        rs_buf_release(&b);
        return rc;
    }
    if (b.len >= cap || memchr(b.buf, '\0', b.len))
        rc = -E2BIG;
    else {
        memcpy(dst, b.buf, b.len + 1);
        *out_len = b.len;
    }
    rs_buf_release(&b);
    return rc;
}

void rs_event_free(rs_event *ev)
{
    free(ev); /* its texts live in the same allocation */
}

static int check_id(const rs_event_fields *f, int i, const char *want, char *dst, rs_err *err)
{
    const char *name = rs_event_field_names[i];
    if (f->val[i]) {
        char got[RS_ID_MAX + 1];
        size_t n;
        int rc = field_str(f, i, got, sizeof got, &n);
        if (rc == -EINVAL)
            return rs_err_set(err, -EINVAL, "%s: expected string, got %s", name,
                              rs_json_kind(f->val[i]));
        if (rc || !rs_id_valid_n(got, n))
            return rs_err_set(err, -EINVAL, "%s: not a valid id (1-64 of [A-Za-z0-9_-])", name);
        if (want && strcmp(got, want))
            return rs_err_set(err, -EINVAL, "%s '%s' does not match the path's '%s'", name, got,
                              want);
        if (!want)
            want = got;
        memcpy(dst, want, strlen(want) + 1);
        return 0;
    }
    if (!want)
        return rs_err_set(err, -EINVAL, "missing required field '%s'", name);
    if (strlen(want) > RS_ID_MAX)
        return rs_err_set(err, -EINVAL, "%s: not a valid id", name);
    memcpy(dst, want, strlen(want) + 1);
    return 0;
}

/* An event type is a file name under types/ and once/: no '/', no control character, not
 * "." or "..". */
static int event_type_name_ok(const char *t, rs_err *err)
{
    if (!strcmp(t, ".") || !strcmp(t, ".."))
        return rs_err_set(err, -EINVAL, "event_type: '%s' cannot be a file name", t);
    for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
        if (*p == '/')
            return rs_err_set(err, -EINVAL, "event_type: must not contain '/'");
        if (*p < 0x20 || *p == 0x7f)
            return rs_err_set(err, -EINVAL, "event_type: must not contain control character 0x%02x",
                              *p);
    }
    return 0;
}

/* An import line's seq: a positive integer (DeerFlow's BIGINT). */
static int parse_seq(rs_event *ev, const rs_event_fields *f, const rs_event_ctx *ctx, rs_err *err)
{
    if (!ctx->import)
        return 0;
    const char *v = f->val[RS_F_SEQ];
    size_t n = f->len[RS_F_SEQ];
    if (!v)
        return rs_err_set(err, -EINVAL, "missing required field 'seq'");
    int64_t seq = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9' || seq > (INT64_MAX - 9) / 10)
            return rs_err_set(err, -EINVAL, "seq: expected a positive integer, got %.*s",
                              n > 32 ? 32 : (int)n, v);
        seq = seq * 10 + (v[i] - '0');
    }
    if (seq < 1)
        return rs_err_set(err, -EINVAL, "seq: expected a positive integer, got %.*s",
                          n > 32 ? 32 : (int)n, v);
    ev->seq = seq;
    return 0;
}

/* DESIGN "Appending": 1-128 printable ASCII characters. */
static int parse_idem_key(rs_event *ev, const rs_event_fields *f, rs_err *err)
{
    if (!f->val[RS_F_IDEM_KEY])
        return 0;
    size_t n = 0;
    int rc = field_str(f, RS_F_IDEM_KEY, ev->idem_key, sizeof ev->idem_key, &n);
    if (rc == -EINVAL)
        return rs_err_set(err, -EINVAL, "idempotency_key: expected string, got %s",
                          rs_json_kind(f->val[RS_F_IDEM_KEY]));
    if (rc || n == 0)
        return rs_err_set(err, -EINVAL, "idempotency_key: must be 1-%d characters",
                          RS_IDEM_KEY_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)ev->idem_key[i] < 0x20 || (unsigned char)ev->idem_key[i] > 0x7e)
            return rs_err_set(err, -EINVAL,
                              "idempotency_key: only printable ASCII characters are allowed");
    return 0;
}

/* The event_type the line gives (or once/<type>'s file name): a valid name, within bounds. */
static int envelope_event_type(rs_event *ev, const rs_event_fields *f, const rs_event_ctx *ctx,
                               rs_err *err)
{
    int rc;
    size_t n;
    if (f->val[RS_F_EVENT_TYPE]) {
        rc = field_str(f, RS_F_EVENT_TYPE, ev->event_type, sizeof ev->event_type, &n);
        if (rc == -EINVAL)
            return rs_err_set(err, -EINVAL, "event_type: expected string, got %s",
                              rs_json_kind(f->val[RS_F_EVENT_TYPE]));
        if (rc) {
            const char *v = f->val[RS_F_EVENT_TYPE];
            size_t vl = f->len[RS_F_EVENT_TYPE];
            if (vl > 13 && !memcmp(v, "\"middleware:", 12))
                return rs_err_set(err, -EINVAL,
                                  "event_type: middleware tag is longer than %d characters "
                                  "(event_type over %d)",
                                  RS_MIDDLEWARE_TAG_MAX, RS_EVENT_TYPE_MAX);
            return rs_err_set(err, -EINVAL, "event_type: longer than %d characters",
                              RS_EVENT_TYPE_MAX);
        }
        if (n == 0)
            return rs_err_set(err, -EINVAL, "event_type: must not be empty");
        if ((rc = event_type_name_ok(ev->event_type, err)))
            return rc;
        if (ctx->event_type && strcmp(ev->event_type, ctx->event_type))
            return rs_err_set(err, -EINVAL, "event_type '%s' does not match the file name '%.64s'",
                              ev->event_type, ctx->event_type);
    } else if (ctx->event_type) {
        if (!ctx->event_type[0] || strlen(ctx->event_type) > RS_EVENT_TYPE_MAX)
            return rs_err_set(err, -EINVAL, "event_type: '%.64s' is not a valid event type",
                              ctx->event_type);
        memcpy(ev->event_type, ctx->event_type,
               strlen(ctx->event_type) + 1); /* length checked above */
        if ((rc = event_type_name_ok(ev->event_type, err)))
            return rc;
    } else
        return rs_err_set(err, -EINVAL, "missing required field 'event_type'");

    return 0;
}

/* The category the line gives, or the contract's for the type; an unknown type only where
 * allowed (--allow-unknown-events, a lenient import). */
static int envelope_category(rs_event *ev, const rs_event_fields *f, const rs_event_ctx *ctx,
                             rs_err *err)
{
    int rc;
    size_t n;
    const char *want = rs_contract_category(ctx->contract, ev->event_type);
    int lenient = ctx->import && !ctx->strict; /* history is stored as it happened */
    if (!want && !ctx->allow_unknown && !lenient)
        return rs_err_set(err, -EINVAL, "unknown event type '%s' (not in the contract)",
                          ev->event_type);
    if (f->val[RS_F_CATEGORY]) {
        rc = field_str(f, RS_F_CATEGORY, ev->category, sizeof ev->category, &n);
        if (rc == -EINVAL)
            return rs_err_set(err, -EINVAL, "category: expected string, got %s",
                              rs_json_kind(f->val[RS_F_CATEGORY]));
        if (rc)
            return rs_err_set(err, -EINVAL, "category: longer than %d characters", RS_CATEGORY_MAX);
        if (n == 0)
            return rs_err_set(err, -EINVAL, "category: must not be empty");
        if (want && strcmp(want, ev->category) && (!ctx->import || ctx->strict))
            return rs_err_set(err, -EINVAL, "category '%s' does not match '%s' for %s",
                              ev->category, want, ev->event_type);
    } else if (want) {
        size_t wl = strnlen(want, RS_CATEGORY_MAX);
        memcpy(ev->category, want, wl);
        ev->category[wl] = '\0';
    } else
        return rs_err_set(err, -EINVAL,
                          "category is required for event type '%s', which the contract does "
                          "not name",
                          ev->event_type);

    return 0;
}

/* Metadata must be an object without storage markers. */
static int envelope_metadata(const rs_event_fields *f, rs_err *err)
{
    if (f->val[RS_F_METADATA]) {
        if (f->val[RS_F_METADATA][0] != '{')
            return rs_err_set(err, -EINVAL, "metadata: expected object, got %s",
                              rs_json_kind(f->val[RS_F_METADATA]));
        if (f->marker)
            return rs_err_set(err, -EINVAL,
                              "metadata.%.*s is a storage marker reserved by the store",
                              (int)f->marker_len, f->marker);
    }

    return 0;
}

/* created_at as given (never on a --stamp-time mount; always on an import), else now. */
static int envelope_created_at(rs_event *ev, const rs_event_fields *f, const rs_event_ctx *ctx,
                               rs_err *err)
{
    int rc;
    size_t n;
    if (f->val[RS_F_CREATED_AT] && ctx->stamp_time)
        return rs_err_set(err, -EINVAL,
                          "created_at is the store's to set on this mount "
                          "(--stamp-time): leave it out");
    if (f->val[RS_F_CREATED_AT]) {
        char t[64];
        rc = field_str(f, RS_F_CREATED_AT, t, sizeof t, &n);
        if (rc == -EINVAL)
            return rs_err_set(err, -EINVAL, "created_at: expected string, got %s",
                              rs_json_kind(f->val[RS_F_CREATED_AT]));
        if (rc || rs_time_parse(t, n, ev->created_at, ev->created_db))
            return rs_err_set(err, -EINVAL,
                              "created_at: %.*s is not a valid timestamp "
                              "(YYYY-MM-DDTHH:MM[:SS[.ffffff]][Z|+HH:MM], years 0001-9999)",
                              f->len[RS_F_CREATED_AT] > 48 ? 48 : (int)f->len[RS_F_CREATED_AT],
                              f->val[RS_F_CREATED_AT]);
    } else if (ctx->import)
        return rs_err_set(err, -EINVAL, "missing required field 'created_at'");
    else
        rs_time_now(ev->created_at, ev->created_db);
    return 0;
}

int rs_event_envelope(rs_event *ev, const rs_event_fields *f, const rs_event_ctx *ctx, rs_err *err)
{
    int rc;
    if ((rc = envelope_event_type(ev, f, ctx, err)) ||
        (rc = check_id(f, RS_F_THREAD_ID, ctx->thread_id, ev->thread_id, err)) ||
        (rc = check_id(f, RS_F_RUN_ID, ctx->run_id, ev->run_id, err)) ||
        (rc = envelope_category(ev, f, ctx, err)) || (rc = envelope_metadata(f, err)) ||
        (rc = envelope_created_at(ev, f, ctx, err)) || (rc = parse_seq(ev, f, ctx, err)))
        return rc;
    return parse_idem_key(ev, f, err);
}

/* A text of the event: a view of len bytes at at, NUL-terminated; the next text's place. */
static char *text_at(rs_buf *view, char *at, size_t len)
{
    at[len] = '\0';
    *view = (rs_buf){at, len, 0};
    return at + len + 1;
}

/* Room for a metadata_db beyond its metadata: the two markers. */
#define MARKERS_ROOM (sizeof ",\"content_is_json\":true,\"content_is_dict\":true")

/* A zeroed event with room for its four texts (content and metadata as shown, and as
 * DeerFlow stores them), allocated with it: one allocation per event. */
static rs_event *event_new(size_t cl, size_t ml)
{
    size_t room = 2 * (cl + 1) + 2 * (ml + 1) + MARKERS_ROOM;
    rs_event *ev = malloc(sizeof *ev + room);
    if (ev) {
        memset(ev, 0, sizeof *ev);
        ev->content = ev->content_db = ev->metadata = ev->metadata_db = (rs_buf)RS_BUF_INIT;
    }
    return ev;
}

/* The bytes: as shown, and as DeerFlow stores them (a string content decoded, any other
 * content kept as JSON with markers in the metadata saying so). */
static int event_bytes(rs_event *ev, const char *cv, size_t cl, const char *mv, size_t ml,
                       rs_err *err)
{
    char *o = ev->bytes;
    memcpy(o, cv, cl);
    o = text_at(&ev->content, o, cl);
    memcpy(o, mv, ml);
    o = text_at(&ev->metadata, o, ml);
    if (cv[0] == '"') {
        size_t n = cl - 2;
        if (!memchr(cv, '\\', cl)) {
            memcpy(o, cv + 1, n);
        } else {
            rs_buf d = RS_BUF_INIT;
            int rc = rs_json_unquote(&d, cv, cl);
            if (rc) {
                rs_buf_release(&d);
                return rs_err_set(err, rc, "out of memory");
            }
            n = d.len; /* decoding never lengthens */
            memcpy(o, d.buf, n);
            rs_buf_release(&d);
        }
        o = text_at(&ev->content_db, o, n);
        memcpy(o, mv, ml);
        text_at(&ev->metadata_db, o, ml);
        return 0;
    }
    memcpy(o, cv, cl);
    o = text_at(&ev->content_db, o, cl);
    char *m = o;
    memcpy(o, mv, ml - 1);
    o += ml - 1;
    if (ml > 2)
        *o++ = ',';
    static const char json_marker[] = "\"content_is_json\":true";
    static const char dict_marker[] = ",\"content_is_dict\":true";
    memcpy(o, json_marker, sizeof json_marker - 1);
    o += sizeof json_marker - 1;
    if (cv[0] == '{') {
        memcpy(o, dict_marker, sizeof dict_marker - 1);
        o += sizeof dict_marker - 1;
    }
    *o++ = '}';
    text_at(&ev->metadata_db, m, (size_t)(o - m));
    return 0;
}

/* ---- the one pass ----------------------------------------------------------------------
 * The scanner writes the line's canonical bytes and shows each token to line_scan, which
 * collects the top-level members and hands the tokens of content and metadata to their
 * checkers as they go by. Only a content or metadata written before the line names its
 * event type (with no type from the file name) is checked again after the scan. */

typedef struct line_scan {
    const rs_event_ctx *ctx;
    rs_event_fields f;
    int depth;       /* containers open */
    int field;       /* the member whose value comes next: RS_F_*, or -1 */
    rs_check *route; /* the checker of the value being scanned, or NULL */
    rs_check content, metadata;
    int checked[2]; /* content, metadata: checked during the scan */
    int not_object;
    rs_err member_err;   /* the first refused member (code 0: none) */
    const char *rule_of; /* the type text rule was looked up for; NULL: none yet */
    rs_rule rule;
} line_scan;

/* The contract's rule for the line as far as it has been read; NULL when the type is
 * unknown yet (it may come later in the line). Looked up once per type text. */
static const rs_rule *line_rule(line_scan *ls)
{
    const char *of = ls->f.val[RS_F_EVENT_TYPE] ? ls->f.val[RS_F_EVENT_TYPE] : ls->ctx->event_type;
    if (!of)
        return NULL;
    if (of == ls->rule_of)
        return &ls->rule;
    ls->rule_of = of;
    memset(&ls->rule, 0, sizeof ls->rule);
    if (ls->ctx->import && !ls->ctx->strict)
        return &ls->rule; /* history is stored as it happened: no schema */
    if (of == ls->ctx->event_type) {
        rs_contract_rule(ls->ctx->contract, of, &ls->rule);
        return &ls->rule;
    }
    char type[RS_EVENT_TYPE_MAX + 1];
    size_t n;
    /* a type that cannot be read is refused before any schema matters */
    if (!field_str(&ls->f, RS_F_EVENT_TYPE, type, sizeof type, &n))
        rs_contract_rule(ls->ctx->contract, type, &ls->rule);
    return &ls->rule;
}

/* A top-level member's value starts at v: content and metadata get a checker now when
 * their schema is known. */
static void member_starts(line_scan *ls, const char *v)
{
    int f = ls->field;
    ls->route = NULL;
    if (f < 0)
        return;
    ls->f.val[f] = v;
    if (f != RS_F_CONTENT && f != RS_F_METADATA)
        return;
    const rs_rule *r = line_rule(ls);
    if (!r)
        return;
    int m = f == RS_F_METADATA;
    ls->route = m ? &ls->metadata : &ls->content;
    rs_check_init(ls->route, m ? r->metadata : r->content, m ? "metadata" : "content");
    ls->checked[m] = 1;
}

static int ls_key(void *ctx, const char *key, size_t len)
{
    line_scan *ls = ctx;
    if (ls->depth == 1) {
        rs_err e = {0};
        ls->field = rs_event_member(&ls->f, key + 1, len - 2, ls->ctx->import, &e);
        if (ls->field < 0) {
            ls->field = -1;
            if (!ls->member_err.code)
                ls->member_err = e;
        }
        return 0;
    }
    if (!ls->route)
        return 0;
    if (ls->depth == 2 && ls->route == &ls->metadata && !ls->f.marker &&
        ((len == 17 && !memcmp(key, "\"content_is_json\"", 17)) ||
         (len == 17 && !memcmp(key, "\"content_is_dict\"", 17)))) {
        ls->f.marker = key + 1;
        ls->f.marker_len = len - 2;
    }
    return rs_check_visitor.key(ls->route, key, len);
}

static int ls_open(void *ctx, char kind, const char *at)
{
    line_scan *ls = ctx;
    int rc = 0;
    if (ls->depth == 0)
        ls->not_object = kind != '{';
    else if (ls->depth == 1)
        member_starts(ls, at);
    if (ls->route && ls->depth >= 1)
        rc = rs_check_visitor.open(ls->route, kind, at);
    ls->depth++;
    return rc;
}

static int ls_close(void *ctx, const char *end)
{
    line_scan *ls = ctx;
    int rc = 0;
    ls->depth--;
    if (ls->depth == 1 && ls->field >= 0)
        ls->f.len[ls->field] = (size_t)(end - ls->f.val[ls->field]);
    if (ls->route && ls->depth >= 1)
        rc = rs_check_visitor.close(ls->route, end);
    if (ls->depth == 1) {
        ls->route = NULL;
        ls->field = -1;
    }
    return rc;
}

static int ls_scalar(void *ctx, const char *v, size_t len)
{
    line_scan *ls = ctx;
    if (ls->depth == 0) {
        ls->not_object = 1;
        return 0;
    }
    int rc = 0;
    if (ls->depth == 1) {
        member_starts(ls, v);
        if (ls->field >= 0)
            ls->f.len[ls->field] = len;
    }
    if (ls->route)
        rc = rs_check_visitor.scalar(ls->route, v, len);
    if (ls->depth == 1) {
        ls->route = NULL;
        ls->field = -1;
    }
    return rc;
}

static const rs_json_visitor line_visitor = {
    .key = ls_key,
    .open = ls_open,
    .close = ls_close,
    .scalar = ls_scalar,
};

/* Content or metadata not checked during the scan: check its canonical text now. */
static int check_late(line_scan *ls, int m, const rs_rule *r, const char *v, size_t len,
                      rs_err *err)
{
    rs_check *k = m ? &ls->metadata : &ls->content;
    if (ls->checked[m])
        return 0;
    rs_check_init(k, m ? r->metadata : r->content, m ? "metadata" : "content");
    ls->checked[m] = 1;
    return rs_check_text(k, v, len, err);
}

int rs_event_parse(rs_event **out, const char *line, size_t len, const rs_event_ctx *ctx,
                   rs_err *err)
{
    *out = NULL;
    size_t max = ctx->max_bytes ? ctx->max_bytes : RS_DEFAULT_MAX_EVENT;
    if (len > max)
        return rs_err_set(err, -EMSGSIZE, "event is %zu bytes, over the %zu-byte limit", len, max);
    /* The scan's state and the canonical line are needed only while the event is parsed:
     * both live on the stack (a long line's bytes excepted). */
    char small[4096];
    char *canon = len < sizeof small ? small : malloc(len + 1);
    line_scan scan, *ls = &scan;
    rs_event *ev = NULL;
    int rc = 0;
    if (!canon)
        return rs_err_set(err, -ENOMEM, "out of memory");
    memset(&ls->f, 0, sizeof ls->f);
    ls->ctx = ctx;
    ls->depth = 0;
    ls->field = -1;
    ls->route = NULL;
    ls->checked[0] = ls->checked[1] = 0;
    ls->not_object = 0;
    ls->member_err.code = 0;
    ls->rule_of = NULL;
    size_t n = 0;
    if ((rc = rs_json_scan(canon, &n, line, len, &line_visitor, ls, err)))
        goto done;
    if (ls->not_object) {
        rc = rs_err_set(err, -EINVAL, "event is not a JSON object (got %s)", rs_json_kind(canon));
        goto done;
    }
    if (ls->member_err.code) {
        rc = rs_err_set(err, ls->member_err.code, "%s", ls->member_err.msg);
        goto done;
    }
    const char *cv = ls->f.val[RS_F_CONTENT] ? ls->f.val[RS_F_CONTENT] : "\"\"";
    size_t cl = ls->f.val[RS_F_CONTENT] ? ls->f.len[RS_F_CONTENT] : 2;
    const char *mv = ls->f.val[RS_F_METADATA] ? ls->f.val[RS_F_METADATA] : "{}";
    size_t ml = ls->f.val[RS_F_METADATA] ? ls->f.len[RS_F_METADATA] : 2;
    if (!(ev = event_new(cl, ml))) {
        rc = rs_err_set(err, -ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = rs_event_envelope(ev, &ls->f, ctx, err)))
        goto done;
    /* The rule the scan looked up is the event type's: the envelope refused any other. */
    rs_rule r;
    if (ls->rule_of)
        r = ls->rule;
    else if (ctx->import && !ctx->strict)
        memset(&r, 0, sizeof r);
    else
        rs_contract_rule(ctx->contract, ev->event_type, &r);
    if ((rc = check_late(ls, 0, &r, cv, cl, err)) || (rc = rs_check_form(&ls->content, err)) ||
        (rc = check_late(ls, 1, &r, mv, ml, err)) || (rc = rs_check_form(&ls->metadata, err)) ||
        (rc = rs_contract_check_name(&r, ev->event_type, err)) ||
        (rc = rs_check_schema(&ls->content, err)) || (rc = rs_check_schema(&ls->metadata, err)))
        goto done;
    rc = event_bytes(ev, cv, cl, mv, ml, err);
done:
    if (ls->checked[0])
        rs_check_release(&ls->content);
    if (ls->checked[1])
        rs_check_release(&ls->metadata);
    if (canon != small)
        free(canon);
    if (rc) {
        rs_event_free(ev);
        if (err) /* a reason is one line, whatever the input quoted in it held */
            for (char *p = err->msg; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                    *p = '?';
    } else
        *out = ev;
    return rc;
}

/* ---- encoding ------------------------------------------------------------------------- */

static char *put_i64(char *o, int64_t v)
{
    char t[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        t[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *o++ = '-';
    while (n)
        *o++ = t[--n];
    return o;
}

static int quote_cstr(rs_buf *out, const char *s)
{
    return s ? rs_buf_add_json_string(out, s, strlen(s)) : rs_buf_addlit(out, "null");
}

/* The tails event_bytes gives metadata_db when the content is JSON (and an object). */
static const char tail_json[] = "\"content_is_json\":true}";
static const char tail_dict[] = "\"content_is_json\":true,\"content_is_dict\":true}";

static size_t tail_at(const char *s, size_t len, const char *tail, size_t tail_len)
{
    return len > tail_len && memcmp(s + len - tail_len, tail, tail_len) == 0 ? len - tail_len : 0;
}

/* 1 for the bytes a JSON string holds as they are, below DEL (ids, types and categories
 * are made of them). */
static const unsigned char plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* The length of s when it can go between quotes as it is, else SIZE_MAX. */
static size_t plain_len(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (plain_byte[*p])
        p++;
    return *p ? SIZE_MAX : (size_t)(p - (const unsigned char *)s);
}

static char *put_mem(char *o, const void *s, size_t n)
{
    memcpy(o, s, n);
    return o + n;
}

#define PUT_LIT(o, lit) put_mem((o), "" lit, sizeof(lit) - 1)

static char *put_quoted(char *o, const char *s, size_t n)
{
    *o++ = '"';
    o = put_mem(o, s, n);
    *o++ = '"';
    return o;
}

/* A row runfs stored (rs_row.canonical): its columns are event_bytes's output, canonical
 * already, so the line is put together with copies, one allocation and no scan of content
 * or metadata (a string content is escaped again). 1 when the row does not have that shape
 * after all: the caller renders it the general way. */
int rs_event_stored_meta(const rs_row *row, size_t *keep, unsigned *markers)
{
    const char *meta = row->metadata;
    size_t mlen = row->metadata_len;
    if (!row->canonical || !meta || mlen < 2 || meta[0] != '{')
        return 0;
    size_t cut = tail_at(meta, mlen, tail_dict, sizeof tail_dict - 1);
    *markers = cut ? 3 : 0;
    if (!cut && (cut = tail_at(meta, mlen, tail_json, sizeof tail_json - 1)))
        *markers = 1;
    *keep = mlen;
    /* The markers follow the metadata's own members after a comma, or open it. */
    if (cut)
        *keep = meta[cut - 1] == ',' ? cut - 1 : cut == 1 ? 1 : 0;
    return *keep > 0;
}

static int encode_stored(rs_buf *out, const rs_row *row, rs_event_spans *sp)
{
    const char *meta = row->metadata, *at = row->created_at;
    size_t mlen = row->metadata_len, keep;
    unsigned cut;
    if (!rs_event_stored_meta(row, &keep, &cut))
        return 1;
    size_t ids[5] = {
        plain_len(row->thread_id),
        plain_len(row->run_id),
        plain_len(row->event_type),
        plain_len(row->category),
        row->user_id ? plain_len(row->user_id) : 0,
    };
    if (!row->content || !at || strlen(at) != 26 || at[10] != ' ' || at[19] != '.' ||
        ids[0] > RS_ID_MAX || ids[1] > RS_ID_MAX || ids[2] > RS_EVENT_TYPE_MAX ||
        ids[3] > RS_CATEGORY_MAX || ids[4] > RS_ID_MAX)
        return 1;
    size_t start = out->len;
    int rc = rs_buf_grow(out, 200 + ids[0] + ids[1] + ids[2] + ids[3] + ids[4] + mlen +
                                  (cut ? row->content_len : 0));
    if (rc)
        return rc;
    char *o = out->buf + out->len;
    o = put_quoted(PUT_LIT(o, "{\"thread_id\":"), row->thread_id, ids[0]);
    o = put_quoted(PUT_LIT(o, ",\"run_id\":"), row->run_id, ids[1]);
    o = put_i64(PUT_LIT(o, ",\"seq\":"), row->seq);
    o = put_quoted(PUT_LIT(o, ",\"event_type\":"), row->event_type, ids[2]);
    o = put_quoted(PUT_LIT(o, ",\"category\":"), row->category, ids[3]);
    o = PUT_LIT(o, ",\"content\":");
    sp->c = (size_t)(o - out->buf) - start;
    if (cut)
        o = put_mem(o, row->content, row->content_len);
    else {
        rs_buf_setlen(out, (size_t)(o - out->buf));
        if ((rc = rs_buf_add_json_string(out, row->content, row->content_len)) ||
            (rc = rs_buf_grow(out, 200 + ids[4] + mlen))) {
            rs_buf_setlen(out, start);
            return rc;
        }
        o = out->buf + out->len;
    }
    sp->clen = (size_t)(o - out->buf) - start - sp->c;
    o = PUT_LIT(o, ",\"metadata\":");
    sp->m = (size_t)(o - out->buf) - start;
    o = put_mem(o, meta, keep);
    if (cut)
        *o++ = '}';
    sp->mlen = (size_t)(o - out->buf) - start - sp->m;
    o = put_mem(PUT_LIT(o, ",\"created_at\":\""), at, 10);
    *o++ = 'T';
    o = PUT_LIT(put_mem(o, at + 11, 15), "+00:00\"");
    if (row->user_id)
        o = put_quoted(PUT_LIT(o, ",\"user_id\":"), row->user_id, ids[4]);
    o = PUT_LIT(o, "}\n");
    rs_buf_setlen(out, (size_t)(o - out->buf));
    return 0;
}

int rs_event_meta_other(rs_buf *out, const char *meta, size_t len)
{
    size_t at = out->len;
    int rc = rs_json_canon(out, meta, len, RS_JSON_LENIENT, NULL);
    if (rc != -EINVAL)
        return rc;
    rs_buf_setlen(out, at);
    return rs_buf_add_json_string(out, meta, len);
}

int rs_event_encode(rs_buf *out, const rs_row *row, rs_err *err)
{
    rs_event_spans sp;
    return rs_event_encode_spans(out, row, &sp, err);
}

int rs_event_encode_spans(rs_buf *out, const rs_row *row, rs_event_spans *sp, rs_err *err)
{
    size_t start = out->len;
    int rc;
    if (row->canonical && (rc = encode_stored(out, row, sp)) <= 0)
        return rc ? rs_err_set(err, rc, "out of memory rendering an event") : 0;
    char small[2048];
    size_t mlen = 0;
    unsigned markers = 0;
    int meta_ok = 0, meta_big = 0;

    /* Metadata first: its markers decide how content is shown. */
    if (row->metadata && row->metadata_len) {
        if (row->metadata_len < sizeof small) {
            meta_ok = rs_json_canon_to(small, &mlen, row->metadata, row->metadata_len,
                                       RS_JSON_LENIENT | RS_JSON_DROP_MARKERS, &markers,
                                       NULL) == 0 &&
                      small[0] == '{';
        } else {
            /* Scratch space past the end of out; rendered again in place below. */
            if ((rc = rs_buf_grow(out, row->metadata_len)))
                goto oom;
            meta_big = rs_json_canon_to(out->buf + out->len, &mlen, row->metadata,
                                        row->metadata_len, RS_JSON_LENIENT | RS_JSON_DROP_MARKERS,
                                        &markers, NULL) == 0 &&
                       out->buf[out->len] == '{';
            out->buf[out->len] = '\0';
        }
        if (!meta_ok && !meta_big)
            markers = 0;
    }

    size_t est = 160 + row->content_len + row->metadata_len;
    if ((rc = rs_buf_grow(out, est)))
        goto oom;
    if ((rc = rs_buf_addlit(out, "{\"thread_id\":")) || (rc = quote_cstr(out, row->thread_id)) ||
        (rc = rs_buf_addlit(out, ",\"run_id\":")) || (rc = quote_cstr(out, row->run_id)) ||
        (rc = rs_buf_addlit(out, ",\"seq\":")))
        goto oom;
    if ((rc = rs_buf_grow(out, 24)))
        goto oom;
    rs_buf_setlen(out, (size_t)(put_i64(out->buf + out->len, row->seq) - out->buf));
    if ((rc = rs_buf_addlit(out, ",\"event_type\":")) || (rc = quote_cstr(out, row->event_type)) ||
        (rc = rs_buf_addlit(out, ",\"category\":")) || (rc = quote_cstr(out, row->category)) ||
        (rc = rs_buf_addlit(out, ",\"content\":")))
        goto oom;

    sp->c = out->len - start;
    if (!row->content) {
        rc = rs_buf_addlit(out, "null");
    } else if (markers) {
        size_t at = out->len;
        rc = rs_json_canon(out, row->content, row->content_len, RS_JSON_LENIENT, NULL);
        if (rc == -EINVAL) {
            rs_buf_setlen(out, at);
            rc = rs_buf_add_json_string(out, row->content, row->content_len);
        }
    } else
        rc = rs_buf_add_json_string(out, row->content, row->content_len);
    if (rc)
        goto oom;
    sp->clen = out->len - start - sp->c;
    if ((rc = rs_buf_addlit(out, ",\"metadata\":")))
        goto oom;

    sp->m = out->len - start;
    if (meta_ok)
        rc = rs_buf_add(out, small, mlen);
    else if (meta_big) {
        size_t at = out->len;
        rc = rs_json_canon(out, row->metadata, row->metadata_len,
                           RS_JSON_LENIENT | RS_JSON_DROP_MARKERS, NULL);
        if (rc == -EINVAL) {
            rs_buf_setlen(out, at);
            rc = rs_event_meta_other(out, row->metadata, row->metadata_len);
        }
    } else
        rc = row->metadata ? rs_event_meta_other(out, row->metadata, row->metadata_len)
                           : rs_buf_addlit(out, "{}");
    if (rc)
        goto oom;
    sp->mlen = out->len - start - sp->m;
    if ((rc = rs_buf_addlit(out, ",\"created_at\":")))
        goto oom;

    char canon[RS_TIME_LEN + 1];
    if (row->created_at && !rs_time_parse(row->created_at, strlen(row->created_at), canon, NULL)) {
        if ((rc = rs_buf_grow(out, RS_TIME_LEN + 2)))
            goto oom;
        char *o = out->buf + out->len;
        o[0] = '"';
        memcpy(o + 1, canon, RS_TIME_LEN);
        o[RS_TIME_LEN + 1] = '"';
        rs_buf_setlen(out, out->len + RS_TIME_LEN + 2);
    } else if ((rc = quote_cstr(out, row->created_at)))
        goto oom;

    if (row->user_id &&
        ((rc = rs_buf_addlit(out, ",\"user_id\":")) || (rc = quote_cstr(out, row->user_id))))
        goto oom;
    if ((rc = rs_buf_addlit(out, "}\n")))
        goto oom;
    return 0;
oom:
    rs_buf_setlen(out, start);
    return rs_err_set(err, rc, "out of memory rendering an event");
}

int rs_event_line(rs_buf *out, const rs_event *ev, int64_t seq, const char *user)
{
    size_t start = out->len;
    int rc;
    if ((rc = rs_buf_grow(out, 200 + ev->content.len + ev->metadata.len)) ||
        (rc = rs_buf_addlit(out, "{\"thread_id\":")) || (rc = quote_cstr(out, ev->thread_id)) ||
        (rc = rs_buf_addlit(out, ",\"run_id\":")) || (rc = quote_cstr(out, ev->run_id)) ||
        (rc = rs_buf_addlit(out, ",\"seq\":")) || (rc = rs_buf_grow(out, 24)))
        goto fail;
    rs_buf_setlen(out, (size_t)(put_i64(out->buf + out->len, seq) - out->buf));
    if ((rc = rs_buf_addlit(out, ",\"event_type\":")) || (rc = quote_cstr(out, ev->event_type)) ||
        (rc = rs_buf_addlit(out, ",\"category\":")) || (rc = quote_cstr(out, ev->category)) ||
        (rc = rs_buf_addlit(out, ",\"content\":")) ||
        (rc = rs_buf_add(out, ev->content.buf, ev->content.len)) ||
        (rc = rs_buf_addlit(out, ",\"metadata\":")) ||
        (rc = rs_buf_add(out, ev->metadata.buf, ev->metadata.len)) ||
        (rc = rs_buf_addlit(out, ",\"created_at\":\"")) ||
        (rc = rs_buf_add(out, ev->created_at, RS_TIME_LEN)) || (rc = rs_buf_addlit(out, "\"")) ||
        (user && ((rc = rs_buf_addlit(out, ",\"user_id\":")) || (rc = quote_cstr(out, user)))) ||
        (rc = rs_buf_addlit(out, "}\n")))
        goto fail;
    return 0;
fail:
    rs_buf_setlen(out, start);
    return rc;
}

static size_t quoted_len(const char *s)
{
    return rs_json_string_len(s, strlen(s));
}

size_t rs_event_line_len(const rs_event *ev, int64_t seq, const char *user)
{
    static const char keys[] = "{\"thread_id\":,\"run_id\":,\"seq\":,\"event_type\":,"
                               "\"category\":,\"content\":,\"metadata\":,\"created_at\":\"\"}\n";
    char digits[24];
    size_t n = sizeof keys - 1;
    n += quoted_len(ev->thread_id) + quoted_len(ev->run_id) + quoted_len(ev->event_type) +
         quoted_len(ev->category) + ev->content.len + ev->metadata.len + RS_TIME_LEN;
    n += (size_t)(put_i64(digits, seq) - digits);
    if (user)
        n += sizeof ",\"user_id\":" - 1 + quoted_len(user);
    return n;
}

/* A string member of the canonical record equal to want (want NULL: the member is absent). */
static int str_member_is(const char *rec, size_t len, const char *key, const char *want)
{
    const char *v;
    size_t n;
    if (!rs_json_get(rec, len, key, strlen(key), &v, &n))
        return want == NULL;
    if (!want || v[0] != '"')
        return 0;
    rs_buf b = RS_BUF_INIT;
    int same = rs_json_unquote(&b, v, n) == 0 && strcmp(b.buf, want) == 0;
    rs_buf_release(&b);
    return same;
}

static int value_is(const char *rec, size_t len, const char *key, const rs_buf *want)
{
    const char *v;
    size_t n;
    return rs_json_get(rec, len, key, strlen(key), &v, &n) &&
           rs_json_equal(v, n, want->buf, want->len);
}

int rs_event_reimport(const rs_event *ev, const char *thread_id, const rs_buf *have, rs_buf *line,
                      rs_err *err)
{
    int rc = rs_event_line(line, ev, ev->seq, NULL);
    if (rc)
        return rc;
    if (line->len == have->len && memcmp(line->buf, have->buf, line->len) == 0)
        return 0;
    return rs_err_set(err, -EEXIST, "seq %lld of thread %s already holds a different event",
                      (long long)ev->seq, thread_id);
}

int rs_event_resend(const rs_event *ev, const char *user, const rs_buf *line, int64_t seq,
                    rs_err *err)
{
    const char *l = line->buf;
    size_t len = line->len;
    if (str_member_is(l, len, "run_id", ev->run_id) &&
        str_member_is(l, len, "event_type", ev->event_type) &&
        str_member_is(l, len, "category", ev->category) && str_member_is(l, len, "user_id", user) &&
        value_is(l, len, "content", &ev->content) && value_is(l, len, "metadata", &ev->metadata))
        return 0;
    return rs_err_set(err, -EEXIST,
                      "idempotency_key '%s' was used for a different event "
                      "(seq %lld)",
                      ev->idem_key, (long long)seq);
}
