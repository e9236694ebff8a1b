/* test_store.c — the store engine through its public API (runstore.h) on real SQLite files in
 * temp dirs: every operation of spec sections 4 and 5 and every edge they name, DeerFlow's
 * own database, threads and processes. Raw sqlite3 only inspects or tampers with the file;
 * one test holds a write transaction through the backend's own sq_begin.
 * Expected values are written out by hand, never computed by the code under test. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "runstore.h"
#include "rs_util.h"
/* White box for one test only (test_write_lock_per_database): hold a database's write lock. */
#include "sqlite_int.h"
#include "store_int.h"
#include "unit.h"


/* ---- events ------------------------------------------------------------------------------- */

#define TS "\"created_at\":\"2026-01-02T03:04:05Z\""
#define ERR(text) "{\"event_type\":\"llm.error\",\"content\":\"" text "\"," TS "}\n"
#define ERR_META(text, meta) \
    "{\"event_type\":\"llm.error\",\"content\":\"" text "\",\"metadata\":" meta "," TS "}\n"
#define START "{\"event_type\":\"run.start\",\"content\":{\"chain\":\"lead_agent\"}," \
              "\"metadata\":{\"caller\":\"lead_agent\"}," TS "}\n"
#define END(n) "{\"event_type\":\"run.end\",\"content\":{\"n\":" #n "}," \
               "\"metadata\":{\"status\":\"success\"}," TS "}\n"
#define HUMAN(id) "{\"event_type\":\"llm.human.input\",\"content\":{\"type\":\"human\"," \
                  "\"content\":\"q\",\"id\":\"" id "\"},\"metadata\":{\"caller\":\"lead_agent\"}," \
                  TS "}\n"
#define AI(id, caller) "{\"event_type\":\"llm.ai.response\",\"content\":{\"type\":\"ai\"," \
                       "\"content\":\"a\",\"tool_calls\":[],\"id\":\"" id "\"},\"metadata\":" \
                       "{\"caller\":\"" caller "\",\"usage\":{},\"latency_ms\":1," \
                       "\"llm_call_index\":1}," TS "}\n"
#define TOOL(call, id) "{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":\"tool\"," \
                       "\"content\":\"r\",\"tool_call_id\":\"" call "\",\"id\":\"" id "\"}," \
                       TS "}\n"
#define SUB_START(task) "{\"event_type\":\"subagent.start\",\"content\":{\"task_id\":\"" task \
                        "\",\"description\":null},\"metadata\":{\"task_id\":\"" task "\"}," TS "}\n"
#define SUB_STEP(task) "{\"event_type\":\"subagent.step\",\"content\":{\"task_id\":\"" task \
                       "\",\"message_index\":0,\"kind\":\"tool\",\"text\":\"t\"," \
                       "\"truncated\":false,\"tool_name\":\"ls\"},\"metadata\":{\"task_id\":\"" \
                       task "\",\"message_index\":0}," TS "}\n"
#define SUB_END(task) "{\"event_type\":\"subagent.end\",\"content\":{\"task_id\":\"" task \
                      "\",\"status\":\"completed\"},\"metadata\":{\"task_id\":\"" task "\"}," \
                      TS "}\n"
#define TERMINAL(status, recovered, extra) \
    "{\"content\":{\"status\":\"" status "\"},\"metadata\":{\"protocol_version\":1," \
    "\"recovered\":" recovered extra "}," TS "}"

/* The canonical line of ERR(text) at seq in t1/r1, owner alice. */
#define ERR_LINE(seq, text) \
    "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":" #seq ",\"event_type\":\"llm.error\"," \
    "\"category\":\"trace\",\"content\":\"" text "\",\"metadata\":{}," \
    "\"created_at\":\"2026-01-02T03:04:05.000000+00:00\",\"user_id\":\"alice\"}\n"

/* ---- fixture: a fresh store file in a private temp dir per test --------------------------- */

typedef struct fixture {
    char dir[256];
    char db[320];
    rs_store *s;
} fixture;

static fixture fx;

static rs_store *open_store(const char *path, size_t max_event, int read_only)
{
    rs_options opt = RS_OPTIONS_INIT;
    opt.contract_path = UNIT_CONTRACT;
    opt.max_event_bytes = max_event;
    opt.read_only = read_only;
    rs_store *s = NULL;
    rs_err err = {0};
    int rc = rs_store_open(&s, path, &opt, &err);
    if (rc)
        fail_msg("open %s: %s: %s", path, rs_errno_name(rc), err.msg);
    return s;
}

static int setup(void **state)
{
    (void)state;
    unit_tmp_template(fx.dir, sizeof fx.dir, "rs-store");
    if (!mkdtemp(fx.dir))
        return -1;
    snprintf(fx.db, sizeof fx.db, "%s/store.db", fx.dir);
    fx.s = open_store(fx.db, 0, 0);
    return 0;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state)
{
    (void)state;
    rs_store_close(fx.s);
    fx.s = NULL;
    remove_dir(fx.dir);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------- */

static rs_target tgt(const char *thread, const char *run, const char *user)
{
    return (rs_target){.thread_id = thread, .run_id = run, .user = user};
}

static void put_in(rs_store *s, const char *thread, const char *run, const char *user,
                   const char *lines)
{
    rs_target t = tgt(thread, run, user);
    rs_err err = {0};
    int rc = rs_store_append(s, &t, lines, strlen(lines), NULL, &err);
    if (rc)
        fail_msg("append %s/%s: %s (line %ld): %s", thread, run, rs_errno_name(rc), err.line,
                 err.msg);
}

static void put(const char *thread, const char *run, const char *user, const char *lines)
{
    put_in(fx.s, thread, run, user, lines);
}

/* Seqs of a query, space separated ("" when none). Rotating buffers so two may be compared. */
static const char *seqs_of(const rs_query *q)
{
    static char bufs[4][16384];
    static int next;
    char *out = bufs[next++ & 3];
    out[0] = '\0';
    rs_cursor *c = NULL;
    rs_err err = {0};
    int rc = rs_store_query(fx.s, q, &c, &err);
    if (rc)
        fail_msg("query: %s: %s", rs_errno_name(rc), err.msg);
    const rs_record *r;
    size_t len = 0;
    while ((rc = rs_cursor_next(c, &r)) == 1)
        len += (size_t)snprintf(out + len, sizeof bufs[0] - len, "%s%lld", len ? " " : "",
                                (long long)r->seq);
    assert_int_equal(rc, 0);
    rs_cursor_free(c);
    return out;
}

/* All lines of a cursor, concatenated; checks each record's fields agree with its line. */
static void drain(rs_cursor *c, rs_buf *out)
{
    const rs_record *r;
    int rc;
    while ((rc = rs_cursor_next(c, &r)) == 1) {
        assert_int_equal(r->line[r->line_len - 1], '\n');
        assert_int_equal(strlen(r->line), r->line_len);
        assert_int_equal(rs_buf_add(out, r->line, r->line_len), 0);
    }
    assert_int_equal(rc, 0);
    rs_cursor_free(c);
}

static void query_lines(const rs_query *q, rs_buf *out)
{
    rs_cursor *c = NULL;
    rs_err err = {0};
    int rc = rs_store_query(fx.s, q, &c, &err);
    if (rc)
        fail_msg("query: %s: %s", rs_errno_name(rc), err.msg);
    drain(c, out);
}

static const char *names_of(rs_names_kind kind, const char *thread, const char *run,
                            const char *user)
{
    static char out[4096];
    out[0] = '\0';
    rs_names *n = NULL;
    rs_err err = {0};
    int rc = rs_store_names(fx.s, kind, thread, run, user, &n, &err);
    if (rc)
        fail_msg("names: %s: %s", rs_errno_name(rc), err.msg);
    const char *name;
    size_t len = 0;
    while ((rc = rs_names_next(n, &name)) == 1)
        len += (size_t)snprintf(out + len, sizeof out - len, "%s%s", len ? " " : "", name);
    assert_int_equal(rc, 0);
    rs_names_free(n);
    return out;
}

static rs_log_info info_of(const char *thread, const char *run, const char *user)
{
    rs_log_info li;
    rs_err err = {0};
    int rc = rs_store_log_info(fx.s, thread, run, user, &li, &err);
    if (rc)
        fail_msg("log_info: %s: %s", rs_errno_name(rc), err.msg);
    return li;
}

static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 30000);
    return db;
}

static int64_t raw_int(const char *path, const char *sql)
{
    sqlite3 *db = raw_open(path);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* The first column of the first row as text (caller frees), NULL when none. */
static char *raw_text(const char *path, const char *sql)
{
    sqlite3 *db = raw_open(path);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    char *v = NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static int raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = raw_open(path);
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

/* Every row of every table (the schema too), byte for byte: a refused write must leave it. */
static char *snapshot(const char *path)
{
    sqlite3 *db = raw_open(path);
    rs_buf out = RS_BUF_INIT;
    sqlite3_stmt *tables = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT name, sql FROM sqlite_master ORDER BY name",
                                        -1, &tables, NULL), SQLITE_OK);
    while (sqlite3_step(tables) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(tables, 0);
        const char *sql = (const char *)sqlite3_column_text(tables, 1);
        assert_int_equal(rs_buf_addf(&out, "== %s\n%s\n", name, sql ? sql : ""), 0);
        if (!sql || strncmp(sql, "CREATE TABLE", 12) != 0)
            continue;
        /* ordered by every column, so the dump does not depend on the query plan */
        char q[512];
        int len = snprintf(q, sizeof q, "SELECT * FROM \"%s\"", name);
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
        int ncol = sqlite3_column_count(st);
        sqlite3_finalize(st);
        for (int i = 1; i <= ncol; i++)
            len += snprintf(q + len, sizeof q - (size_t)len, "%s%d", i == 1 ? " ORDER BY " : ", ", i);
        assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int i = 0; i < sqlite3_column_count(st); i++) {
                const void *v = sqlite3_column_blob(st, i);
                int n = sqlite3_column_bytes(st, i);
                assert_int_equal(rs_buf_addf(&out, "%d:", sqlite3_column_type(st, i)), 0);
                if (n)
                    assert_int_equal(rs_buf_add(&out, v, (size_t)n), 0);
                assert_int_equal(rs_buf_addch(&out, '|'), 0);
            }
            assert_int_equal(rs_buf_addch(&out, '\n'), 0);
        }
        sqlite3_finalize(st);
    }
    sqlite3_finalize(tables);
    sqlite3_close(db);
    size_t len;
    return rs_buf_detach(&out, &len);
}

static void copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    assert_int_equal(n, 0);
    close(in);
    close(out);
}

/* ---- opening ------------------------------------------------------------------------------------ */

static void test_open(void **state)
{
    (void)state;
    /* default options: the contract found, no reason left behind on success */
    char path[512];
    snprintf(path, sizeof path, "%s/defaults.db", fx.dir);
    rs_store *s = NULL;
    rs_err err = {0};
    assert_int_equal(rs_store_open(&s, path, NULL, &err), 0);
    assert_int_equal(err.code, 0);
    assert_string_equal(err.msg, "");
    assert_string_equal(rs_store_backend(s), "sqlite");
    assert_string_equal(rs_store_path(s), path);
    assert_string_equal(rs_store_name(s), "defaults.db");
    assert_int_equal(rs_store_max_event(s), RS_DEFAULT_MAX_EVENT);
    size_t len = 0;
    const char *text = rs_store_contract_text(s, &len);
    assert_non_null(text);
    assert_true(len > 1000);
    assert_non_null(strstr(text, "\"run.terminal\""));
    /* WAL, and DeerFlow's tables in the new file */
    assert_int_equal(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name IN "
                                   "('run_events', 'run_event_thread_seq', 'uq_events_thread_seq', "
                                   "'ix_events_run', 'ix_events_thread_cat_seq', "
                                   "'ix_run_events_user_id', 'runfs_ix_terminal')"), 6);
    char *mode = raw_text(path, "PRAGMA journal_mode");
    assert_string_equal(mode, "wal");
    free(mode);
    /* another connection's commit changes the data version */
    int64_t v1 = 0, v2 = 0;
    assert_int_equal(rs_store_data_version(s, &v1), 0);
    put_in(fx.s, "t1", "r1", NULL, ERR("x"));
    assert_int_equal(rs_store_data_version(s, &v2), 0);
    assert_true(v1 == v2);
    rs_store_close(s);
    assert_int_equal(rs_store_data_version(fx.s, &v1), 0);
    s = open_store(fx.db, 0, 0);
    put_in(s, "t1", "r1", NULL, ERR("y"));
    rs_store_close(s);
    assert_int_equal(rs_store_data_version(fx.s, &v2), 0);
    assert_true(v1 != v2);

    /* not a database, no such directory, no such contract */
    snprintf(path, sizeof path, "%s/garbage.db", fx.dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    char junk[4096];
    memset(junk, 'j', sizeof junk);
    assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    close(fd);
    s = (rs_store *)1;
    assert_int_equal(rs_store_open(&s, path, NULL, &err), -EINVAL);
    assert_int_equal(err.code, -EINVAL);
    snprintf(path, sizeof path, "%s/no/such/dir.db", fx.dir);
    assert_int_equal(rs_store_open(&s, path, NULL, &err), -ENOENT);
    rs_options opt = RS_OPTIONS_INIT;
    opt.contract_path = "/nonexistent/contract.json";
    assert_int_equal(rs_store_open(&s, fx.db, &opt, &err), -ENOENT);
    assert_true(err.msg[0] != '\0');
}

/* Options and queries not started from their _INIT macro (version 0), or from a newer
 * header than this library's, are refused rather than misread. */
/* A scoped mount names a PostgreSQL store by user, host, port and database: never its
 * password, never a socket directory, however the URI spells them. */
static void test_pg_uri_name(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"postgresql:///events?host=/run/pg&port=5433&user=runfs", "postgresql://runfs@:5433/events"},
        {"postgresql://runfs:secret@%2Fvar%2Frun%2Fpostgresql/events",
         "postgresql://runfs@/events"},
        {"postgres://runfs:secret@db.example:6432/events?sslmode=require&password=x",
         "postgresql://runfs@db.example:6432/events"},
        {"postgresql://db.example/events?host=@abstract", "postgresql:///events"},
        {"postgresql:///events", "postgresql:///events"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *name = rs_pg_backend.uri_name(cases[i][0]);
        assert_non_null(name);
        assert_string_equal(name, cases[i][1]);
        free(name);
    }
}

/* The URI shown in status.json, the fsname, the log and connection errors comes from libpq's
 * own parse: no password or sslpassword however it is spelled; the rest is kept. */
static void test_pg_uri_display(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"postgresql:///db?host=/run/postgresql&password=secret", "postgresql:///db?host=/run/postgresql"},
        {"postgresql:///db?host=/run/postgresql&sslpassword=secret&sslmode=require",
         "postgresql:///db?host=/run/postgresql&sslmode=require"},
        {"postgresql://runfs:secret@db.example:6432/events", "postgresql://runfs@db.example:6432/events"},
        {"postgres://runfs:s%65cret@db.example/events?password=secret&application_name=a%26b",
         "postgresql://runfs@db.example/events?application_name=a%26b"},
        {"postgresql://runfs:secret@%2Fvar%2Frun%2Fpostgresql/events",
         "postgresql://runfs@/events?host=/var/run/postgresql"},
        {"host=/tmp dbname=events password=secret user=runfs", "postgresql://runfs@/events?host=/tmp"},
        {"postgresql://h1:5432,h2:5433/events?password=secret", "postgresql:///events?host=h1%2Ch2&port=5432%2C5433"},
        {"postgresql:///events", "postgresql:///events"},
        {"postgresql://%zz", "postgresql://(a URI libpq cannot parse)"},
        /* nothing secret: shown as written */
        {"postgresql://runfs@:5433/events?host=/run/pg", "postgresql://runfs@:5433/events?host=/run/pg"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *shown = rs_pg_backend.uri_display(cases[i][0]);
        assert_non_null(shown);
        assert_string_equal(shown, cases[i][1]);
        assert_null(strstr(shown, "secret"));
        free(shown);
    }
}

static void test_struct_versions(void **state)
{
    (void)state;
    rs_store *s = NULL;
    rs_err err = {0};
    rs_options opt = {.contract_path = UNIT_CONTRACT};
    assert_int_equal(rs_store_open(&s, fx.db, &opt, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "RS_OPTIONS_INIT"));
    opt.version = RS_OPTIONS_VERSION + 1;
    assert_int_equal(rs_store_open(&s, fx.db, &opt, &err), -EINVAL);
    opt.version = RS_OPTIONS_VERSION;
    assert_int_equal(rs_store_open(&s, fx.db, &opt, &err), 0);
    rs_store_close(s);
    /* a program built against an older version hands over a shorter struct: nothing past it
     * is read (ASan would say so) */
    const size_t sizes[] = {offsetof(rs_options, busy_notice), offsetof(rs_options, owners_apart),
                            offsetof(rs_options, pin_file),    offsetof(rs_options, progress),
                            offsetof(rs_options, seal_key),    offsetof(rs_options, notice),
                            offsetof(rs_options, cache_kib)};
    _Static_assert(sizeof sizes / sizeof *sizes == RS_OPTIONS_VERSION - 1,
                   "a size for every older version");
    for (unsigned int v = 1; v < RS_OPTIONS_VERSION; v++) {
        unsigned char *old = malloc(sizes[v - 1]);
        assert_non_null(old);
        opt.version = v;
        memcpy(old, &opt, sizes[v - 1]);
        assert_int_equal(rs_store_open(&s, fx.db, (const rs_options *)(void *)old, &err), 0);
        rs_store_close(s);
        free(old);
    }
    put("t1", "r1", "alice", ERR("a"));
    rs_query q = {.thread_id = "t1"};
    rs_cursor *c = NULL;
    assert_int_equal(rs_store_query(fx.s, &q, &c, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "RS_QUERY_INIT"));
    q.version = RS_QUERY_VERSION + 1;
    assert_int_equal(rs_store_query(fx.s, &q, &c, &err), -EINVAL);
    q.version = RS_QUERY_VERSION;
    assert_string_equal(seqs_of(&q), "1");
}

/* Read-only opens write nothing: a missing store stays missing, a foreign file keeps its
 * bytes, and rows added behind runfs's back are still shown. */
static void test_read_only_writes_nothing(void **state)
{
    (void)state;
    char path[sizeof fx.dir + 32], wal[sizeof fx.db + 8];
    rs_options ro = RS_OPTIONS_INIT;
    ro.contract_path = RS_CONTRACT_SOURCE;
    ro.read_only = 1;
    rs_store *s = NULL;
    rs_err err = {0};
    snprintf(path, sizeof path, "%s/missing.db", fx.dir);
    assert_int_equal(rs_store_open(&s, path, &ro, &err), -ENOENT);
    assert_int_equal(access(path, F_OK), -1);

    /* A SQLite file without run_events is no store. */
    snprintf(path, sizeof path, "%s/other.db", fx.dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(x)", NULL, NULL,
                                  NULL), SQLITE_OK);
    sqlite3_close(db);
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(rs_store_open(&s, path, &ro, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "no run_events table"));

    /* A runfs store, closed, then a row added by another program: shown, nothing written. */
    put_in(fx.s, "t1", "r1", NULL, ERR("a"));
    rs_store_close(fx.s);
    fx.s = NULL;
    assert_int_equal(sqlite3_open(fx.db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO run_events (thread_id, run_id, event_type, "
                                  "category, content, event_metadata, seq, created_at) VALUES "
                                  "('t1', 'r1', 'llm.error', 'trace', 'b', '{}', 2, "
                                  "'2026-01-01 00:00:00')", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(stat(fx.db, &before), 0);
    assert_int_equal(rs_store_open(&s, fx.db, &ro, &err), 0);
    rs_log_info info;
    assert_int_equal(rs_store_log_info(s, "t1", "r1", NULL, &info, &err), 0);
    assert_int_equal(info.count, 2);
    rs_target t = tgt("t1", "r1", NULL);
    assert_int_equal(rs_store_append(s, &t, ERR("c"), strlen(ERR("c")), NULL, &err), -EROFS);
    rs_store_close(s);
    assert_int_equal(stat(fx.db, &after), 0);
    assert_int_equal(before.st_size, after.st_size);
    assert_int_equal(before.st_mtime, after.st_mtime);
    /* SQLite's own read-only open may leave the WAL's index beside the file and an empty
     * WAL, never a frame in it */
    snprintf(wal, sizeof wal, "%s-wal", fx.db);
    struct stat ws;
    assert_true(stat(wal, &ws) != 0 || ws.st_size == 0);
    fx.s = open_store(fx.db, 0, 0);
}

/* --stamp-time: created_at is the store's. */
static void test_stamp_time(void **state)
{
    (void)state;
    rs_options opt = RS_OPTIONS_INIT;
    opt.contract_path = RS_CONTRACT_SOURCE;
    opt.stamp_time = 1;
    rs_store *s = NULL;
    rs_err err = {0};
    assert_int_equal(rs_store_open(&s, fx.db, &opt, &err), 0);
    rs_target t = tgt("t1", "r1", NULL);
    const char given[] = "{\"event_type\":\"llm.error\",\"content\":\"x\","
                         "\"created_at\":\"2001-01-01T00:00:00Z\"}\n";
    const char plain[] = "{\"event_type\":\"llm.error\",\"content\":\"x\"}\n";
    assert_int_equal(rs_store_append(s, &t, given, strlen(given), NULL, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "--stamp-time"));
    assert_int_equal(rs_store_append(s, &t, plain, strlen(plain), NULL, &err), 0);
    rs_store_close(s);
}

/* ---- put / put_batch ------------------------------------------------------------------------ */

static void test_append_consecutive_seqs(void **state)
{
    (void)state;
    rs_target t = tgt("t1", "r1", "alice");
    rs_buf stored = RS_BUF_INIT;
    rs_err err = {0};
    const char batch[] = ERR("a") ERR("b") ERR("c");
    assert_int_equal(rs_store_append(fx.s, &t, batch, strlen(batch), &stored, &err), 0);
    assert_string_equal(stored.buf, ERR_LINE(1, "a") ERR_LINE(2, "b") ERR_LINE(3, "c"));
    /* a last line without its newline counts too */
    rs_buf_reset(&stored);
    const char last[] = "{\"event_type\":\"llm.error\",\"content\":\"d\"," TS "}";
    assert_int_equal(rs_store_append(fx.s, &t, last, strlen(last), &stored, &err), 0);
    assert_string_equal(stored.buf, ERR_LINE(4, "d"));
    /* nothing to store is no storage work */
    rs_buf_reset(&stored);
    assert_int_equal(rs_store_append(fx.s, &t, "", 0, &stored, &err), 0);
    assert_int_equal(stored.len, 0);
    put("t1", "r2", "alice", ERR("e") ERR("f"));
    put("t1", "r1", "alice", ERR("g"));
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "t1";
    assert_string_equal(seqs_of(&q), "1 2 3 4 5 6 7");
    q.run_id = "r2";
    assert_string_equal(seqs_of(&q), "5 6");
    /* seq is per thread: another thread starts at 1 */
    rs_target t2 = tgt("t2", "r1", NULL);
    rs_buf_reset(&stored);
    assert_int_equal(rs_store_append(fx.s, &t2, ERR("x"), strlen(ERR("x")), &stored, &err), 0);
    assert_string_equal(stored.buf,
                        "{\"thread_id\":\"t2\",\"run_id\":\"r1\",\"seq\":1,\"event_type\":"
                        "\"llm.error\",\"category\":\"trace\",\"content\":\"x\",\"metadata\":{},"
                        "\"created_at\":\"2026-01-02T03:04:05.000000+00:00\"}\n");
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events"), 8);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events WHERE thread_id = 't2' "
                                    "AND user_id IS NULL"), 1);
    rs_buf_release(&stored);
}

