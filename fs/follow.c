/* follow.c — live followers of follow.jsonl: a read returns what is there, else parks until
 * a commit feeds it (answered from the hub, never by polling the database per follower);
 * the run's feed ends after run.terminal, any feed once its reader waited --follow-timeout
 * for a new event; poll() wakes when data is ready; an interrupt answers a parked read at
 * once. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "follow.h"
#include "rs_util.h"

/* ---- followers ----
 *
 * A follower fetches the rows of its thread or run after the last seq it holds (seq order, so
 * nothing is delivered twice or skipped) into `ahead`, the fetched but undelivered bytes, and
 * hands them out to reads. Whoever fetches (a read, a poll, or the hub) holds f->lock; what
 * waits (f->req, f->ph) is under the hub lock. Lock order: f->lock, then the hub lock; the hub
 * takes followers' locks only while not holding its own.
 *
 * No follower polls the store. A follower whose last fetch reached the end of the rows
 * (caught_up) parks without a query until the hub marks it dirty: every commit reaches the
 * hub (rfs_hub_committed, or rs_store_foreign_version for other processes), and the hub
 * marks every follower of the log it touched whose last seq lies behind the log's. The hub
 * then fetches once for all waiting followers at the same position and hands each the same
 * bytes. A read parks before it fetches, so a commit its query missed finds it parked or
 * dirty: no lost wake-up.
 *
 * Release may come the moment a read is answered, while the thread that answered it still
 * holds f->lock and trims f->ahead; so every thread that touches a follower (a read, a poll,
 * a hub round) counts itself in f->users under the hub lock first, and release unlinks the
 * follower, marks it closing and waits for users to reach 0 before it is freed.
 *
 * Another writer may change history below a follower's position: DeerFlow deletes a run and
 * gives its next row a seq the follower already passed (its MAX(seq) + 1), or deletes the
 * run being followed. A follower counts the rows it fetched; when the hub sees a foreign
 * change that leaves the log short of them (fewer rows up to its seq, a lower last seq, the
 * log gone), the feed hands out what it holds, then one line saying the history changed
 * under it (HISTORY_LINE), then EOF: the reader reads events.jsonl again. Rows replaced by as
 * many others (a run deleted and another written at its seqs, in one transaction or faster
 * than a tick) leave the counts as they were: a follower also keeps a digest of the lines it
 * fetched, and once rows were changed in place or deleted anywhere (rs_store_rewrites moved
 * since it last looked) reads its rows again and compares.
 *
 * --follow-timeout is a budget of waiting, not a clock from open: it runs only while a reader
 * is parked with nothing to hand it (everything fetched was delivered and the store had
 * nothing new), so a slow reader, or one that opens and reads much later, gets the whole
 * backlog. A thread's or run's feed spends the budget over all its waits (a feed of a thread
 * that never ends still ends); the change feed's is whole again at each change, as "ends after
 * --follow-timeout without a change" says. */

#define PEEK_BYTES (64 * 1024)  /* what a poll fetches to learn the feed is readable */
#define AHEAD_MAX (1024 * 1024) /* a follower's undelivered bytes, beyond one line */

static const char TERMINAL[] = "run.terminal";
/* The last line of a feed whose history changed under it (README, "Following"). */
#define HISTORY_LINE \
    "{\"event_type\":\"runfs.history_changed\",\"thread_id\":\"%s\",\"run_id\":%s%s%s," \
    "\"after_seq\":%lld,\"deleted\":%s,\"reason\":\"%s\"}\n"

/* A follow.jsonl reader, the state of its file handle. */
struct rfs_follow {
    rfs_mount *m;
    const rfs_node *node; /* the handle's: it outlives the follower */
    char *user;           /* NULL: every owner */
    /* Under lock, held by whoever fills the feed (a read, a poll or the hub): */
    pthread_mutex_t lock;
    int64_t waited_ns; /* the budget spent in waits that ended */
    int64_t wait_from; /* CLOCK_MONOTONIC start of the present wait, or 0 */
    rs_buf ahead;      /* fetched, not yet delivered */
    int64_t scan_seq;  /* seq of the last row fetched */
    int caught_up;     /* the last fetch reached the end of the rows */
    int ended;         /* run.terminal (or HISTORY_LINE) fetched: nothing after it */
    int64_t rows;      /* rows fetched */
    uint64_t digest;   /* of the lines fetched (row_digest) */
    /* Under the hub lock: */
    int64_t seen_seq;    /* scan_seq as the hub may trust it */
    int64_t seen_rows;   /* rows as the hub may trust it */
    int check;           /* a foreign change came: history_check at the next caught-up fetch */
    int64_t want_seq;    /* the log's last seq when the hub marked it dirty */
    int64_t rewrites;    /* rs_store_rewrites when its rows were last known whole; -1: none
                            fetched yet */
    int dirty;           /* a commit may have passed it: fetch before parking */
    int64_t deadline_ns; /* when the present wait spends the budget; INT64_MAX: no wait */
    int users;           /* threads inside it (a read, a poll, the hub): it lives
                                    until the last one leaves */
    int closing;         /* rfs_follow_close waits for users to drop to 0 */
    fuse_req_t req;      /* parked read, or NULL */
    size_t req_size;
    int req_uring;              /* it came over io_uring (libfuse passes on no interrupt of it) */
    pid_t req_pid;              /* its caller, for rfs_follow_signalled (io_uring only) */
    struct fuse_pollhandle *ph; /* parked poll, or NULL */
    rfs_follow *next;           /* hub's list of live followers */
    rfs_follow *prev;
    rfs_follow *work; /* the hub's list for one round */
};

