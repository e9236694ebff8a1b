/* schema.sql.h — the SQLite schema: DeerFlow's tables as DeerFlow creates them, then the side
 * tables runfs keeps beside them (all rebuildable from run_events). Included by sqlite.c. */
/* The thread of t (an expression) was rewritten just now: runfs_rewritten takes the
 * 'rewrites' count the statement before made. No statement meets a constraint, whatever
 * conflict clause the statement that fired the trigger has (rs_schema_stale_triggers_sql). */
#define REWRITTEN(t) \
    "  INSERT INTO runfs_rewritten (thread_id, at) SELECT " t ", 0 WHERE NOT EXISTS (SELECT 1\n" \
    "    FROM runfs_rewritten WHERE thread_id = " t ");\n" \
    "  UPDATE runfs_rewritten SET at = (SELECT value FROM runfs_meta WHERE key = 'rewrites')\n" \
    "    WHERE thread_id = " t ";\n"

static const char rs_schema_sql[] =
    "CREATE TABLE IF NOT EXISTS run_events (\n"
    "  id INTEGER NOT NULL,\n"
    "  thread_id VARCHAR(64) NOT NULL,\n"
    "  run_id VARCHAR(64) NOT NULL,\n"
    "  user_id VARCHAR(64),\n"
    "  event_type VARCHAR(32) NOT NULL,\n"
    "  category VARCHAR(16) NOT NULL,\n"
    "  content TEXT NOT NULL,\n"
    "  event_metadata JSON NOT NULL,\n"
    "  seq INTEGER NOT NULL,\n"
    "  created_at DATETIME NOT NULL,\n"
    "  PRIMARY KEY (id),\n"
    "  CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq)\n"
    ");\n"
    "CREATE INDEX IF NOT EXISTS ix_events_run ON run_events (thread_id, run_id, seq);\n"
    "CREATE INDEX IF NOT EXISTS ix_events_thread_cat_seq ON run_events (thread_id, category, seq);\n"
    "CREATE INDEX IF NOT EXISTS ix_run_events_user_id ON run_events (user_id);\n"
    /* runfs side tables. A thread's and a run's byte log: per line its offsets and length,
     * per thread/run the totals, so stat is O(1) and a seek is one index probe; msg_size is
     * the bytes of its messages.jsonl. A run also keeps the seq of its first run.terminal
     * (receipt.json) and, of its first ten workspace_changes, their number and the last's
     * seq (workspace-changes.json): those documents read one row, not the run. */
    "CREATE TABLE IF NOT EXISTS runfs_thread (\n"
    "  thread_key INTEGER PRIMARY KEY,\n"
    "  thread_id TEXT NOT NULL UNIQUE,\n"
    "  mixed INTEGER NOT NULL DEFAULT 0,\n"
    "  size INTEGER NOT NULL DEFAULT 0,\n"
    "  count INTEGER NOT NULL DEFAULT 0,\n"
    "  messages INTEGER NOT NULL DEFAULT 0,\n"
    "  last_seq INTEGER NOT NULL DEFAULT 0,\n"
    "  ctime_ns INTEGER NOT NULL DEFAULT 0,\n"
    "  mtime_ns INTEGER NOT NULL DEFAULT 0,\n"
    "  mark_off INTEGER NOT NULL DEFAULT -1,\n"
    "  dirty INTEGER NOT NULL DEFAULT 0,\n"
    "  msg_size INTEGER NOT NULL DEFAULT 0\n"
    ");\n"
    "CREATE INDEX IF NOT EXISTS runfs_thread_dirty ON runfs_thread (thread_key) WHERE dirty;\n"
    "CREATE TABLE IF NOT EXISTS runfs_run (\n"
    "  run_key INTEGER PRIMARY KEY,\n"
    "  thread_key INTEGER NOT NULL,\n"
    "  run_id TEXT NOT NULL,\n"
    "  mixed INTEGER NOT NULL DEFAULT 0,\n"
    "  size INTEGER NOT NULL DEFAULT 0,\n"
    "  count INTEGER NOT NULL DEFAULT 0,\n"
    "  messages INTEGER NOT NULL DEFAULT 0,\n"
    "  last_seq INTEGER NOT NULL DEFAULT 0,\n"
    "  ctime_ns INTEGER NOT NULL DEFAULT 0,\n"
    "  mtime_ns INTEGER NOT NULL DEFAULT 0,\n"
    "  mark_off INTEGER NOT NULL DEFAULT -1,\n"
    "  msg_size INTEGER NOT NULL DEFAULT 0,\n"
    "  terminal_seq INTEGER NOT NULL DEFAULT 0,\n"
    "  ws_count INTEGER NOT NULL DEFAULT 0,\n"
    "  ws_seq INTEGER NOT NULL DEFAULT 0,\n"
    "  change INTEGER NOT NULL DEFAULT 0,\n"
    "  UNIQUE (thread_key, run_id)\n"
    ");\n"
    /* Owners present in a thread (run_key 0) or run; '' stands for rows without an owner. */
    "CREATE TABLE IF NOT EXISTS runfs_owner (\n"
    "  thread_key INTEGER NOT NULL,\n"
    "  run_key INTEGER NOT NULL,\n"
    "  user TEXT NOT NULL,\n"
    "  PRIMARY KEY (thread_key, run_key, user)\n"
    ") WITHOUT ROWID;\n"
    /* Offsets: a mark every 16 KiB or so of a log says which line starts at which byte
     * (log_key: a run_key, or minus a thread_key), so a seek reads at most that much. */
    "CREATE TABLE IF NOT EXISTS runfs_mark (\n"
    "  log_key INTEGER NOT NULL,\n"
    "  off INTEGER NOT NULL,\n"
    "  seq INTEGER NOT NULL,\n"
    "  PRIMARY KEY (log_key, off)\n"
    ") WITHOUT ROWID;\n"
    /* layout: the side tables' version; indexed_id: run_events rows up to this id are in
     * the logs of their thread when it has logs (rows above it were written by someone else
     * and get indexed next). A thread without logs is indexed whole at its first use, so a
     * DeerFlow database starts with every row below the mark and nothing indexed. */
    "CREATE TABLE IF NOT EXISTS runfs_meta (\n"
    "  key TEXT PRIMARY KEY,\n"
    "  value INTEGER NOT NULL\n"
    ") WITHOUT ROWID;\n"
    "INSERT OR IGNORE INTO runfs_meta (key, value) VALUES ('indexed_id',\n"
    "  (SELECT coalesce(max(id), 0) FROM run_events));\n"
    /* canon_lo..canon_hi: the top range of runfs_canon's (below), kept here instead, beside
     * indexed_id: an append moves both, and rows of one small table share a page, so the
     * commit writes one page for both (canon_lo 0: no top range). */
    "INSERT OR IGNORE INTO runfs_meta (key, value) VALUES ('canon_lo', 0), ('canon_hi', 0);\n"
    /* Rows deleted by any writer (DeerFlow too: the trigger lives in the file) leave their
     * thread to be recomputed; an id freed at the top may be handed out again. */
    "CREATE TRIGGER IF NOT EXISTS runfs_forget_deleted AFTER DELETE ON run_events BEGIN\n"
    "  UPDATE runfs_thread SET dirty = 1 WHERE thread_id = old.thread_id;\n"
    "  UPDATE runfs_meta SET value = old.id - 1 WHERE key = 'indexed_id' AND value >= old.id;\n"
    "END;\n"
    /* Singletons and seals are each owner's own (owner: the rows' user_id, '' for rows
     * without one): types written through put_if_absent, names reserved by an exclusive
     * create that has not committed yet (pid and its start time: the holder, to clear after
     * a crash even when the pid was reused), and seals. */
    "CREATE TABLE IF NOT EXISTS runfs_once (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, event_type TEXT NOT NULL,\n"
    "  owner TEXT NOT NULL DEFAULT '',\n"
    "  PRIMARY KEY (thread_id, run_id, event_type, owner)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE IF NOT EXISTS runfs_hold (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, event_type TEXT NOT NULL,\n"
    "  owner TEXT NOT NULL DEFAULT '',\n"
    "  pid INTEGER NOT NULL,\n"
    "  started INTEGER NOT NULL DEFAULT 0,\n"
    "  PRIMARY KEY (thread_id, run_id, event_type, owner)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE IF NOT EXISTS runfs_seal (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',\n"
    "  state TEXT NOT NULL, upper_seq INTEGER NOT NULL, event_count INTEGER NOT NULL,\n"
    "  terminal_seq INTEGER, digest TEXT NOT NULL, error TEXT, sealed_at TEXT NOT NULL,\n"
    "  PRIMARY KEY (thread_id, run_id, owner)\n"
    ") WITHOUT ROWID;\n"
    /* What a seal keeps beside its row: its Merkle root, its signed note (NULL: unsigned)
     * and the tree its proofs read (merkle.h); it goes with its seal, and counts only for
     * the seal of its sealed_at (a row a seal left behind is never taken for a later one). */
    "CREATE TABLE IF NOT EXISTS runfs_seal_tree (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',\n"
    "  sealed_at TEXT NOT NULL, root TEXT NOT NULL, note TEXT, seqs BLOB NOT NULL,\n"
    "  nodes BLOB NOT NULL, leaves TEXT NOT NULL DEFAULT 'plain',\n"
    "  PRIMARY KEY (thread_id, run_id, owner)\n"
    ");\n"
    "CREATE TRIGGER IF NOT EXISTS runfs_seal_tree_drop AFTER DELETE ON runfs_seal BEGIN\n"
    "  DELETE FROM runfs_seal_tree WHERE thread_id = old.thread_id AND run_id = old.run_id\n"
    "    AND owner = old.owner;\n"
    "END;\n"
    /* Layout 6: a salted seal's salt of each event it covers (merkle.h), beside the row;
     * they go with their seal. */
    "CREATE TABLE IF NOT EXISTS runfs_seal_salt (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',\n"
    "  seq INTEGER NOT NULL, salt BLOB NOT NULL,\n"
    "  PRIMARY KEY (thread_id, run_id, owner, seq)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TRIGGER IF NOT EXISTS runfs_seal_salt_drop AFTER DELETE ON runfs_seal BEGIN\n"
    "  DELETE FROM runfs_seal_salt WHERE thread_id = old.thread_id AND run_id = old.run_id\n"
    "    AND owner = old.owner;\n"
    "END;\n"
    /* Layout 6: the redactions of events (DESIGN "Forgetting"): what was erased and why,
     * the leaf hash of the line as sealed and the hash of the line as redacted. */
    "CREATE TABLE IF NOT EXISTS runfs_redaction (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL,\n"
    "  owner TEXT NOT NULL DEFAULT '', at TEXT NOT NULL, paths TEXT NOT NULL,\n"
    "  reason TEXT NOT NULL, leaf TEXT, line_hash TEXT NOT NULL, note TEXT,\n"
    "  PRIMARY KEY (thread_id, run_id, seq, at)\n"
    ") WITHOUT ROWID;\n"
    /* Runs removed by retention (DESIGN "Forgetting"): what each seal said, when and why;
     * change: the tombstone's number, so the feed tells an expiry from a delete. */
    "CREATE TABLE IF NOT EXISTS runfs_expired (\n"
    "  id INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, run_id TEXT NOT NULL,\n"
    "  owner TEXT NOT NULL DEFAULT '', upper_seq INTEGER NOT NULL, events INTEGER NOT NULL,\n"
    "  digest TEXT, root TEXT, sealed_at TEXT, expired_at TEXT NOT NULL, policy TEXT NOT NULL,\n"
    "  note TEXT, change INTEGER NOT NULL DEFAULT 0\n"
    ");\n"
    /* Idempotency keys: which seq each key of a thread produced (DESIGN "Appending"). */
    "CREATE TABLE IF NOT EXISTS runfs_idem (\n"
    "  thread_id TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL,\n"
    "  PRIMARY KEY (thread_id, key)\n"
    ") WITHOUT ROWID;\n"
    /* Rows runfs's put stored, as run_events id ranges lo..hi (one per stretch of
     * transactions no other writer came between): their columns are canonical already, so
     * a read copies them instead of rendering them again. The highest range is runfs_meta's
     * canon_lo..canon_hi (layout 5), every range here lies below it. An id freed at the top
     * may be handed out again, to any writer: no range keeps covering it. Made last, so a
     * store without it gets the whole schema again (every statement IF NOT EXISTS). */
    "CREATE TABLE IF NOT EXISTS runfs_canon (\n"
    "  hi INTEGER PRIMARY KEY,\n"
    "  lo INTEGER NOT NULL\n"
    ");\n"
    "CREATE TRIGGER IF NOT EXISTS runfs_canon_top AFTER DELETE ON run_events\n"
    "  WHEN old.id > coalesce((SELECT max(id) FROM run_events), 0) BEGIN\n"
    "  DELETE FROM runfs_canon WHERE hi > coalesce((SELECT max(id) FROM run_events), 0)\n"
    "    AND lo > coalesce((SELECT max(id) FROM run_events), 0);\n"
    "  UPDATE runfs_canon SET hi = coalesce((SELECT max(id) FROM run_events), 0)\n"
    "    WHERE hi > coalesce((SELECT max(id) FROM run_events), 0);\n"
    "  UPDATE runfs_meta SET value = 0 WHERE key = 'canon_lo'\n"
    "    AND value > coalesce((SELECT max(id) FROM run_events), 0);\n"
    "  UPDATE runfs_meta SET value = coalesce((SELECT max(id) FROM run_events), 0)\n"
    "    WHERE key = 'canon_hi' AND value > coalesce((SELECT max(id) FROM run_events), 0);\n"
    "END;\n"
    /* A row deleted below the top: its id may be given again by hand (a row restored, or
     * another writer's with an id of its own), and a row at a given id other than the
     * highest meets no runfs_replace_note condition when its seq is new, so no range may
     * keep covering the freed id (it would copy the new row's columns as canonical). The
     * range holding it is split around it: the ids left in it are still runfs's own rows,
     * which the change feed's catch-up tells from another writer's by the ranges. The top
     * range's deleted highest id is runfs_canon_top's. */
    "CREATE TRIGGER IF NOT EXISTS runfs_canon_delete AFTER DELETE ON run_events BEGIN\n"
    "  INSERT INTO runfs_canon (hi, lo) SELECT old.id - 1, lo FROM runfs_canon\n"
    "    WHERE hi = (SELECT min(hi) FROM runfs_canon WHERE hi >= old.id) AND lo < old.id;\n"
    "  UPDATE runfs_canon SET lo = old.id + 1\n"
    "    WHERE hi = (SELECT min(hi) FROM runfs_canon WHERE hi >= old.id) AND lo <= old.id;\n"
    "  DELETE FROM runfs_canon WHERE hi = old.id AND lo > old.id;\n"
    "  INSERT INTO runfs_canon (hi, lo) SELECT old.id - 1, l.value FROM runfs_meta l, runfs_meta h\n"
    "    WHERE l.key = 'canon_lo' AND h.key = 'canon_hi' AND l.value > 0 AND l.value < old.id\n"
    "    AND old.id <= h.value;\n"
    "  UPDATE runfs_meta SET value = old.id + 1 WHERE key = 'canon_lo' AND value > 0\n"
    "    AND value <= old.id AND old.id <= (SELECT m.value FROM runfs_meta m WHERE m.key = 'canon_hi');\n"
    "  UPDATE runfs_meta SET value = 0 WHERE key = 'canon_lo'\n"
    "    AND value > (SELECT m.value FROM runfs_meta m WHERE m.key = 'canon_hi');\n"
    "END;\n"
    /* A row changed in place (by DeerFlow or anyone) may no longer be canonical: the range
     * around its id (old and new) goes, so it is rendered, as runfs_canon_update does on
     * PostgreSQL. */
    "CREATE TRIGGER IF NOT EXISTS runfs_canon_update AFTER UPDATE ON run_events BEGIN\n"
    "  DELETE FROM runfs_canon WHERE hi = (SELECT min(hi) FROM runfs_canon WHERE hi >= old.id)\n"
    "    AND lo <= old.id;\n"
    "  DELETE FROM runfs_canon WHERE hi = (SELECT min(hi) FROM runfs_canon WHERE hi >= new.id)\n"
    "    AND lo <= new.id;\n"
    "  UPDATE runfs_meta SET value = 0 WHERE key = 'canon_lo' AND value > 0 AND (\n"
    "    (old.id >= value AND old.id <= (SELECT value FROM runfs_meta WHERE key = 'canon_hi'))\n"
    "    OR (new.id >= value AND new.id <= (SELECT value FROM runfs_meta WHERE key = 'canon_hi')));\n"
    "END;\n"
    /* A run's step data for diffs (rs_store_steps_put): made with the other side tables, so
     * that `runfs diff`, which writes nothing a runfs writer has not set up, keeps it too. */
    "CREATE TABLE IF NOT EXISTS runfs_steps (thread_id TEXT NOT NULL, run_id TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (thread_id, run_id, kind));\n"
    /* Rows changed in place or deleted, by anyone (DeerFlow, sqlite3, another mount): the
     * threads the row was and is in are recomputed from their rows at their next use, and
     * 'rewrites' moves, so whatever a mount or a reader kept of the middle of a log (the
     * kernel's pages, a copy of the logs) is dropped. Made last: an open that finds it
     * missing runs the schema (sq_open). */
    "INSERT OR IGNORE INTO runfs_meta (key, value) VALUES ('rewrites', 0);\n"
    /* Per thread, the 'rewrites' count its last row changed in place or deleted made (a
     * thread never rewritten has no row): a reader of one thread tells a rewrite of its own
     * rows from one elsewhere. The count only grows, so a row gone and made again never
     * shows a number a reader saw before. A table of its own, not runfs_thread's column: a
     * recompute replaces runfs_thread's rows, and an append never touches this one. */
    "CREATE TABLE IF NOT EXISTS runfs_rewritten (\n"
    "  thread_id TEXT PRIMARY KEY,\n"
    "  at INTEGER NOT NULL\n"
    ") WITHOUT ROWID;\n"
    "CREATE TRIGGER IF NOT EXISTS runfs_count_deleted AFTER DELETE ON run_events BEGIN\n"
    "  UPDATE runfs_meta SET value = value + 1 WHERE key = 'rewrites';\n" REWRITTEN(
        "old.thread_id") "END;\n"
                         "CREATE TRIGGER IF NOT EXISTS runfs_forget_updated AFTER UPDATE ON run_events BEGIN\n"
                         "  UPDATE runfs_thread SET dirty = 1 WHERE thread_id IN (old.thread_id, new.thread_id);\n"
                         "  UPDATE runfs_meta SET value = value + 1 WHERE key = 'rewrites';\n" REWRITTEN(
                             "old.thread_id")
                             REWRITTEN(
                                 "new.thread_id") "END;\n"
                                                  "INSERT OR IGNORE INTO runfs_meta (key, value) VALUES ('layout', 6);\n";

