#!/usr/bin/env bats
# changes.bats — the change feed (DESIGN "The change feed") on real mounts, both backends:
# its fields and order against the store's rows, tombstones, other writers' inserts, updates
# and deletes, owners, follow's wake-up from another mount, and the invariant under load (a
# consumer looping on since/N misses no change). Expected lines come from changes_ref.py
# over the rows themselves.

load lib

REF=$BATS_TEST_DIRNAME/changes_ref.py
WRITER=$BATS_TEST_DIRNAME/writer.py

setup() {
  runfs_setup --allow-delete --follow-timeout 2
  PIDS=()
}

teardown() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  runfs_teardown
}

# expected: the run lines (without change) the store's rows call for, sorted.
expected() {
  store_sql "SELECT e.thread_id, e.run_id, (SELECT count(*) FROM run_events x WHERE x.thread_id = e.thread_id AND x.run_id = e.run_id), e.seq, e.created_at FROM run_events e WHERE e.seq = (SELECT max(seq) FROM run_events x WHERE x.thread_id = e.thread_id AND x.run_id = e.run_id)" >"$WORK/rows"
  store_sql "SELECT thread_id, run_id, content FROM run_events WHERE event_type = 'run.terminal' ORDER BY seq" >"$WORK/terms"
  store_sql "SELECT thread_id, run_id, state FROM runfs_seal WHERE owner = ''" >"$WORK/seals"
  python3 "$REF" expect "$WORK/rows" "$WORK/terms" "$WORK/seals"
}
# live FEED: its lines for runs (tombstones left out), without change, sorted.
live() { grep -v '"deleted":true' "$1" >"$WORK/live" || true; python3 "$REF" strip "$WORK/live"; }
# top FEED: the highest change in it (0 when empty).
top() { { grep -o '"change":[0-9]*' "$1" || true; } | cut -d: -f2 | sort -n | tail -1 | sed 's/^$/0/'; }
# runs FEED: thread/run of each line, in order.
runs() { python3 -c 'import json,sys; [print(d["thread_id"] + "/" + d["run_id"]) for d in map(json.loads, open(sys.argv[1]))]' "$1"; }
# increasing FEED: change numbers strictly increase, one line per run.
increasing() { python3 -c '
import json, sys
ds = [json.loads(l) for l in open(sys.argv[1])]
cs = [d["change"] for d in ds]
keys = [(d["thread_id"], d["run_id"]) for d in ds]
sys.exit(0 if cs == sorted(set(cs)) and len(keys) == len(set(keys)) else 1)' "$1"; }
# foreign_sql SQL: another writer's statement (on SQLite with a busy timeout, as DeerFlow's).
foreign_sql() {
  if on_pg; then store_sql "$1"; else sqlite3 -cmd '.timeout 10000' "$STORE" "$1"; fi
}
# deerflow_row THREAD RUN SEQ: a row as DeerFlow's store inserts it, straight into the table.
deerflow_row() {
  foreign_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('$1', '$2', NULL, 'llm.error', 'error', 'from deerflow', '{}', $3, '2026-03-04 05:06:07.123456')"
}

@test "changes.jsonl: every run with rows once, at its latest change, in change order, its fields as its rows say" {
  local T=$MNT/threads
  mkdir -p "$T/ta/runs/r1" "$T/ta/runs/r2" "$T/tb/runs/r1" "$T/tc/runs/empty"
  ev_start >>"$T/ta/runs/r1/events.jsonl"
  ev_start >>"$T/ta/runs/r2/events.jsonl"
  ev_start >>"$T/tb/runs/r1/events.jsonl"
  (set -C; ev_terminal error >"$T/ta/runs/r1/once/run.terminal")
  (set -C; : >"$T/ta/runs/r1/seal.json")
  ev_ai >>"$T/tb/runs/r1/events.jsonl"
  cat "$MNT/changes.jsonl" >"$WORK/feed"
  # The seal and the last append moved their runs to the end; the run made by mkdir only
  # has no rows and is not in the feed.
  assert_equal "$(runs "$WORK/feed" | tr '\n' ' ')" "ta/r2 ta/r1 tb/r1 "
  increasing "$WORK/feed"
  assert_equal "$(live "$WORK/feed")" "$(expected)"
  grep -q '"thread_id":"ta","run_id":"r1","upper_seq":3,"events":2,"status":"error","seal":"sealed","deleted":false,"at":"' "$WORK/feed"
  # since/N is the lines after N; the command prints the same bytes.
  local first; first=$(head -1 "$WORK/feed" | grep -o '"change":[0-9]*' | cut -d: -f2)
  cmp <(tail -n +2 "$WORK/feed") "$MNT/changes/since/$first"
  cmp "$WORK/feed" <("$RUNFS" changes "$STORE")
  cmp "$MNT/changes/since/$first" <("$RUNFS" changes "$STORE" --since "$first")
  cmp "$WORK/feed" <("$RUNFS" cat "$STORE" changes.jsonl)
  [ ! -s "$MNT/changes/since/$(top "$WORK/feed")" ]
  # The lookup-only names are never listed; a name that is no number is not there.
  assert_equal "$(ls "$MNT/changes" | tr '\n' ' ')" "follow since "
  assert_equal "$(ls "$MNT/changes/since" | wc -l)" 0
  run cat "$MNT/changes/since/x1"
  assert_failure
  run "$RUNFS" changes "$STORE" --since -1
  assert_failure 2
}

@test "tombstones: rm -r of a run and of a thread, and another writer's delete, each leave {change, thread_id, run_id, deleted:true}" {
  local T=$MNT/threads r
  for r in ta/runs/r1 ta/runs/r2 tb/runs/r1 tb/runs/r2 tc/runs/r1; do
    mkdir -p "$T/$r"
    ev_start >>"$T/$r/events.jsonl"
  done
  local n; n=$(top "$MNT/changes.jsonl")
  rm -r "$T/ta/runs/r1"
  rm -r "$T/tb"
  foreign_sql "DELETE FROM run_events WHERE thread_id = 'tc'"
  cat "$MNT/changes/since/$n" >"$WORK/since"
  increasing "$WORK/since"
  # Exactly the four runs that lost their rows, as tombstones with no other field.
  python3 - "$WORK/since" <<'PY'
import json, sys
ds = [json.loads(l) for l in open(sys.argv[1])]
got = sorted((d["thread_id"], d["run_id"]) for d in ds)
assert got == [("ta", "r1"), ("tb", "r1"), ("tb", "r2"), ("tc", "r1")], got
assert all(sorted(d) == ["change", "deleted", "run_id", "thread_id"] and d["deleted"] is True for d in ds), ds
PY
  # changes.jsonl keeps them, each run once; the run left holds its state.
  cat "$MNT/changes.jsonl" >"$WORK/feed"
  increasing "$WORK/feed"
  assert_equal "$(grep -c '"deleted":true' "$WORK/feed")" 4
  assert_equal "$(live "$WORK/feed")" "$(expected)"
  # A run id used again replaces its tombstone with a live line.
  mkdir -p "$T/ta/runs/r1"
  ev_start >>"$T/ta/runs/r1/events.jsonl"
  cat "$MNT/changes.jsonl" >"$WORK/feed"
  assert_equal "$(grep -c '"deleted":true' "$WORK/feed")" 3
  assert_equal "$(runs "$WORK/feed" | tail -1)" ta/r1
  assert_equal "$(live "$WORK/feed")" "$(expected)"
}

@test "another writer's inserts (a new thread and an existing run) and in-place updates get new changes" {
  local T=$MNT/threads
  mkdir -p "$T/ta/runs/r1" "$T/tb/runs/r1"
  ev_start >>"$T/ta/runs/r1/events.jsonl"
  ev_start >>"$T/tb/runs/r1/events.jsonl"
  local n; n=$(top "$MNT/changes.jsonl")
  deerflow_row td rd 1
  deerflow_row ta r1 2
  cat "$MNT/changes/since/$n" >"$WORK/since"
  assert_equal "$(runs "$WORK/since" | sort | tr '\n' ' ')" "ta/r1 td/rd "
  assert_equal "$(live "$MNT/changes.jsonl")" "$(expected)"
  grep -q '"thread_id":"td","run_id":"rd","upper_seq":1,"events":1,"status":null,"seal":null,"deleted":false,"at":"2026-03-04T05:06:07.123456+00:00"}' "$WORK/since"
  n=$(top "$WORK/since")
  foreign_sql "UPDATE run_events SET content = 'changed in place' WHERE thread_id = 'tb'"
  assert_equal "$(runs "$MNT/changes/since/$n")" tb/r1
  # Another mount's reads see the same numbers.
  runfs_mount "$STORE" "$WORK/m2"
  cmp "$MNT/changes.jsonl" "$WORK/m2/changes.jsonl"
}

@test "a store whose insert triggers an earlier build made gets the one trigger at a read-write open; other writers' rows are still numbered and noticed" {
  on_pg || skip "PostgreSQL only: its triggers on DeerFlow's table"
  local T=$MNT/threads
  mkdir -p "$T/ta/runs/r1"
  ev_start >>"$T/ta/runs/r1/events.jsonl"
  runfs_unmount "$MNT"
  pg_earlier_insert_triggers
  run pg_insert_triggers
  assert_output "$(printf 'runfs_change_insert runfs_change_insert\nrunfs_note_insert runfs_note_insert')"
  runfs_mount "$STORE" "$MNT" --allow-delete --follow-timeout 2
  # One trigger runs for another writer's INSERT (the role owns run_events: the other is gone).
  run pg_insert_triggers
  assert_output 'runfs_note_insert runfs_foreign_insert'
  run store_sql "SELECT count(*) FROM pg_trigger WHERE tgname = 'runfs_change_insert'"
  assert_output 0
  local n; n=$(top "$MNT/changes.jsonl")
  deerflow_row td rd 1
  deerflow_row ta r1 2
  foreign_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('te', 'r1', 'bob', 'llm.error', 'error', 'x', '{}', 1, now()), ('te', 'r2', 'carol', 'llm.error', 'error', 'x', '{}', 2, now()), ('tf', 'r1', NULL, 'llm.error', 'error', 'x', '{}', 1, now())"
  cat "$MNT/changes/since/$n" >"$WORK/since"
  assert_equal "$(runs "$WORK/since" | sort | tr '\n' ' ')" "ta/r1 td/rd te/r1 te/r2 tf/r1 "
  assert_equal "$(live "$MNT/changes.jsonl")" "$(expected)"
  run store_sql "SELECT thread_id || ' ' || run_id || ' ' || coalesce(owner, '(several)') FROM runfs_change WHERE thread_id IN ('te', 'tf') ORDER BY 1"
  assert_output "$(printf 'te r1 bob\nte r2 carol\ntf r1 ')"
  # The rows are noticed: listed, and in their thread's events.
  run ls "$T"
  assert_output "$(printf 'ta\ntd\nte\ntf')"
  run grep -c . "$T/ta/events.jsonl"
  assert_output 2
  grep -q '"content":"from deerflow"' "$T/ta/runs/r1/events.jsonl" || fail "DeerFlow's row is not in ta/r1"
}

@test "owners see only their own runs' changes, a --thread mount only its thread's" {
  runfs_mount "$STORE" "$WORK/alice" --user alice --allow-delete
  runfs_mount "$STORE" "$WORK/bob" --user bob
  runfs_mount "$STORE" "$WORK/one" --thread tb
  mkdir -p "$WORK/alice/threads/ta/runs/r1" "$WORK/alice/threads/ta/runs/r2" "$WORK/bob/threads/tb/runs/r1"
  ev_start >>"$WORK/alice/threads/ta/runs/r1/events.jsonl"
  ev_start >>"$WORK/alice/threads/ta/runs/r2/events.jsonl"
  ev_start >>"$WORK/bob/threads/tb/runs/r1/events.jsonl"
  assert_equal "$(runs "$WORK/alice/changes.jsonl" | tr '\n' ' ')" "ta/r1 ta/r2 "
  assert_equal "$(runs "$WORK/bob/changes.jsonl" | tr '\n' ' ')" "tb/r1 "
  assert_equal "$(runs "$WORK/one/changes.jsonl" | tr '\n' ' ')" "tb/r1 "
  assert_equal "$(runs "$MNT/changes.jsonl" | tr '\n' ' ')" "ta/r1 ta/r2 tb/r1 "
  cmp "$WORK/bob/changes.jsonl" <("$RUNFS" changes "$STORE" --user bob)
  # Alice's delete leaves a tombstone she sees and bob does not.
  rm -r "$WORK/alice/threads/ta/runs/r1"
  grep -q '"thread_id":"ta","run_id":"r1","deleted":true' "$WORK/alice/changes.jsonl"
  assert_equal "$(runs "$WORK/bob/changes.jsonl" | tr '\n' ' ')" "tb/r1 "
  grep -q '"thread_id":"ta","run_id":"r1","deleted":true' "$MNT/changes.jsonl"
}

@test "a seal's change is shown to the owners of its run's rows: one owner's, shared, another writer's" {
  runfs_mount "$STORE" "$WORK/alice" --user alice
  runfs_mount "$STORE" "$WORK/bob" --user bob
  runfs_mount "$STORE" "$WORK/carol" --user carol
  local r
  for r in own shared foreign; do
    mkdir -p "$WORK/alice/threads/ta/runs/$r"
    ev_start >>"$WORK/alice/threads/ta/runs/$r/events.jsonl"
  done
  # shared: a row of the unscoped mount (no owner) after alice's; foreign: carol's row from
  # another writer.
  ev_start >>"$MNT/threads/ta/runs/shared/events.jsonl"
  foreign_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) SELECT 'ta', 'foreign', 'carol', 'llm.error', 'error', 'from carol', '{}', max(seq) + 1, '2026-03-04 05:06:07.123456' FROM run_events WHERE thread_id = 'ta'"
  for r in own shared foreign; do
    (set -C; printf '{"state":"partial","error":"test"}' >"$MNT/threads/ta/runs/$r/seal.json")
  done
  # The seals are the runs' latest changes, each shown to whoever has rows in it.
  assert_equal "$(runs "$WORK/alice/changes.jsonl" | tr '\n' ' ')" "ta/own ta/shared ta/foreign "
  assert_equal "$(runs "$WORK/bob/changes.jsonl" | tr '\n' ' ')" ""
  assert_equal "$(runs "$WORK/carol/changes.jsonl" | tr '\n' ' ')" "ta/foreign "
  assert_equal "$(runs "$MNT/changes.jsonl" | tr '\n' ' ')" "ta/own ta/shared ta/foreign "
  # The owner each kept: one owner's rows name it; rows of several name none.
  run store_sql "SELECT run_id, coalesce(owner, '(several)') FROM runfs_change WHERE thread_id = 'ta' ORDER BY run_id"
  assert_output "$(printf 'foreign|(several)\nown|alice\nshared|(several)')"
}

