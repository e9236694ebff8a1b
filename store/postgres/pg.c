/* pg.c — the PostgreSQL backend's core: connections, cached prepared statements,
 * transactions, cursors, the change feed and the table of operations (the operations live
 * in pg_index.c, pg_write.c and pg_read.c).
 *
 * Every write transaction first takes DeerFlow's advisory lock on its thread, so runfs and
 * DeerFlow writers serialise per thread and seq is max(high-water, MAX(seq)) + 1 under it.
 * A lost connection fails what was in flight with EIO; the next call outside a transaction
 * reconnects. Reads stream through server-side cursors, a batch of rows at a time. Statements
 * that need no answer before the next one is sent go together in a libpq pipeline (one round
 * trip): an append's transaction, a cursor's BEGIN, DECLARE and first FETCH. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg_int.h"
#include "pg_schema.sql.h"
#include "rs_util.h"

#define PG_CHANNEL "runfs_events"
/* Schema set-up of concurrent first mounts queues on this key ("runfs" in ASCII). */
#define PG_SETUP_LOCK "521510364787"

typedef struct pg_cursor {
    rs_cursor base;
    rs_backend *b;
    char name[24];
    PGresult *res;
    int row, nrows, done, own_tx, batch;
    int fixed; /* its transaction's snapshot is fixed (pg_cursor_fixed) */
    int log;   /* 0: a query; 1: a run's log; 2: a thread's log */
    int64_t next_off;
    int64_t skip_to;
    pg_canon canon;
    char at[PG_AT_MAX]; /* the row's created_at */
} pg_cursor;

void pg_arg_text(pg_args *a, const char *s)
{
    a->types[a->n] = 25; /* text */
    a->v[a->n++] = s;
}

void pg_arg_int(pg_args *a, int64_t v)
{
    (void)rs_fmt(a->num[a->n], sizeof a->num[a->n], "%" PRId64, v); /* 24 bytes: any int64 */
    a->v[a->n] = a->num[a->n];
    a->types[a->n++] = 20; /* int8 */
}

/* The first line of libpq's message (its messages end in newlines and carry DETAIL lines). */
static const char *first_line(const char *msg, char *out, size_t cap)
{
    (void)rs_fmt(out, cap, "%s", msg ? msg : "");
    out[strcspn(out, "\n")] = '\0';
    return out;
}

static int fail_conn(rs_backend *b, rs_err *err, const char *what)
{
    char line[400];
    b->lost = 1;
    return rs_err_set(err, -EIO, "%s: database unreachable: %s", what,
                      first_line(PQerrorMessage(b->conn), line, sizeof line));
}

/* Map a failed result to a negative errno with PostgreSQL's reason. */
static int fail_result(rs_backend *b, const PGresult *r, rs_err *err, const char *what)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (PQstatus(b->conn) != CONNECTION_OK || !state || strncmp(state, "08", 2) == 0 ||
        strncmp(state, "57P", 3) == 0)
        return fail_conn(b, err, what);
    int code = -EIO;
    const char *table = PQresultErrorField(r, PG_DIAG_TABLE_NAME);
    b->seq_taken = strcmp(state, "23505") == 0 && table && strcmp(table, "run_events") == 0;
    if (strcmp(state, "23505") == 0)
        code = -EEXIST;
    else if (strcmp(state, "53100") == 0)
        code = -ENOSPC;
    else if (strcmp(state, "42501") == 0)
        code = -EACCES;
    else if (strcmp(state, "25006") == 0)
        code = -EROFS;
    else if (strncmp(state, "53", 2) == 0)
        code = -ENOMEM;
    char line[400];
    return rs_err_set(err, code, "%s: %s", what,
                      first_line(PQresultErrorMessage(r), line, sizeof line));
}

/* jit off: runfs's statements read rows by index, and the planner's estimate of a range
 * join (the search's candidate blocks) passes jit_above_cost, so the server compiled the
 * search's query each time (a quarter of a second) to run it in a millisecond. */
#define PG_SESSION_MAX 256 /* session_sql's statements: constant words only */

static void session_sql(const rs_backend *b, char *sql)
{
    (void)rs_fmt(sql, PG_SESSION_MAX,
                 "SET runfs.writer = '1'; SET TimeZone = 'UTC'; SET DateStyle = ISO; "
                 "SET synchronous_commit = %s; SET jit = off;%s",
                 b->sync_full ? "on" : "local", b->listening ? " LISTEN " PG_CHANNEL ";" : "");
}

static int session_setup(rs_backend *b, rs_err *err)
{
    char sql[PG_SESSION_MAX];
    session_sql(b, sql);
    PGresult *r = PQexec(b->conn, sql);
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : fail_result(b, r, err, "session");
    PQclear(r);
    return rc;
}

static int scratch_setup(rs_backend *b, rs_err *err);

/* A new session (prepared statements go with the old one). */
static int conn_reset(rs_backend *b, rs_err *err)
{
    PQreset(b->conn);
    if (PQstatus(b->conn) != CONNECTION_OK)
        return fail_conn(b, err, "reconnect");
    for (int i = 0; i < PG_STMT_CACHE; i++) {
        free(b->cache[i].sql);
        b->cache[i].sql = NULL;
    }
    /* A reader's TEMP copies went with the session too. */
    b->mem = 0;
    b->side[0] = '\0';
    rs_mem_clear(&b->mem_list);
    int rc = session_setup(b, err);
    return rc || !b->scratch ? rc : scratch_setup(b, err);
}

/* A session the server ended while it sat idle (a restart, a terminated backend) still
 * says CONNECTION_OK: its socket reads as closed (after the server's last words, which
 * libpq passes to the notice processor). Notifications read here wait in libpq's queue. */
static int conn_dead(rs_backend *b)
{
    for (int i = 0; i < 8; i++) {
        struct pollfd p = {.fd = PQsocket(b->conn), .events = POLLIN};
        if (p.fd < 0)
            return 1;
        if (poll(&p, 1, 0) <= 0)
            return 0;
        if (!PQconsumeInput(b->conn) || PQstatus(b->conn) != CONNECTION_OK)
            return 1;
    }
    return 0;
}

/* Sleep until the next try at the server: 100 ms, or what is left before deadline. 0 once
 * deadline has passed. */
static int pause_until(int64_t deadline)
{
    int64_t now = rs_clock_ns(CLOCK_MONOTONIC);
    if (now >= deadline)
        return 0;
    int64_t ns = deadline - now < 100000000LL ? deadline - now : 100000000LL;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ns};
    nanosleep(&ts, NULL);
    return 1;
}

/* Outside a transaction, a lost connection is made again, and an idle one the server
 * ended is found and replaced before a statement fails on it. Nothing of the request was
 * sent yet, so a write as well as a read waits for an unreachable server (a restart) up to
 * connect_timeout, trying every 100 ms; what was in flight is not tried again. */
static int ensure_conn(rs_backend *b, rs_err *err)
{
    if (PQstatus(b->conn) == CONNECTION_OK && (b->in_tx || b->read_tx || b->piped || !conn_dead(b)))
        return 0;
    if (b->in_tx || b->read_tx)
        return fail_conn(b, err, "query");
    int64_t deadline = rs_clock_ns(CLOCK_MONOTONIC) + b->wait_ns;
    int rc = conn_reset(b, err);
    while (rc == -EIO && b->lost && pause_until(deadline))
        rc = conn_reset(b, err);
    b->waited = rc == -EIO && b->lost;
    return rc;
}

static pg_stmt_slot *stmt_cached(rs_backend *b, const char *sql)
{
    for (int i = 0; i < PG_STMT_CACHE; i++)
        if (b->cache[i].sql && strcmp(b->cache[i].sql, sql) == 0)
            return &b->cache[i];
    return NULL;
}

static pg_stmt_slot *stmt_free_slot(rs_backend *b)
{
    for (int i = 0; i < PG_STMT_CACHE; i++)
        if (!b->cache[i].sql)
            return &b->cache[i];
    return NULL;
}

/* Name slot for sql (the caller prepares it under that name). */
static int stmt_claim(rs_backend *b, pg_stmt_slot *slot, const char *sql, rs_err *err)
{
    char *copy = strdup(sql);
    if (!copy)
        return rs_err_set(err, -ENOMEM, "out of memory");
    (void)rs_fmt(slot->name, sizeof slot->name, "rs%d", ++b->stmt_seq); /* any int fits */
    slot->sql = copy;
    return 0;
}

/* The prepared statement for sql, preparing it on first use. */
static int stmt_name(rs_backend *b, const char *sql, const pg_args *a, const char **name,
                     rs_err *err)
{
    pg_stmt_slot *slot = stmt_cached(b, sql);
    if (slot) {
        *name = slot->name;
        return 0;
    }
    if (!(slot = stmt_free_slot(b))) {
        /* Evict round-robin: the cache bounds memory, correctness never needs it. */
        slot = &b->cache[b->stmt_seq % PG_STMT_CACHE];
        char dealloc[40];
        (void)rs_fmt(dealloc, sizeof dealloc, "DEALLOCATE %s", slot->name); /* name: 16 */
        PQclear(PQexec(b->conn, dealloc));
        free(slot->sql);
        slot->sql = NULL;
    }
    int rc = stmt_claim(b, slot, sql, err);
    if (rc)
        return rc;
    PGresult *r = PQprepare(b->conn, slot->name, sql, a ? a->n : 0, a ? a->types : NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        rc = fail_result(b, r, err, "prepare");
        PQclear(r);
        free(slot->sql);
        slot->sql = NULL;
        return rc;
    }
    PQclear(r);
    *name = slot->name;
    return 0;
}

/* ---- pipelines ---- */

int pg_pipe_start(rs_backend *b, rs_err *err)
{
    int rc = ensure_conn(b, err);
    if (rc)
        return rc;
    if (!PQenterPipelineMode(b->conn))
        return fail_conn(b, err, "pipeline");
    b->piped = 1;
    b->npipe = b->pipe_rc = b->pipe_commit = 0;
    b->pipe_failed = -1;
    return 0;
}

static void pipe_note(rs_backend *b, PGresult **out, int slot)
{
    b->pipe[b->npipe].out = out;
    b->pipe[b->npipe++].slot = slot;
}

/* Queue sql: prepared on first use (the preparation queued before it) while the cache has
 * room and cache is set, else sent unnamed; statements without parameters always go
 * unnamed. */
static int pipe_send(rs_backend *b, const char *sql, const pg_args *a, int cache, PGresult **out,
                     rs_err *err)
{
    if (b->pipe_rc)
        return b->pipe_rc;
    int rc = 0, sent;
    if (b->npipe + 2 > PG_PIPE_MAX) {
        rc = rs_err_set(err, -EIO, "query: more than %d statements in one pipeline", PG_PIPE_MAX);
        goto out;
    }
    pg_stmt_slot *slot = a && cache ? stmt_cached(b, sql) : NULL;
    if (a && cache && !slot && (slot = stmt_free_slot(b))) {
        if ((rc = stmt_claim(b, slot, sql, err)))
            goto out;
        if (!PQsendPrepare(b->conn, slot->name, sql, a->n, a->types)) {
            free(slot->sql);
            slot->sql = NULL;
            rc = fail_conn(b, err, "prepare");
            goto out;
        }
        pipe_note(b, NULL, (int)(slot - b->cache));
    }
    sent = slot ? PQsendQueryPrepared(b->conn, slot->name, a->n, a->v, NULL, NULL, 0)
                : PQsendQueryParams(b->conn, sql, a ? a->n : 0, a ? a->types : NULL,
                                    a ? a->v : NULL, NULL, NULL, 0);
    if (!sent)
        rc = fail_conn(b, err, "query");
    else
        pipe_note(b, out, -1);
out:
    b->pipe_rc = rc;
    return rc;
}

