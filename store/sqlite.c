/* sqlite.c — the SQLite backend: DeerFlow's run_events table plus runfs's side tables.
 *
 * Every write is one BEGIN IMMEDIATE transaction: the database's write lock serialises seq
 * allocation across threads, processes and mounts. Statements are prepared once and cached
 * per connection. Reads stream rows through cursors; nothing materialises a run. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "schema.sql.h"

#define STMT_CACHE 48

typedef struct stmt_slot {
    char *sql;
    const char *key;             /* the caller's string when it is a constant, else NULL */
    sqlite3_stmt *st;
    int busy;
} stmt_slot;

struct rs_backend {
    sqlite3 *db;
    char *path;
    int read_only;
    long pid;
    stmt_slot cache[STMT_CACHE];
    rs_buf sql;                  /* scratch for built statements */
};

typedef struct sq_cursor {
    rs_cursor base;
    rs_backend *b;
    sqlite3_stmt *st;
} sq_cursor;

typedef struct sq_names {
    rs_names base;
    rs_backend *b;
    sqlite3_stmt *st;
} sq_name_cursor;

/* Per-thread or per-run totals as kept in runfs_thread / runfs_run. */
typedef struct log_state {
    int64_t key;
    int64_t size;
    int64_t count;
    int64_t messages;
    int64_t last_seq;
    int mixed;
} log_state;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int sq_fail(rs_backend *b, int rc, rs_err *err, const char *what)
{
    int code;
    int sys = b->db ? sqlite3_system_errno(b->db) : 0;
    switch (rc & 0xff) {
    case SQLITE_FULL: code = -ENOSPC; break;
    case SQLITE_READONLY: code = -EROFS; break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: code = -EBUSY; break;
    case SQLITE_NOMEM: code = -ENOMEM; break;
    case SQLITE_CONSTRAINT: code = -EEXIST; break;
    case SQLITE_CANTOPEN: code = sys == EACCES ? -EACCES : -ENOENT; break;
    case SQLITE_IOERR: code = sys == ENOSPC ? -ENOSPC : -EIO; break;
    default: code = -EIO; break;
    }
    if (code == -EIO && sys == ENOSPC)
        code = -ENOSPC;
    return rs_err_set(err, code, "%s: %s", what, b->db ? sqlite3_errmsg(b->db) : sqlite3_errstr(rc));
}

/* A cached statement for sql, reset and unbound, marked busy until put_stmt. */
static int get_stmt(rs_backend *b, const char *sql, sqlite3_stmt **out, rs_err *err)
{
    /* Most statements are string constants: a pointer match finds them without comparing
     * text (a write runs a dozen of them). Built statements live in b->sql. */
    const char *key = sql == b->sql.buf ? NULL : sql;
    for (int i = 0; key && i < STMT_CACHE; i++) {
        stmt_slot *s = &b->cache[i];
        if (s->key == key && !s->busy) {
            s->busy = 1;
            *out = s->st;
            return 0;
        }
    }
    stmt_slot *free_slot = NULL;
    for (int i = 0; i < STMT_CACHE; i++) {
        stmt_slot *s = &b->cache[i];
        if (!s->sql) {
            if (!free_slot)
                free_slot = s;
            continue;
        }
        if (!s->busy && strcmp(s->sql, sql) == 0) {
            s->busy = 1;
            *out = s->st;
            return 0;
        }
    }
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v3(b->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK)
        return sq_fail(b, rc, err, "prepare");
    if (!free_slot) {
        /* Evict an idle slot: the cache only bounds memory, correctness never needs it. */
        for (int i = 0; i < STMT_CACHE && !free_slot; i++)
            if (!b->cache[i].busy)
                free_slot = &b->cache[i];
        if (!free_slot) {
            sqlite3_finalize(st);
            return rs_err_set(err, -ENOMEM, "too many open cursors");
        }
        sqlite3_finalize(free_slot->st);
        free(free_slot->sql);
        free_slot->sql = NULL;
    }
    free_slot->sql = strdup(sql);
    if (!free_slot->sql) {
        sqlite3_finalize(st);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    free_slot->st = st;
    free_slot->key = key;
    free_slot->busy = 1;
    *out = st;
    return 0;
}

static void put_stmt(rs_backend *b, sqlite3_stmt *st)
{
    if (!st)
        return;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    for (int i = 0; i < STMT_CACHE; i++)
        if (b->cache[i].st == st) {
            b->cache[i].busy = 0;
            return;
        }
}

static int exec_sql(rs_backend *b, const char *sql, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, sql, &st, err);
    if (rc)
        return rc;
    int src = sqlite3_step(st);
    put_stmt(b, st);
    if (src != SQLITE_DONE && src != SQLITE_ROW)
        return sq_fail(b, src, err, sql);
    return 0;
}

static int tx_begin(rs_backend *b, rs_err *err)
{
    if (b->read_only)
        return rs_err_set(err, -EROFS, "the store is read-only");
    return exec_sql(b, "BEGIN IMMEDIATE", err);
}

static int tx_commit(rs_backend *b, rs_err *err)
{
    int rc = exec_sql(b, "COMMIT", err);
    if (rc)
        exec_sql(b, "ROLLBACK", NULL);
    return rc;
}

static void tx_rollback(rs_backend *b)
{
    if (!sqlite3_get_autocommit(b->db))
        exec_sql(b, "ROLLBACK", NULL);
}

/* SQLite keeps its own copy: a cursor's statement steps long after the call that bound it,
 * when the caller's strings (a LIKE pattern, a request's ids) may be gone. */
static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* One integer (or none: *out untouched, returns 0 with *found 0) from a statement. */
static int query_int(rs_backend *b, const char *sql, const char *a1, const char *a2,
                     int64_t *out, int *found, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, sql, &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, a1);
    if (a2)
        bind_text(st, 2, a2);
    int src = sqlite3_step(st);
    int have = 0;
    if (src == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *out = sqlite3_column_int64(st, 0);
        have = 1;
    }
    put_stmt(b, st);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return sq_fail(b, src, err, "query");
    if (found)
        *found = have;
    return 0;
}

/* ---- opening ---------------------------------------------------------------------------- */

static int index_foreign_rows(rs_backend *b, rs_err *err);
static int reindex_dirty(rs_backend *b, rs_err *err);

static int table_exists(rs_backend *b, const char *name, int *exists, rs_err *err)
{
    int64_t n = 0;
    int rc = query_int(b, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?",
                       name, NULL, &n, NULL, err);
    *exists = n > 0;
    return rc;
}

static void clear_stale_holds(rs_backend *b)
{
    sqlite3_stmt *st;
    if (get_stmt(b, "SELECT DISTINCT pid FROM runfs_hold", &st, NULL))
        return;
    long dead[32];
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 32) {
        long pid = (long)sqlite3_column_int64(st, 0);
        if (pid > 0 && kill((pid_t)pid, 0) == -1 && errno == ESRCH)
            dead[n++] = pid;
    }
    put_stmt(b, st);
    for (int i = 0; i < n; i++) {
        if (get_stmt(b, "DELETE FROM runfs_hold WHERE pid = ?", &st, NULL))
            return;
        sqlite3_bind_int64(st, 1, dead[i]);
        sqlite3_step(st);
        put_stmt(b, st);
    }
}

