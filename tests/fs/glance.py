#!/usr/bin/env python3
"""glance.py — the reference for glance.bats: stats.json, the elements timeline.svg draws and
the spans otel.json holds, computed from a run's events.jsonl lines by DESIGN's rules
("Finding and understanding runs"), independently of runfs's C code; and the checks that
compare runfs's files with them.

  glance.py runs DIR                       write the test runs' JSONL files into DIR
  glance.py big FILE N                     a run of N model calls, each with a tool call answered
  glance.py stats EVENTS SEAL [--ids T R]  print the reference stats.json of run R (SEAL: - for none)
  glance.py stats EVENTS SEALS --thread [--runs A,B]  of a thread (SEALS: {run: seal.json})
  glance.py same-stats REF ACTUAL          exit 1 (saying where) unless the documents are equal
  glance.py thread-sum THREAD RUN...       thread stats.json == the sum of its runs' stats.json
  glance.py svg EVENTS SVG                 timeline.svg draws exactly the reference's elements
                                           (past MAX_ELEMENTS: an overview linking its windows)
  glance.py windows EVENTS DIR COUNT       DIR/1.svg..COUNT.svg hold every element, each at most
                                           MAX_ELEMENTS, in windows of consecutive time
  glance.py otel-parts EVENTS SERVICE P... the decoded parts are one run's spans, split in limits
  glance.py png PNG                        the PNG is not blank
  glance.py otel EVENTS DECODED            otel.json (decoded by OpenTelemetry's JS) == reference
"""
import base64
import datetime
import json
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