int pg_pipe_run(rs_backend *b, rs_err *err)
{
    int rc = b->pipe_rc, i;
    if (PQpipelineSync(b->conn) != 1 && !rc)
        rc = fail_conn(b, err, "query");
    for (i = 0; i < b->npipe; i++) {
        PGresult *r = PQgetResult(b->conn);
        if (!r) {
            if (!rc)
                rc = fail_conn(b, err, "query");
            break;
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
            if (b->pipe[i].out) {
                *b->pipe[i].out = r;
                r = NULL;
            }
        } else {
            int slot = b->pipe[i].slot;
            if (slot >= 0) {
                free(b->cache[slot].sql);
                b->cache[slot].sql = NULL;
            }
            if (!rc) {
                rc = fail_result(b, r, err, slot >= 0 ? "prepare" : "query");
                b->pipe_failed = i;
            }
        }
        PQclear(r);
        PQclear(PQgetResult(b->conn)); /* the NULL that ends each statement's results */
    }
    /* Up to the sync: what an aborted pipeline skipped, then the sync itself. */
    PGresult *r;
    int synced = 0;
    while (!synced && (r = PQgetResult(b->conn))) {
        synced = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
        PQclear(r);
    }
    b->piped = 0;
    /* A session whose answers got out of step is not used again. */
    if ((!synced || !PQexitPipelineMode(b->conn)) && PQstatus(b->conn) == CONNECTION_OK) {
        if (!rc)
            rc = rs_err_set(err, -EIO, "query: the pipeline ended out of step");
        conn_reset(b, NULL);
    }
    if (!rc && b->pipe_commit)
        b->in_tx = 0;
    b->npipe = 0;
    return rc;
}

int pg_run(rs_backend *b, const char *sql, const pg_args *a, PGresult **out, rs_err *err)
{
    if (out)
        *out = NULL;
    if (b->piped)
        return pipe_send(b, sql, a, 1, out, err);
    pg_args none = {.n = 0};
    int rc;
    /* A statement's first use sends its preparation with it, one round trip instead of two:
     * a store's opening and a search's first statements are each used once by `runfs search`
     * (8 of the 31 messages a common word's search sent were preparations). The cache keeps
     * it as before. */
    if (!stmt_cached(b, sql) && stmt_free_slot(b)) {
        if (!(rc = pg_pipe_start(b, err)) && !(rc = pipe_send(b, sql, a ? a : &none, 1, out, err)))
            rc = pg_pipe_run(b, err);
        else if (b->piped)
            pg_pipe_run(b, NULL);
        if (rc && out) {
            PQclear(*out);
            *out = NULL;
        }
        return rc;
    }
    const char *name = NULL;
    rc = ensure_conn(b, err);
    if (rc || (rc = stmt_name(b, sql, a, &name, err)))
        return rc;
    PGresult *r = PQexecPrepared(b->conn, name, a ? a->n : 0, a ? a->v : NULL, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        rc = fail_result(b, r, err, "query");
        PQclear(r);
        return rc;
    }
    if (out)
        *out = r;
    else
        PQclear(r);
    return 0;
}

/* Statements without parameters, outside the cache (transaction control, the schema). */
int pg_exec_plain(rs_backend *b, const char *sql, rs_err *err)
{
    PGresult *r = PQexec(b->conn, sql);
    char what[32];
    (void)rs_fmt(what, sizeof what, "%.*s", (int)strcspn(sql, " \n("), sql); /* a label */
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK
                 ? 0
                 : fail_result(b, r, err, what);
    PQclear(r);
    return rc;
}

/* Rows a catch-up added below which the statistics are not asked about. The table's own
 * count since its last ANALYZE decides, so rows split among a mount's connections (the
 * hub's and a request's catch-ups) still count whole once one of them asks. */
#define ANALYZE_ROWS 1000

void pg_analyze_grown(rs_backend *b, int64_t rows, int64_t blocks)
{
    if ((rows < ANALYZE_ROWS && blocks < ANALYZE_ROWS / 64) || b->read_only || b->standby ||
        b->scratch || b->in_tx || b->read_tx || b->piped)
        return;
    /* PostgreSQL's count, or this connection's own where that lags (a session reports its
     * counts at most once a second). */
    pg_args a = {.n = 0};
    pg_arg_int(&a, rows);
    pg_arg_int(&a, blocks);
    PGresult *r;
    if (pg_run(b,
               "SELECT c.relname FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid "
               "WHERE c.oid IN (to_regclass('run_events'), to_regclass('runfs_search')) AND "
               "greatest(s.n_mod_since_analyze, CASE WHEN c.relname = 'run_events' THEN $1::bigint "
               "ELSE $2::bigint END) > greatest(c.reltuples, 0) / 5 + 50 AND "
               "(pg_has_role(c.relowner, 'USAGE') OR pg_has_role((SELECT datdba FROM pg_database "
               "WHERE datname = current_database()), 'USAGE'))",
               &a, &r, NULL))
        return;
    /* SKIP_LOCKED: another mount's or autovacuum's ANALYZE of the table is as good. The
     * statements are literals: nothing the server returns is spliced into SQL. */
    for (int i = 0; i < PQntuples(r); i++)
        (void)pg_exec_plain(b,
                            strcmp(PQgetvalue(r, i, 0), "run_events") == 0
                                ? "ANALYZE (SKIP_LOCKED) run_events"
                                : "ANALYZE (SKIP_LOCKED) runfs_search",
                            NULL);
    PQclear(r);
}

/* A binary value of n bytes, big-endian, as a signed integer. */
static int64_t be_int(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = 0; k < n; k++)
        v = v << 8 | p[k];
    int shift = 64 - 8 * n;
    return shift > 0 && shift < 64 ? (int64_t)(v << shift) >> shift : (int64_t)v;
}

int64_t pg_val_int(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    if (PQfformat(r, col) == 1) {
        int n = PQgetlength(r, row, col);
        return n == 2 || n == 4 || n == 8
                   ? be_int((const unsigned char *)PQgetvalue(r, row, col), n)
                   : 0;
    }
    /* Two per row read (seq and id): plain digits are read here, without strtoll's locale
     * and sign handling (a few percent of a long read's CPU). */
    const char *s = PQgetvalue(r, row, col), *p = s;
    int64_t v = 0;
    while (*p >= '0' && *p <= '9' && p - s < 18)
        v = v * 10 + (*p++ - '0');
    return *p || p == s ? strtoll(s, NULL, 10) : v;
}

int pg_int(rs_backend *b, const char *sql, const char *a1, const char *a2, int64_t *out, int *found,
           rs_err *err)
{
    pg_args a = {.n = 0};
    if (a1)
        pg_arg_text(&a, a1);
    if (a2)
        pg_arg_text(&a, a2);
    PGresult *r;
    int rc = pg_run(b, sql, &a, &r, err);
    if (rc)
        return rc;
    int have = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0);
    if (have)
        *out = pg_val_int(r, 0, 0);
    PQclear(r);
    if (found)
        *found = have;
    return 0;
}

int pg_lock_thread(rs_backend *b, const char *thread_id, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    int rc = pg_run(b, "SELECT pg_advisory_xact_lock(hashtext(CAST($1 AS text))::bigint)", &a, NULL,
                    err);
    /* The tail noted under the lock: DeerFlow's writers of the thread hold it until they
     * commit, so every row of theirs this transaction reads is noted before it is indexed
     * (noted after, a row at or below the indexed seq would be taken for one put back). */
    return rc || !b->has_tail ? rc : pg_tail_apply(b, thread_id, 0, err);
}

int pg_begin(rs_backend *b, const char *thread_id, rs_err *err)
{
    if (b->read_only)
        return rs_err_set(err, -EROFS, "the store is read-only");
    if (b->in_tx || b->read_tx)
        return rs_err_set(err, -EBUSY, "a transaction is already open on this connection");
    pg_log_forget(b);
    int rc = ensure_conn(b, err);
    if (rc ||
        (rc = b->piped ? pg_run(b, "BEGIN", NULL, NULL, err) : pg_exec_plain(b, "BEGIN", err)))
        return rc;
    b->in_tx = 1;
    if (thread_id && (rc = pg_lock_thread(b, thread_id, err)))
        pg_rollback(b);
    return rc;
}

int pg_commit(rs_backend *b, rs_err *err)
{
    if (b->piped) {
        b->pipe_commit = 1;
        return pg_run(b, "COMMIT", NULL, NULL, err);
    }
    int rc = pg_exec_plain(b, "COMMIT", err);
    b->in_tx = 0;
    if (rc && PQstatus(b->conn) == CONNECTION_OK)
        pg_exec_plain(b, "ROLLBACK", NULL);
    return rc;
}

void pg_rollback(rs_backend *b)
{
    if (b->piped)
        pg_pipe_run(b, NULL);
    if (PQstatus(b->conn) == CONNECTION_OK)
        pg_exec_plain(b, "ROLLBACK", NULL);
    b->in_tx = 0;
}

static char *put_digits(char *o, int64_t v, int width)
{
    for (int k = width - 1; k >= 0; k--, v /= 10)
        o[k] = (char)('0' + v % 10);
    return o + width;
}

/* A timestamp's microseconds since 2000-01-01 (its binary form) as DeerFlow's DATETIME
 * text; years past 9999 (or before 1) have no such text: "" (no row runfs took has one). */
static const char *at_binary(int64_t us, char *at)
{
    int64_t day = 86400000000LL, days = us / day, rem = us % day;
    if (rem < 0) {
        rem += day;
        days--;
    }
    /* Days since 0000-03-01 to a civil date (H. Hinnant's days_from_civil, inverted). */
    int64_t z = days + 10957 + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    if (y < 1 || y > 9999)
        return "";
    char *o = put_digits(at, y, 4);
    *o++ = '-';
    o = put_digits(o, m, 2);
    *o++ = '-';
    o = put_digits(o, d, 2);
    *o++ = ' ';
    o = put_digits(o, rem / 3600000000LL, 2);
    *o++ = ':';
    o = put_digits(o, rem / 60000000 % 60, 2);
    *o++ = ':';
    o = put_digits(o, rem / 1000000 % 60, 2);
    *o++ = '.';
    o = put_digits(o, rem % 1000000, 6);
    *o = '\0';
    return at;
}

/* created_at (PG_ROW_COLUMNS' timestamp) as the encoder takes it, DeerFlow's SQLite
 * DATETIME text "YYYY-MM-DD HH:MM:SS.ffffff", into at: from the binary microseconds, or
 * from the ISO text (DateStyle ISO, set at connect) whose fraction the server trims.
 * to_char made the text on the server, at twice the cost of the row's other columns. */
static const char *row_at(const PGresult *r, int i, int col, char *at)
{
    const char *s = PQgetvalue(r, i, col);
    size_t n = (size_t)PQgetlength(r, i, col);
    if (PQfformat(r, col) == 1)
        return n == 8 ? at_binary(be_int((const unsigned char *)s, 8), at) : "";
    if (n < 19 || s[4] != '-' || s[10] != ' ' || s[13] != ':' ||
        (n > 19 && s[19] != '.' && s[19] != '+'))
        return s;
    memcpy(at, s, 19);
    at[19] = '.';
    size_t k = 0;
    if (s[19] == '.')
        while (k < 6 && 20 + k < n && s[20 + k] >= '0' && s[20 + k] <= '9') {
            at[20 + k] = s[20 + k];
            k++;
        }
    while (k < 6)
        at[20 + k++] = '0';
    at[26] = '\0';
    return at;
}

