#!/usr/bin/env bats
# grants.bats — the edges a user meets with PostgreSQL (issue 38): a read-write mount of
# DeerFlow's database with exactly the README's grants, touching no object runfs did not
# make; and a malformed URI's error that never shows its secrets.
load lib

setup() {
  # DeerFlow's role owns the database and makes its table first: no runfs tables before.
  RUNFS_PG_TEMPLATE= runfs_workdir
  ROLES=()
}

teardown() {
  local rc=0 r
  runfs_teardown || rc=1
  for r in "${ROLES[@]}"; do
    pg_admin "DROP ROLE IF EXISTS $r" >/dev/null || rc=1
  done
  return "$rc"
}

README=$BATS_TEST_DIRNAME/../../README.md

# readme_grants ROLE: the README's statements for sharing DeerFlow's database (the indented
# block after "Sharing DeerFlow's database instead"), with its role `runfs` renamed ROLE (a
# role is the cluster's, and suites share the cluster).
readme_grants() {
  sed -n "/^Sharing DeerFlow's database instead/,/^Keep the password/p" "$README" |
    sed -n 's/^    //p' | sed "s/\\brunfs\\b/$1/g"
}

# deerflow_db: the test's database owned by DeerFlow's role DF (as a deployment's would be:
# its public schema is DF's), DeerFlow's table made by DF, and the role RF made and granted
# by the README's statements; RF_URI connects as RF.
deerflow_db() {
  DF=${PG_DB}_df
  RF=${PG_DB}_rf
  ROLES=("$RF" "$DF")
  pg_admin "CREATE ROLE $DF LOGIN" >/dev/null
  pg_admin "ALTER DATABASE $PG_DB OWNER TO $DF" >/dev/null
  DF_URI=$(printf '%s\n' "$STORE" | sed "s/user=[^&]*/user=$DF/")
  RF_URI=$(printf '%s\n' "$STORE" | sed "s/user=[^&]*/user=$RF/")
  store_sql "$(cat "$BATS_TEST_DIRNAME/../data/deerflow-schema-postgresql.sql")" "$DF_URI"
  readme_grants "$RF" > "$WORK/grants.sql"
  # The block is a role and its three grants; a README reworded so that the block moved
  # must fail here, not test nothing.
  [ "$(grep -c '^CREATE ROLE ' "$WORK/grants.sql")" -eq 1 ] || fail "no CREATE ROLE in the README's block"
  [ "$(grep -c '^GRANT ' "$WORK/grants.sql")" -eq 3 ] || fail "not three GRANTs in the README's block"
  pg_admin "$(grep '^CREATE ROLE ' "$WORK/grants.sql")" >/dev/null
  store_sql "$(grep '^GRANT ' "$WORK/grants.sql")" "$DF_URI"
}

# events_objects: what is on run_events, one per line: its owner, grants and columns, and its
# indexes, constraints and triggers with their definitions.
events_objects() {
  store_sql "SELECT 'owner ' || pg_get_userbyid(relowner) || ' acl ' || coalesce(relacl::text, '') FROM pg_class WHERE oid = 'run_events'::regclass
    UNION ALL SELECT 'column ' || attname || ' ' || format_type(atttypid, atttypmod) || ' ' || attnotnull
      FROM pg_attribute WHERE attrelid = 'run_events'::regclass AND attnum > 0 AND NOT attisdropped
    UNION ALL SELECT 'index ' || pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'run_events'::regclass
    UNION ALL SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'run_events'::regclass
    UNION ALL SELECT 'trigger ' || tgname || ' ' || tgenabled::text FROM pg_trigger WHERE tgrelid = 'run_events'::regclass
    ORDER BY 1" "$STORE"
}

