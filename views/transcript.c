/* transcript.c — the Markdown transcript of a thread, one record at a time. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glance.h"
#include "jline.h"
#include "transcript.h"
#include "rs_util.h"

/* Calls waiting for their result; past this many the oldest is shown without one, so a
 * thread of unanswered calls stays linear. */
#define PENDING_MAX 64

/* A run's heading shows its status, which its run.terminal (usually its last row) gives.
 * The rendering of a run's rows waits, up to HELD_MAX bytes, for that row, instead of a
 * query per run. SEEN_BITS: a Bloom filter of the runs met so far in this pass, so a run
 * met again (interleaved runs) is asked for as before: its first terminal may lie behind. */
#define HELD_MAX (256 * 1024)
#define SEEN_BITS (1u << 20)

typedef struct pending_call {
    char *id;
    char *text; /* "`name` args" */
} pending_call;

struct rfs_transcript {
    char *thread_id;
    rfs_run_status_fn status;
    void *ctx;
    int started;
    char run_id[RS_ID_MAX + 1];
    pending_call *calls; /* PENDING_MAX of them, made at the first call (NULL after a pass) */
    size_t n_calls;
    int holding; /* the current run's rendering waits in held for its status */
    rs_buf held;
    uint64_t *seen; /* SEEN_BITS bits, while a pass renders runs (NULL before and after) */
    int finished;   /* the pass ended: a run is taken as met, its status asked for */
    /* rfs_transcript_tally's: the headings said of each run with no run.terminal yet (a
     * count per run id, 0 once told), and what a resumed pass adds for the runs whose
     * first run.terminal came since (NULL: not tallied). */
    rfs_map *untold;
    int resumed;
    int64_t adjust;
};

int rfs_transcript_tally(rfs_transcript *t)
{
    if (!t->untold && rfs_map_new(&t->untold, sizeof(int64_t))) {
        t->untold = NULL;
        return -ENOMEM;
    }
    return 0;
}

int rfs_transcript_new(rfs_transcript **out, const char *thread_id, rfs_run_status_fn status,
                       void *ctx)
{
    rfs_transcript *t = calloc(1, sizeof *t);
    if (!t || !(t->thread_id = strdup(thread_id))) {
        free(t);
        return -ENOMEM;
    }
    t->held = (rs_buf)RS_BUF_INIT;
    t->status = status;
    t->ctx = ctx;
    *out = t;
    return 0;
}

static void drop_call(rfs_transcript *t, size_t i)
{
    free(t->calls[i].id);
    free(t->calls[i].text);
    memmove(&t->calls[i], &t->calls[i + 1], (t->n_calls - i - 1) * sizeof t->calls[0]);
    t->n_calls--;
}

void rfs_transcript_set_ctx(rfs_transcript *t, void *ctx)
{
    t->ctx = ctx;
}

void rfs_transcript_free(rfs_transcript *t)
{
    if (!t)
        return;
    while (t->n_calls)
        drop_call(t, 0);
    rs_buf_release(&t->held);
    rfs_map_free(t->untold);
    free(t->calls);
    free(t->seen);
    free(t->thread_id);
    free(t);
}

/* A string as a C string (NULL when v is no string). */
static char *text_of(rfs_span v)
{
    rs_buf b = RS_BUF_INIT;
    if (!rfs_jl_is(v, '"') || rfs_jl_text(&b, v, 0)) {
        rs_buf_release(&b);
        return NULL;
    }
    return rs_buf_detach(&b, NULL);
}

/* Canonical bytes print as cJSON prints the value, but for numbers other than small
 * integers (1.50, 1e5, -0 and the like, which cJSON rewrites). */
static int prints_as_is(rfs_span v)
{
    const char *p = v.p, *end = v.p + v.n;
    while (p < end) {
        if (*p == '"') {
            p += rfs_jl_value_len(p, end);
            continue;
        }
        if (*p != '-' && (*p < '0' || *p > '9')) {
            p++;
            continue;
        }
        const char *s = p + (*p == '-');
        const char *e = s;
        while (e < end && *e >= '0' && *e <= '9')
            e++;
        if (e == s || e - s > 9 || (*s == '0' && (e - s > 1 || s > p)) ||
            (e < end && (*e == '.' || *e == 'e' || *e == 'E')))
            return 0;
        p = e;
    }
    return 1;
}

