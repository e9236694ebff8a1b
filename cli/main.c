/* main.c — the `runfs` command: mount and unmount a store, or work on it directly
 * (put, cat, verify) with the same rendering code the mount uses. Commands and mount options
 * are tables, so --help, the man page and the parser cannot drift apart. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deerflow.h"
#include "feed.h"
#include "ls.h"
#include "evidence.h"
#include "mount.h"
#include "progress.h"
#include "rs_util.h"
#include "stepdiff.h"
#include "umount.h"

/* ---- mount options: each is `--name [ARG]` and also `-o name[=ARG]` ('-' spelled '_') ---- */

typedef struct mount_option {
    const char *name;
    const char *arg; /* the argument's name in help; NULL for a flag */
    const char *help;
    int (*set)(rfs_options *o, const char *value); /* 0, or -EINVAL after a message */
} mount_option;

static int bad_value(const char *what)
{
    fprintf(stderr, "runfs: %s (see 'runfs mount --help')\n", what);
    return -EINVAL;
}

static int set_foreground(rfs_options *o, const char *v)
{
    (void)v;
    o->foreground = 1;
    return 0;
}
static int set_debug(rfs_options *o, const char *v)
{
    (void)v;
    o->debug = o->foreground = 1;
    return 0;
}
static int set_create(rfs_options *o, const char *v)
{
    (void)v;
    o->create = 1;
    return 0;
}
static int set_read_only(rfs_options *o, const char *v)
{
    (void)v;
    o->read_only = 1;
    return 0;
}
static int set_user_from_uid(rfs_options *o, const char *v)
{
    (void)v;
    o->user_from_uid = 1;
    return 0;
}
static int set_allow_delete(rfs_options *o, const char *v)
{
    (void)v;
    o->allow_delete = 1;
    return 0;
}
static int set_allow_redact(rfs_options *o, const char *v)
{
    (void)v;
    o->allow_redact = 1;
    return 0;
}
static int set_allow_unknown(rfs_options *o, const char *v)
{
    (void)v;
    o->allow_unknown = 1;
    return 0;
}
static int set_contract(rfs_options *o, const char *v)
{
    o->contract = v;
    return 0;
}

/* The map is read once the options are parsed (see cmd_mount); a map implies per-uid owners.
 * Set by the option parser on the main thread before anything else runs: no lock. */
static const char *user_map_path;
static int set_user_map(rfs_options *o, const char *v)
{
    o->user_from_uid = 1;
    user_map_path = v;
    return 0;
}
static int set_log(rfs_options *o, const char *v)
{
    o->log_file = v;
    return 0;
}

/* uid= and gid= as FUSE filesystems take them, a number or a name. */
static int set_id(long *out, const char *v, int is_uid)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (*v && !*end && n >= 0) {
        *out = n;
        return 0;
    }
    struct passwd *pw = is_uid ? getpwnam(v) : NULL;
    struct group *gr = is_uid ? NULL : getgrnam(v);
    if (!pw && !gr)
        return bad_value(is_uid ? "uid: no such user" : "gid: no such group");
    *out = pw ? (long)pw->pw_uid : (long)gr->gr_gid;
    return 0;
}

static int set_uid(rfs_options *o, const char *v)
{
    return set_id(&o->uid, v, 1);
}
static int set_gid(rfs_options *o, const char *v)
{
    return set_id(&o->gid, v, 0);
}

static int set_umask(rfs_options *o, const char *v)
{
    char *end;
    long n = strtol(v, &end, 8);
    if (!*v || *end || n < 0 || n > 0777)
        return bad_value("umask takes octal mode bits (umask=022)");
    o->umask = (int)n;
    return 0;
}

static int set_user(rfs_options *o, const char *v)
{
    if (!rs_id_valid(v))
        return bad_value("--user must be 1-64 of [A-Za-z0-9_-]");
    o->user = v;
    return 0;
}

static int set_thread(rfs_options *o, const char *v)
{
    if (!rs_id_valid(v))
        return bad_value("--thread must be a thread id (1-64 of [A-Za-z0-9_-])");
    o->only_thread = v;
    return 0;
}

static int set_sync(rfs_options *o, const char *v)
{
    if (strcmp(v, "full") != 0 && strcmp(v, "normal") != 0)
        return bad_value("--sync is normal or full");
    o->sync_full = strcmp(v, "full") == 0;
    return 0;
}

static int set_follow_timeout(rfs_options *o, const char *v)
{
    char *end;
    double t = strtod(v, &end);
    if (!*v || *end || !(t > 0) || t > 1e9)
        return bad_value("--follow-timeout takes a positive number of seconds");
    o->follow_timeout = t;
    return 0;
}

static int set_max_pending(rfs_options *o, const char *v)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (end == v || *end || errno || n == 0 || v[0] == '-' || n > (SIZE_MAX >> 1) >> shift)
        return bad_value("--max-pending takes a positive number of bytes (K, M or G for KiB, "
                         "MiB, GiB)");
    o->max_pending = (size_t)n << shift;
    return 0;
}

static int set_seal_key(rfs_options *o, const char *v)
{
    o->seal_key = v;
    return 0;
}
static int set_service_name(rfs_options *o, const char *v)
{
    if (!*v)
        return bad_value("--service-name takes a non-empty name");
    o->service_name = v;
    return 0;
}

static int set_retain(rfs_options *o, const char *v)
{
    rs_err err = {0};
    if (rs_duration_parse(v, &o->retain_s, &err))
        return bad_value(err.msg);
    o->retain = v;
    return 0;
}

static int set_seal_key_name(rfs_options *o, const char *v)
{
    o->seal_key_name = v;
    return 0;
}

static int set_stamp_time(rfs_options *o, const char *v)
{
    (void)v;
    o->stamp_time = 1;
    return 0;
}