@test "changes/follow/N gives the changes after N, wakes on another mount's commit within 100 ms, ends after --follow-timeout without one" {
  runfs_mount "$STORE" "$WORK/m2"
  mkdir -p "$MNT/threads/ta/runs/r1"
  ev_start >>"$MNT/threads/ta/runs/r1/events.jsonl"
  local n; n=$(top "$MNT/changes.jsonl")
  # A reader of the follow file on this mount; writes on the other; each wake-up timed from
  # the return of the write() that committed to the line's arrival.
  run python3 - "$MNT/changes/follow/$n" "$WORK/m2/threads" <<'PY'
import os, sys, threading, time, json
follow, threads = sys.argv[1], sys.argv[2]
got, lock = {}, threading.Condition()
def reader():
    with open(follow, 'rb', buffering=0) as f:
        buf = b''
        while True:
            chunk = f.read(65536)
            if not chunk:
                with lock:
                    got['eof'] = time.monotonic()
                    lock.notify_all()
                return
            buf += chunk
            while b'\n' in buf:
                line, buf = buf.split(b'\n', 1)
                d = json.loads(line)
                with lock:
                    got[d['run_id']] = time.monotonic()
                    lock.notify_all()
threading.Thread(target=reader, daemon=True).start()
time.sleep(0.3)
ev = b'{"event_type":"llm.error","content":"x"}\n'
lat = []
for i in range(5):
    run = 'w%d' % i
    os.makedirs(os.path.join(threads, 'tf', 'runs', run))
    fd = os.open(os.path.join(threads, 'tf', 'runs', run, 'events.jsonl'), os.O_WRONLY | os.O_APPEND)
    os.write(fd, ev)
    t0 = time.monotonic()
    os.close(fd)
    with lock:
        lock.wait_for(lambda: run in got, timeout=5)
        lat.append((got.get(run, t0 + 5) - t0) * 1000)
last = time.monotonic()
with lock:
    lock.wait_for(lambda: 'eof' in got, timeout=15)
lat.sort()
print('median %.1f ms, max %.1f ms; ended %.1f s after the last change' % (lat[2], lat[-1], got.get('eof', last + 99) - last))
sys.exit(0 if lat[2] < 100 and lat[-1] < 5000 and 1.5 < got.get('eof', last + 99) - last < 10 else 1)
PY
  echo "# $output" >&3
  assert_success
}

