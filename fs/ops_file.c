/* ops_file.c — file handlers: open and create, reads (documents, logs, streams, the
 * receipt of a write handle), appends (a write() is one transaction), singletons and seals,
 * flush and release. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "docs.h"
#include "linebuf.h"
#include "ops_int.h"
#include "pending.h"
#include "receipt.h"
#include "search_view.h"
#include "sizes.h"
#include "rs_util.h"

#define PUSH_BEHIND (1024 * 1024) /* more than the readahead requests in flight */
#define PUSH_OPEN_MAX (64 * 1024) /* a file read whole into the page cache at its open */

typedef enum hkind {
    H_READ,   /* any readable file */
    H_APPEND, /* runs/R/events.jsonl opened for writing */
    H_ONCE,   /* once/<type> being written */
    H_SEAL,   /* seal.json being created */
    H_REDACT, /* redactions.jsonl appended to (--allow-redact) */
    H_FOLLOW, /* follow.jsonl */
} hkind;

/* What only a writer (append, once/<type>, seal.json) keeps: readers have none of it. */
typedef struct rfs_writing {
    rs_buf pending;     /* a partial line (append) or the body (once, seal) */
    size_t charged;     /* bytes of pending counted in the mount's --max-pending */
    int skipping;       /* after EMSGSIZE: drop bytes up to the next newline */
    rs_buf refused;     /* append: the bytes of the last refused write */
    int refused_code;   /* and its errno */
    long lines_seen;    /* append: newlines written through this handle, to number lines as
                            the writer counts them in reasons */
    int want_receipt;   /* opened O_RDWR: reads return what this handle stored */
    rfs_receipt stored; /* append: the records, as seq ranges */
    rs_buf receipt;     /* once, seal: the document */
    size_t receipt_pos; /* reads of the receipt are a stream: where the last one ended */
    int exclusive;
    int reserved;
    int done;    /* once/seal: the body was committed or refused */
    rs_buf why;  /* a created once/seal: why closing it without a body stores nothing */
    int created; /* made by op_create: counted in its inode's creators */
} rfs_writing;

/* Every open file's handle: small, since a reader may hold 10,000 of them. */
struct rfs_handle {
    rfs_mount *m;
    rfs_handle *next; /* m->handles, under m->handles_lock */
    rfs_handle *prev;
    hkind kind;
    const rfs_node *node; /* shared by content with other handles of the node */
    rfs_doc *node_doc;    /* holds node */
    const char *user;     /* the owner (NULL: none): the mount's, the map's, or uid_digits */
    char uid_digits[24];  /* --user-from-uid without a map: the caller's uid */
    long pid;
    long uid;
    int64_t paged_version; /* a view read through the page cache: its version; else -1 */
    /* The fields above are fixed at open; those below (and *w) change only under lock
     * (release, which no other request of the handle overlaps, reads them without it). lock
     * serialises the handle's requests and is held for a whole one (the pool wait, the
     * commit and the hub wait), so that one handle's writes commit and return in order; it
     * comes first in CONTRIBUTING.md's lock order. */
    pthread_mutex_t lock;
    rfs_reader *reader;
    rfs_follow *follow; /* follow.jsonl */
    rfs_writing *w;     /* writers only */
};

void rfs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                    struct fuse_file_info *fi)
{
    rfs_node n;
    if (rfs_req_writable(req, ino, NULL, &n))
        return;
    rfs_handle *h = fi ? (rfs_handle *)(uintptr_t)fi->fh : NULL;
    /* A truncate to 0 of a singleton being written is how `>` reaches us without atomic
     * O_TRUNC; it changes nothing stored. */
    if (to_set == FUSE_SET_ATTR_SIZE && attr->st_size == 0 && h &&
        (h->kind == H_ONCE || h->kind == H_SEAL)) {
        rfs_stat st = {.shape = RFS_SHAPE_DOC};
        struct stat a;
        rfs_fill_attr(req, &n, &st, ino, &a);
        return (void)fuse_reply_attr(req, &a, 0);
    }
    const char *why = (to_set & FUSE_SET_ATTR_SIZE)
                          ? "history is append-only: truncating is not allowed"
                          : "mode, owner and times of runfs files are fixed";
    rfs_refuse(req, &n, NULL, -EPERM, why, NULL, 0);
}

/* ---- files ---- */

static int is_writer(hkind kind)
{
    return kind == H_APPEND || kind == H_ONCE || kind == H_SEAL || kind == H_REDACT;
}