/* A value as JSON text, as cJSON prints it. */
static int add_json(rs_buf *out, rfs_span v)
{
    if (prints_as_is(v))
        return rs_buf_add(out, v.p, v.n);
    /* Never cJSON's parser here: it runs only under the store's lock. */
    int rc = rs_buf_add_cjson(out, v.p, v.n);
    return rc == -EINVAL ? -ENOMEM : rc;
}

/* A JSON value as text: a string as itself, parts lists by their text, the rest as JSON. */
static int add_value(rs_buf *out, rfs_span v, int one_line)
{
    if (!v.p || rfs_jl_is(v, 'n'))
        return 0;
    if (rfs_jl_is(v, '"'))
        return rfs_jl_text(out, v, one_line);
    if (rfs_jl_is(v, '[')) {
        int texts = 0, rc = 0;
        rfs_span key, part;
        const char *at = v.p;
        while (rfs_jl_next(v, &at, &key, &part)) {
            rfs_span text = rfs_jl_member(part, "text");
            if (!rfs_jl_is(text, '"'))
                continue;
            if ((texts++ && (rc = rs_buf_addch(out, one_line ? ' ' : '\n'))) ||
                (rc = rfs_jl_text(out, text, one_line)))
                return rc;
        }
        if (texts)
            return 0;
    }
    return add_json(out, v);
}

/* The text of a string member (NULL when absent or not a string), freed by the caller. */
static char *str_of(rfs_span obj, const char *key)
{
    return text_of(rfs_jl_member(obj, key));
}

/* a, b and c, as "%s%s%s" prints them: a tool's lines are made per call and result, and
 * vsnprintf of a call's text cost more than the rest of its line. */
static int add3(rs_buf *out, const char *a, const char *b, const char *c)
{
    int rc = rs_buf_addstr(out, a);
    if (!rc)
        rc = rs_buf_addstr(out, b);
    return rc ? rc : rs_buf_addstr(out, c);
}

static int flush_calls(rfs_transcript *t, rs_buf *out, size_t keep)
{
    int rc = 0;
    while (!rc && t->n_calls > keep) {
        rc = add3(out, "- tool ", t->calls[0].text, " -> (no result)\n");
        drop_call(t, 0);
    }
    return rc;
}

static int header(rfs_transcript *t, rs_buf *out)
{
    if (t->started)
        return 0;
    t->started = 1;
    return rs_buf_addf(out, "# Thread %s\n", t->thread_id);
}

static rfs_span whole(const rs_buf *b)
{
    return (rfs_span){b->len ? b->buf : NULL, b->len};
}

/* run_id's heading, its status from line (that of its first run.terminal; none: empty). */
static int heading_of(const char *run_id, rfs_span line, rs_buf *out)
{
    if (line.n && line.p[line.n - 1] == '\n')
        line.n--;
    char *status = line.n ? str_of(rfs_jl_member(line, "content"), "status") : NULL;
    int bad = status && strcmp(status, "success") != 0;
    int rc = rs_buf_addf(out, "\n## Run %s (%s)%s\n\n", run_id,
                         status ? status : "no terminal event yet", bad ? " **[error]**" : "");
    free(status);
    return rc;
}

/* The run's heading; terminal: the line of its first run.terminal (p NULL: ask for it). A
 * tallying pass counts the headings of a run that has none yet. */
static int heading(rfs_transcript *t, rfs_span terminal, rs_buf *out)
{
    rs_buf asked = RS_BUF_INIT;
    int rc = terminal.p ? 0 : t->status(t->ctx, t->run_id, &asked);
    rfs_span line = terminal.p ? terminal : whole(&asked);
    if (!rc)
        rc = heading_of(t->run_id, line, out);
    if (!rc && t->untold && !line.n) {
        int64_t *told = rfs_map_get(t->untold, t->run_id, strlen(t->run_id), 1);
        if (told)
            ++*told;
        else
            rc = -ENOMEM;
    }
    rs_buf_release(&asked);
    return rc;
}

/* The run of rec, a run.terminal, has one now: a resumed pass adds to its headings said
 * before without it what it makes them longer (the first one: none came before them). */
static int told(rfs_transcript *t, const rs_record *rec)
{
    int64_t *n = t->untold ? rfs_map_get(t->untold, rec->run_id, strlen(rec->run_id), 0) : NULL;
    if (!n || !*n)
        return 0;
    rs_buf with = RS_BUF_INIT, without = RS_BUF_INIT;
    int rc = heading_of(rec->run_id, (rfs_span){rec->line, rec->line_len}, &with);
    if (!rc)
        rc = heading_of(rec->run_id, (rfs_span){0}, &without);
    if (!rc && t->resumed)
        t->adjust += *n * ((int64_t)with.len - (int64_t)without.len);
    *n = 0;
    rs_buf_release(&with);
    rs_buf_release(&without);
    return rc;
}

