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
}

teardown() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  runfs_teardown
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# gone_within MS PATH: PATH stops existing within MS milliseconds (polled every 10 ms).
gone_within() {
  local limit=$(($(now_ms) + $1))
  while [ -e "$2" ]; do
    [ "$(now_ms)" -lt "$limit" ] || return 1
    sleep 0.01
  done
}

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
