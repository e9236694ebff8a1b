#!/usr/bin/env bats
# sizes.bats — a rendered view's size is kept in the store (runfs_meta) keyed by what it was
# computed from, so a later mount lists a quiet run without rendering it; it stays honest
# (st_size is the bytes a read gives) after appends, after another writer's in-place UPDATE
# and across a remount.
load lib

T=threads/ts
R=$T/runs/r1
# The run's views and the thread's stats.json, under $T.
VIEWS="stats.json report.html runs/r1/events.jsonl runs/r1/messages.jsonl runs/r1/stats.json
  runs/r1/timeline.svg runs/r1/otel.json runs/r1/receipt.json runs/r1/workspace-changes.json
  runs/r1/report.html runs/r1/timeline/1.svg runs/r1/timeline/count runs/r1/otel/1.json
  runs/r1/otel/count
  runs/r1/last-visible-ai-seq runs/r1/types/llm.ai.response.jsonl
  runs/r1/types/llm.human.input.jsonl"

setup() {
  runfs_setup
  mkdir -p "$MNT/$R"
  { ev_start; ev_human "first question" 1; ev_ai "first answer" 1; } >> "$MNT/$R/events.jsonl"
}
teardown() { runfs_teardown; }

# sizes_honest DIR: every view's st_size on the mount at DIR is the byte count of the view as
# `runfs cat` renders it from the store (a separate process, no cache of the mount's).
sizes_honest() {
  local v want got
  for v in $VIEWS; do
    want=$("$RUNFS" cat "$STORE" "$T/$v" | wc -c)
    got=$(stat -c %s "$1/$T/$v")
    [ "$got" -eq "$want" ] || { echo "$v: st_size $got, runfs cat gives $want bytes"; return 1; }
    got=$(cat "$1/$T/$v" | wc -c)
    [ "$got" -eq "$want" ] || { echo "$v: a read gives $got bytes, runfs cat $want"; return 1; }
  done
}

# rewrite LATENCY CALLER: another writer sets the model call's (seq 3) latency_ms and caller
# in place (a caller as much shorter as the latency is longer keeps the row's length).
rewrite() {
  store_sql "UPDATE run_events SET event_metadata = '{\"caller\":\"$2\",\"usage\":{\"total_tokens\":3},\"latency_ms\":$1,\"llm_call_index\":1,\"content_is_json\":true,\"content_is_dict\":true}' WHERE thread_id = 'ts' AND seq = 3"
}

kept_rows() { store_sql "SELECT count(*) FROM runfs_meta WHERE key LIKE 'size:%'"; }
any_kept() { [ "$(kept_rows)" -gt 0 ]; }
kept_keys() { store_sql "SELECT group_concat(key) FROM (SELECT key FROM runfs_meta WHERE key LIKE 'size:%' ORDER BY key) AS k"; }
keys_moved() { [ "$(kept_keys)" != "$1" ]; }

@test "st_size of every view is its bytes after appends, another writer's UPDATE and a remount" {
  ls -la "$MNT/$R" > /dev/null
  sizes_honest "$MNT"
  # Written by the mount's hub, on its own connection, at its next round.
  wait_for 10 any_kept || fail "a first ls -la kept no view size in the store"
  # An append changes every view; their kept sizes no longer apply.
  { ev_human "second, longer question than the first" 2; ev_ai "second answer" 2; } >> "$MNT/$R/events.jsonl"
  sizes_honest "$MNT"
  # Another writer rewrites a row in place: the rewrites count moves, the sizes go stale.
  # The row keeps its length (events.jsonl's size and counts stay), stats.json's does not.
  local before; before=$(stat -c %s "$MNT/$R/events.jsonl")
  rewrite 50000 lead_a
  [ "$("$RUNFS" cat "$STORE" "$R/events.jsonl" | wc -c)" -eq "$before" ] || fail "the UPDATE changed the row's length"
  wait_for 10 sizes_honest "$MNT" || { sizes_honest "$MNT"; fail "the mount kept sizes of before the UPDATE"; }
  # A fresh mount takes the kept sizes (or renders again): the same honest sizes.
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  sizes_honest "$MNT"
  # Rewritten while nothing was mounted: the next mount does not take the old sizes.
  runfs_unmount "$MNT"
  rewrite 7 lead_agent
  runfs_mount "$STORE" "$MNT"
  sizes_honest "$MNT"
}

# The views whose bytes a sizing stat keeps for the read after it (view.c: streamed views,
# otel.json and its part, the thread's pass, the run's documents), under $T.
KEPT="runs/r1/types/llm.human.input.jsonl runs/r1/types/llm.ai.response.jsonl
  runs/r1/messages.jsonl runs/r1/otel.json runs/r1/otel/1.json runs/r1/receipt.json
  runs/r1/workspace-changes.json messages.jsonl history.jsonl transcript.md"
