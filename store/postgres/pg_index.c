/* pg_index.c — the byte logs behind events.jsonl, as in the SQLite backend: per thread and
 * run the totals (size, count, ...) so stat is one row, and a mark every MARK_EVERY bytes
 * (offset -> seq) so a seek renders at most that much. Rows other writers add or delete are
 * found through the triggers (runfs_thread.dirty) and indexed under the thread's lock. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_int.h"
#include "rs_util.h"

#define MARK_EVERY (16 * 1024)
#define LOG_COLUMNS "size, count, messages, last_seq, mixed, mark_off"

/* A thread's top row: its seq and run (one of a run no path names is never indexed, and
 * says nothing of the marks). */
#define TOP_ROW_SQL \
    "LEFT JOIN LATERAL (SELECT seq, run_id FROM run_events WHERE thread_id = $1 ORDER BY seq " \
    "DESC LIMIT 1) top ON true "

const char *pg_owner_key(const char *user)
{
    return user ? user : "";
}

void pg_log_from(pg_log *ls, const PGresult *r, int col)
{
    ls->key = pg_val_int(r, 0, col);
    ls->size = pg_val_int(r, 0, col + 1);
    ls->count = pg_val_int(r, 0, col + 2);
    ls->messages = pg_val_int(r, 0, col + 3);
    ls->last_seq = pg_val_int(r, 0, col + 4);
    ls->mixed = (int)pg_val_int(r, 0, col + 5);
    ls->mark_off = pg_val_int(r, 0, col + 6);
    ls->newest_ns = 0;
    ls->noted_set = 0;
}

int pg_log_load(rs_backend *b, const char *thread_id, const char *run_id, int64_t thread_key,
                int create, pg_log *ls, int *found, rs_err *err)
{
    pg_args a = {.n = 0};
    if (run_id) {
        pg_arg_int(&a, thread_key);
        pg_arg_text(&a, run_id);
    } else {
        pg_arg_text(&a, thread_id);
    }
    const char *sel = run_id ? "SELECT run_key, " LOG_COLUMNS
                               ", 0 FROM runfs_run WHERE thread_key = $1 AND run_id = $2"
                             : "SELECT thread_key, " LOG_COLUMNS
                               ", dirty FROM runfs_thread WHERE thread_id = $1";
    PGresult *r;
    int rc = pg_run(b, sel, &a, &r, err);
    if (rc)
        return rc;
    *found = PQntuples(r) > 0;
    if (*found) {
        pg_log_from(ls, r, 0);
        ls->dirty = (int)pg_val_int(r, 0, 7);
    }
    PQclear(r);
    if (*found || !create)
        return 0;
    /* mtime_ns stays 0 until the log holds a row: an empty log shows when it was made. */
    pg_arg_int(&a, rs_clock_ns(CLOCK_REALTIME));
    const char *ins =
        run_id
            ? "INSERT INTO runfs_run (thread_key, run_id, ctime_ns, mtime_ns) VALUES ($1, $2, $3, 0) "
              "RETURNING run_key"
            : "INSERT INTO runfs_thread (thread_id, ctime_ns, mtime_ns) VALUES ($1, $2, 0) "
              "RETURNING thread_key";
    if ((rc = pg_run(b, ins, &a, &r, err)))
        return rc;
    memset(ls, 0, sizeof *ls);
    ls->key = pg_val_int(r, 0, 0);
    ls->mark_off = -1;
    PQclear(r);
    *found = 1;
    return 0;
}

/* mtime_ns is the greatest created_at of the log's rows (its files' and directory's time),
 * kept as rows are accounted and set to 0 when the log is reset (pg_thread_reindex). */
int pg_log_store(rs_backend *b, int is_run, const pg_log *ls, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_int(&a, ls->size);
    pg_arg_int(&a, ls->count);
    pg_arg_int(&a, ls->messages);
    pg_arg_int(&a, ls->last_seq);
    pg_arg_int(&a, ls->mixed);
    pg_arg_int(&a, ls->newest_ns);
    pg_arg_int(&a, ls->mark_off);
    pg_arg_int(&a, ls->key);
    return pg_run(
        b,
        is_run
            ? "UPDATE runfs_run SET size = $1, count = $2, messages = $3, last_seq = $4, mixed = $5, "
              "mtime_ns = GREATEST(mtime_ns, $6), mark_off = $7 WHERE run_key = $8"
            : "UPDATE runfs_thread SET size = $1, count = $2, messages = $3, last_seq = $4, "
              "mixed = $5, mtime_ns = GREATEST(mtime_ns, $6), mark_off = $7 WHERE thread_key = $8",
        &a, NULL, err);
}

int pg_owner_add(rs_backend *b, int64_t thread_key, int64_t run_key, const char *user, int *mixed,
                 rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_int(&a, thread_key);
    pg_arg_int(&a, run_key);
    pg_arg_text(&a, pg_owner_key(user));
    PGresult *r;
    int rc = pg_run(b,
                    "INSERT INTO runfs_owner (thread_key, run_key, owner) VALUES ($1, $2, $3) "
                    "ON CONFLICT DO NOTHING",
                    &a, &r, err);
    if (rc)
        return rc;
    int added = strcmp(PQcmdTuples(r), "0") != 0;
    PQclear(r);
    if (!added || *mixed)
        return 0;
    a.n = 2;
    if ((rc = pg_run(b, "SELECT count(*) FROM runfs_owner WHERE thread_key = $1 AND run_key = $2",
                     &a, &r, err)))
        return rc;
    *mixed = pg_val_int(r, 0, 0) > 1;
    PQclear(r);
    return 0;
}

