/* deerflow.c — `runfs import|export STORE --deerflow-jsonl DIR`: DeerFlow's JSONL store
 * folder (.deer-flow/threads/T/runs/R.jsonl) into a store and back, streamed a line at a
 * time, with the store's own checks and DeerFlow's own byte format. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deerflow.h"
#include "progress.h"
#include "sizes.h"
#include "stepdiff.h"
#include "view.h"
#include "rs_util.h"

#define WATERMARK ".seq-watermark"

/* A usage error: one line, exit 2. */
static int usage_error(const char *cmd, const char *what)
{
    fprintf(stderr, "runfs %s: %s (see 'runfs %s --help')\n", cmd, what, cmd);
    return 2;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the entries of dir that keep(name) accepts; NULL-terminated. */
static int list_dir(const char *dir, int (*keep)(const char *name), char ***out, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    char **names = NULL;
    size_t count = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!keep(e->d_name))
            continue;
        if ((rc = rs_array_grow(&names, &cap, count + 2, sizeof *names)))
            break;
        if (!(names[count] = strdup(e->d_name))) {
            rc = -ENOMEM;
            break;
        }
        names[++count] = NULL;
    }
    closedir(d);
    if (!rc && !names && !(names = calloc(1, sizeof *names)))
        rc = -ENOMEM;
    if (rc) {
        for (size_t i = 0; i < count; i++)
            free(names[i]);
        free(names);
        return rc;
    }
    qsort(names, count, sizeof *names, cmp_names);
    *out = names;
    *n = count;
    return 0;
}

