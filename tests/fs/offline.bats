#!/usr/bin/env bats
# offline.bats — issue 38 items 7 and 9: the store without a mount shows what a mount shows.
# `runfs ls [-l]` lists a directory as `ls` of a mount does (names, order, sizes, times),
# `runfs cat --user` reads as that owner's scoped mount, `runfs put` stores a singleton
# (run.terminal) as an exclusive create of once/<type> does, so a run built offline seals
# without --partial; import shows a total, a rate and the time left on a terminal.
load lib
bats_require_minimum_version 1.5.0

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

# build_sealed THREAD RUN: a run with messages, sealed partial, made offline (with what
# runfs had before ls, so that only ls is under test).
build_sealed() {
  { ev_start; ev_human "hello $1"; ev_ai; } | "$RUNFS" put -q "$STORE" "$1" "$2" || return 1
  "$RUNFS" seal "$STORE" "$1" "$2" --partial "built offline" >/dev/null
}

# names_sizes DIR: "SIZE MODE NAME" of each name LC_ALL=C ls lists in DIR, from stat(1).
names_sizes() {
  local n
  LC_ALL=C ls "$1" | while IFS= read -r n; do stat -c '%s %A %n' "$1/$n" | sed "s|$1/||"; done
}

@test "runfs ls lists what ls of a mount lists: the root, a thread, runs/, a run, a lookup-only dir" {
  build_sealed t1 r1
  build_sealed t1 r2
  build_sealed t2 r1
  runfs_mount "$STORE" "$MNT"
  local p
  for p in "" threads threads/t1 threads/t1/runs threads/t1/runs/r1 threads/t1/runs/r1/types \
    threads/t1/runs/r1/once threads/t1/runs/r1/since threads/t1/search; do
    run "$RUNFS" ls "$STORE" $p
    assert_success
    assert_output "$(cd "$MNT/$p" && LC_ALL=C ls)"
  done
  # The lookup-only directory lists nothing, the run lists its seal.json.
  assert_equal "$("$RUNFS" ls "$STORE" threads/t1/runs/r1/since)" ""
  run "$RUNFS" ls "$STORE" threads/t1/runs/r1
  assert_line seal.json
  # -a: the hidden names too, as ls -A shows them.
  run "$RUNFS" ls -a "$STORE"
  assert_success
  assert_output "$(cd "$MNT" && LC_ALL=C ls -A)"
  assert_line .runfs
}

@test "runfs ls -l gives each entry's st_size, mode and mtime as stat on a mount does" {
  build_sealed t1 r1
  runfs_mount "$STORE" "$MNT"
  local p
  for p in threads/t1 threads/t1/runs/r1 threads/t1/runs; do
    run "$RUNFS" ls -l "$STORE" "$p"
    assert_success
    # SIZE MODE NAME from our columns (mode, size, mtime, name).
    assert_equal "$(printf '%s\n' "$output" | awk '{ print $2, $1, $4 }')" "$(names_sizes "$MNT/$p")"
  done
  # Times: the mount's mtime in seconds (stat %Y) and ours, read back by date(1).
  local ours
  ours=$("$RUNFS" ls -l "$STORE" threads/t1/runs/r1 | awk '$4 == "events.jsonl" { print $3 }')
  assert_equal "$(date -u -d "$ours" +%s)" "$(stat -c %Y "$MNT/threads/t1/runs/r1/events.jsonl")"
  # A view whose size is its rendering (history.jsonl) is exact: the bytes cat gives.
  assert_equal "$("$RUNFS" ls -l "$STORE" threads/t1 | awk '$4 == "history.jsonl" { print $2 }')" \
    "$(cat "$MNT/threads/t1/history.jsonl" | wc -c)"
}

@test "runfs ls never creates a store: a missing one is exit 2 with a message; a missing path is 1" {
  if on_pg; then
    run "$RUNFS" ls "$(pg_uri nodb_offline)"
    assert_failure 2
    assert_output --partial 'database "nodb_offline" does not exist'
  else
    run "$RUNFS" ls "$WORK/none.db"
    assert_failure 2
    assert_output --partial "no store at $WORK/none.db"
    assert_file_not_exists "$WORK/none.db"
  fi
  build_sealed t1 r1
  run "$RUNFS" ls "$STORE" threads/nope
  assert_failure 1
  assert_output --partial "threads/nope: No such file or directory"
}

