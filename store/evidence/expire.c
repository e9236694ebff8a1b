/* expire.c — retention (DESIGN "Forgetting"): which whole runs go, by age of their newest
 * event or by their rank in their thread, and what each leaves in expired.jsonl (what its
 * seal said, signed with the store's key). The backend removes a run as a delete does, and
 * as completely as a redaction. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "event.h"
#include "runstore.h"
#include "rs_util.h"
#include "sign.h"
#include "store_int.h"

#define POLICY_MAX 128

int rs_duration_parse(const char *text, int64_t *seconds, rs_err *err)
{
    static const struct {
        char unit;
        int64_t s;
    } units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 7 * 86400}};
    size_t n = text ? strspn(text, "0123456789") : 0;
    for (size_t i = 0; n && n <= 9 && i < sizeof units / sizeof *units; i++)
        if (text[n] == units[i].unit && !text[n + 1]) {
            *seconds = strtoll(text, NULL, 10) * units[i].s;
            if (*seconds > 0)
                return 0;
        }
    return rs_err_set(err, -EINVAL,
                      "duration '%.40s': a positive whole number and a unit, s m h d or w "
                      "(30d, 12h)",
                      text ? text : "");
}

/* ---- expired.jsonl ---------------------------------------------------------------------- */

static int add_str_or_null(rs_buf *out, const char *v)
{
    return v ? rs_buf_add_json_string(out, v, strlen(v)) : rs_buf_addlit(out, "null");
}

static int render(rs_buf *out, const rs_expire_row *x)
{
    size_t start = out->len;
    int rc = rs_buf_addlit(out, "{\"thread_id\":") ||
             rs_buf_add_json_string(out, x->thread_id, strlen(x->thread_id)) ||
             rs_buf_addlit(out, ",\"run_id\":") ||
             rs_buf_add_json_string(out, x->run_id, strlen(x->run_id)) ||
             rs_buf_addf(out,
                         ",\"upper_seq\":%lld,\"events\":%lld,\"digest\":", (long long)x->upper_seq,
                         (long long)x->events) ||
             add_str_or_null(out, x->digest) || rs_buf_addlit(out, ",\"root\":") ||
             add_str_or_null(out, x->root) || rs_buf_addlit(out, ",\"sealed_at\":") ||
             add_str_or_null(out, x->sealed_at) || rs_buf_addlit(out, ",\"expired_at\":") ||
             add_str_or_null(out, x->expired_at) || rs_buf_addlit(out, ",\"policy\":") ||
             add_str_or_null(out, x->policy) || rs_buf_addlit(out, ",\"note\":") ||
             add_str_or_null(out, x->note) || rs_buf_addlit(out, "}\n");
    if (rc)
        rs_buf_setlen(out, start);
    return rc ? -ENOMEM : 0;
}

typedef struct listing {
    rs_buf *out;
    const char *thread_id;
} listing;

static int on_render(void *ctx, const rs_expire_row *x)
{
    listing *l = ctx;
    return l->thread_id && strcmp(l->thread_id, x->thread_id) != 0 ? 0 : render(l->out, x);
}

int rs_store_expired(rs_store *s, const char *user, const char *thread_id, rs_buf *out, rs_err *err)
{
    listing l = {.out = out, .thread_id = thread_id};
    int rc = s->ops->expired_each(s->be, user, on_render, &l, err);
    return rc == -ENOMEM ? rs_err_set(err, rc, "out of memory") : rc;
}

/* ---- choosing the runs ------------------------------------------------------------------- */

typedef struct run_pick {
    char id[RS_ID_MAX + 1];
    int64_t newest_ns; /* its newest event's created_at */
    int64_t count, last_seq;
} run_pick;

/* Newest first: by newest event, ties by run id (the larger is the newer). */
static int by_newest(const void *a, const void *b)
{
    const run_pick *x = a, *y = b;
    if (x->newest_ns != y->newest_ns)
        return x->newest_ns > y->newest_ns ? -1 : 1;
    return -strcmp(x->id, y->id);
}

/* The names kind lists (copied: a listing's names live until its next call), NUL-separated. */
static int list_names(rs_store *s, rs_names_kind kind, const char *thread_id, const char *user,
                      rs_buf *out, size_t *n, rs_err *err)
{
    rs_names *names;
    int rc = rs_store_names(s, kind, thread_id, NULL, user, &names, err);
    if (rc)
        return rc;
    const char *name;
    *n = 0;
    while ((rc = rs_names_next(names, &name)) > 0) {
        if (rs_buf_add(out, name, strlen(name) + 1)) {
            rc = rs_err_set(err, -ENOMEM, "out of memory");
            break;
        }
        (*n)++;
    }
    rs_names_free(names);
    return rc < 0 ? rc : 0;
}

