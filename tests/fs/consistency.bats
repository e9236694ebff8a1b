#!/usr/bin/env bats
# consistency.bats — what a mount shows is the rows as they are, whatever another writer
# (sqlite3 / psql, a second mount) did to them: rows changed in place (every column), deleted
# or added, while mounted or while not; every file's stat size is its bytes, the same bytes
# `runfs cat` reads from the store afterwards; DeerFlow's table gets no constraint of runfs's.
load lib

setup() { runfs_setup; }
teardown() { runfs_teardown; }

TS="2026-01-01 00:00:00"

# sql_row THREAD RUN SEQ TYPE CATEGORY CONTENT [USER]: a row as another writer inserts it.
sql_row() {
  local user=${7:+\'$7\'}
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('$1', '$2', ${user:-NULL}, '$4', '$5', '$6', '{\"caller\": \"x\"}', $3, '$TS')"
}

# check_file MNT REL: stat size = bytes read = what `runfs cat` reads from the store.
check_file() {
  local f=$1/$2 size bytes
  size=$(stat -c %s "$f") || return 1
  bytes=$(wc -c < "$f") || return 1
  if [ "$size" != "$bytes" ]; then echo "# $2: stat $size, read $bytes" >&2; return 1; fi
  if ! cmp -s "$f" <("$RUNFS" cat "$STORE" "$2" 2>/dev/null); then
    echo "# $2: the mount and runfs cat differ" >&2
    return 1
  fi
}

# sized MNT THREAD: every file's stat size is its bytes, and the logs and receipts are what
# `runfs cat` reads (the rest of the views are compared by consistent).
sized() {
  local m=$1 rel size
  while IFS= read -r rel; do
    size=$(stat -c %s "$m/$rel") || return 1
    [ "$size" = "$(wc -c < "$m/$rel")" ] || { echo "# $rel: stat $size" >&2; return 1; }
    case $rel in
      */events.jsonl|*/messages.jsonl|*/receipt.json) check_file "$m" "$rel" || return 1 ;;
    esac
  done < <(cd "$m" && find "threads/$2" -type f | sort)
}

# consistent MNT THREAD...: every file of the threads passes check_file.
consistent() {
  local m=$1 t rel
  shift
  for t in "$@"; do
    while IFS= read -r rel; do
      check_file "$m" "$rel" || return 1
    done < <(cd "$m" && find "threads/$t" -type f | sort)
  done
}

# The thread's rows rendered by an independent reader (python3 over the database's rows):
# "seq|run_id|event_type|content" per line in seq order, for comparing with what is shown.
rows_of() {
  store_sql "SELECT seq || '|' || run_id || '|' || event_type || '|' || coalesce(user_id, '-') FROM run_events WHERE thread_id = '$1' ORDER BY seq"
}
shown_of() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    print("%s|%s|%s|%s" % (e["seq"], e["run_id"], e["event_type"], e.get("user_id") or "-"))
' "$1"
}

seed_thread() {
  mkdir -p "$MNT/threads/t1/runs/r1" "$MNT/threads/t1/runs/r2"
  { ev_start; ev_human "first question" 1; ev_ai "first answer" 1; } >> "$MNT/threads/t1/runs/r1/events.jsonl"
  { ev_start; ev_human "second question" 2; ev_ai "second answer" 2; } >> "$MNT/threads/t1/runs/r2/events.jsonl"
  ev_terminal success > "$MNT/threads/t1/runs/r1/once/run.terminal"
  consistent "$MNT" t1
}

# A thread of plain lines in one run, read once.
plain_thread() {
  mkdir -p "$MNT/threads/p/runs/r1"
  { ev_error a; ev_error b; ev_error c; } >> "$MNT/threads/p/runs/r1/events.jsonl"
  consistent "$MNT" p
}

