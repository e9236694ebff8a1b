/* sqlite.c — the SQLite backend's core: the connection, cached statements, transactions,
 * cursors and the table of operations (the operations live in sqlite_index.c,
 * sqlite_write.c and sqlite_read.c).
 *
 * Every write is one BEGIN IMMEDIATE transaction: the database's write lock serialises seq
 * allocation across threads, processes and mounts. Statements are prepared once and cached
 * per connection. Reads stream rows through cursors; nothing materialises a run. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "schema.sql.h"
#include "sqlite_int.h"

typedef struct sq_cursor {
    rs_cursor base;
    rs_backend *b;
    sqlite3_stmt *st;
    int log;                     /* 0: a query; 1: a run's log; 2: a thread's log */
    int64_t next_off;            /* logs: where the next row's line starts */
    int64_t skip_to;             /* logs: lines ending at or before this are skipped */
} sq_cursor;

int sq_fail(rs_backend *b, int rc, rs_err *err, const char *what)
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
    case SQLITE_CANTOPEN:
        code = sys == EACCES || sys == ENOSPC || sys == EROFS ? -sys : -ENOENT;
        break;
    case SQLITE_IOERR: code = sys == ENOSPC ? -ENOSPC : -EIO; break;
    default: code = -EIO; break;
    }
    if (code == -EIO && sys == ENOSPC)
        code = -ENOSPC;
    return rs_err_set(err, code, "%s: %s", what, b->db ? sqlite3_errmsg(b->db) : sqlite3_errstr(rc));
}

/* A cached statement for sql, reset and unbound, marked busy until sq_stmt_done. */
int sq_stmt_get(rs_backend *b, const char *sql, sqlite3_stmt **out, rs_err *err)
{
    /* Most statements are string constants: a pointer match finds them without comparing
     * text (a write runs a dozen of them). Built statements live in b->sql. */
    const char *key = sql == b->sql.buf ? NULL : sql;
    for (int i = 0; key && i < SQ_STMT_CACHE; i++) {
        sq_stmt_slot *s = &b->cache[i];
        if (s->key == key && !s->busy) {
            s->busy = 1;
            *out = s->st;
            return 0;
        }
    }
    sq_stmt_slot *free_slot = NULL;
    for (int i = 0; i < SQ_STMT_CACHE; i++) {
        sq_stmt_slot *s = &b->cache[i];
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
        for (int i = 0; i < SQ_STMT_CACHE && !free_slot; i++)
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

void sq_stmt_done(rs_backend *b, sqlite3_stmt *st)
{
    if (!st)
        return;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    for (int i = 0; i < SQ_STMT_CACHE; i++)
        if (b->cache[i].st == st) {
            b->cache[i].busy = 0;
            return;
        }
}

int sq_step(rs_backend *b, sqlite3_stmt **row, rs_err *err, const char *what, const char *sql,
            const char *types, ...)
{
    sqlite3_stmt *st;
    int rc = sq_stmt_get(b, sql, &st, err);
    if (rc)
        return rc;
    va_list ap;
    va_start(ap, types);
    for (int i = 0; types[i]; i++) {
        if (types[i] == 't') {
            sq_bind_text(st, i + 1, va_arg(ap, const char *));
        } else if (types[i] == 'B') {
            /* Stepped before this returns: SQLite need not copy the bytes. */
            const rs_buf *v = va_arg(ap, const rs_buf *);
            sqlite3_bind_text(st, i + 1, v->buf, (int)v->len, SQLITE_STATIC);
        } else {
            int64_t v = va_arg(ap, int64_t);
            if (types[i] == 'i' || v > 0)
                sqlite3_bind_int64(st, i + 1, v);
        }
    }
    va_end(ap);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW && row) {
        *row = st;
        return 1;
    }
    sq_stmt_done(b, st);
    if (src == SQLITE_ROW || src == SQLITE_DONE)
        return src == SQLITE_ROW;
    return sq_fail(b, src, err, what);
}

int sq_exec(rs_backend *b, const char *sql, rs_err *err)
{
    int rc = sq_step(b, NULL, err, sql, sql, "");
    return rc < 0 ? rc : 0;
}

/* Writers of one database in this process queue on its lock rather than in SQLite's busy
 * handler, which sleeps in steps of milliseconds; other processes still meet at the
 * database lock, and writers of different databases never wait for each other. Held from
 * BEGIN to COMMIT or ROLLBACK only, so parsing and rendering run beside a commit. */
struct sq_db_lock {
    sq_db_lock *next;
    dev_t dev;
    ino_t ino;
    int refs;                    /* connections of this process to the database */
    pthread_mutex_t mutex;
    pthread_mutex_t group_mutex; /* group commit: the queue below and who leads */
    pthread_cond_t group_cond;
    sq_group_req *queue, **queue_tail;
    int leading;                 /* a thread is committing a group now */
};

static pthread_mutex_t db_locks_guard = PTHREAD_MUTEX_INITIALIZER;
static sq_db_lock *db_locks;

/* The lock of the database file at path (opened already, so it exists), shared by every
 * connection of this process to it. */
static int db_lock_get(const char *path, sq_db_lock **out, rs_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return rs_err_set(err, -errno, "cannot open store %s: %s", path, strerror(errno));
    pthread_mutex_lock(&db_locks_guard);
    sq_db_lock *l = db_locks;
    while (l && !(l->dev == st.st_dev && l->ino == st.st_ino))
        l = l->next;
    if (!l && (l = calloc(1, sizeof *l))) {
        l->dev = st.st_dev;
        l->ino = st.st_ino;
        pthread_mutex_init(&l->mutex, NULL);
        pthread_mutex_init(&l->group_mutex, NULL);
        pthread_cond_init(&l->group_cond, NULL);
        l->queue_tail = &l->queue;
        l->next = db_locks;
        db_locks = l;
    }
    if (l)
        l->refs++;
    pthread_mutex_unlock(&db_locks_guard);
    *out = l;
    return l ? 0 : rs_err_set(err, -ENOMEM, "out of memory");
}

static void db_lock_put(sq_db_lock *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&db_locks_guard);
    if (--l->refs == 0) {
        sq_db_lock **pp = &db_locks;
        while (*pp != l)
            pp = &(*pp)->next;
        *pp = l->next;
        pthread_mutex_destroy(&l->mutex);
        pthread_mutex_destroy(&l->group_mutex);
        pthread_cond_destroy(&l->group_cond);
        free(l);
    }
    pthread_mutex_unlock(&db_locks_guard);
}