static int sq_open(rs_backend **out, const char *uri, const rs_options *opt, rs_err *err)
{
    rs_backend *b = calloc(1, sizeof *b);
    if (!b)
        return rs_err_set(err, -ENOMEM, "out of memory");
    b->sql = (rs_buf)RS_BUF_INIT;
    b->pid = (long)getpid();
    b->read_only = opt->read_only;
    b->path = strdup(uri);
    int rc = -ENOMEM;
    if (!b->path)
        goto fail;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int src = sqlite3_open_v2(uri, &b->db, flags, NULL);
    if (src != SQLITE_OK) {
        rc = rs_err_set(err, sq_fail(b, src, NULL, "open"), "cannot open store %s: %s", uri,
                        b->db ? sqlite3_errmsg(b->db) : sqlite3_errstr(src));
        goto fail;
    }
    sqlite3_extended_result_codes(b->db, 1);
    sqlite3_busy_timeout(b->db, 30000);
    char pragmas[160];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA foreign_keys=ON; "
             "PRAGMA wal_autocheckpoint=8192;",
             opt->sync_full ? "FULL" : "NORMAL");
    char *msg = NULL;
    src = sqlite3_exec(b->db, pragmas, NULL, NULL, &msg);
    if (src == SQLITE_OK)
        src = sqlite3_exec(b->db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
    if (src != SQLITE_OK) {
        rc = rs_err_set(err, -EIO, "cannot open store %s: %s", uri, msg ? msg : sqlite3_errstr(src));
        sqlite3_free(msg);
        if (sqlite3_errcode(b->db) == SQLITE_NOTADB)
            rc = rs_err_set(err, -EINVAL, "%s is not a SQLite database", uri);
        goto fail;
    }
    int has_hwm;
    if ((rc = table_exists(b, "run_event_thread_seq", &has_hwm, err)))
        goto fail_tx;
    src = sqlite3_exec(b->db, rs_schema_sql, NULL, NULL, &msg);
    if (src == SQLITE_OK && !has_hwm)
        src = sqlite3_exec(b->db, rs_schema_hwm_sql, NULL, NULL, &msg);
    if (src == SQLITE_OK)
        /* A foreign database may already hold duplicates; then the backstop is the lock. */
        sqlite3_exec(b->db, rs_schema_terminal_sql, NULL, NULL, NULL);
    if (src != SQLITE_OK) {
        rc = rs_err_set(err, sq_fail(b, src, NULL, "schema"), "cannot set up store %s: %s", uri,
                        msg ? msg : sqlite3_errstr(src));
        sqlite3_free(msg);
        goto fail_tx;
    }
    if ((rc = index_foreign_rows(b, err)) || (rc = reindex_dirty(b, err)))
        goto fail_tx;
    clear_stale_holds(b);
    if ((rc = exec_sql(b, "COMMIT", err)))
        goto fail_tx;
    *out = b;
    return 0;
fail_tx:
    sqlite3_exec(b->db, "ROLLBACK", NULL, NULL, NULL);
fail:
    if (b->db)
        sqlite3_close_v2(b->db);
    free(b->path);
    free(b);
    return rc;
}

static void sq_close(rs_backend *b)
{
    if (!b)
        return;
    for (int i = 0; i < STMT_CACHE; i++) {
        if (b->cache[i].st)
            sqlite3_finalize(b->cache[i].st);
        free(b->cache[i].sql);
    }
    if (!b->read_only) {
        char sql[64];
        snprintf(sql, sizeof sql, "DELETE FROM runfs_hold WHERE pid = %ld", b->pid);
        sqlite3_exec(b->db, sql, NULL, NULL, NULL);
        sqlite3_wal_checkpoint_v2(b->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    }
    sqlite3_close_v2(b->db);
    rs_buf_release(&b->sql);
    free(b->path);
    free(b);
}

static int sq_data_version(rs_backend *b, int64_t *version)
{
    return query_int(b, "PRAGMA data_version", NULL, NULL, version, NULL, NULL);
}

/* ---- thread and run bookkeeping --------------------------------------------------------- */

static const char *owner_key(const char *user)
{
    return user ? user : "";
}

/* Load (creating when create) the totals of a thread (run_id NULL) or run. *found = 0 when
 * absent and not created. */
static int log_load(rs_backend *b, const char *thread_id, const char *run_id, int64_t thread_key,
                    int create, log_state *ls, int *found, rs_err *err)
{
    sqlite3_stmt *st;
    const char *sel = run_id
        ? "SELECT run_key, size, count, messages, last_seq, mixed FROM runfs_run "
          "WHERE thread_key = ? AND run_id = ?"
        : "SELECT thread_key, size, count, messages, last_seq, mixed FROM runfs_thread "
          "WHERE thread_id = ?";
    int rc = get_stmt(b, sel, &st, err);
    if (rc)
        return rc;
    if (run_id) {
        sqlite3_bind_int64(st, 1, thread_key);
        bind_text(st, 2, run_id);
    } else {
        bind_text(st, 1, thread_id);
    }
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        ls->key = sqlite3_column_int64(st, 0);
        ls->size = sqlite3_column_int64(st, 1);
        ls->count = sqlite3_column_int64(st, 2);
        ls->messages = sqlite3_column_int64(st, 3);
        ls->last_seq = sqlite3_column_int64(st, 4);
        ls->mixed = sqlite3_column_int(st, 5);
    }
    put_stmt(b, st);
    if (src == SQLITE_ROW) {
        *found = 1;
        return 0;
    }
    if (src != SQLITE_DONE)
        return sq_fail(b, src, err, "load");
    *found = 0;
    if (!create)
        return 0;
    const char *ins = run_id
        ? "INSERT INTO runfs_run (thread_key, run_id, ctime_ns, mtime_ns) VALUES (?, ?, ?, ?)"
        : "INSERT INTO runfs_thread (thread_id, ctime_ns, mtime_ns) VALUES (?, ?, ?)";
    if ((rc = get_stmt(b, ins, &st, err)))
        return rc;
    int64_t now = now_ns();
    if (run_id) {
        sqlite3_bind_int64(st, 1, thread_key);
        bind_text(st, 2, run_id);
        sqlite3_bind_int64(st, 3, now);
        sqlite3_bind_int64(st, 4, now);
    } else {
        bind_text(st, 1, thread_id);
        sqlite3_bind_int64(st, 2, now);
        sqlite3_bind_int64(st, 3, now);
    }
    src = sqlite3_step(st);
    put_stmt(b, st);
    if (src != SQLITE_DONE)
        return sq_fail(b, src, err, "create");
    memset(ls, 0, sizeof *ls);
    ls->key = sqlite3_last_insert_rowid(b->db);
    *found = 1;
    return 0;
}

static int log_store(rs_backend *b, int is_run, const log_state *ls, rs_err *err)
{
    sqlite3_stmt *st;
    const char *sql = is_run
        ? "UPDATE runfs_run SET size = ?, count = ?, messages = ?, last_seq = ?, mixed = ?, "
          "mtime_ns = ? WHERE run_key = ?"
        : "UPDATE runfs_thread SET size = ?, count = ?, messages = ?, last_seq = ?, mixed = ?, "
          "mtime_ns = ? WHERE thread_key = ?";
    int rc = get_stmt(b, sql, &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, ls->size);
    sqlite3_bind_int64(st, 2, ls->count);
    sqlite3_bind_int64(st, 3, ls->messages);
    sqlite3_bind_int64(st, 4, ls->last_seq);
    sqlite3_bind_int(st, 5, ls->mixed);
    sqlite3_bind_int64(st, 6, now_ns());
    sqlite3_bind_int64(st, 7, ls->key);
    int src = sqlite3_step(st);
    put_stmt(b, st);
    return src == SQLITE_DONE ? 0 : sq_fail(b, src, err, "update totals");
}

/* Record that user has rows (or made the directory) in the thread/run; sets *mixed when
 * this makes more than one owner. */
static int owner_add(rs_backend *b, int64_t thread_key, int64_t run_key, const char *user,
                     int *mixed, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "INSERT OR IGNORE INTO runfs_owner (thread_key, run_key, user) "
                         "VALUES (?, ?, ?)", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, thread_key);
    sqlite3_bind_int64(st, 2, run_key);
    bind_text(st, 3, owner_key(user));
    int src = sqlite3_step(st);
    put_stmt(b, st);
    if (src != SQLITE_DONE)
        return sq_fail(b, src, err, "owner");
    if (sqlite3_changes(b->db) == 0 || *mixed)
        return 0;
    int64_t n = 0;
    if ((rc = get_stmt(b, "SELECT count(*) FROM runfs_owner WHERE thread_key = ? AND run_key = ?",
                       &st, err)))
        return rc;
    sqlite3_bind_int64(st, 1, thread_key);
    sqlite3_bind_int64(st, 2, run_key);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    put_stmt(b, st);
    *mixed = n > 1;
    return 0;
}

