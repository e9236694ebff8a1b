#!/usr/bin/env bats
# Many hosts, one database: two daemons on one store stand for two hosts. Writers on both
# mounts and a client writing with DeerFlow's own statements share threads; commits of one
# mount reach the other's followers; a daemon killed or the server restarted mid-load loses
# nothing acknowledged. Most of it is PostgreSQL's business (RUNFS_BACKEND=pg); the tests
# that hold for two mounts of one SQLite file run there too.

load lib

PY=$(python3 -c 'import sys; print(sys.executable)')
WRITER=$BATS_TEST_DIRNAME/writer.py

setup() {
  runfs_setup
  A=$MNT
  B=$WORK/mnt-b
  runfs_mount "$STORE" "$B"
  export -f ev_start ev_terminal
  PIDS=()
}

teardown() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  runfs_teardown
}

pg_only() { on_pg || skip "PostgreSQL only: $1"; }

daemon_pid() { pgrep -f "runfs mount.* $1\$" | head -1; }

# rows THREAD: count, distinct seqs, min and max seq of the thread's rows.
rows() { store_sql "SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM run_events WHERE thread_id = '$1'"; }

@test "8 writers on 2 mounts x 10,000 events into shared threads: nothing lost or doubled, seq strictly increasing" {
  local w t m
  for t in ta tb; do mkdir -p "$A/threads/$t/runs/r1"; done
  for w in 0 1 2 3 4 5 6 7; do
    m=$A; [ $((w % 2)) -eq 1 ] && m=$B
    t=ta; [ "$w" -ge 4 ] && t=tb
    "$PY" "$WRITER" "$m/threads/$t/runs/r1/events.jsonl" "w$w" 10000 50 &
    PIDS+=($!)
  done
  for w in "${PIDS[@]}"; do wait "$w" || fail "a writer failed"; done
  PIDS=()
  assert_equal "$(rows ta)" "40000|40000|1|40000"
  assert_equal "$(rows tb)" "40000|40000|1|40000"
  # Each writer's events stored in its own order, each once; both mounts show the same bytes.
  for w in 0 4 7; do
    t=ta; [ "$w" -ge 4 ] && t=tb
    run bash -c "grep -o '\"content\":\"w$w-[0-9]*\"' '$B/threads/$t/events.jsonl' | sed 's/.*-\([0-9]*\)\"/\1/' | sort -c -n -u && grep -c '\"w$w-' '$B/threads/$t/events.jsonl'"
    assert_success
    assert_output 10000
  done
  wait_for 10 bash -c "cmp -s '$A/threads/ta/events.jsonl' '$B/threads/ta/events.jsonl'"
  cmp "$A/threads/tb/events.jsonl" <("$RUNFS" cat "$STORE" threads/tb/events.jsonl)
  run bash -c "grep -o '\"seq\":[0-9]*' '$A/threads/ta/events.jsonl' | cut -d: -f2 | awk 'NR > 1 && \$1 != prev + 1 {bad = 1} {prev = \$1} END {exit bad}'"
  assert_success
}

# logs THREAD: the thread's byte logs as runfs keeps them (totals of the thread and each run,
# and every offset mark), without the times.
logs() {
  store_sql "SELECT t.size, t.count, t.messages, t.last_seq, t.mark_off, t.mixed, (SELECT string_agg(r.run_id || ':' || r.size || ':' || r.count || ':' || r.messages || ':' || r.last_seq || ':' || r.mark_off || ':' || r.mixed, ' ' ORDER BY r.run_id) FROM runfs_run r WHERE r.thread_key = t.thread_key), (SELECT string_agg(m.log_key || ':' || m.off || ':' || m.seq, ' ' ORDER BY m.log_key, m.off) FROM runfs_mark m WHERE m.log_key = -t.thread_key OR m.log_key IN (SELECT run_key FROM runfs_run r WHERE r.thread_key = t.thread_key)) FROM runfs_thread t WHERE t.thread_id = '$1'"
}

indexed() { [ "$(store_sql "SELECT dirty FROM runfs_thread WHERE thread_id = '$1'")" = 0 ]; }

