/* sqlite_trigram.c — the search index's FTS5 tokenizer: each distinct three-byte window of a
 * document once, ASCII letters lowered (FTS5's own trigram tokenizer hands every position to
 * the index, most of them repeats in a block of similar rows), spelled as six hex digits so
 * that any bytes, a part of a UTF-8 character too, make a token the query can name as a
 * bare word. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_int.h"
#include "rs_util.h"

#define WINDOWS (1u << 24) /* every three-byte window */

typedef struct trigram {
    uint8_t *seen; /* WINDOWS bits (2 MiB): the windows of the document being tokenized */
    uint32_t *set; /* which of them, to clear after */
    size_t n, cap;
} trigram;

static int tri_create(void *ctx, const char **args, int n_args, Fts5Tokenizer **out)
{
    (void)ctx;
    (void)args;
    (void)n_args;
    trigram *t = calloc(1, sizeof *t);
    if (!t)
        return SQLITE_NOMEM;
    *out = (Fts5Tokenizer *)t;
    return SQLITE_OK;
}

static void tri_delete(Fts5Tokenizer *tok)
{
    trigram *t = (trigram *)tok;
    free(t->seen);
    free(t->set);
    free(t);
}

static int tri_tokenize(Fts5Tokenizer *tok, void *ctx, int flags, const char *text, int len,
                        int (*emit)(void *, int, const char *, int, int, int))
{
    trigram *t = (trigram *)tok;
    /* A query names tokens as they are (match_expr spells them). */
    if (flags & FTS5_TOKENIZE_QUERY)
        return len > 0 ? emit(ctx, 0, text, len, 0, len) : SQLITE_OK;
    /* Made at the first document: a connection that only searches needs none. */
    if (!t->seen && !(t->seen = calloc(WINDOWS / 8, 1)))
        return SQLITE_NOMEM;
    int rc = SQLITE_OK;
    const unsigned char *p = (const unsigned char *)text;
    uint32_t w = 0;
    int clean = 0; /* bytes since the last '\n' (rows are joined by it; JSON never holds one) */
    for (int i = 0; rc == SQLITE_OK && i < len; i++) {
        unsigned ch = p[i] >= 'A' && p[i] <= 'Z' ? p[i] + ('a' - 'A') : p[i];
        w = (w << 8 | ch) & (WINDOWS - 1);
        clean = ch == '\n' ? 0 : clean + 1;
        if (clean < 3 || (t->seen[w >> 3] & (1u << (w & 7))))
            continue;
        if (t->n == t->cap && rs_array_grow(&t->set, &t->cap, t->n + 1, sizeof *t->set)) {
            rc = SQLITE_NOMEM;
            break;
        }
        t->seen[w >> 3] |= (uint8_t)(1u << (w & 7));
        t->set[t->n++] = w;
        char s[6];
        for (int k = 0; k < 3; k++) {
            unsigned b = w >> (16 - 8 * k) & 255;
            s[2 * k] = rs_hex_digits[b >> 4];
            s[2 * k + 1] = rs_hex_digits[b & 15];
        }
        rc = emit(ctx, 0, s, 6, i - 2, i + 1);
    }
    for (size_t k = 0; k < t->n; k++)
        t->seen[t->set[k] >> 3] = 0;
    t->n = 0;
    return rc;
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
    if (api->xCreateTokenizer(api, "runfs_trigram", NULL, &tokenizer, NULL) != SQLITE_OK)
        return rs_err_set(err, -ENOMEM, "out of memory");
    return 0;
}
