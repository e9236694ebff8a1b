/* search_run.c — a search over a scope: the rows a backend's index says may match, or every
 * row of the scope's threads in turn, each decided by rs_search_match. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "store_int.h"
#include "rs_util.h"

typedef struct search_cursor {
    rs_cursor base;
    rs_store *s;
    rs_search *q;
    char *user, *run_id;
    char **threads; /* the scope's threads, bytewise order (a scan) */
    size_t n_threads, next_thread;
    char *after_thread; /* NULL: from the start */
    int64_t after_seq;
    rs_cursor *inner; /* the backend's candidates, or the current thread's rows */
    int indexed;      /* inner covers the whole scope */
    rs_err err;
} search_cursor;

static int by_bytes(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *dup_or_null(const char *s, int *rc)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *rc = -ENOMEM;
    return d;
}

static int threads_load(search_cursor *c, const char *thread_id, rs_err *err)
{
    size_t cap = 0;
    int rc = 0;
    if (thread_id) {
        if ((rc = rs_array_grow(&c->threads, &cap, 1, sizeof *c->threads)) ||
            !(c->threads[0] = strdup(thread_id)))
            return rs_err_set(err, -ENOMEM, "out of memory");
        c->n_threads = 1;
        return 0;
    }
    rs_names *names;
    if ((rc = rs_store_names(c->s, RS_NAMES_THREADS, NULL, NULL, c->user, &names, err)))
        return rc;
    const char *v;
    while ((rc = rs_names_next(names, &v)) == 1) {
        if ((rc = rs_array_grow(&c->threads, &cap, c->n_threads + 1, sizeof *c->threads)) ||
            !(c->threads[c->n_threads] = strdup(v))) {
            rc = rs_err_set(err, -ENOMEM, "out of memory");
            break;
        }
        c->n_threads++;
    }
    rs_names_free(names);
    if (rc < 0)
        return rc;
    qsort(c->threads, c->n_threads, sizeof *c->threads, by_bytes);
    return 0;
}

/* The next thread's rows, narrowed by a type or category the query requires. 0 with
 * c->inner set, 1 when no thread is left. */
static int scan_open(search_cursor *c)
{
    const char *types[1];
    for (;;) {
        if (c->next_thread >= c->n_threads)
            return 1;
        const char *t = c->threads[c->next_thread++];
        int cmp = c->after_thread ? strcmp(t, c->after_thread) : 1;
        if (cmp < 0)
            continue;
        rs_query q = RS_QUERY_INIT;
        q.thread_id = t;
        q.run_id = c->run_id;
        q.user = c->user;
        q.after_seq = cmp == 0 ? c->after_seq : 0;
        for (size_t i = 0; i < c->q->n; i++) {
            const rs_term *term = &c->q->terms[i];
            if (term->negate)
                continue;
            if (term->kind == RS_TERM_TYPE && !q.event_types) {
                types[0] = term->text;
                q.event_types = types;
                q.n_event_types = 1;
            } else if (term->kind == RS_TERM_CATEGORY && !q.category) {
                q.category = term->text;
            }
        }
        int rc = rs_store_query(c->s, &q, &c->inner, &c->err);
        /* A thread deleted since it was listed has no rows to show. */
        if (rc == -ENOENT)
            continue;
        return rc;
    }
}

static int search_next(rs_cursor *base, const rs_record **out)
{
    search_cursor *c = (search_cursor *)base;
    for (;;) {
        if (!c->inner) {
            int rc = c->indexed ? 1 : scan_open(c);
            if (rc)
                return rc > 0 ? 0 : rc;
        }
        const rs_record *rec;
        int rc = rs_cursor_next(c->inner, &rec);
        if (rc == 1) {
            /* A row the backend rendered: where its content and metadata are is known. */
            const rs_event_spans *sp = rec == &c->inner->rec ? &c->inner->spans : NULL;
            if ((rc = rs_search_match_at(c->q, rec, sp)) == 1) {
                *out = rec;
                base->row_id = c->inner->row_id;
            }
            if (rc)
                return rc;
            continue;
        }
        if (rc < 0)
            return rc;
        rs_cursor_free(c->inner);
        c->inner = NULL;
        if (c->indexed)
            return 0;
    }
}