@test "a row changed in place by another writer: every column, fresh bytes at the next read, sizes exact" {
  seed_thread
  local long
  long=$(printf 'x%.0s' $(seq 300))
  local -a updates=(
    "content = '{\"type\": \"human\", \"content\": \"$long\", \"id\": \"h-1\"}' WHERE seq = 2"
    "event_metadata = '{\"caller\": \"someone-else-entirely\"}' WHERE seq = 3"
    "event_type = 'llm.error', category = 'trace', content = 'turned into an error' WHERE seq = 6"
    "seq = 50 WHERE seq = 5"
    "run_id = 'r2' WHERE seq = 3"
    "created_at = '2030-05-05 05:05:05' WHERE seq = 1"
    "user_id = 'mallory' WHERE seq = 4"
  )
  local u
  for u in "${updates[@]}"; do
    cat "$MNT/threads/t1/events.jsonl" "$MNT/threads/t1/messages.jsonl" >/dev/null
    store_sql "UPDATE run_events SET $u AND thread_id = 't1'"
    # Within the change hub's tick: the rows as they are now, every size exact.
    wait_for 5 eval '[ "$(shown_of "$MNT/threads/t1/events.jsonl")" = "$(rows_of t1)" ]' ||
      fail "after UPDATE $u: events.jsonl shows $(shown_of "$MNT/threads/t1/events.jsonl"), the rows are $(rows_of t1)"
    wait_for 5 consistent "$MNT" t1 || { consistent "$MNT" t1; fail "after UPDATE $u: sizes or bytes disagree"; }
  done
  grep -q "$long" "$MNT/threads/t1/messages.jsonl" || fail "the longer content is not in messages.jsonl"
  grep -q someone-else-entirely "$MNT/threads/t1/runs/r2/events.jsonl" || fail "the moved row is not in r2"
  ! grep -q someone-else-entirely "$MNT/threads/t1/runs/r1/events.jsonl" || fail "the moved row is still in r1"
  # The receipt counts the run's rows as they are.
  local n
  n=$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 't1' AND run_id = 'r1'")
  run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["event_count"])' "$MNT/threads/t1/runs/r1/receipt.json"
  assert_output "$n"
  # The next append lands after the rows as they are, each line whole.
  ev_error "after the updates" >> "$MNT/threads/t1/runs/r1/events.jsonl"
  run tail -n 1 "$MNT/threads/t1/events.jsonl"
  assert_output --partial '"seq":51,"event_type":"llm.error","category":"trace","content":"after the updates"'
  python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$MNT/threads/t1/events.jsonl"
  consistent "$MNT" t1
  # And across a remount.
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  [ "$(shown_of "$MNT/threads/t1/events.jsonl")" = "$(rows_of t1)" ]
  consistent "$MNT" t1
}

@test "rows changed in place or deleted while nothing was mounted show at the next mount" {
  plain_thread
  runfs_unmount "$MNT"
  store_sql "UPDATE run_events SET content = 'changed while unmounted, and longer than it was' WHERE thread_id = 'p' AND seq = 2"
  runfs_mount "$STORE" "$MNT"
  grep -q "changed while unmounted" "$MNT/threads/p/events.jsonl"
  [ "$(shown_of "$MNT/threads/p/events.jsonl")" = "$(rows_of p)" ]
  consistent "$MNT" p
  runfs_unmount "$MNT"
  store_sql "DELETE FROM run_events WHERE thread_id = 'p' AND seq = 3"
  sql_row p r1 3 llm.error trace "put back in its place, different"
  runfs_mount "$STORE" "$MNT"
  grep -q "put back in its place" "$MNT/threads/p/runs/r1/events.jsonl"
  [ "$(shown_of "$MNT/threads/p/events.jsonl")" = "$(rows_of p)" ]
  consistent "$MNT" p
}

