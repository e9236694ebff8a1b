"""idemwriter.py PATH FIRST LAST — append events FIRST..LAST to PATH, each with its own
idempotency key (1-3 lines per write()), printing the index reached when a write fails
(the daemon died: ENOTCONN) and exiting 3; "done" when all were written."""
import os
import sys

path, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
i = first
while i <= last:
    n = min(1 + i % 3, last - i + 1)
    data = b"".join(
        b'{"event_type":"llm.error","content":"event %d","idempotency_key":"key-%d"}\n' % (j, j)
        for j in range(i, i + n))
    try:
        os.write(fd, data)
    except OSError as e:
        print(i + n - 1, e.errno)
        sys.exit(3)
    i += n
print("done")
