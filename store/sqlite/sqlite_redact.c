/* sqlite_redact.c — a redaction written so that no byte of what it erased stays in the file:
 * the row rewritten in place under secure_delete (freed cells and pages are zeroed), the
 * seq's salts and the search index dropped, the redaction kept (runfs_redaction), and the
 * WAL checkpointed into the file and truncated before the call returns. An expiry (a whole
 * run removed by retention) goes the same way, kept in runfs_expired. */
#include <errno.h>
#include <string.h>

#include "sqlite_int.h"
#include "rs_util.h"

/* Checkpoint attempts while a reader holds the WAL (a mount's request ends within them). */
#define CKPT_TRIES 200

static int write_row(rs_backend *b, const rs_target *t, const rs_redact_row *w, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b,
                         "UPDATE run_events SET content = ?3, event_metadata = ?4 WHERE "
                         "thread_id = ?1 AND seq = ?2 AND content = ?5 AND event_metadata = ?6",
                         &st, err);
    if (rc)
        return rc;
    sq_bind_text(st, 1, t->thread_id);
    sqlite3_bind_int64(st, 2, w->seq);
    sqlite3_bind_text64(st, 3, w->content, w->content_len, SQLITE_STATIC, SQLITE_UTF8);
    sqlite3_bind_text64(st, 4, w->meta, w->meta_len, SQLITE_STATIC, SQLITE_UTF8);
    sqlite3_bind_text64(st, 5, w->old_content, w->old_content_len, SQLITE_STATIC, SQLITE_UTF8);
    sqlite3_bind_text64(st, 6, w->old_meta, w->old_meta_len, SQLITE_STATIC, SQLITE_UTF8);
    int src = sqlite3_step(st);
    int changed = sqlite3_changes(b->db);
    sq_stmt_done(b, st);
    if (src != SQLITE_DONE)
        return sq_fail(b, src, err, "redaction");
    return changed == 1
               ? 0
               : rs_err_set(err, -EAGAIN, "event seq %lld changed meanwhile", (long long)w->seq);
}

static int redact_tx(rs_backend *b, const rs_target *t, const rs_redact_row *w, rs_err *err)
{
    int rc = sq_begin(b, err);
    if (rc)
        return rc;
    if ((rc = sq_catch_up(b, err)) || (rc = sq_thread_catch_up(b, t->thread_id, err)) ||
        (rc = write_row(b, t, w, err)) ||
        (rc = sq_step(b, NULL, err, "redaction",
                      "INSERT OR REPLACE INTO runfs_redaction (thread_id, run_id, seq, owner, at, "
                      "paths, reason, leaf, line_hash, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      "ttittttttt", t->thread_id, t->run_id, w->seq, w->owner ? w->owner : "",
                      w->at, w->paths, w->reason, w->leaf, w->line_hash, w->note)) < 0 ||
        (rc = sq_step(b, NULL, err, "redaction",
                      "DELETE FROM runfs_seal_salt WHERE thread_id = ? AND run_id = ? AND seq = ?",
                      "tti", t->thread_id, t->run_id, w->seq)) < 0 ||
        (rc = sq_search_forget(b, err)) || (rc = sq_steps_forget(b, t, err)))
        goto fail;
    return sq_commit(b, err);
fail:
    sq_rollback(b);
    return rc;
}

/* The WAL into the file and truncated: the old pages it held are gone with it. */
static int wal_truncate(rs_backend *b, rs_buf *warn)
{
    for (int i = 0; i < CKPT_TRIES; i++) {
        int log = -1, done = -1;
        int src = sqlite3_wal_checkpoint_v2(b->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done);
        if (src == SQLITE_OK)
            return 0;
        if (src != SQLITE_BUSY && src != SQLITE_LOCKED)
            break;
        sqlite3_sleep(10);
    }
    if (warn)
        (void)rs_buf_addlit(warn, "the WAL could not be truncated (a reader held it): the "
                                  "erased bytes leave it at the next checkpoint");
    return 0;
}

