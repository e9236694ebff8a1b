/* otel.c — see otel.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glance.h"
#include "otel.h"

/* Span ids: the span's kind in the top byte, a tool call's place in its response below it,
 * the seq of the event that starts it in the low 40 bits: unique in the run, never zero. */
enum { SPAN_ROOT = 1, SPAN_CHAT = 2, SPAN_TOOL = 3, SPAN_TASK = 4 };
/* OTLP's SpanKind and StatusCode. */
enum { KIND_INTERNAL = 1, KIND_CLIENT = 3 };
enum { STATUS_UNSET = 0, STATUS_OK = 1, STATUS_ERROR = 2 };

typedef struct task {
    int started, ended;
    int64_t seq, t_us;
} task;

struct rfs_otel {
    char *thread_id, *run_id;
    char trace_id[33];
    int started;
    int64_t spans;
    rfs_calls *calls;
    rfs_map *tasks; /* task id (text) -> task */
    int64_t events, first_seq, first_us, last_us;
    int64_t usage[RFS_USAGE_N];
    int terminal;
    char *status; /* run.terminal's content.status */
    char *agent;  /* run.start's metadata.caller */
};

int rfs_otel_new(rfs_otel **out, const char *thread_id, const char *run_id)
{
    rfs_otel *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    if (!(o->thread_id = strdup(thread_id)) || !(o->run_id = strdup(run_id)) ||
        rfs_calls_new(&o->calls) || rfs_map_new(&o->tasks, sizeof(task))) {
        rfs_otel_free(o);
        return -ENOMEM;
    }
    /* The trace id: two FNV-1a hashes of "thread\nrun" with different offset bases. */
    uint64_t h[2] = {RS_HASH_INIT, 0x84222325cbf29ce4ULL};
    for (int i = 0; i < 2; i++) {
        h[i] = rs_hash(h[i], thread_id, strlen(thread_id));
        h[i] = rs_hash(h[i], "\n", 1);
        h[i] = rs_hash(h[i], run_id, strlen(run_id));
    }
    if (!h[0] && !h[1])
        h[1] = 1;
    if (rs_fmt(o->trace_id, sizeof o->trace_id, "%016llx%016llx", (unsigned long long)h[0],
               (unsigned long long)h[1]) < 0) {
        rfs_otel_free(o);
        return -EOVERFLOW;
    }
    *out = o;
    return 0;
}

void rfs_otel_free(rfs_otel *o)
{
    if (!o)
        return;
    rfs_calls_free(o->calls);
    rfs_map_free(o->tasks);
    free(o->status);
    free(o->agent);
    free(o->thread_id);
    free(o->run_id);
    free(o);
}

static uint64_t span_id(int kind, int index, int64_t seq)
{
    return (uint64_t)kind << 56 | (uint64_t)(index & 0xffff) << 40 |
           ((uint64_t)seq & 0xffffffffffULL);
}

/* ---- writing a span ----
 * By hand rather than through printf: a 1M-event run writes millions of these pieces. */

