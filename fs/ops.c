/* ops.c — the FUSE low-level operations: the helpers every handler shares, names and
 * attributes, and the operation table (directory handlers in ops_dir.c, file handlers in
 * ops_file.c). Each decodes its arguments, calls the view or the
 * store, and replies exactly once. Refused writes are logged with their reason. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "keeper.h"
#include "ops_int.h"
#include "search_view.h"
#include "rs_util.h"

rfs_mount *rfs_mount_of(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

void rfs_scope_for(rfs_mount *m, fuse_req_t req, rfs_scope *sc, char *uidbuf, size_t uidlen)
{
    memset(sc, 0, sizeof *sc);
    sc->user = m->opt.user;
    if (m->opt.user_from_uid && req) {
        uid_t uid = fuse_req_ctx(req)->uid;
        /* Callers give room for any uid's digits; a buffer too small denies, never cuts. */
        int fits = rs_fmt(uidbuf, uidlen, "%u", (unsigned)uid) >= 0;
        sc->user = uidbuf;
        if (!fits || (m->opt.user_map && !(sc->user = rfs_usermap_owner(m->opt.user_map, uid)))) {
            /* Never an owner's name (not a valid id), and refused before any store call. */
            sc->user = "!unmapped";
            sc->denied = 1;
        }
    }
    sc->only_thread = m->opt.only_thread;
    sc->read_only = m->opt.read_only;
    sc->service_name = m->opt.service_name;
    sc->mount_ns = m->mount_ns;
    sc->sizes = m->sizes;
}

/* ---- stats that take long ----
 * A file's stat may render its view to learn the size (a huge thread's first ls -la): one
 * under way past slow_ns is logged by the hub's tick and listed in status.json, so a user
 * waiting on ls knows why; its end is logged too. */

struct rfs_sizing {
    rfs_sizing *next;
    const rfs_node *node;
    int64_t start_ns;
    int told; /* its "sizing" line was logged */
};

/* The stats under way past slow_ns, as ,"sizing":[{"path":...,"seconds":...}]. */
static int sizing_status(rfs_mount *m, rs_buf *out)
{
    int64_t now = rs_clock_ns(CLOCK_MONOTONIC);
    rs_buf path = RS_BUF_INIT;
    int rc = rs_buf_addlit(out, ",\"sizing\":["), first = 1;
    pthread_mutex_lock(&m->sizing_lock);
    for (rfs_sizing *z = m->sizing; z && !rc; z = z->next) {
        if (now - z->start_ns < m->slow_ns)
            continue;
        rs_buf_reset(&path);
        if (!(rc = rfs_node_path(z->node, &path)) &&
            !(rc = rs_buf_addstr(out, first ? "{\"path\":" : ",{\"path\":")) &&
            !(rc = rs_buf_add_json_string(out, path.buf, path.len)))
            rc = rs_buf_addf(out, ",\"seconds\":%.1f}", (double)(now - z->start_ns) / 1e9);
        first = 0;
    }
    pthread_mutex_unlock(&m->sizing_lock);
    rs_buf_release(&path);
    return rc ? rc : rs_buf_addch(out, ']');
}

void rfs_sizing_tell(rfs_mount *m)
{
    int64_t now = rs_clock_ns(CLOCK_MONOTONIC);
    rs_buf path = RS_BUF_INIT;
    pthread_mutex_lock(&m->sizing_lock);
    for (rfs_sizing *z = m->sizing; z; z = z->next) {
        if (z->told || now - z->start_ns < m->slow_ns)
            continue;
        z->told = 1;
        rs_buf_reset(&path);
        if (rfs_node_path(z->node, &path) == 0)
            rfs_log("sizing %s: rendering it for its size (%.1f s so far; kept once known)",
                    path.buf, (double)(now - z->start_ns) / 1e9);
    }
    pthread_mutex_unlock(&m->sizing_lock);
    rs_buf_release(&path);
}

static void sizing_begin(rfs_mount *m, rfs_sizing *z)
{
    z->start_ns = rs_clock_ns(CLOCK_MONOTONIC);
    pthread_mutex_lock(&m->sizing_lock);
    z->next = m->sizing;
    m->sizing = z;
    pthread_mutex_unlock(&m->sizing_lock);
}

