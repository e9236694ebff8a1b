#!/usr/bin/env bats
# owners.bats — issue 9 items 2 and 7 on real mounts: owners of one --user-from-uid mount can
# neither see nor block each other (threads, sizes, singletons, seals; runfs verify holds where
# two owners wrote), and refusals that used to vanish reach close() and rejects.jsonl (a
# created seal.json or once/<type> with nothing to store; a deleted run takes its seal along).
load lib

# Two unprivileged uids without passwd entries: setpriv needs none.
UID_A=61001
UID_B=61002

setup() {
  runfs_setup --allow-delete
  export -f ev_start ev_human ev_error ev_terminal
  chmod 755 "$WORK"
}

teardown() {
  runfs_teardown
}

# as UID CMD: run the shell command CMD as an unprivileged uid (no supplementary groups).
as() {
  local uid=$1; shift
  setpriv --reuid="$uid" --regid="$uid" --clear-groups -- bash -c "$*"
}

# excl_close PATH [BODY]: create PATH exclusively, write BODY (if any), close; prints the
# errno name close() (or open) failed with, or "ok".
excl_close() {
  python3 - "$@" <<'EOF'
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
except OSError as e:
    print("open", errno.errorcode[e.errno]); sys.exit(0)
if len(sys.argv) > 2:
    os.write(fd, sys.argv[2].encode())
try:
    os.close(fd)
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
EOF
}

# A thread written by DeerFlow for two users (rows carry user_id), as a gateway writes it.
deerflow_shared_thread() {
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, \
    content, event_metadata, seq, created_at) VALUES \
    ('shared', 'r1', '$UID_A', 'llm.error', 'error', 'from-a', '{}', 1, '2026-01-02 03:04:05.000000'), \
    ('shared', 'r1', '$UID_B', 'llm.error', 'error', 'from-b', '{}', 2, '2026-01-02 03:04:06.000000')"
}

@test "owners: another owner's thread is EACCES to mkdir and ENOENT to read; its size never moves" {
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" --user-from-uid -o allow_other
  as $UID_A "mkdir -p '$sh/threads/ta/runs/r1' && ev_error one >> '$sh/threads/ta/runs/r1/events.jsonl' && ev_error two >> '$sh/threads/ta/runs/r1/events.jsonl'"
  local size
  size=$(as $UID_A "stat -c %s '$sh/threads/ta/runs/r1/events.jsonl'")
  [ "$size" -gt 0 ]
  local before
  before=$(store_snapshot)
  # B guesses the id: mkdir says only that it is taken; nothing of it reads.
  run as $UID_B "mkdir '$sh/threads/ta'"
  assert_failure
  assert_output --partial "Permission denied"
  run as $UID_B "mkdir -p '$sh/threads/ta/runs/r1'"
  assert_failure
  assert_output --partial "Permission denied"
  run as $UID_B "cat '$sh/threads/ta/seq'"
  assert_failure
  assert_output --partial "No such file or directory"
  run as $UID_B "ls '$sh/threads'"
  assert_success
  assert_output ""
  # A's log is as it was: same size, exact, and a tail -f of it would see no truncation.
  assert_equal "$(as $UID_A "stat -c %s '$sh/threads/ta/runs/r1/events.jsonl'")" "$size"
  assert_equal "$(as $UID_A "wc -c < '$sh/threads/ta/runs/r1/events.jsonl'")" "$size"
  assert_equal "$(as $UID_A "cat '$sh/threads/ta/seq'")" 2
  assert_equal "$(store_snapshot)" "$before"
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_owner WHERE $(owner_column) = '$UID_B'")" 0
}

@test "owners: in a thread both own, singletons and seals are each owner's; verify holds; a delete takes only the deleter's seal" {
  deerflow_shared_thread
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" --user-from-uid -o allow_other --allow-delete
  local R=$sh/threads/shared/runs/r1
  run as $UID_A "cat '$R/events.jsonl'"
  assert_output --partial from-a
  refute_output --partial from-b
  # B writes its terminal and seals first.
  as $UID_B "set -C; ev_terminal error > '$R/once/run.terminal'"
  as $UID_B "set -C; : > '$R/seal.json'"
  run as $UID_B "cat '$R/seal.json'"
  assert_output --partial '"state":"sealed"'
  # A sees neither, and is blocked by neither.
  run as $UID_A "cat '$R/seal.json'"
  assert_failure
  assert_output --partial "No such file or directory"
  run as $UID_A "cat '$R/once/run.terminal'"
  assert_failure
  run as $UID_A "ls '$R/once'"
  assert_output ""
  as $UID_A "set -C; ev_terminal success > '$R/once/run.terminal'"
  run as $UID_A "cat '$R/once/run.terminal'"
  assert_output --partial '"status":"success"'
  assert_output --partial "\"user_id\":\"$UID_A\""
  # A plain > confirms only A's own terminal: B's (error) conflicts with nothing of A's.
  as $UID_A "ev_terminal success > '$R/once/run.terminal'"
  as $UID_A "set -C; : > '$R/seal.json'"
  run as $UID_A "cat '$R/seal.json'"
  assert_output --partial '"state":"sealed"'
  assert_output --partial '"event_count":2'
  # Each seal covers the rows its owner saw: verify recomputes both and both hold.
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_seal")" 2
  run "$RUNFS" verify "$STORE"
  assert_success
  refute_output --partial "threads/shared"
  # B deletes its run: its rows and its seal go, A's stay and still verify.
  as $UID_B "rm -r '$R'"
  run as $UID_B "cat '$R/seal.json'"
  assert_failure
  run as $UID_A "cat '$R/seal.json'"
  assert_success
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_seal")" 1
  run "$RUNFS" verify "$STORE"
  assert_success
  refute_output --partial "threads/shared"
}

