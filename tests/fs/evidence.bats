#!/usr/bin/env bats
# evidence.bats — provable, signed seals (DESIGN "Receipts and seals"): roots and proofs
# against RFC 6962 written from its text in Python (merkle_ref.py, hashlib only), for every
# tree size 1-70, around the store's chunk edges and a large run; proofs that hold for their
# line and no other; seal.note checked by Python's cryptography and by the README's openssl
# recipe, refused after any byte changes; runfs verify --key; key file modes; a sandbox.
load lib

REF=$BATS_TEST_DIRNAME/merkle_ref.py

setup() {
  runfs_workdir
  for k in a b; do
    openssl genpkey -algorithm ed25519 -out "$WORK/$k.pem" 2>/dev/null
    chmod 600 "$WORK/$k.pem"
    openssl pkey -in "$WORK/$k.pem" -pubout -out "$WORK/$k.pub" 2>/dev/null
  done
}
teardown() { runfs_teardown; }

# events N: N valid event lines (each different).
events() {
  python3 -c '
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"event_type": "llm.human.input", "metadata": {"caller": "lead_agent"},
                      "content": {"type": "human", "content": "hello %d" % i, "id": "h-%d" % i}}))' "$1"
}

# sealed_run THREAD RUN N [seal options]: N events, sealed partial by runfs seal.
sealed_run() {
  local t=$1 r=$2 n=$3; shift 3
  events "$n" | "$RUNFS" put -q "$STORE" "$t" "$r" || return 1
  "$RUNFS" seal "$STORE" "$t" "$r" --partial "no terminal in this fixture" "$@" >/dev/null
}

# mount_sealed_run R N: through the mount, N events, a terminal and the exclusive create.
mount_sealed_run() {
  local d=$MNT/threads/t/runs/$1
  mkdir -p "$d"
  events "$2" >> "$d/events.jsonl"
  (set -C; ev_terminal success > "$d/once/run.terminal")
  (set -C; : > "$d/seal.json")
}

# The README's recipe for a note, with nothing but openssl, base64 and sha256sum (and the
# shell's text tools): the block after the line 'A note with openssl alone'.
readme_recipe() {
  sed -n '/^A note with openssl alone/,/^```$/p' "$BATS_TEST_DIRNAME/../../README.md" |
    sed -n '/^```sh$/,/^```$/p' | sed '1d;$d'
}

@test "evidence: roots and proofs of every tree size 1-70 and around the chunk edges are RFC 6962's" {
  local sizes=($(seq 1 70) 255 256 257 511 512 513 1025)
  events 1025 > "$WORK/events"
  runfs_mount "$STORE" "$MNT"
  for n in "${sizes[@]}"; do
    mkdir -p "$MNT/threads/t/runs/r$n"
    head -n "$n" "$WORK/events" >> "$MNT/threads/t/runs/r$n/events.jsonl"
    (set -C; echo '{"state":"partial","error":"no terminal in this fixture"}' > "$MNT/threads/t/runs/r$n/seal.json")
  done
  local dirs=()
  for n in "${sizes[@]}"; do dirs+=("$MNT/threads/t/runs/r$n"); done
  # Every proof of the 70-event run, some of each other run's (first, last, edges, random).
  run python3 "$REF" check "$MNT/threads/t/runs/r70"
  assert_success
  run python3 "$REF" check --sample 5 "${dirs[@]}"
  assert_success
  assert_output --partial "r1: 1 salted leaves, root and 1 proofs agree with RFC 6962"
  assert_output --partial "r1025: 1025 salted leaves"
}

@test "evidence: a large run's root and proofs across its chunks are RFC 6962's" {
  sealed_run t big 70000
  runfs_mount "$STORE" "$MNT"
  # The salts as the store keeps them (read by SQL, not through runfs): the root needs all.
  if on_pg; then
    store_sql "SELECT seq || ' ' || encode(salt, 'hex') FROM runfs_seal_salt WHERE run_id = 'big'"
  else
    store_sql "SELECT seq || ' ' || lower(hex(salt)) FROM runfs_seal_salt WHERE run_id = 'big'"
  fi > "$WORK/salts"
  [ "$(grep -c '' "$WORK/salts")" -eq 70000 ]
  run python3 "$REF" check --sample 40 --salts "$WORK/salts" "$MNT/threads/t/runs/big"
  assert_success
  assert_output --partial "70000 salted leaves, root and"
}

