/* test_json.c — rs_json_canon and the string helpers: canonical bytes, every refusal, and
 * the marker dropping the encoder relies on. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"
#include "rs_util.h"

#define S(lit) lit, sizeof(lit) - 1

static void expect_canon(const char *in, size_t len, unsigned flags, const char *want)
{
    rs_buf b = RS_BUF_INIT;
    rs_err err = { 0 };
    int rc = rs_json_canon(&b, in, len, flags, &err);
    if (rc)
        print_error("input %s: %s\n", in, err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.buf, want, b.len);
    assert_int_equal(b.buf[b.len], '\0');
    rs_buf_release(&b);
}

static void expect_bad(const char *in, size_t len, unsigned flags, const char *reason)
{
    rs_buf b = RS_BUF_INIT;
    rs_err err = { 0 };
    assert_int_equal(rs_buf_add(&b, "prefix", 6), 0);
    int rc = rs_json_canon(&b, in, len, flags, &err);
    if (rc != -EINVAL || !strstr(err.msg, reason))
        print_error("input [%.*s]: rc %d reason '%s', want '%s'\n", (int)(len > 80 ? 80 : len),
                    in, rc, err.msg, reason);
    assert_int_equal(rc, -EINVAL);
    assert_non_null(strstr(err.msg, reason));
    /* out is left as it was */
    assert_int_equal(b.len, 6);
    assert_string_equal(b.buf, "prefix");
    rs_buf_release(&b);
}

