/* pg_schema.sql.h — the PostgreSQL schema: DeerFlow's run_events exactly as DeerFlow creates it
 * (reference: DeerFlow's ORM compiled for postgresql), the high-water table, and runfs's side
 * tables (the SQLite backend's, same meaning, all rebuildable from run_events). Included by
 * pg.c; every statement runs in the URI's search_path. */
static const char pg_schema_deerflow_sql[] =
    "CREATE TABLE IF NOT EXISTS run_events (\n"
    "  id SERIAL NOT NULL,\n"
    "  thread_id VARCHAR(64) NOT NULL,\n"
    "  run_id VARCHAR(64) NOT NULL,\n"
    "  user_id VARCHAR(64),\n"
    "  event_type VARCHAR(32) NOT NULL,\n"
    "  category VARCHAR(16) NOT NULL,\n"
    "  content TEXT NOT NULL,\n"
    "  event_metadata JSON NOT NULL,\n"
    "  seq INTEGER NOT NULL,\n"
    "  created_at TIMESTAMP WITH TIME ZONE NOT NULL,\n"
    "  PRIMARY KEY (id),\n"
    "  CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq)\n"
    ");\n"
    "CREATE INDEX IF NOT EXISTS ix_events_run ON run_events (thread_id, run_id, seq);\n"
    "CREATE INDEX IF NOT EXISTS ix_events_thread_cat_seq ON run_events (thread_id, category, seq);\n"
    "CREATE INDEX IF NOT EXISTS ix_run_events_user_id ON run_events (user_id);\n";

/* Created only when absent, with DeerFlow's backfill (migration 0034): each thread's
 * MAX(seq), by index probes. */
static const char pg_schema_hwm_sql[] =
    "CREATE TABLE run_event_thread_seq (\n"
    "  thread_id VARCHAR(64) NOT NULL,\n"
    "  seq BIGINT DEFAULT 0 NOT NULL,\n"
    "  CONSTRAINT pk_run_event_thread_seq PRIMARY KEY (thread_id)\n"
    ");\n"
    "WITH RECURSIVE d(id) AS (SELECT min(thread_id) FROM run_events UNION ALL SELECT (SELECT\n"
    "  min(thread_id) FROM run_events WHERE thread_id > d.id) FROM d WHERE d.id IS NOT NULL)\n"
    "INSERT INTO run_event_thread_seq (thread_id, seq)\n"
    "  SELECT id, (SELECT MAX(seq) FROM run_events WHERE thread_id = d.id) FROM d\n"
    "  WHERE id IS NOT NULL;\n";

/* Idempotency keys (DESIGN "Appending"), per thread; a key whose row is gone is free again.
 * Created when absent, also in a store whose other side tables an older build made. */
static const char pg_schema_idem_sql[] =
    "CREATE TABLE runfs_idem (\n"
    "  thread_id TEXT NOT NULL, key TEXT NOT NULL, seq BIGINT NOT NULL,\n"
    "  PRIMARY KEY (thread_id, key)\n"
    ");\n";

/* What a row another writer inserts does to runfs's tables: its thread is left to be
 * indexed, and no range of runfs_canon keeps covering its id (an id given again, by hand or
 * after the sequence was set back, is that writer's row, not runfs's). A row put back at a
 * seq below its thread's logs (a deleted row restored, or deleted and written again in one
 * transaction) is met by no indexing from the logs' last seq on: its thread is recomputed
 * (1), 'rewrites' moves as for a delete (the middle of the logs changed), and the search
 * blocks it lands in below the indexed ones are marked (the table made here, so the
 * statement always plans). Made before the side tables (their trigger calls it) and made
 * again by the conversion to layout 3; the change feed's set-up then points the trigger at
 * runfs_foreign_insert (pg_changes.c), which does the same and numbers the runs, in one
 * call, and makes it again wherever its body is not this build's. */
