#!/usr/bin/env bats
# sandbox.bats — issue 6, "nothing foreign gets in": the mounts DESIGN gives people and
# sandboxes. -o ro refuses every mutating call with EROFS; --thread T shows and writes thread
# T only; --user NAME stamps and limits to NAME; --user-from-uid with -o allow_other makes each
# calling uid its own owner; no path, id or link leads out of the store. Every refusal leaves
# the store byte-for-byte unchanged.
load lib

setup() {
  runfs_setup
  export -f ev_start ev_human ev_ai ev_error ev_terminal
  RUN=$MNT/threads/t1/runs/r1
  mkdir -p "$RUN"
  ev_start >> "$RUN/events.jsonl"
  ev_human hi >> "$RUN/events.jsonl"
}

teardown() {
  runfs_teardown
}

errmsg() {
  case $1 in
    EINVAL) echo "Invalid argument" ;;
    EEXIST) echo "File exists" ;;
    EPERM) echo "Operation not permitted" ;;
    EROFS) echo "Read-only file system" ;;
    ENOENT) echo "No such file or directory" ;;
    *) echo "unknown errno name $1" >&2; return 1 ;;
  esac
}

# refused ERRNO CMD...: CMD fails with ERRNO and the store is unchanged.
refused() {
  local name=$1; shift
  local before
  before=$(store_snapshot)
  run "$@"
  [ "$status" -ne 0 ] || fail "succeeded, expected $name: $*"
  [[ $output == *"$(errmsg "$name")"* ]] || fail "expected $name from: $*; got: $output"
  assert_equal "$(store_snapshot)" "$before"
}

# ---- -o ro ----

@test "-o ro: every mutating call is EROFS and changes nothing; the kernel knows the mount is ro" {
  local ro=$WORK/ro rod=$WORK/rod
  runfs_mount "$STORE" "$ro" -o ro
  runfs_mount "$STORE" "$rod" -o ro --allow-delete
  local R=$ro/threads/t1/runs/r1 n=0
  refused EROFS bash -c "ev_error >> '$R/events.jsonl'"; n=$((n + 1))
  refused EROFS mkdir "$ro/threads/t2"; n=$((n + 1))
  refused EROFS mkdir "$ro/threads/t1/runs/r2"; n=$((n + 1))
  refused EROFS bash -c "set -C; ev_terminal > '$R/once/run.terminal'"; n=$((n + 1))
  refused EROFS bash -c "ev_terminal > '$R/once/run.terminal'"; n=$((n + 1))
  refused EROFS bash -c "set -C; : > '$R/seal.json'"; n=$((n + 1))
  refused EROFS rm "$R/events.jsonl"; n=$((n + 1))
  refused EROFS rm -r "$rod/threads/t1/runs/r1"; n=$((n + 1))
  refused EROFS rmdir "$R"; n=$((n + 1))
  refused EROFS rmdir "$ro/threads/t1"; n=$((n + 1))
  refused EROFS mv "$R/events.jsonl" "$R/old.jsonl"; n=$((n + 1))
  refused EROFS mv "$ro/threads/t1" "$ro/threads/t9"; n=$((n + 1))
  refused EROFS touch "$R/events.jsonl"; n=$((n + 1))
  refused EROFS touch "$R/newfile"; n=$((n + 1))
  refused EROFS chmod 600 "$R/events.jsonl"; n=$((n + 1))
  refused EROFS chmod 700 "$ro/threads/t1"; n=$((n + 1))
  refused EROFS ln -s events.jsonl "$R/link"; n=$((n + 1))
  refused EROFS ln -s /etc/passwd "$ro/threads/t1/passwd"; n=$((n + 1))
  refused EROFS ln "$R/events.jsonl" "$R/hard"; n=$((n + 1))
  refused EROFS mkfifo "$R/fifo"; n=$((n + 1))
  refused EROFS truncate -s 0 "$R/events.jsonl"; n=$((n + 1))
  refused EROFS python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.x", b"1")' "$R/events.jsonl"; n=$((n + 1))
  refused EROFS python3 -c 'import os, sys; os.open(sys.argv[1], os.O_WRONLY)' "$R/messages.jsonl"; n=$((n + 1))
  # The kernel refused each one: both mounts are ro in /proc/mounts.
  [ "$n" -gt 20 ]
  grep -q " $ro fuse.runfs ro," /proc/mounts || fail "$(grep " $ro " /proc/mounts)"
  grep -q " $rod fuse.runfs ro," /proc/mounts || fail "$(grep " $rod " /proc/mounts)"
  # Reads are as on the read-write mount.
  cmp "$R/events.jsonl" "$RUN/events.jsonl"
  cmp "$ro/threads/t1/events.jsonl" "$MNT/threads/t1/events.jsonl"
  run ls "$ro/threads/t1/runs"
  assert_output r1
}

