#!/usr/bin/env bats
# forget.bats — redaction (DESIGN "Forgetting: redaction and retention", issue 42): what it
# erases (a byte scan of the store's files, in Python, finds a unique secret before and
# nothing of it after `runfs redact` returns), what it keeps (the envelope, the seal's root,
# earlier proofs, checked against merkle_ref.py, RFC 6962 in Python), its signed note, and
# its refusals with their reasons.
load lib

REF=$BATS_TEST_DIRNAME/merkle_ref.py

setup() {
  runfs_workdir
  openssl genpkey -algorithm ed25519 -out "$WORK/a.pem" 2>/dev/null
  chmod 600 "$WORK/a.pem"
  openssl pkey -in "$WORK/a.pem" -pubout -out "$WORK/a.pub" 2>/dev/null
}
teardown() { runfs_teardown; }

# human TEXT ID: a human-input line holding TEXT.
human() {
  printf '{"event_type":"llm.human.input","metadata":{"caller":"lead_agent","note":{"tags":["a","%s"]}},"content":{"type":"human","content":"%s","id":"h-%s"}}\n' "$1" "$1" "$2"
}

@test "forget: runfs redact erases a secret from the rows, the search index, free pages and WAL at once, with a mount open" {
  local secret=SECRETqz7Xw91
  runfs_mount "$STORE" "$MNT"
  mkdir -p "$MNT/threads/t/runs/r"
  { human "hello" 1; human "the key is $secret" 2; human "bye" 3; } >> "$MNT/threads/t/runs/r/events.jsonl"
  # The search index holds it too, and the mount has rendered and sized the run.
  run cat "$MNT/threads/t/search/$secret"
  assert_success
  assert_output --partial "$secret"
  grep -q "$secret" "$MNT/threads/t/runs/r/events.jsonl"
  local before_size
  before_size=$(stat -c %s "$MNT/threads/t/runs/r/events.jsonl")
  [ "$(store_scan "$secret")" -ge 1 ]
  run "$RUNFS" redact "$STORE" t 2 --path content.content --path metadata.note.tags.1 --reason "user asked"
  assert_success
  assert_output --regexp '^\{"seq":2,"paths":\["content.content","metadata.note.tags.1"\],"reason":"user asked","at":"[^"]+","leaf":null,"note":null\}$'
  # Nothing of it is left in the store's files when the command has returned.
  run store_scan "$secret"
  assert_output "0"
  # The mount shows the redacted row at once (sizes and pages dropped), the envelope kept.
  run grep -c "$secret" "$MNT/threads/t/runs/r/events.jsonl"
  assert_output "0"
  sed -n 2p "$MNT/threads/t/runs/r/events.jsonl" > "$WORK/line"
  python3 - "$WORK/line" <<'EOF'
import json, sys
e = json.loads(open(sys.argv[1]).read())
assert e["seq"] == 2 and e["event_type"] == "llm.human.input" and e["category"] == "message", e
assert e["content"] == {"type": "human", "content": "[redacted]", "id": "h-2"}, e
assert e["metadata"]["note"] == {"tags": ["a", "[redacted]"]}, e
r = e["metadata"]["redaction"]
assert r["reason"] == "user asked" and r["paths"] == ["content.content", "metadata.note.tags.1"], r
EOF
  [ "$(stat -c %s "$MNT/threads/t/runs/r/events.jsonl")" != "$before_size" ]
  run cat "$MNT/threads/t/search/$secret"
  refute_output --partial "$secret"
  run cat "$MNT/threads/t/runs/r/redactions.jsonl"
  assert_success
  assert_output --partial '"seq":2,"paths":["content.content","metadata.note.tags.1"]'
}

