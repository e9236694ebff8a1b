/* changes.c — the change feed rendered: {change, thread_id, run_id, upper_seq, events,
 * status, seal, deleted, at} for a run, {change, thread_id, run_id, deleted[, expired]} for a tombstone. */
#include <string.h>

#include "changes.h"
#include "rs_util.h"

typedef struct render {
    rs_buf *out;
    int64_t last;
} render;

static int add_str_or_null(rs_buf *out, const char *s)
{
    return s ? rs_buf_add_json_string(out, s, strlen(s)) : rs_buf_addlit(out, "null");
}

static int line(void *ctx, const rs_change *c)
{
    render *r = ctx;
    rs_buf *out = r->out;
    int rc;
    if ((rc = rs_buf_addf(out, "{\"change\":%lld,\"thread_id\":", (long long)c->change)) ||
        (rc = rs_buf_add_json_string(out, c->thread_id, strlen(c->thread_id))) ||
        (rc = rs_buf_addlit(out, ",\"run_id\":")) ||
        (rc = rs_buf_add_json_string(out, c->run_id, strlen(c->run_id))))
        return rc;
    if (c->deleted)
        rc = c->expired ? rs_buf_addlit(out, ",\"deleted\":true,\"expired\":true}\n")
                        : rs_buf_addlit(out, ",\"deleted\":true}\n");
    else if (!(rc = rs_buf_addf(out, ",\"upper_seq\":%lld,\"events\":%lld,\"status\":",
                                (long long)c->upper_seq, (long long)c->events)) &&
             !(rc = add_str_or_null(out, c->status)) && !(rc = rs_buf_addlit(out, ",\"seal\":")) &&
             !(rc = add_str_or_null(out, c->seal)) &&
             !(rc = rs_buf_addlit(out, ",\"deleted\":false,\"at\":")) &&
             !(rc = add_str_or_null(out, c->at && *c->at ? c->at : NULL)))
        rc = rs_buf_addlit(out, "}\n");
    if (!rc && c->change > r->last)
        r->last = c->change;
    return rc;
}

int rfs_changes_render(rs_store *s, const char *user, const char *only_thread, int64_t after,
                       rs_buf *out, int64_t *last, rs_err *err)
{
    render r = {.out = out, .last = last ? *last : 0};
    int rc = rs_store_changes(s, after, user, only_thread, line, &r, err);
    if (last)
        *last = r.last;
    return rc;
}