void pg_row(rs_row *row, const PGresult *r, int i, int col, char *at)
{
    row->thread_id = PQgetvalue(r, i, col + 0);
    row->run_id = PQgetvalue(r, i, col + 1);
    row->seq = pg_val_int(r, i, col + 2);
    row->event_type = PQgetvalue(r, i, col + 3);
    row->category = PQgetvalue(r, i, col + 4);
    row->content = PQgetvalue(r, i, col + 5);
    row->content_len = (size_t)PQgetlength(r, i, col + 5);
    row->metadata = PQgetvalue(r, i, col + 6);
    row->metadata_len = (size_t)PQgetlength(r, i, col + 6);
    /* A jsonb column's binary form is its text after a version byte. */
    if (PQfformat(r, col + 6) == 1 && PQftype(r, col + 6) == 3802 && row->metadata_len > 0) {
        row->metadata++;
        row->metadata_len--;
    }
    row->created_at = row_at(r, i, col + 7, at);
    row->user_id = PQgetisnull(r, i, col + 8) ? NULL : PQgetvalue(r, i, col + 8);
    row->canonical = 0;
    row->odd = !rs_id_valid_n(row->thread_id, (size_t)PQgetlength(r, i, col + 0)) ||
               !rs_id_valid_n(row->run_id, (size_t)PQgetlength(r, i, col + 1));
}

/* ---- rows runfs stored (runfs_canon) ---- */

/* The ranges with hi >= from, asked now (after the rows in hand were fetched). No answer:
 * every row is rendered until the next fetch. A range holding a row of the tail no writer
 * noted yet (an id runfs stored, deleted, and another writer gave again above the insert
 * trigger's watermark: the note drops the range) is left out: its rows are rendered. */
static const char canon_plain_sql[] =
    "SELECT lo, hi FROM runfs_canon WHERE hi >= $1::bigint ORDER BY hi LIMIT $2";
static const char canon_tail_sql[] =
    "SELECT lo, hi FROM runfs_canon c WHERE hi >= $1::bigint AND NOT EXISTS (SELECT 1 FROM "
    "run_events e WHERE e.id BETWEEN greatest(c.lo, coalesce((SELECT value FROM runfs_meta "
    "WHERE key = 'tail_from'), c.hi) + 1) AND c.hi AND NOT EXISTS (SELECT 1 FROM runfs_tail t "
    "WHERE t.id = e.id)) ORDER BY hi LIMIT $2";
static const char *canon_sql(const rs_backend *b)
{
    return b->has_tail ? canon_tail_sql : canon_plain_sql;
}

/* canon_sql's answer r for from into k (NULL: none, every row rendered until the next). */
static void canon_take(pg_canon *k, PGresult *r, int64_t from)
{
    k->valid = 1;
    k->n = 0;
    k->from = INT64_MIN;
    k->upto = INT64_MAX;
    if (!r)
        return;
    k->n = PQntuples(r);
    for (int i = 0; i < k->n; i++) {
        k->lo[i] = pg_val_int(r, i, 0);
        k->hi[i] = pg_val_int(r, i, 1);
    }
    PQclear(r);
    k->from = from;
    k->upto = k->n == PG_CANON_MAX ? k->hi[k->n - 1] : INT64_MAX;
}

static void canon_args(pg_args *a, int64_t from)
{
    a->n = 0;
    pg_arg_int(a, from);
    pg_arg_int(a, PG_CANON_MAX);
}

static void canon_load(rs_backend *b, pg_canon *k, int64_t from)
{
    pg_args a;
    canon_args(&a, from);
    PGresult *r;
    canon_take(k, pg_run(b, canon_sql(b), &a, &r, NULL) ? NULL : r, from);
}

int pg_canon_has(rs_backend *b, pg_canon *k, const PGresult *r, int i)
{
    if (!b->has_canon || b->piped)
        return 0;
    int64_t id = pg_val_int(r, i, PG_ROW_ID);
    if (!k->valid || id > k->upto)
        canon_load(b, k, id);
    /* A thread's writers take its lock before their ids, so along seq ids mostly go up; a
     * row below the stretch asked (an import's, say) is rendered. */
    if (id < k->from)
        return 0;
    int lo = 0, hi = k->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (k->hi[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < k->n && k->lo[lo] <= id;
}

/* ---- cursors ---- */

/* The batch of rows a FETCH returned. */
static void cursor_batch(pg_cursor *c, PGresult *r)
{
    c->res = r;
    c->row = 0;
    if (!c->fixed)
        c->canon.valid = 0;
    c->nrows = PQntuples(r);
    c->done = c->nrows < c->batch;
    /* A first batch answers a lookup quickly; a long read gets larger ones. */
    if (c->batch < 2048)
        c->batch *= 4;
}

static void fetch_sql(const pg_cursor *c, char *sql, size_t cap)
{
    (void)rs_fmt(sql, cap, "FETCH %d FROM %s", c->batch, c->name); /* 64: int, name of 24 */
}

/* The next batch, and runfs_canon's ranges for it in the same round trip (asked after the
 * rows, as canon_load's rule needs): from the lowest id the last answer covered, as a
 * thread's rows mostly come in rising ids (a row above the answer asks again, one below it
 * is rendered). A round trip a batch less: a scan of 200 threads sent 600 of them. */
static int cursor_fetch(pg_cursor *c)
{
    PQclear(c->res);
    c->res = NULL;
    char sql[64];
    fetch_sql(c, sql, sizeof sql);
    rs_backend *b = c->b;
    if (b->has_canon && !c->fixed) {
        int64_t from = c->canon.valid && c->canon.from > 0 ? c->canon.from : 0;
        pg_args a;
        canon_args(&a, from);
        PGresult *r = NULL, *k = NULL;
        int rc = pg_pipe_start(b, NULL);
        if (!rc && !(rc = pg_run(b, sql, NULL, &r, NULL)) &&
            !(rc = pg_run(b, canon_sql(b), &a, &k, NULL)))
            rc = pg_pipe_run(b, NULL);
        else if (b->piped)
            pg_pipe_run(b, NULL);
        if (rc) {
            PQclear(r);
            PQclear(k);
            return rc;
        }
        cursor_batch(c, r);
        canon_take(&c->canon, k, from);
        return 0;
    }
    PGresult *r = PQexec(b->conn, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int rc = fail_result(c->b, r, NULL, "read");
        PQclear(r);
        return rc;
    }
    cursor_batch(c, r);
    return 0;
}

static int cursor_next(rs_cursor *base, const rs_record **out)
{
    pg_cursor *c = (pg_cursor *)base;
    for (;;) {
        if (c->row >= c->nrows) {
            if (c->done)
                return 0;
            int rc = cursor_fetch(c);
            if (rc)
                return rc;
            if (c->nrows == 0)
                return 0;
        }
        pg_row(&base->row, c->res, c->row, 0, c->at);
        base->row_id = PQnfields(c->res) > PG_ROW_ID ? pg_val_int(c->res, c->row, PG_ROW_ID) : 0;
        base->row.canonical = pg_canon_has(c->b, &c->canon, c->res, c->row++);
        int rc = rs_cursor_emit(base, c->log, &c->next_off, c->skip_to, out);
        if (rc)
            return rc; /* 0: the line ends before the offset asked for */
    }
}

static void cursor_free(rs_cursor *base)
{
    pg_cursor *c = (pg_cursor *)base;
    rs_backend *b = c->b;
    PQclear(c->res);
    /* The COMMIT of the read transaction closes the cursor too. */
    int commit = c->own_tx && --b->read_tx == 0 && !b->in_tx;
    if (PQstatus(b->conn) == CONNECTION_OK) {
        char sql[48];
        (void)rs_fmt(sql, sizeof sql, "CLOSE %s", c->name); /* name: 24 bytes */
        pg_exec_plain(b, commit ? "COMMIT" : sql, NULL);
    }
    rs_buf_release(&base->line);
    free(c);
}

void pg_cursor_fixed(rs_cursor *base)
{
    ((pg_cursor *)base)->fixed = 1;
}

int pg_cursor_new(rs_backend *b, const char *sql, const pg_args *a, int log, int64_t start_off,
                  int64_t skip_to, rs_cursor **out, rs_err *err)
{
    pg_cursor *c = calloc(1, sizeof *c);
    rs_buf decl = RS_BUF_INIT;
    if (!c)
        return rs_err_set(err, -ENOMEM, "out of memory");
    c->b = b;
    c->batch = 64;
    (void)rs_fmt(c->name, sizeof c->name, "rc%d", ++b->cursor_seq); /* any int fits */
    if (rs_buf_addf(&decl, "DECLARE %s BINARY NO SCROLL CURSOR FOR %s", c->name, sql)) {
        free(c);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    /* Cursors live in a transaction: the caller's write transaction, or a read one that the
     * last cursor closed commits. BEGIN, DECLARE and the first FETCH go in one pipeline. */
    int begin = !b->in_tx && b->read_tx == 0;
    char fetch[64];
    fetch_sql(c, fetch, sizeof fetch);
    PGresult *r = NULL;
    pg_args ka;
    canon_args(&ka, 0);
    PGresult *k = NULL;
    /* runfs_canon's ranges from the lowest id with them (cursor_fetch). */
    int rc = pg_pipe_start(b, err);
    if (!rc && !(rc = begin ? pg_run(b, "BEGIN", NULL, NULL, err) : 0) &&
        !(rc = pipe_send(b, decl.buf, a, 0, NULL, err)) &&
        !(rc = pg_run(b, fetch, NULL, &r, err)) &&
        !(rc = b->has_canon ? pg_run(b, canon_sql(b), &ka, &k, err) : 0))
        rc = pg_pipe_run(b, err);
    else if (b->piped)
        pg_pipe_run(b, NULL);
    rs_buf_release(&decl);
    if (rc) {
        PQclear(r);
        PQclear(k);
        if (begin && PQstatus(b->conn) == CONNECTION_OK)
            pg_exec_plain(b, "ROLLBACK", NULL);
        free(c);
        return rc;
    }
    if (!b->in_tx) {
        b->read_tx++;
        c->own_tx = 1;
    }
    cursor_batch(c, r);
    if (b->has_canon)
        canon_take(&c->canon, k, 0);
    c->base.next = cursor_next;
    c->base.free = cursor_free;
    c->base.line = (rs_buf)RS_BUF_INIT;
    c->log = log;
    c->next_off = start_off;
    c->skip_to = skip_to;
    *out = &c->base;
    return 0;
}

/* ---- opening ---- */

/* A value as a URI part: every byte but unreserved ones and '/' (host paths read as they
 * are) percent-encoded, so '&', '=', ',' (which would split a mount's fsname) and spaces
 * cannot run into the next part. */
static int add_uri_part(rs_buf *out, const char *v)
{
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)v; !rc && *p; p++)
        rc = (isalnum(*p) || strchr("-._~/", *p)) ? rs_buf_addch(out, (char)*p)
                                                  : rs_buf_addf(out, "%%%02X", *p);
    return rc;
}

/* libpq marks a secret option's dispchar "*"; password and sslpassword go whatever the
 * library says of them. */
static int pg_option_secret(const PQconninfoOption *o)
{
    return (o->dispchar && strchr(o->dispchar, '*')) || strcmp(o->keyword, "password") == 0 ||
           strcmp(o->keyword, "sslpassword") == 0;
}

/* Keep o's value in *user, *host, *port or *db when o is one of those connection parts. */
static void note_part(const PQconninfoOption *o, const char **user, const char **host,
                      const char **port, const char **db)
{
    if (strcmp(o->keyword, "user") == 0)
        *user = o->val;
    else if (strcmp(o->keyword, "host") == 0)
        *host = o->val;
    else if (strcmp(o->keyword, "port") == 0)
        *port = o->val;
    else if (strcmp(o->keyword, "dbname") == 0)
        *db = o->val;
}

/* A PostgreSQL URI without its password. */
static char *pg_uri_display(const char *uri)
{
    /* Built from libpq's own parse, never from the text: a secret in any spelling (in the
     * authority, as a parameter, percent-encoded) is in no field shown. */
    PQconninfoOption *opts = PQconninfoParse(uri, NULL);
    if (!opts)
        return strdup("postgresql://(a URI libpq cannot parse)");
    const char *user = NULL, *host = NULL, *port = NULL, *db = NULL;
    int secrets = 0;
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (o->val && pg_option_secret(o))
            secrets = 1;
        if (!o->val || pg_option_secret(o))
            continue;
        note_part(o, &user, &host, &port, &db);
    }
    /* A URI without a secret is shown as it was written (libpq read no secret in it). */
    if (!secrets && strstr(uri, "://")) {
        PQconninfoFree(opts);
        return strdup(uri);
    }
    /* A plain host name stays in the authority; socket directories and lists of hosts read
     * better as parameters, as libpq's documentation writes them. */
    int host_in_query = host && (strchr(host, '/') || strchr(host, ',') || host[0] == '@');
    int port_in_query = port && strchr(port, ',');
    rs_buf out = RS_BUF_INIT;
    int rc = rs_buf_addstr(&out, "postgresql://");
    if (!rc && user)
        rc = add_uri_part(&out, user) || rs_buf_addch(&out, '@');
    if (!rc && host && !host_in_query)
        rc = add_uri_part(&out, host);
    if (!rc && port && !port_in_query)
        rc = rs_buf_addch(&out, ':') || add_uri_part(&out, port);
    if (!rc)
        rc = rs_buf_addch(&out, '/');
    if (!rc && db)
        rc = add_uri_part(&out, db);
    char sep = '?';
    for (PQconninfoOption *o = opts; !rc && o->keyword; o++) {
        if (!o->val || pg_option_secret(o) || o->val == user || o->val == db ||
            (o->val == host && !host_in_query) || (o->val == port && !port_in_query))
            continue;
        rc = rs_buf_addch(&out, sep) || add_uri_part(&out, o->keyword) || rs_buf_addch(&out, '=') ||
             add_uri_part(&out, o->val);
        sep = '&';
    }
    PQconninfoFree(opts);
    if (rc) {
        rs_buf_release(&out);
        return NULL;
    }
    return rs_buf_detach(&out, NULL);
}

