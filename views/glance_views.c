/* glance_views.c — see glance_views.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "glance_views.h"
#include "otel.h"
#include "report.h"
#include "stats.h"
#include "timeline.h"
#include "transcript.h"
#include "rs_util.h"

int rfs_glance_kind(rfs_kind kind)
{
    return kind == RFS_T_STATS || kind == RFS_R_STATS || kind == RFS_R_TIMELINE ||
           kind == RFS_T_REPORT || kind == RFS_R_REPORT || kind == RFS_R_TL_WIN ||
           kind == RFS_R_OTEL_PART;
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
    if (kind == RFS_R_TIMELINE || kind == RFS_R_TL_WIN || kind == RFS_R_OTEL_PART)
        return 0; /* drawn from the rows alone */
    uint64_t h = RS_HASH_INIT;
    int rc = 0;
    if (kind == RFS_R_STATS || kind == RFS_R_REPORT) {
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

/* The caller run.start row rec names into agent (left unallocated when it names none, so
 * that otel.json's resource carries no gen_ai.agent.name; "" allocated when it names ""). */
static int agent_of(const rs_record *rec, rs_buf *agent)
{
    rfs_ev ev;
    rfs_ev_read_all(rec, &ev);
    int rc = rfs_jl_is(ev.said_by, '"') ? rfs_jl_text(agent, ev.said_by, 0) : 0;
    if (!rc && agent->len == 0 && rfs_jl_is(ev.said_by, '"'))
        rc = rs_buf_grow(agent, 1);
    return rc;
}

int rfs_glance_otel_new(rs_store *s, const rs_target *t, const char *service, rfs_otel **out,
                        rs_err *err)
{
    static const char *const types[] = {"run.start"};
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.run_id = t->run_id;
    q.user = t->user;
    q.event_types = types;
    q.n_event_types = 1;
    q.limit = 1;
    rs_cursor *c;
    rs_buf agent = RS_BUF_INIT;
    int rc = rs_store_query(s, &q, &c, err);
    if (rc)
        return rc;
    const rs_record *rec;
    if ((rc = rs_cursor_next(c, &rec)) == 1)
        rc = agent_of(rec, &agent);
    rs_cursor_free(c);
    if (!rc &&
        (rc = rfs_otel_new(out, t->thread_id, t->run_id, service, agent.alloc ? agent.buf : NULL)))
        rc = rs_err_set(err, rc, "out of memory");
    rs_buf_release(&agent);
    return rc;
}

/* Hand p[0..len) to the sink when it takes them (give: it is the sink's view). */
static void sink_give(rfs_glance_sink *sink, int give, const char *p, size_t len)
{
    if (sink && sink->bytes && give && len && sink->bytes(sink->ctx, p, len))
        sink->bytes = NULL;
}

/* Each run's stats.json fed from the thread's rows, for the thread's report.html: the
 * run's rows are those of a run's own pass (the same query, narrowed to the run). */
typedef struct run_feeds {
    rfs_map *runs; /* rfs_stats pointers by run id */
    rfs_stats *last;
    char last_id[RS_ID_MAX + 1]; /* the run of last */
} run_feeds;

static void run_feeds_free(run_feeds *f)
{
    for (size_t i = 0; f->runs && i < rfs_map_count(f->runs); i++)
        rfs_stats_free(*(rfs_stats **)rfs_map_val(f->runs, i));
    rfs_map_free(f->runs);
}

/* The stats of run_id (made at its first row), or NULL: out of memory. */
static rfs_stats *run_feed(run_feeds *f, const char *thread_id, const char *run_id)
{
    if (f->last && strcmp(f->last_id, run_id) == 0)
        return f->last;
    rfs_stats **v = rfs_map_get(f->runs, run_id, strlen(run_id), 1);
    if (!v || (!*v && rfs_stats_new(v, thread_id, run_id)))
        return NULL;
    /* Run ids are valid ids: they fit. */
    (void)rs_fmt(f->last_id, sizeof f->last_id, "%s", run_id);
    f->last = *v;
    return f->last;
}

typedef struct fed_runs_ctx {
    rs_store *s;
    const rs_target *t;
    run_feeds *feeds;
    rs_names *names;
    char run_id[RS_ID_MAX + 1];
} fed_runs_ctx;

/* The thread's next run and its stats.json, from what the pass fed it (a run made by
 * mkdir, with no rows, from none). */
static int next_fed_run(void *ctx, const char **run_id, rs_buf *stats)
{
    fed_runs_ctx *c = ctx;
    const char *name;
    int rc = rs_names_next(c->names, &name);
    if (rc != 1)
        return rc;
    /* Run ids are valid ids: they fit. */
    (void)rs_fmt(c->run_id, sizeof c->run_id, "%s", name);
    rfs_stats *st = run_feed(c->feeds, c->t->thread_id, c->run_id);
    if (!st)
        return -ENOMEM;
    seal_ctx sc = {.s = c->s, .t = c->t};
    *run_id = c->run_id;
    rc = rfs_stats_finish(st, seal_of, &sc, stats);
    return rc ? rc : 1;
}

/* history.jsonl's kept state: a u32 count, then each run's id (NUL-ended) and the bytes of
 * its rows that its own caller and type leave in (int64). */
int rfs_glance_history_save(rfs_map *runs, rs_buf *state)
{
    size_t n = rfs_map_count(runs);
    uint32_t count = (uint32_t)n;
    int rc = rs_buf_add(state, (const char *)&count, sizeof count);
    for (size_t i = 0; !rc && i < n; i++) {
        size_t len;
        const char *id = rfs_map_key(runs, i, &len);
        if (!(rc = rs_buf_add(state, id, len)) && !(rc = rs_buf_addch(state, '\0')))
            rc = rs_buf_add(state, rfs_map_val(runs, i), sizeof(int64_t));
    }
    return rc;
}

static int history_load(const char *p, size_t len, rfs_map *runs)
{
    const char *end = p + len;
    uint32_t count;
    if (len < sizeof count)
        return -EINVAL;
    memcpy(&count, p, sizeof count);
    p += sizeof count;
    for (uint32_t i = 0; i < count; i++) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        if (!z || (size_t)(end - z - 1) < sizeof(int64_t))
            return -EINVAL;
        int64_t *v = rfs_map_get(runs, p, (size_t)(z - p), 1);
        if (!v)
            return -ENOMEM;
        memcpy(v, z + 1, sizeof *v);
        p = z + 1 + sizeof *v;
    }
    return p == end ? 0 : -EINVAL;
}