static const mount_option mount_options[] = {
    {"foreground", NULL, "stay in the foreground, log to stderr (also -f)", set_foreground},
    {"debug", NULL, "foreground, with FUSE's request trace (also -d)", set_debug},
    {"create", NULL, "make the SQLite store if it does not exist", set_create},
    {"read-only", NULL, "mount read-only, as -o ro (also -r)", set_read_only},
    {"user", "NAME", "stamp writes with owner NAME, show only NAME's rows", set_user},
    {"user-from-uid", NULL, "each calling uid is its own owner", set_user_from_uid},
    {"user-map", "FILE", "owners of uids: 'UID OWNER' lines; other uids get EACCES", set_user_map},
    {"thread", "ID", "show that one thread only (for a sandbox)", set_thread},
    {"allow-delete", NULL, "rm -r of a run or thread deletes it", set_allow_delete},
    {"allow-redact", NULL, "a line appended to a run's redactions.jsonl redacts an event",
     set_allow_redact},
    {"retain", "DURATION",
     "expire runs whose newest event is older (30d), at mount and then hourly", set_retain},
    {"contract", "FILE", "the event contract to validate against", set_contract},
    {"sync", "normal|full", "full: every acknowledged write is on disk", set_sync},
    {"allow-unknown-events", NULL, "accept event types the contract does not name",
     set_allow_unknown},
    {"follow-timeout", "SECS", "end a live feed after SECS spent waiting for events (default 1800)",
     set_follow_timeout},
    {"max-pending", "BYTES", "unfinished lines held for the whole mount (default 64M)",
     set_max_pending},
    {"stamp-time", NULL, "created_at is the store's clock only (a line giving one: EINVAL)",
     set_stamp_time},
    {"seal-key", "FILE", "sign every seal with this Ed25519 key (PEM, mode 600)", set_seal_key},
    {"seal-key-name", "NAME", "the key's name in seal.note (default: the host name)",
     set_seal_key_name},
    {"service-name", "NAME", "otel.json's service.name (default runfs)", set_service_name},
    {"log", "FILE", "append the daemon's log lines to FILE", set_log},
    {"uid", "USER", "files belong to USER (default: who mounts; not with --user-from-uid)",
     set_uid},
    {"gid", "GROUP", "files belong to GROUP (default: the mounting user's group)", set_gid},
    {"umask", "MODE", "mode bits taken off 0666/0777 (default 022; 002 shares with the group)",
     set_umask},
};
#define N_MOUNT_OPTIONS (sizeof mount_options / sizeof mount_options[0])

/* What mount(8), fstab and mount.fuse3 may pass besides runfs's own options. */
typedef enum { STD_PASS, STD_IGNORE, STD_RO, STD_RW } std_action;
static const struct {
    const char *name;
    std_action action;
} std_options[] = {
    {"ro", STD_RO},
    {"rw", STD_RW},
    /* Handed to FUSE: the kernel applies them. */
    /* default_permissions is always on: the kernel enforces the modes ls -l shows. */
    {"allow_other", STD_PASS},
    {"default_permissions", STD_IGNORE},
    {"atime", STD_PASS},
    {"noatime", STD_PASS},
    {"relatime", STD_PASS},
    {"norelatime", STD_PASS},
    {"strictatime", STD_PASS},
    {"nodiratime", STD_PASS},
    {"dev", STD_PASS},
    {"nodev", STD_PASS},
    {"suid", STD_PASS},
    {"nosuid", STD_PASS},
    {"exec", STD_PASS},
    {"noexec", STD_PASS},
    {"async", STD_PASS},
    /* For mount(8) and systemd, not for the filesystem. */
    {"defaults", STD_IGNORE},
    {"auto", STD_IGNORE},
    {"noauto", STD_IGNORE},
    {"user", STD_IGNORE},
    {"users", STD_IGNORE},
    {"nouser", STD_IGNORE},
    {"owner", STD_IGNORE},
    {"group", STD_IGNORE},
    {"_netdev", STD_IGNORE},
    {"nofail", STD_IGNORE},
};

static int add_fuse_opt(rfs_options *o, const char *opt)
{
    size_t have = strlen(o->fuse_opts), add = strlen(opt);
    if (have + add + 2 > sizeof o->fuse_opts)
        return bad_value("too many mount options");
    if (have)
        o->fuse_opts[have++] = ',';
    memcpy(o->fuse_opts + have, opt, add + 1);
    return 0;
}

static const mount_option *find_mount_option(const char *name, size_t len)
{
    for (size_t i = 0; i < N_MOUNT_OPTIONS; i++) {
        const char *n = mount_options[i].name;
        if (strlen(n) != len)
            continue;
        size_t k = 0;
        while (k < len && (n[k] == name[k] || (n[k] == '-' && name[k] == '_')))
            k++;
        if (k == len)
            return &mount_options[i];
    }
    return NULL;
}

/* One -o item: a usual mount option, or one of runfs's as name[=value]. */
static int mount_o_item(rfs_options *o, char *tok)
{
    if (!*tok)
        return 0;
    for (size_t i = 0; i < sizeof std_options / sizeof std_options[0]; i++) {
        if (strcmp(tok, std_options[i].name) != 0)
            continue;
        switch (std_options[i].action) {
        case STD_RO: o->read_only = 1; return 0;
        case STD_RW: o->read_only = 0; return 0;
        case STD_IGNORE: return 0;
        case STD_PASS:
            if (strcmp(tok, "allow_other") == 0)
                o->allow_other = 1;
            return add_fuse_opt(o, tok);
        }
    }
    if (strncmp(tok, "x-", 2) == 0 || strncmp(tok, "comment=", 8) == 0)
        return 0;
    char *eq = strchr(tok, '=');
    const mount_option *mo = find_mount_option(tok, eq ? (size_t)(eq - tok) : strlen(tok));
    char why[300];
    if (!mo)
        (void)rs_fmt(why, sizeof why, "unknown mount option '%s'", tok);
    else if (mo->arg && !eq)
        (void)rs_fmt(why, sizeof why, "-o %s needs a value (%s=%s)", tok, tok, mo->arg);
    else if (!mo->arg && eq)
        (void)rs_fmt(why, sizeof why, "-o %s takes no value", tok);
    else
        return mo->set(o, eq ? eq + 1 : NULL);
    return bad_value(why);
}

static int mount_o(rfs_options *o, char *list)
{
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        if (mount_o_item(o, tok))
            return -EINVAL;
    return 0;
}

/* ---- commands ---- */

typedef struct command {
    const char *name;
    const char *args; /* what follows the name */
    const char *summary;
    const char *details; /* the command's own options and notes (may be NULL) */
    int (*run)(int argc, char **argv);
} command;

static int usage_error(const char *cmd, const char *what)
{
    fprintf(stderr, "runfs%s%s: %s (see 'runfs%s%s --help')\n", cmd ? " " : "", cmd ? cmd : "",
            what, cmd ? " " : "", cmd ? cmd : "");
    return 2;
}

/* user: the store read as that owner's --user mount opens it (owners apart). cache_kib:
 * rs_options's (0: SQLite's default). */
