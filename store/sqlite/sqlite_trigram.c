/* sqlite_trigram.c — the search index's tokens: each distinct three-byte window of a block's
 * rows once, ASCII letters lowered (FTS5's own trigram tokenizer hands every position to the
 * index, most of them repeats in a block of similar rows), spelled as six hex digits so that
 * any bytes, a part of a UTF-8 character too, make a token the query can name as a bare
 * word. The windows are found here (sq_windows) and handed to FTS5 already spelled, each in
 * the columns of the block's rows that hold it; runfs_trigram only cuts them apart, and
 * runfs_subs tells in which columns of a document every token of the query occurs. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_int.h"
#include "rs_util.h"

#define SLOTS_MIN 1024
#define WINDOWS (1u << 24) /* every three-byte window */

/* Fibonacci hashing: the product's high bits, which every bit of w stirs. */
static uint64_t *slot_find(uint64_t *slot, size_t cap, uint32_t w)
{
    size_t i = (size_t)((uint64_t)(uint32_t)(w * UINT32_C(2654435761)) * cap >> 32);
    while (slot[i] && slot[i] >> 32 != w)
        i = (i + 1) & (cap - 1);
    return &slot[i];
}

static int windows_grow(sq_windows *t)
{
    size_t cap = t->cap ? t->cap * 2 : SLOTS_MIN;
    uint64_t *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return -ENOMEM;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i])
            *slot_find(slot, cap, (uint32_t)(t->slot[i] >> 32)) = t->slot[i];
    free(t->slot);
    t->slot = slot;
    t->cap = cap;
    return 0;
}

static void seen_clear(sq_windows *t)
{
    for (size_t k = 0; k < t->n_met; k++)
        t->seen[t->met[k] >> 3] = 0;
    t->n_met = 0;
}

int sq_windows_add(sq_windows *t, int col, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    uint32_t w = 0, bit = (uint32_t)1 << col;
    /* Made at the first row: a connection that only searches needs none. */
    if (!t->seen && !(t->seen = calloc(WINDOWS / 8, 1)))
        return -ENOMEM;
    if (col != t->col) {
        seen_clear(t);
        t->col = col;
    }
    t->cols |= bit;
    for (size_t i = 0; i < len; i++) {
        unsigned ch = p[i] >= 'A' && p[i] <= 'Z' ? p[i] + ('a' - 'A') : p[i];
        w = (w << 8 | ch) & (WINDOWS - 1);
        /* A window met again in the column (most are, in rows alike): a bit's test. */
        if (i < 2 || (t->seen[w >> 3] & (1u << (w & 7))))
            continue;
        if ((t->n_met == t->cap_met &&
             rs_array_grow(&t->met, &t->cap_met, t->n_met + 1, sizeof *t->met)) ||
            (t->n * 2 >= t->cap && windows_grow(t)))
            return -ENOMEM;
        t->seen[w >> 3] |= (uint8_t)(1u << (w & 7));
        t->met[t->n_met++] = w;
        uint64_t *s = slot_find(t->slot, t->cap, w);
        t->n += !*s;
        *s |= (uint64_t)w << 32 | bit;
    }
    return 0;
}

static int pop(uint32_t m)
{
    int n = 0;
    for (; m; m &= m - 1)
        n++;
    return n;
}

int sq_windows_take(sq_windows *t, rs_buf cols[SQ_COLUMNS])
{
    int rc = 0, rows = pop(t->cols);
    char *end[SQ_COLUMNS];
    for (int k = 0; k < SQ_COLUMNS; k++) {
        rs_buf_reset(&cols[k]);
        if (!rc)
            rc = rs_buf_grow(&cols[k], 6 * t->n);
        end[k] = cols[k].buf;
    }
    for (size_t i = 0; i < t->cap; i++) {
        uint64_t v = t->slot[i], m = (uint32_t)v;
        if (!v)
            continue;
        t->slot[i] = 0;
        if (rc)
            continue;
        /* In more than a third of the columns that have rows: said once, in the last column,
         * as if in all (a term's rarer windows narrow it; the index is smaller and quicker to
         * build: less build CPU than from half, searches as fast). */
        if (pop(m) * 3 > rows)
            m = (uint64_t)1 << (SQ_COLUMNS - 1);
        char h[6];
        for (int j = 0; j < 3; j++) {
            unsigned b = (unsigned)(v >> (48 - 8 * j)) & 255;
            h[2 * j] = rs_hex_digits[b >> 4];
            h[2 * j + 1] = rs_hex_digits[b & 15];
        }
        for (int k = 0; k < SQ_COLUMNS; k++)
            if (m >> k & 1) {
                memcpy(end[k], h, 6);
                end[k] += 6;
            }
    }
    for (int k = 0; !rc && k < SQ_COLUMNS; k++)
        rs_buf_setlen(&cols[k], (size_t)(end[k] - cols[k].buf));
    t->n = 0;
    t->cols = 0;
    seen_clear(t);
    return rc;
}

