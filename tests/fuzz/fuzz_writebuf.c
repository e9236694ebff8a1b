/* fuzz_writebuf.c — libFuzzer target for the append path's line splitter (fs/linebuf.c):
 * the mount turns a byte stream, arriving in write() chunks of any size, into committed
 * lines plus a buffered partial line.
 *
 * Input: byte 0 picks the line limit (1..64, so that EMSGSIZE is common), byte 1 seeds the
 * chunking, byte 2 picks the commit outcome model, the rest is the byte stream.
 * Properties (abort on violation):
 *   1. When no line (nor the last, unterminated one) is over the limit and every commit
 *      succeeds, any chunking commits exactly the stream's complete lines, in order, and
 *      leaves the same partial line as feeding the stream whole (or byte by byte).
 *   2. Whatever the lines, every committed span is whole lines, each within the limit, and
 *      the committed lines are a subsequence of the stream's lines; a write fed whole that
 *      holds a line over the limit commits nothing.
 *   3. fs/linebuf.c agrees, write by write (outcome, committed bytes, partial line, skip
 *      state), with a byte-at-a-time reference model of DESIGN's rules, also when commits
 *      are refused by the store. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linebuf.h"

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "fuzz_writebuf: property violated: %s\n  ", #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            abort(); \
        } \
    } while (0)

/* The store's verdict on a span of lines: model 0 accepts all; model 1 refuses a span with a
 * line starting with '!' (a line the validator refuses fails its whole write). */
static int store_accepts(int model, const char *s, size_t len)
{
    if (model == 0)
        return 1;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '!' && (i == 0 || s[i - 1] == '\n'))
            return 0;
    return 1;
}

/* ---- the reference: DESIGN's rules, a byte at a time ---------------------------------- */

typedef struct ref {
    char *pending;
    size_t pending_len;
    int skipping;
} ref;

typedef struct outcome {
    int rc;       /* 0 or -EMSGSIZE */
    char *commit; /* the bytes committed by this write (NULL: none) */
    size_t commit_len;
} outcome;

static outcome ref_feed(ref *r, size_t max, int model, const char *buf, size_t size)
{
    outcome o = {0, NULL, 0};
    size_t i = 0;
    if (r->skipping) {
        while (i < size && buf[i] != '\n')
            i++;
        if (i == size)
            return o;
        i++;
    }
    /* lines of this write: the first continues the pending one */
    char *cur = malloc(r->pending_len + size + 1);
    size_t cur_len = r->pending_len;
    if (r->pending_len)
        memcpy(cur, r->pending, r->pending_len);
    char *lines = malloc(r->pending_len + size + 1);
    size_t lines_len = 0;
    int too_long = 0;
    for (; i < size; i++) {
        cur[cur_len++] = buf[i];
        if (buf[i] == '\n') {
            if (cur_len - 1 > max)
                too_long = 1;
            memcpy(lines + lines_len, cur, cur_len);
            lines_len += cur_len;
            cur_len = 0;
        }
    }
    if (too_long || cur_len > max) {
        /* the handle skips on when the last, unterminated line is the long one */
        r->skipping = cur_len > max;
        r->pending_len = 0;
        o.rc = -EMSGSIZE;
        free(cur);
        free(lines);
        return o;
    }
    r->skipping = 0;
    if (lines_len == 0) {
        free(r->pending);
        r->pending = cur;
        r->pending_len = cur_len;
        free(lines);
        return o;
    }
    if (store_accepts(model, lines, lines_len)) {
        o.commit = lines;
        o.commit_len = lines_len;
        free(r->pending);
        r->pending = cur;
        r->pending_len = cur_len;
    } else {
        free(lines);
        free(cur);
        r->pending_len = 0;
    }
    return o;
}

/* ---- the module under test, with a store model ----------------------------------------- */

typedef struct sut {
    rs_buf pending;
    int skipping;
} sut;

static outcome sut_feed(sut *s, size_t max, int model, const char *buf, size_t size)
{
    outcome o = {0, NULL, 0};
    rfs_lines lines;
    int rc = rfs_linebuf_feed(&s->pending, &s->skipping, max, buf, size, &lines);
    CHECK(rc == 0 || rc == -EMSGSIZE, "feed rc %d", rc);
    if (rc) {
        o.rc = rc;
        CHECK(s->pending.len == 0, "pending kept after EMSGSIZE");
        return o;
    }
    if (!lines.len)
        return o;
    /* property 2: whole lines, each within the limit */
    CHECK(lines.data[lines.len - 1] == '\n', "span does not end a line");
    for (size_t a = 0; a < lines.len;) {
        const char *nl = memchr(lines.data + a, '\n', lines.len - a);
        CHECK(nl, "span without newline");
        CHECK((size_t)(nl - lines.data) - a <= max, "a line over the limit is committed");
        a = (size_t)(nl - lines.data) + 1;
    }
    CHECK(lines.tail + lines.tail_len == buf + size, "tail is not the write's end");
    CHECK(lines.tail_len <= max, "tail over the limit kept");
    CHECK(!memchr(lines.tail, '\n', lines.tail_len), "tail holds a newline");
    int ok = store_accepts(model, lines.data, lines.len);
    if (ok) {
        o.commit = malloc(lines.len);
        memcpy(o.commit, lines.data, lines.len);
        o.commit_len = lines.len;
    }
    CHECK(rfs_lines_done(&s->pending, &lines, ok) == 0, "done failed");
    return o;
}

