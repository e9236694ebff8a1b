#!/usr/bin/env bats
# expire.bats — retention (DESIGN "Forgetting: redaction and retention", issue 42): which runs
# `runfs expire` and a mount's --retain remove (whole runs whose newest event is older, or all
# but each thread's newest N; never one with a newer event, a live one, or an empty one), that
# a dry run changes nothing, that the high-water mark stays, what the change feed and
# expired.jsonl say, verify's summary, and a byte scan (Python) of the store's files after.
load lib

setup() {
  runfs_workdir
  openssl genpkey -algorithm ed25519 -out "$WORK/a.pem" 2>/dev/null
  chmod 600 "$WORK/a.pem"
  openssl pkey -in "$WORK/a.pem" -pubout -out "$WORK/a.pub" 2>/dev/null
}
teardown() { runfs_teardown; }

OLD=2020-01-01T00:00:00+00:00

# human TEXT [CREATED_AT]: a human-input line holding TEXT (now when no time is given).
human() {
  printf '{"event_type":"llm.human.input","content":{"type":"human","content":"%s","id":"h-1"},"metadata":{"caller":"lead_agent"}%s}\n' "$1" "${2:+,\"created_at\":\"$2\"}"
}
# terminal [CREATED_AT]: a run.terminal line.
terminal() {
  printf '{"event_type":"run.terminal","content":{"status":"success"},"metadata":{"protocol_version":1,"recovered":false}%s}\n' "${1:+,\"created_at\":\"$1\"}"
}
# runs_of THREAD: the thread's runs, one a line, as the store lists them.
runs_of() { "$RUNFS" ls "$STORE" "threads/$1/runs"; }

@test "expire: --older-than removes whole old runs only, never one with a newer event, a live or an empty one; the high-water mark stays" {
  { human "old one" "$OLD"; terminal "$OLD"; } | "$RUNFS" put -q "$STORE" t old
  # Its first event is old, its newest is not: it stays.
  { human "old start" "$OLD"; human "recent"; } | "$RUNFS" put -q "$STORE" t mixed
  # Live: no terminal, still being written.
  human "live" | "$RUNFS" put -q "$STORE" t live
  runfs_mount "$STORE" "$MNT"
  mkdir "$MNT/threads/t/runs/empty"
  runfs_unmount "$MNT"
  local hwm
  hwm=$("$RUNFS" cat "$STORE" threads/t/seq)
  [ "$hwm" = 5 ]
  run "$RUNFS" expire "$STORE" --older-than 30d
  assert_success
  # One line for the one run that went, as expired.jsonl keeps it (checked in Python).
  python3 - "$output" <<'EOF'
import json, sys
lines = [json.loads(l) for l in sys.argv[1].splitlines() if l.startswith("{")]
assert len(lines) == 1, lines
e = lines[0]
assert list(e) == ["thread_id", "run_id", "upper_seq", "events", "digest", "root", "sealed_at",
                   "expired_at", "policy", "note"], e
assert (e["thread_id"], e["run_id"], e["upper_seq"], e["events"]) == ("t", "old", 2, 2), e
assert e["digest"] is None and e["root"] is None and e["note"] is None, e
assert e["policy"] == "older-than 30d", e
EOF
  assert_output --partial "1 run expired"
  run runs_of t
  assert_output "$(printf 'empty\nlive\nmixed')"
  # seq is never reused: the mark stays and the next append continues above it.
  run "$RUNFS" cat "$STORE" threads/t/seq
  assert_output "5"
  run "$RUNFS" put "$STORE" t next < <(human "after")
  assert_success
  assert_output --partial '"seq":6'
  # Emptied of events by expiry, a thread keeps its mark too (unlike a delete); the empty
  # run stays.
  run "$RUNFS" expire "$STORE" --keep-runs 0 --thread t
  assert_success
  assert_output --partial "3 runs expired"
  run runs_of t
  assert_output "empty"
  run "$RUNFS" cat "$STORE" threads/t/seq
  assert_output "6"
  run "$RUNFS" put "$STORE" t again < <(human "again")
  assert_output --partial '"seq":7'
}

