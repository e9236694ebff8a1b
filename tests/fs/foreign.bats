#!/usr/bin/env bats
# What another writer's deletes and inserts do to a mount: a deleted thread or run is gone
# from lookups within the hub's tick; what belonged to deleted rows (seals, singletons,
# idempotency keys) goes with them, and verify tells a deleted sealed run from a changed one;
# a follower never silently misses a row another writer put below its position. The other
# writers are real: sqlite3 or psql with DeerFlow's own statements, and a second mount.

load lib

setup() {
  runfs_setup
  PIDS=()
  DBS=()
}

teardown() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  runfs_teardown
  for p in "${DBS[@]}"; do pg_admin "DROP DATABASE IF EXISTS $p WITH (FORCE)" >/dev/null || true; done
}


# gone_within MS PATH: PATH stops existing within MS milliseconds.
gone_within() { wait_for_ms "$1" test ! -e "$2"; }

# keyed CONTENT KEY: an event line with an idempotency key.
keyed() { printf '{"event_type":"llm.error","content":"%s","idempotency_key":"%s"}\n' "$1" "$2"; }

@test "a thread or run another writer deleted is gone from lookups within the hub's tick; mkdir -p makes it again at once" {
  local B=$WORK/mnt-b
  runfs_mount "$STORE" "$B" --allow-delete
  mkdir -p "$MNT/threads/t/runs/r1" "$MNT/threads/t/runs/r2" "$MNT/threads/u/runs/r1"
  ev_start >>"$MNT/threads/t/runs/r1/events.jsonl"
  ev_start >>"$MNT/threads/t/runs/r2/events.jsonl"
  ev_start >>"$MNT/threads/u/runs/r1/events.jsonl"
  # The kernel trusts a name it looked up for a second (DIR_TIMEOUT): each check starts
  # right after a fresh lookup, so a name kept until its entry expires fails the limit.
  stat "$MNT/threads/t/runs/r1" >/dev/null
  store_sql "DELETE FROM run_events WHERE thread_id = 't' AND run_id = 'r1'"
  gone_within 700 "$MNT/threads/t/runs/r1" || fail "run r1 still stats after DeerFlow deleted it"
  [ -e "$MNT/threads/t/runs/r2" ] || fail "run r2 went too"
  mkdir -p "$MNT/threads/t/runs/r1"
  ev_human again >>"$MNT/threads/t/runs/r1/events.jsonl"
  # A whole thread, deleted on another mount (rm -r there).
  stat "$MNT/threads/u/runs/r1" >/dev/null
  rm -r "$B/threads/u"
  gone_within 700 "$MNT/threads/u" || fail "thread u still stats after mount B deleted it"
  mkdir -p "$MNT/threads/u/runs/r1"
  ev_human back >>"$MNT/threads/u/runs/r1/events.jsonl"
  assert_equal "$(grep -c '"seq"' "$MNT/threads/u/events.jsonl")" 1
  # And a whole thread deleted by DeerFlow's delete_by_thread.
  stat "$MNT/threads/u/runs/r1" >/dev/null
  store_sql "DELETE FROM run_events WHERE thread_id = 'u'"
  gone_within 700 "$MNT/threads/u" || fail "thread u still stats after DeerFlow deleted it"
  mkdir -p "$MNT/threads/u/runs/r2"
}

@test "a sealed run another writer deleted: seal, singletons and keys go with it; verify says 'deleted after sealing', apart from a changed run" {
  local R=$MNT/threads/t/runs/r1 S=$MNT/threads/t/runs/r2
  mkdir -p "$R" "$S"
  ev_start >>"$R/events.jsonl"
  keyed first k1 >>"$R/events.jsonl"
  ev_terminal >"$R/once/run.terminal"
  (set -C; : >"$R/seal.json")
  ev_start >>"$S/events.jsonl"
  ev_human one >>"$S/events.jsonl"
  ev_human two >>"$S/events.jsonl"
  ev_terminal >"$S/once/run.terminal"
  (set -C; : >"$S/seal.json")
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_line "2 seals checked, 0 changed, 0 redacted, 0 expired, 0 deleted after sealing"
  # DeerFlow's delete_by_run of r1 (a retention delete), and a row of r2 deleted (tampering).
  store_sql "DELETE FROM run_events WHERE thread_id = 't' AND run_id = 'r1'"
  store_sql "DELETE FROM run_events WHERE thread_id = 't' AND run_id = 'r2' AND content LIKE '%two%'"
  run "$RUNFS" verify "$STORE"
  assert_failure 1
  assert_line "threads/t/runs/r1: deleted after sealing"
  assert_line --partial "threads/t/runs/r2: event count 3 != sealed 4"
  assert_line "2 seals checked, 1 changed, 0 redacted, 0 expired, 1 deleted after sealing"
  # Made again, r1 starts clean: no seal, its singleton and key free again, sealable again.
  mkdir -p "$R"
  run cat "$R/seal.json"
  assert_failure
  ev_start >>"$R/events.jsonl"
  keyed second k1 >>"$R/events.jsonl"
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 't' AND run_id = 'r1' AND content LIKE '%second%'")" 1
  ev_terminal >"$R/once/run.terminal" || fail "run.terminal of the new run refused"
  (set -C; : >"$R/seal.json") || fail "the new run could not be sealed"
  grep -q '"state":"sealed"' "$R/seal.json"
  grep -q '"event_count":3' "$R/seal.json"
  run "$RUNFS" verify "$STORE"
  assert_failure 1
  assert_line "2 seals checked, 1 changed, 0 redacted, 0 expired, 0 deleted after sealing"
  # The same across a remount.
  runfs_unmount "$MNT"
  MOUNTS=()
  runfs_mount "$STORE" "$MNT"
  grep -q '"event_count":3' "$R/seal.json"
}

@test "a sealed run deleted while nothing was mounted: verify says so before any mount indexed it" {
  local R=$MNT/threads/t/runs/r1
  mkdir -p "$R"
  ev_start >>"$R/events.jsonl"
  ev_terminal >"$R/once/run.terminal"
  (set -C; : >"$R/seal.json")
  runfs_unmount "$MNT"
  MOUNTS=()
  store_sql "DELETE FROM run_events WHERE thread_id = 't'"
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_line "threads/t/runs/r1: deleted after sealing"
  assert_line "1 seal checked, 0 changed, 0 redacted, 0 expired, 1 deleted after sealing"
}

# df_insert THREAD RUN CONTENT: DeerFlow's put of one row, seq its MAX(seq) + 1.
df_insert() {
  store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('$1', '$2', 'llm.error', 'trace', '$3', '{}', (SELECT coalesce(max(seq), 0) + 1 FROM run_events WHERE thread_id = '$1'), '2026-03-05 00:00:00.000000')"
}

