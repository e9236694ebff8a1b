#!/usr/bin/env bats
# enospc.bats — issue 6 and the errno table's "disk full | ENOSPC": a store on a 2 MiB tmpfs.
# Appends fail with ENOSPC once the disk is full, a refused write stores nothing, reads keep
# working, and once space is freed appends succeed again with seq continuing.
load lib

PY=$(python3 -c 'import sys; print(sys.executable)')

setup() {
  skip_on_pg "the store file on a full tmpfs (a server's full disk is the server's)"
  WORK=$(mktemp -d "${RUNFS_TEST_ROOT:-${TMPDIR:-/tmp}}/runfs-bats.XXXXXX")
  FS=$WORK/fs
  mkdir -p "$FS"
  # Named so that a leftover shows in `grep -E 'tmpfs.*runfs' /proc/mounts`.
  mount -t tmpfs -o size=2m runfs-enospc "$FS"
  STORE=$FS/store.db
  MNT=$WORK/mnt
  MOUNTS=()
  mkdir -p "$MNT"
  runfs_mount "$STORE" "$MNT"
  RUN=$MNT/threads/t1/runs/r1
  mkdir -p "$RUN"
}

teardown() {
  [ -n "${WORK:-}" ] || return 0
  local d
  for d in "${MOUNTS[@]}"; do
    runfs_unmount "$d"
  done
  umount "$FS" 2>/dev/null || umount -l "$FS" 2>/dev/null || true
  rm -rf "$WORK"
}

# big_write TAG N: one write() of N event lines of ~1 KiB each; prints OK or the errno name.
big_write() {
  "$PY" -S - "$RUN/events.jsonl" "$1" "$2" <<'EOF'
import errno, os, sys
path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = "".join('{"event_type":"llm.error","content":"%s-%d-%s"}\n' % (tag, i, "x" * 1000)
               for i in range(1, n + 1)).encode()
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
try:
    w = os.write(fd, data)
    print("OK" if w == len(data) else "SHORT %d" % w)
except OSError as e:
    print(errno.errorcode[e.errno])
finally:
    try:
        os.close(fd)
    except OSError as e:
        print("close " + errno.errorcode[e.errno])
EOF
}

rows() { store_sql "SELECT count(*) FROM run_events"; }

