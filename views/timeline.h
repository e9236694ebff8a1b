/* timeline.h — timeline.svg of a run: the run drawn over time, one row per model call, tool
 * call and subagent task (bars), error, middleware event and run.terminal (markers), each
 * with a <title> and data-seq; a self-contained SVG (no script, no external reference).
 * Past RFS_TIMELINE_MAX elements the document is an overview of the whole run whose slices
 * link to windows of consecutive time, timeline/<n>.svg, of at most that many each. */
#ifndef RFS_TIMELINE_H
#define RFS_TIMELINE_H

#include "glance.h"
#include "runstore.h"

#define RFS_TIMELINE_MAX 2000

typedef struct rfs_timeline rfs_timeline;

int rfs_timeline_new(rfs_timeline **out, const char *thread_id, const char *run_id);
void rfs_timeline_free(rfs_timeline *t);
int rfs_timeline_feed(rfs_timeline *t, const rfs_ev *ev);
/* Draw window n (1, 2, ...) instead of timeline.svg; < 0: nothing (rfs_timeline_windows
 * after the finish). Its finish is -ENOENT past the run's windows. */
void rfs_timeline_set_window(rfs_timeline *t, int64_t window);
/* After the finish: how many windows the run has (1 when timeline.svg draws it whole). */
int64_t rfs_timeline_windows(const rfs_timeline *t);
/* The document. */
int rfs_timeline_finish(rfs_timeline *t, rs_buf *out);

#endif