@test "expire: --keep-runs N keeps each thread's N newest runs by newest event, ties by run id; --thread and --user narrow it" {
  human "a1" 2021-01-01T00:00:00+00:00 | "$RUNFS" put -q "$STORE" a r1
  human "a3" 2021-03-01T00:00:00+00:00 | "$RUNFS" put -q "$STORE" a r3
  # r2's first event is the oldest of the thread, its newest the newest.
  { human "a2" 2020-06-01T00:00:00+00:00; human "a2 late" 2021-04-01T00:00:00+00:00; } |
    "$RUNFS" put -q "$STORE" a r2
  # Two runs of one time: the larger id counts as the newer.
  human "b" 2021-01-01T00:00:00+00:00 | "$RUNFS" put -q "$STORE" b x
  human "b" 2021-01-01T00:00:00+00:00 | "$RUNFS" put -q "$STORE" b y
  human "c" 2021-01-01T00:00:00+00:00 | "$RUNFS" put -q --user carol "$STORE" c c1
  human "c" 2021-02-01T00:00:00+00:00 | "$RUNFS" put -q --user carol "$STORE" c c2
  run "$RUNFS" expire "$STORE" --keep-runs 2 --thread a
  assert_success
  assert_output --partial '"run_id":"r1"'
  assert_output --partial "1 run expired"
  run runs_of a
  assert_output "$(printf 'r2\nr3')"
  run runs_of b
  assert_output "$(printf 'x\ny')"
  # Another owner's thread is none of dave's business: nothing of it goes.
  run "$RUNFS" expire "$STORE" --keep-runs 0 --user dave
  assert_success
  assert_output --partial "0 runs expired"
  run "$RUNFS" expire "$STORE" --keep-runs 1
  assert_success
  run runs_of a
  assert_output "r2"
  run runs_of b
  assert_output "y"
  run runs_of c
  assert_output "c2"
}

@test "expire: --dry-run prints what would go and changes nothing" {
  human "old" "$OLD" | "$RUNFS" put -q "$STORE" t old
  human "new" | "$RUNFS" put -q "$STORE" t new
  "$RUNFS" changes "$STORE" > /dev/null # the feed numbered first: nothing left to write
  local rows files=""
  rows=$(store_snapshot)
  if ! on_pg; then files=$(cat "$STORE" "$STORE-wal" 2>/dev/null | sha256sum); fi
  run "$RUNFS" expire "$STORE" --older-than 30d --dry-run
  assert_success
  assert_output --partial '"run_id":"old"'
  assert_output --partial "1 run would expire (dry run: nothing changed)"
  refute_output --partial '"run_id":"new"'
  [ "$(store_snapshot)" = "$rows" ]
  if ! on_pg; then [ "$(cat "$STORE" "$STORE-wal" 2>/dev/null | sha256sum)" = "$files" ]; fi
  run runs_of t
  assert_output "$(printf 'new\nold')"
  run "$RUNFS" cat "$STORE" expired.jsonl
  assert_output ""
}

@test "expire: the change feed shows an expired tombstone, a delete's stays plain; expired.jsonl on the mount" {
  human "old" "$OLD" | "$RUNFS" put -q "$STORE" t old
  human "gone" | "$RUNFS" put -q "$STORE" t gone
  human "kept" | "$RUNFS" put -q "$STORE" t kept
  runfs_mount "$STORE" "$MNT" --allow-delete
  local n
  n=$(tail -n 1 "$MNT/changes.jsonl" | python3 -c 'import json, sys; print(json.load(sys.stdin)["change"])')
  run "$RUNFS" expire "$STORE" --older-than 1d
  assert_success
  rm -r "$MNT/threads/t/runs/gone"
  wait_for 10 bash -c "! test -e '$MNT/threads/t/runs/old'"
  run cat "$MNT/changes/since/$n"
  assert_success
  python3 - "$output" <<'EOF'
import json, sys
lines = [json.loads(l) for l in sys.argv[1].splitlines()]
by_run = {l["run_id"]: l for l in lines}
assert set(by_run) == {"old", "gone"}, lines
assert by_run["old"] == {"change": by_run["old"]["change"], "thread_id": "t", "run_id": "old",
                         "deleted": True, "expired": True}, by_run["old"]
assert by_run["gone"]["deleted"] is True and "expired" not in by_run["gone"], by_run["gone"]
EOF
  run cat "$MNT/expired.jsonl"
  assert_success
  assert_output --regexp '^\{"thread_id":"t","run_id":"old","upper_seq":1,"events":1,"digest":null,"root":null,"sealed_at":null,"expired_at":"[^"]+","policy":"older-than 1d","note":null\}$'
  [ "$(stat -c %s "$MNT/expired.jsonl")" = "$(cat "$MNT/expired.jsonl" | wc -c)" ]
  ls "$MNT" | grep -qx expired.jsonl
}

@test "expire: a sealed run leaves what its seal said, signed; verify lists it apart and sums it up" {
  { human "sealed old" "$OLD"; terminal "$OLD"; } | "$RUNFS" put -q "$STORE" t s
  { human "kept"; terminal; } | "$RUNFS" put -q "$STORE" t k
  "$RUNFS" seal "$STORE" t s > "$WORK/seal.json"
  "$RUNFS" seal "$STORE" t k > /dev/null
  run "$RUNFS" expire "$STORE" --older-than 30d --seal-key "$WORK/a.pem" --seal-key-name runfs.test/a
  assert_success
  printf '%s\n' "$output" | grep '^{' > "$WORK/line"
  # The line gives the seal's own digest, root and time, and a note by the key.
  python3 - "$WORK/seal.json" "$WORK/line" "$WORK/note" <<'EOF'
import json, sys
seal = json.load(open(sys.argv[1]))
e = json.loads(open(sys.argv[2]).read())
for k in ("digest", "root", "sealed_at"):
    assert e[k] == seal[k], (k, e[k], seal[k])
assert e["upper_seq"] == seal["upper_seq"] and e["events"] == seal["event_count"], e
body = e["note"].split("\n\n")[0] + "\n"
assert body == ("runfs expiry v1\nthread t\nrun s\nupper_seq 2\nevents 2\nroot %s\n"
                "expired_at %s\npolicy older-than 30d\n" % (seal["root"], e["expired_at"])), body
open(sys.argv[3], "w").write(e["note"])
EOF
  run "$RUNFS" verify-note --key "$WORK/a.pub" "$WORK/note"
  assert_success
  run "$RUNFS" cat "$STORE" expired.jsonl
  assert_output "$(cat "$WORK/line")"
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_line --partial "threads/t/runs/s: expired"
  assert_line "1 seal checked, 0 changed, 0 redacted, 1 expired, 0 deleted after sealing"
}

