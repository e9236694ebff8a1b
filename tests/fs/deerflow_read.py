"""DeerFlow's database store reading a thread, as its code does (spec/semantics.md section 6,
db.py 46-65): rows by seq, metadata JSON-decoded, content decoded only when a marker says it
was JSON (undecodable text stays the raw string), created_at parsed and given back in UTC.
usage: deerflow_read.py SQLITE_FILE THREAD -> one JSON line per event, then the messages'
seqs; any row DeerFlow's code could not read raises."""
import json
import sqlite3
import sys
from datetime import datetime, timezone


def row_to_event(row):
    thread_id, run_id, event_type, category, content, meta_text, seq, created_at, user_id = row
    metadata = json.loads(meta_text) if meta_text else {}
    if not isinstance(metadata, dict):
        raise ValueError(f"seq {seq}: metadata is not an object")
    if metadata.get("content_is_json") or metadata.get("content_is_dict"):
        try:
            content = json.loads(content)
        except (TypeError, ValueError):
            pass
    at = datetime.fromisoformat(created_at)
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return {"thread_id": thread_id, "run_id": run_id, "event_type": event_type,
            "category": category, "content": content, "metadata": metadata, "seq": seq,
            "created_at": at.astimezone(timezone.utc).isoformat(), "user_id": user_id}


def main():
    db, thread = sys.argv[1], sys.argv[2]
    con = sqlite3.connect(db)
    cols = "thread_id, run_id, event_type, category, content, event_metadata, seq, created_at, user_id"
    events = [row_to_event(r) for r in con.execute(
        f"SELECT {cols} FROM run_events WHERE thread_id = ? ORDER BY seq ASC", (thread,))]
    seqs = [e["seq"] for e in events]
    if seqs != sorted(set(seqs)):
        raise ValueError(f"seqs not strictly increasing: {seqs}")
    for e in events:
        print(json.dumps(e, sort_keys=True))
    messages = [row_to_event(r)["seq"] for r in con.execute(
        f"SELECT {cols} FROM run_events WHERE thread_id = ? AND category = 'message' ORDER BY seq ASC",
        (thread,))]
    print(json.dumps({"messages": messages}))


main()
