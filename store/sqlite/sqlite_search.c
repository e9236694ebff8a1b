/* sqlite_search.c — the search index: FTS5 trigram over blocks of BLOCK consecutive
 * run_events ids (one document per block: its rows' canonical lines from content to
 * created_at, SUB rows a column), brought up to date when a search runs, never by an append.
 * A block's candidates are the rows of its columns where every trigram of the query occurs.
 * Rows above the indexed blocks and rows of blocks another writer changed (triggers mark
 * them) are candidates too, so the index only narrows and is never stale: rs_search_match
 * decides. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "sqlite_int.h"
#include "rs_util.h"

#define BLOCK 64
/* Rows a column: the columns say where in the block a trigram is, so a term in 1-3% of the
 * rows (in most blocks) has its candidates in a twentieth to a tenth of the rows, not most
 * of them: a phrase's windows meet in few columns where it is not, so its candidates are
 * about the columns that hold it, four rows each (eight read twice the rows, for an index
 * an eighth cheaper to build). A document per SUB rows would say as much with sixteen
 * times the documents. */
#define SUB SQ_SUB_ROWS
#define LAYOUT 5
#define SYNC_BLOCKS 512 /* blocks one transaction indexes: appends wait at most that long */
/* A document's rowid is the block's generation << 40 | blk: consecutive blocks of one
 * generation differ by 1, a one-byte delta in FTS5's lists. Blocks from BLK_MAX up are
 * never indexed (ids from 2^46: their rows stay candidates). */
#define BLK_MAX ((int64_t)1 << 40)
#define BLK_SQL "1099511627775" /* BLK_MAX - 1 */
#define GENS ((int64_t)1 << 22)
#define STALE_MIN 1024 /* documents of dropped blocks kept before the index is made again */
#define DENSE_MIN 64   /* indexed blocks below which the index always narrows */

/* Made at the first search of a read-write store, and again when too many documents are
 * stale (layout 5: columns c0-c15 the windows of each sixteenth of a block's rows, a those
 * in many sixteenths, sqlite_trigram.c's sq_windows; an index of an older layout is dropped
 * and made again: 1 and 2 kept a copy of the text, nearly as large as the rows; 3 had one
 * column a block, detail=none, which named whole blocks; 4 a column an eighth). The table is contentless: FTS5 of
 * Debian 12 (3.40) cannot delete from one without the text it was given, so a block is
 * dropped by raising its generation (runfs_search_gen) and its old document stays behind,
 * naming it for more trigrams than it has, which only adds candidates. An update or delete
 * by anyone marks its block (the triggers live in the file: DeerFlow's writes fire them
 * too); a delete at the top lowers the indexed mark, since SQLite may hand that id out
 * again. */
/* automerge 16 (FTS5's default is 4): the index is written in transactions of SYNC_BLOCKS
 * blocks, each a segment; merging them 16 at a time instead of 4 cut the first build's CPU
 * by a fifth, and a search reads no slower. */
static const char search_schema[] =
    "DROP TABLE IF EXISTS runfs_search;\n"
    "DROP TABLE IF EXISTS runfs_search_gen;\n"
    "DROP TRIGGER IF EXISTS runfs_search_update;\n"
    "DROP TRIGGER IF EXISTS runfs_search_delete;\n"
    "CREATE VIRTUAL TABLE runfs_search USING fts5(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, "
    "c10, c11, c12, c13, c14, c15, a, "
    "tokenize = 'runfs_trigram', content = '', columnsize = 0, detail = column);\n"
    "INSERT INTO runfs_search (runfs_search, rank) VALUES ('automerge', 16);\n"
    "CREATE TABLE runfs_search_gen (blk INTEGER PRIMARY KEY, gen INTEGER NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS runfs_search_dirty (blk INTEGER PRIMARY KEY);\n"
    "DELETE FROM runfs_search_dirty;\n"
    "INSERT OR REPLACE INTO runfs_meta (key, value) VALUES ('search_upto', 0);\n"
    "INSERT OR REPLACE INTO runfs_meta (key, value) VALUES ('search_stale', 0);\n"
    "INSERT OR REPLACE INTO runfs_meta (key, value) VALUES ('search_layout', 5);\n";

/* The triggers that mark blocks, made with the index and again where an older build's
 * could fail another writer's statement (schema.sql.h, rs_schema_stale_triggers_sql): no
 * statement of theirs meets a constraint. */
static const char search_triggers[] =
    "CREATE TRIGGER IF NOT EXISTS runfs_search_update AFTER UPDATE ON run_events BEGIN\n"
    "  INSERT INTO runfs_search_dirty (blk) SELECT (old.id - 1) / 64 WHERE NOT EXISTS\n"
    "    (SELECT 1 FROM runfs_search_dirty WHERE blk = (old.id - 1) / 64);\n"
    "  INSERT INTO runfs_search_dirty (blk) SELECT (new.id - 1) / 64 WHERE NOT EXISTS\n"
    "    (SELECT 1 FROM runfs_search_dirty WHERE blk = (new.id - 1) / 64);\n"
    "END;\n"
    "CREATE TRIGGER IF NOT EXISTS runfs_search_delete AFTER DELETE ON run_events BEGIN\n"
    "  INSERT INTO runfs_search_dirty (blk) SELECT (old.id - 1) / 64 WHERE NOT EXISTS\n"
    "    (SELECT 1 FROM runfs_search_dirty WHERE blk = (old.id - 1) / 64);\n"
    "  UPDATE runfs_meta SET value = ((old.id - 1) / 64) * 64 WHERE key = 'search_upto'\n"
    "    AND value >= old.id AND old.id > coalesce((SELECT max(id) FROM run_events), 0);\n"
    "END;\n";

