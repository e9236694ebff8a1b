/* pg_write.c — everything that changes the store: appends (one transaction per batch under
 * DeerFlow's advisory lock on the thread: seq = max(high-water, MAX(seq)) + 1, the
 * high-water mark raised, the logs indexed, a NOTIFY for the other mounts), singletons and
 * their reservations, mkdir, deletes (under the same lock). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_int.h"
#include "rs_util.h"

static int next_seq(rs_backend *b, const char *thread_id, int64_t *next, rs_err *err)
{
    int64_t max = 0, floor = 0;
    int rc = pg_int(b, "SELECT MAX(seq) FROM run_events WHERE thread_id = $1", thread_id, NULL,
                    &max, NULL, err);
    if (!rc)
        rc = pg_int(b, "SELECT seq FROM run_event_thread_seq WHERE thread_id = $1", thread_id, NULL,
                    &floor, NULL, err);
    int64_t top = max > floor ? max : floor;
    if (!rc)
        rc = rs_seq_room(&rs_pg_backend, top, 1, err);
    *next = rc ? 0 : top + 1;
    return rc;
}

static int raise_floor(rs_backend *b, const char *thread_id, int64_t seq, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    pg_arg_int(&a, seq);
    return pg_run(b,
                  "INSERT INTO run_event_thread_seq (thread_id, seq) VALUES ($1, $2) "
                  "ON CONFLICT (thread_id) DO UPDATE SET seq = greatest(run_event_thread_seq.seq, "
                  "excluded.seq)",
                  &a, NULL, err);
}

/* Tell every mount (their hubs LISTEN) that the thread changed; sent at commit. */
static int notify(rs_backend *b, const char *thread_id, int64_t hwm, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    pg_arg_int(&a, hwm);
    return pg_run(b, "SELECT pg_notify('runfs_events', $1 || ' ' || $2::text)", &a, NULL, err);
}

/* Where owners are apart, a scoped owner writes only in a thread that is new or already
 * holds its rows or its mkdir. */
static int thread_access(rs_backend *b, const rs_target *t, rs_err *err)
{
    if (!t->user || !b->owners_apart)
        return 0;
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->user);
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT EXISTS (SELECT 1 FROM runfs_owner o WHERE o.thread_key = "
                    "t.thread_key AND o.run_key = 0 AND o.owner = $2) FROM runfs_thread t "
                    "WHERE t.thread_id = $1",
                    &a, &r, err);
    if (rc)
        return rc;
    int taken = PQntuples(r) > 0 && PQgetvalue(r, 0, 0)[0] != 't';
    PQclear(r);
    return taken ? rs_err_set(err, -EACCES, "thread %s is taken: it holds no rows of %s",
                              t->thread_id, t->user)
                 : 0;
}

/* Index what other writers did to the thread first (its owners and runs may have gone with
 * their rows), then the access check. thr loaded; *found 0 when the thread does not exist. */
static int thread_enter(rs_backend *b, const rs_target *t, pg_log *thr, int *found, rs_err *err)
{
    int rc = pg_thread_hold(b, t->thread_id, thr, found, err);
    return rc ? rc : thread_access(b, t, err);
}

int pg_once_existing(rs_backend *b, const rs_target *t, const char *event_type, rs_existing *ex,
                     int *found, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_text(&a, event_type);
    pg_arg_text(&a, b->owners_apart ? t->user : NULL);
    PGresult *r;
    /* Where owners are apart, a singleton is the writer's own. */
    int rc = pg_run(b,
                    "SELECT " PG_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = $1 "
                    "AND e.run_id = $2 AND e.event_type = $3 AND ($4::text IS NULL OR "
                    "e.user_id = $4) ORDER BY e.seq ASC LIMIT 1",
                    &a, &r, err);
    if (rc)
        return rc;
    *found = PQntuples(r) > 0;
    if (*found && ex) {
        rs_row row;
        char at[PG_AT_MAX];
        pg_row(&row, r, 0, 0, at);
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
    PQclear(r);
    return rc;
}

/* Whose singleton an identity is: the writer's where owners are apart, else anyone's. */
static const char *once_owner(const rs_backend *b, const rs_target *t)
{
    return b->owners_apart ? pg_owner_key(t->user) : "";
}

/* The parameters of a statement about one singleton identity: $1 thread, $2 run, $3 event
 * type, $4 its owner, $5 host, $6 this process (a statement need not use them all). */
static void identity_args(pg_args *a, const rs_backend *b, const rs_target *t,
                          const char *event_type)
{
    pg_arg_text(a, t->thread_id);
    pg_arg_text(a, t->run_id);
    pg_arg_text(a, event_type);
    pg_arg_text(a, once_owner(b, t));
    pg_arg_text(a, b->host);
    pg_arg_int(a, b->pid);
}

static int identity_exec(rs_backend *b, const char *sql, const rs_target *t, const char *event_type,
                         rs_err *err)
{
    pg_args a = {.n = 0};
    identity_args(&a, b, t, event_type);
    return pg_run(b, sql, &a, NULL, err);
}

static const char forget_own_hold[] =
    "DELETE FROM runfs_hold WHERE thread_id = $1 AND run_id = $2 AND event_type = $3 "
    "AND owner = $4 AND host = $5 AND pid = $6";

/* Another live writer holds the reservation? The holder is alive while the database session
 * it reserved on is (a daemon that died, on any host, lost its sessions), and on this host
 * while its process is. A dead holder loses the reservation here. */
int pg_once_held(rs_backend *b, const rs_target *t, const char *event_type, int *other, rs_err *err)
{
    pg_args a = {.n = 0};
    identity_args(&a, b, t, event_type);
    a.n = 4;
    PGresult *r;
    /* A role without pg_read_all_stats sees other roles' sessions without their start
     * time: then the pid alone says the session lives. */
    int rc = pg_run(b,
                    "SELECT h.host, h.pid, h.started, EXISTS (SELECT 1 FROM pg_stat_activity s "
                    "WHERE s.pid = h.backend_pid AND (s.backend_start IS NULL OR "
                    "s.backend_start = h.backend_start)) FROM runfs_hold h "
                    "WHERE h.thread_id = $1 AND h.run_id = $2 AND h.event_type = $3 "
                    "AND h.owner = $4",
                    &a, &r, err);
    if (rc)
        return rc;
    *other = 0;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return 0;
    }
    int here = strcmp(PQgetvalue(r, 0, 0), b->host) == 0;
    long pid = (long)pg_val_int(r, 0, 1);
    int64_t started = pg_val_int(r, 0, 2);
    int session = PQgetvalue(r, 0, 3)[0] == 't';
    PQclear(r);
    if (here && pid == b->pid)
        return 0;
    if (session && (!here || rs_process_start(pid) == started)) {
        *other = 1;
        return 0;
    }
    a.n = 4;
    return pg_run(b,
                  "DELETE FROM runfs_hold WHERE thread_id = $1 AND run_id = $2 "
                  "AND event_type = $3 AND owner = $4",
                  &a, NULL, err);
}

