/* pg_search.c — the search index on PostgreSQL: the distinct words of the rows' canonical
 * content and metadata (ASCII letters lowered), each with the rows of each block of BLOCK
 * consecutive run_events ids that hold it, the words found by a pg_trgm GIN index; brought
 * up to date when a search runs, never by an append. Rows above the indexed blocks and
 * blocks a statement changed (triggers mark them) are candidates too: the index only
 * narrows. Without pg_trgm (CREATE EXTENSION refused) every search scans. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "pg_int.h"
#include "search.h"
#include "rs_util.h"

#define BLOCK 64
#define SYNC_BLOCKS 512  /* blocks one transaction indexes */
#define VACUUM_BLOCKS 16 /* blocks indexed or emptied between VACUUMs of runfs_search */
#define LAYOUT 5
#define LAYOUT_S "5" /* LAYOUT, for the statements */
#define DENSE_MIN 64 /* indexed blocks below which the index always narrows */
#define WORD_ROWS 4  /* a query word's index rows, per indexed block, past which it scans */

/* A word: a run of ASCII letters and digits (lowered) and bytes from 0x80. A term's words
 * each lie inside a word of any row it occurs in, so the rows holding, for each word of a
 * term, a word of the store that contains it, are all the candidates. */
static int word_byte(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch >= 0x80;
}

/* Made at the first search of a read-write store, after pg_trgm (an index of an older layout
 * is dropped and made again). The store's distinct words (runfs_search_words, a trigram
 * index to find those that contain a query's word), and for each word and block the rows of
 * the block that hold it (runfs_search: a bit a row, read by an index-only scan of its key).
 * Layout 4 kept each pair of rows' words as text under the trigram index: a word in 2% of the
 * rows was in 4% of the pairs, and checking its candidates read most of the table's pages,
 * each a page a new server process had never mapped (in a VM, page faults cost): 2,742 pages
 * for errno's 4,049 pairs, against 23 now; and each pair's second row was read, sorted and
 * sent for nothing. Words that no block holds any more (changed rows, a redaction) are
 * deleted with their last block's rows. Statement triggers with transition tables: a
 * DeerFlow UPDATE or DELETE marks its blocks too. A block marked already is marked again (a
 * new version of its row, so a new xmin): the catch-up that read the block's rows before
 * this change then leaves the mark it would have taken (sync_step). */
static const char *const search_schema[] = {
    "DROP TABLE IF EXISTS runfs_search",
    "DROP TABLE IF EXISTS runfs_search_words",
    "CREATE TABLE runfs_search_words (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
    "w TEXT NOT NULL UNIQUE)",
    /* No pending list: new words are few after the first build, and a list would be read
     * whole by every search until a VACUUM merged it. */
    "CREATE INDEX runfs_search_w ON runfs_search_words USING gin (w gin_trgm_ops) WITH "
    "(fastupdate = off)",
    "CREATE TABLE runfs_search (wid BIGINT NOT NULL, blk BIGINT NOT NULL, m BIGINT NOT NULL, "
    "PRIMARY KEY (wid, blk) INCLUDE (m))",
    "CREATE INDEX runfs_search_blk ON runfs_search (blk)",
    "CREATE TABLE IF NOT EXISTS runfs_search_dirty (blk BIGINT PRIMARY KEY)",
    "DELETE FROM runfs_search_dirty",
    "CREATE OR REPLACE FUNCTION runfs_search_deleted() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    "  INSERT INTO runfs_search_dirty (blk) SELECT DISTINCT (id - 1) / 64 FROM old_rows\n"
    "    ON CONFLICT (blk) DO UPDATE SET blk = excluded.blk;\n"
    "  RETURN NULL;\n"
    "END $$",
    "CREATE OR REPLACE FUNCTION runfs_search_updated() RETURNS trigger LANGUAGE plpgsql\n"
    "  SECURITY DEFINER SET search_path FROM CURRENT AS $$\n"
    "BEGIN\n"
    "  INSERT INTO runfs_search_dirty (blk) SELECT (id - 1) / 64 FROM old_rows UNION\n"
    "    SELECT (id - 1) / 64 FROM new_rows ON CONFLICT (blk) DO UPDATE SET blk = excluded.blk;\n"
    "  RETURN NULL;\n"
    "END $$",
    "CREATE OR REPLACE TRIGGER runfs_search_delete AFTER DELETE ON run_events\n"
    "  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "
    "runfs_search_deleted()",
    "CREATE OR REPLACE TRIGGER runfs_search_update AFTER UPDATE ON run_events\n"
    "  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE "
    "FUNCTION runfs_search_updated()",
    "INSERT INTO runfs_meta (key, value) VALUES ('search_upto', 0), ('search_cand', 0), "
    "('search_cand_xmax', 0) ON CONFLICT (key) DO UPDATE SET value = 0",
    /* Last: its presence says the rest is there. */
    "INSERT INTO runfs_meta (key, value) VALUES ('search_layout', " LAYOUT_S ") ON CONFLICT "
    "(key) DO UPDATE SET value = " LAYOUT_S,
};

static int meta_get(rs_backend *b, const char *key, int64_t *v, rs_err *err)
{
    int found;
    *v = 0;
    return pg_int(b, "SELECT value FROM runfs_meta WHERE key = $1", key, NULL, v, &found, err);
}

static int meta_set(rs_backend *b, const char *key, int64_t v, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, key);
    pg_arg_int(&a, v);
    return pg_run(b, "UPDATE runfs_meta SET value = $2 WHERE key = $1", &a, NULL, err);
}

