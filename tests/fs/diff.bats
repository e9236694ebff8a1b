#!/usr/bin/env bats
# diff.bats — issue 43, DESIGN "Comparing runs": a run's diff/<run_id> and `runfs diff` give
# a unified diff of two runs' step lines. The step lines are derived here independently
# (tests/fs/stepdiff_ref.py, from events.jsonl by DESIGN's rule); patch turns A's into B's,
# GNU diff agrees on what was added and removed, git apply takes the patch; the view is
# lookup-only, exactly sized, and another owner's run is ENOENT as everywhere.
load lib

REF=$BATS_TEST_DIRNAME/stepdiff_ref.py
# The mount keeps a run's step data once it has been quiet this long (fs/keeper.c; 1 s by
# default): the tests need not wait a second a run.
export RUNFS_STEP_KEEPER_QUIET_MS=200

setup() {
  runfs_setup
  T=$MNT/threads/t
}

teardown() {
  runfs_teardown
}

# put_run THREAD RUN VARIANT [K]: the reference's 40-event run, changed by VARIANT at K,
# appended through the mount.
put_run() {
  mkdir -p "$MNT/threads/$1/runs/$2"
  python3 "$REF" gen 40 "$3" "${4:-0}" >> "$MNT/threads/$1/runs/$2/events.jsonl"
}

# steps_of THREAD RUN OUT: the run's step lines, derived from its events.jsonl.
steps_of() {
  python3 "$REF" steps "$MNT/threads/$1/runs/$2/events.jsonl" > "$3"
}

# check_diff DIFF A B: the diff applies (patch turns step lines A into B), adds and removes
# the lines diff -u does, and git apply takes it as a patch of the files its headers name.
check_diff() {
  local d=$1 a=$2 b=$3
  patch -s -o "$WORK/patched" "$a" "$d" || fail "patch refused the diff"
  cmp "$WORK/patched" "$b" || fail "patch made other lines than B's steps"
  diff -u "$a" "$b" > "$WORK/gnu.diff" || true
  diff <(python3 "$REF" changes "$WORK/gnu.diff") <(python3 "$REF" changes "$d") ||
    fail "diff -u adds or removes other lines"
  # git takes one of the two names of a plain patch: A's lines stand at both.
  local g=$WORK/git old new
  rm -rf "$g"
  old=$(sed -n 's/^--- //p' "$d")
  new=$(sed -n 's/^+++ //p' "$d")
  mkdir -p "$g/$(dirname "$old")" "$g/$(dirname "$new")"
  cp "$a" "$g/$old"
  cp "$a" "$g/$new"
  (cd "$g" && git apply --check -p0 --unsafe-paths "$d") || fail "git apply --check refused it"
  (cd "$g" && git apply -p0 --unsafe-paths "$d") || fail "git apply refused it"
  cmp -s "$g/$old" "$b" || cmp -s "$g/$new" "$b" || fail "git apply made other lines than B's"
}

# exact FILE: stat's size is the bytes a read returns.
exact() {
  assert_equal "$(stat -c %s "$1")" "$(wc -c < "$1")"
}

@test "diff: identical runs give the # lines and the headers, no hunk; lookup-only, exact size" {
  put_run t a same
  put_run t b same
  local f=$T/runs/a/diff/b
  # The runs took their own time: a duration line may come too.
  run bash -c "cat '$f' | grep -v '^# duration ms: '"
  assert_success
  assert_output "$(printf '%s\n' '# same steps: 40' '--- threads/t/runs/a' '+++ threads/t/runs/b')"
  exact "$f"
  # Lookup-only: diff/ is listed, empty.
  run ls "$T/runs/a"
  assert_line diff
  run ls -A "$T/runs/a/diff"
  assert_output ""
  # The same bytes from the command.
  diff <(cat "$f") <("$RUNFS" diff "$STORE" t/a t/b) || fail "runfs diff differs from the view"
  # A run against itself, too.
  run cat "$T/runs/a/diff/a"
  assert_line --index 0 "# same steps: 40"
  # A run that is not there, and a name that is no id.
  run cat "$T/runs/a/diff/nope"
  assert_failure
  assert_output --partial "No such file or directory"
  run cat "$T/runs/a/diff/b.txt"
  assert_failure
  assert_output --partial "Invalid argument"
  run "$RUNFS" diff "$STORE" t/a t/nope
  assert_failure
  assert_output --partial "no run nope in thread t"
}

