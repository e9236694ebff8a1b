/* sizes.c — a bounded table of view sizes (an rs_map by key), guarded by one mutex. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "otel.h"
#include "sizes.h"
#include "rs_util.h"

/* Past this a table drops some of its entries (thin). A walk of a store visits every view's
 * size in turn: a table smaller than that set, started over when full, kept none of them
 * to the next walk (the 200x5x10 walk store has 16,806 kept sizes, so each tar re-rendered
 * every run's documents), and thinned it finds only some: the 1000x10x10 walk store keeps
 * 164,006, and at 32,768 entries about a fifth of the daemon's time in a find went to asking
 * the store for sizes it had put here on the walk before. An entry is about 200 bytes with
 * its key (a full table some 50 MB). */
#define MAX_ENTRIES 262144
#define THIN 8              /* thin drops one entry in this many */
#define DOCS_MAX (64 << 20) /* all kept documents' bytes at most (then entries are thinned) */
#define ROWS_MAX (RFS_KEPT_ROWS_MAX * sizeof(int64_t)) /* bytes (then the others' go) */
#define FILES_MAX (2 * rfs_kept_file_max()) /* kept answers' bytes (then the others' go) */
#define DISK_MAX (2 * rfs_kept_disk_max())  /* ... on disk (then the others' go) */
#define STATE_MAX (1 << 20)                 /* a kept state's bytes at most */
#define STATES_MAX (16 << 20) /* all kept states' bytes at most (then they start over) */

typedef struct entry {
    rs_log_info token;
    int64_t size;
    char *doc;             /* the rendering itself (NULL: only its size is kept) */
    rfs_otel_marks *marks; /* otel.json: its kept positions (NULL: none yet) */
    rfs_kept_rows *rows;   /* a search's rows (NULL: none kept) */
    char *state;           /* what a catch-up resumes from (NULL: none kept) */
    size_t state_len;
    char key[];
} entry;

struct rfs_sizes {
    pthread_mutex_t lock; /* guards map, doc_bytes and every entry */
    rs_map map;           /* entry pointers by key */
    size_t doc_bytes;
    size_t state_bytes; /* of the states entries hold */
    size_t rows_bytes;  /* of the rows entries hold */
    int64_t file_bytes; /* of the answers' memfds entries hold */
    int64_t disk_bytes; /* of the answers' files on disk entries hold */
    size_t files;       /* answers' files entries hold */
    int64_t rewrites;   /* the store's rewrites count the kept answers are of */
    int sizes_only;     /* set before the table is shared, read without the lock */
};

static uint64_t key_hash(const void *ctx, const void *key)
{
    (void)ctx;
    return rs_hash(RS_HASH_INIT, key, strlen(key));
}

static uint64_t entry_hash(const void *ctx, uintptr_t e)
{
    return key_hash(ctx, ((const entry *)e)->key);
}

static int entry_matches(const void *ctx, uintptr_t e, const void *key)
{
    (void)ctx;
    return strcmp(((const entry *)e)->key, key) == 0;
}

static const rs_map_type entries = {key_hash, entry_hash, entry_matches};

int rfs_sizes_new(rfs_sizes **out)
{
    rfs_sizes *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    pthread_mutex_init(&c->lock, NULL);
    c->map = (rs_map)RS_MAP_INIT(&entries, NULL);
    *out = c;
    return 0;
}

static void rows_release(rfs_kept_rows *r)
{
    if (!r || --r->refs)
        return;
    if (r->fd >= 0)
        close(r->fd);
    OPENSSL_cleanse(r->key, sizeof r->key);
    free(r);
}

/* Under c->lock. */
static void rows_drop(rfs_sizes *c, entry *e)
{
    if (e->rows) {
        c->rows_bytes -= e->rows->n * sizeof *e->rows->ids;
        c->file_bytes -= e->rows->fd >= 0 && !e->rows->on_disk ? e->rows->bytes : 0;
        c->disk_bytes -= e->rows->fd >= 0 && e->rows->on_disk ? e->rows->bytes : 0;
        c->files -= e->rows->fd >= 0;
    }
    rows_release(e->rows);
    e->rows = NULL;
}

