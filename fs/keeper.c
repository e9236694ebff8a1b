/* keeper.c — see keeper.h. Keeping a run costs what its first diff would (its rows read and
 * hashed once); done here, after the run went quiet, it costs no write anything: a put or an
 * append that kept as it went paid 15-50% more CPU (bench/RESULTS.md "diff"), which issue 46
 * forbids. What is kept is checked by every diff as before (rewrites, count, last seq; the
 * hunks' lines hashed again), so a run changed since only costs its diff the rows. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "hub.h"
#include "keeper.h"
#include "log.h"
#include "rs_util.h"
#include "stepdiff.h"

/* Rows a slice reads before the keeper looks again at whether it should give way. */
#define SLICE_ROWS 4096
/* No slice within this long of an append of this mount: the appends go first. */
#define YIELD_MS 20
/* Runs waiting to be kept. The change feed is read only while there is room (what it
 * names past the bound waits in the store, read oldest first as runs are kept); past it a
 * run this mount appended to, or one of a PostgreSQL commit's runs beyond a page, is not
 * kept (its first diff reads its rows). */
#define DUE_MAX 4096
/* The change feed is read at most this often, after another process committed. */
#define FEED_MS 200
/* Runs a read of the feed takes at most: its query's work and what it holds go by this, not
 * by how many runs changed. */
#define FEED_PAGE 256

typedef struct due_run {
    char thread_id[RS_ID_MAX + 1];
    char run_id[RS_ID_MAX + 1];
    int64_t last_ns; /* its last append (CLOCK_MONOTONIC) */
} due_run;

struct rfs_keeper {
    pthread_t thread;
    pthread_mutex_t lock; /* guards every field below but kept and s */
    pthread_cond_t wake;
    int stop;
    due_run *due;
    size_t n, cap;
    int64_t appended_ns; /* this mount's last append, of any run */
    int busy;            /* a run is being kept, or the feed read */
    int64_t quiet_ns;    /* how long a run stays quiet before it is kept */
    int foreign;         /* another process committed since the feed was last read */
    int feed_more;       /* the feed's last page was full: read on once there is room */
    atomic_int_fast64_t kept;
    /* The keeper thread's own: its connection (NULL until it first needs one), the change
     * feed's number read up to (-1: not known yet) and when it was read. */
    rs_store *s;
    int64_t feed_at;
    int64_t fed_ns;
};

static int64_t now_ns(void)
{
    return rs_clock_ns(CLOCK_MONOTONIC);
}

/* Wait (lock held) until ns on CLOCK_MONOTONIC, or a signal. */
static void wait_until(struct rfs_keeper *k, int64_t ns)
{
    struct timespec ts;
    rfs_hub_deadline_in(&ts, (long)((ns - now_ns()) / 1000000 + 1));
    pthread_cond_timedwait(&k->wake, &k->lock, &ts);
}

/* Give way (lock held): back when no append of this mount came for YIELD_MS; 1 at stop. */
static int give_way(struct rfs_keeper *k)
{
    int64_t until;
    while (!k->stop && (until = k->appended_ns + YIELD_MS * 1000000LL) > now_ns())
        wait_until(k, until);
    return k->stop;
}

/* The keeper's connection, opened at its first use: 0 or -errno (logged). */
static int keeper_store(rfs_mount *m, struct rfs_keeper *k)
{
    rs_err err = {0};
    if (!k->s && rs_store_open(&k->s, m->opt.store, &m->store_opt, &err)) {
        k->s = NULL;
        rfs_log("keeping step data: cannot open the store: %s", err.msg);
        return -EIO;
    }
    return 0;
}

/* The run due to be kept once quiet from now on (lock held), as of now: 0, or -ENOSPC past
 * DUE_MAX, -ENOMEM. */
static int due_add(struct rfs_keeper *k, const char *thread_id, const char *run_id, int64_t now)
{
    size_t i = 0;
    while (i < k->n && (strcmp(k->due[i].run_id, run_id) || strcmp(k->due[i].thread_id, thread_id)))
        i++;
    if (i < k->n) {
        /* Due later: the keeper finds it so when it wakes for it (no wake-up an append). */
        k->due[i].last_ns = now;
        return 0;
    }
    if (k->n >= DUE_MAX)
        return -ENOSPC;
    if (rs_array_grow(&k->due, &k->cap, k->n + 1, sizeof *k->due) ||
        rs_fmt(k->due[i].thread_id, sizeof k->due[i].thread_id, "%s", thread_id) < 0 ||
        rs_fmt(k->due[i].run_id, sizeof k->due[i].run_id, "%s", run_id) < 0)
        return -ENOMEM;
    k->due[k->n++].last_ns = now;
    pthread_cond_signal(&k->wake);
    return 0;
}

