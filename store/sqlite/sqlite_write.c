/* sqlite_write.c — everything that changes the store: appends (one BEGIN IMMEDIATE
 * transaction per batch: seq allocated as max(MAX(seq), high-water) + 1, the high-water
 * mark raised, the logs indexed), singletons and their reservations, mkdir, deletes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_int.h"
#include "rs_util.h"

static int next_seq(rs_backend *b, const char *thread_id, int64_t *next, rs_err *err)
{
    int64_t max = 0, floor = 0;
    int rc;
    if ((rc = sq_int(b, "SELECT MAX(seq) FROM run_events WHERE thread_id = ?", thread_id, NULL,
                     &max, NULL, err)) ||
        (rc = sq_int(b, "SELECT seq FROM run_event_thread_seq WHERE thread_id = ?", thread_id, NULL,
                     &floor, NULL, err)))
        return rc;
    int64_t top = max > floor ? max : floor;
    if ((rc = rs_seq_room(&rs_sqlite_backend, top, 1, err)))
        return rc;
    *next = top + 1;
    return 0;
}

/* kept: the thread's row is there (the connection's previous put raised it and nothing
 * changed the store since), so an UPDATE does, which costs less than the upsert's insert
 * attempt and statement journal. */
static int raise_floor(rs_backend *b, const char *thread_id, int64_t seq, int kept, rs_err *err)
{
    int rc = kept ? sq_step(b, NULL, err, "high-water mark",
                            "UPDATE run_event_thread_seq SET seq = ?2 WHERE thread_id = ?1 "
                            "AND seq < ?2",
                            "ti", thread_id, seq)
                  : sq_step(b, NULL, err, "high-water mark",
                            "INSERT INTO run_event_thread_seq (thread_id, seq) VALUES (?, ?) "
                            "ON CONFLICT (thread_id) DO UPDATE SET seq = max(seq, excluded.seq)",
                            "ti", thread_id, seq);
    return rc < 0 ? rc : 0;
}

/* Whose singleton an identity is: the writer's where owners are apart, else anyone's. */
static const char *once_owner(const rs_backend *b, const rs_target *t)
{
    return b->owners_apart ? sq_owner_key(t->user) : "";
}

/* The first row of the singleton identity among the writer's rows where owners are apart
 * (every owner's for an unscoped writer, who sees them all), else among all rows. */
int sq_once_existing(rs_backend *b, const rs_target *t, const char *event_type, rs_existing *ex,
                     int *found, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "singleton lookup",
                     "SELECT " SQ_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = ?1 "
                     "AND e.run_id = ?2 AND e.event_type = ?3 AND (?4 IS NULL OR "
                     "e.user_id = ?4) ORDER BY e.seq ASC LIMIT 1",
                     "tttt", t->thread_id, t->run_id, event_type, b->owners_apart ? t->user : NULL);
    if (rc < 0)
        return rc;
    *found = rc;
    if (!rc)
        return 0;
    rc = 0;
    if (ex) {
        rs_row row;
        sq_row(&row, st, 0);
        rs_buf_reset(&ex->line);
        rs_buf_reset(&ex->category);
        rs_buf_reset(&ex->content_db);
        rs_buf_reset(&ex->metadata_db);
        ex->seq = row.seq;
        if ((rc = rs_event_encode(&ex->line, &row, err)) == 0 &&
            (rc = rs_buf_addstr(&ex->category, row.category)) == 0 &&
            (rc = rs_buf_add(&ex->content_db, row.content, row.content_len)) == 0)
            rc = rs_buf_add(&ex->metadata_db, row.metadata, row.metadata_len);
    }
    sq_stmt_done(b, st);
    return rc;
}

/* Run a statement about one singleton identity: ?1 thread, ?2 run, ?3 event type, ?4 this
 * process, ?5 the owner (a statement need not use them all). */
static int identity_exec(rs_backend *b, const char *sql, const rs_target *t, const char *event_type,
                         rs_err *err)
{
    int rc = sq_step(b, NULL, err, "singleton", sql, "tttit", t->thread_id, t->run_id, event_type,
                     (int64_t)b->pid, once_owner(b, t));
    return rc < 0 ? rc : 0;
}

static const char forget_own_hold[] =
    "DELETE FROM runfs_hold WHERE thread_id = ?1 AND run_id = ?2 AND event_type = ?3 "
    "AND owner = ?5 AND pid = ?4";

/* Another live writer holds the reservation of this identity? A holder that died (or whose
 * pid was reused) loses it here, so a crashed daemon never blocks a run's terminal event. */
int sq_once_held(rs_backend *b, const rs_target *t, const char *event_type, int *other, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "reservation",
                     "SELECT pid, started FROM runfs_hold WHERE thread_id = ? AND run_id = ? "
                     "AND event_type = ? AND owner = ?",
                     "tttt", t->thread_id, t->run_id, event_type, once_owner(b, t));
    if (rc < 0)
        return rc;
    *other = 0;
    if (rc == 0)
        return 0;
    long pid = (long)sqlite3_column_int64(st, 0);
    int64_t started = sqlite3_column_int64(st, 1);
    sq_stmt_done(b, st);
    if (pid == b->pid)
        return 0;
    if (rs_process_start(pid) == started) {
        *other = 1;
        return 0;
    }
    return identity_exec(b,
                         "DELETE FROM runfs_hold WHERE thread_id = ?1 AND run_id = ?2 "
                         "AND event_type = ?3 AND owner = ?5",
                         t, event_type, err);
}

