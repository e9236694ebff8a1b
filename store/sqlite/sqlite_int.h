/* sqlite_int.h — what the SQLite backend's files share (never included outside store/).
 *   sqlite.c        connection, statement cache, transactions, cursors, the ops table
 *   sqlite_index.c  the byte logs: totals, owners, offset marks, catching up on rows others
 *                   wrote or deleted, log_info and log_seek
 *   sqlite_write.c  put, singletons, mkdir, deletes
 *   sqlite_read.c   queries, listings, counts, seals
 *   sqlite_seal.c   what a seal keeps for its proofs and its note */
#ifndef RS_SQLITE_INT_H
#define RS_SQLITE_INT_H

#include <sqlite3.h>
#include <sys/types.h>

#include "backend.h"

/* Statements kept per connection: a walk that reads every file (grep -r, tar) runs some 55
 * on one connection, every one of them again at each run. */
#define SQ_STMT_CACHE 96
#define SQ_BUSY_TIMEOUT_MS 30000
#define SQ_CKPT_FRAMES 8192  /* a WAL this many pages long is checkpointed */
#define SQ_CKPT_PAUSE_MS 10L /* at least this long between two checkpoints */
#define SQ_CKPT_WAIT_MS 50   /* a WAL emptied waits this long at most for its readers */
#define SQ_WAL_MAX 12288     /* a commit that leaves the WAL this long waits for a checkpoint */
#define SQ_READY_SLOTS 256   /* threads a connection remembers as caught up */
#define SQ_INFO_SLOTS 64     /* logs whose sq_log_info a connection keeps (sq_info_kept) */
#define SQ_MEM_ROWS 4000000  /* read-only: rows indexed in memory before the oldest go */

typedef struct sq_db_lock sq_db_lock;
typedef struct sq_group_req sq_group_req;

typedef struct sq_stmt_slot {
    char *sql;
    const char *key; /* the caller's string when it is a constant, else NULL */
    uint64_t hash;   /* rs_hash of sql, compared before the text */
    uint64_t used;   /* b->stmt_clock at its last get: the least recent idle one is evicted */
    sqlite3_stmt *st;
    int busy;
} sq_stmt_slot;

/* Totals of a thread's or run's log (runfs_thread / runfs_run). */
typedef struct sq_log {
    int64_t key; /* thread_key or run_key */
    int64_t size;
    int64_t count;
    int64_t messages;
    int64_t last_seq;
    int64_t mark_off;          /* offset of the log's last mark; -1: none yet */
    int64_t msg_size;          /* bytes of its messages.jsonl */
    int64_t terminal_seq;      /* runs: seq of the first run.terminal (0: none) */
    int64_t ws_count;          /* runs: workspace_changes rows, counted up to ten */
    int64_t ws_seq;            /* runs: seq of the last of those (0: none) */
    int64_t change;            /* runs: a change number sq_log_store gives it (0: none) */
    int64_t newest_ns;         /* created_at of the newest row accounted since the load (0:
                                * none): sq_log_store keeps the greatest in mtime_ns */
    int mixed;                 /* rows of more than one owner */
    char owner[RS_ID_MAX + 2]; /* while not mixed: the rows' owner ('' for none) */
    int owner_known;           /* 1: owner holds it; 0: not looked up; -1: too long */
    char noted[RS_ID_MAX + 2]; /* the owner last put in runfs_owner for this log ... */
    int noted_set;             /* ... when set: an indexing pass adds each owner once */
} sq_log;

/* The logs of a connection's last append, for its next append to the same run by the same
 * owner: valid while the store is as that append left it (version is the data_version the
 * connection had caught up to; a rollback or another writer's commit voids it). Then the
 * totals, owners and next seq need no lookups. */
typedef struct sq_last_put {
    int64_t version; /* -1: empty */
    char thread_id[RS_ID_MAX + 1];
    char run_id[RS_ID_MAX + 1];
    char user[RS_ID_MAX + 2]; /* sq_owner_key of the writer */
    sq_log thr, run;
    int64_t next_seq;
    int floor_kept; /* that put raised the thread's run_event_thread_seq row: it is there */
} sq_last_put;

