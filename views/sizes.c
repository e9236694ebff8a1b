/* sizes.c — a bounded hash table of view sizes, guarded by one mutex. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sizes.h"

#define BUCKETS 1024
#define MAX_ENTRIES 8192    /* past this the table starts over: sizes are cheap to redo */
#define DOC_MAX (4 << 20)   /* a kept document's bytes at most */
#define DOCS_MAX (64 << 20) /* all kept documents' bytes at most (then they start over) */

typedef struct entry {
    struct entry *next;
    rs_log_info token;
    int64_t size;
    char *doc; /* the rendering itself (NULL: only its size is kept) */
    char key[];
} entry;

struct rfs_sizes {
    pthread_mutex_t lock; /* guards bucket, count and every entry */
    entry *bucket[BUCKETS];
    size_t count;
    size_t doc_bytes;
};

int rfs_sizes_new(rfs_sizes **out)
{
    rfs_sizes *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return 0;
}

static void clear(rfs_sizes *c)
{
    for (size_t i = 0; i < BUCKETS; i++)
        while (c->bucket[i]) {
            entry *e = c->bucket[i];
            c->bucket[i] = e->next;
            free(e->doc);
            free(e);
        }
    c->count = 0;
    c->doc_bytes = 0;
}

void rfs_sizes_free(rfs_sizes *c)
{
    if (!c)
        return;
    clear(c);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static size_t hash(const char *s)
{
    size_t h = 5381;
    while (*s)
        h = h * 33 ^ (unsigned char)*s++;
    return h % BUCKETS;
}

static int same_token(const rs_log_info *a, const rs_log_info *b)
{
    return a->exists == b->exists && a->exact == b->exact && a->size == b->size &&
           a->count == b->count && a->message_count == b->message_count &&
           a->last_seq == b->last_seq && a->hwm == b->hwm && a->mtime_ns == b->mtime_ns &&
           a->ctime_ns == b->ctime_ns;
}

int rfs_sizes_get(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t *size)
{
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (entry *e = c->bucket[hash(key)]; e; e = e->next)
        if (strcmp(e->key, key) == 0) {
            if ((found = same_token(&e->token, token)))
                *size = e->size;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    return found;
}

int rfs_sizes_get_doc(rfs_sizes *c, const char *key, const rs_log_info *token, rs_buf *out)
{
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (entry *e = c->bucket[hash(key)]; e; e = e->next)
        if (strcmp(e->key, key) == 0) {
            found = e->doc && same_token(&e->token, token) &&
                    rs_buf_add(out, e->doc, (size_t)e->size) == 0;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    return found;
}

static void put(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size, char *doc);

void rfs_sizes_put(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size)
{
    pthread_mutex_lock(&c->lock);
    put(c, key, token, size, NULL);
    pthread_mutex_unlock(&c->lock);
}

void rfs_sizes_put_doc(rfs_sizes *c, const char *key, const rs_log_info *token, const char *doc,
                       size_t len)
{
    char *copy = len <= DOC_MAX ? malloc(len ? len : 1) : NULL;
    if (copy)
        memcpy(copy, doc, len);
    pthread_mutex_lock(&c->lock);
    if (copy && c->doc_bytes + len > DOCS_MAX)
        clear(c);
    put(c, key, token, (int64_t)len, copy);
    pthread_mutex_unlock(&c->lock);
}

/* Under c->lock. doc: a copy the table takes (NULL: none). */
static void put(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size, char *doc)
{
    size_t h = hash(key);
    entry *e = c->bucket[h];
    while (e && strcmp(e->key, key) != 0)
        e = e->next;
    if (!e) {
        if (c->count >= MAX_ENTRIES)
            clear(c);
        size_t n = strlen(key);
        if ((e = malloc(sizeof *e + n + 1))) {
            memcpy(e->key, key, n + 1);
            e->doc = NULL;
            e->next = c->bucket[h];
            c->bucket[h] = e;
            c->count++;
        }
    }
    if (!e) {
        free(doc);
        return;
    }
    if (e->doc)
        c->doc_bytes -= (size_t)e->size;
    free(e->doc);
    e->doc = doc;
    if (doc)
        c->doc_bytes += (size_t)size;
    e->token = *token;
    e->size = size;
}