/* The change feed's lines after grp[0]'s last change (scan_seq) to every follower of grp;
 * a change makes the waiting budget whole again. 1 (caught up) or <0. */
static int fetch_changes(rs_store *s, rfs_follow **grp, size_t n)
{
    rfs_follow *f0 = grp[0];
    rs_buf lines = RS_BUF_INIT;
    rs_err err = {0};
    int64_t last = f0->scan_seq;
    int rc =
        rfs_changes_render(s, f0->user, f0->m->opt.only_thread, f0->scan_seq, &lines, &last, &err);
    for (size_t i = 0; !rc && i < n && lines.len; i++) {
        if (rs_buf_add(&grp[i]->ahead, lines.buf, lines.len))
            rc = -ENOMEM;
        grp[i]->scan_seq = last;
        grp[i]->waited_ns = 0;
    }
    rs_buf_release(&lines);
    return rc < 0 ? rc : 1;
}

/* The digest d continued over a fetched line: over the line's own hash, so that followers
 * sharing a fetch hash each line once. */
static uint64_t row_digest(uint64_t d, uint64_t line_hash)
{
    return rs_hash(d, &line_hash, sizeof line_hash);
}

/* Do f's rows up to its scan_seq still hold the lines it was given? 1 yes, 0 no, <0 error. */
static int rows_same(rs_store *s, rfs_follow *f)
{
    rs_query q = RS_QUERY_INIT;
    q.thread_id = f->node->thread_id;
    q.run_id = f->node->kind == RFS_R_FOLLOW ? f->node->run_id : NULL;
    q.user = f->user;
    rs_cursor *c;
    int rc = rs_store_query(s, &q, &c, NULL);
    if (rc)
        return rc;
    uint64_t d = RS_HASH_INIT;
    int64_t rows = 0;
    const rs_record *rec;
    while ((rc = rs_cursor_next(c, &rec)) == 1 && rec->seq <= f->scan_seq) {
        d = row_digest(d, rs_hash(RS_HASH_INIT, rec->line, rec->line_len));
        rows++;
    }
    rs_cursor_free(c);
    return rc < 0 ? rc : d == f->digest && rows == f->rows;
}

/* f reached the end of its rows after the hub saw a foreign change: does the log still add up
 * to what f fetched, and, where rows were changed in place or deleted since f last looked, do
 * they still hold what it fetched? If not, HISTORY_LINE ends the feed. A log still growing is
 * checked again at the next caught-up fetch. Who fetched holds f->lock. */
static void history_check(rs_store *s, rfs_follow *f)
{
    rfs_hub *hub = f->m->hub;
    pthread_mutex_lock(&hub->lock);
    int check = f->check;
    f->check = 0;
    pthread_mutex_unlock(&hub->lock);
    if (!check || f->ended)
        return;
    const char *run = f->node->kind == RFS_R_FOLLOW ? f->node->run_id : NULL;
    rs_log_info info;
    int again = rs_store_log_info(s, f->node->thread_id, run, f->user, &info, NULL) != 0 ||
                (info.exists && info.last_seq > f->scan_seq);
    /* The count is a scoped reader's own only where it is the one owner. */
    int counted = !f->user || info.exact;
    const char *why = NULL;
    if (again) {
        pthread_mutex_lock(&hub->lock);
        f->check = 1;
        pthread_mutex_unlock(&hub->lock);
    } else if (!info.exists) {
        why = run ? "the run was deleted" : "the thread was deleted";
    } else if (info.last_seq < f->scan_seq || (counted && info.count != f->rows)) {
        why = "another writer deleted or added rows at or below after_seq: read events.jsonl "
              "again";
    } else {
        /* The count is read before the rows: a change between the two is looked at again. */
        pthread_mutex_lock(&hub->lock);
        int64_t known = f->rewrites;
        pthread_mutex_unlock(&hub->lock);
        int64_t now = known;
        int same = rs_store_rewrites(s, &now) != 0 ? -EIO : now == known ? 1 : rows_same(s, f);
        pthread_mutex_lock(&hub->lock);
        if (same < 0)
            f->check = 1;
        else if (same)
            f->rewrites = now;
        pthread_mutex_unlock(&hub->lock);
        if (same == 0)
            why = "another writer replaced rows at or below after_seq: read events.jsonl again";
    }
    if (why && rs_buf_addf(&f->ahead, HISTORY_LINE, f->node->thread_id, run ? "\"" : "",
                           run ? run : "null", run ? "\"" : "", (long long)f->scan_seq,
                           info.exists ? "false" : "true", why) == 0)
        f->ended = 1;
}

