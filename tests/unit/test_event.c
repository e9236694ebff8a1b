/* test_event.c — the gate (rs_event_parse) and the encoder (rs_event_encode): every refusal
 * with its errno and reason, every contract event type, DeerFlow's storage encoding, and
 * byte-exact lines for rows written by runfs and by DeerFlow. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "contract.h"
#include "event.h"
#include "json.h"
#include "search.h"
#include "unit.h"
#include "rs_util.h"

static rs_contract *contract;

static int setup(void **state)
{
    (void)state;
    rs_err err = { 0 };
    if (rs_contract_load(&contract, UNIT_CONTRACT, &err)) {
        fprintf(stderr, "contract: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rs_contract_free(contract);
    return 0;
}

static rs_event_ctx ctx_default(void)
{
    rs_event_ctx c = { .contract = contract, .thread_id = "t1", .run_id = "r1",
                       .max_bytes = RS_DEFAULT_MAX_EVENT };
    return c;
}

static rs_event *parse_ok_ctx(const char *line, const rs_event_ctx *ctx)
{
    rs_event *ev = NULL;
    rs_err err = { 0 };
    int rc = rs_event_parse(&ev, line, strlen(line), ctx, &err);
    if (rc)
        print_error("refused %s\n  reason: %s\n", line, err.msg);
    assert_int_equal(rc, 0);
    assert_non_null(ev);
    return ev;
}

static rs_event *parse_ok(const char *line)
{
    rs_event_ctx c = ctx_default();
    return parse_ok_ctx(line, &c);
}

/* ---- payloads ----------------------------------------------------------------------------- */

#define AI_CONTENT "{\"type\":\"ai\",\"content\":\"hi\",\"tool_calls\":[]}"
#define AI_META "{\"caller\":\"lead_agent\",\"usage\":{\"input_tokens\":3,\"output_tokens\":5}," \
                "\"latency_ms\":12,\"llm_call_index\":1}"
#define AI_LINE(content, meta) \
    "{\"event_type\":\"llm.ai.response\",\"content\":" content ",\"metadata\":" meta "}"
#define TERM_LINE(content, meta) \
    "{\"event_type\":\"run.terminal\",\"content\":" content ",\"metadata\":" meta "}"
#define STEP_META "{\"task_id\":\"call_1\",\"message_index\":0}"
#define STEP_LINE(content) \
    "{\"event_type\":\"subagent.step\",\"content\":" content ",\"metadata\":" STEP_META "}"
#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define WS_SUMMARY(created) \
    "{\"created\":" created ",\"modified\":1,\"deleted\":0,\"symlink_created\":0," \
    "\"additions\":10,\"deletions\":2,\"truncated\":false}"
#define WS_FILE \
    "{\"path\":\"outputs/report.md\",\"root\":\"outputs\",\"status\":\"modified\"," \
    "\"binary\":false,\"sensitive\":false,\"size_before\":10,\"size_after\":42," \
    "\"sha256_before\":null,\"sha256_after\":\"" SHA "\",\"diff\":\"@@ -1 +1 @@\\n-a\\n+b\\n\"," \
    "\"diff_truncated\":false,\"diff_unavailable_reason\":null,\"additions\":1," \
    "\"deletions\":1,\"symlink\":false,\"symlink_target_before\":null," \
    "\"symlink_target_after\":null}"
#define WS_LIMITS \
    "{\"max_files\":200,\"max_scanned_files\":5000,\"max_file_bytes_for_diff\":262144," \
    "\"max_total_diff_bytes\":1048576}"
#define WS_META(summary) \
    "{\"workspace_changes\":{\"version\":1,\"summary\":" summary ",\"files\":[" WS_FILE "]," \
    "\"limits\":" WS_LIMITS "}}"
#define MW_CONTENT "{\"name\":\"LoopDetectionMiddleware\",\"hook\":\"after_model\"," \
                   "\"action\":\"warn\",\"changes\":{\"observed\":3,\"threshold\":3}}"

/* ---- refusals ----------------------------------------------------------------------------- */

#define L(s) s, sizeof(s) - 1

static const char deep_marker[] = "DEEP";   /* replaced by 100k-deep content at run time */

