/* sqlite_read.c — queries (list_events, list_messages and their windows), listings,
 * counts, identity scans and seals. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_int.h"
#include "rs_util.h"

/* metadata.task_id of a row, or NULL. Every read of a metadata member first asks json_valid:
 * json_extract alone fails the whole statement ("malformed JSON") on a row another writer
 * stored with metadata that is no JSON. */
#define TASK_ID \
    "CASE WHEN json_valid(event_metadata) THEN json_extract(event_metadata, '$.\"task_id\"') END"

typedef struct sq_names {
    rs_names base;
    rs_backend *b;
    sqlite3_stmt *st;
    int time_col; /* the column of each name's ctime (mtime after it); 0: none */
    int ids;      /* names of threads or runs: those no path can name are passed over */
} sq_name_cursor;

#define SEAL_COLUMNS "state, upper_seq, event_count, terminal_seq, digest, error, sealed_at"

int sq_query(rs_backend *b, const rs_query *q, rs_cursor **out, rs_err *err)
{
    rs_buf *sql = &b->sql;
    rs_buf_reset(sql);
    int newest = q->newest && q->limit > 0 && q->after_seq <= 0;
    /* A run's run.terminal (transcript.md asks for each run's): named in the SQL, so the
     * partial index runfs_ix_terminal finds it instead of a walk through the run's rows. */
    int terminal = q->run_id && !newest && q->event_types && q->n_event_types == 1 &&
                   strcmp(q->event_types[0], "run.terminal") == 0;
    /* A run's rows come from the run's index (linear in the run): the thread's category
     * and owner indexes would walk the whole thread for them. */
    int run = q->run_id != NULL;
    int rc;
    if ((newest && (rc = rs_buf_addstr(sql, "SELECT * FROM ("))) ||
        (rc = rs_buf_addstr(sql, "SELECT " SQ_ROW_COLUMNS
                                 " FROM run_events e WHERE e.thread_id = ?1")) ||
        (q->run_id && (rc = rs_buf_addstr(sql, " AND e.run_id = ?2"))) ||
        (q->user &&
         (rc = rs_buf_addstr(sql, run ? " AND +e.user_id = ?3" : " AND e.user_id = ?3"))) ||
        (q->messages_only && (rc = rs_buf_addstr(sql, run ? " AND +e.category = 'message'"
                                                          : " AND e.category = 'message'"))) ||
        (q->category &&
         (rc = rs_buf_addstr(sql, run ? " AND +e.category = ?8" : " AND e.category = ?8"))) ||
        (q->task_id && (rc = rs_buf_addstr(sql, " AND " TASK_ID " = ?4"))) ||
        (q->after_seq > 0 && (rc = rs_buf_addstr(sql, " AND e.seq > ?5"))) ||
        (q->before_seq > 0 && (rc = rs_buf_addstr(sql, " AND e.seq < ?6"))) ||
        (terminal && (rc = rs_buf_addstr(sql, " AND e.event_type = 'run.terminal'"))) ||
        (q->event_types && !terminal && (rc = rs_buf_addstr(sql, " AND e.event_type IN ("))))
        return rs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; q->event_types && !terminal && i < q->n_event_types; i++)
        if ((rc = rs_buf_addf(sql, "%s?%zu", i ? ", " : "", 10 + i)))
            return rs_err_set(err, -ENOMEM, "out of memory");
    if ((q->event_types && !terminal &&
         (rc = rs_buf_addstr(sql, q->n_event_types ? ")" : "NULL)"))) ||
        (rc = rs_buf_addstr(sql, newest     ? " ORDER BY e.seq DESC"
                                 : terminal ? " ORDER BY +e.seq ASC"
                                            : " ORDER BY e.seq ASC")) ||
        (q->limit > 0 && (rc = rs_buf_addstr(sql, " LIMIT ?7"))) ||
        (newest && (rc = rs_buf_addstr(sql, ") ORDER BY seq ASC"))))
        return rs_err_set(err, -ENOMEM, "out of memory");
    sqlite3_stmt *st;
    if ((rc = sq_stmt_get(b, sql->buf, &st, err)))
        return rc;
    sq_bind_text(st, 1, q->thread_id);
    if (q->run_id)
        sq_bind_text(st, 2, q->run_id);
    if (q->user)
        sq_bind_text(st, 3, q->user);
    if (q->task_id)
        sq_bind_text(st, 4, q->task_id);
    if (q->after_seq > 0)
        sqlite3_bind_int64(st, 5, q->after_seq);
    if (q->before_seq > 0)
        sqlite3_bind_int64(st, 6, q->before_seq);
    if (q->limit > 0)
        sqlite3_bind_int64(st, 7, q->limit);
    if (q->category)
        sq_bind_text(st, 8, q->category);
    for (size_t i = 0; q->event_types && !terminal && i < q->n_event_types; i++)
        sq_bind_text(st, (int)(10 + i), q->event_types[i]);
    return sq_cursor_new(b, st, 0, 0, 0, out, err);
}