/* The identity was written through put_if_absent: list it under once/, drop our hold. */
static int once_mark(rs_backend *b, const rs_target *t, const char *event_type, rs_err *err)
{
    int rc = identity_exec(b,
                           "INSERT OR IGNORE INTO runfs_once (thread_id, run_id, event_type, "
                           "owner) VALUES (?1, ?2, ?3, ?5)",
                           t, event_type, err);
    return rc ? rc : identity_exec(b, forget_own_hold, t, event_type, err);
}

static int insert_event(rs_backend *b, const rs_target *t, const rs_event *ev, int64_t seq,
                        int64_t *id, rs_err *err)
{
    int rc = sq_step(b, NULL, err, "insert",
                     "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, "
                     "content, event_metadata, seq, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     "sssssBBis", t->thread_id, t->run_id, t->user, ev->event_type, ev->category,
                     &ev->content_db, &ev->metadata_db, seq, ev->created_db);
    /* A unique index refused the row: say which event. */
    if (rc == -EEXIST)
        return rs_err_set(err, -EEXIST, "%s already exists for run %s", ev->event_type, t->run_id);
    if (rc < 0)
        return rc;
    *id = sqlite3_last_insert_rowid(b->db);
    return 0;
}

/* Rows of an append a statement inserts together: 32 or 8 (a statement opens a cursor on
 * run_events and on each of its four indexes, and gives runfs_replace_note's program a
 * frame, once for all its rows; stepped for each row, that was a quarter of an insert). */
#define ROW_VALUES "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define ROWS_8 \
    ROW_VALUES ", " ROW_VALUES ", " ROW_VALUES ", " ROW_VALUES ", " ROW_VALUES ", " ROW_VALUES \
               ", " ROW_VALUES ", " ROW_VALUES
#define INSERT_ROWS \
    "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, " \
    "event_metadata, seq, created_at) VALUES "
#define PUT_CHUNK 32

static void bind_static(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC); /* stepped before the caller returns */
    else
        sqlite3_bind_null(st, i);
}

/* k (32 or 8) rows in one statement; *id: the last one's id. */
static int insert_rows(rs_backend *b, const rs_target *t, const rs_event *const *evs,
                       const int64_t *seqs, size_t k, int64_t *id, rs_err *err)
{
    static const char insert8[] = INSERT_ROWS ROWS_8;
    static const char insert32[] = INSERT_ROWS ROWS_8 ", " ROWS_8 ", " ROWS_8 ", " ROWS_8;
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b, k == PUT_CHUNK ? insert32 : insert8, &st, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < k; i++) {
        const rs_event *ev = evs[i];
        int p = (int)i * 9;
        bind_static(st, p + 1, t->thread_id);
        bind_static(st, p + 2, t->run_id);
        bind_static(st, p + 3, t->user);
        bind_static(st, p + 4, ev->event_type);
        bind_static(st, p + 5, ev->category);
        sqlite3_bind_text(st, p + 6, ev->content_db.buf, (int)ev->content_db.len, SQLITE_STATIC);
        sqlite3_bind_text(st, p + 7, ev->metadata_db.buf, (int)ev->metadata_db.len, SQLITE_STATIC);
        sqlite3_bind_int64(st, p + 8, seqs[i]);
        bind_static(st, p + 9, ev->created_db);
    }
    int src = sqlite3_step(st);
    sq_stmt_done(b, st);
    if (src == SQLITE_DONE) {
        *id = sqlite3_last_insert_rowid(b->db);
        return 0;
    }
    rc = sq_fail(b, src, err, "insert");
    if (rc != -EEXIST || sqlite3_get_autocommit(b->db))
        return rc;
    /* A constraint refused a row and the statement took its rows back: again a row at a
     * time, so that the error names the event. */
    for (size_t i = 0; i < k; i++)
        if ((rc = insert_event(b, t, evs[i], seqs[i], id, err)))
            return rc;
    return 0;
}

/* An append's rows go in with the connection's triggers off when nothing runfs_replace_note
 * does could apply to them: when run_events has a row trigger, SQLite stages every row of a
 * multi-row INSERT in a temporary b-tree and gives each row the trigger's program, whose WHEN
 * probes two indexes (a third of a batch's instructions, 12k of a single put's). Switching
 * triggers expires every prepared statement of the connection, each prepared again at its
 * next use (about a million instructions), so they stay off after the append, for the next
 * one: sq_begin switches them on for any other write.
 *
 * Every trigger runfs makes (schema.sql.h, sqlite_search.c; test_store.c checks that a
 * store runfs made lists none else): those that fire on the
 * statements of an append (an INSERT into run_events, and INSERT OR REPLACE into runfs_mark
 * and runfs_idem, which have none) are runfs_replace_note and, through it,
 * runfs_replace_work. Any trigger not listed (a fork's, a user's, a later build's) keeps
 * triggers on, since nothing shows it idle for runfs's rows. runfs_replace_note's WHEN holds
 * for a row of the append only where its thread's logs end at or above the row's seq (rows
 * deleted at the top without the delete triggers, the high-water mark gone with them): its
 * other terms name an id (none is given: new.id is -1) or a row at the same seq, which fails
 * the insert and takes the note back with it. */
