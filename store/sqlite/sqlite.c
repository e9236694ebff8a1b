/* sqlite.c — the SQLite backend's core: the connection, cached statements, transactions,
 * cursors and the table of operations (the operations live in sqlite_index.c,
 * sqlite_write.c and sqlite_read.c).
 *
 * Every write is one BEGIN IMMEDIATE transaction: the database's write lock serialises seq
 * allocation across threads, processes and mounts. Statements are prepared once and cached
 * per connection. Reads stream rows through cursors; nothing materialises a run. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "schema.sql.h"
#include "sqlite_int.h"
#include "rs_util.h"

typedef struct sq_cursor {
    rs_cursor base;
    rs_backend *b;
    sqlite3_stmt *st;
    int log;          /* 0: a query; 1: a run's log; 2: a thread's log */
    int64_t next_off; /* logs: where the next row's line starts */
    int64_t skip_to;  /* logs: lines ending at or before this are skipped */
    sq_canon canon;
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
    return rs_err_set(err, code, "%s: %s", what,
                      b->db ? sqlite3_errmsg(b->db) : sqlite3_errstr(rc));
}

/* A cached statement for sql, reset and unbound, marked busy until sq_stmt_done. */
int sq_stmt_get(rs_backend *b, const char *sql, sqlite3_stmt **out, rs_err *err)
{
    uint64_t now = ++b->stmt_clock;
    /* Most statements are string constants: a pointer match finds them without comparing
     * text (a write runs a dozen of them). Built statements live in b->sql. */
    const char *key = sql == b->sql.buf ? NULL : sql;
    for (int i = 0; key && i < SQ_STMT_CACHE; i++) {
        sq_stmt_slot *s = &b->cache[i];
        if (s->key == key && !s->busy) {
            s->busy = 1;
            s->used = now;
            *out = s->st;
            return 0;
        }
    }
    /* Built ones share long prefixes (a run's reads differ in their last clauses): the hash
     * passes over the others without comparing their text. */
    uint64_t hash = rs_hash(RS_HASH_INIT, sql, strlen(sql));
    sq_stmt_slot *free_slot = NULL;
    for (int i = 0; i < SQ_STMT_CACHE; i++) {
        sq_stmt_slot *s = &b->cache[i];
        if (!s->sql) {
            if (!free_slot)
                free_slot = s;
            continue;
        }
        if (!s->busy && s->hash == hash && strcmp(s->sql, sql) == 0) {
            s->busy = 1;
            s->used = now;
            *out = s->st;
            return 0;
        }
    }
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v3(b->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK)
        return sq_fail(b, rc, err, "prepare");
    if (!free_slot) {
        /* Evict the least recently used idle slot (the cache only bounds memory,
         * correctness never needs it): the first idle one is mostly the one the last miss
         * filled, so statements past the cache's size were prepared again at every use. */
        for (int i = 0; i < SQ_STMT_CACHE; i++)
            if (!b->cache[i].busy && (!free_slot || b->cache[i].used < free_slot->used))
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
    free_slot->hash = hash;
    free_slot->used = now;
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
        } else if (types[i] == 's') {
            /* A row's columns on the write path: stepped before this returns, so SQLite
             * need not copy them. */
            const char *v = va_arg(ap, const char *);
            if (v)
                sqlite3_bind_text(st, i + 1, v, -1, SQLITE_STATIC);
            else
                sqlite3_bind_null(st, i + 1);
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
    int refs;                    /* connections of this process to the database; next and refs under
                 db_locks_guard, dev, ino and path fixed once made */
    pthread_mutex_t mutex;       /* the database's write lock in this process: held from
                                    BEGIN to COMMIT or ROLLBACK (begin_locked) */
    pthread_mutex_t group_mutex; /* group commit: queue, queue_tail and leading, under it */
    pthread_cond_t group_cond;   /* a group was committed, or nobody leads */
    sq_group_req *queue, **queue_tail;
    int leading; /* a thread is committing a group now */
    /* The checkpointer (see ckpt_main), started by the first commit that finds the WAL
     * long; everything below under ckpt_mutex. */
    pthread_mutex_t ckpt_mutex;
    pthread_cond_t ckpt_cond;
    pthread_t ckpt_thread;
    char *path;
    int ckpt_started, ckpt_wanted, ckpt_stop;
    pthread_cond_t ckpt_done; /* a checkpoint round ended */
    uint64_t ckpt_rounds;
    int wal_frames;   /* the WAL's length in pages after this process's last commit */
    int ckpt_blocked; /* the last round could not empty the WAL (a reader stayed in it) */
    /* Under mutex: the commits this process's connections made holding it (the WAL hook
     * counts them), and the files sq_foreign_version reads beside that count (-1: not
     * open yet; opened once and closed with the lock, as closing a file's descriptor drops
     * this process's POSIX locks on it, SQLite's included). shm_dev, shm_ino: the -shm
     * file shm_fd reads. */
    uint32_t own_commits;
    int db_fd, shm_fd, shm_gone;
    dev_t shm_dev;
    ino_t shm_ino;
};

/* Every database this process has open, under db_locks_guard (a lock is made at the first
 * connection to its file and freed with the last). */
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
    if (!l && (l = calloc(1, sizeof *l)) && !(l->path = strdup(path))) {
        free(l);
        l = NULL;
    }
    if (l && !l->refs) {
        l->dev = st.st_dev;
        l->ino = st.st_ino;
        pthread_mutex_init(&l->mutex, NULL);
        pthread_mutex_init(&l->group_mutex, NULL);
        pthread_cond_init(&l->group_cond, NULL);
        pthread_mutex_init(&l->ckpt_mutex, NULL);
        pthread_cond_init(&l->ckpt_cond, NULL);
        pthread_cond_init(&l->ckpt_done, NULL);
        l->queue_tail = &l->queue;
        l->own_commits = 0;
        l->db_fd = l->shm_fd = -1;
        l->shm_gone = 0;
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
        pthread_mutex_lock(&l->ckpt_mutex);
        l->ckpt_stop = 1;
        pthread_cond_signal(&l->ckpt_cond);
        pthread_mutex_unlock(&l->ckpt_mutex);
        if (l->ckpt_started)
            pthread_join(l->ckpt_thread, NULL);
        pthread_mutex_destroy(&l->mutex);
        pthread_mutex_destroy(&l->group_mutex);
        pthread_cond_destroy(&l->group_cond);
        pthread_mutex_destroy(&l->ckpt_mutex);
        pthread_cond_destroy(&l->ckpt_cond);
        pthread_cond_destroy(&l->ckpt_done);
        if (l->db_fd >= 0)
            close(l->db_fd);
        if (l->shm_fd >= 0)
            close(l->shm_fd);
        free(l->path);
        free(l);
    }
    pthread_mutex_unlock(&db_locks_guard);
}

/* The checkpointer waits for readers in short steps (SQLite's own busy timeout sleeps a
 * millisecond and more at a time, holding the writers that long), SQ_CKPT_WAIT_MS at most. */
static int ckpt_busy(void *arg, int tries)
{
    (void)arg;
    struct timespec ts = {0, 200000L};
    nanosleep(&ts, NULL);
    return tries < SQ_CKPT_WAIT_MS * 5;
}

/* The checkpointer's connection to the file the writers opened (NULL: none now, try again
 * at the next request; a file replaced under a mount is not the writers' any more). */
static sqlite3 *ckpt_open(const sq_db_lock *l)
{
    struct stat st;
    sqlite3 *db = NULL;
    if (stat(l->path, &st) != 0 || st.st_dev != l->dev || st.st_ino != l->ino)
        return NULL;
    /* A connection learns that the file is in WAL mode when it first reads it. */
    if (sqlite3_open_v2(l->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_close_v2(db);
        return NULL;
    }
    sqlite3_busy_handler(db, ckpt_busy, NULL);
    return db;
}

/* Checkpoints run on a thread of their own, on a connection of their own: a checkpoint
 * syncs the WAL and the database file, which on a busy disk takes tens of milliseconds,
 * and run inside a commit (SQLite's wal_autocheckpoint) it held the write lock meanwhile,
 * so every writer of every mount waited. PASSIVE: it never waits for a writer or reader;
 * what it cannot copy yet waits for the next one. A WAL copied whole starts again from
 * its beginning only when no reader is in it as a writer begins, which under steady reads
 * never happens, and some reader is always behind the newest frames, so PASSIVE never
 * copies all of them: the WAL grew without bound. A WAL still long after PASSIVE gets
 * TRUNCATE, which holds writers while it waits for the readers it needs gone (at most
 * SQ_CKPT_WAIT_MS each time; readers that start meanwhile read the database file), copies
 * the rest and empties the file; when readers stay longer, the next request tries again. */
static void *ckpt_main(void *arg)
{
    sq_db_lock *l = arg;
    sqlite3 *db = NULL;
    pthread_mutex_lock(&l->ckpt_mutex);
    while (!l->ckpt_stop) {
        if (!l->ckpt_wanted) {
            pthread_cond_wait(&l->ckpt_cond, &l->ckpt_mutex);
            continue;
        }
        l->ckpt_wanted = 0;
        pthread_mutex_unlock(&l->ckpt_mutex);
        if (!db)
            db = ckpt_open(l);
        int log = 0, blocked = 0;
        if (db &&
            sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, NULL) ==
                SQLITE_OK &&
            log >= SQ_CKPT_FRAMES) {
            /* Ahead of this process's writers, which would take the write lock again
             * first; another process's meet it at SQLite's lock. */
            pthread_mutex_lock(&l->mutex);
            blocked = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_RESTART, NULL, NULL) !=
                      SQLITE_OK;
            pthread_mutex_unlock(&l->mutex);
        }
        pthread_mutex_lock(&l->ckpt_mutex);
        l->ckpt_rounds++;
        l->ckpt_blocked = blocked;
        pthread_cond_broadcast(&l->ckpt_done);
        pthread_mutex_unlock(&l->ckpt_mutex);
        /* While readers keep the WAL from being copied whole, every commit asks again:
         * one checkpoint per SQ_CKPT_PAUSE_MS at most. */
        struct timespec ts = {0, SQ_CKPT_PAUSE_MS * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&l->ckpt_mutex);
    }
    pthread_mutex_unlock(&l->ckpt_mutex);
    sqlite3_close_v2(db);
    return NULL;
}

