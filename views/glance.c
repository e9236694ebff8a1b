/* glance.c — see glance.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glance.h"
#include "rs_util.h"

const char *const rfs_usage_names[RFS_USAGE_N] = {"input_tokens", "output_tokens", "total_tokens"};

static void read_usage(rfs_span usage, int64_t *out)
{
    rfs_span v[RFS_USAGE_N];
    rfs_jl_members(usage, rfs_usage_names, v, RFS_USAGE_N);
    for (int i = 0; i < RFS_USAGE_N; i++)
        if (!rfs_jl_count(v[i], &out[i]))
            out[i] = -1;
}

/* The members of content and of metadata any view reads, by their place in cv[] and mv[]. */
enum {
    C_TOOL_CALLS,
    C_RESPONSE_METADATA,
    C_CALL_ID,
    C_STATUS,
    C_USAGE,
    C_MODEL_NAME,
    C_CONTENT,
    C_N
};
static const char *const content_names[C_N] = {
    "tool_calls", "response_metadata", "tool_call_id", "status", "usage", "model_name", "content"};
enum { M_USAGE, M_LATENCY, M_TASK_ID, M_CALLER, M_STATUS, M_N };
static const char *const meta_names[M_N] = {"usage", "latency_ms", "task_id", "caller", "status"};

/* What a type's facts are read from: the members of content and of metadata looked for. */
typedef struct ev_shape {
    const unsigned char *content, *metadata;
    int nc, nm;
} ev_shape;

static const unsigned char model_content[] = {C_TOOL_CALLS, C_RESPONSE_METADATA};
static const unsigned char model_meta[] = {M_USAGE, M_LATENCY};
static const unsigned char result_content[] = {C_CALL_ID, C_STATUS};
static const unsigned char task_meta[] = {M_TASK_ID};
static const unsigned char end_content[] = {C_STATUS, C_USAGE, C_MODEL_NAME};
static const unsigned char terminal_content[] = {C_STATUS};

/* The members of obj named by want[0..n) (places in names) into out at those places. */
static void members_at(rfs_span obj, const char *const *names, const unsigned char *want, int n,
                       rfs_span *out)
{
    const char *pick[C_N] = {0};
    rfs_span v[C_N];
    for (int i = 0; i < n; i++)
        pick[i] = names[want[i]];
    rfs_jl_members(obj, pick, v, n);
    for (int i = 0; i < n; i++)
        out[want[i]] = v[i];
}

/* The same in the walk that finds content and metadata in the line (rfs_jl_body): 0 when
 * the line is not of that form. all: every member of both lists, whatever shape says. */
static int body_at(rfs_span line, const ev_shape *shape, int all, rfs_span *cv, rfs_span *mv,
                   rfs_ev *ev)
{
    if (all)
        return rfs_jl_body(line, content_names, cv, C_N, meta_names, mv, M_N, &ev->content,
                           &ev->metadata);
    const char *cn[C_N], *mn[M_N];
    rfs_span c[C_N], m[M_N];
    for (int i = 0; i < shape->nc; i++)
        cn[i] = content_names[shape->content[i]];
    for (int i = 0; i < shape->nm; i++)
        mn[i] = meta_names[shape->metadata[i]];
    if (!rfs_jl_body(line, cn, c, shape->nc, mn, m, shape->nm, &ev->content, &ev->metadata))
        return 0;
    for (int i = 0; i < shape->nc; i++)
        cv[shape->content[i]] = c[i];
    for (int i = 0; i < shape->nm; i++)
        mv[shape->metadata[i]] = m[i];
    return 1;
}

