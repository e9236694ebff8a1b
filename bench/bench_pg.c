/* bench_pg.c — plain libpq baselines for scripts/bench pg (what runfs's PostgreSQL backend
 * is measured against):
 *   bench_pg insert URI FILE   DeerFlow's run_events (same indexes) in a fresh database, the
 *                              JSONL file's lines inserted with a prepared statement, one
 *                              transaction per 100 rows; prints events/s
 *   bench_pg read URI THREAD RUN   read the run's rows (RUN -: the thread's; the columns
 *                              runfs reads, seq order) through a cursor, 1000 rows per
 *                              fetch; prints milliseconds
 *   bench_pg single URI N      N one-row transactions into DeerFlow's run_events (a fresh
 *                              database) with the synchronous_commit runfs's --sync normal
 *                              sets, each as DeerFlow's writer makes it (BEGIN, the advisory
 *                              lock, MAX(seq) and the high-water mark, INSERT, the high-water
 *                              mark raised, COMMIT: a round trip each); then N of the bare
 *                              minimum (one INSERT committing on its own: a round trip and
 *                              the WAL flush); prints "p50 p99 p50 p99" in microseconds
 *   bench_pg deerflow URI N BATCHES THREAD   DeerFlow's own writes into an existing
 *                              run_events (its shape, runtime/events/store/db.py): N puts,
 *                              each a one-row transaction (BEGIN, the advisory lock on the
 *                              thread, MAX(seq), INSERT, COMMIT), then BATCHES put_batch
 *                              transactions of 100 rows (the same, with one 100-row INSERT);
 *                              the server's settings as they are; prints "puts/s rows/s"
 *                              and the server process's CPU microseconds per put and per
 *                              put_batch row (-1: not on this host) */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int ok(PGconn *c, PGresult *r, const char *what)
{
    ExecStatusType st = PQresultStatus(r);
    PQclear(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return 1;
    fprintf(stderr, "bench_pg: %s: %s", what, PQerrorMessage(c));
    return 0;
}

/* DeerFlow's run_events with its indexes, and its high-water table. */
static int create_tables(PGconn *c)
{
    return ok(c,
              PQexec(c,
                     "CREATE TABLE run_events (id SERIAL NOT NULL, thread_id VARCHAR(64) NOT NULL, "
                     "run_id VARCHAR(64) NOT NULL, user_id VARCHAR(64), event_type VARCHAR(32) NOT "
                     "NULL, category VARCHAR(16) NOT NULL, content TEXT NOT NULL, event_metadata "
                     "JSON NOT NULL, seq INTEGER NOT NULL, created_at TIMESTAMP WITH TIME ZONE NOT "
                     "NULL, PRIMARY KEY (id), CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, "
                     "seq));"
                     "CREATE INDEX ix_events_run ON run_events (thread_id, run_id, seq);"
                     "CREATE INDEX ix_events_thread_cat_seq ON run_events (thread_id, category, "
                     "seq);"
                     "CREATE INDEX ix_run_events_user_id ON run_events (user_id);"
                     "CREATE TABLE run_event_thread_seq (thread_id VARCHAR(64) PRIMARY KEY, seq "
                     "BIGINT NOT NULL DEFAULT 0);"),
              "schema");
}

static int cmd_insert(PGconn *c, const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        perror(file);
        return 1;
    }
    if (!create_tables(c) ||
        !ok(c,
            PQprepare(c, "ins",
                      "INSERT INTO run_events (thread_id, run_id, event_type, "
                      "category, content, event_metadata, seq, created_at) VALUES ('t', 'r', "
                      "'x', 'message', $1, '{}', $2, now())",
                      0, NULL),
            "prepare")) {
        fclose(f);
        return 1;
    }
    char *line = NULL, seqbuf[24];
    size_t cap = 0;
    long seq = 0;
    int rc = 0;
    double t0 = now_ms();
    while (getline(&line, &cap, f) > 0) {
        if (seq % 100 == 0 && !ok(c, PQexec(c, seq ? "COMMIT; BEGIN" : "BEGIN"), "begin")) {
            rc = 1;
            break;
        }
        snprintf(seqbuf, sizeof seqbuf, "%ld", ++seq);
        const char *vals[2] = {line, seqbuf};
        if (!ok(c, PQexecPrepared(c, "ins", 2, vals, NULL, NULL, 0), "insert")) {
            rc = 1;
            break;
        }
    }
    if (!rc && !ok(c, PQexec(c, "COMMIT"), "commit"))
        rc = 1;
    double ms = now_ms() - t0;
    if (!rc)
        printf("%.0f\n", seq / (ms > 0 ? ms : 1) * 1000);
    free(line);
    fclose(f);
    return rc;
}

