/* runstore.h — the run event store: its whole public API (views/, fs/ and cli/ also share the
 * internal helpers of store/util/rs_util.h, which the shared library does not export).
 *
 * A store holds DeerFlow-compatible run events (thread_id, run_id, seq, event_type, category,
 * content, metadata, created_at, user_id) in a SQLite file or a PostgreSQL database. Every
 * function returns 0 (or a count) on success and a negative errno on failure; a human reason
 * travels in an rs_err. */
#ifndef RUNSTORE_H
#define RUNSTORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* clockid_t, which <time.h> gives only to POSIX programs */
#include <time.h>

#define RS_VERSION "0.1.0"
#define RS_ID_MAX 64 /* thread and run ids: 1-64 of [A-Za-z0-9_-] */
#define RS_EVENT_TYPE_MAX 32
#define RS_CATEGORY_MAX 16
#define RS_MIDDLEWARE_TAG_MAX 21
#define RS_DEFAULT_MAX_EVENT (1024 * 1024)

/* ---- rs_buf: the one growable byte buffer (git's strbuf discipline) ------------------
 * Invariants: buf is never NULL and always NUL-terminated at buf[len]; a zeroed struct
 * is not valid, use RS_BUF_INIT. On allocation failure a call returns -ENOMEM and leaves
 * the buffer as it was. */
typedef struct rs_buf {
    char *buf;
    size_t len;
    size_t alloc;
} rs_buf;
/* The empty buffer every RS_BUF_INIT points at (exported by the shared library). */
extern char rs_buf_empty[];
/* (clang-format would split a brace initialiser in a macro over four lines) */
/* clang-format off */
#define RS_BUF_INIT { rs_buf_empty, 0, 0 }
/* clang-format on */

void rs_buf_release(rs_buf *b);              /* free, back to RS_BUF_INIT */
char *rs_buf_detach(rs_buf *b, size_t *len); /* hand the bytes to the caller */
/* Append the JSON value text[0..len) as cJSON prints it unformatted (its number spelling),
 * parsed under the one lock every cJSON parse of the process takes (cJSON keeps its last
 * error in a global): a program that parses with cJSON too does it through this call.
 * -EINVAL when it is no JSON value, -ENOMEM. */
int rs_buf_add_cjson(rs_buf *b, const char *text, size_t len);

/* ---- errors ----------------------------------------------------------------------------
 * code is the negative errno also returned; line is the 1-based input line a batch
 * refused (0 when not about a line); msg is one line naming the field at fault. */
typedef struct rs_err {
    int code;
    long line;
    char msg[512];
} rs_err;

/* "EINVAL" for -EINVAL or EINVAL; "OK" for 0; "errno N" for a number that is no errno. */
const char *rs_errno_name(int code);

/* 1 when s is a valid thread or run id: 1-64 of [A-Za-z0-9_-]. */
int rs_id_valid(const char *s);
int rs_id_valid_n(const char *s, size_t len);

/* ---- opening ----------------------------------------------------------------------------- */
typedef struct rs_store rs_store;
typedef struct rs_cursor rs_cursor;

/* Options and queries carry the version of this header they were built against (libgit2's
 * way): start from RS_OPTIONS_INIT / RS_QUERY_INIT, then set fields, so a field added later
 * does not change what an older program asks for. A version this library does not know is
 * -EINVAL. */
#define RS_OPTIONS_VERSION \
    8 /* 2: busy_notice, busy_ctx; 3: owners_apart; 4: pin_file,
                                  * stamp_time; 5: progress, progress_ctx; 6: seal_key;
                                  * 7: notice, notice_ctx; 8: cache_kib */
/* clang-format off */
#define RS_OPTIONS_INIT { .version = RS_OPTIONS_VERSION }
/* clang-format on */

typedef struct rs_options {
    unsigned int version;      /* RS_OPTIONS_VERSION */
    const char *contract_path; /* NULL: the contract installed with runfs */
    int sync_full;             /* fsync every commit (synchronous=FULL) */
    int allow_unknown_events;  /* accept event types the contract does not name */
    int read_only;             /* open read-only: write nothing, not even a new file (the
                                  * store must exist); refuse every write with -EROFS */
    size_t max_event_bytes;    /* per event line; 0 = RS_DEFAULT_MAX_EVENT */
    /* Called once per wait when a write has waited a second for another writer's lock and
     * goes on waiting (up to 30 s), so a command can say why it is not moving. */
    void (*busy_notice)(void *ctx, const char *store);
    void *busy_ctx;
    int owners_apart; /* owners do not meet (a mount with --user or --user-from-uid):
                                  * a writer with an owner (rs_target.user) writes only in
                                  * threads that are new or hold its rows or its mkdir (else
                                  * -EACCES), and its singletons are its own; without it,
                                  * put_if_absent's identity is DeerFlow's, owner-blind */
    /* Version 4: */
    int pin_file;   /* a mount's store: the process's first open of the path
                                  * (which may create it) fixes the file; later opens never
                                  * create one, and writes fail with -EIO once the path no
                                  * longer is that file (removed, replaced, truncated) */
    int stamp_time; /* the store's clock is the only created_at: a line that
                                  * gives one is -EINVAL */
    /* Version 5: while rs_store_open indexes rows again (converting an older side-table
     * layout, or catching up rows another program added to threads already indexed), called
     * every few thousand rows and once at the end with the rows done so far and the number
     * to do (0: not known), so a command can show progress. A thread indexed at its first
     * use reports nothing. Never called after rs_store_open returns. */
    void (*progress)(void *ctx, int64_t done, int64_t total);
    void *progress_ctx;
    /* Version 6: every seal this store makes is signed by this key (rs_seal_key_load; it
     * must outlive the store; NULL: seals are unsigned). */
    const struct rs_seal_key *seal_key;
    /* Version 7: a line for the log when the store does less than it could and the user
     * should know what that costs (today: a PostgreSQL database that refuses pg_trgm, so
     * searches scan). Called by the connection that learns it, from any thread, at most
     * once per connection: a process with several says it once itself. */
    void (*notice)(void *ctx, const char *msg);
    void *notice_ctx;
    /* Version 8: the most a SQLite connection keeps of the file's pages, in KiB (0:
     * SQLite's default, 2 MiB). A command that reads each page about once (runfs diff)
     * needs little, and what it keeps is in its peak memory. PostgreSQL ignores it. */
    size_t cache_kib;
} rs_options;