@test "a follower never silently misses a row put below its position: rows above are delivered, history rewritten below ends the feed with a line saying so" {
  mkdir -p "$MNT/threads/t/runs/d1" "$MNT/threads/t/runs/d2"
  ev_start >>"$MNT/threads/t/runs/d1/events.jsonl"
  ev_human one >>"$MNT/threads/t/runs/d1/events.jsonl"
  ev_human two >>"$MNT/threads/t/runs/d1/events.jsonl"
  timeout 60 cat "$MNT/threads/t/follow.jsonl" >"$WORK/follow" 2>"$WORK/follow.err" &
  local follower=$!
  PIDS+=("$follower")
  timeout 60 cat "$MNT/threads/t/runs/d2/follow.jsonl" >"$WORK/run" 2>"$WORK/run.err" &
  local run_follower=$!
  PIDS+=("$run_follower")
  wait_for 10 grep -q '"seq":3' "$WORK/follow"
  ev_start >>"$MNT/threads/t/runs/d2/events.jsonl"
  ev_human three >>"$MNT/threads/t/runs/d2/events.jsonl"
  # A foreign row above the position is simply delivered.
  df_insert t d2 above
  wait_for 10 grep -q '"seq":6' "$WORK/follow" || fail "the foreign row above was not delivered: $(cat "$WORK/follow")"
  wait_for 10 grep -q '"seq":6' "$WORK/run"
  ! grep -q history_changed "$WORK/follow" || fail "a feed ended though nothing changed below it"
  # DeerFlow's delete_by_run of d2 (seqs 4-6), then its next row gets seq 4 (MAX + 1).
  store_sql "DELETE FROM run_events WHERE thread_id = 't' AND run_id = 'd2'"
  df_insert t d3 below
  assert_equal "$(store_sql "SELECT seq FROM run_events WHERE thread_id = 't' AND run_id = 'd3'")" 4
  # The run's follower ends at once, saying its run went; the thread's says its history
  # changed after seq 6, and ends.
  wait "$run_follower" || fail "the run's follower failed: $(cat "$WORK/run.err")"
  run tail -n 1 "$WORK/run"
  assert_output --partial '"event_type":"runfs.history_changed","thread_id":"t","run_id":"d2","after_seq":6,"deleted":true'
  wait "$follower" || fail "the thread's follower failed: $(cat "$WORK/follow.err")"
  run tail -n 1 "$WORK/follow"
  assert_output --partial '"event_type":"runfs.history_changed","thread_id":"t","run_id":null,"after_seq":6,"deleted":false'
  # Every line before it is an event, each once, in seq order.
  assert_equal "$(grep -o '"seq":[0-9]*' "$WORK/follow" | cut -d: -f2 | tr '\n' ' ')" "1 2 3 4 5 6 "
  # A new follower reads the history as it is now, row 4 of d3 included.
  run bash -c "timeout 10 head -n 4 '$MNT/threads/t/follow.jsonl' | tail -n 1"
  assert_output --partial '"run_id":"d3","seq":4,'
}

@test "read-only commands and -o ro on a DeerFlow database runfs never opened read-write: they work and create nothing" {
  runfs_unmount "$MNT"
  MOUNTS=()
  if on_pg; then
    pg_admin "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null
    pg_admin "CREATE DATABASE $PG_DB" >/dev/null
    store_sql "CREATE TABLE run_events (id SERIAL NOT NULL, thread_id VARCHAR(64) NOT NULL, run_id VARCHAR(64) NOT NULL, user_id VARCHAR(64), event_type VARCHAR(32) NOT NULL, category VARCHAR(16) NOT NULL, content TEXT NOT NULL, event_metadata JSON NOT NULL, seq INTEGER NOT NULL, created_at TIMESTAMP WITH TIME ZONE NOT NULL, PRIMARY KEY (id), CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq))"
    tables() { store_sql "SELECT string_agg(tablename, ' ' ORDER BY tablename) FROM pg_tables WHERE schemaname = current_schema()"; }
  else
    rm -f "$STORE"
    store_sql "CREATE TABLE run_events (id INTEGER NOT NULL, thread_id VARCHAR(64) NOT NULL, run_id VARCHAR(64) NOT NULL, user_id VARCHAR(64), event_type VARCHAR(32) NOT NULL, category VARCHAR(16) NOT NULL, content TEXT NOT NULL, event_metadata JSON NOT NULL, seq INTEGER NOT NULL, created_at DATETIME NOT NULL, PRIMARY KEY (id), CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq))"
    tables() { store_sql "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name)"; }
  fi
  df_insert t1 r1 one
  df_insert t1 r1 two
  df_insert t2 r9 three
  local before
  before=$(store_sql "SELECT * FROM run_events ORDER BY id" | sha256sum)
  on_pg || before="$before $(sha256sum <"$STORE")"
  # cat, verify and export read it as it is.
  run "$RUNFS" cat "$STORE" threads/t1/events.jsonl
  assert_success
  assert_equal "$(printf '%s\n' "$output" | grep -o '"seq":[0-9]*,' | tr -d '\n')" '"seq":1,"seq":2,'
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_output "0 seals checked, 0 changed, 0 redacted, 0 expired, 0 deleted after sealing"
  run "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out"
  assert_success
  assert_equal "$(python3 -c 'import json, sys; print(" ".join(str(json.loads(l)["seq"]) for l in open(sys.argv[1])))' "$WORK/out/threads/t1/runs/r1.jsonl")" "1 2"
  assert_equal "$(python3 -c 'import json, sys; print(" ".join(json.loads(l)["content"] for l in open(sys.argv[1])))' "$WORK/out/threads/t2/runs/r9.jsonl")" "three"
  local after
  after=$(store_sql "SELECT * FROM run_events ORDER BY id" | sha256sum)
  on_pg || after="$after $(sha256sum <"$STORE")"
  assert_equal "$after" "$before"
  # A read-only mount, and what DeerFlow does while it is mounted.
  runfs_mount "$STORE" "$MNT" -o ro
  assert_equal "$(ls "$MNT/threads" | tr '\n' ' ')" "t1 t2 "
  assert_equal "$(grep -c '"seq"' "$MNT/threads/t1/events.jsonl")" 2
  df_insert t1 r2 four
  df_insert t3 r1 five
  wait_for 10 bash -c "[ \"\$(grep -c '\"seq\"' '$MNT/threads/t1/events.jsonl')\" = 3 ]" || fail "a row DeerFlow added is not shown: $(cat "$MNT/threads/t1/events.jsonl")"
  wait_for 10 test -d "$MNT/threads/t3"
  store_sql "DELETE FROM run_events WHERE thread_id = 't1' AND run_id = 'r1'"
  wait_for 10 bash -c "[ \"\$(ls '$MNT/threads/t1/runs')\" = r2 ]" || fail "a run DeerFlow deleted is still listed: $(ls "$MNT/threads/t1/runs")"
  # The listing reads the names as they are; the thread's log (and the kernel's pages of it)
  # follow at the hub's next look at the server's counts: within its tick, not at once.
  wait_for 10 bash -c "[ \"\$(grep -c '\"seq\"' '$MNT/threads/t1/events.jsonl')\" = 1 ]" || fail "rows DeerFlow deleted are still shown: $(cat "$MNT/threads/t1/events.jsonl")"
  runfs_unmount "$MNT"
  MOUNTS=()
  # Nothing of runfs's in the database.
  assert_equal "$(tables)" "run_events"
}