static int open_store_cache(rs_store **out, const char *path, int read_only, const char *user,
                            size_t cache_kib)
{
    rs_options opt = RS_OPTIONS_INIT;
    opt.read_only = read_only;
    opt.owners_apart = user != NULL;
    opt.cache_kib = cache_kib;
    rs_err err = {0};
    if (rs_store_open(out, path, &opt, &err)) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        return 2;
    }
    return 0;
}

static int open_store(rs_store **out, const char *path, int read_only, const char *user)
{
    return open_store_cache(out, path, read_only, user, 0);
}

/* Input read a line at a time through a fixed-size window: a line longer than max (an
 * event the store would refuse) is refused without being held whole. */
typedef struct line_reader {
    FILE *f;
    rs_buf buf;
    size_t pos;
    size_t max;
    int eof;
} line_reader;

/* Next line (without its '\n'): 1, 0 at the end, -EMSGSIZE for a line over max, -EIO. */
static int reader_next(line_reader *r, const char **line, size_t *len)
{
    for (;;) {
        char *start = r->buf.buf + r->pos;
        char *nl = memchr(start, '\n', r->buf.len - r->pos);
        if (nl || (r->eof && r->pos < r->buf.len)) {
            *line = start;
            *len = nl ? (size_t)(nl - start) : r->buf.len - r->pos;
            r->pos += *len + (nl != NULL);
            return 1;
        }
        if (r->eof)
            return 0;
        rs_buf_remove_front(&r->buf, r->pos);
        r->pos = 0;
        if (r->buf.len > r->max)
            return -EMSGSIZE;
        if (rs_buf_grow(&r->buf, 65536))
            return -ENOMEM;
        size_t n = fread(r->buf.buf + r->buf.len, 1, 65536, r->f);
        r->buf.len += n;
        r->buf.buf[r->buf.len] = '\0';
        if (ferror(r->f))
            return -EIO;
        if (n == 0)
            r->eof = 1;
    }
}

static void put_busy(void *ctx, const char *store)
{
    (void)ctx;
    fprintf(stderr, "runfs: waiting for another writer's lock on %s (up to 30 s)\n", store);
}

#define PUT_BATCH_BYTES (8u << 20)

/* Store one batch; print its records unless quiet. */
static int put_batch(rs_store *s, const rs_target *t, const rs_buf *data, int quiet, int dry,
                     rs_buf *stored, rs_err *err)
{
    rs_buf_reset(stored);
    if (dry)
        return rs_store_check_lines(s, t, data->buf, data->len, err);
    int rc = rs_store_append(s, t, data->buf, data->len, quiet ? NULL : stored, err);
    if (!rc && !quiet && fwrite(stored->buf, 1, stored->len, stdout) != stored->len)
        rc = rs_err_set(err, -EIO, "cannot write the records: %s", strerror(errno));
    return rc;
}

/* put's options: *batch and *quiet set, argc/argv moved past them; a usage error's exit
 * status, or 0. */
static int put_options(int *argc, char ***argv, long *batch, int *quiet, int *dry,
                       const char **user, rs_options *opt)
{
    enum { OPT_BATCH = 256, OPT_USER, OPT_CONTRACT, OPT_UNKNOWN, OPT_STAMP, OPT_DRY };
    static const struct option longopts[] = {
        {"batch", required_argument, NULL, OPT_BATCH},
        {"quiet", no_argument, NULL, 'q'},
        {"user", required_argument, NULL, OPT_USER},
        {"contract", required_argument, NULL, OPT_CONTRACT},
        {"allow-unknown-events", no_argument, NULL, OPT_UNKNOWN},
        {"stamp-time", no_argument, NULL, OPT_STAMP},
        {"dry-run", no_argument, NULL, OPT_DRY},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(*argc, *argv, "q", longopts, NULL)) != -1) {
        if (c == 'q') {
            *quiet = 1;
        } else if (c == OPT_USER) {
            if (!rs_id_valid(optarg))
                return usage_error("put", "--user must be 1-64 of [A-Za-z0-9_-]");
            /* As a --user mount writes: the rows are NAME's, where owners do not meet. */
            *user = optarg;
            opt->owners_apart = 1;
        } else if (c == OPT_CONTRACT) {
            opt->contract_path = optarg;
        } else if (c == OPT_UNKNOWN) {
            opt->allow_unknown_events = 1;
        } else if (c == OPT_STAMP) {
            opt->stamp_time = 1;
        } else if (c == OPT_DRY) {
            /* Every line checked, nothing stored: the store is only read (never created). */
            *dry = 1;
            opt->read_only = 1;
        } else if (c == OPT_BATCH) {
            char *end;
            *batch = strtol(optarg, &end, 10);
            if (*end || *batch < 1 || *batch > 1000000)
                return usage_error("put", "--batch takes 1-1000000 lines");
        } else {
            return usage_error("put", "unknown option or missing value");
        }
    }
    *argc -= optind - 1;
    *argv += optind - 1;
    return 0;
}

/* Where a put stands: the input line number of the current batch's first line, and the
 * lines the batches before it stored. */
typedef struct put_progress {
    long first;
    long done;
} put_progress;

/* One put in the making: its store, its options and the batch being gathered. */
typedef struct put_state {
    rs_store *s;
    const rs_target *t;
    int quiet, dry;
    rs_buf data;   /* the batch's lines */
    long lines;    /* in data */
    rs_buf stored; /* a batch's records */
    rs_buf type;   /* a singleton line's event type */
    rfs_progress *pg;
    put_progress *at;
} put_state;

/* Store the gathered batch, if any; the next batch starts at input line next. */
static int put_flush(put_state *p, long next, rs_err *err)
{
    if (p->lines) {
        int rc = put_batch(p->s, p->t, &p->data, p->quiet, p->dry, &p->stored, err);
        if (rc)
            return rc;
        rfs_progress_tick(p->pg, p->lines);
        p->at->done += p->lines;
        p->lines = 0;
        rs_buf_reset(&p->data);
    }
    p->at->first = next;
    return 0;
}

/* A singleton's line is stored as an exclusive create of once/<type> stores it (DESIGN
 * "Singletons"), in a transaction of its own: a second one is -EEXIST naming the seq of the
 * stored one. */
static int put_singleton(put_state *p, const char *line, size_t len, rs_err *err)
{
    rs_buf_reset(&p->stored);
    int rc = p->dry ? rs_store_check_lines(p->s, p->t, line, len, err)
                    : rs_store_put_singleton(p->s, p->t, p->type.buf, line, len, 1,
                                             p->quiet ? NULL : &p->stored, err);
    if (rc < 0) {
        err->line = 1;
        return rc;
    }
    if (!p->quiet && fwrite(p->stored.buf, 1, p->stored.len, stdout) != p->stored.len)
        return rs_err_set(err, -EIO, "cannot write the records: %s", strerror(errno));
    rfs_progress_tick(p->pg, 1);
    p->at->done++;
    return 0;
}

