/* progress.h — a one-line counter on stderr for long CLI commands (import, export, put),
 * shown only when stderr is a terminal; every call accepts NULL (not a terminal). */
#ifndef RFS_PROGRESS_H
#define RFS_PROGRESS_H

#include <stdint.h>

typedef struct rfs_progress rfs_progress;

/* "verb: N unit" (more with a total) redrawn at most 5 times a second; NULL when stderr is no terminal. */
rfs_progress *rfs_progress_new(const char *verb, const char *unit);
void rfs_progress_tick(rfs_progress *p, int64_t n);
/* The bytes the whole work reads (0: not known). Known, the line also says how many of them
 * are done, the rate and the time left: "verb: N unit, X of Y MiB (P%), R MiB/s, M:SS left". */
void rfs_progress_total(rfs_progress *p, int64_t bytes);
/* rfs_progress_tick that also counts bytes of the total done. */
void rfs_progress_step(rfs_progress *p, int64_t n, int64_t bytes);
/* Erase the line, so another message starts at the left margin. */
void rfs_progress_clear(rfs_progress *p);
/* Erase the line and free p (the caller prints its own summary). */
void rfs_progress_end(rfs_progress *p);
/* Replace the line by a summary and free p. */
void rfs_progress_done(rfs_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
