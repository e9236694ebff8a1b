/* test_merkle.c — merkle.c's builder and proofs against RFC 6962 section 2.1 written here
 * from its text (MTH and PATH by recursion over all the leaves), for every tree size up to
 * past two chunks and around larger chunk boundaries; each path is also checked by
 * rs_merkle_check and refused at another index or for another line. The builder's digest
 * is SHA-256 over the lines end to end; its worker's hand-off is checked with batches cut by
 * line count and by bytes, and a builder dropped before its finish. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "merkle.h"
#include "rs_util.h"

static EVP_MD_CTX *ctx;

static void sha(const void *a, size_t alen, const void *b, size_t blen, unsigned char prefix,
                unsigned char *out)
{
    unsigned int len;
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, &prefix, 1);
    EVP_DigestUpdate(ctx, a, alen);
    if (blen)
        EVP_DigestUpdate(ctx, b, blen);
    EVP_DigestFinal_ex(ctx, out, &len);
}

static int64_t largest_below(int64_t n)
{
    int64_t k = 1;
    while (k * 2 < n)
        k *= 2;
    return k;
}

/* MTH(D[lo:hi]) over leaf hashes. */
static void ref_mth(unsigned char (*leaf)[32], int64_t lo, int64_t hi, unsigned char *out)
{
    if (hi - lo == 1) {
        memcpy(out, leaf[lo], 32);
        return;
    }
    int64_t k = largest_below(hi - lo);
    unsigned char l[32], r[32];
    ref_mth(leaf, lo, lo + k, l);
    ref_mth(leaf, lo + k, hi, r);
    sha(l, 32, r, 32, 1, out);
}

/* PATH(m, D[lo:hi]), appended bottom-up to out (count in *n). */
static void ref_path(unsigned char (*leaf)[32], int64_t m, int64_t lo, int64_t hi,
                     unsigned char (*out)[32], size_t *n)
{
    if (hi - lo == 1)
        return;
    int64_t k = largest_below(hi - lo);
    if (m < lo + k) {
        ref_path(leaf, m, lo, lo + k, out, n);
        ref_mth(leaf, lo + k, hi, out[(*n)++]);
    } else {
        ref_path(leaf, m, lo + k, hi, out, n);
        ref_mth(leaf, lo, lo + k, out[(*n)++]);
    }
}

#define MAX_LEAVES 12300

static char lines[MAX_LEAVES][40];
static unsigned char leaves[MAX_LEAVES][32];

/* SHA-256 over lines[0..n) end to end. */
static void lines_digest(int64_t n, unsigned char *out)
{
    unsigned int len;
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    for (int64_t i = 0; i < n; i++)
        EVP_DigestUpdate(ctx, lines[i], strlen(lines[i]));
    EVP_DigestFinal_ex(ctx, out, &len);
}

