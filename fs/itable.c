/* itable.c — the referenced nodes, an rs_map of them by inode number, and each thread's
 * nodes in a list of their own, so a change of one thread visits only its inodes. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "itable.h"
#include "rs_util.h"

typedef struct entry {
    uint64_t ino;
    uint64_t nlookup;
    /* Set and read with the table's lock held for reading at least (which keeps the entry
     * alive): a log's size, a pin or a cached mark is no change to the table, so none of
     * them waits for a walk. */
    _Atomic int64_t size;
    atomic_int holds;
    atomic_int cached;
    struct entry *thread_next, *thread_prev; /* the other nodes of its thread */
    rfs_node node;
} entry;

/* The nodes of one thread (thread_id nonempty). */
typedef struct thread_nodes {
    char thread_id[RS_ID_MAX + 1];
    entry *first;
} thread_nodes;

struct rfs_itable {
    /* Held for writing to add or remove an entry (entries, threads, the lists, nlookup);
     * for reading by everything else, walks included: a walk of the hub's never holds up a
     * request that only looks entries up (a write()'s checks, a lookup of a known node). */
    pthread_rwlock_t lock;
    rs_map entries; /* entry pointers by inode number */
    rs_map threads; /* thread_nodes pointers by thread id */
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

static uint64_t id_hash(const void *ctx, const void *id)
{
    (void)ctx;
    return rs_hash(RS_HASH_INIT, id, strlen(id));
}

static uint64_t thread_hash(const void *ctx, uintptr_t tn)
{
    return id_hash(ctx, ((const thread_nodes *)tn)->thread_id);
}

static int thread_matches(const void *ctx, uintptr_t tn, const void *id)
{
    (void)ctx;
    return strcmp(((const thread_nodes *)tn)->thread_id, id) == 0;
}

static const rs_map_type by_thread = {id_hash, thread_hash, thread_matches};

_Static_assert(RFS_KIND_LAST < 128, "RFS_KIND sets hold every kind");

int rfs_itable_new(rfs_itable **out)
{
    rfs_itable *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->entries = (rs_map)RS_MAP_INIT(&by_ino, NULL);
    t->threads = (rs_map)RS_MAP_INIT(&by_thread, NULL);
    pthread_rwlock_init(&t->lock, NULL);
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
    pos = 0;
    for (uintptr_t tn; (tn = rs_map_next(&t->threads, &pos));)
        free((thread_nodes *)tn);
    rs_map_release(&t->threads);
    pthread_rwlock_destroy(&t->lock);
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
    pthread_rwlock_rdlock(&t->lock);
    uint64_t ino = probe(t, n, &e);
    pthread_rwlock_unlock(&t->lock);
    return ino;
}

/* Put e in its thread's list (write lock held): 0 or -ENOMEM, nothing changed. */
static int thread_link(rfs_itable *t, entry *e)
{
    if (!e->node.thread_id[0])
        return 0;
    thread_nodes *tn = (thread_nodes *)rs_map_find(&t->threads, e->node.thread_id);
    if (!tn) {
        tn = calloc(1, sizeof *tn);
        if (!tn)
            return -ENOMEM;
        memcpy(tn->thread_id, e->node.thread_id, sizeof tn->thread_id);
        if (rs_map_add(&t->threads, (uintptr_t)tn)) {
            free(tn);
            return -ENOMEM;
        }
    }
    e->thread_prev = NULL;
    e->thread_next = tn->first;
    if (tn->first)
        tn->first->thread_prev = e;
    tn->first = e;
    return 0;
}

/* Take e out of its thread's list (write lock held); a thread left with none goes. */
static void thread_unlink(rfs_itable *t, entry *e)
{
    if (!e->node.thread_id[0])
        return;
    if (e->thread_next)
        e->thread_next->thread_prev = e->thread_prev;
    if (e->thread_prev) {
        e->thread_prev->thread_next = e->thread_next;
        return;
    }
    thread_nodes *tn = (thread_nodes *)rs_map_find(&t->threads, e->node.thread_id);
    if (!tn)
        return;
    tn->first = e->thread_next;
    if (!tn->first)
        free((thread_nodes *)rs_map_remove(&t->threads, e->node.thread_id));
}

int rfs_itable_ref(rfs_itable *t, const rfs_node *n, uint64_t *ino)
{
    entry *e;
    pthread_rwlock_wrlock(&t->lock);
    uint64_t want = probe(t, n, &e);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (e) {
            e->ino = want;
            e->node = *n;
            atomic_init(&e->size, -1);
        }
        if (!e || rs_map_reserve(&t->entries, t->entries.count + 1) || thread_link(t, e)) {
            free(e);
            pthread_rwlock_unlock(&t->lock);
            return -ENOMEM;
        }
        (void)rs_map_add(&t->entries, (uintptr_t)e); /* room reserved: cannot fail */
    }
    e->nlookup++;
    *ino = e->ino;
    pthread_rwlock_unlock(&t->lock);
    return 0;
}

