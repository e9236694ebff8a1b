#!/usr/bin/env python3
"""changes_ref.py — the change feed's expected lines, computed from the store's rows (not by
runfs), and checks of what a consumer saw.

  changes_ref.py expect ROWS TERMINALS SEALS   print the expected run lines without change,
      sorted by thread and run. ROWS: thread|run|count|max seq|created_at of the max seq;
      TERMINALS: thread|run|content of its first run.terminal; SEALS: thread|run|state.
  changes_ref.py strip FEED       the run lines of a feed without change, sorted (tombstones
      kept as they are, without change)
  changes_ref.py consume MNT STOP OUT   loop on MNT/changes/since/N (N the highest change
      read) until the file STOP exists, then read once more; check each read's lines are in
      increasing change order above N; write the runs' last lines (sorted) to OUT.
"""
import json
import os
import sys


def canon_time(s):
    s = s.strip().replace(' ', 'T')
    for tz in ('+00:00', '+00'):
        if s.endswith(tz):
            s = s[: -len(tz)]
    if '.' in s:
        head, frac = s.split('.', 1)
    else:
        head, frac = s, ''
    return '%s.%s+00:00' % (head, (frac + '000000')[:6])


def expect(rows_path, terms_path, seals_path):
    terminals, seals = {}, {}
    for line in open(terms_path).read().splitlines():
        t, r, content = line.split('|', 2)
        try:
            status = json.loads(content).get('status')
        except (ValueError, AttributeError):
            status = None
        terminals.setdefault((t, r), status if isinstance(status, str) else None)
    for line in open(seals_path).read().splitlines():
        t, r, state = line.split('|')
        seals[(t, r)] = state
    out = []
    for line in open(rows_path).read().splitlines():
        t, r, n, top, at = line.split('|', 4)
        out.append(json.dumps({'thread_id': t, 'run_id': r, 'upper_seq': int(top), 'events': int(n),
                               'status': terminals.get((t, r)), 'seal': seals.get((t, r)),
                               'deleted': False, 'at': canon_time(at)}, separators=(',', ':')))
    return sorted(out)


def strip(line):
    d = json.loads(line)
    d.pop('change')
    return json.dumps(d, separators=(',', ':'))


def read_since(mnt, n):
    with open(os.path.join(mnt, 'changes', 'since', str(n)), 'rb') as f:
        data = f.read().decode()
    lines = data.splitlines()
    last = n
    for line in lines:
        c = json.loads(line)['change']
        if c <= last:
            raise SystemExit('change %d after %d in since/%d' % (c, last, n))
        last = c
    return lines, last


def consume(mnt, stop, out):
    view, n, reads = {}, 0, 0
    while True:
        done = os.path.exists(stop)
        lines, n = read_since(mnt, n)
        reads += 1
        for line in lines:
            d = json.loads(line)
            view[(d['thread_id'], d['run_id'])] = line
        if done:
            break
    with open(out, 'w') as f:
        for key in sorted(view):
            f.write(view[key] + '\n')
    print(reads)


def main(argv):
    if argv[0] == 'expect':
        print('\n'.join(expect(*argv[1:4])))
    elif argv[0] == 'strip':
        print('\n'.join(sorted(strip(l) for l in open(argv[1]).read().splitlines())))
    elif argv[0] == 'consume':
        consume(*argv[1:4])
    else:
        raise SystemExit('usage: see the docstring')


if __name__ == '__main__':
    main(sys.argv[1:])
