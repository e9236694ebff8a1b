/* sizes.h — the mount's cache of view sizes. A filtered view (messages.jsonl, history.jsonl,
 * transcript.md, types/, tasks/) has an exact st_size only by rendering it; the size is kept
 * until its thread or run changes, which the token (what rs_store_log_info said) tells. */
#ifndef RFS_SIZES_H
#define RFS_SIZES_H

#include <stdint.h>

#include "otel.h"
#include "runstore.h"

typedef struct rfs_sizes rfs_sizes;

int rfs_sizes_new(rfs_sizes **out);
void rfs_sizes_free(rfs_sizes *c);
/* 1 with *size set when key was stored with an equal token, else 0. */
int rfs_sizes_get(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t *size);
void rfs_sizes_put(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size);
/* A small document kept whole with its size (bounded: a large one keeps only its size), so
 * the open after the stat that rendered it does not render it again. 1 with the bytes
 * appended to out when key was stored with an equal token and its bytes, else 0. */
int rfs_sizes_get_doc(rfs_sizes *c, const char *key, const rs_log_info *token, rs_buf *out);
void rfs_sizes_put_doc(rfs_sizes *c, const char *key, const rs_log_info *token, const char *doc,
                       size_t len);
/* otel.json's kept positions (otel.h) beside its size: a reference to those of key at
 * token (made when there are none yet), NULL when key is not kept at token. */
rfs_otel_marks *rfs_sizes_marks(rfs_sizes *c, const char *key, const rs_log_info *token);
/* Keep size as rfs_sizes_put does, and marks beside it unless some are kept already. */
void rfs_sizes_put_marks(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size,
                         rfs_otel_marks *marks);

#endif
