/* retain.c — see retain.h. The passes run beside the requests: an expiry is one write
 * transaction per run, and the change hub tells the kernel what went, as for any writer. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hub.h"
#include "log.h"
#include "retain.h"
#include "rs_util.h"

#define RETAIN_PERIOD_S 3600

struct rfs_retain {
    pthread_t thread;
    pthread_mutex_t lock; /* guards stop */
    pthread_cond_t wake;  /* signalled at stop */
    int stop;
    int64_t period_s;
};

static void retain_pass(rfs_mount *m)
{
    rs_store *s;
    rs_err err = {0};
    rs_buf warn = RS_BUF_INIT, policy = RS_BUF_INIT;
    if (rs_store_open(&s, m->opt.store, &m->store_opt, &err)) {
        rfs_log("retention: cannot open the store: %s", err.msg);
        return;
    }
    rs_expire_opts o = RS_EXPIRE_INIT;
    o.older_than_s = m->opt.retain_s;
    o.thread_id = m->opt.only_thread;
    o.user = m->opt.user;
    if (!rs_buf_addf(&policy, "retain %s", m->opt.retain))
        o.policy = policy.buf;
    int n = rs_store_expire(s, &o, NULL, NULL, &warn, &err);
    rs_store_close(s);
    /* This process's commits are not taken for another's: the hub looks at everything
     * (a failed pass may have expired some runs before it failed). */
    if (n != 0)
        rfs_hub_changed_all(m);
    if (n < 0)
        rfs_log("retention: %s", err.msg);
    else if (n > 0)
        rfs_log("retention: %d run%s older than %s expired%s%s", n, n == 1 ? "" : "s",
                m->opt.retain, warn.len ? "; " : "", warn.len ? warn.buf : "");
    rs_buf_release(&warn);
    rs_buf_release(&policy);
}

static void *retain_main(void *arg)
{
    rfs_mount *m = arg;
    struct rfs_retain *r = m->retain;
    pthread_mutex_lock(&r->lock);
    while (!r->stop) {
        pthread_mutex_unlock(&r->lock);
        retain_pass(m);
        pthread_mutex_lock(&r->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += r->period_s;
        while (!r->stop && pthread_cond_timedwait(&r->wake, &r->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int rfs_retain_start(rfs_mount *m)
{
    if (m->opt.retain_s <= 0)
        return 0;
    struct rfs_retain *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    /* RUNFS_RETAIN_PERIOD (seconds) is for the tests, which cannot wait an hour. */
    const char *env = getenv("RUNFS_RETAIN_PERIOD");
    r->period_s = env && atoll(env) > 0 ? atoll(env) : RETAIN_PERIOD_S;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    m->retain = r;
    int rc = pthread_create(&r->thread, NULL, retain_main, m);
    if (rc) {
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->lock);
        free(r);
        m->retain = NULL;
        return -rc;
    }
    return 0;
}

void rfs_retain_stop(rfs_mount *m)
{
    struct rfs_retain *r = m->retain;
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stop = 1;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r);
    m->retain = NULL;
}
