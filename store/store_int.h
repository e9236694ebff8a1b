/* store_int.h — the store handle as the store's own files see it (never outside store/). */
#ifndef RS_STORE_INT_H
#define RS_STORE_INT_H

#include "backend.h"
#include "contract.h"
#include "runstore.h"

/* The contract and what is read of it. Loaded at the open when it names a file, else at
 * the first use (rs_store_terms): a reader never needs it, and its parse was a tenth of a
 * small diff's CPU. A store is used by one thread at a time: no lock. */
typedef struct rs_terms {
    rs_contract *contract; /* NULL: not loaded yet */
    const char *const *singletons;
    size_t n_singletons;
} rs_terms;

struct rs_store {
    const rs_backend_ops *ops;
    rs_backend *be;
    rs_terms *terms; /* the pointer set at the open; what it holds loaded as above */
    rs_options opt;
    char *path;
    char *name; /* rs_store_name */
};

/* The store's contract, loaded if it was not: 0 or a negative errno with the reason in err. */
int rs_store_terms(const rs_store *s, const rs_terms **out, rs_err *err);

/* The PostgreSQL backend's module, beside librunstore.so (store/meson.build builds it). */
#define RS_PG_MODULE "librunstore-pg.so"
/* The PostgreSQL backend's operations, its module loaded at the first call (pg_load.c); when
 * it cannot be, -ELIBACC with the module's file and dlerror() in err, at every call. */
int rs_pg_load(const rs_backend_ops **out, rs_err *err);

/* What t's log keeps beside its totals (see rs_log_facts); known 0 from a backend that keeps
 * nothing. -ENOENT when the thread or run does not exist for t->user. */
int rs_store_facts(rs_store *s, const rs_target *t, rs_log_facts *out, rs_err *err);

/* A query for t's rows of one event type (*type, a static array of one name), limit rows. */
static inline rs_query rs_query_of_type(const rs_target *t, const char *const *type, int64_t limit)
{
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.run_id = t->run_id;
    q.user = t->user;
    q.event_types = type;
    q.n_event_types = 1;
    q.limit = limit;
    return q;
}

/* The run as t->user sees it; -ENOENT when it has nothing there. */
int rs_store_run_info(rs_store *s, const rs_target *t, rs_log_info *info, rs_err *err);

/* The first row of q: 1 with *cur open on it (rs_cursor_free it) and *rec set, 0 when there
 * is none, or a negative errno with err set; *cur is NULL unless 1. */
int rs_store_query_first(rs_store *s, const rs_query *q, rs_cursor **cur, const rs_record **rec,
                         rs_err *err);

/* A redacted event as a seal's checks see it (redact.c): the leaf hash of its line as sealed
 * (has_leaf 0: the run was not sealed over it) and the SHA-256 of its line as redacted. */
typedef struct rs_redacted {
    int64_t seq;
    int has_leaf;
    unsigned char leaf[32];
    unsigned char line_hash[32];
} rs_redacted;
/* The redacted events of t's run with seq in from..to, by seq (free *out). */
int rs_redacted_load(rs_store *s, const rs_target *t, int64_t from, int64_t to, rs_redacted **out,
                     size_t *n, rs_err *err);
const rs_redacted *rs_redacted_find(const rs_redacted *v, size_t n, int64_t seq);

#endif
