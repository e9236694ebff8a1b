/* bench_store.c — the store against plain SQLite doing the same work in the same run.
 *
 * Baseline: prepared statements on DeerFlow's run_events table (same pragmas, same indexes,
 * same transactions, seq read with MAX(seq) in the transaction), fed with rows already
 * serialised. runfs: the same events as JSONL through rs_store_append (parse, validate,
 * allocate seq, insert, index byte offsets). Each figure is the median of 3 runs of each side,
 * interleaved, printed with its ratio; puts also with the ratio of CPU time spent (user and
 * system), which other work on the machine moves less than the wall clock. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "runstore.h"
#include "rs_util.h"

/* CPU seconds of this process, user and system: on a machine shared with other work, a
 * steadier measure of what each side costs than the wall clock. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* The CPU seconds of the last measured run (0: not measured). */
static double last_cpu;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_store: %s: %s\n", what, why);
    exit(1);
}

/* ~300 bytes of text content, varied so nothing compresses into a cache trick. */
static void filler(char *out, size_t n, unsigned seed)
{
    static const char words[] = "the agent reads a ledger and compares quarterly revenue figures "
                                "before writing a short summary for the user with care ";
    for (size_t i = 0; i < n; i++)
        out[i] = words[(i * 7 + seed) % (sizeof words - 1)];
    out[n] = '\0';
}

/* Event i of a realistic mix: line (input JSONL), and the row a plain writer would store. */
typedef struct sample {
    char line[1200];
    char type[40];
    char category[20];
    char content[800];
    char metadata[300];
} sample;

static void make_sample(sample *s, int i)
{
    char text[320];
    filler(text, 280 + i % 40, (unsigned)i);
    switch (i % 5) {
    case 0:
        snprintf(s->content, sizeof s->content,
                 "{\"type\":\"ai\",\"content\":\"%s\",\"id\":\"ai-%d\",\"tool_calls\":[]}", text,
                 i);
        snprintf(s->metadata, sizeof s->metadata,
                 "{\"caller\":\"lead_agent\",\"usage\":{\"total_tokens\":%d},\"latency_ms\":%d,"
                 "\"llm_call_index\":1",
                 100 + i % 50, i % 900);
        strcpy(s->type, "llm.ai.response");
        strcpy(s->category, "message");
        break;
    case 1:
        snprintf(s->content, sizeof s->content,
                 "{\"type\":\"tool\",\"content\":\"%s\",\"tool_call_id\":\"call-%d\"}", text, i);
        strcpy(s->metadata, "{");
        strcpy(s->type, "llm.tool.result");
        strcpy(s->category, "message");
        break;
    case 2:
        snprintf(s->content, sizeof s->content,
                 "{\"task_id\":\"task-%d\",\"message_index\":%d,\"kind\":\"tool\",\"text\":\"%s\","
                 "\"truncated\":false,\"tool_name\":\"read_file\"}",
                 i % 7, i, text);
        snprintf(s->metadata, sizeof s->metadata, "{\"task_id\":\"task-%d\",\"message_index\":%d",
                 i % 7, i);
        strcpy(s->type, "subagent.step");
        strcpy(s->category, "subagent");
        break;
    case 3:
        snprintf(s->content, sizeof s->content,
                 "{\"name\":\"LoopDetection\",\"hook\":\"after_model\",\"action\":\"warn\","
                 "\"changes\":{\"note\":\"%s\"}}",
                 text);
        strcpy(s->metadata, "{");
        strcpy(s->type, "middleware:loop_detection");
        strcpy(s->category, "middleware");
        break;
    default:
        snprintf(s->content, sizeof s->content,
                 "{\"type\":\"human\",\"content\":\"%s\",\"id\":\"h-%d\"}", text, i);
        strcpy(s->metadata, "{\"caller\":\"lead_agent\"");
        strcpy(s->type, "llm.human.input");
        strcpy(s->category, "message");
        break;
    }
    /* The input line, then the stored metadata with DeerFlow's markers. */
    snprintf(s->line, sizeof s->line, "{\"event_type\":\"%s\",\"content\":%s,\"metadata\":%s}}\n",
             s->type, s->content, s->metadata);
    if (strcmp(s->metadata, "{") == 0)
        snprintf(s->line, sizeof s->line,
                 "{\"event_type\":\"%s\",\"content\":%s,\"metadata\":{}}\n", s->type, s->content);
    size_t n = strlen(s->metadata);
    snprintf(s->metadata + n, sizeof s->metadata - n,
             "%s\"content_is_json\":true,"
             "\"content_is_dict\":true}",
             n > 1 ? "," : "");
}

