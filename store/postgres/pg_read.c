/* pg_read.c — queries (list_events, list_messages and their windows), listings, counts,
 * identity scans and seals. Text orders use the "C" collation: the bytes order, as SQLite's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_int.h"
#include "rs_util.h"

typedef struct pg_names_cursor {
    rs_names base;
    PGresult *res;
    int row;
    int time_col; /* the column of each name's ctime (mtime after it); 0: none */
    int gate_col; /* a column NULL where the times are not exact (0: none) */
    int ids;      /* names of threads or runs: those no path can name are passed over */
} pg_names_cursor;

#define SEAL_COLUMNS "state, upper_seq, event_count, terminal_seq, digest, error, sealed_at"

int pg_query(rs_backend *b, const rs_query *q, rs_cursor **out, rs_err *err)
{
    rs_buf *sql = &b->sql;
    rs_buf_reset(sql);
    int newest = q->newest && q->limit > 0 && q->after_seq <= 0;
    int rc = 0;
    if (newest)
        rc |= rs_buf_addstr(sql, "SELECT * FROM (");
    rc |= rs_buf_addstr(sql, "SELECT " PG_ROW_COLUMNS ", e.seq AS s FROM run_events e "
                             "WHERE e.thread_id = $1");
    if (q->run_id)
        rc |= rs_buf_addstr(sql, " AND e.run_id = $2");
    if (q->user)
        rc |= rs_buf_addstr(sql, " AND e.user_id = $3");
    if (q->messages_only)
        rc |= rs_buf_addstr(sql, " AND e.category = 'message'");
    if (q->category)
        rc |= rs_buf_addstr(sql, " AND e.category = $8");
    if (q->task_id)
        rc |= rs_buf_addstr(sql, " AND json_typeof(e.event_metadata -> 'task_id') = 'string' "
                                 "AND e.event_metadata ->> 'task_id' = $4");
    if (q->after_seq > 0)
        rc |= rs_buf_addstr(sql, " AND e.seq > $5");
    if (q->before_seq > 0)
        rc |= rs_buf_addstr(sql, " AND e.seq < $6");
    if (q->event_types) {
        rc |= rs_buf_addstr(sql, " AND e.event_type IN (");
        for (size_t i = 0; i < q->n_event_types; i++)
            rc |= rs_buf_addf(sql, "%s$%zu", i ? ", " : "", 10 + i);
        rc |= rs_buf_addstr(sql, q->n_event_types ? ")" : "NULL)");
    }
    rc |= rs_buf_addstr(sql, newest ? " ORDER BY e.seq DESC" : " ORDER BY e.seq ASC");
    if (q->limit > 0)
        rc |= rs_buf_addstr(sql, " LIMIT $7");
    if (newest)
        rc |= rs_buf_addstr(sql, ") w ORDER BY w.s ASC");
    if (rc || q->n_event_types > PG_MAX_ARGS - 10)
        return rs_err_set(err, -ENOMEM, "out of memory");
    pg_args a = {.n = 0};
    pg_arg_text(&a, q->thread_id);
    pg_arg_text(&a, q->run_id);
    pg_arg_text(&a, q->user);
    pg_arg_text(&a, q->task_id);
    pg_arg_int(&a, q->after_seq);
    pg_arg_int(&a, q->before_seq);
    pg_arg_int(&a, q->limit);
    pg_arg_text(&a, q->category);
    pg_arg_text(&a, NULL);
    for (size_t i = 0; q->event_types && i < q->n_event_types; i++)
        pg_arg_text(&a, q->event_types[i]);
    return pg_cursor_new(b, sql->buf, &a, 0, 0, 0, out, err);
}

static int names_next(rs_names *base, const char **name)
{
    pg_names_cursor *n = (pg_names_cursor *)base;
    while (n->row < PQntuples(n->res)) {
        int i = n->row++;
        if (!PQgetisnull(n->res, i, 0) &&
            (!n->ids ||
             rs_id_valid_n(PQgetvalue(n->res, i, 0), (size_t)PQgetlength(n->res, i, 0)))) {
            int c = n->time_col;
            n->base.timed = c && !PQgetisnull(n->res, i, c) &&
                            !(n->gate_col && PQgetisnull(n->res, i, n->gate_col));
            n->base.ctime_ns = n->base.timed ? pg_val_int(n->res, i, c) : 0;
            n->base.mtime_ns = n->base.timed ? pg_val_int(n->res, i, c + 1) : 0;
            *name = PQgetvalue(n->res, i, 0);
            return 1;
        }
    }
    return 0;
}