@test "appends taking turns on 2 mounts into one run: the logs each keeps are the logs its rows give" {
  pg_only "the PostgreSQL backend guesses where the last append left a run"
  local w
  mkdir -p "$A/threads/tt/runs/r1" "$A/threads/tt/runs/r2"
  # One line per write on A, 7 per write on B, into the same run, and a second run: every
  # append of a mount follows one of the other's, so a guess is often stale.
  "$PY" "$WRITER" "$A/threads/tt/runs/r1/events.jsonl" a 3000 1 &
  PIDS+=($!)
  "$PY" "$WRITER" "$B/threads/tt/runs/r1/events.jsonl" b 2100 7 &
  PIDS+=($!)
  "$PY" "$WRITER" "$B/threads/tt/runs/r2/events.jsonl" c 1000 1 &
  PIDS+=($!)
  for w in "${PIDS[@]}"; do wait "$w" || fail "a writer failed"; done
  PIDS=()
  assert_equal "$(rows tt)" "6100|6100|1|6100"
  local kept; kept=$(logs tt)
  # What the logs would be if built from the rows alone: runfs rebuilds them when another
  # writer deleted rows (dirty = 1), here at the next probe.
  store_sql "UPDATE runfs_thread SET dirty = 1 WHERE thread_id = 'tt'" >/dev/null
  wait_for 10 indexed tt
  assert_equal "$(logs tt)" "$kept"
  [ "$(stat -c %s "$A/threads/tt/events.jsonl")" -eq "$(wc -c < "$B/threads/tt/events.jsonl")" ]
  cmp "$A/threads/tt/runs/r1/events.jsonl" <("$RUNFS" cat "$STORE" threads/tt/runs/r1/events.jsonl)
}

@test "follow.jsonl and tail -f on mount A see an append made on mount B" {
  local R=runs/r1
  mkdir -p "$A/threads/t1/$R"
  ev_start >> "$A/threads/t1/$R/events.jsonl"
  timeout 20 cat "$A/threads/t1/$R/follow.jsonl" > "$WORK/follow.out" &
  PIDS+=($!)
  timeout 20 tail -n +1 -f "$A/threads/t1/$R/events.jsonl" > "$WORK/tail.out" &
  PIDS+=($!)
  wait_for 5 grep -q run.start "$WORK/follow.out"
  wait_for 5 grep -q run.start "$WORK/tail.out"
  printf '{"event_type":"llm.error","content":"from B"}\n' >> "$B/threads/t1/$R/events.jsonl"
  wait_for 5 grep -q '"from B"' "$WORK/follow.out" || fail "follow.jsonl on A did not see B's append"
  wait_for 5 grep -q '"from B"' "$WORK/tail.out" || fail "tail -f on A did not see B's append"
  # The terminal written on B ends A's feed.
  (set -C; ev_terminal > "$B/threads/t1/$R/once/run.terminal")
  wait "${PIDS[0]}"
  assert_equal "$(grep -c . "$WORK/follow.out")" 3
}

@test "exclusive creates of once/run.terminal racing on both mounts: exactly one wins" {
  local i wins
  for i in $(seq 1 12); do
    mkdir -p "$A/threads/t1/runs/r$i"
    bash -c "set -C; ev_terminal success > '$A/threads/t1/runs/r$i/once/run.terminal'" 2>/dev/null &
    local pa=$!
    bash -c "set -C; ev_terminal error > '$B/threads/t1/runs/r$i/once/run.terminal'" 2>/dev/null &
    local pb=$!
    wins=0
    wait "$pa" && wins=$((wins + 1))
    wait "$pb" && wins=$((wins + 1))
    assert_equal "$wins" 1
    assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE run_id = 'r$i' AND event_type = 'run.terminal'")" 1
  done
}