static const char pg_schema_note_sql[] =
    "CREATE TABLE IF NOT EXISTS runfs_search_dirty (blk BIGINT PRIMARY KEY);\n"
    "CREATE OR REPLACE FUNCTION runfs_note_insert() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    "  IF coalesce(current_setting('runfs.writer', true), '') = '1' THEN RETURN NULL; END IF;\n"
    "  WITH u AS (INSERT INTO runfs_thread (thread_id, dirty) SELECT DISTINCT thread_id, 2\n"
    "    FROM new_rows ON CONFLICT (thread_id) DO UPDATE SET dirty = CASE WHEN\n"
    "    runfs_thread.dirty = 1 OR EXISTS (SELECT 1 FROM new_rows n WHERE n.thread_id =\n"
    "    runfs_thread.thread_id AND n.seq <= runfs_thread.last_seq) THEN 1 ELSE 2 END\n"
    "    RETURNING thread_id, last_seq)\n"
    "  UPDATE runfs_meta SET value = value + 1 WHERE key = 'rewrites' AND EXISTS (SELECT 1\n"
    "    FROM u JOIN new_rows n ON n.thread_id = u.thread_id AND n.seq <= u.last_seq);\n"
    "  WITH c AS (DELETE FROM runfs_canon c WHERE c.hi >= (SELECT min(id) FROM new_rows)\n"
    "    AND EXISTS (SELECT 1 FROM new_rows n WHERE n.id BETWEEN c.lo AND c.hi))\n"
    "  INSERT INTO runfs_search_dirty (blk) SELECT DISTINCT (id - 1) / 64 FROM new_rows\n"
    "    WHERE id <= (SELECT value FROM runfs_meta WHERE key = 'search_upto')\n"
    "    ON CONFLICT DO NOTHING;\n"
    "  RETURN NULL;\n"
    "END $$;\n";

static const char pg_schema_side_sql[] =
    "CREATE TABLE runfs_thread (\n"
    "  thread_key BIGSERIAL PRIMARY KEY,\n"
    "  thread_id TEXT NOT NULL UNIQUE,\n"
    "  mixed INTEGER NOT NULL DEFAULT 0,\n"
    "  size BIGINT NOT NULL DEFAULT 0,\n"
    "  count BIGINT NOT NULL DEFAULT 0,\n"
    "  messages BIGINT NOT NULL DEFAULT 0,\n"
    "  last_seq BIGINT NOT NULL DEFAULT 0,\n"
    "  ctime_ns BIGINT NOT NULL DEFAULT 0,\n"
    "  mtime_ns BIGINT NOT NULL DEFAULT 0,\n"
    "  mark_off BIGINT NOT NULL DEFAULT -1,\n"
    "  dirty INTEGER NOT NULL DEFAULT 0\n"
    ");\n"
    "CREATE INDEX runfs_thread_dirty ON runfs_thread (thread_key) WHERE dirty <> 0;\n"
    "CREATE TABLE runfs_run (\n"
    "  run_key BIGSERIAL PRIMARY KEY,\n"
    "  thread_key BIGINT NOT NULL,\n"
    "  run_id TEXT NOT NULL,\n"
    "  mixed INTEGER NOT NULL DEFAULT 0,\n"
    "  size BIGINT NOT NULL DEFAULT 0,\n"
    "  count BIGINT NOT NULL DEFAULT 0,\n"
    "  messages BIGINT NOT NULL DEFAULT 0,\n"
    "  last_seq BIGINT NOT NULL DEFAULT 0,\n"
    "  ctime_ns BIGINT NOT NULL DEFAULT 0,\n"
    "  mtime_ns BIGINT NOT NULL DEFAULT 0,\n"
    "  mark_off BIGINT NOT NULL DEFAULT -1,\n"
    "  UNIQUE (thread_key, run_id)\n"
    ");\n"
    "CREATE TABLE runfs_owner (\n"
    "  thread_key BIGINT NOT NULL,\n"
    "  run_key BIGINT NOT NULL,\n"
    "  owner TEXT NOT NULL,\n"
    "  PRIMARY KEY (thread_key, run_key, owner)\n"
    ");\n"
    "CREATE TABLE runfs_mark (\n"
    "  log_key BIGINT NOT NULL,\n"
    "  off BIGINT NOT NULL,\n"
    "  seq BIGINT NOT NULL,\n"
    "  PRIMARY KEY (log_key, off)\n"
    ");\n"
    /* Rows other writers (DeerFlow) add or delete leave their thread to be indexed (2: rows
     * added above the indexed ones) or recomputed (1: rows deleted): runfs_note_insert
     * (pg_schema_note_sql) and runfs_note_delete. runfs's own sessions set runfs.writer and
     * index what they write in the same transaction. The functions run as their owner
     * (runfs's role), so DeerFlow's role needs no rights on runfs's tables. */
    "CREATE OR REPLACE FUNCTION runfs_note_delete() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    "  IF coalesce(current_setting('runfs.writer', true), '') = '1' THEN RETURN NULL; END IF;\n"
    "  UPDATE runfs_thread SET dirty = 1 WHERE thread_id IN (SELECT thread_id FROM old_rows);\n"
    "  RETURN NULL;\n"
    "END $$;\n"
    "CREATE OR REPLACE TRIGGER runfs_note_insert AFTER INSERT ON run_events\n"
    "  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION runfs_note_insert();\n"
    "CREATE OR REPLACE TRIGGER runfs_note_delete AFTER DELETE ON run_events\n"
    "  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION runfs_note_delete();\n"
    /* Threads already in the table (a DeerFlow database mounted the first time) are
     * indexed at their first use; found by index probes, a thread at a time. */
    "WITH RECURSIVE d(id) AS (SELECT min(thread_id) FROM run_events UNION ALL SELECT (SELECT\n"
    "  min(thread_id) FROM run_events WHERE thread_id > d.id) FROM d WHERE d.id IS NOT NULL)\n"
    "INSERT INTO runfs_thread (thread_id, dirty) SELECT id, 1 FROM d WHERE id IS NOT NULL;\n"
    "CREATE TABLE runfs_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);\n"
    "INSERT INTO runfs_meta (key, value) VALUES ('layout', 2);\n";

