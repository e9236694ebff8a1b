/* stats.c — see stats.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glance.h"
#include "stats.h"
#include "rs_util.h"

typedef struct tool_count {
    int64_t calls, results, errors;
} tool_count;

/* What is a run's own: its outcome, its times, its calls and tasks. */
typedef struct run_acc {
    int64_t events;
    int64_t first_us, last_us;
    char first_at[40], last_at[40]; /* created_at literals, with quotes */
    int terminal;                   /* a run.terminal was met */
    char *status;                   /* its content.status (NULL: not a string) */
    rfs_calls *calls;
    rfs_map *tasks; /* task id -> task */
} run_acc;

typedef struct task {
    int ended;
    char *status; /* the first subagent.end's content.status */
} task;

struct rfs_stats {
    char *thread_id, *run_id;
    rfs_map *runs; /* run id -> run_acc, in order of first event */
    run_acc *cur;
    char cur_id[RS_ID_MAX + 1];
    int64_t events;
    rfs_map *categories, *types, *models, *tools, *middleware; /* -> int64_t, tool_count */
    int64_t model_count, latency_total, latency_max, usage[RFS_USAGE_N];
    int64_t tool_count, tool_results, tool_errors;
    int64_t task_usage[RFS_USAGE_N];
    int64_t run_errors, llm_errors;
};

int rfs_stats_new(rfs_stats **out, const char *thread_id, const char *run_id)
{
    rfs_stats *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    if (!(s->thread_id = strdup(thread_id)) || (run_id && !(s->run_id = strdup(run_id))) ||
        rfs_map_new(&s->runs, sizeof(run_acc)) || rfs_map_new(&s->categories, sizeof(int64_t)) ||
        rfs_map_new(&s->types, sizeof(int64_t)) || rfs_map_new(&s->models, sizeof(int64_t)) ||
        rfs_map_new(&s->tools, sizeof(tool_count)) ||
        rfs_map_new(&s->middleware, sizeof(int64_t))) {
        rfs_stats_free(s);
        return -ENOMEM;
    }
    *out = s;
    return 0;
}

static void run_release(run_acc *r)
{
    free(r->status);
    rfs_calls_free(r->calls);
    if (r->tasks)
        for (size_t i = 0; i < rfs_map_count(r->tasks); i++)
            free(((task *)rfs_map_val(r->tasks, i))->status);
    rfs_map_free(r->tasks);
}

void rfs_stats_free(rfs_stats *s)
{
    if (!s)
        return;
    if (s->runs)
        for (size_t i = 0; i < rfs_map_count(s->runs); i++)
            run_release(rfs_map_val(s->runs, i));
    rfs_map_free(s->runs);
    rfs_map_free(s->categories);
    rfs_map_free(s->types);
    rfs_map_free(s->models);
    rfs_map_free(s->tools);
    rfs_map_free(s->middleware);
    free(s->thread_id);
    free(s->run_id);
    free(s);
}

static int count(rfs_map *m, const char *key, size_t len)
{
    int64_t *n = rfs_map_get(m, key, len, 1);
    if (!n)
        return -ENOMEM;
    (*n)++;
    return 0;
}

static int count_text(rfs_map *m, rfs_span s)
{
    int64_t *n = rfs_map_get_text(m, s, 1);
    if (!n)
        return -ENOMEM;
    (*n)++;
    return 0;
}

static void add_usage(int64_t *sum, const int64_t *usage)
{
    for (int i = 0; i < RFS_USAGE_N; i++)
        if (usage[i] >= 0)
            sum[i] += usage[i];
}

static run_acc *run_of(rfs_stats *s, const char *run_id)
{
    if (s->cur && strcmp(s->cur_id, run_id) == 0)
        return s->cur;
    run_acc *r = rfs_map_get(s->runs, run_id, strlen(run_id), 1);
    if (!r)
        return NULL;
    if (!r->calls && (rfs_calls_new(&r->calls) || rfs_map_new(&r->tasks, sizeof(task))))
        return NULL;
    /* The run met last is remembered (a run id always fits: ids are at most RS_ID_MAX). */
    s->cur = rs_fmt(s->cur_id, sizeof s->cur_id, "%s", run_id) < 0 ? NULL : r;
    return r;
}

int rfs_stats_add_run(rfs_stats *s, const char *run_id)
{
    return run_of(s, run_id) ? 0 : -ENOMEM;
}

static int count_call(void *ctx, rfs_call *call)
{
    rfs_stats *s = ctx;
    tool_count *t = rfs_map_get(s->tools, call->name, strlen(call->name), 1);
    if (!t)
        return -ENOMEM;
    t->calls++;
    s->tool_count++;
    return 0;
}

