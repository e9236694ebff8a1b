/* evidence.c — the commands that make and check evidence without a mount: runfs seal,
 * verify-note and verify-proof (runfs verify --key is cmd_verify's, in main.c), and runfs
 * redact, which forgets what an event held and keeps the evidence of it. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence.h"
#include "rs_util.h"

static int usage(const char *cmd, const char *what)
{
    fprintf(stderr, "runfs %s: %s (see 'runfs %s --help')\n", cmd, what, cmd);
    return 2;
}

/* The whole file at path into out (at most 16 MiB: evidence files are small). */
static int read_whole(const char *path, rs_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "runfs: %s: %s\n", path, strerror(errno));
        return -errno;
    }
    int rc = 0;
    for (;;) {
        if (out->len > (16u << 20) || rs_buf_grow(out, 65536)) {
            rc = -EFBIG;
            break;
        }
        size_t n = fread(out->buf + out->len, 1, 65536, f);
        rs_buf_setlen(out, out->len + n);
        if (n == 0)
            break;
    }
    if (!rc && ferror(f))
        rc = -EIO;
    fclose(f);
    if (rc)
        fprintf(stderr, "runfs: %s: %s\n", path, strerror(-rc));
    return rc;
}

int rfs_cmd_seal(int argc, char **argv)
{
    enum { OPT_KEY = 256, OPT_NAME, OPT_PARTIAL };
    static const struct option longopts[] = {
        {"seal-key", required_argument, NULL, OPT_KEY},
        {"seal-key-name", required_argument, NULL, OPT_NAME},
        {"partial", required_argument, NULL, OPT_PARTIAL},
        {NULL, 0, NULL, 0},
    };
    const char *key_path = NULL, *key_name = NULL, *partial = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == OPT_KEY)
            key_path = optarg;
        else if (c == OPT_NAME)
            key_name = optarg;
        else if (c == OPT_PARTIAL)
            partial = optarg;
        else
            return usage("seal", "unknown option or missing value");
    }
    if (argc - optind != 3)
        return usage("seal", "expected STORE THREAD RUN");
    if (key_name && !key_path)
        return usage("seal", "--seal-key-name names the key of --seal-key: give both");
    rs_err err = {0};
    rs_seal_key *key = NULL;
    if (key_path && rs_seal_key_load(&key, key_path, key_name, &err)) {
        fprintf(stderr, "runfs: --seal-key: %s\n", err.msg);
        return 2;
    }
    rs_buf body = RS_BUF_INIT, out = RS_BUF_INIT;
    int status = 2;
    if (partial &&
        (rs_buf_addlit(&body, "{\"state\":\"partial\",\"error\":") ||
         rs_buf_add_json_string(&body, partial, strlen(partial)) || rs_buf_addch(&body, '}'))) {
        fprintf(stderr, "runfs: out of memory\n");
        goto out;
    }
    rs_options opt = RS_OPTIONS_INIT;
    opt.seal_key = key;
    rs_store *s;
    if (rs_store_open(&s, argv[optind], &opt, &err)) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        goto out;
    }
    rs_target t = {.thread_id = argv[optind + 1], .run_id = argv[optind + 2]};
    int rc = rs_store_seal(s, &t, body.buf, body.len, &out, &err);
    rs_store_close(s);
    if (rc) {
        fprintf(stderr, "runfs: threads/%s/runs/%s: %s (%s)\n", t.thread_id, t.run_id, err.msg,
                rs_errno_name(rc));
        status = 1;
    } else
        status = fwrite(out.buf, 1, out.len, stdout) == out.len && fflush(stdout) == 0 ? 0 : 1;
out:
    rs_buf_release(&body);
    rs_buf_release(&out);
    rs_seal_key_free(key);
    return status;
}

int rfs_cmd_verify_note(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"key", required_argument, NULL, 'k'},
        {NULL, 0, NULL, 0},
    };
    const char *key_path = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c != 'k')
            return usage("verify-note", "unknown option or missing value");
        key_path = optarg;
    }
    if (!key_path || argc - optind != 1)
        return usage("verify-note", "expected --key PUB.pem FILE");
    rs_err err = {0};
    rs_seal_pub *key;
    if (rs_seal_pub_load(&key, key_path, &err)) {
        fprintf(stderr, "runfs: --key: %s\n", err.msg);
        return 2;
    }
    rs_buf note = RS_BUF_INIT;
    int status = 2;
    if (!read_whole(argv[optind], &note)) {
        int rc = rs_note_verify(key, note.buf, note.len, &err);
        if (rc)
            fprintf(stderr, "runfs: %s: %s\n", argv[optind], err.msg);
        else
            printf("%s: signed by this key\n", argv[optind]);
        status = rc == 0 ? 0 : 1;
    }
    rs_buf_release(&note);
    rs_seal_pub_free(key);
    return status;
}

