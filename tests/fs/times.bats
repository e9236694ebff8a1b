#!/usr/bin/env bats
# Honest times on a live mount: a thread's and a run's directory show their newest event's
# time the moment an append returns (the kernel's cached directory attributes are dropped),
# and within the hub's tick after another mount's or another writer's change, so ls -lt and
# find -newer work. References come from stat and the order the test wrote in.

load lib

setup() { runfs_setup; }
teardown() { runfs_teardown; }

mtime() { stat -c %Y.%y "$1"; }
differs() { [ "$(mtime "$1")" != "$2" ]; }
# foreign_sql SQL: another writer's statement (on SQLite with a busy timeout, as DeerFlow's).
foreign_sql() {
  if on_pg; then store_sql "$1"; else sqlite3 -cmd '.timeout 10000' "$STORE" "$1"; fi
}

@test "ls -lt threads/ lists the thread with the newest event first, at once after an append to an older one" {
  local t
  for t in ta tb tc; do
    mkdir -p "$MNT/threads/$t/runs/r"
    ev_start >>"$MNT/threads/$t/runs/r/events.jsonl"
  done
  # Every directory's attributes are in the kernel's cache before the append.
  ls -lt "$MNT/threads/" >/dev/null
  run ls -t "$MNT/threads/"
  assert_line -n 0 tc
  ev_human >>"$MNT/threads/ta/runs/r/events.jsonl"
  run ls -t "$MNT/threads/"
  assert_line -n 0 ta # the append returned: ta's newest event is the newest of all
  assert_line -n 1 tc
  assert_line -n 2 tb
}

ref_after_runs() {
  touch "$WORK/ref"
  [ -z "$(find "$MNT/threads/t/runs" -mindepth 1 -maxdepth 1 -newer "$WORK/ref")" ]
}

@test "find -newer finds exactly the runs appended after a reference file was touched" {
  local r
  mkdir -p "$MNT/threads/t/runs"
  for r in r1 r2 r3 r4; do
    mkdir "$MNT/threads/t/runs/$r"
    ev_start >>"$MNT/threads/t/runs/$r/events.jsonl"
  done
  # A local file's time is the kernel's coarse clock, which may lag the store's: touched
  # until no run is newer, and then every run's attributes are in the kernel's cache.
  wait_for 5 ref_after_runs
  wait_for 5 test "$(date +%s%N)" -gt "$(stat -c %.9Y "$WORK/ref" | tr -d .)"
  ev_human >>"$MNT/threads/t/runs/r2/events.jsonl"
  ev_human >>"$MNT/threads/t/runs/r4/events.jsonl"
  run find "$MNT/threads/t/runs" -mindepth 1 -maxdepth 1 -newer "$WORK/ref" -printf '%f\n'
  assert_success
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "r2 r4 "
}

@test "a directory's mtime moves after an append through this mount, another mount's and another writer's" {
  local T=$MNT/threads/t before
  mkdir -p "$T/runs/r"
  ev_start >>"$T/runs/r/events.jsonl"
  local d
  for d in "$T" "$T/runs" "$T/runs/r"; do
    before=$(mtime "$d")
    wait_for 5 test "$(date +%s%N)" -gt "$(stat -c %.9Y "$d" | tr -d .)"
    ev_human hi 2 >>"$T/runs/r/events.jsonl"
    differs "$d" "$before" || { echo "# $d stayed at $before"; false; } # at once: the append returned, the kernel's copy was dropped
  done

  local B=$WORK/mnt-b
  runfs_mount "$STORE" "$B"
  for d in "$T" "$T/runs" "$T/runs/r"; do
    before=$(mtime "$d")
    wait_for 5 test "$(date +%s%N)" -gt "$(stat -c %.9Y "$d" | tr -d .)"
    ev_human hi 3 >>"$B/threads/t/runs/r/events.jsonl"
    wait_for 10 differs "$d" "$before"
  done

  for d in "$T" "$T/runs/r"; do
    before=$(mtime "$d")
    local seq
    seq=$(($(store_sql "SELECT max(seq) FROM run_events WHERE thread_id = 't'") + 1))
    foreign_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t', 'r', NULL, 'llm.error', 'error', 'from deerflow', '{}', $seq, '2026-03-04 05:06:07.123456')"
    wait_for 10 differs "$d" "$before"
  done
}