@test "the invariant under load: a consumer looping on since/N while 8 writers on 2 mounts (and a DeerFlow-style writer) commit sees every run's final state and misses no change" {
  local B=$WORK/m2 w m t
  runfs_mount "$STORE" "$B"
  for t in t0 t1 t2 t3; do mkdir -p "$MNT/threads/$t/runs/a" "$MNT/threads/$t/runs/b"; done
  python3 "$REF" consume "$MNT" "$WORK/stop" "$WORK/view" >"$WORK/reads" &
  local consumer=$!
  PIDS+=($consumer)
  for w in 0 1 2 3 4 5 6 7; do
    m=$MNT; [ $((w % 2)) -eq 1 ] && m=$B
    t=t$((w / 2)); r=a; [ $((w % 2)) -eq 1 ] && r=b
    python3 "$WRITER" "$m/threads/$t/runs/$r/events.jsonl" "w$w" 150 1 &
    PIDS+=($!)
  done
  # The other writer: rows of a new run each time; on PostgreSQL its transaction stays
  # open across runfs commits (a number shown in the order numbers were handed out, not
  # below the oldest running writer's, would be passed before it commits).
  local i
  for i in 1 2 3 4 5; do
    if on_pg; then
      store_sql "BEGIN; INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('df$i', 'r', NULL, 'llm.error', 'error', 'x', '{}', 1, now()); SELECT pg_sleep(0.3); COMMIT;" >/dev/null
    else
      sqlite3 -cmd '.timeout 10000' "$STORE" "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('df$i', 'r', NULL, 'llm.error', 'error', 'x', '{}', 1, '2026-03-04 05:06:07.000000')"
      # the next insert only once the feed shows this one: spread among the writers' commits
      wait_for 10 grep -qF "\"thread_id\":\"df$i\"" "$MNT/changes.jsonl"
    fi
  done
  for w in "${PIDS[@]:1}"; do wait "$w" || fail "a writer failed"; done
  PIDS=("$consumer")
  touch "$WORK/stop"
  wait "$consumer" || fail "the consumer failed"
  PIDS=()
  echo "# the consumer read since/N $(cat "$WORK/reads") times" >&3
  [ "$(cat "$WORK/reads")" -gt 5 ]
  # What it saw last of each run is changes.jsonl, and each run's final state.
  cat "$MNT/changes.jsonl" >"$WORK/feed"
  increasing "$WORK/feed"
  diff <(sort "$WORK/feed") <(sort "$WORK/view")
  assert_equal "$(live "$WORK/view")" "$(expected)"
  assert_equal "$(wc -l <"$WORK/view")" 13
}