/* BEGIN IMMEDIATE under the database's lock, read-only or not (sq_open sets up the schema
 * of a read-only store too). */
static int begin_locked(rs_backend *b, rs_err *err)
{
    pthread_mutex_lock(&b->lock->mutex);
    int rc = sq_exec(b, "BEGIN IMMEDIATE", err);
    if (rc)
        pthread_mutex_unlock(&b->lock->mutex);
    return rc;
}

/* Group commit: a write that arrives while another thread commits queues here, and the
 * next thread to find no leader commits everything queued in one transaction. */
int sq_group_run(rs_backend *b, sq_group_req *req, void (*commit)(rs_backend *, sq_group_req *))
{
    sq_db_lock *l = b->lock;
    pthread_mutex_lock(&l->group_mutex);
    req->next = NULL;
    req->done = 0;
    req->sync_full = b->sync_full;
    *l->queue_tail = req;
    l->queue_tail = &req->next;
    while (!req->done) {
        if (l->leading) {
            pthread_cond_wait(&l->group_cond, &l->group_mutex);
            continue;
        }
        /* Lead a group of the requests made with this connection's --sync level (a store
         * opened with another waits for a leader of its own). */
        l->leading = 1;
        sq_group_req *group = NULL, **gt = &group, **pp = &l->queue;
        l->queue_tail = &l->queue;
        while (*pp) {
            sq_group_req *r = *pp;
            if (r->sync_full == b->sync_full) {
                *pp = r->next;
                r->next = NULL;
                *gt = r;
                gt = &r->next;
            } else {
                pp = &r->next;
                l->queue_tail = &r->next;
            }
        }
        pthread_mutex_unlock(&l->group_mutex);
        commit(b, group);
        pthread_mutex_lock(&l->group_mutex);
        /* The followers' requests live on their stacks: done is the last touch. */
        for (sq_group_req *r = group, *next; r; r = next) {
            next = r->next;
            r->done = 1;
        }
        l->leading = 0;
        pthread_cond_broadcast(&l->group_cond);
    }
    pthread_mutex_unlock(&l->group_mutex);
    return req->rc;
}