@test "a read-only mount sees rows another writer changes in place" {
  plain_thread
  local ro=$WORK/ro
  runfs_mount "$STORE" "$ro" -o ro
  consistent "$ro" p
  store_sql "UPDATE run_events SET content = 'changed under a reader, longer than it was' WHERE thread_id = 'p' AND seq = 2"
  wait_for 5 grep -q "changed under a reader" "$ro/threads/p/events.jsonl" ||
    fail "the read-only mount still shows the old bytes"
  wait_for 1 consistent "$ro" p || { consistent "$ro" p; fail "the reader's sizes or bytes disagree"; }
  # A second writer mount appends; the reader sees that too.
  ev_error "from the writer" >> "$MNT/threads/p/runs/r1/events.jsonl"
  wait_for 5 grep -q "from the writer" "$ro/threads/p/events.jsonl"
  wait_for 1 consistent "$ro" p
}

@test "-o ro of a PostgreSQL database runfs never opened sees rows another writer changes in place" {
  on_pg || skip "PostgreSQL only: no runfs trigger is installed there to tell of the UPDATE"
  runfs_unmount "$MNT"
  MOUNTS=()
  pg_admin "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null
  pg_admin "CREATE DATABASE $PG_DB" >/dev/null
  store_sql "CREATE TABLE run_events (id SERIAL NOT NULL, thread_id VARCHAR(64) NOT NULL, run_id VARCHAR(64) NOT NULL, user_id VARCHAR(64), event_type VARCHAR(32) NOT NULL, category VARCHAR(16) NOT NULL, content TEXT NOT NULL, event_metadata JSON NOT NULL, seq INTEGER NOT NULL, created_at TIMESTAMP WITH TIME ZONE NOT NULL, PRIMARY KEY (id), CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq))"
  local s
  for s in 1 2 3; do sql_row p r1 "$s" llm.error trace "row $s"; done
  local ro=$WORK/ro
  runfs_mount "$STORE" "$ro" -o ro
  consistent "$ro" p
  store_sql "UPDATE run_events SET content = 'changed under a reader, longer than it was' WHERE thread_id = 'p' AND seq = 2"
  wait_for 5 grep -q "changed under a reader" "$ro/threads/p/events.jsonl" ||
    fail "the read-only mount still shows the old bytes"
  wait_for 1 consistent "$ro" p || { consistent "$ro" p; fail "the reader's sizes or bytes disagree"; }
  store_sql "DELETE FROM run_events WHERE thread_id = 'p' AND seq = 1"
  wait_for 15 bash -c '! grep -q "row 1" "$1"' _ "$ro/threads/p/events.jsonl" ||
    fail "the read-only mount still shows a row another writer deleted"
  wait_for 1 consistent "$ro" p || { consistent "$ro" p; fail "sizes or bytes disagree after the delete"; }
  assert_equal "$(store_sql "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'runfs%'")" 0
}

@test "runfs adds no constraint to DeerFlow's run_events: a second run.terminal from another writer is stored" {
  seed_thread
  if on_pg; then
    run store_sql "SELECT indexname FROM pg_indexes WHERE tablename = 'run_events' AND indexdef LIKE 'CREATE UNIQUE%' ORDER BY 1"
    assert_output "$(printf 'run_events_pkey\nuq_events_thread_seq')"
  else
    run store_sql "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'run_events' AND sql LIKE 'CREATE UNIQUE%'"
    assert_output ""
  fi
  # DeerFlow's own code may write a second terminal (it enforces the singleton itself).
  sql_row t1 r1 20 run.terminal trace '{"status": "error"}'
  [ "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 't1' AND run_id = 'r1' AND event_type = 'run.terminal'")" = 2 ]
  # runfs still refuses a second one through the mount, inside its own write transaction.
  run bash -c "set -C; ev_terminal error > '$MNT/threads/t1/runs/r2/once/run.terminal'"
  assert_success
  run bash -c "set -C; ev_terminal error > '$MNT/threads/t1/runs/r2/once/run.terminal'"
  assert_failure
  [ "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 't1' AND run_id = 'r2' AND event_type = 'run.terminal'")" = 1 ]
  wait_for 5 consistent "$MNT" t1
}

# uq_terminal: how many indexes named runfs_uq_terminal the store holds.
uq_terminal() {
  if on_pg; then
    store_sql "SELECT count(*) FROM pg_indexes WHERE indexname = 'runfs_uq_terminal'"
  else
    store_sql "SELECT count(*) FROM sqlite_master WHERE name = 'runfs_uq_terminal'"
  fi
}

