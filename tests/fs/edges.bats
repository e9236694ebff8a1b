#!/usr/bin/env bats
# edges.bats — inputs at the edges of what the contract and the files let through (issue 38):
# every code point a contract-valid line may carry, drawn as valid XML; key files that are
# not regular files or ask for a passphrase; a note with bytes after its signatures;
# metadata another writer stored that is not a JSON object.
load lib

setup() {
  runfs_workdir
}

teardown() {
  runfs_teardown
}

# Each class of code point a JSON \u escape can bring into a string the contract accepts,
# as the escape a line spells it: controls other than tab/LF/CR, DEL and the C1 controls,
# U+0085, the noncharacters (U+FDD0..U+FDEF, U+FFFE, U+FFFF, U+1FFFE, U+10FFFF), and
# tab/LF/CR; then some that XML takes as they are (U+2028, an emoji, U+FFFD itself).
CLASSES='\u0001 \u0008 \u000b \u000c \u001b \u001f \u007f \u0080 \u0085 \u009f \ufdd0 \ufdef \ufffe \uffff \ud83f\udffe \udbff\udfff \t \n \r \u2028 \ud83d\ude00 \ufffd'

# edge_run DIR: a run at DIR whose tool names, model name, task id, middleware tag and error
# text hold each of CLASSES between 'a' and 'z<N>'.
edge_run() {
  CLASSES=$CLASSES python3 - "$1" <<'PY'
import json, os, sys
d = sys.argv[1]
cls = os.environ["CLASSES"].split()
def s(i, c):  # the JSON text of "a<c>z<i>", c as its escape
    return '"a' + c + 'z' + str(i) + '"'
calls = ",".join('{"id":"c%d","name":%s,"args":{}}' % (i, s(i, c)) for i, c in enumerate(cls))
lines = [
    '{"event_type":"run.start","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"}}',
    '{"event_type":"llm.ai.response","content":{"type":"ai","content":"x","tool_calls":[%s],'
    '"response_metadata":{"model_name":%s}},"metadata":{"caller":"lead_agent","usage":{},'
    '"latency_ms":5,"llm_call_index":1}}' % (calls, s(99, "\\uffff")),
]
for i, c in enumerate(cls):
    if i % 2:
        lines.append('{"event_type":"llm.tool.result","content":{"type":"tool","content":%s,'
                     '"tool_call_id":"c%d","status":"success"},"metadata":{"caller":"lead_agent"}}'
                     % (s(i, c), i))
    lines.append('{"event_type":"subagent.start","content":{"task_id":%s,"description":%s},'
                 '"metadata":{"task_id":%s}}' % (s(i, c), s(i, c), s(i, c)))
    lines.append('{"event_type":"llm.error","content":%s}' % s(i, c))
lines.append('{"event_type":"middleware:a\\uffffz","content":{"name":"a\\ufffez","hook":"h",'
             '"action":"a","changes":{}}}')
with open(os.path.join(d, "events.jsonl"), "a") as f:
    f.write("".join(l + "\n" for l in lines))
PY
}

@test "timeline.svg and otel.json are valid XML and JSON whatever code point a line escapes" {
  command -v xmllint >/dev/null || fail "xmllint is missing: scripts/setup installs libxml2-utils"
  runfs_mount "$STORE" "$MNT"
  local R=$MNT/threads/t/runs/r
  mkdir -p "$R"
  edge_run "$R"
  (set -C; printf '%s\n' '{"content":{"status":"success"},"metadata":{"protocol_version":1,"recovered":false}}' > "$R/once/run.terminal")
  xmllint --noout "$R/timeline.svg"
  "$RUNFS" cat "$STORE" threads/t/runs/r/timeline.svg | cmp - "$R/timeline.svg"
  # The reference: each name as JSON decodes it, with what XML 1.0 forbids or discourages as
  # U+FFFD and tab/LF/CR as spaces; the rest of the name still shows.
  CLASSES=$CLASSES python3 - "$R/timeline.svg" "$R/otel.json" <<'PY'
import json, os, re, sys
import xml.etree.ElementTree as ET
svg = open(sys.argv[1], "rb").read()
ET.fromstring(svg)  # expat refuses what XML forbids, even as a character reference
text = svg.decode("utf-8")
def shown(ch):
    o = ord(ch)
    if ch in "\t\n\r":
        return " "
    if o < 0x20 or 0x7F <= o <= 0x9F or 0xFDD0 <= o <= 0xFDEF or (o & 0xFFFE) == 0xFFFE:
        return "\ufffd"
    return ch
names = [json.loads('"a' + c + 'z%d"' % i) for i, c in enumerate(os.environ["CLASSES"].split())]
for n in names:
    want = "tool " + "".join(shown(c) for c in n)
    assert want in text, "missing %r in timeline.svg" % want
    # A task id is shown on one line: LF as "\\n", CR left out.
    want = "task " + "".join({"\n": "\\n", "\r": ""}.get(c, shown(c)) for c in n)
    assert want in text, "missing %r in timeline.svg" % want
assert "chat a\ufffdz99" in text, "the model name is not shown"
assert "middleware:a\ufffdz" in text, "the middleware marker is not shown"
# otel.json: strict UTF-8, and the tool names exactly as written.
doc = json.loads(open(sys.argv[2], "rb").read().decode("utf-8"))
got = set()
for rs in doc["resourceSpans"]:
    for ss in rs["scopeSpans"]:
        for sp in ss["spans"]:
            for a in sp["attributes"]:
                if a["key"] == "gen_ai.tool.name":
                    got.add(a["value"]["stringValue"])
assert got == set(names), "otel.json tool names: %r" % (got ^ set(names))
PY
}

