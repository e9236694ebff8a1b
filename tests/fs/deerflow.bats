#!/usr/bin/env bats
# deerflow.bats — a database written by DeerFlow mounts as is, and rows DeerFlow adds or
# deletes while it is mounted show up in the files without a runfs write.
load lib

# A copy of DeerFlow's sample (../shared/reference/deerflow/sample), written by DeerFlow's own code.
SAMPLE=$BATS_TEST_DIRNAME/../data/deerflow-sample.db

setup() {
  WORK=$(mktemp -d "${RUNFS_TEST_ROOT:-${TMPDIR:-/tmp}}/runfs-bats.XXXXXX")
  MOUNTS=()
  cp "$SAMPLE" "$WORK/df.db"
  STORE=$WORK/df.db
  MNT=$WORK/mnt
  runfs_mount "$STORE" "$MNT"
}
teardown() { runfs_teardown; }

lines() { wc -l < "$1"; }

@test "DeerFlow's sample mounts: its threads, runs and events, owner shown" {
  run ls "$MNT/threads"
  assert_output "$(printf 'thread-a\nthread-b')"
  run ls "$MNT/threads/thread-a/runs"
  assert_output "$(printf 'run-1\nrun-2')"
  [ "$(lines "$MNT/threads/thread-a/events.jsonl")" -eq 24 ]
  [ "$(lines "$MNT/threads/thread-b/events.jsonl")" -eq 12 ]
  run head -1 "$MNT/threads/thread-a/events.jsonl"
  assert_output '{"thread_id":"thread-a","run_id":"run-1","seq":1,"event_type":"run.start","category":"trace","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"},"created_at":"2026-03-04T05:06:07.123456+00:00","user_id":"alice"}'
  # DeerFlow's own table is untouched: same rows, same bytes
  run sqlite3 "$STORE" "SELECT count(*) FROM run_events"
  assert_output 36
}

@test "a row DeerFlow inserts while mounted appears; one it deletes disappears" {
  f=$MNT/threads/thread-a/events.jsonl
  [ "$(lines "$f")" -eq 24 ]
  sqlite3 "$STORE" "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('thread-a','run-2','alice','llm.error','trace','boom from deerflow','{}',25,'2026-03-04 06:00:00.000000')"
  wait_for 5 bash -c "[ \$(wc -l < '$f') -eq 25 ]"
  r=$MNT/threads/thread-a/runs/run-2/events.jsonl
  wait_for 5 bash -c "tail -1 '$r' | grep -q 'boom from deerflow'"
  run tail -1 "$r"
  assert_output --partial '"seq":25,"event_type":"llm.error","category":"trace","content":"boom from deerflow"'
  sqlite3 "$STORE" "DELETE FROM run_events WHERE thread_id = 'thread-a' AND seq = 2"
  wait_for 5 bash -c "[ \$(wc -l < '$f') -eq 24 ]"
  run grep -c '"seq":2,' "$f"
  assert_output 0
  # once the hub has recomputed the thread, its size is again the bytes it reads
  wait_for 5 bash -c "[ \$(stat -c %s '$f') -eq \$(cat '$f' | wc -c) ]"
}

@test "appending through the mount continues DeerFlow's seq" {
  ev_error "after deerflow" >> "$MNT/threads/thread-a/runs/run-2/events.jsonl"
  run tail -1 "$MNT/threads/thread-a/events.jsonl"
  assert_output --partial '"seq":25,"event_type":"llm.error"'
  run sqlite3 "$STORE" "SELECT seq FROM run_event_thread_seq WHERE thread_id = 'thread-a'"
  assert_output 25
}
