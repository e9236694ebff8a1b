/* projection.c — the read-only views DeerFlow's gateway computes from events: the thread
 * history page (history.jsonl, spec 7.1) and the latest workspace changes (spec 7.5).
 * Read through rs_store_query; the history streams, holding only the hidden-run set, which
 * a reader computes once (rs_history) rather than once per piece it reads. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "event.h"
#include "json.h"
#include "runstore.h"
#include "rs_util.h"
#include "store_int.h"
#include "rowview.h"

static int starts_with(const rs_buf *b, const char *prefix)
{
    size_t n = strlen(prefix);
    return b->len >= n && memcmp(b->buf, prefix, n) == 0;
}

/* ---- hidden runs ---------------------------------------------------------------------------
 * runfs has no runs table: a run's facts come from its run.start and run.terminal rows. */

typedef struct run_fact {
    char *run_id;
    char *source; /* metadata.regenerate_from_run_id, NULL when none */
    int is_start; /* per row: run.start (else run.terminal) */
    int edit;     /* metadata.replay_kind == "edit" */
    int has_terminal;
    char status[16]; /* run.terminal content.status */
    char order_time[RS_TIME_LEN + 1];
    int64_t seq;
} run_fact;

typedef struct fact_list {
    run_fact *v;
    size_t n, cap;
} fact_list;

static void facts_free(fact_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].run_id);
        free(l->v[i].source);
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

typedef struct scratch {
    rs_buf meta;
    rs_buf content;
    rs_buf str;
} scratch;

static void scratch_release(scratch *sc)
{
    rs_buf_release(&sc->meta);
    rs_buf_release(&sc->content);
    rs_buf_release(&sc->str);
}

/* One run.start or run.terminal row as a fact. */
static int fact_add(fact_list *l, const rs_row *row, scratch *sc)
{
    if (rs_array_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v))
        return -ENOMEM;
    run_fact *f = &l->v[l->n];
    memset(f, 0, sizeof *f);
    if (!(f->run_id = strdup(row->run_id ? row->run_id : "")))
        return -ENOMEM;
    l->n++;
    f->seq = row->seq;
    f->is_start = strcmp(row->event_type, "run.start") == 0;
    if (!row->created_at ||
        rs_time_parse(row->created_at, strlen(row->created_at), f->order_time, NULL) != 0)
        f->order_time[0] = '\0';
    unsigned markers;
    int rc = rs_view_meta(&sc->meta, row, &markers);
    if (rc)
        return rc;
    if (rs_view_get_str(sc->meta.buf, sc->meta.len, "regenerate_from_run_id", &sc->str) &&
        sc->str.len && !(f->source = strdup(sc->str.buf)))
        return -ENOMEM;
    f->edit = rs_view_get_str(sc->meta.buf, sc->meta.len, "replay_kind", &sc->str) &&
              strcmp(sc->str.buf, "edit") == 0;
    if (!f->is_start) {
        f->has_terminal = 1;
        if ((rc = rs_view_content(&sc->content, row, markers)))
            return rc;
        if (rs_view_get_str(sc->content.buf, sc->content.len, "status", &sc->str) &&
            sc->str.len < sizeof f->status)
            memcpy(f->status, sc->str.buf, sc->str.len + 1);
    }
    return 0;
}