static int next_seq(rs_backend *b, const char *thread_id, int64_t *next, rs_err *err)
{
    int64_t max = 0, floor = 0;
    int rc = query_int(b, "SELECT MAX(seq) FROM run_events WHERE thread_id = ?", thread_id, NULL,
                       &max, NULL, err);
    if (!rc)
        rc = query_int(b, "SELECT seq FROM run_event_thread_seq WHERE thread_id = ?", thread_id,
                       NULL, &floor, NULL, err);
    *next = (max > floor ? max : floor) + 1;
    return rc;
}

static int raise_floor(rs_backend *b, const char *thread_id, int64_t seq, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "INSERT INTO run_event_thread_seq (thread_id, seq) VALUES (?, ?) "
                         "ON CONFLICT (thread_id) DO UPDATE SET seq = max(seq, excluded.seq)",
                      &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, thread_id);
    sqlite3_bind_int64(st, 2, seq);
    int src = sqlite3_step(st);
    put_stmt(b, st);
    return src == SQLITE_DONE ? 0 : sq_fail(b, src, err, "high-water mark");
}

static int line_insert(rs_backend *b, int64_t id, const log_state *run, const log_state *thr,
                       int64_t len, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "INSERT INTO runfs_line (id, run_key, run_off, thread_key, thread_off, len) "
                         "VALUES (?, ?, ?, ?, ?, ?)", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, run->key);
    sqlite3_bind_int64(st, 3, run->size);
    sqlite3_bind_int64(st, 4, thr->key);
    sqlite3_bind_int64(st, 5, thr->size);
    sqlite3_bind_int64(st, 6, len);
    int src = sqlite3_step(st);
    put_stmt(b, st);
    return src == SQLITE_DONE ? 0 : sq_fail(b, src, err, "index line");
}

/* ---- rows ------------------------------------------------------------------------------- */

#define ROW_COLUMNS \
    "e.thread_id, e.run_id, e.seq, e.event_type, e.category, e.content, e.event_metadata, " \
    "e.created_at, e.user_id"

static void row_from_stmt(rs_row *row, sqlite3_stmt *st, int col)
{
    row->thread_id = (const char *)sqlite3_column_text(st, col + 0);
    row->run_id = (const char *)sqlite3_column_text(st, col + 1);
    row->seq = sqlite3_column_int64(st, col + 2);
    row->event_type = (const char *)sqlite3_column_text(st, col + 3);
    row->category = (const char *)sqlite3_column_text(st, col + 4);
    row->content = (const char *)sqlite3_column_text(st, col + 5);
    row->content_len = (size_t)sqlite3_column_bytes(st, col + 5);
    row->metadata = (const char *)sqlite3_column_text(st, col + 6);
    row->metadata_len = (size_t)sqlite3_column_bytes(st, col + 6);
    row->created_at = (const char *)sqlite3_column_text(st, col + 7);
    row->user_id = (const char *)sqlite3_column_text(st, col + 8);
    if (!row->thread_id) row->thread_id = "";
    if (!row->run_id) row->run_id = "";
    if (!row->event_type) row->event_type = "";
    if (!row->category) row->category = "";
    if (!row->content) row->content = "";
    if (!row->metadata) row->metadata = "{}";
    if (!row->created_at) row->created_at = "";
}

/* Give rows DeerFlow (or any foreign writer) stored their line offsets: the rows with an id
 * above the last indexed one, in id order. Nothing to do is two index probes. */
static int index_foreign_rows(rs_backend *b, rs_err *err)
{
    int64_t max_event = 0, max_line = 0;
    int rc = query_int(b, "SELECT MAX(id) FROM run_events", NULL, NULL, &max_event, NULL, err);
    if (!rc)
        rc = query_int(b, "SELECT MAX(id) FROM runfs_line", NULL, NULL, &max_line, NULL, err);
    if (rc || max_event <= max_line)
        return rc;
    sqlite3_stmt *st;
    if ((rc = get_stmt(b, "SELECT e.id, " ROW_COLUMNS " FROM run_events e WHERE e.id > ? "
                          "ORDER BY e.thread_id, e.seq", &st, err)))
        return rc;
    sqlite3_bind_int64(st, 1, max_line);
    rs_buf line = RS_BUF_INIT, tid = RS_BUF_INIT, rid = RS_BUF_INIT;
    log_state thr = {0}, run = {0};
    int src, found;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        rs_row row;
        int64_t id = sqlite3_column_int64(st, 0);
        row_from_stmt(&row, st, 1);
        int new_thread = strcmp(tid.buf, row.thread_id) != 0;
        if (new_thread || strcmp(rid.buf, row.run_id) != 0) {
            if (tid.len && ((rc = log_store(b, 1, &run, err)) || (new_thread && (rc = log_store(b, 0, &thr, err)))))
                break;
            if (new_thread) {
                rs_buf_reset(&tid);
                if ((rc = rs_buf_addstr(&tid, row.thread_id)) ||
                    (rc = log_load(b, row.thread_id, NULL, 0, 1, &thr, &found, err)))
                    break;
            }
            rs_buf_reset(&rid);
            if ((rc = rs_buf_addstr(&rid, row.run_id)) ||
                (rc = log_load(b, row.thread_id, row.run_id, thr.key, 1, &run, &found, err)))
                break;
        }
        rs_buf_reset(&line);
        if ((rc = rs_event_encode(&line, &row, err)) ||
            (rc = owner_add(b, thr.key, 0, row.user_id, &thr.mixed, err)) ||
            (rc = owner_add(b, thr.key, run.key, row.user_id, &run.mixed, err)) ||
            (rc = line_insert(b, id, &run, &thr, (int64_t)line.len, err)))
            break;
        int msg = strcmp(row.category, "message") == 0;
        run.size += (int64_t)line.len;
        thr.size += (int64_t)line.len;
        run.count++;
        thr.count++;
        run.messages += msg;
        thr.messages += msg;
        if (row.seq > run.last_seq) run.last_seq = row.seq;
        if (row.seq > thr.last_seq) thr.last_seq = row.seq;
    }
    put_stmt(b, st);
    if (!rc && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "index rows");
    if (!rc && tid.len && !(rc = log_store(b, 1, &run, err)))
        rc = log_store(b, 0, &thr, err);
    rs_buf_release(&line);
    rs_buf_release(&tid);
    rs_buf_release(&rid);
    return rc;
}

/* ---- writing ---------------------------------------------------------------------------- */