# apply_matrix DB OUT: every statement of $WORK/matrix.sql (one a line) run on DB by sqlite3
# in turn, each in a transaction of its own; OUT gets, for each, its exit status, its error
# message and the rows of run_events after it.
apply_matrix() {
  local stmt n=0 st
  : >"$2"
  while IFS= read -r stmt; do
    n=$((n + 1))
    st=0
    sqlite3 -cmd '.timeout 10000' "$1" "BEGIN; $stmt; COMMIT;" >"$WORK/m.out" 2>&1 || st=$?
    { echo "== $n: $stmt -> $st"; sed 's/^Error: [a-z ]*, /Error: /' "$WORK/m.out"
      sqlite3 -cmd '.timeout 10000' "$1" "SELECT id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at FROM run_events ORDER BY id"; } >>"$2"
  done <"$WORK/matrix.sql"
}

@test "another writer's statement under every SQLite conflict clause has the outcome it has without runfs's triggers, mounted or not" {
  skip_on_pg "SQLite's OR conflict clauses (PostgreSQL runs a trigger's statements under their own)"
  local cols="id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at" c
  mkdir -p "$MNT/threads/t1/runs/r1" "$MNT/threads/t2/runs/r2"
  ev_start >>"$MNT/threads/t1/runs/r1/events.jsonl"
  ev_human a 1 >>"$MNT/threads/t1/runs/r1/events.jsonl"
  ev_human b 2 >>"$MNT/threads/t1/runs/r1/events.jsonl"
  ev_start >>"$MNT/threads/t2/runs/r2/events.jsonl"
  # A DeerFlow row, a numbered feed and a search index: every side table and trigger there is.
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t3', 'r3', NULL, 'llm.error', 'error', 'x', '{}', 1, '2026-03-04 05:06:07.000000')"
  wait_for 10 test -d "$MNT/threads/t3"
  cat "$MNT/changes.jsonl" "$MNT/search/hello" >/dev/null
  runfs_unmount "$MNT"
  MOUNTS=()
  [ "$(sqlite3 "$STORE" "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'run_events' AND name LIKE 'runfs%'")" -ge 5 ]
  # The reference: the same file without runfs's triggers (its tables left, now inert).
  cp "$STORE" "$WORK/ref.db"
  sqlite3 "$WORK/ref.db" "SELECT 'DROP TRIGGER ' || name || ';' FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'runfs%'" | sqlite3 "$WORK/ref.db"
  [ "$(sqlite3 "$WORK/ref.db" "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'")" = 0 ]
  cp "$STORE" "$WORK/mounted.db"
  # Inserts that meet the primary key, (thread_id, seq) or nothing, and updates that meet
  # nothing or (thread_id, seq), under each clause; then the UPSERTs.
  local row="'t1', 'r1', NULL, 'llm.error', 'error', 'new', '{}'"
  for c in ROLLBACK ABORT FAIL IGNORE REPLACE; do
    echo "INSERT OR $c INTO run_events ($cols) VALUES (2, $row, 9, '2026-03-04 05:06:07.000000')"
    echo "INSERT OR $c INTO run_events ($cols) VALUES (900, $row, 1, '2026-03-04 05:06:07.000000')"
    echo "INSERT OR $c INTO run_events ($cols) VALUES (NULL, $row, 50, '2026-03-04 05:06:07.000000')"
    echo "UPDATE OR $c run_events SET content = content || ' $c' WHERE thread_id = 't1'"
    echo "UPDATE OR $c run_events SET content = 'moved $c', seq = seq + 1 WHERE thread_id = 't1'"
    echo "UPDATE OR $c run_events SET content = 'x $c' WHERE thread_id = 't3'"
  done >"$WORK/matrix.sql"
  cat >>"$WORK/matrix.sql" <<SQL
INSERT INTO run_events ($cols) VALUES (2, $row, 70, '2026-03-04 05:06:07.000000') ON CONFLICT (id) DO UPDATE SET content = 'upserted'
INSERT INTO run_events ($cols) VALUES (NULL, $row, 1, '2026-03-04 05:06:07.000000') ON CONFLICT (thread_id, seq) DO UPDATE SET content = excluded.content || ' by seq'
INSERT INTO run_events ($cols) VALUES (2, $row, 71, '2026-03-04 05:06:07.000000') ON CONFLICT DO NOTHING
INSERT INTO run_events ($cols) VALUES (NULL, $row, 72, '2026-03-04 05:06:07.000000') ON CONFLICT DO NOTHING
REPLACE INTO run_events ($cols) SELECT id, thread_id, run_id, user_id, 'llm.error', 'trace', 'replaced', event_metadata, seq, created_at FROM run_events WHERE thread_id = 't3'
DELETE FROM run_events WHERE thread_id = 't2'
SQL
  # Rows put back below what a mount indexed: the deleted row with its old id, under each
  # clause (the first puts it back, the others meet it), and one deleted and written again.
  for c in ROLLBACK ABORT FAIL IGNORE REPLACE; do
    echo "INSERT OR $c INTO run_events ($cols) SELECT 4, 't2', 'r2', NULL, 'llm.error', 'error', 'back $c', '{}', 1, '2026-03-04 05:06:07.000000'"
  done >>"$WORK/matrix.sql"
  echo "DELETE FROM run_events WHERE id = 4; INSERT INTO run_events ($cols) VALUES (4, 't2', 'r2', NULL, 'llm.error', 'error', 'again', '{}', 1, '2026-03-04 05:06:07.000000')" >>"$WORK/matrix.sql"
  apply_matrix "$WORK/ref.db" "$WORK/ref.out"
  apply_matrix "$STORE" "$WORK/opened.out"
  diff "$WORK/ref.out" "$WORK/opened.out" || fail "runfs's triggers changed another writer's statement (nothing mounted)"
  # Mounted, the mount catching up between the statements.
  runfs_mount "$WORK/mounted.db" "$MNT"
  apply_matrix "$WORK/mounted.db" "$WORK/mounted.out"
  diff "$WORK/ref.out" "$WORK/mounted.out" || fail "runfs's triggers changed another writer's statement (mounted)"
  # The statements did fail where SQLite says they must, and the mount still reads.
  grep -q 'UNIQUE constraint failed: run_events' "$WORK/ref.out"
  cat "$MNT/threads/t1/events.jsonl" >/dev/null
  wait_for 10 grep -q '"content":"again"' "$MNT/threads/t2/runs/r2/events.jsonl"
  # A file an older build set up, with triggers whose INSERT OR IGNORE an outer clause turns
  # into a failure: a read-write open makes them again.
  cp "$STORE" "$WORK/old.db"
  sqlite3 "$WORK/old.db" "DROP TRIGGER runfs_change_update; CREATE TRIGGER runfs_change_update AFTER UPDATE ON run_events BEGIN INSERT OR IGNORE INTO runfs_change (thread_id, run_id, change, pending) VALUES (old.thread_id, old.run_id, 0, 1), (new.thread_id, new.run_id, 0, 1); END; DROP TRIGGER runfs_search_update; CREATE TRIGGER runfs_search_update AFTER UPDATE ON run_events BEGIN INSERT OR IGNORE INTO runfs_search_dirty (blk) VALUES ((old.id - 1) / 64), ((new.id - 1) / 64); END; DROP TRIGGER runfs_replace_note;"
  cp "$WORK/old.db" "$WORK/copy-old.db"
  run sqlite3 "$WORK/copy-old.db" "UPDATE OR ABORT run_events SET content = 'c' WHERE thread_id = 't1'"
  assert_failure
  assert_output --partial "UNIQUE constraint failed: runfs_"
  "$RUNFS" changes "$WORK/old.db" >/dev/null
  assert_equal "$(sqlite3 "$WORK/old.db" "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%OR IGNORE%'")" 0
  assert_equal "$(sqlite3 "$WORK/old.db" "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master WHERE name IN ('runfs_change_update', 'runfs_search_update', 'runfs_replace_note') ORDER BY name)")" "runfs_change_update,runfs_replace_note,runfs_search_update"
  run sqlite3 "$WORK/old.db" "UPDATE OR ABORT run_events SET content = 'c' WHERE thread_id = 't1'"
  assert_success
}

