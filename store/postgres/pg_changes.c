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
#include <time.h>

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
    /* An id gone is no longer accounted for: given again above N, it is another writer's. */
    "  DELETE FROM runfs_tail t USING old_rows o WHERE t.id = o.id;\n"
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

/* Another writer's rows: their threads left to be indexed (2: rows above the indexed ones;
 * 1: a row put back at or below the thread's last indexed seq, restored or deleted and
 * written again, which 'rewrites' counts, one a row, as a rewrite of the middle of the logs),
 * the
 * runfs_canon ranges around their ids dropped (pg_schema_note_sql's note), the search blocks
 * they land in below the index's marked, and their runs numbered: with x, or where x is NULL
 * with each row's own xmin made 64-bit from the current epoch (the number the transaction
 * that wrote it had). $1 the rows' ids. Called by the insert trigger for an id given again
 * and by runfs_tail_apply for the tail. */
#define NOTE_IDS_BODY \
    "\nDECLARE r bigint := pg_snapshot_xmax(pg_current_snapshot())::text::bigint;\n" \
    "BEGIN\n" \
    "  WITH n AS (SELECT id, thread_id, seq FROM run_events WHERE id = ANY(ids)),\n" \
    "    u AS (INSERT INTO runfs_thread (thread_id, dirty) SELECT DISTINCT thread_id, 2 FROM n\n" \
    "      ON CONFLICT (thread_id) DO UPDATE SET dirty = CASE WHEN runfs_thread.dirty = 1 OR\n" \
    "      EXISTS (SELECT 1 FROM n WHERE n.thread_id = runfs_thread.thread_id AND\n" \
    "      n.seq <= runfs_thread.last_seq) THEN 1 ELSE 2 END RETURNING thread_id, last_seq),\n" \
    "    bk AS (SELECT DISTINCT u.thread_id FROM u JOIN n ON n.thread_id = u.thread_id\n" \
    "      AND n.seq <= u.last_seq),\n" \
    "    w AS (UPDATE runfs_meta SET value = value + (SELECT count(*) FROM u JOIN n ON\n" \
    "      n.thread_id = u.thread_id AND n.seq <= u.last_seq) WHERE key = 'rewrites'\n" \
    "      AND EXISTS (SELECT 1 FROM bk) RETURNING value)\n" \
    "  INSERT INTO runfs_rewritten (thread_id, at) SELECT bk.thread_id, w.value FROM bk, w\n" \
    "    ON CONFLICT (thread_id) DO UPDATE SET at = excluded.at;\n" \
    "  WITH n AS (SELECT id FROM run_events WHERE id = ANY(ids)),\n" \
    "    c AS (DELETE FROM runfs_canon c WHERE c.hi >= (SELECT min(id) FROM n)\n" \
    "      AND EXISTS (SELECT 1 FROM n WHERE n.id BETWEEN c.lo AND c.hi))\n" \
    "  INSERT INTO runfs_search_dirty (blk) SELECT DISTINCT (id - 1) / 64 FROM n\n" \
    "    WHERE id <= (SELECT value FROM runfs_meta WHERE key = 'search_upto')\n" \
    "    ON CONFLICT (blk) DO UPDATE SET blk = excluded.blk;\n" \
    "  INSERT INTO runfs_change (thread_id, run_id, change, owner)\n" \
    "  SELECT thread_id, run_id, max(coalesce(x, " PG_XMIN64("n.xmin", "r") ")), " ROWS_OWNER("n") "\n" \
    "    FROM run_events n WHERE id = ANY(ids) GROUP BY thread_id, run_id\n" \
    "  ON CONFLICT (thread_id, run_id) DO UPDATE SET\n" \
    "    change = greatest(runfs_change.change, excluded.change), deleted = false,\n" \
    "    owner = CASE WHEN runfs_change.deleted OR runfs_change.owner = excluded.owner\n" \
    "    THEN excluded.owner END;\n" \
    "END "

/* Another writer's INSERT costs DeerFlow's own writes nothing runfs adds (DESIGN "Storage"):
 * the insert trigger fires only for an id at or below the watermark N (runfs_meta's
 * 'tail_from', the trigger's constant), an id given again (a row put back by hand). Every row
 * above N, the tail, fired nothing: runfs_tail holds the ids of those already accounted for
 * (runfs's own rows, CANON_NOTE's, and another writer's once runfs_tail_apply claimed and
 * noted them), and a reader that needs the rest reads them itself (the feed in its own
 * statement, pg_changes_tail). N moves only while runfs_tail_fold holds the lock CREATE OR
 * REPLACE TRIGGER takes on run_events (every inserter holds ROW EXCLUSIVE from before its
 * nextval to its commit), so every row at or below it fired the trigger or was in the tail
 * folded under that lock: exact, where judging from transaction ids is not (an id is taken
 * before its writer has one). A fold waits for that lock 5 ms at most (it holds DeerFlow's
 * next inserts back while it waits) and gives up, so it may fail for a while: readers never
 * rely on it. The trigger keeps runfs_note_insert's name (a role with the README's grants
 * may replace a trigger, not drop one); the runfs_change_insert of earlier builds is
 * dropped where this role owns run_events and otherwise never fires. The set-up runs again
 * wherever the function's body is not this one or the trigger is not a row trigger. */