int rfs_cmd_verify_proof(int argc, char **argv)
{
    if (argc != 4)
        return usage("verify-proof", "expected SEAL.json LINE PROOF");
    rs_buf seal = RS_BUF_INIT, line = RS_BUF_INIT, proof = RS_BUF_INIT;
    int status = 2;
    if (!read_whole(argv[1], &seal) && !read_whole(argv[2], &line) &&
        !read_whole(argv[3], &proof)) {
        rs_err err = {0};
        int rc =
            rs_proof_verify(seal.buf, seal.len, line.buf, line.len, proof.buf, proof.len, &err);
        if (rc)
            fprintf(stderr, "runfs: %s: %s\n", argv[2], err.msg);
        else
            printf("%s: covered by the seal's root\n", argv[2]);
        status = rc == 0 ? 0 : rc == -EBADMSG ? 1 : 2;
    }
    rs_buf_release(&seal);
    rs_buf_release(&line);
    rs_buf_release(&proof);
    return status;
}

int rfs_cmd_redact(int argc, char **argv)
{
    enum { OPT_KEY = 256, OPT_NAME, OPT_PATH, OPT_REASON, OPT_USER };
    static const struct option longopts[] = {
        {"seal-key", required_argument, NULL, OPT_KEY},
        {"seal-key-name", required_argument, NULL, OPT_NAME},
        {"path", required_argument, NULL, OPT_PATH},
        {"reason", required_argument, NULL, OPT_REASON},
        {"user", required_argument, NULL, OPT_USER},
        {NULL, 0, NULL, 0},
    };
    const char *key_path = NULL, *key_name = NULL, *reason = NULL, *user = NULL;
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    size_t n = 0;
    int c;
    if (!paths) {
        fprintf(stderr, "runfs: out of memory\n");
        return 2;
    }
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == OPT_KEY)
            key_path = optarg;
        else if (c == OPT_NAME)
            key_name = optarg;
        else if (c == OPT_PATH)
            paths[n++] = optarg;
        else if (c == OPT_REASON)
            reason = optarg;
        else if (c == OPT_USER && rs_id_valid(optarg))
            user = optarg;
        else {
            free(paths);
            return usage("redact", c == OPT_USER ? "--user must be 1-64 of [A-Za-z0-9_-]"
                                                 : "unknown option or missing value");
        }
    }
    char *end = NULL;
    long long seq = argc - optind == 3 ? strtoll(argv[optind + 2], &end, 10) : 0;
    int status = 2;
    if (argc - optind != 3 || !end || *end || end == argv[optind + 2]) {
        free(paths);
        return usage("redact", "expected STORE THREAD SEQ --reason TEXT");
    }
    if (key_name && !key_path) {
        free(paths);
        return usage("redact", "--seal-key-name names the key of --seal-key: give both");
    }
    rs_err err = {0};
    rs_seal_key *key = NULL;
    if (key_path && rs_seal_key_load(&key, key_path, key_name, &err)) {
        fprintf(stderr, "runfs: --seal-key: %s\n", err.msg);
        free(paths);
        return 2;
    }
    rs_options opt = RS_OPTIONS_INIT;
    opt.seal_key = key;
    opt.owners_apart = user != NULL;
    rs_store *s;
    rs_buf out = RS_BUF_INIT, warn = RS_BUF_INIT;
    if (rs_store_open(&s, argv[optind], &opt, &err)) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        goto done;
    }
    rs_target t = {.thread_id = argv[optind + 1], .user = user};
    int rc = rs_store_redact(s, &t, seq, paths, n, reason, &out, &warn, &err);
    rs_store_close(s);
    if (rc) {
        fprintf(stderr, "runfs: threads/%s seq %lld: %s (%s)\n", t.thread_id, seq, err.msg,
                rs_errno_name(rc));
        status = 1;
        goto done;
    }
    if (warn.len)
        fprintf(stderr, "runfs: warning: %s\n", warn.buf);
    status = fwrite(out.buf, 1, out.len, stdout) == out.len && fflush(stdout) == 0 ? 0 : 1;
