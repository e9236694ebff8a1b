/* ops_int.h — what the FUSE handlers (ops.c, ops_dir.c, ops_file.c) share. */
#ifndef RFS_OPS_INT_H
#define RFS_OPS_INT_H

#include "attrs.h"
#include "follow.h"
#include "hub.h"
#include "listings.h"
#include "log.h"
#include "mount.h"
#include "pool.h"
#include "rejects.h"

#define DIR_TIMEOUT 1.0
/* The largest write request the mount asks the kernel for (DESIGN "Appending": 1 MiB). */
#define RFS_MAX_WRITE (1024 * 1024)

rfs_mount *rfs_mount_of(fuse_req_t req);
/* The scope of a request: the owner it reads and writes as. */
void rfs_scope_for(rfs_mount *m, fuse_req_t req, rfs_scope *sc, char *uidbuf, size_t uidlen);
/* The request's scope with the mount-only documents (status, rejects) wired in. */
void rfs_scope_init(rfs_mount *m, fuse_req_t req, rfs_scope *sc, char *uidbuf, size_t len);
/* Record a refusal (rejects.jsonl and the log); rfs_refuse also replies with its errno. */
void rfs_log_refusal(fuse_req_t req, const rfs_node *n, const char *leaf, int code,
                     const char *reason, const char *data, size_t len);
void rfs_refuse(fuse_req_t req, const rfs_node *n, const char *leaf, int code, const char *reason,
                const char *data, size_t len);
/* The prologue of every handler: the node of ino. 0, or -ENOENT after replying (the kernel
 * holds no reference to ino). */
int rfs_req_node(fuse_req_t req, fuse_ino_t ino, rfs_node *n);
/* 0 on a writable mount; else -EROFS after refusing the request (logged as n/leaf). */
int rfs_writable(fuse_req_t req, const rfs_node *n, const char *leaf);
/* rfs_req_node, then rfs_writable: the prologue of a handler that changes something. */
int rfs_req_writable(fuse_req_t req, fuse_ino_t ino, const char *leaf, rfs_node *n);
const char *rfs_bad_name_reason(const rfs_node *parent);

void rfs_fill_attr(fuse_req_t req, const rfs_node *n, const rfs_stat *st, uint64_t ino,
                   struct stat *a);
/* 1 for the views whose bytes follow from their thread's rows and seals only (not the
 * logs): the kernel may keep their attributes and read them through its page cache. */
int rfs_row_view(rfs_kind kind);
/* How long the kernel may keep n's attributes (st: what the reply says); a file's are
 * recorded in m->attrs for the hub to drop, so call it only for a reply being made. */
double rfs_attr_timeout(rfs_mount *m, const rfs_node *n, uint64_t ino, const rfs_stat *st);
/* Around a reply that lets the kernel cache (rfs_mount's attr_gen): begin before the stat;
 * check (1: the reply may cache; 0: no change may be missed, cache nothing) right before
 * the reply, and end right after it. */
uint64_t rfs_cache_begin(rfs_mount *m);
int rfs_cache_check(rfs_mount *m, uint64_t gen);
void rfs_cache_end(rfs_mount *m);
double rfs_entry_timeout(const rfs_mount *m, rfs_kind kind);
/* Stat a node for this request's owner, with a pooled connection. */
int rfs_req_stat(fuse_req_t req, const rfs_node *n, rfs_stat *st, rs_err *err);
/* rfs_req_stat through rfs_view_stat_ex; flags: RFS_STAT_LAZY (rfs_view_stat_ex's lazy),
 * RFS_STAT_NO_WAIT (a check before a write: one the server drops while it runs fails at
 * once, as a write in flight does; one started while it is down waits, as every request). */
/* A getattr through a handle opened for writing (the kernel's before an O_APPEND write()):
 * 1, and its stat is not tried again once the server dropped it. */
int rfs_handle_writes(const struct fuse_file_info *fi);
#define RFS_STAT_LAZY 1
#define RFS_STAT_NO_WAIT 2
int rfs_req_stat_ex(fuse_req_t req, const rfs_node *n, int flags, rfs_bytes_fn bytes, void *ctx,
                    rfs_stat *st, rs_err *err);
/* A listing of thread_id went without the sizes of views a stat renders (history.jsonl,
 * transcript.md, stats.json): the stats that follow soon (ls -la) size them in one pass. */
void rfs_thread_pass_hint(rfs_mount *m, const char *thread_id);
/* The hub's tick: log once each stat under way for longer than the mount's slow_ns. */
void rfs_sizing_tell(rfs_mount *m);
#define RFS_LIVE_NS 2000000000LL /* a thread appended to this recently is still growing */
/* Whether n's thread is being written (a writer open on this mount, or a change less than
 * RFS_LIVE_NS before mtime_ns): its files are then read without the kernel's cache. */
int rfs_thread_live(rfs_mount *m, const rfs_node *n, int64_t mtime_ns);
/* The entry of n, one more kernel lookup counted: 0, or a negative errno (none counted).
 * may_wait: a log grown since the kernel's copy waits for the hub to drop that copy (a lookup);
 * else it says the copy's size, kept for no time (a listing). */
int rfs_entry_param(fuse_req_t req, const rfs_node *n, const rfs_stat *st, int may_wait,
                    struct fuse_entry_param *e);
/* Reply with the entry of n (one more kernel lookup counted); gen: rfs_cache_begin's,
 * taken before n was stat'ed. */
int rfs_reply_entry(fuse_req_t req, const rfs_node *n, const rfs_stat *st, uint64_t gen);

/* ops_dir.c */
/* 1 when every caller sees the same listings (no per-uid owners): the kernel may keep
 * them. */
int rfs_listings_shared(const rfs_mount *m);
void rfs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void rfs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi);
void rfs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        struct fuse_file_info *fi);
void rfs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void rfs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void rfs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void rfs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void rfs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void rfs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name);
void rfs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void rfs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                   const char *newname, unsigned int flags);

/* ops_file.c */
void rfs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                    struct fuse_file_info *fi);
void rfs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void rfs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                   struct fuse_file_info *fi);
void rfs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void rfs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                  struct fuse_file_info *fi);
void rfs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void rfs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void rfs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                 struct fuse_pollhandle *ph);

#endif