/* The side tables' layout this build writes; a store with a newer one is refused. A
 * read-only open reads the byte logs of RS_SCHEMA_LOGS on as they are (layout 6 added
 * only the seals' salts). */
#define RS_SCHEMA_LAYOUT 6
#define RS_SCHEMA_LOGS 5

/* Layout 1 keyed singletons, reservations and seals by (thread, run) alone: one owner's
 * blocked another's. Before the tables of rs_schema_sql are created, the old ones step
 * aside; rs_schema_migrate_copy_sql then moves their rows over, the owner taken from the
 * seal's user_id ('' for rows without one). */
static const char rs_schema_migrate_sql[] = "ALTER TABLE runfs_once RENAME TO runfs_once_v1;\n"
                                            "ALTER TABLE runfs_hold RENAME TO runfs_hold_v1;\n"
                                            "ALTER TABLE runfs_seal RENAME TO runfs_seal_v1;\n"
                                            "DROP INDEX IF EXISTS runfs_uq_terminal;\n";
static const char rs_schema_migrate_copy_sql[] =
    "INSERT INTO runfs_once (thread_id, run_id, event_type, owner)\n"
    "  SELECT o.thread_id, o.run_id, o.event_type, coalesce(e.user_id, '') FROM runfs_once_v1 o\n"
    "  JOIN run_events e ON e.thread_id = o.thread_id AND e.run_id = o.run_id\n"
    "  AND e.event_type = o.event_type GROUP BY 1, 2, 3, 4;\n"
    "INSERT INTO runfs_hold (thread_id, run_id, event_type, owner, pid, started)\n"
    "  SELECT thread_id, run_id, event_type, '', pid, started FROM runfs_hold_v1;\n"
    "INSERT INTO runfs_seal (thread_id, run_id, owner, state, upper_seq, event_count,\n"
    "  terminal_seq, digest, error, sealed_at)\n"
    "  SELECT thread_id, run_id, coalesce(user_id, ''), state, upper_seq, event_count,\n"
    "  terminal_seq, digest, error, sealed_at FROM runfs_seal_v1;\n"
    "DROP TABLE runfs_once_v1;\n"
    "DROP TABLE runfs_hold_v1;\n"
    "DROP TABLE runfs_seal_v1;\n"
    "UPDATE runfs_meta SET value = 2 WHERE key = 'layout';\n";