# The singleton, reservation and seal tables of PostgreSQL side-table layout 1 (runfs before
# owners had their own), as that runfs created them.
PG_LAYOUT1_SQL="
  CREATE TABLE runfs_once (
    thread_id TEXT NOT NULL, run_id TEXT NOT NULL, event_type TEXT NOT NULL,
    PRIMARY KEY (thread_id, run_id, event_type));
  CREATE TABLE runfs_hold (
    thread_id TEXT NOT NULL, run_id TEXT NOT NULL, event_type TEXT NOT NULL,
    host TEXT NOT NULL, pid BIGINT NOT NULL, started BIGINT NOT NULL DEFAULT 0,
    backend_pid INTEGER NOT NULL, backend_start TIMESTAMPTZ,
    PRIMARY KEY (thread_id, run_id, event_type));
  CREATE TABLE runfs_seal (
    thread_id TEXT NOT NULL, run_id TEXT NOT NULL,
    state TEXT NOT NULL, upper_seq BIGINT NOT NULL, event_count BIGINT NOT NULL,
    terminal_seq BIGINT, digest TEXT NOT NULL, error TEXT, sealed_at TEXT NOT NULL,
    user_id TEXT,
    PRIMARY KEY (thread_id, run_id));
  CREATE UNIQUE INDEX runfs_uq_terminal ON run_events (thread_id, run_id, event_type)
    WHERE event_type = 'run.terminal';"

@test "owners: a PostgreSQL store of side-table layout 1 is converted at a read-write open; readers refuse it" {
  on_pg || skip "PostgreSQL only (SQLite's conversion: tests/unit test_layout_migration)"
  deerflow_shared_thread
  runfs_unmount "$MNT"
  local al=$WORK/alice un=$WORK/unscoped
  runfs_mount "$STORE" "$al" --user "$UID_A"
  as_seal() { (set -C; ev_terminal success > "$1/once/run.terminal"; : > "$1/seal.json"); }
  as_seal "$al/threads/shared/runs/r1"
  runfs_unmount "$al"
  runfs_mount "$STORE" "$un"
  mkdir -p "$un/threads/t2/runs/r1"
  ev_error n >> "$un/threads/t2/runs/r1/events.jsonl"
  as_seal "$un/threads/t2/runs/r1"
  runfs_unmount "$un"
  MOUNTS=()
  # Back to layout 1: the seals keep their digests, their owner in user_id.
  store_sql "BEGIN;
    CREATE TABLE s1 AS SELECT thread_id, run_id, state, upper_seq, event_count, terminal_seq,
      digest, error, sealed_at, nullif(owner, '') AS user_id FROM runfs_seal;
    DROP TABLE runfs_seal, runfs_once, runfs_hold;
    $PG_LAYOUT1_SQL
    INSERT INTO runfs_seal SELECT * FROM s1; DROP TABLE s1;
    INSERT INTO runfs_once VALUES ('shared', 'r1', 'run.terminal'), ('t2', 'r1', 'run.terminal');
    UPDATE runfs_meta SET value = 1 WHERE key = 'layout';
    COMMIT;"
  local before
  before=$(store_sql "SELECT value FROM runfs_meta WHERE key = 'layout'; SELECT count(*) FROM runfs_seal WHERE user_id = '$UID_A'")
  assert_equal "$before" "$(printf '1\n1')"
  # A reader converts nothing: it says why, and the tables stay as they were.
  run "$RUNFS" cat "$STORE" threads/t2/runs/r1/seal.json
  assert_failure 2
  assert_output --partial "layout 1"
  run "$RUNFS" verify "$STORE"
  assert_failure 2
  assert_equal "$(store_sql "SELECT value FROM runfs_meta WHERE key = 'layout'; SELECT count(*) FROM runfs_seal WHERE user_id = '$UID_A'")" "$before"
  # A read-write open converts it: each seal is its owner's and still holds.
  runfs_mount "$STORE" "$al" --user "$UID_A"
  assert_equal "$(store_sql "SELECT value FROM runfs_meta WHERE key = 'layout'")" 4
  assert_equal "$(store_sql "SELECT owner, count(*) FROM runfs_seal GROUP BY owner ORDER BY owner")" "$(printf '|1\n%s|1' "$UID_A")"
  assert_equal "$(store_sql "SELECT owner FROM runfs_once WHERE thread_id = 'shared'")" "$UID_A"
  assert_equal "$(store_sql "SELECT count(*) FROM pg_class WHERE relname LIKE 'runfs_%_v1'")" 0
  # An older build's unique index on DeerFlow's table is gone; the terminal index is not unique.
  assert_equal "$(store_sql "SELECT count(*) FROM pg_indexes WHERE indexname = 'runfs_uq_terminal'")" 0
  run store_sql "SELECT indexdef FROM pg_indexes WHERE indexname = 'runfs_ix_terminal'"
  refute_output --partial "UNIQUE"
  run cat "$al/threads/shared/runs/r1/seal.json"
  assert_output --partial '"state":"sealed"'
  run ls "$al/threads/shared/runs/r1/once"
  assert_output run.terminal
  # (a seal recomputed over another owner's rows too would no longer hold)
  run "$RUNFS" verify "$STORE"
  assert_success
  refute_output --partial "threads/"
  # Another owner of the thread now has a terminal and a seal of its own.
  local bo=$WORK/bob
  runfs_mount "$STORE" "$bo" --user "$UID_B"
  run ls "$bo/threads/shared/runs/r1/once"
  assert_output ""
  as_seal "$bo/threads/shared/runs/r1"
  run cat "$bo/threads/shared/runs/r1/seal.json"
  assert_output --partial '"event_count":2'
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE event_type = 'run.terminal' AND thread_id = 'shared'")" 2
}

