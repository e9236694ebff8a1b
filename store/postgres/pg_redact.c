/* pg_redact.c — a redaction on PostgreSQL (sqlite_redact.c's twin): the row rewritten, the
 * seq's salts and its block of the search index dropped, the redaction kept, in one
 * transaction; then VACUUM of the tables that held the text, so the old row versions are
 * gone when the call returns (where this role may vacuum them; else warn says so). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pg_int.h"
#include "rs_util.h"

static int redact_tx(rs_backend *b, const rs_target *t, const rs_redact_row *w, rs_err *err)
{
    int rc = pg_begin(b, t->thread_id, err);
    if (rc)
        return rc;
    char seq[24];
    (void)rs_fmt(seq, sizeof seq, "%lld", (long long)w->seq);
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_int(&a, w->seq);
    pg_arg_text(&a, w->content);
    pg_arg_text(&a, w->meta);
    pg_arg_text(&a, w->old_content);
    pg_arg_text(&a, w->old_meta);
    PGresult *r = NULL;
    if ((rc = pg_run(b,
                     "UPDATE run_events SET content = $3, event_metadata = $4::json WHERE "
                     "thread_id = $1 AND seq = $2 AND content = $5 AND event_metadata::text = $6 "
                     "RETURNING (id - 1) / 64",
                     &a, &r, err)))
        goto fail;
    int n = PQntuples(r);
    int64_t blk = n ? pg_val_int(r, 0, 0) : 0;
    PQclear(r);
    if (n != 1) {
        rc = rs_err_set(err, -EAGAIN, "event seq %s changed meanwhile", seq);
        goto fail;
    }
    pg_args k = {.n = 0};
    pg_arg_text(&k, t->thread_id);
    pg_arg_text(&k, t->run_id);
    pg_arg_int(&k, w->seq);
    pg_arg_text(&k, w->owner ? w->owner : "");
    pg_arg_text(&k, w->at);
    pg_arg_text(&k, w->paths);
    pg_arg_text(&k, w->reason);
    pg_arg_text(&k, w->leaf);
    pg_arg_text(&k, w->line_hash);
    pg_arg_text(&k, w->note);
    pg_args d = {.n = 0};
    pg_arg_text(&d, t->thread_id);
    pg_arg_text(&d, t->run_id);
    pg_arg_int(&d, w->seq);
    pg_args s = {.n = 0};
    pg_arg_int(&s, blk);
    if ((rc = pg_run(b,
                     "INSERT INTO runfs_redaction (thread_id, run_id, seq, owner, at, paths, "
                     "reason, leaf, line_hash, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
                     "$10) ON CONFLICT (thread_id, run_id, seq, at) DO NOTHING",
                     &k, NULL, err)) ||
        (rc = pg_run(b,
                     "DELETE FROM runfs_seal_salt WHERE thread_id = $1 AND run_id = $2 AND "
                     "seq = $3",
                     &d, NULL, err)))
        goto fail;
    /* The block's words go now (the update marked the block: it is indexed again from the
     * rows at the next search). */
    int64_t has = 0;
    if ((rc = pg_int(b, "SELECT (to_regclass('runfs_search') IS NOT NULL)::int", NULL, NULL, &has,
                     NULL, err)) ||
        (has && (rc = pg_run(b, "DELETE FROM runfs_search WHERE blk = $1", &s, NULL, err))))
        goto fail;
    return pg_commit(b, err);
fail:
    pg_rollback(b);
    return rc;
}

/* VACUUM table where this role owns it; else what it lacks, in warn. */
static int vacuum(rs_backend *b, const char *table, rs_buf *warn, rs_err *err)
{
    int64_t may = 0;
    int found = 0;
    int rc = pg_int(b,
                    "SELECT pg_has_role(relowner, 'USAGE')::int FROM pg_class WHERE oid = "
                    "to_regclass($1)",
                    table, NULL, &may, &found, err);
    if (rc || !found)
        return rc;
    if (!may) {
        if (warn)
            (void)rs_buf_addf(warn,
                              "%sthis role does not own %s, so it cannot VACUUM it: the old "
                              "row versions stay until the next vacuum its owner or autovacuum "
                              "runs",
                              warn->len ? "; " : "", table);
        return 0;
    }
    rs_buf q = RS_BUF_INIT;
    rc = rs_buf_addf(&q, "VACUUM %s", table) ? rs_err_set(err, -ENOMEM, "out of memory")
                                             : pg_exec_plain(b, q.buf, err);
    rs_buf_release(&q);
    return rc;
}

int pg_redact(rs_backend *b, const rs_target *t, const rs_redact_row *w, rs_buf *warn, rs_err *err)
{
    if (b->read_only)
        return rs_err_set(err, -EROFS, "the store is opened read-only");
    int rc = redact_tx(b, t, w, err);
    static const char *const tables[] = {"run_events", "runfs_search", "runfs_seal_salt"};
    for (size_t i = 0; !rc && i < sizeof tables / sizeof *tables; i++)
        rc = vacuum(b, tables[i], warn, err);
    /* The vacuumed pages reach the files at a checkpoint: now, where the role may ask. */
    int64_t may = 0;
    if (!rc && (rc = pg_int(b,
                            "SELECT (pg_has_role('pg_checkpoint', 'MEMBER') OR (SELECT rolsuper "
                            "FROM pg_roles WHERE rolname = current_user))::int",
                            NULL, NULL, &may, NULL, err)) == 0) {
        if (may)
            rc = pg_exec_plain(b, "CHECKPOINT", err);
        else if (warn)
            (void)rs_buf_addf(warn,
                              "%sthis role may not CHECKPOINT (pg_checkpoint): the vacuumed "
                              "pages reach the data files at the server's next checkpoint",
                              warn->len ? "; " : "");
    }
    return rc;
}

int pg_redaction_each(rs_backend *b, const rs_target *t, int64_t from, int64_t to,
                      int (*fn)(void *ctx, const rs_redact_row *r), void *ctx, rs_err *err)
{
    if (!b->has_salt)
        return 0;
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_int(&a, from);
    pg_arg_int(&a, to);
    pg_arg_text(&a, t->user);
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT seq, nullif(owner, ''), at, paths, reason, leaf, line_hash, note FROM "
                    "runfs_redaction WHERE thread_id = $1 AND run_id = $2 AND seq BETWEEN $3 AND "
                    "$4 AND ($5::text IS NULL OR owner = $5) ORDER BY seq, at COLLATE \"C\"",
                    &a, &r, err);
    if (rc)
        return rc;
    for (int i = 0; !rc && i < PQntuples(r); i++) {
        rs_redact_row row = {
            .seq = pg_val_int(r, i, 0),
            .owner = PQgetisnull(r, i, 1) ? NULL : PQgetvalue(r, i, 1),
            .at = PQgetvalue(r, i, 2),
            .paths = PQgetvalue(r, i, 3),
            .reason = PQgetvalue(r, i, 4),
            .leaf = PQgetisnull(r, i, 5) ? NULL : PQgetvalue(r, i, 5),
            .line_hash = PQgetvalue(r, i, 6),
            .note = PQgetisnull(r, i, 7) ? NULL : PQgetvalue(r, i, 7),
        };
        rc = fn(ctx, &row);
    }
    PQclear(r);
    return rc;
}