@test "forget: the whole content by default; refusals with their reasons: no reason, a missing path, another owner's row, no such seq" {
  { human "one" 1; human "two" 2; } | "$RUNFS" put -q --user alice "$STORE" t r
  # seq 2 becomes bob's, as another writer (DeerFlow) would store it in the shared thread.
  store_sql "UPDATE run_events SET user_id = 'bob' WHERE seq = 2"
  run "$RUNFS" redact "$STORE" t 1
  assert_failure 1
  assert_output --partial "a redaction needs a reason"
  assert_output --partial "EINVAL"
  run "$RUNFS" redact "$STORE" t 1 --reason "   "
  assert_failure 1
  assert_output --partial "a redaction needs a reason"
  run "$RUNFS" redact "$STORE" t 1 --reason why --path content.nothere
  assert_failure 1
  assert_output --partial "path 'content.nothere' does not exist in event seq 1"
  run "$RUNFS" redact "$STORE" t 1 --reason why --path metadata.caller.0
  assert_failure 1
  assert_output --partial "does not exist"
  run "$RUNFS" redact "$STORE" t 1 --reason why --path seq
  assert_failure 1
  assert_output --partial "name a value inside the event"
  run "$RUNFS" redact "$STORE" t 2 --reason why --user alice
  assert_failure 1
  assert_output --partial "another owner's"
  assert_output --partial "EACCES"
  run "$RUNFS" redact "$STORE" t 9 --reason why
  assert_failure 1
  assert_output --partial "no event seq 9"
  # Nothing was changed by a refusal.
  runfs_mount "$STORE" "$MNT"
  run grep -c redacted "$MNT/threads/t/events.jsonl"
  assert_output "0"
  runfs_unmount "$MNT"
  local before
  before=$("$RUNFS" changes "$STORE" | tail -n 1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["change"])')
  run "$RUNFS" redact "$STORE" t 1 --reason "whole" --user alice
  assert_success
  # A redaction is a change in the change feed.
  "$RUNFS" changes "$STORE" --since "$before" | grep -q '"thread_id":"t","run_id":"r"'
  assert_output --partial '"paths":["content"]'
  runfs_mount "$STORE" "$MNT"
  sed -n 1p "$MNT/threads/t/events.jsonl" | grep -q '"content":"\[redacted\]","metadata":{"caller":"lead_agent","note":{"tags":\["a","one"\]},"redaction":'
}

@test "forget: a sealed run keeps its root; earlier proofs still check; verify counts it redacted, and a later change to the row as a change" {
  local secret=SECRETk2Lp0
  { for i in 1 2 3 4 5; do human "line $i" "$i"; done; human "$secret here" 6; human "after" 7; } |
    "$RUNFS" put -q "$STORE" t r
  "$RUNFS" seal "$STORE" t r --partial "fixture" > "$WORK/seal.json"
  runfs_mount "$STORE" "$MNT"
  local d=$MNT/threads/t/runs/r
  cp "$d/events.jsonl" "$WORK/before.jsonl"
  for s in 1 2 3 4 5 6 7; do cp "$d/proofs/$s" "$WORK/proof$s"; done
  python3 "$REF" check "$d"
  runfs_unmount "$MNT"
  run "$RUNFS" redact "$STORE" t 6 --path content.content --path metadata.note.tags.1 --reason "secret" --seal-key "$WORK/a.pem" --seal-key-name runfs.test/a
  assert_success
  echo "$output" > "$WORK/red.json"
  [ "$(store_scan "$secret")" = 0 ]
  # The kept leaf is RFC 6962's leaf of the line as sealed, with its salt (Python, hashlib).
  python3 - "$WORK/before.jsonl" "$WORK/proof6" "$WORK/red.json" "$WORK/a.pub" <<'EOF'
import base64, hashlib, json, sys
from cryptography.hazmat.primitives import serialization
line = open(sys.argv[1], "rb").read().splitlines(keepends=True)[5]
salt = bytes.fromhex(json.load(open(sys.argv[2]))["salt"])
red = json.load(open(sys.argv[3]))
assert red["leaf"] == "sha256:" + hashlib.sha256(b"\x00" + salt + line).hexdigest(), red
note = red["note"]
body, sig = note.split("\n\n", 1)
lines = body.split("\n")
assert lines[:6] == ["runfs redaction v1", "thread t", "run r", "seq 6", "leaf " + red["leaf"],
                     "paths content.content,metadata.note.tags.1"], lines
assert lines[6] == "reason secret" and lines[7] == "at " + red["at"], lines
pub = serialization.load_pem_public_key(open(sys.argv[4], "rb").read())
pub.verify(base64.b64decode(sig.split(" ")[2])[4:], (body + "\n").encode())
EOF
  runfs_mount "$STORE" "$MNT"
  # The root is the seal's, and every proof given before (the redacted event's with its old
  # line too) still checks; new proofs of the others are unchanged.
  grep -q '"redacted":1' "$d/seal.json"
  [ "$(sed 's/.*"root":"\([^"]*\)".*/\1/' "$d/seal.json")" = "$(sed 's/.*"root":"\([^"]*\)".*/\1/' "$WORK/seal.json")" ]
  python3 -c '
import sys
for i, ln in enumerate(open(sys.argv[1], "rb")):
    open("%s/line%d" % (sys.argv[2], i + 1), "wb").write(ln)' "$WORK/before.jsonl" "$WORK"
  for s in 1 2 3 4 5 6 7; do
    run "$RUNFS" verify-proof "$d/seal.json" "$WORK/line$s" "$WORK/proof$s"
    assert_success
    [ "$s" = 6 ] || cmp "$d/proofs/$s" "$WORK/proof$s"
  done
  run cat "$d/redactions.jsonl"
  assert_output "$(cat "$WORK/red.json")"
  runfs_unmount "$MNT"
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_output "1 seal checked, 0 changed, 1 redacted, 0 expired, 0 deleted after sealing"
  store_sql "UPDATE run_events SET content = replace(content, '[redacted]', '[REDACTED]') WHERE seq = 6"
  run "$RUNFS" verify "$STORE"
  assert_failure 1
  assert_line "threads/t/runs/r: seq 6 changed after its redaction"
}