static const struct { const char *in, *out; } good[] = {
    { "{}", "{}" },
    { " { } ", "{}" },
    { "[]", "[]" },
    { "0", "0" },
    { "-0", "-0" },
    { "1.50", "1.50" },
    { "1e5", "1e5" },
    { "1E+05", "1E+05" },
    { "-12.5e-3", "-12.5e-3" },
    { "12345678901234567890", "12345678901234567890" },
    { "1e-999", "1e-999" },
    { "1.7976931348623158e308", "1.7976931348623158e308" },
    { "true", "true" },
    { "false", "false" },
    { "null", "null" },
    { "\"\"", "\"\"" },
    { "{\"a\" : 1 ,\n\t\"b\":[1, 2,{ }]}", "{\"a\":1,\"b\":[1,2,{}]}" },
    { "{\"b\":1,\"a\":2}", "{\"b\":1,\"a\":2}" },                /* key order kept */
    { "{\"a\":1,\"a\":2}", "{\"a\":1,\"a\":2}" },                /* duplicates not checked */
    { "\"h\\u00e9\"", "\"h\xc3\xa9\"" },
    { "\"\\u20AC\"", "\"\xe2\x82\xac\"" },
    { "\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"" },
    { "\"\\/\"", "\"/\"" },
    { "\"\\u0022\\u005c\"", "\"\\\"\\\\\"" },
    { "\"\\u0001\\u001F\\u0008\\u000a\"", "\"\\u0001\\u001f\\b\\n\"" },
    { "\"\\b\\f\\n\\r\\t\\\"\\\\\"", "\"\\b\\f\\n\\r\\t\\\"\\\\\"" },
    { "\"\x7f\"", "\"\x7f\"" },                                  /* DEL stays raw */
    { "\"\\u007f\"", "\"\x7f\"" },
    { "\"\\u2028\\u2029\"", "\"\xe2\x80\xa8\xe2\x80\xa9\"" },    /* stay raw */
    { "\"\xe2\x80\xa8\"", "\"\xe2\x80\xa8\"" },
    { "\"\xf4\x8f\xbf\xbf\"", "\"\xf4\x8f\xbf\xbf\"" },          /* U+10FFFF */
    { "\"\xef\xbb\xbf\"", "\"\xef\xbb\xbf\"" },                  /* BOM inside a string */
    { "[\"abcdefghijklmnopqrstuvwxyz0123456789\", \"x\"]",
      "[\"abcdefghijklmnopqrstuvwxyz0123456789\",\"x\"]" },
};

static void test_canon_good(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        expect_canon(good[i].in, strlen(good[i].in), 0, good[i].out);
}

static const struct { const char *in; size_t len; const char *reason; } bad[] = {
    { S(""), "unexpected end of input" },
    { S("   "), "unexpected end of input" },
    { S("{"), "at byte 1: unexpected end of input" },
    { S("{\"a\" 1}"), "at byte 5: expected ':'" },
    { S("{\"a\":1,}"), "expected a string key" },
    { S("[1,]"), "expected a value" },
    { S("[1 2]"), "expected ',' or ']'" },
    { S("{\"a\":1 \"b\":2}"), "expected ',' or '}'" },
    { S("{a:1}"), "expected a string key" },
    { S("'a'"), "expected a value" },
    { S("01"), "leading zero" },
    { S("-01"), "leading zero" },
    { S("1."), "expected a digit after '.'" },
    { S(".5"), "expected a value" },
    { S("+1"), "expected a value" },
    { S("1e"), "exponent" },
    { S("-"), "expected a digit" },
    { S("1e999"), "too large for a double" },
    { S("-1e999"), "too large for a double" },
    { S("1.7976931348623159e308"), "too large for a double" },
    { S("0.1e310"), "too large for a double" },
    { S("NaN"), "expected a value" },
    { S("Infinity"), "expected a value" },
    { S("-Infinity"), "expected a digit" },
    { S("tru"), "expected a value" },
    { S("nul"), "expected a value" },
    { S("1 2"), "unexpected data after the value" },
    { S("{} x"), "at byte 3: unexpected data after the value" },
    { S("\"abc"), "unterminated string" },
    { S("\"abc\\"), "unterminated string" },
    { S("\"\\x\""), "bad escape" },
    { S("\"\\u12\""), "bad \\u escape" },
    { S("\"\\u12G4\""), "bad \\u escape" },
    { S("\"a\nb\""), "raw control character 0x0a in a string at byte 2" },
    { S("\"\t\""), "raw control character 0x09" },
    { S("\"a\0b\""), "NUL byte in a string at byte 2" },
    { S("[1,\0]"), "NUL byte" },
    { S("1\0"), "NUL byte" },
    { S("\"\\u0000\""), "NUL is refused, it would truncate C strings" },
    { S("\"\\ud800\""), "lone surrogate \\ud800 at byte 1" },
    { S("\"\\ud800x\""), "lone surrogate \\ud800" },
    { S("\"\\ud800\\u0041\""), "lone surrogate \\ud800" },
    { S("\"\\udc00\""), "lone surrogate \\udc00" },
    { S("\"\\ud800\\ud800\""), "lone surrogate \\ud800" },
    { S("\"a\x80\""), "invalid UTF-8 at byte 2" },
    { S("\"\xc0\xaf\""), "invalid UTF-8 at byte 1" },          /* overlong '/' */
    { S("\"\xc1\xbf\""), "invalid UTF-8" },
    { S("\"\xe0\x80\xaf\""), "invalid UTF-8" },                /* overlong 3-byte */
    { S("\"\xf0\x80\x80\xaf\""), "invalid UTF-8" },            /* overlong 4-byte */
    { S("\"\xed\xa0\x80\""), "invalid UTF-8" },                /* surrogate in UTF-8 */
    { S("\"\xf4\x90\x80\x80\""), "invalid UTF-8" },            /* > U+10FFFF */
    { S("\"\xf5\x80\x80\x80\""), "invalid UTF-8" },
    { S("\"\xe2\x82\""), "invalid UTF-8" },                    /* truncated */
    { S("\"\xff\""), "invalid UTF-8" },
    { S("\xef\xbb\xbf{}"), "invalid JSON at byte 0" },         /* BOM before the value */
    { S("\xc3\xa9"), "expected a value" },
};

static void test_canon_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_bad(bad[i].in, bad[i].len, 0, bad[i].reason);
}

/* Multiply the decimal digits d[0..*n) (most significant first) by m in place. */
static void dec_mul(char *d, size_t *n, uint64_t m)
{
    unsigned __int128 carry = 0;
    for (size_t i = *n; i-- > 0;) {
        unsigned __int128 v = (unsigned __int128)(d[i] - '0') * m + carry;
        d[i] = (char)('0' + (int)(v % 10));
        carry = v / 10;
    }
    while (carry) {
        memmove(d + 1, d, *n);
        d[0] = (char)('0' + (int)(carry % 10));
        carry /= 10;
        (*n)++;
    }
    d[*n] = '\0';
}

