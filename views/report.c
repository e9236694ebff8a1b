/* report.c — see report.h. The first half of RFS_REPORT_MAX entries are rendered as their
 * rows come; each later one is kept in a ring of the last half as what it is made of (its row's
 * line, a tool call's JSON), and only those the ring still holds at the finish are rendered:
 * memory holds at most RFS_REPORT_MAX entries whatever the run's size, and the entries left out
 * cost a copy, not a rendering. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jline.h"
#include "report.h"
#include "rs_util.h"

#define HALF (RFS_REPORT_MAX / 2)
/* The most bytes of one value shown: the rest is in events.jsonl (the entry says where). */
#define TEXT_MAX (32 * 1024)
/* Calls waiting for their result; past this many the oldest is shown without one. */
#define PENDING_MAX 64
/* A row or call longer than this is rendered at once rather than kept: its rendering is
 * bounded by TEXT_MAX, its row only by the store's largest event. */
#define KEEP_MAX (64 * 1024)

typedef struct pending_call {
    char *id;
    rs_buf call; /* its JSON object, rendered with its entry, or its rendering */
    int64_t seq;
    int rendered;
} pending_call;

/* A row kept to be rendered at the finish: its line, then its event type and a NUL. */
typedef struct kept_row {
    rs_buf bytes;
    size_t line_len;
    int64_t seq;
} kept_row;

/* An entry of the ring: an event (row), or a tool call (call) and its result (row, when
 * has_row); rendered: row.bytes holds the entry's rendering instead. */
typedef struct kept_entry {
    int64_t seq;
    int tool, has_row, rendered;
    kept_row row;
    pending_call call;
} kept_entry;

struct rfs_report {
    char *thread_id, *run_id;
    rs_buf head;       /* the first HALF entries */
    kept_entry *ring;  /* the last HALF entries after them (NULL until needed) */
    int64_t entries;   /* entries made */
    int64_t omitted;   /* entries between head and ring, dropped from the ring */
    int64_t gap_first; /* the seqs of the first and last of them */
    int64_t gap_last;
    pending_call calls[PENDING_MAX];
    size_t n_calls;
};

static const char page_style[] =
    "body{font-family:'DejaVu Sans',Verdana,sans-serif;font-size:14px;color:#222;margin:1.5em;"
    "max-width:1250px}"
    "h1{font-size:20px}h1 small{color:#666;font-weight:normal}h2{font-size:16px;margin-top:1.6em}"
    "table.stats{border-collapse:collapse}table.stats th{text-align:left;font-weight:normal;"
    "color:#555;padding:1px 14px 1px 0}table.stats td{font-family:monospace}"
    ".e{margin:6px 0;padding:4px 8px;border-left:3px solid #ccc;background:#fafafc}"
    ".e .x{white-space:pre-wrap;word-break:break-word;font-family:monospace;font-size:13px}"
    ".e .who{font-weight:bold}.seq{color:#888;text-decoration:none;font-size:12px;"
    "margin-right:6px}.at{color:#888;font-size:12px;margin-left:6px}"
    ".user{border-color:#4e79a7}.ai{border-color:#59a14f}.tool{border-color:#9c755f}"
    ".err{border-color:#d62728;background:#fdf0f0}.mw{border-color:#b07aa1}"
    ".badge{display:inline-block;font-size:11px;padding:0 5px;border-radius:3px;color:#fff;"
    "background:#d62728;margin-right:6px}.mw .badge{background:#b07aa1}"
    ".task{margin-left:2.2em;border-left-style:dashed}.tid{color:#76b7b2;font-size:12px;"
    "margin-right:6px}.gap{padding:10px;background:#fff6d5;border:1px solid #edc948}"
    "summary{cursor:pointer}.cut{color:#a00;font-size:12px}"
    "img.timeline{max-width:100%;border:1px solid #ddd}";

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
    "'unsafe-inline'; img-src data:\">\n<title>";

