/* linebuf.h — the append path's line splitter: one write() in, the complete lines to commit
 * out, the partial line kept for the next write. Pure (no FUSE, no store) so that it can be
 * fuzzed: tests/fuzz/fuzz_writebuf.c checks that any chunking of a byte stream commits the
 * same lines as feeding it whole.
 *
 * The state lives on the open file: pending (the partial line so far) and skipping (after
 * EMSGSIZE: bytes are dropped up to the long line's newline). The rules (DESIGN, Appending):
 *   - the complete lines of one write() are committed together, or none of them;
 *   - a trailing partial line is buffered until its newline;
 *   - a line over max bytes (without its '\n') fails the write that crosses the limit with
 *     EMSGSIZE; when its newline has not come yet, the handle drops bytes up to it and
 *     accepts the lines after it. A refused write keeps nothing of itself. */
#ifndef RFS_LINEBUF_H
#define RFS_LINEBUF_H

#include <stddef.h>

#include "runstore.h"

typedef struct rfs_lines {
    const char *data; /* complete lines to commit, each '\n'-terminated; len 0: none */
    size_t len;
    const char *tail; /* the partial line after them (in the caller's write buffer) */
    size_t tail_len;
    rs_buf joined; /* holds pending + the first lines when a partial line was pending */
} rfs_lines;

/* Split buf[0..size) (one write()) given the handle's pending partial line and skipping
 * flag. 0: out->len bytes of complete lines to commit (0: the write was buffered or
 * skipped whole; nothing to commit, the write succeeded). -EMSGSIZE: a line crosses max;
 * pending is cleared, skipping set when that line has not ended; nothing to commit.
 * -ENOMEM: nothing changed. After a 0 return with out->len > 0, call rfs_lines_done. */
int rfs_linebuf_feed(rs_buf *pending, int *skipping, size_t max, const char *buf, size_t size,
                     rfs_lines *out);

/* After committing out's lines: committed != 0 keeps the tail as the new pending partial
 * line; 0 (the commit was refused) drops it, the write being refused whole. Releases out.
 * 0 or -ENOMEM (the tail could not be kept). */
int rfs_lines_done(rs_buf *pending, rfs_lines *out, int committed);

#endif