int rfs_glance_history_count(rs_history *h, const rs_cursor *c, const rs_record *rec, rfs_map *runs,
                             int *shows)
{
    int passes;
    int rc = rs_history_passes(h, c, &passes);
    const char *run = rec->run_id ? rec->run_id : "";
    *shows = !rc && passes && !rs_history_run_hidden(h, run);
    if (rc || !passes)
        return rc;
    int64_t *v = rfs_map_get(runs, run, strlen(run), 1);
    if (!v)
        return -ENOMEM;
    *v += (int64_t)rec->line_len;
    return 0;
}

/* history.jsonl's size: the bytes of the runs h does not hide. */
static int64_t history_sum(const rs_history *h, rfs_map *runs)
{
    int64_t size = 0;
    for (size_t i = 0, n = rfs_map_count(runs); i < n; i++)
        if (!rs_history_run_hidden(h, rfs_map_key(runs, i, NULL)))
            size += *(int64_t *)rfs_map_val(runs, i);
    return size;
}

int rfs_glance_thread_all(rs_store *s, const rs_target *t, rfs_run_status_fn status,
                          void *status_ctx, rfs_glance_sink *sink, rs_buf *stats, rs_buf *report,
                          int64_t *history_size, int64_t *transcript_size, rs_err *err)
{
    rfs_stats *st = NULL;
    rfs_transcript *tr = NULL;
    rs_history *h = NULL;
    rs_buf scratch = RS_BUF_INIT;
    int64_t history = 0, transcript = 0;
    run_feeds feeds = {0};
    rfs_map *runs = NULL;
    int lines = !sink || !sink->sized;
    int rc = rfs_stats_new(&st, t->thread_id, NULL);
    if (!rc && lines)
        rc = rfs_transcript_new(&tr, t->thread_id, status, status_ctx);
    if (!rc && lines && sink && sink->transcript_state)
        rc = rfs_transcript_tally(tr);
    if (!rc && lines && sink && sink->history_state)
        rc = rfs_map_new(&runs, sizeof(int64_t));
    if (!rc && report)
        rc = rfs_map_new(&feeds.runs, sizeof(rfs_stats *));
    if (rc)
        rc = rs_err_set(err, rc, "out of memory");
    /* The hidden runs first, from the run.start and run.terminal rows. */
    if (!rc && lines)
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
            if (sink)
                sink->last_seq = rec->seq;
            if (!lines) {
                rfs_ev_read(rec, &ev);
                rfs_stats *run = report ? run_feed(&feeds, t->thread_id, rec->run_id) : NULL;
                if (report && !run) {
                    rc = rs_err_set(err, -ENOMEM, "out of memory");
                    break;
                }
                if ((rc = rfs_stats_feed(st, &ev)) || (run && (rc = rfs_stats_feed(run, &ev))))
                    break;
                continue;
            }
            rfs_ev_read_all(rec, &ev);
            rfs_stats *run = report ? run_feed(&feeds, t->thread_id, rec->run_id) : NULL;
            if (report && !run) {
                rc = rs_err_set(err, -ENOMEM, "out of memory");
                break;
            }
            if ((rc = rfs_stats_feed(st, &ev)) || (run && (rc = rfs_stats_feed(run, &ev))) ||
                (rc = runs ? rfs_glance_history_count(h, c, rec, runs, &shows)
                           : rs_history_shows(h, c, &shows)) ||
                (rc = rfs_transcript_feed(tr, &ev, &scratch)))
                break;
            history += shows ? (int64_t)rec->line_len : 0;
            transcript += (int64_t)scratch.len;
            sink_give(sink, shows && sink && sink->history, rec->line, rec->line_len);
            sink_give(sink, sink && sink->transcript, scratch.buf, scratch.len);
            if (sink && shows)
                rfs_kept_writer_add(sink->history_keep, rec->line, rec->line_len);
            if (sink)
                rfs_kept_writer_add(sink->transcript_keep, scratch.buf, scratch.len);
            rs_buf_reset(&scratch);
        }
        rs_cursor_free(c);
    }
    if (!rc)
        rc = add_runs(s, t, st, err);
    seal_ctx sc = {.s = s, .t = t};
    if (!rc)
        rc = rfs_stats_finish(st, seal_of, &sc, stats);
    fed_runs_ctx fc = {.s = s, .t = t, .feeds = &feeds};
    if (!rc && report &&
        !(rc = rs_store_names(s, RS_NAMES_RUNS, t->thread_id, NULL, t->user, &fc.names, err))) {
        rc = rfs_report_thread(t->thread_id, stats, next_fed_run, &fc, report);
        rs_names_free(fc.names);
    }
    if (!rc && runs)
        rc = rfs_glance_history_save(runs, sink->history_state);
    if (!rc && lines &&
        !(rc = rfs_transcript_finish_kept(tr, &scratch, sink ? sink->transcript_state : NULL))) {
        sink_give(sink, sink && sink->transcript, scratch.buf, scratch.len);
        if (sink)
            rfs_kept_writer_add(sink->transcript_keep, scratch.buf, scratch.len);
        *history_size = history;
        *transcript_size = transcript + (int64_t)scratch.len;
    }
    rs_buf_release(&scratch);
    run_feeds_free(&feeds);
    rfs_map_free(runs);
    rs_history_free(h);
    rfs_transcript_free(tr);
    rfs_stats_free(st);
    return rc;
}