/* The held rendering goes out behind its heading. */
static int release(rfs_transcript *t, rfs_span terminal, rs_buf *out)
{
    if (!t->holding)
        return 0;
    t->holding = 0;
    int rc = heading(t, terminal, out);
    if (!rc)
        rc = rs_buf_add(out, t->held.buf, t->held.len);
    rs_buf_reset(&t->held);
    return rc;
}

/* Whether run_id was met before in this pass (maybe, when the filter says so); marks it.
 * -ENOMEM when the filter cannot be made. */
static int seen_before(rfs_transcript *t, const char *run_id)
{
    if (t->finished)
        return 1;
    if (!t->seen && !(t->seen = calloc(SEEN_BITS / 64, sizeof *t->seen)))
        return -ENOMEM;
    uint64_t h = rs_hash(RS_HASH_INIT, run_id, strlen(run_id));
    int seen = 1;
    for (int k = 0; k < 3; k++) {
        uint32_t bit = (uint32_t)(h >> (k * 20)) & (SEEN_BITS - 1);
        seen &= (int)(t->seen[bit / 64] >> (bit % 64)) & 1;
        t->seen[bit / 64] |= 1ULL << (bit % 64);
    }
    return seen;
}

static int run_change(rfs_transcript *t, const char *run_id, rs_buf *out)
{
    rfs_span ask = {0};
    int rc = release(t, ask, out);
    if (!rc)
        rc = flush_calls(t, out, 0);
    if (!rc && rs_fmt(t->run_id, sizeof t->run_id, "%s", run_id) < 0)
        rc = -ENAMETOOLONG;
    int seen = rc ? 0 : seen_before(t, run_id);
    if (rc || seen < 0)
        return rc ? rc : seen;
    if (seen)
        return heading(t, ask, out);
    t->holding = 1;
    return 0;
}

static int tool_calls(rfs_transcript *t, rfs_span calls, rs_buf *out)
{
    rfs_span key, call;
    const char *at = calls.p;
    int rc = 0;
    while (!rc && rfs_jl_next(calls, &at, &key, &call)) {
        rs_buf text = RS_BUF_INIT;
        char *name = str_of(call, "name"), *id = str_of(call, "id");
        rc = add3(&text, "`", name ? name : "?", "` ");
        if (!rc)
            rc = add_value(&text, rfs_jl_member(call, "args"), 1);
        if (!rc && !id) {
            rc = add3(out, "- tool ", text.buf, "\n");
        } else if (!rc) {
            rc = flush_calls(t, out, PENDING_MAX - 1);
            if (!rc && !t->calls && !(t->calls = calloc(PENDING_MAX, sizeof *t->calls)))
                rc = -ENOMEM;
            pending_call *p = rc ? NULL : &t->calls[t->n_calls];
            if (!rc && !(p->text = rs_buf_detach(&text, NULL)))
                rc = -ENOMEM;
            if (!rc) {
                p->id = id;
                id = NULL;
                t->n_calls++;
            }
        }
        rs_buf_release(&text);
        free(name);
        free(id);
    }
    return rc;
}

/* call_id, text: the result's content.tool_call_id and content.content. */
static int tool_result(rfs_transcript *t, rfs_span call_id, rfs_span text, rs_buf *out)
{
    char *id = text_of(call_id);
    int rc = 0;
    size_t i = 0;
    while (id && i < t->n_calls && strcmp(t->calls[i].id, id) != 0)
        i++;
    if (id && i < t->n_calls) {
        rc = add3(out, "- tool ", t->calls[i].text, " -> ");
        drop_call(t, i);
    } else {
        rc = add3(out, "- tool result for ", id ? id : "?", " -> ");
    }
    free(id);
    if (rc || (rc = add_value(out, text, 1)))
        return rc;
    return rs_buf_addch(out, '\n');
}

