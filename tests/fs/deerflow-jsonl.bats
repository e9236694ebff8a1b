#!/usr/bin/env bats
# deerflow-jsonl.bats — runfs import/export of DeerFlow's JSONL store folder: DeerFlow's own
# sample and a folder written with DeerFlow's json.dumps call round-trip byte for byte; bad
# input stops the thread concerned with FILE:LINE and exit 2, the store unchanged for it.
load lib
bats_require_minimum_version 1.5.0

SAMPLE=$BATS_TEST_DIRNAME/../data/deerflow-jsonl

setup() { RUNFS_PG_TEMPLATE= runfs_workdir; }  # on PostgreSQL an empty database: no tables yet
teardown() { [ -z "${WORK:-}" ] || runfs_teardown; }

# store_absent: runfs set nothing up in $STORE (no file; on PostgreSQL, no tables).
store_absent() {
  if on_pg; then [ "$(store_sql "SELECT to_regclass('run_events') IS NULL")" = t ]; else [ ! -e "$STORE" ]; fi
}
# store_state: a digest of everything in $STORE (the files; on PostgreSQL, the rows).
store_state() { if on_pg; then store_snapshot; else sha256sum "$STORE"*; fi; }

# A DeerFlow base folder written the way JsonlRunEventStore writes (jsonl.py: json.dumps with
# default=str, ensure_ascii=False, keys thread_id, run_id, event_type, category, content,
# metadata, seq, created_at; created_at from datetime.isoformat() in UTC).
python_folder() {
  python3 - "$1" <<'PY'
import json, os, sys
from datetime import datetime, timezone, timedelta
base = sys.argv[1]
t0 = datetime(2026, 3, 4, 5, 6, 7, 0, tzinfo=timezone.utc)
def rec(th, run, seq, et, cat, content, meta, dt):
    return {"thread_id": th, "run_id": run, "event_type": et, "category": cat,
            "content": content, "metadata": meta, "seq": seq, "created_at": dt.isoformat()}
rows = {
  ("t-1", "r-1"): [
    rec("t-1", "r-1", 1, "run.start", "trace", {"chain": "lead_agent"}, {"caller": "lead_agent"}, t0),
    rec("t-1", "r-1", 2, "llm.human.input", "message",
        {"type": "human", "content": "h\u00e9llo \u2028 \"quoted\" \\ tab\t nl\n ctl\x01 \U0001F600", "id": "h1"},
        {"caller": "lead_agent"}, t0 + timedelta(microseconds=1)),
    rec("t-1", "r-1", 3, "llm.ai.response", "message",
        {"type": "ai", "content": "", "id": "a1", "tool_calls": [], "extra": {"empty": {}, "list": [1, 2.5, 1e-05, -0.0, 12345678901234567890, True, None]}},
        {"caller": "lead_agent", "usage": {"total_tokens": 3}, "latency_ms": 0.25, "llm_call_index": 1},
        t0 + timedelta(seconds=1, microseconds=500000)),
    rec("t-1", "r-1", 4, "llm.error", "trace", "plain string content: {not json}", {}, t0 + timedelta(seconds=2)),
    rec("t-1", "r-1", 5, "run.delivery", "lifecycle", {"status": "sent"}, {"note": "a type the contract does not name"}, t0 + timedelta(seconds=3)),
  ],
  ("t-1", "r-2"): [
    rec("t-1", "r-2", 9, "run.start", "trace", {"chain": "lead_agent"}, {"caller": "lead_agent"}, t0 + timedelta(days=1)),
  ],
  ("t_2", "run_A"): [
    rec("t_2", "run_A", 1, "run.end", "outputs", [1, "two", {"three": 3}], {"status": "success"}, t0),
  ],
}
for (th, run), recs in rows.items():
    d = os.path.join(base, "threads", th, "runs")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, run + ".jsonl"), "a", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, default=str, ensure_ascii=False) + "\n")
PY
}