int sq_redact(rs_backend *b, const rs_target *t, const rs_redact_row *w, rs_buf *warn, rs_err *err)
{
    if (b->read_only)
        return rs_err_set(err, -EROFS, "the store is opened read-only");
    int rc = sq_exec(b, "PRAGMA secure_delete = ON", err);
    if (rc)
        return rc;
    rc = redact_tx(b, t, w, err);
    int off = sq_exec(b, "PRAGMA secure_delete = OFF", rc ? NULL : err);
    if (!rc)
        rc = off;
    return rc ? rc : wal_truncate(b, warn);
}

static int expire_tx(rs_backend *b, const rs_target *t, const rs_expire_row *x, rs_err *err)
{
    int rc = sq_begin(b, err);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    int64_t rows = -1, top = -1, count = 0;
    if ((rc = sq_catch_up(b, err)) || (rc = sq_thread_catch_up(b, t->thread_id, err)))
        goto fail;
    if ((rc = sq_step(b, &st, err, "expiry",
                      "SELECT count(*), coalesce(max(seq), 0) FROM run_events WHERE thread_id = ?1 "
                      "AND run_id = ?2 AND (?3 IS NULL OR user_id = ?3)",
                      "ttt", t->thread_id, t->run_id, t->user)) < 0)
        goto fail;
    if (rc) {
        rows = sqlite3_column_int64(st, 0);
        top = sqlite3_column_int64(st, 1);
        sq_stmt_done(b, st);
    }
    if (rows != x->rows || top != x->top_seq) {
        rc = rs_err_set(err, -EAGAIN, "run %s changed meanwhile", t->run_id);
        goto fail;
    }
    /* As a delete of the run (the high-water mark kept), then what the delete leaves: the
     * redactions of its rows, the search index's text; the tombstone's number is kept, so
     * the feed tells it expired. */
    if ((rc = sq_delete_rows(b, t, &count, err)) ||
        (rc = sq_step(b, NULL, err, "expiry",
                      "DELETE FROM runfs_redaction WHERE thread_id = ?1 AND run_id = ?2 AND "
                      "(?3 IS NULL OR owner = ?3)",
                      "ttt", t->thread_id, t->run_id, t->user)) < 0 ||
        (rc = sq_step(b, NULL, err, "expiry",
                      "DELETE FROM runfs_seal_salt WHERE thread_id = ?1 AND run_id = ?2 AND "
                      "(?3 IS NULL OR owner = ?3)",
                      "ttt", t->thread_id, t->run_id, t->user)) < 0 ||
        (rc = sq_search_forget(b, err)) || (rc = sq_steps_forget(b, t, err)) ||
        (rc = sq_step(b, NULL, err, "expiry",
                      "INSERT INTO runfs_expired (thread_id, run_id, owner, upper_seq, events, "
                      "digest, root, sealed_at, expired_at, policy, note, change) VALUES (?1, ?2, "
                      "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, coalesce((SELECT change FROM "
                      "runfs_change WHERE thread_id = ?1 AND run_id = ?2 AND deleted), 0))",
                      "tttiittttttt", t->thread_id, t->run_id, x->owner ? x->owner : "",
                      x->upper_seq, x->events, x->digest, x->root, x->sealed_at, x->expired_at,
                      x->policy, x->note)) < 0)
        goto fail;
    return sq_commit(b, err);
fail:
    sq_rollback(b);
    return rc;
}

int sq_expire(rs_backend *b, const rs_target *t, const rs_expire_row *x, rs_buf *warn, rs_err *err)
{
    if (b->read_only)
        return rs_err_set(err, -EROFS, "the store is opened read-only");
    int rc = sq_exec(b, "PRAGMA secure_delete = ON", err);
    if (rc)
        return rc;
    rc = expire_tx(b, t, x, err);
    int off = sq_exec(b, "PRAGMA secure_delete = OFF", rc ? NULL : err);
    if (!rc)
        rc = off;
    return rc ? rc : wal_truncate(b, warn);
}

