/* merkle.c — see merkle.h. Hashing goes through EVP contexts made once per builder or proof,
 * with the digest fetched once: a seal hashes every line twice (digest and leaf) and each
 * pair of subtrees once, so a per-hash fetch or allocation would show. */
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "merkle.h"
#include "rs_util.h"

#define C RS_MERKLE_CHUNK

typedef struct hasher {
    EVP_MD *md;
    EVP_MD_CTX *ctx;
} hasher;

static int hasher_init(hasher *h)
{
    h->md = EVP_MD_fetch(NULL, "SHA256", NULL);
    h->ctx = EVP_MD_CTX_new();
    return h->md && h->ctx ? 0 : -ENOMEM;
}

static void hasher_done(hasher *h)
{
    EVP_MD_CTX_free(h->ctx);
    EVP_MD_free(h->md);
}

static int hash2(hasher *h, unsigned char prefix, const void *a, size_t alen, const void *b,
                 size_t blen, unsigned char *out)
{
    unsigned int len;
    if (EVP_DigestInit_ex(h->ctx, h->md, NULL) != 1 ||
        (prefix != 0xff && EVP_DigestUpdate(h->ctx, &prefix, 1) != 1) ||
        EVP_DigestUpdate(h->ctx, a, alen) != 1 ||
        (blen && EVP_DigestUpdate(h->ctx, b, blen) != 1) ||
        EVP_DigestFinal_ex(h->ctx, out, &len) != 1)
        return -EIO;
    return 0;
}

static int leaf(hasher *h, const rs_leaf *how, const void *line, size_t len, unsigned char *out)
{
    if (how && how->kind == RS_LEAF_KEPT) {
        memcpy(out, how->b, RS_SHA256_LEN);
        return 0;
    }
    if (how && how->kind == RS_LEAF_SALTED)
        return hash2(h, 0x00, how->b, RS_SALT_LEN, line, len, out);
    return hash2(h, 0x00, line, len, NULL, 0, out);
}

int rs_merkle_leaf(const rs_leaf *how, const char *line, size_t len,
                   unsigned char out[RS_SHA256_LEN])
{
    hasher h;
    int rc = hasher_init(&h);
    if (!rc)
        rc = leaf(&h, how, line, len, out);
    hasher_done(&h);
    return rc;
}

static int node(hasher *h, const unsigned char *l, const unsigned char *r, unsigned char *out)
{
    return hash2(h, 0x01, l, RS_SHA256_LEN, r, RS_SHA256_LEN, out);
}

/* The largest power of two below n (n >= 2). */
static int64_t split(int64_t n)
{
    int64_t k = 1;
    while (k * 2 < n)
        k *= 2;
    return k;
}

/* ---- the builder ----------------------------------------------------------------------------
 * A seal reads its rows on the caller's thread; the lines' digest, the leaves and the
 * subtrees are hashed on a worker, a batch of lines behind, so a second core takes the
 * hashing (a seal of a run shorter than one batch never starts it). A batch's lines lie end
 * to end, so the digest takes a batch in one update. */

#define BATCH_LINES 4096
#define BATCH_BYTES (1u << 20)

typedef struct batch {
    rs_buf bytes;
    size_t *ends;  /* where each line ends in bytes */
    int64_t *seqs; /* and its seq */
    rs_leaf *how;  /* and how it becomes its leaf */
    size_t n, cap, how_cap;
} batch;

struct rs_merkle {
    hasher h;
    EVP_MD_CTX *lines;                      /* the digest of every line, in order */
    unsigned char stack[16][RS_SHA256_LEN]; /* the chunk's complete subtrees, largest first */
    int height[16];
    int depth;
    int64_t n;
    rs_buf seqs;
    rs_buf level0; /* complete chunks' hashes */
    /* The tree above is the worker's while it runs (handed back by the join). */
    batch b[2];
    int fill; /* the batch the caller fills */
    int started;
    pthread_t worker;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending; /* under mu: batch 1 - fill is the worker's to hash */
    int stop;    /* under mu: no batch will come */
    int rc;      /* under mu: the worker's first failure */
};

static int put_seq(rs_buf *b, int64_t seq)
{
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)((uint64_t)seq >> (8 * i));
    return rs_buf_add(b, le, 8);
}