static int task_event(run_acc *r, const rfs_ev *ev, rfs_stats *s)
{
    task *t = rfs_map_get_text(r->tasks, ev->task_id.p ? ev->task_id : (rfs_span){"\"\"", 2}, 1);
    if (!t)
        return -ENOMEM;
    if (ev->kind != RFS_EV_TASK_END || t->ended)
        return 0;
    t->ended = 1;
    add_usage(s->task_usage, ev->usage);
    if (ev->status.p) {
        rs_buf st = RS_BUF_INIT;
        if (rfs_jl_text(&st, ev->status, 0) || !(t->status = rs_buf_detach(&st, NULL))) {
            rs_buf_release(&st);
            return -ENOMEM;
        }
    }
    return 0;
}

/* A created_at literal (with its quotes) into dst, or null when the row has none. */
static void literal(char *dst, rfs_span v)
{
    int ok = v.p && v.n < 40;
    memcpy(dst, ok ? v.p : "null", ok ? v.n : 4);
    dst[ok ? v.n : 4] = '\0';
}

int rfs_stats_feed(rfs_stats *s, const rfs_ev *ev)
{
    const rs_record *rec = ev->rec;
    run_acc *r = run_of(s, rec->run_id);
    if (!r)
        return -ENOMEM;
    if (r->events++ == 0) {
        r->first_us = ev->t_us;
        literal(r->first_at, ev->created_at);
    }
    r->last_us = ev->t_us;
    literal(r->last_at, ev->created_at);
    s->events++;
    int rc;
    if ((rc = count(s->categories, rec->category, strlen(rec->category))) ||
        (rc = count(s->types, rec->event_type, strlen(rec->event_type))))
        return rc;
    switch (ev->kind) {
    case RFS_EV_MODEL:
        s->model_count++;
        if (ev->latency_ms >= 0) {
            s->latency_total += ev->latency_ms;
            if (ev->latency_ms > s->latency_max)
                s->latency_max = ev->latency_ms;
        }
        add_usage(s->usage, ev->usage);
        if (ev->model.p && (rc = count_text(s->models, ev->model)))
            return rc;
        return rfs_calls_add(r->calls, ev, count_call, s);
    case RFS_EV_RESULT: {
        rfs_call *call = rfs_calls_take(r->calls, ev);
        if (!call)
            return 0;
        tool_count *t = rfs_map_get(s->tools, call->name, strlen(call->name), 1);
        rfs_call_free(call);
        if (!t)
            return -ENOMEM;
        t->results++;
        s->tool_results++;
        t->errors += ev->error;
        s->tool_errors += ev->error;
        return 0;
    }
    case RFS_EV_TASK_START:
    case RFS_EV_TASK_END: return task_event(r, ev, s);
    case RFS_EV_TERMINAL:
        if (r->terminal)
            return 0;
        r->terminal = 1;
        if (ev->status.p) {
            rs_buf st = RS_BUF_INIT;
            if (rfs_jl_text(&st, ev->status, 0) || !(r->status = rs_buf_detach(&st, NULL))) {
                rs_buf_release(&st);
                return -ENOMEM;
            }
        }
        return 0;
    case RFS_EV_ERROR:
        if (rec->event_type[0] == 'r')
            s->run_errors++;
        else
            s->llm_errors++;
        return 0;
    case RFS_EV_MIDDLEWARE: return count(s->middleware, ev->tag, strlen(ev->tag));
    default: return 0;
    }
}

/* ---- the document ---- */

/* {"name":value,...} of a map, names in bytewise order, each value as add_val writes it. */
static int add_map(rs_buf *out, const rfs_map *m, int (*add_val)(rs_buf *, const void *))
{
    size_t *idx;
    int rc = rfs_map_sorted(m, &idx);
    if (rc)
        return rc;
    rc = rs_buf_addch(out, '{');
    for (size_t i = 0; !rc && i < rfs_map_count(m); i++) {
        size_t len;
        const char *k = rfs_map_key(m, idx[i], &len);
        if (!(rc = i ? rs_buf_addch(out, ',') : 0) && !(rc = rs_buf_add_json_string(out, k, len)))
            rc = add_val(out, rfs_map_val(m, idx[i]));
    }
    free(idx);
    return rc ? rc : rs_buf_addch(out, '}');
}

static int add_count(rs_buf *out, const void *v)
{
    return rs_buf_addf(out, ":%lld", (long long)*(const int64_t *)v);
}