/* Layout 2 kept no view sizes or document seqs: the columns come (at zero) where missing,
 * then every thread is indexed again to fill them (sq_open). */
static const char *const rs_schema_columns3[][2] = {
    {"runfs_thread", "msg_size"}, {"runfs_run", "msg_size"}, {"runfs_run", "terminal_seq"},
    {"runfs_run", "ws_count"},    {"runfs_run", "ws_seq"},
};

/* Layouts up to 4 kept the top canonical range in runfs_canon: their triggers go before
 * rs_schema_sql makes this layout's (rs_schema_canon_drop_sql), then the range moves to
 * runfs_meta (rs_schema_canon_move_sql), in the same transaction. */
static const char rs_schema_canon_drop_sql[] = "DROP TRIGGER IF EXISTS runfs_canon_top;\n"
                                               "DROP TRIGGER IF EXISTS runfs_canon_update;\n";
static const char rs_schema_canon_move_sql[] =
    "UPDATE runfs_meta SET value = coalesce((SELECT lo FROM runfs_canon ORDER BY hi DESC\n"
    "  LIMIT 1), 0) WHERE key = 'canon_lo';\n"
    "UPDATE runfs_meta SET value = coalesce((SELECT max(hi) FROM runfs_canon), 0)\n"
    "  WHERE key = 'canon_hi';\n"
    "DELETE FROM runfs_canon WHERE hi = (SELECT max(hi) FROM runfs_canon);\n";