@test "runfs cat --user reads as that owner's --user mount: its seal and proofs; another's thread is ENOENT" {
  local al=$WORK/alice
  runfs_mount "$STORE" "$al" --user alice
  mkdir -p "$al/threads/ta/runs/r1"
  { ev_start; ev_human hi; } >> "$al/threads/ta/runs/r1/events.jsonl"
  (set -C; ev_terminal > "$al/threads/ta/runs/r1/once/run.terminal")
  (set -C; : > "$al/threads/ta/runs/r1/seal.json")
  # Bob's thread, written offline as Bob's.
  { ev_start; ev_human bob; } | "$RUNFS" put -q --user bob "$STORE" tb r1
  local f
  for f in receipt.json once/run.terminal proofs/2 seal.json; do
    run "$RUNFS" cat --user alice "$STORE" "threads/ta/runs/r1/$f"
    assert_success
    assert_output "$(cat "$al/threads/ta/runs/r1/$f")"
  done
  assert_output --partial '"state":"sealed"'
  # Bob's thread does not exist for Alice, as on her mount.
  run "$RUNFS" cat --user alice "$STORE" threads/tb/events.jsonl
  assert_failure 1
  assert_output --partial "threads/tb/events.jsonl: No such file or directory"
  run cat "$al/threads/tb/events.jsonl"
  assert_failure
  assert_output --partial "No such file or directory"
  # Alice's seal is hers: the unscoped view has none for the run.
  run "$RUNFS" cat "$STORE" threads/ta/runs/r1/seal.json
  assert_failure 1
  # ls --user shows her mount's threads.
  run "$RUNFS" ls --user alice "$STORE" threads
  assert_success
  assert_output "$(LC_ALL=C ls "$al/threads")"
  assert_output "ta"
}

# jsonl_folder DIR THREADS LINES: a DeerFlow base folder of THREADS threads of one run of
# LINES events each, written as DeerFlow's JSONL store writes them.
jsonl_folder() {
  python3 - "$@" <<'PY'
import json, os, sys
base, threads, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for t in range(threads):
    d = os.path.join(base, "threads", f"t{t}", "runs")
    os.makedirs(d)
    with open(os.path.join(d, "r1.jsonl"), "w") as f:
        for s in range(1, lines + 1):
            f.write(json.dumps({"thread_id": f"t{t}", "run_id": "r1", "event_type": "llm.error",
                                "category": "error", "content": "x" * 100, "metadata": {},
                                "seq": s, "created_at": "2026-03-04T05:06:07+00:00"}) + "\n")
PY
}

@test "import's progress on a terminal shows the files' total, the rate and the time left" {
  # Enough lines that the import outlasts the line's first redraw (0.2 s): PostgreSQL's
  # import stores its rows at about half SQLite's rate, so half of them is enough there.
  local lines=25000 rows
  on_pg && lines=12500
  rows=$((4 * lines))
  jsonl_folder "$WORK/df" 4 "$lines"
  local total
  total=$(find "$WORK/df" -name '*.jsonl' -printf '%s\n' | awk '{ s += $1 } END { printf "%.1f MiB", s / 1048576 }')
  run script -qec "'$RUNFS' import '$STORE' --deerflow-jsonl '$WORK/df'" /dev/null
  assert_success
  # Each redraw: lines so far, bytes of the total, the percentage, a rate, the time left.
  printf '%s' "$output" | tr '\r' '\n' |
    grep -qE "^.\[Kimport: [0-9]+ lines, [0-9.]+ [KM]iB of $total \([0-9]+%\), [0-9.]+ [KM]iB/s, [0-9]+:[0-9]{2} left$" ||
    fail "no progress line with the total $total, a rate and the time left in: $(printf '%s' "$output" | tr '\r' '\n' | cat -v | head -5)"
  assert_output --partial "runfs import: $rows rows imported, 0 already present, 4 threads"
  # Not a terminal: the summary line alone on stderr, as before.
  run --separate-stderr "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
  assert_success
  assert_output ""
  assert_equal "$stderr" "runfs import: 0 rows imported, $rows already present, 4 threads"
}
