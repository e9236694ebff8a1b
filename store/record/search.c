/* search.c — the search query language: parsing a query (a file name) into terms, and the
 * match that decides whether a record is a hit, whatever index narrowed the rows. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "search.h"
#include "rs_util.h"

static void terms_free(rs_term *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(t[i].text);
    free(t);
}

void rs_search_free(rs_search *q)
{
    if (!q)
        return;
    terms_free(q->terms, q->n);
    free(q);
}

int rs_search_lower(rs_buf *out, const char *s, size_t len)
{
    int rc = rs_buf_grow(out, len);
    if (rc)
        return rc;
    char *d = out->buf + out->len;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        d[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch);
    }
    rs_buf_setlen(out, out->len + len);
    return 0;
}

/* How common a byte is in events' text (JSON punctuation and English letters, most common
 * first); a byte not listed is rarer than any listed. */
static size_t byte_rank(unsigned char ch)
{
    static const char common[] = " eta\"oinsrhl:,dcumfpgwybvkxjqz";
    const char *at = ch ? strchr(common, ch) : NULL;
    return at ? (size_t)(at - common) : sizeof common;
}

/* The term's byte a search looks for first: the rarest but the one at skip (none: len), so
 * memchr stops least often. */
static size_t anchor_pick(const char *text, size_t len, size_t skip)
{
    size_t best = skip == 0 && len > 1 ? 1 : 0;
    for (size_t i = best + 1; i < len; i++)
        if (i != skip && byte_rank((unsigned char)text[i]) > byte_rank((unsigned char)text[best]))
            best = i;
    return best;
}

/* One term from its raw bytes (quotes removed); quoted: its first byte was inside quotes,
 * so a type: or category: in it is text. */
static int term_make(rs_term *t, const char *raw, size_t len, int negate, int quoted, rs_err *err)
{
    static const struct {
        const char *prefix;
        rs_term_kind kind;
    } filters[] = {{"type:", RS_TERM_TYPE}, {"category:", RS_TERM_CATEGORY}};
    t->kind = RS_TERM_TEXT;
    t->negate = negate;
    for (size_t i = 0; !quoted && i < sizeof filters / sizeof filters[0]; i++) {
        size_t pl = strlen(filters[i].prefix);
        if (len < pl || memcmp(raw, filters[i].prefix, pl) != 0)
            continue;
        t->kind = filters[i].kind;
        raw += pl;
        len -= pl;
        if (t->kind == RS_TERM_TYPE && len > 0 && raw[len - 1] == '*') {
            t->kind = RS_TERM_TYPE_PREFIX;
            len--;
        }
        if (len == 0 && t->kind != RS_TERM_TYPE_PREFIX)
            return rs_err_set(err, -EINVAL, "%s needs a name after it", filters[i].prefix);
        break;
    }
    rs_buf b = RS_BUF_INIT;
    int rc = t->kind == RS_TERM_TEXT ? rs_search_lower(&b, raw, len) : rs_buf_add(&b, raw, len);
    if (rc)
        return rs_err_set(err, -ENOMEM, "out of memory");
    t->len = b.len;
    t->text = rs_buf_detach(&b, NULL);
    if (!t->text)
        return rs_err_set(err, -ENOMEM, "out of memory");
    t->anchor = anchor_pick(t->text, t->len, t->len);
    t->second = t->len > 1 ? anchor_pick(t->text, t->len, t->anchor) : t->anchor;
    return 0;
}

int rs_search_parse(rs_search **out, const char *query, rs_err *err)
{
    size_t qlen = strlen(query);
    if (qlen > RS_SEARCH_MAX)
        return rs_err_set(err, -ENAMETOOLONG, "a query is at most %d bytes (it is a file name)",
                          RS_SEARCH_MAX);
    rs_search *q = calloc(1, sizeof *q);
    if (!q)
        return rs_err_set(err, -ENOMEM, "out of memory");
    rs_buf raw = RS_BUF_INIT;
    size_t cap = 0;
    int rc = 0;
    const char *p = query, *end = query + qlen;
    while (!rc) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        /* A lone '-' is text, not an exclusion of nothing. */
        int negate = *p == '-' && p + 1 < end && p[1] != ' ';
        p += negate;
        int quoted = *p == '"', in_quote = 0;
        rs_buf_reset(&raw);
        for (; p < end && (in_quote || *p != ' '); p++) {
            if (*p == '"')
                in_quote = !in_quote;
            else if ((rc = rs_buf_addch(&raw, *p)))
                break;
        }
        if (!rc && in_quote)
            rc = rs_err_set(err, -EINVAL, "the query has an unbalanced quote (\")");
        else if (!rc && !negate && !quoted && raw.len == 6 && memcmp(raw.buf, "by:run", 6) == 0)
            q->by_run = 1; /* how the answer is told, not a term ("by:run" quoted is text) */
        else if (!rc && (rc = rs_array_grow(&q->terms, &cap, q->n + 1, sizeof *q->terms)))
            rs_err_set(err, rc, "out of memory");
        else if (!rc && !(rc = term_make(&q->terms[q->n], raw.buf, raw.len, negate, quoted, err)))
            q->n++;
    }
    if (rc == -ENOMEM && err && err->code != -ENOMEM)
        rs_err_set(err, rc, "out of memory");
    if (!rc && q->n == 0)
        rc = rs_err_set(err, -EINVAL, "the query has no terms");
    rs_buf_release(&raw);
    if (rc) {
        rs_search_free(q);
        return rc;
    }
    *out = q;
    return 0;
}

