/* policy.h — what the store decides the same way whatever its backend, written once here
 * (policy.c) above backend.h, and run on a few storage primitives each backend gives
 * (rs_sql). store.c hands them down to a backend at open (rs_policy_shared), which runs
 * them inside its own transaction through backend.h's rs_policy, never including this. */
#ifndef RS_POLICY_H
#define RS_POLICY_H

#include "backend.h"

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

/* rs_store_reserve_singleton's work, in one write transaction: -EEXIST when the identity is
 * written already or another live writer holds its reservation (a dead holder's is dropped),
 * else this writer's reservation kept. */
int rs_once_reserve(const rs_sql *sql, rs_backend *b, const rs_target *t, const char *event_type,
                    rs_err *err);

/* The recomputation, lookup and gate as backend.h's rs_policy, for a backend's open (store.c). */
extern const rs_policy rs_policy_shared;

#endif
