#!/usr/bin/env bats
# offline.bats — issue 38 items 7 and 9: the store without a mount shows what a mount shows.
# `runfs ls [-l]` lists a directory as `ls` of a mount does (names, order, sizes, times),
# `runfs cat --user` reads as that owner's scoped mount, `runfs put` stores a singleton
# (run.terminal) as an exclusive create of once/<type> does, so a run built offline seals
# without --partial; import shows a total, a rate and the time left on a terminal.
load lib

setup() {
  runfs_workdir
}

teardown() {
  runfs_teardown
}

# term_line [STATUS]: a run.terminal line for an events.jsonl (event_type given).
term_line() {
  printf '{"event_type":"run.terminal","content":{"status":"%s"},"metadata":{"protocol_version":1,"recovered":false}}\n' "${1:-success}"
}
export -f term_line

@test "put stores run.terminal as once/ does, in input order; a second is EEXIST naming its seq" {
  { ev_start; term_line; ev_human after; } > "$WORK/run.jsonl"
  run "$RUNFS" put -q "$STORE" t1 r1 "$WORK/run.jsonl"
  assert_success
  # Stored in the order given: the terminal is the second line.
  assert_equal "$(store_sql "SELECT group_concat(event_type) FROM (SELECT event_type FROM run_events WHERE thread_id = 't1' ORDER BY seq) x")" \
    "run.start,run.terminal,llm.human.input"
  local seq
  seq=$(store_sql "SELECT seq FROM run_events WHERE event_type = 'run.terminal'")
  assert_equal "$seq" 2
  local before
  before=$(store_snapshot)
  run bash -c "{ ev_human again; term_line error; } | '$RUNFS' put -q --batch 10 '$STORE' t1 r1"
  assert_failure 1
  assert_line --partial "<stdin>:2: "
  assert_output --partial "run.terminal already exists (seq $seq)"
  assert_output --partial "nothing stored (EEXIST) from line 2 on; the 1 line of earlier batches stay"
  # The line before it was stored (its own batch), the second terminal was not.
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE event_type = 'run.terminal'")" 1
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 't1'")" 4
  # put prints the stored singleton's record like any other.
  run bash -c "term_line | '$RUNFS' put '$STORE' t1 r2"
  assert_success
  assert_output --partial '"seq":5,"event_type":"run.terminal"'
}

@test "a run built offline seals without --partial, and runfs verify holds" {
  { ev_start; ev_human; ev_ai; term_line; } > "$WORK/run.jsonl"
  run "$RUNFS" put -q "$STORE" t1 r1 "$WORK/run.jsonl"
  assert_success
  run "$RUNFS" seal "$STORE" t1 r1
  assert_success
  assert_output --partial '"state":"sealed"'
  assert_output --partial '"terminal_seq":4'
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_output --partial "1 seal checked, 0 changed"
  # --dry-run checks a terminal's line too (stored nothing, refused nothing).
  run bash -c "term_line | '$RUNFS' put --dry-run '$STORE' t1 r9"
  assert_success
  assert_output --partial "1 line checked, nothing stored"
}
