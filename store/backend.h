/* backend.h — what a storage backend provides to store.c: storage primitives only. store.c
 * validates and decides, and policy that does not depend on the backend (recomputing after
 * other writers' deletes, idempotency lookups) is written once in policy.c, run on the
 * backend's rs_sql primitives and handed down to it (rs_policy); a backend stores,
 * allocates seq and answers queries: SQLite (sqlite/) or PostgreSQL (postgres/), chosen by
 * the store's URI; no caller above store.c knows which. */
#ifndef RS_BACKEND_H
#define RS_BACKEND_H

#include "event.h"
#include "runstore.h"
#include "rs_util.h"

typedef struct rs_backend rs_backend;

/* The first row of a singleton identity, as stored (for confirmation). */
typedef struct rs_existing {
    rs_buf line; /* its canonical line */
    rs_buf category;
    rs_buf content_db;
    rs_buf metadata_db;
    int64_t seq;
} rs_existing;

/* A backend's primitives for the policy above it (policy.c). SQL is written with $1 and $2
 * (the SQLite backend reads them as ?1 and ?2). */
typedef struct rs_sql {
    /* Run sql about one thread: $1 its thread_key, $2 its id (a statement may use either). */
    int (*thread_exec)(rs_backend *b, const char *sql, int64_t key, const char *thread_id,
                       rs_err *err);
    /* The integer in the first column of sql's first row, $1 = a1 and $2 = a2 (a2 NULL: sql
     * has only $1); *found 0 when there is no row or it is NULL (then *out is untouched). */
    int (*int_query)(rs_backend *b, const char *sql, const char *a1, const char *a2, int64_t *out,
                     int *found, rs_err *err);
    /* The thread's logs, totals and owners indexed again from its rows. */
    int (*thread_reindex)(rs_backend *b, const char *thread_id, int64_t key, rs_err *err);
    /* The thread's row at seq as its canonical line (without its owner when anonymous);
     * *found 0 when there is none. */
    int (*row_at)(rs_backend *b, const char *thread_id, int64_t seq, int anonymous, rs_buf *line,
                  int *found, rs_err *err);
    /* The first row of a singleton identity the writer may see (ex NULL: only whether there
     * is one); *found 0 when there is none. */
    int (*once_existing)(rs_backend *b, const rs_target *t, const char *event_type, rs_existing *ex,
                         int *found, rs_err *err);
    /* *other 1 when another live writer holds the identity's reservation (a dead holder's
     * is dropped on the way). */
    int (*once_held)(rs_backend *b, const rs_target *t, const char *event_type, int *other,
                     rs_err *err);
    /* A write transaction about t's thread, the thread brought up to date and t->user's
     * access to it checked (put's -EACCES); then exactly one write_end. */
    int (*write_begin)(rs_backend *b, const rs_target *t, rs_err *err);
    /* The transaction committed when rc is 0 (a failed commit's errno), else rolled back
     * (rc). */
    int (*write_end)(rs_backend *b, int rc, rs_err *err);
    /* This writer's reservation of the singleton identity kept (runfs_hold, with what names
     * its process); -EEXIST when one is held. */
    int (*hold_insert)(rs_backend *b, const rs_target *t, const char *event_type, rs_err *err);
} rs_sql;

/* The policy a backend runs inside its own transactions, handed down at open (store.c
 * passes policy.c's rs_policy_shared; policy.h says what each decides): the backend calls
 * it through these pointers on its own rs_sql and knows nothing above backend.h. */
typedef struct rs_policy {
    int (*recompute_deleted)(const rs_sql *sql, rs_backend *b, int read_only, const char *thread_id,
                             int64_t key, rs_err *err);
    int (*idem_lookup)(const rs_sql *sql, rs_backend *b, const rs_target *t, const rs_event *ev,
                       rs_buf *line, int *used, rs_err *err);
    int (*once_gate)(const rs_sql *sql, rs_backend *b, const rs_target *t, const char *event_type,
                     rs_existing *ex, int *found, rs_err *err);
} rs_policy;

#define RS_NOTE_MAX 1024 /* a signed note's bytes, its signature line included */

/* A log's times as stat shows them (both backends' runfs_thread and runfs_run, alias t),
 * ctime then mtime: mtime_ns, its newest row's created_at, or ctime_ns, when it was made,
 * while it holds none (DESIGN "The filesystem": times are honest). */