/* The rows of a run (or of the whole thread, run "-") in seq order, as runfs reads them. */
static int cmd_read(PGconn *c, const char *thread, const char *run)
{
#define READ_SQL(where) \
    "DECLARE rows NO SCROLL CURSOR FOR SELECT thread_id, run_id, seq, event_type, category, " \
    "content, event_metadata, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD " \
    "HH24:MI:SS.US'), user_id FROM run_events WHERE thread_id = $1" where " ORDER BY seq"
    int whole = strcmp(run, "-") == 0;
    const char *vals[2] = {thread, run};
    double t0 = now_ms();
    if (!ok(c, PQexec(c, "BEGIN"), "begin") ||
        !ok(c,
            PQexecParams(c, whole ? READ_SQL("") : READ_SQL(" AND run_id = $2"), whole ? 1 : 2,
                         NULL, vals, NULL, NULL, 0),
            "declare"))
        return 1;
    long rows = 0, bytes = 0;
    for (;;) {
        PGresult *r = PQexec(c, "FETCH 1000 FROM rows");
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            fprintf(stderr, "bench_pg: fetch: %s", PQerrorMessage(c));
            PQclear(r);
            return 1;
        }
        int n = PQntuples(r);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < 9; k++)
                bytes += PQgetlength(r, i, k);
        rows += n;
        PQclear(r);
        if (n == 0)
            break;
    }
    ok(c, PQexec(c, "COMMIT"), "commit");
    printf("%.0f %ld %ld\n", now_ms() - t0, rows, bytes);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The p50 and p99 of lat[0..n), sorted in place. */
static void print_percentiles(double *lat, long n)
{
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    printf("%.0f %.0f", lat[n / 2], lat[(size_t)(n * 0.99)]);
}

static int cmd_single(PGconn *c, long n)
{
    static const char *const deerflow[] = {
        "SELECT pg_advisory_xact_lock(hashtext(CAST($1 AS text))::bigint)",
        "SELECT greatest((SELECT MAX(seq) FROM run_events WHERE thread_id = $1), (SELECT seq "
        "FROM run_event_thread_seq WHERE thread_id = $1))",
        "INSERT INTO run_events (thread_id, run_id, event_type, category, content, "
        "event_metadata, seq, created_at) VALUES ($1, 'r', 'llm.human.input', 'message', "
        "$2, '{\"caller\":\"lead_agent\",\"content_is_json\":true,\"content_is_dict\":true}', "
        "$3::integer, now())",
        "INSERT INTO run_event_thread_seq (thread_id, seq) VALUES ($1, $3::bigint) ON CONFLICT "
        "(thread_id) DO UPDATE SET seq = greatest(run_event_thread_seq.seq, excluded.seq)",
    };
    static const char content[] = "{\"type\":\"human\",\"content\":\"the agent reads a "
                                  "ledger and compares quarterly revenue figures before writing "
                                  "a short summary for the user\",\"id\":\"h-1\"}";
    if (!create_tables(c) || !ok(c, PQexec(c, "SET synchronous_commit = local"), "set"))
        return 1;
    char name[8];
    static const Oid text3[3] = {25, 25, 25};
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "s%d", i);
        if (!ok(c, PQprepare(c, name, deerflow[i], i < 2 ? 1 : 3, text3), "prepare"))
            return 1;
    }
    double *lat = calloc((size_t)n, sizeof *lat);
    if (!lat)
        return 1;
    char seqbuf[24];
    const char *vals[3] = {"t", content, seqbuf};
    for (int mode = 0; mode < 2; mode++) {
        vals[0] = mode ? "u" : "t";
        for (long i = 0; i < n; i++) {
            double t0 = now_ms();
            snprintf(seqbuf, sizeof seqbuf, "%ld", i + 1);
            int good;
            if (mode) {
                good = ok(c, PQexecPrepared(c, "s2", 3, vals, NULL, NULL, 0), "insert");
            } else {
                good = ok(c, PQexec(c, "BEGIN"), "begin");
                for (int k = 0; good && k < 4; k++) {
                    snprintf(name, sizeof name, "s%d", k);
                    PGresult *r = PQexecPrepared(c, name, k < 2 ? 1 : 3, vals, NULL, NULL, 0);
                    if (k == 1 && PQresultStatus(r) == PGRES_TUPLES_OK && !PQgetisnull(r, 0, 0))
                        snprintf(seqbuf, sizeof seqbuf, "%lld", atoll(PQgetvalue(r, 0, 0)) + 1);
                    good = ok(c, r, "statement");
                }
                good = good && ok(c, PQexec(c, "COMMIT"), "commit");
            }
            if (!good) {
                free(lat);
                return 1;
            }
            lat[i] = (now_ms() - t0) * 1000;
        }
        if (mode)
            putchar(' ');
        print_percentiles(lat, n);
    }
    putchar('\n');
    free(lat);
    return 0;
}