/* What one pass over a run's rows makes: each output NULL when not wanted. */
typedef struct run_pass {
    rs_buf *stats, *timeline, *report;
    int64_t window; /* the timeline's (rfs_timeline_set_window) */
    int64_t *windows;
    rs_buf *otel;       /* otel's bytes (only with part) */
    int64_t *otel_size; /* otel.json's size */
    int64_t part;       /* otel's (rfs_otel_set_part) */
    int64_t *parts;
    const char *service;
    rfs_otel_marks **marks;     /* the pass may hand back its own (pass_run) */
    int ask_agent;              /* look otel.json's agent up before the pass (otel_first) */
    rfs_kept_writer *otel_keep; /* otel.json's bytes (counted, not in otel) kept */
    const rfs_rows *rows;       /* the run's rows as the caller holds them (NULL: the store's) */
} run_pass;

/* otel.json's head names the caller of the run's first run.start (no agent when it names
 * none, or the run has none), which a query looked for through the run's rows before the pass read
 * them again (for a run with no run.start, all of them). A pass counting otel.json's bytes
 * makes its renderer at the first row instead: with that row's caller when it is a run.start
 * (as a run begins), else with none, the guess (*guess set) that a later run.start naming one
 * proves wrong: the pass then renders otel.json again, asking first (rare: a run.start past
 * a run's first row). */