@test "forget: a line appended to redactions.jsonl on an --allow-redact mount redacts at once; without the option EPERM; refusals in rejects.jsonl" {
  local secret=SECRETmount55Q
  runfs_mount "$STORE" "$MNT"
  local d=$MNT/threads/t/runs/r
  mkdir -p "$d"
  { human "first" 1; human "has $secret" 2; } >> "$d/events.jsonl"
  run bash -c "echo '{\"seq\": 2, \"reason\": \"no\"}' >> '$d/redactions.jsonl'"
  assert_failure
  assert_output --partial "Operation not permitted"
  grep -q 'redacting needs a mount with --allow-redact' "$MNT/.runfs/rejects.jsonl"
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT" --allow-redact
  [ "$(store_scan "$secret")" -ge 1 ]
  grep -q "$secret" "$d/events.jsonl"
  # Refused lines: the reason is told, nothing changes.
  run bash -c "echo '{\"seq\": 2, \"paths\": [\"content.content\"]}' >> '$d/redactions.jsonl'"
  assert_failure
  assert_output --partial "Invalid argument"
  grep -q 'a redaction needs a reason' "$MNT/.runfs/rejects.jsonl"
  run bash -c "echo '{\"seq\": 2, \"paths\": [\"content.nope\"], \"reason\": \"r\"}' >> '$d/redactions.jsonl'"
  assert_failure
  grep -q "path 'content.nope' does not exist in event seq 2" "$MNT/.runfs/rejects.jsonl"
  run bash -c "echo 'not json' >> '$d/redactions.jsonl'"
  assert_failure
  grep -q "$secret" "$d/events.jsonl"
  # The write returns once the bytes are gone from the store's files.
  echo '{"seq": 2, "paths": ["content.content", "metadata.note.tags.1"], "reason": "asked to forget"}' >> "$d/redactions.jsonl"
  run store_scan "$secret"
  assert_output "0"
  run grep -c "$secret" "$d/events.jsonl"
  assert_output "0"
  run cat "$d/redactions.jsonl"
  assert_output --regexp '^\{"seq":2,"paths":\["content.content","metadata.note.tags.1"\],"reason":"asked to forget","at":"[^"]+","leaf":null,"note":null\}$'
}

# quiet_since DIR: the thread's last append is over RFS_LIVE_NS (2 s) old, so its logs are
# opened through the kernel's cache (a live thread's are read direct).
quiet_since() {
  [ $(($(date +%s%N) - $(stat -c %.9Y "$1" | tr -d .))) -gt 2200000000 ]
}