stat_kept() { local v; for v in $KEPT; do stat -c %s "$MNT/$T/$v" > /dev/null || return 1; done; }
# reads_now: each of them read through the mount is what `runfs cat` renders from the store.
reads_now() {
  local v
  for v in $KEPT; do
    cmp -s <("$RUNFS" cat "$STORE" "$T/$v") "$MNT/$T/$v" ||
      { echo "$v: the mount read other bytes than the store's now"; return 1; }
  done
}
# memfd_holds WORD: the number of the daemon's kept answers (memfds) holding WORD.
memfd_holds() {
  local pid f n=0
  pid=$(pgrep -n -f "runfs mount.* $MNT\$")
  for f in /proc/"$pid"/fd/*; do
    [[ $(readlink "$f") == /memfd:runfs-answer* ]] || continue
    grep -q "$1" "$f" && n=$((n + 1))
  done
  echo "$n"
}

@test "a view read after the stat that sized it is its bytes now, after an append, another writer's rewrite and a redaction between them" {
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT" --allow-redact
  local secret=SECRETkept77Z
  { ev_human "has $secret" 2; ev_ai "answer $secret" 2; } >> "$MNT/$R/events.jsonl"
  # Nothing between: the read gives what the stat kept, and it is the store's.
  stat_kept
  [ "$(memfd_holds "$secret")" -gt 0 ] || fail "the stats kept no view's bytes"
  reads_now
  # An append between: the kept bytes are of the version before.
  stat_kept
  { ev_human "third question" 3; ev_ai "third answer" 3; } >> "$MNT/$R/events.jsonl"
  reads_now
  # Another writer's rewrite in place (the row keeps its length; the hub may not have seen it).
  stat_kept
  rewrite 50000 lead_a
  reads_now
  # A redaction: once the write returns, no kept bytes hold what it erased, and no read does.
  stat_kept
  [ "$(memfd_holds "$secret")" -gt 0 ] || fail "the stats kept no view's bytes"
  local seq
  seq=$("$RUNFS" cat "$STORE" "$R/events.jsonl" | python3 -c '
import json, sys
print(next(json.loads(l)["seq"] for l in sys.stdin if "'"$secret"'" in l and "human" in l))')
  echo "{\"seq\": $seq, \"paths\": [\"content.content\"], \"reason\": \"asked\"}" >> "$MNT/$R/redactions.jsonl"
  seq=$("$RUNFS" cat "$STORE" "$R/events.jsonl" | python3 -c '
import json, sys
print(next(json.loads(l)["seq"] for l in sys.stdin if "'"$secret"'" in l))')
  echo "{\"seq\": $seq, \"paths\": [\"content.content\"], \"reason\": \"asked\"}" >> "$MNT/$R/redactions.jsonl"
  [ "$(memfd_holds "$secret")" -eq 0 ] || fail "a kept rendering holds the redacted text"
  reads_now
  local v
  for v in $KEPT; do
    ! grep -q "$secret" "$MNT/$T/$v" || fail "$v still shows the redacted text"
  done
}

@test "a view's kept size is replaced, not added to, when its run changes" {
  # The hub writes the sizes it was given over one or more rounds; an unmount writes what
  # is left before the daemon exits, so the counts are read with nothing mounted.
  ls -la "$MNT/$R" > /dev/null
  runfs_unmount "$MNT"
  local before keys; before=$(kept_rows) keys=$(kept_keys)
  [ "$before" -gt 0 ] || fail "a first ls -la kept no view size in the store"
  runfs_mount "$STORE" "$MNT"
  ev_error "one more" >> "$MNT/$R/events.jsonl"
  ls -la "$MNT/$R" > /dev/null
  runfs_unmount "$MNT"
  keys_moved "$keys" || fail "no kept size of the run's new rows reached the store"
  [ "$(kept_rows)" -eq "$before" ] || fail "kept sizes grew from $before to $(kept_rows): old ones left behind"
  runfs_mount "$STORE" "$MNT"
}

@test "a read-only mount sizes every view honestly and writes nothing to the store" {
  ls -la "$MNT/$R" > /dev/null
  runfs_unmount "$MNT"
  store_sql "DELETE FROM runfs_meta WHERE key LIKE 'size:%'"
  runfs_mount "$STORE" "$MNT" -o ro
  sizes_honest "$MNT"
  [ "$(kept_rows)" -eq 0 ] || fail "a read-only mount wrote kept sizes"
}

@test "a second walk of a quiet store reads every file and commits nothing" {
  [ "${RUNFS_BACKEND:-sqlite}" = sqlite ] || skip "SQLite only: counted by PRAGMA data_version"
  { ev_ai "more" 2; ev_error "a failure"; } >> "$MNT/$R/events.jsonl"
  mkdir -p "$MNT/threads/t2/runs/r1"
  { ev_start; ev_human "another" 1; } >> "$MNT/threads/t2/runs/r1/events.jsonl"
  tar cf - -C "$MNT" threads > /dev/null # the first walk may keep sizes
  # data_version moves when any other connection commits (sqlite.org/pragma.html); the
  # sizes the first walk kept reach the store at the hub's next round, so a walk may meet
  # the last of them: one walk of those that follow commits nothing.
  wait_for 10 quiet_walk "$STORE" "$MNT" || { quiet_walk "$STORE" "$MNT"; fail "every walk committed"; }
}

# quiet_walk STORE MNT: a tar of MNT's threads reads bytes and no commit comes during it.
quiet_walk() {
  python3 - "$1" "$2" <<'PY'
import sqlite3, subprocess, sys
con = sqlite3.connect(sys.argv[1])
before = con.execute("PRAGMA data_version").fetchone()[0]
tar = subprocess.run(["tar", "cf", "-", "-C", sys.argv[2], "threads"], stdout=subprocess.PIPE, check=True)
after = con.execute("PRAGMA data_version").fetchone()[0]
print(len(tar.stdout), before, after)
sys.exit(0 if after == before and len(tar.stdout) > 0 else 1)
PY
}

# import_store DIR [OPTION...]: a DeerFlow JSONL folder of 2 threads x 2 runs (tool calls,
# messages, a guardrail; $ROUNDS of them a run, 6 unless set), imported with
# `runfs import [OPTION...]` into $STORE, nothing mounted.
import_store() {
  python3 - "$1" "${ROUNDS:-6}" <<'PY'
import json, os, sys
base, rounds = sys.argv[1], int(sys.argv[2])
for t in (1, 2):
    tid = "imp-%d" % t
    os.makedirs(os.path.join(base, "threads", tid, "runs"))
    seq = 0
    for r in (1, 2):
        rows = [("run.start", "trace", {"chain": "lead_agent"})]
        for i in range(rounds):
            rows += [("llm.human.input", "message", {"type": "human", "content": "question %d" % i, "id": "h%d" % i}),
                     ("llm.ai.response", "message", {"type": "ai", "content": "answer " * (i + 1), "id": "a%d" % i,
                                                     "tool_calls": [{"id": "c%d" % i, "name": "search", "args": {}}]}),
                     ("llm.tool.result", "message", {"type": "tool", "content": "found %d" % i, "tool_call_id": "c%d" % i}),
                     ("middleware:guardrail", "middleware", {"action": "allow"})]
            if i % 3 == 1:  # a subagent's failure: a row of tasks/k<r>.jsonl
                rows.append(("llm.error", "trace", "subagent %d failed" % i, {"task_id": "k%d" % r}))
        rows.append(("run.terminal", "trace", {"status": "success"}))
        with open(os.path.join(base, "threads", tid, "runs", "run-%d.jsonl" % r), "w") as f:
            for et, cat, c, *meta in rows:
                seq += 1
                f.write(json.dumps({"thread_id": tid, "run_id": "run-%d" % r, "event_type": et,
                                    "category": cat, "content": c, "metadata": dict({"caller": "lead_agent"}, **(meta[0] if meta else {})),
                                    "seq": seq, "created_at": "2026-03-04T05:06:%02d.%06d+00:00" % (t, seq)}) + "\n")
PY
  "$RUNFS" import -q "${@:2}" "$STORE" --deerflow-jsonl "$1"
}

# walk_honest DIR: du -sb of DIR is its files' and directories' st_size summed, and every
# file's st_size is the bytes a read of it gives (python's os.walk, not du).
walk_honest() {
  local du; du=$(du -sb "$1" | cut -f1)
  python3 - "$1" "$du" <<'PY'
import os, sys
top, du = sys.argv[1], int(sys.argv[2])
total, bad = os.stat(top).st_size, []
for d, dirs, files in os.walk(top):
    total += sum(os.stat(os.path.join(d, x)).st_size for x in dirs)
    for x in files:
        p = os.path.join(d, x)
        size = os.stat(p).st_size
        with open(p, "rb") as f:
            got = len(f.read())
        total += size
        if got != size:
            bad.append("%s: st_size %d, a read gives %d bytes" % (p, size, got))
if bad or total != du:
    print("du -sb says %d, the tree's st_size sum %d" % (du, total), *bad, sep="\n")
    sys.exit(1)
PY
}

@test "a cold du of a store runfs import made is its files' bytes; a thread's views and a run's documents size in one pass each" {
  runfs_unmount "$MNT"
  import_store "$WORK/jsonl"
  # 0 ms: every stat below a thread is logged, a kept size marked (kept).
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/cold.log"
  run walk_honest "$MNT/threads"
  assert_success
  # What the passes made is what each view renders alone (runfs cat, another process).
  local f
  for f in history.jsonl transcript.md stats.json report.html runs/run-1/stats.json \
    runs/run-1/timeline.svg runs/run-1/report.html runs/run-1/otel.json runs/run-1/timeline/1.svg \
    runs/run-1/timeline/count runs/run-1/otel/1.json runs/run-1/otel/count; do
    cmp <("$RUNFS" cat "$STORE" "threads/imp-1/$f") "$MNT/threads/imp-1/$f" ||
      fail "$f: the mount's bytes are not runfs cat's"
  done
  # The import kept the sizes of the views whose bytes are the rows' lines: none renders.
  run bash -c "grep -E 'sized threads/imp-[^ ]*/(types/|tasks/|messages.jsonl)' '$WORK/cold.log' | grep -v '(kept)'"
  assert_output ""
  local t r n
  for t in imp-1 imp-2; do
    # The thread's history.jsonl, transcript.md, stats.json and report.html: one pass.
    n=$(grep -E "sized threads/$t/(history.jsonl|transcript.md|stats.json|report.html) in" "$WORK/cold.log" | grep -vc '(kept)' || true)
    [ "$n" -eq 1 ] || fail "$t: $n stats rendered the thread's views, not one pass: $(grep "threads/$t/[a-z.]* in" "$WORK/cold.log")"
    for r in run-1 run-2; do
      # stats.json, timeline.svg, report.html, otel.json and the files of timeline/ and otel/:
      # one pass over its rows renders them all, the others' stats take kept sizes.
      n=$(grep -E "sized threads/$t/runs/$r/(stats.json|timeline.svg|report.html|otel.json|timeline/[^ ]*|otel/[^ ]*) in" "$WORK/cold.log" | grep -vc '(kept)' || true)
      [ "$n" -eq 1 ] || fail "$t/$r: $n stats rendered its documents, not one pass: $(grep "runs/$r/" "$WORK/cold.log" | grep "threads/$t/")"
    done
  done
}

