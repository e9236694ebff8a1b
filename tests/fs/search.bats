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

# pg_quiet: the mount's hub has recomputed T-bulk, which a foreign write marked, and no
# transaction with an id is in flight (pg_busy says what is). A root search's version on
# PostgreSQL names the transactions in flight (a row below the highest id may still
# commit), so a stat taken during the hub's recomputation keeps its size under a version
# the next stat no longer sees: counting sizings waits for this first.
pg_quiet() {
  ! on_pg || [ "$(store_sql "SELECT (SELECT count(*) FROM runfs_thread WHERE thread_id = 'T-bulk' AND dirty <> 0) +
    (SELECT count(*) FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid())")" = 0 ]
}
pg_busy() {
  store_sql "SELECT 'T-bulk dirty ' || dirty FROM runfs_thread WHERE thread_id = 'T-bulk'
    UNION ALL SELECT 'in flight: ' || left(query, 80) FROM pg_stat_activity
    WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()"
}

# ref QUERY [THREAD [RUN]] [--user U]: the reference lines (thread ids bytewise, seq order).
ref() {
  local q=$1 t=${2:-} r=${3:-} user=${4:-} f ids
  if [ -n "$t" ]; then ids=$t; else ids=$(store_sql "SELECT DISTINCT thread_id FROM run_events" | LC_ALL=C sort); fi
  local files=() dir=$WORK/ref
  # REF_CACHE (a folder): a test that writes nothing between its checks reads each thread
  # once; a root reference reads every thread, one runfs cat each.
  [ -n "${REF_CACHE:-}" ] && dir=$REF_CACHE
  mkdir -p "$dir"
  for f in $ids; do
    if [ -z "${REF_CACHE:-}" ] || [ ! -f "$dir/$f" ]; then
      "$RUNFS" cat "$STORE" "threads/$f/events.jsonl" > "$dir/$f" || return 1
    fi
    files+=("$dir/$f")
  done
  SEARCHREF_RUN=$r SEARCHREF_USER=$user python3 "$REF" "$q" "${files[@]}"
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
  't-one' 'created_at' 'run.start' 'customer C-1001' '"a":{"b":1}' 'unicode' 'ünïcode' 'zzz-none'
  '-refused' '-x -type:llm.error' 'ab -é')

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
  assert_output 5,blk,m,wid
  run store_sql "SELECT count(*) FROM runfs_search_words WHERE w LIKE '%refused%'"
  assert_output 1 # the store's words, each once
}

@test "search: PostgreSQL's index of layout 2 (a row a block) is made again, of words and their rows" {
  on_pg || skip "PostgreSQL only: pg_trgm"
  check "$MNT" 'refused'
  store_sql "DROP TABLE runfs_search; CREATE TABLE runfs_search (blk BIGINT PRIMARY KEY, w TEXT NOT NULL);
    INSERT INTO runfs_search (blk, w) SELECT DISTINCT (id - 1) / 64, 'refused' FROM run_events;
    UPDATE runfs_meta SET value = 2 WHERE key = 'search_layout'"
  check "$MNT" 'connection refused'
  check "$MNT" 'filler'
  run store_sql "SELECT (SELECT value FROM runfs_meta WHERE key = 'search_layout') || ',' || (SELECT string_agg(column_name, ',' ORDER BY column_name) FROM information_schema.columns WHERE table_name = 'runfs_search')"
  assert_output 5,blk,m,wid
  # T-bulk's 400 rows fill whole blocks: each row has its own bit, and the row that holds
  # 'filler 97 Connection Refused' is one of few that say refused.
  run store_sql "SELECT sum(length(replace(s.m::bit(64)::text, '0', ''))) < (SELECT count(*) FROM run_events) / 4 FROM runfs_search s JOIN runfs_search_words v ON v.id = s.wid WHERE v.w = 'refused'"
  assert_output t
}

@test "search: PostgreSQL's index of layouts 3 and 4 (a row an eighth or a pair of a block) is made again, of words" {
  on_pg || skip "PostgreSQL only: pg_trgm"
  check "$MNT" 'refused'
  # Layouts 3 and 4 had the same columns: only the mark says which rows they hold. Their
  # rows here each say they hold the words searched: every row a candidate, each answer
  # right, read from an index nobody made again.
  # Each round spells its queries anew: the mount keeps the answers to those it was asked.
  local layout
  for layout in 3 4; do
    store_sql "DROP TABLE runfs_search; DROP TABLE runfs_search_words;
      CREATE TABLE runfs_search (blk BIGINT NOT NULL, r SMALLINT NOT NULL, w TEXT NOT NULL, PRIMARY KEY (blk, r));
      INSERT INTO runfs_search (blk, r, w) SELECT DISTINCT (id - 1) / 64, (id - 1) % 64 / 8, 'connection refused filler' FROM run_events;
      UPDATE runfs_meta SET value = $layout WHERE key = 'search_layout'"
    check "$MNT" "connection refused$([ "$layout" = 4 ] && echo ' connection')"
    check "$MNT" "filler$([ "$layout" = 4 ] && echo ' filler')"
    run store_sql "SELECT (SELECT value FROM runfs_meta WHERE key = 'search_layout') || ',' || (SELECT string_agg(column_name, ',' ORDER BY column_name) FROM information_schema.columns WHERE table_name = 'runfs_search')"
    assert_output 5,blk,m,wid
    run store_sql "SELECT sum(length(replace(s.m::bit(64)::text, '0', ''))) < (SELECT count(*) FROM run_events) / 4 FROM runfs_search s JOIN runfs_search_words v ON v.id = s.wid WHERE v.w = 'refused'"
    assert_output t
  done
}

# trgm_scans: the index scans of the store's words' trigram index that ended backends reported.
trgm_scans() { store_sql "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname = 'runfs_search_w'"; }

@test "search: PostgreSQL scans a word in most of a large index's rows, reading only its words' rows" {
  on_pg || skip "PostgreSQL only: pg_trgm"
  # 6,000 rows (the index large: past 64 blocks), 'thrum' in every one, 'zqrare' in 12.
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 6000)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-dense', 'run-' || (x / 1000), NULL, 'llm.error', 'trace',
      'thrum ' || x || CASE WHEN x % 500 = 0 THEN ' zqrare' ELSE '' END, '{}', x, '2026-03-04 06:00:03.000000' FROM g"
  check "$MNT" 'thrum'
  check "$MNT" 'zqrare'
  # Only ended backends report their scans: no mount's session may report one later.
  runfs_unmount "$MNT"
  runfs_unmount "$WORK/a"
  runfs_unmount "$WORK/b"
  wait_for 10 eval 'test "$(store_sql "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")" -eq 0' ||
    fail "sessions left: $(store_sql "SELECT application_name FROM pg_stat_activity WHERE datname = current_database()")"
  local before
  before=$(trgm_scans)
  # The word in every row: its index rows (one a block) say so, and the scope is scanned.
  # Each word is looked up once in the words' index: one scan each.
  "$RUNFS" search "$STORE" 'thrum' | grep -c . | grep -qx 6000 || fail "thrum: not 6000 lines"
  "$RUNFS" search "$STORE" 'zqrare' | grep -c . | grep -qx 12 || fail "zqrare: not 12 lines"
  wait_for 10 eval 'test "$(trgm_scans)" -ge $((before + 2))' || fail "no index scans reported"
  assert_equal "$(trgm_scans)" $((before + 2))
}

@test "search: on PostgreSQL a word in most rows answered whole keeps each block's candidate rows: changed blocks, rows above the mark and each scope are the reference" {
  on_pg || skip "PostgreSQL only: the rows' statement"
  # 6,000 rows of three threads, interleaved (ids follow no thread's order), 'thrum' in
  # two thirds of them: the index (past 64 blocks) names most rows, so the answer is read
  # by one statement over each thread's rows keeping each block's candidate rows.
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 6000)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-dense' || (x % 3), 'run-' || (x / 1000), NULL, 'llm.error', 'trace',
      CASE WHEN x % 3 = 1 THEN 'hum ' ELSE 'a thrum ' END || x, '{}', x, '2026-03-04 06:00:03.000000' FROM g"
  check "$MNT" 'thrum' || fail "[thrum] at the root, the index made"
  check "$MNT" 'thrum' T-dense2 || fail "[thrum] in a thread"
  check "$MNT" 'thrum' T-dense0 run-3 || fail "[thrum] in a run"
  # Another writer changes rows in indexed blocks (the word gone from some, new in others),
  # deletes some and adds rows above the index's mark. runfs search opens the store
  # read-only: it brings no index up to date, so its statement reads the changed blocks and
  # the new rows as candidates.
  foreign "UPDATE run_events SET content = 'no longer' WHERE thread_id = 'T-dense2' AND seq IN (2, 3002, 5999)"
  foreign "UPDATE run_events SET content = 'now a thrum' WHERE thread_id = 'T-dense1' AND seq IN (1, 2500)"
  foreign "DELETE FROM run_events WHERE thread_id = 'T-dense0' AND seq IN (3, 4200)"
  foreign "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES
    ('T-dense1','run-6',NULL,'llm.error','trace','late thrum',        '{}',7000,'2026-03-04 07:00:00.000000'),
    ('T-dense', 'run-1',NULL,'llm.error','trace','a new thread thrum','{}',1,   '2026-03-04 07:00:00.000000')"
  run store_sql "SELECT (SELECT count(*) FROM runfs_search_dirty) > 0, (SELECT value FROM runfs_meta WHERE key = 'search_upto') < (SELECT max(id) FROM run_events)"
  assert_output 't|t' # changed blocks marked, new rows above the mark
  local t
  for t in '' T-dense2 T-dense1 T-dense; do
    ref thrum "$t" > "$WORK/want"
    "$RUNFS" search "$STORE" thrum $t > "$WORK/got"
    cmp "$WORK/want" "$WORK/got" || fail "runfs search thrum ${t:-at the root} differs from the reference"
  done
}

