/* notify.c — the change hub: one thread per mount that tells the kernel what changed and
 * wakes live followers. Commits of this mount arrive through rfs_hub_committed; commits of
 * other processes are noticed by rs_store_foreign_version (on SQLite the wal-index's
 * change counter less this process's commits; on PostgreSQL the notifications of other
 * mounts and a probe for DeerFlow's rows), one cheap probe per tick for the whole mount. A
 * file's pages are dropped from this thread only, never from inside a request handler (the
 * kernel may hold those pages locked for the request: it would wait on itself). A handler
 * tells the kernel only what no request holds: attributes and directories' listings (a
 * writer's own change, queue_change) and stores of a file's pages at its getattr (ops.c) or
 * open (ops_file.c), which wait for no lock of the inode's. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "follow.h"
#include "keeper.h"
#include "log.h"
#include "ops_int.h"
#include "rs_util.h"
#include "sizes.h"

void rfs_hub_deadline_in(struct timespec *ts, long ms)
{
    int64_t ns = rs_clock_ns(CLOCK_REALTIME) + (int64_t)ms * 1000000LL;
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
}

/* ---- the kernel's copy of the logs ----
 * The kernel caches the pages of quiet logs (a log being written is read without the cache,
 * see rfs_op_open). Appends change only the tail: after every change the hub drops the cached
 * pages from the one that held the old end, which is exact because the old end is the
 * store's size before the change (kept per log inode as "observed"), not the kernel's. */

/* The log's size went from `observed` to `size`: drop what the kernel may hold past the old
 * end (everything, when a delete shrank it). */
static void tail_changed(rfs_mount *m, uint64_t ino, int64_t observed, int64_t size)
{
    if (observed < 0 || observed == size)
        return;
    if (rfs_itable_cached(m->inodes, ino))
        fuse_lowlevel_notify_inval_inode(m->se, ino, size < observed ? 0 : observed, 0);
    rfs_itable_set_size(m->inodes, ino, size);
}

/* Before the kernel is told what a change made stale: replies stat'ed before it cache
 * nothing (rfs_mount's attr_gen). */
static void gen_bump(rfs_mount *m)
{
    pthread_rwlock_wrlock(&m->attr_lock);
    atomic_fetch_add(&m->attr_gen, 1);
    pthread_rwlock_unlock(&m->attr_lock);
}

typedef struct known_log {
    uint64_t ino;
    rfs_node node;
    int64_t observed;
} known_log;

typedef struct scan_ctx {
    known_log *out;
    size_t count, cap;
} scan_ctx;

static void collect_log(void *ctx, uint64_t ino, const rfs_node *n, int64_t size)
{
    scan_ctx *sc = ctx;
    if (size < 0)
        return;
    if (rs_array_grow(&sc->out, &sc->cap, sc->count + 1, sizeof *sc->out))
        return;
    sc->out[sc->count++] = (known_log){.ino = ino, .node = *n, .observed = size};
}

/* ---- the kernel's copy of the views ----
 * history.jsonl and transcript.md may change anywhere when their thread changes (a run's
 * heading, runs a regeneration hides): a kept rendering (its version in the inode table,
 * see op_getattr) is dropped whole, and so is a view pushed whole at its open (ops_file.c). */

/* The kinds whose pages the kernel may keep by version: the ones it keeps renderings of and
 * the views read through the page cache (ops_file.c), derived from their one definition. */
static rfs_kinds kept_views(void)
{
    rfs_kinds kinds = 0;
    for (int k = RFS_ROOT; k <= RFS_KIND_LAST; k++)
        if (rfs_view_kernel_keeps((rfs_kind)k) || rfs_row_view((rfs_kind)k))
            kinds |= RFS_KIND(k);
    return kinds;
}

static void view_dropped(rfs_mount *m, uint64_t ino)
{
    fuse_lowlevel_notify_inval_inode(m->se, ino, 0, 0);
    rfs_itable_set_size(m->inodes, ino, -1);
}

/* The kept views of a thread that changed (thread_id), or of every thread whose version is
 * not the one kept (NULL: another process changed something). */
