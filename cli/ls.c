/* ls.c — `runfs ls`: what `ls` of a directory on a mount shows, from the store directly,
 * through the listing the mount makes (rfs_view_entries) and the stats it gives: the same
 * names in the order `LC_ALL=C ls` prints them, and with -l the modes, exact sizes and
 * times a default mount (read-write, umask 022) shows. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ls.h"
#include "view.h"
#include "rs_util.h"

typedef struct ls_entry {
    char *name;
    rfs_node node;
    rfs_stat st;
} ls_entry;

typedef struct ls_list {
    ls_entry *v;
    size_t n, cap;
    const rfs_node *dir;
    int all;
} ls_list;

static int usage(const char *what)
{
    fprintf(stderr, "runfs ls: %s (see 'runfs ls --help')\n", what);
    return 2;
}

static int ls_add(void *ctx, const char *name, int is_dir, const int64_t *times)
{
    (void)is_dir;
    (void)times;
    ls_list *l = ctx;
    /* As ls without -a: names starting with '.' (.runfs) are hidden. */
    if (name[0] == '.' && !l->all)
        return 0;
    if (rs_array_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v))
        return -ENOMEM;
    ls_entry *e = &l->v[l->n];
    memset(e, 0, sizeof *e);
    if (rfs_node_child(l->dir, name, &e->node))
        return 0; /* the listing gives only names that lead back to a node */
    if (!(e->name = strdup(name)))
        return -ENOMEM;
    l->n++;
    return 0;
}

/* The C locale's order, which `LC_ALL=C ls` uses: bytes compared unsigned. */
static int ls_cmp(const void *a, const void *b)
{
    return strcmp(((const ls_entry *)a)->name, ((const ls_entry *)b)->name);
}

static int add_mode(rs_buf *out, unsigned mode)
{
    static const char bits[] = "rwxrwxrwx";
    int rc = rs_buf_addch(out, S_ISDIR(mode) ? 'd' : '-');
    for (int i = 0; !rc && i < 9; i++)
        rc = rs_buf_addch(out, mode & (0400u >> i) ? bits[i] : '-');
    return rc;
}

/* A time as the layout writes created_at: UTC, microseconds. */
static int add_time(rs_buf *out, int64_t ns)
{
    time_t secs = (time_t)(ns / 1000000000LL);
    struct tm tm;
    if (!gmtime_r(&secs, &tm))
        return -EOVERFLOW;
    return rs_buf_addf(out, "%04d-%02d-%02dT%02d:%02d:%02d.%06lld+00:00", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                       (long long)(ns % 1000000000LL / 1000));
}

static int print_entries(const ls_list *l, int lng)
{
    int width = 1;
    for (size_t i = 0; lng && i < l->n; i++) {
        int w = 1;
        for (int64_t v = l->v[i].st.size; v >= 10; v /= 10)
            w++;
        width = w > width ? w : width;
    }
    rs_buf line = RS_BUF_INIT;
    int rc = 0;
    for (size_t i = 0; !rc && i < l->n; i++) {
        const ls_entry *e = &l->v[i];
        rs_buf_reset(&line);
        if (lng && ((rc = add_mode(&line, rfs_node_mode(e->node.kind, 1, 0, 022))) ||
                    (rc = rs_buf_addf(&line, " %*lld ", width, (long long)e->st.size)) ||
                    (rc = add_time(&line, e->st.mtime_ns)) || (rc = rs_buf_addch(&line, ' '))))
            break;
        if ((rc = rs_buf_addstr(&line, e->name)) || (rc = rs_buf_addch(&line, '\n')))
            break;
        if (fwrite(line.buf, 1, line.len, stdout) != line.len)
            rc = -EIO;
    }
    rs_buf_release(&line);
    return rc;
}

/* The listing of PATH in l (a file: itself, named as given), each entry stat'ed for -l. */
static int ls_path(rs_store *s, rfs_scope *sc, const char *path, ls_list *l, int lng, rs_err *err)
{
    rfs_node n;
    rfs_stat st;
    int rc = rfs_node_parse(path, &n);
    if (rc || (rc = rfs_view_stat(s, sc, &n, &st, err)))
        return rc;
    if (!rfs_node_is_dir(n.kind)) {
        if (rs_array_grow(&l->v, &l->cap, 1, sizeof *l->v) || !(l->v[0].name = strdup(path)))
            return -ENOMEM;
        l->v[0].node = n;
        l->v[0].st = st;
        l->n = 1;
        return 0;
    }
    l->dir = &n;
    if ((rc = rfs_view_entries(s, sc, &n, ls_add, l, err)))
        return rc;
    qsort(l->v, l->n, sizeof *l->v, ls_cmp);
    /* A listing's stats of one thread's or run's files read its facts once. */
    rfs_info_memo memo = {0};
    sc->memo = &memo;
    for (size_t i = 0; lng && !rc && i < l->n; i++)
        rc = rfs_view_stat(s, sc, &l->v[i].node, &l->v[i].st, err);
    sc->memo = NULL;
    return rc;
}

int rfs_cmd_ls(int argc, char **argv)
{
    enum { OPT_USER = 256 };
    static const struct option longopts[] = {
        {"user", required_argument, NULL, OPT_USER},
        {"all", no_argument, NULL, 'a'},
        {NULL, 0, NULL, 0},
    };
    ls_list l = {0};
    int lng = 0, c;
    const char *user = NULL;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "la", longopts, NULL)) != -1) {
        if (c == 'l')
            lng = 1;
        else if (c == 'a')
            l.all = 1;
        else if (c == OPT_USER && rs_id_valid(optarg))
            user = optarg;
        else if (c == OPT_USER)
            return usage("--user must be 1-64 of [A-Za-z0-9_-]");
        else
            return usage("unknown option or missing value");
    }
    if (argc - optind < 1 || argc - optind > 2)
        return usage("expected STORE [PATH]");
    const char *path = argc - optind == 2 ? argv[optind + 1] : ".";
    rs_options opt = RS_OPTIONS_INIT;
    opt.read_only = 1;
    opt.owners_apart = user != NULL; /* as a --user mount opens it */
    rs_store *s;
    rs_err err = {0};
    if (rs_store_open(&s, argv[optind], &opt, &err)) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        return 2;
    }
    /* What a mount made now shows for the files with no store time (README, ...). */
    rfs_scope sc = {.user = user, .read_only = 0, .mount_ns = rs_clock_ns(CLOCK_REALTIME)};
    int rc = ls_path(s, &sc, path, &l, lng, &err);
    if (!rc)
        rc = print_entries(&l, lng);
    rs_store_close(s);
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i].name);
    free(l.v);
    if (rc) {
        fprintf(stderr, "runfs: %s: %s\n", path, *err.msg ? err.msg : strerror(-rc));
        return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
