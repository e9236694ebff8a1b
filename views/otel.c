/* otel.c — see otel.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "glance.h"
#include "otel.h"
#include "rs_util.h"

/* Span ids: the span's kind in the top byte, a tool call's place in its response below it,
 * the seq of the event that starts it in the low 40 bits: unique in the run, never zero. */
enum { SPAN_ROOT = 1, SPAN_CHAT = 2, SPAN_TOOL = 3, SPAN_TASK = 4 };
/* OTLP's SpanKind and StatusCode. */
enum { KIND_INTERNAL = 1, KIND_CLIENT = 3 };
enum { STATUS_UNSET = 0, STATUS_OK = 1, STATUS_ERROR = 2 };

typedef struct task {
    int started, ended;
    int64_t seq, t_us;
    int64_t held; /* events held for its span */
} task;

/* An error's or middleware event's span event, held until the span it fell in is written. */
typedef struct held_event {
    uint64_t span;
    char *json;
    size_t len;
} held_event;

struct rfs_otel {
    char *thread_id, *run_id;
    char trace_id[33];
    int started;
    int64_t spans;
    rs_buf head;        /* the request's start, up to its first span */
    rs_buf root_events; /* the root span's events (errors, middleware), comma-separated */
    held_event *held;   /* other spans' events, until their span is written */
    size_t n_held, cap_held;
    size_t *open_tasks; /* the tasks started and not ended (rfs_map_index), oldest first */
    size_t n_open, cap_open;
    /* Parts (rfs_otel_set_part): the one rendered (0: the whole run), the one the spans go
     * to now, and what it holds. */
    int64_t part, cur_part, cur_spans, cur_bytes;
    rfs_calls *calls;
    rfs_map *tasks; /* task id (text) -> task */
    int64_t events, first_seq, first_us, last_us;
    int64_t usage[RFS_USAGE_N];
    int terminal;
    char *status; /* run.terminal's content.status */
    char *agent;  /* run.start's metadata.caller */
};

#define FOOT "]}]}]}\n"

/* The resource (service.name, gen_ai.agent.name) and the scope, up to the spans. */
static int make_head(rs_buf *b, const char *service, const char *agent)
{
    int rc = rs_buf_addlit(b, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":"
                              "\"service.name\",\"value\":{\"stringValue\":");
    if (!rc)
        rc = rs_buf_add_json_string(b, service, strlen(service));
    if (!rc && agent &&
        !(rc = rs_buf_addlit(b, "}},{\"key\":\"gen_ai.agent.name\",\"value\":{"
                                "\"stringValue\":")))
        rc = rs_buf_add_json_string(b, agent, strlen(agent));
    return rc ? rc
              : rs_buf_addf(b,
                            "}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"runfs\",\"version\":"
                            "\"%s\"},\"spans\":[",
                            RS_VERSION);
}