#define FOREIGN_INSERT_BODY \
    "\nBEGIN\n" \
    "  IF current_setting('runfs.writer', true) = '1' THEN RETURN NULL; END IF;\n" \
    "  PERFORM runfs_note_ids(ARRAY[NEW.id::bigint], pg_current_xact_id()::text::bigint);\n" \
    "  RETURN NULL;\n" \
    "END "

/* The insert trigger with the watermark runfs_meta holds. */
#define TAIL_TRIGGER \
    "EXECUTE format('CREATE OR REPLACE TRIGGER runfs_note_insert AFTER INSERT ON run_events '\n" \
    "    'FOR EACH ROW WHEN (NEW.id <= %s) EXECUTE FUNCTION runfs_foreign_insert()',\n" \
    "    (SELECT value FROM runfs_meta WHERE key = 'tail_from'));\n"

/* The tail's rows not yet claimed (of thread th alone where it is not NULL), claimed (in id
 * order: two claimers meet in the same order) and noted; returns the tail's size (claimed or
 * not). N is read in the claiming statement itself: read before it, a fold committed between
 * the two had dropped the claims of rows it moved N over, which were claimed and noted again
 * (runfs's own rows taken for another writer's put back: a thread recomputed and its readers
 * failed with ESTALE, and runfs's writers met in a deadlock). A write transaction notes its own thread's only: the marks of other threads' rows
 * would hold their runfs_thread rows to its commit, against their own writers (a deadlock). */
#define TAIL_APPLY_BODY \
    "\nDECLARE ids bigint[];\n" \
    "BEGIN\n" \
    "  WITH c AS (INSERT INTO runfs_tail (id) SELECT e.id FROM (SELECT id, thread_id FROM\n" \
    "      run_events WHERE id > (SELECT value FROM runfs_meta WHERE key = 'tail_from')\n" \
    "      AND id <= (SELECT max(id) FROM run_events) OFFSET 0) e\n" \
    "      WHERE (th IS NULL OR e.thread_id = th)\n" \
    "      AND NOT EXISTS (SELECT 1 FROM runfs_tail t WHERE t.id = e.id) ORDER BY e.id\n" \
    "      ON CONFLICT DO NOTHING RETURNING id)\n" \
    "    SELECT array_agg(id) INTO ids FROM c;\n" \
    "  IF ids IS NOT NULL THEN PERFORM runfs_note_ids(ids, NULL); END IF;\n" \
    "  RETURN (SELECT count(*) FROM run_events WHERE id > (SELECT value FROM runfs_meta\n" \
    "    WHERE key = 'tail_from'));\n" \
    "END "

/* The fold: under run_events' SHARE ROW EXCLUSIVE lock (5 ms at most for it, and for any
 * row lock the notes meet), the tail's last rows claimed, N moved to the highest id, the
 * claims at or below it dropped. false: given up (nothing of it done). */
#define TAIL_FOLD_BODY \
    "\nBEGIN\n" \
    "  PERFORM set_config('lock_timeout', '5ms', true);\n" \
    "  BEGIN\n" \
    "    LOCK TABLE run_events IN SHARE ROW EXCLUSIVE MODE;\n" \
    "    PERFORM runfs_tail_apply();\n" \
    "    UPDATE runfs_meta SET value = greatest(value, (SELECT coalesce(max(id), 0)\n" \
    "      FROM run_events)) WHERE key = 'tail_from';\n" \
    "    " TAIL_TRIGGER \
    "    DELETE FROM runfs_tail WHERE id <= (SELECT value FROM runfs_meta WHERE key = 'tail_from');\n" \
    "  EXCEPTION WHEN lock_not_available OR deadlock_detected THEN\n" \
    "    RETURN false;\n" \
    "  END;\n" \
    "  RETURN true;\n" \
    "END "

static const char changes_insert_sql[] =
    "CREATE TABLE IF NOT EXISTS runfs_search_dirty (blk BIGINT PRIMARY KEY);\n"
    "CREATE TABLE IF NOT EXISTS runfs_tail (id BIGINT PRIMARY KEY);\n"
    "CREATE OR REPLACE FUNCTION runfs_note_ids(ids bigint[], x bigint) RETURNS void\n"
    "  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$" NOTE_IDS_BODY "$$;\n"
    "CREATE OR REPLACE FUNCTION runfs_foreign_insert() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$" FOREIGN_INSERT_BODY "$$;\n"
    "CREATE OR REPLACE FUNCTION runfs_tail_apply(th text DEFAULT NULL) RETURNS bigint\n"
    "  LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$" TAIL_APPLY_BODY "$$;\n"
    "CREATE OR REPLACE FUNCTION runfs_tail_fold() RETURNS boolean LANGUAGE plpgsql\n"
    "  SET search_path FROM CURRENT AS $$" TAIL_FOLD_BODY "$$;\n"
    /* The first N under the lock (every insert before it committed, and fired the trigger
     * it found); a store that has one keeps it (only a fold moves it). */
    "LOCK TABLE run_events IN SHARE ROW EXCLUSIVE MODE;\n"
    "INSERT INTO runfs_meta (key, value) SELECT 'tail_from', coalesce(max(id), 0) FROM\n"
    "  run_events ON CONFLICT (key) DO NOTHING;\n"
    "DO $$ BEGIN\n"
    "  " TAIL_TRIGGER
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
                    "tgtype & 1 = 1 AND "
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