/* run_events columns runfs reads and writes (DeerFlow's; a fork may add more). */
static const char *const rs_schema_columns[] = {
    "id",       "thread_id", "run_id",         "user_id", "event_type",
    "category", "content",   "event_metadata", "seq",     "created_at",
};

/* Newer DeerFlow's high-water table; created with migration 0034's backfill (each thread's
 * MAX(seq), found by index probes, a thread at a time: no scan of the rows). */
static const char rs_schema_hwm_sql[] =
    "CREATE TABLE run_event_thread_seq (\n"
    "  thread_id VARCHAR(64) NOT NULL,\n"
    "  seq BIGINT DEFAULT 0 NOT NULL,\n"
    "  CONSTRAINT pk_run_event_thread_seq PRIMARY KEY (thread_id)\n"
    ");\n"
    "WITH RECURSIVE d(id) AS (SELECT (SELECT min(thread_id) FROM run_events) UNION ALL\n"
    "  SELECT (SELECT min(thread_id) FROM run_events WHERE thread_id > d.id) FROM d\n"
    "  WHERE d.id IS NOT NULL)\n"
    "INSERT INTO run_event_thread_seq (thread_id, seq)\n"
    "  SELECT id, (SELECT MAX(seq) FROM run_events WHERE thread_id = d.id) FROM d\n"
    "  WHERE id IS NOT NULL;\n";

