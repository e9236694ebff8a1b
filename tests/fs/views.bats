#!/usr/bin/env bats
# views.bats — every read-side view on a real mount, against expectations written here (seq
# lists and documents), and the seal's life: refused without a terminal, partial, complete,
# once only, later appends uncovered, tampering found by runfs verify.
load lib

T=threads/t1

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
  assert_output "0 seals checked, 0 changed"
  (set -C; : > "$S/seal.json")
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_output "1 seal checked, 0 changed"
  store_sql "UPDATE run_events SET content = '{\"type\":\"ai\",\"content\":\"forged\",\"id\":\"ai-1\",\"tool_calls\":[]}' WHERE thread_id = 't1' AND seq = 4"
  run "$RUNFS" verify "$STORE"
  assert_failure 1
  assert_output --partial "threads/t1/runs/r1"
  assert_output --partial "digest changed"
  assert_line -n 1 "1 seal checked, 1 changed"
}