int pg_tail_apply(rs_backend *b, const char *thread_id, int fold, rs_err *err)
{
    /* Without fold no answer is asked: the statement may be one of a pipeline (pg_begin's),
     * whose answers come after this returns. */
    if (!fold) {
        pg_args a = {.n = 0};
        pg_arg_text(&a, thread_id);
        return pg_run(b, "SELECT runfs_tail_apply($1)", &a, NULL, err);
    }
    int64_t size = 0, now = rs_clock_ns(CLOCK_MONOTONIC);
    int rc = pg_int(b, thread_id ? "SELECT runfs_tail_apply($1)" : "SELECT runfs_tail_apply()",
                    thread_id, NULL, &size, NULL, err);
    if (!rc && size == 0)
        b->fold_ns = now;
    if (rc || size == 0 || (size < PG_TAIL_FOLD && now - b->fold_ns < PG_TAIL_IDLE_NS))
        return rc;
    /* Given up (the lock not had within its 5 ms): the tail stays, read by every reader, and
     * a later look tries again. */
    b->fold_ns = now;
    return pg_run(b, "SELECT runfs_tail_fold()", NULL, NULL, err);
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

/* The runs of the tail's rows not claimed (runfs_tail_apply's), numbered as it would number
 * them: a reader sees them in its own snapshot, where a fold or claim may come after it. */
#define TAIL_RUNS \
    "WITH tr AS (SELECT e.thread_id, e.run_id, max(" PG_XMIN64("e.xmin", "pg_snapshot_xmax(pg_current_snapshot())::text::bigint") ") AS change, " ROWS_OWNER( \
        "e") " AS owner FROM run_events e WHERE " PG_TAIL_ROW("e") " GROUP BY " \
                                                                   "e.thread_id, e.run_id) "
/* A store without runfs_tail (a read-only open of an earlier build's: its trigger noted every
 * row). */
#define NO_TAIL \
    "WITH tr AS (SELECT NULL::text AS thread_id, NULL::text AS run_id, 0::bigint AS change, " \
    "NULL::text AS owner WHERE false) "

/* runfs_change with the tail's runs (tr) merged in, as runfs_note_ids would merge them. */
#define FEED_RUNS \
    "(SELECT c.thread_id, c.run_id, c.change, c.owner, c.deleted FROM runfs_change c WHERE " \
    "NOT EXISTS (SELECT 1 FROM tr WHERE tr.thread_id = c.thread_id AND tr.run_id = c.run_id) " \
    "UNION ALL SELECT tr.thread_id, tr.run_id, greatest(tr.change, c.change), CASE WHEN " \
    "c.thread_id IS NULL OR c.deleted OR c.owner = tr.owner THEN tr.owner END, false FROM tr " \
    "LEFT JOIN runfs_change c ON c.thread_id = tr.thread_id AND c.run_id = tr.run_id)"

/* $1 after, $2 thread (NULL: all), $3 user (NULL: every owner), $4 a page's limit. One
 * statement: the horizon and the rows come from one snapshot. A page's runs are picked first
 * (WITH TIES: one commit's runs share its number, and the next page starts above it), their
 * counts read for those only. */
#define CHANGES_SQL(tail, expired) \
    tail "SELECT c.change, c.thread_id, c.run_id, c.deleted, x.n, x.top, " \
         "to_char(l.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), t.content, " \
         "t.event_metadata, s.state, " expired " FROM (SELECT c.* FROM " FEED_RUNS " c " \
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
#define EXPIRED \
    "(c.deleted AND EXISTS (SELECT 1 FROM runfs_expired y WHERE y.thread_id = c.thread_id " \
    "AND y.run_id = c.run_id AND y.change = c.change))"
    static const char *const sqls[2][2] = {
        {CHANGES_SQL(NO_TAIL, "false"), CHANGES_SQL(NO_TAIL, EXPIRED)},
        {CHANGES_SQL(TAIL_RUNS, "false"), CHANGES_SQL(TAIL_RUNS, EXPIRED)},
    };
#undef EXPIRED
    const char *sql = sqls[b->has_tail != 0][b->has_expired != 0];
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
#define HEAD_SQL(tail) \
    tail "SELECT coalesce(max(c.change), 0) FROM " FEED_RUNS " c WHERE c.change < " \
         "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
    return rc ? rc
              : pg_int(b, b->has_tail ? HEAD_SQL(TAIL_RUNS) : HEAD_SQL(NO_TAIL), NULL, NULL, head,
                       NULL, err);
#undef HEAD_SQL
}