/* Append the rows after grp[0]'s scan_seq to every follower of grp (all at that position),
 * up to want bytes. 1: the rows ran out (caught up); 0: stopped at want or at run.terminal;
 * <0: error. Each member's lock held. */
static int fetch_rows(rs_store *s, rfs_follow **grp, size_t n, size_t want)
{
    rfs_follow *f0 = grp[0];
    if (f0->node->kind == RFS_CHANGES_FOLLOW)
        return fetch_changes(s, grp, n);
    int run_feed = f0->node->kind == RFS_R_FOLLOW;
    rs_query q = RS_QUERY_INIT;
    q.thread_id = f0->node->thread_id;
    q.run_id = run_feed ? f0->node->run_id : NULL;
    q.user = f0->user;
    q.after_seq = f0->scan_seq;
    /* What the rows it fetches are checked against (history_check), read before them. */
    rfs_hub *hub = f0->m->hub;
    pthread_mutex_lock(&hub->lock);
    int first = 0;
    for (size_t i = 0; i < n; i++)
        first = first || grp[i]->rewrites < 0;
    pthread_mutex_unlock(&hub->lock);
    int64_t rewrites = 0;
    int rc = first ? rs_store_rewrites(s, &rewrites) : 0;
    if (rc)
        return rc;
    pthread_mutex_lock(&hub->lock);
    for (size_t i = 0; first && i < n; i++)
        if (grp[i]->rewrites < 0)
            grp[i]->rewrites = rewrites;
    pthread_mutex_unlock(&hub->lock);
    rs_cursor *c;
    rs_err err = {0};
    if ((rc = rs_store_query(s, &q, &c, &err)))
        return rc;
    size_t got = 0;
    const rs_record *rec;
    while (got < want && (rc = rs_cursor_next(c, &rec)) == 1) {
        for (size_t i = 0; i < n && rc == 1; i++)
            if (rs_buf_add(&grp[i]->ahead, rec->line, rec->line_len))
                rc = -ENOMEM;
        if (rc < 0)
            break;
        got += rec->line_len;
        int terminal = run_feed && rec->event_type && strcmp(rec->event_type, TERMINAL) == 0;
        uint64_t h = rs_hash(RS_HASH_INIT, rec->line, rec->line_len);
        for (size_t i = 0; i < n; i++) {
            grp[i]->scan_seq = rec->seq;
            grp[i]->ended = terminal;
            grp[i]->rows++;
            grp[i]->digest = row_digest(grp[i]->digest, h);
        }
        /* The run's feed ends with its terminal event; what a buggy writer adds after it
         * belongs to the log, not to the feed. */
        if (terminal)
            break;
    }
    rs_cursor_free(c);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < n; i++)
        history_check(s, grp[i]);
    return rc == 0;
}

/* The waiting budget f has spent by now. f->lock held. */
static int64_t follow_waited(const rfs_follow *f, int64_t now)
{
    return f->waited_ns + (f->wait_from ? now - f->wait_from : 0);
}

static int64_t follow_budget(const rfs_follow *f)
{
    return (int64_t)(f->m->opt.follow_timeout * 1e9);
}

/* A reader parks on f with nothing to get (wait 1), or is handed something (wait 0): the
 * budget runs only between the two. f->lock and the hub lock held. */
static void follow_waiting(rfs_follow *f, int wait)
{
    int64_t now = rs_clock_ns(CLOCK_MONOTONIC);
    if (wait && !f->wait_from)
        f->wait_from = now;
    if (!wait && f->wait_from) {
        f->waited_ns += now - f->wait_from;
        f->wait_from = 0;
    }
    f->deadline_ns = f->wait_from ? f->wait_from + follow_budget(f) - f->waited_ns : INT64_MAX;
}