/* Open (creating when absent, unless read_only or pinned) the store at uri: a SQLite file
 * path or a postgresql:// URI (opt NULL: defaults). A store whose schema runfs cannot use (a newer side-table
 * layout, a run_events without DeerFlow's columns) is -EINVAL with the reason. The shared
 * library loads the PostgreSQL backend (librunstore-pg.so, beside it) at the first
 * postgresql:// URI: -ELIBACC, naming the file and the loader's reason, when it cannot. */
int rs_store_open(rs_store **out, const char *uri, const rs_options *opt, rs_err *err);
void rs_store_close(rs_store *s);                /* checkpoints the WAL */
const char *rs_store_backend(const rs_store *s); /* "sqlite" or "postgresql" */
const char *rs_store_path(const rs_store *s);
/* What rs_store_path shows for uri, without opening it: a PostgreSQL URI rebuilt from
 * libpq's parse with no secret in it (password, sslpassword, any option libpq marks
 * secret; only its scheme when the PostgreSQL backend cannot be loaded), a path as given.
 * Malloc'd; NULL when out of memory. */
char *rs_uri_display(const char *uri);
/* Append the libraries' versions as their projects spell them: "SQLite 3.40.1, libpq 15.3"
 * (loading the PostgreSQL backend; without it, a word that it is missing in libpq's place). */
int rs_library_versions(rs_buf *out);
/* The store named without host paths, for people and sandboxes: a SQLite file's name, a
 * PostgreSQL URI without its password and without a socket directory for host. */
const char *rs_store_name(const rs_store *s);
size_t rs_store_max_event(const rs_store *s);
/* The active contract's raw bytes (for contract.json). */
const char *rs_store_contract_text(const rs_store *s, size_t *len);
/* A number that changes whenever any connection (any process) commits to the store. */
int rs_store_data_version(rs_store *s, int64_t *version);
/* A number that moves when another process commits to the store; this process's own
 * commits move it only where the backend cannot tell them apart (PostgreSQL, and SQLite
 * outside WAL mode: there it is data_version). Each rs_store keeps its own number. It never
 * waits for this process's write transactions: on SQLite, a commit made while one is open
 * may move it at a later call only (a few calls later at most). */
int rs_store_foreign_version(rs_store *s, int64_t *version);
/* on: the store looks for other processes' commits once, at its first look, until off:
 * what one request reads is the store as that look found it, at one probe instead of one
 * per query (a write transaction still looks every time). */
void rs_store_one_look(rs_store *s, int on);
/* A read on s whose database connection broke under it is tried again while the server
 * comes back, up to connect_timeout (PostgreSQL; on by default). A caller about to write
 * turns it off for the checks it makes first, as a write in flight is not tried again. A
 * request that finds the server down before it sends anything waits for it either way. */
void rs_store_set_wait(rs_store *s, int wait);

/* A number that moves whenever any writer changed a row in place or deleted one (what was
 * kept of the middle of a log, such as the kernel's pages of it, may no longer hold; an
 * append only adds at the end). Between two equal answers rows were only added. */
int rs_store_rewrites(rs_store *s, int64_t *n);
/* The rewrites count (rs_store_rewrites) as it was when a row of thread_id was last changed
 * in place or deleted (0: never): it moves when one of the thread's rows does, and not for a
 * rewrite elsewhere. It never comes back to a number it had. Where the store keeps no count
 * per thread (a read-only open of a store an older build set up) it is rs_store_rewrites. */
int rs_store_thread_rewrites(rs_store *s, const char *thread_id, int64_t *n);
/* A number that moves whenever any writer added, changed or deleted rows (the highest row
 * id, on PostgreSQL with the transactions in flight, as ids commit out of order there; the
 * rewrites count): unlike data_version, every connection of every process reads the same
 * number of the same rows, so what was computed from all the rows (a search at the root)
 * is kept against it. */
int rs_store_rows_version(rs_store *s, int64_t *version);

/* Index rows another program (DeerFlow) added to or deleted from the database since this
 * store last looked; a read-only probe when there is nothing to do. */