static void sync_views(rfs_mount *m, const char *thread_id)
{
    scan_ctx sc = {0};
    rfs_itable_each(m->inodes, thread_id, kept_views(), collect_log, &sc);
    for (size_t i = 0; i < sc.count; i++) {
        rs_log_info info;
        const rfs_node *n = &sc.out[i].node;
        if (!thread_id &&
            rs_store_log_info(m->hub->store, n->thread_id, n->kind >= RFS_RUN ? n->run_id : NULL,
                              m->opt.user, &info, NULL) == 0 &&
            rfs_view_version(&info) == sc.out[i].observed)
            continue;
        view_dropped(m, sc.out[i].ino);
    }
    free(sc.out);
}

/* Every cached log (of one thread, or all) whose store size moved, and the views kept of
 * them. */
static void sync_logs(rfs_mount *m, const char *thread_id)
{
    sync_views(m, thread_id);
    scan_ctx sc = {0};
    rfs_itable_each(m->inodes, thread_id, RFS_KIND(RFS_T_EVENTS) | RFS_KIND(RFS_R_EVENTS),
                    collect_log, &sc);
    for (size_t i = 0; i < sc.count; i++) {
        const rfs_node *n = &sc.out[i].node;
        rs_log_info info;
        if (rs_store_log_info(m->hub->store, n->thread_id,
                              n->kind == RFS_R_EVENTS ? n->run_id : NULL, NULL, &info, NULL) != 0)
            continue;
        int64_t size = info.exists ? info.size : 0;
        /* A run that grew, another process's rows among them: its step data is kept once
         * it is quiet, as for this mount's appends. */
        if (n->kind == RFS_R_EVENTS && sc.out[i].observed >= 0 && size > sc.out[i].observed)
            rfs_keeper_note(m, n->thread_id, n->run_id);
        tail_changed(m, sc.out[i].ino, sc.out[i].observed, size);
    }
    free(sc.out);
}

/* Rows were changed in place or deleted (rs_store_rewrites moved): any page the kernel holds
 * of a log of thread_id (NULL: of any thread, the change's place unknown) may be of bytes that
 * are no longer there, and every kept view too, so all of them go (in-place changes are rare;
 * a page read again costs little). */
static void drop_logs(rfs_mount *m, const char *thread_id)
{
    scan_ctx sc = {0};
    rfs_itable_each(m->inodes, thread_id,
                    RFS_KIND(RFS_T_EVENTS) | RFS_KIND(RFS_R_EVENTS) | kept_views(), collect_log,
                    &sc);
    for (size_t i = 0; i < sc.count; i++) {
        const rfs_node *n = &sc.out[i].node;
        rs_log_info info;
        if (!rfs_node_is_log(n->kind)) {
            view_dropped(m, sc.out[i].ino);
        } else if (rs_store_log_info(m->hub->store, n->thread_id,
                                     n->kind == RFS_R_EVENTS ? n->run_id : NULL, NULL, &info,
                                     NULL) == 0) {
            if (rfs_itable_cached(m->inodes, sc.out[i].ino))
                fuse_lowlevel_notify_inval_inode(m->se, sc.out[i].ino, 0, 0);
            rfs_itable_set_size(m->inodes, sc.out[i].ino, info.exists ? info.size : 0);
        }
    }
    free(sc.out);
}

/* ---- the kernel's names ----
 * The kernel trusts a thread's or run's name for DIR_TIMEOUT. One another writer deleted is
 * dropped from its cache when the hub sees the change, so a lookup finds it gone at once
 * and mkdir -p makes it again. (Where each uid is its own owner nothing is cached.) */

#define NAMES_MS 200

static void collect_node(void *ctx, uint64_t ino, const rfs_node *n, int64_t size)
{
    (void)size;
    scan_ctx *sc = ctx;
    if (rs_array_grow(&sc->out, &sc->cap, sc->count + 1, sizeof *sc->out))
        return;
    sc->out[sc->count++] = (known_log){.ino = ino, .node = *n, .observed = -1};
}

