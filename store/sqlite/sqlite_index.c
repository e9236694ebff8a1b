/* sqlite_index.c — the byte logs behind events.jsonl: a thread's and each run's lines in
 * seq order, with totals per log (size, count, ...) so stat is one row, and a mark every
 * MARK_EVERY bytes (offset -> seq) so a seek renders at most that much. A thread is indexed
 * at its first use (nothing is scanned at open); rows others (DeerFlow) add to a thread
 * already indexed are indexed when runfs next writes or refreshes, rows they delete leave
 * their thread to be recomputed (the runfs_forget_deleted trigger). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sqlite_int.h"
#include "rs_util.h"

#define MARK_EVERY (16 * 1024)

const char *sq_owner_key(const char *user)
{
    return user ? user : "";
}

/* Load (creating when create) the totals of a thread (run_id NULL) or run. *found = 0 when
 * absent and not created. */
int sq_log_load(rs_backend *b, const char *thread_id, const char *run_id, int64_t thread_key,
                int create, sq_log *ls, int *found, rs_err *err)
{
    sqlite3_stmt *st;
    const char *sel =
        run_id
            ? "SELECT run_key, size, count, messages, last_seq, mixed, mark_off, msg_size, "
              "terminal_seq, ws_count, ws_seq FROM runfs_run WHERE thread_key = ? AND run_id = ?"
            : "SELECT thread_key, size, count, messages, last_seq, mixed, mark_off, msg_size, 0, 0, "
              "0 FROM runfs_thread WHERE thread_id = ?";
    int rc = run_id ? sq_step(b, &st, err, "load", sel, "it", thread_key, run_id)
                    : sq_step(b, &st, err, "load", sel, "t", thread_id);
    if (rc < 0)
        return rc;
    *found = rc;
    if (rc == 1) {
        ls->key = sqlite3_column_int64(st, 0);
        ls->size = sqlite3_column_int64(st, 1);
        ls->count = sqlite3_column_int64(st, 2);
        ls->messages = sqlite3_column_int64(st, 3);
        ls->last_seq = sqlite3_column_int64(st, 4);
        ls->mixed = sqlite3_column_int(st, 5);
        ls->mark_off = sqlite3_column_int64(st, 6);
        ls->msg_size = sqlite3_column_int64(st, 7);
        ls->terminal_seq = sqlite3_column_int64(st, 8);
        ls->ws_count = sqlite3_column_int64(st, 9);
        ls->ws_seq = sqlite3_column_int64(st, 10);
        ls->change = 0;
        ls->newest_ns = 0;
        ls->owner_known = 0;
        ls->noted_set = 0;
        sq_stmt_done(b, st);
        return 0;
    }
    if (!create)
        return 0;
    /* mtime_ns stays 0 until the log holds a row: an empty log shows when it was made. */
    int64_t now = rs_clock_ns(CLOCK_REALTIME);
    rc = run_id ? sq_step(b, NULL, err, "create",
                          "INSERT INTO runfs_run (thread_key, run_id, "
                          "ctime_ns, mtime_ns) VALUES (?, ?, ?, 0)",
                          "iti", thread_key, run_id, now)
                : sq_step(b, NULL, err, "create",
                          "INSERT INTO runfs_thread (thread_id, ctime_ns, "
                          "mtime_ns) VALUES (?, ?, 0)",
                          "ti", thread_id, now);
    if (rc < 0)
        return rc;
    memset(ls, 0, sizeof *ls);
    ls->key = sqlite3_last_insert_rowid(b->db);
    ls->mark_off = -1;
    *found = 1;
    return 0;
}

/* mtime_ns is the greatest created_at of the log's rows (its files' and directory's time),
 * kept as rows are accounted and set to 0 when the log is reset (sq_thread_reindex). */
int sq_log_store(rs_backend *b, int is_run, const sq_log *ls, rs_err *err)
{
    const char *sql =
        is_run ? "UPDATE runfs_run SET size = ?1, count = ?2, messages = ?3, last_seq = ?4, "
                 "mixed = ?5, mtime_ns = max(mtime_ns, ?6), mark_off = ?7, msg_size = ?9, "
                 "terminal_seq = ?10, ws_count = ?11, ws_seq = ?12, change = CASE WHEN ?13 > 0 "
                 "THEN ?13 ELSE change END WHERE run_key = ?8"
               : "UPDATE runfs_thread SET size = ?1, count = ?2, messages = ?3, last_seq = ?4, "
                 "mixed = ?5, mtime_ns = max(mtime_ns, ?6), mark_off = ?7, msg_size = ?9 WHERE "
                 "thread_key = ?8";
    int rc = sq_step(b, NULL, err, "update totals", sql, "iiiiiiiiiiiii", ls->size, ls->count,
                     ls->messages, ls->last_seq, (int64_t)ls->mixed, ls->newest_ns, ls->mark_off,
                     ls->key, ls->msg_size, ls->terminal_seq, ls->ws_count, ls->ws_seq, ls->change);
    return rc < 0 ? rc : 0;
}