/* ---- driving ------------------------------------------------------------------------------ */

typedef struct run {
    char *committed; /* all committed bytes, in order */
    size_t len;
    char *pending;
    size_t pending_len;
    size_t emsgsize; /* refused writes */
} run;

static uint32_t next(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* Feed data in chunks (mode 0: whole, 1: a byte at a time, 2: random sizes) to the module
 * and the reference in lockstep; their outcomes must agree write by write. */
static run drive(const char *data, size_t size, size_t max, int model, int mode, uint32_t seed)
{
    run out = {malloc(size + 1), 0, NULL, 0, 0};
    sut s = {RS_BUF_INIT, 0};
    ref r = {NULL, 0, 0};
    uint32_t x = seed * 2654435761u + 1;
    size_t pos = 0;
    do {
        size_t n = size - pos;
        if (mode == 1)
            n = n ? 1 : 0;
        else if (mode == 2) {
            uint32_t k = next(&x) % 8;
            size_t want = k == 0  ? 0
                          : k < 4 ? next(&x) % 4
                          : k < 7 ? next(&x) % (2 * max + 2)
                                  : next(&x) % 512;
            n = want < n ? want : n;
        }
        outcome a = sut_feed(&s, max, model, data + pos, n);
        outcome b = ref_feed(&r, max, model, data + pos, n);
        CHECK(a.rc == b.rc, "write at %zu (+%zu): module %d, reference %d", pos, n, a.rc, b.rc);
        CHECK(a.commit_len == b.commit_len &&
                  (!a.commit_len || !memcmp(a.commit, b.commit, a.commit_len)),
              "write at %zu (+%zu): commits differ (%zu vs %zu bytes)", pos, n, a.commit_len,
              b.commit_len);
        CHECK(s.skipping == r.skipping, "write at %zu: skipping %d vs %d", pos, s.skipping,
              r.skipping);
        CHECK(s.pending.len == r.pending_len &&
                  (!r.pending_len || !memcmp(s.pending.buf, r.pending, r.pending_len)),
              "write at %zu: pending differs", pos);
        if (a.commit_len) {
            memcpy(out.committed + out.len, a.commit, a.commit_len);
            out.len += a.commit_len;
        }
        if (a.rc)
            out.emsgsize++;
        free(a.commit);
        free(b.commit);
        pos += n;
    } while (pos < size);
    out.pending = malloc(s.pending.len + 1);
    memcpy(out.pending, s.pending.buf, s.pending.len);
    out.pending_len = s.pending.len;
    rs_buf_release(&s.pending);
    free(r.pending);
    return out;
}

static void run_free(run *r)
{
    free(r->committed);
    free(r->pending);
}

/* 1 when the committed lines c are a subsequence of the stream's complete lines, each equal
 * to its stream line or, after a refused write (which keeps nothing of itself, its partial
 * line included), a suffix of it. */
static int subsequence(const char *c, size_t clen, const char *data, size_t size)
{
    size_t i = 0, j = 0;
    while (i < clen) {
        const char *cl = memchr(c + i, '\n', clen - i);
        size_t cn = (size_t)(cl - c) + 1 - i;
        for (;;) {
            if (j >= size)
                return 0;
            const char *dl = memchr(data + j, '\n', size - j);
            if (!dl)
                return 0;
            size_t dn = (size_t)(dl - data) + 1 - j;
            j += dn;
            if (dn >= cn && !memcmp(data + j - cn, c + i, cn))
                break;
        }
        i += cn;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t size)
{
    if (size < 3)
        return 0;
    size_t max = 1 + buf[0] % 64;
    uint32_t seed = buf[1];
    int model = buf[2] & 1;
    const char *data = (const char *)buf + 3;
    size = size - 3;
    for (size_t i = 0; i < size; i++)
        seed = seed * 31 + (uint8_t)data[i];

    /* the stream's lines: is any over the limit? */
    int long_line = 0;
    size_t last_nl = 0, start = 0;
    for (size_t i = 0; i < size; i++)
        if (data[i] == '\n') {
            if (i - start > max)
                long_line = 1;
            start = i + 1;
            last_nl = i + 1;
        }
    if (size - start > max)
        long_line = 1;

    run whole = drive(data, size, max, model, 0, seed);
    run bytes = drive(data, size, max, model, 1, seed);
    run chunks = drive(data, size, max, model, 2, seed);
    run *all[] = {&whole, &bytes, &chunks};
    for (int k = 0; k < 3; k++) {
        CHECK(subsequence(all[k]->committed, all[k]->len, data, size),
              "mode %d committed lines not in the stream", k);
        CHECK(all[k]->len + all[k]->pending_len <= size, "mode %d: bytes invented", k);
    }
    if (long_line) {
        /* fed whole, a write holding a line over the limit commits nothing */
        CHECK(whole.len == 0 && whole.emsgsize == 1, "whole write with a long line committed");
    } else if (model == 0) {
        for (int k = 0; k < 3; k++) {
            CHECK(all[k]->emsgsize == 0, "mode %d: EMSGSIZE without a long line", k);
            CHECK(all[k]->len == last_nl && !memcmp(all[k]->committed, data, last_nl),
                  "mode %d: committed lines differ from the stream's", k);
            CHECK(all[k]->pending_len == size - last_nl &&
                      !memcmp(all[k]->pending, data + last_nl, size - last_nl),
                  "mode %d: partial line differs", k);
        }
    }
    for (int k = 0; k < 3; k++)
        run_free(all[k]);
    return 0;
}
