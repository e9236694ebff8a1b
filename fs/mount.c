/* mount.c — `runfs mount`: check the mountpoint, mount, go to the background once the mount
 * is ready (like sshfs), serve with a multi-threaded loop, and unwind cleanly on unmount,
 * SIGINT or SIGTERM (store closed, WAL checkpointed). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <fcntl.h>
#include <grp.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attrs.h"
#include "listings.h"
#include "hub.h"
#include "log.h"
#include "mount.h"
#include "pending.h"
#include "pool.h"
#include "progress.h"
#include "rejects.h"
#include "keeper.h"
#include "retain.h"
#include "sizes.h"
#include "rs_util.h"

/* A mountpoint left by a daemon that died answers ENOTCONN; a lazy unmount clears it. Asked
 * with statfs, which the kernel always sends to the daemon: a stat may be answered from
 * attributes it still caches (default_permissions looks them up on every path walk). */
static int clear_stale_mount(const char *mountpoint)
{
    struct statvfs sv;
    if (statvfs(mountpoint, &sv) == 0 || errno != ENOTCONN)
        return 0;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execlp("fusermount3", "fusermount3", "-u", "-z", mountpoint, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        statvfs(mountpoint, &sv) != 0) {
        fprintf(stderr,
                "runfs: %s is a stale mount left by a daemon that died; run "
                "'fusermount3 -u -z %s' and mount again\n",
                mountpoint, mountpoint);
        return -ENOTCONN;
    }
    fprintf(stderr, "runfs: cleared a stale mount at %s\n", mountpoint);
    return 0;
}

static int check_mountpoint(const char *mountpoint)
{
    int rc = clear_stale_mount(mountpoint);
    if (rc)
        return rc;
    struct stat st;
    if (stat(mountpoint, &st) != 0) {
        fprintf(stderr, "runfs: mountpoint %s: %s\n", mountpoint, strerror(errno));
        return -errno;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "runfs: mountpoint %s is not a directory\n", mountpoint);
        return -ENOTDIR;
    }
    struct stat parent;
    char up[4096];
    if (rs_fmt(up, sizeof up, "%s/..", mountpoint) < 0) {
        fprintf(stderr, "runfs: mountpoint %s: %s\n", mountpoint, strerror(ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
    if (stat(up, &parent) == 0 && parent.st_dev != st.st_dev) {
        fprintf(stderr,
                "runfs: %s is busy: something is already mounted there (unmount it "
                "with 'fusermount3 -u %s')\n",
                mountpoint, mountpoint);
        return -EBUSY;
    }
    if (access("/dev/fuse", R_OK | W_OK) != 0) {
        int e = errno;
        struct stat dev;
        struct group *gr = NULL;
        /* A group that may read and write the device is the usual way in (Debian's fuse). */
        if (stat("/dev/fuse", &dev) == 0 && dev.st_gid != 0 && (dev.st_mode & 060) == 060)
            gr = getgrgid(dev.st_gid);
        if (e != EACCES && e != EPERM)
            fprintf(stderr,
                    "runfs: /dev/fuse is unavailable (%s): load the fuse module or run "
                    "the container with --device /dev/fuse\n",
                    strerror(e));
        else if (gr)
            fprintf(stderr,
                    "runfs: /dev/fuse: permission denied: this user may not use FUSE; add it "
                    "to the group %s (usermod -aG %s USER, then log in again), or mount as "
                    "root\n",
                    gr->gr_name, gr->gr_name);
        else
            fprintf(stderr, "runfs: /dev/fuse: permission denied: this user may not use FUSE; open "
                            "/dev/fuse to a group of this user's (as the fuse group: chgrp fuse "
                            "/dev/fuse; chmod 660 /dev/fuse), or mount as root\n");
        return e == EACCES || e == EPERM ? -EACCES : -ENODEV;
    }
    return 0;
}

/* Tell systemd (Type=notify) how the mount is doing: a datagram to $NOTIFY_SOCKET, a path
 * or an abstract name ('@'), as sd_notify(3) sends it (no libsystemd needed). */
static int notify_systemd(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || (path[0] != '/' && path[0] != '@'))
        return 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len >= sizeof sa.sun_path)
        return -ENAMETOOLONG;
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@')
        sa.sun_path[0] = '\0';
    /* An abstract name is exactly its bytes; a path ends with its NUL. */
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0
                 ? -errno
                 : 0;
    close(fd);
    if (rc)
        rfs_log("cannot notify systemd (%s) of %s: %s", path, state, strerror(-rc));
    return rc;
}

