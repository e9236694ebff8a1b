/* ops.c — the FUSE low-level operations. Each decodes its arguments, calls the view or the
 * store, and replies exactly once. Refused writes are logged with their reason. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "linebuf.h"
#include "mount.h"

#define DIR_TIMEOUT 1.0

typedef enum hkind {
    H_READ,      /* any readable file */
    H_APPEND,    /* runs/R/events.jsonl opened for writing */
    H_ONCE,      /* once/<type> being written */
    H_SEAL,      /* seal.json being created */
    H_FOLLOW,    /* follow.jsonl */
} hkind;

typedef struct rfs_handle {
    hkind kind;
    rfs_node node;
    char user[32];
    int has_user;
    long pid;
    long uid;
    pthread_mutex_t lock;
    rfs_reader *reader;
    rs_buf pending;      /* a partial line (append) or the body (once, seal) */
    int skipping;        /* after EMSGSIZE: drop bytes up to the next newline */
    rs_buf refused;      /* append: the bytes of the last refused write */
    int refused_code;    /* and its errno */
    int want_receipt;    /* opened O_RDWR: reads return what this handle stored */
    rs_buf receipt;
    int exclusive;
    int reserved;
    int done;            /* once/seal: the body was committed or refused */
    int created;         /* made by op_create: counted in its inode's creators */
    rfs_follow follow;
} rfs_handle;

typedef struct dir_entry {
    char *name;
    uint64_t ino;
    int is_dir;
} dir_entry;

typedef struct dir_handle {
    dir_entry *entries;
    size_t count;
    size_t cap;
    rfs_node node;
} dir_handle;

