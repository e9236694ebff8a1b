/* glance_views.c — see glance_views.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "glance_views.h"
#include "otel.h"
#include "stats.h"
#include "timeline.h"
#include "transcript.h"
#include "rs_util.h"

int rfs_glance_kind(rfs_kind kind)
{
    return kind == RFS_T_STATS || kind == RFS_R_STATS || kind == RFS_R_TIMELINE;
}

/* The run's seal.json folded into *h (an unsealed run folds a mark of its own). */
static int fold_seal(rs_store *s, const rs_target *t, const char *run_id, uint64_t *h, rs_err *err)
{
    rs_target r = {.thread_id = t->thread_id, .run_id = run_id, .user = t->user};
    rs_buf doc = RS_BUF_INIT;
    int rc = rs_store_seal_read(s, &r, &doc, err);
    if (rc == -ENOENT)
        rc = rs_buf_addlit(&doc, "-");
    *h = rs_hash(rs_hash(*h, run_id, strlen(run_id) + 1), doc.buf, doc.len);
    rs_buf_release(&doc);
    return rc;
}

int rfs_glance_key(rs_store *s, rfs_kind kind, const rs_target *t, rs_buf *key, rs_err *err)
{
    if (kind == RFS_R_TIMELINE)
        return 0; /* drawn from the rows alone */
    uint64_t h = RS_HASH_INIT;
    int rc = 0;
    if (kind == RFS_R_STATS) {
        rc = fold_seal(s, t, t->run_id, &h, err);
    } else {
        rs_names *names;
        const char *name;
        if (!(rc = rs_store_names(s, RS_NAMES_RUNS, t->thread_id, NULL, t->user, &names, err))) {
            while ((rc = rs_names_next(names, &name)) == 1)
                if ((rc = fold_seal(s, t, name, &h, err)))
                    break;
            rs_names_free(names);
        }
    }
    return rc < 0 ? rc : rs_buf_addf(key, "\n%llx", (unsigned long long)h);
}

typedef struct seal_ctx {
    rs_store *s;
    const rs_target *t;
} seal_ctx;

static int seal_of(void *ctx, const char *run_id, rs_buf *out)
{
    seal_ctx *c = ctx;
    rs_target t = {.thread_id = c->t->thread_id, .run_id = run_id, .user = c->t->user};
    int rc = rs_store_seal_read(c->s, &t, out, NULL);
    return rc == -ENOENT ? 0 : rc;
}

/* The thread's runs, those made by mkdir with no rows too, counted by its stats.json. */
static int add_runs(rs_store *s, const rs_target *t, rfs_stats *st, rs_err *err)
{
    rs_names *names;
    int rc = rs_store_names(s, RS_NAMES_RUNS, t->thread_id, NULL, t->user, &names, err);
    if (rc)
        return rc;
    const char *name;
    while ((rc = rs_names_next(names, &name)) == 1)
        if ((rc = rfs_stats_add_run(st, name)))
            break;
    rs_names_free(names);
    return rc;
}

int rfs_glance_render(rs_store *s, rfs_kind kind, const rs_target *t, rs_buf *out, rs_err *err)
{
    rfs_stats *st = NULL;
    rfs_timeline *tl = NULL;
    int run = kind != RFS_T_STATS;
    int rc = kind == RFS_R_TIMELINE ? rfs_timeline_new(&tl, t->thread_id, t->run_id)
                                    : rfs_stats_new(&st, t->thread_id, run ? t->run_id : NULL);
    if (rc)
        return rs_err_set(err, rc, "out of memory");
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.run_id = run ? t->run_id : NULL;
    q.user = t->user;
    rs_cursor *c;
    if (!(rc = rs_store_query(s, &q, &c, err))) {
        const rs_record *rec;
        rfs_ev ev;
        while ((rc = rs_cursor_next(c, &rec)) == 1) {
            rfs_ev_read(rec, &ev);
            if ((rc = tl ? rfs_timeline_feed(tl, &ev) : rfs_stats_feed(st, &ev)))
                break;
        }
        rs_cursor_free(c);
    }
    if (!rc && !run)
        rc = add_runs(s, t, st, err);
    seal_ctx sc = {.s = s, .t = t};
    if (!rc)
        rc = tl ? rfs_timeline_finish(tl, out) : rfs_stats_finish(st, seal_of, &sc, out);
    rfs_timeline_free(tl);
    rfs_stats_free(st);
    return rc;
}

/* Hand p[0..len) to the sink when it takes them (give: it is the sink's view). */
static void sink_give(rfs_glance_sink *sink, int give, const char *p, size_t len)
{
    if (sink && sink->bytes && give && len && sink->bytes(sink->ctx, p, len))
        sink->bytes = NULL;
}

