#!/usr/bin/env bats
# crash.bats — issue 6, "nothing acknowledged is lost": kill -9 of the daemon while several
# processes append through the mount. Each writer logs every write() that returned success;
# after the mount is made again (runfs mount clears the stale mountpoint) every acknowledged
# write is stored exactly once and whole, nothing foreign is stored, seq strictly increases
# per thread, and SQLite's integrity check passes. scripts/bench-crash runs the same trial
# 100 times.
load lib

TOOL=$BATS_TEST_DIRNAME/crashtool.py
# The interpreter itself, not a version manager's shim: writers must start fast.
PY=$(python3 -c 'import sys; print(sys.executable)')

setup() {
  runfs_setup
  export -f ev_start ev_error ev_terminal
  WRITERS=()
  TRIAL_ACKS=()
}

teardown() {
  local p
  for p in "${WRITERS[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  runfs_teardown
}

# gone PID: the process has exited (a zombie waiting for init to reap it counts).
gone() {
  ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}

# daemon_pid DIR: the pid of the daemon serving DIR.
daemon_pid() {
  pgrep -f "runfs mount.* $1\$" | head -n 1
}

# start_writers TRIAL: 4 writers into two runs of thread tc (two per run), each logging its
# acknowledged writes to $WORK/ack.TRIAL.I.
start_writers() {
  local t=$1 i run
  mkdir -p "$MNT/threads/tc/runs/ra$t" "$MNT/threads/tc/runs/rb$t"
  WRITERS=()
  for i in 1 2 3 4; do
    if [ "$i" -le 2 ]; then run=ra$t; else run=rb$t; fi
    "$PY" -S "$TOOL" write "$MNT/threads/tc/runs/$run/events.jsonl" "w${t}0$i" \
      > "$WORK/ack.$t.$i" 2>/dev/null &
    WRITERS+=($!)
    TRIAL_ACKS+=("$WORK/ack.$t.$i")
  done
}

# kill_daemon DIR: kill -9 the daemon behind DIR, wait (bounded) for it and the writers to end.
kill_daemon() {
  local dir=$1 pid p
  pid=$(daemon_pid "$dir")
  [ -n "$pid" ] || fail "no daemon serves $dir"
  kill -9 "$pid"
  wait_for 10 gone "$pid" || fail "daemon $pid still alive after kill -9"
  # Their next write() fails (ENOTCONN): the writers end by themselves.
  for p in "${WRITERS[@]}"; do
    wait_for 10 gone "$p" || fail "writer $p still running after the crash"
    wait "$p" 2>/dev/null || true
  done
  WRITERS=()
}

# remount: the mountpoint is stale; `runfs mount` must clear it and mount again.
remount() {
  run stat -f "$MNT"
  assert_failure
  assert_output --partial "Transport endpoint is not connected"
  run timeout 20 "$RUNFS" mount "$@" "$STORE" "$MNT"
  assert_success
  assert_output --partial "cleared a stale mount at $MNT"
  wait_for 10 test -f "$MNT/README" || fail "remounted $MNT does not answer"
  [ "$(grep -c " $MNT fuse.runfs " /proc/mounts)" -eq 1 ] || fail "stale entry left: $(grep " $MNT " /proc/mounts)"
}

# check_store: every acknowledged write of every trial so far is stored once and whole;
# on SQLite the ranges of rows runfs stored are exact too (check_canon).
check_store() {
  run "$PY" -S "$TOOL" check "$STORE" "${TRIAL_ACKS[@]}" --thread tc --ignore-type foreign.row \
    --mount-log "$MNT/threads/tc/events.jsonl"
  [ "$status" -eq 0 ] || fail "check failed: $output"
  run store_integrity
  assert_success
  assert_output ok
  on_pg || check_canon
}

# The SQLite store's ranges of rows runfs stored (hi, lo): runfs_canon's and runfs_meta's top.
CANON="(SELECT hi, lo FROM runfs_canon UNION ALL SELECT h.value, l.value FROM runfs_meta l,
  runfs_meta h WHERE l.key = 'canon_lo' AND h.key = 'canon_hi' AND l.value > 0)"

# check_canon: after the crashes the ranges cover every row the writers stored and no other
# writer's, and a copy of the store without them renders the same bytes as copying does.
check_canon() {
  local in_range="EXISTS (SELECT 1 FROM $CANON c WHERE e.id BETWEEN c.lo AND c.hi)"
  assert_equal "$(store_sql "SELECT count(*) FROM run_events e WHERE e.event_type = 'foreign.row' AND $in_range")" 0
  assert_equal "$(store_sql "SELECT count(*) FROM run_events e WHERE e.event_type <> 'foreign.row' AND NOT $in_range")" 0
  store_sql ".backup '$WORK/copy.db'"
  sqlite3 "$WORK/copy.db" "DELETE FROM runfs_canon; UPDATE runfs_meta SET value = 0 WHERE key = 'canon_lo'"
  "$RUNFS" cat "$STORE" threads/tc/events.jsonl > "$WORK/copied"
  "$RUNFS" cat "$WORK/copy.db" threads/tc/events.jsonl > "$WORK/rendered"
  cmp "$WORK/copied" "$WORK/rendered" || fail "copied and rendered bytes differ"
}