static int add_int(rs_buf *out, int64_t v)
{
    char d[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        d[sizeof d - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u && n < sizeof d - 1);
    if (v < 0)
        d[sizeof d - 1 - n++] = '-';
    return rs_buf_add(out, d + sizeof d - n, n);
}

static int add_hex(rs_buf *out, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char h[16];
    for (int i = 15; i >= 0; i--, v >>= 4)
        h[i] = digits[v & 15];
    return rs_buf_add(out, h, sizeof h);
}

typedef struct span_out {
    rs_buf *out;
    int attrs; /* attributes written so far */
    int rc;
} span_out;

static void attr_head(span_out *s, const char *key)
{
    if (!s->rc && s->attrs++)
        s->rc = rs_buf_addch(s->out, ',');
    if (!s->rc && !(s->rc = rs_buf_addlit(s->out, "{\"key\":\"")) &&
        !(s->rc = rs_buf_addstr(s->out, key)))
        s->rc = rs_buf_addlit(s->out, "\",\"value\":{");
}

static void attr_str(span_out *s, const char *key, const char *v, size_t len)
{
    attr_head(s, key);
    if (!s->rc && !(s->rc = rs_buf_addlit(s->out, "\"stringValue\":")) &&
        !(s->rc = rs_buf_add_json_string(s->out, v, len)))
        s->rc = rs_buf_addlit(s->out, "}}");
}

static void attr_int(span_out *s, const char *key, int64_t v)
{
    attr_head(s, key);
    if (!s->rc && !(s->rc = rs_buf_addlit(s->out, "\"intValue\":\"")) &&
        !(s->rc = add_int(s->out, v)))
        s->rc = rs_buf_addlit(s->out, "\"}}");
}

static void attr_bool(span_out *s, const char *key, int v)
{
    attr_head(s, key);
    if (!s->rc)
        s->rc = v ? rs_buf_addlit(s->out, "\"boolValue\":true}}")
                  : rs_buf_addlit(s->out, "\"boolValue\":false}}");
}

static void attr_usage(span_out *s, const int64_t *usage)
{
    if (usage[0] >= 0)
        attr_int(s, "gen_ai.usage.input_tokens", usage[0]);
    if (usage[1] >= 0)
        attr_int(s, "gen_ai.usage.output_tokens", usage[1]);
}

/* The span's head up to its attributes' opening bracket. */
static span_out span_begin(rfs_otel *o, rs_buf *out, uint64_t id, int root, const char *name,
                           size_t name_len, int kind, int64_t start_us, int64_t end_us)
{
    span_out s = {.out = out};
    if (start_us < 0)
        start_us = 0;
    if (end_us < start_us)
        end_us = start_us;
    s.rc = o->spans++ ? rs_buf_addch(out, ',') : 0;
    if (!s.rc && !(s.rc = rs_buf_addlit(out, "{\"traceId\":\"")) &&
        !(s.rc = rs_buf_addstr(out, o->trace_id)) &&
        !(s.rc = rs_buf_addlit(out, "\",\"spanId\":\"")) && !(s.rc = add_hex(out, id)))
        s.rc = rs_buf_addch(out, '"');
    if (!s.rc && !root && !(s.rc = rs_buf_addlit(out, ",\"parentSpanId\":\"")) &&
        !(s.rc = add_hex(out, span_id(SPAN_ROOT, 0, o->first_seq))))
        s.rc = rs_buf_addch(out, '"');
    if (!s.rc && !(s.rc = rs_buf_addlit(out, ",\"name\":")))
        s.rc = rs_buf_add_json_string(out, name, name_len);
    /* Times in nanoseconds, as strings: OTLP/JSON's mapping of fixed64. */
    if (!s.rc && !(s.rc = rs_buf_addlit(out, ",\"kind\":")) && !(s.rc = add_int(out, kind)) &&
        !(s.rc = rs_buf_addlit(out, ",\"startTimeUnixNano\":\"")) &&
        !(s.rc = add_int(out, start_us)) &&
        !(s.rc = rs_buf_addlit(out, "000\",\"endTimeUnixNano\":\"")) &&
        !(s.rc = add_int(out, end_us)))
        s.rc = rs_buf_addlit(out, "000\",\"attributes\":[");
    return s;
}

static int span_end(span_out *s, int status, const char *message)
{
    if (!s->rc)
        s->rc = rs_buf_addlit(s->out, "]");
    if (!s->rc && status != STATUS_UNSET) {
        s->rc = rs_buf_addf(s->out, ",\"status\":{\"code\":%d", status);
        if (!s->rc && message && !(s->rc = rs_buf_addlit(s->out, ",\"message\":")))
            s->rc = rs_buf_add_json_string(s->out, message, strlen(message));
        if (!s->rc)
            s->rc = rs_buf_addch(s->out, '}');
    }
    return s->rc ? s->rc : rs_buf_addch(s->out, '}');
}

static int start(rfs_otel *o, rs_buf *out)
{
    if (o->started)
        return 0;
    o->started = 1;
    return rs_buf_addf(out,
                       "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service."
                       "name\",\"value\":{\"stringValue\":\"runfs\"}}]},\"scopeSpans\":[{"
                       "\"scope\":{\"name\":\"runfs\",\"version\":\"%s\"},\"spans\":[",
                       RS_VERSION);
}

static int chat(rfs_otel *o, const rfs_ev *ev, rs_buf *out)
{
    int64_t begin = ev->latency_ms >= 0 ? ev->t_us - ev->latency_ms * 1000 : ev->t_us;
    span_out s = span_begin(o, out, span_id(SPAN_CHAT, 0, ev->rec->seq), 0, "chat", 4, KIND_CLIENT,
                            begin, ev->t_us);
    attr_str(&s, "gen_ai.operation.name", "chat", 4);
    if (ev->model.p) {
        rs_buf m = RS_BUF_INIT;
        if (!(s.rc = s.rc ? s.rc : rfs_jl_text(&m, ev->model, 0)))
            attr_str(&s, "gen_ai.response.model", m.buf, m.len);
        rs_buf_release(&m);
    }
    attr_usage(&s, ev->usage);
    if (ev->usage[2] >= 0)
        attr_int(&s, "runfs.usage.total_tokens", ev->usage[2]);
    if (ev->latency_ms >= 0)
        attr_int(&s, "runfs.latency_ms", ev->latency_ms);
    attr_int(&s, "runfs.seq", ev->rec->seq);
    return span_end(&s, STATUS_UNSET, NULL);
}

/* A tool call's span: ended by its result (res) or, unanswered (res NULL), by the run. */
static int tool(rfs_otel *o, const rfs_call *call, const rfs_ev *res, rs_buf *out)
{
    rs_buf name = RS_BUF_INIT;
    int rc = rs_buf_addf(&name, "execute_tool %s", call->name);
    if (rc)
        return rc;
    span_out s = span_begin(o, out, span_id(SPAN_TOOL, call->index, call->seq), 0, name.buf,
                            name.len, KIND_INTERNAL, call->t_us, res ? res->t_us : o->last_us);
    rs_buf_release(&name);
    attr_str(&s, "gen_ai.operation.name", "execute_tool", 12);
    attr_str(&s, "gen_ai.tool.name", call->name, strlen(call->name));
    if (call->id)
        attr_str(&s, "gen_ai.tool.call.id", call->id, call->id_len);
    attr_int(&s, "runfs.seq", call->seq);
    if (res)
        attr_int(&s, "runfs.result_seq", res->rec->seq);
    else
        attr_bool(&s, "runfs.unanswered", 1);
    int err = res && res->error;
    return span_end(&s, err ? STATUS_ERROR : STATUS_UNSET, err ? "tool result status error" : NULL);
}

/* A subagent task's span: ended by its subagent.end (end) or, unfinished, by the run. */
static int subagent(rfs_otel *o, const char *id, size_t id_len, const task *t, const rfs_ev *end,
                    rs_buf *out)
{
    int64_t seq = t->started ? t->seq : end->rec->seq;
    int64_t begin = t->started ? t->t_us : end->t_us;
    span_out s = span_begin(o, out, span_id(SPAN_TASK, 0, seq), 0, "invoke_agent", 12,
                            KIND_INTERNAL, begin, end ? end->t_us : o->last_us);
    attr_str(&s, "gen_ai.operation.name", "invoke_agent", 12);
    attr_str(&s, "runfs.task_id", id, id_len);
    rs_buf st = RS_BUF_INIT;
    if (end && end->status.p && !s.rc && !(s.rc = rfs_jl_text(&st, end->status, 0)))
        attr_str(&s, "runfs.task_status", st.buf, st.len);
    if (end && end->model.p) {
        rs_buf m = RS_BUF_INIT;
        if (!(s.rc = s.rc ? s.rc : rfs_jl_text(&m, end->model, 0)))
            attr_str(&s, "gen_ai.response.model", m.buf, m.len);
        rs_buf_release(&m);
    }
    if (end)
        attr_usage(&s, end->usage);
    attr_int(&s, "runfs.seq", seq);
    if (end)
        attr_int(&s, "runfs.end_seq", end->rec->seq);
    else
        attr_bool(&s, "runfs.unfinished", 1);
    int code = !end                                                                ? STATUS_UNSET
               : strcmp(st.buf, "completed") == 0                                  ? STATUS_OK
               : strcmp(st.buf, "failed") == 0 || strcmp(st.buf, "timed_out") == 0 ? STATUS_ERROR
                                                                                   : STATUS_UNSET;
    char msg[64];
    int rc = rs_fmt(msg, sizeof msg, "subagent %s", st.len < 40 ? st.buf : "failed");
    rc = rc < 0 ? rc : span_end(&s, code, code == STATUS_ERROR ? msg : NULL);
    rs_buf_release(&st);
    return rc;
}

static int task_event(rfs_otel *o, const rfs_ev *ev, rs_buf *out)
{
    rs_buf id = RS_BUF_INIT;
    int rc = ev->task_id.p ? rfs_jl_text(&id, ev->task_id, 0) : 0;
    task *t = rc ? NULL : rfs_map_get(o->tasks, id.buf, id.len, 1);
    if (!rc && !t)
        rc = -ENOMEM;
    if (!rc && ev->kind == RFS_EV_TASK_START && !t->started && !t->ended) {
        t->started = 1;
        t->seq = ev->rec->seq;
        t->t_us = ev->t_us;
    } else if (!rc && ev->kind == RFS_EV_TASK_END && !t->ended) {
        t->ended = 1;
        rc = subagent(o, id.buf, id.len, t, ev, out);
    }
    rs_buf_release(&id);
    return rc;
}

static char *text_of(rfs_span s)
{
    rs_buf b = RS_BUF_INIT;
    if (!rfs_jl_is(s, '"') || rfs_jl_text(&b, s, 0) || (b.len == 0 && rs_buf_grow(&b, 1))) {
        rs_buf_release(&b);
        return NULL;
    }
    return rs_buf_detach(&b, NULL);
}

static int keep_call(void *ctx, rfs_call *call)
{
    (void)ctx;
    (void)call;
    return 0;
}

int rfs_otel_feed(rfs_otel *o, const rs_record *rec, rs_buf *out)
{
    int rc = start(o, out);
    if (rc)
        return rc;
    rfs_ev ev;
    rfs_ev_read(rec, &ev);
    if (o->events++ == 0) {
        o->first_seq = rec->seq;
        o->first_us = ev.t_us;
    }
    o->last_us = ev.t_us;
    if (!o->agent && strcmp(rec->event_type, "run.start") == 0)
        o->agent = text_of(rfs_jl_member(ev.metadata, "caller"));
    switch (ev.kind) {
    case RFS_EV_MODEL:
        for (int i = 0; i < RFS_USAGE_N; i++)
            o->usage[i] += ev.usage[i] >= 0 ? ev.usage[i] : 0;
        if ((rc = chat(o, &ev, out)))
            return rc;
        return rfs_calls_add(o->calls, &ev, keep_call, NULL);
    case RFS_EV_RESULT: {
        rfs_call *call = rfs_calls_take(o->calls, &ev);
        rc = call ? tool(o, call, &ev, out) : 0;
        rfs_call_free(call);
        return rc;
    }
    case RFS_EV_TASK_START:
    case RFS_EV_TASK_END: return task_event(o, &ev, out);
    case RFS_EV_TERMINAL:
        if (!o->terminal) {
            o->terminal = 1;
            o->status = ev.status.p ? text_of(ev.status) : NULL;
        }
        return 0;
    default: return 0;
    }
}

static int root(rfs_otel *o, rs_buf *out)
{
    span_out s = span_begin(o, out, span_id(SPAN_ROOT, 0, o->first_seq), 1, "invoke_agent", 12,
                            KIND_INTERNAL, o->first_us, o->last_us);
    attr_str(&s, "gen_ai.operation.name", "invoke_agent", 12);
    if (o->agent)
        attr_str(&s, "gen_ai.agent.name", o->agent, strlen(o->agent));
    attr_str(&s, "gen_ai.conversation.id", o->thread_id, strlen(o->thread_id));
    attr_str(&s, "runfs.thread_id", o->thread_id, strlen(o->thread_id));
    attr_str(&s, "runfs.run_id", o->run_id, strlen(o->run_id));
    attr_usage(&s, o->usage);
    attr_int(&s, "runfs.seq", o->first_seq);
    attr_int(&s, "runfs.events", o->events);
    if (o->status)
        attr_str(&s, "runfs.status", o->status, strlen(o->status));
    if (!o->terminal)
        attr_bool(&s, "runfs.no_terminal", 1);
    int ok = o->status && strcmp(o->status, "success") == 0;
    char msg[64];
    int rc = rs_fmt(msg, sizeof msg, "run.terminal %s",
                    o->status && strlen(o->status) < 40 ? o->status : "not success");
    return rc < 0 ? rc
                  : span_end(&s,
                             !o->terminal ? STATUS_UNSET
                             : ok         ? STATUS_OK
                                          : STATUS_ERROR,
                             ok || !o->terminal ? NULL : msg);
}

int rfs_otel_finish(rfs_otel *o, rs_buf *out)
{
    int rc = start(o, out);
    for (rfs_call *c = rfs_calls_first(o->calls); !rc && c; c = c->next)
        rc = tool(o, c, NULL, out);
    for (size_t i = 0; !rc && i < rfs_map_count(o->tasks); i++) {
        task *t = rfs_map_val(o->tasks, i);
        size_t len;
        const char *id = rfs_map_key(o->tasks, i, &len);
        if (t->started && !t->ended)
            rc = subagent(o, id, len, t, NULL, out);
    }
    if (!rc && o->events)
        rc = root(o, out);
    return rc ? rc : rs_buf_addlit(out, "]}]}]}\n");
}