int rfs_report_new(rfs_report **out, const char *thread_id, const char *run_id)
{
    rfs_report *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->head = (rs_buf)RS_BUF_INIT;
    if (!(r->thread_id = strdup(thread_id)) || !(r->run_id = strdup(run_id))) {
        rfs_report_free(r);
        return -ENOMEM;
    }
    *out = r;
    return 0;
}

static void drop_call(rfs_report *r, size_t i)
{
    free(r->calls[i].id);
    rs_buf_release(&r->calls[i].call);
    memmove(&r->calls[i], &r->calls[i + 1], (r->n_calls - i - 1) * sizeof r->calls[0]);
    r->n_calls--;
}

void rfs_report_free(rfs_report *r)
{
    if (!r)
        return;
    while (r->n_calls)
        drop_call(r, 0);
    if (r->ring)
        for (size_t i = 0; i < HALF; i++) {
            rs_buf_release(&r->ring[i].row.bytes);
            rs_buf_release(&r->ring[i].call.call);
            free(r->ring[i].call.id);
        }
    free(r->ring);
    rs_buf_release(&r->head);
    free(r->thread_id);
    free(r->run_id);
    free(r);
}

/* The length of the valid UTF-8 sequence at s (at most n bytes), 0 when it is not one
 * (an overlong form, a surrogate, past U+10FFFF, cut short). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len = c < 0x80                 ? 1
                 : c >= 0xC2 && c <= 0xDF ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0) || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] >= 0x90))
        return 0;
    return len;
}

/* s[0..len) as HTML text: escaped by the views' one XML escape, line breaks kept (the
 * entries' text is pre-wrapped), bytes that are no UTF-8 shown as U+FFFD. Past TEXT_MAX
 * bytes the rest is left out, and the entry says so. */
static int add_text(rs_buf *out, const char *s, size_t len, int64_t seq)
{
    size_t shown = len > TEXT_MAX ? TEXT_MAX : len, run = 0, i = 0;
    int rc = 0;
    const unsigned char *u = (const unsigned char *)s;
    while (!rc && i < shown) {
        /* Plain ASCII (most of any text) is valid UTF-8 a byte at a time: no call per byte. */
        while (i < shown && u[i] < 0x80 && u[i] != '\n')
            i++;
        if (i == shown)
            break;
        size_t l = u[i] == '\n' ? 0 : utf8_len(u + i, shown - i);
        if (l) {
            i += l;
            continue;
        }
        if (!(rc = rfs_xml_text(out, s + run, i - run, SIZE_MAX)))
            rc = u[i] == '\n' ? rs_buf_addch(out, '\n') : rs_buf_addlit(out, "\xef\xbf\xbd");
        run = ++i;
    }
    if (!rc && run < shown)
        rc = rfs_xml_text(out, s + run, shown - run, SIZE_MAX);
    if (!rc && shown < len)
        rc = rs_buf_addf(out,
                         "<span class=\"cut\"> \xe2\x80\xa6 %zu more bytes: the whole event is "
                         "in events.jsonl (<a href=\"since/%lld\">since/%lld</a>)</span>",
                         len - shown, (long long)seq - 1, (long long)seq - 1);
    return rc;
}

/* A JSON value as text: a string as itself, a list of parts by their texts, the rest as JSON. */
static int add_value(rs_buf *out, rfs_span v, int64_t seq)
{
    if (!v.p || rfs_jl_is(v, 'n'))
        return 0;
    rs_buf text = RS_BUF_INIT;
    int rc = 0, texts = 0;
    if (rfs_jl_is(v, '"')) {
        texts = 1;
        rc = rfs_jl_text(&text, v, 0);
    } else if (rfs_jl_is(v, '[')) {
        rfs_span key, part;
        const char *at = v.p;
        while (!rc && rfs_jl_next(v, &at, &key, &part)) {
            rfs_span t = rfs_jl_member(part, "text");
            if (rfs_jl_is(t, '"') && !(rc = texts++ ? rs_buf_addch(&text, '\n') : 0))
                rc = rfs_jl_text(&text, t, 0);
        }
    }
    if (!rc && !texts)
        rc = rs_buf_add(&text, v.p, v.n);
    if (!rc)
        rc = add_text(out, text.buf, text.len, seq);
    rs_buf_release(&text);
    return rc;
}