static void may_fn(sqlite3_context *ctx, int n_args, sqlite3_value **args);
static void in_fn(sqlite3_context *ctx, int n_args, sqlite3_value **args);

/* runfs_may and runfs_in known to the connection (once). */
static int search_fns(rs_backend *b, rs_err *err)
{
    if (b->search_fns)
        return 0;
    if (sqlite3_create_function_v2(b->db, "runfs_may", 4, SQLITE_UTF8, NULL, may_fn, NULL, NULL,
                                   NULL) != SQLITE_OK ||
        sqlite3_create_function_v2(b->db, "runfs_in", 2, SQLITE_UTF8, NULL, in_fn, NULL, NULL,
                                   NULL) != SQLITE_OK)
        return rs_err_set(err, -ENOMEM, "out of memory");
    b->search_fns = 1;
    return 0;
}

static int has_index(rs_backend *b, int *has, rs_err *err)
{
    int64_t v = 0;
    int found, rc = b->trigram ? 0 : sq_trigram_register(b, err);
    b->trigram = rc == 0;
    if (!rc)
        rc = search_fns(b, err);
    if (!rc)
        rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'search_layout'", NULL, NULL, &v,
                    &found, err);
    *has = v == LAYOUT;
    return rc;
}

static int add_block(rs_backend *b, sqlite3_stmt *ins, int64_t blk, const rs_buf *text, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "search generation",
                     "SELECT gen FROM runfs_search_gen WHERE blk = ?1", "i", blk);
    int64_t gen = 0;
    if (rc < 0)
        return rc;
    if (rc == 1) {
        gen = sqlite3_column_int64(st, 0);
        sq_stmt_done(b, st);
    }
    sqlite3_reset(ins);
    sqlite3_bind_int64(ins, 1, gen << 40 | blk);
    for (int k = 0; k < SQ_COLUMNS; k++)
        if (text[k].len)
            sqlite3_bind_text(ins, 2 + k, text[k].buf, (int)text[k].len, SQLITE_STATIC);
    rc = sqlite3_step(ins) == SQLITE_DONE
             ? 0
             : sq_fail(b, sqlite3_errcode(b->db), err, "indexing for search");
    sqlite3_clear_bindings(ins);
    return rc;
}

/* Where a row's text for the index ends: the line's last ,"created_at":" (one in metadata
 * comes before it; an id after it holds no quote). */
static size_t text_end(const char *line, size_t len)
{
    static const char ak[] = ",\"created_at\":\"";
    for (size_t i = len; i >= sizeof ak - 1; i--)
        if (line[i - 1] == '"' && memcmp(line + i - (sizeof ak - 1), ak, sizeof ak - 1) == 0)
            return i - (sizeof ak - 1);
    return len;
}

/* Index blocks [lo, hi) from their rows as they are now (a block with no rows: none), each
 * row in the column of its SUB rows. A row's text is its line from content to created_at:
 * what a term can match and a little more (the metadata key), which only adds candidates. */
static int index_blocks(rs_backend *b, int64_t lo, int64_t hi, rs_err *err)
{
    static const char ck[] = ",\"content\":";
    sqlite3_stmt *st, *ins;
    int rc = sq_stmt_get(b,
                         "SELECT " SQ_ROW_COLUMNS " FROM run_events e WHERE e.id > ?1 AND "
                         "e.id <= ?2 ORDER BY e.id",
                         &st, err);
    if (rc)
        return rc;
    if ((rc = sq_stmt_get(b,
                          "INSERT INTO runfs_search (rowid, c0, c1, c2, c3, c4, c5, c6, c7, c8, "
                          "c9, c10, c11, c12, c13, c14, c15, a) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                          "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                          &ins, err))) {
        sq_stmt_done(b, st);
        return rc;
    }
    sqlite3_bind_int64(st, 1, lo * BLOCK);
    sqlite3_bind_int64(st, 2, hi * BLOCK);
    rs_buf line = RS_BUF_INIT, text[SQ_COLUMNS];
    for (int k = 0; k < SQ_COLUMNS; k++)
        text[k] = (rs_buf)RS_BUF_INIT;
    sq_windows win = {0};
    sq_canon canon = SQ_CANON_INIT;
    int64_t cur = -1;
    for (;;) {
        int step = sqlite3_step(st);
        int64_t id = step == SQLITE_ROW ? sqlite3_column_int64(st, 9) : 0;
        int64_t blk = step == SQLITE_ROW ? (id - 1) / BLOCK : -2;
        if (blk != cur && cur >= 0) {
            if (sq_windows_take(&win, text)) {
                rc = rs_err_set(err, -ENOMEM, "out of memory");
                break;
            }
            if ((rc = add_block(b, ins, cur, text, err)))
                break;
        }
        if (step != SQLITE_ROW) {
            if (step != SQLITE_DONE)
                rc = sq_fail(b, step, err, "reading rows to index for search");
            break;
        }
        cur = blk;
        rs_row row;
        sq_row(&row, st, 0);
        row.canonical = sq_canon_has(b, &canon, id);
        rs_buf_reset(&line);
        /* A row that does not render has no text to find (its reads fail alike). */
        if (rs_event_encode(&line, &row, NULL))
            continue;
        const char *c = memmem(line.buf, line.len, ck, sizeof ck - 1);
        if (c && sq_windows_add(&win, (int)((id - 1) % BLOCK / SUB), c,
                                text_end(line.buf, line.len) - (size_t)(c - line.buf))) {
            rc = rs_err_set(err, -ENOMEM, "out of memory");
            break;
        }
    }
    sq_stmt_done(b, ins);
    sq_stmt_done(b, st);
    rs_buf_release(&line);
    for (int k = 0; k < SQ_COLUMNS; k++)
        rs_buf_release(&text[k]);
    sq_windows_release(&win);
    return rc;
}