/* Record that user has rows (or made the directory) in the thread/run. */
int sq_owner_add(rs_backend *b, int64_t thread_key, int64_t run_key, const char *user, rs_err *err)
{
    int rc = sq_step(b, NULL, err, "owner",
                     "INSERT OR IGNORE INTO runfs_owner (thread_key, "
                     "run_key, user) VALUES (?, ?, ?)",
                     "iit", thread_key, run_key, sq_owner_key(user));
    if (rc < 0)
        return rc;
    return 0;
}

/* sq_owner_add once per owner and log in a pass: rows of one owner follow each other, and
 * a statement per row would cost more than the rest of indexing it. */
static int owner_note(rs_backend *b, sq_log *log, int64_t thread_key, int64_t run_key,
                      const char *user, rs_err *err)
{
    const char *key = sq_owner_key(user);
    if (log->noted_set && strcmp(log->noted, key) == 0)
        return 0;
    int rc = sq_owner_add(b, thread_key, run_key, user, err);
    log->noted_set = !rc && strlen(key) < sizeof log->noted;
    if (log->noted_set)
        memcpy(log->noted, key, strlen(key) + 1);
    return rc;
}

/* The owner of a log's first row: while the log is not mixed, the owner of all its rows. */
static int first_owner(rs_backend *b, const char *thread_id, const char *run_id, sq_log *log,
                       rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_step(
        b, &st, err, "owner",
        run_id
            ? "SELECT coalesce(user_id, '') FROM run_events WHERE thread_id = ?1 AND run_id = ?2 "
              "ORDER BY seq LIMIT 1"
            : "SELECT coalesce(user_id, '') FROM run_events WHERE thread_id = ?1 AND ?2 IS NULL "
              "ORDER BY seq LIMIT 1",
        "tt", thread_id, run_id);
    if (rc < 0)
        return rc;
    const char *v = rc == 1 ? (const char *)sqlite3_column_text(st, 0) : NULL;
    /* An owner too long to keep is not known: every write then asks the rows. */
    log->owner_known = v && rs_fmt(log->owner, sizeof log->owner, "%s", v) >= 0 ? 1 : -1;
    if (rc == 1)
        sq_stmt_done(b, st);
    return 0;
}

int sq_log_mix(rs_backend *b, const char *thread_id, const char *run_id, sq_log *log,
               const char *user, rs_err *err)
{
    const char *key = sq_owner_key(user);
    if (log->mixed)
        return 0;
    if (log->count == 0) {
        log->owner_known = rs_fmt(log->owner, sizeof log->owner, "%s", key) >= 0 ? 1 : -1;
        return 0;
    }
    int rc = log->owner_known ? 0 : first_owner(b, thread_id, run_id, log, err);
    if (!rc && (log->owner_known < 0 || strcmp(log->owner, key) != 0))
        log->mixed = 1;
    return rc;
}

static int mark_insert(rs_backend *b, int64_t log_key, int64_t off, int64_t seq, rs_err *err)
{
    int rc = sq_step(b, NULL, err, "mark",
                     "INSERT OR REPLACE INTO runfs_mark (log_key, off, seq) "
                     "VALUES (?, ?, ?)",
                     "iii", log_key, off, seq);
    return rc < 0 ? rc : 0;
}

/* workspace-changes.json shows the last of a run's first ten (DeerFlow's "latest"). */
#define WS_FIRST 10

static int log_advance(rs_backend *b, sq_log *log, int64_t log_key, int64_t seq, size_t len,
                       const char *event_type, int message, int64_t at_ns, rs_err *err)
{
    if (at_ns > log->newest_ns)
        log->newest_ns = at_ns;
    if (log->mark_off < 0 || log->size - log->mark_off >= MARK_EVERY) {
        int rc = mark_insert(b, log_key, log->size, seq, err);
        if (rc)
            return rc;
        log->mark_off = log->size;
    }
    log->size += (int64_t)len;
    log->count++;
    log->messages += message;
    log->msg_size += message ? (int64_t)len : 0;
    if (strcmp(event_type, "run.terminal") == 0 && (!log->terminal_seq || seq < log->terminal_seq))
        log->terminal_seq = seq;
    if (strcmp(event_type, "workspace_changes") == 0 && log->ws_count < WS_FIRST) {
        log->ws_count++;
        log->ws_seq = seq;
    }
    if (seq > log->last_seq)
        log->last_seq = seq;
    return 0;
}