int sq_expired_each(rs_backend *b, const char *user, int (*fn)(void *ctx, const rs_expire_row *x),
                    void *ctx, rs_err *err)
{
    if (sqlite3_table_column_metadata(b->db, NULL, "runfs_expired", "id", NULL, NULL, NULL, NULL,
                                      NULL) != SQLITE_OK)
        return 0;
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b,
                         "SELECT thread_id, run_id, nullif(owner, ''), upper_seq, events, digest, "
                         "root, sealed_at, expired_at, policy, note FROM runfs_expired WHERE ?1 "
                         "IS NULL OR owner = ?1 ORDER BY id",
                         &st, err);
    if (rc)
        return rc;
    sq_bind_text(st, 1, user);
    int src = SQLITE_DONE;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        rs_expire_row x = {
            .thread_id = (const char *)sqlite3_column_text(st, 0),
            .run_id = (const char *)sqlite3_column_text(st, 1),
            .owner = (const char *)sqlite3_column_text(st, 2),
            .upper_seq = sqlite3_column_int64(st, 3),
            .events = sqlite3_column_int64(st, 4),
            .digest = (const char *)sqlite3_column_text(st, 5),
            .root = (const char *)sqlite3_column_text(st, 6),
            .sealed_at = (const char *)sqlite3_column_text(st, 7),
            .expired_at = (const char *)sqlite3_column_text(st, 8),
            .policy = (const char *)sqlite3_column_text(st, 9),
            .note = (const char *)sqlite3_column_text(st, 10),
        };
        rc = fn(ctx, &x);
    }
    sq_stmt_done(b, st);
    if (!rc && src != SQLITE_DONE && src != SQLITE_ROW)
        rc = sq_fail(b, src, err, "expired runs");
    return rc;
}

int sq_redaction_each(rs_backend *b, const rs_target *t, int64_t from, int64_t to,
                      int (*fn)(void *ctx, const rs_redact_row *r), void *ctx, rs_err *err)
{
    if (sqlite3_table_column_metadata(b->db, NULL, "runfs_redaction", "seq", NULL, NULL, NULL, NULL,
                                      NULL) != SQLITE_OK)
        return 0;
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b,
                         "SELECT seq, nullif(owner, ''), at, paths, reason, leaf, line_hash, note "
                         "FROM runfs_redaction WHERE thread_id = ?1 AND run_id = ?2 AND seq "
                         "BETWEEN ?3 AND ?4 AND (?5 IS NULL OR owner = ?5) ORDER BY seq, at",
                         &st, err);
    if (rc)
        return rc;
    sq_bind_text(st, 1, t->thread_id);
    sq_bind_text(st, 2, t->run_id);
    sqlite3_bind_int64(st, 3, from);
    sqlite3_bind_int64(st, 4, to);
    sq_bind_text(st, 5, t->user);
    int src = SQLITE_DONE;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        rs_redact_row r = {
            .seq = sqlite3_column_int64(st, 0),
            .owner = (const char *)sqlite3_column_text(st, 1),
            .at = (const char *)sqlite3_column_text(st, 2),
            .paths = (const char *)sqlite3_column_text(st, 3),
            .reason = (const char *)sqlite3_column_text(st, 4),
            .leaf = (const char *)sqlite3_column_text(st, 5),
            .line_hash = (const char *)sqlite3_column_text(st, 6),
            .note = (const char *)sqlite3_column_text(st, 7),
        };
        rc = fn(ctx, &r);
    }
    sq_stmt_done(b, st);
    if (!rc && src != SQLITE_DONE && src != SQLITE_ROW)
        rc = sq_fail(b, src, err, "redactions");
    return rc;
}