# apply_pg_matrix URI OUT: each statement of $WORK/matrix.sql in a transaction of its own on
# database URI; to OUT its exit status, psql's messages and the rows after it.
apply_pg_matrix() {
  local stmt n=0 st
  : >"$2"
  while IFS= read -r stmt; do
    n=$((n + 1))
    st=0
    printf 'BEGIN;\n%s;\nCOMMIT;\n' "$stmt" | PGTZ=UTC psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" -f - >"$WORK/m.out" 2>&1 || st=$?
    { echo "== $n: $stmt -> $st"; cat "$WORK/m.out"
      store_sql "SELECT id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at FROM run_events ORDER BY id" "$1"; } >>"$2"
  done <"$WORK/matrix.sql"
}

@test "another writer's statement under every PostgreSQL ON CONFLICT form has the outcome it has without runfs's triggers, mounted or not" {
  on_pg || skip "PostgreSQL's ON CONFLICT (SQLite's clauses: the test above)"
  local cols="id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at" d
  mkdir -p "$MNT/threads/t1/runs/r1" "$MNT/threads/t2/runs/r2"
  ev_start >>"$MNT/threads/t1/runs/r1/events.jsonl"
  ev_human a 1 >>"$MNT/threads/t1/runs/r1/events.jsonl"
  ev_human b 2 >>"$MNT/threads/t1/runs/r1/events.jsonl"
  ev_start >>"$MNT/threads/t2/runs/r2/events.jsonl"
  # A DeerFlow row, a numbered feed and a search index: every side table and trigger there is.
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t3', 'r3', NULL, 'llm.error', 'error', 'x', '{}', 1, '2026-03-04 05:06:07.000000')"
  wait_for 10 test -d "$MNT/threads/t3"
  cat "$MNT/changes.jsonl" "$MNT/search/hello" >/dev/null
  runfs_unmount "$MNT"
  MOUNTS=()
  [ "$(store_sql "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'run_events'::regclass AND tgname LIKE 'runfs%'")" -ge 5 ]
  # Copies: the reference without runfs's triggers (its tables left, now inert), and one to
  # mount.
  for d in ref mounted; do
    DBS+=("${PG_DB}_$d")
    pg_admin "CREATE DATABASE ${PG_DB}_$d TEMPLATE $PG_DB" >/dev/null
  done
  store_sql "SELECT 'DROP TRIGGER ' || tgname || ' ON run_events;' FROM pg_trigger WHERE tgrelid = 'run_events'::regclass AND tgname LIKE 'runfs%'" "$(pg_uri "${PG_DB}_ref")" >"$WORK/drop.sql"
  store_sql "$(cat "$WORK/drop.sql")" "$(pg_uri "${PG_DB}_ref")"
  assert_equal "$(store_sql "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'run_events'::regclass AND NOT tgisinternal" "$(pg_uri "${PG_DB}_ref")")" 0
  # Inserts that meet the primary key, (thread_id, seq) or nothing, plain and under each ON
  # CONFLICT form; one that meets a row twice; updates that meet (thread_id, seq) or nothing.
  local row="'t1', 'r1', NULL, 'llm.error', 'error', 'new', '{}'" at="'2026-03-04 05:06:07.000000'"
  cat >"$WORK/matrix.sql" <<SQL
INSERT INTO run_events ($cols) VALUES (2, $row, 9, $at)
INSERT INTO run_events ($cols) VALUES (900, $row, 1, $at)
INSERT INTO run_events ($cols) VALUES (901, $row, 50, $at)
INSERT INTO run_events ($cols) VALUES (2, $row, 70, $at) ON CONFLICT DO NOTHING
INSERT INTO run_events ($cols) VALUES (902, $row, 1, $at) ON CONFLICT DO NOTHING
INSERT INTO run_events ($cols) VALUES (903, $row, 2, $at) ON CONFLICT ON CONSTRAINT uq_events_thread_seq DO NOTHING
INSERT INTO run_events ($cols) VALUES (2, $row, 71, $at) ON CONFLICT (id) DO UPDATE SET content = 'upserted'
INSERT INTO run_events ($cols) VALUES (904, $row, 1, $at) ON CONFLICT (thread_id, seq) DO UPDATE SET content = excluded.content || ' by seq'
INSERT INTO run_events ($cols) VALUES (905, $row, 3, $at) ON CONFLICT (thread_id, seq) DO UPDATE SET content = 'moved', seq = 60
INSERT INTO run_events ($cols) VALUES (906, $row, 1, $at) ON CONFLICT (thread_id, seq) DO UPDATE SET seq = 2
INSERT INTO run_events ($cols) VALUES (907, $row, 2, $at), (908, $row, 2, $at) ON CONFLICT (thread_id, seq) DO UPDATE SET content = 'twice'
INSERT INTO run_events ($cols) VALUES (909, $row, 2, $at), (910, $row, 80, $at) ON CONFLICT (thread_id, seq) DO NOTHING
INSERT INTO run_events ($cols) VALUES (911, 't3', 'r3', NULL, 'llm.error', 'error', 'y', '{}', 1, $at) ON CONFLICT (thread_id, seq) DO UPDATE SET run_id = 'r4', content = 'moved run' WHERE run_events.content = 'x'
UPDATE run_events SET content = content || ' plain' WHERE thread_id = 't1'
UPDATE run_events SET seq = seq + 1 WHERE thread_id = 't1'
UPDATE run_events SET content = 'x2' WHERE thread_id = 't3'
DELETE FROM run_events WHERE thread_id = 't2'
SQL
  apply_pg_matrix "$(pg_uri "${PG_DB}_ref")" "$WORK/ref.out"
  apply_pg_matrix "$STORE" "$WORK/opened.out"
  diff "$WORK/ref.out" "$WORK/opened.out" || fail "runfs's triggers changed another writer's statement (nothing mounted)"
  # Mounted, the mount catching up between the statements.
  runfs_mount "$(pg_uri "${PG_DB}_mounted")" "$MNT"
  apply_pg_matrix "$(pg_uri "${PG_DB}_mounted")" "$WORK/mounted.out"
  diff "$WORK/ref.out" "$WORK/mounted.out" || fail "runfs's triggers changed another writer's statement (mounted)"
  # The statements did fail where PostgreSQL says they must, and the mount shows the rows.
  grep -q 'duplicate key value violates unique constraint' "$WORK/ref.out"
  grep -q 'ON CONFLICT DO UPDATE command cannot affect row a second time' "$WORK/ref.out"
  wait_for 10 eval '[ "$(grep -c . "$MNT/threads/t1/events.jsonl")" = "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = '"'t1'"'" "$(pg_uri "${PG_DB}_mounted")")" ]'
  wait_for 10 grep -q '"content":"x2"' "$MNT/threads/t3/runs/r4/events.jsonl"
}