static void names_free(rs_names *base)
{
    pg_names_cursor *n = (pg_names_cursor *)base;
    PQclear(n->res);
    free(n);
}

/* A superset of the odd pairs (the C collation: ranges of bytes); rs_id_valid_n decides. */
int pg_odd_ids(rs_backend *b, rs_odd_id_fn fn, void *ctx, rs_err *err)
{
    PGresult *r = NULL;
    int rc =
        pg_run(b,
               "SELECT DISTINCT thread_id, run_id FROM run_events WHERE thread_id COLLATE \"C\" "
               "!~ '^[A-Za-z0-9_-]{1,64}$' OR run_id COLLATE \"C\" !~ '^[A-Za-z0-9_-]{1,64}$'",
               NULL, &r, err);
    for (int i = 0; !rc && i < PQntuples(r); i++) {
        const char *t = PQgetvalue(r, i, 0), *u = PQgetvalue(r, i, 1);
        size_t tl = (size_t)PQgetlength(r, i, 0), ul = (size_t)PQgetlength(r, i, 1);
        if (!rs_id_valid_n(t, tl) || !rs_id_valid_n(u, ul))
            rc = fn(ctx, t, tl, u, ul);
    }
    PQclear(r);
    return rc;
}

int pg_names(rs_backend *b, rs_names_kind kind, const char *thread_id, const char *run_id,
             const char *user, const char *const *singletons, size_t n_singletons, rs_names **out,
             rs_err *err)
{
    rs_buf *sql = &b->sql;
    rs_buf_reset(sql);
    int rc = 0;
    /* $1 thread, $2 run, $3 owner (NULL: every owner), $4... the contract's singletons. */
    switch (kind) {
    case RS_NAMES_THREADS:
        /* A thread not caught up yet (dirty: a DeerFlow thread nobody used, say) is listed
         * when it has rows (of the owner) left; every thread, so the real tables. */
        if ((rc = pg_scratch_threads(b, err)) ||
            (rc = pg_side_sql(
                 b,
                 user
                     ? "SELECT t.thread_id FROM @runfs_thread t WHERE EXISTS (SELECT 1 FROM "
                       "@runfs_owner o WHERE o.thread_key = t.thread_key AND o.run_key = 0 AND "
                       "o.owner = $3) OR (t.dirty <> 0 AND EXISTS (SELECT 1 FROM run_events e "
                       "WHERE e.thread_id = t.thread_id AND e.user_id = $3)) ORDER BY t.thread_key"
                     : "SELECT t.thread_id, CASE WHEN t.dirty = 0 THEN 1 END, " RS_LOG_TIME_SQL(
                           t) " FROM @runfs_thread t WHERE $3::text IS NULL AND "
                              "(t.dirty = 0 OR EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = "
                              "t.thread_id) OR EXISTS (SELECT 1 FROM @runfs_owner o WHERE o.thread_key = "
                              "t.thread_key AND o.run_key = 0)) ORDER BY t.thread_key",
                 err)))
            return rc;
        break;
    case RS_NAMES_RUNS:
        if ((rc = pg_thread_ready(b, thread_id, err)))
            return rc;
        rs_buf_reset(sql);
        rc = rs_buf_addstr(
            sql,
            "SELECT r.run_id, " RS_LOG_TIME_SQL(
                r) " FROM runfs_run r JOIN runfs_thread t ON t.thread_key = r.thread_key "
                   "WHERE t.thread_id = $1 AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM runfs_owner o "
                   "WHERE o.thread_key = r.thread_key AND o.run_key = r.run_key AND o.owner = $3)) "
                   "ORDER BY r.run_key");
        break;
    case RS_NAMES_TYPES:
        rc = rs_buf_addstr(
            sql,
            "SELECT DISTINCT event_type COLLATE \"C\" AS name FROM run_events WHERE thread_id = $1 "
            "AND run_id = $2 AND ($3::text IS NULL OR user_id = $3) ORDER BY name");
        break;
    case RS_NAMES_TASKS:
        rc = rs_buf_addstr(
            sql,
            "SELECT DISTINCT (event_metadata ->> 'task_id') COLLATE \"C\" AS name FROM run_events "
            "WHERE thread_id = $1 AND run_id = $2 AND ($3::text IS NULL OR user_id = $3) "
            "AND json_typeof(event_metadata -> 'task_id') = 'string' ORDER BY name");
        break;
    case RS_NAMES_SINGLETONS:
        rc = rs_buf_addstr(
            sql,
            "SELECT DISTINCT event_type COLLATE \"C\" AS name FROM run_events WHERE thread_id = $1 "
            "AND run_id = $2 AND ($3::text IS NULL OR user_id = $3) AND (event_type IN (SELECT "
            "event_type FROM runfs_once WHERE thread_id = $1 AND run_id = $2 AND ($3::text IS NULL OR "
            "owner IN ($3, '')))");
        for (size_t i = 0; !rc && i < n_singletons; i++)
            rc = rs_buf_addf(sql, " OR event_type = $%zu", 4 + i);
        if (!rc)
            rc = rs_buf_addstr(sql, ") ORDER BY name");
        break;
    }
    if (rc || n_singletons > PG_MAX_ARGS - 4)
        return rs_err_set(err, -ENOMEM, "out of memory");
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    pg_arg_text(&a, run_id);
    pg_arg_text(&a, kind == RS_NAMES_THREADS || kind == RS_NAMES_RUNS
                        ? (user ? pg_owner_key(user) : NULL)
                        : user);
    for (size_t i = 0; kind == RS_NAMES_SINGLETONS && i < n_singletons; i++)
        pg_arg_text(&a, singletons[i]);
    pg_names_cursor *n = calloc(1, sizeof *n);
    if (!n)
        return rs_err_set(err, -ENOMEM, "out of memory");
    if ((rc = pg_run(b, sql->buf, &a, &n->res, err))) {
        free(n);
        return rc;
    }
    n->base.next = names_next;
    n->base.free = names_free;
    n->ids = kind == RS_NAMES_THREADS || kind == RS_NAMES_RUNS;
    /* Times of every owner's rows, as indexed: a thread not caught up (dirty) goes untimed
     * (its times and dirty flag: columns 2, 3 and 1), the runs' thread was caught up above;
     * a read-only mount's index may be a copy of its own: its listings stay untimed. */
    if (!user && !b->read_only) {
        n->time_col = kind == RS_NAMES_THREADS ? 2 : kind == RS_NAMES_RUNS ? 1 : 0;
        n->gate_col = kind == RS_NAMES_THREADS ? 1 : 0;
    }
    *out = &n->base;
    return 0;
}