static void sizing_end(rfs_mount *m, rfs_sizing *z, int rc, const rfs_stat *st)
{
    pthread_mutex_lock(&m->sizing_lock);
    rfs_sizing **p = &m->sizing;
    while (*p != z)
        p = &(*p)->next;
    *p = z->next;
    pthread_mutex_unlock(&m->sizing_lock);
    int64_t took = rs_clock_ns(CLOCK_MONOTONIC) - z->start_ns;
    rs_buf path = RS_BUF_INIT;
    /* A lookup's or a listing's stat that leaves a view unsized sized nothing: no line says
     * it was sized (0 bytes, the size the kernel is told to drop), even when the hub's tick
     * told of the stat while it looked. The tick cannot know a stat will not render: its
     * line is closed by one saying so. A size found kept is logged (kept). */
    int sized = rc || !st->unsized;
    if (z->told && !sized && rfs_node_path(z->node, &path) == 0)
        rfs_log("sizing %s: nothing rendered after all (%.1f s: its size is left to its next "
                "stat)",
                path.buf, (double)took / 1e9);
    else if (sized && (z->told || took >= m->slow_ns) && rfs_node_path(z->node, &path) == 0)
        rfs_log("sized %s in %.1f s: %lld bytes%s%s%s", path.buf, (double)took / 1e9,
                rc ? 0LL : (long long)st->size, rc ? " (failed)" : "",
                !rc && !st->rendered ? " (kept)" : "",
                !rc && st->thread_pass ? " (with the thread's history.jsonl, transcript.md, "
                                         "stats.json and report.html, in one pass over its rows)"
                                       : "");
    rs_buf_release(&path);
}

static int status_extra(void *ctx, rs_buf *out)
{
    rfs_mount *m = ctx;
    const rfs_options *o = &m->opt;
    const char *user = o->user, *thread = o->only_thread, *why = atomic_load(&m->transport_why);
    /* The mountpoint is a host path: shown only where every caller sees every thread. */
    int scoped = o->user || o->user_from_uid || o->only_thread;
    int64_t kept, due;
    rfs_keeper_counts(m, &kept, &due);
    int rc;
    if ((rc = rs_buf_addf(out,
                          ",\"mount\":{\"read_only\":%s,\"allow_delete\":%s,"
                          "\"allow_unknown_events\":%s,\"sync\":\"%s\",\"follow_timeout\":%g,"
                          "\"max_pending\":%zu,\"live_ms\":%lld,\"stamp_time\":%s,"
                          "\"user_from_uid\":%s,\"pid\":%ld,\"user\":",
                          o->read_only ? "true" : "false", o->allow_delete ? "true" : "false",
                          o->allow_unknown ? "true" : "false", o->sync_full ? "full" : "normal",
                          o->follow_timeout, o->max_pending, (long long)(RFS_LIVE_NS / 1000000),
                          o->stamp_time ? "true" : "false", o->user_from_uid ? "true" : "false",
                          (long)getpid())) ||
        (rc = user ? rs_buf_add_json_string(out, user, strlen(user))
                   : rs_buf_addlit(out, "null")) ||
        (rc = rs_buf_addlit(out, ",\"thread\":")) ||
        (rc = thread ? rs_buf_add_json_string(out, thread, strlen(thread))
                     : rs_buf_addlit(out, "null")) ||
        (rc = rs_buf_addf(out, ",\"transport\":\"%s\",\"transport_reason\":",
                          atomic_load(&m->transport) == RFS_TRANSPORT_IO_URING ? "io_uring"
                                                                               : "dev_fuse")) ||
        (rc = why ? rs_buf_add_json_string(out, why, strlen(why)) : rs_buf_addlit(out, "null")) ||
        (!scoped && ((rc = rs_buf_addlit(out, ",\"mountpoint\":")) ||
                     (rc = rs_buf_add_json_string(out, o->mountpoint, strlen(o->mountpoint))))) ||
        (rc = rs_buf_addf(out, ",\"steps_kept\":%lld,\"steps_due\":%lld", (long long)kept,
                          (long long)due)) ||
        (rc = rs_buf_addch(out, '}')))
        return rc;
    return sizing_status(m, out);
}

/* Each owner sees only its own refusals (they quote paths and data). */
static int64_t rejects_size(void *ctx, const char *user)
{
    return rfs_rejects_size(((rfs_mount *)ctx)->rejects, user);
}

static int rejects_read(void *ctx, const char *user, int64_t off, size_t size, rs_buf *out)
{
    return rfs_rejects_read(((rfs_mount *)ctx)->rejects, user, off, size, out);
}

void rfs_scope_init(rfs_mount *m, fuse_req_t req, rfs_scope *sc, char *uidbuf, size_t len)
{
    rfs_scope_for(m, req, sc, uidbuf, len);
    sc->status_extra = status_extra;
    sc->rejects_size = rejects_size;
    sc->rejects_read = rejects_read;
    /* A read-only mount keeps no size in the store: nothing to hand the hub. */
    sc->keep_size = m->opt.read_only ? NULL : rfs_hub_keep_size;
    sc->ctx = m;
}