static void ev_read(const rs_record *rec, rfs_ev *ev, int all)
{
    static const char *const top[] = {"content", "metadata", "created_at"};
    static const unsigned char every_content[C_N] = {0, 1, 2, 3, 4, 5, 6};
    static const unsigned char every_meta[M_N] = {0, 1, 2, 3, 4};
    memset(ev, 0, sizeof *ev);
    ev->rec = rec;
    ev->latency_ms = -1;
    for (int i = 0; i < RFS_USAGE_N; i++)
        ev->usage[i] = -1;
    rfs_span v[3], line = rfs_jl_line(rec);
    /* Keys come in a fixed order and created_at is last but for a user_id (an id): it is
     * found in the line's tail, and types whose content and metadata no view reads (the
     * middleware markers, steps, human input) are not walked; an error's content is
     * otel.json's exception message. */
    static const char key[] = "\"created_at\":";
    /* Where it stands in a line without a user_id: "created_at":"<32 bytes>"} at the end. */
    const size_t last = sizeof key - 1 + 34 + 1;
    const char *at = line.n >= last ? line.p + line.n - last : NULL;
    if (!at || memcmp(at, key, sizeof key - 1) != 0) {
        size_t tail = line.n < 160 ? line.n : 160;
        at = memmem(line.p + line.n - tail, tail, key, sizeof key - 1);
    }
    v[2] = at ? (rfs_span){at + sizeof key - 1, 34} : (rfs_span){0};
    const char *type = rec->event_type;
    ev_shape shape = {0};
    if (strcmp(type, "llm.ai.response") == 0) {
        ev->kind = RFS_EV_MODEL;
        shape = (ev_shape){model_content, model_meta, 2, 2};
    } else if (strcmp(type, "llm.tool.result") == 0) {
        ev->kind = RFS_EV_RESULT;
        shape = (ev_shape){result_content, NULL, 2, 0};
    } else if (strcmp(type, "subagent.start") == 0) {
        ev->kind = RFS_EV_TASK_START;
        shape = (ev_shape){NULL, task_meta, 0, 1};
    } else if (strcmp(type, "subagent.end") == 0) {
        ev->kind = RFS_EV_TASK_END;
        shape = (ev_shape){end_content, task_meta, 3, 1};
    } else if (strcmp(type, "run.terminal") == 0) {
        ev->kind = RFS_EV_TERMINAL;
        shape = (ev_shape){terminal_content, NULL, 1, 0};
    } else if (strcmp(type, "run.error") == 0 || strcmp(type, "llm.error") == 0) {
        ev->kind = RFS_EV_ERROR;
    } else if (strncmp(type, "middleware:", 11) == 0) {
        ev->kind = RFS_EV_MIDDLEWARE;
        ev->tag = type + 11;
    }
    int plain = !all && (ev->kind == RFS_EV_MIDDLEWARE || strcmp(type, "subagent.step") == 0 ||
                         strcmp(type, "llm.human.input") == 0);
    rfs_span cv[C_N] = {{0}}, mv[M_N] = {{0}};
    int tail_ok = at && (size_t)(line.p + line.n - v[2].p) >= v[2].n && v[2].p[0] == '"';
    if (!tail_ok || (!plain && !body_at(line, &shape, all, cv, mv, ev))) {
        rfs_jl_members(line, top, v, tail_ok ? 2 : 3);
        ev->content = v[0];
        ev->metadata = v[1];
        if (all)
            shape = (ev_shape){every_content, every_meta, C_N, M_N};
        members_at(ev->content, content_names, shape.content, shape.nc, cv);
        members_at(ev->metadata, meta_names, shape.metadata, shape.nm, mv);
    }
    if (plain)
        ev->content = ev->metadata = (rfs_span){0};
    ev->created_at = v[2];
    if (rfs_jl_time_us(v[2], &ev->t_us))
        ev->t_us = 0;
    switch (ev->kind) {
    case RFS_EV_MODEL: {
        read_usage(mv[M_USAGE], ev->usage);
        if (!rfs_jl_count(mv[M_LATENCY], &ev->latency_ms))
            ev->latency_ms = -1;
        if (rfs_jl_is(cv[C_TOOL_CALLS], '['))
            ev->tool_calls = cv[C_TOOL_CALLS];
        rfs_span model = rfs_jl_member(cv[C_RESPONSE_METADATA], "model_name");
        if (rfs_jl_is(model, '"'))
            ev->model = model;
        break;
    }
    case RFS_EV_RESULT:
        if (rfs_jl_is(cv[C_CALL_ID], '"'))
            ev->call_id = cv[C_CALL_ID];
        ev->error = rfs_jl_str_is(cv[C_STATUS], "error");
        break;
    case RFS_EV_TASK_START:
    case RFS_EV_TASK_END:
        if (rfs_jl_is(mv[M_TASK_ID], '"'))
            ev->task_id = mv[M_TASK_ID];
        if (ev->kind == RFS_EV_TASK_END) {
            if (rfs_jl_is(cv[C_STATUS], '"'))
                ev->status = cv[C_STATUS];
            read_usage(cv[C_USAGE], ev->usage);
            if (rfs_jl_is(cv[C_MODEL_NAME], '"'))
                ev->model = cv[C_MODEL_NAME];
        }
        break;
    case RFS_EV_TERMINAL:
        if (rfs_jl_is(cv[C_STATUS], '"'))
            ev->status = cv[C_STATUS];
        break;
    default: break;
    }
    if (all) {
        ev->text = rfs_jl_is(ev->content, '{') ? cv[C_CONTENT] : ev->content;
        ev->said_by = mv[M_CALLER];
        ev->end_status = rfs_jl_is(cv[C_STATUS], '"') ? cv[C_STATUS] : mv[M_STATUS];
    }
}