static int64_t get_seq(const rs_buf *b, int64_t j)
{
    const unsigned char *p = (const unsigned char *)b->buf + 8 * j;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return (int64_t)v;
}

static int tree_add(rs_merkle *m, int64_t seq, const rs_leaf *how, const char *line, size_t len)
{
    int rc;
    if (m->n % C == 0 && (rc = put_seq(&m->seqs, seq)))
        return rc;
    if ((rc = leaf(&m->h, how, line, len, m->stack[m->depth])))
        return rc;
    m->height[m->depth++] = 0;
    while (m->depth >= 2 && m->height[m->depth - 1] == m->height[m->depth - 2]) {
        if ((rc = node(&m->h, m->stack[m->depth - 2], m->stack[m->depth - 1],
                       m->stack[m->depth - 2])))
            return rc;
        m->height[m->depth - 2]++;
        m->depth--;
    }
    if (++m->n % C == 0) {
        if ((rc = rs_buf_add(&m->level0, m->stack[0], RS_SHA256_LEN)))
            return rc;
        m->depth = 0;
    }
    return 0;
}

static int tree_add_batch(rs_merkle *m, const batch *b)
{
    int rc = b->n && EVP_DigestUpdate(m->lines, b->bytes.buf, b->bytes.len) != 1 ? -EIO : 0;
    for (size_t i = 0; i < b->n && !rc; i++) {
        size_t start = i ? b->ends[i - 1] : 0;
        rc = tree_add(m, b->seqs[i], &b->how[i], b->bytes.buf + start, b->ends[i] - start);
    }
    return rc;
}

static void *worker_main(void *arg)
{
    rs_merkle *m = arg;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->pending && !m->stop)
            pthread_cond_wait(&m->cv, &m->mu);
        if (!m->pending)
            break;
        const batch *b = &m->b[1 - m->fill];
        pthread_mutex_unlock(&m->mu);
        int rc = tree_add_batch(m, b);
        pthread_mutex_lock(&m->mu);
        if (rc && !m->rc)
            m->rc = rc;
        m->pending = 0;
        pthread_cond_broadcast(&m->cv);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* Wait until the worker is done with its batch: its failure, if any. */
static int wait_worker(rs_merkle *m)
{
    pthread_mutex_lock(&m->mu);
    while (m->pending)
        pthread_cond_wait(&m->cv, &m->mu);
    int rc = m->rc;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Hand the filled batch to the worker (started now when not yet); fill the other. */
static int hand_off(rs_merkle *m)
{
    if (!m->started) {
        if (pthread_create(&m->worker, NULL, worker_main, m) != 0)
            return tree_add_batch(m, &m->b[m->fill]); /* no thread: hash it here */
        m->started = 1;
    }
    int rc = wait_worker(m);
    if (rc)
        return rc;
    pthread_mutex_lock(&m->mu);
    m->fill = 1 - m->fill;
    m->pending = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    batch *next = &m->b[m->fill];
    rs_buf_reset(&next->bytes);
    next->n = 0;
    return 0;
}

/* Stop the worker, once its last batch is hashed; the tree is the caller's again. */
static int stop_worker(rs_merkle *m)
{
    if (!m->started)
        return 0;
    int rc = wait_worker(m);
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->worker, NULL);
    m->started = 0;
    return rc;
}

int rs_merkle_new(rs_merkle **out)
{
    rs_merkle *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->seqs = (rs_buf)RS_BUF_INIT;
    m->level0 = (rs_buf)RS_BUF_INIT;
    m->b[0].bytes = (rs_buf)RS_BUF_INIT;
    m->b[1].bytes = (rs_buf)RS_BUF_INIT;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    if (hasher_init(&m->h) || !(m->lines = EVP_MD_CTX_new()) ||
        EVP_DigestInit_ex(m->lines, m->h.md, NULL) != 1) {
        rs_merkle_free(m);
        return -ENOMEM;
    }
    *out = m;
    return 0;
}

void rs_merkle_free(rs_merkle *m)
{
    if (!m)
        return;
    (void)stop_worker(m);
    EVP_MD_CTX_free(m->lines);
    hasher_done(&m->h);
    rs_buf_release(&m->seqs);
    rs_buf_release(&m->level0);
    for (int i = 0; i < 2; i++) {
        rs_buf_release(&m->b[i].bytes);
        free(m->b[i].ends);
        free(m->b[i].seqs);
        free(m->b[i].how);
    }
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}

