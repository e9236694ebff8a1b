/* umount.c — `runfs umount`: unmount a runfs mount and return once its daemon has exited,
 * so that the next command (sqlite3, a backup, another mount) finds the store free: the
 * kernel lets fusermount3 return before the daemon has even seen the unmount. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runstore.h"
#include "rs_util.h"
#include "umount.h"

/* How long the daemon may take to close the store (a checkpoint of a large WAL) after the
 * unmount before the command gives up waiting and says so. */
#define UMOUNT_WAIT_MS 30000

/* DIR as /proc/self/mountinfo spells its mount point. A dead daemon's mount point answers
 * ENOTCONN to realpath: its parent is resolved instead. */
static int umount_abspath(const char *dir, rs_buf *out)
{
    char *real = realpath(dir, NULL);
    if (real) {
        int rc = rs_buf_addstr(out, real);
        free(real);
        return rc;
    }
    if (errno != ENOTCONN)
        return -errno;
    rs_buf parent = RS_BUF_INIT;
    const char *slash = strrchr(dir, '/');
    int rc = slash ? rs_buf_add(&parent, dir, slash == dir ? 1 : (size_t)(slash - dir))
                   : rs_buf_addch(&parent, '.');
    char *up = rc ? NULL : realpath(parent.buf, NULL);
    if (!rc && !up)
        rc = -errno;
    if (!rc)
        rc = rs_buf_addf(out, "%s/%s", strcmp(up, "/") == 0 ? "" : up, slash ? slash + 1 : dir);
    free(up);
    rs_buf_release(&parent);
    return rc;
}

/* mountinfo's octal escapes (\040 for a space) undone in place. */
static void umount_unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* The topmost mount at path: 1 with its filesystem type and device, 0 when none. */
static int umount_find(const char *path, char *fstype, size_t cap, unsigned *dev)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -errno;
    char *line = NULL;
    size_t len = 0;
    int found = 0;
    while (getline(&line, &len, f) > 0) {
        char *save = NULL, *field[5];
        int n = 0;
        for (char *tok = strtok_r(line, " \n", &save); tok && n < 5;
             tok = strtok_r(NULL, " \n", &save))
            field[n++] = tok;
        unsigned major, minor;
        if (n < 5 || sscanf(field[2], "%u:%u", &major, &minor) != 2)
            continue;
        umount_unescape(field[4]);
        if (strcmp(field[4], path) != 0)
            continue;
        /* The type follows the optional fields' " - " separator. */
        char *tok;
        while ((tok = strtok_r(NULL, " \n", &save)) && strcmp(tok, "-") != 0)
            ;
        tok = tok ? strtok_r(NULL, " \n", &save) : NULL;
        if (rs_fmt(fstype, cap, "%s", tok ? tok : "") < 0)
            fstype[0] = '\0';
        /* The kernel's dev_t, as FUSE numbers its connections. */
        *dev = major << 20 | minor;
        found = 1;
    }
    free(line);
    fclose(f);
    return found;
}

/* Whether fdinfo (Linux 6.16 and later name the FUSE connection of a /dev/fuse fd) says
 * the fd serves connection dev. */
static int umount_fd_serves(const char *pid, const char *fd, unsigned dev)
{
    char path[64], line[128];
    if (rs_fmt(path, sizeof path, "/proc/%s/fdinfo/%s", pid, fd) < 0)
        return 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    unsigned conn;
    int serves = 0;
    while (!serves && fgets(line, sizeof line, f))
        serves = sscanf(line, "fuse_connection: %u", &conn) == 1 && conn == dev;
    fclose(f);
    return serves;
}

/* The process holding the FUSE connection dev, found without asking it: 0 when none of
 * ours does, or the kernel does not say. */
static pid_t umount_pid_by_fd(unsigned dev)
{
    DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    pid_t found = 0;
    struct dirent *p;
    while (!found && (p = readdir(proc))) {
        char fds[64], link[64], target[16];
        if (p->d_name[0] < '1' || p->d_name[0] > '9' ||
            rs_fmt(fds, sizeof fds, "/proc/%s/fd", p->d_name) < 0)
            continue;
        DIR *d = opendir(fds);
        struct dirent *e;
        while (d && !found && (e = readdir(d))) {
            if (e->d_name[0] == '.' || rs_fmt(link, sizeof link, "%s/%s", fds, e->d_name) < 0)
                continue;
            ssize_t n = readlink(link, target, sizeof target - 1);
            if (n != 9 || memcmp(target, "/dev/fuse", 9) != 0)
                continue;
            if (umount_fd_serves(p->d_name, e->d_name, dev))
                found = (pid_t)atol(p->d_name);
        }
        if (d)
            closedir(d);
    }
    closedir(proc);
    return found;
}

