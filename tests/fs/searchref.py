#!/usr/bin/env python3
"""searchref.py QUERY FILE... — the lines of the events.jsonl FILEs (in the order given) that
match QUERY by DESIGN's rule, computed without runfs: the test's independent reference. With
the term by:run, a line per matching run instead, as grep -c would count each run's lines.
Exit 3 when the query is malformed (an unbalanced quote, no term)."""
import json
import os
import sys


def parse(query):
    terms, i, n = [], 0, len(query)
    while True:
        while i < n and query[i:i + 1] == b' ':
            i += 1
        if i == n:
            break
        neg = query[i:i + 1] == b'-' and i + 1 < n and query[i + 1:i + 2] != b' '
        i += neg
        quoted, inq, raw = query[i:i + 1] == b'"', False, bytearray()
        while i < n and (inq or query[i:i + 1] != b' '):
            if query[i:i + 1] == b'"':
                inq = not inq
            else:
                raw += query[i:i + 1]
            i += 1
        if inq:
            sys.exit(3)
        raw = bytes(raw)
        kind = 'text'
        if not quoted and not neg and raw == b'by:run':
            terms.append(('by:run', False, raw))
            continue
        if not quoted and raw.startswith(b'type:'):
            kind, raw = 'type', raw[5:]
            if raw.endswith(b'*'):
                kind, raw = 'prefix', raw[:-1]
        elif not quoted and raw.startswith(b'category:'):
            kind, raw = 'category', raw[9:]
        terms.append((kind, neg, raw))
    if not [t for t in terms if t[0] != 'by:run']:
        sys.exit(3)
    return terms


def lower(b):
    return bytes(c + 32 if 65 <= c <= 90 else c for c in b)


def spans(line):
    text = line.decode('utf-8')
    dec = json.JSONDecoder()
    c0 = text.index(',"content":') + len(',"content":')
    _, c1 = dec.raw_decode(text, c0)
    assert text.startswith(',"metadata":', c1)
    m0 = c1 + len(',"metadata":')
    _, m1 = dec.raw_decode(text, m0)
    return text[c0:c1].encode(), text[m0:m1].encode()


def matches(terms, line):
    rec = json.loads(line)
    content, meta = (lower(s) for s in spans(line))
    for kind, neg, raw in terms:
        if kind == 'by:run':
            continue
        if kind == 'type':
            hit = rec['event_type'].encode() == raw
        elif kind == 'prefix':
            hit = rec['event_type'].encode().startswith(raw)
        elif kind == 'category':
            hit = rec['category'].encode() == raw
        else:
            hit = lower(raw) in content or lower(raw) in meta
        if hit == neg:
            return False
    return True


def main():
    terms = parse(sys.argv[1].encode('utf-8', 'surrogateescape'))
    by_run = any(t[0] == 'by:run' for t in terms)
    # SEARCHREF_RUN, SEARCHREF_USER: only the lines of that run, or of that owner (their
    # canonical spelling: "run_id" is followed by a comma, "user_id" ends the line).
    only = []
    if os.environ.get('SEARCHREF_RUN'):
        only.append(b'"run_id":"%s",' % os.environ['SEARCHREF_RUN'].encode())
    if os.environ.get('SEARCHREF_USER'):
        only.append(b'"user_id":"%s"}' % os.environ['SEARCHREF_USER'].encode())
    out = sys.stdout.buffer
    for path in sys.argv[2:]:
        runs = {}  # (thread, run) -> [matches, first_seq, last_seq], in first-match order
        with open(path, 'rb') as f:
            for line in f:
                if any(o not in line for o in only):
                    continue
                if not matches(terms, line.rstrip(b'\n')):
                    continue
                if not by_run:
                    out.write(line)
                    continue
                rec = json.loads(line)
                r = runs.setdefault((rec['thread_id'], rec['run_id']), [0, rec['seq'], 0])
                r[0] += 1
                r[2] = rec['seq']
        # Each FILE is one thread's events in seq order: its runs by their first match.
        for (thread, run), (n, first, last) in sorted(runs.items(), key=lambda kv: kv[1][1]):
            out.write(json.dumps({'thread_id': thread, 'run_id': run, 'matches': n,
                                  'first_seq': first, 'last_seq': last},
                                 separators=(',', ':')).encode() + b'\n')


main()