#define RS_LOG_TIME_SQL(t) \
    "CASE WHEN " #t ".count > 0 AND " #t ".mtime_ns > 0 THEN " #t ".mtime_ns ELSE " #t \
    ".ctime_ns END, CASE WHEN " #t ".count > 0 AND " #t ".mtime_ns > 0 THEN " #t \
    ".mtime_ns ELSE " #t ".ctime_ns END"

/* One seal as stored. Strings are NUL-terminated copies owned by the struct. */
typedef struct rs_seal_row {
    char state[16]; /* "sealed" | "partial" */
    int64_t upper_seq;
    int64_t event_count;
    int64_t terminal_seq; /* 0: none */
    char digest[80];      /* "sha256:<hex>" */
    char error[513];      /* "" with has_error 0: null; up to 512 bytes */
    int has_error;
    char sealed_at[40];
    char root[80];          /* "sha256:<hex>"; "" for a seal made before roots were kept */
    char note[RS_NOTE_MAX]; /* the signed note; "" when unsigned */
    int salted;             /* its leaves are salted (merkle.h); 0 for a seal made before */
} rs_seal_row;

/* What a seal keeps for its proofs (merkle.h), beside its row; salts: a salted seal's, one
 * RS_SEAL_SALT_REC record (seq, 8 bytes little-endian, then the salt) per event, by seq. */
typedef struct rs_seal_tree {
    rs_buf seqs;
    rs_buf nodes;
    rs_buf salts;
} rs_seal_tree;

#define RS_SEAL_SALT_REC 24

/* A salt record's seq. */
static inline int64_t rs_seal_rec_seq(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return (int64_t)v;
}

/* One redaction of an event (DESIGN "Forgetting"): what runfs_redaction keeps, and for a
 * write, the row's columns before (still there, else -EAGAIN) and after. Strings
 * NUL-terminated; leaf and note NULL when none. */
typedef struct rs_redact_row {
    int64_t seq;
    const char *owner; /* the row's user_id; NULL: none */
    const char *at;
    const char *paths; /* a JSON array of strings */
    const char *reason;
    const char *leaf;      /* the leaf hash of the line as sealed, "sha256:<hex>" */
    const char *line_hash; /* SHA-256 of the line as redacted, "sha256:<hex>" */
    const char *note;
    const char *old_content, *old_meta, *content, *meta;
    size_t old_content_len, old_meta_len, content_len, meta_len;
} rs_redact_row;

/* One run removed by retention (DESIGN "Forgetting"): what runfs_expired keeps, the line of
 * expired.jsonl. Strings NUL-terminated; digest, root, sealed_at and note NULL when none. */
typedef struct rs_expire_row {
    const char *thread_id, *run_id;
    const char *owner; /* whose rows went: t->user, else the rows' one owner; NULL: none */
    int64_t upper_seq, events;
    const char *digest, *root, *sealed_at;
    const char *expired_at, *policy, *note;
    int64_t rows, top_seq; /* the run's rows of owner and their highest seq, as chosen */
} rs_expire_row;

/* What a log keeps beside its totals, so that views of it need no scan. */
/* A kept size's rows in runfs_meta (rs_store_size_put): its key and its view's range. */
typedef struct rs_size_key {
    char key[48], lo[48], hi[48];
    int64_t size;
} rs_size_key;

typedef struct rs_log_facts {
    int known;            /* 0: not kept for this user (an owner's share of a shared log) */
    int64_t msg_size;     /* bytes of messages.jsonl */
    int64_t terminal_seq; /* runs: the first run.terminal (0: none) */
    int64_t ws_seq;       /* runs: the workspace_changes workspace-changes.json shows (0: none) */
} rs_log_facts;

/* Why a store without its runs numbered shows no feed: an empty one would say nothing
 * changed. */
#define RS_FEED_UNNUMBERED \
    "this store has no change numbers yet: read its feed once read-write (runfs changes " \
    "STORE, or changes.jsonl on a read-write mount)"

/* One line of the change feed as a backend reads it: created_at as stored (DATETIME text),
 * the content and metadata of the run's first run.terminal (content NULL: none). */