/* Account a line of len bytes at seq; 1 when a mark at the line's offset is due first. */
static int log_step(pg_log *log, int64_t seq, size_t len, int message, int64_t at_ns,
                    int64_t *mark_off)
{
    if (at_ns > log->newest_ns)
        log->newest_ns = at_ns;
    int due = log->mark_off < 0 || log->size - log->mark_off >= MARK_EVERY;
    if (due)
        *mark_off = log->mark_off = log->size;
    log->size += (int64_t)len;
    log->count++;
    log->messages += message;
    if (seq > log->last_seq)
        log->last_seq = seq;
    return due;
}

static const char mark_sql[] =
    "INSERT INTO runfs_mark (log_key, off, seq) SELECT * FROM unnest($1::bigint[], "
    "$2::bigint[], $3::bigint[]) ON CONFLICT (log_key, off) DO UPDATE SET seq = excluded.seq";

static int marks_add(pg_marks *m, int64_t log_key, int64_t off, int64_t seq)
{
    const char *sep = m->count++ ? "," : "{";
    return rs_buf_addf(&m->keys, "%s%" PRId64, sep, log_key) ||
                   rs_buf_addf(&m->offs, "%s%" PRId64, sep, off) ||
                   rs_buf_addf(&m->seqs, "%s%" PRId64, sep, seq)
               ? -ENOMEM
               : 0;
}

int pg_log_line(rs_backend *b, pg_log *run, pg_log *thread, int64_t seq, size_t len, int message,
                const char *created_at, pg_marks *marks, rs_err *err)
{
    pg_marks now = PG_MARKS_INIT;
    pg_marks *m = marks ? marks : &now;
    int64_t off, at = 0;
    int rc = 0;
    /* A row whose created_at has no file time (none, or past 2262) moves no time. */
    if (rs_time_ns(created_at, &at))
        at = 0;
    if (log_step(run, seq, len, message, at, &off))
        rc = marks_add(m, run->key, off, seq);
    if (!rc && log_step(thread, seq, len, message, at, &off))
        rc = marks_add(m, -thread->key, off, seq);
    if (rc)
        rc = rs_err_set(err, -ENOMEM, "out of memory");
    else if (!marks)
        rc = pg_marks_send(b, &now, err);
    pg_marks_release(&now);
    return rc;
}

void pg_marks_release(pg_marks *m)
{
    rs_buf_release(&m->keys);
    rs_buf_release(&m->offs);
    rs_buf_release(&m->seqs);
}

int pg_marks_send(rs_backend *b, pg_marks *m, rs_err *err)
{
    if (m->count == 0)
        return 0;
    pg_args a = {.n = 0};
    rs_buf *arrays[] = {&m->keys, &m->offs, &m->seqs};
    for (int i = 0; i < 3; i++) {
        if (rs_buf_addch(arrays[i], '}'))
            return rs_err_set(err, -ENOMEM, "out of memory");
        pg_arg_text(&a, arrays[i]->buf);
    }
    return pg_run(b, mark_sql, &a, NULL, err);
}
/* ---- catching up with other writers ---- */

/* An indexing pass sends what it writes in batches of this many (a round trip per run,
 * owner or mark would cost more than the rest of indexing it: a DeerFlow thread of 1M rows
 * holds 100k runs). */
#define INDEX_BATCH 4096

/* A thread's run in an indexing pass (an rs_run_set item): its id first. */
typedef struct run_item {
    char id[RS_ID_MAX + 1];
    pg_log log;
} run_item;

/* The slot's log just filled in becomes run_id's (zeroed after a reset: a pass then starts
 * every log over). */
static pg_log *run_added(rs_run_set *rs, const char *run_id, int reset)
{
    pg_log *log = &((run_item *)rs_run_set_slot(rs))->log;
    if (reset) {
        int64_t key = log->key;
        int mixed = log->mixed;
        memset(log, 0, sizeof *log);
        log->key = key;
        log->mixed = mixed;
        log->mark_off = -1;
    }
    log->noted_set = 0;
    return rs_run_set_add(rs, run_id) ? NULL : log;
}

/* The runs of the thread's rows above after_seq, created where missing (keys in the order
 * their first rows come), all in one statement. */
static int runs_load(rs_backend *b, rs_run_set *rs, const char *thread_id, int64_t thread_key,
                     int64_t after_seq, int reset, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_int(&a, thread_key);
    pg_arg_text(&a, thread_id);
    pg_arg_int(&a, after_seq);
    pg_arg_int(&a, rs_clock_ns(CLOCK_REALTIME));
    PGresult *r;
    int rc = pg_run(
        b,
        "WITH ids AS (SELECT run_id, min(seq) AS first FROM run_events WHERE thread_id = $2 "
        "AND seq > $3::bigint GROUP BY run_id), made AS (INSERT INTO runfs_run (thread_key, "
        "run_id, ctime_ns, mtime_ns) SELECT $1, run_id, $4, 0 FROM ids ORDER BY first ON "
        "CONFLICT (thread_key, run_id) DO NOTHING RETURNING run_key, " LOG_COLUMNS ", run_id) "
        "SELECT * FROM made UNION ALL SELECT r.run_key, r.size, r.count, r.messages, r.last_seq, "
        "r.mixed, r.mark_off, r.run_id FROM runfs_run r JOIN ids ON ids.run_id = r.run_id WHERE "
        "r.thread_key = $1",
        &a, &r, err);
    if (rc)
        return rc;
    int n = PQntuples(r);
    for (int i = 0; !rc && i < n; i++) {
        if ((rc = rs_run_set_room(rs))) {
            rc = rs_err_set(err, -ENOMEM, "out of memory");
            break;
        }
        ((run_item *)rs_run_set_slot(rs))->log = (pg_log){
            .key = pg_val_int(r, i, 0),
            .size = pg_val_int(r, i, 1),
            .count = pg_val_int(r, i, 2),
            .messages = pg_val_int(r, i, 3),
            .last_seq = pg_val_int(r, i, 4),
            .mixed = (int)pg_val_int(r, i, 5),
            .mark_off = pg_val_int(r, i, 6),
        };
        run_added(rs, PQgetvalue(r, i, 7), reset);
    }
    PQclear(r);
    return rc;
}