/* Bring f's ahead up to want bytes. Queries only when f may be behind the store (stale, or
 * its last fetch stopped short). Returns <0 on error; *eof when the feed ended (terminal
 * delivered, or nothing left to hand out once the waiting budget is spent); *empty when the
 * store was asked and had nothing new. f->lock held. */
static int follow_fill(rfs_follow *f, rs_store *s, size_t want, int stale, int *eof, int *empty)
{
    *eof = 0;
    *empty = 0;
    if (!f->ended && f->ahead.len == 0 && (stale || !f->caught_up)) {
        int rc = fetch_rows(s, &f, 1, want);
        if (rc < 0)
            return rc;
        f->caught_up = rc;
        *empty = f->ahead.len == 0 && !f->ended;
    }
    /* Nothing to hand out and nothing new: the feed ends once the reader has waited its
     * budget, for good (a later read gets EOF too). */
    if (!f->ended && f->ahead.len == 0 &&
        follow_waited(f, rs_clock_ns(CLOCK_MONOTONIC)) >= follow_budget(f))
        f->ended = 1;
    *eof = f->ended && f->ahead.len == 0;
    return 0;
}

/* Whether a parked read may still be answered: one over io_uring not once the session has
 * ended (unmounted: the kernel waits for no answer), as libfuse frees its rings' requests
 * when its loop returns. */
static int answerable(const rfs_mount *m, int uring)
{
    return !uring || !fuse_session_exited(m->se);
}

/* An answer follow_serve prepared, sent by follow_send once the caller holds no follower's
 * lock: over io_uring a reply from a thread other than the request's ring's takes that ring's
 * lock, which its thread holds while it runs a handler, and a handler takes f->lock. */
typedef struct follow_reply {
    const rfs_mount *m;
    fuse_req_t req; /* NULL: none */
    int uring;
    int err; /* the answer is this errno, else the bytes */
    char *bytes;
    size_t len;
    struct fuse_pollhandle *ph; /* told the feed is readable, NULL: none */
} follow_reply;

static void follow_send(follow_reply *r)
{
    if (r->req && answerable(r->m, r->uring)) {
        if (r->err)
            fuse_reply_err(r->req, r->err);
        else
            fuse_reply_buf(r->req, r->len ? r->bytes : NULL, r->len);
    }
    free(r->bytes);
    if (r->ph) {
        fuse_lowlevel_notify_poll(r->ph);
        fuse_pollhandle_destroy(r->ph);
    }
    *r = (follow_reply){0};
}

/* Answer what waits on f from ahead, fetching as needed: a parked read gets data or EOF, a
 * parked poll is told the feed is readable (into *out, for follow_send); a waiter with nothing
 * to get stays parked. Loops while a commit arrived during the fetch. Not on the hub's thread
 * (from_hub 0), a caught-up follower found dirty is left to the hub's next round, which fetches
 * once for all followers at its position. f->lock held, hub lock not. */
static void follow_serve(rfs_hub *hub, rfs_follow *f, rs_store *s, int from_hub, follow_reply *out)
{
    for (;;) {
        pthread_mutex_lock(&hub->lock);
        int waiting = f->req || f->ph;
        if (!waiting) {
            pthread_mutex_unlock(&hub->lock);
            return;
        }
        int stale = f->dirty;
        if (!from_hub && stale && f->caught_up && f->ahead.len == 0 && !f->ended) {
            follow_waiting(f, 1);
            hub->serve_asked = 1;
            pthread_cond_signal(&hub->wake);
            pthread_mutex_unlock(&hub->lock);
            return;
        }
        f->dirty = 0;
        int64_t want_seq = f->want_seq;
        size_t size = f->req ? f->req_size : PEEK_BYTES;
        pthread_mutex_unlock(&hub->lock);

        int eof = 0, empty = 0;
        int rc = follow_fill(f, s, size, stale, &eof, &empty);
        int ready = rc < 0 || eof || f->ahead.len > 0;

        pthread_mutex_lock(&hub->lock);
        /* An empty fetch that began after the hub read the log's last seq has seen every row
         * up to it, visible to this reader or not (another owner's). */
        if (empty && want_seq > f->scan_seq)
            f->scan_seq = want_seq;
        f->seen_seq = f->scan_seq;
        f->seen_rows = f->rows;
        follow_waiting(f, !ready);
        fuse_req_t req = NULL;
        int uring = f->req_uring;
        struct fuse_pollhandle *ph = NULL;
        if (ready) {
            req = f->req;
            f->req = NULL;
            ph = f->ph;
            f->ph = NULL;
        }
        int again = !ready && f->dirty;
        pthread_mutex_unlock(&hub->lock);

        if (req) {
            out->m = f->m;
            out->req = req;
            out->uring = uring;
            size_t n = f->ahead.len < size ? f->ahead.len : size;
            if (rc < 0) {
                out->err = -rc;
            } else if (n && !(out->bytes = malloc(n))) {
                out->err = ENOMEM; /* the bytes stay ahead for the next read */
            } else {
                if (n)
                    memcpy(out->bytes, f->ahead.buf, n);
                out->len = n;
                rs_buf_remove_front(&f->ahead, n);
                if (f->ahead.len == 0)
                    rs_buf_release(&f->ahead); /* an idle follower keeps no buffer */
            }
        }
        if (ph)
            out->ph = ph;
        if (!again)
            return;
    }
}