static void sync_names(rfs_mount *m)
{
    if (m->opt.user_from_uid)
        return;
    scan_ctx sc = {0};
    rfs_itable_each(m->inodes, NULL, RFS_KIND(RFS_THREAD) | RFS_KIND(RFS_RUN), collect_node, &sc);
    rfs_scope scope;
    char uid[24];
    rfs_scope_for(m, NULL, &scope, uid, sizeof uid);
    for (size_t i = 0; i < sc.count; i++) {
        const rfs_node *n = &sc.out[i].node;
        rfs_stat st;
        if (rfs_view_stat(m->hub->store, &scope, n, &st, NULL) != -ENOENT)
            continue;
        rfs_node parent = {.kind = n->kind == RFS_RUN ? RFS_RUNS : RFS_THREADS};
        if (n->kind == RFS_RUN)
            memcpy(parent.thread_id, n->thread_id, sizeof parent.thread_id);
        const char *name = n->kind == RFS_RUN ? n->run_id : n->thread_id;
        fuse_lowlevel_notify_inval_entry(m->se, rfs_itable_ino_of(m->inodes, &parent), name,
                                         strlen(name));
    }
    free(sc.out);
}

/* ---- the kernel's directories ----
 * A thread's and a run's directory show the time of their newest event, and the kernel
 * keeps a directory's attributes for DIR_TIMEOUT and its listing until it is dropped (where
 * listings are shared: ops_dir.c): a change drops both (off 0: the attributes and the
 * listing's pages) for the directories that show it, so a stat after an append returns sees
 * the new time and ls the new run, type, task or singleton. Only inodes the kernel holds
 * are told. A listing is a directory's pages, which no request holds while it waits for the
 * daemon: a writer may drop them itself. */

static void dir_dropped(rfs_mount *m, const rfs_node *n)
{
    rfs_node held;
    uint64_t ino = rfs_itable_ino_of(m->inodes, n);
    if (rfs_itable_get(m->inodes, ino, &held) == 0)
        fuse_lowlevel_notify_inval_inode(m->se, ino, 0, 0);
}

/* The files' attributes the kernel keeps (attrs.h): attributes only; the pages of a view
 * the kernel keeps go by its version (sync_views). */
static void file_attrs_dropped(void *ctx, uint64_t ino)
{
    rfs_mount *m = ctx;
    fuse_lowlevel_notify_inval_inode(m->se, ino, -1, 0);
}

/* The files' attributes the kernel keeps of thread_id (NULL: of every thread) dropped in
 * the same hold of attr_lock as a bump of attr_gen: a reply that let the kernel keep some
 * (recorded in m->attrs) went out before, as it holds the lock for reading across its
 * fuse_reply_*, and one after caches nothing unless its stat came after the bump. Only
 * attributes: telling the kernel waits on no page, so no request holding the lock for
 * reading can be waiting on this. */
static void attrs_dropped(rfs_mount *m, const char *thread_id)
{
    pthread_rwlock_wrlock(&m->attr_lock);
    atomic_fetch_add(&m->attr_gen, 1);
    rfs_attrs_take(m->attrs, thread_id, rs_clock_ns(CLOCK_MONOTONIC), file_attrs_dropped, m);
    pthread_rwlock_unlock(&m->attr_lock);
}

/* The directories above a change of thread_id (run_id: "" for the thread only), the run's
 * listings of its types, tasks and singletons, and the thread's files. */
static void dirs_changed(rfs_mount *m, const char *thread_id, const char *run_id)
{
    attrs_dropped(m, thread_id);
    rfs_node n = {.kind = RFS_THREADS};
    dir_dropped(m, &n);
    memcpy(n.thread_id, thread_id, sizeof n.thread_id);
    n.kind = RFS_THREAD;
    dir_dropped(m, &n);
    n.kind = RFS_RUNS;
    dir_dropped(m, &n);
    if (!run_id[0])
        return;
    memcpy(n.run_id, run_id, sizeof n.run_id);
    static const rfs_kind below[] = {RFS_RUN, RFS_R_TYPES_DIR, RFS_R_TASKS_DIR, RFS_R_ONCE_DIR};
    for (size_t i = 0; i < sizeof below / sizeof below[0]; i++) {
        n.kind = below[i];
        dir_dropped(m, &n);
    }
}

