/* pg_int.h — what the PostgreSQL backend's files share (never included outside store/).
 *   pg.c        connections (reconnect, session set-up), statements, pipelines,
 *               transactions, cursors, the change feed (NOTIFY/LISTEN and the poll) and the
 *               ops table
 *   pg_index.c  the byte logs (totals, owners, offset marks), catching up on rows other
 *               writers added or deleted (found through the runfs_note_* triggers),
 *               log_info and log_seek
 *   pg_write.c  put, singletons and their reservations, mkdir, deletes
 *   pg_read.c   queries, listings, counts, seals
 *   pg_seal.c   what a seal keeps for its proofs and its note
 * The side tables and their meaning are the SQLite backend's (sqlite/schema.sql.h). */
#ifndef RS_PG_INT_H
#define RS_PG_INT_H

#include <libpq-fe.h>

#include "backend.h"

#define PG_STMT_CACHE 64
#define PG_MAX_ARGS 48
#define PG_PIPE_MAX 32      /* statements (and their first preparations) in one pipeline */
#define PG_MEM_ROWS 4000000 /* read-only: rows of threads kept in memory before the oldest go */

/* The byte log of one thread or run as stored in runfs_thread / runfs_run. */
typedef struct pg_log {
    int64_t key; /* thread_key or run_key */
    int64_t size;
    int64_t count;
    int64_t messages;
    int64_t last_seq;
    int64_t mark_off;  /* offset of the log's last mark; -1: none yet */
    int64_t newest_ns; /* created_at of the newest row accounted since the load (0: none):
                        * pg_log_store keeps the greatest in mtime_ns */
    int mixed;
    int dirty;                 /* threads: 1 rows deleted by others, 2 rows added by others */
    char noted[RS_ID_MAX + 2]; /* the owner last put in runfs_owner for this log ... */
    int noted_set;             /* ... when set: an indexing pass adds each owner once */
} pg_log;

/* Where this connection's last plain append left its thread and run (pg_write.c). */
typedef struct pg_tail {
    int valid;
    char thread_id[RS_ID_MAX + 1], run_id[RS_ID_MAX + 1], owner[RS_ID_MAX + 1];
    pg_log thr, run;
    int64_t last; /* the thread's highest seq given out */
} pg_tail;

typedef struct pg_stmt_slot {
    char *sql;
    char name[16];
} pg_stmt_slot;

struct rs_backend {
    const rs_policy *policy; /* the policy above backend.h (open's) */
    PGconn *conn;
    int read_only;
    int sync_full;
    int owners_apart; /* rs_options.owners_apart */
    int has_canon;    /* runfs_canon is there to ask (not in a read-only open of layout 2) */
    int has_tree;     /* runfs_seal_tree is there (not in a read-only open of an older set-up) */
    int has_salt;     /* runfs_seal_salt and runfs_seal_tree.leaves are there (the same) */
    int has_expired;  /* runfs_expired is there (a writer makes it) */
    int has_tcount;   /* runfs_rewritten is there (a writer makes it) */
    int has_tail;     /* runfs_tail is there: the tail is read (pg_changes.c) */
    int64_t fold_ns;  /* CLOCK_MONOTONIC of this session's last empty tail or fold tried */
    int in_tx;        /* a write transaction is open */
    int lost;         /* the last failure was the connection's (fail_conn) */
    int seq_taken;    /* the last failure was a unique violation on run_events: another
                       * writer committed a row at a seq this one wrote (it took no lock) */
    int waited;       /* ... after waiting wait_ns for the server (ensure_conn) */
    int64_t wait_ns;  /* connect_timeout: how long a request waits for the server */
    int no_wait;      /* rs_store_set_wait(0): a read the server drops fails at once */
    int standby;      /* a hot standby (read-only: no LISTEN there, the feed is polled) */
    /* Read-only of a database without runfs's tables (DeerFlow's alone): they are TEMP
     * tables of this session, made again with a new one (pg.c, scratch_setup); scratch_hwm:
     * so is run_event_thread_seq. */
    int scratch, scratch_hwm;
    int read_tx;    /* cursors hold a read transaction open (their count) */
    int cursor_seq; /* names of server-side cursors */
    long pid;
    int64_t started; /* this process's start time (reservations name it) */
    char host[64];   /* reservations name the host too: pids are per host */
    pg_stmt_slot cache[PG_STMT_CACHE];
    int stmt_seq;
    int listening;        /* LISTEN is part of this connection's session */
    int feed_ready;       /* the change feed's table was found, its first numbering done */
    int64_t notified;     /* notifications received (the change feed) */
    int64_t dirty_seen;   /* threads to index at the last probe (-1: not probed) */
    rs_buf sql;           /* scratch for built statements */
    struct pg_page *held; /* a sequential log read's page, kept between reads */
    /* rs_options.progress, set while pg_open runs; the rows catch-up indexed. */
    void (*progress)(void *ctx, int64_t done, int64_t total);
    void *progress_ctx;
    int64_t index_done; /* counted with or without progress (pg_catch_up_all's share) */
    pg_tail tail;
    /* Read-only: the facts of each thread in use, copied into TEMP tables that shadow
     * runfs's (mem), and indexed there when another writer left them behind; side is the
     * schema of the real tables ("" before), mem_list the threads copied, oldest first,
     * each with the real thread's state at the copy (its dirty flag, mtime, count, last_seq
     * and highest seq: a change there means copying it again), bounded by PG_MEM_ROWS. */
    int mem;
    char side[160];
    rs_mem_list mem_list;
    /* A pipeline (pg_pipe_start .. pg_pipe_run): what each queued statement's result is
     * for, in order; pipe_rc is the first failure to queue one, pipe_failed the index of
     * the first that failed (-1: none). */
    int piped, npipe, pipe_rc, pipe_commit, pipe_failed;
    int search_off;            /* pg_search.c: pg_trgm was refused on this connection (scan) */
    int64_t search_unvacuumed; /* pg_search.c: blocks indexed or emptied since its VACUUM */
    void (*notice)(void *ctx, const char *msg); /* rs_options' */
    void *notice_ctx;
    struct {
        PGresult **out; /* NULL: checked, then dropped */
        int slot;       /* a preparation's cache slot, forgotten if it fails; -1 */
    } pipe[PG_PIPE_MAX];
};