void rfs_log_refusal(fuse_req_t req, const rfs_node *n, const char *leaf, int code,
                     const char *reason, const char *data, size_t len)
{
    rfs_mount *m = rfs_mount_of(req);
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    rs_buf path = RS_BUF_INIT;
    rfs_node_path(n, &path);
    if (leaf) {
        rs_buf_addch(&path, '/');
        rs_buf_addstr(&path, leaf);
    }
    rfs_scope sc;
    char uid[24];
    rfs_scope_for(m, req, &sc, uid, sizeof uid);
    rfs_rejects_add(m->rejects, sc.user, (long)ctx->pid, (long)ctx->uid, path.buf, code,
                    reason && *reason ? reason : strerror(-code), data, len);
    rs_buf_release(&path);
}

void rfs_refuse(fuse_req_t req, const rfs_node *n, const char *leaf, int code, const char *reason,
                const char *data, size_t len)
{
    rfs_log_refusal(req, n, leaf, code, reason, data, len);
    fuse_reply_err(req, -code);
}

/* Honest modes, enforced by the kernel (default_permissions): w bits only where the mount
 * lets a writer change something, less -o umask=. */
static mode_t mode_of(const rfs_mount *m, rfs_kind kind)
{
    /* Where each uid is its own owner, threads/ takes everyone's new threads; the daemon
     * keeps them apart. */
    if (m->opt.user_from_uid && kind == RFS_THREADS && !m->opt.read_only)
        return S_IFDIR | 0777;
    return (mode_t)rfs_node_mode(kind, !m->opt.read_only, m->opt.allow_delete,
                                 (unsigned)m->opt.umask);
}

void rfs_fill_attr(fuse_req_t req, const rfs_node *n, const rfs_stat *st, uint64_t ino,
                   struct stat *a)
{
    rfs_mount *m = rfs_mount_of(req);
    memset(a, 0, sizeof *a);
    a->st_ino = ino;
    a->st_mode = mode_of(m, n->kind);
    a->st_nlink = rfs_node_is_dir(n->kind) ? 2 : 1;
    a->st_uid = m->opt.user_from_uid ? fuse_req_ctx(req)->uid : (uid_t)m->opt.uid;
    a->st_gid = m->opt.user_from_uid ? fuse_req_ctx(req)->gid : (gid_t)m->opt.gid;
    a->st_size = st->size;
    /* A run's log takes one transaction per write(): its preferred write is the largest
     * request the mount takes (op_init's max_write), so cat, cp and dd write that much. A
     * search's answer is read as much at a time (a request each, not eight): each read is
     * a reply of the bytes its stat kept, or a search resumed. */
    a->st_blksize = n->kind == RFS_R_EVENTS || rfs_search_is_result(n->kind) ? RFS_MAX_WRITE : 4096;
    a->st_blocks = (st->size + 511) / 512;
    a->st_mtim.tv_sec = st->mtime_ns / 1000000000LL;
    a->st_mtim.tv_nsec = st->mtime_ns % 1000000000LL;
    a->st_ctim.tv_sec = st->ctime_ns / 1000000000LL;
    a->st_ctim.tv_nsec = st->ctime_ns % 1000000000LL;
    a->st_atim = a->st_mtim;
}

/* Files whose bytes follow from their thread's rows and seals: every change of the thread
 * drops the attributes the kernel keeps of them (the hub: this mount's commit before its
 * write() returns, another process's at the next tick). The logs are left out: a stat
 * right after another process's append says the log's new size (they are O(1) to stat).
 * A singleton never changes once stored (one being created is not kept: op_getattr). The
 * documents the glance passes make with stats.json (report.html, timeline/ and otel/) are
 * such files too: left out, each cost tar four GETATTRs (lstat, the open's permission
 * check, fstat before and after its read). */
int rfs_row_view(rfs_kind kind)
{
    switch (kind) {
    case RFS_T_MESSAGES:
    case RFS_T_HISTORY:
    case RFS_T_COUNT:
    case RFS_T_SEQ:
    case RFS_T_TRANSCRIPT:
    case RFS_T_STATS:
    case RFS_T_REPORT:
    case RFS_R_REPORT:
    case RFS_R_TL_WIN:
    case RFS_R_OTEL_PART:
    case RFS_R_MESSAGES:
    case RFS_R_TYPE:
    case RFS_R_TASK:
    case RFS_R_ONCE:
    case RFS_R_LASTAI:
    case RFS_R_WORKSPACE:
    case RFS_R_RECEIPT:
    case RFS_R_STATS:
    case RFS_R_TIMELINE:
    case RFS_R_OTEL: return 1;
    default: return 0;
    }
}