@test "an older build's unique terminal index is dropped at a read-write open, never at a read-only one" {
  seed_thread
  runfs_unmount "$MNT"
  local want
  want=$("$RUNFS" cat "$STORE" threads/t1/events.jsonl)
  store_sql "CREATE UNIQUE INDEX runfs_uq_terminal ON run_events (thread_id, run_id, event_type) WHERE event_type = 'run.terminal'"
  # A reader (a read-only open) reads the store as it is and changes nothing of it: on
  # PostgreSQL it does not even ask whether it could (only a read-write open converts).
  run "$RUNFS" cat "$STORE" threads/t1/events.jsonl
  assert_success
  assert_output "$want"
  run "$RUNFS" search "$STORE" 'second question'
  assert_success
  assert_output --partial '"content":"second question"'
  assert_equal "$(uq_terminal)" 1
  runfs_mount "$STORE" "$MNT"
  assert_equal "$(uq_terminal)" 0
  sql_row t1 r1 20 run.terminal trace '{"status": "error"}'
}

@test "-o ro of a WAL database nobody had open follows the writers, through a checkpoint and a VACUUM" {
  skip_on_pg "a SQLite file's WAL"
  plain_thread
  mkdir -p "$MNT/threads/q/runs/r1"
  ev_error untouched >> "$MNT/threads/q/runs/r1/events.jsonl"
  runfs_unmount "$MNT"
  [ ! -e "$STORE-wal" ] || fail "the store still had a WAL after its last writer closed"
  local ro=$WORK/ro
  runfs_mount "$STORE" "$ro" -o ro
  consistent "$ro" p
  # Writers come after the reader: another mount and sqlite3.
  runfs_mount "$STORE" "$MNT"
  local i
  for i in $(seq 40); do ev_error "w$i"; done >> "$MNT/threads/p/runs/r1/events.jsonl"
  wait_for 5 grep -q '"seq":43,' "$ro/threads/p/events.jsonl" || fail "the reader does not see the writer's rows"
  wait_for 2 consistent "$ro" p
  sqlite3 "$STORE" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
  ev_error after-checkpoint >> "$MNT/threads/p/runs/r1/events.jsonl"
  wait_for 5 grep -q after-checkpoint "$ro/threads/p/events.jsonl"
  sqlite3 "$STORE" "VACUUM"
  ev_error after-vacuum >> "$MNT/threads/p/runs/r1/events.jsonl"
  wait_for 5 grep -q after-vacuum "$ro/threads/p/events.jsonl" || fail "the reader is stale after a VACUUM"
  run ls "$ro/threads"
  assert_success
  assert_output "$(printf 'p\nq')"
  run cat "$ro/threads/q/events.jsonl"
  assert_success
  assert_output --partial untouched
  wait_for 2 consistent "$ro" p q
}

