#!/usr/bin/env python3
"""merkle_ref.py - RFC 6962's Merkle tree, written from the RFC's text (section 2.1) with
hashlib alone, to check runfs's seals and proofs against something that is not runfs.

  merkle_ref.py check RUN_DIR...     every run dir (a mount's threads/T/runs/R): seal.json's
                                     root and tree_size over events.jsonl's sealed lines, and
                                     proofs/<seq> of every sealed seq (or of --sample N seqs)
  merkle_ref.py root FILE            the MTH of FILE's lines, as sha256:<hex>

A salted seal (seal.json "leaves": "salted") hashes each line after its salt, leaf data
salt || line; the salts come from proofs/<seq> ("salt", hex), or from --salts FILE (lines
"seq hex", as read from the store's tables by the test).

MTH({}) = SHA-256(); MTH({d0}) = SHA-256(0x00 || d0); for n > 1, k the largest power of two
smaller than n: MTH(D[n]) = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n])).
PATH(m, {d0}) = {}; for n > 1: m < k: PATH(m, D[0:k]) : MTH(D[k:n]), else
PATH(m - k, D[k:n]) : MTH(D[0:k]).
"""
import hashlib
import json
import os
import random
import sys


def leaf(d):
    return hashlib.sha256(b"\x00" + d).digest()


def node(a, b):
    return hashlib.sha256(b"\x01" + a + b).digest()


def split(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


class Tree:
    """MTH and PATH over leaf hashes (large subtrees' hashes computed once)."""

    def __init__(self, lines):
        self.leaves = [leaf(d) for d in lines]
        self.memo = {}

    def mth(self, lo, hi):
        if hi - lo == 0:
            return hashlib.sha256(b"").digest()
        if hi - lo == 1:
            return self.leaves[lo]
        key = (lo, hi)
        if key in self.memo:
            return self.memo[key]
        k = split(hi - lo)
        h = node(self.mth(lo, lo + k), self.mth(lo + k, hi))
        if hi - lo >= 64:  # kept for the large subtrees only: memory stays small
            self.memo[key] = h
        return h

    def path(self, m, lo, hi):
        if hi - lo == 1:
            return []
        k = split(hi - lo)
        if m < lo + k:
            return self.path(m, lo, lo + k) + [self.mth(lo + k, hi)]
        return self.path(m, lo + k, hi) + [self.mth(lo, lo + k)]


def verify(line, index, size, path, root):
    """RFC 9162 2.1.3.2, the audit path check, written separately from PATH above."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf(line)
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def hexh(h):
    return "sha256:" + h.hex()


def unhex(s):
    assert s.startswith("sha256:"), s
    return bytes.fromhex(s[7:])


def sealed_lines(run_dir, upper):
    with open(os.path.join(run_dir, "events.jsonl"), "rb") as f:
        lines = f.read().splitlines(keepends=True)
    out = []
    for ln in lines:
        seq = json.loads(ln)["seq"]
        if seq <= upper:
            out.append((seq, ln))
    return out


def proof_of(run_dir, seq):
    with open(os.path.join(run_dir, "proofs", str(seq))) as f:
        return json.load(f)


def check_run(run_dir, sample, salts_file=None):
    with open(os.path.join(run_dir, "seal.json")) as f:
        seal = json.load(f)
    rows = sealed_lines(run_dir, seal["upper_seq"])
    salts = {}
    if seal.get("leaves") == "salted":
        if salts_file:
            for ln in open(salts_file):
                seq, h = ln.split()
                salts[int(seq)] = bytes.fromhex(h)
        else:
            salts = {seq: bytes.fromhex(proof_of(run_dir, seq)["salt"]) for seq, _ in rows}
    elif "salt" in (proof_of(run_dir, rows[0][0]) if rows else {}):
        return len(rows), 0, ["a plain seal's proof carries a salt"], False
    rows = [(seq, salts.get(seq, b"") + ln) for seq, ln in rows]
    tree = Tree([ln for _, ln in rows])
    n = len(rows)
    errors = []
    if seal["tree_size"] != n:
        errors.append("tree_size %d, %d sealed lines" % (seal["tree_size"], n))
    want = hexh(tree.mth(0, n))
    if seal["root"] != want:
        errors.append("root %s, RFC 6962 says %s" % (seal["root"], want))
    idx = list(range(n))
    if sample and n > sample:
        rnd = random.Random(n)
        edges = {0, n - 1, 255, 256, 257, n // 2}
        idx = sorted(set(rnd.sample(idx, sample)) | {i for i in edges if 0 <= i < n})
    for i in idx:
        seq, ln = rows[i]
        proof = proof_of(run_dir, seq)
        if seq in salts and proof.get("salt") != salts[seq].hex():
            errors.append("proofs/%d: salt %r, the store keeps %s" % (seq, proof.get("salt"), salts[seq].hex()))
        want_path = [hexh(h) for h in tree.path(i, 0, n)]
        got = (proof["seq"], proof["leaf_index"], proof["tree_size"], proof["root"], proof["path"])
        if got != (seq, i, n, want, want_path):
            errors.append("proofs/%d: %r, RFC 6962 says %r" % (seq, got, (seq, i, n, want, want_path)))
        elif not verify(ln, i, n, [unhex(p) for p in proof["path"]], unhex(proof["root"])):
            errors.append("proofs/%d does not verify" % seq)
        # The same proof must not hold for another line, nor at another index.
        other = rows[(i + 1) % n][1] if n > 1 else ln.replace(b'"seq"', b'"seq" ')
        if verify(other, i, n, [unhex(p) for p in proof["path"]], unhex(proof["root"])):
            errors.append("proofs/%d also verifies another line" % seq)
        if n > 1 and verify(ln, (i + 1) % n, n, [unhex(p) for p in proof["path"]], unhex(proof["root"])):
            errors.append("proofs/%d also verifies at another index" % seq)
    return n, len(idx), errors, bool(salts)


def main():
    args = sys.argv[1:]
    if args[:1] == ["root"]:
        with open(args[1], "rb") as f:
            lines = f.read().splitlines(keepends=True)
        print(hexh(Tree(lines).mth(0, len(lines))))
        return 0
    sample = 0
    salts_file = None
    if args[:2] and args[1:2] and args[0] == "check" and "--sample" in args:
        i = args.index("--sample")
        sample = int(args[i + 1])
        del args[i:i + 2]
    if args[:1] == ["check"] and "--salts" in args:
        i = args.index("--salts")
        salts_file = args[i + 1]
        del args[i:i + 2]
    bad = 0
    for run_dir in args[1:]:
        n, proofs, errors, salted = check_run(run_dir, sample, salts_file)
        for e in errors:
            print("%s: %s" % (run_dir, e))
        bad += bool(errors)
        if not errors:
            print("%s: %d %s leaves, root and %d proofs agree with RFC 6962" % (run_dir, n, "salted" if salted else "plain", proofs))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
