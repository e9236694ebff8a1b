#!/usr/bin/env python3
"""report.py — the checks of report.bats, made from a run's events.jsonl and stats.json by
DESIGN's rules, independently of runfs's C code.

  report.py page HTML                       the page as served: CSP, no script, no handler,
                                            no fetch, links relative, anchors resolve
  report.py run EVENTS STATS DOM TITLE      the DOM Chromium made of a run's page holds the
                                            stats, every message text, a <details> per tool
                                            call, an anchor per seq shown
  report.py hostile DOM TITLE               nothing of the hostile content became markup
  report.py big EVENTS HTML                 first and last 1,000 entries, the gap between named
  report.py thread STATS DOM RUN...         a thread's page: its stats, each run linked
  report.py xmllint OUTPUT                  libxml2's HTML parser found no structural error
  report.py make-hostile FILE BEACON        a run whose content is markup meant to run (BEACON:
                                            a file:// it would fetch), and a line near the 1 MiB limit
"""
import html.parser
import json
import re
import sys

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.ids, self.hrefs, self.text = [], [], [], []
        self.rows, self.title, self._in, self._row = {}, "", [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.append(a["id"])
        if "href" in a:
            self.hrefs.append(a["href"])
        self._in.append(tag)
        if tag == "tr":
            self._row = []

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None and len(self._row) == 2:
            self.rows.setdefault(self._row[0].strip(), self._row[1].strip())
        while self._in and self._in.pop() != tag:
            pass

    def handle_data(self, data):
        if self._in and self._in[-1] == "title":
            self.title += data
        if self._in and self._in[-1] in ("th", "td") and self._row is not None:
            if self._in[-1] == "th":
                self._row.append(data)
            elif len(self._row) == 1:
                self._row.append(data)
            else:
                self._row[-1] += data
        self.text.append(data)


def parse(path):
    p = Page()
    p.feed(open(path, encoding="utf-8", errors="strict").read())
    p.all = "".join(p.text)
    return p


def load(path):
    return [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]


def flat(stats, prefix=""):
    """stats.json's members as the page's rows: an object's members one level down."""
    out = {}
    for k, v in stats.items():
        if isinstance(v, dict) and v and not prefix:
            out.update(flat(v, k + "."))
        elif isinstance(v, str):
            out[prefix + k] = v
        else:
            out[prefix + k] = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    return out


def page_cmd(args):
    raw = open(args[0], "rb").read().decode("utf-8")
    p = parse(args[0])
    metas = [a for t, a in p.tags if t == "meta" and a.get("http-equiv", "").lower() == "content-security-policy"]
    if len(metas) != 1 or metas[0].get("content") != CSP:
        sys.exit(f"the page's Content-Security-Policy is {metas}, want one saying {CSP!r}")
    first = next(i for i, (t, _) in enumerate(p.tags) if t == "meta" and _ is metas[0])
    if any(t not in ("html", "head", "meta") for t, _ in p.tags[:first]):
        sys.exit("the CSP comes after other elements")
    for t, a in p.tags:
        if t in ("script", "iframe", "object", "embed", "link", "base", "form", "svg"):
            sys.exit(f"the page holds a <{t}> element")
        if t == "meta" and a is not metas[0] and a.get("http-equiv"):
            sys.exit(f"the page holds a <meta http-equiv={a['http-equiv']!r}>")
        for k, v in a.items():
            if k.startswith("on"):
                sys.exit(f"<{t}> has a handler {k}")
            if k in ("href", "src") and re.match(r"\s*[a-zA-Z][a-zA-Z0-9+.-]*:", v or "") and \
                    not (t == "img" and k == "src" and v.startswith("data:image/svg+xml;base64,")):
                sys.exit(f"<{t} {k}={v[:60]!r}> names a scheme: only relative links and the data: timeline")
            if k == "style":
                sys.exit(f"<{t}> has a style attribute")
    styles = re.findall(r"<style>", raw)
    if len(styles) != 1 or raw.count("</style>") != 1:
        sys.exit(f"{len(styles)} <style> and {raw.count('</style>')} </style>, want one each")
    ids = set(p.ids)
    if len(ids) != len(p.ids):
        sys.exit("an id is given twice")
    dangling = [h for h in p.hrefs if h.startswith("#") and h[1:] not in ids]
    if dangling:
        sys.exit(f"anchors {dangling[:5]} resolve to no element")
    print(len(p.tags), len(ids))


def texts(v):
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        t = [x["text"] for x in v if isinstance(x, dict) and isinstance(x.get("text"), str)]
        return ["\n".join(t)] if t else []
    return []


def run_cmd(args):
    events, stats, p, title = load(args[0]), json.load(open(args[1])), parse(args[2]), args[3]
    if p.title != title:
        sys.exit(f"the page's title is {p.title!r}, want {title!r}")
    for k, v in flat(stats).items():
        if p.rows.get(k) != v:
            sys.exit(f"stats row {k}: the page shows {p.rows.get(k)!r}, stats.json says {v!r}")
    calls, results, answered = 0, 0, set()
    ids = {}
    for e in events:
        c = e["content"]
        if e["event_type"] in ("llm.human.input", "llm.ai.response", "llm.tool.result"):
            for t in texts(c.get("content") if isinstance(c, dict) else c):
                if t and t not in p.all:
                    sys.exit(f"the text of seq {e['seq']} ({t[:40]!r}) is not on the page")
        if e["event_type"] == "llm.ai.response":
            for call in c.get("tool_calls") or []:
                calls += 1
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    ids.setdefault(call["id"], []).append(e["seq"])
        if e["event_type"] == "llm.tool.result":
            cid = c.get("tool_call_id")
            if ids.get(cid):
                ids[cid].pop(0)
            else:
                results += 1  # nobody asked: shown on its own
    details = sum(1 for t, _ in p.tags if t == "details")
    if details != calls + results:
        sys.exit(f"{details} <details>, want one per tool call ({calls}) and unasked result ({results})")
    want = {f"s{e['seq']}" for e in events}
    if not want <= set(p.ids):
        sys.exit(f"seqs {sorted(want - set(p.ids))[:5]} have no anchor")
    print(len(events), details)


def hostile_cmd(args):
    p, title = parse(args[0]), args[1]
    if p.title != title:
        sys.exit(f"the title is {p.title!r}, want {title!r}: a script ran")
    for t, a in p.tags:
        if t in ("script", "iframe", "object", "embed", "svg", "form", "base", "link") or \
                (t == "img" and not a.get("src", "").startswith("data:image/svg+xml;base64,")):
            sys.exit(f"the DOM holds a <{t}> made of event content")
        if any(k.startswith("on") for k in a) or any(str(v).strip().lower().startswith("javascript:") for v in a.values()):
            sys.exit(f"<{t}> carries a handler or a javascript: link: {a}")
    for needle in ("<script>", "<img src=x onerror", "javascript:alert", "<svg onload", "</style>", "<meta http-equiv"):
        if needle not in p.all:
            sys.exit(f"{needle!r} does not show as text")
    print("ok")


def big_cmd(args):
    events, raw = load(args[0]), open(args[1], encoding="utf-8").read()
    anchors = [int(x) for x in re.findall(r'<(?:div|details) class="e[^"]*" id="s(\d+)"', raw)]
    m = re.search(r'<p class="gap" id="gap">(\d+) entries, seq (\d+) to (\d+), are not shown here: read them in '
                  r'<a href="events.jsonl">events.jsonl</a> or from <a href="since/(\d+)">', raw)
    if not m:
        sys.exit("the page does not say what it leaves out and where to read it")
    n, first, last, since = map(int, m.groups())
    entries = len(re.findall(r'<(?:div|details) class="e[ "]', raw))
    if entries != 2000:
        sys.exit(f"{entries} entries shown, want 2000")
    if since != first - 1 or not anchors or anchors[999] >= first or anchors[1000] <= last:
        sys.exit(f"the gap ({first}..{last}, since/{since}) is not between the first and last thousand")
    # Every event is an entry (a result with its call): shown plus left out is the run.
    total = len(events)
    if entries + n != total:
        sys.exit(f"{entries} shown + {n} left out != {total} entries")
    print(entries, n)


def thread_cmd(args):
    stats, p, runs = json.load(open(args[0])), parse(args[1]), args[2:]
    for k, v in flat(stats).items():
        if p.rows.get(k) != v:
            sys.exit(f"stats row {k}: the page shows {p.rows.get(k)!r}, stats.json says {v!r}")
    for r in runs:
        if f"runs/{r}/report.html" not in p.hrefs:
            sys.exit(f"run {r} is not linked")
    print(len(runs))


def xmllint_cmd(args):
    """libxml2's parser is HTML 4's: HTML5's <details> and <summary> are unknown tags to it,
    which is no structural error; anything else it says is."""
    bad = [l for l in open(args[0], encoding="utf-8", errors="replace")
           if "error" in l and not re.search(r"Tag (details|summary) invalid", l)]
    if bad:
        sys.exit("xmllint --html: " + "".join(bad[:5]))
    print("ok")


def make_hostile_cmd(args):
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from glance import ai, line, result
    beacon = "file://" + args[1]
    js = f"document.title='pwned';fetch('{beacon}')"
    bad = [f"<script>{js}</script>", f"<img src=x onerror=\"{js}\">", "<a href=\"javascript:alert(1)\">x</a>",
           f"<svg onload=\"{js}\"><circle/></svg>", f"</style></head><body><script>{js}</script>",
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src *; script-src * 'unsafe-inline'\">",
           f"<meta http-equiv=\"refresh\" content=\"0;url={beacon}\">", f"<img src=\"{beacon}\">",
           "controls \x1b[31m\x07 and \ufffe \uffff nonchars", "]]><!-- -->&amp; &lt;"]
    text = " ".join(bad)
    s = 1_000_000
    lines = [
        line("run.start", {"chain": "lead_agent"}, {"caller": bad[1]}, 0),
        line("llm.human.input", {"type": "human", "content": text, "id": "h1"}, {"caller": "lead_agent"}, s),
        ai(text, [{"id": "c1", "name": bad[0], "args": {"q": bad[3]}}], {"total_tokens": 1}, 5, 2 * s),
        result("c1", text, 3 * s, "error"),
        ai([{"type": "text", "text": bad[4]}], [{"id": "c2", "name": "big", "args": {}}], {}, 5, 4 * s),
        result("c2", "x" * 1_000_000, 5 * s),
        line("subagent.start", {"task_id": "t1", "description": bad[2]}, {"task_id": "t1"}, 6 * s),
        line("llm.error", bad[5], {"task_id": "t1"}, 7 * s),
        line("middleware:guardrail", {"name": bad[6], "hook": bad[7], "action": "warn", "changes": {}}, {}, 8 * s),
        line("subagent.end", {"task_id": "t1", "status": "failed", "result": bad[8]}, {"task_id": "t1"}, 9 * s),
        line("run.error", bad[9], {"error_type": bad[0]}, 10 * s),
    ]
    with open(args[0], "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    {"page": page_cmd, "run": run_cmd, "hostile": hostile_cmd, "big": big_cmd, "thread": thread_cmd,
     "xmllint": xmllint_cmd, "make-hostile": make_hostile_cmd}[sys.argv[1]](sys.argv[2:])
