/* sqlite_changes.c — the change feed's numbers (runfs_change, schema.sql.h). Writers are
 * serialised (BEGIN IMMEDIATE), so a number taken as the highest + 1 inside a write
 * transaction commits in number order: every number a reader sees has every smaller one
 * committed before it. */
#include <errno.h>
#include <string.h>

#include "sqlite_int.h"
#include "rs_util.h"

/* The highest number given, of runfs_run's (appends) and runfs_change's (the rest). */
#define HIGHEST_CHANGE \
    "(SELECT max(m) FROM (SELECT coalesce(max(change), 0) AS m FROM runfs_change UNION ALL " \
    "SELECT coalesce(max(change), 0) FROM runfs_run))"
/* The next number, inside the statement that takes it. */
#define NEXT_CHANGE "(" HIGHEST_CHANGE " + 1)"
/* The owner of a run's rows: '' for none, NULL for several. */
#define ROWS_OWNER \
    "CASE WHEN min(coalesce(user_id, '')) = max(coalesce(user_id, '')) " \
    "THEN min(coalesce(user_id, '')) END"
/* A run that gets rows of owner excluded.owner keeps one owner only while it is the same. */
#define OWNER_MERGE \
    "owner = CASE WHEN runfs_change.deleted OR runfs_change.change = 0 OR " \
    "runfs_change.owner = excluded.owner THEN excluded.owner END"

int sq_change_next(rs_backend *b, int64_t *next, rs_err *err)
{
    int64_t top = 0;
    int rc = b->change_known ? 0 : sq_int(b, "SELECT " HIGHEST_CHANGE, NULL, NULL, &top, NULL, err);
    if (rc)
        return rc;
    *next = (b->change_known ? b->change_last : top) + 1;
    b->change_last = *next;
    b->change_known = 1;
    return 0;
}

int sq_change_touch(rs_backend *b, const char *thread_id, const char *run_id, rs_err *err)
{
    b->change_known = 0;
    /* ROWS_OWNER reads the owner of every row of the run (a table lookup each: a third of a
     * seal of a large run); the run's log, level with its rows, knows whether they have one
     * owner (not mixed), and then its first row says which. */
    int rc =
        sq_step(b, NULL, err, "change feed",
                "INSERT INTO runfs_change (thread_id, run_id, change, owner) SELECT ?1, ?2, "
                "" NEXT_CHANGE ", CASE WHEN EXISTS (SELECT 1 FROM runfs_run r JOIN "
                "runfs_thread t ON t.thread_key = r.thread_key WHERE t.thread_id = ?1 AND "
                "r.run_id = ?2 AND NOT r.mixed AND NOT t.dirty) THEN (SELECT coalesce(user_id, "
                "'') FROM run_events WHERE thread_id = ?1 AND run_id = ?2 ORDER BY seq LIMIT 1) "
                "ELSE (SELECT " ROWS_OWNER " FROM run_events WHERE thread_id = ?1 AND run_id = "
                "?2) END WHERE true ON CONFLICT (thread_id, run_id) DO UPDATE SET change = "
                "excluded.change, deleted = 0, owner = excluded.owner",
                "tt", thread_id, run_id);
    return rc < 0 ? rc : 0;
}

int sq_change_rows(rs_backend *b, int64_t above_id, int64_t upto_id, int foreign, rs_err *err)
{
    b->change_known = 0;
    int rc = sq_step(b, NULL, err, "change feed",
                     "INSERT INTO runfs_change (thread_id, run_id, change, owner, hi_id) "
                     "SELECT thread_id, run_id, " HIGHEST_CHANGE
                     " + row_number() OVER (ORDER BY thread_id, run_id), own, top "
                     "FROM (SELECT thread_id, run_id, " ROWS_OWNER " AS own, max(id) AS top FROM "
                     "run_events e WHERE id > ?1 AND id <= ?2 AND NOT (?3 AND " SQ_CANON_HAS_ROW
                     ") "
                     "GROUP BY thread_id, run_id) n "
                     "WHERE NOT EXISTS (SELECT 1 FROM runfs_change c WHERE c.thread_id = "
                     "n.thread_id AND c.run_id = n.run_id AND c.hi_id >= n.top) "
                     "ON CONFLICT (thread_id, run_id) DO UPDATE SET change = excluded.change, "
                     "deleted = 0, hi_id = excluded.hi_id, " OWNER_MERGE,
                     "iii", above_id, upto_id, (int64_t)foreign);
    return rc < 0 ? rc : 0;
}