static void test_batch_atomic(void **state)
{
    (void)state;
    put("t1", "r1", "alice", ERR("a") ERR("b"));
    char *before = snapshot(fx.db);
    rs_target t = tgt("t1", "r1", "alice");
    rs_buf stored = RS_BUF_INIT;
    assert_int_equal(rs_buf_addstr(&stored, "kept\n"), 0);
    rs_err err = {0};
    const char batch[] = ERR("c") ERR("d") "{\"event_type\":\"llm.error\",\"seq\":9}\n" ERR("e");
    assert_int_equal(rs_store_append(fx.s, &t, batch, strlen(batch), &stored, &err), -EINVAL);
    assert_int_equal(err.code, -EINVAL);
    assert_int_equal(err.line, 3);
    assert_string_equal(stored.buf, "kept\n");
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events"), 2);
    char *after = snapshot(fx.db);
    assert_string_equal(before, after);
    free(after);
    /* a new thread and run refused as a whole leave no trace either */
    rs_target t9 = tgt("t9", "r9", "alice");
    const char batch9[] = ERR("c") "{\"event_type\":\"llm.error\",\"content\":7}\n";
    assert_int_equal(rs_store_append(fx.s, &t9, batch9, strlen(batch9), NULL, &err), -EINVAL);
    assert_int_equal(err.line, 2);
    after = snapshot(fx.db);
    assert_string_equal(before, after);
    free(after);
    free(before);
    /* and the next good batch continues at 3 */
    rs_buf_reset(&stored);
    assert_int_equal(rs_store_append(fx.s, &t, ERR("c"), strlen(ERR("c")), &stored, &err), 0);
    assert_string_equal(stored.buf, ERR_LINE(3, "c"));
    rs_buf_release(&stored);
}

static void test_event_size_limit(void **state)
{
    (void)state;
    rs_store *small = open_store(fx.db, 100, 0);
    rs_target t = tgt("t1", "r1", NULL);
    rs_err err = {0};
    /* exactly 100 bytes (without the newline) is accepted; 101 is not */
    char ok[128], big[128];
    snprintf(ok, sizeof ok, "{\"event_type\":\"llm.error\",\"content\":\"%061d\"}", 0);
    snprintf(big, sizeof big, "{\"event_type\":\"llm.error\",\"content\":\"%062d\"}", 0);
    assert_int_equal(strlen(ok), 100);
    assert_int_equal(strlen(big), 101);
    assert_int_equal(rs_store_max_event(small), 100);
    assert_int_equal(rs_store_append(small, &t, ok, strlen(ok), NULL, &err), 0);
    char *before = snapshot(fx.db);
    assert_int_equal(rs_store_append(small, &t, big, strlen(big), NULL, &err), -EMSGSIZE);
    assert_int_equal(err.code, -EMSGSIZE);
    assert_int_equal(err.line, 1);
    char two[512];
    snprintf(two, sizeof two, "%s\n%s\n", ok, big);
    assert_int_equal(rs_store_append(small, &t, two, strlen(two), NULL, &err), -EMSGSIZE);
    assert_int_equal(err.line, 2);
    char *after = snapshot(fx.db);
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* the default limit is 1 MiB: the same line passes the default store */
    assert_int_equal(rs_store_max_event(fx.s), 1024 * 1024);
    assert_int_equal(rs_store_append(fx.s, &t, big, strlen(big), NULL, &err), 0);
    rs_store_close(small);
    assert_int_equal(raw_int(fx.db, "SELECT max(seq) FROM run_events"), 2);
}

/* ---- refusals: errno and an unchanged store --------------------------------------------------- */

#define MW "{\"name\":\"M\",\"hook\":\"h\",\"action\":\"warn\",\"changes\":{}}"
#define AIC "{\"type\":\"ai\",\"content\":\"hi\",\"tool_calls\":[]}"
#define AIM(extra) "{\"caller\":\"lead_agent\",\"usage\":{},\"latency_ms\":1,\"llm_call_index\":1" \
                   extra "}"
#define LN(s) s, sizeof(s) - 1

static const struct bad_input {
    const char *thread, *run;    /* NULL thread: t1/r1 */
    const char *line;
    size_t len;
    int code;
} bad_inputs[] = {
    /* malformed JSON, not an object */
    {NULL, NULL, LN("\n"), EINVAL},
    {NULL, NULL, LN("{"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\" \"content\":\"x\"}"), EINVAL},
    {NULL, NULL, LN("{event_type:\"llm.error\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\"} x"), EINVAL},
    {NULL, NULL, LN("[{\"event_type\":\"llm.error\"}]"), EINVAL},
    {NULL, NULL, LN("null"), EINVAL},
    {NULL, NULL, LN("\"llm.error\""), EINVAL},
    /* envelope fields */
    {NULL, NULL, LN("{\"event_type\":1}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"\"}"), EINVAL},
    {NULL, NULL, LN("{\"content\":\"x\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"category\":7}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"metadata\":\"x\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"metadata\":[]}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"metadata\":null}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"created_at\":1767225600}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"abcdefghij.abcdefghij.abcdefghij.x\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"middleware:abcdefghijklmnopqrstuv\",\"content\":" MW "}"),
     EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"middleware:\",\"content\":" MW "}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"category\":\"abcdefghijklmnopq\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.made.up\",\"content\":\"x\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.ai.response\",\"category\":\"trace\",\"content\":" AIC
                    ",\"metadata\":" AIM("") "}"), EINVAL},
    /* store-owned, unknown and duplicate fields */
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"seq\":5}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"user_id\":\"mallory\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"foo\":1}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"event_type\":\"llm.error\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"content\":\"x\",\"metadata\":"
                    "{\"content_is_json\":true}}"), EINVAL},
    /* ids in the line against the target */
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"thread_id\":\"t2\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"run_id\":\"r2\"}"), EINVAL},
    /* bytes */
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"content\":\"\\u0000\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"content\":\"\xff\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"content\":\"\\ud800\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"content\":\"\x01\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"content\":\"a\0b\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"run.end\",\"content\":{\"x\":1e999},\"metadata\":"
                    "{\"status\":\"success\"}}"), EINVAL},
    /* created_at */
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"created_at\":\"2026-02-30T00:00:00Z\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.error\",\"created_at\":\"yesterday\"}"), EINVAL},
    /* contract schemas */
    {NULL, NULL, LN("{\"event_type\":\"run.start\",\"content\":{\"name\":\"x\"},\"metadata\":"
                    "{\"caller\":\"lead_agent\"}}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"run.end\",\"content\":{},\"metadata\":{\"status\":\"error\"}}"),
     EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"run.error\",\"content\":{\"e\":1},\"metadata\":"
                    "{\"error_type\":\"X\"}}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.human.input\",\"content\":{\"type\":\"human\","
                    "\"content\":\"q\"},\"metadata\":{\"caller\":\"subagent:x\"}}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.ai.response\",\"content\":{\"type\":\"ai\","
                    "\"content\":\"hi\"},\"metadata\":" AIM("") "}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.ai.response\",\"content\":" AIC ",\"metadata\":"
                    "{\"caller\":\"lead_agent\",\"usage\":{},\"latency_ms\":-1,"
                    "\"llm_call_index\":1}}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"llm.tool.result\",\"content\":{\"content\":\"r\"}}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"context:memory\",\"content\":{\"content_sha256\":\"abc\"}}"),
     EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"subagent.start\",\"content\":{\"task_id\":\"c\","
                    "\"description\":\"d\"}}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"subagent.end\",\"content\":{\"task_id\":\"c\","
                    "\"status\":\"done\"},\"metadata\":{\"task_id\":\"c\"}}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"workspace_changes\",\"content\":\"2 files\"}"), EINVAL},
    {NULL, NULL, LN("{\"event_type\":\"middleware:guardrail\",\"content\":\"blocked\"}"), EINVAL},
    /* a singleton cannot be appended: once/<type> is its only way in */
    {NULL, NULL, LN("{\"event_type\":\"run.terminal\",\"content\":{\"status\":\"success\"},"
                    "\"metadata\":{\"protocol_version\":1,\"recovered\":false}}"), EINVAL},
    /* targets */
    {"bad/thread", "r1", LN("{\"event_type\":\"llm.error\"}"), EINVAL},
    {"t1", "", LN("{\"event_type\":\"llm.error\"}"), EINVAL},
    {"t1", "r.1", LN("{\"event_type\":\"llm.error\"}"), EINVAL},
    {"", "r1", LN("{\"event_type\":\"llm.error\"}"), EINVAL},
    {"t123456789012345678901234567890123456789012345678901234567890abcd", "r1",
     LN("{\"event_type\":\"llm.error\"}"), EINVAL},
};

static void test_bad_inputs_leave_store_unchanged(void **state)
{
    (void)state;
    size_t n = sizeof bad_inputs / sizeof bad_inputs[0];
    assert_true(n >= 40);
    put("t1", "r1", "alice", START ERR("a"));
    put("t1", "r2", "bob", ERR("b"));
    char *before = snapshot(fx.db);
    for (size_t i = 0; i < n; i++) {
        const struct bad_input *b = &bad_inputs[i];
        int is_target = b->thread != NULL;
        rs_target t = is_target ? tgt(b->thread, b->run, "alice") : tgt("t1", "r1", "alice");
        /* alone, then after a good line: the batch is refused whole */
        for (int prefixed = 0; prefixed < 2; prefixed++) {
            rs_buf in = RS_BUF_INIT, stored = RS_BUF_INIT;
            if (prefixed)
                assert_int_equal(rs_buf_addstr(&in, ERR("good")), 0);
            assert_int_equal(rs_buf_add(&in, b->line, b->len), 0);
            rs_err err = {0};
            int rc = rs_store_append(fx.s, &t, in.buf, in.len, &stored, &err);
            if (rc != -b->code)
                fail_msg("case %zu%s: %.120s: got %s (%s), want %s", i, prefixed ? "+" : "",
                         b->line, rs_errno_name(rc), err.msg, rs_errno_name(b->code));
            assert_int_equal(err.code, rc);
            assert_true(err.msg[0] != '\0');
            assert_int_equal(err.line, is_target ? 0 : 1 + prefixed);
            assert_int_equal(stored.len, 0);
            rs_buf_release(&in);
            rs_buf_release(&stored);
        }
        char *after = snapshot(fx.db);
        if (strcmp(before, after))
            fail_msg("case %zu changed the store", i);
        free(after);
    }
    free(before);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events"), 3);
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "t1";
    assert_string_equal(seqs_of(&q), "1 2 3");
    put("t1", "r1", "alice", ERR("c"));
    assert_string_equal(seqs_of(&q), "1 2 3 4");
}

static void test_read_only(void **state)
{
    (void)state;
    put("t1", "r1", "alice", ERR("a"));
    rs_store *ro = open_store(fx.db, 0, 1);
    char *before = snapshot(fx.db);
    rs_target t = tgt("t1", "r1", "alice");
    rs_err err = {0};
    int64_t n = 0;
    int created = 0;
    const char *term = TERMINAL("success", "false", "");
    assert_int_equal(rs_store_append(ro, &t, ERR("b"), strlen(ERR("b")), NULL, &err), -EROFS);
    assert_int_equal(rs_store_put_singleton(ro, &t, "run.terminal", term, strlen(term), 1, NULL,
                                            &err), -EROFS);
    assert_int_equal(rs_store_put_if_absent(ro, &t, END(1), strlen(END(1)), NULL, &created, &err),
                     -EROFS);
    assert_int_equal(rs_store_reserve_singleton(ro, &t, "run.terminal", &err), -EROFS);
    assert_int_equal(rs_store_delete_run(ro, &t, &n, &err), -EROFS);
    assert_int_equal(rs_store_delete_thread(ro, "t1", NULL, &n, &err), -EROFS);
    assert_int_equal(rs_store_create_thread(ro, "t5", NULL, &err), -EROFS);
    assert_int_equal(err.code, -EROFS);
    rs_log_info li;
    assert_int_equal(rs_store_log_info(ro, "t1", NULL, NULL, &li, &err), 0);
    assert_int_equal(li.count, 1);
    rs_store_close(ro);
    char *after = snapshot(fx.db);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

/* ---- list_messages / list_messages_by_run / list_events --------------------------------------- */

/* Thread w: seq 1-10 in r1, 11-12 in r2; messages at 2 4 5 7 10 11, trace rows in between. */
static void fill_window_thread(void)
{
    put("w", "r1", "alice", START HUMAN("h1") ERR("e3") AI("a1", "lead_agent") TOOL("c1", "t1")
                                ERR("e6") AI("a2", "lead_agent") ERR("e8") ERR("e9")
                                AI("a3", "lead_agent"));
    put("w", "r2", "alice", HUMAN("h2") END(1));
}

static void test_list_messages_windows(void **state)
{
    (void)state;
    fill_window_thread();
    static const struct {
        int64_t after, before, limit;
        const char *run;
        const char *want;
    } cases[] = {
        /* neither cursor: the newest limit rows */
        {0, 0, 3, NULL, "7 10 11"},
        {0, 0, 50, NULL, "2 4 5 7 10 11"},
        {0, 0, 0, NULL, "2 4 5 7 10 11"},
        {0, 0, 1, NULL, "11"},
        /* before only: the newest limit rows below it, cursors in gaps included */
        {0, 7, 2, NULL, "4 5"},
        {0, 6, 2, NULL, "4 5"},
        {0, 3, 5, NULL, "2"},
        {0, 2, 5, NULL, ""},
        {0, 1, 5, NULL, ""},
        {0, 100, 2, NULL, "10 11"},
        /* after only: the oldest limit rows above it */
        {3, 0, 2, NULL, "4 5"},
        {5, 0, 2, NULL, "7 10"},
        {8, 0, 50, NULL, "10 11"},
        {1, 0, 1, NULL, "2"},
        {11, 0, 5, NULL, ""},
        {12, 0, 5, NULL, ""},
        /* both: the oldest limit rows strictly between */
        {3, 11, 2, NULL, "4 5"},
        {3, 11, 50, NULL, "4 5 7 10"},
        {6, 9, 5, NULL, "7"},
        {7, 10, 5, NULL, ""},
        {1, 12, 3, NULL, "2 4 5"},
        {9, 3, 5, NULL, ""},
        /* list_messages_by_run: the same table within one run */
        {0, 0, 2, "r1", "7 10"},
        {0, 0, 50, "r1", "2 4 5 7 10"},
        {4, 0, 2, "r1", "5 7"},
        {0, 10, 2, "r1", "5 7"},
        {2, 10, 50, "r1", "4 5 7"},
        {3, 8, 1, "r1", "4"},
        {0, 0, 50, "r2", "11"},
        {0, 11, 50, "r2", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rs_query q = RS_QUERY_INIT;
        q.thread_id = "w";
        q.run_id = cases[i].run;
        q.messages_only = 1;
        q.after_seq = cases[i].after;
        q.before_seq = cases[i].before;
        q.limit = cases[i].limit;
        q.newest = 1;
        const char *got = seqs_of(&q);
        if (strcmp(got, cases[i].want))
            fail_msg("case %zu (after %lld before %lld limit %lld run %s): got '%s' want '%s'", i,
                     (long long)cases[i].after, (long long)cases[i].before,
                     (long long)cases[i].limit, cases[i].run ? cases[i].run : "-", got,
                     cases[i].want);
    }
    /* the owner filter applies to windows too */
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "w";
    q.messages_only = 1;
    q.limit = 50;
    q.newest = 1;
    q.user = "alice";
    assert_string_equal(seqs_of(&q), "2 4 5 7 10 11");
    q.user = "bob";
    assert_string_equal(seqs_of(&q), "");
    /* limit < 1 is refused (0 means no limit in this API) */
    rs_cursor *c = NULL;
    rs_err err = {0};
    q.user = NULL;
    q.limit = -1;
    assert_int_equal(rs_store_query(fx.s, &q, &c, &err), -EINVAL);
    assert_null(c);
    rs_query bad = RS_QUERY_INIT;
    bad.thread_id = "w/x";
    assert_int_equal(rs_store_query(fx.s, &bad, &c, &err), -EINVAL);
    bad = (rs_query)RS_QUERY_INIT;
    bad.thread_id = "w";
    bad.run_id = "r 1";
    assert_int_equal(rs_store_query(fx.s, &bad, &c, &err), -EINVAL);
    /* an unknown thread is simply empty */
    rs_query none = RS_QUERY_INIT;
    none.thread_id = "nope";
    none.messages_only = 1;
    none.limit = 50;
    none.newest = 1;
    assert_string_equal(seqs_of(&none), "");
}

static void test_list_events(void **state)
{
    (void)state;
    fill_window_thread();
    /* every category of one run, ascending, first limit rows */
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "w";
    q.run_id = "r1";
    q.limit = 500;
    assert_string_equal(seqs_of(&q), "1 2 3 4 5 6 7 8 9 10");
    q.limit = 3;
    assert_string_equal(seqs_of(&q), "1 2 3");
    q.after_seq = 6;
    q.limit = 2;
    assert_string_equal(seqs_of(&q), "7 8");
    q.after_seq = 0;
    q.limit = 0;
    q.run_id = "r2";
    assert_string_equal(seqs_of(&q), "11 12");

    /* event_types: membership, applied before limit */
    const char *err_only[] = {"llm.error"};
    const char *two[] = {"llm.error", "run.start"};
    q = (rs_query)RS_QUERY_INIT;
    q.thread_id = "w";
    q.run_id = "r1";
    q.event_types = err_only;
    q.n_event_types = 1;
    q.limit = 500;
    assert_string_equal(seqs_of(&q), "3 6 8 9");
    q.event_types = two;
    q.n_event_types = 2;
    q.limit = 3;
    assert_string_equal(seqs_of(&q), "1 3 6");
    q.after_seq = 6;
    assert_string_equal(seqs_of(&q), "8 9");
    /* an empty list of types matches nothing; NULL matches any */
    q = (rs_query)RS_QUERY_INIT;
    q.thread_id = "w";
    q.run_id = "r1";
    q.event_types = two;
    q.n_event_types = 0;
    assert_string_equal(seqs_of(&q), "");
    const char *types[65];
    for (int i = 0; i < 65; i++)
        types[i] = "llm.error";
    q = (rs_query)RS_QUERY_INIT;
    q.thread_id = "w";
    q.run_id = "r1";
    q.event_types = types;
    q.n_event_types = 64;
    assert_string_equal(seqs_of(&q), "3 6 8 9");
    q.n_event_types = 65;
    rs_cursor *c = NULL;
    rs_err err = {0};
    assert_int_equal(rs_store_query(fx.s, &q, &c, &err), -EINVAL);

    /* task_id: equality with metadata.task_id as a string */
    put("k", "r1", NULL, SUB_START("call_1") SUB_STEP("call_1") SUB_START("call_2")
                             ERR_META("n", "{\"task_id\":7}") ERR_META("s", "{\"task_id\":\"7\"}")
                             SUB_END("call_1") ERR("none"));
    q = (rs_query)RS_QUERY_INIT;
    q.thread_id = "k";
    q.run_id = "r1";
    q.task_id = "call_1";
    assert_string_equal(seqs_of(&q), "1 2 6");
    q.task_id = "7";
    assert_string_equal(seqs_of(&q), "5");
    q.task_id = "call_2";
    assert_string_equal(seqs_of(&q), "3");
    q.task_id = "nope";
    assert_string_equal(seqs_of(&q), "");
    const char *end_only[] = {"subagent.end"};
    q = (rs_query)RS_QUERY_INIT;
    q.thread_id = "k";
    q.run_id = "r1";
    q.task_id = "call_1";
    q.event_types = end_only;
    q.n_event_types = 1;
    assert_string_equal(seqs_of(&q), "6");
    q = (rs_query)RS_QUERY_INIT;
    q.thread_id = "k";
    q.run_id = "r1";
    q.task_id = "call_1";
    q.after_seq = 1;
    q.limit = 1;
    assert_string_equal(seqs_of(&q), "2");
    /* tasks/ lists only string task ids; types/ the types present */
    assert_string_equal(names_of(RS_NAMES_TASKS, "k", "r1", NULL), "7 call_1 call_2");
    assert_string_equal(names_of(RS_NAMES_TYPES, "k", "r1", NULL),
                        "llm.error subagent.end subagent.start subagent.step");
    assert_string_equal(names_of(RS_NAMES_RUNS, "w", NULL, NULL), "r1 r2");
    assert_string_equal(names_of(RS_NAMES_THREADS, NULL, NULL, NULL), "w k");

    /* the record fields match the line */
    rs_buf lines = RS_BUF_INIT;
    q = (rs_query)RS_QUERY_INIT;
    q.thread_id = "k";
    q.run_id = "r1";
    q.task_id = "call_2";
    query_lines(&q, &lines);
    assert_string_equal(lines.buf,
                        "{\"thread_id\":\"k\",\"run_id\":\"r1\",\"seq\":3,\"event_type\":"
                        "\"subagent.start\",\"category\":\"subagent\",\"content\":{\"task_id\":"
                        "\"call_2\",\"description\":null},\"metadata\":{\"task_id\":\"call_2\"},"
                        "\"created_at\":\"2026-01-02T03:04:05.000000+00:00\"}\n");
    rs_buf_release(&lines);
}

/* ---- high-water mark (spec 4) ------------------------------------------------------------------ */

static int64_t floor_of(const char *thread)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT seq FROM run_event_thread_seq WHERE thread_id = '%s'",
             thread);
    return raw_int(fx.db, sql);
}