@test "refusals: a created seal.json with nothing to seal fails at close (EINVAL), is logged and stays ENOENT" {
  local R=$MNT/threads/t1/runs
  mkdir -p "$R/none" "$R/bad" "$R/empty"
  ev_start >> "$R/none/events.jsonl"
  # A terminal a seal cannot rest on (an unknown status), as another writer stored it; the
  # next append through the mount indexes it.
  store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content, \
    event_metadata, seq, created_at) VALUES ('t1', 'bad', 'run.terminal', 'trace', \
    '{\"status\": \"bogus\"}', '{\"protocol_version\": 1, \"recovered\": false, \"content_is_json\": true, \"content_is_dict\": true}', \
    100, '2026-01-02 03:04:05.000000')"
  ev_start >> "$R/none/events.jsonl"
  run cat "$R/bad/once/run.terminal"
  assert_output --partial bogus
  local r
  for r in none bad empty; do
    run excl_close "$R/$r/seal.json"
    assert_output EINVAL
    run cat "$R/$r/seal.json"
    assert_failure
    assert_output --partial "No such file or directory"
    wait_for 5 grep -q "runs/$r/seal.json.*EINVAL" "$MNT/.runfs/rejects.jsonl"
  done
  # The partial body still works through the shell's redirection.
  (set -C; echo '{"state":"partial","error":"lost"}' > "$R/none/seal.json")
  run cat "$R/none/seal.json"
  assert_output --partial '"state":"partial"'
}

@test "refusals: a created once/run.terminal with no body fails at close (EINVAL), is logged, and the name is free" {
  local R=$MNT/threads/t1/runs/r1
  mkdir -p "$R"
  ev_start >> "$R/events.jsonl"
  run excl_close "$R/once/run.terminal"
  assert_output EINVAL
  run cat "$R/once/run.terminal"
  assert_failure
  assert_output --partial "No such file or directory"
  wait_for 5 grep -q "once/run.terminal.*EINVAL.*no event line" "$MNT/.runfs/rejects.jsonl"
  # Free again: the next exclusive create stores its body.
  run excl_close "$R/once/run.terminal" "$(ev_terminal success)"
  assert_output ok
  run cat "$R/once/run.terminal"
  assert_output --partial '"status":"success"'
}