/* text: what the message says (its content's content when that is an object). */
static int message(const char *role, rfs_span text, rs_buf *out)
{
    size_t at = out->len;
    int rc = rs_buf_addlit(out, "\n**");
    if (!rc && !(rc = rs_buf_addstr(out, role)) && !(rc = rs_buf_addlit(out, ":** "))) {
        size_t body = out->len;
        if (!(rc = add_value(out, text, 0)) && out->len > body)
            return rs_buf_addlit(out, "\n\n");
    }
    rs_buf_setlen(out, at); /* no text: no message */
    return rc;
}

static int generic(const char *type, rfs_span content, const char *mark, rs_buf *out)
{
    int rc;
    if ((rc = rs_buf_addlit(out, "- ")) || (rc = rs_buf_addstr(out, mark)) ||
        (rc = rs_buf_addch(out, '`')) || (rc = rs_buf_addstr(out, type)) ||
        (rc = rs_buf_addlit(out, "`: ")) || (rc = add_value(out, content, 1)))
        return rc;
    return rs_buf_addch(out, '\n');
}

static int render(rfs_transcript *t, const rfs_ev *ev, rs_buf *out)
{
    const char *type = ev->rec->event_type;
    if (strcmp(type, "run.start") == 0)
        return 0; /* the run's heading says it */
    if (strcmp(type, "llm.human.input") == 0)
        return message("user", ev->text, out);
    if (ev->kind == RFS_EV_MODEL) {
        /* The lead agent (most rows) is the assistant: no copy of its name. */
        char *caller = rfs_jl_str_is(ev->said_by, "lead_agent") ? NULL : text_of(ev->said_by);
        int rc = message(caller ? caller : "assistant", ev->text, out);
        free(caller);
        return rc ? rc : ev->tool_calls.p ? tool_calls(t, ev->tool_calls, out) : 0;
    }
    if (ev->kind == RFS_EV_RESULT && rfs_jl_is(ev->content, '{'))
        return tool_result(t, ev->call_id, ev->text, out);
    if (ev->kind == RFS_EV_ERROR)
        return generic(type, ev->content, "**[error]** ", out);
    if (ev->kind == RFS_EV_TERMINAL || strcmp(type, "run.end") == 0) {
        char *status = text_of(ev->end_status);
        int bad = status && strcmp(status, "success") != 0;
        int rc = rs_buf_addf(out, "\n_%s: %s_%s\n", type, status ? status : "?",
                             bad ? " **[error]**" : "");
        free(status);
        return rc;
    }
    return generic(type, ev->content, "", out);
}

int rfs_transcript_feed(rfs_transcript *t, const rfs_ev *ev, rs_buf *out)
{
    const rs_record *rec = ev->rec;
    int rc = header(t, out);
    if (!rc && t->untold && strcmp(rec->event_type, "run.terminal") == 0)
        rc = told(t, rec);
    if (!rc && strcmp(rec->run_id, t->run_id) != 0)
        rc = run_change(t, rec->run_id, out);
    if (rc || (rc = render(t, ev, t->holding ? &t->held : out)) || !t->holding)
        return rc;
    if (strcmp(rec->event_type, "run.terminal") == 0) {
        /* The run's first terminal (it was not met before): its status is known. */
        rfs_span line = {rec->line, rec->line_len};
        return release(t, line, out);
    }
    rfs_span ask = {0};
    return t->held.len > HELD_MAX ? release(t, ask, out) : 0;
}

int rfs_transcript_finish(rfs_transcript *t, rs_buf *out)
{
    return rfs_transcript_finish_kept(t, out, NULL);
}

/* A kept state: the current run's id; a u32 count of the calls waiting, each its id and
 * text; a u32 count of runs, each its id and an int64 count of headings said without a
 * status (strings NUL-ended, numbers as this build lays them out). */
static int put_u32(rs_buf *b, uint32_t v)
{
    return rs_buf_add(b, (const char *)&v, sizeof v);
}

static int put_str(rs_buf *b, const char *p, size_t n)
{
    int rc = rs_buf_add(b, p, n);
    return rc ? rc : rs_buf_addch(b, '\0');
}

/* What a resumed pass needs: the current run, the calls waiting for their result, the
 * runs whose headings were said without a run.terminal and how many times. */