int rfs_glance_thread_all(rs_store *s, const rs_target *t, rfs_run_status_fn status,
                          void *status_ctx, rfs_glance_sink *sink, rs_buf *stats,
                          int64_t *history_size, int64_t *transcript_size, rs_err *err)
{
    rfs_stats *st = NULL;
    rfs_transcript *tr = NULL;
    rs_history *h = NULL;
    rs_buf scratch = RS_BUF_INIT;
    int64_t history = 0, transcript = 0;
    int rc = rfs_stats_new(&st, t->thread_id, NULL);
    if (!rc)
        rc = rfs_transcript_new(&tr, t->thread_id, status, status_ctx);
    if (rc)
        rc = rs_err_set(err, rc, "out of memory");
    /* The hidden runs first, from the run.start and run.terminal rows. */
    if (!rc)
        rc = rs_history_open(s, t->thread_id, t->user, &h, err);
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.user = t->user;
    rs_cursor *c;
    if (!rc && !(rc = rs_store_query(s, &q, &c, err))) {
        const rs_record *rec;
        rfs_ev ev;
        int shows;
        /* Each row is read once, for stats.json and transcript.md both. */
        while ((rc = rs_cursor_next(c, &rec)) == 1) {
            rfs_ev_read_all(rec, &ev);
            if ((rc = rfs_stats_feed(st, &ev)) || (rc = rs_history_shows(h, c, &shows)) ||
                (rc = rfs_transcript_feed(tr, &ev, &scratch)))
                break;
            history += shows ? (int64_t)rec->line_len : 0;
            transcript += (int64_t)scratch.len;
            sink_give(sink, shows && sink && sink->history, rec->line, rec->line_len);
            sink_give(sink, sink && sink->transcript, scratch.buf, scratch.len);
            rs_buf_reset(&scratch);
        }
        rs_cursor_free(c);
    }
    if (!rc)
        rc = add_runs(s, t, st, err);
    seal_ctx sc = {.s = s, .t = t};
    if (!rc)
        rc = rfs_stats_finish(st, seal_of, &sc, stats);
    if (!rc && !(rc = rfs_transcript_finish(tr, &scratch))) {
        sink_give(sink, sink && sink->transcript, scratch.buf, scratch.len);
        *history_size = history;
        *transcript_size = transcript + (int64_t)scratch.len;
    }
    rs_buf_release(&scratch);
    rs_history_free(h);
    rfs_transcript_free(tr);
    rfs_stats_free(st);
    return rc;
}

int rfs_glance_run_all(rs_store *s, const rs_target *t, rs_buf *stats, rs_buf *timeline,
                       int64_t *otel_size, rfs_otel_marks *marks, rs_err *err)
{
    rfs_stats *st = NULL;
    rfs_timeline *tl = NULL;
    rfs_otel *ot = NULL;
    rs_buf scratch = RS_BUF_INIT;
    int64_t otel = 0, mark_at = 0;
    int rc = rfs_stats_new(&st, t->thread_id, t->run_id);
    if (!rc)
        rc = rfs_timeline_new(&tl, t->thread_id, t->run_id);
    if (!rc)
        rc = rfs_otel_new(&ot, t->thread_id, t->run_id);
    if (rc) {
        rc = rs_err_set(err, rc, "out of memory");
    } else {
        rs_query q = RS_QUERY_INIT;
        q.thread_id = t->thread_id;
        q.run_id = t->run_id;
        q.user = t->user;
        rs_cursor *c;
        if (!(rc = rs_store_query(s, &q, &c, err))) {
            const rs_record *rec;
            rfs_ev ev;
            /* otel.json's bytes are counted as they are made, a row's worth at a time; each
             * row is read once for the three. */
            while ((rc = rs_cursor_next(c, &rec)) == 1) {
                rfs_ev_read(rec, &ev);
                if ((rc = rfs_stats_feed(st, &ev)) || (rc = rfs_timeline_feed(tl, &ev)) ||
                    (rc = rfs_otel_feed(ot, &ev, &scratch)))
                    break;
                otel += (int64_t)scratch.len;
                rs_buf_reset(&scratch);
                if (marks && otel >= mark_at)
                    mark_at = rfs_otel_mark(marks, ot, otel, rec->seq);
            }
            rs_cursor_free(c);
        }
    }
    seal_ctx sc = {.s = s, .t = t};
    if (!rc)
        rc = rfs_stats_finish(st, seal_of, &sc, stats);
    if (!rc)
        rc = rfs_timeline_finish(tl, timeline);
    if (!rc && !(rc = rfs_otel_finish(ot, &scratch)))
        *otel_size = otel + (int64_t)scratch.len;
    rs_buf_release(&scratch);
    rfs_otel_free(ot);
    rfs_timeline_free(tl);
    rfs_stats_free(st);
    return rc;
}