/* The string member key of obj, decoded (NULL when absent or not a string). */
static char *str_of(rfs_span obj, const char *key)
{
    rfs_span v = rfs_jl_member(obj, key);
    rs_buf b = RS_BUF_INIT;
    if (!rfs_jl_is(v, '"') || rfs_jl_text(&b, v, 0) || rs_buf_grow(&b, 1)) {
        rs_buf_release(&b);
        return NULL;
    }
    return rs_buf_detach(&b, NULL);
}

static int add_str(rs_buf *out, const char *s)
{
    return add_text(out, s, strlen(s), 0);
}

/* The ring's slot for the next entry past the head (NULL on ENOMEM): what it held drops to
 * the gap. */
static kept_entry *ring_slot(rfs_report *r, int64_t seq)
{
    if (!r->ring) {
        if (!(r->ring = calloc(HALF, sizeof *r->ring)))
            return NULL;
        for (size_t i = 0; i < HALF; i++) {
            r->ring[i].row.bytes = (rs_buf)RS_BUF_INIT;
            r->ring[i].call.call = (rs_buf)RS_BUF_INIT;
        }
    }
    kept_entry *k = &r->ring[(r->entries - HALF) % HALF];
    if (r->entries >= 2 * HALF) {
        if (!r->omitted++)
            r->gap_first = k->seq;
        r->gap_last = k->seq;
    }
    k->seq = seq;
    r->entries++;
    return k;
}

/* Keep rec's line and type in k, to be read again at the finish. */
static int keep_row(kept_row *k, const rs_record *rec)
{
    rs_buf_reset(&k->bytes);
    k->line_len = rec->line_len;
    k->seq = rec->seq;
    int rc = rs_buf_add(&k->bytes, rec->line, rec->line_len);
    return rc ? rc : rs_buf_add(&k->bytes, rec->event_type, strlen(rec->event_type) + 1);
}

/* The record a kept row stood for (what rfs_ev_read_all reads of it). */
static rs_record kept_record(const kept_row *k)
{
    return (rs_record){.seq = k->seq,
                       .event_type = k->bytes.buf + k->line_len,
                       .line = k->bytes.buf,
                       .line_len = k->line_len,
                       .run_off = -1,
                       .thread_off = -1};
}

/* An entry's start: its anchor, classes, the task it is of, who says it and when. */
static int open_entry(rs_buf *o, const rfs_ev *ev, const char *tag, const char *cls, rfs_span task,
                      const char *who, int64_t seq)
{
    /* Pieces, not rs_buf_addf: every entry of the page starts here. */
    int rc = rs_buf_addch(o, '<');
    if (!rc && !(rc = rs_buf_addstr(o, tag)) && !(rc = rs_buf_addlit(o, " class=\"e ")) &&
        !(rc = rs_buf_addstr(o, cls)) && task.p)
        rc = rs_buf_addlit(o, " task");
    if (!rc)
        rc = rs_buf_addch(o, '"');
    if (!rc && seq && !(rc = rs_buf_addlit(o, " id=\"s")) && !(rc = rfs_add_int(o, seq)))
        rc = rs_buf_addch(o, '"');
    if (!rc)
        rc = strcmp(tag, "details") == 0 ? rs_buf_addlit(o, "><summary>") : rs_buf_addch(o, '>');
    if (!rc && seq && !(rc = rs_buf_addlit(o, "<a class=\"seq\" href=\"#s")) &&
        !(rc = rfs_add_int(o, seq)) && !(rc = rs_buf_addlit(o, "\">#")) &&
        !(rc = rfs_add_int(o, seq)))
        rc = rs_buf_addlit(o, "</a>");
    if (!rc && task.p) {
        rs_buf id = RS_BUF_INIT;
        if (!(rc = rfs_jl_text(&id, task, 0)) &&
            !(rc = rs_buf_addlit(o, "<span class=\"tid\">task ")) &&
            !(rc = add_text(o, id.buf ? id.buf : "", id.len, seq)))
            rc = rs_buf_addlit(o, "</span>");
        rs_buf_release(&id);
    }
    if (!rc && who && !(rc = rs_buf_addlit(o, "<span class=\"who\">")) && !(rc = add_str(o, who)))
        rc = rs_buf_addlit(o, "</span>");
    if (!rc && ev && ev->created_at.p && !(rc = rs_buf_addlit(o, "<span class=\"at\">"))) {
        rs_buf at = RS_BUF_INIT;
        if (!(rc = rfs_jl_text(&at, ev->created_at, 0)) && !(rc = add_text(o, at.buf, at.len, seq)))
            rc = rs_buf_addlit(o, "</span>");
        rs_buf_release(&at);
    }
    return rc;
}

