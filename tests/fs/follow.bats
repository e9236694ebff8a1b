#!/usr/bin/env bats
# follow.bats — live follow: follow.jsonl (history, then live events in seq order, EOF after
# run.terminal or at --follow-timeout), poll() wake-ups, writers in other processes, killed
# followers, and `tail -f` on events.jsonl. Every wait is bounded; background followers run
# with fd 3 closed (bats waits for it otherwise) and are killed in teardown before the mounts
# go; a test bounds their life with wait_for.
load lib

setup() {
  runfs_setup --follow-timeout 60
  RUN=$MNT/threads/t1/runs/r1
  mkdir -p "$RUN"
  BG=()
}

teardown() {
  local p
  for p in "${BG[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${BG[@]}"; do wait "$p" 2>/dev/null || true; done
  runfs_teardown
}

# follow_bg FILE OUT: follow FILE into OUT in the background; the cat's own pid in BG.
follow_bg() {
  cat "$1" > "$2" 3>&- &
  BG+=($!)
}

# has_lines FILE N: FILE holds at least N lines.
has_lines() { [ "$(wc -l < "$1")" -ge "$2" ]; }
# seqs FILE: the seq of every line, one a line.
seqs() { sed -n 's/.*"seq":\([0-9]*\),"event_type".*/\1/p' "$1"; }
# gone PID: the process has exited.
gone() { ! kill -0 "$1" 2>/dev/null; }
# in_read PID: the process sits in read() (x86-64 syscall 0), as a parked follower does.
in_read() { [ "$(cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null)" = 0 ]; }
# append N events to the run through the mount, one write each.
append_n() { local i; for ((i = 1; i <= $1; i++)); do ev_human "m$i" "$i" >> "${2:-$RUN}/events.jsonl"; done; }
terminal() { ev_terminal "${1:-success}" > "${2:-$RUN}/once/run.terminal"; }
daemon_pid() { pgrep -f "runfs mount.*$1\$" | head -1; }

@test "late attach gets the whole history, then live events, then EOF at run.terminal" {
  ev_start >> "$RUN/events.jsonl"
  append_n 4
  follow_bg "$RUN/follow.jsonl" "$WORK/f1"
  wait_for 5 has_lines "$WORK/f1" 5
  append_n 3
  wait_for 5 has_lines "$WORK/f1" 8
  gone "${BG[0]}" && fail "the follower ended before run.terminal"
  terminal
  wait_for 5 gone "${BG[0]}"
  wait "${BG[0]}"                   # cat exits by itself, status 0
  run seqs "$WORK/f1"
  assert_output "$(seq 1 9)"
  # The feed's bytes are the log's bytes.
  cmp "$WORK/f1" "$RUN/events.jsonl"
  run tail -n 1 "$WORK/f1"
  assert_output --partial '"event_type":"run.terminal"'
}

@test "a run that already ended: follow.jsonl returns its history and EOF at once" {
  ev_start >> "$RUN/events.jsonl"
  terminal
  run timeout 5 cat "$RUN/follow.jsonl"
  assert_success
  assert_equal "$(printf '%s\n' "$output" | wc -l)" 2
  # Lines after run.terminal do not extend a feed that ended.
  ev_human late 9 >> "$RUN/events.jsonl" 2>/dev/null || true
  run timeout 5 cat "$RUN/follow.jsonl"
  assert_success
  assert_line --index 1 --partial '"event_type":"run.terminal"'
  refute_output --partial '"content":"late"'
}

@test "small reads: the run.terminal line arrives whole, then EOF" {
  ev_start >> "$RUN/events.jsonl"
  append_n 5
  terminal
  # 37-byte reads split every line, the terminal's included.
  run timeout 5 dd if="$RUN/follow.jsonl" bs=37 status=none
  assert_success
  [ "$output" = "$(cat "$RUN/events.jsonl")" ]
  # And live: the terminal committed while the small reader is parked.
  mkdir -p "$MNT/threads/t1/runs/r2"
  ev_start >> "$MNT/threads/t1/runs/r2/events.jsonl"
  dd if="$MNT/threads/t1/runs/r2/follow.jsonl" of="$WORK/small" bs=7 status=none 3>&- &
  BG+=($!)
  wait_for 5 has_lines "$WORK/small" 1
  terminal success "$MNT/threads/t1/runs/r2"
  wait_for 5 gone "${BG[0]}"
  cmp "$WORK/small" "$MNT/threads/t1/runs/r2/events.jsonl"
}