@test "search: PostgreSQL's index of a later layout (a newer build's) is left whole, and searches scan" {
  on_pg || skip "PostgreSQL only: pg_trgm"
  check "$MNT" 'refused'
  store_sql "UPDATE runfs_meta SET value = 99 WHERE key = 'search_layout'"
  local rows
  rows=$(store_sql "SELECT count(*) FROM runfs_search")
  check "$MNT" 'connection refused'
  check "$MNT" 'filler'
  # The index a newer build made is neither dropped nor made again as this build's.
  run store_sql "SELECT (SELECT value FROM runfs_meta WHERE key = 'search_layout') || ',' || (SELECT count(*) FROM runfs_search)"
  assert_output "99,$rows"
}

@test "search: SQLite's index of an older layout, or with many stale blocks, is made again" {
  skip_on_pg "the FTS5 table's layout"
  check "$MNT" 'refused'
  # An index said to be of layout 2 (which kept a copy of the text) is dropped whole.
  foreign "INSERT INTO runfs_search_gen (blk, gen) VALUES (999999, 5); UPDATE runfs_meta SET value = 2 WHERE key = 'search_layout'"
  # A query not asked yet: no row changed, so 'refused' is read again from the rows its
  # stat kept, with no search to make the index again.
  check "$MNT" 'Refused'
  run store_sql "SELECT (SELECT value FROM runfs_meta WHERE key = 'search_layout') || ',' || (SELECT count(*) FROM runfs_search_gen)"
  assert_output 5,0
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

@test "search: SQLite's index of layout 3 (a block a document, no columns) is made again, not read as the new one" {
  skip_on_pg "the FTS5 table's layout"
  # No search yet: no index. One of layout 3's shape (one column a block, detail=none) that
  # names no block, its mark above every row but the last block's: read as the index, it
  # would say no row below the mark matches.
  run store_sql "SELECT count(*) FROM sqlite_master WHERE name = 'runfs_search'"
  assert_output 0
  foreign "CREATE VIRTUAL TABLE runfs_search USING fts5(t, content = '', columnsize = 0, detail = none);
    CREATE TABLE runfs_search_gen (blk INTEGER PRIMARY KEY, gen INTEGER NOT NULL);
    INSERT OR REPLACE INTO runfs_meta (key, value) SELECT 'search_upto', max(id) / 64 * 64 FROM run_events;
    INSERT OR REPLACE INTO runfs_meta (key, value) VALUES ('search_stale', 0), ('search_layout', 3)"
  run store_sql "SELECT value >= 384 FROM runfs_meta WHERE key = 'search_upto'"
  assert_output 1 # the bulk rows' Connection Refused are below the mark
  check "$MNT" 'connection refused'
  check "$MNT" '"connection refused"'
  run store_sql "SELECT (SELECT value FROM runfs_meta WHERE key = 'search_layout') || ',' || (SELECT sql LIKE '%detail = column%' FROM sqlite_master WHERE name = 'runfs_search')"
  assert_output 5,1
}

@test "search: SQLite's index of layout 4 (a column an eighth) is made again, a column a sixteenth" {
  skip_on_pg "the FTS5 table's layout"
  # Layout 4's shape: c0-c7 and a, its mark above the bulk rows, no document: read as the
  # new one it would name no candidate.
  foreign "CREATE VIRTUAL TABLE runfs_search USING fts5(c0, c1, c2, c3, c4, c5, c6, c7, a, tokenize = 'unicode61', content = '', columnsize = 0, detail = column);
    CREATE TABLE runfs_search_gen (blk INTEGER PRIMARY KEY, gen INTEGER NOT NULL);
    INSERT OR REPLACE INTO runfs_meta (key, value) SELECT 'search_upto', max(id) / 64 * 64 FROM run_events;
    INSERT OR REPLACE INTO runfs_meta (key, value) VALUES ('search_stale', 0), ('search_layout', 4)"
  check "$MNT" '"connection refused"'
  run store_sql "SELECT (SELECT value FROM runfs_meta WHERE key = 'search_layout') || ',' || (SELECT sql LIKE '%c15, a,%' FROM sqlite_master WHERE name = 'runfs_search')"
  assert_output 5,1
}

@test "search: a term's windows in two sixteenths of a block but in no one row match nothing; rows at a sixteenth's edges match" {
  # 4,800 rows in whole 64-row blocks; where a row falls in its block is (id - 1) % 64, the
  # index's sixteenths are rows 0-3, 4-7, ... of a block. In every fifth block, rows at the
  # sixteenths' edges hold the whole term; in the blocks after those, its first half is in
  # a row closing a sixteenth and its second half in the row opening the next (or the next
  # row inside one sixteenth: rows 1 and 2). One block holds a rarer term at its first and
  # last rows and at rows 4 and 8; the next its halves in rows 3 and 4, 5 and 6. Every
  # other row holds some of the terms' windows (qwx, jyq), so the sixteenths they are in
  # name the candidates: many for qwxzpvmk (the scope's rows walked in order), few for
  # jyqqfh (the candidates' ids).
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 4800),
    m(v) AS (SELECT coalesce(max(id), 0) FROM run_events),
    p(x, blk, r) AS (SELECT x, (v + x - 1) / 64, (v + x - 1) % 64 FROM g, m)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-edge', 'run-' || (x / 1000), NULL, 'llm.error', 'trace',
      CASE WHEN blk % 5 = 1 AND r IN (0, 3, 4, 7, 8, 15, 55, 56, 63) THEN 'edge qwxzpvmk row ' || x
           WHEN blk % 5 = 2 AND r IN (1, 3, 7, 15, 23) THEN 'half qwxzp ' || x
           WHEN blk % 5 = 2 AND r IN (2, 4, 8, 16, 24) THEN 'half zpvmk ' || x
           WHEN blk = 45 AND r IN (0, 4, 8, 63) THEN 'rare jyqqfh edge ' || x
           WHEN blk = 46 AND r IN (3, 5) THEN 'rare jyq ' || x
           WHEN blk = 46 AND r IN (4, 6) THEN 'rare qfh ' || x
           ELSE 'filler qwx jyq ' || x END,
      '{\"edge\": true}', x, '2026-03-04 06:00:03.000000' FROM p"
  REF_CACHE=$WORK/refcache; mkdir -p "$REF_CACHE"
  local q
  for q in 'qwxzpvmk' '"edge qwxzpvmk"' 'qwxzp' 'zpvmk' 'jyqqfh' 'rare jyqqfh' 'qwxzpvmk -edge'; do
    check "$MNT" "$q"
    check "$MNT" "$q" T-edge
  done
  run cat "$MNT/search/qwxzpvmk"
  # 1 in 5 of the 75 blocks, 9 rows each (reference: SQL over the rows as written).
  assert_equal "$(printf '%s\n' "$output" | grep -c 'edge qwxzpvmk row')" "$(store_sql "SELECT count(*) FROM run_events WHERE content LIKE 'edge qwxzpvmk row %'")"
  run cat "$MNT/search/jyqqfh"
  assert_equal "$(printf '%s\n' "$output" | grep -c .)" 4
}

@test "search: a query word in several of the store's words, and words in one block but not one row" {
  # 640 rows, 10 blocks of 64: in each eighth of rows, one says "connected alpha", the next
  # "connection beta", the next "gamma", the next "delta". A query word is found in every
  # store word holding it (connect: connected and connection), a row matches where all the
  # query's words are in it, not merely in its block (gamma delta: none).
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 640),
    m(v) AS (SELECT coalesce(max(id), 0) FROM run_events),
    p(x, r) AS (SELECT x, (v + x - 1) % 8 FROM g, m)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-words', 'run-1', NULL, 'llm.error', 'trace',
      CASE r WHEN 0 THEN 'connected alpha ' || x WHEN 1 THEN 'connection beta ' || x
             WHEN 2 THEN 'gamma filler ' || x WHEN 3 THEN 'delta filler ' || x
             ELSE 'filler ' || x END,
      '{}', x, '2026-03-04 06:00:03.000000' FROM p"
  REF_CACHE=$WORK/refcache; mkdir -p "$REF_CACHE"
  local q
  for q in 'connect alpha' 'connect beta' 'connect' 'gamma delta' 'alpha beta' 'connected -alpha'; do
    check "$MNT" "$q"
    check "$MNT" "$q" T-words
  done
  # The counts, from the rows as written (SQL), not from the reference.
  run "$RUNFS" search "$STORE" 'connect alpha' T-words
  assert_equal "$(printf '%s\n' "$output" | grep -c 'connected alpha')" "$(store_sql "SELECT count(*) FROM run_events WHERE content LIKE 'connected alpha %'")"
  assert_equal "$(printf '%s\n' "$output" | grep -c .)" 80
  run "$RUNFS" search "$STORE" 'connect' T-words
  assert_equal "$(printf '%s\n' "$output" | grep -c .)" 160
  run "$RUNFS" search "$STORE" 'gamma delta' T-words
  assert_output ""
}

