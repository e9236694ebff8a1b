/* rejects.h — the refused writes, for .runfs/rejects.jsonl: a sandboxed agent reads why its
 * write failed without reading the daemon's log. Each owner has its own log of JSON lines
 * that grows like a file (tail -f shows each refusal) and keeps its last 100 refusals; one
 * owner neither sees nor evicts another's. Thread-safe. */
#ifndef RFS_REJECTS_H
#define RFS_REJECTS_H

#include <stddef.h>
#include <stdint.h>

#include "runstore.h"

typedef struct rfs_rejects rfs_rejects;

int rfs_rejects_new(rfs_rejects **out);
void rfs_rejects_free(rfs_rejects *r);
/* Keep one refusal of owner (NULL: the unscoped mount's one log) with its path, errno code
 * (< 0), reason and the first bytes of data, and log it. */
void rfs_rejects_add(rfs_rejects *r, const char *owner, long pid, long uid, const char *path,
                     int code, const char *reason, const char *data, size_t len);
/* The size of owner's log: every byte it ever held. Refusals no longer kept read as one
 * line {"dropped":N} padded with blanks, so offsets never move. */
int64_t rfs_rejects_size(rfs_rejects *r, const char *owner);
/* Append bytes [off, off + size) of owner's log to out (fewer at its end). */
int rfs_rejects_read(rfs_rejects *r, const char *owner, int64_t off, size_t size, rs_buf *out);

#endif