@test "diff: an inserted step is one + line, its stats and first diverging seq named" {
  put_run t a same
  put_run t b insert 9
  steps_of t a "$WORK/A"
  steps_of t b "$WORK/B"
  local f=$T/runs/a/diff/b
  cat "$f" > "$WORK/d"
  exact "$f"
  check_diff "$WORK/d" "$WORK/A" "$WORK/B"
  # Step 10 of b (seq 40 + 10) is the new one; a's step 10 is seq 10.
  assert_equal "$(head -n 1 "$WORK/d")" "# first diverging step 10: seq 10 -> seq 50"
  run grep '^# ' "$WORK/d"
  assert_line "# events: 40 -> 41"
  assert_line "# errors: 0 -> 1"
  refute_line --partial "# model calls"
  run grep -c '^+' "$WORK/d"
  assert_output 2 # the +++ header and the step
  assert_equal "$(grep '^+[^+]' "$WORK/d")" '+llm.error "rate limited, retrying"'
  # Hunk lines count steps; the text after @@ gives each side's seqs.
  assert_equal "$(grep '^@@' "$WORK/d")" "@@ -7,6 +7,7 @@ seq 7-12 -> seq 47-53"
}

@test "diff: a deleted step is one - line; the other way round it is one + line" {
  put_run t a same
  put_run t b delete 15
  steps_of t a "$WORK/A"
  steps_of t b "$WORK/B"
  cat "$T/runs/a/diff/b" > "$WORK/d"
  check_diff "$WORK/d" "$WORK/A" "$WORK/B"
  assert_equal "$(grep -c '^-[^-]' "$WORK/d")" 1
  assert_equal "$(grep -c '^+[^+]' "$WORK/d")" 0
  run grep '^# ' "$WORK/d"
  assert_line "# events: 40 -> 39"
  refute_line --partial "# model calls"
  cat "$T/runs/b/diff/a" > "$WORK/r"
  exact "$T/runs/b/diff/a"
  check_diff "$WORK/r" "$WORK/B" "$WORK/A"
  assert_equal "$(grep -c '^+[^+]' "$WORK/r")" 1
}

@test "diff: a different tool argument and a failed tool result are each a changed step" {
  put_run t a same
  put_run t arg arg 21
  put_run t fail fail 26
  steps_of t a "$WORK/A"
  steps_of t arg "$WORK/ARG"
  steps_of t fail "$WORK/FAIL"
  cat "$T/runs/a/diff/arg" > "$WORK/d1"
  check_diff "$WORK/d1" "$WORK/A" "$WORK/ARG"
  assert_equal "$(grep '^[-+][^-+]' "$WORK/d1")" "$(printf '%s\n' \
    '-llm.ai.response reading 5 -> read_file {"path":"file-5.txt"}' \
    '+llm.ai.response reading 5 -> read_file {"path":"other-5.txt"}')"
  assert_equal "$(head -n 1 "$WORK/d1")" "# first diverging step 22: seq 22 -> seq 62"
  # No stat differs but for the times.
  run grep -c '^# ' "$WORK/d1"
  [ "$output" -le 2 ] || fail "stats lines for a changed argument: $(grep '^# ' "$WORK/d1")"
  cat "$T/runs/a/diff/fail" > "$WORK/d2"
  check_diff "$WORK/d2" "$WORK/A" "$WORK/FAIL"
  run grep '^+[^+]' "$WORK/d2"
  assert_output '+llm.tool.result read_file error: No such file: file-6.txt'
  run grep '^# ' "$WORK/d2"
  assert_line "# errors: 0 -> 1"
}

@test "diff: step lines follow DESIGN's rule: no ids, control bytes escaped, cut at 200 bytes" {
  put_run t a same
  put_run t b arg 1
  cat "$T/runs/a/diff/b" > "$WORK/d"
  steps_of t a "$WORK/A"
  # Ids gone at any depth (request_id, changes.id, call_id), tabs and newlines escaped, a
  # long result cut at a character's boundary (é is two bytes: 200 would split one).
  run grep -F ' middleware:guardrail {"name":"G","hook":"before_model","action":"allow","step":0,"changes":{"kept":[{"n":0}]}}' "$WORK/d"
  assert_success
  run grep -F ' llm.human.input question 0:\tsay ✓ «0»\nplease' "$WORK/d"
  assert_success
  local long
  long=$(grep '^llm.tool.result' "$WORK/A" | head -n 1)
  [ "$(printf '%s' "$long" | wc -c)" -eq 199 ] || fail "cut at $(printf '%s' "$long" | wc -c) bytes"
  grep -qxF " $long" "$WORK/d" || fail "the cut line differs: $(grep 'llm.tool.result' "$WORK/d" | head -n 1)"
}

@test "diff: runfs diff compares runs of two threads, headers naming each" {
  put_run t a same
  put_run u b fail 2
  steps_of t a "$WORK/A"
  steps_of u b "$WORK/B"
  run "$RUNFS" diff "$STORE" t/a u/b
  assert_success
  printf '%s\n' "$output" > "$WORK/d"
  assert_line "--- threads/t/runs/a"
  assert_line "+++ threads/u/runs/b"
  check_diff "$WORK/d" "$WORK/A" "$WORK/B"
  # A run of another thread is no entry of diff/.
  run cat "$T/runs/a/diff/b"
  assert_failure
  assert_output --partial "No such file or directory"
  run "$RUNFS" diff "$STORE" t/a u
  assert_failure
  assert_output --partial "THREAD/RUN"
}