typedef struct rs_change_row {
    int64_t change;
    const char *thread_id;
    const char *run_id;
    int deleted;
    int expired; /* the tombstone retention left */
    int64_t events;
    int64_t upper_seq;
    const char *created_at;
    rs_row terminal;
    const char *seal; /* NULL: none */
    int odd;          /* an id no path can name (another writer's): not in the feed */
} rs_change_row;
typedef int (*rs_change_row_fn)(void *ctx, const rs_change_row *r);
/* A bounded read of the feed (changes' page). */
typedef struct rs_change_page {
    int64_t limit; /* runs read at most (more on PostgreSQL: a number's runs go together) */
    int64_t last;  /* out: the highest number read (unchanged when none) */
    int more;      /* out: limit runs were read, more may follow */
} rs_change_page;

typedef struct rs_backend_ops {
    const char *name;
    /* The store as status.json, messages and /proc/mounts show it: never a secret (malloc'd;
     * NULL when out of memory); and its short name, shown inside a scoped mount. */
    char *(*uri_display)(const char *uri);
    char *(*uri_name)(const char *uri);
    /* The storage library's version as its project spells it ("SQLite 3.40.1"). */
    int (*library_version)(rs_buf *out);
    /* The highest seq run_events.seq holds as DeerFlow declares it (INTEGER: 64 bits on
     * SQLite, 32 on PostgreSQL): a seq or watermark past it is -EOVERFLOW, never stored. */
    int64_t seq_max;
    const char *seq_type; /* for reasons: "SQLite's INTEGER" */
    const rs_sql *sql;    /* the primitives policy.c runs on (a singleton's reservation) */
    /* policy: what the backend runs inside its transactions (kept for the store's life). */
    int (*open)(rs_backend **out, const char *uri, const rs_options *opt, const rs_policy *policy,
                rs_err *err);
    void (*close)(rs_backend *b);
    int (*data_version)(rs_backend *b, int64_t *version);
    /* rs_store_foreign_version (NULL: data_version). */
    int (*foreign_version)(rs_backend *b, int64_t *version);
    int (*refresh)(rs_backend *b, rs_err *err);
    int (*rewrites)(rs_backend *b, int64_t *n); /* rs_store_rewrites */
    int (*thread_rewrites)(rs_backend *b, const char *thread_id, int64_t *n); /* rs_store_... */
    /* A number that moves with every commit that adds run_events rows (the highest id where
     * rows commit in the order of their ids): with rewrites, rs_store_rows_version. */
    int (*rows_added)(rs_backend *b, int64_t *version);
    /* rs_store_one_look (NULL: every look probes). */
    void (*one_look)(rs_backend *b, int on);
    /* rs_store_set_wait (NULL: the backend never waits). */
    void (*set_wait)(rs_backend *b, int wait);

    /* Store evs[0..n) in one transaction with consecutive seqs, owner t->user; with
     * rs_options.owners_apart, -EACCES when t->user is set and the thread exists without
     * its rows or mkdir (put, reserve and create alike). With if_absent (n == 1): when a row of t->user (of anyone when NULL)
     * with the same (thread, run, event_type) exists, store
     * nothing, fill *existing and return 0 with *created = 0. Canonical lines of stored rows
     * are appended to stored; at (may be NULL) gets their offsets. A held reservation of this mount for the identity is released
     * in the same transaction. */
    int (*put)(rs_backend *b, const rs_target *t, rs_event *const *evs, size_t n, int if_absent,
               int *created, rs_existing *existing, rs_buf *stored, rs_placement *at, rs_err *err);
    int (*release)(rs_backend *b, const rs_target *t, const char *event_type);
    int (*create)(rs_backend *b, const rs_target *t, rs_err *err); /* run_id NULL: thread */
    int (*delete)(rs_backend *b, const rs_target *t, int64_t *count, rs_err *err);
    /* Import into thread t->thread_id (owner t->user) in one transaction: each event next
     * gives (1 with *ev set, borrowed until the next call; 0 at the end; <0 stops and stores
     * nothing) keeps its seq and created_at; an equal row (owner aside) already at (thread,
     * seq) is skipped, a different one is -EEXIST. The high-water mark is raised to floor and
     * to the highest seq imported. stored (with next's ctx) is told each row stored, as it
     * is stored: <0 stops as next's <0 does. */
    int (*import)(rs_backend *b, const rs_target *t, int64_t floor,
                  int (*next)(void *ctx, rs_event **ev, rs_err *err),
                  int (*stored)(void *ctx, const rs_event *ev, rs_err *err), void *ctx,
                  int64_t *added, int64_t *skipped, rs_err *err);

    int (*query)(rs_backend *b, const rs_query *q, rs_cursor **out, rs_err *err);
    int (*log_info)(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                    rs_log_info *out, rs_err *err);
    int (*log_seek)(rs_backend *b, const char *thread_id, const char *run_id, int64_t off,
                    rs_cursor **out, rs_err *err);
    /* The facts of a thread's (run_id NULL) or run's log as user sees it; -ENOENT when it
     * does not exist for user. NULL: the backend keeps none (views render to know). */
    /* rs_store_size_get and _put: key "size:VIEW:TOKEN" in runfs_meta; put first deletes
     * the keys between lo and hi (the view's earlier tokens), for each of n sizes in one
     * transaction (fresh: rs_store_sizes_add's, nothing deleted). found 0: no row. */
    int (*size_get)(rs_backend *b, const char *key, int64_t *size, int *found);
    int (*size_put)(rs_backend *b, const rs_size_key *keys, size_t n, int fresh);
    /* rs_store_steps_get and _put: the row (thread_id, run_id, kind) of runfs_steps, made at
     * the first put on a store that has none. found 0: no row, -1: no table. put writes only
     * while runfs_meta's rewrites is the count the data was made at; n of them (kinds[i] is
     * v[i]'s kind as text) in one transaction. */
    int (*steps_get)(rs_backend *b, const char *thread_id, const char *run_id, const char *kind,
                     rs_buf *out, int *found);
    int (*steps_put)(rs_backend *b, const rs_steps *v, const char (*kinds)[24], size_t n);
    /* rs_store_runs_info; NULL: none (the caller asks each run). */
    int (*runs_info)(rs_backend *b, const char *thread_id, rs_run_info_fn fn, void *ctx,
                     rs_err *err);
    int (*log_facts)(rs_backend *b, const char *thread_id, const char *run_id, const char *user,
                     rs_log_facts *out, rs_err *err);
    int (*names)(rs_backend *b, rs_names_kind kind, const char *thread_id, const char *run_id,
                 const char *user, const char *const *singletons, size_t n_singletons,
                 rs_names **out, rs_err *err);
    /* rs_store_odd_ids: every pair once (any order). */
    int (*odd_ids)(rs_backend *b, rs_odd_id_fn fn, void *ctx, rs_err *err);
    int (*last_visible_ai_seq)(rs_backend *b, const rs_target *t, int64_t *seq, rs_err *err);
    /* Message rows of the thread whose content is an object, in ascending seq (newest
     * first when newest), for identity scans; raw content text through the cursor's row. */
    int (*message_objects)(rs_backend *b, const char *thread_id, const char *user, int newest,
                           const char *like, rs_cursor **out, rs_err *err);
    int (*stats)(rs_backend *b, const char *user, const char *thread_id, rs_stats *out,
                 rs_err *err);
    /* The search index (NULL: none): brought up to date (not by a read-only store), then
     * the rows of the scope (thread_id NULL: every thread; user: that owner's rows) that
     * may match q, in (thread_id bytewise, seq) order after (after_thread, after_seq) when
     * after_thread is set. A superset: rs_search_match decides. -ENOSYS when it cannot
     * narrow this query (no term it indexes) or has no index: the caller scans. */
    int (*search)(rs_backend *b, const rs_search *q, const char *thread_id, const char *run_id,
                  const char *user, const char *after_thread, int64_t after_seq, rs_cursor **out,
                  rs_err *err);
    /* The rows of ids[0..n) in that order (rs_store_search_rows), ids outliving the cursor;
     * each with its row_id. */
    int (*search_rows)(rs_backend *b, const int64_t *ids, size_t n, rs_cursor **out, rs_err *err);

    /* Seals (runfs_seal), each owner's own: t->user's (NULL: the unscoped mount's, over
     * every row); seal_each names the owner in t->user. Deleting a run or thread deletes
     * the deleter's seals (every seal when t->user is NULL), as it does singletons.
     * seal_insert: -EEXIST when the run is sealed already, -EAGAIN when
     * the run no longer has exactly row->event_count rows with seq <= row->upper_seq (the
     * caller captured a receipt that changed; it captures again). tree (may be NULL) is kept
     * with it, in the same transaction, with row->root and row->note; seal_get and seal_each
     * fill those ("" where none were kept), and row->salted; tree->salts are kept too.
     * seal_tree: the kept tree of seal row (-ENOENT: none). seal_salts: the salts of seal row
     * for seqs from..to, as records (tree->salts' form), replacing out's bytes. */
    int (*seal_insert)(rs_backend *b, const rs_target *t, const rs_seal_row *row,
                       const rs_seal_tree *tree, rs_err *err);
    int (*seal_get)(rs_backend *b, const rs_target *t, rs_seal_row *row, rs_err *err);
    int (*seal_tree)(rs_backend *b, const rs_target *t, const rs_seal_row *row, rs_seal_tree *tree,
                     rs_err *err);
    /* Redactions. redact: in one write transaction, the row's columns rewritten, the
     * redaction kept, the seq's salts and the search index's text of the row dropped, under
     * the backend's way to leave no old bytes behind (SQLite: secure_delete, the WAL
     * checkpointed and truncated; PostgreSQL: VACUUM of the tables, where the role may;
     * warn says what it could not do). redaction_each: fn for each redaction of the run
     * with seq in from..to (t->user: of that owner's rows), by seq then time. */
    int (*redact)(rs_backend *b, const rs_target *t, const rs_redact_row *w, rs_buf *warn,
                  rs_err *err);
    int (*redaction_each)(rs_backend *b, const rs_target *t, int64_t from, int64_t to,
                          int (*fn)(void *ctx, const rs_redact_row *r), void *ctx, rs_err *err);
    /* Retention. expire: in one write transaction, t's run loses its rows of t->user (every
     * owner's when NULL) as delete takes them, with their seals, singletons, salts and
     * redactions and the search index's text, the thread's high-water mark kept even when
     * the thread empties, x kept (runfs_expired) and the run's tombstone marked expired;
     * -EAGAIN, nothing changed, when those rows are no longer x->events rows up to
     * x->upper_seq (the run grew meanwhile). Under redact's way to leave no old bytes
     * behind. expired_each: fn for each run expired, of owner user (NULL: all), oldest
     * first. */
    int (*expire)(rs_backend *b, const rs_target *t, const rs_expire_row *x, rs_buf *warn,
                  rs_err *err);
    int (*expired_each)(rs_backend *b, const char *user,
                        int (*fn)(void *ctx, const rs_expire_row *x), void *ctx, rs_err *err);
    int (*seal_salts)(rs_backend *b, const rs_target *t, const rs_seal_row *row, int64_t from,
                      int64_t to, rs_buf *out, rs_err *err);
    int (*seal_each)(rs_backend *b,
                     int (*fn)(void *ctx, const rs_target *t, const rs_seal_row *row), void *ctx,
                     rs_err *err);

    /* The change feed. changes_sync (read-write only) numbers what other writers did since
     * the store last looked; changes calls fn for each run user (NULL: every owner) sees
     * above after, of thread_id (NULL: all), in change order, shown only below every number
     * a running writer may still commit; -ENODATA (RS_FEED_UNNUMBERED) when the store's runs
     * were never numbered (a read-only open of a store no read-write one numbered). page
     * (NULL: every run) bounds the work: only the first page->limit runs above after (those
     * fn is not shown counted too; on PostgreSQL with every run of the last number, as one
     * commit's runs share one), their highest number in page->last, page->more set when the
     * limit was reached. changes_head: the highest number changes would show now (0: none), or
     * -ENODATA as changes, numbering nothing. */
    int (*changes_sync)(rs_backend *b, rs_err *err);
    int (*changes)(rs_backend *b, int64_t after, const char *user, const char *thread_id,
                   rs_change_page *page, rs_change_row_fn fn, void *ctx, rs_err *err);
    int (*changes_head)(rs_backend *b, int64_t *head, rs_err *err);
} rs_backend_ops;