@test "search: matches past what a search holds in memory are answered whole, in order" {
  skip_on_pg "SQLite's search holds its matches"
  # 24,000 rows; every 16th holds the term and 12 KB besides: its candidates are a quarter
  # of the index's columns, read in id order and held, and their 18 MB pass the 16 MiB a
  # search holds, so it gives up and walks the thread index instead. Threads interleave by
  # id, so the answer's order is not the rows' ids'.
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 24000)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-held-' || (x % 3), 'run-1', NULL, 'llm.error', 'trace',
      CASE WHEN x % 16 = 0 THEN 'heldfall ' || x || ' ' || hex(zeroblob(6000)) ELSE 'other ' || x END,
      '{}', x, '2026-03-04 06:00:03.000000' FROM g"
  check "$MNT" 'heldfall'
  run store_sql "SELECT count(*) FROM run_events WHERE content LIKE 'heldfall %'"
  assert_output 1500
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

# sized_lines PATH: how many times the daemon's log says it computed PATH's size.
sized_lines() { grep -F "sized $1 in " "$WORK/daemon.log" | grep -vcF "(kept)" || true; }

# kept_once PATH N: ls -l, stat, cat and cat again of PATH compute its size once more (N
# times in all), and its bytes and size are the reference's.
kept_once() {
  local path=$1 n=$2 q=$3 t=${4:-}
  ls -l "$MNT/$path" > /dev/null
  stat "$MNT/$path" > /dev/null
  cat "$MNT/$path" > "$WORK/got"
  cat "$MNT/$path" > "$WORK/got2"
  wait_for 5 eval 'test "$(sized_lines "$path")" -ge "$n"' || fail "$path was not sized: $(cat "$WORK/daemon.log")"
  [ "$(sized_lines "$path")" -eq "$n" ] || fail "$path was sized more than once: $(cat "$WORK/daemon.log")"
  ref "$q" "$t" > "$WORK/want"
  cmp "$WORK/want" "$WORK/got" || fail "$path's bytes differ from the reference"
  cmp "$WORK/want" "$WORK/got2" || fail "$path's second read differs from the reference"
  assert_equal "$(stat -c %s "$MNT/$path")" "$(wc -c < "$WORK/want")"
  assert_equal "$(sized_lines "$path")" "$n"
}