static const char foreign_triggers[] =
    "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name NOT IN ("
    "'runfs_forget_deleted', 'runfs_seal_tree_drop', 'runfs_seal_salt_drop', "
    "'runfs_canon_top', 'runfs_canon_delete', 'runfs_canon_update', 'runfs_count_deleted', "
    "'runfs_forget_updated', 'runfs_change_delete', 'runfs_change_update', 'runfs_replace_work', "
    "'runfs_replace_note', 'runfs_search_update', 'runfs_search_delete'))";

/* Triggers off for an append's rows from first_seq on into thr's thread where that changes
 * nothing but the cost, else on. kept: the append continues the connection's last one
 * (last_put_of: nothing committed since), whose check stands. */
static int quiet_set(rs_backend *b, const sq_log *thr, int64_t first_seq, int kept, rs_err *err)
{
    if (kept && b->quiet)
        return 0;
    int rc, refused = first_seq <= thr->last_seq;
    if (!refused) {
        /* The list of triggers is looked at again only when the schema changed, whatever
         * it held (read at every put, it and the pragma were a quarter of a single put's
         * instructions). */
        int64_t cookie = -1, foreign = 1;
        if ((rc = sq_int(b, "PRAGMA schema_version", NULL, NULL, &cookie, NULL, err)))
            return rc;
        if (cookie != b->quiet_cookie) {
            if ((rc = sq_int(b, foreign_triggers, NULL, NULL, &foreign, NULL, err)))
                return rc;
            b->quiet_cookie = cookie;
            b->quiet_foreign = foreign != 0;
        }
        refused = b->quiet_foreign;
    }
    if (refused)
        return sq_triggers_on(b, err);
    if (b->quiet)
        return 0;
    /* The switch expires every statement of the connection: one in the middle of its rows
     * (a caller's cursor) would fail at its next cursor open (SQLITE_ABORT_ROLLBACK). */
    for (sqlite3_stmt *s = sqlite3_next_stmt(b->db, NULL); s; s = sqlite3_next_stmt(b->db, s))
        if (sqlite3_stmt_busy(s))
            return 0;
    int on = 1;
    if (sqlite3_db_config(b->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &on) == SQLITE_OK && !on)
        b->quiet = 1;
    return 0;
}

/* Rows of an append waiting for their insert, in seq order, with their lines' lengths. */
typedef struct put_chunk {
    const rs_event *ev[PUT_CHUNK];
    int64_t seq[PUT_CHUNK];
    size_t len[PUT_CHUNK];
    size_t n;
} put_chunk;

/* The rows waiting in c inserted and accounted in the logs; ids and *last_id as put_rows
 * keeps them. Ids are handed out in turn inside a transaction (max + 1): a statement's rows
 * end at the last one's. */
static int chunk_flush(rs_backend *b, const rs_target *t, put_chunk *c, sq_log *run, sq_log *thr,
                       int64_t ids[2], int64_t *last_id, rs_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < c->n && !rc;) {
        size_t left = c->n - i, k = left >= PUT_CHUNK ? PUT_CHUNK : left >= 8 ? 8 : 1;
        rc = k == 1 ? insert_event(b, t, c->ev[i], c->seq[i], last_id, err)
                    : insert_rows(b, t, c->ev + i, c->seq + i, k, last_id, err);
        for (size_t j = i; j < i + k && !rc; j++)
            rc = sq_log_line(b, run, thr, c->seq[j], c->len[j], c->ev[j]->event_type,
                             c->ev[j]->category, c->ev[j]->created_at, err);
        if (!rc && !ids[0])
            ids[0] = *last_id - (int64_t)k + 1;
        if (!rc)
            ids[1] = *last_id;
        i += k;
    }
    c->n = 0;
    return rc;
}

int sq_row_at(rs_backend *b, const char *thread_id, int64_t seq, int anonymous, rs_buf *line,
              int *found, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "row lookup",
                     "SELECT " SQ_ROW_COLUMNS " FROM run_events e "
                     "WHERE e.thread_id = ? AND e.seq = ?",
                     "ti", thread_id, seq);
    *found = rc == 1;
    if (rc != 1)
        return rc;
    rs_row row;
    sq_row(&row, st, 0);
    if (anonymous)
        row.user_id = NULL;
    rc = rs_event_encode(line, &row, err);
    sq_stmt_done(b, st);
    return rc;
}

static int idem_record(rs_backend *b, const rs_target *t, const char *idem_key, int64_t seq,
                       rs_err *err)
{
    char key[RS_IDEM_COLUMN_MAX + 1];
    int rc = rs_idem_column(key, t->user, idem_key);
    if (rc)
        return rs_err_set(err, rc, "idempotency key too long");
    rc = sq_step(b, NULL, err, "idempotency key",
                 "INSERT OR REPLACE INTO runfs_idem "
                 "(thread_id, key, seq) VALUES (?, ?, ?)",
                 "tti", t->thread_id, key, seq);
    return rc < 0 ? rc : 0;
}

/* The connection's last append when t continues it (same run, same owner) and the store
 * is as it left it; else NULL. */
