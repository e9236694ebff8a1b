/* mount.h — one mounted store: the options, the state every FUSE handler reaches through
 * fuse_req_userdata(), and `runfs mount`'s entry. */
#ifndef RFS_MOUNT_H
#define RFS_MOUNT_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <stdint.h>

#include "itable.h"
#include "node.h"
#include "pool.h"
#include "runstore.h"
#include "usermap.h"
#include "view.h"

typedef struct rfs_options {
    const char *store;
    const char *mountpoint;
    int foreground;
    int read_only;
    int create; /* --create: a SQLite store that does not exist is made */
    int allow_other;
    const char *user;            /* --user NAME */
    int user_from_uid;           /* --user-from-uid */
    const rfs_usermap *user_map; /* --user-map: the owner of each uid (NULL: its number) */
    const char *only_thread;     /* --thread ID */
    int allow_delete;
    int allow_redact; /* --allow-redact: appending to redactions.jsonl redacts */
    const char *contract;
    int sync_full;
    int allow_unknown;
    int stamp_time;        /* --stamp-time */
    double follow_timeout; /* seconds */
    size_t max_pending;    /* --max-pending: partial-line bytes of the whole mount (an
                            * owner of an owners-apart mount: 1/RFS_PENDING_SHARES of it) */
    int debug;
    const char *log_file;      /* --log FILE */
    const char *seal_key;      /* --seal-key FILE: sign every seal */
    const char *seal_key_name; /* --seal-key-name NAME (NULL: the host name) */
    const char *service_name;  /* --service-name NAME: otel.json's service.name */
    const char *retain;        /* --retain DURATION as given (NULL: no retention) */
    int64_t retain_s;          /* its seconds */
    char fuse_opts[512];       /* usual mount options handed to FUSE, comma-separated */
    /* Who owns what ls -l shows (without --user-from-uid): -1 until set, then the mounting
     * user's ids unless -o uid=/gid= said otherwise; umask= takes bits off every mode. */
    long uid;
    long gid;
    int umask;
} rfs_options;

#define RFS_DEFAULT_MAX_PENDING ((size_t)64 << 20)

/* How the kernel's requests reach the daemon (status.json's "transport"). */
enum { RFS_TRANSPORT_DEV_FUSE, RFS_TRANSPORT_IO_URING };

typedef struct rfs_hub rfs_hub;
typedef struct rfs_rejects rfs_rejects;
typedef struct rfs_handle rfs_handle;
typedef struct rfs_sizing rfs_sizing;

typedef struct rfs_mount {
    rfs_options opt;
    rs_options store_opt;
    struct fuse_session *se;
    rfs_itable *inodes;
    struct rfs_attrs *attrs;       /* files' attributes the kernel keeps (attrs.h) */
    struct rfs_listings *listings; /* listings being read (listings.h) */
    /* Set by op_init: the kernel opens directories itself and keeps their listings
     * (FUSE_CAP_NO_OPENDIR_SUPPORT). Atomic: the requests after INIT may run on other
     * threads, ordered after it only through the kernel. */
    atomic_int dirs_opened_by_kernel;
    int64_t mount_ns;
    rfs_pool *pool; /* store connections, one per request in flight */
    rfs_rejects *rejects;
    rfs_hub *hub;
    struct rfs_sizes *sizes;
    /* guards handles, each handle's next and prev, handles_open and handles_peak */
    pthread_mutex_t handles_lock;
    rfs_handle *handles;         /* open file handles (ops_file.c) */
    size_t handles_open;         /* ... how many */
    size_t handles_peak;         /* ... the most since malloc last gave memory back */
    struct rfs_pending *pending; /* partial lines and bodies held by open files */
    atomic_int noticed;          /* the store's notice was logged (once per mount) */
    /* What the kernel caches goes stale with a change: the hub bumps attr_gen, under
     * attr_lock written, before it drops what the change made stale. A reply that lets the
     * kernel cache attributes or a name checks attr_gen under attr_lock read (rfs_cache_*
     * in ops.c): one whose stat may predate the change caches nothing, and any other
     * reaches the kernel before the hub's drop does. A lookup's new inode exists only once
     * its caller runs again, so a drop just after its reply is told again (attrs.h). */
    pthread_rwlock_t attr_lock; /* orders attr_gen's bumps after replies in flight */
    atomic_uint_fast64_t attr_gen;
    /* The thread whose listing last went without some of its views' sizes (a hash of its
     * id, 0: none) and until when (CLOCK_MONOTONIC ns) a stat of one of them sizes them
     * all in one pass (rfs_scope's thread_pass). Atomics, no lock: a hint, where a torn
     * pair costs one pass more or less. */
    atomic_uint_fast64_t pass_thread;
    atomic_int_fast64_t pass_until_ns;
    pthread_mutex_t sizing_lock; /* guards sizing, each entry's next and told */
    rfs_sizing *sizing;          /* stats of files under way (ops.c), newest first */
    int64_t slow_ns; /* a stat this long is logged and shown in status.json (RUNFS_SLOW_MS) */
    /* Set during INIT (rfs_mount_transport, and libfuse's word that its rings failed to
     * start), read by status.json's readers after it: RFS_TRANSPORT_*, and why not io_uring
     * (a static string; NULL with io_uring). */
    atomic_int transport;
    const char *_Atomic transport_why;
    int uring_asked;           /* -o io_uring went to libfuse (set before the session starts) */
    struct rfs_retain *retain; /* --retain's passes (retain.h; NULL: none) */
    struct rfs_keeper *keeper; /* the step keeper (keeper.h; NULL: none) */
} rfs_mount;

/* The operation table (ops.c). */
extern const struct fuse_lowlevel_ops rfs_ops;
/* After the session loop, before the hub stops: free the handles never released (the
 * kernel drops a RELEASE still queued when the filesystem is unmounted). */
void rfs_ops_free_handles(rfs_mount *m);
/* Free a directory listing (ops_dir.c; what m->listings frees). */
void rfs_dir_free(void *listing);

/* At INIT (op_init): whether the kernel's requests will come over io_uring, said in the log
 * and kept for status.json. */
void rfs_mount_transport(rfs_mount *m, const struct fuse_conn_info *conn);

/* Mount and serve until unmounted or signalled; returns the process exit status. */
int rfs_mount_main(rfs_options *opt);

#endif
