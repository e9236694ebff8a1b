/* listings.c — the kept listings: a short array, searched whole (a few dozen at most are
 * kept, and a listing is looked for once per page of entries). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "listings.h"
#include "runstore.h"
#include "rs_util.h"

/* Unused listings kept at most, and their entries (about 100 bytes each), besides the one
 * used last: readers that stopped halfway (ls | head) leave theirs. */
#define KEEP_MAX 32
#define KEEP_ENTRIES (128 * 1024)

typedef struct slot {
    void *listing;
    uint64_t ino, id;
    size_t entries;
    uint64_t used; /* the use it last had (the oldest unused goes first) */
    int users;
    int done; /* read to its end: goes when its last user gives it back */
} slot;

struct rfs_listings {
    pthread_mutex_t lock; /* guards every field below */
    void (*free_fn)(void *listing);
    slot *slots;
    size_t count, cap;
    uint64_t next_id, uses;
};

int rfs_listings_new(rfs_listings **out, void (*free_fn)(void *listing))
{
    rfs_listings *l = calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    pthread_mutex_init(&l->lock, NULL);
    l->free_fn = free_fn;
    *out = l;
    return 0;
}

void rfs_listings_free(rfs_listings *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        l->free_fn(l->slots[i].listing);
    free(l->slots);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* Remove slot i, its listing freed. Lock held. */
static void drop(rfs_listings *l, size_t i)
{
    l->free_fn(l->slots[i].listing);
    l->slots[i] = l->slots[--l->count];
}

/* The oldest unused listing goes while too many unused, or too many of their entries, are
 * kept; never the one used last (a large listing is unused between its pages). Lock
 * held. */
static void trim(rfs_listings *l)
{
    for (;;) {
        size_t unused = 0, entries = 0, oldest = 0;
        for (size_t i = 0; i < l->count; i++) {
            const slot *s = &l->slots[i];
            if (s->users || s->used == l->uses)
                continue;
            entries += s->entries;
            if (!unused++ || s->used < l->slots[oldest].used)
                oldest = i;
        }
        if (unused == 0 || (unused <= KEEP_MAX && entries <= KEEP_ENTRIES))
            return;
        drop(l, oldest);
    }
}

int rfs_listings_put(rfs_listings *l, uint64_t ino, void *listing, size_t entries, uint64_t *id)
{
    pthread_mutex_lock(&l->lock);
    int rc = rs_array_grow(&l->slots, &l->cap, l->count + 1, sizeof *l->slots);
    if (!rc) {
        l->next_id = l->next_id % 0x7fffffffu + 1;
        l->slots[l->count++] = (slot){.listing = listing,
                                      .ino = ino,
                                      .id = l->next_id,
                                      .entries = entries,
                                      .used = ++l->uses,
                                      .users = 1};
        *id = l->next_id;
        trim(l);
    }
    pthread_mutex_unlock(&l->lock);
    return rc;
}

void *rfs_listings_get(rfs_listings *l, uint64_t ino, uint64_t id)
{
    void *found = NULL;
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < l->count; i++) {
        slot *s = &l->slots[i];
        if (s->id == id && s->ino == ino && !s->done) {
            s->users++;
            s->used = ++l->uses;
            found = s->listing;
            break;
        }
    }
    pthread_mutex_unlock(&l->lock);
    return found;
}

void rfs_listings_release(rfs_listings *l, void *listing, int done)
{
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < l->count; i++) {
        slot *s = &l->slots[i];
        if (s->listing != listing)
            continue;
        s->users--;
        s->done |= done;
        if (s->done && s->users == 0)
            drop(l, i);
        else
            trim(l);
        break;
    }
    pthread_mutex_unlock(&l->lock);
}