/* A store this mount created is 0600 (store/sqlite): with -o gid= the group reads it too
 * (0640), as it reads the mount; the -wal and -shm files beside it alike. */
static int share_with_group(const char *path, gid_t gid)
{
    static const char *const suffix[] = {"", "-wal", "-shm"};
    rs_buf p = RS_BUF_INIT;
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof suffix / sizeof suffix[0]; i++) {
        rs_buf_reset(&p);
        if ((rc = rs_buf_addf(&p, "%s%s", path, suffix[i])))
            break;
        if ((chown(p.buf, (uid_t)-1, gid) != 0 || chmod(p.buf, 0640) != 0) && errno != ENOENT) {
            rc = -errno;
            fprintf(stderr, "runfs: %s: %s\n", p.buf, strerror(errno));
        }
    }
    rs_buf_release(&p);
    return rc;
}

static int add_arg(struct fuse_args *args, const char *fmt, const char *value)
{
    char buf[4096];
    int rc = rs_fmt(buf, sizeof buf, fmt, value);
    return rc < 0 ? rc : fuse_opt_add_arg(args, buf);
}

/* An open that indexes rows (a store of an older layout, converted: threads are otherwise
 * indexed at their first use) says on a terminal how far it has got (the line appears once
 * it has taken a moment). */
typedef struct index_progress {
    rfs_progress *line;
    int64_t shown;
    char unit[48];
} index_progress;

static void index_tick(void *ctx, int64_t done, int64_t total)
{
    index_progress *ip = ctx;
    if (!ip->line && done > 0) {
        /* 48 bytes hold "of " and any int64's digits */
        if (rs_fmt(ip->unit, sizeof ip->unit, total > 0 ? "of %lld rows" : "rows",
                   (long long)total) < 0)
            return;
        ip->line = rfs_progress_new("indexing", ip->unit);
    }
    rfs_progress_tick(ip->line, done - ip->shown);
    ip->shown = done;
}

/* The store's notice (rs_options.notice): every connection of the pool may give it; the log
 * says it once. */
static void store_notice(void *ctx, const char *msg)
{
    rfs_mount *m = ctx;
    if (!atomic_exchange(&m->noticed, 1))
        rfs_log("%s", msg);
}

/* The mount's options as the daemon uses them, and the store's taken from them. */
static void mount_setup(rfs_mount *m, const rfs_options *opt, const rs_seal_key *seal_key)
{
    m->opt = *opt;
    m->store_opt = (rs_options)RS_OPTIONS_INIT;
    m->store_opt.seal_key = seal_key;
    m->store_opt.contract_path = opt->contract;
    m->store_opt.sync_full = opt->sync_full;
    m->store_opt.allow_unknown_events = opt->allow_unknown;
    m->store_opt.stamp_time = opt->stamp_time;
    m->store_opt.read_only = opt->read_only;
    m->store_opt.max_event_bytes = RS_DEFAULT_MAX_EVENT;
    m->store_opt.owners_apart = opt->user || opt->user_from_uid;
    m->store_opt.notice = store_notice;
    m->store_opt.notice_ctx = m;
    if (m->opt.uid < 0)
        m->opt.uid = (long)getuid();
    if (m->opt.gid < 0)
        m->opt.gid = (long)getgid();
    if (m->opt.umask < 0)
        m->opt.umask = 022;
    /* The probe (mount_run) is the first open: it fixes the file every later connection must
     * find at the path (none may create a new one). */
    m->store_opt.pin_file = 1;
    m->mount_ns = rs_clock_ns(CLOCK_REALTIME);
    pthread_mutex_init(&m->handles_lock, NULL);
    pthread_rwlock_init(&m->attr_lock, NULL);
    pthread_mutex_init(&m->sizing_lock, NULL);
    /* The first ls -la of a huge thread renders its views for their sizes: when that takes
     * this long the log and status.json say so (tests set it to 0). */
    const char *slow = getenv("RUNFS_SLOW_MS");
    m->slow_ns = (slow && *slow ? atoll(slow) : 1000) * 1000000LL;
}