int pg_last_visible_ai_seq(rs_backend *b, const rs_target *t, int64_t *seq, rs_err *err)
{
    /* Newest first along the run's message rows: the first visible AI row answers. ILIKE
     * as SQLite's LIKE, which ignores ASCII case. */
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_text(&a, t->user);
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT seq FROM run_events WHERE thread_id = $1 AND run_id = $2 "
                    "AND category = 'message' AND event_type IN ('llm.ai.response', "
                    "'ai_message') AND NOT (coalesce(event_metadata ->> 'caller', '') ILIKE "
                    "'middleware:%') AND ($3::text IS NULL OR user_id = $3) "
                    "ORDER BY seq DESC LIMIT 1",
                    &a, &r, err);
    if (rc)
        return rc;
    int found = PQntuples(r) > 0;
    if (found)
        *seq = pg_val_int(r, 0, 0);
    PQclear(r);
    return found ? 0 : -ENOENT;
}

int pg_message_objects(rs_backend *b, const char *thread_id, const char *user, int newest,
                       const char *like, rs_cursor **out, rs_err *err)
{
    const char *sql =
        newest ? "SELECT " PG_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = $1 "
                 "AND e.category = 'message' AND ($2::text IS NULL OR e.user_id = $2) "
                 "AND substr(e.content, 1, 1) = '{' AND ($3::text IS NULL OR e.content ILIKE $3 "
                 "ESCAPE '\\') ORDER BY e.seq DESC"
               : "SELECT " PG_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = $1 "
                 "AND e.category = 'message' AND ($2::text IS NULL OR e.user_id = $2) "
                 "AND substr(e.content, 1, 1) = '{' AND ($3::text IS NULL OR e.content ILIKE $3 "
                 "ESCAPE '\\') ORDER BY e.seq ASC";
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    pg_arg_text(&a, user);
    pg_arg_text(&a, like);
    return pg_cursor_new(b, sql, &a, 0, 0, 0, out, err);
}

