/* rejects.h — the last refused writes, for .runfs/rejects.jsonl: a sandboxed agent reads why
 * its write failed without reading the daemon's log. Thread-safe. */
#ifndef RFS_REJECTS_H
#define RFS_REJECTS_H

#include <stddef.h>

#include "runstore.h"

typedef struct rfs_rejects rfs_rejects;

int rfs_rejects_new(rfs_rejects **out);
void rfs_rejects_free(rfs_rejects *r);
/* Keep one refusal (path, errno code < 0, reason, the first bytes of data) and log it. */
void rfs_rejects_add(rfs_rejects *r, long pid, long uid, const char *path, int code,
                     const char *reason, const char *data, size_t len);
/* Append the refusals of uid only_uid (-1: all of them) as JSON lines, oldest first. */
int rfs_rejects_render(rfs_rejects *r, long only_uid, rs_buf *out);

#endif
