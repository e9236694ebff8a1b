/* view.h — what a node holds: existence, attributes and bytes, rendered from the store.
 * The mount and `runfs cat` both read through here, so they print the same bytes. */
#ifndef RFS_VIEW_H
#define RFS_VIEW_H

#include <stdint.h>

#include "node.h"
#include "runstore.h"

/* Who is looking and what the mount shows. */
typedef struct rfs_scope {
    const char *user;        /* owner of this request (NULL: every owner) */
    const char *only_thread; /* --thread: the one visible thread */
    int read_only;
    int denied;       /* a uid --user-map does not name: EACCES below threads/ */
    int64_t mount_ns; /* times for nodes with no store time */
    /* Mount-only documents; NULL in `runfs cat`. */
    int (*status_extra)(void *ctx, rs_buf *out); /* more "key":value pairs, no braces */
    /* .runfs/rejects.jsonl of owner user (the caller's), a log read at any offset. */
    int64_t (*rejects_size)(void *ctx, const char *user);
    int (*rejects_read)(void *ctx, const char *user, int64_t off, size_t size, rs_buf *out);
    void *ctx;
    struct rfs_sizes *sizes; /* view sizes kept until their thread changes (NULL: none) */
} rfs_scope;

typedef enum rfs_shape {
    RFS_SHAPE_DIR,
    RFS_SHAPE_LOG,    /* events.jsonl: exact size, seekable, cacheable */
    RFS_SHAPE_DOC,    /* a small document rendered whole */
    RFS_SHAPE_STREAM, /* a view streamed in seq order; its exact size costs a rendering
                            (kept in scope->sizes), since/<seq> shows 0 */
    RFS_SHAPE_FOLLOW, /* a live feed */
} rfs_shape;

typedef struct rfs_stat {
    rfs_shape shape;
    int64_t size;
    int64_t mtime_ns;
    int64_t ctime_ns;
    int64_t last_seq; /* logs: the highest seq in the file */
} rfs_stat;

/* Does the node exist for this scope, and what is it. -ENOENT when it does not. */
int rfs_view_stat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st, rs_err *err);

/* A reader of one file node. Reads at any offset; sequential reads are cheapest. */
typedef struct rfs_reader rfs_reader;
int rfs_reader_open(rfs_reader **out, rs_store *s, const rfs_scope *sc, const rfs_node *n,
                    rs_err *err);
/* Append up to size bytes from offset off to out (fewer only at the end of the file). */
int rfs_reader_read(rfs_reader *r, rs_store *s, int64_t off, size_t size, rs_buf *out, rs_err *err);
void rfs_reader_free(rfs_reader *r);
/* When the file last changed, as seen at open. */
int64_t rfs_reader_mtime(const rfs_reader *r);
/* RFS_SHAPE_LOG when the reader's sizes and offsets are exact (the kernel may cache it). */
rfs_shape rfs_reader_shape(const rfs_reader *r);

/* Directory entries of node n that come from the store (threads, runs, types, ...), each
 * passed to fn with its name and whether it is a directory. */
typedef int (*rfs_entry_fn)(void *ctx, const char *name, int is_dir);
int rfs_view_list(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_entry_fn fn, void *ctx,
                  rs_err *err);

/* Render a whole file node to out (runfs cat). */
int rfs_view_cat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_buf *out,
                 int (*flush)(void *ctx, rs_buf *out), void *ctx, rs_err *err);

#endif
