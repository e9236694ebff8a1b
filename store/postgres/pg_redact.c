/* pg_redact.c — a redaction on PostgreSQL (sqlite_redact.c's twin): the row rewritten, the
 * seq's salts and its block of the search index dropped, the redaction kept, in one
 * transaction; then VACUUM of the tables that held the text, so the old row versions are
 * gone when the call returns (where this role may vacuum them; else warn says so). An expiry
 * (a whole run removed by retention) goes the same way, kept in runfs_expired. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pg_int.h"
#include "rs_util.h"

/* The search index's lock (pg_search.c's sync_step), taken before the rows change: a
 * catch-up that read them before the change commits first, so the words it indexed are
 * there for this transaction to delete, and one after reads them changed. Taken first, as
 * this transaction's row changes mark blocks a waiting catch-up would wait for in turn. */
static int lock_search_index(rs_backend *b, rs_err *err)
{
    return pg_run(b, "SELECT pg_advisory_xact_lock(1920233331, 1)", NULL, NULL, err);
}

static int redact_tx(rs_backend *b, const rs_target *t, const rs_redact_row *w, rs_err *err)
{
    rs_buf wids = RS_BUF_INIT; /* the words of the index's rows deleted */
    int rc = pg_begin(b, t->thread_id, err);
    if (rc)
        return rc;
    if ((rc = lock_search_index(b, err))) {
        pg_rollback(b);
        return rc;
    }
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
    if ((rc = pg_int(b,
                     "SELECT (to_regclass('runfs_search') IS NOT NULL)::int + "
                     "(to_regclass('runfs_search_words') IS NOT NULL)::int",
                     NULL, NULL, &has, NULL, err)) ||
        (has && (rc = pg_search_delete(b, "blk = $1", &s, has == 2 ? &wids : NULL, err))) ||
        (rc = pg_search_orphans(b, &wids, err)) || (rc = pg_steps_forget(b, t, err)))
        goto fail;
    rs_buf_release(&wids);
    return pg_commit(b, err);
fail:
    rs_buf_release(&wids);
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

/* The old row versions vacuumed away and the pages written, where the role may. */
static int scrub(rs_backend *b, rs_buf *warn, rs_err *err)
{
    int rc = 0;
    static const char *const tables[] = {"run_events",      "runfs_search",    "runfs_search_words",
                                         "runfs_seal_salt", "runfs_redaction", "runfs_steps"};
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

int pg_redact(rs_backend *b, const rs_target *t, const rs_redact_row *w, rs_buf *warn, rs_err *err)
{
    if (b->read_only)
        return rs_err_set(err, -EROFS, "the store is opened read-only");
    int rc = redact_tx(b, t, w, err);
    return rc ? rc : scrub(b, warn, err);
}

static int expire_tx(rs_backend *b, const rs_target *t, const rs_expire_row *x, rs_err *err)
{
    rs_buf wids = RS_BUF_INIT; /* the words of the index's rows deleted */
    int rc = pg_begin(b, t->thread_id, err);
    if (rc)
        return rc;
    if ((rc = lock_search_index(b, err))) {
        pg_rollback(b);
        return rc;
    }
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_text(&a, t->user);
    PGresult *r = NULL;
    int64_t count = 0, has = 0;
    if ((rc = pg_run(b,
                     "SELECT count(*), coalesce(max(seq), 0) FROM run_events WHERE thread_id = $1 "
                     "AND run_id = $2 AND ($3::text IS NULL OR user_id = $3::text)",
                     &a, &r, err)))
        goto fail;
    int same = pg_val_int(r, 0, 0) == x->rows && pg_val_int(r, 0, 1) == x->top_seq;
    PQclear(r);
    if (!same) {
        rc = rs_err_set(err, -EAGAIN, "run %s changed meanwhile", t->run_id);
        goto fail;
    }
    pg_args k = {.n = 0};
    pg_arg_text(&k, t->thread_id);
    pg_arg_text(&k, t->run_id);
    pg_arg_text(&k, x->owner ? x->owner : "");
    pg_arg_int(&k, x->upper_seq);
    pg_arg_int(&k, x->events);
    pg_arg_text(&k, x->digest);
    pg_arg_text(&k, x->root);
    pg_arg_text(&k, x->sealed_at);
    pg_arg_text(&k, x->expired_at);
    pg_arg_text(&k, x->policy);
    pg_arg_text(&k, x->note);
    /* As a delete of the run (the high-water mark kept), then what the delete leaves: the
     * redactions and salts of its rows, the search index's blocks the delete marked; the
     * tombstone's number (this transaction's) is kept, so the feed tells it expired. */
    if ((rc = pg_delete_rows(b, t, &count, err)) ||
        (rc = pg_run(b,
                     "DELETE FROM runfs_redaction WHERE thread_id = $1 AND run_id = $2 AND "
                     "($3::text IS NULL OR owner = $3::text)",
                     &a, NULL, err)) ||
        (rc = pg_run(b,
                     "DELETE FROM runfs_seal_salt WHERE thread_id = $1 AND run_id = $2 AND "
                     "($3::text IS NULL OR owner = $3::text)",
                     &a, NULL, err)) ||
        (rc = pg_int(b,
                     "SELECT (to_regclass('runfs_search') IS NOT NULL AND "
                     "to_regclass('runfs_search_dirty') IS NOT NULL)::int + "
                     "(to_regclass('runfs_search_words') IS NOT NULL)::int",
                     NULL, NULL, &has, NULL, err)) ||
        (has && (rc = pg_search_delete(b, "blk IN (SELECT blk FROM runfs_search_dirty)", NULL,
                                       has == 2 ? &wids : NULL, err))) ||
        (rc = pg_search_orphans(b, &wids, err)) || (rc = pg_steps_forget(b, t, err)) ||
        (rc = pg_run(b,
                     "INSERT INTO runfs_expired (thread_id, run_id, owner, upper_seq, events, "
                     "digest, root, sealed_at, expired_at, policy, note, change) VALUES ($1, $2, "
                     "$3, $4, $5, $6, $7, $8, $9, $10, $11, pg_current_xact_id()::text::bigint)",
                     &k, NULL, err)))
        goto fail;
    rs_buf_release(&wids);
    return pg_commit(b, err);
fail:
    rs_buf_release(&wids);
    pg_rollback(b);
    return rc;
}

int pg_expire(rs_backend *b, const rs_target *t, const rs_expire_row *x, rs_buf *warn, rs_err *err)
{
    if (b->read_only)
        return rs_err_set(err, -EROFS, "the store is opened read-only");
    int rc = expire_tx(b, t, x, err);
    return rc ? rc : scrub(b, warn, err);
}

int pg_expired_each(rs_backend *b, const char *user, int (*fn)(void *ctx, const rs_expire_row *x),
                    void *ctx, rs_err *err)
{
    if (!b->has_expired)
        return 0;
    pg_args a = {.n = 0};
    pg_arg_text(&a, user);
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT thread_id, run_id, nullif(owner, ''), upper_seq, events, digest, root, "
                    "sealed_at, expired_at, policy, note FROM runfs_expired WHERE $1::text IS "
                    "NULL OR owner = $1::text ORDER BY id",
                    &a, &r, err);
    if (rc)
        return rc;
#define COL(i) (PQgetisnull(r, i_row, i) ? NULL : PQgetvalue(r, i_row, i))
    for (int i_row = 0; !rc && i_row < PQntuples(r); i_row++) {
        rs_expire_row x = {
            .thread_id = COL(0),
            .run_id = COL(1),
            .owner = COL(2),
            .upper_seq = pg_val_int(r, i_row, 3),
            .events = pg_val_int(r, i_row, 4),
            .digest = COL(5),
            .root = COL(6),
            .sealed_at = COL(7),
            .expired_at = COL(8),
            .policy = COL(9),
            .note = COL(10),
        };
        rc = fn(ctx, &x);
    }
#undef COL
    PQclear(r);
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