static int add_tool(rs_buf *out, const void *v)
{
    const tool_count *t = v;
    return rs_buf_addf(out, ":{\"calls\":%lld,\"results\":%lld,\"errors\":%lld}",
                       (long long)t->calls, (long long)t->results, (long long)t->errors);
}

/* {"name":n,...} of a map of counts. */
static int add_counts(rs_buf *out, const rfs_map *m)
{
    return add_map(out, m, add_count);
}

static int add_usage_doc(rs_buf *out, const int64_t *usage)
{
    return rs_buf_addf(out, "{\"input_tokens\":%lld,\"output_tokens\":%lld,\"total_tokens\":%lld}",
                       (long long)usage[0], (long long)usage[1], (long long)usage[2]);
}

/* What the runs add up to beyond the plain counts. */
typedef struct totals {
    int64_t runs, no_terminal, unanswered, uncovered, sealed_runs, tasks;
    rfs_map *statuses, *task_status;
    const char *first_at, *last_at;
    int64_t first_us, last_us;
    const char *seal; /* a run's: "sealed", "partial" or NULL */
} totals;

/* A run's seal: its state and the events after it. */
static int read_seal(const char *run_id, rfs_seal_fn seal, void *ctx, totals *t)
{
    rs_buf doc = RS_BUF_INIT;
    int rc = seal ? seal(ctx, run_id, &doc) : 0;
    if (!rc && doc.len) {
        static const char *const names[] = {"state", "uncovered"};
        rfs_span v[2], d = {doc.buf, doc.len};
        while (d.n && d.p[d.n - 1] == '\n')
            d.n--;
        rfs_jl_members(d, names, v, 2);
        int64_t n = 0;
        t->seal = rfs_jl_str_is(v[0], "sealed")    ? "sealed"
                  : rfs_jl_str_is(v[0], "partial") ? "partial"
                                                   : NULL;
        if (t->seal) {
            t->sealed_runs++;
            t->uncovered += rfs_jl_count(v[1], &n) ? n : 0;
        }
    }
    rs_buf_release(&doc);
    return rc;
}

static int total_run(const char *run_id, run_acc *r, rfs_seal_fn seal, void *ctx, totals *t,
                     rs_buf *unanswered)
{
    int rc = 0;
    t->runs++;
    if (!r->terminal)
        t->no_terminal++;
    const char *st = r->status ? r->status : "null";
    if ((rc = count(t->statuses, st, strlen(st))))
        return rc;
    if (r->events && (!t->first_at || strcmp(r->first_at, t->first_at) < 0)) {
        t->first_at = r->first_at;
        t->first_us = r->first_us;
    }
    if (r->events && (!t->last_at || strcmp(r->last_at, t->last_at) > 0)) {
        t->last_at = r->last_at;
        t->last_us = r->last_us;
    }
    for (rfs_call *c = rfs_calls_first(r->calls); c && !rc; c = c->next) {
        t->unanswered++;
        if (unanswered->len > 1)
            rc = rs_buf_addch(unanswered, ',');
        if (!rc)
            rc = c->id ? rs_buf_add_json_string(unanswered, c->id, c->id_len)
                       : rs_buf_addlit(unanswered, "null");
    }
    for (size_t i = 0; !rc && i < rfs_map_count(r->tasks); i++) {
        task *k = rfs_map_val(r->tasks, i);
        const char *ks = k->status ? k->status : k->ended ? "null" : "unfinished";
        t->tasks++;
        rc = count(t->task_status, ks, strlen(ks));
    }
    return rc ? rc : read_seal(run_id, seal, ctx, t);
}

