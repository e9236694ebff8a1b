#!/usr/bin/env bats
# perms.bats — issue 15, honest permissions: what ls -l shows is what the mount allows, and
# the kernel enforces it (default_permissions). On an allow_other mount other users read but
# cannot append, create, mkdir or rm -r; -o uid=/gid=/umask= give the files to a user or share
# writing with a group; --user-from-uid shows each caller what it may write as its own.
load lib

UID_A=61001
UID_B=61002
UID_C=61003
GID_SHARE=61100

setup() {
  runfs_setup
  export -f ev_start ev_error ev_terminal
  chmod 755 "$WORK"
}

teardown() {
  runfs_teardown
}

# as UID [GROUPS] -- CMD: run the shell command CMD as an unprivileged uid, with the
# supplementary groups given (none by default).
as() {
  local uid=$1 groups=; shift
  if [ "$1" != -- ]; then groups=$1; shift; fi
  shift
  if [ -n "$groups" ]; then
    setpriv --reuid="$uid" --regid="$uid" --groups="$groups" -- bash -c "$*"
  else
    setpriv --reuid="$uid" --regid="$uid" --clear-groups -- bash -c "$*"
  fi
}

# A run with an event and a terminal, made by the mount's owner on mount M.
fixture() {
  local m=$1 who=${2:-}
  local cmd="mkdir -p '$m/threads/t1/runs/r1' && ev_start >> '$m/threads/t1/runs/r1/events.jsonl'"
  if [ -n "$who" ]; then as "$who" -- "$cmd"; else bash -c "$cmd"; fi
}

# can_all UID [GROUPS] M: every write a user of mount M may try, as UID; prints one word per
# try: the errno name, or ok.
try_writes() {
  local uid=$1 groups=$2 m=$3 R=$3/threads/t1/runs/r1
  as "$uid" "$groups" -- "
    t() { if \"\$@\" 2>/tmp/perms-err.\$\$; then echo ok; elif grep -q 'Permission denied' /tmp/perms-err.\$\$; then echo EACCES; else cat /tmp/perms-err.\$\$; fi; rm -f /tmp/perms-err.\$\$; }
    t bash -c 'ev_error x >> \"$R/events.jsonl\"'
    t bash -c 'set -C; ev_terminal success > \"$R/once/run.terminal\"'
    t mkdir '$m/threads/t2'
    t mkdir '$m/threads/t1/runs/r2'
    t rm -r '$R'
  "
}

@test "perms: on a plain allow_other mount ls -l says the mounting user's, other users read but cannot write; -o ro shows no w bit" {
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" -o allow_other --allow-delete
  fixture "$sh"
  local R=$sh/threads/t1/runs/r1
  # What ls -l shows: the mounting user's (root), writable files 0644, views 0444.
  run stat -c '%A %u %g' "$R/events.jsonl" "$R/receipt.json" "$sh/threads" "$sh/threads/t1/events.jsonl"
  assert_output "$(printf '%s\n' '-rw-r--r-- 0 0' '-r--r--r-- 0 0' 'drwxr-xr-x 0 0' '-r--r--r-- 0 0')"
  # ...and what the kernel lets another user do agrees with it.
  run as $UID_A -- "test -w '$R/events.jsonl' || echo not-writable; test -r '$R/events.jsonl' && echo readable"
  assert_output "$(printf 'not-writable\nreadable')"
  local before
  before=$(store_snapshot)
  run try_writes $UID_A "" "$sh"
  assert_output "$(printf 'EACCES\nEACCES\nEACCES\nEACCES\nEACCES')"
  assert_equal "$(store_snapshot)" "$before"
  run as $UID_A -- "cat '$R/events.jsonl'"
  assert_success
  assert_output --partial '"event_type":"run.start"'
  # A read-only mount of the same store shows no w bit anywhere.
  local ro=$WORK/ro
  runfs_mount "$STORE" "$ro" -o ro
  run find "$ro" -perm /222
  assert_success
  assert_output ""
}

@test "perms: -o uid= gives the files to a user: that user writes, another does not, ls -l says so" {
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" -o allow_other,uid=$UID_A,gid=$UID_A --allow-delete
  fixture "$sh" $UID_A
  local R=$sh/threads/t1/runs/r1
  run stat -c '%A %u %g' "$R/events.jsonl"
  assert_output "-rw-r--r-- $UID_A $UID_A"
  run try_writes $UID_B "" "$sh"
  assert_output "$(printf 'EACCES\nEACCES\nEACCES\nEACCES\nEACCES')"
  run try_writes $UID_A "" "$sh"
  assert_output "$(printf 'ok\nok\nok\nok\nok')"
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE run_id = 'r1'")" 0
}

@test "perms: -o umask=002,gid= shares writing with a group; others still only read" {
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" -o allow_other,umask=002,gid=$GID_SHARE --allow-delete
  fixture "$sh"
  local R=$sh/threads/t1/runs/r1
  run stat -c '%A %g' "$R/events.jsonl" "$R/receipt.json" "$sh/threads"
  assert_output "$(printf '%s\n' "-rw-rw-r-- $GID_SHARE" "-r--r--r-- $GID_SHARE" "drwxrwxr-x $GID_SHARE")"
  run try_writes $UID_C "" "$sh"
  assert_output "$(printf 'EACCES\nEACCES\nEACCES\nEACCES\nEACCES')"
  run as $UID_B $GID_SHARE -- "test -w '$R/events.jsonl' && echo writable"
  assert_output writable
  run try_writes $UID_B $GID_SHARE "$sh"
  assert_output "$(printf 'ok\nok\nok\nok\nok')"
}

@test "perms: --user-from-uid shows each caller what it may write as its own, and keeps working" {
  local sh=$WORK/shared
  runfs_mount "$STORE" "$sh" --user-from-uid -o allow_other
  fixture "$sh" $UID_A
  local R=$sh/threads/t1/runs/r1
  # Anyone may make a thread: threads/ says so to everyone.
  run as $UID_B -- "stat -c '%a %u' '$sh/threads'; test -w '$sh/threads' && echo writable"
  assert_output "$(printf '777 %s\nwritable' $UID_B)"
  run as $UID_A -- "stat -c '%A %u' '$R/events.jsonl' '$R/receipt.json'; test -w '$R/events.jsonl' && echo writable"
  assert_output "$(printf '%s\n' "-rw-r--r-- $UID_A" "-r--r--r-- $UID_A" writable)"
  as $UID_A -- "ev_error x >> '$R/events.jsonl' && set -C && ev_terminal success > '$R/once/run.terminal'"
  as $UID_B -- "mkdir -p '$sh/threads/t9/runs/r1' && ev_error y >> '$sh/threads/t9/runs/r1/events.jsonl'"
  assert_equal "$(store_sql "SELECT group_concat(user_id) FROM (SELECT user_id FROM run_events ORDER BY id) AS o")" \
    "$UID_A,$UID_A,$UID_A,$UID_B"
}

@test "perms: -o uid=, gid= and umask= are checked at mount" {
  run timeout 20 "$RUNFS" mount -o umask=9 "$STORE" "$WORK/x"
  assert_failure
  assert_output --partial "umask"
  run timeout 20 "$RUNFS" mount -o gid=no-such-group-here "$STORE" "$WORK/x"
  assert_failure
  assert_output --partial "no such group"
  run timeout 20 "$RUNFS" mount -o uid=no-such-user-here "$STORE" "$WORK/x"
  assert_failure
  assert_output --partial "no such user"
}