/* The thread's runs with events, as o's owner sees them, newest first. */
static int thread_runs(rs_store *s, const rs_expire_opts *o, const char *thread_id, run_pick **out,
                       size_t *n, rs_err *err)
{
    rs_buf ids = RS_BUF_INIT;
    size_t count = 0, cap = 0;
    run_pick *v = NULL;
    int rc = list_names(s, RS_NAMES_RUNS, thread_id, o->user, &ids, &count, err);
    *n = 0;
    for (size_t i = 0, at = 0; !rc && i < count; i++, at += strlen(ids.buf + at) + 1) {
        const char *id = ids.buf + at;
        rs_log_info info;
        if ((rc = rs_store_log_info(s, thread_id, id, o->user, &info, err)))
            break;
        if (!info.exists || info.count == 0)
            continue; /* a run with no events never goes */
        if (rs_array_grow(&v, &cap, *n + 1, sizeof *v)) {
            rc = rs_err_set(err, -ENOMEM, "out of memory");
            break;
        }
        run_pick *p = &v[(*n)++];
        memcpy(p->id, id, strlen(id) + 1);
        p->newest_ns = info.mtime_ns;
        p->count = info.count;
        p->last_seq = info.last_seq;
    }
    rs_buf_release(&ids);
    if (rc) {
        free(v);
        return rc;
    }
    if (*n)
        qsort(v, *n, sizeof *v, by_newest);
    *out = v;
    return 0;
}

/* ---- one run ------------------------------------------------------------------------------ */

typedef struct expiry {
    rs_seal_row seal;
    int sealed;
    char owner[RS_ID_MAX + 1];
    int has_owner;
    char policy[POLICY_MAX];
    char at[RS_TIME_LEN + 1];
    char note[RS_NOTE_MAX];
} expiry;

/* The owner of the run's first row of o's owner (the run's owner for an unscoped expiry). */
static int first_owner(rs_store *s, const rs_target *t, expiry *e, rs_err *err)
{
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.run_id = t->run_id;
    q.user = t->user;
    q.limit = 1;
    rs_cursor *cur;
    const rs_record *rec;
    int rc = rs_store_query_first(s, &q, &cur, &rec, err);
    if (rc > 0 && rec->user_id && rs_fmt(e->owner, sizeof e->owner, "%s", rec->user_id) >= 0)
        e->has_owner = 1;
    rs_cursor_free(cur);
    return rc < 0 ? rc : 0;
}

/* The seal t's expiry removes: t->user's, else (unscoped) the unscoped one's, else the
 * owner's, who saw the rows. */
static int find_seal(rs_store *s, const rs_target *t, expiry *e, rs_err *err)
{
    int rc = s->ops->seal_get(s->be, t, &e->seal, err);
    if (rc == -ENOENT && !t->user && e->has_owner) {
        rs_target own = *t;
        own.user = e->owner;
        rc = s->ops->seal_get(s->be, &own, &e->seal, err);
    }
    if (rc == -ENOENT)
        return 0;
    e->sealed = !rc && strcmp(e->seal.state, "deleted") != 0;
    return rc;
}

static int note_sign(rs_store *s, const rs_expire_row *x, expiry *e, rs_err *err)
{
    if (!s->opt.seal_key)
        return 0;
    rs_buf body = RS_BUF_INIT;
    int rc = rs_buf_addf(&body,
                         "runfs expiry v1\nthread %s\nrun %s\nupper_seq %lld\nevents %lld\nroot "
                         "%s\nexpired_at %s\npolicy %s\n",
                         x->thread_id, x->run_id, (long long)x->upper_seq, (long long)x->events,
                         x->root ? x->root : "null", x->expired_at, x->policy)
                 ? rs_err_set(err, -ENOMEM, "out of memory")
                 : rs_note_sign(s->opt.seal_key, body.buf, body.len, e->note, err);
    rs_buf_release(&body);
    return rc;
}

typedef struct expire_run {
    rs_store *s;
    const rs_expire_opts *o;
    int (*fn)(void *ctx, const char *line, size_t len);
    void *ctx;
    rs_buf *warn;
    rs_buf line;
    const char *policy;
    int64_t done;
} expire_run;

