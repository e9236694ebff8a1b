/* test_fs_tables.c — the daemon's bookkeeping tables without a mount: the attributes the
 * kernel keeps (fs/attrs.c: what a change must drop, by thread and by expiry), the
 * listings kept between requests (fs/listings.c: found by number, freed at their end, the
 * unused ones bounded) and the inode table (fs/itable.c: a thread's walk visits exactly
 * its referenced nodes). References are plain arrays of what each test added. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attrs.h"
#include "itable.h"
#include "listings.h"

#define SEC 1000000000LL

typedef struct taken {
    uint64_t ino[256];
    size_t n;
} taken;

static void take_one(void *ctx, uint64_t ino)
{
    taken *t = ctx;
    if (t->n < 256)
        t->ino[t->n++] = ino;
}

static int has(const taken *t, uint64_t ino)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->ino[i] == ino)
            return 1;
    return 0;
}

static void test_attrs_by_thread(void **state)
{
    (void)state;
    rfs_attrs *a;
    assert_int_equal(rfs_attrs_new(&a), 0);
    int64_t now = 100 * SEC;
    /* Three of thread "a" (one twice), two of "b": more than the ring's first size too. */
    for (int round = 0; round < 100; round++)
        assert_int_equal(rfs_attrs_add(a, 1000 + (uint64_t)round, "filler", now), 0);
    assert_int_equal(rfs_attrs_add(a, 11, "a", now), 0);
    assert_int_equal(rfs_attrs_add(a, 21, "b", now), 0);
    assert_int_equal(rfs_attrs_add(a, 12, "a", now), 0);
    assert_int_equal(rfs_attrs_add(a, 11, "a", now), 0);
    assert_int_equal(rfs_attrs_add(a, 22, "b", now), 0);
    /* Half a second on: long enough for the kernel to hold what it was given. */
    int64_t later = now + SEC / 2;
    taken t = {0};
    rfs_attrs_take(a, "a", later, take_one, &t);
    assert_true(has(&t, 11) && has(&t, 12));
    assert_false(has(&t, 21) || has(&t, 22) || has(&t, 1000));
    /* Taken once: a second change of "a" finds nothing of it in force. */
    taken again = {0};
    rfs_attrs_take(a, "a", later, take_one, &again);
    assert_int_equal(again.n, 0);
    /* Another process's change takes every one still in force, "b" included. */
    taken all = {0};
    rfs_attrs_take(a, NULL, later, take_one, &all);
    assert_true(has(&all, 21) && has(&all, 22) && has(&all, 1099));
    assert_false(has(&all, 11));
    rfs_attrs_free(a);
}

/* A record taken moments after it was handed out may have been told to a kernel that had
 * no inode for it yet: it is told again, at every take and settle, until it settles. */
static void test_attrs_unsettled(void **state)
{
    (void)state;
    rfs_attrs *a;
    assert_int_equal(rfs_attrs_new(&a), 0);
    int64_t now = 100 * SEC;
    assert_int_equal(rfs_attrs_add(a, 31, "u", now), 0);
    assert_int_equal(rfs_attrs_add(a, 32, "u", now - SEC / 2), 0);
    taken first = {0};
    rfs_attrs_take(a, "u", now, take_one, &first);
    assert_true(has(&first, 31) && has(&first, 32));
    /* 32 was handed out half a second before: settled, gone. 31 stays. */
    taken again = {0};
    rfs_attrs_take(a, "u", now + SEC / 100, take_one, &again);
    assert_true(has(&again, 31));
    assert_false(has(&again, 32));
    taken settle = {0};
    rfs_attrs_settle(a, now + SEC / 50, take_one, &settle);
    assert_int_equal(settle.n, 1);
    assert_true(has(&settle, 31));
    /* Past the settling time, told once more and gone. */
    taken last = {0};
    rfs_attrs_settle(a, now + SEC, take_one, &last);
    assert_true(has(&last, 31));
    taken none = {0};
    rfs_attrs_settle(a, now + SEC, take_one, &none);
    rfs_attrs_take(a, NULL, now + SEC, take_one, &none);
    assert_int_equal(none.n, 0);
    rfs_attrs_free(a);
}