static const char plain_schema[] =
    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    "CREATE TABLE run_events (id INTEGER NOT NULL, thread_id VARCHAR(64) NOT NULL,"
    " run_id VARCHAR(64) NOT NULL, user_id VARCHAR(64), event_type VARCHAR(32) NOT NULL,"
    " category VARCHAR(16) NOT NULL, content TEXT NOT NULL, event_metadata JSON NOT NULL,"
    " seq INTEGER NOT NULL, created_at DATETIME NOT NULL, PRIMARY KEY (id),"
    " CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq));"
    "CREATE INDEX ix_events_run ON run_events (thread_id, run_id, seq);"
    "CREATE INDEX ix_events_thread_cat_seq ON run_events (thread_id, category, seq);"
    "CREATE INDEX ix_run_events_user_id ON run_events (user_id);";

typedef struct plain {
    sqlite3 *db;
    sqlite3_stmt *ins, *max, *begin, *commit;
} plain;

static void plain_open(plain *p, const char *path)
{
    unlink(path);
    if (sqlite3_open(path, &p->db) != SQLITE_OK)
        die("plain open", sqlite3_errmsg(p->db));
    char *msg = NULL;
    if (sqlite3_exec(p->db, plain_schema, NULL, NULL, &msg) != SQLITE_OK)
        die("plain schema", msg);
    sqlite3_prepare_v2(p->db,
                       "INSERT INTO run_events (thread_id, run_id, user_id, event_type, "
                       "category, content, event_metadata, seq, created_at) VALUES "
                       "(?, ?, NULL, ?, ?, ?, ?, ?, ?)",
                       -1, &p->ins, NULL);
    sqlite3_prepare_v2(p->db, "SELECT MAX(seq) FROM run_events WHERE thread_id = ?", -1, &p->max,
                       NULL);
    sqlite3_prepare_v2(p->db, "BEGIN IMMEDIATE", -1, &p->begin, NULL);
    sqlite3_prepare_v2(p->db, "COMMIT", -1, &p->commit, NULL);
}

static void plain_close(plain *p)
{
    sqlite3_finalize(p->ins);
    sqlite3_finalize(p->max);
    sqlite3_finalize(p->begin);
    sqlite3_finalize(p->commit);
    sqlite3_close(p->db);
}

static void step_reset(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        die("plain step", sqlite3_errstr(rc));
    sqlite3_reset(st);
}

/* Insert samples[from..from+n) in one transaction, as a plain writer would. */
static void plain_batch(plain *p, const sample *samples, int from, int n, const char *thread,
                        const char *run)
{
    step_reset(p->begin);
    sqlite3_bind_text(p->max, 1, thread, -1, SQLITE_STATIC);
    sqlite3_step(p->max);
    sqlite3_int64 seq = sqlite3_column_int64(p->max, 0);
    sqlite3_reset(p->max);
    for (int i = 0; i < n; i++) {
        const sample *s = &samples[(from + i) % 1000];
        sqlite3_bind_text(p->ins, 1, thread, -1, SQLITE_STATIC);
        sqlite3_bind_text(p->ins, 2, run, -1, SQLITE_STATIC);
        sqlite3_bind_text(p->ins, 3, s->type, -1, SQLITE_STATIC);
        sqlite3_bind_text(p->ins, 4, s->category, -1, SQLITE_STATIC);
        sqlite3_bind_text(p->ins, 5, s->content, -1, SQLITE_STATIC);
        sqlite3_bind_text(p->ins, 6, s->metadata, -1, SQLITE_STATIC);
        sqlite3_bind_int64(p->ins, 7, ++seq);
        sqlite3_bind_text(p->ins, 8, "2026-11-29 12:00:00.000000", -1, SQLITE_STATIC);
        step_reset(p->ins);
    }
    step_reset(p->commit);
}

static rs_store *store_open(const char *path)
{
    char wal[600], shm[600];
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    unlink(path);
    unlink(wal);
    unlink(shm);
    rs_store *s;
    rs_err err = {0};
    if (rs_store_open(&s, path, NULL, &err))
        die("store open", err.msg);
    return s;
}