# listing_is DIR LINES: ls DIR prints exactly LINES.
listing_is() { [ "$(ls "$1")" = "$2" ]; }

@test "-o ro beside a read-write mount: a thread or run made by mkdir, and an rm -r, show on the ro mount within the hub's tick" {
  local ro=$WORK/ro rw=$WORK/rw
  runfs_mount "$STORE" "$rw" --allow-delete
  runfs_mount "$STORE" "$ro" -o ro
  # a thread another writer added, not indexed in the store: the ro mount indexes it for itself
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('tf', 'rf', NULL, 'llm.error', 'trace', 'foreign', '{}', 1, '2026-03-04 06:00:00.000000')"
  [ "$(cat "$ro/threads/tf/seq")" -eq 1 ]
  cmp "$ro/threads/t1/events.jsonl" "$MNT/threads/t1/events.jsonl"
  run ls "$ro/threads"
  assert_output "$(printf 't1\ntf')"
  # empty threads and runs made afterwards, on an indexed thread and on the foreign one: the
  # ro mount's kept listings go when its hub sees the other mount's commit
  mkdir "$rw/threads/t2" "$rw/threads/t1/runs/r2" "$rw/threads/tf/runs/r3"
  wait_for 10 listing_is "$ro/threads" "$(printf 't1\nt2\ntf')" || fail "threads/ misses t2"
  wait_for 10 listing_is "$ro/threads/t1/runs" "$(printf 'r1\nr2')" || fail "t1/runs/ misses r2"
  wait_for 10 listing_is "$ro/threads/tf/runs" "$(printf 'r3\nrf')" || fail "tf/runs/ misses r3"
  [ "$(cat "$ro/threads/t2/seq")" -eq 0 ]
  run ls "$ro/threads/t2/runs"
  assert_output ""
  # deletes: a run, then whole threads
  rm -r "$rw/threads/t1/runs/r1"
  wait_for 10 listing_is "$ro/threads/t1/runs" r2 || fail "t1/runs/ still lists the deleted r1"
  rm -r "$rw/threads/tf" "$rw/threads/t2"
  wait_for 10 listing_is "$ro/threads" t1 || fail "threads/ still lists deleted threads"
  cmp "$ro/threads/t1/events.jsonl" "$MNT/threads/t1/events.jsonl"
}

# ---- --thread T ----

