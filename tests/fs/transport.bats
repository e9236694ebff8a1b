#!/usr/bin/env bats
# transport.bats — how the kernel's requests reach the daemon: over io_uring where the kernel
# allows it (root's switch, /sys/module/fuse/parameters/enable_uring, read at mount), by
# reading /dev/fuse otherwise; status.json and the log say which, and why not io_uring.
load lib

PARAM=/sys/module/fuse/parameters/enable_uring

setup() {
  [ -w "$PARAM" ] || skip "needs root and a kernel with FUSE over io_uring ($PARAM)"
  # The switch is the host's: one test at a time sets it (scripts/test runs the SQLite and
  # PostgreSQL suites side by side), from before its mount until teardown puts it back.
  exec {LOCK}>"${TMPDIR:-/tmp}/runfs-enable_uring.lock"
  flock -w 300 "$LOCK"
  SAVED=$(cat "$PARAM")
  runfs_workdir
}

teardown() {
  local rc=0
  runfs_teardown || rc=$?
  if [ -n "${SAVED:-}" ]; then echo "$SAVED" > "$PARAM"; fi
  if [ -n "${LOCK:-}" ]; then exec {LOCK}>&-; fi
  return "$rc"
}

daemon_pid() { pgrep -f "runfs mount.* $MNT\$" | head -1; }

# ring_switches: how often libfuse's ring threads (named fuse-ring-N, one per CPU) woke up.
ring_switches() {
  local t n=0 c
  for t in /proc/"$(daemon_pid)"/task/*; do
    [[ $(cat "$t/comm") == fuse-ring-* ]] || continue
    c=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status")
    n=$((n + c))
  done
  echo "$n"
}

ring_threads() { cat /proc/"$(daemon_pid)"/task/*/comm | grep -c '^fuse-ring-' || true; }

# mount_field KEY: the mount object's KEY in status.json, as JSON.
mount_field() {
  python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["mount"].get(sys.argv[2], "absent")))' \
    "$MNT/.runfs/status.json" "$1"
}

skip_without_uring() {
  if mount_field transport_reason | grep -q 'built against'; then
    skip "this runfs is built without io_uring: $(mount_field transport_reason)"
  fi
}

@test "where the kernel allows io_uring the mount uses it and status.json says so" {
  echo Y > "$PARAM"
  runfs_mount "$STORE" "$MNT" --log "$WORK/log"
  skip_without_uring
  run mount_field transport
  assert_output '"io_uring"'
  run mount_field transport_reason
  assert_output 'null'
  grep -q 'requests over io_uring' "$WORK/log"
  # libfuse's rings, one per CPU, serve the requests: their threads wake for each one.
  [ "$(ring_threads)" -eq "$(nproc --all)" ]
  mkdir -p "$MNT/threads/t1/runs/r1"
  local before i
  before=$(ring_switches)
  for i in $(seq 20); do
    ev_human "m$i" "$i" >> "$MNT/threads/t1/runs/r1/events.jsonl"
  done
  [ "$(ring_switches)" -ge $((before + 20)) ]
  run cat "$MNT/threads/t1/runs/r1/events.jsonl"
  assert_success
  [ "${#lines[@]}" -eq 20 ]
  assert_line --index 19 --partial '"seq":20,"event_type":"llm.human.input"'
}

@test "with io_uring refused by the kernel the mount reads /dev/fuse and says why" {
  echo N > "$PARAM"
  runfs_mount "$STORE" "$MNT" --log "$WORK/log"
  skip_without_uring
  run mount_field transport
  assert_output '"dev_fuse"'
  run mount_field transport_reason
  assert_output --partial 'io_uring is off in the kernel'
  assert_output --partial 'enable_uring is N'
  grep -q 'requests over /dev/fuse: io_uring is off in the kernel' "$WORK/log"
  grep -q "as root: echo 1 > $PARAM" "$WORK/log"
  [ "$(ring_threads)" -eq 0 ]
  mkdir -p "$MNT/threads/t1/runs/r1"
  ev_start >> "$MNT/threads/t1/runs/r1/events.jsonl"
  run cat "$MNT/threads/t1/runs/r1/events.jsonl"
  assert_success
  assert_output --partial '"seq":1,"event_type":"run.start"'
}