@test "the WAL stays bounded under sustained writes from two mounts" {
  skip_on_pg "a SQLite file's WAL"
  local b=$WORK/b big
  runfs_mount "$STORE" "$b"
  big=$(head -c 45000 /dev/zero | tr '\0' x)
  local w
  for w in 1 2 3 4; do
    mkdir -p "$MNT/threads/w$w/runs/r1"
  done
  # Each writer: 300 lines of 45 kB, one write() each, through one of the two mounts.
  for w in 1 2 3 4; do
    local m=$MNT; [ $((w % 2)) -eq 0 ] && m=$b
    (for i in $(seq 300); do printf '{"event_type":"llm.error","content":"%s %d"}\n' "$big" "$i"; done > "$WORK/in$w"
     python3 -c '
import os, sys
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND)
for line in open(sys.argv[1], "rb"):
    os.write(fd, line)
' "$WORK/in$w" "$m/threads/w$w/runs/r1/events.jsonl") &
  done
  # The WAL's size sampled until the writers are done (reference: stat, not runfs).
  python3 - "$STORE-wal" "$WORK/peak" <<'PY' &
import os, sys, time
peak, end = 0, time.monotonic() + 120
while time.monotonic() < end and not os.path.exists(sys.argv[2] + ".stop"):
    try: peak = max(peak, os.stat(sys.argv[1]).st_size)
    except FileNotFoundError: pass
    time.sleep(0.01)
open(sys.argv[2], "w").write(str(peak))
PY
  local sampler=$!
  wait_for 60 bash -c "[ \$(sqlite3 '$STORE' 'SELECT count(*) FROM run_events') -ge 1200 ]" ||
    fail "the writers did not finish: $(sqlite3 "$STORE" 'SELECT count(*) FROM run_events') rows"
  touch "$WORK/peak.stop"
  wait "$sampler"
  local peak; peak=$(cat "$WORK/peak")
  echo "# peak WAL $peak bytes" >&3
  [ "$peak" -lt $((64 * 1024 * 1024)) ] || fail "the WAL reached $peak bytes (limit 64 MiB)"
  [ "$peak" -gt 0 ] || fail "no WAL was seen"
}

# One random change by another writer to thread $1 (INSERT, UPDATE of any column, DELETE; a
# deleted row is kept in the table gone), said on stdout. With a second argument, also the
# ways a row changes without an UPDATE: REPLACE INTO (SQLite), an UPSERT, a deleted row put
# back with its old id, a row deleted and written again in one transaction. A third argument
# chooses the change.
random_change() {
  local t=$1 op=${3:-$((RANDOM % ${2:-5}))} seq max
  max=$(store_sql "SELECT coalesce(max(seq), 0) FROM run_events WHERE thread_id = '$t'")
  seq=$(store_sql "SELECT seq FROM run_events WHERE thread_id = '$t' ORDER BY seq LIMIT 1 OFFSET $((RANDOM % 8))")
  [ -n "$seq" ] || seq=$(store_sql "SELECT min(seq) FROM run_events WHERE thread_id = '$t'")
  [ -n "$seq" ] || op=0
  local run=r$((RANDOM % 3 + 1)) text="text $RANDOM $(head -c $((RANDOM % 200)) /dev/zero | tr '\0' y)"
  local set
  case $op in
    0|1) echo "insert seq $((max + 1))"
       if [ $((RANDOM % 2)) -eq 0 ]; then
         sql_row "$t" "$run" $((max + 1)) llm.error trace "$text"
       else
         sql_row "$t" "$run" $((max + 1)) llm.human.input message "{\"type\": \"human\", \"content\": \"$text\", \"id\": \"h-$RANDOM\"}" someone
       fi ;;
    2|3) case $((RANDOM % 7)) in
         0) set="content = '$text'" ;;
         1) set="event_metadata = '{\"caller\": \"$text\"}'" ;;
         2) set="event_type = 'llm.error', category = 'trace', content = '$text'" ;;
         3) set="seq = $((max + 1))" ;;
         4) set="run_id = '$run'" ;;
         5) set="created_at = '2031-0$((RANDOM % 9 + 1))-01 00:00:00'" ;;
         6) set="user_id = 'u$((RANDOM % 3))'" ;;
       esac
       echo "update seq $seq: $set" | cut -c1-80
       store_sql "UPDATE run_events SET $set WHERE thread_id = '$t' AND seq = $seq" ;;
    4) echo "delete seq $seq"
       store_sql "CREATE TABLE IF NOT EXISTS gone AS SELECT * FROM run_events LIMIT 0; INSERT INTO gone SELECT * FROM run_events WHERE thread_id = '$t' AND seq = $seq; DELETE FROM run_events WHERE thread_id = '$t' AND seq = $seq" ;;
    5) if on_pg; then
         echo "upsert on id, seq $seq"
         store_sql "INSERT INTO run_events SELECT id, thread_id, run_id, user_id, 'llm.error', 'trace', '$text', event_metadata, seq, created_at FROM run_events WHERE thread_id = '$t' AND seq = $seq ON CONFLICT (id) DO UPDATE SET content = excluded.content, event_type = excluded.event_type, category = excluded.category"
       else
         echo "replace seq $seq"
         store_sql "REPLACE INTO run_events SELECT id, thread_id, run_id, user_id, 'llm.error', 'trace', '$text', event_metadata, seq, created_at FROM run_events WHERE thread_id = '$t' AND seq = $seq"
       fi ;;
    6) echo "upsert on (thread_id, seq) $seq"
       store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('$t', '$run', NULL, 'llm.error', 'trace', '$text', '{}', $seq, '$TS') ON CONFLICT (thread_id, seq) DO UPDATE SET content = excluded.content, run_id = excluded.run_id, event_type = excluded.event_type, category = excluded.category" ;;
    7) local back
       back=$(store_sql "SELECT g.id FROM gone g WHERE g.thread_id = '$t' AND NOT EXISTS (SELECT 1 FROM run_events e WHERE e.id = g.id OR (e.thread_id = g.thread_id AND e.seq = g.seq)) ORDER BY g.id LIMIT 1")
       if [ -n "$back" ]; then
         echo "restore id $back"
         store_sql "INSERT INTO run_events SELECT * FROM gone WHERE id = $back; DELETE FROM gone WHERE id = $back"
       else
         echo "delete seq $seq (nothing to restore)"
         store_sql "CREATE TABLE IF NOT EXISTS gone AS SELECT * FROM run_events LIMIT 0; INSERT INTO gone SELECT * FROM run_events WHERE thread_id = '$t' AND seq = $seq; DELETE FROM run_events WHERE thread_id = '$t' AND seq = $seq"
       fi ;;
    8) echo "delete and insert seq $seq in one transaction"
       store_sql "BEGIN; DELETE FROM run_events WHERE thread_id = '$t' AND seq = $seq; INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('$t', '$run', NULL, 'llm.error', 'trace', '$text', '{}', $seq, '$TS'); COMMIT;" ;;
  esac
}

