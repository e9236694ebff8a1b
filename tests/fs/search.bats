#!/usr/bin/env bats
# search/<query> at the root, in a thread and in a run: every query form against a reference
# computed here (searchref.py over `runfs cat` of each thread's events.jsonl, DESIGN's rule),
# over non-ASCII text, escapes, nested metadata, DeerFlow's rows and two owners; a foreign
# writer's updates and deletes after a search; bad queries; -o ro; a --thread sandbox.
load lib

REF=$BATS_TEST_DIRNAME/searchref.py

setup() {
  runfs_workdir
  runfs_mount "$STORE" "$MNT"
  runfs_mount "$STORE" "$WORK/a" --user alice
  runfs_mount "$STORE" "$WORK/b" --user bob
  fill
}
teardown() {
  local rc=0
  runfs_teardown || rc=1
  if [ -n "${NT_DB:-}" ]; then
    pg_admin "DROP DATABASE IF EXISTS $NT_DB WITH (FORCE)" >/dev/null || rc=1
    pg_admin "DROP ROLE IF EXISTS runfs_nt" >/dev/null || rc=1
  fi
  return "$rc"
}

# Events of every kind the language must see through: written by runfs (two owners and none)
# and by DeerFlow (its raw columns, rendered canonical).
fill() {
  local r=$MNT/threads/t-one/runs/r1 a=$WORK/a/threads/t-two/runs/ra
  mkdir -p "$r" "$MNT/threads/t-one/runs/r2" "$a" "$WORK/b/threads/t-bob/runs/r1"
  {
    ev_start
    ev_human 'Connection refused by db-7'
    ev_ai 'Héllo wörld, naïve café ☕ \"quoted\" tab\tend\nline two' 2
    printf '{"event_type":"llm.error","content":"connection REFUSED again","metadata":{"caller":"lead_agent","deep":{"er":{"key":"Needle-42","list":[1,"x",{"z":"aB"}]}}}}\n'
  } >> "$r/events.jsonl"
  { ev_start; ev_error 'timeout talking to api'; } >> "$MNT/threads/t-one/runs/r2/events.jsonl"
  { ev_start; ev_human 'alice asks about customer C-1001' 1; ev_error 'tool failed: connection refused'; } >> "$a/events.jsonl"
  { ev_start; ev_human 'bob only refused here' 3; } >> "$WORK/b/threads/t-bob/runs/r1/events.jsonl"
  # DeerFlow's rows: plain text content, JSON content behind its marker, spaced metadata;
  # one of bob's in alice's thread.
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES
    ('t-two','rb','bob','llm.human.input','message','{\"type\": \"human\", \"content\": \"bob secret customer C-1001\"}','{\"content_is_json\": true, \"caller\": \"lead_agent\"}',50,'2026-03-04 06:00:00.000000'),
    ('T-deer','run-1',NULL,'llm.tool.result','trace','{\"status\": \"error\", \"content\": \"Connection refused (111)\"}','{\"content_is_json\": true, \"caller\": \"lead_agent\"}',1,'2026-03-04 06:00:00.000000'),
    ('T-deer','run-1',NULL,'run.delivery','trace','[1, \"q\"]','{\"content_is_json\": true}',2,'2026-03-04 06:00:01.000000'),
    ('T-deer','run-1',NULL,'llm.error','trace','boom from deerflow: ünïcode','{\"a\": {\"b\": 1}}',3,'2026-03-04 06:00:02.000000')"
  # Enough rows that the index holds whole blocks of them, some of them hits.
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 400)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-bulk', 'run-' || (x / 100), NULL, 'llm.error', 'trace', 'filler ' || x || CASE WHEN x % 97 = 0 THEN ' Connection Refused' ELSE '' END,
    '{\"bulk\": true}', x, '2026-03-04 06:00:03.000000' FROM g"
}

# foreign SQL: another writer's statement (SQLite's waits for a mount's transaction).
foreign() {
  if on_pg; then store_sql "$1"; else sqlite3 -cmd '.timeout 10000' "$STORE" "$1"; fi
}

