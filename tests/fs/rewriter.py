"""What forget.bats's Python readers do beside their reads: another process's SQL on the test's
store (lib.bash's store_sql, which the test exports with STORE), and a run made live."""
import os
import subprocess


def sql(q):
    subprocess.run(["bash", "-c", 'store_sql "$1"', "_", q], check=True)


def live(run_dir, k):
    # A run.start in another run: the thread is live, so its files are read past the
    # kernel's cache (which would serve old pages itself) and every read asks the mount.
    os.makedirs(os.path.join(run_dir, "live%d" % k))
    with open(os.path.join(run_dir, "live%d" % k, "events.jsonl"), "a") as w:
        w.write('{"event_type":"run.start","content":{"chain":"lead_agent"},"metadata":{"caller":"lead_agent"}}\n')
