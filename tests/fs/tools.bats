#!/usr/bin/env bats
# tools.bats — everyday tools on a mounted thread (issue 13): cp -r, rsync -a, tar, Python's
# shutil.copytree, grep -r and find | xargs cat copy the bytes `runfs cat` prints for every
# listed file, and terminate: every listed name has an exact size, follow.jsonl and since/
# are lookup-only. transcript.md renders the thread for people.
load lib

setup() {
  runfs_setup
  T=$MNT/threads/tt
  mkdir -p "$T/runs/r1" "$T/runs/r2" "$T/runs/r3"
  cat >> "$T/runs/r1/events.jsonl" <<'JSONL'
{"event_type":"run.start","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"}}
{"event_type":"llm.human.input","content":{"type":"human","content":"Sum the two files.","id":"h1"},"metadata":{"caller":"lead_agent"}}
{"event_type":"llm.ai.response","content":{"type":"ai","content":"Reading them.","id":"a1","tool_calls":[{"id":"c1","name":"read_file","args":{"path":"a.txt"}},{"id":"c2","name":"read_file","args":{"path":"b.txt"}}]},"metadata":{"caller":"lead_agent","usage":{"total_tokens":9},"latency_ms":3,"llm_call_index":1}}
{"event_type":"subagent.start","content":{"task_id":"k1","description":"check"},"metadata":{"task_id":"k1"}}
{"event_type":"subagent.end","content":{"task_id":"k1","status":"completed","result":"fine"},"metadata":{"task_id":"k1"}}
{"event_type":"llm.tool.result","content":{"type":"tool","content":"2","tool_call_id":"c2"},"metadata":{}}
{"event_type":"llm.tool.result","content":{"type":"tool","content":"40\nlines","tool_call_id":"c1"},"metadata":{}}
{"event_type":"middleware:guardrail","content":{"name":"G","hook":"before_model","action":"allow","changes":{}},"metadata":{"caller":"middleware:guardrail"}}
{"event_type":"llm.ai.response","content":{"type":"ai","content":"The sum is 42.","id":"a2","tool_calls":[]},"metadata":{"caller":"lead_agent","usage":{"total_tokens":5},"latency_ms":2,"llm_call_index":2}}
JSONL
  ev_terminal success | (set -C; cat > "$T/runs/r1/once/run.terminal")
  (set -C; : > "$T/runs/r1/seal.json")
  ev_human "second question" 2 >> "$T/runs/r2/events.jsonl"
  ev_error "rate limited" >> "$T/runs/r2/events.jsonl"
  ev_terminal error | (set -C; cat > "$T/runs/r2/once/run.terminal")
  ev_ai "no terminal yet" 3 >> "$T/runs/r3/events.jsonl"
}

teardown() {
  runfs_teardown
}

# same_as_cat DIR: DIR holds exactly the files find lists on the mounted thread, each
# holding the bytes `runfs cat` prints for it.
same_as_cat() {
  local dir=$1 f n=0
  diff <(cd "$T" && find . -type f | sort) <(cd "$dir" && find . -type f | sort) ||
    fail "the copy in $dir does not hold the files the mount lists"
  while IFS= read -r f; do
    "$RUNFS" cat "$STORE" "threads/tt/${f#./}" | cmp - "$dir/$f" || fail "$f differs from runfs cat"
    n=$((n + 1))
  done < <(cd "$dir" && find . -type f)
  [ "$n" -ge 30 ] || fail "only $n files"
}

@test "every listed file has the size its read returns; follow.jsonl and since/ are not listed" {
  local f size n=0
  while IFS= read -r f; do
    size=$(stat -c %s "$f")
    [ "$size" -eq "$(cat "$f" | wc -c)" ] || fail "$f: st_size $size, read $(cat "$f" | wc -c)"
    # a run's redactions.jsonl is empty until something is redacted, as a log of none
    [[ $f == */redactions.jsonl ]] || [ "$size" -gt 0 ] || fail "$f is empty"
    n=$((n + 1))
  done < <(find "$T" -type f)
  [ "$n" -ge 30 ] || fail "only $n files"
  run find "$T" -name 'follow.jsonl' -o -path '*/since/*'
  assert_output ""
  # Lookup-only names still open by name.
  timeout 10 cat "$T/runs/r1/follow.jsonl" | head -n 1 | grep -q '"run.start"'
  [ "$(wc -l < "$T/since/9")" -eq $(( $(cat "$T/seq") - 9 )) ]
}