/* Singletons and seals are each owner's own (owner: the rows' user_id, '' for rows without
 * one): types written through put_if_absent, names reserved by an exclusive create that has
 * not committed yet, and seals. Created with the side tables, or by the migration. */
static const char pg_schema_owned_sql[] =
    "CREATE TABLE runfs_once (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, event_type TEXT NOT NULL,\n"
    "  owner TEXT NOT NULL DEFAULT '',\n"
    "  PRIMARY KEY (thread_id, run_id, event_type, owner)\n"
    ");\n"
    /* A reservation names its holder: host, pid and start time of the process, and the
     * database session it reserved on (alive in pg_stat_activity while the mount is). */
    "CREATE TABLE runfs_hold (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, event_type TEXT NOT NULL,\n"
    "  owner TEXT NOT NULL DEFAULT '',\n"
    "  host TEXT NOT NULL, pid BIGINT NOT NULL, started BIGINT NOT NULL DEFAULT 0,\n"
    "  backend_pid INTEGER NOT NULL, backend_start TIMESTAMPTZ,\n"
    "  PRIMARY KEY (thread_id, run_id, event_type, owner)\n"
    ");\n"
    "CREATE TABLE runfs_seal (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',\n"
    "  state TEXT NOT NULL, upper_seq BIGINT NOT NULL, event_count BIGINT NOT NULL,\n"
    "  terminal_seq BIGINT, digest TEXT NOT NULL, error TEXT, sealed_at TEXT NOT NULL,\n"
    "  PRIMARY KEY (thread_id, run_id, owner)\n"
    ");\n";

/* What a seal keeps beside its row: its Merkle root, its signed note (NULL: unsigned) and
 * the tree its proofs read (merkle.h). It goes with its seal (a trigger, not a foreign key:
 * the conversion of layout 1 renames and drops runfs_seal), and counts only for the seal of
 * its sealed_at. Made where missing. */