# ref QUERY [THREAD [RUN]] [--user U]: the reference lines (thread ids bytewise, seq order).
ref() {
  local q=$1 t=${2:-} r=${3:-} user=${4:-} f ids
  if [ -n "$t" ]; then ids=$t; else ids=$(store_sql "SELECT DISTINCT thread_id FROM run_events" | LC_ALL=C sort); fi
  local files=()
  for f in $ids; do
    "$RUNFS" cat "$STORE" "threads/$f/events.jsonl" > "$WORK/ref.$f" || return 1
    if [ -n "$r" ]; then grep -F "\"run_id\":\"$r\"," "$WORK/ref.$f" > "$WORK/ref.$f.r" || true; mv "$WORK/ref.$f.r" "$WORK/ref.$f"; fi
    if [ -n "$user" ]; then grep -F "\"user_id\":\"$user\"}" "$WORK/ref.$f" > "$WORK/ref.$f.u" || true; mv "$WORK/ref.$f.u" "$WORK/ref.$f"; fi
    files+=("$WORK/ref.$f")
  done
  python3 "$REF" "$q" "${files[@]}"
}

# check MOUNT QUERY [THREAD [RUN]] [USER]: the mount's search file is the reference, with
# an exact size; runfs search prints it too (unscoped mounts).
check() {
  local m=$1 q=$2 t=${3:-} r=${4:-} user=${5:-} path
  path=$m/search/$q
  [ -n "$t" ] && path=$m/threads/$t/search/$q
  [ -n "$r" ] && path=$m/threads/$t/runs/$r/search/$q
  ref "$q" "$t" "$r" "$user" > "$WORK/want" || { echo "reference failed for [$q]"; return 1; }
  cat "$path" > "$WORK/got" || { echo "cat failed for [$q] at $path"; return 1; }
  cmp "$WORK/want" "$WORK/got" || { echo "query [$q] at $path:"; diff "$WORK/want" "$WORK/got"; return 1; }
  [ "$(stat -c %s "$path")" -eq "$(wc -c < "$WORK/want")" ] || { echo "size of $path is not its bytes"; return 1; }
  if [ -z "$user" ]; then
    "$RUNFS" search "$STORE" "$q" $t $r > "$WORK/cli" || return 1
    cmp "$WORK/want" "$WORK/cli" || { echo "runfs search [$q] differs"; return 1; }
    "$RUNFS" cat "$STORE" "${path#"$m"/}" > "$WORK/cli" || return 1
    cmp "$WORK/want" "$WORK/cli" || { echo "runfs cat ${path#"$m"/} differs"; return 1; }
  fi
}

QUERIES=('connection refused' '"connection refused"' 'REFUSED' 'refused -again' 'é' 'ö' 'x'
  'ab' '-' '☕' 'naïve café' '\"quoted\"' '\t' 'tab\tend\nline' 'needle-42' '"er":{' '{"z":"ab"}'
  'type:llm.error' 'type:llm.*' 'type:run.start' 'category:message' 'category:message -bob'
  '-type:run.start' 'type:llm.error refused' '"status":"error"' 'content_is_json' ']{' '[1,"q"]'
  't-one' 'created_at' 'run.start' 'customer C-1001' '"a":{"b":1}' 'unicode' 'ünïcode' 'zzz-none')

@test "search: every query form at the root, in a thread and in a run is the reference (mount and runfs search)" {
  run ls "$MNT"
  assert_line search
  run ls -A "$MNT/search" "$MNT/threads/t-one/search" "$MNT/threads/t-one/runs/r1/search"
  refute_output --regexp '^[^/].*[^:]$'
  local q
  for q in "${QUERIES[@]}"; do
    check "$MNT" "$q"
    check "$MNT" "$q" t-one
    check "$MNT" "$q" T-deer
    check "$MNT" "$q" t-one r1
  done
  # Not every query is empty: the reference has hits for most.
  [ "$(cat "$MNT/search/connection refused" | wc -l)" -ge 4 ]
  cp "$MNT/search/refused" "$WORK/hits.jsonl"
  ref refused > "$WORK/want"
  cmp "$WORK/want" "$WORK/hits.jsonl"
}

