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
    RUNFS_PG_TEMPLATE= pg_fresh_store  # DeerFlow's table alone, as DeerFlow makes it
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
  # the next append continues the mount's last one: the mark it raises is known to be there
  ev_error "again" >> "$MNT/threads/thread-a/runs/run-2/events.jsonl"
  run store_sql "SELECT seq FROM run_event_thread_seq WHERE thread_id = 'thread-a'"
  assert_output 26
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

@test "the mount indexed nothing; a thread is indexed at its first use, with rows DeerFlow added before it; listing and counts index nothing" {
  # the mount in setup() was this database's first: the side tables hold no logs yet
  logs() { store_sql "SELECT (SELECT count(*) FROM runfs_run) + (SELECT count(*) FROM runfs_mark) + (SELECT count(*) FROM runfs_owner)"; }
  [ "$(logs)" -eq 0 ]
  # DeerFlow writes to a thread nobody has looked at, and starts another
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('thread-b','run-2','alice','llm.error','trace','late','{}',13,'2026-03-04 06:00:00.000000'), ('thread-c','run-1','carol','llm.error','trace','new','{}',1,'2026-03-04 06:00:01.000000')"
  run ls "$MNT/threads"
  assert_output "$(printf 'thread-a\nthread-b\nthread-c')"
  run cat "$MNT/.runfs/status.json"
  assert_output --partial '"threads":3,"runs":5,"events":38'
  [ "$(logs)" -eq 0 ]
  # one thread used: its logs only, and its bytes are what a reader renders from the rows
  [ "$(lines "$MNT/threads/thread-b/events.jsonl")" -eq 13 ]
  [ "$(stat -c %s "$MNT/threads/thread-b/runs/run-2/events.jsonl")" -eq "$(wc -c < "$MNT/threads/thread-b/runs/run-2/events.jsonl")" ]
  run store_sql "SELECT count(*) FROM runfs_run WHERE thread_key = (SELECT thread_key FROM runfs_thread WHERE thread_id = 'thread-b')"
  assert_output 2
  run store_sql "SELECT count(*) FROM runfs_run WHERE thread_key IN (SELECT thread_key FROM runfs_thread WHERE thread_id <> 'thread-b')"
  assert_output 0
  cmp "$MNT/threads/thread-b/events.jsonl" <("$RUNFS" cat "$STORE" threads/thread-b/events.jsonl)
  # a read-only mount of it indexes the others in memory only
  before=$(store_sql "SELECT count(*), coalesce(sum(size), 0) FROM runfs_thread")
  runfs_mount "$STORE" "$WORK/ro" -o ro
  [ "$(lines "$WORK/ro/threads/thread-a/events.jsonl")" -eq 24 ]
  cmp "$WORK/ro/threads/thread-a/runs/run-2/events.jsonl" <("$RUNFS" cat "$STORE" threads/thread-a/runs/run-2/events.jsonl)
  [ "$(cat "$WORK/ro/threads/thread-c/seq")" -eq 1 ]
  [ "$(store_sql "SELECT count(*), coalesce(sum(size), 0) FROM runfs_thread")" = "$before" ]
  run store_sql "SELECT count(*) FROM runfs_run WHERE thread_key IN (SELECT thread_key FROM runfs_thread WHERE thread_id <> 'thread-b')"
  assert_output 0
}