static void test_attrs_expire(void **state)
{
    (void)state;
    rfs_attrs *a;
    assert_int_equal(rfs_attrs_new(&a), 0);
    int64_t now = 100 * SEC;
    assert_int_equal(rfs_attrs_add(a, 7, "t", now), 0);
    assert_int_equal(rfs_attrs_add(a, 8, "t", now + 3 * SEC), 0);
    /* Past its timeout and the margin the kernel's copy of 7 has expired; 8's has not. */
    taken t = {0};
    rfs_attrs_take(a, "t", now + 3 * SEC, take_one, &t);
    assert_false(has(&t, 7));
    assert_true(has(&t, 8));
    /* Within its timeout a record stays in force. */
    assert_int_equal(rfs_attrs_add(a, 9, "t", now + 10 * SEC), 0);
    taken u = {0};
    rfs_attrs_take(a, NULL, now + 10 * SEC + (int64_t)(RFS_FILE_TIMEOUT * SEC) - 1, take_one, &u);
    assert_true(has(&u, 9));
    rfs_attrs_free(a);
}

/* A listing here is a counter of frees. */
static int freed[128];

static void free_listing(void *listing)
{
    freed[*(int *)listing]++;
}

static void test_listings(void **state)
{
    (void)state;
    memset(freed, 0, sizeof freed);
    static int names[128];
    for (int i = 0; i < 128; i++)
        names[i] = i;
    rfs_listings *l;
    assert_int_equal(rfs_listings_new(&l, free_listing), 0);
    uint64_t id0, id1;
    assert_int_equal(rfs_listings_put(l, 5, &names[0], 10, &id0), 0);
    rfs_listings_release(l, &names[0], 0);
    assert_int_equal(rfs_listings_put(l, 6, &names[1], 10, &id1), 0);
    rfs_listings_release(l, &names[1], 0);
    assert_true(id0 != id1 && id0 > 0 && id1 > 0 && id0 < (1ULL << 31));
    /* Found by its number and directory only. */
    assert_ptr_equal(rfs_listings_get(l, 5, id0), &names[0]);
    assert_null(rfs_listings_get(l, 6, id0));
    assert_null(rfs_listings_get(l, 5, id0 + 1000));
    /* Read to its end while held twice: freed when the last user gives it back. */
    assert_ptr_equal(rfs_listings_get(l, 5, id0), &names[0]);
    rfs_listings_release(l, &names[0], 1);
    assert_int_equal(freed[0], 0);
    rfs_listings_release(l, &names[0], 0);
    assert_int_equal(freed[0], 1);
    assert_null(rfs_listings_get(l, 5, id0));
    /* Readers that stopped halfway: past the bound, the oldest unused go first, never the
     * one used last. */
    uint64_t id;
    for (int i = 2; i < 100; i++) {
        assert_int_equal(rfs_listings_put(l, 100 + (uint64_t)i, &names[i], 1, &id), 0);
        rfs_listings_release(l, &names[i], 0);
    }
    int kept = 0;
    for (int i = 1; i < 100; i++)
        kept += freed[i] == 0;
    assert_in_range(kept, 2, 33);
    assert_int_equal(freed[99], 0);
    assert_int_equal(freed[1], 1); /* the oldest */
    /* A huge unused listing goes once another is used after it. */
    assert_int_equal(rfs_listings_put(l, 200, &names[100], 1 << 20, &id), 0);
    rfs_listings_release(l, &names[100], 0);
    assert_int_equal(freed[100], 0);
    assert_int_equal(rfs_listings_put(l, 201, &names[101], 1, &id), 0);
    rfs_listings_release(l, &names[101], 0);
    assert_int_equal(freed[100], 1);
    rfs_listings_free(l);
    for (int i = 0; i < 102; i++)
        assert_int_equal(freed[i], 1);
}

typedef struct walked {
    uint64_t ino[512];
    size_t n;
} walked;

static void walk_one(void *ctx, uint64_t ino, const rfs_node *n, int64_t size)
{
    (void)n;
    (void)size;
    walked *w = ctx;
    if (w->n < 512)
        w->ino[w->n++] = ino;
}

