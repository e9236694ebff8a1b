/* deerflow.c — DeerFlow's JSONL run event store (spec section 11) on the store's side:
 * importing its lines with their seq and created_at, and writing a record the way its
 * JsonlRunEventStore does (json.dumps with its default separators, ensure_ascii=False). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "event.h"
#include "json.h"
#include "runstore.h"
#include "rs_util.h"
#include "store_int.h"

typedef struct import_iter {
    rs_store *s;
    const char *thread_id;
    const rs_import_opts *o;
    const rs_import_src *src;
    rs_event *ev;
    rs_buf line;                /* the canonical line of a row stored, for src->stored */
    char run_id[RS_ID_MAX + 1]; /* the file being read, and the last seq taken from it */
    int64_t last_seq;
} import_iter;

/* One line into an event, or a reason why it is malformed. */
static int import_parse(import_iter *it, const char *run_id, const char *line, size_t len,
                        rs_err *err)
{
    if (!rs_id_valid(run_id))
        return rs_err_set(err, -EINVAL, "'%.80s' is not a valid run id (1-64 of [A-Za-z0-9_-])",
                          run_id);
    if (strcmp(run_id, it->run_id) != 0) {
        memcpy(it->run_id, run_id, strlen(run_id) + 1); /* valid: at most RS_ID_MAX */
        it->last_seq = 0;
    }
    const rs_terms *terms;
    int rc = rs_store_terms(it->s, &terms, err);
    if (rc)
        return rc;
    rs_event_ctx ctx = {
        .contract = terms->contract,
        .thread_id = it->thread_id,
        .run_id = run_id,
        .allow_unknown = it->s->opt.allow_unknown_events,
        .max_bytes = it->s->opt.max_event_bytes,
        .import = 1,
        .strict = it->o->strict,
    };
    rc = rs_event_parse(&it->ev, line, len, &ctx, err);
    if (rc)
        return rc;
    if (it->ev->seq > it->s->ops->seq_max) {
        rc = rs_err_set(err, -EOVERFLOW, "seq %lld is more than %s holds (%lld)",
                        (long long)it->ev->seq, it->s->ops->seq_type,
                        (long long)it->s->ops->seq_max);
        rs_event_free(it->ev);
        it->ev = NULL;
        return rc;
    }
    if (it->ev->seq <= it->last_seq) {
        rc = rs_err_set(err, -EINVAL, "seq %lld does not follow seq %lld: a file's seqs increase",
                        (long long)it->ev->seq, (long long)it->last_seq);
        rs_event_free(it->ev);
        it->ev = NULL;
        return rc;
    }
    it->last_seq = it->ev->seq;
    return 0;
}

static int import_next(void *ctx, rs_event **out, rs_err *err)
{
    import_iter *it = ctx;
    rs_event_free(it->ev);
    it->ev = NULL;
    for (;;) {
        const char *run_id, *line;
        size_t len;
        int rc = it->src->next(it->src->ctx, &run_id, &line, &len, err);
        if (rc <= 0)
            return rc;
        if ((rc = import_parse(it, run_id, line, len, err)) == 0) {
            *out = it->ev;
            return 1;
        }
        if (rc != -EINVAL && rc != -EMSGSIZE)
            return rc;
        if (!it->src->bad || (rc = it->src->bad(it->src->ctx, err)) < 0)
            return rc;
    }
}

/* A row stored, told to src->stored as a read gives it. */
static int import_stored(void *ctx, const rs_event *ev, rs_err *err)
{
    import_iter *it = ctx;
    if (!it->src->stored)
        return 0;
    rs_buf_reset(&it->line);
    int rc = rs_event_line(&it->line, ev, ev->seq, it->o->user);
    if (rc)
        return rs_err_set(err, rc, "out of memory");
    rs_record rec = {.seq = ev->seq,
                     .thread_id = it->thread_id,
                     .run_id = ev->run_id,
                     .event_type = ev->event_type,
                     .category = ev->category,
                     .user_id = it->o->user,
                     .line = it->line.buf,
                     .line_len = it->line.len,
                     .run_off = -1,
                     .thread_off = -1};
    return it->src->stored(it->src->ctx, &rec, err);
}