int rs_search_by_run(const rs_search *q)
{
    return q->by_run;
}

void rs_search_set_streamed(rs_search *q, int streamed)
{
    q->streamed = streamed != 0;
}

/* The end of the canonical JSON value starting at p (before end): a string, a container
 * (its strings skipped) or a scalar up to the next ',' or '}'. */
static const char *value_end(const char *p, const char *end)
{
    int depth = 0;
    for (const char *s = p; s < end; s++) {
        char ch = *s;
        if (ch == '"') {
            /* A string's text is most of a row: its closing quote found by memchr, one
             * with an odd run of backslashes before it skipped. */
            const char *q = s;
            for (;;) {
                q = memchr(q + 1, '"', (size_t)(end - q - 1));
                if (!q)
                    return NULL;
                size_t bs = 0;
                while (q - bs > s && q[-1 - (ptrdiff_t)bs] == '\\')
                    bs++;
                if (bs % 2 == 0)
                    break;
            }
            s = q;
            if (depth == 0)
                return s + 1;
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '}' || ch == ']') {
            if (depth == 0)
                return s;
            if (--depth == 0)
                return s + 1;
        } else if (ch == ',' && depth == 0) {
            return s;
        }
    }
    return NULL;
}

int rs_search_spans(const char *line, size_t len, size_t *c, size_t *clen, size_t *m, size_t *mlen)
{
    static const char ck[] = ",\"content\":", mk[] = ",\"metadata\":";
    const char *end = line + len;
    /* Before content only ids, a number and two strings come: in a string a quote is
     * always escaped, so the first ,"content": is the key. */
    const char *cs = memmem(line, len, ck, sizeof ck - 1);
    if (!cs)
        return -EINVAL;
    cs += sizeof ck - 1;
    const char *ce = value_end(cs, end);
    if (!ce || (size_t)(end - ce) < sizeof mk - 1 || memcmp(ce, mk, sizeof mk - 1) != 0)
        return -EINVAL;
    const char *ms = ce + sizeof mk - 1, *me = value_end(ms, end);
    if (!me)
        return -EINVAL;
    *c = (size_t)(cs - line);
    *clen = (size_t)(ce - cs);
    *m = (size_t)(ms - line);
    *mlen = (size_t)(me - ms);
    return 0;
}

static unsigned char lower(unsigned char ch)
{
    return (unsigned char)(ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch);
}

/* Whether hay[0..len) holds t's text with its ASCII letters in either case, with no lowered
 * copy of the row: each case of the anchor byte found by memchr (the upper one, rare in
 * text, looked for only up to the next lower one), the rest compared where one is. */
static int text_find_scalar(const rs_term *t, const char *hay, size_t len)
{
    const unsigned char *n = (const unsigned char *)t->text;
    if (len < t->len)
        return 0;
    size_t k = t->anchor;
    unsigned char lo = n[k], up = lo >= 'a' && lo <= 'z' ? (unsigned char)(lo - ('a' - 'A')) : lo;
    /* The anchor's places are offsets [p, end) of hay; lo_at and up_at its next place in
     * each case (end: none), or below p when not yet looked for. Offsets, not pointers: the
     * mark below p would otherwise point before hay when the anchor is the term's first byte. */
    ptrdiff_t p = (ptrdiff_t)k, end = (ptrdiff_t)(len - (t->len - k) + 1);
    ptrdiff_t lo_at = p - 1, up_at = up == lo ? end : p - 1;
    while (p < end) {
        const char *f;
        if (lo_at < p)
            lo_at = (f = memchr(hay + p, lo, (size_t)(end - p))) ? f - hay : end;
        if (up_at < p) /* none before lo_at: looked for again past it */
            up_at = (f = memchr(hay + p, up, (size_t)(lo_at - p))) ? f - hay : lo_at;
        ptrdiff_t at = up_at < lo_at ? up_at : lo_at;
        if (at == end)
            return 0;
        const unsigned char *h = (const unsigned char *)hay + at - k;
        size_t i = 0;
        while (i < t->len && lower(h[i]) == n[i])
            i++;
        if (i == t->len)
            return 1;
        p = at + 1;
    }
    return 0;
}