/* Remove (or, dry, show) one run: 1 removed, 0 passed over (it grew meanwhile). */
static int expire_one(expire_run *r, const char *thread_id, const run_pick *p, rs_err *err)
{
    rs_target t = {.thread_id = thread_id, .run_id = p->id, .user = r->o->user};
    expiry e;
    memset(&e, 0, sizeof e);
    int rc;
    if ((rc = first_owner(r->s, &t, &e, err)) || (rc = find_seal(r->s, &t, &e, err)))
        return rc;
    rs_time_now(e.at, NULL);
    const char *root = e.sealed && e.seal.root[0] ? e.seal.root : NULL;
    rs_expire_row x = {
        .thread_id = thread_id,
        .run_id = p->id,
        .owner = t.user        ? t.user
                 : e.has_owner ? e.owner
                               : NULL,
        /* A sealed run is told by what its seal said; another by what went. */
        .upper_seq = e.sealed ? e.seal.upper_seq : p->last_seq,
        .events = e.sealed ? e.seal.event_count : p->count,
        .digest = e.sealed ? e.seal.digest : NULL,
        .root = root,
        .sealed_at = e.sealed ? e.seal.sealed_at : NULL,
        .expired_at = e.at,
        .policy = r->policy,
        .rows = p->count,
        .top_seq = p->last_seq,
    };
    if ((rc = note_sign(r->s, &x, &e, err)))
        return rc;
    x.note = e.note[0] ? e.note : NULL;
    if (!r->o->dry_run) {
        rc = r->s->ops->expire(r->s->be, &t, &x, r->warn, err);
        if (rc == -EAGAIN)
            return 0;
        if (rc)
            return rc;
    }
    rs_buf_reset(&r->line);
    if (render(&r->line, &x))
        return rs_err_set(err, -ENOMEM, "out of memory");
    if (r->fn && (rc = r->fn(r->ctx, r->line.buf, r->line.len)))
        return rc;
    return 1;
}

static int expire_thread(expire_run *r, const char *thread_id, int64_t cutoff_ns, rs_err *err)
{
    run_pick *v = NULL;
    size_t n = 0;
    int rc = thread_runs(r->s, r->o, thread_id, &v, &n, err);
    for (size_t i = 0; !rc && i < n; i++) {
        if (r->o->keep_runs >= 0 && (int64_t)i < r->o->keep_runs)
            continue;
        if (r->o->older_than_s >= 0 && v[i].newest_ns >= cutoff_ns)
            continue;
        if ((rc = expire_one(r, thread_id, &v[i], err)) > 0) {
            r->done++;
            rc = 0;
        }
    }
    free(v);
    return rc;
}

int rs_store_expire(rs_store *s, const rs_expire_opts *o,
                    int (*fn)(void *ctx, const char *line, size_t len), void *ctx, rs_buf *warn,
                    rs_err *err)
{
    if (!o || o->version != RS_EXPIRE_VERSION)
        return rs_err_set(err, -EINVAL, "unknown rs_expire_opts version");
    if (o->older_than_s < 0 && o->keep_runs < 0)
        return rs_err_set(err, -EINVAL,
                          "retention needs an age (--older-than) or a count "
                          "(--keep-runs)");
    if ((o->thread_id && !rs_id_valid(o->thread_id)) || (o->user && !rs_id_valid(o->user)))
        return rs_err_set(err, -EINVAL, "invalid thread or user id");
    if (s->opt.read_only && !o->dry_run)
        return rs_err_set(err, -EROFS, "the store is opened read-only");
    char policy[POLICY_MAX];
    if (!o->policy &&
        (o->older_than_s >= 0
             ? rs_fmt(policy, sizeof policy, "older-than %llds", (long long)o->older_than_s)
             : rs_fmt(policy, sizeof policy, "keep-runs %lld", (long long)o->keep_runs)) < 0)
        return rs_err_set(err, -EOVERFLOW, "policy too long");
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t cutoff_ns =
        ((int64_t)now.tv_sec - (o->older_than_s > 0 ? o->older_than_s : 0)) * 1000000000LL +
        now.tv_nsec;
    expire_run r = {.s = s,
                    .o = o,
                    .fn = fn,
                    .ctx = ctx,
                    .warn = warn,
                    .line = RS_BUF_INIT,
                    .policy = o->policy ? o->policy : policy};
    rs_buf threads = RS_BUF_INIT;
    size_t count = 1;
    int rc = 0;
    if (o->thread_id)
        rc = rs_buf_add(&threads, o->thread_id, strlen(o->thread_id) + 1)
                 ? rs_err_set(err, -ENOMEM, "out of memory")
                 : 0;
    else
        rc = list_names(s, RS_NAMES_THREADS, NULL, o->user, &threads, &count, err);
    for (size_t i = 0, at = 0; !rc && i < count; i++, at += strlen(threads.buf + at) + 1)
        rc = expire_thread(&r, threads.buf + at, cutoff_ns, err);
    rs_buf_release(&threads);
    rs_buf_release(&r.line);
    return rc < 0 ? rc : (int)(r.done > INT32_MAX ? INT32_MAX : r.done);
}