int rs_merkle_add(rs_merkle *m, int64_t seq, const rs_leaf *how, const char *line, size_t len)
{
    batch *b = &m->b[m->fill];
    if (b->n == b->cap) {
        size_t cap = b->cap;
        if (rs_array_grow(&b->ends, &cap, b->n + 1, sizeof *b->ends) ||
            rs_array_grow(&b->seqs, &b->cap, b->n + 1, sizeof *b->seqs))
            return -ENOMEM;
    }
    if (rs_array_grow(&b->how, &b->how_cap, b->n + 1, sizeof *b->how))
        return -ENOMEM;
    if (rs_buf_add(&b->bytes, line, len))
        return -ENOMEM;
    if (how)
        b->how[b->n] = *how;
    else
        b->how[b->n].kind = RS_LEAF_PLAIN;
    b->ends[b->n] = b->bytes.len;
    b->seqs[b->n++] = seq;
    return b->n >= BATCH_LINES || b->bytes.len >= BATCH_BYTES ? hand_off(m) : 0;
}

/* Where level L starts in nodes (in hashes), and how many hashes nodes must hold. */
static int64_t level_at(int64_t n, int level)
{
    int64_t at = 0;
    for (int l = 0; l < level; l++)
        at += n / ((int64_t)C << l);
    return at;
}

static int64_t nodes_count(int64_t n)
{
    int levels = 0;
    while (n / ((int64_t)C << levels))
        levels++;
    return level_at(n, levels) + (n % C != 0);
}

/* The hash of leaves [lo, hi) of the tree, lo a multiple of C: a complete aligned subtree,
 * or one ending at n (its pieces, largest first, folded from the right as the RFC's split
 * does; under a chunk, the kept last chunk). */
static int range_hash(hasher *h, int64_t n, const unsigned char *nodes, int64_t lo, int64_t hi,
                      unsigned char *out)
{
    const unsigned char *piece[64];
    int count = 0;
    int64_t pos = lo;
    while (hi - pos >= C) {
        int level = 0;
        while (((int64_t)C << (level + 1)) <= hi - pos)
            level++;
        int64_t size = (int64_t)C << level;
        piece[count++] = nodes + RS_SHA256_LEN * (level_at(n, level) + pos / size);
        pos += size;
    }
    if (pos < hi)
        piece[count++] = nodes + RS_SHA256_LEN * (nodes_count(n) - 1);
    memcpy(out, piece[count - 1], RS_SHA256_LEN);
    for (int k = count - 2; k >= 0; k--) {
        int rc = node(h, piece[k], out, out);
        if (rc)
            return rc;
    }
    return 0;
}

int rs_merkle_finish(rs_merkle *m, unsigned char root[RS_SHA256_LEN],
                     unsigned char digest[RS_SHA256_LEN], rs_buf *seqs, rs_buf *nodes)
{
    unsigned int len;
    int rc = stop_worker(m);
    if (rc || (rc = tree_add_batch(m, &m->b[m->fill])))
        return rc;
    m->b[m->fill].n = 0;
    if (EVP_DigestFinal_ex(m->lines, digest, &len) != 1)
        return -EIO;
    unsigned char tail[RS_SHA256_LEN];
    if (m->depth) {
        memcpy(tail, m->stack[m->depth - 1], RS_SHA256_LEN);
        for (int k = m->depth - 2; k >= 0; k--)
            if ((rc = node(&m->h, m->stack[k], tail, tail)))
                return rc;
    }
    rs_buf_reset(nodes);
    if ((rc = rs_buf_add(nodes, m->level0.buf, m->level0.len)))
        return rc;
    size_t from = 0;
    for (int64_t count = m->n / C; count >= 2; count /= 2) {
        if ((rc = rs_buf_grow(nodes, (size_t)(count / 2) * RS_SHA256_LEN)))
            return rc;
        for (int64_t i = 0; i < count / 2; i++) {
            unsigned char *p = (unsigned char *)nodes->buf;
            if ((rc = node(&m->h, p + from + 2 * i * RS_SHA256_LEN,
                           p + from + (2 * i + 1) * RS_SHA256_LEN, p + nodes->len)))
                return rc;
            rs_buf_setlen(nodes, nodes->len + RS_SHA256_LEN);
        }
        from += (size_t)count * RS_SHA256_LEN;
    }
    if (m->depth && (rc = rs_buf_add(nodes, tail, RS_SHA256_LEN)))
        return rc;
    rs_buf_reset(seqs);
    if ((rc = rs_buf_add(seqs, m->seqs.buf, m->seqs.len)))
        return rc;
    if (!m->n)
        return hash2(&m->h, 0xff, "", 0, NULL, 0, root);
    return range_hash(&m->h, m->n, (const unsigned char *)nodes->buf, 0, m->n, root);
}