static int once_mark(rs_backend *b, const rs_target *t, const char *event_type, rs_err *err)
{
    pg_args a = {.n = 0};
    identity_args(&a, b, t, event_type);
    a.n = 4;
    int rc = pg_run(b,
                    "INSERT INTO runfs_once (thread_id, run_id, event_type, owner) "
                    "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    &a, NULL, err);
    return rc ? rc : identity_exec(b, forget_own_hold, t, event_type, err);
}

/* The rest of a statement WITH ins AS (INSERT INTO run_events ... RETURNING id): the ids
 * the rows got go to runfs_canon (pg_schema_canon_sql), in the same statement, as the
 * islands of consecutive ids they make (another session's insert meanwhile takes ids in
 * between). An island extends the range that ends right below it, else is a range of its
 * own; a range it would meet at the top (one left over from before the sequence was set
 * back) takes it in instead. The ids are runfs's own in the tail too (runfs_tail: indexed and
 * numbered here, no reader takes them for another writer's). */
#define CANON_NOTE \
    ", own AS (INSERT INTO runfs_tail (id) SELECT id FROM ins ON CONFLICT DO NOTHING)" \
    ", isl AS (SELECT min(id) AS lo, max(id) AS hi FROM (SELECT id, id - row_number() OVER " \
    "(ORDER BY id) AS g FROM ins) s GROUP BY g), ext AS (UPDATE runfs_canon c SET hi = isl.hi " \
    "FROM isl WHERE c.hi = isl.lo - 1 AND NOT EXISTS (SELECT 1 FROM runfs_canon d WHERE d.hi = " \
    "isl.hi) RETURNING isl.lo) INSERT INTO runfs_canon (hi, lo) SELECT hi, lo FROM isl WHERE " \
    "lo NOT IN (SELECT lo FROM ext) ON CONFLICT (hi) DO UPDATE SET lo = least(runfs_canon.lo, " \
    "excluded.lo)"

static int insert_event(rs_backend *b, const rs_target *t, const rs_event *ev, int64_t seq,
                        rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_text(&a, t->user);
    pg_arg_text(&a, ev->event_type);
    pg_arg_text(&a, ev->category);
    pg_arg_text(&a, ev->content_db.buf);
    pg_arg_text(&a, ev->metadata_db.buf);
    pg_arg_int(&a, seq);
    pg_arg_text(&a, ev->created_db);
    int rc =
        pg_run(b,
               "WITH ins AS (INSERT INTO run_events (thread_id, run_id, user_id, event_type, "
               "category, content, event_metadata, seq, created_at) "
               "VALUES ($1, $2, $3, $4, $5, $6, $7::json, $8, $9::timestamp AT TIME ZONE 'UTC') "
               "RETURNING id)" PG_CHANGE_NOTE CANON_NOTE,
               &a, NULL, err);
    if (rc == -EEXIST)
        return rs_err_set(err, -EEXIST, "%s already exists for run %s", ev->event_type, t->run_id);
    return rc;
}

int pg_row_at(rs_backend *b, const char *thread_id, int64_t seq, int anonymous, rs_buf *line,
              int *found, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    pg_arg_int(&a, seq);
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT " PG_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = $1 "
                    "AND e.seq = $2",
                    &a, &r, err);
    if (rc)
        return rc;
    *found = PQntuples(r) > 0;
    if (*found) {
        rs_row row;
        char at[PG_AT_MAX];
        pg_row(&row, r, 0, 0, at);
        if (anonymous)
            row.user_id = NULL;
        rc = rs_event_encode(line, &row, err);
    }
    PQclear(r);
    return rc;
}

static int idem_record(rs_backend *b, const rs_target *t, const char *idem_key, int64_t seq,
                       rs_err *err)
{
    char key[RS_IDEM_COLUMN_MAX + 1];
    int rc = rs_idem_column(key, t->user, idem_key);
    if (rc)
        return rs_err_set(err, rc, "idempotency key too long");
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, key);
    pg_arg_int(&a, seq);
    return pg_run(b,
                  "INSERT INTO runfs_idem (thread_id, key, seq) VALUES ($1, $2, $3) "
                  "ON CONFLICT (thread_id, key) DO UPDATE SET seq = excluded.seq",
                  &a, NULL, err);
}