int rs_store_refresh(rs_store *s, rs_err *err);

/* A store is used by one thread at a time. Threads of one process share no rs_store: each
 * opens its own on the same uri (WAL lets readers run beside a writer). Writers of one
 * database in one process queue on a lock of that database (taken by rs_store_open too,
 * when it sets up the schema); stores of different databases never wait for each other. */

/* ---- records ------------------------------------------------------------------------------ */
typedef struct rs_record {
    int64_t seq;
    const char *thread_id;
    const char *run_id;
    const char *event_type;
    const char *category;
    const char *user_id; /* NULL when the row has no owner */
    const char *line;    /* canonical JSON line, '\n'-terminated */
    size_t line_len;
    int64_t run_off;    /* byte offset of line in the run's events.jsonl, from a
                                  * cursor of rs_store_log_seek on that run; else -1 */
    int64_t thread_off; /* likewise for the thread's events.jsonl */
} rs_record;

/* Next record: 1 with *out set (valid until the next call), 0 at the end, <0 on error. */
int rs_cursor_next(rs_cursor *c, const rs_record **out);
void rs_cursor_free(rs_cursor *c);

/* ---- writing ------------------------------------------------------------------------------
 * user: the owner stamped on new rows (NULL: none). A refused write stores nothing. */
typedef struct rs_target {
    const char *thread_id;
    const char *run_id;
    const char *user;
} rs_target;

/* Parse and validate every '\n'-terminated line of buf[0..len) (a last line without '\n'
 * counts too) and store them as one atomic batch with consecutive seqs. The canonical lines
 * stored are appended to stored (may be NULL). -EINVAL/-EMSGSIZE name the line in err. */
int rs_store_append(rs_store *s, const rs_target *t, const char *buf, size_t len, rs_buf *stored,
                    rs_err *err);

/* Where an append's lines landed: the byte offsets of its first line in the run's and the
 * thread's events.jsonl (a batch is contiguous in both), and the bytes it added there (less
 * than what stored got when a line's idempotency key was already used: that line's
 * original record is confirmed, not stored again). */
typedef struct rs_placement {
    int64_t run_off;
    int64_t thread_off;
    int64_t len;
} rs_placement;

/* What rs_store_append checks of the lines (JSON, the contract, ids, sizes), storing
 * nothing and asking nothing of the store's rows (owners, seqs, keys): a dry run. A
 * read-only store serves. A singleton's line (rs_store_line_singleton), which an append
 * refuses, passes as rs_store_put_singleton would take it. */
int rs_store_check_lines(rs_store *s, const rs_target *t, const char *buf, size_t len, rs_err *err);

/* Does the line name an event type the contract marks a singleton (run.terminal, ...)? 1
 * with that type in type (which rs_store_put_singleton then stores, as `runfs put` does);
 * 0 for any other line. A malformed line may be either: storing it says what is wrong. */
int rs_store_line_singleton(const rs_store *s, const char *line, size_t len, rs_buf *type);

/* rs_store_append that also says where the lines landed (at may be NULL). */
int rs_store_append_at(rs_store *s, const rs_target *t, const char *buf, size_t len, rs_buf *stored,
                       rs_placement *at, rs_err *err);

typedef enum rs_confirm {
    RS_CONFIRMED_NEW = 1,      /* stored now */
    RS_CONFIRMED_EXISTING = 2, /* an equal event was already stored: its seq kept */
} rs_confirm;

/* put_if_absent for event_type given by a one-line body (its event_type, when given, must
 * equal event_type). exclusive: an existing singleton is -EEXIST. Otherwise an existing equal
 * one is RS_CONFIRMED_EXISTING and a different one -EEXIST (conflict). The stored record's
 * canonical line goes to stored. Returns the rs_confirm outcome or a negative errno. */
int rs_store_put_singleton(rs_store *s, const rs_target *t, const char *event_type,
                           const char *body, size_t len, int exclusive, rs_buf *stored,
                           rs_err *err);

/* put_if_absent as DeerFlow names it: created=1 when stored now, else the earliest existing
 * row with the same (thread, run, event_type) is returned and the body ignored. */
int rs_store_put_if_absent(rs_store *s, const rs_target *t, const char *body, size_t len,
                           rs_buf *stored, int *created, rs_err *err);

/* Reserve once/<event_type> between an exclusive create and its commit, across processes.
 * -EEXIST when the event exists or another holder has the reservation. */
int rs_store_reserve_singleton(rs_store *s, const rs_target *t, const char *event_type,
                               rs_err *err);
int rs_store_release_singleton(rs_store *s, const rs_target *t, const char *event_type);

/* mkdir threads/T and threads/T/runs/R: make an empty thread or run visible. */
int rs_store_create_thread(rs_store *s, const char *thread_id, const char *user, rs_err *err);
int rs_store_create_run(rs_store *s, const rs_target *t, rs_err *err);

/* delete_by_run / delete_by_thread: rows of user only (NULL: every owner). The thread's
 * high-water mark never goes down for a run delete; a thread delete drops it only when no
 * row of the thread remains. *count = rows deleted. */
int rs_store_delete_run(rs_store *s, const rs_target *t, int64_t *count, rs_err *err);
int rs_store_delete_thread(rs_store *s, const char *thread_id, const char *user, int64_t *count,
                           rs_err *err);