@test "disk full: ENOSPC, nothing partial, reads work; space freed, appends go on at the next seq" {
  # Leave the store about 1 MiB; the rest is a filler file to delete later.
  dd if=/dev/zero of="$FS/filler" bs=64k count=14 status=none
  ev_start >> "$RUN/events.jsonl"
  local i out before n=0
  for i in $(seq 1 200); do
    before=$(store_snapshot)
    out=$(big_write "w$i" 20)
    [ "$out" = OK ] || break
    n=$((n + 20))
  done
  # The disk filled up, and the write that did not fit was refused as ENOSPC, whole.
  [ "$out" = ENOSPC ] || fail "write $i of 20 events: expected ENOSPC, got '$out' ($(df -k "$FS" | tail -1))"
  [ "$n" -gt 0 ] || fail "not one write fitted before the disk was full"
  assert_equal "$(store_snapshot)" "$before"
  assert_equal "$(rows)" $((n + 1))
  # A small append fails the same way (the disk is still full) and stores nothing.
  local more=0
  for i in $(seq 1 50); do
    before=$(store_snapshot)
    out=$(big_write "s$i" 1)
    [ "$out" = OK ] || break
    more=$((more + 1))
  done
  assert_equal "$out" ENOSPC
  assert_equal "$(store_snapshot)" "$before"
  n=$((n + more))
  # The refusal is logged with its errno.
  run cat "$MNT/.runfs/rejects.jsonl"
  assert_output --partial '"errno":"ENOSPC"'
  # Reads keep working on the full disk: every log, a listing, the documents.
  run "$PY" -S "$BATS_TEST_DIRNAME/crashtool.py" read "$RUN/events.jsonl" 0.1
  assert_success
  assert_equal "$(wc -l < "$RUN/events.jsonl")" $((n + 1))
  assert_equal "$(wc -l < "$MNT/threads/t1/events.jsonl")" $((n + 1))
  run ls "$MNT/threads/t1/runs"
  assert_output r1
  run cat "$RUN/receipt.json"
  assert_success
  assert_output --partial "\"upper_seq\":$((n + 1))"
  run cat "$MNT/.runfs/status.json"
  assert_success
  # 40 readers at once (the daemon opens more store connections), and a mount made afresh on
  # the full disk, read everything too.
  local pids=() p
  for i in $(seq 1 40); do
    cmp -s "$RUN/events.jsonl" "$MNT/threads/t1/events.jsonl" & pids+=($!)
  done
  for p in "${pids[@]}"; do
    wait "$p" || fail "a concurrent reader failed on the full disk"
  done
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  assert_equal "$(wc -l < "$RUN/events.jsonl")" $((n + 1))
  # runfs put says ENOSPC too, and stores nothing.
  before=$(store_snapshot)
  run "$RUNFS" put "$STORE" t1 r1 <<<"$(ev_error put)"
  assert_failure
  assert_output --partial "nothing stored (ENOSPC)"
  assert_equal "$(store_snapshot)" "$before"
  # Space freed: appends succeed again, seq continuing right after the last stored.
  rm "$FS/filler"
  out=$(big_write after 3)
  assert_equal "$out" OK
  ev_error last >> "$RUN/events.jsonl"
  assert_equal "$(store_sql "SELECT group_concat(seq) FROM (SELECT seq FROM run_events WHERE content LIKE 'after-%' OR content = 'last' ORDER BY seq)")" \
    "$((n + 2)),$((n + 3)),$((n + 4)),$((n + 5))"
  assert_equal "$(store_sql "SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM run_events")" \
    "$((n + 5))|$((n + 5))|1|$((n + 5))"
  run cat "$MNT/threads/t1/seq"
  assert_output $((n + 5))
  run store_integrity
  assert_output ok
}

@test "disk full from the start: mkdir, append and once/ refuse with ENOSPC and store nothing" {
  ev_start >> "$RUN/events.jsonl"
  # Fill the disk completely (dd stops at ENOSPC).
  dd if=/dev/zero of="$FS/filler" bs=4k status=none 2>/dev/null || true
  local before out
  before=$(store_snapshot)
  run mkdir "$MNT/threads/t2"
  assert_failure
  assert_output --partial "No space left on device"
  run mkdir "$MNT/threads/t1/runs/r2"
  assert_failure
  assert_output --partial "No space left on device"
  out=$(big_write full 5)
  assert_equal "$out" ENOSPC
  run bash -c "set -C; printf '%s\\n' '{\"content\":{\"status\":\"success\"},\"metadata\":{\"protocol_version\":1,\"recovered\":false}}' > '$RUN/once/run.terminal'"
  assert_failure
  assert_output --partial "No space left on device"
  assert_equal "$(store_snapshot)" "$before"
  run cat "$RUN/events.jsonl"
  assert_success
  assert_output --partial '"seq":1,"event_type":"run.start"'
  # Freed: everything that was refused now works, seq continuing.
  rm "$FS/filler"
  mkdir -p "$MNT/threads/t2/runs/r1"
  ev_start >> "$MNT/threads/t2/runs/r1/events.jsonl"
  ev_error x >> "$RUN/events.jsonl"
  set -C
  ev_terminal > "$RUN/once/run.terminal"
  set +C
  run cat "$MNT/threads/t2/events.jsonl"
  assert_output --partial '"seq":1,"event_type":"run.start"'
  assert_equal "$(store_sql "SELECT group_concat(seq) FROM run_events WHERE thread_id='t1'")" "1,2,3"
  run store_integrity
  assert_output ok
}