@test "DeerFlow's sample folder: import keeps seq and created_at, export gives the same bytes" {
  run "$RUNFS" import -q "$STORE" --deerflow-jsonl "$SAMPLE/.deer-flow"
  assert_success
  assert_output ""
  run "$RUNFS" cat "$STORE" threads/thread-a/runs/run-2/events.jsonl
  assert_line --index 0 '{"thread_id":"thread-a","run_id":"run-2","seq":12,"event_type":"run.start","category":"trace","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"},"created_at":"2026-03-04T05:07:47.123456+00:00"}'
  run store_sql "SELECT count(*), min(seq), max(seq) FROM run_events WHERE thread_id = 'thread-a'; SELECT seq FROM run_event_thread_seq"
  assert_output "$(printf '22|1|22\n22')"
  run "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out"
  assert_success
  run diff -r "$SAMPLE/.deer-flow" "$WORK/out"
  assert_success
}

@test "the folder's parent is accepted; a second import changes nothing" {
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$SAMPLE"
  assert_success
  before=$(store_snapshot)
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$SAMPLE"
  assert_success
  [ "$(store_snapshot)" = "$before" ]
}

@test "a folder written with DeerFlow's json.dumps round-trips byte for byte (unicode, escapes, numbers, string content, whole seconds)" {
  python_folder "$WORK/df"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
  assert_success
  run "$RUNFS" cat "$STORE" threads/t-1/runs/r-1/events.jsonl
  assert_line --index 3 '{"thread_id":"t-1","run_id":"r-1","seq":4,"event_type":"llm.error","category":"trace","content":"plain string content: {not json}","metadata":{},"created_at":"2026-03-04T05:06:09.000000+00:00"}'
  # seq is the thread's, kept: t-1 jumps from 5 to 9 and continues after 9
  run "$RUNFS" cat "$STORE" threads/t-1/seq
  assert_output 9
  run "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out"
  assert_success
  run diff -r "$WORK/df" "$WORK/out"
  assert_success
  # DeerFlow's reader reads it back: every line is a JSON object with its fields
  run python3 -c "
import json, sys, glob
n = 0
for p in glob.glob(sys.argv[1] + '/threads/*/runs/*.jsonl'):
    for line in open(p, encoding='utf-8').read().split('\n'):
        if line: r = json.loads(line); assert set(r) == {'thread_id','run_id','event_type','category','content','metadata','seq','created_at'}; n += 1
print(n)" "$WORK/out"
  assert_output 7
}

@test "rows imported are visible on a mount; appends continue after the imported seq" {
  python_folder "$WORK/df"
  "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
  MNT=$WORK/mnt
  runfs_mount "$STORE" "$MNT"
  run ls "$MNT/threads/t-1/runs"
  assert_output "$(printf 'r-1\nr-2')"
  ev_error after >> "$MNT/threads/t-1/runs/r-2/events.jsonl"
  run tail -1 "$MNT/threads/t-1/events.jsonl"
  assert_output --partial '"seq":10,"event_type":"llm.error"'
  [ "$(stat -c %s "$MNT/threads/t-1/events.jsonl")" -eq "$(cat "$MNT/threads/t-1/events.jsonl" | wc -c)" ]
}

@test ".seq-watermark: import honours the floor, export writes it back" {
  python_folder "$WORK/df"
  printf 40 > "$WORK/df/threads/t-1/runs/.seq-watermark"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
  assert_success
  run "$RUNFS" cat "$STORE" threads/t-1/seq
  assert_output 40
  run "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out"
  assert_success
  run cat "$WORK/out/threads/t-1/runs/.seq-watermark"
  assert_output 40
  ev_error x | "$RUNFS" put "$STORE" t-1 r-1 >/dev/null
  run store_sql "SELECT max(seq) FROM run_events WHERE thread_id = 't-1'"
  assert_output 41
  # a thread whose mark is its highest seq gets none
  [ ! -e "$WORK/out/threads/t_2/runs/.seq-watermark" ]
  printf -- -1 > "$WORK/df/threads/t-1/runs/.seq-watermark"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
  assert_failure 2
  assert_output --partial ".seq-watermark: not a non-negative decimal seq"
}

