/* test_search.c — the query language: how a query splits into terms, which queries are
 * refused and why, where a canonical line's content and metadata lie, and what matches. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "search.h"
#include "rs_util.h"

static rs_search *parse_ok(const char *query)
{
    rs_search *q = NULL;
    rs_err err = {0};
    assert_int_equal(rs_search_parse(&q, query, &err), 0);
    return q;
}

static void test_terms(void **state)
{
    (void)state;
    rs_search *q = parse_ok("  Connection \"Two  Words\" -Skip type:llm.* type:run.start "
                            "category:message \"type:quoted\" - ");
    assert_int_equal(q->n, 8);
    assert_int_equal(q->terms[0].kind, RS_TERM_TEXT);
    assert_string_equal(q->terms[0].text, "connection");
    assert_string_equal(q->terms[1].text, "two  words");
    assert_true(q->terms[2].negate);
    assert_string_equal(q->terms[2].text, "skip");
    assert_int_equal(q->terms[3].kind, RS_TERM_TYPE_PREFIX);
    assert_string_equal(q->terms[3].text, "llm.");
    assert_int_equal(q->terms[4].kind, RS_TERM_TYPE);
    assert_string_equal(q->terms[4].text, "run.start");
    assert_int_equal(q->terms[5].kind, RS_TERM_CATEGORY);
    assert_int_equal(q->terms[6].kind, RS_TERM_TEXT); /* quoted: text */
    assert_string_equal(q->terms[6].text, "type:quoted");
    assert_int_equal(q->terms[7].kind, RS_TERM_TEXT); /* a lone '-' is text */
    assert_false(q->terms[7].negate);
    assert_string_equal(q->terms[7].text, "-");
    rs_search_free(q);
}

static void test_by_run(void **state)
{
    (void)state;
    rs_search *q = parse_ok("by:run refused");
    assert_true(rs_search_by_run(q));
    assert_int_equal(q->n, 1); /* how the answer is told, not a term */
    assert_string_equal(q->terms[0].text, "refused");
    rs_search_free(q);
    q = parse_ok("\"by:run\" -by:run By:Run");
    assert_false(rs_search_by_run(q)); /* quoted, excluded or spelt otherwise: text */
    assert_int_equal(q->n, 3);
    assert_true(q->terms[1].negate);
    rs_search_free(q);
    rs_err err = {0};
    assert_int_equal(rs_search_parse(&q, "by:run", &err), -EINVAL);
    assert_non_null(strstr(err.msg, "no terms"));
}

static void test_refused(void **state)
{
    (void)state;
    rs_search *q = NULL;
    rs_err err = {0};
    assert_int_equal(rs_search_parse(&q, "\"open", &err), -EINVAL);
    assert_non_null(strstr(err.msg, "unbalanced quote"));
    assert_int_equal(rs_search_parse(&q, "a \"b c\" \"d", &err), -EINVAL);
    assert_int_equal(rs_search_parse(&q, "   ", &err), -EINVAL);
    assert_non_null(strstr(err.msg, "no terms"));
    assert_int_equal(rs_search_parse(&q, "type:", &err), -EINVAL);
    char long_q[RS_SEARCH_MAX + 2];
    memset(long_q, 'a', sizeof long_q - 1);
    long_q[sizeof long_q - 1] = '\0';
    assert_int_equal(rs_search_parse(&q, long_q, &err), -ENAMETOOLONG);
    long_q[RS_SEARCH_MAX] = '\0';
    rs_search_free(parse_ok(long_q));
}

static const char line[] =
    "{\"thread_id\":\"t\",\"run_id\":\"r\",\"seq\":1,\"event_type\":\"llm.error\",\"category\":"
    "\"trace\",\"content\":{\"a\":\"x,\\\"metadata\\\":{\",\"metadata\":[1,{\"b\":\"}\"}]},"
    "\"metadata\":{\"Caller\":\"Lead\",\"n\":{\"deep\":\"Ünï\"}},\"created_at\":\"2026-01-01T00:00:"
    "00.000000+00:00\"}\n";

/* query against one record of thread t, run r, category trace. */
static int match_line(const char *query, const char *type, const char *text, size_t len)
{
    rs_search *q = parse_ok(query);
    rs_record rec = {.seq = 1,
                     .thread_id = "t",
                     .run_id = "r",
                     .event_type = type,
                     .category = "trace",
                     .line = text,
                     .line_len = len};
    int rc = rs_search_match(q, &rec);
    rs_search_free(q);
    return rc;
}

static int match(const char *query)
{
    return match_line(query, "llm.error", line, sizeof line - 1);
}

static void test_spans(void **state)
{
    (void)state;
    size_t c, cl, m, ml;
    assert_int_equal(rs_search_spans(line, sizeof line - 1, &c, &cl, &m, &ml), 0);
    const char *want_c = "{\"a\":\"x,\\\"metadata\\\":{\",\"metadata\":[1,{\"b\":\"}\"}]}";
    assert_int_equal(cl, strlen(want_c));
    assert_memory_equal(line + c, want_c, cl);
    const char *want_m = "{\"Caller\":\"Lead\",\"n\":{\"deep\":\"Ünï\"}}";
    assert_int_equal(ml, strlen(want_m));
    assert_memory_equal(line + m, want_m, ml);
    assert_int_equal(rs_search_spans("{\"content\":1}", 13, &c, &cl, &m, &ml), -EINVAL);
}

