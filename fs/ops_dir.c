/* ops_dir.c — directory handlers: listing, mkdir of threads and runs, deleting (only with
 * --allow-delete), and the link, node and rename calls runfs refuses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ops_int.h"
#include "rs_util.h"
#include "sizes.h"

typedef struct dir_entry {
    size_t name; /* its name's offset in its listing's names */
    uint64_t ino;
    int is_dir;
    int timed; /* a thread's or run's times came with the listing */
    int64_t ctime_ns, mtime_ns;
} dir_entry;

typedef struct dir_handle {
    dir_entry *entries;
    size_t count;
    size_t cap;
    rs_buf names; /* every entry's name, each with its NUL: one allocation, not one a name */
    rfs_node node;
    rfs_itable *inodes;
    uint64_t gen; /* rfs_cache_begin before the listing: its times hold while it stays */
    uint64_t id;  /* its number in m->listings and in its entries' offsets; 0: not kept */
} dir_handle;

/* ---- directories ----
 * Where every caller sees the same listing, the kernel opens directories itself (opendir
 * answers ENOSYS once: no OPENDIR or RELEASEDIR is sent again) and keeps each listing in its
 * page cache until the hub drops it (notify.c: a change drops the listings that show it).
 * A listing is made by the request at offset 0 and kept in m->listings for the requests
 * that read on: an entry's offset is the listing's number and the index of the entry after
 * it. */

#define OFF_INDEX_BITS 32

int rfs_listings_shared(const rfs_mount *m)
{
    return !m->opt.user_from_uid; /* a uid map sets it too */
}

/* The name of d's i-th entry. */
static const char *dir_name(const dir_handle *d, size_t i)
{
    return d->names.buf + d->entries[i].name;
}

static int dir_add(dir_handle *d, const rfs_node *parent, const char *name, int is_dir)
{
    if (rs_array_grow(&d->entries, &d->cap, d->count + 1, sizeof *d->entries))
        return -ENOMEM;
    dir_entry *e = &d->entries[d->count];
    e->name = d->names.len;
    if (rs_buf_add(&d->names, name, strlen(name) + 1))
        return -ENOMEM;
    rfs_node child;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || rfs_node_child(parent, name, &child))
        e->ino = strcmp(name, ".") == 0 ? rfs_itable_ino_of(d->inodes, parent) : 1;
    else
        e->ino = rfs_itable_ino_of(d->inodes, &child);
    e->is_dir = is_dir;
    e->timed = 0;
    d->count++;
    return 0;
}

static int dir_add_cb(void *ctx, const char *name, int is_dir, const int64_t *times)
{
    dir_handle *d = ctx;
    int rc = dir_add(d, &d->node, name, is_dir);
    if (!rc && times) {
        dir_entry *e = &d->entries[d->count - 1];
        e->timed = 1;
        e->ctime_ns = times[0];
        e->mtime_ns = times[1];
    }
    return rc;
}

void rfs_dir_free(void *listing)
{
    dir_handle *d = listing;
    rs_buf_release(&d->names);
    free(d->entries);
    free(d);
}

/* The listing of directory n as this request's caller sees it. s and sc: a READDIRPLUS's
 * connection and scope, whose stats of the entries then read in the same transaction and
 * share the directory's facts; NULL: its own. */