int rs_store_import(rs_store *s, const char *thread_id, const rs_import_opts *o,
                    const rs_import_src *src, int64_t *added, int64_t *skipped, rs_err *err)
{
    *added = *skipped = 0;
    if (s->opt.read_only)
        return rs_err_set(err, -EROFS, "the store is open read-only");
    if (!rs_id_valid(thread_id))
        return rs_err_set(err, -EINVAL,
                          "'%.80s' is not a valid thread id (1-64 of "
                          "[A-Za-z0-9_-])",
                          thread_id);
    if (o->floor < 0)
        return rs_err_set(err, -EINVAL, "a seq watermark cannot be negative");
    if (o->floor > s->ops->seq_max)
        return rs_err_set(err, -EOVERFLOW, "seq watermark %lld is more than %s holds (%lld)",
                          (long long)o->floor, s->ops->seq_type, (long long)s->ops->seq_max);
    import_iter it = {.s = s, .thread_id = thread_id, .o = o, .src = src, .line = RS_BUF_INIT};
    rs_target t = {.thread_id = thread_id, .user = o->user};
    int rc =
        s->ops->import(s->be, &t, o->floor, import_next, import_stored, &it, added, skipped, err);
    rs_event_free(it.ev);
    rs_buf_release(&it.line);
    return rc;
}

/* Copy canonical (compact) JSON with Python's separators: ", " and ": " outside strings. */
static int add_spaced(rs_buf *out, const char *v, size_t n)
{
    int rc = rs_buf_grow(out, n + n / 4 + 16);
    size_t from = 0;
    int in_str = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        char c = v[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == ',' || c == ':') {
            if (!(rc = rs_buf_add(out, v + from, i + 1 - from)))
                rc = rs_buf_addch(out, ' ');
            from = i + 1;
        }
    }
    return rc ? rc : rs_buf_add(out, v + from, n - from);
}

enum { D_THREAD, D_RUN, D_SEQ, D_TYPE, D_CATEGORY, D_CONTENT, D_METADATA, D_CREATED, D_COUNT };

static const char *const line_keys[D_COUNT] = {
    "thread_id", "run_id", "seq", "event_type", "category", "content", "metadata", "created_at",
};

typedef struct line_parts {
    const char *val[D_COUNT];
    size_t len[D_COUNT];
} line_parts;

static int on_part(void *ctx, const char *key, size_t kl, const char *val, size_t vl)
{
    line_parts *p = ctx;
    for (int i = 0; i < D_COUNT; i++)
        if (strlen(line_keys[i]) == kl && memcmp(key, line_keys[i], kl) == 0) {
            p->val[i] = val;
            p->len[i] = vl;
        }
    return 0;
}

int rs_deerflow_line(rs_buf *out, const char *line, size_t len, rs_err *err)
{
    while (len && line[len - 1] == '\n')
        len--;
    line_parts p = {0};
    int rc = rs_json_members(line, len, on_part, &p);
    for (int i = 0; !rc && i < D_COUNT; i++)
        if (!p.val[i])
            rc = -EINVAL;
    if (rc)
        return rs_err_set(err, -EINVAL, "not a record line");
    /* created_at as Python's isoformat() of the UTC time: no fraction when it is zero. */
    const char *ts = p.val[D_CREATED];
    size_t tl = p.len[D_CREATED];
    int whole = tl == RS_TIME_LEN + 2 && memcmp(ts + 20, ".000000", 7) == 0;
    size_t start = out->len;
    static const int order[] = {D_THREAD, D_RUN, D_TYPE, D_CATEGORY, D_CONTENT, D_METADATA, D_SEQ};
    for (size_t i = 0; !rc && i < sizeof order / sizeof order[0]; i++) {
        int k = order[i];
        if ((rc = rs_buf_addstr(out, i ? ", \"" : "{\"")) ||
            (rc = rs_buf_addstr(out, line_keys[k])) || (rc = rs_buf_addstr(out, "\": ")))
            break;
        rc = k == D_CONTENT || k == D_METADATA ? add_spaced(out, p.val[k], p.len[k])
                                               : rs_buf_add(out, p.val[k], p.len[k]);
    }
    if (!rc && !(rc = rs_buf_addstr(out, ", \"created_at\": ")))
        rc = rs_buf_add(out, ts, whole ? 20 : tl);
    if (!rc && whole)
        rc = rs_buf_add(out, ts + 27, tl - 27);
    if (!rc)
        rc = rs_buf_addstr(out, "}\n");
    if (rc) {
        rs_buf_setlen(out, start);
        return rs_err_set(err, rc, "out of memory");
    }
    return 0;
}
