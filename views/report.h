/* report.h — report.html of a run and of a thread: one self-contained page for a browser (no
 * script, nothing fetched: a Content-Security-Policy says so), every byte of event content
 * escaped. A run's page: its stats, its timeline, then its transcript (messages, tool calls
 * folded with their results, subagent tasks nested, errors and middleware marked, each
 * entry anchored by seq); past RFS_REPORT_MAX entries the first and last half of them and
 * where to read the rest. A thread's page: its runs with their stats, each linked. */
#ifndef RFS_REPORT_H
#define RFS_REPORT_H

#include "glance.h"
#include "runstore.h"

#define RFS_REPORT_MAX 2000

typedef struct rfs_report rfs_report;

int rfs_report_new(rfs_report **out, const char *thread_id, const char *run_id);
void rfs_report_free(rfs_report *r);
/* The next row of the run (seq order), read by rfs_ev_read_all, or by rfs_ev_read where
 * rfs_report_reads_all says the feed renders nothing of it yet. */
int rfs_report_feed(rfs_report *r, const rfs_ev *ev);
/* 1 when the feed of rec, the next row, renders it (an entry of the first half, or a row too
 * long to keep), and so reads what rfs_ev_read_all reads of it; 0 when it only keeps rec's
 * line, its type's facts (a call's id, a response's tool calls) or nothing: a pass that
 * feeds other views too reads most rows of a long run the cheaper way. */
int rfs_report_reads_all(const rfs_report *r, const rs_record *rec);
/* The page, from the run's stats.json and timeline.svg rendered in the same pass. */
int rfs_report_finish(rfs_report *r, const rs_buf *stats, const rs_buf *timeline, rs_buf *out);

/* A thread's page from its stats.json and, for each run in turn, run(ctx, &run_id, stats)
 * filling that run's stats.json (1 while there is one, 0 at the end, < 0 an error). */
int rfs_report_thread(const char *thread_id, const rs_buf *stats,
                      int (*run)(void *ctx, const char **run_id, rs_buf *stats), void *ctx,
                      rs_buf *out);

#endif
