#!/usr/bin/env bats
# badinput.bats — hostile input through the mount. Each case checks the errno DESIGN names
# (from the syscall itself, via a small python3 helper), the words of the reason the one new
# line of .runfs/rejects.jsonl gives (with the same errno), that the store is byte-for-byte
# unchanged (store_snapshot before and after) and that the daemon still answers.
#
# Line data is written literally (single quotes: JSON escapes stay as they are), with tokens
# for what a shell word cannot hold: <NUL>, <xHH> (one byte), <rep:N:TEXT> (TEXT N times),
# <pad:N> ('A's there so that the line, without its newline, is N bytes).
load lib

# One store and one mount for the whole file: every case refuses input and proves the store
# unchanged by it, so none needs a fresh one (a case that mounts again unmounts in teardown).
setup_file() {
  runfs_setup || return 1
  export WORK STORE MNT PG_DB
  mkdir -p "$MNT/threads/t1/runs/r1"
  ev_start >> "$MNT/threads/t1/runs/r1/events.jsonl"   # a row in it: "unchanged" means something
}
teardown_file() {
  MOUNTS=("$MNT")
  runfs_teardown
}
setup() {
  RUN=$MNT/threads/t1/runs/r1
  EV=$RUN/events.jsonl
  MOUNTS=()
}
teardown() {
  local d
  for d in "${MOUNTS[@]}"; do runfs_unmount "$d"; done
  sanitizer_reports >&2
}