static rfs_mount *mount_of(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void rfs_scope_for(rfs_mount *m, fuse_req_t req, rfs_scope *sc, char *uidbuf, size_t uidlen)
{
    memset(sc, 0, sizeof *sc);
    sc->user = m->opt.user;
    if (m->opt.user_from_uid && req) {
        snprintf(uidbuf, uidlen, "%u", (unsigned)fuse_req_ctx(req)->uid);
        sc->user = uidbuf;
    }
    sc->only_thread = m->opt.only_thread;
    sc->read_only = m->opt.read_only;
    sc->mount_ns = m->mount_ns;
}

static int status_extra(void *ctx, rs_buf *out)
{
    rfs_mount *m = ctx;
    int rc = rs_buf_addf(out, ",\"mount\":{\"read_only\":%s,\"allow_delete\":%s,"
                              "\"allow_unknown_events\":%s,\"sync\":\"%s\",\"follow_timeout\":%g,"
                              "\"user_from_uid\":%s,\"user\":",
                         m->opt.read_only ? "true" : "false", m->opt.allow_delete ? "true" : "false",
                         m->opt.allow_unknown ? "true" : "false", m->opt.sync_full ? "full" : "normal",
                         m->opt.follow_timeout, m->opt.user_from_uid ? "true" : "false");
    if (!rc)
        rc = m->opt.user ? rs_buf_add_json_string(out, m->opt.user, strlen(m->opt.user))
                         : rs_buf_addstr(out, "null");
    if (!rc)
        rc = rs_buf_addstr(out, ",\"thread\":");
    if (!rc)
        rc = m->opt.only_thread
                 ? rs_buf_add_json_string(out, m->opt.only_thread, strlen(m->opt.only_thread))
                 : rs_buf_addstr(out, "null");
    if (!rc)
        rc = rs_buf_addstr(out, ",\"mountpoint\":");
    if (!rc)
        rc = rs_buf_add_json_string(out, m->opt.mountpoint, strlen(m->opt.mountpoint));
    return rc ? rc : rs_buf_addch(out, '}');
}

/* Where each uid is its own owner, a caller sees only its own refusals (they quote paths
 * and data). */
static int rejects_doc(void *ctx, const char *user, rs_buf *out)
{
    rfs_mount *m = ctx;
    long only_uid = m->opt.user_from_uid && user ? strtol(user, NULL, 10) : -1;
    return rfs_rejects_render(m->rejects, only_uid, out);
}

/* A request's scope with the mount-only documents wired in. */
static void scope_init(rfs_mount *m, fuse_req_t req, rfs_scope *sc, char *uidbuf, size_t len)
{
    rfs_scope_for(m, req, sc, uidbuf, len);
    sc->status_extra = status_extra;
    sc->rejects = rejects_doc;
    sc->ctx = m;
}

/* Log a refusal with its reason and reply with its errno. */
static void log_refusal(fuse_req_t req, const rfs_node *n, const char *leaf, int code,
                        const char *reason, const char *data, size_t len)
{
    rfs_mount *m = mount_of(req);
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    rs_buf path = RS_BUF_INIT;
    rfs_node_path(n, &path);
    if (leaf) {
        rs_buf_addch(&path, '/');
        rs_buf_addstr(&path, leaf);
    }
    rfs_rejects_add(m->rejects, (long)ctx->pid, (long)ctx->uid, path.buf, code,
                    reason && *reason ? reason : strerror(-code), data, len);
    rs_buf_release(&path);
}

static void refuse(fuse_req_t req, const rfs_node *n, const char *leaf, int code,
                   const char *reason, const char *data, size_t len)
{
    log_refusal(req, n, leaf, code, reason, data, len);
    fuse_reply_err(req, -code);
}

static mode_t mode_of(const rfs_mount *m, rfs_kind kind)
{
    if (rfs_node_is_dir(kind))
        return S_IFDIR | (m->opt.read_only ? 0555 : 0755);
    if (kind == RFS_R_EVENTS || kind == RFS_R_ONCE || kind == RFS_R_SEAL)
        return S_IFREG | (m->opt.read_only ? 0444 : 0644);
    return S_IFREG | 0444;
}

static void fill_attr(fuse_req_t req, const rfs_node *n, const rfs_stat *st, uint64_t ino,
                      struct stat *a)
{
    rfs_mount *m = mount_of(req);
    memset(a, 0, sizeof *a);
    a->st_ino = ino;
    a->st_mode = mode_of(m, n->kind);
    a->st_nlink = rfs_node_is_dir(n->kind) ? 2 : 1;
    a->st_uid = m->opt.user_from_uid ? fuse_req_ctx(req)->uid : getuid();
    a->st_gid = m->opt.user_from_uid ? fuse_req_ctx(req)->gid : getgid();
    a->st_size = st->size;
    a->st_blksize = 4096;
    a->st_blocks = (st->size + 511) / 512;
    a->st_mtim.tv_sec = st->mtime_ns / 1000000000LL;
    a->st_mtim.tv_nsec = st->mtime_ns % 1000000000LL;
    a->st_ctim.tv_sec = st->ctime_ns / 1000000000LL;
    a->st_ctim.tv_nsec = st->ctime_ns % 1000000000LL;
    a->st_atim = a->st_mtim;
}

/* The kernel's name and attribute caches are shared by every caller of a mount: where each
 * uid is its own owner, nothing may be cached, or one uid would see what another looked
 * up. */
static double attr_timeout(const rfs_mount *m, rfs_kind kind)
{
    return rfs_node_is_dir(kind) && !m->opt.user_from_uid ? DIR_TIMEOUT : 0.0;
}

/* Stat a node with a pooled store. */
static int node_stat(fuse_req_t req, const rfs_node *n, rfs_stat *st, rs_err *err)
{
    rfs_mount *m = mount_of(req);
    rfs_scope sc;
    char uid[24];
    scope_init(m, req, &sc, uid, sizeof uid);
    rs_store *s;
    int rc = rfs_pool_get(m, &s, err);
    if (rc)
        return rc;
    rc = rfs_view_stat(s, &sc, n, st, err);
    rfs_pool_put(m, s);
    return rc;
}

/* Names whose existence changes under the kernel's feet are looked up every time. */
static double entry_timeout(const rfs_mount *m, rfs_kind kind)
{
    if (m->opt.user_from_uid)
        return 0.0;
    switch (kind) {
    case RFS_T_SINCE: case RFS_R_SINCE: case RFS_T_MSGSEQ: case RFS_T_AIRUN:
    case RFS_R_ONCE: case RFS_R_SEAL: case RFS_R_LASTAI:
        return 0.0;
    default:
        return DIR_TIMEOUT;
    }
}

static int reply_entry_for(fuse_req_t req, const rfs_node *n, const rfs_stat *st)
{
    rfs_mount *m = mount_of(req);
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    uint64_t ino;
    int rc = rfs_itable_ref(m->inodes, n, &ino);
    if (rc)
        return fuse_reply_err(req, -rc);
    e.ino = ino;
    e.attr_timeout = attr_timeout(m, n->kind);
    /* Names under since/, message-seqs/ and ai-runs/ answer from live data each time. */
    e.entry_timeout = entry_timeout(m, n->kind);
    fill_attr(req, n, st, ino, &e.attr);
    if (rfs_node_is_log(n->kind) && st->shape == RFS_SHAPE_LOG)
        rfs_itable_set_size(m->inodes, ino, st->size);
    return fuse_reply_entry(req, &e);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    /* Appends change only the tail: the hub invalidates precisely, so the kernel must not
     * drop a whole file's cache whenever its mtime moves, nor cache writes itself. */
    conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    if (conn->capable & FUSE_CAP_EXPLICIT_INVAL_DATA)
        conn->want |= FUSE_CAP_EXPLICIT_INVAL_DATA;
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
        conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    conn->max_write = 1024 * 1024;
    conn->max_read = 0;
}

/* Why rfs_node_child found name malformed (-EINVAL) under parent. */
static const char *bad_name_reason(const rfs_node *parent)
{
    return parent->kind == RFS_R_ONCE_DIR ? "event types are 1-32 characters"
                                          : "ids are 1-64 of [A-Za-z0-9_-]";
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    rfs_mount *m = mount_of(req);
    rfs_node pn, cn;
    if (rfs_itable_get(m->inodes, parent, &pn))
        return (void)fuse_reply_err(req, ENOENT);
    int rc = rfs_node_child(&pn, name, &cn);
    /* The kernel looks a name up before mkdir or create, so a bad id is refused here and
     * must be logged here for the writer to learn why. */
    if (rc == -EINVAL)
        return refuse(req, &pn, name, rc, bad_name_reason(&pn), NULL, 0);
    if (rc)
        return (void)fuse_reply_err(req, -rc);
    rfs_stat st;
    rs_err err = {0};
    if ((rc = node_stat(req, &cn, &st, &err)))
        return (void)fuse_reply_err(req, -rc);
    reply_entry_for(req, &cn, &st);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    rfs_itable_forget(mount_of(req)->inodes, ino, nlookup);
    fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    for (size_t i = 0; i < count; i++)
        rfs_itable_forget(mount_of(req)->inodes, forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    rfs_mount *m = mount_of(req);
    rfs_node n;
    if (rfs_itable_get(m->inodes, ino, &n))
        return (void)fuse_reply_err(req, ENOENT);
    rfs_stat st;
    rs_err err = {0};
    int rc = node_stat(req, &n, &st, &err);
    /* A singleton or seal being created exists for its writer (cat > once/T fstats its
     * output) before its body is stored. */
    if (rc == -ENOENT && rfs_itable_holds(m->inodes, ino) > 0) {
        memset(&st, 0, sizeof st);
        st.shape = RFS_SHAPE_DOC;
        st.mtime_ns = st.ctime_ns = now_ns();
        rc = 0;
    }
    if (rc)
        return (void)fuse_reply_err(req, -rc);
    if (rfs_node_is_log(n.kind) && st.shape == RFS_SHAPE_LOG) {
        int64_t known = -1;
        rfs_itable_known_size(m->inodes, ino, &known);
        /* Another process appended: the kernel gets the new tail before it learns the new
         * size, so no reader sees a stale page past the old end. */
        if (known >= 0 && known != st.size && rfs_itable_cached(m->inodes, ino))
            rfs_hub_sync(m, ino);
        rfs_itable_set_size(m->inodes, ino, st.size);
    }
    struct stat a;
    fill_attr(req, &n, &st, ino, &a);
    fuse_reply_attr(req, &a, attr_timeout(m, n.kind));
}

static int writable_mount(fuse_req_t req, const rfs_node *n, const char *leaf)
{
    if (!mount_of(req)->opt.read_only)
        return 1;
    refuse(req, n, leaf, -EROFS, "the mount is read-only", NULL, 0);
    return 0;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    rfs_mount *m = mount_of(req);
    rfs_node n;
    if (rfs_itable_get(m->inodes, ino, &n))
        return (void)fuse_reply_err(req, ENOENT);
    if (!writable_mount(req, &n, NULL))
        return;
    rfs_handle *h = fi ? (rfs_handle *)(uintptr_t)fi->fh : NULL;
    /* A truncate to 0 of a singleton being written is how `>` reaches us without atomic
     * O_TRUNC; it changes nothing stored. */
    if (to_set == FUSE_SET_ATTR_SIZE && attr->st_size == 0 && h &&
        (h->kind == H_ONCE || h->kind == H_SEAL)) {
        rfs_stat st = {.shape = RFS_SHAPE_DOC};
        struct stat a;
        fill_attr(req, &n, &st, ino, &a);
        return (void)fuse_reply_attr(req, &a, 0);
    }
    const char *why = (to_set & FUSE_SET_ATTR_SIZE)
                          ? "history is append-only: truncating is not allowed"
                          : "mode, owner and times of runfs files are fixed";
    refuse(req, &n, NULL, -EPERM, why, NULL, 0);
}

/* ---- directories ---- */

static int dir_add(dir_handle *d, const rfs_node *parent, const char *name, int is_dir)
{
    if (d->count == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 32;
        dir_entry *p = realloc(d->entries, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        d->entries = p;
        d->cap = cap;
    }
    dir_entry *e = &d->entries[d->count];
    if (!(e->name = strdup(name)))
        return -ENOMEM;
    rfs_node child;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || rfs_node_child(parent, name, &child))
        e->ino = strcmp(name, ".") == 0 ? rfs_itable_ino_of(parent) : 1;
    else
        e->ino = rfs_itable_ino_of(&child);
    e->is_dir = is_dir;
    d->count++;
    return 0;
}

static int dir_add_cb(void *ctx, const char *name, int is_dir)
{
    dir_handle *d = ctx;
    return dir_add(d, &d->node, name, is_dir);
}

static void dir_free(dir_handle *d)
{
    for (size_t i = 0; i < d->count; i++)
        free(d->entries[i].name);
    free(d->entries);
    free(d);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    rfs_mount *m = mount_of(req);
    rfs_node n;
    if (rfs_itable_get(m->inodes, ino, &n))
        return (void)fuse_reply_err(req, ENOENT);
    if (!rfs_node_is_dir(n.kind))
        return (void)fuse_reply_err(req, ENOTDIR);
    dir_handle *d = calloc(1, sizeof *d);
    if (!d)
        return (void)fuse_reply_err(req, ENOMEM);
    d->node = n;
    rfs_scope sc;
    char uid[24];
    scope_init(m, req, &sc, uid, sizeof uid);
    rs_err err = {0};
    rs_store *s;
    int rc = rfs_pool_get(m, &s, &err);
    if (rc) {
        dir_free(d);
        return (void)fuse_reply_err(req, -rc);
    }
    rfs_stat st;
    rc = rfs_view_stat(s, &sc, &n, &st, &err);
    if (!rc)
        rc = dir_add(d, &n, ".", 1);
    if (!rc)
        rc = dir_add(d, &n, "..", 1);
    for (const char *const *f = rfs_node_fixed_entries(n.kind); !rc && *f; f++) {
        rfs_node child;
        rfs_stat cst;
        if (rfs_node_child(&n, *f, &child))
            continue;
        /* Files that exist only sometimes are listed only when they do. */
        if ((child.kind == RFS_R_LASTAI || child.kind == RFS_R_SEAL) &&
            rfs_view_stat(s, &sc, &child, &cst, &err))
            continue;
        rc = dir_add(d, &n, *f, rfs_node_is_dir(child.kind));
    }
    if (!rc)
        rc = rfs_view_list(s, &sc, &n, dir_add_cb, d, &err);
    rfs_pool_put(m, s);
    if (rc) {
        dir_free(d);
        return (void)fuse_reply_err(req, -rc);
    }
    fi->fh = (uintptr_t)d;
    fi->cache_readdir = 0;
    fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    (void)ino;
    dir_handle *d = (dir_handle *)(uintptr_t)fi->fh;
    char *buf = malloc(size);
    if (!buf)
        return (void)fuse_reply_err(req, ENOMEM);
    size_t used = 0;
    for (size_t i = (size_t)off; i < d->count; i++) {
        struct stat st = {.st_ino = d->entries[i].ino,
                          .st_mode = d->entries[i].is_dir ? S_IFDIR : S_IFREG};
        size_t need = fuse_add_direntry(req, buf + used, size - used, d->entries[i].name, &st,
                                        (off_t)(i + 1));
        if (need > size - used)
            break;
        used += need;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    dir_free((dir_handle *)(uintptr_t)fi->fh);
    fuse_reply_err(req, 0);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    (void)mode;
    rfs_mount *m = mount_of(req);
    rfs_node pn, cn;
    if (rfs_itable_get(m->inodes, parent, &pn))
        return (void)fuse_reply_err(req, ENOENT);
    if (!writable_mount(req, &pn, name))
        return;
    int rc = rfs_node_child(&pn, name, &cn);
    if (pn.kind != RFS_THREADS && pn.kind != RFS_RUNS)
        return refuse(req, &pn, name, rc == -ENOENT || !rc ? -EPERM : rc,
                      "directories are made only under threads/ and threads/T/runs/", NULL, 0);
    if (rc)
        return refuse(req, &pn, name, rc, bad_name_reason(&pn), NULL, 0);
    if (m->opt.only_thread && strcmp(cn.thread_id, m->opt.only_thread) != 0)
        return refuse(req, &pn, name, -ENOENT, "this mount shows one thread only", NULL, 0);
    rfs_stat st;
    rs_err err = {0};
    if (node_stat(req, &cn, &st, &err) == 0)
        return (void)fuse_reply_err(req, EEXIST);
    rfs_scope sc;
    char uid[24];
    scope_init(m, req, &sc, uid, sizeof uid);
    rs_store *s;
    if ((rc = rfs_pool_get(m, &s, &err)))
        return refuse(req, &pn, name, rc, err.msg, NULL, 0);
    rs_target t = {.thread_id = cn.thread_id, .run_id = cn.run_id, .user = sc.user};
    rc = cn.kind == RFS_THREAD ? rs_store_create_thread(s, cn.thread_id, sc.user, &err)
                               : rs_store_create_run(s, &t, &err);
    if (!rc)
        rc = rfs_view_stat(s, &sc, &cn, &st, &err);
    rfs_pool_put(m, s);
    if (rc)
        return refuse(req, &pn, name, rc, err.msg, NULL, 0);
    reply_entry_for(req, &cn, &st);
}

/* rm -r removes the files of a directory before the directory: with --allow-delete the
 * files of a thread or run let it pass, and rmdir of the run or thread deletes it. */
static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    rfs_mount *m = mount_of(req);
    rfs_node pn;
    if (rfs_itable_get(m->inodes, parent, &pn))
        return (void)fuse_reply_err(req, ENOENT);
    if (!writable_mount(req, &pn, name))
        return;
    if (!m->opt.allow_delete || pn.kind < RFS_THREAD)
        return refuse(req, &pn, name, -EPERM,
                      "history is never unlinked (mount with --allow-delete and rm -r a run "
                      "or thread to delete it)", NULL, 0);
    fuse_reply_err(req, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    rfs_mount *m = mount_of(req);
    rfs_node pn, cn;
    if (rfs_itable_get(m->inodes, parent, &pn))
        return (void)fuse_reply_err(req, ENOENT);
    if (!writable_mount(req, &pn, name))
        return;
    int rc = rfs_node_child(&pn, name, &cn);
    if (rc)
        return (void)fuse_reply_err(req, -rc);
    if (!m->opt.allow_delete || cn.kind < RFS_THREAD)
        return refuse(req, &pn, name, -EPERM,
                      "deleting needs a mount with --allow-delete", NULL, 0);
    if (cn.kind != RFS_THREAD && cn.kind != RFS_RUN)
        return (void)fuse_reply_err(req, 0);
    rfs_stat st;
    rs_err err = {0};
    if ((rc = node_stat(req, &cn, &st, &err)))
        return (void)fuse_reply_err(req, -rc);
    rfs_scope sc;
    char uid[24];
    scope_init(m, req, &sc, uid, sizeof uid);
    rs_store *s;
    if ((rc = rfs_pool_get(m, &s, &err)))
        return refuse(req, &pn, name, rc, err.msg, NULL, 0);
    int64_t count = 0;
    rs_target t = {.thread_id = cn.thread_id, .run_id = cn.run_id, .user = sc.user};
    rc = cn.kind == RFS_RUN ? rs_store_delete_run(s, &t, &count, &err)
                            : rs_store_delete_thread(s, cn.thread_id, sc.user, &count, &err);
    rfs_pool_put(m, s);
    if (rc)
        return refuse(req, &pn, name, rc, err.msg, NULL, 0);
    rfs_log("deleted %s %s/%s: %lld events", cn.kind == RFS_RUN ? "run" : "thread",
            cn.thread_id, cn.run_id, (long long)count);
    rfs_hub_deleted(m, cn.thread_id);
    fuse_reply_err(req, 0);
}

static void op_refuse_link(fuse_req_t req, fuse_ino_t parent, const char *name, const char *why)
{
    rfs_mount *m = mount_of(req);
    rfs_node pn;
    if (rfs_itable_get(m->inodes, parent, &pn))
        return (void)fuse_reply_err(req, ENOENT);
    if (!writable_mount(req, &pn, name))
        return;
    refuse(req, &pn, name, -EPERM, why, NULL, 0);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    (void)link;
    op_refuse_link(req, parent, name, "runfs has no symbolic links");
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
    (void)ino;
    op_refuse_link(req, parent, name, "runfs has no hard links");
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    (void)mode;
    (void)rdev;
    op_refuse_link(req, parent, name, "runfs makes no device nodes, fifos or sockets");
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    (void)newparent;
    (void)newname;
    (void)flags;
    op_refuse_link(req, parent, name, "history is never renamed");
}

/* ---- files ---- */

static rfs_handle *handle_new(fuse_req_t req, hkind kind, const rfs_node *n)
{
    rfs_mount *m = mount_of(req);
    rfs_handle *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->kind = kind;
    h->node = *n;
    h->pending = (rs_buf)RS_BUF_INIT;
    h->receipt = (rs_buf)RS_BUF_INIT;
    h->refused = (rs_buf)RS_BUF_INIT;
    pthread_mutex_init(&h->lock, NULL);
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    h->pid = (long)ctx->pid;
    h->uid = (long)ctx->uid;
    rfs_scope sc;
    rfs_scope_for(m, req, &sc, h->user, sizeof h->user);
    if (sc.user) {
        if (sc.user != h->user)
            snprintf(h->user, sizeof h->user, "%s", sc.user);
        h->has_user = 1;
    }
    return h;
}

static const char *handle_user(rfs_mount *m, rfs_handle *h)
{
    if (m->opt.user)
        return m->opt.user;
    return h->has_user ? h->user : NULL;
}

static void handle_free(rfs_handle *h)
{
    rfs_reader_free(h->reader);
    rs_buf_release(&h->pending);
    rs_buf_release(&h->receipt);
    rs_buf_release(&h->refused);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

#define LIVE_NS 2000000000LL   /* a log appended to this recently is still growing */

static uint64_t thread_ino(const rfs_node *n)
{
    rfs_node t = {.kind = RFS_THREAD};
    memcpy(t.thread_id, n->thread_id, sizeof t.thread_id);
    return rfs_itable_ino_of(&t);
}

static int log_is_live(rfs_mount *m, const rfs_node *n, const rfs_reader *r)
{
    return rfs_itable_holds(m->inodes, thread_ino(n)) > 0 ||
           now_ns() - rfs_reader_mtime(r) < LIVE_NS;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    rfs_mount *m = mount_of(req);
    rfs_node n;
    if (rfs_itable_get(m->inodes, ino, &n))
        return (void)fuse_reply_err(req, ENOENT);
    if (rfs_node_is_dir(n.kind))
        return (void)fuse_reply_err(req, EISDIR);
    int acc = fi->flags & O_ACCMODE;
    int writing = acc != O_RDONLY || (fi->flags & O_TRUNC);
    rfs_handle *h = NULL;
    if (writing) {
        if (!writable_mount(req, &n, NULL))
            return;
        if (n.kind == RFS_R_EVENTS && (fi->flags & O_TRUNC))
            return refuse(req, &n, NULL, -EPERM,
                          "events.jsonl is append-only: append with >>, never overwrite", NULL, 0);
        if (n.kind == RFS_R_SEAL)
            return refuse(req, &n, NULL, -EEXIST, "the run is already sealed", NULL, 0);
        if (n.kind != RFS_R_EVENTS && n.kind != RFS_R_ONCE)
            return refuse(req, &n, NULL, -EPERM, "this file is a read-only view", NULL, 0);
        /* The inode may have been looked up by another owner: writing needs the run to be
         * this caller's. */
        rfs_node run = n;
        run.kind = RFS_RUN;
        run.name[0] = '\0';
        rfs_stat rst;
        rs_err rerr = {0};
        int vrc = node_stat(req, &run, &rst, &rerr);
        if (vrc)
            return (void)fuse_reply_err(req, -vrc);
        h = handle_new(req, n.kind == RFS_R_EVENTS ? H_APPEND : H_ONCE, &n);
        if (!h)
            return (void)fuse_reply_err(req, ENOMEM);
        h->want_receipt = acc == O_RDWR;
        if (h->kind == H_APPEND)
            rfs_itable_hold(m->inodes, thread_ino(&n), 1);
        fi->direct_io = 1;
        fi->fh = (uintptr_t)h;
        return (void)fuse_reply_open(req, fi);
    }
    rfs_scope sc;
    char uid[24];
    scope_init(m, req, &sc, uid, sizeof uid);
    rs_err err = {0};
    int is_follow = n.kind == RFS_T_FOLLOW || n.kind == RFS_R_FOLLOW;
    h = handle_new(req, is_follow ? H_FOLLOW : H_READ, &n);
    if (!h)
        return (void)fuse_reply_err(req, ENOMEM);
    rs_store *s;
    int rc = rfs_pool_get(m, &s, &err);
    if (!rc) {
        sc.user = handle_user(m, h);
        rc = rfs_reader_open(&h->reader, s, &sc, &n, &err);
        rfs_pool_put(m, s);
    }
    if (rc) {
        handle_free(h);
        return (void)fuse_reply_err(req, -rc);
    }
    if (is_follow) {
        h->follow.node = n;
        h->follow.user = handle_user(m, h);
        h->follow.reader = h->reader;
        h->follow.deadline_ns = now_ns() + (int64_t)(m->opt.follow_timeout * 1e9);
        fi->direct_io = 1;
        fi->nonseekable = 1;
        rfs_hub_follow_add(m, &h->follow);
    } else if (rfs_reader_shape(h->reader) == RFS_SHAPE_LOG && !m->opt.user_from_uid &&
               !log_is_live(m, &n, h->reader)) {
        /* Only a quiet, exact log is cached. A log shown as a stream (several owners) has
         * no size for the kernel to read up to; and while a log grows, the kernel's idea of
         * its size moves with each write() by the bytes written, not by the longer lines
         * stored, so a cached read could end mid-line: a live log is read from the daemon. */
        fi->keep_cache = 1;
        rfs_itable_mark_cached(m->inodes, ino);
    } else {
        fi->direct_io = 1;
    }
    fi->fh = (uintptr_t)h;
    fuse_reply_open(req, fi);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    (void)mode;
    rfs_mount *m = mount_of(req);
    rfs_node pn, cn;
    if (rfs_itable_get(m->inodes, parent, &pn))
        return (void)fuse_reply_err(req, ENOENT);
    int rc = rfs_node_child(&pn, name, &cn);
    if (rc == 0 && cn.kind != RFS_R_ONCE && cn.kind != RFS_R_SEAL)
        rc = -EPERM;
    if (rc == -ENOENT)
        rc = -EPERM;
    if (!writable_mount(req, &pn, name))
        return;
    if (rc)
        return refuse(req, &pn, name, rc,
                      rc == -EPERM ? "only once/<event_type> and seal.json can be created"
                                   : bad_name_reason(&pn), NULL, 0);
    rs_err err = {0};
    rfs_stat st;
    rfs_node run = cn;
    run.kind = RFS_RUN;
    run.name[0] = '\0';
    if ((rc = node_stat(req, &run, &st, &err)))
        return (void)fuse_reply_err(req, -rc);
    rfs_handle *h = handle_new(req, cn.kind == RFS_R_ONCE ? H_ONCE : H_SEAL, &cn);
    if (!h)
        return (void)fuse_reply_err(req, ENOMEM);
    h->exclusive = (fi->flags & O_EXCL) != 0 || cn.kind == RFS_R_SEAL;
    h->want_receipt = (fi->flags & O_ACCMODE) == O_RDWR;
    if (cn.kind == RFS_R_ONCE && h->exclusive) {
        /* Reserve the name now: a second exclusive create fails while we are writing. */
        rs_store *s;
        rs_target t = {.thread_id = cn.thread_id, .run_id = cn.run_id, .user = handle_user(m, h)};
        if (!(rc = rfs_pool_get(m, &s, &err))) {
            rc = rs_store_reserve_singleton(s, &t, cn.name, &err);
            rfs_pool_put(m, s);
        }
        if (rc) {
            handle_free(h);
            return refuse(req, &pn, name, rc, err.msg, NULL, 0);
        }
        h->reserved = 1;
    }
    if (cn.kind == RFS_R_SEAL) {
        /* A run with its terminal event is sealed at once; without one, a body must
         * follow ({"state":"partial","error":"why"}), committed at its newline. */
        rs_store *s;
        rs_target t = {.thread_id = cn.thread_id, .run_id = cn.run_id, .user = handle_user(m, h)};
        if (!(rc = rfs_pool_get(m, &s, &err))) {
            rc = rs_store_seal(s, &t, "", 0, h->want_receipt ? &h->receipt : NULL, &err);
            rfs_pool_put(m, s);
        }
        if (rc == 0) {
            h->done = 1;
            rfs_hub_committed(m, cn.thread_id, cn.run_id);
        } else if (rc != -EINVAL) {
            handle_free(h);
            return refuse(req, &pn, name, rc, err.msg, NULL, 0);
        }
    }
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    uint64_t ino;
    if ((rc = rfs_itable_ref(m->inodes, &cn, &ino))) {
        handle_free(h);
        return (void)fuse_reply_err(req, -rc);
    }
    e.ino = ino;
    e.entry_timeout = entry_timeout(m, cn.kind);
    rfs_stat fst = {.shape = RFS_SHAPE_DOC, .mtime_ns = now_ns(), .ctime_ns = now_ns()};
    fill_attr(req, &cn, &fst, ino, &e.attr);
    rfs_itable_hold(m->inodes, ino, 1);
    h->created = 1;
    fi->direct_io = 1;
    fi->fh = (uintptr_t)h;
    fuse_reply_create(req, &e, fi);
}

/* Refuse an append write and remember its bytes (see retried_refusal). */
/* Store complete lines as one transaction, keep them for the handle's receipt, and have
 * the kernel's cached tails dropped before the write() returns. */
static int commit_lines(rfs_mount *m, rfs_handle *h, const char *data, size_t len, rs_err *err)
{
    rs_store *s;
    int rc = rfs_pool_get(m, &s, err);
    if (rc)
        return rc;
    rs_target t = {.thread_id = h->node.thread_id, .run_id = h->node.run_id,
                   .user = handle_user(m, h)};
    rs_buf stored = RS_BUF_INIT;
    rs_placement at;
    rc = rs_store_append_at(s, &t, data, len, &stored, &at, err);
    rfs_pool_put(m, s);
    if (!rc) {
        if (h->want_receipt && rs_buf_add(&h->receipt, stored.buf, stored.len))
            rc = rs_err_set(err, -ENOMEM, "out of memory for the receipt");
        rfs_hub_appended(m, t.thread_id, t.run_id, &at, stored.len);
    }
    rs_buf_release(&stored);
    return rc;
}

static void refuse_append(fuse_req_t req, rfs_handle *h, int code, const char *why,
                          const char *buf, size_t size, const char *data, size_t len)
{
    rs_buf_reset(&h->refused);
    h->refused_code = rs_buf_add(&h->refused, buf, size) ? 0 : code;
    refuse(req, &h->node, NULL, code, why, data, len);
}

/* The kernel cuts a large write() into requests; when we refuse one after accepting
 * others, the writer only sees a short count, and a writer that retries sends the refused
 * bytes again. That retry starts with the same bytes (the kernel may cut it elsewhere) and
 * fails the same way, or the writer never learns of the refusal (EMSGSIZE). */
static int retried_refusal(rfs_handle *h, const char *buf, size_t size)
{
    if (!h->refused_code)
        return 0;
    size_t n = h->refused.len < size ? h->refused.len : size;
    if (n && memcmp(h->refused.buf, buf, n) == 0)
        return h->refused_code;
    rs_buf_reset(&h->refused);
    h->refused_code = 0;
    return 0;
}

/* Commit complete lines of one write(): all of them or none (the splitting is linebuf.c's). */
static void append_write(fuse_req_t req, rfs_handle *h, const char *buf, size_t size)
{
    rfs_mount *m = mount_of(req);
    size_t max = m->store_opt.max_event_bytes ? m->store_opt.max_event_bytes
                                              : RS_DEFAULT_MAX_EVENT;
    int rc = retried_refusal(h, buf, size);
    if (rc)
        return (void)fuse_reply_err(req, -rc);  /* logged when first refused */
    rfs_lines lines;
    rc = rfs_linebuf_feed(&h->pending, &h->skipping, max, buf, size, &lines);
    if (rc == -EMSGSIZE) {
        char why[128];
        snprintf(why, sizeof why, "event line over the %zu-byte limit", max);
        return refuse_append(req, h, -EMSGSIZE, why, buf, size, buf, size);
    }
    if (rc)
        return (void)fuse_reply_err(req, -rc);
    if (!lines.len)
        return (void)fuse_reply_write(req, size);
    rs_err err = {0};
    rc = commit_lines(m, h, lines.data, lines.len, &err);
    if (rc) {
        char why[600];
        if (err.line > 0)
            snprintf(why, sizeof why, "line %ld: %s", err.line, err.msg);
        else
            snprintf(why, sizeof why, "%s", err.msg);
        refuse_append(req, h, rc, why, buf, size, lines.data, lines.len);
        rfs_lines_done(&h->pending, &lines, 0);
        return;
    }
    if (rfs_lines_done(&h->pending, &lines, 1))
        return (void)fuse_reply_err(req, ENOMEM);
    fuse_reply_write(req, size);
}

/* once/<type> and seal.json: store the body. 0 or a negative errno (logged; the caller
 * replies). */
static int commit_body(fuse_req_t req, rfs_handle *h, rfs_mount *m)
{
    h->done = 1;
    rs_err err = {0};
    rs_store *s;
    int rc = rfs_pool_get(m, &s, &err);
    if (rc)
        return rc;
    rs_target t = {.thread_id = h->node.thread_id, .run_id = h->node.run_id,
                   .user = handle_user(m, h)};
    rs_buf *out = h->want_receipt ? &h->receipt : NULL;
    if (h->kind == H_SEAL)
        rc = rs_store_seal(s, &t, h->pending.buf, h->pending.len, out, &err);
    else if (h->pending.len == 0)
        rc = rs_err_set(&err, -EINVAL, "once/%s needs one event line", h->node.name);
    else
        rc = rs_store_put_singleton(s, &t, h->node.name, h->pending.buf, h->pending.len,
                                    h->exclusive, out, &err);
    if (h->reserved) {
        rs_store_release_singleton(s, &t, h->node.name);
        h->reserved = 0;
    }
    rfs_pool_put(m, s);
    if (rc < 0) {
        if (req)
            log_refusal(req, &h->node, NULL, rc, err.msg, h->pending.buf, h->pending.len);
        else
            rfs_rejects_add(m->rejects, h->pid, h->uid, "seal.json", rc, err.msg,
                            h->pending.buf, h->pending.len);
        return rc;
    }
    rfs_hub_committed(m, h->node.thread_id, h->node.run_id);
    return 0;
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    (void)ino;
    (void)off;  /* append is append: offsets from the kernel are ignored */
    rfs_handle *h = (rfs_handle *)(uintptr_t)fi->fh;
    pthread_mutex_lock(&h->lock);
    if (h->kind == H_APPEND) {
        append_write(req, h, buf, size);
    } else if (h->kind == H_ONCE || h->kind == H_SEAL) {
        if (h->done) {
            refuse(req, &h->node, NULL, -EEXIST,
                   h->kind == H_SEAL ? "the run is already sealed"
                                     : "this handle already wrote its one event", buf, size);
        } else if (h->pending.len + size > mount_of(req)->store_opt.max_event_bytes) {
            refuse(req, &h->node, NULL, -EMSGSIZE, "event over the size limit", buf, size);
        } else if (rs_buf_add(&h->pending, buf, size)) {
            fuse_reply_err(req, ENOMEM);
        } else if (memchr(buf, '\n', size)) {
            /* The singleton commits at its newline, so the writer learns the outcome. */
            int rc = commit_body(req, h, mount_of(req));
            if (rc < 0)
                fuse_reply_err(req, -rc);
            else
                fuse_reply_write(req, size);
        } else {
            fuse_reply_write(req, size);
        }
    } else {
        fuse_reply_err(req, EBADF);
    }
    pthread_mutex_unlock(&h->lock);
}

/* Flush is the last request before release may free the handle: everything happens under
 * the handle's lock, and the reply goes out only after it is dropped. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    rfs_handle *h = (rfs_handle *)(uintptr_t)fi->fh;
    rfs_mount *m = mount_of(req);
    int rc = 0;
    pthread_mutex_lock(&h->lock);
    if (h->kind == H_APPEND && h->pending.len) {
        /* A last line without its newline commits when it is a whole event. */
        rs_err err = {0};
        rc = commit_lines(m, h, h->pending.buf, h->pending.len, &err);
        if (rc)
            log_refusal(req, &h->node, NULL, rc,
                        *err.msg ? err.msg : "the last line is not a whole JSON object",
                        h->pending.buf, h->pending.len);
        rs_buf_reset(&h->pending);
    } else if ((h->kind == H_ONCE || h->kind == H_SEAL) && !h->done && h->pending.len) {
        /* Not at every flush: a shell's `>` closes its first descriptor (a flush) before
         * the command writes; only a body that arrived commits here. */
        rc = commit_body(req, h, m);
    }
    h->skipping = 0;
    pthread_mutex_unlock(&h->lock);
    fuse_reply_err(req, rc < 0 ? -rc : 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    rfs_mount *m = mount_of(req);
    rfs_handle *h = (rfs_handle *)(uintptr_t)fi->fh;
    if (h->kind == H_FOLLOW)
        rfs_hub_follow_remove(m, &h->follow);
    /* A seal.json create that got no body asks for a complete seal; its refusal can only
     * be logged now (release has no caller to tell). */
    if (h->kind == H_SEAL && !h->done)
        commit_body(NULL, h, m);
    if (h->reserved) {
        rs_store *s;
        if (rfs_pool_get(m, &s, NULL) == 0) {
            rs_target t = {.thread_id = h->node.thread_id, .run_id = h->node.run_id};
            rs_store_release_singleton(s, &t, h->node.name);
            rfs_pool_put(m, s);
        }
    }
    if (h->created)
        rfs_itable_hold(m->inodes, ino, -1);
    if (h->kind == H_APPEND)
        rfs_itable_hold(m->inodes, thread_ino(&h->node), -1);
    handle_free(h);
    fuse_reply_err(req, 0);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)ino;
    rfs_mount *m = mount_of(req);
    rfs_handle *h = (rfs_handle *)(uintptr_t)fi->fh;
    if (h->kind == H_FOLLOW)
        return rfs_hub_follow_read(m, &h->follow, req, size, off);
    pthread_mutex_lock(&h->lock);
    if (h->kind != H_READ) {
        /* The receipt: what this handle stored, one line each. */
        size_t len = off < (off_t)h->receipt.len ? h->receipt.len - (size_t)off : 0;
        fuse_reply_buf(req, len ? h->receipt.buf + off : NULL, len < size ? len : size);
        pthread_mutex_unlock(&h->lock);
        return;
    }
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    rs_store *s;
    int rc = rfs_pool_get(m, &s, &err);
    if (!rc) {
        rc = rfs_reader_read(h->reader, s, off, size, &out, &err);
        rfs_pool_put(m, s);
    }
    pthread_mutex_unlock(&h->lock);
    if (rc)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_buf(req, out.buf, out.len);
    rs_buf_release(&out);
}

static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                    struct fuse_pollhandle *ph)
{
    (void)ino;
    rfs_handle *h = (rfs_handle *)(uintptr_t)fi->fh;
    if (h->kind == H_FOLLOW)
        return rfs_hub_follow_poll(mount_of(req), &h->follow, req, ph);
    if (ph)
        fuse_pollhandle_destroy(ph);
    fuse_reply_poll(req, POLLIN | POLLOUT);
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
    rfs_mount *m = mount_of(req);
    rfs_node n;
    if (rfs_itable_get(m->inodes, ino, &n))
        return (void)fuse_reply_err(req, ENOENT);
    if (!writable_mount(req, &n, NULL))
        return;
    refuse(req, &n, NULL, -EPERM, "runfs keeps no extended attributes", NULL, 0);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    (void)ino;
    (void)name;
    (void)size;
    fuse_reply_err(req, ENODATA);
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
    .setattr = op_setattr,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .flush = op_flush,
    .release = op_release,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .statfs = op_statfs,
    .setxattr = op_setxattr,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .removexattr = op_removexattr,
    .create = op_create,
    .poll = op_poll,
};