@test "expire: nothing of an expired run is left in the store's files (rows, search index, free pages, WAL) when it returns, with a mount open" {
  local secret=SECRETexp4Qz81
  { human "the key is $secret" "$OLD"; terminal "$OLD"; } | "$RUNFS" put -q "$STORE" t old
  human "kept" | "$RUNFS" put -q "$STORE" t new
  runfs_mount "$STORE" "$MNT"
  # The search index holds it too, and the mount has read it.
  run cat "$MNT/search/$secret"
  assert_output --partial "$secret"
  grep -q "$secret" "$MNT/threads/t/events.jsonl"
  [ "$(store_scan "$secret")" -ge 1 ]
  run "$RUNFS" expire "$STORE" --older-than 30d
  assert_success
  run store_scan "$secret"
  assert_output "0"
  wait_for 10 bash -c "! grep -q '$secret' '$MNT/threads/t/events.jsonl'"
  run cat "$MNT/search/$secret"
  assert_output ""
}

@test "expire: a mount's --retain expires old runs at mount and again each period, in the background" {
  human "old" "$OLD" | "$RUNFS" put -q "$STORE" t old
  human "new" | "$RUNFS" put -q "$STORE" t new
  RUNFS_RETAIN_PERIOD=1 runfs_mount "$STORE" "$MNT" --retain 30d
  wait_for 10 bash -c "! test -e '$MNT/threads/t/runs/old'"
  [ -d "$MNT/threads/t/runs/new" ]
  grep -q '"run_id":"old".*"policy":"retain 30d"' "$MNT/expired.jsonl"
  # A run that grows old later (another writer's import) goes at a later pass.
  human "later" "$OLD" | "$RUNFS" put -q "$STORE" t2 late
  wait_for 10 bash -c "grep -q '\"run_id\":\"late\"' '$MNT/expired.jsonl'"
  run "$RUNFS" ls "$STORE" threads/t2/runs
  assert_output ""
}

@test "expire: refusals: no mode or both, a bad duration, --retain on a read-only mount" {
  human "x" | "$RUNFS" put -q "$STORE" t r
  run "$RUNFS" expire "$STORE"
  assert_failure 2
  assert_output --partial "one of --older-than DURATION, --keep-runs N"
  run "$RUNFS" expire "$STORE" --older-than 30d --keep-runs 1
  assert_failure 2
  run "$RUNFS" expire "$STORE" --older-than 30x
  assert_failure 2
  assert_output --partial "a positive whole number and a unit"
  run "$RUNFS" mount -r --retain 30d "$STORE" "$MNT"
  assert_failure 2
  assert_output --partial "--retain removes runs: it needs a read-write mount"
  run "$RUNFS" mount --retain 0d "$STORE" "$MNT"
  assert_failure
  assert_output --partial "a positive whole number and a unit"
  run runs_of t
  assert_output "r"
}

@test "expire: DeerFlow's side: the thread exports without the expired run, its mark in .seq-watermark, and reads back" {
  human "kept" | "$RUNFS" put -q "$STORE" t kept
  # The run with the highest seq is the old one (an import keeps old times).
  human "old" "$OLD" | "$RUNFS" put -q "$STORE" t old
  run "$RUNFS" expire "$STORE" --older-than 30d
  assert_success
  run "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out"
  assert_success
  [ ! -e "$WORK/out/threads/t/runs/old.jsonl" ]
  run cat "$WORK/out/threads/t/runs/.seq-watermark"
  assert_output 2
  # DeerFlow's JSONL reader (json.loads per line) reads what is left.
  python3 - "$WORK/out/threads/t/runs/kept.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["run_id"], r["seq"]) for r in rows] == [("kept", 1)], rows
PY
  # Imported into a new store, the thread continues above the mark, as DeerFlow would.
  run "$RUNFS" import "$WORK/again.db" --deerflow-jsonl "$WORK/out"
  assert_success
  run "$RUNFS" put "$WORK/again.db" t next < <(human "next")
  assert_output --partial '"seq":3'
}