@test "grants: a read-write mount of DeerFlow's PostgreSQL database with exactly the README's grants" {
  on_pg || skip "PostgreSQL only: roles and grants"
  deerflow_db
  events_objects > "$WORK/before"
  grep -q '^index .*ix_events_run' "$WORK/before" || fail "DeerFlow's schema is not in place"
  runfs_mount "$RF_URI" "$MNT"
  local d=$MNT/threads/t-g/runs/r1
  mkdir -p "$d"
  { ev_start; ev_human 'granted'; } >> "$d/events.jsonl"
  (set -C; ev_terminal success > "$d/once/run.terminal")
  # A second exclusive create of the singleton is refused by the store (EEXIST), not by the
  # shell's look first.
  run python3 -c 'import os, sys; os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL)' "$d/once/run.terminal"
  assert_failure
  assert_output --partial 'File exists'
  (set -C; : > "$d/seal.json")
  run ls "$MNT/threads"
  assert_output t-g
  run cut -d, -f3-5 "$MNT/threads/t-g/events.jsonl"
  assert_output "$(printf '%s\n' '"seq":1,"event_type":"run.start","category":"trace"' \
    '"seq":2,"event_type":"llm.human.input","category":"message"' \
    '"seq":3,"event_type":"run.terminal","category":"trace"')"
  # The rows are in DeerFlow's table, as DeerFlow's role reads them.
  run store_sql "SELECT seq, event_type FROM run_events WHERE thread_id = 't-g' ORDER BY seq" "$DF_URI"
  assert_output "$(printf '1|run.start\n2|llm.human.input\n3|run.terminal')"
  run cat "$d/seal.json"
  assert_output --partial '"state":"sealed"'
  assert_output --partial '"terminal_seq":3'
  # A row DeerFlow's role adds shows up: runfs's triggers run for DeerFlow's writes.
  store_sql "BEGIN; SELECT pg_advisory_xact_lock(hashtext(CAST('t-df' AS text))::bigint);
    INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at)
    VALUES ('t-df', 'r1', 'run.start', 'trace', '{}', '{}', 1, now()); COMMIT;" "$DF_URI" >/dev/null
  # (DeerFlow sends no NOTIFY: the mount's probe finds it within a tick.)
  wait_for 10 bash -c "ls '$MNT/threads' | grep -qx t-df"
  run ls "$MNT/threads"
  assert_output "$(printf 't-df\nt-g')"
  # On DeerFlow's table only triggers were added, all runfs's; nothing else changed.
  events_objects > "$WORK/after"
  run comm -23 "$WORK/before" "$WORK/after"
  assert_output ''
  comm -13 "$WORK/before" "$WORK/after" > "$WORK/added"
  grep -q '^trigger runfs_note_insert ' "$WORK/added" || fail "runfs's insert trigger is missing"
  run grep -v '^trigger runfs_[a-z_]* O$' "$WORK/added"
  assert_output ''
}

@test "grants: an older build's unique index on run_events stays where the role may not drop it" {
  on_pg || skip "PostgreSQL only: roles and grants"
  deerflow_db
  # What an older runfs made when it ran as DeerFlow's role.
  store_sql "CREATE UNIQUE INDEX runfs_uq_terminal ON run_events (thread_id, run_id) WHERE event_type = 'run.terminal'" "$DF_URI"
  events_objects > "$WORK/before"
  runfs_mount "$RF_URI" "$MNT"
  mkdir -p "$MNT/threads/t/runs/r1"
  ev_start >> "$MNT/threads/t/runs/r1/events.jsonl"
  events_objects > "$WORK/after"
  run comm -23 "$WORK/before" "$WORK/after"
  assert_output ''
  run grep -c '^index .*runfs_uq_terminal' "$WORK/after"
  assert_output 1
  # A role that owns run_events drops it (owners.bats, consistency.bats).
}

@test "grants: an earlier build's second insert trigger never fires where the role may not drop it" {
  on_pg || skip "PostgreSQL only: roles and grants"
  deerflow_db
  runfs_mount "$RF_URI" "$MNT"
  mkdir -p "$MNT/threads/t/runs/r1"
  ev_start >> "$MNT/threads/t/runs/r1/events.jsonl"
  runfs_unmount "$MNT"
  # What an earlier build made, as the same role.
  pg_earlier_insert_triggers "$RF_URI"
  run pg_insert_triggers "$RF_URI"
  assert_output "$(printf 'runfs_change_insert runfs_change_insert\nrunfs_note_insert runfs_note_insert')"
  runfs_mount "$RF_URI" "$MNT"
  run pg_insert_triggers "$RF_URI"
  assert_output 'runfs_note_insert runfs_foreign_insert'
  # Still there (only run_events's owner may drop it), made one that never fires.
  run store_sql "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = 'runfs_change_insert'" "$RF_URI"
  assert_output --partial 'WHEN (false)'
  # DeerFlow's row gets its change once, and is listed.
  store_sql "BEGIN; SELECT pg_advisory_xact_lock(hashtext(CAST('t-df' AS text))::bigint);
    INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at)
    VALUES ('t-df', 'r1', 'run.start', 'trace', '{}', '{}', 1, now()); COMMIT;" "$DF_URI" >/dev/null
  wait_for 10 bash -c "ls '$MNT/threads' | grep -qx t-df"
  wait_for 10 bash -c "grep -q '\"thread_id\":\"t-df\"' '$MNT/changes.jsonl'"
  run store_sql "SELECT count(*) FROM runfs_change WHERE thread_id = 't-df'" "$RF_URI"
  assert_output 1
}

