/* timeline.h — timeline.svg of a run: the run drawn over time, one row per model call, tool
 * call and subagent task (bars), error, middleware event and run.terminal (markers), each
 * with a <title> and data-seq; a self-contained SVG (no script, no external reference).
 * The first RFS_TIMELINE_MAX elements are drawn, then how many more there were. */
#ifndef RFS_TIMELINE_H
#define RFS_TIMELINE_H

#include "glance.h"
#include "runstore.h"

#define RFS_TIMELINE_MAX 2000

typedef struct rfs_timeline rfs_timeline;

int rfs_timeline_new(rfs_timeline **out, const char *thread_id, const char *run_id);
void rfs_timeline_free(rfs_timeline *t);
int rfs_timeline_feed(rfs_timeline *t, const rfs_ev *ev);
/* The document. */
int rfs_timeline_finish(rfs_timeline *t, rs_buf *out);

#endif