# foreign_row: another writer (sqlite3) adds a row to thread tc between runfs's commits.
foreign_row() {
  store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content,
    event_metadata, seq, created_at) SELECT 'tc', 'rf', 'foreign.row', 'trace', 'f', '{\"a\" : 1}',
    coalesce(max(seq), 0) + 1, '2026-01-02 03:04:05' FROM run_events WHERE thread_id = 'tc'"
}

# crash_trial T [mount options]: writers start; once each has had a write acknowledged, the
# daemon dies at a random point 0-400 ms later; the mount comes back, and the store holds
# everything acknowledged.
crash_trial() {
  local t=$1; shift
  start_writers "$t"
  wait_for 20 bash -c "for f in $WORK/ack.$t.{1,2,3,4}; do [ -s \$f ] || exit 1; done" ||
    fail "trial $t: the writers did not get going"
  sleep "0.$(printf '%03d' $((RANDOM % 400)))"   # not a wait: the random crash point
  kill_daemon "$MNT"
  remount "$@"
  check_store
}

@test "kill -9 during appends, 20 times at random points: every acknowledged write is stored once, whole" {
  local t acked
  for t in $(seq 1 20); do
    crash_trial "$t"
  done
  # The trials did kill writers mid-stream: there were acknowledged writes to lose.
  acked=$(cat "${TRIAL_ACKS[@]}" | wc -l)
  [ "$acked" -gt 100 ] || fail "only $acked writes were acknowledged in 20 trials"
  # The history reads back whole through the mount and through runfs cat, same bytes.
  "$RUNFS" cat "$STORE" threads/tc/events.jsonl | cmp - "$MNT/threads/tc/events.jsonl"
  # And the store still takes appends, seq continuing after the highest stored.
  local before
  before=$(store_sql "SELECT max(seq) FROM run_events WHERE thread_id='tc'")
  ev_error after >> "$MNT/threads/tc/runs/ra1/events.jsonl"
  assert_equal "$(store_sql "SELECT seq FROM run_events WHERE content='after'")" $((before + 1))
}

@test "a store of layout 4 is moved to the current layout at the mount; kill -9 between another writer's rows keeps the ranges exact" {
  skip_on_pg "PostgreSQL keeps every range in runfs_canon (no layout 5)"
  mkdir -p "$MNT/threads/tc/runs/r0"
  ev_error w900-1-1-1 >> "$MNT/threads/tc/runs/r0/events.jsonl"
  foreign_row
  ev_error w900-2-1-1 >> "$MNT/threads/tc/runs/r0/events.jsonl"
  runfs_unmount "$MNT"
  # As layout 4 kept them: the top range in runfs_canon, triggers that know only that table.
  store_sql "BEGIN;
    INSERT INTO runfs_canon (hi, lo) SELECT h.value, l.value FROM runfs_meta l, runfs_meta h
      WHERE l.key = 'canon_lo' AND h.key = 'canon_hi' AND l.value > 0;
    DELETE FROM runfs_meta WHERE key IN ('canon_lo', 'canon_hi');
    DROP TRIGGER runfs_canon_top; DROP TRIGGER runfs_canon_update;
    CREATE TRIGGER runfs_canon_top AFTER DELETE ON run_events WHEN old.id >
      coalesce((SELECT max(id) FROM run_events), 0) BEGIN
      DELETE FROM runfs_canon WHERE hi > coalesce((SELECT max(id) FROM run_events), 0)
        AND lo > coalesce((SELECT max(id) FROM run_events), 0);
      UPDATE runfs_canon SET hi = coalesce((SELECT max(id) FROM run_events), 0)
        WHERE hi > coalesce((SELECT max(id) FROM run_events), 0); END;
    CREATE TRIGGER runfs_canon_update AFTER UPDATE ON run_events BEGIN
      DELETE FROM runfs_canon WHERE hi = (SELECT min(hi) FROM runfs_canon WHERE hi >= old.id)
        AND lo <= old.id;
      DELETE FROM runfs_canon WHERE hi = (SELECT min(hi) FROM runfs_canon WHERE hi >= new.id)
        AND lo <= new.id; END;
    UPDATE runfs_meta SET value = 4 WHERE key = 'layout';
    COMMIT;"
  assert_equal "$(store_sql "SELECT group_concat(lo || '-' || hi, ' ') FROM (SELECT * FROM runfs_canon ORDER BY hi)")" "1-1 3-3"
  runfs_mount "$STORE" "$MNT"
  assert_equal "$(store_sql "SELECT value FROM runfs_meta WHERE key = 'layout'")" 6
  assert_equal "$(store_sql "SELECT group_concat(lo || '-' || hi, ' ') FROM (SELECT * FROM $CANON ORDER BY hi)")" "1-1 3-3"
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_canon")" 1
  local t
  for t in 1 2 3 4 5 6; do
    crash_trial "$t"
    foreign_row
  done
  check_store
  # The history reads back whole, and the store still takes appends after the crashes.
  "$RUNFS" cat "$STORE" threads/tc/events.jsonl | cmp - "$MNT/threads/tc/events.jsonl"
  ev_error w900-3-1-1 >> "$MNT/threads/tc/runs/r0/events.jsonl"
  check_canon
}