/* A tool call's name and arguments, from its JSON object (seq: the response asking). */
static int render_call(rs_buf *o, rfs_span call, int64_t seq)
{
    char *name = str_of(call, "name");
    int rc = rs_buf_addlit(o, "<b>");
    if (!rc)
        rc = add_str(o, name ? name : "?");
    free(name);
    if (!rc)
        rc = rs_buf_addlit(o, "</b> ");
    return rc ? rc : add_value(o, rfs_jl_member(call, "args"), seq);
}

static int add_call(rs_buf *o, const pending_call *c)
{
    if (c->rendered)
        return rs_buf_add(o, c->call.buf, c->call.len);
    return render_call(o, (rfs_span){c->call.buf, c->call.len}, c->seq);
}

/* A tool call and its result (res NULL: none came) as one folded entry. */
static int render_tool(rs_buf *o, const pending_call *c, const rfs_ev *res)
{
    rfs_span task = res ? rfs_jl_member(res->metadata, "task_id") : (rfs_span){0};
    if (!rfs_jl_is(task, '"'))
        task = (rfs_span){0};
    int rc = open_entry(o, res, "details", res && res->error ? "tool err" : "tool", task, NULL,
                        res ? res->rec->seq : 0);
    if (!rc && res && res->error)
        rc = rs_buf_addlit(o, "<span class=\"badge\">error</span>");
    if (!rc)
        rc = rs_buf_addlit(o, "tool ");
    if (!rc)
        rc = add_call(o, c);
    if (!rc)
        rc = rs_buf_addstr(o, res ? (res->error ? " \xe2\x86\x92 error" : " \xe2\x86\x92 result")
                                  : " \xe2\x86\x92 no result");
    if (!rc)
        rc = rs_buf_addlit(o, "</summary><div class=\"x\">");
    if (!rc && c->seq)
        rc = rs_buf_addf(o, "called at <a href=\"#s%lld\">#%lld</a>", (long long)c->seq,
                         (long long)c->seq);
    if (!rc && c->id && !(rc = rs_buf_addlit(o, " id ")))
        rc = add_str(o, c->id);
    if (!rc)
        rc = rs_buf_addlit(o, "</div>");
    if (!rc && res && !(rc = rs_buf_addlit(o, "<div class=\"x\">")) &&
        !(rc = add_value(o, res->text, res->rec->seq)))
        rc = rs_buf_addlit(o, "</div>");
    return rc ? rc : rs_buf_addlit(o, "</details>\n");
}