static int dir_make(fuse_req_t req, const rfs_node *n, rs_store *s, const rfs_scope *sc,
                    dir_handle **out)
{
    rfs_mount *m = rfs_mount_of(req);
    dir_handle *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->names = (rs_buf)RS_BUF_INIT;
    d->node = *n;
    d->inodes = m->inodes;
    rfs_scope own;
    char uid[24];
    /* The directory's stat and those of the files listed only when they exist share the
     * thread's or run's facts: read once. */
    rfs_info_memo memo = {0};
    if (!sc) {
        rfs_scope_init(m, req, &own, uid, sizeof uid);
        own.memo = &memo;
        sc = &own;
    }
    d->gen = rfs_cache_begin(m);
    /* A lookup-only directory lists nothing whatever the store holds (a third of a walk's
     * directories): no connection, no query. Its thread was found at its lookup; a thread
     * gone since lists nothing too. */
    if (rfs_node_lookup_only(n->kind) && !sc->denied) {
        *out = d;
        return 0;
    }
    rs_err err = {0};
    rs_store *lent = NULL;
    int rc = s ? 0 : rfs_pool_get(m, &lent, &err);
    if (rc) {
        rfs_dir_free(d);
        return rc;
    }
    if (!s)
        s = lent;
    rfs_stat st;
    rc = rfs_view_stat(s, sc, n, &st, &err);
    if (!rc && !rfs_node_lookup_only(n->kind))
        rc = dir_add(d, n, ".", 1);
    if (!rc && !rfs_node_lookup_only(n->kind))
        rc = dir_add(d, n, "..", 1);
    if (!rc)
        rc = rfs_view_entries(s, sc, n, dir_add_cb, d, &err);
    rfs_pool_put(m, lent);
    if (rc) {
        rfs_dir_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

/* The listing a request at off reads, held, and the index of its first entry there. A
 * listing that went (read to its end, or dropped as one of too many) is made again: its
 * entries may then have moved, as in any directory changed between two reads of it. */
static int dir_at(fuse_req_t req, fuse_ino_t ino, off_t off, rs_store *s, const rfs_scope *sc,
                  dir_handle **out, size_t *first)
{
    rfs_mount *m = rfs_mount_of(req);
    uint64_t id = (uint64_t)off >> OFF_INDEX_BITS;
    *first = (size_t)((uint64_t)off & ((1ULL << OFF_INDEX_BITS) - 1));
    dir_handle *d = id ? rfs_listings_get(m->listings, ino, id) : NULL;
    if (d) {
        *out = d;
        return 0;
    }
    rfs_node n;
    if (rfs_itable_get(m->inodes, ino, &n))
        return -ENOENT;
    if (!rfs_node_is_dir(n.kind))
        return -ENOTDIR;
    int rc = dir_make(req, &n, s, sc, &d);
    if (rc)
        return rc;
    if (rfs_listings_put(m->listings, ino, d, d->count, &d->id))
        d->id = 0;
    *out = d;
    return 0;
}

/* A request is done with d; end: it read past d's last entry, so d goes. */
static void dir_done(rfs_mount *m, dir_handle *d, int end)
{
    if (d->id)
        rfs_listings_release(m->listings, d, end);
    else
        rfs_dir_free(d);
}

/* The offset of the entry after d's i-th. */
static off_t dir_off(const dir_handle *d, size_t i)
{
    return (off_t)((d->id << OFF_INDEX_BITS) | (uint64_t)(i + 1));
}

void rfs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    rfs_mount *m = rfs_mount_of(req);
    if (atomic_load(&m->dirs_opened_by_kernel))
        return (void)fuse_reply_err(req, ENOSYS);
    rfs_node n;
    if (rfs_req_node(req, ino, &n))
        return;
    if (!rfs_node_is_dir(n.kind))
        return (void)fuse_reply_err(req, ENOTDIR);
    /* Listings differ by caller (each uid its own owner, or a uid map): nothing of them is
     * kept, and one a caller may not see fails here. */
    rfs_stat st;
    rs_err err = {0};
    int rc = rfs_req_stat(req, &n, &st, &err);
    if (rc)
        return (void)fuse_reply_err(req, -rc);
    fi->fh = 0;
    fi->cache_readdir = fi->keep_cache = rfs_listings_shared(m);
    fuse_reply_open(req, fi);
}

/* The start of a request for a page of a listing: its listing, held (made with s and sc
 * as dir_make's), and the index of the page's first entry. 0, or -1 after replying with the
 * error. */
static int page_begin(fuse_req_t req, fuse_ino_t ino, off_t off, rs_store *s, const rfs_scope *sc,
                      dir_handle **d, size_t *first)
{
    int rc = dir_at(req, ino, off, s, sc, d, first);
    if (rc) {
        fuse_reply_err(req, -rc);
        return -1;
    }
    return 0;
}

/* A page's buffer of the bytes its entries take, not of the size the kernel offers (up to
 * a request's 1 MiB): a walk asks twice a directory, the second time for the end (none). */
static int page_buf(size_t used, char **buf)
{
    *buf = NULL;
    return used && !(*buf = malloc(used)) ? -ENOMEM : 0;
}

void rfs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)fi;
    rfs_mount *m = rfs_mount_of(req);
    dir_handle *d;
    size_t first, n = 0, total = 0;
    char *buf;
    if (page_begin(req, ino, off, NULL, NULL, &d, &first))
        return;
    for (size_t i = first; i < d->count; i++, n++) {
        size_t need = fuse_add_direntry(req, NULL, 0, dir_name(d, i), NULL, 0);
        if (need > size - total)
            break;
        total += need;
    }
    if (page_buf(total, &buf)) {
        dir_done(m, d, 0);
        return (void)fuse_reply_err(req, ENOMEM);
    }
    size_t used = 0;
    for (size_t i = first; i < first + n; i++) {
        struct stat st = {.st_ino = d->entries[i].ino,
                          .st_mode = d->entries[i].is_dir ? S_IFDIR : S_IFREG};
        used +=
            fuse_add_direntry(req, buf + used, total - used, dir_name(d, i), &st, dir_off(d, i));
    }
    dir_done(m, d, first >= d->count);
    fuse_reply_buf(req, buf, used);
    free(buf);
}