@test "sizes follow appends: a view's size is recomputed when its thread changes" {
  local before
  before=$(stat -c %s "$T/messages.jsonl")
  stat -c %s "$T/transcript.md" "$T/runs/r3/types/llm.ai.response.jsonl" >/dev/null
  ev_ai "more" 4 >> "$T/runs/r3/events.jsonl"
  [ "$(stat -c %s "$T/messages.jsonl")" -gt "$before" ]
  for f in messages.jsonl history.jsonl transcript.md runs/r3/types/llm.ai.response.jsonl \
    runs/r3/messages.jsonl; do
    [ "$(stat -c %s "$T/$f")" -eq "$(cat "$T/$f" | wc -c)" ] || fail "$f: stale size"
  done
}

# cached_bytes FILE: the bytes of the pages of FILE the kernel's page cache holds.
cached_bytes() { fincore --noheadings --bytes --output RES "$1"; }

# quiet: the thread's last change, as the store records it, lies further back than the
# mount's live window (status.json's live_ms): its views now go to the kernel's cache.
quiet() {
  local live changed
  live=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["mount"]["live_ms"])' \
    "$MNT/.runfs/status.json")
  changed=$(store_sql "SELECT max(m) FROM (SELECT mtime_ns AS m FROM runfs_thread WHERE thread_id = 'tt' UNION ALL SELECT r.mtime_ns FROM runfs_run r JOIN runfs_thread t ON t.thread_key = r.thread_key WHERE t.thread_id = 'tt') x")
  [ $(($(date +%s%N) - changed)) -gt $(((live + 50) * 1000000)) ]
}

# kept_views: stat history.jsonl and transcript.md of the quiet thread (not stat'ed since it
# last changed): the rendering each stat makes for the size is in the kernel's cache before
# any read, and a read gives the bytes runfs cat prints.
kept_views() {
  local f size
  wait_for 10 quiet || fail "the thread did not become quiet"
  for f in history.jsonl transcript.md; do
    size=$(stat -c %s "$T/$f")
    [ "$(cached_bytes "$T/$f")" -ge "$size" ] || fail "$f: $(cached_bytes "$T/$f") of $size bytes cached"
    "$RUNFS" cat "$STORE" "threads/tt/$f" | cmp - "$T/$f" || fail "$f differs from runfs cat"
  done
}

# read_fills: once the thread is quiet, the first read of history.jsonl and transcript.md
# leaves their bytes in the kernel's cache, and they are runfs cat's.
read_fills() {
  local f
  wait_for 10 quiet || fail "the thread did not become quiet"
  for f in history.jsonl transcript.md; do
    cat "$T/$f" > /dev/null
    [ "$(cached_bytes "$T/$f")" -ge "$(stat -c %s "$T/$f")" ] || fail "$f: not cached by its read"
    "$RUNFS" cat "$STORE" "threads/tt/$f" | cmp - "$T/$f" || fail "$f differs from runfs cat"
  done
}

# fresh_views WHAT: history.jsonl and transcript.md give their new bytes and sizes.
fresh_views() {
  local f
  for f in history.jsonl transcript.md; do
    [ "$(stat -c %s "$T/$f")" -eq "$(cat "$T/$f" | wc -c)" ] || fail "$f: stale size after $1"
    "$RUNFS" cat "$STORE" "threads/tt/$f" | cmp - "$T/$f" || fail "$f is stale after $1"
  done
}

@test "a quiet thread's history.jsonl and transcript.md are in the kernel's cache after their stat, and fresh after appends from this mount and from another process" {
  command -v fincore >/dev/null || skip "fincore is not installed"
  kept_views
  # r3's terminal changes r3's heading, in the middle of transcript.md.
  ev_terminal success | (set -C; cat > "$T/runs/r3/once/run.terminal")
  fresh_views "an append"
  grep -q '^## Run r3 (success)' "$T/transcript.md"
  mkdir "$T/runs/r4"
  ev_human "asked here" 8 >> "$T/runs/r4/events.jsonl"
  # A stat after appends catches the views' sizes up from the rows added since, rendering
  # nothing to keep: the first read fills the cache.
  read_fills
  ev_human "from another process" 9 | "$RUNFS" put "$STORE" tt r4 >/dev/null
  fresh_views "another process's append"
  grep -q 'from another process' "$T/history.jsonl"
  # Sized while the thread was live, nothing was kept: the first read of the quiet view fills
  # the cache for the next.
  read_fills
}

@test "cp -r of a thread: complete bytes, terminates" {
  timeout 60 cp -r "$T" "$WORK/cp"
  same_as_cat "$WORK/cp"
}

@test "rsync -a of a thread: complete bytes, terminates" {
  command -v rsync >/dev/null || skip "rsync is not installed"
  timeout 60 rsync -a "$T/" "$WORK/rsync/"
  same_as_cat "$WORK/rsync"
}