@test "evidence: each proof of a 70-event run verifies its own line only; outside the seal is ENOENT" {
  runfs_mount "$STORE" "$MNT"
  mount_sealed_run r 69
  local d=$MNT/threads/t/runs/r
  run python3 "$REF" check "$d"
  assert_success
  # runfs verify-proof, with no store: every covered seq's line with its proof holds.
  grep -c '' "$d/events.jsonl" | grep -qx 70
  # Each line in a file of its own, named by its seq (split by Python, not by runfs).
  mkdir "$WORK/lines"
  python3 -c '
import json, sys
for ln in open(sys.argv[1], "rb"):
    open("%s/%d" % (sys.argv[2], json.loads(ln)["seq"]), "wb").write(ln)' "$d/events.jsonl" "$WORK/lines"
  local seq
  for seq in $(ls "$WORK/lines" | sort -n); do
    run "$RUNFS" verify-proof "$d/seal.json" "$WORK/lines/$seq" "$d/proofs/$seq"
    assert_success
    # The proof of the next seq does not cover this line.
    if [ -e "$WORK/lines/$((seq + 1))" ]; then
      run "$RUNFS" verify-proof "$d/seal.json" "$WORK/lines/$seq" "$d/proofs/$((seq + 1))"
      assert_failure 1
      assert_output --partial "the proof is for seq $((seq + 1))"
    fi
  done
  # One changed byte of the line's content: the path no longer leads to the root.
  sed -n 5p "$d/events.jsonl" | sed 's/hello 4/hellO 4/' > "$WORK/line"
  run "$RUNFS" verify-proof "$d/seal.json" "$WORK/line" "$d/proofs/5"
  assert_failure 1
  assert_output --partial "does not lead from the line to the seal's root"
  # The right line at another index (the proof edited to claim leaf 5) does not hold either.
  sed -n 5p "$d/events.jsonl" > "$WORK/line"
  sed 's/"leaf_index":4/"leaf_index":5/' "$d/proofs/5" > "$WORK/proof"
  run "$RUNFS" verify-proof "$d/seal.json" "$WORK/line" "$WORK/proof"
  assert_failure 1
  # An event appended after the seal is not claimed: no proof, uncovered 1.
  events 1 >> "$d/events.jsonl"
  run cat "$d/proofs/71"
  assert_failure
  assert_output --partial "No such file"
  grep -q '"uncovered":1' "$d/seal.json"
  run cat "$d/proofs/0"
  assert_failure
  run ls "$d/proofs"
  assert_success
  assert_output ""
}

