#!/usr/bin/env bats
# lifecycle.bats — the edges a user meets around a mount (issue 38): `runfs umount` returns
# once the daemon has let go of the store, a bare fusermount3 -u lets go of it quickly, a
# missing store is made only with --create, a directory is not a store, -r/--read-only,
# a user without /dev/fuse is told why, systemd's Type=notify gets READY=1 and STOPPING=1.
load lib

SAMPLE=$BATS_TEST_DIRNAME/../data/deerflow-jsonl

setup() {
  runfs_workdir
  BG_PIDS=()
}

teardown() {
  local p
  for p in "${BG_PIDS[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  runfs_teardown
}

# ---- helpers ----

daemon_pid() { pgrep -f "runfs mount.* $1\$" | head -n 1; }

# exited PID: the process is gone, or a zombie (its files closed) nobody has reaped yet.
exited() {
  local state
  state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
  [ -z "$state" ] || [ "$state" = Z ]
}

# mount_with_event DIR [options...]: $STORE mounted at DIR with one event written through it.
mount_with_event() {
  local dir=$1; shift
  runfs_mount "$STORE" "$dir" "$@"
  mkdir -p "$dir/threads/t1/runs/r1"
  ev_human "at $(date +%s%N)" >> "$dir/threads/t1/runs/r1/events.jsonl"
}

# notify_listen ADDR OUT: a datagram socket bound at ADDR (a path, or '@name' for an abstract
# one) that appends each message it gets to OUT, as systemd's NOTIFY_SOCKET would take them.
notify_listen() {
  python3 -c '
import socket, sys
addr, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
open(out + ".bound", "w").close()
s.settimeout(60)
while True:
    msg = s.recv(4096).decode()
    with open(out, "a") as f:
        f.write(msg + "\n")
' "$1" "$2" &
  BG_PIDS+=($!)
  wait_for 10 test -e "$2.bound"
}

# ---- runfs umount ----

@test "runfs umount returns once the store is closed: sqlite3 without a busy timeout never finds it locked" {
  skip_on_pg "SQLite's file lock"
  local i out
  for i in $(seq 50); do
    mount_with_event "$MNT"
    run "$RUNFS" umount "$MNT"
    assert_success
    # No .timeout: a lock the daemon still held would be "database is locked" at once.
    out=$(sqlite3 "$STORE" 'SELECT count(*) FROM run_events' 2>&1) || true
    [ "$out" = "$i" ] || fail "try $i: sqlite3 right after runfs umount said: $out"
  done
}

@test "runfs umount returns once the daemon has exited (its store connections closed)" {
  local i pid
  for i in $(seq 10); do
    mount_with_event "$MNT"
    pid=$(daemon_pid "$MNT")
    [ -n "$pid" ]
    run "$RUNFS" umount "$MNT"
    assert_success
    exited "$pid" || fail "try $i: daemon $pid still running when runfs umount returned"
    ! grep -q " $MNT fuse.runfs " /proc/mounts
  done
}

