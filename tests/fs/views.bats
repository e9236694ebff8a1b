#!/usr/bin/env bats
# views.bats — every read-side view on a real mount, against expectations written here (seq
# lists and documents), and the seal's life: refused without a terminal, partial, complete,
# once only, later appends uncovered, tampering found by runfs verify.
load lib

T=threads/t1

# canon_ranges: the SQL of the store's ranges of rows runfs stored (hi, lo): runfs_canon's,
# and on SQLite (layout 5) the top range, kept in runfs_meta.
canon_ranges() {
  if on_pg; then echo "runfs_canon"; return; fi
  echo "(SELECT hi, lo FROM runfs_canon UNION ALL SELECT h.value AS hi, l.value AS lo FROM runfs_meta l, runfs_meta h WHERE l.key = 'canon_lo' AND h.key = 'canon_hi' AND l.value > 0)"
}

# A fixture thread: r1 with every kind of message row, r2 superseded by r3 (a regenerate).
fixture() {
  mkdir -p "$MNT/$T/runs/r1" "$MNT/$T/runs/r2" "$MNT/$T/runs/r3"
  cat >> "$MNT/$T/runs/r1/events.jsonl" <<'EOF'
{"event_type":"run.start","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"}}
{"event_type":"llm.human.input","content":{"type":"human","content":"hi","id":"h1__user"},"metadata":{"caller":"lead_agent"}}
{"event_type":"middleware:guardrail","content":{"name":"G","hook":"before_model","action":"allow","changes":{}}}
{"event_type":"llm.ai.response","content":{"type":"ai","content":"calling","id":"ai-1","tool_calls":[]},"metadata":{"caller":"lead_agent","usage":{},"latency_ms":1,"llm_call_index":1}}
{"event_type":"llm.ai.response","content":{"type":"ai","content":"summary","id":"ai-mw","tool_calls":[]},"metadata":{"caller":"middleware:summarize","usage":{},"latency_ms":1,"llm_call_index":2}}
{"event_type":"llm.ai.response","content":{"type":"ai","content":"sub","id":"ai-sub","tool_calls":[]},"metadata":{"caller":"subagent:research","usage":{},"latency_ms":1,"llm_call_index":3}}
{"event_type":"subagent.start","content":{"task_id":"task-1","description":"look"},"metadata":{"task_id":"task-1"}}
{"event_type":"subagent.step","content":{"task_id":"task-1","message_index":0,"kind":"tool","text":"ok","truncated":false,"tool_name":"read"},"metadata":{"task_id":"task-1","message_index":0}}
{"event_type":"llm.tool.result","content":{"type":"tool","content":"42","tool_call_id":"call-1"},"metadata":{}}
{"event_type":"workspace_changes","content":"1 file changed +1 -0","metadata":{"workspace_changes":{"version":1,"summary":{"created":1,"modified":0,"deleted":0,"symlink_created":0,"additions":1,"deletions":0,"truncated":false},"files":[],"limits":{"max_files":200,"max_scanned_files":2000,"max_file_bytes_for_diff":262144,"max_total_diff_bytes":1048576}}}}
EOF
  (set -C; ev_terminal success > "$MNT/$T/runs/r1/once/run.terminal")
  cat >> "$MNT/$T/runs/r2/events.jsonl" <<'EOF'
{"event_type":"run.start","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"}}
{"event_type":"llm.human.input","content":{"type":"human","content":"again","id":"h2"},"metadata":{"caller":"lead_agent"}}
{"event_type":"llm.ai.response","content":{"type":"ai","content":"first try","id":"ai-2","tool_calls":[]},"metadata":{"caller":"lead_agent","usage":{},"latency_ms":1,"llm_call_index":1}}
EOF
  (set -C; ev_terminal success > "$MNT/$T/runs/r2/once/run.terminal")
  cat >> "$MNT/$T/runs/r3/events.jsonl" <<'EOF'
{"event_type":"run.start","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent","regenerate_from_run_id":"r2"}}
{"event_type":"llm.ai.response","content":{"type":"ai","content":"second try","id":"ai-2","tool_calls":[]},"metadata":{"caller":"lead_agent","usage":{},"latency_ms":1,"llm_call_index":1}}
EOF
  (set -C; ev_terminal success > "$MNT/$T/runs/r3/once/run.terminal")
}