static const struct bad_case {
    const char *line;
    size_t len;
    size_t max;          /* 0: the default limit */
    int code;
    const char *reason;
} bad_cases[] = {
    /* malformed JSON, not an object */
    { L(""), 0, EINVAL, "unexpected end of input" },
    { L("{\"event_type\":\"llm.error\",\"content\":\"x\""), 0, EINVAL, "unexpected end of input" },
    { L("{\"event_type\":\"llm.error\" \"content\":\"x\"}"), 0, EINVAL, "expected ',' or '}'" },
    { L("{event_type:\"llm.error\"}"), 0, EINVAL, "expected a string key" },
    { L("{\"event_type\":\"llm.error\"} x"), 0, EINVAL, "unexpected data after the value" },
    { L("[{\"event_type\":\"llm.error\"}]"), 0, EINVAL, "not a JSON object" },
    { L("\"llm.error\""), 0, EINVAL, "not a JSON object" },
    { L("null"), 0, EINVAL, "not a JSON object" },
    /* envelope field types */
    { L("{\"event_type\":1}"), 0, EINVAL, "event_type: expected string, got number" },
    { L("{\"event_type\":null}"), 0, EINVAL, "event_type: expected string, got null" },
    { L("{\"event_type\":[\"llm.error\"]}"), 0, EINVAL, "event_type: expected string, got array" },
    { L("{\"event_type\":\"\"}"), 0, EINVAL, "event_type: must not be empty" },
    { L("{\"content\":\"x\"}"), 0, EINVAL, "missing required field 'event_type'" },
    { L("{\"event_type\":\"llm.error\",\"category\":7}"), 0, EINVAL,
      "category: expected string, got number" },
    { L("{\"event_type\":\"llm.error\",\"category\":\"\"}"), 0, EINVAL, "category: must not be empty" },
    { L("{\"event_type\":\"llm.error\",\"thread_id\":1}"), 0, EINVAL,
      "thread_id: expected string, got number" },
    { L("{\"event_type\":\"llm.error\",\"run_id\":{}}"), 0, EINVAL,
      "run_id: expected string, got object" },
    { L("{\"event_type\":\"llm.error\",\"metadata\":\"x\"}"), 0, EINVAL,
      "metadata: expected object, got string" },
    { L("{\"event_type\":\"llm.error\",\"metadata\":[]}"), 0, EINVAL,
      "metadata: expected object, got array" },
    { L("{\"event_type\":\"llm.error\",\"metadata\":null}"), 0, EINVAL,
      "metadata: expected object, got null" },
    { L("{\"event_type\":\"llm.error\",\"created_at\":1767225600}"), 0, EINVAL,
      "created_at: expected string, got number" },
    /* lengths */
    { L("{\"event_type\":\"abcdefghij.abcdefghij.abcdefghij.x\"}"), 0, EINVAL,
      "event_type: longer than 32 characters" },
    { L("{\"event_type\":\"middleware:abcdefghijklmnopqrstuv\",\"content\":" MW_CONTENT "}"), 0,
      EINVAL, "middleware tag is longer than 21" },
    { L("{\"event_type\":\"middleware:\",\"content\":" MW_CONTENT "}"), 0, EINVAL,
      "event_type: shorter than 12 characters" },
    { L("{\"event_type\":\"llm.error\",\"category\":\"abcdefghijklmnopq\"}"), 0, EINVAL,
      "category: longer than 16 characters" },
    /* the contract's names */
    { L("{\"event_type\":\"llm.made.up\",\"content\":\"x\"}"), 0, EINVAL,
      "unknown event type 'llm.made.up'" },
    { L("{\"event_type\":\"llm.ai.response\",\"category\":\"trace\",\"content\":" AI_CONTENT
        ",\"metadata\":" AI_META "}"), 0, EINVAL,
      "category 'trace' does not match 'message' for llm.ai.response" },
    /* store-owned and unknown fields */
    { L("{\"event_type\":\"llm.error\",\"seq\":5}"), 0, EINVAL, "seq is assigned by the store" },
    { L("{\"event_type\":\"llm.error\",\"user_id\":\"u\"}"), 0, EINVAL,
      "user_id is set by the mount, not the event" },
    { L("{\"event_type\":\"llm.error\",\"foo\":1}"), 0, EINVAL, "unknown field 'foo'" },
    { L("{\"evnt_type\":\"llm.error\"}"), 0, EINVAL, "unknown field 'evnt_type'" },
    { L("{\"event_type\":\"llm.error\",\"event_type\":\"llm.error\"}"), 0, EINVAL,
      "duplicate field 'event_type'" },
    /* ids */
    { L("{\"event_type\":\"llm.error\",\"thread_id\":\"t2\"}"), 0, EINVAL,
      "thread_id 't2' does not match the path's 't1'" },
    { L("{\"event_type\":\"llm.error\",\"run_id\":\"r2\"}"), 0, EINVAL,
      "run_id 'r2' does not match the path's 'r1'" },
    { L("{\"event_type\":\"llm.error\",\"run_id\":\"r/1\"}"), 0, EINVAL, "run_id: not a valid id" },
    /* bytes */
    { L("{\"event_type\":\"llm.error\",\"content\":\"a\0b\"}"), 0, EINVAL, "NUL byte" },
    { L("{\"event_type\":\"llm.error\",\"content\":\"\xff\"}"), 0, EINVAL, "invalid UTF-8 at byte 37" },
    { L("{\"event_type\":\"llm.error\",\"content\":\"\xc0\xaf\"}"), 0, EINVAL, "invalid UTF-8" },
    { L("{\"event_type\":\"llm.error\",\"content\":\"\xed\xa0\x80\"}"), 0, EINVAL, "invalid UTF-8" },
    { L("{\"event_type\":\"llm.error\",\"content\":\"\\ud800\"}"), 0, EINVAL,
      "lone surrogate \\ud800" },
    { L("{\"event_type\":\"llm.error\",\"content\":\"\\u0000\"}"), 0, EINVAL,
      "NUL is refused, it would truncate C strings" },
    { L("{\"event_type\":\"llm.error\",\"content\":\"\x01\"}"), 0, EINVAL, "raw control character" },
    /* size */
    { L("{\"event_type\":\"llm.error\",\"content\":\"0123456789012345678901\"}"), 60, EMSGSIZE,
      "event is 61 bytes, over the 60-byte limit" },
    { deep_marker, 0, 0, EINVAL, "nesting deeper than 128" },
    { L("{\"event_type\":\"run.end\",\"content\":{\"x\":1e999},\"metadata\":{\"status\":\"success\"}}"), 0,
      EINVAL, "too large for a double" },
    { L("{\"event_type\":\"run.end\",\"content\":[01],\"metadata\":{\"status\":\"success\"}}"), 0,
      EINVAL, "leading zero" },
    /* created_at */
    { L("{\"event_type\":\"llm.error\",\"created_at\":\"2026-02-30T00:00:00Z\"}"), 0, EINVAL,
      "created_at: \"2026-02-30T00:00:00Z\" is not a valid timestamp" },
    { L("{\"event_type\":\"llm.error\",\"created_at\":\"2026-01-01T25:00:00Z\"}"), 0, EINVAL,
      "created_at" },
    { L("{\"event_type\":\"llm.error\",\"created_at\":\"2026-01-01T23:59:60Z\"}"), 0, EINVAL,
      "not a valid timestamp" },
    { L("{\"event_type\":\"llm.error\",\"created_at\":\"2026-13-01T00:00:00Z\"}"), 0, EINVAL,
      "not a valid timestamp" },
    { L("{\"event_type\":\"llm.error\",\"created_at\":\"yesterday\"}"), 0, EINVAL,
      "not a valid timestamp" },
    { L("{\"event_type\":\"llm.error\",\"created_at\":\"2026-01-01T00:00:00Z trailing\"}"), 0,
      EINVAL, "not a valid timestamp" },
    { L("{\"event_type\":\"llm.error\",\"created_at\":\"\"}"), 0, EINVAL, "not a valid timestamp" },
    { L("{\"event_type\":\"llm.error\",\"created_at\":\"0001-01-01T00:00:00+01:00\"}"), 0, EINVAL,
      "not a valid timestamp" },
    /* content schemas, each fixed type */
    { L("{\"event_type\":\"run.start\",\"content\":{\"name\":\"x\"},\"metadata\":{\"caller\":\"lead_agent\"}}"),
      0, EINVAL, "content: missing required field 'chain'" },
    { L("{\"event_type\":\"run.start\",\"content\":\"graph\",\"metadata\":{\"caller\":\"lead_agent\"}}"),
      0, EINVAL, "content: expected object, got string" },
    { L("{\"event_type\":\"run.start\",\"content\":{\"chain\":1},\"metadata\":{\"caller\":\"lead_agent\"}}"),
      0, EINVAL, "content.chain: expected string or null, got number" },
    { L("{\"event_type\":\"run.start\",\"content\":{\"chain\":null},\"metadata\":{}}"), 0, EINVAL,
      "metadata: missing required field 'caller'" },
    { L("{\"event_type\":\"run.end\",\"content\":{},\"metadata\":{\"status\":\"error\"}}"), 0, EINVAL,
      "metadata.status: must equal \"success\"" },
    { L("{\"event_type\":\"run.error\",\"content\":{\"e\":1},\"metadata\":{\"error_type\":\"X\"}}"), 0,
      EINVAL, "content: expected string, got object" },
    { L("{\"event_type\":\"run.error\",\"content\":\"boom\"}"), 0, EINVAL,
      "metadata: missing required field 'error_type'" },
    { L("{\"event_type\":\"llm.human.input\",\"content\":{\"type\":\"human\",\"content\":\"q\"},"
        "\"metadata\":{\"caller\":\"subagent:x\"}}"), 0, EINVAL,
      "metadata.caller: must equal \"lead_agent\"" },
    { L("{\"event_type\":\"llm.human.input\",\"content\":{\"type\":\"human\",\"content\":\"q\","
        "\"additional_kwargs\":[]},\"metadata\":{\"caller\":\"lead_agent\"}}"), 0, EINVAL,
      "content.additional_kwargs: expected object, got array" },
    { L(AI_LINE("{\"type\":\"ai\",\"content\":\"hi\"}", AI_META)), 0, EINVAL,
      "content: missing required field 'tool_calls'" },
    { L(AI_LINE("{\"type\":\"ai\",\"content\":\"hi\",\"tool_calls\":\"none\"}", AI_META)), 0, EINVAL,
      "content.tool_calls: expected array, got string" },
    { L(AI_LINE("{\"type\":\"human\",\"content\":\"hi\",\"tool_calls\":[]}", AI_META)), 0, EINVAL,
      "content.type: must equal \"ai\"" },
    { L(AI_LINE(AI_CONTENT, "{\"usage\":{},\"latency_ms\":1,\"llm_call_index\":1}")), 0, EINVAL,
      "metadata: missing required field 'caller'" },
    { L(AI_LINE(AI_CONTENT, "{\"caller\":\"lead_agent\",\"usage\":{},\"latency_ms\":-1,"
                            "\"llm_call_index\":1}")), 0, EINVAL,
      "metadata.latency_ms: must be >= 0" },
    { L(AI_LINE(AI_CONTENT, "{\"caller\":\"lead_agent\",\"usage\":{},\"latency_ms\":true,"
                            "\"llm_call_index\":1}")), 0, EINVAL,
      "metadata.latency_ms: expected integer or null, got boolean" },
    { L(AI_LINE(AI_CONTENT, "{\"caller\":\"lead_agent\",\"usage\":{},\"latency_ms\":1,"
                            "\"llm_call_index\":1.5}")), 0, EINVAL,
      "metadata.llm_call_index: expected integer, got number" },
    { L(AI_LINE(AI_CONTENT, "{\"caller\":\"lead_agent\",\"usage\":{},\"latency_ms\":1,"
                            "\"llm_call_index\":0}")), 0, EINVAL,
      "metadata.llm_call_index: must be >= 1" },
    { L(AI_LINE(AI_CONTENT, "{\"caller\":\"lead_agent\",\"usage\":null,\"latency_ms\":1,"
                            "\"llm_call_index\":1}")), 0, EINVAL,
      "metadata.usage: expected object, got null" },
    { L("{\"event_type\":\"llm.tool.result\",\"content\":{\"content\":\"r\"}}"), 0, EINVAL,
      "content: missing required field 'type'" },
    { L("{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":\"tool\",\"content\":\"r\","
        "\"tool_call_id\":5}}"), 0, EINVAL, "content.tool_call_id: expected string or null" },
    { L("{\"event_type\":\"llm.error\",\"content\":{\"error\":\"x\"}}"), 0, EINVAL,
      "content: expected string, got object" },
    { L("{\"event_type\":\"context:memory\",\"content\":{\"content_sha256\":\"" SHA "0\"}}"), 0,
      EINVAL, "content.content_sha256: does not match ^[0-9a-f]{64}$" },
    { L("{\"event_type\":\"context:memory\",\"content\":{\"content_sha256\":"
        "\"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\"}}"), 0, EINVAL,
      "content.content_sha256: does not match" },
    { L("{\"event_type\":\"subagent.start\",\"content\":{\"task_id\":\"\",\"description\":null},"
        "\"metadata\":{\"task_id\":\"call_1\"}}"), 0, EINVAL,
      "content.task_id: shorter than 1 character" },
    { L("{\"event_type\":\"subagent.start\",\"content\":{\"task_id\":\"call_1\",\"description\":\"d\"}}"),
      0, EINVAL, "metadata: missing required field 'task_id'" },
    { L(STEP_LINE("{\"task_id\":\"call_1\",\"message_index\":0,\"kind\":\"ai\",\"text\":\"t\","
                  "\"truncated\":false}")), 0, EINVAL,
      "content: missing required field 'tool_calls'" },
    { L(STEP_LINE("{\"task_id\":\"call_1\",\"message_index\":0,\"kind\":\"tool\",\"text\":\"t\","
                  "\"truncated\":false}")), 0, EINVAL,
      "content: missing required field 'tool_name'" },
    { L(STEP_LINE("{\"task_id\":\"call_1\",\"message_index\":0,\"kind\":\"bot\",\"text\":\"t\","
                  "\"truncated\":false}")), 0, EINVAL, "content.kind: must be one of ai, tool" },
    { L(STEP_LINE("{\"task_id\":\"call_1\",\"message_index\":-1,\"kind\":\"tool\",\"text\":\"t\","
                  "\"truncated\":false,\"tool_name\":\"ls\"}")), 0, EINVAL,
      "content.message_index: must be >= 0" },
    { L(STEP_LINE("{\"task_id\":\"call_1\",\"message_index\":0,\"kind\":\"tool\",\"text\":\"t\","
                  "\"truncated\":\"yes\",\"tool_name\":\"ls\"}")), 0, EINVAL,
      "content.truncated: expected boolean, got string" },
    { L(STEP_LINE("{\"task_id\":\"call_1\",\"message_index\":0,\"kind\":\"ai\",\"text\":\"t\","
                  "\"truncated\":false,\"tool_calls\":[{\"name\":\"ls\",\"args\":{}},{\"name\":\"x\"}]}")),
      0, EINVAL, "content.tool_calls[1]: missing required field 'args'" },
    { L("{\"event_type\":\"subagent.end\",\"content\":{\"task_id\":\"call_1\",\"status\":\"done\"},"
        "\"metadata\":{\"task_id\":\"call_1\"}}"), 0, EINVAL,
      "content.status: must be one of completed, failed, cancelled, timed_out" },
    { L("{\"event_type\":\"workspace_changes\",\"content\":\"2 files changed\"}"), 0, EINVAL,
      "metadata: missing required field 'workspace_changes'" },
    { L("{\"event_type\":\"workspace_changes\",\"content\":{\"s\":1},\"metadata\":"
        WS_META(WS_SUMMARY("1")) "}"), 0, EINVAL, "content: expected string, got object" },
    { L("{\"event_type\":\"workspace_changes\",\"content\":\"x\",\"metadata\":"
        WS_META(WS_SUMMARY("-1")) "}"), 0, EINVAL,
      "metadata.workspace_changes.summary.created: must be >= 0" },
    { L("{\"event_type\":\"workspace_changes\",\"content\":\"x\",\"metadata\":{\"workspace_changes\":"
        "{\"version\":2,\"summary\":{},\"files\":[],\"limits\":{}}}}"), 0, EINVAL,
      "metadata.workspace_changes.version: must equal 1" },
    { L(TERM_LINE("{\"status\":\"done\"}", "{\"protocol_version\":1,\"recovered\":false}")), 0,
      EINVAL, "content.status: must be one of success, error, interrupted, timeout" },
    { L(TERM_LINE("{\"status\":\"success\"}", "{\"protocol_version\":2,\"recovered\":false}")), 0,
      EINVAL, "metadata.protocol_version: must equal 1" },
    { L(TERM_LINE("{\"status\":\"success\"}", "{\"protocol_version\":1,\"recovered\":\"no\"}")), 0,
      EINVAL, "metadata.recovered: expected boolean, got string" },
    { L(TERM_LINE("{\"status\":\"success\"}", "{\"protocol_version\":1}")), 0, EINVAL,
      "metadata: missing required field 'recovered'" },
    { L(TERM_LINE("{\"status\":\"error\",\"error\":\"boom\"}",
                  "{\"protocol_version\":1,\"recovered\":false}")), 0, EINVAL,
      "content: unexpected field 'error'" },
    { L("{\"event_type\":\"middleware:guardrail\",\"content\":{\"name\":\"G\",\"hook\":\"h\","
        "\"action\":\"a\"}}"), 0, EINVAL, "content: missing required field 'changes'" },
    { L("{\"event_type\":\"middleware:guardrail\",\"content\":\"blocked\"}"), 0, EINVAL,
      "content: expected object, got string" },
    /* storage markers and duplicates inside values */
    { L("{\"event_type\":\"llm.error\",\"content\":\"x\",\"metadata\":{\"content_is_json\":true}}"), 0,
      EINVAL, "metadata.content_is_json is a storage marker reserved by the store" },
    { L("{\"event_type\":\"llm.error\",\"content\":\"x\",\"metadata\":{\"a\":1,\"content_is_dict\":false}}"),
      0, EINVAL, "metadata.content_is_dict is a storage marker reserved by the store" },
    { L("{\"event_type\":\"run.end\",\"content\":{\"a\":1,\"a\":2},\"metadata\":{\"status\":\"success\"}}"),
      0, EINVAL, "content: duplicate field 'a'" },
    { L("{\"event_type\":\"run.end\",\"content\":{},\"metadata\":{\"status\":\"success\",\"status\":\"x\"}}"),
      0, EINVAL, "metadata: duplicate field 'status'" },
};

