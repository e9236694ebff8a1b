/* sqlite_seal.c — what a seal keeps beside its row (runfs_seal_tree): its Merkle root,
 * signed note and the tree its proofs read, and a salted seal's salts (runfs_seal_salt). A
 * store made before the table existed (opened read-only, so not set up again) has none: its
 * seals show no root. */
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

/* A store of layout 6 or later says whether a seal's leaves are salted. */
static int has_leaves(rs_backend *b)
{
    return sqlite3_table_column_metadata(b->db, NULL, "runfs_seal_tree", "leaves", NULL, NULL, NULL,
                                         NULL, NULL) == SQLITE_OK;
}

static int salts_put(rs_backend *b, const rs_target *t, const rs_buf *salts, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b,
                         "INSERT OR REPLACE INTO runfs_seal_salt (thread_id, run_id, owner, seq, "
                         "salt) VALUES (?, ?, ?, ?, ?)",
                         &st, err);
    if (rc)
        return rc;
    int src = SQLITE_DONE;
    for (size_t at = 0; at + RS_SEAL_SALT_REC <= salts->len && src == SQLITE_DONE;
         at += RS_SEAL_SALT_REC) {
        const unsigned char *p = (const unsigned char *)salts->buf + at;
        sqlite3_reset(st);
        sq_bind_text(st, 1, t->thread_id);
        sq_bind_text(st, 2, t->run_id);
        sq_bind_text(st, 3, sq_owner_key(t->user));
        sqlite3_bind_int64(st, 4, rs_seal_rec_seq(p));
        sqlite3_bind_blob(st, 5, p + 8, RS_SEAL_SALT_REC - 8, SQLITE_STATIC);
        src = sqlite3_step(st);
    }
    sq_stmt_done(b, st);
    return src == SQLITE_DONE ? 0 : sq_fail(b, src, err, "seal salts");
}

int sq_seal_tree_put(rs_backend *b, const rs_target *t, const rs_seal_row *row,
                     const rs_seal_tree *tree, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b,
                         "INSERT OR REPLACE INTO runfs_seal_tree (thread_id, run_id, owner, "
                         "sealed_at, root, note, seqs, nodes, leaves) VALUES (?, ?, ?, ?, ?, ?, "
                         "?, ?, ?)",
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
    sq_bind_text(st, 9, row->salted ? "salted" : "plain");
    int src = sqlite3_step(st);
    sq_stmt_done(b, st);
    if (src != SQLITE_DONE)
        return sq_fail(b, src, err, "seal tree");
    return row->salted ? salts_put(b, t, &tree->salts, err) : 0;
}

int sq_seal_extra(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err)
{
    row->root[0] = row->note[0] = '\0';
    row->salted = 0;
    if (!has_table(b))
        return 0;
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "seal",
                     has_leaves(b) ? "SELECT root, note, leaves = 'salted' FROM runfs_seal_tree "
                                     "WHERE thread_id = ? AND run_id = ? AND owner = ? AND "
                                     "sealed_at = ?"
                                   : "SELECT root, note, 0 FROM runfs_seal_tree WHERE "
                                     "thread_id = ? AND run_id = ? AND owner = ? AND sealed_at = ?",
                     "tttt", t->thread_id, t->run_id, sq_owner_key(t->user), row->sealed_at);
    if (rc <= 0)
        return rc;
    row->salted = sqlite3_column_int(st, 2) != 0;
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

int sq_seal_salts(rs_backend *b, const rs_target *t, const rs_seal_row *row, int64_t from,
                  int64_t to, rs_buf *out, rs_err *err)
{
    rs_buf_reset(out);
    if (!row->salted)
        return 0;
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b,
                         "SELECT seq, salt FROM runfs_seal_salt WHERE thread_id = ? AND run_id = "
                         "? AND owner = ? AND seq BETWEEN ? AND ? ORDER BY seq",
                         &st, err);
    if (rc)
        return rc;
    sq_bind_text(st, 1, t->thread_id);
    sq_bind_text(st, 2, t->run_id);
    sq_bind_text(st, 3, sq_owner_key(t->user));
    sqlite3_bind_int64(st, 4, from);
    sqlite3_bind_int64(st, 5, to);
    int src = SQLITE_DONE;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        unsigned char rec[RS_SEAL_SALT_REC] = {0};
        uint64_t seq = (uint64_t)sqlite3_column_int64(st, 0);
        for (int i = 0; i < 8; i++)
            rec[i] = (unsigned char)(seq >> (8 * i));
        if (sqlite3_column_bytes(st, 1) == RS_SEAL_SALT_REC - 8)
            memcpy(rec + 8, sqlite3_column_blob(st, 1), RS_SEAL_SALT_REC - 8);
        if (rs_buf_add(out, rec, sizeof rec))
            rc = rs_err_set(err, -ENOMEM, "out of memory");
    }
    sq_stmt_done(b, st);
    if (!rc && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "seal salts");
    return rc;
}
