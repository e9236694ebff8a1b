#!/usr/bin/env bats
# What the kernel keeps of a quiet thread (its logs' and views' pages and attributes) is
# dropped by every change: an append through this mount, another mount's append and another
# writer's insert. A live thread is read direct, so each check reads once the thread is
# quiet again, through the cache that held the old bytes: the size stat gives is the bytes a
# read returns, and the read shows the new row. (Directories' attributes: times.bats.)

load lib

setup() { runfs_setup; }
teardown() { runfs_teardown; }

FILES=(events.jsonl history.jsonl transcript.md runs/r/events.jsonl messages.jsonl
  runs/r/messages.jsonl runs/r/types/llm.human.input.jsonl)

# shows F WORD: stat's size is what a read returns, and the read has WORD.
shows() {
  [ "$(stat -c %s "$1")" -eq "$(wc -c <"$1")" ] && grep -qaF -- "$2" "$1"
}
# rows_shown: the thread's events.jsonl has as many lines as the store has rows.
rows_shown() {
  [ "$(wc -l <"$MNT/threads/t/events.jsonl")" -eq "$(store_sql "SELECT count(*) FROM run_events WHERE thread_id = 't'")" ]
}
foreign_sql() {
  if on_pg; then store_sql "$1"; else sqlite3 -cmd '.timeout 10000' "$STORE" "$1"; fi
}
# quiet: the thread's last append is over RFS_LIVE_NS (2 s) old, so its files are opened
# through the kernel's cache (a live thread's are read direct).
quiet() {
  [ $(($(date +%s%N) - $(stat -c %.9Y "$MNT/threads/t" | tr -d .))) -gt 2200000000 ]
}
# cache_all: every file of the thread read into the kernel's cache (fincore counts pages).
cache_all() {
  local f
  for f in "${FILES[@]}"; do
    cat "$MNT/threads/t/$f" >/dev/null
    [ "$(fincore -n -o PAGES "$MNT/threads/t/$f" | tr -d ' ')" -gt 0 ] || return 1
  done
}
# all_show WORD: once the thread is quiet again (its files read through the cache that held
# the old bytes), each file's stat and read agree and the read has WORD.
all_show() {
  local f
  wait_for 15 quiet
  for f in "${FILES[@]}"; do
    shows "$MNT/threads/t/$f" "$1" || { echo "# $f: stale: stat and read disagree or miss $1"; return 1; }
  done
  rows_shown
}

