/* notify.c — the change hub: one thread per mount that tells the kernel what changed and
 * wakes live followers. Commits of this mount arrive through rfs_hub_committed; commits of
 * other processes are noticed by watching SQLite's data_version, one cheap probe per tick
 * for the whole mount. Kernel notifications go out from this thread only, never from inside
 * a request handler (libfuse deadlocks otherwise). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mount.h"

#define TICK_MS 20
#define QUEUE_MAX 64

typedef struct change {
    char thread_id[RS_ID_MAX + 1];
    char run_id[RS_ID_MAX + 1];
    int deleted;
} change;

struct rfs_hub {
    pthread_mutex_t lock;
    pthread_cond_t wake;         /* work for the hub thread */
    pthread_cond_t done;         /* the hub finished a round */
    pthread_t thread;
    int running;
    int stop;
    rs_store *store;             /* the hub's own connection */
    int64_t data_version;
    change queue[QUEUE_MAX];
    size_t queued;
    int overflow;                /* more changes than the queue holds: check everything */
    uint64_t requested;          /* rounds asked for */
    uint64_t finished;           /* rounds done */
    struct { uint64_t ino; int64_t from; } inval[QUEUE_MAX];
    size_t ninval;
    rfs_follow *followers;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void deadline_in(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

/* ---- followers ---- */

/* The line that ends a run's feed. Canonical lines spell the envelope exactly so. */
static int holds_terminal(const char *buf, size_t len)
{
    static const char needle[] = ",\"event_type\":\"run.terminal\",\"category\":";
    return memmem(buf, len, needle, sizeof needle - 1) != NULL;
}

/* Fill a reply for f from the store: 1 with out filled (possibly empty = EOF), 0 when the
 * follower must wait, <0 on error. Called with the hub lock held. */
static int follow_fill(rfs_follow *f, rs_store *s, size_t size, rs_buf *out)
{
    if (f->ended || now_ns() >= f->deadline_ns)
        return 1;
    rs_err err = {0};
    int rc = rfs_reader_read(f->reader, s, f->off, size, out, &err);
    if (rc)
        return rc;
    if (out->len == 0)
        return 0;
    f->off += (int64_t)out->len;
    if (f->node.kind == RFS_R_FOLLOW && holds_terminal(out->buf, out->len))
        f->ended = 1;
    return 1;
}

/* Runs on libfuse's thread when the reader is interrupted (Ctrl-C, kill): a parked read is
 * answered EINTR; one not parked yet is marked, and the parking code answers it. */
static void follow_interrupted(fuse_req_t req, void *data)
{
    rfs_follow *f = data;
    rfs_hub *hub = ((rfs_mount *)fuse_req_userdata(req))->hub;
    pthread_mutex_lock(&hub->lock);
    int mine = f->req == req;
    if (mine)
        f->req = NULL;
    else
        f->interrupted = req;
    pthread_mutex_unlock(&hub->lock);
    if (mine)
        fuse_reply_err(req, EINTR);
}

void rfs_hub_follow_add(rfs_mount *m, rfs_follow *f)
{
    rfs_hub *hub = m->hub;
    pthread_mutex_lock(&hub->lock);
    f->prev = NULL;
    f->next = hub->followers;
    if (hub->followers)
        hub->followers->prev = f;
    hub->followers = f;
    pthread_mutex_unlock(&hub->lock);
}

void rfs_hub_follow_remove(rfs_mount *m, rfs_follow *f)
{
    rfs_hub *hub = m->hub;
    pthread_mutex_lock(&hub->lock);
    if (f->prev)
        f->prev->next = f->next;
    else if (hub->followers == f)
        hub->followers = f->next;
    if (f->next)
        f->next->prev = f->prev;
    f->next = f->prev = NULL;
    fuse_req_t req = f->req;
    f->req = NULL;
    struct fuse_pollhandle *ph = f->ph;
    f->ph = NULL;
    pthread_mutex_unlock(&hub->lock);
    if (req)
        fuse_reply_err(req, EINTR);
    if (ph)
        fuse_pollhandle_destroy(ph);
}

void rfs_hub_follow_read(rfs_mount *m, rfs_follow *f, fuse_req_t req, size_t size, off_t off)
{
    (void)off;  /* a feed has no offsets: it goes on from what it delivered */
    rfs_hub *hub = m->hub;
    rs_store *s;
    rs_err err = {0};
    int rc = rfs_pool_get(m, &s, &err);
    if (rc)
        return (void)fuse_reply_err(req, -rc);
    /* Ask to hear of an interrupt before parking: the callback may run at once, so it runs
     * before we take the lock. */
    fuse_req_interrupt_func(req, follow_interrupted, f);
    pthread_mutex_lock(&hub->lock);
    if (f->interrupted == req || fuse_req_interrupted(req)) {
        f->interrupted = NULL;
        pthread_mutex_unlock(&hub->lock);
        rfs_pool_put(m, s);
        return (void)fuse_reply_err(req, EINTR);
    }
    if (f->req) {
        pthread_mutex_unlock(&hub->lock);
        rfs_pool_put(m, s);
        return (void)fuse_reply_err(req, EBUSY);
    }
    rs_buf out = RS_BUF_INIT;
    rc = follow_fill(f, s, size, &out);
    if (rc == 0) {
        f->req = req;
        f->req_size = size;
    }
    pthread_mutex_unlock(&hub->lock);
    rfs_pool_put(m, s);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else if (rc == 1)
        fuse_reply_buf(req, out.buf, out.len);
    rs_buf_release(&out);
}

void rfs_hub_follow_poll(rfs_mount *m, rfs_follow *f, fuse_req_t req, struct fuse_pollhandle *ph)
{
    rfs_hub *hub = m->hub;
    rs_store *s;
    rs_err err = {0};
    int rc = rfs_pool_get(m, &s, &err);
    if (rc) {
        if (ph)
            fuse_pollhandle_destroy(ph);
        return (void)fuse_reply_err(req, -rc);
    }
    pthread_mutex_lock(&hub->lock);
    int ready = f->ended || now_ns() >= f->deadline_ns;
    if (!ready) {
        /* Peek: rows after what was delivered make the feed readable. */
        rs_buf probe = RS_BUF_INIT;
        rc = rfs_reader_read(f->reader, s, f->off, 1, &probe, &err);
        ready = rc < 0 || probe.len > 0;
        rs_buf_release(&probe);
    }
    struct fuse_pollhandle *old = NULL;
    if (!ready && ph) {
        old = f->ph;
        f->ph = ph;
        ph = NULL;
    }
    pthread_mutex_unlock(&hub->lock);
    rfs_pool_put(m, s);
    if (old)
        fuse_pollhandle_destroy(old);
    if (ph)
        fuse_pollhandle_destroy(ph);
    fuse_reply_poll(req, ready ? POLLIN : 0);
}

/* Serve parked followers of thread (NULL: all). Hub lock held. */
static void serve_followers(rfs_hub *hub, const char *thread_id)
{
    int64_t now = now_ns();
    for (rfs_follow *f = hub->followers; f; f = f->next) {
        if (thread_id && strcmp(f->node.thread_id, thread_id) != 0 && now < f->deadline_ns)
            continue;
        if (f->req) {
            rs_buf out = RS_BUF_INIT;
            int rc = follow_fill(f, hub->store, f->req_size, &out);
            if (rc != 0) {
                fuse_req_t req = f->req;
                f->req = NULL;
                if (rc < 0)
                    fuse_reply_err(req, -rc);
                else
                    fuse_reply_buf(req, out.buf, out.len);
            }
            rs_buf_release(&out);
        }
        if (f->ph) {
            rs_buf probe = RS_BUF_INIT;
            rs_err err = {0};
            int ready = f->ended || now >= f->deadline_ns ||
                        rfs_reader_read(f->reader, hub->store, f->off, 1, &probe, &err) != 0 ||
                        probe.len > 0;
            rs_buf_release(&probe);
            if (ready) {
                fuse_lowlevel_notify_poll(f->ph);
                fuse_pollhandle_destroy(f->ph);
                f->ph = NULL;
            }
        }
    }
}

/* ---- kernel invalidation ---- */

typedef struct scan_ctx {
    rfs_mount *m;
    const char *thread_id;       /* NULL: every log */
    int from_start;              /* a delete changed the middle */
    struct { uint64_t ino; int64_t from; } *out;
    size_t count, cap;
} scan_ctx;

static void collect_log(void *ctx, uint64_t ino, const rfs_node *n, int64_t size)
{
    scan_ctx *sc = ctx;
    if (size < 0 || (sc->thread_id && strcmp(n->thread_id, sc->thread_id) != 0))
        return;
    if (sc->count == sc->cap) {
        size_t cap = sc->cap ? sc->cap * 2 : 16;
        void *p = realloc(sc->out, cap * sizeof *sc->out);
        if (!p)
            return;
        sc->out = p;
        sc->cap = cap;
    }
    sc->out[sc->count].ino = ino;
    sc->out[sc->count].from = sc->from_start ? 0 : size;
    sc->count++;
}

/* Invalidate the cached tails of logs: of one thread after our commit, or of every log whose
 * size moved when another process committed. */
static void invalidate_logs(rfs_mount *m, const char *thread_id, int from_start, int check_size)
{
    scan_ctx sc = {.m = m, .thread_id = thread_id, .from_start = from_start};
    rfs_itable_each(m->inodes, RFS_T_EVENTS, collect_log, &sc);
    rfs_itable_each(m->inodes, RFS_R_EVENTS, collect_log, &sc);
    for (size_t i = 0; i < sc.count; i++) {
        if (check_size) {
            rfs_node n;
            rs_log_info info;
            if (rfs_itable_get(m->inodes, sc.out[i].ino, &n) ||
                rs_store_log_info(m->hub->store, n.thread_id,
                                  n.kind == RFS_R_EVENTS ? n.run_id : NULL, NULL, &info, NULL) ||
                info.size == sc.out[i].from)
                continue;
            if (info.size < sc.out[i].from)
                sc.out[i].from = 0;
        }
        fuse_lowlevel_notify_inval_inode(m->se, sc.out[i].ino, sc.out[i].from, 0);
    }
    free(sc.out);
}

static void *hub_main(void *arg)
{
    rfs_mount *m = arg;
    rfs_hub *hub = m->hub;
    pthread_mutex_lock(&hub->lock);
    while (!hub->stop) {
        if (hub->queued == 0 && !hub->overflow && hub->ninval == 0) {
            struct timespec ts;
            deadline_in(&ts, TICK_MS);
            pthread_cond_timedwait(&hub->wake, &hub->lock, &ts);
            if (hub->stop)
                break;
        }
        uint64_t round = hub->requested;
        change queue[QUEUE_MAX];
        size_t queued = hub->queued;
        memcpy(queue, hub->queue, queued * sizeof queue[0]);
        int overflow = hub->overflow;
        hub->queued = 0;
        hub->overflow = 0;
        size_t ninval = hub->ninval;
        struct { uint64_t ino; int64_t from; } inval[QUEUE_MAX];
        memcpy(inval, hub->inval, ninval * sizeof inval[0]);
        hub->ninval = 0;
        pthread_mutex_unlock(&hub->lock);

        for (size_t i = 0; i < ninval; i++)
            fuse_lowlevel_notify_inval_inode(m->se, inval[i].ino, inval[i].from, 0);
        for (size_t i = 0; i < queued; i++)
            invalidate_logs(m, queue[i].thread_id, queue[i].deleted, 0);
        /* Other processes: one probe of data_version per tick for the whole mount. */
        int64_t version = hub->data_version;
        int foreign = rs_store_data_version(hub->store, &version) == 0 &&
                      version != hub->data_version;
        hub->data_version = version;
        if (foreign || overflow)
            invalidate_logs(m, NULL, 0, 1);

        pthread_mutex_lock(&hub->lock);
        if (foreign || overflow || queued == 0)
            serve_followers(hub, NULL);
        for (size_t i = 0; i < queued; i++)
            serve_followers(hub, queue[i].thread_id);
        hub->finished = round;
        pthread_cond_broadcast(&hub->done);
    }
    pthread_mutex_unlock(&hub->lock);
    return NULL;
}

int rfs_hub_start(rfs_mount *m)
{
    rfs_hub *hub = calloc(1, sizeof *hub);
    if (!hub)
        return -ENOMEM;
    pthread_mutex_init(&hub->lock, NULL);
    pthread_cond_init(&hub->wake, NULL);
    pthread_cond_init(&hub->done, NULL);
    rs_err err = {0};
    int rc = rs_store_open(&hub->store, m->opt.store, &m->store_opt, &err);
    if (rc) {
        rfs_log("cannot open the store for the change hub: %s", err.msg);
        free(hub);
        return rc;
    }
    rs_store_data_version(hub->store, &hub->data_version);
    m->hub = hub;
    if (pthread_create(&hub->thread, NULL, hub_main, m) != 0) {
        rs_store_close(hub->store);
        free(hub);
        m->hub = NULL;
        return -EAGAIN;
    }
    hub->running = 1;
    return 0;
}

void rfs_hub_stop(rfs_mount *m)
{
    rfs_hub *hub = m->hub;
    if (!hub)
        return;
    pthread_mutex_lock(&hub->lock);
    hub->stop = 1;
    pthread_cond_broadcast(&hub->wake);
    pthread_mutex_unlock(&hub->lock);
    if (hub->running)
        pthread_join(hub->thread, NULL);
    rs_store_close(hub->store);
    pthread_cond_destroy(&hub->done);
    pthread_cond_destroy(&hub->wake);
    pthread_mutex_destroy(&hub->lock);
    free(hub);
    m->hub = NULL;
}

/* Ask for a round and wait (bounded) until the hub has done it. */
static void request_round(rfs_hub *hub, int wait)
{
    uint64_t want = ++hub->requested;
    pthread_cond_signal(&hub->wake);
    if (!wait)
        return;
    struct timespec ts;
    deadline_in(&ts, 200);
    while (hub->finished < want && !hub->stop)
        if (pthread_cond_timedwait(&hub->done, &hub->lock, &ts) == ETIMEDOUT)
            break;
}

static void queue_change(rfs_mount *m, const char *thread_id, const char *run_id, int deleted)
{
    rfs_hub *hub = m->hub;
    if (!hub)
        return;
    /* Only readers holding cached pages need the invalidation before write() returns. */
    rfs_node n = {.kind = RFS_T_EVENTS};
    snprintf(n.thread_id, sizeof n.thread_id, "%s", thread_id);
    int64_t t_size = -1, r_size = -1;
    rfs_itable_known_size(m->inodes, rfs_itable_ino_of(&n), &t_size);
    if (run_id) {
        n.kind = RFS_R_EVENTS;
        snprintf(n.run_id, sizeof n.run_id, "%s", run_id);
        rfs_itable_known_size(m->inodes, rfs_itable_ino_of(&n), &r_size);
    }
    pthread_mutex_lock(&hub->lock);
    if (hub->queued < QUEUE_MAX) {
        change *c = &hub->queue[hub->queued++];
        snprintf(c->thread_id, sizeof c->thread_id, "%s", thread_id);
        snprintf(c->run_id, sizeof c->run_id, "%s", run_id ? run_id : "");
        c->deleted = deleted;
    } else {
        hub->overflow = 1;
    }
    request_round(hub, t_size >= 0 || r_size >= 0);
    pthread_mutex_unlock(&hub->lock);
}

void rfs_hub_committed(rfs_mount *m, const char *thread_id, const char *run_id)
{
    queue_change(m, thread_id, run_id, 0);
}

void rfs_hub_deleted(rfs_mount *m, const char *thread_id)
{
    queue_change(m, thread_id, NULL, 1);
}

void rfs_hub_invalidate(rfs_mount *m, uint64_t ino, int64_t from)
{
    rfs_hub *hub = m->hub;
    if (!hub)
        return;
    pthread_mutex_lock(&hub->lock);
    if (hub->ninval < QUEUE_MAX) {
        hub->inval[hub->ninval].ino = ino;
        hub->inval[hub->ninval].from = from;
        hub->ninval++;
    } else {
        hub->overflow = 1;
    }
    request_round(hub, 1);
    pthread_mutex_unlock(&hub->lock);
}