setup() {
  runfs_setup
  fixture
}
teardown() { runfs_teardown; }

seqs() { python3 -c 'import json,sys; print(" ".join(str(json.loads(l)["seq"]) for l in sys.stdin))'; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d=d[k] if not isinstance(d,list) else d[int(k)]
print(json.dumps(d))' "$1"; }

@test "the fixture's seqs are as this file expects" {
  run seqs < "$MNT/$T/events.jsonl"
  assert_output "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18"
  run cat "$MNT/$T/seq"
  assert_output 18
}

@test "messages.jsonl, history.jsonl, since/: the rows each should hold" {
  run seqs < "$MNT/$T/messages.jsonl"
  assert_output "2 4 5 6 9 13 14 17"
  run cat "$MNT/$T/message-count"
  assert_output 8
  # history: no middleware caller (5), no subagent AI (6), nothing of r2 (r3 regenerated it)
  run seqs < "$MNT/$T/history.jsonl"
  assert_output "2 4 9 17"
  run seqs < "$MNT/$T/since/9"
  assert_output "10 11 12 13 14 15 16 17 18"
  run seqs < "$MNT/$T/runs/r1/since/8"
  assert_output "9 10 11"
  run seqs < "$MNT/$T/runs/r1/messages.jsonl"
  assert_output "2 4 5 6 9"
  # since/ is looked up, never listed
  run ls "$MNT/$T/since"
  assert_output ""
}

@test "types/ and tasks/ list what the run has and hold those rows" {
  run ls "$MNT/$T/runs/r1/types"
  assert_output "$(printf '%s\n' llm.ai.response.jsonl llm.human.input.jsonl llm.tool.result.jsonl \
    middleware:guardrail.jsonl run.start.jsonl run.terminal.jsonl subagent.start.jsonl \
    subagent.step.jsonl workspace_changes.jsonl)"
  run seqs < "$MNT/$T/runs/r1/types/llm.ai.response.jsonl"
  assert_output "4 5 6"
  run ls "$MNT/$T/runs/r1/tasks"
  assert_output "task-1.jsonl"
  run seqs < "$MNT/$T/runs/r1/tasks/task-1.jsonl"
  assert_output "7 8"
  run cat "$MNT/$T/runs/r1/types/nope.jsonl"
  assert_failure
}

@test "last-visible-ai-seq, message-seqs/, ai-runs/: one lookup each" {
  # subagent AI rows count here (the history hides them); middleware ones do not
  run cat "$MNT/$T/runs/r1/last-visible-ai-seq"
  assert_output 6
  run cat "$MNT/$T/runs/r2/last-visible-ai-seq"
  assert_output 14
  # a human message's identity drops its __user suffix; a tool result's is its call id
  run cat "$MNT/$T/message-seqs/message:h1"
  assert_output 2
  run cat "$MNT/$T/message-seqs/tool:call-1"
  assert_output 9
  run cat "$MNT/$T/message-seqs/message:nope"
  assert_failure
  # the newest run that answered with AI message ai-2 is r3
  run cat "$MNT/$T/ai-runs/ai-2"
  assert_output r3
  run cat "$MNT/$T/ai-runs/ai-1"
  assert_output r1
}

@test "workspace-changes.json: the latest payload, or the available:false document" {
  run cat "$MNT/$T/runs/r1/workspace-changes.json"
  assert_output '{"available":true,"version":1,"summary":{"created":1,"modified":0,"deleted":0,"symlink_created":0,"additions":1,"deletions":0,"truncated":false},"files":[],"limits":{"max_files":200,"max_scanned_files":2000,"max_file_bytes_for_diff":262144,"max_total_diff_bytes":1048576}}'
  run cat "$MNT/$T/runs/r2/workspace-changes.json"
  assert_output '{"available":false,"version":1,"summary":{"created":0,"modified":0,"deleted":0,"symlink_created":0,"additions":0,"deletions":0,"truncated":false},"files":[],"limits":{}}'
}

@test "receipt.json: boundary, count and the terminal record" {
  r=$MNT/$T/runs/r1/receipt.json
  [ "$(field upper_seq < "$r")" = 11 ]
  [ "$(field event_count < "$r")" = 11 ]
  [ "$(field terminal.seq < "$r")" = 11 ]
  [ "$(field terminal.content.status < "$r")" = '"success"' ]
}

@test "seal: refused without a terminal, partial with a reason, complete, once, uncovered" {
  R=$MNT/$T/runs/r4
  mkdir -p "$R"
  ev_error one >> "$R/events.jsonl"
  ev_error two >> "$R/events.jsonl"
  # no run.terminal: a body that is not a partial seal is refused, nothing sealed
  run bash -c "set -C; echo '{}' > '$R/seal.json'"
  assert_failure
  assert_output --partial "Invalid argument"
  run cat "$R/seal.json"
  assert_failure
  run tail -1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial '"errno":"EINVAL"'
  # a partial seal records its reason
  (set -C; echo '{"state":"partial","error":"worker lost its lease"}' > "$R/seal.json")
  [ "$(field state < "$R/seal.json")" = '"partial"' ]
  [ "$(field error < "$R/seal.json")" = '"worker lost its lease"' ]
  [ "$(field upper_seq < "$R/seal.json")" = 20 ]
  [ "$(field terminal_seq < "$R/seal.json")" = null ]
  # a second seal: EEXIST (an exclusive create, as set -C does)
  run python3 -c 'import os, sys
try:
    os.close(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL))
except OSError as e:
    print(os.strerror(e.errno)); sys.exit(1)' "$R/seal.json"
  assert_failure
  assert_output "File exists"

  # r1 has its terminal inside the boundary: sealed at once
  S=$MNT/$T/runs/r1
  (set -C; : > "$S/seal.json")
  [ "$(field state < "$S/seal.json")" = '"sealed"' ]
  [ "$(field upper_seq < "$S/seal.json")" = 11 ]
  [ "$(field event_count < "$S/seal.json")" = 11 ]
  [ "$(field terminal_seq < "$S/seal.json")" = 11 ]
  [ "$(field uncovered < "$S/seal.json")" = 0 ]
  # the digest is SHA-256 over the run's lines up to the boundary, as sha256sum says
  want="sha256:$(head -n 11 "$S/events.jsonl" | sha256sum | cut -d' ' -f1)"
  [ "$(field digest < "$S/seal.json")" = "\"$want\"" ]
  # an event after the seal is kept and not claimed by it
  ev_error late >> "$S/events.jsonl"
  [ "$(field uncovered < "$S/seal.json")" = 1 ]
  [ "$(field upper_seq < "$S/seal.json")" = 11 ]
  run "$RUNFS" verify "$STORE"
  assert_success
}