int sq_log_line(rs_backend *b, sq_log *run, sq_log *thread, int64_t seq, size_t len,
                const char *event_type, const char *category, const char *created_at, rs_err *err)
{
    int message = strcmp(category, "message") == 0;
    /* A row whose created_at has no file time (none, or past 2262) moves no time. */
    int64_t at = 0;
    if (rs_time_ns(created_at, &at))
        at = 0;
    int rc = log_advance(b, run, run->key, seq, len, event_type, message, at, err);
    return rc ? rc : log_advance(b, thread, -thread->key, seq, len, event_type, message, at, err);
}

/* ---- catching up with other writers ---- */

static int meta_get(rs_backend *b, const char *key, int64_t *value, rs_err *err)
{
    *value = 0;
    return sq_int(b, "SELECT value FROM runfs_meta WHERE key = ?", key, NULL, value, NULL, err);
}

static int meta_set(rs_backend *b, const char *key, int64_t value, rs_err *err)
{
    int rc = sq_step(b, NULL, err, "meta",
                     "INSERT OR REPLACE INTO runfs_meta (key, value) "
                     "VALUES (?, ?)",
                     "ti", key, value);
    return rc < 0 ? rc : 0;
}

int sq_caught_up(rs_backend *b, int64_t last_id, rs_err *err)
{
    return meta_set(b, "indexed_id", last_id, err);
}

int sq_needs_catch_up(rs_backend *b, int *needed, rs_err *err)
{
    int64_t max_id = 0, indexed = 0, dirty = 0;
    int rc;
    *needed = 0;
    if ((rc = sq_int(b, "SELECT MAX(id) FROM run_events", NULL, NULL, &max_id, NULL, err)) ||
        (rc = meta_get(b, "indexed_id", &indexed, err)) ||
        (rc = sq_int(b, "SELECT count(*) FROM runfs_thread WHERE dirty", NULL, NULL, &dirty, NULL,
                     err)))
        return rc;
    *needed = max_id > indexed || dirty > 0;
    return *needed ? 0 : sq_change_pending(b, needed, err);
}

/* A thread's run in an indexing pass (an rs_run_set item): its id first. */
typedef struct run_item {
    char id[RS_ID_MAX + 1];
    sq_log log;
} run_item;

static sq_log *run_find(rs_backend *b, rs_run_set *rs, const char *thread_id, int64_t thread_key,
                        const char *run_id, int reset, rs_err *err)
{
    run_item *it = rs_run_set_find(rs, run_id);
    if (it)
        return &it->log;
    if (rs_run_set_room(rs)) {
        rs_err_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    int found;
    sq_log *log = &((run_item *)rs_run_set_slot(rs))->log;
    if (sq_log_load(b, thread_id, run_id, thread_key, 1, log, &found, err))
        return NULL;
    if (reset) {
        int64_t key = log->key;
        memset(log, 0, sizeof *log);
        log->key = key;
        log->mark_off = -1;
    }
    return rs_run_set_add(rs, run_id) ? NULL : log;
}

static int runs_store(rs_backend *b, rs_run_set *rs, rs_err *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < rs->count; i++)
        rc = sq_log_store(b, 1, &((run_item *)rs_run_set_at(rs, i))->log, err);
    return rc;
}

/* Index rows of one thread from the statement's current row on (rows ordered by seq, with
 * the row columns at col 1); rows at or below the thread's last_seq are already in. Stops
 * at the first row of another thread; *more says whether one is waiting. */