# feed_state FILE: a consumer's view of the runs from the change-feed lines in FILE (each
# run's line of the highest change): "thread|run|events|upper_seq" of runs not deleted.
feed_state() {
  python3 -c '
import json, sys
last = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    k = (e["thread_id"], e["run_id"])
    if k not in last or e["change"] > last[k]["change"]:
        last[k] = e
for (t, r), e in sorted(last.items()):
    if not e["deleted"]:
        print("%s|%s|%s|%s" % (t, r, e["events"], e["upper_seq"]))
' "$1"
}
rows_state() {
  store_sql "SELECT thread_id || '|' || run_id || '|' || count(*) || '|' || max(seq) FROM run_events GROUP BY thread_id, run_id ORDER BY thread_id, run_id"
}

# feed_read MNT: the consumer reads changes/since/N on MNT and takes its highest change as N.
feed_read() {
  cat "$1/changes/since/$FEED_N" >"$WORK/feed.part" || return 1
  cat "$WORK/feed.part" >>"$WORK/feed.jsonl"
  local top
  top=$(sed -n 's/^{"change":\([0-9]*\),.*/\1/p' "$WORK/feed.part" | sort -n | tail -1)
  [ -z "$top" ] || FEED_N=$top
}

# both_exact MNT1 MNT2 THREAD: the two mounts list the same files of THREAD and give the same
# bytes in each, every file's stat size is its bytes on both, and the logs are what `runfs
# cat` reads from the store.
both_exact() {
  local rel
  [ "$(cd "$1" && find "threads/$3" -type f | sort)" = "$(cd "$2" && find "threads/$3" -type f | sort)" ] || { echo "# the mounts list other files" >&2; return 1; }
  while IFS= read -r rel; do
    cat "$1/$rel" >"$WORK/one" && cat "$2/$rel" >"$WORK/two" || return 1
    if [ "$(stat -c %s "$1/$rel")" != "$(wc -c <"$WORK/one")" ] || [ "$(stat -c %s "$2/$rel")" != "$(wc -c <"$WORK/two")" ] || ! cmp -s "$WORK/one" "$WORK/two"; then
      echo "# $rel: stat $(stat -c %s "$1/$rel") and $(stat -c %s "$2/$rel"), read $(wc -c <"$WORK/one") and $(wc -c <"$WORK/two")" >&2
      return 1
    fi
    case $rel in
      */events.jsonl|*/messages.jsonl|*/receipt.json) check_file "$1" "$rel" || return 1 ;;
    esac
  done < <(cd "$1" && find "threads/$3" -type f | sort)
}