static const sq_last_put *last_put_of(const rs_backend *b, const rs_target *t)
{
    const sq_last_put *lp = &b->last_put;
    if (lp->version < 0 || lp->version != b->seen_version || strcmp(lp->thread_id, t->thread_id) ||
        strcmp(lp->run_id, t->run_id) || strcmp(lp->user, sq_owner_key(t->user)))
        return NULL;
    return lp;
}

static void last_put_keep(rs_backend *b, const rs_target *t, const sq_log *thr, const sq_log *run,
                          int64_t next_seq, int floor_kept)
{
    sq_last_put *lp = &b->last_put;
    const char *user = sq_owner_key(t->user);
    lp->version = -1;
    if (b->seen_version < 0 || strlen(t->thread_id) >= sizeof lp->thread_id ||
        strlen(t->run_id) >= sizeof lp->run_id || strlen(user) >= sizeof lp->user)
        return;
    memcpy(lp->thread_id, t->thread_id, strlen(t->thread_id) + 1); /* length checked above */
    memcpy(lp->run_id, t->run_id, strlen(t->run_id) + 1);          /* length checked above */
    memcpy(lp->user, user, strlen(user) + 1);                      /* length checked above */
    lp->thr = *thr;
    lp->run = *run;
    lp->next_seq = next_seq;
    lp->floor_kept = floor_kept;
    lp->version = b->seen_version;
}

/* The logs an append starts from, its owner recorded in them, and its first seq: what the
 * last append left when this one continues it, else looked up. */
static int put_start(rs_backend *b, const rs_target *t, sq_log *thr, sq_log *run, int64_t *seq,
                     int *floor_kept, rs_err *err)
{
    const sq_last_put *lp = last_put_of(b, t);
    *floor_kept = lp && lp->floor_kept;
    if (lp) {
        *thr = lp->thr;
        *run = lp->run;
        *seq = lp->next_seq;
        return 0;
    }
    int found, rc;
    if ((rc = sq_log_load(b, t->thread_id, NULL, 0, 1, thr, &found, err)) ||
        (rc = sq_log_load(b, t->thread_id, t->run_id, thr->key, 1, run, &found, err)) ||
        (rc = sq_owner_add(b, thr->key, 0, t->user, err)) ||
        (rc = sq_owner_add(b, thr->key, run->key, t->user, err)) ||
        (rc = sq_log_mix(b, t->thread_id, NULL, thr, t->user, err)) ||
        (rc = sq_log_mix(b, t->thread_id, t->run_id, run, t->user, err)))
        return rc;
    return next_seq(b, t->thread_id, seq, err);
}

/* The rows of one append inside an open transaction: the logs' totals and marks, seqs,
 * idempotency keys, the inserts, the high-water mark. The canonical lines go to stored;
 * ids gets the run_events ids of the rows inserted, first and last (0, 0: none). */
static int put_rows(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n,
                    rs_buf *stored, rs_placement *at, int64_t ids[2], rs_err *err)
{
    sq_log thr, run;
    int64_t seq, last_id = 0;
    rs_buf line = RS_BUF_INIT;
    ids[0] = ids[1] = 0;
    int floor_kept;
    int rc = put_start(b, t, &thr, &run, &seq, &floor_kept, err);
    if (!rc)
        rc = rs_seq_room(&rs_sqlite_backend, seq - 1, n, err);
    if (rc) {
        b->last_put.version = -1;
        return rc;
    }
    int64_t run_start = run.size;
    if (at) {
        at->run_off = run.size;
        at->thread_off = thr.size;
    }
    put_chunk chunk = {.n = 0};
    rc = quiet_set(b, &thr, seq, last_put_of(b, t) != NULL, err);
    for (size_t i = 0; i < n && !rc; i++) {
        const rs_event *ev = evs[i];
        rs_buf_reset(&line);
        /* A row with an idempotency key goes alone, after the rows before it: the next
         * row with the same key must find it. */
        if (ev->idem_key[0]) {
            int used = 0;
            if ((rc = chunk_flush(b, t, &chunk, &run, &thr, ids, &last_id, err)))
                break;
            if ((rc = b->policy->idem_lookup(&sq_policy, b, t, ev, &line, &used, err))) {
                if (err)
                    err->line = (long)i + 1;
                break;
            }
            if (used) {
                if (stored)
                    rc = rs_buf_add(stored, line.buf, line.len);
                continue;
            }
        }
        /* The line is rendered only for a caller that wants it; its length is known. */
        size_t len = stored ? stored->len : rs_event_line_len(ev, seq, t->user);
        if (stored) {
            if ((rc = rs_event_line(stored, ev, seq, t->user)))
                break;
            len = stored->len - len;
        }
        if (!ev->idem_key[0]) {
            chunk.ev[chunk.n] = ev;
            chunk.seq[chunk.n] = seq++;
            chunk.len[chunk.n++] = len;
            if (chunk.n == PUT_CHUNK)
                rc = chunk_flush(b, t, &chunk, &run, &thr, ids, &last_id, err);
            continue;
        }
        if ((rc = insert_event(b, t, ev, seq, &last_id, err)) ||
            (rc = sq_log_line(b, &run, &thr, seq, len, ev->event_type, ev->category, ev->created_at,
                              err)) ||
            (ev->idem_key[0] && (rc = idem_record(b, t, ev->idem_key, seq, err))))
            break;
        if (!ids[0])
            ids[0] = last_id;
        ids[1] = last_id;
        seq++;
    }
    if (!rc)
        rc = chunk_flush(b, t, &chunk, &run, &thr, ids, &last_id, err);
    if (at)
        at->len = run.size - run_start;
    /* The run's change number goes with its totals (the change feed). */
    if (!rc && last_id)
        rc = sq_change_next(b, &run.change, err);
    if (!rc && !(rc = sq_log_store(b, 1, &run, err)) && !(rc = sq_log_store(b, 0, &thr, err)) &&
        last_id) {
        rc = raise_floor(b, t->thread_id, seq - 1, floor_kept, err);
        floor_kept = 1;
    }
    run.change = 0;
    if (rc)
        b->last_put.version = -1;
    else
        last_put_keep(b, t, &thr, &run, seq, floor_kept);
    rs_buf_release(&line);
    return rc;
}

