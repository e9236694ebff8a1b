/* policy.h — what the store decides the same way whatever its backend, written once here
 * (policy.c) above backend.h, and run on a few storage primitives each backend gives
 * (rs_sql). A backend calls these from inside its own transaction. */
#ifndef RS_POLICY_H
#define RS_POLICY_H

#include "backend.h"

/* A backend's primitives for the policy. SQL is written with $1 and $2 (the SQLite backend
 * reads them as ?1 and ?2). */
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
} rs_sql;

/* Another writer (DeerFlow's delete_by_run / delete_by_thread) deleted rows of the thread:
 * its owners are what its rows say, a run with no rows left disappears, what belonged to the
 * rows gone goes with them (singletons, idempotency keys; seals stay as tombstones), and a
 * thread with none disappears and starts again at seq 1. A read-only store changes only its
 * own copy of the logs. */
int rs_recompute_deleted(const rs_sql *sql, rs_backend *b, int read_only, const char *thread_id,
                         int64_t key, rs_err *err);

/* Has the thread seen ev's idempotency key? *used = 1 with the original record's line in
 * line when it is the same event; -EEXIST when the key produced a different one. A key whose
 * row was deleted since is free again. */
int rs_idem_lookup(const rs_sql *sql, rs_backend *b, const rs_target *t, const rs_event *ev,
                   rs_buf *line, int *used, rs_err *err);

/* put_if_absent's gate, inside the put's transaction: *found 1 (and ex filled) when the
 * identity is written already, so the put stores nothing; -EEXIST while another live
 * writer holds its reservation. */
int rs_once_gate(const rs_sql *sql, rs_backend *b, const rs_target *t, const char *event_type,
                 rs_existing *ex, int *found, rs_err *err);

#endif
