/* docs.c — documents shared by content, counted by reference, in one table. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docs.h"

struct rfs_doc {
    rfs_doc *next; /* the table's chain, under docs_lock */
    uint64_t hash;
    size_t refs; /* under docs_lock */
    size_t len;
    char *bytes;
};

#define DOC_BUCKETS 1024
static pthread_mutex_t docs_lock = PTHREAD_MUTEX_INITIALIZER; /* guards table and refs */
static rfs_doc *table[DOC_BUCKETS];

/* FNV-1a: documents are small, and equal bytes are checked with memcmp anyway. */
static uint64_t doc_hash(const char *p, size_t len)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h;
}

int rfs_doc_intern(rs_buf *b, rfs_doc **out)
{
    uint64_t h = doc_hash(b->buf, b->len);
    rfs_doc **slot = &table[h % DOC_BUCKETS];
    pthread_mutex_lock(&docs_lock);
    for (rfs_doc *d = *slot; d; d = d->next)
        if (d->hash == h && d->len == b->len && memcmp(d->bytes, b->buf, b->len) == 0) {
            d->refs++;
            pthread_mutex_unlock(&docs_lock);
            rs_buf_release(b);
            *out = d;
            return 0;
        }
    rfs_doc *d = malloc(sizeof *d);
    if (!d) {
        pthread_mutex_unlock(&docs_lock);
        return -ENOMEM;
    }
    size_t len;
    d->bytes = rs_buf_detach(b, &len);
    if (!d->bytes) {
        pthread_mutex_unlock(&docs_lock);
        free(d);
        return -ENOMEM;
    }
    d->hash = h;
    d->len = len;
    d->refs = 1;
    d->next = *slot;
    *slot = d;
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
    rfs_doc **p = &table[d->hash % DOC_BUCKETS];
    while (*p != d)
        p = &(*p)->next;
    *p = d->next;
    pthread_mutex_unlock(&docs_lock);
    free(d->bytes);
    free(d);
}
