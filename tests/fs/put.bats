#!/usr/bin/env bats
# put.bats — `runfs put` on a store without a mount: streamed in batches with bounded memory,
# -q, FILE:LINE errors that say what earlier batches stored, a message while a lock is held.
load lib

setup() {
  WORK=$(mktemp -d "${RUNFS_TEST_ROOT:-${TMPDIR:-/tmp}}/runfs-bats.XXXXXX")
  MOUNTS=()
  STORE=$WORK/store.db
}
teardown() { runfs_teardown; }

errors() { # errors N [PAD]: N valid llm.error lines, content padded with PAD x's
  python3 -c "
import sys
pad = 'x' * int(sys.argv[2])
for i in range(int(sys.argv[1])): sys.stdout.write('{\"event_type\":\"llm.error\",\"content\":\"error %d%s\"}\n' % (i, pad))" "$1" "${2:-0}"
}

rows() { store_sql "SELECT count(*) FROM run_events"; }

@test "put prints the stored records; -q prints nothing; seq continues across batches" {
  errors 25 > "$WORK/in.jsonl"
  run "$RUNFS" put --batch 10 "$STORE" t1 r1 "$WORK/in.jsonl"
  assert_success
  [ "${#lines[@]}" -eq 25 ]
  assert_line --index 24 --partial '"seq":25,"event_type":"llm.error","category":"trace","content":"error 24"'
  run "$RUNFS" put -q "$STORE" t1 r1 < "$WORK/in.jsonl"
  assert_success
  assert_output ""
  run store_sql "SELECT count(*), count(DISTINCT seq), max(seq) FROM run_events"
  assert_output "50|50|50"
}

@test "a bad line stops put with FILE:LINE and what earlier batches stored, which stay" {
  { errors 250; echo '{"event_type":"nope"}'; errors 5; } > "$WORK/in.jsonl"
  run "$RUNFS" put -q --batch 100 "$STORE" t1 r1 "$WORK/in.jsonl"
  assert_failure 1
  assert_line "$WORK/in.jsonl:251: unknown event type 'nope' (not in the contract)"
  assert_line "runfs: nothing stored (EINVAL) from line 201 on; the 200 lines of earlier batches stay"
  [ "$(rows)" -eq 200 ]
  run bash -c "{ echo '{\"event_type\":\"llm.error\",\"content\":\"x\",\"seq\":3}'; } | '$RUNFS' put -q '$STORE' t1 r1"
  assert_failure 1
  assert_line "<stdin>:1: seq is assigned by the store"
}

@test "a line over the size limit is refused without reading it whole" {
  { errors 3; head -c 3000000 /dev/zero | tr '\0' 'a'; } > "$WORK/in.jsonl"
  run "$RUNFS" put -q "$STORE" t1 r1 "$WORK/in.jsonl"
  assert_failure 1
  assert_line --partial "$WORK/in.jsonl:4: event is over the 1048576-byte limit"
  [ "$(rows)" -eq 0 ]
}

@test "memory stays bounded whatever the input size (70 MB of input under a 150 MB address-space limit)" {
  errors 200000 300 > "$WORK/in.jsonl"
  # the old put held the whole input, every parsed event and every stored line at once
  run bash -c "ulimit -v 150000; '$RUNFS' put '$STORE' t1 r1 '$WORK/in.jsonl' | tail -1"
  assert_success
  assert_output --partial '"seq":200000,'
  [ "$(rows)" -eq 200000 ]
}

@test "put says it is waiting while another writer holds the lock, then stores" {
  skip_on_pg "SQLite's database-wide write lock"
  errors 1 | "$RUNFS" put -q "$STORE" t1 r1
  # The holder keeps the write lock until put has said it waits (or 20 s pass).
  python3 - "$STORE" "$WORK/held" "$WORK/put.err" <<'PY' &
import os, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO runfs_meta (key, value) VALUES ('held', 1)")
open(sys.argv[2], "w").close()
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    if os.path.exists(sys.argv[3]) and b"waiting" in open(sys.argv[3], "rb").read():
        break
    time.sleep(0.05)
db.execute("COMMIT")
PY
  holder=$!
  wait_for 10 test -e "$WORK/held" || fail "the holder did not take the lock"
  echo '{"event_type":"llm.error","content":"late"}' |
    "$RUNFS" put -q "$STORE" t1 r1 2> "$WORK/put.err"
  wait "$holder"
  assert_equal "$(cat "$WORK/put.err")" "runfs: waiting for another writer's lock on $STORE (up to 30 s)"
  [ "$(rows)" -eq 2 ]
}

