/* test_projection.c — history.jsonl, workspace-changes.json, receipts and seals, on a real
 * SQLite file built through the public API only (or, with RS_TEST_PG_URI set to a cluster's
 * URI, on a fresh PostgreSQL database). Expected values are written out by hand. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <openssl/evp.h>
#include <sqlite3.h>

#include "runstore.h"
#include "rs_util.h"
#include "unit.h"


#define TS(n) "\"created_at\":\"2026-01-01T00:00:" #n "+00:00\""
#define START(meta, n)                                                                       \
    "{\"event_type\":\"run.start\",\"content\":{\"chain\":\"lead_agent\"},"                  \
    "\"metadata\":{\"caller\":\"lead_agent\"" meta "}," TS(n) "}\n"
#define HUMAN(text, n)                                                                       \
    "{\"event_type\":\"llm.human.input\",\"content\":{\"type\":\"human\",\"content\":\"" text \
    "\"},\"metadata\":{\"caller\":\"lead_agent\"}," TS(n) "}\n"
#define AI(caller, text, n)                                                                  \
    "{\"event_type\":\"llm.ai.response\",\"content\":{\"type\":\"ai\",\"content\":\"" text    \
    "\",\"tool_calls\":[]},\"metadata\":{\"caller\":\"" caller "\",\"usage\":{},"           \
    "\"latency_ms\":5,\"llm_call_index\":1}," TS(n) "}\n"
#define RUN_END(n)                                                                           \
    "{\"event_type\":\"run.end\",\"content\":{\"messages\":[]},"                             \
    "\"metadata\":{\"status\":\"success\"}," TS(n) "}\n"
#define TERMINAL(status, extra, n)                                                           \
    "{\"content\":{\"status\":\"" status "\"},\"metadata\":{\"protocol_version\":1,"         \
    "\"recovered\":false" extra "}," TS(n) "}"

typedef struct fixture {
    char dir[256];
    char db[512];                /* a SQLite path, or the URI of the test's database */
    char pg_db[48];              /* "" on SQLite */
    rs_store *s;
} fixture;

static fixture fx;

static rs_target target(const char *run, const char *user)
{
    return (rs_target){.thread_id = "th-1", .run_id = run, .user = user};
}

static void add(const char *user, const char *run, const char *lines)
{
    rs_target t = target(run, user);
    rs_err err = {0};
    int rc = rs_store_append(fx.s, &t, lines, strlen(lines), NULL, &err);
    if (rc)
        fail_msg("append %s: %s (line %ld): %s", run, rs_errno_name(rc), err.line, err.msg);
}

static void terminal(const char *run, const char *body)
{
    rs_target t = target(run, "alice");
    rs_err err = {0};
    int rc = rs_store_put_singleton(fx.s, &t, "run.terminal", body, strlen(body), 1, NULL, &err);
    if (rc != RS_CONFIRMED_NEW)
        fail_msg("terminal %s: %d %s", run, rc, err.msg);
}

/* Run sql on the cluster's maintenance database (RS_TEST_PG_URI). */
static int pg_admin(const char *sql)
{
    PGconn *c = PQconnectdb(getenv("RS_TEST_PG_URI"));
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    return ok ? 0 : -1;
}

/* A fresh database on the cluster; fx.db becomes its URI. */
static int pg_fresh(const char *uri)
{
    snprintf(fx.pg_db, sizeof fx.pg_db, "rs_proj_%ld", (long)getpid());
    char sql[96];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", fx.pg_db);
    if (pg_admin(sql))
        return -1;
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", fx.pg_db);
    const char *q = strchr(uri, '?');
    if (pg_admin(sql) || strncmp(uri, "postgresql:///", 14) != 0 || !q)
        return -1;
    snprintf(fx.db, sizeof fx.db, "postgresql:///%s%s", fx.pg_db, q);
    return 0;
}