static int otel_first(const rs_record *rec, const run_pass *p, const rs_target *t, rfs_otel **ot,
                      int *guess, rs_err *err)
{
    rs_buf agent = RS_BUF_INIT;
    int rc = 0;
    *guess = !rec || strcmp(rec->event_type, "run.start") != 0;
    if (!*guess)
        rc = agent_of(rec, &agent);
    if (!rc)
        rc = rfs_otel_new(ot, t->thread_id, t->run_id, p->service, agent.alloc ? agent.buf : NULL);
    if (!rc)
        rfs_otel_set_part(*ot, p->parts && !p->otel_size ? -1 : p->part);
    rs_buf_release(&agent);
    return rc ? rs_err_set(err, rc, "out of memory") : 0;
}

/* 1 when rec, a row after a guess (otel_first), shows it wrong: the run's first run.start,
 * naming a caller (-ENOMEM). *guess is cleared at the first run.start. */
static int otel_guess_wrong(const rs_record *rec, int *guess)
{
    if (!*guess || strcmp(rec->event_type, "run.start") != 0)
        return 0;
    *guess = 0;
    rs_buf agent = RS_BUF_INIT;
    int rc = agent_of(rec, &agent);
    rc = rc ? rc : agent.alloc != 0;
    rs_buf_release(&agent);
    return rc;
}

