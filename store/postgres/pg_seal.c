/* pg_seal.c — what a seal keeps beside its row (runfs_seal_tree, sqlite_seal.c's twin): its
 * Merkle root, signed note and the tree its proofs read, as bytea sent and read as text
 * (hex). A read-only open of a database set up before the table existed has none. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_int.h"
#include "rs_util.h"

static int hex_bytea(rs_buf *out, const rs_buf *in)
{
    static const char hex[] = "0123456789abcdef";
    if (rs_buf_grow(out, 2 + 2 * in->len))
        return -ENOMEM;
    char *p = out->buf + out->len;
    *p++ = '\\';
    *p++ = 'x';
    for (size_t i = 0; i < in->len; i++) {
        unsigned char c = (unsigned char)in->buf[i];
        *p++ = hex[c >> 4];
        *p++ = hex[c & 15];
    }
    rs_buf_setlen(out, out->len + 2 + 2 * in->len);
    return 0;
}

int pg_seal_tree_put(rs_backend *b, const rs_target *t, const rs_seal_row *row,
                     const rs_seal_tree *tree, rs_err *err)
{
    rs_buf seqs = RS_BUF_INIT, nodes = RS_BUF_INIT;
    int rc = hex_bytea(&seqs, &tree->seqs) || hex_bytea(&nodes, &tree->nodes) ? -ENOMEM : 0;
    if (!rc) {
        pg_args a = {.n = 0};
        pg_arg_text(&a, t->thread_id);
        pg_arg_text(&a, t->run_id);
        pg_arg_text(&a, pg_owner_key(t->user));
        pg_arg_text(&a, row->sealed_at);
        pg_arg_text(&a, row->root);
        pg_arg_text(&a, row->note[0] ? row->note : NULL);
        pg_arg_text(&a, seqs.buf);
        pg_arg_text(&a, nodes.buf);
        rc = pg_run(b,
                    "INSERT INTO runfs_seal_tree (thread_id, run_id, owner, sealed_at, root, "
                    "note, seqs, nodes) VALUES ($1, $2, $3, $4, $5, $6, $7::text::bytea, "
                    "$8::text::bytea) ON CONFLICT (thread_id, run_id, owner) DO UPDATE SET "
                    "sealed_at = $4, root = $5, note = $6, seqs = $7::text::bytea, "
                    "nodes = $8::text::bytea",
                    &a, NULL, err);
    } else
        rs_err_set(err, rc, "out of memory");
    rs_buf_release(&seqs);
    rs_buf_release(&nodes);
    return rc;
}

/* Run sql, a SELECT from runfs_seal_tree of the row the seal row describes ($1-$4: thread,
 * run, owner, sealed_at). */
static int tree_row(rs_backend *b, const rs_target *t, const rs_seal_row *row, const char *sql,
                    PGresult **r, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_text(&a, pg_owner_key(t->user));
    pg_arg_text(&a, row->sealed_at);
    return pg_run(b, sql, &a, r, err);
}

#define TREE_ROW_WHERE "WHERE thread_id = $1 AND run_id = $2 AND owner = $3 AND sealed_at = $4"

int pg_seal_extra(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err)
{
    row->root[0] = row->note[0] = '\0';
    if (!b->has_tree)
        return 0;
    PGresult *r;
    int rc = tree_row(b, t, row, "SELECT root, note FROM runfs_seal_tree " TREE_ROW_WHERE, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) > 0 && (rs_fmt(row->root, sizeof row->root, "%s", PQgetvalue(r, 0, 0)) < 0 ||
                             rs_fmt(row->note, sizeof row->note, "%s", PQgetvalue(r, 0, 1)) < 0))
        rc = rs_err_set(err, -EOVERFLOW, "a runfs_seal_tree row is longer than runfs writes");
    PQclear(r);
    return rc;
}

static int take_bytea(const PGresult *r, int col, rs_buf *out)
{
    size_t n;
    unsigned char *p = PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, col), &n);
    if (!p)
        return -ENOMEM;
    rs_buf_reset(out);
    int rc = rs_buf_add(out, p, n);
    PQfreemem(p);
    return rc;
}

int pg_seal_tree(rs_backend *b, const rs_target *t, const rs_seal_row *row, rs_seal_tree *tree,
                 rs_err *err)
{
    if (!b->has_tree)
        return rs_err_set(err, -ENOENT, "the store keeps no seal trees");
    PGresult *r;
    int rc =
        tree_row(b, t, row, "SELECT seqs, nodes FROM runfs_seal_tree " TREE_ROW_WHERE, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) == 0)
        rc = rs_err_set(err, -ENOENT, "the seal keeps no tree");
    else if (take_bytea(r, 0, &tree->seqs) || take_bytea(r, 1, &tree->nodes))
        rc = rs_err_set(err, -ENOMEM, "out of memory");
    PQclear(r);
    return rc;
}