@test "forget: a redaction or rmdir through the mount has dropped the kernel's pages of the thread's quiet logs and ended its followers when it returns" {
  runfs_mount "$STORE" "$MNT" --allow-redact --allow-delete
  local i j filler
  filler=$(head -c 5000 /dev/zero | tr '\0' y)
  # Eight quiet logs of about 200 kB (pages the kernel keeps), each with its secret in row 1;
  # t0 has a second run with a secret of its own (its row 41), deleted below.
  for i in 0 1 2 3 4 5 6 7; do
    mkdir -p "$MNT/threads/t$i/runs/r"
    { human "SECRETk$i" 1; for j in $(seq 2 40); do human "$filler" "$j"; done; } >>"$MNT/threads/t$i/runs/r/events.jsonl"
  done
  mkdir -p "$MNT/threads/t0/runs/gone"
  human SECRETgone0 41 >>"$MNT/threads/t0/runs/gone/events.jsonl"
  timeout 60 cat "$MNT/threads/t0/follow.jsonl" >"$WORK/follow" 2>"$WORK/follow.err" &
  local follower=$!
  wait_for 10 grep -q 'SECRETk0' "$WORK/follow"
  wait_for 15 quiet_since "$MNT/threads/t0"
  run python3 - "$MNT/threads" <<'EOF'
import os, sys
base = sys.argv[1]
stale = []
def held(p, secret):
    fd = os.open(p, os.O_RDONLY)
    assert secret in os.pread(fd, 1 << 20, 0), p  # in the kernel's cache now
    return fd
for i in range(8):
    secret = b"SECRETk%d" % i
    fds = [held(os.path.join(base, "t%d" % i, f), secret) for f in ("events.jsonl", "runs/r/events.jsonl")]
    with open(os.path.join(base, "t%d" % i, "runs/r/redactions.jsonl"), "a") as w:
        w.write('{"seq": 1, "paths": ["content.content", "metadata.note.tags.1"], "reason": "asked"}\n')
    for fd in fds:
        stale += ["t%d redacted" % i] if secret in os.pread(fd, 1 << 20, 0) else []
        os.close(fd)
fd = held(os.path.join(base, "t0/events.jsonl"), b"SECRETgone0")
os.rmdir(os.path.join(base, "t0/runs/gone"))
stale += ["t0 deleted"] if b"SECRETgone0" in os.pread(fd, 1 << 20, 0) else []
os.close(fd)
print("stale reads after the write or rmdir returned: %r" % stale)
EOF
  assert_success
  assert_output "stale reads after the write or rmdir returned: []"
  # The thread's follower was told its history changed, and ended.
  wait_for 10 grep -q history_changed "$WORK/follow" || fail "the follower was not told: $(tail -c 300 "$WORK/follow")"
  wait "$follower"
}