/* ---- reading ------------------------------------------------------------------------------
 * user NULL: every owner's rows; otherwise only that owner's. */
#define RS_QUERY_VERSION 1
/* clang-format off */
#define RS_QUERY_INIT { .version = RS_QUERY_VERSION }
/* clang-format on */

typedef struct rs_query {
    unsigned int version; /* RS_QUERY_VERSION */
    const char *thread_id;
    const char *run_id; /* NULL: the whole thread */
    const char *user;
    int messages_only;              /* category = 'message' */
    const char *category;           /* only this category (lets a type filter use an index) */
    const char *const *event_types; /* NULL: any type; else n_event_types names */
    size_t n_event_types;
    const char *task_id; /* metadata.task_id equals this string */
    int64_t after_seq;   /* exclusive; 0: none */
    int64_t before_seq;  /* exclusive; 0: none */
    int64_t limit;       /* 0: no limit */
    int newest;          /* with limit and no after_seq: the newest limit rows */
} rs_query;

/* Rows matching q, always in ascending seq (list_events, list_messages, ...). */
int rs_store_query(rs_store *s, const rs_query *q, rs_cursor **out, rs_err *err);

/* A thread's or run's events.jsonl as a byte log. */
typedef struct rs_log_info {
    int exists;    /* the thread/run exists for this user */
    int exact;     /* size and offsets hold for this user (single owner) */
    int64_t size;  /* bytes of events.jsonl */
    int64_t count; /* events */
    int64_t message_count;
    int64_t last_seq; /* highest seq of a row (0: none) */
    int64_t hwm;      /* thread only: next seq - 1 (the high-water mark) */
    int64_t mtime_ns; /* last append or creation */
    int64_t ctime_ns;
} rs_log_info;

/* run_id NULL: the thread. */
int rs_store_log_info(rs_store *s, const char *thread_id, const char *run_id, const char *user,
                      rs_log_info *out, rs_err *err);
/* Records of the log from the one holding byte offset off on (needs info.exact). */
int rs_store_log_seek(rs_store *s, const char *thread_id, const char *run_id, int64_t off,
                      rs_cursor **out, rs_err *err);
/* Every run of a thread as rs_store_log_info (user NULL: every owner's rows) and
 * rs_store_messages_size give it, in one read: fn(ctx, run_id, info, msg_size) for each, in
 * no set order, msg_size -1 where the store keeps none; fn's nonzero stops and is returned.
 * -ENOSYS when the store reads them a run at a time (the caller asks each). */
typedef int (*rs_run_info_fn)(void *ctx, const char *run_id, const rs_log_info *info,
                              int64_t msg_size);
int rs_store_runs_info(rs_store *s, const char *thread_id, rs_run_info_fn fn, void *ctx,
                       rs_err *err);
/* The exact size of the thread's (run_id NULL) or run's messages.jsonl as user sees it,
 * kept by every write: 1 with *size set, 0 when the store does not keep it for this user
 * (the view must be rendered to know), -ENOENT when the thread or run does not exist. */
int rs_store_messages_size(rs_store *s, const char *thread_id, const char *run_id, const char *user,
                           int64_t *size, rs_err *err);

/* A rendered view's size kept in the store (runfs_meta) for any later stat, on any mount:
 * view names the view and who looks, token what the size was computed from (the rows, the
 * rewrites count, a seal), so a change by any writer misses. 1 with *size set when kept
 * with that token, 0 when not (or on any failure: the caller renders). */
int rs_store_size_get(rs_store *s, uint64_t view, uint64_t token, int64_t *size);
/* Keep view's size for token, replacing its earlier ones; best effort (a read-only store
 * keeps nothing): 0 or a negative errno. */
int rs_store_size_put(rs_store *s, uint64_t view, uint64_t token, int64_t size);
/* n sizes kept as rs_store_size_put keeps each, in one transaction (a commit per size is
 * most of what keeping many costs). */
typedef struct rs_size {
    uint64_t view, token;
    int64_t size;
} rs_size;
int rs_store_sizes_put(rs_store *s, const rs_size *v, size_t n);
/* The same for views of which no size is kept (those of a thread whose every row one import
 * just wrote): no earlier token of each is dropped. One left by an earlier life of the thread
 * stays until the view's next rs_store_sizes_put, and is never taken: the delete that ended
 * that life moved rs_store_rewrites, which every token names. */
int rs_store_sizes_add(rs_store *s, const rs_size *v, size_t n);
/* A run's step data (views/stepdiff.c's: its step lines' hashes, seqs and the stats its diff
 * compares) kept in the store (runfs_steps) for any later diff, on any mount or command.
 * kind names the data's format and who looks; the bytes name the rows they were made from,
 * which the caller checks against the run as it is. 1 with the bytes appended to out when
 * kept, 0 when not (or on any failure: the caller reads the rows), -ENOENT when the store
 * has no place for them (no runfs writer set it up: a command keeps nothing there). */
int rs_store_steps_get(rs_store *s, const rs_target *t, uint64_t kind, rs_buf *out);
/* Keep the run's step data for kind, replacing what was kept, if the store's count of
 * in-place changes (rs_store_rewrites) is still rewrites, the one the data was made at:
 * data of rows a redaction or an update changed meanwhile is never written. Best effort
 * (a read-only store keeps nothing): 0 or a negative errno. */