static int existing_load(rs_backend *b, const rs_target *t, const char *event_type,
                         rs_existing *ex, int *found, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "SELECT " ROW_COLUMNS " FROM run_events e WHERE e.thread_id = ? "
                         "AND e.run_id = ? AND e.event_type = ? ORDER BY e.seq ASC LIMIT 1",
                      &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    bind_text(st, 3, event_type);
    int src = sqlite3_step(st);
    *found = src == SQLITE_ROW;
    if (src == SQLITE_ROW && ex) {
        rs_row row;
        row_from_stmt(&row, st, 0);
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
    put_stmt(b, st);
    if (!rc && src != SQLITE_ROW && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "singleton lookup");
    return rc;
}

static int hold_check(rs_backend *b, const rs_target *t, const char *event_type, int *other,
                      rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "SELECT pid FROM runfs_hold WHERE thread_id = ? AND run_id = ? "
                         "AND event_type = ?", &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    bind_text(st, 3, event_type);
    int src = sqlite3_step(st);
    *other = src == SQLITE_ROW && sqlite3_column_int64(st, 0) != b->pid;
    put_stmt(b, st);
    return src == SQLITE_ROW || src == SQLITE_DONE ? 0 : sq_fail(b, src, err, "reservation");
}

static int once_mark(rs_backend *b, const rs_target *t, const char *event_type, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "INSERT OR IGNORE INTO runfs_once (thread_id, run_id, event_type) "
                         "VALUES (?, ?, ?)", &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    bind_text(st, 3, event_type);
    int src = sqlite3_step(st);
    put_stmt(b, st);
    if (src != SQLITE_DONE)
        return sq_fail(b, src, err, "singleton");
    if ((rc = get_stmt(b, "DELETE FROM runfs_hold WHERE thread_id = ? AND run_id = ? "
                          "AND event_type = ? AND pid = ?", &st, err)))
        return rc;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    bind_text(st, 3, event_type);
    sqlite3_bind_int64(st, 4, b->pid);
    src = sqlite3_step(st);
    put_stmt(b, st);
    return src == SQLITE_DONE ? 0 : sq_fail(b, src, err, "reservation");
}

static int insert_event(rs_backend *b, const rs_target *t, const rs_event *ev, int64_t seq,
                        int64_t *id, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "INSERT INTO run_events (thread_id, run_id, user_id, event_type, "
                         "category, content, event_metadata, seq, created_at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    bind_text(st, 3, t->user);
    bind_text(st, 4, ev->event_type);
    bind_text(st, 5, ev->category);
    sqlite3_bind_text(st, 6, ev->content_db.buf, (int)ev->content_db.len, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, ev->metadata_db.buf, (int)ev->metadata_db.len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, seq);
    bind_text(st, 9, ev->created_db);
    int src = sqlite3_step(st);
    put_stmt(b, st);
    if (src != SQLITE_DONE) {
        if ((src & 0xff) == SQLITE_CONSTRAINT)
            return rs_err_set(err, -EEXIST, "%s already exists for run %s", ev->event_type,
                              t->run_id);
        return sq_fail(b, src, err, "insert");
    }
    *id = sqlite3_last_insert_rowid(b->db);
    return 0;
}

static int sq_put(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n,
                  int if_absent, int *created, rs_existing *existing, rs_buf *stored,
                  rs_placement *at, rs_err *err)
{
    if (created)
        *created = 0;
    if (n == 0)
        return 0;
    int rc = tx_begin(b, err);
    if (rc)
        return rc;
    size_t stored_len = stored ? stored->len : 0;
    log_state thr, run;
    int found;
    rs_buf line = RS_BUF_INIT;
    if ((rc = index_foreign_rows(b, err)) || (rc = reindex_dirty(b, err)))
        goto fail;
    if (if_absent) {
        int other = 0;
        if ((rc = existing_load(b, t, evs[0]->event_type, existing, &found, err)))
            goto fail;
        if (found) {
            tx_rollback(b);
            return 0;
        }
        if ((rc = hold_check(b, t, evs[0]->event_type, &other, err)))
            goto fail;
        if (other) {
            rc = rs_err_set(err, -EEXIST, "once/%s is being written by another process",
                            evs[0]->event_type);
            goto fail;
        }
    }
    if ((rc = log_load(b, t->thread_id, NULL, 0, 1, &thr, &found, err)) ||
        (rc = log_load(b, t->thread_id, t->run_id, thr.key, 1, &run, &found, err)) ||
        (rc = owner_add(b, thr.key, 0, t->user, &thr.mixed, err)) ||
        (rc = owner_add(b, thr.key, run.key, t->user, &run.mixed, err)))
        goto fail;
    int64_t seq;
    if ((rc = next_seq(b, t->thread_id, &seq, err)))
        goto fail;
    if (at) {
        at->run_off = run.size;
        at->thread_off = thr.size;
    }
    for (size_t i = 0; i < n; i++, seq++) {
        const rs_event *ev = evs[i];
        rs_row row = {
            .thread_id = t->thread_id, .run_id = t->run_id, .seq = seq,
            .event_type = ev->event_type, .category = ev->category,
            .content = ev->content_db.buf, .content_len = ev->content_db.len,
            .metadata = ev->metadata_db.buf, .metadata_len = ev->metadata_db.len,
            .created_at = ev->created_db, .user_id = t->user,
        };
        int64_t id = 0;
        rs_buf_reset(&line);
        if ((rc = rs_event_encode(&line, &row, err)) ||
            (rc = insert_event(b, t, ev, seq, &id, err)) ||
            (rc = line_insert(b, id, &run, &thr, (int64_t)line.len, err)))
            goto fail;
        if (stored && (rc = rs_buf_add(stored, line.buf, line.len)))
            goto fail;
        int msg = strcmp(ev->category, "message") == 0;
        run.size += (int64_t)line.len;
        thr.size += (int64_t)line.len;
        run.count++;
        thr.count++;
        run.messages += msg;
        thr.messages += msg;
        run.last_seq = thr.last_seq = seq;
    }
    if ((rc = log_store(b, 1, &run, err)) || (rc = log_store(b, 0, &thr, err)) ||
        (rc = raise_floor(b, t->thread_id, seq - 1, err)))
        goto fail;
    if (if_absent && (rc = once_mark(b, t, evs[0]->event_type, err)))
        goto fail;
    if ((rc = tx_commit(b, err)))
        goto fail_committed;
    rs_buf_release(&line);
    if (created)
        *created = 1;
    return 0;
fail:
    tx_rollback(b);
fail_committed:
    rs_buf_release(&line);
    if (stored) {
        stored->len = stored_len;
        stored->buf[stored_len] = '\0';
    }
    return rc;
}

static int sq_reserve(rs_backend *b, const rs_target *t, const char *event_type, rs_err *err)
{
    int rc = tx_begin(b, err);
    if (rc)
        return rc;
    int found;
    if ((rc = existing_load(b, t, event_type, NULL, &found, err)))
        goto fail;
    if (found) {
        rc = rs_err_set(err, -EEXIST, "once/%s already exists", event_type);
        goto fail;
    }
    sqlite3_stmt *st;
    if ((rc = get_stmt(b, "INSERT INTO runfs_hold (thread_id, run_id, event_type, pid) "
                          "VALUES (?, ?, ?, ?)", &st, err)))
        goto fail;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    bind_text(st, 3, event_type);
    sqlite3_bind_int64(st, 4, b->pid);
    int src = sqlite3_step(st);
    put_stmt(b, st);
    if (src != SQLITE_DONE) {
        rc = (src & 0xff) == SQLITE_CONSTRAINT
            ? rs_err_set(err, -EEXIST, "once/%s is being written by another writer", event_type)
            : sq_fail(b, src, err, "reserve");
        goto fail;
    }
    return tx_commit(b, err);
fail:
    tx_rollback(b);
    return rc;
}

static int sq_release(rs_backend *b, const rs_target *t, const char *event_type)
{
    sqlite3_stmt *st;
    if (b->read_only || get_stmt(b, "DELETE FROM runfs_hold WHERE thread_id = ? AND run_id = ? "
                                    "AND event_type = ? AND pid = ?", &st, NULL))
        return 0;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    bind_text(st, 3, event_type);
    sqlite3_bind_int64(st, 4, b->pid);
    sqlite3_step(st);
    put_stmt(b, st);
    return 0;
}

static int sq_create(rs_backend *b, const rs_target *t, rs_err *err)
{
    int rc = tx_begin(b, err);
    if (rc)
        return rc;
    log_state thr, run;
    int found;
    if ((rc = log_load(b, t->thread_id, NULL, 0, 1, &thr, &found, err)) ||
        (rc = owner_add(b, thr.key, 0, t->user, &thr.mixed, err)) ||
        (rc = log_store(b, 0, &thr, err)))
        goto fail;
    if (t->run_id &&
        ((rc = log_load(b, t->thread_id, t->run_id, thr.key, 1, &run, &found, err)) ||
         (rc = owner_add(b, thr.key, run.key, t->user, &run.mixed, err)) ||
         (rc = log_store(b, 1, &run, err))))
        goto fail;
    return tx_commit(b, err);
fail:
    tx_rollback(b);
    return rc;
}

/* Recompute every offset and total of a thread after a delete: lengths are kept per line,
 * so this reads only the small side rows, never renders. */
static int thread_reindex(rs_backend *b, const char *thread_id, int64_t thread_key, rs_err *err)
{
    sqlite3_stmt *st, *up;
    int rc = get_stmt(b, "SELECT l.id, l.run_key, l.len, e.seq, e.category FROM runfs_line l "
                         "JOIN run_events e ON e.id = l.id WHERE e.thread_id = ? "
                         "ORDER BY e.seq", &st, err);
    if (rc)
        return rc;
    if ((rc = get_stmt(b, "UPDATE runfs_line SET run_off = ?, thread_off = ? WHERE id = ?",
                       &up, err))) {
        put_stmt(b, st);
        return rc;
    }
    /* Runs of one thread are few; keep their running totals in a small array. */
    struct { log_state ls; } *runs = NULL;
    size_t nruns = 0;
    log_state thr = {.key = thread_key};
    bind_text(st, 1, thread_id);
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), run_key = sqlite3_column_int64(st, 1);
        int64_t len = sqlite3_column_int64(st, 2), seq = sqlite3_column_int64(st, 3);
        int msg = strcmp((const char *)sqlite3_column_text(st, 4), "message") == 0;
        size_t i;
        for (i = 0; i < nruns && runs[i].ls.key != run_key; i++)
            ;
        if (i == nruns) {
            void *p = realloc(runs, (nruns + 1) * sizeof *runs);
            if (!p) {
                rc = rs_err_set(err, -ENOMEM, "out of memory");
                break;
            }
            runs = p;
            memset(&runs[nruns], 0, sizeof runs[nruns]);
            runs[nruns++].ls.key = run_key;
        }
        log_state *r = &runs[i].ls;
        sqlite3_bind_int64(up, 1, r->size);
        sqlite3_bind_int64(up, 2, thr.size);
        sqlite3_bind_int64(up, 3, id);
        int usrc = sqlite3_step(up);
        sqlite3_reset(up);
        if (usrc != SQLITE_DONE) {
            rc = sq_fail(b, usrc, err, "reindex");
            break;
        }
        r->size += len;
        r->count++;
        r->messages += msg;
        r->last_seq = seq;
        thr.size += len;
        thr.count++;
        thr.messages += msg;
        thr.last_seq = seq;
    }
    put_stmt(b, st);
    put_stmt(b, up);
    if (!rc && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "reindex");
    for (size_t i = 0; !rc && i < nruns; i++)
        rc = log_store(b, 1, &runs[i].ls, err);
    free(runs);
    if (rc)
        return rc;
    /* Totals of runs left with no rows at all. */
    if ((rc = get_stmt(b, "UPDATE runfs_run SET size = 0, count = 0, messages = 0, last_seq = 0 "
                          "WHERE thread_key = ? AND NOT EXISTS (SELECT 1 FROM runfs_line l "
                          "WHERE l.run_key = runfs_run.run_key)", &up, err)))
        return rc;
    sqlite3_bind_int64(up, 1, thread_key);
    src = sqlite3_step(up);
    put_stmt(b, up);
    if (src != SQLITE_DONE)
        return sq_fail(b, src, err, "reindex");
    if ((rc = log_store(b, 0, &thr, err)))
        return rc;
    /* Owners may have left with their rows. */
    static const char remix[] =
        "UPDATE runfs_run SET mixed = (SELECT count(*) FROM runfs_owner o WHERE o.thread_key = "
        "?1 AND o.run_key = runfs_run.run_key) > 1 WHERE thread_key = ?1; "
        "UPDATE runfs_thread SET mixed = (SELECT count(*) FROM runfs_owner o WHERE "
        "o.thread_key = ?1 AND o.run_key = 0) > 1 WHERE thread_key = ?1";
    const char *tail = remix;
    while (!rc && tail && *tail) {
        sqlite3_stmt *mx;
        int src2 = sqlite3_prepare_v2(b->db, tail, -1, &mx, &tail);
        if (src2 != SQLITE_OK)
            return sq_fail(b, src2, err, "reindex");
        if (!mx)
            break;
        sqlite3_bind_int64(mx, 1, thread_key);
        src2 = sqlite3_step(mx);
        sqlite3_finalize(mx);
        if (src2 != SQLITE_DONE)
            rc = sq_fail(b, src2, err, "reindex");
    }
    return rc;
}