/* A run's run.terminal found by an index probe (transcript.md asks for each run's, a
 * singleton's put looks for it), not a walk through the run's rows. Not UNIQUE: runfs adds
 * no constraint to DeerFlow's table; a second terminal is refused inside runfs's own write
 * transaction, under the write lock (sq_put), as DeerFlow's own code does. An older build's
 * unique index goes. */
static const char rs_schema_terminal_sql[] =
    "DROP INDEX IF EXISTS runfs_uq_terminal;\n"
    "CREATE INDEX IF NOT EXISTS runfs_ix_terminal ON run_events "
    "(thread_id, run_id, event_type) WHERE event_type = 'run.terminal';\n";

/* The change runfs's appends gave run t.run_id of thread t.thread_id (0: none). A run that
 * loses rows keeps it in runfs_change: its runfs_run row goes once it has none left, and
 * with it the highest number given (the next one would be that number again). */
#define RUN_CHANGE(t) \
    "coalesce((SELECT r.change FROM runfs_run r JOIN runfs_thread t ON t.thread_key = " \
    "r.thread_key WHERE t.thread_id = " t ".thread_id AND r.run_id = " t ".run_id), 0)"

/* The rows a row being inserted meets (e: run_events), which REPLACE deletes. */
#define REPLACED "(e.id = new.id OR (e.thread_id = new.thread_id AND e.seq = new.seq))"