@test "diff: runfs diff reads two big runs at once, with the bytes the view reads one by one" {
  # Runs of 3000 events each: runfs diff reads them on two connections, two threads.
  mkdir -p "$T/runs/a" "$T/runs/b"
  python3 "$REF" gen 3000 same >> "$T/runs/a/events.jsonl"
  python3 "$REF" gen 3000 spread 5 >> "$T/runs/b/events.jsonl"
  steps_of t a "$WORK/A"
  steps_of t b "$WORK/B"
  run "$RUNFS" diff "$STORE" t/a t/b
  assert_success
  printf '%s\n' "$output" > "$WORK/d"
  check_diff "$WORK/d" "$WORK/A" "$WORK/B"
  diff "$WORK/d" "$T/runs/a/diff/b" || fail "runfs diff differs from the view"
  # A big run against one that is not there: the missing one is named.
  run "$RUNFS" diff "$STORE" t/a t/nope
  assert_failure
  assert_output --partial "no run nope in thread t"
}

@test "diff: another owner's run is ENOENT on --user and --user-from-uid mounts" {
  # One thread, runs of two owners, as DeerFlow's gateway writes them.
  local line
  line=$(python3 "$REF" gen 2 same | tail -n 1)
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, \
    content, event_metadata, seq, created_at) VALUES \
    ('shared', 'a1', '61001', 'llm.error', 'error', 'one', '{}', 1, '2026-01-02 03:04:05.000000'), \
    ('shared', 'a2', '61001', 'llm.error', 'error', 'two', '{}', 2, '2026-01-02 03:04:06.000000'), \
    ('shared', 'b1', '61002', 'llm.error', 'error', 'three', '{}', 3, '2026-01-02 03:04:07.000000')"
  local ma=$WORK/ma
  runfs_mount "$STORE" "$ma" --user 61001
  run cat "$ma/threads/shared/runs/a1/diff/a2"
  assert_success
  assert_line '-llm.error "one"'
  assert_line '+llm.error "two"'
  run cat "$ma/threads/shared/runs/a1/diff/b1"
  assert_failure
  assert_output --partial "No such file or directory"
  chmod 755 "$WORK"
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" --user-from-uid -o allow_other
  as() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups -- bash -c "$*"; }
  run as 61002 "cat '$sh/threads/shared/runs/b1/diff/a1'"
  assert_failure
  assert_output --partial "No such file or directory"
  run as 61001 "cat '$sh/threads/shared/runs/a2/diff/a1'"
  assert_success
  assert_line '-llm.error "two"'
  run as 61001 "stat -c %s '$sh/threads/shared/runs/a2/diff/a1'"
  assert_equal "$output" "$(as 61001 "wc -c < '$sh/threads/shared/runs/a2/diff/a1'")"
}

# kept_steps SQL: run SQL on the store's runfs_steps (the runs' kept step data), wherever
# the backend made it.
kept_steps() {
  local table=runfs_steps sch
  if on_pg; then
    sch=$(store_sql "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 'runfs_steps'")
    table="\"$sch\".runfs_steps"
  fi
  store_sql "${1//runfs_steps/$table}"
}

# kept_versions: the kept rows' versions in run order (SQLite's rowid and PostgreSQL's xmin
# move when a row is written again).
kept_versions() {
  if on_pg; then
    kept_steps "SELECT string_agg(xmin::text, ',' ORDER BY run_id) FROM runfs_steps"
  else
    kept_steps "SELECT group_concat(rowid) FROM (SELECT rowid FROM runfs_steps ORDER BY run_id)"
  fi
}

# kept_version_col: the column that moves when a kept row is written again.
kept_version_col() { if on_pg; then echo xmin; else echo rowid; fi; }

# keeper_status N DUE: the mount's step keeper has kept at least N runs and has DUE left to
# look at (status.json; it keeps a run appended through the mount once quiet, fs/keeper.c).
keeper_status() {
  python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["mount"]; sys.exit(not (m["steps_kept"] >= int(sys.argv[2]) and m["steps_due"] == int(sys.argv[3])))' "$MNT/.runfs/status.json" "$1" "$2"
}

# steps_now THREAD RUN OUT: the run's step lines, derived from its rows as the store holds
# them now (runfs cat opens the store afresh: no mount's cache between).
steps_now() {
  "$RUNFS" cat "$STORE" "threads/$1/runs/$2/events.jsonl" > "$WORK/ev.jsonl"
  python3 "$REF" steps "$WORK/ev.jsonl" > "$3"
}

