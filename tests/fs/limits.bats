#!/usr/bin/env bats
# limits.bats — issue 21 on real mounts: secrets never shown (status.json, /proc/mounts, the
# log, connection errors, the daemon's own command line), seq bounded by the backend's
# column, import and export at the edges, and the smaller things a user meets.
load lib
bats_require_minimum_version 1.5.0

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
  "$RUNFS" mount --foreground --create "$STORE" "$MNT" 2>"$WORK/fg.err" &
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

@test "-V spells versions as their projects do (libfuse 3.18.2, SQLite 3.40.1, libpq 15.3)" {
  run "$RUNFS" -V
  assert_success
  # references from the libraries themselves, not from runfs: libfuse's from the pkg-config
  # file of the one this build linked (the subproject's, or the system's with system_fuse)
  local fuse sqlite pq
  fuse=$(PKG_CONFIG_PATH="$(dirname "$RUNFS")/meson-uninstalled" pkg-config --modversion fuse3)
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
  local handles
  handles=$(reachable "$BATS_TEST_DIRNAME/handles.py")
  for kind in $HANDLE_KINDS; do
    # a fresh daemon for each kind: memory freed by the last kind would hide this one's
    runfs_mount "$STORE" "$m" --user-from-uid -o allow_other --follow-timeout 600
    local pid
    pid=$(pgrep -f "runfs mount.* $m\$" | head -1)
    run as "$UID_A" "python3 '$handles' $pid $n '$m' '$kind'"
    assert_success
    echo "# $output" >&3
    # a few MiB for 10,000: about 400 bytes a handle on a quiet machine (a streamed view
    # also keeps its place in the rendering, about 800); under 2 KiB however loaded the
    # machine is (1155 seen with both backends' suites running at once; the regression this
    # guards against was 22 KB for contract.json)
    [ "${output##* }" -lt 2048 ] || fail "$kind: ${output##* } bytes a handle"
    runfs_unmount "$m"
  done
}

# seq_max: the highest seq the backend's run_events.seq holds as DeerFlow declares it
# (INTEGER: 64 bits on SQLite, 32 on PostgreSQL).
seq_max() { if on_pg; then echo $(( (1 << 31) - 1 )); else echo $(( (1 << 63) - 1 )); fi; }

# df_folder DIR THREAD: a DeerFlow folder with one valid line in DIR/threads/THREAD/runs/r1.jsonl.
df_folder() {
  mkdir -p "$1/threads/$2/runs"
  printf '{"thread_id": "%s", "run_id": "r1", "event_type": "llm.error", "category": "error", "content": "x", "metadata": {}, "seq": 1, "created_at": "2026-01-02T03:04:05+00:00"}\n' "$2" > "$1/threads/$2/runs/r1.jsonl"
}

# append_errno FILE LINE: append LINE through FILE in one write; prints ok or the errno name.
append_errno() {
  python3 -c 'import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
try:
    os.write(fd, sys.argv[2].encode() + b"\n"); print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])' "$@"
}

@test "seq bounded: a watermark the seq column cannot hold is EOVERFLOW at import; an append past the column's limit is EOVERFLOW, nothing stored" {
  local max df=$WORK/df
  max=$(seq_max)
  df_folder "$df" t1
  # one past the column: refused, FILE:LINE, exit 2, nothing of the thread stored
  python3 -c "print($max + 1, end='')" > "$df/threads/t1/runs/.seq-watermark"
  run "$RUNFS" import -q "$STORE" --deerflow-jsonl "$df"
  assert_failure 2
  assert_output --partial "$df/threads/t1/runs/.seq-watermark"
  [ "$("$RUNFS" cat "$STORE" threads 2>/dev/null | grep -c t1)" -eq 0 ]
  # the column's last seq but one, written with echo (a newline ends it): taken
  echo $((max - 1)) > "$df/threads/t1/runs/.seq-watermark"
  run "$RUNFS" import -q "$STORE" --deerflow-jsonl "$df"
  assert_success
  runfs_mount "$STORE" "$MNT"
  local f=$MNT/threads/t1/runs/r1/events.jsonl
  # the last seq the column holds is given out; the next append would pass it
  run append_errno "$f" '{"event_type":"llm.error","content":"last"}'
  assert_output ok
  assert_equal "$(store_sql "SELECT max(seq) FROM run_events WHERE thread_id = 't1'")" "$max"
  local before
  before=$(store_snapshot)
  run append_errno "$f" '{"event_type":"llm.error","content":"past"}'
  assert_output EOVERFLOW
  assert_equal "$(store_snapshot)" "$before"
  run tail -1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial "would pass $max"
  # a line whose seq the column cannot hold: FILE:LINE, exit 2
  df_folder "$WORK/df2" t2
  python3 -c "print(open('$WORK/df2/threads/t2/runs/r1.jsonl').read().replace('\"seq\": 1', '\"seq\": ' + str($max + 1)), end='')" > "$WORK/df2/x" && mv "$WORK/df2/x" "$WORK/df2/threads/t2/runs/r1.jsonl"
  run "$RUNFS" import -q "$STORE" --deerflow-jsonl "$WORK/df2"
  assert_failure 2
  if on_pg; then assert_output --partial "$WORK/df2/threads/t2/runs/r1.jsonl:1: seq $((max + 1)) is more than"; fi
  [ "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 't2'")" -eq 0 ]
}

