#!/usr/bin/env bats
# glance.bats — a run at a glance: stats.json (runs and threads), timeline.svg and otel.json
# of DeerFlow-shaped runs, each against a reference glance.py computes from the run's
# events.jsonl by DESIGN's rules; the SVG checked by xmllint and drawn by headless Chromium,
# the OTLP/JSON read by OpenTelemetry's own JavaScript implementation (from the npm registry).
load lib

G=$BATS_TEST_DIRNAME/glance.py
SAMPLE=$BATS_TEST_DIRNAME/../data/deerflow-sample.db
T=threads/th
OTLP_PKG=@opentelemetry/otlp-transformer@0.57.2

setup_file() {
  # OpenTelemetry's JavaScript packages, once for the file, into a temp dir (not the tree).
  export OTLP_DIR=$BATS_FILE_TMPDIR/otlp
  mkdir -p "$OTLP_DIR"
  if command -v npm >/dev/null &&
    (cd "$OTLP_DIR" && timeout 180 npm install --no-audit --no-fund --loglevel=error "$OTLP_PKG" >npm.log 2>&1); then
    touch "$OTLP_DIR/ok"
  fi
}

setup() {
  runfs_setup
  python3 "$G" runs "$WORK"
  mkdir -p "$MNT/$T/runs/par" "$MNT/$T/runs/tasks" "$MNT/$T/runs/empty"
  cat "$WORK/par.jsonl" >> "$MNT/$T/runs/par/events.jsonl"
  cat "$WORK/tasks.jsonl" >> "$MNT/$T/runs/tasks/events.jsonl"
  (set -C; cat "$WORK/par.terminal" > "$MNT/$T/runs/par/once/run.terminal")
  (set -C; cat "$WORK/tasks.terminal" > "$MNT/$T/runs/tasks/once/run.terminal")
  # par is sealed, then gets one more event: uncovered by its seal.
  (set -C; : > "$MNT/$T/runs/par/seal.json")
  echo '{"event_type":"llm.error","content":"late","created_at":"2026-05-01T10:00:12.000000+00:00"}' >> "$MNT/$T/runs/par/events.jsonl"
}
teardown() { runfs_teardown; }

# DeerFlow's sample, mounted at $WORK/df (on PostgreSQL in DeerFlow's own table, as
# deerflow.bats builds it): DF is its mount.
mount_sample() {
  local store=$WORK/df.db
  cp "$SAMPLE" "$store"
  if on_pg; then
    local db=${PG_DB}_df
    pg_admin "CREATE DATABASE $db" >/dev/null
    store=$(pg_uri "$db")
    store_sql "$(cat "$BATS_TEST_DIRNAME/../data/deerflow-schema-postgresql.sql")" "$store"
    sqlite3 -csv "$WORK/df.db" "SELECT id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at FROM run_events ORDER BY id" |
      PGTZ=UTC psql -X -q -v ON_ERROR_STOP=1 -d "$store" -c "\copy run_events (id, thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) FROM STDIN WITH (FORMAT csv)"
  fi
  DF_STORE=$store
  DF=$WORK/df
  runfs_mount "$store" "$DF"
}
teardown_sample() {
  if on_pg; then pg_admin "DROP DATABASE IF EXISTS ${PG_DB}_df WITH (FORCE)" >/dev/null || true; fi
}

# check_run MNT STORE T R: the run's stats.json equals the reference made from its
# events.jsonl (as `runfs cat` prints it) and its seal.json; each view's st_size is the bytes
# a read gives, and `runfs cat` gives the same bytes as the mount.
check_run() {
  local m=$1 store=$2 t=$3 r=$4 v out=$WORK/$4
  local d=$m/threads/$t/runs/$r
  "$RUNFS" cat "$store" "threads/$t/runs/$r/events.jsonl" > "$out.events"
  local seal=-
  if [ -e "$d/seal.json" ]; then cp "$d/seal.json" "$out.seal"; seal=$out.seal; fi
  python3 "$G" stats "$out.events" "$seal" --ids "$t" "$r" > "$out.ref"
  for v in stats.json timeline.svg otel.json; do
    cat "$d/$v" > "$out.$v"
    [ "$(stat -c %s "$d/$v")" -eq "$(wc -c < "$out.$v")" ] || { echo "$r/$v: st_size $(stat -c %s "$d/$v") but $(wc -c < "$out.$v") bytes read"; return 1; }
    "$RUNFS" cat "$store" "threads/$t/runs/$r/$v" | cmp - "$out.$v" || { echo "$r/$v: runfs cat and the mount differ"; return 1; }
  done
  python3 "$G" same-stats "$out.ref" "$out.stats.json"
}