@test "diff: kept step data gives the bytes the rows give; appends extend it, rewrites drop it" {
  # Runs of 300 events: hunks start on tool results whose calls lie before them.
  mkdir -p "$T/runs/a" "$T/runs/b"
  python3 "$REF" gen 300 same >> "$T/runs/a/events.jsonl"
  python3 "$REF" gen 300 spread 4 >> "$T/runs/b/events.jsonl"
  "$RUNFS" diff "$STORE" t/a t/b > "$WORK/first"
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps")" = 2 ] || fail "the first diff kept no step data"
  # The mount's keeper has looked at the two runs (and found nothing to keep, or kept the
  # same steps): it writes no version between the two diffs below.
  wait_for 20 keeper_status 0 0 || fail "the mount's keeper is still due: $(cat "$MNT/.runfs/status.json")"
  # Each kept row's version: a diff that read the rows again keeps its data again, which
  # makes a new one.
  local kept; kept=$(kept_versions)
  steps_now t a "$WORK/A"
  steps_now t b "$WORK/B"
  check_diff "$WORK/first" "$WORK/A" "$WORK/B"
  # From the kept data: the same bytes, by the command and by the view.
  "$RUNFS" diff "$STORE" t/a t/b > "$WORK/second"
  cmp "$WORK/first" "$WORK/second" || fail "a diff of kept runs differs from the first"
  local again; again=$(kept_versions)
  [ "$again" = "$kept" ] || fail "the second diff read the rows again (kept rows $kept became $again)"
  cmp "$WORK/first" "$T/runs/a/diff/b" || fail "the view differs from runfs diff"
  # b grows: the kept data is extended, and gives what a diff from the rows gives.
  python3 "$REF" gen 20 spread 1 >> "$T/runs/b/events.jsonl"
  "$RUNFS" diff "$STORE" t/a t/b > "$WORK/grown"
  steps_now t b "$WORK/B"
  check_diff "$WORK/grown" "$WORK/A" "$WORK/B"
  kept_steps "DELETE FROM runfs_steps"
  "$RUNFS" diff "$STORE" t/a t/b > "$WORK/fresh"
  cmp "$WORK/grown" "$WORK/fresh" || fail "the grown run's kept data gives other bytes than its rows"
  # Another writer changes a row of a in place: its new content shows (no kept hash of
  # the old one survives).
  local seq
  seq=$(store_sql "SELECT seq FROM run_events WHERE thread_id = 't' AND run_id = 'a' AND event_type = 'llm.human.input' ORDER BY seq LIMIT 1 OFFSET 20")
  store_sql "UPDATE run_events SET content = '{\"type\":\"human\",\"content\":\"changed by hand\"}' WHERE thread_id = 't' AND run_id = 'a' AND seq = $seq"
  "$RUNFS" diff "$STORE" t/a t/b > "$WORK/updated"
  grep -qx -- '-llm.human.input changed by hand' "$WORK/updated" || fail "the updated row's new content is not in the diff"
  steps_now t a "$WORK/A"
  check_diff "$WORK/updated" "$WORK/A" "$WORK/B"
  # Another writer deletes a row of b: the diff is of the rows left.
  seq=$(store_sql "SELECT seq FROM run_events WHERE thread_id = 't' AND run_id = 'b' AND event_type = 'llm.ai.response' ORDER BY seq LIMIT 1 OFFSET 30")
  store_sql "DELETE FROM run_events WHERE thread_id = 't' AND run_id = 'b' AND seq = $seq"
  "$RUNFS" diff "$STORE" t/a t/b > "$WORK/deleted"
  steps_now t b "$WORK/B"
  check_diff "$WORK/deleted" "$WORK/A" "$WORK/B"
  kept_steps "DELETE FROM runfs_steps"
  "$RUNFS" diff "$STORE" t/a t/b > "$WORK/fresh"
  cmp "$WORK/deleted" "$WORK/fresh" || fail "after a delete, kept data gives other bytes than the rows"
}