/* Blocks [lo, hi) lose their documents: the next ones get the next generation. */
static int drop_blocks(rs_backend *b, int64_t lo, int64_t hi, rs_err *err)
{
    int rc = 0;
    for (int64_t blk = lo; !rc && blk < hi; blk++)
        rc = sq_step(b, NULL, err, "dropping search blocks",
                     "INSERT INTO runfs_search_gen (blk, gen) VALUES (?1, 1) ON CONFLICT (blk) "
                     "DO UPDATE SET gen = gen + 1",
                     "i", blk);
    if (!rc && hi > lo)
        rc = sq_step(b, NULL, err, "dropping search blocks",
                     "UPDATE runfs_meta SET value = value + ?1 WHERE key = 'search_stale'", "i",
                     hi - lo);
    return rc;
}

static int make_index(rs_backend *b, rs_err *err)
{
    char *msg = NULL;
    int rc = 0, src = sqlite3_exec(b->db, search_schema, NULL, NULL, &msg);
    if (src == SQLITE_OK)
        src = sqlite3_exec(b->db, search_triggers, NULL, NULL, &msg);
    if (src != SQLITE_OK)
        rc = rs_err_set(err, -EIO, "cannot make the search index in %s: %s", b->path,
                        msg ? msg : sqlite3_errstr(src));
    sqlite3_free(msg);
    return rc;
}

int sq_search_triggers(rs_backend *b, rs_err *err)
{
    int64_t layout = 0;
    int rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'search_layout'", NULL, NULL,
                    &layout, NULL, err);
    char *msg = NULL;
    int src = rc || layout != LAYOUT ? SQLITE_OK
                                     : sqlite3_exec(b->db, search_triggers, NULL, NULL, &msg);
    if (src != SQLITE_OK)
        rc = rs_err_set(err, -EIO, "cannot set up the search index's triggers in %s: %s", b->path,
                        msg ? msg : sqlite3_errstr(src));
    sqlite3_free(msg);
    return rc;
}

/* One transaction's share of the work: *more when some is left. */
static int sync_step(rs_backend *b, int *more, rs_err *err)
{
    int has, found, rc = has_index(b, &has, err);
    int64_t upto = 0, top = 0, stale = 0, blk;
    if (!rc && !has)
        rc = make_index(b, err);
    if (rc ||
        (rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'search_upto'", NULL, NULL, &upto,
                     &found, err)) ||
        (rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'search_stale'", NULL, NULL,
                     &stale, &found, err)))
        return rc;
    /* Stale documents past a quarter of the live ones: made again from the start (their
     * generations reset with it). No generation exceeds stale: none reaches GENS. */
    if (has && ((stale > STALE_MIN && stale > upto / BLOCK / 4) || stale >= GENS / 2)) {
        if ((rc = make_index(b, err)))
            return rc;
        upto = 0;
    }
    if ((rc = sq_int(b, "SELECT coalesce(max(id), 0) FROM run_events", NULL, NULL, &top, &found,
                     err)))
        return rc;
    /* Blocks another writer changed, again from their rows. */
    size_t done = 0;
    while (done < SYNC_BLOCKS &&
           !(rc = sq_int(b, "SELECT blk FROM runfs_search_dirty ORDER BY blk LIMIT 1", NULL, NULL,
                         &blk, &found, err)) &&
           found) {
        if ((rc = drop_blocks(b, blk, blk + 1, err)) ||
            (blk < upto / BLOCK && (rc = index_blocks(b, blk, blk + 1, err))) ||
            (rc = sq_step(b, NULL, err, "search blocks",
                          "DELETE FROM runfs_search_dirty WHERE blk = ?1", "i", blk)))
            return rc;
        done++;
    }
    if (rc)
        return rc;
    /* Whole blocks above the mark (the last, partial one stays a candidate as it is). A
     * block above it has no document of its generation: whatever lowers the mark drops the
     * blocks it uncovers (the delete trigger marks them, or the range below). */
    int64_t from = upto / BLOCK, to = top / BLOCK < BLK_MAX ? top / BLOCK : BLK_MAX;
    if (to < from) {
        if ((rc = drop_blocks(b, to, from, err)))
            return rc;
        from = to;
    }
    if (to > from + (int64_t)(SYNC_BLOCKS - done))
        to = from + (int64_t)(SYNC_BLOCKS - done);
    if (to > from && (rc = index_blocks(b, from, to, err)))
        return rc;
    *more = done == SYNC_BLOCKS || (to < top / BLOCK && to < BLK_MAX);
    return sq_step(b, NULL, err, "search mark",
                   "UPDATE runfs_meta SET value = ?1 WHERE key = 'search_upto'", "i", to * BLOCK);
}

/* Whether the index lacks whole blocks or holds changed ones (read without a write
 * transaction: a search of a quiet store writes nothing). */
static int sync_needed(rs_backend *b, int *needed, rs_err *err)
{
    int has, found, rc = has_index(b, &has, err);
    int64_t upto = 0, top = 0, dirty = 0;
    if (rc || !has) {
        *needed = 1;
        return rc;
    }
    if ((rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'search_upto'", NULL, NULL, &upto,
                     &found, err)) ||
        (rc = sq_int(b, "SELECT coalesce(max(id), 0) FROM run_events", NULL, NULL, &top, &found,
                     err)) ||
        (rc = sq_int(b, "SELECT EXISTS (SELECT 1 FROM runfs_search_dirty)", NULL, NULL, &dirty,
                     &found, err)))
        return rc;
    *needed = dirty || upto != top / BLOCK * BLOCK;
    return 0;
}