# bad_case NAME SETUP-SNIPPET EXPECTED-MESSAGE: t-1's r-1.jsonl spoiled by the snippet; the
# import names FILE:LINE, exits 2 and stores nothing of t-1, while t_2 is imported.
bad_case() {
  python_folder "$WORK/df"
  f=$WORK/df/threads/t-1/runs/r-1.jsonl
  eval "$1"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
  assert_failure 2
  assert_output --partial "$2"
  assert_output --partial "thread t-1 not imported (nothing of it changed)"
  run store_sql "SELECT count(*) FROM run_events WHERE thread_id = 't-1'; SELECT count(*) FROM run_events WHERE thread_id = 't_2'; SELECT count(*) FROM run_event_thread_seq WHERE thread_id = 't-1'"
  assert_output "$(printf '0\n1\n0')"
}

@test "a torn last line: FILE:LINE, exit 2, the thread unchanged" {
  bad_case 'printf "{\"thread_id\": \"t-1\", \"run_id\": \"r-1\", \"event_ty" >> "$f"' \
    "r-1.jsonl:6: the last line has no newline"
}

@test "a blank line" {
  bad_case 'sed -i "2a\\\\" "$f"' "r-1.jsonl:3: blank line"
}

@test "invalid UTF-8" {
  bad_case 'sed -i "2s/h1/h\xff1/" "$f"' "r-1.jsonl:2: invalid UTF-8 at byte "
}

@test "a seq going backwards" {
  bad_case 'sed -i "3s/\"seq\": 3/\"seq\": 1/" "$f"' "r-1.jsonl:3: seq 1 does not follow seq 2"
}

@test "a line whose run_id is not its file's" {
  bad_case 'sed -i "4s/\"run_id\": \"r-1\"/\"run_id\": \"r-9\"/" "$f"' "r-1.jsonl:4: run_id 'r-9' does not match"
}

@test "an invalid id in a file name" {
  bad_case 'cp "$f" "$WORK/df/threads/t-1/runs/bad.id.jsonl"' "bad.id.jsonl: 'bad.id' is not a valid run id"
}

@test "a different row at an existing seq stops that thread" {
  python_folder "$WORK/df"
  "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
  before=$(store_snapshot)
  sed -i '2s/h\\u00e9llo/changed/; 2s/héllo/changed/' "$WORK/df/threads/t-1/runs/r-1.jsonl"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
  assert_failure 2
  assert_output --partial "r-1.jsonl:2: seq 2 of thread t-1 already holds a different event"
  [ "$(store_snapshot)" = "$before" ]
}

# many_folder DIR THREAD RUNS LINES: DIR's thread THREAD gets RUNS runs (r-a, r-b, ...) of
# LINES events each, seqs counting on from one file to the next, written as DeerFlow's JSONL
# store writes them; with more lines than one INSERT of an import stores (1000 on
# PostgreSQL), a thread's rows go in several.
many_folder() {
  python3 - "$@" <<'PY'
import json, os, sys
from datetime import datetime, timezone, timedelta
base, th, runs, lines = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d = os.path.join(base, "threads", th, "runs")
os.makedirs(d, exist_ok=True)
t0, seq = datetime(2026, 3, 4, 5, 6, 7, 0, tzinfo=timezone.utc), 0
for r in range(runs):
    run = "r-" + chr(ord("a") + r)
    with open(os.path.join(d, run + ".jsonl"), "w", encoding="utf-8") as f:
        for _ in range(lines):
            seq += 1
            f.write(json.dumps({"thread_id": th, "run_id": run, "event_type": "llm.error",
                                "category": "trace", "content": f"line {seq} of {run}",
                                "metadata": {}, "seq": seq,
                                "created_at": (t0 + timedelta(microseconds=seq)).isoformat()},
                               default=str, ensure_ascii=False) + "\n")
PY
}

# thread_rows THREAD: how many rows the store holds of THREAD.
thread_rows() { store_sql "SELECT count(*) FROM run_events WHERE thread_id = '$1'"; }

