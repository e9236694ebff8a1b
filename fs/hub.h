/* hub.h — the change hub's state, shared by notify.c (the hub thread and the kernel's
 * cache) and follow.c (live followers). Never included outside fs/. */
#ifndef RFS_HUB_H
#define RFS_HUB_H

#include <time.h>

#include "mount.h"

#define TICK_MS 20
#define QUEUE_MAX 64

typedef struct change {
    char thread_id[RS_ID_MAX + 1];
    char run_id[RS_ID_MAX + 1];
    int deleted;
    /* An append of this mount: where its lines landed and their length. */
    int placed;
    size_t len;
    rs_placement at;
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
    struct { uint64_t ino; } inval[QUEUE_MAX];   /* logs getattr found changed */
    size_t ninval;
    rfs_follow *followers;
    int serve_asked;             /* a dirty follower parked: serve it in a round */
};

/* CLOCK_MONOTONIC now, for follower deadlines. */
int64_t rfs_hub_now_ns(void);
/* A CLOCK_REALTIME deadline ms from now, for pthread_cond_timedwait. */
void rfs_hub_deadline_in(struct timespec *ts, long ms);
/* In the hub thread, hub lock not held: answer parked followers the queued changes (or,
 * with everything, any change) may have fed. */
void rfs_hub_serve_followers(rfs_hub *hub, const change *queue, size_t queued, int everything);

#endif
