/* stats.h — stats.json of a run or a thread: counts by category and type, first and last
 * event, duration, outcome and seal, model calls, tool calls, subagent tasks, errors,
 * middleware and the gaps (DESIGN "Finding and understanding runs"). Fed the rows once in
 * seq order; memory holds the names counted and the calls still waiting for a result. */
#ifndef RFS_STATS_H
#define RFS_STATS_H

#include "glance.h"
#include "runstore.h"

typedef struct rfs_stats rfs_stats;

/* run_id NULL: the thread's stats.json (its runs' summed). */
int rfs_stats_new(rfs_stats **out, const char *thread_id, const char *run_id);
void rfs_stats_free(rfs_stats *s);
int rfs_stats_feed(rfs_stats *s, const rfs_ev *ev);
/* A thread's run that has no rows (made by mkdir) counts as a run too: run_id is added
 * when no row named it. */
int rfs_stats_add_run(rfs_stats *s, const char *run_id);
/* seal(ctx, run_id, out): append the run's seal.json, or nothing when it is not sealed. */
typedef int (*rfs_seal_fn)(void *ctx, const char *run_id, rs_buf *out);
/* The document, '\n'-terminated. */
int rfs_stats_finish(rfs_stats *s, rfs_seal_fn seal, void *ctx, rs_buf *out);

#endif
