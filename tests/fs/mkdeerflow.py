#!/usr/bin/env python3
"""mkdeerflow.py — write a DeerFlow-shaped SQLite database (DeerFlow's run_events table, rows
as DeerFlow's SQL store writes them), for the linearity test and the benchmarks.

    mkdeerflow.py DB THREAD EVENTS [RUN_LEN]

Adds one thread of EVENTS rows (the database is created when absent) in runs of RUN_LEN (default 10): run.start, a human message, a
guardrail, AI responses (one of them a subagent's), a tool result, run.terminal; every fifth
run regenerates the one before it, so the history has hidden runs to compute.
"""
import json
import sqlite3
import sys

SCHEMA = """
CREATE TABLE IF NOT EXISTS run_events (
  id INTEGER NOT NULL, thread_id VARCHAR(64) NOT NULL, run_id VARCHAR(64) NOT NULL,
  user_id VARCHAR(64), event_type VARCHAR(32) NOT NULL, category VARCHAR(16) NOT NULL,
  content TEXT NOT NULL, event_metadata JSON NOT NULL, seq INTEGER NOT NULL,
  created_at DATETIME NOT NULL, PRIMARY KEY (id),
  CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq));
CREATE INDEX IF NOT EXISTS ix_events_thread_cat_seq ON run_events (thread_id, category, seq);
CREATE INDEX IF NOT EXISTS ix_run_events_user_id ON run_events (user_id);
CREATE INDEX IF NOT EXISTS ix_events_run ON run_events (thread_id, run_id, seq);
"""

TEXT = ("the agent reads a ledger and compares quarterly revenue figures before writing a "
        "short summary for the user ")


def run_rows(run, n, prev):
    start_meta = {"caller": "lead_agent"}
    if prev and run % 5 == 0:
        start_meta["regenerate_from_run_id"] = prev
    rows = [("run.start", "trace", {"chain": "lead_agent"}, start_meta)]
    body = [
        ("llm.human.input", "message", {"type": "human", "content": TEXT, "id": f"h-{run}"},
         {"caller": "lead_agent"}),
        ("middleware:guardrail", "middleware", {"action": "allow"},
         {"caller": "middleware:guardrail"}),
        ("llm.ai.response", "message",
         {"type": "ai", "content": "", "id": f"ai-{run}-1",
          "tool_calls": [{"id": f"call-{run}", "name": "read_file", "args": {"path": "r.md"}}]},
         {"caller": "lead_agent", "usage": {"total_tokens": 150}, "latency_ms": 812,
          "llm_call_index": 1}),
        ("llm.tool.result", "message",
         {"type": "tool", "content": TEXT, "tool_call_id": f"call-{run}"}, {"caller": "lead_agent"}),
        ("llm.ai.response", "message",
         {"type": "ai", "content": TEXT, "id": f"ai-{run}-sub", "tool_calls": []},
         {"caller": "subagent:research", "usage": {"total_tokens": 90}, "latency_ms": 300,
          "llm_call_index": 2}),
        ("llm.ai.response", "message",
         {"type": "ai", "content": TEXT, "id": f"ai-{run}-2", "tool_calls": []},
         {"caller": "lead_agent", "usage": {"total_tokens": 200}, "latency_ms": 900,
          "llm_call_index": 3}),
    ]
    while len(rows) < n - 1:
        rows.append(body[(len(rows) - 1) % len(body)])
    rows.append(("run.terminal", "trace", {"status": "success"},
                 {"protocol_version": 1, "recovered": False}))
    return rows[:n]


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: mkdeerflow.py DB THREAD EVENTS [RUN_LEN]")
    path, thread, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
    run_len = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    base = db.execute("SELECT coalesce(max(id), 0) FROM run_events").fetchone()[0]

    def rows():
        seq, run, prev = 0, 0, None
        while seq < total:
            run += 1
            rid = f"run-{run}"
            for etype, cat, content, meta in run_rows(run, min(run_len, total - seq), prev):
                seq += 1
                meta = dict(meta, content_is_json=True, content_is_dict=True)
                secs = seq % 60
                yield (base + seq, thread, rid, etype, cat, json.dumps(content), json.dumps(meta), seq,
                       f"2026-03-04 05:{(seq // 60) % 60:02d}:{secs:02d}.{seq % 1000000:06d}")
            prev = rid

    with db:
        db.executemany("INSERT INTO run_events (id, thread_id, run_id, event_type, category, "
                       "content, event_metadata, seq, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
                       rows())
    db.close()


if __name__ == "__main__":
    main()
