/* search_view.h — search/<query> at the root, in a thread and in a run: the matching events,
 * the same lines as events.jsonl, as one document. */
#ifndef RFS_SEARCH_VIEW_H
#define RFS_SEARCH_VIEW_H

#include "view.h"

/* 1 for the search result kinds (RFS_SEARCH, RFS_T_SEARCH, RFS_R_SEARCH). */
int rfs_search_is_result(rfs_kind kind);

/* The result of search node n for the scope: st filled (a document: exact size), its bytes
 * appended to doc when doc is given. -EINVAL or -ENAMETOOLONG for a bad query, -ENOENT
 * for a thread or run the scope does not see, -EACCES for a uid the user map lacks; the
 * reason in err. */
int rfs_search_stat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st, rs_buf *doc,
                    rs_err *err);

#endif
