/* bench_tools.c — small clients for scripts/bench:
 *   bench_tools latency FILE N      one event line per write() on a file held open; prints
 *                                   p50/p99/max latency in microseconds
 *   bench_tools fill STORE THREAD RUN N [BATCH]   put N realistic events straight into a store
 *   bench_tools agent STORE THREADS N   THREADS threads t1.. of N agent events each: runs of
 *                                       100 (questions, tool calls and their results, answers,
 *                                       errors with the phrases agents' logs repeat)
 *   bench_tools jsonl N             print N realistic event lines (input for cat >>, runfs put)
 *   bench_tools tail STORE THREAD RUN   the store's side of `tail -n 20`: seek near the end of
 *                                   the run's log and read its last 20 lines; median of 50
 *   bench_tools plain DB FILE       insert a JSONL file's lines into DeerFlow's table with plain
 *                                   prepared statements (one transaction per 1 MiB, like a
 *                                   write() through the mount); prints events/s and the CPU
 *                                   milliseconds the process spent */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "runstore.h"
#include "rs_util.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int line_of(char *out, size_t cap, long i)
{
    static const char words[] = "the agent reads a ledger and compares quarterly revenue "
                                "figures before writing a short summary for the user ";
    char text[300];
    size_t n = 240 + (size_t)(i % 50);
    for (size_t k = 0; k < n; k++)
        text[k] = words[(k * 7 + (size_t)i) % (sizeof words - 1)];
    text[n] = '\0';
    switch (i % 4) {
    case 0:
        return snprintf(
            out, cap,
            "{\"event_type\":\"llm.ai.response\",\"content\":{\"type\":\"ai\","
            "\"content\":\"%s\",\"id\":\"ai-%ld\",\"tool_calls\":[]},\"metadata\":"
            "{\"caller\":\"lead_agent\",\"usage\":{\"total_tokens\":%ld},\"latency_ms\":"
            "%ld,\"llm_call_index\":1}}\n",
            text, i, 100 + i % 50, i % 900);
    case 1:
        return snprintf(out, cap,
                        "{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":"
                        "\"tool\",\"content\":\"%s\",\"tool_call_id\":\"call-%ld\"}}\n",
                        text, i);
    case 2:
        return snprintf(out, cap,
                        "{\"event_type\":\"subagent.step\",\"content\":{\"task_id\":"
                        "\"task-%ld\",\"message_index\":%ld,\"kind\":\"tool\",\"text\":\"%s\","
                        "\"truncated\":false,\"tool_name\":\"read_file\"},\"metadata\":"
                        "{\"task_id\":\"task-%ld\",\"message_index\":%ld}}\n",
                        i % 7, i, text, i % 7, i);
    default:
        return snprintf(out, cap,
                        "{\"event_type\":\"llm.human.input\",\"content\":{\"type\":"
                        "\"human\",\"content\":\"%s\",\"id\":\"h-%ld\"},\"metadata\":{\"caller\":"
                        "\"lead_agent\"}}\n",
                        text, i);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmd_latency(const char *path, long n)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    double *lat = calloc((size_t)n, sizeof *lat);
    char line[1024];
    for (long i = 0; i < n; i++) {
        int len = line_of(line, sizeof line, i);
        double t0 = now_us();
        if (write(fd, line, (size_t)len) != len) {
            perror("write");
            return 1;
        }
        lat[i] = now_us() - t0;
    }
    close(fd);
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    printf("p50 %.0f us  p99 %.0f us  max %.0f us  (%ld writes)\n", lat[n / 2],
           lat[(size_t)(n * 0.99)], lat[n - 1], n);
    free(lat);
    return 0;
}

static int cmd_jsonl(long n)
{
    char line[1024];
    for (long i = 0; i < n; i++) {
        int len = line_of(line, sizeof line, i);
        fwrite(line, 1, (size_t)len, stdout);
    }
    return 0;
}

static int cmd_fill(const char *store, const char *thread, const char *run, long n, long batch)
{
    rs_store *s;
    rs_err err = {0};
    if (rs_store_open(&s, store, NULL, &err)) {
        fprintf(stderr, "fill: %s\n", err.msg);
        return 1;
    }
    rs_buf buf = RS_BUF_INIT;
    rs_target t = {.thread_id = thread, .run_id = run};
    char line[1024];
    for (long i = 0; i < n;) {
        rs_buf_reset(&buf);
        for (long k = 0; k < batch && i < n; k++, i++) {
            int len = line_of(line, sizeof line, i);
            rs_buf_add(&buf, line, (size_t)len);
        }
        if (rs_store_append(s, &t, buf.buf, buf.len, NULL, &err)) {
            fprintf(stderr, "fill: %s\n", err.msg);
            return 1;
        }
    }
    rs_buf_release(&buf);
    rs_store_close(s);
    return 0;
}

static uint64_t agent_rand(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 33;
}

/* A sentence of 12-40 words of an agent's everyday vocabulary into out. */
static size_t agent_text(char *out, size_t cap, uint64_t *x)
{
    static const char *const words[] = {
        "the",     "agent",    "reads",   "a",       "report",  "and",      "compares", "quarterly",
        "revenue", "figures",  "before",  "writing", "short",   "summary",  "for",      "user",
        "file",    "search",   "results", "show",    "three",   "matching", "rows",     "in",
        "table",   "customer", "orders",  "from",    "last",    "week",     "plan",     "next",
        "step",    "is",       "to",      "open",    "page",    "check",    "numbers",  "with",
        "python",  "script",   "output",  "looks",   "correct", "draft",    "email",    "meeting",
        "notes",   "ledger",   "update",  "status",  "done",    "pending",  "review",   "code"};
    size_t n = 12 + agent_rand(x) % 29, len = 0;
    for (size_t k = 0; k < n && len + 16 < cap; k++) {
        const char *w = words[agent_rand(x) % (sizeof words / sizeof words[0])];
        size_t wl = strlen(w);
        if (k)
            out[len++] = ' ';
        memcpy(out + len, w, wl);
        len += wl;
    }
    out[len] = '\0';
    return len;
}

/* Event j of a run (0: run.start): a step of a question, a tool call, its result (an error
 * one time in 12: a refused connection or a timeout), an answer; an llm.error now and then. */
static int agent_line(char *out, size_t cap, long j, uint64_t *x)
{
    static const char *const tools[] = {"read_file", "web_search", "run_python", "sql_query",
                                        "send_email"};
    char text[512];
    agent_text(text, sizeof text, x);
    const char *tool = tools[(j / 4) % 5];
    if (j == 0)
        return snprintf(out, cap,
                        "{\"event_type\":\"run.start\",\"content\":{\"chain\":\"lead_agent\"},"
                        "\"metadata\":{\"caller\":\"lead_agent\"}}\n");
    if (agent_rand(x) % 200 == 0)
        return snprintf(out, cap,
                        "{\"event_type\":\"llm.error\",\"content\":\"upstream model call failed: "
                        "connection refused after %ld retries\",\"metadata\":{\"caller\":"
                        "\"lead_agent\"}}\n",
                        1 + j % 3);
    switch (j % 4) {
    case 1:
        return snprintf(out, cap,
                        "{\"event_type\":\"llm.human.input\",\"content\":{\"type\":\"human\","
                        "\"content\":\"%s\",\"id\":\"h-%ld\"},\"metadata\":{\"caller\":"
                        "\"lead_agent\"}}\n",
                        text, j);
    case 2:
        return snprintf(out, cap,
                        "{\"event_type\":\"llm.ai.response\",\"content\":{\"type\":\"ai\","
                        "\"content\":\"\",\"id\":\"ai-%ld\",\"tool_calls\":[{\"id\":\"call-%ld\","
                        "\"name\":\"%s\",\"args\":{\"query\":\"%.60s\"}}]},\"metadata\":{"
                        "\"caller\":\"lead_agent\",\"usage\":{\"input_tokens\":%lu,"
                        "\"output_tokens\":%lu,\"total_tokens\":%lu},\"latency_ms\":%lu,"
                        "\"llm_call_index\":%ld}}\n",
                        j, j, tool, text, (unsigned long)(200 + j % 90),
                        (unsigned long)(20 + j % 30), (unsigned long)(220 + j % 120),
                        (unsigned long)(300 + agent_rand(x) % 900), j / 4 + 1);
    case 3:
        if (agent_rand(x) % 12 == 0)
            return snprintf(out, cap,
                            "{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":\"tool\","
                            "\"content\":\"Error: %s failed: connection refused by db-%lu "
                            "(errno 111)\",\"tool_call_id\":\"call-%ld\",\"status\":\"error\"},"
                            "\"metadata\":{\"caller\":\"lead_agent\"}}\n",
                            tool, (unsigned long)(agent_rand(x) % 16), j - 1);
        if (agent_rand(x) % 24 == 0)
            return snprintf(out, cap,
                            "{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":\"tool\","
                            "\"content\":\"Error: %s timed out after 30 seconds\","
                            "\"tool_call_id\":\"call-%ld\",\"status\":\"error\"},\"metadata\":{"
                            "\"caller\":\"lead_agent\"}}\n",
                            tool, j - 1);
        return snprintf(out, cap,
                        "{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":\"tool\","
                        "\"content\":\"%s\",\"tool_call_id\":\"call-%ld\",\"status\":"
                        "\"success\"},\"metadata\":{\"caller\":\"lead_agent\"}}\n",
                        text, j - 1);
    default:
        return snprintf(out, cap,
                        "{\"event_type\":\"llm.ai.response\",\"content\":{\"type\":\"ai\","
                        "\"content\":\"%s\",\"id\":\"ai-%ld\",\"tool_calls\":[]},\"metadata\":{"
                        "\"caller\":\"lead_agent\",\"usage\":{\"total_tokens\":%lu},"
                        "\"latency_ms\":%lu,\"llm_call_index\":%ld}}\n",
                        text, j, (unsigned long)(150 + j % 70),
                        (unsigned long)(200 + agent_rand(x) % 700), j / 4 + 1);
    }
}

static int cmd_agent(const char *store, long threads, long n)
{
    rs_store *s;
    rs_err err = {0};
    if (rs_store_open(&s, store, NULL, &err)) {
        fprintf(stderr, "agent: %s\n", err.msg);
        return 1;
    }
    rs_buf buf = RS_BUF_INIT;
    char line[2048], thread[32], run[32];
    uint64_t x = 42;
    int rc = 0;
    for (long t = 1; !rc && t <= threads; t++) {
        for (long i = 0; !rc && i < n; i += 100) {
            rs_buf_reset(&buf);
            for (long j = 0; j < 100 && i + j < n; j++) {
                int len = agent_line(line, sizeof line, j, &x);
                if (len < 0 || (size_t)len >= sizeof line || rs_buf_add(&buf, line, (size_t)len))
                    rc = 1;
            }
            snprintf(thread, sizeof thread, "t%ld", t);
            snprintf(run, sizeof run, "r%ld", i / 100 + 1);
            rs_target tg = {.thread_id = thread, .run_id = run};
            if (!rc && rs_store_append(s, &tg, buf.buf, buf.len, NULL, &err)) {
                fprintf(stderr, "agent: %s\n", err.msg);
                rc = 1;
            }
        }
    }
    rs_buf_release(&buf);
    rs_store_close(s);
    return rc;
}

/* The plain-SQLite figure for `cat file >> events.jsonl`: same rows, same transaction sizes,
 * the JSON taken as it comes (no validation, no canonical form, no offsets). */
static int cmd_plain(const char *dbpath, const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        perror(file);
        return 1;
    }
    unlink(dbpath);
    sqlite3 *db;
    sqlite3_open(dbpath, &db);
    sqlite3_exec(
        db,
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        "CREATE TABLE run_events (id INTEGER NOT NULL, thread_id VARCHAR(64) NOT NULL,"
        " run_id VARCHAR(64) NOT NULL, user_id VARCHAR(64), event_type VARCHAR(32) NOT NULL,"
        " category VARCHAR(16) NOT NULL, content TEXT NOT NULL, event_metadata JSON NOT NULL,"
        " seq INTEGER NOT NULL, created_at DATETIME NOT NULL, PRIMARY KEY (id),"
        " CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq));"
        "CREATE INDEX ix_events_run ON run_events (thread_id, run_id, seq);"
        "CREATE INDEX ix_events_thread_cat_seq ON run_events (thread_id, category, seq);"
        "CREATE INDEX ix_run_events_user_id ON run_events (user_id);",
        NULL, NULL, NULL);
    sqlite3_stmt *ins;
    sqlite3_prepare_v2(db,
                       "INSERT INTO run_events (thread_id, run_id, event_type, category, "
                       "content, event_metadata, seq, created_at) VALUES ('t', 'r', 'x', "
                       "'message', ?, '{}', ?, '2026-11-29 12:00:00.000000')",
                       -1, &ins, NULL);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long seq = 0, in_tx = 0;
    double t0 = now_us();
    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    while ((len = getline(&line, &cap, f)) > 0) {
        if (in_tx + len > 1024 * 1024) {
            sqlite3_exec(db, "COMMIT; BEGIN IMMEDIATE", NULL, NULL, NULL);
            in_tx = 0;
        }
        in_tx += len;
        sqlite3_bind_text(ins, 1, line, (int)len, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 2, ++seq);
        sqlite3_step(ins);
        sqlite3_reset(ins);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    double secs = (now_us() - t0) / 1e6;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    printf("%.0f %.0f\n", seq / secs, cpu_ms);
    free(line);
    fclose(f);
    sqlite3_finalize(ins);
    sqlite3_close(db);
    return 0;
}

static int cmd_tail(const char *store, const char *thread, const char *run)
{
    rs_store *s;
    rs_err err = {0};
    rs_options opt = RS_OPTIONS_INIT;
    opt.read_only = 1;
    if (rs_store_open(&s, store, &opt, &err)) {
        fprintf(stderr, "tail: %s\n", err.msg);
        return 1;
    }
    double us[50];
    long lines = 0;
    for (int i = 0; i < 50; i++) {
        double t0 = now_us();
        rs_log_info info;
        rs_cursor *c;
        if (rs_store_log_info(s, thread, run, NULL, &info, &err) ||
            rs_store_log_seek(s, thread, run, info.size > 20000 ? info.size - 20000 : 0, &c,
                              &err)) {
            fprintf(stderr, "tail: %s\n", err.msg);
            return 1;
        }
        const rs_record *rec;
        lines = 0;
        while (rs_cursor_next(c, &rec) == 1)
            lines++;
        rs_cursor_free(c);
        us[i] = now_us() - t0;
    }
    qsort(us, 50, sizeof us[0], cmp_double);
    printf("%.0f us (median of 50; %ld lines from the last 20 kB)\n", us[25], lines);
    rs_store_close(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "latency") == 0)
        return cmd_latency(argv[2], atol(argv[3]));
    if (argc >= 3 && strcmp(argv[1], "jsonl") == 0)
        return cmd_jsonl(atol(argv[2]));
    if (argc >= 6 && strcmp(argv[1], "fill") == 0)
        return cmd_fill(argv[2], argv[3], argv[4], atol(argv[5]), argc > 6 ? atol(argv[6]) : 2000);
    if (argc >= 5 && strcmp(argv[1], "agent") == 0)
        return cmd_agent(argv[2], atol(argv[3]), atol(argv[4]));
    if (argc >= 5 && strcmp(argv[1], "tail") == 0)
        return cmd_tail(argv[2], argv[3], argv[4]);
    if (argc >= 4 && strcmp(argv[1], "plain") == 0)
        return cmd_plain(argv[2], argv[3]);
    fprintf(stderr, "usage: bench_tools latency FILE N | jsonl N | fill STORE T R N [BATCH] | "
                    "agent STORE THREADS N | tail STORE T R | plain DB FILE\n");
    return 2;
}