@test "evidence: seal.note exists only for a signed seal; Python's cryptography and the README's openssl recipe verify it, and refuse any changed byte" {
  runfs_mount "$STORE" "$MNT" --seal-key "$WORK/a.pem" --seal-key-name runfs.test/a
  mount_sealed_run signed 3
  runfs_mount "$STORE" "$WORK/plain"
  local p=$WORK/plain/threads/t/runs
  mkdir -p "$p/unsigned"
  events 2 >> "$p/unsigned/events.jsonl"
  (set -C; ev_terminal success > "$p/unsigned/once/run.terminal")
  (set -C; : > "$p/unsigned/seal.json")
  # Unsigned: no seal.note, listed or looked up; signed: there.
  run ls "$MNT/threads/t/runs/unsigned"
  refute_output --partial seal.note
  run cat "$MNT/threads/t/runs/unsigned/seal.note"
  assert_failure
  run ls "$MNT/threads/t/runs/signed"
  assert_output --partial seal.note
  local note=$MNT/threads/t/runs/signed/seal.note
  cp "$note" "$WORK/note"
  # The body is the seal's, line for line (written here from seal.json, not by runfs).
  python3 - "$MNT/threads/t/runs/signed/seal.json" "$WORK/note" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["leaves"] == "salted", s
body = ("runfs seal v2\nthread %s\nrun %s\nstate %s\nupper_seq %d\nevents %d\nterminal_seq %s\n"
        "digest %s\nroot %s\nleaves salted\nsealed_at %s\n") % (s["thread_id"], s["run_id"],
        s["state"], s["upper_seq"], s["event_count"], s["terminal_seq"], s["digest"], s["root"],
        s["sealed_at"])
note = open(sys.argv[2], "rb").read().decode()
assert note.startswith(body + "\n\u2014 runfs.test/a "), (note, body)
EOF
  # Python's cryptography: key hash (C2SP) and Ed25519 signature; then every changed byte.
  run python3 - "$WORK/a.pub" "$WORK/note" <<'EOF'
import base64, hashlib, sys
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
pub = serialization.load_pem_public_key(open(sys.argv[1], "rb").read())
raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
def ok(note):
    try:
        text = note.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if "\n\n" not in text or not text.endswith("\n"):
        return False
    body, sigs = text.split("\n\n", 1)
    for line in sigs.splitlines():
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "\u2014":
            return False
        try:
            blob = base64.b64decode(parts[2], validate=True)
        except Exception:
            return False
        if base64.b64encode(blob).decode() != parts[2]:
            return False  # one spelling only: padding bits are not free
        want = hashlib.sha256(parts[1].encode() + b"\n\x01" + raw).digest()[:4]
        if len(blob) != 68 or blob[:4] != want:
            continue
        try:
            pub.verify(blob[4:], (body + "\n").encode())
            return True
        except InvalidSignature:
            return False
    return False
note = open(sys.argv[2], "rb").read()
assert ok(note), "the note does not verify"
for i in range(len(note)):
    bad = bytearray(note); bad[i] ^= 0x01
    assert not ok(bytes(bad)), "verifies with byte %d changed" % i
print("verified; %d changed notes refused" % len(note))
EOF
  assert_success
  assert_output --partial "changed notes refused"
  # runfs verify-note: the note holds; every one-byte change is refused.
  run "$RUNFS" verify-note --key "$WORK/a.pub" "$WORK/note"
  assert_success
  run "$RUNFS" verify-note --key "$WORK/b.pub" "$WORK/note"
  assert_failure 1
  assert_output --partial "not signed by this key"
  mkdir "$WORK/flipped"
  python3 -c '
import sys
note = open(sys.argv[1], "rb").read()
for i in range(len(note)):
    b = bytearray(note); b[i] ^= 1
    open("%s/%d" % (sys.argv[2], i), "wb").write(b)' "$WORK/note" "$WORK/flipped"
  local f size held=0
  size=$(stat -c %s "$WORK/note")
  for f in "$WORK"/flipped/*; do
    if "$RUNFS" verify-note --key "$WORK/a.pub" "$f" >/dev/null 2>&1; then held=$((held + 1)); fi
  done
  assert_equal "$(ls "$WORK/flipped" | wc -l)" "$size"
  assert_equal "$held" 0
  # The README's recipe: holds for the note, fails for a changed body byte and signature byte.
  readme_recipe > "$WORK/recipe.sh"
  grep -q 'openssl pkeyutl -verify' "$WORK/recipe.sh"
  cd "$WORK"
  run env NOTE=note PUB=a.pub bash recipe.sh
  assert_success
  assert_output --partial "Signature Verified Successfully"
  local i
  for i in 20 100 $((size - 40)) $((size - 10)); do
    run env NOTE="flipped/$i" PUB=a.pub bash recipe.sh
    assert_failure
  done
  run env NOTE=note PUB=b.pub bash recipe.sh
  assert_failure
}

@test "evidence: runfs verify --key reports an unsigned seal, one by another key and a tampered row" {
  sealed_run t good 5 --seal-key "$WORK/a.pem"
  sealed_run t unsigned 5
  sealed_run t other 5 --seal-key "$WORK/b.pem" --seal-key-name other-host
  sealed_run t tampered 300 --seal-key "$WORK/a.pem"
  run "$RUNFS" verify "$STORE" --key "$WORK/a.pub"
  assert_failure 1
  assert_line "threads/t/runs/unsigned: unsigned: the seal has no note"
  assert_line --partial "threads/t/runs/other: seal.note: not signed by this key"
  refute_output --partial "runs/good"
  refute_output --partial "runs/tampered"
  assert_line "4 seals checked, 2 changed, 0 redacted, 0 expired, 0 deleted after sealing"
  # A row changed in place (as another writer could): verify names it, its proofs refuse.
  local seq
  seq=$(store_sql "SELECT min(seq) + 10 FROM run_events WHERE run_id = 'tampered'")
  store_sql "UPDATE run_events SET content = replace(content, 'hello', 'HELLO') WHERE run_id = 'tampered' AND seq = $seq"
  run "$RUNFS" verify "$STORE" --key "$WORK/a.pub"
  assert_failure 1
  assert_line --partial "threads/t/runs/tampered: digest changed"
  assert_line "4 seals checked, 3 changed, 0 redacted, 0 expired, 0 deleted after sealing"
  run "$RUNFS" verify "$STORE"
  assert_failure 1
  assert_line "4 seals checked, 1 changed, 0 redacted, 0 expired, 0 deleted after sealing"
  run "$RUNFS" cat "$STORE" "threads/t/runs/tampered/proofs/$seq"
  assert_failure
  assert_output --partial "changed since it was sealed"
  # A proof in another chunk of the run still holds.
  run "$RUNFS" cat "$STORE" "threads/t/runs/tampered/proofs/$((seq + 280))"
  assert_success
  # verify names the smallest ranges the kept tree can show: the chunk of 256 events that
  # holds each changed row (the run's first 256 seqs, then the rest up to the seal).
  local lo hi top
  lo=$(store_sql "SELECT min(seq) FROM run_events WHERE run_id = 'tampered'")
  hi=$(store_sql "SELECT seq FROM run_events WHERE run_id = 'tampered' ORDER BY seq LIMIT 1 OFFSET 255")
  top=$(store_sql "SELECT max(seq) FROM run_events WHERE run_id = 'tampered'")
  run "$RUNFS" verify "$STORE"
  assert_line --partial "threads/t/runs/tampered: digest changed in seqs $lo-$hi: sha256:"
  store_sql "UPDATE run_events SET content = replace(content, 'hello', 'HELLO') WHERE run_id = 'tampered' AND seq = $((seq + 280))"
  run "$RUNFS" verify "$STORE"
  assert_line --partial "threads/t/runs/tampered: digest changed in seqs $lo-$hi, $((hi + 1))-$top: sha256:"
  run "$RUNFS" verify "$STORE" --key "$WORK/nope.pub"
  assert_failure 2
}

@test "evidence: a kept root longer than runfs writes is EOVERFLOW, never shown cut" {
  sealed_run t long 5 --seal-key "$WORK/a.pem"
  # As another writer could: the kept row's root twice its length (142 bytes).
  store_sql "UPDATE runfs_seal_tree SET root = root || root WHERE run_id = 'long'"
  run "$RUNFS" cat "$STORE" threads/t/runs/long/seal.json
  assert_failure
  assert_output --partial "a runfs_seal_tree row is longer than runfs writes"
  refute_output --partial '"root"'
  run "$RUNFS" verify "$STORE" --key "$WORK/a.pub"
  assert_failure 2
  assert_output --partial "a runfs_seal_tree row is longer than runfs writes"
}

@test "evidence: a key file others may read is refused, as ssh does; a non-key is refused" {
  chmod 644 "$WORK/a.pem"
  events 2 | "$RUNFS" put -q "$STORE" t r
  run "$RUNFS" seal "$STORE" t r --partial x --seal-key "$WORK/a.pem"
  assert_failure 2
  assert_output --partial "permissions 0644 for '$WORK/a.pem' are too open"
  run "$RUNFS" mount --seal-key "$WORK/a.pem" "$STORE" "$MNT"
  assert_failure 2
  assert_output --partial "too open"
  run grep -c "$MNT" /proc/mounts
  assert_output 0
  chmod 600 "$WORK/a.pub"
  run "$RUNFS" seal "$STORE" t r --partial x --seal-key "$WORK/a.pub"
  assert_failure 2
  assert_output --partial "not an Ed25519 private key"
  # Nothing was sealed by the refused commands.
  run "$RUNFS" cat "$STORE" threads/t/runs/r/seal.json
  assert_failure
}

@test "evidence: a --thread sandbox reads its run's proofs and nothing of another thread's" {
  sealed_run t1 r 4
  sealed_run t2 r 4
  runfs_mount "$STORE" "$MNT" --thread t1
  local s1 s2
  s1=$(store_sql "SELECT min(seq) FROM run_events WHERE thread_id = 't1'")
  s2=$(store_sql "SELECT min(seq) FROM run_events WHERE thread_id = 't2'")
  run cat "$MNT/threads/t1/runs/r/proofs/$s1"
  assert_success
  assert_output --partial "\"seq\":$s1,\"leaf_index\":0,\"tree_size\":4"
  run cat "$MNT/threads/t2/runs/r/proofs/$s2"
  assert_failure
  assert_output --partial "No such file"
  run ls "$MNT/threads"
  assert_output t1
}

# The README's recipe for a leaf: the block after the line 'A leaf with openssl alone'.
readme_leaf_recipe() {
  sed -n '/^A leaf with openssl alone/,/^```$/p' "$BATS_TEST_DIRNAME/../../README.md" |
    sed -n '/^```sh$/,/^```$/p' | sed '1d;$d'
}

@test "evidence: salted leaves: each seal's salts are its own, the README's leaf recipe gives a one-event root, a proof without its salt is refused" {
  sealed_run t one 1
  sealed_run t two 3
  runfs_mount "$STORE" "$MNT"
  local d=$MNT/threads/t/runs/one
  grep -q '"leaves":"salted"' "$d/seal.json"
  grep -q '"salt":"[0-9a-f]\{32\}"' "$d/proofs/1"
  cp "$d/events.jsonl" "$WORK/line"
  cp "$d/proofs/1" "$WORK/proof"
  # A tree of one leaf: its root is the leaf, computed by the recipe with openssl alone.
  readme_leaf_recipe > "$WORK/leaf.sh"
  cd "$WORK"
  run env LINE=line PROOF=proof bash leaf.sh
  assert_success
  assert_output "$(sed 's/.*"root":"sha256:\([0-9a-f]*\)".*/\1/' "$d/seal.json")"
  # Without the salt the plain leaf is not the root: the salt is in the leaf.
  [ "$({ printf '\000'; cat line; } | openssl dgst -sha256 -r | cut -c1-64)" != "$output" ]
  # verify-proof takes the salt from the proof; one without it is refused, one with another
  # salt does not lead to the root.
  run "$RUNFS" verify-proof "$d/seal.json" line proof
  assert_success
  sed 's/,"salt":"[0-9a-f]*"//' proof > nosalt
  run "$RUNFS" verify-proof "$d/seal.json" line nosalt
  assert_failure 2
  assert_output --partial 'the proof has no "salt"'
  sed 's/"salt":"\(.\)/"salt":"\1\1/; s/"salt":"\([0-9a-f]\{32\}\)[0-9a-f]*"/"salt":"\1"/' proof > othersalt
  ! cmp -s proof othersalt
  run "$RUNFS" verify-proof "$d/seal.json" line othersalt
  assert_failure 1
  assert_output --partial "does not lead from the line to the seal's root"
  # Two seals of the same lines get different salts, so different roots.
  python3 "$REF" check "$MNT/threads/t/runs/two"
  [ "$(store_sql "SELECT count(DISTINCT salt) FROM runfs_seal_salt")" = 4 ]
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_output --partial "2 seals checked, 0 changed"
}

