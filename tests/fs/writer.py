#!/usr/bin/env python3
"""writer.py — an appender for the many-host suite: N llm.error events with content TAG-i
written to an events.jsonl, CHUNK lines per write().

  writer.py FILE TAG N [CHUNK]           stop at the first failed write (exit 1)
  writer.py --acks ACKS FILE TAG N       one line per write; each acknowledged TAG-i is
                                         appended to ACKS, each failure's errno name to
                                         ACKS.err, and it keeps going (until N, --until
                                         FILE exists, or the mount is gone)
"""
import errno
import os
import sys


def line(tag, i):
    return ('{"event_type":"llm.error","content":"%s-%d"}\n' % (tag, i)).encode()


def main(argv):
    acks = until = None
    while argv and argv[0].startswith('--'):
        if argv[0] == '--acks':
            acks, argv = argv[1], argv[2:]
        elif argv[0] == '--until':
            until, argv = argv[1], argv[2:]
        else:
            raise SystemExit('unknown option ' + argv[0])
    path, tag, n = argv[0], argv[1], int(argv[2])
    chunk = int(argv[3]) if len(argv) > 3 else 1
    if acks is None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        for start in range(0, n, chunk):
            os.write(fd, b''.join(line(tag, i) for i in range(start, min(n, start + chunk))))
        os.close(fd)
        return 0
    with open(acks, 'a') as ok, open(acks + '.err', 'a') as bad:
        fd = None
        for i in range(n):
            if until and os.path.exists(until):
                break
            try:
                if fd is None:
                    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
                os.write(fd, line(tag, i))
                ok.write('%s-%d\n' % (tag, i))
                ok.flush()
            except OSError as e:
                bad.write(errno.errorcode.get(e.errno, str(e.errno)) + '\n')
                bad.flush()
                if e.errno in (errno.ENOTCONN, errno.ECONNABORTED):
                    break        # the mount is gone
                if fd is not None:
                    os.close(fd)
                    fd = None
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