/* Rows lo..hi were stored by put in this transaction: they extend the top range
 * (runfs_meta's canon_lo..canon_hi) when they follow it, or start the top range, the one
 * before going down to runfs_canon. Inside a transaction ids are handed out in turn (max +
 * 1), so no other writer's row lies between lo and hi. A range reaching lo is stale (its
 * top rows were deleted where runfs_canon_top did not see it): it goes, so it never claims
 * new rows. indexed (0: none) is the transaction's last row, the new indexed_id
 * (sq_caught_up): one row of runfs_meta's page, as canon_hi is. When this connection's
 * previous put left the top range (canon_kept) and this one follows it, nothing else can
 * have moved either, so one statement writes both. */
static int canon_add(rs_backend *b, int64_t lo, int64_t hi, int64_t indexed, rs_err *err)
{
    sq_canon_kept *k = &b->canon_kept;
    int rc;
    if (indexed && k->version >= 0 && k->version == b->seen_version &&
        (k->commits == b->commits || k->commits == b->commits + 1) && k->lo > 0 &&
        k->hi == lo - 1) {
        /* REPLACE writes the same two rows as an upsert would (no trigger is on
         * runfs_meta) without trying each insert first. */
        rc = sq_step(b, NULL, err, "canonical rows",
                     "INSERT OR REPLACE INTO runfs_meta (key, value) VALUES ('canon_hi', ?1), "
                     "('indexed_id', ?2)",
                     "ii", hi, indexed);
        k->hi = hi;
        k->commits = b->commits + 1;
        if (rc < 0)
            k->version = -1;
        return rc < 0 ? rc : 0;
    }
    k->version = -1;
    int64_t top_lo = 0, top_hi = 0;
    rc = sq_step(b, NULL, err, "canonical rows", "DELETE FROM runfs_canon WHERE hi >= ?1", "i", lo);
    if (rc >= 0)
        rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'canon_lo'", NULL, NULL, &top_lo,
                    NULL, err);
    if (rc >= 0 && top_lo > 0)
        rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'canon_hi'", NULL, NULL, &top_hi,
                    NULL, err);
    if (rc < 0)
        return rc;
    if (top_lo > 0 && top_hi == lo - 1) {
        rc = sq_step(b, NULL, err, "canonical rows",
                     "UPDATE runfs_meta SET value = ?1 WHERE key = 'canon_hi'", "i", hi);
    } else {
        if (top_lo > 0 && top_hi < lo)
            rc = sq_step(b, NULL, err, "canonical rows",
                         "INSERT OR REPLACE INTO runfs_canon (hi, lo) VALUES (?1, ?2)", "ii",
                         top_hi, top_lo);
        if (rc >= 0)
            rc = sq_step(b, NULL, err, "canonical rows",
                         "UPDATE runfs_meta SET value = CASE key WHEN 'canon_lo' THEN ?1 ELSE ?2 "
                         "END WHERE key IN ('canon_lo', 'canon_hi')",
                         "ii", lo, hi);
        top_lo = lo;
    }
    if (rc >= 0 && indexed)
        rc = sq_caught_up(b, indexed, err);
    if (rc < 0)
        return rc;
    /* Known from here on, after an append (this transaction's commit makes commits one
     * more); an import's rows were not all appended. */
    if (indexed)
        *k = (sq_canon_kept){
            .version = b->seen_version, .commits = b->commits + 1, .lo = top_lo, .hi = hi};
    return 0;
}

/* The group's rows, once for the transaction: the appends that stayed follow one another. */
static int canon_group(rs_backend *b, sq_group_req *group, rs_err *err)
{
    int64_t lo = 0, hi = 0;
    int rc = 0;
    for (sq_group_req *r = group; r && !rc; r = r->next) {
        if (r->rc || !r->ids[0])
            continue;
        if (hi && r->ids[0] == hi + 1) {
            hi = r->ids[1];
            continue;
        }
        if (hi)
            rc = canon_add(b, lo, hi, 0, err);
        lo = r->ids[0];
        hi = r->ids[1];
    }
    return rc || !hi ? rc : canon_add(b, lo, hi, hi, err);
}