/* After each commit (SQLite's WAL hook): a WAL of SQ_CKPT_FRAMES pages or more asks the
 * checkpointer for a checkpoint, starting it the first time. SQLite calls it once for a
 * commit that wrote frames, the one that moved the wal-index header's iChange (wal.c's
 * walFrames), at most: a commit made holding the write lock is counted for
 * sq_foreign_version (one made without it, such as an autocommit statement, is not, and
 * is taken for another process's). */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    (void)db;
    rs_backend *b = arg;
    sq_db_lock *l = b->lock;
    if (b->write_locked && strcmp(name, "main") == 0)
        l->own_commits++;
    pthread_mutex_lock(&l->ckpt_mutex);
    l->wal_frames = frames;
    pthread_mutex_unlock(&l->ckpt_mutex);
    if (frames < SQ_CKPT_FRAMES)
        return SQLITE_OK;
    pthread_mutex_lock(&l->ckpt_mutex);
    if (!l->ckpt_started && !l->ckpt_stop)
        l->ckpt_started = pthread_create(&l->ckpt_thread, NULL, ckpt_main, l) == 0;
    l->ckpt_wanted = 1;
    pthread_cond_signal(&l->ckpt_cond);
    pthread_mutex_unlock(&l->ckpt_mutex);
    return SQLITE_OK;
}