static const char pg_schema_tree_sql[] =
    "CREATE TABLE IF NOT EXISTS runfs_seal_tree (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',\n"
    "  sealed_at TEXT NOT NULL, root TEXT NOT NULL, note TEXT, seqs BYTEA NOT NULL,\n"
    "  nodes BYTEA NOT NULL, leaves TEXT NOT NULL DEFAULT 'plain',\n"
    "  PRIMARY KEY (thread_id, run_id, owner)\n"
    ");\n"
    "CREATE OR REPLACE FUNCTION runfs_seal_tree_drop() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    "  DELETE FROM runfs_seal_tree t USING old_rows o WHERE t.thread_id = o.thread_id\n"
    "    AND t.run_id = o.run_id AND t.owner = o.owner;\n"
    "  RETURN NULL;\n"
    "END $$;\n"
    "CREATE OR REPLACE TRIGGER runfs_seal_tree_drop AFTER DELETE ON runfs_seal\n"
    "  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION\n"
    "  runfs_seal_tree_drop();\n";

/* Layout 4: a salted seal's salt of each event it covers (merkle.h), beside the row, going
 * with its seal; runfs_seal_tree says whether a seal's leaves are salted. */
static const char pg_schema_salt_sql[] =
    "CREATE TABLE IF NOT EXISTS runfs_seal_salt (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',\n"
    "  seq BIGINT NOT NULL, salt BYTEA NOT NULL,\n"
    "  PRIMARY KEY (thread_id, run_id, owner, seq)\n"
    ");\n"
    "ALTER TABLE runfs_seal_tree ADD COLUMN IF NOT EXISTS leaves TEXT NOT NULL DEFAULT 'plain';\n"
    "CREATE OR REPLACE FUNCTION runfs_seal_salt_drop() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    "  DELETE FROM runfs_seal_salt t USING old_rows o WHERE t.thread_id = o.thread_id\n"
    "    AND t.run_id = o.run_id AND t.owner = o.owner;\n"
    "  RETURN NULL;\n"
    "END $$;\n"
    "CREATE OR REPLACE TRIGGER runfs_seal_salt_drop AFTER DELETE ON runfs_seal\n"
    "  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION\n"
    "  runfs_seal_salt_drop();\n"
    /* The redactions of events (DESIGN "Forgetting"), sqlite/schema.sql.h's. */
    "CREATE TABLE IF NOT EXISTS runfs_redaction (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, seq BIGINT NOT NULL,\n"
    "  owner TEXT NOT NULL DEFAULT '', at TEXT NOT NULL, paths TEXT NOT NULL,\n"
    "  reason TEXT NOT NULL, leaf TEXT, line_hash TEXT NOT NULL, note TEXT,\n"
    "  PRIMARY KEY (thread_id, run_id, seq, at)\n"
    ");\n"
    /* Runs removed by retention, sqlite/schema.sql.h's. */
    "CREATE TABLE IF NOT EXISTS runfs_expired (\n"
    "  id BIGSERIAL PRIMARY KEY, thread_id TEXT NOT NULL, run_id TEXT NOT NULL,\n"
    "  owner TEXT NOT NULL DEFAULT '', upper_seq BIGINT NOT NULL, events BIGINT NOT NULL,\n"
    "  digest TEXT, root TEXT, sealed_at TEXT, expired_at TEXT NOT NULL, policy TEXT NOT NULL,\n"
    "  note TEXT, change BIGINT NOT NULL DEFAULT 0\n"
    ");\n"
    /* A run's step data for diffs, sqlite/schema.sql.h's (a store of an earlier build gets it
     * at a mount's first diff). */
    "CREATE TABLE IF NOT EXISTS runfs_steps (thread_id TEXT NOT NULL, run_id TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (thread_id, run_id, kind));\n"
    "UPDATE runfs_meta SET value = 4 WHERE key = 'layout';\n";