/* Any entry but a tool call's. */
static int render_event(rs_buf *o, const rfs_ev *ev)
{
    const char *type = ev->rec->event_type;
    int64_t seq = ev->rec->seq;
    rfs_span task = rfs_jl_member(ev->metadata, "task_id");
    if (!rfs_jl_is(task, '"'))
        task = (rfs_span){0};
    int rc;
    if (ev->kind == RFS_EV_MODEL || strcmp(type, "llm.human.input") == 0) {
        int ai = ev->kind == RFS_EV_MODEL;
        char *who = rfs_jl_is(ev->said_by, '"') ? str_of(ev->metadata, "caller") : NULL;
        rc = open_entry(o, ev, "div", ai ? "ai" : "user", task,
                        ai ? (who ? who : "assistant") : "user", seq);
        free(who);
        if (!rc && !(rc = rs_buf_addlit(o, "<div class=\"x\">")) &&
            !(rc = add_value(o, ev->text, seq)))
            rc = rs_buf_addlit(o, "</div></div>\n");
        return rc;
    }
    const char *cls = ev->kind == RFS_EV_ERROR ? "err" : ev->kind == RFS_EV_MIDDLEWARE ? "mw" : "";
    int bad_end = 0;
    if (ev->kind == RFS_EV_TERMINAL || ev->kind == RFS_EV_TASK_END) {
        rfs_span st = ev->end_status.p ? ev->end_status : ev->status;
        bad_end = rfs_jl_is(st, '"') && !rfs_jl_str_is(st, "success") &&
                  !rfs_jl_str_is(st, "completed");
        cls = bad_end ? "err" : "";
    }
    if (ev->kind == RFS_EV_TASK_START || ev->kind == RFS_EV_TASK_END)
        task = (rfs_span){0}; /* the task's own start and end stand at its level */
    rc = open_entry(o, ev, "div", cls, task, NULL, seq);
    if (!rc && ev->kind == RFS_EV_ERROR)
        rc = rs_buf_addlit(o, "<span class=\"badge\">error</span>");
    if (!rc && ev->kind == RFS_EV_MIDDLEWARE)
        rc = rs_buf_addlit(o, "<span class=\"badge\">middleware</span>");
    if (!rc && bad_end)
        rc = rs_buf_addlit(o, "<span class=\"badge\">not success</span>");
    if (!rc && !(rc = rs_buf_addlit(o, "<span class=\"who\">")) && !(rc = add_str(o, type)))
        rc = rs_buf_addlit(o, "</span>");
    if (!rc && (ev->kind == RFS_EV_TASK_START || ev->kind == RFS_EV_TASK_END)) {
        rfs_span id = rfs_jl_member(ev->metadata, "task_id");
        if (rfs_jl_is(id, '"') && !(rc = rs_buf_addlit(o, " <span class=\"tid\">task ")) &&
            !(rc = add_value(o, id, seq)))
            rc = rs_buf_addlit(o, "</span>");
    }
    if (!rc && !(rc = rs_buf_addlit(o, "<div class=\"x\">")) &&
        !(rc = add_value(o, ev->content, seq)))
        rc = rs_buf_addlit(o, "</div></div>\n");
    return rc;
}

/* Keep in ring slot k what renders its entry (its call already there): the row, or the
 * rendering when the row is too long to keep. */
static int keep_entry(kept_entry *k, const rfs_ev *ev)
{
    k->has_row = ev != NULL;
    k->rendered = ev && ev->rec->line_len > KEEP_MAX;
    if (!k->rendered)
        return ev ? keep_row(&k->row, ev->rec) : 0;
    rs_buf_reset(&k->row.bytes);
    return k->tool ? render_tool(&k->row.bytes, &k->call, ev) : render_event(&k->row.bytes, ev);
}

/* An event's entry: rendered into the head, or kept in the ring. */
static int event_entry(rfs_report *r, const rfs_ev *ev)
{
    if (r->entries < HALF) {
        r->entries++;
        return render_event(&r->head, ev);
    }
    kept_entry *k = ring_slot(r, ev->rec->seq);
    if (!k)
        return -ENOMEM;
    k->tool = 0;
    return keep_entry(k, ev);
}

/* A tool call's entry (res NULL: no result came); the call is the entry's after it (c is left
 * to be dropped). */
static int tool_entry(rfs_report *r, pending_call *c, const rfs_ev *res)
{
    if (r->entries < HALF) {
        r->entries++;
        return render_tool(&r->head, c, res);
    }
    kept_entry *k = ring_slot(r, res ? res->rec->seq : c->seq);
    if (!k)
        return -ENOMEM;
    k->tool = 1;
    /* Swapped, not copied: c keeps the slot's old buffers, freed when it is dropped. */
    pending_call old = k->call;
    k->call = *c;
    *c = old;
    return keep_entry(k, res);
}