@test "a DeerFlow database mounts without indexing; a thread is indexed at its first use, rows DeerFlow adds meanwhile included" {
  skip_on_pg "mkdeerflow.py writes a SQLite file"
  python3 "$BATS_TEST_DIRNAME/mkdeerflow.py" "$WORK/big.db" t 50000
  for t in u v w; do python3 "$BATS_TEST_DIRNAME/mkdeerflow.py" "$WORK/big.db" "$t" 1000; done
  cp "$WORK/big.db" "$WORK/copy.db"
  mkdir -p "$WORK/m1"
  MOUNTS+=("$WORK/m1")
  # nothing to index, so nothing to say, even on a terminal
  run script -qec "timeout 60 '$RUNFS' mount '$WORK/big.db' '$WORK/m1'" /dev/null
  assert_success
  assert_output ""
  indexed() { sqlite3 "$WORK/big.db" "SELECT group_concat(thread_id, ' ') FROM (SELECT thread_id FROM runfs_thread ORDER BY thread_id)"; }
  [ "$(indexed)" = "" ]
  [ "$(sqlite3 "$WORK/big.db" "SELECT (SELECT count(*) FROM runfs_run) + (SELECT count(*) FROM runfs_mark) + (SELECT count(*) FROM runfs_owner)")" -eq 0 ]
  # listing and counting every thread indexes none of them
  run ls "$WORK/m1/threads"
  assert_output "$(printf 't\nu\nv\nw')"
  run cat "$WORK/m1/.runfs/status.json"
  assert_output --partial '"threads":4,"runs":5300,"events":53000'
  [ "$(indexed)" = "" ]
  # a look at one thread indexes that one only; its bytes are runfs cat's of the file
  # nobody mounted (a reader, which indexes in memory and changes nothing)
  before=$(sha256sum < "$WORK/copy.db")
  [ "$(cat "$WORK/m1/threads/u/seq")" -eq 1000 ]
  [ "$(indexed)" = "u" ]
  cmp "$WORK/m1/threads/u/events.jsonl" <("$RUNFS" cat "$WORK/copy.db" threads/u/events.jsonl)
  cmp "$WORK/m1/threads/u/runs/run-7/events.jsonl" <("$RUNFS" cat "$WORK/copy.db" threads/u/runs/run-7/events.jsonl)
  [ "$(sha256sum < "$WORK/copy.db")" = "$before" ]
  # DeerFlow adds rows to a thread nobody has looked at (and deletes some of another's):
  # its first use shows them
  sqlite3 "$WORK/big.db" "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('v', 'run-101', 'llm.error', 'trace', 'late', '{}', 1001, '2026-03-05 00:00:00.000000'), ('v', 'run-101', 'llm.error', 'trace', 'later', '{}', 1002, '2026-03-05 00:00:01.000000'); DELETE FROM run_events WHERE thread_id = 'w' AND run_id = 'run-100'"
  [ "$(indexed)" = "u" ]
  [ "$(wc -l < "$WORK/m1/threads/v/events.jsonl")" -eq 1002 ]
  [ "$(stat -c %s "$WORK/m1/threads/v/events.jsonl")" -eq "$(wc -c < "$WORK/m1/threads/v/events.jsonl")" ]
  cmp "$WORK/m1/threads/v/events.jsonl" <("$RUNFS" cat "$WORK/big.db" threads/v/events.jsonl)
  run ls "$WORK/m1/threads/w/runs"
  refute_output --partial run-100
  [ "$(wc -l < "$WORK/m1/threads/w/events.jsonl")" -eq 990 ]
  # a write to a thread not indexed yet (another process's, beside the mount) indexes it
  # first: the seq follows DeerFlow's rows; then one through the mount
  [ "$(indexed)" = "u v w" ]
  ev_error "from runfs put" | "$RUNFS" put -q "$WORK/big.db" t run-9999
  [ "$(indexed)" = "t u v w" ]
  mkdir -p "$WORK/m1/threads/t/runs/run-9999"
  ev_error "from the mount" >> "$WORK/m1/threads/t/runs/run-9999/events.jsonl"
  [ "$(cat "$WORK/m1/threads/t/seq")" -eq 50002 ]
  [ "$(wc -l < "$WORK/m1/threads/t/events.jsonl")" -eq 50002 ]
  cmp "$WORK/m1/threads/t/events.jsonl" <("$RUNFS" cat "$WORK/big.db" threads/t/events.jsonl)
  runfs_unmount "$WORK/m1"
  # the next mount finds them indexed and says nothing either
  MOUNTS+=("$WORK/m2")
  mkdir -p "$WORK/m2"
  run script -qec "timeout 60 '$RUNFS' mount '$WORK/big.db' '$WORK/m2'" /dev/null
  assert_success
  assert_output ""
  [ "$(cat "$WORK/m2/threads/t/seq")" -eq 50002 ]
}