@test "only the envelope's event_type ends a feed, not one nested in content" {
  runfs_mount "$STORE" "$WORK/mnt2" --allow-unknown-events
  local run2=$WORK/mnt2/threads/t1/runs/r1
  ev_start >> "$run2/events.jsonl"
  follow_bg "$RUN/follow.jsonl" "$WORK/f"
  wait_for 5 has_lines "$WORK/f" 1
  printf '{"event_type":"custom.note","category":"trace","content":{"x":1,"event_type":"run.terminal","category":"trace"}}\n' >> "$run2/events.jsonl"
  # An event after it still reaches the feed: the nested type did not end it.
  ev_human after 1 >> "$run2/events.jsonl"
  wait_for 5 has_lines "$WORK/f" 3 || fail "a nested run.terminal ended the feed"
  terminal
  wait_for 5 gone "${BG[0]}"
  run seqs "$WORK/f"
  assert_output "$(seq 1 4)"
}

@test "10 concurrent followers all receive the same sequence, none twice, none skipped" {
  ev_start >> "$RUN/events.jsonl"
  local i
  for i in $(seq 1 10); do follow_bg "$RUN/follow.jsonl" "$WORK/c$i"; done
  for i in $(seq 1 10); do wait_for 5 has_lines "$WORK/c$i" 1; done
  # Two writers at once, one write per event.
  append_n 40 3>&- &
  local w1=$!
  ( for ((j = 1; j <= 40; j++)); do ev_ai "x$j" "$j" >> "$RUN/events.jsonl"; done ) 3>&- &
  local w2=$!
  wait "$w1" "$w2"
  terminal
  for i in $(seq 1 10); do wait_for 10 gone "${BG[$((i - 1))]}"; done
  for i in $(seq 1 10); do
    run seqs "$WORK/c$i"
    assert_output "$(seq 1 82)"
    cmp "$WORK/c1" "$WORK/c$i"
  done
  cmp "$WORK/c1" "$RUN/events.jsonl"
}

@test "readers that close follow.jsonl right after a read, during appends, leave the mount up" {
  # Issue 9's recipe: release used to free the follower while the read that had just been
  # answered still trimmed its buffer (a crash within seconds under the ASan daemon that
  # scripts/test runs this suite with; within a minute on a plain build).
  local pid k
  pid=$(daemon_pid "$MNT")
  [ -n "$pid" ]
  seq 200000 | sed 's/.*/{"event_type":"llm.error","content":"&","metadata":{}}/' |
    dd of="$RUN/events.jsonl" oflag=append conv=notrunc bs=60 status=none 3>&- &
  BG+=($!)
  wait_for 5 test -s "$RUN/events.jsonl"
  for k in 1 2 3 4 5 6 7 8; do
    ( end=$((SECONDS + ${RUNFS_FOLLOW_CLOSE_SECONDS:-6}))
      while [ "$SECONDS" -lt "$end" ]; do head -c 100 "$RUN/follow.jsonl" > /dev/null || true; done
    ) 3>&- &
    BG+=($!)
  done
  for k in 1 2 3 4 5 6 7 8; do wait_for 30 gone "${BG[$k]}"; done
  kill -0 "$pid" || fail "the daemon died"
  run head -c 100 "$RUN/follow.jsonl"
  assert_success
  assert_output --partial '"seq":1,'
}

@test "a daemon stopped while a log, an append and a feed are open frees their handles" {
  # The kernel drops a RELEASE still queued at unmount: the daemon frees what is left after
  # its loop (a leak report under the ASan daemon, lib.bash's teardown, before).
  ev_start >> "$RUN/events.jsonl"
  local pid
  pid=$(daemon_pid "$MNT")
  [ -n "$pid" ]
  sleep 60 < "$RUN/events.jsonl" 3>&- &
  BG+=($!)
  sleep 60 >> "$RUN/events.jsonl" 3>&- &
  BG+=($!)
  follow_bg "$RUN/follow.jsonl" "$WORK/f"
  wait_for 5 has_lines "$WORK/f" 1
  wait_for 5 in_read "${BG[2]}" || fail "the follower did not park in read()"
  kill -TERM "$pid"
  wait_for 10 gone "$pid" || fail "the daemon did not stop"
  wait_for 5 gone "${BG[2]}" || fail "the parked follower was not answered"
}