# counted MNT THREAD: the thread's message-count and each run's receipt.json count the rows
# as they are (read from the store by SQL, not by runfs).
counted() {
  local r
  [ "$(cat "$1/threads/$2/message-count")" = "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = '$2' AND category = 'message'")" ] || { echo "# $1: message-count $(cat "$1/threads/$2/message-count")" >&2; return 1; }
  for r in $(store_sql "SELECT DISTINCT run_id FROM run_events WHERE thread_id = '$2'"); do
    grep -q "\"event_count\":$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = '$2' AND run_id = '$r'")," "$1/threads/$2/runs/$r/receipt.json" || { echo "# $1: $r's receipt $(cat "$1/threads/$2/runs/$r/receipt.json")" >&2; return 1; }
  done
}

# feed_caught_up MNT: after one more read, the consumer's state is the rows'.
feed_caught_up() {
  feed_read "$1" && [ "$(feed_state "$WORK/feed.jsonl")" = "$(rows_state)" ]
}

@test "randomized, two mounts and a change-feed consumer: REPLACE, UPSERT, rows put back with their old ids, delete and insert in one transaction; every file exact on both mounts at every step" {
  local seed=${RUNFS_CONSISTENCY_SEED:-$(( $(date +%s) % 100000 ))} steps=${RUNFS_CONSISTENCY_STEPS:-10}
  RANDOM=$seed
  local log="seed $seed" i m
  local mnt2=$WORK/mnt2
  runfs_mount "$STORE" "$mnt2"
  mkdir -p "$MNT/threads/ix/runs/r1" "$MNT/threads/ix/runs/r2"
  { ev_start; ev_human "q" 1; ev_ai "a" 1; ev_error one; } >> "$MNT/threads/ix/runs/r1/events.jsonl"
  { ev_start; ev_error two; } >> "$mnt2/threads/ix/runs/r2/events.jsonl"
  for i in 1 2 3 4 5; do sql_row un r$((i % 2 + 1)) "$i" llm.error trace "unindexed $i"; done
  store_sql "CREATE TABLE IF NOT EXISTS gone AS SELECT * FROM run_events LIMIT 0"
  FEED_N=0
  : >"$WORK/feed.jsonl"
  # Every kind of change to ix once, in a random order (a delete before the restore), then
  # random ones.
  local -a ops=(0 1 2 3 4 5 6 7 8)
  for i in 8 7 6 5 4 3 2 1; do
    m=$((RANDOM % (i + 1)))
    ops[i]=$((ops[m] + ops[i])) ops[m]=$((ops[i] - ops[m])) ops[i]=$((ops[i] - ops[m]))
  done
  local d r
  for i in "${!ops[@]}"; do
    [ "${ops[i]}" = 4 ] && d=$i
    [ "${ops[i]}" = 7 ] && r=$i
  done
  [ "$d" -lt "$r" ] || { ops[d]=7; ops[r]=4; }
  for i in $(seq "$steps"); do
    log+=$'\n'"ix: $(random_change ix 9 "${ops[i - 1]:-}")"
    log+=$'\n'"un: $(random_change un 9)"
    for m in "$MNT" "$mnt2"; do
      wait_for 15 eval '[ "$(shown_of "$m/threads/ix/events.jsonl")" = "$(rows_of ix)" ]' ||
        fail "step $i: $m's events.jsonl is not the rows; $log"
      wait_for 15 counted "$m" ix || fail "step $i: $m's counts are not the rows'; $log"
    done
    wait_for 15 both_exact "$MNT" "$mnt2" ix || fail "step $i: $log"
    if [ $((i % 2)) -eq 0 ]; then feed_read "$MNT"; else feed_read "$mnt2"; fi || fail "step $i: the feed: $log"
  done
  for m in "$MNT" "$mnt2"; do
    [ "$(shown_of "$m/threads/un/events.jsonl")" = "$(rows_of un)" ] || fail "un on $m: $log"
  done
  both_exact "$MNT" "$mnt2" un || fail "end: $log"
  wait_for 15 feed_caught_up "$MNT" ||
    fail "the feed's consumer ended with $(feed_state "$WORK/feed.jsonl" | tr '\n' ' ') for rows $(rows_state | tr '\n' ' '); $log"
  runfs_unmount "$mnt2"
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  consistent "$MNT" ix un || fail "after a remount: $log"
}