extern const rs_backend_ops rs_sqlite_backend;
extern const rs_backend_ops rs_pg_backend;

/* Cursor internals shared by backends: a record plus the raw row it came from. */
struct rs_cursor {
    int (*next)(rs_cursor *c, const rs_record **out);
    void (*free)(rs_cursor *c);
    rs_record rec;
    rs_row row;
    rs_buf line;
    rs_event_spans spans; /* where rec.line's content and metadata are (rs_cursor_emit) */
    int64_t row_id;       /* the store's id of rec's row, where the backend tells (else 0) */
};

struct rs_names {
    int (*next)(rs_names *n, const char **name);
    void (*free)(rs_names *n);
    /* Set by next: the name's log times, where timed (rs_names_times). */
    int timed;
    int64_t ctime_ns, mtime_ns;
};

/* Render the cursor's row (filled by the backend) into c->rec and c->line. log: 0 for a
 * plain query, 1 for a run's log and 2 for a thread's, whose lines get offsets from
 * *next_off (advanced); a line ending at or before skip_to is passed over (returns 0).
 * 1 with *out set, or a negative errno. */
int rs_cursor_emit(rs_cursor *c, int log, int64_t *next_off, int64_t skip_to,
                   const rs_record **out);
/* The threads a reader (a read-only connection) indexed in memory, oldest first, with the
 * rows each holds: memory stays bounded by forgetting the oldest. */