static char *deep_line(size_t *len)
{
    size_t depth = 100000;
    const char *head = "{\"event_type\":\"run.end\",\"metadata\":{\"status\":\"success\"},\"content\":";
    size_t hl = strlen(head);
    char *s = malloc(hl + 2 * depth + 2);
    assert_non_null(s);
    memcpy(s, head, hl);
    memset(s + hl, '[', depth);
    memset(s + hl + depth, ']', depth);
    s[hl + 2 * depth] = '}';
    *len = hl + 2 * depth + 1;
    return s;
}

/* rs_fmt never cuts silently: a text that does not fit is -EOVERFLOW, marked "..." where
 * it was cut; one that fits exactly is whole. */
static void test_fmt_fails_instead_of_cutting(void **state)
{
    (void)state;
    char id[RS_ID_MAX + 1];
    char want[RS_ID_MAX + 2];
    memset(want, 'a', RS_ID_MAX);
    want[RS_ID_MAX] = '\0';
    assert_int_equal(rs_fmt(id, sizeof id, "%s", want), RS_ID_MAX);
    assert_string_equal(id, want);
    want[RS_ID_MAX] = 'b';
    want[RS_ID_MAX + 1] = '\0';
    assert_int_equal(rs_fmt(id, sizeof id, "%s", want), -EOVERFLOW);
    assert_int_equal(strlen(id), RS_ID_MAX);
    assert_string_equal(id + RS_ID_MAX - 3, "...");
    char tiny[2];
    assert_int_equal(rs_fmt(tiny, sizeof tiny, "%d", 42), -EOVERFLOW);
    assert_string_equal(tiny, ".");
    assert_int_equal(rs_fmt(tiny, 0, "x"), -EOVERFLOW);
}

static void test_bad_lines(void **state)
{
    (void)state;
    size_t n = sizeof bad_cases / sizeof bad_cases[0];
    assert_true(n >= 45);
    for (size_t i = 0; i < n; i++) {
        const struct bad_case *b = &bad_cases[i];
        rs_event_ctx c = ctx_default();
        if (b->max)
            c.max_bytes = b->max;
        const char *line = b->line;
        size_t len = b->len;
        char *deep = NULL;
        if (line == deep_marker)
            line = deep = deep_line(&len);
        rs_event *ev = (rs_event *)1;
        rs_err err = { 0 };
        int rc = rs_event_parse(&ev, line, len, &c, &err);
        if (rc != -b->code || !strstr(err.msg, b->reason) || err.code != rc)
            print_error("case %zu: %.200s\n  got %s '%s'\n  want %s '%s'\n", i, line,
                        rs_errno_name(rc), err.msg, rs_errno_name(b->code), b->reason);
        assert_int_equal(rc, -b->code);
        assert_int_equal(err.code, rc);
        assert_non_null(strstr(err.msg, b->reason));
        assert_null(ev);
        assert_null(strchr(err.msg, '\n'));
        free(deep);
    }
}

/* ---- accepted lines ----------------------------------------------------------------------- */