/* Parameters of one statement, as text ($1 = v[0]) typed text or bigint; numbers are
 * formatted in place. */
typedef struct pg_args {
    const char *v[PG_MAX_ARGS];
    char num[PG_MAX_ARGS][24];
    Oid types[PG_MAX_ARGS]; /* text or int8: statements may leave one unused */
    int n;
} pg_args;

/* Whether this role owns run_events (may index it, drop what is on it): its owner's rights,
 * or a run_events it would make itself. */
#define PG_OWNS_EVENTS \
    "coalesce(pg_has_role((SELECT relowner FROM pg_class WHERE oid = " \
    "to_regclass('run_events')), 'USAGE'), true)"

/* The columns every row query selects, in rs_row order (see pg_row), then the row's id (a
 * read asks runfs_canon about it: PG_ROW_ID); created_at as a UTC timestamp that pg_row
 * writes as DeerFlow's SQLite DATETIME text, so both backends hand the encoder the same
 * bytes. */
#define PG_ROW_COLUMNS \
    "e.thread_id, e.run_id, e.seq, e.event_type, e.category, e.content, e.event_metadata, " \
    "e.created_at AT TIME ZONE 'UTC', e.user_id, e.id"
#define PG_ROW_ID 9

/* What runfs_canon said about a stretch of ids: its ranges with hi in from..upto, asked after
 * the rows in hand were fetched. A row another writer changed or stored at a noted id lost
 * its range in the same transaction, so the answer holds for every row fetched before it;
 * each fetch makes it stale (valid 0). */
#define PG_CANON_MAX 128
typedef struct pg_canon {
    int valid, n;
    int64_t from, upto;
    int64_t lo[PG_CANON_MAX], hi[PG_CANON_MAX]; /* ascending hi */
} pg_canon;
/* Is row i of r (PG_ROW_COLUMNS) one runfs stored itself (rs_row.canonical)? 0 when not
 * known: the row is rendered. */
int pg_canon_has(rs_backend *b, pg_canon *k, const PGresult *r, int i);

/* Statements without parameters, outside the statement cache (transaction control, the
 * schema, VACUUM). */
int pg_exec_plain(rs_backend *b, const char *sql, rs_err *err);
/* The run's kept step data (runfs_steps, where the store has it) deleted, in the caller's
 * transaction: a redaction or an expiry forgets what was computed from the rows too. */