/* Threads whose rows another writer deleted (marked by the runfs_forget_deleted trigger). */
static int reindex_dirty(rs_backend *b, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "SELECT thread_key, thread_id FROM runfs_thread WHERE dirty LIMIT 1",
                      &st, err);
    while (!rc) {
        int src = sqlite3_step(st);
        if (src == SQLITE_DONE)
            break;
        if (src != SQLITE_ROW) {
            rc = sq_fail(b, src, err, "reindex");
            break;
        }
        int64_t key = sqlite3_column_int64(st, 0);
        char thread_id[RS_ID_MAX + 1];
        snprintf(thread_id, sizeof thread_id, "%s", (const char *)sqlite3_column_text(st, 1));
        sqlite3_reset(st);
        if ((rc = thread_reindex(b, thread_id, key, err)))
            break;
        sqlite3_stmt *up;
        if ((rc = get_stmt(b, "UPDATE runfs_thread SET dirty = 0 WHERE thread_key = ?", &up, err)))
            break;
        sqlite3_bind_int64(up, 1, key);
        src = sqlite3_step(up);
        put_stmt(b, up);
        if (src != SQLITE_DONE)
            rc = sq_fail(b, src, err, "reindex");
    }
    put_stmt(b, st);
    return rc;
}

static int run_exec(rs_backend *b, const char *sql, const rs_target *t, int64_t key, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, sql, &st, err);
    if (rc)
        return rc;
    /* Statements number their parameters ?1 thread, ?2 run, ?3 user, ?4 thread key; binding
     * one a statement does not use is a harmless SQLITE_RANGE. */
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    bind_text(st, 3, t->user);
    sqlite3_bind_int64(st, 4, key);
    int src = sqlite3_step(st);
    put_stmt(b, st);
    return src == SQLITE_DONE ? 0 : sq_fail(b, src, err, "delete");
}

/* delete_by_run (t->run_id set) or delete_by_thread. */
static int sq_delete(rs_backend *b, const rs_target *t, int64_t *count, rs_err *err)
{
    int rc = tx_begin(b, err);
    if (rc)
        return rc;
    log_state thr;
    int found;
    *count = 0;
    if ((rc = log_load(b, t->thread_id, NULL, 0, 0, &thr, &found, err)))
        goto fail;
    if (!found)
        return tx_commit(b, err);
    int64_t max = 0;
    if ((rc = query_int(b, "SELECT MAX(seq) FROM run_events WHERE thread_id = ?", t->thread_id,
                        NULL, &max, NULL, err)))
        goto fail;
    /* ?1 thread, ?2 run (NULL: every run), ?3 user (NULL: every owner). */
    static const char del_lines[] =
        "DELETE FROM runfs_line WHERE id IN (SELECT id FROM run_events WHERE thread_id = ?1 "
        "AND (?2 IS NULL OR run_id = ?2) AND (?3 IS NULL OR user_id = ?3))";
    static const char del_rows[] =
        "DELETE FROM run_events WHERE thread_id = ?1 AND (?2 IS NULL OR run_id = ?2) "
        "AND (?3 IS NULL OR user_id = ?3)";
    if ((rc = run_exec(b, del_lines, t, 0, err)))
        goto fail;
    if ((rc = run_exec(b, del_rows, t, 0, err)))
        goto fail;
    *count = sqlite3_changes(b->db);
    if (*count > 0 && (rc = raise_floor(b, t->thread_id, max, err)))
        goto fail;
    /* The owner leaves the run/thread it deleted; the directory goes when no owner is left. */
    static const char del_owner[] =
        "DELETE FROM runfs_owner WHERE thread_key = ?4 AND (?3 IS NULL OR user = coalesce(?3, '')) "
        "AND (?2 IS NULL OR run_key IN (SELECT run_key FROM runfs_run WHERE thread_key = ?4 "
        "AND run_id = ?2))";
    static const char del_runs[] =
        "DELETE FROM runfs_run WHERE thread_key = ?4 AND (?2 IS NULL OR run_id = ?2) "
        "AND NOT EXISTS (SELECT 1 FROM runfs_owner o WHERE o.thread_key = ?4 "
        "AND o.run_key = runfs_run.run_key)";
    rc = run_exec(b, del_owner, t, thr.key, err);
    if (!rc)
        rc = run_exec(b, del_runs, t, thr.key, err);
    if (rc)
        goto fail;
    if ((rc = thread_reindex(b, t->thread_id, thr.key, err)) ||
        (rc = run_exec(b, "UPDATE runfs_thread SET dirty = 0 WHERE thread_key = ?4", t, thr.key,
                       err)))
        goto fail;
    int64_t left = 0;
    if ((rc = query_int(b, "SELECT count(*) FROM run_events WHERE thread_id = ?", t->thread_id,
                        NULL, &left, NULL, err)))
        goto fail;
    if (!t->run_id && left == 0) {
        static const char drop_thread[] =
            "DELETE FROM run_event_thread_seq WHERE thread_id = ?1";
        if ((rc = run_exec(b, drop_thread, t, 0, err)))
            goto fail;
    }
    if (!t->run_id) {
        static const char drop_dir[] =
            "DELETE FROM runfs_thread WHERE thread_id = ?1 AND NOT EXISTS (SELECT 1 FROM "
            "runfs_owner o WHERE o.thread_key = runfs_thread.thread_key)";
        static const char drop_once[] =
            "DELETE FROM runfs_once WHERE thread_id = ?1";
        if ((rc = run_exec(b, drop_once, t, 0, err)) || (rc = run_exec(b, drop_dir, t, 0, err)))
            goto fail;
    } else {
        static const char drop_once[] =
            "DELETE FROM runfs_once WHERE thread_id = ?1 AND run_id = ?2 AND NOT EXISTS "
            "(SELECT 1 FROM run_events e WHERE e.thread_id = ?1 AND e.run_id = ?2 "
            "AND e.event_type = runfs_once.event_type)";
        if ((rc = run_exec(b, drop_once, t, 0, err)))
            goto fail;
    }
    return tx_commit(b, err);
fail:
    tx_rollback(b);
    return rc;
}