# python3 helper: `append PATH DATA` (one write() of DATA + '\n', retried for the rest as a
# write loop does), `append-raw PATH DATA` (no newline added), or `sys OP ARGS...`; prints
# `write=<E> close=<E>` or `<E>`, E being OK or the errno name.
PYHELPER=$(cat <<'PY'
import errno, os, re, stat, sys

def ename(e):
    return errno.errorcode.get(e, str(e))

def decode(s):
    b = s.encode('utf-8', 'surrogateescape')
    out = bytearray()
    pad_at = pad_total = None
    pos = 0
    for m in re.finditer(rb'<(NUL|x[0-9a-fA-F]{2}|rep:(\d+):([^>]*)|pad:(\d+))>', b):
        out += b[pos:m.start()]
        t = m.group(1)
        if t == b'NUL':
            out += b'\0'
        elif t[:1] == b'x':
            out.append(int(t[1:], 16))
        elif t.startswith(b'rep:'):
            out += m.group(3) * int(m.group(2))
        else:
            pad_at, pad_total = len(out), int(m.group(4))
        pos = m.end()
    out += b[pos:]
    if pad_at is not None:
        out[pad_at:pad_at] = b'A' * (pad_total - len(out))
    return bytes(out)

def append(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    w = c = 'OK'
    view = memoryview(data)
    try:
        while len(view):
            view = view[os.write(fd, view):]
    except OSError as e:
        w = ename(e.errno)
    try:
        os.close(fd)
    except OSError as e:
        c = ename(e.errno)
    print('write=%s close=%s' % (w, c))

def sysop(op, a):
    ops = {
        'symlink': lambda: os.symlink(a[0], a[1]),
        'link': lambda: os.link(a[0], a[1]),
        'mkfifo': lambda: os.mkfifo(a[0]),
        'mknod': lambda: os.mknod(a[0], 0o644 | stat.S_IFREG),
        'mknod-chr': lambda: os.mknod(a[0], 0o644 | stat.S_IFCHR, os.makedev(1, 3)),
        'chmod': lambda: os.chmod(a[0], int(a[1], 8)),
        'chown': lambda: os.chown(a[0], int(a[1]), int(a[2])),
        'setxattr': lambda: os.setxattr(a[0], 'user.runfs', b'1'),
        'rename': lambda: os.rename(a[0], a[1]),
        'utime': lambda: os.utime(a[0], (0, 0)),
        'touch': lambda: os.utime(a[0]),
        'truncate': lambda: os.truncate(a[0], 0),
        'open-trunc': lambda: os.close(os.open(a[0], os.O_WRONLY | os.O_TRUNC)),
        'unlink': lambda: os.unlink(a[0]),
        'rmdir': lambda: os.rmdir(a[0]),
        'mkdir': lambda: os.mkdir(decode(a[0])),
    }
    try:
        ops[op]()
        print('OK')
    except OSError as e:
        print(ename(e.errno))

if sys.argv[1] == 'sys':
    sysop(sys.argv[2], sys.argv[3:])
else:
    data = decode(sys.argv[3])
    append(sys.argv[2], data if sys.argv[1] == 'append-raw' else data + b'\n')
PY
)

# The daemon answers: the root lists, README reads, and a valid line still appends.
alive() {
  run ls "$MNT"
  assert_success
  assert_output --partial threads
  run head -c 10 "$MNT/README"
  assert_success
  ev_error "still here" >> "$EV"
  run tail -n 1 "$EV"
  assert_success
  assert_output --partial '"content":"still here"'
}

# rejects_last: the last line of .runfs/rejects.jsonl (empty before the first refusal).
rejects_last() { tr -d '\0' < "$MNT/.runfs/rejects.jsonl" | grep . | tail -n 1 || true; }

# refused ERRNO REASON LAST_BEFORE: rejects.jsonl gained one line after LAST_BEFORE (the
# log keeps the last 100, so it is found by its neighbour, not counted), whose errno is
# ERRNO and whose reason holds REASON (a fixed string); REASON empty: no line was added.
refused() {
  local want=$1 reason=$2 before=$3
  if [ -z "$reason" ]; then
    assert_equal "$(rejects_last)" "$before"
    return
  fi
  run python3 -c '
import json, sys
lines = [l for l in open(sys.argv[1], "rb").read().replace(b"\0", b"").decode().splitlines() if l.strip()]
before = sys.argv[2]
if not lines or lines[-1] == before or (lines[-2] if len(lines) > 1 else "") != before:
    sys.exit("not exactly one new line after the last one before")
rec = json.loads(lines[-1])
print(rec["errno"])
print(rec["reason"])' "$MNT/.runfs/rejects.jsonl" "$before"
  assert_success
  assert_line --index 0 "$want"
  [[ ${lines[1]} == *"$reason"* ]] || fail "reason '${lines[1]}' does not say '$reason'"
}

# expect OUTCOME ERRNO REASON MODE DATA: the helper's outcome for one append, the refusal
# ERRNO with REASON in rejects.jsonl, store unchanged, daemon up.
expect() {
  local want=$1 errno=$2 reason=$3 mode=$4 data=$5 before lines0
  before=$(store_snapshot)
  lines0=$(rejects_last)
  run python3 -c "$PYHELPER" "$mode" "$EV" "$data"
  assert_success
  assert_output "$want"
  refused "$errno" "$reason" "$lines0"
  assert_equal "$(store_snapshot)" "$before"
  alive
}

# bad_line ERRNO REASON DATA: DATA plus '\n' in one write() fails with ERRNO, for REASON.
bad_line() { expect "write=$1 close=OK" "$1" "$2" append "$3"; }
# bad_tail REASON DATA: DATA without '\n' is buffered (the write succeeds); the close refuses
# it with EINVAL.
bad_tail() { expect "write=OK close=EINVAL" EINVAL "$1" append-raw "$2"; }

# bad_op ERRNO REASON OP ARGS...: a syscall on the mount fails with ERRNO, for REASON, and
# changes nothing.
bad_op() {
  local want=$1 reason=$2 before lines0; shift 2
  before=$(store_snapshot)
  lines0=$(rejects_last)
  run python3 -c "$PYHELPER" sys "$@"
  assert_success
  assert_output "$want"
  refused "$want" "$reason" "$lines0"
  assert_equal "$(store_snapshot)" "$before"
  alive
}

LLM_ERR='"event_type":"llm.error","content":"x"'
MW='{"name":"G","hook":"before_tool","action":"deny","changes":{}}'

# ---- malformed and truncated JSON ------------------------------------------------------------
@test "json: a lone brace" { bad_line EINVAL 'unexpected end of input, expected a string key' '{'; }
@test "json: truncated object" { bad_line EINVAL "unexpected end of input, expected ',' or '}'" '{"event_type":"llm.error","content":"x"'; }
@test "json: truncated inside a string" { bad_line EINVAL 'unterminated string' '{"event_type":"llm.error","content":"x'; }
@test "json: missing comma" { bad_line EINVAL "expected ',' or '}'" '{"event_type":"llm.error" "content":"x"}'; }
@test "json: unquoted key" { bad_line EINVAL 'expected a string key' '{event_type:"llm.error"}'; }
@test "json: single quotes" { bad_line EINVAL 'expected a string key' "{'event_type':'llm.error'}"; }
@test "json: trailing comma" { bad_line EINVAL 'expected a string key' '{"event_type":"llm.error",}'; }
@test "json: data after the object" { bad_line EINVAL 'unexpected data after the value' "{$LLM_ERR} x"; }
@test "json: two objects on one line" { bad_line EINVAL 'unexpected data after the value' "{$LLM_ERR}{$LLM_ERR}"; }
@test "json: an array, not an object" { bad_line EINVAL 'event is not a JSON object (got array)' "[{$LLM_ERR}]"; }
@test "json: a bare string" { bad_line EINVAL 'event is not a JSON object (got string)' '"llm.error"'; }
@test "json: null" { bad_line EINVAL 'event is not a JSON object (got null)' 'null'; }
@test "json: an empty line" { bad_line EINVAL 'unexpected end of input, expected a value' ''; }
@test "json: bad escape" { bad_line EINVAL "bad escape '\\q'" '{"event_type":"llm.error","content":"a\qb"}'; }
@test "json: NaN" { bad_line EINVAL 'expected a value' '{"event_type":"run.end","content":NaN,"metadata":{"status":"success"}}'; }
@test "json: a good line then a bad one in one write stores neither" {
  bad_line EINVAL "line 2: invalid JSON" "{$LLM_ERR}"$'\n''{"event_type":'
}
@test "json: truncated last line refused at close" { bad_tail "unexpected end of input, expected ',' or '}'" '{"event_type":"llm.error","content":"x"'; }
@test "json: a partial line that is not an object refused at close" { bad_tail 'expected a value' 'hello'; }

# ---- wrong types for the envelope --------------------------------------------------------------
@test "type: event_type number" { bad_line EINVAL 'event_type: expected string, got number' '{"event_type":1}'; }
@test "type: event_type null" { bad_line EINVAL 'event_type: expected string, got null' '{"event_type":null}'; }
@test "type: event_type array" { bad_line EINVAL 'event_type: expected string, got array' '{"event_type":["llm.error"]}'; }
@test "type: event_type object" { bad_line EINVAL 'event_type: expected string, got object' '{"event_type":{"t":"llm.error"}}'; }
@test "type: event_type boolean" { bad_line EINVAL 'event_type: expected string, got boolean' '{"event_type":true}'; }
@test "type: event_type missing" { bad_line EINVAL "missing required field 'event_type'" '{"content":"x"}'; }
@test "type: category number" { bad_line EINVAL 'category: expected string, got number' "{$LLM_ERR,\"category\":7}"; }
@test "type: category object" { bad_line EINVAL 'category: expected string, got object' "{$LLM_ERR,\"category\":{}}"; }
@test "type: content not what the schema says" { bad_line EINVAL 'content: expected string, got number' '{"event_type":"llm.error","content":42}'; }
@test "type: metadata string" { bad_line EINVAL 'metadata: expected object, got string' "{$LLM_ERR,\"metadata\":\"x\"}"; }
@test "type: metadata array" { bad_line EINVAL 'metadata: expected object, got array' "{$LLM_ERR,\"metadata\":[]}"; }
@test "type: metadata number" { bad_line EINVAL 'metadata: expected object, got number' "{$LLM_ERR,\"metadata\":1}"; }
@test "type: metadata null" { bad_line EINVAL 'metadata: expected object, got null' "{$LLM_ERR,\"metadata\":null}"; }
@test "type: created_at number" { bad_line EINVAL 'created_at: expected string, got number' "{$LLM_ERR,\"created_at\":1767225600}"; }
@test "type: created_at boolean" { bad_line EINVAL 'created_at: expected string, got boolean' "{$LLM_ERR,\"created_at\":true}"; }
@test "type: thread_id number" { bad_line EINVAL 'thread_id: expected string, got number' "{$LLM_ERR,\"thread_id\":1}"; }
@test "type: thread_id null" { bad_line EINVAL 'thread_id: expected string, got null' "{$LLM_ERR,\"thread_id\":null}"; }
@test "type: run_id object" { bad_line EINVAL 'run_id: expected string, got object' "{$LLM_ERR,\"run_id\":{}}"; }

# ---- lengths, names, the contract --------------------------------------------------------------
@test "name: event_type of 33 characters" { bad_line EINVAL 'event_type: longer than 32 characters' '{"event_type":"abcdefghij.abcdefghij.abcdefghij.x"}'; }
@test "name: event_type empty" { bad_line EINVAL 'event_type: must not be empty' '{"event_type":""}'; }
@test "name: middleware tag of 22 characters" { bad_line EINVAL 'event_type: middleware tag is longer than 21 characters (event_type over 32)' "{\"event_type\":\"middleware:abcdefghijklmnopqrstuv\",\"content\":$MW}"; }
@test "name: middleware tag empty" { bad_line EINVAL 'event_type: shorter than 12 characters' "{\"event_type\":\"middleware:\",\"content\":$MW}"; }
@test "name: middleware tag with a slash" { bad_line EINVAL "event_type: must not contain '/'" "{\"event_type\":\"middleware:a/b\",\"content\":$MW}"; }
@test "name: category of 17 characters" { bad_line EINVAL 'category: longer than 16 characters' "{$LLM_ERR,\"category\":\"abcdefghijklmnopq\"}"; }
@test "name: unknown event type" { bad_line EINVAL "unknown event type 'llm.made.up' (not in the contract)" '{"event_type":"llm.made.up","content":"x"}'; }
@test "name: unknown event type with a category" { bad_line EINVAL "unknown event type 'my.custom' (not in the contract)" '{"event_type":"my.custom","category":"custom"}'; }
@test "name: category mismatch" { bad_line EINVAL "category 'message' does not match 'trace' for llm.error" "{$LLM_ERR,\"category\":\"message\"}"; }
@test "name: event type with a newline escape" { bad_line EINVAL 'event_type: must not contain control character 0x0a' '{"event_type":"llm.error\n","content":"x"}'; }
@test "name: a singleton appended to events.jsonl" { bad_line EINVAL 'run.terminal is a singleton: create it with once/run.terminal' '{"event_type":"run.terminal","content":{"status":"success"},"metadata":{"protocol_version":1,"recovered":false}}'; }
@test "name: content schema violation" { bad_line EINVAL "content: missing required field 'chain'" '{"event_type":"run.start","content":{"name":"x"},"metadata":{"caller":"lead_agent"}}'; }

# ---- fields the store owns, unknown fields -----------------------------------------------------
@test "field: seq given" { bad_line EINVAL 'seq is assigned by the store' "{$LLM_ERR,\"seq\":5}"; }
@test "field: seq given as a string" { bad_line EINVAL 'seq is assigned by the store' "{$LLM_ERR,\"seq\":\"5\"}"; }
@test "field: user_id given" { bad_line EINVAL 'user_id is set by the mount, not the event' "{$LLM_ERR,\"user_id\":\"root\"}"; }
@test "field: unknown top-level field" { bad_line EINVAL "unknown field 'foo'" "{$LLM_ERR,\"foo\":1}"; }
@test "field: misspelt event_type" { bad_line EINVAL "unknown field 'evnt_type'" '{"evnt_type":"llm.error"}'; }
@test "field: duplicate event_type" { bad_line EINVAL "duplicate field 'event_type'" "{$LLM_ERR,\"event_type\":\"llm.error\"}"; }
@test "field: duplicate key inside content" { bad_line EINVAL "content: duplicate field 'a'" '{"event_type":"run.end","content":{"a":1,"a":2},"metadata":{"status":"success"}}'; }
@test "field: storage marker in metadata" { bad_line EINVAL 'metadata.content_is_json is a storage marker reserved by the store' "{$LLM_ERR,\"metadata\":{\"content_is_json\":true}}"; }

# ---- ids in the line ---------------------------------------------------------------------------
@test "id: thread_id other than the path's" { bad_line EINVAL "thread_id 't2' does not match the path's 't1'" "{$LLM_ERR,\"thread_id\":\"t2\"}"; }
@test "id: run_id other than the path's" { bad_line EINVAL "run_id 'r2' does not match the path's 'r1'" "{$LLM_ERR,\"run_id\":\"r2\"}"; }
@test "id: thread_id .." { bad_line EINVAL 'thread_id: not a valid id (1-64 of [A-Za-z0-9_-])' "{$LLM_ERR,\"thread_id\":\"..\"}"; }
@test "id: run_id with a slash" { bad_line EINVAL 'run_id: not a valid id (1-64 of [A-Za-z0-9_-])' "{$LLM_ERR,\"run_id\":\"r1/x\"}"; }
@test "id: thread_id of 65 characters" { bad_line EINVAL 'thread_id: not a valid id (1-64 of [A-Za-z0-9_-])' "{$LLM_ERR,\"thread_id\":\"<rep:65:a>\"}"; }

# ---- bytes -------------------------------------------------------------------------------------
@test "bytes: NUL in a string" { bad_line EINVAL 'NUL byte in a string' '{"event_type":"llm.error","content":"a<NUL>b"}'; }
@test "bytes: NUL between tokens" { bad_line EINVAL 'NUL byte' '{"event_type":"llm.error",<NUL>"content":"x"}'; }
@test "bytes: \\u0000 escape" { bad_line EINVAL 'NUL is refused' '{"event_type":"llm.error","content":"a\u0000b"}'; }
@test "bytes: raw control character" { bad_line EINVAL 'raw control character 0x01 in a string' '{"event_type":"llm.error","content":"a<x01>b"}'; }
@test "bytes: invalid UTF-8 0xff" { bad_line EINVAL 'invalid UTF-8' '{"event_type":"llm.error","content":"<xff>"}'; }
@test "bytes: stray continuation byte" { bad_line EINVAL 'invalid UTF-8' '{"event_type":"llm.error","content":"<x80>"}'; }
@test "bytes: overlong 2-byte /" { bad_line EINVAL 'invalid UTF-8' '{"event_type":"llm.error","content":"<xc0><xaf>"}'; }
@test "bytes: overlong 3-byte /" { bad_line EINVAL 'invalid UTF-8' '{"event_type":"llm.error","content":"<xe0><x80><xaf>"}'; }
@test "bytes: overlong 4-byte" { bad_line EINVAL 'invalid UTF-8' '{"event_type":"llm.error","content":"<xf0><x80><x80><xaf>"}'; }
@test "bytes: UTF-8 encoded surrogate" { bad_line EINVAL 'invalid UTF-8' '{"event_type":"llm.error","content":"<xed><xa0><x80>"}'; }
@test "bytes: beyond U+10FFFF" { bad_line EINVAL 'invalid UTF-8' '{"event_type":"llm.error","content":"<xf4><x90><x80><x80>"}'; }
@test "bytes: 5-byte sequence" { bad_line EINVAL 'invalid UTF-8' '{"event_type":"llm.error","content":"<xf8><x88><x80><x80><x80>"}'; }
@test "bytes: truncated sequence" { bad_line EINVAL 'invalid UTF-8' '{"event_type":"llm.error","content":"<xe2><x82>"}'; }
@test "bytes: invalid UTF-8 in a key" { bad_line EINVAL 'invalid UTF-8' '{"event_type":"llm.error","content":"x","metadata":{"<xff>":1}}'; }
@test "bytes: lone high surrogate escape" { bad_line EINVAL 'lone surrogate \ud800' '{"event_type":"llm.error","content":"\ud800"}'; }
@test "bytes: lone low surrogate escape" { bad_line EINVAL 'lone surrogate \udc00' '{"event_type":"llm.error","content":"\udc00"}'; }
@test "bytes: high surrogate then a letter" { bad_line EINVAL 'lone surrogate \ud800' '{"event_type":"llm.error","content":"\ud800\u0041"}'; }
@test "bytes: reversed surrogate pair" { bad_line EINVAL 'lone surrogate \udc00' '{"event_type":"llm.error","content":"\udc00\ud800"}'; }

# ---- size and depth ----------------------------------------------------------------------------
@test "size: a line of 1 MiB + 1 bytes" { bad_line EMSGSIZE 'event line over the 1048576-byte limit' '{"event_type":"llm.error","content":"<pad:1048577>"}'; }
@test "size: 1 MiB + 1 bytes without a newline" { expect "write=EMSGSIZE close=OK" EMSGSIZE 'event line over the 1048576-byte limit' append-raw '{"event_type":"llm.error","content":"<pad:1048577>"}'; }
@test "size: a line of 3 MiB" { bad_line EMSGSIZE 'event line over the 1048576-byte limit' '{"event_type":"llm.error","content":"<pad:3145728>"}'; }
@test "size: a line of exactly 1 MiB is accepted" {
  run python3 -c "$PYHELPER" append "$EV" '{"event_type":"llm.error","content":"<pad:1048576>"}'
  assert_output "write=OK close=OK"
  run tail -c 200 "$EV"
  assert_output --partial 'AAAA"'
}
@test "depth: 100k nested arrays" { bad_line EINVAL 'nesting deeper than 128' '{"event_type":"run.end","metadata":{"status":"success"},"content":<rep:100000:[><rep:100000:]>}'; }
@test "depth: 100k nested objects" { bad_line EINVAL 'nesting deeper than 128' '{"event_type":"run.end","metadata":{"status":"success"},"content":<rep:100000:{"a":><rep:100000:}>}'; }
@test "depth: 129 levels" { bad_line EINVAL 'nesting deeper than 128' '{"event_type":"run.end","metadata":{"status":"success"},"content":<rep:128:[><rep:128:]>}'; }

# ---- numbers -----------------------------------------------------------------------------------
@test "number: 1e999" { bad_line EINVAL 'is too large for a double' '{"event_type":"run.end","content":{"x":1e999},"metadata":{"status":"success"}}'; }
@test "number: -1e400" { bad_line EINVAL 'is too large for a double' '{"event_type":"run.end","content":[-1e400],"metadata":{"status":"success"}}'; }
@test "number: 400 digits" { bad_line EINVAL 'is too large for a double' '{"event_type":"run.end","content":[1<rep:400:0>],"metadata":{"status":"success"}}'; }
@test "number: leading zero" { bad_line EINVAL 'leading zero in a number' '{"event_type":"run.end","content":[01],"metadata":{"status":"success"}}'; }
@test "number: no digit after the point" { bad_line EINVAL "expected a digit after '.'" '{"event_type":"run.end","content":[1.],"metadata":{"status":"success"}}'; }
@test "number: leading point" { bad_line EINVAL 'expected a value' '{"event_type":"run.end","content":[.5],"metadata":{"status":"success"}}'; }
@test "number: leading plus" { bad_line EINVAL 'expected a value' '{"event_type":"run.end","content":[+1],"metadata":{"status":"success"}}'; }
@test "number: Infinity" { bad_line EINVAL 'expected a value' '{"event_type":"run.end","content":[Infinity],"metadata":{"status":"success"}}'; }
@test "number: hexadecimal" { bad_line EINVAL "expected ',' or ']'" '{"event_type":"run.end","content":[0x10],"metadata":{"status":"success"}}'; }

# ---- created_at --------------------------------------------------------------------------------
@test "time: February 30" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"2026-02-30T00:00:00Z\"}"; }
@test "time: hour 25" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"2026-01-01T25:00:00Z\"}"; }
@test "time: leap second" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"2026-01-01T23:59:60Z\"}"; }
@test "time: month 13" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"2026-13-01T00:00:00Z\"}"; }
@test "time: words" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"yesterday\"}"; }
@test "time: empty" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"\"}"; }
@test "time: trailing text" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"2026-01-01T00:00:00Z x\"}"; }
@test "time: year 0000" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"0000-01-01T00:00:00Z\"}"; }
@test "time: before year 1 once converted" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"0001-01-01T00:00:00+01:00\"}"; }
@test "time: offset +24:00" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"2026-01-01T00:00:00+24:00\"}"; }
@test "time: ten fraction digits" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"2026-01-01T00:00:00.1234567890Z\"}"; }
@test "time: date only" { bad_line EINVAL 'is not a valid timestamp' "{$LLM_ERR,\"created_at\":\"2026-01-01\"}"; }

