#!/usr/bin/env bats
# handles.bats — what an open file costs the daemon and what it gives back: a search/<query>
# handle holds its place in the answer, not the answer (issue 38), and a lookup-only view
# that ends (since/<seq>) has the exact size a copy by tar or Python reads up to.
load lib

T=threads/th
R=$T/runs/r1

setup() {
  runfs_setup
}
teardown() {
  runfs_teardown
}

# since_ref FILE SEQ: FILE's lines (an events.jsonl read through the mount, a byte log served
# apart from the views) whose seq is above SEQ.
since_ref() {
  python3 -c 'import json, sys
for line in open(sys.argv[1], "rb"):
    if json.loads(line)["seq"] > int(sys.argv[2]):
        sys.stdout.buffer.write(line)' "$1" "$2"
}

# copies_equal PATH REF: stat says REF's size, and tar (which reads st_size bytes) and
# shutil.copyfile copy PATH's bytes equal to REF.
copies_equal() {
  local path=$1 ref=$2 size got
  size=$(stat -c %s "$MNT/$path")
  [ "$size" -eq "$(wc -c < "$ref")" ] || { echo "$path: st_size $size, the rows hold $(wc -c < "$ref") bytes"; return 1; }
  rm -rf "$WORK/x" && mkdir -p "$WORK/x"
  tar -C "$MNT" -cf - "$path" | tar -C "$WORK/x" -xf - || return 1
  cmp "$ref" "$WORK/x/$path" || { echo "$path: tar copied $(wc -c < "$WORK/x/$path") bytes"; return 1; }
  python3 -c 'import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])' "$MNT/$path" "$WORK/py" || return 1
  cmp "$ref" "$WORK/py" || { echo "$path: shutil.copyfile copied $(wc -c < "$WORK/py") bytes"; return 1; }
  got=$(cat "$MNT/$path" | wc -c)
  [ "$got" -eq "$size" ] || { echo "$path: a read gives $got bytes, st_size $size"; return 1; }
}

@test "since/<seq> of a thread and a run has an exact size: tar and shutil.copyfile copy it whole, and it grows with an append" {
  mkdir -p "$MNT/$R" "$MNT/$T/runs/r2"
  { ev_start; ev_human "first question" 1; ev_ai "first answer" 1; } >> "$MNT/$R/events.jsonl"
  { ev_start; ev_human "other question" 2; } >> "$MNT/$T/runs/r2/events.jsonl"
  ev_ai "second answer" 2 >> "$MNT/$R/events.jsonl"
  local p n
  for p in "$T" "$R"; do
    for n in 0 2 4; do
      since_ref "$MNT/$p/events.jsonl" $n > "$WORK/ref"
      [ -s "$WORK/ref" ] || [ $n -eq 4 ] || fail "$p/since/$n: the reference is empty"
      run copies_equal "$p/since/$n" "$WORK/ref"
      assert_success
    done
  done
  # An append makes since/0 longer: its next stat says so (no size kept from before).
  local before
  before=$(stat -c %s "$MNT/$R/since/0")
  ev_human "third question" 3 >> "$MNT/$R/events.jsonl"
  since_ref "$MNT/$R/events.jsonl" 0 > "$WORK/ref"
  [ "$(wc -c < "$WORK/ref")" -gt "$before" ] || fail "the append added nothing to the reference"
  run copies_equal "$R/since/0" "$WORK/ref"
  assert_success
  since_ref "$MNT/$T/events.jsonl" 2 > "$WORK/ref"
  run copies_equal "$T/since/2" "$WORK/ref"
  assert_success
}
