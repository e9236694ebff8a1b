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
  crashtool.py wakeup STOP            sleep 1 ms at a time until STOP (a file) exists, then print
      how late the wake-ups were (p50/p99/max): the machine's own scheduling delay, which every
      write() meets at least twice (the daemon's thread, then the writer)

  crashtool.py chaos ACKLOG SECONDS SEED WORKER MOUNT...
      One chaos process (issue 9): for SECONDS, random operations on random files of the
      threads c1, c2 (runs r1-r3) through a random MOUNT: appends (whole and split lines,
      acknowledged in ACKLOG in the write format above; writer "w<WORKER><target>"), whole and
      partial reads, listings, and follow.jsonl readers that close early: after a few bytes,
      while a poll() waits, or killed while parked in read(). Exit 1 on a failed append or
      open, a torn line, or seq not increasing in a read; prints "ops=N" and counts by kind.
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


def stored_rows(store, thread):
    """(thread_id, run_id, seq, content, event_type) of the store's rows in thread, seq order:
    from a SQLite file, or from a PostgreSQL URI through psql."""
    sql = ("SELECT thread_id, run_id, seq, content, event_type FROM run_events"
           + (" WHERE thread_id = ?" if thread else "") + " ORDER BY thread_id, seq")
    if "://" not in store:
        import sqlite3
        db = sqlite3.connect(store, timeout=30)
        rows = db.execute(sql, (thread,) if thread else ()).fetchall()
        db.close()
        return rows
    import csv
    import io
    import subprocess
    if thread:
        sql = sql.replace("?", "'%s'" % thread.replace("'", "''"))
    out = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", store, "-c",
                          "COPY (%s) TO STDOUT WITH (FORMAT csv)" % sql],
                         check=True, capture_output=True, text=True).stdout
    return [(t, r, int(q), c, e) for t, r, q, c, e in csv.reader(io.StringIO(out))]


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
    rows = stored_rows(store, thread)
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
    return _print_spread("writes", vals)


def _print_spread(what, vals):
    """Print the count and p50/p99/max of the µs values; 1 when there are none."""
    vals.sort()
    if not vals:
        print("no samples")
        return 1
    pick = lambda q: vals[min(len(vals) - 1, int(q * len(vals)))]
    print("%s=%d p50=%dus p99=%dus max=%dus" % (what, len(vals), pick(0.5), pick(0.99), vals[-1]))
    return 0