int rfs_itable_get(rfs_itable *t, uint64_t ino, rfs_node *out)
{
    if (ino == 1) {
        rfs_node_root(out);
        return 0;
    }
    pthread_rwlock_rdlock(&t->lock);
    entry *e = find(t, ino);
    if (e)
        *out = e->node;
    pthread_rwlock_unlock(&t->lock);
    return e ? 0 : -ENOENT;
}

void rfs_itable_forget(rfs_itable *t, uint64_t ino, uint64_t nlookup)
{
    pthread_rwlock_wrlock(&t->lock);
    entry *e = find(t, ino);
    if (e) {
        e->nlookup = e->nlookup > nlookup ? e->nlookup - nlookup : 0;
        if (e->nlookup == 0) {
            thread_unlink(t, e);
            free((entry *)rs_map_remove(&t->entries, &ino));
        }
    }
    pthread_rwlock_unlock(&t->lock);
}

void rfs_itable_set_size(rfs_itable *t, uint64_t ino, int64_t size)
{
    pthread_rwlock_rdlock(&t->lock);
    entry *e = find(t, ino);
    if (e)
        atomic_store(&e->size, size);
    pthread_rwlock_unlock(&t->lock);
}

int rfs_itable_known_size(rfs_itable *t, uint64_t ino, int64_t *size)
{
    pthread_rwlock_rdlock(&t->lock);
    entry *e = find(t, ino);
    if (e)
        *size = atomic_load(&e->size);
    pthread_rwlock_unlock(&t->lock);
    return e ? 0 : -ENOENT;
}

void rfs_itable_hold(rfs_itable *t, uint64_t ino, int delta)
{
    pthread_rwlock_rdlock(&t->lock);
    entry *e = find(t, ino);
    if (e)
        atomic_fetch_add(&e->holds, delta);
    pthread_rwlock_unlock(&t->lock);
}

int rfs_itable_holds(rfs_itable *t, uint64_t ino)
{
    pthread_rwlock_rdlock(&t->lock);
    entry *e = find(t, ino);
    int n = e ? atomic_load(&e->holds) : 0;
    pthread_rwlock_unlock(&t->lock);
    return n;
}

void rfs_itable_each(rfs_itable *t, const char *thread_id, rfs_kinds kinds,
                     void (*fn)(void *ctx, uint64_t ino, const rfs_node *n, int64_t size),
                     void *ctx)
{
    pthread_rwlock_rdlock(&t->lock);
    if (thread_id) {
        const thread_nodes *tn = (const thread_nodes *)rs_map_find(&t->threads, thread_id);
        for (const entry *e = tn ? tn->first : NULL; e; e = e->thread_next)
            if (kinds & RFS_KIND(e->node.kind))
                fn(ctx, e->ino, &e->node, atomic_load(&e->size));
    } else {
        size_t pos = 0;
        for (uintptr_t u; (u = rs_map_next(&t->entries, &pos));) {
            const entry *e = (const entry *)u;
            if (kinds & RFS_KIND(e->node.kind))
                fn(ctx, e->ino, &e->node, atomic_load(&e->size));
        }
    }
    pthread_rwlock_unlock(&t->lock);
}

void rfs_itable_mark_cached(rfs_itable *t, uint64_t ino)
{
    pthread_rwlock_rdlock(&t->lock);
    entry *e = find(t, ino);
    if (e)
        atomic_store(&e->cached, 1);
    pthread_rwlock_unlock(&t->lock);
}

int rfs_itable_cached(rfs_itable *t, uint64_t ino)
{
    pthread_rwlock_rdlock(&t->lock);
    entry *e = find(t, ino);
    int cached = e && atomic_load(&e->cached);
    pthread_rwlock_unlock(&t->lock);
    return cached;
}