@test "--thread: only that thread is visible or writable; other ids are ENOENT" {
  mkdir -p "$MNT/threads/t2/runs/r1"
  ev_error zq-hidden-t2 >> "$MNT/threads/t2/runs/r1/events.jsonl"
  local sb=$WORK/sb
  runfs_mount "$STORE" "$sb" --thread t1
  run ls "$sb/threads"
  assert_output t1
  # Reads of another thread, by any path.
  refused ENOENT ls "$sb/threads/t2"
  refused ENOENT cat "$sb/threads/t2/events.jsonl"
  refused ENOENT cat "$sb/threads/t2/seq"
  refused ENOENT cat "$sb/threads/t2/follow.jsonl"
  refused ENOENT cat "$sb/threads/t2/since/0"
  refused ENOENT cat "$sb/threads/t2/runs/r1/events.jsonl"
  refused ENOENT cat "$sb/threads/t2/runs/r1/receipt.json"
  refused ENOENT bash -c "cd '$sb/threads/t1' && cat ../t2/events.jsonl"
  # Writes to another thread, existing or new.
  refused ENOENT mkdir "$sb/threads/t2"
  refused ENOENT mkdir "$sb/threads/t3"
  refused ENOENT mkdir -p "$sb/threads/t3/runs/r1"
  refused ENOENT mkdir "$sb/threads/t2/runs/r9"
  refused ENOENT bash -c "ev_error x >> '$sb/threads/t2/runs/r1/events.jsonl'"
  refused ENOENT bash -c "set -C; ev_terminal > '$sb/threads/t2/runs/r1/once/run.terminal'"
  # Nothing of the other thread ever shows, whatever is read.
  run grep -r --exclude=follow.jsonl zq-hidden-t2 "$sb"
  assert_failure
  # Its own thread works as usual, and what it writes is the store's.
  mkdir "$sb/threads/t1/runs/r2"
  ev_error mine >> "$sb/threads/t1/runs/r2/events.jsonl"
  run cat "$MNT/threads/t1/runs/r2/events.jsonl"
  assert_output --partial '"seq":3,"event_type":"llm.error","category":"trace","content":"mine"'
  cmp "$sb/threads/t1/events.jsonl" "$MNT/threads/t1/events.jsonl"
  # A sandbox for a thread that does not exist yet: empty until it makes it.
  local sb2=$WORK/sb2
  runfs_mount "$STORE" "$sb2" --thread tnew
  run ls "$sb2/threads"
  assert_output ""
  mkdir -p "$sb2/threads/tnew/runs/r1"
  ev_start >> "$sb2/threads/tnew/runs/r1/events.jsonl"
  run ls "$sb2/threads"
  assert_output tnew
}

@test "--thread and --user: ids that are paths are refused at mount time" {
  local bad
  for bad in .. ../t1 /etc a/b '' 'a b' "$(printf 'a%.0s' $(seq 65))"; do
    run timeout 20 "$RUNFS" mount --thread "$bad" "$STORE" "$WORK/x"
    assert_failure
    assert_output --partial "--thread must be a thread id"
    run timeout 20 "$RUNFS" mount --user "$bad" "$STORE" "$WORK/x"
    assert_failure
    assert_output --partial "--user must be"
  done
  run timeout 20 "$RUNFS" mount --user a --user-from-uid "$STORE" "$WORK/x"
  assert_failure
  assert_output --partial "exclude each other"
  [ "$(grep -c " $WORK/x " /proc/mounts)" -eq 0 ]
}

# ---- --user NAME ----

