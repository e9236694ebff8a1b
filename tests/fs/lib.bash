# lib.bash — shared set-up for the bats suites: every test gets a private temp dir, a store
# and a real FUSE mount that is always unmounted in teardown; every wait is bounded.
# Use:  load lib   then   setup() { runfs_setup; }  teardown() { runfs_teardown; }
# RUNFS_BACKEND=pg (with RUNFS_PG_URI, the URI of a cluster's maintenance database, as
# scripts/test sets them) runs a suite on PostgreSQL: STORE is the URI of a fresh database.

bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

RUNFS=${RUNFS:-$BATS_TEST_DIRNAME/../../build/runfs}

# A daemon built with a sanitizer (scripts/test runs suites with RUNFS=build-asan/runfs and
# build-tsan/runfs) has no stderr once in the background: its reports go to
# $WORK/sanitizer.PID, and teardown fails the test when one exists. The other builds ignore
# these variables.
sanitizer_env() {
  local log=$WORK/sanitizer
  echo "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$log:detect_leaks=1"
  echo "UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$log:print_stacktrace=1"
  echo "TSAN_OPTIONS=${TSAN_OPTIONS:+$TSAN_OPTIONS:}log_path=$log:second_deadlock_stack=1"
}

# sanitizer_reports: print every report a daemon of this test left; fail if there was one.
sanitizer_reports() {
  local f found=1
  for f in "$WORK"/sanitizer.*; do
    [ -e "$f" ] || continue
    found=0
    echo "# sanitizer report $f:"
    head -80 "$f"
  done
  [ "$found" -ne 0 ]
}

# runfs_workdir: a private $WORK with the paths $STORE and $MNT (an empty directory).
runfs_workdir() {
  WORK=$(mktemp -d "${RUNFS_TEST_ROOT:-${TMPDIR:-/tmp}}/runfs-bats.XXXXXX")
  chmod 755 "$WORK"
  STORE=$WORK/store.db
  if on_pg; then pg_fresh_store || return 1; fi
  MNT=$WORK/mnt
  MOUNTS=()
  mkdir -p "$MNT"
}

# runfs_setup [mount options...]: store $STORE mounted at $MNT (options after the defaults).
runfs_setup() {
  runfs_workdir
  runfs_mount "$STORE" "$MNT" "$@"
}