/* The change feed (DESIGN "The change feed"), layout 4. A run's latest change number is the
 * larger of two: runfs_run.change, which runfs's own appends set in the UPDATE of the run's
 * totals they make anyway (no statement added to an append), and runfs_change's, given to
 * what happens otherwise: rows others add (found above indexed_id by the catch-up), seals,
 * imports, runs that lost rows (a tombstone when none is left) or had rows changed in place.
 * runfs_change also keeps the owner of the run's rows ('' for none, NULL for several), and
 * pending: rows were deleted or changed in place (by anyone: the triggers live in the file),
 * numbered again at the next catch-up (a tombstone when it had a number, from either table);
 * hi_id the highest run_events id it was numbered for (a run whose rows above indexed_id
 * all lie at or below it was numbered for them already; runfs's own rows, in runfs_canon,
 * are not another writer's). changes_init: the runs a store held before the table came are numbered at the
 * first read of the feed (none to number in a store made empty: numbered from the start). Made after rs_schema_sql, checked by its last trigger. */
static const char rs_schema_changes_sql[] =
    "CREATE TABLE IF NOT EXISTS runfs_change (\n"
    "  thread_id TEXT NOT NULL, run_id TEXT NOT NULL,\n"
    "  change INTEGER NOT NULL, owner TEXT, hi_id INTEGER NOT NULL DEFAULT 0,\n"
    "  deleted INTEGER NOT NULL DEFAULT 0, pending INTEGER NOT NULL DEFAULT 0,\n"
    "  PRIMARY KEY (thread_id, run_id)\n"
    ") WITHOUT ROWID;\n"
    "CREATE INDEX IF NOT EXISTS runfs_change_order ON runfs_change (change);\n"
    "CREATE INDEX IF NOT EXISTS runfs_run_change ON runfs_run (change);\n"
    "CREATE INDEX IF NOT EXISTS runfs_change_pending ON runfs_change (thread_id, run_id)\n"
    "  WHERE pending;\n"
    "INSERT OR IGNORE INTO runfs_meta (key, value)\n"
    "  SELECT 'changes_init', NOT EXISTS (SELECT 1 FROM run_events);\n"
    "CREATE TRIGGER IF NOT EXISTS runfs_change_delete AFTER DELETE ON run_events BEGIN\n"
    "  INSERT INTO runfs_change (thread_id, run_id, change, owner, pending)\n"
    "    SELECT old.thread_id, old.run_id, coalesce((SELECT r.change FROM runfs_run r JOIN\n"
    "    runfs_thread t ON t.thread_key = r.thread_key WHERE t.thread_id = old.thread_id\n"
    "    AND r.run_id = old.run_id), 0), coalesce(old.user_id, ''), 1\n"
    "    WHERE NOT EXISTS (SELECT 1 FROM runfs_change WHERE thread_id = old.thread_id\n"
    "    AND run_id = old.run_id);\n"
    "  UPDATE runfs_change SET pending = 1, change = max(change, " RUN_CHANGE(
        "old") ")\n"
               "    WHERE thread_id = old.thread_id AND run_id = old.run_id;\n"
               "END;\n"
               "CREATE TRIGGER IF NOT EXISTS runfs_change_update AFTER UPDATE ON run_events BEGIN\n"
               "  INSERT INTO runfs_change (thread_id, run_id, change, pending)\n"
               "    SELECT old.thread_id, old.run_id, 0, 1 WHERE NOT EXISTS (SELECT 1 FROM runfs_change\n"
               "    WHERE thread_id = old.thread_id AND run_id = old.run_id);\n"
               "  INSERT INTO runfs_change (thread_id, run_id, change, pending)\n"
               "    SELECT new.thread_id, new.run_id, 0, 1 WHERE NOT EXISTS (SELECT 1 FROM runfs_change\n"
               "    WHERE thread_id = new.thread_id AND run_id = new.run_id);\n"
               "  UPDATE runfs_change SET pending = 1, change = max(change, " RUN_CHANGE(
                   "old") ")\n"
                          "    WHERE thread_id = old.thread_id AND run_id = old.run_id;\n"
                          "  UPDATE runfs_change SET pending = 1, change = max(change, " RUN_CHANGE(
                              "new") ")\n"
                                     "    WHERE thread_id = new.thread_id AND run_id = new.run_id;\n"
                                     "END;\n"
                                     /* REPLACE (INSERT OR REPLACE, or an UPSERT's fallback) deletes the rows a new one meets
     * on id or (thread_id, seq) without firing a delete trigger (unless recursive_triggers
     * is on), so what the delete triggers do for such a row is done here, before the
     * insert: its thread recomputed, its id range no longer canonical, the indexed mark below
     * it (the row that takes its place is another writer's), its run numbered again. The
     * insert may still fail or be ignored: that costs a recompute, never a wrong byte. The
     * search index's blocks of those rows are marked here too (its table made here, so one
     * trigger serves: every insert pays for one; an insert that gives no id skips a probe).
     * A row put back below what was indexed (a deleted row restored with its old id, or at a
     * seq below its thread's logs: deleted and written again in one transaction) is met by
     * no catch-up, which indexes ids above indexed_id and seqs above a log's last, so the
     * same trigger takes the new row as the delete triggers take a deleted one: its thread
     * recomputed, its id no longer canonical, its search block marked, its run numbered
     * again. An append (no id given: new.id is -1 here; a seq above the thread's logs) meets
     * none of it: one probe of runfs_thread is what it adds to an insert. That work is a
     * trigger of its own, on runfs_replace_q, which runfs_replace_note starts (a row in, gone
     * at the work's end) only when its condition holds: SQLite tests a trigger's WHEN inside
     * the trigger's program, whose frame (every register and cursor of its body) it allocates
     * and clears for each insert, so the long body stays out of an append's path. */
                                     "CREATE TABLE IF NOT EXISTS runfs_search_dirty (blk INTEGER PRIMARY KEY);\n"
                                     "CREATE TABLE IF NOT EXISTS runfs_replace_q (q INTEGER PRIMARY KEY, id INTEGER,\n"
                                     "  thread_id TEXT, run_id TEXT, user_id TEXT, seq INTEGER);\n"
                                     "CREATE TRIGGER IF NOT EXISTS runfs_replace_work AFTER INSERT ON runfs_replace_q BEGIN\n"
                                     "  UPDATE runfs_thread SET dirty = 1 WHERE thread_id IN (SELECT e.thread_id FROM\n"
                                     "    run_events e WHERE " REPLACED ");\n"
                                     "  UPDATE runfs_meta SET value = value + 1 WHERE key = 'rewrites';\n"
                                     "  INSERT INTO runfs_rewritten (thread_id, at) SELECT t, 0 FROM (SELECT e.thread_id AS t\n"
                                     "    FROM run_events e WHERE " REPLACED
                                     " UNION SELECT new.thread_id)\n"
                                     "    WHERE NOT EXISTS (SELECT 1 FROM runfs_rewritten r WHERE r.thread_id = t);\n"
                                     "  UPDATE runfs_rewritten SET at = (SELECT value FROM runfs_meta WHERE key = 'rewrites')\n"
                                     "    WHERE thread_id = new.thread_id OR thread_id IN (SELECT e.thread_id\n"
                                     "    FROM run_events e WHERE " REPLACED ");\n"
                                     "  UPDATE runfs_meta SET value = (SELECT min(e.id) - 1 FROM run_events e\n"
                                     "    WHERE " REPLACED
                                     ") WHERE key = 'indexed_id' AND value > (SELECT min(e.id) - 1\n"
                                     "    FROM run_events e WHERE " REPLACED ");\n"
                                     "  DELETE FROM runfs_canon WHERE EXISTS (SELECT 1 FROM run_events e\n"
                                     "    WHERE " REPLACED
                                     " AND e.id BETWEEN runfs_canon.lo AND runfs_canon.hi);\n"
                                     "  UPDATE runfs_meta SET value = 0 WHERE key = 'canon_lo' AND value > 0 AND EXISTS (\n"
                                     "    SELECT 1 FROM run_events e WHERE " REPLACED
                                     " AND e.id >= runfs_meta.value\n"
                                     "    AND e.id <= (SELECT m.value FROM runfs_meta m WHERE m.key = 'canon_hi'));\n"
                                     "  INSERT INTO runfs_change (thread_id, run_id, change, owner, pending)\n"
                                     "    SELECT e.thread_id, e.run_id, coalesce((SELECT r.change FROM runfs_run r JOIN\n"
                                     "    runfs_thread t ON t.thread_key = r.thread_key WHERE t.thread_id = e.thread_id\n"
                                     "    AND r.run_id = e.run_id), 0), min(coalesce(e.user_id, '')), 1 FROM run_events e\n"
                                     "    WHERE " REPLACED
                                     " AND NOT EXISTS (SELECT 1 FROM runfs_change c\n"
                                     "    WHERE c.thread_id = e.thread_id AND c.run_id = e.run_id)\n"
                                     "    GROUP BY e.thread_id, e.run_id;\n"
                                     "  UPDATE runfs_change SET pending = 1, change = max(change, " RUN_CHANGE(
                                         "runfs_change") ")\n"
                                                         "    WHERE EXISTS (SELECT 1 FROM run_events e WHERE " REPLACED
                                                         "\n"
                                                         "    AND e.thread_id = runfs_change.thread_id AND e.run_id = runfs_change.run_id);\n"
                                                         "  INSERT INTO runfs_search_dirty (blk) SELECT DISTINCT (e.id - 1) / 64 FROM run_events e\n"
                                                         "    WHERE " REPLACED
                                                         " AND NOT EXISTS (SELECT 1 FROM runfs_search_dirty d\n"
                                                         "    WHERE d.blk = (e.id - 1) / 64);\n"
                                                         "  UPDATE runfs_thread SET dirty = 1 WHERE thread_id = new.thread_id;\n"
                                                         "  DELETE FROM runfs_canon WHERE new.id >= 0 AND hi = (SELECT min(hi) FROM runfs_canon\n"
                                                         "    WHERE hi >= new.id) AND lo <= new.id;\n"
                                                         "  UPDATE runfs_meta SET value = 0 WHERE key = 'canon_lo' AND value > 0 AND new.id >= value\n"
                                                         "    AND new.id <= (SELECT m.value FROM runfs_meta m WHERE m.key = 'canon_hi');\n"
                                                         "  INSERT INTO runfs_change (thread_id, run_id, change, owner, pending)\n"
                                                         "    SELECT new.thread_id, new.run_id, " RUN_CHANGE(
                                                             "new") ", coalesce(new.user_id, ''), 1\n"
                                                                    "    WHERE NOT EXISTS (SELECT 1 FROM runfs_change WHERE thread_id = new.thread_id\n"
                                                                    "    AND run_id = new.run_id);\n"
                                                                    "  UPDATE runfs_change SET pending = 1, change = max(change, " RUN_CHANGE(
                                                                        "new") ")\n"
                                                                               "    WHERE thread_id = new.thread_id AND run_id = new.run_id;\n"
                                                                               "  INSERT INTO runfs_search_dirty (blk) SELECT (new.id - 1) / 64 WHERE new.id >= 0\n"
                                                                               "    AND NOT EXISTS (SELECT 1 FROM runfs_search_dirty WHERE blk = (new.id - 1) / 64);\n"
                                                                               "  DELETE FROM runfs_replace_q WHERE q = new.q;\n"
                                                                               "END;\n"
                                                                               "CREATE TRIGGER IF NOT EXISTS runfs_replace_note BEFORE INSERT ON run_events\n"
                                                                               "  WHEN EXISTS (SELECT 1 FROM run_events WHERE thread_id = new.thread_id AND seq = new.seq)\n"
                                                                               "  OR (new.id >= 0 AND EXISTS (SELECT 1 FROM run_events WHERE id = new.id))\n"
                                                                               "  OR (new.id >= 0 AND new.id <= (SELECT value FROM runfs_meta WHERE key = 'indexed_id'))\n"
                                                                               "  OR new.seq <= (SELECT last_seq FROM runfs_thread WHERE thread_id = new.thread_id) BEGIN\n"
                                                                               "  INSERT INTO runfs_replace_q (id, thread_id, run_id, user_id, seq)\n"
                                                                               "    VALUES (new.id, new.thread_id, new.run_id, new.user_id, new.seq);\n"
                                                                               "END;\n";