static int pass_run(rs_store *s, const rs_target *t, const run_pass *p, rs_err *err)
{
    rfs_stats *st = NULL;
    rfs_timeline *tl = NULL;
    rfs_otel *ot = NULL;
    rfs_report *rep = NULL;
    rs_buf scratch = RS_BUF_INIT, stats = RS_BUF_INIT, timeline = RS_BUF_INIT;
    int64_t otel = 0, mark_at = 0;
    int want_otel = p->otel_size || p->otel || p->parts;
    /* otel_first's way, for a pass that only counts otel.json's bytes; its marks go to a
     * set of its own until the guess holds (again: it did not, otel.json is made anew). */
    int first = want_otel && !p->otel && !p->ask_agent, guess = 0, again = 0;
    rfs_otel_marks *marks = p->marks ? *p->marks : NULL;
    int rc = 0;
    if ((p->stats || p->report) && (rc = rfs_stats_new(&st, t->thread_id, t->run_id)))
        rc = rs_err_set(err, rc, "out of memory");
    if (!rc && (p->timeline || p->report || p->windows) &&
        (rc = rfs_timeline_new(&tl, t->thread_id, t->run_id)))
        rc = rs_err_set(err, rc, "out of memory");
    if (!rc && p->report && (rc = rfs_report_new(&rep, t->thread_id, t->run_id)))
        rc = rs_err_set(err, rc, "out of memory");
    if (!rc && first && marks && rfs_otel_marks_new(&marks))
        rc = rs_err_set(err, -ENOMEM, "out of memory");
    if (!rc && want_otel && !first)
        rc = rfs_glance_otel_new(s, t, p->service, &ot, err);
    if (tl)
        rfs_timeline_set_window(tl, p->windows && !p->timeline ? -1 : p->window);
    if (ot)
        rfs_otel_set_part(ot, p->parts && !p->otel_size ? -1 : p->part);
    rs_buf *ob = p->otel ? p->otel : &scratch;
    if (!rc) {
        rs_query q = RS_QUERY_INIT;
        q.thread_id = t->thread_id;
        q.run_id = t->run_id;
        q.user = t->user;
        rs_cursor *c = NULL;
        if (p->rows || !(rc = rs_store_query(s, &q, &c, err))) {
            const rs_record *rec;
            rfs_ev ev;
            /* Each row is read once for every view the pass makes; otel.json's bytes are
             * counted as they are made, a row's worth at a time. */
            while ((rc = p->rows ? p->rows->next(p->rows->ctx, &rec) : rs_cursor_next(c, &rec)) ==
                   1) {
                if (rep && rfs_report_reads_all(rep, rec))
                    rfs_ev_read_all(rec, &ev);
                else
                    rfs_ev_read(rec, &ev);
                if (first && !ot && !again && (rc = otel_first(rec, p, t, &ot, &guess, err)))
                    break;
                if (guess && (again = otel_guess_wrong(rec, &guess))) {
                    if (again < 0) {
                        rc = rs_err_set(err, again, "out of memory");
                        break;
                    }
                    rfs_otel_free(ot);
                    ot = NULL;
                    /* Its bytes so far were of the wrong head: none are kept. */
                    if (p->otel_keep)
                        rfs_kept_writer_drop(p->otel_keep);
                }
                if ((st && (rc = rfs_stats_feed(st, &ev))) ||
                    (tl && (rc = rfs_timeline_feed(tl, &ev))) ||
                    (rep && (rc = rfs_report_feed(rep, &ev))) ||
                    (ot && (rc = rfs_otel_feed(ot, &ev, ob))))
                    break;
                if (ot && !p->otel) {
                    otel += (int64_t)scratch.len;
                    rfs_kept_writer_add(p->otel_keep, scratch.buf, scratch.len);
                    rs_buf_reset(&scratch);
                    if (marks && otel >= mark_at)
                        mark_at = rfs_otel_mark(marks, ot, otel, rec->seq);
                }
            }
            rs_cursor_free(c);
        }
    }
    /* A run with no rows has no run.start: the guess holds. */
    if (!rc && first && !ot && !again)
        rc = otel_first(NULL, p, t, &ot, &guess, err);
    seal_ctx sc = {.s = s, .t = t};
    if (!rc && st)
        rc = rfs_stats_finish(st, seal_of, &sc, p->stats ? p->stats : &stats);
    if (!rc && tl)
        rc = rfs_timeline_finish(tl, p->timeline ? p->timeline : &timeline);
    if (!rc && p->windows)
        *p->windows = rfs_timeline_windows(tl);
    if (!rc && rep)
        rc = rfs_report_finish(rep, p->stats ? p->stats : &stats,
                               p->timeline ? p->timeline : &timeline, p->report);
    if (!rc && ot && !(rc = rfs_otel_finish(ot, ob)) && p->otel_size)
        *p->otel_size = otel + (int64_t)scratch.len;
    if (!rc && ot && !p->otel)
        rfs_kept_writer_add(p->otel_keep, scratch.buf, scratch.len);
    if (!rc && ot && p->parts)
        *p->parts = rfs_otel_parts(ot);
    if (!rc && again) {
        run_pass o = {.otel_size = p->otel_size,
                      .parts = p->parts,
                      .part = p->part,
                      .service = p->service,
                      .marks = p->marks,
                      .ask_agent = 1};
        rc = pass_run(s, t, &o, err);
    }
    if (first && marks && p->marks && marks != *p->marks) {
        /* The guess held: the marks made with it are otel.json's. */
        if (!rc && !again) {
            rfs_otel_marks_release(*p->marks);
            *p->marks = marks;
        } else {
            rfs_otel_marks_release(marks);
        }
    }
    rs_buf_release(&scratch);
    rs_buf_release(&stats);
    rs_buf_release(&timeline);
    rfs_report_free(rep);
    rfs_otel_free(ot);
    rfs_timeline_free(tl);
    rfs_stats_free(st);
    return rc;
}