static int sync_index(rs_backend *b, rs_err *err)
{
    int more = 1, rc = sync_needed(b, &more, err);
    while (!rc && more) {
        more = 0;
        /* Quiet: the index's tables have no trigger, and switching run_events' on would
         * expire a cursor the search may hold (sq_begin). */
        if ((rc = sq_begin_quiet(b, err)))
            return rc;
        if ((rc = sync_step(b, &more, err))) {
            sq_rollback(b);
            return rc;
        }
        rc = sq_commit(b, err);
    }
    return rc;
}

/* FTS5's query for what every row the query can match holds: the three-byte windows of
 * each positive text term (every third, and the last) as runfs_trigram spells them, ANDed.
 * Empty when no term has three bytes. */
static int match_expr(const rs_search *q, rs_buf *out)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < q->n; i++) {
        const rs_term *t = &q->terms[i];
        if (t->kind != RS_TERM_TEXT || t->negate || t->len < 3)
            continue;
        for (size_t w = 0; !rc; w += 3) {
            if (w + 3 > t->len)
                w = t->len - 3; /* the last window */
            if (out->len && (rc = rs_buf_addlit(out, " AND ")))
                break;
            if (!rc)
                rc = rs_buf_add_hex(out, t->text + w, 3);
            if (w == t->len - 3)
                break;
        }
    }
    return rc;
}

/* The candidate columns of the indexed blocks as bits (bit c of byte c / 8: rows c * SUB + 1
 * to c * SUB + SUB), those of documents where every trigram of expr is in one column and
 * every column of a dirty block (-1: every bit); *n how many. */
static int cand_bits(rs_backend *b, const char *expr, int64_t upto, rs_buf *bits, int64_t *n,
                     rs_err *err)
{
    size_t len = (size_t)((upto / SUB + 7) / 8);
    if (rs_buf_grow(bits, len))
        return rs_err_set(err, -ENOMEM, "out of memory");
    memset(bits->buf, 0, len);
    rs_buf_setlen(bits, len);
    unsigned char *bit = (unsigned char *)bits->buf;
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b,
                         "SELECT rowid & " BLK_SQL ", runfs_subs(runfs_search) FROM runfs_search "
                         "WHERE runfs_search MATCH ?1 UNION ALL SELECT blk, -1 FROM "
                         "runfs_search_dirty",
                         &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
    int step;
    *n = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t blk = sqlite3_column_int64(st, 0);
        uint64_t m = (uint64_t)sqlite3_column_int64(st, 1);
        /* Rows above the mark are candidates whatever a document says. */
        if (blk >= upto / BLOCK)
            continue;
        for (int64_t k = 0; k < BLOCK / SUB; k++) {
            int64_t c = blk * (BLOCK / SUB) + k;
            if (m >> k & 1 && !(bit[c / 8] >> (c % 8) & 1)) {
                bit[c / 8] |= (unsigned char)(1u << (c % 8));
                (*n)++;
            }
        }
    }
    rc = step == SQLITE_DONE ? 0 : sq_fail(b, step, err, "finding search candidates");
    sq_stmt_done(b, st);
    return rc;
}

/* A search's scope, as its statements name them: ?3 the thread, ?4 the run, ?5 the owner. */
static void bind_scope(sqlite3_stmt *st, const char *thread_id, const char *run_id,
                       const char *user)
{
    if (thread_id)
        sq_bind_text(st, 3, thread_id);
    if (run_id)
        sq_bind_text(st, 4, run_id);
    if (user)
        sq_bind_text(st, 5, user);
}

/* The condition of every search statement that passes over rows whose columns cannot match
 * (may_fn), ?8 the statement's may_ctx. */
#define MAY_SQL "runfs_may(?8, e.id, e.content, e.event_metadata)"

/* How a search's statement reads the scope: the candidates' ids, the scope in the thread
 * index's order where runfs_cand says a row is a candidate, or every row of it in that order. */
enum { READ_IDS, READ_WALK, READ_ALL };

/* The statement that reads a search's candidates in the answer's order (how), its parameters
 * bound. */
static int search_stmt(rs_backend *b, int how, const rs_buf *expr, const rs_buf *bits, int64_t upto,
                       const char *thread_id, const char *run_id, const char *user,
                       const char *after_thread, int64_t after_seq, sqlite3_stmt **out, rs_err *err)
{
    int rc, walk = how != READ_IDS;
    rs_buf *sql = &b->sql;
    rs_buf_reset(sql);
    if ((how == READ_ALL ? (rc = rs_buf_addstr(sql, "SELECT " SQ_ROW_COLUMNS
                                                    " FROM run_events e WHERE " MAY_SQL))
         : walk
             ? (rc = rs_buf_addstr(
                    sql, "SELECT " SQ_ROW_COLUMNS
                         " FROM run_events e WHERE runfs_cand(?1, ?2, e.id) AND " MAY_SQL))
             : (rc = rs_buf_addstr(
                    sql, "WITH s (k) AS (VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9), "
                         "(10), (11), (12), (13), (14), (15)), r (k) AS (VALUES (0), (1), (2), "
                         "(3)) SELECT " SQ_ROW_COLUMNS
                         " FROM run_events e WHERE e.id IN (SELECT f.blk * 64 + s.k * 4 + r.k + 1 "
                         "FROM (SELECT rowid & " BLK_SQL " AS blk, runfs_subs(runfs_search) AS m "
                         "FROM runfs_search WHERE runfs_search MATCH ?1 UNION ALL SELECT blk, -1 "
                         "FROM runfs_search_dirty) f CROSS JOIN s CROSS JOIN r WHERE "
                         "f.m >> s.k & 1 AND f.blk * 64 + s.k * 4 + r.k + 1 <= ?2 UNION ALL SELECT "
                         "id FROM run_events WHERE id > ?2) AND " MAY_SQL))) ||
        (thread_id &&
         (rc = rs_buf_addstr(sql, walk ? " AND e.thread_id = ?3" : " AND +e.thread_id = ?3"))) ||
        (run_id &&
         (rc = rs_buf_addstr(sql, walk ? " AND e.run_id = ?4" : " AND +e.run_id = ?4"))) ||
        (user && (rc = rs_buf_addstr(sql, " AND +e.user_id = ?5"))) ||
        (after_thread &&
         (rc = rs_buf_addstr(sql, walk ? " AND e.thread_id >= ?6 AND (e.thread_id > ?6 OR "
                                         "e.seq > ?7)"
                                       : " AND (+e.thread_id > ?6 OR (+e.thread_id = ?6 AND "
                                         "+e.seq > ?7))"))) ||
        (rc = rs_buf_addstr(sql, walk ? " ORDER BY e.thread_id, e.seq"
                                      : " ORDER BY +e.thread_id, +e.seq")))
        return rs_err_set(err, -ENOMEM, "out of memory");
    sqlite3_stmt *st;
    if ((rc = sq_stmt_get(b, sql->buf, &st, err)))
        return rc;
    if (how == READ_WALK)
        sqlite3_bind_blob(st, 1, bits->buf, (int)bits->len, SQLITE_TRANSIENT);
    else if (how == READ_IDS)
        sqlite3_bind_text(st, 1, expr->buf, (int)expr->len, SQLITE_TRANSIENT);
    if (how != READ_ALL)
        sqlite3_bind_int64(st, 2, upto);
    bind_scope(st, thread_id, run_id, user);
    if (after_thread) {
        sq_bind_text(st, 6, after_thread);
        sqlite3_bind_int64(st, 7, after_seq);
    }
    *out = st;
    return 0;
}

