/* pg_changes.c — the change feed's numbers on PostgreSQL (runfs_change: sqlite/schema.sql.h's
 * table, same meaning). A change's number is the 64-bit id of the transaction that made it
 * (pg_current_xact_id), written in that transaction: by runfs's own statements (the INSERT
 * of an append's rows carries it, CHANGE_NOTE), by a trigger for another writer's inserts,
 * and by triggers for every delete and in-place update (runfs's too). Transactions commit
 * out of id order, so the feed shows only numbers below the oldest transaction still
 * running (its snapshot's xmin): any transaction that could still commit a change has an
 * id at or above it, and any later one gets a higher id. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "pg_int.h"
#include "rs_util.h"

#define PG_SETUP_LOCK_CHANGES "7240519"

/* The owner of rows: '' for none, NULL for several. */
#define ROWS_OWNER(t) \
    "CASE WHEN min(coalesce(" t ".user_id, '')) = max(coalesce(" t ".user_id, '')) THEN " \
    "min(coalesce(" t ".user_id, '')) END"

/* Runs whose rows were deleted or changed in place (the runs of u(thread_id, run_id, own),
 * own the owner of the rows that left) get the transaction's number: a tombstone when no
 * row is left. */
#define TOUCH_RUNS(source) \
    "  INSERT INTO runfs_change (thread_id, run_id, change, owner, deleted)\n" \
    "  SELECT u.thread_id, u.run_id, pg_current_xact_id()::text::bigint,\n" \
    "    CASE WHEN r.n = 0 THEN u.own ELSE r.own END, r.n = 0\n" \
    "  FROM (SELECT thread_id, run_id, " ROWS_OWNER( \
        "s") " AS own FROM (" source ") s\n" \
             "    GROUP BY thread_id, run_id) u\n" \
             "  CROSS JOIN LATERAL (SELECT count(*) AS n, " ROWS_OWNER( \
                 "e") " AS own FROM run_events e\n" \
                      "    WHERE e.thread_id = u.thread_id AND e.run_id = u.run_id) r\n" \
                      "  ON CONFLICT (thread_id, run_id) DO UPDATE SET\n" \
                      "    change = greatest(runfs_change.change, excluded.change), deleted = excluded.deleted,\n" \
                      "    owner = CASE WHEN excluded.deleted THEN coalesce(runfs_change.owner, excluded.owner)\n" \
                      "    ELSE excluded.owner END;\n" \
                      "  PERFORM pg_notify('runfs_events', '');\n"

/* Made at a read-write open where it is missing, under a lock of its own. The functions
 * run as their owner (runfs's role), as runfs_note_insert does. */
/* clang-format off */
static const char changes_schema_sql[] =
    "CREATE TABLE IF NOT EXISTS runfs_change (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, change BIGINT NOT NULL, owner TEXT,\n"
    "  deleted BOOLEAN NOT NULL DEFAULT false, PRIMARY KEY (thread_id, run_id));\n"
    "CREATE INDEX IF NOT EXISTS runfs_change_order ON runfs_change (change);\n"
    "CREATE OR REPLACE FUNCTION runfs_change_delete() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    TOUCH_RUNS("SELECT thread_id, run_id, user_id FROM old_rows")
    "  RETURN NULL;\n"
    "END $$;\n"
    "CREATE OR REPLACE FUNCTION runfs_change_update() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    TOUCH_RUNS("SELECT thread_id, run_id, user_id FROM old_rows UNION ALL SELECT "
               "thread_id, run_id, user_id FROM new_rows")
    "  RETURN NULL;\n"
    "END $$;\n"
    "CREATE OR REPLACE TRIGGER runfs_change_delete AFTER DELETE ON run_events\n"
    "  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION runfs_change_delete();\n"
    "CREATE OR REPLACE TRIGGER runfs_change_update AFTER UPDATE ON run_events\n"
    "  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows\n"
    "  FOR EACH STATEMENT EXECUTE FUNCTION runfs_change_update();\n"
    /* Last, under the lock the triggers took on run_events (its own snapshot sees every
     * insert that committed before it): a store with no row yet has no run to number. */
    "INSERT INTO runfs_meta (key, value) SELECT 'changes_init', CASE WHEN EXISTS (SELECT 1 "
    "FROM run_events) THEN 0 ELSE 1 END ON CONFLICT DO NOTHING;\n";