/* A statement of 8 or 32 rows (insert_rows) inside a transaction journals the pages it
 * changes, to take its rows back alone (SQLite's statement journal), and a group's
 * savepoints do too. SQLite keeps that journal in memory up to 64 KiB, then in a file it
 * creates in /var/tmp and unlinks: a 32-row statement passes that, so every such statement
 * of a batch made, wrote and unlinked a file (half of a batch's system time more than plain
 * SQLite's). temp_store=MEMORY at BEGIN keeps the journal in memory: at most the pages one
 * statement or savepoint changes, emptied at its end. It is set for an append of such
 * statements only, before its BEGIN (SQLite reads it there), and put back at its end, so
 * no other statement's temporary tables are held in memory. The switch would drop the
 * connection's TEMP tables, which only a read-only store has (mem_index). A pragma acts when
 * prepared, so it is not one of the connection's kept statements; failing, it costs only
 * time. */
static int journal_rows(size_t n)
{
    return n >= 8; /* chunk_flush's smallest multi-row statement */
}

static void journal_in_memory(rs_backend *b, int on)
{
    sqlite3_exec(b->db, on ? "PRAGMA temp_store=MEMORY" : "PRAGMA temp_store=DEFAULT", NULL, NULL,
                 NULL);
}

static void stored_trim(rs_buf *stored, size_t len)
{
    if (stored)
        rs_buf_setlen(stored, len);
}

/* A group of appends in one transaction, each inside its own savepoint so that one that
 * fails (a full disk, a reused idempotency key) leaves the others whole. A failed commit
 * fails them all. An append alone needs no savepoint (a savepoint copies every page it
 * changes first): when it fails, the transaction is rolled back. */
static void put_group_once(rs_backend *b, sq_group_req *group)
{
    rs_err e = {0};
    int alone = group->next == NULL;
    int rc = sq_begin_quiet(b, &e);
    if (!rc && (rc = sq_catch_up(b, &e)))
        sq_rollback(b);
    if (!rc) {
        for (sq_group_req *r = group; r; r = r->next) {
            r->stored_len = r->stored ? r->stored->len : 0;
            if (!alone && (r->rc = sq_exec(b, "SAVEPOINT put", r->err)))
                continue;
            r->rc = 0;
            /* A thread not indexed yet is indexed first (its owners decide access). */
            if (!last_put_of(b, r->t) && !(r->rc = sq_thread_catch_up(b, r->t->thread_id, r->err)))
                r->rc = sq_thread_access(b, r->t->thread_id, r->t->user, r->err);
            if (!r->rc)
                r->rc = put_rows(b, r->t, r->evs, r->n, r->stored, r->at, r->ids, r->err);
            if (r->rc) {
                b->last_put.version = -1;
                stored_trim(r->stored, r->stored_len);
                if (alone) {
                    sq_rollback(b);
                    return;
                }
                sq_exec(b, "ROLLBACK TO put", NULL);
            }
            if (!alone)
                sq_exec(b, "RELEASE put", NULL);
        }
        if ((rc = canon_group(b, group, &e)))
            sq_rollback(b);
        else
            rc = sq_commit(b, &e);
    }
    if (!rc)
        return;
    for (sq_group_req *r = group; r; r = r->next)
        if (r->rc == 0) {
            r->rc = rs_err_set(r->err, rc, "%s", e.msg);
            stored_trim(r->stored, r->stored_len);
        }
}

static void put_group(rs_backend *b, sq_group_req *group)
{
    int in_memory = 0;
    for (sq_group_req *r = group; r && !in_memory; r = r->next)
        in_memory = journal_rows(r->n);
    if (in_memory)
        journal_in_memory(b, 1);
    put_group_once(b, group);
    if (in_memory)
        journal_in_memory(b, 0);
}

/* sq_put's append outside a group: one transaction of its own. */
static int put_once(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n,
                    int if_absent, int *created, rs_existing *existing, rs_buf *stored,
                    rs_placement *at, rs_err *err)
{
    int rc = sq_begin_quiet(b, err);
    if (rc)
        return rc;
    size_t stored_len = stored ? stored->len : 0;
    int found;
    if ((rc = sq_catch_up(b, err)) ||
        (!last_put_of(b, t) && ((rc = sq_thread_catch_up(b, t->thread_id, err)) ||
                                (rc = sq_thread_access(b, t->thread_id, t->user, err)))))
        goto fail;
    if (if_absent) {
        if ((rc =
                 b->policy->once_gate(&sq_policy, b, t, evs[0]->event_type, existing, &found, err)))
            goto fail;
        if (found) {
            sq_rollback(b);
            return 0;
        }
    }
    int64_t ids[2];
    if ((rc = put_rows(b, t, evs, n, stored, at, ids, err)) ||
        (ids[0] && (rc = canon_add(b, ids[0], ids[1], ids[1], err))) ||
        (if_absent && (rc = once_mark(b, t, evs[0]->event_type, err))))
        goto fail;
    if ((rc = sq_commit(b, err)))
        goto fail_committed;
    if (created)
        *created = 1;
    return 0;
fail:
    sq_rollback(b);
fail_committed:
    stored_trim(stored, stored_len);
    return rc;
}

int sq_put(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n, int if_absent,
           int *created, rs_existing *existing, rs_buf *stored, rs_placement *at, rs_err *err)
{
    if (created)
        *created = 0;
    if (n == 0)
        return 0;
    if (!if_absent && b->grouped && !b->read_only) {
        sq_group_req req = {.t = t, .evs = evs, .n = n, .stored = stored, .at = at, .err = err};
        return sq_group_run(b, &req, put_group);
    }
    int in_memory = journal_rows(n);
    if (in_memory)
        journal_in_memory(b, 1);
    int rc = put_once(b, t, evs, n, if_absent, created, existing, stored, at, err);
    if (in_memory)
        journal_in_memory(b, 0);
    return rc;
}

