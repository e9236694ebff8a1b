#!/usr/bin/env python3
# bench-wal.py STORE SECS MOUNT...: 8 writers append one line per write() to runs of their
# own, spread over the mounts, for SECS seconds, while the store's -wal is sampled every
# 100 ms. Prints: lines written, the WAL's peak size in bytes (for scripts/bench wal).
import os, sys, time, threading
store, secs, mounts = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
writers = 8
stop = time.monotonic() + secs
counts = [0] * writers
def writer(i):
    m = mounts[i % len(mounts)]
    d = "%s/threads/w%d/runs/r1" % (m, i)
    os.makedirs(d, exist_ok=True)
    fd = os.open(d + "/events.jsonl", os.O_WRONLY | os.O_APPEND)
    n = 0
    while time.monotonic() < stop:
        os.write(fd, b'{"event_type":"llm.error","content":"line %d of writer %d"}\n' % (n, i))
        n += 1
    os.close(fd)
    counts[i] = n
peak = 0
def sampler():
    global peak
    while time.monotonic() < stop + 0.5:
        try:
            peak = max(peak, os.stat(store + "-wal").st_size)
        except FileNotFoundError:
            pass
        time.sleep(0.1)
ts = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
s = threading.Thread(target=sampler)
s.start()
for t in ts: t.start()
for t in ts: t.join()
s.join()
print(sum(counts), peak)
