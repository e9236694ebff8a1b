#!/usr/bin/env bats
# idempotency.bats — DESIGN "Appending": a line's idempotency_key makes a retry safe. The same
# key and event is confirmed with the original record, a different event under a used key is
# EEXIST, keys are kept per thread and never shown, and a writer whose daemon was killed -9 in
# mid-write resends everything after the remount and gets every event exactly once.
load lib

PY=$(python3 -c 'import sys; print(sys.executable)')
WRITER=$BATS_TEST_DIRNAME/idemwriter.py

setup() {
  runfs_setup
}
teardown() {
  [ -n "${WORK:-}" ] || return 0
  [ -n "${WPID:-}" ] && { kill "$WPID" 2>/dev/null || true; wait "$WPID" 2>/dev/null || true; }
  runfs_teardown
}

# rows_at_least N: the store holds N rows or more.
rows_at_least() { [ "$(store_sql 'SELECT count(*) FROM run_events')" -ge "$1" ]; }

keyed() { printf '{"event_type":"llm.error","content":"%s","idempotency_key":"%s"}\n' "$1" "$2"; }

@test "same key and event: accepted once, the receipt shows the original record; key never shown" {
  mkdir -p "$MNT/threads/t1/runs/r1"
  f=$MNT/threads/t1/runs/r1/events.jsonl
  # one O_RDWR handle: its receipt is what each write stored, the resend's the original
  run python3 - "$f" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_APPEND)
for content, key in (("boom", "k1"), ("other", "k2"), ("boom", "k1")):
    os.write(fd, b'{"event_type":"llm.error","content":"%s","idempotency_key":"%s"}\n' % (content.encode(), key.encode()))
os.lseek(fd, 0, os.SEEK_SET)
data = b""
while True:
    chunk = os.read(fd, 65536)
    if not chunk:
        break
    data += chunk
os.close(fd)
sys.stdout.write(data.decode())
PY
  assert_success
  [ "${#lines[@]}" -eq 3 ] || fail "receipt: $output"
  [ "${lines[0]}" = "${lines[2]}" ]
  [[ "${lines[0]}" == *'"seq":1,'*'"content":"boom"'* ]]
  [[ "${lines[1]}" == *'"seq":2,'* ]]
  [ "$(wc -l < "$f")" -eq 2 ]
  run grep -c idempotency "$f" "$MNT/threads/t1/events.jsonl"
  assert_output "$(printf '%s:0\n%s:0' "$f" "$MNT/threads/t1/events.jsonl")"
  # the size the mount shows is still the bytes it reads
  [ "$(stat -c %s "$f")" -eq "$(cat "$f" | wc -c)" ]
  # equal as JSON values: other key order and spacing are the same event
  printf '{"idempotency_key":"k1", "content": "boom", "event_type":"llm.error"}\n' >> "$f"
  [ "$(wc -l < "$f")" -eq 2 ]
}

@test "a used key with a different event is EEXIST and stores nothing of that write" {
  mkdir -p "$MNT/threads/t1/runs/r1"
  f=$MNT/threads/t1/runs/r1/events.jsonl
  keyed boom k1 >> "$f"
  before=$(store_snapshot)
  # one write(): a new key and a used one with another event; the whole write is refused
  run python3 -c "
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b'{\"event_type\":\"llm.error\",\"content\":\"fresh\",\"idempotency_key\":\"k9\"}\n{\"event_type\":\"llm.error\",\"content\":\"changed\",\"idempotency_key\":\"k1\"}\n')" "$f"
  assert_failure
  assert_output --partial "File exists"
  [ "$(store_snapshot)" = "$before" ]
  run tail -1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial "idempotency_key 'k1' was used for a different event (seq 1)"
  # keys are per thread: the same key elsewhere is a new event
  mkdir -p "$MNT/threads/t2/runs/r1"
  keyed changed k1 >> "$MNT/threads/t2/runs/r1/events.jsonl"
  [ "$(wc -l < "$MNT/threads/t2/events.jsonl")" -eq 1 ]
}