static void check_size(int64_t n)
{
    rs_merkle *m;
    assert_int_equal(rs_merkle_new(&m), 0);
    for (int64_t i = 0; i < n; i++) {
        /* seq = 2i + 1: seqs with gaps, as a run's are in a shared thread. */
        snprintf(lines[i], sizeof lines[i], "{\"line\":%lld}\n", (long long)i);
        sha(lines[i], strlen(lines[i]), NULL, 0, 0, leaves[i]);
        assert_int_equal(rs_merkle_add(m, 2 * i + 1, NULL, lines[i], strlen(lines[i])), 0);
    }
    unsigned char root[32], want[32], digest[32], want_digest[32];
    rs_buf seqs = RS_BUF_INIT, nodes = RS_BUF_INIT;
    assert_int_equal(rs_merkle_finish(m, root, digest, &seqs, &nodes), 0);
    rs_merkle_free(m);
    ref_mth(leaves, 0, n, want);
    if (memcmp(root, want, 32) != 0)
        fail_msg("tree of %lld leaves: root differs from RFC 6962's", (long long)n);
    lines_digest(n, want_digest);
    if (memcmp(digest, want_digest, 32) != 0)
        fail_msg("tree of %lld leaves: digest differs from SHA-256 of the lines", (long long)n);
    /* Proofs of the first and last leaves, around each chunk edge and a few others. */
    int64_t picks[] = {0, n - 1, n / 2, 255, 256, 512, n - 257};
    for (size_t p = 0; p < sizeof picks / sizeof *picks; p++) {
        int64_t i = picks[p];
        if (i < 0 || i >= n)
            continue;
        int64_t j, from, to;
        assert_int_equal(rs_merkle_chunk_of(&seqs, n, 2 * i + 1, &j, &from, &to), 0);
        rs_buf chunk = RS_BUF_INIT, path = RS_BUF_INIT;
        size_t ends[RS_MERKLE_CHUNK];
        int64_t count = 0, at = -1;
        for (int64_t k = 0; k < n; k++)
            if (2 * k + 1 >= from && 2 * k + 1 < to) {
                if (k == i)
                    at = count;
                assert_int_equal(rs_buf_addstr(&chunk, lines[k]), 0);
                ends[count++] = chunk.len;
            }
        assert_int_equal(count, rs_merkle_chunk_size(n, j));
        assert_int_equal(j * RS_MERKLE_CHUNK + at, i);
        assert_int_equal(rs_merkle_path(n, &nodes, j, &chunk, ends, NULL, count, at, &path), 0);
        unsigned char ref[64][32];
        size_t depth = 0;
        ref_path(leaves, i, 0, n, ref, &depth);
        assert_int_equal(path.len, depth * 32);
        if (depth && memcmp(path.buf, ref, depth * 32) != 0)
            fail_msg("tree of %lld: the path of leaf %lld differs from RFC 6962's", (long long)n,
                     (long long)i);
        const unsigned char *pp = (const unsigned char *)path.buf;
        assert_true(rs_merkle_check(NULL, lines[i], strlen(lines[i]), i, n, pp, depth, root));
        if (n > 1) {
            int64_t other = (i + 1) % n;
            assert_false(rs_merkle_check(NULL, lines[other], strlen(lines[other]), i, n, pp, depth, root));
            assert_false(rs_merkle_check(NULL, lines[i], strlen(lines[i]), other, n, pp, depth, root));
        }
        /* A changed row in the chunk: the kept chunk hash no longer matches. */
        chunk.buf[0] = '[';
        rs_buf_reset(&path);
        assert_int_equal(rs_merkle_path(n, &nodes, j, &chunk, ends, NULL, count, at, &path), -EBADMSG);
        rs_buf_release(&chunk);
        rs_buf_release(&path);
    }
    rs_buf_release(&seqs);
    rs_buf_release(&nodes);
}

/* Every size, or under valgrind (RS_UNIT_QUICK, which scripts/test sets there; ASan runs the
 * whole loop) the sizes up to 17 and those next to a power of two or a chunk's end: each
 * shape of the last chunk's tree, at a twentieth of the cost. */
static void test_every_size_to_three_chunks(void **state)
{
    (void)state;
    int quick = getenv("RS_UNIT_QUICK") != NULL;
    for (int64_t n = 1; n <= 3 * RS_MERKLE_CHUNK + 1; n++) {
        int64_t r = n % RS_MERKLE_CHUNK;
        int near_pow2 = ((r - 1) & r) == 0 || (r & (r + 1)) == 0 || ((r - 2) & (r - 1)) == 0;
        if (!quick || n <= 17 || near_pow2)
            check_size(n);
    }
}

static void test_larger_sizes(void **state)
{
    (void)state;
    static const int64_t sizes[] = {1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 8193, 12289};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        check_size(sizes[i]);
}

/* Lines of up to 3 MiB among short ones: batches cut at the byte bound (a line longer than
 * a whole batch among them) and at the line count, so many hand-offs to the worker. */
