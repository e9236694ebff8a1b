/* timeline.c — see timeline.h. The elements are kept; the picture is drawn at the end,
 * when the run's span is known. Past one picture's worth, timeline.svg (the overview) needs
 * of each element only its start, lane and whether it is an error: from then on those facts
 * are kept instead, with nothing of its labels made. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glance.h"
#include "timeline.h"
#include "rs_util.h"

typedef enum elem_kind { E_CHAT, E_TOOL, E_TASK, E_MARK } elem_kind;

typedef struct elem {
    elem_kind kind;
    int64_t seq, end_seq; /* end_seq: a tool's result, a task's end (0: none) */
    int64_t start_us, end_us;
    int closed; /* tools and tasks: their end was met */
    int error;  /* a tool's result said error */
    char *label;
    char *cls;    /* its CSS class: what its colour means */
    char *detail; /* what the title says beside the times */
} elem;

/* What the overview keeps of an element. */
typedef struct fact {
    int64_t start_us;
    int64_t index; /* its place (elements are made in seq order): ties by start keep it */
    uint8_t lane, error, closed;
} fact;

struct rfs_timeline {
    char *thread_id, *run_id;
    elem *elems;
    fact *facts; /* instead of elems past one picture, when no window is drawn */
    size_t n, cap;
    int64_t window; /* what is drawn: 0 timeline.svg, n window n, < 0 none (the count) */
    int64_t windows;
    rfs_calls *calls;
    rfs_map *tasks; /* task id -> element index + 1 (0: not drawn) */
    int64_t events, first_us, last_us, min_us, max_us;
    int64_t model_calls, tools, tool_errors;
    char *status; /* run.terminal's */
    int terminal;
};

int rfs_timeline_new(rfs_timeline **out, const char *thread_id, const char *run_id)
{
    rfs_timeline *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    if (!(t->thread_id = strdup(thread_id)) || !(t->run_id = strdup(run_id)) ||
        rfs_calls_new(&t->calls) || rfs_map_new(&t->tasks, sizeof(int64_t))) {
        rfs_timeline_free(t);
        return -ENOMEM;
    }
    *out = t;
    return 0;
}

void rfs_timeline_free(rfs_timeline *t)
{
    if (!t)
        return;
    for (size_t i = 0; t->elems && i < t->n; i++) {
        free(t->elems[i].label);
        free(t->elems[i].cls);
        free(t->elems[i].detail);
    }
    free(t->elems);
    free(t->facts);
    rfs_calls_free(t->calls);
    rfs_map_free(t->tasks);
    free(t->status);
    free(t->thread_id);
    free(t->run_id);
    free(t);
}

static char *text_of(rfs_span s)
{
    rs_buf b = RS_BUF_INIT;
    if (!rfs_jl_is(s, '"') || rfs_jl_text(&b, s, 1) || (b.len == 0 && rs_buf_grow(&b, 1))) {
        rs_buf_release(&b);
        return NULL;
    }
    return rs_buf_detach(&b, NULL);
}

static char *str(const char *s)
{
    return strdup(s ? s : "");
}

/* The lanes of the overview. */
enum { LANE_CHAT, LANE_TOOL, LANE_TASK, LANE_MARK, LANES };

static int lane_of_kind(elem_kind kind)
{
    return kind == E_CHAT   ? LANE_CHAT
           : kind == E_TOOL ? LANE_TOOL
           : kind == E_TASK ? LANE_TASK
                            : LANE_MARK;
}

/* What a task's or a marker's class says: an error. */
static int cls_error(const char *cls)
{
    return strcmp(cls, "mark-error") == 0 || strcmp(cls, "task-failed") == 0 ||
           strcmp(cls, "task-timed_out") == 0;
}

static int is_error(const elem *e)
{
    return e->error || cls_error(e->cls);
}

/* The elements made so far as facts, their labels let go: timeline.svg is an overview. */
static int to_facts(rfs_timeline *t)
{
    size_t cap = t->n > 16 ? t->n : 16;
    fact *f = malloc(cap * sizeof *f);
    if (!f)
        return -ENOMEM;
    for (size_t i = 0; i < t->n; i++) {
        elem *e = &t->elems[i];
        f[i] = (fact){.start_us = e->start_us,
                      .index = (int64_t)i,
                      .lane = (uint8_t)lane_of_kind(e->kind),
                      .error = (uint8_t)is_error(e),
                      .closed = (uint8_t)e->closed};
        free(e->label);
        free(e->cls);
        free(e->detail);
    }
    free(t->elems);
    t->elems = NULL;
    t->facts = f;
    t->cap = cap;
    return 0;
}