/* Without password or socket directory: user, host (when not a path), port and database, as
 * postgresql://USER@HOST:PORT/DB, from libpq's own parse, so the URI's every spelling (host
 * in the authority or as ?host=, percent-encoded) gives one name. */
static char *pg_uri_name(const char *uri)
{
    PQconninfoOption *opts = PQconninfoParse(uri, NULL);
    if (!opts)
        return strdup("postgresql://");
    const char *user = NULL, *host = NULL, *port = NULL, *db = NULL;
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val || !o->val[0])
            continue;
        note_part(o, &user, &host, &port, &db);
    }
    /* A host that is a socket directory (or an abstract socket) is a host path. */
    if (host && (strchr(host, '/') || host[0] == '@'))
        host = NULL;
    rs_buf out = RS_BUF_INIT;
    int rc = rs_buf_addf(&out, "postgresql://%s%s%s%s%s/%s", user ? user : "", user ? "@" : "",
                         host ? host : "", port ? ":" : "", port ? port : "", db ? db : "");
    PQconninfoFree(opts);
    if (rc) {
        rs_buf_release(&out);
        return NULL;
    }
    return rs_buf_detach(&out, NULL);
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : isxdigit((unsigned char)c) ? (c | 0x20) - 'a' + 10 : -1;
}

/* Add v (n bytes) to the list of secrets *list (NUL-separated), as written and then as
 * libpq decodes it (a '%' not followed by two hex digits is kept). */
static int add_secret(rs_buf *list, const char *v, size_t n)
{
    if (!n)
        return 0;
    int rc = rs_buf_add(list, v, n) || rs_buf_addch(list, '\0');
    for (size_t i = 0; !rc && i < n; i++) {
        int hi = i + 2 < n && v[i] == '%' ? hex_digit(v[i + 1]) : -1;
        int lo = hi >= 0 ? hex_digit(v[i + 2]) : -1;
        rc = rs_buf_addch(list, lo >= 0 ? (char)(hi * 16 + lo) : v[i]);
        i += lo >= 0 ? 2 : 0;
    }
    return rc || rs_buf_addch(list, '\0');
}

/* Whether the query key k (n bytes, as written) names an option libpq keeps secret. */
static int secret_key(const char *k, size_t n)
{
    /* The key as written, then decoded (add_secret's two strings). */
    rs_buf key = RS_BUF_INIT;
    int secret = n == 8 && strncmp(k, "password", n) == 0;
    secret = secret || (n == 11 && strncmp(k, "sslpassword", n) == 0);
    PQconninfoOption *defs = PQconndefaults();
    const char *decoded = !add_secret(&key, k, n) && key.buf ? key.buf + n + 1 : NULL;
    for (PQconninfoOption *o = defs; decoded && o && o->keyword && !secret; o++)
        secret = pg_option_secret(o) && strcmp(decoded, o->keyword) == 0;
    PQconninfoFree(defs);
    rs_buf_release(&key);
    return secret;
}

/* What of uri may be a secret, read from its text (a URI libpq cannot parse has no parse to
 * read them from, and libpq's reason may quote it): the authority's password, ending at the
 * first '@' before a '/' as libpq reads it or at the last '@' (a '/' in an unencoded
 * password), and the value of every secret option in the query; then the secrets of
 * libpq's parse, opts. */
static int uri_secrets(rs_buf *list, const char *uri, const PQconninfoOption *opts)
{
    const char *s = strstr(uri, "://");
    int rc = 0;
    if (s) {
        s += 3;
        const char *at = s + strcspn(s, "@/"), *last = strrchr(s, '@');
        const char *ends[] = {*at == '@' ? at : NULL, last};
        for (size_t i = 0; !rc && i < 2; i++) {
            const char *colon = ends[i] ? memchr(s, ':', (size_t)(ends[i] - s)) : NULL;
            if (colon)
                rc = add_secret(list, colon + 1, (size_t)(ends[i] - colon - 1));
        }
        for (const char *q = strchr(s, '?'); !rc && q && *q; q += strcspn(q, "&")) {
            q++;
            size_t len = strcspn(q, "&"), klen = strcspn(q, "=&");
            if (klen < len && secret_key(q, klen))
                rc = add_secret(list, q + klen + 1, len - klen - 1);
        }
    }
    for (const PQconninfoOption *o = opts; !rc && o && o->keyword; o++)
        if (o->val && pg_option_secret(o))
            rc = add_secret(list, o->val, strlen(o->val));
    return rc;
}

/* msg with every secret of list (uri_secrets) replaced by "***", the longest first where
 * two start at one place. */
static int scrub_secrets(rs_buf *out, const char *msg, const rs_buf *list)
{
    int rc = 0;
    for (const char *m = msg; !rc && *m;) {
        size_t best = 0;
        for (size_t off = 0; off < list->len; off += strlen(list->buf + off) + 1) {
            size_t n = strlen(list->buf + off);
            if (n > best && strncmp(m, list->buf + off, n) == 0)
                best = n;
        }
        rc = best ? rs_buf_addstr(out, "***") : rs_buf_addch(out, *m);
        m += best ? best : 1;
    }
    return rc || rs_buf_addch(out, '\0');
}

static int connect_fail(PGconn *conn, const char *uri, rs_err *err)
{
    /* A secret goes before the message is cut to a line (a cut one would not be found). */
    PQconninfoOption *opts = PQconninfoParse(uri, NULL);
    rs_buf list = RS_BUF_INIT, why = RS_BUF_INIT;
    const char *full = conn ? PQerrorMessage(conn) : "out of memory";
    if (uri_secrets(&list, uri, opts) || scrub_secrets(&why, full, &list)) {
        rs_buf_release(&why);
        full = "out of memory";
    } else {
        full = why.buf;
    }
    char line[400];
    const char *msg = first_line(full, line, sizeof line);
    rs_buf_release(&list);
    rs_buf_release(&why);
    int parsed = opts != NULL;
    PQconninfoFree(opts);
    if (!parsed)
        return rs_err_set(err, -EINVAL, "invalid PostgreSQL URI: %s", msg);
    int code = -EIO;
    if (strstr(msg, "does not exist"))
        code = -ENOENT;
    else if (strstr(msg, "authentication") || strstr(msg, "password") ||
             strstr(msg, "permission denied"))
        code = -EACCES;
    else if (strstr(msg, "invalid") || strstr(msg, "missing") || strstr(msg, "unrecognized"))
        code = -EINVAL;
    char *shown = pg_uri_display(uri);
    rs_err_set(err, code, "cannot connect to %s: %s", shown ? shown : "the database", msg);
    free(shown);
    return code;
}

/* What of runfs's schema the database holds: *layout 0 without side tables. */
typedef struct pg_schema_state {
    int events, hwm, idem, canon, tree, salt, expired;
    int rewrites; /* runfs_note_update and runfs_rewritten are there */
    int ix_make;  /* runfs_ix_terminal is missing and this role may make it (read-write) */
    int uq_drop;  /* an older build's unique index is there and this role may drop it (r-w) */
    int standby;  /* the server is a standby (asked here: a round trip less at opening) */
    int tail;     /* runfs_tail is there */
    int64_t layout;
} pg_schema_state;

/* Whether run_events' owner may change its indexes (ix_make, uq_drop), asked of a read-write
 * open only: a read-only one changes nothing, and the two look-ups of pg_class (each planned
 * in the fresh server process: about a millisecond of its CPU) were a sixth of what the
 * server spent on a `runfs search` of a rare word. */
#define PG_RW_INDEXES \
    "to_regclass('runfs_ix_terminal') IS NULL AND " PG_OWNS_EVENTS ", " \
    "to_regclass('runfs_uq_terminal') IS NOT NULL AND " PG_OWNS_EVENTS ", "
#define PG_RO_INDEXES "false, false, "

/* With session, the session's settings go first in the same message (the opening's one
 * round trip for both: simple protocol, whose answer is the last statement's). */
static int schema_state(rs_backend *b, pg_schema_state *st, int session, rs_err *err)
{
    char set[PG_SESSION_MAX];
    *set = '\0';
    if (session)
        session_sql(b, set);
    rs_buf q = RS_BUF_INIT;
    if (rs_buf_addf(&q,
                    "%sSELECT to_regclass('run_events') IS NOT NULL, "
                    "to_regclass('run_event_thread_seq') IS NOT NULL, "
                    "to_regclass('runfs_idem') IS NOT NULL, "
                    "to_regclass('runfs_meta') IS NOT NULL, "
                    "to_regclass('runfs_canon') IS NOT NULL, "
                    "to_regclass('runfs_seal_tree') IS NOT NULL, "
                    "to_regclass('runfs_seal_salt') IS NOT NULL AND "
                    "to_regclass('runfs_redaction') IS NOT NULL, "
                    "to_regclass('runfs_expired') IS NOT NULL, "
                    "EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'runfs_note_update' AND "
                    "tgrelid = to_regclass('run_events')) AND "
                    "to_regclass('runfs_rewritten') IS NOT NULL, "
                    "%spg_is_in_recovery(), to_regclass('runfs_tail') IS NOT NULL",
                    set, b->read_only ? PG_RO_INDEXES : PG_RW_INDEXES)) {
        rs_buf_release(&q);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    PGresult *r = PQexec(b->conn, q.buf);
    rs_buf_release(&q);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int rc = fail_result(b, r, err, session ? "session" : "query");
        PQclear(r);
        return rc;
    }
    st->events = PQgetvalue(r, 0, 0)[0] == 't';
    st->hwm = PQgetvalue(r, 0, 1)[0] == 't';
    st->idem = PQgetvalue(r, 0, 2)[0] == 't';
    int side = PQgetvalue(r, 0, 3)[0] == 't';
    st->canon = PQgetvalue(r, 0, 4)[0] == 't';
    st->tree = PQgetvalue(r, 0, 5)[0] == 't';
    st->salt = PQgetvalue(r, 0, 6)[0] == 't';
    st->expired = PQgetvalue(r, 0, 7)[0] == 't';
    st->rewrites = PQgetvalue(r, 0, 8)[0] == 't';
    st->ix_make = PQgetvalue(r, 0, 9)[0] == 't';
    st->uq_drop = PQgetvalue(r, 0, 10)[0] == 't';
    st->standby = PQgetvalue(r, 0, 11)[0] == 't';
    st->tail = PQgetvalue(r, 0, 12)[0] == 't';
    PQclear(r);
    st->layout = 0;
    return side ? pg_int(b, "SELECT value FROM runfs_meta WHERE key = 'layout'", NULL, NULL,
                         &st->layout, NULL, err)
                : 0;
}

