/* test_sizes.c — the search answers views/sizes.c keeps beside their sizes: an answer's file
 * is found only at its token, goes when another token asks for it, when the store's rewrites
 * count moves and when the files together would pass their bound (a reader's reference
 * keeping its own open until it is done); each file closed when its last reference goes.
 * And the table's bounds: walks of more views than it holds, and documents past their
 * bytes' bound, keep most of what they put, each size and document as it was put. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sizes.h"

static int is_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1;
}

/* A kept answer of a fresh file that says it holds bytes (none are read here). */
static rfs_kept_rows *answer(int64_t bytes, int *fd)
{
    *fd = rfs_kept_file_open();
    assert_true(*fd >= 0);
    rfs_kept_rows *r = rfs_kept_file_new(*fd, bytes);
    assert_non_null(r);
    return r;
}

static int sizes_setup(void **state)
{
    rfs_sizes *c;
    assert_int_equal(rfs_sizes_new(&c), 0);
    *state = c;
    return 0;
}

static int sizes_teardown(void **state)
{
    rfs_sizes_free(*state);
    return 0;
}

static void test_kept_file_by_token(void **state)
{
    rfs_sizes *c = *state;
    rs_log_info t1 = {.exists = 1, .count = 1}, t2 = {.exists = 1, .count = 2};
    int fd;
    rfs_sizes_put_rows(c, "q", &t1, 10, answer(10, &fd), 0);
    rfs_kept_rows *r = rfs_sizes_rows(c, "q", &t1);
    assert_non_null(r);
    assert_int_equal(r->fd, fd);
    assert_int_equal(r->bytes, 10);
    rfs_sizes_rows_done(c, r);
    assert_null(rfs_sizes_rows(c, "other", &t1));
    /* Asked at another token: the answer goes, its file closed. */
    assert_null(rfs_sizes_rows(c, "q", &t2));
    assert_false(is_open(fd));
    assert_null(rfs_sizes_rows(c, "q", &t1));
}

static void test_kept_file_rewrites(void **state)
{
    rfs_sizes *c = *state;
    rs_log_info t = {.exists = 1, .count = 1};
    int a, b;
    rfs_sizes_rewrites(c, 5);
    rfs_sizes_put_rows(c, "a", &t, 1, answer(1, &a), 5);
    rfs_sizes_put_rows(c, "b", &t, 1, answer(1, &b), 5);
    rfs_sizes_rewrites(c, 5);
    assert_true(is_open(a) && is_open(b));
    /* A reader holds a; a rewrite drops both from the table, a closed once given back. */
    rfs_kept_rows *held = rfs_sizes_rows(c, "a", &t);
    assert_non_null(held);
    rfs_sizes_rewrites(c, 6);
    assert_false(is_open(b));
    assert_true(is_open(a));
    assert_null(rfs_sizes_rows(c, "a", &t));
    rfs_sizes_rows_done(c, held);
    assert_false(is_open(a));
    /* An answer counted before the rewrite (a stat that read the count at 5) is not kept,
     * nor after a late caller tells of 5 again: the count only moves forward. */
    int late;
    rfs_sizes_put_rows(c, "a", &t, 1, answer(1, &late), 5);
    assert_false(is_open(late));
    rfs_sizes_rewrites(c, 5);
    rfs_sizes_put_rows(c, "a", &t, 1, answer(1, &late), 5);
    assert_false(is_open(late));
    assert_null(rfs_sizes_rows(c, "a", &t));
    /* The size stays: only the answer goes. */
    int64_t size = 0;
    assert_int_equal(rfs_sizes_get(c, "a", &t, &size), 1);
    assert_int_equal(size, 1);
    /* What a reader compares with is the highest count told. */
    assert_int_equal(rfs_sizes_rewrites_seen(c), 6);
}

