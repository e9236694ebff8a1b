/* receipt.c — see receipt.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "receipt.h"
#include "rs_util.h"

static rfs_seq_range *range_at(rfs_receipt *r, size_t i)
{
    return (rfs_seq_range *)(void *)r->ranges.buf + i;
}

static size_t range_count(const rfs_receipt *r)
{
    return r->ranges.len / sizeof(rfs_seq_range);
}

static int receipt_add(rfs_receipt *r, int64_t seq)
{
    size_t n = range_count(r);
    if (n && range_at(r, n - 1)->last + 1 == seq) {
        range_at(r, n - 1)->last = seq;
        return 0;
    }
    rfs_seq_range add = {seq, seq};
    return rs_buf_add(&r->ranges, &add, sizeof add);
}

int rfs_receipt_add_lines(rfs_receipt *r, const char *lines, size_t len)
{
    /* A canonical line starts {"thread_id":ID,"run_id":ID,"seq":N, and ids hold no quote or
     * comma, so the first ,"seq": is the record's. */
    static const char key[] = ",\"seq\":";
    for (const char *p = lines, *end = lines + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        const char *s = memmem(p, (size_t)(eol - p), key, sizeof key - 1);
        if (s) {
            int rc = receipt_add(r, strtoll(s + sizeof key - 1, NULL, 10));
            if (rc)
                return rc;
        }
        p = eol + 1;
    }
    return 0;
}

/* The records of the current range from next_seq on, until out holds size bytes. *more:
 * the range has records left. */
static int read_range(rfs_receipt *r, rs_store *s, const char *thread_id, const char *run_id,
                      size_t size, rs_buf *out, int *more, rs_err *err)
{
    const rfs_seq_range *rg = range_at(r, r->idx);
    int64_t from = r->next_seq > rg->first ? r->next_seq : rg->first;
    rs_query q = RS_QUERY_INIT;
    q.thread_id = thread_id;
    q.run_id = run_id;
    q.after_seq = from - 1;
    q.before_seq = rg->last + 1;
    rs_cursor *c;
    int rc = rs_store_query(s, &q, &c, err);
    if (rc)
        return rc;
    const rs_record *rec;
    *more = 0;
    while (out->len < size && (rc = rs_cursor_next(c, &rec)) == 1) {
        size_t left = rec->line_len - r->skip, room = size - out->len;
        size_t take = left < room ? left : room;
        if (rs_buf_add(out, rec->line + r->skip, take)) {
            rc = rs_err_set(err, -ENOMEM, "out of memory");
            break;
        }
        r->next_seq = rec->seq;
        r->skip += take;
        if (r->skip == rec->line_len) {
            r->next_seq = rec->seq + 1;
            r->skip = 0;
        }
    }
    if (rc == 1)
        *more = r->skip > 0 || r->next_seq <= rg->last;
    rs_cursor_free(c);
    return rc < 0 ? rc : 0;
}

int rfs_receipt_read(rfs_receipt *r, rs_store *s, const char *thread_id, const char *run_id,
                     size_t size, rs_buf *out, rs_err *err)
{
    size_t goal = out->len + size;
    while (out->len < goal && r->idx < range_count(r)) {
        int more, rc = read_range(r, s, thread_id, run_id, goal, out, &more, err);
        if (rc)
            return rc;
        if (more)
            continue;
        /* Records deleted since (rm -r with --allow-delete) are simply absent. The last
         * range stays current: a later write may extend it. */
        r->skip = 0;
        if (r->idx + 1 == range_count(r)) {
            r->next_seq = range_at(r, r->idx)->last + 1;
            break;
        }
        r->idx++;
        r->next_seq = 0;
    }
    return 0;
}

void rfs_receipt_release(rfs_receipt *r)
{
    rs_buf_release(&r->ranges);
    r->idx = 0;
    r->next_seq = 0;
    r->skip = 0;
}
