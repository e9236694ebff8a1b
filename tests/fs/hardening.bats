#!/usr/bin/env bats
# hardening.bats — issue 9's defects as regressions (items 3, 4, 5, 6, 8): read-only commands
# that never create or change a store, a store removed under the mount, bounded memory, the
# O_RDWR receipt as a stream, option and schema checks at mount, no host paths in scoped
# status. Every mount is real and unmounted in teardown; every wait is bounded.
load lib

setup() {
  runfs_setup
  RUN=$MNT/threads/t1/runs/r1
  mkdir -p "$RUN"
}

teardown() { runfs_teardown; }

daemon_pid() { pgrep -f "runfs mount.* $1\$" | head -n 1; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# ---- item 6: the read-back receipt is a stream ----

@test "receipt: exec 3<>events.jsonl; echo >&3; head -n 1 <&3 gives the stored record" {
  ev_start >> "$RUN/events.jsonl"
  run bash -c '
    exec 3<>"$1"
    printf "%s\n" "{\"event_type\":\"llm.error\",\"content\":\"first\"}" >&3
    head -n 1 <&3
    printf "%s\n" "{\"event_type\":\"llm.error\",\"content\":\"second\"}" >&3
    printf "%s\n" "{\"event_type\":\"llm.error\",\"content\":\"third\"}" >&3
    cat <&3' _ "$RUN/events.jsonl"
  assert_success
  assert_equal "${#lines[@]}" 3
  assert_equal "${lines[0]}" "$(sed -n 2p "$RUN/events.jsonl")"
  assert_equal "${lines[1]}" "$(sed -n 3p "$RUN/events.jsonl")"
  assert_equal "${lines[2]}" "$(sed -n 4p "$RUN/events.jsonl")"
  assert_line -n 0 --partial '"seq":2,"event_type":"llm.error","category":"trace","content":"first"'
}

@test "receipt: write then read on one O_RDWR handle without seeking, in small reads" {
  run python3 - "$RUN/events.jsonl" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.write(fd, b'{"event_type":"llm.error","content":"a"}\n{"event_type":"llm.error","content":"b"}\n')
data = b""
while True:
    chunk = os.read(fd, 7)   # reads continue where the last one ended, not at the offset
    if not chunk:
        break
    data += chunk
os.write(fd, b'{"event_type":"llm.error","content":"c"}\n')
data += os.read(fd, 65536)
os.close(fd)
sys.stdout.write(data.decode())
PY
  assert_success
  assert_equal "$output" "$(cat "$RUN/events.jsonl")"
  assert_equal "${#lines[@]}" 3
}

# ---- item 8: smaller ones ----

@test "--follow-timeout: nan, inf, 0, negative, overflowing and empty are refused at mount" {
  local bad=$WORK/bad v
  mkdir -p "$bad"
  MOUNTS+=("$bad")   # unmounted in teardown should one succeed
  for v in nan NaN inf -inf infinity 0 -1 1e400 '' 5x; do
    run timeout 20 "$RUNFS" mount --follow-timeout "$v" "$STORE" "$bad"
    assert_failure 2
    assert_output --partial "--follow-timeout"
    run grep -c " $bad fuse" /proc/mounts
    assert_output 0
  done
  runfs_mount "$STORE" "$bad" --follow-timeout 0.5
  run cat "$bad/.runfs/status.json"
  assert_output --partial '"follow_timeout":0.5'
}

@test "status.json: --thread and --user mounts show no host path" {
  local sb=$WORK/sb al=$WORK/al uid=$WORK/uid
  runfs_mount "$STORE" "$sb" --thread t1
  runfs_mount "$STORE" "$al" --user alice
  runfs_mount "$STORE" "$uid" --user-from-uid
  # A PostgreSQL URI keeps user, port and database; its socket directory is a host path.
  local m name='store.db' hidden=$WORK
  if on_pg; then
    hidden=$(sed -E 's/.*[?&]host=([^&]*).*/\1/' <<<"$STORE")
    name="postgresql://postgres@:$(sed -E 's/.*[?&]port=([^&]*).*/\1/' <<<"$STORE")/$PG_DB"
  fi
  for m in "$sb" "$al" "$uid"; do
    run cat "$m/.runfs/status.json"
    assert_success
    python3 -c 'import json,sys; json.loads(sys.argv[1])' "$output"
    assert_output --partial "\"database\":\"$name\""
    refute_output --partial "$WORK"
    refute_output --partial "$hidden"
    refute_output --partial '"mountpoint"'
  done
  # An unscoped mount is the host's own view: it says where things are.
  run cat "$MNT/.runfs/status.json"
  assert_output --partial "\"database\":\"$STORE\""
  assert_output --partial "\"mountpoint\":\"$MNT\""
}

# ---- item 5: memory ----

@test "receipt memory: 64 MiB through one O_RDWR handle grows the daemon by < 56 MiB (it keeps seq ranges)" {
  local pid before after
  pid=$(daemon_pid "$MNT")
  [ -n "$pid" ]
  ev_start >> "$RUN/events.jsonl"
  before=$(rss_kb "$pid")
  run python3 - "$RUN/events.jsonl" <<'PY'
import os, sys
line = b'{"event_type":"llm.error","content":"' + b"x" * 900 + b'"}\n'
chunk = line * (1024 * 1024 // len(line))
fd = os.open(sys.argv[1], os.O_RDWR)
for _ in range(int(os.environ.get("MIB", "64"))):
    os.write(fd, chunk)
n = 0
while True:
    b = os.read(fd, 1 << 20)
    if not b:
        break
    n += b.count(b"\n")
os.close(fd)
print(n)
PY
  assert_success
  after=$(rss_kb "$pid")
  echo "rss before ${before} kB after ${after} kB" >&3
  assert_equal "$output" "$(( $(wc -l < "$RUN/events.jsonl") - 1 ))"
  # Keeping the bytes (the old receipt) grows it by more than the 64 MiB written; libfuse's
  # worker threads, more of them on a busy machine, each hold a 1 MiB request buffer.
  [ $(( after - before )) -lt 57344 ] || fail "daemon RSS grew by $(( after - before )) kB"
}

# ---- item 3: commands that only read never create or change a store ----

# files_in DIR: the names in DIR, one line each.
files_in() { (cd "$1" && ls -A); }

@test "verify, cat and mount -o ro of a missing store: exit 2 (mount: refused), no file made" {
  local d=$WORK/empty
  mkdir -p "$d" "$d/../ro"
  run "$RUNFS" verify "$d/nope.db"
  assert_failure 2
  assert_output --partial "no store at $d/nope.db"
  run "$RUNFS" cat "$d/nope.db" threads/t1/events.jsonl
  assert_failure 2
  assert_output --partial "no store"
  run bash -c 'cd "$1" && "$2" verify --help' _ "$d" "$(realpath "$RUNFS")"
  MOUNTS+=("$WORK/ro")
  run timeout 20 "$RUNFS" mount -o ro "$d/nope.db" "$WORK/ro"
  assert_failure 2
  assert_output --partial "no store at"
  assert_equal "$(files_in "$d")" ""
  run grep -c " $WORK/ro fuse" /proc/mounts
  assert_output 0
}

@test "a DeerFlow file read by cat, verify and -o ro keeps its sha256 and gets no new file" {
  local d=$WORK/df ro=$WORK/ro
  mkdir -p "$d"
  cp "$BATS_TEST_DIRNAME/../data/deerflow-sample.db" "$d/df.db"
  cp "$d/df.db" "$WORK/copy.db"
  local before
  before=$(sha256sum < "$d/df.db")
  run "$RUNFS" cat "$d/df.db" threads/thread-a/events.jsonl
  assert_success
  local via_cat=$output
  assert_line -n 0 --partial '"thread_id":"thread-a","run_id":"run-1","seq":1,"event_type":"run.start"'
  # The same bytes as a read-write open that indexes the file in place.
  assert_equal "$via_cat" "$("$RUNFS" cat "$WORK/copy.db" threads/thread-a/events.jsonl)"
  run "$RUNFS" verify "$d/df.db"
  assert_success
  runfs_mount "$d/df.db" "$ro" -o ro
  assert_equal "$(cat "$ro/threads/thread-a/events.jsonl")" "$via_cat"
  assert_equal "$(stat -c %s "$ro/threads/thread-a/events.jsonl")" "$(( $(printf '%s\n' "$via_cat" | wc -c) ))"
  run ls "$ro/threads"
  assert_output "$(printf '%s\n' thread-a thread-b)"
  cat "$ro/threads/thread-a/history.jsonl" "$ro/threads/thread-b/events.jsonl" > /dev/null
  run bash -c 'echo "{\"event_type\":\"llm.error\",\"content\":\"x\"}" >> "$1"' _ "$ro/threads/thread-a/runs/run-1/events.jsonl"
  assert_failure
  assert_output --partial "Read-only file system"
  runfs_unmount "$ro"
  assert_equal "$(sha256sum < "$d/df.db")" "$before"
  assert_equal "$(files_in "$d")" "df.db"
}

@test "read-only opens of a runfs store with rows written since it was indexed: shown, not written" {
  skip_on_pg "a SQLite file indexed by another writer (sqlite3 edits it)"
  local ro=$WORK/ro
  ev_start >> "$RUN/events.jsonl"
  runfs_unmount "$MNT"
  # Another program (DeerFlow) adds a row behind runfs's back.
  sqlite3 "$STORE" "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t1', 'r1', NULL, 'llm.error', 'trace', 'late', '{}', 2, '2026-01-01 00:00:00');"
  local before
  before=$(sha256sum < "$STORE")
  local files
  mkdir -p "$ro"
  files=$(files_in "$WORK" | grep -v -e '-wal$' -e '-shm$')
  run "$RUNFS" cat "$STORE" threads/t1/runs/r1/events.jsonl
  assert_success
  assert_equal "${#lines[@]}" 2
  assert_line -n 1 --partial '"seq":2,"event_type":"llm.error","category":"trace","content":"late"'
  runfs_mount "$STORE" "$ro" -o ro
  run cat "$ro/threads/t1/runs/r1/events.jsonl"
  assert_equal "${#lines[@]}" 2
  assert_equal "$(stat -c %s "$ro/threads/t1/runs/r1/events.jsonl")" "$(cat "$ro/threads/t1/runs/r1/events.jsonl" | wc -c)"
  run "$RUNFS" verify "$STORE"
  assert_success
  runfs_unmount "$ro"
  # The database's bytes are as they were; beside it at most SQLite's own read-only
  # machinery: the WAL's index and an empty WAL (a reader of a live WAL file needs them).
  assert_equal "$(sha256sum < "$STORE")" "$before"
  assert_equal "$(files_in "$WORK" | grep -v -e '-wal$' -e '-shm$')" "$files"
  [ ! -s "$STORE-wal" ] || fail "the read-only opens left frames in the WAL"
}

# ---- item 4: the store removed or replaced under the mount ----

append_line() { printf '{"event_type":"llm.error","content":"%s"}\n' "$2" >> "$1"; }

@test "store removed under the mount: writes fail EIO with the reason, no new file appears" {
  skip_on_pg "the store file removed under the mount"
  append_line "$RUN/events.jsonl" kept
  rm "$STORE" "$STORE-wal" "$STORE-shm"
  run append_line "$RUN/events.jsonl" lost
  assert_failure
  assert_output --partial "Input/output error"
  run mkdir "$MNT/threads/t2"
  assert_failure
  # Many requests at once: new pool connections must not create the file either.
  local i
  for i in $(seq 20); do (append_line "$RUN/events.jsonl" "p$i" 2>/dev/null; cat "$RUN/events.jsonl" >/dev/null 2>&1) & done
  wait
  run tail -n 1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial '"errno":"EIO"'
  assert_output --partial "was removed under the mount"
  [ ! -e "$STORE" ] || fail "a new store file was created"
  [ ! -e "$STORE-wal" ] || fail "a new WAL was created"
}

@test "store replaced or truncated under the mount: writes fail EIO and never reach the new file" {
  skip_on_pg "the store file replaced or truncated under the mount"
  append_line "$RUN/events.jsonl" kept
  local other=$WORK/other.db
  "$RUNFS" put "$other" t9 r9 < <(append_line /dev/stdout x) > /dev/null
  local before
  before=$(sqlite3 "$other" "SELECT count(*) FROM run_events")
  mv "$other" "$STORE"
  run append_line "$RUN/events.jsonl" lost
  assert_failure
  assert_output --partial "Input/output error"
  run tail -n 1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial "was replaced under the mount"
  assert_equal "$(sqlite3 "$STORE" "SELECT count(*) FROM run_events")" "$before"
  : > "$STORE"
  run append_line "$RUN/events.jsonl" lost
  assert_failure
  assert_output --partial "Input/output error"
  assert_equal "$(stat -c %s "$STORE")" 0
}

# ---- item 8: an incompatible schema is refused at mount ----

@test "a renamed run_events column or a newer side-table layout is refused at mount with why" {
  skip_on_pg "sqlite3 edits of the store file"
  local bad=$WORK/bad.db m2=$WORK/m2
  MOUNTS+=("$m2")
  mkdir -p "$m2"
  sqlite3 "$bad" "CREATE TABLE run_events (id INTEGER PRIMARY KEY, thread_id TEXT, run_id TEXT, user_id TEXT, event_type TEXT, category TEXT, content TEXT, metadata JSON, seq INTEGER, created_at DATETIME);"
  local sum
  sum=$(sha256sum < "$bad")
  run timeout 20 "$RUNFS" mount "$bad" "$m2"
  assert_failure 2
  assert_output --partial "run_events has no column event_metadata"
  run "$RUNFS" cat "$bad" threads/t/events.jsonl
  assert_failure 2
  assert_output --partial "no column event_metadata"
  assert_equal "$(sha256sum < "$bad")" "$sum"

  append_line "$RUN/events.jsonl" x
  runfs_unmount "$MNT"
  sqlite3 "$STORE" "UPDATE runfs_meta SET value = 99 WHERE key = 'layout'"
  run timeout 20 "$RUNFS" mount "$STORE" "$m2"
  assert_failure
  assert_output --partial "layout 99"
  run grep -c " $m2 fuse" /proc/mounts
  assert_output 0
}

@test "partial lines: 1000 handles with 1 MiB unfinished each hit --max-pending (ENOBUFS), RSS < 128 MiB" {
  local pid
  pid=$(daemon_pid "$MNT")
  [ -n "$pid" ]
  run bash -c 'ulimit -n 4096; python3 - "$1" "$2" "$3"' _ "$RUN/events.jsonl" "$pid" 1000 <<'PY'
import errno, os, sys
path, pid, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
part = b'{"event_type":"llm.error","content":"' + b"y" * ((1 << 20) - 100)
fds, refused, peak = [], 0, 0
def rss():
    for l in open("/proc/%s/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
for i in range(n):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    fds.append(fd)
    try:
        os.write(fd, part)
    except OSError as e:
        if e.errno != errno.ENOBUFS:
            raise
        refused += 1
    if i % 50 == 0:
        peak = max(peak, rss())
peak = max(peak, rss())
for fd in fds:
    try:
        os.close(fd)
    except OSError:
        pass   # the leftover is not a whole event: refused at close
print(refused, peak)
PY
  assert_success
  local refused=${output% *} peak=${output#* }
  echo "refused $refused of 1000, daemon peak RSS $peak kB" >&3
  [ "$refused" -ge 900 ] || fail "only $refused writes refused"
  [ "$peak" -lt 131072 ] || fail "daemon RSS reached $peak kB"
  run grep -c '"errno":"ENOBUFS"' "$MNT/.runfs/rejects.jsonl"
  [ "$output" -ge 1 ]
  # The memory came back: a partial line across two writes commits.
  python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"{\"event_type\":\"llm.error\",\"con")
os.write(fd, b"tent\":\"ok\"}\n")
os.close(fd)' "$RUN/events.jsonl"
  run tail -n 1 "$RUN/events.jsonl"
  assert_output --partial '"content":"ok"'
}

@test "--max-pending: a smaller cap refuses sooner, bad values are refused at mount" {
  local m2=$WORK/m2
  MOUNTS+=("$m2")
  mkdir -p "$m2"
  local v
  for v in 0 -1 abc 10X ''; do
    run timeout 20 "$RUNFS" mount --max-pending "$v" "$STORE" "$m2"
    assert_failure 2
    assert_output --partial "--max-pending"
  done
  runfs_mount "$STORE" "$m2" --max-pending 64K
  run cat "$m2/.runfs/status.json"
  assert_output --partial '"max_pending":65536'
  run python3 - "$m2/threads/t1/runs/r1/events.jsonl" <<'PY'
import errno, os, sys
a = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
b = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(a, b'{"event_type":"llm.error","content":"' + b"a" * 40000)
try:
    os.write(b, b'{"event_type":"llm.error","content":"' + b"b" * 40000)
    print("accepted")
except OSError as e:
    print(errno.errorcode[e.errno])
os.write(a, b'"}\n')           # a's line ends: its bytes are freed
os.write(b, b'{"event_type":"llm.error","content":"' + b"c" * 40000)
os.write(b, b'"}\n')
os.close(a); os.close(b)
PY
  assert_success
  assert_output ENOBUFS
  run tail -n 2 "$m2/threads/t1/runs/r1/events.jsonl"
  assert_line -n 0 --partial '"content":"aaaa'
  assert_line -n 1 --partial '"content":"cccc'
  run tail -n 1 "$m2/.runfs/rejects.jsonl"
  assert_output --partial '"errno":"ENOBUFS"'
  assert_output --partial "max-pending"
}

# ---- item 8: --stamp-time ----

@test "--stamp-time: a line that gives created_at is EINVAL; the store's clock stamps the rest" {
  local sb=$WORK/sb
  runfs_mount "$STORE" "$sb" --thread t1 --stamp-time
  local E=$sb/threads/t1/runs/r1/events.jsonl
  run bash -c 'echo "{\"event_type\":\"llm.error\",\"content\":\"old\",\"created_at\":\"2001-01-01T00:00:00Z\"}" >> "$1"' _ "$E"
  assert_failure
  assert_output --partial "Invalid argument"
  run tail -n 1 "$sb/.runfs/rejects.jsonl"
  assert_output --partial '"errno":"EINVAL"'
  assert_output --partial "created_at is the store's to set on this mount (--stamp-time)"
  run bash -c '(set -C; echo "{\"content\":{\"status\":\"success\"},\"metadata\":{\"protocol_version\":1,\"recovered\":false},\"created_at\":\"2001-01-01T00:00:00Z\"}" > "$1")' _ "$sb/threads/t1/runs/r1/once/run.terminal"
  assert_failure
  echo '{"event_type":"llm.error","content":"now"}' >> "$E"
  run cat "$E"
  assert_equal "${#lines[@]}" 1
  local stamped
  stamped=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["created_at"])' "${lines[0]}")
  python3 -c 'import datetime,sys; d = datetime.datetime.fromisoformat(sys.argv[1]); n = datetime.datetime.now(datetime.timezone.utc); sys.exit(0 if abs((n - d).total_seconds()) < 120 else 1)' "$stamped"
  run cat "$sb/.runfs/status.json"
  assert_output --partial '"stamp_time":true'
  # Without the option a writer may still give its own time (DeerFlow's importers do).
  echo '{"event_type":"llm.error","content":"old","created_at":"2001-01-01T00:00:00Z"}' >> "$RUN/events.jsonl"
  run tail -n 1 "$RUN/events.jsonl"
  assert_output --partial '"created_at":"2001-01-01T00:00:00.000000+00:00"'
}
