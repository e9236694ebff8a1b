# lib.bash — shared set-up for the bats suites: every test gets a private temp dir, a store
# and a real FUSE mount that is always unmounted in teardown; every wait is bounded.
# Use:  load lib   then   setup() { runfs_setup; }  teardown() { runfs_teardown; }

bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

RUNFS=${RUNFS:-$BATS_TEST_DIRNAME/../../build/runfs}

# A daemon built with a sanitizer (scripts/test runs suites with RUNFS=build-asan/runfs and
# build-tsan/runfs) has no stderr once in the background: its reports go to
# $WORK/sanitizer.PID, and teardown fails the test when one exists. The other builds ignore
# these variables.
sanitizer_env() {
  local log=$WORK/sanitizer
  echo "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$log:detect_leaks=1"
  echo "UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$log:print_stacktrace=1"
  echo "TSAN_OPTIONS=${TSAN_OPTIONS:+$TSAN_OPTIONS:}log_path=$log:second_deadlock_stack=1"
}

# sanitizer_reports: print every report a daemon of this test left; fail if there was one.
sanitizer_reports() {
  local f found=1
  for f in "$WORK"/sanitizer.*; do
    [ -e "$f" ] || continue
    found=0
    echo "# sanitizer report $f:"
    head -80 "$f"
  done
  [ "$found" -ne 0 ]
}

# runfs_workdir: a private $WORK with the paths $STORE and $MNT (an empty directory).
runfs_workdir() {
  WORK=$(mktemp -d "${RUNFS_TEST_ROOT:-${TMPDIR:-/tmp}}/runfs-bats.XXXXXX")
  STORE=$WORK/store.db
  MNT=$WORK/mnt
  MOUNTS=()
  mkdir -p "$MNT"
}

# runfs_setup [mount options...]: store $STORE mounted at $MNT (options after the defaults).
runfs_setup() {
  runfs_workdir
  runfs_mount "$STORE" "$MNT" "$@"
}

# runfs_mount STORE DIR [options...]: mount and wait (bounded) until it answers.
runfs_mount() {
  local store=$1 dir=$2; shift 2
  mkdir -p "$dir"
  local -a san
  mapfile -t san < <(sanitizer_env)
  env "${san[@]}" timeout 20 "$RUNFS" mount "$@" "$store" "$dir" || return 1
  MOUNTS+=("$dir")
  wait_for 10 test -f "$dir/README"
}

runfs_unmount() {
  local dir=$1
  fusermount3 -u "$dir" 2>/dev/null || fusermount3 -u -z "$dir" 2>/dev/null || true
  # The daemon exits after the unmount; give it a bounded moment to close the store.
  wait_for 10 bash -c "! pgrep -f 'runfs mount.* $dir\$' >/dev/null" || true
}

runfs_teardown() {
  local d clean=0
  for d in "${MOUNTS[@]}"; do
    runfs_unmount "$d"
  done
  [ -n "${WORK:-}" ] || return 0
  sanitizer_reports >&2 || clean=1
  rm -rf "$WORK"
  return "$clean"
}

# wait_for SECONDS COMMAND...: retry COMMAND every 50 ms until it succeeds or time runs out.
wait_for() {
  local secs=$1; shift
  local deadline=$(( $(date +%s%N) + secs * 1000000000 ))
  until "$@" 2>/dev/null; do
    [ "$(date +%s%N)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

# ev TYPE [JSON-fields]: a valid event line for common types, for appends.
ev_start() { printf '{"event_type":"run.start","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"}}\n'; }
ev_human() { printf '{"event_type":"llm.human.input","content":{"type":"human","content":"%s","id":"h-%s"},"metadata":{"caller":"lead_agent"}}\n' "${1:-hello}" "${2:-1}"; }
ev_ai() { printf '{"event_type":"llm.ai.response","content":{"type":"ai","content":"%s","id":"ai-%s","tool_calls":[]},"metadata":{"caller":"lead_agent","usage":{"total_tokens":3},"latency_ms":5,"llm_call_index":1}}\n' "${1:-hi}" "${2:-1}"; }
ev_error() { printf '{"event_type":"llm.error","content":"%s"}\n' "${1:-boom}"; }
ev_terminal() { printf '{"content":{"status":"%s"},"metadata":{"protocol_version":1,"recovered":false}}\n' "${1:-success}"; }
# For `bash -c` commands under `run` and `as`.
export -f ev_start ev_human ev_ai ev_error ev_terminal

# Byte-for-byte snapshot of the database's rows, to prove a refused write changed nothing.
store_snapshot() {
  sqlite3 "${1:-$STORE}" "SELECT id, thread_id, run_id, seq, event_type, category, content, event_metadata, created_at, user_id FROM run_events ORDER BY id; SELECT * FROM run_event_thread_seq ORDER BY thread_id;" | sha256sum
}

# Two unprivileged uids without passwd entries (setpriv needs none), for sandbox tests.
UID_A=61001
UID_B=61002

# as UID CMD: run the shell command CMD as an unprivileged uid (no supplementary groups).
as() {
  local uid=$1; shift
  setpriv --reuid="$uid" --regid="$uid" --clear-groups -- bash -c "$*"
}