static rfs_handle *handle_new(fuse_req_t req, hkind kind, const rfs_node *n)
{
    rfs_mount *m = rfs_mount_of(req);
    rfs_handle *h = calloc(1, sizeof *h);
    if (!h || (is_writer(kind) && !(h->w = calloc(1, sizeof *h->w)))) {
        free(h);
        return NULL;
    }
    h->m = m;
    h->kind = kind;
    h->paged_version = -1;
    if (h->w) {
        h->w->pending = (rs_buf)RS_BUF_INIT;
        h->w->receipt = (rs_buf)RS_BUF_INIT;
        h->w->stored = (rfs_receipt)RFS_RECEIPT_INIT;
        h->w->refused = (rs_buf)RS_BUF_INIT;
        h->w->why = (rs_buf)RS_BUF_INIT;
    }
    /* Handles of one file hold one copy of its node (ten thousand readers of a file, one). */
    rfs_node clean; /* no bytes past the strings' ends, nor in padding */
    memset(&clean, 0, sizeof clean);
    clean.kind = n->kind;
    clean.num = n->num;
    memcpy(clean.thread_id, n->thread_id, strnlen(n->thread_id, RS_ID_MAX));
    memcpy(clean.run_id, n->run_id, strnlen(n->run_id, RS_ID_MAX));
    memcpy(clean.name, n->name, strnlen(n->name, RFS_NAME_MAX));
    rs_buf nb = RS_BUF_INIT;
    size_t nlen;
    if (rs_buf_add(&nb, &clean, sizeof clean) || rfs_doc_intern(&nb, &h->node_doc)) {
        rs_buf_release(&nb);
        free(h->w);
        free(h);
        return NULL;
    }
    h->node = (const rfs_node *)(const void *)rfs_doc_bytes(h->node_doc, &nlen);
    pthread_mutex_init(&h->lock, NULL);
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    h->pid = (long)ctx->pid;
    h->uid = (long)ctx->uid;
    rfs_scope sc;
    /* The owner names the mount's, the map's (both live as long as the mount) or the
     * digits kept here: nothing to copy, nothing to cut. */
    rfs_scope_for(m, req, &sc, h->uid_digits, sizeof h->uid_digits);
    h->user = sc.user;
    pthread_mutex_lock(&m->handles_lock);
    h->next = m->handles;
    if (h->next)
        h->next->prev = h;
    m->handles = h;
    if (++m->handles_open > m->handles_peak)
        m->handles_peak = m->handles_open;
    pthread_mutex_unlock(&m->handles_lock);
    return h;
}

static const char *handle_user(rfs_mount *m, rfs_handle *h)
{
    return m->opt.user ? m->opt.user : h->user;
}

/* Partial lines are counted for the mount and its owner: a handle charges what its pending
 * buffer may reach before it grows (-ENOBUFS past the owner's share or --max-pending) and
 * settles when it shrinks. */
static int pending_charge(rfs_handle *h, size_t want, size_t *held, size_t *limit)
{
    if (want <= h->w->charged)
        return 0;
    int rc =
        rfs_pending_take(h->m->pending, handle_user(h->m, h), want - h->w->charged, held, limit);
    if (rc)
        return rc;
    h->w->charged = want;
    return 0;
}

static void pending_settle(rfs_handle *h)
{
    /* An emptied buffer gives its memory back, not only its count. */
    if (h->w->pending.len == 0 && h->w->pending.alloc > 4096)
        rs_buf_release(&h->w->pending);
    if (h->w->pending.len < h->w->charged) {
        rfs_pending_give(h->m->pending, handle_user(h->m, h), h->w->charged - h->w->pending.len);
        h->w->charged = h->w->pending.len;
    }
}

static void refuse_no_buffer(fuse_req_t req, rfs_handle *h, int code, size_t held, size_t limit,
                             const char *buf, size_t size)
{
    if (code != -ENOBUFS)
        return (void)rfs_refuse(req, h->node, NULL, code, "out of memory", buf, size);
    char why[200];
    (void)rs_fmt(why, sizeof why,
                 "unfinished lines of %s already hold %zu bytes, %s is %zu: end lines with a "
                 "newline",
                 limit < h->m->opt.max_pending ? "this owner" : "this mount", held,
                 limit < h->m->opt.max_pending ? "an owner's share of --max-pending"
                                               : "the --max-pending limit",
                 limit);
    rfs_refuse(req, h->node, NULL, -ENOBUFS, why, buf, size);
}

/* Open handles past which a close of most of them gives malloc's free pages back. */
#define HANDLES_TRIM 1024

static void handle_free(rfs_handle *h)
{
    rfs_mount *m = h->m;
    pthread_mutex_lock(&m->handles_lock);
    if (h->prev)
        h->prev->next = h->next;
    else
        m->handles = h->next;
    if (h->next)
        h->next->prev = h->prev;
    /* Thousands of handles closed leave their small blocks free between blocks still in
     * use, where malloc keeps them: once most of a burst is gone, the pages go back. */
    int trim = --m->handles_open < m->handles_peak / 4 && m->handles_peak >= HANDLES_TRIM;
    if (trim)
        m->handles_peak = m->handles_open;
    pthread_mutex_unlock(&m->handles_lock);
    rfs_follow_close(h->follow);
    rfs_reader_free(h->reader);
    if (h->w) {
        rs_buf_release(&h->w->pending);
        pending_settle(h);
        rs_buf_release(&h->w->receipt);
        rfs_receipt_release(&h->w->stored);
        rs_buf_release(&h->w->refused);
        rs_buf_release(&h->w->why);
        free(h->w);
    }
    rfs_doc_release(h->node_doc);
    pthread_mutex_destroy(&h->lock);
    free(h);
    if (trim)
        (void)malloc_trim(0);
}

void rfs_ops_free_handles(rfs_mount *m)
{
    while (m->handles)
        handle_free(m->handles);
}

static uint64_t thread_ino(rfs_mount *m, const rfs_node *n)
{
    rfs_node t = {.kind = RFS_THREAD};
    memcpy(t.thread_id, n->thread_id, sizeof t.thread_id);
    return rfs_itable_ino_of(m->inodes, &t);
}

/* A quiet thread's history.jsonl or transcript.md is read through the kernel's cache:
 * 1 when the cache holds this version's rendering (op_getattr's, or an earlier read's), 2
 * when it is to be filled by this read (its pages of another version dropped at open), 0
 * when the view is read direct. */