/* ---- plain appends in one round trip ----
 * An append of lines without idempotency keys to a run that exists, whose owner already has
 * rows there and whose thread holds nothing other writers left to index (the usual write)
 * goes in one pipeline: BEGIN, the lock, the state the append depends on (the thread's row
 * locked, as pg_thread_hold's; a row above its indexed seq, another writer's committed after
 * the tail was noted, sends the append the general way, which indexes it), then (under a
 * savepoint) a guard that the state is what this connection's last append of the run left,
 * the rows (one statement), the marks, the logs, the high-water mark, the NOTIFY and COMMIT.
 * When another writer came between, the guard fails, which skips the rest; the state read
 * under the lock says how to redo it: back to the savepoint and the writes again, a second
 * round trip. Without a guess (the connection's first append of the run) the state is read
 * first: two round trips. */

#define APPEND_STATE \
    "SELECT t.thread_key, t.size, t.count, t.messages, t.last_seq, t.mixed, t.mark_off, " \
    "r.run_key, r.size, r.count, r.messages, r.last_seq, r.mixed, r.mark_off, t.dirty = 0 " \
    "AND coalesce(m.top, 0) <= t.last_seq AND EXISTS (SELECT 1 FROM runfs_owner o WHERE " \
    "o.thread_key = t.thread_key AND o.run_key = 0 AND o.owner = $3) AND EXISTS (SELECT 1 FROM " \
    "runfs_owner o WHERE o.thread_key = t.thread_key AND o.run_key = r.run_key AND o.owner = " \
    "$3), coalesce(greatest(m.top, (SELECT seq FROM run_event_thread_seq WHERE thread_id = " \
    "$1)), 0) FROM runfs_thread t JOIN runfs_run r ON r.thread_key = t.thread_key AND " \
    "r.run_id = $2 CROSS JOIN (SELECT MAX(seq) AS top FROM run_events WHERE thread_id = $1) m " \
    "WHERE t.thread_id = $1 FOR UPDATE OF t"

/* Division by zero (not a constant the planner would fold) unless the state is the guess. */
static const char append_guard_sql[] =
    "SELECT 1 / count(*)::int FROM (" APPEND_STATE ") s(tk, ts, tc, tm, tl, tx, tmo, rk, rs, rc, "
    "rm, rl, rx, rmo, ready, last) WHERE ready AND (tk, ts, tc, tm, tl, tx, tmo, rk, rs, rc, rm, "
    "rl, rx, rmo, last) = ($4::bigint, $5::bigint, $6::bigint, $7::bigint, $8::bigint, "
    "$9::bigint, $10::bigint, $11::bigint, $12::bigint, $13::bigint, $14::bigint, $15::bigint, "
    "$16::bigint, $17::bigint, $18::bigint)";

static const char append_rows_sql[] =
    "WITH ins AS (INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, "
    "content, event_metadata, seq, created_at) SELECT $1, $2, $3, x.event_type, x.category, "
    "x.content, x.metadata::json, $4::bigint + x.i - 1, x.created::timestamp AT TIME ZONE 'UTC' "
    "FROM unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::text[]) WITH ORDINALITY "
    "AS x(event_type, category, content, metadata, created, i) RETURNING id)" PG_CHANGE_NOTE
        CANON_NOTE;

/* One element of an array literal, quoted. */
static int array_add(rs_buf *arr, const char *s)
{
    int rc = rs_buf_addstr(arr, arr->len ? ",\"" : "{\"");
    for (const char *p = s; !rc && *p; p++)
        rc = ((*p == '"' || *p == '\\') && rs_buf_addch(arr, '\\')) || rs_buf_addch(arr, *p);
    return rc ? rc : rs_buf_addch(arr, '"');
}

/* Every column of the rows but the ones all share, as array literals. */
typedef struct append_rows {
    rs_buf col[5]; /* event_type, category, content, metadata, created_at */
} append_rows;

static int rows_add(append_rows *rows, const rs_event *ev)
{
    const char *v[5] = {ev->event_type, ev->category, ev->content_db.buf, ev->metadata_db.buf,
                        ev->created_db};
    int rc = 0;
    for (int i = 0; !rc && i < 5; i++)
        rc = array_add(&rows->col[i], v[i]);
    return rc;
}

/* Take back the lines a failed attempt added to stored (may be NULL). */
static void stored_cut(rs_buf *stored, size_t len)
{
    if (stored)
        rs_buf_setlen(stored, len); /* an empty buffer's string is read-only */
}

static void state_args(pg_args *a, const rs_target *t)
{
    a->n = 0;
    pg_arg_text(a, t->thread_id);
    pg_arg_text(a, t->run_id);
    pg_arg_text(a, pg_owner_key(t->user));
}

/* r: APPEND_STATE's answer; 0 when the plain way does not apply. */
static int state_from(pg_tail *st, const PGresult *r)
{
    if (!r || PQntuples(r) == 0 || PQgetvalue(r, 0, 14)[0] != 't')
        return 0;
    pg_log_from(&st->thr, r, 0);
    pg_log_from(&st->run, r, 7);
    st->last = pg_val_int(r, 0, 15);
    return 1;
}

static int tail_guessed(const rs_backend *b, const rs_target *t)
{
    const pg_tail *g = &b->tail;
    return g->valid && strcmp(g->thread_id, t->thread_id) == 0 &&
           strcmp(g->run_id, t->run_id) == 0 && strcmp(g->owner, pg_owner_key(t->user)) == 0;
}