/* The top canonical range (runfs_meta's canon_lo..canon_hi) as this connection's put
 * wrote it, while nothing else can have changed it: no other connection committed since
 * (version: seen_version then) and this connection committed nothing but that put (commits:
 * b->commits once it committed). Then the next append that follows it moves canon_hi and
 * indexed_id in one statement instead of reading and writing them in five. */
typedef struct sq_canon_kept {
    int64_t version; /* -1: not known */
    int64_t commits;
    int64_t lo, hi;
} sq_canon_kept;

/* The last canonical range (or gap) a cursor of this connection learnt (sq_canon_has), while
 * the file is as it was then: read inside a request's read transaction (version: its look's
 * data_version), this connection having committed nothing (commits) nor changed a row
 * outside a transaction (changes) since. A walk opens a cursor per file, each asking about
 * the same stretch of rows. */
typedef struct sq_canon_seen {
    int64_t version; /* -1: none */
    int64_t commits, changes;
    int64_t lo, hi;
    int in;
} sq_canon_seen;

/* One log's sq_log_info as read while nothing had changed the file since (see
 * sq_info_kept): a walk stats and opens each file of a run several times. */
typedef struct sq_info_kept {
    char thread_id[RS_ID_MAX + 1], run_id[RS_ID_MAX + 1]; /* thread_id "": an empty slot */
    int64_t version, commits, changes; /* data_version, commits, total_changes when read */
    rs_log_info info;
} sq_info_kept;

/* A count read at data_version version, this connection's commits and total_changes then
 * (version -1: none kept). */
typedef struct sq_count_kept {
    int64_t n, version, commits, changes;
} sq_count_kept;

struct rs_backend {
    const rs_policy *policy; /* the policy above backend.h (open's) */
    sqlite3 *db;
    char *path;
    int read_only;
    int immutable;    /* read-only, opened as immutable (ro_immutable) */
    int owners_apart; /* rs_options.owners_apart */
    int pinned;       /* writes check that path is still the file first opened */
    dev_t pin_dev;
    ino_t pin_ino;
    long pid;
    sq_stmt_slot cache[SQ_STMT_CACHE];
    uint64_t stmt_clock;  /* counts sq_stmt_get's hits and misses */
    rs_buf sql;           /* scratch for built statements */
    int64_t seen_version; /* data_version when this connection last caught up */
    int64_t started;      /* this process's start time (reservations name it) */
    sq_db_lock *lock;     /* writers of this database in this process queue here */
    void (*busy_notice)(void *ctx, const char *store);
    void *busy_ctx;
    int64_t busy_since; /* when the current wait for a lock began */
    int busy_told;      /* busy_notice called for the current wait */
    int grouped;        /* appends commit in groups (RUNFS_GROUP_COMMIT=off: not) */
    int sync_full;      /* synchronous=FULL: a group commits at its leader's level */
    /* rs_options.progress, set while sq_open runs; the rows catch-up indexed, of total. */
    void (*progress)(void *ctx, int64_t done, int64_t total);
    void *progress_ctx;
    int64_t index_done, index_total;
    sq_last_put last_put;
    sq_canon_kept canon_kept;
    /* Triggers are off on this connection (SQLITE_DBCONFIG_ENABLE_TRIGGER): an append left
     * them so for the next one (switching expires every prepared statement of the
     * connection), sq_begin switches them on again for any other write. quiet_cookie: the
     * schema_version at which the triggers were last listed (-1: not looked), quiet_foreign
     * whether a trigger not runfs's was among them then. Like the rest of the backend, used
     * by one thread at a time. */
    int quiet;
    int quiet_foreign;
    int64_t quiet_cookie;
    sq_canon_seen canon_seen;
    /* The change number this connection gave last, while known to be the store's highest
     * (no other connection committed since: sq_catch_up forgets it, as it does last_put). */
    int64_t change_last;
    int change_known;
    /* Threads caught up on this connection while data_version was ready_version (another
     * connection's commit empties the set): a thread is indexed at its first use. */
    char ready[SQ_READY_SLOTS][RS_ID_MAX + 1];
    int n_ready;
    int64_t ready_version;
    /* Read-only: the side tables live as TEMP copies once a thread needed indexing (mem);
     * the threads this connection indexed, oldest first, and their rows (bounded). */
    int mem;
    int64_t layout;
    int64_t mem_version; /* data_version the copy last took the file's empty threads at */
    /* What the file said of rows changed in place when the copy was taken (see
     * mem_fingerprint): a thread's copy is current while the file says the same. */
    char mem_taken[96];
    rs_mem_list mem_list;
    /* Commits and catch-ups on this connection; the threads not indexed yet and their
     * runs as counted at (unindexed_version, unindexed_gen), for status counts. */
    int64_t commits;
    int64_t unindexed_version, unindexed_gen, unindexed_threads, unindexed_runs;
    int trigram;    /* sqlite_search.c: runfs_trigram registered on this connection */
    int search_fns; /* sqlite_search.c: runfs_may and runfs_in registered on it */
    sq_info_kept info_kept[SQ_INFO_SLOTS]; /* owner-less sq_log_info answers, by log */
    int64_t probed_version;                /* data_version as this connection last probed it */
    int one_look;           /* rs_store_one_look: looked_version holds while read_open */
    int64_t looked_version; /* the look's data_version; -1: not looked yet */
    /* The look began a read transaction (BEGIN): the request's statements share it instead
     * of each starting and ending one of its own. Ended when the look goes off and before
     * any BEGIN of a write (sq_read_end). */
    int read_open;
    sq_count_kept rewrites_kept; /* the file's rewrites count (sq_rewrites) */
    int thread_counts;           /* the file has runfs_rewritten (sq_thread_rewrites) */
    int write_locked; /* this connection holds lock's mutex (begin_locked to the commit) */
    /* sq_foreign_version: its number, and the tag and data_version it last found;
     * probe_busy: the probes in a row that found the write lock held. */
    int foreign_probed, probe_busy;
    int64_t foreign_version, foreign_tag, foreign_dv;
};