static pg_log *run_find(rs_backend *b, rs_run_set *rs, const char *thread_id, int64_t thread_key,
                        const char *run_id, int reset, rs_err *err)
{
    run_item *it = rs_run_set_find(rs, run_id);
    if (it)
        return &it->log;
    /* Not among the runs loaded: a run the rows gained since (not under DeerFlow's lock). */
    if (rs_run_set_room(rs)) {
        rs_err_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    int found;
    if (pg_log_load(b, thread_id, run_id, thread_key, 1, &((run_item *)rs_run_set_slot(rs))->log,
                    &found, err))
        return NULL;
    return run_added(rs, run_id, reset);
}

/* Owners the logs of a pass gain, written INDEX_BATCH at a time: array literals of the run
 * keys (0 for the thread's log) and the owners. */
typedef struct owner_set {
    rs_buf keys, owners;
    int count;
} owner_set;

static const char owners_sql[] =
    "INSERT INTO runfs_owner (thread_key, run_key, owner) SELECT $1, * FROM "
    "unnest($2::bigint[], $3::text[]) ON CONFLICT DO NOTHING";

static int owners_send(rs_backend *b, owner_set *os, int64_t thread_key, rs_err *err)
{
    if (os->count == 0)
        return 0;
    if (rs_buf_addch(&os->keys, '}') || rs_buf_addch(&os->owners, '}'))
        return rs_err_set(err, -ENOMEM, "out of memory");
    pg_args a = {.n = 0};
    pg_arg_int(&a, thread_key);
    pg_arg_text(&a, os->keys.buf);
    pg_arg_text(&a, os->owners.buf);
    int rc = pg_run(b, owners_sql, &a, NULL, err);
    rs_buf_reset(&os->keys);
    rs_buf_reset(&os->owners);
    os->count = 0;
    return rc;
}

/* The log's owner put in the set, once for each run of its rows in a pass (rows of one
 * owner follow each other); mixed is worked out from runfs_owner when the logs are stored. */
static int owner_note(rs_backend *b, owner_set *os, pg_log *log, int64_t thread_key,
                      int64_t run_key, const char *user, rs_err *err)
{
    const char *key = pg_owner_key(user);
    if (log->noted_set && strcmp(log->noted, key) == 0)
        return 0;
    const char *sep = os->count++ ? "," : "{";
    int rc = rs_buf_addf(&os->keys, "%s%" PRId64, sep, run_key) ||
             rs_buf_addf(&os->owners, "%s\"", sep);
    for (const char *p = key; !rc && *p; p++)
        rc = (*p == '"' || *p == '\\' ? rs_buf_addch(&os->owners, '\\') : 0) ||
             rs_buf_addch(&os->owners, *p);
    if (rc || rs_buf_addch(&os->owners, '"'))
        return rs_err_set(err, -ENOMEM, "out of memory");
    log->noted_set = strlen(key) < sizeof log->noted;
    if (log->noted_set)
        memcpy(log->noted, key, strlen(key) + 1);
    return os->count >= INDEX_BATCH ? owners_send(b, os, thread_key, err) : 0;
}

static int marks_flush(rs_backend *b, pg_marks *m, rs_err *err)
{
    int rc = pg_marks_send(b, m, err);
    pg_marks_release(m);
    m->count = 0;
    return rc;
}

/* The runs' totals, INDEX_BATCH runs a statement, each run mixed when runfs_owner has more
 * than one owner of it (its owners are all written by then). */
static int runs_store(rs_backend *b, const rs_run_set *rs, rs_err *err)
{
    static const char sql[] =
        "UPDATE runfs_run r SET size = u.size, count = u.count, messages = u.messages, "
        "last_seq = u.last_seq, mark_off = u.mark_off, mtime_ns = GREATEST(r.mtime_ns, "
        "u.newest), mixed = CASE WHEN (SELECT count(*) FROM runfs_owner o WHERE o.thread_key = "
        "r.thread_key AND o.run_key = r.run_key) > 1 THEN 1 ELSE 0 END FROM unnest($1::bigint[], "
        "$2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[]) AS "
        "u(key, size, count, messages, last_seq, mark_off, newest) WHERE r.run_key = u.key";
    rs_buf cols[7] = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT,
                      RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    int rc = 0;
    for (size_t from = 0; !rc && from < rs->count; from += INDEX_BATCH) {
        size_t to = rs->count - from > INDEX_BATCH ? from + INDEX_BATCH : rs->count;
        for (size_t i = from; !rc && i < to; i++) {
            const pg_log *l = &((const run_item *)rs_run_set_at(rs, i))->log;
            int64_t v[7] = {l->key,      l->size,     l->count,    l->messages,
                            l->last_seq, l->mark_off, l->newest_ns};
            for (int c = 0; !rc && c < 7; c++)
                rc = rs_buf_addf(&cols[c], "%s%" PRId64, i > from ? "," : "{", v[c]);
        }
        pg_args a = {.n = 0};
        for (int c = 0; !rc && c < 7; c++)
            if (!(rc = rs_buf_addch(&cols[c], '}')))
                pg_arg_text(&a, cols[c].buf);
        if (rc) {
            rc = rs_err_set(err, -ENOMEM, "out of memory");
            break;
        }
        rc = pg_run(b, sql, &a, NULL, err);
        for (int c = 0; c < 7; c++)
            rs_buf_reset(&cols[c]);
    }
    for (int c = 0; c < 7; c++)
        rs_buf_release(&cols[c]);
    return rc;
}

/* Index the thread's rows above thr->last_seq (all of them after a reset), in seq order:
 * the rows stream through a cursor while runs, owners and marks go in batches, so a pass
 * costs about what reading the rows does. */
static int index_rows(rs_backend *b, const char *thread_id, pg_log *thr, int reset, rs_err *err)
{
    if (reset) {
        int64_t key = thr->key;
        int mixed = thr->mixed;
        memset(thr, 0, sizeof *thr);
        thr->key = key;
        thr->mixed = mixed;
        thr->mark_off = -1;
    }
    thr->noted_set = 0;
    rs_run_set runs = RS_RUN_SET_INIT(runs, sizeof(run_item));
    int rc = runs_load(b, &runs, thread_id, thr->key, thr->last_seq, reset, err);
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    pg_arg_int(&a, thr->last_seq);
    rs_cursor *c = NULL;
    if (!rc)
        rc = pg_cursor_new(b,
                           "SELECT " PG_ROW_COLUMNS " FROM run_events e WHERE "
                           "e.thread_id = $1 AND e.seq > $2::bigint ORDER BY e.seq",
                           &a, 0, 0, 0, &c, err);
    owner_set owners = {.keys = RS_BUF_INIT, .owners = RS_BUF_INIT};
    pg_marks marks = PG_MARKS_INIT;
    const rs_record *rec;
    while (c && (rc = c->next(c, &rec)) == 1) {
        const rs_row *row = &c->row;
        pg_log *run = run_find(b, &runs, thread_id, thr->key, row->run_id, reset, err);
        if (!run) {
            rc = err && err->code ? err->code : -ENOMEM;
            break;
        }
        if ((rc = owner_note(b, &owners, thr, thr->key, 0, row->user_id, err)) ||
            (rc = owner_note(b, &owners, run, thr->key, run->key, row->user_id, err)) ||
            (rc = pg_log_line(b, run, thr, row->seq, rec->line_len,
                              strcmp(row->category, "message") == 0, row->created_at, &marks,
                              err)) ||
            (marks.count >= INDEX_BATCH && (rc = marks_flush(b, &marks, err))))
            break;
        if ((++b->index_done & 4095) == 0 && b->progress)
            b->progress(b->progress_ctx, b->index_done, 0);
    }
    if (rc < 0 && err && !err->code)
        rs_err_set(err, rc, "index: %s", rs_errno_name(rc));
    if (c)
        c->free(c);
    if (rc >= 0 && !(rc = marks_flush(b, &marks, err)) &&
        !(rc = owners_send(b, &owners, thr->key, err)) && !(rc = runs_store(b, &runs, err)))
        rc = pg_log_store(b, 0, thr, err);
    pg_marks_release(&marks);
    rs_buf_release(&owners.keys);
    rs_buf_release(&owners.owners);
    rs_run_set_release(&runs);
    if (rc < 0)
        return rc;
    pg_args k = {.n = 0};
    pg_arg_int(&k, thr->key);
    return pg_run(b,
                  "UPDATE runfs_thread SET mixed = CASE WHEN (SELECT count(*) FROM runfs_owner "
                  "o WHERE o.thread_key = $1 AND o.run_key = 0) > 1 THEN 1 ELSE 0 END "
                  "WHERE thread_key = $1",
                  &k, NULL, err);
}

int pg_thread_reindex(rs_backend *b, const char *thread_id, int64_t thread_key, rs_err *err)
{
    static const char *const steps[] = {
        /* the mark's row held first, as mark_hold says */
        "SELECT dirty FROM runfs_thread WHERE thread_key = $1 FOR UPDATE",
        "DELETE FROM runfs_mark WHERE log_key = -$1::bigint OR log_key IN (SELECT run_key "
        "FROM runfs_run WHERE thread_key = $1)",
        "UPDATE runfs_run SET size = 0, count = 0, messages = 0, last_seq = 0, mark_off = -1, "
        "mtime_ns = 0 WHERE thread_key = $1",
        "UPDATE runfs_thread SET mtime_ns = 0 WHERE thread_key = $1",
    };
    pg_args a = {.n = 0};
    pg_arg_int(&a, thread_key);
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof steps / sizeof *steps; i++)
        rc = pg_run(b, steps[i], &a, NULL, err);
    pg_log thr;
    int found;
    if (rc || (rc = pg_log_load(b, thread_id, NULL, 0, 1, &thr, &found, err)) ||
        (rc = index_rows(b, thread_id, &thr, 1, err)))
        return rc;
    /* Owners may have left with their rows (index_rows set the runs with rows). */
    static const char *const remix[] = {
        "UPDATE runfs_run SET mixed = CASE WHEN (SELECT count(*) FROM runfs_owner o WHERE "
        "o.thread_key = $1 AND o.run_key = runfs_run.run_key) > 1 THEN 1 ELSE 0 END "
        "WHERE thread_key = $1 AND count = 0",
        "UPDATE runfs_thread SET dirty = 0, mixed = CASE WHEN (SELECT count(*) FROM runfs_owner "
        "o WHERE o.thread_key = $1 AND o.run_key = 0) > 1 THEN 1 ELSE 0 END "
        "WHERE thread_key = $1",
    };
    for (size_t i = 0; !rc && i < 2; i++)
        rc = pg_run(b, remix[i], &a, NULL, err);
    return rc;
}