static void delete_run(const char *thread, const char *run, const char *user, int64_t want)
{
    rs_target t = tgt(thread, run, user);
    rs_err err = {0};
    int64_t n = -1;
    int rc = rs_store_delete_run(fx.s, &t, &n, &err);
    if (rc)
        fail_msg("delete_run: %s: %s", rs_errno_name(rc), err.msg);
    assert_int_equal(n, want);
}

static void delete_thread(const char *thread, const char *user, int64_t want)
{
    rs_err err = {0};
    int64_t n = -1;
    int rc = rs_store_delete_thread(fx.s, thread, user, &n, &err);
    if (rc)
        fail_msg("delete_thread: %s: %s", rs_errno_name(rc), err.msg);
    assert_int_equal(n, want);
}

static void test_high_water_run_delete(void **state)
{
    (void)state;
    put("h", "r1", NULL, ERR("a"));
    put("h", "r2", NULL, ERR("b"));
    assert_int_equal(info_of("h", NULL, NULL).hwm, 2);
    delete_run("h", "r2", NULL, 1);
    /* the mark stays at 2 although MAX(seq) is 1 */
    assert_int_equal(raw_int(fx.db, "SELECT max(seq) FROM run_events WHERE thread_id = 'h'"), 1);
    assert_int_equal(info_of("h", NULL, NULL).hwm, 2);
    assert_int_equal(floor_of("h"), 2);
    put("h", "r1", NULL, ERR("c"));
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "h";
    assert_string_equal(seqs_of(&q), "1 3");
    assert_int_equal(info_of("h", NULL, NULL).hwm, 3);
    assert_int_equal(floor_of("h"), 3);
    /* deleting every run empties the thread but never lowers the mark */
    delete_run("h", "r1", NULL, 2);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events WHERE thread_id = 'h'"), 0);
    assert_int_equal(info_of("h", NULL, NULL).hwm, 3);
    put("h", "r3", NULL, ERR("d"));
    assert_string_equal(seqs_of(&q), "4");
    /* deleting an absent run or thread deletes nothing and keeps the mark */
    delete_run("h", "nope", NULL, 0);
    delete_thread("none", NULL, 0);
    assert_int_equal(info_of("h", NULL, NULL).hwm, 4);
}

/* An append inserts its rows with the connection's triggers off and leaves them so for the
 * next one (sqlite_write.c). Any other write through the same store switches them on first,
 * whether the append went in or was refused between its inserts (a used idempotency key,
 * looked up after the rows before it went in): a delete still moves 'rewrites', which only
 * runfs_count_deleted does. */
static void test_refused_append_keeps_triggers(void **state)
{
    (void)state;
    put("q", "r1", NULL,
        "{\"event_type\":\"llm.error\",\"content\":\"first\",\"idempotency_key\":\"k1\"," TS
        "}\n");
    rs_buf in = RS_BUF_INIT;
    for (int i = 0; i < 300; i++)
        assert_int_equal(rs_buf_addstr(&in, i == 150 ? "{\"event_type\":\"llm.error\",\"content\":"
                                                      "\"other\",\"idempotency_key\":\"k1\"," TS "}\n"
                                                    : ERR("row")),
                         0);
    rs_target t = tgt("q", "r1", NULL);
    rs_err err = {0};
    assert_int_equal(rs_store_append(fx.s, &t, in.buf, in.len, NULL, &err), -EEXIST);
    assert_non_null(strstr(err.msg, "was used for a different event"));
    rs_buf_release(&in);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events"), 1);
    int64_t before = raw_int(fx.db, "SELECT value FROM runfs_meta WHERE key = 'rewrites'");
    delete_run("q", "r1", NULL, 1);
    assert_int_equal(raw_int(fx.db, "SELECT value FROM runfs_meta WHERE key = 'rewrites'"),
                     before + 1);
    /* single puts, the second continuing the first, then a delete */
    put("q", "r2", NULL, ERR("one"));
    put("q", "r2", NULL, ERR("two"));
    delete_run("q", "r2", NULL, 2);
    assert_int_equal(raw_int(fx.db, "SELECT value FROM runfs_meta WHERE key = 'rewrites'"),
                     before + 3);
}

/* An append into a store runfs made leaves the connection's triggers off (sqlite_write.c's
 * list names every trigger runfs makes: one missing from it kept every append's rows under
 * runfs_replace_note, and the list was read again at every put). A trigger of another's
 * keeps them on, for every append, and its drop lets them off again. */
static void test_append_quiet_in_runfs_store(void **state)
{
    (void)state;
    put("qa", "r1", NULL, ERR("one"));
    put("qa", "r1", NULL, ERR("two"));
    assert_int_equal(fx.s->be->quiet, 1);
    assert_int_equal(raw_exec(fx.db, "CREATE TABLE other_log (n INTEGER); CREATE TRIGGER "
                                     "other_insert AFTER INSERT ON run_events BEGIN INSERT INTO "
                                     "other_log VALUES (new.seq); END"),
                     SQLITE_OK);
    put("qa", "r2", NULL, ERR("three"));
    put("qa", "r2", NULL, ERR("four"));
    assert_int_equal(fx.s->be->quiet, 0);
    /* the other's trigger saw both rows (seqs 3 and 4 of the thread) */
    char *seen = raw_text(fx.db, "SELECT group_concat(n) FROM (SELECT n FROM other_log ORDER BY n)");
    assert_non_null(seen);
    assert_string_equal(seen, "3,4");
    free(seen);
    assert_int_equal(raw_exec(fx.db, "DROP TRIGGER other_insert"), SQLITE_OK);
    put("qa", "r2", NULL, ERR("five"));
    assert_int_equal(fx.s->be->quiet, 1);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM other_log"), 2);
}

static int64_t conn_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

/* An append of multi-row statements keeps SQLite's statement journal in memory
 * (temp_store=MEMORY from its BEGIN) and leaves the connection's temp_store at the default
 * after it, whether it went in or was refused; the rows of a refused one are all gone. */
static void test_batch_journal_in_memory(void **state)
{
    (void)state;
    rs_buf in = RS_BUF_INIT;
    for (int i = 0; i < 100; i++)
        assert_int_equal(rs_buf_addstr(&in, ERR("row")), 0);
    rs_target t = tgt("jm", "r1", NULL);
    rs_err err = {0};
    assert_int_equal(rs_store_append(fx.s, &t, in.buf, in.len, NULL, &err), 0);
    assert_int_equal(conn_int(fx.s->be->db, "PRAGMA temp_store"), 0);
    /* refused at its 70th line (an idempotency key used for another event), after the 69
     * rows before it went in, in 32- and 8-row statements */
    put("jm", "r1", NULL,
        "{\"event_type\":\"llm.error\",\"content\":\"keyed\",\"idempotency_key\":\"k1\"," TS
        "}\n");
    rs_buf_reset(&in);
    for (int i = 0; i < 100; i++)
        assert_int_equal(rs_buf_addstr(&in, i == 69 ? "{\"event_type\":\"llm.error\",\"content\":"
                                                     "\"other\",\"idempotency_key\":\"k1\"," TS "}\n"
                                                   : ERR("more")),
                         0);
    assert_int_equal(rs_store_append(fx.s, &t, in.buf, in.len, NULL, &err), -EEXIST);
    assert_int_equal(conn_int(fx.s->be->db, "PRAGMA temp_store"), 0);
    rs_buf_release(&in);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events WHERE thread_id = 'jm'"), 101);
    put("jm", "r1", NULL, ERR("after"));
    assert_int_equal(raw_int(fx.db, "SELECT max(seq) FROM run_events WHERE thread_id = 'jm'"), 102);
    assert_int_equal(info_of("jm", "r1", NULL).count, 102);
}

static void test_high_water_thread_delete(void **state)
{
    (void)state;
    /* bob's row survives alice's thread delete: the floor holds, although MAX(seq) drops */
    put("h", "r1", "bob", ERR("a"));
    put("h", "r1", "alice", ERR("b") ERR("c"));
    delete_thread("h", "alice", 2);
    assert_int_equal(raw_int(fx.db, "SELECT max(seq) FROM run_events WHERE thread_id = 'h'"), 1);
    assert_int_equal(info_of("h", NULL, NULL).hwm, 3);
    assert_int_equal(floor_of("h"), 3);
    put("h", "r2", "alice", ERR("d"));
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "h";
    assert_string_equal(seqs_of(&q), "1 4");
    /* the whole thread deleted: the next write starts again at 1 */
    delete_thread("h", NULL, 2);
    assert_int_equal(floor_of("h"), -1);
    assert_false(info_of("h", NULL, NULL).exists);
    put("h", "r1", "alice", ERR("e"));
    assert_string_equal(seqs_of(&q), "1");
    assert_int_equal(info_of("h", NULL, NULL).hwm, 1);

    /* the last run deleted first, then the (now empty) thread: back to 1 as well */
    put("g", "r1", NULL, ERR("a"));
    put("g", "r2", NULL, ERR("b"));
    delete_run("g", "r2", NULL, 1);
    delete_run("g", "r1", NULL, 1);
    assert_int_equal(floor_of("g"), 2);
    delete_thread("g", NULL, 0);
    assert_int_equal(floor_of("g"), -1);
    put("g", "r3", NULL, ERR("c"));
    rs_query qg = RS_QUERY_INIT;
    qg.thread_id = "g";
    assert_string_equal(seqs_of(&qg), "1");

    /* an owner's delete that leaves no row of anyone drops the mark too */
    put("f", "r1", "alice", ERR("a") ERR("b"));
    delete_thread("f", "alice", 2);
    assert_int_equal(floor_of("f"), -1);
    put("f", "r1", "alice", ERR("c"));
    rs_query qf = RS_QUERY_INIT;
    qf.thread_id = "f";
    assert_string_equal(seqs_of(&qf), "1");
    /* other threads were never touched */
    assert_string_equal(seqs_of(&q), "1");
}

/* ---- owner scoping (spec 5.11, 5.12) ----------------------------------------------------------- */

static void test_owner_scoping(void **state)
{
    (void)state;
    put("o", "r1", "alice", HUMAN("h1") ERR("a"));
    put("o", "r1", "bob", AI("a1", "lead_agent"));
    put("o", "r2", "bob", ERR("b"));
    put("p", "r1", "alice", ERR("c"));
    put("q", "r1", NULL, HUMAN("h9"));

    rs_query q = RS_QUERY_INIT;
    q.thread_id = "o";
    q.user = "alice";
    assert_string_equal(seqs_of(&q), "1 2");
    q.user = "bob";
    assert_string_equal(seqs_of(&q), "3 4");
    q.user = "carol";
    assert_string_equal(seqs_of(&q), "");
    q.user = NULL;
    assert_string_equal(seqs_of(&q), "1 2 3 4");
    q = (rs_query)RS_QUERY_INIT;
    q.thread_id = "q";
    q.user = "alice";
    assert_string_equal(seqs_of(&q), "");

    assert_true(info_of("o", NULL, "alice").exists);
    assert_false(info_of("o", NULL, "carol").exists);
    assert_false(info_of("p", NULL, "bob").exists);
    assert_false(info_of("o", "r2", "alice").exists);
    assert_true(info_of("o", "r2", "bob").exists);
    assert_false(info_of("q", NULL, "alice").exists);
    rs_log_info li = info_of("o", NULL, "alice");
    assert_int_equal(li.count, 2);
    assert_int_equal(li.message_count, 1);
    assert_int_equal(li.last_seq, 2);
    assert_false(li.exact);
    li = info_of("p", NULL, "alice");
    assert_true(li.exact);
    assert_int_equal(li.count, 1);

    assert_string_equal(names_of(RS_NAMES_THREADS, NULL, NULL, "alice"), "o p");
    assert_string_equal(names_of(RS_NAMES_THREADS, NULL, NULL, "bob"), "o");
    assert_string_equal(names_of(RS_NAMES_THREADS, NULL, NULL, "carol"), "");
    assert_string_equal(names_of(RS_NAMES_THREADS, NULL, NULL, NULL), "o p q");
    assert_string_equal(names_of(RS_NAMES_RUNS, "o", NULL, "alice"), "r1");
    assert_string_equal(names_of(RS_NAMES_RUNS, "o", NULL, "bob"), "r1 r2");
    assert_string_equal(names_of(RS_NAMES_RUNS, "o", NULL, NULL), "r1 r2");
    assert_string_equal(names_of(RS_NAMES_TYPES, "o", "r1", "alice"), "llm.error llm.human.input");
    assert_string_equal(names_of(RS_NAMES_TYPES, "o", "r1", "bob"), "llm.ai.response");

    int64_t n = -1;
    rs_err err = {0};
    assert_int_equal(rs_store_count_messages(fx.s, "o", "alice", &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rs_store_count_messages(fx.s, "o", "carol", &n, &err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(rs_store_count_messages(fx.s, "o", NULL, &n, &err), 0);
    assert_int_equal(n, 2);

    /* deletes remove only the caller's rows */
    delete_run("o", "r1", "carol", 0);
    delete_run("o", "r2", "alice", 0);
    delete_thread("o", "carol", 0);
    delete_run("o", "r1", "alice", 2);
    q = (rs_query)RS_QUERY_INIT;
    q.thread_id = "o";
    assert_string_equal(seqs_of(&q), "3 4");
    assert_int_equal(info_of("o", NULL, NULL).hwm, 4);
    put("o", "r1", "alice", ERR("again"));
    delete_thread("o", "bob", 2);
    assert_string_equal(seqs_of(&q), "5");
    q.user = "alice";
    assert_string_equal(seqs_of(&q), "5");
    assert_string_equal(names_of(RS_NAMES_THREADS, NULL, NULL, "bob"), "");
    assert_false(info_of("o", NULL, "bob").exists);
    assert_true(info_of("o", NULL, "alice").exists);
    /* user NULL deletes every owner's rows */
    put("o", "r1", "bob", ERR("b2"));
    delete_thread("o", NULL, 2);
    assert_false(info_of("o", NULL, NULL).exists);
    assert_string_equal(names_of(RS_NAMES_THREADS, NULL, NULL, NULL), "p q");
}

/* ---- put_if_absent and singletons (spec 5.3, 10.3) --------------------------------------------- */

#define END_LINE(seq, n) \
    "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":" #seq ",\"event_type\":\"run.end\"," \
    "\"category\":\"outputs\",\"content\":{\"n\":" #n "},\"metadata\":{\"status\":\"success\"}," \
    "\"created_at\":\"2026-01-02T03:04:05.000000+00:00\",\"user_id\":\"alice\"}\n"

static void test_put_if_absent_earliest(void **state)
{
    (void)state;
    /* run.end is not a singleton: two of them can be appended */
    put("t1", "r1", "alice", ERR("a") END(1) END(2));
    rs_target t = tgt("t1", "r1", "alice");
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    int created = -1;
    char *before = snapshot(fx.db);
    assert_int_equal(rs_store_put_if_absent(fx.s, &t, END(3), strlen(END(3)), &out, &created,
                                            &err), 0);
    assert_int_equal(created, 0);
    assert_string_equal(out.buf, END_LINE(2, 1));
    char *after = snapshot(fx.db);
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* another owner asking gets the same earliest row, owner kept */
    rs_target tb = tgt("t1", "r1", "bob");
    rs_buf_reset(&out);
    assert_int_equal(rs_store_put_if_absent(fx.s, &tb, END(4), strlen(END(4)), &out, &created,
                                            &err), 0);
    assert_int_equal(created, 0);
    assert_string_equal(out.buf, END_LINE(2, 1));
    /* absent: written like put */
    rs_buf_reset(&out);
    const char *e = "{\"event_type\":\"run.error\",\"content\":\"boom\",\"metadata\":"
                    "{\"error_type\":\"X\"}," TS "}";
    assert_int_equal(rs_store_put_if_absent(fx.s, &t, e, strlen(e), &out, &created, &err), 0);
    assert_int_equal(created, 1);
    const char *err_line = "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":4,\"event_type\":"
                           "\"run.error\",\"category\":\"error\",\"content\":\"boom\",\"metadata\":"
                           "{\"error_type\":\"X\"},\"created_at\":"
                           "\"2026-01-02T03:04:05.000000+00:00\",\"user_id\":\"alice\"}\n";
    assert_string_equal(out.buf, err_line);
    rs_buf_reset(&out);
    const char *e2 = "{\"event_type\":\"run.error\",\"content\":\"other\",\"metadata\":"
                     "{\"error_type\":\"Y\"}}";
    assert_int_equal(rs_store_put_if_absent(fx.s, &t, e2, strlen(e2), &out, &created, &err), 0);
    assert_int_equal(created, 0);
    assert_string_equal(out.buf, err_line);
    /* the identity is per run */
    rs_target t2 = tgt("t1", "r2", "alice");
    assert_int_equal(rs_store_put_if_absent(fx.s, &t2, e2, strlen(e2), NULL, &created, &err), 0);
    assert_int_equal(created, 1);
    /* an invalid body is refused, not compared */
    assert_int_equal(rs_store_put_if_absent(fx.s, &t, "{\"event_type\":\"run.error\"}", 26, NULL,
                                            &created, &err), -EINVAL);
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "t1";
    assert_string_equal(seqs_of(&q), "1 2 3 4 5");
    rs_buf_release(&out);
}

static void test_terminal_singleton_in_runfs(void **state)
{
    (void)state;
    rs_target t = tgt("t1", "r1", "alice");
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    const char *term = TERMINAL("success", "false", "");
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", term, strlen(term), 1, &out,
                                            &err), RS_CONFIRMED_NEW);
    assert_string_equal(out.buf,
                        "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":1,\"event_type\":"
                        "\"run.terminal\",\"category\":\"trace\",\"content\":{\"status\":"
                        "\"success\"},\"metadata\":{\"protocol_version\":1,\"recovered\":false},"
                        "\"created_at\":\"2026-01-02T03:04:05.000000+00:00\",\"user_id\":\"alice\"}\n");
    /* runfs adds no constraint to DeerFlow's table: its index of terminals is not unique */
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' "
                                    "AND name = 'runfs_ix_terminal' AND sql NOT LIKE '%UNIQUE%'"),
                     1);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' "
                                    "AND tbl_name = 'run_events' AND sql LIKE '%UNIQUE%'"),
                     0);
    static const char dup[] =
        "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, "
        "event_metadata, seq, created_at) VALUES ('t1', 'r1', 'alice', 'run.terminal', 'trace', "
        "'{\"status\": \"error\"}', '{\"protocol_version\": 1, \"recovered\": false, "
        "\"content_is_json\": true, \"content_is_dict\": true}', 2, '2026-01-02 03:04:06.000000')";
    /* DeerFlow's own writer may store a second one (its code keeps the singleton itself);
     * runfs's put still confirms the first */
    assert_int_equal(raw_exec(fx.db, dup), SQLITE_OK);
    rs_buf_reset(&out);
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", term, strlen(term), 0, &out,
                                            &err), RS_CONFIRMED_EXISTING);
    assert_non_null(strstr(out.buf, "\"seq\":1,"));
    /* a raw terminal for another run is fine: the index is per run */
    static const char other[] =
        "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, "
        "event_metadata, seq, created_at) VALUES ('t1', 'r2', 'alice', 'run.terminal', 'trace', "
        "'{\"status\": \"error\"}', '{\"protocol_version\": 1, \"recovered\": false, "
        "\"content_is_json\": true, \"content_is_dict\": true}', 3, '2026-01-02 03:04:06.000000')";
    assert_int_equal(raw_exec(fx.db, other), SQLITE_OK);
    /* and the store takes the foreign row in: rendered, counted, seq continues */
    rs_target t2 = tgt("t1", "r2", "alice");
    int created = -1;
    rs_buf_reset(&out);
    const char *again = TERMINAL("success", "false", "");
    assert_int_equal(rs_store_put_if_absent(fx.s, &t2, again, strlen(again), &out, &created, &err),
                     -EINVAL);   /* no event_type in the body: put_if_absent needs one */
    const char *full = "{\"event_type\":\"run.terminal\",\"content\":{\"status\":\"success\"},"
                       "\"metadata\":{\"protocol_version\":1,\"recovered\":false}}";
    assert_int_equal(rs_store_put_if_absent(fx.s, &t2, full, strlen(full), &out, &created, &err),
                     0);
    assert_int_equal(created, 0);
    assert_string_equal(out.buf,
                        "{\"thread_id\":\"t1\",\"run_id\":\"r2\",\"seq\":3,\"event_type\":"
                        "\"run.terminal\",\"category\":\"trace\",\"content\":{\"status\":"
                        "\"error\"},\"metadata\":{\"protocol_version\":1,\"recovered\":false},"
                        "\"created_at\":\"2026-01-02T03:04:06.000000+00:00\",\"user_id\":\"alice\"}\n");
    put("t1", "r1", "alice", ERR("x"));
    assert_int_equal(raw_int(fx.db, "SELECT max(seq) FROM run_events"), 4);
    assert_int_equal(info_of("t1", NULL, NULL).count, 4);
    rs_buf_release(&out);
}