int sq_change_settle(rs_backend *b, rs_err *err)
{
    /* A run never numbered whose rows are gone leaves nothing; the others get a number: a
     * tombstone when no row is left (its owner kept, for whom it shows), else their new
     * owner. */
    static const char *const steps[] = {
        "DELETE FROM runfs_change WHERE thread_id = ?1 AND run_id = ?2 AND change = 0 AND NOT "
        "EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = ?1 AND e.run_id = ?2)",
        "UPDATE runfs_change SET pending = 0, change = " NEXT_CHANGE ", deleted = NOT EXISTS "
        "(SELECT 1 FROM run_events e WHERE e.thread_id = ?1 AND e.run_id = ?2), hi_id = coalesce("
        "(SELECT max(id) FROM run_events e WHERE e.thread_id = ?1 AND e.run_id = ?2), 0), owner = CASE "
        "WHEN EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = ?1 AND e.run_id = ?2) THEN "
        "(SELECT " ROWS_OWNER " FROM run_events WHERE thread_id = ?1 AND run_id = ?2) ELSE "
        "owner END WHERE thread_id = ?1 AND run_id = ?2",
    };
    for (;;) {
        sqlite3_stmt *st;
        int rc = sq_step(b, &st, err, "change feed",
                         "SELECT thread_id, run_id FROM runfs_change WHERE pending LIMIT 1", "");
        if (rc <= 0)
            return rc;
        b->change_known = 0;
        char thread_id[RS_ID_MAX + 1], run_id[RS_ID_MAX + 1];
        const char *tv = (const char *)sqlite3_column_text(st, 0);
        const char *rv = (const char *)sqlite3_column_text(st, 1);
        int fits = tv && rv && strlen(tv) < sizeof thread_id && strlen(rv) < sizeof run_id;
        if (fits) {
            memcpy(thread_id, tv, strlen(tv) + 1);
            memcpy(run_id, rv, strlen(rv) + 1);
        }
        sq_stmt_done(b, st);
        if (!fits) /* not an id runfs could show: the row is dropped from the feed */
            rc = sq_step(b, NULL, err, "change feed",
                         "DELETE FROM runfs_change WHERE pending AND (length(thread_id) > 64 "
                         "OR length(run_id) > 64)",
                         "");
        for (size_t i = 0; fits && rc >= 0 && i < sizeof steps / sizeof *steps; i++)
            rc = sq_step(b, NULL, err, "change feed", steps[i], "tt", thread_id, run_id);
        if (rc < 0)
            return rc;
    }
}

int sq_change_pending(rs_backend *b, int *pending, rs_err *err)
{
    int64_t n = 0;
    int rc = sq_int(b, "SELECT EXISTS (SELECT 1 FROM runfs_change WHERE pending)", NULL, NULL, &n,
                    NULL, err);
    *pending = n > 0;
    return rc;
}

/* The runs a store held before its feed began, numbered once (at the first read); runs
 * runfs appended to since have their number already. */
static int changes_init(rs_backend *b, rs_err *err)
{
    int64_t done = 0;
    int rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'changes_init'", NULL, NULL, &done,
                    NULL, err);
    if (rc || done)
        return rc;
    b->change_known = 0;
    rc = sq_step(b, NULL, err, "change feed",
                 "INSERT OR IGNORE INTO runfs_change (thread_id, run_id, change, owner, hi_id) "
                 "SELECT thread_id, run_id, " HIGHEST_CHANGE
                 " + row_number() OVER (ORDER BY thread_id, run_id), own, top FROM (SELECT "
                 "thread_id, run_id, " ROWS_OWNER " AS own, max(id) AS top FROM run_events "
                 "GROUP BY thread_id, run_id) g WHERE NOT EXISTS (SELECT 1 FROM runfs_run r JOIN "
                 "runfs_thread t ON t.thread_key = r.thread_key WHERE t.thread_id = g.thread_id "
                 "AND r.run_id = g.run_id AND r.change > 0)",
                 "");
    if (rc >= 0)
        rc = sq_step(b, NULL, err, "change feed",
                     "INSERT OR REPLACE INTO runfs_meta (key, value) VALUES ('changes_init', 1)",
                     "");
    return rc < 0 ? rc : 0;
}