/* Another writer's INSERT (DeerFlow's put and put_batch): its threads left to be indexed,
 * the runfs_canon ranges around its ids dropped (pg_schema_note_sql's note), and its runs
 * numbered with the transaction's id. One trigger for all of it, on runfs_note_insert's
 * name (a role with the README's grants may replace a trigger, not drop one), since what
 * runfs adds costs DeerFlow's own writes (DESIGN "Storage"): the statements a trigger runs
 * are most of that cost, so the common case, one run's rows into a thread already left to
 * be indexed, runs one read and one UPDATE. A thread already marked stays marked: the mark
 * is cleared only under the thread's advisory lock, which DeerFlow's writer holds until it
 * commits, and read committed reads it after the lock was granted (a writer whose snapshot
 * is older marks it as before, and meets a concurrent clearing as before). A row put back
 * at or below its thread's last indexed seq (restored, or deleted and written again in one
 * transaction), which that read finds as well (marked -1), or at an id below the search
 * index's (low), is pg_schema_note_sql's case: the thread recomputed (1), 'rewrites' moved,
 * the search blocks marked; an append pays no statement for it. The separate
 * runfs_change_insert of earlier builds is dropped where this role owns run_events and
 * otherwise never fires. The set-up runs again wherever the function's body is not this
 * one: that comparison alone says whether the insert trigger is this build's (the
 * runfs_note_insert function an earlier build's trigger called is then called no more). */
#define FOREIGN_INSERT_BODY \
    "\nDECLARE\n" \
    "  t0 text; t1 text; r0 text; r1 text; o0 text; o1 text; marked int; canon boolean;\n" \
    "  low boolean; x bigint;\n" \
    "BEGIN\n" \
    "  IF current_setting('runfs.writer', true) = '1' THEN RETURN NULL; END IF;\n" \
    "  x := pg_current_xact_id()::text::bigint;\n" \
    "  SELECT min(thread_id), max(thread_id), min(run_id), max(run_id),\n" \
    "    min(coalesce(user_id, '')), max(coalesce(user_id, '')),\n" \
    "    (SELECT CASE WHEN t.last_seq >= min(n.seq) THEN -1 ELSE t.dirty END FROM runfs_thread t\n" \
    "      WHERE t.thread_id = min(n.thread_id)),\n" \
    "    EXISTS (SELECT 1 FROM runfs_canon c WHERE c.hi >= min(n.id)),\n" \
    "    coalesce(min(n.id) <= (SELECT value FROM runfs_meta WHERE key = 'search_upto'), false)\n" \
    "    INTO t0, t1, r0, r1, o0, o1, marked, canon, low FROM new_rows n;\n" \
    "  IF t0 IS NULL THEN RETURN NULL; END IF;\n" \
    "  IF t0 <> t1 OR marked IS NULL OR marked <= 0\n" \
    "      OR current_setting('transaction_isolation') <> 'read committed' THEN\n" \
    "    WITH u AS (INSERT INTO runfs_thread (thread_id, dirty) SELECT DISTINCT thread_id, 2\n" \
    "      FROM new_rows ON CONFLICT (thread_id) DO UPDATE SET dirty = CASE WHEN\n" \
    "      runfs_thread.dirty = 1 OR EXISTS (SELECT 1 FROM new_rows n WHERE n.thread_id =\n" \
    "      runfs_thread.thread_id AND n.seq <= runfs_thread.last_seq) THEN 1 ELSE 2 END\n" \
    "      RETURNING thread_id, last_seq),\n" \
    "    bk AS (SELECT DISTINCT u.thread_id FROM u JOIN new_rows n ON n.thread_id = u.thread_id\n" \
    "      AND n.seq <= u.last_seq),\n" \
    "    w AS (UPDATE runfs_meta SET value = value + 1 WHERE key = 'rewrites'\n" \
    "      AND EXISTS (SELECT 1 FROM bk) RETURNING value)\n" \
    "    INSERT INTO runfs_rewritten (thread_id, at) SELECT bk.thread_id, w.value FROM bk, w\n" \
    "      ON CONFLICT (thread_id) DO UPDATE SET at = excluded.at;\n" \
    "  END IF;\n" \
    "  IF canon OR low THEN\n" \
    "    WITH c AS (DELETE FROM runfs_canon c WHERE c.hi >= (SELECT min(id) FROM new_rows)\n" \
    "      AND EXISTS (SELECT 1 FROM new_rows n WHERE n.id BETWEEN c.lo AND c.hi))\n" \
    "    INSERT INTO runfs_search_dirty (blk) SELECT DISTINCT (id - 1) / 64 FROM new_rows\n" \
    "      WHERE id <= (SELECT value FROM runfs_meta WHERE key = 'search_upto')\n" \
    "      ON CONFLICT (blk) DO UPDATE SET blk = excluded.blk;\n" \
    "  END IF;\n" \
    "  IF t0 = t1 AND r0 = r1 THEN\n" \
    "    IF o0 <> o1 THEN o0 := NULL; END IF;\n" \
    "    UPDATE runfs_change SET change = greatest(change, x), deleted = false,\n" \
    "      owner = CASE WHEN deleted OR owner = o0 THEN o0 END\n" \
    "      WHERE thread_id = t0 AND run_id = r0;\n" \
    "    IF FOUND THEN RETURN NULL; END IF;\n" \
    "  END IF;\n" \
    "  INSERT INTO runfs_change (thread_id, run_id, change, owner)\n" \
    "  SELECT thread_id, run_id, x, " ROWS_OWNER("n") "\n" \
    "    FROM new_rows n GROUP BY thread_id, run_id\n" \
    "  ON CONFLICT (thread_id, run_id) DO UPDATE SET\n" \
    "    change = greatest(runfs_change.change, excluded.change), deleted = false,\n" \
    "    owner = CASE WHEN runfs_change.deleted OR runfs_change.owner = excluded.owner\n" \
    "    THEN excluded.owner END;\n" \
    "  RETURN NULL;\n" \
    "END "