@test "a client writing with DeerFlow's statements while both mounts append: all see every row" {
  pg_only "DeerFlow's advisory lock is PostgreSQL's"
  mkdir -p "$A/threads/td/runs/r1"
  # DeerFlow's put: the advisory lock first, then MAX(seq) + 1, content as text with markers.
  local i sql=$WORK/deerflow.sql
  for i in $(seq 1 300); do
    cat <<SQL
BEGIN;
SELECT pg_advisory_xact_lock(hashtext(CAST('td' AS text))::bigint);
INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
  SELECT 'td', 'r-df', NULL, 'llm.error', 'trace', '{"df":$i}', '{"content_is_json": true, "content_is_dict": true}',
         coalesce(max(seq), 0) + 1, now() FROM run_events WHERE thread_id = 'td';
COMMIT;
SQL
  done > "$sql"
  PGTZ=UTC psql -X -q -v ON_ERROR_STOP=1 -d "$STORE" -f "$sql" > "$WORK/df.out" 2>&1 &
  local df=$!
  "$PY" "$WRITER" "$A/threads/td/runs/r1/events.jsonl" a 300 1 &
  local wa=$!
  "$PY" "$WRITER" "$B/threads/td/runs/r1/events.jsonl" b 300 1 &
  local wb=$!
  wait "$wa" || fail "the writer on A failed: $(tail -n 2 "$A/.runfs/rejects.jsonl")"
  wait "$wb" || fail "the writer on B failed: $(tail -n 2 "$B/.runfs/rejects.jsonl")"
  wait "$df" || fail "DeerFlow's client failed: $(cat "$WORK/df.out")"
  assert_equal "$(rows td)" "900|900|1|900"
  # Both mounts index DeerFlow's rows (found without a notification) and show all 900.
  wait_for 10 bash -c "[ \$(grep -c . '$A/threads/td/events.jsonl') = 900 ] && [ \$(grep -c . '$B/threads/td/events.jsonl') = 900 ]"
  cmp "$A/threads/td/events.jsonl" "$B/threads/td/events.jsonl"
  cmp "$A/threads/td/events.jsonl" <("$RUNFS" cat "$STORE" threads/td/events.jsonl)
  # DeerFlow's markers are read: its content is shown as the object it stored.
  run grep -c '"content":{"df":' "$A/threads/td/runs/r-df/events.jsonl"
  assert_output 300
  assert_equal "$(stat -c %s "$B/threads/td/runs/r-df/events.jsonl")" "$(wc -c < "$B/threads/td/runs/r-df/events.jsonl")"
}

@test "kill -9 of one daemon mid-write: the other keeps working; remount; nothing acknowledged lost" {
  mkdir -p "$A/threads/tk/runs/r1"
  "$PY" "$WRITER" --acks "$WORK/acks-a" "$A/threads/tk/runs/r1/events.jsonl" a 100000 &
  local wa=$!
  "$PY" "$WRITER" --acks "$WORK/acks-b" --until "$WORK/stop" "$B/threads/tk/runs/r1/events.jsonl" b 100000 &
  local wb=$!
  PIDS+=("$wa" "$wb")
  wait_for 10 bash -c "[ \$(wc -l < '$WORK/acks-a') -ge 50 ]"
  local pid
  pid=$(daemon_pid "$A")
  kill -9 "$pid"
  wait "$wa" || true
  grep -qxE 'ENOTCONN|ECONNABORTED' "$WORK/acks-a.err" || fail "the writer on A did not see its mount go"
  local before
  before=$(wc -l < "$WORK/acks-b")
  wait_for 10 bash -c "[ \$(wc -l < '$WORK/acks-b') -gt $((before + 20)) ]" || fail "B stopped working"
  touch "$WORK/stop"
  wait "$wb"
  [ ! -s "$WORK/acks-b.err" ] || fail "B's writes failed: $(sort "$WORK/acks-b.err" | uniq -c)"
  fusermount3 -u -z "$A" 2>/dev/null || true
  run timeout 20 "$RUNFS" mount "$STORE" "$A"
  assert_success
  wait_for 10 test -f "$A/README"
  local f
  for f in acks-a acks-b; do
    run bash -c "sort '$WORK/$f' | comm -23 - <(grep -o '\"content\":\"[ab]-[0-9]*\"' '$A/threads/tk/events.jsonl' | cut -d'\"' -f4 | sort)"
    assert_output ""
  done
  assert_equal "$(rows tk | cut -d'|' -f1-2 | tr '|' ' ' | awk '{print ($1 == $2)}')" 1
}

