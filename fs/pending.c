/* pending.c — unfinished-line memory, counted for the mount and for each owner. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pending.h"
#include "runstore.h"
#include "rs_util.h"

typedef struct owner_held {
    char owner[RS_ID_MAX + 1];
    size_t held;
} owner_held;

struct rfs_pending {
    size_t cap, share;
    pthread_mutex_t lock; /* guards held, owners, n, alloc */
    size_t held;
    owner_held *owners; /* owners holding bytes now: an owner at 0 leaves, so the array
                         * is as long as the owners writing unfinished lines at once */
    size_t n, alloc;
};

int rfs_pending_new(rfs_pending **out, size_t cap, size_t share)
{
    rfs_pending *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->cap = cap;
    p->share = share < cap ? share : cap;
    pthread_mutex_init(&p->lock, NULL);
    *out = p;
    return 0;
}

void rfs_pending_free(rfs_pending *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->lock);
    free(p->owners);
    free(p);
}

/* Under lock. */
static owner_held *find(rfs_pending *p, const char *owner)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->owners[i].owner, owner) == 0)
            return &p->owners[i];
    return NULL;
}

int rfs_pending_take(rfs_pending *p, const char *owner, size_t n, size_t *held, size_t *limit)
{
    const char *key = owner ? owner : "";
    size_t klen = strlen(key);
    if (klen > RS_ID_MAX)
        return -ENAMETOOLONG;
    pthread_mutex_lock(&p->lock);
    owner_held *o = find(p, key);
    size_t mine = o ? o->held : 0;
    int rc = 0;
    if (mine + n > p->share) {
        *held = mine;
        *limit = p->share;
        rc = -ENOBUFS;
    } else if (p->held + n > p->cap) {
        *held = p->held;
        *limit = p->cap;
        rc = -ENOBUFS;
    } else if (!o && !(rc = rs_array_grow(&p->owners, &p->alloc, p->n + 1, sizeof *p->owners))) {
        o = &p->owners[p->n++];
        memcpy(o->owner, key, klen + 1);
        o->held = 0;
    }
    if (!rc) {
        o->held += n;
        p->held += n;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void rfs_pending_give(rfs_pending *p, const char *owner, size_t n)
{
    pthread_mutex_lock(&p->lock);
    owner_held *o = find(p, owner ? owner : "");
    if (o) {
        o->held -= n < o->held ? n : o->held;
        if (o->held == 0)
            *o = p->owners[--p->n];
    }
    p->held -= n < p->held ? n : p->held;
    pthread_mutex_unlock(&p->lock);
}