int rfs_otel_new(rfs_otel **out, const char *thread_id, const char *run_id, const char *service,
                 const char *agent)
{
    rfs_otel *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    o->head = (rs_buf)RS_BUF_INIT;
    o->root_events = (rs_buf)RS_BUF_INIT;
    o->cur_part = 1;
    if (!(o->thread_id = strdup(thread_id)) || !(o->run_id = strdup(run_id)) ||
        (agent && !(o->agent = strdup(agent))) || rfs_calls_new(&o->calls) ||
        rfs_map_new(&o->tasks, sizeof(task)) ||
        make_head(&o->head, service ? service : "runfs", agent)) {
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
    rs_buf_release(&o->head);
    rs_buf_release(&o->root_events);
    for (size_t i = 0; i < o->n_held; i++)
        free(o->held[i].json);
    free(o->held);
    free(o->open_tasks);
    free(o->status);
    free(o->agent);
    free(o->thread_id);
    free(o->run_id);
    free(o);
}

static char *dup_or_null(const char *v, int *failed)
{
    char *d = v ? strdup(v) : NULL;
    *failed |= v && !d;
    return d;
}

int rfs_otel_clone(const rfs_otel *o, rfs_otel **out)
{
    rfs_otel *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    *c = *o;
    c->calls = NULL;
    c->tasks = NULL;
    c->head = (rs_buf)RS_BUF_INIT;
    c->root_events = (rs_buf)RS_BUF_INIT;
    c->held = NULL;
    c->n_held = c->cap_held = 0;
    c->open_tasks = NULL;
    c->n_open = c->cap_open = 0;
    int failed = rs_buf_add(&c->head, o->head.buf, o->head.len) ||
                 rs_buf_add(&c->root_events, o->root_events.buf, o->root_events.len);
    if (!failed && o->n_held &&
        !(failed = rs_array_grow(&c->held, &c->cap_held, o->n_held, sizeof *c->held) != 0))
        for (; c->n_held < o->n_held && !failed; c->n_held++) {
            const held_event *h = &o->held[c->n_held];
            char *json = malloc(h->len);
            failed = !json;
            if (json)
                memcpy(json, h->json, h->len);
            c->held[c->n_held] = (held_event){h->span, json, h->len};
        }
    if (!failed && o->n_open &&
        !(failed = rs_array_grow(&c->open_tasks, &c->cap_open, o->n_open, sizeof *c->open_tasks) !=
                   0)) {
        memcpy(c->open_tasks, o->open_tasks, o->n_open * sizeof *o->open_tasks);
        c->n_open = o->n_open;
    }
    c->thread_id = dup_or_null(o->thread_id, &failed);
    c->run_id = dup_or_null(o->run_id, &failed);
    c->status = dup_or_null(o->status, &failed);
    c->agent = dup_or_null(o->agent, &failed);
    if (failed || rfs_calls_clone(o->calls, &c->calls) || rfs_map_clone(o->tasks, &c->tasks)) {
        rfs_otel_free(c);
        return -ENOMEM;
    }
    *out = c;
    return 0;
}

/* ---- kept positions ----
 * A mark is the renderer's state after the rows up to seq, whose bytes end at off: a read
 * there renders on from the copy instead of from the first row. One every MARK_EVERY bytes
 * at most, and only where the state is small (what is still open: calls and tasks), so
 * copying it costs a sliver of rendering the bytes since the last mark. */
#define MARK_EVERY ((int64_t)1 << 20)
#define MARK_OPEN_MAX 4096

typedef struct mark {
    int64_t off, seq;
    rfs_otel *state;
} mark;

struct rfs_otel_marks {
    pthread_mutex_t lock; /* guards refs and the marks */
    int refs;
    mark *v; /* by offset */
    size_t n, cap;
};

int rfs_otel_marks_new(rfs_otel_marks **out)
{
    rfs_otel_marks *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    pthread_mutex_init(&m->lock, NULL);
    m->refs = 1;
    *out = m;
    return 0;
}

rfs_otel_marks *rfs_otel_marks_retain(rfs_otel_marks *m)
{
    pthread_mutex_lock(&m->lock);
    m->refs++;
    pthread_mutex_unlock(&m->lock);
    return m;
}

void rfs_otel_marks_release(rfs_otel_marks *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    int last = --m->refs == 0;
    pthread_mutex_unlock(&m->lock);
    if (!last)
        return;
    for (size_t i = 0; i < m->n; i++)
        rfs_otel_free(m->v[i].state);
    free(m->v);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

int64_t rfs_otel_mark(rfs_otel_marks *m, const rfs_otel *o, int64_t off, int64_t seq)
{
    pthread_mutex_lock(&m->lock);
    int64_t last = m->n ? m->v[m->n - 1].off : 0;
    pthread_mutex_unlock(&m->lock);
    if (off < last + MARK_EVERY)
        return last + MARK_EVERY;
    rfs_otel *copy;
    if (!o->started ||
        rfs_calls_count(o->calls) + rfs_map_count(o->tasks) + o->n_held > MARK_OPEN_MAX ||
        rfs_otel_clone(o, &copy))
        return off + 1; /* the next row tries again */
    pthread_mutex_lock(&m->lock);
    /* Another renderer of the same bytes may have marked meanwhile: marks stay in order. */
    int keep = (!m->n || m->v[m->n - 1].off < off) &&
               rs_array_grow(&m->v, &m->cap, m->n + 1, sizeof *m->v) == 0;
    if (keep)
        m->v[m->n++] = (mark){off, seq, copy};
    last = m->n ? m->v[m->n - 1].off : 0;
    pthread_mutex_unlock(&m->lock);
    if (!keep)
        rfs_otel_free(copy);
    return last + MARK_EVERY;
}

int rfs_otel_resume(rfs_otel_marks *m, int64_t off, int64_t after, rfs_otel **o, int64_t *at,
                    int64_t *seq)
{
    int rc = 0;
    pthread_mutex_lock(&m->lock);
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && m->v[lo - 1].off > after) {
        const mark *k = &m->v[lo - 1];
        if (!(rc = rfs_otel_clone(k->state, o))) {
            *at = k->off;
            *seq = k->seq;
            rc = 1;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static uint64_t span_id(int kind, int index, int64_t seq)
{
    return (uint64_t)kind << 56 | (uint64_t)(index & 0xffff) << 40 |
           ((uint64_t)seq & 0xffffffffffULL);
}

/* ---- writing a span ----
 * Straight into out's spare room: a 1M-event run writes a million spans, and each piece
 * through its own rs_buf call cost more than the rest of the rendering. The room is grown
 * once per string written (WRITE_ROOM after it), and no run of fixed pieces between two
 * strings (a head, the integer attributes, a status) comes near that. */
#define WRITE_ROOM 1024

typedef struct span_out {
    rs_buf *out;
    char *p; /* where the next byte goes; out->len is stale until span_end */
    int rc;
    size_t at; /* where the span starts in out */
} span_out;

#define PUT(s, lit) (memcpy((s)->p, "" lit, sizeof(lit) - 1), (s)->p += sizeof(lit) - 1)

static void put_int(span_out *s, int64_t v)
{
    /* Two digits a step: a span's times are nineteen digits each. */
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char d[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100) * 2;
        u /= 100;
        d[sizeof d - 1 - n++] = pairs[r + 1];
        d[sizeof d - 1 - n++] = pairs[r];
    }
    if (u >= 10) {
        d[sizeof d - 1 - n++] = pairs[u * 2 + 1];
        d[sizeof d - 1 - n++] = pairs[u * 2];
    } else {
        d[sizeof d - 1 - n++] = (char)('0' + u);
    }
    if (v < 0)
        d[sizeof d - 1 - n++] = '-';
    memcpy(s->p, d + sizeof d - n, n);
    s->p += n;
}

static void put_hex(span_out *s, uint64_t v)
{
    for (int i = 15; i >= 0; i--, v >>= 4)
        s->p[i] = rs_hex_digits[v & 15];
    s->p += 16;
}

/* A JSON string, then the room again. */
static void put_str(span_out *s, const char *v, size_t len)
{
    if (s->rc)
        return;
    rs_buf_setlen(s->out, (size_t)(s->p - s->out->buf));
    if (!(s->rc = rs_buf_add_json_string(s->out, v, len)))
        s->rc = rs_buf_grow(s->out, WRITE_ROOM);
    s->p = s->out->buf + s->out->len;
}

/* The string literal lit of a record as a JSON string: itself when it holds no escape (the
 * lines are valid UTF-8, escaped only where JSON must be), else its text written again. */
static void put_lit(span_out *s, rfs_span lit)
{
    if (s->rc)
        return;
    if (!memchr(lit.p, '\\', lit.n)) {
        rs_buf_setlen(s->out, (size_t)(s->p - s->out->buf));
        if (!(s->rc = rs_buf_add(s->out, lit.p, lit.n)))
            s->rc = rs_buf_grow(s->out, WRITE_ROOM);
        s->p = s->out->buf + s->out->len;
        return;
    }
    rs_buf text = RS_BUF_INIT;
    if (!(s->rc = rfs_jl_text(&text, lit, 0)))
        put_str(s, text.buf, text.len);
    rs_buf_release(&text);
}

/* Attributes after the first (gen_ai.operation.name, which every span has first). */
#define ATTR(s, key) PUT(s, ",{\"key\":\"" key "\",\"value\":{")

static void attr_str(span_out *s, const char *key_lit, size_t key_len, const char *v, size_t len)
{
    if (s->rc)
        return;
    memcpy(s->p, key_lit, key_len);
    s->p += key_len;
    PUT(s, "\"stringValue\":");
    put_str(s, v, len);
    if (!s->rc)
        PUT(s, "}}");
}
#define ATTR_STR(s, key, v, len) \
    attr_str(s, ",{\"key\":\"" key "\",\"value\":{", \
             sizeof(",{\"key\":\"" key "\",\"value\":{") - 1, v, len)

static void attr_int_tail(span_out *s, int64_t v)
{
    PUT(s, "\"intValue\":\"");
    put_int(s, v);
    PUT(s, "\"}}");
}
#define ATTR_INT(s, key, v) \
    do { \
        if (!(s)->rc) { \
            ATTR(s, key); \
            attr_int_tail(s, v); \
        } \
    } while (0)
#define ATTR_TRUE(s, key) \
    do { \
        if (!(s)->rc) { \
            ATTR(s, key); \
            PUT(s, "\"boolValue\":true}}"); \
        } \
    } while (0)

static void attr_usage(span_out *s, const int64_t *usage)
{
    if (usage[0] >= 0)
        ATTR_INT(s, "gen_ai.usage.input_tokens", usage[0]);
    if (usage[1] >= 0)
        ATTR_INT(s, "gen_ai.usage.output_tokens", usage[1]);
}

/* The span's head and its first attribute, gen_ai.operation.name = op; name (name_len bytes)
 * NULL: the name is op. */
static span_out span_begin(rfs_otel *o, rs_buf *out, uint64_t id, int root, const char *op,
                           const char *name, size_t name_len, int kind, int64_t start_us,
                           int64_t end_us)
{
    span_out s = {.out = out, .at = out->len};
    if (start_us < 0)
        start_us = 0;
    if (end_us < start_us)
        end_us = start_us;
    if ((s.rc = rs_buf_grow(out, WRITE_ROOM)))
        return s;
    s.p = out->buf + out->len;
    /* A part's spans are separated once it is known which part a span is in (place). */
    if (o->spans++ && !o->part)
        *s.p++ = ',';
    PUT(&s, "{\"traceId\":\"");
    memcpy(s.p, o->trace_id, 32);
    s.p += 32;
    PUT(&s, "\",\"spanId\":\"");
    put_hex(&s, id);
    *s.p++ = '"';
    if (!root) {
        PUT(&s, ",\"parentSpanId\":\"");
        put_hex(&s, span_id(SPAN_ROOT, 0, o->first_seq));
        *s.p++ = '"';
    }
    PUT(&s, ",\"name\":");
    put_str(&s, name ? name : op, name ? name_len : strlen(op));
    if (s.rc)
        return s;
    /* Times in nanoseconds, as strings: OTLP/JSON's mapping of fixed64. */
    PUT(&s, ",\"kind\":");
    *s.p++ = (char)('0' + kind);
    PUT(&s, ",\"startTimeUnixNano\":\"");
    put_int(&s, start_us);
    PUT(&s, "000\",\"endTimeUnixNano\":\"");
    put_int(&s, end_us);
    PUT(&s, "000\",\"attributes\":[{\"key\":\"gen_ai.operation.name\",\"value\":{\"stringValue\":");
    put_str(&s, op, strlen(op));
    if (!s.rc)
        PUT(&s, "}}");
    return s;
}

/* Count a span of len bytes (without a separator) into its part, as place splits them: 1
 * when it begins a new part. The whole run's rendering counts too, so otel/count is known
 * from the pass that sizes otel.json. */
static int count_span(rfs_otel *o, size_t len)
{
    size_t foot = sizeof FOOT - 1;
    int next = o->cur_spans && (o->cur_spans == RFS_OTEL_PART_SPANS ||
                                o->head.len + o->cur_bytes + 1 + len + foot > RFS_OTEL_PART_BYTES);
    if (next) {
        o->cur_part++;
        o->cur_spans = o->cur_bytes = 0;
    }
    o->cur_bytes += (o->cur_spans ? 1 : 0) + len;
    o->cur_spans++;
    return next;
}

/* Put the last span of out (from at) in its part: a part ends before a span would make it
 * more than RFS_OTEL_PART_SPANS spans or RFS_OTEL_PART_BYTES bytes. The span stays, behind
 * the request's head or a comma, only when its part is the one rendered. */
static int place(rfs_otel *o, rs_buf *out, size_t at)
{
    size_t len = out->len - at;
    int closed = o->cur_part == o->part;
    closed &= count_span(o, len);
    if (o->cur_part != o->part) {
        rs_buf_setlen(out, at);
        return closed ? rs_buf_addlit(out, FOOT) : 0;
    }
    const char *pre = o->cur_spans > 1 ? "," : o->head.buf;
    size_t n = o->cur_spans > 1 ? 1 : o->head.len;
    int rc = rs_buf_grow(out, n);
    if (rc)
        return rc;
    memmove(out->buf + at + n, out->buf + at, len);
    memcpy(out->buf + at, pre, n);
    rs_buf_setlen(out, out->len + n);
    return 0;
}

/* events: the span's events (NULL: none), after its attributes. */
static int span_end(rfs_otel *o, span_out *s, const rs_buf *events, int status, const char *message)
{
    if (!s->rc) {
        *s->p++ = ']';
        if (events && events->len) {
            rs_buf_setlen(s->out, (size_t)(s->p - s->out->buf));
            if (!(s->rc = rs_buf_addlit(s->out, ",\"events\":[")) &&
                !(s->rc = rs_buf_add(s->out, events->buf, events->len)) &&
                !(s->rc = rs_buf_addch(s->out, ']')))
                s->rc = rs_buf_grow(s->out, WRITE_ROOM);
            s->p = s->out->buf + s->out->len;
        }
    }
    if (!s->rc) {
        if (status != STATUS_UNSET) {
            PUT(s, ",\"status\":{\"code\":");
            *s->p++ = (char)('0' + status);
            if (message) {
                PUT(s, ",\"message\":");
                put_str(s, message, strlen(message));
            }
            if (!s->rc)
                *s->p++ = '}';
        }
        if (!s->rc)
            *s->p++ = '}';
    }
    if (s->rc)
        return s->rc;
    rs_buf_setlen(s->out, (size_t)(s->p - s->out->buf));
    if (o->part)
        return place(o, s->out, s->at);
    /* The whole run's spans after the first carry their separator. */
    (void)count_span(o, s->out->len - s->at - (o->spans > 1));
    return 0;
}

static int start(rfs_otel *o, rs_buf *out)
{
    if (o->started)
        return 0;
    o->started = 1;
    return o->part ? 0 : rs_buf_add(out, o->head.buf, o->head.len);
}

static int chat(rfs_otel *o, const rfs_ev *ev, rs_buf *out)
{
    int64_t begin = ev->latency_ms >= 0 ? ev->t_us - ev->latency_ms * 1000 : ev->t_us;
    span_out s = span_begin(o, out, span_id(SPAN_CHAT, 0, ev->rec->seq), 0, "chat", NULL, 0,
                            KIND_CLIENT, begin, ev->t_us);
    if (ev->model.p && !s.rc) {
        PUT(&s, ",{\"key\":\"gen_ai.response.model\",\"value\":{\"stringValue\":");
        put_lit(&s, ev->model);
        if (!s.rc)
            PUT(&s, "}}");
    }
    /* The latency is the span's own length, and a total of tokens no attribute of the
     * conventions: neither is written again (a fifth of the file). */
    attr_usage(&s, ev->usage);
    ATTR_INT(&s, "runfs.seq", ev->rec->seq);
    return span_end(o, &s, NULL, STATUS_UNSET, NULL);
}

/* The events held for span, comma-separated onto evs, and held no more. */
static int take_held(rfs_otel *o, uint64_t span, rs_buf *evs)
{
    size_t keep = 0;
    int rc = 0;
    for (size_t i = 0; i < o->n_held; i++) {
        held_event *h = &o->held[i];
        if (h->span != span) {
            o->held[keep++] = *h;
            continue;
        }
        if (!rc && evs->len)
            rc = rs_buf_addch(evs, ',');
        if (!rc)
            rc = rs_buf_add(evs, h->json, h->len);
        free(h->json);
    }
    o->n_held = keep;
    return rc;
}

/* A tool call's span: ended by its result (res) or, unanswered (res NULL), by the run. */
static int tool(rfs_otel *o, const rfs_call *call, const rfs_ev *res, rs_buf *out)
{
    size_t name_len = strlen(call->name);
    char head[64] = "execute_tool ", *name = head;
    if (name_len > sizeof head - 14 && !(name = malloc(name_len + 14)))
        return -ENOMEM;
    memcpy(name, "execute_tool ", 13);
    memcpy(name + 13, call->name, name_len + 1);
    span_out s = span_begin(o, out, span_id(SPAN_TOOL, call->index, call->seq), 0, "execute_tool",
                            name, name_len + 13, KIND_INTERNAL, call->t_us,
                            res ? res->t_us : o->last_us);
    if (name != head)
        free(name);
    ATTR_STR(&s, "gen_ai.tool.name", call->name, name_len);
    if (call->id)
        ATTR_STR(&s, "gen_ai.tool.call.id", call->id, call->id_len);
    ATTR_INT(&s, "runfs.seq", call->seq);
    if (res)
        ATTR_INT(&s, "runfs.result_seq", res->rec->seq);
    else
        ATTR_TRUE(&s, "runfs.unanswered");
    int err = res && res->error;
    rs_buf evs = RS_BUF_INIT;
    if (!s.rc && call->user)
        s.rc = take_held(o, span_id(SPAN_TOOL, call->index, call->seq), &evs);
    int rc = span_end(o, &s, &evs, err ? STATUS_ERROR : STATUS_UNSET,
                      err ? "tool result status error" : NULL);
    rs_buf_release(&evs);
    return rc;
}

/* A subagent task's span: ended by its subagent.end (end) or, unfinished, by the run. */
static int subagent(rfs_otel *o, const char *id, size_t id_len, const task *t, const rfs_ev *end,
                    rs_buf *out)
{
    int64_t seq = t->started ? t->seq : end->rec->seq;
    int64_t begin = t->started ? t->t_us : end->t_us;
    span_out s = span_begin(o, out, span_id(SPAN_TASK, 0, seq), 0, "invoke_agent", NULL, 0,
                            KIND_INTERNAL, begin, end ? end->t_us : o->last_us);
    ATTR_STR(&s, "runfs.task_id", id, id_len);
    rs_buf st = RS_BUF_INIT;
    if (end && end->status.p && !s.rc && !(s.rc = rfs_jl_text(&st, end->status, 0)))
        ATTR_STR(&s, "runfs.task_status", st.buf, st.len);
    if (end && end->model.p && !s.rc) {
        PUT(&s, ",{\"key\":\"gen_ai.response.model\",\"value\":{\"stringValue\":");
        put_lit(&s, end->model);
        if (!s.rc)
            PUT(&s, "}}");
    }
    if (end)
        attr_usage(&s, end->usage);
    ATTR_INT(&s, "runfs.seq", seq);
    if (end)
        ATTR_INT(&s, "runfs.end_seq", end->rec->seq);
    else
        ATTR_TRUE(&s, "runfs.unfinished");
    int code = !end                                                                ? STATUS_UNSET
               : strcmp(st.buf, "completed") == 0                                  ? STATUS_OK
               : strcmp(st.buf, "failed") == 0 || strcmp(st.buf, "timed_out") == 0 ? STATUS_ERROR
                                                                                   : STATUS_UNSET;
    char msg[64];
    rs_buf evs = RS_BUF_INIT;
    int rc = rs_fmt(msg, sizeof msg, "subagent %s", st.len < 40 ? st.buf : "failed");
    if (rc >= 0 && !s.rc && t->held)
        s.rc = take_held(o, span_id(SPAN_TASK, 0, seq), &evs);
    rc = rc < 0 ? rc : span_end(o, &s, &evs, code, code == STATUS_ERROR ? msg : NULL);
    rs_buf_release(&evs);
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
        if (!(rc = rs_array_grow(&o->open_tasks, &o->cap_open, o->n_open + 1,
                                 sizeof *o->open_tasks)))
            o->open_tasks[o->n_open++] = rfs_map_index(o->tasks, t);
    } else if (!rc && ev->kind == RFS_EV_TASK_END && !t->ended) {
        t->ended = 1;
        size_t at = rfs_map_index(o->tasks, t);
        for (size_t i = o->n_open; t->started && i-- > 0;)
            if (o->open_tasks[i] == at) {
                memmove(o->open_tasks + i, o->open_tasks + i + 1,
                        (o->n_open - i - 1) * sizeof *o->open_tasks);
                o->n_open--;
                break;
            }
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

/* An error's message: its content when a string, else content.message or content.error when
 * a string, else the content as JSON. */
static int error_message(const rfs_ev *ev, rs_buf *out)
{
    rfs_span c = ev->content, m = c;
    if (rfs_jl_is(c, '{')) {
        m = rfs_jl_member(c, "message");
        if (!rfs_jl_is(m, '"'))
            m = rfs_jl_member(c, "error");
    }
    if (rfs_jl_is(m, '"'))
        return rfs_jl_text(out, m, 0);
    return c.p ? rs_buf_add(out, c.p, c.n) : 0;
}

/* An error's (an exception event) or a middleware event's (named by its tag) span event. */
static int event_json(rs_buf *b, const rfs_ev *ev)
{
    rs_buf msg = RS_BUF_INIT;
    int err = ev->kind == RFS_EV_ERROR;
    const char *name = err ? "exception" : ev->tag;
    int rc = rs_buf_addf(
        b, "{\"timeUnixNano\":\"%lld000\",\"name\":", (long long)(ev->t_us > 0 ? ev->t_us : 0));
    if (!rc)
        rc = rs_buf_add_json_string(b, name, strlen(name));
    if (!rc)
        rc = rs_buf_addlit(b, ",\"attributes\":[");
    if (!rc && err &&
        !(rc = rs_buf_addlit(b, "{\"key\":\"exception.type\",\"value\":{\"stringValue\":")) &&
        !(rc = rs_buf_add_json_string(b, ev->rec->event_type, strlen(ev->rec->event_type))) &&
        !(rc = rs_buf_addlit(b, "}},{\"key\":\"exception.message\",\"value\":{\"stringValue\":")) &&
        !(rc = error_message(ev, &msg)) &&
        !(rc = rs_buf_add_json_string(b, msg.buf ? msg.buf : "", msg.len)))
        rc = rs_buf_addlit(b, "}},");
    if (!rc)
        rc = rs_buf_addf(b, "{\"key\":\"runfs.seq\",\"value\":{\"intValue\":\"%lld\"}}]}",
                         (long long)ev->rec->seq);
    rs_buf_release(&msg);
    return rc;
}

/* An error or middleware event goes on the span it falls in: the newest of the tool calls
 * and subagent tasks still open (a call with no id is never answered, so it is open to the
 * run's end and would take every later event: it is passed over), else the root span. */
static int span_event(rfs_otel *o, const rfs_ev *ev)
{
    rfs_call *call = rfs_calls_last(o->calls);
    while (call && !call->id)
        call = call->prev;
    task *t = o->n_open ? rfs_map_val(o->tasks, o->open_tasks[o->n_open - 1]) : NULL;
    if (t && call && call->seq > t->seq)
        t = NULL;
    else if (t)
        call = NULL;
    if (!call && !t) {
        rs_buf *b = &o->root_events;
        int rc = b->len ? rs_buf_addch(b, ',') : 0;
        return rc ? rc : event_json(b, ev);
    }
    rs_buf one = RS_BUF_INIT;
    int rc = event_json(&one, ev);
    if (!rc)
        rc = rs_array_grow(&o->held, &o->cap_held, o->n_held + 1, sizeof *o->held);
    if (rc) {
        rs_buf_release(&one);
        return rc;
    }
    size_t len;
    char *json = rs_buf_detach(&one, &len);
    uint64_t span = t ? span_id(SPAN_TASK, 0, t->seq) : span_id(SPAN_TOOL, call->index, call->seq);
    o->held[o->n_held++] = (held_event){span, json, len};
    if (t)
        t->held++;
    else
        call->user++;
    return 0;
}

static int keep_call(void *ctx, rfs_call *call)
{
    (void)ctx;
    (void)call;
    return 0;
}

int rfs_otel_feed(rfs_otel *o, const rfs_ev *ev, rs_buf *out)
{
    int rc = start(o, out);
    if (rc)
        return rc;
    const rs_record *rec = ev->rec;
    if (o->events++ == 0) {
        o->first_seq = rec->seq;
        o->first_us = ev->t_us;
    }
    o->last_us = ev->t_us;
    switch (ev->kind) {
    case RFS_EV_MODEL:
        for (int i = 0; i < RFS_USAGE_N; i++)
            o->usage[i] += ev->usage[i] >= 0 ? ev->usage[i] : 0;
        if ((rc = chat(o, ev, out)))
            return rc;
        return rfs_calls_add(o->calls, ev, keep_call, NULL);
    case RFS_EV_RESULT: {
        rfs_call *call = rfs_calls_take(o->calls, ev);
        rc = call ? tool(o, call, ev, out) : 0;
        rfs_call_free(call);
        return rc;
    }
    case RFS_EV_TASK_START:
    case RFS_EV_TASK_END: return task_event(o, ev, out);
    case RFS_EV_TERMINAL:
        if (!o->terminal) {
            o->terminal = 1;
            o->status = ev->status.p ? text_of(ev->status) : NULL;
        }
        return 0;
    case RFS_EV_ERROR:
    case RFS_EV_MIDDLEWARE: return span_event(o, ev);
    default: return 0;
    }
}

static int root(rfs_otel *o, rs_buf *out)
{
    span_out s = span_begin(o, out, span_id(SPAN_ROOT, 0, o->first_seq), 1, "invoke_agent", NULL, 0,
                            KIND_INTERNAL, o->first_us, o->last_us);
    if (o->agent)
        ATTR_STR(&s, "gen_ai.agent.name", o->agent, strlen(o->agent));
    ATTR_STR(&s, "gen_ai.conversation.id", o->thread_id, strlen(o->thread_id));
    ATTR_STR(&s, "runfs.thread_id", o->thread_id, strlen(o->thread_id));
    ATTR_STR(&s, "runfs.run_id", o->run_id, strlen(o->run_id));
    attr_usage(&s, o->usage);
    ATTR_INT(&s, "runfs.seq", o->first_seq);
    ATTR_INT(&s, "runfs.events", o->events);
    if (o->status)
        ATTR_STR(&s, "runfs.status", o->status, strlen(o->status));
    if (!o->terminal)
        ATTR_TRUE(&s, "runfs.no_terminal");
    int ok = o->status && strcmp(o->status, "success") == 0;
    char msg[64];
    int rc = rs_fmt(msg, sizeof msg, "run.terminal %s",
                    o->status && strlen(o->status) < 40 ? o->status : "not success");
    return rc < 0 ? rc
                  : span_end(o, &s, &o->root_events,
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
    if (rc || !o->part)
        return rc ? rc : rs_buf_addlit(out, FOOT);
    if (o->part < 0)
        return 0;
    if (o->part > o->cur_part)
        return -ENOENT;
    /* A run with no spans is one part: the request with none. */
    if (o->part == o->cur_part && !o->cur_spans)
        rc = rs_buf_add(out, o->head.buf, o->head.len);
    return rc || o->part != o->cur_part ? rc : rs_buf_addlit(out, FOOT);
}

void rfs_otel_set_part(rfs_otel *o, int64_t part)
{
    o->part = part;
}

int64_t rfs_otel_parts(const rfs_otel *o)
{
    return o->cur_part;
}