static int view_caching(rfs_mount *m, uint64_t ino, const rfs_node *n, const rfs_reader *r)
{
    int64_t kept = -1;
    if (!rfs_view_kernel_keeps(n->kind) || m->opt.user_from_uid ||
        rfs_itable_known_size(m->inodes, ino, &kept) != 0 ||
        rfs_thread_live(m, n, rfs_reader_mtime(r)))
        return 0;
    if (kept == rfs_reader_version(r))
        return 1;
    rfs_itable_set_size(m->inodes, ino, rfs_reader_version(r));
    return 2;
}

/* The one reply of a failed open or create: a refusal (err->msg set) is logged for the
 * writer to read in rejects.jsonl; anything else is a plain errno. */
static void reply_failure(fuse_req_t req, const rfs_node *n, const char *leaf, int rc,
                          const rs_err *err)
{
    if (err->msg[0])
        rfs_refuse(req, n, leaf, rc, err->msg, NULL, 0);
    else
        fuse_reply_err(req, -rc);
}

int rfs_handle_writes(const struct fuse_file_info *fi)
{
    const rfs_handle *h = fi ? (const rfs_handle *)(uintptr_t)fi->fh : NULL;
    return h && h->kind != H_READ && h->kind != H_FOLLOW;
}

/* Writing needs the run to be this caller's: the inode may have been looked up by another
 * owner. A write does not wait for a lost database, its check neither. */
static int run_is_callers(fuse_req_t req, const rfs_node *n)
{
    rfs_node run = *n;
    run.kind = RFS_RUN;
    run.name[0] = '\0';
    rfs_stat st;
    rs_err err = {0};
    return rfs_req_stat_ex(req, &run, RFS_STAT_NO_WAIT, NULL, NULL, &st, &err);
}

/* An open for writing: events.jsonl appends, once/<type> takes its one event. */
static int open_writer(fuse_req_t req, const rfs_node *n, struct fuse_file_info *fi,
                       rfs_handle **out, rs_err *err)
{
    rfs_mount *m = rfs_mount_of(req);
    if (n->kind == RFS_R_EVENTS && (fi->flags & O_TRUNC))
        return rs_err_set(err, -EPERM,
                          "events.jsonl is append-only: append with >>, never overwrite");
    if (n->kind == RFS_R_SEAL)
        return rs_err_set(err, -EEXIST, "the run is already sealed");
    if (n->kind == RFS_R_REDACTIONS && !m->opt.allow_redact)
        return rs_err_set(err, -EPERM,
                          "redacting needs a mount with --allow-redact (or runfs redact)");
    if (n->kind == RFS_R_REDACTIONS && (fi->flags & O_TRUNC))
        return rs_err_set(err, -EPERM,
                          "redactions.jsonl is append-only: append with >>, never overwrite");
    if (n->kind != RFS_R_EVENTS && n->kind != RFS_R_ONCE && n->kind != RFS_R_REDACTIONS)
        return rs_err_set(err, -EPERM, "this file is a read-only view");
    int rc = run_is_callers(req, n);
    if (rc)
        return rc;
    rfs_handle *h = handle_new(req,
                               n->kind == RFS_R_EVENTS       ? H_APPEND
                               : n->kind == RFS_R_REDACTIONS ? H_REDACT
                                                             : H_ONCE,
                               n);
    if (!h)
        return -ENOMEM;
    h->w->want_receipt = (fi->flags & O_ACCMODE) == O_RDWR;
    if (h->kind == H_APPEND)
        rfs_itable_hold(m->inodes, thread_ino(m, n), 1);
    fi->direct_io = 1;
    *out = h;
    return 0;
}

/* A quiet file of at most PUSH_OPEN_MAX bytes goes whole to the kernel's page cache before
 * its open returns (as getattr's sizing does for the views the kernel keeps), so the read
 * that follows (a walk's cat, grep or tar) sends no READ, nor the GETATTR that a READ's
 * change of atime makes the next stat send. 1 when the cache now holds the whole file. */
static int push_whole(rfs_mount *m, fuse_ino_t ino, rfs_handle *h, rs_store *s)
{
    if (rfs_reader_size(h->reader) > PUSH_OPEN_MAX)
        return 0;
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    int whole = rfs_reader_read(h->reader, s, 0, PUSH_OPEN_MAX + 1, &out, &err) == 0 &&
                out.len <= PUSH_OPEN_MAX;
    if (whole && out.len) {
        struct fuse_bufvec bv = FUSE_BUFVEC_INIT(out.len);
        bv.buf[0].mem = out.buf;
        whole = fuse_lowlevel_notify_store(m->se, ino, 0, &bv, 0) == 0;
    }
    rs_buf_release(&out);
    return whole;
}

/* How a reader's file is read: through the kernel's page cache or direct from the daemon,
 * and what the cache may keep across opens (fi), decided with the open's connection s. */