@test "diff: runfs import keeps each big run's step data; its first diff reads no row it need not, and stays exact" {
  # No mount beside the store: what is kept is the import's, not a keeper's.
  runfs_unmount "$MNT"
  local src=$WORK/src.db df=$WORK/df
  # Runs of 1200 events (about 450 KiB of DeerFlow's JSONL each): the import keeps a run of
  # 256 KiB or more (cli/deerflow.c's STEPS_MIN_BYTES), and not c's 40 events.
  python3 "$REF" gen 1200 same > "$WORK/a.jsonl"
  python3 "$REF" gen 1200 spread 4 > "$WORK/b.jsonl"
  python3 "$REF" gen 40 spread 1 > "$WORK/c.jsonl"
  "$RUNFS" put -q "$src" t a "$WORK/a.jsonl"
  "$RUNFS" put -q "$src" t b "$WORK/b.jsonl"
  "$RUNFS" put -q "$src" t c "$WORK/c.jsonl"
  "$RUNFS" export -q "$src" --deerflow-jsonl "$df"
  # a's first 900 rows come first, by an import of their own: the second import stores the
  # rest of a (a run it did not write whole, whose data it must not keep as if it had) and b.
  mkdir -p "$WORK/df1/threads/t/runs"
  head -n 900 "$df/threads/t/runs/a.jsonl" > "$WORK/df1/threads/t/runs/a.jsonl"
  "$RUNFS" import -q "$STORE" --deerflow-jsonl "$WORK/df1"
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE run_id = 'a'")" = 1 ] || fail "the import kept no step data of a"
  "$RUNFS" import -q "$STORE" --deerflow-jsonl "$df"
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE run_id = 'b'")" = 1 ] || fail "the import kept no step data of b"
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE run_id = 'c'")" = 0 ] || fail "the import kept the step data of c, a small run"
  "$RUNFS" diff "$STORE" t/a t/c > "$WORK/small"
  steps_now t a "$WORK/A"
  steps_now t c "$WORK/C"
  check_diff "$WORK/small" "$WORK/A" "$WORK/C"
  # The first diff reads what the imports kept (a's 100 rows extended from its new ones):
  # it writes b's kept row no new version.
  local bkept; bkept=$(kept_steps "SELECT $(kept_version_col) FROM runfs_steps WHERE run_id = 'b'")
  "$RUNFS" diff "$STORE" t/a t/b > "$WORK/first"
  [ "$(kept_steps "SELECT $(kept_version_col) FROM runfs_steps WHERE run_id = 'b'")" = "$bkept" ] ||
    fail "the first diff after the import read b's rows: not what the import kept"
  steps_now t a "$WORK/A"
  steps_now t b "$WORK/B"
  check_diff "$WORK/first" "$WORK/A" "$WORK/B"
  # Another writer changes a row of b in place, and appends to a: the diff shows both.
  local seq
  seq=$(store_sql "SELECT seq FROM run_events WHERE thread_id = 't' AND run_id = 'b' AND event_type = 'llm.human.input' ORDER BY seq LIMIT 1 OFFSET 20")
  store_sql "UPDATE run_events SET content = '{\"type\":\"human\",\"content\":\"changed by hand\"}' WHERE thread_id = 't' AND run_id = 'b' AND seq = $seq"
  python3 "$REF" gen 5 spread 1 > "$WORK/more.jsonl"
  "$RUNFS" put -q "$STORE" t a "$WORK/more.jsonl"
  "$RUNFS" diff "$STORE" t/a t/b > "$WORK/changed"
  grep -qx -- '+llm.human.input changed by hand' "$WORK/changed" || fail "the updated row's new content is not in the diff"
  steps_now t a "$WORK/A"
  steps_now t b "$WORK/B"
  check_diff "$WORK/changed" "$WORK/A" "$WORK/B"
  kept_steps "DELETE FROM runfs_steps"
  "$RUNFS" diff "$STORE" t/a t/b > "$WORK/fresh"
  cmp "$WORK/changed" "$WORK/fresh" || fail "after the import, kept data gives other bytes than the rows"
}

@test "diff: a redaction forgets the run's kept step data, and the diff shows the redacted step" {
  # Put by runfs put with no mount beside: a mount's keeper would keep them again (from
  # the redacted rows) once they are quiet, and this test counts what the diff kept.
  runfs_unmount "$MNT"
  python3 "$REF" gen 40 same > "$WORK/a.jsonl"
  python3 "$REF" gen 40 spread 2 > "$WORK/b.jsonl"
  "$RUNFS" put -q "$STORE" t a "$WORK/a.jsonl"
  "$RUNFS" put -q "$STORE" t b "$WORK/b.jsonl"
  "$RUNFS" diff "$STORE" t/a t/b > /dev/null
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE run_id = 'a'")" = 1 ] || fail "the diff kept no step data of a"
  local seq
  seq=$(store_sql "SELECT seq FROM run_events WHERE thread_id = 't' AND run_id = 'a' AND event_type = 'llm.human.input' ORDER BY seq LIMIT 1 OFFSET 3")
  run "$RUNFS" redact "$STORE" t "$seq" --reason "asked to forget"
  assert_success
  # What was computed from the forgotten text (its step line's hash) is gone with it.
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE run_id = 'a'")" = 0 ] || fail "the redacted run's kept step data survived the redaction"
  run "$RUNFS" diff "$STORE" t/a t/b
  assert_success
  assert_line '-llm.human.input [redacted]'
}

@test "diff: runfs diff of a DeerFlow database no runfs writer set up writes nothing to it" {
  skip_on_pg "mkdeerflow.py writes a SQLite file"
  local db=$WORK/deerflow.db
  python3 "$BATS_TEST_DIRNAME/mkdeerflow.py" "$db" t 40 20
  local before; before=$(sqlite3 "$db" "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master ORDER BY name)")
  local runs; runs=$(sqlite3 "$db" "SELECT DISTINCT run_id FROM run_events ORDER BY run_id LIMIT 2" | tr '\n' ' ')
  set -- $runs
  run "$RUNFS" diff "$db" "t/$1" "t/$2"
  [ "$status" -eq 0 ] || fail "runfs diff failed: $output"
  [[ "$output" == *"--- threads/t/runs/$1"* ]] || fail "no diff header: $output"
  # Keeping the runs' step data would set up runfs's tables and triggers in DeerFlow's file.
  [ "$(sqlite3 "$db" "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master ORDER BY name)")" = "$before" ] ||
    fail "runfs diff changed the database's objects: $(sqlite3 "$db" "SELECT name FROM sqlite_master WHERE name LIKE 'runfs%'" | tr '\n' ' ')"
}

