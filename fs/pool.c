/* pool.c — a stack of idle store connections under a lock, at most RFS_POOL_MAX open. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "mount.h"

struct rfs_pool {
    pthread_mutex_t lock; /* guards idle, open and nidle; never held while a store works */
    pthread_cond_t cond;  /* a connection was given back */
    rs_store *idle[RFS_POOL_MAX];
    int open; /* lent and idle */
    int nidle;
};

int rfs_pool_start(rfs_mount *m)
{
    rfs_pool *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    m->pool = p;
    return 0;
}

void rfs_pool_stop(rfs_mount *m)
{
    rfs_pool *p = m->pool;
    if (!p)
        return;
    for (int i = 0; i < p->nidle; i++)
        rs_store_close(p->idle[i]);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p);
    m->pool = NULL;
}

int rfs_pool_get(rfs_mount *m, rs_store **out, rs_err *err)
{
    rfs_pool *p = m->pool;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->nidle > 0) {
            *out = p->idle[--p->nidle];
            pthread_mutex_unlock(&p->lock);
            rs_store_one_look(*out, 1);
            return 0;
        }
        if (p->open < RFS_POOL_MAX)
            break;
        pthread_cond_wait(&p->cond, &p->lock);
    }
    p->open++;
    pthread_mutex_unlock(&p->lock);
    int rc = rs_store_open(out, m->opt.store, &m->store_opt, err);
    if (!rc)
        rs_store_one_look(*out, 1);
    if (rc) {
        pthread_mutex_lock(&p->lock);
        p->open--;
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->lock);
    }
    return rc;
}

void rfs_pool_put(rfs_mount *m, rs_store *s)
{
    if (!s)
        return;
    rs_store_one_look(s, 0);
    rfs_pool *p = m->pool;
    pthread_mutex_lock(&p->lock);
    p->idle[p->nidle++] = s;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}