/* Another process changed something: every directory the kernel holds may show it, and
 * every file whose attributes it keeps. */
static void sync_dirs(rfs_mount *m)
{
    attrs_dropped(m, NULL);
    scan_ctx sc = {0};
    rfs_itable_each(m->inodes, NULL,
                    RFS_KIND(RFS_THREADS) | RFS_KIND(RFS_THREAD) | RFS_KIND(RFS_RUNS) |
                        RFS_KIND(RFS_RUN) | RFS_KIND(RFS_R_TYPES_DIR) | RFS_KIND(RFS_R_TASKS_DIR) |
                        RFS_KIND(RFS_R_ONCE_DIR),
                    collect_node, &sc);
    for (size_t i = 0; i < sc.count; i++)
        fuse_lowlevel_notify_inval_inode(m->se, sc.out[i].ino, 0, 0);
    free(sc.out);
}

/* An append of this mount: the old ends of the run's and the thread's logs are known
 * exactly from where the lines landed. */
static void store_appended(rfs_mount *m, const rfs_change *c)
{
    if (!c->dirs_dropped)
        dirs_changed(m, c->thread_id, c->run_id);
    sync_views(m, c->thread_id);
    rfs_node n = {.kind = RFS_R_EVENTS};
    memcpy(n.thread_id, c->thread_id, sizeof n.thread_id);
    memcpy(n.run_id, c->run_id, sizeof n.run_id);
    for (int i = 0; i < 2; i++) {
        int64_t off = i == 0 ? c->at.run_off : c->at.thread_off;
        if (i == 1) {
            n.kind = RFS_T_EVENTS;
            n.run_id[0] = '\0';
        }
        uint64_t ino = rfs_itable_ino_of(m->inodes, &n);
        int64_t observed = -1;
        if (rfs_itable_known_size(m->inodes, ino, &observed) == 0 && observed >= 0)
            tail_changed(m, ino, observed < off ? observed : off, off + (int64_t)c->len);
    }
}

/* ---- sizes kept for later mounts ---- */

int rfs_hub_keep_size(void *ctx, uint64_t view, uint64_t token, int64_t size)
{
    rfs_hub *hub = ((rfs_mount *)ctx)->hub;
    if (!hub)
        return -EAGAIN;
    pthread_mutex_lock(&hub->lock);
    int rc = hub->stop || hub->nkept >= RFS_HUB_KEPT_MAX ? -EAGAIN
             : rs_array_grow(&hub->kept, &hub->kept_cap, hub->nkept + 1, sizeof *hub->kept)
                 ? -ENOMEM
                 : 0;
    if (!rc) {
        hub->kept[hub->nkept++] = (rs_size){view, token, size};
        pthread_cond_signal(&hub->wake); /* written at once: a later mount may look soon */
    }
    pthread_mutex_unlock(&hub->lock);
    return rc;
}

/* Write the sizes taken so far, on the hub's connection (called without the lock), in one
 * transaction: a walk's hundreds of sizes are one commit, not hundreds. They are kept best
 * effort: a failure drops them all, so a store that is down costs one wait for it. */
static void kept_write(rfs_hub *hub)
{
    pthread_mutex_lock(&hub->lock);
    rs_size *v = hub->kept;
    size_t n = hub->nkept;
    hub->kept = NULL;
    hub->nkept = hub->kept_cap = 0;
    pthread_mutex_unlock(&hub->lock);
    (void)rs_store_sizes_put(hub->store, v, n);
    free(v);
}

/* Another process committed, or this one changed more than the queue held: everything the
 * kernel keeps is checked. 1 when rows were changed in place or deleted (every log's pages
 * dropped): the names are looked at now. */