/* Where owners are apart, one owner's unfinished lines cannot take every byte; a share
 * still holds one event of the largest size. */
static size_t pending_share(const rfs_mount *m)
{
    size_t share = m->opt.max_pending, event_max = m->store_opt.max_event_bytes
                                                       ? m->store_opt.max_event_bytes
                                                       : RS_DEFAULT_MAX_EVENT;
    if (m->store_opt.owners_apart && m->opt.user_from_uid) {
        share /= RFS_PENDING_SHARES;
        if (share < event_max)
            share = event_max < m->opt.max_pending ? event_max : m->opt.max_pending;
    }
    return share;
}

/* FUSE over io_uring (Linux 6.14+, libfuse 3.18): the kernel offers it at INIT only where
 * root has turned it on, before the mount, in this file. */
#define URING_PARAM "/sys/module/fuse/parameters/enable_uring"
/* Each CPU's ring holds this many requests in flight, parked follow.jsonl reads included
 * (libfuse's default is 8). */
#define URING_DEPTH "32"
/* The read-ahead a mount asks for where it may (raise_readahead): one request's worth. */
#define RFS_READAHEAD_KB "1024"

#if RFS_FUSE_URING
/* The kernel's switch: 'Y' or 'N', or 0 where the kernel has no FUSE over io_uring. */
static int uring_switch(void)
{
    char c = 0;
    int fd = open(URING_PARAM, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (read(fd, &c, 1) != 1)
        c = 0;
    close(fd);
    return c;
}
#endif

void rfs_mount_transport(rfs_mount *m, const struct fuse_conn_info *conn)
{
    static const char switched_off[] = "io_uring is off in the kernel (" URING_PARAM " is N)";
    const char *why = NULL;
#if RFS_FUSE_URING
    if (!m->uring_asked)
        why = "FUSE_URING_ENABLE=0 in the daemon's environment";
    else if (!(conn->capable & FUSE_CAP_OVER_IO_URING))
        why = uring_switch() == 'N' ? switched_off
                                    : "the kernel has no FUSE over io_uring (Linux 6.14+, "
                                      "CONFIG_FUSE_IO_URING)";
#elif FUSE_VERSION < FUSE_MAKE_VERSION(3, 18)
    (void)conn;
    why = "runfs is built against a libfuse older than 3.18 (-Dsystem_fuse=true)";
#else
    (void)conn;
    why = "runfs is built against a libfuse without io_uring (no liburing)";
#endif
    atomic_store(&m->transport_why, why);
    atomic_store(&m->transport, why ? RFS_TRANSPORT_DEV_FUSE : RFS_TRANSPORT_IO_URING);
    if (!why)
        rfs_log("requests over io_uring");
    else if (why == switched_off)
        rfs_log("requests over /dev/fuse: %s; to use io_uring, as root: echo 1 > %s, then "
                "mount again",
                why, URING_PARAM);
    else
        rfs_log("requests over /dev/fuse: %s", why);
}

#if RFS_FUSE_URING
/* The mount whose INIT libfuse may report on: set before the session starts (one thread),
 * only read after. */
static rfs_mount *uring_mount;

/* libfuse's messages go where they always went (stderr); the one that says its rings did
 * not start (fuse_lowlevel.c, during INIT, after op_init) leaves the mount on /dev/fuse. */
static void fuse_message(enum fuse_log_level level, const char *fmt, va_list ap)
{
    char msg[512];
    (void)level;
    (void)rs_vfmt(msg, sizeof msg, fmt, ap); /* a longer message is kept cut, marked */
    if (uring_mount && strstr(msg, "failed to start io-uring")) {
        msg[strcspn(msg, "\n")] = 0;
        atomic_store(&uring_mount->transport_why, "io_uring failed to start");
        atomic_store(&uring_mount->transport, RFS_TRANSPORT_DEV_FUSE);
        rfs_log("requests over /dev/fuse: io_uring failed to start (%s)", msg);
        return;
    }
    fputs(msg, stderr);
}
#endif

/* The kernel reads a file ahead at most its mount's read_ahead_kb (128 KiB unless raised,
 * which only root may do): where the daemon may, it raises this mount's to the 1 MiB a request
 * carries, before INIT (which keeps the smaller of it and op_init's max_readahead), so a first
 * cat takes 1 MiB per round trip. The mount's device is found in /proc/self/mountinfo: a
 * stat of the mountpoint would wait for INIT, which this thread has yet to serve. */
static void raise_readahead(const char *mnt)
{
    FILE *fp = fopen("/proc/self/mountinfo", "re");
    if (!fp)
        return;
    char line[8192], dev[32] = "", path[4096];
    while (fgets(line, sizeof line, fp)) {
        char id[32], at[4096];
        /* mount id, parent id, major:minor, root, mount point (octal escapes) */
        if (sscanf(line, "%*s %*s %31s %*s %4095s", id, at) != 2)
            continue;
        size_t n = 0;
        for (const char *c = at; *c && n + 1 < sizeof path; n++) {
            if (c[0] == '\\' && c[1] >= '0' && c[1] <= '3' && c[2] && c[3]) {
                path[n] = (char)((c[1] - '0') * 64 + (c[2] - '0') * 8 + (c[3] - '0'));
                c += 4;
            } else {
                path[n] = *c++;
            }
        }
        path[n] = 0;
        if (strcmp(path, mnt) == 0 && strstr(line, " - fuse.runfs "))
            memcpy(dev, id, sizeof dev); /* the last one: the newest mount there */
    }
    fclose(fp);
    char sys[96];
    if (!dev[0] || rs_fmt(sys, sizeof sys, "/sys/class/bdi/%s/read_ahead_kb", dev) < 0)
        return;
    int fd = open(sys, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    (void)!write(fd, RFS_READAHEAD_KB, strlen(RFS_READAHEAD_KB)); /* no matter if refused */
    close(fd);
}

/* Serve requests until the unmount or a signal; 0 for a clean stop. */
static int session_loop(rfs_mount *m, const char *mnt)
{
    struct fuse_loop_config *cfg = fuse_loop_cfg_create();
    if (!cfg)
        return 1;
    fuse_loop_cfg_set_clone_fd(cfg, 0);
    fuse_loop_cfg_set_max_threads(cfg, 64);
    fuse_loop_cfg_set_idle_threads(cfg, 8);
    /* libfuse returns the signal that ended the loop: SIGTERM, SIGINT and SIGHUP are the
     * clean stops it handles (systemd's stop is a SIGTERM), so they exit 0. */
    int loop = fuse_session_loop_mt(m->se, cfg);
    fuse_loop_cfg_destroy(cfg);
    rfs_ops_free_handles(m);
    rfs_log("unmounting %s", mnt);
    return loop == 0 || loop == SIGTERM || loop == SIGINT || loop == SIGHUP ? 0 : 1;
}

static int mount_run(rfs_options *opt, const rs_seal_key *seal_key)
{
    rfs_mount m;
    memset(&m, 0, sizeof m);
    mount_setup(&m, opt, seal_key);

    if (check_mountpoint(opt->mountpoint))
        return 1;
    /* Open once up front so a bad store or contract fails here, in the foreground; the
     * handle is closed before the fork (SQLite handles must not cross one). */
    rs_store *probe;
    rs_err err = {0};
    index_progress ip = {0};
    rs_options probe_opt = m.store_opt;
    probe_opt.progress = index_tick;
    probe_opt.progress_ctx = &ip;
    int64_t t0 = rs_clock_ns(CLOCK_MONOTONIC);
    struct stat pre;
    int created = !strstr(opt->store, "://") && stat(opt->store, &pre) != 0 && errno == ENOENT;
    /* A typo must not mount a new empty store (rclone and sshfs refuse an unknown remote
     * too); a read-only mount never creates one, and the store says so. */
    if (created && !opt->create && !opt->read_only) {
        fprintf(stderr,
                "runfs: no store at %s: a mount creates one only with --create (or make it "
                "with 'runfs put' or 'runfs import')\n",
                opt->store);
        return 2;
    }
    int rc = rs_store_open(&probe, opt->store, &probe_opt, &err);
    if (!rc && created && opt->gid >= 0 && (rc = share_with_group(opt->store, (gid_t)opt->gid)))
        rs_store_close(probe);
    if (ip.line)
        rfs_progress_done(ip.line, "%lld rows in %.1f s", (long long)ip.shown,
                          (double)(rs_clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
    if (rc) {
        fprintf(stderr, "runfs: %s\n", err.msg[0] ? err.msg : strerror(-rc));
        return 2;
    }
    /* /proc/mounts shows a URI without its password. */
    int remote = strstr(opt->store, "://") != NULL;
    char *shown = remote ? strdup(rs_store_path(probe)) : NULL;
    rs_store_close(probe);
    /* The daemon runs from /: keep the store's absolute path (a URI is one already). */
    char *abs_store = remote ? strdup(opt->store) : realpath(opt->store, NULL);
    if (!abs_store || (remote && !shown)) {
        fprintf(stderr, "runfs: %s: %s\n", opt->store, strerror(errno));
        free(abs_store);
        free(shown);
        return 1;
    }
    m.opt.store = abs_store;
    /* And the mountpoint's: the unmount at SIGTERM runs from / too. */
    char *abs_mnt = realpath(opt->mountpoint, NULL);
    if (!abs_mnt) {
        fprintf(stderr, "runfs: %s: %s\n", opt->mountpoint, strerror(errno));
        free(abs_store);
        free(shown);
        return 1;
    }
    m.opt.mountpoint = abs_mnt;
    if (rfs_log_open(opt->log_file)) {
        free(abs_store);
        free(abs_mnt);
        free(shown);
        return 1;
    }

    int status = 1;
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    /* Asked for unless libfuse's own switch says no (FUSE_URING_ENABLE=0: the sanitizer
     * suites keep to /dev/fuse, where the kernel's ordering of requests is visible to TSan). */
    const char *uring_env = getenv("FUSE_URING_ENABLE");
    m.uring_asked = RFS_FUSE_URING && !(uring_env && atoi(uring_env) == 0);
    /* -o ro goes to the kernel too, so /proc/mounts and findmnt say ro: the kernel then
     * refuses writes itself (EROFS) before they reach the daemon. */
    if (fuse_opt_add_arg(&args, "runfs") ||
        add_arg(&args, "-ofsname=runfs:%s", remote ? shown : abs_store) ||
        fuse_opt_add_arg(&args, "-osubtype=runfs") ||
        (opt->fuse_opts[0] && add_arg(&args, "-o%s", opt->fuse_opts)) ||
        (opt->read_only && fuse_opt_add_arg(&args, "-oro")) ||
        /* The kernel enforces the modes ls -l shows, for every caller. */
        fuse_opt_add_arg(&args, "-odefault_permissions") ||
        (opt->debug && fuse_opt_add_arg(&args, "-d"))
#if RFS_FUSE_URING
        /* libfuse uses it only where the kernel offers it at INIT. */
        || (m.uring_asked && (fuse_opt_add_arg(&args, "-oio_uring") ||
                              fuse_opt_add_arg(&args, "-oio_uring_q_depth=" URING_DEPTH)))
#endif
    ) {
        fprintf(stderr, "runfs: out of memory\n");
        goto out_args;
    }
    if (rfs_itable_new(&m.inodes) || rfs_attrs_new(&m.attrs) ||
        rfs_listings_new(&m.listings, rfs_dir_free) || rfs_rejects_new(&m.rejects) ||
        rfs_sizes_new(&m.sizes) ||
        rfs_pending_new(&m.pending, opt->max_pending, pending_share(&m)) || rfs_pool_start(&m)) {
        fprintf(stderr, "runfs: out of memory\n");
        goto out_tables;
    }

    m.se = fuse_session_new(&args, &rfs_ops, sizeof rfs_ops, &m);
    if (!m.se) {
        fprintf(stderr, "runfs: cannot start a FUSE session\n");
        goto out_tables;
    }
#if RFS_FUSE_URING
    uring_mount = &m;
    fuse_set_log_func(fuse_message);
#endif
    if (fuse_set_signal_handlers(m.se) != 0)
        goto out_session;
    if (fuse_session_mount(m.se, abs_mnt) != 0) {
        fprintf(stderr, "runfs: cannot mount %s (is it busy, or is /dev/fuse missing?)\n", abs_mnt);
        goto out_signals;
    }
    raise_readahead(abs_mnt);
    if (!opt->foreground)
        rfs_log_daemonised();
    if (fuse_daemonize(opt->foreground) != 0)
        goto out_unmount;
    /* Before the hub, which tells it of appends, and stopped after it. Best effort: without
     * it a run's first diff reads its rows. */
    if (rfs_keeper_start(&m) != 0)
        rfs_log("cannot start the step keeper: first diffs read every row");
    if (rfs_hub_start(&m) != 0) {
        rfs_keeper_stop(&m);
        goto out_unmount;
    }
    if (rfs_retain_start(&m) != 0) {
        rfs_log("cannot start --retain's passes");
        rfs_hub_stop(&m);
        rfs_keeper_stop(&m);
        goto out_unmount;
    }
    rfs_log("mounted %s at %s%s", remote ? shown : abs_store, abs_mnt,
            opt->read_only ? " (ro)" : "");
    (void)notify_systemd("READY=1");

    status = session_loop(&m, abs_mnt);
    (void)notify_systemd("STOPPING=1");
    rfs_retain_stop(&m);
    rfs_hub_stop(&m);
    rfs_keeper_stop(&m);
out_unmount:
    fuse_session_unmount(m.se);
out_signals:
    fuse_remove_signal_handlers(m.se);
out_session:
    fuse_session_destroy(m.se);
#if RFS_FUSE_URING
    fuse_set_log_func(NULL);
    uring_mount = NULL;
#endif
out_tables:
    rfs_pool_stop(&m);
    rfs_itable_free(m.inodes);
    rfs_attrs_free(m.attrs);
    rfs_listings_free(m.listings);
    rfs_rejects_free(m.rejects);
    rfs_sizes_free(m.sizes);
    rfs_pending_free(m.pending);
out_args:
    fuse_opt_free_args(&args);
    pthread_mutex_destroy(&m.handles_lock);
    pthread_rwlock_destroy(&m.attr_lock);
    pthread_mutex_destroy(&m.sizing_lock);
    free(abs_store);
    free(abs_mnt);
    free(shown);
    return status;
}

int rfs_mount_main(rfs_options *opt)
{
    /* The key is read here, in the foreground, before the daemon leaves for '/'. */
    rs_seal_key *key = NULL;
    rs_err err = {0};
    if (opt->seal_key && rs_seal_key_load(&key, opt->seal_key, opt->seal_key_name, &err)) {
        fprintf(stderr, "runfs: --seal-key: %s\n", err.msg);
        return 2;
    }
    if (opt->retain && opt->read_only) {
        fprintf(stderr, "runfs: --retain removes runs: it needs a read-write mount\n");
        return 2;
    }
    if (!opt->seal_key && opt->seal_key_name) {
        fprintf(stderr, "runfs: --seal-key-name names the key of --seal-key: give both\n");
        return 2;
    }
    /* Every FUSE worker renders (search answers, views) into buffers of up to a request's
     * 1 MiB that it frees at once. glibc gives each thread an arena of its own (up to eight
     * per core), and once such a buffer is freed it raises its mmap threshold past it, so
     * the next ones stay in the arenas: the daemon's peak became every worker's (a 97 MB
     * search answer read once: 33-49 MiB). Four arenas, and buffers of 256 KiB and more
     * always mapped and given back at free: 9-12 MiB, as fast. Set before any thread. */
    mallopt(M_ARENA_MAX, 4);
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    int status = mount_run(opt, key);
    rs_seal_key_free(key);
    return status;
}