typedef struct rs_mem_thread {
    char id[RS_ID_MAX + 1];
    int64_t rows;
    char state[160]; /* what the backend checks to know its copy current ("": none) */
} rs_mem_thread;
typedef struct rs_mem_list {
    rs_mem_thread *threads;
    size_t count, cap;
    int64_t rows;
} rs_mem_list;
/* The thread's entry; when absent NULL, or with create a new one at the end (rows 0, state
 * ""; NULL when out of memory). */
rs_mem_thread *rs_mem_find(rs_mem_list *l, const char *id, int create);
/* The thread's entry t holds rows now; then, while the list holds more than max rows, the
 * oldest threads but keep are dropped (drop(ctx, id) forgets the backend's copy of one).
 * *dropped: how many were. */
int rs_mem_trim(rs_mem_list *l, rs_mem_thread *t, int64_t rows, int64_t max,
                int (*drop)(void *ctx, const char *id), void *ctx, size_t *dropped);
void rs_mem_clear(rs_mem_list *l); /* forget every entry (the copies are gone) */
void rs_mem_release(rs_mem_list *l);

/* Items found by id (a thread may hold a hundred thousand runs: a scan per lookup would be
 * quadratic): an rs_map of rs_id_items_type, whose ctx is an rs_id_items and whose entries
 * are index + 1 into an array (*items, which may move) of fixed-size items whose first
 * member is their NUL-terminated id. */