/* runfs put routes a line by it: only a top-level event_type the contract marks singleton
 * counts, not the name elsewhere in the line. */
/* rs_store_steps_put_many keeps each run's bytes in one call, and leaves out only the one
 * made at a rewrites count the store no longer has. */
static void test_steps_put_many(void **state)
{
    (void)state;
    int64_t rw = -1;
    assert_int_equal(rs_store_rewrites(fx.s, &rw), 0);
    assert_true(rw >= 0);
    rs_target t[3] = {{.thread_id = "t", .run_id = "a"},
                      {.thread_id = "t", .run_id = "b"},
                      {.thread_id = "u", .run_id = "a"}};
    rs_steps v[3] = {{&t[0], 7, rw, "first", 5}, {&t[1], 7, rw + 1, "stale", 5},
                     {&t[2], 7, rw, "third!", 6}};
    assert_int_equal(rs_store_steps_put_many(fx.s, v, 3), 0);
    rs_buf got = RS_BUF_INIT;
    assert_int_equal(rs_store_steps_get(fx.s, &t[0], 7, &got), 1);
    assert_memory_equal(got.buf, "first", 5);
    rs_buf_reset(&got);
    assert_int_equal(rs_store_steps_get(fx.s, &t[1], 7, &got), 0);
    assert_int_equal(rs_store_steps_get(fx.s, &t[2], 7, &got), 1);
    assert_int_equal((int)got.len, 6);
    assert_memory_equal(got.buf, "third!", 6);
    rs_buf_reset(&got);
    /* Another kind is another row. */
    assert_int_equal(rs_store_steps_get(fx.s, &t[0], 8, &got), 0);
    rs_buf_release(&got);
}

static void test_line_singleton(void **state)
{
    (void)state;
    static const char *const no[] = {
        ERR("run.terminal"),
        "{\"event_type\":\"llm.error\",\"metadata\":{\"event_type\":\"run.terminal\"}}",
        "{\"event_type\":\"run.terminalx\"}",
        "[\"run.terminal\"]",
        "",
    };
    rs_buf type = RS_BUF_INIT;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_int_equal(rs_store_line_singleton(fx.s, no[i], strlen(no[i]), &type), 0);
    static const char *const yes[] = {"run.terminal", "run.delivery"};
    for (size_t i = 0; i < 2; i++) {
        rs_buf line = RS_BUF_INIT;
        assert_int_equal(rs_buf_addf(&line, "{\"content\":{},\"event_type\":\"%s\"}", yes[i]), 0);
        assert_int_equal(rs_store_line_singleton(fx.s, line.buf, line.len, &type), 1);
        assert_string_equal(type.buf, yes[i]);
        rs_buf_release(&line);
    }
    rs_buf_release(&type);
}

static void test_put_singleton_outcomes(void **state)
{
    (void)state;
    put("t1", "r1", "alice", ERR("before"));
    rs_target t = tgt("t1", "r1", "alice");
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    const char *first = TERMINAL("success", "false", "");
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", first, strlen(first), 1,
                                            &out, &err), RS_CONFIRMED_NEW);
    const char *stored = "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":2,\"event_type\":"
                         "\"run.terminal\",\"category\":\"trace\",\"content\":{\"status\":"
                         "\"success\"},\"metadata\":{\"protocol_version\":1,\"recovered\":false},"
                         "\"created_at\":\"2026-01-02T03:04:05.000000+00:00\","
                         "\"user_id\":\"alice\"}\n";
    assert_string_equal(out.buf, stored);
    put("t1", "r1", "alice", ERR("after"));
    char *before = snapshot(fx.db);

    /* exclusive create of an existing singleton */
    rs_buf_reset(&out);
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", first, strlen(first), 1,
                                            &out, &err), -EEXIST);
    assert_int_equal(err.code, -EEXIST);
    assert_int_equal(out.len, 0);
    /* the same event: other recovered, created_at and optional metadata; original kept */
    const char *same = "{\"event_type\":\"run.terminal\",\"content\":{\"status\":\"success\"},"
                       "\"metadata\":{\"protocol_version\":1.0,\"recovered\":true,\"worker\":\"w2\"},"
                       "\"created_at\":\"2027-05-05T00:00:00Z\"}\n";
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", same, strlen(same), 0, &out,
                                            &err), RS_CONFIRMED_EXISTING);
    assert_string_equal(out.buf, stored);
    rs_buf_reset(&out);
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", same, strlen(same), 0, NULL,
                                            &err), RS_CONFIRMED_EXISTING);
    /* a different one is a conflict */
    const char *other = TERMINAL("error", "false", "");
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", other, strlen(other), 0,
                                            &out, &err), -EEXIST);
    assert_int_equal(out.len, 0);
    const char *cat = "{\"category\":\"outputs\",\"content\":{\"status\":\"success\"},"
                      "\"metadata\":{\"protocol_version\":1,\"recovered\":false}}";
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", cat, strlen(cat), 0, &out,
                                            &err), -EINVAL);
    /* the body must be one event line of that type */
    const char *twolines = TERMINAL("success", "false", "") "\n" ERR("x");
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", twolines, strlen(twolines),
                                            0, &out, &err), -EINVAL);
    const char *wrong = "{\"event_type\":\"run.end\",\"content\":{},\"metadata\":"
                        "{\"status\":\"success\"}}";
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", wrong, strlen(wrong), 0,
                                            &out, &err), -EINVAL);
    char *after = snapshot(fx.db);
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* once/ lists it */
    assert_string_equal(names_of(RS_NAMES_SINGLETONS, "t1", "r1", NULL), "run.terminal");
    assert_string_equal(names_of(RS_NAMES_SINGLETONS, "t1", "r2", NULL), "");
    /* a non-catalog singleton through put_singleton, then listed too */
    rs_buf_reset(&out);
    const char *end = END(5);
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.end", end, strlen(end), 1, &out, &err),
                     RS_CONFIRMED_NEW);
    assert_string_equal(names_of(RS_NAMES_SINGLETONS, "t1", "r1", NULL), "run.end run.terminal");
    rs_buf_release(&out);
}

static void test_reservations(void **state)
{
    (void)state;
    rs_target t = tgt("t1", "r1", "alice");
    rs_err err = {0};
    assert_int_equal(rs_store_reserve_singleton(fx.s, &t, "run.terminal", &err), 0);
    assert_int_equal(rs_store_reserve_singleton(fx.s, &t, "run.terminal", &err), -EEXIST);
    assert_int_equal(err.code, -EEXIST);
    /* a second handle on the same file sees the reservation */
    rs_store *s2 = open_store(fx.db, 0, 0);
    assert_int_equal(rs_store_reserve_singleton(s2, &t, "run.terminal", &err), -EEXIST);
    /* other names and runs are free */
    rs_target t2 = tgt("t1", "r2", "alice");
    assert_int_equal(rs_store_reserve_singleton(s2, &t2, "run.terminal", &err), 0);
    assert_int_equal(rs_store_release_singleton(s2, &t2, "run.terminal"), 0);
    assert_int_equal(rs_store_reserve_singleton(fx.s, &t, "bad/name", &err), -EINVAL);
    assert_int_equal(rs_store_reserve_singleton(fx.s, &t, "", &err), -EINVAL);
    /* the holder commits; the reservation goes with the commit */
    const char *term = TERMINAL("success", "false", "");
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", term, strlen(term), 1, NULL,
                                            &err), RS_CONFIRMED_NEW);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_hold"), 0);
    /* an existing singleton cannot be reserved */
    assert_int_equal(rs_store_reserve_singleton(s2, &t, "run.terminal", &err), -EEXIST);
    /* release makes the name free again */
    rs_target t3 = tgt("t1", "r3", "alice");
    assert_int_equal(rs_store_reserve_singleton(fx.s, &t3, "run.terminal", &err), 0);
    assert_int_equal(rs_store_release_singleton(fx.s, &t3, "run.terminal"), 0);
    assert_int_equal(rs_store_reserve_singleton(s2, &t3, "run.terminal", &err), 0);
    rs_store_close(s2);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_hold"), 0);
}

/* rs_store_foreign_version: this process's commits, on any of its connections, leave it
 * alone; another process's moves it (data_version moves for both). */

/* A commit to db by another process: the sqlite3 shell. */
static void commit_from_another_process(const char *db)
{
    char cmd[1024];
    int n = snprintf(cmd, sizeof cmd,
                     "sqlite3 -cmd '.timeout 5000' '%s' 'CREATE TABLE IF NOT EXISTS probe_t (a); "
                     "INSERT INTO probe_t VALUES (1)' >/dev/null",
                     db);
    assert_true(n > 0 && (size_t)n < sizeof cmd);
    assert_int_equal(system(cmd), 0);
}
static void test_foreign_version(void **state)
{
    (void)state;
    if (system("command -v sqlite3 >/dev/null 2>&1") != 0)
        skip();
    rs_store *s2 = open_store(fx.db, 0, 0);
    put_in(fx.s, "t1", "r1", NULL, ERR("a"));
    int64_t f0 = 0, f1 = 0, d0 = 0, d1 = 0;
    assert_int_equal(rs_store_foreign_version(fx.s, &f0), 0);
    assert_int_equal(rs_store_foreign_version(fx.s, &f1), 0);
    assert_true(f0 == f1);
    /* another connection of this process: appends, a mkdir, a kept size, a seal */
    assert_int_equal(rs_store_data_version(fx.s, &d0), 0);
    put_in(s2, "t1", "r1", NULL, ERR("b"));
    put_in(s2, "t2", "r1", NULL, ERR("c"));
    rs_err err = {0};
    rs_target t = tgt("t2", "r1", NULL);
    const char *term = TERMINAL("success", "false", "");
    assert_int_equal(rs_store_put_singleton(s2, &t, "run.terminal", term, strlen(term), 1, NULL,
                                            &err), RS_CONFIRMED_NEW);
    assert_int_equal(rs_store_create_thread(s2, "t3", NULL, &err), 0);
    assert_int_equal(rs_store_size_put(s2, 7, 8, 9), 0);
    assert_int_equal(rs_store_seal(s2, &t, "", 0, NULL, &err), 0);
    put_in(fx.s, "t1", "r1", NULL, ERR("d"));
    assert_int_equal(rs_store_data_version(fx.s, &d1), 0);
    assert_true(d0 != d1);
    assert_int_equal(rs_store_foreign_version(fx.s, &f1), 0);
    assert_true(f0 == f1);
    int64_t g0 = 0, g1 = 0;
    assert_int_equal(rs_store_foreign_version(s2, &g0), 0);
    commit_from_another_process(fx.db);
    assert_int_equal(rs_store_foreign_version(fx.s, &f1), 0);
    assert_true(f0 != f1);
    assert_int_equal(rs_store_foreign_version(s2, &g1), 0);
    assert_true(g0 != g1);
    /* seen once: quiet again, and this process's commits still leave it alone */
    assert_int_equal(rs_store_foreign_version(fx.s, &f0), 0);
    put_in(s2, "t1", "r1", NULL, ERR("e"));
    assert_int_equal(rs_store_foreign_version(fx.s, &f1), 0);
    assert_true(f0 == f1);
    /* each commit of another process, however many of this one's come between */
    for (int i = 0; i < 3; i++) {
        commit_from_another_process(fx.db);
        put_in(s2, "t1", "r1", NULL, ERR("f"));
        assert_int_equal(rs_store_foreign_version(fx.s, &f1), 0);
        assert_true(f0 != f1);
        f0 = f1;
    }
    rs_store_close(s2);
}

/* The hub's probe waits for no write transaction of this process (it probes every tick and
 * writers wait on its rounds): asked while an import holds the write lock, it answers at
 * once; the import is not taken for another process's commit, and another process's commit
 * is seen after it. */
typedef struct busy_probe {
    rs_store *s;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, done, in_time;
} busy_probe;