/* ---- runs other processes wrote, named by the change feed ----
 * The hub learns that another process committed (one probe a tick), not which runs; the
 * feed names them: each run once at its latest change, oldest first, a page at a time. A
 * run deleted is no longer due; a run kept already and current (by the mount that wrote it,
 * or a diff) costs its keeping a read of what is kept, no row. */

static int feed_run(void *ctx, const rs_change *c)
{
    struct rfs_keeper *k = ctx;
    pthread_mutex_lock(&k->lock);
    if (c->deleted) {
        for (size_t i = 0; i < k->n; i++)
            if (!strcmp(k->due[i].run_id, c->run_id) && !strcmp(k->due[i].thread_id, c->thread_id))
                k->due[i] = k->due[--k->n];
    } else {
        (void)due_add(k, c->thread_id, c->run_id, now_ns());
    }
    pthread_mutex_unlock(&k->lock);
    return 0;
}

/* Where the feed stands now: the keeper reads what commits after it (the runs of a store
 * written before the mount are not its to keep). */
static void feed_head(rfs_mount *m, struct rfs_keeper *k)
{
    rs_err err = {0};
    int rc = keeper_store(m, k);
    if (!rc && (rc = rs_store_changes_head(k->s, &k->feed_at, &err)) != 0) {
        k->feed_at = -1;
        /* A store whose feed nobody read (a DeerFlow database) is not numbered here: that
         * reads every run it holds. Its foreign runs wait until a reader of the feed has
         * numbered them; until then the keeper looks again at each foreign commit. */
        if (rc != -ENODATA)
            rfs_log("keeping step data: cannot read the change feed: %s", err.msg);
    }
}

/* A page of the feed (lock not held), as much as the runs due leave room for. */
static void feed_read(rfs_mount *m, struct rfs_keeper *k, size_t room)
{
    rs_err err = {0};
    int rc = 0;
    if (k->feed_at < 0)
        feed_head(m, k); /* not read at the start: the changes before now are not seen */
    else if (!(rc = keeper_store(m, k)))
        rc = rs_store_changes_page(k->s, k->feed_at, (int64_t)(room < FEED_PAGE ? room : FEED_PAGE),
                                   m->opt.user, m->opt.only_thread, feed_run, k, &k->feed_at, &err);
    if (rc < 0 && err.msg[0])
        rfs_log("keeping step data: cannot read the change feed: %s", err.msg);
    pthread_mutex_lock(&k->lock);
    k->feed_more = rc == 1;
    pthread_mutex_unlock(&k->lock);
}

/* One run's step data brought up to date, a slice of rows at a time. */
static void keep_run(rfs_mount *m, struct rfs_keeper *k, const due_run *d)
{
    rs_err err = {0};
    if (keeper_store(m, k))
        return;
    rs_target t = {.thread_id = d->thread_id, .run_id = d->run_id, .user = m->opt.user};
    rfs_stepkeep *sk;
    int rc = rfs_stepkeep_open(k->s, &t, &sk, &err), stopped = 0;
    if (rc) {
        /* A run deleted since is not an error of the keeper's. */
        if (rc != -ENOENT)
            rfs_log("keeping step data of %s/%s: %s", t.thread_id, t.run_id, err.msg);
        return;
    }
    while (!stopped && (rc = rfs_stepkeep_more(sk, SLICE_ROWS, &err)) == 1) {
        pthread_mutex_lock(&k->lock);
        stopped = give_way(k);
        pthread_mutex_unlock(&k->lock);
    }
    if (!stopped && !rc) {
        pthread_mutex_lock(&k->lock);
        stopped = give_way(k);
        pthread_mutex_unlock(&k->lock);
    }
    /* A read that failed or was stopped keeps nothing: the run's first diff reads rows. */
    int kept = rfs_stepkeep_close(sk, !stopped && !rc);
    if (kept == 1)
        atomic_fetch_add(&k->kept, 1);
    if (rc < 0)
        rfs_log("keeping step data of %s/%s: %s", t.thread_id, t.run_id, err.msg);
}