/* A ring entry rendered from what it kept. */
static int render_kept(rs_buf *o, const kept_entry *k)
{
    rs_record rec;
    rfs_ev ev;
    if (k->rendered)
        return rs_buf_add(o, k->row.bytes.buf, k->row.bytes.len);
    if (k->has_row) {
        rec = kept_record(&k->row);
        rfs_ev_read_all(&rec, &ev);
    }
    if (k->tool)
        return render_tool(o, &k->call, k->has_row ? &ev : NULL);
    return render_event(o, &ev);
}

static int flush_calls(rfs_report *r, size_t keep)
{
    int rc = 0;
    while (!rc && r->n_calls > keep) {
        rc = tool_entry(r, &r->calls[0], NULL);
        drop_call(r, 0);
    }
    return rc;
}

/* The calls of a model response wait for their results. */
static int add_calls(rfs_report *r, const rfs_ev *ev)
{
    rfs_span key, call;
    const char *at = ev->tool_calls.p;
    int rc = 0;
    while (!rc && rfs_jl_next(ev->tool_calls, &at, &key, &call)) {
        if ((rc = flush_calls(r, PENDING_MAX - 1)))
            break;
        pending_call *p = &r->calls[r->n_calls];
        memset(p, 0, sizeof *p);
        p->call = (rs_buf)RS_BUF_INIT;
        p->seq = ev->rec->seq;
        p->id = str_of(call, "id");
        p->rendered = call.n > KEEP_MAX;
        r->n_calls++;
        rc = p->rendered ? render_call(&p->call, call, p->seq)
                         : rs_buf_add(&p->call, call.p, call.n);
    }
    return rc;
}

static int result(rfs_report *r, const rfs_ev *ev)
{
    char *id = NULL;
    size_t i = 0;
    if (rfs_jl_is(ev->call_id, '"')) {
        rs_buf b = RS_BUF_INIT;
        if (rfs_jl_text(&b, ev->call_id, 0) || rs_buf_grow(&b, 1)) {
            rs_buf_release(&b);
            return -ENOMEM;
        }
        id = rs_buf_detach(&b, NULL);
    }
    while (id && i < r->n_calls && (!r->calls[i].id || strcmp(r->calls[i].id, id) != 0))
        i++;
    int rc;
    if (id && i < r->n_calls) {
        free(id);
        rc = tool_entry(r, &r->calls[i], ev);
        drop_call(r, i);
    } else {
        pending_call orphan = {.id = id, .call = RS_BUF_INIT, .rendered = 1};
        rc = rs_buf_addlit(&orphan.call, "(no call asked for this result)");
        if (!rc)
            rc = tool_entry(r, &orphan, ev);
        free(orphan.id);
        rs_buf_release(&orphan.call);
    }
    return rc;
}

int rfs_report_reads_all(const rfs_report *r, const rs_record *rec)
{
    /* The row's own entry is the first its feed makes (a response's calls wait for their
     * results, and one flushed unanswered shows only its call's JSON). */
    return r->entries < HALF || rec->line_len > KEEP_MAX;
}

int rfs_report_feed(rfs_report *r, const rfs_ev *ev)
{
    if (ev->kind == RFS_EV_RESULT)
        return result(r, ev);
    int rc = event_entry(r, ev);
    return rc || ev->kind != RFS_EV_MODEL || !ev->tool_calls.p ? rc : add_calls(r, ev);
}

/* A stats.json as rows: each member, an object's members one level down. */
static int stats_rows(rs_buf *out, rfs_span doc, const char *prefix)
{
    rfs_span key, val;
    const char *at = doc.p;
    int rc = 0;
    while (!rc && rfs_jl_next(doc, &at, &key, &val)) {
        rs_buf name = RS_BUF_INIT;
        rc = rs_buf_addstr(&name, prefix);
        if (!rc)
            rc = rfs_jl_text(&name, key, 0);
        if (!rc && rfs_jl_is(val, '{') && !*prefix && val.n > 2) {
            rc = rs_buf_addch(&name, '.');
            if (!rc)
                rc = stats_rows(out, val, name.buf);
        } else if (!rc) {
            rc = rs_buf_addf(out, "<tr><th>");
            if (!rc)
                rc = add_text(out, name.buf, name.len, 0);
            if (!rc)
                rc = rs_buf_addlit(out, "</th><td>");
            if (!rc)
                rc = rfs_jl_is(val, '"') ? add_value(out, val, 0) : add_text(out, val.p, val.n, 0);
            if (!rc)
                rc = rs_buf_addlit(out, "</td></tr>\n");
        }
        rs_buf_release(&name);
    }
    return rc;
}