@test "runfs verify finds a sealed row changed behind runfs's back" {
  S=$MNT/$T/runs/r1
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_output "0 seals checked, 0 changed, 0 redacted, 0 expired, 0 deleted after sealing"
  (set -C; : > "$S/seal.json")
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_output "1 seal checked, 0 changed, 0 redacted, 0 expired, 0 deleted after sealing"
  store_sql "UPDATE run_events SET content = '{\"type\":\"ai\",\"content\":\"forged\",\"id\":\"ai-1\",\"tool_calls\":[]}' WHERE thread_id = 't1' AND seq = 4"
  run "$RUNFS" verify "$STORE"
  assert_failure 1
  assert_output --partial "threads/t1/runs/r1"
  assert_output --partial "digest changed"
  assert_line -n 1 "1 seal checked, 1 changed, 0 redacted, 0 expired, 0 deleted after sealing"
}

# Lines of every shape: strings with escapes and non-ASCII, JSON scalars and arrays as
# content, a given created_at, metadata empty or not.
shapes() {
  cat <<'EOF2'
{"event_type":"llm.error","content":"quote \" backslash \\ tab \t nl \n e\u0301 \u00e9 \u2028 \ud83d\ude00 <\/>"}
{"event_type":"llm.error","content":"","metadata":{"k":[1,2.5e3,-0,true,null,"v"],"u":"\u00fc"}}
{"event_type":"run.end","content":[1,"two",{"three":3}],"metadata":{"status":"success"}}
{"event_type":"run.end","content":42,"metadata":{"status":"success"}}
{"event_type":"run.end","content":null,"metadata":{"status":"success","x":{}}}
{"event_type":"run.end","content":"s","metadata":{"status":"success"},"created_at":"2026-01-02T03:04:05+02:00"}
{"event_type":"llm.human.input","content":{"type":"human","content":"x\u0001y","id":"h9"},"metadata":{"caller":"lead_agent"},"created_at":"2026-01-02T03:04:05.5Z"}
EOF2
}