void rfs_ev_read(const rs_record *rec, rfs_ev *ev)
{
    ev_read(rec, ev, 0);
}

void rfs_ev_read_all(const rs_record *rec, rfs_ev *ev)
{
    ev_read(rec, ev, 1);
}

/* ---- the map: entries in an array, found through rs_map (an entry is its index + 1) ---- */

typedef struct map_entry {
    char *key;
    size_t len;
} map_entry;

/* A key to look up: bytes and length. */
typedef struct map_key {
    const char *p;
    size_t len;
} map_key;

struct rfs_map {
    size_t val_size;
    map_entry *entries;
    char *vals;
    size_t count, cap;
    rs_map index;
};

static uint64_t key_hash(const void *ctx, const void *key)
{
    (void)ctx;
    const map_key *k = key;
    return rs_hash(RS_HASH_INIT, k->p, k->len);
}

static uint64_t entry_hash(const void *ctx, uintptr_t e)
{
    const map_entry *x = &((const rfs_map *)ctx)->entries[e - 1];
    return rs_hash(RS_HASH_INIT, x->key, x->len);
}

static int entry_matches(const void *ctx, uintptr_t e, const void *key)
{
    const map_entry *x = &((const rfs_map *)ctx)->entries[e - 1];
    const map_key *k = key;
    return x->len == k->len && memcmp(x->key, k->p, k->len) == 0;
}

static const rs_map_type map_type = {key_hash, entry_hash, entry_matches};

int rfs_map_new(rfs_map **out, size_t val_size)
{
    rfs_map *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->val_size = val_size;
    m->index = (rs_map)RS_MAP_INIT(&map_type, m);
    *out = m;
    return 0;
}

void rfs_map_free(rfs_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->count; i++)
        free(m->entries[i].key);
    free(m->entries);
    free(m->vals);
    rs_map_release(&m->index);
    free(m);
}

/* Up to this many keys a map is scanned rather than hashed: a run's categories, types and
 * models, counted at every row of a pass, are a few short names. */
#define MAP_SCAN_MAX 8

void *rfs_map_get(rfs_map *m, const char *key, size_t len, int create)
{
    if (m->count <= MAP_SCAN_MAX) {
        for (size_t i = 0; i < m->count; i++)
            if (m->entries[i].len == len && memcmp(m->entries[i].key, key, len) == 0)
                return m->vals + i * m->val_size;
    } else {
        map_key k = {key, len};
        uintptr_t e = rs_map_find(&m->index, &k);
        if (e)
            return m->vals + (e - 1) * m->val_size;
    }
    if (!create)
        return NULL;
    if (m->count == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        map_entry *x = realloc(m->entries, cap * sizeof *x);
        if (!x)
            return NULL;
        m->entries = x;
        char *v = realloc(m->vals, cap * m->val_size);
        if (!v)
            return NULL;
        m->vals = v;
        m->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy || rs_map_reserve(&m->index, m->count + 1)) {
        free(copy);
        return NULL;
    }
    memcpy(copy, key, len);
    copy[len] = '\0';
    size_t i = m->count++;
    m->entries[i] = (map_entry){.key = copy, .len = len};
    rs_map_add(&m->index, i + 1);
    void *v = m->vals + i * m->val_size;
    memset(v, 0, m->val_size);
    return v;
}

void *rfs_map_get_text(rfs_map *m, rfs_span s, int create)
{
    rs_buf key = RS_BUF_INIT;
    void *v = rfs_jl_text(&key, s, 0) ? NULL : rfs_map_get(m, key.buf, key.len, create);
    rs_buf_release(&key);
    return v;
}

size_t rfs_map_count(const rfs_map *m)
{
    return m->count;
}