@test "a lone surrogate escape is refused at the door, so no view ever holds one" {
  runfs_mount "$STORE" "$MNT"
  local R=$MNT/threads/t/runs/r
  mkdir -p "$R"
  run bash -c "printf '%s\n' '{\"event_type\":\"llm.error\",\"content\":\"a\\ud800z\"}' >> '$R/events.jsonl'"
  assert_failure
  assert_output --partial "Invalid argument"
  run grep -F "lone surrogate" "$MNT/.runfs/rejects.jsonl"
  assert_success
}

# keys: $WORK/a.pem (mode 600) and its public half a.pub.
keys() {
  openssl genpkey -algorithm ed25519 -out "$WORK/a.pem" 2>/dev/null
  chmod 600 "$WORK/a.pem"
  openssl pkey -in "$WORK/a.pem" -pubout -out "$WORK/a.pub" 2>/dev/null
}

# signed_note: run t/r sealed (partial) with a.pem; its note in $WORK/note.
signed_note() {
  keys
  ev_human | "$RUNFS" put -q "$STORE" t r
  "$RUNFS" seal "$STORE" t r --partial "no terminal here" --seal-key "$WORK/a.pem" \
    --seal-key-name edges >/dev/null
  "$RUNFS" cat "$STORE" threads/t/runs/r/seal.note > "$WORK/note"
}