@test "st_size of every view is its bytes after runfs import, runfs put, a foreign DELETE and REPLACE, a remount and -o ro" {
  runfs_unmount "$MNT"
  import_store "$WORK/jsonl"
  runfs_mount "$STORE" "$MNT"
  run walk_honest "$MNT/threads"
  assert_success
  { ev_human "put after the import" 7; ev_ai "and its answer" 7; } | "$RUNFS" put -q "$STORE" imp-1 run-3
  wait_for 10 walk_honest "$MNT/threads" || { walk_honest "$MNT/threads"; fail "sizes of before runfs put"; }
  store_sql "DELETE FROM run_events WHERE thread_id = 'imp-2' AND event_type = 'middleware:guardrail' AND run_id = 'run-1'"
  wait_for 10 walk_honest "$MNT/threads" || { walk_honest "$MNT/threads"; fail "sizes of before the DELETE"; }
  # REPLACE: the row is deleted and inserted again with another content (SQLite's form; on
  # PostgreSQL a DELETE and an INSERT of the same id in one statement's transaction).
  if on_pg; then
    store_sql "UPDATE run_events SET content = '{\"type\":\"tool\",\"content\":\"a much longer tool result than before\",\"tool_call_id\":\"c0\"}' WHERE thread_id = 'imp-1' AND event_type = 'llm.tool.result' AND seq = 4"
  else
    store_sql "REPLACE INTO run_events SELECT id, thread_id, run_id, user_id, event_type, category, '{\"type\":\"tool\",\"content\":\"a much longer tool result than before\",\"tool_call_id\":\"c0\"}', event_metadata, seq, created_at FROM run_events WHERE thread_id = 'imp-1' AND seq = 4"
  fi
  wait_for 10 walk_honest "$MNT/threads" || { walk_honest "$MNT/threads"; fail "sizes of before the REPLACE"; }
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  run walk_honest "$MNT/threads"
  assert_success
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT" -o ro
  run walk_honest "$MNT/threads"
  assert_success
}

@test "runfs import keeps the documents' sizes of a run of 256 rows or more: a fresh mount's first ls -la renders none, and they are the bytes" {
  runfs_unmount "$MNT"
  # 70 rounds: runs of 306 rows (with tool calls, errors and a task), past the 256 the
  # import sizes the documents of; another import of 6 rounds stays under it.
  ROUNDS=70 import_store "$WORK/jsonl"
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/big.log"
  local D=threads/imp-1/runs/run-2 f docs="stats.json timeline.svg report.html otel.json
    timeline/count timeline/1.svg otel/count otel/1.json"
  ls -la "$MNT/$D" "$MNT/$D/timeline" "$MNT/$D/otel" >/dev/null
  # Every stat so far took a kept size: no pass over the run's rows before any read (a
  # "sizing" line is the hub's tick seeing a stat under way, closed by its "sized" line).
  run bash -c "grep -E 'sized $D/(stats.json|timeline.svg|report.html|otel.json|timeline/|otel/)' '$WORK/big.log' | grep -v '(kept)'"
  assert_output ""
  grep -q "sized $D/otel.json in .*(kept)" "$WORK/big.log" ||
    fail "otel.json was not stat'ed with a kept size: $(grep "$D/" "$WORK/big.log")"
  for f in $docs; do
    [ "$(stat -c %s "$MNT/$D/$f")" -eq "$(wc -c < "$MNT/$D/$f")" ] ||
      fail "$f: st_size $(stat -c %s "$MNT/$D/$f"), a read gives $(wc -c < "$MNT/$D/$f") bytes"
    cmp <("$RUNFS" cat "$STORE" "$D/$f") "$MNT/$D/$f" || fail "$f: the mount's bytes are not runfs cat's"
  done
  run walk_honest "$MNT/threads"
  assert_success
  # Kept sizes are of the rows as imported: after runfs put and another writer's UPDATE of
  # the run, each is its bytes again, on this mount and a fresh one.
  { ev_human "put after the import" 900; ev_ai "and its answer" 900; } | "$RUNFS" put -q "$STORE" imp-1 run-2
  wait_for 10 walk_honest "$MNT/threads" || { walk_honest "$MNT/threads"; fail "sizes of before runfs put"; }
  store_sql "UPDATE run_events SET content = '{\"type\":\"tool\",\"content\":\"a much longer tool result than before\",\"tool_call_id\":\"c0\"}' WHERE thread_id = 'imp-1' AND run_id = 'run-2' AND event_type = 'llm.tool.result' AND content LIKE '%found 0%'"
  wait_for 10 walk_honest "$MNT/threads" || { walk_honest "$MNT/threads"; fail "sizes of before the UPDATE"; }
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  run walk_honest "$MNT/threads"
  assert_success
}

@test "runfs import into a thread that has rows, and of a thread deleted and imported again, keeps sizes that are the bytes" {
  runfs_unmount "$MNT"
  import_store "$WORK/jsonl"
  # imp-1 gets a row more in run-2 and a new run: the import stores only those, so the sizes
  # are of the rows read back. imp-2 goes (another writer's DELETE) and comes back whole: its
  # sizes go in beside those of its first life, which its new ones must not be taken for.
  python3 - "$WORK/jsonl/threads/imp-1/runs" <<'PY'
import json, os, sys
d = sys.argv[1]
rows = [json.loads(l) for f in sorted(os.listdir(d)) for l in open(os.path.join(d, f))]
seq = max(r["seq"] for r in rows)
def row(run, et, cat, c):
    global seq
    seq += 1
    return json.dumps({"thread_id": "imp-1", "run_id": run, "event_type": et, "category": cat, "content": c,
                       "metadata": {"caller": "lead_agent"}, "seq": seq,
                       "created_at": "2026-03-04T05:07:00.%06d+00:00" % seq}) + "\n"
with open(os.path.join(d, "run-2.jsonl"), "a") as f:
    f.write(row("run-2", "llm.human.input", "message", {"type": "human", "content": "one more", "id": "h-more"}))
with open(os.path.join(d, "run-3.jsonl"), "w") as f:
    f.write(row("run-3", "run.start", "trace", {"chain": "lead_agent"}))
    f.write(row("run-3", "llm.ai.response", "message", {"type": "ai", "content": "a third run", "id": "a-3", "tool_calls": []}))
    f.write(row("run-3", "run.terminal", "trace", {"status": "success"}))
PY
  store_sql "DELETE FROM run_events WHERE thread_id = 'imp-2'"
  run "$RUNFS" import "$STORE" --deerflow-jsonl "$WORK/jsonl"
  assert_success
  assert_output --partial "rows imported, "
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/again.log"
  # A first lookup of each (no listing gave its attributes) takes the size the import kept:
  # imp-1's from its rows read back, imp-2's from the rows its import stored.
  local v
  for v in imp-1/runs/run-3/types/llm.ai.response.jsonl imp-1/runs/run-2/types/llm.human.input.jsonl \
    imp-2/runs/run-1/types/llm.tool.result.jsonl; do
    stat "$MNT/threads/$v" > /dev/null
    grep -q "sized threads/$v in .*(kept)" "$WORK/again.log" ||
      fail "$v was not stat'ed with a kept size: $(grep "threads/$v" "$WORK/again.log")"
  done
  run walk_honest "$MNT/threads"
  assert_success
  # Nor did any other line view render.
  run bash -c "grep -E 'sized threads/imp-[^ ]*/(types/|tasks/|messages.jsonl)' '$WORK/again.log' | grep -v '(kept)'"
  assert_output ""
  local f
  for f in imp-1/runs/run-2/messages.jsonl imp-1/runs/run-3/messages.jsonl imp-1/messages.jsonl \
    imp-2/runs/run-1/types/llm.tool.result.jsonl imp-2/runs/run-2/tasks/k2.jsonl; do
    cmp <("$RUNFS" cat "$STORE" "threads/$f") "$MNT/threads/$f" || fail "$f: the mount's bytes are not runfs cat's"
  done
}

