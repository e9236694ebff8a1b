#!/usr/bin/env bats
# smoke.bats — the mount comes up, takes an append and shows it back.
load lib
setup() { runfs_setup; }
teardown() { runfs_teardown; }

@test "append then cat round-trips through the mount" {
  mkdir -p "$MNT/threads/t1/runs/r1"
  ev_start >> "$MNT/threads/t1/runs/r1/events.jsonl"
  run cat "$MNT/threads/t1/runs/r1/events.jsonl"
  assert_success
  assert_output --partial '"seq":1,"event_type":"run.start","category":"trace"'
}

@test "runfs put then runfs cat round-trips a realistic run byte for byte" {
  local demo=$BATS_TEST_DIRNAME/../../scripts/demo
  # the demo's run: every contract event type, subagent steps, middleware, workspace changes
  sed -n "/^{\"event_type\"/p" "$demo" > "$WORK/run.jsonl"
  [ "$(wc -l < "$WORK/run.jsonl")" -ge 14 ]
  run "$RUNFS" put "$WORK/offline.db" t1 r1 "$WORK/run.jsonl"
  assert_success
  printf '%s\n' "$output" > "$WORK/put.out"
  "$RUNFS" cat "$WORK/offline.db" threads/t1/runs/r1/events.jsonl > "$WORK/cat.out"
  cmp "$WORK/put.out" "$WORK/cat.out"
  "$RUNFS" cat "$WORK/offline.db" threads/t1/events.jsonl | cmp - "$WORK/cat.out"
  [ "$(wc -l < "$WORK/cat.out")" -eq "$(wc -l < "$WORK/run.jsonl")" ]
}