static const struct good_case {
    const char *line;
    const char *category;
} good_cases[] = {
    { "{\"event_type\":\"run.start\",\"content\":{\"chain\":\"lead_agent\"},"
      "\"metadata\":{\"caller\":\"lead_agent\",\"thread_id\":\"t1\",\"langgraph_step\":1}}", "trace" },
    { "{\"event_type\":\"run.start\",\"content\":{\"chain\":null},\"metadata\":{\"caller\":\"x\"}}",
      "trace" },
    { "{\"event_type\":\"run.end\",\"content\":{\"messages\":[{\"type\":\"ai\",\"content\":\"done\"}]},"
      "\"metadata\":{\"status\":\"success\"}}", "outputs" },
    { "{\"event_type\":\"run.end\",\"content\":null,\"metadata\":{\"status\":\"success\"}}", "outputs" },
    { "{\"event_type\":\"run.error\",\"content\":\"ValueError: bad input\","
      "\"metadata\":{\"error_type\":\"ValueError\"}}", "error" },
    { "{\"event_type\":\"llm.human.input\",\"content\":{\"type\":\"human\",\"content\":"
      "[{\"type\":\"text\",\"text\":\"What is the weather?\"}],\"additional_kwargs\":{},"
      "\"id\":\"m1\"},\"metadata\":{\"caller\":\"lead_agent\"}}", "message" },
    { AI_LINE("{\"type\":\"ai\",\"content\":\"\",\"tool_calls\":[{\"name\":\"web_search\","
              "\"args\":{\"query\":\"weather\"},\"id\":\"call_1\",\"type\":\"tool_call\"}],"
              "\"additional_kwargs\":{},\"response_metadata\":{\"model_name\":\"gpt\"},\"id\":\"run-1\"}",
              "{\"caller\":\"subagent:research\",\"usage\":{\"input_tokens\":10,\"output_tokens\":2,"
              "\"total_tokens\":12},\"latency_ms\":null,\"llm_call_index\":3,\"model\":\"gpt\"}"),
      "message" },
    { AI_LINE(AI_CONTENT, "{\"caller\":\"lead_agent\",\"usage\":{},\"latency_ms\":0,"
                          "\"llm_call_index\":1.0}"), "message" },
    { "{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":\"tool\",\"content\":\"sunny\","
      "\"tool_call_id\":\"call_1\",\"name\":\"web_search\",\"status\":\"success\"},\"metadata\":{}}",
      "message" },
    { "{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":\"human\",\"content\":\"x\","
      "\"tool_call_id\":null}}", "message" },
    { "{\"event_type\":\"llm.error\",\"content\":\"RateLimitError: slow down\"}", "trace" },
    { "{\"event_type\":\"context:memory\",\"content\":{\"content_sha256\":\"" SHA "\"}}", "context" },
    { "{\"event_type\":\"subagent.start\",\"content\":{\"task_id\":\"call_1\",\"description\":"
      "\"Research the weather\"},\"metadata\":{\"task_id\":\"call_1\"}}", "subagent" },
    { STEP_LINE("{\"task_id\":\"call_1\",\"message_index\":0,\"kind\":\"ai\",\"text\":\"Searching\","
                "\"truncated\":false,\"tool_calls\":[{\"name\":\"web_search\",\"args\":{\"q\":\"w\"},"
                "\"args_truncated\":false}]}"), "subagent" },
    { STEP_LINE("{\"task_id\":\"call_1\",\"message_index\":1,\"kind\":\"tool\",\"text\":\"sunny\","
                "\"truncated\":true,\"tool_name\":\"web_search\"}"), "subagent" },
    { "{\"event_type\":\"subagent.end\",\"content\":{\"task_id\":\"call_1\",\"status\":\"completed\","
      "\"model_name\":\"gpt\",\"usage\":{\"input_tokens\":1},\"result\":\"sunny\","
      "\"result_truncated\":false},\"metadata\":{\"task_id\":\"call_1\"}}", "subagent" },
    { "{\"event_type\":\"workspace_changes\",\"content\":\"1 file changed (+1 -1)\",\"metadata\":"
      WS_META(WS_SUMMARY("0")) "}", "workspace" },
    { TERM_LINE("{\"status\":\"success\"}", "{\"protocol_version\":1,\"recovered\":false}"), "trace" },
    { TERM_LINE("{\"status\":\"timeout\"}", "{\"protocol_version\":1.0,\"recovered\":true,\"x\":1}"),
      "trace" },
    /* DeerFlow's delivery receipt: the zero one recovery backfills, and a worker's */
    { "{\"event_type\":\"run.delivery\",\"content\":{\"presented\":0,\"paths\":[],\"by_tool\":{}}}",
      "outputs" },
    { "{\"event_type\":\"run.delivery\",\"content\":{\"presented\":1,\"paths\":[\"/o/a.md\"],"
      "\"by_tool\":{\"present_files\":[\"/o/a.md\"]},\"verification\":{\"source\":"
      "\"outputs_changed\"},\"stage\":\"presented\",\"satisfied\":true}}",
      "outputs" },
    { "{\"event_type\":\"middleware:loop_detection\",\"content\":" MW_CONTENT "}", "middleware" },
    { "{\"event_type\":\"middleware:guardrail\",\"category\":\"middleware\",\"content\":"
      "{\"name\":\"GuardrailMiddleware\",\"hook\":\"before_tool\",\"action\":\"deny\","
      "\"changes\":{}},\"metadata\":{\"k\":\"v\"}}", "middleware" },
    { "{\"event_type\":\"middleware:abcdefghijklmnopqrstu\",\"content\":" MW_CONTENT "}",
      "middleware" },
    /* the legacy alias is recognised and not checked */
    { "{\"event_type\":\"ai_message\",\"content\":\"old style\"}", "message" },
    /* envelope ids equal to the path, white space, escapes in keys */
    { " {\"thread_id\":\"t1\",\"run_id\":\"r1\",\"event_type\":\"llm.error\",\"content\":\"x\","
      "\"category\":\"trace\",\"created_at\":\"2026-01-02T03:04:05Z\"} ", "trace" },
    { "{\"event\\u005ftype\":\"llm.error\"}", "trace" },
};

/* Where the encoder says a line's content and metadata are is where a search of the line
 * alone finds them (rs_search_spans, independent of the encoder). */
static void spans_agree(const rs_buf *line, const rs_event_spans *sp)
{
    size_t c, cl, m, ml;
    assert_int_equal(rs_search_spans(line->buf, line->len, &c, &cl, &m, &ml), 0);
    assert_int_equal(sp->c, c);
    assert_int_equal(sp->clen, cl);
    assert_int_equal(sp->m, m);
    assert_int_equal(sp->mlen, ml);
}

static void test_good_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof good_cases / sizeof good_cases[0]; i++) {
        rs_event *ev = parse_ok(good_cases[i].line);
        assert_string_equal(ev->category, good_cases[i].category);
        assert_string_equal(ev->thread_id, "t1");
        assert_string_equal(ev->run_id, "r1");
        assert_true(ev->content.len > 0);
        assert_int_equal(ev->metadata.buf[0], '{');
        assert_int_equal(strlen(ev->created_at), RS_TIME_LEN);
        assert_int_equal(strlen(ev->created_db), 26);
        /* The line built at write time is the line rendered from the stored row. */
        for (int owned = 0; owned < 2; owned++) {
            const char *user = owned ? "alice" : NULL;
            rs_row row = {.thread_id = ev->thread_id, .run_id = ev->run_id, .seq = 42 + (int)i,
                          .event_type = ev->event_type, .category = ev->category,
                          .content = ev->content_db.buf, .content_len = ev->content_db.len,
                          .metadata = ev->metadata_db.buf, .metadata_len = ev->metadata_db.len,
                          .created_at = ev->created_db, .user_id = user};
            rs_buf built = RS_BUF_INIT, rendered = RS_BUF_INIT, copied = RS_BUF_INIT;
            assert_int_equal(rs_event_line(&built, ev, 42 + (int64_t)i, user), 0);
            rs_event_spans sp;
            assert_int_equal(rs_event_encode_spans(&rendered, &row, &sp, NULL), 0);
            assert_string_equal(built.buf, rendered.buf);
            spans_agree(&rendered, &sp);
            /* The same row known to be put's: its columns copied, not scanned. */
            row.canonical = 1;
            assert_int_equal(rs_event_encode_spans(&copied, &row, &sp, NULL), 0);
            assert_string_equal(built.buf, copied.buf);
            spans_agree(&copied, &sp);
            rs_buf_release(&built);
            rs_buf_release(&rendered);
            rs_buf_release(&copied);
        }
        rs_event_free(ev);
    }
}

static void test_every_contract_type_covered(void **state)
{
    (void)state;
    /* The types come from the contract file itself, read here with cJSON: a type added to
     * the contract fails this test until a good case covers it. */
    size_t len = 0;
    const char *text = rs_contract_text(contract, &len);
    cJSON *doc = cJSON_ParseWithLength(text, len);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "events");
    assert_true(cJSON_GetArraySize(events) > 0);
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "event_type"));
        assert_non_null(type);
        char needle[96];
        snprintf(needle, sizeof needle, "\"event_type\":\"%s\"", type);
        int found = 0;
        for (size_t i = 0; i < sizeof good_cases / sizeof good_cases[0]; i++)
            found |= strstr(good_cases[i].line, needle) != NULL;
        if (!found)
            fail_msg("no good case covers the contract's event type %s", type);
        assert_int_equal(rs_contract_is_singleton(contract, type),
                         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "singleton")));
    }
    cJSON_Delete(doc);
    assert_true(rs_contract_is_singleton(contract, "run.terminal"));
    assert_false(rs_contract_is_singleton(contract, "run.end"));
    const char *const *singles = NULL;
    assert_int_equal(rs_contract_singletons(contract, &singles), 2);
    assert_string_equal(singles[0], "run.terminal");
    assert_string_equal(singles[1], "run.delivery");
    assert_true(rs_contract_is_singleton(contract, "run.delivery"));
    assert_string_equal(rs_contract_category(contract, "run.delivery"), "outputs");
    assert_string_equal(rs_contract_category(contract, "ai_message"), "message");
    assert_string_equal(rs_contract_category(contract, "middleware:x"), "middleware");
    assert_null(rs_contract_category(contract, "nope"));
    const cJSON *req = rs_contract_required_metadata(contract, "run.terminal");
    assert_non_null(req);
    assert_int_equal(cJSON_GetArraySize(req), 2);
    assert_null(rs_contract_required_metadata(contract, "llm.error"));
    size_t tl = 0;
    assert_non_null(rs_contract_text(contract, &tl));
    assert_true(tl > 1000);
}