static void test_kept_file_bound(void **state)
{
    rfs_sizes *c = *state;
    rs_log_info t = {.exists = 1, .count = 1};
    int fd[3];
    assert_null(rfs_kept_file_new(rfs_kept_file_open(), rfs_kept_file_max() + 1));
    rfs_sizes_put_rows(c, "0", &t, 1, answer(rfs_kept_file_max(), &fd[0]), 0);
    rfs_sizes_put_rows(c, "1", &t, 1, answer(rfs_kept_file_max(), &fd[1]), 0);
    assert_true(is_open(fd[0]) && is_open(fd[1]));
    /* A third would pass the bound on all files: the older ones go, the newest stays. */
    rfs_sizes_put_rows(c, "2", &t, 1, answer(rfs_kept_file_max(), &fd[2]), 0);
    assert_false(is_open(fd[0]));
    assert_false(is_open(fd[1]));
    rfs_kept_rows *r = rfs_sizes_rows(c, "2", &t);
    assert_non_null(r);
    assert_int_equal(r->fd, fd[2]);
    rfs_sizes_rows_done(c, r);
    /* Freeing the table closes the last file. */
    sizes_teardown(state);
    *state = NULL;
    assert_false(is_open(fd[2]));
}

/* A walk visits each view once, in the same order each time: more views than the table
 * holds (262,144), the second and third walks still find many sizes kept. */
static void test_walks_past_bound(void **state)
{
    rfs_sizes *c = *state;
    enum { VIEWS = 320000 };
    rs_log_info t = {.exists = 1, .count = 1};
    char key[32];
    int found[3] = {0};
    for (int walk = 0; walk < 3; walk++)
        for (int i = 0; i < VIEWS; i++) {
            int64_t size = -1;
            snprintf(key, sizeof key, "threads/t/%d", i);
            if (rfs_sizes_get(c, key, &t, &size)) {
                assert_int_equal(size, 3 * i);
                found[walk]++;
            } else {
                rfs_sizes_put(c, key, &t, 3 * i);
            }
        }
    assert_int_equal(found[0], 0);
    /* Started over when full, the table kept none of them from one walk to the next. */
    assert_true(found[1] > VIEWS / 4);
    assert_true(found[2] > VIEWS / 4);
}

/* Documents past the bound on their bytes (64 MiB) thin the table: most stay, each whole. */
static void test_docs_past_bound(void **state)
{
    rfs_sizes *c = *state;
    enum { DOCS = 24, MIB = 1 << 20 };
    rs_log_info t = {.exists = 1, .count = 1};
    char key[32];
    char *doc = malloc(3 * MIB);
    assert_non_null(doc);
    for (int i = 0; i < DOCS; i++) {
        memset(doc, 'a' + i, 3 * MIB);
        snprintf(key, sizeof key, "doc/%d", i);
        rfs_sizes_put_doc(c, key, &t, doc, 3 * MIB);
    }
    free(doc);
    size_t kept = 0;
    for (int i = 0; i < DOCS; i++) {
        rs_buf out = RS_BUF_INIT;
        snprintf(key, sizeof key, "doc/%d", i);
        if (rfs_sizes_get_doc(c, key, &t, &out)) {
            assert_int_equal(out.len, 3 * MIB);
            assert_true(out.buf[0] == 'a' + i && out.buf[out.len - 1] == 'a' + i);
            kept += out.len;
        } else {
            assert_true(i < DOCS - 1); /* the newest always stays */
        }
        rs_buf_release(&out);
    }
    assert_true(kept <= (size_t)64 * MIB);
    /* Starting over when full kept the documents put since: 9 of these 72 MiB. */
    assert_true(kept >= (size_t)48 * MIB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kept_file_by_token, sizes_setup, sizes_teardown),
        cmocka_unit_test_setup_teardown(test_kept_file_rewrites, sizes_setup, sizes_teardown),
        cmocka_unit_test_setup_teardown(test_kept_file_bound, sizes_setup, sizes_teardown),
        cmocka_unit_test_setup_teardown(test_walks_past_bound, sizes_setup, sizes_teardown),
        cmocka_unit_test_setup_teardown(test_docs_past_bound, sizes_setup, sizes_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