# Malformed PostgreSQL URIs, each with a secret (S3cretPW and a number): a bad IPv6
# bracket, a bad port, an unknown parameter beside password= and beside sslpassword=, a bad
# percent-encoding in the password, a stray character after the host. None reaches a server.
BAD_URIS=(
  'postgresql://u:S3cretPW1@[::1/pw'
  'postgresql://u:S3cretPW2@h.invalid:5432x/db'
  'postgresql://u@h.invalid/db?password=S3cretPW3&bogus=1'
  'postgresql://u@h.invalid/db?sslpassword=S3cretPW4&nosuch=1'
  'postgres://u@h.invalid/db?password=S3cretPW5%zz'
  'postgresql://u:S3cretPW6%41@[::1]x/db'
)

@test "grants: a malformed PostgreSQL URI's error shows no secret, on every command that takes STORE" {
  mkdir -p "$WORK/df/threads" "$WORK/m"
  local u c
  for u in "${BAD_URIS[@]}"; do
    for c in mount put cat search changes verify seal import export; do
      case $c in
        mount) run timeout 20 "$RUNFS" mount --log "$WORK/log" "$u" "$WORK/m" ;;
        put) run bash -c '"$1" put "$2" t r < /dev/null' _ "$RUNFS" "$u" ;;
        cat) run timeout 20 "$RUNFS" cat "$u" threads ;;
        search) run timeout 20 "$RUNFS" search "$u" anything ;;
        changes) run timeout 20 "$RUNFS" changes "$u" ;;
        verify) run timeout 20 "$RUNFS" verify "$u" ;;
        seal) run timeout 20 "$RUNFS" seal "$u" t r ;;
        import) run timeout 20 "$RUNFS" import "$u" --deerflow-jsonl "$WORK/df" ;;
        export) run timeout 20 "$RUNFS" export "$u" --deerflow-jsonl "$WORK/out" ;;
      esac
      [ "$status" -eq 2 ] || fail "$c $u: exit $status, not 2: $output"
      [[ $output != *S3cretPW* ]] || fail "$c $u shows its secret: $output"
      # The reason is libpq's, named: the URI is invalid (or its port).
      [[ $output == *invalid* ]] || fail "$c $u: no reason given: $output"
    done
    run grep -c " $WORK/m fuse" /proc/mounts
    assert_output 0
    if [ -e "$WORK/log" ]; then
      run grep -c S3cretPW "$WORK/log"
      assert_output 0
    fi
  done
}

@test "grants: a search after DeerFlow's large insert analyzes runfs's own index only, where the role may not analyze run_events" {
  on_pg || skip "PostgreSQL only: roles and grants"
  deerflow_db
  # pg_trgm made by the database's owner: runfs's role makes (and owns) the search index.
  store_sql "CREATE EXTENSION pg_trgm" "$DF_URI"
  runfs_mount "$RF_URI" "$MNT" --log "$WORK/daemon.log"
  mkdir -p "$MNT/threads/t-g/runs/r1"
  { ev_start; ev_human 'granted quokka'; } >> "$MNT/threads/t-g/runs/r1/events.jsonl"
  [ "$(grep -c . "$MNT/search/quokka")" -eq 1 ]
  store_sql "BEGIN; INSERT INTO run_events (thread_id, run_id, event_type, category, content, event_metadata, seq, created_at)
    SELECT 't-df-' || (x % 20), 'r1', 'llm.error', 'trace', 'many ' || x || CASE WHEN x % 499 = 0 THEN ' quokka' ELSE '' END,
    '{}', x / 20 + 1, now() FROM generate_series(0, 19999) x; COMMIT;" "$DF_URI" >/dev/null
  # Every matching row, sized and read, without an error for the ANALYZE it could not run.
  [ "$(stat -c %s "$MNT/search/quokka")" -eq "$(wc -c < "$MNT/search/quokka")" ]
  [ "$(grep -c . "$MNT/search/quokka")" -eq 42 ]
  run store_sql "SELECT relname FROM pg_stat_user_tables WHERE relname IN ('run_events', 'runfs_search') AND last_analyze IS NOT NULL ORDER BY 1"
  assert_output runfs_search
  run grep -i 'analyze\|owner' "$WORK/daemon.log"
  assert_output ''
}