static void test_defaults_and_db_encoding(void **state)
{
    (void)state;
    /* string content: no markers, the DB column holds the decoded text */
    rs_event *ev = parse_ok("{\"event_type\":\"llm.error\",\"content\":\"say \\\"hi\\\"\\nbye \\u00e9\"}");
    assert_string_equal(ev->category, "trace");
    assert_string_equal(ev->content.buf, "\"say \\\"hi\\\"\\nbye \xc3\xa9\"");
    assert_string_equal(ev->content_db.buf, "say \"hi\"\nbye \xc3\xa9");
    assert_string_equal(ev->metadata.buf, "{}");
    assert_string_equal(ev->metadata_db.buf, "{}");
    assert_int_equal(ev->content.buf[0], '"');
    rs_event_free(ev);

    /* absent content is the empty string */
    ev = parse_ok("{\"event_type\":\"llm.error\"}");
    assert_string_equal(ev->content.buf, "\"\"");
    assert_int_equal(ev->content_db.len, 0);
    assert_string_equal(ev->metadata_db.buf, "{}");
    rs_event_free(ev);

    /* object content: both markers, appended after the given metadata */
    ev = parse_ok("{\"event_type\":\"run.start\",\"content\":{\"chain\":\"g\"},"
                  "\"metadata\":{\"caller\":\"x\"}}");
    assert_string_equal(ev->content.buf, "{\"chain\":\"g\"}");
    assert_string_equal(ev->content_db.buf, "{\"chain\":\"g\"}");
    assert_string_equal(ev->metadata.buf, "{\"caller\":\"x\"}");
    assert_string_equal(ev->metadata_db.buf,
                        "{\"caller\":\"x\",\"content_is_json\":true,\"content_is_dict\":true}");
    rs_event_free(ev);

    /* array / number / null content: content_is_json only; {} metadata */
    ev = parse_ok("{\"event_type\":\"run.end\",\"content\":[1,2],\"metadata\":{\"status\":\"success\"}}");
    assert_string_equal(ev->metadata_db.buf, "{\"status\":\"success\",\"content_is_json\":true}");
    rs_event_free(ev);
    rs_event_ctx c = ctx_default();
    c.allow_unknown = 1;
    ev = parse_ok_ctx("{\"event_type\":\"custom.number\",\"category\":\"trace\",\"content\":1.50}", &c);
    assert_string_equal(ev->content.buf, "1.50");
    assert_string_equal(ev->content_db.buf, "1.50");
    assert_string_equal(ev->metadata_db.buf, "{\"content_is_json\":true}");
    rs_event_free(ev);

    /* number lexemes survive the trip */
    ev = parse_ok("{\"event_type\":\"run.end\",\"content\":{\"a\":1.50,\"b\":1e5,"
                  "\"c\":12345678901234567890,\"d\":-0.0,\"e\":2E-3},"
                  "\"metadata\":{\"status\":\"success\",\"n\":1.50}}");
    assert_string_equal(ev->content.buf,
                        "{\"a\":1.50,\"b\":1e5,\"c\":12345678901234567890,\"d\":-0.0,\"e\":2E-3}");
    assert_string_equal(ev->content_db.buf, ev->content.buf);
    assert_string_equal(ev->metadata.buf, "{\"status\":\"success\",\"n\":1.50}");
    rs_event_free(ev);
}

static void test_context_rules(void **state)
{
    (void)state;
    rs_event_ctx c = ctx_default();
    rs_err err = { 0 };
    rs_event *ev = NULL;

    /* once/<type>: the type may be omitted, and must match when given */
    c.event_type = "run.terminal";
    ev = parse_ok_ctx("{\"content\":{\"status\":\"success\"},"
                      "\"metadata\":{\"protocol_version\":1,\"recovered\":false}}", &c);
    assert_string_equal(ev->event_type, "run.terminal");
    assert_string_equal(ev->category, "trace");
    rs_event_free(ev);
    const char *mismatch = "{\"event_type\":\"run.end\",\"content\":{},\"metadata\":{\"status\":\"success\"}}";
    assert_int_equal(rs_event_parse(&ev, mismatch, strlen(mismatch), &c, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "event_type 'run.end' does not match the file name 'run.terminal'"));

    /* unknown types: refused, or with allow_unknown accepted when they name a category */
    c = ctx_default();
    const char *unk = "{\"event_type\":\"my.custom\",\"content\":{\"x\":1}}";
    assert_int_equal(rs_event_parse(&ev, unk, strlen(unk), &c, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "unknown event type 'my.custom'"));
    c.allow_unknown = 1;
    assert_int_equal(rs_event_parse(&ev, unk, strlen(unk), &c, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "category is required"));
    ev = parse_ok_ctx("{\"event_type\":\"my.custom\",\"category\":\"custom\",\"content\":{\"x\":1}}", &c);
    assert_string_equal(ev->category, "custom");
    rs_event_free(ev);
    /* allow_unknown does not relax known types */
    const char *bad_ai = AI_LINE("{\"type\":\"ai\"}", AI_META);
    assert_int_equal(rs_event_parse(&ev, bad_ai, strlen(bad_ai), &c, &err), -EINVAL);

    /* an event type is a file name under types/ and once/: even allow_unknown refuses '/',
     * control characters, "." and ".." (as given, as escaped, and from the file name) */
    static const struct { const char *line; const char *reason; } names[] = {
        { "{\"event_type\":\"a/b\",\"category\":\"c\"}", "must not contain '/'" },
        { "{\"event_type\":\"a\\/b\",\"category\":\"c\"}", "must not contain '/'" },
        { "{\"event_type\":\"/\",\"category\":\"c\"}", "must not contain '/'" },
        { "{\"event_type\":\"middleware:a/b\",\"content\":" MW_CONTENT "}", "must not contain '/'" },
        { "{\"event_type\":\"a\\nb\",\"category\":\"c\"}", "control character 0x0a" },
        { "{\"event_type\":\"a\\u0001\",\"category\":\"c\"}", "control character 0x01" },
        { "{\"event_type\":\"a\\tb\",\"category\":\"c\"}", "control character 0x09" },
        { "{\"event_type\":\"a\x7f\",\"category\":\"c\"}", "control character 0x7f" },
        { "{\"event_type\":\".\",\"category\":\"c\"}", "'.' cannot be a file name" },
        { "{\"event_type\":\"..\",\"category\":\"c\"}", "'..' cannot be a file name" },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        for (int allow = 0; allow <= 1; allow++) {
            c.allow_unknown = allow;
            ev = (rs_event *)1;
            int rc = rs_event_parse(&ev, names[i].line, strlen(names[i].line), &c, &err);
            if (rc != -EINVAL || !strstr(err.msg, names[i].reason))
                print_error("case %zu: %s\n  got %d '%s'\n", i, names[i].line, rc, err.msg);
            assert_int_equal(rc, -EINVAL);
            assert_null(ev);
            assert_non_null(strstr(err.msg, names[i].reason));
        }
    }
    ev = parse_ok_ctx("{\"event_type\":\"a.b:c-d_e..f\",\"category\":\"c\"}", &c);
    rs_event_free(ev);
    c.event_type = "x\ny";
    const char *bare = "{\"category\":\"c\"}";
    assert_int_equal(rs_event_parse(&ev, bare, strlen(bare), &c, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "control character 0x0a"));
    c.event_type = "..";
    assert_int_equal(rs_event_parse(&ev, bare, strlen(bare), &c, &err), -EINVAL);
    c.event_type = NULL;

    /* a reason stays one line whatever the input quoted in it: category, decoded keys */
    c.allow_unknown = 0;
    static const char *const multiline[] = {
        "{\"event_type\":\"llm.error\",\"category\":\"a\\nb\"}",
        "{\"event_type\":\"run.end\",\"content\":{\"a\\nb\":1,\"a\\nb\":2},"
        "\"metadata\":{\"status\":\"success\"}}",
        TERM_LINE("{\"status\":\"success\",\"x\\ny\":1}",
                  "{\"protocol_version\":1,\"recovered\":false}"),
    };
    for (size_t i = 0; i < sizeof multiline / sizeof multiline[0]; i++) {
        assert_int_equal(rs_event_parse(&ev, multiline[i], strlen(multiline[i]), &c, &err),
                         -EINVAL);
        assert_null(strchr(err.msg, '\n'));
        assert_non_null(strstr(err.msg, "a?b") ? err.msg : strstr(err.msg, "x?y"));
    }

    /* the limit: exactly max_bytes is fine */
    c = ctx_default();
    const char *line = "{\"event_type\":\"llm.error\",\"content\":\"0123456789012345678901\"}";
    c.max_bytes = strlen(line);
    ev = parse_ok_ctx(line, &c);
    rs_event_free(ev);
    c.max_bytes = strlen(line) - 1;
    assert_int_equal(rs_event_parse(&ev, line, strlen(line), &c, &err), -EMSGSIZE);
    assert_int_equal(err.code, -EMSGSIZE);
}