/* The kernel's name and attribute caches are shared by every caller of a mount: where each
 * uid is its own owner, nothing may be cached, or one uid would see what another looked
 * up. A view not yet sized says size 0, which the kernel must not keep. */
double rfs_attr_timeout(rfs_mount *m, const rfs_node *n, uint64_t ino, const rfs_stat *st)
{
    if (m->opt.user_from_uid)
        return 0.0;
    if (rfs_node_is_dir(n->kind))
        return DIR_TIMEOUT;
    /* The views the kernel keeps renderings of are stat'ed by the store every time: a
     * stat checks the kernel's copy against the rows (op_getattr), so it says the view as
     * it is right after any writer's change. */
    if (!rfs_row_view(n->kind) || rfs_view_kernel_keeps(n->kind) || st->unsized ||
        rfs_attrs_add(m->attrs, ino, n->thread_id, rs_clock_ns(CLOCK_MONOTONIC)) != 0)
        return 0.0;
    return RFS_FILE_TIMEOUT;
}

uint64_t rfs_cache_begin(rfs_mount *m)
{
    return atomic_load(&m->attr_gen);
}

int rfs_cache_check(rfs_mount *m, uint64_t gen)
{
    pthread_rwlock_rdlock(&m->attr_lock);
    return atomic_load(&m->attr_gen) == gen;
}

void rfs_cache_end(rfs_mount *m)
{
    pthread_rwlock_unlock(&m->attr_lock);
}

int rfs_req_stat(fuse_req_t req, const rfs_node *n, rfs_stat *st, rs_err *err)
{
    return rfs_req_stat_ex(req, n, 0, NULL, NULL, st, err);
}

/* Long enough for the stats of an ls -la after its listing, short enough that a later
 * stat of one view alone renders that view alone. */
#define PASS_HINT_NS 1000000000LL

static uint64_t thread_hash(const char *thread_id)
{
    return rs_hash(RS_HASH_INIT, thread_id, strlen(thread_id)) | 1;
}

void rfs_thread_pass_hint(rfs_mount *m, const char *thread_id)
{
    atomic_store(&m->pass_thread, thread_hash(thread_id));
    atomic_store(&m->pass_until_ns, rs_clock_ns(CLOCK_MONOTONIC) + PASS_HINT_NS);
}

static int thread_pass_wanted(rfs_mount *m, const rfs_node *n)
{
    if ((n->kind != RFS_T_HISTORY && n->kind != RFS_T_TRANSCRIPT && n->kind != RFS_T_STATS &&
         n->kind != RFS_T_REPORT) ||
        atomic_load(&m->pass_thread) != thread_hash(n->thread_id))
        return 0;
    return rs_clock_ns(CLOCK_MONOTONIC) < atomic_load(&m->pass_until_ns);
}

int rfs_req_stat_ex(fuse_req_t req, const rfs_node *n, int flags, rfs_bytes_fn bytes, void *ctx,
                    rfs_stat *st, rs_err *err)
{
    rfs_mount *m = rfs_mount_of(req);
    rfs_scope sc;
    char uid[24];
    rfs_scope_init(m, req, &sc, uid, sizeof uid);
    sc.thread_pass = thread_pass_wanted(m, n);
    rs_store *s;
    /* Files below a thread, and the root's searches: the stats that may render a view. */
    rfs_sizing z = {.node = n};
    int track = (n->kind > RFS_THREAD && !rfs_node_is_dir(n->kind)) || n->kind == RFS_SEARCH;
    if (track)
        sizing_begin(m, &z);
    int rc = rfs_pool_get(m, &s, err);
    if (!rc) {
        rs_store_set_wait(s, !(flags & RFS_STAT_NO_WAIT));
        rc = rfs_view_stat_ex(s, &sc, n, flags & RFS_STAT_LAZY, bytes, ctx, st, err);
        rs_store_set_wait(s, 1);
        rfs_pool_put(m, s);
    }
    if (track)
        sizing_end(m, &z, rc, st);
    /* A lost database fails whatever was under way, a lookup before a write too: the reason
     * goes where refused writes' reasons go. */
    if (rc == -EIO)
        rfs_log_refusal(req, n, NULL, rc, err ? err->msg : NULL, NULL, 0);
    return rc;
}