static int sweep_all(rfs_mount *m)
{
    rfs_hub *hub = m->hub;
    gen_bump(m);
    /* Rows DeerFlow (or any non-runfs writer) added or deleted get indexed now, so the logs
     * show them without waiting for runfs's next write. */
    rs_store_refresh(hub->store, NULL);
    int64_t rewrites = hub->rewrites;
    sync_dirs(m);
    if (rs_store_rewrites(hub->store, &rewrites) == 0 && rewrites != hub->rewrites) {
        hub->rewrites = rewrites;
        /* A kept search answer may hold bytes a redaction erased: it goes now, not at the
         * mount's next search. */
        rfs_sizes_rewrites(m->sizes, rewrites);
        drop_logs(m, NULL);
        return 1;
    }
    sync_logs(m, NULL);
    return 0;
}

static void *hub_main(void *arg)
{
    rfs_mount *m = arg;
    rfs_hub *hub = m->hub;
    int64_t probed = 0;          /* when foreign_version was last probed */
    int64_t named = 0;           /* when sync_names last ran */
    int names_due = 0;           /* a foreign change since: a thread or run may have gone */
    int64_t signals_checked = 0; /* when rfs_follow_signalled last ran */
    pthread_mutex_lock(&hub->lock);
    while (!hub->stop) {
        int ticked = 0;
        if (hub->queued == 0 && !hub->overflow && hub->ninval == 0 && !hub->serve_asked &&
            hub->nkept == 0) {
            struct timespec ts;
            rfs_hub_deadline_in(&ts, RFS_HUB_TICK_MS);
            ticked = pthread_cond_timedwait(&hub->wake, &hub->lock, &ts) == ETIMEDOUT;
            if (hub->stop)
                break;
        }
        uint64_t round = hub->requested;
        rfs_change queue[RFS_HUB_QUEUE_MAX];
        size_t queued = hub->queued;
        memcpy(queue, hub->queue, queued * sizeof queue[0]);
        int overflow = hub->overflow;
        hub->queued = 0;
        hub->overflow = 0;
        size_t ninval = hub->ninval;
        struct {
            uint64_t ino;
        } inval[RFS_HUB_QUEUE_MAX];
        memcpy(inval, hub->inval, ninval * sizeof inval[0]);
        hub->ninval = 0;
        pthread_mutex_unlock(&hub->lock);
        if (ninval || queued || overflow)
            gen_bump(m);

        /* A log grown may have grown by another writer's in-place UPDATE of a row, not by
         * an append: every byte after that row moved, so every log's pages go, from 0,
         * before the stat that asked replies with the new size. The count is asked after
         * the first log's look (it is the store as that look found it). */
        int rewrites_checked = 0;
        for (size_t i = 0; i < ninval; i++) {
            rfs_node n;
            int64_t observed = -1;
            rs_log_info info;
            if (rfs_itable_get(m->inodes, inval[i].ino, &n) != 0)
                continue;
            if (!rfs_node_is_log(n.kind)) {
                view_dropped(m, inval[i].ino);
                continue;
            }
            if (rs_store_log_info(hub->store, n.thread_id, n.kind == RFS_R_EVENTS ? n.run_id : NULL,
                                  NULL, &info, NULL) != 0)
                continue;
            int64_t rewrites = hub->rewrites;
            if (!rewrites_checked++ && rs_store_rewrites(hub->store, &rewrites) == 0 &&
                rewrites != hub->rewrites) {
                hub->rewrites = rewrites;
                rfs_sizes_rewrites(m->sizes, rewrites);
                drop_logs(m, NULL);
            }
            if (rfs_itable_known_size(m->inodes, inval[i].ino, &observed) == 0)
                tail_changed(m, inval[i].ino, observed, info.exists ? info.size : 0);
        }
        for (size_t i = 0; i < queued; i++) {
            if (queue[i].placed) {
                store_appended(m, &queue[i]);
                continue;
            }
            if (!queue[i].dirs_dropped)
                dirs_changed(m, queue[i].thread_id, queue[i].run_id);
            if (queue[i].rewritten)
                drop_logs(m, queue[i].thread_id);
            else
                sync_logs(m, queue[i].thread_id);
        }
        /* Other processes: one probe per tick for the whole mount, however many rounds
         * this mount's writes ask for. A probe that finds a change costs a lookup per
         * cached and per followed log and a notification per directory, so it asks for
         * other processes' commits only (rs_store_foreign_version): this mount's own,
         * which data_version counts too on SQLite, came through rfs_hub_committed, and
         * taken for another's they had every tick of a busy mount sweep the whole mount.
         * A round that overflowed checks everything before its writers are let go: theirs
         * are among the changes it could not hold. */
        int64_t now = rs_clock_ns(CLOCK_MONOTONIC);
        int foreign = 0;
        if (overflow || ticked || now - probed >= RFS_HUB_TICK_MS * 1000000LL) {
            probed = now;
            int64_t version = hub->foreign_version;
            foreign = rs_store_foreign_version(hub->store, &version) == 0 &&
                      version != hub->foreign_version;
            hub->foreign_version = version;
        }
        if (overflow && sweep_all(m))
            named = 0;
        /* The kernel knows this mount's changes: writers waiting in request_round may
         * return; kept sizes, other processes' changes and followers come after, so
         * neither a walk's sizes, a slow reader nor another mount's appends hold up a
         * write(). */
        pthread_mutex_lock(&hub->lock);
        hub->finished = round;
        pthread_cond_broadcast(&hub->done);
        pthread_mutex_unlock(&hub->lock);
        /* The runs this mount wrote, for their step data to be kept once they are quiet
         * (after the writers were let go: nothing of it is on a write's path). */
        for (size_t i = 0; i < queued; i++)
            if (!queue[i].rewritten)
                rfs_keeper_note(m, queue[i].thread_id, queue[i].run_id);
        /* Drops the kernel may have lost (attrs.h), told again until they settle. */
        rfs_attrs_settle(m->attrs, rs_clock_ns(CLOCK_MONOTONIC), file_attrs_dropped, m);
        kept_write(hub);

        if (foreign && !overflow && sweep_all(m))
            named = 0;
        /* Which runs another process (or this one, past the queue) wrote, the hub does not
         * know: the keeper asks the change feed, for their step data. */
        if (foreign || overflow)
            rfs_keeper_foreign(m);
        names_due = names_due || foreign || overflow;
        /* A thread or run deleted without rows deleted (made by mkdir only) moves only
         * the version, which does not say where (and which on PostgreSQL this mount's own
         * commits move too): the names are looked at at most every NAMES_MS then, and a
         * name gone is dropped well before the kernel's DIR_TIMEOUT would. */
        if (names_due && now - named >= NAMES_MS * 1000000LL) {
            names_due = 0;
            named = now;
            sync_names(m);
        }

        rfs_sizing_tell(m);
        rfs_follow_serve_round(hub, queue, queued, foreign || overflow);
        if (now - signals_checked >= RFS_HUB_TICK_MS * 1000000LL) {
            signals_checked = now;
            rfs_follow_signalled(hub);
        }
        pthread_mutex_lock(&hub->lock);
    }
    /* Unmounted: nothing will commit for the feeds still parked. */
    rfs_follow_end_all(hub);
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
    pthread_cond_init(&hub->left, NULL);
    rs_err err = {0};
    int rc = rs_store_open(&hub->store, m->opt.store, &m->store_opt, &err);
    if (rc) {
        rfs_log("cannot open the store for the change hub: %s", err.msg);
        free(hub);
        return rc;
    }
    rs_store_foreign_version(hub->store, &hub->foreign_version);
    /* The sizes table hears the count now, before any request: a reader opened while it
     * still said 0 took the hub's first news of the store's count for a rewrite since its
     * open, and a stream that could not prove its bytes the same failed with ESTALE. */
    if (rs_store_rewrites(hub->store, &hub->rewrites) == 0)
        rfs_sizes_rewrites(m->sizes, hub->rewrites);
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
    kept_write(hub);
    rs_store_close(hub->store);
    pthread_cond_destroy(&hub->left);
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
    rfs_hub_deadline_in(&ts, 200);
    while (hub->finished < want && !hub->stop)
        if (pthread_cond_timedwait(&hub->done, &hub->lock, &ts) == ETIMEDOUT)
            break;
}

