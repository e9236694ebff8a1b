/* pg_seal.c — what a seal keeps beside its row (runfs_seal_tree, sqlite_seal.c's twin): its
 * Merkle root, signed note and the tree its proofs read, as bytea sent and read as text
 * (hex), and a salted seal's salts (runfs_seal_salt). A read-only open of a database set up
 * before the table existed has none. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_int.h"
#include "rs_util.h"

static int hex_bytea(rs_buf *out, const rs_buf *in)
{
    return rs_buf_addlit(out, "\\x") || rs_buf_add_hex(out, in->buf, in->len) ? -ENOMEM : 0;
}

/* The salts in one statement: their seqs and hex salts as two arrays. */
static int salts_put(rs_backend *b, const rs_target *t, const rs_buf *salts, rs_err *err)
{
    rs_buf seqs = RS_BUF_INIT, vals = RS_BUF_INIT;
    int rc = rs_buf_addch(&seqs, '{') || rs_buf_addch(&vals, '{') ? -ENOMEM : 0;
    for (size_t at = 0; !rc && at + RS_SEAL_SALT_REC <= salts->len; at += RS_SEAL_SALT_REC) {
        const unsigned char *p = (const unsigned char *)salts->buf + at;
        rc = rs_buf_addf(&seqs, "%s%lld", at ? "," : "", (long long)rs_seal_rec_seq(p)) ||
                     (at && rs_buf_addch(&vals, ','))
                 ? -ENOMEM
                 : 0;
        if (!rc)
            rc = rs_buf_add_hex(&vals, p + 8, RS_SEAL_SALT_REC - 8);
    }
    if (!rc)
        rc = rs_buf_addch(&seqs, '}') || rs_buf_addch(&vals, '}') ? -ENOMEM : 0;
    if (!rc) {
        pg_args a = {.n = 0};
        pg_arg_text(&a, t->thread_id);
        pg_arg_text(&a, t->run_id);
        pg_arg_text(&a, pg_owner_key(t->user));
        pg_arg_text(&a, seqs.buf);
        pg_arg_text(&a, vals.buf);
        rc = pg_run(b,
                    "INSERT INTO runfs_seal_salt (thread_id, run_id, owner, seq, salt) SELECT "
                    "$1, $2, $3, s, decode(h, 'hex') FROM unnest($4::bigint[], $5::text[]) AS "
                    "u(s, h) ON CONFLICT (thread_id, run_id, owner, seq) DO UPDATE SET salt = "
                    "excluded.salt",
                    &a, NULL, err);
    } else
        rs_err_set(err, rc, "out of memory");
    rs_buf_release(&seqs);
    rs_buf_release(&vals);
    return rc;
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
        pg_arg_text(&a, row->salted ? "salted" : "plain");
        rc = pg_run(b,
                    "INSERT INTO runfs_seal_tree (thread_id, run_id, owner, sealed_at, root, "
                    "note, seqs, nodes, leaves) VALUES ($1, $2, $3, $4, $5, $6, "
                    "$7::text::bytea, $8::text::bytea, $9) ON CONFLICT (thread_id, run_id, "
                    "owner) DO UPDATE SET sealed_at = $4, root = $5, note = $6, seqs = "
                    "$7::text::bytea, nodes = $8::text::bytea, leaves = $9",
                    &a, NULL, err);
        if (!rc && row->salted)
            rc = salts_put(b, t, &tree->salts, err);
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
    row->salted = 0;
    if (!b->has_tree)
        return 0;
    PGresult *r;
    int rc = tree_row(
        b, t, row,
        b->has_salt ? "SELECT root, note, leaves = 'salted' FROM runfs_seal_tree " TREE_ROW_WHERE
                    : "SELECT root, note, false FROM runfs_seal_tree " TREE_ROW_WHERE,
        &r, err);
    if (rc)
        return rc;
    row->salted = PQntuples(r) > 0 && PQgetvalue(r, 0, 2)[0] == 't';
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

int pg_seal_salts(rs_backend *b, const rs_target *t, const rs_seal_row *row, int64_t from,
                  int64_t to, rs_buf *out, rs_err *err)
{
    rs_buf_reset(out);
    if (!row->salted || !b->has_salt)
        return 0;
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_text(&a, pg_owner_key(t->user));
    pg_arg_int(&a, from);
    pg_arg_int(&a, to);
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT seq, encode(salt, 'hex') FROM runfs_seal_salt WHERE thread_id = $1 "
                    "AND run_id = $2 AND owner = $3 AND seq BETWEEN $4 AND $5 ORDER BY seq",
                    &a, &r, err);
    if (rc)
        return rc;
    for (int i = 0; !rc && i < PQntuples(r); i++) {
        unsigned char rec[RS_SEAL_SALT_REC] = {0};
        uint64_t seq = (uint64_t)pg_val_int(r, i, 0);
        for (int k = 0; k < 8; k++)
            rec[k] = (unsigned char)(seq >> (8 * k));
        const char *h = PQgetvalue(r, i, 1);
        if (strlen(h) == 2 * (RS_SEAL_SALT_REC - 8))
            for (int k = 0; k < RS_SEAL_SALT_REC - 8; k++) {
                unsigned v;
                if (sscanf(h + 2 * k, "%2x", &v) == 1)
                    rec[8 + k] = (unsigned char)v;
            }
        if (rs_buf_add(out, rec, sizeof rec))
            rc = rs_err_set(err, -ENOMEM, "out of memory");
    }
    PQclear(r);
    return rc;
}
