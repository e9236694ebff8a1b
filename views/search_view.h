/* search_view.h — search/<query> at the root, in a thread and in a run: the matching events,
 * the same lines as events.jsonl, streamed in order. */
#ifndef RFS_SEARCH_VIEW_H
#define RFS_SEARCH_VIEW_H

#include "view.h"

/* 1 for the search result kinds (RFS_SEARCH, RFS_T_SEARCH, RFS_R_SEARCH). */
int rfs_search_is_result(rfs_kind kind);

/* The result of search node n for the scope: st filled (a stream), its exact size counted
 * when sized (a pass over the matches; an open needs only to know the query and scope are
 * good). -EINVAL or -ENAMETOOLONG for a bad query, -ENOENT for a thread or run the scope does
 * not see, -EACCES for a uid the user map lacks; the reason in err. */
int rfs_search_stat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st, int sized,
                    rs_err *err);

/* The matches of node n's query q (parsed from n->name; it outlives the cursor) after
 * (after_thread, after_seq) (after_thread NULL: from the first). */
int rfs_search_open(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_search *q,
                    const char *after_thread, int64_t after_seq, rs_cursor **out, rs_err *err);

#endif