/* ---- reading ---------------------------------------------------------------------------- */

static int cursor_next(rs_cursor *base, const rs_record **out)
{
    sq_cursor *c = (sq_cursor *)base;
    int src = sqlite3_step(c->st);
    if (src == SQLITE_DONE)
        return 0;
    if (src != SQLITE_ROW)
        return sq_fail(c->b, src, NULL, "read");
    rs_row *row = &base->row;
    row_from_stmt(row, c->st, 0);
    rs_buf_reset(&base->line);
    int rc = rs_event_encode(&base->line, row, NULL);
    if (rc)
        return rc;
    rs_record *r = &base->rec;
    r->seq = row->seq;
    r->thread_id = row->thread_id;
    r->run_id = row->run_id;
    r->event_type = row->event_type;
    r->category = row->category;
    r->user_id = row->user_id;
    r->line = base->line.buf;
    r->line_len = base->line.len;
    r->run_off = sqlite3_column_int64(c->st, 9);
    r->thread_off = sqlite3_column_int64(c->st, 10);
    *out = r;
    return 1;
}

static void cursor_free(rs_cursor *base)
{
    sq_cursor *c = (sq_cursor *)base;
    put_stmt(c->b, c->st);
    rs_buf_release(&base->line);
    free(c);
}

static int cursor_make(rs_backend *b, sqlite3_stmt *st, rs_cursor **out, rs_err *err)
{
    sq_cursor *c = calloc(1, sizeof *c);
    if (!c) {
        put_stmt(b, st);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    c->base.next = cursor_next;
    c->base.free = cursor_free;
    c->base.line = (rs_buf)RS_BUF_INIT;
    c->b = b;
    c->st = st;
    *out = &c->base;
    return 0;
}

static int sq_query(rs_backend *b, const rs_query *q, rs_cursor **out, rs_err *err)
{
    rs_buf *sql = &b->sql;
    rs_buf_reset(sql);
    int newest = q->newest && q->limit > 0 && q->after_seq <= 0;
    int rc = 0;
    if (newest)
        rc |= rs_buf_addstr(sql, "SELECT * FROM (");
    rc |= rs_buf_addstr(sql, "SELECT " ROW_COLUMNS ", l.run_off, l.thread_off FROM run_events e "
                             "LEFT JOIN runfs_line l ON l.id = e.id WHERE e.thread_id = ?1");
    if (q->run_id)
        rc |= rs_buf_addstr(sql, " AND e.run_id = ?2");
    if (q->user)
        rc |= rs_buf_addstr(sql, " AND e.user_id = ?3");
    if (q->messages_only)
        rc |= rs_buf_addstr(sql, " AND e.category = 'message'");
    if (q->task_id)
        rc |= rs_buf_addstr(sql, " AND json_extract(e.event_metadata, '$.\"task_id\"') = ?4");
    if (q->after_seq > 0)
        rc |= rs_buf_addstr(sql, " AND e.seq > ?5");
    if (q->before_seq > 0)
        rc |= rs_buf_addstr(sql, " AND e.seq < ?6");
    if (q->event_types) {
        rc |= rs_buf_addstr(sql, " AND e.event_type IN (");
        for (size_t i = 0; i < q->n_event_types; i++)
            rc |= rs_buf_addf(sql, "%s?%zu", i ? ", " : "", 10 + i);
        rc |= rs_buf_addstr(sql, q->n_event_types ? ")" : "NULL)");
    }
    rc |= rs_buf_addstr(sql, newest ? " ORDER BY e.seq DESC" : " ORDER BY e.seq ASC");
    if (q->limit > 0)
        rc |= rs_buf_addstr(sql, " LIMIT ?7");
    if (newest)
        rc |= rs_buf_addstr(sql, ") ORDER BY seq ASC");
    if (rc)
        return rs_err_set(err, -ENOMEM, "out of memory");
    sqlite3_stmt *st;
    if ((rc = get_stmt(b, sql->buf, &st, err)))
        return rc;
    bind_text(st, 1, q->thread_id);
    if (q->run_id)
        bind_text(st, 2, q->run_id);
    if (q->user)
        bind_text(st, 3, q->user);
    if (q->task_id)
        bind_text(st, 4, q->task_id);
    if (q->after_seq > 0)
        sqlite3_bind_int64(st, 5, q->after_seq);
    if (q->before_seq > 0)
        sqlite3_bind_int64(st, 6, q->before_seq);
    if (q->limit > 0)
        sqlite3_bind_int64(st, 7, q->limit);
    for (size_t i = 0; q->event_types && i < q->n_event_types; i++)
        bind_text(st, (int)(10 + i), q->event_types[i]);
    return cursor_make(b, st, out, err);
}

/* Does user (NULL: anyone) have the thread (run_key 0) or run? */
static int owner_has(rs_backend *b, int64_t thread_key, int64_t run_key, const char *user,
                     int *has, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "SELECT 1 FROM runfs_owner WHERE thread_key = ? AND run_key = ? "
                         "AND user = ?", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, thread_key);
    sqlite3_bind_int64(st, 2, run_key);
    bind_text(st, 3, owner_key(user));
    int src = sqlite3_step(st);
    *has = src == SQLITE_ROW;
    put_stmt(b, st);
    return src == SQLITE_ROW || src == SQLITE_DONE ? 0 : sq_fail(b, src, err, "owner");
}