/* Under c->lock: e's bytes and e, once out of the map, with the totals told. */
static void entry_free(rfs_sizes *c, entry *e)
{
    rows_drop(c, e);
    if (e->doc)
        c->doc_bytes -= (size_t)e->size;
    free(e->doc);
    rfs_otel_marks_release(e->marks);
    c->state_bytes -= e->state_len;
    free(e->state);
    free(e);
}

static void clear(rfs_sizes *c);

/* Under c->lock: an eighth of the entries go, every eighth in the map's order (its hash's,
 * not the walk's). Starting over kept none of a walk of more views than the table holds
 * (each was put again before it was asked for); thinned, a walk of 1.5 times as many finds
 * about a third of them kept the next time (a simulation of repeated walks: 0.36). */
static void thin(rfs_sizes *c)
{
    size_t n = 0, pos = 0;
    entry **gone = malloc((c->map.count / THIN + 1) * sizeof *gone);
    if (!gone) {
        clear(c);
        return;
    }
    for (uintptr_t e, i = 0; (e = rs_map_next(&c->map, &pos)); i++)
        if (i % THIN == 0)
            gone[n++] = (entry *)e;
    for (size_t i = 0; i < n; i++) {
        (void)rs_map_remove(&c->map, gone[i]->key);
        entry_free(c, gone[i]);
    }
    free(gone);
}

static void clear(rfs_sizes *c)
{
    size_t pos = 0;
    for (uintptr_t e; (e = rs_map_next(&c->map, &pos));) {
        rows_release(((entry *)e)->rows);
        free(((entry *)e)->doc);
        rfs_otel_marks_release(((entry *)e)->marks);
        free(((entry *)e)->state);
        free((entry *)e);
    }
    rs_map_clear(&c->map);
    c->doc_bytes = c->rows_bytes = c->state_bytes = 0;
    c->file_bytes = 0;
    c->files = 0;
}

void rfs_sizes_sizes_only(rfs_sizes *c)
{
    c->sizes_only = 1;
}

int rfs_sizes_keeps_bytes(const rfs_sizes *c)
{
    return !c->sizes_only;
}