static int names_next(rs_names *base, const char **name)
{
    sq_name_cursor *n = (sq_name_cursor *)base;
    for (;;) {
        int src = sqlite3_step(n->st);
        if (src == SQLITE_DONE)
            return 0;
        if (src != SQLITE_ROW)
            return sq_fail(n->b, src, NULL, "list");
        const char *s = (const char *)sqlite3_column_text(n->st, 0);
        /* In bytes: an id holding a NUL would list as its part before it. */
        if (s && (!n->ids || rs_id_valid_n(s, (size_t)sqlite3_column_bytes(n->st, 0)))) {
            int c = n->time_col;
            n->base.timed = c && sqlite3_column_type(n->st, c) == SQLITE_INTEGER;
            n->base.ctime_ns = n->base.timed ? sqlite3_column_int64(n->st, c) : 0;
            n->base.mtime_ns = n->base.timed ? sqlite3_column_int64(n->st, c + 1) : 0;
            *name = s;
            return 1;
        }
    }
}

static void names_free(rs_names *base)
{
    sq_name_cursor *n = (sq_name_cursor *)base;
    sq_stmt_done(n->b, n->st);
    free(n);
}

/* Threads with logs in the order they came, then those of run_events not indexed yet
 * (found by index probes, a thread at a time) in id order; of one owner (?3): the threads
 * holding its rows. */
static const char threads_sql[] =
    "WITH RECURSIVE " SQ_THREAD_IDS
    " SELECT * FROM (SELECT thread_id, thread_key AS k, " RS_LOG_TIME_SQL(
        t) " FROM runfs_thread t UNION ALL SELECT id, NULL, NULL, NULL FROM u) "
           "ORDER BY k IS NULL, k, thread_id";
static const char threads_of_user_sql[] =
    "WITH RECURSIVE " SQ_THREAD_IDS " SELECT thread_id FROM (SELECT t.thread_id, t.thread_key "
    "AS k FROM runfs_thread t WHERE EXISTS (SELECT 1 FROM runfs_owner o WHERE o.thread_key = "
    "t.thread_key AND o.run_key = 0 AND o.user = ?3) UNION ALL SELECT id, NULL FROM u WHERE "
    "EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = u.id AND e.user_id = ?3)) "
    "ORDER BY k IS NULL, k, thread_id";