/* Names whose existence changes under the kernel's feet are looked up every time. */
double rfs_entry_timeout(const rfs_mount *m, rfs_kind kind)
{
    if (m->opt.user_from_uid)
        return 0.0;
    switch (kind) {
    case RFS_T_SINCE:
    case RFS_R_SINCE:
    case RFS_T_MSGSEQ:
    case RFS_T_AIRUN:
    case RFS_R_ONCE:
    case RFS_R_SEAL:
    case RFS_R_NOTE:
    case RFS_R_PROOF:
    case RFS_R_DIFF:
    case RFS_R_LASTAI: return 0.0;
    default: return DIR_TIMEOUT;
    }
}

int rfs_entry_param(fuse_req_t req, const rfs_node *n, const rfs_stat *st, int may_wait,
                    struct fuse_entry_param *e)
{
    rfs_mount *m = rfs_mount_of(req);
    memset(e, 0, sizeof *e);
    uint64_t ino;
    int rc = rfs_itable_ref(m->inodes, n, &ino);
    if (rc)
        return rc;
    e->ino = ino;
    e->attr_timeout = rfs_attr_timeout(m, n, ino, st);
    /* Names under since/, message-seqs/ and ai-runs/ answer from live data each time. */
    e->entry_timeout = rfs_entry_timeout(m, n->kind);
    rfs_fill_attr(req, n, st, ino, &e->attr);
    if (rfs_node_is_log(n->kind) && st->shape == RFS_SHAPE_LOG) {
        int64_t known = -1;
        rfs_itable_known_size(m->inodes, ino, &known);
        /* As op_getattr: the kernel takes the new size from this reply, so what it holds of
         * the old bytes goes first (all of them when a row was rewritten, not appended). A
         * listing, which may not wait for the hub, says the size the kernel's bytes are of
         * for no time at all: the stat that follows waits. */
        if (known >= 0 && known != st->size && rfs_itable_cached(m->inodes, ino) && !may_wait) {
            rfs_hub_sync(m, ino, 0);
            e->attr.st_size = known;
            e->attr_timeout = 0.0;
            return 0;
        }
        if (known >= 0 && known != st->size && rfs_itable_cached(m->inodes, ino))
            rfs_hub_sync(m, ino, 1);
        rfs_itable_set_size(m->inodes, ino, st->size);
    }
    /* Size 0 drops whatever the kernel kept of the view (it is of another version). */
    if (st->unsized)
        rfs_itable_set_size(m->inodes, ino, -1);
    return 0;
}

int rfs_reply_entry(fuse_req_t req, const rfs_node *n, const rfs_stat *st, uint64_t gen)
{
    rfs_mount *m = rfs_mount_of(req);
    struct fuse_entry_param e;
    int rc = rfs_entry_param(req, n, st, 1, &e);
    if (rc)
        return fuse_reply_err(req, -rc);
    if (!rfs_cache_check(m, gen))
        e.attr_timeout = e.entry_timeout = 0.0;
    rc = fuse_reply_entry(req, &e);
    rfs_cache_end(m);
    return rc;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
    rfs_mount *m = userdata;
    /* A directory costs a walk two requests instead of four (no OPENDIR, RELEASEDIR), and
     * a listing read again costs none (the kernel keeps it until the hub drops it). */
    if ((conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) && rfs_listings_shared(m)) {
        conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
        atomic_store(&m->dirs_opened_by_kernel, 1);
    }
    /* Appends change only the tail: the hub invalidates precisely, so the kernel must not
     * drop a whole file's cache whenever its mtime moves, nor cache writes itself. */
    conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    if (conn->capable & FUSE_CAP_EXPLICIT_INVAL_DATA)
        conn->want |= FUSE_CAP_EXPLICIT_INVAL_DATA;
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
        conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    /* A listing carries its entries' attributes (rfs_op_readdirplus): ls -l and du send no
     * lookup per entry. The kernel asks for them when its caller stats what it lists (auto):
     * find's listings of large directories stay plain. */
    if (conn->capable & FUSE_CAP_READDIRPLUS)
        conn->want |= FUSE_CAP_READDIRPLUS;
    if (conn->capable & FUSE_CAP_READDIRPLUS_AUTO)
        conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
    conn->max_write = RFS_MAX_WRITE;
    conn->max_read = 0;
    /* The kernel keeps the smaller of this and its read_ahead_kb (raise_readahead). */
    conn->max_readahead = RFS_MAX_WRITE;
    rfs_mount_transport(m, conn);
}

/* Why rfs_node_child found name malformed (-EINVAL) under parent. */
const char *rfs_bad_name_reason(const rfs_node *parent)
{
    return parent->kind == RFS_R_ONCE_DIR ? "event types are 1-32 characters"
                                          : "ids are 1-64 of [A-Za-z0-9_-]";
}

/* The change feed of a store whose runs were never numbered (-o ro of a DeerFlow file) is
 * refused with ENODATA and why, but at its open: for stat and walks (ls -l, find, du) it
 * is an empty file the kernel does not keep. rc: the stat's outcome. */