int pg_steps_forget(rs_backend *b, const rs_target *t, rs_err *err);
void pg_arg_text(pg_args *a, const char *s); /* NULL: SQL NULL */
void pg_arg_int(pg_args *a, int64_t v);
/* Run sql (cached as a prepared statement) with a's parameters; *out (may be NULL: cleared)
 * holds the result on success. Errors map to an errno with PostgreSQL's reason; a lost
 * connection is -EIO and the next call outside a transaction reconnects. Inside a pipeline
 * it only queues the statement: *out is filled, and errors reported, by pg_pipe_run. */
int pg_run(rs_backend *b, const char *sql, const pg_args *a, PGresult **out, rs_err *err);
/* A pipeline: pg_run, pg_begin and pg_commit between pg_pipe_start and pg_pipe_run are sent
 * together and answered in one round trip. pg_pipe_run waits for every answer and ends the
 * pipeline: 0 when all succeeded (a queued COMMIT ended the transaction), else the first
 * failure (the statements after it skipped; b->pipe_failed says which), the transaction
 * left for pg_rollback. *out is set for each statement that succeeded (the caller clears
 * it). */
int pg_pipe_start(rs_backend *b, rs_err *err);
int pg_pipe_run(rs_backend *b, rs_err *err);
/* One integer from sql with up to two text parameters; *found 0 (out untouched) for none. */
/* The thread's row at seq as its canonical line (rs_sql.row_at). */
int pg_row_at(rs_backend *b, const char *thread_id, int64_t seq, int anonymous, rs_buf *line,
              int *found, rs_err *err);
/* put_if_absent's primitives for the once gate (rs_policy) */
int pg_once_existing(rs_backend *b, const rs_target *t, const char *event_type, rs_existing *ex,
                     int *found, rs_err *err);
int pg_once_held(rs_backend *b, const rs_target *t, const char *event_type, int *other,
                 rs_err *err);
extern const rs_sql pg_policy; /* the policy's primitives (rs_sql; pg_index.c) */
int pg_int(rs_backend *b, const char *sql, const char *a1, const char *a2, int64_t *out, int *found,
           rs_err *err);
int64_t pg_val_int(const PGresult *r, int row, int col);
/* After this connection caught up rows another writer added to run_events, or added
 * blocks to the search index: ANALYZE run_events and runfs_search where the rows changed
 * since their last ANALYZE are past a fifth of them, and this role may (their owner's
 * rights, or the database's). Until then the planner plans for the tables as they were
 * (autovacuum's ANALYZE comes up to a minute later): a search over 200k new rows took
 * seconds a query instead of a tenth of one. Nothing is reported: a role that may not, or
 * an ANALYZE that fails, leaves the statistics as they were, never an error. */
void pg_analyze_grown(rs_backend *b, int64_t rows, int64_t blocks);
/* A write transaction serialised with every writer of thread_id (DeerFlow's advisory lock
 * when thread_id is not NULL), then exactly one of pg_commit or pg_rollback (either may be
 * queued in a pipeline; pg_rollback ends one). */
int pg_begin(rs_backend *b, const char *thread_id, rs_err *err);
int pg_lock_thread(rs_backend *b, const char *thread_id, rs_err *err);
int pg_commit(rs_backend *b, rs_err *err);
void pg_rollback(rs_backend *b);
/* Row i of r (PG_ROW_COLUMNS from column col, in text or binary), its created_at written
 * into at (PG_AT_MAX bytes: the row's as long as it is). */
#define PG_AT_MAX 32
void pg_row(rs_row *row, const PGresult *r, int i, int col, char *at);
/* A cursor over sql's rows (PG_ROW_COLUMNS first, any others after). log: 0 for a
 * plain query, 1 for a run's log and 2 for a thread's, whose rows start at byte start_off
 * and get offsets; lines that end at or before skip_to are passed over. */
int pg_cursor_new(rs_backend *b, const char *sql, const pg_args *a, int log, int64_t start_off,
                  int64_t skip_to, rs_cursor **out, rs_err *err);
/* Mark c as read in a REPEATABLE READ transaction: runfs_canon's answer with its first
 * rows, from the lowest id and in the same snapshot, holds for every row it returns, so it
 * is not asked again at each fetch (rows sorted by thread come in any id order). */
void pg_cursor_fixed(rs_cursor *c);

/* ---- pg_index.c ---- */