/* What runfs_may decides by: the search's query, and the canonical ranges its rows fall in. */
typedef struct may_ctx {
    rs_backend *b;
    const rs_search *q;
    sq_canon canon;
} may_ctx;

/* runfs_may(ctx, id, content, metadata): 0 when the row's columns say no line of it can
 * match the query (rs_search_may_match), else 1. In a search's WHERE, ahead of its columns:
 * a row passed over costs two columns read, none of the others, and no line made. */
static void may_fn(sqlite3_context *ctx, int n_args, sqlite3_value **args)
{
    (void)n_args;
    may_ctx *m = sqlite3_value_pointer(args[0], "runfs_may");
    if (!m || !sq_canon_has(m->b, &m->canon, sqlite3_value_int64(args[1]))) {
        sqlite3_result_int(ctx, 1);
        return;
    }
    rs_row row = {.canonical = 1};
    row.content = (const char *)sqlite3_value_text(args[2]);
    row.content_len = (size_t)sqlite3_value_bytes(args[2]);
    row.metadata = (const char *)sqlite3_value_text(args[3]);
    row.metadata_len = (size_t)sqlite3_value_bytes(args[3]);
    if (!row.content)
        row.content = "";
    if (!row.metadata)
        row.metadata = "{}";
    sqlite3_result_int(ctx, rs_search_may_match(m->q, &row));
}

/* A search's statement read (its rows those runfs_may let by), each rendered. */
typedef struct scan_cursor {
    rs_cursor base;
    sqlite3_stmt *st;
    may_ctx may;
    sq_canon canon;
} scan_cursor;

static int scan_next(rs_cursor *base, const rs_record **out)
{
    scan_cursor *c = (scan_cursor *)base;
    for (;;) {
        int src = sqlite3_step(c->st);
        if (src == SQLITE_DONE)
            return 0;
        if (src != SQLITE_ROW)
            return sq_fail(c->may.b, src, NULL, "read");
        int64_t off = 0;
        sq_row(&base->row, c->st, 0);
        base->row_id = sqlite3_column_int64(c->st, 9);
        base->row.canonical = sq_canon_has(c->may.b, &c->canon, base->row_id);
        int rc = rs_cursor_emit(base, 0, &off, 0, out);
        if (rc)
            return rc;
    }
}

static void scan_free(rs_cursor *base)
{
    scan_cursor *c = (scan_cursor *)base;
    sq_stmt_done(c->may.b, c->st);
    rs_buf_release(&base->line);
    free(c);
}

