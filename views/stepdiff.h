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

/* Append the diff of run a against run b (each as its user sees it; either may be of any
 * thread). -ENOENT, with the reason in err, when either run does not exist for its user.
 * Memory grows with the two runs' step lines, never with their product. s2, when not NULL,
 * is a second connection to the same store: b is read on it, on a thread of its own while a
 * is read on s when both runs are big (the time is then about the longer read's). */
int rfs_stepdiff_render(rs_store *s, rs_store *s2, const rs_target *a, const rs_target *b,
                        rs_buf *out, rs_err *err);

#endif