@test "threads/T/follow.jsonl follows every run of the thread in seq order" {
  mkdir -p "$MNT/threads/t1/runs/r2"
  ev_start >> "$RUN/events.jsonl"
  follow_bg "$MNT/threads/t1/follow.jsonl" "$WORK/t"
  wait_for 5 has_lines "$WORK/t" 1
  append_n 3
  append_n 3 "$MNT/threads/t1/runs/r2"
  terminal
  wait_for 5 has_lines "$WORK/t" 8
  run seqs "$WORK/t"
  assert_output "$(seq 1 8)"
  # A run's terminal does not end the thread's feed: an event after it still arrives.
  append_n 1 "$MNT/threads/t1/runs/r2"
  wait_for 5 has_lines "$WORK/t" 9 || fail "the thread feed ended at a run's terminal"
  run seqs "$WORK/t"
  assert_output "$(seq 1 9)"
}

@test "poll() on follow.jsonl: nothing ready without new data, wakes on an append" {
  ev_start >> "$RUN/events.jsonl"
  cat > "$WORK/poll.py" <<'EOF'
import os, select, subprocess, sys, threading, time
feed, log, line = sys.argv[1], sys.argv[2], sys.argv[3]
fd = os.open(feed, os.O_RDONLY)
p = select.poll()
p.register(fd, select.POLLIN)
assert p.poll(2000), "history not readable"
first = os.read(fd, 1 << 20)
assert b'"seq":1,' in first and first.endswith(b"\n"), first
ev = p.poll(300)
assert ev == [], "poll reported data with nothing new: %r" % (ev,)
# Another process appends while this one sleeps in poll(). A wake before the append began
# would be a poll that reports data with nothing new (the read after it would then wait
# for the append and hide that); the wake must come after it began, soon after it ended.
times = {}
def append():
    times["start"] = time.monotonic()
    subprocess.run(["sh", "-c", 'printf "%s\\n" "$1" >> "$2"', "sh", line, log], check=True)
    times["done"] = time.monotonic()
writer = threading.Timer(0.2, append)
writer.start()
ev = p.poll(5000)
t_wake = time.monotonic()
writer.join()
assert ev and ev[0][1] & select.POLLIN, "no wake-up: %r" % (ev,)
assert t_wake >= times["start"], "woke %.3f s before the append began" % (times["start"] - t_wake)
woke = max(0.0, t_wake - times["done"])
assert woke < 1.5, "woke %.3f s after the append returned" % woke
data = os.read(fd, 1 << 20)
assert b'"seq":2,' in data, data
assert p.poll(200) == [], "still readable after the read"
print("ok %.3f" % woke)
EOF
  run timeout 20 python3 "$WORK/poll.py" "$RUN/follow.jsonl" "$RUN/events.jsonl" "$(ev_human polled 2)"
  assert_success
  assert_output --partial "ok "
}

@test "a writer in another process wakes a follower: runfs put and a second mount" {
  ev_start >> "$RUN/events.jsonl"
  follow_bg "$RUN/follow.jsonl" "$WORK/f"
  wait_for 5 has_lines "$WORK/f" 1
  ev_human from-put 1 | "$RUNFS" put "$STORE" t1 r1 >/dev/null
  wait_for 2 has_lines "$WORK/f" 2
  runfs_mount "$STORE" "$WORK/mnt2"
  ev_human from-mount2 2 >> "$WORK/mnt2/threads/t1/runs/r1/events.jsonl"
  wait_for 2 has_lines "$WORK/f" 3
  terminal "success" "$WORK/mnt2/threads/t1/runs/r1"
  wait_for 3 gone "${BG[0]}"
  run seqs "$WORK/f"
  assert_output "$(seq 1 4)"
  sed -n 2p "$WORK/f" | grep -q '"from-put"'
  sed -n 3p "$WORK/f" | grep -q '"from-mount2"'
}

@test "a follower on the second mount is woken by a commit of the first" {
  ev_start >> "$RUN/events.jsonl"
  runfs_mount "$STORE" "$WORK/mnt2"
  follow_bg "$WORK/mnt2/threads/t1/runs/r1/follow.jsonl" "$WORK/f"
  wait_for 5 has_lines "$WORK/f" 1
  append_n 2
  wait_for 2 has_lines "$WORK/f" 3
  terminal
  wait_for 3 gone "${BG[0]}"
  run seqs "$WORK/f"
  assert_output "$(seq 1 4)"
}