@test "a thread of several INSERTs: a bad line, a seq given twice and a different row mid-way refuse at their FILE:LINE, nothing of it stored" {
  # t-big: r-a seqs 1-1200, r-b 1201-2400, r-c 2401-3600; t_small: 3 rows.
  many_folder "$WORK/df" t-big 3 1200
  many_folder "$WORK/df" t_small 1 3
  local b=$WORK/df/threads/t-big/runs
  cp -r "$WORK/df" "$WORK/clean"
  # A malformed line once the first 1000 rows were sent: none of them stays.
  sed -i '300s/"seq": 1500/"seq": 1/' "$b/r-b.jsonl"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
  assert_failure 2
  assert_output --partial "r-b.jsonl:300: seq 1 does not follow seq 1499"
  assert_output --partial "thread t-big not imported (nothing of it changed)"
  [ "$(thread_rows t-big)" = 0 ] || fail "rows of t-big stored: $(thread_rows t-big)"
  [ "$(thread_rows t_small)" = 3 ] || fail "t_small not imported"
  # A seq another run's file gave already: the row stored is the earlier file's, whether
  # it waits to be sent (2400, r-b's last) or was sent (5).
  for seq in 2400 5; do
    cp "$WORK/clean/threads/t-big/runs/r-b.jsonl" "$b/r-b.jsonl"
    cp "$WORK/clean/threads/t-big/runs/r-c.jsonl" "$b/r-c.jsonl"
    sed -i "1s/\"seq\": 2401/\"seq\": $seq/" "$b/r-c.jsonl"
    run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
    assert_failure 2
    assert_output --partial "r-c.jsonl:1: seq $seq of thread t-big already holds a different event"
    [ "$(thread_rows t-big)" = 0 ] || fail "rows of t-big stored after seq $seq twice"
  done
  # Stored whole; then a line mid-way differs from its row: that line, the store unchanged.
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/clean"
  assert_success
  assert_output --partial "runfs import: 3600 rows imported, 3 already present, 2 threads"
  local before
  before=$(store_snapshot)
  cp -r "$WORK/clean" "$WORK/changed"
  sed -i '700s/line 1900 of r-b/line 1900 changed/' "$WORK/changed/threads/t-big/runs/r-b.jsonl"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/changed"
  assert_failure 2
  assert_output --partial "r-b.jsonl:700: seq 1900 of thread t-big already holds a different event"
  [ "$(store_snapshot)" = "$before" ] || fail "the refused import changed the store"
}

@test "an import killed mid-thread leaves that thread as it was; run again, it stores the rest and skips what is there" {
  many_folder "$WORK/df" t-a 1 10
  many_folder "$WORK/df" t-big 4 5000
  # Part of t-big first (its last file cut short, as DeerFlow had written it so far).
  cp -r "$WORK/df" "$WORK/part"
  head -n 100 "$WORK/df/threads/t-big/runs/r-d.jsonl" > "$WORK/part/threads/t-big/runs/r-d.jsonl"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/part"
  assert_success
  assert_output --partial "runfs import: 15110 rows imported, 0 already present, 2 threads"
  # The whole folder with a new thread t-0 (imported first), killed once t-0 is committed:
  # t-big, one transaction, is then as it was or whole.
  many_folder "$WORK/df" t-0 1 10
  "$RUNFS" import -q "$STORE" --deerflow-jsonl "$WORK/df" &
  local pid=$!
  t0_stored() { [ "$(thread_rows t-0)" = 10 ]; }
  wait_for 30 t0_stored || fail "t-0 was not imported within 30 s"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" || true
  local big
  big=$(thread_rows t-big)
  [ "$big" = 15100 ] || [ "$big" = 20000 ] || fail "t-big holds $big rows after the kill (15100 before)"
  # Run again: what is there is skipped, the rest stored, the bytes the folder's.
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df"
  assert_success
  assert_output --partial "runfs import: $((20000 - big)) rows imported, $((20 + big)) already present, 3 threads"
  "$RUNFS" export -q "$STORE" --deerflow-jsonl "$WORK/out"
  diff -r "$WORK/df" "$WORK/out" || fail "the export is not the folder"
}