/* Statements about one thread: $1 its thread_key, $2 its id (typed: a statement may leave
 * one unused). */
static int thread_exec(rs_backend *b, const char *sql, int64_t key, const char *thread_id,
                       rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_int(&a, key);
    pg_arg_text(&a, thread_id);
    return pg_run(b, sql, &a, NULL, err);
}

const rs_sql pg_policy = {thread_exec,    pg_int,           pg_thread_reindex,
                          pg_row_at,      pg_once_existing, pg_once_held,
                          pg_write_begin, pg_write_end,     pg_hold_insert};

static int recompute_deleted(rs_backend *b, const char *thread_id, int64_t key, rs_err *err)
{
    return b->policy->recompute_deleted(&pg_policy, b, b->read_only, thread_id, key, err);
}

/* The thread's mark read again holding its row until the catch-up commits. Another writer's
 * trigger that set it (a DELETE, an UPDATE) before this read is waited for and its change
 * then read with the rows, and one that sets it after waits for this commit and marks the
 * thread anew, whether or not that writer takes the thread's advisory lock. Read without the
 * row (pg_log_load), a mark such a writer set while the catch-up read the rows was cleared
 * with the rest: its change in no total, for good. */
static int mark_hold(rs_backend *b, pg_log *thr, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_int(&a, thr->key);
    PGresult *r;
    int rc =
        pg_run(b, "SELECT dirty FROM runfs_thread WHERE thread_key = $1 FOR UPDATE", &a, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) > 0 && pg_val_int(r, 0, 0) == 1)
        thr->dirty = 1; /* a row changed or deleted: recomputed, not appended to */
    PQclear(r);
    return 0;
}

