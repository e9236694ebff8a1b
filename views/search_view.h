/* search_view.h — search/<query> at the root, in a thread and in a run: the matching events,
 * the same lines as events.jsonl (with by:run, a line per matching run), streamed in order. */
#ifndef RFS_SEARCH_VIEW_H
#define RFS_SEARCH_VIEW_H

#include "view.h"

/* 1 for the search result kinds (RFS_SEARCH, RFS_T_SEARCH, RFS_R_SEARCH). */
int rfs_search_is_result(rfs_kind kind);

/* The result of search node n for the scope: st filled (a stream), its exact size counted
 * when sized is 2 (a pass over the matches, kept in scope->sizes until the rows of the scope
 * change: st->kept when it was), taken only where kept when 1 (a lookup: else st->unsized,
 * so a reader that wants the first lines only, as head does, waits for no count); 0: an
 * open, which needs only to know the query and scope are good. -EINVAL or -ENAMETOOLONG for a bad query, -ENOENT for a thread or run the scope does
 * not see, -EACCES for a uid the user map lacks; the reason in err. */
int rfs_search_stat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st, int sized,
                    rs_err *err);

/* Where a reader of a search result is: the offset of a row boundary and the row before it
 * (thread "" and seq 0: the start). A handle keeps only this between reads. */
typedef struct rfs_search_pos {
    int64_t off;
    int64_t seq;
    char thread[RS_ID_MAX + 1];
    uint64_t rows_gen; /* the kept rows (sizes.h) the last read was of (0: none) ... */
    size_t rows_at;    /* ... and how many of them the bytes before off hold */
    int in_file;       /* the last read was of a kept answer's bytes (rows_gen's) */
    int from;          /* what the last read read: RFS_SEARCH_FROM_... */
    /* Every piece before off was searched from the answer's start at one version of the
     * scope (token and rewrites, what a stat's size is kept under): at the answer's end, off
     * is its size, kept as the stat's would be. */
    int one_version;
    int64_t rewrites;
    rs_log_info token;
} rfs_search_pos;

/* A read of a search result read nothing from the store (its bytes were at hand), searched
 * it (no answer was kept from the stat that counted it), read the kept rows, read the kept
 * answer's bytes (no store at all), or counted the answer as a stat does (a reader far into
 * an answer nothing counted) and read the bytes that kept. */
enum {
    RFS_SEARCH_FROM_NONE,
    RFS_SEARCH_FROM_SEARCH,
    RFS_SEARCH_FROM_KEPT,
    RFS_SEARCH_FROM_FILE,
    RFS_SEARCH_FROM_COUNTED
};

/* Append up to size bytes of node n's result from offset off to out (fewer only at its end),
 * rendered from the store after pos (from the start when off lies before it); pos moves to
 * the last row given whole. A reader that searched the whole answer at one version keeps its
 * size at the end (so a stat after a cat counts nothing). */
int rfs_search_read(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_search_pos *pos,
                    int64_t off, size_t size, rs_buf *out, rs_err *err);

/* Append node n's whole result to out in one pass over the store (a reader's reads each
 * search again from where the last stopped), handing out to flush (when not NULL) each time
 * it holds chunk bytes or more. */
int rfs_search_cat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_buf *out, size_t chunk,
                   int (*flush)(void *ctx, rs_buf *out), void *ctx, rs_err *err);

#endif
