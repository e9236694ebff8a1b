#!/usr/bin/env bats
# Honest times on a live mount: a thread's and a run's directory show their newest event's
# time the moment an append returns (the kernel's cached directory attributes are dropped),
# and within the hub's tick after another mount's or another writer's change, so ls -lt and
# find -newer work; every time is the created_at of the newest event shown (not when it was
# indexed). References come from stat, the order the test wrote in and the store's own
# max(created_at) read with sqlite3 or psql.

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
  wait_for 5 eval 'test "$(date +%s%N)" -gt "$(stat -c %.9Y "$WORK/ref" | tr -d .)"'
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
    wait_for 5 eval 'test "$(date +%s%N)" -gt "$(stat -c %.9Y "$d" | tr -d .)"'
    ev_human hi 2 >>"$T/runs/r/events.jsonl"
    differs "$d" "$before" || { echo "# $d stayed at $before"; false; } # at once: the append returned, the kernel's copy was dropped
  done

  local B=$WORK/mnt-b
  runfs_mount "$STORE" "$B"
  for d in "$T" "$T/runs" "$T/runs/r"; do
    before=$(mtime "$d")
    wait_for 5 eval 'test "$(date +%s%N)" -gt "$(stat -c %.9Y "$d" | tr -d .)"'
    ev_human hi 3 >>"$B/threads/t/runs/r/events.jsonl"
    wait_for 10 differs "$d" "$before"
  done

  for d in "$T" "$T/runs/r"; do
    before=$(mtime "$d")
    local seq
    seq=$(($(store_sql "SELECT max(seq) FROM run_events WHERE thread_id = 't'") + 1))
    # Newer than what the directory shows: the time is its newest event's.
    foreign_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t', 'r', NULL, 'llm.error', 'error', 'from deerflow', '{}', $seq, '$(date -u '+%Y-%m-%d %H:%M:%S.%6N')')"
    wait_for 10 differs "$d" "$before"
  done
}

# newest_ref THREAD [RUN]: the newest created_at of its rows as the store holds it, in
# seconds.nanoseconds (GNU date reads both backends' text).
newest_ref() {
  local at
  at=$(store_sql "SELECT max(created_at) FROM run_events WHERE thread_id = '$1'${2:+ AND run_id = '$2'}")
  [ -n "$at" ] || return 1
  date -u -d "$at" +%s.%N
}
# shows PATH SECS.NANOS: PATH's mtime and ctime are that instant.
shows() {
  local got
  got=$(stat -c '%.9Y %.9Z' "$1")
  [ "$got" = "$2 $2" ] || { echo "# $1 shows $got, the newest event is $2"; return 1; }
}

@test "a thread's and a run's directories and files show their newest event's created_at, kept as rows come and go" {
  local T=$MNT/threads/t
  mkdir -p "$T/runs/r1" "$T/runs/r2" "$T/runs/r3"
  # Out of seq order: the thread's newest event is r1's, not its last (r2's, three months older).
  { printf '{"event_type":"llm.error","content":"a","created_at":"2025-01-02T03:04:05.123456Z"}\n'
    printf '{"event_type":"llm.error","content":"b","created_at":"2025-06-01T00:00:00.5Z"}\n'; } >>"$T/runs/r1/events.jsonl"
  { ev_human hi 1 | sed 's/}$/,"created_at":"2025-03-01T10:00:00.000001+02:00"}/'; } >>"$T/runs/r2/events.jsonl"
  local t1 r1 r2
  t1=$(newest_ref t)
  r1=$(newest_ref t r1)
  r2=$(newest_ref t r2)
  assert_equal "$t1" 1748736000.500000000 # the reference reads what was written
  assert_equal "$r2" 1740816000.000001000
  local f
  for f in "$T" "$T/runs" "$T/events.jsonl" "$T/messages.jsonl" "$T/history.jsonl"; do shows "$f" "$t1"; done
  for f in "$T/runs/r1" "$T/runs/r1/events.jsonl"; do shows "$f" "$r1"; done
  for f in "$T/runs/r2" "$T/runs/r2/events.jsonl" "$T/runs/r2/messages.jsonl"; do shows "$f" "$r2"; done
  # An empty run shows when it was made: after the test started, not an event's time.
  [ "$(stat -c %Y "$T/runs/r3")" -ge "$(stat -c %Y "$WORK")" ] || { echo "# empty r3 shows $(stat -c %y "$T/runs/r3")"; false; }

  # A fresh mount reads the kept times (the store's, not the mount's).
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  shows "$T" "$t1"
  shows "$T/runs/r2" "$r2"

  # Another writer's newer row, then another's delete of the newest: the thread is
  # recomputed from its rows and shows what is newest now.
  local seq
  seq=$(($(store_sql "SELECT max(seq) FROM run_events WHERE thread_id = 't'") + 1))
  foreign_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t', 'r2', NULL, 'llm.error', 'error', 'from deerflow', '{}', $seq, '2025-09-09 09:09:09.090909')"
  wait_for 10 shows "$T/runs/r2" "$(newest_ref t r2)"
  shows "$T" "$(newest_ref t)"
  assert_equal "$(newest_ref t)" 1757408949.090909000
  foreign_sql "DELETE FROM run_events WHERE thread_id = 't' AND seq = $seq"
  wait_for 10 shows "$T" "$t1"
  shows "$T/runs/r2" "$r2"
  foreign_sql "DELETE FROM run_events WHERE thread_id = 't' AND run_id = 'r1'"
  wait_for 10 shows "$T" "$r2"
}
