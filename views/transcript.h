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

/* A pass whose size is kept is caught up from the rows added since rather than rendered
 * again: a row's bytes are decided by the rows before it but for a run's heading, which says
 * the status of the run's first run.terminal, and a tool call, whose line waits for its result.
 * Before its first row, rfs_transcript_tally has a pass count the headings said with no
 * run.terminal yet, per run (-ENOMEM: it cannot, and no state may be kept of the pass). */
int rfs_transcript_tally(rfs_transcript *t);
/* rfs_transcript_finish, and into state (when not NULL) what a later pass resumes from. */
int rfs_transcript_finish_kept(rfs_transcript *t, rs_buf *out, rs_buf *state);
/* A pass resumed from state (rfs_transcript_finish_kept's), to be fed the rows added since:
 * *undo is what the kept size counted for the calls that waited for a result at its end
 * (they are said again, with or without one); the size now is the kept size - *undo + what
 * the pass renders from now on + rfs_transcript_adjust. -EINVAL: a state that does not
 * read. */
int rfs_transcript_resume(rfs_transcript **out, const char *thread_id, rfs_run_status_fn status,
                          void *ctx, const char *state, size_t len, int64_t *undo);
/* What the headings said before the resumed pass without a status grew by, as the first
 * run.terminal of their run came among its rows. */
int64_t rfs_transcript_adjust(const rfs_transcript *t);

#endif