int sq_names(rs_backend *b, rs_names_kind kind, const char *thread_id, const char *run_id,
             const char *user, const char *const *singletons, size_t n_singletons, rs_names **out,
             rs_err *err)
{
    rs_buf *sql = &b->sql;
    int rc = 0;
    /* The catch-ups build their own statements in b->sql: the listing's starts after them. */
    if (kind == RS_NAMES_THREADS && (rc = sq_mem_refresh(b, err)))
        return rc;
    if (kind == RS_NAMES_RUNS && (rc = sq_thread_ready(b, thread_id, err)))
        return rc;
    rs_buf_reset(sql);
    switch (kind) {
    case RS_NAMES_THREADS: rc = rs_buf_addstr(sql, user ? threads_of_user_sql : threads_sql); break;
    case RS_NAMES_RUNS:
        rc = rs_buf_addstr(
            sql,
            "SELECT r.run_id, " RS_LOG_TIME_SQL(
                r) " FROM runfs_run r JOIN runfs_thread t ON t.thread_key = r.thread_key "
                   "WHERE t.thread_id = ?1 AND (?3 IS NULL OR EXISTS (SELECT 1 FROM runfs_owner o "
                   "WHERE o.thread_key = r.thread_key AND o.run_key = r.run_key AND o.user = ?3)) "
                   "ORDER BY r.run_key");
        break;
    case RS_NAMES_TYPES:
        rc = rs_buf_addstr(
            sql, "SELECT DISTINCT event_type FROM run_events WHERE thread_id = ?1 AND run_id = ?2 "
                 "AND (?3 IS NULL OR user_id = ?3) ORDER BY event_type");
        break;
    case RS_NAMES_TASKS:
        rc = rs_buf_addstr(sql, "SELECT DISTINCT " TASK_ID " AS task FROM run_events WHERE "
                                "thread_id = ?1 AND run_id = ?2 AND (?3 IS NULL OR user_id = ?3) "
                                "AND CASE WHEN json_valid(event_metadata) THEN json_type("
                                "event_metadata, '$.\"task_id\"') END = 'text' ORDER BY task");
        break;
    case RS_NAMES_SINGLETONS:
        rc = rs_buf_addstr(
            sql,
            "SELECT DISTINCT event_type FROM run_events WHERE thread_id = ?1 AND run_id = ?2 "
            "AND (?3 IS NULL OR user_id = ?3) AND (event_type IN (SELECT event_type FROM "
            "runfs_once WHERE thread_id = ?1 AND run_id = ?2 AND (?3 IS NULL OR owner IN (?3, '')))");
        /* One IN list, not an OR per type: SQLite compiles a chain of ORs of parameters
         * again at every step after new bindings (a listing's whole cost). */
        for (size_t i = 0; !rc && i < n_singletons; i++)
            rc = rs_buf_addf(sql, i ? ", ?%zu" : " OR event_type IN (?%zu", 10 + i);
        if (!rc)
            rc = rs_buf_addstr(sql,
                               n_singletons ? ")) ORDER BY event_type" : ") ORDER BY event_type");
        break;
    }
    if (rc)
        return rs_err_set(err, -ENOMEM, "out of memory");
    sqlite3_stmt *st;
    if ((rc = sq_stmt_get(b, sql->buf, &st, err)))
        return rc;
    int np = sqlite3_bind_parameter_count(st);
    if (np >= 1 && sqlite3_bind_parameter_index(st, "?1"))
        sq_bind_text(st, sqlite3_bind_parameter_index(st, "?1"), thread_id);
    if (sqlite3_bind_parameter_index(st, "?2"))
        sq_bind_text(st, sqlite3_bind_parameter_index(st, "?2"), run_id);
    if (sqlite3_bind_parameter_index(st, "?3"))
        sq_bind_text(st, sqlite3_bind_parameter_index(st, "?3"),
                     kind == RS_NAMES_THREADS || kind == RS_NAMES_RUNS ? sq_owner_key(user) : user);
    if (kind == RS_NAMES_RUNS && !user)
        sqlite3_bind_null(st, sqlite3_bind_parameter_index(st, "?3"));
    for (size_t i = 0; kind == RS_NAMES_SINGLETONS && i < n_singletons; i++)
        sq_bind_text(st, (int)(10 + i), singletons[i]);
    sq_name_cursor *n = calloc(1, sizeof *n);
    if (!n) {
        sq_stmt_done(b, st);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    n->base.next = names_next;
    n->base.free = names_free;
    n->b = b;
    n->st = st;
    n->ids = kind == RS_NAMES_THREADS || kind == RS_NAMES_RUNS;
    /* Times of every owner's rows, as indexed (the runs' thread was caught up above; a
     * thread behind shows its new time once the hub indexes it, at its tick); a read-only
     * mount's index may be a copy in memory: its listings stay untimed. */
    if (!user && !b->read_only)
        n->time_col = kind == RS_NAMES_THREADS ? 2 : kind == RS_NAMES_RUNS ? 1 : 0;
    *out = &n->base;
    return 0;
}

/* A superset of the odd pairs, in bytes (an id holding a NUL included); rs_id_valid_n
 * decides. One pass over the (thread_id, run_id, seq) index. */
#define SQ_ODD(c) \
    "(" c " IS NULL OR length(CAST(" c " AS BLOB)) NOT BETWEEN 1 AND 64 OR " c \
    " GLOB '*[^A-Za-z0-9_-]*' OR instr(CAST(" c " AS BLOB), x'00') > 0)"

int sq_odd_ids(rs_backend *b, rs_odd_id_fn fn, void *ctx, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b,
                         "SELECT DISTINCT CAST(thread_id AS BLOB), CAST(run_id AS BLOB) FROM "
                         "run_events WHERE " SQ_ODD("thread_id") " OR " SQ_ODD("run_id"),
                         &st, err);
    if (rc)
        return rc;
    int src = SQLITE_DONE;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = sqlite3_column_blob(st, 0), *r = sqlite3_column_blob(st, 1);
        size_t tl = (size_t)sqlite3_column_bytes(st, 0), rl = (size_t)sqlite3_column_bytes(st, 1);
        if (!rs_id_valid_n(t ? t : "", tl) || !rs_id_valid_n(r ? r : "", rl))
            rc = fn(ctx, t ? t : "", tl, r ? r : "", rl);
    }
    if (!rc && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "odd ids");
    sq_stmt_done(b, st);
    return rc;
}