int sq_write_begin(rs_backend *b, const rs_target *t, rs_err *err)
{
    int rc = sq_begin_quiet(b, err); /* a reservation: side tables only */
    if (rc)
        return rc;
    if ((rc = sq_thread_catch_up(b, t->thread_id, err)) ||
        (rc = sq_thread_access(b, t->thread_id, t->user, err)))
        sq_rollback(b);
    return rc;
}

int sq_write_end(rs_backend *b, int rc, rs_err *err)
{
    if (!rc)
        return sq_commit(b, err);
    sq_rollback(b);
    return rc;
}

int sq_hold_insert(rs_backend *b, const rs_target *t, const char *event_type, rs_err *err)
{
    int rc = sq_step(b, NULL, err, "reserve",
                     "INSERT INTO runfs_hold (thread_id, run_id, event_type, pid, started, owner) "
                     "VALUES (?, ?, ?, ?, ?, ?)",
                     "tttiit", t->thread_id, t->run_id, event_type, (int64_t)b->pid, b->started,
                     once_owner(b, t));
    return rc < 0 ? rc : 0;
}

int sq_release(rs_backend *b, const rs_target *t, const char *event_type)
{
    if (!b->read_only)
        identity_exec(b, forget_own_hold, t, event_type, NULL);
    return 0;
}

int sq_create(rs_backend *b, const rs_target *t, rs_err *err)
{
    b->last_put.version = -1; /* it changes logs behind an append's back */
    int rc = sq_begin_quiet(b, err);
    if (rc)
        return rc;
    sq_log thr, run;
    int found;
    /* mkdir adds no rows: it makes the directory visible to its owner and changes nothing
     * another owner sees. */
    if ((rc = sq_catch_up(b, err)) || (rc = sq_thread_catch_up(b, t->thread_id, err)) ||
        (rc = sq_thread_access(b, t->thread_id, t->user, err)) ||
        (rc = sq_log_load(b, t->thread_id, NULL, 0, 1, &thr, &found, err)) ||
        (rc = sq_owner_add(b, thr.key, 0, t->user, err)))
        goto fail;
    if (t->run_id &&
        ((rc = sq_log_load(b, t->thread_id, t->run_id, thr.key, 1, &run, &found, err)) ||
         (rc = sq_owner_add(b, thr.key, run.key, t->user, err))))
        goto fail;
    return sq_commit(b, err);
fail:
    sq_rollback(b);
    return rc;
}

static int run_exec(rs_backend *b, const char *sql, const rs_target *t, int64_t key, rs_err *err)
{
    /* Statements number their parameters ?1 thread, ?2 run, ?3 user, ?4 thread key; binding
     * one a statement does not use is a harmless SQLITE_RANGE. */
    int rc = sq_step(b, NULL, err, "delete", sql, "ttti", t->thread_id, t->run_id, t->user, key);
    return rc < 0 ? rc : 0;
}

