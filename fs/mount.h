/* mount.h — one mounted store: options, shared state of the FUSE handlers, and the
 * services they use (store pool, rejects log, change hub). */
#ifndef RFS_MOUNT_H
#define RFS_MOUNT_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdint.h>

#include "itable.h"
#include "node.h"
#include "runstore.h"
#include "view.h"

typedef struct rfs_options {
    const char *store;
    const char *mountpoint;
    int foreground;
    int read_only;
    int allow_other;
    const char *user;            /* --user NAME */
    int user_from_uid;           /* --user-from-uid */
    const char *only_thread;     /* --thread ID */
    int allow_delete;
    const char *contract;
    int sync_full;
    int allow_unknown;
    double follow_timeout;       /* seconds */
    int debug;
} rfs_options;

typedef struct rfs_hub rfs_hub;
typedef struct rfs_rejects rfs_rejects;

#define RFS_POOL_MAX 16

typedef struct rfs_mount {
    rfs_options opt;
    rs_options store_opt;
    struct fuse_session *se;
    rfs_itable *inodes;
    int64_t mount_ns;
    /* Store connections: one per request in flight, opened on demand. */
    pthread_mutex_t pool_lock;
    pthread_cond_t pool_cond;
    rs_store *pool[RFS_POOL_MAX];
    int pool_open;
    int pool_idle;
    rfs_rejects *rejects;
    rfs_hub *hub;
} rfs_mount;

/* ---- store pool ---- */
int rfs_pool_get(rfs_mount *m, rs_store **out, rs_err *err);
void rfs_pool_put(rfs_mount *m, rs_store *s);
void rfs_pool_close(rfs_mount *m);

/* ---- rejects: the last refused writes, for .runfs/rejects.jsonl and the log ---- */
int rfs_rejects_new(rfs_rejects **out);
void rfs_rejects_free(rfs_rejects *r);
void rfs_rejects_add(rfs_rejects *r, long pid, long uid, const char *path, int code,
                     const char *reason, const char *data, size_t len);
/* The refusals of uid only_uid (-1: all of them). */
int rfs_rejects_render(rfs_rejects *r, long only_uid, rs_buf *out);

/* ---- log lines (stderr in the foreground, syslog when daemonised) ---- */
void rfs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rfs_log_to_syslog(void);

/* ---- the change hub: kernel invalidation and live followers ---- */

/* A follow.jsonl reader, embedded in its file handle. ops_file.c fills node and user (its
 * open checks the feed exists for this caller); the rest belongs to follow.c, which fetches
 * the feed's rows itself, after the last seq it holds. */
typedef struct rfs_follow {
    rfs_node node;
    const char *user;
    int64_t deadline_ns;         /* CLOCK_MONOTONIC; set by rfs_hub_follow_add from
                                    --follow-timeout */
    /* Under lock, held by whoever fills the feed (a read, a poll or the hub): */
    pthread_mutex_t lock;
    rs_buf ahead;                /* fetched, not yet delivered */
    int64_t scan_seq;            /* seq of the last row fetched */
    int caught_up;               /* the last fetch reached the end of the rows */
    int ended;                   /* run.terminal fetched: nothing after it */
    /* Under the hub lock: */
    int64_t seen_seq;            /* scan_seq as the hub may trust it */
    int64_t want_seq;            /* the log's last seq when the hub marked it dirty */
    int dirty;                   /* a commit may have passed it: fetch before parking */
    int claimed;                 /* the hub is serving it: release waits */
    fuse_req_t req;              /* parked read, or NULL */
    size_t req_size;
    struct fuse_pollhandle *ph;  /* parked poll, or NULL */
    struct rfs_follow *next;     /* hub's list of live followers */
    struct rfs_follow *prev;
    struct rfs_follow *work;     /* the hub's list for one round */
} rfs_follow;

int rfs_hub_start(rfs_mount *m);
void rfs_hub_stop(rfs_mount *m);
/* A commit of this mount touched thread/run: invalidate the kernel's view of their logs and
 * wake followers; returns once the kernel was told (bounded wait). */
void rfs_hub_committed(rfs_mount *m, const char *thread_id, const char *run_id);
/* This mount appended len bytes of lines to thread/run at the given offsets: the kernel's
 * cached tails of both logs are dropped before the write() returns (bounded wait). */
void rfs_hub_appended(rfs_mount *m, const char *thread_id, const char *run_id,
                      const rs_placement *at, size_t len);
/* A delete changed the middle of the thread's logs: invalidate them whole. */
void rfs_hub_deleted(rfs_mount *m, const char *thread_id);
/* getattr saw a log whose size moved: drop the kernel's stale tail before the reply says
 * the new size. */
void rfs_hub_sync(rfs_mount *m, uint64_t ino);
/* follow.jsonl: register, read (replies now or parks), poll, unregister. */
void rfs_hub_follow_add(rfs_mount *m, rfs_follow *f);
void rfs_hub_follow_read(rfs_mount *m, rfs_follow *f, fuse_req_t req, size_t size, off_t off);
void rfs_hub_follow_poll(rfs_mount *m, rfs_follow *f, fuse_req_t req,
                         struct fuse_pollhandle *ph);
void rfs_hub_follow_remove(rfs_mount *m, rfs_follow *f);

/* ---- the filesystem ---- */
extern const struct fuse_lowlevel_ops rfs_ops;

/* The scope of a request: the owner it reads and writes as. */
void rfs_scope_for(rfs_mount *m, fuse_req_t req, rfs_scope *sc, char *uidbuf, size_t uidlen);

/* Mount and serve until unmounted or signalled; returns the process exit status. */
int rfs_mount_main(rfs_options *opt);

#endif