static int index_rows(rs_backend *b, sqlite3_stmt *st, int reset, int *more, rs_err *err)
{
    rs_row row;
    sq_row(&row, st, 1);
    char thread_id[RS_ID_MAX + 1];
    if (rs_fmt(thread_id, sizeof thread_id, "%s", row.thread_id) < 0)
        return rs_err_set(err, -ENAMETOOLONG, "thread id '%.64s...' is longer than 64 characters",
                          row.thread_id);
    sq_log thr;
    int found, rc, src = SQLITE_ROW;
    if ((rc = sq_log_load(b, thread_id, NULL, 0, 1, &thr, &found, err)))
        return rc;
    rs_run_set runs = RS_RUN_SET_INIT(runs, sizeof(run_item));
    if (reset) {
        int64_t key = thr.key;
        memset(&thr, 0, sizeof thr);
        thr.key = key;
        thr.mark_off = -1;
    }
    rs_buf line = RS_BUF_INIT;
    do {
        sq_row(&row, st, 1);
        if (strcmp(row.thread_id, thread_id) != 0)
            break;
        /* A run no path can name: in none of the thread's logs, as its reads skip it. */
        if (row.seq <= thr.last_seq || row.odd)
            continue;
        sq_log *run = run_find(b, &runs, thread_id, thr.key, row.run_id, reset, err);
        rs_buf_reset(&line);
        if (!run || (rc = rs_event_encode(&line, &row, err)) ||
            (rc = owner_note(b, &thr, thr.key, 0, row.user_id, err)) ||
            (rc = owner_note(b, run, thr.key, run->key, row.user_id, err)) ||
            (rc = sq_log_mix(b, thread_id, NULL, &thr, row.user_id, err)) ||
            (rc = sq_log_mix(b, thread_id, row.run_id, run, row.user_id, err)) ||
            (rc = sq_log_line(b, run, &thr, row.seq, line.len, row.event_type, row.category,
                              row.created_at, err))) {
            if (!run && !rc)
                rc = -ENOMEM;
            break;
        }
        if (b->progress && (++b->index_done & 4095) == 0)
            b->progress(b->progress_ctx, b->index_done, b->index_total);
    } while ((src = sqlite3_step(st)) == SQLITE_ROW);
    if (!rc && src != SQLITE_ROW && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "index");
    if (!rc)
        rc = runs_store(b, &runs, err);
    if (!rc)
        rc = sq_log_store(b, 0, &thr, err);
    *more = src == SQLITE_ROW;
    rs_buf_release(&line);
    rs_run_set_release(&runs);
    return rc;
}

int sq_thread_reindex(rs_backend *b, const char *thread_id, int64_t thread_key, rs_err *err)
{
    /* Every log of the thread starts over: marks, totals (runs with no rows left keep
     * their directory, at zero). */
    static const char drop_marks[] =
        "DELETE FROM runfs_mark WHERE log_key = -?1 OR log_key IN (SELECT run_key FROM "
        "runfs_run WHERE thread_key = ?1)";
    static const char zero_runs[] =
        "UPDATE runfs_run SET size = 0, count = 0, messages = 0, last_seq = 0, mark_off = -1, "
        "mixed = 0, msg_size = 0, terminal_seq = 0, ws_count = 0, ws_seq = 0, mtime_ns = 0 "
        "WHERE thread_key = ?1";
    static const char zero_thread[] =
        "UPDATE runfs_thread SET size = 0, count = 0, messages = 0, last_seq = 0, mark_off = -1, "
        "mixed = 0, msg_size = 0, dirty = 0, mtime_ns = 0 WHERE thread_key = ?1";
    const char *steps[] = {drop_marks, zero_runs, zero_thread};
    int rc = 0;
    for (size_t i = 0; !rc && i < 3; i++)
        rc = sq_step(b, NULL, err, "reindex", steps[i], "i", thread_key);
    if (rc < 0)
        return rc;
    sqlite3_stmt *st;
    rc = sq_step(b, &st, err, "reindex",
                 "SELECT e.id, " SQ_ROW_COLUMNS " FROM run_events e "
                 "WHERE e.thread_id = ? ORDER BY e.seq",
                 "t", thread_id);
    if (rc == 1) {
        int more;
        rc = index_rows(b, st, 1, &more, err);
        sq_stmt_done(b, st);
    }
    return rc;
}

/* The policy's primitives (rs_sql): statements about one thread, $1 its thread_key, $2 its id
 * (binding one a statement does not use is a harmless SQLITE_RANGE), and one integer. */
static int thread_exec(rs_backend *b, const char *sql, int64_t key, const char *thread_id,
                       rs_err *err)
{
    const char *q = sq_numbered(b, sql);
    int rc = q ? sq_step(b, NULL, err, "recompute", q, "it", key, thread_id)
               : rs_err_set(err, -ENOMEM, "out of memory");
    return rc < 0 ? rc : 0;
}

static int int_query(rs_backend *b, const char *sql, const char *a1, const char *a2, int64_t *out,
                     int *found, rs_err *err)
{
    const char *q = sq_numbered(b, sql);
    return q ? sq_int(b, q, a1, a2, out, found, err) : rs_err_set(err, -ENOMEM, "out of memory");
}