static int sq_log_info(rs_backend *b, const char *thread_id, const char *run_id,
                       const char *user, rs_log_info *out, rs_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    const char *sql = run_id
        ? "SELECT r.run_key, r.size, r.count, r.messages, r.last_seq, r.mixed, r.ctime_ns, "
          "r.mtime_ns, t.thread_key FROM runfs_thread t JOIN runfs_run r ON r.thread_key = "
          "t.thread_key WHERE t.thread_id = ? AND r.run_id = ?"
        : "SELECT t.thread_key, t.size, t.count, t.messages, t.last_seq, t.mixed, t.ctime_ns, "
          "t.mtime_ns, t.thread_key FROM runfs_thread t WHERE t.thread_id = ?";
    int rc = get_stmt(b, sql, &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, thread_id);
    if (run_id)
        bind_text(st, 2, run_id);
    int src = sqlite3_step(st);
    int64_t key = 0, thread_key = 0;
    int mixed = 0;
    if (src == SQLITE_ROW) {
        key = sqlite3_column_int64(st, 0);
        out->size = sqlite3_column_int64(st, 1);
        out->count = sqlite3_column_int64(st, 2);
        out->message_count = sqlite3_column_int64(st, 3);
        out->last_seq = sqlite3_column_int64(st, 4);
        mixed = sqlite3_column_int(st, 5);
        out->ctime_ns = sqlite3_column_int64(st, 6);
        out->mtime_ns = sqlite3_column_int64(st, 7);
        thread_key = sqlite3_column_int64(st, 8);
        out->exists = 1;
    }
    put_stmt(b, st);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return sq_fail(b, src, err, "stat");
    if (!out->exists)
        return 0;
    out->exact = 1;
    if (user) {
        int has;
        if ((rc = owner_has(b, thread_key, run_id ? key : 0, user, &has, err)))
            return rc;
        if (!has) {
            memset(out, 0, sizeof *out);
            return 0;
        }
        if (mixed) {
            /* Several owners share it: this owner's view has its own totals. */
            out->exact = 0;
            static const char count_sql[] =
                "SELECT count(*), coalesce(sum(category = 'message'), 0), coalesce(max(seq), 0) "
                "FROM run_events WHERE thread_id = ?1 AND (?2 IS NULL OR run_id = ?2) "
                "AND user_id = ?3";
            if ((rc = get_stmt(b, count_sql, &st, err)))
                return rc;
            bind_text(st, 1, thread_id);
            bind_text(st, 2, run_id);
            bind_text(st, 3, user);
            if ((src = sqlite3_step(st)) == SQLITE_ROW) {
                out->count = sqlite3_column_int64(st, 0);
                out->message_count = sqlite3_column_int64(st, 1);
                out->last_seq = sqlite3_column_int64(st, 2);
            }
            put_stmt(b, st);
            out->size = 0;
            if (src != SQLITE_ROW)
                return sq_fail(b, src, err, "stat");
        }
    }
    if (!run_id) {
        int64_t floor = 0;
        if ((rc = query_int(b, "SELECT seq FROM run_event_thread_seq WHERE thread_id = ?",
                            thread_id, NULL, &floor, NULL, err)))
            return rc;
        out->hwm = floor > out->last_seq ? floor : out->last_seq;
        if (!user || out->exact) {
            int64_t max = 0;
            if ((rc = query_int(b, "SELECT MAX(seq) FROM run_events WHERE thread_id = ?",
                                thread_id, NULL, &max, NULL, err)))
                return rc;
            if (max > out->hwm)
                out->hwm = max;
        }
    }
    return 0;
}

/* The line holding off is the last one starting at or before it; an offset at or past the
 * end is held by none, so the cursor is empty there. */
static int sq_log_seek(rs_backend *b, const char *thread_id, const char *run_id, int64_t off,
                       rs_cursor **out, rs_err *err)
{
    /* Two steps, so the planner sees constants: the start of the line holding off (one
     * index probe), then a range scan from there. */
    sqlite3_stmt *st;
    const char *start_sql = run_id
        ? "SELECT r.run_key, (SELECT max(run_off) FROM runfs_line WHERE run_key = r.run_key "
          "AND run_off <= ?3) FROM runfs_run r JOIN runfs_thread t ON t.thread_key = "
          "r.thread_key WHERE t.thread_id = ?1 AND r.run_id = ?2"
        : "SELECT t.thread_key, (SELECT max(thread_off) FROM runfs_line WHERE thread_key = "
          "t.thread_key AND thread_off <= ?3) FROM runfs_thread t WHERE t.thread_id = ?1 "
          "AND ?2 IS NULL";
    int rc = get_stmt(b, start_sql, &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, thread_id);
    bind_text(st, 2, run_id);
    sqlite3_bind_int64(st, 3, off);
    int src = sqlite3_step(st);
    int64_t key = -1, from = 0;
    if (src == SQLITE_ROW) {
        key = sqlite3_column_int64(st, 0);
        from = sqlite3_column_int64(st, 1);
    }
    put_stmt(b, st);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return sq_fail(b, src, err, "seek");
    const char *sql = run_id
        ? "SELECT " ROW_COLUMNS ", l.run_off, l.thread_off FROM runfs_line l "
          "JOIN run_events e ON e.id = l.id WHERE l.run_key = ?1 AND l.run_off >= ?2 "
          "AND l.run_off + l.len > ?3 ORDER BY l.run_off"
        : "SELECT " ROW_COLUMNS ", l.run_off, l.thread_off FROM runfs_line l "
          "JOIN run_events e ON e.id = l.id WHERE l.thread_key = ?1 AND l.thread_off >= ?2 "
          "AND l.thread_off + l.len > ?3 ORDER BY l.thread_off";
    if ((rc = get_stmt(b, sql, &st, err)))
        return rc;
    sqlite3_bind_int64(st, 1, key);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, off);
    return cursor_make(b, st, out, err);
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
        if (s) {
            *name = s;
            return 1;
        }
    }
}

static void names_free(rs_names *base)
{
    sq_name_cursor *n = (sq_name_cursor *)base;
    put_stmt(n->b, n->st);
    free(n);
}

