#!/usr/bin/env bats
# PostgreSQL outages and standbys: an idle mount's connections the server ended are
# replaced before a request uses them; a request started while the server is down, read or
# write (tail -f's every stat and read too), waits up to connect_timeout for it, then fails
# with EIO; a hot standby mounts read-only only, and follows the primary.

load lib

setup() {
  on_pg || skip "PostgreSQL only: the server's restarts and standbys"
  [ -n "${RUNFS_PG_DIR:-}" ] || skip "needs scripts/test's cluster (RUNFS_PG_DIR)"
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  PIDS=()
  runfs_setup
}

teardown() {
  # bats runs teardown after setup's skip too: on SQLite, RUNFS_PG_DIR may still name the
  # cluster the PostgreSQL lane is using (scripts/test runs both lanes at once), whose
  # server that lane's test may have taken down on purpose; starting it here made that
  # test's own start fail ("another server might be running").
  on_pg && [ -n "${RUNFS_PG_DIR:-}" ] || return 0
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  # A test that took the server down brings it back for the next one.
  as_pg "$PG_BIN/pg_ctl" -D "$RUNFS_PG_DIR/data" status >/dev/null 2>&1 || pg_up
  local rc=0
  runfs_teardown || rc=$?
  [ -z "${STANDBY:-}" ] || standby_stop
  return "$rc"
}

# standby_start: a hot standby of the test's cluster (pg_basebackup -R, streaming), on a
# socket and port of its own; STANDBY_URI is the test's database there.
standby_start() {
  STANDBY=$(mktemp -d "${RUNFS_TEST_ROOT:-${TMPDIR:-/tmp}}/standby.XXXXXX")
  chmod 755 "$STANDBY"
  [ "$(id -u)" -ne 0 ] || chown postgres "$STANDBY"
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_pg "$PG_BIN/pg_basebackup" -D "$STANDBY/data" -R -X stream \
    -d "host=$RUNFS_PG_DIR port=$(cat "$RUNFS_PG_DIR/port") user=postgres" </dev/null
  as_pg "$PG_BIN/pg_ctl" -D "$STANDBY/data" -l "$STANDBY/log" -w -t 30 \
    -o "-c listen_addresses='' -c unix_socket_directories='$STANDBY' -p $port -c hot_standby=on -c max_connections=$(pg_admin "SHOW max_connections")" \
    start </dev/null >/dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
  STANDBY_URI=$(printf '%s\n' "$STORE" | sed "s|host=[^&]*|host=$STANDBY|; s|port=[0-9]*|port=$port|")
}

standby_stop() {
  as_pg "$PG_BIN/pg_ctl" -D "$STANDBY/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$STANDBY"
}

as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_up() { bash "$BATS_TEST_DIRNAME/../../scripts/pg-cluster" up "$RUNFS_PG_DIR"; }
pg_down() { bash "$BATS_TEST_DIRNAME/../../scripts/pg-cluster" down "$RUNFS_PG_DIR"; }
# pg_restart MODE: pg_ctl restart with that shutdown mode (fast, immediate), same options.
pg_restart() {
  as_pg "$PG_BIN/pg_ctl" -D "$RUNFS_PG_DIR/data" -l "$RUNFS_PG_DIR/log" -m "$1" -w -t 30 restart \
    </dev/null >/dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
}

# lines FILE: its line count (the file read once, its errors shown).
lines() { local n; n=$(wc -l <"$1") || return 1; echo "$n"; }

@test "an idle mount's first read after a server restart succeeds (fast and immediate shutdown), another mount's writes shown" {
  local B=$WORK/mnt-b mode
  runfs_mount "$STORE" "$B"
  mkdir -p "$MNT/threads/t/runs/r1"
  ev_start >>"$MNT/threads/t/runs/r1/events.jsonl"
  assert_equal "$(lines "$B/threads/t/events.jsonl")" 1
  for mode in fast immediate; do
    pg_restart "$mode"
    # A's first request after the restart is a write; B's is a read of what A wrote.
    ev_human "after-$mode" >>"$MNT/threads/t/runs/r1/events.jsonl" || fail "the first write after a $mode restart failed"
    run cat "$B/threads/t/events.jsonl"
    assert_success
    assert_output --partial "after-$mode"
    run cat "$MNT/threads/t/message-count"
    assert_success
  done
  assert_equal "$(lines "$B/threads/t/events.jsonl")" 3
  run grep -c '"errno":"EIO"' "$B/.runfs/rejects.jsonl"
  [ "${output:-0}" = 0 ] || [ "$status" -ne 0 ] || fail "B logged EIO: $(cat "$B/.runfs/rejects.jsonl")"
}

