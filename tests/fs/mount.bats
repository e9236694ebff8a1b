#!/usr/bin/env bats
# mount.bats — the mount as DESIGN describes it (issue 3): layout and modes, appends and
# their atomicity, every row of the errno table that a mount can produce (each refusal
# changes nothing and is logged with its errno), singletons, concurrency, several mounts
# of one store, read-only mounts, deletion, sizes, tail -f, `runfs cat` and `runfs mount`
# errors. Every mount is a real FUSE mount, unmounted in teardown; every wait is bounded.
load lib

setup() {
  runfs_setup
  BG_PIDS=()
  # For `bash -c` commands under `run`.
  export -f ev_start ev_human ev_ai ev_error ev_terminal
  RUN=$MNT/threads/t1/runs/r1
  mkdir -p "$RUN"
}

teardown() {
  local p
  for p in "${BG_PIDS[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  runfs_teardown
}

# ---- helpers ----

errmsg() {
  case $1 in
    EINVAL) echo "Invalid argument" ;;
    EMSGSIZE) echo "Message too long" ;;
    EEXIST) echo "File exists" ;;
    EPERM) echo "Operation not permitted" ;;
    EROFS) echo "Read-only file system" ;;
    ENOENT) echo "No such file or directory" ;;
    *) echo "unknown errno name $1" >&2; return 1 ;;
  esac
}

rejects() { cat "${1:-$MNT}/.runfs/rejects.jsonl"; }

# refused ERRNO CMD...: CMD fails with ERRNO, the store is unchanged and the mount's
# .runfs/rejects.jsonl ends with a new line naming ERRNO. REJECTS_MNT picks the mount.
refused() {
  local name=$1; shift
  local mnt=${REJECTS_MNT:-$MNT} before log_before
  before=$(store_snapshot)
  log_before=$(rejects "$mnt")
  run "$@"
  assert_failure
  assert_output --partial "$(errmsg "$name")"
  assert_equal "$(store_snapshot)" "$before"
  local log_after
  log_after=$(rejects "$mnt")
  [ "$log_after" != "$log_before" ] || fail "no line added to .runfs/rejects.jsonl for: $*"
  [[ "$(tail -n 1 <<<"$log_after")" == *"\"errno\":\"$name\""* ]] ||
    fail "last reject is not $name: $(tail -n 1 <<<"$log_after")"
}

# refused_unlogged ERRNO CMD...: as refused, for refusals the kernel makes before the
# daemon sees a request (so no reject line can be written).
refused_unlogged() {
  local name=$1; shift
  local before
  before=$(store_snapshot)
  run "$@"
  assert_failure
  assert_output --partial "$(errmsg "$name")"
  assert_equal "$(store_snapshot)" "$before"
}

append() { printf '%s\n' "$2" >> "$1"; }

# count_lines FILE: number of lines (0 for an empty file).
count_lines() { wc -l < "$1"; }

# seqs FILE: check FILE's lines have strictly increasing seqs; print how many lines.
check_seqs() {
  python3 - "$1" <<'EOF'
import json, sys
seqs = [json.loads(l)["seq"] for l in open(sys.argv[1], encoding="utf-8")]
bad = [i for i in range(1, len(seqs)) if seqs[i] <= seqs[i - 1]]
if bad:
    sys.exit("seq not strictly increasing at line %d: %d then %d" % (bad[0] + 1, seqs[bad[0] - 1], seqs[bad[0]]))
print(len(seqs))
EOF
}

# ---- layout ----