@test "put --help answers; a bad --batch is a usage error" {
  run "$RUNFS" put --help
  assert_success
  assert_output --partial "--batch N"
  run "$RUNFS" put --batch 0 "$STORE" t1 r1
  assert_failure 2
  [ ! -e "$STORE" ]
}

@test "put shows progress and a summary on a terminal only" {
  errors 3000 > "$WORK/in.jsonl"
  run script -qec "'$RUNFS' put -q '$STORE' t1 r1 '$WORK/in.jsonl'" /dev/null
  assert_success
  assert_output --partial "put: 3000 lines stored"
  run "$RUNFS" put -q "$STORE" t1 r1 "$WORK/in.jsonl"
  assert_success
  assert_output ""
}

# chat FROM TO: a human question and an AI answer per number from FROM to TO.
chat() {
  local i
  for ((i = $1; i <= $2; i++)); do ev_human "question $i" "$i"; ev_ai "answer $i" "$i"; done
}

@test "a large put at seqs its thread's logs already cover leaves every view's size its bytes" {
  skip_on_pg "SQLite's switch for triggers (.dbconfig enable_trigger) makes the state"
  MNT=$WORK/mnt
  chat 1 150 > "$WORK/a.jsonl"
  "$RUNFS" put -q "$STORE" tq r1 "$WORK/a.jsonl"
  # Another writer deletes the top half of the thread and its high-water row with triggers
  # off: runfs's logs still end at seq 300, and DeerFlow's rule (MAX(seq) + 1 without a
  # high-water row) hands out seqs from 151 again. Only runfs_replace_note, firing on the
  # next put's rows, tells the logs they are stale.
  sqlite3 "$STORE" ".dbconfig enable_trigger off" \
    "DELETE FROM run_events WHERE thread_id = 'tq' AND seq > 150; DELETE FROM run_event_thread_seq WHERE thread_id = 'tq'" >/dev/null
  [ "$(store_sql "SELECT last_seq FROM runfs_thread WHERE thread_id = 'tq'")" -eq 300 ] ||
    fail "the logs do not end above the rows left: the case is not made"
  # One transaction of 200 rows: enough for the put to insert them with triggers off.
  chat 151 250 > "$WORK/b.jsonl"
  "$RUNFS" put -q "$STORE" tq r1 "$WORK/b.jsonl"
  [ "$(store_sql "SELECT count(*) || ' ' || min(seq) || ' ' || max(seq) FROM run_events WHERE thread_id = 'tq'")" = "350 1 350" ] ||
    fail "seqs do not follow DeerFlow's rule (MAX(seq) + 1): $(store_sql "SELECT count(*), min(seq), max(seq) FROM run_events WHERE thread_id = 'tq'")"
  runfs_mount "$STORE" "$MNT"
  local v size bytes
  for v in events.jsonl messages.jsonl stats.json transcript.md runs/r1/events.jsonl \
    runs/r1/messages.jsonl runs/r1/stats.json runs/r1/last-visible-ai-seq; do
    size=$(stat -c %s "$MNT/threads/tq/$v")
    bytes=$(cat "$MNT/threads/tq/$v" | wc -c)
    [ "$size" -eq "$bytes" ] || fail "$v: st_size $size, a read gives $bytes bytes (stale logs)"
  done
  [ "$(wc -l < "$MNT/threads/tq/runs/r1/events.jsonl")" -eq 350 ] ||
    fail "events.jsonl has $(wc -l < "$MNT/threads/tq/runs/r1/events.jsonl") lines, the store 350 rows"
  [ "$(wc -l < "$MNT/threads/tq/runs/r1/messages.jsonl")" -eq 350 ] ||
    fail "messages.jsonl has $(wc -l < "$MNT/threads/tq/runs/r1/messages.jsonl") lines, the store 350 message rows"
}
