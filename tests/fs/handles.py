# handles.py PID N MNT KIND... : for each file kind (a path below MNT, ":a" to open it for
# appending), hold N handles of it (a reading one reads up to 64 KiB, as cat does) and print
# "KIND BYTES_PER_HANDLE": the daemon's RSS (/proc/PID/status, which any uid reads) grown
# from the first N/2 handles to all N, per handle, so that what a kind's first use costs
# (store connections and their caches) is not counted against the handles. That growth is
# taken in two steps and the smaller one counts: a worker thread the daemon starts under
# load (its stack, its malloc arena) lands in one step, not in every handle. The handles
# are closed before the next kind.
import os, sys, time

def rss(pid):
    time.sleep(0.1)  # RSS is sampled by the kernel: let it settle
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no VmRSS for pid %d" % pid)

def hold(path, flags, count, fds):
    for _ in range(count):
        fd = os.open(path, flags)
        fds.append(fd)
        if not flags & os.O_WRONLY:
            os.read(fd, 65536)

pid, n, mnt = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for kind in sys.argv[4:]:
    path, _, mode = kind.partition(":")
    path = os.path.join(mnt, path)
    flags = os.O_WRONLY | os.O_APPEND if mode == "a" else os.O_RDONLY
    fds = []
    hold(path, flags, n // 2, fds)
    step = (n - n // 2) // 2
    per = []
    for count in (step, n - n // 2 - step):
        before = rss(pid)
        hold(path, flags, count, fds)
        per.append(max(0, rss(pid) - before) // count)
    for fd in fds:
        os.close(fd)
    print("%s %d" % (kind, min(per)), flush=True)