MAX_ELEMENTS = 2000
USAGE = ("input_tokens", "output_tokens", "total_tokens")


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def us(created_at):
    t = datetime.datetime.fromisoformat(created_at)
    return (t - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(microseconds=1)


def count(v):
    """DeerFlow's rule: a count is a non-negative int that is not a boolean."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def obj(v):
    return v if isinstance(v, dict) else {}


def usage_of(u):
    u = obj(u)
    return [u[k] if count(u.get(k)) else None for k in USAGE]


def calls_of(e):
    """The tool calls of an llm.ai.response: (id or None, name or "")."""
    out = []
    tc = obj(e["content"]).get("tool_calls")
    for c in tc if isinstance(tc, list) else []:
        c = obj(c)
        out.append((c["id"] if isinstance(c.get("id"), str) else None,
                    c["name"] if isinstance(c.get("name"), str) else ""))
    return out


def task_id(e):
    t = obj(e["metadata"]).get("task_id")
    return t if isinstance(t, str) else ""


def run_stats(events, seal=None):
    """stats.json of one run's events (seq order); seal: its seal.json document or None."""
    cats, types, models, by_name, mw, tasks = {}, {}, {}, {}, {}, {}
    inc = lambda d, k, n=1: d.__setitem__(k, d.get(k, 0) + n)
    mc = {"count": 0, "lat_total": 0, "lat_max": 0, "usage": [0, 0, 0]}
    sub_usage = [0, 0, 0]
    pending, tc = [], {"count": 0, "results": 0, "errors": 0}
    errors = {"run.error": 0, "llm.error": 0}
    terminal, status = False, None
    for e in events:
        inc(cats, e["category"])
        inc(types, e["event_type"])
        t, c, m = e["event_type"], obj(e["content"]), obj(e["metadata"])
        if t == "llm.ai.response":
            mc["count"] += 1
            if count(m.get("latency_ms")):
                mc["lat_total"] += m["latency_ms"]
                mc["lat_max"] = max(mc["lat_max"], m["latency_ms"])
            for i, v in enumerate(usage_of(m.get("usage"))):
                mc["usage"][i] += v or 0
            name = obj(c.get("response_metadata")).get("model_name")
            if isinstance(name, str):
                inc(models, name)
            for cid, name in calls_of(e):
                tc["count"] += 1
                by_name.setdefault(name, {"calls": 0, "results": 0, "errors": 0})["calls"] += 1
                pending.append((cid, name))
        elif t == "llm.tool.result":
            cid = c.get("tool_call_id")
            hit = next((i for i, p in enumerate(pending) if isinstance(cid, str) and p[0] == cid), None)
            if hit is not None:
                name = pending.pop(hit)[1]
                err = int(c.get("status") == "error")
                tc["results"] += 1
                tc["errors"] += err
                by_name[name]["results"] += 1
                by_name[name]["errors"] += err
        elif t in ("subagent.start", "subagent.end"):
            k = tasks.setdefault(task_id(e), {"ended": False, "status": None})
            if t == "subagent.end" and not k["ended"]:
                k["ended"] = True
                k["status"] = c.get("status") if isinstance(c.get("status"), str) else None
                for i, v in enumerate(usage_of(c.get("usage"))):
                    sub_usage[i] += v or 0
        elif t == "run.terminal" and not terminal:
            terminal = True
            status = c.get("status") if isinstance(c.get("status"), str) else None
        elif t in errors:
            errors[t] += 1
        elif t.startswith("middleware:"):
            inc(mw, t[len("middleware:"):])
    by_status = {}
    for k in tasks.values():
        inc(by_status, k["status"] if k["status"] is not None else ("null" if k["ended"] else "unfinished"))
    state = uncovered = None
    if seal is not None:
        state = seal["state"]
        uncovered = sum(1 for e in events if e["seq"] > seal["upper_seq"])
    first, last = (events[0]["created_at"], events[-1]["created_at"]) if events else (None, None)
    return {
        "thread_id": events[0]["thread_id"] if events else None,
        "run_id": events[0]["run_id"] if events else None,
        "events": len(events), "first_at": first, "last_at": last,
        "duration_ms": int((us(last) - us(first)) / 1000) if events else None,
        "status": status, "seal": state, "categories": cats, "event_types": types,
        "model_calls": {"count": mc["count"], "latency_ms": {"total": mc["lat_total"], "max": mc["lat_max"]},
                        "usage": dict(zip(USAGE, mc["usage"])), "models": models},
        "tool_calls": dict(tc, by_name=by_name, unanswered=[p[0] for p in pending]),
        "subagents": {"count": len(tasks), "by_status": by_status, "usage": dict(zip(USAGE, sub_usage))},
        "errors": errors, "middleware": mw,
        "gaps": {"no_terminal": not terminal, "unanswered_tool_calls": len(pending),
                 "uncovered_by_seal": uncovered},
    }


def add_counts(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = add_counts(out.get(k, {}), v) if isinstance(v, dict) else out.get(k, 0) + v
    return out


def thread_stats(runs):
    """The thread's stats.json from its runs' (in the order of their first event)."""
    t = {"thread_id": next((r["thread_id"] for r in runs if r["events"]), None), "runs": len(runs), "events": 0, "statuses": {}}
    for k in ("categories", "event_types", "middleware", "errors"):
        t[k] = {}
    mc = {"count": 0, "latency_ms": {"total": 0, "max": 0}, "usage": dict.fromkeys(USAGE, 0), "models": {}}
    tc = {"count": 0, "results": 0, "errors": 0, "by_name": {}, "unanswered": []}
    sa = {"count": 0, "by_status": {}, "usage": dict.fromkeys(USAGE, 0)}
    gaps = {"no_terminal": 0, "unanswered_tool_calls": 0, "uncovered_by_seal": None}
    for r in runs:
        t["events"] += r["events"]
        st = r["status"] if r["status"] is not None else "null"
        t["statuses"][st] = t["statuses"].get(st, 0) + 1
        for k in ("categories", "event_types", "middleware", "errors"):
            t[k] = add_counts(t[k], r[k])
        m = r["model_calls"]
        mc["count"] += m["count"]
        mc["latency_ms"]["total"] += m["latency_ms"]["total"]
        mc["latency_ms"]["max"] = max(mc["latency_ms"]["max"], m["latency_ms"]["max"])
        mc["usage"] = add_counts(mc["usage"], m["usage"])
        mc["models"] = add_counts(mc["models"], m["models"])
        for k in ("count", "results", "errors"):
            tc[k] += r["tool_calls"][k]
        tc["by_name"] = add_counts(tc["by_name"], r["tool_calls"]["by_name"])
        tc["unanswered"] += r["tool_calls"]["unanswered"]
        sa["count"] += r["subagents"]["count"]
        sa["by_status"] = add_counts(sa["by_status"], r["subagents"]["by_status"])
        sa["usage"] = add_counts(sa["usage"], r["subagents"]["usage"])
        gaps["no_terminal"] += int(r["gaps"]["no_terminal"])
        gaps["unanswered_tool_calls"] += r["gaps"]["unanswered_tool_calls"]
        if r["gaps"]["uncovered_by_seal"] is not None:
            gaps["uncovered_by_seal"] = (gaps["uncovered_by_seal"] or 0) + r["gaps"]["uncovered_by_seal"]
    firsts = [r["first_at"] for r in runs if r["first_at"]]
    lasts = [r["last_at"] for r in runs if r["last_at"]]
    t["first_at"], t["last_at"] = (min(firsts), max(lasts)) if firsts else (None, None)
    t["duration_ms"] = int((us(t["last_at"]) - us(t["first_at"])) / 1000) if firsts else None
    t.update(model_calls=mc, tool_calls=tc, subagents=sa, gaps=gaps)
    return t


def stats_cmd(args):
    events = load(args[0])
    if "--thread" in args:
        order = []
        for e in events:
            if e["run_id"] not in order:
                order.append(e["run_id"])
        seals = json.loads(args[1]) if len(args) > 2 else {}
        # Runs made by mkdir have no rows: the listing (--runs a,b) names them.
        listed = args[args.index("--runs") + 1].split(",") if "--runs" in args else []
        order += [r for r in listed if r not in order]
        doc = thread_stats([run_stats([e for e in events if e["run_id"] == r], seals.get(r)) for r in order])
        doc["thread_id"] = events[0]["thread_id"]
    else:
        seal = json.load(open(args[1])) if len(args) > 1 and args[1] != "-" else None
        doc = run_stats(events, seal)
        if "--ids" in args:  # a run with no rows names itself
            i = args.index("--ids")
            doc["thread_id"], doc["run_id"] = args[i + 1], args[i + 2]
    print(json.dumps(doc, ensure_ascii=False))


def diff(a, b, at="$"):
    if type(a) != type(b):
        return f"{at}: {a!r} != {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{at}.{k}: present in only one ({a.get(k)!r} / {b.get(k)!r})"
            d = diff(a[k], b[k], f"{at}.{k}")
            if d:
                return d
        return None
    return None if a == b else f"{at}: {a!r} != {b!r}"


def same_stats(args):
    ref, got = json.load(open(args[0])), json.load(open(args[1]))
    if len(args) > 2:  # a thread's unanswered ids: only the run order is the thread's
        pass
    d = diff(ref, got)
    if d:
        sys.exit(f"stats.json differs from the reference at {d}")


def thread_sum(args):
    thread = json.load(open(args[0]))
    runs = [json.load(open(p)) for p in args[1:]]
    want = thread_stats(runs)
    d = diff(want, thread)
    if d:
        sys.exit(f"thread stats.json is not the sum of its runs' at {d}")


# ---- timeline.svg ----

def elements(events):
    """The seqs of the elements timeline.svg draws, in order, and how many it leaves out."""
    seqs, tasks = [], set()
    for e in events:
        t = e["event_type"]
        if t == "llm.ai.response":
            seqs.append(e["seq"])
            seqs.extend(e["seq"] for _ in calls_of(e))
        elif t in ("subagent.start", "subagent.end"):
            if task_id(e) not in tasks:
                tasks.add(task_id(e))
                seqs.append(e["seq"])
        elif t in ("run.terminal", "run.error", "llm.error") or t.startswith("middleware:"):
            seqs.append(e["seq"])
    return seqs


def drawn(path, links=False):
    """The data-seq of the elements an SVG file draws, each checked to have its <title>."""
    raw = open(path, "rb").read()
    text = raw.decode("utf-8")
    if re.search(r"<script|\son[a-z]+=|url\(", text) or (not links and re.search(r"href=|xlink:", text)):
        sys.exit(f"{path} is not self-contained: it holds a script or an external reference")
    root = ET.fromstring(raw)
    ns = "{http://www.w3.org/2000/svg}"
    if root.tag != ns + "svg":
        sys.exit(f"the root element is {root.tag}, not svg")
    got = []
    for el in root.iter():
        if "data-seq" in el.attrib:
            got.append(int(el.attrib["data-seq"]))
            title = el.find(ns + "title")
            if title is None or f"seq {el.attrib['data-seq']}" not in (title.text or ""):
                sys.exit(f"element of seq {el.attrib['data-seq']} has no <title> naming its seq")
    return got, text


def svg_cmd(args):
    want = elements(load(args[0]))
    if len(want) <= MAX_ELEMENTS:
        got, _ = drawn(args[1])
        if got != want:
            sys.exit(f"data-seq drawn {got[:20]}... ({len(got)}) != the reference's {want[:20]}... ({len(want)})")
        print(len(got), 0)
        return
    # An overview: no element of its own, a slice per window, each a relative link to it.
    got, text = drawn(args[1], links=True)
    windows = -(-len(want) // MAX_ELEMENTS)
    hrefs = re.findall(r'\shref="([^"]*)"', text)
    if got or sorted(set(hrefs)) != sorted(f"timeline/{n}.svg" for n in range(1, windows + 1)) or \
            re.findall(r'xlink:href="([^"]*)"', text) != hrefs:
        sys.exit(f"the overview should link timeline/1.svg..{windows}.svg and draw no element: {hrefs[:5]}, {len(got)}")
    print("overview", windows)


def windows_cmd(args):
    events = load(args[0])
    want, at = elements(events), {e["seq"]: e for e in events}
    n = int(args[2])
    if n != -(-len(want) // MAX_ELEMENTS):
        sys.exit(f"timeline/count says {n} windows for {len(want)} elements")
    got, last = [], None
    for w in range(1, n + 1):
        seqs, text = drawn(f"{args[1]}/{w}.svg")
        if len(seqs) > MAX_ELEMENTS or not seqs:
            sys.exit(f"window {w} holds {len(seqs)} elements")
        if f"window {w} of {n}" not in text:
            sys.exit(f"window {w} does not say which window of {n} it is")
        got += seqs
    if sorted(got) != sorted(want):
        sys.exit(f"the windows hold {len(got)} elements, the run {len(want)}: not the same ones")
    print(n, len(got))


def png_cmd(args):
    data = open(args[0], "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("not a PNG")
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = len(raw) // h
    rows = [raw[y * stride + 1:(y + 1) * stride] for y in range(h)]
    distinct = {r[i:i + 4] for r in rows[::7] for i in range(0, len(r) - 4, 12)}
    # A blank page is one colour; a drawn timeline has text, bars and grid lines.
    if len(distinct) < 8:
        sys.exit(f"the PNG ({w}x{h}) looks blank: {len(distinct)} distinct pixel values sampled")
    print(w, h, len(distinct))


# ---- otel.json ----

def ns(t_us):
    return str(t_us * 1000)


def otel_spans(events):
    """The reference spans: (key, name, parent is root, start ns, end ns, attributes, status code)."""
    first, last = us(events[0]["created_at"]), us(events[-1]["created_at"])
    spans, pending, tasks = [], [], {}
    usage_in = usage_out = 0
    terminal, status = False, None
    for e in events:
        t, c, m, at = e["event_type"], obj(e["content"]), obj(e["metadata"]), us(e["created_at"])
        if t == "llm.ai.response":
            lat = m.get("latency_ms")
            u = usage_of(m.get("usage"))
            usage_in += u[0] or 0
            usage_out += u[1] or 0
            attrs = {"gen_ai.operation.name": "chat", "runfs.seq": e["seq"]}
            name = obj(c.get("response_metadata")).get("model_name")
            if isinstance(name, str):
                attrs["gen_ai.response.model"] = name
            if u[0] is not None:
                attrs["gen_ai.usage.input_tokens"] = u[0]
            if u[1] is not None:
                attrs["gen_ai.usage.output_tokens"] = u[1]
            spans.append((("chat", e["seq"]), "chat", ns(at - lat * 1000 if count(lat) else at), ns(at), attrs, 0))
            for i, (cid, name) in enumerate(calls_of(e)):
                pending.append((cid, name, e["seq"], i, at))
        elif t == "llm.tool.result":
            cid = c.get("tool_call_id")
            hit = next((i for i, p in enumerate(pending) if isinstance(cid, str) and p[0] == cid), None)
            if hit is not None:
                cid, name, seq, i, start = pending.pop(hit)
                attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                         "gen_ai.tool.call.id": cid, "runfs.seq": seq, "runfs.result_seq": e["seq"]}
                spans.append((("tool", seq, cid, name), "execute_tool " + name, ns(start), ns(at), attrs,
                              2 if c.get("status") == "error" else 0))
        elif t in ("subagent.start", "subagent.end"):
            k = tasks.setdefault(task_id(e), {"start": None, "ended": False})
            if t == "subagent.start" and k["start"] is None and not k["ended"]:
                k["start"] = (e["seq"], at)
            elif t == "subagent.end" and not k["ended"]:
                k["ended"] = True
                seq, start = k["start"] or (e["seq"], at)
                st = c.get("status") if isinstance(c.get("status"), str) else None
                attrs = {"gen_ai.operation.name": "invoke_agent", "runfs.task_id": task_id(e),
                         "runfs.seq": seq, "runfs.end_seq": e["seq"]}
                if st is not None:
                    attrs["runfs.task_status"] = st
                u = usage_of(c.get("usage"))
                if u[0] is not None:
                    attrs["gen_ai.usage.input_tokens"] = u[0]
                if u[1] is not None:
                    attrs["gen_ai.usage.output_tokens"] = u[1]
                if isinstance(c.get("model_name"), str):
                    attrs["gen_ai.response.model"] = c["model_name"]
                code = 1 if st == "completed" else 2 if st in ("failed", "timed_out") else 0
                spans.append((("task", seq), "invoke_agent", ns(start), ns(at), attrs, code))
        elif t == "run.terminal" and not terminal:
            terminal = True
            status = c.get("status") if isinstance(c.get("status"), str) else None
    for cid, name, seq, i, start in pending:
        attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                 "runfs.seq": seq, "runfs.unanswered": True}
        if cid is not None:
            attrs["gen_ai.tool.call.id"] = cid
        spans.append((("tool", seq, cid, name), "execute_tool " + name, ns(start), ns(last), attrs, 0))
    for tid, k in tasks.items():
        if k["start"] and not k["ended"]:
            attrs = {"gen_ai.operation.name": "invoke_agent", "runfs.task_id": tid,
                     "runfs.seq": k["start"][0], "runfs.unfinished": True}
            spans.append((("task", k["start"][0]), "invoke_agent", ns(k["start"][1]), ns(last), attrs, 0))
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": events[0]["thread_id"],
             "runfs.thread_id": events[0]["thread_id"], "runfs.run_id": events[0]["run_id"],
             "runfs.seq": events[0]["seq"], "runfs.events": len(events),
             "gen_ai.usage.input_tokens": usage_in, "gen_ai.usage.output_tokens": usage_out}
    if status is not None:
        attrs["runfs.status"] = status
    if not terminal:
        attrs["runfs.no_terminal"] = True
    spans.append((("root",), "invoke_agent", ns(first), ns(last), attrs,
                  0 if not terminal else 1 if status == "success" else 2))
    return spans


def otel_span_events(events):
    """Span key -> [(event name, seq)]: each error and middleware event on the newest tool call
    (with an id) or subagent task still open when it came, else on the root span."""
    placed, pending, tasks = {}, [], {}
    for e in events:
        t, c = e["event_type"], obj(e["content"])
        if t == "llm.ai.response":
            pending += [(cid, name, e["seq"]) for cid, name in calls_of(e)]
        elif t == "llm.tool.result":
            cid = c.get("tool_call_id")
            hit = next((i for i, p in enumerate(pending) if isinstance(cid, str) and p[0] == cid), None)
            if hit is not None:
                pending.pop(hit)
        elif t in ("subagent.start", "subagent.end"):
            k = tasks.setdefault(task_id(e), {"start": None, "ended": False})
            if t == "subagent.start" and k["start"] is None and not k["ended"]:
                k["start"] = e["seq"]
            elif t == "subagent.end":
                k["ended"] = True
        elif t in ("llm.error", "run.error") or t.startswith("middleware:"):
            name = "exception" if t.endswith(".error") else t[len("middleware:"):]
            call = next((p for p in reversed(pending) if p[0] is not None), None)
            task = max((k["start"] for k in tasks.values() if k["start"] is not None and not k["ended"]), default=None)
            if task is not None and (call is None or task > call[2]):
                key = ("task", task)
            elif call is not None:
                key = ("tool", call[2], call[0], call[1])
            else:
                key = ("root",)
            placed.setdefault(key, []).append((name, e["seq"]))
    return placed


def otel_parts_cmd(args):
    """Each decoded part: a complete request of the run's one trace within the limits; the
    parts together: every span of the run once, an exception per error event, the service."""
    events, service, paths = load(args[0]), args[1], args[2:]
    spans, names = [], set()
    for p in paths:
        doc = json.load(open(p))
        part = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
        res = {x["key"]: attr_value(x["value"]) for rs in doc["resourceSpans"] for x in rs["resource"]["attributes"]}
        if res.get("service.name") != service:
            sys.exit(f"{p}: service.name {res.get('service.name')!r}, want {service!r}")
        if len(part) > 10000 or not part:
            sys.exit(f"{p}: {len(part)} spans")
        spans += part
    traces = {s["traceId"] for s in spans}
    ids = [s["spanId"] for s in spans]
    if len(traces) != 1 or len(set(ids)) != len(ids):
        sys.exit(f"the parts hold {len(traces)} trace ids and {len(ids) - len(set(ids))} repeated spans")
    want = len(otel_spans(events))
    if len(spans) != want:
        sys.exit(f"the parts hold {len(spans)} spans, the run {want}")
    exc = [e for s in spans for e in s.get("events", []) if e["name"] == "exception"]
    errors = [e for e in events if e["event_type"] in ("llm.error", "run.error")]
    msgs = sorted(next(x["value"]["stringValue"] for x in e["attributes"] if x["key"] == "exception.message") for e in exc)
    if msgs != sorted(e["content"] if isinstance(e["content"], str) else json.dumps(e["content"]) for e in errors):
        sys.exit(f"{len(exc)} exception events for {len(errors)} errors, or their messages differ")
    mws = sorted(e["name"] for s in spans for e in s.get("events", []) if e["name"] != "exception")
    if mws != sorted(e["event_type"][len("middleware:"):] for e in events if e["event_type"].startswith("middleware:")):
        sys.exit(f"middleware span events {mws[:5]} are not the run's middleware events")
    print(len(paths), len(spans), len(exc))


def attr_value(v):
    for k in ("stringValue", "boolValue"):
        if k in v:
            return v[k]
    return int(v["intValue"])


def otel_cmd(args):
    events = load(args[0])
    doc = json.load(open(args[1]))
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    ids = [base64.b64decode(s["spanId"]) for s in spans]
    traces = {base64.b64decode(s["traceId"]) for s in spans}
    if len(traces) != 1 or len(next(iter(traces))) != 16 or next(iter(traces)) == bytes(16):
        sys.exit(f"spans should share one 16-byte non-zero trace id: {traces}")
    if len(set(ids)) != len(ids) or any(len(i) != 8 or i == bytes(8) for i in ids):
        sys.exit("span ids are not unique 8-byte non-zero ids")
    roots = [s for s in spans if not s.get("parentSpanId")]
    if len(roots) != 1:
        sys.exit(f"{len(roots)} root spans, want 1")
    root_id = roots[0]["spanId"]
    got = {}
    for s in spans:
        a = {x["key"]: attr_value(x["value"]) for x in s.get("attributes", [])}
        a.pop("runfs.usage.total_tokens", None)
        a.pop("runfs.latency_ms", None)
        a.pop("gen_ai.agent.name", None)
        if s.get("parentSpanId") and s["parentSpanId"] != root_id:
            sys.exit(f"span {s['name']} seq {a.get('runfs.seq')} is not a child of the root")
        seq = a.get("runfs.seq")
        if not s.get("parentSpanId"):
            key = ("root",)
        elif s["name"] == "chat":
            key = ("chat", seq)
        elif s["name"].startswith("execute_tool"):
            key = ("tool", seq, a.get("gen_ai.tool.call.id"), a.get("gen_ai.tool.name"))
        else:
            key = ("task", seq)
        got[key] = (s["name"], s["startTimeUnixNano"], s["endTimeUnixNano"], a, s.get("status", {}).get("code", 0))
    want = {k: (n, st, en, a, code) for k, n, st, en, a, code in otel_spans(events)}
    if len(got) != len(spans) or set(got) != set(want):
        sys.exit(f"spans {sorted(map(str, set(got) ^ set(want)))} are in only one of otel.json and the reference")
    for k in want:
        if got[k] != want[k]:
            sys.exit(f"span {k}: got {got[k]}, want {want[k]}")
    placed = otel_span_events(events)
    for k, s in zip(list(got), spans):
        evs = [(x["name"], int(next(a["value"]["intValue"] for a in x["attributes"] if a["key"] == "runfs.seq")))
               for x in s.get("events", [])]
        if evs != placed.get(k, []):
            sys.exit(f"span {k}: events {evs}, want {placed.get(k, [])}")
    text = open(args[1]).read()
    for e in events:
        body = obj(e["content"]).get("content")
        if isinstance(body, str) and len(body) > 8 and body in text:
            sys.exit(f"otel.json holds message text of seq {e['seq']}")
    print(len(spans))


# ---- the test runs ----

def line(t, content, metadata=None, at=None):
    d = {"event_type": t, "content": content, "metadata": metadata or {}}
    if at is not None:
        d["created_at"] = "2026-05-01T10:%02d:%02d.%06d+00:00" % (at // 60_000_000 % 60, at // 1_000_000 % 60, at % 1_000_000)
    return json.dumps(d, ensure_ascii=False)


def mw(name, action):
    return {"name": name, "hook": "after_model", "action": action, "changes": {}}


def ai(text, calls, usage, latency, at, model=None, idx=1):
    c = {"type": "ai", "content": text, "id": f"ai-{at}", "tool_calls": calls}
    if model:
        c["response_metadata"] = {"model_name": model}
    return line("llm.ai.response", c, {"caller": "lead_agent", "usage": usage, "latency_ms": latency,
                                       "llm_call_index": idx}, at)


def result(cid, text, at, status=None, name="t"):
    c = {"type": "tool", "content": text, "tool_call_id": cid, "name": name}
    if status:
        c["status"] = status
    return line("llm.tool.result", c, {}, at)


def runs_cmd(args):
    d = args[0]
    s = 1_000_000
    par = [
        line("run.start", {"chain": "lead_agent"}, {"caller": "lead_agent"}, 0),
        line("llm.human.input", {"type": "human", "content": "Find the three reports please", "id": "h1"},
             {"caller": "lead_agent"}, s // 2),
        ai("", [{"id": "call-a", "name": "web_search", "args": {"q": "a"}},
                {"id": "call-b", "name": "read_file", "args": {"path": "/x"}},
                {"id": "call-c", "name": "web_search", "args": {"q": "c"}}],
           {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}, 1200, 2 * s, "gpt-4o"),
        result("call-b", "contents of the file x", 3 * s),
        result("call-a", "search failed with a timeout", 4 * s, "error"),
        line("middleware:guardrail", mw("GuardrailMiddleware", "allow"), {"caller": "middleware:guardrail"},
             4 * s + 5000),
        ai("", [{"id": "call-d", "name": "bash", "args": {"cmd": "ls"}}],
           {"input_tokens": -5, "output_tokens": 7}, None, 5 * s, None, 2),
        result("call-zzz", "a result nobody asked for", 6 * s),
        result("call-c", "results for c", 7 * s),
        line("llm.error", "rate limited", {}, 8 * s),
        ai("All three found.", [], {"input_tokens": 1.5, "output_tokens": True, "total_tokens": 9}, 300,
           9 * s, "gpt-4o-mini", 3),
        ai("", [{"name": "no_id_tool", "args": {}}, {"id": "call-e", "args": {}}],
           {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}, 50, 10 * s, "gpt-4o", 4),
        line("run.terminal", {"status": "success"}, {"protocol_version": 1, "recovered": False}, 11 * s),
    ]
    tasks = [line("run.start", {"chain": "lead_agent"}, {"caller": "lead_agent"}, 20 * s)]
    at = 21 * s
    for tid, st, usage in [("t1", "completed", {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}),
                           ("t2", "failed", None), ("t3", "cancelled", None),
                           ("t4", "timed_out", {"input_tokens": 2, "output_tokens": 1, "total_tokens": -3}),
                           ("t5", None, None), ("t6", "completed", None)]:
        if tid != "t6":
            tasks.append(line("subagent.start", {"task_id": tid, "description": f"task {tid}"}, {"task_id": tid}, at))
        at += s
        if st:
            c = {"task_id": tid, "status": st}
            if usage:
                c["usage"] = usage
            if tid == "t1":
                c["model_name"] = "sub-model"
            tasks.append(line("subagent.end", c, {"task_id": tid}, at))
        at += s
    tasks += [
        line("run.error", "boom", {"error_type": "ValueError"}, at),
        line("middleware:loop_detection", mw("LoopDetectionMiddleware", "warn"), {}, at + 1000),
        line("middleware:guardrail", mw("GuardrailMiddleware", "allow"), {}, at + 2000),
        line("run.terminal", {"status": "error"}, {"protocol_version": 1, "recovered": False}, at + s),
    ]
    for name, lines in (("par", par), ("tasks", tasks)):
        # run.terminal is a singleton: its body goes to once/run.terminal, after the rest.
        term = json.loads(lines.pop())
        del term["event_type"]
        with open(f"{d}/{name}.jsonl", "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        with open(f"{d}/{name}.terminal", "w", encoding="utf-8") as f:
            f.write(json.dumps(term) + "\n")


def big_cmd(args):
    """A run of N model calls, each asking for a tool whose result follows: the text of a
    DeerFlow run's messages (a sentence from the model, a few hundred bytes of tool output)."""
    n = int(args[1])
    words = "the agent reads the quarterly ledger and compares revenue with the previous quarter "
    with open(args[0], "w") as f:
        f.write(line("run.start", {"chain": "lead_agent"}, {"caller": "lead_agent"}, 0) + "\n")
        for i in range(n):
            say = words[i % 40:] + words[:i % 40]
            f.write(ai(say, [{"id": f"c{i}", "name": "tool%d" % (i % 7), "args": {"path": f"/mnt/data/{i}.csv"}}],
                       {"input_tokens": i % 50, "output_tokens": 3, "total_tokens": i % 50 + 3}, i % 900,
                       10_000 * i + 5000) + "\n")
            f.write(result(f"c{i}", (say * 4)[:300], 10_000 * i + 9000, "error" if i % 13 == 0 else None) + "\n")


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    {"stats": stats_cmd, "same-stats": same_stats, "thread-sum": thread_sum, "svg": svg_cmd,
     "windows": windows_cmd, "otel-parts": otel_parts_cmd,
     "png": png_cmd, "otel": otel_cmd, "runs": runs_cmd, "big": big_cmd}[cmd](rest)