# blocked PID: PID waits in a request of the mount (the kernel's FUSE wait).
blocked() { grep -q request_wait_answer "/proc/$1/wchan"; }

# ms_since T0: milliseconds since T0 (date +%s%N).
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

@test "during an outage a read and a write each wait for the server up to connect_timeout, then fail with EIO" {
  local C=$WORK/mnt-c
  runfs_mount "$STORE&connect_timeout=2" "$C"
  mkdir -p "$C/threads/t/runs/r1"
  ev_start >>"$C/threads/t/runs/r1/events.jsonl"
  exec 7>>"$C/threads/t/runs/r1/events.jsonl"
  pg_down
  local t0 rc=0 took
  t0=$(date +%s%N)
  ev_human down >&7 2>"$WORK/write.err" || rc=$?
  took=$(ms_since "$t0")
  exec 7>&-
  [ "$rc" -ne 0 ] || fail "a write succeeded while the server was down"
  grep -q "Input/output error" "$WORK/write.err" || fail "not EIO: $(cat "$WORK/write.err")"
  [ "$took" -ge 1500 ] || fail "the write failed after $took ms, without waiting for the server (connect_timeout=2)"
  [ "$took" -lt 8000 ] || fail "the write waited $took ms, past connect_timeout=2"
  tail -n 1 "$C/.runfs/rejects.jsonl" | grep -q '"errno":"EIO"' || fail "no EIO reject: $(tail -n 1 "$C/.runfs/rejects.jsonl")"
  t0=$(date +%s%N)
  run cat "$C/threads/t/events.jsonl"
  took=$(ms_since "$t0")
  assert_failure
  assert_output --partial "Input/output error"
  [ "$took" -ge 1500 ] && [ "$took" -lt 8000 ] || fail "the read failed after $took ms (connect_timeout=2)"
  pg_up
  ev_human back >>"$C/threads/t/runs/r1/events.jsonl"
  assert_equal "$(lines "$C/threads/t/events.jsonl")" 2
}

@test "a read and a write started while the server is down wait for it and succeed once it is back" {
  mkdir -p "$MNT/threads/t/runs/r1"
  ev_start >>"$MNT/threads/t/runs/r1/events.jsonl"
  local want
  want=$(cat "$MNT/threads/t/events.jsonl")
  pg_down
  # The writer's own descriptor (one the shell shared would flush at each command it forks).
  ev_human down 2>"$WORK/write.err" >>"$MNT/threads/t/runs/r1/events.jsonl" &
  local writer=$!
  PIDS+=("$writer")
  cat "$MNT/threads/t/events.jsonl" >"$WORK/read" 2>"$WORK/read.err" &
  local reader=$!
  PIDS+=("$reader")
  wait_for 10 blocked "$writer" || fail "the write did not wait for the server: $(cat "$WORK/write.err")"
  wait_for 10 blocked "$reader" || fail "the read did not wait for the server: $(cat "$WORK/read.err")"
  pg_up
  wait "$writer" || fail "the write failed: $(cat "$WORK/write.err")"
  wait "$reader" || fail "the read failed: $(cat "$WORK/read.err")"
  # The two wait side by side: the read gives the thread as it was before the write or
  # after it, whole lines either way.
  local after
  after=$(cat "$MNT/threads/t/events.jsonl")
  [ "$(cat "$WORK/read")" = "$want" ] || [ "$(cat "$WORK/read")" = "$after" ] ||
    fail "the read gave neither the thread before the write nor after it: $(cat "$WORK/read")"
  assert_equal "$(grep -c '"content":"down"' "$MNT/threads/t/events.jsonl")" 1
  run grep -c '"errno":"EIO"' "$MNT/.runfs/rejects.jsonl"
  [ "${output:-0}" = 0 ] || fail "EIO logged: $(cat "$MNT/.runfs/rejects.jsonl")"
}

