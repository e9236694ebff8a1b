/* hub.h — the change hub: one thread per mount that tells the kernel what changed and wakes
 * live followers (notify.c). The handlers report commits here; the state below is shared by
 * notify.c and follow.c only. */
#ifndef RFS_HUB_H
#define RFS_HUB_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "mount.h"

int rfs_hub_start(rfs_mount *m);
void rfs_hub_stop(rfs_mount *m);
/* A commit of this mount touched thread/run: invalidate the kernel's view of their logs and
 * wake followers; returns once the kernel was told (bounded wait). */
void rfs_hub_committed(rfs_mount *m, const char *thread_id, const char *run_id);
/* This mount appended len bytes of lines to thread/run at the given offsets: the kernel's
 * cached tails of both logs are dropped before the write() returns (bounded wait). */
void rfs_hub_appended(rfs_mount *m, const char *thread_id, const char *run_id,
                      const rs_placement *at, size_t len);
/* This mount deleted rows of the thread or changed them in place (an rmdir, a redaction):
 * every page the kernel holds of the thread's logs and views is dropped and its followers
 * check their history (history_check) before this returns (bounded wait). Nothing outside
 * the thread shows its rows but a kept search answer, which the caller drops
 * (rfs_sizes_rewrites). */
void rfs_hub_rewritten(rfs_mount *m, const char *thread_id);
/* This process committed changes it cannot name (a retention pass): the next round checks
 * everything, as for another process's commit, which the hub's probe no longer takes this
 * process's commits for. Does not wait. */
void rfs_hub_changed_all(rfs_mount *m);
/* getattr saw a log whose size moved, or a view whose kept pages are of another version:
 * drop the kernel's stale copy; wait: before returning (a reply that says the new size
 * follows; never from a handler the kernel holds the inode's pages for, such as a read). */
void rfs_hub_sync(rfs_mount *m, uint64_t ino, int wait);
/* A view's size for the store to keep (rs_store_size_put), written on the hub's connection
 * at its next round (a write on the hub's own connection leaves the pool's connections
 * alone). ctx: the mount. 0 when taken; -EAGAIN when the hub is gone or holds too many
 * already, -ENOMEM (the caller writes it itself). */
int rfs_hub_keep_size(void *ctx, uint64_t view, uint64_t token, int64_t size);

/* ---- shared by notify.c and follow.c ---- */

#define RFS_HUB_TICK_MS 20   /* how often the hub probes for other processes' commits */
#define RFS_HUB_QUEUE_MAX 64 /* changes queued for a round; past it, a round checks all */

typedef struct rfs_follow rfs_follow;

#define RFS_HUB_KEPT_MAX 65536 /* sizes held for the hub's next round */

/* A commit reported to the hub: which logs it touched. */
typedef struct rfs_change {
    char thread_id[RS_ID_MAX + 1];
    char run_id[RS_ID_MAX + 1];
    int rewritten;    /* rows of the thread deleted or changed in place (rfs_hub_rewritten) */
    int dirs_dropped; /* the writer dropped the directories' attributes itself */
    /* An append of this mount: where its lines landed and their length. */
    int placed;
    size_t len;
    rs_placement at;
} rfs_change;

/* lock guards every field below but thread and running (set before the hub thread starts)
 * and store, foreign_version and rewrites (the hub thread's own), and the followers' fields
 * follow.c marks "under the hub lock". */
struct rfs_hub {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* work for the hub thread */
    pthread_cond_t done; /* the hub finished a round */
    pthread_cond_t left; /* a closing follower's last user left */
    pthread_t thread;
    int running;
    int stop;
    rs_store *store;         /* the hub's own connection */
    int64_t foreign_version; /* rs_store_foreign_version at the last probe */
    int64_t rewrites;        /* rs_store_rewrites as the kernel's copy last stood */
    rfs_change queue[RFS_HUB_QUEUE_MAX];
    size_t queued;
    int overflow;       /* more changes than the queue holds: check everything */
    uint64_t requested; /* rounds asked for */
    uint64_t finished;  /* rounds done */
    struct {
        uint64_t ino;
    } inval[RFS_HUB_QUEUE_MAX]; /* logs getattr found changed */
    size_t ninval;
    rfs_follow *followers;
    int serve_asked; /* a dirty follower parked: serve it in a round */
    rs_size *kept;   /* sizes rfs_hub_keep_size took, to write at the next round */
    size_t nkept, kept_cap;
};

/* A CLOCK_REALTIME deadline ms from now, for pthread_cond_timedwait. */
void rfs_hub_deadline_in(struct timespec *ts, long ms);

#endif