@test "search: an owner sees only its own rows, at the root and in a shared thread" {
  local q
  for q in 'customer' 'refused' 'type:run.start' 'C-1001' 'secret'; do
    check "$WORK/a" "$q" '' '' alice
    check "$WORK/b" "$q" '' '' bob
    check "$WORK/a" "$q" t-two '' alice
  done
  run cat "$WORK/a/search/secret"
  assert_output ''
  run grep -c '"user_id":"bob"' "$MNT/search/customer"
  assert_output 1
  run cat "$WORK/a/threads/t-bob/search/refused"
  assert_failure
  assert_output --partial 'No such file'
}

@test "search: rows a foreign writer updates or deletes after a search are never shown stale" {
  check "$MNT" 'refused'
  check "$MNT" 'yak-77'
  check "$MNT" 'filler 3'
  run store_sql "SELECT CASE WHEN value >= 384 THEN 1 ELSE 0 END FROM runfs_meta WHERE key = 'search_upto'"
  assert_output 1 # the bulk rows' blocks are in the index
  foreign "UPDATE run_events SET content = replace(content, 'Connection refused (111)', 'yak-77 now') WHERE thread_id = 'T-deer' AND seq = 1"
  foreign "DELETE FROM run_events WHERE thread_id = 't-one' AND seq = 4"
  foreign "UPDATE run_events SET event_metadata = '{\"caller\": \"yak-77\"}' WHERE thread_id = 'T-deer' AND seq = 3"
  run cat "$MNT/search/yak-77"
  assert_equal "$(printf '%s\n' "$output" | grep -c .)" 2
  check "$MNT" 'refused'
  check "$MNT" 'yak-77'
  check "$MNT" 'needle'
  # Bulk rows in indexed blocks, changed and deleted, and a deleted top row's id reused.
  foreign "UPDATE run_events SET content = 'now yak-77' WHERE thread_id = 'T-bulk' AND seq IN (5, 250)"
  foreign "DELETE FROM run_events WHERE thread_id = 'T-bulk' AND seq IN (97, 300, 400)"
  check "$MNT" 'yak-77'
  check "$MNT" 'refused'
  check "$MNT" 'filler 3'
  foreign "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('T-bulk','run-4',NULL,'llm.error','trace','reused yak-77','{}',401,'2026-03-04 07:00:00.000000')"
  check "$MNT" 'yak-77'
  # A row added by DeerFlow after the index was brought up to date is found too.
  foreign "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('T-deer','run-1',NULL,'llm.error','trace','late yak-77 row','{}',9,'2026-03-04 07:00:00.000000')"
  check "$MNT" 'yak-77'
  check "$MNT" 'yak-77' T-deer run-1
}

@test "search: PostgreSQL's index of layout 1 is made again, of words" {
  on_pg || skip "PostgreSQL only: pg_trgm"
  check "$MNT" 'refused'
  store_sql "DROP TABLE runfs_search; CREATE TABLE runfs_search (blk BIGINT PRIMARY KEY, c TEXT NOT NULL, m TEXT NOT NULL);
    UPDATE runfs_meta SET value = 1 WHERE key = 'search_layout'"
  check "$MNT" 'connection refused'
  run store_sql "SELECT (SELECT value FROM runfs_meta WHERE key = 'search_layout') || ',' || (SELECT string_agg(column_name, ',' ORDER BY column_name) FROM information_schema.columns WHERE table_name = 'runfs_search')"
  assert_output 2,blk,w
  run store_sql "SELECT count(*) > 0, bool_and(w NOT LIKE '%refused%refused%') FROM runfs_search WHERE w LIKE '%refused%'"
  assert_output 't|t' # a block's words, each once
}

