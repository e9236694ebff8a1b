#!/usr/bin/env bats
# deerflow.bats — a database written by DeerFlow mounts as is, and rows DeerFlow adds or
# deletes while it is mounted show up in the files without a runfs write. On PostgreSQL the
# sample's rows go into DeerFlow's own PostgreSQL table in a fresh database (nothing else).
load lib

# A copy of DeerFlow's sample (../shared/reference/deerflow/sample), written by DeerFlow's own code.
SAMPLE=$BATS_TEST_DIRNAME/../data/deerflow-sample.db

setup() {
  WORK=$(mktemp -d "${RUNFS_TEST_ROOT:-${TMPDIR:-/tmp}}/runfs-bats.XXXXXX")
  MOUNTS=()
  cp "$SAMPLE" "$WORK/df.db"
  STORE=$WORK/df.db
  if on_pg; then
    chmod 755 "$WORK"
    pg_fresh_store
    store_sql "$(cat "$BATS_TEST_DIRNAME/../data/deerflow-schema-postgresql.sql")"
    sqlite3 -csv "$WORK/df.db" "SELECT id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at FROM run_events ORDER BY id" |
      PGTZ=UTC psql -X -q -v ON_ERROR_STOP=1 -d "$STORE" -c "\copy run_events (id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) FROM STDIN WITH (FORMAT csv)"
    store_sql "SELECT setval('run_events_id_seq', (SELECT max(id) FROM run_events))" >/dev/null
  fi
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
  run store_sql "SELECT count(*) FROM run_events"
  assert_output 36
}

@test "a row DeerFlow inserts while mounted appears; one it deletes disappears" {
  f=$MNT/threads/thread-a/events.jsonl
  [ "$(lines "$f")" -eq 24 ]
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('thread-a','run-2','alice','llm.error','trace','boom from deerflow','{}',25,'2026-03-04 06:00:00.000000')"
  wait_for 5 bash -c "[ \$(wc -l < '$f') -eq 25 ]"
  r=$MNT/threads/thread-a/runs/run-2/events.jsonl
  wait_for 5 bash -c "tail -1 '$r' | grep -q 'boom from deerflow'"
  run tail -1 "$r"
  assert_output --partial '"seq":25,"event_type":"llm.error","category":"trace","content":"boom from deerflow"'
  store_sql "DELETE FROM run_events WHERE thread_id = 'thread-a' AND seq = 2"
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
  run store_sql "SELECT seq FROM run_event_thread_seq WHERE thread_id = 'thread-a'"
  assert_output 25
}

# DeerFlow's delete_by_thread / delete_by_run as its store runs them: plain row deletes.
df_delete() { store_sql "DELETE FROM run_events WHERE $1"; }

@test "a thread DeerFlow empties disappears and starts again at 1; a run it deletes disappears" {
  ev_error one >> "$MNT/threads/thread-b/runs/run-1/events.jsonl"
  df_delete "thread_id = 'thread-a' AND run_id = 'run-2'"
  wait_for 5 bash -c "[ \"\$(ls '$MNT/threads/thread-a/runs')\" = run-1 ]"
  df_delete "thread_id = 'thread-b'"
  wait_for 5 bash -c "[ \"\$(ls '$MNT/threads')\" = thread-a ]"
  wait_for 5 bash -c "[ ! -e '$MNT/threads/thread-b' ]"      # once the kernel's entry expires
  mkdir -p "$MNT/threads/thread-b/runs/run-9"
  ev_error again >> "$MNT/threads/thread-b/runs/run-9/events.jsonl"
  run cat "$MNT/threads/thread-b/events.jsonl"
  assert_output --partial '"seq":1,"event_type":"llm.error"'
  # thread-a lost its newest run: its seq never goes back
  ev_error after >> "$MNT/threads/thread-a/runs/run-1/events.jsonl"
  run tail -1 "$MNT/threads/thread-a/events.jsonl"
  assert_output --partial '"seq":25,'
  # and after a remount, nothing comes back
  runfs_unmount "$MNT"
  MOUNTS=()
  runfs_mount "$STORE" "$MNT"
  run ls "$MNT/threads/thread-a/runs"
  assert_output run-1
}

@test "an owner's rows DeerFlow deleted: that owner's mount no longer lists or reads the thread" {
  MNT2=$WORK/alice
  runfs_mount "$STORE" "$MNT2" --user alice
  store_sql "UPDATE run_events SET user_id = 'bob' WHERE thread_id = 'thread-b' AND seq > 6"
  run ls "$MNT2/threads"
  assert_output "$(printf 'thread-a\nthread-b')"
  # DeerFlow's delete_by_thread(user_id='alice')
  df_delete "thread_id = 'thread-b' AND user_id = 'alice'"
  wait_for 5 bash -c "[ \"\$(ls '$MNT2/threads')\" = thread-a ]"
  run cat "$MNT2/threads/thread-b/events.jsonl"
  assert_failure
  assert_output --partial "No such file or directory"
  # bob's rows stay, and the thread's seq goes on from its mark
  run cat "$MNT/threads/thread-b/events.jsonl"
  assert_output --partial '"user_id":"bob"'
  runfs_unmount "$MNT2"
  runfs_mount "$STORE" "$MNT2" --user alice
  run ls "$MNT2/threads"
  assert_output thread-a
}

@test "a metadata key content_is_json or content_is_dict is EINVAL (it would be lost), nothing stored" {
  f=$MNT/threads/thread-a/runs/run-2/events.jsonl
  before=$(store_snapshot)
  for k in content_is_json content_is_dict; do
    run bash -c "printf '%s\n' '{\"event_type\":\"llm.error\",\"content\":\"x\",\"metadata\":{\"$k\":true}}' >> '$f'"
    assert_failure
    assert_output --partial "Invalid argument"
  done
  [ "$(store_snapshot)" = "$before" ]
  run grep -c "is a storage marker reserved by the store" "$MNT/.runfs/rejects.jsonl"
  assert_output 2
}

@test "the first mount of a DeerFlow database says on a terminal how its indexing goes; later mounts and no terminal say nothing" {
  skip_on_pg "mkdeerflow.py writes a SQLite file"
  python3 "$BATS_TEST_DIRNAME/mkdeerflow.py" "$WORK/big.db" t 50000
  cp "$WORK/big.db" "$WORK/quiet.db"
  mkdir -p "$WORK/m1" "$WORK/m2" "$WORK/m3"
  MOUNTS+=("$WORK/m1")
  run script -qec "timeout 60 '$RUNFS' mount '$WORK/big.db' '$WORK/m1'" /dev/null
  assert_success
  assert_output --regexp "indexing: 50000 rows in [0-9]+\.[0-9] s"
  [ "$(cat "$WORK/m1/threads/t/seq")" -eq 50000 ]
  runfs_unmount "$WORK/m1"
  # indexed once, by the first mount: the next one has nothing to say
  MOUNTS+=("$WORK/m2")
  run script -qec "timeout 60 '$RUNFS' mount '$WORK/big.db' '$WORK/m2'" /dev/null
  assert_success
  assert_output ""
  # not a terminal: nothing at all, and the rows are indexed as well
  MOUNTS+=("$WORK/m3")
  run bash -c "timeout 60 '$RUNFS' mount '$WORK/quiet.db' '$WORK/m3' 2>&1"
  assert_success
  assert_output ""
  [ "$(cat "$WORK/m3/threads/t/seq")" -eq 50000 ]
  [ "$(stat -c %s "$WORK/m3/threads/t/events.jsonl")" -eq "$(cat "$WORK/m3/threads/t/events.jsonl" | wc -c)" ]
}