typedef struct rs_id_items {
    void *const *items;
    size_t size;
} rs_id_items;
extern const rs_map_type rs_id_items_type;
/* Index + 1 of the item with id, 0 when there is none; *last, the one found last (a run's
 * rows mostly follow each other), is tried first and set. */
size_t rs_id_find(const rs_map *ids, size_t *last, const char *id);

/* A thread's runs during an indexing pass, found by id (the policy both backends share): an
 * array of the backend's items, each an id of RS_ID_MAX + 1 bytes first and the backend's
 * log of the run after it, and their map. A new item is made in the slot past the last
 * (rs_run_set_slot, after rs_run_set_room) and then added under its id. */
typedef struct rs_run_set {
    void *items;
    size_t size, count, cap;
    rs_id_items ctx; /* the ids' ctx: items */
    rs_map ids;
    size_t last; /* index + 1 of the item found last */
} rs_run_set;
/* clang-format off */
#define RS_RUN_SET_INIT(rs, item_size) \
    { .size = (item_size), .ctx = {(void *const *)&(rs).items, (item_size)}, \
      .ids = RS_MAP_INIT(&rs_id_items_type, &(rs).ctx) }
/* clang-format on */
void *rs_run_set_find(rs_run_set *rs, const char *id); /* the item of id; NULL: none */
int rs_run_set_room(rs_run_set *rs);                   /* room for one more item: 0 or -ENOMEM */
void *rs_run_set_slot(rs_run_set *rs);                 /* where the next item is made (room made) */
/* The slot becomes the item of id (not in the set yet): 0, or -ENAMETOOLONG. */
int rs_run_set_add(rs_run_set *rs, const char *id);
void *rs_run_set_at(const rs_run_set *rs, size_t i); /* item i, below count */
void rs_run_set_release(rs_run_set *rs);

/* A process's start time (clock ticks after boot), or -1 when it is gone or a zombie: a
 * reservation names its holder by pid and start time, so a reused pid is not the holder. */
int64_t rs_process_start(long pid);

/* An idempotency key as runfs_idem keeps it: an owner's keys are its own (the owner, a
 * unit separator no key holds, the key); a writer without an owner's as given. */
#define RS_IDEM_COLUMN_MAX (RS_ID_MAX + 1 + RS_IDEM_KEY_MAX)
int rs_idem_column(char out[RS_IDEM_COLUMN_MAX + 1], const char *user, const char *key);

/* -EOVERFLOW (nothing stored) unless n more seqs after last fit in ops's seq column. */
int rs_seq_room(const rs_backend_ops *ops, int64_t last, size_t n, rs_err *err);

#endif
