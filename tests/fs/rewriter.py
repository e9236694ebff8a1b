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


def read_on(fd, got, before, after):
    # The rest of fd after the bytes got, then which rendering the reader's bytes are (the one
    # before the change, after it, or neither: a splice), or the errno its read ended with.
    try:
        while True:
            b = os.read(fd, 1 << 16)
            if not b:
                break
            got += b
        print("before" if got == before else "after" if got == after else
              "a splice: %d bytes read, before %d, after %d" % (len(got), len(before), len(after)))
    except OSError as e:
        print(errno.errorcode[e.errno])
    os.close(fd)
