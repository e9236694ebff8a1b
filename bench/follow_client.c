/* follow_client.c — the benchmark's two halves (scripts/bench-follow builds it on the fly).
 *
 *   follow_client follow FEED N EXPECT READY_FILE
 *       open FEED (a follow.jsonl) N times, read each in its own thread until EOF; every
 *       follower must get EXPECT lines with seq 1..EXPECT in order, none twice, none skipped.
 *       READY_FILE is created once all N are open. Latency of a line = the wall clock when
 *       read() returned it minus its created_at (stamped by the store as it takes the event,
 *       just before the commit). Prints one summary line:
 *         followers=N events=E delivered=D bad=B p50_ms=.. p90_ms=.. p99_ms=.. max_ms=..
 *
 *   follow_client write EVENTS_JSONL N [ONCE_DIR] [RATE]
 *       append N events to EVENTS_JSONL, one write() each (RATE per second, 0: as fast as
 *       the store takes them), then create ONCE_DIR/run.terminal when given.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* created_at as the store renders it: YYYY-MM-DDTHH:MM:SS.ffffff+00:00 (UTC). */
static int parse_created(const char *p, double *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int us = 0;
    if (sscanf(p, "%4d-%2d-%2dT%2d:%2d:%2d.%6d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &us) != 7)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = (double)timegm(&tm) + us / 1e6;
    return 0;
}

typedef struct follower {
    pthread_t thread;
    int fd;
    long expect;
    long got;
    long bad;      /* out of order, twice, skipped, unparsable */
    float *lat_ms; /* expect entries */
} follower;

static void take_line(follower *f, const char *line, size_t len, double at)
{
    static const char seq_key[] = "\"seq\":";
    static const char created_key[] = "\"created_at\":\"";
    const char *s = memmem(line, len, seq_key, sizeof seq_key - 1);
    const char *c = memmem(line, len, created_key, sizeof created_key - 1);
    double created;
    if (!s || !c || parse_created(c + sizeof created_key - 1, &created)) {
        f->bad++;
        return;
    }
    long seq = strtol(s + sizeof seq_key - 1, NULL, 10);
    if (seq != f->got + 1 || f->got >= f->expect) {
        f->bad++;
        if (seq <= f->got)
            return; /* twice: not counted again */
    }
    if (f->got < f->expect)
        f->lat_ms[f->got] = (float)((at - created) * 1e3);
    f->got = seq;
}

static void *follow_main(void *arg)
{
    follower *f = arg;
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        f->bad++;
        return NULL;
    }
    for (;;) {
        if (cap - len < 65536) {
            f->bad++; /* a line over 1 MiB: not this benchmark's */
            break;
        }
        ssize_t n = read(f->fd, buf + len, 65536);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                f->bad++;
            break;
        }
        double at = now_s();
        len += (size_t)n;
        size_t start = 0;
        char *nl;
        while ((nl = memchr(buf + start, '\n', len - start))) {
            take_line(f, buf + start, (size_t)(nl - (buf + start)), at);
            start = (size_t)(nl - buf) + 1;
        }
        memmove(buf, buf + start, len - start);
        len -= start;
    }
    if (len)
        f->bad++; /* a partial last line */
    free(buf);
    close(f->fd);
    return NULL;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static int cmd_follow(const char *feed, int n, long expect, const char *ready)
{
    follower *fs = calloc((size_t)n, sizeof *fs);
    if (!fs)
        return 2;
    for (int i = 0; i < n; i++) {
        fs[i].expect = expect;
        fs[i].lat_ms = calloc((size_t)expect, sizeof(float));
        fs[i].fd = open(feed, O_RDONLY);
        if (fs[i].fd < 0 || !fs[i].lat_ms) {
            fprintf(stderr, "follow_client: %s: %s\n", feed, strerror(errno));
            return 2;
        }
    }
    for (int i = 0; i < n; i++)
        if (pthread_create(&fs[i].thread, NULL, follow_main, &fs[i]) != 0) {
            fprintf(stderr, "follow_client: cannot start a thread\n");
            return 2;
        }
    int rfd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (rfd >= 0)
        close(rfd);
    long delivered = 0, bad = 0, short_feeds = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(fs[i].thread, NULL);
        delivered += fs[i].got < expect ? fs[i].got : expect;
        bad += fs[i].bad;
        short_feeds += fs[i].got != expect;
    }
    size_t total = 0;
    float *all = malloc((size_t)n * (size_t)expect * sizeof(float));
    if (!all)
        return 2;
    for (int i = 0; i < n; i++) {
        long k = fs[i].got < expect ? fs[i].got : expect;
        memcpy(all + total, fs[i].lat_ms, (size_t)k * sizeof(float));
        total += (size_t)k;
    }
    qsort(all, total, sizeof(float), cmp_float);
#define PCT(p) (total ? all[(size_t)((double)(total - 1) * (p))] : 0.0f)
    printf("followers=%d events=%ld delivered=%ld bad=%ld incomplete=%ld "
           "p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f\n",
           n, expect, delivered, bad, short_feeds, PCT(0.50), PCT(0.90), PCT(0.99),
           total ? all[total - 1] : 0.0f);
    return bad || short_feeds ? 1 : 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int cmd_write(const char *path, long n, const char *once_dir, double rate)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0) {
        fprintf(stderr, "follow_client: %s: %s\n", path, strerror(errno));
        return 2;
    }
    char line[512];
    double t0 = now_s();
    for (long i = 1; i <= n; i++) {
        if (rate > 0) {
            double due = t0 + (double)(i - 1) / rate, wait = due - now_s();
            if (wait > 0)
                usleep((useconds_t)(wait * 1e6));
        }
        int len = snprintf(line, sizeof line,
                           "{\"event_type\":\"llm.human.input\",\"content\":{\"type\":\"human\","
                           "\"content\":\"bench %ld\",\"id\":\"h-%ld\"},\"metadata\":"
                           "{\"caller\":\"lead_agent\"}}\n",
                           i, i);
        if (write_all(fd, line, (size_t)len)) {
            fprintf(stderr, "follow_client: write %ld: %s\n", i, strerror(errno));
            return 1;
        }
    }
    close(fd);
    double secs = now_s() - t0;
    if (once_dir && *once_dir) {
        char term[4096];
        snprintf(term, sizeof term, "%s/run.terminal", once_dir);
        int tfd = open(term, O_WRONLY | O_CREAT | O_EXCL, 0644);
        static const char body[] = "{\"content\":{\"status\":\"success\"},\"metadata\":"
                                   "{\"protocol_version\":1,\"recovered\":false}}\n";
        if (tfd < 0 || write_all(tfd, body, sizeof body - 1) || close(tfd)) {
            fprintf(stderr, "follow_client: %s: %s\n", term, strerror(errno));
            return 1;
        }
    }
    printf("wrote=%ld seconds=%.3f rate=%.0f/s\n", n, secs, secs > 0 ? n / secs : 0.0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "follow") == 0)
        return cmd_follow(argv[2], atoi(argv[3]), atol(argv[4]), argv[5]);
    if (argc >= 4 && argc <= 6 && strcmp(argv[1], "write") == 0)
        return cmd_write(argv[2], atol(argv[3]), argc > 4 ? argv[4] : NULL,
                         argc > 5 ? atof(argv[5]) : 0);
    fprintf(stderr, "usage: follow_client follow FEED N EXPECT READY_FILE\n"
                    "       follow_client write EVENTS_JSONL N [ONCE_DIR] [RATE]\n");
    return 2;
}