const rs_sql sq_policy = {thread_exec,    int_query,        sq_thread_reindex,
                          sq_row_at,      sq_once_existing, sq_once_held,
                          sq_write_begin, sq_write_end,     sq_hold_insert};

static int recompute_deleted(rs_backend *b, const char *thread_id, int64_t key, rs_err *err)
{
    return b->policy->recompute_deleted(&sq_policy, b, b->read_only, thread_id, key, err);
}

/* The thread's highest seq, its logs' last seq, key and dirty flag (*found: it has logs). */
static int thread_state(rs_backend *b, const char *thread_id, int64_t *max, int64_t *last,
                        int64_t *key, int *dirty, int *found, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "catch up",
                     "SELECT coalesce((SELECT max(seq) FROM run_events WHERE thread_id = ?1), 0), "
                     "t.last_seq, t.thread_key, t.dirty FROM (SELECT 1) LEFT JOIN runfs_thread t "
                     "ON t.thread_id = ?1",
                     "t", thread_id);
    if (rc < 0)
        return rc;
    *max = sqlite3_column_int64(st, 0);
    *found = sqlite3_column_type(st, 2) != SQLITE_NULL;
    *last = sqlite3_column_int64(st, 1);
    *key = sqlite3_column_int64(st, 2);
    *dirty = sqlite3_column_int(st, 3);
    sq_stmt_done(b, st);
    return 0;
}

int sq_thread_behind(rs_backend *b, const char *thread_id, int *behind, rs_err *err)
{
    int64_t max, last, key;
    int dirty, found;
    int rc = thread_state(b, thread_id, &max, &last, &key, &dirty, &found, err);
    *behind = !rc && ((found && dirty) || max > last);
    return rc;
}

int sq_thread_catch_up(rs_backend *b, const char *thread_id, rs_err *err)
{
    int64_t max, last, key;
    int dirty, found;
    int rc = thread_state(b, thread_id, &max, &last, &key, &dirty, &found, err);
    if (rc || (!(found && dirty) && max <= last))
        return rc;
    b->last_put.version = -1; /* it changes logs behind an append's back */
    b->commits++;             /* and what counts as not indexed */
    if (found && dirty)
        return recompute_deleted(b, thread_id, key, err);
    /* Rows above the logs (all of them the first time), as sq_catch_up indexes them. */
    sqlite3_stmt *st;
    rc = sq_step(b, &st, err, "index",
                 "SELECT e.id, " SQ_ROW_COLUMNS " FROM run_events e "
                 "WHERE e.thread_id = ? AND e.seq > ? ORDER BY e.seq",
                 "ti", thread_id, last);
    if (rc == 1) {
        int more;
        rc = index_rows(b, st, 0, &more, err);
        sq_stmt_done(b, st);
    }
    return rc < 0 ? rc : 0;
}

int sq_catch_up(rs_backend *b, rs_err *err)
{
    /* Nobody else committed since this connection last looked: nothing new to index (our
     * own commits leave data_version alone and index as they go). */
    int64_t version = -1;
    int rc = sq_look(b, &version, err);
    if (rc || (version == b->seen_version && version >= 0))
        return rc;
    b->last_put.version = -1; /* another writer changed the store: look again */
    b->canon_kept.version = -1;
    b->change_known = 0;
    int needed = 0;
    if ((rc = sq_needs_catch_up(b, &needed, err)) || !needed) {
        if (!rc)
            b->seen_version = version;
        return rc;
    }
    /* Threads others deleted from: recomputed whole. */
    for (;;) {
        sqlite3_stmt *st;
        rc = sq_step(b, &st, err, "catch up",
                     "SELECT thread_key, thread_id FROM runfs_thread "
                     "WHERE dirty LIMIT 1",
                     "");
        if (rc <= 0)
            break;
        int64_t key = sqlite3_column_int64(st, 0);
        char thread_id[RS_ID_MAX + 1];
        if (rs_fmt(thread_id, sizeof thread_id, "%s", (const char *)sqlite3_column_text(st, 1)) <
            0) {
            rc = rs_err_set(err, -ENAMETOOLONG, "thread id '%.64s...' is longer than 64 characters",
                            (const char *)sqlite3_column_text(st, 1));
            sq_stmt_done(b, st);
            return rc;
        }
        sq_stmt_done(b, st);
        if ((rc = recompute_deleted(b, thread_id, key, err)))
            return rc;
    }
    if (rc < 0)
        return rc;
    /* Rows others added: above the indexed id, thread by thread in seq order; those of a
     * thread not indexed yet wait for its first use (sq_thread_catch_up). */
    int64_t indexed = 0, max_id = 0;
    if ((rc = meta_get(b, "indexed_id", &indexed, err)) ||
        (rc = sq_int(b, "SELECT MAX(id) FROM run_events", NULL, NULL, &max_id, NULL, err)))
        return rc;
    /* The change feed numbers them (in every thread, indexed or not) and what was deleted or
     * changed in place. */
    if ((rc = sq_change_rows(b, indexed, max_id, 1, err)) || (rc = sq_change_settle(b, err)))
        return rc;
    if (max_id <= indexed)
        return 0;
    sqlite3_stmt *st;
    rc = sq_step(b, &st, err, "catch up",
                 "SELECT e.id, " SQ_ROW_COLUMNS " FROM run_events e "
                 "WHERE e.id > ? AND e.thread_id IN (SELECT thread_id FROM runfs_thread) "
                 "ORDER BY e.thread_id, e.seq",
                 "i", indexed);
    b->index_done = 0;
    b->index_total = max_id - indexed;
    if (rc == 1) {
        int more = 1;
        rc = 0;
        while (!rc && more)
            rc = index_rows(b, st, 0, &more, err);
        sq_stmt_done(b, st);
    }
    if (!rc && b->progress)
        b->progress(b->progress_ctx, b->index_done, b->index_total);
    if (rc || (rc = meta_set(b, "indexed_id", max_id, err)))
        return rc;
    b->seen_version = version;
    return 0;
}

