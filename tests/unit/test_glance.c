/* test_glance.c — rfs_xml_text, the one XML quoter of the SVG views, on every class of code
 * point a stored string can hold: what XML 1.0 forbids or discourages becomes U+FFFD (one per
 * code point, or per invalid byte), markup is escaped, the rest of the text is kept; and
 * rfs_add_int, the views' "%lld". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "glance.h"
#include "rs_util.h"

#define R "\xef\xbf\xbd" /* U+FFFD */

static void check(const char *in, size_t len, size_t max, const char *want)
{
    rs_buf out = RS_BUF_INIT;
    assert_int_equal(rfs_xml_text(&out, in, len, max), 0);
    assert_string_equal(out.buf, want);
    rs_buf_release(&out);
}

#define CHECK(in, want) check(in, sizeof(in) - 1, 1000, want)

static void test_xml_text_classes(void **state)
{
    (void)state;
    CHECK("a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c'");
    CHECK("a\tb\nc\rd", "a b c d");
    CHECK("a\x01z\x1f\x7fz", "a" R "z" R R "z");
    CHECK("a\xc2\x80\xc2\x85\xc2\x9fz", "a" R R R "z");                   /* C1 controls */
    CHECK("a\xef\xb7\x90\xef\xb7\xafz", "a" R R "z");                     /* U+FDD0, U+FDEF */
    CHECK("a\xef\xbf\xbe\xef\xbf\xbfz", "a" R R "z");                     /* U+FFFE, U+FFFF */
    CHECK("a\xf0\x9f\xbf\xbe\xf4\x8f\xbf\xbfz", "a" R R "z");             /* U+1FFFE, U+10FFFF */
    CHECK("a\xed\xa0\x80z", "a" R R R "z");                               /* a surrogate's bytes */
    CHECK("a\xc0\xafz\xff", "a" R R "z" R);                               /* overlong, not UTF-8 */
    CHECK("a\xe2\x80\xa8\xf0\x9f\x98\x80\xef\xbf\xbdz", "a\xe2\x80\xa8\xf0\x9f\x98\x80" R "z");
    CHECK("a\xe2\x80", "a" R R); /* cut short */
}

static void test_xml_text_cut(void **state)
{
    (void)state;
    check("a\xef\xbf\xbf" "bc", 5, 2, "a" R "\xe2\x80\xa6");
    check("ab", 2, 2, "ab");
    check("", 0, 0, "");
    /* Cut inside a stretch of plain ASCII, right after one, and after an escape. */
    check("abcdef", 6, 3, "abc\xe2\x80\xa6");
    check("abc\xc3\xa9", 5, 3, "abc\xe2\x80\xa6");
    check("a&bcd", 5, 3, "a&amp;b\xe2\x80\xa6");
    check("\xc3\xa9xyz", 5, 2, "\xc3\xa9x\xe2\x80\xa6");
}

/* Text written in place lands after what the buffer held, in room grown as it goes. */
static void test_xml_text_appends(void **state)
{
    (void)state;
    rs_buf out = RS_BUF_INIT;
    assert_int_equal(rfs_xml_text(&out, "", 0, 1000), 0);
    assert_int_equal(out.len, 0);
    for (int i = 0; i < 200; i++)
        assert_int_equal(rfs_xml_text(&out, "\"<", 2, 1000), 0);
    assert_int_equal(out.len, 200 * 10);
    assert_memory_equal(out.buf + 1990, "&quot;&lt;", 10);
    assert_int_equal(out.buf[out.len], '\0');
    rs_buf_release(&out);
}

/* rfs_add_int prints what "%lld" prints, the extremes too. */
static void test_add_int(void **state)
{
    (void)state;
    static const int64_t v[] = {0, 7, 10, -1, -10, 1234567890123LL, INT64_MAX, INT64_MIN};
    static const char *const want[] = {"0",  "7",  "10", "-1", "-10", "1234567890123",
                                       "9223372036854775807", "-9223372036854775808"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        rs_buf out = RS_BUF_INIT;
        assert_int_equal(rs_buf_addlit(&out, "x"), 0);
        assert_int_equal(rfs_add_int(&out, v[i]), 0);
        assert_string_equal(out.buf + 1, want[i]);
        rs_buf_release(&out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xml_text_classes),
        cmocka_unit_test(test_xml_text_cut),
        cmocka_unit_test(test_xml_text_appends),
        cmocka_unit_test(test_add_int),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