@test "forget: a handle open across a redaction never reads the old bytes; the same bytes in another thread" {
  local secret=SECRETahead3Kp mode t u
  # kept: a stat keeps a view's bytes for the reads after it; none: each handle renders its
  # own, ahead of what was asked (RUNFS_KEPT_ANSWER_MAX=0).
  for mode in kept none; do
    if [ $mode = kept ]; then runfs_mount "$STORE" "$MNT" --allow-redact; else RUNFS_KEPT_ANSWER_MAX=0 runfs_mount "$STORE" "$MNT" --allow-redact; fi
    t=$MNT/threads/t-$mode/runs/r u=$MNT/threads/u-$mode/runs/r
    mkdir -p "$t" "$u"
    # Row 1 is about 900 kB, the secret at its end: a first small read of a view renders
    # the whole row, so a reader holds the secret's bytes before anything asked for them.
    { human "$(head -c 450000 /dev/zero | tr '\0' x) $secret" 1; human "after" 2; } >> "$t/events.jsonl"
    { human "$(head -c 450000 /dev/zero | tr '\0' y) unrelated" 1; human "later" 2; } >> "$u/events.jsonl"
    run env PYTHONPATH="$BATS_TEST_DIRNAME" python3 - "$MNT/threads" "$secret" "$mode" <<'EOF'
import errno, os, sys
from rewriter import rest_of
base, secret, mode = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
views = ("runs/r/types/llm.human.input.jsonl", "messages.jsonl", "transcript.md", "runs/r/report.html")
fds = {}
for t in ("t-" + mode, "u-" + mode):
    for v in views:
        p = os.path.join(base, t, v)
        fd = os.open(p, os.O_RDONLY)
        head = os.read(fd, 4096)
        assert head and secret not in head, (p, len(head))
        fds[p] = (fd, head)
with open(os.path.join(base, "t-" + mode, "runs/r/redactions.jsonl"), "a") as w:
    w.write('{"seq": 1, "paths": ["content.content", "metadata.note.tags.1"], "reason": "asked"}\n')
for p, (fd, head) in fds.items():
    rest, got = rest_of(fd)
    os.close(fd)
    # Never the erased bytes; never a splice of two renderings.
    assert secret not in rest, "%s: the secret came back from a held rendering" % p
    fresh = open(p, "rb").read()
    if "/t-" in p and p.endswith("jsonl"):
        # The 4 KiB it gave are row 1's start, which the redaction changed: whether the
        # handle holds the rest of row 1 (its lines are whole rows) or gave a stat's kept
        # bytes, going on would splice two renderings, so its reads fail.
        assert got == errno.ESTALE, "%s: %r after %d bytes, not ESTALE" % (p, got, len(rest))
    elif "/t-" in p:
        # What a handle gave may be the same (transcript.md and report.html cut a long
        # text): then it reads on in the new rendering, never a splice of the two.
        assert got in (None, errno.ESTALE), "%s: %r" % (p, got)
        assert got or head + rest == fresh, "%s: %d bytes read across the redaction, %d now" % (p, len(head + rest), len(fresh))
    else:
        assert got is None, "%s: %r for a rewrite of another thread" % (p, got)
        assert head + rest == fresh, "%s: %d bytes read across the redaction, %d now" % (p, len(head + rest), len(fresh))
# Opened again, each view is the redacted rows' rendering.
for v in views:
    assert secret not in open(os.path.join(base, "t-" + mode, v), "rb").read(), v
print("ok")
EOF
    assert_success
    assert_output "ok"
    runfs_unmount "$MNT"
  done
}

# big_rows THREAD N: N rows of about 4 kB appended to THREAD's run r, row i saying "row i"
# (and commonword, which a root search finds).
big_rows() {
  local pad i
  pad=$(head -c 2000 /dev/zero | tr '\0' y)
  mkdir -p "$MNT/threads/$1/runs/r"
  for i in $(seq 1 "$2"); do human "row $i $pad commonword" "$i"; done >> "$MNT/threads/$1/runs/r/events.jsonl"
}

@test "forget: a reader of a stat's kept bytes gets ESTALE, never another rendering's rest, when another process rewrites a row it read" {
  runfs_mount "$STORE" "$MNT"
  big_rows u 1500
  export STORE RUNFS
  export -f store_sql
  # Each rewrite is another process's, made right after the reader's first megabyte and read
  # on from at once: the mount's hub hears of it only at its next tick, which must not be
  # what makes the reader's next read fail.
  run env PYTHONPATH="$BATS_TEST_DIRNAME" python3 - "$MNT/threads/u/runs/r/types/llm.human.input.jsonl" <<'EOF'
import errno, os, re, subprocess, sys
path = sys.argv[1]
from rewriter import live, rest_of, sql
rewrites = (
    ("UPDATE", lambda: sql("UPDATE run_events SET content = replace(content, 'row 3 ', 'row 3 longer ') WHERE thread_id = 'u' AND seq = 3")),
    ("DELETE", lambda: sql("DELETE FROM run_events WHERE thread_id = 'u' AND seq = 5")),
    ("redact", lambda: subprocess.run([os.environ["RUNFS"], "redact", os.environ["STORE"], "u", "7", "--reason", "asked"], check=True, capture_output=True)),
)
for k, (name, rewrite) in enumerate(rewrites):
    held = live(os.path.dirname(os.path.dirname(os.path.dirname(path))), k)
    os.stat(path)  # sizes the view, keeping its bytes for the reads after it
    fd = os.open(path, os.O_RDONLY)
    got = b""
    while len(got) < (1 << 20):
        got += os.read(fd, 1 << 17)
    rewrite()
    rest, err = rest_of(fd)
    os.close(fd)
    # Its first megabyte holds the rewritten row: reading on can only splice two renderings.
    if err != errno.ESTALE:
        now = open(path, "rb").read()
        rows = [int(m) for m in re.findall(rb'"content":"row (\d+) ', got + rest)]
        raise AssertionError("%s: %r, not ESTALE: %d bytes read (%d rows), the file has %d now, %s" % (name, err, len(got + rest), len(rows), len(now), "the same" if got + rest == now else "a splice"))
# Opened again, the view is the rows as they are now.
fresh = open(path, "rb").read()
assert b'"content":"row 3 longer ' in fresh and b'"content":"row 5 ' not in fresh, fresh[:200]
assert b'"content":"row 7 ' not in fresh and fresh.count(b"\n") == 1499, fresh[:200]
print("ok")
EOF
  assert_success
  assert_output "ok"
}

