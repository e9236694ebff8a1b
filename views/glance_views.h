/* glance_views.h — the run at a glance as files: stats.json (of a run and of a thread) and
 * timeline.svg, documents rendered from one pass over the rows (view.c keeps their bytes
 * until the thread changes); otel.json is a stream (otel.h), rendered as it is read. */
#ifndef RFS_GLANCE_VIEWS_H
#define RFS_GLANCE_VIEWS_H

#include "node.h"
#include "otel.h"
#include "runstore.h"
#include "sizes.h"
#include "transcript.h"

/* 1 for the documents rendered here (stats.json, timeline.svg and its windows, report.html,
 * otel.json's parts). */
int rfs_glance_kind(rfs_kind kind);
/* Append to a kept rendering's key what its log info does not tell: the seal of the run
 * (of each of the thread's runs, for a thread's stats.json), which changes no row. */
int rfs_glance_key(rs_store *s, rfs_kind kind, const rs_target *t, rs_buf *key, rs_err *err);
/* Render document kind of t (t->run_id unused for a thread's) to out; num: the window or
 * part (0: their count); service: otel's service.name (NULL: runfs). */
int rfs_glance_render(rs_store *s, rfs_kind kind, int64_t num, const char *service,
                      const rs_target *t, rs_buf *out, rs_err *err);
/* A run's stats.json, timeline.svg and report.html rendered, timeline/count's windows,
 * otel.json's size and otel/count's parts counted, in one pass over its rows (what a first
 * ls -la or du of the run needs); otel.json's positions kept in *marks (NULL: none), which
 * the pass may replace with a set of its own (releasing the one given); otel.json's bytes
 * written to otel_keep (NULL: not kept; dropped when the pass renders otel.json again). */
/* rows (NULL: the store's): the run's rows as a caller holds them, in seq order (next: 1
 * with *rec, valid until the next call; 0 at the end), so that the pass reads none back. */
typedef struct rfs_rows {
    int (*next)(void *ctx, const rs_record **rec);
    void *ctx;
} rfs_rows;
int rfs_glance_run_all(rs_store *s, const rs_target *t, const char *service, rs_buf *stats,
                       rs_buf *timeline, int64_t *windows, rs_buf *report, int64_t *otel_size,
                       int64_t *parts, rfs_otel_marks **marks, rfs_kept_writer *otel_keep,
                       const rfs_rows *rows, rs_err *err);
/* otel.json's renderer for run t, its resource's gen_ai.agent.name the caller of the run's
 * first run.start. */
int rfs_glance_otel_new(rs_store *s, const rs_target *t, const char *service, rfs_otel **out,
                        rs_err *err);

/* Where rfs_glance_thread_all hands the bytes of history.jsonl or transcript.md (the one
 * flagged) as it makes them; bytes returning nonzero stops the bytes, not the pass. The
 * bytes of both are written to the writers given (NULL: not kept). */
typedef struct rfs_glance_sink {
    int history, transcript;
    int (*bytes)(void *ctx, const char *p, size_t len);
    void *ctx;
    rfs_kept_writer *history_keep, *transcript_keep;
    /* What a later pass over the rows added since resumes from (rfs_glance_thread_since),
     * written here when not NULL. */
    rs_buf *history_state, *transcript_state;
    /* history.jsonl's and transcript.md's sizes are kept at this state of the thread (a
     * stat caught them up): the pass makes only stats.json and report.html, their sizes
     * left as they were. */
    int sized;
    int64_t last_seq; /* out: the highest seq the pass read (left when none) */
} rfs_glance_sink;

/* A thread's stats.json and report.html (report NULL: not) rendered, and its
 * history.jsonl's and transcript.md's sizes counted, in one pass over its rows (what a
 * first ls -la of the thread needs; DESIGN "Performance principles"). status: the
 * transcript's run.terminal lines; sink: NULL or where one view's bytes go. */
int rfs_glance_thread_all(rs_store *s, const rs_target *t, rfs_run_status_fn status,
                          void *status_ctx, rfs_glance_sink *sink, rs_buf *stats, rs_buf *report,
                          int64_t *history_size, int64_t *transcript_size, rs_err *err);

/* history.jsonl's rows counted by run into runs (int64 bytes by run id) for its kept state:
 * rec, the row c gave (of h's thread and owner, in seq order), counted when its own caller
 * and type leave it in; *shows: whether history.jsonl shows it now. */
int rfs_glance_history_count(rs_history *h, const rs_cursor *c, const rs_record *rec, rfs_map *runs,
                             int *shows);
/* The kept state of history.jsonl's rows counted into runs, appended to state. */
int rfs_glance_history_save(rfs_map *runs, rs_buf *state);

/* A size of history.jsonl or transcript.md kept at an earlier state of the thread, and
 * what its pass left to resume from (rfs_glance_sink's states). */
typedef struct rfs_thread_kept {
    const char *state; /* in: the kept state */
    size_t len;
    int64_t size; /* in: the kept size; out: the size now */
    rs_buf next;  /* out (the caller's to release): the state now */
} rfs_thread_kept;
/* The sizes now of history.jsonl and transcript.md (either NULL: not that one) from their
 * kept ones at the state whose last row was after_seq, in one pass over the rows added
 * since: history.jsonl's is kept by run, as a later row may hide or show a run; transcript.md's
 * pass resumes where the kept one stopped. *count, *bytes, *last: the rows read, their lines'
 * bytes and the highest seq (left as it was when none), which the caller checks against the
 * change of the thread's log. -EINVAL: a state that does not read. */
int rfs_glance_thread_since(rs_store *s, const rs_target *t, rfs_run_status_fn status,
                            void *status_ctx, int64_t after_seq, rfs_thread_kept *history,
                            rfs_thread_kept *transcript, int64_t *count, int64_t *bytes,
                            int64_t *last, rs_err *err);

#endif