static void test_handoff(void **state)
{
    (void)state;
    enum { N = 9000, BIG = 3 << 20 };
    static const int64_t big_at[] = {0, 1, 2, 700, 4095, 4096, 4097, 8999};
    char *big = malloc(BIG);
    assert_non_null(big);
    for (size_t i = 0; i < BIG; i++)
        big[i] = (char)('a' + i % 26);
    rs_merkle *m;
    assert_int_equal(rs_merkle_new(&m), 0);
    size_t *lens = calloc(N, sizeof *lens);
    assert_non_null(lens);
    for (int64_t i = 0; i < N; i++) {
        snprintf(lines[i], sizeof lines[i], "{\"line\":%lld}\n", (long long)i);
        const char *p = lines[i];
        lens[i] = strlen(lines[i]);
        for (size_t k = 0; k < sizeof big_at / sizeof *big_at; k++)
            if (big_at[k] == i) {
                p = big;
                lens[i] = (size_t)BIG - 1000 * k; /* each a different line */
            }
        sha(p, lens[i], NULL, 0, 0, leaves[i]);
        assert_int_equal(rs_merkle_add(m, i + 1, NULL, p, lens[i]), 0);
    }
    unsigned char root[32], want[32], digest[32], want_digest[32];
    rs_buf seqs = RS_BUF_INIT, nodes = RS_BUF_INIT;
    assert_int_equal(rs_merkle_finish(m, root, digest, &seqs, &nodes), 0);
    rs_merkle_free(m);
    ref_mth(leaves, 0, N, want);
    assert_memory_equal(root, want, 32);
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    for (int64_t i = 0; i < N; i++) {
        const char *p = lens[i] > 100 ? big : lines[i];
        EVP_DigestUpdate(ctx, p, lens[i]);
    }
    unsigned int len;
    EVP_DigestFinal_ex(ctx, want_digest, &len);
    assert_memory_equal(digest, want_digest, 32);
    assert_int_equal((int64_t)seqs.len, 8 * ((N + RS_MERKLE_CHUNK - 1) / RS_MERKLE_CHUNK));
    rs_buf_release(&seqs);
    rs_buf_release(&nodes);
    free(lens);
    free(big);
}

/* A seal that gives up mid-run frees its builder without finishing: the worker, with a
 * batch handed to it and another filling, stops and is joined (the sanitizers' builds say
 * whether anything raced or leaked). */
static void test_dropped_builder(void **state)
{
    (void)state;
    for (int64_t n = 4095; n <= 3 * 4096 + 1; n += 4097) {
        rs_merkle *m;
        assert_int_equal(rs_merkle_new(&m), 0);
        for (int64_t i = 0; i < n; i++)
            assert_int_equal(rs_merkle_add(m, i + 1, NULL, "{}\n", 3), 0);
        rs_merkle_free(m);
    }
}

static void test_empty(void **state)
{
    (void)state;
    rs_merkle *m;
    unsigned char root[32], want[32], digest[32];
    unsigned int len;
    rs_buf seqs = RS_BUF_INIT, nodes = RS_BUF_INIT;
    assert_int_equal(rs_merkle_new(&m), 0);
    assert_int_equal(rs_merkle_finish(m, root, digest, &seqs, &nodes), 0);
    rs_merkle_free(m);
    EVP_Digest("", 0, want, &len, EVP_sha256(), NULL);
    assert_memory_equal(root, want, 32);
    assert_memory_equal(digest, want, 32);
    int64_t j, from, to;
    assert_int_equal(rs_merkle_chunk_of(&seqs, 0, 1, &j, &from, &to), -ENOENT);
    rs_buf_release(&seqs);
    rs_buf_release(&nodes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_size_to_three_chunks),
        cmocka_unit_test(test_larger_sizes),
        cmocka_unit_test(test_handoff),
        cmocka_unit_test(test_dropped_builder),
        cmocka_unit_test(test_empty),
    };
    ctx = EVP_MD_CTX_new();
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    EVP_MD_CTX_free(ctx);
    return failed;
}