/* Whether a listing gives the attributes of an entry of kind: those a stat learns from the
 * store's facts without rendering (directories, logs, views and documents whose size is
 * kept, the counters a thread's facts give; one not yet sized is left to its lookup, so
 * find pays no rendering). */
static int plus_kind(rfs_kind k)
{
    if (rfs_node_is_dir(k))
        return 1;
    switch (k) {
    case RFS_T_EVENTS:
    case RFS_R_EVENTS:
    case RFS_T_MESSAGES:
    case RFS_R_MESSAGES:
    case RFS_T_HISTORY:
    case RFS_T_TRANSCRIPT:
    case RFS_R_TYPE:
    case RFS_R_TASK:
    case RFS_R_OTEL:
    case RFS_T_COUNT:
    case RFS_T_SEQ:
    case RFS_R_RECEIPT:
    case RFS_R_WORKSPACE:
    case RFS_R_STATS:
    case RFS_R_TIMELINE:
    case RFS_R_REPORT:
    case RFS_R_TL_WIN:
    case RFS_R_OTEL_PART:
    case RFS_T_FOLLOW:
    case RFS_R_FOLLOW: return 1;
    default: return 0;
    }
}

/* The stat of a listed thread or run from the listing's own times (a directory's stat is
 * its times), while nothing changed since the listing (fresh: its gen still holds). */
static int listed_stat(const dir_entry *de, const rfs_node *child, int fresh, rfs_stat *st)
{
    if (!fresh || !de->timed || (child->kind != RFS_THREAD && child->kind != RFS_RUN))
        return 0;
    memset(st, 0, sizeof *st);
    st->shape = RFS_SHAPE_DIR;
    st->ctime_ns = de->ctime_ns;
    st->mtime_ns = de->mtime_ns;
    return 1;
}

/* The entry of d's i-th name with its attributes in e (one kernel lookup counted), or 1
 * when it goes without them (e->ino 0: the kernel looks it up when it needs them). fresh:
 * the listing's times still hold. */
static int plus_entry(fuse_req_t req, dir_handle *d, size_t i, int fresh, rs_store *s,
                      const rfs_scope *sc, struct fuse_entry_param *e)
{
    const dir_entry *de = &d->entries[i];
    memset(e, 0, sizeof *e);
    e->attr.st_ino = de->ino;
    e->attr.st_mode = de->is_dir ? S_IFDIR : S_IFREG;
    rfs_node child;
    rfs_stat st;
    rs_err err = {0};
    /* . and .. are not lookups for the kernel: no reference may be counted for them. A
     * thread's stat indexes it (its first use) and listing threads/ must index none: a
     * thread's attributes come from the listing's times (an indexed thread's) or wait for a
     * lookup, as `ls -l` asks for them. */
    int unsized = 0;
    if (i < 2 || rfs_node_child(&d->node, dir_name(d, i), &child) || !plus_kind(child.kind) ||
        (!listed_stat(de, &child, fresh, &st) &&
         (child.kind == RFS_THREAD || !s ||
          rfs_view_stat_ex(s, sc, &child, 2, NULL, NULL, &st, &err) || (unsized = st.unsized))) ||
        rfs_entry_param(req, &child, &st, 0, e)) {
        /* The thread's views are not sized yet: stats may follow (ls -la, du). */
        if (unsized && (child.kind == RFS_T_HISTORY || child.kind == RFS_T_TRANSCRIPT))
            rfs_thread_pass_hint(rfs_mount_of(req), child.thread_id);
        memset(e, 0, sizeof *e);
        e->attr.st_ino = de->ino;
        e->attr.st_mode = de->is_dir ? S_IFDIR : S_IFREG;
        return 1;
    }
    return 0;
}