/* Enter or leave f; the hub lock held. The last to leave a closing follower lets close
 * free it. */
static void follow_enter(rfs_follow *f)
{
    f->users++;
}

static void follow_leave(rfs_hub *hub, rfs_follow *f)
{
    if (--f->users == 0 && f->closing)
        pthread_cond_broadcast(&hub->left);
}

static void follow_enter_locked(rfs_hub *hub, rfs_follow *f)
{
    pthread_mutex_lock(&hub->lock);
    follow_enter(f);
    pthread_mutex_unlock(&hub->lock);
}

static void follow_leave_locked(rfs_hub *hub, rfs_follow *f)
{
    pthread_mutex_lock(&hub->lock);
    follow_leave(hub, f);
    pthread_mutex_unlock(&hub->lock);
}

/* Runs on libfuse's thread when a reader is interrupted (Ctrl-C, kill -9): a parked read is
 * answered EINTR at once. It is given the hub, not the follower: libfuse may call it just
 * after the read was answered, when the handle may already be gone. A read not parked yet
 * checks fuse_req_interrupted() under the hub lock before parking. */
static void follow_interrupted(fuse_req_t req, void *data)
{
    rfs_hub *hub = data;
    fuse_req_t mine = NULL;
    pthread_mutex_lock(&hub->lock);
    for (rfs_follow *f = hub->followers; f; f = f->next)
        if (f->req == req) {
            mine = req;
            f->req = NULL;
            break;
        }
    pthread_mutex_unlock(&hub->lock);
    if (mine)
        fuse_reply_err(mine, EINTR);
}

int rfs_follow_open(rfs_follow **out, rfs_mount *m, const rfs_node *n, const char *user)
{
    rfs_hub *hub = m->hub;
    rfs_follow *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    if (user && !(f->user = strdup(user))) {
        free(f);
        return -ENOMEM;
    }
    f->m = m;
    f->node = n;
    pthread_mutex_init(&f->lock, NULL);
    f->ahead = (rs_buf)RS_BUF_INIT;
    f->deadline_ns = INT64_MAX;
    f->digest = RS_HASH_INIT;
    f->rewrites = -1;
    if (n->kind == RFS_CHANGES_FOLLOW)
        f->scan_seq = f->seen_seq = n->num; /* its last change */
    pthread_mutex_lock(&hub->lock);
    f->next = hub->followers;
    if (hub->followers)
        hub->followers->prev = f;
    hub->followers = f;
    pthread_mutex_unlock(&hub->lock);
    *out = f;
    return 0;
}

void rfs_follow_close(rfs_follow *f)
{
    if (!f)
        return;
    rfs_hub *hub = f->m->hub;
    pthread_mutex_lock(&hub->lock);
    if (f->prev)
        f->prev->next = f->next;
    else if (hub->followers == f)
        hub->followers = f->next;
    if (f->next)
        f->next->prev = f->prev;
    f->next = f->prev = NULL;
    /* Unlinked, no new hub round claims it; a read answered a moment ago may still be in
     * it. */
    f->closing = 1;
    while (f->users)
        pthread_cond_wait(&hub->left, &hub->lock);
    fuse_req_t req = f->req;
    int uring = f->req_uring;
    f->req = NULL;
    struct fuse_pollhandle *ph = f->ph;
    f->ph = NULL;
    pthread_mutex_unlock(&hub->lock);
    if (req && answerable(f->m, uring))
        fuse_reply_err(req, EINTR);
    if (ph)
        fuse_pollhandle_destroy(ph);
    rs_buf_release(&f->ahead);
    pthread_mutex_destroy(&f->lock);
    free(f->user);
    free(f);
}