@test "--user: writes are stamped with NAME; another --user mount cannot see or touch them" {
  local alice=$WORK/alice bob=$WORK/bob
  runfs_mount "$STORE" "$alice" --user alice
  runfs_mount "$STORE" "$bob" --user bob
  local A=$alice/threads/ta/runs/r1
  mkdir -p "$A"
  ev_start >> "$A/events.jsonl"
  ev_ai secret-answer >> "$A/events.jsonl"
  printf '{"event_type":"llm.error","content":"tasked","metadata":{"task_id":"k1"}}\n' >> "$A/events.jsonl"
  (set -C; ev_terminal > "$A/once/run.terminal")
  (set -C; : > "$A/seal.json")
  # Stamped in the user_id column and shown as the line's last key.
  assert_equal "$(store_sql "SELECT group_concat(DISTINCT user_id) FROM run_events WHERE thread_id='ta'")" alice
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id='ta'")" 4
  run python3 -c 'import json, sys; print(sorted({json.loads(l)["user_id"] for l in open(sys.argv[1])}))' "$A/events.jsonl"
  assert_output "['alice']"
  run tail -c 20 "$A/events.jsonl"
  assert_output --partial '"user_id":"alice"}'
  # Bob's view: no thread, whatever he guesses.
  run ls "$bob/threads"
  assert_output ""
  local p
  for p in "" /events.jsonl /messages.jsonl /history.jsonl /message-count /seq /since/0 \
      /follow.jsonl /runs /runs/r1 /runs/r1/events.jsonl /runs/r1/messages.jsonl \
      /runs/r1/receipt.json /runs/r1/seal.json /runs/r1/once /runs/r1/once/run.terminal \
      /runs/r1/types/llm.ai.response.jsonl /runs/r1/tasks/k1.jsonl /runs/r1/since/0 \
      /runs/r1/last-visible-ai-seq /runs/r1/workspace-changes.json /runs/r1/follow.jsonl; do
    refused ENOENT timeout 10 cat "$bob/threads/ta$p"
  done
  refused ENOENT bash -c "ev_error x >> '$bob/threads/ta/runs/r1/events.jsonl'"
  refused ENOENT bash -c "set -C; ev_terminal > '$bob/threads/ta/runs/r1/once/run.terminal'"
  refused ENOENT mkdir "$bob/threads/ta/runs/r2"
  run grep -r --exclude=follow.jsonl secret-answer "$bob"
  assert_failure
  # Bob's own writes are his; alice does not see them either.
  mkdir -p "$bob/threads/tb/runs/r1"
  ev_error bobs >> "$bob/threads/tb/runs/r1/events.jsonl"
  assert_equal "$(store_sql "SELECT user_id FROM run_events WHERE thread_id='tb'")" bob
  run ls "$alice/threads"
  assert_output ta
  refused ENOENT cat "$alice/threads/tb/events.jsonl"
  # Unstamped rows (the unrestricted mount's) are no one's: neither sees t1.
  refused ENOENT cat "$alice/threads/t1/events.jsonl"
  refused ENOENT cat "$bob/threads/t1/events.jsonl"
}

# ---- --user-from-uid with -o allow_other ----

@test "--user-from-uid: two unprivileged users each see and write only their own threads" {
  chmod 755 "$WORK"
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" --user-from-uid -o allow_other
  local line='{"event_type":"llm.error","content":"CONTENT"}'
  as $UID_A "mkdir -p '$sh/threads/ta/runs/r1' && echo '${line/CONTENT/from-a}' >> '$sh/threads/ta/runs/r1/events.jsonl'"
  as $UID_B "mkdir -p '$sh/threads/tb/runs/r1' && echo '${line/CONTENT/from-b}' >> '$sh/threads/tb/runs/r1/events.jsonl'"
  # Each is stamped with its uid.
  assert_equal "$(store_sql "SELECT thread_id || ':' || user_id FROM run_events WHERE thread_id IN ('ta','tb') ORDER BY thread_id")" \
    "$(printf 'ta:%s\ntb:%s' $UID_A $UID_B)"
  run as $UID_A "ls '$sh/threads'"
  assert_output ta
  run as $UID_B "ls '$sh/threads'"
  assert_output tb
  run as $UID_A "cat '$sh/threads/ta/events.jsonl'"
  assert_output --partial "\"content\":\"from-a\",\"metadata\":{},"
  assert_output --partial "\"user_id\":\"$UID_A\"}"
  # Files show as the caller's own.
  run as $UID_B "stat -c %u '$sh/threads/tb/events.jsonl'"
  assert_output $UID_B
  # Guessing the other's id: ENOENT for reading, appending and singletons, once the kernel's
  # 1 s entry cache of A's names has run out (B's lookups show it; the test below covers what
  # holds at once).
  local paths="threads/ta threads/ta/events.jsonl threads/ta/seq threads/ta/runs/r1/events.jsonl
      threads/ta/runs/r1/receipt.json threads/ta/follow.jsonl"
  wait_for 5 as $UID_B "cd '$sh' && for p in $(echo $paths); do ! test -e \$p || exit 1; done" ||
    fail "B still finds A's names"
  local before
  before=$(store_snapshot)
  local p
  for p in $paths; do
    run as $UID_B "timeout 10 cat '$sh/$p'"
    assert_failure
    assert_output --partial "No such file or directory"
  done
  run as $UID_B "echo '${line/CONTENT/intruder}' >> '$sh/threads/ta/runs/r1/events.jsonl'"
  assert_failure
  assert_output --partial "No such file or directory"
  run as $UID_B "set -C; echo '{\"content\":{\"status\":\"success\"},\"metadata\":{\"protocol_version\":1,\"recovered\":false}}' > '$sh/threads/ta/runs/r1/once/run.terminal'"
  assert_failure
  assert_output --partial "No such file or directory"
  run as $UID_B "grep -r --exclude=follow.jsonl from-a '$sh/threads'"
  assert_failure
  assert_equal "$(store_snapshot)" "$before"
  # Root on that mount is uid 0, an owner of its own: it sees neither.
  run ls "$sh/threads"
  assert_output ""
  # The unrestricted mount sees both, each row with its owner.
  run cat "$MNT/threads/ta/events.jsonl" "$MNT/threads/tb/events.jsonl"
  assert_output --partial "\"user_id\":\"$UID_A\""
  assert_output --partial "\"user_id\":\"$UID_B\""
}

