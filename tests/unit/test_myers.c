/* test_myers.c — views/myers.c against a reference written here: on random sequences the
 * lines it keeps are a common subsequence of both, and (below diff's cost bound) a longest
 * one, as the O(nm) dynamic programme counts it; past the bound it still keeps a common
 * subsequence, and equal or empty sides cost nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "myers.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static unsigned next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

/* The length of a longest common subsequence, by the textbook table. */
static size_t lcs(const int *a, size_t na, const int *b, size_t nb)
{
    size_t *row = calloc(nb + 1, sizeof *row), *prev = calloc(nb + 1, sizeof *prev);
    assert_non_null(row);
    assert_non_null(prev);
    for (size_t i = 1; i <= na; i++) {
        for (size_t j = 1; j <= nb; j++)
            row[j] = a[i - 1] == b[j - 1]     ? prev[j - 1] + 1
                     : prev[j] > row[j - 1] ? prev[j]
                                            : row[j - 1];
        size_t *t = prev;
        prev = row;
        row = t;
    }
    size_t n = prev[nb];
    free(row);
    free(prev);
    return n;
}

/* The kept lines of a and b are the same sequence: their number. */
static size_t kept(const int *a, size_t na, const unsigned char *ac, const int *b, size_t nb,
                   const unsigned char *bc)
{
    size_t i = 0, j = 0, n = 0;
    for (;;) {
        while (i < na && ac[i])
            i++;
        while (j < nb && bc[j])
            j++;
        if (i == na || j == nb)
            break;
        assert_int_equal(a[i], b[j]);
        i++, j++, n++;
    }
    assert_int_equal(i, na);
    assert_int_equal(j, nb);
    return n;
}

static void check(const int *a, size_t na, const int *b, size_t nb, int minimal)
{
    unsigned char *ac = calloc(na + 1, 1), *bc = calloc(nb + 1, 1);
    assert_non_null(ac);
    assert_non_null(bc);
    assert_int_equal(rfs_myers(a, na, b, nb, ac, bc), 0);
    size_t n = kept(a, na, ac, b, nb, bc);
    if (minimal)
        assert_int_equal(n, lcs(a, na, b, nb));
    free(ac);
    free(bc);
}

static void test_random_small(void **state)
{
    (void)state;
    int a[80], b[80];
    for (int round = 0; round < 3000; round++) {
        size_t na = next_rand() % 80, nb = next_rand() % 80;
        int alphabet = 1 + (int)(next_rand() % 6);
        for (size_t i = 0; i < na; i++)
            a[i] = (int)(next_rand() % (unsigned)alphabet);
        for (size_t i = 0; i < nb; i++)
            b[i] = (int)(next_rand() % (unsigned)alphabet);
        check(a, na, b, nb, 1);
    }
}

static void test_edits_of_one_sequence(void **state)
{
    (void)state;
    enum { N = 3000 };
    static int a[N], b[N + 50];
    for (int round = 0; round < 20; round++) {
        for (size_t i = 0; i < N; i++)
            a[i] = (int)(next_rand() % 500);
        size_t nb = 0;
        for (size_t i = 0; i < N; i++) {
            unsigned r = next_rand() % 200;
            if (r == 0)
                continue; /* deleted */
            if (r == 1 && nb < N + 49)
                b[nb++] = 1000 + (int)i; /* inserted */
            b[nb++] = r == 2 ? 2000 + (int)i : a[i];
        }
        check(a, N, b, nb, 1);
    }
}

static void test_past_the_cost_bound(void **state)
{
    (void)state;
    enum { N = 20000 };
    int *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t i = 0; i < N; i++) {
        a[i] = (int)(next_rand() % 50);
        b[i] = (int)(next_rand() % 50);
    }
    check(a, N, b, N, 0);
    free(a);
    free(b);
}

static void test_equal_and_empty(void **state)
{
    (void)state;
    int a[] = {1, 2, 3, 4};
    unsigned char ac[4] = {0}, bc[4] = {0};
    assert_int_equal(rfs_myers(a, 4, a, 4, ac, bc), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(ac[i] + bc[i], 0);
    assert_int_equal(rfs_myers(a, 4, NULL, 0, ac, NULL), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(ac[i], 1);
    assert_int_equal(rfs_myers(NULL, 0, NULL, 0, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_small),
        cmocka_unit_test(test_edits_of_one_sequence),
        cmocka_unit_test(test_past_the_cost_bound),
        cmocka_unit_test(test_equal_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