static void reader_caching(rfs_mount *m, fuse_ino_t ino, const rfs_node *n, rfs_handle *h,
                           rs_store *s, struct fuse_file_info *fi)
{
    rfs_shape shape = rfs_reader_shape(h->reader);
    int quiet = !m->opt.user_from_uid && !rfs_thread_live(m, n, rfs_reader_mtime(h->reader));
    int caching = view_caching(m, ino, n, h->reader);
    if (caching) {
        /* Pages the cache lacks are read in readahead's requests, several at once. */
        fi->keep_cache = caching == 1;
        rfs_reader_keep_behind(h->reader, PUSH_BEHIND);
    } else if (shape == RFS_SHAPE_LOG && quiet) {
        /* Only a quiet, exact log is cached. A log shown as a stream (several owners) has
         * no size for the kernel to read up to; and while a log grows, the kernel's idea of
         * its size moves with each write() by the bytes written, not by the longer lines
         * stored, so a cached read could end mid-line: a live log is read from the daemon. */
        fi->keep_cache = 1;
        rfs_itable_mark_cached(m->inodes, ino);
        push_whole(m, ino, h, s);
    } else if ((shape == RFS_SHAPE_DOC || shape == RFS_SHAPE_STREAM) && quiet &&
               rfs_row_view(n->kind)) {
        /* A quiet view of exact size is read through the page cache: reads end at its size
         * with no request past it, in readahead's large requests. What the cache holds is
         * kept across opens while it is of this version (recorded as the inode's size; the
         * hub drops it at the thread's next change), else dropped at this open; a small
         * view is pushed whole. */
        int64_t held = -1, version = rfs_reader_version(h->reader);
        rfs_itable_known_size(m->inodes, ino, &held);
        /* A seal changes the stats without changing the rows' version: pushed every open. */
        int by_version = n->kind != RFS_T_STATS && n->kind != RFS_R_STATS;
        int same = by_version && held == version;
        rfs_reader_keep_behind(h->reader, PUSH_BEHIND);
        fi->keep_cache = same || push_whole(m, ino, h, s);
        rfs_itable_set_size(m->inodes, ino, by_version ? version : -1);
        h->paged_version = by_version ? version : -1;
    } else {
        fi->direct_io = 1;
        rfs_reader_direct(h->reader);
    }
}

/* An open for reading: a reader of the node's bytes, or a live feed. */
static int open_reader(fuse_req_t req, fuse_ino_t ino, const rfs_node *n, struct fuse_file_info *fi,
                       rfs_handle **out, rs_err *err)
{
    rfs_mount *m = rfs_mount_of(req);
    int is_follow = n->kind == RFS_T_FOLLOW || n->kind == RFS_R_FOLLOW ||
                    n->kind == RFS_CHANGES_FOLLOW;
    rfs_handle *h = handle_new(req, is_follow ? H_FOLLOW : H_READ, n);
    if (!h)
        return -ENOMEM;
    rfs_scope sc;
    char uid[24];
    rfs_scope_init(m, req, &sc, uid, sizeof uid);
    sc.user = handle_user(m, h);
    rs_store *s;
    int rc = rfs_pool_get(m, &s, err);
    if (!rc) {
        rc = rfs_reader_open(&h->reader, s, &sc, h->node, err);
        if (!rc && !is_follow)
            reader_caching(m, ino, n, h, s, fi);
        rfs_pool_put(m, s);
    }
    if (!rc && is_follow) {
        /* The reader said the feed exists; the follower alone serves it. */
        rfs_reader_free(h->reader);
        h->reader = NULL;
        rc = rfs_follow_open(&h->follow, m, h->node, handle_user(m, h));
    }
    if (rc) {
        handle_free(h);
        return rc;
    }
    if (is_follow) {
        fi->direct_io = 1;
        fi->nonseekable = 1;
    }
    /* A reader has nothing to flush: its close sends no FLUSH request (FOPEN_NOFLUSH). */
    fi->noflush = 1;
    *out = h;
    return 0;
}

void rfs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    rfs_node n;
    if (rfs_req_node(req, ino, &n))
        return;
    if (rfs_node_is_dir(n.kind))
        return (void)fuse_reply_err(req, EISDIR);
    int writing = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
    if (writing && rfs_writable(req, &n, NULL))
        return;
    rfs_handle *h = NULL;
    rs_err err = {0};
    int rc = writing ? open_writer(req, &n, fi, &h, &err) : open_reader(req, ino, &n, fi, &h, &err);
    if (rc)
        return reply_failure(req, &n, NULL, rc, &err);
    fi->fh = (uintptr_t)h;
    fuse_reply_open(req, fi);
}

/* The node a create makes under pn: once/<type> or seal.json, nothing else. */
static int creatable(const rfs_node *pn, const char *name, rfs_node *cn, rs_err *err)
{
    int rc = rfs_node_child(pn, name, cn);
    if (rc == -ENOENT || (rc == 0 && cn->kind != RFS_R_ONCE && cn->kind != RFS_R_SEAL))
        return rs_err_set(err, -EPERM, "only once/<event_type> and seal.json can be created");
    return rc ? rs_err_set(err, rc, "%s", rfs_bad_name_reason(pn)) : 0;
}

/* What a create does in the store before it answers. An exclusive once/<type> reserves its
 * name, so a second exclusive create fails while this one writes. seal.json seals a run
 * with its terminal event at once; without one, a body must follow ({"state":"partial",
 * "error":"why"}), committed at its newline. */
static int create_begin(rfs_mount *m, rfs_handle *h, rs_err *err)
{
    if (h->kind == H_ONCE && !h->w->exclusive)
        return 0;
    rs_target t = {
        .thread_id = h->node->thread_id, .run_id = h->node->run_id, .user = handle_user(m, h)};
    rs_store *s;
    int rc = rfs_pool_get(m, &s, err);
    if (rc)
        return rc;
    if (h->kind == H_ONCE) {
        rc = rs_store_reserve_singleton(s, &t, h->node->name, err);
        h->w->reserved = rc == 0;
    } else {
        rc = rs_store_seal(s, &t, "", 0, h->w->want_receipt ? &h->w->receipt : NULL, err);
    }
    rfs_pool_put(m, s);
    if (h->kind == H_SEAL && rc == 0) {
        h->w->done = 1;
        rfs_hub_committed(m, t.thread_id, t.run_id);
    }
    if (h->kind == H_SEAL && rc == -EINVAL) {
        /* Why the run is not sealed yet, for a close that brings no body. */
        rs_buf_reset(&h->w->why);
        if (rs_buf_addstr(&h->w->why, err->msg))
            rs_buf_release(&h->w->why); /* out of memory: the close says EINVAL all the same */
        err->msg[0] = '\0';
        return 0;
    }
    return rc;
}