static rfs_span span_of(const rs_buf *b)
{
    rfs_span s = {b->buf, b->len};
    while (s.n && s.p[s.n - 1] == '\n')
        s.n--;
    return s;
}

/* The one-line summary: status, duration, events, model calls, tools, errors. */
static int summary(rs_buf *out, rfs_span st)
{
    rfs_span status = rfs_jl_member(st, "status");
    int64_t ms = 0, events = 0, calls = 0, tools = 0, tool_errors = 0;
    rfs_jl_count(rfs_jl_member(st, "duration_ms"), &ms);
    rfs_jl_count(rfs_jl_member(st, "events"), &events);
    rfs_jl_count(rfs_jl_member(rfs_jl_member(st, "model_calls"), "count"), &calls);
    rfs_jl_count(rfs_jl_member(rfs_jl_member(st, "tool_calls"), "count"), &tools);
    rfs_jl_count(rfs_jl_member(rfs_jl_member(st, "tool_calls"), "errors"), &tool_errors);
    int rc = rs_buf_addlit(out, "<p class=\"summary\"><b>");
    if (!rc)
        rc = rfs_jl_is(status, '"') ? add_value(out, status, 0)
                                    : rs_buf_addlit(out, "no run.terminal");
    if (!rc)
        rc = rs_buf_addf(out, "</b> \xc2\xb7 %lld event%s \xc2\xb7 ", (long long)events,
                         events == 1 ? "" : "s");
    if (!rc)
        rc = rfs_add_duration(out, ms * 1000);
    if (!rc)
        rc =
            rs_buf_addf(out,
                        " \xc2\xb7 %lld model call%s \xc2\xb7 %lld tool call%s, %lld with an error "
                        "result</p>\n",
                        (long long)calls, calls == 1 ? "" : "s", (long long)tools,
                        tools == 1 ? "" : "s", (long long)tool_errors);
    return rc;
}

static int base64(rs_buf *out, const unsigned char *p, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int rc = rs_buf_grow(out, (n + 2) / 3 * 4);
    for (size_t i = 0; !rc && i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        char q[4] = {a[v >> 18], a[(v >> 12) & 63], i + 1 < n ? a[(v >> 6) & 63] : '=',
                     i + 2 < n ? a[v & 63] : '='};
        rc = rs_buf_add(out, q, 4);
    }
    return rc;
}

/* The page's start: the CSP, the title, the style, the heading. */
static int page_start(rs_buf *out, const char *what, const char *id, const char *thread_id)
{
    int rc = rs_buf_addstr(out, page_head);
    if (!rc)
        rc = rs_buf_addf(out, "%s %s%s%s</title>\n<style>%s</style>\n</head>\n<body>\n<h1>%s %s",
                         what, id, thread_id ? " of thread " : "", thread_id ? thread_id : "",
                         page_style, what, id);
    if (!rc && thread_id)
        rc = rs_buf_addf(out, " <small>of thread %s</small>", thread_id);
    return rc ? rc : rs_buf_addlit(out, "</h1>\n");
}

