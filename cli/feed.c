/* feed.c — `runfs changes`: the lines of changes/since/<N> (changes/follow/<N> with
 * --follow), printed as the mount shows them. A store that exists is opened read-write so
 * that what other writers did is numbered first (as a mount's read does); it is never
 * created. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "changes.h"
#include "feed.h"
#include "rs_util.h"

static int usage(const char *what)
{
    fprintf(stderr, "runfs changes: %s (see 'runfs changes --help')\n", what);
    return 2;
}

static int parse_number(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < 0)
        return -EINVAL;
    *out = n;
    return 0;
}

static int store_open(rs_store **s, const char *path)
{
    rs_options opt = RS_OPTIONS_INIT;
    int uri = strncmp(path, "postgresql:", 11) == 0 || strncmp(path, "postgres:", 9) == 0;
    struct stat st;
    opt.read_only = !uri && stat(path, &st) != 0; /* then the open says there is none */
    rs_err err = {0};
    int rc = rs_store_open(s, path, &opt, &err);
    if (rc == -EACCES || rc == -EROFS || rc == -EPERM) {
        opt.read_only = 1; /* a store this user may only read */
        memset(&err, 0, sizeof err);
        rc = rs_store_open(s, path, &opt, &err);
    }
    if (rc)
        fprintf(stderr, "runfs: %s\n", err.msg);
    return rc ? 2 : 0;
}

int rfs_cmd_changes(int argc, char **argv)
{
    static const struct option longs[] = {
        {"since", required_argument, NULL, 's'},          {"follow", no_argument, NULL, 'f'},
        {"follow-timeout", required_argument, NULL, 't'}, {"user", required_argument, NULL, 'u'},
        {"thread", required_argument, NULL, 'T'},         {NULL, 0, NULL, 0},
    };
    int64_t since = 0;
    int follow = 0;
    double timeout = 1800;
    const char *user = NULL, *thread = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        char *end;
        switch (c) {
        case 's':
            if (parse_number(optarg, &since))
                return usage("--since takes a change number (0 or more)");
            break;
        case 'f': follow = 1; break;
        case 't':
            timeout = strtod(optarg, &end);
            if (!*optarg || *end || !isfinite(timeout) || timeout <= 0)
                return usage("--follow-timeout takes a positive number of seconds");
            break;
        case 'u': user = optarg; break;
        case 'T': thread = optarg; break;
        default: return usage("unknown option or missing value");
        }
    }
    if (argc - optind != 1)
        return usage("expected STORE");
    if ((user && !rs_id_valid(user)) || (thread && !rs_id_valid(thread)))
        return usage("--user and --thread take 1-64 of [A-Za-z0-9_-]");
    rs_store *s;
    int rc = store_open(&s, argv[optind]);
    if (rc)
        return rc;
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    int64_t version = 0, seen = -1;
    int64_t until = rs_clock_ns(CLOCK_MONOTONIC) + (int64_t)(timeout * 1e9);
    for (;;) {
        rs_store_data_version(s, &version);
        if (version != seen) {
            int64_t before = since;
            seen = version;
            if ((rc = rfs_changes_render(s, user, thread, since, &out, &since, &err)))
                break;
            if (out.len && fwrite(out.buf, 1, out.len, stdout) != out.len) {
                rc = -EIO;
                break;
            }
            rs_buf_reset(&out);
            if (fflush(stdout)) {
                rc = -EIO;
                break;
            }
            if (since > before)
                until = rs_clock_ns(CLOCK_MONOTONIC) + (int64_t)(timeout * 1e9);
        }
        if (!follow || rs_clock_ns(CLOCK_MONOTONIC) >= until)
            break;
        /* A change another process commits moves the data version: looked at 50 times a
         * second, as a mount's hub does. */
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    rs_buf_release(&out);
    rs_store_close(s);
    if (rc) {
        fprintf(stderr, "runfs changes: %s\n", *err.msg ? err.msg : strerror(-rc));
        return 1;
    }
    return 0;
}