static int sq_names(rs_backend *b, rs_names_kind kind, const char *thread_id, const char *run_id,
                    const char *user, const char *const *singletons, size_t n_singletons,
                    rs_names **out, rs_err *err)
{
    rs_buf *sql = &b->sql;
    rs_buf_reset(sql);
    int rc = 0;
    switch (kind) {
    case RS_NAMES_THREADS:
        rc = rs_buf_addstr(sql, user
            ? "SELECT t.thread_id FROM runfs_thread t WHERE EXISTS (SELECT 1 FROM runfs_owner o "
              "WHERE o.thread_key = t.thread_key AND o.run_key = 0 AND o.user = ?3) "
              "ORDER BY t.thread_key"
            : "SELECT thread_id FROM runfs_thread ORDER BY thread_key");
        break;
    case RS_NAMES_RUNS:
        rc = rs_buf_addstr(sql,
            "SELECT r.run_id FROM runfs_run r JOIN runfs_thread t ON t.thread_key = r.thread_key "
            "WHERE t.thread_id = ?1 AND (?3 IS NULL OR EXISTS (SELECT 1 FROM runfs_owner o "
            "WHERE o.thread_key = r.thread_key AND o.run_key = r.run_key AND o.user = ?3)) "
            "ORDER BY r.run_key");
        break;
    case RS_NAMES_TYPES:
        rc = rs_buf_addstr(sql,
            "SELECT DISTINCT event_type FROM run_events WHERE thread_id = ?1 AND run_id = ?2 "
            "AND (?3 IS NULL OR user_id = ?3) ORDER BY event_type");
        break;
    case RS_NAMES_TASKS:
        rc = rs_buf_addstr(sql,
            "SELECT DISTINCT json_extract(event_metadata, '$.\"task_id\"') AS task FROM run_events "
            "WHERE thread_id = ?1 AND run_id = ?2 AND (?3 IS NULL OR user_id = ?3) "
            "AND json_type(event_metadata, '$.\"task_id\"') = 'text' ORDER BY task");
        break;
    case RS_NAMES_SINGLETONS:
        rc = rs_buf_addstr(sql,
            "SELECT DISTINCT event_type FROM run_events WHERE thread_id = ?1 AND run_id = ?2 "
            "AND (?3 IS NULL OR user_id = ?3) AND (event_type IN (SELECT event_type FROM "
            "runfs_once WHERE thread_id = ?1 AND run_id = ?2)");
        for (size_t i = 0; !rc && i < n_singletons; i++)
            rc = rs_buf_addf(sql, " OR event_type = ?%zu", 10 + i);
        if (!rc)
            rc = rs_buf_addstr(sql, ") ORDER BY event_type");
        break;
    }
    if (rc)
        return rs_err_set(err, -ENOMEM, "out of memory");
    sqlite3_stmt *st;
    if ((rc = get_stmt(b, sql->buf, &st, err)))
        return rc;
    int np = sqlite3_bind_parameter_count(st);
    if (np >= 1 && sqlite3_bind_parameter_index(st, "?1"))
        bind_text(st, sqlite3_bind_parameter_index(st, "?1"), thread_id);
    if (sqlite3_bind_parameter_index(st, "?2"))
        bind_text(st, sqlite3_bind_parameter_index(st, "?2"), run_id);
    if (sqlite3_bind_parameter_index(st, "?3"))
        bind_text(st, sqlite3_bind_parameter_index(st, "?3"),
                  kind == RS_NAMES_THREADS || kind == RS_NAMES_RUNS ? owner_key(user) : user);
    if (kind == RS_NAMES_RUNS && !user)
        sqlite3_bind_null(st, sqlite3_bind_parameter_index(st, "?3"));
    for (size_t i = 0; kind == RS_NAMES_SINGLETONS && i < n_singletons; i++)
        bind_text(st, (int)(10 + i), singletons[i]);
    sq_name_cursor *n = calloc(1, sizeof *n);
    if (!n) {
        put_stmt(b, st);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    n->base.next = names_next;
    n->base.free = names_free;
    n->b = b;
    n->st = st;
    *out = &n->base;
    return 0;
}

static int sq_count_messages(rs_backend *b, const char *thread_id, const char *user, int64_t *n,
                             rs_err *err)
{
    rs_log_info info;
    int rc = sq_log_info(b, thread_id, NULL, user, &info, err);
    *n = info.message_count;
    return rc;
}

static int sq_last_visible_ai_seq(rs_backend *b, const rs_target *t, int64_t *seq, rs_err *err)
{
    static const char sql[] =
        "SELECT MAX(seq) FROM run_events WHERE thread_id = ?1 AND run_id = ?2 "
        "AND category = 'message' AND event_type IN ('llm.ai.response', 'ai_message') "
        "AND NOT (coalesce(json_extract(event_metadata, '$.\"caller\"'), '') LIKE 'middleware:%') "
        "AND (?3 IS NULL OR user_id = ?3)";
    sqlite3_stmt *st;
    int rc = get_stmt(b, sql, &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    bind_text(st, 3, t->user);
    int src = sqlite3_step(st);
    int have = src == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (have)
        *seq = sqlite3_column_int64(st, 0);
    put_stmt(b, st);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return sq_fail(b, src, err, "last visible ai");
    return have ? 0 : -ENOENT;
}

static int sq_message_objects(rs_backend *b, const char *thread_id, const char *user, int newest,
                              const char *like, rs_cursor **out, rs_err *err)
{
    const char *sql = newest
        ? "SELECT " ROW_COLUMNS ", 0, 0 FROM run_events e WHERE e.thread_id = ?1 "
          "AND e.category = 'message' AND (?2 IS NULL OR e.user_id = ?2) "
          "AND substr(e.content, 1, 1) = '{' AND (?3 IS NULL OR e.content LIKE ?3 ESCAPE '\\') "
          "ORDER BY e.seq DESC"
        : "SELECT " ROW_COLUMNS ", 0, 0 FROM run_events e WHERE e.thread_id = ?1 "
          "AND e.category = 'message' AND (?2 IS NULL OR e.user_id = ?2) "
          "AND substr(e.content, 1, 1) = '{' AND (?3 IS NULL OR e.content LIKE ?3 ESCAPE '\\') "
          "ORDER BY e.seq ASC";
    sqlite3_stmt *st;
    int rc = get_stmt(b, sql, &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, thread_id);
    bind_text(st, 2, user);
    bind_text(st, 3, like);
    return cursor_make(b, st, out, err);
}

static int sq_stats(rs_backend *b, rs_stats *out, rs_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    int rc = get_stmt(b, "SELECT (SELECT count(*) FROM runfs_thread), (SELECT count(*) FROM "
                         "runfs_run), (SELECT coalesce(sum(count), 0) FROM runfs_thread)", &st, err);
    if (rc)
        return rc;
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        out->threads = sqlite3_column_int64(st, 0);
        out->runs = sqlite3_column_int64(st, 1);
        out->events = sqlite3_column_int64(st, 2);
    }
    put_stmt(b, st);
    return src == SQLITE_ROW ? 0 : sq_fail(b, src, err, "stats");
}

static void seal_from_stmt(rs_seal_row *row, sqlite3_stmt *st, int col)
{
    memset(row, 0, sizeof *row);
    const char *v;
    snprintf(row->state, sizeof row->state, "%s",
             (v = (const char *)sqlite3_column_text(st, col)) ? v : "");
    row->upper_seq = sqlite3_column_int64(st, col + 1);
    row->event_count = sqlite3_column_int64(st, col + 2);
    row->terminal_seq = sqlite3_column_int64(st, col + 3);
    snprintf(row->digest, sizeof row->digest, "%s",
             (v = (const char *)sqlite3_column_text(st, col + 4)) ? v : "");
    row->has_error = sqlite3_column_type(st, col + 5) != SQLITE_NULL;
    snprintf(row->error, sizeof row->error, "%s",
             (v = (const char *)sqlite3_column_text(st, col + 5)) ? v : "");
    snprintf(row->sealed_at, sizeof row->sealed_at, "%s",
             (v = (const char *)sqlite3_column_text(st, col + 6)) ? v : "");
}

static int sq_seal_insert(rs_backend *b, const rs_target *t, const rs_seal_row *row, rs_err *err)
{
    int rc = tx_begin(b, err);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    int64_t n = 0;
    if ((rc = get_stmt(b, "SELECT count(*) FROM run_events WHERE thread_id = ?1 AND run_id = ?2 "
                          "AND seq <= ?3 AND (?4 IS NULL OR user_id = ?4)", &st, err)))
        goto fail;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    sqlite3_bind_int64(st, 3, row->upper_seq);
    bind_text(st, 4, t->user);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    put_stmt(b, st);
    if (src != SQLITE_ROW) {
        rc = sq_fail(b, src, err, "seal");
        goto fail;
    }
    if (n != row->event_count) {
        rc = rs_err_set(err, -EAGAIN, "the run changed while it was being sealed");
        goto fail;
    }
    if ((rc = get_stmt(b, "INSERT INTO runfs_seal (thread_id, run_id, state, upper_seq, "
                          "event_count, terminal_seq, digest, error, sealed_at, user_id) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", &st, err)))
        goto fail;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    bind_text(st, 3, row->state);
    sqlite3_bind_int64(st, 4, row->upper_seq);
    sqlite3_bind_int64(st, 5, row->event_count);
    if (row->terminal_seq > 0)
        sqlite3_bind_int64(st, 6, row->terminal_seq);
    bind_text(st, 7, row->digest);
    bind_text(st, 8, row->has_error ? row->error : NULL);
    bind_text(st, 9, row->sealed_at);
    bind_text(st, 10, t->user);
    src = sqlite3_step(st);
    put_stmt(b, st);
    if (src != SQLITE_DONE) {
        rc = (src & 0xff) == SQLITE_CONSTRAINT
            ? rs_err_set(err, -EEXIST, "run %s is already sealed", t->run_id)
            : sq_fail(b, src, err, "seal");
        goto fail;
    }
    return tx_commit(b, err);
fail:
    tx_rollback(b);
    return rc;
}

#define SEAL_COLUMNS "state, upper_seq, event_count, terminal_seq, digest, error, sealed_at"

static int sq_seal_get(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "SELECT " SEAL_COLUMNS " FROM runfs_seal WHERE thread_id = ? "
                         "AND run_id = ?", &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, t->thread_id);
    bind_text(st, 2, t->run_id);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        seal_from_stmt(row, st, 0);
    put_stmt(b, st);
    if (src == SQLITE_DONE)
        return -ENOENT;
    return src == SQLITE_ROW ? 0 : sq_fail(b, src, err, "seal");
}

static int sq_seal_each(rs_backend *b, int (*fn)(void *ctx, const rs_target *t,
                                                 const rs_seal_row *row), void *ctx, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = get_stmt(b, "SELECT thread_id, run_id, " SEAL_COLUMNS ", user_id FROM runfs_seal "
                         "ORDER BY thread_id, run_id", &st, err);
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
        seal_from_stmt(&row, st, 2);
        if ((rc = fn(ctx, &t, &row)))
            break;
    }
    put_stmt(b, st);
    if (!rc && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "seals");
    return rc;
}

const rs_backend_ops rs_sqlite_backend = {
    .stats = sq_stats,
    .seal_insert = sq_seal_insert,
    .seal_get = sq_seal_get,
    .seal_each = sq_seal_each,
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .data_version = sq_data_version,
    .put = sq_put,
    .reserve = sq_reserve,
    .release = sq_release,
    .create = sq_create,
    .delete = sq_delete,
    .query = sq_query,
    .log_info = sq_log_info,
    .log_seek = sq_log_seek,
    .names = sq_names,
    .count_messages = sq_count_messages,
    .last_visible_ai_seq = sq_last_visible_ai_seq,
    .message_objects = sq_message_objects,
};