static int save(const rfs_transcript *t, rs_buf *state)
{
    int rc = put_str(state, t->run_id, strlen(t->run_id));
    rc = rc ? rc : put_u32(state, (uint32_t)t->n_calls);
    for (size_t i = 0; !rc && i < t->n_calls; i++) {
        rc = put_str(state, t->calls[i].id, strlen(t->calls[i].id));
        rc = rc ? rc : put_str(state, t->calls[i].text, strlen(t->calls[i].text));
    }
    size_t n = t->untold ? rfs_map_count(t->untold) : 0, live = 0;
    for (size_t i = 0; i < n; i++)
        live += *(int64_t *)rfs_map_val(t->untold, i) > 0;
    rc = rc ? rc : put_u32(state, (uint32_t)live);
    for (size_t i = 0; !rc && i < n; i++) {
        int64_t c = *(int64_t *)rfs_map_val(t->untold, i);
        size_t len;
        const char *id = rfs_map_key(t->untold, i, &len);
        if (c > 0 && !(rc = put_str(state, id, len)))
            rc = rs_buf_add(state, (const char *)&c, sizeof c);
    }
    return rc;
}

int rfs_transcript_finish_kept(rfs_transcript *t, rs_buf *out, rs_buf *state)
{
    rfs_span ask = {0};
    int rc = header(t, out);
    if (!rc)
        rc = release(t, ask, out);
    if (!rc && state)
        rc = save(t, state);
    if (!rc)
        rc = flush_calls(t, out, 0);
    /* A finished pass keeps no filter: an open transcript.md read to its end costs a few
     * hundred bytes, not the filter's pages (a run of rows added later asks its status). */
    free(t->seen);
    t->seen = NULL;
    if (!t->n_calls) {
        free(t->calls);
        t->calls = NULL;
    }
    t->finished = 1;
    rs_buf_release(&t->held);
    return rc;
}

/* A string of a kept state at *p (before end), *p moved past it; NULL when it is cut. */
static const char *get_str(const char **p, const char *end, size_t *len)
{
    const char *s = *p, *z = memchr(s, '\0', (size_t)(end - s));
    if (!z)
        return NULL;
    *len = (size_t)(z - s);
    *p = z + 1;
    return s;
}

static int get_u32(const char **p, const char *end, uint32_t *v)
{
    if ((size_t)(end - *p) < sizeof *v)
        return -EINVAL;
    memcpy(v, *p, sizeof *v);
    *p += sizeof *v;
    return 0;
}

int rfs_transcript_resume(rfs_transcript **out, const char *thread_id, rfs_run_status_fn status,
                          void *ctx, const char *state, size_t len, int64_t *undo)
{
    const char *p = state, *end = state + len;
    rfs_transcript *t;
    int rc = rfs_transcript_new(&t, thread_id, status, ctx);
    if (rc)
        return rc;
    t->started = t->finished = t->resumed = 1;
    *undo = 0;
    size_t n;
    uint32_t calls = 0, runs = 0;
    const char *run = get_str(&p, end, &n);
    rc = rfs_transcript_tally(t);
    rc = rc ? rc : !run || n >= sizeof t->run_id ? -EINVAL : get_u32(&p, end, &calls);
    if (!rc) {
        memcpy(t->run_id, run, n + 1);
        if (calls > PENDING_MAX)
            rc = -EINVAL;
        else if (calls && !(t->calls = calloc(PENDING_MAX, sizeof *t->calls)))
            rc = -ENOMEM;
    }
    for (uint32_t i = 0; !rc && i < calls; i++) {
        size_t id_len, text_len;
        const char *id = get_str(&p, end, &id_len), *text = id ? get_str(&p, end, &text_len) : NULL;
        pending_call *c = &t->calls[i];
        if (!text)
            rc = -EINVAL;
        else if (!(c->id = strndup(id, id_len)) || !(c->text = strndup(text, text_len))) {
            free(c->id);
            rc = -ENOMEM;
        } else {
            t->n_calls++;
            /* The kept size counted it as a call with no result, as a pass's end says it. */
            *undo += (int64_t)(strlen("- tool ") + text_len + strlen(" -> (no result)\n"));
        }
    }
    rc = rc ? rc : get_u32(&p, end, &runs);
    for (uint32_t i = 0; !rc && i < runs; i++) {
        const char *id = get_str(&p, end, &n);
        int64_t *v = id && (size_t)(end - p) >= sizeof(int64_t) ? rfs_map_get(t->untold, id, n, 1)
                                                                : NULL;
        if (!v)
            rc = id ? -ENOMEM : -EINVAL;
        else {
            memcpy(v, p, sizeof *v);
            p += sizeof *v;
        }
    }
    if (rc) {
        rfs_transcript_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int64_t rfs_transcript_adjust(const rfs_transcript *t)
{
    return t->adjust;
}