# replaced_ok DIR: DIR's t1 logs are whole after the REPLACEs below: st_size is the bytes a
# read gives, every line is JSON, the seqs run 1..5 and seqs 2 and 4 hold the new texts.
replaced_ok() {
  local f
  for f in "$1/threads/t1/events.jsonl" "$1/threads/t1/runs/r1/events.jsonl"; do
    [ "$(stat -c %s "$f")" = "$(cat "$f" | wc -c)" ] || return 1
    python3 -c 'import json, sys
d = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert [e["seq"] for e in d] == [1, 2, 3, 4, 5], d
assert d[3]["content"] == "a longer text the zebrafish wrote" and d[3]["category"] == "trace", d[3]
assert d[1]["content"] == "quagga", d[1]' "$f" || return 1
  done
}

@test "REPLACE INTO by another writer, on id or on (thread_id, seq): sizes, bytes, search and the change feed follow, across a remount" {
  skip_on_pg "SQLite's REPLACE deletes the row it meets without a delete trigger"
  local i top
  mkdir -p "$MNT/threads/t1/runs/r1"
  for i in 1 2 3 4 5; do ev_human "word$i" "$i" >>"$MNT/threads/t1/runs/r1/events.jsonl"; done
  # What a mount keeps: sizes, the search index, the feed's numbers.
  stat -c %s "$MNT/threads/t1/events.jsonl" "$MNT/threads/t1/runs/r1/events.jsonl" >/dev/null
  [ "$(wc -l <"$MNT/search/word4")" = 1 ]
  top=$(sed -n 's/^{"change":\([0-9]*\),.*/\1/p' "$MNT/changes.jsonl" | tail -1)
  # On the primary key (the row keeps its id), then on (thread_id, seq) with a new id.
  store_sql "REPLACE INTO run_events SELECT id, thread_id, run_id, user_id, 'llm.error', 'trace', 'a longer text the zebrafish wrote', event_metadata, seq, created_at FROM run_events WHERE thread_id = 't1' AND seq = 4"
  store_sql "REPLACE INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) SELECT thread_id, run_id, user_id, 'llm.error', 'trace', 'quagga', event_metadata, seq, created_at FROM run_events WHERE thread_id = 't1' AND seq = 2"
  wait_for 10 replaced_ok "$MNT" || fail "the mount shows stale bytes: $(stat -c %s "$MNT/threads/t1/events.jsonl") bytes stat'ed; $(tail -c 60 "$MNT/threads/t1/events.jsonl")"
  tail -c 2 "$MNT/threads/t1/events.jsonl" | grep -q '}'
  # The reference: the same rows in a file without runfs's tables, indexed afresh.
  store_sql "VACUUM INTO '$WORK/fresh.db'"
  sqlite3 "$WORK/fresh.db" "SELECT 'DROP TRIGGER ' || name || ';' FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'runfs%'" | sqlite3 "$WORK/fresh.db"
  sqlite3 "$WORK/fresh.db" "SELECT 'DROP TABLE ' || name || ';' FROM sqlite_master WHERE type = 'table' AND name LIKE 'runfs%' AND name NOT LIKE 'runfs_search%'" | sqlite3 "$WORK/fresh.db"
  cmp <("$RUNFS" cat "$WORK/fresh.db" threads/t1/events.jsonl) "$MNT/threads/t1/events.jsonl"
  run cat "$MNT/search/zebrafish"
  assert_equal "$(printf '%s\n' "$output" | grep -c '"seq":4,')" 1
  run cat "$MNT/search/quagga"
  assert_equal "$(printf '%s\n' "$output" | grep -c '"seq":2,')" 1
  [ "$(cat "$MNT/search/word4" | wc -l)" = 0 ]
  grep -q '"thread_id":"t1","run_id":"r1"' "$MNT/changes/since/$top" || fail "no change after $top for t1/r1: $(cat "$MNT/changes.jsonl")"
  # A later mount shows the same.
  runfs_unmount "$MNT"
  MOUNTS=()
  runfs_mount "$STORE" "$MNT"
  replaced_ok "$MNT"
  cmp <("$RUNFS" cat "$WORK/fresh.db" threads/t1/events.jsonl) "$MNT/threads/t1/events.jsonl"
  grep -q '"thread_id":"t1","run_id":"r1"' "$MNT/changes/since/$top"
}