int sq_last_visible_ai_seq(rs_backend *b, const rs_target *t, int64_t *seq, rs_err *err)
{
    /* Newest first along the run's rows (ix_events_run): the first visible AI row answers,
     * so this reads a few index entries, not the run. The thread's category index would
     * walk every later run's messages first: a listing of an early run of a long thread
     * paid for the thread. */
    static const char sql[] =
        "SELECT seq FROM run_events WHERE thread_id = ?1 AND run_id = ?2 "
        "AND +category = 'message' AND event_type IN ('llm.ai.response', 'ai_message') "
        "AND NOT (coalesce(CASE WHEN json_valid(event_metadata) THEN "
        "json_extract(event_metadata, '$.\"caller\"') END, '') LIKE 'middleware:%') "
        "AND (?3 IS NULL OR user_id = ?3) ORDER BY seq DESC LIMIT 1";
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "last visible ai", sql, "ttt", t->thread_id, t->run_id, t->user);
    if (rc <= 0)
        return rc < 0 ? rc : -ENOENT;
    *seq = sqlite3_column_int64(st, 0);
    sq_stmt_done(b, st);
    return 0;
}

int sq_message_objects(rs_backend *b, const char *thread_id, const char *user, int newest,
                       const char *like, rs_cursor **out, rs_err *err)
{
    const char *sql =
        newest
            ? "SELECT " SQ_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = ?1 "
              "AND e.category = 'message' AND (?2 IS NULL OR e.user_id = ?2) "
              "AND substr(e.content, 1, 1) = '{' AND (?3 IS NULL OR e.content LIKE ?3 ESCAPE '\\') "
              "ORDER BY e.seq DESC"
            : "SELECT " SQ_ROW_COLUMNS " FROM run_events e WHERE e.thread_id = ?1 "
              "AND e.category = 'message' AND (?2 IS NULL OR e.user_id = ?2) "
              "AND substr(e.content, 1, 1) = '{' AND (?3 IS NULL OR e.content LIKE ?3 ESCAPE '\\') "
              "ORDER BY e.seq ASC";
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b, sql, &st, err);
    if (rc)
        return rc;
    sq_bind_text(st, 1, thread_id);
    sq_bind_text(st, 2, user);
    sq_bind_text(st, 3, like);
    return sq_cursor_new(b, st, 0, 0, 0, out, err);
}

/* The threads not indexed yet and their runs, from run_events' covering indexes (no row is
 * read, but every index entry of those threads is): kept while this connection has seen
 * no commit, its own included (one indexes a thread, which then counts with the logs). */
static int unindexed_add(rs_backend *b, rs_stats *out, rs_err *err)
{
    int64_t version = -1;
    int rc = sq_look(b, &version, err);
    if (rc)
        return rc;
    if (version != b->unindexed_version || b->unindexed_gen != b->commits) {
        sqlite3_stmt *st;
        rc = sq_step(b, &st, err, "stats",
                     "WITH RECURSIVE " SQ_THREAD_IDS " SELECT (SELECT count(*) FROM u), "
                     "(SELECT count(*) FROM (SELECT DISTINCT e.thread_id, e.run_id FROM "
                     "run_events e WHERE e.thread_id IN u))",
                     "");
        if (rc < 0)
            return rc;
        b->unindexed_threads = sqlite3_column_int64(st, 0);
        b->unindexed_runs = sqlite3_column_int64(st, 1);
        sq_stmt_done(b, st);
        b->unindexed_version = version;
        b->unindexed_gen = b->commits;
    }
    out->threads += b->unindexed_threads;
    out->runs += b->unindexed_runs;
    return 0;
}

