#!/usr/bin/env bats
# chaos.bats — issue 9: several processes do random opens, reads, appends, listings and
# follows of random files on two mounts of one store, with follow.jsonl readers that close
# early (after a few bytes, during a poll, killed while parked). Afterwards: both daemons are
# alive and answer, no reader saw a torn line, seq strictly increases, every acknowledged
# append is stored once, and a finished run's feed equals its log. scripts/test runs this
# suite with the plain, the ASan+UBSan and the TSan daemon (any sanitizer report fails it,
# lib.bash); scripts/bench chaos runs it longer.
load lib

TOOL=$BATS_TEST_DIRNAME/crashtool.py
PY=$(python3 -c 'import sys; print(sys.executable)')
SECONDS_=${RUNFS_CHAOS_SECONDS:-30}
PROCS=${RUNFS_CHAOS_PROCS:-6}

setup() {
  runfs_setup --follow-timeout 30
  M2=$WORK/m2
  runfs_mount "$STORE" "$M2" --follow-timeout 30
  PIDS=()
}

teardown() {
  local p
  for p in "${PIDS[@]}"; do
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  runfs_teardown
}

daemon_pid() { pgrep -f "runfs mount.* $1\$" | head -1; }

@test "$PROCS processes of random opens, reads, appends and early-closing follows for ${SECONDS_}s" {
  local p1 p2 i seed=${RUNFS_CHAOS_SEED:-$RANDOM} acks=()
  p1=$(daemon_pid "$MNT")
  p2=$(daemon_pid "$M2")
  [ -n "$p1" ] && [ -n "$p2" ]
  for ((i = 1; i <= PROCS; i++)); do
    "$PY" -S "$TOOL" chaos "$WORK/ack.$i" "$SECONDS_" $((seed + i)) "$i" "$MNT" "$M2" \
      > "$WORK/chaos.$i" 2>&1 3>&- &
    PIDS+=($!)
    acks+=("$WORK/ack.$i")
  done
  for ((i = 0; i < PROCS; i++)); do
    wait_for $((SECONDS_ + 60)) bash -c "! kill -0 ${PIDS[$i]}" || fail "chaos process $((i + 1)) hangs"
    wait "${PIDS[$i]}" || fail "chaos process $((i + 1)) (seed $seed): $(cat "$WORK/chaos.$((i + 1))")"
  done
  PIDS=()
  kill -0 "$p1" || fail "the first daemon died"
  kill -0 "$p2" || fail "the second daemon died"
  assert_file_exist "$MNT/README"
  ls "$M2/threads" > /dev/null
  # The store: every acknowledged append once and whole, seq strictly increasing per
  # thread; the logs as both mounts render them: whole lines, seq increasing.
  run "$PY" -S "$TOOL" check "$STORE" "${acks[@]}" --ignore-type run.terminal \
    --mount-log "$MNT/threads/c1/events.jsonl" --mount-log "$M2/threads/c2/events.jsonl"
  [ "$status" -eq 0 ] || fail "check failed: $output"
  # A run that ends: its feed, read whole after the chaos, is its log.
  local run=$MNT/threads/c1/runs/r1
  mkdir -p "$run"
  (set -C; ev_terminal > "$run/once/run.terminal")
  run timeout 20 cat "$M2/threads/c1/runs/r1/follow.jsonl"
  assert_success
  assert_equal "$output" "$(cat "$run/events.jsonl")"
  local ops
  ops=$(awk '{sub("ops=", "", $1); n += $1} END {print n}' "$WORK"/chaos.*)
  [ "$ops" -gt 0 ]
  echo "# chaos: $PROCS processes, $ops operations in ${SECONDS_}s (seed $seed)" >&3
}