/* One append waiting for a group commit; the leader fills rc (and err, stored, at). */
struct sq_group_req {
    sq_group_req *next;
    const rs_target *t;
    rs_event *const *evs;
    size_t n;
    rs_buf *stored;
    size_t stored_len; /* stored's length before this append */
    rs_placement *at;
    rs_err *err;
    int sync_full;  /* the --sync level the request was made with */
    int64_t ids[2]; /* the run_events ids its rows got, first and last (0, 0: none) */
    int rc;
    int done;
};

/* Queue req and wait until a group holding it has committed (or failed): the first thread
 * to find no commit in progress runs commit(b, group) for everything queued. req->rc. */
int sq_group_run(rs_backend *b, sq_group_req *req, void (*commit)(rs_backend *, sq_group_req *));

/* The columns every row query selects, in rs_row order (see sq_row), then the row's id (a
 * cursor asks runfs_canon about it). */
#define SQ_ROW_COLUMNS \
    "e.thread_id, e.run_id, e.seq, e.event_type, e.category, e.content, e.event_metadata, " \
    "e.created_at, e.user_id, e.id"

/* Rows runfs's put stored (layout 5): ranges in runfs_canon, and above them the top range,
 * runfs_meta's canon_lo..canon_hi (canon_lo 0: none). SQ_CANON_NEXT_SQL: hi, lo of the
 * lowest range whose hi is ?1 or more, the file's own (main) runfs_meta read (a reader's
 * TEMP copy may be stale). SQ_CANON_HAS_ROW: an SQL condition, row e's id lies in a range
 * (for a writer's statement). */
#define SQ_CANON_NEXT_SQL \
    "SELECT hi, lo FROM (SELECT hi, lo FROM runfs_canon WHERE hi >= ?1 ORDER BY hi LIMIT 1) " \
    "UNION ALL SELECT h.value, l.value FROM main.runfs_meta l JOIN main.runfs_meta h ON " \
    "h.key = 'canon_hi' WHERE l.key = 'canon_lo' AND l.value > 0 AND h.value >= ?1 " \
    "ORDER BY 1 LIMIT 1"
#define SQ_CANON_HAS_ROW \
    "(EXISTS (SELECT 1 FROM runfs_canon c WHERE c.hi = (SELECT min(hi) FROM runfs_canon WHERE " \
    "hi >= e.id) AND c.lo <= e.id) OR EXISTS (SELECT 1 FROM runfs_meta l JOIN runfs_meta h ON " \
    "h.key = 'canon_hi' WHERE l.key = 'canon_lo' AND l.value > 0 AND e.id BETWEEN l.value AND " \
    "h.value))"