@test "rows runfs stored are copied from their columns: the same bytes as rendered every time" {
  mkdir -p "$MNT/$T/runs/r4"
  shapes >> "$MNT/$T/runs/r4/events.jsonl"
  runfs_mount "$STORE" "$WORK/al" --user "$UID_A"
  mkdir -p "$WORK/al/threads/t2/runs/r5"
  shapes >> "$WORK/al/threads/t2/runs/r5/events.jsonl"
  [ "$(store_sql "SELECT count(*) FROM run_events WHERE user_id IS NOT NULL")" -eq 7 ]
  local f files=($T/events.jsonl $T/messages.jsonl $T/runs/r1/events.jsonl $T/runs/r4/events.jsonl threads/t2/events.jsonl)
  for f in "${files[@]}"; do cat "$MNT/$f" > "$WORK/copied.${f//\//_}"; done
  # Without the ranges every row is rendered again: the same bytes.
  store_sql "DELETE FROM runfs_canon"
  on_pg || store_sql "UPDATE runfs_meta SET value = 0 WHERE key = 'canon_lo'"
  for f in "${files[@]}"; do
    "$RUNFS" cat "$STORE" "$f" > "$WORK/rendered.${f//\//_}"
    cmp "$WORK/copied.${f//\//_}" "$WORK/rendered.${f//\//_}"
  done
  [ "$(cat "$WORK/copied.threads_t1_events.jsonl" "$WORK/copied.threads_t2_events.jsonl" | wc -l)" -eq 32 ]
}

@test "a row another writer stored at a noted id, or changed in place, is rendered, not copied" {
  on_pg || skip "PostgreSQL only (SQLite hands an id out again only at the top: tests/unit test_canonical_rows)"
  local id top
  id=$(store_sql "SELECT id FROM run_events WHERE thread_id = 't1' AND seq = 3")
  top=$(store_sql "SELECT id FROM run_events WHERE thread_id = 't1' AND seq = 5")
  [ "$(store_sql "SELECT count(*) FROM $(canon_ranges) WHERE lo <= $id AND hi >= $top")" -eq 1 ]
  # DeerFlow's role (runfs.writer unset) gives by hand an id a runfs row had.
  store_sql "DELETE FROM run_events WHERE id = $id;
    INSERT INTO run_events (id, thread_id, run_id, event_type, category, content, event_metadata, seq, created_at)
    VALUES ($id, 't1', 'r1', 'llm.error', 'trace', 'spaced', '{\"a\":  1,   \"b\" : [ 2 ]}', 3, '2026-01-02 03:04:05+00');"
  [ "$(store_sql "SELECT count(*) FROM $(canon_ranges) WHERE lo <= $id AND hi >= $id")" -eq 0 ]
  store_sql "UPDATE run_events SET event_metadata = '{ \"c\" : \"d\" }' WHERE id = $top"
  [ "$(store_sql "SELECT count(*) FROM $(canon_ranges) WHERE lo <= $top AND hi >= $top")" -eq 0 ]
  wait_for 10 grep -qF '"content":"spaced"' "$MNT/$T/events.jsonl"
  run grep -F '"seq":3,' "$MNT/$T/events.jsonl"
  assert_output '{"thread_id":"t1","run_id":"r1","seq":3,"event_type":"llm.error","category":"trace","content":"spaced","metadata":{"a":1,"b":[2]},"created_at":"2026-01-02T03:04:05.000000+00:00"}'
  run grep -F '"seq":5,' "$MNT/$T/events.jsonl"
  assert_output --partial '"metadata":{"c":"d"},'
}