/* ---- reading a log ---- */

int sq_owner_has(rs_backend *b, int64_t thread_key, int64_t run_key, const char *user, int *has,
                 rs_err *err)
{
    int rc = sq_step(b, NULL, err, "owner",
                     "SELECT 1 FROM runfs_owner WHERE thread_key = ? "
                     "AND run_key = ? AND user = ?",
                     "iit", thread_key, run_key, sq_owner_key(user));
    *has = rc == 1;
    return rc < 0 ? rc : 0;
}

int sq_thread_access(rs_backend *b, const char *thread_id, const char *user, rs_err *err)
{
    if (!user || !b->owners_apart)
        return 0;
    sq_log thr;
    int found, has = 0;
    int rc = sq_log_load(b, thread_id, NULL, 0, 0, &thr, &found, err);
    if (!rc && found)
        rc = sq_owner_has(b, thr.key, 0, user, &has, err);
    if (rc || !found || has)
        return rc;
    return rs_err_set(err, -EACCES, "thread %s is taken: it holds no rows of %s", thread_id, user);
}

/* The slot of a log's kept info, or NULL where none is kept: an owner's view (the owner
 * is not part of the slot's name) or inside a transaction (its own changes are not
 * commits yet). A kept info holds while the file is as it was when read: no other
 * connection committed (data_version, just probed by sq_thread_ready), nor this one
 * (commits), nor did a statement of this one change a row outside a transaction. */
static sq_info_kept *info_slot(rs_backend *b, const char *thread_id, const char *run_id,
                               const char *user)
{
    if (user || sq_in_write(b))
        return NULL;
    uint64_t h = rs_hash(RS_HASH_INIT, thread_id, strlen(thread_id));
    if (run_id)
        h = rs_hash(h, run_id, strlen(run_id) + 1);
    return &b->info_kept[h % SQ_INFO_SLOTS];
}

static int info_holds(const rs_backend *b, const sq_info_kept *k, const char *thread_id,
                      const char *run_id)
{
    return k->thread_id[0] && k->version == b->ready_version && k->commits == b->commits &&
           k->changes == sqlite3_total_changes64(b->db) && strcmp(k->thread_id, thread_id) == 0 &&
           strcmp(k->run_id, run_id ? run_id : "") == 0;
}

static int log_info_read(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                         rs_log_info *out, rs_err *err);

int sq_log_info(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                rs_log_info *out, rs_err *err)
{
    int rc = sq_thread_ready(b, thread_id, err);
    if (rc)
        return rc;
    sq_info_kept *k = info_slot(b, thread_id, run_id, user);
    if (k && info_holds(b, k, thread_id, run_id)) {
        *out = k->info;
        return 0;
    }
    int64_t version = b->ready_version, commits = b->commits,
            changes = sqlite3_total_changes64(b->db);
    rc = log_info_read(b, thread_id, run_id, user, out, err);
    if (!k)
        return rc;
    /* Ids of a valid path fit; any other is not kept. */
    if (!rc && rs_fmt(k->thread_id, sizeof k->thread_id, "%s", thread_id) >= 0 &&
        rs_fmt(k->run_id, sizeof k->run_id, "%s", run_id ? run_id : "") >= 0) {
        k->version = version;
        k->commits = commits;
        k->changes = changes;
        k->info = *out;
    } else {
        k->thread_id[0] = '\0';
    }
    return rc;
}