/* The run's kept step data (runfs_steps, where the store has it) deleted, in the caller's
 * transaction: a redaction or an expiry forgets what was computed from the rows too. */
int sq_steps_forget(rs_backend *b, const rs_target *t, rs_err *err);
/* Map a SQLite result to a negative errno with a reason. */
int sq_fail(rs_backend *b, int rc, rs_err *err, const char *what);
/* A cached statement, reset and unbound, busy until sq_stmt_done. */
int sq_stmt_get(rs_backend *b, const char *sql, sqlite3_stmt **out, rs_err *err);
void sq_stmt_done(rs_backend *b, sqlite3_stmt *st);
/* Prepare-bind-step-once: the cached statement for sql, ?1, ?2... bound from the arguments
 * as types says ('t' const char *, NULL binding NULL; 's' the same, not copied: only for a
 * statement without rows; 'B' const rs_buf *, as text, not copied; 'i'
 * int64_t; 'o' int64_t bound only when > 0, else NULL), stepped once. 1: a row, and *row (when row is not NULL) holds the
 * statement to read its columns, given back with sq_stmt_done; 0: no row; <0: a negative
 * errno, err naming what failed. The statement is given back unless *row takes it. */
int sq_step(rs_backend *b, sqlite3_stmt **row, rs_err *err, const char *what, const char *sql,
            const char *types, ...);
/* sql without parameters, its rows ignored. */
int sq_exec(rs_backend *b, const char *sql, rs_err *err);
/* A write transaction: BEGIN IMMEDIATE under the database's in-process lock (-EROFS when
 * read-only), then exactly one of sq_commit (which rolls back when the commit fails) or
 * sq_rollback, which release the lock. */
int sq_begin(rs_backend *b, rs_err *err);
/* sq_begin for a transaction none of whose statements fires a trigger of runfs's
 * (catching up, kept sizes, mkdir, reservations: side tables only; an append, whose rows
 * put_rows sees to): the triggers stay as the last append left them. */
int sq_begin_quiet(rs_backend *b, rs_err *err);
/* Triggers on again where an append left them off (b->quiet). */
int sq_triggers_on(rs_backend *b, rs_err *err);
int sq_commit(rs_backend *b, rs_err *err);
void sq_rollback(rs_backend *b);
void sq_bind_text(sqlite3_stmt *st, int i, const char *s); /* NULL binds NULL */
/* One integer from sql with up to two text parameters; *found 0 (out untouched) for none. */
/* sql written with $1, $2 (policy.c's spelling) as ?1, ?2, in b->sql; NULL when out of
 * memory. */
const char *sq_numbered(rs_backend *b, const char *sql);
/* The thread's row at seq as its canonical line (rs_sql.row_at). */
int sq_row_at(rs_backend *b, const char *thread_id, int64_t seq, int anonymous, rs_buf *line,
              int *found, rs_err *err);
/* put_if_absent's primitives for the once gate (rs_policy) */
int sq_once_existing(rs_backend *b, const rs_target *t, const char *event_type, rs_existing *ex,
                     int *found, rs_err *err);
int sq_once_held(rs_backend *b, const rs_target *t, const char *event_type, int *other,
                 rs_err *err);
extern const rs_sql sq_policy; /* the policy's primitives (rs_sql; sqlite_index.c) */
/* PRAGMA data_version, looked at once per rs_store_one_look outside a write transaction. */
int sq_look(rs_backend *b, int64_t *version, rs_err *err);
/* Inside a write transaction (not the look's read transaction). */
int sq_in_write(rs_backend *b);
/* End the look's read transaction, if one is open: before a BEGIN, and when the look ends. */
void sq_read_end(rs_backend *b);
int sq_int(rs_backend *b, const char *sql, const char *a1, const char *a2, int64_t *out, int *found,
           rs_err *err);