@test "tar c | tar x of a thread: complete bytes, terminates, no warnings" {
  mkdir "$WORK/tar"
  run bash -c "cd '$MNT/threads' && timeout 60 tar cf - tt | tar xf - -C '$WORK/tar'"
  assert_success
  assert_output ""
  same_as_cat "$WORK/tar/tt"
}

@test "shutil.copytree of a thread: complete bytes, terminates" {
  timeout 60 python3 -c 'import shutil, sys; shutil.copytree(sys.argv[1], sys.argv[2])' "$T" "$WORK/py"
  same_as_cat "$WORK/py"
}

@test "grep -r and find -type f | xargs cat over a thread terminate with every byte" {
  run timeout 60 grep -r "The sum is 42" "$T"
  assert_success
  # One match per listed file that holds it, none from a live feed.
  [[ $output != *follow.jsonl* ]] || fail "grep read a follow.jsonl: $output"
  assert_line --partial "$T/runs/r1/events.jsonl:"
  assert_line --partial "$T/transcript.md:"
  local want got
  want=$(cd "$T" && find . -type f | sort | while read -r f; do "$RUNFS" cat "$STORE" "threads/tt/${f#./}"; done | sha256sum)
  got=$(cd "$T" && find . -type f | sort | timeout 60 xargs cat | sha256sum)
  assert_equal "$got" "$want"
}

@test "transcript.md: runs as headings with their status, messages, one line per tool call and result" {
  run cat "$T/transcript.md"
  assert_success
  assert_line --index 0 "# Thread tt"
  assert_line "## Run r1 (success)"
  assert_line "## Run r2 (error) **[error]**"
  assert_line "## Run r3 (no terminal event yet)"
  assert_line "**user:** Sum the two files."
  assert_line "**assistant:** Reading them."
  assert_line "**assistant:** The sum is 42."
  # Each call on one line with its result (matched by id, whatever the order of results).
  assert_line '- tool `read_file` {"path":"b.txt"} -> 2'
  assert_line '- tool `read_file` {"path":"a.txt"} -> 40\nlines'
  assert_line --partial '- **[error]** `llm.error`: rate limited'
  # Types it does not render specially are one generic line each, never dropped.
  assert_line --partial '- `subagent.start`: {"task_id":"k1"'
  assert_line --partial '- `middleware:guardrail`: '
  assert_line "**user:** second question"
  # runfs cat renders the same bytes.
  "$RUNFS" cat "$STORE" threads/tt/transcript.md | cmp - "$T/transcript.md"
}

@test "the mount's README describes every kind of file in the tree" {
  local names name
  names=$(grep -oE '^    \{RFS_[A-Z_]+, "[^"]+"' "$BATS_TEST_DIRNAME/../../views/node.c" | cut -d'"' -f2)
  [ "$(wc -w <<<"$names")" -ge 25 ] || fail "node.c's table not found"
  for name in $names; do
    grep -qF -- "$name" "$MNT/README" || fail "README does not mention $name"
  done
  [ "$(stat -c %s "$MNT/README")" -eq "$(wc -c < "$MNT/README")" ]
}

@test "a transcript.md longer than one read ends with the calls that got no result; its size is what a read returns" {
  local tb=$MNT/threads/tb
  mkdir -p "$tb/runs/r1"
  python3 -c "
import json
text = 'a question long enough to fill the reads of a transcript quickly ' * 5
for i in range(3000):
    print(json.dumps({'event_type': 'llm.human.input', 'content': {'type': 'human', 'content': '%d %s' % (i, text), 'id': 'h%d' % i}, 'metadata': {'caller': 'lead_agent'}}))
print(json.dumps({'event_type': 'llm.ai.response', 'content': {'type': 'ai', 'content': 'opening', 'id': 'a1', 'tool_calls': [{'id': 'c9', 'name': 'read_file', 'args': {'path': 'x.md'}}]}, 'metadata': {'caller': 'lead_agent', 'usage': {'total_tokens': 1}, 'latency_ms': 1, 'llm_call_index': 1}}))
" > "$WORK/long.jsonl"
  cat "$WORK/long.jsonl" >> "$tb/runs/r1/events.jsonl"
  size=$(stat -c %s "$tb/transcript.md")
  [ "$size" -gt 1000000 ]
  [ "$(cat "$tb/transcript.md" | wc -c)" -eq "$size" ]
  run tail -n 1 "$tb/transcript.md"
  assert_output '- tool `read_file` {"path":"x.md"} -> (no result)'
  "$RUNFS" cat "$STORE" threads/tb/transcript.md | cmp - "$tb/transcript.md"
}
