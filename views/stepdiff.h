/* stepdiff.h — one run against another as a unified diff of their steps (DESIGN "Comparing
 * runs"): a run's diff/<run_id> and `runfs diff` print these bytes. A step line is what
 * identifies an event's step, without what always differs (seq, time, ids); the lines are
 * aligned as diff aligns lines (myers.h), and `# ` lines before the headers give the first
 * step that differs and the stats that differ. */
#ifndef RFS_STEPDIFF_H
#define RFS_STEPDIFF_H

#include "runstore.h"

/* The longest step line, in bytes (a line is cut there, never inside a character). */
#define RFS_STEP_LINE_MAX 200

/* What a diff may use beside its connection: ctx is the functions'. */
typedef struct rfs_stepdiff_io {
    /* A second connection to the same store, asked for when both runs are big and read from
     * their rows (b is then read on it, on a thread of its own, while a is read: the time is
     * about the longer read's); NULL when there is none. */
    rs_store *(*second)(void *ctx);
    /* Keep a run's step data (rs_store_steps_put) where it can be written; NULL: on the
     * connection the diff reads. Called once the runs are read: the second connection is
     * not used again (keep may close it). */
    int (*keep)(void *ctx, const rs_target *t, uint64_t kind, int64_t rewrites, const void *data,
                size_t len);
    void *ctx;
} rfs_stepdiff_io;

/* Append the diff of run a against run b (each as its user sees it; either may be of any
 * thread). -ENOENT, with the reason in err, when either run does not exist for its user.
 * A run's step lines' hashes, seqs and compared stats are kept in the store
 * (rs_store_steps_put) against the rows they were made from: a later diff of a run that did
 * not change reads those and the rows its hunks show, of a run that only grew the new rows
 * too, and of any other run all its rows. Memory grows with the two runs' steps, never with
 * their product. io may be NULL. */
int rfs_stepdiff_render(rs_store *s, const rfs_stepdiff_io *io, const rs_target *a,
                        const rs_target *b, rs_buf *out, rs_err *err);

/* A run's step data kept ahead of its first diff (by a mount's keeper, fs/keeper.c), so
 * that the diff reads what is kept, not every row. open: what is kept of run t (checked
 * against the run as it is, as a diff checks it; t's strings must outlive it); more: at most limit
 * (0: all) of the rows committed since the last ones read: 1 when limit were read (more may
 * follow), 0 when none is left, or a negative errno; close: when keep_it, keep the steps if
 * rows were read since what was kept (rs_store_steps_put on s, refused when a row was
 * changed in place or deleted since open): 1 when kept, 0 when there was nothing to keep,
 * or a negative errno. The bytes are those a diff would keep, from the same rows: a diff
 * checks them as it checks its own. */
typedef struct rfs_stepkeep rfs_stepkeep;
int rfs_stepkeep_open(rs_store *s, const rs_target *t, rfs_stepkeep **out, rs_err *err);
int rfs_stepkeep_more(rfs_stepkeep *k, int64_t limit, rs_err *err);
int rfs_stepkeep_close(rfs_stepkeep *k, int keep_it);

/* A run's step data made from its rows as a writer stores them (an import's: the rows it
 * hands its caller), so that a diff of the run reads what is kept, not its rows, and no row
 * is read back to make it. rewrites: rs_store_rewrites read before the rows were written.
 * row: the run's next row, in seq order (rows of another run are refused: -EINVAL). bytes:
 * the kind and bytes rs_store_steps_put keeps, when the run as info gives it (every owner's
 * rows) is the rows fed, no fewer, no more: 1, 0 when it is not (nothing to keep), or a
 * negative errno. A diff checks these bytes as it checks its own. */
typedef struct rfs_stepfeed rfs_stepfeed;
int rfs_stepfeed_new(const char *thread_id, const char *run_id, int64_t rewrites,
                     rfs_stepfeed **out);
int rfs_stepfeed_row(rfs_stepfeed *f, const rs_record *rec);
const char *rfs_stepfeed_run(const rfs_stepfeed *f);
int rfs_stepfeed_bytes(rfs_stepfeed *f, const rs_log_info *info, uint64_t *kind, rs_buf *out);
void rfs_stepfeed_free(rfs_stepfeed *f);

#endif