@test "tail -f rides out a short outage: each stat and read it makes while the server is down waits for it" {
  mkdir -p "$MNT/threads/t/runs/r1" "$MNT/threads/u/runs/r1"
  ev_start >>"$MNT/threads/t/runs/r1/events.jsonl"
  ev_start >>"$MNT/threads/u/runs/r1/events.jsonl"
  tail -n +1 -f "$MNT/threads/t/events.jsonl" >"$WORK/tail" 2>"$WORK/tail.err" &
  local tailer=$!
  PIDS+=("$tailer")
  wait_for 10 grep -q run.start "$WORK/tail"
  pg_down
  # A read that waits on the mount's idle connection: tail's next fstat, a second after its
  # last, needs a connection the mount opens while the server is down.
  cat "$MNT/threads/u/events.jsonl" >"$WORK/other" 2>"$WORK/other.err" &
  local other=$!
  PIDS+=("$other")
  wait_for 10 blocked "$other" || fail "the other read did not wait: $(cat "$WORK/other.err")"
  wait_for 10 blocked "$tailer" || fail "tail made no request that waited: $(cat "$WORK/tail.err")"
  pg_up
  wait "$other" || fail "the other read failed: $(cat "$WORK/other.err")"
  ev_human after-outage >>"$MNT/threads/t/runs/r1/events.jsonl"
  wait_for 15 grep -q after-outage "$WORK/tail" || fail "tail -f stopped: $(cat "$WORK/tail.err")"
  kill -0 "$tailer" || fail "tail -f ended: $(cat "$WORK/tail.err")"
  assert_equal "$(cat "$WORK/tail.err")" ""
}

@test "follow.jsonl and tail -f ride out a fast restart" {
  mkdir -p "$MNT/threads/t/runs/r1"
  ev_start >>"$MNT/threads/t/runs/r1/events.jsonl"
  timeout 60 cat "$MNT/threads/t/runs/r1/follow.jsonl" >"$WORK/follow" 2>"$WORK/follow.err" &
  local follower=$!
  PIDS+=("$follower")
  timeout 60 tail -n +1 -f "$MNT/threads/t/events.jsonl" >"$WORK/tail" 2>"$WORK/tail.err" &
  PIDS+=($!)
  wait_for 10 grep -q run.start "$WORK/follow"
  wait_for 10 grep -q run.start "$WORK/tail"
  pg_restart fast
  ev_human one >>"$MNT/threads/t/runs/r1/events.jsonl"
  ev_terminal >"$MNT/threads/t/runs/r1/once/run.terminal"
  # The run's feed ends after run.terminal: the follower got everything, in order.
  wait "$follower" || fail "the follower failed: $(cat "$WORK/follow.err")"
  assert_equal "$(grep -o '"seq":[0-9]*' "$WORK/follow" | tr '\n' ' ')" '"seq":1 "seq":2 "seq":3 '
  wait_for 15 grep -q run.terminal "$WORK/tail" || fail "tail -f stopped: $(cat "$WORK/tail.err")"
  assert_equal "$(cat "$WORK/tail.err")" ""
}

@test "a hot standby: a read-write mount is refused, -o ro follows the primary" {
  mkdir -p "$MNT/threads/t/runs/r1"
  ev_start >>"$MNT/threads/t/runs/r1/events.jsonl"
  standby_start
  local S=$WORK/mnt-s
  mkdir -p "$S"
  run timeout 30 "$RUNFS" mount "$STANDBY_URI" "$S"
  assert_failure 2
  assert_output --partial "a read-only standby: mount it with -o ro"
  run grep -c " $S fuse" /proc/mounts
  assert_output 0
  runfs_mount "$STANDBY_URI" "$S" -o ro
  wait_for 10 grep -q run.start "$S/threads/t/events.jsonl" || fail "the standby's mount lacks the thread"
  # The primary's appends and new threads reach the standby's mount (replayed, polled).
  ev_human on-primary >>"$MNT/threads/t/runs/r1/events.jsonl"
  mkdir -p "$MNT/threads/t2/runs/r1"
  ev_start >>"$MNT/threads/t2/runs/r1/events.jsonl"
  wait_for 10 grep -q on-primary "$S/threads/t/events.jsonl" || fail "the standby's mount did not follow: $(cat "$S/threads/t/events.jsonl")"
  cmp "$MNT/threads/t/events.jsonl" "$S/threads/t/events.jsonl"
  wait_for 10 test -f "$S/threads/t2/events.jsonl"
  cmp "$MNT/threads/t2/events.jsonl" "$S/threads/t2/events.jsonl"
  run bash -c "ev_human no >> '$S/threads/t/runs/r1/events.jsonl'"
  assert_failure
  assert_output --partial "Read-only file system"
}
