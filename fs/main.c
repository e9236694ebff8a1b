/* main.c — the `runfs` command: mount and unmount a store, or work on it directly
 * (put, cat, verify) with the same rendering code the mount uses. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mount.h"

static const char usage_text[] =
    "usage: runfs COMMAND ...\n"
    "\n"
    "  runfs mount [options] STORE MOUNTPOINT   mount a store (a SQLite file, created if absent)\n"
    "      -f                      stay in the foreground\n"
    "      -o ro|allow_other       read-only mount; let other users in\n"
    "      --user NAME             stamp writes with owner NAME, show only NAME's rows\n"
    "      --user-from-uid         each calling uid is its own owner\n"
    "      --thread ID             show that one thread only (for a sandbox)\n"
    "      --allow-delete          rm -r of a run or thread deletes it\n"
    "      --contract FILE         the event contract to validate against\n"
    "      --sync normal|full      full: every acknowledged write is on disk\n"
    "      --allow-unknown-events  accept event types the contract does not name\n"
    "      --follow-timeout SECS   end follow.jsonl without a terminal event (default 1800)\n"
    "  runfs umount MOUNTPOINT                  unmount\n"
    "  runfs put STORE THREAD RUN [FILE]        store JSONL (stdin by default) as one batch\n"
    "  runfs cat STORE PATH                     print a file of the layout\n"
    "  runfs verify STORE                       recompute every seal; exit 1 if any changed\n"
    "  runfs --help | --version\n";

static int usage(int status)
{
    fputs(usage_text, status ? stderr : stdout);
    return status;
}

static int open_store(rs_store **out, const char *path, int read_only)
{
    rs_options opt = RS_OPTIONS_INIT;
    opt.read_only = read_only;
    rs_err err = {0};
    if (rs_store_open(out, path, &opt, &err)) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        return 2;
    }
    return 0;
}

static int read_all(FILE *f, rs_buf *out)
{
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (rs_buf_add(out, chunk, n))
            return -ENOMEM;
    return ferror(f) ? -EIO : 0;
}

static int cmd_put(int argc, char **argv)
{
    if (argc < 4 || argc > 5)
        return usage(2);
    FILE *in = stdin;
    if (argc == 5 && strcmp(argv[4], "-") != 0 && !(in = fopen(argv[4], "rb"))) {
        fprintf(stderr, "runfs: %s: %s\n", argv[4], strerror(errno));
        return 2;
    }
    rs_buf data = RS_BUF_INIT, stored = RS_BUF_INIT;
    int rc = read_all(in, &data);
    if (in != stdin)
        fclose(in);
    if (rc) {
        fprintf(stderr, "runfs: cannot read input: %s\n", strerror(-rc));
        rs_buf_release(&data);
        return 2;
    }
    rs_store *s;
    if ((rc = open_store(&s, argv[1], 0))) {
        rs_buf_release(&data);
        return rc;
    }
    rs_target t = {.thread_id = argv[2], .run_id = argv[3]};
    rs_err err = {0};
    rc = rs_store_append(s, &t, data.buf, data.len, &stored, &err);
    rs_store_close(s);
    if (rc) {
        if (err.line > 0)
            fprintf(stderr, "line %ld: %s\n", err.line, err.msg);
        else
            fprintf(stderr, "runfs: %s\n", err.msg);
        fprintf(stderr, "runfs: nothing stored (%s)\n", rs_errno_name(rc));
    } else {
        fwrite(stored.buf, 1, stored.len, stdout);
    }
    rs_buf_release(&data);
    rs_buf_release(&stored);
    return rc ? 1 : 0;
}

static int flush_stdout(void *ctx, rs_buf *out)
{
    (void)ctx;
    if (out->len && fwrite(out->buf, 1, out->len, stdout) != out->len)
        return -EIO;
    rs_buf_reset(out);
    return 0;
}

static int cmd_cat(int argc, char **argv)
{
    if (argc != 3)
        return usage(2);
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
    rs_store *s;
    if ((rc = open_store(&s, argv[1], 1)))
        return rc;
    rfs_scope sc = {0};
    rs_buf out = RS_BUF_INIT;
    rs_err err = {0};
    rc = rfs_view_cat(s, &sc, &n, &out, flush_stdout, NULL, &err);
    rs_store_close(s);
    rs_buf_release(&out);
    if (rc) {
        fprintf(stderr, "runfs: %s: %s\n", argv[2], *err.msg ? err.msg : strerror(-rc));
        return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static int verify_report(void *ctx, const char *thread_id, const char *run_id, int ok,
                         const char *why)
{
    (void)ctx;
    if (!ok)
        printf("threads/%s/runs/%s: %s\n", thread_id, run_id, why);
    return 0;
}

static int cmd_verify(int argc, char **argv)
{
    if (argc != 2)
        return usage(2);
    rs_store *s;
    int rc = open_store(&s, argv[1], 1);
    if (rc)
        return rc;
    rs_err err = {0};
    rc = rs_store_verify(s, verify_report, NULL, &err);
    rs_store_close(s);
    if (rc < 0) {
        fprintf(stderr, "runfs: cannot verify: %s\n", err.msg);
        return 2;
    }
    if (rc > 0)
        fprintf(stderr, "runfs: %d sealed run%s changed\n", rc, rc == 1 ? "" : "s");
    return rc > 0 ? 1 : 0;
}

static int cmd_umount(int argc, char **argv)
{
    if (argc != 2)
        return usage(2);
    execlp("fusermount3", "fusermount3", "-u", argv[1], (char *)NULL);
    fprintf(stderr, "runfs: cannot run fusermount3: %s\n", strerror(errno));
    return 2;
}

static int mount_o(rfs_options *o, char *list)
{
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "ro") == 0)
            o->read_only = 1;
        else if (strcmp(tok, "rw") == 0)
            o->read_only = 0;
        else if (strcmp(tok, "allow_other") == 0)
            o->allow_other = 1;
        else {
            fprintf(stderr, "runfs: unknown mount option '%s'\n", tok);
            return -EINVAL;
        }
    }
    return 0;
}

static int cmd_mount(int argc, char **argv)
{
    enum { OPT_USER = 256, OPT_UID, OPT_THREAD, OPT_DELETE, OPT_CONTRACT, OPT_SYNC, OPT_UNKNOWN, OPT_FOLLOW };
    static const struct option longopts[] = {
        {"user", required_argument, NULL, OPT_USER},
        {"user-from-uid", no_argument, NULL, OPT_UID},
        {"thread", required_argument, NULL, OPT_THREAD},
        {"allow-delete", no_argument, NULL, OPT_DELETE},
        {"contract", required_argument, NULL, OPT_CONTRACT},
        {"sync", required_argument, NULL, OPT_SYNC},
        {"allow-unknown-events", no_argument, NULL, OPT_UNKNOWN},
        {"follow-timeout", required_argument, NULL, OPT_FOLLOW},
        {"foreground", no_argument, NULL, 'f'},
        {"debug", no_argument, NULL, 'd'},
        {NULL, 0, NULL, 0},
    };
    rfs_options o = {.follow_timeout = 1800};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "fdo:", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': o.foreground = 1; break;
        case 'd': o.debug = 1; o.foreground = 1; break;
        case 'o':
            if (mount_o(&o, optarg))
                return 2;
            break;
        case OPT_USER:
            if (!rs_id_valid(optarg)) {
                fprintf(stderr, "runfs: --user must be 1-64 of [A-Za-z0-9_-]\n");
                return 2;
            }
            o.user = optarg;
            break;
        case OPT_UID: o.user_from_uid = 1; break;
        case OPT_THREAD:
            if (!rs_id_valid(optarg)) {
                fprintf(stderr, "runfs: --thread must be a thread id (1-64 of [A-Za-z0-9_-])\n");
                return 2;
            }
            o.only_thread = optarg;
            break;
        case OPT_DELETE: o.allow_delete = 1; break;
        case OPT_CONTRACT: o.contract = optarg; break;
        case OPT_SYNC:
            if (strcmp(optarg, "full") != 0 && strcmp(optarg, "normal") != 0) {
                fprintf(stderr, "runfs: --sync is normal or full\n");
                return 2;
            }
            o.sync_full = strcmp(optarg, "full") == 0;
            break;
        case OPT_UNKNOWN: o.allow_unknown = 1; break;
        case OPT_FOLLOW: {
            char *end;
            o.follow_timeout = strtod(optarg, &end);
            if (*end || o.follow_timeout <= 0) {
                fprintf(stderr, "runfs: --follow-timeout takes a positive number of seconds\n");
                return 2;
            }
            break;
        }
        default:
            return usage(2);
        }
    }
    if (argc - optind != 2)
        return usage(2);
    if (o.user && o.user_from_uid) {
        fprintf(stderr, "runfs: --user and --user-from-uid exclude each other\n");
        return 2;
    }
    o.store = argv[optind];
    o.mountpoint = argv[optind + 1];
    return rfs_mount_main(&o);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(2);
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0)
        return usage(0);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("runfs %s (libfuse %d)\n", RS_VERSION, fuse_version());
        return 0;
    }
    if (strcmp(cmd, "mount") == 0)
        return cmd_mount(argc - 1, argv + 1);
    if (strcmp(cmd, "umount") == 0 || strcmp(cmd, "unmount") == 0)
        return cmd_umount(argc - 1, argv + 1);
    if (strcmp(cmd, "put") == 0)
        return cmd_put(argc - 1, argv + 1);
    if (strcmp(cmd, "cat") == 0)
        return cmd_cat(argc - 1, argv + 1);
    if (strcmp(cmd, "verify") == 0)
        return cmd_verify(argc - 1, argv + 1);
    fprintf(stderr, "runfs: unknown command '%s'\n", cmd);
    return usage(2);
}
