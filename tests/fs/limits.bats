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
