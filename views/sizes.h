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

/* The store's ids of a search answer's rows in its order (search_view.c), kept beside its
 * size so that the read after the stat that counted them reads those rows only. gen tells
 * one kept list from any other (never 0). */
#define RFS_KEPT_ROWS_MAX ((size_t)1 << 20) /* ids kept at most, all lists together */
typedef struct rfs_kept_rows {
    int refs; /* guarded by the table's lock */
    uint64_t gen;
    size_t n;
    int64_t ids[];
} rfs_kept_rows;
/* A list of room for n ids (refs 1, n set, a fresh gen), NULL when out of memory or over
 * what the table would keep. */
rfs_kept_rows *rfs_kept_rows_new(size_t n);
/* The rows kept beside key's size at token, retained (give back with rfs_sizes_rows_done),
 * or NULL. */
rfs_kept_rows *rfs_sizes_rows(rfs_sizes *c, const char *key, const rs_log_info *token);
void rfs_sizes_rows_done(rfs_sizes *c, rfs_kept_rows *rows);
/* Keep size as rfs_sizes_put does and rows beside it (the table takes the caller's
 * reference; NULL: none), within a bound on all kept rows (past it, the others' go). */
void rfs_sizes_put_rows(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size,
                        rfs_kept_rows *rows);

#endif