int rfs_glance_run_all(rs_store *s, const rs_target *t, const char *service, rs_buf *stats,
                       rs_buf *timeline, int64_t *windows, rs_buf *report, int64_t *otel_size,
                       int64_t *parts, rfs_otel_marks **marks, rfs_kept_writer *otel_keep,
                       const rfs_rows *rows, rs_err *err)
{
    run_pass p = {.rows = rows,
                  .stats = stats,
                  .timeline = timeline,
                  .windows = windows,
                  .parts = parts,
                  .report = report,
                  .otel_size = otel_size,
                  .service = service,
                  .marks = marks,
                  .otel_keep = otel_keep};
    return pass_run(s, t, &p, err);
}

typedef struct runs_ctx {
    rs_store *s;
    const rs_target *t;
    rs_names *names;
    char run_id[RS_ID_MAX + 1];
    rs_err *err;
} runs_ctx;

/* The thread's next run and its stats.json. */
static int next_run(void *ctx, const char **run_id, rs_buf *stats)
{
    runs_ctx *c = ctx;
    const char *name;
    int rc = rs_names_next(c->names, &name);
    if (rc != 1)
        return rc;
    /* Run ids are valid ids: they fit. */
    (void)rs_fmt(c->run_id, sizeof c->run_id, "%s", name);
    rs_target r = {.thread_id = c->t->thread_id, .run_id = c->run_id, .user = c->t->user};
    run_pass p = {.stats = stats};
    *run_id = c->run_id;
    rc = pass_run(c->s, &r, &p, c->err);
    return rc ? rc : 1;
}