@test "the PostgreSQL server restarts mid-load: EIO while it is down, success after, no remount, nothing acknowledged lost" {
  pg_only "the server's restart"
  [ -n "${RUNFS_PG_DIR:-}" ] || skip "needs scripts/test's cluster (RUNFS_PG_DIR)"
  mkdir -p "$A/threads/tr/runs/r1"
  "$PY" "$WRITER" --acks "$WORK/acks" --until "$WORK/stop" "$A/threads/tr/runs/r1/events.jsonl" a 1000000 &
  local wa=$!
  PIDS+=("$wa")
  wait_for 10 bash -c "[ \$(wc -l < '$WORK/acks') -ge 20 ]"
  bash "$BATS_TEST_DIRNAME/../../scripts/pg-cluster" down "$RUNFS_PG_DIR"
  run bash -c "ev_start >> '$B/threads/tr/runs/r1/events.jsonl'"
  local down_status=$status down_output=$output
  bash "$BATS_TEST_DIRNAME/../../scripts/pg-cluster" up "$RUNFS_PG_DIR"
  [ "$down_status" -ne 0 ] || fail "a write succeeded while the server was down"
  [[ "$down_output" == *"Input/output error"* ]] || fail "not EIO while down: $down_output"
  tail -n 1 "$B/.runfs/rejects.jsonl" | grep -q '"errno":"EIO"'
  # Back up: both mounts write again, no remount.
  wait_for 15 bash -c "ev_start >> '$B/threads/tr/runs/r1/events.jsonl'" || fail "B never recovered"
  local n
  n=$(wc -l < "$WORK/acks")
  wait_for 15 bash -c "[ \$(wc -l < '$WORK/acks') -gt $((n + 20)) ]" || fail "A never recovered"
  touch "$WORK/stop"
  wait "$wa"
  grep -qx EIO "$WORK/acks.err" || fail "the writer on A saw no EIO: $(sort "$WORK/acks.err" | uniq -c)"
  run bash -c "sort '$WORK/acks' | comm -23 - <(grep -o '\"content\":\"a-[0-9]*\"' '$A/threads/tr/events.jsonl' | cut -d'\"' -f4 | sort)"
  assert_output ""
  assert_equal "$(grep -c '"run.start"' "$A/threads/tr/events.jsonl")" 1
}

@test "hostile URIs: bad host, bad credentials, no such database, no right to create tables: a clear error, exit 2" {
  pg_only "URIs"
  local mnt=$WORK/mnt-h
  mkdir -p "$mnt"
  local base=${RUNFS_PG_URI%%\?*} q=${RUNFS_PG_URI#*\?}
  run timeout 30 "$RUNFS" mount "postgresql://no-such-host.invalid/db?connect_timeout=3" "$mnt"
  assert_failure 2
  assert_output --partial "cannot connect to postgresql://no-such-host.invalid/db"
  run timeout 30 "$RUNFS" mount "${base}?${q/user=postgres/user=nobody_here}" "$mnt"
  assert_failure 2
  assert_output --partial 'role "nobody_here" does not exist'
  run timeout 30 "$RUNFS" mount "$(pg_uri no_such_db_x)" "$mnt"
  assert_failure 2
  assert_output --partial 'database "no_such_db_x" does not exist'
  pg_admin "DROP ROLE IF EXISTS runfs_weak" >/dev/null
  pg_admin "CREATE ROLE runfs_weak LOGIN" >/dev/null
  local weak_db=${PG_DB}_weak
  pg_admin "CREATE DATABASE $weak_db" >/dev/null
  local weak
  weak=$(pg_uri "$weak_db" | sed 's/user=postgres/user=runfs_weak/')
  run timeout 30 "$RUNFS" mount "$weak" "$mnt"
  pg_admin "DROP DATABASE $weak_db WITH (FORCE)" >/dev/null
  pg_admin "DROP ROLE runfs_weak" >/dev/null
  assert_failure 2
  assert_output --partial "cannot set up the runfs tables"
  assert_output --partial "permission denied"
  run grep -c " $mnt fuse" /proc/mounts
  assert_output 0
}