/* held: thr->dirty was read with the thread's row locked (pg_thread_hold), so the mark is
 * not read again. */
static int catch_up(rs_backend *b, const char *thread_id, pg_log *thr, int *found, int held,
                    rs_err *err)
{
    int rc = thr->dirty && !held ? mark_hold(b, thr, err) : 0;
    if (rc)
        return rc;
    if (thr->dirty == 1) {
        rc = recompute_deleted(b, thread_id, thr->key, err);
    } else if (thr->dirty == 2) {
        pg_args a = {.n = 0};
        pg_arg_int(&a, thr->key);
        if (!(rc = index_rows(b, thread_id, thr, 0, err)))
            rc =
                pg_run(b, "UPDATE runfs_thread SET dirty = 0 WHERE thread_key = $1", &a, NULL, err);
    }
    if (!rc && thr->dirty)
        rc = pg_log_load(b, thread_id, NULL, 0, 0, thr, found, err);
    return rc;
}

int pg_thread_catch_up(rs_backend *b, const char *thread_id, pg_log *thr, int *found, rs_err *err)
{
    return catch_up(b, thread_id, thr, found, 0, err);
}

int pg_thread_hold(rs_backend *b, const char *thread_id, pg_log *thr, int *found, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT t.thread_key, " LOG_COLUMNS ", t.dirty, top.seq, top.run_id FROM "
                    "runfs_thread t " TOP_ROW_SQL "WHERE t.thread_id = $1 FOR UPDATE OF t",
                    &a, &r, err);
    if (rc)
        return rc;
    *found = PQntuples(r) > 0;
    if (*found) {
        pg_log_from(thr, r, 0);
        thr->dirty = (int)pg_val_int(r, 0, 7);
        /* A row above the indexed seq no mark names: another writer's that committed after
         * this transaction noted the tail (it took no lock), indexed as an appended one. */
        if (!thr->dirty && !PQgetisnull(r, 0, 8) && pg_val_int(r, 0, 8) > thr->last_seq &&
            rs_id_valid_n(PQgetvalue(r, 0, 9), (size_t)PQgetlength(r, 0, 9)))
            thr->dirty = 2;
    }
    PQclear(r);
    return *found && thr->dirty ? catch_up(b, thread_id, thr, found, 1, err) : 0;
}

int pg_catch_up_all(rs_backend *b, rs_err *err)
{
    /* One transaction per thread, under its lock: a large backlog never holds up writers
     * of other threads. */
    int64_t from = b->index_done;
    for (int round = 0; round < 100000; round++) {
        PGresult *r;
        int rc = pg_run(b,
                        "SELECT thread_id FROM runfs_thread t WHERE dirty <> 0 AND (count > 0 OR "
                        "EXISTS (SELECT 1 FROM runfs_owner o WHERE o.thread_key = t.thread_key)) "
                        "LIMIT 1",
                        NULL, &r, err);
        if (rc)
            return rc;
        if (PQntuples(r) == 0) {
            PQclear(r);
            pg_analyze_grown(b, b->index_done - from, 0);
            return 0;
        }
        char thread_id[RS_ID_MAX + 1];
        if (rs_fmt(thread_id, sizeof thread_id, "%s", PQgetvalue(r, 0, 0)) < 0) {
            rc = rs_err_set(err, -ENAMETOOLONG, "thread id '%.64s...' is longer than 64 characters",
                            PQgetvalue(r, 0, 0));
            PQclear(r);
            return rc;
        }
        PQclear(r);
        pg_log thr;
        int found;
        if ((rc = pg_begin(b, thread_id, err)))
            return rc;
        if ((rc = pg_log_load(b, thread_id, NULL, 0, 0, &thr, &found, err)) ||
            (found && (rc = pg_thread_catch_up(b, thread_id, &thr, &found, err)))) {
            pg_rollback(b);
            return rc;
        }
        if ((rc = pg_commit(b, err)))
            return rc;
    }
    return 0;
}

/* behind: rows above the thread's indexed seq were seen with no mark (log_info_once). */
static int thread_fix(rs_backend *b, const char *thread_id, int behind, rs_err *err)
{
    if (b->read_only)
        return pg_mem_ready(b, thread_id, err);
    if (b->piped || (b->read_tx && !b->in_tx))
        return 0; /* a cursor's snapshot is open here: the next use catches it up */
    int own = !b->in_tx, found, rc;
    pg_log thr;
    if ((rc = own ? pg_begin(b, thread_id, err) : pg_lock_thread(b, thread_id, err)))
        return rc;
    if (!(rc = pg_log_load(b, thread_id, NULL, 0, 0, &thr, &found, err)) && found && behind &&
        !thr.dirty)
        thr.dirty = 2; /* appended to: the rows above last_seq are indexed as marked ones are */
    if (!rc && found && thr.dirty)
        rc = pg_thread_catch_up(b, thread_id, &thr, &found, err);
    if (own && rc)
        pg_rollback(b);
    else if (own)
        rc = pg_commit(b, err);
    return rc;
}