static void *busy_probe_main(void *arg)
{
    busy_probe *p = arg;
    int64_t v = 0;
    rs_store_foreign_version(p->s, &v);
    pthread_mutex_lock(&p->mu);
    p->done = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* The import's source: its transaction is open when it is first asked for a line. */
static int busy_probe_next(void *ctx, const char **run_id, const char **line, size_t *len,
                           rs_err *err)
{
    (void)run_id, (void)line, (void)len, (void)err;
    busy_probe *p = ctx;
    if (p->started)
        return 0;
    p->started = pthread_create(&p->thread, NULL, busy_probe_main, p) == 0;
    assert_true(p->started);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    pthread_mutex_lock(&p->mu);
    while (!p->done && pthread_cond_timedwait(&p->cv, &p->mu, &ts) == 0)
        ;
    p->in_time = p->done;
    pthread_mutex_unlock(&p->mu);
    return 0;
}

static void test_foreign_version_busy(void **state)
{
    (void)state;
    if (system("command -v sqlite3 >/dev/null 2>&1") != 0)
        skip();
    rs_store *s2 = open_store(fx.db, 0, 0);
    put_in(fx.s, "t1", "r1", NULL, ERR("a"));
    int64_t f0 = 0, f1 = 0;
    assert_int_equal(rs_store_foreign_version(fx.s, &f0), 0);
    busy_probe p = {.s = fx.s, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    rs_import_src src = {.next = busy_probe_next, .ctx = &p};
    rs_import_opts o = {0};
    int64_t added = 0, skipped = 0;
    rs_err err = {0};
    assert_int_equal(rs_store_import(s2, "t2", &o, &src, &added, &skipped, &err), 0);
    assert_true(p.started);
    pthread_join(p.thread, NULL);
    assert_true(p.in_time);
    put_in(s2, "t1", "r1", NULL, ERR("b"));
    assert_int_equal(rs_store_foreign_version(fx.s, &f1), 0);
    assert_true(f0 == f1);
    commit_from_another_process(fx.db);
    assert_int_equal(rs_store_foreign_version(fx.s, &f1), 0);
    assert_true(f0 != f1);
    rs_store_close(s2);
}

/* ---- the change feed a page at a time ---------------------------------------------------- */

typedef struct page_seen {
    char runs[256];
} page_seen;

static int page_run(void *ctx, const rs_change *c)
{
    page_seen *p = ctx;
    size_t n = strlen(p->runs);
    snprintf(p->runs + n, sizeof p->runs - n, "%s%s", n ? " " : "", c->run_id);
    return 0;
}

/* One page of the feed after *after: the runs it names, *after moved on; what it returns. */
static int feed_page(int64_t *after, int64_t limit, page_seen *p)
{
    rs_err err = {0};
    p->runs[0] = '\0';
    int rc = rs_store_changes_page(fx.s, *after, limit, NULL, NULL, page_run, p, after, &err);
    if (rc < 0)
        fail_msg("changes page: %s: %s", rs_errno_name(rc), err.msg);
    return rc;
}

static void test_changes_page(void **state)
{
    (void)state;
    rs_err err = {0};
    put("t", "old1", NULL, ERR("a"));
    put("t", "old2", NULL, ERR("a"));
    /* A reader that starts at the head reads only what commits after it. */
    int64_t head = -1;
    assert_int_equal(rs_store_changes_head(fx.s, &head, &err), 0);
    assert_true(head > 0);
    const char *runs[] = {"n1", "n2", "n3", "n4", "n5"};
    for (size_t i = 0; i < 5; i++)
        put("t", runs[i], NULL, ERR("b"));
    page_seen p;
    int64_t at = head;
    assert_int_equal(feed_page(&at, 2, &p), 1);
    assert_string_equal(p.runs, "n1 n2");
    assert_int_equal(feed_page(&at, 2, &p), 1);
    assert_string_equal(p.runs, "n3 n4");
    assert_int_equal(feed_page(&at, 2, &p), 0);
    assert_string_equal(p.runs, "n5");
    /* At the end: nothing, and the number stays. */
    int64_t end = at;
    assert_int_equal(feed_page(&at, 2, &p), 0);
    assert_string_equal(p.runs, "");
    assert_int_equal(at, end);
    assert_int_equal(rs_store_changes_head(fx.s, &head, &err), 0);
    assert_int_equal(head, end);
    /* A run written again comes at its latest change, once. */
    put("t", "n2", NULL, ERR("c"));
    put("t", "old1", NULL, ERR("c"));
    assert_int_equal(feed_page(&at, 5, &p), 0);
    assert_string_equal(p.runs, "n2 old1");
    /* From the start, pages give every run once, in change order. */
    at = 0;
    assert_int_equal(feed_page(&at, 3, &p), 1);
    assert_string_equal(p.runs, "old2 n1 n3");
    assert_int_equal(rs_store_changes_page(fx.s, 0, 0, NULL, NULL, page_run, &p, &at, &err),
                     -EINVAL);
}

/* Run fn in a child process; its exit status. Callers hold no store handle across the fork:
 * a SQLite connection must not cross one. */
static int in_child(int (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(fn(arg));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static rs_store *child_open(void)
{
    rs_options opt = RS_OPTIONS_INIT;
    opt.contract_path = UNIT_CONTRACT;
    rs_store *s = NULL;
    rs_err err = {0};
    return rs_store_open(&s, fx.db, &opt, &err) ? NULL : s;
}

/* What another process gets for once/run.terminal of t1/r1: 0 new (or reserved), 1 EEXIST,
 * 3 confirmed existing, 2 anything else.
 * mode 0: plain write, 1: exclusive write, 2: reservation. */
static int child_singleton(void *arg)
{
    int mode = *(int *)arg;
    rs_store *s = child_open();
    if (!s)
        return 2;
    rs_target t = tgt("t1", "r1", "alice");
    rs_err err = {0};
    const char *term = TERMINAL("success", "false", "");
    int rc = mode == 2 ? rs_store_reserve_singleton(s, &t, "run.terminal", &err)
                       : rs_store_put_singleton(s, &t, "run.terminal", term, strlen(term), mode,
                                                NULL, &err);
    rs_store_close(s);
    if (rc == RS_CONFIRMED_NEW || (mode == 2 && rc == 0))
        return 0;
    return rc == -EEXIST ? 1 : rc == RS_CONFIRMED_EXISTING ? 3 : 2;
}

static void test_reservations_across_processes(void **state)
{
    (void)state;
    rs_store_close(fx.s);
    fx.s = NULL;
    /* the holder: another process reserves t1/r1 and keeps it until told to go */
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    fflush(NULL);
    pid_t holder = fork();
    assert_true(holder >= 0);
    if (holder == 0) {
        close(ready[0]);
        close(go[1]);
        rs_store *s = child_open();
        rs_target t = tgt("t1", "r1", "alice");
        rs_err err = {0};
        char ok = s && rs_store_reserve_singleton(s, &t, "run.terminal", &err) == 0;
        char c;
        if (write(ready[1], &ok, 1) != 1 || read(go[0], &c, 1) != 1)
            ok = 0;
        if (s)
            rs_store_release_singleton(s, &t, "run.terminal");
        rs_store_close(s);
        _exit(ok ? 0 : 1);
    }
    close(ready[1]);
    close(go[0]);
    char ok = 0;
    assert_int_equal(read(ready[0], &ok, 1), 1);
    assert_true(ok);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_hold"), 1);
    int mode = 1;
    assert_int_equal(in_child(child_singleton, &mode), 1);     /* exclusive write: EEXIST */
    mode = 0;
    assert_int_equal(in_child(child_singleton, &mode), 1);     /* plain write: EEXIST */
    mode = 2;
    assert_int_equal(in_child(child_singleton, &mode), 1);     /* reservation: EEXIST */
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events"), 0);
    /* the holder lets go: the next exclusive create wins, the one after loses */
    assert_int_equal(write(go[1], "x", 1), 1);
    int status = 0;
    assert_int_equal(waitpid(holder, &status, 0), holder);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(ready[0]);
    close(go[1]);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_hold"), 0);
    mode = 1;
    assert_int_equal(in_child(child_singleton, &mode), 0);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events"), 1);
    assert_int_equal(in_child(child_singleton, &mode), 1);
    mode = 0;
    assert_int_equal(in_child(child_singleton, &mode), 3);   /* the same event: confirmed */

    /* a holder that died without releasing (what a crash leaves: its row, a dead pid) is
     * cleared by the next open */
    fflush(NULL);
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    assert_int_equal(waitpid(dead, &status, 0), dead);
    char sql[200];
    snprintf(sql, sizeof sql, "INSERT INTO runfs_hold (thread_id, run_id, event_type, pid) "
                              "VALUES ('t1', 'r2', 'run.terminal', %ld)", (long)dead);
    assert_int_equal(raw_exec(fx.db, sql), SQLITE_OK);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_hold WHERE run_id = 'r2'"), 1);
    fx.s = open_store(fx.db, 0, 0);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_hold"), 0);
    rs_target t2 = tgt("t1", "r2", "alice");
    rs_err err = {0};
    assert_int_equal(rs_store_reserve_singleton(fx.s, &t2, "run.terminal", &err), 0);
}

/* ---- detached outputs (spec 5.13) -------------------------------------------------------------- */

static void test_outputs_detached(void **state)
{
    (void)state;
    rs_target t = tgt("t1", "r1", "alice");
    char *in = strdup(ERR("abc") START);
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    assert_int_equal(rs_store_append(fx.s, &t, in, strlen(in), &out, &err), 0);
    const char *want = ERR_LINE(1, "abc")
        "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":2,\"event_type\":\"run.start\","
        "\"category\":\"trace\",\"content\":{\"chain\":\"lead_agent\"},\"metadata\":"
        "{\"caller\":\"lead_agent\"},\"created_at\":\"2026-01-02T03:04:05.000000+00:00\","
        "\"user_id\":\"alice\"}\n";
    assert_string_equal(out.buf, want);
    /* scribble over the input and the returned copy */
    memset(in, 'X', strlen(in));
    memset(out.buf, 'Y', out.len);
    free(in);
    rs_buf back = RS_BUF_INIT;
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "t1";
    query_lines(&q, &back);
    assert_string_equal(back.buf, want);
    /* a record from a cursor is the cursor's; another query is unaffected by its reuse */
    rs_cursor *c = NULL;
    assert_int_equal(rs_store_query(fx.s, &q, &c, &err), 0);
    const rs_record *r;
    assert_int_equal(rs_cursor_next(c, &r), 1);
    rs_buf first = RS_BUF_INIT;
    assert_int_equal(rs_buf_add(&first, r->line, r->line_len), 0);
    assert_int_equal(rs_cursor_next(c, &r), 1);
    assert_int_equal(r->seq, 2);
    rs_cursor_free(c);
    assert_string_equal(first.buf, ERR_LINE(1, "abc"));
    /* put_if_absent's returned record is a copy too */
    int created;
    const char *body = END(1);
    rs_buf_reset(&out);
    assert_int_equal(rs_store_put_if_absent(fx.s, &t, body, strlen(body), &out, &created, &err), 0);
    memset(out.buf, 'Z', out.len);
    rs_buf_reset(&back);
    q.run_id = "r1";
    q.after_seq = 2;
    query_lines(&q, &back);
    assert_string_equal(back.buf, END_LINE(3, 1));
    rs_buf_release(&first);
    rs_buf_release(&back);
    rs_buf_release(&out);
}

/* ---- created_at ---------------------------------------------------------------------------------- */

static void test_created_at_normalized(void **state)
{
    (void)state;
    put("t1", "r1", "alice",
        "{\"event_type\":\"llm.error\",\"content\":\"x\",\"created_at\":\"2026-01-02T11:04:05+08:00\"}\n"
        "{\"event_type\":\"llm.error\",\"content\":\"y\",\"created_at\":\"2025-12-31T23:30:00.25-05:30\"}\n"
        "{\"event_type\":\"llm.error\",\"content\":\"z\"}\n");
    rs_buf lines = RS_BUF_INIT;
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "t1";
    q.limit = 2;
    query_lines(&q, &lines);
    assert_string_equal(lines.buf,
                        ERR_LINE(1, "x")
                        "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":2,\"event_type\":"
                        "\"llm.error\",\"category\":\"trace\",\"content\":\"y\",\"metadata\":{},"
                        "\"created_at\":\"2026-01-01T05:00:00.250000+00:00\",\"user_id\":\"alice\"}\n");
    char *db = raw_text(fx.db, "SELECT created_at FROM run_events WHERE seq = 1");
    assert_string_equal(db, "2026-01-02 03:04:05.000000");
    free(db);
    db = raw_text(fx.db, "SELECT created_at FROM run_events WHERE seq = 2");
    assert_string_equal(db, "2026-01-01 05:00:00.250000");
    free(db);
    /* absent: now, in the same naive UTC form, and the line shows it with +00:00 */
    db = raw_text(fx.db, "SELECT created_at FROM run_events WHERE seq = 3");
    assert_int_equal(strlen(db), 26);
    assert_int_equal(raw_int(fx.db, "SELECT created_at GLOB "
                                    "'[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9] [0-2][0-9]:[0-5][0-9]"
                                    ":[0-5][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]' FROM run_events "
                                    "WHERE seq = 3"), 1);
    assert_int_equal(raw_int(fx.db, "SELECT abs(strftime('%s', 'now') - strftime('%s', created_at)) "
                                    "< 600 FROM run_events WHERE seq = 3"), 1);
    rs_buf_reset(&lines);
    q = (rs_query)RS_QUERY_INIT;
    q.thread_id = "t1";
    q.after_seq = 2;
    query_lines(&q, &lines);
    char want[64];
    snprintf(want, sizeof want, "\"created_at\":\"%.10sT%.15s+00:00\"", db, db + 11);
    assert_non_null(strstr(lines.buf, want));
    free(db);
    rs_buf_release(&lines);
}

/* ---- DeerFlow's own database ------------------------------------------------------------------- */

static void test_deerflow_database(void **state)
{
    (void)state;
    /* The sample is part of the tree (tests/data): its absence is a failure, never a skip. */
    if (access(UNIT_DEERFLOW_SAMPLE, R_OK) != 0)
        fail_msg("DeerFlow's sample database %s: %s", UNIT_DEERFLOW_SAMPLE, strerror(errno));
    char path[512];
    snprintf(path, sizeof path, "%s/deerflow.db", fx.dir);
    copy_file(UNIT_DEERFLOW_SAMPLE, path);
    char *rows_before = raw_text(path, "SELECT group_concat(id || '|' || thread_id || '|' || "
                                       "run_id || '|' || user_id || '|' || event_type || '|' || "
                                       "category || '|' || content || '|' || event_metadata || "
                                       "'|' || seq || '|' || created_at, char(10)) FROM "
                                       "(SELECT * FROM run_events ORDER BY id)");
    char *schema_before = raw_text(path, "SELECT group_concat(name || ':' || sql, char(10)) FROM "
                                         "(SELECT * FROM sqlite_master ORDER BY name)");
    assert_int_equal(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name = "
                                   "'run_event_thread_seq'"), 0);

    rs_store *s = open_store(path, 0, 0);
    rs_store *saved = fx.s;
    fx.s = s;
    /* opened as is: DeerFlow's rows and tables untouched, the high-water table backfilled */
    char *rows_after = raw_text(path, "SELECT group_concat(id || '|' || thread_id || '|' || "
                                      "run_id || '|' || user_id || '|' || event_type || '|' || "
                                      "category || '|' || content || '|' || event_metadata || "
                                      "'|' || seq || '|' || created_at, char(10)) FROM "
                                      "(SELECT * FROM run_events ORDER BY id)");
    assert_string_equal(rows_before, rows_after);
    free(rows_after);
    char *schema_after = raw_text(path, "SELECT group_concat(name || ':' || sql, char(10)) FROM "
                                        "(SELECT * FROM sqlite_master WHERE name IN "
                                        "('run_events', 'alembic_version', 'ix_events_run', "
                                        "'ix_events_thread_cat_seq', 'ix_run_events_user_id', "
                                        "'uq_events_thread_seq', 'sqlite_autoindex_run_events_1', "
                                        "'sqlite_autoindex_alembic_version_1') ORDER BY name)");
    assert_string_equal(schema_before, schema_after);
    free(schema_after);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM alembic_version"), 1);
    assert_int_equal(raw_int(path, "SELECT seq FROM run_event_thread_seq WHERE thread_id = "
                                   "'thread-a'"), 24);
    assert_int_equal(raw_int(path, "SELECT seq FROM run_event_thread_seq WHERE thread_id = "
                                   "'thread-b'"), 12);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM run_event_thread_seq"), 2);

    /* its events render: runfs cat threads/thread-a/runs/run-1/events.jsonl */
    assert_string_equal(names_of(RS_NAMES_THREADS, NULL, NULL, "alice"), "thread-a thread-b");
    assert_string_equal(names_of(RS_NAMES_RUNS, "thread-a", NULL, "alice"), "run-1 run-2");
    rs_buf lines = RS_BUF_INIT;
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "thread-a";
    q.run_id = "run-1";
    q.user = "alice";
    query_lines(&q, &lines);
    int n = 0;
    for (const char *p = lines.buf; (p = strchr(p, '\n')); p++)
        n++;
    assert_int_equal(n, 12);
    for (const char *p = lines.buf; *p; p = strchr(p, '\n') + 1) {
        const char *nl = strchr(p, '\n');
        assert_true(nl - p > 30);
        assert_memory_equal(nl - 19, ",\"user_id\":\"alice\"}", 19);
    }
    static const char first[] =
        "{\"thread_id\":\"thread-a\",\"run_id\":\"run-1\",\"seq\":1,\"event_type\":\"run.start\","
        "\"category\":\"trace\",\"content\":{\"chain\":\"lead_agent\"},\"metadata\":"
        "{\"caller\":\"lead_agent\"},\"created_at\":\"2026-03-04T05:06:07.123456+00:00\","
        "\"user_id\":\"alice\"}\n";
    assert_memory_equal(lines.buf, first, sizeof first - 1);
    assert_non_null(strstr(lines.buf,
                           "{\"thread_id\":\"thread-a\",\"run_id\":\"run-1\",\"seq\":6,"
                           "\"event_type\":\"llm.tool.result\",\"category\":\"message\",\"content\":"
                           "{\"type\":\"tool\",\"content\":\"# Report\\nRevenue grew 12%.\","
                           "\"tool_call_id\":\"call-run-1\",\"name\":\"read_file\","
                           "\"id\":\"tool-run-1\"},\"metadata\":{\"caller\":\"lead_agent\"},"
                           "\"created_at\":\"2026-03-04T05:06:12.123456+00:00\","
                           "\"user_id\":\"alice\"}\n"));
    assert_non_null(strstr(lines.buf,
                           "{\"thread_id\":\"thread-a\",\"run_id\":\"run-1\",\"seq\":12,"
                           "\"event_type\":\"run.delivery\",\"category\":\"outputs\",\"content\":"
                           "{\"presented\":0,\"paths\":[],\"by_tool\":{}},\"metadata\":{},"
                           "\"created_at\":\"2026-11-29T21:31:28.030770+00:00\","
                           "\"user_id\":\"alice\"}\n"));
    /* the byte log of a foreign thread holds together */
    rs_log_info li = info_of("thread-a", "run-1", "alice");
    assert_int_equal(li.size, (int64_t)lines.len);
    assert_int_equal(li.count, 12);
    assert_int_equal(li.message_count, 4);
    li = info_of("thread-a", NULL, NULL);
    assert_int_equal(li.count, 24);
    assert_int_equal(li.hwm, 24);
    int64_t seq = 0;
    rs_err err = {0};
    rs_target ta = tgt("thread-a", "run-1", "alice");
    assert_int_equal(rs_store_last_visible_ai_seq(fx.s, &ta, &seq, &err), 0);
    assert_int_equal(seq, 10);
    assert_int_equal(rs_store_message_seq(fx.s, "thread-a", "alice", "tool:call-run-2", &seq, &err),
                     0);
    assert_int_equal(seq, 18);

    /* appending continues the seq, owner stamped as DeerFlow does */
    put("thread-a", "run-3", "alice", AI("ai-run-3", "lead_agent") ERR("plain text"));
    put("thread-b", "run-1", "alice", ERR("b"));
    rs_query qa = RS_QUERY_INIT;
    qa.thread_id = "thread-a";
    qa.after_seq = 20;
    assert_string_equal(seqs_of(&qa), "21 22 23 24 25 26");
    rs_query qb = RS_QUERY_INIT;
    qb.thread_id = "thread-b";
    qb.after_seq = 10;
    assert_string_equal(seqs_of(&qb), "11 12 13");
    assert_int_equal(raw_int(path, "SELECT seq FROM run_event_thread_seq WHERE thread_id = "
                                   "'thread-a'"), 26);

    /* the DeerFlow columns of a runfs row hold what DeerFlow's reader expects */
    char *v = raw_text(path, "SELECT content FROM run_events WHERE thread_id = 'thread-a' AND seq = 25");
    assert_string_equal(v, "{\"type\":\"ai\",\"content\":\"a\",\"tool_calls\":[],\"id\":\"ai-run-3\"}");
    free(v);
    v = raw_text(path, "SELECT event_metadata FROM run_events WHERE thread_id = 'thread-a' AND seq = 25");
    assert_string_equal(v, "{\"caller\":\"lead_agent\",\"usage\":{},\"latency_ms\":1,"
                           "\"llm_call_index\":1,\"content_is_json\":true,\"content_is_dict\":true}");
    free(v);
    v = raw_text(path, "SELECT created_at || '|' || user_id || '|' || category || '|' || run_id "
                       "FROM run_events WHERE thread_id = 'thread-a' AND seq = 25");
    assert_string_equal(v, "2026-01-02 03:04:05.000000|alice|message|run-3");
    free(v);
    /* string content: the text itself, no marker */
    v = raw_text(path, "SELECT content || '|' || event_metadata FROM run_events "
                       "WHERE thread_id = 'thread-a' AND seq = 26");
    assert_string_equal(v, "plain text|{}");
    free(v);
    assert_int_equal(raw_int(path, "SELECT json_extract(event_metadata, '$.content_is_json') + "
                                   "json_extract(event_metadata, '$.content_is_dict') FROM "
                                   "run_events WHERE thread_id = 'thread-a' AND seq = 25"), 2);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM run_events"), 39);
    /* DeerFlow's rows are still exactly as DeerFlow wrote them */
    rows_after = raw_text(path, "SELECT group_concat(id || '|' || thread_id || '|' || run_id || "
                                "'|' || user_id || '|' || event_type || '|' || category || '|' || "
                                "content || '|' || event_metadata || '|' || seq || '|' || "
                                "created_at, char(10)) FROM (SELECT * FROM run_events WHERE "
                                "id <= 36 ORDER BY id)");
    assert_string_equal(rows_before, rows_after);
    free(rows_after);

    /* a row DeerFlow adds while runfs has the file is taken in at the next write */
    assert_int_equal(raw_exec(path, "INSERT INTO run_events (thread_id, run_id, user_id, "
                                    "event_type, category, content, event_metadata, seq, "
                                    "created_at) VALUES ('thread-b', 'run-2', 'alice', "
                                    "'llm.error', 'trace', 'late', '{}', 14, "
                                    "'2026-03-04 05:10:00.000000')"), SQLITE_OK);
    put("thread-b", "run-1", "alice", ERR("c"));
    assert_string_equal(seqs_of(&qb), "11 12 13 14 15");
    li = info_of("thread-b", NULL, NULL);
    assert_int_equal(li.count, 15);
    rs_buf_reset(&lines);
    rs_query all = RS_QUERY_INIT;
    all.thread_id = "thread-b";
    query_lines(&all, &lines);
    assert_int_equal(li.size, (int64_t)lines.len);

    fx.s = saved;
    rs_store_close(s);
    /* reopening is not a migration either */
    s = open_store(path, 0, 0);
    rs_store_close(s);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM run_events"), 41);
    free(rows_before);
    free(schema_before);
    rs_buf_release(&lines);
}

/* ---- byte offsets ------------------------------------------------------------------------------- */

/* Checks a whole log read from offset 0: contiguous offsets, size = sum of lengths. */
static void check_log(const char *thread, const char *run, int64_t want_size, const char *want_seqs)
{
    rs_cursor *c = NULL;
    rs_err err = {0};
    assert_int_equal(rs_store_log_seek(fx.s, thread, run, 0, &c, &err), 0);
    const rs_record *r;
    int64_t off = 0;
    char seqs[1024] = "";
    size_t len = 0;
    int rc;
    while ((rc = rs_cursor_next(c, &r)) == 1) {
        assert_int_equal(run ? r->run_off : r->thread_off, off);
        off += (int64_t)r->line_len;
        len += (size_t)snprintf(seqs + len, sizeof seqs - len, "%s%lld", len ? " " : "",
                                (long long)r->seq);
    }
    assert_int_equal(rc, 0);
    rs_cursor_free(c);
    assert_int_equal(off, want_size);
    assert_string_equal(seqs, want_seqs);
    rs_log_info li = info_of(thread, run, NULL);
    assert_int_equal(li.size, want_size);
    assert_true(li.exact);
}

static int64_t first_seq_at(const char *thread, const char *run, int64_t off, int64_t *line_off)
{
    rs_cursor *c = NULL;
    rs_err err = {0};
    assert_int_equal(rs_store_log_seek(fx.s, thread, run, off, &c, &err), 0);
    const rs_record *r;
    int64_t seq = 0;
    if (rs_cursor_next(c, &r) == 1) {
        seq = r->seq;
        *line_off = run ? r->run_off : r->thread_off;
    }
    rs_cursor_free(c);
    return seq;
}

static void test_byte_offsets(void **state)
{
    (void)state;
    /* ERR_LINE(n, "x") is 179 bytes for a one-digit seq, 180 for two digits; START's is 205 */
    assert_int_equal(strlen(ERR_LINE(1, "x")), 179);
    put("t1", "r1", "alice", ERR("x") ERR("x") ERR("x"));
    put("t1", "r2", "alice", ERR("x") ERR("x"));
    put("t1", "r1", "alice", ERR("x") ERR("x"));
    put("t1", "r3", "alice", ERR("x") ERR("x") ERR("x"));
    check_log("t1", NULL, 9 * 179 + 180, "1 2 3 4 5 6 7 8 9 10");
    check_log("t1", "r1", 5 * 179, "1 2 3 6 7");
    check_log("t1", "r2", 2 * 179, "4 5");
    check_log("t1", "r3", 2 * 179 + 180, "8 9 10");
    rs_log_info li = info_of("t1", NULL, "alice");
    assert_int_equal(li.count, 10);
    assert_int_equal(li.last_seq, 10);
    /* a seek inside a line starts at that line */
    int64_t off = -1;
    assert_int_equal(first_seq_at("t1", NULL, 0, &off), 1);
    assert_int_equal(off, 0);
    assert_int_equal(first_seq_at("t1", NULL, 179 + 5, &off), 2);
    assert_int_equal(off, 179);
    assert_int_equal(first_seq_at("t1", NULL, 2 * 179 - 1, &off), 2);
    assert_int_equal(first_seq_at("t1", NULL, 2 * 179, &off), 3);
    assert_int_equal(off, 358);
    assert_int_equal(first_seq_at("t1", NULL, 9 * 179 + 179, &off), 10);
    assert_int_equal(off, 9 * 179);
    assert_int_equal(first_seq_at("t1", "r1", 3 * 179 + 100, &off), 6);
    assert_int_equal(off, 3 * 179);
    assert_int_equal(first_seq_at("t1", "r3", 2 * 179 + 7, &off), 10);
    /* at or past the end there is no line */
    assert_int_equal(first_seq_at("t1", NULL, 9 * 179 + 180, &off), 0);
    assert_int_equal(first_seq_at("t1", "r1", 5 * 179, &off), 0);
    assert_int_equal(first_seq_at("t1", "nope", 0, &off), 0);
    assert_int_equal(first_seq_at("nope", NULL, 0, &off), 0);

    /* deleting a run in the middle closes the gap in the thread's log */
    delete_run("t1", "r2", NULL, 2);
    check_log("t1", NULL, 7 * 179 + 180, "1 2 3 6 7 8 9 10");
    check_log("t1", "r1", 5 * 179, "1 2 3 6 7");
    check_log("t1", "r3", 2 * 179 + 180, "8 9 10");
    assert_int_equal(first_seq_at("t1", NULL, 3 * 179 + 1, &off), 6);
    assert_int_equal(off, 3 * 179);
    assert_false(info_of("t1", "r2", NULL).exists);
    /* and appending after it continues the recomputed log */
    put("t1", "r1", "alice", ERR("x"));
    check_log("t1", NULL, 7 * 179 + 2 * 180, "1 2 3 6 7 8 9 10 11");
    check_log("t1", "r1", 5 * 179 + 180, "1 2 3 6 7 11");

    /* mixed owners: a viewer's totals are its own and marked inexact */
    put("t1", "r1", "bob", ERR("x"));
    li = info_of("t1", NULL, "bob");
    assert_false(li.exact);
    assert_int_equal(li.count, 1);
    assert_int_equal(li.last_seq, 12);
    li = info_of("t1", NULL, NULL);
    assert_int_equal(li.count, 10);
    assert_int_equal(li.size, 7 * 179 + 2 * 180 + 178);   /* "bob" is 2 bytes shorter */

    /* stats */
    rs_stats st;
    rs_err err = {0};
    assert_int_equal(rs_store_stats(fx.s, NULL, NULL, &st, &err), 0);
    assert_int_equal(st.threads, 1);
    assert_int_equal(st.runs, 2);
    assert_int_equal(st.events, 10);
    /* scoped: bob sees his one run and event; a thread scope counts that thread only */
    assert_int_equal(rs_store_stats(fx.s, "bob", NULL, &st, &err), 0);
    assert_int_equal(st.threads, 1);
    assert_int_equal(st.runs, 1);
    assert_int_equal(st.events, 1);
    assert_int_equal(rs_store_stats(fx.s, "carol", NULL, &st, &err), 0);
    assert_int_equal(st.threads + st.runs + st.events, 0);
    assert_int_equal(rs_store_stats(fx.s, NULL, "nope", &st, &err), 0);
    assert_int_equal(st.threads + st.runs + st.events, 0);
}

/* ---- empty threads and runs (mkdir) -------------------------------------------------------------- */

static void test_create_thread_and_run(void **state)
{
    (void)state;
    rs_err err = {0};
    assert_int_equal(rs_store_create_thread(fx.s, "m", "alice", &err), 0);
    rs_target t = tgt("m", "r1", "alice");
    assert_int_equal(rs_store_create_run(fx.s, &t, &err), 0);
    assert_int_equal(rs_store_create_run(fx.s, &t, &err), 0);
    assert_int_equal(rs_store_create_thread(fx.s, "bad id", "alice", &err), -EINVAL);
    rs_target bad = tgt("m", "r/1", "alice");
    assert_int_equal(rs_store_create_run(fx.s, &bad, &err), -EINVAL);
    rs_log_info li = info_of("m", "r1", "alice");
    assert_true(li.exists);
    assert_int_equal(li.size, 0);
    assert_int_equal(li.count, 0);
    assert_false(info_of("m", NULL, "bob").exists);
    assert_string_equal(names_of(RS_NAMES_THREADS, NULL, NULL, "alice"), "m");
    assert_string_equal(names_of(RS_NAMES_RUNS, "m", NULL, "alice"), "r1");
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events"), 0);
    put("m", "r1", "alice", ERR("x"));
    assert_int_equal(info_of("m", "r1", "alice").count, 1);
    /* an empty thread deleted whole goes away */
    assert_int_equal(rs_store_create_thread(fx.s, "e", NULL, &err), 0);
    delete_thread("e", NULL, 0);
    assert_false(info_of("e", NULL, NULL).exists);
}

/* ---- concurrency ----------------------------------------------------------------------------------- */

#define WORKER_EVENTS 500

typedef struct worker {
    pthread_t th;
    int id;
    int failures;
    char why[256];
} worker;

/* Appends WORKER_EVENTS single events to thread c through its own handle. */
static int worker_run(int id, char *why, size_t why_len)
{
    rs_options opt = RS_OPTIONS_INIT;
    opt.contract_path = UNIT_CONTRACT;
    rs_store *s = NULL;
    rs_err err = {0};
    int rc = rs_store_open(&s, fx.db, &opt, &err);
    if (rc) {
        snprintf(why, why_len, "open: %.200s", err.msg);
        return 1;
    }
    char run[16];
    snprintf(run, sizeof run, "r%d", id % 2);
    rs_target t = tgt("c", run, id % 2 ? "alice" : NULL);
    int failures = 0;
    rs_buf stored = RS_BUF_INIT;
    for (int i = 0; i < WORKER_EVENTS; i++) {
        char line[128], want[64];
        int n = snprintf(line, sizeof line,
                         "{\"event_type\":\"llm.error\",\"content\":\"w%d-%04d\"}\n", id, i);
        snprintf(want, sizeof want, "\"content\":\"w%d-%04d\"", id, i);
        rs_buf_reset(&stored);
        if ((rc = rs_store_append(s, &t, line, (size_t)n, &stored, &err))) {
            snprintf(why, why_len, "append %d: %s %.200s", i, rs_errno_name(rc), err.msg);
            failures++;
        } else if (!strstr(stored.buf, want) ||
                   strchr(stored.buf, '\n') != stored.buf + stored.len - 1) {
            /* committed with others (group commit), each append still gets its own line */
            snprintf(why, why_len, "append %d: stored %.200s", i, stored.buf);
            failures++;
        }
    }
    rs_buf_release(&stored);
    rs_store_close(s);
    return failures;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    w->failures = worker_run(w->id, w->why, sizeof w->why);
    return NULL;
}

/* No loss, no duplicate, seqs 1..n, each writer's events in its own order, a whole byte log. */
static void check_concurrent(int writers)
{
    int64_t n = (int64_t)writers * WORKER_EVENTS;
    char sql[256];
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events WHERE thread_id = 'c'"), n);
    assert_int_equal(raw_int(fx.db, "SELECT count(DISTINCT seq) FROM run_events WHERE thread_id = 'c'"),
                     n);
    assert_int_equal(raw_int(fx.db, "SELECT min(seq) FROM run_events WHERE thread_id = 'c'"), 1);
    assert_int_equal(raw_int(fx.db, "SELECT max(seq) FROM run_events WHERE thread_id = 'c'"), n);
    for (int w = 0; w < writers; w++) {
        /* within one writer, content order and seq order agree */
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM run_events a JOIN run_events b ON a.thread_id = b.thread_id "
                 "AND a.content LIKE 'w%d-%%' AND b.content LIKE 'w%d-%%' AND a.content < b.content "
                 "AND a.seq > b.seq", w, w);
        assert_int_equal(raw_int(fx.db, sql), 0);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM run_events WHERE content LIKE 'w%d-%%'", w);
        assert_int_equal(raw_int(fx.db, sql), WORKER_EVENTS);
    }
    rs_log_info li = info_of("c", NULL, NULL);
    assert_int_equal(li.count, n);
    assert_int_equal(li.hwm, n);
    assert_int_equal(li.last_seq, n);
    rs_cursor *c = NULL;
    rs_err err = {0};
    assert_int_equal(rs_store_log_seek(fx.s, "c", NULL, 0, &c, &err), 0);
    const rs_record *r;
    int64_t off = 0, seq = 0;
    while (rs_cursor_next(c, &r) == 1) {
        assert_int_equal(r->thread_off, off);
        assert_int_equal(r->seq, ++seq);
        off += (int64_t)r->line_len;
    }
    rs_cursor_free(c);
    assert_int_equal(seq, n);
    assert_int_equal(off, li.size);
    assert_int_equal(floor_of("c"), n);
}

static void test_concurrent_threads(void **state)
{
    (void)state;
    worker w[4];
    for (int i = 0; i < 4; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].id = i;
        assert_int_equal(pthread_create(&w[i].th, NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(w[i].th, NULL);
        if (w[i].failures)
            fail_msg("worker %d: %d failures, last: %s", i, w[i].failures, w[i].why);
    }
    check_concurrent(4);
}

typedef struct lock_probe {
    const char *path;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    pid_t tid;   /* the writer's thread, set as it starts its append */
    int started; /* its store is open and the append begins */
    int done;
    int rc;
} lock_probe;

static void *append_elsewhere(void *arg)
{
    lock_probe *p = arg;
    rs_store *s = open_store(p->path, 0, 0);
    rs_target t = tgt("x", "r1", NULL);
    pthread_mutex_lock(&p->mu);
    p->tid = (pid_t)syscall(SYS_gettid);
    p->started = 1;
    pthread_mutex_unlock(&p->mu);
    int rc = rs_store_append(s, &t, ERR("a"), strlen(ERR("a")), NULL, NULL);
    rs_store_close(s);
    pthread_mutex_lock(&p->mu);
    p->rc = rc;
    p->done = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Wait up to ms for the writer to finish; 1 when it did. */
static int probe_finished(lock_probe *p, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    while (!p->done && pthread_cond_timedwait(&p->cond, &p->mu, &ts) == 0)
        ;
    int done = p->done;
    pthread_mutex_unlock(&p->mu);
    return done;
}

/* 1 once the writer has begun its append and sleeps in futex() (a lock) without having
 * finished; 0 when it finished first or 30 s passed. However slow the machine, a writer that
 * does not wait never gets here. */
static int probe_waits(lock_probe *p)
{
    for (int i = 0; i < 30000; i++) {
        pthread_mutex_lock(&p->mu);
        int started = p->started, done = p->done;
        pid_t tid = p->tid;
        pthread_mutex_unlock(&p->mu);
        if (done)
            return 0;
        if (started) {
            char path[64], line[64] = "";
            assert_true(rs_fmt(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid) > 0);
            FILE *f = fopen(path, "r");
            if (f && !fgets(line, sizeof line, f))
                line[0] = 0;
            if (f)
                fclose(f);
            if (atol(line) == SYS_futex && line[0] != 'r') {
                pthread_mutex_lock(&p->mu);
                done = p->done;
                pthread_mutex_unlock(&p->mu);
                return !done;
            }
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}

/* While this thread holds a write transaction on one database, a writer of another database
 * in the same process goes ahead, and a writer of the same database waits for it: it is seen
 * asleep on a lock, unfinished, for as long as the transaction is held, and finishes once it
 * ends. */
static void test_write_lock_per_database(void **state)
{
    (void)state;
    char other[512];
    snprintf(other, sizeof other, "%s/other.db", fx.dir);
    rs_store_close(open_store(other, 0, 0));
    rs_err err = {0};
    assert_int_equal(sq_begin(fx.s->be, &err), 0);
    lock_probe p = {.path = other, .mu = PTHREAD_MUTEX_INITIALIZER,
                    .cond = PTHREAD_COND_INITIALIZER};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, append_elsewhere, &p), 0);
    int elsewhere_done = probe_finished(&p, 30000);
    lock_probe q = {.path = fx.db, .mu = PTHREAD_MUTEX_INITIALIZER,
                    .cond = PTHREAD_COND_INITIALIZER};
    pthread_t th2;
    assert_int_equal(pthread_create(&th2, NULL, append_elsewhere, &q), 0);
    int same_waited = probe_waits(&q);
    sq_rollback(fx.s->be);
    int same_done = probe_finished(&q, 30000);
    pthread_join(th, NULL);
    pthread_join(th2, NULL);
    assert_true(elsewhere_done);
    assert_int_equal(p.rc, 0);
    assert_true(same_waited);
    assert_true(same_done);
    assert_int_equal(q.rc, 0);
}

/* A process pins every store it mounts, however many: with twelve pinned, each one's file
 * replaced under it refuses writes (-EIO) instead of taking them into the new file. */
static void test_pins_without_limit(void **state)
{
    (void)state;
    enum { N = 12 };
    rs_store *st[N];
    char path[N][512], other[512];
    rs_target t = tgt("t", "r1", NULL);
    for (int i = 0; i < N; i++) {
        assert_true(rs_fmt(path[i], sizeof path[i], "%s/pin-%d.db", fx.dir, i) > 0);
        rs_options opt = RS_OPTIONS_INIT;
        opt.contract_path = UNIT_CONTRACT;
        opt.pin_file = 1;
        rs_err err = {0};
        assert_int_equal(rs_store_open(&st[i], path[i], &opt, &err), 0);
        assert_int_equal(rs_store_append(st[i], &t, ERR("a"), strlen(ERR("a")), NULL, &err), 0);
    }
    for (int i = 0; i < N; i++) {
        assert_true(rs_fmt(other, sizeof other, "%s/other-%d.db", fx.dir, i) > 0);
        rs_store_close(open_store(other, 0, 0));
        assert_int_equal(rename(other, path[i]), 0);
        rs_err err = {0};
        assert_int_equal(rs_store_append(st[i], &t, ERR("b"), strlen(ERR("b")), NULL, &err), -EIO);
        assert_non_null(strstr(err.msg, "was replaced under the mount"));
        rs_store_close(st[i]);
    }
}

static int child_writer(void *arg)
{
    char why[256] = "";
    int failures = worker_run(*(int *)arg, why, sizeof why);
    if (failures)
        fprintf(stderr, "writer %d: %s\n", *(int *)arg, why);
    return failures ? 1 : 0;
}

static void test_concurrent_processes(void **state)
{
    (void)state;
    /* no connection crosses a fork */
    rs_store_close(fx.s);
    fx.s = NULL;
    fflush(NULL);
    pid_t pids[2];
    int ids[2] = {0, 1};
    for (int i = 0; i < 2; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(child_writer(&ids[i]));
    }
    for (int i = 0; i < 2; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    fx.s = open_store(fx.db, 0, 0);
    check_concurrent(2);
}

/* ---- message lookups (spec 5.7-5.10) ---------------------------------------------------------------- */

/* ---- checkpoints ---------------------------------------------------------------------------- */

/* A VFS over the default one that counts the syncs of its files by whether the test's own
 * thread made them. */
typedef struct sync_file {
    sqlite3_file base;
    sqlite3_file *real; /* the default VFS's file, right after this struct */
} sync_file;

static sqlite3_vfs sync_vfs, *sync_real;
static sqlite3_io_methods sync_methods;
static pthread_t sync_test_thread;
static atomic_int syncs_test, syncs_other;

#define REAL(f) (((sync_file *)(f))->real)
static int sf_close(sqlite3_file *f)
{
    int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
    f->pMethods = NULL;
    return rc;
}
static int sf_read(sqlite3_file *f, void *p, int n, sqlite3_int64 o)
{
    return REAL(f)->pMethods->xRead(REAL(f), p, n, o);
}
static int sf_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 o)
{
    return REAL(f)->pMethods->xWrite(REAL(f), p, n, o);
}
static int sf_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int sf_sync(sqlite3_file *f, int flags)
{
    atomic_fetch_add(pthread_equal(pthread_self(), sync_test_thread) ? &syncs_test : &syncs_other,
                     1);
    return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int sf_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}
static int sf_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int sf_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int sf_reserved(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int sf_control(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int sf_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int sf_device(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int sf_shm_map(sqlite3_file *f, int i, int size, int extend, void volatile **p)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), i, size, extend, p);
}
static int sf_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void sf_shm_barrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int sf_shm_unmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}

static int sync_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)vfs;
    sync_file *sf = (sync_file *)f;
    sf->real = (sqlite3_file *)(sf + 1);
    int rc = sync_real->xOpen(sync_real, name, sf->real, flags, out);
    f->pMethods = sf->real->pMethods ? &sync_methods : NULL;
    return rc;
}

/* Make the counting VFS the default (undone by sync_vfs_off), counts at zero. */
static void sync_vfs_on(void)
{
    sync_real = sqlite3_vfs_find(NULL);
    sync_vfs = *sync_real;
    sync_vfs.iVersion = 1 < sync_real->iVersion ? sync_real->iVersion : 1;
    sync_vfs.zName = "unit-sync";
    sync_vfs.szOsFile = (int)sizeof(sync_file) + sync_real->szOsFile;
    sync_vfs.xOpen = sync_open;
    sync_methods = (sqlite3_io_methods){
        .iVersion = 2, .xClose = sf_close, .xRead = sf_read, .xWrite = sf_write,
        .xTruncate = sf_truncate, .xSync = sf_sync, .xFileSize = sf_size, .xLock = sf_lock,
        .xUnlock = sf_unlock, .xCheckReservedLock = sf_reserved, .xFileControl = sf_control,
        .xSectorSize = sf_sector, .xDeviceCharacteristics = sf_device, .xShmMap = sf_shm_map,
        .xShmLock = sf_shm_lock, .xShmBarrier = sf_shm_barrier, .xShmUnmap = sf_shm_unmap};
    sync_test_thread = pthread_self();
    atomic_store(&syncs_test, 0);
    atomic_store(&syncs_other, 0);
    assert_int_equal(sqlite3_vfs_register(&sync_vfs, 1), SQLITE_OK);
}

static void sync_vfs_off(void)
{
    sqlite3_vfs_unregister(&sync_vfs);
    sqlite3_vfs_register(sync_real, 1);
}

/* With --sync normal a commit syncs nothing: the checkpoint a long WAL needs (two syncs,
 * tens of milliseconds on a busy disk) runs on another thread, not inside the commit that
 * made the WAL long, where it held the write lock; and it does run. */
static void test_checkpoint_beside_commits(void **state)
{
    (void)state;
    char path[512], wal[520];
    snprintf(path, sizeof path, "%s/ckpt.db", fx.dir);
    snprintf(wal, sizeof wal, "%s-wal", path);
    sync_vfs_on();
    rs_store *s = open_store(path, 0, 0);
    rs_target t = tgt("t1", "r1", NULL);
    rs_err err = {0};
    /* Lines of 200 kB: a WAL of SQ_CKPT_FRAMES pages in about 170 commits. */
    size_t text = 200000;
    rs_buf line = RS_BUF_INIT;
    assert_int_equal(rs_buf_addstr(&line, "{\"event_type\":\"llm.error\",\"content\":\""), 0);
    for (size_t i = 0; i < text; i++)
        assert_int_equal(rs_buf_addch(&line, (char)('a' + i % 26)), 0);
    assert_int_equal(rs_buf_addstr(&line, "\"}\n"), 0);
    /* The first commit on a new WAL syncs its header, as SQLite always does. */
    assert_int_equal(rs_store_append(s, &t, line.buf, line.len, NULL, &err), 0);
    atomic_store(&syncs_test, 0);
    struct stat st;
    int commits = 0;
    /* WAL header 32 bytes, each frame a 24-byte header and a 4096-byte page. */
    while (stat(wal, &st) == 0 && st.st_size < 32 + (off_t)SQ_CKPT_FRAMES * (24 + 4096) &&
           commits < 2000) {
        assert_int_equal(rs_store_append(s, &t, line.buf, line.len, NULL, &err), 0);
        commits++;
    }
    assert_in_range(commits, 10, 1999);
    assert_int_equal(atomic_load(&syncs_test), 0);
    for (int i = 0; i < 1000 && atomic_load(&syncs_other) == 0; i++)
        usleep(10000);
    assert_true(atomic_load(&syncs_other) > 0);
    rs_store_close(s);
    sync_vfs_off();
    rs_buf_release(&line);
}

static void test_last_visible_ai_seq(void **state)
{
    (void)state;
    put("v", "r1", "alice", AI("a1", "lead_agent") AI("a2", "subagent:research")
                                AI("a3", "middleware:summarize") ERR("e"));
    put("v", "r2", "alice", AI("b1", "middleware:summarize") HUMAN("h"));
    put("v", "r3", "alice",
        "{\"event_type\":\"ai_message\",\"content\":\"legacy\"," TS "}\n" ERR("e"));
    put("v", "r4", "alice", ERR("only trace"));
    put("v", "r5", "alice", AI("c1", "lead_agent") AI("c2", "Middleware:x"));
    rs_err err = {0};
    int64_t seq = -1;
    rs_target t = tgt("v", "r1", "alice");
    /* middleware callers excluded, a subagent's AI row counted */
    assert_int_equal(rs_store_last_visible_ai_seq(fx.s, &t, &seq, &err), 0);
    assert_int_equal(seq, 2);
    t.run_id = "r2";
    assert_int_equal(rs_store_last_visible_ai_seq(fx.s, &t, &seq, &err), -ENOENT);
    /* the legacy alias counts; a missing caller is "" */
    t.run_id = "r3";
    assert_int_equal(rs_store_last_visible_ai_seq(fx.s, &t, &seq, &err), 0);
    assert_int_equal(seq, 7);
    t.run_id = "r4";
    assert_int_equal(rs_store_last_visible_ai_seq(fx.s, &t, &seq, &err), -ENOENT);
    t.run_id = "nope";
    assert_int_equal(rs_store_last_visible_ai_seq(fx.s, &t, &seq, &err), -ENOENT);
    /* DeerFlow's LIKE is case-insensitive on SQLite */
    t.run_id = "r5";
    assert_int_equal(rs_store_last_visible_ai_seq(fx.s, &t, &seq, &err), 0);
    assert_int_equal(seq, 10);
    /* owner scoped */
    t = tgt("v", "r1", "bob");
    assert_int_equal(rs_store_last_visible_ai_seq(fx.s, &t, &seq, &err), -ENOENT);
    t.user = NULL;
    assert_int_equal(rs_store_last_visible_ai_seq(fx.s, &t, &seq, &err), 0);
    assert_int_equal(seq, 2);

    /* count_messages: category message only */
    int64_t n = -1;
    assert_int_equal(rs_store_count_messages(fx.s, "v", NULL, &n, &err), 0);
    assert_int_equal(n, 8);
    assert_int_equal(rs_store_count_messages(fx.s, "v", "alice", &n, &err), 0);
    assert_int_equal(n, 8);
    assert_int_equal(rs_store_count_messages(fx.s, "none", NULL, &n, &err), 0);
    assert_int_equal(n, 0);
}

static int64_t message_seq(const char *user, const char *identity)
{
    int64_t seq = -1;
    rs_err err = {0};
    int rc = rs_store_message_seq(fx.s, "m", user, identity, &seq, &err);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        fail_msg("message_seq %s: %s", identity, rs_errno_name(rc));
    return seq;
}

static void test_message_seq(void **state)
{
    (void)state;
    put("m", "r1", "alice",
        HUMAN("h1__user")                                    /* 1 */
        HUMAN("__user")                                      /* 2 */
        AI("a1__user", "lead_agent")                         /* 3 */
        TOOL("call_1", "tool-msg-1")                         /* 4 */
        AI("a2", "lead_agent")                               /* 5 */
        AI("a2", "lead_agent")                               /* 6: a later duplicate */
        "{\"event_type\":\"run.end\",\"content\":{\"id\":\"out1\",\"type\":\"ai\"},"
        "\"metadata\":{\"status\":\"success\"}," TS "}\n"  /* 7: not a message */
        AI("mx1", "lead_agent")                              /* 8 */
        AI("q\\\"uote", "lead_agent"));                      /* 9 */
    put("m", "r2", "bob", HUMAN("h1"));                      /* 10 */
    put("other", "r1", "alice", AI("elsewhere", "lead_agent"));
    /* a human id loses its __user suffix; the bare __user stays */
    assert_int_equal(message_seq(NULL, "message:h1"), 1);
    assert_int_equal(message_seq(NULL, "message:h1__user"), 0);
    assert_int_equal(message_seq(NULL, "message:__user"), 2);
    assert_int_equal(message_seq(NULL, "message:"), 0);
    /* other types keep it */
    assert_int_equal(message_seq(NULL, "message:a1__user"), 3);
    assert_int_equal(message_seq(NULL, "message:a1"), 0);
    /* a tool_call_id wins over the id */
    assert_int_equal(message_seq(NULL, "tool:call_1"), 4);
    assert_int_equal(message_seq(NULL, "message:tool-msg-1"), 0);
    /* earliest wins; non-message categories never match; LIKE wildcards are literal */
    assert_int_equal(message_seq(NULL, "message:a2"), 5);
    assert_int_equal(message_seq(NULL, "message:out1"), 0);
    assert_int_equal(message_seq(NULL, "message:m_1"), 0);
    assert_int_equal(message_seq(NULL, "message:mx1"), 8);
    assert_int_equal(message_seq(NULL, "message:m%"), 0);
    assert_int_equal(message_seq(NULL, "message:q\"uote"), 9);
    /* other threads never match; owners are respected */
    assert_int_equal(message_seq(NULL, "message:elsewhere"), 0);
    assert_int_equal(message_seq("bob", "message:h1"), 10);
    assert_int_equal(message_seq("carol", "message:h1"), 0);
    assert_int_equal(message_seq(NULL, "nonsense"), 0);
    assert_int_equal(message_seq(NULL, "tool:"), 0);
}

static void test_latest_ai_run(void **state)
{
    (void)state;
    put("l", "r1", "alice", AI("m1", "lead_agent") AI("m2", "lead_agent"));
    put("l", "r2", "alice", AI("m1", "subagent:x") HUMAN("m2"));
    put("l", "r3", "bob", AI("m1", "lead_agent"));
    put("l", "r4", "alice", "{\"event_type\":\"run.end\",\"content\":{\"type\":\"ai\",\"id\":\"m2\"},"
                            "\"metadata\":{\"status\":\"success\"}," TS "}\n");
    rs_buf run = RS_BUF_INIT;
    rs_err err = {0};
    /* the newest qualifying row wins */
    assert_int_equal(rs_store_latest_ai_run(fx.s, "l", NULL, "m1", &run, &err), 0);
    assert_string_equal(run.buf, "r3");
    assert_int_equal(rs_store_latest_ai_run(fx.s, "l", "alice", "m1", &run, &err), 0);
    assert_string_equal(run.buf, "r2");
    /* a human row or a non-message row with the id does not qualify */
    assert_int_equal(rs_store_latest_ai_run(fx.s, "l", NULL, "m2", &run, &err), 0);
    assert_string_equal(run.buf, "r1");
    assert_int_equal(rs_store_latest_ai_run(fx.s, "l", NULL, "m3", &run, &err), -ENOENT);
    assert_int_equal(rs_store_latest_ai_run(fx.s, "l", "carol", "m1", &run, &err), -ENOENT);
    assert_int_equal(rs_store_latest_ai_run(fx.s, "nope", NULL, "m1", &run, &err), -ENOENT);
    rs_buf_release(&run);
}

/* A row deleted behind runfs's back (by DeerFlow, say): the trigger in the file marks the
 * thread, and the next open recomputes its offsets. */
static void test_foreign_delete_reindexes(void **state)
{
    (void)state;
    put("t1", "r1", "alice", ERR("x") ERR("x") ERR("x"));
    put("t1", "r2", "alice", ERR("x") ERR("x"));
    assert_int_equal(raw_exec(fx.db, "DELETE FROM run_events WHERE seq IN (2, 4)"), 0);
    rs_store_close(fx.s);
    fx.s = open_store(fx.db, 0, 0);
    check_log("t1", NULL, 3 * 179, "1 3 5");
    check_log("t1", "r1", 2 * 179, "1 3");
    check_log("t1", "r2", 179, "5");
    int64_t off = -1;
    assert_int_equal(first_seq_at("t1", NULL, 179 + 1, &off), 3);
    assert_int_equal(off, 179);
    /* the next write continues above the deleted rows */
    put("t1", "r1", "alice", ERR("x"));
    check_log("t1", "r1", 3 * 179, "1 3 6");
}

/* The ranges of rows put stored, lowest first: runfs_canon's, then runfs_meta's top one. */
#define CANON_RANGES \
    "SELECT group_concat(lo || '-' || hi, ' ') FROM (SELECT lo, hi FROM runfs_canon UNION ALL " \
    "SELECT l.value, h.value FROM runfs_meta l, runfs_meta h WHERE l.key = 'canon_lo' AND " \
    "h.key = 'canon_hi' AND l.value > 0 ORDER BY hi)"

/* Rows put stored are kept as id ranges (runfs_canon) and copied on read; a row another
 * writer stored, even at an id a put's row had before it was deleted, is rendered again. */
static void test_canonical_rows(void **state)
{
    (void)state;
    static const char ranges[] = CANON_RANGES;
    static const char foreign[] =
        "INSERT INTO run_events (thread_id, run_id, user_id, event_type, category, content, "
        "event_metadata, seq, created_at) VALUES ('t1', 'r1', 'alice', 'llm.ai.response', "
        "'message', '{\"a\": 1, \"s\": \"h\\u00e9\"}', '{\"content_is_json\": true}', %d, "
        "'2026-01-02 03:04:05.000000')";
    char sql[512];
    put("t1", "r1", "alice", ERR("a") ERR("b") ERR("c"));
    put("t1", "r1", "alice", ERR("d") ERR("e"));
    char *got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-5");
    free(got);
    /* appends that continue the top range write it in runfs_meta only */
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_canon"), 0);
    snprintf(sql, sizeof sql, foreign, 6);
    assert_int_equal(raw_exec(fx.db, sql), 0);
    put("t1", "r1", "alice", ERR("f"));
    got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-5 7-7");
    free(got);
    /* A deleted row's id may come back, given by hand below the top as at it: no range
     * keeps covering it, and the rows around it stay in ranges (the change feed tells
     * runfs's own rows by them). */
    assert_int_equal(raw_exec(fx.db, "DELETE FROM run_events WHERE id IN (3, 7)"), 0);
    got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-2 4-5");
    free(got);
    snprintf(sql, sizeof sql, foreign, 8);
    assert_int_equal(raw_exec(fx.db, sql), 0);
    assert_int_equal(raw_int(fx.db, "SELECT id FROM run_events WHERE seq = 8"), 7);
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "t1";
    rs_buf out = RS_BUF_INIT;
    query_lines(&q, &out);
    rs_buf want = RS_BUF_INIT;
    static const char *const ok[] = {"a", "b", "d", "e"};
    static const int seqs[] = {1, 2, 4, 5};
    for (int i = 0; i < 6; i++) {
        if (i < 4) {
            assert_int_equal(rs_buf_addf(&want, ERR_LINE(%d, "%s"), seqs[i], ok[i]), 0);
            continue;
        }
        assert_int_equal(
            rs_buf_addf(&want,
                        "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":%d,"
                        "\"event_type\":\"llm.ai.response\",\"category\":\"message\","
                        "\"content\":{\"a\":1,\"s\":\"h\xc3\xa9\"},\"metadata\":{},"
                        "\"created_at\":\"2026-01-02T03:04:05.000000+00:00\","
                        "\"user_id\":\"alice\"}\n",
                        2 * i - 2),
            0);
    }
    assert_string_equal(out.buf, want.buf);
    rs_buf_release(&out);
    rs_buf_release(&want);
}

/* A store of layout 4 kept its top range in runfs_canon, with triggers that knew only that
 * table: a reader reads it as it is, a read-write open moves the range to runfs_meta and
 * makes the triggers again; appends, updates in place and deletes at the top then keep the
 * top range exact. */
static void test_canon_layout4(void **state)
{
    (void)state;
    static const char ranges[] = CANON_RANGES;
    static const char to_v4[] =
        "BEGIN;"
        "INSERT INTO runfs_canon (hi, lo) SELECT h.value, l.value FROM runfs_meta l, runfs_meta h "
        "WHERE l.key = 'canon_lo' AND h.key = 'canon_hi' AND l.value > 0;"
        "DELETE FROM runfs_meta WHERE key IN ('canon_lo', 'canon_hi');"
        "DROP TRIGGER runfs_canon_top; DROP TRIGGER runfs_canon_update;"
        "CREATE TRIGGER runfs_canon_top AFTER DELETE ON run_events WHEN old.id > "
        "coalesce((SELECT max(id) FROM run_events), 0) BEGIN DELETE FROM runfs_canon WHERE hi > "
        "coalesce((SELECT max(id) FROM run_events), 0) AND lo > coalesce((SELECT max(id) FROM "
        "run_events), 0); UPDATE runfs_canon SET hi = coalesce((SELECT max(id) FROM run_events), "
        "0) WHERE hi > coalesce((SELECT max(id) FROM run_events), 0); END;"
        "CREATE TRIGGER runfs_canon_update AFTER UPDATE ON run_events BEGIN DELETE FROM "
        "runfs_canon WHERE hi = (SELECT min(hi) FROM runfs_canon WHERE hi >= old.id) AND lo <= "
        "old.id; DELETE FROM runfs_canon WHERE hi = (SELECT min(hi) FROM runfs_canon WHERE hi >= "
        "new.id) AND lo <= new.id; END;"
        "UPDATE runfs_meta SET value = 4 WHERE key = 'layout';"
        "COMMIT;";
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO run_events (thread_id, run_id, event_type, category, content, "
             "event_metadata, seq, created_at) VALUES ('t1', 'r1', 'llm.error', 'trace', 'x', "
             "'{}', %d, '2026-01-02 03:04:05')",
             4);
    put("t1", "r1", "alice", ERR("a") ERR("b") ERR("c"));
    assert_int_equal(raw_exec(fx.db, sql), 0);
    put("t1", "r1", "alice", ERR("d") ERR("e"));
    char *got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-3 5-6");
    free(got);
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "t1";
    rs_buf before = RS_BUF_INIT, out = RS_BUF_INIT;
    query_lines(&q, &before);
    rs_store_close(fx.s);
    assert_int_equal(raw_exec(fx.db, to_v4), SQLITE_OK);
    /* a reader alters nothing and reads the layout-4 ranges */
    fx.s = open_store(fx.db, 0, 1);
    query_lines(&q, &out);
    assert_string_equal(out.buf, before.buf);
    rs_store_close(fx.s);
    assert_int_equal(raw_int(fx.db, "SELECT value FROM runfs_meta WHERE key = 'layout'"), 4);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_canon"), 2);
    fx.s = open_store(fx.db, 0, 0);
    assert_int_equal(raw_int(fx.db, "SELECT value FROM runfs_meta WHERE key = 'layout'"), 6);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_canon"), 1);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM sqlite_master WHERE name IN "
                                    "('runfs_canon_top', 'runfs_canon_update') AND sql LIKE "
                                    "'%canon_lo%'"),
                     2);
    got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-3 5-6");
    free(got);
    rs_buf_reset(&out);
    query_lines(&q, &out);
    assert_string_equal(out.buf, before.buf);
    put("t1", "r1", "alice", ERR("f"));
    got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-3 5-7");
    free(got);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_canon"), 1);
    /* a row of the top range changed in place: the range goes */
    assert_int_equal(raw_exec(fx.db, "UPDATE run_events SET content = 'y' WHERE id = 6"), 0);
    got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-3");
    free(got);
    /* a new top range; its rows deleted at the top take it */
    put("t1", "r1", "alice", ERR("g") ERR("h"));
    got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-3 8-9");
    free(got);
    assert_int_equal(raw_exec(fx.db, "DELETE FROM run_events WHERE id = 9"), 0);
    got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-3 8-8");
    free(got);
    assert_int_equal(raw_exec(fx.db, "DELETE FROM run_events WHERE id = 8"), 0);
    got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-3");
    free(got);
    /* and the next append starts it again, not over a range below */
    put("t1", "r1", "alice", ERR("i"));
    got = raw_text(fx.db, ranges);
    assert_string_equal(got, "1-3 8-8");
    free(got);
    rs_buf_release(&before);
    rs_buf_release(&out);
}

