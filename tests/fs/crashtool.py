#!/usr/bin/env python3
"""crashtool.py — writers and checkers for the crash, load and bench scripts (issue 6).

  crashtool.py write FILE WRITER [MAX_WRITES [LAT_FILE [K]]]
      Append to FILE (O_WRONLY|O_APPEND) until MAX_WRITES writes are done (0: no limit) or a
      write fails. Write number N of writer W carries k = 1 + N % 3 event lines whose content
      is "W-N-i-k" (i = 1..k): one write() is one transaction, so either all k lines of it are
      stored or none. After each write() that returned the whole length, "W-N-k" is printed
      (unbuffered): the acknowledged writes. With LAT_FILE, each write's latency in µs is
      appended there (one per line) at exit ("-": none). K > 0: every write has K lines.

  crashtool.py check STORE ACKLOG... [--thread T] [--ignore-type TYPE]... [--mount-log FILE]...
      Compare the store with the acknowledgements: prints one JSON summary line and exits 1 when
      an acknowledged write is missing, a write is stored in part, a line is stored twice, a
      row is foreign (not written by a writer), seq is not strictly increasing per thread, or a
      writer's writes are stored out of order. --thread: only that thread's rows;
      --ignore-type: rows of that event type are no writer's (seq still checked). --mount-log
      files (events.jsonl read through a mount) must hold only lines that parse as JSON
      objects with increasing seq.

  crashtool.py read FILE STOP         re-read FILE whole (a fresh open each pass) until STOP
  crashtool.py follow FILE STOP       hold FILE open and read what is appended (tail -f)
      Readers: every line seen must parse as JSON, seqs must increase within a pass; exit 1 on
      a torn line. STOP is a number of seconds, or a file whose existence ends the reader
      (after one more whole pass / after draining). follow prints the lines it saw.

  crashtool.py latency FILE...        p50/p99/max of the write latencies in FILEs
"""
import json
import os
import re
import sys
import time

CONTENT = re.compile(r"^(w[0-9]+)-([0-9]+)-([0-9]+)-([0-9]+)$")


def line_for(writer, n, i, k):
    return '{"event_type":"llm.error","content":"%s-%d-%d-%d"}\n' % (writer, n, i, k)


