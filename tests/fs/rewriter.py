"""What forget.bats's and sizes.bats's Python readers do beside their reads: another process's
SQL on the test's store (lib.bash's store_sql, which the test exports with STORE), a run made
live, and the rest of a read across a change told apart."""
import errno
import os
import subprocess


def sql(q):
    subprocess.run(["bash", "-c", 'store_sql "$1"', "_", q], check=True)


def live(run_dir, k):
    # A run.start in another run, its writer kept open: the thread is live (an open writer
    # of one of its runs), so its files are read past the kernel's cache (which would serve
    # old pages itself) and every read asks the mount, however long the case takes (a
    # thread only appended to is live for 2 s). The caller holds the returned file open.
    os.makedirs(os.path.join(run_dir, "live%d" % k))
    w = open(os.path.join(run_dir, "live%d" % k, "events.jsonl"), "a")
    w.write('{"event_type":"run.start","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"}}\n')
    w.flush()
    return w


def rest_of(fd):
    # The rest of fd to its end, and None, or what was read before a read failed and its errno.
    rest = b""
    try:
        while True:
            b = os.read(fd, 1 << 16)
            if not b:
                return rest, None
            rest += b
    except OSError as e:
        return rest, e.errno


def read_on(fd, got, before, after):
    # The rest of fd after the bytes got, then which rendering the reader's bytes are (the one
    # before the change, after it, or neither: a splice), or the errno its read ended with.
    rest, err = rest_of(fd)
    got += rest
    if err is None:
        print("before" if got == before else "after" if got == after else
              "a splice: %d bytes read, before %d, after %d" % (len(got), len(before), len(after)))
    else:
        print(errno.errorcode[err])
    os.close(fd)