int sq_stats(rs_backend *b, const char *user, const char *thread_id, rs_stats *out, rs_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = thread_id ? sq_thread_ready(b, thread_id, err) : sq_mem_refresh(b, err);
    if (rc)
        return rc;
    /* ?1 owner ('' for rows without one), ?2 thread (NULL: all; then threads not indexed
     * yet (u) count from run_events' covering indexes: no row is read). */
    static const char all_sql[] =
        "SELECT (SELECT count(*) FROM runfs_thread t WHERE ?2 IS NULL OR t.thread_id = ?2), "
        "(SELECT count(*) FROM runfs_run r JOIN runfs_thread t ON t.thread_key = r.thread_key "
        "WHERE ?2 IS NULL OR t.thread_id = ?2), CASE WHEN ?2 IS NULL THEN (SELECT count(*) "
        "FROM run_events) ELSE (SELECT coalesce(sum(count), 0) FROM runfs_thread WHERE "
        "thread_id = ?2) END";
    static const char user_sql[] =
        "WITH RECURSIVE " SQ_THREAD_IDS ", v(id) AS (SELECT id FROM u WHERE ?2 IS NULL AND "
        "EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = u.id AND e.user_id = ?1)) "
        "SELECT (SELECT count(*) FROM runfs_thread t WHERE (?2 IS NULL OR t.thread_id = ?2) AND "
        "EXISTS (SELECT 1 FROM runfs_owner o WHERE o.thread_key = t.thread_key AND o.run_key = 0 "
        "AND o.user = ?1)) + (SELECT count(*) FROM v), "
        "(SELECT count(*) FROM runfs_run r JOIN runfs_thread t ON t.thread_key = r.thread_key "
        "WHERE (?2 IS NULL OR t.thread_id = ?2) AND EXISTS (SELECT 1 FROM runfs_owner o WHERE "
        "o.thread_key = r.thread_key AND o.run_key = r.run_key AND o.user = ?1)) + (SELECT "
        "count(*) FROM (SELECT DISTINCT e.thread_id, e.run_id FROM run_events e WHERE "
        "e.thread_id IN v AND e.user_id = ?1)), "
        "(SELECT count(*) FROM run_events WHERE user_id = ?1 AND (?2 IS NULL OR thread_id = ?2))";
    const char *sql = user ? user_sql : all_sql;
    sqlite3_stmt *st;
    rc = sq_step(b, &st, err, "stats", sql, "tt", user, thread_id);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        out->threads = sqlite3_column_int64(st, 0);
        out->runs = sqlite3_column_int64(st, 1);
        out->events = sqlite3_column_int64(st, 2);
        sq_stmt_done(b, st);
    }
    return user || thread_id ? 0 : unindexed_add(b, out, err);
}

static const char *text_or_empty(sqlite3_stmt *st, int col)
{
    const char *v = (const char *)sqlite3_column_text(st, col);
    return v ? v : "";
}

/* -EOVERFLOW for a field longer than runfs writes (a row changed by hand): never cut. */
static int seal_from_stmt(rs_seal_row *row, sqlite3_stmt *st, int col, rs_err *err)
{
    memset(row, 0, sizeof *row);
    row->upper_seq = sqlite3_column_int64(st, col + 1);
    row->event_count = sqlite3_column_int64(st, col + 2);
    row->terminal_seq = sqlite3_column_int64(st, col + 3);
    row->has_error = sqlite3_column_type(st, col + 5) != SQLITE_NULL;
    if (rs_fmt(row->state, sizeof row->state, "%s", text_or_empty(st, col)) < 0 ||
        rs_fmt(row->digest, sizeof row->digest, "%s", text_or_empty(st, col + 4)) < 0 ||
        rs_fmt(row->error, sizeof row->error, "%s", text_or_empty(st, col + 5)) < 0 ||
        rs_fmt(row->sealed_at, sizeof row->sealed_at, "%s", text_or_empty(st, col + 6)) < 0)
        return rs_err_set(err, -EOVERFLOW, "a runfs_seal row has a field longer than runfs writes");
    return 0;
}