def cmd_wakeup(args):
    stop = args[0]
    late = []
    while not os.path.exists(stop):
        t0 = time.perf_counter_ns()
        time.sleep(0.001)
        late.append(max(0, (time.perf_counter_ns() - t0) // 1000 - 1000))
    return _print_spread("wakeups", late)


CHAOS_THREADS = ("c1", "c2")
CHAOS_RUNS = ("r1", "r2", "r3")
CHAOS_FILES = ("events.jsonl", "messages.jsonl", "history.jsonl", "seq", "message-count")


class ChaosFailure(Exception):
    pass


def _chaos_lines(path, data, last_seq):
    """Whole JSON lines with increasing seq in data (a prefix of a log or feed)."""
    for raw in data.split(b"\n"):
        try:
            seq = json.loads(raw)["seq"]
        except Exception:
            raise ChaosFailure("torn line in %s: %r" % (path, raw[:80]))
        if seq <= last_seq:
            raise ChaosFailure("%s: seq %d after %d" % (path, seq, last_seq))
        last_seq = seq
    return last_seq


def _chaos_check_prefix(path, data):
    """data holds the first bytes of a log or feed: its complete lines must be sound."""
    whole = data[: data.rfind(b"\n")] if b"\n" in data else b""
    if whole:
        _chaos_lines(path, whole, 0)


def cmd_chaos(args):
    import random
    import select
    import signal
    acklog, seconds, seed, worker = args[0], float(args[1]), int(args[2]), int(args[3])
    mounts = args[4:]
    rnd = random.Random(seed)
    deadline = time.time() + seconds
    counts = {}
    writes = {}
    ack = open(acklog, "a", buffering=1)

    def target():
        t, r = rnd.randrange(len(CHAOS_THREADS)), rnd.randrange(len(CHAOS_RUNS))
        base = os.path.join(rnd.choice(mounts), "threads", CHAOS_THREADS[t])
        return base, os.path.join(base, "runs", CHAOS_RUNS[r]), t * len(CHAOS_RUNS) + r

    def append():
        _, run, idx = target()
        os.makedirs(run, exist_ok=True)
        writer = "w%d%d" % (worker, idx)
        fd = os.open(os.path.join(run, "events.jsonl"), os.O_WRONLY | os.O_APPEND)
        try:
            for _ in range(rnd.randint(1, 3)):
                n = writes[writer] = writes.get(writer, 0) + 1
                k = rnd.randint(1, 3)
                data = "".join(line_for(writer, n, i, k) for i in range(1, k + 1)).encode()
                # Sometimes the last line arrives in two writes (held until its newline).
                cut = rnd.randrange(1, len(data)) if rnd.random() < 0.3 else len(data)
                for part in (data[:cut], data[cut:]):
                    if part and os.write(fd, part) != len(part):
                        raise ChaosFailure("short write to %s" % run)
                ack.write("%s-%d-%d\n" % (writer, n, k))
        finally:
            os.close(fd)

    def read_whole():
        base, run, _ = target()
        path = os.path.join(rnd.choice((base, run)), rnd.choice(("events.jsonl", "messages.jsonl",
                                                                  "history.jsonl")))
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return
        if data and not data.endswith(b"\n"):
            raise ChaosFailure("torn tail in %s: %r" % (path, data[-80:]))
        if data and path.endswith("events.jsonl"):
            _chaos_lines(path, data[:-1], 0)

    def read_part():
        base, run, _ = target()
        pick = rnd.choice([os.path.join(base, f) for f in CHAOS_FILES] +
                          [os.path.join(run, f) for f in CHAOS_FILES] +
                          [os.path.join(rnd.choice(mounts), n) for n in
                           ("README", ".runfs/status.json", ".runfs/rejects.jsonl")])
        try:
            fd = os.open(pick, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            data = os.read(fd, rnd.randint(1, 4096))
        finally:
            os.close(fd)
        if pick.endswith("events.jsonl"):
            _chaos_check_prefix(pick, data)

    def listing():
        base, run, _ = target()
        for d in (os.path.dirname(base), base, os.path.join(base, "runs"), run):
            try:
                for name in os.listdir(d):
                    os.lstat(os.path.join(d, name))
            except FileNotFoundError:
                pass

    def feed():
        base, run, _ = target()
        path = os.path.join(rnd.choice((base, run)), "follow.jsonl")
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return
        got = b""
        try:
            p = select.poll()
            p.register(fd, select.POLLIN)
            for _ in range(rnd.randint(1, 3)):
                # A reader that closes while its poll() or its data is still pending.
                if not p.poll(rnd.randint(0, 100)):
                    break
                chunk = os.read(fd, rnd.randint(1, 300))
                if not chunk:
                    break
                got += chunk
        finally:
            os.close(fd)
        _chaos_check_prefix(path, got)

    def feed_killed():
        base, run, _ = target()
        path = os.path.join(rnd.choice((base, run)), "follow.jsonl")
        if not os.path.exists(path):
            return
        pid = os.fork()
        if pid == 0:
            try:
                fd = os.open(path, os.O_RDONLY)
                while os.read(fd, 1 << 16):
                    pass
            finally:
                os._exit(0)
        time.sleep(rnd.random() * 0.05)
        os.kill(pid, rnd.choice((signal.SIGKILL, signal.SIGTERM)))
        os.waitpid(pid, 0)

    ops = ((append, 25), (read_whole, 15), (read_part, 15), (listing, 8), (feed, 30),
           (feed_killed, 7))
    names = [f for f, _ in ops]
    weights = [w for _, w in ops]
    try:
        while time.time() < deadline:
            op = rnd.choices(names, weights)[0]
            op()
            counts[op.__name__] = counts.get(op.__name__, 0) + 1
    except (ChaosFailure, OSError) as e:
        print("worker %d (seed %d): %s" % (worker, seed, e))
        return 1
    finally:
        ack.close()
    print("ops=%d %s" % (sum(counts.values()),
                         " ".join("%s=%d" % kv for kv in sorted(counts.items()))))
    return 0


def main():
    cmds = {"write": cmd_write, "check": cmd_check, "read": cmd_read, "follow": cmd_follow,
            "latency": cmd_latency, "wakeup": cmd_wakeup, "chaos": cmd_chaos}
    if len(sys.argv) < 3 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    sys.exit(cmds[sys.argv[1]](sys.argv[2:]))


if __name__ == "__main__":
    main()
