#!/usr/bin/env bats
# load.bats — issue 6 under load: 8 writer processes across 2 mounts of one store file append
# 2,000 events each (one event per write) into 4 runs of one thread, while 4 readers cat and
# follow. No acknowledged event is lost or stored twice, seq strictly increases, each writer's
# events keep their order, and no reader ever sees a torn line. scripts/bench-load runs the
# same with 10,000 events per writer and reports throughput and write latency.
load lib

TOOL=$BATS_TEST_DIRNAME/crashtool.py
PY=$(python3 -c 'import sys; print(sys.executable)')
EVENTS=${RUNFS_LOAD_EVENTS:-2000}

setup() {
  runfs_setup
  M2=$WORK/m2
  runfs_mount "$STORE" "$M2"
  PIDS=()
}

teardown() {
  local p
  for p in "${PIDS[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  runfs_teardown
}

@test "8 writers on 2 mounts x $EVENTS events while 4 readers cat and follow: nothing lost, doubled or torn" {
  local T=threads/tl i r mnt
  for r in 1 2 3 4; do mkdir -p "$MNT/$T/runs/r$r"; done
  local stop=$WORK/stop
  # Readers: two re-read whole logs again and again, two follow (tail -f; follow.jsonl).
  "$PY" -S "$TOOL" read "$MNT/$T/events.jsonl" "$stop" > "$WORK/reader1" 2>&1 & PIDS+=($!)
  "$PY" -S "$TOOL" read "$M2/$T/runs/r1/events.jsonl" "$stop" > "$WORK/reader2" 2>&1 & PIDS+=($!)
  "$PY" -S "$TOOL" follow "$M2/$T/events.jsonl" "$stop" > "$WORK/reader3" 2>&1 & PIDS+=($!)
  "$PY" -S "$TOOL" follow "$MNT/$T/runs/r2/follow.jsonl" "$stop" > "$WORK/reader4" 2>&1 & PIDS+=($!)
  local readers=("${PIDS[@]}")
  # Writers: run r gets one writer through each mount.
  local writers=() acks=() t0 t1
  t0=$(date +%s%N)
  for i in 1 2 3 4 5 6 7 8; do
    if [ $((i % 2)) -eq 1 ]; then mnt=$MNT; else mnt=$M2; fi
    r=$(( (i + 1) / 2 ))
    "$PY" -S "$TOOL" write "$mnt/$T/runs/r$r/events.jsonl" "w$i" "$EVENTS" - 1 > "$WORK/ack.$i" &
    writers+=($!)
    PIDS+=($!)
    acks+=("$WORK/ack.$i")
  done
  for i in "${writers[@]}"; do
    wait "$i" || fail "writer $i failed"
  done
  t1=$(date +%s%N)
  # Every write was acknowledged.
  assert_equal "$(cat "${acks[@]}" | wc -l)" $((8 * EVENTS))
  # The run follower ends at run.terminal; the others end after a last pass.
  (set -C; ev_terminal > "$MNT/$T/runs/r2/once/run.terminal")
  touch "$stop"
  for i in "${readers[@]}"; do
    wait_for 60 bash -c "! kill -0 $i" || fail "a reader did not finish"
    wait "$i" || fail "reader failed: $(cat "$WORK"/reader*)"
  done
  PIDS=()
  # What the readers saw: whole lines only, and the followers saw everything.
  run cat "$WORK/reader1" "$WORK/reader2" "$WORK/reader3" "$WORK/reader4"
  refute_output --partial torn
  assert_equal "$(cat "$WORK/reader3")" "lines=$((8 * EVENTS + 1))"
  assert_equal "$(cat "$WORK/reader4")" "lines=$((2 * EVENTS + 1))"
  grep -q "lines=$((8 * EVENTS + 1))\$" "$WORK/reader1" || fail "reader1: $(cat "$WORK/reader1")"
  grep -q "lines=$((2 * EVENTS))\$" "$WORK/reader2" || fail "reader2: $(cat "$WORK/reader2")"
  # The store: every acknowledged event once, seq strictly increasing, writer order kept.
  run "$PY" -S "$TOOL" check "$STORE" "${acks[@]}" --thread tl --ignore-type run.terminal \
    --mount-log "$MNT/$T/events.jsonl" --mount-log "$M2/$T/events.jsonl"
  [ "$status" -eq 0 ] || fail "check failed: $output"
  assert_equal "$(store_sql "SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM run_events WHERE thread_id='tl'")" \
    "$((8 * EVENTS + 1))|$((8 * EVENTS + 1))|1|$((8 * EVENTS + 1))"
  cmp "$MNT/$T/events.jsonl" "$M2/$T/events.jsonl"
  run store_integrity
  assert_output ok
  local ms=$(( (t1 - t0) / 1000000 ))
  echo "# $((8 * EVENTS)) events in ${ms} ms: $(( 8 * EVENTS * 1000 / (ms > 0 ? ms : 1) )) events/s with 4 readers" >&3
}
