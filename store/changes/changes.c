/* changes.c — the change feed's policy above the backends: numbers brought up to date
 * first, then each backend row as the line's fields (status from run.terminal's content as
 * DeerFlow reads it, created_at in canonical form). */
#include <errno.h>
#include <string.h>

#include "event.h"
#include "rowview.h"
#include "store_int.h"
#include "rs_util.h"

typedef struct feed {
    int (*fn)(void *ctx, const rs_change *c);
    void *ctx;
    rs_buf meta, content, status;
    char at[RS_TIME_LEN + 1];
} feed;

static int feed_row(void *ctx, const rs_change_row *r)
{
    feed *f = ctx;
    /* The same on both backends: a run no path can name is not a consumer's to fetch. */
    if (r->odd)
        return 0;
    rs_change c = {.change = r->change,
                   .thread_id = r->thread_id,
                   .run_id = r->run_id,
                   .deleted = r->deleted,
                   .expired = r->expired};
    if (!r->deleted) {
        c.upper_seq = r->upper_seq;
        c.events = r->events;
        c.seal = r->seal;
        f->at[0] = '\0';
        if (r->created_at && rs_time_parse(r->created_at, strlen(r->created_at), f->at, NULL))
            f->at[0] = '\0';
        c.at = f->at;
        if (r->terminal.content) {
            unsigned markers;
            int rc = rs_view_meta(&f->meta, &r->terminal, &markers);
            if (rc || (rc = rs_view_content(&f->content, &r->terminal, markers)))
                return rc;
            if (rs_view_get_str(f->content.buf, f->content.len, "status", &f->status))
                c.status = f->status.buf;
        }
    }
    return f->fn(f->ctx, &c);
}

/* The checks and the numbering every read of the feed starts with. */
static int feed_start(rs_store *s, int64_t after, const char *thread_id, rs_err *err)
{
    if (after < 0)
        return rs_err_set(err, -EINVAL, "a change number is 0 or more");
    if (thread_id && !rs_id_valid(thread_id))
        return rs_err_set(err, -EINVAL, "invalid thread id '%.80s': use 1-64 of [A-Za-z0-9_-]",
                          thread_id);
    return s->opt.read_only ? 0 : s->ops->changes_sync(s->be, err);
}

static int feed_read(rs_store *s, int64_t after, const char *user, const char *thread_id,
                     rs_change_page *page, int (*fn)(void *ctx, const rs_change *c), void *ctx,
                     rs_err *err)
{
    int rc = feed_start(s, after, thread_id, err);
    if (rc)
        return rc;
    feed f = {
        .fn = fn, .ctx = ctx, .meta = RS_BUF_INIT, .content = RS_BUF_INIT, .status = RS_BUF_INIT};
    rc = s->ops->changes(s->be, after, user, thread_id, page, feed_row, &f, err);
    rs_buf_release(&f.meta);
    rs_buf_release(&f.content);
    rs_buf_release(&f.status);
    return rc;
}

int rs_store_changes(rs_store *s, int64_t after, const char *user, const char *thread_id,
                     int (*fn)(void *ctx, const rs_change *c), void *ctx, rs_err *err)
{
    return feed_read(s, after, user, thread_id, NULL, fn, ctx, err);
}

int rs_store_changes_page(rs_store *s, int64_t after, int64_t limit, const char *user,
                          const char *thread_id, int (*fn)(void *ctx, const rs_change *c),
                          void *ctx, int64_t *last, rs_err *err)
{
    if (limit < 1)
        return rs_err_set(err, -EINVAL, "a page of the change feed holds 1 run or more");
    rs_change_page page = {.limit = limit, .last = after};
    int rc = feed_read(s, after, user, thread_id, &page, fn, ctx, err);
    *last = page.last;
    return rc ? rc : page.more;
}

/* No numbering here: a store never numbered (a DeerFlow database a mount just opened) would
 * have every run it holds read and numbered, which nothing the caller asked for may cost. */
int rs_store_changes_head(rs_store *s, int64_t *head, rs_err *err)
{
    return s->ops->changes_head(s->be, head, err);
}