static void store_batch(rs_store *s, const sample *samples, int from, int n, const char *thread,
                        const char *run, rs_buf *buf)
{
    rs_buf_reset(buf);
    for (int i = 0; i < n; i++)
        rs_buf_addstr(buf, samples[(from + i) % 1000].line);
    rs_target t = {.thread_id = thread, .run_id = run};
    rs_err err = {0};
    if (rs_store_append(s, &t, buf->buf, buf->len, NULL, &err))
        die("store append", err.msg);
}

static void report(const char *what, double runfs_s, double plain_s, long items, const char *unit,
                   double runfs_cpu, double plain_cpu)
{
    printf("%-38s runfs %10.0f %s/s   sqlite %10.0f %s/s   ratio %.2fx", what, items / runfs_s,
           unit, items / plain_s, unit, plain_s / runfs_s);
    if (runfs_cpu > 0 && plain_cpu > 0)
        printf("   cpu ratio %.2fx", plain_cpu / runfs_cpu);
    printf("\n");
}

/* What one figure measures: seconds for runfs (runfs = 1) or plain SQLite (0). */
typedef struct bench {
    const char *sp, *pp; /* database paths */
    const sample *samples;
    rs_buf *buf;
    long total; /* events a put figure writes */
    int batch;
    rs_store *s; /* reads: the store and the plain database, filled once */
    plain *p;
} bench;

typedef double (*measure_fn)(bench *b, int runfs);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of 3 runs of each side, interleaved (plain, runfs, plain, ...), so that a
 * noisy machine moves both sides alike. */
static void figure(const char *what, measure_fn fn, bench *b, long items, const char *unit,
                   double *runfs_out)
{
    double r[3], p[3], rc[3], pc[3];
    for (int i = 0; i < 3; i++) {
        last_cpu = 0;
        p[i] = fn(b, 0);
        pc[i] = last_cpu;
        last_cpu = 0;
        r[i] = fn(b, 1);
        rc[i] = last_cpu;
    }
    qsort(r, 3, sizeof r[0], cmp_double);
    qsort(p, 3, sizeof p[0], cmp_double);
    qsort(rc, 3, sizeof rc[0], cmp_double);
    qsort(pc, 3, sizeof pc[0], cmp_double);
    report(what, r[1], p[1], items, unit, rc[1], pc[1]);
    if (runfs_out)
        *runfs_out = r[1];
}

static double measure_puts(bench *b, int runfs)
{
    int n = b->batch;
    double t0;
    if (!runfs) {
        plain p;
        plain_open(&p, b->pp);
        double c0 = cpu_s();
        t0 = now_s();
        for (long i = 0; i < b->total; i += n)
            plain_batch(&p, b->samples, (int)(i % 1000), n, "thread-b", "run-b");
        double t = now_s() - t0;
        last_cpu = cpu_s() - c0;
        plain_close(&p);
        return t;
    }
    rs_store *s = store_open(b->sp);
    double c0 = cpu_s();
    t0 = now_s();
    for (long i = 0; i < b->total; i += n)
        store_batch(s, b->samples, (int)(i % 1000), n, "thread-b", "run-b", b->buf);
    double t = now_s() - t0;
    last_cpu = cpu_s() - c0;
    rs_store_close(s);
    return t;
}

static long read_bytes;

static double measure_full_read(bench *b, int runfs)
{
    double t0 = now_s();
    long rows = 0;
    if (runfs) {
        rs_query q = RS_QUERY_INIT;
        q.thread_id = "thread-r";
        q.run_id = "run-r";
        rs_cursor *c;
        rs_err err = {0};
        if (rs_store_query(b->s, &q, &c, &err))
            die("query", err.msg);
        const rs_record *rec;
        read_bytes = 0;
        while (rs_cursor_next(c, &rec) == 1) {
            rows++;
            read_bytes += (long)rec->line_len;
        }
        rs_cursor_free(c);
    } else {
        sqlite3_stmt *st;
        sqlite3_prepare_v2(b->p->db,
                           "SELECT thread_id, run_id, seq, event_type, category, "
                           "content, event_metadata, created_at, user_id FROM run_events WHERE "
                           "thread_id = ? AND run_id = ? ORDER BY seq",
                           -1, &st, NULL);
        sqlite3_bind_text(st, 1, "thread-r", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, "run-r", -1, SQLITE_STATIC);
        long bytes = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            rows++;
            for (int col = 0; col < 9; col++)
                bytes += sqlite3_column_bytes(st, col);
        }
        sqlite3_finalize(st);
    }
    if (rows != b->total)
        die("read", "row count mismatch");
    return now_s() - t0;
}