static void test_match(void **state)
{
    (void)state;
    assert_int_equal(match("lead"), 1);           /* metadata, case ignored */
    assert_int_equal(match("LEAD caller"), 1);    /* every term */
    assert_int_equal(match("lead nothere"), 0);
    assert_int_equal(match("Ünï"), 1);            /* other bytes exactly */
    assert_int_equal(match("ünï"), 0);            /* not case-folded beyond ASCII */
    assert_int_equal(match("x,\\"), 1); /* escapes as events.jsonl shows them */
    assert_int_equal(match("}]}{"), 0);           /* not across content and metadata */
    assert_int_equal(match("2026-01-01"), 0);     /* created_at is not searched */
    assert_int_equal(match("llm.error"), 0);      /* nor the type, but by type: */
    assert_int_equal(match("type:llm.error"), 1);
    assert_int_equal(match("type:llm.*"), 1);
    assert_int_equal(match("type:llm"), 0);
    assert_int_equal(match("category:trace -lead"), 0);
    assert_int_equal(match("category:message"), 0);
    assert_int_equal(match("-type:run.start x"), 1);
    assert_int_equal(match("\"\""), 1); /* the empty string is in everything */
}

/* query against a line whose content is text, matched the way a lowered copy would be. */
static int match_text(const char *query, const char *text)
{
    rs_buf line = RS_BUF_INIT;
    assert_int_equal(rs_buf_addf(&line,
                     "{\"thread_id\":\"t\",\"run_id\":\"r\",\"seq\":1,\"event_type\":\"x\","
                     "\"category\":\"trace\",\"content\":\"%s\",\"metadata\":{},"
                     "\"created_at\":\"2026-01-01T00:00:00.000000+00:00\"}\n",
                     text), 0);
    int rc = match_line(query, "x", line.buf, line.len);
    rs_buf_release(&line);
    return rc;
}

/* The search looks for the rarest byte of a term in both cases: every place of each case
 * counts, wherever it lies in the term. */
static void test_match_case(void **state)
{
    (void)state;
    assert_int_equal(match_text("ledger", "a LedGxr then LEDGER"), 1);
    assert_int_equal(match_text("ledger", "a ledgxr then LEDGEr"), 1);
    assert_int_equal(match_text("ledger", "a LEDG then ledGE"), 0);
    assert_int_equal(match_text("gerz", "LEDGER"), 0); /* past the span's end */
    assert_int_equal(match_text("ger", "LEDGER"), 1); /* at the span's end */
    assert_int_equal(match_text("g", "G"), 1);
    assert_int_equal(match_text("zq", "aZQ"), 1);
    assert_int_equal(match_text("zq", "Zq zQ"), 1);
    assert_int_equal(match_text("zq", "Z Q z"), 0);
    assert_int_equal(match_text("x1", "ax1"), 1); /* anchor with no case */
    assert_int_equal(match_text("1x", "1a 1X"), 1);
}

/* Whether text holds term with their ASCII letters in either case, a byte at a time: the
 * reference the search's match is held to. */
static int naive_find(const char *term, const char *text)
{
    size_t m = strlen(term), n = strlen(text);
    for (size_t i = 0; i + m <= n; i++) {
        size_t j = 0;
        while (j < m && (text[i + j] | (text[i + j] >= 'A' && text[i + j] <= 'Z' ? 0x20 : 0)) ==
                            (term[j] | (term[j] >= 'A' && term[j] <= 'Z' ? 0x20 : 0)))
            j++;
        if (j == m)
            return 1;
    }
    return 0;
}

/* The match looks at 16 places at a time where it can: terms and texts of a small alphabet
 * (letters in both cases beside the bytes one bit 5 away from them or from each other: @ `,
 * [ {, 1 Q q), so that matches fall at every place, in the last 16 and across them, are
 * what a byte-by-byte search of the record's content and metadata finds. */
static void test_match_places(void **state)
{
    (void)state;
    static const char alphabet[] = "abAB@`[{1Qq -";
    uint64_t x = 88172645463325252u;
    char term[8], text[96];
    for (int round = 0; round < 20000; round++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t m = 1 + x % 5, n = (x >> 8) % 90;
        for (size_t i = 0; i < m + n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            char c = alphabet[x % (sizeof alphabet - 1)];
            if (i < m)
                term[i] = c == ' ' || c == '-' ? 'q' : c; /* a term holds no space, starts no - */
            else
                text[i - m] = c;
        }
        term[m] = text[n] = '\0';
        /* match_text's metadata is {}: a term of its bytes matches there. */
        assert_int_equal(match_text(term, text), naive_find(term, text) || naive_find(term, "{}"));
    }
}