int sq_seal_insert(rs_backend *b, const rs_target *t, const rs_seal_row *row,
                   const rs_seal_tree *tree, rs_err *err)
{
    int rc = sq_begin(b, err);
    if (rc)
        return rc;
    /* The logs level with the rows, for sq_change_touch. */
    if ((rc = sq_catch_up(b, err)) || (rc = sq_thread_catch_up(b, t->thread_id, err)))
        goto fail;
    sqlite3_stmt *st;
    if ((rc = sq_step(b, &st, err, "seal",
                      "SELECT count(*) FROM run_events WHERE thread_id = ?1 "
                      "AND run_id = ?2 AND seq <= ?3 AND (?4 IS NULL OR user_id = ?4)",
                      "ttit", t->thread_id, t->run_id, row->upper_seq, t->user)) < 0)
        goto fail;
    int64_t n = 0;
    if (rc == 1) {
        n = sqlite3_column_int64(st, 0);
        sq_stmt_done(b, st);
    }
    if (n != row->event_count) {
        rc = rs_err_set(err, -EAGAIN, "the run changed while it was being sealed");
        goto fail;
    }
    /* A tombstone (the run's rows were deleted after sealing, sqlite_index.c) gives way. */
    if ((rc = sq_step(b, NULL, err, "seal",
                      "DELETE FROM runfs_seal WHERE thread_id = ? AND run_id = ? AND owner = ? "
                      "AND state = 'deleted'",
                      "ttt", t->thread_id, t->run_id, sq_owner_key(t->user))) < 0)
        goto fail;
    rc = sq_step(b, NULL, err, "seal",
                 "INSERT INTO runfs_seal (thread_id, run_id, state, "
                 "upper_seq, event_count, terminal_seq, digest, error, sealed_at, owner) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 "tttiiotttt", t->thread_id, t->run_id, row->state, row->upper_seq,
                 row->event_count, row->terminal_seq, row->digest,
                 row->has_error ? row->error : NULL, row->sealed_at, sq_owner_key(t->user));
    if (rc == -EEXIST)
        rc = rs_err_set(err, -EEXIST, "run %s is already sealed", t->run_id);
    if (rc < 0 || (rc = sq_change_touch(b, t->thread_id, t->run_id, err)) ||
        (tree && (rc = sq_seal_tree_put(b, t, row, tree, err)) < 0))
        goto fail;
    return sq_commit(b, err);
fail:
    sq_rollback(b);
    return rc;
}

int sq_seal_get(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "seal",
                     "SELECT " SEAL_COLUMNS " FROM runfs_seal WHERE "
                     "thread_id = ? AND run_id = ? AND owner = ? AND state <> 'deleted'",
                     "ttt", t->thread_id, t->run_id, sq_owner_key(t->user));
    if (rc <= 0)
        return rc < 0 ? rc : -ENOENT;
    rc = seal_from_stmt(row, st, 0, err);
    sq_stmt_done(b, st);
    return rc ? rc : sq_seal_extra(b, t, row, err);
}

int sq_seal_each(rs_backend *b, int (*fn)(void *ctx, const rs_target *t, const rs_seal_row *row),
                 void *ctx, rs_err *err)
{
    sqlite3_stmt *st;
    /* owner '': a seal of an unscoped mount, over every owner's rows. */
    int rc = sq_stmt_get(b,
                         "SELECT thread_id, run_id, " SEAL_COLUMNS ", nullif(owner, '') "
                         "FROM runfs_seal ORDER BY thread_id, run_id, owner",
                         &st, err);
    if (rc)
        return rc;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        rs_seal_row row;
        rs_target t = {
            .thread_id = (const char *)sqlite3_column_text(st, 0),
            .run_id = (const char *)sqlite3_column_text(st, 1),
            .user = (const char *)sqlite3_column_text(st, 9),
        };
        if ((rc = seal_from_stmt(&row, st, 2, err)) || (rc = sq_seal_extra(b, &t, &row, err)) ||
            (rc = fn(ctx, &t, &row)))
            break;
    }
    sq_stmt_done(b, st);
    if (!rc && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "seals");
    return rc;
}