# A store sealed by an older runfs (RUNFS_OLD: a build of main, which makes plain seals) opens,
# is set up again by this one, and its seals keep verifying, proofs included.
@test "evidence: plain seals made before salts keep verifying, and new seals in the same store are salted" {
  [ -n "${RUNFS_OLD:-}" ] || skip "needs RUNFS_OLD, a runfs built from before salted leaves"
  events 5 | "$RUNFS_OLD" put -q "$STORE" t old
  "$RUNFS_OLD" seal "$STORE" t old --partial "made by the old runfs" > "$WORK/seal.json"
  ! grep -q '"leaves"' "$WORK/seal.json"
  run "$RUNFS" verify "$STORE"
  assert_success
  assert_output --partial "1 seal checked, 0 changed"
  sealed_run t new 5
  runfs_mount "$STORE" "$MNT"
  grep -q '"leaves":"plain"' "$MNT/threads/t/runs/old/seal.json"
  grep -q '"leaves":"salted"' "$MNT/threads/t/runs/new/seal.json"
  ! grep -q '"salt"' "$MNT/threads/t/runs/old/proofs/3"
  run python3 "$REF" check "$MNT/threads/t/runs/old" "$MNT/threads/t/runs/new"
  assert_success
  assert_output --partial "old: 5 plain leaves"
  assert_output --partial "new: 5 salted leaves"
  sed -n 3p "$MNT/threads/t/runs/old/events.jsonl" > "$WORK/line"
  run "$RUNFS" verify-proof "$MNT/threads/t/runs/old/seal.json" "$WORK/line" "$MNT/threads/t/runs/old/proofs/3"
  assert_success
  runfs_unmount "$MNT"
  store_sql "UPDATE run_events SET content = replace(content, 'hello 2', 'hellO 2') WHERE run_id = 'old'"
  run "$RUNFS" verify "$STORE"
  assert_failure 1
  assert_output --partial "threads/t/runs/old"
  assert_output --partial "2 seals checked, 1 changed"
}