static void *keeper_main(void *arg)
{
    rfs_mount *m = arg;
    struct rfs_keeper *k = m->keeper;
    /* The lowest CPU priority, for this thread only (Linux's nice is a thread's): requests
     * and appends go first when the cores are busy. Best effort. */
    (void)setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
    feed_head(m, k);
    pthread_mutex_lock(&k->lock);
    while (!k->stop) {
        int64_t now = now_ns(), wake = INT64_MAX;
        /* The feed, when another process committed (or a page left more), there is room
         * for what it names, and it was not read for FEED_MS. */
        if ((k->foreign || k->feed_more) && k->n < DUE_MAX) {
            if (now - k->fed_ns >= FEED_MS * 1000000LL) {
                if (give_way(k))
                    break;
                k->foreign = 0;
                k->fed_ns = now_ns();
                size_t room = DUE_MAX - k->n;
                k->busy = 1;
                pthread_mutex_unlock(&k->lock);
                feed_read(m, k, room);
                pthread_mutex_lock(&k->lock);
                k->busy = 0;
                continue;
            }
            wake = k->fed_ns + FEED_MS * 1000000LL;
        }
        /* The run quiet the longest. */
        size_t at = k->n;
        for (size_t i = 0; i < k->n; i++)
            if (at == k->n || k->due[i].last_ns < k->due[at].last_ns)
                at = i;
        int64_t ready = at < k->n ? k->due[at].last_ns + k->quiet_ns : INT64_MAX;
        if (ready > now) {
            if (ready < wake)
                wake = ready;
            if (wake == INT64_MAX)
                pthread_cond_wait(&k->wake, &k->lock);
            else
                wait_until(k, wake);
            continue;
        }
        if (give_way(k))
            break;
        due_run d = k->due[at];
        k->due[at] = k->due[--k->n];
        k->busy = 1;
        pthread_mutex_unlock(&k->lock);
        keep_run(m, k, &d);
        pthread_mutex_lock(&k->lock);
        k->busy = 0;
    }
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

void rfs_keeper_note(rfs_mount *m, const char *thread_id, const char *run_id)
{
    struct rfs_keeper *k = m->keeper;
    if (!k || !run_id || !run_id[0])
        return;
    int64_t now = now_ns();
    pthread_mutex_lock(&k->lock);
    k->appended_ns = now;
    (void)due_add(k, thread_id, run_id, now);
    pthread_mutex_unlock(&k->lock);
}

void rfs_keeper_foreign(rfs_mount *m)
{
    struct rfs_keeper *k = m->keeper;
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    if (!k->foreign) {
        k->foreign = 1;
        pthread_cond_signal(&k->wake);
    }
    pthread_mutex_unlock(&k->lock);
}

void rfs_keeper_counts(rfs_mount *m, int64_t *kept, int64_t *due)
{
    struct rfs_keeper *k = m->keeper;
    *kept = *due = 0;
    if (!k)
        return;
    *kept = atomic_load(&k->kept);
    pthread_mutex_lock(&k->lock);
    /* The feed not read since another process committed counts as one run to look at. */
    *due = (int64_t)k->n + k->busy + (k->foreign || k->feed_more);
    pthread_mutex_unlock(&k->lock);
}

int rfs_keeper_start(rfs_mount *m)
{
    /* A read-only mount appends nothing; where each uid is its own owner, the step data
     * of one owner's view is not another's (kept by the diffs themselves). */
    if (m->opt.read_only || m->opt.user_from_uid)
        return 0;
    /* RUNFS_NO_STEP_KEEPER is for the bench (scripts/bench diff), which times appends with
     * and without the keeper in one build, interleaved. */
    const char *off = getenv("RUNFS_NO_STEP_KEEPER");
    if (off && *off)
        return 0;
    struct rfs_keeper *k = calloc(1, sizeof *k);
    if (!k)
        return -ENOMEM;
    /* RUNFS_STEP_KEEPER_QUIET_MS is for the tests, which need not wait a second a run. */
    const char *quiet = getenv("RUNFS_STEP_KEEPER_QUIET_MS");
    k->quiet_ns = (quiet && atoll(quiet) > 0 ? atoll(quiet) : RFS_KEEPER_QUIET_MS) * 1000000LL;
    k->feed_at = -1;
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->wake, NULL);
    m->keeper = k;
    int rc = pthread_create(&k->thread, NULL, keeper_main, m);
    if (rc) {
        pthread_cond_destroy(&k->wake);
        pthread_mutex_destroy(&k->lock);
        free(k);
        m->keeper = NULL;
        return -rc;
    }
    return 0;
}

void rfs_keeper_stop(rfs_mount *m)
{
    struct rfs_keeper *k = m->keeper;
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    k->stop = 1;
    pthread_cond_signal(&k->wake);
    pthread_mutex_unlock(&k->lock);
    pthread_join(k->thread, NULL);
    if (k->s)
        rs_store_close(k->s);
    pthread_cond_destroy(&k->wake);
    pthread_mutex_destroy(&k->lock);
    free(k->due);
    free(k);
    m->keeper = NULL;
}