@test "-o ro of a DeerFlow database no runfs numbered refuses its feed (ENODATA, with why) instead of showing it empty" {
  local df=$WORK/df.db ro=$WORK/ro t
  cp "$BATS_TEST_DIRNAME/../data/deerflow-sample.db" "$df"
  if on_pg; then
    df=$(pg_uri "${PG_DB}_df")
    pg_admin "CREATE DATABASE ${PG_DB}_df" >/dev/null
    store_sql "$(cat "$BATS_TEST_DIRNAME/../data/deerflow-schema-postgresql.sql")" "$df"
    sqlite3 -csv "$WORK/df.db" "SELECT id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at FROM run_events ORDER BY id" |
      PGTZ=UTC psql -X -q -v ON_ERROR_STOP=1 -d "$df" -c "\copy run_events (id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) FROM STDIN WITH (FORMAT csv)"
  fi
  # The runs the database holds, counted from its rows.
  local runs
  runs=$(sqlite3 "$WORK/df.db" "SELECT count(DISTINCT thread_id || '/' || run_id) FROM run_events")
  [ "$runs" -gt 0 ]
  runfs_mount "$df" "$ro" -o ro
  # The refusal is the open's: a walk of the mount (ls -l, find) still sees every file.
  run ls -l "$ro"
  assert_success
  assert_output --partial changes.jsonl
  run find "$ro" -maxdepth 3
  assert_success
  for t in changes.jsonl changes/since/0 changes/follow/0; do
    run cat "$ro/$t"
    assert_failure
    assert_output --partial "No data available"
    grep -F "\"path\":\"$t\"" "$ro/.runfs/rejects.jsonl" | grep -F '"errno":"ENODATA"' |
      grep -q 'this store has no change numbers yet' || fail "no reason for $t in rejects.jsonl"
  done
  # Numbered once by a read-write reader, the read-only mount shows every run.
  run "$RUNFS" changes "$df"
  assert_success
  assert_equal "$(printf '%s\n' "$output" | grep -c '"deleted":false')" "$runs"
  assert_equal "$(grep -c '"deleted":false' "$ro/changes.jsonl")" "$runs"
  if on_pg; then pg_admin "DROP DATABASE IF EXISTS ${PG_DB}_df WITH (FORCE)" >/dev/null || true; fi
}