#define WS(n)                                                                                      \
    "{\"event_type\":\"workspace_changes\",\"content\":\"" #n " files changed\",\"metadata\":"    \
    "{\"workspace_changes\":{\"version\":1,\"summary\":{\"created\":1,\"modified\":0,"            \
    "\"deleted\":0,\"symlink_created\":0,\"additions\":" #n ",\"deletions\":0,"                   \
    "\"truncated\":false},\"files\":[],\"limits\":{\"max_files\":200,\"max_scanned_files\":2000," \
    "\"max_file_bytes_for_diff\":262144,\"max_total_diff_bytes\":1048576}}}," TS "}\n"

/* messages.jsonl's size as the store keeps it equals its rendering, for the thread and each
 * run, unscoped and for the owner. */
static void check_messages_size(const char *thread, const char *const *runs, size_t n_runs)
{
    const char *users[] = {NULL, "alice"};
    for (size_t u = 0; u < 2; u++)
        for (size_t i = 0; i <= n_runs; i++) {
            const char *run = i < n_runs ? runs[i] : NULL;
            rs_query q = RS_QUERY_INIT;
            q.thread_id = thread;
            q.run_id = run;
            q.user = users[u];
            q.messages_only = 1;
            rs_buf out = RS_BUF_INIT;
            query_lines(&q, &out);
            int64_t size = -1;
            rs_err err = {0};
            assert_int_equal(rs_store_messages_size(fx.s, thread, run, users[u], &size, &err), 1);
            if (size != (int64_t)out.len)
                fail_msg("%s/%s (%s): kept %lld, rendered %zu", thread, run ? run : "-",
                         users[u] ? users[u] : "unscoped", (long long)size, out.len);
            rs_buf_release(&out);
        }
}

