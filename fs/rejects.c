/* rejects.c — per-owner logs of refused writes: a ring of the last lines under offsets that
 * only grow, each refusal also logged. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "rejects.h"
#include "rs_util.h"

#define REJECTS_KEPT 100
/* Owners with a log; past this the one refused longest ago gives up its log. */
#define OWNERS_MAX 256

typedef struct owner_log {
    char *owner;                /* "" for the unscoped mount */
    rs_buf lines[REJECTS_KEPT]; /* a ring: lines[first] is the oldest kept */
    size_t first;
    size_t count;
    int64_t base;    /* offset of the oldest kept line */
    int64_t end;     /* the log's size */
    int64_t dropped; /* refusals no longer kept */
    uint64_t used;   /* when it last took a refusal */
} owner_log;

struct rfs_rejects {
    pthread_mutex_t lock; /* guards everything below, and every owner_log */
    owner_log *owners[OWNERS_MAX];
    size_t n_owners;
    uint64_t clock;
};

int rfs_rejects_new(rfs_rejects **out)
{
    rfs_rejects *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    pthread_mutex_init(&r->lock, NULL);
    *out = r;
    return 0;
}

static void owner_free(owner_log *o)
{
    for (size_t i = 0; i < REJECTS_KEPT; i++)
        rs_buf_release(&o->lines[i]);
    free(o->owner);
    free(o);
}

void rfs_rejects_free(rfs_rejects *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_owners; i++)
        owner_free(r->owners[i]);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* Under lock. */
static owner_log *find(rfs_rejects *r, const char *owner)
{
    const char *key = owner ? owner : "";
    for (size_t i = 0; i < r->n_owners; i++)
        if (strcmp(r->owners[i]->owner, key) == 0)
            return r->owners[i];
    return NULL;
}

/* Under lock: owner's log, made (evicting the quietest owner when full) if absent. */
static owner_log *find_or_add(rfs_rejects *r, const char *owner)
{
    owner_log *o = find(r, owner);
    if (o)
        return o;
    if (!(o = calloc(1, sizeof *o)) || !(o->owner = strdup(owner ? owner : ""))) {
        free(o);
        return NULL;
    }
    for (size_t i = 0; i < REJECTS_KEPT; i++)
        o->lines[i] = (rs_buf)RS_BUF_INIT;
    if (r->n_owners == OWNERS_MAX) {
        size_t quiet = 0;
        for (size_t i = 1; i < r->n_owners; i++)
            if (r->owners[i]->used < r->owners[quiet]->used)
                quiet = i;
        owner_free(r->owners[quiet]);
        r->owners[quiet] = r->owners[--r->n_owners];
    }
    r->owners[r->n_owners++] = o;
    return o;
}

void rfs_rejects_add(rfs_rejects *r, const char *owner, long pid, long uid, const char *path,
                     int code, const char *reason, const char *data, size_t len)
{
    char when[40];
    int64_t ns = rs_clock_ns(CLOCK_REALTIME);
    time_t secs = (time_t)(ns / 1000000000LL);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    rfs_log("refused %s (pid %ld, uid %ld): %s: %s", path, pid, uid, rs_errno_name(code), reason);
    rs_buf line = RS_BUF_INIT;
    if (rs_buf_addf(&line, "{\"time\":\"%s.%06ld+00:00\",\"pid\":%ld,\"uid\":%ld,\"path\":", when,
                    (long)(ns % 1000000000LL / 1000), pid, uid) ||
        rs_buf_add_json_string(&line, path, strlen(path)) ||
        rs_buf_addf(&line, ",\"errno\":\"%s\",\"reason\":", rs_errno_name(code)) ||
        rs_buf_add_json_string(&line, reason, strlen(reason)) ||
        rs_buf_addlit(&line, ",\"data\":") ||
        rs_buf_add_json_string(&line, data ? data : "", len > 200 ? 200 : len) ||
        rs_buf_addlit(&line, "}\n")) {
        rs_buf_release(&line);
        return;
    }
    pthread_mutex_lock(&r->lock);
    owner_log *o = find_or_add(r, owner);
    if (o) {
        if (o->count == REJECTS_KEPT) {
            rs_buf *old = &o->lines[o->first];
            o->base += (int64_t)old->len;
            o->dropped++;
            rs_buf_release(old);
            o->first = (o->first + 1) % REJECTS_KEPT;
            o->count--;
        }
        o->end += (int64_t)line.len;
        o->lines[(o->first + o->count++) % REJECTS_KEPT] = line;
        o->used = ++r->clock;
        line = (rs_buf)RS_BUF_INIT;
    }
    pthread_mutex_unlock(&r->lock);
    rs_buf_release(&line);
}

int64_t rfs_rejects_size(rfs_rejects *r, const char *owner)
{
    pthread_mutex_lock(&r->lock);
    owner_log *o = find(r, owner);
    int64_t size = o ? o->end : 0;
    pthread_mutex_unlock(&r->lock);
    return size;
}

/* Bytes [from, to) of the filler that stands for the dropped refusals: {"dropped":N}, blanks,
 * and a newline as the region's last byte. Under lock. */
static int add_filler(const owner_log *o, int64_t from, int64_t to, rs_buf *out)
{
    char head[40];
    int64_t hlen = rs_fmt(head, sizeof head, "{\"dropped\":%lld}", (long long)o->dropped);
    int rc = hlen < 0 ? (int)hlen : 0;
    for (int64_t p = from; !rc && p < to;) {
        if (p == o->base - 1) {
            rc = rs_buf_addch(out, '\n');
            p++;
        } else if (p < hlen) {
            int64_t n = (to < hlen ? to : hlen) - p;
            rc = rs_buf_add(out, head + p, (size_t)n);
            p += n;
        } else {
            int64_t n = (to < o->base - 1 ? to : o->base - 1) - p;
            if (!(rc = rs_buf_grow(out, (size_t)n))) {
                memset(out->buf + out->len, ' ', (size_t)n);
                rs_buf_setlen(out, out->len + (size_t)n);
            }
            p += n;
        }
    }
    return rc;
}

int rfs_rejects_read(rfs_rejects *r, const char *owner, int64_t off, size_t size, rs_buf *out)
{
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    owner_log *o = find(r, owner);
    int64_t to = o ? (off + (int64_t)size < o->end ? off + (int64_t)size : o->end) : off;
    if (o && off < o->base)
        rc = add_filler(o, off, to < o->base ? to : o->base, out);
    int64_t at = o ? o->base : 0;
    for (size_t i = 0; o && !rc && i < o->count && at < to; i++) {
        const rs_buf *l = &o->lines[(o->first + i) % REJECTS_KEPT];
        int64_t from = off > at ? off : at,
                stop = at + (int64_t)l->len < to ? at + (int64_t)l->len : to;
        if (from < stop)
            rc = rs_buf_add(out, l->buf + (from - at), (size_t)(stop - from));
        at += (int64_t)l->len;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}