static void search_free(rs_cursor *base)
{
    search_cursor *c = (search_cursor *)base;
    rs_cursor_free(c->inner);
    for (size_t i = 0; i < c->n_threads; i++)
        free(c->threads[i]);
    free(c->threads);
    free(c->user);
    free(c->run_id);
    free(c->after_thread);
    free(c);
}

int rs_store_search(rs_store *s, rs_search *q, const char *thread_id, const char *run_id,
                    const char *user, const char *after_thread, int64_t after_seq, rs_cursor **out,
                    rs_err *err)
{
    if ((thread_id && !rs_id_valid(thread_id)) || (run_id && (!thread_id || !rs_id_valid(run_id))))
        return rs_err_set(err, -EINVAL, "ids are 1-64 of [A-Za-z0-9_-]");
    search_cursor *c = calloc(1, sizeof *c);
    if (!c)
        return rs_err_set(err, -ENOMEM, "out of memory");
    c->base.next = search_next;
    c->base.free = search_free;
    c->base.rec.line = NULL;
    c->s = s;
    c->q = q;
    c->after_seq = after_seq;
    int rc = 0;
    c->user = dup_or_null(user, &rc);
    c->run_id = dup_or_null(run_id, &rc);
    c->after_thread = dup_or_null(after_thread, &rc);
    if (rc) {
        search_free(&c->base);
        return rs_err_set(err, rc, "out of memory");
    }
    /* The index narrows when it can (-ENOSYS: it cannot for this query or this store). */
    rc = s->ops->search ? s->ops->search(s->be, q, thread_id, run_id, user, after_thread, after_seq,
                                         &c->inner, err)
                        : -ENOSYS;
    c->indexed = rc == 0;
    if (rc == -ENOSYS)
        rc = threads_load(c, thread_id, err);
    if (rc) {
        search_free(&c->base);
        return rc;
    }
    *out = &c->base;
    return 0;
}

int64_t rs_search_row_id(const rs_cursor *c)
{
    return c->row_id;
}

/* Ids asked of the backend at once: a bounded statement (PostgreSQL's is their list). */
#define ROWS_CHUNK 4096

typedef struct rows_cursor {
    rs_cursor base;
    rs_store *s;
    const int64_t *ids;
    size_t n, at;
    rs_cursor *inner; /* the backend's rows of the current chunk */
    rs_err err;
} rows_cursor;

static int rows_next(rs_cursor *base, const rs_record **out)
{
    rows_cursor *c = (rows_cursor *)base;
    for (;;) {
        if (!c->inner) {
            if (c->at >= c->n)
                return 0;
            size_t k = c->n - c->at < ROWS_CHUNK ? c->n - c->at : ROWS_CHUNK;
            int rc = c->s->ops->search_rows(c->s->be, c->ids + c->at, k, &c->inner, &c->err);
            if (rc)
                return rc;
            c->at += k;
        }
        int rc = rs_cursor_next(c->inner, out);
        if (rc == 1)
            base->row_id = c->inner->row_id;
        if (rc)
            return rc;
        rs_cursor_free(c->inner);
        c->inner = NULL;
    }
}

static void rows_free(rs_cursor *base)
{
    rows_cursor *c = (rows_cursor *)base;
    rs_cursor_free(c->inner);
    free(c);
}

int rs_store_search_rows(rs_store *s, const int64_t *ids, size_t n, rs_cursor **out, rs_err *err)
{
    if (!s->ops->search_rows)
        return rs_err_set(err, -ENOSYS, "this store cannot read rows by their ids");
    rows_cursor *c = calloc(1, sizeof *c);
    if (!c)
        return rs_err_set(err, -ENOMEM, "out of memory");
    c->base.next = rows_next;
    c->base.free = rows_free;
    c->s = s;
    c->ids = ids;
    c->n = n;
    *out = &c->base;
    return 0;
}