void sq_row(rs_row *row, sqlite3_stmt *st, int col);
/* Was row id stored by runfs's put (runfs_canon), so that its columns are canonical
 * (rs_row.canonical)? The answer holds for a stretch of ids around it, kept in c for the
 * next rows: read in id or seq order they mostly fall in it. */
typedef struct sq_canon {
    int64_t lo, hi; /* ids known to be (in) or not be in runfs_canon */
    int in;
} sq_canon;
#define SQ_CANON_INIT ((sq_canon){.lo = 1, .hi = 0, .in = 0}) /* nothing known yet */
int sq_canon_has(rs_backend *b, sq_canon *c, int64_t id);
/* A cursor over st's rows (SQ_ROW_COLUMNS first). log: 0 for a plain query, 1 for a run's
 * log and 2 for a thread's, whose rows start at byte start_off and get offsets; lines that
 * end at or before skip_to are passed over. */
int sq_cursor_new(rs_backend *b, sqlite3_stmt *st, int log, int64_t start_off, int64_t skip_to,
                  rs_cursor **out, rs_err *err);

/* ---- sqlite_index.c ---- */

const char *sq_owner_key(const char *user);
/* Load the totals of a thread (run_id NULL) or run, creating them when create. */
int sq_log_load(rs_backend *b, const char *thread_id, const char *run_id, int64_t thread_key,
                int create, sq_log *log, int *found, rs_err *err);
int sq_log_store(rs_backend *b, int is_run, const sq_log *log, rs_err *err);
/* user now has rows in (or made) the thread (run_key 0) or run. */
int sq_owner_add(rs_backend *b, int64_t thread_key, int64_t run_key, const char *user, rs_err *err);
/* Does user (NULL: rows without an owner) have the thread (run_key 0) or run? */
int sq_owner_has(rs_backend *b, int64_t thread_key, int64_t run_key, const char *user, int *has,
                 rs_err *err);
/* A row of user is about to join the log (run_id NULL: the thread's): set log->mixed when
 * it makes a second owner of rows. Directories made by mkdir never make a log mixed. */
int sq_log_mix(rs_backend *b, const char *thread_id, const char *run_id, sq_log *log,
               const char *user, rs_err *err);
/* With owners_apart, a scoped owner (user not NULL) writes only in a thread that is new or
 * holds its rows or its mkdir: -EACCES otherwise. */
int sq_thread_access(rs_backend *b, const char *thread_id, const char *user, rs_err *err);
/* Account one stored line of len bytes, of event_type, category and created_at (as stored
 * or canonical), in its run's and thread's logs (marks included). */
int sq_log_line(rs_backend *b, sq_log *run, sq_log *thread, int64_t seq, size_t len,
                const char *event_type, const char *category, const char *created_at, rs_err *err);
/* Inside a write transaction: index rows other writers added, recompute threads they
 * deleted from. Cheap when there is nothing to do. */
int sq_catch_up(rs_backend *b, rs_err *err);
/* Every row of the thread indexed by now (after runfs's own writes). */
int sq_caught_up(rs_backend *b, int64_t last_id, rs_err *err);
/* Recompute a thread's logs from its rows (after a delete). */
int sq_thread_reindex(rs_backend *b, const char *thread_id, int64_t thread_key, rs_err *err);
/* Whether sq_catch_up has work (read-only check, for a cheap open). */
int sq_needs_catch_up(rs_backend *b, int *needed, rs_err *err);
/* Whether the thread's logs lag its rows: none while it has rows, rows above the logs'
 * last seq, or rows another writer deleted. */
int sq_thread_behind(rs_backend *b, const char *thread_id, int *behind, rs_err *err);
/* Inside a transaction: bring the thread's logs level with its rows (a thread is indexed
 * at its first use; nothing is scanned at open). */
int sq_thread_catch_up(rs_backend *b, const char *thread_id, rs_err *err);
/* Before reading the thread's logs: caught up once per connection and data_version, in a
 * transaction of its own (read-only: in the TEMP copies, sqlite.c). */
int sq_thread_ready(rs_backend *b, const char *thread_id, rs_err *err);
/* Read-only, before listing threads: the in-memory copy brought level with the file's
 * empty and deleted threads (sqlite.c). */