/* Older kernels: the daemon's pid from its status.json, read in a child that a hung daemon
 * cannot hold for more than two seconds (a FUSE request yields to a fatal signal). */
static pid_t umount_pid_by_status(const char *mnt)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    pid_t child = fork();
    if (child == 0) {
        close(fds[0]);
        alarm(2);
        rs_buf path = RS_BUF_INIT;
        char buf[4096];
        long pid = 0;
        FILE *f = rs_buf_addf(&path, "%s/.runfs/status.json", mnt) ? NULL : fopen(path.buf, "re");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        buf[n] = '\0';
        const char *at = strstr(buf, "\"pid\":");
        if (at)
            pid = atol(at + 6);
        _exit(write(fds[1], &pid, sizeof pid) == (ssize_t)sizeof pid ? 0 : 1);
    }
    close(fds[1]);
    long pid = 0;
    if (child < 0 || read(fds[0], &pid, sizeof pid) != (ssize_t)sizeof pid)
        pid = 0;
    close(fds[0]);
    if (child > 0)
        waitpid(child, NULL, 0);
    return pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

/* A descriptor that polls readable once the process has exited (its files closed), even
 * when it is no child of ours and its parent has not reaped it; -1 without one. */
static int umount_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    return pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
#else
    (void)pid;
    return -1;
#endif
}

static int umount_run_fusermount(const char *dir)
{
    pid_t child = fork();
    if (child == 0) {
        execlp("fusermount3", "fusermount3", "-u", "--", dir, (char *)NULL);
        fprintf(stderr, "runfs: cannot run fusermount3: %s\n", strerror(errno));
        _exit(127);
    }
    int status;
    if (child < 0 || waitpid(child, &status, 0) < 0) {
        fprintf(stderr, "runfs: cannot run fusermount3: %s\n", strerror(errno));
        return -errno;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

int rfs_cmd_umount(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "runfs umount: expected MOUNTPOINT (see 'runfs umount --help')\n");
        return 2;
    }
    const char *dir = argv[1];
    rs_buf abs = RS_BUF_INIT;
    char fstype[64];
    unsigned dev = 0;
    int rc = umount_abspath(dir, &abs);
    if (rc) {
        fprintf(stderr, "runfs: %s: %s\n", dir, strerror(-rc));
        rs_buf_release(&abs);
        return 2;
    }
    rc = umount_find(abs.buf, fstype, sizeof fstype, &dev);
    if (rc <= 0 || strcmp(fstype, "fuse.runfs") != 0) {
        if (rc < 0)
            fprintf(stderr, "runfs: cannot read /proc/self/mountinfo: %s\n", strerror(-rc));
        else
            fprintf(stderr, "runfs: %s: not a runfs mount\n", dir);
        rs_buf_release(&abs);
        return 2;
    }
    pid_t pid = umount_pid_by_fd(dev);
    if (!pid)
        pid = umount_pid_by_status(abs.buf);
    rs_buf_release(&abs);
    /* Taken before the unmount, so the pid cannot be reused under us. */
    int pidfd = umount_pidfd(pid);
    if (umount_run_fusermount(dir)) {
        if (pidfd >= 0)
            close(pidfd);
        return 1;
    }
    if (pidfd < 0)
        return 0;
    struct pollfd pf = {.fd = pidfd, .events = POLLIN};
    int ready;
    while ((ready = poll(&pf, 1, UMOUNT_WAIT_MS)) < 0 && errno == EINTR)
        ;
    close(pidfd);
    if (ready == 0) {
        fprintf(stderr,
                "runfs: %s is unmounted, but its daemon (pid %ld) has not exited after %d s: "
                "the store may still be in use\n",
                dir, (long)pid, UMOUNT_WAIT_MS / 1000);
        return 1;
    }
    return 0;
}