def cmd_write(args):
    path, writer = args[0], args[1]
    max_writes = int(args[2]) if len(args) > 2 else 0
    lat_file = args[3] if len(args) > 3 and args[3] != "-" else None
    fixed_k = int(args[4]) if len(args) > 4 else 0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    lats = []
    n = 0
    try:
        while max_writes == 0 or n < max_writes:
            n += 1
            k = fixed_k or 1 + n % 3
            data = "".join(line_for(writer, n, i, k) for i in range(1, k + 1)).encode()
            t0 = time.perf_counter_ns()
            try:
                wrote = os.write(fd, data)
            except OSError:
                break
            if lat_file is not None:
                lats.append((time.perf_counter_ns() - t0) // 1000)
            if wrote != len(data):
                break
            os.write(1, b"%s-%d-%d\n" % (writer.encode(), n, k))
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
        if lat_file is not None:
            with open(lat_file, "a") as f:
                f.write("".join("%d\n" % v for v in lats))
    return 0


def check_mount_log(path, problems):
    last = 0
    count = 0
    with open(path, "rb") as f:
        for raw in f:
            count += 1
            try:
                rec = json.loads(raw)
                seq = rec["seq"]
            except Exception:
                problems.append("%s line %d does not parse: %r" % (path, count, raw[:80]))
                return count
            if seq <= last:
                problems.append("%s line %d: seq %d after %d" % (path, count, seq, last))
            last = seq
    return count


def cmd_check(args):
    store = args[0]
    acklogs, mount_logs = [], []
    thread = None
    ignore = set()
    it = iter(args[1:])
    for a in it:
        if a == "--mount-log":
            mount_logs.append(next(it))
        elif a == "--thread":
            thread = next(it)
        elif a == "--ignore-type":
            ignore.add(next(it))
        else:
            acklogs.append(a)
    problems = []
    acked = {}
    for log in acklogs:
        with open(log) as f:
            for l in f:
                l = l.strip()
                if not l:
                    continue
                w, n, k = l.rsplit("-", 2)
                acked[(w, int(n))] = int(k)
    import sqlite3
    db = sqlite3.connect(store, timeout=30)
    rows = db.execute(
        "SELECT thread_id, run_id, seq, content, event_type FROM run_events"
        + (" WHERE thread_id = ?" if thread else "") + " ORDER BY thread_id, seq",
        (thread,) if thread else (),
    ).fetchall()
    db.close()
    stored = {}  # (w, n) -> {i: count}
    ks = {}
    writer_runs = {}
    last_seq = {}
    last_write = {}
    seen_seq = set()
    foreign = 0
    for thread, run, seq, content, event_type in rows:
        if (thread, seq) in seen_seq:
            problems.append("seq %d stored twice in thread %s" % (seq, thread))
        seen_seq.add((thread, seq))
        if seq <= last_seq.get(thread, 0):
            problems.append("thread %s: seq %d after %d" % (thread, seq, last_seq[thread]))
        last_seq[thread] = seq
        if event_type in ignore:
            continue
        m = CONTENT.match(content or "")
        if not m:
            foreign += 1
            problems.append("foreign row %s/%s seq %d: %r" % (thread, run, seq, (content or "")[:60]))
            continue
        w, n, i, k = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        key = (thread, w)
        if writer_runs.setdefault(key, run) != run:
            problems.append("writer %s's rows in two runs" % w)
        if (n, i) <= last_write.get(key, (0, 0)):
            problems.append("writer %s: write %d line %d stored after %r" % (w, n, i, last_write[key]))
        last_write[key] = (n, i)
        ks[(w, n)] = k
        stored.setdefault((w, n), {}).setdefault(i, 0)
        stored[(w, n)][i] += 1
    lost = [key for key in acked if key not in stored]
    partial = [key for key, lines in stored.items() if sorted(lines) != list(range(1, ks[key] + 1))]
    dups = [key for key, lines in stored.items() if any(c != 1 for c in lines.values())]
    unacked = [key for key in stored if key not in acked]
    for key in lost[:5]:
        problems.append("acknowledged write %s-%d lost" % key)
    for key in partial[:5]:
        problems.append("write %s-%d stored in part: lines %s of %d" % (key + (sorted(stored[key]), ks[key])))
    for key in dups[:5]:
        problems.append("write %s-%d stored twice" % key)
    lines_seen = 0
    for path in mount_logs:
        lines_seen += check_mount_log(path, problems)
    print(json.dumps({
        "rows": len(rows), "acked_writes": len(acked), "stored_writes": len(stored),
        "acked_events": sum(acked.values()),
        "stored_unacked": len(unacked), "lost": len(lost),
        "lost_events": sum(k - len(stored.get(key, {})) for key, k in acked.items()),
        "partial": len(partial),
        "duplicated": len(dups), "foreign": foreign, "mount_lines": lines_seen,
        "problems": problems[:10],
    }))
    return 1 if problems else 0


def _stopper(arg):
    try:
        deadline = time.time() + float(arg)
        return lambda: time.time() >= deadline
    except ValueError:
        return lambda: os.path.exists(arg)


def _check_lines(path, raws, last_seq):
    for raw in raws:
        try:
            seq = json.loads(raw)["seq"]
        except Exception:
            print("torn line in %s: %r" % (path, raw[:80]))
            return None
        if seq <= last_seq:
            print("%s: seq %d after %d" % (path, seq, last_seq))
            return None
        last_seq = seq
    return last_seq


def cmd_read(args):
    path, stop = args[0], _stopper(args[1])
    passes = lines = 0
    while True:
        last = stop()
        with open(path, "rb") as f:
            data = f.read()
        passes += 1
        if data and not data.endswith(b"\n"):
            print("torn tail in %s: %r" % (path, data[-80:]))
            return 1
        raws = data.splitlines()
        if _check_lines(path, raws, 0) is None:
            return 1
        lines = len(raws)
        if last:
            break
    print("passes=%d lines=%d" % (passes, lines))
    return 0


def cmd_follow(args):
    path, stop = args[0], _stopper(args[1])
    lines = 0
    last_seq = 0
    buf = b""
    with open(path, "rb", buffering=0) as f:
        while True:
            ending = stop()
            chunk = f.read(1 << 16)
            if not chunk:
                if ending:
                    break
                time.sleep(0.02)
                continue
            buf += chunk
            *full, buf = buf.split(b"\n")
            last_seq = _check_lines(path, full, last_seq)
            if last_seq is None:
                return 1
            lines += len(full)
    if buf:
        print("torn tail in %s: %r" % (path, buf[:80]))
        return 1
    print("lines=%d" % lines)
    return 0


def cmd_latency(args):
    """latency FILE...: p50/p99/max of the µs values in FILEs."""
    vals = []
    for p in args:
        with open(p) as f:
            vals.extend(int(l) for l in f if l.strip())
    vals.sort()
    if not vals:
        print("no samples")
        return 1
    pick = lambda q: vals[min(len(vals) - 1, int(q * len(vals)))]
    print("writes=%d p50=%dus p99=%dus max=%dus" % (len(vals), pick(0.5), pick(0.99), vals[-1]))
    return 0


def main():
    cmds = {"write": cmd_write, "check": cmd_check, "read": cmd_read, "follow": cmd_follow,
            "latency": cmd_latency}
    if len(sys.argv) < 3 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    sys.exit(cmds[sys.argv[1]](sys.argv[2:]))


if __name__ == "__main__":
    main()