static int schema_complete(const pg_schema_state *st)
{
    return st->events && st->hwm && st->idem && st->tree && st->salt && st->expired &&
           st->layout == PG_LAYOUT && st->rewrites && !st->ix_make && !st->uq_drop;
}

/* Create what is missing and convert an older layout, once, under the set-up lock (other
 * first mounts wait, then find it done). */
static int schema_setup(rs_backend *b, rs_err *err)
{
    pg_schema_state st;
    int rc = pg_exec_plain(b, "BEGIN", err);
    if (rc)
        return rc;
    b->in_tx = 1;
    if ((rc = pg_exec_plain(b, "SELECT pg_advisory_xact_lock(" PG_SETUP_LOCK ")", err)) ||
        (rc = schema_state(b, &st, 0, err)))
        goto fail;
    int older = st.layout < PG_LAYOUT_CANON;
    if ((!st.events && (rc = pg_exec_plain(b, pg_schema_deerflow_sql, err))) ||
        (!st.hwm && (rc = pg_exec_plain(b, pg_schema_hwm_sql, err))) ||
        (older && (rc = pg_exec_plain(b, pg_schema_note_sql, err))) ||
        (!st.layout && ((rc = pg_exec_plain(b, pg_schema_side_sql, err)) ||
                        (rc = pg_exec_plain(b, pg_schema_owned_sql, err)))) ||
        (st.layout == 1 && ((rc = pg_exec_plain(b, pg_schema_migrate_sql, err)) ||
                            (rc = pg_exec_plain(b, pg_schema_owned_sql, err)) ||
                            (rc = pg_exec_plain(b, pg_schema_migrate_copy_sql, err)))) ||
        (older && (rc = pg_exec_plain(b, pg_schema_canon_sql, err))) ||
        (!st.idem && (rc = pg_exec_plain(b, pg_schema_idem_sql, err))) ||
        (!st.tree && (rc = pg_exec_plain(b, pg_schema_tree_sql, err))) ||
        ((st.layout < PG_LAYOUT || !st.salt || !st.expired) &&
         (rc = pg_exec_plain(b, pg_schema_salt_sql, err))) ||
        (!st.rewrites && (rc = pg_exec_plain(b, pg_schema_rewrites_sql, err))) ||
        (st.uq_drop && (rc = pg_exec_plain(b, pg_schema_uq_drop_sql, err))) ||
        (st.ix_make && (rc = pg_exec_plain(b, pg_schema_terminal_sql, err))))
        goto fail;
    return pg_commit(b, err);
fail:
    pg_rollback(b);
    return rc;
}

/* The threads of run_events, by index probes, each to be indexed at its first use (the side
 * schema's own statement, also for threads added since). */
static const char scratch_threads_sql[] =
    "WITH RECURSIVE d(id) AS (SELECT min(thread_id) FROM run_events UNION ALL SELECT (SELECT "
    "min(thread_id) FROM run_events WHERE thread_id > d.id) FROM d WHERE d.id IS NOT NULL) "
    "INSERT INTO runfs_thread (thread_id, dirty) SELECT id, 1 FROM d WHERE id IS NOT NULL "
    "ON CONFLICT (thread_id) DO NOTHING";

/* A read-only open of a database runfs never opened read-write: runfs's tables made as TEMP
 * tables of this session from the schema's own CREATE TABLE and CREATE INDEX statements
 * (and run_event_thread_seq's backfill where DeerFlow has none), found first by every
 * unqualified name; nothing is written to the database. */
static int scratch_setup(rs_backend *b, rs_err *err)
{
    const char *const scripts[] = {pg_schema_side_sql, pg_schema_owned_sql,
                                   pg_schema_idem_sql, pg_schema_tree_sql,
                                   pg_schema_salt_sql, b->scratch_hwm ? pg_schema_hwm_sql : ""};
    rs_buf q = RS_BUF_INIT;
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof scripts / sizeof *scripts; i++)
        for (const char *p = scripts[i]; !rc && *p;) {
            const char *end = strstr(p, ";\n");
            int len = (int)(end ? end - p : (ptrdiff_t)strlen(p));
            if (strncmp(p, "CREATE TABLE ", 13) == 0)
                rc = rs_buf_addf(&q, "CREATE TEMP TABLE %.*s;\n", len - 13, p + 13);
            else if (strncmp(p, "CREATE INDEX ", 13) == 0 ||
                     (scripts[i] == pg_schema_hwm_sql && strncmp(p, "WITH RECURSIVE ", 15) == 0))
                rc = rs_buf_addf(&q, "%.*s;\n", len, p);
            p += len + (end ? 2 : 0);
        }
    if (!rc)
        rc = rs_buf_addf(&q,
                         "INSERT INTO runfs_meta (key, value) VALUES ('layout', %d), "
                         "('rewrites', 0);\n%s",
                         PG_LAYOUT, scratch_threads_sql);
    if (rc) {
        rs_buf_release(&q);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    rc = pg_exec_plain(b, q.buf, err);
    rs_buf_release(&q);
    b->scratch = !rc;
    return rc;
}

/* A thread of a scratch open, indexed where its rows are not as its copy last saw them
 * (highest seq, count, highest id, and the sum of the rows' xmin: no trigger tells this
 * session what other writers did, and an UPDATE in place moves none of the others but
 * gives the row the xmin of the transaction that made it). */
static int scratch_ready(rs_backend *b, const char *thread_id, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    PGresult *r;
    int rc = pg_run(b,
                    "SELECT coalesce(max(seq), 0) || ' ' || count(*) || ' ' || "
                    "coalesce(max(id), 0) || ' ' || coalesce(sum(xmin::text::bigint), 0) "
                    "FROM run_events WHERE thread_id = $1",
                    &a, &r, err);
    if (rc)
        return rc;
    char state[sizeof((rs_mem_thread *)0)->state];
    int fits = rs_fmt(state, sizeof state, "%s", PQgetvalue(r, 0, 0)) >= 0;
    PQclear(r);
    rs_mem_thread *t = rs_mem_find(&b->mem_list, thread_id, 0);
    if ((fits && t && strcmp(t->state, state) == 0) || b->read_tx)
        return 0;
    if (!t && !(t = rs_mem_find(&b->mem_list, thread_id, 1)))
        return rs_err_set(err, -ENOMEM, "out of memory");
    t->state[0] = '\0';
    if ((rc = pg_exec_plain(b, "BEGIN", err)))
        return rc;
    b->in_tx = 1;
    pg_log thr;
    int found = 0;
    if (!(rc = pg_run(b,
                      "INSERT INTO runfs_thread (thread_id, dirty) VALUES ($1, 1) "
                      "ON CONFLICT (thread_id) DO UPDATE SET dirty = 1",
                      &a, NULL, err)) &&
        !(rc = pg_log_load(b, thread_id, NULL, 0, 0, &thr, &found, err)) && found) {
        thr.dirty = 1;
        rc = pg_thread_catch_up(b, thread_id, &thr, &found, err);
    }
    if (rc) {
        pg_rollback(b);
        return rc;
    }
    if ((rc = pg_commit(b, err)))
        return rc;
    if (fits)
        (void)rs_fmt(t->state, sizeof t->state, "%s", state);
    return 0;
}

int pg_scratch_threads(rs_backend *b, rs_err *err)
{
    return b->scratch ? pg_run(b, scratch_threads_sql, NULL, NULL, err) : 0;
}

static void pg_close(rs_backend *b);

/* The server's notices (and the last words of a session it ends) are not the mount's
 * output: what matters reaches the caller as an errno and a reason. */
static void notice_drop(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
}

/* The session's connect_timeout (the URI's or runfs's default), as the time a read waits
 * for the server to come back. */
static int64_t conn_timeout_ns(PGconn *conn)
{
    int64_t secs = 10;
    PQconninfoOption *opts = PQconninfo(conn);
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if (strcmp(o->keyword, "connect_timeout") == 0 && o->val && o->val[0])
            secs = strtoll(o->val, NULL, 10);
    PQconninfoFree(opts);
    return (secs > 0 ? secs : 10) * 1000000000LL;
}

/* A connection the server could not take now, as a restart refuses it (no socket, refused,
 * starting up, shutting down), not one it turned away (no such role or database, a
 * password) nor a URI libpq cannot parse: libpq says so only in words. */
static int connect_again(PGconn *conn)
{
    const char *msg = PQerrorMessage(conn);
    if (!strstr(msg, "connection to server") && !strstr(msg, "could not connect to server"))
        return 0;
    return !strstr(msg, "FATAL") || strstr(msg, "the database system is");
}

static int pg_open(rs_backend **out, const char *uri, const rs_options *opt,
                   const rs_policy *policy, rs_err *err)
{
    rs_backend *b = calloc(1, sizeof *b);
    if (!b)
        return rs_err_set(err, -ENOMEM, "out of memory");
    b->policy = policy;
    b->sql = (rs_buf)RS_BUF_INIT;
    b->pid = (long)getpid();
    b->started = rs_process_start(b->pid);
    b->read_only = opt->read_only;
    b->dirty_seen = -1;
    b->sync_full = opt->sync_full;
    b->owners_apart = opt->owners_apart;
    b->progress = opt->progress;
    b->progress_ctx = opt->progress_ctx;
    b->notice = opt->notice;
    b->notice_ctx = opt->notice_ctx;
    if (gethostname(b->host, sizeof b->host) != 0)
        memcpy(b->host, "?", 2);
    b->host[sizeof b->host - 1] = '\0';
    int rc;
    /* connect_timeout comes first so that the URI's own value overrides it. */
    static const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *vals[] = {"10", "runfs", uri, NULL};
    b->conn = PQconnectdbParams(keys, vals, 1);
    if (b->conn && PQstatus(b->conn) != CONNECTION_OK && connect_again(b->conn)) {
        /* The server down (a restart): a connection opened now, a mount's next one while
         * another waits for the server, waits for it as ensure_conn does. */
        int64_t deadline = rs_clock_ns(CLOCK_MONOTONIC) + conn_timeout_ns(b->conn);
        while (b->conn && PQstatus(b->conn) != CONNECTION_OK && connect_again(b->conn) &&
               pause_until(deadline)) {
            PQfinish(b->conn);
            b->conn = PQconnectdbParams(keys, vals, 1);
        }
    }
    if (!b->conn || PQstatus(b->conn) != CONNECTION_OK) {
        rc = connect_fail(b->conn, uri, err);
        goto fail;
    }
    PQsetNoticeProcessor(b->conn, notice_drop, NULL);
    b->wait_ns = conn_timeout_ns(b->conn);
    pg_schema_state st;
    if ((rc = schema_state(b, &st, 1, err)))
        goto fail;
    b->standby = st.standby;
    if (b->standby && !b->read_only) {
        rc = rs_err_set(err, -EROFS, "the server is a read-only standby: mount it with -o ro");
        goto fail;
    }
    if (st.layout > PG_LAYOUT) {
        rc = rs_err_set(err, -EINVAL,
                        "the store's runfs tables have layout %lld, newer than this runfs "
                        "knows (%d): not opened",
                        (long long)st.layout, PG_LAYOUT);
        goto fail;
    }
    if (b->read_only && !st.events) {
        rc = rs_err_set(err, -ENOENT,
                        "the database has no run_events table: a read-only open creates nothing");
        goto fail;
    }
    b->scratch_hwm = !st.hwm;
    if (b->read_only && !st.layout && (rc = scratch_setup(b, err)))
        goto fail;
    if (b->read_only && st.layout && st.layout < PG_LAYOUT_READ) {
        rc = rs_err_set(err, -ENOENT,
                        "the store's runfs tables have layout %lld, older than this runfs "
                        "reads (%d): a read-only open converts nothing (open it read-write once)",
                        (long long)st.layout, PG_LAYOUT_READ);
        goto fail;
    }
    /* A read-only open of a store without runfs_canon renders every row. */
    b->has_canon = !b->read_only || (st.canon && st.layout >= PG_LAYOUT_CANON);
    b->has_tree = !b->read_only || st.tree;
    b->has_salt = !b->read_only || st.salt;
    b->has_expired = !b->read_only || st.expired;
    b->has_tcount = !b->read_only || st.rewrites;
    b->has_tail = !b->read_only || st.tail;
    if (!b->read_only && !schema_complete(&st) && (rc = schema_setup(b, err))) {
        if (err) {
            char why[sizeof err->msg];
            (void)rs_fmt(why, sizeof why, "%s", err->msg);
            rs_err_set(err, rc, "cannot set up the runfs tables: %s", why);
        }
        goto fail;
    }
    /* A tail left while no runfs process ran (DeerFlow writing alone) is folded here. */
    if (!b->read_only && ((rc = pg_changes_setup(b, err)) || (rc = pg_tail_apply(b, NULL, 1, err))))
        goto fail;
    /* Nothing is indexed here: a thread is, at its first use. */
    b->progress = NULL;
    *out = b;
    return 0;
fail:
    pg_close(b);
    return rc;
}

