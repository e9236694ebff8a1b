/* sqlite_search.c — the search index: FTS5 trigram over blocks of BLOCK consecutive
 * run_events ids (one document per block: its rows' canonical content and metadata, ASCII
 * letters lowered), brought up to date when a search runs, never by an append. Rows above
 * the indexed blocks and rows of blocks another writer changed (triggers mark them) are
 * candidates too, so the index only narrows and is never stale: rs_search_match decides. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "sqlite_int.h"

#define BLOCK 64
#define SYNC_BLOCKS 512 /* blocks one transaction indexes: appends wait at most that long */

/* Made at the first search of a read-write store (layout 2: runfs_trigram's tokens; an
 * index of layout 1 is dropped and made again). An update or delete by anyone marks its
 * block (the triggers live in the file: DeerFlow's writes fire them too); a delete at the
 * top lowers the indexed mark, since SQLite may hand that id out again. */
static const char search_schema[] =
    "DROP TABLE IF EXISTS runfs_search;\n"
    "DROP TRIGGER IF EXISTS runfs_search_update;\n"
    "DROP TRIGGER IF EXISTS runfs_search_delete;\n"
    "CREATE VIRTUAL TABLE runfs_search USING fts5(c, m, tokenize = 'runfs_trigram', "
    "detail = none);\n"
    "CREATE TABLE IF NOT EXISTS runfs_search_dirty (blk INTEGER PRIMARY KEY);\n"
    "DELETE FROM runfs_search_dirty;\n"
    "INSERT OR REPLACE INTO runfs_meta (key, value) VALUES ('search_upto', 0);\n"
    "CREATE TRIGGER runfs_search_update AFTER UPDATE ON run_events BEGIN\n"
    "  INSERT OR IGNORE INTO runfs_search_dirty (blk) VALUES ((old.id - 1) / 64),\n"
    "    ((new.id - 1) / 64);\n"
    "END;\n"
    "CREATE TRIGGER runfs_search_delete AFTER DELETE ON run_events BEGIN\n"
    "  INSERT OR IGNORE INTO runfs_search_dirty (blk) VALUES ((old.id - 1) / 64);\n"
    "  UPDATE runfs_meta SET value = ((old.id - 1) / 64) * 64 WHERE key = 'search_upto'\n"
    "    AND value >= old.id AND old.id > coalesce((SELECT max(id) FROM run_events), 0);\n"
    "END;\n"
    "INSERT OR REPLACE INTO runfs_meta (key, value) VALUES ('search_layout', 2);\n";

static int has_index(rs_backend *b, int *has, rs_err *err)
{
    int64_t v = 0;
    int found, rc = b->trigram ? 0 : sq_trigram_register(b, err);
    b->trigram = rc == 0;
    if (!rc)
        rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'search_layout'", NULL, NULL, &v,
                    &found, err);
    *has = v == 2;
    return rc;
}

/* Index blocks [lo, hi) from their rows as they are now (a block with no rows: none). */
static int index_blocks(rs_backend *b, int64_t lo, int64_t hi, rs_err *err)
{
    sqlite3_stmt *st, *ins;
    int rc = sq_stmt_get(b,
                         "SELECT " SQ_ROW_COLUMNS " FROM run_events e WHERE e.id > ?1 AND "
                         "e.id <= ?2 ORDER BY e.id",
                         &st, err);
    if (rc)
        return rc;
    if ((rc = sq_stmt_get(b, "INSERT INTO runfs_search (rowid, c, m) VALUES (?1, ?2, ?3)", &ins,
                          err))) {
        sq_stmt_done(b, st);
        return rc;
    }
    sqlite3_bind_int64(st, 1, lo * BLOCK);
    sqlite3_bind_int64(st, 2, hi * BLOCK);
    rs_buf line = RS_BUF_INIT, c = RS_BUF_INIT, m = RS_BUF_INIT;
    int64_t cur = -1;
    for (;;) {
        int step = sqlite3_step(st);
        int64_t blk = step == SQLITE_ROW ? (sqlite3_column_int64(st, 9) - 1) / BLOCK : -2;
        if (blk != cur && cur >= 0) {
            sqlite3_reset(ins);
            sqlite3_bind_int64(ins, 1, cur);
            sqlite3_bind_text(ins, 2, c.buf, (int)c.len, SQLITE_STATIC);
            sqlite3_bind_text(ins, 3, m.buf, (int)m.len, SQLITE_STATIC);
            if (sqlite3_step(ins) != SQLITE_DONE) {
                rc = sq_fail(b, sqlite3_errcode(b->db), err, "indexing for search");
                break;
            }
            rs_buf_reset(&c);
            rs_buf_reset(&m);
        }
        if (step != SQLITE_ROW) {
            if (step != SQLITE_DONE)
                rc = sq_fail(b, step, err, "reading rows to index for search");
            break;
        }
        cur = blk;
        rs_row row;
        sq_row(&row, st, 0);
        size_t cs, cl, ms, ml;
        rs_buf_reset(&line);
        /* A row that does not render has no text to find (its reads fail alike). */
        if (rs_event_encode(&line, &row, NULL) ||
            rs_search_spans(line.buf, line.len, &cs, &cl, &ms, &ml))
            continue;
        /* '\n' never occurs in canonical JSON: no term is found across two rows. */
        if ((rc = rs_search_lower(&c, line.buf + cs, cl)) || (rc = rs_buf_addch(&c, '\n')) ||
            (rc = rs_search_lower(&m, line.buf + ms, ml)) || (rc = rs_buf_addch(&m, '\n'))) {
            rc = rs_err_set(err, -ENOMEM, "out of memory");
            break;
        }
    }
    sqlite3_clear_bindings(ins);
    sq_stmt_done(b, ins);
    sq_stmt_done(b, st);
    rs_buf_release(&line);
    rs_buf_release(&c);
    rs_buf_release(&m);
    return rc;
}