/* A handle for the file cn being created; refusals are described in err. */
static int create_handle(fuse_req_t req, const rfs_node *cn, const struct fuse_file_info *fi,
                         rfs_handle **out, rs_err *err)
{
    int rc = run_is_callers(req, cn);
    if (rc)
        return rc;
    rfs_handle *h = handle_new(req, cn->kind == RFS_R_ONCE ? H_ONCE : H_SEAL, cn);
    if (!h)
        return -ENOMEM;
    h->w->exclusive = (fi->flags & O_EXCL) != 0 || cn->kind == RFS_R_SEAL;
    h->w->want_receipt = (fi->flags & O_ACCMODE) == O_RDWR;
    if (cn->kind == RFS_R_ONCE)
        if (rs_buf_addf(&h->w->why, "once/%s was closed with no event line: nothing stored",
                        cn->name)) {
            handle_free(h);
            return -ENOMEM;
        }
    if ((rc = create_begin(rfs_mount_of(req), h, err))) {
        if (!err->msg[0])
            rs_err_set(err, rc, "%s", strerror(-rc));
        handle_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

/* The entry of a file being created: it exists for its writer (held while the handle is
 * open) before anything is stored. */
static int created_entry(fuse_req_t req, rfs_handle *h, struct fuse_entry_param *e)
{
    rfs_mount *m = rfs_mount_of(req);
    uint64_t ino;
    int rc = rfs_itable_ref(m->inodes, h->node, &ino);
    if (rc)
        return rc;
    memset(e, 0, sizeof *e);
    e->ino = ino;
    e->entry_timeout = rfs_entry_timeout(m, h->node->kind);
    int64_t now = rs_clock_ns(CLOCK_REALTIME);
    rfs_stat st = {.shape = RFS_SHAPE_DOC, .mtime_ns = now, .ctime_ns = now};
    rfs_fill_attr(req, h->node, &st, ino, &e->attr);
    rfs_itable_hold(m->inodes, ino, 1);
    h->w->created = 1;
    return 0;
}

void rfs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                   struct fuse_file_info *fi)
{
    (void)mode;
    rfs_node pn, cn;
    if (rfs_req_writable(req, parent, name, &pn))
        return;
    rfs_handle *h = NULL;
    rs_err err = {0};
    int rc;
    if ((rc = creatable(&pn, name, &cn, &err)) || (rc = create_handle(req, &cn, fi, &h, &err)))
        return reply_failure(req, &pn, name, rc, &err);
    struct fuse_entry_param e;
    if ((rc = created_entry(req, h, &e))) {
        handle_free(h);
        return (void)fuse_reply_err(req, -rc);
    }
    fi->direct_io = 1;
    fi->fh = (uintptr_t)h;
    fuse_reply_create(req, &e, fi);
}

/* Store complete lines as one transaction, note them for the handle's receipt, and have
 * the kernel's cached tails dropped before the write() returns. */
static int commit_lines(rfs_mount *m, rfs_handle *h, const char *data, size_t len, rs_err *err)
{
    rs_store *s;
    int rc = rfs_pool_get(m, &s, err);
    if (rc)
        return rc;
    rs_target t = {
        .thread_id = h->node->thread_id, .run_id = h->node->run_id, .user = handle_user(m, h)};
    rs_buf stored = RS_BUF_INIT;
    rs_placement at;
    /* The stored lines are wanted only for a receipt; without one the store renders none. */
    rc = rs_store_append_at(s, &t, data, len, h->w->want_receipt ? &stored : NULL, &at, err);
    rfs_pool_put(m, s);
    if (!rc) {
        if (h->w->want_receipt && rfs_receipt_add_lines(&h->w->stored, stored.buf, stored.len))
            rc = rs_err_set(err, -ENOMEM, "out of memory for the receipt");
        rfs_hub_appended(m, t.thread_id, t.run_id, &at, (size_t)at.len);
    }
    rs_buf_release(&stored);
    return rc;
}

/* Refuse an append write and remember its bytes (see retried_refusal). */
static int refuse_append(fuse_req_t req, rfs_handle *h, int code, const char *why, const char *buf,
                         size_t size, const char *data, size_t len)
{
    rs_buf_reset(&h->w->refused);
    h->w->refused_code = rs_buf_add(&h->w->refused, buf, size) ? 0 : code;
    rfs_log_refusal(req, h->node, NULL, code, why, data, len);
    return code;
}

/* The kernel cuts a large write() into requests; when we refuse one after accepting
 * others, the writer only sees a short count, and a writer that retries sends the refused
 * bytes again. That retry starts with the same bytes (the kernel may cut it elsewhere) and
 * fails the same way, or the writer never learns of the refusal (EMSGSIZE). */
static int retried_refusal(rfs_handle *h, const char *buf, size_t size)
{
    if (!h->w->refused_code)
        return 0;
    size_t n = h->w->refused.len < size ? h->w->refused.len : size;
    if (n && memcmp(h->w->refused.buf, buf, n) == 0)
        return h->w->refused_code;
    rs_buf_reset(&h->w->refused);
    h->w->refused_code = 0;
    return 0;
}

static long count_lines(const char *p, size_t len)
{
    long n = 0;
    for (const char *end = p + len; (p = memchr(p, '\n', (size_t)(end - p))); p++)
        n++;
    return n;
}

/* Commit complete lines of one write(): all of them or none (the splitting is linebuf.c's). */
/* 0, or the negative errno to reply (a refusal is logged here). */
static int append_lines(fuse_req_t req, rfs_handle *h, const char *buf, size_t size)
{
    rfs_mount *m = rfs_mount_of(req);
    size_t max = m->store_opt.max_event_bytes ? m->store_opt.max_event_bytes : RS_DEFAULT_MAX_EVENT;
    int rc = retried_refusal(h, buf, size);
    if (rc)
        return rc; /* logged when first refused */
    long before = h->w->lines_seen, in_write = count_lines(buf, size);
    h->w->lines_seen += in_write;
    rfs_lines lines;
    rc = rfs_linebuf_feed(&h->w->pending, &h->w->skipping, max, buf, size, &lines);
    if (rc == -EMSGSIZE) {
        char why[128];
        (void)rs_fmt(why, sizeof why, "event line over the %zu-byte limit", max);
        return refuse_append(req, h, -EMSGSIZE, why, buf, size, buf, size);
    }
    if (rc || !lines.len)
        return rc;
    rs_err err = {0};
    rc = commit_lines(m, h, lines.data, lines.len, &err);
    if (rc) {
        char why[600];
        /* The batch's line 1 is the first line this write completed (or the one after
         * the long line the handle was skipping). */
        if (err.line > 0)
            (void)rs_fmt(why, sizeof why, "line %ld: %s",
                         before + in_write - count_lines(lines.data, lines.len) + err.line,
                         err.msg);
        else
            (void)rs_fmt(why, sizeof why, "%s", err.msg);
        refuse_append(req, h, rc, why, buf, size, lines.data, lines.len);
        rfs_lines_done(&h->w->pending, &lines, 0);
        return rc;
    }
    return rfs_lines_done(&h->w->pending, &lines, 1);
}

/* append_lines within --max-pending: what the write leaves pending (at most its tail after
 * the last newline, or everything when it has none) is charged first. */
static void append_write(fuse_req_t req, rfs_handle *h, const char *buf, size_t size)
{
    const char *nl = size ? memrchr(buf, '\n', size) : NULL;
    size_t after = nl ? size - (size_t)(nl + 1 - buf) : h->w->pending.len + size;
    size_t held, limit;
    int crc = pending_charge(h, after, &held, &limit);
    if (crc)
        return refuse_no_buffer(req, h, crc, held, limit, buf, size);
    int rc = append_lines(req, h, buf, size);
    /* Settled before the reply: the writer's next write may count on the freed bytes. */
    pending_settle(h);
    if (rc)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_write(req, size);
}

/* Log a refusal of the handle's file; req NULL at release, which has no caller to tell. */
static void handle_refusal(fuse_req_t req, rfs_mount *m, rfs_handle *h, int rc, const char *why)
{
    if (req) {
        rfs_log_refusal(req, h->node, NULL, rc, why, h->w->pending.buf, h->w->pending.len);
        return;
    }
    rs_buf path = RS_BUF_INIT;
    rfs_node_path(h->node, &path);
    rfs_rejects_add(m->rejects, handle_user(m, h), h->pid, h->uid, path.buf, rc, why,
                    h->w->pending.buf, h->w->pending.len);
    rs_buf_release(&path);
}

/* once/<type> and seal.json: store the body. 0 or a negative errno (logged; the caller
 * replies). */
static int commit_body(fuse_req_t req, rfs_handle *h, rfs_mount *m)
{
    h->w->done = 1;
    rs_err err = {0};
    rs_store *s;
    int rc = rfs_pool_get(m, &s, &err);
    if (rc)
        return rc;
    rs_target t = {
        .thread_id = h->node->thread_id, .run_id = h->node->run_id, .user = handle_user(m, h)};
    rs_buf *out = h->w->want_receipt ? &h->w->receipt : NULL;
    if (h->kind == H_SEAL)
        rc = rs_store_seal(s, &t, h->w->pending.buf, h->w->pending.len, out, &err);
    else if (h->w->pending.len == 0)
        rc = rs_err_set(&err, -EINVAL, "once/%s needs one event line", h->node->name);
    else
        rc = rs_store_put_singleton(s, &t, h->node->name, h->w->pending.buf, h->w->pending.len,
                                    h->w->exclusive, out, &err);
    if (h->w->reserved) {
        rs_store_release_singleton(s, &t, h->node->name);
        h->w->reserved = 0;
    }
    rfs_pool_put(m, s);
    if (rc < 0) {
        handle_refusal(req, m, h, rc, err.msg);
        return rc;
    }
    rfs_hub_committed(m, h->node->thread_id, h->node->run_id);
    return 0;
}

/* One line of redactions.jsonl redacted as the handle's owner. */
static int redact_line(rfs_mount *m, rfs_handle *h, const char *line, size_t len, rs_err *err)
{
    rs_store *s;
    int rc = rfs_pool_get(m, &s, err);
    if (rc)
        return rc;
    rs_target t = {
        .thread_id = h->node->thread_id, .run_id = h->node->run_id, .user = handle_user(m, h)};
    rc = rs_store_redact_line(s, &t, line, len, NULL, NULL, err);
    /* The search answers the mount keeps may hold the old bytes: they go now. */
    int64_t rewrites;
    if (!rc && rs_store_rewrites(s, &rewrites) == 0)
        rfs_sizes_rewrites(m->sizes, rewrites);
    rfs_pool_put(m, s);
    /* Rows changed in the middle of the thread's logs: every page of them goes before the
     * write returns, and its followers check what they fetched. */
    if (!rc)
        rfs_hub_rewritten(m, h->node->thread_id);
    return rc;
}

/* Appended lines of redactions.jsonl, each redacted as it completes. */
static void redact_write(fuse_req_t req, rfs_handle *h, const char *buf, size_t size)
{
    rfs_mount *m = rfs_mount_of(req);
    if (h->w->pending.len + size > m->store_opt.max_event_bytes)
        return rfs_refuse(req, h->node, NULL, -EMSGSIZE, "redaction line over the size limit", buf,
                          size);
    if (rs_buf_add(&h->w->pending, buf, size))
        return (void)fuse_reply_err(req, ENOMEM);
    char *nl;
    while ((nl = memchr(h->w->pending.buf, '\n', h->w->pending.len))) {
        size_t len = (size_t)(nl - h->w->pending.buf);
        rs_err err = {0};
        int rc = redact_line(m, h, h->w->pending.buf, len, &err);
        if (rc) {
            rfs_refuse(req, h->node, NULL, rc, err.msg, h->w->pending.buf, len);
            rs_buf_reset(&h->w->pending);
            return;
        }
        rs_buf_remove_front(&h->w->pending, len + 1);
    }
    fuse_reply_write(req, size);
}

void rfs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                  struct fuse_file_info *fi)
{
    (void)ino;
    (void)off; /* append is append: offsets from the kernel are ignored */
    rfs_handle *h = (rfs_handle *)(uintptr_t)fi->fh;
    size_t held, limit;
    int crc;
    pthread_mutex_lock(&h->lock);
    if (h->kind == H_APPEND) {
        append_write(req, h, buf, size);
    } else if (h->kind == H_REDACT) {
        redact_write(req, h, buf, size);
    } else if (h->kind == H_ONCE || h->kind == H_SEAL) {
        if (h->w->done) {
            rfs_refuse(req, h->node, NULL, -EEXIST,
                       h->kind == H_SEAL ? "the run is already sealed"
                                         : "this handle already wrote its one event",
                       buf, size);
        } else if (h->w->pending.len + size > rfs_mount_of(req)->store_opt.max_event_bytes) {
            rfs_refuse(req, h->node, NULL, -EMSGSIZE, "event over the size limit", buf, size);
        } else if ((crc = pending_charge(h, h->w->pending.len + size, &held, &limit))) {
            refuse_no_buffer(req, h, crc, held, limit, buf, size);
        } else if (rs_buf_add(&h->w->pending, buf, size)) {
            fuse_reply_err(req, ENOMEM);
        } else if (memchr(buf, '\n', size)) {
            /* The singleton commits at its newline, so the writer learns the outcome. */
            int rc = commit_body(req, h, rfs_mount_of(req));
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
void rfs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    rfs_handle *h = (rfs_handle *)(uintptr_t)fi->fh;
    rfs_mount *m = rfs_mount_of(req);
    int rc = 0;
    pthread_mutex_lock(&h->lock);
    if (h->kind == H_APPEND && h->w->pending.len) {
        /* A last line without its newline commits when it is a whole event. */
        rs_err err = {0};
        rc = commit_lines(m, h, h->w->pending.buf, h->w->pending.len, &err);
        if (rc) {
            char why[600];
            (void)rs_fmt(why, sizeof why, "line %ld: %s", h->w->lines_seen + 1,
                         *err.msg ? err.msg : "the last line is not a whole JSON object");
            rfs_log_refusal(req, h->node, NULL, rc, why, h->w->pending.buf, h->w->pending.len);
        }
        rs_buf_reset(&h->w->pending);
        pending_settle(h);
    } else if ((h->kind == H_ONCE || h->kind == H_SEAL) && !h->w->done && h->w->pending.len) {
        /* Not at every flush: a shell's `>` closes its first descriptor (a flush) before
         * the command writes; only a body that arrived commits here. */
        rc = commit_body(req, h, m);
    } else if ((h->kind == H_ONCE || h->kind == H_SEAL) && !h->w->done && h->w->created) {
        /* Created and nothing to store yet: each close says so (EINVAL); a body may still
         * come through another descriptor, and release logs the refusal if none does. */
        rc = -EINVAL;
    }
    if (h->w)
        h->w->skipping = 0;
    pthread_mutex_unlock(&h->lock);
    fuse_reply_err(req, rc < 0 ? -rc : 0);
}

void rfs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    rfs_mount *m = rfs_mount_of(req);
    rfs_handle *h = (rfs_handle *)(uintptr_t)fi->fh;
    /* A created once/<type> or seal.json that never got a body stored nothing: its close
     * returned EINVAL, and the reason is logged now. */
    if ((h->kind == H_ONCE || h->kind == H_SEAL) && h->w->created && !h->w->done)
        handle_refusal(NULL, m, h, -EINVAL, h->w->why.buf);
    if (h->w && h->w->reserved) {
        rs_store *s;
        if (rfs_pool_get(m, &s, NULL) == 0) {
            rs_target t = {.thread_id = h->node->thread_id,
                           .run_id = h->node->run_id,
                           .user = handle_user(m, h)};
            rs_store_release_singleton(s, &t, h->node->name);
            rfs_pool_put(m, s);
        }
    }
    if (h->w && h->w->created)
        rfs_itable_hold(m->inodes, ino, -1);
    if (h->kind == H_APPEND)
        rfs_itable_hold(m->inodes, thread_ino(m, h->node), -1);
    handle_free(h);
    fuse_reply_err(req, 0);
}

/* Reply buffers kept between reads. A buffer of a read's MiB is mapped at each malloc (past
 * mount.c's mmap threshold) and given back at its free: a large file read a MiB at a time
 * paid a fault and a cleared page for every 4 KiB of its reply (a kept search answer's
 * read: a quarter of its daemon CPU). A few are kept for the next reads, so the daemon's
 * peak grows by READ_BUFS reads' MiB at most, not by a worker's each. */
#define READ_BUFS 4
#define READ_BUF_MAX ((size_t)2 * RFS_MAX_WRITE) /* a kept buffer's room at most (rs_buf doubles) */
static pthread_mutex_t read_bufs_lock =
    PTHREAD_MUTEX_INITIALIZER;      /* guards read_bufs, n_read_bufs */
static rs_buf read_bufs[READ_BUFS]; /* under read_bufs_lock */
static size_t n_read_bufs;          /* under read_bufs_lock */

static rs_buf read_buf_take(void)
{
    rs_buf b = RS_BUF_INIT;
    pthread_mutex_lock(&read_bufs_lock);
    if (n_read_bufs)
        b = read_bufs[--n_read_bufs];
    pthread_mutex_unlock(&read_bufs_lock);
    return b;
}

static void read_buf_give(rs_buf *b)
{
    if (b->alloc >= RFS_MAX_WRITE && b->alloc <= READ_BUF_MAX) {
        /* A kept buffer must not keep the bytes it gave: a redacted line's among them would
         * outlive the redaction in the daemon's memory (a freed one's pages went back). */
        explicit_bzero(b->buf, b->len);
        rs_buf_reset(b);
        pthread_mutex_lock(&read_bufs_lock);
        if (n_read_bufs < READ_BUFS) {
            read_bufs[n_read_bufs++] = *b;
            *b = (rs_buf)RS_BUF_INIT;
        }
        pthread_mutex_unlock(&read_bufs_lock);
    }
    rs_buf_release(b);
}

void rfs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    rfs_mount *m = rfs_mount_of(req);
    rfs_handle *h = (rfs_handle *)(uintptr_t)fi->fh;
    if (h->kind == H_FOLLOW)
        return rfs_follow_read(h->follow, req, size); /* a feed goes on from what it gave */
    pthread_mutex_lock(&h->lock);
    if (h->kind != H_READ && h->kind != H_APPEND) {
        /* A singleton's or seal's receipt: the document, read as a stream. */
        size_t len = h->w->receipt.len - h->w->receipt_pos;
        if (len > size)
            len = size;
        fuse_reply_buf(req, len ? h->w->receipt.buf + h->w->receipt_pos : NULL, len);
        h->w->receipt_pos += len;
        pthread_mutex_unlock(&h->lock);
        return;
    }
    rs_buf out = read_buf_take();
    rs_err err = {0};
    rs_store *s;
    int64_t start = rs_clock_ns(CLOCK_MONOTONIC);
    int rc = rfs_pool_get(m, &s, &err);
    if (!rc) {
        /* An append handle's reads are its receipt, continuing where the last read ended
         * whatever the offset (the write moved it), so a shell's `head <&3` works. */
        rc = h->kind == H_APPEND ? rfs_receipt_read(&h->w->stored, s, h->node->thread_id,
                                                    h->node->run_id, size, &out, &err)
                                 : rfs_reader_read(h->reader, s, off, size, &out, &err);
        rfs_pool_put(m, s);
    }
    /* A search's read, when slow (as a stat's sizing is): whether it passed over the
     * candidates again, read only the rows its stat kept, or the bytes it kept. */
    int64_t took = rs_clock_ns(CLOCK_MONOTONIC) - start;
    int from = !rc && h->kind == H_READ ? rfs_reader_search_from(h->reader) : 0;
    rs_buf path = RS_BUF_INIT;
    if (from != RFS_SEARCH_FROM_NONE && took >= m->slow_ns && rfs_node_path(h->node, &path) == 0)
        rfs_log("read %s at %lld in %.1f s: %s", path.buf, (long long)off, (double)took / 1e9,
                from == RFS_SEARCH_FROM_COUNTED ? "counted the answer, read the bytes it kept"
                : from == RFS_SEARCH_FROM_FILE  ? "the answer its stat kept"
                : from == RFS_SEARCH_FROM_KEPT  ? "the rows its stat kept"
                                                : "searched (no rows kept from its stat)");
    rs_buf_release(&path);
    pthread_mutex_unlock(&h->lock);
    /* Read before the reply: once it is sent, the handle may be released and freed. */
    int64_t paged = h->paged_version, held = -1;
    if (rc)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_buf(req, out.buf, out.len);
    read_buf_give(&out);
    /* The bytes of a version the kernel's copy is no longer of (the thread changed since
     * this handle opened) went to the cache: dropped once the reply is in (the kernel
     * holds the pages until then), so a later open does not keep them. */
    if (paged >= 0 && rfs_itable_known_size(m->inodes, ino, &held) == 0 && held != paged)
        rfs_hub_sync(m, ino, 0);
}

void rfs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                 struct fuse_pollhandle *ph)
{
    (void)ino;
    rfs_handle *h = (rfs_handle *)(uintptr_t)fi->fh;
    if (h->kind == H_FOLLOW)
        return rfs_follow_poll(h->follow, req, ph);
    if (ph)
        fuse_pollhandle_destroy(ph);
    fuse_reply_poll(req, POLLIN | POLLOUT);
}
