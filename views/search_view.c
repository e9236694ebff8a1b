/* search_view.c — rendering a search: the scope a node names (the caller's owner and the mount's
 * thread), the store's matching records, their canonical lines in order, a page at a time. */
#include <errno.h>
#include <string.h>

#include "search_view.h"
#include "rs_util.h"

int rfs_search_is_result(rfs_kind kind)
{
    return kind == RFS_SEARCH || kind == RFS_T_SEARCH || kind == RFS_R_SEARCH;
}

/* The thread and run the node searches, when they exist for the scope (root: the mount's
 * one thread, or every thread). */
static int search_scope(rs_store *s, const rfs_scope *sc, const rfs_node *n, const char **thread,
                        const char **run, rfs_stat *st, rs_err *err)
{
    *thread = n->kind == RFS_SEARCH ? sc->only_thread : n->thread_id;
    *run = n->kind == RFS_R_SEARCH ? n->run_id : NULL;
    if (n->kind == RFS_SEARCH)
        return 0;
    if (sc->only_thread && strcmp(sc->only_thread, n->thread_id) != 0)
        return -ENOENT;
    rs_log_info info;
    int rc = rs_store_log_info(s, *thread, *run, sc->user, &info, err);
    if (rc)
        return rc;
    if (!info.exists)
        return -ENOENT;
    st->mtime_ns = info.mtime_ns;
    st->ctime_ns = info.ctime_ns;
    st->version = rfs_view_version(&info);
    return 0;
}

int rfs_search_stat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st, int sized,
                    rs_err *err)
{
    memset(st, 0, sizeof *st);
    st->shape = RFS_SHAPE_STREAM;
    st->mtime_ns = st->ctime_ns = sc->mount_ns;
    if (sc->denied)
        return rs_err_set(err, -EACCES, "this uid is not in the mount's --user-map");
    const char *thread, *run;
    int rc = search_scope(s, sc, n, &thread, &run, st, err);
    rs_search *q = NULL;
    if (rc || (rc = rs_search_parse(&q, n->name, err)) || !sized) {
        rs_search_free(q);
        return rc;
    }
    /* The exact size is every matching line counted: one pass, nothing kept. */
    rs_cursor *c;
    if ((rc = rs_store_search(s, q, thread, run, sc->user, NULL, 0, &c, err))) {
        rs_search_free(q);
        return rc;
    }
    const rs_record *rec;
    while ((rc = rs_cursor_next(c, &rec)) == 1)
        st->size += (int64_t)rec->line_len;
    rs_cursor_free(c);
    rs_search_free(q);
    if (rc == -ENOMEM)
        rs_err_set(err, rc, "out of memory");
    return rc < 0 ? rc : 0;
}

int rfs_search_read(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_search_pos *pos,
                    int64_t off, size_t size, rs_buf *out, rs_err *err)
{
    if (off < pos->off)
        *pos = (rfs_search_pos){0};
    /* The query is parsed again at each read: a parsed one keeps a scratch buffer as long as
     * the longest row it matched, which 10,000 open handles would each hold. */
    rs_search *q;
    int rc = rs_search_parse(&q, n->name, err);
    if (rc)
        return rc;
    const char *thread = n->kind == RFS_SEARCH ? sc->only_thread : n->thread_id;
    const char *run = n->kind == RFS_R_SEARCH ? n->run_id : NULL;
    rs_cursor *c;
    if ((rc = rs_store_search(s, q, thread, run, sc->user, pos->thread[0] ? pos->thread : NULL,
                              pos->seq, &c, err))) {
        rs_search_free(q);
        return rc;
    }
    int64_t end = off + (int64_t)size;
    const rs_record *rec;
    while (pos->off < end && (rc = rs_cursor_next(c, &rec)) == 1) {
        int64_t row_end = pos->off + (int64_t)rec->line_len;
        if (row_end > off) {
            int64_t from = off > pos->off ? off : pos->off, to = row_end < end ? row_end : end;
            if ((rc = rs_buf_add(out, rec->line + (from - pos->off), (size_t)(to - from))))
                break;
        }
        /* A row given in part is rendered again by the next read: nothing is held. */
        if (row_end > end)
            break;
        pos->off = row_end;
        pos->seq = rec->seq;
        /* A record's thread id is a valid id: it fits. */
        (void)rs_fmt(pos->thread, sizeof pos->thread, "%s", rec->thread_id);
    }
    rs_cursor_free(c);
    rs_search_free(q);
    if (rc == -ENOMEM)
        rs_err_set(err, rc, "out of memory");
    return rc < 0 ? rc : 0;
}