static void test_overflow_boundary(void **state)
{
    (void)state;
    /* 2^1024 - 2^970 = 2^970 * (2^54 - 1), halfway between DBL_MAX and 2^1024: it rounds to
     * infinity, one less does not. Computed here and checked against the C library's strtod,
     * never copied from the implementation. */
    char lim[400] = "1";
    size_t n = 1;
    for (int i = 0; i < 970; i += 10)
        dec_mul(lim, &n, 1024);
    dec_mul(lim, &n, (1ULL << 54) - 1);
    assert_int_equal(n, 309);
    assert_true(isinf(strtod(lim, NULL)));
    char buf[512];
    expect_bad(lim, strlen(lim), 0, "too large");
    snprintf(buf, sizeof buf, "%s.0", lim);
    expect_bad(buf, strlen(buf), 0, "too large");
    assert_int_equal(lim[n - 1], '2');
    snprintf(buf, sizeof buf, "%.*s1", (int)strlen(lim) - 1, lim);   /* one less */
    assert_true(strtod(buf, NULL) == DBL_MAX);
    expect_canon(buf, strlen(buf), 0, buf);
    expect_canon(S("1.79769313486231580793728971405303415079934e308"), 0,
                 "1.79769313486231580793728971405303415079934e308");
    snprintf(buf, sizeof buf, "%c.%se308", lim[0], lim + 1);   /* the same number, scaled */
    expect_bad(buf, strlen(buf), 0, "too large");
    expect_canon(S("0e99999999999"), 0, "0e99999999999");
    expect_canon(S("1e-99999999999"), 0, "1e-99999999999");
    expect_bad(S("1e99999999999"), 0, "too large");
    expect_canon(S("0.00001e313"), 0, "0.00001e313");
}

static void test_depth(void **state)
{
    (void)state;
    char buf[600];
    size_t n = 0;
    for (int i = 0; i < RS_JSON_MAX_DEPTH; i++)
        buf[n++] = '[';
    for (int i = 0; i < RS_JSON_MAX_DEPTH; i++)
        buf[n++] = ']';
    buf[n] = '\0';
    expect_canon(buf, n, 0, buf);

    n = 0;
    for (int i = 0; i <= RS_JSON_MAX_DEPTH; i++)
        buf[n++] = '[';
    for (int i = 0; i <= RS_JSON_MAX_DEPTH; i++)
        buf[n++] = ']';
    expect_bad(buf, n, 0, "nesting deeper than 128");

    size_t big = 100000;
    char *deep = malloc(2 * big * 5);
    assert_non_null(deep);
    n = 0;
    for (size_t i = 0; i < big; i++) {
        memcpy(deep + n, "{\"a\":", 5);
        n += 5;
    }
    expect_bad(deep, n, 0, "nesting deeper than 128");
    memset(deep, '[', big);
    memset(deep + big, ']', big);
    expect_bad(deep, 2 * big, 0, "nesting deeper than 128");
    free(deep);
}

static void test_lenient(void **state)
{
    (void)state;
    expect_canon(S("[NaN, Infinity, -Infinity, 1]"), RS_JSON_LENIENT, "[NaN,Infinity,-Infinity,1]");
    expect_canon(S("{\"x\": NaN}"), RS_JSON_LENIENT, "{\"x\":NaN}");
    expect_bad(S("nan"), RS_JSON_LENIENT, "expected a value");
    expect_bad(S("-Inf"), RS_JSON_LENIENT, "expected a digit");
    expect_bad(S("[NaN]"), 0, "expected a value");
    /* lenient is about the tokens only */
    expect_bad(S("\"\\ud800\""), RS_JSON_LENIENT, "lone surrogate");
}