@test "runfs import --sizes keeps every view's size: a mount's first du renders no view, and the sizes are the bytes" {
  runfs_unmount "$MNT"
  import_store "$WORK/jsonl" --sizes
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/sized.log"
  run walk_honest "$MNT/threads"
  assert_success
  # Only the one-row lookups (a seq, a singleton's row, the redaction rows) are read at a
  # stat; every view the import sized is (kept).
  run bash -c "grep 'sized threads/imp-' '$WORK/sized.log' | grep -v '(kept)' | grep -vE '/(last-visible-ai-seq|once/[^ ]*|redactions.jsonl|seq|message-count) in'"
  assert_output ""
  # The run's report.html has the import's size: the listing gives it (a size kept; no stat
  # reaches the daemon then, so no line), or a later stat finds it kept. Not kept, the
  # listing would leave it unsized and the lookup after it render it: a line without (kept).
  run bash -c "grep 'sized threads/imp-1/runs/run-1/report.html in' '$WORK/sized.log' | grep -v '(kept)'"
  assert_output ""
  local f
  for f in history.jsonl transcript.md stats.json report.html runs/run-2/otel.json runs/run-2/report.html; do
    cmp <("$RUNFS" cat "$STORE" "threads/imp-1/$f") "$MNT/threads/imp-1/$f" ||
      fail "$f: the mount's bytes are not runfs cat's"
  done
}

# dropped: the notifications in the trace so far by which the mount told the kernel to drop
# what it caches (libfuse's debug line per notification: FUSE_NOTIFY_INVAL_INODE is code 2,
# INVAL_ENTRY 3, DELETE 6; STORE, 4, fills the cache).
dropped() { grep -acE 'NOTIFY: code=[236] ' "$WORK/trace" || true; }

@test "sizes a cold walk keeps reach the store without the mount taking them for another writer's change" {
  [ "${RUNFS_BACKEND:-sqlite}" = sqlite ] || skip "SQLite only: another writer is seen by PRAGMA data_version"
  runfs_unmount "$MNT"
  import_store "$WORK/jsonl"
  local D=$WORK/mnt-trace n
  local -a san
  mkdir -p "$D"
  mapfile -t san < <(sanitizer_env)
  env "${san[@]}" "$RUNFS" mount --debug "$STORE" "$D" 2>"$WORK/trace" &
  MOUNTS+=("$D")
  wait_for 10 test -f "$D/README"
  du -s "$D/threads" >/dev/null
  # The sizes the walk made land in the store (by the hub's connection, at its next round)...
  wait_for 10 any_kept || fail "the walk kept no size in the store"
  run walk_honest "$D/threads"
  assert_success
  # ... and the mount told the kernel to drop nothing, through the walk and the reads after
  # it (time for the hub's rounds after the last of those commits): one on another connection
  # of the mount would have had the hub sweep it as for another writer's change, dropping the
  # listing and attributes of every directory du read (sync_dirs: a notification each).
  # Counted in what the mount sent, not in the READDIRs of an ls after the walk: the kernel
  # drops listings by itself too (memory pressure, anyone's echo 2 > /proc/sys/vm/drop_caches
  # as scripts/bench's walks do before each command), which is no fault of the mount's.
  n=$(dropped)
  [ "$n" -eq 0 ] || fail "the mount told the kernel to drop $n cached inodes or names in a quiet store (a sweep for another writer's change)"
}

@test "a stat right after an append says the new size, even of a file first looked up as the hub dropped attributes" {
  # The kernel makes a looked-up file's inode only when the process that asked runs again:
  # the hub's drop of attributes that comes in between (here: its rounds for the appends'
  # commits) finds no inode, and the kernel kept the old size for a second after the next
  # append unless the drop is told again. Each round's thread is new, so every name is a
  # first lookup; the rounds make the race likely, never needed.
  local i t want got
  for i in $(seq 1 25); do
    t=threads/race$i
    mkdir -p "$MNT/$t/runs/r1"
    { ev_start; ev_human "first question" 1; ev_ai "first answer" 1; } >> "$MNT/$t/runs/r1/events.jsonl"
    ls -la "$MNT/$t/runs/r1" > /dev/null
    stat -c %s "$MNT/$t/stats.json" "$MNT/$t/runs/r1/stats.json" > /dev/null
    cat "$MNT/$t/stats.json" "$MNT/$t/runs/r1/stats.json" > /dev/null
    { ev_human "second, longer question than the first" 2; ev_ai "second answer" 2; } >> "$MNT/$t/runs/r1/events.jsonl"
    for v in stats.json runs/r1/stats.json; do
      want=$("$RUNFS" cat "$STORE" "$t/$v" | wc -c)
      got=$(stat -c %s "$MNT/$t/$v")
      [ "$got" -eq "$want" ] || fail "round $i: $t/$v: st_size $got after the append, its bytes are $want (the kernel's copy of before)"
    done
  done
}

# otel_agent DIR RUN: gen_ai.agent.name of otel.json's resource under DIR ("-" when absent).
otel_agent() {
  python3 -c '
import json, sys
res = json.load(open(sys.argv[1]))["resourceSpans"][0]["resource"]["attributes"]
print(next((a["value"]["stringValue"] for a in res if a["key"] == "gen_ai.agent.name"), "-"))' \
    "$1/$T/runs/$2/otel.json"
}

@test "a first ls -la sizes otel.json as read whichever row names its agent: the first, a later one, none" {
  local r start='{"event_type":"run.start","content":{"chain":"c"},"metadata":{%s}}\n'
  # late: run.start after the run's first row (the first of two); none: no run.start.
  mkdir -p "$MNT/$T/runs/late" "$MNT/$T/runs/none"
  { ev_human "q" 1; printf "$start" '"caller":"late_agent"'; ev_ai "a" 1; printf "$start" '"caller":"other"'; } \
    >> "$MNT/$T/runs/late/events.jsonl"
  { ev_human "q" 3; ev_ai "a" 3; } >> "$MNT/$T/runs/none/events.jsonl"
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  local want got
  for r in r1 late none; do
    ls -la "$MNT/$T/runs/$r" > /dev/null
    want=$("$RUNFS" cat "$STORE" "$T/runs/$r/otel.json" | wc -c)
    got=$(stat -c %s "$MNT/$T/runs/$r/otel.json")
    [ "$got" -eq "$want" ] || fail "$r: otel.json's st_size $got, runfs cat gives $want bytes"
    cmp <(cat "$MNT/$T/runs/$r/otel.json") <("$RUNFS" cat "$STORE" "$T/runs/$r/otel.json") ||
      fail "$r: otel.json read through the mount is not runfs cat's"
  done
  [ "$(otel_agent "$MNT" r1)" = lead_agent ] || fail "r1's agent: $(otel_agent "$MNT" r1)"
  [ "$(otel_agent "$MNT" late)" = late_agent ] || fail "the first run.start's caller, past the first row, is not the agent: $(otel_agent "$MNT" late)"
  # No agent when no run.start names one (DESIGN: the resource carries the run.start's caller).
  [ "$(otel_agent "$MNT" none)" = - ] || fail "a run with no run.start names an agent: '$(otel_agent "$MNT" none)'"
}