static void test_created_at(void **state)
{
    (void)state;
    rs_event *ev = parse_ok("{\"event_type\":\"llm.error\",\"created_at\":\"2026-01-02T11:04:05+08:00\"}");
    assert_string_equal(ev->created_at, "2026-01-02T03:04:05.000000+00:00");
    assert_string_equal(ev->created_db, "2026-01-02 03:04:05.000000");
    rs_event_free(ev);

    static const struct { const char *in, *canon, *db; } t[] = {
        { "2026-01-02T03:04:05.678901+00:00", "2026-01-02T03:04:05.678901+00:00",
          "2026-01-02 03:04:05.678901" },
        { "2026-01-02 03:04:05", "2026-01-02T03:04:05.000000+00:00", "2026-01-02 03:04:05.000000" },
        { "2026-01-02T03:04", "2026-01-02T03:04:00.000000+00:00", NULL },
        { "2026-01-02t03:04:05z", "2026-01-02T03:04:05.000000+00:00", NULL },
        { "2026-01-02T03:04:05.5Z", "2026-01-02T03:04:05.500000+00:00", NULL },
        { "2026-01-02T03:04:05.123456789Z", "2026-01-02T03:04:05.123456+00:00", NULL },
        { "2026-01-02T03:04:05.999999999Z", "2026-01-02T03:04:05.999999+00:00", NULL },
        { "2026-01-01T00:30:00+0100", "2025-12-31T23:30:00.000000+00:00", NULL },
        { "2025-12-31T23:30:00-05:30", "2026-01-01T05:00:00.000000+00:00", NULL },
        { "2024-02-29T12:00:00Z", "2024-02-29T12:00:00.000000+00:00", NULL },
        { "2000-02-29T23:00:00-02:00", "2000-03-01T01:00:00.000000+00:00", NULL },
        { "0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000+00:00", NULL },
        { "9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999+00:00", NULL },
        { "0001-01-01T05:00:00+04:59", "0001-01-01T00:01:00.000000+00:00", NULL },
        { "1969-12-31T23:59:59Z", "1969-12-31T23:59:59.000000+00:00", NULL },
        { "2026-03-04 05:06:07.123456", "2026-03-04T05:06:07.123456+00:00",
          "2026-03-04 05:06:07.123456" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char canon[RS_TIME_LEN + 1], db[27];
        int rc = rs_time_parse(t[i].in, strlen(t[i].in), canon, db);
        if (rc)
            print_error("refused %s\n", t[i].in);
        assert_int_equal(rc, 0);
        assert_string_equal(canon, t[i].canon);
        if (t[i].db)
            assert_string_equal(db, t[i].db);
    }
    static const char *bad[] = {
        "", "2026", "2026-01-02", "2026-01-02T", "2026-01-02T03", "2026-02-30T00:00:00Z",
        "2025-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-32T00:00:00Z",
        "2026-01-01T24:00:00Z", "2026-01-01T25:00:00Z", "2026-01-01T00:60:00Z",
        "2026-01-01T23:59:60Z", "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00.1234567890Z",
        "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00+01:60", "2026-01-01T00:00:00+1",
        "2026-01-01T00:00:00+01:0", "2026-01-01T00:00:00ZZ", "2026-01-01T00:00:00 ",
        "2026-01-01X00:00:00", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00+00:01",
        "9999-12-31T23:59:59-00:01", "26-01-01T00:00:00Z", "2026-1-01T00:00:00Z",
        "2026-01-01T0:00:00Z", "+2026-01-01T00:00:00Z", "2026-01-01T00:00:00+01:00:00",
        "garbage", "2026-01-01T00:00:0a",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char canon[RS_TIME_LEN + 1];
        if (rs_time_parse(bad[i], strlen(bad[i]), canon, NULL) != -EINVAL)
            print_error("accepted %s\n", bad[i]);
        assert_int_equal(rs_time_parse(bad[i], strlen(bad[i]), canon, NULL), -EINVAL);
    }
    /* a length, not a C string */
    char canon[RS_TIME_LEN + 1];
    assert_int_equal(rs_time_parse("2026-01-02T03:04:05Zjunk", 20, canon, NULL), 0);
    assert_string_equal(canon, "2026-01-02T03:04:05.000000+00:00");
    /* every prefix in a buffer of exactly its size (ASan: no byte past len is read; the
     * parser used to look at s[4] and s[7] of a 4..7-byte input) */
    const char *full = "2026-01-02T03:04:05.123456+05:30";
    for (size_t n = 0; n <= strlen(full); n++) {
        char *exact = malloc(n ? n : 1);
        assert_non_null(exact);
        memcpy(exact, full, n);
        int rc = rs_time_parse(exact, n, canon, NULL);
        int want_ok = n == 16 || n == 19 || (n >= 21 && n <= 26) || n == 32;
        if (rc != (want_ok ? 0 : -EINVAL))
            print_error("prefix %zu: got %d\n", n, rc);
        assert_int_equal(rc, want_ok ? 0 : -EINVAL);
        free(exact);
    }

    char now[RS_TIME_LEN + 1], nowdb[27];
    rs_time_now(now, nowdb);
    assert_int_equal(strlen(now), RS_TIME_LEN);
    assert_int_equal(rs_time_parse(now, strlen(now), canon, NULL), 0);
    assert_string_equal(canon, now);
    assert_memory_equal(now, nowdb, 10);
    assert_memory_equal(now + 11, nowdb + 11, 15);
}

/* A created_at as a file's time: every stored form, offsets applied; none outside int64 ns. */
static void test_time_ns(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int rc;
        int64_t ns;
    } t[] = {
        { "1970-01-01 00:00:00", 0, 0 },
        { "2025-06-01 00:00:00.500000", 0, 1748736000500000000LL },
        { "2025-06-01T00:00:00.5Z", 0, 1748736000500000000LL },
        { "2025-03-01T10:00:00.000001+02:00", 0, 1740816000000001000LL },
        { "1969-12-31T23:59:59.999999Z", 0, -1000LL },
        { "2262-04-11T23:47:16Z", -ERANGE, 0 },
        { "1677-09-21T00:12:43Z", -ERANGE, 0 },
        { "", -EINVAL, 0 },
        { NULL, -EINVAL, 0 },
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        int64_t ns = 0;
        int rc = rs_time_ns(t[i].in, &ns);
        if (rc != t[i].rc || (!rc && ns != t[i].ns))
            print_error("%s: got %d %lld\n", t[i].in ? t[i].in : "NULL", rc, (long long)ns);
        assert_int_equal(rc, t[i].rc);
        if (!rc)
            assert_int_equal(ns, t[i].ns);
    }
}

/* ---- encoding ----------------------------------------------------------------------------- */

static void expect_line(const rs_row *row, const char *want)
{
    rs_buf b = RS_BUF_INIT;
    rs_err err = { 0 };
    assert_int_equal(rs_buf_addstr(&b, "previous\n"), 0);
    assert_int_equal(rs_event_encode(&b, row, &err), 0);
    if (strcmp(b.buf + 9, want))
        print_error("got  %s\nwant %s\n", b.buf + 9, want);
    assert_string_equal(b.buf + 9, want);
    assert_int_equal(b.len, 9 + strlen(want));
    rs_buf_release(&b);
}

static rs_row row_of(const char *content, const char *metadata, const char *created_at)
{
    rs_row r = { .thread_id = "t1", .run_id = "r1", .seq = 7, .event_type = "llm.ai.response",
                 .category = "message", .content = content,
                 .content_len = content ? strlen(content) : 0, .metadata = metadata,
                 .metadata_len = metadata ? strlen(metadata) : 0, .created_at = created_at,
                 .user_id = "u1" };
    return r;
}