/* The side tables' layout this build writes; a store with a newer one is refused, an older
 * one converted at a read-write open. A read-only open reads layout PG_LAYOUT_READ too
 * (without runfs_canon, layout 2: every row is rendered; without salts, layout 3: every
 * seal's leaves are plain). */
#define PG_LAYOUT 4
#define PG_LAYOUT_CANON 3
#define PG_LAYOUT_READ 2

/* Layout 1 keyed singletons, reservations and seals by (thread, run) alone: one owner's
 * blocked another's. The old tables step aside, pg_schema_owned_sql makes the new ones,
 * and pg_schema_migrate_copy_sql moves the rows over (a singleton's owner from its rows, a
 * seal's from its user_id), all in the set-up transaction. */
static const char pg_schema_migrate_sql[] = "ALTER TABLE runfs_once RENAME TO runfs_once_v1;\n"
                                            "ALTER TABLE runfs_hold RENAME TO runfs_hold_v1;\n"
                                            "ALTER TABLE runfs_seal RENAME TO runfs_seal_v1;\n"
                                            "ALTER TABLE runfs_once_v1 DROP CONSTRAINT "
                                            "runfs_once_pkey;\n"
                                            "ALTER TABLE runfs_hold_v1 DROP CONSTRAINT "
                                            "runfs_hold_pkey;\n"
                                            "ALTER TABLE runfs_seal_v1 DROP CONSTRAINT "
                                            "runfs_seal_pkey;\n";
static const char pg_schema_migrate_copy_sql[] =
    "INSERT INTO runfs_once (thread_id, run_id, event_type, owner)\n"
    "  SELECT o.thread_id, o.run_id, o.event_type, coalesce(e.user_id, '') FROM runfs_once_v1 o\n"
    "  JOIN run_events e ON e.thread_id = o.thread_id AND e.run_id = o.run_id\n"
    "  AND e.event_type = o.event_type GROUP BY 1, 2, 3, 4;\n"
    "INSERT INTO runfs_hold (thread_id, run_id, event_type, owner, host, pid, started,\n"
    "  backend_pid, backend_start)\n"
    "  SELECT thread_id, run_id, event_type, '', host, pid, started, backend_pid, backend_start\n"
    "  FROM runfs_hold_v1;\n"
    "INSERT INTO runfs_seal (thread_id, run_id, owner, state, upper_seq, event_count,\n"
    "  terminal_seq, digest, error, sealed_at)\n"
    "  SELECT thread_id, run_id, coalesce(user_id, ''), state, upper_seq, event_count,\n"
    "  terminal_seq, digest, error, sealed_at FROM runfs_seal_v1;\n"
    "DROP TABLE runfs_once_v1;\n"
    "DROP TABLE runfs_hold_v1;\n"
    "DROP TABLE runfs_seal_v1;\n"
    "UPDATE runfs_meta SET value = 2 WHERE key = 'layout';\n";

/* A run's run.terminal found by an index probe. Not UNIQUE: runfs adds no constraint to
 * DeerFlow's table; a second terminal is refused inside runfs's own write transaction,
 * under DeerFlow's advisory lock on the thread (pg_put), as DeerFlow's own code does. An
 * index on run_events needs its owner's rights, which the README's grants do not give: it is
 * made only by a role that has them (a terminal is found by DeerFlow's ix_events_run
 * without it), and so is an older build's unique index dropped. */
static const char pg_schema_terminal_sql[] =
    "CREATE INDEX IF NOT EXISTS runfs_ix_terminal ON run_events "
    "(thread_id, run_id, event_type) WHERE event_type = 'run.terminal'";
static const char pg_schema_uq_drop_sql[] = "DROP INDEX runfs_uq_terminal";

/* Rows changed in place or deleted, by anyone (DeerFlow, psql, another mount): the threads
 * the rows were and are in are recomputed from their rows at their next use, and
 * 'rewrites' moves, so whatever a mount or a reader kept of the middle of a log (the
 * kernel's pages, a copy of the logs) is dropped (runfs's own deletes count too: another
 * mount kept pages of those logs). runfs_rewritten keeps, per thread, the count its last
 * rewrite made (sqlite/schema.sql.h says why a table of its own): the count only grows, so a
 * thread's number never comes back to one a reader saw. Made at a read-write open that
 * finds runfs_note_update or runfs_rewritten missing (the functions are made again). */
