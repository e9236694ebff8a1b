/* keeper.h — a mount's step keeper: the step data of runs this mount appended to, and of
 * runs other processes wrote (another mount, `runfs put`, DeerFlow's own rows: the change
 * feed names them after the hub saw another process commit), kept for
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
/* The hub's probe saw another process commit (or this mount changed more than the hub's
 * queue held): the keeper reads the change feed for the runs, rate-limited, a page at a
 * time. Does not wait. */
void rfs_keeper_foreign(rfs_mount *m);
/* status.json's "steps_kept" and "steps_due": runs whose step data the keeper wrote since
 * the mount, and runs it has yet to look at (waiting to be quiet, or being read; another
 * process's commit the feed was not read for yet counts as one). */
void rfs_keeper_counts(rfs_mount *m, int64_t *kept, int64_t *due);

#define RFS_KEEPER_QUIET_MS 1000

#endif