/* Queue the guard that the state is still *g. */
static int queue_guard(rs_backend *b, const rs_target *t, const pg_tail *g, rs_err *err)
{
    pg_args a;
    state_args(&a, t);
    const pg_log *logs[2] = {&g->thr, &g->run};
    for (int i = 0; i < 2; i++) {
        pg_arg_int(&a, logs[i]->key);
        pg_arg_int(&a, logs[i]->size);
        pg_arg_int(&a, logs[i]->count);
        pg_arg_int(&a, logs[i]->messages);
        pg_arg_int(&a, logs[i]->last_seq);
        pg_arg_int(&a, logs[i]->mixed);
        pg_arg_int(&a, logs[i]->mark_off);
    }
    pg_arg_int(&a, g->last);
    return pg_run(b, append_guard_sql, &a, NULL, err);
}

/* Queue the writes of evs after state st (advanced to the state they leave) and COMMIT;
 * their lines go to stored, their offsets to at. */
static int queue_writes(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n,
                        pg_tail *st, rs_buf *stored, rs_placement *at, rs_err *err)
{
    append_rows rows;
    pg_marks marks = PG_MARKS_INIT;
    for (int i = 0; i < 5; i++)
        rows.col[i] = (rs_buf)RS_BUF_INIT;
    if (at) {
        at->run_off = st->run.size;
        at->thread_off = st->thr.size;
    }
    int64_t first = st->last + 1;
    int rc = rs_seq_room(&rs_pg_backend, st->last, n, err);
    for (size_t i = 0; !rc && i < n; i++) {
        const rs_event *ev = evs[i];
        int64_t seq = first + (int64_t)i;
        /* The line is rendered only for a caller that wants it; its length is known. */
        size_t len = stored ? stored->len : rs_event_line_len(ev, seq, t->user);
        if (stored) {
            if ((rc = rs_event_line(stored, ev, seq, t->user)))
                break;
            len = stored->len - len;
        }
        if ((rc = pg_log_line(b, &st->run, &st->thr, seq, len, strcmp(ev->category, "message") == 0,
                              ev->created_at, &marks, err)))
            break;
        if (rows_add(&rows, ev))
            rc = rs_err_set(err, -ENOMEM, "out of memory");
    }
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_text(&a, t->user);
    pg_arg_int(&a, first);
    for (int i = 0; !rc && i < 5; i++) {
        if (rs_buf_addch(&rows.col[i], '}'))
            rc = rs_err_set(err, -ENOMEM, "out of memory");
        pg_arg_text(&a, rows.col[i].buf);
    }
    st->last = first + (int64_t)n - 1;
    if (!rc && !(rc = pg_run(b, append_rows_sql, &a, NULL, err)) &&
        !(rc = pg_marks_send(b, &marks, err)) && !(rc = pg_log_store(b, 1, &st->run, err)) &&
        !(rc = pg_log_store(b, 0, &st->thr, err)) &&
        !(rc = raise_floor(b, t->thread_id, st->last, err)) &&
        !(rc = notify(b, t->thread_id, st->last, err)))
        rc = pg_commit(b, err);
    pg_marks_release(&marks);
    for (int i = 0; i < 5; i++)
        rs_buf_release(&rows.col[i]);
    return rc;
}

/* A plain append: 0 when stored, 1 when it must go the general way (the transaction open,
 * the lock held), or a failure (rolled back). */
static int append_plain(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n,
                        rs_buf *stored, rs_placement *at, rs_err *err)
{
    size_t stored_len = stored ? stored->len : 0;
    int guessed = tail_guessed(b, t), guard = -1;
    pg_tail st = b->tail;
    b->tail.valid = 0;
    PGresult *r = NULL;
    pg_args a;
    state_args(&a, t);
    int rc = pg_pipe_start(b, err);
    if (rc)
        return rc;
    if (!(rc = pg_begin(b, t->thread_id, err)) && !(rc = pg_run(b, APPEND_STATE, &a, &r, err)) &&
        guessed && !(rc = pg_run(b, "SAVEPOINT runfs_append", NULL, NULL, err)) &&
        !(rc = queue_guard(b, t, &st, err))) {
        guard = b->npipe - 1;
        rc = queue_writes(b, t, evs, n, &st, stored, at, err);
    }
    if (!rc)
        rc = pg_pipe_run(b, err);
    int missed = rc && guard >= 0 && b->pipe_failed == guard;
    if (!rc && guessed)
        goto stored;
    stored_cut(stored, stored_len);
    if (rc && !missed)
        goto fail;
    if (missed && err)
        memset(err, 0, sizeof *err); /* the guard's division by zero is no failure */
    /* The state under the lock: the writes again (back to the savepoint after a miss). */
    int ready = state_from(&st, r);
    PQclear(r);
    r = NULL;
    if (missed || ready) {
        if (!(rc = pg_pipe_start(b, err)) &&
            !(missed && (rc = pg_run(b, "ROLLBACK TO SAVEPOINT runfs_append", NULL, NULL, err))) &&
            ready)
            rc = queue_writes(b, t, evs, n, &st, stored, at, err);
        if (!rc)
            rc = pg_pipe_run(b, err);
        if (rc)
            goto fail;
    }
    if (!ready)
        return 1;
stored:
    PQclear(r);
    /* Ids are valid (1-64 characters) here; a tail that cannot be kept is only not kept. */
    st.valid = rs_fmt(st.thread_id, sizeof st.thread_id, "%s", t->thread_id) >= 0 &&
               rs_fmt(st.run_id, sizeof st.run_id, "%s", t->run_id) >= 0 &&
               rs_fmt(st.owner, sizeof st.owner, "%s", pg_owner_key(t->user)) >= 0;
    b->tail = st;
    return 0;
fail:
    PQclear(r);
    pg_rollback(b);
    stored_cut(stored, stored_len);
    return rc == -EEXIST ? rs_err_set(err, -EEXIST, "a line of this write already exists in run %s",
                                      t->run_id)
                         : rc;
}

