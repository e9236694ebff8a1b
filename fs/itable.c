/* itable.c — a chained hash of referenced nodes keyed by inode number. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "itable.h"

typedef struct entry {
    struct entry *next;
    uint64_t ino;
    uint64_t nlookup;
    int64_t size;
    int holds;
    int cached;
    rfs_node node;
} entry;

struct rfs_itable {
    pthread_mutex_t lock; /* guards everything below, and every entry's fields */
    entry **buckets;
    size_t nbuckets;
    size_t count;
};

int rfs_itable_new(rfs_itable **out)
{
    rfs_itable *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->nbuckets = 1024;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    if (!t->buckets) {
        free(t);
        return -ENOMEM;
    }
    pthread_mutex_init(&t->lock, NULL);
    *out = t;
    return 0;
}

void rfs_itable_free(rfs_itable *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (entry *e = t->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(t->buckets);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static uint64_t hash_of(const rfs_node *n)
{
    if (n->kind == RFS_ROOT)
        return 1;
    uint64_t h = 14695981039346656037ULL;
    int kind = (int)n->kind;
    h = fnv1a(h, &kind, sizeof kind);
    h = fnv1a(h, n->thread_id, strlen(n->thread_id) + 1);
    h = fnv1a(h, n->run_id, strlen(n->run_id) + 1);
    h = fnv1a(h, n->name, strlen(n->name) + 1);
    h = fnv1a(h, &n->num, sizeof n->num);
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
    for (entry *e = t->buckets[ino % t->nbuckets]; e; e = e->next)
        if (e->ino == ino)
            return e;
    return NULL;
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

static void grow(rfs_itable *t)
{
    size_t n = t->nbuckets * 2;
    entry **b = calloc(n, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (entry *e = t->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->ino % n];
            b[e->ino % n] = e;
        }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

int rfs_itable_ref(rfs_itable *t, const rfs_node *n, uint64_t *ino)
{
    entry *e;
    pthread_mutex_lock(&t->lock);
    uint64_t want = probe(t, n, &e);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e) {
            pthread_mutex_unlock(&t->lock);
            return -ENOMEM;
        }
        e->ino = want;
        e->node = *n;
        e->size = -1;
        e->next = t->buckets[want % t->nbuckets];
        t->buckets[want % t->nbuckets] = e;
        if (++t->count > t->nbuckets * 2)
            grow(t);
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
    entry **pp = &t->buckets[ino % t->nbuckets];
    for (entry *e = *pp; e; pp = &e->next, e = e->next) {
        if (e->ino != ino)
            continue;
        e->nlookup = e->nlookup > nlookup ? e->nlookup - nlookup : 0;
        if (e->nlookup == 0) {
            *pp = e->next;
            free(e);
            t->count--;
        }
        break;
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

void rfs_itable_each(rfs_itable *t, rfs_kind kind,
                     void (*fn)(void *ctx, uint64_t ino, const rfs_node *n, int64_t size),
                     void *ctx)
{
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->nbuckets; i++)
        for (entry *e = t->buckets[i]; e; e = e->next)
            if (e->node.kind == kind)
                fn(ctx, e->ino, &e->node, e->size);
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