@test "import reads only regular files inside DIR: links and FIFOs named and skipped (refused with --strict); a long line refused at the size limit" {
  local df=$WORK/df out=$WORK/outside
  df_folder "$df" good
  df_folder "$out" evil
  ln -s "$out/threads/evil" "$df/threads/evil"          # a thread folder out of DIR
  mkdir -p "$df/threads/t3/runs"
  mkfifo "$df/threads/t3/runs/r1.jsonl"                   # would block a plain read forever
  df_folder "$out" t4
  mkdir -p "$df/threads/t4/runs"
  ln -s "$out/threads/t4/runs/r1.jsonl" "$df/threads/t4/runs/r1.jsonl"
  run --separate-stderr timeout 20 "$RUNFS" import "$STORE" --deerflow-jsonl "$df"
  assert_success
  [[ $stderr == *"$df/threads/evil: a symbolic link, skipped"* ]] || fail "$stderr"
  [[ $stderr == *"$df/threads/t3/runs/r1.jsonl: not a regular file, skipped"* ]] || fail "$stderr"
  [[ $stderr == *"$df/threads/t4/runs/r1.jsonl: a symbolic link, skipped"* ]] || fail "$stderr"
  assert_equal "$(store_sql "SELECT DISTINCT thread_id FROM run_events")" good
  run timeout 20 "$RUNFS" import -q --strict "$STORE" --deerflow-jsonl "$df"
  assert_failure 2
  assert_output --partial "refused (--strict)"
  assert_equal "$(store_sql "SELECT DISTINCT thread_id FROM run_events")" good
  # a 64 MiB line: refused at the 1 MiB limit, never read whole into memory
  local big=$WORK/big
  df_folder "$big" tb
  python3 -c "
import sys
with open('$big/threads/tb/runs/r1.jsonl', 'w') as f:
    f.write('{\"thread_id\": \"tb\", \"run_id\": \"r1\", \"content\": \"' + 'x' * (64 << 20) + '\"}\n')"
  run python3 -c "
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, p.stderr.strip())" "$RUNFS" import -q "$STORE" --deerflow-jsonl "$big"
  assert_output --partial "$big/threads/tb/runs/r1.jsonl:1: line over the 1048576-byte event size limit"
  local rc=${output%% *} rss
  rss=$(head -1 <<<"$output" | cut -d' ' -f2)
  assert_equal "$rc" 2
  [ "$rss" -lt 40 ] || fail "import took $rss MiB for a 64 MiB line"
}

@test "export names each thread it cannot write, writes the others, exits 1" {
  df_folder "$WORK/df" good
  "$RUNFS" import -q "$STORE" --deerflow-jsonl "$WORK/df"
  store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('a/b', 'r1', 'llm.error', 'error', 'x', '{}', 1, '2026-01-02 03:04:05.000000')"
  run --separate-stderr "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out"
  assert_failure 1
  [[ $stderr == *'runfs export: thread "a/b", run "r1": not a valid path id, skipped'* ]] || fail "$stderr"
  [[ $stderr == *"runfs export: 1 line in 1 run of 1 thread written to $WORK/out (some skipped, above)"* ]] || fail "$stderr"
  cmp "$WORK/df/threads/good/runs/r1.jsonl" "$WORK/out/threads/good/runs/r1.jsonl"
  [ ! -e "$WORK/out/threads/a" ]
}