#if defined(__SSE2__)
/* x's bytes equal to the term's byte c (a lowered letter: in either case), a bit each. */
static unsigned term_byte_bits(__m128i x, unsigned char c)
{
    int letter = c >= 'a' && c <= 'z';
    /* A letter's two cases differ in bit 5 alone, and no other byte sets it to one of them. */
    __m128i v = letter ? _mm_or_si128(x, _mm_set1_epi8(0x20)) : x;
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)c)));
}

/* text_find_scalar's answer, 16 starting places at a time: those where the term's two rarest
 * bytes are both in place (one compare each for 16 places, where memchr was a call for each
 * place of the anchor and a second pass for its upper case), each then compared whole. Most
 * of a common word's rows are passed over by that pair: a call per row, not per byte found. */
static int text_find(const rs_term *t, const char *hay, size_t len)
{
    if (t->len < 2 || len < t->len)
        return text_find_scalar(t, hay, len);
    const unsigned char *n = (const unsigned char *)t->text;
    size_t a = t->anchor, b = t->second, starts = len - t->len + 1, i = 0;
    for (; i + 16 <= starts; i += 16) {
        unsigned bits =
            term_byte_bits(_mm_loadu_si128((const __m128i *)(const void *)(hay + i + a)), n[a]) &
            term_byte_bits(_mm_loadu_si128((const __m128i *)(const void *)(hay + i + b)), n[b]);
        while (bits) {
            const unsigned char *h = (const unsigned char *)hay + i + (size_t)__builtin_ctz(bits);
            size_t j = 0;
            while (j < t->len && lower(h[j]) == n[j])
                j++;
            if (j == t->len)
                return 1;
            bits &= bits - 1;
        }
    }
    /* The last places (fewer than 16): the same search over the bytes they start. */
    return i < starts && text_find_scalar(t, hay + i, len - i);
}
#else
static int text_find(const rs_term *t, const char *hay, size_t len)
{
    return text_find_scalar(t, hay, len);
}
#endif

static int term_hit(const rs_term *t, const rs_record *rec, const char *c, size_t clen,
                    const char *m, size_t mlen)
{
    switch (t->kind) {
    case RS_TERM_TYPE: return strcmp(rec->event_type, t->text) == 0;
    case RS_TERM_TYPE_PREFIX: return strncmp(rec->event_type, t->text, t->len) == 0;
    case RS_TERM_CATEGORY: return strcmp(rec->category, t->text) == 0;
    case RS_TERM_TEXT:
        if (t->len == 0)
            return 1;
        return text_find(t, c, clen) || text_find(t, m, mlen);
    }
    return 0;
}

int rs_search_match_at(const rs_search *q, const rs_record *rec, const rs_event_spans *sp)
{
    size_t c = 0, clen = 0, m = 0, mlen = 0;
    int have_text = 0;
    for (size_t i = 0; i < q->n && !have_text; i++)
        have_text = q->terms[i].kind == RS_TERM_TEXT;
    if (have_text && sp) {
        c = sp->c;
        clen = sp->clen;
        m = sp->m;
        mlen = sp->mlen;
    } else if (have_text && rs_search_spans(rec->line, rec->line_len, &c, &clen, &m, &mlen)) {
        return 0;
    }
    for (size_t i = 0; i < q->n; i++)
        if (term_hit(&q->terms[i], rec, rec->line + c, clen, rec->line + m, mlen) ==
            q->terms[i].negate)
            return 0;
    return 1;
}

/* Whether a stored row's line may hold text term t in its content or metadata. The line holds
 * content as its bytes (DeerFlow's markers say it is JSON) or as a JSON string of them, and
 * metadata as its first keep bytes, then '}' when markers were cut: a match in the line is a
 * match in the column's bytes, unless it takes in the brace the line adds (a term holding
 * one) or a byte quoting changed (content that is not plain). The string's own quotes are in
 * no match: a term holds no '"' (rs_search_parse takes each for a quote). */
static int term_may(const rs_term *t, const rs_row *row, size_t keep, unsigned markers, int *plain)
{
    if (text_find(t, row->content, row->content_len) || text_find(t, row->metadata, keep))
        return 1;
    if (markers)
        return memchr(t->text, '}', t->len) != NULL;
    if (*plain < 0)
        *plain = rs_json_string_plain(row->content, row->content_len);
    return !*plain;
}

int rs_search_may_match(const rs_search *q, const rs_row *row)
{
    size_t keep;
    unsigned markers;
    if (!row->canonical || !rs_event_stored_meta(row, &keep, &markers))
        return 1;
    int plain = -1;
    for (size_t i = 0; i < q->n; i++) {
        const rs_term *t = &q->terms[i];
        if (t->kind == RS_TERM_TEXT && !t->negate && t->len &&
            !term_may(t, row, keep, markers, &plain))
            return 0;
    }
    return 1;
}

int rs_search_match(rs_search *q, const rs_record *rec)
{
    return rs_search_match_at(q, rec, NULL);
}