@test "an older build's runfs_replace_note, its work run for every insert, is made again as a note and a worker; a REPLACE is still noted" {
  skip_on_pg "SQLite's row triggers: PostgreSQL's REPLACE is no statement"
  local f=$MNT/threads/t1/runs/r1/events.jsonl
  mkdir -p "$MNT/threads/t1/runs/r1"
  ev_human one 1 >>"$f"
  ev_human two 2 >>"$f"
  runfs_unmount "$MNT"
  MOUNTS=()
  # The older trigger's shape: the condition and the work in one body (here its work's
  # first statement), so every insert allocated the frame of the whole body.
  store_sql "DROP TRIGGER runfs_replace_note; DROP TRIGGER IF EXISTS runfs_replace_work; DROP TABLE IF EXISTS runfs_replace_q; CREATE TRIGGER runfs_replace_note BEFORE INSERT ON run_events WHEN EXISTS (SELECT 1 FROM run_events WHERE thread_id = new.thread_id AND seq = new.seq) OR new.seq <= (SELECT last_seq FROM runfs_thread WHERE thread_id = new.thread_id) BEGIN UPDATE runfs_thread SET dirty = 1 WHERE thread_id = new.thread_id; END"
  runfs_mount "$STORE" "$MNT"
  run store_sql "SELECT name FROM sqlite_master WHERE (name = 'runfs_replace_note' AND sql LIKE '%INSERT INTO runfs_replace_q%') OR name = 'runfs_replace_work' ORDER BY name"
  [ "$(echo $output)" = "runfs_replace_note runfs_replace_work" ] || fail "the older runfs_replace_note was kept: $(store_sql "SELECT sql FROM sqlite_master WHERE name = 'runfs_replace_note'")"
  # Another writer's REPLACE on (thread_id, seq): the mount shows the new row, sized as read.
  store_sql "REPLACE INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) SELECT thread_id, run_id, user_id, 'llm.error', 'trace', 'a longer text of three', event_metadata, seq, created_at FROM run_events WHERE thread_id = 't1' AND seq = 2"
  wait_for 10 bash -c "grep -q 'a longer text of three' '$f' && [ \$(stat -c %s '$f') -eq \$(cat '$f' | wc -c) ]" || fail "the replaced row is not shown: $(cat "$f")"
  [ "$(wc -l <"$f")" = 2 ]
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_replace_q")" 0
}

# restored_ok N WORD: the mount shows N rows of t/r, in seq order 1..N, sized as read, the
# row of seq 5 holding WORD in the thread's log, the run's, messages.jsonl and a search.
restored_ok() {
  local f n=$1
  for f in "$MNT/threads/t/events.jsonl" "$MNT/threads/t/runs/r/events.jsonl" "$MNT/threads/t/messages.jsonl"; do
    [ "$(stat -c %s "$f")" = "$(wc -c <"$f")" ] || return 1
    [ "$(grep -o '"seq":[0-9]*,' "$f" | cut -d: -f2 | tr -d ',' | tr '\n' ' ')" = "$(seq -s ' ' "$n") " ] || return 1
    grep '"seq":5,' "$f" | grep -q "$2" || return 1
  done
  [ "$(cat "$MNT/threads/t/message-count")" = "$n" ] || return 1
  grep -q "\"event_count\":$n," "$MNT/threads/t/runs/r/receipt.json" || return 1
  [ "$(grep -c '"seq":5,' "$MNT/search/$2")" = 1 ]
}

@test "a row put back with its old id, or a lower seq, or deleted and written again in one transaction: views, search and the change feed show it, across a remount" {
  local i top
  mkdir -p "$MNT/threads/t/runs/r"
  for i in $(seq 70); do ev_human "word${i}z" "$i"; done >>"$MNT/threads/t/runs/r/events.jsonl"
  # What a mount keeps: sizes, counts, the search index (a whole block of rows), the feed's
  # numbers.
  cat "$MNT/threads/t/message-count" "$MNT/threads/t/runs/r/receipt.json" >/dev/null
  stat -c %s "$MNT/threads/t/events.jsonl" "$MNT/threads/t/runs/r/events.jsonl" "$MNT/threads/t/messages.jsonl" >/dev/null
  [ "$(wc -l <"$MNT/search/word5z")" = 1 ]
  # A backup of row 5, then DeerFlow's delete of it; the mount catches up.
  store_sql "CREATE TABLE bak AS SELECT * FROM run_events WHERE thread_id = 't' AND seq = 5"
  store_sql "DELETE FROM run_events WHERE thread_id = 't' AND seq = 5"
  wait_for 10 eval '[ "$(wc -l <"$MNT/threads/t/runs/r/events.jsonl")" = 69 ]'
  [ "$(wc -l <"$MNT/threads/t/events.jsonl")" = 69 ]
  [ "$(wc -l <"$MNT/search/word5z")" = 0 ]
  top=$(sed -n 's/^{"change":\([0-9]*\),.*/\1/p' "$MNT/changes.jsonl" | sort -n | tail -1)
  # Restored from the backup with its original (lower) id.
  store_sql "INSERT INTO run_events SELECT * FROM bak"
  wait_for 10 restored_ok 70 word5z || fail "the restored row is not shown: $(wc -l <"$MNT/threads/t/events.jsonl") lines in the thread, $(wc -l <"$MNT/threads/t/runs/r/events.jsonl") in the run, $(cat "$MNT/threads/t/message-count") messages counted"
  grep -q '"thread_id":"t","run_id":"r","upper_seq":70,"events":70' "$MNT/changes/since/$top" || fail "no change after $top for the restored row: $(cat "$MNT/changes.jsonl")"
  # Deleted again, then put back with a new id at its old seq.
  store_sql "DELETE FROM run_events WHERE thread_id = 't' AND seq = 5"
  wait_for 10 eval '[ "$(wc -l <"$MNT/threads/t/runs/r/events.jsonl")" = 69 ]'
  top=$(sed -n 's/^{"change":\([0-9]*\),.*/\1/p' "$MNT/changes.jsonl" | sort -n | tail -1)
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) SELECT thread_id, run_id, user_id, event_type, category, replace(content, 'word5z', 'newid5z'), event_metadata, seq, created_at FROM bak"
  wait_for 10 restored_ok 70 newid5z || fail "the row put back with a new id is not shown: $(wc -l <"$MNT/threads/t/events.jsonl") lines"
  grep -q '"thread_id":"t","run_id":"r","upper_seq":70,"events":70' "$MNT/changes/since/$top" || fail "no change after $top for the row put back"
  # Deleted and written again in one transaction, with other bytes and its old id.
  top=$(sed -n 's/^{"change":\([0-9]*\),.*/\1/p' "$MNT/changes.jsonl" | sort -n | tail -1)
  store_sql "BEGIN; DELETE FROM run_events WHERE thread_id = 't' AND seq = 5; INSERT INTO run_events SELECT id, thread_id, run_id, user_id, event_type, category, replace(content, 'word5z', 'again5z'), event_metadata, seq, created_at FROM bak; COMMIT;"
  wait_for 10 restored_ok 70 again5z || fail "the row written again in one transaction is not shown"
  grep -q '"thread_id":"t","run_id":"r","upper_seq":70,"events":70' "$MNT/changes/since/$top" || fail "no change after $top for the row written again"
  [ "$(wc -l <"$MNT/search/word5z")" = 0 ]
  # A later mount shows the same.
  runfs_unmount "$MNT"
  MOUNTS=()
  runfs_mount "$STORE" "$MNT"
  restored_ok 70 again5z
  cmp <("$RUNFS" cat "$STORE" threads/t/events.jsonl) "$MNT/threads/t/events.jsonl"
}

