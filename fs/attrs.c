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
#define KEEP_NS ((int64_t)(RFS_FILE_TIMEOUT * 1e9) + KEEP_MARGIN_NS)

/* The kernel makes a new inode from a lookup's reply only when the process that asked runs
 * again, so a drop sent after the reply can come before the inode exists and be lost (the
 * kernel drops nothing of an inode it does not have, and then keeps what the reply said).
 * A record taken within SETTLE_NS of being handed out stays, unsettled: every take and
 * every rfs_attrs_settle tells the kernel again until then. */
#define SETTLE_NS 250000000LL

typedef struct record {
    uint64_t ino;    /* 0: taken */
    uint64_t thread; /* rs_hash of the thread id: a collision only drops more */
    int64_t deadline_ns;
    int unsettled; /* taken within SETTLE_NS of being handed out */
} record;

struct rfs_attrs {
    pthread_mutex_t lock; /* guards every field below */
    record *ring;
    size_t cap;  /* a power of two, or 0 */
    size_t head; /* the oldest record */
    size_t count;
    size_t unsettled; /* records in the ring with unsettled set and ino not 0 */
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

/* r leaves: taken for good. Lock held. */
static void drop(rfs_attrs *a, record *r)
{
    if (r->ino && r->unsettled)
        a->unsettled--;
    r->ino = 0;
}

/* Drop the expired and taken records at the front. Lock held. */
static void expire(rfs_attrs *a, int64_t now_ns)
{
    while (a->count && (at(a, 0)->ino == 0 || at(a, 0)->deadline_ns <= now_ns)) {
        drop(a, at(a, 0));
        a->head = (a->head + 1) & (a->cap - 1);
        a->count--;
    }
}

/* The kernel was told to drop r's inode at now_ns: r leaves, or stays unsettled. Lock
 * held. */
static void told(rfs_attrs *a, record *r, int64_t now_ns)
{
    if (now_ns - (r->deadline_ns - KEEP_NS) >= SETTLE_NS) {
        drop(a, r);
    } else if (!r->unsettled) {
        r->unsettled = 1;
        a->unsettled++;
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
    int64_t deadline_ns = now_ns + KEEP_NS;
    pthread_mutex_lock(&a->lock);
    expire(a, now_ns);
    int rc = make_room(a);
    if (!rc) {
        *at(a, a->count) =
            (record){.ino = ino, .thread = h, .deadline_ns = deadline_ns, .unsettled = 0};
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
        told(a, r, now_ns);
    }
    expire(a, now_ns);
    pthread_mutex_unlock(&a->lock);
}

void rfs_attrs_settle(rfs_attrs *a, int64_t now_ns, void (*fn)(void *ctx, uint64_t ino), void *ctx)
{
    pthread_mutex_lock(&a->lock);
    expire(a, now_ns);
    for (size_t i = 0; a->unsettled && i < a->count; i++) {
        record *r = at(a, i);
        if (r->ino == 0 || !r->unsettled)
            continue;
        fn(ctx, r->ino);
        told(a, r, now_ns);
    }
    expire(a, now_ns);
    pthread_mutex_unlock(&a->lock);
}