static void pg_close(rs_backend *b)
{
    if (!b)
        return;
    if (b->conn && PQstatus(b->conn) == CONNECTION_OK && !b->read_only) {
        pg_args a = {.n = 0};
        pg_arg_text(&a, b->host);
        pg_arg_int(&a, b->pid);
        pg_run(b, "DELETE FROM runfs_hold WHERE host = $1 AND pid = $2", &a, NULL, NULL);
    }
    pg_log_forget(b);
    for (int i = 0; i < PG_STMT_CACHE; i++)
        free(b->cache[i].sql);
    rs_mem_release(&b->mem_list);
    PQfinish(b->conn);
    rs_buf_release(&b->sql);
    free(b);
}

/* What moves when rows are changed in place or deleted. runfs's triggers count them in
 * runfs_meta's 'rewrites'; a scratch open has none in the database, so it counts what
 * PostgreSQL's statistics say of run_events instead: those move when the writer's backend
 * reports them (at its transaction's end when idle, at least a second apart, else within
 * PGSTAT_IDLE_INTERVAL, 10 s), never with track_counts off (man page, "ro"). */
/* A row of the tail not noted yet at or below its thread's indexed seq is one put back (by a
 * writer without DeerFlow's lock, with an id above the watermark): no trigger counted it as
 * a rewrite, and a writer's note will (pg_changes.c). A read-only open cannot note it, so its
 * rewrites count adds the ids of such rows where cond (on e) holds: a reader that read across
 * one is ESTALE, never a splice of two renderings (noted or deleted again, the sum moves). */
#define PUTBACK_IDS(cond) \
    "(SELECT coalesce(sum(e.id), 0) FROM (SELECT e.id, e.thread_id, e.seq FROM run_events e " \
    "WHERE " PG_TAIL_ROW( \
        "e") " OFFSET 0) e WHERE " cond " AND e.seq <= coalesce((SELECT " \
             "t.last_seq FROM runfs_thread t WHERE t.thread_id = e.thread_id), 0))"

static int putback_seen(const rs_backend *b)
{
    return b->read_only && b->has_tail;
}

static const char *rewrites_expr(const rs_backend *b)
{
    return b->scratch ? "coalesce((SELECT n_tup_upd + n_tup_del FROM pg_stat_user_tables "
                        "WHERE relid = 'run_events'::regclass), -1)"
           : putback_seen(b)
               ? "coalesce((SELECT value FROM @runfs_meta WHERE key = 'rewrites'), -1) + " PUTBACK_IDS(
                     "true")
               : "coalesce((SELECT value FROM @runfs_meta WHERE key = 'rewrites'), -1)";
}

/* The change feed: notifications other mounts' commits sent, and one cheap probe for rows
 * writers that never notify (DeerFlow) added or deleted (the highest id, the threads the
 * triggers marked). Any change moves the number. */
static int pg_data_version(rs_backend *b, int64_t *version)
{
    if (ensure_conn(b, NULL))
        return -EIO;
    /* A standby takes no LISTEN: its rows come by replay, found by the probe below. */
    if (!b->listening && !b->standby) {
        if (pg_exec_plain(b, "LISTEN " PG_CHANNEL, NULL))
            return -EIO;
        b->listening = 1;
    }
    PQconsumeInput(b->conn);
    PGnotify *n;
    while ((n = PQnotifies(b->conn))) {
        b->notified++;
        PQfreemem(n);
    }
    /* A writer notes the tail first (its marks are then counted below); a reader counts
     * the rows of it not noted, which its reads take for marks (PG_TAIL_DIRTY). */
    int writer = !b->read_only && b->has_tail && !b->in_tx && !b->read_tx && !b->piped;
    if (writer && pg_tail_apply(b, NULL, 1, NULL))
        return -EIO;
    PGresult *r;
    rs_buf q = RS_BUF_INIT;
    int rc = rs_buf_addf(&q,
                         "SELECT coalesce((SELECT max(id) FROM run_events), 0), "
                         "(SELECT count(*) FROM @runfs_thread WHERE dirty <> 0), %s, %s",
                         rewrites_expr(b), b->has_tail && !writer ? PG_TAIL_UNNOTED("true") : "0");
    rc = rc ? rc : pg_side_sql(b, q.buf, NULL);
    rs_buf_release(&q);
    if (rc || pg_run(b, b->sql.buf, NULL, &r, NULL))
        return -EIO;
    int64_t v = pg_val_int(r, 0, 0);
    b->dirty_seen = pg_val_int(r, 0, 1);
    v = v * 1000003 + b->dirty_seen;
    /* A row changed in place and its thread recomputed between two probes moves neither
     * of those. */
    v = v * 1000003 + pg_val_int(r, 0, 2);
    v = v * 1000003 + pg_val_int(r, 0, 3);
    v = v * 1000003 + b->notified;
    PQclear(r);
    *version = v;
    return 0;
}

/* ---- read-only: the facts of the threads in use, in memory ---- */

/* runfs_thread as a reader of every thread sees it (a read-only open, which cannot note the
 * tail, and a writer between two looks): the real table with the marks the tail's rows not noted yet
 * would leave (runfs_note_ids's), and a thread only they are in (its key above every real
 * one, below the memory copies'), to be indexed. '@' is the real tables' schema. */
static const char tail_threads[] =
    "(SELECT t.thread_key, t.thread_id, t.mixed, t.size, t.count, t.messages, t.last_seq, "
    "t.ctime_ns, t.mtime_ns, t.mark_off, CASE WHEN t.dirty = 1 OR k.lo <= t.last_seq THEN 1 "
    "WHEN k.lo IS NOT NULL THEN 2 ELSE t.dirty END AS dirty FROM @runfs_thread t LEFT JOIN "
    "" TAIL_THREADS " k ON k.thread_id = t.thread_id UNION ALL SELECT 2305843009213693952 + "
    "k.first, k.thread_id, 0, 0, 0, 0, 0, 0, 0, -1, 2 FROM " TAIL_THREADS " k WHERE NOT "
    "EXISTS (SELECT 1 FROM @runfs_thread t WHERE t.thread_id = k.thread_id))";

static int side_add(rs_backend *b, const char *sql, int tail)
{
    static const char name[] = "@runfs_thread";
    for (const char *p = sql; *p; p++) {
        size_t n = sizeof name - 1;
        if (tail && strncmp(p, name, n) == 0 && !(isalnum((unsigned char)p[n]) || p[n] == '_')) {
            /* Named as the table where the statement gives it no name of its own. */
            if (side_add(b, tail_threads, 0) ||
                (strncmp(p + n, " WHERE ", 7) == 0 && rs_buf_addstr(&b->sql, " runfs_thread")))
                return -ENOMEM;
            p += n - 1;
        } else if (*p == '@' ? rs_buf_addstr(&b->sql, b->side) : rs_buf_addch(&b->sql, *p)) {
            return -ENOMEM;
        }
    }
    return 0;
}

int pg_side_sql(rs_backend *b, const char *sql, rs_err *err)
{
    rs_buf_reset(&b->sql);
    return side_add(b, sql, b->has_tail) ? rs_err_set(err, -ENOMEM, "out of memory") : 0;
}

static const char *const mem_tables[] = {"runfs_thread", "runfs_run", "runfs_owner", "runfs_mark"};

/* TEMP tables shaped as runfs's, which shadow them for this session (their keys from a
 * sequence of their own, far above the database's), empty; prepared statements made
 * before name the real ones, so they go. */