static const char changes_insert_sql[] =
    "CREATE TABLE IF NOT EXISTS runfs_search_dirty (blk BIGINT PRIMARY KEY);\n"
    "CREATE OR REPLACE FUNCTION runfs_foreign_insert() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$" FOREIGN_INSERT_BODY "$$;\n"
    "CREATE OR REPLACE TRIGGER runfs_note_insert AFTER INSERT ON run_events\n"
    "  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION\n"
    "  runfs_foreign_insert();\n"
    "DO $$ BEGIN\n"
    "  IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'runfs_change_insert'\n"
    "      AND tgrelid = 'run_events'::regclass) THEN\n"
    "    IF " PG_OWNS_EVENTS " THEN\n"
    "      DROP TRIGGER runfs_change_insert ON run_events;\n"
    "    ELSE\n"
    "      CREATE OR REPLACE TRIGGER runfs_change_insert AFTER INSERT ON run_events\n"
    "        FOR EACH STATEMENT WHEN (false) EXECUTE FUNCTION runfs_foreign_insert();\n"
    "    END IF;\n"
    "  END IF;\n"
    "END $$;\n"
    "DROP FUNCTION IF EXISTS runfs_change_insert();\n";
/* clang-format on */

/* Statements without parameters (the schema), in a transaction of their own. */
static int exec_script(rs_backend *b, const char *sql, rs_err *err)
{
    PGresult *r = PQexec(b->conn, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        rs_err_set(err, -EIO, "change feed: %s", PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -EIO;
}

/* The feed's delete and update triggers, and the one insert trigger with this build's body
 * (changes_insert_sql). */
static int changes_present(rs_backend *b, int *present, rs_err *err)
{
    int64_t v = 0;
    int rc = pg_int(b,
                    "SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass('run_events') "
                    "AND (tgname = 'runfs_change_update' OR (tgname = 'runfs_note_insert' AND "
                    "tgfoid = coalesce(to_regproc('runfs_foreign_insert'), 0) AND (SELECT prosrc "
                    "FROM pg_proc WHERE oid = tgfoid) = $1))",
                    FOREIGN_INSERT_BODY, NULL, &v, NULL, err);
    *present = v == 2;
    return rc;
}

int pg_changes_setup(rs_backend *b, rs_err *err)
{
    int present = 0;
    int rc = changes_present(b, &present, err);
    if (rc || present)
        return rc;
    if ((rc =
             exec_script(b, "BEGIN; SELECT pg_advisory_xact_lock(" PG_SETUP_LOCK_CHANGES ")", err)))
        return rc;
    if (!(rc = changes_present(b, &present, err)) && !present &&
        !(rc = exec_script(b, changes_schema_sql, err)))
        rc = exec_script(b, changes_insert_sql, err);
    if (!rc)
        return exec_script(b, "COMMIT", err);
    exec_script(b, "ROLLBACK", NULL);
    return rc;
}

int pg_change_touch(rs_backend *b, const rs_target *t, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    return pg_run(b,
                  "UPDATE runfs_change SET change = greatest(change, "
                  "pg_current_xact_id()::text::bigint) WHERE thread_id = $1 AND run_id = $2",
                  &a, NULL, err);
}

int pg_changes_sync(rs_backend *b, rs_err *err)
{
    /* The runs a store held before its feed began are numbered at its first read. */
    int64_t done = 1;
    if (b->feed_ready)
        return 0;
    int rc = pg_int(b, "SELECT value FROM runfs_meta WHERE key = 'changes_init'", NULL, NULL, &done,
                    NULL, err);
    if (rc || done)
        return rc;
    if ((rc = pg_begin(b, NULL, err)))
        return rc;
    if ((rc = pg_run(b, "SELECT pg_advisory_xact_lock(" PG_SETUP_LOCK_CHANGES ")", NULL, NULL,
                     err)) ||
        (rc = pg_run(
             b,
             "INSERT INTO runfs_change (thread_id, run_id, change, owner) SELECT "
             "thread_id, run_id, pg_current_xact_id()::text::bigint, " ROWS_OWNER(
                 "e") " FROM run_events e WHERE (SELECT value FROM runfs_meta WHERE key = "
                      "'changes_init') = 0 GROUP BY thread_id, run_id ON CONFLICT DO NOTHING",
             NULL, NULL, err)) ||
        (rc = pg_run(b, "UPDATE runfs_meta SET value = 1 WHERE key = 'changes_init'", NULL, NULL,
                     err))) {
        pg_rollback(b);
        return rc;
    }
    return pg_commit(b, err);
}

/* Are the runs numbered (the table there, its first numbering done: then kept, it stays)?
 * runfs_meta is read in runfs_change's schema: a reader of a store that had no side tables
 * at its open has a TEMP runfs_meta of its own that shadows the real one. */
static int feed_numbered(rs_backend *b, rs_err *err)
{
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT quote_ident(n.nspname) FROM pg_class c JOIN pg_namespace n ON n.oid = "
                    "c.relnamespace WHERE c.oid = to_regclass('runfs_change')",
                    NULL, &r, err);
    if (rc)
        return rc;
    rs_buf q = RS_BUF_INIT;
    if (PQntuples(r) == 1 &&
        rs_buf_addf(&q, "SELECT value FROM %s.runfs_meta WHERE key = 'changes_init'",
                    PQgetvalue(r, 0, 0)))
        rc = rs_err_set(err, -ENOMEM, "out of memory");
    PQclear(r);
    int64_t done = 0;
    if (!rc && q.len)
        rc = pg_int(b, q.buf, NULL, NULL, &done, NULL, err);
    rs_buf_release(&q);
    if (!rc && done != 1)
        rc = rs_err_set(err, -ENODATA, RS_FEED_UNNUMBERED);
    b->feed_ready = !rc;
    return rc;
}

/* $1 after, $2 thread (NULL: all), $3 user (NULL: every owner), $4 a page's limit. One
 * statement: the horizon and the rows come from one snapshot. A page's runs are picked first
 * (WITH TIES: one commit's runs share its number, and the next page starts above it), their
 * counts read for those only. */
#define CHANGES_SQL(expired) \
    "SELECT c.change, c.thread_id, c.run_id, c.deleted, x.n, x.top, " \
    "to_char(l.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), t.content, " \
    "t.event_metadata, s.state, " expired " FROM (SELECT c.* FROM runfs_change c " \
    "WHERE c.change > $1::bigint AND c.change < " \
    "pg_snapshot_xmin(pg_current_snapshot())::text::bigint AND ($2::text IS NULL OR " \
    "c.thread_id = $2::text) AND ($3::text IS NULL OR c.owner = $3::text OR (c.owner IS " \
    "NULL AND NOT c.deleted AND EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = " \
    "c.thread_id AND e.run_id = c.run_id AND e.user_id = $3::text))) " \
    "ORDER BY c.change FETCH FIRST ($4::bigint) ROWS WITH TIES) c " \
    "CROSS JOIN LATERAL (SELECT count(*) AS n, coalesce(max(e.seq), 0) AS top FROM " \
    "run_events e WHERE e.thread_id = c.thread_id AND e.run_id = c.run_id AND ($3::text IS " \
    "NULL OR e.user_id = $3::text)) x " \
    "LEFT JOIN LATERAL (SELECT e.created_at FROM run_events e WHERE e.thread_id = " \
    "c.thread_id AND e.run_id = c.run_id AND ($3::text IS NULL OR e.user_id = $3::text) " \
    "ORDER BY e.seq DESC LIMIT 1) l ON true " \
    "LEFT JOIN LATERAL (SELECT e.content, e.event_metadata FROM run_events e WHERE " \
    "e.thread_id = c.thread_id AND e.run_id = c.run_id AND e.event_type = 'run.terminal' " \
    "AND ($3::text IS NULL OR e.user_id = $3::text) ORDER BY e.seq LIMIT 1) t ON true " \
    "LEFT JOIN runfs_seal s ON s.thread_id = c.thread_id AND s.run_id = c.run_id AND " \
    "s.owner = coalesce($3::text, '') " \
    "ORDER BY c.change, c.thread_id, c.run_id"

int pg_changes(rs_backend *b, int64_t after, const char *user, const char *thread_id,
               rs_change_page *page, rs_change_row_fn fn, void *ctx, rs_err *err)
{
    int rc = b->feed_ready ? 0 : feed_numbered(b, err);
    if (rc)
        return rc;
    /* An expired tombstone is one whose number retention kept (runfs_expired). */
    static const char with_expired[] = CHANGES_SQL(
        "(c.deleted AND EXISTS (SELECT 1 FROM runfs_expired y WHERE y.thread_id = c.thread_id "
        "AND y.run_id = c.run_id AND y.change = c.change))");
    static const char without[] = CHANGES_SQL("false");
    const char *sql = b->has_expired ? with_expired : without;
    pg_args a = {.n = 0};
    pg_arg_int(&a, after);
    pg_arg_text(&a, thread_id);
    pg_arg_text(&a, user);
    /* WITH TIES refuses a NULL count. */
    pg_arg_int(&a, page ? page->limit : INT64_MAX);
    PGresult *r;
    if ((rc = pg_run(b, sql, &a, &r, err)))
        return rc;
    int n = PQntuples(r);
    if (page) {
        if (n > 0)
            page->last = pg_val_int(r, n - 1, 0);
        page->more = n >= page->limit;
    }
    for (int i = 0; !rc && i < n; i++) {
        rs_change_row row = {
            .change = pg_val_int(r, i, 0),
            .thread_id = PQgetvalue(r, i, 1),
            .run_id = PQgetvalue(r, i, 2),
            .deleted = PQgetvalue(r, i, 3)[0] == 't',
            .expired = PQgetvalue(r, i, 10)[0] == 't',
            .events = pg_val_int(r, i, 4),
            .upper_seq = pg_val_int(r, i, 5),
            .created_at = PQgetisnull(r, i, 6) ? NULL : PQgetvalue(r, i, 6),
            .seal = PQgetisnull(r, i, 9) ? NULL : PQgetvalue(r, i, 9),
        };
        row.odd = !rs_id_valid_n(row.thread_id, (size_t)PQgetlength(r, i, 1)) ||
                  !rs_id_valid_n(row.run_id, (size_t)PQgetlength(r, i, 2));
        if (!PQgetisnull(r, i, 7)) {
            row.terminal.content = PQgetvalue(r, i, 7);
            row.terminal.content_len = (size_t)PQgetlength(r, i, 7);
            row.terminal.metadata = PQgetvalue(r, i, 8);
            row.terminal.metadata_len = (size_t)PQgetlength(r, i, 8);
        }
        /* A run runfs would not show (a scoped owner's run with none of its rows left). */
        if (!row.deleted && row.events == 0)
            continue;
        rc = fn(ctx, &row);
    }
    PQclear(r);
    return rc;
}

int pg_changes_head(rs_backend *b, int64_t *head, rs_err *err)
{
    int rc = b->feed_ready ? 0 : feed_numbered(b, err);
    /* The highest number the feed shows now: below every number a running writer holds. */
    return rc ? rc
              : pg_int(b,
                       "SELECT coalesce(max(change), 0) FROM runfs_change WHERE change < "
                       "pg_snapshot_xmin(pg_current_snapshot())::text::bigint",
                       NULL, NULL, head, NULL, err);
}