# The line views of $R (types/, tasks/, messages.jsonl), whose size a stat after an append
# catches up from the size kept before it and the lines of the rows added since (view.c).
LINES="runs/r1/types/llm.human.input.jsonl runs/r1/types/llm.ai.response.jsonl
  runs/r1/types/llm.error.jsonl runs/r1/tasks/k1.jsonl runs/r1/tasks/k2.jsonl runs/r1/messages.jsonl
  messages.jsonl"
ev_task() { printf '{"event_type":"llm.error","content":"%s","metadata":{"task_id":"%s"}}\n' "$2" "$1"; }
# lines_honest: each line view's st_size is its bytes as `runfs cat` renders them (another
# process) and as a read through the mount gives them.
lines_honest() {
  local v want got
  for v in $LINES; do
    want=$("$RUNFS" cat "$STORE" "$T/$v" | wc -c)
    got=$(stat -c %s "$MNT/$T/$v")
    [ "$got" -eq "$want" ] || { echo "$v: st_size $got, runfs cat gives $want bytes"; return 1; }
    got=$(cat "$MNT/$T/$v" | wc -c)
    [ "$got" -eq "$want" ] || { echo "$v: a read gives $got bytes, runfs cat $want"; return 1; }
  done
}
# foreign_row SEQ TYPE CONTENT METADATA: another writer's row of $R at SEQ.
foreign_row() {
  store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('ts', 'r1', '$2', 'trace', '$3', '$4', $1, '2026-03-05 00:00:01.000000')"
}
last_seq() { "$RUNFS" cat "$STORE" "$T/seq"; }
# appended WHAT: rows into several of the line views at once, from the mount or another writer.
appended() {
  { ev_human "a question of round $1" "q$1"; ev_ai "the answer of round $1" "a$1"; ev_task k1 "k1 of $1";
    ev_task k2 "a longer failure of k2 in round $1"; ev_error "round $1 failed"; } >> "$MNT/$R/events.jsonl"
}

@test "a line view's size caught up from the rows added since stays its bytes: appends into several views, another writer's rows, DELETE and UPDATE" {
  runfs_unmount "$MNT"
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/lines.log"
  { ev_task k1 "k1 begins"; ev_task k2 "k2 begins"; ev_error "a failure"; } >> "$MNT/$R/events.jsonl"
  lines_honest
  appended 1
  local from; from=$(($(wc -l < "$WORK/lines.log") + 1))
  lines_honest
  # Sized from the kept size and the new rows, not rendered again.
  run bash -c "tail -n +$from '$WORK/lines.log' | grep -E 'sized $T/runs/r1/(types|tasks)/' | grep -v '(kept)'"
  assert_output ""
  appended 2
  lines_honest
  # Another writer's rows past the kept point: caught up from at the next stat.
  local seq; seq=$(last_seq)
  foreign_row $((seq + 1)) llm.error '"foreign one"' '{"task_id":"k1"}'
  foreign_row $((seq + 2)) llm.error '"foreign two, longer"' '{"task_id":"k2"}'
  wait_for 10 lines_honest || { lines_honest; fail "sizes of before another writer's rows"; }
  # A DELETE and an UPDATE in place: the rewrites count moves, the views render again.
  store_sql "DELETE FROM run_events WHERE thread_id = 'ts' AND seq = $((seq + 1))"
  wait_for 10 lines_honest || { lines_honest; fail "sizes of before the DELETE"; }
  appended 3
  lines_honest
  store_sql "UPDATE run_events SET event_metadata = '{\"task_id\":\"k1\",\"note\":\"made longer\"}' WHERE thread_id = 'ts' AND seq = $((seq + 2))"
  wait_for 10 lines_honest || { lines_honest; fail "sizes of before the UPDATE"; }
  appended 4
  lines_honest
  # Another writer's row below the kept point (the seq the DELETE freed): the rows past it
  # do not account for the change, so the views render again.
  foreign_row $((seq + 1)) llm.error '"back below"' '{"task_id":"k2"}'
  wait_for 10 lines_honest || { lines_honest; fail "sizes of before a row added below the kept point"; }
  appended 5
  lines_honest
}

@test "a line view's size caught up while another process appends is its bytes: no row committed between the catch-up's two reads is counted" {
  # The catch-up reads the log's rows past the kept point and then the view's, in two
  # statements: on PostgreSQL each has its own snapshot, so rows another process commits
  # between them were counted in the view and not in the log, and a size too large was kept
  # under the earlier state's token, in the store too, for every mount.
  { ev_task k1 "k1 begins"; ev_task k2 "k2 begins"; } >> "$MNT/$R/events.jsonl"
  lines_honest
  local batches=150
  (
    for i in $(seq $batches); do
      { ev_human "a question of batch $i" "p$i"; ev_task k1 "k1 in batch $i"; ev_task k2 "k2 in $i"; } |
        "$RUNFS" put -q "$STORE" ts r1 || exit 1
    done
    touch "$WORK/put.done"
  ) &
  local writer=$!
  # Each stat catches the views up from the last one's kept size while the rows come.
  local v deadline=$((SECONDS + 120))
  until [ -e "$WORK/put.done" ] || ! kill -0 "$writer" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; do
    for v in $LINES; do stat -c %s "$MNT/$T/$v" >/dev/null; done
  done
  wait "$writer" || fail "runfs put failed"
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 'ts' AND content LIKE '%batch%'")" $((2 * batches))
  wait_for 10 lines_honest || { lines_honest; fail "a view's size is not its bytes after the writer stopped"; }
}