int pg_thread_fix(rs_backend *b, const char *thread_id, rs_err *err)
{
    return thread_fix(b, thread_id, 0, err);
}

/* *fixed: the thread was caught up (a mark, or rows of the tail not noted yet). */
static int thread_ready(rs_backend *b, const char *thread_id, int *fixed, rs_err *err)
{
    *fixed = 0;
    if (b->read_only)
        return pg_mem_ready(b, thread_id, err);
    /* Rows of the thread in the tail not noted yet (another writer's, committed since the
     * last look) leave it to be indexed as their mark would: the fix notes them. */
    int64_t dirty = 0;
    int rc = pg_int(b,
                    b->has_tail ? "SELECT CASE WHEN " PG_TAIL_UNNOTED(
                                      "e.thread_id = $1") " > 0 THEN 2 ELSE (SELECT dirty FROM "
                                                          "runfs_thread WHERE thread_id = $1) END"
                                : "SELECT dirty FROM runfs_thread WHERE thread_id = $1",
                    thread_id, NULL, &dirty, NULL, err);
    if (rc || !dirty)
        return rc;
    *fixed = 1;
    return pg_thread_fix(b, thread_id, err);
}

int pg_thread_ready(rs_backend *b, const char *thread_id, rs_err *err)
{
    int fixed;
    return thread_ready(b, thread_id, &fixed, err);
}

/* ---- reading a log ---- */

static int owner_has(rs_backend *b, int64_t thread_key, int64_t run_key, const char *user, int *has,
                     rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_int(&a, thread_key);
    pg_arg_int(&a, run_key);
    pg_arg_text(&a, pg_owner_key(user));
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT 1 FROM runfs_owner WHERE thread_key = $1 AND run_key = $2 "
                    "AND owner = $3",
                    &a, &r, err);
    if (rc)
        return rc;
    *has = PQntuples(r) > 0;
    PQclear(r);
    return 0;
}

/* A log's totals with its thread's high-water mark, top row and count of rows in the tail not
 * noted yet (unnoted): one round trip. */
#define THREAD_INFO_SQL(unnoted) \
    "SELECT t.thread_key, t.size, t.count, t.messages, t.last_seq, t.mixed, " RS_LOG_TIME_SQL( \
        t) ", t.thread_key, (SELECT seq FROM run_event_thread_seq WHERE thread_id = $1), t.dirty, " \
           "t.last_seq, top.seq, top.run_id, " unnoted " FROM runfs_thread t " TOP_ROW_SQL \
           "WHERE t.thread_id = $1"
#define RUN_INFO_SQL(unnoted) \
    "SELECT r.run_key, r.size, r.count, r.messages, r.last_seq, r.mixed, " RS_LOG_TIME_SQL( \
        r) ", t.thread_key, 0, t.dirty, t.last_seq, top.seq, top.run_id, " unnoted " FROM " \
           "runfs_thread t LEFT JOIN runfs_run r ON r.thread_key = t.thread_key AND r.run_id = $2 " TOP_ROW_SQL \
           "WHERE t.thread_id = $1"

/* The log's totals as the side tables have them; *dirty: the thread waits to be caught up;
 * *behind: it holds rows above its indexed seq though no mark says so. The insert trigger
 * leaves a marked thread as it is, and the mark is cleared after its rows were read, under
 * the thread's advisory lock: a writer that does not take that lock (DeerFlow's does) may
 * commit a row between the read and the clearing, which then no mark names. */
static int log_info_once(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                         rs_log_info *out, int *found, int *dirty, int *behind, rs_err *err)
{
    memset(out, 0, sizeof *out);
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    if (run_id)
        pg_arg_text(&a, run_id);
#define UNNOTED PG_TAIL_UNNOTED("e.thread_id = $1")
    int tail = b->has_tail && !b->read_only; /* a reader's copy counts the tail itself */
    const char *sql = run_id ? (tail ? RUN_INFO_SQL(UNNOTED) : RUN_INFO_SQL("0"))
                             : (tail ? THREAD_INFO_SQL(UNNOTED) : THREAD_INFO_SQL("0"));
#undef UNNOTED
    PGresult *r;
    int rc = pg_run(b, sql, &a, &r, err);
    if (rc)
        return rc;
    int64_t key = 0, thread_key = 0, floor = 0, max = 0;
    int mixed = 0;
    /* Rows of the tail not noted leave the thread to be caught up as their marks would. */
    *found = PQntuples(r) > 0;
    *dirty = *found && (pg_val_int(r, 0, 10) != 0 || pg_val_int(r, 0, 14) > 0);
    *behind = *found && !*dirty && !PQgetisnull(r, 0, 12) &&
              pg_val_int(r, 0, 12) > pg_val_int(r, 0, 11) &&
              rs_id_valid_n(PQgetvalue(r, 0, 13), (size_t)PQgetlength(r, 0, 13));
    if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) {
        key = pg_val_int(r, 0, 0);
        out->size = pg_val_int(r, 0, 1);
        out->count = pg_val_int(r, 0, 2);
        out->message_count = pg_val_int(r, 0, 3);
        out->last_seq = pg_val_int(r, 0, 4);
        mixed = (int)pg_val_int(r, 0, 5);
        out->ctime_ns = pg_val_int(r, 0, 6);
        out->mtime_ns = pg_val_int(r, 0, 7);
        thread_key = pg_val_int(r, 0, 8);
        if (!run_id) {
            floor = pg_val_int(r, 0, 9);
            max = pg_val_int(r, 0, 12);
        }
        out->exists = 1;
    }
    PQclear(r);
    if (!out->exists)
        return 0;
    out->exact = 1;
    if (user) {
        int has;
        if ((rc = owner_has(b, thread_key, run_id ? key : 0, user, &has, err)))
            return rc;
        if (!has) {
            memset(out, 0, sizeof *out);
            return 0;
        }
        if (mixed) {
            /* Several owners share it: this owner's view has its own totals. */
            out->exact = 0;
            pg_args u = {.n = 0};
            pg_arg_text(&u, thread_id);
            pg_arg_text(&u, run_id);
            pg_arg_text(&u, user);
            if ((rc = pg_run(b,
                             "SELECT count(*), count(*) FILTER (WHERE category = 'message'), "
                             "coalesce(max(seq), 0) FROM run_events WHERE thread_id = $1 "
                             "AND ($2::text IS NULL OR run_id = $2) AND user_id = $3",
                             &u, &r, err)))
                return rc;
            out->count = pg_val_int(r, 0, 0);
            out->message_count = pg_val_int(r, 0, 1);
            out->last_seq = pg_val_int(r, 0, 2);
            out->size = 0;
            PQclear(r);
        }
    }
    if (!run_id) {
        out->hwm = floor > out->last_seq ? floor : out->last_seq;
        if ((!user || out->exact) && max > out->hwm)
            out->hwm = max;
    }
    return 0;
}

