#!/usr/bin/env bats
# oddids.bats — rows another writer (DeerFlow's SQLite store accepts them) stored with ids
# outside the path rule (over 64 characters, '/', '..', NUL, empty, control bytes): never
# shown under threads/, and never break a valid thread's listing and files, search, export or
# the change feed, on both backends alike; export and verify name each one they skipped.

load lib

setup() {
  runfs_setup
}

teardown() {
  runfs_teardown
}

LONG65=$(printf 'x%.0s' {1..65})

# odd_row THREAD_SQL RUN_SQL SEQ: a row as DeerFlow's store inserts it, the ids as SQL
# expressions, its content holding the word "word".
odd_row() {
  local q="INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ($1, $2, NULL, 'llm.error', 'error', 'foreign word', '{}', $3, '2026-03-04 05:06:07.123456')"
  if on_pg; then store_sql "$q" >/dev/null; else sqlite3 -cmd '.timeout 10000' "$STORE" "$q"; fi
}

# ctl N: the character of code N as an SQL expression.
ctl() { if on_pg; then echo "chr($1)"; else echo "char($1)"; fi; }

# odd_ids: the odd ids of the cases, one SQL expression a line (ids over 64 characters or
# holding a NUL are SQLite's alone: DeerFlow's PostgreSQL columns are VARCHAR(64), and text
# holds no NUL).
odd_ids() {
  on_pg || printf '%s\n' "'$LONG65'" "CAST(x'723100' AS TEXT)" "CAST(x'7200' AS TEXT)"
  printf '%s\n' "'a/b'" "'..'" "''" "'r' || $(ctl 1)" "'r' || $(ctl 10) || 'x'"
}

# seqs FILE: the seq of each line, blank-separated.
seqs() { grep -o '"seq":[0-9]*' "$1" | cut -d: -f2 | tr '\n' ' '; }

@test "a run id outside the path rule in a valid thread: runs/ lists the valid run, the thread's and the run's files read as without it" {
  mkdir -p "$MNT/threads/t/runs/r1"
  ev_human "hello word" >>"$MNT/threads/t/runs/r1/events.jsonl"
  ev_ai "word back" >>"$MNT/threads/t/runs/r1/events.jsonl"
  local seq=2 id
  while read -r id; do
    seq=$((seq + 1))
    odd_row "'t'" "$id" "$seq"
    run ls "$MNT/threads/t/runs"
    assert_success
    assert_output "r1"
    cat "$MNT/threads/t/events.jsonl" >"$WORK/ev" 2>"$WORK/err" || fail "run $id: events.jsonl: $(cat "$WORK/err")"
    assert_equal "$(seqs "$WORK/ev")" "1 2 "
    grep -q '"run_id":"r1"' "$WORK/ev"
    cat "$MNT/threads/t/runs/r1/events.jsonl" >"$WORK/ev" 2>"$WORK/err" || fail "run $id: the run's events.jsonl: $(cat "$WORK/err")"
    assert_equal "$(seqs "$WORK/ev")" "1 2 "
    cat "$MNT/threads/t/history.jsonl" >"$WORK/h" 2>"$WORK/err" || fail "run $id: history.jsonl: $(cat "$WORK/err")"
    assert_equal "$(grep -c 'word' "$WORK/h")" 2
    run cat "$MNT/threads/t/message-count"
    assert_success
    assert_output 2
  done < <(odd_ids)
  # The valid run still takes appends, above every seq the odd rows hold.
  ev_human again >>"$MNT/threads/t/runs/r1/events.jsonl"
  assert_equal "$(seqs "$MNT/threads/t/events.jsonl")" "1 2 $((seq + 1)) "
}