int sq_mem_refresh(rs_backend *b, rs_err *err);
/* Thread ids of run_events in order, one index probe each (a skip scan of its thread_id
 * index, cheap whatever the rows), as a WITH RECURSIVE table d(id) (a NULL id ends it);
 * and u(id), those without logs yet (indexed at their first use). */
#define SQ_THREAD_IDS \
    "d(id) AS (SELECT (SELECT min(thread_id) FROM run_events) UNION ALL SELECT (SELECT " \
    "min(thread_id) FROM run_events WHERE thread_id > d.id) FROM d WHERE d.id IS NOT NULL), " \
    "u(id) AS (SELECT id FROM d WHERE id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM " \
    "runfs_thread x WHERE x.thread_id = d.id))"

int sq_log_info(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                rs_log_info *out, rs_err *err);
int sq_runs_info(rs_backend *b, const char *thread_id, rs_run_info_fn fn, void *ctx, rs_err *err);
int sq_log_facts(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                 rs_log_facts *out, rs_err *err);
int sq_log_seek(rs_backend *b, const char *thread_id, const char *run_id, int64_t off,
                rs_cursor **out, rs_err *err);

/* ---- sqlite_write.c ---- */
int sq_put(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n, int if_absent,
           int *created, rs_existing *existing, rs_buf *stored, rs_placement *at, rs_err *err);
/* The policy's transaction and reservation primitives (rs_sql). */
int sq_write_begin(rs_backend *b, const rs_target *t, rs_err *err);
int sq_write_end(rs_backend *b, int rc, rs_err *err);
int sq_hold_insert(rs_backend *b, const rs_target *t, const char *event_type, rs_err *err);
int sq_release(rs_backend *b, const rs_target *t, const char *event_type);
int sq_create(rs_backend *b, const rs_target *t, rs_err *err);
int sq_import(rs_backend *b, const rs_target *t, int64_t floor,
              int (*next)(void *ctx, rs_event **ev, rs_err *err),
              int (*stored)(void *ctx, const rs_event *ev, rs_err *err), void *ctx, int64_t *added,
              int64_t *skipped, rs_err *err);
int sq_delete(rs_backend *b, const rs_target *t, int64_t *count, rs_err *err);
/* sq_delete's work inside the caller's write transaction (retention's too). */
int sq_delete_rows(rs_backend *b, const rs_target *t, int64_t *count, rs_err *err);

/* ---- sqlite_changes.c: the change feed's numbers ---- */
/* Inside a write transaction: the next change number (an append gives it to its run through
 * sq_log_store), the run was sealed (a new number), rows (others' only when foreign) added
 * with ids in (above_id, upto_id] (a number for each run), rows deleted or changed in place
 * (the triggers left them pending: numbered again, a tombstone when none is left).
 * sq_change_touch: inside a write transaction, after sq_catch_up and sq_thread_catch_up of
 * the thread (it takes the rows' owner from the run's log). */
int sq_change_next(rs_backend *b, int64_t *next, rs_err *err);
int sq_change_touch(rs_backend *b, const char *thread_id, const char *run_id, rs_err *err);
int sq_change_rows(rs_backend *b, int64_t above_id, int64_t upto_id, int foreign, rs_err *err);
int sq_change_settle(rs_backend *b, rs_err *err);
int sq_change_pending(rs_backend *b, int *pending, rs_err *err);
int sq_changes_sync(rs_backend *b, rs_err *err);
int sq_changes(rs_backend *b, int64_t after, const char *user, const char *thread_id,
               rs_change_page *page, rs_change_row_fn fn, void *ctx, rs_err *err);
int sq_changes_head(rs_backend *b, int64_t *head, rs_err *err);

/* ---- sqlite_read.c ---- */
int sq_query(rs_backend *b, const rs_query *q, rs_cursor **out, rs_err *err);
/* ---- sqlite_search.c: backend.h's search (FTS5 over sqlite_trigram.c's tokens) ---- */
/* The search index's columns: one for each sixteenth of a block's rows (four rows), and a
 * last one for a window in many of the sixteenths that have rows. */
#define SQ_SUB_ROWS 4 /* rows a column */
#define SQ_COLUMNS (64 / SQ_SUB_ROWS + 1)
/* A block's distinct three-byte windows (ASCII letters lowered), each with the columns
 * whose rows hold it. */
