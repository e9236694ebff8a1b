/* itable.c — the referenced nodes, an rs_map of them by inode number. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "itable.h"
#include "rs_util.h"

typedef struct entry {
    uint64_t ino;
    uint64_t nlookup;
    int64_t size;
    int holds;
    int cached;
    rfs_node node;
} entry;

struct rfs_itable {
    pthread_mutex_t lock; /* guards entries, and every entry's fields */
    rs_map entries;       /* entry pointers by inode number */
};

/* Inode numbers are hashes already (hash_of below). */
static uint64_t ino_hash(const void *ctx, const void *ino)
{
    (void)ctx;
    return *(const uint64_t *)ino;
}

static uint64_t entry_hash(const void *ctx, uintptr_t e)
{
    return ino_hash(ctx, &((const entry *)e)->ino);
}

static int entry_matches(const void *ctx, uintptr_t e, const void *ino)
{
    (void)ctx;
    return ((const entry *)e)->ino == *(const uint64_t *)ino;
}

static const rs_map_type by_ino = {ino_hash, entry_hash, entry_matches};

_Static_assert(RFS_KIND_LAST < 128, "RFS_KIND sets hold every kind");

int rfs_itable_new(rfs_itable **out)
{
    rfs_itable *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->entries = (rs_map)RS_MAP_INIT(&by_ino, NULL);
    pthread_mutex_init(&t->lock, NULL);
    *out = t;
    return 0;
}

void rfs_itable_free(rfs_itable *t)
{
    if (!t)
        return;
    size_t pos = 0;
    for (uintptr_t e; (e = rs_map_next(&t->entries, &pos));)
        free((entry *)e);
    rs_map_release(&t->entries);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static uint64_t hash_of(const rfs_node *n)
{
    if (n->kind == RFS_ROOT)
        return 1;
    uint64_t h = RS_HASH_INIT;
    int kind = (int)n->kind;
    h = rs_hash(h, &kind, sizeof kind);
    h = rs_hash(h, n->thread_id, strlen(n->thread_id) + 1);
    h = rs_hash(h, n->run_id, strlen(n->run_id) + 1);
    h = rs_hash(h, n->name, strlen(n->name) + 1);
    h = rs_hash(h, &n->num, sizeof n->num);
    /* Keep clear of 0 (invalid) and 1 (the root); stay below 2^63 for tools with signed
     * inode numbers. */
    h &= 0x7fffffffffffffffULL;
    return h < 2 ? h + 2 : h;
}

static int same_node(const rfs_node *a, const rfs_node *b)
{
    return a->kind == b->kind && a->num == b->num && strcmp(a->thread_id, b->thread_id) == 0 &&
           strcmp(a->run_id, b->run_id) == 0 && strcmp(a->name, b->name) == 0;
}

static entry *find(rfs_itable *t, uint64_t ino)
{
    return (entry *)rs_map_find(&t->entries, &ino);
}

/* The number n has, or would be given now: its hash, or after a collision the next number
 * no other node holds. Table lock held. */
static uint64_t probe(rfs_itable *t, const rfs_node *n, entry **found)
{
    uint64_t ino = hash_of(n);
    entry *e;
    while ((e = find(t, ino)) && !same_node(&e->node, n))
        ino = ino + 1 < 2 ? 2 : ino + 1;
    *found = e;
    return ino;
}

uint64_t rfs_itable_ino_of(rfs_itable *t, const rfs_node *n)
{
    entry *e;
    pthread_mutex_lock(&t->lock);
    uint64_t ino = probe(t, n, &e);
    pthread_mutex_unlock(&t->lock);
    return ino;
}

int rfs_itable_ref(rfs_itable *t, const rfs_node *n, uint64_t *ino)
{
    entry *e;
    pthread_mutex_lock(&t->lock);
    uint64_t want = probe(t, n, &e);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (e) {
            e->ino = want;
            e->node = *n;
            e->size = -1;
        }
        if (!e || rs_map_add(&t->entries, (uintptr_t)e)) {
            free(e);
            pthread_mutex_unlock(&t->lock);
            return -ENOMEM;
        }
    }
    e->nlookup++;
    *ino = e->ino;
    pthread_mutex_unlock(&t->lock);
    return 0;
}

int rfs_itable_get(rfs_itable *t, uint64_t ino, rfs_node *out)
{
    if (ino == 1) {
        rfs_node_root(out);
        return 0;
    }
    pthread_mutex_lock(&t->lock);
    entry *e = find(t, ino);
    if (e)
        *out = e->node;
    pthread_mutex_unlock(&t->lock);
    return e ? 0 : -ENOENT;
}

void rfs_itable_forget(rfs_itable *t, uint64_t ino, uint64_t nlookup)
{
    pthread_mutex_lock(&t->lock);
    entry *e = find(t, ino);
    if (e) {
        e->nlookup = e->nlookup > nlookup ? e->nlookup - nlookup : 0;
        if (e->nlookup == 0)
            free((entry *)rs_map_remove(&t->entries, &ino));
    }
    pthread_mutex_unlock(&t->lock);
}

void rfs_itable_set_size(rfs_itable *t, uint64_t ino, int64_t size)
{
    pthread_mutex_lock(&t->lock);
    entry *e = find(t, ino);
    if (e)
        e->size = size;
    pthread_mutex_unlock(&t->lock);
}

int rfs_itable_known_size(rfs_itable *t, uint64_t ino, int64_t *size)
{
    pthread_mutex_lock(&t->lock);
    entry *e = find(t, ino);
    if (e)
        *size = e->size;
    pthread_mutex_unlock(&t->lock);
    return e ? 0 : -ENOENT;
}

void rfs_itable_hold(rfs_itable *t, uint64_t ino, int delta)
{
    pthread_mutex_lock(&t->lock);
    entry *e = find(t, ino);
    if (e)
        e->holds += delta;
    pthread_mutex_unlock(&t->lock);
}

int rfs_itable_holds(rfs_itable *t, uint64_t ino)
{
    pthread_mutex_lock(&t->lock);
    entry *e = find(t, ino);
    int n = e ? e->holds : 0;
    pthread_mutex_unlock(&t->lock);
    return n;
}

void rfs_itable_each(rfs_itable *t, rfs_kinds kinds,
                     void (*fn)(void *ctx, uint64_t ino, const rfs_node *n, int64_t size),
                     void *ctx)
{
    pthread_mutex_lock(&t->lock);
    size_t pos = 0;
    for (uintptr_t u; (u = rs_map_next(&t->entries, &pos));) {
        const entry *e = (const entry *)u;
        if (kinds & RFS_KIND(e->node.kind))
            fn(ctx, e->ino, &e->node, e->size);
    }
    pthread_mutex_unlock(&t->lock);
}

void rfs_itable_mark_cached(rfs_itable *t, uint64_t ino)
{
    pthread_mutex_lock(&t->lock);
    entry *e = find(t, ino);
    if (e)
        e->cached = 1;
    pthread_mutex_unlock(&t->lock);
}

int rfs_itable_cached(rfs_itable *t, uint64_t ino)
{
    pthread_mutex_lock(&t->lock);
    entry *e = find(t, ino);
    int cached = e && e->cached;
    pthread_mutex_unlock(&t->lock);
    return cached;
}