# row_at THREAD RUN SEQ CONTENT: another writer's row at a given seq.
row_at() {
  store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('$1', '$2', 'llm.error', 'trace', '$4', '{}', $3, '2026-03-05 00:00:00.000000')"
}

# replaced_under NAME SQL: a thread follower that was given run r2's rows (seqs 4-6) of thread
# NAME; SQL (another writer) replaces them by as many rows of r3 at the same seqs, of the same
# length. The follower ends with a history_changed line after what it was given (its reason
# says rows were replaced, or deleted where the hub saw the delete alone), and a new reader
# gets the new rows.
replaced_under() {
  local t=$1 f
  mkdir -p "$MNT/threads/$t/runs/r1"
  { ev_start; ev_human one; ev_human two; } >>"$MNT/threads/$t/runs/r1/events.jsonl"
  for f in 4 5 6; do row_at "$t" r2 "$f" "OLD-$f"; done
  timeout 60 cat "$MNT/threads/$t/follow.jsonl" >"$WORK/$t.follow" 2>"$WORK/$t.err" &
  local follower=$!
  PIDS+=("$follower")
  wait_for 10 grep -q '"seq":6,.*OLD-6' "$WORK/$t.follow" || fail "the follower was not given seq 6: $(cat "$WORK/$t.follow")"
  store_sql "$2"
  assert_equal "$(store_sql "SELECT group_concat(content) FROM (SELECT content FROM run_events WHERE thread_id = '$t' AND seq > 3 ORDER BY seq) x")" "NEW-4,NEW-5,NEW-6"
  wait "$follower" || fail "the follower did not end: $(cat "$WORK/$t.follow" "$WORK/$t.err")"
  run tail -n 1 "$WORK/$t.follow"
  assert_output --partial "\"event_type\":\"runfs.history_changed\",\"thread_id\":\"$t\",\"run_id\":null,\"after_seq\":6,\"deleted\":false,\"reason\":\"another writer "
  assert_equal "$(grep -o '"seq":[0-9]*' "$WORK/$t.follow" | cut -d: -f2 | tr '\n' ' ')" "1 2 3 4 5 6 "
  run bash -c "timeout 10 head -n 6 '$MNT/threads/$t/follow.jsonl' | tail -n 3"
  assert_output --partial '"run_id":"r3","seq":4,'
  assert_output --partial 'NEW-6'
}

@test "a follower given rows another writer replaced at the same seqs, in one transaction or two back to back, ends with history_changed" {
  local del="DELETE FROM run_events WHERE thread_id = '@' AND run_id = 'r2'"
  local ins="INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('@', 'r3', 'llm.error', 'trace', 'NEW-4', '{}', 4, '2026-03-05 00:00:00.000000'), ('@', 'r3', 'llm.error', 'trace', 'NEW-5', '{}', 5, '2026-03-05 00:00:00.000000'), ('@', 'r3', 'llm.error', 'trace', 'NEW-6', '{}', 6, '2026-03-05 00:00:00.000000')"
  # One transaction.
  replaced_under one "BEGIN; ${del//@/one}; ${ins//@/one}; COMMIT;"
  # DeerFlow's delete_by_run, then its put: two transactions back to back.
  replaced_under two "${del//@/two}; ${ins//@/two};"
}

@test "a read right after another writer's UPDATE lengthens a row of a log the kernel keeps gives one rendering, not old pages then new bytes" {
  skip_on_pg "the UPDATE and the read in one process, through Python's sqlite3, to meet within the hub's tick"
  # 1500 rows of some 200 bytes: about 75 pages, the last one partly filled.
  python3 -c "
import json
for i in range(1500): print(json.dumps({'event_type':'llm.error','content':'apple banana %d ' % i + 'x' * 150}))" > "$WORK/lines.jsonl"
  "$RUNFS" put -q --batch 500 "$STORE" t r "$WORK/lines.jsonl"
  local f=$MNT/threads/t/runs/r/events.jsonl n bad=0
  # quiet: the log changed over 2 s ago (RFS_LIVE_NS), so the kernel keeps its pages.
  quiet() { python3 -c 'import os, sys, time; sys.exit(time.time() - os.stat(sys.argv[1]).st_mtime <= 2.2)' "$f"; }
  for n in $(seq 1 6); do
    wait_for 10 quiet || fail "the log stayed live"
    cat "$f" "$f" > /dev/null
    "$RUNFS" cat "$STORE" threads/t/runs/r/events.jsonl > "$WORK/old"
    # The UPDATE and the read back to back, as a writer and a reader meet: the row grows by
    # a byte, so every byte after it moves, which an append's new tail would not explain.
    python3 -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
db.execute(\"UPDATE run_events SET content = content || 'Q' WHERE thread_id = 't' AND seq = ?\", (int(sys.argv[3]),))
db.commit()
db.close()
sys.stdout.buffer.write(open(sys.argv[2], 'rb').read())" "$STORE" "$f" $((30 + n)) > "$WORK/got"
    "$RUNFS" cat "$STORE" threads/t/runs/r/events.jsonl > "$WORK/new"
    cmp -s "$WORK/got" "$WORK/old" || cmp -s "$WORK/got" "$WORK/new" || {
      bad=$((bad + 1))
      echo "# round $n: $(stat -c %s "$WORK/got") bytes read, neither rendering: $(cmp "$WORK/got" "$WORK/new" | head -1)" >&3
    }
  done
  [ "$bad" -eq 0 ] || fail "$bad of 6 reads mixed the kernel's old pages with the rewritten rows' bytes"
}

@test "a row another writer inserts at the id of a deleted runfs row is rendered, not copied as runfs's canonical bytes" {
  local id
  for i in 1 2 3; do printf '{"event_type":"llm.error","content":"row%s"}\n' "$i"; done |
    "$RUNFS" put -q "$STORE" t r
  id=$(store_sql "SELECT id FROM run_events WHERE thread_id = 't' AND seq = 2")
  [ -n "$id" ] || fail "no id for seq 2"
  # A freed id in the middle of the rows runfs stored, given again by hand: the row's
  # metadata is not canonical (a newline, a space) and its seq is new.
  local at='2026-03-04 06:00:00.000000'
  [ "$RUNFS_BACKEND" = pg ] && at='2026-03-04 06:00:00+00'
  store_sql "DELETE FROM run_events WHERE id = $id"
  store_sql "INSERT INTO run_events (id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ($id, 't', 'r9', NULL, 'llm.error', 'trace', 'zzz', '{\"a\":
 1}', 100, '$at')"
  "$RUNFS" cat "$STORE" threads/t/events.jsonl > "$WORK/got"
  [ "$(wc -l < "$WORK/got")" = 3 ] || fail "3 events must be 3 lines: $(cat "$WORK/got")"
  grep -qF '"run_id":"r9","seq":100,"event_type":"llm.error","category":"trace","content":"zzz","metadata":{"a":1},' "$WORK/got" ||
    fail "the row is not in its canonical form: $(cat "$WORK/got")"
  # Search matches the line as events.jsonl shows it.
  [ "$("$RUNFS" search "$STORE" ':1}' | wc -l)" = 1 ] || fail "search does not find the row by its canonical bytes"
  # The mount beside it learns of the foreign rows within its hub's tick.
  wait_for 10 cmp -s "$WORK/got" "$MNT/threads/t/events.jsonl" ||
    fail "the mount's bytes differ from runfs cat's: $(cat "$MNT/threads/t/events.jsonl")"
}

