/* keeper.h — a mount's step keeper: the step data of runs this mount appended to (or whose
 * log it knows, grown by another process), kept for
 * diffs (rfs_stepkeep, views/stepdiff.h) once a run has been quiet a while, so that the
 * run's first diff reads what is kept rather than every row (issue 43). In the background,
 * off every request's path: a thread and a store connection of its own, at the lowest CPU
 * priority, one run at a time, a bounded number of rows per slice, and no slice while this
 * mount's appends are under way. */
#ifndef RFS_KEEPER_H
#define RFS_KEEPER_H

#include "mount.h"

/* Start the keeper of a read-write mount (0 otherwise too, or -errno). */
int rfs_keeper_start(rfs_mount *m);
/* Stop it: a slice under way finishes first; a run half read keeps nothing. */
void rfs_keeper_stop(rfs_mount *m);
/* This mount committed rows of thread/run (the hub, after it told the kernel), or the hub
 * found the run's log grown by another process: keep the run's step data once it has been
 * quiet RFS_KEEPER_QUIET_MS. */
void rfs_keeper_note(rfs_mount *m, const char *thread_id, const char *run_id);
/* status.json's "steps_kept" and "steps_due": runs whose step data the keeper wrote since
 * the mount, and runs it has yet to look at (waiting to be quiet, or being read). */
void rfs_keeper_counts(rfs_mount *m, int64_t *kept, int64_t *due);

#define RFS_KEEPER_QUIET_MS 1000

#endif