/* A new element as a fact (its index), or < 0 on ENOMEM. */
static int64_t add_fact(rfs_timeline *t, elem_kind kind, int64_t start, int error)
{
    int rc;
    if (t->n == t->cap && (rc = rs_array_grow(&t->facts, &t->cap, t->n + 1, sizeof *t->facts)))
        return rc;
    t->facts[t->n] = (fact){.start_us = start,
                            .index = (int64_t)t->n,
                            .lane = (uint8_t)lane_of_kind(kind),
                            .error = (uint8_t)error};
    return (int64_t)t->n++;
}

/* A new element (NULL on ENOMEM, *rc set). */
static elem *add(rfs_timeline *t, elem_kind kind, int64_t seq, int64_t start, int64_t end, int *rc)
{
    if (t->n == t->cap && (*rc = rs_array_grow(&t->elems, &t->cap, t->n + 1, sizeof *t->elems)))
        return NULL;
    elem *e = &t->elems[t->n++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->seq = seq;
    e->start_us = start;
    e->end_us = end;
    return e;
}

/* Fill label, class and detail, owning them (*rc = -ENOMEM when any is missing). */
static void name(elem *e, char *label, const char *cls, rs_buf *detail, int *rc)
{
    e->label = label;
    e->cls = str(cls);
    e->detail = rs_buf_detach(detail, NULL);
    if (!e->label || !e->cls || !e->detail)
        *rc = -ENOMEM;
}

static int tool_call(void *ctx, rfs_call *call)
{
    rfs_timeline *t = ctx;
    int rc = 0;
    t->tools++;
    if (t->facts) {
        call->user = add_fact(t, E_TOOL, call->t_us, 0);
        return call->user < 0 ? (int)call->user : 0;
    }
    elem *e = add(t, E_TOOL, call->seq, call->t_us, call->t_us, &rc);
    call->user = e ? (int64_t)(e - t->elems) : -1;
    if (!e)
        return rc;
    rs_buf label = RS_BUF_INIT, d = RS_BUF_INIT;
    /* Pieces, not rs_buf_addf: a label per element drawn. */
    rc = rs_buf_addlit(&label, "tool ");
    if (!rc)
        rc = rs_buf_addstr(&label, call->name[0] ? call->name : "(unnamed)");
    /* As "%.*s" printed it: up to a NUL the id's text may hold. */
    if (!rc && call->id && !(rc = rs_buf_addlit(&d, "call ")))
        rc = rs_buf_add(&d, call->id, strnlen(call->id, call->id_len));
    char *l = rc ? NULL : rs_buf_detach(&label, NULL);
    rs_buf_release(&label);
    name(e, l, "tool", &d, &rc);
    rs_buf_release(&d);
    return rc;
}

static int model(rfs_timeline *t, const rfs_ev *ev)
{
    int rc = 0;
    t->model_calls++;
    int64_t start = ev->latency_ms >= 0 ? ev->t_us - ev->latency_ms * 1000 : ev->t_us;
    if (t->facts) {
        int64_t i = add_fact(t, E_CHAT, start, 0);
        if (i < 0)
            return (int)i;
        if (start < t->min_us)
            t->min_us = start;
        return rfs_calls_add(t->calls, ev, tool_call, t);
    }
    elem *e = add(t, E_CHAT, ev->rec->seq, start, ev->t_us, &rc);
    if (e) {
        rs_buf label = RS_BUF_INIT, d = RS_BUF_INIT;
        char *m = ev->model.p ? text_of(ev->model) : NULL;
        rc = rs_buf_addlit(&label, "chat");
        if (!rc && m && !(rc = rs_buf_addch(&label, ' ')))
            rc = rs_buf_addstr(&label, m);
        free(m);
        if (!rc && ev->usage[2] >= 0 && !(rc = rs_buf_addlit(&label, " \xc2\xb7 ")) &&
            !(rc = rfs_add_int(&label, ev->usage[2])))
            rc = rs_buf_addlit(&label, " tokens");
        if (!rc && ev->latency_ms < 0)
            rc = rs_buf_addlit(&d, "no latency_ms: drawn at its time");
        for (int i = 0; !rc && i < RFS_USAGE_N; i++)
            if (ev->usage[i] >= 0 && !(rc = d.len ? rs_buf_addlit(&d, ", ") : 0) &&
                !(rc = rs_buf_addstr(&d, rfs_usage_names[i])) && !(rc = rs_buf_addch(&d, ' ')))
                rc = rfs_add_int(&d, ev->usage[i]);
        char *l = rc ? NULL : rs_buf_detach(&label, NULL);
        rs_buf_release(&label);
        name(e, l, "chat", &d, &rc);
        rs_buf_release(&d);
        if (start < t->min_us)
            t->min_us = start;
    }
    return rc ? rc : rfs_calls_add(t->calls, ev, tool_call, t);
}

static int result(rfs_timeline *t, const rfs_ev *ev)
{
    rfs_call *call = rfs_calls_take(t->calls, ev);
    t->tool_errors += ev->error; /* every error result, whether its call is drawn or not */
    if (!call)
        return 0;
    if (call->user >= 0 && t->facts) {
        t->facts[call->user].closed = 1;
        t->facts[call->user].error = (uint8_t)ev->error;
    } else if (call->user >= 0) {
        elem *e = &t->elems[call->user];
        e->end_us = ev->t_us;
        e->end_seq = ev->rec->seq;
        e->closed = 1;
        e->error = ev->error;
        free(e->cls);
        if (!(e->cls = str(ev->error ? "tool-error" : "tool"))) {
            rfs_call_free(call);
            return -ENOMEM;
        }
    }
    rfs_call_free(call);
    return 0;
}

/* The CSS class of a task's status. */
static const char *task_class(const char *status)
{
    static const char *const known[] = {"completed", "failed", "cancelled", "timed_out"};
    static const char *const cls[] = {"task-completed", "task-failed", "task-cancelled",
                                      "task-timed_out"};
    for (int i = 0; status && i < 4; i++)
        if (strcmp(status, known[i]) == 0)
            return cls[i];
    return status ? "task-other" : "task-open";
}

/* task() past one picture: the task's fact, its end's class telling an error. */
static int task_fact(rfs_timeline *t, const rfs_ev *ev, int64_t *slot)
{
    fact *f = *slot > 0 ? &t->facts[*slot - 1] : NULL;
    if (*slot < 0 || (f && f->closed))
        return 0;
    if (!f) {
        int64_t i = add_fact(t, E_TASK, ev->t_us, 0);
        if (i < 0) {
            *slot = -1;
            return (int)i;
        }
        *slot = i + 1;
        f = &t->facts[i];
    }
    if (ev->kind != RFS_EV_TASK_END)
        return 0;
    char *st = ev->status.p ? text_of(ev->status) : NULL;
    f->closed = 1;
    f->error = (uint8_t)cls_error(task_class(st ? st : "(none)"));
    free(st);
    return 0;
}

static int task(rfs_timeline *t, const rfs_ev *ev)
{
    rfs_span id = ev->task_id.p ? ev->task_id : (rfs_span){"\"\"", 2};
    int64_t *slot = rfs_map_get_text(t->tasks, id, 1);
    if (!slot)
        return -ENOMEM;
    int rc = 0;
    if (t->facts)
        return task_fact(t, ev, slot);
    elem *e = *slot > 0 ? &t->elems[*slot - 1] : NULL;
    if (*slot < 0 || (e && e->closed))
        return 0; /* not drawn, or ended already: its first end counts */
    if (!e) {
        if (!(e = add(t, E_TASK, ev->rec->seq, ev->t_us, ev->t_us, &rc))) {
            *slot = -1;
            return rc;
        }
        *slot = (int64_t)(e - t->elems) + 1;
        rs_buf label = RS_BUF_INIT, d = RS_BUF_INIT;
        char *tid = text_of(id);
        rc = rs_buf_addf(&label, "task %s", tid ? tid : "");
        free(tid);
        char *l = rc ? NULL : rs_buf_detach(&label, NULL);
        rs_buf_release(&label);
        if (ev->kind == RFS_EV_TASK_END && !rc)
            rc = rs_buf_addlit(&d, "no subagent.start");
        name(e, l, "task-open", &d, &rc);
        rs_buf_release(&d);
        if (rc)
            return rc;
    }
    if (ev->kind != RFS_EV_TASK_END)
        return 0;
    char *st = ev->status.p ? text_of(ev->status) : NULL;
    e->end_us = ev->t_us;
    e->end_seq = ev->rec->seq;
    e->closed = 1;
    free(e->cls);
    e->cls = str(task_class(st ? st : "(none)"));
    rs_buf d = RS_BUF_INIT;
    rc = rs_buf_addf(&d, "%s%s%s", e->detail, e->detail[0] ? ", " : "", st ? st : "no status");
    free(st);
    free(e->detail);
    e->detail = rc ? NULL : rs_buf_detach(&d, NULL);
    rs_buf_release(&d);
    return e->cls && e->detail ? rc : -ENOMEM;
}

static int marker(rfs_timeline *t, const rfs_ev *ev)
{
    int rc = 0;
    const char *cls = "mark-middleware";
    char *st = NULL;
    if (ev->kind == RFS_EV_ERROR)
        cls = "mark-error";
    if (ev->kind == RFS_EV_TERMINAL) {
        st = ev->status.p ? text_of(ev->status) : NULL;
        cls = st && strcmp(st, "success") == 0 ? "mark-ok" : "mark-error";
        if (!t->terminal) {
            t->terminal = 1;
            t->status = st ? strdup(st) : NULL;
        }
    }
    if (t->facts) {
        int64_t i = add_fact(t, E_MARK, ev->t_us, cls_error(cls));
        free(st);
        return i < 0 ? (int)i : 0;
    }
    elem *e = add(t, E_MARK, ev->rec->seq, ev->t_us, ev->t_us, &rc);
    if (e) {
        rs_buf label = RS_BUF_INIT, d = RS_BUF_INIT;
        rc = rs_buf_addstr(&label, ev->rec->event_type);
        if (!rc && st && !(rc = rs_buf_addch(&label, ' ')))
            rc = rs_buf_addstr(&label, st);
        char *l = rc ? NULL : rs_buf_detach(&label, NULL);
        rs_buf_release(&label);
        name(e, l, cls, &d, &rc);
        rs_buf_release(&d);
    }
    free(st);
    return rc;
}

int rfs_timeline_feed(rfs_timeline *t, const rfs_ev *ev)
{
    int rc;
    if (!t->facts && t->window <= 0 && t->n > RFS_TIMELINE_MAX && (rc = to_facts(t)))
        return rc;
    if (t->events++ == 0)
        t->first_us = t->min_us = t->max_us = ev->t_us;
    t->last_us = ev->t_us;
    if (ev->t_us < t->min_us)
        t->min_us = ev->t_us;
    if (ev->t_us > t->max_us)
        t->max_us = ev->t_us;
    switch (ev->kind) {
    case RFS_EV_MODEL: return model(t, ev);
    case RFS_EV_RESULT: return result(t, ev);
    case RFS_EV_TASK_START:
    case RFS_EV_TASK_END: return task(t, ev);
    case RFS_EV_TERMINAL:
    case RFS_EV_ERROR:
    case RFS_EV_MIDDLEWARE: return marker(t, ev);
    default: return 0;
    }
}

/* ---- drawing ---- */

#define WIDTH 1200
#define PLOT_X0 330.0
#define PLOT_X1 1110.0
#define ROW_H 20
#define TOP 142 /* the first row's top */

static const char style[] =
    "<style>"
    "text{font-family:'DejaVu Sans',Verdana,sans-serif;font-size:12px;fill:#222}"
    ".h{font-size:17px;font-weight:bold}.s{fill:#555}.tick{fill:#666;font-size:11px}"
    ".grid{stroke:#e3e3e8;stroke-width:1}.axis{stroke:#999;stroke-width:1}"
    ".d{fill:#666;font-size:11px}.lab{fill:#222}"
    ".chat rect,.sw.chat{fill:#4e79a7}"
    ".tool rect,.sw.tool{fill:#59a14f}"
    ".tool-error rect,.sw.tool-error{fill:#e15759}"
    ".tool-open rect,.sw.tool-open,.task-open rect,.sw.task-open{fill:#f28e2b;fill-opacity:.3;"
    "stroke:#f28e2b;stroke-width:1.5;stroke-dasharray:4 2}"
    ".task-completed rect,.sw.task-completed{fill:#76b7b2}"
    ".task-failed rect,.sw.task-failed{fill:#b6403f}"
    ".task-cancelled rect,.sw.task-cancelled{fill:#bab0ac}"
    ".task-timed_out rect,.sw.task-timed_out{fill:#edc948}"
    ".task-other rect,.sw.task-other{fill:#9c755f}"
    ".mark-error path,.sw.mark-error{fill:#d62728}"
    ".mark-ok path,.sw.mark-ok{fill:#2ca02c}"
    ".mark-middleware path,.sw.mark-middleware{fill:#b07aa1}"
    ".mark-ok line,.mark-error line{stroke-width:1;stroke-dasharray:2 3}"
    ".mark-ok line{stroke:#2ca02c}.mark-error line{stroke:#d62728}"
    ".stripe{fill:#f6f6f9}"
    "</style>\n";

typedef struct legend_item {
    const char *cls, *text;
} legend_item;

/* Two rows: the bars, then the tasks' outcomes and the markers. */
static const legend_item legend[2][7] = {
    {{"chat", "model call"},
     {"tool", "tool call"},
     {"tool-error", "tool call with an error result"},
     {"tool-open", "no result / no subagent.end (open to the run's end)"}},
    {{"task-completed", "task completed"},
     {"task-failed", "failed"},
     {"task-cancelled", "cancelled"},
     {"task-timed_out", "timed out"},
     {"mark-error", "error, run.terminal not success"},
     {"mark-middleware", "middleware"},
     {"mark-ok", "run.terminal success"}},
};

static double x_of(int64_t us, int64_t t0, int64_t span)
{
    return PLOT_X0 + (PLOT_X1 - PLOT_X0) * (double)(us - t0) / (double)span;
}

/* A clock time of day, "05:06:11.123". */
static int add_clock(rs_buf *out, int64_t us)
{
    int64_t day = us % INT64_C(86400000000);
    if (day < 0)
        day += INT64_C(86400000000);
    int64_t ms = day / 1000;
    return rs_buf_addf(out, "%02lld:%02lld:%02lld.%03lld", (long long)(ms / 3600000),
                       (long long)(ms / 60000 % 60), (long long)(ms / 1000 % 60),
                       (long long)(ms % 1000));
}

/* The tick step: the first nice step that gives at most ten ticks. */
static int64_t tick_step(int64_t span)
{
    static const int64_t steps[] = {
        1,      2,      5,       10,      20,      50,       100,      200,      500,
        1000,   2000,   5000,    10000,   15000,   30000,    60000,    120000,   300000,
        600000, 900000, 1800000, 3600000, 7200000, 10800000, 21600000, 43200000, 86400000};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (span / (steps[i] * 1000) <= 10)
            return steps[i] * 1000;
    int64_t day = INT64_C(86400000000), k = 1;
    while (span / (day * k) > 10)
        k *= 2;
    return day * k;
}

/* The title, the run's summary (and note: markup saying what part of the run this is), the
 * legend and, with axis, the time axis from t0 over span. */
static int header(rfs_timeline *t, rs_buf *out, int64_t t0, int64_t span, int width, int height,
                  const rs_buf *note, int axis)
{
    int rc = rs_buf_addf(out,
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                         "<svg xmlns=\"http://www.w3.org/2000/svg\" "
                         "xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"%d\" height=\"%d\" "
                         "viewBox=\"0 0 %d %d\">\n",
                         width, height, width, height);
    if (!rc)
        rc = rs_buf_addstr(out, style);
    if (!rc)
        rc = rs_buf_addf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", width, height);
    if (!rc)
        rc = rs_buf_addlit(out, "<text class=\"h\" x=\"12\" y=\"26\">run ");
    if (!rc)
        rc = rfs_xml_text(out, t->run_id, strlen(t->run_id), 64);
    if (!rc)
        rc = rs_buf_addlit(out, " <tspan class=\"s\">of thread ");
    if (!rc)
        rc = rfs_xml_text(out, t->thread_id, strlen(t->thread_id), 64);
    if (!rc)
        rc = rs_buf_addlit(out, "</tspan></text>\n<text class=\"s\" x=\"12\" y=\"48\">");
    if (!rc)
        rc = t->terminal ? rs_buf_addlit(out, "terminal: ") : rs_buf_addlit(out, "no run.terminal");
    if (!rc && t->terminal)
        rc = t->status ? rfs_xml_text(out, t->status, strlen(t->status), 32)
                       : rs_buf_addlit(out, "(no status)");
    if (!rc)
        rc = rs_buf_addf(out, " \xc2\xb7 %lld event%s \xc2\xb7 ", (long long)t->events,
                         t->events == 1 ? "" : "s");
    if (!rc)
        rc = rfs_add_duration(out, t->last_us - t->first_us);
    if (!rc && t->events)
        rc = rs_buf_addlit(out, " from ");
    if (!rc && t->events)
        rc = add_clock(out, t->first_us);
    if (!rc)
        rc = rs_buf_addf(out,
                         " UTC \xc2\xb7 %lld model call%s \xc2\xb7 %lld tool call%s, %lld error "
                         "result%s</text>\n",
                         (long long)t->model_calls, t->model_calls == 1 ? "" : "s",
                         (long long)t->tools, t->tools == 1 ? "" : "s", (long long)t->tool_errors,
                         t->tool_errors == 1 ? "" : "s");
    if (!rc && note && note->len &&
        !(rc = rs_buf_addf(out, "<text class=\"s\" x=\"12\" y=\"%d\">", TOP - 30)) &&
        !(rc = rs_buf_add(out, note->buf, note->len)))
        rc = rs_buf_addlit(out, "</text>\n");
    if (!axis)
        return rc;
    /* The legend: a swatch and its meaning each. */
    for (int row = 0; row < 2; row++) {
        double x = 12;
        for (size_t i = 0; !rc && i < 7 && legend[row][i].cls; i++) {
            rc = rs_buf_addf(out,
                             "<rect class=\"sw %s\" x=\"%.1f\" y=\"%d\" width=\"12\" "
                             "height=\"10\"/><text class=\"s\" x=\"%.1f\" y=\"%d\">%s</text>\n",
                             legend[row][i].cls, x, 62 + row * 18, x + 16, 71 + row * 18,
                             legend[row][i].text);
            x += 16 + 6.6 * (double)strlen(legend[row][i].text) + 18;
        }
    }
    /* The axis: times since the run's start, and their grid lines down the rows. */
    int64_t step = tick_step(span);
    int bottom = height - 36;
    if (!rc)
        rc = rs_buf_addf(out,
                         "<text class=\"tick\" x=\"12\" y=\"%d\">time since the start</text>"
                         "<line class=\"axis\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
                         TOP - 14, PLOT_X0, TOP - 4, PLOT_X1, TOP - 4);
    for (int64_t k = 0; !rc && k * step <= span; k++) {
        double tx = x_of(t0 + k * step, t0, span);
        rc = rs_buf_addf(out,
                         "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                         "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
                         tx, TOP - 8, tx, bottom, tx, TOP - 14);
        if (!rc)
            rc = k ? rfs_add_duration(out, k * step) : rs_buf_addch(out, '0');
        if (!rc)
            rc = rs_buf_addlit(out, "</text>\n");
    }
    return rc;
}

static int draw(const rfs_timeline *t, const elem *e, size_t row, int64_t t0, int64_t span,
                rs_buf *out)
{
    double y = TOP + (double)row * ROW_H;
    int64_t end = e->kind == E_MARK ? e->start_us : e->end_us;
    int open = (e->kind == E_TOOL || e->kind == E_TASK) && !e->closed;
    if (open)
        end = t->max_us;
    int rc = row % 2 ? 0
                     : rs_buf_addf(out,
                                   "<rect class=\"stripe\" x=\"0\" y=\"%.1f\" width=\"%d\" "
                                   "height=\"%d\"/>\n",
                                   y, WIDTH, ROW_H);
    if (!rc)
        rc = rs_buf_addf(out, "<g class=\"%s\" data-seq=\"%lld\"><title>",
                         open && e->kind == E_TOOL ? "tool-open" : e->cls, (long long)e->seq);
    if (!rc)
        rc = rfs_xml_text(out, e->label, strlen(e->label), 200);
    if (!rc && e->detail[0] && !(rc = rs_buf_addlit(out, " (")) &&
        !(rc = rfs_xml_text(out, e->detail, strlen(e->detail), 200)))
        rc = rs_buf_addch(out, ')');
    if (!rc)
        rc = rs_buf_addlit(out, "\n");
    if (!rc)
        rc = add_clock(out, e->start_us);
    if (!rc && e->kind != E_MARK && !(rc = rs_buf_addlit(out, " \xe2\x86\x92 ")))
        rc = add_clock(out, end);
    if (!rc)
        rc = rs_buf_addlit(out, " UTC, +");
    if (!rc)
        rc = rfs_add_duration(out, e->start_us - t->min_us);
    if (!rc && e->kind != E_MARK && !(rc = rs_buf_addlit(out, ", lasting ")))
        rc = rfs_add_duration(out, end - e->start_us);
    if (!rc && open)
        rc = rs_buf_addstr(out, e->kind == E_TOOL ? ", no result: drawn to the run's end"
                                                  : ", no subagent.end: drawn to the run's end");
    if (!rc)
        rc = rs_buf_addf(out, "\nseq %lld", (long long)e->seq);
    if (!rc && e->end_seq)
        rc = rs_buf_addf(out, " \xe2\x86\x92 %lld", (long long)e->end_seq);
    if (!rc)
        rc = rs_buf_addlit(out, "</title>");
    double x = x_of(e->start_us, t0, span), x2 = x_of(end, t0, span);
    double mid = y + ROW_H / 2.0;
    if (!rc && e->kind == E_MARK) {
        rc = rs_buf_addf(out, "<path d=\"M%.1f %.1fl6 6-6 6-6-6z\"/>", x, mid - 6);
        if (!rc && strncmp(e->cls, "mark-", 5) == 0 && strcmp(e->cls, "mark-middleware") != 0 &&
            strncmp(e->label, "run.terminal", 12) == 0)
            rc = rs_buf_addf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\"/>", x, TOP,
                             x, y);
        x2 = x + 6;
    } else if (!rc) {
        double w = x2 - x < 2 ? 2 : x2 - x;
        rc = rs_buf_addf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" rx=\"2\"/>",
                         x, y + 4, w, ROW_H - 8);
        x2 = x + w;
    }
    if (!rc)
        rc = rs_buf_addf(out, "<text class=\"lab\" x=\"12\" y=\"%.1f\">", y + 14);
    if (!rc)
        rc = rfs_xml_text(out, e->label, strlen(e->label), 44);
    if (!rc)
        rc = rs_buf_addlit(out, "</text>");
    if (!rc && e->kind != E_MARK) {
        /* The duration beside the bar, or inside the plot's right end when it would spill. */
        int right = x2 + 70 > WIDTH;
        rc = rs_buf_addf(out, "<text class=\"d\" x=\"%.1f\" y=\"%.1f\"%s>", right ? x - 4 : x2 + 4,
                         y + 14, right ? " text-anchor=\"end\"" : "");
        if (!rc)
            rc = !open               ? rfs_add_duration(out, end - e->start_us)
                 : e->kind == E_TOOL ? rs_buf_addlit(out, "no result")
                                     : rs_buf_addlit(out, "unfinished");
        if (!rc)
            rc = rs_buf_addlit(out, "</text>");
    }
    return rc ? rc : rs_buf_addlit(out, "</g>\n");
}