@test "--user-from-uid: right after its owner used it, another uid can neither stat nor append to a thread" {
  chmod 755 "$WORK"
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" --user-from-uid -o allow_other
  as $UID_A "mkdir -p '$sh/threads/ta/runs/r1' && echo '{\"event_type\":\"llm.error\",\"content\":\"x\"}' >> '$sh/threads/ta/runs/r1/events.jsonl' && ls '$sh/threads/ta/runs/r1' >/dev/null"
  run as $UID_B "stat '$sh/threads/ta'"
  assert_failure
  assert_output --partial "No such file or directory"
  run as $UID_B "stat '$sh/threads/ta/runs/r1'"
  assert_failure
  run as $UID_B "ls -d '$sh/threads/ta/runs'"
  assert_failure
  local before
  before=$(store_snapshot)
  as $UID_A "echo '{\"event_type\":\"llm.error\",\"content\":\"y\"}' >> '$sh/threads/ta/runs/r1/events.jsonl'"
  run as $UID_B "echo '{\"event_type\":\"llm.error\",\"content\":\"intruder\"}' >> '$sh/threads/ta/runs/r1/events.jsonl'"
  assert_failure
  assert_output --partial "No such file or directory"
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE content = 'intruder'")" 0
}

@test "--user-from-uid: .runfs/rejects.jsonl does not show one uid's refused writes to another" {
  chmod 755 "$WORK"
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" --user-from-uid -o allow_other
  as $UID_A "mkdir -p '$sh/threads/ta-private/runs/r1'; echo '{\"event_type\":\"no.such\",\"content\":\"a-secret\"}' >> '$sh/threads/ta-private/runs/r1/events.jsonl'" || true
  run as $UID_A "cat '$sh/.runfs/rejects.jsonl'"
  assert_success
  assert_output --partial a-secret
  # B's cat must succeed: an absent secret in a failed read proves nothing.
  run as $UID_B "cat '$sh/.runfs/rejects.jsonl'"
  assert_success
  refute_output --partial a-secret
  refute_output --partial ta-private
}

@test "--user and --thread: .runfs/status.json counts only what the mount may see" {
  mkdir -p "$MNT/threads/t2/runs/r1"
  ev_error other >> "$MNT/threads/t2/runs/r1/events.jsonl"
  local sb=$WORK/sb alice=$WORK/alice
  runfs_mount "$STORE" "$sb" --thread t2
  runfs_mount "$STORE" "$alice" --user alice
  run cat "$sb/.runfs/status.json"
  assert_output --partial '"threads":1,"runs":1,"events":1'
  run cat "$alice/.runfs/status.json"
  assert_output --partial '"threads":0,"runs":0,"events":0'
}

# ---- nothing leads out of the store ----