int rfs_glance_render(rs_store *s, rfs_kind kind, int64_t num, const char *service,
                      const rs_target *t, rs_buf *out, rs_err *err)
{
    int64_t count = 0;
    run_pass p = {.service = service};
    int rc;
    switch (kind) {
    case RFS_T_STATS:
    case RFS_T_REPORT: {
        rfs_stats *st = NULL;
        rs_buf doc = RS_BUF_INIT;
        if ((rc = rfs_stats_new(&st, t->thread_id, NULL)))
            return rs_err_set(err, rc, "out of memory");
        rs_query q = RS_QUERY_INIT;
        q.thread_id = t->thread_id;
        q.user = t->user;
        rs_cursor *c;
        if (!(rc = rs_store_query(s, &q, &c, err))) {
            const rs_record *rec;
            rfs_ev ev;
            while ((rc = rs_cursor_next(c, &rec)) == 1) {
                rfs_ev_read(rec, &ev);
                if ((rc = rfs_stats_feed(st, &ev)))
                    break;
            }
            rs_cursor_free(c);
        }
        if (!rc)
            rc = add_runs(s, t, st, err);
        seal_ctx sc = {.s = s, .t = t};
        if (!rc)
            rc = rfs_stats_finish(st, seal_of, &sc, kind == RFS_T_STATS ? out : &doc);
        rfs_stats_free(st);
        runs_ctx rc_ = {.s = s, .t = t, .err = err};
        if (!rc && kind == RFS_T_REPORT &&
            !(rc =
                  rs_store_names(s, RS_NAMES_RUNS, t->thread_id, NULL, t->user, &rc_.names, err))) {
            rc = rfs_report_thread(t->thread_id, &doc, next_run, &rc_, out);
            rs_names_free(rc_.names);
        }
        rs_buf_release(&doc);
        return rc;
    }
    case RFS_R_STATS: p.stats = out; break;
    case RFS_R_TIMELINE: p.timeline = out; break;
    case RFS_R_REPORT: p.report = out; break;
    case RFS_R_TL_WIN:
        p.timeline = num ? out : NULL;
        p.window = num;
        p.windows = num ? NULL : &count;
        break;
    case RFS_R_OTEL_PART:
        p.otel = out;
        p.part = num;
        p.parts = num ? NULL : &count;
        break;
    default: return -EINVAL;
    }
    rc = pass_run(s, t, &p, err);
    if (rc == -ENOENT)
        return rs_err_set(err, rc,
                          kind == RFS_R_TL_WIN ? "the run has fewer windows (timeline/count)"
                                               : "the run has fewer parts (otel/count)");
    return rc || num || (kind != RFS_R_TL_WIN && kind != RFS_R_OTEL_PART)
               ? rc
               : rs_buf_addf(out, "%lld\n", (long long)count);
}

int rfs_glance_thread_since(rs_store *s, const rs_target *t, rfs_run_status_fn status,
                            void *status_ctx, int64_t after_seq, rfs_thread_kept *history,
                            rfs_thread_kept *transcript, int64_t *count, int64_t *bytes,
                            int64_t *last, rs_err *err)
{
    rs_history *h = NULL;
    rfs_map *runs = NULL;
    rfs_transcript *tr = NULL;
    rs_buf scratch = RS_BUF_INIT;
    int64_t undo = 0, made = 0;
    int rc = 0;
    if (history && !(rc = rfs_map_new(&runs, sizeof(int64_t))))
        rc = history_load(history->state, history->len, runs);
    if (!rc && transcript)
        rc = rfs_transcript_resume(&tr, t->thread_id, status, status_ctx, transcript->state,
                                   transcript->len, &undo);
    if (rc)
        rc = rs_err_set(err, rc, "reading a kept state of thread %s", t->thread_id);
    /* The hidden runs now, from all the thread's run.start and run.terminal rows. */
    if (!rc && history)
        rc = rs_history_open(s, t->thread_id, t->user, &h, err);
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.user = t->user;
    q.after_seq = after_seq;
    rs_cursor *c;
    if (!rc && !(rc = rs_store_query(s, &q, &c, err))) {
        const rs_record *rec;
        rfs_ev ev;
        int shows;
        while ((rc = rs_cursor_next(c, &rec)) == 1) {
            ++*count;
            *bytes += (int64_t)rec->line_len;
            *last = rec->seq;
            if (runs && (rc = rfs_glance_history_count(h, c, rec, runs, &shows)))
                break;
            if (tr) {
                rfs_ev_read_all(rec, &ev);
                if ((rc = rfs_transcript_feed(tr, &ev, &scratch)))
                    break;
                made += (int64_t)scratch.len;
                rs_buf_reset(&scratch);
            }
        }
        rs_cursor_free(c);
    }
    if (!rc && runs) {
        history->size = history_sum(h, runs);
        rc = rfs_glance_history_save(runs, &history->next);
    }
    if (!rc && tr && !(rc = rfs_transcript_finish_kept(tr, &scratch, &transcript->next)))
        transcript->size += made + (int64_t)scratch.len - undo + rfs_transcript_adjust(tr);
    if (rc > 0)
        rc = 0;
    rs_buf_release(&scratch);
    rfs_transcript_free(tr);
    rfs_map_free(runs);
    rs_history_free(h);
    return rc;
}