done:
    rs_buf_release(&out);
    rs_buf_release(&warn);
    rs_seal_key_free(key);
    free(paths);
    return status;
}

static int print_expired(void *ctx, const char *line, size_t len)
{
    (void)ctx;
    return fwrite(line, 1, len, stdout) == len ? 0 : -EIO;
}

int rfs_cmd_expire(int argc, char **argv)
{
    enum { OPT_AGE = 256, OPT_KEEP, OPT_THREAD, OPT_USER, OPT_DRY, OPT_KEY, OPT_NAME };
    static const struct option longopts[] = {
        {"older-than", required_argument, NULL, OPT_AGE},
        {"keep-runs", required_argument, NULL, OPT_KEEP},
        {"thread", required_argument, NULL, OPT_THREAD},
        {"user", required_argument, NULL, OPT_USER},
        {"dry-run", no_argument, NULL, OPT_DRY},
        {"seal-key", required_argument, NULL, OPT_KEY},
        {"seal-key-name", required_argument, NULL, OPT_NAME},
        {NULL, 0, NULL, 0},
    };
    rs_expire_opts o = RS_EXPIRE_INIT;
    const char *key_path = NULL, *key_name = NULL, *age = NULL;
    rs_err err = {0};
    char *end = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == OPT_AGE && rs_duration_parse(optarg, &o.older_than_s, &err) == 0)
            age = optarg;
        else if (c == OPT_AGE)
            return usage("expire", err.msg);
        else if (c == OPT_KEEP && (o.keep_runs = strtoll(optarg, &end, 10)) >= 0 && *optarg &&
                 !*end)
            continue;
        else if (c == OPT_KEEP)
            return usage("expire", "--keep-runs takes a whole number, 0 or more");
        else if ((c == OPT_THREAD || c == OPT_USER) && rs_id_valid(optarg))
            *(c == OPT_THREAD ? &o.thread_id : &o.user) = optarg;
        else if (c == OPT_DRY)
            o.dry_run = 1;
        else if (c == OPT_KEY)
            key_path = optarg;
        else if (c == OPT_NAME)
            key_name = optarg;
        else
            return usage("expire", c == OPT_THREAD || c == OPT_USER
                                       ? "--thread and --user take 1-64 of [A-Za-z0-9_-]"
                                       : "unknown option or missing value");
    }
    if (argc - optind != 1 || (!age) == (o.keep_runs < 0))
        return usage("expire", "expected STORE and one of --older-than DURATION, --keep-runs N");
    if (key_name && !key_path)
        return usage("expire", "--seal-key-name names the key of --seal-key: give both");
    rs_buf policy = RS_BUF_INIT;
    if (age ? rs_buf_addf(&policy, "older-than %s", age)
            : rs_buf_addf(&policy, "keep-runs %lld", (long long)o.keep_runs)) {
        fprintf(stderr, "runfs: out of memory\n");
        return 2;
    }
    o.policy = policy.buf;
    rs_seal_key *key = NULL;
    if (key_path && rs_seal_key_load(&key, key_path, key_name, &err)) {
        fprintf(stderr, "runfs: --seal-key: %s\n", err.msg);
        rs_buf_release(&policy);
        return 2;
    }
    rs_options opt = RS_OPTIONS_INIT;
    opt.seal_key = key;
    /* A dry run writes nothing, not even the store's own bookkeeping. */
    opt.read_only = o.dry_run;
    rs_store *s;
    rs_buf warn = RS_BUF_INIT;
    int status = 2;
    if (rs_store_open(&s, argv[optind], &opt, &err)) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        goto done;
    }
    int rc = rs_store_expire(s, &o, print_expired, NULL, &warn, &err);
    rs_store_close(s);
    if (rc < 0) {
        fprintf(stderr, "runfs: expire: %s (%s)\n", err.msg, rs_errno_name(rc));
        status = 1;
        goto done;
    }
    if (warn.len)
        fprintf(stderr, "runfs: warning: %s\n", warn.buf);
    fprintf(stderr, "runfs: %d run%s %s\n", rc, rc == 1 ? "" : "s",
            o.dry_run ? "would expire (dry run: nothing changed)" : "expired");
    status = fflush(stdout) == 0 ? 0 : 1;
done:
    rs_buf_release(&policy);
    rs_buf_release(&warn);
    rs_seal_key_free(key);
    return status;
}
