/* keeper.c — see keeper.h. Keeping a run costs what its first diff would (its rows read and
 * hashed once); done here, after the run went quiet, it costs no write anything: a put or an
 * append that kept as it went paid 15-50% more CPU (bench/RESULTS.md "diff"), which issue 46
 * forbids. What is kept is checked by every diff as before (rewrites, count, last seq; the
 * hunks' lines hashed again), so a run changed since only costs its diff the rows. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
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
/* Runs waiting to be kept; past it a run appended to is not kept (its diff reads rows). */
#define DUE_MAX 4096

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
    int busy;            /* a run is being kept */
    int64_t quiet_ns;    /* how long a run stays quiet before it is kept */
    atomic_int_fast64_t kept;
    rs_store *s; /* the keeper thread's own connection (NULL until its first run) */
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

/* One run's step data brought up to date, a slice of rows at a time. */
static void keep_run(rfs_mount *m, struct rfs_keeper *k, const due_run *d)
{
    rs_err err = {0};
    if (!k->s && rs_store_open(&k->s, m->opt.store, &m->store_opt, &err)) {
        k->s = NULL;
        rfs_log("keeping step data: cannot open the store: %s", err.msg);
        return;
    }
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
    pthread_mutex_lock(&k->lock);
    while (!k->stop) {
        /* The run quiet the longest. */
        size_t at = k->n;
        for (size_t i = 0; i < k->n; i++)
            if (at == k->n || k->due[i].last_ns < k->due[at].last_ns)
                at = i;
        if (at == k->n) {
            pthread_cond_wait(&k->wake, &k->lock);
            continue;
        }
        int64_t ready = k->due[at].last_ns + k->quiet_ns;
        if (ready > now_ns()) {
            wait_until(k, ready);
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
    size_t i = 0;
    while (i < k->n && (strcmp(k->due[i].run_id, run_id) || strcmp(k->due[i].thread_id, thread_id)))
        i++;
    if (i < k->n) {
        /* Due later: the keeper finds it so when it wakes for it (no wake-up an append). */
        k->due[i].last_ns = now;
    } else if (k->n < DUE_MAX && !rs_array_grow(&k->due, &k->cap, k->n + 1, sizeof *k->due) &&
               rs_fmt(k->due[i].thread_id, sizeof k->due[i].thread_id, "%s", thread_id) >= 0 &&
               rs_fmt(k->due[i].run_id, sizeof k->due[i].run_id, "%s", run_id) >= 0) {
        k->due[k->n++].last_ns = now;
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
    *due = (int64_t)k->n + k->busy;
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
