/* docs.c — documents shared by content, counted by reference, in one table. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docs.h"
#include "rs_util.h"

struct rfs_doc {
    uint64_t hash;
    size_t refs; /* under docs_lock */
    size_t len;
    char *bytes;
};

/* A key: bytes to find a document by, with their hash. */
typedef struct doc_key {
    const char *bytes;
    size_t len;
    uint64_t hash;
} doc_key;

static uint64_t key_hash(const void *ctx, const void *key)
{
    (void)ctx;
    return ((const doc_key *)key)->hash;
}

static uint64_t entry_hash(const void *ctx, uintptr_t entry)
{
    (void)ctx;
    return ((const rfs_doc *)entry)->hash;
}

static int matches(const void *ctx, uintptr_t entry, const void *key)
{
    (void)ctx;
    const rfs_doc *d = (const rfs_doc *)entry;
    const doc_key *k = key;
    return d->hash == k->hash && d->len == k->len && memcmp(d->bytes, k->bytes, k->len) == 0;
}

static const rs_map_type doc_type = {key_hash, entry_hash, matches};
static pthread_mutex_t docs_lock = PTHREAD_MUTEX_INITIALIZER; /* guards docs and refs */
static rs_map docs = RS_MAP_INIT(&doc_type, NULL);

int rfs_doc_intern(rs_buf *b, rfs_doc **out)
{
    doc_key k = {b->buf, b->len, rs_hash(RS_HASH_INIT, b->buf, b->len)};
    pthread_mutex_lock(&docs_lock);
    rfs_doc *d = (rfs_doc *)rs_map_find(&docs, &k);
    if (d) {
        d->refs++;
        pthread_mutex_unlock(&docs_lock);
        rs_buf_release(b);
        *out = d;
        return 0;
    }
    if (rs_map_reserve(&docs, docs.count + 1) || !(d = malloc(sizeof *d))) {
        pthread_mutex_unlock(&docs_lock);
        return -ENOMEM;
    }
    if (!(d->bytes = rs_buf_detach(b, &d->len))) {
        pthread_mutex_unlock(&docs_lock);
        free(d);
        return -ENOMEM;
    }
    d->hash = k.hash;
    d->refs = 1;
    rs_map_add(&docs, (uintptr_t)d); /* room reserved above */
    pthread_mutex_unlock(&docs_lock);
    *out = d;
    return 0;
}

const char *rfs_doc_bytes(const rfs_doc *d, size_t *len)
{
    *len = d->len;
    return d->bytes;
}

void rfs_doc_release(rfs_doc *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&docs_lock);
    if (--d->refs > 0) {
        pthread_mutex_unlock(&docs_lock);
        return;
    }
    doc_key k = {d->bytes, d->len, d->hash};
    rs_map_remove(&docs, &k);
    pthread_mutex_unlock(&docs_lock);
    free(d->bytes);
    free(d);
}