# check_thread MNT STORE T: the thread's stats.json is the sum of its runs' and equals the
# reference made from the thread's events.jsonl (runs with no rows named by the listing).
check_thread() {
  local m=$1 store=$2 t=$3 r seals='{' runs=()
  for r in $(ls "$m/threads/$t/runs"); do
    runs+=("$WORK/$r.stats.json")
    [ ! -e "$WORK/$r.seal" ] || seals="$seals${seals#\{}\"$r\":$(cat "$WORK/$r.seal"),"
  done
  seals="${seals%,}}"
  cat "$m/threads/$t/stats.json" > "$WORK/thread.stats"
  [ "$(stat -c %s "$m/threads/$t/stats.json")" -eq "$(wc -c < "$WORK/thread.stats")" ]
  "$RUNFS" cat "$store" "threads/$t/stats.json" | cmp - "$WORK/thread.stats"
  python3 "$G" thread-sum "$WORK/thread.stats" "${runs[@]}"
  "$RUNFS" cat "$store" "threads/$t/events.jsonl" > "$WORK/thread.events"
  python3 "$G" stats "$WORK/thread.events" "$seals" --thread --runs "$(ls "$m/threads/$t/runs" | paste -sd,)" > "$WORK/thread.ref"
  python3 "$G" same-stats "$WORK/thread.ref" "$WORK/thread.stats"
}

@test "stats.json: parallel calls, error and orphan results, unanswered calls, tasks of every status, odd usage" {
  run ls "$MNT/$T/runs/par"
  assert_line stats.json
  assert_line timeline.svg
  assert_line otel.json
  run ls "$MNT/$T"
  assert_line stats.json
  for r in par tasks empty; do check_run "$MNT" "$STORE" th "$r"; done
  check_thread "$MNT" "$STORE" th
  # What the reference says, spelled out where a wrong rule would hide in both.
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["tool_calls"]["unanswered"], d["gaps"], d["seal"], d["model_calls"]["usage"])' "$WORK/par.stats.json"
  assert_output "['call-d', None, 'call-e'] {'no_terminal': False, 'unanswered_tool_calls': 3, 'uncovered_by_seal': 1} sealed {'input_tokens': 103, 'output_tokens': 31, 'total_tokens': 136}"
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sorted(d["subagents"]["by_status"].items()), d["status"])' "$WORK/tasks.stats.json"
  assert_output "[('cancelled', 1), ('completed', 2), ('failed', 1), ('timed_out', 1), ('unfinished', 1)] error"
}

@test "stats.json of DeerFlow's sample (no run.terminal, a subagent task, usage) matches the reference" {
  mount_sample
  for r in run-1 run-2; do check_run "$DF" "$DF_STORE" thread-a "$r"; done
  check_thread "$DF" "$DF_STORE" thread-a
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["statuses"], d["gaps"]["no_terminal"], d["model_calls"]["count"])' "$WORK/thread.stats"
  assert_output "{'null': 2} 2 4"
  teardown_sample
}

@test "timeline.svg: valid, self-contained XML whose elements are the reference's, drawn by Chromium" {
  command -v xmllint >/dev/null || fail "xmllint is missing: scripts/setup installs libxml2-utils"
  for r in par tasks empty; do
    xmllint --noout "$MNT/$T/runs/$r/timeline.svg"
    "$RUNFS" cat "$STORE" "$T/runs/$r/events.jsonl" > "$WORK/$r.events"
    python3 "$G" svg "$WORK/$r.events" "$MNT/$T/runs/$r/timeline.svg"
  done
  mount_sample
  xmllint --noout "$DF/threads/thread-a/runs/run-1/timeline.svg"
  "$RUNFS" cat "$DF_STORE" threads/thread-a/runs/run-1/events.jsonl > "$WORK/df.events"
  python3 "$G" svg "$WORK/df.events" "$DF/threads/thread-a/runs/run-1/timeline.svg"
  teardown_sample
  command -v chromium >/dev/null || fail "chromium is missing: scripts/setup installs it"
  # Straight from the mount, as a person opens it.
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$WORK/chrome" --window-size=1200,500 --screenshot="$WORK/par.png" \
    "file://$MNT/$T/runs/par/timeline.svg" >/dev/null 2>&1
  python3 "$G" png "$WORK/par.png"
}