static int scan_new(rs_backend *b, sqlite3_stmt *st, const rs_search *q, rs_cursor **out,
                    rs_err *err)
{
    scan_cursor *c = calloc(1, sizeof *c);
    if (!c) {
        sq_stmt_done(b, st);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    c->base.next = scan_next;
    c->base.free = scan_free;
    c->base.line = (rs_buf)RS_BUF_INIT;
    c->st = st;
    c->may = (may_ctx){.b = b, .q = q, .canon = SQ_CANON_INIT};
    c->canon = SQ_CANON_INIT;
    sqlite3_bind_pointer(st, 8, &c->may, "runfs_may", NULL);
    *out = &c->base;
    return 0;
}

/* Bytes of matching rows (their lines and what sorts them) a held search keeps before it
 * gives up for the walk, and all the held searches of the process together (a mount runs
 * one on each of its connections): the daemon's memory stays bounded whatever the answers'
 * sizes and however many run at once. */
#define HELD_MAX ((size_t)16 << 20)
#define HELD_ALL_MAX ((size_t)32 << 20)
#define HELD_STEP ((size_t)1 << 20) /* taken from the process's bytes a MiB at a time */
static atomic_size_t held_all;

/* A match held: its record's strings and line in the arena from off (thread_id, run_id,
 * event_type, category, user_id when it has one, each NUL-ended, then the line). */
typedef struct held_row {
    int64_t id, seq;
    size_t off, line_len;
    const char *thread; /* set once the arena stops moving */
    int has_user;
    rs_event_spans spans;
} held_row;

typedef struct held_cursor {
    rs_cursor base;
    held_row *rows;
    size_t n, cap, at;
    rs_buf arena;
    size_t taken; /* of held_all, given back when the cursor is freed */
} held_cursor;

static int held_next(rs_cursor *base, const rs_record **out)
{
    held_cursor *c = (held_cursor *)base;
    if (c->at == c->n)
        return 0;
    const held_row *h = &c->rows[c->at++];
    const char *p = c->arena.buf + h->off;
    rs_record *r = &base->rec;
    r->seq = h->seq;
    r->thread_id = p;
    p += strlen(p) + 1;
    r->run_id = p;
    p += strlen(p) + 1;
    r->event_type = p;
    p += strlen(p) + 1;
    r->category = p;
    p += strlen(p) + 1;
    r->user_id = NULL;
    if (h->has_user) {
        r->user_id = p;
        p += strlen(p) + 1;
    }
    r->line = p;
    r->line_len = h->line_len;
    r->run_off = r->thread_off = -1;
    base->spans = h->spans;
    base->row_id = h->id;
    *out = r;
    return 1;
}

static void held_free(rs_cursor *base)
{
    held_cursor *c = (held_cursor *)base;
    atomic_fetch_sub(&held_all, c->taken);
    free(c->rows);
    rs_buf_release(&c->arena);
    rs_buf_release(&base->line);
    free(c);
}

static int held_cmp(const void *a, const void *b)
{
    const held_row *x = a, *y = b;
    int d = strcmp(x->thread, y->thread);
    return d ? d : (x->seq > y->seq) - (x->seq < y->seq);
}

static int held_add(held_cursor *c, const rs_record *rec, int64_t id)
{
    rs_buf *a = &c->arena;
    size_t off = a->len;
    if (rs_array_grow(&c->rows, &c->cap, c->n + 1, sizeof *c->rows) ||
        rs_buf_add(a, rec->thread_id, strlen(rec->thread_id) + 1) ||
        rs_buf_add(a, rec->run_id, strlen(rec->run_id) + 1) ||
        rs_buf_add(a, rec->event_type, strlen(rec->event_type) + 1) ||
        rs_buf_add(a, rec->category, strlen(rec->category) + 1) ||
        (rec->user_id && rs_buf_add(a, rec->user_id, strlen(rec->user_id) + 1)) ||
        rs_buf_add(a, rec->line, rec->line_len))
        return -ENOMEM;
    c->rows[c->n++] = (held_row){.id = id,
                                 .seq = rec->seq,
                                 .off = off,
                                 .line_len = rec->line_len,
                                 .has_user = rec->user_id != NULL,
                                 .spans = c->base.spans};
    return 0;
}

/* The matches among the rows of ids lo to hi that st reads (bound here), held. */
static int held_range(held_cursor *c, rs_backend *b, sqlite3_stmt *st, const rs_search *q,
                      sq_canon *canon, int64_t lo, int64_t hi, rs_err *err)
{
    int rc = 0, step;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, hi);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 9), off = 0;
        const rs_record *rec;
        sq_row(&c->base.row, st, 0);
        c->base.row.canonical = sq_canon_has(b, canon, id);
        if ((rc = rs_cursor_emit(&c->base, 0, &off, 0, &rec)) == 1 &&
            (rc = rs_search_match_at(q, rec, &c->base.spans)) == 1)
            rc = held_add(c, rec, id);
        if (rc == -ENOMEM)
            return rs_err_set(err, rc, "out of memory");
        if (rc < 0)
            return rs_err_set(err, rc, "cannot render a row of the search's candidates");
        size_t bytes = c->arena.len + c->n * sizeof *c->rows;
        if (bytes > HELD_MAX)
            return -E2BIG;
        /* A long line can pass several steps at once. */
        while (bytes > c->taken) {
            if (atomic_fetch_add(&held_all, HELD_STEP) + HELD_STEP > HELD_ALL_MAX) {
                atomic_fetch_sub(&held_all, HELD_STEP);
                return -E2BIG;
            }
            c->taken += HELD_STEP;
        }
    }
    return step == SQLITE_DONE ? 0 : sq_fail(b, step, err, "reading search candidates");
}

/* The matches among the candidates (the rows of the columns bits names, and every row above
 * upto), read in id order, a range of ids for each run of columns (the table's pages in
 * turn), held and sorted in the answer's order. -E2BIG when they pass HELD_MAX, or the
 * process's held searches HELD_ALL_MAX (the caller walks instead). */
static int held_new(rs_backend *b, const rs_search *q, const rs_buf *bits, int64_t upto,
                    const char *thread_id, const char *run_id, const char *user, rs_cursor **out,
                    rs_err *err)
{
    rs_buf *sql = &b->sql;
    rs_buf_reset(sql);
    if (rs_buf_addstr(sql, "SELECT " SQ_ROW_COLUMNS
                           " FROM run_events e WHERE e.id >= ?1 AND e.id <= ?2 AND " MAY_SQL) ||
        (thread_id && rs_buf_addstr(sql, " AND +e.thread_id = ?3")) ||
        (run_id && rs_buf_addstr(sql, " AND +e.run_id = ?4")) ||
        (user && rs_buf_addstr(sql, " AND +e.user_id = ?5")))
        return rs_err_set(err, -ENOMEM, "out of memory");
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b, sql->buf, &st, err);
    if (rc)
        return rc;
    bind_scope(st, thread_id, run_id, user);
    may_ctx may = {.b = b, .q = q, .canon = SQ_CANON_INIT};
    sqlite3_bind_pointer(st, 8, &may, "runfs_may", NULL);
    held_cursor *c = calloc(1, sizeof *c);
    if (!c) {
        sq_stmt_done(b, st);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    c->base.next = held_next;
    c->base.free = held_free;
    c->base.line = (rs_buf)RS_BUF_INIT;
    c->arena = (rs_buf)RS_BUF_INIT;
    sq_canon canon = SQ_CANON_INIT;
    /* One read transaction for every range (unless the caller holds one): a statement of
     * its own would take and drop the file's read lock at each, and SQLite's page cache
     * with it. */
    int own = sqlite3_get_autocommit(b->db) && sq_exec(b, "BEGIN", NULL) == 0;
    const unsigned char *bit = (const unsigned char *)bits->buf;
    int64_t n = (int64_t)bits->len * 8;
    for (int64_t k = 0; !rc && k < n; k++) {
        if (!(bit[k / 8] >> (k % 8) & 1))
            continue;
        int64_t from = k;
        while (k + 1 < n && bit[(k + 1) / 8] >> ((k + 1) % 8) & 1)
            k++;
        rc = held_range(c, b, st, q, &canon, from * SUB + 1, (k + 1) * SUB, err);
    }
    if (!rc)
        rc = held_range(c, b, st, q, &canon, upto + 1, INT64_MAX, err);
    sq_stmt_done(b, st);
    if (own && sq_exec(b, "COMMIT", NULL))
        sq_exec(b, "ROLLBACK", NULL);
    if (rc) {
        held_free(&c->base);
        return rc;
    }
    for (size_t i = 0; i < c->n; i++)
        c->rows[i].thread = c->arena.buf + c->rows[i].off;
    qsort(c->rows, c->n, sizeof *c->rows, held_cmp);
    *out = &c->base;
    return 0;
}