@test "after a bare fusermount3 -u the daemon closes the store within 100 ms" {
  local i pid ms=()
  for i in 1 2 3 4 5; do
    mount_with_event "$MNT"
    pid=$(daemon_pid "$MNT")
    [ -n "$pid" ]
    # From the unmount to the daemon's exit, measured through a pidfd (no fixed sleep).
    ms+=("$(python3 -c '
import os, select, subprocess, sys, time
fd = os.pidfd_open(int(sys.argv[1]))
t0 = time.monotonic()
subprocess.run(["fusermount3", "-u", sys.argv[2]], check=True)
select.select([fd], [], [], 10)
print(int((time.monotonic() - t0) * 1000))
' "$pid" "$MNT")")
  done
  # The median, so that one try slowed by a busy machine does not decide.
  local median
  median=$(printf '%s\n' "${ms[@]}" | sort -n | sed -n 3p)
  [ "$median" -le 100 ] || fail "the daemon took ${ms[*]} ms to exit after fusermount3 -u"
}

@test "runfs umount of a directory that is no runfs mount says so, exit 2" {
  mkdir -p "$WORK/plain"
  run "$RUNFS" umount "$WORK/plain"
  assert_failure 2
  assert_output "runfs: $WORK/plain: not a runfs mount"
  # A mount of another filesystem is no runfs mount either.
  run "$RUNFS" umount /proc
  assert_failure 2
  assert_output "runfs: /proc: not a runfs mount"
  grep -q " /proc proc " /proc/mounts
  run "$RUNFS" umount "$WORK/nowhere"
  assert_failure 2
  assert_output --partial "$WORK/nowhere: No such file or directory"
}

# ---- creating a store ----

@test "a missing SQLite store is made only with --create; without it: exit 2, nothing created, how to make one" {
  skip_on_pg "a SQLite file"
  local missing=$WORK/typo.db
  MOUNTS+=("$MNT") # unmounted in teardown should a mount be made after all
  run "$RUNFS" mount "$missing" "$MNT"
  assert_failure 2
  assert_output --partial "no store at $missing"
  assert_output --partial "--create"
  assert_output --partial "runfs put"
  assert_output --partial "runfs import"
  run ls "$WORK"
  assert_output mnt
  ! grep -q " $MNT " /proc/mounts
  # -o ro never creates one either.
  run "$RUNFS" mount -o ro "$missing" "$MNT"
  assert_failure 2
  [ ! -e "$missing" ]
  # --create and -o create make it (0600), empty and mounted.
  runfs_mount "$missing" "$MNT" --create
  assert_equal "$(stat -c %a "$missing")" 600
  assert_equal "$(ls "$MNT/threads")" ""
  run "$RUNFS" umount "$MNT"
  assert_success
  mkdir -p "$WORK/m2"
  run timeout 20 "$RUNFS" mount -o create "$WORK/other.db" "$WORK/m2"
  assert_success
  MOUNTS+=("$WORK/m2")
  [ -f "$WORK/other.db" ]
}

@test "runfs put and runfs import still create their store" {
  skip_on_pg "a SQLite file"
  ev_start | "$RUNFS" put -q "$WORK/put.db" t1 r1
  assert_equal "$(sqlite3 "$WORK/put.db" 'SELECT event_type FROM run_events')" run.start
  run "$RUNFS" import -q "$WORK/imported.db" --deerflow-jsonl "$SAMPLE/.deer-flow"
  assert_success
  [ "$(sqlite3 "$WORK/imported.db" 'SELECT count(*) FROM run_events')" -gt 0 ]
}

@test "a directory given as the store is named as a directory" {
  mkdir -p "$WORK/adir"
  run "$RUNFS" mount "$WORK/adir" "$MNT"
  assert_failure 2
  assert_output "runfs: $WORK/adir is a directory, not a store: give a SQLite file or a postgresql:// URI"
  run "$RUNFS" mount --create "$WORK/adir" "$MNT"
  assert_failure 2
  assert_output --partial "is a directory"
  run "$RUNFS" cat "$WORK/adir" threads
  assert_failure 2
  assert_output --partial "is a directory"
  run bash -c "ev_start | '$RUNFS' put '$WORK/adir' t1 r1"
  assert_failure
  assert_output --partial "is a directory"
  refute_output --partial "unable to open database file"
}

# ---- conventions ----

@test "-r and --read-only mount read-only, as -o ro: ro in /proc/mounts, writes are EROFS" {
  mount_with_event "$MNT"
  local flag dir
  for flag in -r --read-only; do
    dir=$WORK/ro$flag
    runfs_mount "$STORE" "$dir" "$flag"
    grep -q " $dir fuse.runfs ro," /proc/mounts || fail "$flag: $(grep " $dir " /proc/mounts)"
    cmp "$dir/threads/t1/events.jsonl" "$MNT/threads/t1/events.jsonl"
    run bash -c "ev_start >> '$dir/threads/t1/runs/r1/events.jsonl'"
    assert_failure
    assert_output --partial "Read-only file system"
    run mkdir "$dir/threads/t2"
    assert_failure
    assert_output --partial "Read-only file system"
    run cat "$dir/.runfs/status.json"
    assert_output --partial '"read_only":true'
  done
}

@test "a user who may not open /dev/fuse is told it is a permission problem, and what to do" {
  # A copy of the binary that uid 65534 can reach (the checkout may be under a 0700 home).
  local runfs
  runfs=$(reachable "$RUNFS")
  mkdir -p "$WORK/nobody"
  chmod 777 "$WORK/nobody"
  on_pg || ev_start | "$RUNFS" put -q "$STORE" t0 r0
  MOUNTS+=("$WORK/nobody")
  local cmd="'$runfs' mount '$STORE' '$WORK/nobody'"
  if setpriv --reuid=65534 --regid=65534 --clear-groups -- test -r /dev/fuse -a -w /dev/fuse; then
    # /dev/fuse is open to everyone here: in a mount namespace of its own, the test puts a
    # device nobody else may open in its place.
    command -v unshare >/dev/null || skip "/dev/fuse is open to every user and unshare is missing"
    touch "$WORK/fuse"
    chmod 600 "$WORK/fuse"
    run unshare -m --propagation private bash -c "mount --bind '$WORK/fuse' /dev/fuse &&
      setpriv --reuid=65534 --regid=65534 --clear-groups -- bash -c \"$cmd\""
  else
    run setpriv --reuid=65534 --regid=65534 --clear-groups -- bash -c "$cmd"
  fi
  assert_failure
  assert_output --partial "/dev/fuse: permission denied"
  assert_output --partial "group"
  assert_output --partial "root"
  refute_output --partial "module"
  refute_output --partial "--device"
  ! grep -q " $WORK/nobody " /proc/mounts
}

@test "NOTIFY_SOCKET: READY=1 once the mount serves, STOPPING=1 when it stops (a path and an abstract name)" {
  local addr out
  for addr in "$WORK/notify.sock" "@runfs-$(basename "$WORK")"; do
    out=$WORK/notify.$RANDOM
    notify_listen "$addr" "$out"
    export NOTIFY_SOCKET=$addr
    runfs_mount "$STORE" "$MNT"
    unset NOTIFY_SOCKET
    wait_for 10 grep -qx READY=1 "$out" || fail "$addr: no READY=1: $(cat "$out" 2>/dev/null)"
    # Ready means serving: the mount answers.
    [ -f "$MNT/README" ]
    run grep -c STOPPING=1 "$out"
    assert_output 0
    run "$RUNFS" umount "$MNT"
    assert_success
    wait_for 10 grep -qx STOPPING=1 "$out" || fail "$addr: no STOPPING=1: $(cat "$out")"
    run cat "$out"
    assert_output "READY=1
STOPPING=1"
  done
}

@test "systemd-run -p Type=notify: the unit is started once the mount serves" {
  [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] || skip "systemd is not PID 1 here"
  command -v systemd-run >/dev/null || skip "systemd-run is not installed"
  local unit=runfs-test-$(basename "$WORK" | tr -c 'A-Za-z0-9\n' -)
  mount_with_event "$WORK/seed"
  "$RUNFS" umount "$WORK/seed"
  run systemd-run --unit="$unit" -p Type=notify -- "$(realpath "$RUNFS")" mount -f "$STORE" "$MNT"
  assert_success
  MOUNTS+=("$MNT")
  # systemd-run returns when the start job is done, which for Type=notify is READY=1.
  [ -f "$MNT/threads/t1/events.jsonl" ]
  run "$RUNFS" umount "$MNT"
  assert_success
  wait_for 10 bash -c "! systemctl is-active -q '$unit'"
  run systemctl show -p Result --value "$unit"
  assert_output success
  systemctl reset-failed "$unit" 2>/dev/null || true
}