@test "refusals: rm -r of a sealed run (--allow-delete) deletes its seal; the run made again is unsealed" {
  local R=$MNT/threads/t1/runs/r1
  mkdir -p "$R"
  ev_start >> "$R/events.jsonl"
  (set -C; ev_terminal success > "$R/once/run.terminal")
  (set -C; : > "$R/seal.json")
  run "$RUNFS" verify "$STORE"
  assert_success
  rm -r "$R"
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_seal")" 0
  run "$RUNFS" verify "$STORE"
  assert_success
  refute_output --partial "threads/t1"
  mkdir -p "$R"
  run cat "$R/seal.json"
  assert_failure
  assert_output --partial "No such file or directory"
  ev_start >> "$R/events.jsonl"
  (set -C; ev_terminal success > "$R/once/run.terminal")
  (set -C; : > "$R/seal.json")
  run "$RUNFS" verify "$STORE"
  assert_success
}

# Owners of 36 (a DeerFlow UUID) and 64 characters, by --user-map.
OWNER_A=3f2b8c1e-9a4d-4e7b-b6c2-1d5e8f9a0b7c
OWNER_B=$(printf 'b%.0s' {1..63})z
owners_map() { printf '%s %s\n%s %s\n' "$UID_A" "$OWNER_A" "$UID_B" "$OWNER_B" > "$WORK/owners.map"; }

@test "owners: one owner's unfinished lines fill only its share of --max-pending; another's run.terminal still stores" {
  [ ${#OWNER_A} -eq 36 ] && [ ${#OWNER_B} -eq 64 ]
  owners_map
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" --user-map "$WORK/owners.map" --max-pending 16M -o allow_other
  as $UID_A "mkdir -p '$sh/threads/ta/runs/r1'"
  as $UID_B "mkdir -p '$sh/threads/tb/runs/r1'"
  # B holds as many unfinished bytes as the mount takes from it, and keeps its handle open
  as $UID_B "python3 - '$sh/threads/tb/runs/r1/events.jsonl' '$WORK/go'" <<'PY' > "$WORK/held" &
import errno, os, sys, time
fds, held = [], 0
try:  # handles of 960 KiB each, under the event size limit
    while held < 64 << 20:
        if held % (960 << 10) == 0:
            fds.append(os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND))
        os.write(fds[-1], b"x" * 65536)
        held += 65536
except OSError as e:
    assert e.errno == errno.ENOBUFS, e
print(held, flush=True)
deadline = time.time() + 30  # hold the handle until the test says go (or 30 s pass)
while not os.path.exists(sys.argv[2]) and time.time() < deadline:
    time.sleep(0.05)
PY
  local bpid=$!
  wait_for 20 test -s "$WORK/held"
  # B got its share (an eighth of 16 MiB), never the whole mount's
  assert_equal "$(cat "$WORK/held")" $((2 << 20))
  run as $UID_B "grep -c 'an owner.s share of --max-pending' '$sh/.runfs/rejects.jsonl'"
  assert_output 1
  # A is not blocked: its terminal's body (held until it is whole) stores
  run as $UID_A "ev_terminal > '$sh/threads/ta/runs/r1/once/run.terminal'"
  assert_success
  assert_equal "$(store_sql "SELECT user_id FROM run_events WHERE thread_id = 'ta' AND event_type = 'run.terminal'")" "$OWNER_A"
  touch "$WORK/go"
  wait "$bpid"
}

@test "owners: idempotency keys are each owner's own; another owner's reuse is a new event, its reason never shows the first owner's seq" {
  owners_map
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, \
    content, event_metadata, seq, created_at) VALUES \
    ('shared', 'r1', '$OWNER_A', 'llm.error', 'error', 'from-a', '{}', 1, '2026-01-02 03:04:05.000000'), \
    ('shared', 'r1', '$OWNER_B', 'llm.error', 'error', 'from-b', '{}', 2, '2026-01-02 03:04:06.000000')"
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" --user-map "$WORK/owners.map" -o allow_other
  local f=$sh/threads/shared/runs/r1/events.jsonl
  keyed() { printf '{"event_type":"llm.error","content":"%s","idempotency_key":"k1"}\n' "$1"; }
  export -f keyed
  as $UID_A "keyed a-one >> '$f'"
  # B's k1 with another event: stored as B's (on main: EEXIST naming A's seq)
  run as $UID_B "keyed b-one >> '$f'"
  assert_success
  assert_equal "$(store_sql "SELECT user_id FROM run_events WHERE content = 'b-one'")" "$OWNER_B"
  # each owner's resend is confirmed against its own first write, nothing stored twice
  as $UID_A "keyed a-one >> '$f'"
  as $UID_B "keyed b-one >> '$f'"
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 'shared'")" 4
  # and a changed event under an owner's own key is still EEXIST, naming its own seq
  run as $UID_B "keyed b-changed >> '$f'"
  assert_failure
  run as $UID_B "tail -1 '$sh/.runfs/rejects.jsonl'"
  assert_output --partial EEXIST
  assert_output --partial "(seq 4)"
  refute_output --partial "(seq 3)"
}