int sq_search(rs_backend *b, const rs_search *q, const char *thread_id, const char *run_id,
              const char *user, const char *after_thread, int64_t after_seq, rs_cursor **out,
              rs_err *err)
{
    rs_buf expr = RS_BUF_INIT, bits = RS_BUF_INIT;
    int rc = match_expr(q, &expr), has = 0, found, text = 0;
    if (rc)
        return rs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < q->n; i++)
        text |= q->terms[i].kind == RS_TERM_TEXT && !q->terms[i].negate && q->terms[i].len > 0;
    /* No text term a row's columns can rule out: the scan by thread (search_run.c) narrows
     * by a type or category the query requires. */
    if (!text) {
        rs_buf_release(&expr);
        return -ENOSYS;
    }
    /* A read-only store uses the index as it finds it: what lies above it is scanned. A
     * query with no term of three bytes reads every row of the scope. */
    if (expr.len && !b->read_only)
        rc = sync_index(b, err);
    int64_t upto = 0;
    if (!rc)
        rc = has_index(b, &has, err);
    has = has && expr.len;
    if (!rc && has)
        rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'search_upto'", NULL, NULL, &upto,
                    &found, err);
    int64_t hits = 0, cols = upto / SUB;
    if (!rc && has)
        rc = cand_bits(b, expr.buf, upto, &bits, &hits, err);
    /* Candidates in most columns: the index hardly narrows, a read of the scope's every
     * row reads as much. That read, as the others, renders only the rows whose columns may
     * match (runfs_may: most rows of a word in a third of them are passed over unrendered). */
    if (!rc && has && upto >= DENSE_MIN * BLOCK && hits * 4 > cols * 3)
        has = 0;
    if (rc || !has) {
        sqlite3_stmt *st = NULL;
        if (!rc)
            rc = search_stmt(b, READ_ALL, &expr, &bits, upto, thread_id, run_id, user, after_thread,
                             after_seq, &st, err);
        rs_buf_release(&expr);
        rs_buf_release(&bits);
        return rc ? rc : scan_new(b, st, q, out, err);
    }
    /* Candidates in more than a sixty-fourth of the columns: the scope's rows in order of the
     * thread index, each row read only where runfs_cand says its id is a candidate (from the
     * index entry's id, before the row). The answer streams: a reader of its first page,
     * or one that reopens it further on (each read of a mount's file does), reads no more
     * than it takes. Fewer: the candidates' ids drive (unary + keeps the planner off the
     * thread indexes, which would walk every row of the scope), the rows of each document's
     * columns that runfs_subs names (a dirty block's every column), ids that may not exist;
     * the union comes first in the join, once (not flattened: it is compound), so
     * runfs_subs runs once a document. An answer read from its start with candidates in up
     * to a quarter of the columns is held: the walk of every index entry of the scope costs
     * more than the candidates' rows read in id order and matched, and the matches held
     * (up to HELD_MAX, past that walked) and sorted; a reopening further on walks, and so
     * does an answer read a part at a time (rs_search_set_streamed: its first part would wait
     * for every match). */
    int walk = hits * 64 > cols, held = walk && !after_thread && !q->streamed && hits * 4 <= cols;
    sqlite3_stmt *st = NULL;
    rc = held ? held_new(b, q, &bits, upto, thread_id, run_id, user, out, err) : 0;
    if (!held || rc == -E2BIG)
        rc = search_stmt(b, walk ? READ_WALK : READ_IDS, &expr, &bits, upto, thread_id, run_id,
                         user, after_thread, after_seq, &st, err);
    rs_buf_release(&expr);
    rs_buf_release(&bits);
    return rc || !st ? rc : scan_new(b, st, q, out, err);
}

int sq_search_forget(rs_backend *b, rs_err *err)
{
    int has, rc = has_index(b, &has, err);
    if (rc || !has)
        return rc;
    char *msg = NULL;
    int src = sqlite3_exec(b->db,
                           "DROP TABLE IF EXISTS runfs_search;\n"
                           "DROP TABLE IF EXISTS runfs_search_gen;\n"
                           "DELETE FROM runfs_search_dirty;\n"
                           "UPDATE runfs_meta SET value = 0 WHERE key = 'search_layout';\n",
                           NULL, NULL, &msg);
    if (src != SQLITE_OK)
        rc = rs_err_set(err, sq_fail(b, src, NULL, "search index"),
                        "cannot drop the search index: %s", msg ? msg : sqlite3_errstr(src));
    sqlite3_free(msg);
    return rc;
}