/* Read in's lines into t, batch lines (or PUT_BATCH_BYTES) a transaction: 0, or the errno
 * of the batch that stopped it, with err (err->line within that batch). */
static int put_stream(rs_store *s, const rs_target *t, FILE *in, long batch, int quiet, int dry,
                      put_progress *at, rs_err *err)
{
    line_reader r = {.f = in, .buf = RS_BUF_INIT, .max = rs_store_max_event(s)};
    put_state p = {.s = s,
                   .t = t,
                   .quiet = quiet,
                   .dry = dry,
                   .data = RS_BUF_INIT,
                   .stored = RS_BUF_INIT,
                   .type = RS_BUF_INIT,
                   .pg = rfs_progress_new("put", "lines"),
                   .at = at};
    long lineno = 0;
    int rc = 0, step;
    at->first = 1;
    at->done = 0;
    do {
        const char *line;
        size_t len;
        step = reader_next(&r, &line, &len);
        if (step > 0) {
            lineno++;
            if (rs_store_line_singleton(s, line, len, &p.type)) {
                if ((rc = put_flush(&p, lineno, err)) || (rc = put_singleton(&p, line, len, err)))
                    break;
                at->first = lineno + 1;
                continue;
            }
            p.lines++;
            if ((rc = rs_buf_add(&p.data, line, len)) || (rc = rs_buf_addch(&p.data, '\n'))) {
                rs_err_set(err, rc, "out of memory");
                break;
            }
        } else if (step < 0) {
            if (step == -EMSGSIZE)
                rs_err_set(err, step, "event is over the %zu-byte limit", r.max);
            else
                rs_err_set(err, step, "cannot read: %s", strerror(-step));
            rc = step;
            err->line = lineno + 2 - at->first; /* the line being read, within this batch */
            break;
        }
        if (p.lines && (step == 0 || p.lines >= batch || p.data.len >= PUT_BATCH_BYTES) &&
            (rc = put_flush(&p, lineno + 1, err)))
            break;
    } while (step > 0);
    rs_buf_release(&r.buf);
    rs_buf_release(&p.data);
    rs_buf_release(&p.stored);
    rs_buf_release(&p.type);
    if (!rc && dry) {
        rfs_progress_end(p.pg);
        if (!quiet)
            fprintf(stderr, "runfs put: %ld line%s checked, nothing stored (--dry-run)\n", at->done,
                    at->done == 1 ? "" : "s");
    } else if (!rc) {
        rfs_progress_done(p.pg, "%ld lines stored", at->done);
    } else {
        rfs_progress_clear(p.pg);
        free(p.pg);
    }
    return rc;
}

static int cmd_put(int argc, char **argv)
{
    long batch = 1000;
    int quiet = 0, dry = 0;
    const char *user = NULL;
    rs_options opt = RS_OPTIONS_INIT;
    int rc = put_options(&argc, &argv, &batch, &quiet, &dry, &user, &opt);
    if (rc)
        return rc;
    if (argc < 4 || argc > 5)
        return usage_error("put", "expected STORE THREAD RUN [FILE]");
    int from_file = argc == 5 && strcmp(argv[4], "-") != 0;
    const char *name = from_file ? argv[4] : "<stdin>";
    FILE *in = stdin;
    if (from_file && !(in = fopen(argv[4], "rb"))) {
        fprintf(stderr, "runfs: %s: %s\n", argv[4], strerror(errno));
        return 2;
    }
    rs_store *s;
    opt.busy_notice = put_busy;
    rs_err err = {0};
    if (rs_store_open(&s, argv[1], &opt, &err)) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        if (from_file)
            fclose(in);
        return 2;
    }
    rs_target t = {.thread_id = argv[2], .run_id = argv[3], .user = user};
    put_progress at;
    rc = put_stream(s, &t, in, batch, quiet, dry, &at, &err);
    rs_store_close(s);
    if (from_file)
        fclose(in);
    if (!rc)
        return fflush(stdout) == 0 ? 0 : 1;
    if (err.line > 0)
        fprintf(stderr, "%s:%ld: %s\n", name, at.first + err.line - 1, err.msg);
    else
        fprintf(stderr, "runfs: %s\n", err.msg);
    fprintf(stderr,
            "runfs: nothing stored (%s) from line %ld on; the %ld line%s of earlier "
            "batches %s\n",
            rs_errno_name(rc), at.first, at.done, at.done == 1 ? "" : "s",
            dry ? "passed the checks (--dry-run: nothing stored)" : "stay");
    return 1;
}

static int flush_stdout(void *ctx, rs_buf *out)
{
    (void)ctx;
    if (out->len && fwrite(out->buf, 1, out->len, stdout) != out->len)
        return -EIO;
    rs_buf_reset(out);
    return 0;
}

/* Print node n of the store at uri (what names it: label) as the mount shows it, to owner
 * user's --user mount (NULL: an unscoped one), otel's service.name service (NULL: runfs). */
static int cat_node(const char *uri, const char *label, const rfs_node *node, const char *user,
                    const char *service)
{
    rfs_node n = *node;
    rs_store *s;
    int rc = open_store(&s, uri, 1, user);
    if (rc)
        return rc;
    rfs_scope sc = {.user = user, .service_name = service};
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    rc = rfs_view_cat(s, &sc, &n, &out, flush_stdout, NULL, &err);
    rs_store_close(s);
    rs_buf_release(&out);
    if (rc) {
        fprintf(stderr, "runfs: %s: %s\n", label, *err.msg ? err.msg : strerror(-rc));
        return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static int cmd_cat(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"user", required_argument, NULL, 'u'},
        {"service-name", required_argument, NULL, 's'},
        {NULL, 0, NULL, 0},
    };
    const char *user = NULL, *service = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 's' && *optarg) {
            service = optarg;
            continue;
        }
        if (c != 'u')
            return usage_error("cat", "unknown option or missing value");
        if (!rs_id_valid(optarg))
            return usage_error("cat", "--user must be 1-64 of [A-Za-z0-9_-]");
        user = optarg;
    }
    argc -= optind - 1;
    argv += optind - 1;
    if (argc != 3)
        return usage_error("cat", "expected STORE PATH");
    rfs_node n;
    int rc = rfs_node_parse(argv[2], &n);
    if (rc) {
        fprintf(stderr, "runfs: %s: %s\n", argv[2], strerror(-rc));
        return 1;
    }
    if (n.kind == RFS_T_FOLLOW || n.kind == RFS_R_FOLLOW) {
        fprintf(stderr, "runfs: %s is a live feed: read it on a mount\n", argv[2]);
        return 1;
    }
    return cat_node(argv[1], argv[2], &n, user, service);
}