@test "a key is checked: 1-128 printable ASCII characters" {
  mkdir -p "$MNT/threads/t1/runs/r1"
  f=$MNT/threads/t1/runs/r1/events.jsonl
  run bash -c "printf '%s\n' '{\"event_type\":\"llm.error\",\"content\":\"x\",\"idempotency_key\":\"\"}' >> '$f'"
  assert_failure
  run bash -c "printf '%s\n' '{\"event_type\":\"llm.error\",\"content\":\"x\",\"idempotency_key\":\"$(head -c 129 /dev/zero | tr '\0' k)\"}' >> '$f'"
  assert_failure
  run bash -c "printf '%s\n' '{\"event_type\":\"llm.error\",\"content\":\"x\",\"idempotency_key\":\"caf\u00e9\"}' >> '$f'"
  assert_failure
  run bash -c "printf '%s\n' '{\"event_type\":\"llm.error\",\"content\":\"x\",\"idempotency_key\":7}' >> '$f'"
  assert_failure
  [ "$(wc -l < "$f")" -eq 0 ]
  keyed ok "$(head -c 128 /dev/zero | tr '\0' k)" >> "$f"
  [ "$(wc -l < "$f")" -eq 1 ]
}

@test "runfs put: a resent keyed file stores nothing twice and prints the original records" {
  for i in 1 2 3; do keyed "e$i" "k$i"; done > "$WORK/in.jsonl"
  # a store of its own (on PostgreSQL the test's database, where nothing is written yet)
  put=$WORK/put.db
  on_pg && put=$STORE
  run "$RUNFS" put "$put" t1 r1 "$WORK/in.jsonl"
  assert_success
  first=$output
  { keyed e4 k4; cat "$WORK/in.jsonl"; } > "$WORK/again.jsonl"
  run "$RUNFS" put "$put" t1 r1 "$WORK/again.jsonl"
  assert_success
  [ "${lines[0]}" != "" ]
  [[ "${lines[0]}" == *'"seq":4,'* ]]
  [ "$(printf '%s\n' "${lines[@]:1}")" = "$first" ]
  run store_sql "SELECT count(*) FROM run_events" "$put"
  assert_output 4
}

@test "kill -9 of the daemon in mid-write: the writer resends everything after the remount, every event is stored exactly once" {
  mkdir -p "$MNT/threads/tk/runs/rk"
  f=$MNT/threads/tk/runs/rk/events.jsonl
  "$PY" -S "$WRITER" "$f" 0 200000 > "$WORK/first.out" &
  WPID=$!
  wait_for 30 rows_at_least 300
  pid=$(pgrep -f "runfs mount.* $MNT\$" | head -n 1)
  kill -9 "$pid"
  wait_for 10 bash -c "! kill -0 $WPID 2>/dev/null"
  wait "$WPID" || true
  WPID=
  read -r reached errno < "$WORK/first.out"
  # ENOTCONN (or ECONNABORTED for a write in flight): the writer cannot know what committed
  [ "$errno" = 107 ] || [ "$errno" = 103 ] || fail "writer stopped with: $(cat "$WORK/first.out")"
  run timeout 20 "$RUNFS" mount "$STORE" "$MNT"
  assert_success
  wait_for 10 test -f "$MNT/README"
  # the retry: everything from the first line on, and a little more
  last=$((reached + 50))
  run "$PY" -S "$WRITER" "$f" 0 "$last"
  assert_output done
  run store_sql "SELECT count(*), count(DISTINCT content), min(seq), max(seq) FROM run_events WHERE thread_id = 'tk'"
  assert_output "$((last + 1))|$((last + 1))|1|$((last + 1))"
  run store_sql "SELECT count(*) FROM runfs_idem WHERE thread_id = 'tk'"
  assert_output "$((last + 1))"
  [ "$(wc -l < "$f")" -eq $((last + 1)) ]
}