void rfs_sizes_free(rfs_sizes *c)
{
    if (!c)
        return;
    clear(c);
    rs_map_release(&c->map);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int rfs_sizes_same_token(const rs_log_info *a, const rs_log_info *b)
{
    return a->exists == b->exists && a->exact == b->exact && a->size == b->size &&
           a->count == b->count && a->message_count == b->message_count &&
           a->last_seq == b->last_seq && a->hwm == b->hwm && a->mtime_ns == b->mtime_ns &&
           a->ctime_ns == b->ctime_ns;
}

int rfs_sizes_get(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t *size)
{
    pthread_mutex_lock(&c->lock);
    const entry *e = (const entry *)rs_map_find(&c->map, key);
    int found = e && rfs_sizes_same_token(&e->token, token);
    if (found)
        *size = e->size;
    pthread_mutex_unlock(&c->lock);
    return found;
}

int rfs_sizes_get_base(rfs_sizes *c, const char *key, rs_log_info *token, int64_t *size)
{
    pthread_mutex_lock(&c->lock);
    const entry *e = (const entry *)rs_map_find(&c->map, key);
    if (e) {
        *token = e->token;
        *size = e->size;
    }
    pthread_mutex_unlock(&c->lock);
    return e != NULL;
}

int rfs_sizes_get_state(rfs_sizes *c, const char *key, rs_log_info *token, int64_t *size,
                        rs_buf *state)
{
    pthread_mutex_lock(&c->lock);
    const entry *e = (const entry *)rs_map_find(&c->map, key);
    int found = e && e->state && rs_buf_add(state, e->state, e->state_len) == 0;
    if (found) {
        *token = e->token;
        *size = e->size;
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}

void rfs_sizes_put_state(rfs_sizes *c, const char *key, const rs_log_info *token, const char *state,
                         size_t len)
{
    char *copy = len <= STATE_MAX ? malloc(len ? len : 1) : NULL;
    if (copy)
        memcpy(copy, state, len);
    pthread_mutex_lock(&c->lock);
    entry *e = (entry *)rs_map_find(&c->map, key);
    if (e && copy && rfs_sizes_same_token(&e->token, token)) {
        if (c->state_bytes + len > STATES_MAX) {
            /* The states go, not the sizes: the next change renders those views again. */
            size_t pos = 0;
            for (uintptr_t o; (o = rs_map_next(&c->map, &pos));) {
                free(((entry *)o)->state);
                ((entry *)o)->state = NULL;
                ((entry *)o)->state_len = 0;
            }
            c->state_bytes = 0;
        }
        c->state_bytes += len - e->state_len;
        free(e->state);
        e->state = copy;
        e->state_len = len;
        copy = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    free(copy);
}

int rfs_sizes_get_doc(rfs_sizes *c, const char *key, const rs_log_info *token, rs_buf *out)
{
    pthread_mutex_lock(&c->lock);
    const entry *e = (const entry *)rs_map_find(&c->map, key);
    int found = e && e->doc && rfs_sizes_same_token(&e->token, token) &&
                rs_buf_add(out, e->doc, (size_t)e->size) == 0;
    pthread_mutex_unlock(&c->lock);
    return found;
}

static void put(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size, char *doc);

void rfs_sizes_put(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size)
{
    pthread_mutex_lock(&c->lock);
    put(c, key, token, size, NULL);
    pthread_mutex_unlock(&c->lock);
}

void rfs_sizes_put_doc(rfs_sizes *c, const char *key, const rs_log_info *token, const char *doc,
                       size_t len)
{
    char *copy = len <= RFS_DOC_MAX ? malloc(len ? len : 1) : NULL;
    if (copy)
        memcpy(copy, doc, len);
    pthread_mutex_lock(&c->lock);
    while (copy && c->doc_bytes + len > DOCS_MAX && c->map.count)
        thin(c);
    put(c, key, token, (int64_t)len, copy);
    pthread_mutex_unlock(&c->lock);
}

/* Under c->lock. doc: a copy the table takes (NULL: none). */
static void put(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size, char *doc)
{
    entry *e = (entry *)rs_map_find(&c->map, key);
    if (!e) {
        if (c->map.count >= MAX_ENTRIES)
            thin(c);
        size_t n = strlen(key);
        if ((e = malloc(sizeof *e + n + 1))) {
            memcpy(e->key, key, n + 1);
            e->doc = NULL;
            e->marks = NULL;
            e->rows = NULL;
            e->state = NULL;
            e->state_len = 0;
            e->token = *token;
            if (rs_map_add(&c->map, (uintptr_t)e)) {
                free(e);
                e = NULL;
            }
        }
    }
    if (!e) {
        free(doc);
        return;
    }
    if (e->doc)
        c->doc_bytes -= (size_t)e->size;
    free(e->doc);
    e->doc = doc;
    /* Positions in other bytes are no positions in these. */
    if (!rfs_sizes_same_token(&e->token, token)) {
        rfs_otel_marks_release(e->marks);
        e->marks = NULL;
        rows_drop(c, e);
        c->state_bytes -= e->state_len;
        free(e->state);
        e->state = NULL;
        e->state_len = 0;
    }
    if (doc)
        c->doc_bytes += (size_t)size;
    e->token = *token;
    e->size = size;
}

rfs_otel_marks *rfs_sizes_marks(rfs_sizes *c, const char *key, const rs_log_info *token)
{
    rfs_otel_marks *m = NULL;
    pthread_mutex_lock(&c->lock);
    entry *e = (entry *)rs_map_find(&c->map, key);
    if (e && rfs_sizes_same_token(&e->token, token) &&
        (e->marks || rfs_otel_marks_new(&e->marks) == 0))
        m = rfs_otel_marks_retain(e->marks);
    pthread_mutex_unlock(&c->lock);
    return m;
}

void rfs_sizes_put_marks(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size,
                         rfs_otel_marks *marks)
{
    pthread_mutex_lock(&c->lock);
    put(c, key, token, size, NULL);
    entry *e = (entry *)rs_map_find(&c->map, key);
    if (e && !e->marks && marks)
        e->marks = rfs_otel_marks_retain(marks);
    pthread_mutex_unlock(&c->lock);
}

static uint64_t kept_gen(void)
{
    static atomic_uint_fast64_t gens;
    return atomic_fetch_add(&gens, 1) + 1;
}

rfs_kept_rows *rfs_kept_rows_new(size_t n)
{
    if (n > ROWS_MAX / sizeof(int64_t))
        return NULL;
    rfs_kept_rows *r = malloc(sizeof *r + n * sizeof *r->ids);
    if (!r)
        return NULL;
    r->refs = 1;
    r->gen = kept_gen();
    r->fd = -1;
    r->bytes = 0;
    r->on_disk = 0;
    r->n = n;
    return r;
}

/* RUNFS_KEPT_ANSWER_MAX and RUNFS_KEPT_DISK_MAX, read once: numbers of bytes. */
static int64_t file_max, disk_max;
static int64_t env_bytes(const char *name, int64_t most, int64_t dflt)
{
    const char *v = getenv(name);
    char *end;
    long long n = v && *v ? strtoll(v, &end, 10) : -1;
    return n >= 0 && *end == '\0' && n <= most ? n : dflt;
}
static void file_max_read(void)
{
    file_max = env_bytes("RUNFS_KEPT_ANSWER_MAX", RFS_KEPT_FILE_MAX, RFS_KEPT_FILE_MAX);
    /* 64 GiB at most, as the memory's bound has its most: a larger number is taken for a
     * mistake, and the default holds. */
    disk_max = file_max ? env_bytes("RUNFS_KEPT_DISK_MAX", (int64_t)64 << 30, RFS_KEPT_DISK_MAX)
                        : 0;
}
static pthread_once_t max_once = PTHREAD_ONCE_INIT;

int64_t rfs_kept_file_max(void)
{
    pthread_once(&max_once, file_max_read);
    return file_max;
}

int64_t rfs_kept_disk_max(void)
{
    pthread_once(&max_once, file_max_read);
    return disk_max;
}

int rfs_kept_file_open(void)
{
    if (rfs_kept_file_max() == 0)
        return -ENOSPC;
    /* Memory, not a file on a disk: a redaction's bytes must not outlive their drop in a
     * file system's free blocks (DESIGN "Forgetting"), which secure_delete covers for the
     * store alone. */
    int fd = memfd_create("runfs-answer", MFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

rfs_kept_rows *rfs_kept_file_new(int fd, int64_t bytes)
{
    rfs_kept_rows *r = bytes <= rfs_kept_file_max() ? malloc(sizeof *r) : NULL;
    if (!r) {
        close(fd);
        return NULL;
    }
    r->refs = 1;
    r->gen = kept_gen();
    r->fd = fd;
    r->bytes = bytes;
    r->on_disk = 0;
    r->n = 0;
    return r;
}

rfs_kept_rows *rfs_sizes_rows(rfs_sizes *c, const char *key, const rs_log_info *token)
{
    rfs_kept_rows *r = NULL;
    pthread_mutex_lock(&c->lock);
    entry *e = (entry *)rs_map_find(&c->map, key);
    if (e && e->rows && rfs_sizes_same_token(&e->token, token)) {
        r = e->rows;
        r->refs++;
    } else if (e) {
        /* The answer of an earlier version: its file's bytes go now, not at the next stat. */
        rows_drop(c, e);
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

void rfs_sizes_rows_done(rfs_sizes *c, rfs_kept_rows *rows)
{
    pthread_mutex_lock(&c->lock);
    rows_release(rows);
    pthread_mutex_unlock(&c->lock);
}

void rfs_sizes_rewrites(rfs_sizes *c, int64_t rewrites)
{
    pthread_mutex_lock(&c->lock);
    /* A count below the table's is a request's older look, not news: nothing goes. */
    if (rewrites > c->rewrites) {
        size_t pos = 0;
        for (uintptr_t o; (o = rs_map_next(&c->map, &pos));) {
            entry *e = (entry *)o;
            rows_drop(c, e);
            /* A kept document may hold them too (report.html, a receipt's terminal line):
             * its size stays (its key names the count it is of), its bytes go. */
            if (e->doc)
                c->doc_bytes -= (size_t)e->size;
            free(e->doc);
            e->doc = NULL;
        }
    }
    /* Only forward: a caller that read the count before a later one told of a rewrite
     * must not let an answer of its older count in (rfs_sizes_put_rows). */
    if (rewrites > c->rewrites)
        c->rewrites = rewrites;
    pthread_mutex_unlock(&c->lock);
}

int64_t rfs_sizes_rewrites_seen(rfs_sizes *c)
{
    pthread_mutex_lock(&c->lock);
    int64_t n = c->rewrites;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void rfs_sizes_put_rows(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size,
                        rfs_kept_rows *rows, int64_t rewrites)
{
    size_t bytes = rows ? rows->n * sizeof *rows->ids : 0;
    int64_t file = rows && rows->fd >= 0 && !rows->on_disk ? rows->bytes : 0;
    int64_t disk = rows && rows->fd >= 0 && rows->on_disk ? rows->bytes : 0;
    pthread_mutex_lock(&c->lock);
    /* Rows were rewritten (a redaction) while the answer was counted: it may hold their
     * old bytes, and nothing would drop it (no reader asks for its key again). */
    if (rows && rewrites < c->rewrites) {
        rows_release(rows);
        rows = NULL;
        bytes = 0;
        file = 0;
        disk = 0;
    }
    put(c, key, token, size, NULL);
    entry *e = (entry *)rs_map_find(&c->map, key);
    if (e && rows)
        rows_drop(c, e);
    /* The newest answer stays; older answers go when together they would pass a bound (a
     * reader holding one keeps it until it is done). */
    if (e && rows &&
        (c->rows_bytes + bytes > ROWS_MAX || c->file_bytes + file > FILES_MAX ||
         c->disk_bytes + disk > DISK_MAX || (rows->fd >= 0 && c->files >= RFS_KEPT_FILES_MAX))) {
        size_t pos = 0;
        for (uintptr_t o; (o = rs_map_next(&c->map, &pos));)
            rows_drop(c, (entry *)o);
    }
    if (e && rows) {
        e->rows = rows;
        c->rows_bytes += bytes;
        c->file_bytes += file;
        c->disk_bytes += disk;
        c->files += rows->fd >= 0;
        rows = NULL;
    }
    rows_release(rows);
    pthread_mutex_unlock(&c->lock);
}

/* Written a chunk at a time: one write per row would be a system call per line. */
#define WRITER_CHUNK ((size_t)1 << 20)

/* The cipher of a file on disk, its counter at byte off (a fresh state: CTR from any offset,
 * the bytes before it in its block passed over), or NULL when out of memory. */
static EVP_CIPHER_CTX *cipher_at(const unsigned char key[RFS_KEPT_KEY], int64_t off)
{
    unsigned char iv[16] = {0}, skip[16];
    uint64_t block = (uint64_t)off / 16;
    for (int i = 0; i < 8; i++)
        iv[15 - i] = (unsigned char)(block >> (8 * i));
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int n;
    if (!x || EVP_EncryptInit_ex(x, EVP_aes_128_ctr(), NULL, key, iv) != 1 ||
        (off % 16 && EVP_EncryptUpdate(x, skip, &n, skip, (int)(off % 16)) != 1)) {
        EVP_CIPHER_CTX_free(x);
        return NULL;
    }
    return x;
}

/* len bytes at p through x's keystream, in place (CTR: encrypting and decrypting are one). */
static int cipher_run(EVP_CIPHER_CTX *x, unsigned char *p, size_t len)
{
    while (len > 0) {
        int part = len > INT32_MAX / 2 ? INT32_MAX / 2 : (int)len, n;
        if (EVP_EncryptUpdate(x, p, &n, p, part) != 1 || n != part)
            return -EIO;
        p += part;
        len -= (size_t)part;
    }
    return 0;
}

/* An unlinked file in $TMPDIR (else /tmp) for an answer of up to rfs_kept_disk_max() bytes:
 * its descriptor, or a negative errno (-ENOSPC also where that many bytes would leave the
 * file system less than a tenth free: a kept answer must not fill a disk; and on a tmpfs or
 * ramfs, memory with no disk behind it, which the memfd's bound is for). */
static int disk_file_open(void)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        /* A file system without O_TMPFILE: a named file, unlinked at once. */
        rs_buf path = RS_BUF_INIT;
        if (rs_buf_addf(&path, "%s/runfs-answer-XXXXXX", dir)) {
            rs_buf_release(&path);
            return -ENOMEM;
        }
        fd = mkostemp(path.buf, O_CLOEXEC);
        int e = errno;
        if (fd >= 0)
            unlink(path.buf);
        rs_buf_release(&path);
        errno = e;
    }
    if (fd < 0)
        return -errno;
    struct statvfs v;
    struct statfs f;
    if (fstatfs(fd, &f) != 0 || f.f_type == TMPFS_MAGIC || f.f_type == RAMFS_MAGIC ||
        fstatvfs(fd, &v) != 0 ||
        (double)v.f_bavail * v.f_frsize - (double)rfs_kept_disk_max() <
            (double)v.f_blocks * v.f_frsize / 10) {
        close(fd);
        return -ENOSPC;
    }
    return fd;
}

void rfs_kept_writer_open(rfs_kept_writer *w, int want)
{
    w->want = want;
    w->fd = want != RFS_KEEP_NONE ? rfs_kept_file_open() : -1;
    if (w->fd < 0)
        w->fd = -1;
    w->bytes = 0;
    w->chunk = (rs_buf)RS_BUF_INIT;
    w->on_disk = 0;
    w->enc = NULL;
}

void rfs_kept_writer_drop(rfs_kept_writer *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    rs_buf_release(&w->chunk);
    EVP_CIPHER_CTX_free(w->enc);
    w->enc = NULL;
    OPENSSL_cleanse(w->key, sizeof w->key);
}

static int write_all(int fd, const char *p, size_t len)
{
    size_t at = 0;
    while (at < len) {
        ssize_t k = write(fd, p + at, len - at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        at += (size_t)k;
    }
    return 0;
}

static void writer_flush(rfs_kept_writer *w)
{
    if (w->fd < 0)
        return;
    /* Memory or disk short: nothing is kept (a search keeps its ids instead). */
    if ((w->on_disk && cipher_run(w->enc, (unsigned char *)w->chunk.buf, w->chunk.len)) ||
        write_all(w->fd, w->chunk.buf, w->chunk.len)) {
        rfs_kept_writer_drop(w);
        return;
    }
    rs_buf_reset(&w->chunk);
}

/* w's bytes so far (in its memfd and its chunk) moved to a file on disk, encrypted: 0, or -1
 * when no file can be made or written (w then keeps nothing). */
static int writer_to_disk(rfs_kept_writer *w)
{
    int fd = disk_file_open();
    if (fd < 0 || RAND_bytes(w->key, sizeof w->key) != 1 || !(w->enc = cipher_at(w->key, 0))) {
        if (fd >= 0)
            close(fd);
        rfs_kept_writer_drop(w);
        return -1;
    }
    int64_t kept = w->bytes - (int64_t)w->chunk.len;
    char *buf = malloc(WRITER_CHUNK);
    int rc = buf ? 0 : -1;
    for (int64_t at = 0; !rc && at < kept;) {
        size_t n = kept - at < (int64_t)WRITER_CHUNK ? (size_t)(kept - at) : WRITER_CHUNK;
        ssize_t r = pread(w->fd, buf, n, at);
        if (r < 0 && errno == EINTR)
            continue;
        rc = r <= 0 || cipher_run(w->enc, (unsigned char *)buf, (size_t)r) ||
                     write_all(fd, buf, (size_t)r)
                 ? -1
                 : 0;
        at += r > 0 ? r : 0;
    }
    free(buf);
    close(w->fd);
    w->fd = fd;
    w->on_disk = 1;
    if (rc)
        rfs_kept_writer_drop(w);
    return rc;
}

void rfs_kept_writer_add(rfs_kept_writer *w, const char *p, size_t len)
{
    if (!w || w->fd < 0)
        return;
    int64_t to = w->bytes + (int64_t)len;
    /* A search's answer past what memory keeps goes on to disk. */
    if (!w->on_disk && to > rfs_kept_file_max() && w->want == RFS_KEEP_DISK &&
        to <= rfs_kept_disk_max() && writer_to_disk(w))
        return;
    if (to > (w->on_disk ? rfs_kept_disk_max() : rfs_kept_file_max()) ||
        rs_buf_add(&w->chunk, p, len)) {
        rfs_kept_writer_drop(w);
        return;
    }
    w->bytes = to;
    if (w->chunk.len >= WRITER_CHUNK)
        writer_flush(w);
}

rfs_kept_rows *rfs_kept_writer_finish(rfs_kept_writer *w, int64_t size)
{
    writer_flush(w);
    rfs_kept_rows *r = NULL;
    if (w->fd >= 0 && w->bytes == size && w->on_disk) {
        if ((r = malloc(sizeof *r))) {
            r->refs = 1;
            r->gen = kept_gen();
            r->fd = w->fd;
            r->bytes = w->bytes;
            r->on_disk = 1;
            memcpy(r->key, w->key, sizeof r->key);
            r->n = 0;
            w->fd = -1;
        }
    } else if (w->fd >= 0 && w->bytes == size) {
        r = rfs_kept_file_new(w->fd, w->bytes);
        w->fd = -1;
    }
    rfs_kept_writer_drop(w);
    return r;
}

ssize_t rfs_kept_read_at(const rfs_kept_rows *k, void *buf, size_t len, int64_t off)
{
    if (off >= k->bytes)
        return 0;
    if ((int64_t)len > k->bytes - off)
        len = (size_t)(k->bytes - off);
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(k->fd, (char *)buf + got, len - got, off + (int64_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EIO;
        got += (size_t)r;
    }
    if (k->on_disk && got > 0) {
        EVP_CIPHER_CTX *x = cipher_at(k->key, off);
        int rc = x ? cipher_run(x, buf, got) : -ENOMEM;
        EVP_CIPHER_CTX_free(x);
        if (rc)
            return rc;
    }
    return (ssize_t)got;
}

int rfs_kept_pread(const rfs_kept_rows *k, int64_t off, size_t size, rs_buf *out)
{
    if (off >= k->bytes)
        return 0;
    if ((int64_t)size > k->bytes - off)
        size = (size_t)(k->bytes - off);
    int rc = rs_buf_grow(out, size);
    ssize_t got = rc ? rc : rfs_kept_read_at(k, out->buf + out->len, size, off);
    if (got < 0)
        return (int)got;
    rs_buf_setlen(out, out->len + (size_t)got);
    return 0;
}
