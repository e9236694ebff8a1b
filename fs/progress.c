/* progress.c — the terminal-only progress line of the CLI commands. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"
#include "runstore.h"

struct rfs_progress {
    const char *verb;
    const char *unit;
    int64_t count;
    int64_t next_check; /* the count at which the clock is looked at again */
    double last_draw;
    int drawn;
};

static double now_s(void)
{
    return (double)rs_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

rfs_progress *rfs_progress_new(const char *verb, const char *unit)
{
    if (!isatty(STDERR_FILENO))
        return NULL;
    rfs_progress *p = calloc(1, sizeof *p);
    if (p) {
        p->verb = verb;
        p->unit = unit;
        p->last_draw = now_s();
    }
    return p;
}

void rfs_progress_tick(rfs_progress *p, int64_t n)
{
    if (!p)
        return;
    p->count += n;
    if (p->count < p->next_check)
        return;
    p->next_check = p->count + 1024;
    double t = now_s();
    if (t - p->last_draw < 0.2)
        return;
    p->last_draw = t;
    p->drawn = 1;
    fprintf(stderr, "\r\033[K%s: %lld %s", p->verb, (long long)p->count, p->unit);
    fflush(stderr);
}

void rfs_progress_clear(rfs_progress *p)
{
    if (p && p->drawn) {
        fputs("\r\033[K", stderr);
        p->drawn = 0;
    }
}

void rfs_progress_end(rfs_progress *p)
{
    rfs_progress_clear(p);
    free(p);
}

void rfs_progress_done(rfs_progress *p, const char *fmt, ...)
{
    if (!p)
        return;
    rfs_progress_clear(p);
    fprintf(stderr, "%s: ", p->verb);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    free(p);
}