int pg_log_info(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                rs_log_info *out, rs_err *err)
{
    int found = 0, dirty = 0, behind = 0;
    if (b->read_only) {
        int rc = pg_mem_ready(b, thread_id, err);
        return rc ? rc
                  : log_info_once(b, thread_id, run_id, user, out, &found, &dirty, &behind, err);
    }
    /* The dirty flag and the tail's unnoted rows come with the totals; a thread found
     * behind is caught up and read again. */
    int rc = log_info_once(b, thread_id, run_id, user, out, &found, &dirty, &behind, err);
    if (!rc && !found && b->has_tail) {
        /* No totals: it may be a thread only the tail's unnoted rows are in. */
        int fixed = 0;
        if ((rc = thread_ready(b, thread_id, &fixed, err)) || !fixed)
            return rc;
        return log_info_once(b, thread_id, run_id, user, out, &found, &dirty, &behind, err);
    }
    if (rc || !(dirty || behind))
        return rc;
    if ((rc = thread_fix(b, thread_id, behind, err)))
        return rc;
    return log_info_once(b, thread_id, run_id, user, out, &found, &dirty, &behind, err);
}

/* Every run's totals of the thread as log_info_once reads one's; *dirty and *behind as it
 * says. */
static int runs_once(rs_backend *b, const char *thread_id, PGresult **r, int *dirty, int *behind,
                     rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    int rc = pg_run(b,
                    "SELECT r.run_id, r.size, r.count, r.messages, r.last_seq, " RS_LOG_TIME_SQL(
                        r) ", t.dirty, t.last_seq, top.seq, top.run_id FROM runfs_thread t JOIN "
                           "runfs_run r ON r.thread_key = t.thread_key " TOP_ROW_SQL
                           "WHERE t.thread_id = $1",
                    &a, r, err);
    int found = !rc && PQntuples(*r) > 0;
    *dirty = found && pg_val_int(*r, 0, 7) != 0;
    *behind = found && !*dirty && !PQgetisnull(*r, 0, 9) &&
              pg_val_int(*r, 0, 9) > pg_val_int(*r, 0, 8) &&
              rs_id_valid_n(PQgetvalue(*r, 0, 10), (size_t)PQgetlength(*r, 0, 10));
    return rc;
}

int pg_runs_info(rs_backend *b, const char *thread_id, rs_run_info_fn fn, void *ctx, rs_err *err)
{
    PGresult *r = NULL;
    int dirty = 0, behind = 0;
    /* As pg_log_info: the tail's rows of the thread noted first. */
    int rc = b->read_only  ? pg_mem_ready(b, thread_id, err)
             : b->has_tail ? pg_thread_ready(b, thread_id, err)
                           : 0;
    rc = rc ? rc : runs_once(b, thread_id, &r, &dirty, &behind, err);
    if (!rc && (dirty || behind) && !b->read_only) {
        PQclear(r);
        r = NULL;
        if (!(rc = thread_fix(b, thread_id, behind, err)))
            rc = runs_once(b, thread_id, &r, &dirty, &behind, err);
    }
    for (int i = 0; !rc && i < PQntuples(r); i++) {
        rs_log_info info = {.exists = 1,
                            .exact = 1,
                            .size = pg_val_int(r, i, 1),
                            .count = pg_val_int(r, i, 2),
                            .message_count = pg_val_int(r, i, 3),
                            .last_seq = pg_val_int(r, i, 4),
                            .ctime_ns = pg_val_int(r, i, 5),
                            .mtime_ns = pg_val_int(r, i, 6)};
        /* No messages.jsonl size is kept here (no log facts): -1. */
        rc = fn(ctx, PQgetvalue(r, i, 0), &info, -1);
    }
    PQclear(r);
    return rc;
}

/* A log read is one prepared query per page, keyed on seq (no cursor, no transaction of
 * its own), pages growing from PAGE_FIRST rows to PAGE_MAX. A sequential reader asks for
 * the offset where its last read stopped, inside that read's last line: so the page is
 * kept on the connection when freed, and a seek there resumes it (no mark query, no rows
 * fetched twice). A write on this connection drops it, and it is not resumed once HOLD_NS
 * old, so rows other connections delete are not shown for longer than that. */
#define PAGE_FIRST 256
#define PAGE_MAX 4096
#define HOLD_NS 1000000000LL

typedef struct pg_page {
    rs_cursor base;
    rs_backend *b;
    char *thread_id, *run_id; /* run_id NULL: the thread's log */
    PGresult *res;
    int row, nrows, limit, done;
    int64_t next_seq, next_off, skip_to;
    int64_t last_off;   /* where the last row handed out starts */
    int64_t fetched_ns; /* CLOCK_MONOTONIC when the page was fetched */
    pg_canon canon;
    char at[PG_AT_MAX]; /* the row's created_at */
} pg_page;