@test "Ctrl-C and kill -9 of a blocked follower return promptly" {
  ev_start >> "$RUN/events.jsonl"
  # A background job of a script starts with SIGINT ignored; give the follower the default
  # disposition a terminal's Ctrl-C meets.
  python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp("cat", ["cat", sys.argv[1]])' "$RUN/follow.jsonl" > "$WORK/a" 3>&- &
  BG+=($!)
  follow_bg "$MNT/threads/t1/follow.jsonl" "$WORK/b"
  wait_for 5 has_lines "$WORK/a" 1
  wait_for 5 has_lines "$WORK/b" 1
  wait_for 5 in_read "${BG[0]}" || fail "the Ctrl-C follower did not park in read()"
  wait_for 5 in_read "${BG[1]}" || fail "the kill -9 follower did not park in read()"
  kill -INT "${BG[0]}"
  kill -9 "${BG[1]}"
  wait_for 2 gone "${BG[0]}"
  wait_for 2 gone "${BG[1]}"
  # The mount still serves, and a new follower still gets everything.
  append_n 1
  terminal
  run timeout 5 cat "$RUN/follow.jsonl"
  assert_success
  assert_equal "$(printf '%s\n' "$output" | wc -l)" 3
}

@test "killed followers free their resources: fd and thread counts return to baseline" {
  ev_start >> "$RUN/events.jsonl"
  local pid i round fds threads
  pid=$(daemon_pid "$MNT")
  [ -n "$pid" ]
  # The store's own files do not count: the pool opens a connection (its database and WAL
  # files) whenever more requests than ever before are in flight at once, which a slower
  # (sanitizer) daemon meets in round 3 too; that is the pool's size, not a follower's leak.
  # The store's own descriptors (its files; on PostgreSQL the pool's sockets, which grow
  # with concurrency up to the pool's bound) are not the followers'.
  count_fds() { find "/proc/$pid/fd" -mindepth 1 -printf '%l\n' | grep -vcE "^($STORE|socket:)"; }
  count_threads() { awk '/^Threads:/ {print $2}' "/proc/$pid/status"; }
  # Counted before any follower: the daemon's own descriptors do not change with followers,
  # and libfuse keeps up to 8 idle workers (mount.c) once requests came in parallel, so the
  # threads may settle up to 8 above the count at mount, never more.
  fds=$(count_fds)
  threads=$(count_threads)
  for round in 1 2 3; do
    local n=$(( round == 3 ? 5 : 10 ))
    BG=()
    for ((i = 1; i <= n; i++)); do follow_bg "$RUN/follow.jsonl" "$WORK/k$round-$i"; done
    for ((i = 1; i <= n; i++)); do wait_for 5 has_lines "$WORK/k$round-$i" "$round"; done
    append_n 1
    for ((i = 1; i <= n; i++)); do wait_for 5 has_lines "$WORK/k$round-$i" $((round + 1)); done
    for ((i = 0; i < n; i++)); do wait_for 5 in_read "${BG[$i]}"; done
    for ((i = 0; i < n; i++)); do kill -9 "${BG[$i]}"; done
    for ((i = 0; i < n; i++)); do wait_for 2 gone "${BG[$i]}"; done
  done
  fds_back() { [ "$(count_fds)" -eq "$fds" ]; }
  wait_for 5 fds_back ||
    fail "fds: $fds before, $(count_fds) after: $(find "/proc/$pid/fd" -mindepth 1 -printf '%l\n')"
  local cap=$(( threads + 8 > 11 ? threads + 8 : 11 ))
  wait_for 5 bash -c "[ \$(awk '/^Threads:/ {print \$2}' /proc/$pid/status) -le $cap ]" ||
    fail "threads: $threads at first (cap $cap), $(count_threads) after"
  # The mount still follows.
  follow_bg "$RUN/follow.jsonl" "$WORK/after"
  wait_for 5 has_lines "$WORK/after" 4
}

@test "--follow-timeout ends a thread follower and a run follower without a terminal" {
  runfs_mount "$STORE" "$WORK/mnt2" --follow-timeout 2
  ev_start >> "$RUN/events.jsonl"
  local t0=$SECONDS
  follow_bg "$WORK/mnt2/threads/t1/follow.jsonl" "$WORK/t"
  follow_bg "$WORK/mnt2/threads/t1/runs/r1/follow.jsonl" "$WORK/r"
  # Nothing is written while they wait: the deadline alone must end them.
  wait_for 5 gone "${BG[0]}"
  wait_for 5 gone "${BG[1]}"
  wait "${BG[0]}"
  wait "${BG[1]}"
  [ $((SECONDS - t0)) -ge 1 ]
  has_lines "$WORK/t" 1
  has_lines "$WORK/r" 1
  # A live follower with writes going on ends at the deadline too.
  follow_bg "$WORK/mnt2/threads/t1/follow.jsonl" "$WORK/t2"
  local k
  writing() { ev_human "tick$k" "$k" >> "$RUN/events.jsonl"; k=$((k + 1)); gone "${BG[2]}"; }
  k=1
  wait_for 6 writing || fail "the follower outlived its deadline while writes went on"
  has_lines "$WORK/t2" 2
}