@test "a stale mount: runfs mount clears it with a lazy unmount, or says what to run" {
  mkdir -p "$MNT/threads/t1/runs/r1"
  ev_error one >> "$MNT/threads/t1/runs/r1/events.jsonl"
  kill_daemon "$MNT"
  # When the lazy unmount cannot be done, the message names the command, nothing is mounted.
  mkdir "$WORK/bin"
  printf '#!/bin/sh\nexit 1\n' > "$WORK/bin/fusermount3"
  chmod +x "$WORK/bin/fusermount3"
  run env PATH="$WORK/bin:$PATH" timeout 20 "$RUNFS" mount "$STORE" "$MNT"
  assert_failure
  assert_output --partial "stale mount"
  assert_output --partial "fusermount3 -u -z $MNT"
  run stat -f "$MNT"
  assert_failure
  # The command it names works, and then a mount comes up without having to clear anything.
  fusermount3 -u -z "$MNT"
  run timeout 20 "$RUNFS" mount "$STORE" "$MNT"
  assert_success
  refute_output --partial "stale"
  wait_for 10 test -f "$MNT/README"
  run cat "$MNT/threads/t1/runs/r1/events.jsonl"
  assert_output --partial '"seq":1,"event_type":"llm.error","category":"trace","content":"one"'
  # A second kill -9; this time runfs mount clears the stale mount itself.
  kill_daemon "$MNT"
  remount
  ev_error two >> "$MNT/threads/t1/runs/r1/events.jsonl"
  assert_equal "$(wc -l < "$MNT/threads/t1/runs/r1/events.jsonl")" 2
}

@test "--sync full: accepted, writes land, status.json says full; kill -9 keeps acknowledged writes" {
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT" --sync full
  run cat "$MNT/.runfs/status.json"
  assert_output --partial '"sync":"full"'
  mkdir -p "$MNT/threads/t1/runs/r1"
  ev_start >> "$MNT/threads/t1/runs/r1/events.jsonl"
  printf '%s\n%s\n' "$(ev_error a)" "$(ev_error b)" >> "$MNT/threads/t1/runs/r1/events.jsonl"
  assert_equal "$(store_sql "SELECT group_concat(seq) FROM run_events WHERE thread_id='t1'")" "1,2,3"
  assert_equal "$(wc -l < "$MNT/threads/t1/events.jsonl")" 3
  local t
  for t in 1 2 3; do
    crash_trial "$t" --sync full
    run cat "$MNT/.runfs/status.json"
    assert_output --partial '"sync":"full"'
  done
  # The default is normal, and nothing but normal|full is taken.
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  run cat "$MNT/.runfs/status.json"
  assert_output --partial '"sync":"normal"'
  run timeout 20 "$RUNFS" mount --sync always "$STORE" "$WORK/other"
  assert_failure
  assert_output --partial "--sync is normal or full"
}

holds_are() { [ "$(store_sql 'SELECT count(*) FROM runfs_hold')" = "$1" ]; }

@test "kill -9 while a once/ create is open: after the remount the singleton can still be written" {
  local R=$MNT/threads/t1/runs/r1
  mkdir -p "$R"
  ev_start >> "$R/events.jsonl"
  # A writer opens once/run.terminal exclusively (reserving it) and is still writing when the
  # daemon dies.
  "$PY" -S -c 'import os, sys, time; os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL); time.sleep(30)' \
    "$R/once/run.terminal" 2>/dev/null &
  local holder=$!
  wait_for 10 holds_are 1
  kill_daemon "$MNT"
  kill "$holder"
  wait "$holder" 2>/dev/null || true
  remount
  # The reservation died with its daemon: an exclusive create works (within a few seconds).
  wait_for 5 bash -c "set -C; ev_terminal > '$R/once/run.terminal'" ||
    fail "once/run.terminal still reserved: $(tail -n 1 "$MNT/.runfs/rejects.jsonl")"
  run cat "$R/once/run.terminal"
  assert_output --partial '"event_type":"run.terminal"'
}