void sq_windows_release(sq_windows *t)
{
    free(t->slot);
    free(t->seen);
    free(t->met);
    *t = (sq_windows){0};
}

static int tri_create(void *ctx, const char **args, int n_args, Fts5Tokenizer **out)
{
    (void)ctx;
    (void)args;
    (void)n_args;
    /* No state: any non-NULL pointer names the instance. */
    static char instance;
    *out = (Fts5Tokenizer *)&instance;
    return SQLITE_OK;
}

static void tri_delete(Fts5Tokenizer *tok)
{
    (void)tok;
}

/* A query names tokens as they are (match_expr spells them); a document's column is its
 * tokens one after another, six bytes each (sq_windows_take spells them). */
static int tri_tokenize(Fts5Tokenizer *tok, void *ctx, int flags, const char *text, int len,
                        int (*emit)(void *, int, const char *, int, int, int))
{
    (void)tok;
    if (flags & FTS5_TOKENIZE_QUERY)
        return len > 0 ? emit(ctx, 0, text, len, 0, len) : SQLITE_OK;
    int rc = SQLITE_OK;
    for (int i = 0; rc == SQLITE_OK && i + 6 <= len; i += 6)
        rc = emit(ctx, 0, text + i, 6, i, i + 6);
    return rc;
}

/* runfs_subs(table): the columns of rows (bit i: column i) where every phrase of the MATCH
 * occurs.
 * The table is detail=column: each phrase's columns come from the index alone, its text is
 * not needed. */
static void tri_subs(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                     int n_args, sqlite3_value **args)
{
    (void)n_args;
    (void)args;
    uint64_t mask = UINT64_MAX;
    int phrases = api->xPhraseCount(fts);
    for (int i = 0; mask && i < phrases; i++) {
        Fts5PhraseIter it;
        uint64_t m = 0;
        int col, rc = api->xPhraseFirstColumn(fts, i, &it, &col);
        if (rc != SQLITE_OK) {
            sqlite3_result_error_code(ctx, rc);
            return;
        }
        /* The last column: in every other. */
        for (; col >= 0; api->xPhraseNextColumn(fts, &it, &col))
            m |= col == SQ_COLUMNS - 1 ? UINT64_MAX : (uint64_t)1 << col;
        mask &= m;
    }
    sqlite3_result_int64(ctx, (sqlite3_int64)mask);
}

/* runfs_cand(bits, upto, id): whether row id is a candidate, above the mark upto or in a
 * column whose bit is set (sqlite_search.c's cand_bits). */
static void tri_cand(sqlite3_context *ctx, int n_args, sqlite3_value **args)
{
    (void)n_args;
    const unsigned char *bit = sqlite3_value_blob(args[0]);
    int64_t n = sqlite3_value_bytes(args[0]), upto = sqlite3_value_int64(args[1]),
            id = sqlite3_value_int64(args[2]), c = (id - 1) / SQ_SUB_ROWS;
    sqlite3_result_int(ctx, id > upto || (id > 0 && c / 8 < n && (bit[c / 8] >> (c % 8) & 1)));
}

int sq_trigram_register(rs_backend *b, rs_err *err)
{
    static fts5_tokenizer tokenizer = {tri_create, tri_delete, tri_tokenize};
    fts5_api *api = NULL;
    sqlite3_stmt *st;
    int src = sqlite3_prepare_v2(b->db, "SELECT fts5(?1)", -1, &st, NULL);
    if (src == SQLITE_OK) {
        sqlite3_bind_pointer(st, 1, &api, "fts5_api_ptr", NULL);
        sqlite3_step(st);
        src = sqlite3_finalize(st);
    }
    if (src != SQLITE_OK || !api)
        return rs_err_set(err, -EIO, "this SQLite has no FTS5: %s", sqlite3_errmsg(b->db));
    if (api->xCreateTokenizer(api, "runfs_trigram", NULL, &tokenizer, NULL) != SQLITE_OK ||
        api->xCreateFunction(api, "runfs_subs", NULL, tri_subs, NULL) != SQLITE_OK)
        return rs_err_set(err, -ENOMEM, "out of memory");
    if (sqlite3_create_function_v2(b->db, "runfs_cand", 3,
                                   SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
                                   tri_cand, NULL, NULL, NULL) != SQLITE_OK)
        return rs_err_set(err, -ENOMEM, "out of memory");
    return 0;
}