void rfs_follow_read(rfs_follow *f, fuse_req_t req, size_t size)
{
    rfs_mount *m = f->m;
    rfs_hub *hub = m->hub;
    /* Ask to hear of an interrupt before parking; the callback may run at once, and then
     * fuse_req_interrupted() below says so. */
    fuse_req_interrupt_func(req, follow_interrupted, hub);
    rs_store *s;
    rs_err err = {0};
    int rc = rfs_pool_get(m, &s, &err);
    if (rc)
        return (void)fuse_reply_err(req, -rc);
    follow_enter_locked(hub, f);
    pthread_mutex_lock(&f->lock);
    pthread_mutex_lock(&hub->lock);
    if (f->req) {
        rc = -EBUSY; /* one read at a time on a feed */
    } else if (fuse_req_interrupted(req)) {
        rc = -EINTR;
    } else {
        f->req = req;
        f->req_size = size ? size : 1;
        f->req_uring = 0;
        f->req_pid = 0;
#if RFS_FUSE_URING
        /* libfuse 3.18 passes on no interrupt of a request that came over io_uring: the hub
         * looks for its caller's pending signal instead (rfs_follow_signalled). */
        if (fuse_req_is_uring(req)) {
            f->req_uring = 1;
            f->req_pid = fuse_req_ctx(req)->pid;
        }
#endif
    }
    pthread_mutex_unlock(&hub->lock);
    follow_reply r = {0};
    if (!rc)
        follow_serve(hub, f, s, 0, &r);
    pthread_mutex_unlock(&f->lock);
    if (rc)
        fuse_reply_err(req, -rc);
    follow_send(&r);
    follow_leave_locked(hub, f);
    rfs_pool_put(m, s);
}

void rfs_follow_poll(rfs_follow *f, fuse_req_t req, struct fuse_pollhandle *ph)
{
    rfs_mount *m = f->m;
    rfs_hub *hub = m->hub;
    rs_store *s;
    rs_err err = {0};
    int rc = rfs_pool_get(m, &s, &err);
    if (rc) {
        if (ph)
            fuse_pollhandle_destroy(ph);
        return (void)fuse_reply_err(req, -rc);
    }
    int ready;
    struct fuse_pollhandle *old = NULL;
    follow_enter_locked(hub, f);
    pthread_mutex_lock(&f->lock);
    for (;;) {
        pthread_mutex_lock(&hub->lock);
        int stale = f->dirty;
        f->dirty = 0;
        pthread_mutex_unlock(&hub->lock);
        int eof = 0, empty = 0;
        rc = follow_fill(f, s, PEEK_BYTES, stale, &eof, &empty);
        ready = rc < 0 || eof || f->ahead.len > 0;
        pthread_mutex_lock(&hub->lock);
        f->seen_seq = f->scan_seq;
        f->seen_rows = f->rows;
        if (!ready && f->dirty) {
            pthread_mutex_unlock(&hub->lock);
            continue;
        }
        if (!ready && ph) {
            old = f->ph;
            f->ph = ph;
            ph = NULL;
        }
        if (ready || f->ph)
            follow_waiting(f, !ready);
        pthread_mutex_unlock(&hub->lock);
        break;
    }
    /* What this poll fetched may be what a parked read of another thread waits for. */
    follow_reply r = {0};
    if (ready)
        follow_serve(hub, f, s, 0, &r);
    pthread_mutex_unlock(&f->lock);
    follow_send(&r);
    follow_leave_locked(hub, f);
    rfs_pool_put(m, s);
    if (old)
        fuse_pollhandle_destroy(old);
    if (ph)
        fuse_pollhandle_destroy(ph);
    fuse_reply_poll(req, ready ? POLLIN : 0);
}

/* One log that changed, and its last seq and rows (looked up once a round). */
typedef struct target {
    const char *thread_id;
    const char *run_id; /* NULL: the thread */
    int64_t last_seq;   /* -1: unknown (error): assume it moved */
    int64_t count;
    int exists;
} target;

typedef struct round_targets {
    target *t;
    size_t n, cap;
} round_targets;

/* The log f follows as this round found it; NULL when it could not be looked up (then
 * assume it moved). */
static const target *target_of(rfs_hub *hub, round_targets *rt, const rfs_follow *f)
{
    const char *run = f->node->kind == RFS_R_FOLLOW ? f->node->run_id : NULL;
    for (size_t i = 0; i < rt->n; i++)
        if (strcmp(rt->t[i].thread_id, f->node->thread_id) == 0 &&
            (run ? rt->t[i].run_id && strcmp(rt->t[i].run_id, run) == 0 : !rt->t[i].run_id))
            return rt->t[i].last_seq < 0 ? NULL : &rt->t[i];
    /* The unscoped totals: for a --user reader they may run ahead of its own rows, which
     * costs a fetch that finds nothing, never a missed event. */
    rs_log_info info;
    int found = rs_store_log_info(hub->store, f->node->thread_id, run, NULL, &info, NULL) == 0;
    if (rs_array_grow(&rt->t, &rt->cap, rt->n + 1, sizeof *rt->t))
        return NULL;
    rt->t[rt->n++] = (target){f->node->thread_id, run, found ? info.last_seq : -1,
                              found ? info.count : 0, found && info.exists};
    return found ? &rt->t[rt->n - 1] : NULL;
}