/* Rows of other writers, each shape the general encoder handles: spans as found. */
static void test_encode_spans(void **state)
{
    (void)state;
    const char *ts = "2026-03-04 05:06:07.123456";
    const struct {
        const char *content, *metadata;
    } rows[] = {
        {"{\"type\": \"ai\", \"content\": \"h\\u00e9\"}", "{\"content_is_json\": true}"},
        {"plain \"quoted\" \\ text\n", "{\"caller\": \"x\"}"},
        {NULL, NULL},
        {"[1, 2]", "[1, {\"a\": \"}\"}]"},
        {"x", "not json at all"},
        {"not json", "{\"content_is_json\": true, \"n\": {\"deep\": [1]}}"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        rs_row r = row_of(rows[i].content, rows[i].metadata, ts);
        rs_buf line = RS_BUF_INIT;
        rs_event_spans sp;
        assert_int_equal(rs_event_encode_spans(&line, &r, &sp, NULL), 0);
        spans_agree(&line, &sp);
        rs_buf_release(&line);
    }
}

#define AI_EXPECTED \
    "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":7,\"event_type\":\"llm.ai.response\"," \
    "\"category\":\"message\",\"content\":{\"type\":\"ai\",\"content\":\"h\xc3\xa9\"," \
    "\"tool_calls\":[]},\"metadata\":{\"caller\":\"lead_agent\"}," \
    "\"created_at\":\"2026-03-04T05:06:07.123456+00:00\",\"user_id\":\"u1\"}\n"

static void test_encode_deerflow_and_runfs_rows(void **state)
{
    (void)state;
    /* A row DeerFlow wrote: Python json.dumps separators, \u escapes, naive DATETIME text. */
    rs_row df = row_of("{\"type\": \"ai\", \"content\": \"h\\u00e9\", \"tool_calls\": []}",
                       "{\"caller\": \"lead_agent\", \"content_is_json\": true, \"content_is_dict\": true}",
                       "2026-03-04 05:06:07.123456");
    expect_line(&df, AI_EXPECTED);

    /* The same values written through runfs. */
    rs_event_ctx c = ctx_default();
    c.allow_unknown = 0;
    rs_event *ev = NULL;
    rs_err err = { 0 };
    const char *line = "{\"event_type\":\"llm.ai.response\",\"content\":{\"type\":\"ai\",\"content\":"
                       "\"h\xc3\xa9\",\"tool_calls\":[]},\"metadata\":{\"caller\":\"lead_agent\","
                       "\"usage\":{},\"latency_ms\":null,\"llm_call_index\":1},"
                       "\"created_at\":\"2026-03-04T06:06:07.123456+01:00\"}";
    assert_int_equal(rs_event_parse(&ev, line, strlen(line), &c, &err), 0);
    assert_string_equal(ev->created_db, "2026-03-04 05:06:07.123456");
    rs_row rf = row_of(ev->content_db.buf, ev->metadata_db.buf, ev->created_db);
    rf.content_len = ev->content_db.len;
    rf.metadata_len = ev->metadata_db.len;
    expect_line(&rf,
                "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":7,\"event_type\":\"llm.ai.response\","
                "\"category\":\"message\",\"content\":{\"type\":\"ai\",\"content\":\"h\xc3\xa9\","
                "\"tool_calls\":[]},\"metadata\":{\"caller\":\"lead_agent\",\"usage\":{},"
                "\"latency_ms\":null,\"llm_call_index\":1},"
                "\"created_at\":\"2026-03-04T05:06:07.123456+00:00\",\"user_id\":\"u1\"}\n");
    rs_event_free(ev);

    /* DeerFlow and runfs rows of the same values render the same bytes. */
    rs_row same = row_of("{\"type\":\"ai\",\"content\":\"h\xc3\xa9\",\"tool_calls\":[]}",
                         "{\"caller\":\"lead_agent\",\"content_is_json\":true,\"content_is_dict\":true}",
                         "2026-03-04T05:06:07.123456+00:00");
    expect_line(&same, AI_EXPECTED);
}

static void test_encode_strings_and_foreign_rows(void **state)
{
    (void)state;
    const char *head = "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":7,\"event_type\":"
                       "\"llm.ai.response\",\"category\":\"message\",\"content\":";
    const char *tail_empty = ",\"metadata\":{},\"created_at\":\"2026-03-04T05:06:07.000000+00:00\","
                             "\"user_id\":\"u1\"}\n";
    char want[1024];
    const char *ts = "2026-03-04 05:06:07";

    /* string content with quotes and newlines */
    rs_row r = row_of("say \"hi\"\nbye\t\x7f \xe2\x80\xa8", "{}", ts);
    snprintf(want, sizeof want, "%s%s%s", head, "\"say \\\"hi\\\"\\nbye\\t\x7f \xe2\x80\xa8\"", tail_empty);
    expect_line(&r, want);

    /* a string that looks like JSON stays a string without a marker */
    r = row_of("{\"a\": 1}", "{}", ts);
    snprintf(want, sizeof want, "%s%s%s", head, "\"{\\\"a\\\": 1}\"", tail_empty);
    expect_line(&r, want);

    /* a false marker is no marker */
    r = row_of("[1]", "{\"content_is_json\": false}", ts);
    snprintf(want, sizeof want, "%s%s%s", head, "\"[1]\"", tail_empty);
    expect_line(&r, want);

    /* content_is_dict alone decodes too */
    r = row_of("{\"a\": [1, 2.50]}", "{\"content_is_dict\": true}", ts);
    snprintf(want, sizeof want, "%s%s%s", head, "{\"a\":[1,2.50]}", tail_empty);
    expect_line(&r, want);

    /* a marker over undecodable text: the raw text as a string */
    r = row_of("{not json", "{\"content_is_json\": true}", ts);
    snprintf(want, sizeof want, "%s%s%s", head, "\"{not json\"", tail_empty);
    expect_line(&r, want);

    /* Python's NaN passes through on read */
    r = row_of("{\"x\": NaN, \"y\": -Infinity}", "{\"content_is_json\": true, \"content_is_dict\": true}", ts);
    snprintf(want, sizeof want, "%s%s%s", head, "{\"x\":NaN,\"y\":-Infinity}", tail_empty);
    expect_line(&r, want);

    /* invalid UTF-8 in a stored string: U+FFFD */
    r = row_of("bad \xff byte", NULL, ts);
    snprintf(want, sizeof want, "%s%s%s", head, "\"bad \xef\xbf\xbd byte\"", tail_empty);
    expect_line(&r, want);

    /* metadata that is no object shows as what it holds: a JSON value as itself, text that
     * is no JSON as a string (not {}, which would claim an empty object) */
    static const char *const other[][2] = {
        {"{broken", "\"{broken\""}, {"not json", "\"not json\""}, {"", "\"\""},
        {"null", "null"}, {"[1, 2.50]", "[1,2.50]"}, {" \"s\" ", "\"s\""}, {"42", "42"},
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        r = row_of("x", other[i][0], ts);
        snprintf(want, sizeof want, "%s\"x\",\"metadata\":%s,\"created_at\":\"2026-03-04T05:06:07."
                 "000000+00:00\",\"user_id\":\"u1\"}\n", head, other[i][1]);
        expect_line(&r, want);
    }

    /* SQL NULL content is null; no owner means no user_id; offsets converted */
    r = row_of(NULL, "{\"k\": \"v\", \"content_is_json\": true}", "2026-03-04T07:06:07+02:00");
    r.user_id = NULL;
    r.seq = 1234567890123LL;
    expect_line(&r, "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":1234567890123,\"event_type\":"
                     "\"llm.ai.response\",\"category\":\"message\",\"content\":null,"
                     "\"metadata\":{\"k\":\"v\"},\"created_at\":\"2026-03-04T05:06:07.000000+00:00\"}\n");

    /* a created_at that cannot be parsed is shown as stored rather than failing the read */
    r = row_of("x", "{}", "not a time");
    r.user_id = NULL;
    snprintf(want, sizeof want, "%s\"x\",\"metadata\":{},\"created_at\":\"not a time\"}\n", head);
    expect_line(&r, want);

    /* large metadata (over the stack buffer) with markers */
    rs_buf big = RS_BUF_INIT;
    rs_buf wantb = RS_BUF_INIT;
    assert_int_equal(rs_buf_addstr(&big, "{\"pad\": \""), 0);
    for (int i = 0; i < 500; i++)
        assert_int_equal(rs_buf_addstr(&big, "0123456789"), 0);
    assert_int_equal(rs_buf_addstr(&big, "\", \"content_is_json\": true}"), 0);
    r = row_of("[1, 2]", big.buf, ts);
    assert_int_equal(rs_buf_addf(&wantb, "%s[1,2],\"metadata\":{\"pad\":\"", head), 0);
    for (int i = 0; i < 500; i++)
        assert_int_equal(rs_buf_addstr(&wantb, "0123456789"), 0);
    assert_int_equal(rs_buf_addstr(&wantb, "\"},\"created_at\":\"2026-03-04T05:06:07.000000+00:00\","
                                           "\"user_id\":\"u1\"}\n"), 0);
    expect_line(&r, wantb.buf);

    /* large metadata that is no JSON: the text as a string, from the large path too */
    rs_buf_reset(&big);
    rs_buf_reset(&wantb);
    for (int i = 0; i < 500; i++)
        assert_int_equal(rs_buf_addstr(&big, "not json "), 0);
    r = row_of("x", big.buf, ts);
    assert_int_equal(rs_buf_addf(&wantb, "%s\"x\",\"metadata\":\"%s\",\"created_at\":\"2026-03-04T"
                                         "05:06:07.000000+00:00\",\"user_id\":\"u1\"}\n", head, big.buf), 0);
    expect_line(&r, wantb.buf);
    rs_buf_release(&big);
    rs_buf_release(&wantb);
}

/* Whatever parse accepts, encode renders as a line that reads back to the same content. */
static void test_roundtrip(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof good_cases / sizeof good_cases[0]; i++) {
        rs_event *ev = parse_ok(good_cases[i].line);
        rs_row r = { .thread_id = ev->thread_id, .run_id = ev->run_id, .seq = (int64_t)i + 1,
                     .event_type = ev->event_type, .category = ev->category,
                     .content = ev->content_db.buf, .content_len = ev->content_db.len,
                     .metadata = ev->metadata_db.buf, .metadata_len = ev->metadata_db.len,
                     .created_at = ev->created_db, .user_id = NULL };
        rs_buf b = RS_BUF_INIT;
        assert_int_equal(rs_event_encode(&b, &r, NULL), 0);
        rs_buf want = RS_BUF_INIT;
        assert_int_equal(rs_buf_addf(&want, ",\"content\":%s,\"metadata\":%s,\"created_at\":\"%s\"}\n",
                                     ev->content.buf, ev->metadata.buf, ev->created_at), 0);
        if (!strstr(b.buf, want.buf))
            print_error("line %s\nlacks %s\n", b.buf, want.buf);
        assert_non_null(strstr(b.buf, want.buf));
        /* the line is itself canonical JSON */
        rs_buf c = RS_BUF_INIT;
        assert_int_equal(rs_json_canon(&c, b.buf, b.len - 1, 0, NULL), 0);
        assert_int_equal(c.len, b.len - 1);
        rs_buf_release(&c);
        rs_buf_release(&want);
        rs_buf_release(&b);
        rs_event_free(ev);
    }
}