static void queue_change(rfs_mount *m, const char *thread_id, const char *run_id, int rewritten,
                         const rs_placement *at, size_t len)
{
    rfs_hub *hub = m->hub;
    if (!hub)
        return;
    /* Only a log the kernel may hold pages of needs the invalidation before write()
     * returns; otherwise the hub just wakes followers. */
    rfs_node n = {.kind = RFS_T_EVENTS}, run = {.kind = RFS_R_EVENTS};
    /* ids are 1-64 characters, which every id field holds; the thread's files have no run
     * id (their inode numbers are of the node without one) */
    if (rs_fmt(n.thread_id, sizeof n.thread_id, "%s", thread_id) < 0 ||
        (run_id && rs_fmt(run.run_id, sizeof run.run_id, "%s", run_id) < 0))
        return;
    memcpy(run.thread_id, n.thread_id, sizeof run.thread_id);
    int wait = rfs_itable_cached(m->inodes, rfs_itable_ino_of(m->inodes, &n));
    /* So does a kept view of the thread. */
    static const rfs_kind views[] = {RFS_T_HISTORY, RFS_T_TRANSCRIPT};
    for (size_t i = 0; i < sizeof views / sizeof views[0] && !wait; i++) {
        int64_t kept = -1;
        n.kind = views[i];
        wait = rfs_itable_known_size(m->inodes, rfs_itable_ino_of(m->inodes, &n), &kept) == 0 &&
               kept >= 0;
    }
    if (run_id) {
        wait |= rfs_itable_cached(m->inodes, rfs_itable_ino_of(m->inodes, &run));
        int64_t kept = -1;
        run.kind = RFS_R_OTEL; /* the run's view the kernel may keep */
        wait |= rfs_itable_known_size(m->inodes, rfs_itable_ino_of(m->inodes, &run), &kept) == 0 &&
                kept >= 0;
    }
    /* The directories above the change show its time at once: the kernel keeps their
     * attributes, and a write() that does not wait for the hub drops them itself (attributes
     * only, of other inodes than the one written: nothing the kernel holds for this write). */
    int dirs_dropped = !wait && !rewritten;
    if (dirs_dropped)
        dirs_changed(m, n.thread_id, run_id ? run.run_id : ""); /* it bumps attr_gen first */
    pthread_mutex_lock(&hub->lock);
    if (hub->queued < RFS_HUB_QUEUE_MAX) {
        rfs_change *c = &hub->queue[hub->queued++];
        memcpy(c->thread_id, n.thread_id, sizeof c->thread_id);
        memcpy(c->run_id, run_id ? run.run_id : "", run_id ? sizeof c->run_id : 1);
        c->rewritten = rewritten;
        c->dirs_dropped = dirs_dropped;
        c->placed = at != NULL;
        c->len = len;
        if (at)
            c->at = *at;
    } else {
        hub->overflow = 1;
    }
    request_round(hub, wait || rewritten);
    pthread_mutex_unlock(&hub->lock);
}

