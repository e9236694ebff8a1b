#!/usr/bin/env bats
# limits.bats — issue 21 on real mounts: secrets never shown (status.json, /proc/mounts, the
# log, connection errors, the daemon's own command line), seq bounded by the backend's
# column, import and export at the edges, and the smaller things a user meets.
load lib

setup() {
  runfs_workdir
}
teardown() {
  runfs_teardown
}

# secret_uri: $STORE with a password and an sslpassword as parameters (trust auth ignores
# them), so that any place showing the URI would show them.
secret_uri() { printf '%s%spassword=pw-zq81&sslpassword=spw-zq82\n' "$STORE" "$([[ $STORE == *\?* ]] && echo '&' || echo '?')"; }

@test "secrets: a URI's password and sslpassword are in no status.json, fsname, log, error or command line" {
  on_pg || skip "PostgreSQL only: a SQLite store has no secret"
  local uri
  uri=$(secret_uri)
  runfs_mount "$uri" "$MNT" --log "$WORK/daemon.log"
  run cat "$MNT/.runfs/status.json"
  assert_success
  refute_output --partial zq8
  # the mount table shows the URI as status.json does, and the daemon's arguments too
  run grep " $MNT " /proc/mounts
  assert_success
  refute_output --partial zq8
  local pid
  pid=$(pgrep -f "runfs mount.* $MNT\$" | head -1)
  [ -n "$pid" ]
  run tr '\0' ' ' < "/proc/$pid/cmdline"
  assert_output --partial "$MNT"
  refute_output --partial zq8
  run cat "$WORK/daemon.log"
  refute_output --partial zq8
  # a connection error names the database, never its secrets
  local bad=${uri/\/\/\/$PG_DB/\/\/\/no_such_db_zz}
  [ "$bad" != "$uri" ]
  run "$RUNFS" cat "$bad" threads
  assert_failure
  assert_output --partial no_such_db_zz
  refute_output --partial zq8
}

@test "a foreground daemon stopped by SIGTERM (systemd's stop) unmounts and exits 0" {
  "$RUNFS" mount --foreground "$STORE" "$MNT" 2>"$WORK/fg.err" &
  local pid=$!
  MOUNTS+=("$MNT")
  wait_for 10 test -f "$MNT/README"
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  assert_equal "$rc" 0
  run grep -c " $MNT " /proc/mounts
  assert_output 0
}

@test "-V spells versions as their projects do (libfuse 3.14.0, SQLite 3.40.1, libpq 15.3)" {
  run "$RUNFS" -V
  assert_success
  # references from the libraries themselves, not from runfs
  local fuse sqlite pq
  fuse=$(pkg-config --modversion fuse3)
  sqlite=$(python3 -c 'import ctypes, ctypes.util; l = ctypes.CDLL(ctypes.util.find_library("sqlite3")); l.sqlite3_libversion.restype = ctypes.c_char_p; print(l.sqlite3_libversion().decode())')
  pq=$(python3 -c 'import ctypes, ctypes.util; v = ctypes.CDLL(ctypes.util.find_library("pq")).PQlibVersion(); print("%d.%d" % (v // 10000, v % 10000))')
  assert_output --partial "libfuse $fuse"
  assert_output --partial "SQLite $sqlite"
  assert_output --partial "libpq $pq"
}

# One file of each way a mount serves a file (a document rendered whole, a log, a
# streamed view, a live feed, an append handle); scripts/bench memory measures them all.
HANDLE_KINDS="contract.json threads/tm/events.jsonl threads/tm/history.jsonl
  threads/tm/runs/rm/follow.jsonl threads/tm/runs/rm/events.jsonl:a"

@test "memory: 10,000 open handles of each way of serving a file, held by a non-root uid, cost the daemon a few MiB" {
  skip_on_pg "the handles are the daemon's, the same on both backends"
  local m=$WORK/mem n=10000 kind
  chmod 755 "$WORK"
  ulimit -n $((n + 100))
  runfs_mount "$STORE" "$m" --user-from-uid -o allow_other
  local R=$m/threads/tm/runs/rm
  as "$UID_A" "mkdir -p '$R' && ev_start >> '$R/events.jsonl' && ev_human hi >> '$R/events.jsonl' && ev_ai >> '$R/events.jsonl' && printf '%s\n' '{\"event_type\":\"llm.error\",\"content\":\"t\",\"metadata\":{\"task_id\":\"k1\"}}' >> '$R/events.jsonl' && (set -C; ev_terminal > '$R/once/run.terminal') && (set -C; : > '$R/seal.json')"
  runfs_unmount "$m"
  for kind in $HANDLE_KINDS; do
    # a fresh daemon for each kind: memory freed by the last kind would hide this one's
    runfs_mount "$STORE" "$m" --user-from-uid -o allow_other --follow-timeout 600
    local pid
    pid=$(pgrep -f "runfs mount.* $m\$" | head -1)
    run as "$UID_A" "python3 '$BATS_TEST_DIRNAME/handles.py' $pid $n '$m' '$kind'"
    assert_success
    echo "# $output" >&3
    # a few MiB for 10,000: under 600 bytes a handle (main: 22 KB for contract.json); a
    # streamed view also keeps its place in the rendering (its pass's state, the row it is
    # in): under 1200
    local most=600
    [[ $kind == *history.jsonl ]] && most=1200
    [ "${output##* }" -lt "$most" ] || fail "$kind: ${output##* } bytes a handle"
    runfs_unmount "$m"
  done
}