@test "a run another writer deletes, that is written again and deleted again, gets a number never given before" {
  local R=$MNT/threads/t1/runs/r1 seen
  mkdir -p "$MNT/threads/t2/runs/r1"
  ev_start >>"$MNT/threads/t2/runs/r1/events.jsonl"
  local round
  for round in 1 2 3; do
    mkdir -p "$R"
    ev_start >>"$R/events.jsonl"
    ev_human "round $round" "$round" >>"$R/events.jsonl"
    cat "$MNT/changes.jsonl" >>"$WORK/seen"
    seen=$(top "$MNT/changes.jsonl")
    foreign_sql "DELETE FROM run_events WHERE thread_id = 't1' AND run_id = 'r1'"
    # The consumer that read up to $seen learns of the delete, under a number above it.
    cat "$MNT/changes/since/$seen" >"$WORK/since"
    grep -q '"thread_id":"t1","run_id":"r1","deleted":true' "$WORK/since" ||
      fail "round $round: the delete after change $seen is not in changes/since/$seen: $(cat "$MNT/changes.jsonl")"
    cat "$WORK/since" >>"$WORK/seen"
  done
  # No number was given to two states: each (change) names one line of what was read.
  run python3 -c 'import json, sys
seen = {}
for l in open(sys.argv[1]):
    d = json.loads(l)
    seen.setdefault(d["change"], set()).add(l)
print(sorted(n for n, ls in seen.items() if len(ls) > 1))' "$WORK/seen"
  assert_output "[]"
}