static int drop_blocks(rs_backend *b, int64_t lo, int64_t hi, rs_err *err)
{
    return sq_step(b, NULL, err, "dropping search blocks",
                   "DELETE FROM runfs_search WHERE rowid >= ?1 AND rowid < ?2", "ii", lo, hi);
}

/* One transaction's share of the work: *more when some is left. */
static int sync_step(rs_backend *b, int *more, rs_err *err)
{
    int has, found, rc = has_index(b, &has, err);
    if (!rc && !has) {
        char *msg = NULL;
        int src = sqlite3_exec(b->db, search_schema, NULL, NULL, &msg);
        if (src != SQLITE_OK)
            rc = rs_err_set(err, -EIO, "cannot make the search index in %s: %s", b->path,
                            msg ? msg : sqlite3_errstr(src));
        sqlite3_free(msg);
    }
    int64_t upto = 0, top = 0, blk;
    if (rc ||
        (rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'search_upto'", NULL, NULL, &upto,
                     &found, err)) ||
        (rc = sq_int(b, "SELECT coalesce(max(id), 0) FROM run_events", NULL, NULL, &top, &found,
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
    /* Whole blocks above the mark (the last, partial one stays a candidate as it is). */
    int64_t from = upto / BLOCK, to = top / BLOCK;
    if (to < from) {
        if ((rc = drop_blocks(b, to, from, err)))
            return rc;
        from = to;
    }
    if (to > from + (int64_t)(SYNC_BLOCKS - done))
        to = from + (int64_t)(SYNC_BLOCKS - done);
    if (to > from &&
        ((rc = drop_blocks(b, from, to, err)) || (rc = index_blocks(b, from, to, err))))
        return rc;
    *more = done == SYNC_BLOCKS || to < top / BLOCK;
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
        if ((rc = sq_begin(b, err)))
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
    static const char hex[] = "0123456789abcdef";
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
            for (size_t k = w; !rc && k < w + 3; k++) {
                unsigned char ch = (unsigned char)t->text[k];
                rc = rs_buf_addch(out, hex[ch >> 4]);
                if (!rc)
                    rc = rs_buf_addch(out, hex[ch & 15]);
            }
            if (w == t->len - 3)
                break;
        }
    }
    return rc;
}

int sq_search(rs_backend *b, const rs_search *q, const char *thread_id, const char *run_id,
              const char *user, const char *after_thread, int64_t after_seq, rs_cursor **out,
              rs_err *err)
{
    rs_buf expr = RS_BUF_INIT;
    int rc = match_expr(q, &expr), has = 0, found;
    if (rc)
        return rs_err_set(err, -ENOMEM, "out of memory");
    if (expr.len == 0) {
        rs_buf_release(&expr);
        return -ENOSYS;
    }
    /* A read-only store uses the index as it finds it: what lies above it is scanned. */
    if (!b->read_only)
        rc = sync_index(b, err);
    int64_t upto = 0;
    if (!rc)
        rc = has_index(b, &has, err);
    if (!rc && has)
        rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'search_upto'", NULL, NULL, &upto,
                    &found, err);
    if (rc || !has) {
        rs_buf_release(&expr);
        return rc ? rc : -ENOSYS;
    }
    /* The candidates' ids drive (unary + keeps the planner off the thread indexes, which
     * would walk every row of the scope in order). */
    rs_buf *sql = &b->sql;
    rs_buf_reset(sql);
    if ((rc = rs_buf_addstr(
             sql, "SELECT " SQ_ROW_COLUMNS
                  " FROM run_events e WHERE e.id IN (SELECT e2.id FROM (SELECT rowid AS blk "
                  "FROM runfs_search WHERE runfs_search MATCH ?1 UNION SELECT blk FROM "
                  "runfs_search_dirty) k JOIN run_events e2 ON e2.id > k.blk * 64 AND e2.id <= "
                  "k.blk * 64 + 64 AND e2.id <= ?2 UNION ALL SELECT id FROM run_events WHERE id > "
                  "?2)")) ||
        (thread_id && (rc = rs_buf_addstr(sql, " AND +e.thread_id = ?3"))) ||
        (run_id && (rc = rs_buf_addstr(sql, " AND +e.run_id = ?4"))) ||
        (user && (rc = rs_buf_addstr(sql, " AND +e.user_id = ?5"))) ||
        (after_thread &&
         (rc = rs_buf_addstr(sql,
                             " AND (+e.thread_id > ?6 OR (+e.thread_id = ?6 AND +e.seq > ?7))"))) ||
        (rc = rs_buf_addstr(sql, " ORDER BY +e.thread_id, +e.seq"))) {
        rs_buf_release(&expr);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    sqlite3_stmt *st;
    if ((rc = sq_stmt_get(b, sql->buf, &st, err))) {
        rs_buf_release(&expr);
        return rc;
    }
    sqlite3_bind_text(st, 1, expr.buf, (int)expr.len, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, upto);
    if (thread_id)
        sq_bind_text(st, 3, thread_id);
    if (run_id)
        sq_bind_text(st, 4, run_id);
    if (user)
        sq_bind_text(st, 5, user);
    if (after_thread) {
        sq_bind_text(st, 6, after_thread);
        sqlite3_bind_int64(st, 7, after_seq);
    }
    rs_buf_release(&expr);
    return sq_cursor_new(b, st, 0, 0, 0, out, err);
}