@test "a PostgreSQL store of layout 2 (no runfs_canon): a reader renders every row, a read-write open adds the table" {
  on_pg || skip "PostgreSQL only (SQLite's layouts: tests/unit test_layout_migration)"
  cat "$MNT/$T/events.jsonl" > "$WORK/before"
  runfs_unmount "$MNT"
  store_sql "DROP TRIGGER runfs_canon_update ON run_events; DROP FUNCTION runfs_canon_update();
    DROP TABLE runfs_canon; UPDATE runfs_meta SET value = 2 WHERE key = 'layout'"
  run "$RUNFS" cat "$STORE" "$T/events.jsonl"
  assert_success
  assert_output "$(cat "$WORK/before")"
  assert_equal "$(store_sql "SELECT value FROM runfs_meta WHERE key = 'layout'; SELECT to_regclass('runfs_canon') IS NULL")" "$(printf '2\nt')"
  runfs_mount "$STORE" "$MNT"
  assert_equal "$(store_sql "SELECT value FROM runfs_meta WHERE key = 'layout'; SELECT count(*) FROM runfs_canon")" "$(printf '4\n0')"
  cmp "$WORK/before" "$MNT/$T/events.jsonl"
  ev_error after >> "$MNT/$T/runs/r1/events.jsonl"
  assert_equal "$(store_sql "SELECT count(*) FROM runfs_canon c JOIN run_events e ON e.id BETWEEN c.lo AND c.hi")" 1
}

@test "a row changed in place is rendered, not copied; a SQLite store set up without the trigger gets it at a read-write open" {
  local id
  id=$(store_sql "SELECT id FROM run_events WHERE thread_id = 't1' AND seq = 2")
  [ "$(store_sql "SELECT count(*) FROM $(canon_ranges) WHERE lo <= $id AND hi >= $id")" -eq 1 ]
  cat "$MNT/$T/events.jsonl" > "$WORK/before"
  if ! on_pg; then
    # as an older build left it: a reader alters nothing, a writer adds the trigger
    runfs_unmount "$MNT"
    store_sql "DROP TRIGGER runfs_canon_update"
    "$RUNFS" cat "$STORE" "$T/events.jsonl" > /dev/null
    [ "$(store_sql "SELECT count(*) FROM sqlite_master WHERE name = 'runfs_canon_update'")" -eq 0 ]
    runfs_mount "$STORE" "$MNT"
    [ "$(store_sql "SELECT count(*) FROM sqlite_master WHERE name = 'runfs_canon_update'")" -eq 1 ]
  fi
  # the same metadata spelled with spaces: rendered, the line is as before; copied, it is not
  local spaced="replace(event_metadata, '\":', '\" :  ')"
  if on_pg; then spaced="CAST(replace(CAST(event_metadata AS text), '\":', '\" :  ') AS json)"; fi
  store_sql "UPDATE run_events SET event_metadata = $spaced WHERE id = $id"
  [[ $(store_sql "SELECT event_metadata FROM run_events WHERE id = $id") == *'" :  '* ]]
  [ "$(store_sql "SELECT count(*) FROM $(canon_ranges) WHERE lo <= $id AND hi >= $id")" -eq 0 ]
  run "$RUNFS" cat "$STORE" "$T/events.jsonl"
  assert_success
  assert_output "$(cat "$WORK/before")"
}