int rfs_report_finish(rfs_report *r, const rs_buf *stats, const rs_buf *timeline, rs_buf *out)
{
    int rc = flush_calls(r, 0);
    /* Ids are [A-Za-z0-9_-]: they stand in the page as they are. */
    if (!rc)
        rc = page_start(out, "run", r->run_id, r->thread_id);
    if (!rc)
        rc = rs_buf_addlit(out, "<p><a href=\"events.jsonl\">events.jsonl</a> \xc2\xb7 <a "
                                "href=\"stats.json\">stats.json</a> \xc2\xb7 <a "
                                "href=\"timeline.svg\">timeline.svg</a> \xc2\xb7 <a "
                                "href=\"otel.json\">otel.json</a> \xc2\xb7 <a "
                                "href=\"../../report.html\">the thread</a></p>\n<h2>Stats</h2>\n");
    if (!rc)
        rc = summary(out, span_of(stats));
    if (!rc)
        rc = rs_buf_addlit(out, "<table class=\"stats\" id=\"stats\">\n");
    if (!rc)
        rc = stats_rows(out, span_of(stats), "");
    if (!rc)
        rc = rs_buf_addlit(out, "</table>\n<h2>Timeline</h2>\n<p><a href=\"timeline.svg\"><img "
                                "class=\"timeline\" alt=\"the run's timeline\" "
                                "src=\"data:image/svg+xml;base64,");
    if (!rc)
        rc = base64(out, (const unsigned char *)timeline->buf, timeline->len);
    if (!rc)
        rc = rs_buf_addf(
            out, "\"></a></p>\n<h2>Transcript</h2>\n<p>%lld entr%s</p>\n<div id=\"transcript\">\n",
            (long long)r->entries, r->entries == 1 ? "y" : "ies");
    if (!rc)
        rc = rs_buf_add(out, r->head.buf, r->head.len);
    if (!rc && r->omitted)
        rc =
            rs_buf_addf(out,
                        "<p class=\"gap\" id=\"gap\">%lld entries, seq %lld to %lld, are not shown "
                        "here: read them in <a href=\"events.jsonl\">events.jsonl</a> or from "
                        "<a href=\"since/%lld\">since/%lld</a> on.</p>\n",
                        (long long)r->omitted, (long long)r->gap_first, (long long)r->gap_last,
                        (long long)r->gap_first - 1, (long long)r->gap_first - 1);
    int64_t kept = r->entries - HALF;
    for (int64_t i = kept > HALF ? kept - HALF : 0; !rc && i < kept; i++)
        rc = render_kept(out, &r->ring[i % HALF]);
    return rc ? rc : rs_buf_addlit(out, "</div>\n</body>\n</html>\n");
}

int rfs_report_thread(const char *thread_id, const rs_buf *stats,
                      int (*run)(void *ctx, const char **run_id, rs_buf *stats), void *ctx,
                      rs_buf *out)
{
    int rc = page_start(out, "thread", thread_id, NULL);
    if (!rc)
        rc = rs_buf_addlit(out, "<p><a href=\"events.jsonl\">events.jsonl</a> \xc2\xb7 <a "
                                "href=\"transcript.md\">transcript.md</a> \xc2\xb7 <a "
                                "href=\"stats.json\">stats.json</a></p>\n<h2>Stats</h2>\n");
    if (!rc)
        rc = summary(out, span_of(stats));
    if (!rc)
        rc = rs_buf_addlit(out, "<table class=\"stats\" id=\"stats\">\n");
    if (!rc)
        rc = stats_rows(out, span_of(stats), "");
    if (!rc)
        rc = rs_buf_addlit(out, "</table>\n<h2>Runs</h2>\n");
    rs_buf st = RS_BUF_INIT;
    const char *run_id;
    while (!rc && (rc = run(ctx, &run_id, &st)) == 1) {
        rc = rs_buf_addf(out,
                         "<div class=\"e\" id=\"run-%s\"><span class=\"who\"><a "
                         "href=\"runs/%s/report.html\">run %s</a></span>",
                         run_id, run_id, run_id);
        if (!rc)
            rc = summary(out, span_of(&st));
        if (!rc)
            rc = rs_buf_addf(out, "<details><summary>its stats</summary><table class=\"stats\">\n");
        if (!rc)
            rc = stats_rows(out, span_of(&st), "");
        if (!rc)
            rc = rs_buf_addlit(out, "</table></details></div>\n");
        rs_buf_reset(&st);
    }
    rs_buf_release(&st);
    return rc < 0 ? rc : rs_buf_addlit(out, "</body>\n</html>\n");
}