@test "search: SQLite's index of an older layout, or with many stale blocks, is made again" {
  skip_on_pg "the FTS5 table's layout"
  check "$MNT" 'refused'
  # An index said to be of layout 2 (which kept a copy of the text) is dropped whole.
  foreign "INSERT INTO runfs_search_gen (blk, gen) VALUES (999999, 5); UPDATE runfs_meta SET value = 2 WHERE key = 'search_layout'"
  check "$MNT" 'refused'
  run store_sql "SELECT (SELECT value FROM runfs_meta WHERE key = 'search_layout') || ',' || (SELECT count(*) FROM runfs_search_gen)"
  assert_output 3,0
  run store_sql "SELECT count(*) FROM sqlite_master WHERE name = 'runfs_search_content'"
  assert_output 0 # contentless: the text is not stored twice
  # Blocks changed after indexing: a new generation each, the old document left behind.
  foreign "UPDATE run_events SET content = 'changed yak-77' WHERE thread_id = 'T-bulk' AND seq IN (10, 200)"
  check "$MNT" 'yak-77'
  check "$MNT" 'filler 1'
  run store_sql "SELECT count(*) FROM runfs_search_gen"
  assert_output 2
  # Too many stale documents: made again from the rows at the next change, generations reset.
  foreign "UPDATE runfs_meta SET value = 100000 WHERE key = 'search_stale'"
  check "$MNT" 'yak-77'
  foreign "UPDATE run_events SET content = 'changed again yak-77' WHERE thread_id = 'T-bulk' AND seq = 300"
  check "$MNT" 'yak-77'
  run store_sql "SELECT (SELECT value FROM runfs_meta WHERE key = 'search_stale') || ',' || (SELECT count(*) FROM runfs_search_gen)"
  assert_output 0,0
  # Every row above the mark deleted at once (the mark above the top), ids handed out again.
  foreign "DELETE FROM run_events WHERE thread_id = 'T-bulk' AND seq > 100"
  check "$MNT" 'filler 1'
  foreign "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES ('T-bulk','run-4',NULL,'llm.error','trace','reused zebra-9','{}',401,'2026-03-04 07:00:00.000000')"
  check "$MNT" 'zebra-9'
  check "$MNT" 'refused'
}

@test "search: bad queries are EINVAL or ENAMETOOLONG, with the reason in rejects.jsonl" {
  run cat "$MNT/search/\"unbalanced quote"
  assert_failure
  assert_output --partial 'Invalid argument'
  run tail -n 1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial 'unbalanced quote'
  assert_output --partial '"errno":"EINVAL"'
  run cat "$MNT/threads/t-one/search/a\"b"
  assert_output --partial 'Invalid argument'
  run cat "$MNT/search/   "
  assert_output --partial 'Invalid argument'
  run tail -n 1 "$MNT/.runfs/rejects.jsonl"
  assert_output --partial 'no terms'
  run cat "$MNT/search/$(printf 'a%.0s' $(seq 256))"
  assert_failure
  assert_output --partial 'File name too long'
  run "$RUNFS" search "$STORE" '"x'
  assert_failure
  assert_output --partial 'unbalanced quote'
  run "$RUNFS" search "$STORE" "$(printf 'a%.0s' $(seq 256))"
  assert_failure
  assert_output --partial 'at most 255 bytes'
  run cat "$MNT/threads/no-such/search/x"
  assert_output --partial 'No such file'
}

@test "search: a read-only mount answers the same and writes nothing to the store" {
  local before
  before=$(store_snapshot)
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$WORK/ro" -o ro
  local q
  for q in 'connection refused' 'é' 'type:llm.*' 'ünïcode'; do
    check "$WORK/ro" "$q"
    check "$WORK/ro" "$q" T-deer
  done
  assert_equal "$(store_snapshot)" "$before"
  # runfs_search_dirty comes with the schema (the insert triggers mark blocks in it).
  if on_pg; then
    run store_sql "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'runfs_search%' AND tablename <> 'runfs_search_dirty'"
  else
    run store_sql "SELECT count(*) FROM sqlite_master WHERE name LIKE 'runfs_search%' AND name <> 'runfs_search_dirty'"
  fi
  assert_output 0
}

