/* pool.c — the mount's store connections: SQLite handles are single-threaded, so each
 * request borrows one and gives it back; WAL lets them read beside a writer. */
#include <errno.h>

#include "mount.h"

int rfs_pool_get(rfs_mount *m, rs_store **out, rs_err *err)
{
    pthread_mutex_lock(&m->pool_lock);
    for (;;) {
        if (m->pool_idle > 0) {
            *out = m->pool[--m->pool_idle];
            pthread_mutex_unlock(&m->pool_lock);
            return 0;
        }
        if (m->pool_open < RFS_POOL_MAX)
            break;
        pthread_cond_wait(&m->pool_cond, &m->pool_lock);
    }
    m->pool_open++;
    pthread_mutex_unlock(&m->pool_lock);
    int rc = rs_store_open(out, m->opt.store, &m->store_opt, err);
    if (rc) {
        pthread_mutex_lock(&m->pool_lock);
        m->pool_open--;
        pthread_cond_signal(&m->pool_cond);
        pthread_mutex_unlock(&m->pool_lock);
    }
    return rc;
}

void rfs_pool_put(rfs_mount *m, rs_store *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&m->pool_lock);
    /* Idle handles sit on a stack below pool_idle; pool_open counts all of them. */
    m->pool[m->pool_idle++] = s;
    pthread_cond_signal(&m->pool_cond);
    pthread_mutex_unlock(&m->pool_lock);
}

void rfs_pool_close(rfs_mount *m)
{
    pthread_mutex_lock(&m->pool_lock);
    for (int i = 0; i < m->pool_idle; i++)
        rs_store_close(m->pool[i]);
    m->pool_open -= m->pool_idle;
    m->pool_idle = 0;
    pthread_mutex_unlock(&m->pool_lock);
}