static void test_contract_loading(void **state)
{
    (void)state;
    static const struct { const char *text, *reason; } bad[] = {
        { "{", "not valid JSON" },
        { "[]", "not a JSON object" },
        { "{\"events\":[]}", "'events' must be a non-empty array" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":true}]}",
          "missing 'metadata_schema'" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":"
          "{\"requried\":[\"x\"]},\"metadata_schema\":true}]}", "unsupported schema keyword 'requried'" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":"
          "{\"type\":\"strnig\"},\"metadata_schema\":true}]}", "unknown type" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":"
          "{\"properties\":{\"x\":{\"minItems\":1}}},\"metadata_schema\":true}]}",
          "a.content_schema.properties.x: unsupported schema keyword 'minItems'" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":"
          "{\"pattern\":\"(\"},\"metadata_schema\":true}]}", "does not compile" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":"
          "{\"minLength\":-1},\"metadata_schema\":true}]}", "'minLength' must be a non-negative integer" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":1,"
          "\"metadata_schema\":true}]}", "a schema must be an object, true or false" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":true,"
          "\"metadata_schema\":true},{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":true,"
          "\"metadata_schema\":true}]}", "duplicate event_type" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":true,"
          "\"metadata_schema\":true}],\"legacy_event_aliases\":[{\"event_type\":\"b\","
          "\"canonical_event_type\":\"z\"}]}", "canonical_event_type 'z' is not an event" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"content_schema\":true,"
          "\"metadata_schema\":true}],\"dynamic_event_patterns\":[{\"pattern\":\"mw:{x}\","
          "\"category\":\"m\",\"content_schema\":true,\"metadata_schema\":true}]}",
          "must be a prefix followed by {tag}" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"c\",\"singelton\":true,"
          "\"content_schema\":true,\"metadata_schema\":true}]}", "events[0]: unknown key 'singelton'" },
        { "{\"version\":2,\"events\":[]}", "unsupported version" },
        { "{\"events\":[{\"event_type\":\"a\",\"category\":\"categorycategoryc\","
          "\"content_schema\":true,\"metadata_schema\":true}]}", "'category' is too long" },
    };
    char path[512];
    unit_tmp_template(path, sizeof path, "runfs-contract");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(bad[i].text, f);
        fclose(f);
        rs_contract *c = (rs_contract *)1;
        rs_err err = { 0 };
        int rc = rs_contract_load(&c, path, &err);
        if (rc != -EINVAL || !strstr(err.msg, bad[i].reason))
            print_error("contract %zu: rc %d '%s', want '%s'\n", i, rc, err.msg, bad[i].reason);
        assert_int_equal(rc, -EINVAL);
        assert_null(c);
        assert_non_null(strstr(err.msg, bad[i].reason));
    }
    /* a small custom contract: else branch, maximum, additionalProperties schema, false */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"events\":[{\"event_type\":\"t.x\",\"category\":\"trace\",\"content_schema\":"
          "{\"type\":\"object\",\"if\":{\"required\":[\"a\"]},\"then\":{\"properties\":{\"a\":"
          "{\"maximum\":3}}},\"else\":{\"required\":[\"b\"]},\"additionalProperties\":"
          "{\"type\":\"integer\"},\"properties\":{\"s\":{\"type\":\"string\",\"maxLength\":2},"
          "\"no\":false}},\"metadata_schema\":true}]}", f);
    fclose(f);
    rs_contract *c = NULL;
    rs_err err = { 0 };
    assert_int_equal(rs_contract_load(&c, path, &err), 0);
    static const struct { const char *content; const char *reason; } ck[] = {
        { "{\"a\":3}", NULL },
        { "{\"a\":4}", "content.a: must be <= 3" },
        { "{\"b\":1}", NULL },
        { "{\"c\":1}", "content: missing required field 'b'" },
        { "{\"a\":1,\"s\":\"\xc3\xa9\xc3\xa9\"}", NULL },            /* 2 code points, 4 bytes */
        { "{\"a\":1,\"s\":\"abc\"}", "content.s: longer than 2 characters" },
        { "{\"a\":1,\"x\":1.5}", "content.x: expected integer, got number" },
        { "{\"a\":1,\"x\":true}", "content.x: expected integer, got boolean" },
        { "{\"a\":1,\"no\":1}", "content.no: no value is allowed here" },
    };
    /* through the one gate in, as a line of an event of that type */
    rs_event_ctx cx = {
        .contract = c, .thread_id = "t1", .run_id = "r1", .max_bytes = RS_DEFAULT_MAX_EVENT};
    for (size_t i = 0; i < sizeof ck / sizeof ck[0]; i++) {
        memset(&err, 0, sizeof err);
        rs_buf line = RS_BUF_INIT;
        assert_int_equal(rs_buf_addf(&line, "{\"event_type\":\"t.x\",\"content\":%s}",
                                     ck[i].content),
                         0);
        rs_event *ev = NULL;
        int rc = rs_event_parse(&ev, line.buf, line.len, &cx, &err);
        rs_event_free(ev);
        if (ck[i].reason == NULL ? rc != 0 : (rc != -EINVAL || !strstr(err.msg, ck[i].reason)))
            print_error("check %s: rc %d '%s'\n", ck[i].content, rc, err.msg);
        rs_buf_release(&line);
        if (ck[i].reason)
            assert_non_null(strstr(err.msg, ck[i].reason));
        assert_int_equal(rc, ck[i].reason ? -EINVAL : 0);
    }
    rs_contract_free(c);
    unlink(path);
    assert_int_equal(rs_contract_load(&c, "/nonexistent/contract.json", &err), -ENOENT);
}

/* Random mutations of valid lines: never a crash, a leak, or a refusal without a reason. */
static void test_mutations(void **state)
{
    (void)state;
    unsigned seed = 12345;
    rs_event_ctx c = ctx_default();
    c.allow_unknown = 1;
    char buf[4096];
    for (size_t i = 0; i < sizeof good_cases / sizeof good_cases[0]; i++) {
        size_t len = strlen(good_cases[i].line);
        if (len >= sizeof buf)
            continue;
        for (int k = 0; k < 300; k++) {
            memcpy(buf, good_cases[i].line, len);
            int edits = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 3;
            for (int e = 0; e < edits; e++) {
                seed = seed * 1103515245 + 12345;
                size_t at = (seed >> 8) % len;
                static const char pool[] = "\"\\{}[],:0-e .a\x80\xc3";
                buf[at] = pool[(seed >> 20) % (sizeof pool - 1)];
            }
            rs_event *ev = NULL;
            rs_err err = { 0 };
            int rc = rs_event_parse(&ev, buf, len, &c, &err);
            if (rc == 0) {
                rs_row r = { "t1", "r1", 1, ev->event_type, ev->category, ev->content_db.buf,
                             ev->content_db.len, ev->metadata_db.buf, ev->metadata_db.len,
                             ev->created_db, NULL, 0, 0 };
                rs_buf b = RS_BUF_INIT, copied = RS_BUF_INIT;
                assert_int_equal(rs_event_encode(&b, &r, NULL), 0);
                /* Stored by put, the row's columns are copied into the same line. */
                r.canonical = 1;
                assert_int_equal(rs_event_encode(&copied, &r, NULL), 0);
                assert_string_equal(copied.buf, b.buf);
                rs_buf_release(&b);
                rs_buf_release(&copied);
                rs_event_free(ev);
            } else {
                assert_true(rc == -EINVAL);
                assert_true(err.msg[0] != '\0');
                assert_null(ev);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt_fails_instead_of_cutting),
        cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_good_lines),
        cmocka_unit_test(test_every_contract_type_covered),
        cmocka_unit_test(test_defaults_and_db_encoding),
        cmocka_unit_test(test_context_rules),
        cmocka_unit_test(test_created_at),
        cmocka_unit_test(test_time_ns),
        cmocka_unit_test(test_encode_deerflow_and_runfs_rows),
        cmocka_unit_test(test_encode_strings_and_foreign_rows),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_contract_loading),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_encode_spans),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