int pg_stats(rs_backend *b, const char *user, const char *thread_id, rs_stats *out, rs_err *err)
{
    memset(out, 0, sizeof *out);
    pg_args a = {.n = 0};
    pg_arg_text(&a, user);
    pg_arg_text(&a, thread_id);
    /* $1 owner (NULL: every owner), $2 thread: caught up first, then its logs. */
    static const char thread_sql[] =
        "SELECT (SELECT count(*) FROM runfs_thread t WHERE t.thread_id = $2 AND ($1::text IS "
        "NULL OR EXISTS (SELECT 1 FROM runfs_owner o WHERE o.thread_key = t.thread_key AND "
        "o.run_key = 0 AND o.owner = $1))), "
        "(SELECT count(*) FROM runfs_run r JOIN runfs_thread t ON t.thread_key = r.thread_key "
        "WHERE t.thread_id = $2 AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM runfs_owner o "
        "WHERE o.thread_key = r.thread_key AND o.run_key = r.run_key AND o.owner = $1))), "
        "CASE WHEN $1::text IS NULL THEN (SELECT coalesce(sum(count), 0) FROM runfs_thread WHERE "
        "thread_id = $2) ELSE (SELECT count(*) FROM run_events WHERE user_id = $1 AND "
        "thread_id = $2) END";
    /* Every thread (the real tables): those not caught up yet (dirty) count from their rows,
     * as their logs will. */
    static const char all_sql[] =
        "SELECT (SELECT count(*) FROM @runfs_thread t WHERE $2::text IS NULL AND CASE WHEN "
        "$1::text IS NULL THEN t.dirty = 0 OR EXISTS (SELECT 1 FROM run_events e WHERE "
        "e.thread_id = t.thread_id) OR EXISTS (SELECT 1 FROM @runfs_owner o WHERE o.thread_key = "
        "t.thread_key AND o.run_key = 0) ELSE EXISTS (SELECT 1 FROM @runfs_owner o WHERE "
        "o.thread_key = t.thread_key AND o.run_key = 0 AND o.owner = $1) OR (t.dirty <> 0 AND "
        "EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = t.thread_id AND e.user_id = $1)) "
        "END), "
        "(SELECT count(*) FROM @runfs_run r JOIN @runfs_thread t ON t.thread_key = r.thread_key "
        "WHERE t.dirty = 0 AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM @runfs_owner o WHERE "
        "o.thread_key = r.thread_key AND o.run_key = r.run_key AND o.owner = $1))) + (SELECT "
        "count(*) FROM (SELECT DISTINCT e.thread_id, e.run_id FROM run_events e JOIN "
        "@runfs_thread t ON t.thread_id = e.thread_id WHERE t.dirty <> 0 AND ($1::text IS NULL "
        "OR e.user_id = $1)) x), "
        "CASE WHEN $1::text IS NULL THEN (SELECT coalesce(sum(count), 0) FROM @runfs_thread "
        "WHERE dirty = 0) + (SELECT count(*) FROM run_events e WHERE e.thread_id IN (SELECT "
        "thread_id FROM @runfs_thread WHERE dirty <> 0)) ELSE (SELECT count(*) FROM run_events "
        "WHERE user_id = $1) END";
    int rc = thread_id ? pg_thread_ready(b, thread_id, err) : pg_side_sql(b, all_sql, err);
    PGresult *r;
    if (rc || (rc = pg_run(b, thread_id ? thread_sql : b->sql.buf, &a, &r, err)))
        return rc;
    out->threads = pg_val_int(r, 0, 0);
    out->runs = pg_val_int(r, 0, 1);
    out->events = pg_val_int(r, 0, 2);
    PQclear(r);
    return 0;
}

/* -EOVERFLOW for a field longer than runfs writes (a row changed by hand): never cut. */
static int seal_from(rs_seal_row *row, const PGresult *r, int i, int col, rs_err *err)
{
    memset(row, 0, sizeof *row);
    row->upper_seq = pg_val_int(r, i, col + 1);
    row->event_count = pg_val_int(r, i, col + 2);
    row->terminal_seq = pg_val_int(r, i, col + 3);
    row->has_error = !PQgetisnull(r, i, col + 5);
    if (rs_fmt(row->state, sizeof row->state, "%s", PQgetvalue(r, i, col)) < 0 ||
        rs_fmt(row->digest, sizeof row->digest, "%s", PQgetvalue(r, i, col + 4)) < 0 ||
        rs_fmt(row->error, sizeof row->error, "%s", PQgetvalue(r, i, col + 5)) < 0 ||
        rs_fmt(row->sealed_at, sizeof row->sealed_at, "%s", PQgetvalue(r, i, col + 6)) < 0)
        return rs_err_set(err, -EOVERFLOW, "a runfs_seal row has a field longer than runfs writes");
    return 0;
}