/* The end of element e as drawn (an open one: the run's end). */
static int64_t end_of(const rfs_timeline *t, const elem *e)
{
    if (e->kind == E_MARK)
        return e->start_us;
    return (e->kind == E_TOOL || e->kind == E_TASK) && !e->closed ? t->max_us : e->end_us;
}

/* Draw the elements order[0..n) over their own time. */
static int draw_all(rfs_timeline *t, const size_t *order, size_t n, const rs_buf *note, rs_buf *out)
{
    int64_t t0 = n ? t->elems[order[0]].start_us : t->min_us, last = t0;
    for (size_t i = 0; i < n; i++) {
        const elem *e = &t->elems[order[i]];
        int64_t end = end_of(t, e);
        t0 = e->start_us < t0 ? e->start_us : t0;
        last = end > last ? end : last;
    }
    if (!note)
        t0 = t->min_us, last = t->max_us;
    int64_t span = last - t0;
    if (span <= 0)
        span = 1000;
    int height = TOP + (int)n * ROW_H + 44;
    int rc = header(t, out, t0, span, WIDTH, height, note, 1);
    for (size_t i = 0; !rc && i < n; i++)
        rc = draw(t, &t->elems[order[i]], i, t0, span, out);
    int y = TOP + (int)n * ROW_H + 24;
    if (!rc && n == 0)
        rc = rs_buf_addf(out,
                         "<text class=\"s\" x=\"12\" y=\"%d\">no model calls, tool calls, tasks, "
                         "errors, middleware events or run.terminal in this run</text>\n",
                         y);
    return rc ? rc : rs_buf_addlit(out, "</svg>\n");
}