int sq_begin(rs_backend *b, rs_err *err)
{
    if (b->read_only)
        return rs_err_set(err, -EROFS, "the store is read-only");
    return begin_locked(b, err);
}

int sq_commit(rs_backend *b, rs_err *err)
{
    int rc = sq_exec(b, "COMMIT", err);
    if (rc) {
        sq_exec(b, "ROLLBACK", NULL);
        b->seen_version = -1;
    }
    pthread_mutex_unlock(&b->lock->mutex);
    return rc;
}

void sq_rollback(rs_backend *b)
{
    if (!sqlite3_get_autocommit(b->db))
        sq_exec(b, "ROLLBACK", NULL);
    b->seen_version = -1;   /* what this transaction indexed is gone with it */
    pthread_mutex_unlock(&b->lock->mutex);
}

/* SQLite keeps its own copy: a cursor's statement steps long after the call that bound it,
 * when the caller's strings (a LIKE pattern, a request's ids) may be gone. */
void sq_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* One integer (or none: *out untouched, returns 0 with *found 0) from a statement. */
int sq_int(rs_backend *b, const char *sql, const char *a1, const char *a2,
                     int64_t *out, int *found, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = a2 ? sq_step(b, &st, err, "query", sql, "tt", a1, a2)
                : sq_step(b, &st, err, "query", sql, "t", a1);
    if (rc < 0)
        return rc;
    int have = rc == 1 && sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (have)
        *out = sqlite3_column_int64(st, 0);
    if (rc == 1)
        sq_stmt_done(b, st);
    if (found)
        *found = have;
    return 0;
}

void sq_row(rs_row *row, sqlite3_stmt *st, int col)
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

static int table_exists(rs_backend *b, const char *name, int *exists, rs_err *err)
{
    int64_t n = 0;
    int rc = sq_int(b, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?",
                       name, NULL, &n, NULL, err);
    *exists = n > 0;
    return rc;
}

/* Is the schema in place (at this build's layout) with nothing to index, and are there
 * reservations to check? *layout: the side tables' layout, 0 for a store without them. */
static int setup_needed(rs_backend *b, int *ready, int *has_holds, int64_t *layout,
                        rs_err *err)
{
    int has_meta, has_schema = 0;
    int rc = table_exists(b, "runfs_meta", &has_meta, err);
    if (!rc)
        rc = table_exists(b, "runfs_idem", &has_schema, err);
    *ready = 0;
    *has_holds = 0;
    *layout = 0;
    if (rc || !has_meta)
        return rc;
    *layout = 1;                  /* layout 1 did not say so */
    if ((rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'layout'", NULL, NULL,
                     layout, NULL, err)))
        return rc;
    if (*layout != RS_SCHEMA_LAYOUT || !has_schema)
        return 0;
    int needed = 1;
    int64_t holds = 0;
    if ((rc = sq_needs_catch_up(b, &needed, err)) ||
        (rc = sq_int(b, "SELECT count(*) FROM runfs_hold", NULL, NULL, &holds, NULL, err)))
        return rc;
    *ready = !needed;
    *has_holds = holds > 0;
    return 0;
}

/* Reservations whose holder died (or is a zombie, or whose pid now names another process). */
static void clear_stale_holds(rs_backend *b)
{
    sqlite3_stmt *st;
    if (sq_stmt_get(b, "SELECT DISTINCT pid, started FROM runfs_hold", &st, NULL))
        return;
    struct { long pid; int64_t started; } dead[32];
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 32) {
        long pid = (long)sqlite3_column_int64(st, 0);
        int64_t started = sqlite3_column_int64(st, 1);
        if (rs_process_start(pid) != started) {
            dead[n].pid = pid;
            dead[n++].started = started;
        }
    }
    sq_stmt_done(b, st);
    for (int i = 0; i < n; i++)
        if (sq_step(b, NULL, NULL, "reservation", "DELETE FROM runfs_hold WHERE pid = ? AND "
                    "started = ?", "ii", (int64_t)dead[i].pid, dead[i].started) < 0)
            return;
}