# ---- ids in paths (mkdir) ----------------------------------------------------------------------
@test "path: thread id with a dot" { bad_op EINVAL 'ids are 1-64 of [A-Za-z0-9_-]' mkdir "$MNT/threads/a.b"; }
@test "path: thread id with a space" { bad_op EINVAL 'ids are 1-64 of [A-Za-z0-9_-]' mkdir "$MNT/threads/a b"; }
@test "path: thread id of 65 characters" { bad_op EINVAL 'ids are 1-64 of [A-Za-z0-9_-]' mkdir "$MNT/threads/<rep:65:a>"; }
@test "path: thread id of 64 characters is fine" {
  run python3 -c "$PYHELPER" sys mkdir "$MNT/threads/<rep:64:a>"
  assert_output OK
}
@test "path: thread id ..." { bad_op EINVAL 'ids are 1-64 of [A-Za-z0-9_-]' mkdir "$MNT/threads/..."; }
@test "path: thread id with non-ASCII" { bad_op EINVAL 'ids are 1-64 of [A-Za-z0-9_-]' mkdir "$MNT/threads/caf<xc3><xa9>"; }
@test "path: thread id with invalid UTF-8" { bad_op EINVAL 'ids are 1-64 of [A-Za-z0-9_-]' mkdir "$MNT/threads/a<xff>"; }
@test "path: thread id with a newline" { bad_op EINVAL 'ids are 1-64 of [A-Za-z0-9_-]' mkdir "$MNT/threads/a<x0a>b"; }
@test "path: run id with a dot" { bad_op EINVAL 'ids are 1-64 of [A-Za-z0-9_-]' mkdir "$MNT/threads/t1/runs/r.1"; }
@test "path: run id of 65 characters" { bad_op EINVAL 'ids are 1-64 of [A-Za-z0-9_-]' mkdir "$MNT/threads/t1/runs/<rep:65:r>"; }
# `..` never reaches the daemon: the kernel answers mkdir of `..` itself (EEXIST).
@test "path: thread id .. (answered by the kernel)" { bad_op EEXIST '' mkdir "$MNT/threads/.."; }