@test "layout: root, thread and run directories with their modes" {
  run ls -A "$MNT"
  assert_success
  assert_output "$(printf '%s\n' .runfs README changes changes.jsonl contract.json expired.jsonl search threads)"
  run ls "$MNT/.runfs"
  assert_output "$(printf '%s\n' rejects.jsonl status.json)"
  run ls "$MNT/threads"
  assert_output "t1"
  run ls "$MNT/threads/t1"
  assert_output "$(printf '%s\n' ai-runs events.jsonl history.jsonl message-count \
    message-seqs messages.jsonl report.html runs search seq since stats.json transcript.md)"
  run ls "$MNT/threads/t1/runs"
  assert_output "r1"
  # last-visible-ai-seq, seal.json and seal.note exist only once there is something to show.
  run ls "$RUN"
  assert_output "$(printf '%s\n' diff events.jsonl messages.jsonl once otel otel.json proofs receipt.json \
    redactions.jsonl report.html search since stats.json tasks timeline timeline.svg types \
    workspace-changes.json)"
  ev_start >> "$RUN/events.jsonl"
  ev_ai >> "$RUN/events.jsonl"
  ev_terminal | (set -C; cat > "$RUN/once/run.terminal")
  run ls "$RUN"
  assert_line last-visible-ai-seq
  run ls "$RUN/types"
  assert_output "$(printf '%s\n' llm.ai.response.jsonl run.start.jsonl run.terminal.jsonl)"
  run ls "$RUN/once"
  assert_output "run.terminal"

  # Writable history 0644, views 0444.
  local f
  for f in "$RUN/events.jsonl" "$RUN/once/run.terminal"; do
    assert_equal "$(stat -c %A "$f")" -rw-r--r--
  done
  for f in README contract.json .runfs/status.json .runfs/rejects.jsonl threads/t1/events.jsonl \
    threads/t1/messages.jsonl threads/t1/history.jsonl threads/t1/seq threads/t1/message-count \
    threads/t1/runs/r1/messages.jsonl threads/t1/runs/r1/receipt.json \
    threads/t1/runs/r1/workspace-changes.json threads/t1/runs/r1/last-visible-ai-seq \
    threads/t1/runs/r1/types/run.start.jsonl; do
    assert_equal "$(stat -c %A "$MNT/$f")" -r--r--r--
  done
  # Directories a writer creates in 0755 (threads/, runs/, a run for seal.json, once/), the
  # others 0555: without --allow-delete nothing in them can be removed.
  for f in threads threads/t1/runs "$RUN" "$RUN/once"; do
    [[ $f == /* ]] || f=$MNT/$f
    assert_equal "$(stat -c %A "$f")" drwxr-xr-x
  done
  for f in . .runfs threads/t1 threads/t1/since "$RUN/types" "$RUN/tasks" "$RUN/since" search \
    "$RUN/search"; do
    [[ $f == /* ]] || f=$MNT/$f
    assert_equal "$(stat -c %A "$f")" dr-xr-xr-x
  done
}

@test "layout: -o ro shows every file 0444 and no writable directory" {
  ev_start >> "$RUN/events.jsonl"
  ev_terminal | (set -C; cat > "$RUN/once/run.terminal")
  local ro=$WORK/ro
  runfs_mount "$STORE" "$ro" -o ro
  local f
  for f in README threads/t1/events.jsonl threads/t1/runs/r1/events.jsonl \
    threads/t1/runs/r1/once/run.terminal threads/t1/runs/r1/receipt.json; do
    assert_equal "$(stat -c %A "$ro/$f")" -r--r--r--
  done
  for f in . threads threads/t1 threads/t1/runs/r1 threads/t1/runs/r1/once; do
    assert_equal "$(stat -c %A "$ro/$f")" dr-xr-xr-x
  done
  cmp "$ro/threads/t1/events.jsonl" "$MNT/threads/t1/events.jsonl"
  run cat "$ro/.runfs/status.json"
  assert_output --partial '"read_only":true'
}

# ---- appending ----

@test "append then cat: the stored lines come back in seq order in every log" {
  ev_start >> "$RUN/events.jsonl"
  ev_human hello 1 >> "$RUN/events.jsonl"
  ev_ai hi 1 >> "$RUN/events.jsonl"
  run cat "$RUN/events.jsonl"
  assert_success
  assert_equal "${#lines[@]}" 3
  assert_line -n 0 --regexp '^\{"thread_id":"t1","run_id":"r1","seq":1,"event_type":"run.start","category":"trace","content":\{"chain":"lead_agent"\},"metadata":\{"caller":"lead_agent"\},"created_at":"[0-9-]{10}T[0-9:]{8}\.[0-9]{6}\+00:00"\}$'
  assert_line -n 1 --partial '"seq":2,"event_type":"llm.human.input","category":"message"'
  assert_line -n 2 --partial '"seq":3,"event_type":"llm.ai.response","category":"message"'
  cmp "$RUN/events.jsonl" "$MNT/threads/t1/events.jsonl"
  assert_equal "$(count_lines "$RUN/messages.jsonl")" 2
  assert_equal "$(cat "$MNT/threads/t1/seq")" 3
  assert_equal "$(cat "$MNT/threads/t1/message-count")" 2
}

# read_growing LOG OUT MODE: read LOG to OUT while appending 10 lines through a handle held
# open (so the log is live: read from the daemon, not cached). MODE "1000": reads of 1000
# bytes; "lines": each read of up to 1000 bytes is read again from its offset up to its last
# newline, so the next read starts exactly where the previous one ended.
read_growing() {
  python3 - "$@" <<'PY'
import os, sys
w = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
r = os.open(sys.argv[1], os.O_RDONLY)
got, n = b"", 0
while True:
    chunk = os.pread(r, 1000, len(got))
    if not chunk:
        break
    if sys.argv[3] == "lines" and chunk.rfind(b"\n") >= 0:
        again = os.pread(r, chunk.rfind(b"\n") + 1, len(got))
        assert chunk.startswith(again), (len(got), again[:80], chunk[:80])
        chunk = again
    got += chunk
    n += 1
    if n % 5 == 0 and n <= 50:
        os.write(w, b'{"event_type":"llm.error","content":"more %d"}\n' % n)
os.close(w)
open(sys.argv[2], "wb").write(got)
PY
}

@test "a growing log read 1000 bytes at a time, or in reads that end on line boundaries, while lines are appended equals its cat" {
  for i in $(seq 1 300); do ev_human "line $i $(printf 'x%.0s' $(seq 1 $((i % 37))))" "$i"; done > "$WORK/in.jsonl"
  local mode log
  for mode in 1000 lines; do
    log=$MNT/threads/t-$mode/runs/r1/events.jsonl
    mkdir -p "${log%/*}"
    cat "$WORK/in.jsonl" >> "$log"
    run read_growing "$log" "$WORK/got" "$mode"
    assert_success
    cat "$log" > "$WORK/cat"
    assert_equal "$(count_lines "$WORK/cat")" 310
    cmp "$WORK/got" "$WORK/cat"
  done
}

@test "one write of several lines commits them all or none" {
  { ev_error a; ev_error b; } >> "$RUN/events.jsonl"
  assert_equal "$(count_lines "$RUN/events.jsonl")" 2
  # cat writes a small file with one write().
  { ev_error c; echo '{oops'; ev_error d; } > "$WORK/batch.jsonl"
  refused EINVAL bash -c 'cat "$1" >> "$2"' _ "$WORK/batch.jsonl" "$RUN/events.jsonl"
  assert_equal "$(count_lines "$RUN/events.jsonl")" 2
  run tail -n 1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial '"reason":"line 2: '
}

@test "a run's log asks for 1 MiB writes: cat of a 450 kB file is one transaction" {
  # st_blksize is the mount's largest write request, so cat writes up to 1 MiB at once
  # (with 4 kB it would write 128 kB pieces, each committed on its own).
  assert_equal "$(stat -c %o "$RUN/events.jsonl")" 1048576
  local i
  for i in $(seq 3000); do ev_human "message $i of a file that cat writes in one piece" "$i"; done \
    > "$WORK/big.jsonl"
  echo '{oops' >> "$WORK/big.jsonl"
  local size; size=$(stat -c %s "$WORK/big.jsonl")
  [ "$size" -gt 300000 ] && [ "$size" -lt 1048576 ]
  refused EINVAL bash -c 'cat "$1" >> "$2"' _ "$WORK/big.jsonl" "$RUN/events.jsonl"
  assert_equal "$(count_lines "$RUN/events.jsonl")" 0
  run tail -n 1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial '"reason":"line 3001: '
}

@test "partial lines written 7 bytes at a time are joined at their newlines" {
  { ev_start; ev_human "a longer message than seven bytes" 1; ev_error x; } > "$WORK/in.jsonl"
  run dd if="$WORK/in.jsonl" of="$RUN/events.jsonl" bs=7 oflag=append conv=notrunc status=none
  assert_success
  assert_equal "$(count_lines "$RUN/events.jsonl")" 3
  run cat "$RUN/events.jsonl"
  assert_line -n 1 --partial '"seq":2,"event_type":"llm.human.input","category":"message","content":{"type":"human","content":"a longer message than seven bytes","id":"h-1"}'
  assert_line -n 2 --partial '"seq":3,"event_type":"llm.error","category":"trace","content":"x"'
}

@test "a last line without its newline commits at close" {
  printf '{"event_type":"llm.error","content":"no newline"}' >> "$RUN/events.jsonl"
  run cat "$RUN/events.jsonl"
  assert_output --partial '"seq":1,"event_type":"llm.error","category":"trace","content":"no newline"'
  # Also after complete lines in the same handle.
  printf '{"event_type":"llm.error","content":"a"}\n{"event_type":"llm.error","content":"b"}' \
    >> "$RUN/events.jsonl"
  assert_equal "$(count_lines "$RUN/events.jsonl")" 3
}

@test "a bad leftover at close fails the close with EINVAL and stores nothing" {
  ev_start >> "$RUN/events.jsonl"
  local before log_before
  before=$(store_snapshot)
  log_before=$(rejects)
  run python3 - "$RUN/events.jsonl" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b'{"event_type":"llm.error","content":"cut')
try:
    os.close(fd)
except OSError as e:
    print("close:", os.strerror(e.errno))
    sys.exit(0)
sys.exit("close succeeded")
EOF
  assert_success
  assert_output "close: Invalid argument"
  assert_equal "$(store_snapshot)" "$before"
  [ "$(rejects)" != "$log_before" ]
  run tail -n 1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial '"errno":"EINVAL"'
}

@test "reading back an O_RDWR handle returns the records it stored, with their seq" {
  ev_start >> "$RUN/events.jsonl"
  run python3 - "$RUN/events.jsonl" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_APPEND)
os.write(fd, b'{"event_type":"llm.error","content":"a"}\n{"event_type":"llm.error","content":"b"}\n')
os.lseek(fd, 0, os.SEEK_SET)
data = b""
while True:
    chunk = os.read(fd, 65536)
    if not chunk:
        break
    data += chunk
os.close(fd)
sys.stdout.write(data.decode())
EOF
  assert_success
  assert_equal "${#lines[@]}" 2
  assert_equal "${lines[0]}" "$(sed -n 2p "$RUN/events.jsonl")"
  assert_equal "${lines[1]}" "$(sed -n 3p "$RUN/events.jsonl")"
  assert_line -n 0 --partial '"seq":2,"event_type":"llm.error","category":"trace","content":"a"'
  assert_line -n 1 --partial '"seq":3,"event_type":"llm.error","category":"trace","content":"b"'
}

# ---- the errno table ----

@test "EINVAL: malformed, schema, id mismatch, seq or user_id given, unknown field" {
  ev_start >> "$RUN/events.jsonl"
  local E=$RUN/events.jsonl line
  for line in \
    '{"event_type":"llm.error","content":' \
    '[1,2]' \
    '{"event_type":"run.start","content":{},"metadata":{"caller":"lead_agent"}}' \
    '{"content":"no event type"}' \
    '{"event_type":"llm.error","content":"x","thread_id":"t2"}' \
    '{"event_type":"llm.error","content":"x","run_id":"r2"}' \
    '{"event_type":"llm.error","content":"x","seq":7}' \
    '{"event_type":"llm.error","content":"x","user_id":"mallory"}' \
    '{"event_type":"llm.error","content":"x","contnet":"typo"}' \
    '{"event_type":"no.such.type","content":"x"}' \
    '{"event_type":"run.terminal","content":{"status":"success"},"metadata":{"protocol_version":1,"recovered":false}}'; do
    refused EINVAL bash -c 'printf "%s\n" "$1" >> "$2"' _ "$line" "$E"
  done
  # Ids equal to the path are fine.
  append "$E" '{"event_type":"llm.error","content":"x","thread_id":"t1","run_id":"r1"}'
  assert_equal "$(count_lines "$E")" 2
}

@test "EINVAL: a bad id in a path, through mkdir and through ls" {
  refused EINVAL mkdir "$MNT/threads/bad id"
  refused EINVAL mkdir -p "$MNT/threads/t1/runs/r.1"
  refused EINVAL mkdir "$MNT/threads/$(printf 'x%.0s' {1..65})"
  refused EINVAL ls "$MNT/threads/bad.id"
  refused EINVAL ls "$MNT/threads/t1/runs/bad:id"
  run tail -n 1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial '"path":"threads/t1/runs/bad:id","errno":"EINVAL","reason":"ids are'
  refused EINVAL bash -c "ev_error >> '$MNT/threads/bad.id/runs/r1/events.jsonl'"
  run ls "$MNT/threads"
  assert_output "t1"
}

@test "EMSGSIZE: a line over 1 MiB is refused whole, later lines are accepted" {
  ev_start >> "$RUN/events.jsonl"
  local big=$WORK/big.jsonl
  printf '{"event_type":"llm.error","content":"%s"}\n' "$(head -c 1100000 /dev/zero | tr '\0' z)" \
    > "$big"
  # A shell's one write() (the kernel cuts it in pieces), and cat's many.
  refused EMSGSIZE bash -c 'line=$(<"$1"); printf "%s\n" "$line" >> "$2"' _ "$big" "$RUN/events.jsonl"
  refused EMSGSIZE bash -c 'cat "$1" >> "$2"' _ "$big" "$RUN/events.jsonl"
  # A good line after it in the same write(): refused with it (the write fails at the
  # kernel's piece that holds the long line's end; the writer's retry fails too).
  { cat "$big"; ev_error after; } > "$WORK/mixed.jsonl"
  refused EMSGSIZE python3 -c '
import os, sys
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND)
data = open(sys.argv[1], "rb").read()
while data:
    data = data[os.write(fd, data):]' "$WORK/mixed.jsonl" "$RUN/events.jsonl"
  # One handle: the write that crosses the limit fails, the rest of the long line is
  # dropped, and the lines after it are stored.
  run python3 - "$RUN/events.jsonl" <<'EOF'
import os, sys
def write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
write_all(fd, b'{"event_type":"llm.error","content":"' + b"y" * 700000)
try:
    write_all(fd, b"y" * 700000)
    sys.exit("no EMSGSIZE")
except OSError as e:
    print("write:", os.strerror(e.errno))
write_all(fd, b'yyy"}\n{"event_type":"llm.error","content":"after"}\n')
os.close(fd)
EOF
  assert_success
  assert_output "write: Message too long"
  assert_equal "$(count_lines "$RUN/events.jsonl")" 2
  run tail -n 1 "$RUN/events.jsonl"
  assert_output --partial '"seq":2,"event_type":"llm.error","category":"trace","content":"after"'
  run tail -n 1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial '"errno":"EMSGSIZE"'
}

@test "EEXIST: exclusive create of an existing singleton, conflicting plain >" {
  ev_terminal | (set -C; cat > "$RUN/once/run.terminal")
  # The kernel sees the file and refuses O_EXCL itself: nothing reaches the daemon to log.
  refused_unlogged EEXIST python3 -c '
import os, sys
os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL)' "$RUN/once/run.terminal"
  refused EEXIST bash -c "ev_terminal error > '$RUN/once/run.terminal'"
  # While the first writer still holds the reservation, a second exclusive create fails.
  run python3 - "$RUN/once/run.start" <<'EOF'
import os, sys
a = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL)
try:
    os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    sys.exit("second create succeeded")
except OSError as e:
    print("second:", os.strerror(e.errno))
os.write(a, b'{"content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"}}\n')
os.close(a)
EOF
  assert_success
  assert_output "second: File exists"
  run cat "$RUN/once/run.start"
  assert_output --partial '"seq":2,"event_type":"run.start"'
  run tail -n 1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial '"path":"threads/t1/runs/r1/once/run.start","errno":"EEXIST"'
}

@test "singletons: plain > of the same event confirms it, a different one is EEXIST" {
  ev_terminal | (set -C; cat > "$RUN/once/run.terminal")
  local stored
  stored=$(cat "$RUN/once/run.terminal")
  local before
  before=$(store_snapshot)
  # Same category, content and required metadata: accepted, nothing new stored.
  run bash -c "ev_terminal > '$RUN/once/run.terminal'"
  assert_success
  printf '{"event_type":"run.terminal","content":{"status":"success"},"metadata":{"protocol_version":1,"recovered":true,"note":"x"}}\n' \
    > "$RUN/once/run.terminal"
  assert_equal "$(store_snapshot)" "$before"
  assert_equal "$(cat "$RUN/once/run.terminal")" "$stored"
  # Different content or event_type: refused.
  refused EEXIST bash -c "ev_terminal interrupted > '$RUN/once/run.terminal'"
  refused EINVAL bash -c "printf '%s\n' '{\"event_type\":\"run.start\",\"content\":{\"chain\":\"x\"}}' > '$RUN/once/run.terminal'"
  assert_equal "$(cat "$RUN/once/run.terminal")" "$stored"
}

@test "two concurrent exclusive creates of once/run.terminal: exactly one wins" {
  local r
  for r in c1 c2 c3; do
    mkdir "$MNT/threads/t1/runs/$r"
    run timeout 20 python3 - "$MNT/threads/t1/runs/$r/once/run.terminal" <<'EOF'
import os, sys, time, multiprocessing as mp
path = sys.argv[1]
def create(i, start, q):
    start.wait()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        os.write(fd, b'{"content":{"status":"%s"},"metadata":{"protocol_version":1,"recovered":false}}\n'
                 % (b"success" if i == 0 else b"error"))
        os.close(fd)
        q.put("won")
    except OSError as e:
        q.put(os.strerror(e.errno))
start, q = mp.Barrier(2), mp.Queue()
ps = [mp.Process(target=create, args=(i, start, q)) for i in range(2)]
for p in ps: p.start()
for p in ps: p.join()
print(" ".join(sorted(q.get() for _ in ps)))
EOF
    assert_success
    assert_output "File exists won"
    assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE run_id='$r' AND event_type='run.terminal'")" 1
  done
}

@test "EPERM: overwrite, truncate, rm, mv and rm -r of history without --allow-delete" {
  ev_start >> "$RUN/events.jsonl"
  ev_human >> "$RUN/events.jsonl"
  refused EPERM bash -c "ev_error > '$RUN/events.jsonl'"
  refused EPERM truncate -s 0 "$RUN/events.jsonl"
  refused EPERM truncate -s 10 "$MNT/threads/t1/events.jsonl"
  refused EPERM rm "$RUN/events.jsonl"
  refused EPERM rm -f "$MNT/threads/t1/events.jsonl"
  refused EPERM mv "$RUN/events.jsonl" "$RUN/old.jsonl"
  refused EPERM mv "$RUN" "$MNT/threads/t1/runs/r9"
  refused EPERM rm -r "$RUN"
  refused EPERM rm -rf "$MNT/threads/t1"
  refused EPERM rmdir "$RUN"
  refused EPERM bash -c "ev_error >> '$RUN/messages.jsonl'"
  refused EPERM bash -c "echo x > '$MNT/threads/t1/runs/r1/newfile'"
  assert_equal "$(count_lines "$RUN/events.jsonl")" 2
  run ls "$MNT/threads/t1/runs"
  assert_output "r1"
}

@test "EROFS: appends, mkdir and creates on a -o ro mount (the kernel refuses them)" {
  ev_start >> "$RUN/events.jsonl"
  local ro=$WORK/ro
  runfs_mount "$STORE" "$ro" -o ro
  # A read-only mount is read-only for the kernel: findmnt and /proc/mounts say so, and the
  # kernel refuses writes before they reach the daemon (so they leave no rejects line).
  grep -q "^runfs:$STORE $ro fuse.runfs ro," /proc/mounts || fail "$(grep " $ro " /proc/mounts)"
  assert_equal "$(findmnt -no OPTIONS "$ro" | cut -d, -f1)" ro
  local R=$ro/threads/t1/runs/r1 log_before
  log_before=$(rejects "$ro")
  refused_unlogged EROFS bash -c "ev_error >> '$R/events.jsonl'"
  refused_unlogged EROFS mkdir "$ro/threads/t2"
  refused_unlogged EROFS mkdir "$ro/threads/t1/runs/r2"
  refused_unlogged EROFS bash -c "set -C; ev_terminal > '$R/once/run.terminal'"
  refused_unlogged EROFS python3 -c 'import os, sys; os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL)' \
    "$R/seal.json"
  refused_unlogged EROFS truncate -s 0 "$R/events.jsonl"
  refused_unlogged EROFS rm "$R/events.jsonl"
  refused_unlogged EROFS touch "$R/events.jsonl"
  assert_equal "$(rejects "$ro")" "$log_before"
  # Reading is as usual, and the read-write mount still writes.
  cmp "$R/events.jsonl" "$RUN/events.jsonl"
  ev_error >> "$RUN/events.jsonl"
  assert_equal "$(count_lines "$R/events.jsonl")" 2
}

@test "ENOENT: with --user, another owner's thread does not exist" {
  local alice=$WORK/alice bob=$WORK/bob
  runfs_mount "$STORE" "$alice" --user alice
  runfs_mount "$STORE" "$bob" --user bob
  mkdir -p "$alice/threads/ta/runs/r1"
  ev_start >> "$alice/threads/ta/runs/r1/events.jsonl"
  mkdir -p "$bob/threads/tb/runs/r1"
  ev_start >> "$bob/threads/tb/runs/r1/events.jsonl"
  run ls "$bob/threads"
  assert_output "tb"
  run ls "$alice/threads"
  assert_output "ta"
  run cat "$alice/threads/ta/runs/r1/events.jsonl"
  assert_output --partial '"seq":1,"event_type":"run.start","category":"trace"'
  assert_output --partial '"user_id":"alice"'
  # Lookups answer ENOENT: the kernel never gets as far as a write to log.
  refused_unlogged ENOENT ls "$bob/threads/ta"
  refused_unlogged ENOENT cat "$bob/threads/ta/events.jsonl"
  refused_unlogged ENOENT cat "$bob/threads/ta/runs/r1/receipt.json"
  refused_unlogged ENOENT bash -c "ev_error >> '$bob/threads/ta/runs/r1/events.jsonl'"
  refused_unlogged ENOENT bash -c "set -C; ev_terminal > '$bob/threads/ta/runs/r1/once/run.terminal'"
  # The unrestricted mount sees both, each row with its owner.
  run ls "$MNT/threads"
  assert_output "$(printf '%s\n' t1 ta tb)"
  run cat "$MNT/threads/ta/events.jsonl"
  assert_output --partial '"user_id":"alice"'
}

@test "--user: a thread written by two owners shows each owner its own rows" {
  local alice=$WORK/alice bob=$WORK/bob
  runfs_mount "$STORE" "$alice" --user alice
  runfs_mount "$STORE" "$bob" --user bob
  mkdir -p "$alice/threads/tm/runs/r1"
  ev_error alice1 >> "$alice/threads/tm/runs/r1/events.jsonl"
  # A thread holding none of bob's rows is taken for him...
  run mkdir -p "$bob/threads/tm/runs/r1"
  assert_failure
  assert_output --partial "Permission denied"
  # ...but rows are owned one by one, as in DeerFlow, whose gateway may write bob's row into
  # the same thread; alice's next append indexes it.
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, \
    content, event_metadata, seq, created_at) VALUES ('tm', 'r1', 'bob', 'llm.error', 'trace', \
    'bob1', '{}', 2, '2026-01-02 03:04:05.000000')"
  ev_error alice2 >> "$alice/threads/tm/runs/r1/events.jsonl"
  local f
  for f in threads/tm/events.jsonl threads/tm/runs/r1/events.jsonl; do
    run cat "$alice/$f"
    assert_equal "${#lines[@]}" 2
    assert_line -n 0 --partial '"seq":1,"event_type":"llm.error","category":"trace","content":"alice1"'
    assert_line -n 1 --partial '"seq":3,"event_type":"llm.error","category":"trace","content":"alice2"'
    refute_output --partial bob1
    run cat "$bob/$f"
    assert_equal "${#lines[@]}" 1
    assert_line -n 0 --partial '"seq":2,"event_type":"llm.error","category":"trace","content":"bob1"'
    assert_equal "$(count_lines "$MNT/$f")" 3
  done
}

# ---- concurrency and several mounts ----

@test "4 processes x 1000 appends into one thread: none lost, seq unique and increasing" {
  mkdir "$MNT/threads/t1/runs/r2"
  local i
  for i in 1 2 3 4; do
    (
      exec 3>>"$MNT/threads/t1/runs/r$(( (i + 1) / 2 ))/events.jsonl"
      for n in $(seq 1000); do
        printf '{"event_type":"llm.error","content":"p%s-%s"}\n' "$i" "$n" >&3 || exit 1
      done
    ) &
    BG_PIDS+=($!)
  done
  for i in "${BG_PIDS[@]}"; do
    wait "$i"
  done
  BG_PIDS=()
  run check_seqs "$MNT/threads/t1/events.jsonl"
  assert_success
  assert_output 4000
  assert_equal "$(check_seqs "$RUN/events.jsonl")" 2000
  assert_equal "$(check_seqs "$MNT/threads/t1/runs/r2/events.jsonl")" 2000
  assert_equal "$(store_sql "SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM run_events WHERE thread_id='t1'")" "4000|4000|1|4000"
  # Each writer's lines are stored in the order it wrote them.
  run python3 - "$MNT/threads/t1/events.jsonl" <<'EOF'
import json, sys
last = {}
for l in open(sys.argv[1]):
    p, n = json.loads(l)["content"][1:].split("-")
    assert int(n) == last.get(p, 0) + 1, (p, n, last.get(p))
    last[p] = int(n)
print(sorted(last.items()))
EOF
  assert_success
  assert_output "[('1', 1000), ('2', 1000), ('3', 1000), ('4', 1000)]"
}

@test "two mounts of one store write at once: every event stored once, same bytes on both" {
  local m2=$WORK/m2
  runfs_mount "$STORE" "$m2"
  local i mnt
  for i in 1 2 3 4; do
    if [ "$i" -le 2 ]; then mnt=$MNT; else mnt=$m2; fi
    (
      exec 3>>"$mnt/threads/t1/runs/r1/events.jsonl"
      for n in $(seq 300); do
        printf '{"event_type":"llm.error","content":"m%s-%s"}\n' "$i" "$n" >&3 || exit 1
      done
    ) &
    BG_PIDS+=($!)
  done
  for i in "${BG_PIDS[@]}"; do
    wait "$i"
  done
  BG_PIDS=()
  assert_equal "$(check_seqs "$RUN/events.jsonl")" 1200
  assert_equal "$(store_sql "SELECT count(*), count(DISTINCT seq), max(seq) FROM run_events")" "1200|1200|1200"
  cmp "$RUN/events.jsonl" "$m2/threads/t1/runs/r1/events.jsonl"
  cmp "$MNT/threads/t1/events.jsonl" "$m2/threads/t1/events.jsonl"
}

# ---- deletion ----

@test "--allow-delete: rm -r of a run deletes it and the thread seq never goes back" {
  local d=$WORK/del
  runfs_mount "$STORE" "$d" --allow-delete
  mkdir -p "$d/threads/t1/runs/r2"
  ev_start >> "$d/threads/t1/runs/r1/events.jsonl"
  ev_start >> "$d/threads/t1/runs/r2/events.jsonl"
  ev_error >> "$d/threads/t1/runs/r2/events.jsonl"
  assert_equal "$(cat "$d/threads/t1/seq")" 3
  run rm -r "$d/threads/t1/runs/r2"
  assert_success
  run ls "$d/threads/t1/runs"
  assert_output "r1"
  run ls "$d/threads/t1/runs/r2"
  assert_failure
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE run_id='r2'")" 0
  assert_equal "$(cat "$d/threads/t1/seq")" 3
  assert_equal "$(count_lines "$d/threads/t1/events.jsonl")" 1
  # The next event continues after the high-water mark, also in a re-made run r2.
  mkdir "$d/threads/t1/runs/r2"
  ev_error >> "$d/threads/t1/runs/r2/events.jsonl"
  run cat "$d/threads/t1/runs/r2/events.jsonl"
  assert_output --partial '"seq":4,'
  # The mount without --allow-delete sees the same.
  assert_equal "$(cat "$MNT/threads/t1/seq")" 4
}

@test "--allow-delete: rm -r of a thread deletes it; made again, it starts at seq 1" {
  local d=$WORK/del
  runfs_mount "$STORE" "$d" --allow-delete
  mkdir -p "$d/threads/t2/runs/r1"
  ev_start >> "$d/threads/t1/runs/r1/events.jsonl"
  ev_start >> "$d/threads/t2/runs/r1/events.jsonl"
  ev_error >> "$d/threads/t2/runs/r1/events.jsonl"
  run rm -r "$d/threads/t2"
  assert_success
  run ls "$d/threads"
  assert_output "t1"
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id='t2'")" 0
  assert_equal "$(count_lines "$d/threads/t1/events.jsonl")" 1
  mkdir -p "$d/threads/t2/runs/r1"
  ev_error >> "$d/threads/t2/runs/r1/events.jsonl"
  run cat "$d/threads/t2/events.jsonl"
  assert_output --partial '"seq":1,'
}

@test "without --allow-delete, rm -r refuses with EPERM and deletes nothing" {
  ev_start >> "$RUN/events.jsonl"
  local d=$WORK/del
  runfs_mount "$STORE" "$d" --allow-delete
  refused EPERM rm -r "$MNT/threads/t1/runs/r1"
  refused EPERM rm -rf "$MNT/threads/t1"
  run ls "$MNT/threads/t1/runs"
  assert_output "r1"
  # Files of a run are not deleted one by one, even with --allow-delete.
  run rm "$d/threads/t1/runs/r1/events.jsonl"
  assert_equal "$(count_lines "$RUN/events.jsonl")" 1
}

# ---- sizes and live reads ----

@test "stat size equals the bytes read right after every append, from any writer" {
  local m2=$WORK/m2 n
  runfs_mount "$STORE" "$m2"
  # stat first, then read: the size must be right before anything was read.
  same_size() {
    local f
    for f in "$RUN/events.jsonl" "$MNT/threads/t1/events.jsonl" \
      "$m2/threads/t1/runs/r1/events.jsonl" "$m2/threads/t1/events.jsonl"; do
      assert_equal "$(stat -c %s "$f")" "$(cat "$f" | wc -c)"
    done
  }
  same_size
  for n in 1 2 3; do
    ev_human "message $n" "$n" >> "$RUN/events.jsonl"
    same_size
    # Another process, through the store directly.
    run "$RUNFS" put "$STORE" t1 r1 <<<"$(ev_error "put $n")"
    assert_success
    same_size
    # Another mount.
    ev_error "m2 $n" >> "$m2/threads/t1/runs/r1/events.jsonl"
    same_size
  done
  assert_equal "$(count_lines "$RUN/events.jsonl")" 9
  cmp "$RUN/events.jsonl" "$m2/threads/t1/runs/r1/events.jsonl"
  assert_equal "$(tail -c 1 "$RUN/events.jsonl" | od -An -c | tr -d ' ')" '\n'
}

@test "tail -f sees a new line within 3 seconds" {
  ev_start >> "$RUN/events.jsonl"
  local m2=$WORK/m2
  runfs_mount "$STORE" "$m2"
  tail -f "$RUN/events.jsonl" > "$WORK/tail.out" 2>&1 &
  BG_PIDS+=($!)
  wait_for 3 grep -q '"seq":1,' "$WORK/tail.out"
  ev_error "live" >> "$RUN/events.jsonl"
  wait_for 3 grep -q '"seq":2,.*"content":"live"' "$WORK/tail.out"
  ev_error "other mount" >> "$m2/threads/t1/runs/r1/events.jsonl"
  wait_for 3 grep -q '"seq":3,.*"content":"other mount"' "$WORK/tail.out"
  "$RUNFS" put "$STORE" t1 r1 <<<"$(ev_error "put")" >/dev/null
  wait_for 3 grep -q '"seq":4,.*"content":"put"' "$WORK/tail.out"
  kill "${BG_PIDS[0]}"
  wait "${BG_PIDS[0]}" 2>/dev/null || true
  BG_PIDS=()
  cmp "$WORK/tail.out" "$RUN/events.jsonl"
}

# ---- the command line ----

@test "runfs cat prints the same bytes as the mount" {
  ev_start >> "$RUN/events.jsonl"
  ev_human hello 1 >> "$RUN/events.jsonl"
  ev_ai "hi there" 1 >> "$RUN/events.jsonl"
  printf '{"event_type":"llm.error","content":"t","metadata":{"task_id":"task-1"}}\n' >> "$RUN/events.jsonl"
  ev_terminal | (set -C; cat > "$RUN/once/run.terminal")
  mkdir -p "$MNT/threads/t2/runs/r1"
  ev_start >> "$MNT/threads/t2/runs/r1/events.jsonl"
  local p
  for p in README contract.json threads/t1/events.jsonl threads/t1/messages.jsonl \
    threads/t1/history.jsonl threads/t1/message-count threads/t1/seq threads/t1/since/2 \
    threads/t1/runs/r1/events.jsonl threads/t1/runs/r1/messages.jsonl \
    threads/t1/runs/r1/once/run.terminal threads/t1/runs/r1/types/llm.ai.response.jsonl \
    threads/t1/runs/r1/tasks/task-1.jsonl threads/t1/runs/r1/since/3 \
    threads/t1/runs/r1/last-visible-ai-seq threads/t1/runs/r1/workspace-changes.json \
    threads/t1/runs/r1/receipt.json threads/t2/events.jsonl; do
    "$RUNFS" cat "$STORE" "$p" > "$WORK/cli.out" || fail "runfs cat $p failed"
    cmp "$WORK/cli.out" "$MNT/$p" || fail "runfs cat $p differs from the mount"
    [ -s "$WORK/cli.out" ] || fail "runfs cat $p is empty"
  done
  run "$RUNFS" cat "$STORE" threads/nope/events.jsonl
  assert_failure
  run "$RUNFS" cat "$STORE" "threads/bad id/events.jsonl"
  assert_failure
  assert_output --partial "Invalid argument"
}

@test "runfs mount on a missing or busy mountpoint says why and fails" {
  run timeout 20 "$RUNFS" mount "$WORK/other.db" "$WORK/missing"
  assert_failure
  assert_output --partial "$WORK/missing"
  assert_output --partial "No such file or directory"
  run timeout 20 "$RUNFS" mount "$WORK/other.db" "$MNT"
  assert_failure
  assert_output --partial "busy"
  : > "$WORK/plain"
  run timeout 20 "$RUNFS" mount "$WORK/other.db" "$WORK/plain"
  assert_failure
  assert_output --partial "not a directory"
  # The refused mounts left the existing one alone.
  [ "$(grep -c " $MNT fuse.runfs " /proc/mounts)" -eq 1 ]
  ev_start >> "$RUN/events.jsonl"
  assert_equal "$(count_lines "$RUN/events.jsonl")" 1
}

@test "an exclusive create reserves the name for other mounts of the store too" {
  local m2=$WORK/mnt2
  runfs_mount "$STORE" "$m2"
  run python3 - "$RUN/once/run.start" "$m2/threads/t1/runs/r1/once/run.start" <<'EOF2'
import os, sys
a = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL)
try:
    os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    sys.exit("second mount's create succeeded")
except OSError as e:
    print("second mount:", os.strerror(e.errno))
os.write(a, b'{"content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"}}\n')
os.close(a)
EOF2
  assert_success
  assert_output "second mount: File exists"
  run grep -c '"event_type":"run.start"' "$m2/threads/t1/runs/r1/events.jsonl"
  assert_output 1
}

@test "SIGTERM and SIGINT: the daemon unmounts, closes the store and checkpoints the WAL" {
  local sig pid
  for sig in TERM INT; do
    ev_error "before $sig" >> "$RUN/events.jsonl"
    pid=$(pgrep -f "runfs mount.* $MNT\$" | head -1)
    [ -n "$pid" ]
    kill -"$sig" "$pid"
    wait_for 10 bash -c "! kill -0 $pid 2>/dev/null" || fail "daemon still running after SIG$sig"
    run grep -c " $MNT fuse" /proc/mounts
    assert_output 0
    # the last connection's close checkpointed the WAL and removed it
    on_pg || [ ! -s "$STORE-wal" ]
    run store_integrity
    assert_output ok
    run store_sql "SELECT count(*) FROM run_events WHERE content = 'before $sig'"
    assert_output 1
    MOUNTS=()
    runfs_mount "$STORE" "$MNT"
  done
}
