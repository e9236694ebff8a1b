#!/usr/bin/env bats
# offsets.bats — a view read at an offset far from where its reader stands (tail -n 50, a
# backwards reader, a jump) gives the bytes a read from the start gives: messages.jsonl,
# history.jsonl, types/ and tasks/ find their row from the end (the rows' lengths summed back). References
# come from events.jsonl (the log, read by byte offset through its own marks) filtered in
# python3 to what each view holds.
load lib

T=threads/t

setup() {
  runfs_setup
  mkdir -p "$MNT/$T/runs/r1" "$MNT/$T/runs/r2"
  local r
  for r in r1 r2; do
    python3 - "$r" >"$WORK/$r.jsonl" <<'PY'
import json, sys
run = sys.argv[1]
for i in range(4000):
    k = i % 4
    if k == 0:
        ev = {"event_type": "llm.human.input", "content": {"type": "human", "content": "question %s-%d %s" % (run, i, "x" * (i % 97)), "id": "h-%s-%d" % (run, i)}, "metadata": {"caller": "lead_agent"}}
    elif k == 1:
        ev = {"event_type": "llm.ai.response", "content": {"type": "ai", "content": "answer %d" % i, "id": "ai-%s-%d" % (run, i), "tool_calls": []}, "metadata": {"caller": "lead_agent", "usage": {}, "latency_ms": 1, "llm_call_index": i}}
    elif k == 2:
        ev = {"event_type": "llm.error", "content": "boom %d %s" % (i, "y" * (i % 211))}
    else:
        ev = {"event_type": "subagent.step", "content": {"task_id": "task-1", "message_index": i, "kind": "tool", "text": "ok", "truncated": False, "tool_name": "read"}, "metadata": {"task_id": "task-1", "message_index": i}}
    print(json.dumps(ev, separators=(",", ":")))
PY
    cat "$WORK/$r.jsonl" >>"$MNT/$T/runs/$r/events.jsonl"
  done
}
teardown() { runfs_teardown; }

# ref LOG KEY VALUE: the lines of events.jsonl LOG whose field KEY (a.b for nested) is VALUE.
ref() {
  python3 - "$@" <<'PY'
import json, sys
log, key, value = sys.argv[1:]
out = sys.stdout.buffer
with open(log, "rb") as f:
    for line in f:
        d = json.loads(line)
        for k in key.split("."):
            d = d.get(k) if isinstance(d, dict) else None
        if d == value:
            out.write(line)
PY
}