static int has_keys(rs_event *const *evs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (evs[i]->idem_key[0])
            return 1;
    return 0;
}

static int put_once(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n,
                    int if_absent, int *created, rs_existing *existing, rs_buf *stored,
                    rs_placement *at, rs_err *err)
{
    if (created)
        *created = 0;
    if (n == 0)
        return 0;
    size_t stored_len = stored ? stored->len : 0;
    pg_log thr, run;
    int found, have_thread, rc;
    int64_t seq;
    rs_buf line = RS_BUF_INIT;
    if (!if_absent && !has_keys(evs, n)) {
        /* 1: the general way, in the transaction append_plain began */
        if ((rc = append_plain(b, t, evs, n, stored, at, err)) <= 0)
            return rc;
    } else if ((rc = pg_begin(b, t->thread_id, err))) {
        return rc;
    }
    if ((rc = thread_enter(b, t, &thr, &have_thread, err))) {
        pg_rollback(b);
        return rc;
    }
    if (if_absent) {
        if ((rc =
                 b->policy->once_gate(&pg_policy, b, t, evs[0]->event_type, existing, &found, err)))
            goto fail;
        if (found) {
            pg_rollback(b);
            return 0;
        }
    }
    if ((!have_thread && (rc = pg_log_load(b, t->thread_id, NULL, 0, 1, &thr, &found, err))) ||
        (rc = pg_log_load(b, t->thread_id, t->run_id, thr.key, 1, &run, &found, err)) ||
        (rc = pg_owner_add(b, thr.key, 0, t->user, &thr.mixed, err)) ||
        (rc = pg_owner_add(b, thr.key, run.key, t->user, &run.mixed, err)))
        goto fail;
    if ((rc = next_seq(b, t->thread_id, &seq, err)) ||
        (rc = rs_seq_room(&rs_pg_backend, seq - 1, n, err)))
        goto fail;
    if (at) {
        at->run_off = run.size;
        at->thread_off = thr.size;
    }
    int64_t first = seq;
    for (size_t i = 0; i < n; i++) {
        const rs_event *ev = evs[i];
        rs_buf_reset(&line);
        if (ev->idem_key[0]) {
            int used = 0;
            if ((rc = b->policy->idem_lookup(&pg_policy, b, t, ev, &line, &used, err))) {
                if (err)
                    err->line = (long)i + 1;
                goto fail;
            }
            if (used) {
                if (stored && (rc = rs_buf_add(stored, line.buf, line.len)))
                    goto fail;
                continue;
            }
        }
        if ((rc = rs_event_line(&line, ev, seq, t->user)) ||
            (rc = insert_event(b, t, ev, seq, err)) ||
            (rc = pg_log_line(b, &run, &thr, seq, line.len, strcmp(ev->category, "message") == 0,
                              ev->created_at, NULL, err)) ||
            (ev->idem_key[0] && (rc = idem_record(b, t, ev->idem_key, seq, err))))
            goto fail;
        if (stored && (rc = rs_buf_add(stored, line.buf, line.len)))
            goto fail;
        seq++;
    }
    /* A batch of resends only stores nothing: the high-water mark stays where it was. */
    if ((rc = pg_log_store(b, 1, &run, err)) || (rc = pg_log_store(b, 0, &thr, err)) ||
        (seq > first && ((rc = raise_floor(b, t->thread_id, seq - 1, err)) ||
                         (rc = notify(b, t->thread_id, seq - 1, err)))))
        goto fail;
    if (if_absent && (rc = once_mark(b, t, evs[0]->event_type, err)))
        goto fail;
    if ((rc = pg_commit(b, err)))
        goto fail_committed;
    rs_buf_release(&line);
    if (created)
        *created = 1;
    return 0;
fail:
    pg_rollback(b);
fail_committed:
    rs_buf_release(&line);
    stored_cut(stored, stored_len);
    return rc;
}

/* A writer without DeerFlow's lock may commit a row at the seq this put took, after the put
 * read the thread's top (its INSERT then waits for that writer and fails on the unique seq):
 * nothing was stored, and the put goes again from the new top, a few times. */
#define PUT_TRIES 4

int pg_put(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n, int if_absent,
           int *created, rs_existing *existing, rs_buf *stored, rs_placement *at, rs_err *err)
{
    int rc = 0;
    for (int i = 0; i < PUT_TRIES; i++) {
        b->seq_taken = 0;
        rc = put_once(b, t, evs, n, if_absent, created, existing, stored, at, err);
        if (rc != -EEXIST || !b->seq_taken)
            break;
    }
    return rc;
}

int pg_write_begin(rs_backend *b, const rs_target *t, rs_err *err)
{
    int rc = pg_begin(b, t->thread_id, err);
    if (rc)
        return rc;
    pg_log thr;
    int found;
    if ((rc = thread_enter(b, t, &thr, &found, err)))
        pg_rollback(b);
    return rc;
}

int pg_write_end(rs_backend *b, int rc, rs_err *err)
{
    if (!rc)
        return pg_commit(b, err);
    pg_rollback(b);
    return rc;
}

int pg_hold_insert(rs_backend *b, const rs_target *t, const char *event_type, rs_err *err)
{
    pg_args a = {.n = 0};
    identity_args(&a, b, t, event_type);
    pg_arg_int(&a, b->started);
    return pg_run(b,
                  "INSERT INTO runfs_hold (thread_id, run_id, event_type, owner, host, pid, "
                  "started, backend_pid, backend_start) SELECT $1, $2, $3, $4, $5, $6, $7, "
                  "pg_backend_pid(), (SELECT backend_start FROM pg_stat_activity WHERE pid = "
                  "pg_backend_pid())",
                  &a, NULL, err);
}