static char *workspace_doc(const char *run)
{
    rs_target t = tgt("t1", run, NULL);
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    assert_int_equal(rs_store_workspace_changes(fx.s, &t, &out, &err), 0);
    size_t len;
    return rs_buf_detach(&out, &len);
}

/* What the logs keep beside their totals: the bytes of messages.jsonl, the run's terminal
 * (receipt.json) and the workspace change shown (the last of the first ten), through
 * appends, another writer's rows and deletes, and a store of layout 2 catching up. */
static void test_view_facts(void **state)
{
    (void)state;
    const char *runs[] = {"r1", "r2", "r3"};
    const char *term = TERMINAL("success", "false", "");
    put("t1", "r1", "alice", START HUMAN("h1") AI("a1", "lead_agent") TOOL("c1", "t1") WS(1));
    put("t1", "r2", "alice", HUMAN("h2") ERR("x") AI("a2", "lead_agent"));
    put("t1", "r3", "alice", WS(1) WS(2) WS(3) WS(4) WS(5) WS(6));
    put("t1", "r3", "alice", WS(7) WS(8) WS(9) WS(10) WS(11) HUMAN("h3"));
    rs_target t = tgt("t1", "r1", "alice");
    rs_err err = {0};
    assert_int_equal(rs_store_put_singleton(fx.s, &t, "run.terminal", term, strlen(term), 1,
                                            NULL, &err),
                     RS_CONFIRMED_NEW);
    check_messages_size("t1", runs, 3);
    int64_t size = 0;
    assert_int_equal(rs_store_messages_size(fx.s, "t1", NULL, "bob", &size, &err), -ENOENT);
    rs_buf out = RS_BUF_INIT;
    assert_int_equal(rs_store_receipt(fx.s, &t, &out, &err), 0);
    assert_non_null(strstr(out.buf, "\"terminal\":{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":21,"
                                    "\"event_type\":\"run.terminal\""));
    rs_buf_reset(&out);
    t.run_id = "r2";
    assert_int_equal(rs_store_receipt(fx.s, &t, &out, &err), 0);
    assert_non_null(strstr(out.buf, "\"terminal\":null}"));
    rs_buf_release(&out);
    char *ws = workspace_doc("r3");
    assert_non_null(strstr(ws, "\"additions\":10,"));
    free(ws);
    ws = workspace_doc("r2");
    assert_non_null(strstr(ws, "\"available\":false"));
    free(ws);

    /* Another writer adds a message and deletes a run. */
    assert_int_equal(
        raw_exec(fx.db, "INSERT INTO run_events (thread_id, run_id, user_id, event_type, "
                        "category, content, event_metadata, seq, created_at) VALUES ('t1', 'r2', "
                        "'alice', 'llm.human.input', 'message', '{\"type\": \"human\", "
                        "\"content\": \"caf\\u00e9\"}', '{\"content_is_json\": true}', 40, "
                        "'2026-01-02 03:04:05')"),
        SQLITE_OK);
    assert_int_equal(rs_store_refresh(fx.s, &err), 0);
    check_messages_size("t1", runs, 3);
    assert_int_equal(raw_exec(fx.db, "DELETE FROM run_events WHERE run_id = 'r1'"), SQLITE_OK);
    assert_int_equal(rs_store_refresh(fx.s, &err), 0);
    check_messages_size("t1", runs + 1, 2);

    /* Layout 2 had none of it: an open fills it in. */
    rs_store_close(fx.s);
    fx.s = NULL;
    assert_int_equal(raw_exec(fx.db, "ALTER TABLE runfs_thread DROP COLUMN msg_size;"
                                     "ALTER TABLE runfs_run DROP COLUMN msg_size;"
                                     "ALTER TABLE runfs_run DROP COLUMN terminal_seq;"
                                     "ALTER TABLE runfs_run DROP COLUMN ws_count;"
                                     "ALTER TABLE runfs_run DROP COLUMN ws_seq;"
                                     "UPDATE runfs_meta SET value = 2 WHERE key = 'layout'"),
                     SQLITE_OK);
    rs_store *ro = open_store(fx.db, 0, 1);
    rs_store *rw = open_store(fx.db, 0, 0);
    assert_int_equal(raw_int(fx.db, "SELECT value FROM runfs_meta WHERE key = 'layout'"), 6);
    for (int i = 0; i < 2; i++) {
        fx.s = i ? rw : ro;
        check_messages_size("t1", runs + 1, 2);
        ws = workspace_doc("r3");
        assert_non_null(strstr(ws, "\"additions\":10,"));
        free(ws);
    }
    rs_store_close(ro);
}

/* ---- owners kept apart (a --user / --user-from-uid mount) ------------------------------------ */

static rs_store *open_apart(void)
{
    rs_options opt = RS_OPTIONS_INIT;
    opt.contract_path = RS_CONTRACT_SOURCE;
    opt.owners_apart = 1;
    rs_store *s = NULL;
    rs_err err = {0};
    int rc = rs_store_open(&s, fx.db, &opt, &err);
    if (rc)
        fail_msg("open: %s: %s", rs_errno_name(rc), err.msg);
    return s;
}

static int count_verified(void *ctx, const char *thread_id, const char *run_id, int ok,
                          const char *why)
{
    (void)thread_id;
    (void)run_id;
    if (!ok)
        fail_msg("verify: %s", why);
    ++*(int *)ctx;
    return 0;
}

static void test_owners_apart_threads(void **state)
{
    (void)state;
    rs_store *ap = open_apart();
    rs_err err = {0};
    put_in(ap, "ta", "r1", "alice", ERR("a1") ERR("a2"));
    rs_log_info before = info_of("ta", "r1", "alice");
    char *snap = snapshot(fx.db);
    /* bob meets a thread holding none of his rows: the id is taken, nothing changes */
    rs_target tb = tgt("ta", "r1", "bob");
    assert_int_equal(rs_store_append(ap, &tb, ERR("b"), strlen(ERR("b")), NULL, &err), -EACCES);
    assert_int_equal(rs_store_create_thread(ap, "ta", "bob", &err), -EACCES);
    assert_int_equal(rs_store_create_run(ap, &tb, &err), -EACCES);
    assert_int_equal(rs_store_reserve_singleton(ap, &tb, "run.terminal", &err), -EACCES);
    const char *term = TERMINAL("success", "false", "");
    assert_int_equal(rs_store_put_singleton(ap, &tb, "run.terminal", term, strlen(term), 1, NULL,
                                            &err), -EACCES);
    char *after = snapshot(fx.db);
    assert_string_equal(snap, after);
    free(snap);
    free(after);
    assert_false(info_of("ta", NULL, "bob").exists);
    /* a new thread is his to make; the unscoped writer is not held back */
    assert_int_equal(rs_store_create_thread(ap, "tb", "bob", &err), 0);
    put_in(ap, "ta", "r1", NULL, ERR("root"));
    /* a thread both own (DeerFlow wrote it): bob's mkdir of alice's run changes nothing of
     * hers, and his view of it is empty */
    put("sh", "ra", "alice", ERR("a"));
    put("sh", "rb", "bob", ERR("b"));
    before = info_of("sh", "ra", "alice");
    assert_true(before.exact);
    rs_target shb = tgt("sh", "ra", "bob");
    assert_int_equal(rs_store_create_run(ap, &shb, &err), 0);
    rs_log_info now = info_of("sh", "ra", "alice");
    assert_true(now.exact);
    assert_int_equal(now.size, before.size);
    rs_log_info his = info_of("sh", "ra", "bob");
    assert_true(his.exists);
    assert_int_equal(his.count, 0);
    assert_int_equal(his.size, 0);
    assert_int_equal(his.last_seq, 0);
    /* his first row there makes the run mixed: both views count their own */
    put_in(ap, "sh", "ra", "bob", ERR("b2"));
    assert_int_equal(info_of("sh", "ra", "bob").count, 1);
    assert_int_equal(info_of("sh", "ra", "alice").count, 1);
    assert_int_equal(info_of("sh", "ra", NULL).count, 2);
    rs_store_close(ap);
}