static void test_drop_markers(void **state)
{
    (void)state;
    unsigned f = RS_JSON_DROP_MARKERS;
    expect_canon(S("{\"caller\": \"lead_agent\", \"content_is_json\": true, \"content_is_dict\": true}"),
                 f, "{\"caller\":\"lead_agent\"}");
    expect_canon(S("{\"content_is_json\":true}"), f, "{}");
    expect_canon(S("{\"content_is_json\":true,\"content_is_dict\":true}"), f, "{}");
    expect_canon(S("{\"content_is_json\":true,\"a\":1,\"content_is_dict\":true,\"b\":[2]}"), f,
                 "{\"a\":1,\"b\":[2]}");
    expect_canon(S("{\"a\":{\"content_is_json\":true},\"content_is_dict\":{\"x\":[1,{}]}}"), f,
                 "{\"a\":{\"content_is_json\":true}}");
    expect_canon(S("{\"content\\u005fis_json\":1}"), f, "{}");
    expect_canon(S("[{\"content_is_json\":true}]"), f, "[{\"content_is_json\":true}]");
    expect_canon(S("{\"content_is_json\":true}"), 0, "{\"content_is_json\":true}");

    /* markers: truthiness as Python sees it */
    static const struct { const char *in; unsigned want; } m[] = {
        { "{\"content_is_json\":true}", 1 },
        { "{\"content_is_json\":true,\"content_is_dict\":true}", 3 },
        { "{\"content_is_dict\":1}", 2 },
        { "{\"content_is_json\":false,\"content_is_dict\":null}", 0 },
        { "{\"content_is_json\":0.0}", 0 },
        { "{\"content_is_json\":-0e5}", 0 },
        { "{\"content_is_json\":\"\"}", 0 },
        { "{\"content_is_json\":\"no\"}", 1 },
        { "{\"content_is_json\":[]}", 0 },
        { "{\"content_is_json\":{}}", 0 },
        { "{\"content_is_json\":[0]}", 1 },
        { "{\"content_is_json\":NaN}", 1 },
        { "{\"a\":{\"content_is_json\":true}}", 0 },
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        char out[128];
        size_t n;
        unsigned got = 99;
        assert_int_equal(rs_json_canon_to(out, &n, m[i].in, strlen(m[i].in),
                                          RS_JSON_DROP_MARKERS | RS_JSON_LENIENT, &got, NULL), 0);
        if (got != m[i].want)
            print_error("%s: markers %u want %u\n", m[i].in, got, m[i].want);
        assert_int_equal(got, m[i].want);
        /* the store's own reading of a row's markers follows the same rule */
        got = 99;
        assert_int_equal(rs_json_markers(m[i].in, strlen(m[i].in), &got), 0);
        assert_int_equal(got, m[i].want);
    }
    /* not an object, not JSON, absent: no markers */
    static const char *const none[] = {"[{\"content_is_json\":true}]", "{\"content_is_json\":",
                                       "true", ""};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        unsigned got = 99;
        assert_int_equal(rs_json_markers(none[i], strlen(none[i]), &got), 0);
        assert_int_equal(got, 0);
    }
    unsigned got = 99;
    assert_int_equal(rs_json_markers(NULL, 0, &got), 0);
    assert_int_equal(got, 0);
    /* metadata longer than the stack copy */
    char big[2048];
    int n = snprintf(big, sizeof big, "{\"pad\":\"%01500d\",\"content_is_dict\":true}", 0);
    assert_int_equal(rs_json_markers(big, (size_t)n, &got), 0);
    assert_int_equal(got, 2);
}

/* rs_buf's length and growth helpers keep its invariant: NUL at buf[len]. */
static void test_buf(void **state)
{
    (void)state;
    rs_buf b = RS_BUF_INIT;
    rs_buf_setlen(&b, 0);                /* on the shared empty buffer: nothing written */
    assert_int_equal(b.len, 0);
    assert_string_equal(b.buf, "");
    assert_int_equal(rs_buf_addlit(&b, "abc"), 0);
    assert_int_equal(b.len, 3);
    assert_int_equal(rs_buf_grow(&b, 10), 0);
    memcpy(b.buf + b.len, "defgh", 5);
    rs_buf_setlen(&b, b.len + 5);
    assert_string_equal(b.buf, "abcdefgh");
    rs_buf_setlen(&b, 2);
    assert_string_equal(b.buf, "ab");
    assert_int_equal(b.len, 2);
    rs_buf_release(&b);

    int *v = NULL;
    size_t cap = 0;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(rs_array_grow(&v, &cap, (size_t)i + 1, sizeof *v), 0);
        assert_true(cap >= (size_t)i + 1);
        v[i] = i;
    }
    for (int i = 0; i < 1000; i++)
        assert_int_equal(v[i], i);
    size_t before = cap;
    assert_int_equal(rs_array_grow(&v, &cap, 10, sizeof *v), 0);   /* room already */
    assert_int_equal(cap, before);
    assert_int_equal(rs_array_grow(&v, &cap, SIZE_MAX / 2, 8), -ENOMEM);
    assert_int_equal(cap, before);
    assert_int_equal(v[999], 999);
    free(v);
}

/* Every errno has its own name; a number that is none says so. */
static void test_errno_name(void **state)
{
    (void)state;
    assert_string_equal(rs_errno_name(0), "OK");
    assert_string_equal(rs_errno_name(-EINVAL), "EINVAL");
    assert_string_equal(rs_errno_name(EMSGSIZE), "EMSGSIZE");
    assert_string_equal(rs_errno_name(-EDQUOT), "EDQUOT");
    assert_string_equal(rs_errno_name(-ENOTCONN), "ENOTCONN");
    assert_string_equal(rs_errno_name(-9999), "errno 9999");
}