# sized_once_between_changes [ENV=VALUE...]: through a mount made with those variables, a
# search's size is computed once between changes, and again after an append, a foreign
# update and a delete, its bytes the reference's each time.
sized_once_between_changes() {
  runfs_unmount "$MNT"
  if [ $# -gt 0 ]; then
    local "$@"
    export "${@%%=*}"
  fi
  # 0 ms: every stat that computes a size says so in the log, however fast.
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/daemon.log"
  local q='connection refused'
  for p in "search/$q" "threads/T-bulk/search/$q"; do
    local t=; [[ $p == threads/* ]] && t=T-bulk
    kept_once "$p" 1 "$q" $t
  done
  printf '{"event_type":"llm.error","content":"Connection refused once more"}\n' >> "$MNT/threads/T-bulk/runs/run-4/events.jsonl"
  kept_once "search/$q" 2 "$q"
  kept_once "threads/T-bulk/search/$q" 2 "$q" T-bulk
  foreign "UPDATE run_events SET content = 'filler gone' WHERE thread_id = 'T-bulk' AND seq = 194"
  wait_for 10 pg_quiet || fail "the hub did not recompute T-bulk after the update: $(pg_busy)"
  kept_once "search/$q" 3 "$q"
  kept_once "threads/T-bulk/search/$q" 3 "$q" T-bulk
  foreign "DELETE FROM run_events WHERE thread_id = 'T-bulk' AND seq = 291"
  wait_for 10 pg_quiet || fail "the hub did not recompute T-bulk after the delete: $(pg_busy)"
  kept_once "search/$q" 4 "$q"
  kept_once "threads/T-bulk/search/$q" 4 "$q" T-bulk
}

@test "search: a search's size is computed once between changes, again after an append, a foreign update and a delete" {
  sized_once_between_changes
}

@test "search: an answer kept on disk (past what memory keeps) is sized once between changes, again after an append, a foreign update and a delete" {
  mkdir -p "$WORK/tmp"
  # 256 bytes in memory: every answer here is larger, so each is kept in a file of TMPDIR.
  sized_once_between_changes RUNFS_KEPT_ANSWER_MAX=256 TMPDIR="$WORK/tmp"
}

@test "search: a stat then a cat of a common word pass over its candidates once, the cat reading the rows the stat kept" {
  runfs_unmount "$MNT"
  # 0 ms: every stat that sizes and every read of the store says so in the log. No answer's
  # bytes kept: the mount keeps its rows' ids.
  RUNFS_KEPT_ANSWER_MAX=0 RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/daemon.log"
  # A word in a seventh of 3,000 rows of 30 threads: in most of the index's blocks, so the
  # search reads every row of the scope.
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 3000)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-w' || (x % 30), 'run-' || (x % 4), NULL, 'llm.error', 'trace',
    'status ' || x || CASE WHEN x % 7 = 0 THEN ' Quokka seen' ELSE '' END, '{}', x, '2026-03-04 06:00:03.000000' FROM g"
  tail_folded
  local q=quokka p args
  for p in "search/$q" "threads/T-w7/search/$q" "threads/T-w7/runs/run-3/search/$q" "search/by:run $q"; do
    stat "$MNT/$p" > /dev/null
    cat "$MNT/$p" > "$WORK/got"
    wait_for 5 eval 'test "$(sized_lines "$p")" -ge 1' || fail "$p was not sized: $(cat "$WORK/daemon.log")"
    assert_equal "$(sized_lines "$p")" 1
    grep -F "read $p at " "$WORK/daemon.log" | grep -qF ': the rows its stat kept' ||
      fail "the cat of $p read no kept rows: $(grep -F "$p" "$WORK/daemon.log")"
    ! grep -F "read $p at " "$WORK/daemon.log" | grep -F 'searched' ||
      fail "the cat of $p searched again after its stat"
    case $p in
      search/by:run*) args=("by:run $q") ;;
      search/*) args=("$q") ;;
      threads/T-w7/search/*) args=("$q" T-w7) ;;
      *) args=("$q" T-w7 run-3) ;;
    esac
    "$RUNFS" search "$STORE" "${args[@]}" > "$WORK/want"
    [ -s "$WORK/want" ] || fail "no match for $p: nothing to tell"
    cmp "$WORK/want" "$WORK/got" || fail "the cat of $p differs from runfs search's"
  done
}

# wallaby_rows: 6,000 rows of 30 threads, every one a hit of "wallaby", some 1.5 MiB of answer.
wallaby_rows() {
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 6000)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-w' || (x % 30), 'run-' || (x % 4), NULL, 'llm.tool.result', 'trace',
    'status ' || x || ': the wallaby service answered after a retry of the upstream request', '{}', x,
    '2026-03-04 06:00:03.000000' FROM g"
  tail_folded
}
# On PostgreSQL rows another writer inserts are the insert trigger's tail until the mount's
# hub folds it (at its next tick: 2,048 rows or more); a fold between a stat and the cat
# after it moves the store's version and drops what the stat kept. Wait for it.
tail_folded() {
  on_pg || return 0
  wait_for 20 tail_is_folded || fail "the mount did not fold the tail of the rows"
}
tail_is_folded() {
  [ "$(store_sql "SELECT (SELECT value FROM runfs_meta WHERE key = 'tail_from') >= (SELECT max(id) FROM run_events)")" = t ]
}
# stat_then_cat P: P's stat (into the caller's size) and cat (into $WORK/got) through the
# mount, the cat reading only the answer the stat kept (the daemon's log says so).
stat_then_cat() {
  size=$(stat -c %s "$MNT/$1")
  cat "$MNT/$1" > "$WORK/got"
  grep -F "read $1 at " "$WORK/daemon.log" | grep -qF ': the answer its stat kept' ||
    fail "the cat of $1 did not read the answer its stat kept: $(grep -F "$1" "$WORK/daemon.log")"
  ! grep -F "read $1 at " "$WORK/daemon.log" | grep -E 'searched|the rows its stat kept' ||
    fail "the cat of $1 read the store again after its stat"
}

# answer_files: the memfds of kept answers the daemon of $MNT holds open.
answer_files() {
  local pid
  pid=$(pgrep -f "runfs mount.* $MNT\$" | head -1)
  find "/proc/$pid/fd" -lname "/memfd:runfs-answer*" 2>/dev/null | wc -l
}

@test "search: a cat after a stat reads the answer's bytes the stat kept, until an append drops them" {
  runfs_unmount "$MNT"
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/daemon.log"
  # Every row a hit, some 1.5 MiB: more than a reader's first 64 KiB and the MiB a read
  # takes ahead of it.
  wallaby_rows
  local q=wallaby p size
  for p in "search/$q" "threads/T-w7/search/$q" "search/by:run $q"; do
    stat_then_cat "$p"
    case $p in
      threads/*) ref "$q" T-w7 > "$WORK/want" ;;
      *by:run*) "$RUNFS" search "$STORE" "by:run $q" > "$WORK/want" ;;
      *) ref "$q" > "$WORK/want" ;;
    esac
    [ -s "$WORK/want" ] || fail "no match for $p: nothing to tell"
    cmp "$WORK/want" "$WORK/got" || fail "the cat of $p differs from the reference"
    assert_equal "$size" "$(wc -c < "$WORK/want")"
  done
  [ "$(answer_files)" -ge 1 ] || fail "the daemon keeps no answer's memfd"
  # A reader that stops after 64 KiB has them at once, the same bytes.
  p=search/$q
  ref "$q" | head -c 65536 > "$WORK/want64"
  timeout 10 head -c 65536 "$MNT/$p" > "$WORK/got64" || fail "head of $p failed or hung"
  cmp "$WORK/want64" "$WORK/got64" || fail "the first 64 KiB of $p differ from the reference"
  # A reader 64 KiB in when an append drops the kept bytes reads on at its offset in the
  # new answer (the row lands last: t-one sorts after every T-w thread), and a new stat
  # keeps the new answer in place of the old.
  local before
  before=$(answer_files)
  exec 8< "$MNT/$p"
  dd bs=65536 count=1 <&8 > "$WORK/part1" 2> /dev/null
  printf '{"event_type":"llm.error","content":"wallaby seen at last"}\n' >> "$MNT/threads/t-one/runs/r1/events.jsonl"
  read_rest > "$WORK/part2"
  exec 8<&-
  ref "$q" > "$WORK/want"
  grep -qF 'wallaby seen at last' "$WORK/want" || fail "the reference lacks the appended row"
  cat "$WORK/part1" "$WORK/part2" | cmp "$WORK/want" - || fail "the reader across the append read other bytes than the new answer's"
  size=$(stat -c %s "$MNT/$p")
  cat "$MNT/$p" > "$WORK/got"
  cmp "$WORK/want" "$WORK/got" || fail "the cat of $p after the append differs from the reference"
  assert_equal "$size" "$(wc -c < "$WORK/want")"
  assert_equal "$(sized_lines "$p")" 2
  # The old answer's file went with its size.
  assert_equal "$(answer_files)" "$before"
  # A reader 192 KiB in when a row lands in the first thread reads on after the last whole
  # line it was given, in the new answer: whole lines, in order, none twice, none torn
  # (the offset alone would shift every later byte by the new line's length).
  stat "$MNT/$p" > /dev/null
  ref "$q" > "$WORK/old"
  exec 8< "$MNT/$p"
  dd bs=65536 count=3 <&8 > "$WORK/part1" 2> /dev/null
  printf '{"event_type":"llm.error","content":"wallaby came first"}\n' >> "$MNT/threads/T-w0/runs/run-0/events.jsonl"
  read_rest > "$WORK/part2"
  exec 8<&-
  ref "$q" > "$WORK/new"
  cat "$WORK/part1" "$WORK/part2" > "$WORK/got"
  python3 - "$WORK/old" "$WORK/new" "$WORK/got" <<'PY' || fail "the reader across an earlier thread's row read torn, repeated or foreign lines"
import json, sys
old, new, got = (open(f, "rb").read().split(b"\n") for f in sys.argv[1:])
known = set(old) | set(new)
keys = []
for line in got[:-1]:
    assert line in known, line[:120]
    e = json.loads(line)
    keys.append((e["thread_id"].encode(), e["seq"]))
assert got[-1] == b"", "the last line is cut"
assert keys == sorted(set(keys)), "lines out of order or given twice"
assert len(keys) >= len(old) - 2, (len(keys), len(old))
PY
  # A foreign update (a rewrite, as a redaction is) drops every kept answer when the
  # mount's hub sees it, with no search asked.
  [ "$before" -ge 3 ] || fail "only $before answers kept before the update"
  foreign "UPDATE run_events SET content = 'wallaby gone' WHERE thread_id = 'T-w7' AND seq = 7"
  wait_for 10 no_answer_files || fail "$(answer_files) answers kept after the update"
}

# disk_files: the unlinked files in $WORK/tmp of kept answers the daemon of $MNT holds open.
disk_files() {
  local pid
  pid=$(pgrep -f "runfs mount.* $MNT\$" | head -1)
  find "/proc/$pid/fd" -lname "$WORK/tmp/*" 2>/dev/null | wc -l
}
no_disk_files() { [ "$(disk_files)" = 0 ]; }

@test "search: an answer past what memory keeps is kept on disk, encrypted, read at any offset until an append or a rewrite drops it" {
  mkdir -p "$WORK/tmp"
  [ "$(stat -f -c %T "$WORK/tmp")" != tmpfs ] || skip "$WORK/tmp is a tmpfs (memory): no answer is kept there"
  runfs_unmount "$MNT"
  # 64 KiB in memory: the answers below (1.5 MiB) go on to a file in TMPDIR.
  RUNFS_KEPT_ANSWER_MAX=65536 TMPDIR="$WORK/tmp" RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/daemon.log"
  wallaby_rows
  local q=wallaby p size pid f
  for p in "search/$q" "search/by:run $q"; do
    stat_then_cat "$p"
    case $p in
      *by:run*) "$RUNFS" search "$STORE" "by:run $q" > "$WORK/want" ;;
      *) ref "$q" > "$WORK/want" ;;
    esac
    [ "$(wc -c < "$WORK/want")" -gt 65536 ] || [[ $p == *by:run* ]] || fail "the answer of $p fits in memory: nothing on disk to tell"
    cmp "$WORK/want" "$WORK/got" || fail "the cat of $p differs from the reference"
    assert_equal "$size" "$(wc -c < "$WORK/want")"
    assert_equal "$(sized_lines "$p")" 1
  done
  [ "$(disk_files)" -ge 1 ] || fail "the daemon keeps no answer's file in TMPDIR"
  # What the disk holds is not the answer's bytes: no line of it, no word of it.
  pid=$(pgrep -f "runfs mount.* $MNT\$" | head -1)
  for f in $(find "/proc/$pid/fd" -lname "$WORK/tmp/*"); do
    [ "$(stat -L -c %s "$f")" -gt 65536 ] || continue
    ! grep -qaF wallaby "$f" || fail "a kept file in TMPDIR holds the answer's bytes as they are"
  done
  # Reads at offsets that are no multiple of anything (a cipher's block, a page) and across
  # the 64 KiB the memory kept: the reference's bytes there.
  p=search/$q
  ref "$q" > "$WORK/want"
  python3 - "$MNT/$p" "$WORK/want" <<'PY' || fail "a read at an odd offset of the kept answer differs from the reference"
import os, sys
want = open(sys.argv[2], "rb").read()
fd = os.open(sys.argv[1], os.O_RDONLY)
for off, n in ((0, 1), (1, 15), (17, 4099), (65535, 3), (65521, 70001), (len(want) - 5, 100), (777777, 1 << 20)):
    got = os.pread(fd, n, off)
    assert got == want[off:off + n], (off, n)
os.close(fd)
PY
  # An append drops the kept file with the size; the next stat keeps the new answer.
  local before
  before=$(disk_files)
  printf '{"event_type":"llm.error","content":"wallaby seen at last"}\n' >> "$MNT/threads/t-one/runs/r1/events.jsonl"
  size=$(stat -c %s "$MNT/$p")
  cat "$MNT/$p" > "$WORK/got"
  ref "$q" > "$WORK/want"
  grep -qF 'wallaby seen at last' "$WORK/want" || fail "the reference lacks the appended row"
  cmp "$WORK/want" "$WORK/got" || fail "the cat of $p after the append differs from the reference"
  assert_equal "$size" "$(wc -c < "$WORK/want")"
  assert_equal "$(sized_lines "$p")" 2
  assert_equal "$(disk_files)" "$before"
  # A foreign update (a rewrite, as a redaction is) drops every kept file when the mount's
  # hub sees it, with no search asked.
  foreign "UPDATE run_events SET content = 'wallaby gone' WHERE thread_id = 'T-w7' AND seq = 7"
  wait_for 10 no_disk_files || fail "$(disk_files) answers kept on disk after the update"
}

@test "search: a by:run reader part way through a kept answer reads on after its last whole line when an append drops it" {
  # 2,000 runs with a hit (100 threads of 20): a by:run answer of some 150 kB, so a reader
  # 64 KiB in is part way through it.
  store_sql "WITH RECURSIVE g(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM g WHERE x < 3999)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-b' || (x / 40), 'run-' || (x % 20), NULL, 'llm.tool.result', 'trace',
    'status ' || x || ': the numbat service answered', '{}', x + 1,
    '2026-03-04 06:00:03.000000' FROM g"
  local p="search/by:run numbat"
  "$RUNFS" search "$STORE" "by:run numbat" > "$WORK/old"
  [ "$(wc -l < "$WORK/old")" = 2000 ] || fail "the reference has $(wc -l < "$WORK/old") runs, not 2000"
  [ "$(wc -c < "$WORK/old")" -gt $((2 * 65536)) ] || fail "the answer is too small to read in parts"
  assert_equal "$(stat -c %s "$MNT/$p")" "$(wc -c < "$WORK/old")"
  [ "$(answer_files)" -ge 1 ] || fail "the daemon keeps no answer's memfd"
  exec 8< "$MNT/$p"
  dd bs=65536 count=1 <&8 > "$WORK/part1" 2> /dev/null
  # A hit in the first thread's first run: every later line of the kept bytes moves.
  printf '{"event_type":"llm.error","content":"numbat seen again"}\n' >> "$MNT/threads/T-b0/runs/run-0/events.jsonl"
  read_rest > "$WORK/part2"
  exec 8<&-
  "$RUNFS" search "$STORE" "by:run numbat" > "$WORK/new"
  cmp -s "$WORK/old" "$WORK/new" && fail "the append changed nothing in the answer"
  cat "$WORK/part1" "$WORK/part2" > "$WORK/got"
  python3 - "$WORK/old" "$WORK/new" "$WORK/got" <<'PY' || fail "the by:run reader across the append read torn, repeated or foreign lines"
import json, sys
old, new, got = (open(f, "rb").read().split(b"\n") for f in sys.argv[1:])
assert got[-1] == b"", "the last line is cut"
known = set(old) | set(new)
order = {}
for line in new[:-1]:
    e = json.loads(line)
    order[(e["thread_id"], e["run_id"])] = len(order)
at = []
for line in got[:-1]:
    assert line in known, line[:120]
    e = json.loads(line)
    at.append(order[(e["thread_id"], e["run_id"])])
assert at == sorted(set(at)), "runs out of the answer's order or given twice"
assert len(at) >= len(old) - 2, (len(at), len(old))
PY
}

no_answer_files() { [ "$(answer_files)" = 0 ]; }

# read_rest: what is left to read of fd 8 on stdout, with no stat (cat's fstat would count
# and keep the new answer first).
read_rest() {
  python3 -c 'import os, sys
while b := os.read(8, 131072):
    sys.stdout.buffer.write(b)'
}

@test "search: a word longer than an index entry holds is found by any part of it, on both backends" {
  # One ASCII word of 3,000 bytes and a CJK run of 1,500 characters (4,500 bytes, one word):
  # PostgreSQL's word table keeps such a word in pieces (a btree entry holds about 2.7 kB),
  # and looks for a query's long word (a query is at most 255 bytes) by its first bytes.
  local long cjk
  # Random, so that PostgreSQL cannot compress them below its entry's size.
  long=$(python3 -c 'import random; random.seed(7); print("".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789") for i in range(3000)))')
  cjk=$(python3 -c 'import random; random.seed(8); print("".join(chr(0x4e00 + random.randrange(20000)) for i in range(1500)))')
  # The long rows first, then rows enough that the index is used: it indexes whole blocks
  # of 64 rows, and a small store's searches scan.
  mkdir -p "$MNT/threads/t-long/runs/r1"
  printf '{"event_type":"llm.error","content":"%s"}\n{"event_type":"llm.error","content":"%s"}\n{"event_type":"llm.error","content":"short words only"}\n' "$long" "$cjk" >> "$MNT/threads/t-long/runs/r1/events.jsonl"
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 6000)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-fill', 'run-1', NULL, 'llm.tool.result', 'trace', 'filler row ' || x, '{}', x,
    '2026-03-04 06:00:03.000000' FROM g"
  local q
  for q in "${long:1500:10}" "${long:1234:200}" "${cjk:700:4}" "${cjk:900:60}" "${long:2990:10}"; do
    ref "$q" t-long > "$WORK/want"
    [ "$(wc -l < "$WORK/want")" = 1 ] || fail "the reference finds $(wc -l < "$WORK/want") lines for a ${#q}-character part"
    # The mount indexes the rows at its first search (the offline command reads the index).
    cat "$MNT/search/$q" > "$WORK/got" || fail "a search of a ${#q}-character part failed on the mount"
    cmp "$WORK/want" "$WORK/got" || fail "the mount's search of a ${#q}-character part differs from the reference"
    "$RUNFS" search "$STORE" "$q" > "$WORK/got" || fail "runfs search of a ${#q}-character part failed"
    cmp "$WORK/want" "$WORK/got" || fail "runfs search of a ${#q}-character part differs from the reference"
  done
}

@test "search: runfs search on PostgreSQL reads its index once, its answer the reference" {
  on_pg || skip "PostgreSQL only: its server log tells the statements runfs ran"
  # New sessions of this test's database log every statement (the mount's stay quiet).
  pg_admin "ALTER DATABASE $PG_DB SET log_min_duration_statement = 0" > /dev/null
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-wb' || (x % 5), 'run-1', NULL, 'llm.error', 'trace',
    CASE WHEN x % 50 = 0 THEN 'wombat burrow ' ELSE 'quiet line ' END || x, '{}', x,
    '2026-03-04 06:00:03.000000' FROM generate_series(1, 5000) x" > /dev/null
  local q=wombat log=$RUNFS_PG_DIR/log before
  # The index is made at a mount's first search (runfs search writes none).
  check "$MNT" "$q"
  # Any statement that reads the index for the term: the candidates' once, not a count of
  # them first (5,000 rows: past the size below which the index narrows uncounted).
  candidates() { grep -cE "execute [^:]*: .*runfs_search_words WHERE w LIKE '%$q%'" "$log"; }
  before=$(candidates)
  "$RUNFS" search "$STORE" "$q" > "$WORK/cli"
  ref "$q" > "$WORK/want"
  cmp "$WORK/want" "$WORK/cli" || fail "runfs search's answer differs from the reference's"
  wait_for 5 eval 'test "$(candidates)" -gt "$before"' || fail "no candidate query in the server log: the search did not use the index"
  # Each read of a reader ran it again from where the last stopped: twice for one read's bytes.
  assert_equal "$(( $(candidates) - before ))" 1
  # A required type is asked of the rows' statement: candidates of other types stay on the
  # server.
  "$RUNFS" search "$STORE" "type:llm.error $q" > "$WORK/cli"
  ref "type:llm.error $q" > "$WORK/want"
  cmp "$WORK/want" "$WORK/cli" || fail "the typed search's answer differs from the reference's"
  [ -s "$WORK/want" ] || fail "no typed match: nothing to tell"
  wait_for 5 grep -q "execute [^:]*: DECLARE .*FROM runfs_search.*e.event_type = \$7" "$log" ||
    fail "the typed search's rows statement does not ask for its type"
}

@test "search: PostgreSQL rows' created_at reads as the server writes it, in every form rows come in" {
  on_pg || skip "PostgreSQL only: rows come as text or binary timestamps"
  # Sessions of this database show dates in another style: runfs's own say ISO.
  pg_admin "ALTER DATABASE $PG_DB SET DateStyle = 'SQL, DMY'" > /dev/null
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-time', 'run-1', NULL, 'llm.error', 'trace', 'stamp ' || x, '{}', x,
    CASE x WHEN 1 THEN timestamptz '0001-01-01 00:00:00+00' WHEN 2 THEN '9999-12-31 23:59:59.999999+00'
      WHEN 3 THEN '1999-12-31 23:59:59.999999+00' WHEN 4 THEN '2000-01-01 00:00:00+00'
      WHEN 5 THEN '2400-02-29 12:34:56.5+00' WHEN 6 THEN '1970-01-01 00:00:00.000001+00'
      ELSE timestamptz '1900-01-01 00:00:00+00' + x * interval '7777777.123457 seconds' END
    FROM generate_series(1, 400) x" > /dev/null
  # The reference is the server's own text of each row's time.
  store_sql "SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"') FROM run_events WHERE thread_id = 'T-time' ORDER BY seq" > "$WORK/want"
  [ "$(wc -l < "$WORK/want")" -eq 400 ] || fail "the reference is not the 400 rows' times"
  times() { grep -o '"created_at":"[^"]*"' | cut -d'"' -f4; }
  # A cursor's first batch comes as text, the rest as binary: a search scanning the thread
  # (runfs search writes no index), the mount's search from its index, a cat of the log.
  "$RUNFS" search "$STORE" stamp T-time | times > "$WORK/got"
  cmp "$WORK/want" "$WORK/got" || fail "runfs search's times differ: $(diff "$WORK/want" "$WORK/got" | head -5)"
  times < "$MNT/threads/T-time/search/stamp" > "$WORK/got"
  cmp "$WORK/want" "$WORK/got" || fail "the mount's search's times differ: $(diff "$WORK/want" "$WORK/got" | head -5)"
  "$RUNFS" cat "$STORE" threads/T-time/events.jsonl | times > "$WORK/got"
  cmp "$WORK/want" "$WORK/got" || fail "runfs cat's times differ: $(diff "$WORK/want" "$WORK/got" | head -5)"
}

@test "search: a row appended between a search's stat and its cat is in the cat's bytes" {
  local q='connection refused' p
  for p in "search/$q" "threads/t-one/search/$q" "search/by:run $q"; do
    stat "$MNT/$p" > /dev/null
    printf '{"event_type":"llm.error","content":"connection refused, late %s"}\n' "${p%%/*}" >> "$MNT/threads/t-one/runs/r1/events.jsonl"
    cat "$MNT/$p" > "$WORK/got"
    if [[ $p == threads/* ]]; then
      "$RUNFS" search "$STORE" "$q" t-one > "$WORK/want"
    else
      "$RUNFS" search "$STORE" "${p#search/}" > "$WORK/want"
    fi
    [[ $p == *by:run* ]] || grep -qF "late ${p%%/*}" "$WORK/got" || fail "the row appended after the stat of $p is not in its cat"
    cmp "$WORK/want" "$WORK/got" || fail "the cat of $p after an append differs from runfs search's: $(diff "$WORK/want" "$WORK/got")"
  done
}

@test "search: a lookup the hub tells of while it looks sizes nothing and logs no size" {
  # A thread shared by two owners, written by another program: an owner's stat counts its
  # share of the rows, long enough that the hub's tick finds a lookup under way.
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 100000)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-mix', 'run-1', CASE WHEN x % 2 = 0 THEN 'alice' ELSE 'bob' END, 'llm.error', 'trace',
    'mixed ' || x || CASE WHEN x % 997 = 0 THEN ' connection refused' ELSE '' END,
    '{}', x, '2026-03-04 06:00:03.000000' FROM g"
  # The planner's statistics of the new rows, as autovacuum makes them a little later.
  if on_pg; then store_sql "ANALYZE run_events"; fi
  runfs_unmount "$WORK/a"
  # 0 ms: the tick tells of every stat it finds under way.
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$WORK/a" --user alice --log "$WORK/daemon.log"
  # The thread and its search directory known (the kernel keeps their entries): each stat
  # below looks up a search no stat has seen, then sizes it.
  stat "$WORK/a/threads/T-mix/search" > /dev/null
  local q p told=0 round
  for round in 1 2 3 4 5 6 7 8; do
    q="connection refused $round"
    [ "$round" -eq 1 ] && q='connection refused'
    p="threads/T-mix/search/$q"
    stat "$WORK/a/$p" > /dev/null
    cat "$WORK/a/$p" > "$WORK/got"
    ref "$q" T-mix '' alice > "$WORK/want"
    cmp "$WORK/want" "$WORK/got" || fail "$p's bytes differ from the reference"
    # Every line that says the search was sized says its size, once: a lookup sizes nothing
    # (a later stat that finds the size kept says so: (kept)).
    run sh -c 'grep -F "sized $1 in " "$2" | grep -vF "(kept)"' _ "$p" "$WORK/daemon.log"
    [ "${#lines[@]}" -eq 1 ] && [[ $output == *": $(wc -c < "$WORK/want") bytes" ]] ||
      fail "$p was sized other than once at its size: $(grep -F "$p" "$WORK/daemon.log")"
    grep -qF "sizing $p: nothing rendered after all" "$WORK/daemon.log" && told=1 && break
  done
  [ "$told" -eq 1 ] || fail "the tick found no lookup under way: $(cat "$WORK/daemon.log")"
}

@test "search: by:run is a line per matching run, grep -c's counts in the answer's order, at the root, in a thread and in a run" {
  # Runs whose matches interleave (run-1's last match after run-9's first), and enough
  # threads that the answer is read in many pieces.
  store_sql "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at) VALUES
    ('T-bulk','run-9',NULL,'llm.error','trace','Connection refused late','{}',1000,'2026-03-04 07:00:00.000000'),
    ('T-bulk','run-1',NULL,'llm.error','trace','connection refused later','{}',1001,'2026-03-04 07:00:01.000000')"
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 600)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-many-' || (x % 300), 'run-' || (x % 7), NULL, 'llm.error', 'trace', 'many connection refused ' || x,
    '{}', x, '2026-03-04 06:00:03.000000' FROM g"
  local q
  # Nothing is written during the checks: each thread's reference is read once.
  REF_CACHE=$WORK/refcache
  mkdir -p "$REF_CACHE"
  for q in 'connection refused by:run' 'by:run refused -again' 'by:run type:llm.error' 'by:run filler' \
    'by:run x' 'by:run zzz-none' 'by:run category:message' 'by:run -type:run.start' '"by:run" refused'; do
    check "$MNT" "$q" || fail "by:run [$q] at the root"
    check "$MNT" "$q" T-bulk || fail "by:run [$q] in T-bulk"
    check "$MNT" "$q" t-one || fail "by:run [$q] in t-one"
    check "$MNT" "$q" T-bulk run-1 || fail "by:run [$q] in T-bulk's run-1"
    check "$WORK/a" "$q" '' '' alice || fail "by:run [$q] as alice"
  done
  # The counts are grep -c's: each run's matching events.
  run cat "$MNT/threads/T-bulk/search/by:run connection refused"
  assert_line --index 0 '{"thread_id":"T-bulk","run_id":"run-0","matches":1,"first_seq":97,"last_seq":97}'
  assert_equal "$(grep -c '"run_id":"run-1"' <<< "$output")" 1
  # Read a byte range at a time from odd offsets: every piece resumes where the last ended.
  python3 - "$MNT/search/by:run refused" "$WORK/pieces" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
out, off = b'', 0
while True:
    b = os.pread(fd, 77, off)
    if not b:
        break
    out += b
    off += len(b)
open(sys.argv[2], 'wb').write(out)
PY
  ref 'by:run refused' > "$WORK/want"
  REF_CACHE=
  cmp "$WORK/want" "$WORK/pieces" || fail "by:run read in pieces differs: $(diff "$WORK/want" "$WORK/pieces")"
  [ "$(wc -l < "$WORK/want")" -gt 300 ] || fail "too few runs to read in pieces"
  # by:run alone is no term: EINVAL with the reason.
  run stat "$MNT/search/by:run"
  assert_failure
  grep -q 'the query has no terms' "$MNT/.runfs/rejects.jsonl" || fail "no reason for a query of by:run alone"
}

# settled: no transaction with an id is in flight (PostgreSQL: a root search's version
# names those, so a version taken while one runs is not the next one's).
settled() {
  ! on_pg || [ "$(store_sql "SELECT count(*) FROM pg_stat_activity
    WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()")" = 0 ]
}

unsettled() {
  store_sql "SELECT 'in flight: ' || left(query, 80) FROM pg_stat_activity
    WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()"
}

@test "search: a reader of the first 64 KiB of a common phrase's answer over 50k events streams it, nothing counted until a stat" {
  runfs_unmount "$MNT"
  # 0 ms: every stat that counts a size says so in the log, however fast.
  RUNFS_SLOW_MS=0 runfs_mount "$STORE" "$MNT" --log "$WORK/daemon.log"
  store_sql "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 50000)
    INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-c' || (x % 50), 'run-' || (x % 7), NULL, 'llm.tool.result', 'trace',
    'tool said: Connection refused by db-' || x || ' after a retry of the request to the upstream service',
    '{\"caller\": \"lead_agent\"}', x, '2026-03-04 06:00:03.000000' FROM g"
  # The index is made at the first search (once per store, not the reader's wait).
  run cat "$MNT/search/Needle-42"
  assert_success
  wait_for 10 settled || fail "the hub did not recompute the inserted threads: $(unsettled)"
  local q='connection refused by' p size
  ref "$q" > "$WORK/want"
  [ "$(wc -c < "$WORK/want")" -gt $((4 * 1024 * 1024)) ] || fail "the answer is too small to tell"
  # head opens the file (the kernel's permission check asks for its attributes, as a stat
  # does) and reads 64 KiB: the answer's first lines, with no count of the whole answer. The
  # daemon tells that GETATTR by the opener's /proc/TID/syscall, which Yama's ptrace_scope
  # hides from a daemon that is not root: there it counts, as a stat.
  local tells=1
  [ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2> /dev/null || echo 0)" = 0 ] || tells=0
  for p in "search/$q" "threads/T-c7/search/$q"; do
    timeout 10 head -c 65536 "$MNT/$p" > "$WORK/got" || fail "head of $p failed or hung"
    [ "$tells" = 0 ] || assert_equal "$(sized_lines "$p")" 0
    case $p in threads/*) ref "$q" T-c7 > "$WORK/want1" ;; *) cp "$WORK/want" "$WORK/want1" ;; esac
    head -c 65536 "$WORK/want1" | cmp - "$WORK/got" || fail "the first 64 KiB of $p differ from the reference's"
    # A stat counts it, exactly, once.
    assert_equal "$(stat -c %s "$MNT/$p")" "$(wc -c < "$WORK/want1")"
    wait_for 5 eval 'test "$(sized_lines "$p")" -ge 1' || fail "the stat of $p did not size it: $(grep -F "$p" "$WORK/daemon.log")"
    assert_equal "$(sized_lines "$p")" 1
  done
  # A reader that reads a fresh answer to its end with no stat (dd: no fstat) learns its
  # size at one version: the stat after it counts nothing, and says the exact size.
  p="threads/T-c9/search/$q"
  dd if="$MNT/$p" bs=65536 of="$WORK/got" 2> /dev/null
  ref "$q" T-c9 > "$WORK/want1"
  cmp "$WORK/want1" "$WORK/got" || fail "dd of $p read other bytes than the reference's"
  assert_equal "$(stat -c %s "$MNT/$p")" "$(wc -c < "$WORK/want1")"
  assert_equal "$(sized_lines "$p")" 0
  grep -qF "sized $p in " "$WORK/daemon.log" || fail "the stat of $p after dd found no size kept"
  # Far into an answer nothing counted, dd is reading it all: counted once, as a stat counts
  # it, the rest is read from the bytes that kept, the same bytes.
  p="search/  $q"
  dd if="$MNT/$p" bs=131072 of="$WORK/got" 2> /dev/null
  cmp "$WORK/want" "$WORK/got" || fail "dd of $p read other bytes than the reference's"
  grep -F "read $p at " "$WORK/daemon.log" | grep -qF ': counted the answer, read the bytes it kept' ||
    fail "dd of $p did not count the answer part way: $(grep -F "$p" "$WORK/daemon.log")"
  assert_equal "$(stat -c %s "$MNT/$p")" "$(wc -c < "$WORK/want")"
  assert_equal "$(sized_lines "$p")" 0
  # One whose reads span a change learns no size: a row lands in the first thread while the
  # reader is in the second, so its bytes add up to the old answer's size, not the new's.
  p="search/ $q"
  ref "$q" T-c0 > "$WORK/c0-old"
  exec 8< "$MNT/$p"
  dd bs=65536 count=5 <&8 > "$WORK/part1" 2> /dev/null
  grep -qF '"thread_id":"T-c1"' "$WORK/part1" || fail "the reader is not past the first thread yet"
  printf '{"event_type":"llm.error","content":"Connection refused by db-0 once more"}\n' >> "$MNT/threads/T-c0/runs/run-0/events.jsonl"
  read_rest > "$WORK/part2"
  exec 8<&-
  wait_for 10 settled || fail "the hub did not settle after the append: $(unsettled)"
  ref "$q" T-c0 > "$WORK/c0-new"
  size=$(( $(wc -c < "$WORK/want") + $(wc -c < "$WORK/c0-new") - $(wc -c < "$WORK/c0-old") ))
  [ "$size" -gt "$(wc -c < "$WORK/want")" ] || fail "the appended row is not in the answer"
  assert_equal "$(stat -c %s "$MNT/$p")" "$size"
  wait_for 5 eval 'test "$(sized_lines "$p")" -ge 1' || fail "the stat of $p did not size it: $(grep -F "$p" "$WORK/daemon.log")"
  # The command line streams the same first bytes.
  "$RUNFS" search "$STORE" "$q" | head -c 65536 > "$WORK/cli"
  head -c 65536 "$WORK/want" | cmp - "$WORK/cli" || fail "runfs search's first 64 KiB differ from the reference's"
}

# deerflow_row THREAD RUN SEQ TEXT: DeerFlow's insert of one row, under its thread's lock.
deerflow_row() {
  printf "SELECT pg_advisory_xact_lock(hashtext(CAST('%s' AS text))::bigint);
INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
  VALUES ('%s','%s',NULL,'llm.error','trace','%s','{}',%s,'2026-03-04 08:00:00.000000');\n" "$1" "$1" "$2" "$4" "$3"
}

@test "search: a row whose id was taken before another's but committed after is in the sizes and bytes" {
  on_pg || skip "PostgreSQL only: SQLite's writers commit in the order of their ids"
  local q='okapi-31' tops
  check "$MNT" "$q"
  check "$MNT" "$q" T-deer
  check "$MNT" "$q" T-deer run-1
  # Session 1 takes an id and holds its transaction open; session 2 takes the next id and
  # commits first: the highest id is then the same before and after session 1 commits.
  mkfifo "$WORK/s1"
  PGOPTIONS='-c client_min_messages=warning' psql -X -q -At -v ON_ERROR_STOP=1 -d "$STORE" < "$WORK/s1" > "$WORK/s1.out" 2>&1 &
  local s1=$!
  exec 7> "$WORK/s1"
  { echo 'BEGIN;'; deerflow_row T-deer run-1 20 "late $q row"; echo "\\echo held"; } >&7
  wait_for 10 grep -q held "$WORK/s1.out"
  store_sql "BEGIN; $(deerflow_row T-bulk run-4 500 "early $q row") COMMIT;"
  tops=$(store_sql "SELECT max(id) FROM run_events")
  check "$MNT" "$q"
  check "$MNT" "$q" T-deer
  check "$MNT" "$q" T-deer run-1
  [ "$(grep -c . "$WORK/got")" -eq 0 ]
  echo 'COMMIT;' >&7
  exec 7>&-
  wait "$s1"
  [ "$(store_sql "SELECT max(id) FROM run_events")" = "$tops" ]
  # Both rows, at the root, in the late row's thread and in its run.
  check "$MNT" "$q" || { echo "the root search of [$q] is stale after the earlier id committed"; false; }
  [ "$(grep -c . "$WORK/got")" -eq "$(store_sql "SELECT count(*) FROM run_events WHERE content LIKE '%$q%'")" ]
  [ "$(grep -c . "$WORK/got")" -eq 2 ]
  check "$MNT" "$q" T-deer
  check "$MNT" "$q" T-deer run-1
  [ "$(grep -c . "$WORK/got")" -eq 1 ]
}

# vacuums: how many times runfs_search was VACUUMed by hand (runfs's; autovacuum counts apart).
vacuums() { store_sql "SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'runfs_search'::regclass"; }

@test "search: on PostgreSQL a catch-up of a few blocks leaves runfs_search unvacuumed; one of many blocks vacuums it" {
  on_pg || skip "PostgreSQL only: its index's VACUUM"
  check "$MNT" 'quokka'
  store_sql "ALTER TABLE runfs_search SET (autovacuum_enabled = false)" > /dev/null
  local v0
  v0=$(vacuums)
  # Two new blocks, indexed by the search (or the hub first): no VACUUM for them.
  foreign "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-few', 'run-1', NULL, 'llm.error', 'trace', 'few ' || x || CASE WHEN x = 7 THEN ' quokka' ELSE '' END,
    '{}', x, '2026-03-04 09:00:00.000000' FROM generate_series(1, 128) x"
  check "$MNT" 'quokka'
  [ "$(grep -c . "$WORK/got")" -eq 1 ]
  [ "$(vacuums)" -eq "$v0" ] || fail "a catch-up of two blocks vacuumed runfs_search ($v0 -> $(vacuums))"
  # Forty blocks: vacuumed by whoever indexed them.
  foreign "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-many', 'run-1', NULL, 'llm.error', 'trace', 'many ' || x || CASE WHEN x = 9 THEN ' quokka' ELSE '' END,
    '{}', x, '2026-03-04 09:00:00.000000' FROM generate_series(1, 2560) x"
  check "$MNT" 'quokka'
  [ "$(grep -c . "$WORK/got")" -eq 2 ]
  wait_for 10 eval 'test "$(vacuums)" -gt "$v0"' || fail "a catch-up of forty blocks left runfs_search unvacuumed"
}

@test "search: on PostgreSQL the first search after a large foreign insert brings the planner's statistics up to date" {
  on_pg || skip "PostgreSQL only: its planner's statistics"
  check "$MNT" 'quokka'
  # Autovacuum's ANALYZE, if its next round fell between the insert and the search, would
  # leave runfs nothing to do and this test nothing to see.
  store_sql "ALTER TABLE run_events SET (autovacuum_enabled = false); ALTER TABLE runfs_search SET (autovacuum_enabled = false)" > /dev/null
  store_sql "SELECT pg_stat_reset_single_table_counters('run_events'::regclass)" > /dev/null
  [ -z "$(store_sql "SELECT last_analyze FROM pg_stat_user_tables WHERE relid = 'run_events'::regclass")" ]
  foreign "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 'T-many-' || (x % 20), 'run-1', NULL, 'llm.error', 'trace', 'many ' || x || CASE WHEN x % 499 = 0 THEN ' quokka' ELSE '' END,
    '{}', x / 20 + 1, '2026-03-04 09:00:00.000000' FROM generate_series(0, 19999) x"
  check "$MNT" 'quokka'
  [ "$(grep -c . "$WORK/got")" -eq 41 ]
  # The search's catch-up or the hub's (which may take the rows first, or a share of them)
  # runs it (autovacuum's sets last_autoanalyze, not last_analyze).
  analyzed() {
    [ "$(store_sql "SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_stat_user_tables WHERE relname IN ('run_events', 'runfs_search') AND last_analyze IS NOT NULL")" = run_events,runfs_search ]
  }
  wait_for 20 analyzed || fail "not both tables analyzed: $(store_sql "SELECT relname, last_analyze FROM pg_stat_user_tables WHERE relname IN ('run_events', 'runfs_search')")"
}

# lock_waiting SQL_PREFIX: a session of the store's database waits for a lock, in a statement
# that starts so.
lock_waiting() {
  [ "$(store_sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
    AND query LIKE '$1%'")" -ge 1 ]
}

# done_or_waiting PID N: process PID has ended, or N sessions wait for a lock.
done_or_waiting() {
  ! kill -0 "$1" 2>/dev/null ||
    [ "$(store_sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")" -ge "$2" ]
}

# bulk_block: ID1 and ID2, T-bulk's first two rows, and BLK, the index block they share.
bulk_block() {
  ID1=$(store_sql "SELECT min(id) FROM run_events WHERE thread_id = 'T-bulk'")
  ID2=$(store_sql "SELECT min(id) FROM run_events WHERE thread_id = 'T-bulk' AND id > $ID1")
  BLK=$(((ID1 - 1) / 64))
  [ $(((ID2 - 1) / 64)) -eq "$BLK" ] || fail "rows $ID1 and $ID2 should share a block"
}

# hold SQL: session L (a psql on fd 7, its pid L) runs SQL, which leaves a transaction open;
# release SQL ends it.
hold() {
  mkfifo "$WORK/l"
  PGOPTIONS='-c client_min_messages=warning' psql -X -q -At -v ON_ERROR_STOP=1 -d "$STORE" < "$WORK/l" > "$WORK/l.out" 2>&1 &
  L=$!
  exec 7> "$WORK/l"
  echo "$1 \\echo held" >&7
  wait_for 10 grep -q held "$WORK/l.out" || fail "session L did not hold: $(cat "$WORK/l.out")"
}
release() {
  echo "$1" >&7
  exec 7>&-
  wait "$L"
}

@test "search: a block a foreign writer changes while a search's catch-up indexes it is indexed again" {
  on_pg || skip "PostgreSQL only: SQLite's writers and its catch-up take turns"
  check "$MNT" wapiti # the index made and caught up
  bulk_block
  foreign "UPDATE run_events SET content = 'filler tweak' WHERE id = $ID1"
  # Session L holds the block's mark: the next search's catch-up reads the block's rows,
  # then waits to take the mark.
  hold "BEGIN; SELECT blk FROM runfs_search_dirty WHERE blk = $BLK FOR UPDATE;"
  cat "$MNT/search/tweak" > /dev/null &
  local searcher=$!
  wait_for 10 lock_waiting "DELETE FROM runfs_search_dirty" || fail "the catch-up did not wait for the mark"
  # A foreign writer changes the other row of the block after the catch-up read it (marking
  # the block again waits for L too, where the mark is taken again rather than found there).
  store_sql "UPDATE run_events SET content = 'filler wapiti' WHERE id = $ID2" &
  local writer=$!
  wait_for 10 done_or_waiting "$writer" 2 || fail "the writer neither finished nor waited"
  release 'COMMIT;'
  wait "$searcher"
  wait "$writer"
  # The writer's word is found: the block was indexed again from its rows.
  check "$MNT" wapiti || fail "a row changed during a catch-up is missing from the search's answer"
  [ "$(grep -c . "$WORK/got")" -eq 1 ] || fail "wapiti should be in one row: $(cat "$WORK/got")"
  check "$MNT" tweak
}

@test "search: on PostgreSQL a redaction looks for orphan words among its block's words only" {
  on_pg || skip "PostgreSQL only: its index's words"
  check "$MNT" refused
  # A word no block holds that is none of the redacted block's: a redaction's cost is its
  # block's words, not the store's vocabulary, so it stays; the redacted row's own goes.
  store_sql "INSERT INTO runfs_search_words (w) VALUES ('strayword')" > /dev/null
  run "$RUNFS" redact "$STORE" t-one 2 --reason "asked to forget"
  assert_success
  [ "$(store_sql "SELECT count(*) FROM runfs_search_words WHERE w = 'strayword'")" = 1 ] || fail "the redaction looked at every word of the store"
  check "$MNT" 'db-7'
  [ "$(grep -c . "$WORK/got")" -eq 0 ]
  [ "$(store_sql "SELECT count(*) FROM runfs_search_words WHERE w = 'db'")" = 0 ]
}

@test "search: a redaction racing a search's catch-up leaves none of the old words in the index" {
  on_pg || skip "PostgreSQL only: SQLite's writers and its catch-up take turns"
  bulk_block
  local seq2
  seq2=$(store_sql "SELECT seq FROM run_events WHERE id = $ID2")
  foreign "UPDATE run_events SET content = 'filler okapisecret' WHERE id = $ID2"
  check "$MNT" okapisecret # indexed
  foreign "UPDATE run_events SET content = 'filler tweak' WHERE id = $ID1"
  # Session L holds the key of the block's word filler, in a row it has not committed: the
  # next search's catch-up, having read the block's rows (the secret among them), waits to
  # write their words.
  hold "DELETE FROM runfs_search WHERE blk = $BLK AND wid = (SELECT id FROM runfs_search_words WHERE w = 'filler'); BEGIN; INSERT INTO runfs_search (wid, blk, m) SELECT id, $BLK, 0 FROM runfs_search_words WHERE w = 'filler';"
  cat "$MNT/search/tweak" > /dev/null &
  local searcher=$!
  wait_for 10 lock_waiting "INSERT INTO runfs_search" || fail "the catch-up did not wait to write the block's words"
  "$RUNFS" redact "$STORE" T-bulk "$seq2" --reason "asked to forget" > "$WORK/redact.out" 2>&1 &
  local redactor=$!
  # The redaction waits for the catch-up (the index's lock), or, on a build that does not,
  # is done before it.
  wait_for 10 done_or_waiting "$redactor" 2 || fail "the redaction neither finished nor waited"
  release 'ROLLBACK;'
  wait "$searcher"
  wait "$redactor" || fail "runfs redact failed: $(cat "$WORK/redact.out")"
  # When the redaction has returned, and no search has run since, the index holds none of
  # the redacted words.
  run store_sql "SELECT count(*) FROM runfs_search_words WHERE w LIKE '%okapisecret%'"
  assert_output 0
  check "$MNT" okapisecret
  [ "$(grep -c . "$WORK/got")" -eq 0 ] || fail "the redacted row is still found: $(cat "$WORK/got")"
}

@test "search: rows runfs stored that a common word's columns rule out are passed over; the answer is the reference, read whole and by the rows a stat kept" {
  runfs_unmount "$MNT"
  # No answer's bytes kept: a cat after a stat reads the rows the stat kept, runs of them
  # by their ids' range.
  RUNFS_KEPT_ANSWER_MAX=0 runfs_mount "$STORE" "$MNT"
  # 4,800 rows put by runfs in four threads (past the index's 64 blocks, a word in a third
  # of the rows is in most of its columns: every row is read): the word at a content's
  # start and end, inside longer tokens, in capitals, beside escaped bytes (a quote, a
  # newline, a tab), beside other Unicode and in JSON content and metadata.
  local t i
  for t in 1 2 3 4; do
    mkdir -p "$MNT/threads/T-may$t/runs/r1"
    for ((i = 1; i <= 1200; i++)); do
      case $((i % 9)) in
        0) ev_error "wombat at the start $i" ;;
        1) ev_error "ends with a wombat" ;;
        2) ev_error "the wombats' burrow $i" ;;
        3) ev_error "a WomBat in capitals" ;;
        4) ev_error 'a \"wombat\" quoted, then a line\nwombat\tafter a tab' ;;
        5) ev_ai "wömbat and wombat ☕ $i" "$i" ;;
        6) ev_human "nothing here but a womb and a bat $i" "$i" ;;
        7) printf '{"event_type":"llm.error","content":"plain %s","metadata":{"caller":"lead","zoo":"Wombat-7"}}\n' "$i" ;;
        8) ev_error "filler line $i with nothing" ;;
      esac
    done > "$WORK/lines"
    cat "$WORK/lines" >> "$MNT/threads/T-may$t/runs/r1/events.jsonl"
  done
  local q
  for q in wombat 'WOMBAT' 'ombat' 'wombats' '"a wombat"' '"a \"' 'n\nwombat' 'wombat\t' 'bat ☕' \
    'wömbat' '"wombat\"' 'wombat-7' 'wombat-7 lead' 'wombat -capitals' 'type:llm.ai.response wombat' \
    'womb' 'wo' 'by:run wombat'; do
    case $q in
      by:run*) ;;
      *) check "$MNT" "$q" || fail "[$q] at the root"
         check "$MNT" "$q" T-may2 || fail "[$q] in a thread"
         check "$MNT" "$q" T-may3 r1 || fail "[$q] in a run" ;;
    esac
    # The size first, then the bytes: the rows the stat kept, read again.
    local p="search/  $q"
    stat -c %s "$MNT/$p" > "$WORK/size"
    cat "$MNT/$p" > "$WORK/got"
    ref "$q" > "$WORK/want"
    cmp "$WORK/want" "$WORK/got" || fail "a stat then a cat of [$q] differs from the reference"
    [ "$(cat "$WORK/size")" -eq "$(wc -c < "$WORK/want")" ] || fail "the size of [$q] is not its bytes"
  done
}