int sq_changes_sync(rs_backend *b, rs_err *err)
{
    int needed = 0;
    int64_t done = 0;
    int rc = sq_needs_catch_up(b, &needed, err);
    if (!rc && !needed)
        rc = sq_int(b, "SELECT value FROM runfs_meta WHERE key = 'changes_init'", NULL, NULL, &done,
                    NULL, err);
    if (rc || (!needed && done))
        return rc;
    if ((rc = sq_begin_quiet(b, err)))
        return rc;
    if ((rc = sq_catch_up(b, err)) || (rc = changes_init(b, err))) {
        sq_rollback(b);
        return rc;
    }
    return sq_commit(b, err);
}

/* ?1 after, ?2 thread (NULL: all), ?3 user (NULL: every owner), ?4 a page's limit. A run
 * is an owner's when its rows are, or (rows of several) some of them are. */
#define CHANGES_BEST \
    "WITH cand(thread_id, run_id, change, deleted, owner) AS (SELECT t.thread_id, r.run_id, " \
    "r.change, 0, NULL FROM main.runfs_run r JOIN main.runfs_thread t ON t.thread_key = " \
    "r.thread_key WHERE r.change > ?1 AND (?2 IS NULL OR t.thread_id = ?2) UNION ALL SELECT " \
    "thread_id, run_id, change, deleted, owner FROM main.runfs_change WHERE change > ?1 AND " \
    "(?2 IS NULL OR thread_id = ?2)), " \
    "best AS (SELECT thread_id, run_id, max(change) AS change FROM cand GROUP BY thread_id, " \
    "run_id) "
#define CHANGES_OWNED \
    "FROM best JOIN cand c ON c.thread_id = best.thread_id AND c.run_id = best.run_id AND " \
    "c.change = best.change WHERE ?3 IS NULL OR c.owner = ?3 OR (c.owner IS NULL AND NOT " \
    "c.deleted AND EXISTS (SELECT 1 FROM run_events e WHERE e.thread_id = c.thread_id AND " \
    "e.run_id = c.run_id AND e.user_id = ?3)) "
#define CHANGES_COLS(expired) \
    "SELECT c.change, c.thread_id, c.run_id, c.deleted, " \
    "(SELECT count(*) FROM run_events e WHERE e.thread_id = c.thread_id AND e.run_id = " \
    "c.run_id AND (?3 IS NULL OR e.user_id = ?3)), " \
    "(SELECT max(e.seq) FROM run_events e WHERE e.thread_id = c.thread_id AND e.run_id = " \
    "c.run_id AND (?3 IS NULL OR e.user_id = ?3)), " \
    "(SELECT e.created_at FROM run_events e WHERE e.thread_id = c.thread_id AND e.run_id = " \
    "c.run_id AND (?3 IS NULL OR e.user_id = ?3) ORDER BY e.seq DESC LIMIT 1), " \
    "t.content, t.event_metadata, " \
    "(SELECT s.state FROM main.runfs_seal s WHERE s.thread_id = c.thread_id AND s.run_id = " \
    "c.run_id AND s.owner = coalesce(?3, '')), " expired " "
#define CHANGES_TERMINAL \
    "LEFT JOIN run_events t ON t.id = (SELECT e.id FROM run_events e WHERE e.thread_id = " \
    "c.thread_id AND e.run_id = c.run_id AND e.event_type = 'run.terminal' AND (?3 IS NULL " \
    "OR e.user_id = ?3) ORDER BY e.seq LIMIT 1) "
#define CHANGES_SQL(expired) \
    CHANGES_BEST CHANGES_COLS(expired) "FROM (SELECT c.thread_id, c.run_id, c.change, " \
                                       "c.deleted " CHANGES_OWNED ") c " CHANGES_TERMINAL \
                                       "ORDER BY c.change"
/* A page: the runs up to the limit-th number, each number's runs together (rank), the
 * counts and the terminal read for those only. */
#define CHANGES_PAGE_SQL(expired) \
    CHANGES_BEST ", pick AS (SELECT c.thread_id, c.run_id, c.change, c.deleted, rank() OVER " \
                 "(ORDER BY c.change) AS rk " CHANGES_OWNED \
                 ") " CHANGES_COLS(expired) "FROM pick c " CHANGES_TERMINAL \
                                            "WHERE c.rk <= ?4 ORDER BY c.change"
/* An expired tombstone is one whose number retention kept (runfs_expired, absent from
 * a store no expiry touched). */
