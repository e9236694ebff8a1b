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

# HOLD_SEARCH PID N FILE REF (python3): N handles of FILE opened, each having read its first
# 64 KiB as cat does; then all but three closed (the first, one in the middle, the last),
# which read on and must give REF's bytes whole. Done twice: the first round warms what the
# daemon makes once (its worker threads, their allocator arenas, its store connections'
# caches). Prints the daemon's anonymous memory (RssAnon, kB, which any uid reads in
# /proc/PID/status) in the second round before, with N/2 and with N handles open, and after
# they closed.
HOLD_SEARCH='import os, sys, time
pid, n, path, ref = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], open(sys.argv[4], "rb").read()
def anon():
    time.sleep(0.2)  # RSS is sampled by the kernel: let it settle
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
def round():
    fds, heads, seen = [], {}, [anon()]
    for i in range(n):
        fd = os.open(path, os.O_RDONLY)
        fds.append(fd)
        head = os.read(fd, 65536)
        if i in (0, n // 2, n - 1):
            heads[fd] = head
        if i + 1 in (n // 2, n):
            seen.append(anon())
    for fd in fds:
        if fd not in heads:
            os.close(fd)
    for fd, head in heads.items():
        data = head
        while True:
            b = os.read(fd, 131072)
            if not b:
                break
            data += b
        os.close(fd)
        if data != ref:
            sys.exit("a handle read %d bytes, the answer is %d" % (len(data), len(ref)))
    seen.append(anon())
    return seen
round()
print(*round())'

@test "memory: 10,000 open search handles of a 1 MB answer, held by a non-root uid, cost the daemon under 16 MiB; each still reads it whole; closing them gives the memory back" {
  local m=$WORK/mem n=10000 f=$WORK/lines.jsonl
  chmod 755 "$WORK"
  ulimit -n $((n + 100))
  runfs_mount "$STORE" "$m" -o allow_other
  # 250 matching events of about 4 KiB, and others that do not match.
  python3 -c 'import json
pad = "p" * 4096
for i in range(250):
    print(json.dumps({"event_type": "llm.error", "content": "needlework %d %s" % (i, pad)}))
    if i % 10 == 0:
        print(json.dumps({"event_type": "llm.error", "content": "haystack %d" % i}))' > "$f"
  mkdir -p "$m/$R"
  cat "$f" >> "$m/$R/events.jsonl"
  # The reference: the thread's lines that name the word, in seq order (events.jsonl, a log
  # served apart from search).
  grep -F needlework "$m/$T/events.jsonl" > "$WORK/ref"
  chmod 644 "$WORK/ref"
  [ "$(wc -l < "$WORK/ref")" -eq 250 ] || fail "the reference has $(wc -l < "$WORK/ref") lines"
  [ "$(wc -c < "$WORK/ref")" -gt 1000000 ] || fail "the answer is too small to tell"
  # runfs search and runfs cat of the same name agree with it.
  "$RUNFS" search "$STORE" needlework > "$WORK/cli"
  cmp "$WORK/ref" "$WORK/cli"
  "$RUNFS" cat "$STORE" search/needlework > "$WORK/cli"
  cmp "$WORK/ref" "$WORK/cli"
  # A first search makes the index and opens the daemon's store connections; a few at once
  # bring the daemon's worker threads (and their malloc arenas) to work, as the handles'
  # requests will: what the handles cost is measured from there.
  as "$UID_A" "cat '$m/search/needlework'" > "$WORK/first"
  cmp "$WORK/ref" "$WORK/first"
  as "$UID_A" "for i in 1 2 3 4 5 6; do cat '$m/search/needlework' > /dev/null & done; wait"
  local pid
  pid=$(pgrep -f "runfs mount.* $m\$" | head -1)
  run as "$UID_A" "python3 -c '$HOLD_SEARCH' $pid $n '$m/search/needlework' '$WORK/ref'"
  assert_success
  echo "# RssAnon kB before, with $((n / 2)) and $n handles, after they closed: $output" >&3
  local before half held after
  read -r before half held after <<< "$output"
  # A handle that held its answer would cost 10 GB; one that holds its place, a few MiB.
  [ $((held - before)) -lt 16384 ] || fail "$n search handles took $((held - before)) kB"
  [ $(((held - half) * 2)) -lt 16384 ] || fail "the second $((n / 2)) handles took $((held - half)) kB"
  # What the handles took is given back, not kept.
  [ $((after - before)) -lt 4096 ] || fail "$((after - before)) kB kept after the handles closed"
  runfs_unmount "$m"
}