@test "--follow-timeout counts waiting only: a reader late and slow gets the whole backlog of all three feeds" {
  runfs_mount "$STORE" "$WORK/mnt2" --follow-timeout 1
  local m=$WORK/mnt2 t
  mkdir -p "$m/threads/t1/runs/r2" "$m/threads/t2/runs/r1"
  # A backlog bigger than any one read: 300 events in r1, 100 in r2, one run in t2.
  python3 -c 'import sys
for i in range(1, int(sys.argv[1]) + 1):
    print("{\"event_type\":\"llm.human.input\",\"content\":{\"type\":\"human\",\"content\":\"%s backlog event %d\",\"id\":\"h-%d\"},\"metadata\":{\"caller\":\"lead_agent\"}}" % (sys.argv[2], i, i))' 300 r1 >"$WORK/r1.in"
  sed 's/r1 backlog/r2 backlog/' "$WORK/r1.in" | head -n 100 >"$WORK/r2.in"
  cat "$WORK/r1.in" >> "$m/threads/t1/runs/r1/events.jsonl"
  cat "$WORK/r2.in" >> "$m/threads/t1/runs/r2/events.jsonl"
  ev_start >> "$m/threads/t2/runs/r1/events.jsonl"
  # Each reader takes a first small read, reads nothing more until twice the timeout has gone
  # by (pacing the reader, not waiting for a condition), then the rest in 4 KB reads.
  for t in threads/t1/follow.jsonl threads/t1/runs/r1/follow.jsonl changes/follow/0; do
    python3 -c 'import os, sys, time
t0 = time.monotonic()
fd = os.open(sys.argv[1], os.O_RDONLY)
out = open(sys.argv[2], "wb")
out.write(os.read(fd, 100))
while time.monotonic() < t0 + 2.5:
    time.sleep(0.05)
while True:
    b = os.read(fd, 4096)
    if not b:
        break
    out.write(b)
    time.sleep(0.01)' "$m/$t" "$WORK/feed-${t//\//_}" 3>&- &
    BG+=($!)
  done
  # Once the backlog is out, the feeds still end by the clock, nothing new coming.
  for t in 0 1 2; do wait_for 15 gone "${BG[$t]}"; wait "${BG[$t]}"; done
  # The references: the seqs and texts written, and the three runs, counted here.
  run python3 -c 'import json, sys
d = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
print(len(d), [e["seq"] for e in d] == list(range(1, len(d) + 1)), sum("r2 backlog" in e["content"]["content"] for e in d))' "$WORK/feed-threads_t1_follow.jsonl"
  assert_output "400 True 100"
  run python3 -c 'import json, sys
d = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
print(len(d), [e["content"]["content"] for e in d] == ["r1 backlog event %d" % i for i in range(1, 301)])' "$WORK/feed-threads_t1_runs_r1_follow.jsonl"
  assert_output "300 True"
  run python3 -c 'import json, sys
print(sorted((d["thread_id"], d["run_id"], d["events"]) for d in map(json.loads, open(sys.argv[1]))))' "$WORK/feed-changes_follow_0"
  assert_output "[('t1', 'r1', 300), ('t1', 'r2', 100), ('t2', 'r1', 1)]"
}

@test "tail -f on events.jsonl sees appends from the mount, runfs put and another mount" {
  ev_start >> "$RUN/events.jsonl"
  runfs_mount "$STORE" "$WORK/mnt2"
  tail -f "$RUN/events.jsonl" > "$WORK/tail" 3>&- &
  BG+=($!)
  wait_for 5 has_lines "$WORK/tail" 1
  ev_human via-mount 1 >> "$RUN/events.jsonl"
  wait_for 2 has_lines "$WORK/tail" 2
  ev_human via-put 2 | "$RUNFS" put "$STORE" t1 r1 >/dev/null
  wait_for 2 has_lines "$WORK/tail" 3
  ev_human via-mount2 3 >> "$WORK/mnt2/threads/t1/runs/r1/events.jsonl"
  wait_for 2 has_lines "$WORK/tail" 4
  run seqs "$WORK/tail"
  assert_output "$(seq 1 4)"
  sed -n 4p "$WORK/tail" | grep -q '"via-mount2"'
}