static void test_owners_apart_singletons_and_seals(void **state)
{
    (void)state;
    put("sh", "r1", "alice", ERR("a"));
    put("sh", "r1", "bob", ERR("b"));
    rs_store *ap = open_apart();
    rs_err err = {0};
    rs_target ta = tgt("sh", "r1", "alice"), tb = tgt("sh", "r1", "bob");
    const char *ok = TERMINAL("success", "false", ""), *bad = TERMINAL("error", "false", "");
    /* bob's terminal and reservation do not block alice's */
    assert_int_equal(rs_store_reserve_singleton(ap, &tb, "run.terminal", &err), 0);
    assert_int_equal(rs_store_reserve_singleton(ap, &ta, "run.terminal", &err), 0);
    assert_int_equal(rs_store_put_singleton(ap, &tb, "run.terminal", bad, strlen(bad), 1, NULL,
                                            &err), RS_CONFIRMED_NEW);
    assert_int_equal(rs_store_put_singleton(ap, &ta, "run.terminal", ok, strlen(ok), 1, NULL,
                                            &err), RS_CONFIRMED_NEW);
    /* each confirms and conflicts with its own only */
    assert_int_equal(rs_store_put_singleton(ap, &ta, "run.terminal", ok, strlen(ok), 0, NULL,
                                            &err), RS_CONFIRMED_EXISTING);
    assert_int_equal(rs_store_put_singleton(ap, &ta, "run.terminal", bad, strlen(bad), 0, NULL,
                                            &err), -EEXIST);
    assert_string_equal(names_of(RS_NAMES_SINGLETONS, "sh", "r1", "alice"), "run.terminal");
    /* seals: bob's is his; alice seals her own rows */
    rs_buf out = RS_BUF_INIT;
    assert_int_equal(rs_store_seal(ap, &tb, "", 0, NULL, &err), 0);
    assert_int_equal(rs_store_seal_read(ap, &ta, &out, &err), -ENOENT);
    assert_int_equal(rs_store_seal(ap, &ta, "", 0, &out, &err), 0);
    assert_non_null(strstr(out.buf, "\"event_count\":2"));
    assert_int_equal(rs_store_seal(ap, &ta, "", 0, NULL, &err), -EEXIST);
    int checked = 0;
    assert_int_equal(rs_store_verify(ap, count_verified, &checked, &err), 0);
    assert_int_equal(checked, 2);
    /* bob's delete takes his rows, singleton and seal; alice's stay and still verify */
    int64_t n = 0;
    assert_int_equal(rs_store_delete_run(ap, &tb, &n, &err), 0);
    assert_int_equal(n, 2);
    rs_buf_reset(&out);
    assert_int_equal(rs_store_seal_read(ap, &tb, &out, &err), -ENOENT);
    assert_int_equal(rs_store_seal_read(ap, &ta, &out, &err), 0);
    checked = 0;
    assert_int_equal(rs_store_verify(ap, count_verified, &checked, &err), 0);
    assert_int_equal(checked, 1);
    /* an unscoped delete takes every seal */
    rs_target all = tgt("sh", "r1", NULL);
    assert_int_equal(rs_store_delete_run(ap, &all, &n, &err), 0);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_seal"), 0);
    rs_buf_release(&out);
    rs_store_close(ap);
}

/* A store written by runfs before seals and singletons had owners (side-table layout 1)
 * opens migrated: its seals keep their owners and still verify. */
static void test_layout_migration(void **state)
{
    (void)state;
    rs_err err = {0};
    const char *term = TERMINAL("success", "false", "");
    put("t1", "r1", "alice", ERR("a"));
    rs_target ta = tgt("t1", "r1", "alice"), tn = tgt("t2", "r1", NULL);
    put("t2", "r1", NULL, ERR("n"));
    assert_int_equal(rs_store_put_singleton(fx.s, &ta, "run.terminal", term, strlen(term), 1,
                                            NULL, &err), RS_CONFIRMED_NEW);
    assert_int_equal(rs_store_put_singleton(fx.s, &tn, "run.terminal", term, strlen(term), 1,
                                            NULL, &err), RS_CONFIRMED_NEW);
    assert_int_equal(rs_store_seal(fx.s, &ta, "", 0, NULL, &err), 0);
    assert_int_equal(rs_store_seal(fx.s, &tn, "", 0, NULL, &err), 0);
    rs_store_close(fx.s);
    fx.s = NULL;
    static const char to_v1[] =
        "BEGIN;"
        "CREATE TABLE s1 AS SELECT thread_id, run_id, state, upper_seq, event_count, "
        "terminal_seq, digest, error, sealed_at, nullif(owner, '') AS user_id FROM runfs_seal;"
        "DROP TABLE runfs_seal; DROP TABLE runfs_once; DROP TABLE runfs_hold;"
        "CREATE TABLE runfs_once (thread_id TEXT NOT NULL, run_id TEXT NOT NULL, "
        "event_type TEXT NOT NULL, PRIMARY KEY (thread_id, run_id, event_type)) WITHOUT ROWID;"
        "CREATE TABLE runfs_hold (thread_id TEXT NOT NULL, run_id TEXT NOT NULL, "
        "event_type TEXT NOT NULL, pid INTEGER NOT NULL, started INTEGER NOT NULL DEFAULT 0, "
        "PRIMARY KEY (thread_id, run_id, event_type)) WITHOUT ROWID;"
        "CREATE TABLE runfs_seal (thread_id TEXT NOT NULL, run_id TEXT NOT NULL, "
        "state TEXT NOT NULL, upper_seq INTEGER NOT NULL, event_count INTEGER NOT NULL, "
        "terminal_seq INTEGER, digest TEXT NOT NULL, error TEXT, sealed_at TEXT NOT NULL, "
        "user_id TEXT, PRIMARY KEY (thread_id, run_id)) WITHOUT ROWID;"
        "INSERT INTO runfs_seal SELECT * FROM s1; DROP TABLE s1;"
        "INSERT INTO runfs_once VALUES ('t1', 'r1', 'run.terminal'), ('t2', 'r1', 'run.terminal');"
        "DELETE FROM runfs_meta WHERE key = 'layout';"
        "CREATE UNIQUE INDEX runfs_uq_terminal ON run_events (thread_id, run_id, event_type) "
        "WHERE event_type = 'run.terminal';"
        "COMMIT;";
    assert_int_equal(raw_exec(fx.db, to_v1), SQLITE_OK);
    fx.s = open_apart();
    rs_store *ap = fx.s;
    assert_int_equal(raw_int(fx.db, "SELECT value FROM runfs_meta WHERE key = 'layout'"), 6);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_seal WHERE owner = 'alice'"), 1);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_seal WHERE owner = ''"), 1);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM runfs_once WHERE owner = 'alice'"), 1);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM sqlite_master WHERE name LIKE '%_v1'"),
                     0);
    /* an older build's unique index on DeerFlow's table is gone */
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM sqlite_master WHERE name = "
                                    "'runfs_uq_terminal'"),
                     0);
    int checked = 0;
    assert_int_equal(rs_store_verify(ap, count_verified, &checked, &err), 0);
    assert_int_equal(checked, 2);
    rs_buf out = RS_BUF_INIT;
    assert_int_equal(rs_store_seal_read(ap, &ta, &out, &err), 0);
    assert_int_equal(rs_store_seal_read(ap, &tn, &out, &err), 0);
    rs_buf_release(&out);
    assert_string_equal(names_of(RS_NAMES_SINGLETONS, "t1", "r1", "alice"), "run.terminal");
    rs_store_close(ap);
    fx.s = NULL;
    /* a layout newer than this build's is refused, with a reason */
    assert_int_equal(raw_exec(fx.db, "UPDATE runfs_meta SET value = 99 WHERE key = 'layout'"),
                     SQLITE_OK);
    rs_options opt = RS_OPTIONS_INIT;
    opt.contract_path = RS_CONTRACT_SOURCE;
    rs_store *s = NULL;
    assert_int_equal(rs_store_open(&s, fx.db, &opt, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "layout 99"));
    assert_int_equal(raw_exec(fx.db, "UPDATE runfs_meta SET value = 2 WHERE key = 'layout'"),
                     SQLITE_OK);
    fx.s = open_store(fx.db, 0, 0);
}


/* ---- idempotency keys and DeerFlow's JSONL ------------------------------------------------ */

#define KEYED(text, key) "{\"event_type\":\"llm.error\",\"content\":\"" text "\"," TS \
                         ",\"idempotency_key\":\"" key "\"}\n"

/* A batch's rows go in by statements of 32 and 8 rows, the rest one by one, a keyed row
 * alone after the rows before it: seqs, ids, lines, sizes and the canonical range are those
 * of rows inserted one at a time; a row a unique index refuses is named and the batch left
 * whole out of the store. */
static void test_batch_statements(void **state)
{
    (void)state;
    rs_target t = tgt("t1", "r1", "alice");
    rs_buf lines = RS_BUF_INIT, out = RS_BUF_INIT, want = RS_BUF_INIT;
    rs_err err = {0};
    for (int i = 1; i <= 45; i++) {
        if (i == 20)
            assert_int_equal(rs_buf_addf(&lines, KEYED("e%d", "k%d"), i, i), 0);
        else
            assert_int_equal(rs_buf_addf(&lines, ERR("e%d"), i), 0);
        assert_int_equal(rs_buf_addf(&want, ERR_LINE(%d, "e%d"), i, i), 0);
    }
    assert_int_equal(rs_store_append(fx.s, &t, lines.buf, lines.len, &out, &err), 0);
    assert_string_equal(out.buf, want.buf);
    assert_int_equal(raw_int(fx.db, "SELECT count(*) FROM run_events WHERE id = seq AND "
                                    "content = 'e' || seq"),
                     45);
    char *got = raw_text(fx.db, CANON_RANGES);
    assert_string_equal(got, "1-45");
    free(got);
    rs_log_info li = info_of("t1", "r1", NULL);
    assert_int_equal(li.size, (int64_t)want.len);
    assert_int_equal(li.count, 45);
    assert_int_equal(info_of("t1", NULL, NULL).size, (int64_t)want.len);
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "t1";
    rs_buf_reset(&out);
    query_lines(&q, &out);
    assert_string_equal(out.buf, want.buf);
    /* A fork's unique index refuses the 37th row of the next batch (in a statement of 8). */
    assert_int_equal(raw_exec(fx.db, "CREATE UNIQUE INDEX fork_uq ON run_events (content)"), 0);
    rs_buf_reset(&lines);
    for (int i = 46; i <= 85; i++)
        assert_int_equal(rs_buf_addf(&lines, ERR("e%d"), i == 82 ? 3 : i), 0);
    char *before = snapshot(fx.db);
    assert_int_equal(rs_store_append(fx.s, &t, lines.buf, lines.len, NULL, &err), -EEXIST);
    assert_string_equal(err.msg, "llm.error already exists for run r1");
    char *after = snapshot(fx.db);
    assert_string_equal(before, after);
    free(before);
    free(after);
    put("t1", "r1", "alice", ERR("next"));
    assert_int_equal(raw_int(fx.db, "SELECT seq FROM run_events WHERE content = 'next'"), 46);
    rs_buf_release(&lines);
    rs_buf_release(&out);
    rs_buf_release(&want);
}

static void test_idempotency_keys(void **state)
{
    (void)state;
    rs_target t = tgt("t1", "r1", "alice");
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    rs_placement at;
    const char *first = KEYED("a", "k1") KEYED("b", "k2");
    assert_int_equal(rs_store_append_at(fx.s, &t, first, strlen(first), &out, &at, &err), 0);
    assert_string_equal(out.buf, ERR_LINE(1, "a") ERR_LINE(2, "b"));
    assert_int_equal(at.len, (int64_t)out.len);
    /* a resend with one new line: the new line stored, the others confirmed, in order */
    rs_buf_reset(&out);
    const char *again = KEYED("c", "k3") KEYED("a", "k1") KEYED("b", "k2") KEYED("c", "k3");
    assert_int_equal(rs_store_append_at(fx.s, &t, again, strlen(again), &out, &at, &err), 0);
    assert_string_equal(out.buf, ERR_LINE(3, "c") ERR_LINE(1, "a") ERR_LINE(2, "b")
                                 ERR_LINE(3, "c"));
    assert_int_equal(at.len, (int64_t)strlen(ERR_LINE(3, "c")));
    /* another event under k2: EEXIST naming the line, nothing of the batch stored */
    rs_buf_reset(&out);
    const char *clash = KEYED("d", "k4") KEYED("changed", "k2");
    assert_int_equal(rs_store_append(fx.s, &t, clash, strlen(clash), &out, &err), -EEXIST);
    assert_int_equal(err.line, 2);
    assert_string_equal(err.msg, "idempotency_key 'k2' was used for a different event (seq 2)");
    /* keys are per owner: another owner's k1 and k2 are its own, new events (never EEXIST
     * with alice's seq in the reason), and its resend is confirmed as its own */
    rs_target bob = tgt("t1", "r1", "bob");
    const char *bobs = KEYED("a", "k1") KEYED("other", "k2");
    for (int resend = 0; resend < 2; resend++) {
        rs_buf_reset(&out);
        assert_int_equal(rs_store_append(fx.s, &bob, bobs, strlen(bobs), &out, &err), 0);
        assert_non_null(strstr(out.buf, "\"seq\":4,"));
        assert_non_null(strstr(out.buf, "\"seq\":5,"));
        assert_non_null(strstr(out.buf, "\"user_id\":\"bob\""));
    }
    rs_log_info info;
    assert_int_equal(rs_store_log_info(fx.s, "t1", NULL, NULL, &info, &err), 0);
    assert_int_equal(info.count, 5);
    assert_int_equal(info.hwm, 5);
    /* and alice's keys are still hers */
    assert_int_equal(rs_store_append(fx.s, &t, clash, strlen(clash), &out, &err), -EEXIST);
    assert_string_equal(err.msg, "idempotency_key 'k2' was used for a different event (seq 2)");
    rs_buf_release(&out);
}

/* An append continues what the last one on its connection left (totals, owners, next seq)
 * only while nothing else changed the store: another connection's append, a foreign delete,
 * a refused append, another owner and a delete each leave the next append exact. */
static void test_append_after_changes_elsewhere(void **state)
{
    (void)state;
    rs_store *other = open_store(fx.db, 0, 0);
    put("t1", "r1", "alice", ERR("x") ERR("x"));
    put_in(other, "t1", "r1", "alice", ERR("x"));
    put("t1", "r1", "alice", ERR("x"));
    check_log("t1", "r1", 4 * 179, "1 2 3 4");
    put_in(other, "t1", "r2", "alice", ERR("x"));
    put("t1", "r1", "alice", ERR("x"));
    check_log("t1", NULL, 6 * 179, "1 2 3 4 5 6");
    assert_int_equal(raw_exec(fx.db, "DELETE FROM run_events WHERE seq = 6"), 0);
    put("t1", "r1", "alice", ERR("x"));
    check_log("t1", "r1", 5 * 179, "1 2 3 4 7");
    /* a refused batch (its second line reuses a key for another event) leaves nothing */
    rs_target t = tgt("t1", "r1", "alice");
    rs_err err = {0};
    const char *keyed = KEYED("a", "k1");
    assert_int_equal(rs_store_append(fx.s, &t, keyed, strlen(keyed), NULL, &err), 0);
    const char *clash = ERR("x") KEYED("b", "k1");
    assert_int_equal(rs_store_append(fx.s, &t, clash, strlen(clash), NULL, &err), -EEXIST);
    put("t1", "r1", "alice", ERR("x"));
    check_log("t1", "r1", 7 * 179, "1 2 3 4 7 8 9");
    /* another owner's row makes the run mixed for both writers */
    put_in(other, "t1", "r1", "bob", ERR("x"));
    put("t1", "r1", "alice", ERR("x"));
    assert_false(info_of("t1", "r1", "alice").exact);
    delete_run("t1", "r1", NULL, 9);
    put("t1", "r1", "alice", ERR("x"));
    check_log("t1", "r1", 180, "12");
    rs_store_close(other);
}

/* t1 of one row and a second connection, a look begun on fx.s; q reads t1's log. */
static rs_store *one_look_begin(rs_query *q)
{
    rs_store *other = open_store(fx.db, 0, 0);
    put("t1", "r1", "alice", ERR("a"));
    q->thread_id = "t1";
    rs_store_one_look(fx.s, 1);
    assert_int_equal(info_of("t1", NULL, NULL).count, 1);
    return other;
}

/* A request's reads (rs_store_one_look on) share one snapshot: another connection's commit
 * shows once the look ends, and a write inside the look still follows every row. */
static void test_one_look_snapshot(void **state)
{
    (void)state;
    rs_query q = RS_QUERY_INIT;
    rs_store *other = one_look_begin(&q);
    put_in(other, "t1", "r1", "alice", ERR("b"));
    assert_string_equal(seqs_of(&q), "1");
    put("t1", "r1", "alice", ERR("c"));
    assert_string_equal(seqs_of(&q), "1 2 3");
    rs_store_one_look(fx.s, 0);
    put_in(other, "t1", "r1", "alice", ERR("d"));
    rs_store_one_look(fx.s, 1);
    assert_string_equal(seqs_of(&q), "1 2 3 4");
    rs_store_one_look(fx.s, 0);
    rs_store_close(other);
}

/* A write inside a look ends its snapshot: what is read after it is one snapshot again, so
 * the log's state and its rows agree when another connection commits between them (a view
 * rendered with a row its state did not count was kept under that state, one row too
 * large, and counted the row again at its next catch-up). */
static void test_one_look_after_write(void **state)
{
    (void)state;
    rs_query q = RS_QUERY_INIT;
    rs_store *other = one_look_begin(&q);
    put("t1", "r1", "alice", ERR("b"));
    assert_int_equal(info_of("t1", NULL, NULL).count, 2);
    put_in(other, "t1", "r1", "alice", ERR("c"));
    assert_string_equal(seqs_of(&q), "1 2");
    assert_int_equal(info_of("t1", NULL, NULL).count, 2);
    rs_store_one_look(fx.s, 0);
    rs_store_one_look(fx.s, 1);
    assert_int_equal(info_of("t1", NULL, NULL).count, 3);
    assert_string_equal(seqs_of(&q), "1 2 3");
    rs_store_one_look(fx.s, 0);
    rs_store_close(other);
}

static void test_deerflow_line(void **state)
{
    (void)state;
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    const char *line =
        "{\"thread_id\":\"t1\",\"run_id\":\"r1\",\"seq\":7,\"event_type\":\"llm.ai.response\","
        "\"category\":\"message\",\"content\":{\"a\":[1,2.5e-05,{}],\"s\":\"x, y: \\\"z\\\"\"},"
        "\"metadata\":{},\"created_at\":\"2026-01-02T03:04:05.000000+00:00\","
        "\"user_id\":\"alice\"}\n";
    assert_int_equal(rs_deerflow_line(&out, line, strlen(line), &err), 0);
    assert_string_equal(out.buf,
        "{\"thread_id\": \"t1\", \"run_id\": \"r1\", \"event_type\": \"llm.ai.response\", "
        "\"category\": \"message\", \"content\": {\"a\": [1, 2.5e-05, {}], "
        "\"s\": \"x, y: \\\"z\\\"\"}, \"metadata\": {}, \"seq\": 7, "
        "\"created_at\": \"2026-01-02T03:04:05+00:00\"}\n");
    rs_buf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(test_open),
        T(test_foreign_version),
        T(test_foreign_version_busy),
        T(test_changes_page),
        T(test_pg_uri_name),
        T(test_pg_uri_display),
        T(test_struct_versions),
        T(test_read_only_writes_nothing),
        T(test_stamp_time),
        T(test_append_consecutive_seqs),
        T(test_batch_atomic),
        T(test_event_size_limit),
        T(test_bad_inputs_leave_store_unchanged),
        T(test_read_only),
        T(test_list_messages_windows),
        T(test_list_events),
        T(test_high_water_run_delete),
        T(test_refused_append_keeps_triggers),
        T(test_high_water_thread_delete),
        T(test_owner_scoping),
        T(test_put_if_absent_earliest),
        T(test_terminal_singleton_in_runfs),
        T(test_line_singleton),
        T(test_steps_put_many),
        T(test_put_singleton_outcomes),
        T(test_reservations),
        T(test_reservations_across_processes),
        T(test_outputs_detached),
        T(test_created_at_normalized),
        T(test_deerflow_database),
        T(test_byte_offsets),
        T(test_foreign_delete_reindexes),
        T(test_canonical_rows),
        T(test_canon_layout4),
        T(test_append_after_changes_elsewhere),
        T(test_view_facts),
        T(test_create_thread_and_run),
        T(test_concurrent_threads),
        T(test_concurrent_processes),
        T(test_write_lock_per_database),
        T(test_append_quiet_in_runfs_store),
        T(test_batch_journal_in_memory),
        T(test_pins_without_limit),
        T(test_checkpoint_beside_commits),
        T(test_last_visible_ai_seq),
        T(test_message_seq),
        T(test_latest_ai_run),
        T(test_idempotency_keys),
        T(test_batch_statements),
        T(test_deerflow_line),
        T(test_one_look_snapshot),
        T(test_one_look_after_write),
        T(test_owners_apart_threads),
        T(test_owners_apart_singletons_and_seals),
        T(test_layout_migration),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