@test "a line view's size kept while another process INSERTs rows is its bytes: no row committed after the stat's look is counted" {
  # A stat that finds another writer's rows not indexed yet indexes them (a write), which ends
  # the request's read snapshot; the view was then rendered with rows committed after the
  # look while the log's state still read as the look's, so a size one row too large was
  # kept under it (in the store too) and every later catch-up counted that row again.
  # On PostgreSQL the writer takes no advisory lock (DeerFlow's does): a row it commits while
  # a mount clears the thread's mark is named by no mark, and the log's totals stayed short
  # of it (events.jsonl's size) while a rendered view counted it, kept, and counted again.
  { ev_task k1 "k1 begins"; ev_task k2 "k2 begins"; } >> "$MNT/$R/events.jsonl"
  lines_honest
  local rows=1500 q
  q="'{\"type\":\"human\",\"content\":\"a question another writer asked\",\"id\":\"h-f\"}'"
  for i in $(seq $rows); do
    echo "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('ts', 'r1', 'llm.human.input', 'message', $q, '{\"caller\":\"lead_agent\"}', (SELECT coalesce(max(seq), 0) + 1 FROM run_events WHERE thread_id = 'ts'), '2026-03-05 00:00:01.000000');"
  done > "$WORK/inserts.sql"
  if [[ $STORE == *://* ]]; then
    # One session, each statement its own commit, back to back.
    { psql -X -q -v ON_ERROR_STOP=1 -d "$STORE" -f "$WORK/inserts.sql" > /dev/null && touch "$WORK/sql.done"; } &
  else
    # One statement (one commit) after another, at random moments a few ms apart, asking for
    # the lock again at once when the mount holds it (sqlite3's busy handler would sleep, and
    # land its commits well after the mount's), so some land right after a stat's.
    python3 -c 'import random, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
db.execute("PRAGMA synchronous = OFF")
for stmt in open(sys.argv[2]):
    while True:
        try:
            db.execute(stmt)
            time.sleep(random.uniform(0, 0.004))
            break
        except sqlite3.OperationalError as e:
            if "locked" not in str(e):
                raise
open(sys.argv[3], "w").close()' "$STORE" "$WORK/inserts.sql" "$WORK/sql.done" &
  fi
  local writer=$!
  # Stats as fast as four processes make them, each finding the writer's newest rows, until
  # it is done (40 s at most): the mount's threads meet the writer's commits between theirs.
  local statters=()
  for i in 1 2 3 4; do
    python3 -c 'import os, sys, time
done, end = sys.argv[1], time.monotonic() + 40
while not os.path.exists(done) and time.monotonic() < end:
    for v in sys.argv[2:]:
        os.stat(v)' "$WORK/sql.done" "$MNT/$R/types/llm.human.input.jsonl" "$MNT/$R/messages.jsonl" "$MNT/$T/messages.jsonl" &
    statters+=($!)
  done
  wait "${statters[@]}"
  wait "$writer" || fail "another writer's INSERTs failed"
  assert_equal "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 'ts' AND content LIKE '%another writer asked%'")" $rows
  wait_for 10 lines_honest || { lines_honest; fail "a view's size is not its bytes after the writer stopped"; }
  LINES="runs/r1/events.jsonl events.jsonl" lines_honest || fail "a log's size is not its bytes after the writer stopped"
}

# The thread's views whose size a stat after an append catches up from the size kept before
# it and what its pass left (view.c): a tool call's line waits for its result, a run's
# heading says the status of its run.terminal, a later run may hide an earlier one.
THREAD_VIEWS="history.jsonl transcript.md"
# thread_honest: each one's st_size is its bytes as `runfs cat` renders them (another
# process) and as a read through the mount gives them.
thread_honest() { VIEWS=$THREAD_VIEWS sizes_honest "$MNT"; }
ev_call() { printf '{"event_type":"llm.ai.response","content":{"type":"ai","content":"calling %s","id":"ai-%s","tool_calls":[{"id":"%s","name":"search","args":{"q":"%s"}}]},"metadata":{"caller":"lead_agent","usage":{"total_tokens":3},"latency_ms":5,"llm_call_index":1}}\n' "$1" "$1" "$1" "$1"; }
ev_result() { printf '{"event_type":"llm.tool.result","content":{"type":"tool","content":"%s","tool_call_id":"%s"},"metadata":{"caller":"lead_agent"}}\n' "$2" "$1"; }
ev_sub_ai() { printf '{"event_type":"llm.ai.response","content":{"type":"ai","content":"%s","id":"s-%s","tool_calls":[]},"metadata":{"caller":"subagent:k1","usage":{"total_tokens":3},"latency_ms":5,"llm_call_index":1}}\n' "$1" "$1"; }
# regen RUN SOURCE STATUS: run RUN regenerates SOURCE and ends with STATUS (a success hides
# SOURCE's rows from history.jsonl).
regen() {
  printf '{"event_type":"run.start","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent","regenerate_from_run_id":"%s"}}\n' "$2" >> "$MNT/$T/runs/$1/events.jsonl"
  ev_human "again, for $2" "g-$1" >> "$MNT/$T/runs/$1/events.jsonl"
  (set -C; ev_terminal "$3" > "$MNT/$T/runs/$1/once/run.terminal")
}
# rendered_since LINE: the thread views' stats past LINE of the log that rendered them.
rendered_since() {
  tail -n "+$1" "$WORK/thread.log" | grep -E "sized $T/(history.jsonl|transcript.md) in" | grep -v '(kept)' || true
}
mark() { echo $(($(wc -l < "$WORK/thread.log") + 1)); }

@test "history.jsonl's and transcript.md's sizes caught up from the rows added since stay their bytes: calls and results, terminals, hidden runs, another writer's rows, DELETE and UPDATE" {
  runfs_unmount "$MNT"
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/thread.log"
  { ev_call c1; ev_sub_ai "a subagent's answer"; } >> "$MNT/$R/events.jsonl"
  ls -la "$MNT/$T" > /dev/null
  thread_honest
  # The call's result, the run's terminal (its heading said none yet), a run hidden later.
  local from; from=$(mark)
  { ev_result c1 "found it"; ev_call c2; ev_human "more" 9; } >> "$MNT/$R/events.jsonl"
  ls -la "$MNT/$T" > /dev/null
  thread_honest
  run rendered_since "$from"
  assert_output ""
  from=$(mark)
  (set -C; ev_terminal error > "$MNT/$R/once/run.terminal")
  mkdir "$MNT/$T/runs/r2"
  { ev_start; ev_result c2 "r2 answers r1's call"; ev_call c3; } >> "$MNT/$T/runs/r2/events.jsonl"
  ls -la "$MNT/$T" > /dev/null
  thread_honest
  mkdir "$MNT/$T/runs/r3"
  regen r3 r1 success
  ls -la "$MNT/$T" > /dev/null
  thread_honest
  mkdir "$MNT/$T/runs/r4"
  regen r4 r3 error
  ls -la "$MNT/$T" > /dev/null
  thread_honest
  run rendered_since "$from"
  assert_output ""
  # runfs put, and another writer's rows past the kept point: caught up at the next stat.
  { ev_result c3 "put's result"; ev_human "put's question" 10; } | "$RUNFS" put -q "$STORE" ts r2
  wait_for 10 thread_honest || { thread_honest; fail "sizes of before runfs put"; }
  local seq; seq=$(last_seq)
  store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('ts', 'r2', 'llm.human.input', 'message', '{\"type\":\"human\",\"content\":\"foreign\",\"id\":\"f1\"}', '{\"caller\":\"lead_agent\"}', $((seq + 1)), '2026-03-05 00:00:01.000000')"
  store_sql "INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('ts', 'r5', 'run.terminal', 'trace', '{\"status\":\"success\"}', '{\"caller\":\"lead_agent\"}', $((seq + 2)), '2026-03-05 00:00:02.000000')"
  wait_for 10 thread_honest || { thread_honest; fail "sizes of before another writer's rows"; }
  # A DELETE and an UPDATE in place: the rewrites count moves, the views render again.
  store_sql "DELETE FROM run_events WHERE thread_id = 'ts' AND seq = $((seq + 1))"
  wait_for 10 thread_honest || { thread_honest; fail "sizes of before the DELETE"; }
  { ev_call c4; ev_human "after the delete" 11; } >> "$MNT/$T/runs/r2/events.jsonl"
  thread_honest
  store_sql "UPDATE run_events SET content = '{\"status\":\"interrupted\"}' WHERE thread_id = 'ts' AND seq = $((seq + 2))"
  wait_for 10 thread_honest || { thread_honest; fail "sizes of before the UPDATE"; }
  ev_result c4 "after the update" >> "$MNT/$T/runs/r2/events.jsonl"
  thread_honest
  # A remount takes the kept sizes (or renders); -o ro writes nothing and stays honest.
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  thread_honest
  ev_human "after the remount" 12 >> "$MNT/$T/runs/r2/events.jsonl"
  thread_honest
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT" -o ro
  thread_honest
  ls -la "$MNT/$T" > /dev/null
  thread_honest
}

# many_rows N: N rows of calls, results and questions in $R (a thread large enough that its
# pass keeps the views' states in the store, view.c's STORED_ROWS).
many_rows() {
  local i
  for i in $(seq "$1"); do ev_call "m$i"; ev_result "m$i" "result $i"; ev_human "question $i" "m$i"; done
}

@test "a fresh mount catches history.jsonl and transcript.md up from the states a pass kept in the store: runfs put while unmounted, then an UPDATE" {
  many_rows 100 >> "$MNT/$R/events.jsonl"
  ev_call pending >> "$MNT/$R/events.jsonl"
  ls -la "$MNT/$T" > /dev/null
  thread_honest
  runfs_unmount "$MNT"
  { ev_result pending "answered while unmounted"; ev_human "and one more" 99; } | "$RUNFS" put -q "$STORE" ts r1
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/thread.log"
  ls -la "$MNT/$T" > /dev/null
  thread_honest
  run rendered_since 1
  assert_output ""
  # A rewrite in place while unmounted, keeping the row's length (the log's size and count
  # stay): the kept states are of rows as they were, the views render.
  runfs_unmount "$MNT"
  rewrite 50000 lead_a
  ev_human "after the rewrite" 98 | "$RUNFS" put -q "$STORE" ts r1
  runfs_mount "$STORE" "$MNT"
  ls -la "$MNT/$T" > /dev/null
  thread_honest
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT" -o ro
  ev_human "while -o ro is mounted" 97 | "$RUNFS" put -q "$STORE" ts r1
  wait_for 10 thread_honest || { thread_honest; fail "sizes of before runfs put, on -o ro"; }
}

@test "history.jsonl's and transcript.md's sizes a bare stat rendered are caught up at the next stat after an append" {
  runfs_unmount "$MNT"
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/thread.log"
  ev_call s1 >> "$MNT/$R/events.jsonl"
  # A stat with no listing before it: each view renders on its own (no thread pass).
  thread_honest
  local from; from=$(mark)
  { ev_result s1 "its result"; ev_call s2; ev_human "a bare stat's question" 21; } >> "$MNT/$R/events.jsonl"
  (set -C; ev_terminal success > "$MNT/$R/once/run.terminal")
  thread_honest
  run rendered_since "$from"
  assert_output ""
}

# splice_read VIEW HOW: a reader of threads/<thread>/VIEW reads its first page, then rows are
# appended (HOW put: `runfs put`, another process; mount: through the mount) that change the
# view's earlier bytes, then it reads the rest. Prints what the reader got: ESTALE, or which
# rendering its bytes are (before, after, or neither: a splice).
splice_read() {
  PYTHONPATH="$BATS_TEST_DIRNAME" python3 - "$RUNFS" "$STORE" "$MNT" "$1" "$2" <<'PY'
import json, os, subprocess, sys, time
from rewriter import read_on
runfs, store, mnt, view, how = sys.argv[1:]
t = "%s_%s" % (view.split(".")[0], how)
human = lambda i, text: json.dumps({"event_type": "llm.human.input", "content": {"type": "human", "content": text, "id": "h%d" % i}, "metadata": {"caller": "lead_agent"}})
def put(run, lines):
    subprocess.run([runfs, "put", "-q", store, t, run], input="".join(l + "\n" for l in lines).encode(), check=True)
def cat():
    return subprocess.run([runfs, "cat", store, "threads/%s/%s" % (t, view)], stdout=subprocess.PIPE, check=True).stdout
runs = os.path.join(mnt, "threads", t, "runs")
os.makedirs(os.path.join(runs, "r1"))
os.makedirs(os.path.join(runs, "r3"))
with open(os.path.join(runs, "r1", "events.jsonl"), "a") as w:
    w.write(human(0, "first") + "\n")
# A long run after r1: r1's heading (transcript.md) and rows (history.jsonl) are on the
# first page, the rest is far past it.
put("r2", [human(i, "word " * 60) for i in range(3000)])
path = os.path.join(mnt, "threads", t, view)
before = cat()
fd = os.open(path, os.O_RDONLY)
got = os.read(fd, 4096)
if view == "transcript.md":
    # r1's terminal: its heading, on the first page, says its status now.
    terminal = {"content": {"status": "error"}, "metadata": {"protocol_version": 1, "recovered": False}}
    if how == "put":
        put("r1", [json.dumps(dict(terminal, event_type="run.terminal"))])
    else:
        with open(os.path.join(runs, "r1", "once", "run.terminal"), "x") as w:
            w.write(json.dumps(terminal) + "\n")
else:
    # r3 regenerates r1 and succeeds: r1's rows, on the first page, are hidden now.
    start = {"event_type": "run.start", "content": {"chain": "lead_agent"}, "metadata": {"caller": "lead_agent", "regenerate_from_run_id": "r1"}}
    terminal = {"content": {"status": "success"}, "metadata": {"protocol_version": 1, "recovered": False}}
    if how == "put":
        put("r3", [json.dumps(start), json.dumps(dict(terminal, event_type="run.terminal"))])
    else:
        with open(os.path.join(runs, "r3", "events.jsonl"), "a") as w:
            w.write(json.dumps(start) + "\n")
        with open(os.path.join(runs, "r3", "once", "run.terminal"), "x") as w:
            w.write(json.dumps(terminal) + "\n")
after = cat()
assert before[:4096] != after[:4096], "the append changed nothing on the first page: no test"
# The mount knows of the commit (its size is the new rendering's) before the reader reads on.
deadline = time.monotonic() + 10
while os.stat(path).st_size != len(after):
    assert time.monotonic() < deadline, "the mount never saw the append"
    time.sleep(0.05)
read_on(fd, got, before, after)
PY
}

@test "a reader of transcript.md open across an append that changes a run's heading on its first page gets ESTALE, never a splice" {
  for how in put mount; do
    run splice_read transcript.md "$how"
    assert_success
    # Its first page said r1 had no terminal; the file now says error: only ESTALE is true.
    assert_output "ESTALE"
  done
}

@test "a reader of history.jsonl open across an append that hides a run on its first page gets ESTALE, never a splice" {
  for how in put mount; do
    run splice_read history.jsonl "$how"
    assert_success
    # Its first page had r1's row, which r3's regeneration hides now: only ESTALE is true.
    assert_output "ESTALE"
  done
}

# rewrite_read MNT: readers of every streamed view of a thread of 400 human inputs (row 3 on
# their first page, row 390 far past it), each its own thread, made live, read their first
# 4 KiB; then one transaction of another process rewrites, without changing their length,
# rows 3 and 390 (case "given") or row 390 alone (case "past"), and each reads on at once
# (before the mount's hub hears of it). Prints VIEW CASE: ESTALE, or which rendering its
# bytes are (before, after, or neither: a splice).
rewrite_read() {
  PYTHONPATH="$BATS_TEST_DIRNAME" python3 - "$RUNFS" "$STORE" "$1" <<'PY'
import os, subprocess, sys
from rewriter import live, read_on, sql
runfs, store, mnt = sys.argv[1:]
row = '{"event_type":"llm.human.input","content":{"type":"human","content":"row %04d","id":"h"},"metadata":{"caller":"lead_agent","task_id":"k"}}\n'
views = ("messages.jsonl", "runs/r1/messages.jsonl", "runs/r1/types/llm.human.input.jsonl",
         "runs/r1/tasks/k.jsonl", "since/1", "runs/r1/since/1", "history.jsonl", "transcript.md")
tag = os.path.basename(mnt)
k = 0
for case, seqs in (("given", (3, 390)), ("past", (390,))):
    for view in views:
        k += 1
        t = "rw_%s_%d" % (tag, k)
        subprocess.run([runfs, "put", "-q", store, t, "r1"], input="".join(row % i for i in range(1, 401)), text=True, check=True)
        path = os.path.join(mnt, "threads", t, view)
        held = live(os.path.join(mnt, "threads", t, "runs"), k)
        before = open(path, "rb").read()
        fd = os.open(path, os.O_RDONLY)
        got = os.read(fd, 4096)
        assert b"row 0003" in got and b"row 0390" not in got, (view, got[:200])
        swap = "content"
        for q in seqs:
            swap = "replace(%s, 'row %04d', 'ROW %04d')" % (swap, q, q)
        sql("UPDATE run_events SET content = %s WHERE thread_id = '%s' AND seq IN (%s)" % (swap, t, ", ".join(map(str, seqs))))
        after = open(path, "rb").read()
        assert after != before and len(after) == len(before), (view, case, len(before), len(after))
        print(view, case + ":", end=" ", flush=True)
        read_on(fd, got, before, after)
        held.close()
PY
}

@test "a reader of a streamed view open across another process's same-length UPDATE of a row it read gets ESTALE, never a splice" {
  export STORE
  export -f store_sql
  # The views' own renderings, and (RUNFS_KEPT_ANSWER_MAX=0) ones with no stat's kept bytes,
  # which the mount's default gives of history.jsonl, transcript.md, types/ and tasks/ (and
  # on PostgreSQL of messages.jsonl).
  RUNFS_KEPT_ANSWER_MAX=0 runfs_mount "$STORE" "$WORK/own"
  # Row 3 was given as it was: going on would give old row 3 beside new row 390, which no
  # state of the rows ever was. Row 390 alone is past every byte given: the new rendering,
  # or ESTALE from a reader that kept no hash of the bytes it rendered itself (as a log's).
  local m c v want="" bad=0
  for c in given past; do
    for v in messages.jsonl runs/r1/messages.jsonl runs/r1/types/llm.human.input.jsonl \
      runs/r1/tasks/k.jsonl since/1 runs/r1/since/1 history.jsonl transcript.md; do
      want+="$v $c: $([ $c = given ] && echo ESTALE || echo 'after or ESTALE')"$'\n'
    done
  done
  for m in "$MNT" "$WORK/own"; do
    run rewrite_read "$m"
    assert_success
    output=$(sed -E 's/ past: (after|ESTALE)$/ past: after or ESTALE/' <<< "$output")
    [ "$output"$'\n' = "$want" ] || { echo "mount $m:"; diff <(echo -n "$want") <(echo "$output") || bad=1; }
  done
  [ $bad = 0 ]
}

# tail_read HOW: a tail-like reader of transcript.md reads to its end, then a new run is
# appended (HOW as splice_read's), which changes no byte it gave (every run before it has its
# terminal), and it reads on. Prints "ok" when what it read in all is the file now.
tail_read() {
  python3 - "$RUNFS" "$STORE" "$MNT" "$1" <<'PY'
import errno, json, os, subprocess, sys, time
runfs, store, mnt, how = sys.argv[1:]
t = "tail_" + how
human = lambda i, text: json.dumps({"event_type": "llm.human.input", "content": {"type": "human", "content": text, "id": "h%d" % i}, "metadata": {"caller": "lead_agent"}})
start = json.dumps({"event_type": "run.start", "content": {"chain": "lead_agent"}, "metadata": {"caller": "lead_agent"}})
terminal = {"content": {"status": "success"}, "metadata": {"protocol_version": 1, "recovered": False}}
def put(run, lines):
    subprocess.run([runfs, "put", "-q", store, t, run], input="".join(l + "\n" for l in lines).encode(), check=True)
def cat():
    return subprocess.run([runfs, "cat", store, "threads/%s/transcript.md" % t], stdout=subprocess.PIPE, check=True).stdout
put("r1", [start] + [human(i, "word " * 60) for i in range(500)] + [json.dumps(dict(terminal, event_type="run.terminal"))])
path = os.path.join(mnt, "threads", t, "transcript.md")
deadline = time.monotonic() + 10
while not os.path.exists(path) or os.stat(path).st_size != len(cat()):
    assert time.monotonic() < deadline, "the mount never saw run r1"
    time.sleep(0.05)
# A writer holds the thread's log open, as a live agent does: the thread is live, its views
# read past the kernel's cache.
held = open(os.path.join(mnt, "threads", t, "runs", "r1", "events.jsonl"), "a")
whole = cat()
# Two readers: one from the start, one from its last 4 KiB on (as tail -f starts).
fds = [os.open(path, os.O_RDONLY), os.open(path, os.O_RDONLY)]
got = [b"", b""]
os.lseek(fds[1], len(whole) - 4096, os.SEEK_SET)
for k in (0, 1):
    while True:
        b = os.read(fds[k], 1 << 16)
        if not b:
            break
        got[k] += b
assert got == [whole, whole[-4096:]], "the first reads are not the file"
if how == "put":
    put("r2", [start, human(9000, "a new question"), json.dumps(dict(terminal, event_type="run.terminal"))])
else:
    run = os.path.join(mnt, "threads", t, "runs", "r2")
    os.makedirs(run)
    with open(os.path.join(run, "events.jsonl"), "a") as w:
        w.write(start + "\n" + human(9000, "a new question") + "\n")
    with open(os.path.join(run, "once", "run.terminal"), "x") as w:
        w.write(json.dumps(terminal) + "\n")
after = cat()
assert after.startswith(whole) and len(after) > len(whole), "the append changed bytes before the file's old end: no test"
deadline = time.monotonic() + 10
while os.stat(path).st_size != len(after):
    assert time.monotonic() < deadline, "the mount never saw run r2"
    time.sleep(0.05)
for k, want in ((0, after), (1, after[len(whole) - 4096:])):
    try:
        while True:
            b = os.read(fds[k], 1 << 16)
            if not b:
                break
            got[k] += b
        print("ok" if got[k] == want else "%d bytes read, the file has %d" % (len(got[k]), len(want)))
    except OSError as e:
        print(errno.errorcode[e.errno])
    os.close(fds[k])
held.close()
PY
}

@test "a tail-like reader of transcript.md reads on across a new run appended after its end, without ESTALE" {
  for how in put mount; do
    run tail_read "$how"
    assert_success
    # Every byte they read is still the file's: both read the new run on.
    assert_output "$(printf 'ok\nok')"
  done
}

@test "a reader at the end of otel.json reading again after its run grows gets ESTALE, never its old end and the new tail" {
  run env PYTHONPATH="$BATS_TEST_DIRNAME" python3 - "$RUNFS" "$STORE" "$MNT" <<'PY'
import json, os, subprocess, sys
from rewriter import read_on
runfs, store, mnt = sys.argv[1:]
rel = "threads/ts/runs/r1/otel.json"
path = os.path.join(mnt, rel)
def cat():
    return subprocess.run([runfs, "cat", store, rel], stdout=subprocess.PIPE, check=True).stdout
log = open(os.path.join(mnt, "threads/ts/runs/r1/events.jsonl"), "a")  # the run is live
before = cat()
fd = os.open(path, os.O_RDONLY)
got = b""
while True:
    b = os.read(fd, 1 << 16)
    if not b:
        break
    got += b
assert got == before, "the first read is not the file"
log.write(json.dumps({"event_type": "llm.error", "content": "boom"}) + "\n")
log.flush()
after = cat()
assert not after.startswith(before), "the append changed no byte the reader read: no test"
read_on(fd, got, before, after)
log.close()
PY
  assert_success
  # Its end closed the document before the error's span: only ESTALE is true.
  assert_output "ESTALE"
}