/* search/QUERY of the root, of threads/THREAD or of its run RUN. */
static int cmd_search(int argc, char **argv)
{
    if (argc < 3 || argc > 5)
        return usage_error("search", "expected STORE QUERY [THREAD [RUN]]");
    rfs_node n;
    rfs_node_root(&n);
    n.kind = argc == 3 ? RFS_SEARCH : argc == 4 ? RFS_T_SEARCH : RFS_R_SEARCH;
    if ((argc > 3 && !rs_id_valid(argv[3])) || (argc > 4 && !rs_id_valid(argv[4])))
        return usage_error("search", "THREAD and RUN are ids: 1-64 of [A-Za-z0-9_-]");
    if (rs_fmt(n.name, sizeof n.name, "%s", argv[2]) < 0) {
        fprintf(stderr, "runfs: %s: a query is at most %d bytes (it is a file name)\n", argv[2],
                RFS_NAME_MAX);
        return 1;
    }
    /* Valid ids fit. */
    if (argc > 3)
        (void)rs_fmt(n.thread_id, sizeof n.thread_id, "%s", argv[3]);
    if (argc > 4)
        (void)rs_fmt(n.run_id, sizeof n.run_id, "%s", argv[4]);
    return cat_node(argv[1], argv[2], &n, NULL, NULL);
}

/* "THREAD/RUN" into t (its ids pointing into arg, which is cut at the '/'). */
static int run_arg(char *arg, rs_target *t)
{
    char *slash = strchr(arg, '/');
    if (!slash)
        return -EINVAL;
    *slash = '\0';
    t->thread_id = arg;
    t->run_id = slash + 1;
    return rs_id_valid(t->thread_id) && rs_id_valid(t->run_id) ? 0 : -EINVAL;
}

/* The connections `runfs diff` opens as it needs them: the second to read two big runs at
 * once, and one that may write, to keep the runs' step data (the reading ones are
 * read-only: a store the user may not write is diffed all the same). Each keeps few pages:
 * a diff reads a page about once (kept step data, the rows of a run or of its hunks), and
 * SQLite's default 2 MiB a connection was the largest part of its memory. 64 KiB holds the
 * B-trees' upper pages that every query walks (a diff of 10k or 100k events took no more
 * time with it than with 256 KiB). */
#define DIFF_CACHE_KIB 64
typedef struct diff_conns {
    const char *uri;
    rs_store *reader, *second, *writer;
    int second_tried, writer_tried;
} diff_conns;

static rs_store *diff_second(void *ctx)
{
    diff_conns *d = ctx;
    if (!d->second_tried && open_store_cache(&d->second, d->uri, 1, NULL, DIFF_CACHE_KIB))
        d->second = NULL;
    d->second_tried = 1;
    return d->second;
}

static int diff_keep(void *ctx, const rs_target *t, uint64_t kind, int64_t rewrites,
                     const void *data, size_t len)
{
    diff_conns *d = ctx;
    /* The diff is made by now: the reader's transaction ends, so the writer never waits on
     * it (a store in rollback-journal mode), and the second reader's pages and schema go
     * before the writer's come. */
    rs_store_one_look(d->reader, 0);
    if (d->second) {
        rs_store_close(d->second);
        d->second = NULL;
    }
    if (!d->writer_tried) {
        /* Quietly: a store this user may not write is diffed without keeping. It exists
         * (it was just read), so this open makes none. */
        rs_options opt = RS_OPTIONS_INIT;
        opt.cache_kib = DIFF_CACHE_KIB;
        rs_err err = {0};
        if (rs_store_open(&d->writer, d->uri, &opt, &err))
            d->writer = NULL;
    }
    d->writer_tried = 1;
    return d->writer ? rs_store_steps_put(d->writer, t, kind, rewrites, data, len) : -EROFS;
}