static void raw_sql(const char *sql)
{
    if (fx.pg_db[0]) {
        PGconn *c = PQconnectdb(fx.db);
        PGresult *r = PQexec(c, sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            fail_msg("sql: %s", PQerrorMessage(c));
        assert_string_equal(PQcmdTuples(r), "1");
        PQclear(r);
        PQfinish(c);
        return;
    }
    sqlite3 *db;
    assert_int_equal(sqlite3_open(fx.db, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("sql: %s", msg ? msg : "?");
    assert_int_equal(sqlite3_changes(db), 1);
    sqlite3_close(db);
}

/* The thread: every contract event type, middleware and subagent rows, a regenerated run,
 * edit replays (one failed, one pending), workspace changes, a deleted run (seq gap) and a
 * second owner. Seqs are noted on the right. */
static int setup(void **state)
{
    (void)state;
    unit_tmp_template(fx.dir, sizeof fx.dir, "rs-proj");
    if (!mkdtemp(fx.dir))
        return -1;
    snprintf(fx.db, sizeof fx.db, "%s/store.db", fx.dir);
    const char *pg = getenv("RS_TEST_PG_URI");
    if (pg && *pg && pg_fresh(pg))
        return -1;
    rs_options opt = RS_OPTIONS_INIT;
    opt.contract_path = UNIT_CONTRACT;
    rs_err err = {0};
    if (rs_store_open(&fx.s, fx.db, &opt, &err)) {
        fprintf(stderr, "open: %s\n", err.msg);
        return -1;
    }
    /* run-1: superseded by run-2 */
    add("alice", "run-1",
        START("", 01)                                                       /* 1 */
        HUMAN("hi", 02)                                                     /* 2 */
        AI("lead_agent", "hello", 03)                                       /* 3 */
        RUN_END(04));                                                       /* 4 */
    terminal("run-1", TERMINAL("success", "", 05));                        /* 5 */
    /* run-2: regenerates run-1, succeeds */
    add("alice", "run-2",
        START(",\"regenerate_from_run_id\":\"run-1\"", 06)                  /* 6 */
        HUMAN("hi again", 07)                                               /* 7 */
        "{\"event_type\":\"middleware:guardrail\",\"content\":{\"name\":\"guardrail\","
        "\"hook\":\"before_model\",\"action\":\"allow\",\"changes\":{}}," TS(08) "}\n" /* 8 */
        AI("middleware:summarize", "summary", 09)                           /* 9 */
        AI("subagent:researcher", "sub thinks", 10)                         /* 10 */
        "{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":\"tool\",\"content\":"
        "\"sub tool\",\"tool_call_id\":\"call-s\"},\"metadata\":{\"caller\":"
        "\"subagent:researcher\"}," TS(11) "}\n"                            /* 11 */
        "{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":\"tool\",\"content\":"
        "\"done\",\"tool_call_id\":\"call-1\"}," TS(12) "}\n"               /* 12 */
        AI("lead_agent", "answer", 13)                                      /* 13 */
        "{\"event_type\":\"subagent.start\",\"content\":{\"task_id\":\"task-1\","
        "\"description\":\"research\"},\"metadata\":{\"task_id\":\"task-1\"}," TS(14) "}\n"
        "{\"event_type\":\"subagent.step\",\"content\":{\"task_id\":\"task-1\","
        "\"message_index\":0,\"kind\":\"ai\",\"text\":\"thinking\",\"truncated\":false,"
        "\"tool_calls\":[]},\"metadata\":{\"task_id\":\"task-1\",\"message_index\":0},"
        TS(15) "}\n"
        "{\"event_type\":\"subagent.end\",\"content\":{\"task_id\":\"task-1\",\"status\":"
        "\"completed\"},\"metadata\":{\"task_id\":\"task-1\"}," TS(16) "}\n"
        "{\"event_type\":\"context:memory\",\"content\":{\"content_sha256\":"
        "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}," TS(17) "}\n"
        "{\"event_type\":\"llm.error\",\"content\":\"rate limited\"," TS(18) "}\n"
        "{\"event_type\":\"run.error\",\"content\":\"boom\",\"metadata\":{\"error_type\":"
        "\"ValueError\"}," TS(19) "}\n"
        "{\"event_type\":\"workspace_changes\",\"content\":\"1 file changed +3 -0\","
        "\"metadata\":{\"workspace_changes\": {\"version\": 1, \"summary\": {\"created\": 1, "
        "\"modified\": 0, \"deleted\": 0, \"symlink_created\": 0, \"additions\": 3, "
        "\"deletions\": 0, \"truncated\": false}, \"files\": [{\"path\": "
        "\"/mnt/user-data/outputs/a.txt\", \"root\": \"outputs\", \"status\": \"created\", "
        "\"binary\": false, \"sensitive\": false, \"size_before\": null, \"size_after\": 12, "
        "\"sha256_before\": null, \"sha256_after\": \"ab\", \"diff\": \"+x\", "
        "\"diff_truncated\": false, \"diff_unavailable_reason\": null, \"additions\": 3, "
        "\"deletions\": 0, \"symlink\": false, \"symlink_target_before\": null, "
        "\"symlink_target_after\": null}], \"limits\": {\"max_files\": 200, "
        "\"max_scanned_files\": 2000, \"max_file_bytes_for_diff\": 262144, "
        "\"max_total_diff_bytes\": 1048576}, \"ratio\": 1.50}}," TS(20) "}\n"  /* 20 */
        RUN_END(21));                                                       /* 21 */
    terminal("run-2", TERMINAL("success", "", 22));                         /* 22 */
    /* run-6: deleted below, leaving a gap 23..25 */
    add("alice", "run-6", START("", 23) HUMAN("gone", 24) AI("lead_agent", "gone", 25));
    rs_target t6 = target("run-6", "alice");
    int64_t deleted = 0;
    if (rs_store_delete_run(fx.s, &t6, &deleted, &err) || deleted != 3) {
        fprintf(stderr, "delete: %s (%lld)\n", err.msg, (long long)deleted);
        return -1;
    }
    /* run-3: an edit replay of run-2 that failed: hidden itself, run-2 stays */
    add("alice", "run-3",
        START(",\"replay_kind\":\"edit\",\"regenerate_from_run_id\":\"run-2\"", 26) /* 26 */
        HUMAN("edited", 27));                                               /* 27 */
    terminal("run-3", TERMINAL("error", "", 28));                           /* 28 */
    /* run-4, then run-5: a pending edit replay of run-4, which hides run-4 */
    add("alice", "run-4", START("", 29) HUMAN("four", 30) AI("lead_agent", "four", 31));
    terminal("run-4", TERMINAL("success", "", 32));                         /* 29..32 */
    add("alice", "run-5",
        START(",\"replay_kind\":\"edit\",\"regenerate_from_run_id\":\"run-4\"", 33) /* 33 */
        HUMAN("edit 4", 34));                                               /* 34 */
    /* run-7: a failed regenerate of run-2 (hides nothing); regenerated by run-9 */
    add("alice", "run-7",
        START(",\"regenerate_from_run_id\":\"run-2\"", 35)                  /* 35 */
        AI("lead_agent", "retry", 36)                                       /* 36 */
        "{\"event_type\":\"llm.tool.result\",\"content\":{\"type\":\"\",\"role\":"
        "\"assistant\",\"content\":\"sub says\"},\"metadata\":{\"caller\":\"subagent:x\"},"
        TS(37) "}\n");                                                      /* 37 */
    terminal("run-7", TERMINAL("error", "", 38));                           /* 38 */
    add("bob", "run-b", HUMAN("bob here", 39));                             /* 39 */
    /* run-9: regenerates run-7, the relation carried only by its run.terminal */
    add("alice", "run-9", START("", 40) AI("lead_agent", "nine", 41));      /* 40, 41 */
    terminal("run-9", TERMINAL("success", ",\"regenerate_from_run_id\":\"run-7\"", 42));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rs_store_close(fx.s);
    if (fx.pg_db[0]) {
        char sql[96];
        snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", fx.pg_db);
        if (pg_admin(sql))
            return -1;
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx.dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- helpers ----------------------------------------------------------------------------- */

static void expect_seqs(rs_cursor *c, const int64_t *want, size_t n)
{
    const rs_record *rec;
    size_t i = 0;
    int rc;
    while ((rc = rs_cursor_next(c, &rec)) > 0) {
        if (i >= n)
            fail_msg("unexpected extra seq %lld", (long long)rec->seq);
        if (rec->seq != want[i])
            fail_msg("position %zu: seq %lld, expected %lld", i, (long long)rec->seq,
                     (long long)want[i]);
        assert_int_equal(rec->line[rec->line_len - 1], '\n');
        i++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(i, n);
    rs_cursor_free(c);
}

static void expect_history(const char *user, int64_t after, const int64_t *want, size_t n)
{
    rs_cursor *c;
    rs_err err = {0};
    int rc = rs_store_history(fx.s, "th-1", user, after, &c, &err);
    if (rc)
        fail_msg("history: %s", err.msg);
    expect_seqs(c, want, n);
}

#define N(a) (sizeof(a) / sizeof *(a))

/* sha256 of the run's events.jsonl up to upper, read through the ordinary query. */
static void run_digest(const char *run, const char *user, int64_t upper, char *out)
{
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "th-1";
    q.run_id = run;
    q.user = user;
    q.before_seq = upper + 1;
    rs_cursor *c;
    assert_int_equal(rs_store_query(fx.s, &q, &c, NULL), 0);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    const rs_record *rec;
    while (rs_cursor_next(c, &rec) > 0)
        EVP_DigestUpdate(md, rec->line, rec->line_len);
    rs_cursor_free(c);
    unsigned char h[32];
    unsigned len;
    EVP_DigestFinal_ex(md, h, &len);
    EVP_MD_CTX_free(md);
    strcpy(out, "sha256:");
    for (unsigned i = 0; i < len; i++)
        sprintf(out + 7 + 2 * i, "%02x", h[i]);
}

/* RFC 6962's MTH over leaf hashes h[0..n), from the RFC's text (n >= 1). */
static void mth(unsigned char (*h)[32], size_t n, unsigned char *out)
{
    if (n == 1) {
        memcpy(out, h[0], 32);
        return;
    }
    size_t k = 1;
    while (k * 2 < n)
        k *= 2;
    unsigned char in[65];
    in[0] = 1;
    mth(h, k, in + 1);
    mth(h + k, n - k, in + 33);
    unsigned int olen;
    EVP_Digest(in, sizeof in, out, &olen, EVP_sha256(), NULL);
}

/* The salt the store keeps for seq of a salted seal, read by SQL (not through runfs). */
static void salt_of(const char *run, const char *user, int64_t seq, unsigned char *salt)
{
    char sql[256], hex[40] = "";
    snprintf(sql, sizeof sql,
             "SELECT %s FROM runfs_seal_salt WHERE thread_id = 'th-1' AND run_id = '%s' AND "
             "owner = '%s' AND seq = %lld",
             fx.pg_db[0] ? "encode(salt, 'hex')" : "lower(hex(salt))", run, user,
             (long long)seq);
    if (fx.pg_db[0]) {
        PGconn *c = PQconnectdb(fx.db);
        PGresult *r = PQexec(c, sql);
        assert_int_equal(PQntuples(r), 1);
        snprintf(hex, sizeof hex, "%s", PQgetvalue(r, 0, 0));
        PQclear(r);
        PQfinish(c);
    } else {
        sqlite3 *db;
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_open(fx.db, &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        snprintf(hex, sizeof hex, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    assert_int_equal(strlen(hex), 32);
    for (int i = 0; i < 16; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        salt[i] = (unsigned char)v;
    }
}

/* The seal's root: the MTH of the run's lines up to upper, read through the ordinary
 * query (at most 64 lines here), each leaf SHA-256(0x00 || salt || line) with the salt
 * the store keeps. */
static void run_root(const char *run, const char *user, int64_t upper, char *out)
{
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "th-1";
    q.run_id = run;
    q.user = user;
    q.before_seq = upper + 1;
    rs_cursor *c;
    assert_int_equal(rs_store_query(fx.s, &q, &c, NULL), 0);
    unsigned char leaves[64][32], root[32];
    size_t n = 0;
    const rs_record *rec;
    unsigned int olen;
    while (rs_cursor_next(c, &rec) > 0) {
        assert_true(n < 64);
        unsigned char buf[4096];
        assert_true(rec->line_len + 17 < sizeof buf);
        buf[0] = 0;
        salt_of(run, user, rec->seq, buf + 1);
        memcpy(buf + 17, rec->line, rec->line_len);
        EVP_Digest(buf, rec->line_len + 17, leaves[n++], &olen, EVP_sha256(), NULL);
    }
    rs_cursor_free(c);
    assert_true(n > 0);
    mth(leaves, n, root);
    strcpy(out, "sha256:");
    for (unsigned i = 0; i < 32; i++)
        sprintf(out + 7 + 2 * i, "%02x", root[i]);
}

/* The sealed_at value of a seal document, checked for canonical UTC form. */
static void sealed_at_of(const char *doc, char *out)
{
    const char *p = strstr(doc, "\"sealed_at\":\"");
    assert_non_null(p);
    p += 13;
    const char *e = strchr(p, '"');
    assert_non_null(e);
    assert_int_equal(e - p, 32);
    memcpy(out, p, 32);
    out[32] = '\0';
    assert_int_equal(out[10], 'T');
    assert_int_equal(out[19], '.');
    assert_string_equal(out + 26, "+00:00");
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_fixture_seqs(void **state)
{
    (void)state;
    static const int64_t alice[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14,
                                    15, 16, 17, 18, 19, 20, 21, 22, 26, 27, 28, 29, 30, 31,
                                    32, 33, 34, 35, 36, 37, 38, 40, 41, 42};
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "th-1";
    q.user = "alice";
    rs_cursor *c;
    assert_int_equal(rs_store_query(fx.s, &q, &c, NULL), 0);
    expect_seqs(c, alice, N(alice));
}

static void test_history_alice(void **state)
{
    (void)state;
    static const int64_t want[] = {7, 11, 12, 13, 34, 41};
    expect_history("alice", 0, want, N(want));
}

static void test_history_all_owners(void **state)
{
    (void)state;
    static const int64_t want[] = {7, 11, 12, 13, 34, 39, 41};
    expect_history(NULL, 0, want, N(want));
}

static void test_history_other_owner(void **state)
{
    (void)state;
    static const int64_t want[] = {39};
    expect_history("bob", 0, want, N(want));
    expect_history("nobody", 0, NULL, 0);
}

static void test_history_after_seq(void **state)
{
    (void)state;
    static const int64_t want[] = {13, 34, 41};
    expect_history("alice", 12, want, N(want));
    static const int64_t in_gap[] = {34, 41};
    expect_history("alice", 24, in_gap, N(in_gap));
    expect_history("alice", 41, NULL, 0);
}

static void test_history_line(void **state)
{
    (void)state;
    rs_cursor *c;
    assert_int_equal(rs_store_history(fx.s, "th-1", "alice", 33, &c, NULL), 0);
    const rs_record *rec;
    assert_int_equal(rs_cursor_next(c, &rec), 1);
    static const char want[] =
        "{\"thread_id\":\"th-1\",\"run_id\":\"run-5\",\"seq\":34,\"event_type\":"
        "\"llm.human.input\",\"category\":\"message\",\"content\":{\"type\":\"human\","
        "\"content\":\"edit 4\"},\"metadata\":{\"caller\":\"lead_agent\"},\"created_at\":"
        "\"2026-01-01T00:00:34.000000+00:00\",\"user_id\":\"alice\"}\n";
    assert_int_equal(rec->line_len, sizeof want - 1);
    assert_memory_equal(rec->line, want, sizeof want - 1);
    assert_string_equal(rec->run_id, "run-5");
    rs_cursor_free(c);
}

static void test_history_bad_thread(void **state)
{
    (void)state;
    rs_cursor *c = NULL;
    rs_err err = {0};
    assert_int_equal(rs_store_history(fx.s, "bad/thread", NULL, 0, &c, &err), -EINVAL);
    assert_null(c);
}

static const char ws_absent[] =
    "{\"available\":false,\"version\":1,\"summary\":{\"created\":0,\"modified\":0,"
    "\"deleted\":0,\"symlink_created\":0,\"additions\":0,\"deletions\":0,\"truncated\":false},"
    "\"files\":[],\"limits\":{}}\n";

static void expect_ws(const char *thread, const char *run, const char *user, const char *want)
{
    rs_target t = {.thread_id = thread, .run_id = run, .user = user};
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    int rc = rs_store_workspace_changes(fx.s, &t, &out, &err);
    if (rc)
        fail_msg("workspace changes: %s", err.msg);
    assert_string_equal(out.buf, want);
    rs_buf_release(&out);
}

static void test_workspace_changes(void **state)
{
    (void)state;
    expect_ws("th-1", "run-2", "alice",
              "{\"available\":true,\"version\":1,\"summary\":{\"created\":1,\"modified\":0,"
              "\"deleted\":0,\"symlink_created\":0,\"additions\":3,\"deletions\":0,"
              "\"truncated\":false},\"files\":[{\"path\":\"/mnt/user-data/outputs/a.txt\","
              "\"root\":\"outputs\",\"status\":\"created\",\"binary\":false,\"sensitive\":false,"
              "\"size_before\":null,\"size_after\":12,\"sha256_before\":null,\"sha256_after\":"
              "\"ab\",\"diff\":\"+x\",\"diff_truncated\":false,\"diff_unavailable_reason\":null,"
              "\"additions\":3,\"deletions\":0,\"symlink\":false,\"symlink_target_before\":null,"
              "\"symlink_target_after\":null}],\"limits\":{\"max_files\":200,"
              "\"max_scanned_files\":2000,\"max_file_bytes_for_diff\":262144,"
              "\"max_total_diff_bytes\":1048576},\"ratio\":1.50}\n");
}

static void test_workspace_changes_absent(void **state)
{
    (void)state;
    expect_ws("th-1", "run-1", "alice", ws_absent);
    expect_ws("th-1", "run-2", "bob", ws_absent);        /* another owner's rows */
    expect_ws("th-1", "no-such-run", NULL, ws_absent);
}

/* A DeerFlow row whose payload is the content object (no metadata.workspace_changes). */
static void test_workspace_changes_content_payload(void **state)
{
    (void)state;
    rs_target t = {.thread_id = "th-ws", .run_id = "run-w", .user = NULL};
    static const char line[] =
        "{\"event_type\":\"workspace_changes\",\"content\":\"x\",\"metadata\":"
        "{\"workspace_changes\":{\"version\":1,\"summary\":{\"created\":0,\"modified\":0,"
        "\"deleted\":0,\"symlink_created\":0,\"additions\":0,\"deletions\":0,\"truncated\":"
        "false},\"files\":[],\"limits\":{\"max_files\":1,\"max_scanned_files\":1,"
        "\"max_file_bytes_for_diff\":1,\"max_total_diff_bytes\":1}}}}\n";
    assert_int_equal(rs_store_append(fx.s, &t, line, sizeof line - 1, NULL, NULL), 0);
    raw_sql("UPDATE run_events SET content = '{\"available\": false, \"version\": 1, "
            "\"limits\": {}, \"files\": [1.0e3]}', event_metadata = "
            "'{\"content_is_json\": true, \"content_is_dict\": true}' "
            "WHERE thread_id = 'th-ws'");
    expect_ws("th-ws", "run-w", NULL,
              "{\"available\":true,\"version\":1,\"limits\":{},\"files\":[1.0e3],"
              "\"summary\":{\"created\":0,\"modified\":0,\"deleted\":0,\"symlink_created\":0,"
              "\"additions\":0,\"deletions\":0,\"truncated\":false}}\n");
}

static void expect_receipt(const char *run, const char *user, const char *want)
{
    rs_target t = target(run, user);
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    int rc = rs_store_receipt(fx.s, &t, &out, &err);
    if (rc)
        fail_msg("receipt %s: %s", run, err.msg);
    assert_string_equal(out.buf, want);
    rs_buf_release(&out);
}

static void test_receipt(void **state)
{
    (void)state;
    expect_receipt("run-1", "alice",
                   "{\"thread_id\":\"th-1\",\"run_id\":\"run-1\",\"upper_seq\":5,"
                   "\"event_count\":5,\"terminal\":{\"thread_id\":\"th-1\",\"run_id\":\"run-1\","
                   "\"seq\":5,\"event_type\":\"run.terminal\",\"category\":\"trace\","
                   "\"content\":{\"status\":\"success\"},\"metadata\":{\"protocol_version\":1,"
                   "\"recovered\":false},\"created_at\":\"2026-01-01T00:00:05.000000+00:00\","
                   "\"user_id\":\"alice\"}}\n");
    expect_receipt("run-5", "alice",
                   "{\"thread_id\":\"th-1\",\"run_id\":\"run-5\",\"upper_seq\":34,"
                   "\"event_count\":2,\"terminal\":null}\n");
    expect_receipt("run-b", NULL,
                   "{\"thread_id\":\"th-1\",\"run_id\":\"run-b\",\"upper_seq\":39,"
                   "\"event_count\":1,\"terminal\":null}\n");
    rs_target t = target("run-b", "alice");
    rs_buf out = RS_BUF_INIT;
    assert_int_equal(rs_store_receipt(fx.s, &t, &out, NULL), -ENOENT);
    t = target("bad run", NULL);
    assert_int_equal(rs_store_receipt(fx.s, &t, &out, NULL), -EINVAL);
    assert_int_equal(out.len, 0);
    rs_buf_release(&out);
}

static int seal(const char *run, const char *body, rs_buf *out, rs_err *err)
{
    rs_target t = target(run, "alice");
    return rs_store_seal(fx.s, &t, body, body ? strlen(body) : 0, out, err);
}

static void test_seal_without_terminal(void **state)
{
    (void)state;
    rs_err err = {0};
    rs_buf out = RS_BUF_INIT;
    assert_int_equal(seal("run-5", "", &out, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "no valid run.terminal"));
    assert_non_null(strstr(err.msg, "partial"));
    assert_int_equal(seal("run-5", " \n", &out, &err), -EINVAL);
    assert_int_equal(seal("run-5", NULL, &out, &err), -EINVAL);
    assert_int_equal(out.len, 0);
    rs_target t = target("run-5", "alice");
    assert_int_equal(rs_store_seal_read(fx.s, &t, &out, &err), -ENOENT);
    rs_buf_release(&out);
}

static void test_seal_bad_bodies(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\"state\":\"sealed\",\"error\":\"x\"}",
        "{\"state\":\"partial\"}",
        "{\"error\":\"why\"}",
        "{\"state\":\"partial\",\"error\":\"\"}",
        "{\"state\":\"partial\",\"error\":7}",
        "{\"state\":\"partial\",\"error\":\"why\",\"extra\":1}",
        "{\"state\":\"partial\",\"error\":\"why\",\"state\":\"partial\"}",
        "[\"partial\"]",
        "partial",
        "{\"state\":\"partial\",\"error\":\"why\"",
    };
    for (size_t i = 0; i < N(bodies); i++) {
        rs_err err = {0};
        int rc = seal("run-5", bodies[i], NULL, &err);
        if (rc != -EINVAL)
            fail_msg("body %s: %d", bodies[i], rc);
        assert_true(err.msg[0] != '\0');
    }
    char big[700];
    int n = snprintf(big, sizeof big, "{\"state\":\"partial\",\"error\":\"");
    memset(big + n, 'x', 600);
    strcpy(big + n + 600, "\"}");
    assert_int_equal(seal("run-5", big, NULL, NULL), -EINVAL);
}

static void test_seal_partial(void **state)
{
    (void)state;
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    int rc = seal("run-5", "{\"state\": \"partial\", \"error\": \"worker lost\"}\n", &out, &err);
    if (rc)
        fail_msg("seal: %s", err.msg);
    char at[40], want[640], root[80];
    sealed_at_of(out.buf, at);
    run_root("run-5", "alice", 34, root);
    snprintf(want, sizeof want,
             "{\"thread_id\":\"th-1\",\"run_id\":\"run-5\",\"state\":\"partial\",\"upper_seq\":34,"
             "\"event_count\":2,\"terminal_seq\":null,\"digest\":\"sha256:a0d87886faebf8a4c5d4f1"
             "0954c49244d78fdbdc05ac9ed7c244f94ae6e22149\",\"tree_size\":2,\"root\":\"%s\","
             "\"leaves\":\"salted\",\"error\":\"worker lost\",\"sealed_at\":\"%s\","
             "\"uncovered\":0,\"redacted\":0}\n",
             root, at);
    assert_string_equal(out.buf, want);
    rs_buf_reset(&out);
    rs_target t = target("run-5", "alice");
    assert_int_equal(rs_store_seal_read(fx.s, &t, &out, NULL), 0);
    assert_string_equal(out.buf, want);
    rs_buf_release(&out);
}

static void test_seal_complete(void **state)
{
    (void)state;
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    int rc = seal("run-2", "", &out, &err);
    if (rc)
        fail_msg("seal: %s", err.msg);
    char at[40], digest[80], want[640], root[80];
    sealed_at_of(out.buf, at);
    run_digest("run-2", "alice", 22, digest);
    run_root("run-2", "alice", 22, root);
    snprintf(want, sizeof want,
             "{\"thread_id\":\"th-1\",\"run_id\":\"run-2\",\"state\":\"sealed\",\"upper_seq\":22,"
             "\"event_count\":17,\"terminal_seq\":22,\"digest\":\"%s\",\"tree_size\":17,"
             "\"root\":\"%s\",\"leaves\":\"salted\",\"error\":null,\"sealed_at\":\"%s\","
             "\"uncovered\":0,\"redacted\":0}\n",
             digest, root, at);
    assert_string_equal(out.buf, want);
    /* A second seal is refused and changes nothing. */
    rs_buf_reset(&out);
    assert_int_equal(seal("run-2", "", &out, &err), -EEXIST);
    assert_string_equal(err.msg, "run run-2 is already sealed");
    assert_int_equal(seal("run-2", "{\"state\":\"partial\",\"error\":\"x\"}", NULL, &err),
                     -EEXIST);
    rs_target t = target("run-2", "alice");
    assert_int_equal(rs_store_seal_read(fx.s, &t, &out, NULL), 0);
    assert_string_equal(out.buf, want);
    /* Events appended later are kept, never claimed. */
    add("alice", "run-2", "{\"event_type\":\"llm.error\",\"content\":\"late\"}\n");  /* 43 */
    rs_buf_reset(&out);
    assert_int_equal(rs_store_seal_read(fx.s, &t, &out, NULL), 0);
    snprintf(want, sizeof want,
             "{\"thread_id\":\"th-1\",\"run_id\":\"run-2\",\"state\":\"sealed\",\"upper_seq\":22,"
             "\"event_count\":17,\"terminal_seq\":22,\"digest\":\"%s\",\"tree_size\":17,"
             "\"root\":\"%s\",\"leaves\":\"salted\",\"error\":null,\"sealed_at\":\"%s\","
             "\"uncovered\":1,\"redacted\":0}\n",
             digest, root, at);
    assert_string_equal(out.buf, want);
    /* Another owner has no rows in the run: it sees no seal. */
    rs_buf_reset(&out);
    t.user = "bob";
    assert_int_equal(rs_store_seal_read(fx.s, &t, &out, NULL), -ENOENT);
    rs_buf_release(&out);
}

static void test_seal_partial_with_terminal(void **state)
{
    (void)state;
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    assert_int_equal(seal("run-1", "", NULL, &err), 0);
    assert_int_equal(seal("run-4", "{\"state\":\"partial\",\"error\":\"asked\"}", &out, &err), 0);
    char at[40], want[640], root[80];
    sealed_at_of(out.buf, at);
    char digest[80];
    run_digest("run-4", "alice", 32, digest);
    run_root("run-4", "alice", 32, root);
    snprintf(want, sizeof want,
             "{\"thread_id\":\"th-1\",\"run_id\":\"run-4\",\"state\":\"partial\",\"upper_seq\":32,"
             "\"event_count\":4,\"terminal_seq\":32,\"digest\":\"%s\",\"tree_size\":4,"
             "\"root\":\"%s\",\"leaves\":\"salted\",\"error\":\"asked\",\"sealed_at\":\"%s\","
             "\"uncovered\":0,\"redacted\":0}\n",
             digest, root, at);
    assert_string_equal(out.buf, want);
    rs_buf_release(&out);
}

static void test_seal_invalid_terminal(void **state)
{
    (void)state;
    raw_sql("UPDATE run_events SET event_metadata = "
            "'{\"protocol_version\": 2, \"recovered\": false, \"regenerate_from_run_id\": "
            "\"run-7\", \"content_is_json\": true, \"content_is_dict\": true}' WHERE thread_id = 'th-1' AND seq = 42");
    rs_err err = {0};
    assert_int_equal(seal("run-9", "", NULL, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "protocol_version"));
    raw_sql("UPDATE run_events SET event_metadata = "
            "'{\"protocol_version\": 1, \"recovered\": \"no\", \"content_is_json\": true}' "
            "WHERE thread_id = 'th-1' AND seq = 42");
    assert_int_equal(seal("run-9", "", NULL, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "recovered"));
    raw_sql("UPDATE run_events SET event_metadata = "
            "'{\"protocol_version\": 1.0, \"recovered\": true, \"content_is_dict\": 1}' "
            "WHERE thread_id = 'th-1' AND seq = 42");
    assert_int_equal(seal("run-9", "", NULL, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "protocol_version"));
    raw_sql("UPDATE run_events SET event_metadata = "
            "'{\"protocol_version\": 1, \"recovered\": true, \"content_is_dict\": 1}' "
            "WHERE thread_id = 'th-1' AND seq = 42");
    err.msg[0] = '\0';
    if (seal("run-9", "", NULL, &err))
        fail_msg("seal run-9: %s", err.msg);
}

static void test_seal_read_only(void **state)
{
    (void)state;
    rs_options opt = RS_OPTIONS_INIT;
    opt.contract_path = UNIT_CONTRACT;
    opt.read_only = 1;
    rs_store *ro;
    assert_int_equal(rs_store_open(&ro, fx.db, &opt, NULL), 0);
    rs_target t = target("run-7", "alice");
    rs_err err = {0};
    assert_int_equal(rs_store_seal(ro, &t, "", 0, NULL, &err), -EROFS);
    rs_buf out = RS_BUF_INIT;
    t.run_id = "run-2";
    assert_int_equal(rs_store_seal_read(ro, &t, &out, NULL), 0);
    rs_buf_release(&out);
    rs_store_close(ro);
}

typedef struct verdicts {
    int calls;
    int bad;
    char runs[8][16];
    char why[8][256];
} verdicts;

static int on_verdict(void *ctx, const char *thread_id, const char *run_id, int ok,
                      const char *why)
{
    verdicts *v = ctx;
    assert_string_equal(thread_id, "th-1");
    v->calls++;
    if (!ok && v->bad < 8) {
        snprintf(v->runs[v->bad], sizeof v->runs[0], "%s", run_id);
        snprintf(v->why[v->bad], sizeof v->why[0], "%s", why);
        v->bad++;
    }
    return 0;
}

static void test_verify(void **state)
{
    (void)state;
    verdicts v = {0};
    /* Sealed: run-1, run-2, run-4, run-5, run-9. */
    assert_int_equal(rs_store_verify(fx.s, on_verdict, &v, NULL), 0);
    assert_int_equal(v.calls, 5);
    assert_int_equal(v.bad, 0);

    char before[80];
    run_digest("run-2", NULL, 22, before);
    raw_sql("UPDATE run_events SET content = '{\"type\":\"human\",\"content\":\"tampered\"}' "
            "WHERE thread_id = 'th-1' AND seq = 7");
    char after[80], why[256];
    run_digest("run-2", NULL, 22, after);
    memset(&v, 0, sizeof v);
    assert_int_equal(rs_store_verify(fx.s, on_verdict, &v, NULL), 1);
    assert_int_equal(v.calls, 5);
    assert_int_equal(v.bad, 1);
    assert_string_equal(v.runs[0], "run-2");
    /* The run's events, 6 to its seal's upper 22, are one chunk of the kept tree (fewer
     * than 256): verify names them all. */
    rs_query q = RS_QUERY_INIT;
    q.thread_id = "th-1";
    q.run_id = "run-2";
    rs_cursor *c;
    const rs_record *rec;
    assert_int_equal(rs_store_query(fx.s, &q, &c, NULL), 0);
    assert_int_equal(rs_cursor_next(c, &rec), 1);
    long long first = (long long)rec->seq;
    rs_cursor_free(c);
    snprintf(why, sizeof why, "digest changed in seqs %lld-22: %s != %s", first, after, before);
    assert_string_equal(v.why[0], why);

    raw_sql("DELETE FROM run_events WHERE thread_id = 'th-1' AND seq = 2");
    memset(&v, 0, sizeof v);
    assert_int_equal(rs_store_verify(fx.s, on_verdict, &v, NULL), 2);
    assert_int_equal(v.bad, 2);
    assert_string_equal(v.runs[0], "run-1");
    assert_string_equal(v.why[0], "event count 4 != sealed 5");
    assert_string_equal(v.runs[1], "run-2");
    assert_int_equal(rs_store_verify(fx.s, NULL, NULL, NULL), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_seqs),
        cmocka_unit_test(test_history_alice),
        cmocka_unit_test(test_history_all_owners),
        cmocka_unit_test(test_history_other_owner),
        cmocka_unit_test(test_history_after_seq),
        cmocka_unit_test(test_history_line),
        cmocka_unit_test(test_history_bad_thread),
        cmocka_unit_test(test_workspace_changes),
        cmocka_unit_test(test_workspace_changes_absent),
        cmocka_unit_test(test_workspace_changes_content_payload),
        cmocka_unit_test(test_receipt),
        cmocka_unit_test(test_seal_without_terminal),
        cmocka_unit_test(test_seal_bad_bodies),
        cmocka_unit_test(test_seal_partial),
        cmocka_unit_test(test_seal_complete),
        cmocka_unit_test(test_seal_partial_with_terminal),
        cmocka_unit_test(test_seal_invalid_terminal),
        cmocka_unit_test(test_seal_read_only),
        cmocka_unit_test(test_verify),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