static int feed_unnumbered(const rfs_node *n, int rc, rfs_stat *st)
{
    if (rc != -ENODATA ||
        (n->kind != RFS_CHANGES && n->kind != RFS_CHANGES_SINCE && n->kind != RFS_CHANGES_FOLLOW))
        return rc;
    memset(st, 0, sizeof *st);
    st->shape = n->kind == RFS_CHANGES_FOLLOW ? RFS_SHAPE_FOLLOW : RFS_SHAPE_DOC;
    st->mtime_ns = st->ctime_ns = rs_clock_ns(CLOCK_REALTIME);
    st->unsized = 1;
    return 0;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    rfs_node pn, cn;
    if (rfs_req_node(req, parent, &pn))
        return;
    int rc = rfs_node_child(&pn, name, &cn);
    /* The kernel looks a name up before mkdir or create, so a bad id is refused here and
     * must be logged here for the writer to learn why. */
    if (rc == -EINVAL)
        return rfs_refuse(req, &pn, name, rc, rfs_bad_name_reason(&pn), NULL, 0);
    if (rc)
        return (void)fuse_reply_err(req, -rc);
    rfs_stat st;
    rs_err err = {0};
    /* A view the kernel keeps is sized at its getattr (every stat sends one: files have no
     * attribute timeout), where its rendering can go to the kernel's cache; a lookup has no
     * inode yet to give it to. A search is counted by a stat's getattr alone, on every
     * mount: an open streams its answer (op_getattr). */
    int lazy = !rfs_mount_of(req)->opt.user_from_uid || rfs_search_is_result(cn.kind);
    uint64_t gen = rfs_cache_begin(rfs_mount_of(req));
    if ((rc = feed_unnumbered(&cn, rfs_req_stat_ex(req, &cn, lazy, NULL, NULL, &st, &err), &st))) {
        /* A name that is a bad query (search/<query>) says why in rejects.jsonl. */
        if (rc == -EINVAL && err.msg[0])
            return rfs_refuse(req, &cn, NULL, rc, err.msg, NULL, 0);
        return (void)fuse_reply_err(req, -rc);
    }
    rfs_reply_entry(req, &cn, &st, gen);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    rfs_itable_forget(rfs_mount_of(req)->inodes, ino, nlookup);
    fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    for (size_t i = 0; i < count; i++)
        rfs_itable_forget(rfs_mount_of(req)->inodes, forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
}

int rfs_thread_live(rfs_mount *m, const rfs_node *n, int64_t mtime_ns)
{
    rfs_node t = {.kind = RFS_THREAD};
    memcpy(t.thread_id, n->thread_id, sizeof t.thread_id);
    return rfs_itable_holds(m->inodes, rfs_itable_ino_of(m->inodes, &t)) > 0 ||
           rs_clock_ns(CLOCK_REALTIME) - mtime_ns < RFS_LIVE_NS;
}

/* ---- a view's rendering into the kernel's page cache ----
 * The rendering a stat makes for a view's size is the file's bytes: they go to the kernel
 * as they are made (fuse_lowlevel_notify_store, a MiB at a time, whole pages), so that the
 * read after the stat is served from the cache instead of rendering the view again. Only
 * from getattr: the inode exists, and no kernel lock is held for it (a stat or a read's
 * size check sends it). Memory: the MiB being made. A view longer than PUSH_STAT_MAX is
 * only sized: a stat does not fill the page cache with what may never be read (a 1M-event
 * thread's history.jsonl is 400 MB, and copying it there was a fifth of its sizing), and
 * the part already given is dropped. */

#define PUSH_CHUNK (1024 * 1024)
#define PUSH_STAT_MAX (64 * 1024 * 1024)
#define PAGE 4096

typedef struct pusher {
    rfs_mount *m;
    uint64_t ino;
    int64_t off; /* file offset of buf's first byte */
    rs_buf buf;
    int failed;
} pusher;

static int push_out(pusher *p, size_t len)
{
    struct fuse_bufvec bv = FUSE_BUFVEC_INIT(len);
    bv.buf[0].mem = p->buf.buf;
    if (fuse_lowlevel_notify_store(p->m->se, p->ino, (off_t)p->off, &bv, 0) != 0) {
        p->failed = 1;
        return -1;
    }
    rs_buf_remove_front(&p->buf, len);
    p->off += (int64_t)len;
    return 0;
}

static int push_bytes(void *ctx, const char *data, size_t len)
{
    pusher *p = ctx;
    if (p->failed || p->off + (int64_t)(p->buf.len + len) > PUSH_STAT_MAX ||
        rs_buf_add(&p->buf, data, len)) {
        p->failed = 1;
        return -1;
    }
    return p->buf.len < PUSH_CHUNK ? 0 : push_out(p, p->buf.len / PAGE * PAGE);
}

/* Size a view the kernel keeps. st: its lazy stat. A quiet thread's view is rendered into
 * the kernel's cache (recorded as the version the cache holds); a live one's only sized, as
 * its bytes are read without the cache. */
static int view_size(fuse_req_t req, uint64_t ino, const rfs_node *n, rfs_stat *st, rs_err *err)
{
    rfs_mount *m = rfs_mount_of(req);
    if (rfs_thread_live(m, n, st->mtime_ns))
        return rfs_req_stat(req, n, st, err);
    pusher p = {.m = m, .ino = ino, .buf = RS_BUF_INIT};
    int64_t version = st->version;
    int rc = rfs_req_stat_ex(req, n, 0, push_bytes, &p, st, err);
    if (!rc && !p.failed && p.buf.len)
        push_out(&p, p.buf.len);
    rs_buf_release(&p.buf);
    if (!rc && !p.failed && p.off == 0 && st->size > 0)
        return 0; /* another stat sized it meanwhile: what it gave the cache stands */
    rfs_stat now;
    rs_err ignored = {0};
    /* What the cache got is that version's bytes only if all of them went and the thread
     * did not change meanwhile; else it is dropped before the reply. */
    if (!rc && !p.failed && p.off == st->size && st->version == version &&
        rfs_req_stat_ex(req, n, 1, NULL, NULL, &now, &ignored) == 0 && now.version == version) {
        rfs_itable_set_size(m->inodes, ino, version);
        return 0;
    }
    rfs_hub_sync(m, ino, 1);
    return rc;
}

/* Whether the thread that sent req is blocked in open(2) or openat(2) without O_DIRECT, as
 * /proc/TID/syscall tells (0 where it cannot tell: a thread of another pid namespace, one
 * ptrace's rules hide, an io_uring worker, openat2's flags behind a pointer). With
 * default_permissions the kernel checks a file's mode before it opens it, and first asks for
 * the attributes it does not keep (a search's: no attribute timeout), by a GETATTR no field
 * tells from a stat's. That one's size is not shown: the file is read direct, past the
 * kernel's i_size, and a stat (fstat after the open too) sends a GETATTR of its own. Only
 * an O_DIRECT file's asynchronous reads (io_uring, libaio) stop at the kernel's i_size. */
static int req_in_open(fuse_req_t req)
{
    long pid = (long)fuse_req_ctx(req)->pid;
    char path[48], line[128];
    /* A pid's digits fit; a cut number would only fail to parse. */
    if (pid <= 0 || rs_fmt(path, sizeof path, "/proc/%ld/syscall", pid) < 0)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    /* The line is the syscall's number and its arguments in hex ("running" when in none):
     * its first bytes, up to the flags, are all that is read. */
    ssize_t got = read(fd, line, sizeof line - 1);
    close(fd);
    if (got <= 0)
        return 0;
    line[got] = '\0';
    char *at = line, *end;
    long nr = strtol(at, &end, 10);
    int flags_arg = nr == SYS_openat ? 2 : 0; /* which argument holds the open's flags */
#ifdef SYS_open
    if (nr == SYS_open)
        flags_arg = 1;
#endif
    if (end == at || *end != ' ' || !flags_arg)
        return 0;
    unsigned long long arg = 0;
    for (int i = 0; i <= flags_arg; i++) {
        at = end;
        arg = strtoull(at, &end, 16);
        if (end == at || (*end != ' ' && *end != '\n' && *end != '\0'))
            return 0;
    }
    return !(arg & O_DIRECT);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    rfs_mount *m = rfs_mount_of(req);
    rfs_node n;
    if (rfs_req_node(req, ino, &n))
        return;
    rfs_stat st;
    rs_err err = {0};
    int keeps = rfs_view_kernel_keeps(n.kind) && !m->opt.user_from_uid;
    /* An open of a search not yet counted streams its answer (head -c 64K reads its first
     * lines, not the whole answer's count): the permission check's GETATTR before it counts
     * nothing. */
    int opening = !fi && rfs_search_is_result(n.kind) && req_in_open(req);
    uint64_t gen = rfs_cache_begin(m);
    int rc = rfs_req_stat_ex(req, &n,
                             (keeps || opening ? RFS_STAT_LAZY : 0) |
                                 (rfs_handle_writes(fi) ? RFS_STAT_NO_WAIT : 0),
                             NULL, NULL, &st, &err);
    if (!rc && keeps) {
        int64_t held = -1;
        rfs_itable_known_size(m->inodes, ino, &held);
        /* The kernel's copy is of another version (another process changed the thread
         * and the hub has not seen it yet): dropped before anything else. */
        if (held >= 0 && held != st.version)
            rfs_hub_sync(m, ino, 1);
        if (st.unsized)
            rc = view_size(req, ino, &n, &st, &err);
    }
    /* A singleton or seal being created exists for its writer (cat > once/T fstats its
     * output) before its body is stored. */
    if (rc == -ENOENT && rfs_itable_holds(m->inodes, ino) > 0) {
        memset(&st, 0, sizeof st);
        st.shape = RFS_SHAPE_DOC;
        st.mtime_ns = st.ctime_ns = rs_clock_ns(CLOCK_REALTIME);
        st.unsized = 1; /* what the kernel must not keep */
        rc = 0;
    }
    if ((rc = feed_unnumbered(&n, rc, &st)))
        return (void)fuse_reply_err(req, -rc);
    if (rfs_node_is_log(n.kind) && st.shape == RFS_SHAPE_LOG) {
        int64_t known = -1;
        rfs_itable_known_size(m->inodes, ino, &known);
        /* Another process appended: the kernel gets the new tail before it learns the new
         * size, so no reader sees a stale page past the old end. */
        if (known >= 0 && known != st.size && rfs_itable_cached(m->inodes, ino))
            rfs_hub_sync(m, ino, 1);
        rfs_itable_set_size(m->inodes, ino, st.size);
    }
    struct stat a;
    rfs_fill_attr(req, &n, &st, ino, &a);
    double timeout = rfs_cache_check(m, gen) ? rfs_attr_timeout(m, &n, ino, &st) : 0.0;
    fuse_reply_attr(req, &a, timeout);
    rfs_cache_end(m);
}

int rfs_writable(fuse_req_t req, const rfs_node *n, const char *leaf)
{
    if (!rfs_mount_of(req)->opt.read_only)
        return 0;
    rfs_refuse(req, n, leaf, -EROFS, "the mount is read-only", NULL, 0);
    return -EROFS;
}

int rfs_req_node(fuse_req_t req, fuse_ino_t ino, rfs_node *n)
{
    if (rfs_itable_get(rfs_mount_of(req)->inodes, ino, n) == 0)
        return 0;
    fuse_reply_err(req, ENOENT);
    return -ENOENT;
}

int rfs_req_writable(fuse_req_t req, fuse_ino_t ino, const char *leaf, rfs_node *n)
{
    int rc = rfs_req_node(req, ino, n);
    return rc ? rc : rfs_writable(req, n, leaf);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    struct statvfs st;
    memset(&st, 0, sizeof st);
    st.f_bsize = 4096;
    st.f_frsize = 4096;
    st.f_namemax = RFS_NAME_MAX;
    fuse_reply_statfs(req, &st);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
    (void)name;
    (void)value;
    (void)size;
    (void)flags;
    rfs_node n;
    if (rfs_req_writable(req, ino, NULL, &n))
        return;
    rfs_refuse(req, &n, NULL, -EPERM, "runfs keeps no extended attributes", NULL, 0);
}

/* No extended attributes: ENOSYS makes the kernel answer every later getxattr itself
 * (EOPNOTSUPP), so ls -l's three per entry (ACLs, security labels) cost no round trip. */
static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    (void)ino;
    (void)name;
    (void)size;
    fuse_reply_err(req, ENOSYS);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    (void)ino;
    if (size == 0)
        fuse_reply_xattr(req, 0);
    else
        fuse_reply_buf(req, NULL, 0);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    op_setxattr(req, ino, name, NULL, 0, 0);
}

const struct fuse_lowlevel_ops rfs_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = rfs_op_setattr,
    .mknod = rfs_op_mknod,
    .mkdir = rfs_op_mkdir,
    .unlink = rfs_op_unlink,
    .rmdir = rfs_op_rmdir,
    .symlink = rfs_op_symlink,
    .rename = rfs_op_rename,
    .link = rfs_op_link,
    .open = rfs_op_open,
    .read = rfs_op_read,
    .write = rfs_op_write,
    .flush = rfs_op_flush,
    .release = rfs_op_release,
    .opendir = rfs_op_opendir,
    .readdir = rfs_op_readdir,
    .readdirplus = rfs_op_readdirplus,
    .releasedir = rfs_op_releasedir,
    .statfs = op_statfs,
    .setxattr = op_setxattr,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .removexattr = op_removexattr,
    .create = rfs_op_create,
    .poll = rfs_op_poll,
};