@test "a large run: stats.json matches, timeline.svg is an overview whose windows hold every element" {
  python3 "$G" big "$WORK/big.jsonl" 3000
  mkdir -p "$MNT/$T/runs/big"
  cat "$WORK/big.jsonl" >> "$MNT/$T/runs/big/events.jsonl"
  check_run "$MNT" "$STORE" th big
  run python3 "$G" svg "$WORK/big.events" "$WORK/big.timeline.svg"
  assert_success
  assert_output "overview 3"
  xmllint --noout "$WORK/big.timeline.svg"
  d=$MNT/$T/runs/big/timeline
  run ls "$d"
  assert_output "$(printf '1.svg\ncount')"
  [ "$(cat "$d/count")" = 3 ]
  mkdir "$WORK/win"
  for n in 1 2 3; do
    cat "$d/$n.svg" > "$WORK/win/$n.svg"
    xmllint --noout "$WORK/win/$n.svg"
    "$RUNFS" cat "$STORE" "$T/runs/big/timeline/$n.svg" | cmp - "$WORK/win/$n.svg"
  done
  run python3 "$G" windows "$WORK/big.events" "$WORK/win" 3
  assert_success
  assert_output "3 6000"
  run cat "$d/4.svg"
  assert_failure
  # A run that fits is its own one window.
  [ "$(cat "$MNT/$T/runs/par/timeline/count")" = 1 ]
  cmp "$MNT/$T/runs/par/timeline/1.svg" "$MNT/$T/runs/par/timeline.svg"
}

@test "otel parts: complete requests within the limits that hold the run's spans, its errors and middleware, the service named" {
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT" --service-name checkout-agent
  python3 "$G" big "$WORK/big.jsonl" 12000
  mkdir -p "$MNT/$T/runs/big"
  cat "$WORK/big.jsonl" >> "$MNT/$T/runs/big/events.jsonl"
  ev_error "late trouble" >> "$MNT/$T/runs/big/events.jsonl"
  for r in par tasks big; do
    d=$MNT/$T/runs/$r
    run ls "$d/otel"
    assert_output "$(printf '1.json\ncount')"
    n=$(cat "$d/otel/count")
    parts=()
    for i in $(seq 1 "$n"); do
      cat "$d/otel/$i.json" > "$WORK/$r.$i.json"
      [ "$(stat -c %s "$d/otel/$i.json")" -eq "$(wc -c < "$WORK/$r.$i.json")" ]
      [ "$(wc -c < "$WORK/$r.$i.json")" -le 4194304 ] || fail "otel/$i.json of $r is over 4 MiB"
      "$RUNFS" cat "$STORE" "$T/runs/$r/otel/$i.json" --service-name checkout-agent | cmp - "$WORK/$r.$i.json"
      parts+=("$WORK/$r.$i.json")
    done
    run cat "$d/otel/$((n + 1)).json"
    assert_failure
    "$RUNFS" cat "$STORE" "$T/runs/$r/events.jsonl" > "$WORK/$r.events"
    python3 "$G" otel-parts "$WORK/$r.events" checkout-agent "${parts[@]}"
    [ "$n" -gt 1 ] || cmp "$d/otel.json" "$WORK/$r.1.json" || fail "otel/1.json of $r is not its otel.json"
    if [ -e "$OTLP_DIR/ok" ]; then
      for p in "${parts[@]}"; do NODE_PATH=$OTLP_DIR/node_modules node "$BATS_TEST_DIRNAME/otlp-decode.js" "$p" "$p.decoded"; done
    fi
  done
  [ "$(cat "$MNT/$T/runs/big/otel/count")" -ge 3 ] || fail "24,000 spans fit in fewer than three parts"
  # The resource names the agent that started the run; runfs cat names the service it is told.
  run python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["resourceSpans"][0]["resource"]; print(r)' "$WORK/par.1.json"
  assert_output "{'attributes': [{'key': 'service.name', 'value': {'stringValue': 'checkout-agent'}}, {'key': 'gen_ai.agent.name', 'value': {'stringValue': 'lead_agent'}}]}"
  run bash -c "'$RUNFS' cat '$STORE' $T/runs/par/otel.json | grep -o '\"service.name\",\"value\":{\"stringValue\":\"[a-z-]*\"'"
  assert_output '"service.name","value":{"stringValue":"runfs"'
}

@test "otel.json is read by OpenTelemetry's JavaScript implementation: span tree, names, attributes, times" {
  if [ ! -e "$OTLP_DIR/ok" ]; then
    if ! timeout 30 npm view "$OTLP_PKG" version >/dev/null 2>&1; then
      skip "the npm registry is unreachable: cannot install $OTLP_PKG"
    fi
    cat "$OTLP_DIR/npm.log" >&2
    fail "npm install $OTLP_PKG failed though the registry answers"
  fi
  for r in par tasks; do
    "$RUNFS" cat "$STORE" "$T/runs/$r/events.jsonl" > "$WORK/$r.events"
    NODE_PATH=$OTLP_DIR/node_modules node "$BATS_TEST_DIRNAME/otlp-decode.js" "$MNT/$T/runs/$r/otel.json" "$WORK/$r.decoded"
    python3 "$G" otel "$WORK/$r.events" "$WORK/$r.decoded"
    # Derived ids, not random: the same bytes every time, from the mount and runfs cat.
    "$RUNFS" cat "$STORE" "$T/runs/$r/otel.json" | cmp - "$MNT/$T/runs/$r/otel.json"
  done
  mount_sample
  "$RUNFS" cat "$DF_STORE" threads/thread-a/runs/run-2/events.jsonl > "$WORK/df.events"
  NODE_PATH=$OTLP_DIR/node_modules node "$BATS_TEST_DIRNAME/otlp-decode.js" "$DF/threads/thread-a/runs/run-2/otel.json" "$WORK/df.decoded"
  python3 "$G" otel "$WORK/df.events" "$WORK/df.decoded"
  teardown_sample
}

