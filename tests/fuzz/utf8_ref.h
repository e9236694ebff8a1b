/* utf8_ref.h — the fuzz targets' own UTF-8 check, written apart from store/record/json.c so that
 * a line the store renders is judged by code it does not share: 1 when s[0..len) is
 * UTF-8 as RFC 3629 defines it (shortest forms, no surrogates, at most U+10FFFF) with no
 * NUL. */
#ifndef UTF8_REF_H
#define UTF8_REF_H

#include <stddef.h>
#include <stdint.h>

static int utf8_ref_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n;
        uint32_t cp, min;
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xe0) == 0xc0)
            n = 2, cp = c & 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0)
            n = 3, cp = c & 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0)
            n = 4, cp = c & 0x07, min = 0x10000;
        else
            return 0;
        if (len - i < n)
            return 0;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += n;
    }
    return 1;
}

#endif
