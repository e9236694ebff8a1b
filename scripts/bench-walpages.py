#!/usr/bin/env python3
# bench-walpages.py RUNFS DIR N: WAL pages one single-line commit writes, for scripts/bench wal.
# A store mounted by RUNFS in DIR; one writer appends one line per write() (each write() is
# one commit) N times while a reader's open snapshot keeps the WAL from being reset; the WAL's
# growth divided by N, in bytes and in frames (page + 24-byte header). The frames' page
# numbers, read from their headers and named through dbstat, tell which tables and indexes
# the pages belong to. Baseline, same method: plain SQLite committing the same row and the
# high-water update to DeerFlow's schema alone. Prints one "name value" line per figure.
import os, sqlite3, struct, subprocess, sys, time

runfs, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
LINE = b'{"event_type":"llm.error","content":"line %d of the writer"}\n'


def wal_frames(path, start):
    """Page numbers of the frames from byte offset start of the WAL at path."""
    with open(path, "rb") as f:
        head = f.read(32)
        page = struct.unpack(">I", head[8:12])[0]
        f.seek(start)
        data = f.read()
    frame = 24 + page
    return page, [struct.unpack(">I", data[i:i + 4])[0] for i in range(0, len(data) - frame + 1, frame)]


def names(db):
    c = sqlite3.connect(db)
    m = dict(c.execute("SELECT pageno, name FROM dbstat"))
    c.close()
    return m


def measure(db, commit):
    """Bytes and frames per commit of commit(i), i in 0..n-1, with a reader's snapshot open."""
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM run_events").fetchall()
    start = os.path.getsize(db + "-wal")
    for i in range(n):
        commit(i)
    end = os.path.getsize(db + "-wal")
    page, pages = wal_frames(db + "-wal", start)
    reader.execute("COMMIT")
    reader.close()
    where = {}
    by_page = names(db)
    for p in pages:
        name = by_page.get(p, "(page %d: not in a table now)" % p)
        where[name] = where.get(name, 0) + 1
    return (end - start) / n, (end - start) / n / (page + 24), where


def wait_for(cond, what, limit=20):
    t = time.monotonic() + limit
    while not cond():
        if time.monotonic() > t:
            sys.exit("bench-walpages: %s" % what)
        time.sleep(0.05)


def runfs_store():
    db, mnt = os.path.join(work, "runfs.db"), os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run([runfs, "mount", db, mnt], check=True)
    try:
        wait_for(lambda: os.path.exists(mnt + "/README"), "the mount did not come up")
        run = mnt + "/threads/w1/runs/r1"
        os.makedirs(run, exist_ok=True)
        fd = os.open(run + "/events.jsonl", os.O_WRONLY | os.O_APPEND)
        os.write(fd, LINE % 0)  # the thread's and run's rows exist before the count starts
        r = measure(db, lambda i: os.write(fd, LINE % (i + 1)))
        os.close(fd)
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
    return db, r


def plain_store(row):
    db = os.path.join(work, "plain.db")
    c = sqlite3.connect(db, isolation_level=None)
    c.executescript("""
        PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;
        CREATE TABLE run_events (id INTEGER NOT NULL, thread_id VARCHAR(64) NOT NULL,
          run_id VARCHAR(64) NOT NULL, user_id VARCHAR(64), event_type VARCHAR(32) NOT NULL,
          category VARCHAR(16) NOT NULL, content TEXT NOT NULL, event_metadata JSON NOT NULL,
          seq INTEGER NOT NULL, created_at DATETIME NOT NULL, PRIMARY KEY (id),
          CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq));
        CREATE INDEX ix_events_run ON run_events (thread_id, run_id, seq);
        CREATE INDEX ix_events_thread_cat_seq ON run_events (thread_id, category, seq);
        CREATE INDEX ix_run_events_user_id ON run_events (user_id);
        CREATE TABLE run_event_thread_seq (thread_id VARCHAR(64) NOT NULL,
          seq BIGINT DEFAULT 0 NOT NULL, CONSTRAINT pk_run_event_thread_seq PRIMARY KEY (thread_id));
    """)
    def commit(i):
        seq = i + 2
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, "
                  "content, event_metadata, seq, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  row[:7] + (seq,) + row[8:])
        c.execute("INSERT INTO run_event_thread_seq (thread_id, seq) VALUES (?, ?) ON CONFLICT "
                  "(thread_id) DO UPDATE SET seq = max(seq, excluded.seq)", (row[0], seq))
        c.execute("COMMIT")
    commit(-1)
    r = measure(db, commit)
    c.close()
    return r


db, mine = runfs_store()
row = sqlite3.connect(db).execute(
    "SELECT thread_id, run_id, user_id, event_type, category, content, event_metadata, seq, "
    "created_at FROM run_events ORDER BY id DESC LIMIT 1").fetchone()
base = plain_store(row)
for tag, (nbytes, frames, where) in (("runfs", mine), ("plain", base)):
    print("%s_bytes %.0f" % (tag, nbytes))
    print("%s_pages %.2f" % (tag, frames))
    print("%s_where %s" % (tag, ", ".join("%s %.2f" % (k, v / n) for k, v in
                                            sorted(where.items(), key=lambda kv: -kv[1]))))
