/* attrs.c — the kept attributes' records: a ring in the order they were handed out, which
 * is the order they expire in, so the expired ones leave from its front. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"
#include "runstore.h"
#include "rs_util.h"

/* A burst of stats (du of a large store) records one entry per file per second at most
 * this many; past it replies keep nothing, which is only slower. 24 bytes each. */
#define ATTRS_MAX (1u << 20)

#define KEEP_MARGIN_NS 1000000000LL

typedef struct record {
    uint64_t ino;    /* 0: taken */
    uint64_t thread; /* rs_hash of the thread id: a collision only drops more */
    int64_t deadline_ns;
} record;

struct rfs_attrs {
    pthread_mutex_t lock; /* guards every field below */
    record *ring;
    size_t cap;  /* a power of two, or 0 */
    size_t head; /* the oldest record */
    size_t count;
};

int rfs_attrs_new(rfs_attrs **out)
{
    rfs_attrs *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    pthread_mutex_init(&a->lock, NULL);
    *out = a;
    return 0;
}

void rfs_attrs_free(rfs_attrs *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->lock);
    free(a->ring);
    free(a);
}

static uint64_t thread_hash(const char *thread_id)
{
    return rs_hash(RS_HASH_INIT, thread_id, strlen(thread_id));
}

static record *at(rfs_attrs *a, size_t i)
{
    return &a->ring[(a->head + i) & (a->cap - 1)];
}

/* Drop the expired and taken records at the front. Lock held. */
static void expire(rfs_attrs *a, int64_t now_ns)
{
    while (a->count && (at(a, 0)->ino == 0 || at(a, 0)->deadline_ns <= now_ns)) {
        a->head = (a->head + 1) & (a->cap - 1);
        a->count--;
    }
}

/* Room for one more record. Lock held. */
static int make_room(rfs_attrs *a)
{
    if (a->count < a->cap)
        return 0;
    if (a->cap >= ATTRS_MAX)
        return -ENOSPC;
    size_t cap = a->cap ? a->cap * 2 : 256;
    record *ring = malloc(cap * sizeof *ring);
    if (!ring)
        return -ENOMEM;
    for (size_t i = 0; i < a->count; i++)
        ring[i] = *at(a, i);
    free(a->ring);
    a->ring = ring;
    a->cap = cap;
    a->head = 0;
    return 0;
}

int rfs_attrs_add(rfs_attrs *a, uint64_t ino, const char *thread_id, int64_t now_ns)
{
    uint64_t h = thread_hash(thread_id);
    /* The kernel starts its timeout when the reply reaches it, after this: a record
     * outlives the kernel's copy by a margin wider than any reply takes. */
    int64_t deadline_ns = now_ns + (int64_t)(RFS_FILE_TIMEOUT * 1e9) + KEEP_MARGIN_NS;
    pthread_mutex_lock(&a->lock);
    expire(a, now_ns);
    int rc = make_room(a);
    if (!rc) {
        *at(a, a->count) = (record){.ino = ino, .thread = h, .deadline_ns = deadline_ns};
        a->count++;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

void rfs_attrs_take(rfs_attrs *a, const char *thread_id, int64_t now_ns,
                    void (*fn)(void *ctx, uint64_t ino), void *ctx)
{
    uint64_t h = thread_id ? thread_hash(thread_id) : 0;
    pthread_mutex_lock(&a->lock);
    expire(a, now_ns);
    for (size_t i = 0; i < a->count; i++) {
        record *r = at(a, i);
        if (r->ino == 0 || (thread_id && r->thread != h))
            continue;
        fn(ctx, r->ino);
        r->ino = 0;
    }
    expire(a, now_ns);
    pthread_mutex_unlock(&a->lock);
}