const char *pg_owner_key(const char *user);
int pg_log_load(rs_backend *b, const char *thread_id, const char *run_id, int64_t thread_key,
                int create, pg_log *log, int *found, rs_err *err);
int pg_log_store(rs_backend *b, int is_run, const pg_log *log, rs_err *err);
int pg_owner_add(rs_backend *b, int64_t thread_key, int64_t run_key, const char *user, int *mixed,
                 rs_err *err);
/* The log's columns (key, size, count, messages, last_seq, mixed, mark_off) from row 0 of r,
 * starting at column col. */
void pg_log_from(pg_log *ls, const PGresult *r, int col);
/* Marks due while lines are accounted, kept to be written in one statement (array
 * literals of the keys, offsets and seqs). */
typedef struct pg_marks {
    rs_buf keys, offs, seqs;
    int count;
} pg_marks;
#define PG_MARKS_INIT \
    { \
        .keys = RS_BUF_INIT, .offs = RS_BUF_INIT, .seqs = RS_BUF_INIT \
    }
int pg_marks_send(rs_backend *b, pg_marks *m, rs_err *err);
void pg_marks_release(pg_marks *m);
/* Account a stored line (created_at as stored or canonical) in its run's and thread's logs;
 * the marks it makes are written now (marks NULL) or added to marks. */
int pg_log_line(rs_backend *b, pg_log *run, pg_log *thread, int64_t seq, size_t len, int message,
                const char *created_at, pg_marks *marks, rs_err *err);
/* Inside a write transaction holding the thread's lock: index what other writers did to
 * the thread (thr loaded; reloaded after, *found 0 when it had no rows left and is gone). */
int pg_thread_catch_up(rs_backend *b, const char *thread_id, pg_log *thr, int *found, rs_err *err);
/* A writer's entry to a thread (its transaction open, the advisory lock taken): its totals
 * loaded with the row locked, as every note of the tail locks it before runfs_change (one
 * order: no deadlock), and caught up when marked or behind. */
int pg_thread_hold(rs_backend *b, const char *thread_id, pg_log *thr, int *found, rs_err *err);
int pg_thread_reindex(rs_backend *b, const char *thread_id, int64_t thread_key, rs_err *err);
/* Every thread with logs other writers touched, one transaction each (a thread without
 * logs waits for its first use). */
int pg_catch_up_all(rs_backend *b, rs_err *err);
/* Before reading the thread's logs: a thread other writers left to index (a DeerFlow thread
 * never used before, rows added or deleted) is caught up at its first use, in a transaction
 * of its own under the thread's lock (inside the caller's when one is open; a reader copies
 * and indexes it in memory, pg.c). */
int pg_thread_ready(rs_backend *b, const char *thread_id, rs_err *err);
/* The same for a thread found dirty already. */
int pg_thread_fix(rs_backend *b, const char *thread_id, rs_err *err);
/* Read-only of a database without runfs's tables (pg.c): threads added since are listed. */
int pg_scratch_threads(rs_backend *b, rs_err *err);
/* Read-only (pg.c): bring the thread's TEMP copy level with the real tables and its rows. */
int pg_mem_ready(rs_backend *b, const char *thread_id, rs_err *err);
/* sql with each '@' replaced by the real tables' schema (b->side: "" but in memory), into
 * b->sql: for statements over every thread, which a reader's TEMP copies do not hold. */
int pg_side_sql(rs_backend *b, const char *sql, rs_err *err);
int pg_runs_info(rs_backend *b, const char *thread_id, rs_run_info_fn fn, void *ctx, rs_err *err);
int pg_log_info(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                rs_log_info *out, rs_err *err);
int pg_log_seek(rs_backend *b, const char *thread_id, const char *run_id, int64_t off,
                rs_cursor **out, rs_err *err);
/* Drop the page pg_log_seek keeps for a sequential reader (writes and close call it). */
void pg_log_forget(rs_backend *b);

/* ---- pg_write.c ---- */
int pg_put(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n, int if_absent,
           int *created, rs_existing *existing, rs_buf *stored, rs_placement *at, rs_err *err);