static int log_info_read(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                         rs_log_info *out, rs_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    int rc;
    const char *sql =
        run_id
            ? "SELECT r.run_key, r.size, r.count, r.messages, r.last_seq, r.mixed, " RS_LOG_TIME_SQL(
                  r) ", t.thread_key FROM runfs_thread t JOIN runfs_run r ON r.thread_key = "
                     "t.thread_key WHERE t.thread_id = ? AND r.run_id = ?"
            : "SELECT t.thread_key, t.size, t.count, t.messages, t.last_seq, t.mixed, " RS_LOG_TIME_SQL(
                  t) ", t.thread_key FROM runfs_thread t WHERE t.thread_id = ?";
    rc = sq_step(b, &st, err, "stat", sql, "tt", thread_id, run_id);
    if (rc < 0)
        return rc;
    int64_t key = 0, thread_key = 0;
    int mixed = 0;
    if (rc == 1) {
        key = sqlite3_column_int64(st, 0);
        out->size = sqlite3_column_int64(st, 1);
        out->count = sqlite3_column_int64(st, 2);
        out->message_count = sqlite3_column_int64(st, 3);
        out->last_seq = sqlite3_column_int64(st, 4);
        mixed = sqlite3_column_int(st, 5);
        out->ctime_ns = sqlite3_column_int64(st, 6);
        out->mtime_ns = sqlite3_column_int64(st, 7);
        thread_key = sqlite3_column_int64(st, 8);
        out->exists = 1;
        sq_stmt_done(b, st);
    }
    if (!out->exists)
        return 0;
    out->exact = 1;
    if (user) {
        int has;
        if ((rc = sq_owner_has(b, thread_key, run_id ? key : 0, user, &has, err)))
            return rc;
        if (!has) {
            memset(out, 0, sizeof *out);
            return 0;
        }
        if (mixed) {
            /* Several owners share it: this owner's view has its own totals. */
            out->exact = 0;
            static const char count_sql[] =
                "SELECT count(*), coalesce(sum(category = 'message'), 0), coalesce(max(seq), 0) "
                "FROM run_events WHERE thread_id = ?1 AND (?2 IS NULL OR run_id = ?2) "
                "AND user_id = ?3";
            out->size = 0;
            if ((rc = sq_step(b, &st, err, "stat", count_sql, "ttt", thread_id, run_id, user)) < 0)
                return rc;
            if (rc == 1) {
                out->count = sqlite3_column_int64(st, 0);
                out->message_count = sqlite3_column_int64(st, 1);
                out->last_seq = sqlite3_column_int64(st, 2);
                sq_stmt_done(b, st);
            }
        } else if (out->count > 0) {
            /* One owner's rows only: when they are another's (this owner made the directory
             * and wrote nothing), this owner's view is empty. */
            sq_log log = {.count = out->count};
            if ((rc = first_owner(b, thread_id, run_id, &log, err)))
                return rc;
            if (log.owner_known < 0 || strcmp(log.owner, user) != 0) {
                out->exact = 0;
                out->size = out->count = out->message_count = out->last_seq = 0;
            }
        }
    }
    if (!run_id) {
        int64_t floor = 0;
        if ((rc = sq_int(b, "SELECT seq FROM run_event_thread_seq WHERE thread_id = ?", thread_id,
                         NULL, &floor, NULL, err)))
            return rc;
        out->hwm = floor > out->last_seq ? floor : out->last_seq;
        if (!user || out->exact) {
            int64_t max = 0;
            if ((rc = sq_int(b, "SELECT MAX(seq) FROM run_events WHERE thread_id = ?", thread_id,
                             NULL, &max, NULL, err)))
                return rc;
            if (max > out->hwm)
                out->hwm = max;
        }
    }
    return 0;
}