/* Another connection holds the database's write lock: wait in short steps (20 us doubling
 * to 1 ms; SQLite's own handler sleeps up to 100 ms at a time, which a writer waiting for
 * another mount's commit of a few hundred microseconds would feel), up to the timeout, with
 * one notice a second into a wait. */
static int sq_busy(void *arg, int count)
{
    rs_backend *b = arg;
    int64_t now = rs_clock_ns(CLOCK_MONOTONIC);
    if (count == 0) {
        b->busy_since = now;
        b->busy_told = 0;
    }
    int64_t waited_ms = (now - b->busy_since) / 1000000;
    if (waited_ms >= SQ_BUSY_TIMEOUT_MS)
        return 0;
    if (waited_ms >= 1000 && !b->busy_told && b->busy_notice) {
        b->busy_told = 1;
        b->busy_notice(b->busy_ctx, b->path);
    }
    struct timespec ts = {0, (count < 6 ? 20L << count : 1000L) * 1000};
    nanosleep(&ts, NULL);
    return 1;
}

/* Finalize every cached statement (before the connection closes, or it cannot). */
static void stmt_cache_clear(rs_backend *b)
{
    for (int i = 0; i < SQ_STMT_CACHE; i++) {
        if (b->cache[i].st)
            sqlite3_finalize(b->cache[i].st);
        free(b->cache[i].sql);
        b->cache[i] = (sq_stmt_slot){0};
    }
}

static int sq_open(rs_backend **out, const char *uri, const rs_options *opt, rs_err *err)
{
    rs_backend *b = calloc(1, sizeof *b);
    if (!b)
        return rs_err_set(err, -ENOMEM, "out of memory");
    b->sql = (rs_buf)RS_BUF_INIT;
    b->seen_version = -1;
    b->pid = (long)getpid();
    b->started = rs_process_start(b->pid);
    b->read_only = opt->read_only;
    b->owners_apart = opt->owners_apart;
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
    b->busy_notice = opt->busy_notice;
    b->busy_ctx = opt->busy_ctx;
    sqlite3_busy_handler(b->db, sq_busy, b);
    const char *group = getenv("RUNFS_GROUP_COMMIT");
    b->grouped = !(group && strcmp(group, "off") == 0);
    char pragmas[160];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA foreign_keys=ON; "
             "PRAGMA wal_autocheckpoint=8192;",
             opt->sync_full ? "FULL" : "NORMAL");
    b->sync_full = opt->sync_full;
    char *msg = NULL;
    src = sqlite3_exec(b->db, pragmas, NULL, NULL, &msg);
    if (src != SQLITE_OK) {
        rc = sqlite3_errcode(b->db) == SQLITE_NOTADB
                 ? rs_err_set(err, -EINVAL, "%s is not a SQLite database", uri)
                 : rs_err_set(err, sq_fail(b, sqlite3_extended_errcode(b->db), NULL, "open"),
                              "cannot open store %s: %s", uri, msg ? msg : sqlite3_errstr(src));
        sqlite3_free(msg);
        goto fail;
    }
    if ((rc = db_lock_get(uri, &b->lock, err)))
        goto fail;
    /* Most opens (a mount's pool, the CLI) find the schema in place and nothing to index:
     * they take no write lock. */
    int ready = 0, has_holds = 0;
    int64_t layout = 0;
    if ((rc = setup_needed(b, &ready, &has_holds, &layout, err)))
        goto fail;
    if (layout > RS_SCHEMA_LAYOUT) {
        rc = rs_err_set(err, -EINVAL, "store %s has runfs side tables of layout %lld, newer "
                        "than this runfs reads (%d): use a newer runfs", uri, (long long)layout,
                        RS_SCHEMA_LAYOUT);
        goto fail;
    }
    if (ready && !has_holds) {
        *out = b;
        return 0;
    }
    if ((rc = begin_locked(b, err)))
        goto fail;
    int has_hwm;
    if ((rc = table_exists(b, "run_event_thread_seq", &has_hwm, err)))
        goto fail_tx;
    int migrate = layout > 0 && layout < RS_SCHEMA_LAYOUT;
    src = migrate ? sqlite3_exec(b->db, rs_schema_migrate_sql, NULL, NULL, &msg) : SQLITE_OK;
    if (src == SQLITE_OK)
        src = sqlite3_exec(b->db, rs_schema_sql, NULL, NULL, &msg);
    if (src == SQLITE_OK && migrate)
        src = sqlite3_exec(b->db, rs_schema_migrate_copy_sql, NULL, NULL, &msg);
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
    if ((rc = sq_catch_up(b, err)))
        goto fail_tx;
    clear_stale_holds(b);
    if ((rc = sq_commit(b, err)))
        goto fail;
    *out = b;
    return 0;