static int mem_setup(rs_backend *b, rs_err *err)
{
    PGresult *r;
    int rc = pg_run(b, "SELECT quote_ident(current_schema())", NULL, &r, err);
    if (rc)
        return rc;
    char schema[sizeof b->side - 1];
    if (rs_fmt(schema, sizeof schema, "%s", PQgetvalue(r, 0, 0)) < 0) {
        PQclear(r);
        return rs_err_set(err, -ENAMETOOLONG, "the current schema's name is too long");
    }
    PQclear(r);
    rs_buf q = RS_BUF_INIT;
    for (size_t i = 0; !rc && i < sizeof mem_tables / sizeof *mem_tables; i++)
        rc = rs_buf_addf(&q,
                         "CREATE TEMP TABLE %s (LIKE %s.%s INCLUDING DEFAULTS INCLUDING "
                         "INDEXES); ",
                         mem_tables[i], schema, mem_tables[i]);
    if (!rc)
        rc = rs_buf_addstr(
            &q, "CREATE TEMP SEQUENCE runfs_mem_key START 4611686018427387904; "
                "ALTER TABLE pg_temp.runfs_thread ALTER thread_key SET DEFAULT "
                "nextval('pg_temp.runfs_mem_key'); ALTER TABLE pg_temp.runfs_run ALTER run_key "
                "SET DEFAULT nextval('pg_temp.runfs_mem_key'); DEALLOCATE ALL");
    if (rc) {
        rs_buf_release(&q);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    rc = pg_exec_plain(b, q.buf, err);
    rs_buf_release(&q);
    if (rc)
        return rc;
    for (int i = 0; i < PG_STMT_CACHE; i++) {
        free(b->cache[i].sql);
        b->cache[i].sql = NULL;
    }
    (void)rs_fmt(b->side, sizeof b->side, "%s.", schema); /* schema is one shorter */
    b->mem = 1;
    return 0;
}

/* Statements with $1 the thread's id, run in turn (sql ends each with a NUL, the list with
 * two); '@' names the real tables. */
static int mem_exec(rs_backend *b, const char *steps, const char *thread_id, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    int rc = 0;
    for (const char *p = steps; !rc && *p; p += strlen(p) + 1)
        if (!(rc = pg_side_sql(b, p, err)))
            rc = pg_run(b, b->sql.buf, &a, NULL, err);
    return rc;
}

/* The thread's copy replaced by what the real tables hold of it now. */
static const char mem_drop[] =
    "DELETE FROM pg_temp.runfs_mark WHERE log_key IN (SELECT -thread_key FROM "
    "pg_temp.runfs_thread WHERE thread_id = $1) OR log_key IN (SELECT r.run_key FROM "
    "pg_temp.runfs_run r JOIN pg_temp.runfs_thread t ON t.thread_key = r.thread_key WHERE "
    "t.thread_id = $1)\0"
    "DELETE FROM pg_temp.runfs_owner WHERE thread_key IN (SELECT thread_key FROM "
    "pg_temp.runfs_thread WHERE thread_id = $1)\0"
    "DELETE FROM pg_temp.runfs_run WHERE thread_key IN (SELECT thread_key FROM "
    "pg_temp.runfs_thread WHERE thread_id = $1)\0"
    "DELETE FROM pg_temp.runfs_thread WHERE thread_id = $1\0";
static const char mem_copy[] =
    "INSERT INTO pg_temp.runfs_thread SELECT * FROM @runfs_thread WHERE thread_id = $1\0"
    "INSERT INTO pg_temp.runfs_run SELECT r.* FROM @runfs_run r JOIN @runfs_thread t ON "
    "t.thread_key = r.thread_key WHERE t.thread_id = $1\0"
    "INSERT INTO pg_temp.runfs_owner SELECT o.* FROM @runfs_owner o JOIN @runfs_thread t ON "
    "t.thread_key = o.thread_key WHERE t.thread_id = $1\0"
    "INSERT INTO pg_temp.runfs_mark SELECT m.* FROM @runfs_mark m JOIN @runfs_thread t ON "
    "m.log_key = -t.thread_key WHERE t.thread_id = $1\0"
    "INSERT INTO pg_temp.runfs_mark SELECT m.* FROM @runfs_mark m JOIN @runfs_run r ON "
    "m.log_key = r.run_key JOIN @runfs_thread t ON t.thread_key = r.thread_key WHERE "
    "t.thread_id = $1\0";

/* A copy forgotten (copied again should it be used again). */
static int mem_drop_thread(void *ctx, const char *thread_id)
{
    return mem_exec(ctx, mem_drop, thread_id, NULL);
}

/* Bring the copy level: copied afresh when the real thread's facts changed (or it has none
 * yet), then indexed where they lag its rows; only the rows above the copy when just rows
 * were added. */
static int mem_sync(rs_backend *b, const char *thread_id, int fresh, int64_t dirty, int64_t *rows,
                    rs_err *err)
{
    /* One snapshot for the copy and its catch-up: at READ COMMITTED each statement took
     * its own, so a run committed between the copy of the runs and that of the marks left
     * its marks in the copy without it, which the next copy's drop missed and its INSERT
     * met again (a duplicate key, failing the reader). Only pg_temp is written: no
     * serialization failure can come of it. */
    int rc = pg_exec_plain(b, "BEGIN ISOLATION LEVEL REPEATABLE READ", err), found;
    if (rc)
        return rc;
    b->in_tx = 1;
    pg_log thr;
    if (fresh && !(rc = mem_exec(b, mem_drop, thread_id, err)))
        rc = mem_exec(b, mem_copy, thread_id, err);
    /* A thread only the tail has (pg_mem_ready), to be indexed from its rows. */
    if (!rc && fresh && dirty)
        rc = mem_exec(b,
                      "INSERT INTO pg_temp.runfs_thread (thread_id, dirty) VALUES ($1, 2) ON "
                      "CONFLICT (thread_id) DO NOTHING\0",
                      thread_id, err);
    if (!rc && !(rc = pg_log_load(b, thread_id, NULL, 0, 0, &thr, &found, err)) && found) {
        thr.dirty = fresh ? (int)dirty : 2;
        if (thr.dirty)
            rc = pg_thread_catch_up(b, thread_id, &thr, &found, err);
    }
    *rows = 0;
    if (!rc)
        rc = pg_int(b, "SELECT count FROM pg_temp.runfs_thread WHERE thread_id = $1", thread_id,
                    NULL, rows, NULL, err);
    if (rc) {
        pg_rollback(b);
        return rc;
    }
    return pg_commit(b, err);
}

int pg_mem_ready(rs_backend *b, const char *thread_id, rs_err *err)
{
    if (b->piped || b->in_tx)
        return 0;
    if (b->scratch)
        return scratch_ready(b, thread_id, err);
    /* What the real tables and rows say of the thread: its facts (with its runs, which an
     * empty run made or removed moves while no row does), then its highest seq. */
    /* The thread's rows in the tail that no writer noted yet (this open cannot) count as
     * their marks would (pg_changes.c's runfs_note_ids): a thread they are the first rows of
     * is there, to be indexed. */
    PGresult *r;
    int rc = pg_side_sql(
        b,
        b->has_tail
            ? "SELECT coalesce((SELECT CASE WHEN t.dirty = 1 OR k.lo <= t.last_seq THEN 1 WHEN "
              "k.lo IS NOT NULL THEN 2 ELSE t.dirty END || ' ' || mtime_ns || ' ' || count || ' ' "
              "|| last_seq || ' ' || (SELECT count(*) || ':' || coalesce(max(run_key), 0) FROM "
              "@runfs_run r WHERE r.thread_key = t.thread_key) FROM @runfs_thread t WHERE "
              "thread_id = $1), CASE WHEN k.lo IS NOT NULL THEN '2 0 0 0 0:0' END) || ' ' || "
              "k.sig, (SELECT max(seq) FROM run_events WHERE thread_id = $1) FROM (SELECT "
              "min(e.seq) AS lo, count(*) || ':' || coalesce(max(e.id), 0) AS sig FROM "
              "(SELECT e.id, e.seq, e.thread_id FROM run_events e WHERE " PG_TAIL_ROW(
                  "e") " OFFSET 0) e WHERE e.thread_id = $1) k"
            : "SELECT (SELECT dirty || ' ' || mtime_ns || ' ' || count || ' ' || last_seq || ' ' "
              "|| (SELECT count(*) || ':' || coalesce(max(run_key), 0) FROM @runfs_run r WHERE "
              "r.thread_key = t.thread_key) FROM @runfs_thread t WHERE thread_id = $1), (SELECT "
              "max(seq) FROM run_events WHERE thread_id = $1)",
        err);
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    if (rc || (rc = pg_run(b, b->sql.buf, &a, &r, err)))
        return rc;
    char facts[128], state[sizeof((rs_mem_thread *)0)->state];
    if (rs_fmt(facts, sizeof facts, "%s", PQgetisnull(r, 0, 0) ? "-" : PQgetvalue(r, 0, 0)) < 0 ||
        rs_fmt(state, sizeof state, "%s %s", facts, PQgetvalue(r, 0, 1)) < 0) {
        PQclear(r);
        return rs_err_set(err, -EOVERFLOW, "a thread's change counters are too long");
    }
    PQclear(r);
    int64_t dirty = strtoll(facts, NULL, 10);
    if (!b->mem && (facts[0] == '-' || dirty == 0))
        return 0; /* the real tables are up to date: read there */
    rs_mem_thread *t = rs_mem_find(&b->mem_list, thread_id, 0);
    if ((t && strcmp(t->state, state) == 0) || b->read_tx)
        return 0; /* current; or a cursor's snapshot is open here: the next use copies it */
    if (!b->mem && (rc = mem_setup(b, err)))
        return rc;
    if (!t && !(t = rs_mem_find(&b->mem_list, thread_id, 1)))
        return rs_err_set(err, -ENOMEM, "out of memory");
    /* Only rows added (the facts as at the copy, the highest seq higher): index those
     * above the copy. */
    size_t flen = strlen(facts);
    const char *was = strrchr(t->state, ' ');
    int fresh = !t->state[0] || strncmp(t->state, facts, flen) != 0 || t->state[flen] != ' ' ||
                !was || strtoll(was + 1, NULL, 10) > strtoll(strrchr(state, ' ') + 1, NULL, 10);
    int64_t rows;
    if ((rc = mem_sync(b, thread_id, fresh, dirty, &rows, err))) {
        t->state[0] = '\0';
        return rc;
    }
    memcpy(t->state, state, sizeof t->state);
    size_t dropped;
    if ((rc = rs_mem_trim(&b->mem_list, t, rows, PG_MEM_ROWS, mem_drop_thread, b, &dropped)))
        rc = rs_err_set(err, rc, "cannot forget a thread copied into memory");
    return rc;
}

static int pg_rewrites(rs_backend *b, int64_t *n)
{
    rs_buf q = RS_BUF_INIT;
    int rc = ensure_conn(b, NULL) || rs_buf_addf(&q, "SELECT %s", rewrites_expr(b)) ||
             pg_side_sql(b, q.buf, NULL);
    rs_buf_release(&q);
    if (rc)
        return -EIO;
    return pg_int(b, b->sql.buf, NULL, NULL, n, NULL, NULL);
}

/* runfs_rewritten's number of the thread; a scratch open, or a reader of a store set up
 * before the table, answers with the store's count. */
static int pg_thread_rewrites(rs_backend *b, const char *thread_id, int64_t *n)
{
    if (b->scratch || !b->has_tcount)
        return pg_rewrites(b, n);
    if (ensure_conn(b, NULL) ||
        pg_side_sql(b,
                    putback_seen(b) ? "SELECT coalesce((SELECT at FROM @runfs_rewritten WHERE "
                                      "thread_id = $1), 0) + " PUTBACK_IDS("e.thread_id = $1")
                                    : "SELECT coalesce((SELECT at FROM @runfs_rewritten WHERE "
                                      "thread_id = $1), 0)",
                    NULL))
        return -EIO;
    return pg_int(b, b->sql.buf, thread_id, NULL, n, NULL, NULL);
}

/* Ids are handed out before their rows commit, in any order: a row below the highest id
 * commits later only from a transaction in flight at this snapshot (one begun since takes
 * a higher id), and that one's end changes the list of those in flight (cluster-wide: on
 * a busy cluster kept sizes of the root's searches are kept less often, never stale). A
 * writer that took its id and is given its transaction id only after this snapshot is
 * not in the list: its INSERT does both, microseconds apart. */
static int pg_rows_added(rs_backend *b, int64_t *version)
{
    *version = 0;
    PGresult *r;
    if (ensure_conn(b, NULL) ||
        pg_run(b,
               "SELECT coalesce((SELECT max(id) FROM run_events), 0), coalesce((SELECT "
               "string_agg(x::text, ',' ORDER BY x) FROM pg_snapshot_xip(pg_current_snapshot()) "
               "x), '')",
               NULL, &r, NULL))
        return -EIO;
    int64_t top = pg_val_int(r, 0, 0);
    const char *xip = PQgetvalue(r, 0, 1);
    uint64_t h = rs_hash(RS_HASH_INIT, &top, sizeof top);
    *version = *xip ? (int64_t)(rs_hash(h, xip, strlen(xip)) >> 1) : top;
    PQclear(r);
    return 0;
}

static int pg_refresh(rs_backend *b, rs_err *err)
{
    /* The probe just counted no thread to index: a row marked since moves the next probe. */
    return b->dirty_seen == 0 ? 0 : pg_catch_up_all(b, err);
}

/* ---- reads ride out a short outage ----
 * A read that failed because the connection did (a restart, a failover) is tried again,
 * outside any transaction, until connect_timeout has passed since the first failure: the
 * first try at once, then every 100 ms (ensure_conn waits for the server the same way). A
 * write is not: what was in flight fails with EIO. */
static int read_again(rs_backend *b, int rc, int64_t *deadline)
{
    if (rc != -EIO || !b->lost || b->waited || b->no_wait || b->in_tx || b->read_tx || b->piped)
        return 0;
    if (!*deadline) {
        *deadline = rs_clock_ns(CLOCK_MONOTONIC) + b->wait_ns;
        return 1;
    }
    return pause_until(*deadline);
}

#define PG_READ(op, params, args) \
    static int op##_wait params \
    { \
        int64_t deadline = 0; \
        int rc; \
        do { \
            b->lost = b->waited = 0; \
            rc = op args; \
        } while (read_again(b, rc, &deadline)); \
        return rc; \
    }

PG_READ(pg_query, (rs_backend * b, const rs_query *q, rs_cursor **out, rs_err *err),
        (b, q, out, err))
PG_READ(pg_log_info,
        (rs_backend * b, const char *thread_id, const char *run_id, const char *user,
         rs_log_info *out, rs_err *err),
        (b, thread_id, run_id, user, out, err))
PG_READ(pg_runs_info,
        (rs_backend * b, const char *thread_id, rs_run_info_fn fn, void *ctx, rs_err *err),
        (b, thread_id, fn, ctx, err))
PG_READ(pg_log_seek,
        (rs_backend * b, const char *thread_id, const char *run_id, int64_t off, rs_cursor **out,
         rs_err *err),
        (b, thread_id, run_id, off, out, err))
PG_READ(pg_names,
        (rs_backend * b, rs_names_kind kind, const char *thread_id, const char *run_id,
         const char *user, const char *const *singletons, size_t n_singletons, rs_names **out,
         rs_err *err),
        (b, kind, thread_id, run_id, user, singletons, n_singletons, out, err))
PG_READ(pg_odd_ids, (rs_backend * b, rs_odd_id_fn fn, void *ctx, rs_err *err), (b, fn, ctx, err))
PG_READ(pg_last_visible_ai_seq, (rs_backend * b, const rs_target *t, int64_t *seq, rs_err *err),
        (b, t, seq, err))
PG_READ(pg_message_objects,
        (rs_backend * b, const char *thread_id, const char *user, int newest, const char *like,
         rs_cursor **out, rs_err *err),
        (b, thread_id, user, newest, like, out, err))
PG_READ(pg_stats,
        (rs_backend * b, const char *user, const char *thread_id, rs_stats *out, rs_err *err),
        (b, user, thread_id, out, err))
PG_READ(pg_seal_get, (rs_backend * b, const rs_target *t, rs_seal_row *row, rs_err *err),
        (b, t, row, err))
PG_READ(pg_search,
        (rs_backend * b, const rs_search *q, const char *thread_id, const char *run_id,
         const char *user, const char *after_thread, int64_t after_seq, rs_cursor **out,
         rs_err *err),
        (b, q, thread_id, run_id, user, after_thread, after_seq, out, err))
PG_READ(pg_search_rows,
        (rs_backend * b, const int64_t *ids, size_t n, rs_cursor **out, rs_err *err),
        (b, ids, n, out, err))

/* sql with its '@' naming the side tables' schema, in a buffer of the caller's (b->sql is
 * rewritten by the next statement). */
static int side_copy(rs_backend *b, const char *sql, rs_buf *out)
{
    int rc = pg_side_sql(b, sql, NULL);
    return rc ? rc : rs_buf_add(out, b->sql.buf, b->sql.len + 1);
}

static int pg_size_get(rs_backend *b, const char *key, int64_t *size, int *found)
{
    if (ensure_conn(b, NULL) ||
        pg_side_sql(b, "SELECT value FROM @runfs_meta WHERE key = $1", NULL))
        return -EIO;
    return pg_int(b, b->sql.buf, key, NULL, size, found, NULL);
}

static int pg_size_put(rs_backend *b, const rs_size_key *keys, size_t n, int fresh)
{
    rs_buf del = RS_BUF_INIT, ins = RS_BUF_INIT;
    int rc = side_copy(b, "DELETE FROM @runfs_meta WHERE key >= $1 AND key < $2", &del);
    if (!rc)
        rc = side_copy(b,
                       "INSERT INTO @runfs_meta (key, value) VALUES ($1, $2) "
                       "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                       &ins);
    /* The statements go SIZE_PIPE pairs to a round trip (an import keeps some fifty sizes
     * a thread: two round trips each were most of what its sizing waited for), with the
     * COMMIT in the last; each pair's first use queues its preparations too. */
    enum { SIZE_PIPE = (PG_PIPE_MAX - 5) / 2 };
    size_t pipe = fresh ? 2 * SIZE_PIPE : SIZE_PIPE; /* fresh: an INSERT a size, no DELETE */
    if (!rc && !(rc = pg_begin(b, NULL, NULL))) {
        for (size_t i = 0; !rc && i < n; i += pipe) {
            if ((rc = pg_pipe_start(b, NULL)))
                break;
            for (size_t k = i; !rc && k < n && k < i + pipe; k++) {
                pg_args d = {.n = 0}, a = {.n = 0};
                pg_arg_text(&d, keys[k].lo);
                pg_arg_text(&d, keys[k].hi);
                pg_arg_text(&a, keys[k].key);
                pg_arg_int(&a, keys[k].size);
                if (fresh || !(rc = pg_run(b, del.buf, &d, NULL, NULL)))
                    rc = pg_run(b, ins.buf, &a, NULL, NULL);
            }
            if (!rc && i + pipe >= n)
                rc = pg_commit(b, NULL);
            int ran = pg_pipe_run(b, NULL);
            rc = rc ? rc : ran;
        }
        if (rc)
            pg_rollback(b);
    }
    rs_buf_release(&del);
    rs_buf_release(&ins);
    return rc;
}

static int pg_steps_get(rs_backend *b, const char *thread_id, const char *run_id, const char *kind,
                        rs_buf *out, int *found)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, thread_id);
    pg_arg_text(&a, run_id);
    pg_arg_text(&a, kind);
    rs_buf sql = RS_BUF_INIT;
    PGresult *r = NULL;
    int64_t there = 0;
    *found = 0;
    /* A store no put has reached has no table: nothing kept, not a failure (to_regclass
     * asks without an error, which would end a transaction the caller is in). */
    int rc = ensure_conn(b, NULL) ? -EIO
                                  : side_copy(b,
                                              "SELECT count(*) FROM pg_class WHERE oid = "
                                              "to_regclass('@runfs_steps')",
                                              &sql);
    if (!rc)
        rc = pg_int(b, sql.buf, NULL, NULL, &there, NULL, NULL);
    rs_buf_reset(&sql);
    if (!rc && !there)
        *found = -1;
    if (!rc && there &&
        !(rc = side_copy(b,
                         "SELECT data FROM @runfs_steps WHERE thread_id = $1 AND run_id = $2 "
                         "AND kind = $3",
                         &sql)) &&
        !(rc = pg_run(b, sql.buf, &a, &r, NULL)) && PQntuples(r) == 1) {
        size_t n = 0;
        unsigned char *p = PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 0), &n);
        rc = !p ? -ENOMEM : rs_buf_add(out, p, n);
        *found = !rc;
        PQfreemem(p);
    }
    PQclear(r);
    rs_buf_release(&sql);
    return rc;
}