/* Triggers on run_events an older build left: the change feed's that let a run's number go
 * with its runfs_run row (RUN_CHANGE), and those whose statements an outer statement's
 * conflict clause could make fail. SQLite runs a trigger's INSERT under the conflict clause
 * of the statement that fired it (CREATE TRIGGER), so an older build's INSERT OR IGNORE
 * became INSERT OR ABORT under DeerFlow's UPDATE OR ABORT or UPSERT and failed it on the
 * side table's key. And a runfs_replace_note that missed rows put back below the logs, or
 * that did its work itself (every append paid for its frame: runfs_replace_q). And the
 * counts of rewrites that kept none per thread (runfs_rewritten). A writer's
 * open drops them (rs_schema_stale_drop_sql) and makes them again; no statement of runfs's
 * triggers meets a constraint now, whatever the outer clause. */
static const char rs_schema_stale_triggers_sql[] =
    "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'run_events' "
    "AND name LIKE 'runfs%' AND (sql LIKE '%OR IGNORE%' OR (name LIKE 'runfs_change_%' AND "
    "sql NOT LIKE '%max(change%') OR (name = 'runfs_replace_note' AND (sql NOT LIKE '%last_seq%' "
    "OR sql NOT LIKE '%runfs_replace_q%')) OR (name IN ('runfs_count_deleted', "
    "'runfs_forget_updated', 'runfs_replace_work') AND sql NOT LIKE '%runfs_rewritten%'))";
static const char rs_schema_stale_drop_sql[] = "DROP TRIGGER IF EXISTS runfs_change_delete;\n"
                                               "DROP TRIGGER IF EXISTS runfs_change_update;\n"
                                               "DROP TRIGGER IF EXISTS runfs_search_update;\n"
                                               "DROP TRIGGER IF EXISTS runfs_search_delete;\n"
                                               "DROP TRIGGER IF EXISTS runfs_replace_note;\n"
                                               "DROP TRIGGER IF EXISTS runfs_replace_work;\n"
                                               "DROP TRIGGER IF EXISTS runfs_count_deleted;\n"
                                               "DROP TRIGGER IF EXISTS runfs_forget_updated;\n";