void rfs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        struct fuse_file_info *fi)
{
    (void)fi;
    rfs_mount *m = rfs_mount_of(req);
    dir_handle *d;
    size_t first;
    char *buf;
    rfs_scope sc;
    char uid[24];
    rfs_scope_init(m, req, &sc, uid, sizeof uid);
    /* The page's stats of one thread's or run's files read its facts once, and the first
     * page's listing with them, in one read of the store. */
    rfs_info_memo memo = {0};
    sc.memo = &memo;
    rs_store *s = NULL;
    rs_err err = {0};
    /* Without a connection the page goes without attributes (lookups follow). */
    if (rfs_pool_get(m, &s, &err))
        s = NULL;
    if (page_begin(req, ino, off, s, &sc, &d, &first)) {
        rfs_pool_put(m, s);
        return;
    }
    /* The page's entries first, then their bytes: a change during the stats makes the
     * whole page cache nothing. */
    size_t n = 0, total = 0;
    struct fuse_entry_param *e = NULL;
    for (size_t i = first; i < d->count; i++) {
        /* Sized before the stat: an entry that does not fit counts no lookup. */
        size_t need = fuse_add_direntry_plus(req, NULL, 0, dir_name(d, i), NULL, 0);
        if (need > size - total)
            break;
        total += need;
        n++;
    }
    uint64_t gen = rfs_cache_begin(m);
    if ((n && !(e = calloc(n, sizeof *e))) || page_buf(total, &buf)) {
        if (s)
            rfs_pool_put(m, s);
        dir_done(m, d, 0);
        free(e);
        return (void)fuse_reply_err(req, ENOMEM);
    }
    for (size_t i = 0; i < n; i++)
        plus_entry(req, d, first + i, gen == d->gen, s, &sc, &e[i]);
    if (s)
        rfs_pool_put(m, s);
    int keep = rfs_cache_check(m, gen);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (!keep)
            e[i].attr_timeout = e[i].entry_timeout = 0.0;
        used += fuse_add_direntry_plus(req, buf + used, total - used, dir_name(d, first + i), &e[i],
                                       dir_off(d, first + i));
    }
    fuse_reply_buf(req, buf, used);
    rfs_cache_end(m);
    dir_done(m, d, first >= d->count);
    free(e);
    free(buf);
}

void rfs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

void rfs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    (void)mode;
    rfs_mount *m = rfs_mount_of(req);
    rfs_node pn, cn;
    if (rfs_req_writable(req, parent, name, &pn))
        return;
    int rc = rfs_node_child(&pn, name, &cn);
    if (pn.kind != RFS_THREADS && pn.kind != RFS_RUNS)
        return rfs_refuse(req, &pn, name, rc == -ENOENT || !rc ? -EPERM : rc,
                          "directories are made only under threads/ and threads/T/runs/", NULL, 0);
    if (rc)
        return rfs_refuse(req, &pn, name, rc, rfs_bad_name_reason(&pn), NULL, 0);
    if (m->opt.only_thread && strcmp(cn.thread_id, m->opt.only_thread) != 0)
        return rfs_refuse(req, &pn, name, -ENOENT, "this mount shows one thread only", NULL, 0);
    rfs_stat st;
    rs_err err = {0};
    if ((rc = rfs_req_stat(req, &cn, &st, &err)) == 0)
        return (void)fuse_reply_err(req, EEXIST);
    if (rc == -EACCES)
        return rfs_refuse(req, &pn, name, rc, err.msg, NULL, 0);
    rfs_scope sc;
    char uid[24];
    rfs_scope_init(m, req, &sc, uid, sizeof uid);
    rs_store *s;
    if ((rc = rfs_pool_get(m, &s, &err)))
        return rfs_refuse(req, &pn, name, rc, err.msg, NULL, 0);
    rs_target t = {.thread_id = cn.thread_id, .run_id = cn.run_id, .user = sc.user};
    uint64_t gen = rfs_cache_begin(m);
    rc = cn.kind == RFS_THREAD ? rs_store_create_thread(s, cn.thread_id, sc.user, &err)
                               : rs_store_create_run(s, &t, &err);
    if (!rc)
        rc = rfs_view_stat(s, &sc, &cn, &st, &err);
    rfs_pool_put(m, s);
    if (rc)
        return rfs_refuse(req, &pn, name, rc, err.msg, NULL, 0);
    rfs_reply_entry(req, &cn, &st, gen);
    /* A new run counts in its thread's stats.json: what the kernel keeps of it goes. */
    rfs_hub_committed(m, cn.thread_id, cn.kind == RFS_RUN ? cn.run_id : NULL);
}

