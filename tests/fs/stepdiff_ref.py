#!/usr/bin/env python3
"""stepdiff_ref.py — diff.bats's independent reference for DESIGN "Comparing runs".

  gen N VARIANT [K]   print an agent-like run of N events (JSONL, for appending), changed by
                      VARIANT at event K: same, insert, delete, arg (another tool argument),
                      fail (a failed tool result), spread (K tool arguments changed, evenly)
  steps FILE          print the step lines of events.jsonl FILE, by DESIGN's rule
  changes DIFF        print a unified diff's removed then added lines, each sorted
"""
import json
import sys

MAX = 200
SHORT = {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}


def canon(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def text(v):
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        parts = [p["text"] for p in v if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if parts:
            return " ".join(parts)
    return canon(v)


def strip_ids(v):
    if isinstance(v, dict):
        return {k: strip_ids(x) for k, x in v.items() if not (k == "id" or k.endswith("_id"))}
    if isinstance(v, list):
        return [strip_ids(x) for x in v]
    return v


def cut(s):
    out = b""
    for ch in s:
        o = ord(ch)
        unit = (SHORT.get(o, "\\u%04x" % o) if o < 0x20 or o == 0x7F else ch).encode()
        if len(out) + len(unit) > MAX:
            break
        out += unit
    return out.decode()


def step(ev, calls):
    t, c = ev["event_type"], ev.get("content")
    obj = isinstance(c, dict)
    if t == "llm.ai.response":
        s = text(c.get("content") if obj else c)
        tcs = c.get("tool_calls") if obj else None
        for tc in tcs if isinstance(tcs, list) else []:
            d = tc if isinstance(tc, dict) else {}
            name = d["name"] if isinstance(d.get("name"), str) else ""
            s += " -> " + name + " " + (canon(d["args"]) if "args" in d else "null")
            if isinstance(d.get("id"), str):
                calls.setdefault(d["id"], []).append(name)
    elif t == "llm.tool.result":
        cid = c.get("tool_call_id") if obj else None
        if isinstance(cid, str) and calls.get(cid):
            name = calls[cid].pop(0)
        else:
            name = c["name"] if obj and isinstance(c.get("name"), str) else ""
        err = obj and c.get("status") == "error"
        s = name + (" error: " if err else " ok: ") + text(c.get("content") if obj else c)
    elif t == "llm.human.input":
        s = text(c.get("content") if obj else c)
    else:
        s = canon(strip_ids(c))
    return cut(t + " " + s)


def gen(n, variant, k):
    evs, i = [], 0
    # Model calls sit at 4m + 1: k of them, evenly apart.
    spread = {4 * (n // 4 * (m + 1) // (k + 1)) + 1 for m in range(k)} if variant == "spread" else set()
    while len(evs) < n:
        j = len(evs)
        kind = j % 4
        if kind == 0:
            ev = {"event_type": "llm.human.input",
                  "content": {"type": "human", "content": f"question {i}:\tsay ✓ «{i}»\nplease",
                              "id": f"h-{i}"}, "metadata": {"caller": "lead_agent"}}
        elif kind == 1:
            path = f"file-{i}.txt"
            if (variant == "arg" and j == k) or j in spread:
                path = f"other-{i}.txt"
            ev = {"event_type": "llm.ai.response",
                  "content": {"type": "ai", "content": f"reading {i}", "id": f"ai-{i}",
                              "tool_calls": [{"id": f"c{i}", "name": "read_file",
                                              "args": {"path": path}}]},
                  "metadata": {"caller": "lead_agent", "latency_ms": 5, "llm_call_index": i + 1,
                               "usage": {"input_tokens": 10 + i % 7, "output_tokens": 3,
                                         "total_tokens": 13 + i % 7}}}
        elif kind == 2:
            content = {"type": "tool", "content": f"contents of file {i} " + "é" * 120,
                       "tool_call_id": f"c{i}"}
            if variant == "fail" and j == k:
                content["status"] = "error"
                content["content"] = f"No such file: file-{i}.txt"
            ev = {"event_type": "llm.tool.result", "content": content, "metadata": {}}
        else:
            ev = {"event_type": "middleware:guardrail",
                  "content": {"name": "G", "hook": "before_model", "action": "allow", "request_id": f"rq-{i}",
                              "step": i, "changes": {"id": i, "kept": [{"call_id": "x", "n": i}]}},
                  "metadata": {"caller": "middleware:guardrail"}}
            i += 1
        evs.append(ev)
    if variant == "insert":
        evs.insert(k, {"event_type": "llm.error", "content": "rate limited, retrying",
                       "metadata": {}})
    elif variant == "delete":
        del evs[k]
    for ev in evs:
        print(canon(ev))


def changes(path):
    minus, plus = [], []
    in_hunk = False
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("-"):
            minus.append(line[1:])
        elif in_hunk and line.startswith("+"):
            plus.append(line[1:])
    for line in sorted(minus):
        print("-" + line)
    for line in sorted(plus):
        print("+" + line)


def main():
    cmd = sys.argv[1]
    if cmd == "gen":
        gen(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    elif cmd == "steps":
        calls = {}
        with open(sys.argv[2], encoding="utf-8") as f:
            for line in f:
                print(step(json.loads(line), calls))
    elif cmd == "changes":
        changes(sys.argv[2])


main()