@test "search: a --thread sandbox searches its thread only" {
  runfs_mount "$STORE" "$WORK/one" --thread t-one
  check "$WORK/one" 'refused' t-one
  ref refused t-one > "$WORK/want"
  cmp "$WORK/want" "$WORK/one/search/refused"
  run grep -c 't-two\|T-deer\|t-bob' "$WORK/one/search/refused"
  assert_output 0
  run cat "$WORK/one/threads/T-deer/search/refused"
  assert_failure
  assert_output --partial 'No such file'
}

# hwm DIR: the peak resident memory (kB) of the daemon serving DIR.
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$(pgrep -f "runfs mount.* $1\$" | head -1)/status"; }

@test "search: a result far larger than memory allows is streamed, not held" {
  local pad
  pad=$(printf 'padding-%.0s' $(seq 110))
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 90000)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-big', 'run-' || (x / 1000), NULL, 'llm.error', 'trace', 'bigrow ' || x || ' $pad',
    '{\"bulk\": true}', x, '2026-03-04 06:00:03.000000' FROM g"
  # The baseline: a search of one match, after which the index holds every row (its build
  # read them all).
  run cat "$MNT/search/Needle-42"
  assert_success
  local base size peak
  base=$(hwm "$MNT")
  size=$(stat -c %s "$MNT/search/bigrow")
  # The reference size: the thread's events.jsonl, every line of which matches.
  assert_equal "$size" "$("$RUNFS" cat "$STORE" threads/T-big/events.jsonl | wc -c)"
  [ "$size" -gt $((90 * 1024 * 1024)) ] || fail "the result is too small to tell: $size bytes"
  assert_equal "$(wc -l < "$MNT/search/bigrow")" 90000
  peak=$(hwm "$MNT")
  # A result held whole raises the peak by its size (over 90 MiB); a stream by a page per
  # handle and what the connections and malloc's arenas keep (some 12-35 MiB, whatever the
  # result's size).
  echo "# peak RSS grew by $((peak - base)) kB for a $size-byte result" >&3
  [ $((peak - base)) -lt $((size / 2048)) ] || fail "peak RSS grew by $((peak - base)) kB for a $size-byte result"
}

@test "search: on PostgreSQL a database that refuses pg_trgm scans, and the log says so once" {
  on_pg || skip "PostgreSQL only: pg_trgm"
  # A role that may make tables in its database's public schema but not an extension (that
  # needs CREATE on the database).
  NT_DB=${PG_DB}_nt
  pg_admin "CREATE DATABASE $NT_DB" >/dev/null
  pg_admin "CREATE ROLE runfs_nt LOGIN" >/dev/null
  PGTZ=UTC psql -X -q -At -v ON_ERROR_STOP=1 -d "$(pg_uri "$NT_DB")" -c "GRANT CREATE ON SCHEMA public TO runfs_nt"
  local uri m=$WORK/nt i
  uri=$(pg_uri "$NT_DB" | sed 's/user=[^&]*/user=runfs_nt/')
  runfs_mount "$uri" "$m" --log "$WORK/nt.log"
  mkdir -p "$m/threads/t-nt/runs/r1"
  { ev_start; ev_human 'Connection refused by db-7'; ev_error 'connection REFUSED again'; ev_error 'fine'; } >> "$m/threads/t-nt/runs/r1/events.jsonl"
  # Several at once: the pool's connections each learn that pg_trgm is refused.
  for i in 1 2 3 4; do cat "$m/search/connection refused" > "$WORK/got.$i" & done
  wait
  grep -iF 'connection refused' "$m/threads/t-nt/events.jsonl" > "$WORK/want"
  [ "$(wc -l < "$WORK/want")" -eq 2 ] || fail "the reference should hold two lines"
  for i in 1 2 3 4; do cmp "$WORK/want" "$WORK/got.$i"; done
  cmp "$WORK/want" "$m/threads/t-nt/search/connection refused"
  run grep -c 'refused pg_trgm' "$WORK/nt.log"
  assert_output 1
  run grep 'refused pg_trgm' "$WORK/nt.log"
  assert_output --partial 'every search reads every row of its scope'
}