/* pg_trgm and the tables, in their own transaction: a refused extension leaves nothing. */
static int make_index(rs_backend *b, rs_err *err)
{
    int rc = pg_begin(b, NULL, err);
    if (rc)
        return rc;
    if ((rc = pg_run(b, "CREATE EXTENSION IF NOT EXISTS pg_trgm", NULL, NULL, err))) {
        pg_rollback(b);
        b->search_off = 1;
        rs_buf msg = RS_BUF_INIT;
        if (b->notice &&
            !rs_buf_addf(&msg,
                         "search: no index, database %s refused pg_trgm (%s): every search "
                         "reads every row of its scope (at the root, the whole store), so it "
                         "costs as much as reading those events; CREATE EXTENSION pg_trgm by a "
                         "user with CREATE on the database gives the index",
                         PQdb(b->conn), err->msg))
            b->notice(b->notice_ctx, msg.buf);
        rs_buf_release(&msg);
        return -ENOSYS;
    }
    /* One maker at a time, on every host (the indexer's lock); one that waited finds it made. */
    int64_t layout = 0;
    if (!(rc = pg_run(b, "SELECT pg_advisory_xact_lock(1920233331, 1)", NULL, NULL, err)) &&
        !(rc = meta_get(b, "search_layout", &layout, err)) && layout >= LAYOUT)
        return pg_commit(b, err);
    for (size_t i = 0; !rc && i < sizeof search_schema / sizeof search_schema[0]; i++)
        rc = pg_run(b, search_schema[i], NULL, NULL, err);
    if (rc) {
        pg_rollback(b);
        return rc;
    }
    return pg_commit(b, err);
}

/* A block's words (lowered), each once, in text: the rows holding it (a bit a row, by its
 * place in the block) in the 8 bytes before it, and a space after it. The map's entries are
 * offsets + 1 of those bytes. */
#define MASK_BYTES 8

typedef struct word_key {
    const char *p;
    size_t len;
} word_key;

static size_t word_len(const char *w)
{
    size_t n = 0;
    while (w[n] != ' ')
        n++;
    return n;
}

static uint64_t word_hash(const void *ctx, const void *key)
{
    (void)ctx;
    const word_key *k = key;
    return rs_hash(RS_HASH_INIT, k->p, k->len);
}

static uint64_t word_entry_hash(const void *ctx, uintptr_t e)
{
    const char *w = ((const rs_buf *)ctx)->buf + e - 1 + MASK_BYTES;
    return rs_hash(RS_HASH_INIT, w, word_len(w));
}

static int word_matches(const void *ctx, uintptr_t e, const void *key)
{
    const char *w = ((const rs_buf *)ctx)->buf + e - 1 + MASK_BYTES;
    const word_key *k = key;
    return word_len(w) == k->len && memcmp(w, k->p, k->len) == 0;
}

static const rs_map_type word_type = {word_hash, word_entry_hash, word_matches};

/* A word longer than WORD_MAX bytes (a long CJK paragraph, a token of a hundred digits) is
 * kept as pieces of at most WORD_MAX bytes, each starting WORD_MAX / 2 after the one before
 * (at a character's first byte): a btree entry of runfs_search_words holds at most about
 * 2.7 kB. Any stretch of the word of QUERY_WORD_MAX bytes or fewer lies inside one piece, and
 * a query's longer word is looked for by its first QUERY_WORD_MAX bytes (words_sql). */
#define WORD_MAX 256
#define QUERY_WORD_MAX (WORD_MAX / 2 - 6)

static int utf8_cont(unsigned char ch)
{
    return (ch & 0xC0) == 0x80;
}

static int add_word(rs_buf *text, rs_map *seen, const char *w, size_t len, uint64_t bit)
{
    word_key k = {w, len};
    uintptr_t e = rs_map_find(seen, &k);
    if (e) {
        uint64_t m;
        memcpy(&m, text->buf + e - 1, sizeof m);
        m |= bit;
        memcpy(text->buf + e - 1, &m, sizeof m);
        return 0;
    }
    size_t at = text->len;
    int rc = rs_map_reserve(seen, seen->count + 1);
    if (rc || (rc = rs_buf_add(text, &bit, sizeof bit)) || (rc = rs_buf_add(text, w, len)) ||
        (rc = rs_buf_addch(text, ' ')))
        return rc;
    (void)rs_map_add(seen, at + 1);
    return 0;
}