@test "a stat that renders a view for its size is logged when slow (RUNFS_SLOW_MS), and status.json lists those under way" {
  mkdir -p "$MNT/threads/tslow/runs/r1"
  { ev_start; ev_human "a question" 1; ev_ai "an answer" 1; } >> "$MNT/threads/tslow/runs/r1/events.jsonl"
  runfs_unmount "$MNT"
  # 0 ms: every such stat counts as slow, so the lines do not hang on the machine's speed.
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/daemon.log"
  local size; size=$(stat -c %s "$MNT/threads/tslow/transcript.md")
  wait_for 5 grep -q "sized threads/tslow/transcript.md in [0-9.]* s: $size bytes" "$WORK/daemon.log" ||
    fail "the log does not tell how long transcript.md's sizing took: $(cat "$WORK/daemon.log")"
  # Nothing is under way now: the list is there, and empty.
  run python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["sizing"])' "$MNT/.runfs/status.json"
  assert_success
  assert_output "[]"
}

@test "a thread's first ls -la sizes history.jsonl, transcript.md, stats.json and report.html in one pass; a lone stat renders its view alone" {
  runfs_unmount "$MNT"
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/pass.log"
  # Quiet (the last append over RFS_LIVE_NS, 2 s, old): the pass hands the kernel the bytes
  # of the view whose stat made it, so a cat after ls -la reads them from the page cache.
  wait_for 15 eval '[ $(($(date +%s%N) - $(stat -c %.9Y "$MNT/$T" | tr -d .))) -gt 2200000000 ]'
  run ls -la "$MNT/$T"
  assert_success
  [ "$(fincore -n -o PAGES "$MNT/$T/history.jsonl" | tr -d ' ')" -gt 0 ] ||
    fail "the pass's stat of history.jsonl gave the kernel none of its bytes"
  local listing=$output f want got
  for f in history.jsonl transcript.md stats.json report.html; do
    want=$("$RUNFS" cat "$STORE" "$T/$f" | wc -c)
    got=$(awk -v f="$f" '$NF == f { print $5 }' <<<"$listing")
    [ "$got" = "$want" ] || fail "$f: ls -la says $got bytes, runfs cat gives $want"
    got=$(wc -c < "$MNT/$T/$f")
    [ "$got" -eq "$want" ] || fail "$f: a read gives $got bytes, runfs cat $want"
  done
  wait_for 5 grep -q "in one pass over its rows" "$WORK/pass.log" ||
    fail "the listing's stats did not size the four views in one pass: $(cat "$WORK/pass.log")"
  [ "$(grep -c 'in one pass over its rows' "$WORK/pass.log")" -eq 1 ] ||
    fail "more than one pass for one ls -la: $(cat "$WORK/pass.log")"
  # The listing's stats left the views unsized: the log says no size for them but the pass's.
  ! grep -E "sized $T/(history.jsonl|transcript.md) in [0-9.]* s: 0 bytes" "$WORK/pass.log" ||
    fail "the log gives an unsized view 0 bytes"
  # A change makes the kept sizes stale; a stat with no listing before it renders its view
  # alone (a cat of history.jsonl pays for no transcript).
  ev_human "later" 9 >> "$MNT/$T/runs/r3/events.jsonl"
  runfs_unmount "$MNT"
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/lone.log"
  for f in history.jsonl transcript.md; do
    want=$("$RUNFS" cat "$STORE" "$T/$f" | wc -c)
    got=$(stat -c %s "$MNT/$T/$f")
    [ "$got" -eq "$want" ] || fail "$f: st_size $got, runfs cat gives $want bytes"
    wait_for 5 grep -q "sized $T/$f in [0-9.]* s: $want bytes\$" "$WORK/lone.log" ||
      fail "$f was not sized alone: $(cat "$WORK/lone.log")"
  done
  run grep -c "in one pass" "$WORK/lone.log"
  assert_output 0
}