/* 20 backward pages of list_messages (limit 50). */
static double measure_pages(bench *b, int runfs)
{
    double t0 = now_s();
    int64_t before = 0;
    if (runfs) {
        for (int page = 0; page < 20; page++) {
            rs_query mq = RS_QUERY_INIT;
            mq.thread_id = "thread-r";
            mq.messages_only = 1;
            mq.limit = 50;
            mq.newest = 1;
            mq.before_seq = before;
            rs_cursor *c;
            rs_err err = {0};
            if (rs_store_query(b->s, &mq, &c, &err))
                die("messages", err.msg);
            const rs_record *rec;
            int64_t first = 0;
            while (rs_cursor_next(c, &rec) == 1)
                if (!first)
                    first = rec->seq;
            rs_cursor_free(c);
            before = first;
        }
        return now_s() - t0;
    }
    sqlite3_stmt *st;
    sqlite3_prepare_v2(b->p->db,
                       "SELECT * FROM (SELECT thread_id, run_id, seq, event_type, "
                       "category, content, event_metadata, created_at, user_id FROM run_events "
                       "WHERE thread_id = ?1 AND category = 'message' AND (?2 = 0 OR seq < ?2) "
                       "ORDER BY seq DESC LIMIT 50) ORDER BY seq",
                       -1, &st, NULL);
    long bytes = 0;
    for (int page = 0; page < 20; page++) {
        sqlite3_bind_text(st, 1, "thread-r", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, before);
        int64_t first = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (!first)
                first = sqlite3_column_int64(st, 2);
            for (int col = 0; col < 9; col++)
                bytes += sqlite3_column_bytes(st, col);
        }
        sqlite3_reset(st);
        before = first;
    }
    sqlite3_finalize(st);
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    long total = argc > 2 ? atol(argv[2]) : 100000;
    char sp[512], pp[512];
    snprintf(sp, sizeof sp, "%s/bench-runfs.db", dir);
    snprintf(pp, sizeof pp, "%s/bench-plain.db", dir);
    sample *samples = calloc(1000, sizeof *samples);
    if (!samples)
        die("alloc", strerror(ENOMEM));
    for (int i = 0; i < 1000; i++)
        make_sample(&samples[i], i);
    rs_buf buf = RS_BUF_INIT;
    bench b = {.sp = sp, .pp = pp, .samples = samples, .buf = &buf, .total = total};

    printf("store benchmark: %ld events, ~%zu-byte lines, %s; each figure the median of 3 "
           "interleaved runs\n",
           total, strlen(samples[0].line), dir);
    int batches[] = {100, 1000};
    for (int i = 0; i < 2; i++) {
        char label[64];
        b.batch = batches[i];
        snprintf(label, sizeof label, "put, batches of %d", b.batch);
        figure(label, measure_puts, &b, total, "ev", NULL);
    }
    b.batch = 1;
    b.total = total / 10;
    figure("single puts (one transaction each)", measure_puts, &b, b.total, "ev", NULL);

    /* Reads: a store and a plain database holding the same run. */
    plain p;
    plain_open(&p, pp);
    rs_store *s = store_open(sp);
    for (long i = 0; i < total; i += 1000) {
        plain_batch(&p, samples, 0, 1000, "thread-r", "run-r");
        store_batch(s, samples, 0, 1000, "thread-r", "run-r", &buf);
    }
    b.s = s;
    b.p = &p;
    b.total = total;
    double runfs_s;
    figure("full read of a run (rendered lines)", measure_full_read, &b, total, "ev", &runfs_s);
    printf("%-38s runfs %8.1f MB/s of JSONL\n", "", read_bytes / runfs_s / 1e6);
    figure("20 backward pages of list_messages", measure_pages, &b, 20, "pg", &runfs_s);
    printf("%-38s runfs %.3f ms/page\n", "", runfs_s * 1000 / 20);

    rs_store_close(s);
    plain_close(&p);
    rs_buf_release(&buf);
    free(samples);
    return 0;
}
