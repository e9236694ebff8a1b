/* progress.c — the terminal-only progress line of the CLI commands. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"
#include "runstore.h"
#include "rs_util.h"

struct rfs_progress {
    const char *verb;
    const char *unit;
    int64_t count;
    int64_t next_check; /* the count at which the clock is looked at again */
    int64_t bytes;      /* of total, done */
    int64_t total;      /* bytes; 0: not known */
    double start;
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
        p->start = p->last_draw = now_s();
    }
    return p;
}

void rfs_progress_total(rfs_progress *p, int64_t bytes)
{
    if (p)
        p->total = bytes > 0 ? bytes : 0;
}

/* bytes in MiB, or KiB below one MiB, one decimal. */
static void put_size(double bytes, const char *suffix)
{
    int mib = bytes >= 1048576.0;
    fprintf(stderr, "%.1f %s%s", bytes / (mib ? 1048576.0 : 1024.0), mib ? "MiB" : "KiB", suffix);
}

/* The total, the rate and the time left, as far as the time gone lets them be known. */
static void draw_total(const rfs_progress *p, double t)
{
    int64_t done = p->bytes < p->total ? p->bytes : p->total;
    fputs(", ", stderr);
    put_size((double)done, " of ");
    put_size((double)p->total, "");
    fprintf(stderr, " (%d%%)", (int)(100 * done / p->total));
    double rate = t > p->start ? (double)done / (t - p->start) : 0;
    if (rate <= 0)
        return;
    fputs(", ", stderr);
    put_size(rate, "/s");
    long long left = (long long)((double)(p->total - done) / rate + 0.5);
    if (left >= 3600)
        fprintf(stderr, ", %lld:%02lld:%02lld left", left / 3600, left / 60 % 60, left % 60);
    else
        fprintf(stderr, ", %lld:%02lld left", left / 60, left % 60);
}

void rfs_progress_step(rfs_progress *p, int64_t n, int64_t bytes)
{
    if (!p)
        return;
    p->count += n;
    p->bytes += bytes;
    if (p->count < p->next_check)
        return;
    p->next_check = p->count + 1024;
    double t = now_s();
    if (t - p->last_draw < 0.2)
        return;
    p->last_draw = t;
    p->drawn = 1;
    fprintf(stderr, "\r\033[K%s: %lld %s", p->verb, (long long)p->count, p->unit);
    if (p->total)
        draw_total(p, t);
    fflush(stderr);
}

void rfs_progress_tick(rfs_progress *p, int64_t n)
{
    rfs_progress_step(p, n, 0);
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
