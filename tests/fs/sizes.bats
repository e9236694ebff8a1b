#!/usr/bin/env bats
# sizes.bats — a rendered view's size is kept in the store (runfs_meta) keyed by what it was
# computed from, so a later mount lists a quiet run without rendering it; it stays honest
# (st_size is the bytes a read gives) after appends, after another writer's in-place UPDATE
# and across a remount.
load lib

T=threads/ts
R=$T/runs/r1
# The run's views and the thread's stats.json, under $T.
VIEWS="stats.json runs/r1/events.jsonl runs/r1/messages.jsonl runs/r1/stats.json
  runs/r1/timeline.svg runs/r1/otel.json runs/r1/receipt.json runs/r1/workspace-changes.json
  runs/r1/last-visible-ai-seq runs/r1/types/llm.ai.response.jsonl
  runs/r1/types/llm.human.input.jsonl"

setup() {
  runfs_setup
  mkdir -p "$MNT/$R"
  { ev_start; ev_human "first question" 1; ev_ai "first answer" 1; } >> "$MNT/$R/events.jsonl"
}
teardown() { runfs_teardown; }

# sizes_honest DIR: every view's st_size on the mount at DIR is the byte count of the view as
# `runfs cat` renders it from the store (a separate process, no cache of the mount's).
sizes_honest() {
  local v want got
  for v in $VIEWS; do
    want=$("$RUNFS" cat "$STORE" "$T/$v" | wc -c)
    got=$(stat -c %s "$1/$T/$v")
    [ "$got" -eq "$want" ] || { echo "$v: st_size $got, runfs cat gives $want bytes"; return 1; }
    got=$(cat "$1/$T/$v" | wc -c)
    [ "$got" -eq "$want" ] || { echo "$v: a read gives $got bytes, runfs cat $want"; return 1; }
  done
}

# rewrite LATENCY CALLER: another writer sets the model call's (seq 3) latency_ms and caller
# in place (a caller as much shorter as the latency is longer keeps the row's length).
rewrite() {
  store_sql "UPDATE run_events SET event_metadata = '{\"caller\":\"$2\",\"usage\":{\"total_tokens\":3},\"latency_ms\":$1,\"llm_call_index\":1,\"content_is_json\":true,\"content_is_dict\":true}' WHERE thread_id = 'ts' AND seq = 3"
}

kept_rows() { store_sql "SELECT count(*) FROM runfs_meta WHERE key LIKE 'size:%'"; }

@test "st_size of every view is its bytes after appends, another writer's UPDATE and a remount" {
  ls -la "$MNT/$R" > /dev/null
  sizes_honest "$MNT"
  [ "$(kept_rows)" -gt 0 ] || fail "a first ls -la kept no view size in the store"
  # An append changes every view; their kept sizes no longer apply.
  { ev_human "second, longer question than the first" 2; ev_ai "second answer" 2; } >> "$MNT/$R/events.jsonl"
  sizes_honest "$MNT"
  # Another writer rewrites a row in place: the rewrites count moves, the sizes go stale.
  # The row keeps its length (events.jsonl's size and counts stay), stats.json's does not.
  local before; before=$(stat -c %s "$MNT/$R/events.jsonl")
  rewrite 50000 lead_a
  [ "$("$RUNFS" cat "$STORE" "$R/events.jsonl" | wc -c)" -eq "$before" ] || fail "the UPDATE changed the row's length"
  wait_for 10 sizes_honest "$MNT" || { sizes_honest "$MNT"; fail "the mount kept sizes of before the UPDATE"; }
  # A fresh mount takes the kept sizes (or renders again): the same honest sizes.
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  sizes_honest "$MNT"
  # Rewritten while nothing was mounted: the next mount does not take the old sizes.
  runfs_unmount "$MNT"
  rewrite 7 lead_agent
  runfs_mount "$STORE" "$MNT"
  sizes_honest "$MNT"
}

@test "a view's kept size is replaced, not added to, when its run changes" {
  ls -la "$MNT/$R" > /dev/null
  local before; before=$(kept_rows)
  ev_error "one more" >> "$MNT/$R/events.jsonl"
  ls -la "$MNT/$R" > /dev/null
  [ "$(kept_rows)" -eq "$before" ] || fail "kept sizes grew from $before to $(kept_rows): old ones left behind"
}

@test "a read-only mount sizes every view honestly and writes nothing to the store" {
  ls -la "$MNT/$R" > /dev/null
  runfs_unmount "$MNT"
  store_sql "DELETE FROM runfs_meta WHERE key LIKE 'size:%'"
  runfs_mount "$STORE" "$MNT" -o ro
  sizes_honest "$MNT"
  [ "$(kept_rows)" -eq 0 ] || fail "a read-only mount wrote kept sizes"
}

@test "a second walk of a quiet store reads every file and commits nothing" {
  [ "${RUNFS_BACKEND:-sqlite}" = sqlite ] || skip "SQLite only: counted by PRAGMA data_version"
  { ev_ai "more" 2; ev_error "a failure"; } >> "$MNT/$R/events.jsonl"
  mkdir -p "$MNT/threads/t2/runs/r1"
  { ev_start; ev_human "another" 1; } >> "$MNT/threads/t2/runs/r1/events.jsonl"
  tar cf - -C "$MNT" threads > /dev/null # the first walk may keep sizes
  # data_version moves when any other connection commits (sqlite.org/pragma.html).
  run python3 - "$STORE" "$MNT" <<'PY'
import sqlite3, subprocess, sys
con = sqlite3.connect(sys.argv[1])
before = con.execute("PRAGMA data_version").fetchone()[0]
tar = subprocess.run(["tar", "cf", "-", "-C", sys.argv[2], "threads"], stdout=subprocess.PIPE, check=True)
after = con.execute("PRAGMA data_version").fetchone()[0]
print(len(tar.stdout), before, after)
sys.exit(0 if after == before and len(tar.stdout) > 0 else 1)
PY
  assert_success
}