int rfs_stats_finish(rfs_stats *s, rfs_seal_fn seal, void *ctx, rs_buf *out)
{
    totals t = {0};
    rs_buf unanswered = RS_BUF_INIT;
    int rc = rfs_map_new(&t.statuses, sizeof(int64_t));
    if (!rc)
        rc = rfs_map_new(&t.task_status, sizeof(int64_t));
    if (!rc)
        rc = rs_buf_addch(&unanswered, '[');
    for (size_t i = 0; !rc && i < rfs_map_count(s->runs); i++)
        rc = total_run(rfs_map_key(s->runs, i, NULL), rfs_map_val(s->runs, i), seal, ctx, &t,
                       &unanswered);
    if (!rc)
        rc = rs_buf_addch(&unanswered, ']');
    int run = s->run_id != NULL;
    if (!rc && !(rc = rs_buf_addlit(out, "{\"thread_id\":")) &&
        !(rc = rs_buf_add_json_string(out, s->thread_id, strlen(s->thread_id)))) {
        if (run) {
            rc = rs_buf_addlit(out, ",\"run_id\":");
            if (!rc)
                rc = rs_buf_add_json_string(out, s->run_id, strlen(s->run_id));
        } else {
            rc = rs_buf_addf(out, ",\"runs\":%lld", (long long)t.runs);
        }
    }
    if (!rc)
        rc = rs_buf_addf(out, ",\"events\":%lld,\"first_at\":%s,\"last_at\":%s",
                         (long long)s->events, t.first_at ? t.first_at : "null",
                         t.last_at ? t.last_at : "null");
    if (!rc)
        rc = t.first_at ? rs_buf_addf(out, ",\"duration_ms\":%lld",
                                      (long long)((t.last_us - t.first_us) / 1000))
                        : rs_buf_addlit(out, ",\"duration_ms\":null");
    run_acc *only = run && rfs_map_count(s->runs) ? rfs_map_val(s->runs, 0) : NULL;
    if (!rc && run) {
        if (only && only->status) {
            rc = rs_buf_addlit(out, ",\"status\":");
            if (!rc)
                rc = rs_buf_add_json_string(out, only->status, strlen(only->status));
        } else {
            rc = rs_buf_addlit(out, ",\"status\":null");
        }
        if (!rc)
            rc = rs_buf_addf(out, ",\"seal\":%s%s%s", t.seal ? "\"" : "", t.seal ? t.seal : "null",
                             t.seal ? "\"" : "");
    } else if (!rc) {
        if (!(rc = rs_buf_addlit(out, ",\"statuses\":")))
            rc = add_counts(out, t.statuses);
    }
    if (rc || (rc = rs_buf_addlit(out, ",\"categories\":")) ||
        (rc = add_counts(out, s->categories)) || (rc = rs_buf_addlit(out, ",\"event_types\":")) ||
        (rc = add_counts(out, s->types)) ||
        (rc = rs_buf_addf(out,
                          ",\"model_calls\":{\"count\":%lld,\"latency_ms\":{\"total\":%lld,"
                          "\"max\":%lld},\"usage\":",
                          (long long)s->model_count, (long long)s->latency_total,
                          (long long)s->latency_max)) ||
        (rc = add_usage_doc(out, s->usage)) || (rc = rs_buf_addlit(out, ",\"models\":")) ||
        (rc = add_counts(out, s->models)) ||
        (rc = rs_buf_addf(out, "},\"tool_calls\":{\"count\":%lld,\"results\":%lld,\"errors\":%lld",
                          (long long)s->tool_count, (long long)s->tool_results,
                          (long long)s->tool_errors)) ||
        (rc = rs_buf_addlit(out, ",\"by_name\":")) || (rc = add_map(out, s->tools, add_tool)) ||
        (rc = rs_buf_addlit(out, ",\"unanswered\":")) ||
        (rc = rs_buf_add(out, unanswered.buf, unanswered.len)) ||
        (rc = rs_buf_addf(out,
                          "},\"subagents\":{\"count\":%lld,\"by_status\":", (long long)t.tasks)) ||
        (rc = add_counts(out, t.task_status)) || (rc = rs_buf_addlit(out, ",\"usage\":")) ||
        (rc = add_usage_doc(out, s->task_usage)) ||
        (rc = rs_buf_addf(out, "},\"errors\":{\"run.error\":%lld,\"llm.error\":%lld}",
                          (long long)s->run_errors, (long long)s->llm_errors)) ||
        (rc = rs_buf_addlit(out, ",\"middleware\":")) || (rc = add_counts(out, s->middleware)))
        goto done;
    if (run)
        rc = rs_buf_addf(out, ",\"gaps\":{\"no_terminal\":%s",
                         only && only->terminal ? "false" : "true");
    else
        rc = rs_buf_addf(out, ",\"gaps\":{\"no_terminal\":%lld", (long long)t.no_terminal);
    if (!rc)
        rc = rs_buf_addf(out, ",\"unanswered_tool_calls\":%lld", (long long)t.unanswered);
    if (!rc)
        rc = t.sealed_runs
                 ? rs_buf_addf(out, ",\"uncovered_by_seal\":%lld}}\n", (long long)t.uncovered)
                 : rs_buf_addlit(out, ",\"uncovered_by_seal\":null}}\n");
done:
    rfs_map_free(t.statuses);
    rfs_map_free(t.task_status);
    rs_buf_release(&unanswered);
    return rc;
}