# pg_session_open NAME: a psql session on the store reading statements from the FIFO
# $WORK/NAME.fifo, so a transaction stays open until the test writes its COMMIT.
pg_session_open() {
  rm -f "$WORK/$1.fifo"
  mkfifo "$WORK/$1.fifo"
  PGOPTIONS='-c client_min_messages=warning' psql -X -q -At -v ON_ERROR_STOP=1 -d "$STORE" -f "$WORK/$1.fifo" > "$WORK/$1.out" 2>&1 &
  PIDS+=($!)
}
# locks GRANTED TYPE: some session of the store's database holds (t) or waits for (f) a lock
# of TYPE.
# writer_open: a session of the store's database is in a transaction that used run_events.
writer_open() {
  [ "$(store_sql "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND query LIKE '%run_events%'")" -gt 0 ]
}
locks() {
  [ "$(store_sql "SELECT count(*) FROM pg_locks WHERE granted = '$1' AND locktype = '$2' AND (database IS NULL OR database = (SELECT oid FROM pg_database WHERE datname = current_database()))")" -gt 0 ]
}

@test "a DELETE or UPDATE by a writer without DeerFlow's lock while a mount catches the thread up is in the totals after: its mark is not cleared under it" {
  on_pg || skip "PostgreSQL only: SQLite has one writer at a time"
  local R=$MNT/threads/t/runs/r1 kind stmt
  mkdir -p "$R"
  for i in $(seq 20); do ev_human "row $i" "$i"; done >> "$R/events.jsonl"
  for kind in delete update; do
    case $kind in
      delete) stmt="DELETE FROM run_events WHERE thread_id = 't' AND seq = (SELECT min(seq) + 2 FROM run_events WHERE thread_id = 't');" ;;
      update) stmt="UPDATE run_events SET content = content || repeat('x', 100) WHERE thread_id = 't' AND seq = (SELECT min(seq) + 4 FROM run_events WHERE thread_id = 't');" ;;
    esac
    # DeerFlow's writer holds the thread's lock; another writer's row marks the thread.
    pg_session_open l
    exec 7>"$WORK/l.fifo"
    echo "BEGIN; SELECT pg_advisory_xact_lock(hashtext(CAST('t' AS text))::bigint);" >&7
    store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) SELECT 't', 'r1', 'llm.error', 'trace', 'another writer $kind', '{}', max(seq) + 1, '2026-03-05 00:00:00' FROM run_events WHERE thread_id = 't'"
    # A read of the thread waits to catch it up under that lock.
    wait_for 10 locks t advisory || fail "DeerFlow's writer did not take the thread's lock"
    cat "$MNT/threads/t/events.jsonl" > /dev/null &
    local reader=$!
    wait_for 10 locks f advisory || fail "the read did not wait for the thread's lock"
    # A writer without the lock changes a row (its trigger marks the thread) and stays open
    # while the catch-up reads the rows; then both commit.
    pg_session_open d
    exec 8>"$WORK/d.fifo"
    echo "BEGIN; $stmt" >&8
    wait_for 10 writer_open ||
      fail "the $kind did not run"
    echo "COMMIT;" >&7
    exec 7>&-
    # The catch-up now meets the open writer's row lock on the thread's mark.
    wait_for 10 locks f transactionid || fail "the catch-up did not wait for the $kind's transaction"
    echo "COMMIT;" >&8
    exec 8>&-
    wait "$reader"
    wait_for 10 bash -c "[ \$(stat -c %s '$MNT/threads/t/events.jsonl') -eq \$('$RUNFS' cat '$STORE' threads/t/events.jsonl | wc -c) ]" ||
      fail "after the $kind events.jsonl's st_size is $(stat -c %s "$MNT/threads/t/events.jsonl"), runfs cat gives $("$RUNFS" cat "$STORE" threads/t/events.jsonl | wc -c) bytes"
    [ "$(cat "$MNT/threads/t/runs/r1/events.jsonl" | wc -c)" -eq "$("$RUNFS" cat "$STORE" threads/t/runs/r1/events.jsonl | wc -c)" ] ||
      fail "after the $kind the run's events.jsonl reads other bytes than runfs cat"
  done
}

@test "a read-only mount renders a row another writer put back at a runfs row's id above the insert trigger's watermark, not the range's copy" {
  on_pg || skip "PostgreSQL only: the insert trigger's watermark on DeerFlow's table"
  local ro=$WORK/ro
  mkdir -p "$MNT/threads/t/runs/r"
  for i in 1 2 3; do ev_human "word${i}" "$i"; done >>"$MNT/threads/t/runs/r/events.jsonl"
  runfs_unmount "$MNT"
  # runfs's rows: above the watermark, in a runfs_canon range.
  [ "$(store_sql "SELECT id FROM run_events WHERE thread_id = 't' AND seq = 2")" -gt "$(store_sql "SELECT value FROM runfs_meta WHERE key = 'tail_from'")" ]
  [ "$(store_sql "SELECT count(*) FROM runfs_canon c, run_events e WHERE e.thread_id = 't' AND e.seq = 2 AND e.id BETWEEN c.lo AND c.hi")" = 1 ]
  # Deleted and written again with its id by hand: metadata with a raw newline, which runfs
  # would never store as is (copied as canonical, it splits the line).
  store_sql "BEGIN; CREATE TABLE bak AS SELECT * FROM run_events WHERE thread_id = 't' AND seq = 2; DELETE FROM run_events WHERE thread_id = 't' AND seq = 2; INSERT INTO run_events (id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) SELECT id, thread_id, run_id, user_id, 'llm.error', 'error', E'put\nback', E'{\n\"k\": 1}', seq, created_at FROM bak; COMMIT;"
  runfs_mount "$STORE" "$ro" -o ro
  # Three lines, each one JSON object, the second the row as it is now.
  run python3 -c '
import json, sys
ls = open(sys.argv[1], "rb").read().split(b"\n")
assert ls[-1] == b"" and len(ls) == 4, ls
ds = [json.loads(l) for l in ls[:-1]]
assert ds[1]["content"] == "put\nback" and ds[1]["metadata"] == {"k": 1}, ds[1]
print("ok")' "$ro/threads/t/runs/r/events.jsonl"
  assert_output ok
}