@test "an append through this mount, another mount's and another writer's drop every cached page and attribute" {
  local T=$MNT/threads/t
  mkdir -p "$T/runs/r"
  ev_start >>"$T/runs/r/events.jsonl"
  ev_human first 1 >>"$T/runs/r/events.jsonl"

  wait_for 15 quiet
  cache_all
  ev_human word-mine 2 >>"$T/runs/r/events.jsonl"
  all_show word-mine

  local B=$WORK/mnt-b
  runfs_mount "$STORE" "$B"
  cache_all
  ev_human word-theirs 3 >>"$B/threads/t/runs/r/events.jsonl"
  wait_for 10 rows_shown
  all_show word-theirs

  wait_for 15 quiet
  cache_all
  local seq
  seq=$(($(store_sql "SELECT max(seq) FROM run_events WHERE thread_id = 't'") + 1))
  foreign_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t', 'r', NULL, 'llm.human.input', 'message', '{\"type\":\"human\",\"content\":\"word-foreign\",\"id\":\"h-9\"}', '{\"caller\":\"lead_agent\"}', $seq, '2026-03-04 05:06:07.123456')"
  wait_for 10 rows_shown
  all_show word-foreign
}

@test "a stat sizes a view over 64 MiB without filling the kernel's cache with it; a read gives it whole" {
  local T=$MNT/threads/t size pages
  mkdir -p "$T/runs/r"
  # 700 messages of 100,000 bytes: history.jsonl is over 64 MiB, the most a stat hands the
  # kernel's cache (a small quiet view's stat does: views.bats).
  python3 -c '
import json
for i in range(700):
    print(json.dumps({"event_type": "llm.human.input", "metadata": {"caller": "lead_agent"},
                      "content": {"type": "human", "content": "w%d " % i + "x" * 100000, "id": "h-%d" % i}}))
' >"$WORK/big.jsonl"
  cat "$WORK/big.jsonl" >>"$T/runs/r/events.jsonl"
  wait_for 15 quiet
  size=$(stat -c %s "$T/history.jsonl")
  [ "$size" -gt $((64 * 1024 * 1024)) ] || fail "history.jsonl is $size bytes, not over 64 MiB"
  pages=$(fincore -n -o PAGES "$T/history.jsonl" | tr -d ' ')
  [ "$pages" -eq 0 ] || fail "the stat gave the kernel $pages pages of a $size-byte view"
  [ "$(wc -c <"$T/history.jsonl")" -eq "$size" ] || fail "a read does not give the stat's $size bytes"
  [ "$(grep -c '"content":"w[0-9]* x' "$T/history.jsonl")" -eq 700 ] ||
    fail "a read of history.jsonl does not show the 700 messages"
}

# size_true F: stat's size of log F is the bytes a read returns and has one line per row.
size_true() {
  [ "$(stat -c %s "$1")" -eq "$(wc -c <"$1")" ] && [ "$(wc -l <"$1")" -eq "$2" ]
}

# Views and documents whose size moves with each row.
VIEWS=(messages.jsonl message-count seq stats.json runs/r/messages.jsonl runs/r/receipt.json
  runs/r/stats.json runs/r/timeline.svg runs/r/workspace-changes.json
  runs/r/types/llm.human.input.jsonl)

@test "stat of every log and view says its new size right after an append through this mount" {
  local T=$MNT/threads/t i f
  mkdir -p "$T/runs/r"
  ev_start >>"$T/runs/r/events.jsonl"
  ev_human "word-0" 1 >>"$T/runs/r/events.jsonl"
  for i in 1 2 3 4 5; do
    # Every file listed with its attributes and stat'ed ...
    ls -l "$T" "$T/runs/r" "$T/runs/r/types" >/dev/null
    for f in events.jsonl runs/r/events.jsonl "${VIEWS[@]}"; do stat "$T/$f" >/dev/null; done
    ev_human "word-$i" $((i + 1)) >>"$T/runs/r/events.jsonl"
    # ... and right after the append returns, stat says the new size (references: the
    # bytes a read returns, the number of rows written).
    size_true "$T/runs/r/events.jsonl" $((i + 2)) || { echo "# run log: stale size after append $i"; false; }
    size_true "$T/events.jsonl" $((i + 2)) || { echo "# thread log: stale size after append $i"; false; }
    for f in "${VIEWS[@]}"; do
      [ "$(stat -c %s "$T/$f")" -eq "$(wc -c <"$T/$f")" ] || { echo "# $f: stale size after append $i"; false; }
    done
    grep -qF "word-$i" "$T/messages.jsonl" || { echo "# messages.jsonl lacks append $i"; false; }
  done
}

# views_true B: every view's stat size is the bytes a read returns, on mount B.
views_true() {
  local f
  for f in "${VIEWS[@]}"; do [ "$(stat -c %s "$1/$f")" -eq "$(wc -c <"$1/$f")" ] || return 1; done
}

@test "stat of every view says its new size after another mount's append and another writer's insert" {
  local T=$MNT/threads/t B=$WORK/mnt-b seq
  mkdir -p "$T/runs/r"
  ev_start >>"$T/runs/r/events.jsonl"
  ev_human "word-0" 1 >>"$T/runs/r/events.jsonl"
  runfs_mount "$STORE" "$B"
  ls -l "$T" "$T/runs/r" "$T/runs/r/types" >/dev/null
  views_true "$T"
  ev_human word-theirs 2 >>"$B/threads/t/runs/r/events.jsonl"
  wait_for 10 rows_shown
  wait_for 10 views_true "$T"
  grep -qF word-theirs "$T/messages.jsonl"

  ls -l "$T" "$T/runs/r" "$T/runs/r/types" >/dev/null
  seq=$(($(store_sql "SELECT max(seq) FROM run_events WHERE thread_id = 't'") + 1))
  foreign_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t', 'r', NULL, 'llm.human.input', 'message', '{\"type\":\"human\",\"content\":\"word-foreign\",\"id\":\"h-9\"}', '{\"caller\":\"lead_agent\"}', $seq, '2026-03-04 05:06:07.123456')"
  wait_for 10 rows_shown
  wait_for 10 views_true "$T"
  grep -qF word-foreign "$T/messages.jsonl"
}

# ---- attributes the kernel keeps ----
# A mount with FUSE's request trace: a stat the kernel answers from its cache sends the
# daemon no GETATTR for the file's inode.
trace_mount() {
  local dir=$1
  mkdir -p "$dir"
  local -a san
  mapfile -t san < <(sanitizer_env)
  env "${san[@]}" "$RUNFS" mount --debug "$STORE" "$dir" 2>"$WORK/trace" &
  MOUNTS+=("$dir")
  wait_for 10 test -f "$dir/README"
}
# asked F: the requests of F in the trace: GETATTRs of its inode, and lookups of its name in
# its directory (the trace shows the directory's inode and the name's length).
asked() {
  local ino dir name
  ino=$(stat -c %i "$1") && dir=$(stat -c %i "$(dirname "$1")") && name=$(basename "$1")
  echo $(($(grep -ac "opcode: GETATTR (3), nodeid: $ino," "$WORK/trace") +
    $(grep -ac "opcode: LOOKUP (1), nodeid: $dir, insize: $((41 + ${#name}))," "$WORK/trace")))
}
# kept F: two stats of F in a row (within the kernel's timeout) send the daemon nothing.
kept() {
  local n
  n=$(asked "$1") && stat "$1" >/dev/null && [ "$(asked "$1")" -eq "$n" ]
}
KEPT=(messages.jsonl message-count stats.json runs/r/messages.jsonl runs/r/receipt.json
  runs/r/stats.json runs/r/types/llm.human.input.jsonl)

@test "the kernel keeps views' attributes, and an append through the mount drops them before it returns" {
  local T=$MNT/threads/t D=$WORK/mnt-d f i
  local -a counts
  mkdir -p "$T/runs/r"
  ev_start >>"$T/runs/r/events.jsonl"
  ev_human first 1 >>"$T/runs/r/events.jsonl"
  trace_mount "$D"
  for i in 1 2 3; do
    for f in "${KEPT[@]}"; do
      wait_for 10 kept "$D/threads/t/$f" || { echo "# $f: every stat reached the daemon"; false; }
    done
    counts=()
    for f in "${KEPT[@]}"; do counts+=("$(asked "$D/threads/t/$f")"); done
    ev_human "mine-$i" $((i + 1)) >>"$D/threads/t/runs/r/events.jsonl"
    # Right after the write() returned: each stat asks the daemon, and says the new size.
    for f in "${!KEPT[@]}"; do
      [ "$(stat -c %s "$D/threads/t/${KEPT[f]}")" -eq "$(wc -c <"$D/threads/t/${KEPT[f]}")" ] &&
        [ "$(asked "$D/threads/t/${KEPT[f]}")" -gt "${counts[f]}" ] ||
        { echo "# ${KEPT[f]}: kept after append $i through this mount"; false; }
    done
    grep -qF "mine-$i" "$D/threads/t/messages.jsonl"
  done
}

# ---- listings the kernel keeps ----
# lists DIR NAME: ls DIR shows NAME.
lists() { ls "$1" | grep -qxF -- "$2"; }
# list_all: every listing below read (twice: the second from the kernel's copy).
list_all() {
  local d
  for d in "$@"; do ls "$d" >/dev/null && ls "$d" >/dev/null || return 1; done
}

@test "a kept listing shows a new thread, run, type, task and singleton after a change by anyone" {
  local T=$MNT/threads/t B=$WORK/mnt-b R seq
  R=$T/runs/r
  mkdir -p "$R"
  ev_start >>"$R/events.jsonl"
  runfs_mount "$STORE" "$B"
  list_all "$MNT/threads" "$T/runs" "$R" "$R/types" "$R/tasks" "$R/once"
  # Through this mount: shown as soon as the write() returned.
  printf '{"event_type":"llm.error","content":"t","metadata":{"task_id":"task-1"}}\n' >>"$R/events.jsonl"
  lists "$R/types" llm.error.jsonl || { echo "# types/ misses a type appended here"; false; }
  lists "$R/tasks" task-1.jsonl || { echo "# tasks/ misses a task appended here"; false; }
  ev_ai hello 1 >>"$R/events.jsonl"
  lists "$R" last-visible-ai-seq || { echo "# the run misses last-visible-ai-seq"; false; }
  list_all "$MNT/threads" "$T/runs" "$R" "$R/types" "$R/tasks" "$R/once"
  # Through another mount: shown once the hub saw the change.
  ev_human theirs 2 >>"$B/threads/t/runs/r/events.jsonl"
  wait_for 10 lists "$R/types" llm.human.input.jsonl || { echo "# types/ misses another mount's type"; false; }
  mkdir -p "$B/threads/u/runs/r"
  wait_for 10 lists "$MNT/threads" u || { echo "# threads/ misses another mount's thread"; false; }
  list_all "$MNT/threads" "$T/runs" "$R" "$R/types" "$R/tasks" "$R/once"
  # Another writer's rows: a run older than the newest (no directory time moves), and the
  # run's terminal event.
  seq=$(($(store_sql "SELECT max(seq) FROM run_events WHERE thread_id = 't'") + 1))
  foreign_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t', 'r0', NULL, 'run.start', 'trace', '{\"chain\":\"x\"}', '{\"caller\":\"lead_agent\"}', $seq, '2020-01-01 00:00:00.000000')"
  wait_for 10 lists "$T/runs" r0 || { echo "# runs/ misses another writer's run"; false; }
  foreign_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('t', 'r', NULL, 'run.terminal', 'trace', '{\"status\":\"success\"}', '{\"protocol_version\":1,\"recovered\":false}', $((seq + 1)), '2026-03-04 05:06:07.123456')"
  wait_for 10 lists "$R/once" run.terminal || { echo "# once/ misses another writer's terminal event"; false; }
  lists "$R/types" run.terminal.jsonl
}