/* A row as runfs's put stores it (content the string's bytes, or canonical JSON with
 * DeerFlow's markers at the metadata's end), the line it renders, and the queries to try. */
static const struct {
    const char *content, *metadata;
} stored_rows[] = {
    {"the agent reads a ledger", "{\"caller\":\"lead\"}"},
    {"ledger", "{}"},
    {"a LEDGERS b", "{\"k\":\"x\"}"},
    {"say \"ledger\" twice", "{}"},
    {"line one\nnb two\\ three\ttab", "{\"caller\":\"lead\"}"},
    {"caf\xc3\xa9 \xc3\x9cn\xc3\xaf ledger", "{\"n\":\"\xc3\x9cn\xc3\xaf\"}"},
    {"bad \xff byte ledger", "{}"},
    {"ctl \x01 byte", "{}"},
    {"{\"a\":\"ledger\",\"b\":[1,{\"c\":\"}\"}]}",
     "{\"caller\":\"lead\",\"content_is_json\":true,\"content_is_dict\":true}"},
    {"[\"ledger\",2]", "{\"content_is_json\":true}"},
    {"{\"x\":1}", "{\"caller\":\"Lead\",\"content_is_json\":true,\"content_is_dict\":true}"},
    {"plain", "{\"deep\":{\"k\":\"led\\\"ger\"}}"},
};

static const char *const may_queries[] = {
    "ledger", "LEDGER", "ledge", "gers", "\"reads a\"", "\"ledger twice\"", "nb", "\\nb", "n\\t",
    "\\\\", "\\u0001", "\xc3\x9cn\xc3\xaf", "\xc3\xbcn\xc3\xaf", "\xef\xbf\xbd", "}", "lead}",
    "\"lead\"}", "}]}", "\"}\"}]}", "caller", "content_is_json", "true}", "{\"x\":1}", "1}",
    "lead", "led\\", "ledger caller", "ledger -caller", "ledger nowhere", "type:x ledger", "zzz",
    "x", "2]", "\"plain\"", "\"\"",
};

/* rs_search_may_match passes over a row only where no rendering of it matches: each query
 * against each stored row, the line made with copies and made the general way (the same
 * bytes), matched by rs_search_match; a row it passes over must not match, and most of the
 * rows a query misses are passed over. */
static void test_may_match(void **state)
{
    (void)state;
    size_t missed = 0, passed = 0;
    for (size_t r = 0; r < sizeof stored_rows / sizeof stored_rows[0]; r++) {
        rs_row row = {.thread_id = "t",
                      .run_id = "r",
                      .seq = 1,
                      .event_type = "x",
                      .category = "trace",
                      .content = stored_rows[r].content,
                      .content_len = strlen(stored_rows[r].content),
                      .metadata = stored_rows[r].metadata,
                      .metadata_len = strlen(stored_rows[r].metadata),
                      .created_at = "2026-01-01 00:00:00.000000"};
        rs_buf general = RS_BUF_INIT, copied = RS_BUF_INIT;
        rs_event_spans sp;
        assert_int_equal(rs_event_encode_spans(&general, &row, &sp, NULL), 0);
        row.canonical = 1;
        assert_int_equal(rs_event_encode_spans(&copied, &row, &sp, NULL), 0);
        assert_string_equal(general.buf, copied.buf);
        rs_record rec = {.seq = 1,
                         .thread_id = "t",
                         .run_id = "r",
                         .event_type = "x",
                         .category = "trace",
                         .line = copied.buf,
                         .line_len = copied.len};
        for (size_t i = 0; i < sizeof may_queries / sizeof may_queries[0]; i++) {
            rs_search *q = parse_ok(may_queries[i]);
            int hit = rs_search_match(q, &rec), may = rs_search_may_match(q, &row);
            if (hit && !may)
                print_error("row %zu, query [%s]: matches, passed over\n", r, may_queries[i]);
            assert_false(hit && !may);
            missed += !hit;
            passed += !may;
            rs_search_free(q);
        }
        /* A row another writer stored is never passed over. */
        row.canonical = 0;
        rs_search *q = parse_ok("zzz");
        assert_int_equal(rs_search_may_match(q, &row), 1);
        rs_search_free(q);
        rs_buf_release(&general);
        rs_buf_release(&copied);
    }
    assert_true(passed * 2 > missed);
    /* Where a word lies in a plain row decides alone. */
    rs_row row = {.content = "the agent reads a ledger", .content_len = 24,
                  .metadata = "{\"caller\":\"lead\"}", .metadata_len = 17, .canonical = 1};
    rs_search *q = parse_ok("LEDGER lead");
    assert_int_equal(rs_search_may_match(q, &row), 1);
    rs_search_free(q);
    q = parse_ok("ledgers");
    assert_int_equal(rs_search_may_match(q, &row), 0);
    rs_search_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_terms),
        cmocka_unit_test(test_by_run),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_spans),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_match_case),
        cmocka_unit_test(test_match_places),
        cmocka_unit_test(test_may_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