int rs_store_steps_put(rs_store *s, const rs_target *t, uint64_t kind, int64_t rewrites,
                       const void *data, size_t len);
/* n runs' step data kept as rs_store_steps_put keeps each, in one transaction (a writer that
 * keeps many runs' at once, as an import does: a commit a run would cost more than the
 * keeping). Each is written only while the store's rewrites is its own. */
typedef struct rs_steps {
    const rs_target *t;
    uint64_t kind;
    int64_t rewrites;
    const void *data;
    size_t len;
} rs_steps;
int rs_store_steps_put_many(rs_store *s, const rs_steps *v, size_t n);

/* Names: threads, a thread's runs, a run's event types, task ids, singleton types. */
typedef enum rs_names_kind {
    RS_NAMES_THREADS,
    RS_NAMES_RUNS,
    RS_NAMES_TYPES,
    RS_NAMES_TASKS,
    RS_NAMES_SINGLETONS,
} rs_names_kind;
typedef struct rs_names rs_names;
int rs_store_names(rs_store *s, rs_names_kind kind, const char *thread_id, const char *run_id,
                   const char *user, rs_names **out, rs_err *err);
/* Next name: 1 with *name set (valid until the next call), 0 at the end, <0 on error. */
int rs_names_next(rs_names *n, const char **name);
/* The times (rs_log_info's ctime_ns, mtime_ns) of the thread or run rs_names_next last gave,
 * read in the listing's own statement: 1 where that listing knows them exactly (of every
 * owner, indexed, on a writable store), else 0 (stat the name for them). */
int rs_names_times(rs_names *n, int64_t *ctime_ns, int64_t *mtime_ns);
void rs_names_free(rs_names *n);

/* Each (thread_id, run_id) of rows another writer stored with an id outside the id rule
 * (never shown, listed, searched or in the feed), once, to fn with the ids' bytes (a NUL
 * included) and lengths; fn's nonzero return stops and is returned. */
typedef int (*rs_odd_id_fn)(void *ctx, const char *thread_id, size_t thread_len, const char *run_id,
                            size_t run_len);
int rs_store_odd_ids(rs_store *s, rs_odd_id_fn fn, void *ctx, rs_err *err);

/* count_messages. */
int rs_store_count_messages(rs_store *s, const char *thread_id, const char *user, int64_t *count,
                            rs_err *err);
/* get_last_visible_ai_seq_by_run for one run: -ENOENT when the run has none. */
int rs_store_last_visible_ai_seq(rs_store *s, const rs_target *t, int64_t *seq, rs_err *err);
/* get_message_seqs for one identity ("tool:<id>" or "message:<id>"): -ENOENT when absent. */
int rs_store_message_seq(rs_store *s, const char *thread_id, const char *user, const char *identity,
                         int64_t *seq, rs_err *err);
/* find_latest_ai_message_run_ids for one message id: -ENOENT when absent. */
int rs_store_latest_ai_run(rs_store *s, const char *thread_id, const char *user,
                           const char *message_id, rs_buf *run_id, rs_err *err);

/* Totals for status.json. */
typedef struct rs_stats {
    int64_t threads;
    int64_t runs;
    int64_t events;
} rs_stats;
/* user / thread_id (either may be NULL): count only what that owner, that thread, sees. */
int rs_store_stats(rs_store *s, const char *user, const char *thread_id, rs_stats *out,
                   rs_err *err);

/* ---- projections, receipts and seals (spec sections 7 and 10) ---------------------------- */

/* history.jsonl: the thread history a chat UI shows (message rows minus middleware rows,
 * subagent AI rows and rows of superseded runs), rows with seq > after_seq. */
int rs_store_history(rs_store *s, const char *thread_id, const char *user, int64_t after_seq,
                     rs_cursor **out, rs_err *err);
/* history.jsonl read in pieces: the thread's hidden runs, computed once by rs_history_open
 * and kept by the reader (no store inside: any store of the same database may use it), so
 * each piece costs only the rows it reads. */
typedef struct rs_history rs_history;
int rs_history_open(rs_store *s, const char *thread_id, const char *user, rs_history **out,
                    rs_err *err);
/* The history rows of h's thread with seq > after_seq. The cursor must not outlive h. */
int rs_history_query(rs_store *s, const rs_history *h, int64_t after_seq, rs_cursor **out,
                     rs_err *err);
/* The history rows among the thread's last limit message rows below before_seq, in seq
 * order (fewer than limit when some are not shown): a read near the end of history.jsonl
 * finds its row from there. The cursor must not outlive h. */
int rs_history_newest(rs_store *s, const rs_history *h, int64_t before_seq, int64_t limit,
                      rs_cursor **out, rs_err *err);
/* *shows 1 when the record c last gave (a cursor of h's thread and owner, in seq order) is
 * a row of history.jsonl: one pass over the thread's rows sizes history.jsonl beside the
 * views that read every row. Uses h's scratch space: one caller at a time. */