# reads_match FILE REF: FILE read at offsets from the end backwards (one handle, as tail
# reads), then jumps on a fresh handle, holds REF's bytes at each.
reads_match() {
  python3 - "$1" "$2" <<'PY'
import os, sys
path, ref = sys.argv[1:]
want = open(ref, "rb").read()
size = len(want)
assert size > 192 * 1024, "the view is large enough to seek in: %d bytes" % size
fd = os.open(path, os.O_RDONLY)
assert os.fstat(fd).st_size == size, "stat size %d, reference %d" % (os.fstat(fd).st_size, size)
offs = list(range(size - 8192, -1, -300000)) + [size - 1, size, size + 10, 0, size // 2, 70000, size - 65536]
for off in offs:
    got = os.pread(fd, 8192, off)
    if got != want[off:off + 8192]:
        sys.exit("%s at %d: %r..., want %r..." % (path, off, got[:60], want[off:off + 60]))
os.close(fd)
for off in (size - 100, size // 3, 1 << 17):
    fd = os.open(path, os.O_RDONLY)
    got = os.pread(fd, 4096, off)
    os.close(fd)
    if got != want[off:off + 4096]:
        sys.exit("%s fresh at %d: %r..., want %r..." % (path, off, got[:60], want[off:off + 60]))
PY
}

@test "messages.jsonl read at offsets from its end: the bytes of a read from the start" {
  ref "$MNT/$T/events.jsonl" category message >"$WORK/ref"
  run reads_match "$MNT/$T/messages.jsonl" "$WORK/ref"
  assert_success
  assert_equal "$(tail -n 50 "$MNT/$T/messages.jsonl" | md5sum)" "$(tail -n 50 "$WORK/ref" | md5sum)"
  ref "$MNT/$T/runs/r2/events.jsonl" category message >"$WORK/ref2"
  run reads_match "$MNT/$T/runs/r2/messages.jsonl" "$WORK/ref2"
  assert_success

  # After an append the end moved: tail shows the new rows, not the kept end.
  ev_human "the very last" 99 >>"$MNT/$T/runs/r1/events.jsonl"
  ref "$MNT/$T/events.jsonl" category message >"$WORK/ref"
  assert_equal "$(tail -n 50 "$MNT/$T/messages.jsonl" | md5sum)" "$(tail -n 50 "$WORK/ref" | md5sum)"
  tail -n 1 "$MNT/$T/messages.jsonl" | grep -q 'the very last' # the append's row is the last line
}

@test "types/ and tasks/ read at offsets from their end: the bytes of a read from the start" {
  ref "$MNT/$T/runs/r1/events.jsonl" event_type llm.error >"$WORK/ref"
  run reads_match "$MNT/$T/runs/r1/types/llm.error.jsonl" "$WORK/ref"
  assert_success
  ref "$MNT/$T/runs/r1/events.jsonl" metadata.task_id task-1 >"$WORK/ref"
  run reads_match "$MNT/$T/runs/r1/tasks/task-1.jsonl" "$WORK/ref"
  assert_success
}

# history_ref LOG: the lines of events.jsonl LOG that history.jsonl shows (no run is
# superseded here): message rows but a middleware's and a subagent's AI messages.
history_ref() {
  python3 - "$1" <<'PY'
import json, sys
out = sys.stdout.buffer
with open(sys.argv[1], "rb") as f:
    for line in f:
        d = json.loads(line)
        caller = (d.get("metadata") or {}).get("caller") or ""
        c = d.get("content")
        kind = (c.get("type") or c.get("role")) if isinstance(c, dict) else None
        if d["category"] != "message" or caller.startswith("middleware:") or \
                (caller.startswith("subagent:") and kind in ("ai", "assistant")):
            continue
        out.write(line)
PY
}

@test "history.jsonl of a live thread read at offsets from its end: the bytes of a read from the start" {
  # Rows history.jsonl leaves out, among the last ones: the seek must skip them too.
  python3 - >"$WORK/hidden.jsonl" <<'PY'
import json
for i in range(300):
    caller = "middleware:summarize" if i % 2 else "subagent:research"
    ev = {"event_type": "llm.ai.response", "content": {"type": "ai", "content": "aside %d" % i, "id": "x-%d" % i, "tool_calls": []}, "metadata": {"caller": caller, "usage": {}, "latency_ms": 1, "llm_call_index": i + 1}}
    print(json.dumps(ev, separators=(",", ":")))
    if i % 10 == 0:
        print(json.dumps({"event_type": "llm.human.input", "content": {"type": "human", "content": "shown %d" % i, "id": "hs-%d" % i}, "metadata": {"caller": "lead_agent"}}, separators=(",", ":")))
PY
  cat "$WORK/hidden.jsonl" >>"$MNT/$T/runs/r2/events.jsonl"
  history_ref "$MNT/$T/events.jsonl" >"$WORK/ref"
  # A handle open for appending keeps the thread live: its views are read from the daemon,
  # not from a rendering the kernel keeps.
  local hold
  exec {hold}>>"$MNT/$T/runs/r1/events.jsonl"
  run reads_match "$MNT/$T/history.jsonl" "$WORK/ref"
  assert_success
  assert_equal "$(tail -n 50 "$MNT/$T/history.jsonl" | md5sum)" "$(tail -n 50 "$WORK/ref" | md5sum)"
  ev_human "the very last" 99 >&"$hold"
  history_ref "$MNT/$T/events.jsonl" >"$WORK/ref"
  assert_equal "$(tail -n 50 "$MNT/$T/history.jsonl" | md5sum)" "$(tail -n 50 "$WORK/ref" | md5sum)"
  tail -n 1 "$MNT/$T/history.jsonl" | grep -q 'the very last' # the append's row is the last line
  exec {hold}>&-
}