/* 1 when a change of the queue touched f's log, 2 when one deleted or rewrote its rows. */
static int touched_by(const rfs_follow *f, const rfs_change *c, size_t n)
{
    int touched = 0;
    for (size_t i = 0; i < n && touched < 2; i++)
        if (strcmp(f->node->thread_id, c[i].thread_id) == 0 &&
            (f->node->kind != RFS_R_FOLLOW || !c[i].run_id[0] ||
             strcmp(f->node->run_id, c[i].run_id) == 0))
            touched = c[i].rewritten ? 2 : 1;
    return touched;
}

/* Followers that read the same rows from the same place share one fetch. */
static int same_position(const rfs_follow *a, const rfs_follow *b)
{
    return a->node->kind == b->node->kind && a->scan_seq == b->scan_seq &&
           strcmp(a->node->thread_id, b->node->thread_id) == 0 &&
           (a->node->kind != RFS_R_FOLLOW || strcmp(a->node->run_id, b->node->run_id) == 0) &&
           (a->user == b->user || (a->user && b->user && strcmp(a->user, b->user) == 0));
}

static int by_position(const void *x, const void *y)
{
    const rfs_follow *a = *(rfs_follow *const *)x, *b = *(rfs_follow *const *)y;
    int c = (int)a->node->kind - (int)b->node->kind;
    if (!c)
        c = strcmp(a->node->thread_id, b->node->thread_id);
    if (!c && a->node->kind == RFS_R_FOLLOW)
        c = strcmp(a->node->run_id, b->node->run_id);
    if (!c)
        c = a->scan_seq < b->scan_seq ? -1 : a->scan_seq > b->scan_seq;
    if (!c)
        c = strcmp(a->user ? a->user : "", b->user ? b->user : "");
    return c;
}

/* One fetch for each group of waiting followers at the same position. Their locks held. */
static void fetch_groups(rfs_hub *hub, rfs_follow **fs, size_t n)
{
    qsort(fs, n, sizeof *fs, by_position);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && same_position(fs[i], fs[j]))
            j++;
        /* Members with something to hand out already, or nothing more to get, are served
         * from what they hold. */
        rfs_follow **grp = fs + i;
        size_t k = 0, want = 0;
        pthread_mutex_lock(&hub->lock);
        for (size_t x = i; x < j; x++) {
            rfs_follow *f = fs[x];
            if (f->ended || f->ahead.len > 0 || (!f->dirty && f->caught_up))
                continue;
            size_t w = f->req ? f->req_size : PEEK_BYTES;
            want = w > want ? w : want;
            f->dirty = 0;
            fs[x] = grp[k];
            grp[k++] = f;
        }
        pthread_mutex_unlock(&hub->lock);
        if (k > 0) {
            int rc = fetch_rows(hub->store, grp, k, want);
            pthread_mutex_lock(&hub->lock);
            for (size_t x = 0; x < k; x++) {
                rfs_follow *f = grp[x];
                if (rc >= 0)
                    f->caught_up = rc;
                if (rc == 1 && f->ahead.len == 0 && f->want_seq > f->scan_seq)
                    f->scan_seq = f->want_seq;
                f->seen_seq = f->scan_seq;
                f->seen_rows = f->rows;
                if (rc < 0)
                    f->dirty = 1; /* its own serve below fetches and reports the error */
            }
            pthread_mutex_unlock(&hub->lock);
        }
        i = j;
    }
}

/* Serve the waiting followers a round's changes concern (every one when another process
 * committed: its probe does not say where), those that asked (a read found itself dirty),
 * and those whose wait spent the budget, which get EOF without a query. A follower is marked dirty,
 * waiting or not, only when the log's last seq is past what it has seen: an idle tick costs
 * no query per follower. Hub thread, hub lock not held. */
