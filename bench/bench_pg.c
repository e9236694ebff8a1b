/* bench_pg.c — plain libpq baselines for scripts/bench pg (what runfs's PostgreSQL backend
 * is measured against):
 *   bench_pg insert URI FILE   DeerFlow's run_events (same indexes) in a fresh database, the
 *                              JSONL file's lines inserted with a prepared statement, one
 *                              transaction per 100 rows; prints events/s
 *   bench_pg read URI THREAD RUN   read the run's rows (the columns runfs reads, seq order)
 *                              through a cursor, 1000 rows per fetch; prints milliseconds */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static int cmd_insert(PGconn *c, const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        perror(file);
        return 1;
    }
    if (!ok(c,
            PQexec(
                c,
                "CREATE TABLE run_events (id SERIAL NOT NULL, thread_id VARCHAR(64) NOT NULL, "
                "run_id VARCHAR(64) NOT NULL, user_id VARCHAR(64), event_type VARCHAR(32) NOT NULL, "
                "category VARCHAR(16) NOT NULL, content TEXT NOT NULL, event_metadata JSON NOT NULL, "
                "seq INTEGER NOT NULL, created_at TIMESTAMP WITH TIME ZONE NOT NULL, PRIMARY KEY (id), "
                "CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq));"
                "CREATE INDEX ix_events_run ON run_events (thread_id, run_id, seq);"
                "CREATE INDEX ix_events_thread_cat_seq ON run_events (thread_id, category, seq);"
                "CREATE INDEX ix_run_events_user_id ON run_events (user_id);"),
            "schema") ||
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

static int cmd_read(PGconn *c, const char *thread, const char *run)
{
    const char *vals[2] = {thread, run};
    double t0 = now_ms();
    if (!ok(c, PQexec(c, "BEGIN"), "begin") ||
        !ok(c,
            PQexecParams(c,
                         "DECLARE rows NO SCROLL CURSOR FOR SELECT thread_id, run_id, seq, "
                         "event_type, category, content, event_metadata, to_char(created_at "
                         "AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), user_id FROM "
                         "run_events WHERE thread_id = $1 AND run_id = $2 ORDER BY seq",
                         2, NULL, vals, NULL, NULL, 0),
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

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "insert") != 0 && strcmp(argv[1], "read") != 0) ||
        (strcmp(argv[1], "read") == 0 && argc < 5)) {
        fprintf(stderr, "usage: bench_pg insert URI FILE | read URI THREAD RUN\n");
        return 2;
    }
    PGconn *c = PQconnectdb(argv[2]);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "bench_pg: %s", PQerrorMessage(c));
        PQfinish(c);
        return 1;
    }
    int rc = strcmp(argv[1], "insert") == 0 ? cmd_insert(c, argv[3])
                                            : cmd_read(c, argv[3], argv[4]);
    PQfinish(c);
    return rc;
}
