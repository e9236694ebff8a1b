/* changes.h — the change feed's lines (changes.jsonl, changes/since/<N>, changes/follow/<N>):
 * one JSON line per run at its latest change, in change order (DESIGN "The change feed"). */
#ifndef RFS_CHANGES_H
#define RFS_CHANGES_H

#include <stdint.h>

#include "runstore.h"

/* Append the lines of the runs user (NULL: every owner) sees with a change above after, of
 * only_thread (NULL: every thread), to out; *last (may be NULL) is raised to the highest
 * change rendered. */
int rfs_changes_render(rs_store *s, const char *user, const char *only_thread, int64_t after,
                       rs_buf *out, int64_t *last, rs_err *err);

#endif