int pg_release(rs_backend *b, const rs_target *t, const char *event_type)
{
    if (!b->read_only)
        identity_exec(b, forget_own_hold, t, event_type, NULL);
    return 0;
}

int pg_create(rs_backend *b, const rs_target *t, rs_err *err)
{
    int rc = pg_begin(b, t->thread_id, err);
    if (rc)
        return rc;
    pg_log thr, run;
    int found;
    if ((rc = thread_enter(b, t, &thr, &found, err)) ||
        (!found && (rc = pg_log_load(b, t->thread_id, NULL, 0, 1, &thr, &found, err))) ||
        (rc = pg_owner_add(b, thr.key, 0, t->user, &thr.mixed, err)) ||
        (rc = pg_log_store(b, 0, &thr, err)))
        goto fail;
    if (t->run_id &&
        ((rc = pg_log_load(b, t->thread_id, t->run_id, thr.key, 1, &run, &found, err)) ||
         (rc = pg_owner_add(b, thr.key, run.key, t->user, &run.mixed, err)) ||
         (rc = pg_log_store(b, 1, &run, err))))
        goto fail;
    if ((rc = notify(b, t->thread_id, 0, err)))
        goto fail;
    return pg_commit(b, err);
fail:
    pg_rollback(b);
    return rc;
}

/* $1 thread, $2 run (NULL: every run), $3 user (NULL: every owner), $4 thread key; a
 * statement may leave some unused (the parameters are typed). */
static int run_exec(rs_backend *b, const char *sql, const rs_target *t, int64_t key,
                    int64_t *changed, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_text(&a, t->user);
    pg_arg_int(&a, key);
    PGresult *r;
    int rc = pg_run(b, sql, &a, &r, err);
    if (rc)
        return rc;
    if (changed)
        *changed = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return 0;
}

int pg_delete_rows(rs_backend *b, const rs_target *t, int64_t *count, rs_err *err)
{
    pg_log thr;
    int found, rc;
    *count = 0;
    if ((rc = pg_log_load(b, t->thread_id, NULL, 0, 0, &thr, &found, err)) || !found)
        return rc;
    int64_t max = 0;
    if ((rc = pg_int(b, "SELECT MAX(seq) FROM run_events WHERE thread_id = $1", t->thread_id, NULL,
                     &max, NULL, err)))
        goto fail;
    static const char del_rows[] =
        "DELETE FROM run_events WHERE thread_id = $1 AND ($2::text IS NULL OR run_id = $2) "
        "AND ($3::text IS NULL OR user_id = $3)";
    if ((rc = run_exec(b, del_rows, t, 0, count, err)))
        goto fail;
    if (*count > 0 && (rc = raise_floor(b, t->thread_id, max, err)))
        goto fail;
    /* The owner leaves the run/thread it deleted; the directory goes when no owner is left. */
    static const char del_owner[] =
        "DELETE FROM runfs_owner WHERE thread_key = $4 AND ($3::text IS NULL OR owner = $3) "
        "AND ($2::text IS NULL OR run_key IN (SELECT run_key FROM runfs_run WHERE thread_key = $4 "
        "AND run_id = $2))";
    static const char del_runs[] =
        "DELETE FROM runfs_run WHERE thread_key = $4 AND ($2::text IS NULL OR run_id = $2) "
        "AND NOT EXISTS (SELECT 1 FROM runfs_owner o WHERE o.thread_key = $4 "
        "AND o.run_key = runfs_run.run_key)";
    if ((rc = run_exec(b, del_owner, t, thr.key, NULL, err)) ||
        (rc = run_exec(b, del_runs, t, thr.key, NULL, err)) ||
        (rc = pg_thread_reindex(b, t->thread_id, thr.key, err)))
        goto fail;
    int64_t left = 0;
    if ((rc = pg_int(b, "SELECT count(*) FROM run_events WHERE thread_id = $1", t->thread_id, NULL,
                     &left, NULL, err)))
        goto fail;
    if (!t->run_id && left == 0) {
        static const char drop_floor[] = "DELETE FROM run_event_thread_seq WHERE thread_id = $1";
        static const char drop_keys[] = "DELETE FROM runfs_idem WHERE thread_id = $1";
        if ((rc = run_exec(b, drop_floor, t, 0, NULL, err)) ||
            (rc = run_exec(b, drop_keys, t, 0, NULL, err)))
            goto fail;
    }
    /* The deleter's singletons and seals go with its rows (every owner's when unscoped). */
    static const char drop_once[] =
        "DELETE FROM runfs_once WHERE thread_id = $1 AND ($2::text IS NULL OR run_id = $2) "
        "AND ($3::text IS NULL OR owner = $3)";
    static const char drop_seals[] =
        "DELETE FROM runfs_seal WHERE thread_id = $1 AND ($2::text IS NULL OR run_id = $2) "
        "AND ($3::text IS NULL OR owner = $3)";
    /* The runs' kept step data goes too (every owner's: it is made again from the rows),
     * so no text of deleted rows stays behind in it. */
    if ((rc = run_exec(b, drop_once, t, 0, NULL, err)) ||
        (rc = run_exec(b, drop_seals, t, 0, NULL, err)) || (rc = pg_steps_forget(b, t, err)))
        goto fail;
    if (!t->run_id) {
        static const char drop_dir[] =
            "DELETE FROM runfs_thread WHERE thread_id = $1 AND NOT EXISTS (SELECT 1 FROM "
            "runfs_owner o WHERE o.thread_key = runfs_thread.thread_key)";
        if ((rc = run_exec(b, drop_dir, t, 0, NULL, err)))
            goto fail;
    }
    if ((rc = notify(b, t->thread_id, max, err)))
        goto fail;
    return 0;
fail:
    return rc;
}