/* ---- proofs --------------------------------------------------------------------------------- */

int64_t rs_merkle_chunk_size(int64_t n, int64_t j)
{
    return (j + 1) * C <= n ? C : n - j * C;
}

int rs_merkle_chunk_of(const rs_buf *seqs, int64_t n, int64_t seq, int64_t *chunk, int64_t *from,
                       int64_t *to)
{
    int64_t chunks = (n + C - 1) / C;
    if ((int64_t)seqs->len != 8 * chunks)
        return -EINVAL;
    if (!chunks || seq < get_seq(seqs, 0))
        return -ENOENT;
    int64_t lo = 0, hi = chunks - 1; /* the last chunk starting at or before seq */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (get_seq(seqs, mid) <= seq)
            lo = mid;
        else
            hi = mid - 1;
    }
    *chunk = lo;
    *from = get_seq(seqs, lo);
    *to = lo + 1 < chunks ? get_seq(seqs, lo + 1) : INT64_MAX;
    return 0;
}

/* The RFC's MTH over leaves[lo, hi) into out, each node hashed once; when leaf m lies
 * inside, the siblings of its path (the RFC's PATH) are appended to path, bottom-up. */
static int mth_path(hasher *h, const unsigned char *leaves, int64_t lo, int64_t hi, int64_t m,
                    rs_buf *path, unsigned char *out)
{
    if (hi - lo == 1) {
        memcpy(out, leaves + lo * RS_SHA256_LEN, RS_SHA256_LEN);
        return 0;
    }
    unsigned char l[RS_SHA256_LEN], r[RS_SHA256_LEN];
    int64_t k = split(hi - lo);
    int in_left = m >= lo && m < lo + k, in_right = m >= lo + k && m < hi;
    int rc = mth_path(h, leaves, lo, lo + k, in_left ? m : -1, path, l);
    if (!rc)
        rc = mth_path(h, leaves, lo + k, hi, in_right ? m : -1, path, r);
    if (!rc && (in_left || in_right))
        rc = rs_buf_add(path, in_left ? r : l, RS_SHA256_LEN);
    return rc ? rc : node(h, l, r, out);
}

/* The same above the chunks, from the kept hashes. */
static int up_path(hasher *h, int64_t n, const unsigned char *nodes, int64_t lo, int64_t hi,
                   int64_t m, rs_buf *path)
{
    if (hi - lo <= C)
        return 0;
    unsigned char sib[RS_SHA256_LEN];
    int64_t k = split(hi - lo);
    int rc = m < lo + k ? up_path(h, n, nodes, lo, lo + k, m, path)
                        : up_path(h, n, nodes, lo + k, hi, m, path);
    if (!rc)
        rc = m < lo + k ? range_hash(h, n, nodes, lo + k, hi, sib)
                        : range_hash(h, n, nodes, lo, lo + k, sib);
    return rc ? rc : rs_buf_add(path, sib, RS_SHA256_LEN);
}