typedef struct sq_windows {
    uint64_t *slot; /* window << 32 | columns (0: empty), open addressing, cap a power of 2 */
    size_t cap, n;
    uint32_t cols; /* columns given rows */
    /* The windows met in column col since it began (a bit each of 2^24: 2 MiB), and which,
     * to clear after. */
    uint8_t *seen;
    uint32_t *met;
    size_t n_met, cap_met;
    int col;
} sq_windows;
/* Add the windows of one row's text, in column col (< SQ_COLUMNS - 1). */
int sq_windows_add(sq_windows *t, int col, const char *text, size_t len);
/* Each column's windows as runfs_trigram reads them (six hex digits each) into cols, and t
 * empty for the next block. */
int sq_windows_take(sq_windows *t, rs_buf cols[SQ_COLUMNS]);
void sq_windows_release(sq_windows *t);
/* Make runfs_trigram, runfs_subs and runfs_cand known to the connection (once). */
int sq_trigram_register(rs_backend *b, rs_err *err);
/* The search index's triggers on run_events, where the store has the index (missing ones
 * made; inside the caller's write transaction). */
int sq_search_triggers(rs_backend *b, rs_err *err);
int sq_search(rs_backend *b, const rs_search *q, const char *thread_id, const char *run_id,
              const char *user, const char *after_thread, int64_t after_seq, rs_cursor **out,
              rs_err *err);
int sq_search_rows(rs_backend *b, const int64_t *ids, size_t n, rs_cursor **out, rs_err *err);
int sq_odd_ids(rs_backend *b, rs_odd_id_fn fn, void *ctx, rs_err *err);
int sq_names(rs_backend *b, rs_names_kind kind, const char *thread_id, const char *run_id,
             const char *user, const char *const *singletons, size_t n_singletons, rs_names **out,
             rs_err *err);
int sq_last_visible_ai_seq(rs_backend *b, const rs_target *t, int64_t *seq, rs_err *err);
int sq_message_objects(rs_backend *b, const char *thread_id, const char *user, int newest,
                       const char *like, rs_cursor **out, rs_err *err);
int sq_stats(rs_backend *b, const char *user, const char *thread_id, rs_stats *out, rs_err *err);
int sq_seal_insert(rs_backend *b, const rs_target *t, const rs_seal_row *row,
                   const rs_seal_tree *tree, rs_err *err);
int sq_seal_get(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err);
int sq_seal_each(rs_backend *b, int (*fn)(void *ctx, const rs_target *t, const rs_seal_row *row),
                 void *ctx, rs_err *err);
/* sqlite_seal.c: runfs_seal_tree. put inside the seal's transaction; extra fills the row's
 * root and note ("" without); tree is the seal's kept tree (-ENOENT: none). */
int sq_seal_tree_put(rs_backend *b, const rs_target *t, const rs_seal_row *row,
                     const rs_seal_tree *tree, rs_err *err);
int sq_seal_extra(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err);
int sq_seal_tree(rs_backend *b, const rs_target *t, const rs_seal_row *row, rs_seal_tree *tree,
                 rs_err *err);
/* sqlite_redact.c: rs_backend_ops.redact, redaction_each, expire and expired_each. */
int sq_redact(rs_backend *b, const rs_target *t, const rs_redact_row *w, rs_buf *warn, rs_err *err);
int sq_redaction_each(rs_backend *b, const rs_target *t, int64_t from, int64_t to,
                      int (*fn)(void *ctx, const rs_redact_row *r), void *ctx, rs_err *err);
int sq_expire(rs_backend *b, const rs_target *t, const rs_expire_row *x, rs_buf *warn, rs_err *err);
int sq_expired_each(rs_backend *b, const char *user, int (*fn)(void *ctx, const rs_expire_row *x),
                    void *ctx, rs_err *err);
/* sqlite_search.c: the search index dropped, to be made again at the next search (a
 * redaction: its contentless table cannot forget one row's text). */
int sq_search_forget(rs_backend *b, rs_err *err);
int sq_seal_salts(rs_backend *b, const rs_target *t, const rs_seal_row *row, int64_t from,
                  int64_t to, rs_buf *out, rs_err *err);

#endif