@test "two mounts index a thread at its first use while DeerFlow inserts and deletes rows in it" {
  local db=$WORK/busy.db
  if on_pg; then
    db=$STORE
    store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) SELECT 't', 'run-' || ((g - 1) / 10 + 1), 'llm.error', 'trace', 'row ' || g, '{}', g, '2026-03-04 05:00:00' FROM generate_series(1, 20000) g"
  else
    python3 "$BATS_TEST_DIRNAME/mkdeerflow.py" "$db" t 20000
    python3 "$BATS_TEST_DIRNAME/mkdeerflow.py" "$db" z 100
    sqlite3 "$db" "PRAGMA journal_mode=WAL" >/dev/null
  fi
  runfs_mount "$db" "$WORK/b1"
  runfs_mount "$db" "$WORK/b2"
  # DeerFlow's writer: a row per transaction (seq = MAX + 1; on PostgreSQL under its
  # advisory lock of the thread), and delete_by_run of two runs
  if on_pg; then
    for i in $(seq 0 299); do
      printf "BEGIN; SELECT pg_advisory_xact_lock(hashtext(CAST('t' AS text))::bigint); INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) SELECT 't', 'run-late', 'llm.error', 'trace', 'late %s', '{}', max(seq) + 1, now() FROM run_events WHERE thread_id = 't';" "$i"
      case $i in 100 | 200) printf " DELETE FROM run_events WHERE thread_id = 't' AND run_id = 'run-%s';" $((i / 100 + 4)) ;; esac
      printf ' COMMIT;\n'
    done > "$WORK/writer.sql"
    PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$WORK/writer.sql" >/dev/null &
  else
    python3 - "$db" <<'PY' &
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
for i in range(300):
    db.execute("BEGIN IMMEDIATE")
    seq = db.execute("SELECT max(seq) FROM run_events WHERE thread_id = 't'").fetchone()[0] + 1
    db.execute("INSERT INTO run_events (thread_id, run_id, event_type, category, content, "
               "event_metadata, seq, created_at) VALUES ('t', 'run-late', 'llm.error', 'trace', ?, "
               "'{}', ?, '2026-03-05 00:00:00.000000')", ("late %d" % i, seq))
    if i in (100, 200):
        db.execute("DELETE FROM run_events WHERE thread_id = 't' AND run_id = ?", ("run-%d" % (i // 100 + 4),))
    db.execute("COMMIT")
    time.sleep(0.002)
PY
  fi
  writer=$!
  # first uses on both mounts while it writes; a read of the log across one of its deletes
  # (a rewrite of the reader's own thread) is failed with ESTALE, the man page's answer, and
  # read again from the start
  cat "$WORK/b1/threads/t/seq" >/dev/null
  local i got
  for i in 1 2 3 4 5 6 7 8; do
    got=$(cat "$WORK/b2/threads/t/events.jsonl" 2>&1 >/dev/null) && break
    [[ $got == *"Stale file handle"* ]] || fail "first read of events.jsonl: $got, not ESTALE"
  done
  [ -z "$got" ] || fail "eight reads of events.jsonl across the writer all ended with ESTALE"
  ls "$WORK/b1/threads/t/runs" >/dev/null
  wait "$writer"
  want=$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 't'" "$db")
  [ "$want" -eq 20280 ]
  for m in b1 b2; do
    f=$WORK/$m/threads/t/events.jsonl
    wait_for 10 bash -c "[ \$(wc -l < '$f') -eq $want ] && [ \$(stat -c %s '$f') -eq \$(wc -c < '$f') ]"
    cmp "$f" <("$RUNFS" cat "$db" threads/t/events.jsonl)
    [ "$(ls "$WORK/$m/threads/t/runs" | grep -cx 'run-[56]')" -eq 0 ]
    [ "$(cat "$WORK/$m/threads/t/seq")" -eq 20300 ]
  done
}

# df_thread THREAD ROWS [USER]: DeerFlow's rows of a new thread, in runs of 10, written by SQL.
df_thread() {
  local u=${3:+"'$3'"}
  if on_pg; then
    store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) SELECT '$1', 'run-' || ((g - 1) / 10 + 1), ${u:-NULL}, 'llm.error', 'trace', 'row ' || g, '{}', g, '2026-03-04 05:00:00' FROM generate_series(1, $2) g"
  else
    store_sql "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $2) INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) SELECT '$1', 'run-' || ((n - 1) / 10 + 1), ${u:-NULL}, 'llm.error', 'trace', 'row ' || n, '{}', n, '2026-03-04 05:00:00' FROM g"
  fi
}

@test "a --thread mount indexes its thread only; a --user mount lists only the threads holding that owner's rows" {
  df_thread t1 200
  df_thread t2 200 bob
  df_thread t3 200
  indexed() { store_sql "SELECT group_concat(thread_id) FROM (SELECT thread_id FROM runfs_thread WHERE count > 0 ORDER BY thread_id) x"; }
  runfs_mount "$STORE" "$WORK/s1" --thread t3
  run ls "$WORK/s1/threads"
  assert_output t3
  [ "$(wc -l < "$WORK/s1/threads/t3/events.jsonl")" -eq 200 ]
  run indexed
  assert_output t3
  runfs_mount "$STORE" "$WORK/s2" --user bob
  run ls "$WORK/s2/threads"
  assert_output t2
  run cat "$WORK/s2/.runfs/status.json"
  assert_output --partial '"threads":1,"runs":20,"events":200'
  [ "$(wc -l < "$WORK/s2/threads/t2/events.jsonl")" -eq 200 ]
  run indexed
  assert_output "t2,t3"
  # another's thread: looking it up indexes it, to learn it holds none of bob's rows
  run cat "$WORK/s2/threads/t1/seq"
  assert_failure
}