@test "a key that is a FIFO, a directory or a device is refused at once, never waited on" {
  signed_note
  mkfifo -m 600 "$WORK/fifo"
  mkdir -m 700 "$WORK/dir"
  local k what
  for k in fifo:FIFO dir:directory /dev/null:device; do
    what=${k#*:}
    k=${k%%:*}
    [[ $k == /* ]] || k=$WORK/$k
    run timeout -k 5 10 "$RUNFS" seal "$STORE" t r2 --partial x --seal-key "$k"
    assert_failure 2
    assert_output --partial "$k is a $what: a key is read from a regular file"
    run timeout -k 5 10 "$RUNFS" verify-note --key "$k" "$WORK/note"
    assert_failure 2
    assert_output --partial "$k is a $what"
    run timeout -k 5 10 "$RUNFS" verify "$STORE" --key "$k"
    assert_failure 2
    assert_output --partial "$k is a $what"
    run timeout -k 5 20 "$RUNFS" mount --seal-key "$k" "$STORE" "$MNT"
    assert_failure 2
    assert_output --partial "$k is a $what"
  done
  run grep -c " $MNT " /proc/mounts
  assert_output 0
  # Nothing was sealed by the refused commands.
  run "$RUNFS" cat "$STORE" threads/t/runs/r2/seal.json
  assert_failure
}

@test "a passphrase-protected key is refused with a message, never a prompt" {
  keys
  openssl genpkey -algorithm ed25519 -aes256 -pass pass:x -out "$WORK/enc.pem" 2>/dev/null
  chmod 600 "$WORK/enc.pem"
  grep -q "ENCRYPTED PRIVATE KEY" "$WORK/enc.pem"
  ev_human | "$RUNFS" put -q "$STORE" t r
  # No terminal (setsid) and a stdin that never ends (a FIFO this shell holds open): a
  # prompt would wait there until the timeout.
  mkfifo "$WORK/in"
  local fd
  exec {fd}<>"$WORK/in"
  run setsid -w timeout -k 5 10 "$RUNFS" seal "$STORE" t r --partial x --seal-key "$WORK/enc.pem" <&"$fd"
  local seal_status=$status seal_out=$output
  run setsid -w timeout -k 5 20 "$RUNFS" mount --seal-key "$WORK/enc.pem" "$STORE" "$MNT" <&"$fd"
  exec {fd}>&-
  assert_failure 2
  assert_output --partial "$WORK/enc.pem is encrypted: runfs asks for no passphrase"
  refute_output --partial "pass phrase"
  run grep -c " $MNT " /proc/mounts
  assert_output 0
  status=$seal_status output=$seal_out
  assert_failure 2
  assert_output --partial "$WORK/enc.pem is encrypted: runfs asks for no passphrase"
  refute_output --partial "pass phrase"
  run "$RUNFS" cat "$STORE" threads/t/runs/r/seal.json
  assert_failure
}

@test "verify-note refuses anything after the signature lines" {
  signed_note
  run "$RUNFS" verify-note --key "$WORK/a.pub" "$WORK/note"
  assert_success
  local sig
  sig=$(tail -n 1 "$WORK/note")
  local -a tails=("junk" "" "$sig junk" "# a comment")
  local i=0 t
  for t in "${tails[@]}"; do
    i=$((i + 1))
    { cat "$WORK/note"; printf '%s\n' "$t"; } > "$WORK/note.$i"
    run "$RUNFS" verify-note --key "$WORK/a.pub" "$WORK/note.$i"
    assert_failure 1
    assert_output --partial "line 2 after the body is not a signature line"
  done
  # A second signature line (the same key's again) is a signature line: still signed.
  { cat "$WORK/note"; printf '%s\n' "$sig"; } > "$WORK/note.twice"
  run "$RUNFS" verify-note --key "$WORK/a.pub" "$WORK/note.twice"
  assert_success
}

# foreign_meta SEQ TYPE CATEGORY CONTENT METADATA: another writer's row of t/r at SEQ, its
# event_metadata column holding METADATA as it is (SQL-quoted here).
foreign_meta() {
  store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t', 'r', '$2', '$3', '$4', '$5', $1, '2026-03-05 00:00:0$1.000000')"
}

# meta_check FILE SEQ WANT: the line of seq SEQ in FILE (JSONL) has metadata WANT (JSON).
meta_check() {
  python3 - "$@" <<'PY'
import json, sys
f, seq, want = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
rows = [json.loads(l) for l in open(f, encoding="utf-8")]
got = [r["metadata"] for r in rows if r.get("seq") == seq]
assert got == [want], "seq %d of %s: metadata %r, want %r" % (seq, f, got, want)
PY
}

@test "metadata another writer stored that is not a JSON object shows as what it holds, in every view" {
  ev_start | "$RUNFS" put -q "$STORE" t r
  local -a metas=('"a string"' '[1,"x"]' '42' 'null')
  on_pg || metas+=('not json' '{"cut": ')
  local i=2 m
  for m in "${metas[@]}"; do
    foreign_meta "$i" llm.error trace "boom $i" "$m"
    i=$((i + 1))
  done
  foreign_meta "$i" llm.error trace "tasked" '{"task_id":"k1"}'
  runfs_mount "$STORE" "$MNT"
  local R=$MNT/threads/t/runs/r
  "$RUNFS" cat "$STORE" threads/t/runs/r/events.jsonl > "$WORK/cli.jsonl"
  cmp "$WORK/cli.jsonl" "$R/events.jsonl"
  cmp "$MNT/threads/t/events.jsonl" "$R/events.jsonl"
  # The reference: the column's text as JSON when it parses, else that text as a string.
  i=2
  for m in "${metas[@]}"; do
    local want
    want=$(python3 -c 'import json, sys
try: v = json.loads(sys.argv[1])
except ValueError: v = sys.argv[1]
print(json.dumps(v))' "$m")
    meta_check "$R/events.jsonl" "$i" "$want"
    meta_check "$R/types/llm.error.jsonl" "$i" "$want"
    meta_check "$MNT/search/boom" "$i" "$want"
    i=$((i + 1))
  done
  run grep -c '"metadata":{}' "$R/events.jsonl"
  assert_output 0
  # The views that read metadata members take a non-object as having none.
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$R/stats.json"
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$R/otel.json"
  xmllint --noout "$R/timeline.svg"
  run cat "$MNT/threads/t/history.jsonl" "$MNT/threads/t/transcript.md" "$R/receipt.json"
  assert_success
  run ls "$R/tasks" "$R/types"
  assert_success
  assert_line llm.error.jsonl
  assert_line k1.jsonl
  run grep -c tasked "$R/tasks/k1.jsonl"
  assert_output 1
}