static int walked_has(const walked *w, uint64_t ino)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->ino[i] == ino)
            return 1;
    return 0;
}

/* Nodes of three threads, looked up, some forgotten (first, middle and last of a thread's
 * list, and a whole thread) and looked up again: a thread's walk returns exactly the
 * referenced nodes of that thread and kind, the whole walk every one, each once. */
static void test_itable_threads(void **state)
{
    (void)state;
    rfs_itable *t;
    assert_int_equal(rfs_itable_new(&t), 0);
    enum { PER = 40 };
    static const char *const ids[] = {"ta", "tb", "tc"};
    uint64_t ino[3][PER];
    int live[3][PER];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < PER; i++) {
            rfs_node n = {.kind = i % 2 ? RFS_R_EVENTS : RFS_RUN, .num = i};
            strcpy(n.thread_id, ids[k]);
            strcpy(n.run_id, "r");
            assert_int_equal(rfs_itable_ref(t, &n, &ino[k][i]), 0);
            live[k][i] = 1;
        }
    rfs_node root_child = {.kind = RFS_THREADS};
    uint64_t threads_ino;
    assert_int_equal(rfs_itable_ref(t, &root_child, &threads_ino), 0);
    /* A node looked up twice stays after one forget. */
    rfs_node again = {.kind = RFS_RUN, .num = 2};
    strcpy(again.thread_id, "ta");
    strcpy(again.run_id, "r");
    uint64_t same;
    assert_int_equal(rfs_itable_ref(t, &again, &same), 0);
    assert_int_equal(same, ino[0][2]);
    rfs_itable_forget(t, ino[0][2], 1);
    static const int gone[] = {0, 7, 20, PER - 1};
    for (size_t g = 0; g < sizeof gone / sizeof gone[0]; g++) {
        rfs_itable_forget(t, ino[0][gone[g]], 1);
        live[0][gone[g]] = 0;
    }
    for (int i = 0; i < PER; i++) {
        rfs_itable_forget(t, ino[1][i], 1);
        live[1][i] = 0;
    }
    /* tb comes back with one node. */
    rfs_node back = {.kind = RFS_R_EVENTS, .num = 5};
    strcpy(back.thread_id, "tb");
    strcpy(back.run_id, "r");
    assert_int_equal(rfs_itable_ref(t, &back, &ino[1][5]), 0);
    live[1][5] = 1;
    rfs_kinds both = RFS_KIND(RFS_RUN) | RFS_KIND(RFS_R_EVENTS);
    size_t total = 0;
    for (int k = 0; k < 3; k++) {
        walked w = {0}, logs = {0};
        rfs_itable_each(t, ids[k], both, walk_one, &w);
        rfs_itable_each(t, ids[k], RFS_KIND(RFS_R_EVENTS), walk_one, &logs);
        size_t want = 0, want_logs = 0;
        for (int i = 0; i < PER; i++) {
            assert_int_equal(walked_has(&w, ino[k][i]), live[k][i]);
            assert_int_equal(walked_has(&logs, ino[k][i]), live[k][i] && i % 2);
            want += (size_t)live[k][i];
            want_logs += (size_t)(live[k][i] && i % 2);
        }
        assert_int_equal(w.n, want);
        assert_int_equal(logs.n, want_logs);
        total += want;
    }
    walked none = {0}, all = {0};
    rfs_itable_each(t, "td", both, walk_one, &none);
    assert_int_equal(none.n, 0);
    rfs_itable_each(t, NULL, both | RFS_KIND(RFS_THREADS), walk_one, &all);
    assert_int_equal(all.n, total + 1);
    assert_true(walked_has(&all, threads_ino));
    /* A forgotten node is stale; a live one answers. */
    rfs_node out;
    assert_int_equal(rfs_itable_get(t, ino[0][7], &out), -ENOENT);
    assert_int_equal(rfs_itable_get(t, ino[2][7], &out), 0);
    assert_string_equal(out.thread_id, "tc");
    rfs_itable_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attrs_by_thread),
        cmocka_unit_test(test_attrs_unsettled),
        cmocka_unit_test(test_attrs_expire),
        cmocka_unit_test(test_listings),
        cmocka_unit_test(test_itable_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