int pg_delete(rs_backend *b, const rs_target *t, int64_t *count, rs_err *err)
{
    int rc = pg_begin(b, t->thread_id, err);
    if (rc)
        return rc;
    if ((rc = pg_delete_rows(b, t, count, err))) {
        pg_rollback(b);
        return rc;
    }
    return pg_commit(b, err);
}

/* ---- import in batches ----
 * An import was two round trips a row (the stored row at its seq, then its INSERT), and the
 * lookup's plan, made while the thread's rows were few, read every index entry of the thread
 * once it had many: a 40k-row thread took minutes. Now the rows go many to an INSERT (the
 * arrays of append_rows_sql, with each row's run and seq), and what is stored is read a
 * stretch of seqs at a time (a look: the rows of seqs lo..hi, in seq order), so each line is
 * still judged as it is read: a different row at its seq refuses that line, where the reader
 * is. A seq this import stored since the look (another run's file giving it again) is looked
 * at again after the rows waiting are sent, as the row-at-a-time import met the row it had
 * stored. The server can refuse no row the parse let through (ids, lengths, JSON, UTF-8, NUL,
 * timestamps and seq are checked before); what it can refuse (a writer that took no lock
 * storing a seq meanwhile, the connection) fails the thread's import as before. */

#define IMPORT_ROWS 1000            /* rows one INSERT stores at most */
#define IMPORT_BYTES (4 << 20)      /* ... and bytes of their text */
#define IMPORT_SPAN 65536           /* seqs one look answers for at most */
#define IMPORT_LOOK_ROWS 1000       /* stored rows a look reads at most */
#define IMPORT_LOOK_BYTES (4 << 20) /* ... and bytes of their text, past its first row */

/* Rows of one INSERT: $1 thread, $2 owner, then one array a column. The runs the rows are
 * in get the transaction's change number (PG_CHANGE_NOTE's, for each run at once). */
static const char import_rows_sql[] =
    "WITH ins AS (INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, "
    "content, event_metadata, seq, created_at) SELECT $1, x.run_id, $2, x.event_type, "
    "x.category, x.content, x.metadata::json, x.seq, x.created::timestamp AT TIME ZONE 'UTC' "
    "FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], "
    "$9::text[]) AS x(run_id, event_type, category, content, metadata, seq, created) "
    "RETURNING id, run_id), chg AS (INSERT INTO runfs_change (thread_id, run_id, change, owner) "
    "SELECT $1::text, r.run_id, pg_current_xact_id()::text::bigint, coalesce($2::text, '') "
    "FROM (SELECT DISTINCT run_id FROM ins) r ON CONFLICT (thread_id, run_id) DO UPDATE SET "
    "change = greatest(runfs_change.change, excluded.change), deleted = false, owner = CASE "
    "WHEN runfs_change.deleted OR runfs_change.owner = excluded.owner THEN excluded.owner "
    "END)" CANON_NOTE;

/* The stored rows of seqs $2.. below $3, in seq order: at most $4, and none past the first
 * whose content and metadata bring theirs to $5 bytes (upto: their bytes so far). */
static const char import_look_sql[] =
    "SELECT " PG_ROW_COLUMNS ", e.upto FROM (SELECT x.*, sum(octet_length(x.content) + "
    "octet_length(x.event_metadata::text)) OVER (ORDER BY x.seq) AS upto FROM (SELECT * FROM "
    "run_events r WHERE r.thread_id = $1 AND r.seq >= $2 AND r.seq < $3 ORDER BY r.seq "
    "LIMIT $4) x) e WHERE e.upto - octet_length(e.content) - octet_length(e.event_metadata::text) "
    "< $5 ORDER BY e.seq";

enum { IMP_RUN, IMP_TYPE, IMP_CATEGORY, IMP_CONTENT, IMP_METADATA, IMP_SEQ, IMP_CREATED, IMP_COLS };

typedef struct import_batch {
    rs_backend *b;
    const rs_target *t;
    rs_buf col[IMP_COLS]; /* the rows waiting, as array literals without their '}' */
    size_t n, bytes;
    /* The last look: the stored rows of seqs lo..hi (have, by seq); added: the seqs of
     * lo..hi this import stored or queued since (a bit each from lo). */
    int looked;
    int64_t lo, hi;
    PGresult *have;
    uint64_t added[IMPORT_SPAN / 64];
} import_batch;

/* Queue (in a pipeline) or run the INSERT of the rows waiting. */
static int import_send(import_batch *ib, rs_err *err)
{
    if (ib->n == 0)
        return 0;
    pg_args a = {.n = 0};
    pg_arg_text(&a, ib->t->thread_id);
    pg_arg_text(&a, ib->t->user);
    int rc = 0;
    for (int i = 0; i < IMP_COLS; i++) {
        if (!rc && rs_buf_addch(&ib->col[i], '}'))
            rc = rs_err_set(err, -ENOMEM, "out of memory");
        pg_arg_text(&a, ib->col[i].buf);
    }
    if (!rc)
        rc = pg_run(ib->b, import_rows_sql, &a, NULL, err);
    for (int i = 0; i < IMP_COLS; i++)
        rs_buf_reset(&ib->col[i]);
    ib->n = ib->bytes = 0;
    return rc;
}