/* The policy's transaction and reservation primitives (rs_sql). */
int pg_write_begin(rs_backend *b, const rs_target *t, rs_err *err);
int pg_write_end(rs_backend *b, int rc, rs_err *err);
int pg_hold_insert(rs_backend *b, const rs_target *t, const char *event_type, rs_err *err);
int pg_release(rs_backend *b, const rs_target *t, const char *event_type);
int pg_create(rs_backend *b, const rs_target *t, rs_err *err);
int pg_delete(rs_backend *b, const rs_target *t, int64_t *count, rs_err *err);
/* pg_delete's work inside the caller's write transaction (retention's too). */
int pg_delete_rows(rs_backend *b, const rs_target *t, int64_t *count, rs_err *err);
int pg_import(rs_backend *b, const rs_target *t, int64_t floor,
              int (*next)(void *ctx, rs_event **ev, rs_err *err),
              int (*stored)(void *ctx, const rs_event *ev, rs_err *err), void *ctx, int64_t *added,
              int64_t *skipped, rs_err *err);

/* ---- pg_read.c ---- */
int pg_query(rs_backend *b, const rs_query *q, rs_cursor **out, rs_err *err);
/* ---- pg_search.c: backend.h's search (pg_trgm) ---- */
int pg_search(rs_backend *b, const rs_search *q, const char *thread_id, const char *run_id,
              const char *user, const char *after_thread, int64_t after_seq, rs_cursor **out,
              rs_err *err);
int pg_search_rows(rs_backend *b, const int64_t *ids, size_t n, rs_cursor **out, rs_err *err);
/* Delete the search index's rows of the blocks `blocks` (SQL over blk, with a's parameters)
 * picks. wids: NULL where the store has no table of words (an older layout); else the ids
 * of the rows' words are added to it, for pg_search_orphans. */
int pg_search_delete(rs_backend *b, const char *blocks, const pg_args *a, rs_buf *wids,
                     rs_err *err);
/* The words among wids that no block holds any more, deleted (a redacted word among them):
 * only those the rows deleted held, not the store's whole vocabulary. */
int pg_search_orphans(rs_backend *b, const rs_buf *wids, rs_err *err);
int pg_odd_ids(rs_backend *b, rs_odd_id_fn fn, void *ctx, rs_err *err);
int pg_names(rs_backend *b, rs_names_kind kind, const char *thread_id, const char *run_id,
             const char *user, const char *const *singletons, size_t n_singletons, rs_names **out,
             rs_err *err);
int pg_last_visible_ai_seq(rs_backend *b, const rs_target *t, int64_t *seq, rs_err *err);
int pg_message_objects(rs_backend *b, const char *thread_id, const char *user, int newest,
                       const char *like, rs_cursor **out, rs_err *err);
int pg_stats(rs_backend *b, const char *user, const char *thread_id, rs_stats *out, rs_err *err);
int pg_seal_insert(rs_backend *b, const rs_target *t, const rs_seal_row *row,
                   const rs_seal_tree *tree, rs_err *err);
int pg_seal_get(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err);
int pg_seal_each(rs_backend *b, int (*fn)(void *ctx, const rs_target *t, const rs_seal_row *row),
                 void *ctx, rs_err *err);
/* pg_seal.c: runfs_seal_tree. put inside the seal's transaction; extra fills the row's
 * root and note ("" without); tree is the seal's kept tree (-ENOENT: none). */
int pg_seal_tree_put(rs_backend *b, const rs_target *t, const rs_seal_row *row,
                     const rs_seal_tree *tree, rs_err *err);
int pg_seal_extra(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err);
int pg_seal_tree(rs_backend *b, const rs_target *t, const rs_seal_row *row, rs_seal_tree *tree,
                 rs_err *err);
/* pg_redact.c: rs_backend_ops.redact, redaction_each, expire and expired_each. */
int pg_redact(rs_backend *b, const rs_target *t, const rs_redact_row *w, rs_buf *warn, rs_err *err);
int pg_redaction_each(rs_backend *b, const rs_target *t, int64_t from, int64_t to,
                      int (*fn)(void *ctx, const rs_redact_row *r), void *ctx, rs_err *err);
int pg_expire(rs_backend *b, const rs_target *t, const rs_expire_row *x, rs_buf *warn, rs_err *err);
int pg_expired_each(rs_backend *b, const char *user, int (*fn)(void *ctx, const rs_expire_row *x),
                    void *ctx, rs_err *err);
int pg_seal_salts(rs_backend *b, const rs_target *t, const rs_seal_row *row, int64_t from,
                  int64_t to, rs_buf *out, rs_err *err);