int rs_history_shows(rs_history *h, const rs_cursor *c, int *shows);
/* rs_history_shows but for the row's run: *passes 1 when the record c last gave is a
 * message row its own caller and type leave in history.jsonl; whether its run is hidden
 * (which later rows may decide, either way) is rs_history_run_hidden's. A size kept per run
 * is adjusted to the hidden runs of a later state of the thread that way. */
int rs_history_passes(rs_history *h, const rs_cursor *c, int *passes);
/* 1 when history.jsonl leaves run_id's rows out (a superseded or failed attempt), else 0. */
int rs_history_run_hidden(const rs_history *h, const char *run_id);
void rs_history_free(rs_history *h);
/* workspace-changes.json: the latest workspace_changes payload, or the available:false
 * document; '\n'-terminated. */
int rs_store_workspace_changes(rs_store *s, const rs_target *t, rs_buf *out, rs_err *err);
/* receipt.json: {thread_id, run_id, upper_seq, event_count, terminal}. */
int rs_store_receipt(rs_store *s, const rs_target *t, rs_buf *out, rs_err *err);
/* seal.json as stored: -ENOENT until the run is sealed. */
int rs_store_seal_read(rs_store *s, const rs_target *t, rs_buf *out, rs_err *err);
/* Seal the run (exclusive create of seal.json). body: empty, or {"state":"partial",
 * "error":"why"}. -EINVAL without a valid run.terminal inside the boundary (unless
 * partial), -EEXIST when already sealed. The seal document goes to out (may be NULL). */
int rs_store_seal(rs_store *s, const rs_target *t, const char *body, size_t len, rs_buf *out,
                  rs_err *err);
/* Recompute every seal's digest; fn is called for each sealed run (ok = 0 when its evidence
 * changed, why says how; RS_VERIFY_DELETED when every row of the run was deleted after
 * sealing, which is not counted as changed). Returns the number of runs that changed, or a
 * negative errno. */
#define RS_VERIFY_DELETED 2
/* ok: the run holds by its root, with redacted events (why: how many, and a warning when
 * its leaves are plain). */
#define RS_VERIFY_REDACTED 3
/* ok: the run was removed by retention (why: when, why, and the root its seal had); its
 * seal, if any, is gone with it and not checked. */
#define RS_VERIFY_EXPIRED 4
typedef int (*rs_verify_fn)(void *ctx, const char *thread_id, const char *run_id, int ok,
                            const char *why);
int rs_store_verify(rs_store *s, rs_verify_fn fn, void *ctx, rs_err *err);

/* ---- the change feed (DESIGN "The change feed") ------------------------------------------
 * Every commit that adds, deletes or changes in place rows of a run, or seals it, gives the
 * run a new change number: store-wide, increasing, never reused. A number is shown only once
 * every smaller one has committed or been abandoned, so a consumer that asks again after the
 * highest number it read misses nothing. */
typedef struct rs_change {
    int64_t change;
    const char *thread_id;
    const char *run_id;
    int deleted;        /* a tombstone: the run has no rows left; upper_seq..at unset */
    int64_t upper_seq;  /* the run's highest seq, as the reader sees it */
    int64_t events;     /* its events, as the reader sees them */
    const char *status; /* its run.terminal's content.status; NULL: none */
    const char *seal;   /* "sealed" | "partial"; NULL: not sealed by the reader's owner */
    const char *at;     /* created_at of its newest event, canonical */
    int expired;        /* a tombstone retention left (rs_store_expire); last, so the
                         * members above keep their places for programs built before */
} rs_change;

/* fn for each run user (NULL: every owner) sees with a change above after, of thread_id
 * (NULL: every thread), in change order, each once at its latest change (valid during the
 * call; a nonzero return stops and is returned). A read-write store first numbers what
 * other writers did since it last looked. */
int rs_store_changes(rs_store *s, int64_t after, const char *user, const char *thread_id,
                     int (*fn)(void *ctx, const rs_change *c), void *ctx, rs_err *err);
/* The feed a page at a time, for a reader that must bound its work and memory whatever
 * the number of runs that changed (a mount's step keeper): as rs_store_changes (fn returns 0
 * or a negative errno), over the first limit runs above after only (those fn is not shown
 * count too; on PostgreSQL the runs of one commit share a number and come together, so a
 * page may hold more). *last: their highest change, the after of the next page (after when
 * none). 1 when the page was full (more may follow), 0 when the feed had no more, or a
 * negative errno. */
int rs_store_changes_page(rs_store *s, int64_t after, int64_t limit, const char *user,
                          const char *thread_id, int (*fn)(void *ctx, const rs_change *c),
                          void *ctx, int64_t *last, rs_err *err);
/* The highest change the feed shows now (0: none): a reader that starts there reads only
 * what commits from now on. -ENODATA when the store's runs were never numbered: this call
 * numbers nothing (the first read of the feed numbers every run the store holds). */
int rs_store_changes_head(rs_store *s, int64_t *head, rs_err *err);
/* ---- provable and signed seals (DESIGN "Receipts and seals") ------------------------------ */
/* proofs/<seq>: {seq, leaf_index, tree_size, root, path} of an event inside the seal's
 * boundary; -ENOENT outside it or when the run is not sealed (or was sealed before roots
 * were kept), -EBADMSG when the run's rows changed since (runfs verify says which). */
