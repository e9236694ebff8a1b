#!/usr/bin/env bats
# report.bats — report.html of a run and of a thread, opened from the mount in headless
# Chromium: its DOM against report.py's reading of the run's events.jsonl and stats.json, a
# hostile run shown as text with nothing run or fetched, libxml2's HTML parser finding no
# structural error; and a 200k-event run's report.html and timeline.svg within a browser's
# reach (the timeline an overview whose windows hold every element).
load lib

G=$BATS_TEST_DIRNAME/glance.py
P=$BATS_TEST_DIRNAME/report.py
T=threads/th

setup() {
  runfs_setup
  command -v chromium >/dev/null || fail "chromium is missing: scripts/setup installs it"
  command -v xmllint >/dev/null || fail "xmllint is missing: scripts/setup installs libxml2-utils"
}
teardown() { runfs_teardown; }

# chrome OUT URL [flags...]: headless Chromium on a fresh profile, nothing of its own fetched.
chrome() {
  local url=$1; shift
  rm -rf "$WORK/chrome"
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$WORK/chrome" "$@" "$url" 2>/dev/null
}

# check_page FILE: the page as served (CSP, nothing that runs or fetches, anchors resolve),
# its st_size the bytes a read gives, runfs cat the same bytes, xmllint --html content.
check_page() {
  local f=$1 rel=${1#"$MNT"/} out=$WORK/page
  cat "$f" > "$out"
  [ "$(stat -c %s "$f")" -eq "$(wc -c < "$out")" ] || fail "$rel: st_size $(stat -c %s "$f") but $(wc -c < "$out") bytes read"
  "$RUNFS" cat "$STORE" "$rel" | cmp - "$out" || fail "$rel: runfs cat and the mount differ"
  python3 "$P" page "$out"
  xmllint --html --noout "$out" 2> "$WORK/xmllint.out" || true
  python3 "$P" xmllint "$WORK/xmllint.out"
}

add_runs() {
  python3 "$G" runs "$WORK"
  mkdir -p "$MNT/$T/runs/par" "$MNT/$T/runs/tasks"
  cat "$WORK/par.jsonl" >> "$MNT/$T/runs/par/events.jsonl"
  cat "$WORK/tasks.jsonl" >> "$MNT/$T/runs/tasks/events.jsonl"
  (set -C; cat "$WORK/par.terminal" > "$MNT/$T/runs/par/once/run.terminal")
  (set -C; cat "$WORK/tasks.terminal" > "$MNT/$T/runs/tasks/once/run.terminal")
}

@test "report.html of a run: stats, every message, a <details> per tool call, seq anchors, drawn by Chromium" {
  add_runs
  run ls "$MNT/$T/runs/par"
  assert_line report.html
  for r in par tasks; do
    d=$MNT/$T/runs/$r
    check_page "$d/report.html"
    "$RUNFS" cat "$STORE" "$T/runs/$r/events.jsonl" > "$WORK/$r.events"
    cat "$d/stats.json" > "$WORK/$r.stats"
    chrome "file://$d/report.html" --dump-dom > "$WORK/$r.dom"
    python3 "$P" run "$WORK/$r.events" "$WORK/$r.stats" "$WORK/$r.dom" "run $r of thread th"
  done
  # What the reading says, spelled out: par's six calls and the result nobody asked for.
  run grep -c '<details' "$WORK/par.dom"
  assert_output 7
  chrome "file://$MNT/$T/runs/par/report.html" --window-size=1250,1600 --screenshot="$WORK/par.png" >/dev/null
  python3 "$G" png "$WORK/par.png"
  # An anchor opens at its entry: Chromium scrolls to #s9 (a tool call with its result).
  chrome "file://$MNT/$T/runs/par/report.html#s9" --dump-dom | grep -q 'id="s9"'
}

@test "report.html of a thread lists its runs with their stats, each linked to its own page" {
  add_runs
  mkdir -p "$MNT/$T/runs/empty"
  run ls "$MNT/$T"
  assert_line report.html
  check_page "$MNT/$T/report.html"
  chrome "file://$MNT/$T/report.html" --dump-dom > "$WORK/thread.dom"
  cat "$MNT/$T/stats.json" > "$WORK/thread.stats"
  python3 "$P" thread "$WORK/thread.stats" "$WORK/thread.dom" empty par tasks
  for r in empty par tasks; do
    grep -q "<title>run $r of thread th</title>" "$MNT/$T/runs/$r/report.html" || fail "runs/$r/report.html does not open"
  done
}

@test "a hostile run's report.html shows its markup as text: no script runs, nothing is fetched" {
  python3 "$P" make-hostile "$WORK/hostile.jsonl" "$WORK/beacon"
  mkdir -p "$MNT/$T/runs/hostile"
  cat "$WORK/hostile.jsonl" >> "$MNT/$T/runs/hostile/events.jsonl"
  d=$MNT/$T/runs/hostile
  check_page "$d/report.html"
  xmllint --noout "$d/timeline.svg"
  # The injected code would set the title or read the beacon (its atime, set in the past,
  # would move: relatime updates an atime older than the mtime).
  : > "$WORK/beacon"
  touch -a -d 2000-01-01 "$WORK/beacon"
  chrome "file://$d/report.html" --dump-dom > "$WORK/hostile.dom"
  python3 "$P" hostile "$WORK/hostile.dom" "run hostile of thread th"
  chrome "file://$d/report.html" --window-size=1250,1600 --screenshot="$WORK/hostile.png" >/dev/null
  python3 "$G" png "$WORK/hostile.png"
  [ "$(stat -c %X "$WORK/beacon")" -lt 1000000000 ] || fail "the page read $WORK/beacon"
  cat "$WORK/beacon"
  [ "$(stat -c %X "$WORK/beacon")" -gt 1000000000 ] || skip "reads do not move atimes here: the beacon proves nothing"
}

@test "a 200k-event run: report.html and timeline.svg stay small, the timeline's windows hold every element" {
  skip_on_pg "100 windows of a 200k-event run each render the run: minutes on PostgreSQL; the small runs cover it"
  python3 "$G" big "$WORK/big.jsonl" 100000
  "$RUNFS" put "$STORE" th big "$WORK/big.jsonl" > /dev/null
  d=$MNT/$T/runs/big
  wait_for 20 test -e "$d/report.html"
  check_page "$d/report.html"
  for v in report.html timeline.svg; do
    [ "$(stat -c %s "$d/$v")" -lt 8000000 ] || fail "$v is $(stat -c %s "$d/$v") bytes"
  done
  "$RUNFS" cat "$STORE" "$T/runs/big/events.jsonl" > "$WORK/big.events"
  python3 "$P" big "$WORK/big.events" "$WORK/page"
  run python3 "$G" svg "$WORK/big.events" "$d/timeline.svg"
  assert_success
  assert_output "overview 100"
  run ls "$d/timeline"
  assert_output "$(printf '1.svg\ncount')"
  [ "$(cat "$d/timeline/count")" = 100 ]
  # Every slice's link opens its window from the mount, relative to timeline.svg.
  mkdir "$WORK/win"
  for href in $(grep -o ' href="[^"]*"' "$d/timeline.svg" | cut -d'"' -f2 | sort -u); do
    cat "$d/$href" > "$WORK/win/${href#timeline/}"
    [ "$(stat -c %s "$d/$href")" -eq "$(wc -c < "$WORK/win/${href#timeline/}")" ]
  done
  python3 "$G" windows "$WORK/big.events" "$WORK/win" 100
  [ ! -e "$d/timeline/101.svg" ] || fail "timeline/101.svg exists past timeline/count"
  chrome "file://$d/timeline.svg" --window-size=1250,400 --screenshot="$WORK/overview.png" >/dev/null
  python3 "$G" png "$WORK/overview.png"
}

@test "a 200k-event run's report.html and timeline.svg are made in little more memory than its events.jsonl" {
  python3 "$G" big "$WORK/big.jsonl" 100000
  "$RUNFS" put --batch 5000 "$STORE" th big "$WORK/big.jsonl" > /dev/null
  # peak_kb VIEW: the peak RSS (KiB) of runfs cat of the run's VIEW, from wait4.
  peak_kb() {
    python3 -c 'import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, st, ru = os.wait4(p.pid, 0)
sys.exit(os.waitstatus_to_exitcode(st)) if st else print(ru.ru_maxrss)' "$RUNFS" cat "$STORE" "$T/runs/big/$1"
  }
  base=$(peak_kb events.jsonl)
  for v in report.html timeline.svg; do
    kb=$(peak_kb "$v")
    [ "$kb" -le $((base + 32768)) ] ||
      fail "$v: runfs cat peaked at $kb KiB, events.jsonl at $base KiB: more of the run kept than the page draws"
  done
}