/* A new look from seq, after the rows waiting are stored (one round trip for both). */
static int import_look(import_batch *ib, int64_t seq, rs_err *err)
{
    PQclear(ib->have);
    ib->have = NULL;
    ib->looked = 0;
    int64_t end = seq + IMPORT_SPAN; /* seqs are at most 2^31 - 1 here: no overflow */
    pg_args a = {.n = 0};
    pg_arg_text(&a, ib->t->thread_id);
    pg_arg_int(&a, seq);
    pg_arg_int(&a, end);
    pg_arg_int(&a, IMPORT_LOOK_ROWS);
    pg_arg_int(&a, IMPORT_LOOK_BYTES);
    int rc = pg_pipe_start(ib->b, err);
    if (rc)
        return rc;
    if ((rc = import_send(ib, err)) || (rc = pg_run(ib->b, import_look_sql, &a, &ib->have, err))) {
        pg_pipe_run(ib->b, NULL);
        return rc;
    }
    if ((rc = pg_pipe_run(ib->b, err))) {
        PQclear(ib->have);
        ib->have = NULL;
        return rc;
    }
    /* Cut short by either limit, it answers only up to its last row. */
    int n = PQntuples(ib->have);
    int cut = n == IMPORT_LOOK_ROWS ||
              (n > 0 && pg_val_int(ib->have, n - 1, PG_ROW_ID + 1) >= IMPORT_LOOK_BYTES);
    ib->lo = seq;
    ib->hi = cut ? pg_val_int(ib->have, n - 1, 2) : end - 1;
    memset(ib->added, 0, sizeof ib->added);
    ib->looked = 1;
    return 0;
}

/* The row of the last look at seq (-1: none). */
static int import_stored(const import_batch *ib, int64_t seq)
{
    int lo = 0, hi = PQntuples(ib->have) - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int64_t at = pg_val_int(ib->have, mid, 2);
        if (at == seq)
            return mid;
        if (at < seq)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static int import_added(const import_batch *ib, int64_t seq)
{
    uint64_t k = (uint64_t)(seq - ib->lo);
    return (int)((ib->added[k / 64] >> (k % 64)) & 1);
}

/* Queue ev's row (stored at the next send). */
static int import_queue(import_batch *ib, const rs_event *ev, rs_err *err)
{
    char seq[24];
    (void)rs_fmt(seq, sizeof seq, "%lld", (long long)ev->seq); /* fits */
    const char *v[IMP_COLS] = {ev->run_id,         ev->event_type,      ev->category,
                               ev->content_db.buf, ev->metadata_db.buf, seq,
                               ev->created_db};
    for (int i = 0; i < IMP_COLS; i++)
        if (array_add(&ib->col[i], v[i]))
            return rs_err_set(err, -ENOMEM, "out of memory");
    uint64_t k = (uint64_t)(ev->seq - ib->lo);
    ib->added[k / 64] |= (uint64_t)1 << (k % 64);
    ib->n++;
    ib->bytes += ev->content_db.len + ev->metadata_db.len;
    return ib->n >= IMPORT_ROWS || ib->bytes >= IMPORT_BYTES ? import_send(ib, err) : 0;
}

int pg_import(rs_backend *b, const rs_target *t, int64_t floor,
              int (*next)(void *ctx, rs_event **ev, rs_err *err),
              int (*stored)(void *ctx, const rs_event *ev, rs_err *err), void *ctx, int64_t *added,
              int64_t *skipped, rs_err *err)
{
    *added = *skipped = 0;
    int rc = pg_begin(b, t->thread_id, err);
    if (rc)
        return rc;
    rs_buf line = RS_BUF_INIT, have = RS_BUF_INIT;
    int64_t top = floor;
    pg_log thr;
    int found;
    import_batch *ib = calloc(1, sizeof *ib);
    if (!ib) {
        rc = rs_err_set(err, -ENOMEM, "out of memory");
        goto fail;
    }
    ib->b = b;
    ib->t = t;
    for (int i = 0; i < IMP_COLS; i++)
        ib->col[i] = (rs_buf)RS_BUF_INIT;
    if ((rc = pg_thread_hold(b, t->thread_id, &thr, &found, err)))
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
        if ((!ib->looked || ev->seq < ib->lo || ev->seq > ib->hi || import_added(ib, ev->seq)) &&
            (rc = import_look(ib, ev->seq, err)))
            goto fail;
        int i = import_stored(ib, ev->seq);
        if (i >= 0) {
            rs_row row;
            char at[PG_AT_MAX];
            pg_row(&row, ib->have, i, 0, at);
            row.user_id = NULL;
            rs_buf_reset(&have);
            rs_buf_reset(&line);
            if ((rc = rs_event_encode(&have, &row, err)) ||
                (rc = rs_event_reimport(ev, t->thread_id, &have, &line, err)))
                goto fail;
            (*skipped)++;
            continue;
        }
        if ((rc = import_queue(ib, ev, err)) || (rc = stored(ctx, ev, err)))
            goto fail;
        (*added)++;
        if (ev->seq > top)
            top = ev->seq;
    }
    if ((rc = import_send(ib, err)))
        goto fail;
    /* Rows may land below others: the thread's logs are rebuilt from its rows. */
    if (*added && ((rc = pg_log_load(b, t->thread_id, NULL, 0, 1, &thr, &found, err)) ||
                   (rc = pg_thread_reindex(b, t->thread_id, thr.key, err))))
        goto fail;
    if (top > 0 &&
        ((rc = raise_floor(b, t->thread_id, top, err)) || (rc = notify(b, t->thread_id, top, err))))
        goto fail;
    rc = pg_commit(b, err);
    goto out;
fail:
    pg_rollback(b);
    *added = *skipped = 0;
out:
    if (ib) {
        PQclear(ib->have);
        for (int i = 0; i < IMP_COLS; i++)
            rs_buf_release(&ib->col[i]);
        free(ib);
    }
    rs_buf_release(&line);
    rs_buf_release(&have);
    return rc;
}