int rs_merkle_diff(int64_t n, const rs_buf *seqs, const rs_buf *nodes_a, const rs_buf *nodes_b,
                   int (*fn)(void *ctx, int64_t from, int64_t to), void *ctx)
{
    int64_t chunks = (n + C - 1) / C, count = nodes_count(n);
    if ((int64_t)seqs->len != 8 * chunks || (int64_t)nodes_a->len != RS_SHA256_LEN * count ||
        (int64_t)nodes_b->len != RS_SHA256_LEN * count)
        return -EINVAL;
    /* Level 0 first: a hash per complete chunk, the incomplete last chunk's at the very end. */
    for (int64_t j = 0; j < chunks; j++) {
        int64_t at = RS_SHA256_LEN * (j < n / C ? j : count - 1);
        if (memcmp(nodes_a->buf + at, nodes_b->buf + at, RS_SHA256_LEN) == 0)
            continue;
        int rc = fn(ctx, get_seq(seqs, j), j + 1 < chunks ? get_seq(seqs, j + 1) : INT64_MAX);
        if (rc)
            return rc;
    }
    return 0;
}

int rs_merkle_path(int64_t n, const rs_buf *nodes, int64_t j, const rs_buf *lines,
                   const size_t *ends, const rs_leaf *how, int64_t count, int64_t i, rs_buf *path)
{
    if ((int64_t)nodes->len != RS_SHA256_LEN * nodes_count(n) || j < 0 || j * C >= n)
        return -EINVAL;
    if (count != rs_merkle_chunk_size(n, j) || i < 0 || i >= count)
        return -EBADMSG;
    hasher h;
    unsigned char *leaves = malloc((size_t)count * RS_SHA256_LEN);
    int rc = hasher_init(&h);
    if (!leaves || rc) {
        rc = -ENOMEM;
        goto out;
    }
    for (int64_t k = 0; k < count && !rc; k++) {
        size_t start = k ? ends[k - 1] : 0;
        rc = leaf(&h, how ? &how[k] : NULL, lines->buf + start, ends[k] - start,
                  leaves + k * RS_SHA256_LEN);
    }
    const unsigned char *kept = (const unsigned char *)nodes->buf;
    unsigned char got[RS_SHA256_LEN];
    size_t start = path->len;
    if (rc || (rc = mth_path(&h, leaves, 0, count, i, path, got)))
        goto out;
    kept += RS_SHA256_LEN * (count == C ? j : nodes_count(n) - 1);
    if (memcmp(got, kept, RS_SHA256_LEN) != 0) {
        rs_buf_setlen(path, start);
        rc = -EBADMSG;
        goto out;
    }
    rc = up_path(&h, n, (const unsigned char *)nodes->buf, 0, n, j * C + i, path);
out:
    free(leaves);
    hasher_done(&h);
    return rc;
}

int rs_merkle_check(const unsigned char *salt, const char *line, size_t len, int64_t i, int64_t n,
                    const unsigned char *path, size_t depth,
                    const unsigned char root[RS_SHA256_LEN])
{
    rs_leaf how = {.kind = salt ? RS_LEAF_SALTED : RS_LEAF_PLAIN};
    if (salt)
        memcpy(how.b, salt, RS_SALT_LEN);
    if (i < 0 || i >= n)
        return 0;
    hasher h;
    unsigned char r[RS_SHA256_LEN];
    int ok = 0;
    if (hasher_init(&h) || leaf(&h, &how, line, len, r))
        goto out;
    uint64_t fn = (uint64_t)i, sn = (uint64_t)(n - 1);
    for (size_t k = 0; k < depth; k++) {
        const unsigned char *p = path + k * RS_SHA256_LEN;
        if (sn == 0)
            goto out;
        if ((fn & 1) || fn == sn) {
            if (node(&h, p, r, r))
                goto out;
            while (!(fn & 1) && fn != 0) {
                fn >>= 1;
                sn >>= 1;
            }
        } else if (node(&h, r, p, r))
            goto out;
        fn >>= 1;
        sn >>= 1;
    }
    ok = sn == 0 && memcmp(r, root, RS_SHA256_LEN) == 0;
out:
    hasher_done(&h);
    return ok;
}

void rs_sha256_hex(char *dst, const unsigned char *h)
{
    memcpy(dst, "sha256:", 7);
    rs_hex(dst + 7, h, RS_SHA256_LEN);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int rs_sha256_parse(const char *s, size_t len, unsigned char *h)
{
    if (len != 7 + 2 * RS_SHA256_LEN || memcmp(s, "sha256:", 7) != 0)
        return -EINVAL;
    for (int i = 0; i < RS_SHA256_LEN; i++) {
        int hi = hexval(s[7 + 2 * i]), lo = hexval(s[8 + 2 * i]);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        h[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}