/* Run B's steps against run A's, of any two threads: the bytes of A's diff/B. */
static int cmd_diff(int argc, char **argv)
{
    if (argc != 4)
        return usage_error("diff", "expected STORE THREAD/RUN THREAD2/RUN2");
    rs_target a = {0}, b = {0};
    if (run_arg(argv[2], &a) || run_arg(argv[3], &b))
        return usage_error("diff", "a run is THREAD/RUN, each an id: 1-64 of [A-Za-z0-9_-]");
    rs_store *s;
    int rc = open_store_cache(&s, argv[1], 1, NULL, DIFF_CACHE_KIB);
    if (rc)
        return rc;
    /* One read transaction for the whole diff, as a mount's request has: each of a diff's
     * queries (a hunk's rows, a run's kept data) then neither begins and ends its own nor
     * looks again at what is canonical, and both runs are read as of one moment. */
    rs_store_one_look(s, 1);
    diff_conns d = {.uri = argv[1], .reader = s};
    rfs_stepdiff_io io = {.second = diff_second, .keep = diff_keep, .ctx = &d};
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    rc = rfs_stepdiff_render(s, &io, &a, &b, &out, &err);
    rs_store_one_look(s, 0); /* the read ends (when nothing was kept, keep never ended it) */
    if (d.second)
        rs_store_close(d.second);
    if (d.writer)
        rs_store_close(d.writer);
    rs_store_close(s);
    if (!rc)
        rc = flush_stdout(NULL, &out);
    rs_buf_release(&out);
    if (rc) {
        fprintf(stderr, "runfs: diff: %s\n", *err.msg ? err.msg : strerror(-rc));
        return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

struct verify_tally {
    long checked, changed, deleted, redacted, expired;
    rfs_progress *progress;
};

static int verify_report(void *ctx, const char *thread_id, const char *run_id, int ok,
                         const char *why)
{
    struct verify_tally *t = ctx;
    if (ok == RS_VERIFY_EXPIRED) {
        /* Listed apart: what its seal said, not a seal checked. */
        t->expired++;
        rfs_progress_clear(t->progress);
        printf("threads/%s/runs/%s: %s\n", thread_id, run_id, why);
        return 0;
    }
    t->checked++;
    t->deleted += ok == RS_VERIFY_DELETED;
    t->redacted += ok == RS_VERIFY_REDACTED;
    if (ok != 1 && (ok != RS_VERIFY_REDACTED || strstr(why, "warning"))) {
        t->changed += ok == 0;
        rfs_progress_clear(t->progress);
        printf("threads/%s/runs/%s: %s\n", thread_id, run_id, why);
    }
    rfs_progress_tick(t->progress, 1);
    return 0;
}

static int cmd_verify(int argc, char **argv)
{
    /* --key PUB.pem: every seal must also carry a note that key signed. */
    rs_seal_pub *key = NULL;
    rs_err err = {0};
    if (argc == 4 && strcmp(argv[2], "--key") == 0 && rs_seal_pub_load(&key, argv[3], &err)) {
        fprintf(stderr, "runfs: --key: %s\n", err.msg);
        return 2;
    }
    if (argc != 2 && !key)
        return usage_error("verify", "expected STORE [--key PUB.pem]");
    rs_store *s;
    int rc = open_store(&s, argv[1], 1, NULL);
    if (rc) {
        rs_seal_pub_free(key);
        return rc;
    }
    struct verify_tally t = {.progress = rfs_progress_new("verify", "seals checked")};
    long odd = 0;
    rc = rfs_odd_ids_name(s, stdout, "", &odd, &err);
    if (!rc)
        rc = rs_store_verify_key(s, key, verify_report, &t, &err);
    rs_store_close(s);
    rs_seal_pub_free(key);
    rfs_progress_end(t.progress);
    if (rc < 0) {
        fprintf(stderr, "runfs: cannot verify: %s\n", err.msg);
        return 2;
    }
    printf("%ld seal%s checked, %ld changed, %ld redacted, %ld expired, %ld deleted after "
           "sealing\n",
           t.checked, t.checked == 1 ? "" : "s", t.changed, t.redacted, t.expired, t.deleted);
    return fflush(stdout) == 0 && rc == 0 ? 0 : 1;
}

/* `runfs mount [options] STORE MOUNTPOINT`, and mount.fuse3's `runfs STORE MOUNTPOINT -o
 * OPTIONS` (argv[0] is then the program name; getopt finds the options after the paths). */
static int cmd_mount(int argc, char **argv)
{
    struct option longopts[N_MOUNT_OPTIONS + 1];
    for (size_t i = 0; i < N_MOUNT_OPTIONS; i++)
        longopts[i] = (struct option){mount_options[i].name,
                                      mount_options[i].arg ? required_argument : no_argument, NULL,
                                      256 + (int)i};
    longopts[N_MOUNT_OPTIONS] = (struct option){NULL, 0, NULL, 0};
    rfs_options o = {.follow_timeout = 1800,
                     .max_pending = RFS_DEFAULT_MAX_PENDING,
                     .uid = -1,
                     .gid = -1,
                     .umask = -1};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":fdro:", longopts, NULL)) != -1) {
        int rc = 0;
        if (c == 'f' || c == 'd' || c == 'r')
            rc = (c == 'f' ? set_foreground : c == 'd' ? set_debug : set_read_only)(&o, NULL);
        else if (c == 'o')
            rc = mount_o(&o, optarg);
        else if (c >= 256 && c < 256 + (int)N_MOUNT_OPTIONS)
            rc = mount_options[c - 256].set(&o, optarg);
        else if (c == ':')
            return usage_error("mount", "an option needs a value");
        else {
            char why[128];
            (void)rs_fmt(why, sizeof why, "unknown option '%s'", argv[optind - 1]);
            return usage_error("mount", why);
        }
        if (rc)
            return 2;
    }
    if (argc - optind != 2)
        return usage_error("mount", "expected STORE MOUNTPOINT");
    if (o.user && o.user_from_uid) {
        fprintf(stderr, "runfs: --user and --user-from-uid exclude each other\n");
        return 2;
    }
    o.store = argv[optind];
    o.mountpoint = argv[optind + 1];
    rfs_usermap *map = NULL;
    char why[512];
    if (user_map_path && rfs_usermap_load(&map, user_map_path, why, sizeof why)) {
        fprintf(stderr, "runfs: --user-map %s\n", why);
        return 2;
    }
    o.user_map = map;
    int rc = rfs_mount_main(&o);
    rfs_usermap_free(map);
    return rc;
}