static int cmp_run_seq(const void *a, const void *b)
{
    const run_fact *x = a, *y = b;
    int c = strcmp(x->run_id, y->run_id);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* Fold the per-row facts into one fact per run: the first run.start orders the run and
 * names its source; a run.terminal gives the status and may carry the relation too. */
static void facts_merge(fact_list *l)
{
    if (!l->n)
        return;
    qsort(l->v, l->n, sizeof *l->v, cmp_run_seq);
    size_t w = 0;
    for (size_t i = 0; i < l->n;) {
        size_t j = i + 1;
        while (j < l->n && strcmp(l->v[j].run_id, l->v[i].run_id) == 0)
            j++;
        run_fact out = l->v[i];
        size_t first_start = j;
        for (size_t k = i; k < j; k++)
            if (l->v[k].is_start) {
                first_start = k;
                break;
            }
        if (first_start < j) {
            out.seq = l->v[first_start].seq;
            memcpy(out.order_time, l->v[first_start].order_time, sizeof out.order_time);
            out.source = l->v[first_start].source;
        } else
            out.source = NULL;
        out.edit = 0;
        out.has_terminal = 0;
        out.status[0] = '\0';
        for (size_t k = i; k < j; k++) {
            run_fact *f = &l->v[k];
            out.edit |= f->edit;
            if (!out.source && f->source)
                out.source = f->source;
            if (f->has_terminal && !out.has_terminal) {
                out.has_terminal = 1;
                memcpy(out.status, f->status, sizeof out.status);
            }
        }
        /* Keep out's strings, free the rest of the group. */
        for (size_t k = i; k < j; k++) {
            if (l->v[k].run_id != out.run_id)
                free(l->v[k].run_id);
            if (l->v[k].source != out.source)
                free(l->v[k].source);
        }
        l->v[w++] = out;
        i = j;
    }
    l->n = w;
}

static int status_is(const run_fact *f, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(f->status, *set) == 0)
            return 1;
    return 0;
}