static void free_names(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

static int not_dot(const char *name)
{
    return strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

static int is_jsonl(const char *name)
{
    size_t n = strlen(name);
    return n > 6 && strcmp(name + n - 6, ".jsonl") == 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* NULL when path is a folder (not a link to one) or absent, else what it is instead. */
static const char *not_a_folder(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return NULL;
    return S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? NULL : "not a directory";
}

/* DIR itself when it holds threads/, else DIR/.deer-flow when that does. */
static int base_dir(const char *dir, int must_exist, rs_buf *out)
{
    rs_buf_reset(out);
    rs_buf probe = RS_BUF_INIT;
    int rc = rs_buf_addf(&probe, "%s/threads", dir);
    if (!rc && !is_dir(probe.buf)) {
        rs_buf_reset(&probe);
        if (!(rc = rs_buf_addf(&probe, "%s/.deer-flow/threads", dir)) && is_dir(probe.buf)) {
            rc = rs_buf_addf(out, "%s/.deer-flow", dir);
            rs_buf_release(&probe);
            return rc;
        }
        if (!rc && must_exist)
            rc = -ENOTDIR;
    }
    rs_buf_release(&probe);
    return rc ? rc : rs_buf_addstr(out, dir);
}

/* ---- import --------------------------------------------------------------------------- */

typedef struct import_state {
    const char *runs_dir; /* DIR/threads/T/runs */
    char **files;         /* its *.jsonl, sorted */
    size_t next_file;
    FILE *in;
    char run_id[RS_ID_MAX + 8];
    rs_buf path; /* the file being read */
    long lineno;
    rs_buf line; /* the line being read, never longer than max + 1 bytes */
    size_t max;  /* the store's event size limit */
    int strict;  /* --strict: a file that is not a regular one is refused */
    int refused; /* set when --strict refused one */
    int skip_bad;
    long skipped_lines;
    rfs_progress *progress;
    rfs_lines *lines; /* the rows stored, counted for the line views' sizes (NULL: not) */
    int lines_lost;   /* a row could not be counted: the sizes read the rows back */
    /* Each run's step data, made from the rows stored (stepdiff.h), so that its first diff
     * reads no row: the runs done, then the one being stored. */
    int64_t rewrites; /* rs_store_rewrites before the thread's import (-1: none kept) */
    rfs_stepfeed **fed, *feed;
    size_t nfed, fed_cap;
    int steps_lost; /* a row could not be fed: no run of the thread is kept */
    /* The runs' files as opened, by size: a small run is not fed (STEPS_MIN_BYTES). */
    struct run_file {
        char run_id[RS_ID_MAX + 1];
        off_t size;
    } * files_seen;
    size_t nseen, seen_cap;
    char unfed[RS_ID_MAX + 1]; /* the small run whose rows are passing */
} import_state;

/* A run whose file is smaller is not kept by the import: a first diff reads its rows in
 * about what it takes to read the kept data (a thousand events of a few hundred bytes: a
 * millisecond or two), while feeding it cost the import as much a row as a big run's. */
#define STEPS_MIN_BYTES (256 << 10)

static void feeds_free(import_state *st)
{
    for (size_t i = 0; i < st->nfed; i++)
        rfs_stepfeed_free(st->fed[i]);
    rfs_stepfeed_free(st->feed);
    free(st->fed);
    st->fed = NULL;
    st->feed = NULL;
    st->nfed = st->fed_cap = 0;
}

/* The run being fed goes with the runs done. */
static int feed_done(import_state *st)
{
    if (!st->feed)
        return 0;
    if (rs_array_grow(&st->fed, &st->fed_cap, st->nfed + 1, sizeof *st->fed))
        return -ENOMEM;
    st->fed[st->nfed++] = st->feed;
    st->feed = NULL;
    return 0;
}

/* Whether run_id's file is big enough to keep (the file last opened for it). */
static int worth_keeping(const import_state *st, const char *run_id)
{
    for (size_t i = st->nseen; i-- > 0;)
        if (strcmp(st->files_seen[i].run_id, run_id) == 0)
            return st->files_seen[i].size >= STEPS_MIN_BYTES;
    return 1;
}

static int feed_row(import_state *st, const rs_record *rec)
{
    if (strcmp(st->unfed, rec->run_id) == 0)
        return 0;
    if (st->feed && strcmp(rfs_stepfeed_run(st->feed), rec->run_id) != 0 && feed_done(st))
        return -ENOMEM;
    if (!st->feed && !worth_keeping(st, rec->run_id)) {
        /* A valid run id: it fits. */
        (void)rs_fmt(st->unfed, sizeof st->unfed, "%s", rec->run_id);
        return 0;
    }
    if (!st->feed && rfs_stepfeed_new(rec->thread_id, rec->run_id, st->rewrites, &st->feed))
        return -ENOMEM;
    return rfs_stepfeed_row(st->feed, rec);
}

/* Counting and keeping are upkeep: a row either cannot hold costs the sizing a read back,
 * and a diff of the runs their rows, not the import. */
static int import_stored(void *ctx, const rs_record *rec, rs_err *err)
{
    (void)err;
    import_state *st = ctx;
    if (st->lines && !st->lines_lost && rfs_lines_add(st->lines, rec))
        st->lines_lost = 1;
    if (st->rewrites >= 0 && !st->steps_lost && feed_row(st, rec)) {
        st->steps_lost = 1;
        feeds_free(st);
    }
    return 0;
}

/* Runs' step data waiting to be kept, a few threads' to a transaction (as sizes are). */
typedef struct kept_run {
    char thread_id[RS_ID_MAX + 1], run_id[RS_ID_MAX + 1];
    rs_target t;
    uint64_t kind;
    int64_t rewrites;
    rs_buf data;
} kept_run;

typedef struct steps_batch {
    kept_run *v;
    size_t n, cap, bytes;
} steps_batch;

static void steps_flush(rs_store *s, steps_batch *b)
{
    rs_steps *v = b->n ? malloc(b->n * sizeof *v) : NULL;
    for (size_t i = 0; v && i < b->n; i++) {
        b->v[i].t = (rs_target){.thread_id = b->v[i].thread_id, .run_id = b->v[i].run_id};
        v[i] = (rs_steps){&b->v[i].t, b->v[i].kind, b->v[i].rewrites, b->v[i].data.buf,
                          b->v[i].data.len};
    }
    /* Best effort, as a diff keeps them: a store that refuses costs a diff a read. */
    if (v)
        (void)rs_store_steps_put_many(s, v, b->n);
    free(v);
    for (size_t i = 0; i < b->n; i++)
        rs_buf_release(&b->v[i].data);
    b->n = b->bytes = 0;
}

/* Runs' step data held before a flush: a commit a few threads, a few MiB at most held. */
#define STEPS_HELD_RUNS 256
#define STEPS_HELD_BYTES (8u << 20)

/* rs_store_runs_info's fn: each run's info beside its feed (fed sorted by run id). */
typedef struct runs_seen {
    rfs_stepfeed **fed;
    rs_log_info *info;
    size_t n;
} runs_seen;

static int cmp_feed(const void *a, const void *b)
{
    return strcmp(rfs_stepfeed_run(*(rfs_stepfeed *const *)a),
                  rfs_stepfeed_run(*(rfs_stepfeed *const *)b));
}

static int run_seen(void *ctx, const char *run_id, const rs_log_info *info, int64_t msg_size)
{
    (void)msg_size;
    runs_seen *r = ctx;
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(rfs_stepfeed_run(r->fed[mid]), run_id);
        if (!cmp) {
            r->info[mid] = *info;
            return 0;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0; /* a run of no row stored: nothing fed to keep */
}

/* The thread's runs fed whole (no row of theirs was there before, none came since) into
 * the batch: what kept_read checks a diff's run against is the run as the store now has it
 * (every owner's rows, one query for the thread where the store gives that). */
static void steps_thread(rs_store *s, const char *thread_id, import_state *st, steps_batch *b)
{
    if (feed_done(st) || !st->nfed)
        return;
    qsort(st->fed, st->nfed, sizeof *st->fed, cmp_feed);
    runs_seen r = {st->fed, calloc(st->nfed, sizeof *r.info), st->nfed};
    rs_err err = {0};
    int rc = r.info ? rs_store_runs_info(s, thread_id, run_seen, &r, &err) : -ENOMEM;
    for (size_t i = 0; rc == -ENOSYS && i < r.n; i++)
        if (rs_store_log_info(s, thread_id, rfs_stepfeed_run(r.fed[i]), NULL, &r.info[i], &err))
            r.info[i].exists = 0;
    for (size_t i = 0; (!rc || rc == -ENOSYS) && i < r.n; i++) {
        kept_run *k;
        if (rs_array_grow(&b->v, &b->cap, b->n + 1, sizeof *b->v))
            break;
        k = &b->v[b->n];
        k->data = (rs_buf)RS_BUF_INIT;
        if (rfs_stepfeed_bytes(r.fed[i], &r.info[i], &k->kind, &k->data) != 1) {
            rs_buf_release(&k->data);
            continue;
        }
        /* Ids of a run stored: valid, so they fit. */
        (void)rs_fmt(k->thread_id, sizeof k->thread_id, "%s", thread_id);
        (void)rs_fmt(k->run_id, sizeof k->run_id, "%s", rfs_stepfeed_run(r.fed[i]));
        k->rewrites = st->rewrites;
        b->bytes += k->data.len;
        b->n++;
        /* Made: the feed's arrays go before the next run's bytes come. */
        rfs_stepfeed_free(r.fed[i]);
        r.fed[i] = NULL;
    }
    free(r.info);
    feeds_free(st);
    if (b->n >= STEPS_HELD_RUNS || b->bytes >= STEPS_HELD_BYTES)
        steps_flush(s, b);
}

static int import_bad(void *ctx, const rs_err *err)
{
    import_state *st = ctx;
    if (!st->skip_bad)
        return err->code;
    rfs_progress_clear(st->progress);
    fprintf(stderr, "%s:%ld: %s (skipped)\n", st->path.buf, st->lineno, err->msg);
    st->skipped_lines++;
    return 0;
}

static int open_next_file(import_state *st, rs_err *err)
{
    if (st->in) {
        fclose(st->in);
        st->in = NULL;
    }
    const char *name = st->files[st->next_file];
    if (!name)
        return 0;
    st->next_file++;
    size_t n = strlen(name) - 6;
    /* A name too long for a run id is refused below, not cut into one. */
    if (n > RS_ID_MAX || rs_fmt(st->run_id, sizeof st->run_id, "%.*s", (int)n, name) < 0)
        st->run_id[0] = '\0';
    rs_buf_reset(&st->path);
    st->lineno = 0;
    if (rs_buf_addf(&st->path, "%s/%s", st->runs_dir, name))
        return rs_err_set(err, -ENOMEM, "out of memory");
    if (n > RS_ID_MAX || !rs_id_valid(st->run_id))
        return rs_err_set(err, -EINVAL, "'%.*s' is not a valid run id (1-64 of [A-Za-z0-9_-])",
                          (int)(n > 80 ? 80 : n), name);
    /* Only a regular file inside DIR: never a link out of it, never a FIFO that blocks. */
    int fd = open(st->path.buf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 && errno != ELOOP)
        return rs_err_set(err, -errno, "cannot open: %s", strerror(errno));
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        const char *what = fd < 0 ? "a symbolic link" : "not a regular file";
        if (fd >= 0)
            close(fd);
        if (st->strict) {
            st->refused = 1;
            return rs_err_set(err, -EINVAL, "%s: refused (--strict)", what);
        }
        rfs_progress_clear(st->progress);
        fprintf(stderr, "runfs import: %s: %s, skipped\n", st->path.buf, what);
        return 2;
    }
    if (fcntl(fd, F_SETFL, 0) != 0 || !(st->in = fdopen(fd, "rb"))) {
        int e = errno;
        close(fd);
        return rs_err_set(err, -e, "cannot open: %s", strerror(e));
    }
    /* Out of memory: the run is kept whatever its size (worth_keeping finds it not). */
    if (!rs_array_grow(&st->files_seen, &st->seen_cap, st->nseen + 1, sizeof *st->files_seen)) {
        struct run_file *f = &st->files_seen[st->nseen++];
        memcpy(f->run_id, st->run_id, strlen(st->run_id) + 1); /* valid: it fits */
        f->size = sb.st_size;
    }
    return 1;
}

/* One line into st->line (its newline kept): 1, 0 at the end of the file, <0 on a read
 * error. A line longer than the event size limit is read no further than that: *too_long
 * is set and the rest of it is dropped unread into memory. */
static int read_line(import_state *st, int *too_long)
{
    rs_buf_reset(&st->line);
    *too_long = 0;
    int c;
    while ((c = getc_unlocked(st->in)) != EOF) {
        if (st->line.len <= st->max && rs_buf_addch(&st->line, (char)c))
            return -ENOMEM;
        if (st->line.len > st->max)
            *too_long = 1;
        if (c == '\n')
            return 1;
    }
    if (ferror(st->in))
        return -EIO;
    return st->line.len || *too_long ? 1 : 0;
}

static int import_line(void *ctx, const char **run_id, const char **line, size_t *len, rs_err *err)
{
    import_state *st = ctx;
    for (;;) {
        if (!st->in) {
            int rc = open_next_file(st, err);
            if (rc == 2)
                continue; /* not a regular file: named and skipped */
            if (rc <= 0)
                return rc;
        }
        int too_long;
        int rc = read_line(st, &too_long);
        if (rc < 0)
            return rs_err_set(err, rc, "read error: %s", strerror(-rc));
        if (rc == 0) {
            fclose(st->in);
            st->in = NULL;
            continue;
        }
        size_t n = st->line.len;
        const char *text = st->line.buf;
        st->lineno++;
        rfs_progress_step(st->progress, 1, (int64_t)n);
        rs_err why = {0};
        if (too_long)
            rs_err_set(&why, -EMSGSIZE, "line over the %zu-byte event size limit", st->max);
        else if (text[n - 1] != '\n')
            rs_err_set(&why, -EINVAL, "the last line has no newline (torn write?)");
        else if (n == 1 || (n == 2 && text[0] == '\r'))
            rs_err_set(&why, -EINVAL, "blank line");
        if (why.code) {
            if (!st->skip_bad) {
                *err = why;
                return why.code;
            }
            import_bad(st, &why);
            continue;
        }
        *run_id = st->run_id;
        *line = text;
        *len = n - 1;
        return 1;
    }
}

/* The floor DeerFlow keeps in runs/.seq-watermark (0 when there is none). */
static int read_watermark(const char *runs_dir, int64_t *floor, rs_err *err)
{
    char path[4200], text[32];
    *floor = 0;
    if (rs_fmt(path, sizeof path, "%s/%s", runs_dir, WATERMARK) < 0)
        return rs_err_set(err, -ENAMETOOLONG, "%.200s...: path too long", runs_dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : rs_err_set(err, -errno, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return rs_err_set(err, -EINVAL, "%s: not a regular file", path);
    }
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    if (got < 0)
        return rs_err_set(err, -errno, "%s: %s", path, strerror(errno));
    size_t n = (size_t)got;
    /* As `echo N > .seq-watermark` writes it: one newline may end it. */
    if (n > 0 && text[n - 1] == '\n')
        n--;
    text[n] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (n == 0 || end == text || *end || errno || v < 0)
        return rs_err_set(err, -EINVAL, "%s: not a non-negative decimal seq", path);
    *floor = v;
    return 0;
}

/* The bytes of the run files import reads (regular files in threads/T/runs/, as
 * open_next_file takes them): the progress line's total. A folder it cannot read counts
 * nothing here; the import says why. */
static int64_t folder_bytes(const char *threads_dir, char **threads)
{
    int64_t total = 0;
    rs_buf path = RS_BUF_INIT;
    for (size_t i = 0; threads[i]; i++) {
        char **files = NULL;
        size_t n = 0;
        rs_buf_reset(&path);
        if (rs_buf_addf(&path, "%s/%s/runs", threads_dir, threads[i]) ||
            list_dir(path.buf, is_jsonl, &files, &n))
            continue;
        size_t dir_len = path.len;
        for (size_t k = 0; k < n; k++) {
            struct stat sb;
            rs_buf_setlen(&path, dir_len);
            if (!rs_buf_addf(&path, "/%s", files[k]) && lstat(path.buf, &sb) == 0 &&
                S_ISREG(sb.st_mode))
                total += sb.st_size;
        }
        free_names(files);
    }
    rs_buf_release(&path);
    return total;
}

/* Whether a run's file in runs_dir is big enough to keep (STEPS_MIN_BYTES; a file that is
 * no regular one is refused or skipped by the import, not kept). */
static int has_big_run(const char *runs_dir, char **files)
{
    rs_buf path = RS_BUF_INIT;
    int big = 0;
    for (size_t k = 0; !big && files[k]; k++) {
        struct stat sb;
        rs_buf_reset(&path);
        big = !rs_buf_addf(&path, "%s/%s", runs_dir, files[k]) && lstat(path.buf, &sb) == 0 &&
              S_ISREG(sb.st_mode) && sb.st_size >= STEPS_MIN_BYTES;
    }
    rs_buf_release(&path);
    return big;
}

/* Import one thread; 0, or 2 after printing why it was not imported. */
static int import_thread(rs_store *s, const char *threads_dir, const char *thread_id,
                         const rs_import_opts *base, int skip_bad, rfs_progress *pg,
                         rfs_lines **lines, steps_batch *kept, int64_t *added, int64_t *skipped)
{
    rs_buf runs_dir = RS_BUF_INIT;
    import_state st = {.path = RS_BUF_INIT,
                       .line = RS_BUF_INIT,
                       .max = rs_store_max_event(s),
                       .strict = base->strict,
                       .skip_bad = skip_bad,
                       .progress = pg,
                       .lines = *lines,
                       .rewrites = -1};
    rs_err err = {0};
    int rc = rs_buf_addf(&runs_dir, "%s/%s/runs", threads_dir, thread_id);
    if (rc) {
        fprintf(stderr, "runfs: out of memory\n");
        return 2;
    }
    int status = 0;
    size_t nfiles = 0;
    rs_import_opts o = *base;
    if (!rs_id_valid(thread_id)) {
        rfs_progress_clear(pg);
        fprintf(stderr, "%s/%s: '%s' is not a valid thread id (1-64 of [A-Za-z0-9_-])\n",
                threads_dir, thread_id, thread_id);
        status = 2;
        goto out;
    }
    /* The thread's folder and its runs/ are real folders inside DIR, never links out. */
    runs_dir.buf[runs_dir.len - 5] = '\0';
    const char *what = not_a_folder(runs_dir.buf);
    if (!what) {
        runs_dir.buf[runs_dir.len - 5] = '/';
        what = not_a_folder(runs_dir.buf);
    }
    if (what) {
        rfs_progress_clear(pg);
        fprintf(stderr, "runfs import: %s: %s%s\n", runs_dir.buf, what,
                base->strict ? ": refused (--strict)" : ", skipped");
        status = base->strict ? 2 : 0;
        goto out;
    }
    if (!is_dir(runs_dir.buf))
        goto out; /* DeerFlow makes runs/ on a thread's first write */
    if ((rc = list_dir(runs_dir.buf, is_jsonl, &st.files, &nfiles))) {
        fprintf(stderr, "%s: %s\n", runs_dir.buf, strerror(-rc));
        status = 2;
        goto out;
    }
    if ((rc = read_watermark(runs_dir.buf, &o.floor, &err))) {
        fprintf(stderr, "%s\n", err.msg);
        status = 2;
        goto out;
    }
    st.runs_dir = runs_dir.buf;
    /* Read before the rows are written: a rewrite by another writer after it leaves what is
     * kept of them unused (the put refuses it, or a diff's check does), never taken. Only
     * where a run may be kept (on PostgreSQL it is a round trip). */
    if (has_big_run(runs_dir.buf, st.files) && rs_store_rewrites(s, &st.rewrites))
        st.rewrites = -1;
    rs_import_src src = {.next = import_line,
                         .bad = skip_bad ? import_bad : NULL,
                         .ctx = &st,
                         .stored = import_stored};
    rc = rs_store_import(s, thread_id, &o, &src, added, skipped, &err);
    if (!rc && !st.steps_lost && st.rewrites >= 0)
        steps_thread(s, thread_id, &st, kept);
    if (st.lines_lost) {
        rfs_lines_free(*lines);
        *lines = NULL;
    }
    if (rc && st.refused) {
        rfs_progress_clear(pg);
        fprintf(stderr, "runfs import: %s: %s\n", st.path.buf, err.msg);
        fprintf(stderr, "runfs: thread %s not imported (nothing of it changed)\n", thread_id);
        status = 2;
    } else if (rc) {
        rfs_progress_clear(pg);
        if (!st.path.len && rc == -EOVERFLOW) /* the watermark, the thread's one line */
            fprintf(stderr, "%s/%s:1: %s\n", runs_dir.buf, WATERMARK, err.msg);
        else if (st.path.len && st.lineno)
            fprintf(stderr, "%s:%ld: %s\n", st.path.buf, st.lineno, err.msg);
        else if (st.path.len)
            fprintf(stderr, "%s: %s\n", st.path.buf, err.msg);
        else
            fprintf(stderr, "runfs: thread %s: %s\n", thread_id, err.msg);
        fprintf(stderr, "runfs: thread %s not imported (nothing of it changed)\n", thread_id);
        status = 2;
    }
out:
    feeds_free(&st);
    free(st.files_seen);
    if (st.in)
        fclose(st.in);
    rs_buf_release(&st.line);
    free_names(st.files);
    rs_buf_release(&st.path);
    rs_buf_release(&runs_dir);
    return status;
}

/* --sizes: every view of the thread sized as a default mount's walk sizes it (no owner
 * apart, otel's service runfs), kept in the store, so that mount's first du or tar renders
 * nothing; without it (lines), the views whose bytes are the rows' lines (types/, tasks/,
 * messages.jsonl): a pass over the rows just written, no rendering, which a mount's stat
 * after a later append catches up from. A failure costs only that: the mount renders those
 * views at their first stat. */
typedef struct size_batch {
    rs_size *v;
    size_t n, cap;
} size_batch;

/* rfs_scope's keep_size: the sizes gathered, to be kept in one transaction (a commit each
 * would cost more than the sizing). Nonzero: the view code keeps this one itself. */
static int batch_size(void *ctx, uint64_t view, uint64_t token, int64_t size)
{
    size_batch *b = ctx;
    if (rs_array_grow(&b->v, &b->cap, b->n + 1, sizeof *b->v))
        return -ENOMEM;
    b->v[b->n++] = (rs_size){view, token, size};
    return 0;
}

/* The sizes gathered, kept in one transaction: fresh ones (of threads whose every row the
 * import wrote) with no earlier tokens to drop. Best effort, as a mount keeps them: a store
 * that refuses costs the next mount a rendering, not the import. */
static void sizes_flush(rs_store *s, size_batch *b, int fresh)
{
    if (fresh)
        (void)rs_store_sizes_add(s, b->v, b->n);
    else
        (void)rs_store_sizes_put(s, b->v, b->n);
    b->n = 0;
}

/* Sizes kept a few threads at a time: a commit a thread was a fifth of keeping them. */
#define SIZES_HELD 4096

/* fed: the rows the import stored in the thread (NULL: not counted); their sizes go to
 * fresh when they were all of the thread's, else the rows are read back and the sizes go to
 * put. */
static int size_thread(rs_store *s, rfs_sizes *sizes, const char *thread_id, int lines,
                       rfs_lines *fed, size_batch *fresh, size_batch *put, rfs_progress *pg)
{
    rfs_scope sc = {.sizes = sizes,
                    .mount_ns = rs_clock_ns(CLOCK_REALTIME),
                    .keep_size = batch_size,
                    .ctx = fresh};
    rfs_node n;
    rs_buf path = RS_BUF_INIT;
    rs_err err = {0};
    size_t had = fresh->n;
    int rc = rs_buf_addf(&path, "threads/%s", thread_id);
    rc = rc ? rc : rfs_node_parse(path.buf, &n);
    int fed_all = !rc && lines && fed ? rfs_view_size_fed(s, &sc, &n, fed, &err) : 0;
    if (fed_all < 0)
        rc = fed_all;
    if (!rc && !fed_all) {
        /* Whatever a partial count kept goes with the rest, older tokens dropped. */
        for (size_t i = had; i < fresh->n; i++)
            (void)batch_size(put, fresh->v[i].view, fresh->v[i].token, fresh->v[i].size);
        fresh->n = had;
        sc.ctx = put;
        rc = lines ? rfs_view_size_lines(s, &sc, &n, &err) : rfs_view_size_tree(s, &sc, &n, &err);
    }
    if (fresh->n >= SIZES_HELD)
        sizes_flush(s, fresh, 1);
    if (put->n >= SIZES_HELD)
        sizes_flush(s, put, 0);
    if (rc) {
        rfs_progress_clear(pg);
        fprintf(stderr, "runfs import: thread %s imported, not sized: %s\n", thread_id,
                *err.msg ? err.msg : strerror(-rc));
    }
    rs_buf_release(&path);
    return rc;
}

/* --deerflow-jsonl's getopt value; import's and export's own options count from OPT_OWN. */
enum { OPT_DIR = 256, OPT_OWN };

/* The next getopt_long option (the caller sets optind once), taking the options import and
 * export share (-q, --deerflow-jsonl DIR) into *quiet and *dir on the way: one of the
 * command's own, '?' for an unknown one, -1 at the end. */
static int next_option(int argc, char **argv, const struct option *longopts, int *quiet,
                       const char **dir)
{
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "q", longopts, NULL)) == 'q' || c == OPT_DIR) {
        if (c == 'q')
            *quiet = 1;
        else
            *dir = optarg;
    }
    return c;
}

int rfs_cmd_import(int argc, char **argv)
{
    enum { OPT_STRICT = OPT_OWN, OPT_SKIP, OPT_USER, OPT_SIZES };
    static const struct option longopts[] = {
        {"deerflow-jsonl", required_argument, NULL, OPT_DIR},
        {"strict", no_argument, NULL, OPT_STRICT},
        {"skip-bad-lines", no_argument, NULL, OPT_SKIP},
        {"sizes", no_argument, NULL, OPT_SIZES},
        {"user", required_argument, NULL, OPT_USER},
        {"quiet", no_argument, NULL, 'q'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = NULL;
    int skip_bad = 0, quiet = 0, sized = 0, c;
    rs_import_opts o = {0};
    optind = 1;
    while ((c = next_option(argc, argv, longopts, &quiet, &dir)) != -1) {
        if (c == OPT_STRICT)
            o.strict = 1;
        else if (c == OPT_SIZES)
            sized = 1;
        else if (c == OPT_SKIP)
            skip_bad = 1;
        else if (c == OPT_USER && rs_id_valid(optarg))
            o.user = optarg;
        else if (c == OPT_USER)
            return usage_error("import", "--user must be 1-64 of [A-Za-z0-9_-]");
        else
            return usage_error("import", "unknown option or missing value");
    }
    if (argc - optind != 1 || !dir)
        return usage_error("import", "expected STORE --deerflow-jsonl DIR");
    rs_buf base = RS_BUF_INIT, threads = RS_BUF_INIT;
    char **names = NULL;
    size_t n = 0;
    int rc = base_dir(dir, 1, &base);
    if (rc == -ENOTDIR) {
        fprintf(stderr,
                "runfs: %s is not a DeerFlow base folder (no threads/ in it or in "
                "%s/.deer-flow)\n",
                dir, dir);
        return 2;
    }
    if (rc || (rc = rs_buf_addf(&threads, "%s/threads", base.buf)) ||
        (rc = list_dir(threads.buf, not_dot, &names, &n))) {
        fprintf(stderr, "runfs: %s: %s\n", threads.len ? threads.buf : dir, strerror(-rc));
        rs_buf_release(&base);
        rs_buf_release(&threads);
        return 2;
    }
    rs_store *s;
    rs_options sopt = RS_OPTIONS_INIT;
    rs_err err = {0};
    int status = 0;
    if (rs_store_open(&s, argv[optind], &sopt, &err)) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        status = 2;
        goto out;
    }
    rfs_progress *pg = rfs_progress_new("import", "lines");
    if (pg)
        rfs_progress_total(pg, folder_bytes(threads.buf, names));
    int64_t added = 0, skipped = 0;
    rfs_sizes *sizes = NULL;
    size_batch fresh = {0}, put = {0};
    steps_batch kept = {0};
    /* Out of memory: imported unsized (a mount sizes the views at their first stat); only
     * --sizes, which was asked for, fails. */
    if (rfs_sizes_new(&sizes) && sized) {
        fprintf(stderr, "runfs: out of memory\n");
        status = 2;
    }
    /* Nothing reads the views after the walk sizes them: no bytes kept for a read. */
    if (sizes)
        rfs_sizes_sizes_only(sizes);
    for (size_t i = 0; i < n; i++) {
        int64_t a = 0, k = 0;
        /* Out of memory: the rows are read back after the import, as without a feed. */
        rfs_lines *fed = NULL;
        if (sizes && !sized && rfs_lines_new(&fed))
            fed = NULL;
        if (import_thread(s, threads.buf, names[i], &o, skip_bad, pg, &fed, &kept, &a, &k))
            status = 2;
        /* Without --sizes the line views' sizing is upkeep, not asked for: its failure is
         * told, the import stands. */
        else if (sizes && (sized || a) &&
                 size_thread(s, sizes, names[i], !sized, fed, &fresh, &put, pg) && sized)
            status = 2;
        rfs_lines_free(fed);
        added += a;
        skipped += k;
    }
    sizes_flush(s, &fresh, 1);
    sizes_flush(s, &put, 0);
    steps_flush(s, &kept);
    free(kept.v);
    free(fresh.v);
    free(put.v);
    rfs_sizes_free(sizes);
    rfs_progress_end(pg);
    if (!quiet)
        fprintf(stderr, "runfs import: %lld rows imported, %lld already present, %zu thread%s%s\n",
                (long long)added, (long long)skipped, n, n == 1 ? "" : "s",
                status ? " (some not imported, above)" : "");
    rs_store_close(s);
out:
    free_names(names);
    rs_buf_release(&base);
    rs_buf_release(&threads);
    return status;
}

/* ---- export --------------------------------------------------------------------------- */

typedef struct export_ctx {
    rs_store *s;
    const char *base;
    int force;
    int writing; /* 0: only check which files exist; 1: write them */
    long existing;
    long skipped;                 /* runs whose ids are no path: named before the first pass */
    int64_t lines, runs, threads; /* what the writing pass wrote */
    rs_buf path, tmp, line;
    rfs_progress *progress;
} export_ctx;

static int mkdirs(rs_buf *path, size_t from)
{
    for (size_t i = from + 1; i <= path->len; i++) {
        if (i < path->len && path->buf[i] != '/')
            continue;
        char saved = path->buf[i];
        path->buf[i] = '\0';
        int rc = mkdir(path->buf, 0755) == 0 || errno == EEXIST ? 0 : -errno;
        path->buf[i] = saved;
        if (rc)
            return rc;
    }
    return 0;
}

/* Write path through a temporary file beside it, renamed into place when complete. */
static FILE *open_tmp(export_ctx *x)
{
    rs_buf_reset(&x->tmp);
    if (rs_buf_addf(&x->tmp, "%s.runfs-%ld.tmp", x->path.buf, (long)getpid()))
        return NULL;
    return fopen(x->tmp.buf, "wb");
}

static int close_tmp(export_ctx *x, FILE *f, int ok)
{
    int rc = ok ? 0 : -EIO;
    if (fflush(f) != 0 || ferror(f))
        rc = -errno ? -errno : -EIO;
    if (fclose(f) != 0 && !rc)
        rc = -errno;
    if (!rc && rename(x->tmp.buf, x->path.buf) != 0)
        rc = -errno;
    if (rc)
        unlink(x->tmp.buf);
    return rc;
}

/* Check or write one file of the folder (path is in x->path). */
static int export_check(export_ctx *x)
{
    if (!x->writing && !x->force && access(x->path.buf, F_OK) == 0) {
        fprintf(stderr, "runfs: %s already exists (--force overwrites)\n", x->path.buf);
        x->existing++;
    }
    return 0;
}

static int export_run(export_ctx *x, const char *thread_id, const char *run_id)
{
    rs_buf_reset(&x->path);
    if (rs_buf_addf(&x->path, "%s/threads/%s/runs/%s.jsonl", x->base, thread_id, run_id))
        return -ENOMEM;
    if (!x->writing)
        return export_check(x);
    size_t dir_end = x->path.len - strlen(run_id) - 7;
    x->path.buf[dir_end] = '\0';
    int rc = mkdirs(&x->path, strlen(x->base));
    x->path.buf[dir_end] = '/';
    if (rc) {
        fprintf(stderr, "runfs: %s: %s\n", x->path.buf, strerror(-rc));
        return rc;
    }
    FILE *f = open_tmp(x);
    if (!f) {
        fprintf(stderr, "runfs: %s: %s\n", x->path.buf, strerror(errno));
        return -errno;
    }
    rs_query q = RS_QUERY_INIT;
    q.thread_id = thread_id;
    q.run_id = run_id;
    rs_cursor *cur;
    rs_err err = {0};
    if ((rc = rs_store_query(x->s, &q, &cur, &err))) {
        fprintf(stderr, "runfs: %s: %s\n", x->path.buf, err.msg);
        close_tmp(x, f, 0);
        return rc;
    }
    const rs_record *rec;
    int step;
    while ((step = rs_cursor_next(cur, &rec)) > 0) {
        rs_buf_reset(&x->line);
        if ((rc = rs_deerflow_line(&x->line, rec->line, rec->line_len, &err)))
            break;
        if (fwrite(x->line.buf, 1, x->line.len, f) != x->line.len) {
            rc = rs_err_set(&err, -errno, "%s", strerror(errno));
            break;
        }
        rfs_progress_tick(x->progress, 1);
        x->lines++;
    }
    rs_cursor_free(cur);
    if (!rc && step < 0)
        rc = rs_err_set(&err, step, "cannot read the run: %s", strerror(-step));
    int crc = close_tmp(x, f, rc == 0);
    if (rc || crc) {
        fprintf(stderr, "runfs: %s: %s\n", x->path.buf, rc ? err.msg : strerror(-crc));
        return rc ? rc : crc;
    }
    return 0;
}

/* DeerFlow's floor file, written when the high-water mark is above the highest seq. */
static int export_watermark(export_ctx *x, const char *thread_id)
{
    rs_log_info info;
    rs_err err = {0};
    int rc = rs_store_log_info(x->s, thread_id, NULL, NULL, &info, &err);
    if (rc || info.hwm <= info.last_seq)
        return rc;
    rs_buf_reset(&x->path);
    if (rs_buf_addf(&x->path, "%s/threads/%s/runs/" WATERMARK, x->base, thread_id))
        return -ENOMEM;
    if (!x->writing)
        return export_check(x);
    size_t dir_end = x->path.len - strlen(WATERMARK) - 1;
    x->path.buf[dir_end] = '\0';
    rc = mkdirs(&x->path, strlen(x->base));
    x->path.buf[dir_end] = '/';
    FILE *f = rc ? NULL : open_tmp(x);
    if (!f) {
        fprintf(stderr, "runfs: %s: %s\n", x->path.buf, strerror(rc ? -rc : errno));
        return rc ? rc : -errno;
    }
    int ok = fprintf(f, "%lld", (long long)info.hwm) > 0;
    if ((rc = close_tmp(x, f, ok)))
        fprintf(stderr, "runfs: %s: %s\n", x->path.buf, strerror(-rc));
    return rc;
}

typedef struct odd_namer {
    FILE *out;
    const char *prefix;
    long count;
    rs_buf line;
} odd_namer;

static int odd_name(void *ctx, const char *thread_id, size_t thread_len, const char *run_id,
                    size_t run_len)
{
    odd_namer *o = ctx;
    rs_buf_reset(&o->line);
    if (rs_buf_addf(&o->line, "%sthread ", o->prefix) ||
        rs_buf_add_json_string(&o->line, thread_id, thread_len) ||
        rs_buf_addstr(&o->line, ", run ") || rs_buf_add_json_string(&o->line, run_id, run_len) ||
        rs_buf_addstr(&o->line, ": not a valid path id, skipped\n"))
        return -ENOMEM;
    o->count++;
    return fwrite(o->line.buf, 1, o->line.len, o->out) == o->line.len ? 0 : -EIO;
}

int rfs_odd_ids_name(rs_store *s, FILE *out, const char *prefix, long *count, rs_err *err)
{
    odd_namer o = {.out = out, .prefix = prefix, .line = RS_BUF_INIT};
    int rc = rs_store_odd_ids(s, odd_name, &o, err);
    if (rc && !err->msg[0])
        rs_err_set(err, rc, "cannot list the ids outside the id rule: %s", strerror(-rc));
    rs_buf_release(&o.line);
    *count = o.count;
    return rc;
}

/* One pass over every thread and run with rows. */
static int export_pass(export_ctx *x)
{
    rs_names *threads;
    rs_err err = {0};
    int rc = rs_store_names(x->s, RS_NAMES_THREADS, NULL, NULL, NULL, &threads, &err);
    if (rc) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        return rc;
    }
    const char *name;
    while (!rc && (rc = rs_names_next(threads, &name)) > 0) {
        char thread_id[RS_ID_MAX + 1];
        rc = 0; /* the loop goes on while nothing failed */
        if (rs_fmt(thread_id, sizeof thread_id, "%s", name) < 0)
            continue; /* the listing gives valid ids only */
        rs_names *runs;
        if ((rc = rs_store_names(x->s, RS_NAMES_RUNS, thread_id, NULL, NULL, &runs, &err))) {
            fprintf(stderr, "runfs: thread %s: %s\n", thread_id, err.msg);
            break;
        }
        const char *run;
        int64_t runs_before = x->runs;
        while ((rc = rs_names_next(runs, &run)) > 0) {
            rs_log_info info;
            if ((rc = rs_store_log_info(x->s, thread_id, run, NULL, &info, &err)))
                break;
            if (info.count > 0 && (rc = export_run(x, thread_id, run)))
                break;
            x->runs += x->writing && info.count > 0;
        }
        rs_names_free(runs);
        x->threads += x->runs > runs_before;
        if (!rc)
            rc = export_watermark(x, thread_id);
    }
    rs_names_free(threads);
    return rc < 0 ? rc : 0;
}

int rfs_cmd_export(int argc, char **argv)
{
    enum { OPT_FORCE = OPT_OWN };
    static const struct option longopts[] = {
        {"deerflow-jsonl", required_argument, NULL, OPT_DIR},
        {"force", no_argument, NULL, OPT_FORCE},
        {"quiet", no_argument, NULL, 'q'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = NULL;
    int force = 0, quiet = 0, c;
    optind = 1;
    while ((c = next_option(argc, argv, longopts, &quiet, &dir)) != -1) {
        if (c == OPT_FORCE)
            force = 1;
        else
            return usage_error("export", "unknown option or missing value");
    }
    if (argc - optind != 1 || !dir)
        return usage_error("export", "expected STORE --deerflow-jsonl DIR");
    const char *store = argv[optind];
    struct stat sb;
    if (!strstr(store, "://") && stat(store, &sb) != 0) {
        fprintf(stderr, "runfs: %s: %s (export never creates a store)\n", store, strerror(errno));
        return 2;
    }
    export_ctx x = {.force = force, .path = RS_BUF_INIT, .tmp = RS_BUF_INIT, .line = RS_BUF_INIT};
    rs_buf base = RS_BUF_INIT;
    rs_options sopt = RS_OPTIONS_INIT;
    sopt.read_only = 1;
    rs_err err = {0};
    int status = 2;
    if (base_dir(dir, 0, &base)) {
        fprintf(stderr, "runfs: out of memory\n");
        return 2;
    }
    if (rs_store_open(&x.s, store, &sopt, &err)) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        rs_buf_release(&base);
        return 2;
    }
    x.base = base.buf;
    if (rfs_odd_ids_name(x.s, stderr, "runfs export: ", &x.skipped, &err)) {
        fprintf(stderr, "runfs: %s\n", err.msg);
        rs_store_close(x.s);
        rs_buf_release(&base);
        return 2;
    }
    /* Nothing is written while any file it would write is already there. */
    if (export_pass(&x) == 0 && x.existing == 0) {
        x.writing = 1;
        x.progress = rfs_progress_new("export", "lines");
        if (mkdirs(&base, 0) == 0 && export_pass(&x) == 0)
            status = x.skipped ? 1 : 0;
        rfs_progress_end(x.progress);
        if (!quiet && status != 2)
            fprintf(stderr,
                    "runfs export: %lld line%s in %lld run%s of %lld thread%s written to %s%s\n",
                    (long long)x.lines, x.lines == 1 ? "" : "s", (long long)x.runs,
                    x.runs == 1 ? "" : "s", (long long)x.threads, x.threads == 1 ? "" : "s",
                    base.buf, x.skipped ? " (some skipped, above)" : "");
    }
    rs_store_close(x.s);
    rs_buf_release(&base);
    rs_buf_release(&x.path);
    rs_buf_release(&x.tmp);
    rs_buf_release(&x.line);
    return status;
}