static int page_fetch(pg_page *p, rs_err *err)
{
    PQclear(p->res);
    p->res = NULL;
    pg_args a = {.n = 0};
    pg_arg_text(&a, p->thread_id);
    pg_arg_int(&a, p->next_seq);
    pg_arg_int(&a, p->limit);
    if (p->run_id)
        pg_arg_text(&a, p->run_id);
    const char *sql =
        p->run_id ? "SELECT " PG_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = $1 "
                    "AND e.run_id = $4 AND e.seq >= $2::bigint ORDER BY e.seq LIMIT $3::bigint"
                  : "SELECT " PG_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = $1 "
                    "AND e.seq >= $2::bigint ORDER BY e.seq LIMIT $3::bigint";
    int rc = pg_run(p->b, sql, &a, &p->res, err);
    if (rc)
        return rc;
    p->row = 0;
    p->canon.valid = 0;
    p->fetched_ns = rs_clock_ns(CLOCK_MONOTONIC);
    p->nrows = PQntuples(p->res);
    p->done = p->nrows < p->limit;
    if (p->limit < PAGE_MAX)
        p->limit *= 4;
    return 0;
}

static int page_next(rs_cursor *base, const rs_record **out)
{
    pg_page *p = (pg_page *)base;
    for (;;) {
        if (p->row >= p->nrows) {
            if (p->done)
                return 0;
            int rc = page_fetch(p, NULL);
            if (rc)
                return rc;
            if (p->nrows == 0)
                return 0;
        }
        pg_row(&base->row, p->res, p->row, 0, p->at);
        base->row.canonical = pg_canon_has(p->b, &p->canon, p->res, p->row++);
        p->next_seq = base->row.seq + 1;
        p->last_off = p->next_off;
        int rc = rs_cursor_emit(base, p->run_id ? 1 : 2, &p->next_off, p->skip_to, out);
        if (rc)
            return rc; /* 0: the line ends before the offset asked for */
    }
}

static void page_drop(pg_page *p)
{
    PQclear(p->res);
    free(p->thread_id);
    free(p->run_id);
    rs_buf_release(&p->base.line);
    free(p);
}

void pg_log_forget(rs_backend *b)
{
    if (b->held)
        page_drop(b->held);
    b->held = NULL;
}

static void page_free(rs_cursor *base)
{
    pg_page *p = (pg_page *)base;
    pg_log_forget(p->b);
    if (p->row > 0 && !p->b->in_tx)
        p->b->held = p;
    else
        page_drop(p);
}

/* The held page of this log, resumed at off when off lies in its last row handed out (the
 * row is handed out again) or is where that row ends (a read that stopped on a line
 * boundary: the page goes on from its next seq); NULL otherwise. */
static pg_page *page_resume(rs_backend *b, const char *thread_id, const char *run_id, int64_t off)
{
    pg_page *p = b->held;
    if (!p || rs_clock_ns(CLOCK_MONOTONIC) - p->fetched_ns > HOLD_NS || p->row == 0 ||
        off < p->last_off || off > p->next_off || strcmp(p->thread_id, thread_id) != 0 ||
        (run_id ? !p->run_id || strcmp(p->run_id, run_id) != 0 : p->run_id != NULL))
        return NULL;
    b->held = NULL;
    if (off < p->next_off) {
        p->row--;
        p->next_off = p->last_off;
        p->next_seq = pg_val_int(p->res, p->row, 2);
    }
    p->skip_to = off;
    p->done = 0; /* rows appended since are read on */
    return p;
}

int pg_log_seek(rs_backend *b, const char *thread_id, const char *run_id, int64_t off,
                rs_cursor **out, rs_err *err)
{
    pg_page *p = page_resume(b, thread_id, run_id, off);
    if (p) {
        *out = &p->base;
        return 0;
    }
    pg_log_forget(b);
    int rc = pg_thread_ready(b, thread_id, err);
    if (rc)
        return rc;
    /* The last mark at or before off, then the log's rows from that mark's seq on. */
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    pg_arg_int(&a, off < 0 ? 0 : off);
    if (run_id)
        pg_arg_text(&a, run_id);
    const char *mark_sql =
        run_id ? "SELECT m.off, m.seq FROM runfs_run r JOIN runfs_thread t ON t.thread_key = "
                 "r.thread_key JOIN runfs_mark m ON m.log_key = r.run_key WHERE t.thread_id = $1 "
                 "AND r.run_id = $3 AND m.off <= $2 ORDER BY m.off DESC LIMIT 1"
               : "SELECT m.off, m.seq FROM runfs_thread t JOIN runfs_mark m ON m.log_key = "
                 "-t.thread_key WHERE t.thread_id = $1 AND m.off <= $2 ORDER BY m.off DESC LIMIT 1";
    PGresult *r;
    if ((rc = pg_run(b, mark_sql, &a, &r, err)))
        return rc;
    p = calloc(1, sizeof *p);
    if (!p || !(p->thread_id = strdup(thread_id)) || (run_id && !(p->run_id = strdup(run_id)))) {
        PQclear(r);
        if (p)
            page_drop(p);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    p->base.next = page_next;
    p->base.free = page_free;
    p->base.line = (rs_buf)RS_BUF_INIT;
    p->b = b;
    p->limit = PAGE_FIRST;
    p->skip_to = off;
    if (PQntuples(r) > 0) {
        p->next_off = pg_val_int(r, 0, 0);
        p->next_seq = pg_val_int(r, 0, 1);
    } else {
        p->done = 1; /* no mark: the log is empty */
    }
    PQclear(r);
    if (!p->done && (rc = page_fetch(p, err))) {
        page_drop(p);
        return rc;
    }
    *out = &p->base;
    return 0;
}