@test "no path escapes the store: .., absolute paths and ids, links" {
  # runfs cat takes paths of the layout only, from its root: .. never climbs, and a path that
  # looks absolute is still the layout's (never a file of the host).
  local p
  for p in /etc/passwd ../etc/passwd etc/passwd threads/../../../../etc/passwd \
      threads/t1/../../README threads/t1/runs/r1/../../../../../etc/passwd \
      threads/t1/runs/r1/events.jsonl/.. threads/t1/.. "$STORE"; do
    run "$RUNFS" cat "$STORE" "$p"
    assert_failure
    refute_output --partial "root:"
  done
  run "$RUNFS" cat "$STORE" /threads/t1/events.jsonl
  assert_success
  assert_output "$(cat "$MNT/threads/t1/events.jsonl")"
  # runfs put: ids that are paths store nothing.
  local before
  before=$(store_snapshot)
  for p in .. ../t1 /etc t1/../t2 ''; do
    run "$RUNFS" put "$STORE" "$p" r1 <<<"$(ev_error x)"
    assert_failure
    run "$RUNFS" put "$STORE" t1 "$p" <<<"$(ev_error x)"
    assert_failure
  done
  assert_equal "$(store_snapshot)" "$before"
  # Ids inside lines that name paths are EINVAL.
  for p in /etc/passwd ../../etc ./t1 'C:\\x' t1/runs; do
    refused EINVAL bash -c "printf '{\"event_type\":\"llm.error\",\"content\":\"x\",\"thread_id\":\"%s\"}\n' '$p' >> '$RUN/events.jsonl'"
    refused EINVAL bash -c "printf '{\"event_type\":\"llm.error\",\"content\":\"x\",\"run_id\":\"%s\"}\n' '$p' >> '$RUN/events.jsonl'"
  done
  # .. inside the mount is the kernel's: it stays in the tree and names nothing new.
  run ls "$MNT/threads/t1/runs/r1/../.."
  assert_output --partial events.jsonl
  refused EEXIST mkdir "$MNT/threads/.."
  # No link of any kind can be made, pointing in or out; nothing appears.
  refused EPERM ln -s /etc/passwd "$RUN/passwd"
  refused EPERM ln -s /etc "$MNT/threads/etc"
  refused EPERM ln -s ../../t1 "$MNT/threads/t1/runs/up"
  refused EPERM ln "$RUN/events.jsonl" "$RUN/hard"
  refused EPERM mknod "$RUN/dev" c 1 3
  refused EPERM mkfifo "$MNT/threads/t1/fifo"
  run ls "$RUN"
  assert_success
  assert_output --partial events.jsonl
  refute_output --partial passwd
  refute_output --partial hard
  # In a --thread sandbox, links and .. lead nowhere else either.
  mkdir -p "$MNT/threads/t2/runs/r1"
  ev_error zq-hidden-t2 >> "$MNT/threads/t2/runs/r1/events.jsonl"
  local sb=$WORK/sb
  runfs_mount "$STORE" "$sb" --thread t1
  refused EPERM ln -s ../t2 "$sb/threads/t1/t2"
  run ls "$sb/threads/t1/.."
  assert_output t1
  # grep's 1 is "searched everything, found nothing"; 2 would be a read that failed.
  run grep -r --exclude=follow.jsonl zq-hidden-t2 "$sb"
  assert_failure 1
}

# ---- --user-map ----