fail_tx:
    sq_rollback(b);
fail:
    db_lock_put(b->lock);
    stmt_cache_clear(b);
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
    stmt_cache_clear(b);
    if (!b->read_only) {
        char sql[64];
        snprintf(sql, sizeof sql, "DELETE FROM runfs_hold WHERE pid = %ld", b->pid);
        sqlite3_exec(b->db, sql, NULL, NULL, NULL);
        sqlite3_wal_checkpoint_v2(b->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    }
    sqlite3_close_v2(b->db);
    db_lock_put(b->lock);
    rs_buf_release(&b->sql);
    free(b->path);
    free(b);
}

static int sq_data_version(rs_backend *b, int64_t *version)
{
    return sq_int(b, "PRAGMA data_version", NULL, NULL, version, NULL, NULL);
}

static int sq_refresh(rs_backend *b, rs_err *err)
{
    int needed = 0;
    int rc = sq_needs_catch_up(b, &needed, err);
    if (rc || !needed)
        return rc;
    if ((rc = sq_begin(b, err)))
        return rc;
    if ((rc = sq_catch_up(b, err))) {
        sq_rollback(b);
        return rc;
    }
    return sq_commit(b, err);
}

static int cursor_next(rs_cursor *base, const rs_record **out)
{
    sq_cursor *c = (sq_cursor *)base;
    for (;;) {
        int src = sqlite3_step(c->st);
        if (src == SQLITE_DONE)
            return 0;
        if (src != SQLITE_ROW)
            return sq_fail(c->b, src, NULL, "read");
        sq_row(&base->row, c->st, 0);
        int rc = rs_cursor_emit(base, c->log, &c->next_off, c->skip_to, out);
        if (rc)
            return rc;           /* 0: the line ends before the offset asked for */
    }
}

static void cursor_free(rs_cursor *base)
{
    sq_cursor *c = (sq_cursor *)base;
    sq_stmt_done(c->b, c->st);
    rs_buf_release(&base->line);
    free(c);
}

int sq_cursor_new(rs_backend *b, sqlite3_stmt *st, int log, int64_t start_off, int64_t skip_to,
                  rs_cursor **out, rs_err *err)
{
    sq_cursor *c = calloc(1, sizeof *c);
    if (!c) {
        sq_stmt_done(b, st);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    c->base.next = cursor_next;
    c->base.free = cursor_free;
    c->base.line = (rs_buf)RS_BUF_INIT;
    c->b = b;
    c->st = st;
    c->log = log;
    c->next_off = start_off;
    c->skip_to = skip_to;
    *out = &c->base;
    return 0;
}


const rs_backend_ops rs_sqlite_backend = {
    .stats = sq_stats,
    .seal_insert = sq_seal_insert,
    .seal_get = sq_seal_get,
    .seal_each = sq_seal_each,
    .name = "sqlite",
    .idem_keys = 1,
    .open = sq_open,
    .close = sq_close,
    .data_version = sq_data_version,
    .refresh = sq_refresh,
    .put = sq_put,
    .reserve = sq_reserve,
    .release = sq_release,
    .create = sq_create,
    .delete = sq_delete,
    .import = sq_import,
    .query = sq_query,
    .log_info = sq_log_info,
    .log_seek = sq_log_seek,
    .names = sq_names,
    .count_messages = sq_count_messages,
    .last_visible_ai_seq = sq_last_visible_ai_seq,
    .message_objects = sq_message_objects,
};