@test "diff: deleting a run or its thread deletes the kept step data of its runs" {
  put_run t a same
  put_run t b change 5
  put_run t c same
  "$RUNFS" diff "$STORE" t/a t/b > /dev/null
  "$RUNFS" diff "$STORE" t/a t/c > /dev/null
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE run_id = 'b'")" -ge 1 ] || fail "the diff kept no step data of b"
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT" --allow-delete
  rm -r "$T/runs/b"
  # The deleted run's step data held its steps' text: it goes with the rows.
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE run_id = 'b'")" = 0 ] || fail "b's kept step data outlived its rows"
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE run_id = 'a'")" -ge 1 ] || fail "deleting b dropped a's kept step data"
  rm -r "$T"
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE thread_id = 't'")" = 0 ] || fail "the thread's kept step data outlived it"
}

# fresh_diff OUT: runfs diff of t/a and t/b from their rows alone (what is kept dropped
# first; the diff keeps it again).
fresh_diff() {
  kept_steps "DELETE FROM runfs_steps WHERE thread_id = 't'"
  "$RUNFS" diff "$STORE" t/a t/b > "$1"
}

# keeper_done N: the mount's keeper has kept at least N runs and has none left to look at,
# and the store holds the step data of t's two runs.
keeper_done() {
  keeper_status "$1" 0 && [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE thread_id = 't'")" = 2 ]
}

# rows_diff DIFF WHY: DIFF (a's diff to b) is what the runs' rows as they are now give: it
# patches a's step lines into b's, diff -u agrees, and a diff with nothing kept is the same.
rows_diff() {
  steps_now t a "$WORK/A"
  steps_now t b "$WORK/B"
  check_diff "$1" "$WORK/A" "$WORK/B"
  fresh_diff "$WORK/fresh"
  cmp "$1" "$WORK/fresh" || fail "$2"
}

@test "diff: the mount keeps the step data of runs written through it or grown by others; diffs stay exact" {
  # Runs of 400 events appended through the mount: once quiet, the mount keeps their step
  # data in the background, and their first diff reads it rather than the rows.
  mkdir -p "$T/runs/a" "$T/runs/b"
  python3 "$REF" gen 400 same >> "$T/runs/a/events.jsonl"
  python3 "$REF" gen 400 spread 3 >> "$T/runs/b/events.jsonl"
  wait_for 20 keeper_done 2 || fail "the mount kept no step data of the runs it wrote: $(cat "$MNT/.runfs/status.json")"
  # Each kept row's version: a diff that read the rows would keep anew, making a new one.
  local kept; kept=$(kept_versions)
  cat "$T/runs/a/diff/b" > "$WORK/first"
  [ "$(kept_versions)" = "$kept" ] || fail "the first diff did not use the step data the mount kept"
  rows_diff "$WORK/first" "the kept data gives other bytes than the rows"
  # b grows through the mount: kept again once quiet (going on from what was kept), and
  # still the bytes of the rows.
  python3 "$REF" gen 200 spread 2 >> "$T/runs/b/events.jsonl"
  wait_for 20 keeper_done 3 || fail "the grown run was not kept again: $(cat "$MNT/.runfs/status.json")"
  kept=$(kept_versions)
  cat "$T/runs/a/diff/b" > "$WORK/grown"
  [ "$(kept_versions)" = "$kept" ] || fail "the diff of the grown run did not use the kept data"
  rows_diff "$WORK/grown" "after an append, kept data gives other bytes than the rows"
  # Another writer changes a row of b in place, then deletes one of a, both among the kept
  # rows: each diff is of the rows as they are, also once the mount kept them again.
  local seq
  seq=$(store_sql "SELECT seq FROM run_events WHERE thread_id = 't' AND run_id = 'b' AND event_type = 'llm.tool.result' ORDER BY seq LIMIT 1 OFFSET 40")
  store_sql "UPDATE run_events SET content = '{\"type\":\"tool\",\"content\":\"changed by hand\",\"tool_call_id\":\"nope\"}' WHERE thread_id = 't' AND run_id = 'b' AND seq = $seq"
  seq=$(store_sql "SELECT seq FROM run_events WHERE thread_id = 't' AND run_id = 'a' AND event_type = 'llm.ai.response' ORDER BY seq LIMIT 1 OFFSET 50")
  store_sql "DELETE FROM run_events WHERE thread_id = 't' AND run_id = 'a' AND seq = $seq"
  cat "$T/runs/a/diff/b" > "$WORK/rewritten"
  grep -qx -- '+llm.tool.result  ok: changed by hand' "$WORK/rewritten" || fail "the updated row's new content is not in the diff"
  steps_now t a "$WORK/A"
  steps_now t b "$WORK/B"
  check_diff "$WORK/rewritten" "$WORK/A" "$WORK/B"
  # Kept anew after the rewrites: a and b grow through the mount, and are kept once quiet.
  python3 "$REF" gen 12 change 4 >> "$T/runs/a/events.jsonl"
  python3 "$REF" gen 12 spread 1 >> "$T/runs/b/events.jsonl"
  wait_for 20 keeper_done 5 || fail "runs rewritten then grown were not kept again: $(cat "$MNT/.runfs/status.json")"
  cat "$T/runs/a/diff/b" > "$WORK/last"
  rows_diff "$WORK/last" "after others' rewrites, kept data gives other bytes than the rows"
  # Another process's rows: a run whose log the mount has read, grown by runfs put, is kept
  # too once quiet.
  python3 "$REF" gen 300 spread 5 > "$WORK/c.jsonl"
  "$RUNFS" put -q "$STORE" t c "$WORK/c.jsonl"
  cat "$T/runs/c/events.jsonl" > /dev/null
  python3 "$REF" gen 20 spread 1 > "$WORK/c.jsonl"
  "$RUNFS" put -q "$STORE" t c "$WORK/c.jsonl"
  wait_for 20 keeper_status 6 0 || fail "a run another process grew was not kept: $(cat "$MNT/.runfs/status.json")"
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE run_id = 'c'")" = 1 ] || fail "no step data of c kept"
  kept=$(kept_versions)
  cat "$T/runs/a/diff/c" > "$WORK/foreign"
  [ "$(kept_versions)" = "$kept" ] || fail "the diff of the run another process grew did not use the kept data"
  steps_now t c "$WORK/C"
  check_diff "$WORK/foreign" "$WORK/A" "$WORK/C"
  kept_steps "DELETE FROM runfs_steps WHERE run_id = 'c'"
  "$RUNFS" diff "$STORE" t/a t/c > "$WORK/fresh"
  cmp "$WORK/foreign" "$WORK/fresh" || fail "the kept data of another process's rows gives other bytes than the rows"
}