# pg_watermark: the insert trigger's constant (PostgreSQL: it fires for ids at or below it).
pg_watermark() {
  store_sql "SELECT substring(pg_get_triggerdef(oid) from 'new\.id <= ([0-9]+)') FROM pg_trigger WHERE tgname = 'runfs_note_insert' AND tgrelid = 'run_events'::regclass"
}

@test "another writer's INSERT above the insert trigger's watermark fires nothing; a read-only mount and the feed see it before a fold, a read-write open notes it, and a fold changes no number" {
  on_pg || skip "PostgreSQL only: the insert trigger's watermark on DeerFlow's table"
  local T=$MNT/threads ro=$WORK/ro n
  mkdir -p "$T/ta/runs/r1"
  ev_start >>"$T/ta/runs/r1/events.jsonl"
  runfs_unmount "$MNT"
  # A row trigger with a constant, not a statement trigger on every insert.
  run store_sql "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = 'runfs_note_insert'"
  assert_output --partial 'FOR EACH ROW WHEN ((new.id <= '
  n=$(pg_watermark)
  assert_equal "$n" "$(store_sql "SELECT value FROM runfs_meta WHERE key = 'tail_from'")"
  deerflow_row ta r1 2
  deerflow_row tn r1 1
  deerflow_row tn r2 2
  # Above the watermark: no trigger ran (DeerFlow's insert paid nothing; tn is in no side table).
  [ "$(store_sql "SELECT min(id) FROM run_events WHERE thread_id = 'tn'")" -gt "$n" ]
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_thread WHERE thread_id = 'tn'")" 0
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_change WHERE thread_id = 'tn'")" 0
  # A read-only mount cannot note them: it reads the tail (listing, logs, the feed).
  runfs_mount "$STORE" "$ro" -o ro
  run ls "$ro/threads"
  assert_output "$(printf 'ta\ntn')"
  assert_equal "$(wc -l <"$ro/threads/ta/runs/r1/events.jsonl")" 2
  assert_equal "$(wc -l <"$ro/threads/tn/events.jsonl")" 2
  cat "$ro/changes.jsonl" >"$WORK/before"
  assert_equal "$(live "$WORK/before")" "$(expected)"
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_thread WHERE thread_id = 'tn'")" 0
  # A read-write open notes them: the same numbers, now in runfs_change.
  runfs_mount "$STORE" "$MNT" --allow-delete --follow-timeout 2
  cmp "$WORK/before" "$MNT/changes.jsonl"
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_change WHERE thread_id = 'tn'")" 2
  assert_equal "$(wc -l <"$T/tn/events.jsonl")" 2
  # The fold moves the watermark over them under the table's lock; nothing shown changes.
  run store_sql "SELECT runfs_tail_fold()"
  assert_output t
  [ "$(pg_watermark)" -eq "$(store_sql "SELECT max(id) FROM run_events")" ]
  assert_equal "$(store_sql "SELECT value FROM runfs_meta WHERE key = 'tail_from'")" "$(pg_watermark)"
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_tail")" 0
  cmp "$WORK/before" "$MNT/changes.jsonl"
  cmp "$WORK/before" "$ro/changes.jsonl"
  # Rows after the fold are the tail again, for both mounts.
  deerflow_row tn r2 3
  wait_for 10 bash -c "[ \$(wc -l <'$ro/threads/tn/runs/r2/events.jsonl') = 2 ]"
  wait_for 10 bash -c "[ \$(wc -l <'$T/tn/runs/r2/events.jsonl') = 2 ]"
  cat "$MNT/changes.jsonl" >"$WORK/after"
  cmp "$WORK/after" "$ro/changes.jsonl"
  assert_equal "$(live "$WORK/after")" "$(expected)"
  increasing "$WORK/after"
}