@test "randomized: another writer's inserts, updates and deletes on indexed and unindexed threads; every file's size is its bytes and runfs cat's" {
  local seed=${RUNFS_CONSISTENCY_SEED:-$(( $(date +%s) % 100000 ))} steps=${RUNFS_CONSISTENCY_STEPS:-8}
  RANDOM=$seed
  local log="seed $seed"
  mkdir -p "$MNT/threads/ix/runs/r1" "$MNT/threads/ix/runs/r2"
  { ev_start; ev_human "q" 1; ev_ai "a" 1; ev_error one; } >> "$MNT/threads/ix/runs/r1/events.jsonl"
  { ev_start; ev_error two; } >> "$MNT/threads/ix/runs/r2/events.jsonl"
  # A thread only another writer made, not read until the end (indexed at its first use).
  local i
  for i in 1 2 3 4 5; do sql_row un r$((i % 2 + 1)) "$i" llm.error trace "unindexed $i"; done
  consistent "$MNT" ix
  for i in $(seq "$steps"); do
    log+=$'\n'"ix: $(random_change ix)"
    log+=$'\n'"un: $(random_change un)"
    # After every step all of every file against runfs cat.
    wait_for 15 consistent "$MNT" ix || fail "step $i: $log"
    # Within the hub's tick: the rows as they are, every file exact.
    wait_for 15 eval '[ "$(shown_of "$MNT/threads/ix/events.jsonl")" = "$(rows_of ix)" ]' ||
      fail "step $i: events.jsonl is not the rows; $log"
    wait_for 15 sized "$MNT" ix || { sized "$MNT" ix; fail "step $i: $log"; }
  done
  [ "$(shown_of "$MNT/threads/un/events.jsonl")" = "$(rows_of un)" ] || fail "un: $log"
  consistent "$MNT" ix un || fail "end: $log"
  # The next append lands whole after the rows as they are.
  mkdir -p "$MNT/threads/ix/runs/r9"
  ev_error last >> "$MNT/threads/ix/runs/r9/events.jsonl"
  [ "$(shown_of "$MNT/threads/ix/events.jsonl")" = "$(rows_of ix)" ] || fail "after an append: $log"
  wait_for 15 consistent "$MNT" ix || fail "after an append: $log"
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  consistent "$MNT" ix un || fail "after a remount: $log"
}

@test "a reader that may not create the -shm beside a WAL file nobody has open still reads it" {
  skip_on_pg "a SQLite file's WAL"
  plain_thread
  runfs_unmount "$MNT"
  local d=$WORK/closed
  mkdir -p "$d"
  cp "$STORE" "$d/s.db"
  chmod 755 "$d"; chmod 644 "$d/s.db"
  local runfs
  runfs=$(reachable "$RUNFS")
  run as "$UID_A" "'$runfs' cat '$d/s.db' threads/p/events.jsonl"
  assert_success
  assert_line -n 2 --partial '"content":"c"'
  [ ! -e "$d/s.db-shm" ] || fail "the reader created a -shm it was not allowed to"
}
