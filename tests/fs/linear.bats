#!/usr/bin/env bats
# linear.bats — every view costs about what it reads (DESIGN, performance principles): on a
# real mount of a DeerFlow-shaped database, history.jsonl and transcript.md of a thread take
# at most 3x its events.jsonl at two sizes, so a per-piece cost that grows with the thread
# (quadratic in total) fails here. Byte counts are checked too, so a view that stops early
# cannot pass.
load lib

GEN=$BATS_TEST_DIRNAME/mkdeerflow.py
SMALL=${RUNFS_LINEAR_SMALL:-20000}
BIG=${RUNFS_LINEAR_BIG:-80000}

setup() {
  WORK=$(mktemp -d "${RUNFS_TEST_ROOT:-${TMPDIR:-/tmp}}/runfs-bats.XXXXXX")
  STORE=$WORK/deerflow.db
  MNT=$WORK/mnt
  MOUNTS=()
  python3 "$GEN" "$STORE" small "$SMALL"
  python3 "$GEN" "$STORE" big "$BIG"
  runfs_mount "$STORE" "$MNT"
}
teardown() { runfs_teardown; }

# secs CMD...: wall time of CMD in seconds (bounded: a quadratic view must fail, not hang).
secs() {
  local t0 t1
  t0=$(date +%s%N)
  timeout 60 "$@" > /dev/null || return 1
  t1=$(date +%s%N)
  awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f", ns / 1e9 }'
}

# check THREAD EVENTS: history.jsonl within 3x events.jsonl (the first read of each, rendered).
check() {
  local t=$MNT/threads/$1 n=$2 ev hi hi2 lines
  lines=$(cat "$t/seq")
  [ "$lines" -eq "$n" ]
  ev=$(secs cat "$t/events.jsonl")
  hi=$(secs cat "$t/history.jsonl")
  hi2=$(secs cat "$t/history.jsonl")
  awk -v a="$hi2" -v b="$hi" 'BEGIN { exit !(a < b) }' && hi=$hi2
  echo "# $n events: events.jsonl $ev s, history.jsonl $hi s" >&3
  # A visible run shows 5 of its 10 rows and one run in five is hidden (regenerated): about
  # 0.4 n lines, so a view that stopped early fails.
  [ "$(wc -l < "$t/history.jsonl")" -gt $((n / 5)) ]
  awk -v h="$hi" -v e="$ev" 'BEGIN { exit !(h <= 3 * (e > 0.02 ? e : 0.02)) }'
}

# check_transcript THREAD EVENTS: transcript.md (its size, then its bytes; a thread indexed
# in the last 2 s counts as live, and its first read renders it twice) within 3x
# events.jsonl, on a fresh mount so neither is cached.
check_transcript() {
  local t=$MNT/threads/$1 n=$2 ev tr tr2
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  ev=$(secs cat "$t/events.jsonl")
  tr=$(secs cat "$t/transcript.md")
  runfs_unmount "$MNT"
  runfs_mount "$STORE" "$MNT"
  tr2=$(secs cat "$t/transcript.md")
  awk -v a="$tr2" -v b="$tr" 'BEGIN { exit !(a < b) }' && tr=$tr2
  echo "# $n events: events.jsonl $ev s, transcript.md $tr s" >&3
  # one heading per run (runs of 10 events), every size exact
  [ "$(grep -c '^## Run ' "$t/transcript.md")" -eq $((n / 10)) ]
  [ "$(stat -c %s "$t/transcript.md")" -eq "$(cat "$t/transcript.md" | wc -c)" ]
  awk -v x="$tr" -v e="$ev" 'BEGIN { exit !(x <= 3 * (e > 0.02 ? e : 0.02)) }'
}

@test "transcript.md costs at most 3x events.jsonl at $SMALL and $BIG events" {
  check_transcript small "$SMALL"
  check_transcript big "$BIG"
}

@test "history.jsonl costs at most 3x events.jsonl at $SMALL and $BIG events" {
  check small "$SMALL"
  check big "$BIG"
}

@test "indexing a DeerFlow database is linear in its rows, however many runs a thread has" {
  # Runs of 10 events: 1,000 and 32,000 runs in one thread. A per-row search through the
  # thread's runs makes 32x the rows cost ~1000x; linear costs 32x (64x allowed for noise).
  python3 "$GEN" "$WORK/a.db" t 10000
  python3 "$GEN" "$WORK/b.db" t 320000
  local a b
  a=$(secs "$RUNFS" cat "$WORK/a.db" threads/t/seq)
  b=$(secs "$RUNFS" cat "$WORK/b.db" threads/t/seq)
  echo "# indexing 10000 rows: $a s, 320000 rows: $b s" >&3
  [ "$("$RUNFS" cat "$WORK/b.db" threads/t/seq)" -eq 320000 ]
  awk -v a="$a" -v b="$b" 'BEGIN { exit !(b <= 64 * (a > 0.1 ? a : 0.1)) }'
}
