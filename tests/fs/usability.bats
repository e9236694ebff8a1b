#!/usr/bin/env bats
# usability.bats — issue 21 item 8, the smaller things a user meets: a store runfs creates is
# its owner's alone, the README's sandbox recipe works for a non-root uid as written, runfs
# put takes a mount's options and --dry-run, and DeerFlow's run.delivery singleton goes
# through once/ with the shipped contract.
load lib
bats_require_minimum_version 1.5.0

setup() {
  runfs_workdir
}
teardown() {
  runfs_teardown
}

mode_of() { stat -c '%a %g' "$1"; }

@test "a store runfs creates is 0600 with its -wal and -shm (0640 and the group with -o gid=)" {
  skip_on_pg "a PostgreSQL store is no file"
  runfs_mount "$STORE" "$MNT"
  mkdir -p "$MNT/threads/t1/runs/r1"
  ev_error one >> "$MNT/threads/t1/runs/r1/events.jsonl"
  assert_equal "$(mode_of "$STORE")" "600 $(id -g)"
  assert_equal "$(mode_of "$STORE-wal")" "600 $(id -g)"
  assert_equal "$(mode_of "$STORE-shm")" "600 $(id -g)"
  # runfs put makes one the same way
  ev_error two | "$RUNFS" put -q "$WORK/put.db" t1 r1
  assert_equal "$(stat -c %a "$WORK/put.db")" 600
  # with -o gid=G the group reads it, as it reads the mount
  local g=61007 m2=$WORK/m2
  runfs_mount "$WORK/group.db" "$m2" -o gid=$g
  assert_equal "$(mode_of "$WORK/group.db")" "640 $g"
  mkdir -p "$m2/threads/t1/runs/r1"
  ev_error three >> "$m2/threads/t1/runs/r1/events.jsonl"
  assert_equal "$(mode_of "$WORK/group.db-wal")" "640 $g"
  # a store that exists keeps its mode
  chmod 644 "$WORK/put.db"
  ev_error four | "$RUNFS" put -q "$WORK/put.db" t1 r1
  assert_equal "$(stat -c %a "$WORK/put.db")" 644
}

@test "the README's sandbox recipe, as written, works for a non-root uid" {
  chmod 755 "$WORK"
  # the recipe from README.md's Sandboxes section, with the sandbox's ids filled in
  local recipe
  recipe=$(python3 -c 'import re, sys; print(" ".join(re.search(r"`(runfs mount --thread T[^`]*)`", open(sys.argv[1]).read()).group(1).split()))' "$BATS_TEST_DIRNAME/../../README.md")
  [ -n "$recipe" ]
  recipe=${recipe//AGENT_UID/"$UID_A"}
  recipe=${recipe//AGENT_GID/"$UID_A"}
  recipe=${recipe//STORE/"$STORE"}
  recipe=${recipe//\/sandbox\/runs/"$WORK/sandbox"}
  # The recipe mounts a store that exists (a mount creates none without --create).
  on_pg || ev_start | "$RUNFS" put -q "$STORE" t0 r0
  MOUNTS+=("$WORK/sandbox")
  mkdir -p "$WORK/sandbox"
  local -a words
  read -ra words <<<"$recipe"
  run "$RUNFS" "${words[@]:1}"
  assert_success
  wait_for 10 test -f "$WORK/sandbox/README"
  local R=$WORK/sandbox/threads/T/runs/r1
  as "$UID_A" "mkdir -p '$R' && ev_start >> '$R/events.jsonl' && ev_error hi >> '$R/events.jsonl' && (set -C; ev_terminal > '$R/once/run.terminal')"
  run as "$UID_A" "cat '$WORK/sandbox/threads/T/events.jsonl'"
  assert_success
  assert_output --partial '"content":"hi"'
  run as "$UID_A" "ls '$WORK/sandbox/threads'"
  assert_output T
}

@test "runfs put --user NAME --contract FILE --allow-unknown-events --stamp-time --dry-run" {
  ev_error seed | "$RUNFS" put -q "$STORE" t0 r0
  # --dry-run: every line checked, nothing stored; a bad line named, exit 1
  local before
  before=$(store_snapshot)
  run --separate-stderr "$RUNFS" put --dry-run "$STORE" t1 r1 <<<"$(ev_error a; ev_error b)"
  assert_success
  [ "$stderr" = "runfs put: 2 lines checked, nothing stored (--dry-run)" ] || fail "$stderr"
  run "$RUNFS" put --dry-run "$STORE" t1 r1 <<<"$(ev_error a; echo '{"event_type":"llm.error"')"
  assert_failure 1
  assert_output --partial "<stdin>:2:"
  assert_equal "$(store_snapshot)" "$before"
  # --user: the rows are NAME's, as DeerFlow's request-scoped reads want them
  ev_error mine | "$RUNFS" put -q --user 3f2b8c1e-9a4d-4e7b-b6c2-1d5e8f9a0b7c "$STORE" t2 r1
  assert_equal "$(store_sql "SELECT user_id FROM run_events WHERE thread_id = 't2'")" 3f2b8c1e-9a4d-4e7b-b6c2-1d5e8f9a0b7c
  # --allow-unknown-events, and --contract FILE naming the type instead
  local odd='{"event_type":"custom.odd","category":"trace","content":"x"}'
  run "$RUNFS" put -q "$STORE" t3 r1 <<<"$odd"
  assert_failure
  "$RUNFS" put -q --allow-unknown-events "$STORE" t3 r1 <<<"$odd"
  python3 - "$BATS_TEST_DIRNAME/../../contracts/run_event_stream_contract.json" "$WORK/c.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["events"].append({"event_type": "custom.mine", "category": "trace", "content_schema": True, "metadata_schema": True})
json.dump(c, open(sys.argv[2], "w"))
PY
  run "$RUNFS" put -q "$STORE" t3 r1 <<<'{"event_type":"custom.mine","content":"x"}'
  assert_failure
  "$RUNFS" put -q --contract "$WORK/c.json" "$STORE" t3 r1 <<<'{"event_type":"custom.mine","content":"x"}'
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 't3'")" 2
  # --stamp-time: the store's clock is the only created_at
  run "$RUNFS" put -q --stamp-time "$STORE" t4 r1 <<<'{"event_type":"llm.error","content":"x","created_at":"2020-01-01T00:00:00Z"}'
  assert_failure
  assert_output --partial created_at
}

@test "run.delivery, DeerFlow's delivery receipt, is a singleton of the shipped contract: once/ stores it, category outputs" {
  runfs_mount "$STORE" "$MNT"
  local R=$MNT/threads/t1/runs/r1
  mkdir -p "$R"
  ev_start >> "$R/events.jsonl"
  (set -C; printf '%s\n' '{"content":{"presented":0,"paths":[],"by_tool":{}}}' > "$R/once/run.delivery")
  run cat "$R/once/run.delivery"
  assert_output --partial '"event_type":"run.delivery","category":"outputs"'
  # a singleton: an append of it is refused, a second create is EEXIST
  run bash -c "printf '%s\n' '{\"event_type\":\"run.delivery\",\"content\":{\"presented\":1,\"paths\":[],\"by_tool\":{}}}' >> '$R/events.jsonl'"
  assert_failure
  run bash -c "set -C; printf '%s\n' '{\"content\":{\"presented\":2,\"paths\":[],\"by_tool\":{}}}' > '$R/once/run.delivery'"
  assert_failure
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE event_type = 'run.delivery'")" 1
}