/* By start, then by place (elements are made in seq order): windows of consecutive time,
 * the same every rendering. Keys are (start, index) pairs. */
static int by_start_key(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The same order of facts. */
static int by_start_fact(const void *a, const void *b)
{
    const fact *x = a, *y = b;
    if (x->start_us != y->start_us)
        return x->start_us < y->start_us ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

#define SLICE_MIN 4.0 /* the narrowest slice, in pixels: past that the picture widens */

/* The whole run as slices, one per window: how busy each lane is in each, errors marked,
 * each slice a link to its window. */
static int overview(rfs_timeline *t, const fact *order, rs_buf *out)
{
    int64_t w = t->windows;
    double plot = PLOT_X1 - PLOT_X0, sw = plot / (double)w;
    if (sw < SLICE_MIN)
        sw = SLICE_MIN;
    int width = (int)(PLOT_X0 + sw * (double)w + 90);
    if (width < WIDTH)
        width = WIDTH;
    int64_t *count = calloc((size_t)w * (LANES + 1), sizeof *count);
    if (!count)
        return -ENOMEM;
    int64_t most = 1;
    for (size_t i = 0; i < t->n; i++) {
        const fact *f = &order[i];
        int64_t *c = &count[(int64_t)(i / RFS_TIMELINE_MAX) * (LANES + 1)];
        if (++c[f->lane] > most)
            most = c[f->lane];
        c[LANES] += f->error;
    }
    static const char *const lane_name[LANES] = {"model calls", "tool calls", "subagent tasks",
                                                 "errors, middleware, run.terminal"};
    static const char *const lane_cls[LANES] = {"chat", "tool", "task-completed",
                                                "mark-middleware"};
    int height = TOP + LANES * 34 + 80;
    rs_buf note = RS_BUF_INIT;
    int rc = rs_buf_addf(&note,
                         "%zu elements: too many for one picture. Each slice is a window of at "
                         "most %d of them (timeline/N.svg, N = 1..%lld): click one",
                         t->n, RFS_TIMELINE_MAX, (long long)w);
    if (!rc)
        rc = header(t, out, t->min_us, 1, width, height, &note, 0);
    rs_buf_release(&note);
    for (int l = 0; !rc && l < LANES; l++)
        rc = rs_buf_addf(
            out,
            "<text class=\"lab\" x=\"12\" y=\"%d\">%s</text>"
            "<rect class=\"stripe\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"30\"/>\n",
            TOP + l * 34 + 19, lane_name[l], PLOT_X0, TOP + l * 34, sw * (double)w);
    for (int64_t k = 0; !rc && k < w; k++) {
        size_t lo = (size_t)k * RFS_TIMELINE_MAX, hi = lo + RFS_TIMELINE_MAX;
        if (hi > t->n)
            hi = t->n;
        int64_t from = order[lo].start_us;
        int64_t to = k + 1 < w ? order[hi].start_us : t->max_us;
        const int64_t *c = &count[k * (LANES + 1)];
        double x = PLOT_X0 + sw * (double)k;
        rc = rs_buf_addf(out,
                         "<a href=\"timeline/%lld.svg\" xlink:href=\"timeline/%lld.svg\">"
                         "<g class=\"slice\" data-window=\"%lld\"><title>window %lld: ",
                         (long long)k + 1, (long long)k + 1, (long long)k + 1, (long long)k + 1);
        if (!rc)
            rc = add_clock(out, from);
        if (!rc)
            rc = rs_buf_addlit(out, " \xe2\x86\x92 ");
        if (!rc)
            rc = add_clock(out, to);
        if (!rc)
            rc = rs_buf_addf(out,
                             " UTC, %zu elements: %lld model calls, %lld tool calls, %lld tasks, "
                             "%lld markers; %lld errors</title>"
                             "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#fff\" "
                             "fill-opacity=\"0\"/>",
                             hi - lo, (long long)c[0], (long long)c[1], (long long)c[2],
                             (long long)c[3], (long long)c[LANES], x, TOP, sw, LANES * 34);
        for (int l = 0; !rc && l < LANES; l++)
            if (c[l])
                rc = rs_buf_addf(out,
                                 "<rect class=\"sw %s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
                                 "height=\"30\" fill-opacity=\"%.2f\"/>",
                                 lane_cls[l], x + 0.5, TOP + l * 34, sw - 1,
                                 0.15 + 0.85 * (double)c[l] / (double)most);
        if (!rc && c[LANES])
            rc = rs_buf_addf(out, "<path class=\"sw mark-error\" d=\"M%.1f %dl5 8h-10z\"/>",
                             x + sw / 2, TOP + LANES * 34 + 2);
        if (!rc)
            rc = rs_buf_addlit(out, "</g></a>\n");
    }
    /* Window numbers under the slices, as many as fit. */
    int64_t every = 1;
    while (sw * (double)every < 40)
        every *= 2;
    for (int64_t k = 0; !rc && k < w; k += every)
        rc = rs_buf_addf(out, "<text class=\"tick\" x=\"%.1f\" y=\"%d\">%lld</text>\n",
                         PLOT_X0 + sw * (double)k, TOP + LANES * 34 + 26, (long long)k + 1);
    if (!rc)
        rc = rs_buf_addf(out,
                         "<text class=\"s\" x=\"12\" y=\"%d\">window (darker: busier; "
                         "\xe2\x96\xbc: errors)</text>\n",
                         TOP + LANES * 34 + 26);
    free(count);
    return rc ? rc : rs_buf_addlit(out, "</svg>\n");
}

void rfs_timeline_set_window(rfs_timeline *t, int64_t window)
{
    t->window = window;
}

int64_t rfs_timeline_windows(const rfs_timeline *t)
{
    return t->windows;
}

int rfs_timeline_finish(rfs_timeline *t, rs_buf *out)
{
    t->windows =
        t->n <= RFS_TIMELINE_MAX ? 1 : (int64_t)((t->n + RFS_TIMELINE_MAX - 1) / RFS_TIMELINE_MAX);
    if (t->window < 0)
        return 0;
    if (t->window > t->windows)
        return -ENOENT;
    if (t->windows > 1 && t->window == 0) {
        int rc = t->facts ? 0 : to_facts(t);
        if (rc)
            return rc;
        qsort(t->facts, t->n, sizeof *t->facts, by_start_fact);
        return overview(t, t->facts, out);
    }
    size_t *order = malloc((t->n ? t->n : 1) * sizeof *order);
    if (!order)
        return -ENOMEM;
    for (size_t i = 0; i < t->n; i++)
        order[i] = i;
    int rc = 0;
    if (t->windows == 1) {
        rc = draw_all(t, order, t->n, NULL, out);
    } else {
        int64_t *keys = malloc(t->n * 2 * sizeof *keys);
        rc = keys ? 0 : -ENOMEM;
        if (!rc) {
            for (size_t i = 0; i < t->n; i++) {
                keys[2 * i] = t->elems[i].start_us;
                keys[2 * i + 1] = (int64_t)i;
            }
            qsort(keys, t->n, 2 * sizeof *keys, by_start_key);
            for (size_t i = 0; i < t->n; i++)
                order[i] = (size_t)keys[2 * i + 1];
            free(keys);
        }
        if (!rc) {
            size_t lo = (size_t)(t->window - 1) * RFS_TIMELINE_MAX, hi = lo + RFS_TIMELINE_MAX;
            if (hi > t->n)
                hi = t->n;
            rs_buf note = RS_BUF_INIT;
            rc = rs_buf_addf(&note, "window %lld of %lld: %zu elements starting ",
                             (long long)t->window, (long long)t->windows, hi - lo);
            if (!rc)
                rc = add_clock(&note, t->elems[order[lo]].start_us);
            if (!rc)
                rc = rs_buf_addlit(&note, " \xe2\x86\x92 ");
            if (!rc)
                rc = add_clock(&note, hi < t->n ? t->elems[order[hi]].start_us : t->max_us);
            if (!rc)
                rc = rs_buf_addlit(&note, " UTC (all: ../timeline.svg)");
            if (!rc)
                rc = draw_all(t, order + lo, hi - lo, &note, out);
            rs_buf_release(&note);
        }
    }
    free(order);
    return rc;
}