int pg_seal_insert(rs_backend *b, const rs_target *t, const rs_seal_row *row,
                   const rs_seal_tree *tree, rs_err *err)
{
    int rc = pg_begin(b, t->thread_id, err);
    if (rc)
        return rc;
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_int(&a, row->upper_seq);
    pg_arg_text(&a, t->user);
    PGresult *r;
    if ((rc = pg_run(b,
                     "SELECT count(*) FROM run_events WHERE thread_id = $1 AND run_id = $2 "
                     "AND seq <= $3 AND ($4::text IS NULL OR user_id = $4)",
                     &a, &r, err)))
        goto fail;
    int64_t n = pg_val_int(r, 0, 0);
    PQclear(r);
    if (n != row->event_count) {
        rc = rs_err_set(err, -EAGAIN, "the run changed while it was being sealed");
        goto fail;
    }
    /* A tombstone (the run's rows were deleted after sealing, pg_index.c) gives way. */
    pg_args d = {.n = 0};
    pg_arg_text(&d, t->thread_id);
    pg_arg_text(&d, t->run_id);
    pg_arg_text(&d, pg_owner_key(t->user));
    if ((rc = pg_run(b,
                     "DELETE FROM runfs_seal WHERE thread_id = $1 AND run_id = $2 AND owner = $3 "
                     "AND state = 'deleted'",
                     &d, NULL, err)))
        goto fail;
    pg_args s = {.n = 0};
    pg_arg_text(&s, t->thread_id);
    pg_arg_text(&s, t->run_id);
    pg_arg_text(&s, row->state);
    pg_arg_int(&s, row->upper_seq);
    pg_arg_int(&s, row->event_count);
    pg_arg_int(&s, row->terminal_seq);
    pg_arg_text(&s, row->digest);
    pg_arg_text(&s, row->has_error ? row->error : NULL);
    pg_arg_text(&s, row->sealed_at);
    pg_arg_text(&s, pg_owner_key(t->user));
    rc = pg_run(b,
                "INSERT INTO runfs_seal (thread_id, run_id, state, upper_seq, event_count, "
                "terminal_seq, digest, error, sealed_at, owner) VALUES ($1, $2, $3, $4, $5, "
                "nullif($6, 0), $7, $8, $9, $10)",
                &s, NULL, err);
    if (rc == -EEXIST)
        rc = rs_err_set(err, -EEXIST, "run %s is already sealed", t->run_id);
    if (rc || (rc = pg_change_touch(b, t, err)) ||
        (tree && (rc = pg_seal_tree_put(b, t, row, tree, err))))
        goto fail;
    return pg_commit(b, err);
fail:
    pg_rollback(b);
    return rc;
}

int pg_seal_get(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    pg_arg_text(&a, pg_owner_key(t->user));
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT " SEAL_COLUMNS " FROM runfs_seal WHERE thread_id = $1 "
                    "AND run_id = $2 AND owner = $3 AND state <> 'deleted'",
                    &a, &r, err);
    if (rc)
        return rc;
    int found = PQntuples(r) > 0;
    if (found)
        rc = seal_from(row, r, 0, 0, err);
    PQclear(r);
    if (found && !rc)
        rc = pg_seal_extra(b, t, row, err);
    return found ? rc : -ENOENT;
}

int pg_seal_each(rs_backend *b, int (*fn)(void *ctx, const rs_target *t, const rs_seal_row *row),
                 void *ctx, rs_err *err)
{
    PGresult *r;
    /* owner '': a seal of an unscoped mount, over every owner's rows. */
    int rc = pg_run(b,
                    "SELECT thread_id, run_id, " SEAL_COLUMNS ", nullif(owner, '') FROM "
                    "runfs_seal ORDER BY thread_id COLLATE \"C\", run_id COLLATE \"C\", "
                    "owner COLLATE \"C\"",
                    NULL, &r, err);
    if (rc)
        return rc;
    for (int i = 0; !rc && i < PQntuples(r); i++) {
        rs_seal_row row;
        rs_target t = {
            .thread_id = PQgetvalue(r, i, 0),
            .run_id = PQgetvalue(r, i, 1),
            .user = PQgetisnull(r, i, 9) ? NULL : PQgetvalue(r, i, 9),
        };
        if (!(rc = seal_from(&row, r, i, 2, err)) && !(rc = pg_seal_extra(b, &t, &row, err)))
            rc = fn(ctx, &t, &row);
    }
    PQclear(r);
    return rc;
}