# runfs_mount STORE DIR [options...]: mount and wait (bounded) until it answers.
runfs_mount() {
  local store=$1 dir=$2; shift 2
  mkdir -p "$dir"
  local -a san create=()
  mapfile -t san < <(sanitizer_env)
  # A mount makes a missing SQLite store only when asked: the suites' stores start new.
  [[ $store == *://* || -e $store ]] || create=(--create)
  env "${san[@]}" timeout 20 "$RUNFS" mount "${create[@]}" "$@" "$store" "$dir" || return 1
  MOUNTS+=("$dir")
  wait_for 10 test -f "$dir/README"
}

runfs_unmount() {
  local dir=$1
  fusermount3 -u "$dir" 2>/dev/null || fusermount3 -u -z "$dir" 2>/dev/null || true
  # The daemon exits after the unmount; give it a bounded moment to close the store.
  wait_for 10 bash -c "! pgrep -f 'runfs mount.* $dir\$' >/dev/null" || true
}

runfs_teardown() {
  local d clean=0
  for d in "${MOUNTS[@]}"; do
    runfs_unmount "$d"
  done
  if on_pg && [ -n "${PG_DB:-}" ]; then
    pg_admin "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null || true
  fi
  [ -n "${WORK:-}" ] || return 0
  sanitizer_reports >&2 || clean=1
  rm -rf "$WORK"
  return "$clean"
}

# pg_earlier_insert_triggers [URI]: run_events's insert triggers as builds before
# runfs_foreign_insert left them (PostgreSQL): runfs_note_insert calling its own function and
# runfs_change_insert numbering the runs, each a statement of its own.
pg_earlier_insert_triggers() {
  store_sql "CREATE OR REPLACE FUNCTION runfs_change_insert() RETURNS trigger LANGUAGE plpgsql
  SECURITY DEFINER SET search_path FROM CURRENT AS \$\$
BEGIN
  IF coalesce(current_setting('runfs.writer', true), '') = '1' THEN RETURN NULL; END IF;
  INSERT INTO runfs_change (thread_id, run_id, change, owner)
  SELECT thread_id, run_id, pg_current_xact_id()::text::bigint, CASE WHEN min(coalesce(n.user_id, ''))
    = max(coalesce(n.user_id, '')) THEN min(coalesce(n.user_id, '')) END
    FROM new_rows n GROUP BY thread_id, run_id
  ON CONFLICT (thread_id, run_id) DO UPDATE SET
    change = greatest(runfs_change.change, excluded.change), deleted = false,
    owner = CASE WHEN runfs_change.deleted OR runfs_change.owner = excluded.owner
    THEN excluded.owner END;
  RETURN NULL;
END \$\$;
CREATE OR REPLACE TRIGGER runfs_note_insert AFTER INSERT ON run_events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION runfs_note_insert();
CREATE OR REPLACE TRIGGER runfs_change_insert AFTER INSERT ON run_events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION runfs_change_insert();" "${1:-$STORE}"
}
# pg_insert_triggers [URI]: the insert triggers on run_events that can fire (no WHEN (false)),
# one "name function" a line, sorted.
pg_insert_triggers() {
  store_sql "SELECT tgname || ' ' || tgfoid::regproc FROM pg_trigger WHERE tgrelid = 'run_events'::regclass
    AND tgtype & 4 <> 0 AND coalesce(pg_get_triggerdef(oid) !~ 'WHEN \\(false\\)', true) ORDER BY 1" "${1:-$STORE}"
}

# ---- the backend switch ----
on_pg() { [ "${RUNFS_BACKEND:-sqlite}" = pg ]; }
# skip_on_pg REASON: a test of something only a SQLite file has.
skip_on_pg() { if on_pg; then skip "SQLite only: $1"; fi; }
# runfs_owner's owner column: `user` on SQLite, `owner` on PostgreSQL (where user is a
# reserved word that names the session's role).
owner_column() { if on_pg; then echo owner; else echo user; fi; }
# pg_uri DB: the cluster's URI with another database.
pg_uri() { printf '%s\n' "$RUNFS_PG_URI" | sed "s|^postgresql:///[^?]*|postgresql:///$1|"; }
# pg_fresh_store: STORE becomes the URI of a new database named after $WORK (PG_DB): a copy
# of RUNFS_PG_TEMPLATE when set (scripts/test makes one per run in which runfs made its
# tables, so no test's daemon makes them again), else empty. A test whose database must
# start empty (DeerFlow's tables first) unsets it: RUNFS_PG_TEMPLATE= pg_fresh_store.
pg_fresh_store() {
  PG_DB=t_$(basename "$WORK" | tr -c 'A-Za-z0-9\n' _ | tr 'A-Z' 'a-z')
  pg_admin "CREATE DATABASE $PG_DB${RUNFS_PG_TEMPLATE:+ TEMPLATE $RUNFS_PG_TEMPLATE}" >/dev/null || return 1
  STORE=$(pg_uri "$PG_DB")
}
pg_admin() { PGTZ=UTC psql -X -q -At -v ON_ERROR_STOP=1 -d "$RUNFS_PG_URI" -c "$1"; }

# store_sql SQL [STORE]: run SQL on the store (the test's by default), rows as sqlite3 prints
# them (a|b), waiting up to 10 s for a lock a mount holds; for a PostgreSQL URI the few
# SQLite spellings the suites use are translated.
store_sql() {
  if [[ ${2:-$STORE} == *://* ]]; then
    printf '%s\n' "$1" | sed -E 's/group_concat\(DISTINCT ([^)]*)\)/string_agg(DISTINCT (\1)::text, \x27,\x27)/g; s/group_concat\(([^)]*)\)/string_agg((\1)::text, \x27,\x27)/g' |
      PGTZ=UTC PGOPTIONS='-c client_min_messages=warning' psql -X -q -At -F '|' -v ON_ERROR_STOP=1 -d "${2:-$STORE}" -f -
  else
    sqlite3 -cmd ".timeout 10000" "${2:-$STORE}" "$1"
  fi
}

# store_integrity: "ok" when the store's structures check out (SQLite's integrity_check;
# PostgreSQL's amcheck over run_events' indexes).
store_integrity() {
  if [[ ${1:-$STORE} == *://* ]]; then
    store_sql "CREATE EXTENSION IF NOT EXISTS amcheck; SELECT count(*) FROM (SELECT bt_index_check(c.oid, true) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'run_events'::regclass) x;" "${1:-$STORE}" >/dev/null && echo ok
  else
    sqlite3 "${1:-$STORE}" 'PRAGMA integrity_check'
  fi
}

# wait_for SECONDS COMMAND...: retry COMMAND every 50 ms until it succeeds or time runs out.
wait_for() {
  local secs=$1; shift
  wait_for_ms $((secs * 1000)) "$@"
}

# wait_for_ms MS COMMAND...: the same with a limit in milliseconds (polled every 10 ms below
# a second, for bounds that are themselves the test's claim).
wait_for_ms() {
  local ms=$1; shift
  local deadline=$(( $(date +%s%N) + ms * 1000000 )) step=0.05
  [ "$ms" -lt 1000 ] && step=0.01
  until "$@" 2>/dev/null; do
    [ "$(date +%s%N)" -lt "$deadline" ] || return 1
    sleep "$step"
  done
}

# ev TYPE [JSON-fields]: a valid event line for common types, for appends.
ev_start() { printf '{"event_type":"run.start","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"}}\n'; }
ev_human() { printf '{"event_type":"llm.human.input","content":{"type":"human","content":"%s","id":"h-%s"},"metadata":{"caller":"lead_agent"}}\n' "${1:-hello}" "${2:-1}"; }
ev_ai() { printf '{"event_type":"llm.ai.response","content":{"type":"ai","content":"%s","id":"ai-%s","tool_calls":[]},"metadata":{"caller":"lead_agent","usage":{"total_tokens":3},"latency_ms":5,"llm_call_index":1}}\n' "${1:-hi}" "${2:-1}"; }
ev_error() { printf '{"event_type":"llm.error","content":"%s"}\n' "${1:-boom}"; }
ev_terminal() { printf '{"content":{"status":"%s"},"metadata":{"protocol_version":1,"recovered":false}}\n' "${1:-success}"; }
# For `bash -c` commands under `run` and `as`.
export -f ev_start ev_human ev_ai ev_error ev_terminal

# Byte-for-byte snapshot of the database's rows, to prove a refused write changed nothing.
store_snapshot() {
  store_sql "SELECT id, thread_id, run_id, seq, event_type, category, content, event_metadata, created_at, user_id FROM run_events ORDER BY id; SELECT * FROM run_event_thread_seq ORDER BY thread_id;" "${1:-$STORE}" | sha256sum
}

# Two unprivileged uids without passwd entries (setpriv needs none), for sandbox tests.
UID_A=61001
UID_B=61002

# reachable FILE: print the path of a copy of FILE that every uid may run and read. The
# checkout may sit where other uids cannot enter (a clone in /root, which is 0700), so what a
# test runs `as` another uid is run from $WORK, which the suites make 0755.
reachable() {
  local d=$WORK/reachable lib rp to
  mkdir -p "$d" && chmod 755 "$d" && cp "$1" "$d/" && chmod a+rx "$d/${1##*/}" || return 1
  # A program on librunstore.so (the build tree's runfs finds it through $ORIGIN/store): the
  # library, and the PostgreSQL module it loads from beside itself, where the copy looks.
  lib=$(ldd "$1" 2>/dev/null | awk '$1 ~ /^librunstore\.so/ { print $3 }')
  rp=$(readelf -d "$1" | sed -n 's/.*R[UN]*PATH.*\[\(.*\)\]$/\1/p' | tr ':' '\n' | grep '^\$ORIGIN' | head -n 1)
  if [ -n "$lib" ] && [ -n "$rp" ]; then
    to=$d${rp#\$ORIGIN}
    mkdir -p "$to" && cp "$lib" "$(dirname "$lib")/librunstore-pg.so" "$to/" &&
      chmod 755 "$to" && chmod a+r "$to"/* || return 1
  fi
  echo "$d/${1##*/}"
}

# as UID CMD: run the shell command CMD as an unprivileged uid (no supplementary groups).
as() {
  local uid=$1; shift
  setpriv --reuid="$uid" --regid="$uid" --clear-groups -- bash -c "$*"
}

# store_files: the files that hold the store's data (SQLite: the file, its WAL and shared
# memory; PostgreSQL: the test database's directory under the cluster's data directory).
store_files() {
  if on_pg; then
    local oid
    oid=$(store_sql "SELECT oid FROM pg_database WHERE datname = current_database()")
    find "$RUNFS_PG_DIR/data/base/$oid" -type f
  else
    ls "$STORE" "$STORE-wal" "$STORE-shm" 2>/dev/null
  fi
}

# store_scan SECRET: how many of the store's files hold SECRET's bytes (a checkpoint first on
# PostgreSQL, so what the server holds in memory is in the files).
store_scan() {
  if on_pg; then pg_admin "CHECKPOINT" >/dev/null; fi
  # A file the server removed since the listing (a relation cache file it writes anew after
  # a VACUUM or a catalog change) holds nothing.
  store_files | python3 -c '
import sys
secret = sys.argv[1].encode()
def has(p):
    try:
        return secret in open(p, "rb").read()
    except FileNotFoundError:
        return False
hits = [p for p in sys.stdin.read().split() if has(p)]
print(len(hits))
for p in hits:
    print(p, file=sys.stderr)' "$1"
}