void rfs_follow_serve_round(rfs_hub *hub, const rfs_change *queue, size_t queued, int everything)
{
    round_targets rt = {0};
    rfs_follow *work = NULL;
    size_t nwork = 0;
    int64_t now = rs_clock_ns(CLOCK_MONOTONIC);
    pthread_mutex_lock(&hub->lock);
    hub->serve_asked = 0;
    for (rfs_follow *f = hub->followers; f; f = f->next) {
        int touched = everything ? 0 : touched_by(f, queue, queued);
        if (f->node->kind == RFS_CHANGES_FOLLOW) {
            /* Any commit may be a change the feed shows. */
            f->dirty = f->dirty || everything || queued > 0;
        } else if (everything || touched) {
            const target *t = target_of(hub, &rt, f);
            int64_t seq = t ? t->last_seq : -1;
            if (seq < 0 || seq > f->seen_seq) {
                f->want_seq = seq > f->want_seq ? seq : f->want_seq;
                f->dirty = 1;
            }
            /* Another process's change that leaves the log short of what the follower
             * fetched: it fetches, finds nothing new and checks (history_check). This
             * mount's delete or rewrite of the rows is checked always (the hub's count of
             * rewrites is of the last whole-mount sweep, not of this change). */
            if (everything || touched == 2) {
                f->check = 1;
                if (touched == 2 || !t || !t->exists || seq < f->seen_seq ||
                    (!f->user && seq == f->seen_seq && t->count != f->seen_rows) ||
                    (f->rewrites >= 0 && f->rewrites != hub->rewrites))
                    f->dirty = 1;
            }
        }
        if (!f->req && !f->ph)
            continue;
        if (!f->dirty && now < f->deadline_ns)
            continue;
        follow_enter(f);
        f->work = work;
        work = f;
        nwork++;
    }
    pthread_mutex_unlock(&hub->lock);
    free(rt.t);
    if (!work)
        return;
    rfs_follow **fs = malloc(nwork * sizeof *fs);
    size_t n = 0;
    for (rfs_follow *f = work; f; f = f->work) {
        pthread_mutex_lock(&f->lock);
        if (fs)
            fs[n++] = f;
    }
    if (fs)
        fetch_groups(hub, fs, n);
    free(fs);
    /* Answered once every follower's lock is let go (follow_reply); without the memory to
     * hold the answers, the followers stay dirty for the next round. */
    follow_reply *replies = calloc(nwork, sizeof *replies);
    size_t nreplies = 0;
    while (work) {
        rfs_follow *f = work;
        work = f->work;
        if (replies)
            follow_serve(hub, f, hub->store, 1, &replies[nreplies++]);
        pthread_mutex_unlock(&f->lock);
        follow_leave_locked(hub, f);
    }
    for (size_t i = 0; i < nreplies; i++)
        follow_send(&replies[i]);
    free(replies);
}

/* A signal is pending for the thread pid, not blocked: what makes the kernel send FUSE an
 * interrupt for the request the thread waits on (a fatal one shows as SIGKILL). */
static int signal_pending(pid_t pid)
{
    char path[48], line[128];
    if (rs_fmt(path, sizeof path, "/proc/%ld/status", (long)pid) < 0)
        return 0;
    FILE *fp = fopen(path, "re");
    if (!fp)
        return 0;
    unsigned long long pending = 0, blocked = 0, v;
    while (fgets(line, sizeof line, fp)) {
        if (sscanf(line, "SigPnd: %llx", &v) == 1 || sscanf(line, "ShdPnd: %llx", &v) == 1)
            pending |= v;
        else if (sscanf(line, "SigBlk: %llx", &v) == 1)
            blocked = v;
    }
    fclose(fp);
    return (pending & ~blocked) != 0;
}

void rfs_follow_signalled(rfs_hub *hub)
{
    enum { CHECKED = 64 }; /* parked reads looked at per call */
    fuse_req_t req[CHECKED];
    pid_t pid[CHECKED];
    size_t n = 0;
    pthread_mutex_lock(&hub->lock);
    for (rfs_follow *f = hub->followers; f && n < CHECKED; f = f->next)
        if (f->req && f->req_pid > 0) {
            req[n] = f->req;
            pid[n++] = f->req_pid;
        }
    pthread_mutex_unlock(&hub->lock);
    for (size_t i = 0; i < n; i++) {
        if (!signal_pending(pid[i]))
            continue;
        /* Still parked for the same caller (a ring's requests are reused), claimed here. */
        fuse_req_t mine = NULL;
        const rfs_mount *m = NULL;
        pthread_mutex_lock(&hub->lock);
        for (rfs_follow *f = hub->followers; f; f = f->next)
            if (f->req == req[i] && f->req_pid == pid[i]) {
                mine = f->req;
                m = f->m;
                f->req = NULL;
                break;
            }
        pthread_mutex_unlock(&hub->lock);
        if (mine && answerable(m, 1))
            fuse_reply_err(mine, EINTR);
    }
}

void rfs_follow_end_all(rfs_hub *hub)
{
    for (rfs_follow *f = hub->followers; f; f = f->next) {
        if (f->req && answerable(f->m, f->req_uring))
            fuse_reply_err(f->req, EINTR);
        if (f->ph)
            fuse_pollhandle_destroy(f->ph);
        f->req = NULL;
        f->ph = NULL;
    }
}