int rfs_map_sorted(const rfs_map *m, size_t **sorted)
{
    size_t *idx = malloc((m->count ? m->count : 1) * sizeof *idx);
    if (!idx)
        return -ENOMEM;
    for (size_t i = 0; i < m->count; i++)
        idx[i] = i;
    /* An insertion sort keeps qsort's global comparator context out of threads: the maps
     * sorted are the few names of one run, so the quadratic case is small. */
    for (size_t i = 1; i < m->count; i++) {
        size_t v = idx[i], j = i;
        const map_entry *x = &m->entries[v];
        while (j > 0) {
            const map_entry *y = &m->entries[idx[j - 1]];
            size_t n = x->len < y->len ? x->len : y->len;
            int c = memcmp(y->key, x->key, n);
            if (c < 0 || (c == 0 && y->len <= x->len))
                break;
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
    *sorted = idx;
    return 0;
}

const char *rfs_map_key(const rfs_map *m, size_t i, size_t *len)
{
    if (len)
        *len = m->entries[i].len;
    return m->entries[i].key;
}

void *rfs_map_val(const rfs_map *m, size_t i)
{
    return m->vals + i * m->val_size;
}

size_t rfs_map_index(const rfs_map *m, const void *val)
{
    return (size_t)((const char *)val - m->vals) / m->val_size;
}

int rfs_map_clone(const rfs_map *m, rfs_map **out)
{
    rfs_map *c;
    int rc = rfs_map_new(&c, m->val_size);
    for (size_t i = 0; !rc && i < m->count; i++) {
        void *v = rfs_map_get(c, m->entries[i].key, m->entries[i].len, 1);
        if (v)
            memcpy(v, rfs_map_val(m, i), m->val_size);
        else
            rc = -ENOMEM;
    }
    if (rc) {
        rfs_map_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ---- calls ---- */

/* The index holds the oldest waiting call of each id; the later ones of the id hang from it
 * (rfs_call.hnext), oldest first. */
static uint64_t call_entry_hash(const void *ctx, uintptr_t e)
{
    (void)ctx;
    const rfs_call *c = (const rfs_call *)e;
    return rs_hash(RS_HASH_INIT, c->id, c->id_len);
}

static int call_matches(const void *ctx, uintptr_t e, const void *key)
{
    (void)ctx;
    const rfs_call *c = (const rfs_call *)e;
    const map_key *k = key;
    return c->id_len == k->len && memcmp(c->id, k->p, k->len) == 0;
}

static const rs_map_type call_type = {key_hash, call_entry_hash, call_matches};

struct rfs_calls {
    rfs_call *first, *last; /* waiting calls, call order */
    size_t count;           /* of them */
    rs_map by_id;
};

int rfs_calls_new(rfs_calls **out)
{
    rfs_calls *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->by_id = (rs_map)RS_MAP_INIT(&call_type, NULL);
    *out = c;
    return 0;
}

void rfs_call_free(rfs_call *call)
{
    if (!call)
        return;
    free(call->id);
    free(call->name);
    free(call);
}

void rfs_calls_free(rfs_calls *c)
{
    if (!c)
        return;
    while (c->first) {
        rfs_call *n = c->first->next;
        rfs_call_free(c->first);
        c->first = n;
    }
    rs_map_release(&c->by_id);
    free(c);
}

static char *text_dup(rfs_span s, size_t *len)
{
    rs_buf b = RS_BUF_INIT;
    if (rfs_jl_is(s, '"') && rfs_jl_text(&b, s, 0)) {
        rs_buf_release(&b);
        return NULL;
    }
    if (b.len == 0 && rs_buf_grow(&b, 1))
        return NULL;
    return rs_buf_detach(&b, len);
}

/* The call last in call order and last of its id (room for it in by_id reserved). */
static void link_call(rfs_calls *c, rfs_call *call)
{
    c->count++;
    call->prev = c->last;
    if (c->last)
        c->last->next = call;
    else
        c->first = call;
    c->last = call;
    if (call->id) {
        map_key k = {call->id, call->id_len};
        rfs_call *newest = (rfs_call *)rs_map_find(&c->by_id, &k);
        while (newest && newest->hnext)
            newest = newest->hnext;
        if (newest)
            newest->hnext = call;
        else
            rs_map_add(&c->by_id, (uintptr_t)call);
    }
}

int rfs_calls_add(rfs_calls *c, const rfs_ev *ev, int (*fn)(void *ctx, rfs_call *call), void *ctx)
{
    static const char *const names[] = {"id", "name"};
    rfs_span key, item, v[2];
    const char *at = ev->tool_calls.p;
    int index = 0, rc = 0;
    while (!rc && ev->tool_calls.p && rfs_jl_next(ev->tool_calls, &at, &key, &item)) {
        rfs_call *call = calloc(1, sizeof *call);
        if (!call)
            return -ENOMEM;
        rfs_jl_members(item, names, v, 2);
        call->seq = ev->rec->seq;
        call->t_us = ev->t_us;
        call->index = index++;
        if (rfs_jl_is(v[0], '"') && !(call->id = text_dup(v[0], &call->id_len)))
            rc = -ENOMEM;
        if (!rc && !(call->name = text_dup(rfs_jl_is(v[1], '"') ? v[1] : (rfs_span){0}, NULL)))
            rc = -ENOMEM;
        if (!rc && call->id)
            rc = rs_map_reserve(&c->by_id, c->by_id.count + 1);
        if (!rc)
            rc = fn(ctx, call);
        if (rc) {
            rfs_call_free(call);
            rc = rc < 0 ? rc : 0;
            continue;
        }
        link_call(c, call);
    }
    return rc;
}

int rfs_calls_clone(const rfs_calls *c, rfs_calls **out)
{
    rfs_calls *d;
    int rc = rfs_calls_new(&d);
    for (const rfs_call *x = c->first; !rc && x; x = x->next) {
        rfs_call *call = calloc(1, sizeof *call);
        if (!call || !(call->name = strdup(x->name)) ||
            (x->id && !(call->id = malloc(x->id_len + 1))) ||
            (x->id && rs_map_reserve(&d->by_id, d->by_id.count + 1))) {
            rfs_call_free(call);
            rc = -ENOMEM;
            break;
        }
        call->seq = x->seq;
        call->t_us = x->t_us;
        call->index = x->index;
        call->user = x->user;
        call->id_len = x->id_len;
        if (x->id)
            memcpy(call->id, x->id, x->id_len + 1);
        link_call(d, call);
    }
    if (rc) {
        rfs_calls_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

size_t rfs_calls_count(const rfs_calls *c)
{
    return c->count;
}

rfs_call *rfs_calls_take(rfs_calls *c, const rfs_ev *ev)
{
    if (!ev->call_id.p || !c->by_id.count)
        return NULL;
    rs_buf id = RS_BUF_INIT;
    map_key k = {ev->call_id.p + 1, ev->call_id.n - 2};
    /* A literal with no escape is its own text: looked up where it stands. */
    if (memchr(k.p, '\\', k.len)) {
        if (rfs_jl_text(&id, ev->call_id, 0)) {
            rs_buf_release(&id);
            return NULL;
        }
        k = (map_key){id.buf, id.len};
    }
    rfs_call *call = (rfs_call *)rs_map_remove(&c->by_id, &k);
    rs_buf_release(&id);
    if (!call)
        return NULL;
    /* The next waiting call of the id takes the place this one left (no -ENOMEM). */
    if (call->hnext)
        rs_map_add(&c->by_id, (uintptr_t)call->hnext);
    if (call->prev)
        call->prev->next = call->next;
    else
        c->first = call->next;
    if (call->next)
        call->next->prev = call->prev;
    else
        c->last = call->prev;
    call->prev = call->next = call->hnext = NULL;
    c->count--;
    return call;
}

rfs_call *rfs_calls_first(rfs_calls *c)
{
    return c->first;
}

rfs_call *rfs_calls_last(rfs_calls *c)
{
    return c->last;
}

/* ---- helpers ---- */

/* The code point of the UTF-8 sequence at p (*len its bytes), or -1 for a sequence that is
 * invalid, overlong or a surrogate (*len then the one byte to skip). */
static long utf8_at(const unsigned char *p, size_t avail, size_t *len)
{
    static const long min[] = {0, 0, 0x80, 0x800, 0x10000};
    size_t n = p[0] < 0x80                   ? 1
               : p[0] >= 0xC2 && p[0] < 0xE0 ? 2
               : p[0] >= 0xE0 && p[0] < 0xF0 ? 3
               : p[0] >= 0xF0 && p[0] < 0xF5 ? 4
                                             : 0;
    *len = 1;
    if (n == 1)
        return p[0];
    if (!n || n > avail)
        return -1;
    long cp = p[0] & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return -1;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    *len = n;
    return cp;
}

/* Whether XML 1.0 lets a document hold cp (section 2.2, Char) and does not discourage it:
 * no control character but tab, LF and CR, no surrogate, no noncharacter. */
static int xml_char_ok(long cp)
{
    if (cp < 0x20)
        return cp == '\t' || cp == '\n' || cp == '\r';
    if (cp >= 0x7F && cp <= 0x9F)
        return 0;
    if (cp >= 0xFDD0 && cp <= 0xFDEF)
        return 0;
    return (cp & 0xFFFE) != 0xFFFE;
}

/* How many bytes from p on (at most avail) are printable ASCII other than the four
 * escaped: each a character shown as itself. */
static size_t xml_plain(const unsigned char *p, size_t avail)
{
    size_t n = 0;
    while (n < avail && p[n] >= 0x20 && p[n] < 0x7F && p[n] != '&' && p[n] != '<' && p[n] != '>' &&
           p[n] != '"')
        n++;
    return n;
}

/* Append lit (a string literal's bytes) at o. */
#define XML_PUT(o, lit) (memcpy((o), (lit), sizeof(lit) - 1), (o) + sizeof(lit) - 1)

int rfs_xml_text(rs_buf *out, const char *s, size_t len, size_t max)
{
    /* A character becomes at most six bytes (&quot;), and an ellipsis ends the text: room
     * for the whole of it first, then the text written in place, not a call per stretch of
     * plain ASCII and per escape (most of report.html's bytes come through here). Room for
     * max characters at most: a label cut from a name of megabytes reserves a few bytes. */
    if (!len)
        return 0;
    size_t most = len < max ? len : max;
    if (most > (SIZE_MAX - 3) / 6)
        return -ENOMEM;
    int rc = rs_buf_grow(out, most * 6 + 3);
    if (rc)
        return rc;
    const unsigned char *p = (const unsigned char *)s;
    char *o = out->buf + out->len;
    size_t chars = 0;
    for (size_t i = 0, n; i < len; i += n) {
        if ((n = xml_plain(p + i, len - i < max - chars ? len - i : max - chars))) {
            chars += n;
            memcpy(o, s + i, n);
            o += n;
            continue;
        }
        if (chars++ == max) {
            o = XML_PUT(o, "\xe2\x80\xa6");
            break;
        }
        long cp = utf8_at(p + i, len - i, &n);
        switch (cp) {
        case '&': o = XML_PUT(o, "&amp;"); break;
        case '<': o = XML_PUT(o, "&lt;"); break;
        case '>': o = XML_PUT(o, "&gt;"); break;
        case '"': o = XML_PUT(o, "&quot;"); break;
        case '\t':
        case '\n':
        case '\r': *o++ = ' '; break;
        default:
            /* What a parser would refuse, or a browser show as nothing, shows as U+FFFD. */
            if (cp >= 0 && xml_char_ok(cp)) {
                memcpy(o, s + i, n);
                o += n;
            } else {
                o = XML_PUT(o, "\xef\xbf\xbd");
            }
        }
    }
    rs_buf_setlen(out, (size_t)(o - out->buf));
    return 0;
}

/* "N unit" then " M subunit" unless M is 0. */
static int two_units(rs_buf *out, const char *sign, int64_t n, const char *unit, int64_t m,
                     const char *sub)
{
    int rc = rs_buf_addf(out, "%s%lld %s", sign, (long long)n, unit);
    return rc || m == 0 ? rc : rs_buf_addf(out, " %lld %s", (long long)m, sub);
}

int rfs_add_int(rs_buf *out, int64_t v)
{
    char d[24];
    size_t i = sizeof d;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        d[--i] = (char)('0' + u % 10);
    while ((u /= 10));
    if (v < 0)
        d[--i] = '-';
    return rs_buf_add(out, d + i, sizeof d - i);
}

int rfs_add_duration(rs_buf *out, int64_t us)
{
    const char *sign = us < 0 ? "-" : "";
    int64_t a = us < 0 ? -us : us, ms = a / 1000, s = ms / 1000;
    if (ms < 1000)
        return a < 1000 && a > 0 ? rs_buf_addf(out, "%s%.2f ms", sign, (double)a / 1000.0)
                                 : rs_buf_addf(out, "%s%lld ms", sign, (long long)ms);
    if (s < 60)
        return ms % 1000 ? rs_buf_addf(out, "%s%.1f s", sign, (double)ms / 1000.0)
                         : rs_buf_addf(out, "%s%lld s", sign, (long long)s);
    if (s < 3600)
        return two_units(out, sign, s / 60, "min", s % 60, "s");
    if (s < 86400)
        return two_units(out, sign, s / 3600, "h", s % 3600 / 60, "min");
    return two_units(out, sign, s / 86400, "d", s % 86400 / 3600, "h");
}