static const command commands[] = {
    {"mount", "[options] STORE MOUNTPOINT", "mount a store (a SQLite file or a postgresql:// URI)",
     "STORE is a SQLite file or a libpq URI (postgresql://, postgres://): mounts on many\n"
     "hosts share one PostgreSQL database. A store that cannot be opened exits 2; a missing\n"
     "SQLite file is created only with --create (runfs put and runfs import create theirs).\n"
     "With NOTIFY_SOCKET set (systemd's Type=notify) the daemon sends READY=1 once the\n"
     "mount serves and STOPPING=1 when it stops.\n"
     "usual mount options are taken too: ro, rw, allow_other, default_permissions, noatime,\n"
     "atime, dev, nodev, suid, nosuid, exec, noexec (to the kernel); _netdev, nofail,\n"
     "x-systemd.*, auto, noauto, user, users, defaults (for mount(8); ignored here).\n"
     "mount -t fuse.runfs STORE MOUNTPOINT -o OPTIONS and /etc/fstab lines work through\n"
     "mount.fuse3. Logs go to syslog where there is one, to --log FILE, and to stderr in\n"
     "the foreground.\n",
     cmd_mount},
    {"umount", "MOUNTPOINT", "unmount, and return once the daemon has closed the store",
     "runs fusermount3 -u, then waits (up to 30 s) for the daemon to exit, so the next\n"
     "command finds the store free. A MOUNTPOINT that is not a runfs mount exits 2.\n"
     "fusermount3 -u MOUNTPOINT, or SIGTERM to the daemon, unmount too.\n",
     rfs_cmd_umount},
    {"put", "[-q] [--batch N] [--user NAME] [--dry-run] STORE THREAD RUN [FILE]",
     "append JSONL lines (stdin by default), N lines a transaction",
     "  -q, --quiet              do not print the stored records\n"
     "  --batch N                lines per transaction (default 1000, at most 1000000)\n"
     "  --user NAME              the rows are NAME's (DeerFlow's user id), as on a --user mount\n"
     "  --contract FILE          the event contract to validate against\n"
     "  --allow-unknown-events   accept event types the contract does not name\n"
     "  --stamp-time             the store's clock is the only created_at\n"
     "  --dry-run                check every line, store nothing (the store is only read)\n"
     "streams with bounded memory; progress on a terminal. A bad line stops it as\n"
     "'FILE:LINE: reason' (exit 1): its batch stores nothing, earlier batches stay.\n"
     "a singleton's line (run.terminal, run.delivery) is stored as an exclusive create of\n"
     "once/TYPE stores it, in a transaction of its own: a second one is EEXIST (its seq).\n",
     cmd_put},
    {"cat", "[--user NAME] [--service-name NAME] STORE PATH",
     "print a file of the layout, as the mount shows it",
     "PATH is relative to the mount's root: threads/T/runs/R/events.jsonl, ...\n"
     "the same bytes the mount shows for PATH (lookup-only names too); never creates STORE.\n"
     "  --user NAME           as NAME's --user mount shows it: NAME's rows, seals and\n"
     "                        proofs; a thread without NAME's rows does not exist\n"
     "  --service-name NAME   otel.json's service.name, as the mount's option (runfs)\n",
     cmd_cat},
    {"ls", "[-l] [-a] [--user NAME] STORE [PATH]", "list a directory of the layout, as ls does",
     "PATH is relative to the mount's root (default: the root). The names ls of PATH on a\n"
     "mount prints, in LC_ALL=C ls's order; a lookup-only directory (since/, search/,\n"
     "proofs/, ...) lists nothing, as on a mount. A file is listed as its PATH.\n"
     "  -l            mode, exact size (st_size on a mount) and mtime (UTC) before each name;\n"
     "                modes as a read-write mount with umask 022 shows them\n"
     "  -a, --all     names starting with '.' too (.runfs)\n"
     "  --user NAME   as NAME's --user mount shows it\n"
     "never creates STORE (a missing one: exit 2); exit 1 when PATH is not there.\n",
     rfs_cmd_ls},
    {"search", "STORE QUERY [THREAD [RUN]]", "print the events that match QUERY",
     "the lines of search/QUERY at the root, in threads/THREAD or in its run RUN:\n"
     "terms separated by spaces, all of which must match; \"two words\" is one term;\n"
     "type:X (type:X* a prefix), category:X; -term excludes; any other term is found in\n"
     "the event's content or metadata JSON, ASCII letters ignoring case; by:run prints a\n"
     "line per matching run (its matches, first and last seq) instead. Never creates\n"
     "STORE and writes no index (a mount's searches keep it up to date).\n",
     cmd_search},
    {"diff", "STORE THREAD/RUN THREAD2/RUN2", "compare two runs' steps as a unified diff",
     "the bytes of threads/THREAD/runs/RUN/diff/RUN2, for runs of any two threads: one line\n"
     "per event (its type and what identifies the step, no seq, time or ids), '# ' lines\n"
     "first (the first step that differs, the stats that differ), then ---/+++ headers and\n"
     "@@ hunks with 3 lines of context (no hunk when the steps are the same); patch and\n"
     "git apply read it. Never creates STORE. exit 1 when a run does not exist.\n",
     cmd_diff},
    {"changes", "STORE [--since N] [--follow]", "print the change feed (changes/since/N)",
     "  --since N             only changes after change number N (default 0: every run)\n"
     "  --follow              then print each change as it commits (changes/follow/N)\n"
     "  --follow-timeout S    with --follow, end after S seconds without a change (1800)\n"
     "  --user ID, --thread ID   what that owner, that thread, sees\n"
     "one line per run at its latest change, in change order; a deleted run's tombstone has\n"
     "deleted:true. Never creates STORE; one that exists is opened read-write, so that what\n"
     "other writers did is numbered first.\n",
     rfs_cmd_changes},
    {"verify", "STORE [--key PUB.pem]", "recompute every seal; exit 1 if any changed",
     "prints each run whose evidence changed or was deleted after sealing, then\n"
     "'N seals checked, N changed, N redacted, N expired, N deleted after sealing' (a run\n"
     "with redacted events is checked by its root, the kept leaf standing for each)\n"
     "(progress on stderr when it is a terminal).\n"
     "  --key PUB.pem  every seal must carry a seal.note signed by this Ed25519 key: an\n"
     "                 unsigned seal or one signed by another key counts as changed\n"
     "exit 0 when every seal holds, 1 when one changed, 2 when the store cannot be checked.\n",
     cmd_verify},
    {"seal", "STORE THREAD RUN [--seal-key FILE] [--seal-key-name NAME] [--partial WHY]",
     "seal a run without a mount (prints its seal.json)",
     "the same rules as the exclusive create of seal.json: a valid run.terminal inside the\n"
     "boundary, or --partial WHY for a partial seal. exit 1 when the run cannot be sealed\n"
     "(not sealable, already sealed), 2 when the store cannot be opened.\n"
     "  --seal-key FILE       sign the seal (seal.note) with this Ed25519 key (PEM, mode 600)\n"
     "  --seal-key-name NAME  the key's name in the note (default: the host name)\n",
     rfs_cmd_seal},
    {"redact",
     "STORE THREAD SEQ [--path P]... --reason TEXT [--seal-key FILE] [--seal-key-name NAME] "
     "[--user NAME]",
     "forget what an event held, keeping the evidence (prints its redactions.jsonl line)",
     "each --path (content.KEY... or metadata.KEY..., dot-separated, numbers index arrays;\n"
     "none: the whole content) becomes \"[redacted]\"; metadata.redaction records when, why\n"
     "and what. The envelope stays. When it returns, the old bytes are in no row, search\n"
     "index, free page or WAL of the store (PostgreSQL: after the VACUUM it runs, where the\n"
     "role may; else a warning says what the role lacks). A sealed run keeps the leaf of the\n"
     "line as sealed: its root and other proofs still hold. exit 1 when refused (no reason,\n"
     "a path that does not exist, another owner's event), 2 when the store cannot be opened.\n"
     "  --reason TEXT         why (required, one line)\n"
     "  --user NAME           redact as that owner: only its own events\n"
     "  --seal-key FILE       sign the redaction (a note in redactions.jsonl)\n"
     "  --seal-key-name NAME  the key's name in the note (default: the host name)\n",
     rfs_cmd_redact},
    {"expire",
     "STORE (--older-than DURATION | --keep-runs N) [--thread T] [--user U] [--dry-run] "
     "[--seal-key FILE] [--seal-key-name NAME]",
     "remove whole runs by age or count (prints each one's expired.jsonl line)",
     "DURATION is a whole number and s, m, h, d or w (30d). --older-than removes the runs\n"
     "whose newest event is older; --keep-runs keeps each thread's N newest runs (by newest\n"
     "event, ties by run id). A run with no events or a newer one never goes. Removal is\n"
     "complete as for redact; the thread's high-water mark stays; the change feed shows a\n"
     "tombstone with expired:true; expired.jsonl at the mount root keeps what each run's\n"
     "seal said. exit 1 when refused, 2 when the store cannot be opened.\n"
     "  --thread T, --user U  only that thread, only that owner's rows\n"
     "  --dry-run             print what would go and change nothing (opens read-only)\n"
     "  --seal-key FILE       sign each expiry (a note in expired.jsonl)\n"
     "  --seal-key-name NAME  the key's name in the note (default: the host name)\n",
     rfs_cmd_expire},
    {"verify-note", "--key PUB.pem FILE", "check a seal.note's signature, with no store",
     "exit 0 when a signature line by that key verifies over the note's body, 1 when not.\n",
     rfs_cmd_verify_note},
    {"verify-proof", "SEAL.json LINE PROOF", "check that one event is covered by a seal",
     "LINE: a file holding the event's line as events.jsonl shows it; PROOF: its\n"
     "proofs/<seq>. exit 0 when the line leads to the seal's root, 1 when not, 2 when a file\n"
     "is not what it should be. Needs no store.\n",
     rfs_cmd_verify_proof},
    {"import",
     "STORE --deerflow-jsonl DIR [--strict] [--skip-bad-lines] [--user ID] [--sizes] [-q]",
     "load DeerFlow's JSONL folder, seq and created_at kept",
     "DIR is DeerFlow's base folder (.deer-flow, holding threads/T/runs/R.jsonl) or its parent.\n"
     "  --strict          check content against the contract's schemas too, and refuse\n"
     "                    links and FIFOs (else named and skipped)\n"
     "  --skip-bad-lines  skip malformed lines (each named on stderr) instead of stopping\n"
     "  --user ID         owner of the imported rows (DeerFlow's user id)\n"
     "  --sizes           size every view of the imported threads now, kept in the store,\n"
     "                    so a mount's first du, ls or tar renders nothing (the\n"
     "                    import renders each view once: it takes longer)\n"
     "  -q, --quiet       no summary line on stderr\n"
     "on a terminal, progress: lines, bytes of the files' total, rate and time left.\n"
     "rows already present and equal are skipped; a malformed line or a different row at a\n"
     "used seq stops that thread with 'FILE:LINE: reason', nothing of it changed; exit 2.\n",
     rfs_cmd_import},
    {"export", "STORE --deerflow-jsonl DIR [--force] [-q]",
     "write the store as DeerFlow's JSONL folder, byte for byte",
     "  --force   overwrite files that already exist (else: exit 2, nothing written)\n"
     "  -q        no summary line on stderr\n"
     "opens STORE read-only and never creates it; writes runs/.seq-watermark where the\n"
     "thread's high-water mark is above its highest seq; a thread whose id is no path is\n"
     "named and skipped (exit 1).\n",
     rfs_cmd_export},
    {NULL, NULL, NULL, NULL, NULL},
};