@test "otel.json read at any offset, backwards, gives the bytes of the whole file there" {
  python3 "$G" big "$WORK/big.jsonl" 6000
  mkdir -p "$MNT/$T/runs/big"
  cat "$WORK/big.jsonl" >> "$MNT/$T/runs/big/events.jsonl"
  "$RUNFS" cat "$STORE" "$T/runs/big/otel.json" > "$WORK/otel.ref"
  [ "$(wc -c < "$WORK/otel.ref")" -gt 3000000 ] || fail "the run's otel.json is too small to hold kept positions"
  # A fresh mount: nothing of the run cached by the kernel; each read lands behind the last,
  # so the daemon renders from a kept position (or, wrongly placed, shows other bytes).
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  run python3 - "$MNT/$T/runs/big/otel.json" "$WORK/otel.ref" <<'PY'
import os, sys
ref = open(sys.argv[2], "rb").read()
fd = os.open(sys.argv[1], os.O_RDONLY)
assert os.fstat(fd).st_size == len(ref), "st_size is not the file's length"
for off in sorted({len(ref) - 1, len(ref) - 5000, 2_500_001, 1_048_577, 1_048_575, 777, 0} |
                  set(range(len(ref) - 1, 0, -len(ref) // 13)), reverse=True):
    got = os.pread(fd, 4096, off)
    assert got == ref[off:off + 4096], f"bytes at {off} differ from the whole file's"
print("ok")
PY
  assert_success
  assert_output "ok"
}

@test "the views follow their run: an append changes stats.json, timeline.svg and otel.json at once" {
  d=$MNT/$T/runs/tasks
  for v in stats.json timeline.svg otel.json; do cat "$d/$v" > "$WORK/before.$v"; done
  cat "$MNT/$T/stats.json" > "$WORK/before.thread"
  ev_error "late trouble" >> "$d/events.jsonl"
  check_run "$MNT" "$STORE" th tasks
  for v in stats.json timeline.svg otel.json; do
    ! cmp -s "$WORK/before.$v" "$WORK/tasks.$v" || fail "$v did not change after an append"
  done
  run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["errors"])' "$WORK/tasks.stats.json"
  assert_output "{'run.error': 1, 'llm.error': 1}"
  ! cmp -s "$WORK/before.thread" "$MNT/$T/stats.json" || fail "the thread's stats.json did not change"
}

@test "otel.json kept in the kernel's cache is dropped when its run changes" {
  d=$MNT/$T/runs/tasks
  # The run is quiet (its events are months old): its otel.json is rendered once, at the
  # stat, into the kernel's cache; a second read comes from there.
  cat "$d/otel.json" > "$WORK/first"
  cat "$d/otel.json" | cmp - "$WORK/first"
  echo '{"event_type":"subagent.start","content":{"task_id":"t9","description":"late"},"metadata":{"task_id":"t9"},"created_at":"2026-05-01T10:00:40.000000+00:00"}' >> "$d/events.jsonl"
  "$RUNFS" cat "$STORE" "$T/runs/tasks/otel.json" > "$WORK/fresh"
  ! cmp -s "$WORK/first" "$WORK/fresh" || fail "the new task did not change otel.json"
  cmp "$d/otel.json" "$WORK/fresh" || fail "the mount still shows the otel.json of before the append"
  [ "$(stat -c %s "$d/otel.json")" -eq "$(wc -c < "$WORK/fresh")" ]
}

@test "stats.json read before a seal shows the seal after it, in the run and the thread" {
  d=$MNT/$T/runs/tasks
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["seal"], d["gaps"]["uncovered_by_seal"])' "$d/stats.json"
  assert_output "None None"
  cat "$MNT/$T/stats.json" > /dev/null
  (set -C; : > "$d/seal.json")
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["seal"], d["gaps"]["uncovered_by_seal"])' "$d/stats.json"
  assert_output "sealed 0"
  # par's seal leaves one event uncovered; tasks' none.
  run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gaps"]["uncovered_by_seal"])' "$MNT/$T/stats.json"
  assert_output 1
  check_run "$MNT" "$STORE" th tasks
}