@test "--user-map: each mapped uid reads and writes as its owner (a DeerFlow user id); an unmapped uid gets EACCES below threads/" {
  local um=$WORK/um map=$WORK/users.map
  printf '# sandbox uid -> DeerFlow user id\n%s alice\n\n%s\tbob   # second sandbox\n' "$UID_A" "$UID_B" > "$map"
  chmod 755 "$WORK"
  runfs_mount "$STORE" "$um" --user-map "$map" -o allow_other
  as "$UID_A" "mkdir -p '$um/threads/ta/runs/r1' && printf '%s\n' '{\"event_type\":\"llm.error\",\"content\":\"from a\"}' >> '$um/threads/ta/runs/r1/events.jsonl'"
  run store_sql "SELECT user_id FROM run_events WHERE thread_id = 'ta'"
  assert_output alice
  run as "$UID_A" "cat '$um/threads/ta/events.jsonl'"
  assert_output --partial '"user_id":"alice"'
  run as "$UID_B" "ls '$um/threads'"
  assert_success
  assert_output ""
  run as "$UID_B" "cat '$um/threads/ta/events.jsonl'"
  assert_failure
  assert_output --partial "No such file or directory"
  # a uid the map does not name: EACCES for everything below threads/, nothing stored
  local before
  before=$(store_snapshot)
  run as 61003 "ls '$um/threads'"
  assert_failure
  assert_output --partial "Permission denied"
  run as 61003 "cat '$um/threads/ta/events.jsonl'"
  assert_failure
  assert_output --partial "Permission denied"
  run as 61003 "mkdir '$um/threads/tz'"
  assert_failure
  assert_output --partial "Permission denied"
  assert_equal "$(store_snapshot)" "$before"
  run as 61003 "cat '$um/README'"
  assert_success
}

@test "--user-map: a malformed map is refused at mount with FILE:LINE" {
  printf '%s alice\nnotauid bob\n' "$UID_A" > "$WORK/bad.map"
  run timeout 20 "$RUNFS" mount --user-map "$WORK/bad.map" "$STORE" "$WORK/x"
  assert_failure 2
  assert_output --partial "bad.map:2: 'notauid' is not a uid"
  printf '%s alice\n%s b/c\n' "$UID_A" "$UID_B" > "$WORK/bad.map"
  run timeout 20 "$RUNFS" mount --user-map "$WORK/bad.map" "$STORE" "$WORK/x"
  assert_failure 2
  assert_output --partial "bad.map:2: expected 'UID OWNER'"
}

@test "--user-map: owners of 36 (a DeerFlow UUID) and 64 characters append, write once/, seal and resend keys" {
  local um=$WORK/um map=$WORK/users.map
  local uuid=3f2b8c1e-9a4d-4e7b-b6c2-1d5e8f9a0b7c
  local long
  long=$(python3 -c 'print("o" * 32 + "-" + "9" * 31)')
  [ ${#uuid} -eq 36 ] && [ ${#long} -eq 64 ]
  printf '%s %s\n%s %s\n' "$UID_A" "$uuid" "$UID_B" "$long" > "$map"
  chmod 755 "$WORK"
  runfs_mount "$STORE" "$um" --user-map "$map" -o allow_other
  local uid owner t
  for uid in "$UID_A" "$UID_B"; do
    owner=$uuid t=tu
    [ "$uid" = "$UID_B" ] && owner=$long t=$(python3 -c 'print("t" * 64)')
    local R=$um/threads/$t/runs/r1
    as "$uid" "mkdir -p '$R' && ev_start >> '$R/events.jsonl' && ev_error one >> '$R/events.jsonl'"
    as "$uid" "printf '%s\n' '{\"event_type\":\"llm.error\",\"content\":\"k\",\"idempotency_key\":\"key-1\"}' >> '$R/events.jsonl'"
    # the resend of a keyed line is confirmed, not stored twice
    as "$uid" "printf '%s\n' '{\"event_type\":\"llm.error\",\"content\":\"k\",\"idempotency_key\":\"key-1\"}' >> '$R/events.jsonl'"
    as "$uid" "set -C; ev_terminal > '$R/once/run.terminal'"
    as "$uid" "set -C; : > '$R/seal.json'"
    run as "$uid" "cat '$R/seal.json'"
    assert_output --partial '"state":"sealed"'
    # every row is the owner's, whole (an owner cut to 31 bytes would be another owner)
    assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = '$t' AND user_id = '$owner'")" 4
    assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = '$t'")" 4
    run as "$uid" "cat '$R/once/run.terminal'"
    assert_output --partial "\"user_id\":\"$owner\""
  done
  # the two owners do not see each other's threads
  assert_equal "$(as "$UID_A" "ls '$um/threads'")" tu
}