static void test_quote(void **state)
{
    (void)state;
    static const struct { const char *in; size_t len; const char *out; } q[] = {
        { S(""), "\"\"" },
        { S("plain text that is longer than eight bytes"),
          "\"plain text that is longer than eight bytes\"" },
        { S("a\"b\\c"), "\"a\\\"b\\\\c\"" },
        { S("line1\nline2\r\t\b\f\x01\x1f"), "\"line1\\nline2\\r\\t\\b\\f\\u0001\\u001f\"" },
        { S("h\xc3\xa9 \xe2\x80\xa8 \x7f"), "\"h\xc3\xa9 \xe2\x80\xa8 \x7f\"" },
        { S("a\0b"), "\"a\\u0000b\"" },
        /* NUL escaped and bad UTF-8 replaced in one string (a second quoter once disagreed) */
        { S("a\0b\xe0\x80z"), "\"a\\u0000b\xef\xbf\xbd\xef\xbf\xbdz\"" },
        { S("bad\xff!"), "\"bad\xef\xbf\xbd!\"" },
        { S("\xe2\x82"), "\"\xef\xbf\xbd\"" },                 /* truncated: one U+FFFD */
        { S("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"" },     /* overlong: two */
        { S("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" },
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        rs_buf b = RS_BUF_INIT;
        assert_int_equal(rs_buf_addstr(&b, ">"), 0);
        assert_int_equal(rs_buf_add_json_string(&b, q[i].in, q[i].len), 0);
        assert_string_equal(b.buf + 1, q[i].out);
        assert_int_equal(b.len, 1 + strlen(q[i].out));
        rs_buf_release(&b);
    }
    /* many escapes in a row force growth in the slow path */
    char ctl[3000];
    memset(ctl, 1, sizeof ctl);
    rs_buf b = RS_BUF_INIT;
    assert_int_equal(rs_buf_add_json_string(&b, ctl, sizeof ctl), 0);
    assert_int_equal(b.len, 2 + 6 * sizeof ctl);
    /* what quote writes canonicalizes to itself */
    rs_buf c = RS_BUF_INIT;
    assert_int_equal(rs_json_canon(&c, b.buf, b.len, 0, NULL), 0);
    assert_string_equal(c.buf, b.buf);
    rs_buf_release(&b);
    rs_buf_release(&c);
}

static void test_utf8_valid(void **state)
{
    (void)state;
    assert_true(rs_utf8_valid(S("")));
    assert_true(rs_utf8_valid(S("hello world, this is ascii")));
    assert_true(rs_utf8_valid(S("h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf")));
    assert_false(rs_utf8_valid(S("a\0b")));
    assert_false(rs_utf8_valid(S("0123456789\0abcdef")));
    assert_false(rs_utf8_valid(S("\xc0\xaf")));
    assert_false(rs_utf8_valid(S("\xe0\x9f\xbf")));
    assert_false(rs_utf8_valid(S("\xed\xbf\xbf")));
    assert_false(rs_utf8_valid(S("\xf4\x90\x80\x80")));
    assert_false(rs_utf8_valid(S("abc\x80")));
    assert_false(rs_utf8_valid(S("\xe2\x82")));
}

typedef struct collected {
    char keys[8][32];
    char vals[8][64];
    int n;
    int stop_at;
} collected;

static int collect(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
    collected *c = ctx;
    if (c->n == c->stop_at)
        return 42;
    snprintf(c->keys[c->n], sizeof c->keys[0], "%.*s", (int)kl, k);
    snprintf(c->vals[c->n], sizeof c->vals[0], "%.*s", (int)vl, v);
    c->n++;
    return 0;
}

static void test_members(void **state)
{
    (void)state;
    collected c = { .stop_at = -1 };
    const char *obj = "{\"a\":1,\"b\\\"q\":\"x,}]\\\"\",\"c\":{\"d\":[1,{\"e\":\"}\"}]},\"f\":[],\"g\":null}";
    assert_int_equal(rs_json_members(obj, strlen(obj), collect, &c), 0);
    assert_int_equal(c.n, 5);
    assert_string_equal(c.keys[0], "a");
    assert_string_equal(c.vals[0], "1");
    assert_string_equal(c.keys[1], "b\\\"q");
    assert_string_equal(c.vals[1], "\"x,}]\\\"\"");
    assert_string_equal(c.vals[2], "{\"d\":[1,{\"e\":\"}\"}]}");
    assert_string_equal(c.vals[3], "[]");
    assert_string_equal(c.vals[4], "null");

    collected e = { .stop_at = -1 };
    assert_int_equal(rs_json_members(S("{}"), collect, &e), 0);
    assert_int_equal(e.n, 0);
    collected s = { .stop_at = 1 };
    assert_int_equal(rs_json_members(obj, strlen(obj), collect, &s), 42);
    assert_int_equal(rs_json_members(S("[1]"), collect, &e), -EINVAL);
    assert_int_equal(rs_json_members(S("\"x\""), collect, &e), -EINVAL);
    assert_int_equal(rs_json_members(S("{\"a\":1"), collect, &e), -EINVAL);
}

static void test_unquote(void **state)
{
    (void)state;
    rs_buf b = RS_BUF_INIT;
    assert_int_equal(rs_json_unquote(&b, S("\"a\\\"b\\\\c\\nd\\u0001\\u00e9\\ud83d\\ude00/\\/\"")), 0);
    assert_string_equal(b.buf, "a\"b\\c\nd\x01\xc3\xa9\xf0\x9f\x98\x80//");
    rs_buf_reset(&b);
    assert_int_equal(rs_json_unquote(&b, S("\"\"")), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(rs_json_unquote(&b, S("abc")), -EINVAL);
    assert_int_equal(rs_json_unquote(&b, S("\"\\q\"")), -EINVAL);
    assert_int_equal(rs_json_unquote(&b, S("\"\\ud800\"")), -EINVAL);
    assert_int_equal(rs_json_unquote(&b, S("\"")), -EINVAL);
    rs_buf_release(&b);

    /* quote then unquote is the identity on valid UTF-8 */
    const char *s = "tab\there \"quoted\" back\\slash \xe2\x82\xac \x1f end";
    rs_buf q = RS_BUF_INIT, u = RS_BUF_INIT;
    assert_int_equal(rs_buf_add_json_string(&q, s, strlen(s)), 0);
    assert_int_equal(rs_json_unquote(&u, q.buf, q.len), 0);
    assert_string_equal(u.buf, s);
    rs_buf_release(&q);
    rs_buf_release(&u);
}

/* Every prefix of a valid document is refused without a crash, and every single-byte
 * corruption either canonicalizes to something that canonicalizes to itself or is refused. */
static void test_robust(void **state)
{
    (void)state;
    const char *doc = "{\"type\": \"ai\", \"content\": \"h\\u00e9 \\ud83d\\ude00\", \"n\": [1.5e3, -0, "
                      "true, false, null], \"o\": {\"k\": \"v\\n\"}}";
    size_t len = strlen(doc);
    rs_buf b = RS_BUF_INIT, c = RS_BUF_INIT;
    for (size_t i = 0; i < len; i++) {
        rs_buf_reset(&b);
        assert_int_equal(rs_json_canon(&b, doc, i, 0, NULL), -EINVAL);
    }
    char *mut = malloc(len);
    assert_non_null(mut);
    static const unsigned char repl[] = { 0, '"', '\\', '{', '}', '[', ']', ',', ':', '0', 'e',
                                          0x80, 0xc3, 0xff, ' ', 'u', '-' };
    for (size_t i = 0; i < len; i++)
        for (size_t r = 0; r < sizeof repl; r++) {
            memcpy(mut, doc, len);
            mut[i] = (char)repl[r];
            rs_buf_reset(&b);
            rs_err err = { 0 };
            int rc = rs_json_canon(&b, mut, len, 0, &err);
            if (rc == 0) {
                assert_true(b.len <= len);
                rs_buf_reset(&c);
                assert_int_equal(rs_json_canon(&c, b.buf, b.len, 0, NULL), 0);
                assert_int_equal(c.len, b.len);
                assert_memory_equal(c.buf, b.buf, b.len);
            } else {
                assert_int_equal(rc, -EINVAL);
                assert_true(err.msg[0] != '\0');
            }
        }
    free(mut);
    rs_buf_release(&b);
    rs_buf_release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canon_good),
        cmocka_unit_test(test_canon_bad),
        cmocka_unit_test(test_overflow_boundary),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_lenient),
        cmocka_unit_test(test_drop_markers),
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_buf),
        cmocka_unit_test(test_errno_name),
        cmocka_unit_test(test_utf8_valid),
        cmocka_unit_test(test_members),
        cmocka_unit_test(test_unquote),
        cmocka_unit_test(test_robust),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