void rfs_hub_committed(rfs_mount *m, const char *thread_id, const char *run_id)
{
    queue_change(m, thread_id, run_id, 0, NULL, 0);
}

void rfs_hub_appended(rfs_mount *m, const char *thread_id, const char *run_id,
                      const rs_placement *at, size_t len)
{
    queue_change(m, thread_id, run_id, 0, at, len);
}

void rfs_hub_rewritten(rfs_mount *m, const char *thread_id)
{
    queue_change(m, thread_id, NULL, 1, NULL, 0);
}

void rfs_hub_changed_all(rfs_mount *m)
{
    rfs_hub *hub = m->hub;
    if (!hub)
        return;
    pthread_mutex_lock(&hub->lock);
    hub->overflow = 1;
    request_round(hub, 0);
    pthread_mutex_unlock(&hub->lock);
}

void rfs_hub_sync(rfs_mount *m, uint64_t ino, int wait)
{
    rfs_hub *hub = m->hub;
    if (!hub)
        return;
    pthread_mutex_lock(&hub->lock);
    if (hub->ninval < RFS_HUB_QUEUE_MAX) {
        hub->inval[hub->ninval++].ino = ino;
    } else {
        hub->overflow = 1;
    }
    request_round(hub, wait);
    pthread_mutex_unlock(&hub->lock);
}