static int cmp_edit_order(const void *a, const void *b)
{
    const run_fact *x = *(run_fact *const *)a, *y = *(run_fact *const *)b;
    int c = strcmp(x->source, y->source);
    if (!c)
        c = strcmp(x->order_time, y->order_time);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct hidden_set {
    const char **ids; /* sorted; the strings belong to the fact list */
    size_t n;
} hidden_set;

static int hidden_add(hidden_set *h, size_t cap, const char *id)
{
    if (h->n >= cap)
        return -ENOMEM;
    h->ids[h->n++] = id;
    return 0;
}

/* spec 7.1 "Hidden runs", with run facts standing in for the runs table. */
static int hidden_compute(const fact_list *l, hidden_set *h)
{
    static const char *const failed[] = {"error", "timeout", "interrupted", NULL};
    static const char *const success[] = {"success", NULL};
    size_t cap = 2 * l->n + 1;
    h->ids = malloc(cap * sizeof *h->ids);
    run_fact **edits = malloc((l->n + 1) * sizeof *edits);
    int rc = -ENOMEM;
    if (!h->ids || !edits)
        goto out;
    h->n = 0;
    size_t n_edits = 0;
    rc = 0;
    for (size_t i = 0; i < l->n && !rc; i++) {
        run_fact *f = &l->v[i];
        if (!f->source)
            continue;
        if (f->edit)
            edits[n_edits++] = f;
        else if (f->has_terminal && status_is(f, success))
            rc = hidden_add(h, cap, f->source); /* a superseded regenerate source */
    }
    qsort(edits, n_edits, sizeof *edits, cmp_edit_order);
    for (size_t i = 0; i < n_edits && !rc; i++) {
        run_fact *f = edits[i];
        int newest = i + 1 == n_edits || strcmp(edits[i + 1]->source, f->source) != 0;
        /* The newest attempt decides for its source: pending, running or success hide it. */
        if (newest && (!f->has_terminal || status_is(f, success)))
            rc = hidden_add(h, cap, f->source);
        if (!rc && f->has_terminal && status_is(f, failed))
            rc = hidden_add(h, cap, f->run_id);
    }
    if (!rc)
        qsort(h->ids, h->n, sizeof *h->ids, cmp_str);
out:
    free(edits);
    return rc;
}

static int hidden_has(const hidden_set *h, const char *run_id)
{
    return h->n && bsearch(&run_id, h->ids, h->n, sizeof *h->ids, cmp_str) != NULL;
}

/* ---- history.jsonl -------------------------------------------------------------------------- */

struct rs_history {
    char *thread_id;
    char *user;
    fact_list facts; /* owns the strings hidden points to */
    hidden_set hidden;
    scratch sc; /* rs_history_shows' (the cursors have their own) */
};

typedef struct hist_cursor {
    rs_cursor base;
    rs_cursor *inner;
    const rs_history *h;
    rs_history *owned; /* rs_store_history's own state, freed with the cursor */
    scratch sc;
} hist_cursor;

/* spec 7.1 row filter: middleware callers and subagent AI messages (the row's own), and
 * hidden runs (which later rows decide). */
static int row_hides(scratch *sc, const rs_row *row, int *hide)
{
    *hide = 1;
    unsigned markers;
    int rc = rs_view_meta(&sc->meta, row, &markers);
    if (rc)
        return rc;
    rs_buf *caller = &sc->str;
    if (!rs_view_get_str(sc->meta.buf, sc->meta.len, "caller", caller)) {
        *hide = 0;
        return 0;
    }
    if (starts_with(caller, "middleware:"))
        return 0;
    if (!starts_with(caller, "subagent:")) {
        *hide = 0;
        return 0;
    }
    if ((rc = rs_view_content(&sc->content, row, markers)))
        return rc;
    rs_buf *type = &sc->str;
    if (!rs_view_get_str(sc->content.buf, sc->content.len, "type", type) || !type->len)
        rs_view_get_str(sc->content.buf, sc->content.len, "role", type);
    *hide = strcmp(type->buf, "ai") == 0 || strcmp(type->buf, "assistant") == 0;
    return 0;
}

static int history_hides(const rs_history *h, scratch *sc, const rs_row *row, int *hide)
{
    *hide = 1;
    if (hidden_has(&h->hidden, row->run_id ? row->run_id : ""))
        return 0;
    return row_hides(sc, row, hide);
}

static int hist_next(rs_cursor *base, const rs_record **out)
{
    hist_cursor *c = (hist_cursor *)base;
    for (;;) {
        const rs_record *rec;
        int rc = rs_cursor_next(c->inner, &rec);
        if (rc <= 0)
            return rc;
        int hide;
        if ((rc = history_hides(c->h, &c->sc, &c->inner->row, &hide)))
            return rc;
        if (hide)
            continue;
        base->row = c->inner->row;
        base->rec = *rec;
        *out = rec;
        return 1;
    }
}

static void hist_free(rs_cursor *base)
{
    hist_cursor *c = (hist_cursor *)base;
    rs_cursor_free(c->inner);
    rs_history_free(c->owned);
    scratch_release(&c->sc);
    rs_buf_release(&base->line);
    free(c);
}

/* The thread's run facts, read once from its run.start and run.terminal rows. */
static int facts_load(rs_store *s, const char *thread_id, const char *user, fact_list *l,
                      rs_err *err)
{
    static const char *const types[] = {"run.start", "run.terminal"};
    rs_query q = RS_QUERY_INIT;
    q.thread_id = thread_id;
    q.user = user;
    q.category = "trace"; /* both are trace events: the category index finds them */
    q.event_types = types;
    q.n_event_types = 2;
    rs_cursor *cur;
    int rc = rs_store_query(s, &q, &cur, err);
    if (rc)
        return rc;
    scratch sc = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    const rs_record *rec;
    while ((rc = rs_cursor_next(cur, &rec)) > 0)
        if ((rc = fact_add(l, &cur->row, &sc))) {
            rs_err_set(err, rc, "out of memory reading run facts");
            break;
        }
    rs_cursor_free(cur);
    scratch_release(&sc);
    if (rc < 0)
        return rc;
    facts_merge(l);
    return 0;
}

void rs_history_free(rs_history *h)
{
    if (!h)
        return;
    free(h->hidden.ids);
    facts_free(&h->facts);
    scratch_release(&h->sc);
    free(h->thread_id);
    free(h->user);
    free(h);
}

int rs_history_open(rs_store *s, const char *thread_id, const char *user, rs_history **out,
                    rs_err *err)
{
    rs_history *h = calloc(1, sizeof *h);
    if (h)
        h->sc = (scratch){RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    if (!h || !(h->thread_id = strdup(thread_id)) || (user && !(h->user = strdup(user)))) {
        rs_history_free(h);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    int rc = facts_load(s, thread_id, user, &h->facts, err);
    if (!rc && (rc = hidden_compute(&h->facts, &h->hidden)))
        rs_err_set(err, rc, "out of memory computing hidden runs");
    if (rc) {
        rs_history_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

/* The history rows among the message rows q picks (q: the thread's, h's owner's). */
static int history_cursor(rs_store *s, const rs_history *h, rs_query *q, rs_cursor **out,
                          rs_err *err)
{
    hist_cursor *c = calloc(1, sizeof *c);
    if (!c)
        return rs_err_set(err, -ENOMEM, "out of memory");
    c->base.next = hist_next;
    c->base.free = hist_free;
    c->base.line = (rs_buf)RS_BUF_INIT;
    c->sc = (scratch){RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    c->h = h;
    q->thread_id = h->thread_id;
    q->user = h->user;
    q->messages_only = 1;
    int rc = rs_store_query(s, q, &c->inner, err);
    if (rc) {
        hist_free(&c->base);
        return rc;
    }
    *out = &c->base;
    return 0;
}

int rs_history_query(rs_store *s, const rs_history *h, int64_t after_seq, rs_cursor **out,
                     rs_err *err)
{
    rs_query q = RS_QUERY_INIT;
    q.after_seq = after_seq > 0 ? after_seq : 0;
    return history_cursor(s, h, &q, out, err);
}

int rs_history_newest(rs_store *s, const rs_history *h, int64_t before_seq, int64_t limit,
                      rs_cursor **out, rs_err *err)
{
    rs_query q = RS_QUERY_INIT;
    q.before_seq = before_seq;
    q.limit = limit;
    q.newest = 1;
    return history_cursor(s, h, &q, out, err);
}

int rs_history_shows(rs_history *h, const rs_cursor *c, int *shows)
{
    const rs_row *row = &c->row;
    *shows = 0;
    if (!row->category || strcmp(row->category, "message") != 0)
        return 0;
    int hide;
    int rc = history_hides(h, &h->sc, row, &hide);
    *shows = !rc && !hide;
    return rc;
}

int rs_history_passes(rs_history *h, const rs_cursor *c, int *passes)
{
    const rs_row *row = &c->row;
    *passes = 0;
    if (!row->category || strcmp(row->category, "message") != 0)
        return 0;
    int hide;
    int rc = row_hides(&h->sc, row, &hide);
    *passes = !rc && !hide;
    return rc;
}

int rs_history_run_hidden(const rs_history *h, const char *run_id)
{
    return hidden_has(&h->hidden, run_id ? run_id : "");
}

int rs_store_history(rs_store *s, const char *thread_id, const char *user, int64_t after_seq,
                     rs_cursor **out, rs_err *err)
{
    rs_history *h;
    int rc = rs_history_open(s, thread_id, user, &h, err);
    if (rc)
        return rc;
    if ((rc = rs_history_query(s, h, after_seq, out, err))) {
        rs_history_free(h);
        return rc;
    }
    ((hist_cursor *)*out)->owned = h;
    return 0;
}

/* ---- workspace-changes.json ----------------------------------------------------------------- */

static const char ws_absent[] =
    "{\"available\":false,\"version\":1,\"summary\":{\"created\":0,\"modified\":0,\"deleted\":0,"
    "\"symlink_created\":0,\"additions\":0,\"deletions\":0,\"truncated\":false},\"files\":[],"
    "\"limits\":{}}\n";

static const char ws_zero_summary[] =
    "{\"created\":0,\"modified\":0,\"deleted\":0,\"symlink_created\":0,\"additions\":0,"
    "\"deletions\":0,\"truncated\":false}";

typedef struct ws_render {
    rs_buf *out;
    int has_summary;
    int has_files;
    int rc;
} ws_render;

static int on_payload_member(void *ctx, const char *key, size_t key_len, const char *val,
                             size_t val_len)
{
    ws_render *w = ctx;
    if (key_len == 9 && memcmp(key, "available", 9) == 0)
        return 0; /* ours: always true, always first */
    w->has_summary |= key_len == 7 && memcmp(key, "summary", 7) == 0;
    w->has_files |= key_len == 5 && memcmp(key, "files", 5) == 0;
    if ((w->rc = rs_buf_addlit(w->out, ",\"")) || (w->rc = rs_buf_add(w->out, key, key_len)) ||
        (w->rc = rs_buf_addlit(w->out, "\":")) || (w->rc = rs_buf_add(w->out, val, val_len)))
        return 1;
    return 0;
}

int rs_store_workspace_changes(rs_store *s, const rs_target *t, rs_buf *out, rs_err *err)
{
    static const char *const types[] = {"workspace_changes"};
    rs_query q = rs_query_of_type(t, types, 10);
    if (!t->run_id)
        return rs_err_set(err, -EINVAL, "workspace changes need a run id");
    rs_log_facts facts;
    int rc = rs_store_facts(s, t, &facts, err);
    if (rc == -ENOENT)
        rc = 0; /* a run that is not there has no changes */
    if (rc)
        return rc;
    /* A log that knows which row is shown reads that one (none: the absent document). */
    if (facts.known) {
        q.after_seq = facts.ws_seq ? facts.ws_seq - 1 : INT64_MAX - 1;
        q.before_seq = facts.ws_seq ? facts.ws_seq + 1 : 0;
    }
    rs_cursor *cur;
    if ((rc = rs_store_query(s, &q, &cur, err)))
        return rc;
    scratch sc = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    int found = 0;
    const rs_record *rec;
    /* The last of (at most) ten rows: DeerFlow's "latest". */
    while ((rc = rs_cursor_next(cur, &rec)) > 0) {
        unsigned markers;
        if ((rc = rs_view_meta(&sc.meta, &cur->row, &markers)) ||
            (rc = rs_view_content(&sc.content, &cur->row, markers)))
            break;
        found = 1;
    }
    rs_cursor_free(cur);
    const char *payload = NULL;
    size_t payload_len = 0;
    if (rc >= 0 && found) {
        const char *v;
        size_t n;
        if (rs_view_get(sc.meta.buf, sc.meta.len, "workspace_changes", &v, &n) && v[0] == '{') {
            payload = v;
            payload_len = n;
        } else if (sc.content.len && sc.content.buf[0] == '{') {
            payload = sc.content.buf;
            payload_len = sc.content.len;
        }
    }
    if (rc >= 0 && !payload) {
        rc = rs_buf_add(out, ws_absent, sizeof ws_absent - 1);
    } else if (rc >= 0) {
        size_t start = out->len;
        ws_render w = {.out = out};
        rc = rs_buf_addlit(out, "{\"available\":true");
        if (!rc && rs_json_members(payload, payload_len, on_payload_member, &w) < 0)
            rc = -EINVAL;
        if (!rc)
            rc = w.rc;
        if (rc ||
            (!w.has_summary && ((rc = rs_buf_addlit(out, ",\"summary\":")) ||
                                (rc = rs_buf_addstr(out, ws_zero_summary)))) ||
            (!w.has_files && (rc = rs_buf_addlit(out, ",\"files\":[]"))) ||
            (rc = rs_buf_addlit(out, "}\n")))
            rs_buf_setlen(out, start);
    }
    scratch_release(&sc);
    if (rc < 0)
        rs_err_set(err, rc, "reading workspace changes of run %s: %s", t->run_id,
                   rs_errno_name(rc));
    return rc < 0 ? rc : 0;
}