@test "forget: a reader that read far first reads on across another thread's rewrite; a rewrite of what it gave is ESTALE" {
  runfs_mount "$STORE" "$MNT"
  mkdir -p "$MNT/threads/t/runs/r"
  { human "hello t" 1; human "again t" 2; } >> "$MNT/threads/t/runs/r/events.jsonl"
  big_rows u 2500
  export STORE
  export -f store_sql
  run env PYTHONPATH="$BATS_TEST_DIRNAME" python3 - "$MNT" <<'EOF'
import errno, os, re, subprocess, sys
mnt = sys.argv[1]
from rewriter import live, sql
out = []
k = 0
for rel in ("threads/u/runs/r/types/llm.human.input.jsonl", "threads/u/messages.jsonl", "search/commonword"):
    path = os.path.join(mnt, rel)
    for case in ("other thread", "a row it gave", "a row before what it gave"):
        k += 1
        held = live(os.path.join(mnt, "threads/u/runs"), k)
        os.stat(path)
        whole = open(path, "rb").read()
        fd = os.open(path, os.O_RDONLY)
        far = os.pread(fd, 16384, 3 << 20)  # tail, a seek: a read at 3 MiB first
        assert far == whole[3 << 20:(3 << 20) + 16384], (rel, case)
        seqs = [int(m) for m in re.findall(rb'"content":"row (\d+) ', far)]
        assert seqs, (rel, case, far[:300])
        if case == "other thread":
            q = "UPDATE run_events SET event_metadata = '{\"caller\":\"x%d\"}' WHERE thread_id = 't' AND seq = 1" % k
        elif case == "a row it gave":
            q = "UPDATE run_events SET content = replace(content, 'commonword', 'commonword %d') WHERE thread_id = 'u' AND seq = %d" % (k, seqs[0])
        else:
            q = "UPDATE run_events SET content = replace(content, 'commonword', 'commonword %d') WHERE thread_id = 'u' AND seq = 1" % k
        sql(q)
        try:
            b = os.pread(fd, 1 << 20, 0)
            got = "ok" if b == whole[:1 << 20] else "%d bytes, a prefix: %s" % (len(b), whole.startswith(b))
        except OSError as e:
            got = errno.errorcode[e.errno]
        os.close(fd)
        # Nothing it read changed: the whole file's first bytes. Bytes it gave changed, or
        # moved: ESTALE (the new rendering's first megabyte, read now, would splice).
        want = "ok" if case == "other thread" else "ESTALE"
        out += ["%s, %s: %s" % (rel, case, got)] if got != want else []
print("unexpected: %r" % out)
EOF
  assert_success
  assert_output "unexpected: []"
}

