/* jtext.h — JSON string text at the byte level, shared by the JSON scanner (store/json.c) and
 * the string helpers (jtext.c): one table of byte classes, the scans of plain runs and UTF-8
 * sequences, and canonical control escapes. Internal to store/ and util/. */
#ifndef RS_JTEXT_H
#define RS_JTEXT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rs_util.h"

typedef unsigned char u8;

/* Byte classes inside a string literal. */
enum { C_PLAIN = 0, C_QUOTE, C_BSLASH, C_CTRL, C_U2, C_U3, C_U4, C_BAD };

#define CT C_CTRL
#define QU C_QUOTE
#define BS C_BSLASH
#define PL C_PLAIN
#define XX C_BAD
#define U2 C_U2
#define U3 C_U3
#define U4 C_U4

/* Class of each byte inside a string literal (UTF-8 leads: C2-DF, E0-EF, F0-F4). */
static const u8 str_class[256] = {
    CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, /* 00 */
    CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, CT, /* 10 */
    PL, PL, QU, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, /* 20 */
    PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, /* 30 */
    PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, /* 40 */
    PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, BS, PL, PL, PL, /* 50 */
    PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, /* 60 */
    PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, /* 70 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 80 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 90 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* a0 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* b0 */
    XX, XX, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, /* c0 */
    U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, U2, /* d0 */
    U3, U3, U3, U3, U3, U3, U3, U3, U3, U3, U3, U3, U3, U3, U3, U3, /* e0 */
    U4, U4, U4, U4, U4, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* f0 */
};
#undef CT
#undef QU
#undef BS
#undef PL
#undef XX
#undef U2
#undef U3
#undef U4

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Nonzero when the 8 bytes hold a byte that is not plain printable ASCII for a string:
 * a control character, '"', '\\' or a byte >= 0x80. */
static inline uint64_t word_special(uint64_t x)
{
    uint64_t ctrl = (x - ONES * 0x20) & ~x;
    uint64_t q = x ^ (ONES * 0x22);
    uint64_t b = x ^ (ONES * 0x5c);
    uint64_t hq = (q - ONES) & ~q;
    uint64_t hb = (b - ONES) & ~b;
    return (ctrl | hq | hb | x) & HIGHS;
}

/* Length of the run of plain bytes at p (no escape needed, ASCII). */
static inline size_t plain_run(const u8 *p, const u8 *end)
{
    const u8 *s = p;
    while (end - p >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        if (word_special(x))
            break;
        p += 8;
    }
    while (p < end && str_class[*p] == C_PLAIN)
        p++;
    return (size_t)(p - s);
}

/* Length of the valid UTF-8 sequence at p whose lead has class cls, or 0 when invalid. */
static inline size_t utf8_seq(const u8 *p, const u8 *end, int cls)
{
    size_t avail = (size_t)(end - p);
    switch (cls) {
    case C_U2:
        if (avail < 2 || (p[1] & 0xc0) != 0x80)
            return 0;
        return 2;
    case C_U3: {
        if (avail < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
            return 0;
        if (p[0] == 0xe0 && p[1] < 0xa0)
            return 0; /* overlong */
        if (p[0] == 0xed && p[1] > 0x9f)
            return 0; /* UTF-16 surrogate */
        return 3;
    }
    case C_U4:
        if (avail < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
            return 0;
        if (p[0] == 0xf0 && p[1] < 0x90)
            return 0; /* overlong */
        if (p[0] == 0xf4 && p[1] > 0x8f)
            return 0; /* beyond U+10FFFF */
        return 4;
    default: return 0;
    }
}

/* Length of the maximal prefix of an invalid sequence at p (at least 1), so that one
 * U+FFFD stands for it (the WHATWG / Unicode "maximal subpart" rule). */
static inline size_t utf8_bad_len(const u8 *p, const u8 *end)
{
    int cls = str_class[p[0]];
    size_t need = cls == C_U2 ? 2 : cls == C_U3 ? 3 : cls == C_U4 ? 4 : 1;
    size_t i = 1;
    while (i < need && p + i < end) {
        u8 lo = 0x80, hi = 0xbf;
        if (i == 1) {
            if (p[0] == 0xe0)
                lo = 0xa0;
            else if (p[0] == 0xed)
                hi = 0x9f;
            else if (p[0] == 0xf0)
                lo = 0x90;
            else if (p[0] == 0xf4)
                hi = 0x8f;
        }
        if (p[i] < lo || p[i] > hi)
            break;
        i++;
    }
    return i;
}

/* Write the canonical escape of control character c (< 0x20); returns bytes written. */
static inline size_t put_ctrl(char *o, unsigned c)
{
    o[0] = '\\';
    switch (c) {
    case '\b': o[1] = 'b'; return 2;
    case '\f': o[1] = 'f'; return 2;
    case '\n': o[1] = 'n'; return 2;
    case '\r': o[1] = 'r'; return 2;
    case '\t': o[1] = 't'; return 2;
    default:
        o[1] = 'u';
        o[2] = '0';
        o[3] = '0';
        o[4] = rs_hex_digits[c >> 4];
        o[5] = rs_hex_digits[c & 15];
        return 6;
    }
}

/* cJSON_ParseWithLength under the one lock every cJSON parse of the process takes (cJSON
 * keeps its last error in a global); cjson.c's, in librunstore only. */
cJSON *rs_cjson_parse(const char *text, size_t len);

#endif