/* ---- pg_changes.c: the change feed's numbers (transaction ids; shown below the oldest
 * running transaction's) ---- */
/* A read-write open: the feed's table and triggers where they are missing. */
int pg_changes_setup(rs_backend *b, rs_err *err);
/* Inside a write transaction: the run was sealed (a new number). */
int pg_change_touch(rs_backend *b, const rs_target *t, rs_err *err);
int pg_changes_sync(rs_backend *b, rs_err *err);
/* Another writer's rows above the insert trigger's watermark (the tail, pg_changes.c) not
 * noted yet, noted (a read-write open: outside a transaction, or the thread's alone right
 * after its lock); with fold (outside a transaction), folded where the tail has PG_TAIL_FOLD
 * rows or more, or any and this session neither found it empty nor tried a fold for
 * PG_TAIL_IDLE_NS (a quiet tail is folded too: every reader pays for its length). */
#define PG_TAIL_FOLD 2048
#define PG_TAIL_IDLE_NS (10 * INT64_C(1000000000))
/* e (a row of run_events) is one of the tail's rows not noted yet. The range has both ends:
 * with only its lower one, unknown when a statement is planned, the planner took a third of
 * the table and read a thread's rows by ix_events_run instead (a warm cat of a 20,000-row
 * log 4x slower); a range closed at both ends it reads by the primary key. A condition on
 * the thread goes outside (PG_TAIL_UNNOTED's fence), or the planner reads the thread's
 * index entries too. */
#define PG_TAIL_ROW(e) \
    e ".id > (SELECT value FROM runfs_meta WHERE key = 'tail_from') AND " e ".id <= (SELECT " \
      "max(id) FROM run_events) AND NOT EXISTS (SELECT 1 FROM runfs_tail c WHERE c.id = " e ".id)"
/* The threads of the tail's rows not noted yet: the lowest seq and id of each. */
#define TAIL_THREADS \
    "(SELECT e.thread_id, min(e.seq) AS lo, min(e.id) AS first FROM run_events e WHERE " PG_TAIL_ROW( \
        "e") " GROUP BY e.thread_id)"
/* The tail's rows not noted yet where cond (on e, a row of run_events) holds, counted: what a
 * reader that cannot note them (a read-only open) or reads before they are takes for marks. */
#define PG_TAIL_UNNOTED(cond) \
    "(SELECT count(*) FROM (SELECT e.thread_id FROM run_events e WHERE " PG_TAIL_ROW( \
        "e") " OFFSET 0) e WHERE " cond ")"
int pg_tail_apply(rs_backend *b, const char *thread_id, int fold, rs_err *err);
int pg_changes(rs_backend *b, int64_t after, const char *user, const char *thread_id,
               rs_change_page *page, rs_change_row_fn fn, void *ctx, rs_err *err);
int pg_changes_head(rs_backend *b, int64_t *head, rs_err *err);
/* The rest of a statement WITH ins AS (INSERT INTO run_events ... RETURNING id) whose $1,
 * $2 and $3 are the rows' thread, run and owner: the run's change number, in the same
 * statement (runfs's writers skip the trigger that numbers other writers' rows). */
/* A row's xmin (col) as the 64-bit transaction id it was, from r (a bigint expression: a
 * 64-bit id at or above it, a snapshot's xmax): the epoch r's, or the one before where the
 * low 32 bits are above r's. VACUUM FREEZE keeps a row's raw xmin, so this holds for 2^31
 * transactions after the row's, which bounds how long the tail may wait for a fold. */
#define PG_XMIN64(col, r) \
    "((" r ") - ((" r ") & 4294967295) + " col "::text::bigint - CASE WHEN " col \
    "::text::bigint > ((" r ") & 4294967295) THEN 4294967296 ELSE 0 END)"

#define PG_CHANGE_NOTE \
    ", chg AS (INSERT INTO runfs_change (thread_id, run_id, change, owner) SELECT $1::text, " \
    "$2::text, pg_current_xact_id()::text::bigint, coalesce($3::text, '') WHERE EXISTS (SELECT " \
    "1 FROM ins) ON CONFLICT (thread_id, run_id) DO UPDATE SET change = " \
    "greatest(runfs_change.change, excluded.change), deleted = false, owner = CASE WHEN " \
    "runfs_change.deleted OR runfs_change.owner = excluded.owner THEN excluded.owner END)"

#endif