@test "forget: a slow reader of events.jsonl gets ESTALE or one rendering, never a splice, across another process's rewrite; another thread's reader reads on" {
  runfs_mount "$STORE" "$MNT"
  big_rows u 1500
  big_rows t 700
  export STORE
  export -f store_sql
  # The rewrite is another process's, made between two reads of a reader that gave its
  # first megabyte: the mount's hub hears of it only at its next tick. A reader of thread t
  # reads across the same rewrites and must read on: the rewritten rows are u's.
  run env PYTHONPATH="$BATS_TEST_DIRNAME" python3 - "$MNT" <<'EOF'
import errno, os, re, subprocess, sys
mnt = sys.argv[1]
from rewriter import live, rest_of, sql
out = []
k = 0
for rel in ("threads/u/events.jsonl", "threads/u/runs/r/events.jsonl"):
    for name in ("UPDATE", "DELETE"):
        k += 1
        held = live(os.path.join(mnt, "threads/u/runs"), k), live(os.path.join(mnt, "threads/t/runs"), k)
        path, other = os.path.join(mnt, rel), os.path.join(mnt, rel.replace("/u/", "/t/"))
        before, other_before = open(path, "rb").read(), open(other, "rb").read()
        fd, fo = os.open(path, os.O_RDONLY), os.open(other, os.O_RDONLY)
        got = b""
        while len(got) < (1 << 20):
            got += os.read(fd, 1 << 17)
        got_o = os.read(fo, 1 << 19)
        # A row of the first megabyte, 2 kB longer or gone: the offsets after it move.
        seq = 3 * k
        if name == "UPDATE":
            sql("UPDATE run_events SET content = replace(content, 'row %d ', 'row %d %s ') WHERE thread_id = 'u' AND seq = %d" % (seq, seq, "x" * 2000, seq))
        else:
            sql("DELETE FROM run_events WHERE thread_id = 'u' AND seq = %d" % seq)
        rest, err = rest_of(fd)
        rest_o, err_o = rest_of(fo)
        os.close(fd)
        os.close(fo)
        after = open(path, "rb").read()
        assert after != before, (rel, name)
        whole = got + rest
        if err is None and whole not in (before, after):
            rows = [int(m) for m in re.findall(rb'"content":"row (\d+) ', whole)]
            out.append("%s %s: %d bytes, neither rendering (%d rows, %d lines, %d and %d bytes before and after)" % (rel, name, len(whole), len(rows), whole.count(b"\n"), len(before), len(after)))
        elif err not in (None, errno.ESTALE):
            out.append("%s %s: %s" % (rel, name, errno.errorcode[err]))
        if err_o is not None or got_o + rest_o != other_before:
            out.append("%s, thread t across %s of u: %s, %d bytes of %d" % (rel, name, err_o and errno.errorcode[err_o], len(got_o + rest_o), len(other_before)))
print("unexpected: %r" % out)
EOF
  assert_success
  assert_output "unexpected: []"
}

@test "forget: a reader of a quiet view whose first bytes the kernel's cache gave gets ESTALE or one rendering across another process's rewrite" {
  runfs_mount "$STORE" "$MNT"
  big_rows u 1500
  wait_for 15 quiet_since "$MNT/threads/u"
  export STORE RUNFS
  export -f store_sql
  # A first reader leaves the view's first megabyte (and what readahead took) in the
  # kernel's cache; a second reader of the same version reads it from there, so its handle
  # gives none of those bytes itself, then reads on past them after the rewrite.
  run env PYTHONPATH="$BATS_TEST_DIRNAME" python3 - "$MNT" <<'EOF'
import errno, os, subprocess, sys
mnt = sys.argv[1]
rel = "threads/u/messages.jsonl"
path = os.path.join(mnt, rel)
from rewriter import rest_of, sql
def cat():
    return subprocess.run([os.environ["RUNFS"], "cat", os.environ["STORE"], rel], check=True, capture_output=True).stdout
before = cat()
fd = os.open(path, os.O_RDONLY)
first = os.read(fd, 1 << 20)
os.close(fd)
assert first == before[:len(first)], "the first reader's bytes"
fd = os.open(path, os.O_RDONLY)
got = b""
while len(got) < (1 << 20):
    got += os.read(fd, 1 << 17)
sql("UPDATE run_events SET content = replace(content, 'row 3 ', 'row 3 %s ') WHERE thread_id = 'u' AND seq = 3" % ("x" * 2000))
rest, err = rest_of(fd)
os.close(fd)
after = cat()
assert after != before
whole = got + rest
if err is None and whole not in (before, after):
    print("%d bytes read, neither rendering (%d and %d bytes)" % (len(whole), len(before), len(after)))
elif err not in (None, errno.ESTALE):
    print(errno.errorcode[err])
else:
    print("ok")
EOF
  assert_success
  assert_output "ok"
}