@test "a fold refused by the lock timeout (an insert held open) leaves the watermark, the feed and the mount exact" {
  on_pg || skip "PostgreSQL only: the insert trigger's watermark on DeerFlow's table"
  local T=$MNT/threads n pid
  mkdir -p "$T/ta/runs/r1"
  ev_start >>"$T/ta/runs/r1/events.jsonl"
  deerflow_row tb r1 1
  wait_for 10 bash -c "ls '$T' | grep -qx tb"
  n=$(pg_watermark)
  # Another writer's transaction holds run_events' ROW EXCLUSIVE lock, its row not committed.
  mkfifo "$WORK/in"
  store_sql "$(printf '%s\n' "SELECT 1" "\\i $WORK/in")" >"$WORK/held.out" 2>&1 &
  pid=$!
  exec 4>"$WORK/in"
  echo "BEGIN; INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('tc', 'r1', NULL, 'llm.error', 'error', 'held', '{}', 1, now());" >&4
  wait_for 10 bash -c "[ \$(psql -X -At -d '$STORE' -c \"SELECT count(*) FROM pg_locks WHERE relation = 'run_events'::regclass AND mode = 'RowExclusiveLock' AND granted\") -gt 0 ]"
  run store_sql "SELECT runfs_tail_fold()"
  assert_output f
  assert_equal "$(pg_watermark)" "$n"
  assert_equal "$(store_sql "SELECT value FROM runfs_meta WHERE key = 'tail_from'")" "$n"
  echo "COMMIT;" >&4
  exec 4>&-
  wait "$pid"
  # The held row is the tail's: seen by the mount and numbered in the feed.
  wait_for 10 bash -c "ls '$T' | grep -qx tc"
  assert_equal "$(wc -l <"$T/tc/events.jsonl")" 1
  cat "$MNT/changes.jsonl" >"$WORK/feed"
  assert_equal "$(live "$WORK/feed")" "$(expected)"
  increasing "$WORK/feed"
}