static const command *find_command(const char *name)
{
    if (strcmp(name, "unmount") == 0)
        name = "umount";
    for (const command *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

static void print_mount_options(FILE *f)
{
    for (size_t i = 0; i < N_MOUNT_OPTIONS; i++) {
        const mount_option *mo = &mount_options[i];
        int w = fprintf(f, "  --%s%s%s", mo->name, mo->arg ? " " : "", mo->arg ? mo->arg : "");
        fprintf(f, "%*s %s\n", w < 30 ? 30 - w : 0, "", mo->help);
    }
}

static int command_help(const command *c)
{
    printf("usage: runfs %s %s\n  %s\n", c->name, c->args, c->summary);
    if (strcmp(c->name, "mount") == 0) {
        printf("\noptions (each also as -o NAME[=VALUE], with '_' for '-'):\n");
        print_mount_options(stdout);
    }
    if (c->details)
        printf("\n%s", c->details);
    return 0;
}

static int general_help(FILE *f)
{
    fputs("usage: runfs COMMAND [options] ARGS...\n"
          "       runfs STORE MOUNTPOINT [-o OPTIONS]      (mount.fuse3's form of mount)\n\n"
          "commands:\n",
          f);
    for (const command *c = commands; c->name; c++) {
        int w = fprintf(f, "  %s %s", c->name, c->args);
        fprintf(f, "%*s %s\n", w < 36 ? 36 - w : 0, "", c->summary);
    }
    fputs("\n  runfs --help | -h        this help; 'runfs COMMAND --help' for a command's\n"
          "  runfs --version | -V     the version\n",
          f);
    return 0;
}

static int wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    return 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Every local user reads a process's arguments (ps, /proc/PID/cmdline): a store URI's
 * secrets leave them at once, shown as status.json shows the URI, and the program goes on
 * with a copy (kept here for the process's life; set in main before any thread starts, so
 * no lock). */
static char **argv_copies;

static int hide_secrets(int argc, char **argv)
{
    if (!(argv_copies = calloc((size_t)argc, sizeof *argv_copies)))
        return -ENOMEM;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "postgresql://", 13) != 0 && strncmp(argv[i], "postgres://", 11) != 0)
            continue;
        char *shown = rs_uri_display(argv[i]);
        if (!shown || !(argv_copies[i] = strdup(argv[i]))) {
            free(shown);
            return -ENOMEM;
        }
        size_t len = strlen(argv[i]), n = strlen(shown);
        memset(argv[i], 0, len);
        memcpy(argv[i], shown, n < len ? n : len);
        free(shown);
        argv[i] = argv_copies[i];
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (hide_secrets(argc, argv)) {
        fprintf(stderr, "runfs: out of memory\n");
        return 2;
    }
    if (argc < 2) {
        general_help(stderr);
        return 2;
    }
    const char *arg = argv[1];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "help") == 0)
        return general_help(stdout);
    if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0 || strcmp(arg, "version") == 0) {
        rs_buf v = RS_BUF_INIT;
        int rc = rs_library_versions(&v);
        printf("runfs %s (libfuse %s, %s)\n", RS_VERSION, fuse_pkgversion(), rc ? "?" : v.buf);
        rs_buf_release(&v);
        return 0;
    }
    const command *c = find_command(arg);
    if (c)
        return wants_help(argc - 1, argv + 1) ? command_help(c) : c->run(argc - 1, argv + 1);
    if (arg[0] != '-' && argc >= 3 && is_dir(argv[2]))
        return wants_help(argc, argv) ? command_help(find_command("mount")) : cmd_mount(argc, argv);
    char why[300];
    (void)rs_fmt(why, sizeof why, "unknown command '%s'", arg);
    return usage_error(NULL, why);
}