static const char pg_schema_rewrites_sql[] =
    "INSERT INTO runfs_meta (key, value) VALUES ('rewrites', 0) ON CONFLICT (key) DO NOTHING;\n"
    "CREATE TABLE IF NOT EXISTS runfs_rewritten (thread_id TEXT PRIMARY KEY, at BIGINT NOT NULL);\n"
    "CREATE OR REPLACE FUNCTION runfs_note_update() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    "  INSERT INTO runfs_thread (thread_id, dirty) SELECT thread_id, 1 FROM\n"
    "    (SELECT thread_id FROM old_rows UNION SELECT thread_id FROM new_rows) u\n"
    "    ON CONFLICT (thread_id) DO UPDATE SET dirty = 1;\n"
    "  WITH w AS (UPDATE runfs_meta SET value = value + 1 WHERE key = 'rewrites' RETURNING value)\n"
    "  INSERT INTO runfs_rewritten (thread_id, at) SELECT u.thread_id, w.value FROM\n"
    "    (SELECT thread_id FROM old_rows UNION SELECT thread_id FROM new_rows) u, w\n"
    "    ON CONFLICT (thread_id) DO UPDATE SET at = excluded.at;\n"
    "  RETURN NULL;\n"
    "END $$;\n"
    "CREATE OR REPLACE TRIGGER runfs_note_update AFTER UPDATE ON run_events\n"
    "  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows\n"
    "  FOR EACH STATEMENT EXECUTE FUNCTION runfs_note_update();\n"
    "CREATE OR REPLACE FUNCTION runfs_note_delete() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    "  WITH w AS (UPDATE runfs_meta SET value = value + 1 WHERE key = 'rewrites' RETURNING value)\n"
    "  INSERT INTO runfs_rewritten (thread_id, at) SELECT DISTINCT o.thread_id, w.value FROM\n"
    "    old_rows o, w ON CONFLICT (thread_id) DO UPDATE SET at = excluded.at;\n"
    "  IF coalesce(current_setting('runfs.writer', true), '') = '1' THEN RETURN NULL; END IF;\n"
    "  UPDATE runfs_thread SET dirty = 1 WHERE thread_id IN (SELECT thread_id FROM old_rows);\n"
    "  RETURN NULL;\n"
    "END $$;\n";

/* Layout 3: the rows runfs's put and import stored, as run_events id ranges lo..hi
 * (sqlite/schema.sql.h's runfs_canon): their columns are canonical already, so a read
 * copies them instead of rendering them again. A range holds only ids the statements that
 * noted it got (islands of ids, extended only by the id right above: a row another session
 * took meanwhile splits it). SERIAL ids are not handed out again; one given by hand or after
 * the sequence was set back is another writer's (runfs_note_insert drops the ranges around
 * it), and a row changed in place drops the ranges around its old and new ids. Rows already
 * in a converted store are not in any range: they are rendered as before. */
static const char pg_schema_canon_sql[] =
    "CREATE TABLE IF NOT EXISTS runfs_canon (hi BIGINT PRIMARY KEY, lo BIGINT NOT NULL);\n"
    "CREATE OR REPLACE FUNCTION runfs_canon_update() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    "  DELETE FROM runfs_canon c USING (SELECT id FROM old_rows UNION SELECT id FROM new_rows) u\n"
    "    WHERE u.id BETWEEN c.lo AND c.hi;\n"
    "  RETURN NULL;\n"
    "END $$;\n"
    "CREATE OR REPLACE TRIGGER runfs_canon_update AFTER UPDATE ON run_events\n"
    "  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows\n"
    "  FOR EACH STATEMENT EXECUTE FUNCTION runfs_canon_update();\n"
    "UPDATE runfs_meta SET value = 3 WHERE key = 'layout';\n";
