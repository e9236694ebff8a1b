/* transcript.h — threads/T/transcript.md: a thread's events as a person reads them (runs as
 * headings with their status, messages as role and text, a tool call and its result as one
 * line, errors marked, other events one generic line each). Rendered row by row, so the
 * cost is linear in the thread and memory holds only the calls still waiting for a result. */
#ifndef RFS_TRANSCRIPT_H
#define RFS_TRANSCRIPT_H

#include "glance.h"
#include "runstore.h"

typedef struct rfs_transcript rfs_transcript;

/* status(ctx, run_id, out): append the line of the run's run.terminal event to out, or
 * nothing when the run has none yet. */
typedef int (*rfs_run_status_fn)(void *ctx, const char *run_id, rs_buf *out);

int rfs_transcript_new(rfs_transcript **out, const char *thread_id, rfs_run_status_fn status,
                       void *ctx);
/* The ctx status is called with from now on (its reader took the rendering over). */
void rfs_transcript_set_ctx(rfs_transcript *t, void *ctx);
void rfs_transcript_free(rfs_transcript *t);
/* Render the next record of the thread (seq order), read by rfs_ev_read_all, to out. */
int rfs_transcript_feed(rfs_transcript *t, const rfs_ev *ev, rs_buf *out);
/* The rows ended: calls that never got a result, and the header of an empty thread. */
int rfs_transcript_finish(rfs_transcript *t, rs_buf *out);

#endif
