/* test_map.c — rs_hash against FNV-1a's published vectors, and rs_map against a plain array
 * that says which keys are in: adds, finds, removals (in any order, with every key of a
 * colliding type in one probe run), iteration, clear and release. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runstore.h"
#include "rs_util.h"

static void test_hash_vectors(void **state)
{
    (void)state;
    /* FNV-1a 64 of "", "a" and "foobar" (the FNV authors' test suite) */
    assert_true(rs_hash(RS_HASH_INIT, "", 0) == 0xcbf29ce484222325ULL);
    assert_true(rs_hash(RS_HASH_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(rs_hash(RS_HASH_INIT, "foobar", 6) == 0x85944171f73967e8ULL);
    /* continuing a hash is hashing the concatenation */
    assert_true(rs_hash(rs_hash(RS_HASH_INIT, "foo", 3), "bar", 3) ==
                rs_hash(RS_HASH_INIT, "foobar", 6));
}

/* Entries are keys: numbers 1..N. spread 0: their own hash; else only key % spread, so that
 * keys collide in long probe runs. */
typedef struct {
    uint64_t spread;
} num_ctx;

static uint64_t num_hash(const void *ctx, const void *key)
{
    const num_ctx *c = ctx;
    uint64_t k = *(const uint64_t *)key;
    return c->spread ? k % c->spread : rs_hash(RS_HASH_INIT, &k, sizeof k);
}

static uint64_t num_entry_hash(const void *ctx, uintptr_t e)
{
    uint64_t k = e;
    return num_hash(ctx, &k);
}

static int num_matches(const void *ctx, uintptr_t e, const void *key)
{
    (void)ctx;
    return e == *(const uint64_t *)key;
}

static const rs_map_type nums = {num_hash, num_entry_hash, num_matches};

enum { N = 3000 };

/* Every key 1..N is found exactly when in[] says it is in, and the count and the iteration
 * agree with in[]. */
static void check_against(const rs_map *m, const unsigned char *in)
{
    size_t want = 0;
    for (uint64_t k = 1; k <= N; k++) {
        uintptr_t got = rs_map_find(m, &k);
        assert_true(in[k] ? got == k : got == 0);
        want += in[k];
    }
    assert_int_equal(m->count, want);
    size_t pos = 0, seen = 0;
    for (uintptr_t e; (e = rs_map_next(m, &pos));) {
        assert_true(e >= 1 && e <= N && in[e]);
        seen++;
    }
    assert_int_equal(seen, want);
}

static void run_with(uint64_t spread)
{
    num_ctx ctx = {spread};
    rs_map m = RS_MAP_INIT(&nums, &ctx);
    unsigned char in[N + 1] = {0};
    uint64_t missing = N + 1;
    assert_true(rs_map_find(&m, &missing) == 0); /* empty: no slots yet */
    assert_true(rs_map_remove(&m, &missing) == 0);
    for (uint64_t k = 1; k <= N; k++) {
        assert_int_equal(rs_map_add(&m, k), 0);
        in[k] = 1;
    }
    assert_true(m.n_slots >= 2 * N && (m.n_slots & (m.n_slots - 1)) == 0);
    check_against(&m, in);
    /* remove in a scattered order (a fixed LCG), checking as it goes */
    uint64_t x = 12345;
    for (int i = 0; i < N / 2; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t k = 1 + (x >> 33) % N;
        uintptr_t gone = rs_map_remove(&m, &k);
        assert_true(in[k] ? gone == k : gone == 0);
        in[k] = 0;
        if (i % 97 == 0)
            check_against(&m, in);
    }
    check_against(&m, in);
    /* add back what went, then all out */
    for (uint64_t k = 1; k <= N; k++)
        if (!in[k]) {
            assert_int_equal(rs_map_add(&m, k), 0);
            in[k] = 1;
        }
    check_against(&m, in);
    for (uint64_t k = N; k >= 1; k--) {
        assert_true(rs_map_remove(&m, &k) == k);
        in[k] = 0;
    }
    check_against(&m, in);
    /* clear keeps the slots, release frees them */
    for (uint64_t k = 1; k <= 10; k++)
        assert_int_equal(rs_map_add(&m, k), 0);
    size_t slots = m.n_slots;
    rs_map_clear(&m);
    assert_int_equal(m.count, 0);
    assert_int_equal(m.n_slots, slots);
    memset(in, 0, sizeof in);
    check_against(&m, in);
    rs_map_release(&m);
    assert_null(m.slots);
    assert_int_equal(m.n_slots, 0);
}

static void test_map_spread(void **state)
{
    (void)state;
    run_with(0);
}

static void test_map_collisions(void **state)
{
    (void)state;
    run_with(7); /* seven home slots for 3000 keys: runs that wrap around the table */
}

static void test_map_reserve(void **state)
{
    (void)state;
    num_ctx ctx = {0};
    rs_map m = RS_MAP_INIT(&nums, &ctx);
    assert_int_equal(rs_map_reserve(&m, 1000), 0);
    size_t slots = m.n_slots;
    assert_true(slots >= 2000);
    for (uint64_t k = 1; k <= 1000; k++)
        assert_int_equal(rs_map_add(&m, k), 0);
    assert_int_equal(m.n_slots, slots); /* no growth after the reserve */
    rs_map_release(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_vectors),
        cmocka_unit_test(test_map_spread),
        cmocka_unit_test(test_map_collisions),
        cmocka_unit_test(test_map_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