@test "a thread id outside the path rule: never listed (no phantom entry), a store-wide search ends with the valid rows only" {
  mkdir -p "$MNT/threads/t/runs/r1" "$MNT/threads/zz/runs/r1"
  ev_human "hello word" >>"$MNT/threads/t/runs/r1/events.jsonl"
  ev_human "zz word" >>"$MNT/threads/zz/runs/r1/events.jsonl"
  local id
  while read -r id; do odd_row "$id" "'r1'" 1; done < <(odd_ids)
  # NUL: an id 't' followed by NUL (SQLite) would list as a second 't'.
  on_pg || odd_row "CAST(x'7400' AS TEXT)" "'r1'" 1
  # Each read of the answer ends: a search that repeated a row without end fails the limit.
  timeout 20 cat "$MNT/search/word" >"$WORK/found" 2>"$WORK/err" || fail "search/word did not end right ($?): $(cat "$WORK/err"), $(wc -l <"$WORK/found") lines"
  assert_equal "$(grep -o '"thread_id":"[^"]*"' "$WORK/found" | tr '\n' ' ')" '"thread_id":"t" "thread_id":"zz" '
  run ls "$MNT/threads"
  assert_success
  assert_equal "$(echo "$output" | tr '\n' ' ')" "t zz "
  run timeout 20 "$RUNFS" search "$STORE" word
  assert_success
  assert_equal "$(echo "$output" | grep -o '"thread_id":"[^"]*"' | tr '\n' ' ')" '"thread_id":"t" "thread_id":"zz" '
}

@test "export writes every valid thread and names each skipped pair (exit 1); verify names them too" {
  local t
  for t in a m; do
    mkdir -p "$MNT/threads/$t/runs/r1"
    ev_human "$t word" >>"$MNT/threads/$t/runs/r1/events.jsonl"
  done
  local id n=0
  # Odd threads, then a valid one of DeerFlow's listed after them (by id and by age).
  while read -r id; do
    odd_row "$id" "'r1'" 1
    n=$((n + 1))
  done < <(odd_ids)
  odd_row "'zz'" "'r1'" 1
  run "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out"
  assert_failure 1
  assert_equal "$(cd "$WORK/out" && find . -name '*.jsonl' | sort | tr '\n' ' ')" \
    "./threads/a/runs/r1.jsonl ./threads/m/runs/r1.jsonl ./threads/zz/runs/r1.jsonl "
  assert_equal "$(echo "$output" | grep -c 'not a valid path id, skipped')" "$n"
  # Then odd runs of a valid thread too.
  local seq=1
  while read -r id; do
    seq=$((seq + 1))
    odd_row "'m'" "$id" "$seq"
    n=$((n + 1))
  done < <(odd_ids)
  run "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out" --force
  assert_failure 1
  assert_equal "$(echo "$output" | grep -c 'not a valid path id, skipped')" "$n"
  on_pg || assert_output --partial "thread \"$LONG65\", run \"r1\": not a valid path id, skipped"
  assert_output --partial 'thread "m", run "a/b": not a valid path id, skipped'
  assert_output --partial 'thread "m", run "r\u0001": not a valid path id, skipped'
  on_pg || assert_output --partial 'thread "m", run "r1\u0000": not a valid path id, skipped'
  assert_equal "$(cd "$WORK/out" && find . -name '*.jsonl' | sort | tr '\n' ' ')" \
    "./threads/a/runs/r1.jsonl ./threads/m/runs/r1.jsonl ./threads/zz/runs/r1.jsonl "
  for t in a m zz; do
    assert_equal "$(wc -l <"$WORK/out/threads/$t/runs/r1.jsonl")" 1
  done
  grep -q "m word" "$WORK/out/threads/m/runs/r1.jsonl"
  grep -q "foreign word" "$WORK/out/threads/zz/runs/r1.jsonl"
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_equal "$(echo "$output" | grep -c 'not a valid path id, skipped')" "$n"
  assert_output --partial 'thread "..", run "r1": not a valid path id, skipped'
  assert_line --index "$n" --partial "0 seals checked"
}

@test "the change feed skips runs whose ids no path can name, on both backends alike" {
  mkdir -p "$MNT/threads/t/runs/r1"
  ev_human "hello" >>"$MNT/threads/t/runs/r1/events.jsonl"
  local id seq=1
  while read -r id; do
    seq=$((seq + 1))
    odd_row "$id" "'r1'" 1
    odd_row "'t'" "$id" "$seq"
  done < <(odd_ids)
  on_pg || odd_row "CAST(x'7400' AS TEXT)" "'r1'" 1
  ev_human "after" >>"$MNT/threads/t/runs/r1/events.jsonl"
  # Each line's thread and run: the one valid run, once, at its latest change.
  run cat "$MNT/changes.jsonl"
  assert_success
  assert_equal "$(echo "$output" | python3 -c 'import json, sys; print(" ".join(json.loads(l)["thread_id"] + "/" + json.loads(l)["run_id"] for l in sys.stdin))')" "t/r1"
  run "$RUNFS" changes "$STORE"
  assert_success
  assert_equal "$(echo "$output" | python3 -c 'import json, sys; print(" ".join(json.loads(l)["thread_id"] + "/" + json.loads(l)["run_id"] for l in sys.stdin))')" "t/r1"
  run cat "$MNT/changes/since/0"
  assert_success
  assert_equal "$(echo "$output" | wc -l)" 1
}