@test "--skip-bad-lines skips malformed lines, naming each; --strict checks content schemas" {
  python_folder "$WORK/df"
  f=$WORK/df/threads/t-1/runs/r-1.jsonl
  sed -i '2a\\' "$f"
  sed -i '4s/"seq": 3/"seq": 1/' "$f"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/df" --skip-bad-lines
  assert_success
  assert_line --partial "r-1.jsonl:3: blank line (skipped)"
  assert_line --partial "r-1.jsonl:4: seq 1 does not follow seq 2: a file's seqs increase (skipped)"
  run store_sql "SELECT group_concat(seq) FROM (SELECT seq FROM run_events WHERE thread_id = 't-1' ORDER BY seq) AS s"
  assert_output "1,2,4,5,9"
  python_folder "$WORK/strict"
  run "$RUNFS" import "$WORK/strict.db" --deerflow-jsonl "$WORK/strict" --strict
  assert_failure 2
  assert_output --partial "r-1.jsonl:3: metadata.latency_ms: expected integer or null, got number"
}

@test "a directory that is not a DeerFlow base folder: exit 2, no store made" {
  mkdir -p "$WORK/empty"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/empty"
  assert_failure 2
  assert_output --partial "is not a DeerFlow base folder"
  store_absent
}

@test "export: never creates a store, refuses files it would overwrite unless --force" {
  run "$RUNFS" export "$WORK/absent.db" --deerflow-jsonl "$WORK/out"
  assert_failure 2
  [ ! -e "$WORK/absent.db" ]
  [ ! -e "$WORK/out" ]
  "$RUNFS" import "$STORE" --deerflow-jsonl "$SAMPLE"
  mkdir -p "$WORK/out/threads/thread-a/runs"
  echo old > "$WORK/out/threads/thread-a/runs/run-2.jsonl"
  run "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out"
  assert_failure 2
  assert_output --partial "run-2.jsonl already exists (--force overwrites)"
  [ ! -e "$WORK/out/threads/thread-a/runs/run-1.jsonl" ]
  before=$(store_state)
  run "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out" --force
  assert_success
  run diff -r "$SAMPLE/.deer-flow" "$WORK/out"
  assert_success
  # export opened the store read-only: not a byte of it changed
  [ "$(store_state)" = "$before" ]
}

@test "import --user stamps the owner DeerFlow reads by; --help answers without touching anything" {
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$SAMPLE" --user alice
  assert_success
  run store_sql "SELECT DISTINCT user_id FROM run_events"
  assert_output alice
  run "$RUNFS" import --help
  assert_success
  assert_output --partial "--deerflow-jsonl DIR"
  run "$RUNFS" export --help
  assert_success
}

@test "progress on a terminal only; a one-line summary on stderr always, -q silences it" {
  run script -qec "'$RUNFS' import '$STORE' --deerflow-jsonl '$SAMPLE'" /dev/null
  assert_success
  assert_output --partial "import: 22 rows imported, 0 already present, 1 thread"
  run script -qec "'$RUNFS' export '$STORE' --deerflow-jsonl '$WORK/out'" /dev/null
  assert_success
  assert_output --partial "written to $WORK/out"
  # not a terminal (a script, a cron job): the summary alone, on stderr
  run --separate-stderr "$RUNFS" import "$STORE" --deerflow-jsonl "$SAMPLE"
  assert_success
  assert_output ""
  [ "$stderr" = "runfs import: 0 rows imported, 22 already present, 1 thread" ]
  rm -r "$WORK/out"
  run --separate-stderr "$RUNFS" export "$STORE" --deerflow-jsonl "$WORK/out"
  assert_success
  # the counts from the sample folder itself
  local files lines
  files=$(find "$SAMPLE" -path '*/runs/*.jsonl' | wc -l)
  lines=$(find "$SAMPLE" -path '*/runs/*.jsonl' -exec cat {} + | wc -l)
  [ "$stderr" = "runfs export: $lines lines in $files runs of 1 thread written to $WORK/out" ] || fail "$stderr"
  run "$RUNFS" import -q "$STORE" --deerflow-jsonl "$SAMPLE"
  assert_success
  assert_output ""
  rm -r "$WORK/out"
  run "$RUNFS" export --quiet "$STORE" --deerflow-jsonl "$WORK/out"
  assert_success
  assert_output ""
}