#define CHANGES_EXPIRED \
    "(c.deleted AND EXISTS (SELECT 1 FROM main.runfs_expired x WHERE x.thread_id = " \
    "c.thread_id AND x.run_id = c.run_id AND x.change = c.change))"

int sq_changes(rs_backend *b, int64_t after, const char *user, const char *thread_id,
               rs_change_page *page, rs_change_row_fn fn, void *ctx, rs_err *err)
{
    /* The table comes with runfs_meta, which says whether the runs were numbered. */
    int64_t has = 0;
    int rc = sq_int(b, "SELECT count(*) FROM main.sqlite_master WHERE name = 'runfs_change'", NULL,
                    NULL, &has, NULL, err);
    if (!rc && has)
        rc = sq_int(b, "SELECT value FROM main.runfs_meta WHERE key = 'changes_init'", NULL, NULL,
                    &has, NULL, err);
    if (rc)
        return rc;
    if (!has)
        return rs_err_set(err, -ENODATA, RS_FEED_UNNUMBERED);
    static const char *const sqls[2][2] = {
        {CHANGES_SQL("0"), CHANGES_SQL(CHANGES_EXPIRED)},
        {CHANGES_PAGE_SQL("0"), CHANGES_PAGE_SQL(CHANGES_EXPIRED)},
    };
    int expiry = sqlite3_table_column_metadata(b->db, NULL, "runfs_expired", "change", NULL, NULL,
                                               NULL, NULL, NULL) == SQLITE_OK;
    const char *sql = sqls[page != NULL][expiry];
    sqlite3_stmt *st;
    if ((rc = sq_stmt_get(b, sql, &st, err)))
        return rc;
    sqlite3_bind_int64(st, 1, after);
    sq_bind_text(st, 2, thread_id);
    sq_bind_text(st, 3, user);
    if (page)
        sqlite3_bind_int64(st, 4, page->limit);
    int src;
    int64_t read = 0;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        rs_change_row r = {
            .change = sqlite3_column_int64(st, 0),
            .thread_id = (const char *)sqlite3_column_text(st, 1),
            .run_id = (const char *)sqlite3_column_text(st, 2),
            .deleted = sqlite3_column_int(st, 3),
            .expired = sqlite3_column_int(st, 10),
            .events = sqlite3_column_int64(st, 4),
            .upper_seq = sqlite3_column_int64(st, 5),
            .created_at = (const char *)sqlite3_column_text(st, 6),
            .seal = (const char *)sqlite3_column_text(st, 9),
        };
        read++;
        if (page)
            page->last = r.change;
        /* In bytes: an id holding a NUL reads as its part before it. */
        r.odd = !r.thread_id || !r.run_id ||
                !rs_id_valid_n(r.thread_id, (size_t)sqlite3_column_bytes(st, 1)) ||
                !rs_id_valid_n(r.run_id, (size_t)sqlite3_column_bytes(st, 2));
        if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
            r.terminal.content = (const char *)sqlite3_column_text(st, 7);
            r.terminal.content_len = (size_t)sqlite3_column_bytes(st, 7);
            r.terminal.metadata = (const char *)sqlite3_column_text(st, 8);
            r.terminal.metadata_len = (size_t)sqlite3_column_bytes(st, 8);
        }
        /* A row written with ids runfs would refuse is not shown (its paths do not exist). */
        if (!r.thread_id || !r.run_id || !rs_id_valid(r.thread_id) || !rs_id_valid(r.run_id) ||
            (!r.deleted && r.events == 0))
            continue;
        if ((rc = fn(ctx, &r)))
            break;
    }
    if (!rc && src != SQLITE_DONE)
        rc = sq_fail(b, src, err, "change feed");
    if (page)
        page->more = read >= page->limit;
    sq_stmt_done(b, st);
    return rc;
}

int sq_changes_head(rs_backend *b, int64_t *head, rs_err *err)
{
    int64_t numbered = 0;
    int rc = sq_int(b, "SELECT value FROM main.runfs_meta WHERE key = 'changes_init'", NULL, NULL,
                    &numbered, NULL, err);
    if (!rc && numbered != 1)
        rc = rs_err_set(err, -ENODATA, RS_FEED_UNNUMBERED);
    return rc ? rc : sq_int(b, "SELECT " HIGHEST_CHANGE, NULL, NULL, head, NULL, err);
}