int sq_delete_rows(rs_backend *b, const rs_target *t, int64_t *count, rs_err *err)
{
    b->last_put.version = -1; /* it changes logs behind an append's back */
    sq_log thr;
    int found, rc;
    *count = 0;
    if ((rc = sq_thread_catch_up(b, t->thread_id, err)) ||
        (rc = sq_log_load(b, t->thread_id, NULL, 0, 0, &thr, &found, err)) || !found)
        return rc;
    int64_t max = 0;
    if ((rc = sq_int(b, "SELECT MAX(seq) FROM run_events WHERE thread_id = ?", t->thread_id, NULL,
                     &max, NULL, err)))
        goto fail;
    /* ?1 thread, ?2 run (NULL: every run), ?3 user (NULL: every owner). */
    static const char del_rows[] =
        "DELETE FROM run_events WHERE thread_id = ?1 AND (?2 IS NULL OR run_id = ?2) "
        "AND (?3 IS NULL OR user_id = ?3)";
    if ((rc = run_exec(b, del_rows, t, 0, err)))
        goto fail;
    *count = sqlite3_changes(b->db);
    if (*count > 0 && (rc = raise_floor(b, t->thread_id, max, 0, err)))
        goto fail;
    /* The owner leaves the run/thread it deleted; the directory goes when no owner is left. */
    static const char del_owner[] =
        "DELETE FROM runfs_owner WHERE thread_key = ?4 AND (?3 IS NULL OR user = coalesce(?3, '')) "
        "AND (?2 IS NULL OR run_key IN (SELECT run_key FROM runfs_run WHERE thread_key = ?4 "
        "AND run_id = ?2))";
    static const char del_runs[] =
        "DELETE FROM runfs_run WHERE thread_key = ?4 AND (?2 IS NULL OR run_id = ?2) "
        "AND NOT EXISTS (SELECT 1 FROM runfs_owner o WHERE o.thread_key = ?4 "
        "AND o.run_key = runfs_run.run_key)";
    if ((rc = run_exec(b, del_owner, t, thr.key, err)) ||
        (rc = run_exec(b, del_runs, t, thr.key, err)) ||
        (rc = sq_thread_reindex(b, t->thread_id, thr.key, err)))
        goto fail;
    int64_t left = 0;
    if ((rc = sq_int(b, "SELECT count(*) FROM run_events WHERE thread_id = ?", t->thread_id, NULL,
                     &left, NULL, err)))
        goto fail;
    if (!t->run_id && left == 0) {
        static const char drop_thread[] = "DELETE FROM run_event_thread_seq WHERE thread_id = ?1";
        static const char drop_keys[] = "DELETE FROM runfs_idem WHERE thread_id = ?1";
        if ((rc = run_exec(b, drop_thread, t, 0, err)) || (rc = run_exec(b, drop_keys, t, 0, err)))
            goto fail;
    }
    /* The deleter's singletons and seals go with its rows (every owner's when unscoped). */
    static const char drop_once[] =
        "DELETE FROM runfs_once WHERE thread_id = ?1 AND (?2 IS NULL OR run_id = ?2) "
        "AND (?3 IS NULL OR owner = ?3)";
    static const char drop_seals[] =
        "DELETE FROM runfs_seal WHERE thread_id = ?1 AND (?2 IS NULL OR run_id = ?2) "
        "AND (?3 IS NULL OR owner = ?3)";
    /* The runs it emptied leave tombstones, the others a new number (the change feed). The
     * runs' kept step data goes too (every owner's: it is made again from the rows), so no
     * text of deleted rows stays behind in it. */
    if ((rc = run_exec(b, drop_once, t, 0, err)) || (rc = run_exec(b, drop_seals, t, 0, err)) ||
        (rc = sq_steps_forget(b, t, err)) || (rc = sq_change_settle(b, err)))
        goto fail;
    if (!t->run_id) {
        static const char drop_dir[] =
            "DELETE FROM runfs_thread WHERE thread_id = ?1 AND NOT EXISTS (SELECT 1 FROM "
            "runfs_owner o WHERE o.thread_key = runfs_thread.thread_key)";
        if ((rc = run_exec(b, drop_dir, t, 0, err)))
            goto fail;
    }
    return 0;
fail:
    return rc;
}

/* delete_by_run (t->run_id set) or delete_by_thread. */
int sq_delete(rs_backend *b, const rs_target *t, int64_t *count, rs_err *err)
{
    int rc = sq_begin(b, err);
    if (rc)
        return rc;
    if ((rc = sq_delete_rows(b, t, count, err))) {
        sq_rollback(b);
        return rc;
    }
    return sq_commit(b, err);
}

int sq_import(rs_backend *b, const rs_target *t, int64_t floor,
              int (*next)(void *ctx, rs_event **ev, rs_err *err),
              int (*stored)(void *ctx, const rs_event *ev, rs_err *err), void *ctx, int64_t *added,
              int64_t *skipped, rs_err *err)
{
    *added = *skipped = 0;
    b->last_put.version = -1;
    int rc = sq_begin(b, err);
    if (rc)
        return rc;
    rs_buf line = RS_BUF_INIT, have = RS_BUF_INIT;
    int64_t top = floor, first_id = 0, last_id = 0;
    if ((rc = sq_catch_up(b, err)) || (rc = sq_thread_catch_up(b, t->thread_id, err)))
        goto fail;
    for (;;) {
        rs_event *ev;
        int step = next(ctx, &ev, err);
        if (step <= 0) {
            rc = step;
            if (rc)
                goto fail;
            break;
        }
        int found;
        rs_buf_reset(&have);
        rs_buf_reset(&line);
        if ((rc = sq_row_at(b, t->thread_id, ev->seq, 1, &have, &found, err)))
            goto fail;
        if (found) {
            if ((rc = rs_event_reimport(ev, t->thread_id, &have, &line, err)))
                goto fail;
            (*skipped)++;
            continue;
        }
        rs_target rt = {.thread_id = t->thread_id, .run_id = ev->run_id, .user = t->user};
        if ((rc = insert_event(b, &rt, ev, ev->seq, &last_id, err)) || (rc = stored(ctx, ev, err)))
            goto fail;
        if (!first_id)
            first_id = last_id;
        (*added)++;
        if (ev->seq > top)
            top = ev->seq;
    }
    if (*added) {
        /* Rows may land below others: the thread's logs are rebuilt from its rows. */
        sq_log thr;
        int found;
        /* The rows were parsed as put's are: noted, they are copied from now on (by the
         * reindex too). */
        if ((rc = canon_add(b, first_id, last_id, 0, err)) ||
            (rc = sq_log_load(b, t->thread_id, NULL, 0, 1, &thr, &found, err)) ||
            (rc = sq_thread_reindex(b, t->thread_id, thr.key, err)) ||
            (rc = sq_change_rows(b, first_id - 1, last_id, 0, err)) ||
            (rc = sq_caught_up(b, last_id, err)))
            goto fail;
    }
    if (top > 0 && (rc = raise_floor(b, t->thread_id, top, 0, err)))
        goto fail;
    rs_buf_release(&line);
    rs_buf_release(&have);
    return sq_commit(b, err);
fail:
    sq_rollback(b);
    rs_buf_release(&line);
    rs_buf_release(&have);
    *added = *skipped = 0;
    return rc;
}