# ---- operations that make no sense on the store (EPERM) ----------------------------------------
@test "op: symlink in a run" { bad_op EPERM 'runfs has no symbolic links' symlink x "$RUN/link"; }
@test "op: symlink in threads/" { bad_op EPERM 'runfs has no symbolic links' symlink t1 "$MNT/threads/t9"; }
@test "op: hard link to events.jsonl" { bad_op EPERM 'runfs has no hard links' link "$EV" "$RUN/hard"; }
@test "op: mkfifo" { bad_op EPERM 'runfs makes no device nodes, fifos or sockets' mkfifo "$RUN/fifo"; }
@test "op: mknod regular file" { bad_op EPERM 'runfs makes no device nodes, fifos or sockets' mknod "$RUN/plain"; }
@test "op: mknod character device" { bad_op EPERM 'runfs makes no device nodes, fifos or sockets' mknod-chr "$MNT/threads/t1/null"; }
@test "op: chmod events.jsonl" { bad_op EPERM 'mode, owner and times of runfs files are fixed' chmod "$EV" 600; }
@test "op: chmod a thread" { bad_op EPERM 'mode, owner and times of runfs files are fixed' chmod "$MNT/threads/t1" 700; }
@test "op: chown events.jsonl" { bad_op EPERM 'mode, owner and times of runfs files are fixed' chown "$EV" 1 1; }
@test "op: setxattr on events.jsonl" { bad_op EPERM 'runfs keeps no extended attributes' setxattr "$EV"; }
@test "op: setxattr on a thread" { bad_op EPERM 'runfs keeps no extended attributes' setxattr "$MNT/threads/t1"; }
@test "op: rename events.jsonl" { bad_op EPERM 'history is never renamed' rename "$EV" "$RUN/old.jsonl"; }
@test "op: rename a thread" { bad_op EPERM 'history is never renamed' rename "$MNT/threads/t1" "$MNT/threads/t2"; }
@test "op: rename a run" { bad_op EPERM 'history is never renamed' rename "$RUN" "$MNT/threads/t1/runs/r2"; }
@test "op: utimens events.jsonl" { bad_op EPERM 'mode, owner and times of runfs files are fixed' utime "$EV"; }
@test "op: touch a thread" { bad_op EPERM 'mode, owner and times of runfs files are fixed' touch "$MNT/threads/t1"; }
@test "op: truncate events.jsonl" { bad_op EPERM 'history is append-only: truncating is not allowed' truncate "$EV"; }
@test "op: open events.jsonl with O_TRUNC" { bad_op EPERM 'events.jsonl is append-only: append with >>, never overwrite' open-trunc "$EV"; }
@test "op: unlink events.jsonl" { bad_op EPERM 'history is never unlinked (mount with --allow-delete and rm -r a run or thread to delete it)' unlink "$EV"; }
@test "op: rmdir a run without --allow-delete" { bad_op EPERM 'deleting needs a mount with --allow-delete' rmdir "$RUN"; }
@test "op: mkdir inside a run" { bad_op EPERM 'directories are made only under threads/ and threads/T/runs/' mkdir "$RUN/x"; }

# ---- a mount that allows unknown event types still wants file names ----------------------------
@test "allow-unknown: event types that are not file names are refused" {
  local m2=$WORK/mnt2 before
  runfs_mount "$STORE" "$m2" --allow-unknown-events
  local ev2=$m2/threads/t1/runs/r1/events.jsonl
  before=$(store_snapshot)
  local t
  for t in 'a/b' '/' '..' '.' 'a\nb' 'a\u0001' 'a\tb' 'x<x7f>'; do
    run python3 -c "$PYHELPER" append "$ev2" "{\"event_type\":\"$t\",\"category\":\"c\"}"
    assert_output "write=EINVAL close=OK"
  done
  assert_equal "$(store_snapshot)" "$before"
  run python3 -c "$PYHELPER" append "$ev2" '{"event_type":"my.custom:x-1","category":"c"}'
  assert_output "write=OK close=OK"
  run ls "$m2/threads/t1/runs/r1/types"
  assert_output --partial 'my.custom:x-1.jsonl'
}