# deerflow_run THREAD RUN < JSONL: the lines inserted into run_events as DeerFlow's store
# inserts rows (one statement, seqs after the thread's last; a dict content as JSON text
# marked content_is_dict), past runfs altogether.
deerflow_run() {
  local last
  last=$(store_sql "SELECT coalesce(max(seq), 0) FROM run_events WHERE thread_id = '$1'")
  python3 -c '
import json, sys
cat = {"llm.human.input": "message", "llm.ai.response": "message", "llm.tool.result": "message"}
q = lambda s: "\x27" + s.replace("\x27", "\x27\x27") + "\x27"
rows = []
for i, line in enumerate(sys.stdin):
    ev = json.loads(line)
    t = ev["event_type"]
    # DeerFlow stores a dict content as JSON text and says so in the metadata.
    if isinstance(ev["content"], dict):
        ev["metadata"]["content_is_dict"] = True
    rows.append("(%s, %s, NULL, %s, %s, %s, %s, %d, %s)" % (q(sys.argv[1]), q(sys.argv[2]), q(t),
                q(cat.get(t, "middleware")), q(json.dumps(ev["content"], ensure_ascii=False)),
                q(json.dumps(ev["metadata"], ensure_ascii=False)), int(sys.argv[3]) + i + 1,
                q("2026-03-04 05:06:%02d.%06d" % (i // 1000000, i % 1000000))))
print("INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, "
      "event_metadata, seq, created_at) VALUES " + ", ".join(rows) + ";")
' "$1" "$2" "$last" > "$WORK/insert.sql"
  store_sql "$(cat "$WORK/insert.sql")"
}

@test "diff: the mount keeps the step data of runs other processes wrote, as the change feed names them" {
  # Two runs put by runfs put and one inserted by DeerFlow's own SQL, beside the mount and
  # never looked at through it: the hub sees another process commit, the keeper's read of
  # the change feed names the runs, and each is kept once quiet.
  python3 "$REF" gen 300 same > "$WORK/a.jsonl"
  python3 "$REF" gen 300 spread 4 > "$WORK/b.jsonl"
  "$RUNFS" put -q "$STORE" t a "$WORK/a.jsonl"
  "$RUNFS" put -q "$STORE" t b "$WORK/b.jsonl"
  python3 "$REF" gen 300 spread 2 | deerflow_run t c
  wait_for 20 keeper_status 3 0 || fail "the mount kept not the 3 runs others wrote: $(cat "$MNT/.runfs/status.json")"
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE thread_id = 't'")" = 3 ] || fail "not the 3 runs' step data kept: $(kept_steps "SELECT run_id FROM runfs_steps")"
  # The first diffs through the mount read what was kept, no row: one that read the rows
  # would keep its data again, making a new version.
  local kept; kept=$(kept_versions)
  cat "$T/runs/a/diff/b" > "$WORK/ab"
  cat "$T/runs/a/diff/c" > "$WORK/ac"
  [ "$(kept_versions)" = "$kept" ] || fail "a first diff read rows (kept rows $kept became $(kept_versions))"
  steps_now t a "$WORK/A"
  steps_now t b "$WORK/B"
  steps_now t c "$WORK/C"
  check_diff "$WORK/ab" "$WORK/A" "$WORK/B"
  check_diff "$WORK/ac" "$WORK/A" "$WORK/C"
  # Another writer changes a row of c in place after it was kept: what was kept no longer
  # holds (the store's count of in-place changes moved), the feed names c again and the
  # keeper keeps it anew from its rows; the diff then reads no row and shows the new text.
  local seq
  seq=$(store_sql "SELECT seq FROM run_events WHERE thread_id = 't' AND run_id = 'c' AND event_type = 'llm.human.input' ORDER BY seq LIMIT 1 OFFSET 10")
  store_sql "UPDATE run_events SET content = '{\"type\":\"human\",\"content\":\"changed by hand\"}' WHERE thread_id = 't' AND run_id = 'c' AND seq = $seq"
  wait_for 20 keeper_status 4 0 || fail "the run changed in place was not kept again: $(cat "$MNT/.runfs/status.json")"
  # (The count is store-wide: a's kept data is stale too, and this diff reads a's rows.)
  kept=$(kept_steps "SELECT $(kept_version_col) FROM runfs_steps WHERE run_id = 'c'")
  cat "$T/runs/a/diff/c" > "$WORK/updated"
  [ "$(kept_steps "SELECT $(kept_version_col) FROM runfs_steps WHERE run_id = 'c'")" = "$kept" ] || fail "the diff of the run kept again read its rows"
  grep -qx -- "+llm.human.input changed by hand" "$WORK/updated" || fail "the updated row's new content is not in the diff"
  steps_now t c "$WORK/C"
  check_diff "$WORK/updated" "$WORK/A" "$WORK/C"
  # Changed again, diffed at once (before the keeper looks): the kept data is refused and
  # the diff is of the rows as they are.
  seq=$(store_sql "SELECT seq FROM run_events WHERE thread_id = 't' AND run_id = 'c' AND event_type = 'llm.human.input' ORDER BY seq LIMIT 1 OFFSET 20")
  store_sql "UPDATE run_events SET content = '{\"type\":\"human\",\"content\":\"changed again\"}' WHERE thread_id = 't' AND run_id = 'c' AND seq = $seq"
  cat "$T/runs/a/diff/c" > "$WORK/again"
  grep -qx -- "+llm.human.input changed again" "$WORK/again" || fail "the second update's new content is not in the diff"
  steps_now t c "$WORK/C"
  check_diff "$WORK/again" "$WORK/A" "$WORK/C"
  wait_for 20 keeper_status 4 0 || fail "the keeper is still due: $(cat "$MNT/.runfs/status.json")"
  kept_steps "DELETE FROM runfs_steps WHERE thread_id = 't'"
  "$RUNFS" diff "$STORE" t/a t/c > "$WORK/fresh"
  cmp "$WORK/again" "$WORK/fresh" || fail "the kept data of others' rows gives other bytes than the rows"
}

@test "diff: the keeper reads the change feed a page at a time; a read-only mount keeps nothing" {
  # More runs than a page of the feed (256), put by one runfs put each beside the mount:
  # all are kept, the feed read in pages (the queue of runs due is bounded, fs/keeper.c).
  local i
  for i in $(seq 1 300); do
    printf '%s\n' "$(ev_start)" "$(ev_human "q$i" "$i")" > "$WORK/r.jsonl"
    "$RUNFS" put -q "$STORE" p "r$i" "$WORK/r.jsonl"
  done
  wait_for 60 keeper_status 300 0 || fail "not every run of 300 was kept: $(cat "$MNT/.runfs/status.json")"
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE thread_id = 'p'")" = 300 ] || fail "not 300 runs' step data kept"
  # A read-only mount writes nothing: it has no keeper, and its diff keeps nothing.
  runfs_unmount "$MNT"
  local ro=$WORK/ro
  runfs_mount "$STORE" "$ro" -o ro
  python3 "$REF" gen 40 same > "$WORK/x.jsonl"
  "$RUNFS" put -q "$STORE" t x "$WORK/x.jsonl"
  "$RUNFS" put -q "$STORE" t y "$WORK/x.jsonl"
  python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["mount"]; sys.exit(not (m["read_only"] and m["steps_kept"] == 0 and m["steps_due"] == 0))' "$ro/.runfs/status.json" ||
    fail "the read-only mount has a keeper: $(cat "$ro/.runfs/status.json")"
  cat "$ro/threads/t/runs/x/diff/y" > /dev/null
  [ "$(kept_steps "SELECT count(*) FROM runfs_steps WHERE thread_id = 't'")" = 0 ] || fail "the read-only mount kept step data"
}