/* rm -r removes the files of a directory before the directory: with --allow-delete the
 * files of a thread or run let it pass, and rmdir of the run or thread deletes it. */
void rfs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    rfs_mount *m = rfs_mount_of(req);
    rfs_node pn;
    if (rfs_req_writable(req, parent, name, &pn))
        return;
    if (!m->opt.allow_delete || pn.kind < RFS_THREAD)
        return rfs_refuse(req, &pn, name, -EPERM,
                          "history is never unlinked (mount with --allow-delete and rm -r a run "
                          "or thread to delete it)",
                          NULL, 0);
    fuse_reply_err(req, 0);
}

void rfs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    rfs_mount *m = rfs_mount_of(req);
    rfs_node pn, cn;
    if (rfs_req_writable(req, parent, name, &pn))
        return;
    int rc = rfs_node_child(&pn, name, &cn);
    if (rc)
        return (void)fuse_reply_err(req, -rc);
    if (!m->opt.allow_delete || cn.kind < RFS_THREAD)
        return rfs_refuse(req, &pn, name, -EPERM, "deleting needs a mount with --allow-delete",
                          NULL, 0);
    if (cn.kind != RFS_THREAD && cn.kind != RFS_RUN)
        return (void)fuse_reply_err(req, 0);
    rfs_stat st;
    rs_err err = {0};
    if ((rc = rfs_req_stat(req, &cn, &st, &err)))
        return (void)fuse_reply_err(req, -rc);
    rfs_scope sc;
    char uid[24];
    rfs_scope_init(m, req, &sc, uid, sizeof uid);
    rs_store *s;
    if ((rc = rfs_pool_get(m, &s, &err)))
        return rfs_refuse(req, &pn, name, rc, err.msg, NULL, 0);
    int64_t count = 0;
    rs_target t = {.thread_id = cn.thread_id, .run_id = cn.run_id, .user = sc.user};
    rc = cn.kind == RFS_RUN ? rs_store_delete_run(s, &t, &count, &err)
                            : rs_store_delete_thread(s, cn.thread_id, sc.user, &count, &err);
    /* The search answers the mount keeps may hold the deleted rows: they go now. */
    int64_t rewrites;
    if (!rc && count > 0 && rs_store_rewrites(s, &rewrites) == 0)
        rfs_sizes_rewrites(m->sizes, rewrites);
    rfs_pool_put(m, s);
    if (rc)
        return rfs_refuse(req, &pn, name, rc, err.msg, NULL, 0);
    rfs_log("deleted %s %s/%s: %lld events", cn.kind == RFS_RUN ? "run" : "thread", cn.thread_id,
            cn.run_id, (long long)count);
    rfs_hub_rewritten(m, cn.thread_id);
    fuse_reply_err(req, 0);
}

static void op_refuse_link(fuse_req_t req, fuse_ino_t parent, const char *name, const char *why)
{
    rfs_node pn;
    if (rfs_req_writable(req, parent, name, &pn))
        return;
    rfs_refuse(req, &pn, name, -EPERM, why, NULL, 0);
}

void rfs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    (void)link;
    op_refuse_link(req, parent, name, "runfs has no symbolic links");
}

void rfs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
    (void)ino;
    op_refuse_link(req, parent, name, "runfs has no hard links");
}

void rfs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    (void)mode;
    (void)rdev;
    op_refuse_link(req, parent, name, "runfs makes no device nodes, fifos or sockets");
}

void rfs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                   const char *newname, unsigned int flags)
{
    (void)newparent;
    (void)newname;
    (void)flags;
    op_refuse_link(req, parent, name, "history is never renamed");
}