/* The words of s[0..len) (lowered already) added to the block's, with the row's bit. */
static int add_words(rs_buf *text, rs_map *seen, const char *s, size_t len, uint64_t bit)
{
    for (size_t i = 0; i < len;) {
        if (!word_byte((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && word_byte((unsigned char)s[j]))
            j++;
        for (size_t from = i;; from += WORD_MAX / 2) {
            size_t a = from, z = from + WORD_MAX < j ? from + WORD_MAX : j;
            while (a < z && utf8_cont((unsigned char)s[a]))
                a++;
            while (z < j && z > a && utf8_cont((unsigned char)s[z]))
                z--;
            int rc = a < z ? add_word(text, seen, s + a, z - a, bit) : 0;
            if (rc)
                return rc;
            if (from + WORD_MAX >= j)
                break;
        }
        i = j;
    }
    return 0;
}

/* The block's words into the arrays' literals ws, bs and ms (words, blocks, row bits). A
 * word has no quote or backslash to escape; quoted, as null would be a NULL. */
static int add_block(rs_buf *ws, rs_buf *bs, rs_buf *ms, int64_t blk, const rs_buf *text,
                     const rs_map *seen)
{
    size_t pos = 0;
    uintptr_t e;
    while ((e = rs_map_next(seen, &pos))) {
        const char *w = text->buf + e - 1 + MASK_BYTES;
        uint64_t m;
        memcpy(&m, text->buf + e - 1, sizeof m);
        if (rs_buf_addf(ws, "%s\"%.*s\"", ws->len ? "," : "{", (int)word_len(w), w) ||
            rs_buf_addf(bs, "%s%lld", bs->len ? "," : "{", (long long)blk) ||
            rs_buf_addf(ms, "%s%lld", ms->len ? "," : "{", (long long)(int64_t)m))
            return -ENOMEM;
    }
    return 0;
}

/* The blocks' words in two statements: the words new to the store, then a row for each word
 * of each block (an insert a row cost a round trip each). One indexer at a time (its lock),
 * so no other adds a word in between. */
static int put_words(rs_backend *b, rs_buf *ws, rs_buf *bs, rs_buf *ms, rs_err *err)
{
    if (!ws->len)
        return 0;
    if (rs_buf_addch(ws, '}') || rs_buf_addch(bs, '}') || rs_buf_addch(ms, '}'))
        return rs_err_set(err, -ENOMEM, "out of memory");
    pg_args a = {.n = 0};
    pg_arg_text(&a, ws->buf);
    /* Only the new ones: an insert uses up a value of the identity even when it conflicts. */
    int rc = pg_run(b,
                    "INSERT INTO runfs_search_words (w) SELECT DISTINCT k.w FROM "
                    "unnest($1::text::text[]) k (w) WHERE NOT EXISTS (SELECT 1 FROM "
                    "runfs_search_words v WHERE v.w = k.w)",
                    &a, NULL, err);
    if (rc)
        return rc;
    pg_arg_text(&a, bs->buf);
    pg_arg_text(&a, ms->buf);
    return pg_run(b,
                  "INSERT INTO runfs_search (wid, blk, m) SELECT v.id, k.b, k.m FROM "
                  "unnest($1::text::text[], $2::text::bigint[], $3::text::bigint[]) k (w, b, m) "
                  "JOIN runfs_search_words v ON v.w = k.w",
                  &a, NULL, err);
}

/* Index blocks [lo, hi) from their rows as they are now. */
static int index_blocks(rs_backend *b, int64_t lo, int64_t hi, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_int(&a, lo * BLOCK);
    pg_arg_int(&a, hi * BLOCK);
    PGresult *r;
    int rc = pg_run(b,
                    "DELETE FROM runfs_search WHERE blk >= $1::bigint / 64 AND blk < "
                    "$2::bigint / 64",
                    &a, NULL, err);
    if (rc || (rc = pg_run(b,
                           "SELECT " PG_ROW_COLUMNS " FROM run_events e WHERE e.id > $1 AND "
                           "e.id <= $2 ORDER BY e.id",
                           &a, &r, err)))
        return rc;
    rs_buf line = RS_BUF_INIT, low = RS_BUF_INIT, text = RS_BUF_INIT, ws = RS_BUF_INIT,
           bs = RS_BUF_INIT, ms = RS_BUF_INIT;
    rs_map seen = RS_MAP_INIT(&word_type, &text);
    pg_canon canon = {.valid = 0};
    int64_t cur = -1;
    int n = PQntuples(r);
    for (int i = 0; !rc && i <= n; i++) {
        int64_t id = i < n ? pg_val_int(r, i, PG_ROW_ID) : 0;
        int64_t blk = i < n ? (id - 1) / BLOCK : -2;
        if (blk != cur && cur >= 0) {
            if (add_block(&ws, &bs, &ms, cur, &text, &seen)) {
                rc = rs_err_set(err, -ENOMEM, "out of memory");
                break;
            }
            rs_buf_reset(&text);
            rs_map_clear(&seen);
        }
        if (i == n)
            break;
        cur = blk;
        rs_row row;
        char at[PG_AT_MAX];
        pg_row(&row, r, i, 0, at);
        row.canonical = pg_canon_has(b, &canon, r, i);
        size_t cs, cl, ms0, ml;
        rs_buf_reset(&line);
        rs_buf_reset(&low);
        /* A row that does not render has no text to find (its reads fail alike). */
        if (rs_event_encode(&line, &row, NULL) ||
            rs_search_spans(line.buf, line.len, &cs, &cl, &ms0, &ml))
            continue;
        if (rs_search_lower(&low, line.buf + cs, cl) || rs_buf_addch(&low, ' ') ||
            rs_search_lower(&low, line.buf + ms0, ml) ||
            add_words(&text, &seen, low.buf, low.len, (uint64_t)1 << ((id - 1) % BLOCK)))
            rc = rs_err_set(err, -ENOMEM, "out of memory");
    }
    PQclear(r);
    if (!rc)
        rc = put_words(b, &ws, &bs, &ms, err);
    rs_map_release(&seen);
    rs_buf_release(&line);
    rs_buf_release(&low);
    rs_buf_release(&text);
    rs_buf_release(&ws);
    rs_buf_release(&bs);
    rs_buf_release(&ms);
    return rc;
}

int pg_search_delete(rs_backend *b, const char *blocks, const pg_args *a, rs_buf *wids, rs_err *err)
{
    rs_buf sql = RS_BUF_INIT;
    PGresult *r = NULL;
    int rc = wids ? rs_buf_addf(&sql,
                                "WITH gone AS (DELETE FROM runfs_search WHERE %s RETURNING wid) "
                                "SELECT string_agg(DISTINCT wid::text, ',') FROM gone",
                                blocks)
                  : rs_buf_addf(&sql, "DELETE FROM runfs_search WHERE %s", blocks);
    if (rc)
        rc = rs_err_set(err, -ENOMEM, "out of memory");
    else
        rc = pg_run(b, sql.buf, a, wids ? &r : NULL, err);
    if (!rc && r && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) &&
        (rs_buf_addf(wids, "%s%s", wids->len ? "," : "", PQgetvalue(r, 0, 0))))
        rc = rs_err_set(err, -ENOMEM, "out of memory");
    PQclear(r);
    rs_buf_release(&sql);
    return rc;
}

int pg_search_orphans(rs_backend *b, const rs_buf *wids, rs_err *err)
{
    if (!wids->len)
        return 0;
    pg_args a = {.n = 0};
    pg_arg_text(&a, wids->buf);
    return pg_run(b,
                  "DELETE FROM runfs_search_words v WHERE v.id = ANY(string_to_array($1::text, "
                  "',')::bigint[]) AND NOT EXISTS (SELECT 1 FROM runfs_search s WHERE s.wid = "
                  "v.id)",
                  &a, NULL, err);
}

/* One transaction's share. Ids are handed out before their rows commit, in any order: the
 * mark passes a top id only once no transaction that may still add a row below it runs
 * (none in flight at this snapshot, or all of those in flight at the one that saw it
 * gone). */
static int sync_step(rs_backend *b, int *more, rs_err *err)
{
    PGresult *r;
    /* One indexer at a time, on every host (a lock space of its own: two int keys). */
    int rc = pg_run(b, "SELECT pg_advisory_xact_lock(1920233331, 1)", NULL, NULL, err);
    if (rc)
        return rc;
    rc = pg_run(b,
                "SELECT pg_snapshot_xmin(s)::text::bigint, pg_snapshot_xmax(s)::text::bigint, "
                "NOT EXISTS (SELECT pg_snapshot_xip(s)), (SELECT coalesce(max(id), 0) FROM "
                "run_events) FROM pg_current_snapshot() s",
                NULL, &r, err);
    if (rc)
        return rc;
    int64_t xmin = pg_val_int(r, 0, 0), xmax = pg_val_int(r, 0, 1), top = pg_val_int(r, 0, 3);
    int quiet = PQgetvalue(r, 0, 2)[0] == 't';
    PQclear(r);
    int64_t upto, cand, cand_xmax, blk;
    if ((rc = meta_get(b, "search_upto", &upto, err)) ||
        (rc = meta_get(b, "search_cand", &cand, err)) ||
        (rc = meta_get(b, "search_cand_xmax", &cand_xmax, err)))
        return rc;
    int64_t safe = quiet ? top : cand > upto && xmin >= cand_xmax ? cand : upto;
    size_t done = 0;
    rs_buf wids = RS_BUF_INIT; /* the words of the blocks indexed again or emptied */
    /* A mark leaves only as this step read it (its row's xmin): a writer that changed the
     * block after the step read its rows marked it again, a new version of the row, which
     * the delete, waiting for that writer where it must, then leaves for a later step. */
    while (done < SYNC_BLOCKS) {
        PGresult *r;
        if ((rc = pg_run(b,
                         "SELECT blk, xmin::text::bigint FROM runfs_search_dirty ORDER BY blk "
                         "LIMIT 1",
                         NULL, &r, err)))
            break;
        int found = PQntuples(r) > 0;
        blk = found ? pg_val_int(r, 0, 0) : 0;
        int64_t mark = found ? pg_val_int(r, 0, 1) : 0;
        PQclear(r);
        if (!found)
            break;
        pg_args a = {.n = 0};
        pg_arg_int(&a, blk);
        /* The block's words, looked at once it is indexed again. */
        if ((rc = pg_search_delete(b, "blk = $1", &a, &wids, err)) ||
            (blk < upto / BLOCK && (rc = index_blocks(b, blk, blk + 1, err))))
            break;
        pg_arg_int(&a, mark);
        if ((rc = pg_run(b,
                         "DELETE FROM runfs_search_dirty WHERE blk = $1 AND xmin::text::bigint = "
                         "$2",
                         &a, NULL, err)))
            break;
        done++;
    }
    if (!rc)
        rc = pg_search_orphans(b, &wids, err);
    rs_buf_release(&wids);
    if (rc)
        return rc;
    int64_t from = upto / BLOCK, to = safe / BLOCK;
    if (to > from + (int64_t)(SYNC_BLOCKS - done))
        to = from + (int64_t)(SYNC_BLOCKS - done);
    if (to > from && (rc = index_blocks(b, from, to, err)))
        return rc;
    if (to < from)
        to = from;
    b->search_unvacuumed += (int64_t)done + (to - from);
    *more = done == SYNC_BLOCKS || to < safe / BLOCK;
    if ((rc = meta_set(b, "search_upto", to * BLOCK, err)))
        return rc;
    if (cand <= safe || xmin >= cand_xmax) {
        if ((rc = meta_set(b, "search_cand", top, err)))
            return rc;
        rc = meta_set(b, "search_cand_xmax", xmax, err);
    }
    return rc;
}

/* The index's layout and mark, and whether it lacks whole blocks or holds changed ones, in
 * one round trip and no write transaction: a search of a quiet store writes nothing. A
 * read-only store brings nothing up to date, so it does not ask for changed blocks (its
 * search's statements read them as candidates). */
static int sync_needed(rs_backend *b, int64_t *layout, int64_t *upto, int *needed, rs_err *err)
{
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT coalesce((SELECT value FROM runfs_meta WHERE key = 'search_layout'), "
                    "0), coalesce((SELECT value FROM runfs_meta WHERE key = 'search_upto'), 0), "
                    "(SELECT coalesce(max(id), 0) FROM run_events)",
                    NULL, &r, err);
    if (rc)
        return rc;
    *layout = pg_val_int(r, 0, 0);
    *upto = pg_val_int(r, 0, 1);
    int64_t top = pg_val_int(r, 0, 2), dirty = 0;
    PQclear(r);
    int found;
    if (*layout == LAYOUT && !b->read_only &&
        (rc = pg_int(b, "SELECT count(*) FROM (SELECT 1 FROM runfs_search_dirty LIMIT 1) d", NULL,
                     NULL, &dirty, &found, err)))
        return rc;
    *needed = *layout != LAYOUT || dirty > 0 || *upto != top / BLOCK * BLOCK;
    return 0;
}

static int sync_index(rs_backend *b, rs_err *err)
{
    int more = 1, rc = 0;
    while (!rc && more) {
        more = 0;
        if ((rc = pg_begin(b, NULL, err)))
            return rc;
        if ((rc = sync_step(b, &more, err))) {
            pg_rollback(b);
            return rc;
        }
        rc = pg_commit(b, err);
    }
    /* A search reads runfs_search by an index-only scan, which reads the table's pages too
     * until a VACUUM marks them all-visible: a word's rows are one a block, so on as many
     * pages. Vacuumed by its owner (another role's VACUUM only warns, and the notice is
     * dropped; autovacuum comes later), never waiting for another's; a failure is no
     * search's. Not at every catch-up: a VACUUM costs a pass over the table's visibility
     * map and a round trip whatever it finds, and a few blocks not all-visible cost a
     * search a page each of a word's; so once VACUUM_BLOCKS were indexed or emptied since
     * (a first build's catch-up at once). */
    if (!rc && !b->in_tx && !b->read_tx && b->search_unvacuumed >= VACUUM_BLOCKS) {
        b->search_unvacuumed = 0;
        pg_exec_plain(b, "VACUUM (SKIP_LOCKED) runfs_search", NULL);
    }
    return rc;
}

/* The ids of the store's words that contain each word of three bytes or more of each
 * positive text term (valid UTF-8: what text may hold), k numbering the term's words, as
 * LIKE on literal patterns (a prepared statement's generic plan would not use the trigram
 * index); *n: how many. A word has no LIKE wildcard or escape to quote. */
static int words_sql(const rs_search *q, rs_buf *sql, int *n)
{
    int rc = 0;
    *n = 0;
    for (size_t i = 0; !rc && i < q->n; i++) {
        const rs_term *t = &q->terms[i];
        if (t->kind != RS_TERM_TEXT || t->negate || !rs_utf8_valid(t->text, t->len))
            continue;
        for (size_t k = 0; !rc && k < t->len;) {
            size_t j = k;
            while (j < t->len && word_byte((unsigned char)t->text[j]))
                j++;
            size_t z = j;
            if (z - k > QUERY_WORD_MAX) {
                /* Its first bytes: in one piece of any long word holding it (add_words). */
                z = k + QUERY_WORD_MAX;
                while (z > k && utf8_cont((unsigned char)t->text[z]))
                    z--;
            }
            if (j - k >= 3) {
                rc = rs_buf_addf(sql,
                                 "%sSELECT %d AS k, id FROM runfs_search_words WHERE w LIKE "
                                 "'%%%.*s%%'",
                                 *n ? " UNION ALL " : "", *n, (int)(z - k), t->text + k);
                (*n)++;
            }
            k = j + 1;
        }
    }
    return rc;
}

/* Into sql: the index's rows of the query's words (k, blk, m) outside changed blocks, up to
 * limit (0: all). */
static int word_rows_sql(rs_buf *sql, const char *words, int64_t limit)
{
    int rc = rs_buf_addf(sql,
                         "SELECT v.k, s.blk, s.m FROM (%s) v JOIN runfs_search s ON s.wid = "
                         "v.id WHERE s.blk NOT IN (SELECT blk FROM runfs_search_dirty)",
                         words);
    if (!rc && limit)
        rc = rs_buf_addf(sql, " LIMIT %lld", (long long)limit);
    return rc ? -ENOMEM : 0;
}

/* Into sql: the index's rows of the query's words as j (word_rows_sql); then the blocks
 * where every word k is, each with the rows that hold them all (m), as t. */
static int masks_sql(rs_buf *sql, const char *words, int n, int64_t limit)
{
    return rs_buf_addstr(sql, "WITH j AS MATERIALIZED (") || word_rows_sql(sql, words, limit) ||
                   rs_buf_addf(sql,
                               "), t AS (SELECT blk, bit_and(m) AS m FROM (SELECT k, blk, "
                               "bit_or(m) AS m FROM j GROUP BY k, blk) p GROUP BY blk HAVING "
                               "count(*) = %d) ",
                               n)
               ? -ENOMEM
               : 0;
}

/* An index row of a query word (word_rows_sql): word k is in block blk's rows m. */
typedef struct word_bits {
    int64_t blk;
    int k;
    uint64_t m;
} word_bits;

static int word_bits_cmp(const void *a, const void *b)
{
    const word_bits *x = a, *y = b;
    if (x->blk != y->blk)
        return x->blk < y->blk ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

/* masks_sql's t from r's word_rows_sql rows, in the client: each block where all n words
 * are, with the rows that hold them all, in *out (*nout of them, by block). The server's two
 * hash aggregates over the same rows cost it more than the rows' sending: a phrase of two
 * words in 2,549 blocks, 5,098 rows, executed in 10-29 ms with them against 2-15 without
 * (EXPLAIN ANALYZE in fresh sessions, load 15). */
static int word_masks(const PGresult *r, int rows, int n, word_bits **out, size_t *nout)
{
    word_bits *w = malloc((rows > 0 ? (size_t)rows : 1) * sizeof *w);
    if (!w)
        return -ENOMEM;
    for (int i = 0; i < rows; i++) {
        w[i].k = (int)strtol(PQgetvalue(r, i, 0), NULL, 10);
        w[i].blk = strtoll(PQgetvalue(r, i, 1), NULL, 10);
        w[i].m = (uint64_t)strtoll(PQgetvalue(r, i, 2), NULL, 10);
    }
    qsort(w, (size_t)rows, sizeof *w, word_bits_cmp);
    size_t got = 0;
    for (int i = 0; i < rows;) {
        int64_t blk = w[i].blk;
        uint64_t all = ~(uint64_t)0;
        int words = 0;
        while (i < rows && w[i].blk == blk) {
            /* One query word may be in several of the store's words: any of them. */
            int k = w[i].k;
            uint64_t any = 0;
            for (; i < rows && w[i].blk == blk && w[i].k == k; i++)
                any |= w[i].m;
            all &= any;
            words++;
        }
        /* In place: the blocks kept are never more than the rows read. */
        if (words == n)
            w[got++] = (word_bits){.blk = blk, .m = all};
    }
    *out = w;
    *nout = got;
    return 0;
}

/* The bound on a query's index rows past which it scans: WORD_ROWS a word and indexed block
 * (a word contained in many of the store's words), once the index is large. */
static int64_t rows_limit(int n, int64_t upto)
{
    return upto >= DENSE_MIN * BLOCK ? (int64_t)n * WORD_ROWS * (upto / BLOCK) + 1 : 0;
}

/* Candidates in more than a quarter of the rows: the index hardly narrows, and its
 * candidates come only all at once, sorted, where a scan of the scope's threads gives its
 * first lines at once (a reader of the first page waits for no more). */
static int dense(int64_t hits, int64_t upto)
{
    return upto >= DENSE_MIN * BLOCK && hits * 4 > upto;
}

static int bits(uint64_t m)
{
    int c = 0;
    for (; m; m &= m - 1)
        c++;
    return c;
}

/* Each indexed block's candidate rows (a bit a row, 0 where none), the blocks of t (blk, m),
 * as an array literal in *list, element k for block k - 1. */
static int masks_list(const word_bits *t, size_t nt, int64_t upto, rs_buf *list)
{
    int64_t blocks = upto / BLOCK;
    int64_t *m = calloc(blocks > 0 ? (size_t)blocks : 1, sizeof *m);
    if (!m)
        return -ENOMEM;
    for (size_t i = 0; i < nt; i++)
        if (t[i].blk >= 0 && t[i].blk < blocks)
            m[t[i].blk] = (int64_t)t[i].m;
    int rc = rs_buf_addch(list, '{');
    for (int64_t k = 0; !rc && k < blocks; k++)
        rc = rs_buf_addf(list, k ? ",%lld" : "%lld", (long long)m[k]);
    free(m);
    return rc || rs_buf_addch(list, '}') ? -ENOMEM : 0;
}

/* The candidate rows outside changed blocks as an array literal in *list, read in a
 * transaction left open for the rows' cursor: REPEATABLE READ, so the cursor sees the index
 * and its marks as this did (an indexer may rebuild a changed block in between), and the
 * index read once. Their ids - 1; or, where the index hardly narrows and the answer is
 * wanted whole (not streamed), each indexed block's bits (*masked 1). -ENOSYS, the
 * transaction ended, where the index hardly narrows and the answer streams. Without seq
 * scans: the words by their trigram index, their rows by an index-only scan. */
static int candidates(rs_backend *b, const char *words, int n, int64_t upto, int streamed,
                      rs_buf *list, int *masked, rs_err *err)
{
    rs_buf *sql = &b->sql;
    rs_buf_reset(sql);
    int64_t limit = rows_limit(n, upto);
    if (word_rows_sql(sql, words, limit))
        return -ENOMEM;
    PGresult *r = NULL;
    int rc = pg_pipe_start(b, err);
    /* The rows' sort holds the candidates' rows: in memory, not spilled to disk. */
    if (!rc && !(rc = pg_run(b, "BEGIN ISOLATION LEVEL REPEATABLE READ", NULL, NULL, err)) &&
        !(rc = pg_run(b, "SET LOCAL enable_seqscan = off", NULL, NULL, err)) &&
        !(rc = pg_run(b, "SET LOCAL work_mem = '64MB'", NULL, NULL, err)) &&
        !(rc = pg_run(b, sql->buf, NULL, &r, err)))
        rc = pg_pipe_run(b, err);
    else if (b->piped)
        pg_pipe_run(b, NULL);
    if (rc) {
        PQclear(r);
        return rc;
    }
    /* As many index rows as the bound: a word in most of the store's words, scanned. */
    int rows = PQntuples(r);
    word_bits *t = NULL;
    size_t nt = 0;
    int64_t hits = limit && rows >= limit ? -1 : 0;
    if (hits >= 0 && word_masks(r, rows, n, &t, &nt)) {
        PQclear(r);
        return rs_err_set(err, -ENOMEM, "out of memory"); /* the caller ends the transaction */
    }
    PQclear(r);
    for (size_t i = 0; i < nt; i++)
        hits += bits(t[i].m);
    *masked = hits >= 0 && dense(hits, upto) && !streamed;
    if (hits < 0 || (dense(hits, upto) && !*masked)) {
        free(t);
        pg_exec_plain(b, "COMMIT", NULL);
        return -ENOSYS;
    }
    if (*masked) {
        rc = masks_list(t, nt, upto, list);
        free(t);
        return rc ? rs_err_set(err, -ENOMEM, "out of memory") : 0;
    }
    rc = rs_buf_addch(list, '{');
    for (size_t i = 0; !rc && i < nt; i++)
        for (int k = 0; !rc && k < BLOCK; k++)
            if (t[i].m >> k & 1)
                rc = rs_buf_addf(list, list->len > 1 ? ",%lld" : "%lld",
                                 (long long)(t[i].blk * BLOCK + k));
    free(t);
    return rc || rs_buf_addch(list, '}') ? -ENOMEM : 0;
}

/* The same decision inside a transaction open already (its statements each see the store
 * anew): the candidates are counted, then read again by the rows' statement. */
static int dense_inline(rs_backend *b, const char *words, int n, int64_t upto, rs_err *err)
{
    rs_buf *sql = &b->sql;
    rs_buf_reset(sql);
    int64_t limit = rows_limit(n, upto);
    if (masks_sql(sql, words, n, limit) ||
        rs_buf_addstr(sql, "SELECT (SELECT count(*) FROM j), (SELECT coalesce(sum(length("
                           "replace(m::bit(64)::text, '0', ''))), 0) FROM t)"))
        return rs_err_set(err, -ENOMEM, "out of memory");
    PGresult *r;
    int rc = pg_run(b, sql->buf, NULL, &r, err);
    if (rc)
        return rc;
    int64_t got = strtoll(PQgetvalue(r, 0, 0), NULL, 10),
            hits = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    PQclear(r);
    return (limit && got >= limit) || dense(hits, upto) ? -ENOSYS : 0;
}

/* The candidates as ranges of ids, each read by a range of the primary key: rows_sql. */
static int ranges_sql(rs_buf *sql, const char *words, int64_t upto)
{
    int rc = rs_buf_addstr(sql, "SELECT " PG_ROW_COLUMNS " FROM (SELECT lo, least(lo + 1, ");
    if (!rc && words)
        rc = rs_buf_addf(sql,
                         "%lld) AS hi FROM (SELECT t.blk * 64 + b.b AS lo FROM t CROSS JOIN "
                         "generate_series(0, 63) b (b) WHERE (t.m >> b.b) & 1 = 1) c",
                         (long long)upto);
    else if (!rc)
        rc =
            rs_buf_addf(sql, "%lld) AS hi FROM unnest($1::text::bigint[]) c (lo)", (long long)upto);
    if (!rc)
        rc = rs_buf_addf(sql,
                         " UNION ALL SELECT blk * 64, least(blk * 64 + 64, %lld) FROM "
                         "runfs_search_dirty UNION ALL SELECT %lld, %lld) k CROSS JOIN LATERAL "
                         "(SELECT * FROM run_events e WHERE e.id > k.lo AND e.id <= k.hi OFFSET "
                         "0) e WHERE true",
                         (long long)upto, (long long)upto, (long long)INT64_MAX);
    return rc;
}

/* The candidates as each indexed block's bits ($1), the rows of changed blocks and those
 * above the mark: each thread's rows in turn (the scope's thread, $2, or the store's,
 * found by a descent of the thread index each, in bytewise order), kept by their bit, then
 * sorted by seq within the thread (an incremental sort: a thread's rows at a time, in
 * memory, the first ones sent at once). A sort of the whole answer held hundreds of MB on a
 * large store and spilled to disk. OFFSET 0: the thread's rows stay a scan of their own. */
static int masked_sql(rs_buf *sql, int64_t upto, int one_thread)
{
    int rc = one_thread
                 ? rs_buf_addstr(sql, "SELECT " PG_ROW_COLUMNS " FROM (SELECT $2::text AS t) tr")
                 : rs_buf_addstr(sql, "WITH RECURSIVE th (t) AS (SELECT min(thread_id) FROM "
                                      "run_events UNION ALL SELECT (SELECT min(e.thread_id) "
                                      "FROM run_events e WHERE e.thread_id > th.t) FROM th "
                                      "WHERE th.t IS NOT NULL) SELECT " PG_ROW_COLUMNS
                                      " FROM (SELECT t FROM th WHERE t IS NOT NULL ORDER BY t "
                                      "COLLATE \"C\") tr");
    return rc || rs_buf_addf(sql,
                             " CROSS JOIN LATERAL (SELECT * FROM run_events e WHERE "
                             "e.thread_id = tr.t AND (e.id > %lld OR (SELECT "
                             "$1::text::bigint[])[(e.id - 1) / 64 + 1] >> ((e.id - 1) %% "
                             "64)::int & 1 = 1 OR (e.id - 1) / 64 IN (SELECT blk FROM "
                             "runfs_search_dirty)) OFFSET 0) e WHERE true",
                             (long long)upto)
               ? -ENOMEM
               : 0;
}

/* The rows' statement into sql: the candidates are ranges of ids (the candidate rows, from
 * $1's list or, with words, read here; the changed blocks; the rows above the mark: none
 * overlaps another), each read by a range of the primary key (LATERAL, OFFSET 0: the
 * planner cannot estimate a join on ranges, and flattened it sorted the whole table to join
 * it). Masked ($1 holds each indexed block's bits): masked_sql, a quarter of the rows or
 * more costing less so than by as many probes of the primary key, and far less than a scan
 * of each thread by a statement of its own (every row sent and rendered). Literals, not
 * parameters, for the mark and the patterns: the plan is made for them. */
static int rows_sql(rs_buf *sql, const char *words, int n, int64_t upto, int masked,
                    const char *thread_id, const char *run_id, const char *user,
                    const char *after_thread, const char *type, const char *category)
{
    rs_buf_reset(sql);
    int rc = words ? masks_sql(sql, words, n, 0) : 0;
    if (!rc && masked)
        rc = masked_sql(sql, upto, thread_id != NULL);
    else if (!rc)
        rc = ranges_sql(sql, words, upto);
    if (!rc && thread_id)
        rc = rs_buf_addstr(sql, " AND e.thread_id = $2");
    if (!rc && run_id)
        rc = rs_buf_addstr(sql, " AND e.run_id = $3");
    if (!rc && user)
        rc = rs_buf_addstr(sql, " AND e.user_id = $4");
    if (!rc && after_thread)
        rc = rs_buf_addstr(sql, " AND (e.thread_id COLLATE \"C\" > $5 OR (e.thread_id = $5 AND "
                                "e.seq > $6))");
    if (!rc && type)
        rc = rs_buf_addstr(sql, " AND e.event_type = $7");
    if (!rc && category)
        rc = rs_buf_addstr(sql, " AND e.category = $8");
    if (!rc)
        rc = rs_buf_addstr(sql, masked ? " ORDER BY tr.t COLLATE \"C\", e.seq"
                                       : " ORDER BY e.thread_id COLLATE \"C\", e.seq");
    return rc ? -ENOMEM : 0;
}

/* The event type and the category q requires (its first positive type: and category:
 * terms, each a whole value), or NULL: the rows' statement leaves the others on the server
 * (a typed phrase's candidates hold the phrase in any event's text). */
static void required(const rs_search *q, const char **type, const char **category)
{
    *type = *category = NULL;
    for (size_t i = 0; i < q->n; i++) {
        const rs_term *t = &q->terms[i];
        if (t->negate)
            continue;
        if (t->kind == RS_TERM_TYPE && !*type)
            *type = t->text;
        else if (t->kind == RS_TERM_CATEGORY && !*category)
            *category = t->text;
    }
}

int pg_search(rs_backend *b, const rs_search *q, const char *thread_id, const char *run_id,
              const char *user, const char *after_thread, int64_t after_seq, rs_cursor **out,
              rs_err *err)
{
    int64_t layout = 0, upto = 0;
    int needed = 1, n = 0, rc = sync_needed(b, &layout, &upto, &needed, err);
    /* A connection that was refused pg_trgm has no index tables to bring up to date. An
     * index of a later layout is a newer build's, on a database hosts share while they are
     * upgraded one by one: this build scans rather than drop it, which the newer build
     * would then make again, each taking the other's table away. */
    if (!rc && layout < LAYOUT && !b->read_only && !b->search_off && !(rc = make_index(b, err))) {
        /* A new index starts empty, whatever mark an older layout's had: its whole making
         * counts as growth for the statistics. */
        layout = LAYOUT;
        upto = 0;
    }
    int64_t before = upto;
    if (!rc && layout == LAYOUT && needed && !b->read_only && !(rc = sync_index(b, err)) &&
        !(rc = sync_needed(b, &layout, &upto, &needed, err)))
        pg_analyze_grown(b, 0, upto - before);
    if (rc || layout != LAYOUT)
        return rc ? rc : -ENOSYS;
    rs_buf words = RS_BUF_INIT;
    if ((rc = words_sql(q, &words, &n)) || n == 0) {
        rs_buf_release(&words);
        return rc ? rs_err_set(err, -ENOMEM, "out of memory") : -ENOSYS;
    }
    rs_buf *sql = &b->sql, list = RS_BUF_INIT;
    int own = !b->in_tx && !b->read_tx, masked = 0;
    if (own)
        rc = candidates(b, words.buf, n, upto, q->streamed, &list, &masked, err);
    else if (upto >= DENSE_MIN * BLOCK)
        rc = dense_inline(b, words.buf, n, upto, err);
    const char *type, *category;
    required(q, &type, &category);
    if (!rc)
        rc = rows_sql(sql, own ? NULL : words.buf, n, upto, masked, thread_id, run_id, user,
                      after_thread, type, category);
    rs_buf_release(&words);
    if (rc) {
        rs_buf_release(&list);
        if (own && rc != -ENOSYS && PQstatus(b->conn) == CONNECTION_OK)
            pg_exec_plain(b, "ROLLBACK", NULL);
        return rc == -ENOMEM ? rs_err_set(err, rc, "out of memory") : rc;
    }
    pg_args a = {.n = 0};
    pg_arg_text(&a, own ? list.buf : NULL);
    pg_arg_text(&a, thread_id);
    pg_arg_text(&a, run_id);
    pg_arg_text(&a, user);
    pg_arg_text(&a, after_thread);
    pg_arg_int(&a, after_seq);
    pg_arg_text(&a, type);
    pg_arg_text(&a, category);
    /* The cursor joins the transaction the candidates were read in: its statement sees the
     * index and the marks as they did. */
    b->read_tx += own;
    rc = pg_cursor_new(b, sql->buf, &a, 0, 0, 0, out, err);
    b->read_tx -= own;
    if (!rc && own)
        pg_cursor_fixed(*out);
    rs_buf_release(&list);
    if (rc && own && PQstatus(b->conn) == CONNECTION_OK)
        pg_exec_plain(b, "ROLLBACK", NULL);
    return rc;
}

int pg_search_rows(rs_backend *b, const int64_t *ids, size_t n, rs_cursor **out, rs_err *err)
{
    rs_buf list = RS_BUF_INIT;
    int rc = rs_buf_addch(&list, '{');
    for (size_t i = 0; !rc && i < n; i++)
        rc = rs_buf_addf(&list, i ? ",%lld" : "%lld", (long long)ids[i]);
    if (!rc)
        rc = rs_buf_addch(&list, '}');
    if (rc) {
        rs_buf_release(&list);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    pg_args a = {.n = 0};
    pg_arg_text(&a, list.buf);
    rc = pg_cursor_new(b,
                       "SELECT " PG_ROW_COLUMNS " FROM unnest($1::text::bigint[]) WITH ORDINALITY "
                       "k (id, n) JOIN run_events e ON e.id = k.id ORDER BY k.n",
                       &a, 0, 0, 0, out, err);
    rs_buf_release(&list);
    return rc;
}