int rs_store_proof(rs_store *s, const rs_target *t, int64_t seq, rs_buf *out, rs_err *err);
/* seal.note: the seal's signed note; -ENOENT when the run has no signed seal. */
int rs_store_seal_note(rs_store *s, const rs_target *t, rs_buf *out, rs_err *err);
/* An Ed25519 private key (PEM, as `openssl genpkey -algorithm ed25519` writes it) that
 * signs seals as name (NULL: the host name; no spaces, '+' or newlines, 1-128 bytes). A
 * file that others than its owner may read or write is refused with -EPERM, as ssh does. */
typedef struct rs_seal_key rs_seal_key;
int rs_seal_key_load(rs_seal_key **out, const char *path, const char *name, rs_err *err);
void rs_seal_key_free(rs_seal_key *k);
/* The public half (PEM: `openssl pkey -pubout`) that checks notes. */
typedef struct rs_seal_pub rs_seal_pub;
int rs_seal_pub_load(rs_seal_pub **out, const char *path, rs_err *err);
void rs_seal_pub_free(rs_seal_pub *k);
/* A C2SP signed note note[0..len): 0 when a signature line of key (its name's key hash)
 * verifies over the body; -EBADMSG (unsigned by key, bad signature) or -EINVAL (not a
 * note) with why. */
int rs_note_verify(const rs_seal_pub *key, const char *note, size_t len, rs_err *err);
/* One event's proof (runfs verify-proof): seal is a seal.json, line the event's line as
 * events.jsonl shows it (its '\n' added when missing), proof its proofs/<seq>. 0 when the
 * line is covered by the seal's root; -EBADMSG (does not verify) or -EINVAL (malformed)
 * with why. */
int rs_proof_verify(const char *seal, size_t seal_len, const char *line, size_t line_len,
                    const char *proof, size_t proof_len, rs_err *err);
/* rs_store_verify, and every seal must carry a note by key whose body is the seal's (an
 * unsigned seal, one signed by another key or a note that does not match count as
 * changed). */
int rs_store_verify_key(rs_store *s, const rs_seal_pub *key, rs_verify_fn fn, void *ctx,
                        rs_err *err);

/* ---- forgetting (DESIGN "Forgetting: redaction and retention") --------------------------- */
/* Redact event seq of t's run (t->user: only that owner's rows, another's is -EACCES): each
 * of paths (dot-separated from content. or metadata., numbers index arrays; none: the whole
 * content) becomes "[redacted]" and metadata.redaction records {at, reason, paths}. reason
 * is required (-EINVAL), so is every path existing (-EINVAL). When the call returns the old
 * bytes are in no row, index or free page of the store; warn (may be NULL) says what could
 * not be erased yet. out gets the redactions.jsonl line. A sealed run keeps the leaf hash of
 * the line as sealed; with the store's seal key the redaction gets a signed note. */
int rs_store_redact(rs_store *s, const rs_target *t, int64_t seq, const char *const *paths,
                    size_t n, const char *reason, rs_buf *out, rs_buf *warn, rs_err *err);
/* One line appended to redactions.jsonl, {"seq": N, "paths": [...], "reason": "..."}
 * (paths optional), redacted as rs_store_redact does (-EINVAL for another shape). */
int rs_store_redact_line(rs_store *s, const rs_target *t, const char *line, size_t len, rs_buf *out,
                         rs_buf *warn, rs_err *err);
/* redactions.jsonl: {seq, paths, reason, at, leaf, note} of every redaction of the run. */
int rs_store_redactions(rs_store *s, const rs_target *t, rs_buf *out, rs_err *err);

/* Retention: remove whole runs (t's scope: o->thread_id NULL every thread, o->user NULL every
 * owner's rows) whose newest event is older than o->older_than_s seconds, or all but each
 * thread's newest o->keep_runs runs (by newest event's created_at, ties by run id); a run
 * with no events, or with an event newer than the cutoff, never goes. Removal is complete as
 * for a redaction (rows, index, free pages, WAL; warn says what could not be erased yet), the
 * thread's high-water mark stays, the change feed shows an expired tombstone, and
 * expired.jsonl keeps a line per run. fn (may be NULL) gets each run's expired.jsonl line
 * (with dry_run: each run that would go; nothing changes and a read-only store serves).
 * Returns the number of runs removed (or that would be). */
#define RS_EXPIRE_VERSION 1
/* clang-format off */
#define RS_EXPIRE_INIT { .version = RS_EXPIRE_VERSION, .older_than_s = -1, .keep_runs = -1 }
/* clang-format on */
typedef struct rs_expire_opts {
    unsigned int version;  /* RS_EXPIRE_VERSION */
    int64_t older_than_s;  /* -1: no age limit */
    int64_t keep_runs;     /* -1: no count limit (one of the two must be set) */
    const char *thread_id; /* NULL: every thread */
    const char *user;      /* NULL: every owner's rows */
    int dry_run;
    const char *policy; /* what expired.jsonl says of why ("older-than 30d"); NULL: made */
} rs_expire_opts;
int rs_store_expire(rs_store *s, const rs_expire_opts *o,
                    int (*fn)(void *ctx, const char *line, size_t len), void *ctx, rs_buf *warn,
                    rs_err *err);