/* BEGIN IMMEDIATE under the database's lock (sq_begin's, and sq_open's setup). */
static int begin_locked(rs_backend *b, rs_err *err)
{
    sq_read_end(b);
    pthread_mutex_lock(&b->lock->mutex);
    b->write_locked = 1;
    int rc = sq_exec(b, "BEGIN IMMEDIATE", err);
    if (rc) {
        b->write_locked = 0;
        pthread_mutex_unlock(&b->lock->mutex);
    }
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

static int pin_check(rs_backend *b, rs_err *err);

int sq_triggers_on(rs_backend *b, rs_err *err)
{
    int on = 0;
    if (!b->quiet)
        return 0;
    if (sqlite3_db_config(b->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 1, &on) != SQLITE_OK || !on)
        return rs_err_set(err, -EIO, "triggers could not be switched on again");
    b->quiet = 0;
    return 0;
}

int sq_begin_quiet(rs_backend *b, rs_err *err)
{
    if (b->read_only)
        return rs_err_set(err, -EROFS, "the store is read-only");
    int rc = begin_locked(b, err);
    if (!rc && b->pinned && (rc = pin_check(b, err)))
        sq_rollback(b);
    return rc;
}

/* Every other write runs with the triggers on: they are what keeps the side tables level
 * with run_events (deletes, changes in place, imports, seals' trees). */
int sq_begin(rs_backend *b, rs_err *err)
{
    int rc = b->read_only ? 0 : sq_triggers_on(b, err);
    return rc ? rc : sq_begin_quiet(b, err);
}

/* After a commit, outside the write lock: a WAL of SQ_WAL_MAX pages or more waits for the
 * checkpointer's next round (at most a second), so that no rate of writes outruns it. Not
 * while a reader keeps it from emptying the WAL: then waiting would not shorten it. */
static void wal_wait(sq_db_lock *l)
{
    pthread_mutex_lock(&l->ckpt_mutex);
    if (l->wal_frames >= SQ_WAL_MAX && l->ckpt_started && !l->ckpt_blocked && !l->ckpt_stop) {
        uint64_t round = l->ckpt_rounds;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        while (l->ckpt_rounds == round && !l->ckpt_stop)
            if (pthread_cond_timedwait(&l->ckpt_done, &l->ckpt_mutex, &ts) == ETIMEDOUT)
                break;
    }
    pthread_mutex_unlock(&l->ckpt_mutex);
}

int sq_commit(rs_backend *b, rs_err *err)
{
    b->commits++;
    int rc = sq_exec(b, "COMMIT", err);
    if (rc) {
        sq_exec(b, "ROLLBACK", NULL);
        b->seen_version = -1;
        b->last_put.version = -1;
        b->canon_kept.version = -1;
    }
    b->write_locked = 0;
    pthread_mutex_unlock(&b->lock->mutex);
    wal_wait(b->lock);
    return rc;
}

void sq_rollback(rs_backend *b)
{
    if (!sqlite3_get_autocommit(b->db))
        sq_exec(b, "ROLLBACK", NULL);
    b->seen_version = -1; /* what this transaction indexed is gone with it */
    b->last_put.version = -1;
    b->canon_kept.version = -1;
    b->write_locked = 0;
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

int sq_in_write(rs_backend *b)
{
    return !sqlite3_get_autocommit(b->db) && !b->read_open;
}

void sq_read_end(rs_backend *b)
{
    if (!b->read_open)
        return;
    b->read_open = 0;
    if (!sqlite3_get_autocommit(b->db) && sq_exec(b, "COMMIT", NULL))
        sq_exec(b, "ROLLBACK", NULL);
}

int sq_look(rs_backend *b, int64_t *version, rs_err *err)
{
    /* A write transaction indexes what others committed before it allocates anything:
     * it looks every time. */
    int in_write = sq_in_write(b);
    /* Only while the read it was looked in is open: a write in the request (indexing
     * another writer's rows, keeping a size) ends it, and what is read after that is read
     * as each statement finds it, rows another process committed since the look included. */
    if (b->one_look && b->read_open && b->looked_version >= 0 && !in_write) {
        *version = b->looked_version;
        return 0;
    }
    /* The rest of the request reads the rows as of this look: one read transaction, not
     * one per statement (each a lock and an unlock of the WAL's read mark). */
    if (b->one_look && !in_write && !b->read_open && sqlite3_get_autocommit(b->db) &&
        sq_exec(b, "BEGIN", NULL) == 0)
        b->read_open = 1;
    int rc = sq_int(b, "PRAGMA data_version", NULL, NULL, version, NULL, err);
    if (!rc && b->one_look && !in_write)
        b->looked_version = *version;
    return rc;
}

static void sq_one_look(rs_backend *b, int on)
{
    sq_read_end(b);
    b->one_look = on;
    b->looked_version = -1;
    /* The rewrites count kept at the last probe holds no longer: another writer may have
     * changed rows since, and a request that reads it without a probe (a search at the
     * root) must see that. */
    b->probed_version = -1;
}

/* One integer (or none: *out untouched, returns 0 with *found 0) from a statement. */
int sq_int(rs_backend *b, const char *sql, const char *a1, const char *a2, int64_t *out, int *found,
           rs_err *err)
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

const char *sq_numbered(rs_backend *b, const char *sql)
{
    rs_buf_reset(&b->sql);
    for (const char *p = sql; *p; p++)
        if (rs_buf_addch(&b->sql, *p == '$' && p[1] >= '0' && p[1] <= '9' ? '?' : *p))
            return NULL;
    return b->sql.buf;
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
    row->canonical = 0;
    /* In bytes: an id holding a NUL reads as its part before it. */
    row->odd =
        !rs_id_valid_n(row->thread_id ? row->thread_id : "",
                       (size_t)sqlite3_column_bytes(st, col + 0)) ||
        !rs_id_valid_n(row->run_id ? row->run_id : "", (size_t)sqlite3_column_bytes(st, col + 1));
    if (!row->thread_id)
        row->thread_id = "";
    if (!row->run_id)
        row->run_id = "";
    if (!row->event_type)
        row->event_type = "";
    if (!row->category)
        row->category = "";
    if (!row->content)
        row->content = "";
    if (!row->metadata)
        row->metadata = "{}";
    if (!row->created_at)
        row->created_at = "";
}

static int table_exists(rs_backend *b, const char *name, int *exists, rs_err *err)
{
    int64_t n = 0;
    int rc = sq_int(b, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", name,
                    NULL, &n, NULL, err);
    *exists = n > 0;
    return rc;
}

/* What an open checks the schema against: every object sqlite_master names and run_events'
 * columns, read in one statement (a statement for each was a fair share of an open's time),
 * as "TYPE\0NAME\0" entries ("column" the type of a column). */
static int schema_names(rs_backend *b, rs_buf *out, int64_t *objects, rs_err *err)
{
    sqlite3_stmt *st = NULL;
    *objects = 0;
    int rc = sq_step(b, &st, err, "schema",
                     "SELECT type, name FROM main.sqlite_master UNION ALL "
                     "SELECT 'column', name FROM pragma_table_info('run_events')",
                     "");
    int src = SQLITE_ROW;
    for (; rc == 1 && src == SQLITE_ROW; src = sqlite3_step(st)) {
        const char *type = (const char *)sqlite3_column_text(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (!type || !name)
            continue;
        *objects += strcmp(type, "column") != 0;
        if (rs_buf_add(out, type, strlen(type) + 1) || rs_buf_add(out, name, strlen(name) + 1))
            rc = rs_err_set(err, -ENOMEM, "out of memory");
    }
    if (rc == 1 && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "schema");
    sq_stmt_done(b, st);
    return rc < 0 ? rc : 0;
}

/* Whether names (schema_names) holds the object name of type. */
static int schema_has(const rs_buf *names, const char *type, const char *name)
{
    for (const char *p = names->buf, *end = p + names->len; p < end;) {
        const char *n = p + strlen(p) + 1;
        if (strcmp(p, type) == 0 && strcmp(n, name) == 0)
            return 1;
        p = n + strlen(n) + 1;
    }
    return 0;
}

/* Is the schema in place (at this build's layout), and are there reservations to check?
 * *layout: the side tables' layout, 0 for a store without them. names: schema_names'. */
static int setup_needed(rs_backend *b, const rs_buf *names, int *ready, int *has_holds,
                        int64_t *layout, rs_err *err)
{
    int has_meta = schema_has(names, "table", "runfs_meta");
    int has_schema = schema_has(names, "table", "runfs_canon");
    /* A writer also wants the triggers and tables (a store an older build set up lacks
     * some), and no unique index of an older build on DeerFlow's table; a reader alters
     * nothing and reads the store as it is. */
    static const char *const wanted[][2] = {
        {"trigger", "runfs_canon_update"},   {"trigger", "runfs_count_deleted"},
        {"trigger", "runfs_forget_updated"}, {"trigger", "runfs_replace_note"},
        {"trigger", "runfs_replace_work"},   {"table", "runfs_seal_tree"},
        {"table", "runfs_seal_salt"},        {"table", "runfs_redaction"},
        {"table", "runfs_expired"},          {"table", "runfs_rewritten"},
        {"trigger", "runfs_canon_delete"},
    };
    for (size_t i = 0; has_schema && !b->read_only && i < sizeof wanted / sizeof *wanted; i++)
        has_schema = schema_has(names, wanted[i][0], wanted[i][1]);
    if (has_schema && !b->read_only && schema_has(names, "index", "runfs_uq_terminal"))
        has_schema = 0;
    /* Nor an older build's triggers that could fail another writer's statement. */
    int64_t stale = 0;
    int rc = 0;
    if (has_schema && !b->read_only &&
        !(rc = sq_int(b, rs_schema_stale_triggers_sql, NULL, NULL, &stale, NULL, err)) && stale)
        has_schema = 0;
    *ready = 0;
    *has_holds = 0;
    *layout = 0;
    if (rc || !has_meta)
        return rc;
    *layout = 1; /* layout 1 did not say so */
    if ((rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'layout'", NULL, NULL, layout,
                     NULL, err)))
        return rc;
    if (*layout != RS_SCHEMA_LAYOUT || !has_schema)
        return 0;
    /* Rows others wrote are indexed a thread at a time, at its first use: not here. */
    int64_t holds = 0;
    if ((rc = sq_int(b, "SELECT count(*) FROM runfs_hold", NULL, NULL, &holds, NULL, err)))
        return rc;
    *ready = 1;
    *has_holds = holds > 0;
    return 0;
}

/* Layout 3's columns where the tables lack them. */
static int add_columns3(rs_backend *b, rs_err *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof rs_schema_columns3 / sizeof *rs_schema_columns3; i++) {
        int64_t n = 0;
        rc = sq_int(b, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?",
                    rs_schema_columns3[i][0], rs_schema_columns3[i][1], &n, NULL, err);
        if (rc || n)
            continue;
        rs_buf_reset(&b->sql);
        if (rs_buf_addf(&b->sql, "ALTER TABLE %s ADD COLUMN %s INTEGER NOT NULL DEFAULT 0",
                        rs_schema_columns3[i][0], rs_schema_columns3[i][1]))
            return rs_err_set(err, -ENOMEM, "out of memory");
        rc = sq_exec(b, b->sql.buf, err);
    }
    return rc ? rc : sq_exec(b, "UPDATE runfs_meta SET value = 3 WHERE key = 'layout'", err);
}

/* Layout 4: the change feed's column, table and triggers where they are missing. */
static int add_feed(rs_backend *b, rs_err *err)
{
    int64_t n = 0;
    int rc = sq_int(b, "SELECT count(*) FROM pragma_table_info('runfs_run') WHERE name = 'change'",
                    NULL, NULL, &n, NULL, err);
    if (!rc && !n)
        rc = sq_exec(b, "ALTER TABLE runfs_run ADD COLUMN change INTEGER NOT NULL DEFAULT 0", err);
    /* The first feed's delete trigger knew runfs_change's numbers only. */
    if (!rc && !n)
        rc = sq_exec(b, "DROP TRIGGER IF EXISTS runfs_change_delete", err);
    char *msg = NULL;
    int src = rc ? SQLITE_OK : sqlite3_exec(b->db, rs_schema_changes_sql, NULL, NULL, &msg);
    if (src != SQLITE_OK)
        rc = rs_err_set(err, sq_fail(b, src, NULL, "schema"), "cannot set up the change feed: %s",
                        msg ? msg : sqlite3_errstr(src));
    sqlite3_free(msg);
    return rc;
}

/* Layout 6: whether a seal's leaves are salted, where runfs_seal_tree lacks the column. */
static int add_leaves(rs_backend *b, rs_err *err)
{
    int64_t n = 0;
    int rc = sq_int(b,
                    "SELECT count(*) FROM pragma_table_info('runfs_seal_tree') WHERE name = "
                    "'leaves'",
                    NULL, NULL, &n, NULL, err);
    return rc || n ? rc
                   : sq_exec(b,
                             "ALTER TABLE runfs_seal_tree ADD COLUMN leaves TEXT NOT NULL "
                             "DEFAULT 'plain'",
                             err);
}

/* Every thread's logs indexed again from its rows (a layout that kept less). */
static int reindex_all(rs_backend *b, rs_err *err)
{
    int64_t key = 0;
    int rc;
    for (;;) {
        sqlite3_stmt *st;
        rc = sq_step(b, &st, err, "reindex",
                     "SELECT thread_key, thread_id FROM runfs_thread WHERE thread_key > ? "
                     "ORDER BY thread_key LIMIT 1",
                     "i", key);
        if (rc <= 0)
            return rc;
        key = sqlite3_column_int64(st, 0);
        char thread_id[RS_ID_MAX + 1];
        if (rs_fmt(thread_id, sizeof thread_id, "%s", (const char *)sqlite3_column_text(st, 1)) <
            0) {
            rc = rs_err_set(err, -ENAMETOOLONG, "thread id '%.64s...' is longer than 64 characters",
                            (const char *)sqlite3_column_text(st, 1));
            sq_stmt_done(b, st);
            return rc;
        }
        sq_stmt_done(b, st);
        if ((rc = sq_thread_reindex(b, thread_id, key, err)))
            return rc;
    }
}

/* Reservations whose holder died (or is a zombie, or whose pid now names another process). */
static void clear_stale_holds(rs_backend *b)
{
    sqlite3_stmt *st;
    if (sq_stmt_get(b, "SELECT DISTINCT pid, started FROM runfs_hold", &st, NULL))
        return;
    struct {
        long pid;
        int64_t started;
    } dead[32];
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
        if (sq_step(b, NULL, NULL, "reservation",
                    "DELETE FROM runfs_hold WHERE pid = ? AND "
                    "started = ?",
                    "ii", (int64_t)dead[i].pid, dead[i].started) < 0)
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

/* ---- pinning: a mount's store is the file it first opened ---- */

typedef struct sq_pin {
    char *key; /* pin_key of the path */
    dev_t dev;
    ino_t ino;
} sq_pin;

/* Every path this process pinned, under pin_lock. Kept for the process's life: a pin
 * outlives the connections that made it, so that a later open of the path finds the file. */
static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static sq_pin *pins;
static size_t n_pins, pins_cap;

/* A name for path that outlives the file: its directory's real path and its own name. */
static char *pin_key(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    char *real = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    rs_buf key = RS_BUF_INIT;
    int rc = real ? rs_buf_addf(&key, "%s/%s", real, slash ? slash + 1 : path) : -ENOENT;
    free(real);
    return rc ? NULL : rs_buf_detach(&key, NULL);
}

/* The pin of key: 1 with dev/ino when this process opened it before, 0 when not; with
 * record, a missing pin becomes dev/ino (a racing first open keeps the earlier one), or
 * -ENOMEM. */
static int pin_find(const char *key, int record, dev_t *dev, ino_t *ino)
{
    int rc = 0;
    pthread_mutex_lock(&pin_lock);
    size_t i = 0;
    while (i < n_pins && strcmp(pins[i].key, key) != 0)
        i++;
    if (i < n_pins) {
        *dev = pins[i].dev;
        *ino = pins[i].ino;
        rc = 1;
    } else if (record) {
        char *copy = strdup(key);
        if (!copy || rs_array_grow(&pins, &pins_cap, n_pins + 1, sizeof *pins)) {
            free(copy);
            rc = -ENOMEM;
        } else {
            pins[n_pins++] = (sq_pin){.key = copy, .dev = *dev, .ino = *ino};
        }
    }
    pthread_mutex_unlock(&pin_lock);
    return rc;
}

/* Is b->path still the pinned file (its stat in *st)? Every check says it in these words:
 * a new pool connection is as likely as a write to be the one that finds out. */
static int pin_same_file(rs_backend *b, struct stat *st, rs_err *err)
{
    if (stat(b->path, st) != 0)
        return rs_err_set(err, -EIO,
                          "the store file %s was removed under the mount: "
                          "writes are refused so that none is lost",
                          b->path);
    if (st->st_dev != b->pin_dev || st->st_ino != b->pin_ino)
        return rs_err_set(err, -EIO,
                          "the store file %s was replaced under the mount: "
                          "writes are refused so that none lands in another file",
                          b->path);
    return 0;
}

/* Is b->path still the pinned file, whole? Called inside every write transaction. */
static int pin_check(rs_backend *b, rs_err *err)
{
    struct stat st;
    char wal[4096];
    int rc = pin_same_file(b, &st, err);
    if (rc)
        return rc;
    if (st.st_size < 512)
        return rs_err_set(err, -EIO,
                          "the store file %s was truncated under the mount: "
                          "writes are refused",
                          b->path);
    if (rs_fmt(wal, sizeof wal, "%s-wal", b->path) < 0)
        return rs_err_set(err, -ENAMETOOLONG, "the store's path is too long");
    if (stat(wal, &st) != 0)
        return rs_err_set(err, -EIO,
                          "the store's write-ahead log %s was removed under the "
                          "mount: writes are refused so that none is lost",
                          wal);
    return 0;
}

/* Before opening a pinned store: only the process's first open of it may create it; a
 * later one must find the same file there. */
static int pin_open(rs_backend *b, int *may_create, rs_err *err)
{
    char *key = pin_key(b->path);
    if (!key)
        return rs_err_set(err, -ENOENT, "cannot resolve the directory of %s", b->path);
    int found = pin_find(key, 0, &b->pin_dev, &b->pin_ino);
    free(key);
    *may_create = !found;
    struct stat st;
    return found ? pin_same_file(b, &st, err) : 0;
}

/* After the first open: the file it found or made is the pinned one. */
static int pin_record(rs_backend *b, rs_err *err)
{
    struct stat st;
    char *key = pin_key(b->path);
    if (!key || stat(b->path, &st) != 0) {
        free(key);
        return rs_err_set(err, -EIO, "the store file %s vanished while it was opened", b->path);
    }
    b->pin_dev = st.st_dev;
    b->pin_ino = st.st_ino;
    int rc = pin_find(key, 1, &b->pin_dev, &b->pin_ino);
    free(key);
    return rc < 0 ? rs_err_set(err, rc, "out of memory") : 0;
}

/* ---- checking what is in the file ---- */

/* A store runfs can use: run_events with DeerFlow's columns, side tables of a layout this
 * build knows. names: schema_names'. */
static int schema_check(rs_backend *b, const rs_buf *names, rs_err *err)
{
    if (!schema_has(names, "table", "run_events"))
        return rs_err_set(err, -EINVAL,
                          "%s has no run_events table: it is not a run event "
                          "store",
                          b->path);
    for (size_t i = 0; i < sizeof rs_schema_columns / sizeof *rs_schema_columns; i++)
        if (!schema_has(names, "column", rs_schema_columns[i]))
            return rs_err_set(err, -EINVAL,
                              "%s: run_events has no column %s (renamed or "
                              "dropped?): runfs cannot use this schema",
                              b->path, rs_schema_columns[i]);
    if (!schema_has(names, "table", "runfs_meta"))
        return 0;
    int64_t layout = 1; /* layout 1 did not say so */
    int rc = sq_int(b, "SELECT value FROM main.runfs_meta WHERE key = 'layout'", NULL, NULL,
                    &layout, NULL, err);
    if (rc)
        return rc;
    if (layout > RS_SCHEMA_LAYOUT)
        return rs_err_set(err, -EINVAL,
                          "%s: runfs side tables of layout %lld, this runfs "
                          "reads up to layout %d (a newer runfs wrote them): not opened",
                          b->path, (long long)layout, RS_SCHEMA_LAYOUT);
    return 0;
}

/* ---- read-only: the byte logs kept in memory ---- */

static const char *const mem_tables[] = {
    "runfs_thread", "runfs_run", "runfs_owner", "runfs_mark", "runfs_meta",
};

static int is_mem_table(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof mem_tables / sizeof *mem_tables; i++)
        if (strlen(mem_tables[i]) == len && memcmp(mem_tables[i], name, len) == 0)
            return 1;
    return 0;
}

/* Run sql (built in b->sql) on the connection's TEMP side. */
static int mem_exec(rs_backend *b, const char *sql, rs_err *err)
{
    char *msg = NULL;
    int src = sqlite3_exec(b->db, sql, NULL, NULL, &msg);
    if (src == SQLITE_OK)
        return 0;
    int rc = rs_err_set(err, -EIO, "cannot index %s in memory: %s", b->path,
                        msg ? msg : sqlite3_errstr(src));
    sqlite3_free(msg);
    return rc;
}

/* One statement of the schema, for the TEMP copy: runfs's tables (the byte logs always,
 * the others when the file lacks them) as TEMP tables, which shadow the file's; their
 * index and seed rows; nothing of DeerFlow's own tables, indexes or triggers. The file's
 * layout: logs of another layout are built afresh, and so is everything of layout 1. */
static int mem_statement(rs_backend *b, const char *sql, size_t len, int64_t layout, rs_err *err)
{
    static const char create[] = "CREATE TABLE IF NOT EXISTS ";
    rs_buf *q = &b->sql;
    rs_buf_reset(q);
    if (strncmp(sql, "INSERT OR IGNORE INTO runfs_", 28) == 0 ||
        strncmp(sql, "CREATE INDEX IF NOT EXISTS runfs_", 33) == 0)
        return rs_buf_add(q, sql, len) ? rs_err_set(err, -ENOMEM, "out of memory")
                                       : mem_exec(b, q->buf, err);
    if (len <= sizeof create - 1 || memcmp(sql, create, sizeof create - 1) != 0)
        return 0;
    const char *name = sql + sizeof create - 1;
    size_t nlen = strcspn(name, " (\n");
    char table[64];
    if (rs_fmt(table, sizeof table, "%.*s", (int)nlen, name) < 0) /* runfs's own names */
        return rs_err_set(err, -ENAMETOOLONG, "table name too long");
    int in_file, rc = table_exists(b, table, &in_file, err);
    int logs = is_mem_table(name, nlen);
    if (logs ? layout < RS_SCHEMA_LOGS : layout == 1)
        in_file = 0; /* an older layout's tables: built afresh, in this layout */
    if (rc || strncmp(table, "runfs_", 6) != 0 || (!logs && in_file))
        return rc;
    if (rs_buf_addstr(q, "CREATE TEMP TABLE ") || rs_buf_add(q, name, len - (size_t)(name - sql)))
        return rs_err_set(err, -ENOMEM, "out of memory");
    if ((rc = mem_exec(b, q->buf, err)) || !logs || !in_file)
        return rc;
    /* What the file has indexed is kept; only what it lacks is indexed now. */
    rs_buf_reset(q);
    if (rs_buf_addf(q, "INSERT INTO temp.%s SELECT * FROM main.%s", table, table))
        return rs_err_set(err, -ENOMEM, "out of memory");
    return mem_exec(b, q->buf, err);
}

/* Each statement of sql in turn through mem_statement (a trigger is passed over whole). */
static int mem_script(rs_backend *b, const char *sql, int64_t layout, rs_err *err)
{
    const char *p = sql;
    while (*p) {
        while (*p == ' ' || *p == '\n')
            p++;
        if (!*p)
            break;
        int trigger = strncmp(p, "CREATE TRIGGER", 14) == 0;
        const char *end = strstr(p, trigger ? "END;\n" : ";\n");
        end = end ? end + (trigger ? 5 : 2) : p + strlen(p);
        int rc = trigger ? 0 : mem_statement(b, p, (size_t)(end - p), layout, err);
        if (rc)
            return rc;
        p = end;
    }
    return 0;
}

/* An older DeerFlow file without the high-water table: a TEMP one, backfilled. */
static int mem_hwm(rs_backend *b, rs_err *err)
{
    static const char create[] = "CREATE TABLE";
    rs_buf *q = &b->sql;
    rs_buf_reset(q);
    if (rs_buf_addstr(q, "CREATE TEMP TABLE") ||
        rs_buf_addstr(q, rs_schema_hwm_sql + sizeof create - 1))
        return rs_err_set(err, -ENOMEM, "out of memory");
    return mem_exec(b, q->buf, err);
}

/* The file's count of rows changed in place or deleted (runfs_forget_updated and
 * runfs_count_deleted keep it); *n -1 for a file without it (runfs never opened it
 * read-write, or an older build did). */
static int file_rewrites(rs_backend *b, int64_t *n, rs_err *err)
{
    int found = 0;
    *n = -1;
    if (b->layout < RS_SCHEMA_LOGS)
        return 0;
    int rc = sq_int(b, "SELECT value FROM main.runfs_meta WHERE key = 'rewrites'", NULL, NULL, n,
                    &found, err);
    if (!rc && !found)
        *n = -1;
    return rc;
}

/* What a reader's copy of the thread's logs (or of the whole file when thread_id is NULL)
 * stands on: the file's count of rows changed in place; in a file without one, the thread's
 * rows up to the highest id the copy holds, summed (ids, seqs, lengths, owners): an UPDATE
 * or DELETE there moves it, rows added above do not. Costs a pass over the thread's rows,
 * so only where the file keeps no count. */
static int mem_fingerprint(rs_backend *b, const char *thread_id, char *out, size_t size,
                           rs_err *err)
{
    int64_t n;
    int rc = file_rewrites(b, &n, err);
    if (rc || n >= 0 || !thread_id) {
        return rc ? rc : rs_fmt(out, size, "%lld", (long long)n) < 0 ? -EOVERFLOW : 0;
    }
    sqlite3_stmt *st;
    rc = sq_step(b, &st, err, "refresh",
                 "SELECT count(*), coalesce(max(id), 0), total(id), total(seq), "
                 "total(length(content) + length(event_metadata) + length(run_id) + "
                 "length(event_type) + length(category) + length(created_at) + "
                 "coalesce(length(user_id), -1)) FROM run_events WHERE thread_id = ?1 AND id <= "
                 "coalesce((SELECT max(e.id) FROM run_events e WHERE e.thread_id = ?1 AND e.seq "
                 "<= (SELECT last_seq FROM runfs_thread WHERE thread_id = ?1)), 0)",
                 "t", thread_id);
    if (rc < 0)
        return rc;
    /* The sums hashed: a state fits in a few bytes. */
    uint64_t h = RS_HASH_INIT;
    for (int i = 0; i < 5; i++) {
        double v = sqlite3_column_double(st, i);
        h = rs_hash(h, &v, sizeof v);
    }
    sq_stmt_done(b, st);
    return rs_fmt(out, size, "-1 %016llx", (unsigned long long)h) < 0 ? -EOVERFLOW : 0;
}

/* A read-only store whose byte logs are missing, of another layout or behind for a thread
 * in use: TEMP copies of them (empty where the file has none), in memory, for this
 * connection; threads are indexed into them at their first use (sq_thread_ready). */
static int mem_index(rs_backend *b, int64_t layout, rs_err *err)
{
    sq_read_end(b);
    int rc = sq_exec(b, "BEGIN", err);
    if (rc)
        return rc;
    /* Layout 1 kept seals without an owner column: they are read through a copy. */
    int has_hwm = 1;
    if ((rc = mem_script(b, rs_schema_sql, layout, err)) ||
        (layout == 1 &&
         (rc = mem_exec(b,
                        "INSERT INTO temp.runfs_seal (thread_id, run_id, owner, state, "
                        "upper_seq, event_count, terminal_seq, digest, error, sealed_at) "
                        "SELECT thread_id, run_id, coalesce(user_id, ''), state, upper_seq, "
                        "event_count, terminal_seq, digest, error, sealed_at FROM "
                        "main.runfs_seal",
                        err))) ||
        (rc = table_exists(b, "run_event_thread_seq", &has_hwm, err)) ||
        (!has_hwm && (rc = mem_hwm(b, err)))) {
        sqlite3_exec(b->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    if ((rc = mem_fingerprint(b, NULL, b->mem_taken, sizeof b->mem_taken, err)) ||
        (rc = sq_exec(b, "COMMIT", err)))
        return rc;
    b->mem = 1;
    return 0;
}

/* ---- a thread indexed at its first use ---- */

static size_t ready_slot(const rs_backend *b, const char *thread_id)
{
    size_t i = (size_t)(rs_hash(RS_HASH_INIT, thread_id, strlen(thread_id)) % SQ_READY_SLOTS);
    while (b->ready[i][0] && strcmp(b->ready[i], thread_id) != 0)
        i = (i + 1) % SQ_READY_SLOTS;
    return i;
}

static void ready_clear(rs_backend *b)
{
    for (size_t i = 0; i < SQ_READY_SLOTS; i++)
        b->ready[i][0] = '\0';
    b->n_ready = 0;
}

/* Remember the thread as caught up (the set starts over when three quarters full). */
static void ready_add(rs_backend *b, const char *thread_id)
{
    if (strlen(thread_id) > RS_ID_MAX)
        return;
    if (b->n_ready >= SQ_READY_SLOTS * 3 / 4)
        ready_clear(b);
    size_t i = ready_slot(b, thread_id);
    if (!b->ready[i][0]) {
        memcpy(b->ready[i], thread_id, strlen(thread_id) + 1); /* length checked above */
        b->n_ready++;
    }
}

/* A reader's copy of one thread's logs forgotten (indexed again should it be used again). */
static int mem_drop(void *ctx, const char *thread_id)
{
    static const char *const drop[] = {
        "DELETE FROM temp.runfs_mark WHERE log_key = -?1 OR log_key IN (SELECT run_key FROM "
        "temp.runfs_run WHERE thread_key = ?1)",
        "DELETE FROM temp.runfs_owner WHERE thread_key = ?1",
        "DELETE FROM temp.runfs_run WHERE thread_key = ?1",
        "DELETE FROM temp.runfs_thread WHERE thread_key = ?1",
    };
    rs_backend *b = ctx;
    int64_t key = 0;
    int found = 0;
    int rc = sq_int(b, "SELECT thread_key FROM temp.runfs_thread WHERE thread_id = ?", thread_id,
                    NULL, &key, &found, NULL);
    for (size_t i = 0; !rc && found && i < sizeof drop / sizeof *drop; i++) {
        int src = sq_step(b, NULL, NULL, "forget", drop[i], "i", key);
        rc = src < 0 ? src : 0;
    }
    return rc;
}

/* Read-only: index the thread into this connection's TEMP copies, which hold at most
 * SQ_MEM_ROWS rows' worth of threads (the oldest go first). */
static int mem_catch_up(rs_backend *b, const char *thread_id, rs_err *err)
{
    int rc = b->mem ? 0 : mem_index(b, b->layout, err);
    sq_read_end(b);
    if (rc || (rc = sq_exec(b, "BEGIN", err)))
        return rc;
    int64_t rows = 0;
    char taken[sizeof b->mem_taken];
    if ((rc = sq_thread_catch_up(b, thread_id, err)) ||
        (rc = sq_int(b, "SELECT count FROM runfs_thread WHERE thread_id = ?", thread_id, NULL,
                     &rows, NULL, err)) ||
        (rc = mem_fingerprint(b, thread_id, taken, sizeof taken, err)) ||
        (rc = sq_exec(b, "COMMIT", err))) {
        sqlite3_exec(b->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    rs_mem_thread *t = rs_mem_find(&b->mem_list, thread_id, 1);
    size_t dropped = 0;
    if (!t)
        return rs_err_set(err, -ENOMEM, "out of memory");
    if (rs_fmt(t->state, sizeof t->state, "%s", taken) < 0)
        return rs_err_set(err, -EOVERFLOW, "a thread's state does not fit");
    if ((rc = rs_mem_trim(&b->mem_list, t, rows, SQ_MEM_ROWS, mem_drop, b, &dropped)))
        rc = rs_err_set(err, rc, "cannot forget a thread indexed in memory");
    if (dropped)
        ready_clear(b);
    return rc;
}

/* Read-only: the copy taken when this connection first needed one lacks what a writer made
 * since without rows to index it from, threads and runs made by mkdir: the file's empty
 * ones the copy lacks are added (thread_id NULL: every thread, for a listing). */
static int mem_add_empty(rs_backend *b, const char *thread_id, rs_err *err)
{
    static const char *const add[] = {
        "INSERT INTO temp.runfs_thread (thread_id, ctime_ns, mtime_ns) SELECT m.thread_id, "
        "m.ctime_ns, m.mtime_ns FROM main.runfs_thread m WHERE (?1 IS NULL OR m.thread_id = "
        "?1) AND m.count = 0 AND m.dirty = 0 AND NOT EXISTS (SELECT 1 FROM temp.runfs_thread t "
        "WHERE t.thread_id = m.thread_id) AND NOT EXISTS (SELECT 1 FROM run_events e WHERE "
        "e.thread_id = m.thread_id)",
        "INSERT INTO temp.runfs_run (thread_key, run_id, ctime_ns, mtime_ns) SELECT "
        "t.thread_key, r.run_id, r.ctime_ns, r.mtime_ns FROM main.runfs_thread m JOIN "
        "main.runfs_run r ON r.thread_key = m.thread_key JOIN temp.runfs_thread t ON "
        "t.thread_id = m.thread_id WHERE (?1 IS NULL OR m.thread_id = ?1) AND r.count = 0 AND "
        "NOT EXISTS (SELECT 1 FROM temp.runfs_run x WHERE x.thread_key = t.thread_key AND "
        "x.run_id = r.run_id) AND NOT EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = "
        "m.thread_id AND e.run_id = r.run_id)",
    };
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof add / sizeof *add; i++) {
        int src = sq_step(b, NULL, err, "refresh", add[i], "t", thread_id);
        rc = src < 0 ? src : 0;
    }
    return rc;
}

/* Read-only: the thread's copy dropped (indexed again from its rows at this use) when rows
 * went since it was taken: the file has no logs of it and no rows are left, the file's
 * logs are marked for recomputing, or their count is not the copy's plus the rows above
 * the copy. */
static int mem_drop_stale(rs_backend *b, const char *thread_id, rs_err *err)
{
    sqlite3_stmt *st;
    int rc = sq_step(b, &st, err, "refresh",
                     "SELECT m.thread_key IS NOT NULL, m.count, m.last_seq, m.dirty, t.count, "
                     "t.last_seq, EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = ?1) "
                     "FROM temp.runfs_thread t LEFT JOIN main.runfs_thread m ON m.thread_id = "
                     "t.thread_id WHERE t.thread_id = ?1",
                     "t", thread_id);
    if (rc <= 0)
        return rc;
    int in_file = sqlite3_column_int(st, 0), has_rows = sqlite3_column_int(st, 6);
    int64_t count = sqlite3_column_int64(st, 1), last = sqlite3_column_int64(st, 2);
    int64_t dirty = sqlite3_column_int64(st, 3), copy_count = sqlite3_column_int64(st, 4);
    int64_t copy_last = sqlite3_column_int64(st, 5);
    sq_stmt_done(b, st);
    rc = 0;
    int stale = in_file ? dirty != 0 : !has_rows;
    /* A row changed in place or deleted since the copy was made (the copy may be of the
     * file's logs as they were then, or indexed here). */
    const rs_mem_thread *t = rs_mem_find(&b->mem_list, thread_id, 0);
    char now[sizeof b->mem_taken];
    if (!stale && (rc = mem_fingerprint(b, thread_id, now, sizeof now, err)))
        return rc;
    if (!stale)
        stale = strcmp(now, t ? t->state : b->mem_taken) != 0;
    if (in_file && !stale && (count != copy_count || last != copy_last)) {
        if ((rc = sq_step(b, &st, err, "refresh",
                          "SELECT count(*) FROM run_events WHERE thread_id = ? AND seq > ?", "ti",
                          thread_id, copy_last)) < 0)
            return rc;
        stale = count != copy_count + sqlite3_column_int64(st, 0);
        sq_stmt_done(b, st);
        rc = 0;
    }
    if (stale && (rc = mem_drop(b, thread_id)))
        rc = rs_err_set(err, rc, "cannot forget a thread indexed in memory");
    return rc;
}

/* Read-only, a file without runfs's logs of this layout: the thread's copy dropped when its
 * rows changed in place or went since it was indexed (see mem_fingerprint). */
static int mem_drop_changed(rs_backend *b, const char *thread_id, rs_err *err)
{
    const rs_mem_thread *t = rs_mem_find(&b->mem_list, thread_id, 0);
    char now[sizeof b->mem_taken];
    int rc = t ? mem_fingerprint(b, thread_id, now, sizeof now, err) : 0;
    if (rc || !t || strcmp(now, t->state) == 0)
        return rc;
    if ((rc = mem_drop(b, thread_id)))
        rc = rs_err_set(err, rc, "cannot forget a thread indexed in memory");
    return rc;
}

/* A listing or count on a read-only copy (once per data_version): threads gone from the
 * file's logs and from the rows dropped, empty ones the file gained added. */
int sq_mem_refresh(rs_backend *b, rs_err *err)
{
    int64_t version = -1;
    int rc = b->read_only && b->mem && b->layout >= RS_SCHEMA_LOGS ? sq_look(b, &version, err) : 0;
    if (rc || version < 0 || version == b->mem_version)
        return rc;
    for (;;) {
        sqlite3_stmt *st;
        rc = sq_step(b, &st, err, "refresh",
                     "SELECT t.thread_id FROM temp.runfs_thread t WHERE NOT EXISTS (SELECT 1 "
                     "FROM run_events e WHERE e.thread_id = t.thread_id) AND NOT EXISTS (SELECT "
                     "1 FROM main.runfs_thread m WHERE m.thread_id = t.thread_id AND m.dirty = "
                     "0) LIMIT 1",
                     "");
        if (rc <= 0)
            break;
        char id[RS_ID_MAX + 1];
        if (rs_fmt(id, sizeof id, "%s", (const char *)sqlite3_column_text(st, 0)) < 0) {
            rc = rs_err_set(err, -ENAMETOOLONG, "thread id '%.64s...' is longer than 64 characters",
                            (const char *)sqlite3_column_text(st, 0));
            sq_stmt_done(b, st);
            return rc;
        }
        sq_stmt_done(b, st);
        if ((rc = mem_drop(b, id)))
            return rs_err_set(err, rc, "cannot forget a thread indexed in memory");
    }
    if (rc < 0 || (rc = mem_add_empty(b, NULL, err)))
        return rc;
    b->mem_version = version;
    return 0;
}

int sq_thread_ready(rs_backend *b, const char *thread_id, rs_err *err)
{
    int64_t version = -1;
    int rc = sq_look(b, &version, err);
    if (rc)
        return rc;
    b->probed_version = version;
    if (version != b->ready_version) {
        ready_clear(b);
        b->ready_version = version;
    }
    if (b->ready[ready_slot(b, thread_id)][0])
        return 0;
    int refresh = b->read_only && b->mem && b->layout >= RS_SCHEMA_LOGS, behind = 0;
    int foreign = b->read_only && b->mem && b->layout < RS_SCHEMA_LOGS;
    if ((refresh && (rc = mem_drop_stale(b, thread_id, err))) ||
        (foreign && (rc = mem_drop_changed(b, thread_id, err))) ||
        (rc = sq_thread_behind(b, thread_id, &behind, err)))
        return rc;
    if (behind) {
        /* Under the same discipline as any write: inside the caller's transaction, else
         * one of its own under the write lock (or, read-only, in memory). */
        if (sq_in_write(b))
            rc = sq_thread_catch_up(b, thread_id, err);
        else if (b->read_only)
            rc = mem_catch_up(b, thread_id, err);
        else if (!(rc = sq_begin_quiet(b, err)) && (rc = sq_thread_catch_up(b, thread_id, err)))
            sq_rollback(b);
        else if (!rc)
            rc = sq_commit(b, err);
        if (rc)
            return rc;
    }
    refresh = b->read_only && b->mem && b->layout >= RS_SCHEMA_LOGS;
    if (refresh && (rc = mem_add_empty(b, thread_id, err)))
        return rc;
    ready_add(b, thread_id);
    return 0;
}

/* "file:" URI of a path, for opening read-only. SQLite's own read-only open (mode=ro): it
 * reads what other connections commit, through the WAL and its -shm index, and rides out
 * their checkpoints and a VACUUM; when nobody has the file open it creates the -shm (and an
 * empty -wal) beside it, as any reader does, and never writes the database itself.
 * immutable (with immutable set, or) on a file system mounted read-only: nobody can be
 * writing the file then, and SQLite could not create the -shm there. */
static int ro_uri(const char *path, int immutable, rs_buf *out)
{
    struct statvfs fs;
    immutable |= statvfs(path, &fs) == 0 && (fs.f_flag & ST_RDONLY);
    rs_buf_reset(out);
    int rc = rs_buf_addstr(out, "file:");
    for (const char *p = path; !rc && *p; p++)
        rc = strchr("%?#", *p) ? rs_buf_addf(out, "%%%02X", (unsigned char)*p)
                               : rs_buf_addch(out, *p);
    return rc ? rc : rs_buf_addstr(out, immutable ? "?immutable=1" : "?mode=ro");
}

/* A WAL file nobody has open, beside which this reader may not create the -shm (a
 * directory it cannot write): SQLite cannot read it read-only, so it is read as immutable,
 * which sees no writer that comes later (the README says so). -EACCES when
 * a -wal is there: then a writer has it, and reading past its WAL would be wrong. */
static int ro_immutable(rs_backend *b, const char *uri, rs_buf *ro, rs_err *err)
{
    char wal[4096];
    if (rs_fmt(wal, sizeof wal, "%s-wal", uri) < 0)
        return rs_err_set(err, -ENAMETOOLONG, "the store's path is too long");
    if (access(wal, F_OK) == 0)
        return rs_err_set(err, -EACCES,
                          "cannot read %s: its WAL index (-shm) is missing and this reader may "
                          "not create it",
                          uri);
    sqlite3_close_v2(b->db);
    b->db = NULL;
    int rc = ro_uri(uri, 1, ro);
    if (rc)
        return rs_err_set(err, -ENOMEM, "out of memory");
    if (sqlite3_open_v2(ro->buf, &b->db,
                        SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                        NULL) != SQLITE_OK)
        return rs_err_set(err, -EIO, "cannot open store %s: %s", uri,
                          b->db ? sqlite3_errmsg(b->db) : "out of memory");
    sqlite3_extended_result_codes(b->db, 1);
    sqlite3_busy_handler(b->db, sq_busy, b);
    b->immutable = 1;
    return 0;
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

/* The connection's pragmas: a writer's WAL (checkpointed by runfs, not at every commit) and
 * its sync level; a reader's temporary tables in memory; the page cache asked for. */
static int pragmas_set(rs_backend *b, const char *uri, const rs_options *opt, rs_err *err)
{
    char pragmas[200];
    (void)rs_fmt(pragmas, sizeof pragmas, /* constant words and a number: 200 bytes hold them */
                 opt->read_only ? "PRAGMA temp_store=MEMORY; PRAGMA foreign_keys=ON; "
                                : "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; "
                                  "PRAGMA foreign_keys=ON; PRAGMA wal_autocheckpoint=0; ",
                 opt->sync_full ? "FULL" : "NORMAL");
    if (opt->cache_kib) {
        size_t len = strlen(pragmas);
        (void)rs_fmt(pragmas + len, sizeof pragmas - len, "PRAGMA cache_size=-%zu;",
                     opt->cache_kib < INT32_MAX ? opt->cache_kib : (size_t)INT32_MAX);
    }
    b->sync_full = opt->sync_full;
    char *msg = NULL;
    int src = sqlite3_exec(b->db, pragmas, NULL, NULL, &msg);
    if (src != SQLITE_OK) {
        int rc = rs_err_set(err, sq_fail(b, sqlite3_extended_errcode(b->db), NULL, "open"),
                            "cannot open store %s: %s", uri, msg ? msg : sqlite3_errstr(src));
        sqlite3_free(msg);
        return rc;
    }
    return 0;
}

/* Create runfs's side tables (and DeerFlow's in a new file), or bring a store of an earlier
 * layout up to this one, in one transaction under the write lock. layout: what the store
 * had (0: none). */
static int schema_setup(rs_backend *b, const char *uri, int64_t layout, rs_err *err)
{
    int rc = begin_locked(b, err);
    if (rc)
        return rc;
    char *msg = NULL;
    int has_hwm;
    if ((rc = table_exists(b, "run_event_thread_seq", &has_hwm, err)))
        goto fail;
    int migrate = layout == 1, sizes = layout == 1 || layout == 2;
    int canon_move = layout > 0 && layout < 5;
    int64_t stale = 0;
    if ((rc = sq_int(b, rs_schema_stale_triggers_sql, NULL, NULL, &stale, NULL, err)))
        goto fail;
    int src = migrate ? sqlite3_exec(b->db, rs_schema_migrate_sql, NULL, NULL, &msg) : SQLITE_OK;
    if (src == SQLITE_OK && stale)
        src = sqlite3_exec(b->db, rs_schema_stale_drop_sql, NULL, NULL, &msg);
    if (src == SQLITE_OK && canon_move)
        src = sqlite3_exec(b->db, rs_schema_canon_drop_sql, NULL, NULL, &msg);
    if (src == SQLITE_OK)
        src = sqlite3_exec(b->db, rs_schema_sql, NULL, NULL, &msg);
    if (src == SQLITE_OK && migrate)
        src = sqlite3_exec(b->db, rs_schema_migrate_copy_sql, NULL, NULL, &msg);
    if (src == SQLITE_OK && canon_move)
        src = sqlite3_exec(b->db, rs_schema_canon_move_sql, NULL, NULL, &msg);
    if (src == SQLITE_OK && !has_hwm)
        src = sqlite3_exec(b->db, rs_schema_hwm_sql, NULL, NULL, &msg);
    if (src == SQLITE_OK)
        src = sqlite3_exec(b->db, rs_schema_terminal_sql, NULL, NULL, &msg);
    if (src != SQLITE_OK) {
        rc = rs_err_set(err, sq_fail(b, src, NULL, "schema"), "cannot set up store %s: %s", uri,
                        msg ? msg : sqlite3_errstr(src));
        sqlite3_free(msg);
        goto fail;
    }
    if ((sizes && (rc = add_columns3(b, err))) || (rc = add_feed(b, err)) ||
        (rc = sq_search_triggers(b, err)) || (rc = add_leaves(b, err)) ||
        (sizes && (rc = reindex_all(b, err))) ||
        (rc = sq_step(b, NULL, err, "schema",
                      "UPDATE runfs_meta SET value = ? WHERE key = 'layout'", "i",
                      (int64_t)RS_SCHEMA_LAYOUT)) < 0)
        goto fail;
    rc = 0;
    clear_stale_holds(b);
    if ((rc = sq_commit(b, err)))
        return rc;
    b->layout = RS_SCHEMA_LAYOUT;
    return 0;
fail:
    sq_rollback(b);
    return rc;
}

static int sq_open(rs_backend **out, const char *uri, const rs_options *opt,
                   const rs_policy *policy, rs_err *err)
{
    rs_backend *b = calloc(1, sizeof *b);
    if (!b)
        return rs_err_set(err, -ENOMEM, "out of memory");
    b->policy = policy;
    b->sql = (rs_buf)RS_BUF_INIT;
    b->seen_version = -1;
    b->last_put.version = -1;
    b->quiet_cookie = -1;
    b->canon_kept.version = -1;
    b->canon_seen.version = -1;
    b->ready_version = -1;
    b->rewrites_kept.version = -1;
    b->unindexed_version = -1;
    b->pid = (long)getpid();
    b->started = rs_process_start(b->pid);
    b->read_only = opt->read_only;
    b->owners_apart = opt->owners_apart;
    b->progress = opt->progress;
    b->progress_ctx = opt->progress_ctx;
    b->path = strdup(uri);
    rs_buf ro = RS_BUF_INIT, names = RS_BUF_INIT;
    int rc = -ENOMEM;
    if (!b->path)
        goto fail;
    struct stat st;
    /* SQLite would say only "unable to open database file". */
    if (stat(uri, &st) == 0 && S_ISDIR(st.st_mode)) {
        rc = rs_err_set(err, -EISDIR,
                        "%s is a directory, not a store: give a SQLite file or a "
                        "postgresql:// URI",
                        uri);
        goto fail;
    }
    int may_create = !opt->read_only;
    if (opt->pin_file && !opt->read_only && (rc = pin_open(b, &may_create, err)))
        goto fail;
    b->pinned = opt->pin_file && !opt->read_only;
    if (!may_create && stat(uri, &st) != 0) {
        rc = rs_err_set(err, -ENOENT, "no store at %s: %s%s", uri, strerror(errno),
                        opt->read_only ? " (reading never creates one)" : "");
        goto fail;
    }
    /* A store runfs creates is its owner's alone (0600, and so are the -wal and -shm files
     * SQLite makes beside it with its mode): the rows of every owner are in it. */
    if (may_create) {
        int fd = open(uri, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
    }
    int flags = SQLITE_OPEN_NOMUTEX;
    if (opt->read_only) {
        if ((rc = ro_uri(uri, 0, &ro)))
            goto fail;
        flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
    } else {
        flags |= SQLITE_OPEN_READWRITE | (may_create ? SQLITE_OPEN_CREATE : 0);
    }
    int src = sqlite3_open_v2(opt->read_only ? ro.buf : uri, &b->db, flags, NULL);
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
    /* Before any pragma writes: a database, and one runfs can use (a new, empty file gets
     * the schema below). */
    int64_t objects = 0;
    src = sqlite3_exec(b->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
    if (opt->read_only && ((src & 0xff) == SQLITE_READONLY || (src & 0xff) == SQLITE_CANTOPEN) &&
        (rc = ro_immutable(b, uri, &ro, err)))
        goto fail;
    if (opt->read_only && b->immutable)
        src = sqlite3_exec(b->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
    if ((src & 0xff) == SQLITE_NOTADB) {
        rc = rs_err_set(err, -EINVAL, "%s is not a SQLite database", uri);
        goto fail;
    }
    if ((rc = schema_names(b, &names, &objects, err)))
        goto fail;
    if ((objects || opt->read_only) && (rc = schema_check(b, &names, err)))
        goto fail;
    if ((rc = pragmas_set(b, uri, opt, err)))
        goto fail;
    if ((b->pinned && may_create && (rc = pin_record(b, err))) ||
        (rc = db_lock_get(uri, &b->lock, err)))
        goto fail;
    if (!opt->read_only)
        sqlite3_wal_hook(b->db, wal_hook, b);
    /* Most opens (a mount's pool, the CLI) find the schema in place and nothing to index:
     * they take no write lock. */
    int ready = 0, has_holds = 0;
    int64_t layout = 0;
    if ((rc = setup_needed(b, &names, &ready, &has_holds, &layout, err)))
        goto fail;
    /* A writer's set-up makes it where it is missing; a reader reads what the file has. */
    b->thread_counts = !opt->read_only || schema_has(&names, "table", "runfs_rewritten");
    rs_buf_release(&names);
    if (layout > RS_SCHEMA_LAYOUT) {
        rc = rs_err_set(err, -EINVAL,
                        "store %s has runfs side tables of layout %lld, newer "
                        "than this runfs reads (%d): use a newer runfs",
                        uri, (long long)layout, RS_SCHEMA_LAYOUT);
        goto fail;
    }
    b->layout = layout;
    if (opt->read_only) {
        if (!ready && (rc = mem_index(b, layout, err)))
            goto fail;
        rs_buf_release(&ro);
        goto done;
    }
    if (ready && !has_holds)
        goto done;
    if ((rc = schema_setup(b, uri, layout, err)))
        goto fail;
done:
    b->progress = NULL;
    *out = b;
    return 0;
fail:
    db_lock_put(b->lock);
    stmt_cache_clear(b);
    if (b->db)
        sqlite3_close_v2(b->db);
    rs_buf_release(&b->sql);
    rs_buf_release(&ro);
    rs_buf_release(&names);
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
        (void)rs_fmt(sql, sizeof sql, "DELETE FROM runfs_hold WHERE pid = %ld", b->pid); /* fits */
        sqlite3_exec(b->db, sql, NULL, NULL, NULL);
        sqlite3_wal_checkpoint_v2(b->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    }
    sqlite3_close_v2(b->db);
    db_lock_put(b->lock);
    rs_buf_release(&b->sql);
    rs_mem_release(&b->mem_list);
    free(b->path);
    free(b);
}

static int sq_data_version(rs_backend *b, int64_t *version)
{
    int rc = sq_int(b, "PRAGMA data_version", NULL, NULL, version, NULL, NULL);
    if (!rc)
        b->probed_version = *version;
    return rc;
}

/* The wal-index header's change counter (walformat.html: iChange, a u32 at byte 8 of the
 * -shm file, in the machine's byte order, that every commit moves and nothing else does)
 * less the commits this process's connections made under the write lock: read under that
 * lock, where each of those commits has moved both or neither, so the difference moves
 * with the commits of other processes (and of this one's connections made without the
 * lock) only. -1: not known (the file is not in WAL mode, the -shm cannot be read or is
 * not the one first read); SQ_TAG_BUSY: a connection of this process holds the lock (a
 * write transaction is open, for as long as an import or a redaction takes), which the
 * probe does not wait for. */
#define SQ_TAG_BUSY (-2)
static int64_t wal_foreign_tag(sq_db_lock *l)
{
    int64_t tag = -1;
    if (pthread_mutex_trylock(&l->mutex) != 0)
        return SQ_TAG_BUSY;
    if (l->db_fd < 0)
        l->db_fd = open(l->path, O_RDONLY | O_CLOEXEC);
    /* The file header's read and write versions are 2 while the file is in WAL mode (a
     * file taken out of it is checkpointed and rewritten with 1 first). */
    unsigned char head[20];
    struct stat st;
    rs_buf shm = RS_BUF_INIT;
    int wal = l->db_fd >= 0 && pread(l->db_fd, head, sizeof head, 0) == (ssize_t)sizeof head &&
              head[18] == 2 && head[19] == 2;
    if (wal && !l->shm_gone && rs_buf_addf(&shm, "%s-shm", l->path) == 0 &&
        stat(shm.buf, &st) == 0) {
        if (l->shm_fd < 0 && (l->shm_fd = open(shm.buf, O_RDONLY | O_CLOEXEC)) >= 0) {
            struct stat fst;
            if (fstat(l->shm_fd, &fst) == 0) {
                l->shm_dev = fst.st_dev;
                l->shm_ino = fst.st_ino;
            }
        }
        /* Another -shm in its place: this process's connections map the one first read,
         * and what the other says cannot be told from theirs. */
        if (l->shm_fd >= 0 && (st.st_dev != l->shm_dev || st.st_ino != l->shm_ino))
            l->shm_gone = 1;
        /* The header: iVersion 3007000, unused, iChange, isInit 1 (walformat.html). */
        uint32_t hdr[4];
        if (!l->shm_gone && l->shm_fd >= 0 &&
            pread(l->shm_fd, hdr, sizeof hdr, 0) == (ssize_t)sizeof hdr && hdr[0] == 3007000 &&
            ((const unsigned char *)hdr)[12] == 1)
            tag = (uint32_t)(hdr[2] - l->own_commits);
    }
    pthread_mutex_unlock(&l->mutex);
    rs_buf_release(&shm);
    return tag;
}

/* rs_store_foreign_version: moves when the tag above moves, or where it is not known, when
 * data_version does (which sets probed_version, as sq_rewrites wants after a probe). While
 * the lock is held, the tag and data_version last found are kept and the number does not
 * move: the next probe that reads the tag sees every commit since, so a change is told late,
 * never lost. A lock held across SQ_PROBE_BUSY_MAX probes in a row is answered by
 * data_version alone, which this process's commits move too (a sweep too many rather than
 * another process's commit unseen for as long as this one writes). */
#define SQ_PROBE_BUSY_MAX 10
static int sq_foreign_version(rs_backend *b, int64_t *version)
{
    int64_t dv;
    int rc = sq_data_version(b, &dv);
    if (rc)
        return rc;
    int64_t tag = b->immutable ? -1 : wal_foreign_tag(b->lock);
    if (tag == SQ_TAG_BUSY && b->foreign_probed && ++b->probe_busy < SQ_PROBE_BUSY_MAX) {
        *version = b->foreign_version;
        return 0;
    }
    b->probe_busy = 0;
    tag = tag == SQ_TAG_BUSY ? -1 : tag;
    int moved = !b->foreign_probed ||
                (tag >= 0 && b->foreign_tag >= 0 ? tag != b->foreign_tag : dv != b->foreign_dv);
    b->foreign_probed = 1;
    b->foreign_tag = tag;
    b->foreign_dv = dv;
    b->foreign_version += moved;
    *version = b->foreign_version;
    return 0;
}

/* Asked right after a look at data_version (a stat's log info, the hub's probe): the count
 * read at that look's version holds while no later look finds another and this connection
 * changed nothing, so the stats of a walk's files read it once, not once each. */
static int sq_rewrites(rs_backend *b, int64_t *n)
{
    int64_t changes = sqlite3_total_changes64(b->db);
    int keep = !sq_in_write(b);
    if (keep && b->rewrites_kept.version == b->probed_version && b->rewrites_kept.version >= 0 &&
        b->rewrites_kept.commits == b->commits && b->rewrites_kept.changes == changes) {
        *n = b->rewrites_kept.n;
        return 0;
    }
    int64_t version = b->probed_version;
    b->rewrites_kept.version = -1;
    /* A file without the count: any other connection's commit may have been one. */
    int rc = file_rewrites(b, n, NULL);
    if (rc || *n < 0)
        return rc ? rc : sq_data_version(b, n);
    if (keep)
        b->rewrites_kept = (sq_count_kept){*n, version, b->commits, changes};
    return 0;
}

/* runfs_rewritten's number of the thread, read in the look's snapshot as sq_rewrites is, so
 * the two agree; a file without the table answers with the file's count. */
static int sq_thread_rewrites(rs_backend *b, const char *thread_id, int64_t *n)
{
    if (!b->thread_counts)
        return sq_rewrites(b, n);
    int found = 0;
    int rc = sq_int(b, "SELECT at FROM main.runfs_rewritten WHERE thread_id = ?", thread_id, NULL,
                    n, &found, NULL);
    if (!rc && !found)
        *n = 0;
    return rc;
}

/* One writer at a time takes ids and commits: the highest id moves with every insert. */
static int sq_rows_added(rs_backend *b, int64_t *version)
{
    *version = 0;
    return sq_int(b, "SELECT coalesce(max(id), 0) FROM run_events", NULL, NULL, version, NULL,
                  NULL);
}

static int sq_size_get(rs_backend *b, const char *key, int64_t *size, int *found)
{
    return sq_int(b, "SELECT value FROM main.runfs_meta WHERE key = ?", key, NULL, size, found,
                  NULL);
}

/* Fresh sizes SIZE_ROWS to a statement: a statement a size was most of what keeping an
 * import's thousands cost. */
#define SIZE_ROWS 32
#define SIZE_VALUES "(?, ?)"
#define SIZE_VALUES_8 \
    SIZE_VALUES ", " SIZE_VALUES ", " SIZE_VALUES ", " SIZE_VALUES ", " SIZE_VALUES \
                ", " SIZE_VALUES ", " SIZE_VALUES ", " SIZE_VALUES
#define SIZE_ADD "INSERT OR REPLACE INTO main.runfs_meta (key, value) VALUES "

static int size_add(rs_backend *b, const rs_size_key *keys, size_t n)
{
    static const char one[] = SIZE_ADD SIZE_VALUES;
    static const char many[] = SIZE_ADD SIZE_VALUES_8 ", " SIZE_VALUES_8 ", " SIZE_VALUES_8
                                                      ", " SIZE_VALUES_8;
    int rc = 0;
    for (size_t i = 0; !rc && i < n;) {
        size_t k = n - i >= SIZE_ROWS ? SIZE_ROWS : 1;
        sqlite3_stmt *st;
        if ((rc = sq_stmt_get(b, k == SIZE_ROWS ? many : one, &st, NULL)))
            break;
        for (size_t j = 0; j < k; j++, i++) {
            /* Stepped before this returns: SQLite need not copy the keys. */
            sqlite3_bind_text(st, (int)j * 2 + 1, keys[i].key, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, (int)j * 2 + 2, keys[i].size);
        }
        int src = sqlite3_step(st);
        sq_stmt_done(b, st);
        if (src != SQLITE_DONE)
            rc = sq_fail(b, src, NULL, "size");
    }
    return rc;
}

/* Under the write lock, as every write is: a kept size is one small transaction. */
static int sq_size_put(rs_backend *b, const rs_size_key *keys, size_t n, int fresh)
{
    int rc = sq_begin_quiet(b, NULL);
    if (rc)
        return rc;
    if (fresh)
        rc = size_add(b, keys, n);
    for (size_t i = 0; !fresh && rc >= 0 && i < n; i++) {
        rc = sq_step(b, NULL, NULL, "size",
                     "DELETE FROM main.runfs_meta WHERE key >= ? AND key < ?", "tt", keys[i].lo,
                     keys[i].hi);
        if (rc >= 0)
            rc = sq_step(b, NULL, NULL, "size",
                         "INSERT INTO main.runfs_meta (key, value) VALUES (?, ?)", "ti",
                         keys[i].key, keys[i].size);
    }
    if (rc < 0) {
        sq_rollback(b);
        return rc;
    }
    return sq_commit(b, NULL);
}

static int sq_steps_get(rs_backend *b, const char *thread_id, const char *run_id, const char *kind,
                        rs_buf *out, int *found)
{
    sqlite3_stmt *st;
    *found = 0;
    /* A store no put has reached has no table: nothing kept, not a failure. */
    int rc = sq_step(b, &st, NULL, "steps",
                     "SELECT data FROM main.runfs_steps WHERE thread_id = ? AND run_id = ? AND "
                     "kind = ?",
                     "ttt", thread_id, run_id, kind);
    int64_t has = 1;
    if (rc < 0 &&
        sq_int(b, "SELECT count(*) FROM main.sqlite_master WHERE name = ?", "runfs_steps", NULL,
               &has, NULL, NULL) == 0 &&
        !has)
        *found = -1;
    if (rc != 1)
        return 0;
    const void *p = sqlite3_column_blob(st, 0);
    size_t n = (size_t)sqlite3_column_bytes(st, 0);
    rc = p ? rs_buf_add(out, p, n) : 0;
    *found = p && !rc;
    sq_stmt_done(b, st);
    return rc;
}

int sq_steps_forget(rs_backend *b, const rs_target *t, rs_err *err)
{
    int64_t has = 0;
    int rc = sq_int(b, "SELECT count(*) FROM main.sqlite_master WHERE name = ?", "runfs_steps",
                    NULL, &has, NULL, err);
    if (!rc && has)
        rc = sq_step(b, NULL, err, "steps",
                     "DELETE FROM main.runfs_steps WHERE thread_id = ?1 AND (?2 IS NULL OR "
                     "run_id = ?2)",
                     "tt", t->thread_id, t->run_id);
    return rc < 0 ? rc : 0;
}

/* Under the write lock, as every write is. The table is made here, so a store made before
 * kept step data gets it at its first keeping, and a store never diffed never has it. */
static int sq_steps_put(rs_backend *b, const rs_steps *v, const char (*kinds)[24], size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].len > INT_MAX)
            return -EFBIG;
    /* Quiet: runfs_steps has no trigger, and switching them on would expire the cursor of
     * the diff that keeps these (sq_begin). */
    int rc = sq_begin_quiet(b, NULL);
    if (rc)
        return rc;
    rc = sq_exec(b,
                 "CREATE TABLE IF NOT EXISTS main.runfs_steps (thread_id TEXT NOT NULL, run_id "
                 "TEXT NOT NULL, kind TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (thread_id, "
                 "run_id, kind))",
                 NULL);
    sqlite3_stmt *st = NULL;
    if (!rc)
        rc = sq_stmt_get(b,
                         "INSERT OR REPLACE INTO main.runfs_steps (thread_id, run_id, kind, data) "
                         "SELECT ?, ?, ?, ? WHERE (SELECT value FROM main.runfs_meta WHERE key = "
                         "'rewrites') = ?",
                         &st, NULL);
    for (size_t i = 0; !rc && i < n; i++) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, v[i].t->thread_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, v[i].t->run_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, kinds[i], -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 4, v[i].data, (int)v[i].len, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, v[i].rewrites);
        int src = sqlite3_step(st);
        if (src != SQLITE_DONE)
            rc = sq_fail(b, src, NULL, "steps");
    }
    sq_stmt_done(b, st);
    if (rc) {
        sq_rollback(b);
        return rc;
    }
    return sq_commit(b, NULL);
}

static int sq_refresh(rs_backend *b, rs_err *err)
{
    int needed = 0;
    int rc = sq_needs_catch_up(b, &needed, err);
    if (rc || !needed)
        return rc;
    if ((rc = sq_begin_quiet(b, err)))
        return rc;
    if ((rc = sq_catch_up(b, err))) {
        sq_rollback(b);
        return rc;
    }
    return sq_commit(b, err);
}

int sq_canon_has(rs_backend *b, sq_canon *c, int64_t id)
{
    if (id >= c->lo && id <= c->hi)
        return c->in;
    sq_canon_seen *k = &b->canon_seen;
    int keep = b->one_look && b->read_open && b->looked_version >= 0 && !sq_in_write(b);
    int64_t changes = sqlite3_total_changes64(b->db);
    if (keep && k->version == b->looked_version && k->commits == b->commits &&
        k->changes == changes && id >= k->lo && id <= k->hi) {
        *c = (sq_canon){.lo = k->lo, .hi = k->hi, .in = k->in};
        return c->in;
    }
    sqlite3_stmt *st;
    /* The file's own runfs_meta (a reader's TEMP copy would be stale): of this layout only. */
    int rc = sq_step(b, &st, NULL, "canonical rows",
                     b->layout >= RS_SCHEMA_LOGS ? SQ_CANON_NEXT_SQL
                                                 : "SELECT hi, lo FROM runfs_canon WHERE hi >= "
                                                   "?1 ORDER BY hi LIMIT 1",
                     "i", id);
    c->in = 0;
    c->lo = rc < 0 ? INT64_MIN : id; /* no answer: every row the general way */
    c->hi = INT64_MAX;
    if (rc == 1) {
        int64_t hi = sqlite3_column_int64(st, 0), lo = sqlite3_column_int64(st, 1);
        sq_stmt_done(b, st);
        c->in = lo <= id;
        c->lo = c->in ? lo : id;
        c->hi = c->in ? hi : lo - 1;
    }
    *k = (sq_canon_seen){.version = keep && rc >= 0 ? b->looked_version : -1,
                         .commits = b->commits,
                         .changes = changes,
                         .lo = c->lo,
                         .hi = c->hi,
                         .in = c->in};
    return c->in;
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
        base->row_id = sqlite3_column_int64(c->st, 9);
        base->row.canonical = sq_canon_has(c->b, &c->canon, base->row_id);
        int rc = rs_cursor_emit(base, c->log, &c->next_off, c->skip_to, out);
        if (rc)
            return rc; /* 0: the line ends before the offset asked for */
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
    c->canon = SQ_CANON_INIT;
    *out = &c->base;
    return 0;
}

/* A file's path is shown as given; its name alone inside a scoped mount. */
static char *sq_uri_display(const char *uri)
{
    return strdup(uri);
}

static char *sq_uri_name(const char *uri)
{
    const char *slash = strrchr(uri, '/');
    return strdup(slash ? slash + 1 : uri);
}

static int sq_library_version(rs_buf *out)
{
    return rs_buf_addf(out, "SQLite %s", sqlite3_libversion());
}

const rs_backend_ops rs_sqlite_backend = {
    .uri_display = sq_uri_display,
    .uri_name = sq_uri_name,
    .library_version = sq_library_version,
    .seq_max = INT64_MAX,
    .seq_type = "SQLite's INTEGER",
    .sql = &sq_policy,
    .stats = sq_stats,
    .search = sq_search,
    .search_rows = sq_search_rows,
    .seal_insert = sq_seal_insert,
    .seal_get = sq_seal_get,
    .seal_tree = sq_seal_tree,
    .seal_salts = sq_seal_salts,
    .redact = sq_redact,
    .redaction_each = sq_redaction_each,
    .expire = sq_expire,
    .expired_each = sq_expired_each,
    .seal_each = sq_seal_each,
    .changes_sync = sq_changes_sync,
    .changes = sq_changes,
    .changes_head = sq_changes_head,
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .data_version = sq_data_version,
    .foreign_version = sq_foreign_version,
    .one_look = sq_one_look,
    .refresh = sq_refresh,
    .rewrites = sq_rewrites,
    .thread_rewrites = sq_thread_rewrites,
    .rows_added = sq_rows_added,
    .size_get = sq_size_get,
    .size_put = sq_size_put,
    .steps_get = sq_steps_get,
    .steps_put = sq_steps_put,
    .put = sq_put,
    .release = sq_release,
    .create = sq_create,
    .delete = sq_delete,
    .import = sq_import,
    .query = sq_query,
    .log_info = sq_log_info,
    .log_seek = sq_log_seek,
    .log_facts = sq_log_facts,
    .runs_info = sq_runs_info,
    .names = sq_names,
    .odd_ids = sq_odd_ids,
    .last_visible_ai_seq = sq_last_visible_ai_seq,
    .message_objects = sq_message_objects,
};
