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