/* expired.jsonl: {thread_id, run_id, upper_seq, events, digest, root, sealed_at, expired_at,
 * policy, note} of every run expired (user: of that owner's; thread_id: of that thread's),
 * in the order they went. */
int rs_store_expired(rs_store *s, const char *user, const char *thread_id, rs_buf *out,
                     rs_err *err);
/* A duration as --older-than and --retain take it: a positive number and a unit, s m h d or
 * w (30d, 12h); -EINVAL otherwise. */
int rs_duration_parse(const char *text, int64_t *seconds, rs_err *err);

/* ---- DeerFlow's JSONL store (threads/T/runs/R.jsonl under its .deer-flow folder) -------- */

/* Where rs_store_import reads one thread's lines. next: 1 with *run_id (the run its file
 * names) and the line without its '\n', 0 at the end, <0 to stop (err filled). bad: told
 * about a malformed line (err says why); 0 skips it, <0 stops; NULL stops at the first.
 * stored (may be NULL): told each row the import stores, as a read of it would give it (its
 * canonical line, valid during the call; no offsets), as it is stored, so a caller keeping
 * sizes of the rows need not read them back; a row told is in the store only if the import
 * then returns 0. <0 stops (err filled) and stores nothing. */
typedef struct rs_import_src {
    int (*next)(void *ctx, const char **run_id, const char **line, size_t *len, rs_err *err);
    int (*bad)(void *ctx, const rs_err *err);
    void *ctx;
    int (*stored)(void *ctx, const rs_record *rec, rs_err *err);
} rs_import_src;

typedef struct rs_import_opts {
    const char *user; /* owner stamped on the rows imported (NULL: none) */
    int64_t floor;    /* DeerFlow's .seq-watermark for the thread (0: none) */
    int strict;       /* check the contract's content schemas too */
} rs_import_opts;

/* Import one thread's DeerFlow JSONL lines in one transaction: seq and created_at kept, the
 * envelope checked (ids, JSON, seq increasing within a run's file, timestamps); rows already
 * present and equal are skipped (*skipped), a different row at an existing seq is -EEXIST;
 * on any error nothing of the thread changes. The thread's high-water mark is raised to the
 * highest seq imported and to o->floor. */
int rs_store_import(rs_store *s, const char *thread_id, const rs_import_opts *o,
                    const rs_import_src *src, int64_t *added, int64_t *skipped, rs_err *err);

/* Append DeerFlow's JSONL line for a record's canonical line: its key order (seq after
 * metadata, no user_id), json.dumps separators, created_at as Python's isoformat(). */
int rs_deerflow_line(rs_buf *out, const char *line, size_t len, rs_err *err);

/* ---- search (search/<query>) -------------------------------------------------------------
 * A query is terms separated by spaces, all of which must match: "two words" is one term;
 * type:X the event type X exactly (type:X* a prefix), category:X the category; -term
 * excludes; any other term is a substring of the canonical JSON text of the event's content
 * or of its metadata (as events.jsonl shows them), ASCII letters ignoring case, every other
 * byte exactly (grep -iF on those bytes), within one of the two, not across them. */
#define RS_SEARCH_MAX 255 /* bytes of a query: it is a file name */
typedef struct rs_search rs_search;
/* Parse query: -EINVAL for an unbalanced quote or a query with no term, -ENAMETOOLONG over
 * RS_SEARCH_MAX bytes, each with the reason in err. */
int rs_search_parse(rs_search **out, const char *query, rs_err *err);
void rs_search_free(rs_search *q);
/* 1 when q holds the term by:run: its answer is one line per matching run,
 * {"thread_id","run_id","matches","first_seq","last_seq"}, not the events. */
int rs_search_by_run(const rs_search *q);
/* Whether q's answer is read a part at a time, each part by a search of its own (a mount's
 * reads, each reopening it after the last row given): the store then gives its first rows
 * as it finds them, where it would otherwise read, match and order the whole answer before
 * the first (SQLite's held matches: the fastest way to an answer read whole by one search).
 * Off after rs_search_parse. */
void rs_search_set_streamed(rs_search *q, int streamed);
/* 1 when the record (its canonical line) matches every term of q, else 0 (or -ENOMEM). */
int rs_search_match(rs_search *q, const rs_record *rec);
/* The records of the scope that match q: thread_id NULL every thread user sees (in thread
 * id order, bytewise), run_id NULL the whole thread; in seq order within a thread; only
 * those after (after_thread, after_seq) when after_thread is set. The store brings its
 * search index up to date first (a read-only store uses what it finds, or scans). q must
 * outlive the cursor. */
int rs_store_search(rs_store *s, rs_search *q, const char *thread_id, const char *run_id,
                    const char *user, const char *after_thread, int64_t after_seq, rs_cursor **out,
                    rs_err *err);
/* The store's id of the row the search cursor c gave last (0 when it cannot say): what
 * rs_store_search_rows reads again. */
int64_t rs_search_row_id(const rs_cursor *c);
/* The rows of ids[0..n), in that order, rendered as rs_store_search gave them (a search's
 * answer read again with no match and no scan); an id without a row is passed over. ids
 * must outlive the cursor. */
int rs_store_search_rows(rs_store *s, const int64_t *ids, size_t n, rs_cursor **out, rs_err *err);

#endif
