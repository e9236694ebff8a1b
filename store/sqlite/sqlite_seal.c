/* sqlite_seal.c — what a seal keeps beside its row (runfs_seal_tree): its Merkle root,
 * signed note and the tree its proofs read. A store made before the table existed (opened
 * read-only, so not set up again) has none: its seals show no root. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sqlite_int.h"
#include "rs_util.h"

static int has_table(rs_backend *b)
{
    return sqlite3_table_column_metadata(b->db, NULL, "runfs_seal_tree", "root", NULL, NULL, NULL,
                                         NULL, NULL) == SQLITE_OK;
}

int sq_seal_tree_put(rs_backend *b, const rs_target *t, const rs_seal_row *row,
                     const rs_seal_tree *tree, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b,
                         "INSERT OR REPLACE INTO runfs_seal_tree (thread_id, run_id, owner, "
                         "sealed_at, root, note, seqs, nodes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         &st, err);
    if (rc)
        return rc;
    sq_bind_text(st, 1, t->thread_id);
    sq_bind_text(st, 2, t->run_id);
    sq_bind_text(st, 3, sq_owner_key(t->user));
    sq_bind_text(st, 4, row->sealed_at);
    sq_bind_text(st, 5, row->root);
    sq_bind_text(st, 6, row->note[0] ? row->note : NULL);
    sqlite3_bind_blob64(st, 7, tree->seqs.buf, tree->seqs.len, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 8, tree->nodes.buf, tree->nodes.len, SQLITE_STATIC);
    int src = sqlite3_step(st);
    sq_stmt_done(b, st);
    return src == SQLITE_DONE ? 0 : sq_fail(b, src, err, "seal tree");
}

int sq_seal_extra(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err)
{
    row->root[0] = row->note[0] = '\0';
    if (!has_table(b))
        return 0;
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "seal",
                     "SELECT root, note FROM runfs_seal_tree WHERE thread_id = ? AND "
                     "run_id = ? AND owner = ? AND sealed_at = ?",
                     "tttt", t->thread_id, t->run_id, sq_owner_key(t->user), row->sealed_at);
    if (rc <= 0)
        return rc;
    const char *root = (const char *)sqlite3_column_text(st, 0);
    const char *note = (const char *)sqlite3_column_text(st, 1);
    rc = rs_fmt(row->root, sizeof row->root, "%s", root ? root : "") < 0 ||
                 rs_fmt(row->note, sizeof row->note, "%s", note ? note : "") < 0
             ? rs_err_set(err, -EOVERFLOW, "a runfs_seal_tree row is longer than runfs writes")
             : 0;
    sq_stmt_done(b, st);
    return rc;
}

static int take_blob(sqlite3_stmt *st, int col, rs_buf *out)
{
    const void *p = sqlite3_column_blob(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    rs_buf_reset(out);
    return n ? rs_buf_add(out, p, n) : 0;
}

int sq_seal_tree(rs_backend *b, const rs_target *t, const rs_seal_row *row, rs_seal_tree *tree,
                 rs_err *err)
{
    if (!has_table(b))
        return rs_err_set(err, -ENOENT, "the store keeps no seal trees");
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "seal tree",
                     "SELECT seqs, nodes FROM runfs_seal_tree WHERE thread_id = ? AND "
                     "run_id = ? AND owner = ? AND sealed_at = ?",
                     "tttt", t->thread_id, t->run_id, sq_owner_key(t->user), row->sealed_at);
    if (rc <= 0)
        return rc < 0 ? rc : rs_err_set(err, -ENOENT, "the seal keeps no tree");
    rc = take_blob(st, 0, &tree->seqs) || take_blob(st, 1, &tree->nodes)
             ? rs_err_set(err, -ENOMEM, "out of memory")
             : 0;
    sq_stmt_done(b, st);
    return rc;
}