int sq_log_facts(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                 rs_log_facts *out, rs_err *err)
{
    memset(out, 0, sizeof *out);
    rs_log_info info;
    int rc = sq_log_info(b, thread_id, run_id, user, &info, err);
    if (rc || !info.exists || !info.exact)
        return rc ? rc : info.exists ? 0 : -ENOENT;
    sqlite3_stmt *st;
    rc = sq_step(b, &st, err, "stat",
                 run_id ? "SELECT r.msg_size, r.terminal_seq, r.ws_seq FROM runfs_thread t JOIN "
                          "runfs_run r ON r.thread_key = t.thread_key WHERE t.thread_id = ? AND "
                          "r.run_id = ?"
                        : "SELECT msg_size, 0, 0 FROM runfs_thread WHERE thread_id = ?",
                 "tt", thread_id, run_id);
    if (rc <= 0)
        return rc;
    out->known = 1;
    out->msg_size = sqlite3_column_int64(st, 0);
    out->terminal_seq = sqlite3_column_int64(st, 1);
    out->ws_seq = sqlite3_column_int64(st, 2);
    sq_stmt_done(b, st);
    return 0;
}

/* What sq_log_info and sq_log_facts read of each run for every owner, in one statement. */
int sq_runs_info(rs_backend *b, const char *thread_id, rs_run_info_fn fn, void *ctx, rs_err *err)
{
    int rc = sq_thread_ready(b, thread_id, err);
    sqlite3_stmt *st = NULL;
    rc = rc ? rc
            : sq_step(b, &st, err, "stat",
                      "SELECT r.run_id, r.size, r.count, r.messages, r.last_seq, " RS_LOG_TIME_SQL(
                          r) ", r.msg_size FROM runfs_thread t JOIN runfs_run r ON "
                             "r.thread_key = t.thread_key WHERE t.thread_id = ?",
                      "t", thread_id);
    if (rc <= 0)
        return rc;
    int src = SQLITE_DONE;
    do {
        const char *run_id = (const char *)sqlite3_column_text(st, 0);
        rs_log_info info = {.exists = 1,
                            .exact = 1,
                            .size = sqlite3_column_int64(st, 1),
                            .count = sqlite3_column_int64(st, 2),
                            .message_count = sqlite3_column_int64(st, 3),
                            .last_seq = sqlite3_column_int64(st, 4),
                            .ctime_ns = sqlite3_column_int64(st, 5),
                            .mtime_ns = sqlite3_column_int64(st, 6)};
        if (run_id && (rc = fn(ctx, run_id, &info, sqlite3_column_int64(st, 7))))
            break;
    } while ((src = sqlite3_step(st)) == SQLITE_ROW);
    if (!rc && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "stat");
    sq_stmt_done(b, st);
    return rc;
}

int sq_log_seek(rs_backend *b, const char *thread_id, const char *run_id, int64_t off,
                rs_cursor **out, rs_err *err)
{
    /* The last mark at or before off, then the log's rows from that mark's seq on. */
    sqlite3_stmt *st;
    int rc = sq_thread_ready(b, thread_id, err);
    if (rc)
        return rc;
    const char *mark_sql =
        run_id ? "SELECT m.off, m.seq FROM runfs_run r JOIN runfs_thread t ON t.thread_key = "
                 "r.thread_key JOIN runfs_mark m ON m.log_key = r.run_key WHERE t.thread_id = ?1 "
                 "AND r.run_id = ?2 AND m.off <= ?3 ORDER BY m.off DESC LIMIT 1"
               : "SELECT m.off, m.seq FROM runfs_thread t JOIN runfs_mark m ON m.log_key = "
                 "-t.thread_key WHERE t.thread_id = ?1 AND ?2 IS NULL AND m.off <= ?3 "
                 "ORDER BY m.off DESC LIMIT 1";
    rc = sq_step(b, &st, err, "seek", mark_sql, "tti", thread_id, run_id,
                 off < 0 ? (int64_t)0 : off);
    if (rc < 0)
        return rc;
    int64_t from_off = 0, from_seq = INT64_MAX;
    if (rc == 1) {
        from_off = sqlite3_column_int64(st, 0);
        from_seq = sqlite3_column_int64(st, 1);
        sq_stmt_done(b, st);
    }
    const char *rows_sql =
        run_id ? "SELECT " SQ_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = ?1 "
                 "AND e.run_id = ?2 AND e.seq >= ?3 ORDER BY e.seq"
               : "SELECT " SQ_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = ?1 "
                 "AND e.seq >= ?3 AND ?2 IS NULL ORDER BY e.seq";
    if ((rc = sq_stmt_get(b, rows_sql, &st, err)))
        return rc;
    sq_bind_text(st, 1, thread_id);
    sq_bind_text(st, 2, run_id);
    sqlite3_bind_int64(st, 3, from_seq);
    return sq_cursor_new(b, st, run_id ? 1 : 2, from_off, off, out, err);
}