int pg_steps_forget(rs_backend *b, const rs_target *t, rs_err *err)
{
    pg_args a = {.n = 0};
    pg_arg_text(&a, t->thread_id);
    pg_arg_text(&a, t->run_id);
    rs_buf sql = RS_BUF_INIT;
    int64_t has = 0;
    int rc = side_copy(b, "SELECT (to_regclass('@runfs_steps') IS NOT NULL)::int", &sql);
    if (!rc)
        rc = pg_int(b, sql.buf, NULL, NULL, &has, NULL, err);
    rs_buf_reset(&sql);
    if (!rc && has &&
        !(rc = side_copy(b,
                         "DELETE FROM @runfs_steps WHERE thread_id = $1 AND ($2::text IS NULL "
                         "OR run_id = $2)",
                         &sql)))
        rc = pg_run(b, sql.buf, &a, NULL, err);
    rs_buf_release(&sql);
    return rc;
}

/* The table is made here, so a store made before kept step data gets it at its first
 * keeping. The bytes go as bytea's hex text: the statements' parameters are text. */
static int pg_steps_put(rs_backend *b, const rs_steps *v, const char (*kinds)[24], size_t n)
{
    rs_buf hex = RS_BUF_INIT, make = RS_BUF_INIT, ins = RS_BUF_INIT;
    int rc = side_copy(b,
                       "CREATE TABLE IF NOT EXISTS @runfs_steps (thread_id TEXT NOT NULL, run_id "
                       "TEXT NOT NULL, kind TEXT NOT NULL, data BYTEA NOT NULL, PRIMARY KEY "
                       "(thread_id, run_id, kind))",
                       &make);
    if (!rc)
        rc = side_copy(b,
                       "INSERT INTO @runfs_steps (thread_id, run_id, kind, data) SELECT $1, $2, "
                       "$3, $4::text::bytea WHERE (SELECT value FROM @runfs_meta WHERE key = "
                       "'rewrites') = $5::bigint ON CONFLICT (thread_id, run_id, kind) DO UPDATE "
                       "SET data = EXCLUDED.data",
                       &ins);
    if (!rc && !(rc = pg_begin(b, NULL, NULL))) {
        rc = pg_exec_plain(b, make.buf, NULL);
        for (size_t i = 0; !rc && i < n; i++) {
            rs_buf_reset(&hex);
            if (rs_buf_addlit(&hex, "\\x") || rs_buf_add_hex(&hex, v[i].data, v[i].len)) {
                rc = -ENOMEM;
                break;
            }
            pg_args a = {.n = 0};
            pg_arg_text(&a, v[i].t->thread_id);
            pg_arg_text(&a, v[i].t->run_id);
            pg_arg_text(&a, kinds[i]);
            pg_arg_text(&a, hex.buf);
            pg_arg_int(&a, v[i].rewrites);
            rc = pg_run(b, ins.buf, &a, NULL, NULL);
        }
        if (rc)
            pg_rollback(b);
        else
            rc = pg_commit(b, NULL);
    }
    rs_buf_release(&hex);
    rs_buf_release(&make);
    rs_buf_release(&ins);
    return rc;
}

static void pg_set_wait(rs_backend *b, int wait)
{
    b->no_wait = !wait;
}

/* libpq's version, spelled as PostgreSQL spells it: 15.3, or 9.6.24 before 10. */
static int pg_library_version(rs_buf *out)
{
    int pq = PQlibVersion(); /* 150003 for 15.3; 90624 for 9.6.24 */
    if (pq >= 100000)
        return rs_buf_addf(out, "libpq %d.%d", pq / 10000, pq % 10000);
    return rs_buf_addf(out, "libpq %d.%d.%d", pq / 10000, pq / 100 % 100, pq % 100);
}

const rs_backend_ops rs_pg_backend = {
    .name = "postgresql",
    .uri_display = pg_uri_display,
    .uri_name = pg_uri_name,
    .library_version = pg_library_version,
    .seq_max = INT32_MAX,
    .seq_type = "PostgreSQL's INTEGER (DeerFlow's seq column)",
    .sql = &pg_policy,
    .open = pg_open,
    .close = pg_close,
    .data_version = pg_data_version,
    .refresh = pg_refresh,
    .rewrites = pg_rewrites,
    .thread_rewrites = pg_thread_rewrites,
    .rows_added = pg_rows_added,
    .size_get = pg_size_get,
    .size_put = pg_size_put,
    .steps_get = pg_steps_get,
    .steps_put = pg_steps_put,
    .set_wait = pg_set_wait,
    .put = pg_put,
    .release = pg_release,
    .create = pg_create,
    .delete = pg_delete,
    .import = pg_import,
    .query = pg_query_wait,
    .log_info = pg_log_info_wait,
    .runs_info = pg_runs_info_wait,
    .log_seek = pg_log_seek_wait,
    .names = pg_names_wait,
    .odd_ids = pg_odd_ids_wait,
    .last_visible_ai_seq = pg_last_visible_ai_seq_wait,
    .message_objects = pg_message_objects_wait,
    .stats = pg_stats_wait,
    .search = pg_search_wait,
    .search_rows = pg_search_rows_wait,
    .seal_insert = pg_seal_insert,
    .seal_get = pg_seal_get_wait,
    .seal_tree = pg_seal_tree,
    .seal_salts = pg_seal_salts,
    .redact = pg_redact,
    .redaction_each = pg_redaction_each,
    .expire = pg_expire,
    .expired_each = pg_expired_each,
    .seal_each = pg_seal_each,
    .changes_sync = pg_changes_sync,
    .changes = pg_changes,
    .changes_head = pg_changes_head,
};
