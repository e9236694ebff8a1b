/* policy.c — see policy.h. */
#include "policy.h"
#include "rs_util.h"

#include <errno.h>

/* What belonged to rows another writer deleted goes with them: a run made again starts
 * clean. Singletons whose row is gone, idempotency keys whose seq is gone; the seals of runs
 * with no rows left stay as tombstones (state 'deleted': unsealed for the mount, "deleted
 * after sealing" for verify) until the run is sealed again. */
static int drop_gone(const rs_sql *sql, rs_backend *b, int64_t key, const char *thread_id,
                     rs_err *err)
{
    static const char *const gone[] = {
        "DELETE FROM runfs_once WHERE thread_id = $2 AND NOT EXISTS (SELECT 1 FROM run_events e "
        "WHERE e.thread_id = runfs_once.thread_id AND e.run_id = runfs_once.run_id AND "
        "e.event_type = runfs_once.event_type)",
        "DELETE FROM runfs_idem WHERE thread_id = $2 AND NOT EXISTS (SELECT 1 FROM run_events e "
        "WHERE e.thread_id = runfs_idem.thread_id AND e.seq = runfs_idem.seq)",
        "UPDATE runfs_seal SET state = 'deleted' WHERE thread_id = $2 AND state <> 'deleted' AND "
        "NOT EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = runfs_seal.thread_id AND "
        "e.run_id = runfs_seal.run_id)",
    };
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof gone / sizeof gone[0]; i++)
        rc = sql->thread_exec(b, gone[i], key, thread_id, err);
    return rc;
}

int rs_recompute_deleted(const rs_sql *sql, rs_backend *b, int read_only, const char *thread_id,
                         int64_t key, rs_err *err)
{
    static const char drop_owners[] = "DELETE FROM runfs_owner WHERE thread_key = $1";
    static const char drop_runs[] = "DELETE FROM runfs_run WHERE thread_key = $1 AND count = 0";
    int rc = sql->thread_exec(b, drop_owners, key, thread_id, err);
    if (rc || (rc = sql->thread_reindex(b, thread_id, key, err)) ||
        (rc = sql->thread_exec(b, drop_runs, key, thread_id, err)) ||
        (!read_only && (rc = drop_gone(sql, b, key, thread_id, err))))
        return rc;
    int64_t left = 0;
    if ((rc = sql->int_query(b, "SELECT count(*) FROM run_events WHERE thread_id = $1", thread_id,
                             NULL, &left, NULL, err)) ||
        left > 0)
        return rc;
    static const char *const drop_thread[] = {
        "DELETE FROM runfs_thread WHERE thread_key = $1 AND thread_id = $2",
        "DELETE FROM run_event_thread_seq WHERE thread_id = $2",
        "DELETE FROM runfs_once WHERE thread_id = $2",
        "DELETE FROM runfs_idem WHERE thread_id = $2",
    };
    /* A reader drops only its own copy of the logs (the rest is the store's). */
    size_t n = read_only ? 1 : sizeof drop_thread / sizeof drop_thread[0];
    for (size_t i = 0; !rc && i < n; i++)
        rc = sql->thread_exec(b, drop_thread[i], key, thread_id, err);
    return rc;
}

int rs_idem_lookup(const rs_sql *sql, rs_backend *b, const rs_target *t, const rs_event *ev,
                   rs_buf *line, int *used, rs_err *err)
{
    int64_t seq = 0;
    int found = 0;
    *used = 0;
    char key[RS_IDEM_COLUMN_MAX + 1];
    int rc = rs_idem_column(key, t->user, ev->idem_key);
    if (rc)
        return rs_err_set(err, rc, "idempotency key too long");
    rc = sql->int_query(b, "SELECT seq FROM runfs_idem WHERE thread_id = $1 AND key = $2",
                        t->thread_id, key, &seq, &found, err);
    if (rc || !found)
        return rc;
    if ((rc = sql->row_at(b, t->thread_id, seq, 0, line, &found, err)) || !found)
        return rc;
    if ((rc = rs_event_resend(ev, t->user, line, seq, err)))
        return rc;
    *used = 1;
    return 0;
}

const rs_policy rs_policy_shared = {rs_recompute_deleted, rs_idem_lookup, rs_once_gate};

int rs_once_gate(const rs_sql *sql, rs_backend *b, const rs_target *t, const char *event_type,
                 rs_existing *ex, int *found, rs_err *err)
{
    int other = 0;
    int rc = sql->once_existing(b, t, event_type, ex, found, err);
    if (rc || *found || (rc = sql->once_held(b, t, event_type, &other, err)))
        return rc;
    return other
               ? rs_err_set(err, -EEXIST, "once/%s is being written by another process", event_type)
               : 0;
}

int rs_once_reserve(const rs_sql *sql, rs_backend *b, const rs_target *t, const char *event_type,
                    rs_err *err)
{
    int rc = sql->write_begin(b, t, err);
    if (rc)
        return rc;
    int found, other = 0;
    if (!(rc = sql->once_existing(b, t, event_type, NULL, &found, err)) && found)
        rc = rs_err_set(err, -EEXIST, "once/%s already exists", event_type);
    if (!rc && !(rc = sql->once_held(b, t, event_type, &other, err)) &&
        (rc = sql->hold_insert(b, t, event_type, err)) == -EEXIST)
        rc = rs_err_set(err, -EEXIST, "once/%s is being written by another writer", event_type);
    return sql->write_end(b, rc, err);
}
