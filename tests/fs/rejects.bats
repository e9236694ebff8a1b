#!/usr/bin/env bats
# rejects.bats — .runfs/rejects.jsonl as DESIGN describes it (issues 9 and 13): a log that
# grows in place with an exact size (tail -f shows each refusal as it happens), the last 100
# refusals of each owner (two real uids: one's 120 refusals neither show to nor evict the
# other's), and reasons that number lines as the writer counts them.
load lib

setup() {
  runfs_setup
  RUN=$MNT/threads/t1/runs/r1
  mkdir -p "$RUN"
  TAIL_PID=
}

teardown() {
  [ -n "$TAIL_PID" ] && kill "$TAIL_PID" 2>/dev/null
  runfs_teardown
}

bad() { echo "{\"event_type\":\"no.such\",\"content\":\"$1\"}" >> "$2" 2>/dev/null; }

@test "rejects.jsonl grows in place: exact size, old bytes unchanged, tail -f shows new refusals" {
  local log=$MNT/.runfs/rejects.jsonl
  bad first "$RUN/events.jsonl" || true
  [ "$(stat -c %s "$log")" -eq "$(wc -c < "$log")" ]
  cp "$log" "$WORK/before"
  timeout 60 tail -n +1 -f "$log" > "$WORK/tailed" & TAIL_PID=$!
  wait_for 10 grep -q first "$WORK/tailed"
  bad second "$RUN/events.jsonl" || true
  # tail -f (which polls a FUSE file's size) prints the new refusal.
  wait_for 10 grep -q second "$WORK/tailed" || fail "tail -f did not show the new refusal: $(cat "$WORK/tailed")"
  [ "$(stat -c %s "$log")" -eq "$(wc -c < "$log")" ]
  # Appended in place: what was there is a prefix of what is there.
  cmp -n "$(stat -c %s "$WORK/before")" "$WORK/before" "$log"
  assert_equal "$(wc -l < "$log")" 2
  cmp "$log" "$WORK/tailed"
}

@test "rejects.jsonl keeps the last 100 of each owner; two uids never see or evict each other" {
  chmod 755 "$WORK"
  local sh=$WORK/shared i
  runfs_mount "$STORE" "$sh" --user-from-uid -o allow_other
  as $UID_B "mkdir -p '$sh/threads/tb/runs/r1'"
  as $UID_B "echo '{\"event_type\":\"no.such\",\"content\":\"b-only\"}' >> '$sh/threads/tb/runs/r1/events.jsonl'" || true
  as $UID_A "mkdir -p '$sh/threads/ta/runs/r1'"
  as $UID_A "for i in \$(seq 120); do echo '{\"event_type\":\"no.such\",\"content\":\"a-'\$i'\"}' >> '$sh/threads/ta/runs/r1/events.jsonl' 2>/dev/null; done" || true
  # B still has its refusal, sees none of A's.
  run as $UID_B "cat '$sh/.runfs/rejects.jsonl'"
  assert_success
  assert_equal "${#lines[@]}" 1
  assert_output --partial b-only
  refute_output --partial '"a-'
  # A sees its own last 100 (a-21 .. a-120), the 20 older ones as one dropped line, none of B's.
  as $UID_A "cat '$sh/.runfs/rejects.jsonl'" > "$WORK/a.jsonl"
  refute grep -q b-only "$WORK/a.jsonl"
  assert_equal "$(grep -c '"errno":"EINVAL"' "$WORK/a.jsonl")" 100
  head -n 1 "$WORK/a.jsonl" | grep -qE '^\{"dropped":20\} *$' || fail "first line: $(head -c 80 "$WORK/a.jsonl")"
  grep -q 'a-21\\"' "$WORK/a.jsonl"
  grep -q 'a-120\\"' "$WORK/a.jsonl"
  refute grep -q 'a-20\\"' "$WORK/a.jsonl"
  # Its size is exact and every line is JSON.
  [ "$(as $UID_A "stat -c %s '$sh/.runfs/rejects.jsonl'")" -eq "$(wc -c < "$WORK/a.jsonl")" ]
  python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$WORK/a.jsonl"
  # root, a third owner, sees neither.
  run cat "$sh/.runfs/rejects.jsonl"
  refute_output --partial b-only
  refute_output --partial '"a-'
}

@test "reasons number the lines of a write as the writer counts them" {
  local log=$MNT/.runfs/rejects.jsonl
  # bash's printf writes each line with its own write(): line 1 commits, line 2 is refused.
  run bash -c "printf '%s\n%s\n' \"\$(ev_start)\" '{\"event_type\":\"no.such\"}' >> '$RUN/events.jsonl'"
  assert_failure
  assert_equal "$(wc -l < "$RUN/events.jsonl")" 1
  tail -n 1 "$log" | grep -q '"reason":"line 2: ' || fail "$(tail -n 1 "$log")"
  # One write() of three lines, the third bad: line 3, nothing stored.
  python3 - "$RUN/events.jsonl" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
good = b'{"event_type":"llm.error","content":"x"}\n'
try:
    os.write(fd, good + good + b'{"event_type":"no.such"}\n')
except OSError:
    pass
os.write(fd, b'{"event_type":"llm.error","content":"z"}\n')
try:
    os.write(fd, b'{"event_type":"llm.error","con')
    os.write(fd, b'tent":"y"}\n{"event_type":"no.such"}\n')
except OSError:
    pass
PY
  assert_equal "$(wc -l < "$RUN/events.jsonl")" 2
  run tail -n 2 "$log"
  assert_line --index 0 --partial '"reason":"line 3: '
  # The same handle: 3 lines, then 1 stored, then the 5th complete line is the bad one.
  assert_line --index 1 --partial '"reason":"line 6: '
}