# RUNFS_OLD: a runfs built from before salted leaves (main), whose seals are plain.
@test "forget: redacting under a plain-leaf seal made by an older runfs works, and verify warns" {
  [ -n "${RUNFS_OLD:-}" ] || skip "needs RUNFS_OLD, a runfs built from before salted leaves"
  { human "a" 1; human "short" 2; human "c" 3; } | "$RUNFS_OLD" put -q "$STORE" t r
  "$RUNFS_OLD" seal "$STORE" t r --partial "old" >/dev/null
  run "$RUNFS" redact "$STORE" t 2 --reason "pii"
  assert_success
  assert_output --partial "its kept leaf hash could confirm a guess at a short value"
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_line --partial "threads/t/runs/r: 1 redacted; warning: its leaves are plain"
  assert_line "1 seal checked, 0 changed, 1 redacted, 0 expired, 0 deleted after sealing"
}

@test "forget: an unscoped redaction of a row an owner sealed keeps that owner's seal holding" {
  runfs_mount "$STORE" "$MNT" --user alice
  local d=$MNT/threads/t/runs/r
  mkdir -p "$d"
  { human "a" 1; human "private" 2; human "c" 3; } >> "$d/events.jsonl"
  (set -C; echo '{"state":"partial","error":"fixture"}' > "$d/seal.json")
  runfs_unmount "$MNT"
  run "$RUNFS" redact "$STORE" t 2 --reason "pii"
  assert_success
  assert_output --regexp '"leaf":"sha256:[0-9a-f]{64}"'
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_line "1 seal checked, 0 changed, 1 redacted, 0 expired, 0 deleted after sealing"
}

@test "forget: DeerFlow's database store reads a thread with redacted events and an expired run" {
  skip_on_pg "DeerFlow's reader here is its SQLite store's (Python's sqlite3)"
  # An old run (a year ago) and a current one, as DeerFlow's writer would leave them.
  python3 - "$WORK/old.jsonl" "$WORK/new.jsonl" <<'PY'
import json, sys
from datetime import datetime, timedelta, timezone
now = datetime.now(timezone.utc)
for path, when, word in ((sys.argv[1], now - timedelta(days=365), "old"), (sys.argv[2], now, "new")):
    with open(path, "w") as f:
        for i in range(3):
            f.write(json.dumps({"event_type": "llm.human.input", "metadata": {"caller": "lead_agent", "tags": ["a", word]},
                                "content": {"type": "human", "content": "%s secret-%d" % (word, i), "id": "h-%s-%d" % (word, i)},
                                "created_at": (when + timedelta(seconds=i)).isoformat()}) + "\n")
PY
  "$RUNFS" put -q "$STORE" t old "$WORK/old.jsonl"
  "$RUNFS" put -q "$STORE" t new "$WORK/new.jsonl"
  run "$RUNFS" redact "$STORE" t 4 --path content.content --path metadata.tags.1 --reason "user request"
  assert_success
  run "$RUNFS" redact "$STORE" t 5 --reason "secret pasted"
  assert_success
  run "$RUNFS" expire "$STORE" --older-than 30d
  assert_success
  run python3 "$BATS_TEST_DIRNAME/deerflow_read.py" "$STORE" t
  assert_success
  python3 - "$output" <<'PY'
import json, sys
lines = [json.loads(l) for l in sys.argv[1].splitlines()]
events, tail = lines[:-1], lines[-1]
assert [(e["run_id"], e["seq"]) for e in events] == [("new", 4), ("new", 5), ("new", 6)], events
a, b, c = events
assert a["content"] == {"type": "human", "content": "[redacted]", "id": "h-new-0"}, a
assert a["metadata"]["tags"] == ["a", "[redacted]"] and a["metadata"]["redaction"]["reason"] == "user request", a
assert b["content"] == "[redacted]" and b["metadata"]["redaction"]["reason"] == "secret pasted", b
assert c["content"]["content"] == "new secret-2", c
assert tail == {"messages": [4, 5, 6]}, tail
PY
}