/* Ids a rows cursor reads by one statement over their range, in order, rather than each by
 * its own lookup: an ascending run of at least RUN_MIN whose range holds at most RUN_SPAN
 * rows a run's id (the rows between are passed over by id alone, runfs_in). A lookup is a
 * descent of the table from its root; a range reads each of its pages once, so an answer of
 * a tenth of its scope or more (a common word's) costs a scan of it and no more. */
#define RUN_MIN 16
#define RUN_SPAN 8

/* The ids of a run a range statement gives, and how far its rows have come. */
typedef struct id_run {
    const int64_t *ids;
    size_t n, at;
} id_run;

/* runfs_in(run, id): whether id is one of run's, the rows coming in ascending id order. */
static void in_fn(sqlite3_context *ctx, int n_args, sqlite3_value **args)
{
    (void)n_args;
    id_run *r = sqlite3_value_pointer(args[0], "runfs_in");
    int64_t id = sqlite3_value_int64(args[1]);
    while (r && r->at < r->n && r->ids[r->at] < id)
        r->at++;
    sqlite3_result_int(ctx, r && r->at < r->n && r->ids[r->at] == id);
}

/* Rows by id, in the order of the ids: each through one cached statement (a lookup of the
 * table's rowid), or a run of them through another (its range). */
typedef struct rows_cursor {
    rs_cursor base;
    rs_backend *b;
    sqlite3_stmt *st, *range; /* range: NULL until a run needs it */
    const int64_t *ids;
    size_t n, at;
    size_t run_end; /* while a run is read: where it ends in ids (else 0) */
    id_run run;
    sq_canon canon;
} rows_cursor;

/* Where the run of ids from at ends: past the last id of an ascending stretch within
 * RUN_SPAN rows an id of its start (at + 1 when there is none). */
static size_t run_end(const int64_t *ids, size_t at, size_t n)
{
    size_t k = at + 1;
    while (k < n && ids[k] > ids[k - 1] &&
           ids[k] - ids[at] < (int64_t)RUN_SPAN * (int64_t)(k - at + 1))
        k++;
    return k;
}

static int rows_row(rows_cursor *c, sqlite3_stmt *st, const rs_record **out)
{
    rs_cursor *base = &c->base;
    int64_t off = 0;
    sq_row(&base->row, st, 0);
    base->row_id = sqlite3_column_int64(st, 9);
    base->row.canonical = sq_canon_has(c->b, &c->canon, base->row_id);
    return rs_cursor_emit(base, 0, &off, 0, out);
}

static int rows_next(rs_cursor *base, const rs_record **out)
{
    rows_cursor *c = (rows_cursor *)base;
    for (;;) {
        int rc, src;
        if (c->run_end) {
            if ((src = sqlite3_step(c->range)) == SQLITE_ROW) {
                if ((rc = rows_row(c, c->range, out)))
                    return rc;
                continue;
            }
            if (src != SQLITE_DONE)
                return sq_fail(c->b, src, NULL, "read");
            c->at = c->run_end;
            c->run_end = 0;
        }
        if (c->at >= c->n)
            return 0;
        size_t end = run_end(c->ids, c->at, c->n);
        if (end - c->at >= RUN_MIN) {
            rs_err err = {0};
            if (!c->range &&
                (rc = sq_stmt_get(c->b,
                                  "SELECT " SQ_ROW_COLUMNS " FROM run_events e WHERE e.id >= ?1 "
                                  "AND e.id <= ?2 AND runfs_in(?3, e.id)",
                                  &c->range, &err)))
                return rc;
            c->run = (id_run){.ids = c->ids + c->at, .n = end - c->at};
            sqlite3_reset(c->range);
            sqlite3_bind_int64(c->range, 1, c->ids[c->at]);
            sqlite3_bind_int64(c->range, 2, c->ids[end - 1]);
            sqlite3_bind_pointer(c->range, 3, &c->run, "runfs_in", NULL);
            c->run_end = end;
            continue;
        }
        sqlite3_reset(c->st);
        sqlite3_bind_int64(c->st, 1, c->ids[c->at++]);
        if ((src = sqlite3_step(c->st)) == SQLITE_DONE)
            continue;
        if (src != SQLITE_ROW)
            return sq_fail(c->b, src, NULL, "read");
        if ((rc = rows_row(c, c->st, out)))
            return rc;
    }
}

static void rows_free(rs_cursor *base)
{
    rows_cursor *c = (rows_cursor *)base;
    sq_stmt_done(c->b, c->st);
    sq_stmt_done(c->b, c->range);
    rs_buf_release(&base->line);
    free(c);
}

int sq_search_rows(rs_backend *b, const int64_t *ids, size_t n, rs_cursor **out, rs_err *err)
{
    /* Inside a request's look, one read transaction for every row: a statement of its own
     * would lock and unlock the file at each (fcntl, most of a row's cost). */
    int64_t version;
    int rc = sq_look(b, &version, err);
    if (!rc)
        rc = search_fns(b, err);
    if (rc)
        return rc;
    rows_cursor *c = calloc(1, sizeof *c);
    if (!c)
        return rs_err_set(err, -ENOMEM, "out of memory");
    rc = sq_stmt_get(b, "SELECT " SQ_ROW_COLUMNS " FROM run_events e WHERE e.id = ?1", &c->st, err);
    if (rc) {
        free(c);
        return rc;
    }
    c->base.next = rows_next;
    c->base.free = rows_free;
    c->base.line = (rs_buf)RS_BUF_INIT;
    c->b = b;
    c->ids = ids;
    c->n = n;
    c->canon = SQ_CANON_INIT;
    *out = &c->base;
    return 0;
}
