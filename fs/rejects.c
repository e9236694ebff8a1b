/* rejects.c — the last refused writes: a ring of JSON lines, each also logged. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "rejects.h"

#define REJECTS_KEPT 100

struct rfs_rejects {
    pthread_mutex_t lock;
    rs_buf lines[REJECTS_KEPT];
    long uids[REJECTS_KEPT];     /* who was refused: a caller sees only its own */
    size_t next;
    size_t count;
};

int rfs_rejects_new(rfs_rejects **out)
{
    rfs_rejects *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    pthread_mutex_init(&r->lock, NULL);
    for (size_t i = 0; i < REJECTS_KEPT; i++)
        r->lines[i] = (rs_buf)RS_BUF_INIT;
    *out = r;
    return 0;
}

void rfs_rejects_free(rfs_rejects *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < REJECTS_KEPT; i++)
        rs_buf_release(&r->lines[i]);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

void rfs_rejects_add(rfs_rejects *r, long pid, long uid, const char *path, int code,
                     const char *reason, const char *data, size_t len)
{
    char when[40];
    int64_t ns = rs_clock_ns(CLOCK_REALTIME);
    time_t secs = (time_t)(ns / 1000000000LL);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    rfs_log("refused %s (pid %ld, uid %ld): %s: %s", path, pid, uid, rs_errno_name(code), reason);
    rs_buf line = RS_BUF_INIT;
    if (rs_buf_addf(&line, "{\"time\":\"%s.%06ld+00:00\",\"pid\":%ld,\"uid\":%ld,\"path\":",
                    when, (long)(ns % 1000000000LL / 1000), pid, uid) ||
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
    rs_buf_release(&r->lines[r->next]);
    r->lines[r->next] = line;
    r->uids[r->next] = uid;
    r->next = (r->next + 1) % REJECTS_KEPT;
    if (r->count < REJECTS_KEPT)
        r->count++;
    pthread_mutex_unlock(&r->lock);
}

int rfs_rejects_render(rfs_rejects *r, long only_uid, rs_buf *out)
{
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    size_t start = (r->next + REJECTS_KEPT - r->count) % REJECTS_KEPT;
    for (size_t i = 0; !rc && i < r->count; i++) {
        size_t k = (start + i) % REJECTS_KEPT;
        if (only_uid < 0 || r->uids[k] == only_uid)
            rc = rs_buf_add(out, r->lines[k].buf, r->lines[k].len);
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}