/* DeerFlow's put (rows 1) and put_batch (rows 100) into THREAD, run r, n transactions. */
static int deerflow_writes(PGconn *c, const char *thread, int rows, long n)
{
    static const char content[] = "{\"type\":\"human\",\"content\":\"the agent reads a "
                                  "ledger and compares quarterly revenue figures before writing "
                                  "a short summary for the user\",\"id\":\"h-1\"}";
    char name[8], sql[32768];
    int len = snprintf(sql, sizeof sql,
                       "INSERT INTO run_events (thread_id, run_id, user_id, event_type, "
                       "category, content, event_metadata, seq, created_at) VALUES ");
    for (int i = 0; i < rows; i++)
        len += snprintf(sql + len, sizeof sql - (size_t)len,
                        "%s($1, 'r', 'alice', 'llm.human.input', 'message', $2, "
                        "'{\"caller\":\"lead_agent\",\"content_is_json\":true,"
                        "\"content_is_dict\":true}', $3::integer + %d, now())",
                        i ? ", " : "", i);
    snprintf(name, sizeof name, "ins%d", rows);
    static const Oid text3[3] = {25, 25, 25};
    if (!ok(c, PQprepare(c, name, sql, 3, text3), "prepare") ||
        !ok(c,
            PQprepare(c, "lock", "SELECT pg_advisory_xact_lock(hashtext(CAST($1 AS text))::bigint)",
                      1, text3),
            "prepare") ||
        !ok(c,
            PQprepare(c, "top", "SELECT coalesce(max(seq), 0) FROM run_events WHERE thread_id = $1",
                      1, text3),
            "prepare"))
        return 0;
    char seqbuf[24];
    const char *vals[3] = {thread, content, seqbuf};
    for (long i = 0; i < n; i++) {
        if (!ok(c, PQexec(c, "BEGIN"), "begin") ||
            !ok(c, PQexecPrepared(c, "lock", 1, vals, NULL, NULL, 0), "lock"))
            return 0;
        PGresult *r = PQexecPrepared(c, "top", 1, vals, NULL, NULL, 0);
        if (PQresultStatus(r) == PGRES_TUPLES_OK)
            snprintf(seqbuf, sizeof seqbuf, "%lld", atoll(PQgetvalue(r, 0, 0)) + 1);
        if (!ok(c, r, "max") || !ok(c, PQexecPrepared(c, name, 3, vals, NULL, NULL, 0), "insert") ||
            !ok(c, PQexec(c, "COMMIT"), "commit"))
            return 0;
    }
    PQexec(c, "DEALLOCATE ALL");
    return 1;
}

/* The CPU microseconds (user and system) the server process pid has spent; -1 where its
 * /proc entry cannot be read (a server on another host). */
static double backend_cpu_us(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    const char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

static int cmd_deerflow(PGconn *c, long n, long batches, const char *thread)
{
    long pid = PQbackendPID(c);
    double c0 = backend_cpu_us(pid), t0 = now_ms();
    if (!deerflow_writes(c, thread, 1, n))
        return 1;
    double c1 = backend_cpu_us(pid), t1 = now_ms();
    char batch_thread[128];
    snprintf(batch_thread, sizeof batch_thread, "%s-batch", thread);
    if (!deerflow_writes(c, batch_thread, 100, batches))
        return 1;
    double c2 = backend_cpu_us(pid), t2 = now_ms();
    printf("%.0f %.0f %.1f %.1f\n", n / (t1 - t0) * 1000, batches * 100 / (t2 - t1) * 1000,
           c0 < 0 ? -1 : (c1 - c0) / n, c0 < 0 ? -1 : (c2 - c1) / (batches * 100.0));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4 ||
        (strcmp(argv[1], "insert") != 0 && strcmp(argv[1], "read") != 0 &&
         strcmp(argv[1], "single") != 0 && strcmp(argv[1], "deerflow") != 0) ||
        (strcmp(argv[1], "read") == 0 && argc < 5) ||
        (strcmp(argv[1], "deerflow") == 0 && argc < 6)) {
        fprintf(stderr, "usage: bench_pg insert URI FILE | read URI THREAD RUN|- | single URI N | "
                        "deerflow URI N BATCHES THREAD\n");
        return 2;
    }
    PGconn *c = PQconnectdb(argv[2]);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "bench_pg: %s", PQerrorMessage(c));
        PQfinish(c);
        return 1;
    }
    int rc = strcmp(argv[1], "insert") == 0   ? cmd_insert(c, argv[3])
             : strcmp(argv[1], "single") == 0 ? cmd_single(c, atol(argv[3]))
             : strcmp(argv[1], "deerflow") == 0
                 ? cmd_deerflow(c, atol(argv[3]), atol(argv[4]), argv[5])
                 : cmd_read(c, argv[3], argv[4]);
    PQfinish(c);
    return rc;
}
