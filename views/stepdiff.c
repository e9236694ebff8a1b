/* stepdiff.c — see stepdiff.h. A run is read once: each row gives its step line (kept, cut
 * to RFS_STEP_LINE_MAX bytes) and feeds the run's stats (stats.h). Equal lines get equal
 * numbers, the numbers are aligned (myers.h), and the changes come out as diff -u prints
 * them. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "myers.h"
#include "stats.h"
#include "stepdiff.h"
#include "rs_util.h"

/* Lines of context around a change, as diff -u. */
#define CONTEXT 3

/* ---- step lines ---- */

/* The text of a value, as the transcript reads it: a string as itself, a list of parts by
 * their texts (joined by a space), null as nothing, anything else as its JSON. */
static int add_text(rs_buf *out, rfs_span v)
{
    if (!v.p || rfs_jl_is(v, 'n'))
        return 0;
    if (rfs_jl_is(v, '"'))
        return rfs_jl_text(out, v, 0);
    if (rfs_jl_is(v, '[')) {
        rfs_span key, part;
        const char *at = v.p;
        int texts = 0, rc;
        while (rfs_jl_next(v, &at, &key, &part)) {
            rfs_span text = rfs_jl_is(part, '{') ? rfs_jl_member(part, "text") : (rfs_span){0};
            if (!rfs_jl_is(text, '"'))
                continue;
            if ((texts++ && (rc = rs_buf_addch(out, ' '))) || (rc = rfs_jl_text(out, text, 0)))
                return rc;
        }
        if (texts)
            return 0;
    }
    return rs_buf_add(out, v.p, v.n);
}

/* A key literal that names an id ("id", or ending in "_id"), which differs run to run. An
 * escape ends in a letter, a quote or a backslash, never in "_id", so the literal's bytes
 * tell as its text would. */
static int id_key(rfs_span key)
{
    return (key.n == 4 && memcmp(key.p, "\"id\"", 4) == 0) ||
           (key.n >= 5 && memcmp(key.p + key.n - 4, "_id\"", 4) == 0);
}

/* The canonical JSON v with every member whose key is an id removed, at any depth. */
static int add_without_ids(rs_buf *out, rfs_span v)
{
    if (!v.p)
        return rs_buf_addlit(out, "null");
    if (!rfs_jl_is(v, '{') && !rfs_jl_is(v, '['))
        return rs_buf_add(out, v.p, v.n);
    int obj = v.p[0] == '{', n = 0, rc = rs_buf_addch(out, v.p[0]);
    rfs_span key, val;
    const char *at = v.p;
    while (!rc && rfs_jl_next(v, &at, &key, &val)) {
        if (obj && id_key(key))
            continue;
        if (n++)
            rc = rs_buf_addch(out, ',');
        if (!rc && obj && !(rc = rs_buf_add(out, key.p, key.n)))
            rc = rs_buf_addch(out, ':');
        if (!rc)
            rc = add_without_ids(out, val);
    }
    return rc ? rc : rs_buf_addch(out, obj ? '}' : ']');
}

static int is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* Where the first control byte of s[i..n) is (n when none): eight bytes at a time, as the
 * byte loop took a twelfth of a diff's time (perf). A word has one when a byte is below
 * 0x20 or is 0x7f (the bit tricks of "Bit Twiddling Hacks", haszero/hasless). */
static size_t next_control(const char *s, size_t i, size_t n)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    for (uint64_t w; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        uint64_t del = w ^ (0x7f * ones);
        if (((w - 0x20 * ones) | (del - ones)) & ~w & highs)
            break;
    }
    while (i < n && !is_control((unsigned char)s[i]))
        i++;
    return i;
}

/* The bytes of s[0..n) with control bytes as JSON escapes, up to max bytes written: a
 * character or an escape is written whole or not at all. Runs of plain bytes go at once. */
static int add_escaped(rs_buf *out, const char *s, size_t n, size_t max)
{
    static const char shorts[] = "\bb\tt\nn\ff\rr";
    size_t used = 0, i = 0;
    int rc = 0;
    while (!rc && i < n) {
        size_t j = next_control(s, i, n);
        if (j - i > max - used) {
            /* Cut before the character that would cross max (not on a continuation byte). */
            j = i + (max - used);
            while (j > i && ((unsigned char)s[j] & 0xc0) == 0x80)
                j--;
            return rs_buf_add(out, s + i, j - i);
        }
        if (j > i && (rc = rs_buf_add(out, s + i, j - i)))
            return rc;
        used += j - i;
        if (j == n)
            break;
        unsigned char c = (unsigned char)s[j];
        char esc[6] = {'\\', 'u', '0', '0', rs_hex_digits[c >> 4], rs_hex_digits[c & 15]};
        const char *sh = memchr(shorts, c, sizeof shorts - 1);
        size_t w = sh ? 2 : 6;
        if (sh)
            esc[1] = sh[1];
        if (used + w > max)
            break;
        rc = rs_buf_add(out, esc, w);
        used += w;
        i = j + 1;
    }
    return rc;
}

/* The step line before escaping and cutting. */
static int raw_step(rs_buf *raw, const rfs_ev *ev, const char *call_name)
{
    const char *type = ev->rec->event_type;
    int rc = rs_buf_addstr(raw, type);
    if (!rc)
        rc = rs_buf_addch(raw, ' ');
    if (rc)
        return rc;
    if (ev->kind == RFS_EV_MODEL) {
        static const char *const names[] = {"name", "args"};
        rfs_span key, call, v[2];
        const char *at = ev->tool_calls.p;
        rc = add_text(raw, ev->text);
        while (!rc && ev->tool_calls.p && rfs_jl_next(ev->tool_calls, &at, &key, &call)) {
            v[0] = v[1] = (rfs_span){0};
            if (rfs_jl_is(call, '{'))
                rfs_jl_members(call, names, v, 2);
            rc = rs_buf_addlit(raw, " -> ");
            if (!rc && rfs_jl_is(v[0], '"'))
                rc = rfs_jl_text(raw, v[0], 0);
            if (!rc)
                rc = rs_buf_addch(raw, ' ');
            if (!rc)
                rc = v[1].p ? rs_buf_add(raw, v[1].p, v[1].n) : rs_buf_addlit(raw, "null");
        }
        return rc;
    }
    if (ev->kind == RFS_EV_RESULT) {
        if (call_name)
            rc = rs_buf_addstr(raw, call_name);
        else if (rfs_jl_is(ev->content, '{')) {
            rfs_span name = rfs_jl_member(ev->content, "name");
            rc = rfs_jl_is(name, '"') ? rfs_jl_text(raw, name, 0) : 0;
        }
        if (!rc)
            rc = ev->error ? rs_buf_addlit(raw, " error: ") : rs_buf_addlit(raw, " ok: ");
        return rc ? rc : add_text(raw, ev->text);
    }
    if (strcmp(type, "llm.human.input") == 0)
        return add_text(raw, ev->text);
    return add_without_ids(raw, ev->content);
}

/* ---- a run's steps ---- */

typedef struct step {
    size_t end; /* where its line ends in steps.text */
    int64_t seq;
    uint64_t hash; /* of its line, taken while the line is at hand */
} step;

typedef struct steps {
    const rs_target *t;
    rs_buf text; /* the step lines, one after another */
    step *at;
    size_t n, cap;
    size_t count; /* events, as the run's info gave them before its rows were read */
    rs_buf stats; /* the run's stats.json */
} steps;

static void steps_release(steps *st)
{
    rs_buf_release(&st->text);
    rs_buf_release(&st->stats);
    free(st->at);
}

static int keep_call(void *ctx, rfs_call *call)
{
    (void)ctx;
    (void)call;
    return 0;
}

/* The hash of a step line, eight bytes at a time: rs_hash's byte-at-a-time FNV-1a took a
 * twelfth of a diff's time (perf, 100k-event runs). Lines that collide are told apart by
 * their bytes (class_of). */
static uint64_t line_hash(const char *p, size_t n)
{
    uint64_t h = RS_HASH_INIT ^ n, w;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
    return h ^ h >> 32;
}

/* One step: its line (the name of the call a result answers taken from calls). */
static int read_step(steps *st, rfs_calls *calls, const rfs_ev *ev, rs_buf *raw)
{
    rfs_call *call = ev->kind == RFS_EV_RESULT ? rfs_calls_take(calls, ev) : NULL;
    rs_buf_reset(raw);
    int rc = raw_step(raw, ev, call ? call->name : NULL);
    rfs_call_free(call);
    if (!rc && ev->kind == RFS_EV_MODEL)
        rc = rfs_calls_add(calls, ev, keep_call, NULL);
    size_t start = st->text.len;
    if (!rc)
        rc = add_escaped(&st->text, raw->buf, raw->len, RFS_STEP_LINE_MAX);
    if (!rc)
        rc = rs_array_grow(&st->at, &st->cap, st->n + 1, sizeof *st->at);
    if (!rc)
        st->at[st->n++] = (step){st->text.len, ev->rec->seq,
                                 line_hash(st->text.buf + start, st->text.len - start)};
    return rc;
}

/* Whether the run exists for its user, and room for its steps (the events.jsonl size bounds
 * the text of most runs: the array grows once, never while it is copied). */
static int steps_open(rs_store *s, steps *st, rs_err *err)
{
    const rs_target *t = st->t;
    rs_log_info info;
    int rc = rs_store_log_info(s, t->thread_id, t->run_id, t->user, &info, err);
    if (rc)
        return rc;
    if (!info.exists)
        return rs_err_set(err, -ENOENT, "no run %s in thread %s", t->run_id, t->thread_id);
    size_t count = info.count > 0 ? (size_t)info.count : 0;
    size_t most = count * RFS_STEP_LINE_MAX, size = info.size > 0 ? (size_t)info.size : 0;
    if ((count && (rc = rs_array_grow(&st->at, &st->cap, count, sizeof *st->at))) ||
        (rc = rs_buf_grow(&st->text, size < most ? size : most)))
        return rs_err_set(err, rc, "out of memory");
    st->count = count;
    return 0;
}

static int read_steps(rs_store *s, steps *st, rs_err *err)
{
    const rs_target *t = st->t;
    rfs_stats *stats = NULL;
    rfs_calls *calls = NULL;
    rs_buf raw = RS_BUF_INIT;
    int rc;
    if ((rc = rfs_stats_new(&stats, t->thread_id, t->run_id)) || (rc = rfs_calls_new(&calls))) {
        rfs_stats_free(stats);
        return rs_err_set(err, rc, "out of memory");
    }
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.run_id = t->run_id;
    q.user = t->user;
    rs_cursor *c;
    if (!(rc = rs_store_query(s, &q, &c, err))) {
        const rs_record *rec;
        rfs_ev ev;
        while ((rc = rs_cursor_next(c, &rec)) == 1) {
            rfs_ev_read_all(rec, &ev);
            if ((rc = rfs_stats_feed(stats, &ev)) || (rc = read_step(st, calls, &ev, &raw)))
                break;
        }
        rs_cursor_free(c);
    }
    if (!rc)
        rc = rfs_stats_finish(stats, NULL, NULL, &st->stats);
    rs_buf_release(&raw);
    rfs_calls_free(calls);
    rfs_stats_free(stats);
    return rc;
}

/* A run's steps read on a thread of its own, on a connection of its own. */
typedef struct reader {
    rs_store *s;
    steps *st;
    rs_err err;
    int rc;
} reader;

static void *reader_main(void *arg)
{
    reader *r = arg;
    r->rc = read_steps(r->s, r->st, &r->err);
    return NULL;
}

static rfs_span line_of(const steps *st, size_t i)
{
    size_t start = i ? st->at[i - 1].end : 0;
    return (rfs_span){st->text.buf + start, st->at[i].end - start};
}

/* ---- equal lines, equal numbers ---- */

typedef struct classes {
    uint32_t *slot; /* class + 1, 0 for an empty slot */
    size_t mask;
    rfs_span *line; /* each class's first line */
    uint64_t *hash;
    int count;
} classes;

static int class_of(classes *k, rfs_span line, uint64_t h, int *out)
{
    for (size_t i = (size_t)h & k->mask;; i = (i + 1) & k->mask) {
        uint32_t c = k->slot[i];
        if (!c) {
            k->slot[i] = (uint32_t)++k->count;
            k->line[k->count - 1] = line;
            k->hash[k->count - 1] = h;
            *out = k->count - 1;
            return 0;
        }
        rfs_span l = k->line[c - 1];
        if (k->hash[c - 1] == h && l.n == line.n && memcmp(l.p, line.p, l.n) == 0) {
            *out = (int)c - 1;
            return 0;
        }
    }
}

/* Each line of a and b as the number of its class, into ids (a's lines, then b's). */
static int number_lines(const steps *a, const steps *b, int *ids)
{
    size_t total = a->n + b->n, size = 16;
    while (size < 2 * total)
        size *= 2;
    if (total >= INT32_MAX)
        return -ENOMEM;
    classes k = {.slot = calloc(size, sizeof *k.slot),
                 .mask = size - 1,
                 .line = malloc((total ? total : 1) * sizeof *k.line),
                 .hash = malloc((total ? total : 1) * sizeof *k.hash)};
    int rc = k.slot && k.line && k.hash ? 0 : -ENOMEM;
    for (size_t i = 0; !rc && i < a->n; i++)
        rc = class_of(&k, line_of(a, i), a->at[i].hash, &ids[i]);
    for (size_t i = 0; !rc && i < b->n; i++)
        rc = class_of(&k, line_of(b, i), b->at[i].hash, &ids[a->n + i]);
    free(k.slot);
    free(k.line);
    free(k.hash);
    return rc;
}

/* ---- the `# ` lines ---- */

/* The text of a string literal for a `# ` line, or "none" for null. */
static int add_value(rs_buf *out, rfs_span v)
{
    if (!rfs_jl_is(v, '"'))
        return v.p && !rfs_jl_is(v, 'n') ? rs_buf_add(out, v.p, v.n) : rs_buf_addlit(out, "none");
    rs_buf t = RS_BUF_INIT;
    int rc = rfs_jl_text(&t, v, 0);
    if (!rc)
        rc = add_escaped(out, t.buf, t.len, SIZE_MAX);
    rs_buf_release(&t);
    return rc;
}

static int same_span(rfs_span a, rfs_span b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

/* "# label: A -> B" when the two values differ (name: a tool's, after the label). */
static int stat_line(rs_buf *out, const char *label, rfs_span name, rfs_span a, rfs_span b)
{
    if (same_span(a, b))
        return 0;
    int rc = rs_buf_addf(out, "# %s", label);
    if (!rc && name.p && !(rc = rs_buf_addch(out, ' ')))
        rc = add_value(out, name);
    if (!rc)
        rc = rs_buf_addlit(out, ": ");
    if (!rc)
        rc = add_value(out, a);
    if (!rc)
        rc = rs_buf_addlit(out, " -> ");
    if (!rc)
        rc = add_value(out, b);
    return rc ? rc : rs_buf_addch(out, '\n');
}

enum { S_EVENTS, S_DURATION, S_STATUS, S_MODEL, S_TOOLS, S_ERRORS, S_N };

typedef struct run_facts {
    rfs_span top[S_N];
    rfs_span calls, tokens_in, tokens_out, by_name;
    int64_t errors;
    char errors_text[24];
} run_facts;

static void read_facts(const rs_buf *doc, run_facts *f)
{
    static const char *const top[S_N] = {"events",      "duration_ms", "status",
                                         "model_calls", "tool_calls",  "errors"};
    static const char *const usage[] = {"input_tokens", "output_tokens"};
    rfs_span d = {doc->buf, doc->len}, v[2];
    while (d.n && d.p[d.n - 1] == '\n')
        d.n--;
    rfs_jl_members(d, top, f->top, S_N);
    f->calls = rfs_jl_member(f->top[S_MODEL], "count");
    rfs_jl_members(rfs_jl_member(f->top[S_MODEL], "usage"), usage, v, 2);
    f->tokens_in = v[0];
    f->tokens_out = v[1];
    f->by_name = rfs_jl_member(f->top[S_TOOLS], "by_name");
    /* Errors: the run's and the model's error events, and the tool results that failed. */
    int64_t n;
    f->errors = 0;
    f->errors += rfs_jl_count(rfs_jl_member(f->top[S_ERRORS], "run.error"), &n) ? n : 0;
    f->errors += rfs_jl_count(rfs_jl_member(f->top[S_ERRORS], "llm.error"), &n) ? n : 0;
    f->errors += rfs_jl_count(rfs_jl_member(f->top[S_TOOLS], "errors"), &n) ? n : 0;
    (void)rs_fmt(f->errors_text, sizeof f->errors_text, "%lld", (long long)f->errors);
}

/* The next tool of a by_name object (its name and its calls), 0 at the end. */
static int next_tool(rfs_span by_name, const char **at, rfs_span *name, rfs_span *calls)
{
    rfs_span v;
    if (!by_name.p || !rfs_jl_next(by_name, at, name, &v))
        return 0;
    *calls = rfs_jl_member(v, "calls");
    return 1;
}

/* Tool calls by name, in name order: both lists are sorted and their names written alike. */
static int tool_lines(rs_buf *out, rfs_span a, rfs_span b)
{
    static const rfs_span zero = {"0", 1};
    const char *at_a = a.p, *at_b = b.p;
    rfs_span na, ca, nb, cb;
    int more_a = next_tool(a, &at_a, &na, &ca), more_b = next_tool(b, &at_b, &nb, &cb), rc = 0;
    while (!rc && (more_a || more_b)) {
        int cmp = !more_a ? 1 : !more_b ? -1 : 0;
        if (!cmp) {
            size_t n = na.n < nb.n ? na.n : nb.n;
            cmp = memcmp(na.p, nb.p, n);
            cmp = cmp ? cmp : na.n < nb.n ? -1 : na.n > nb.n;
        }
        rc = stat_line(out, "tool calls", cmp <= 0 ? na : nb, cmp <= 0 ? ca : zero,
                       cmp >= 0 ? cb : zero);
        if (cmp <= 0)
            more_a = next_tool(a, &at_a, &na, &ca);
        if (cmp >= 0)
            more_b = next_tool(b, &at_b, &nb, &cb);
    }
    return rc;
}

static int seq_of(rs_buf *out, const steps *st, size_t i)
{
    return i < st->n ? rs_buf_addf(out, "seq %lld", (long long)st->at[i].seq)
                     : rs_buf_addlit(out, "end");
}

static int comment_lines(rs_buf *out, const steps *a, const steps *b, size_t prefix)
{
    int rc;
    if (prefix == a->n && prefix == b->n) {
        rc = rs_buf_addf(out, "# same steps: %zu\n", prefix);
    } else {
        rc = rs_buf_addf(out, "# first diverging step %zu: ", prefix + 1);
        if (!rc)
            rc = seq_of(out, a, prefix);
        if (!rc)
            rc = rs_buf_addlit(out, " -> ");
        if (!rc)
            rc = seq_of(out, b, prefix);
        if (!rc)
            rc = rs_buf_addch(out, '\n');
    }
    run_facts fa, fb;
    read_facts(&a->stats, &fa);
    read_facts(&b->stats, &fb);
    const rfs_span none = {0};
    if (rc || (rc = stat_line(out, "events", none, fa.top[S_EVENTS], fb.top[S_EVENTS])) ||
        (rc = stat_line(out, "model calls", none, fa.calls, fb.calls)) ||
        (rc = stat_line(out, "tokens in", none, fa.tokens_in, fb.tokens_in)) ||
        (rc = stat_line(out, "tokens out", none, fa.tokens_out, fb.tokens_out)) ||
        (rc = tool_lines(out, fa.by_name, fb.by_name)))
        return rc;
    rfs_span ea = {fa.errors_text, strlen(fa.errors_text)};
    rfs_span eb = {fb.errors_text, strlen(fb.errors_text)};
    if ((rc = stat_line(out, "errors", none, ea, eb)) ||
        (rc = stat_line(out, "duration ms", none, fa.top[S_DURATION], fb.top[S_DURATION])))
        return rc;
    return stat_line(out, "status", none, fa.top[S_STATUS], fb.top[S_STATUS]);
}

/* ---- the hunks ---- */

typedef struct change {
    size_t x, nx, y, ny; /* a's lines x..x+nx replaced by b's y..y+ny */
} change;

/* The changes the marks make, in order. */
static int collect_changes(const unsigned char *xchg, size_t nx, const unsigned char *ychg,
                           size_t ny, change **out, size_t *count)
{
    size_t cap = 0, n = 0, i = 0, j = 0;
    change *ch = NULL;
    while (i < nx || j < ny) {
        if ((i < nx && xchg[i]) || (j < ny && ychg[j])) {
            change c = {.x = i, .y = j};
            while (i < nx && xchg[i])
                i++;
            while (j < ny && ychg[j])
                j++;
            c.nx = i - c.x;
            c.ny = j - c.y;
            if (rs_array_grow(&ch, &cap, n + 1, sizeof *ch)) {
                free(ch);
                return -ENOMEM;
            }
            ch[n++] = c;
        } else {
            i++;
            j++;
        }
    }
    *out = ch;
    *count = n;
    return 0;
}

/* diff -u's range: "start,count", "start" for one line, "before,0" for none. */
static int add_range(rs_buf *out, size_t start, size_t count)
{
    if (count == 0)
        return rs_buf_addf(out, "%zu,0", start);
    if (count == 1)
        return rs_buf_addf(out, "%zu", start + 1);
    return rs_buf_addf(out, "%zu,%zu", start + 1, count);
}

static int add_seqs(rs_buf *out, const steps *st, size_t start, size_t count)
{
    if (count == 0)
        return rs_buf_addlit(out, "none");
    long long first = (long long)st->at[start].seq, last = (long long)st->at[start + count - 1].seq;
    return first == last ? rs_buf_addf(out, "seq %lld", first)
                         : rs_buf_addf(out, "seq %lld-%lld", first, last);
}

static int add_lines(rs_buf *out, char mark, const steps *st, size_t from, size_t to)
{
    int rc = 0;
    for (size_t i = from; !rc && i < to; i++) {
        rfs_span l = line_of(st, i);
        if (!(rc = rs_buf_addch(out, mark)) && !(rc = rs_buf_add(out, l.p, l.n)))
            rc = rs_buf_addch(out, '\n');
    }
    return rc;
}

/* The hunk of changes ch[0..n): context, each change's deletions then insertions. */
static int hunk(rs_buf *out, const steps *a, const steps *b, const change *ch, size_t n)
{
    size_t before = ch[0].x < CONTEXT ? ch[0].x : CONTEXT;
    size_t xs = ch[0].x - before, ys = ch[0].y - before;
    size_t xe = ch[n - 1].x + ch[n - 1].nx, ye = ch[n - 1].y + ch[n - 1].ny;
    size_t after = a->n - xe < CONTEXT ? a->n - xe : CONTEXT;
    if (b->n - ye < after)
        after = b->n - ye;
    xe += after;
    ye += after;
    int rc = rs_buf_addlit(out, "@@ -");
    if (!rc && !(rc = add_range(out, xs, xe - xs)) && !(rc = rs_buf_addlit(out, " +")) &&
        !(rc = add_range(out, ys, ye - ys)) && !(rc = rs_buf_addlit(out, " @@ ")) &&
        !(rc = add_seqs(out, a, xs, xe - xs)) && !(rc = rs_buf_addlit(out, " -> ")) &&
        !(rc = add_seqs(out, b, ys, ye - ys)))
        rc = rs_buf_addch(out, '\n');
    size_t x = xs;
    for (size_t k = 0; !rc && k < n; k++) {
        if (!(rc = add_lines(out, ' ', a, x, ch[k].x)) &&
            !(rc = add_lines(out, '-', a, ch[k].x, ch[k].x + ch[k].nx)))
            rc = add_lines(out, '+', b, ch[k].y, ch[k].y + ch[k].ny);
        x = ch[k].x + ch[k].nx;
    }
    return rc ? rc : add_lines(out, ' ', a, x, xe);
}

static int hunks(rs_buf *out, const steps *a, const steps *b, const change *ch, size_t n)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < n;) {
        size_t j = i + 1;
        /* Changes at most twice the context apart share a hunk, as in diff -u. */
        while (j < n && ch[j].x - (ch[j - 1].x + ch[j - 1].nx) <= 2 * CONTEXT)
            j++;
        rc = hunk(out, a, b, ch + i, j - i);
        i = j;
    }
    return rc;
}

static int add_header(rs_buf *out, const char *mark, const rs_target *t)
{
    return rs_buf_addf(out, "%s threads/%s/runs/%s\n", mark, t->thread_id, t->run_id);
}

static int render(const steps *a, const steps *b, rs_buf *out)
{
    int *ids = malloc((a->n + b->n + 1) * sizeof *ids);
    unsigned char *chg = calloc(a->n + b->n + 1, 1);
    change *ch = NULL;
    size_t n = 0, prefix = 0;
    int rc = ids && chg ? number_lines(a, b, ids) : -ENOMEM;
    if (!rc)
        rc = rfs_myers(ids, a->n, ids + a->n, b->n, chg, chg + a->n);
    while (!rc && prefix < a->n && prefix < b->n && ids[prefix] == ids[a->n + prefix])
        prefix++;
    free(ids);
    if (!rc)
        rc = collect_changes(chg, a->n, chg + a->n, b->n, &ch, &n);
    free(chg);
    if (!rc && !(rc = comment_lines(out, a, b, prefix)) && !(rc = add_header(out, "---", a->t)) &&
        !(rc = add_header(out, "+++", b->t)))
        rc = hunks(out, a, b, ch, n);
    free(ch);
    return rc;
}

/* Runs of at least this many events each are read at once, one per thread: below it, a
 * thread's start and the second connection's first reads cost more than they save. */
#define READ_APART 2048

int rfs_stepdiff_render(rs_store *s, rs_store *s2, const rs_target *a, const rs_target *b,
                        rs_buf *out, rs_err *err)
{
    steps sa = {.t = a, .text = RS_BUF_INIT, .stats = RS_BUF_INIT};
    steps sb = {.t = b, .text = RS_BUF_INIT, .stats = RS_BUF_INIT};
    reader rb = {.s = s2 ? s2 : s, .st = &sb};
    pthread_t thread;
    int rc = steps_open(s, &sa, err), apart = 0;
    if (!rc)
        rc = steps_open(rb.s, &sb, err);
    if (!rc && s2 && sa.count >= READ_APART && sb.count >= READ_APART)
        apart = pthread_create(&thread, NULL, reader_main, &rb) == 0;
    if (!rc)
        rc = read_steps(s, &sa, err);
    if (apart) {
        pthread_join(thread, NULL);
    } else if (!rc) {
        reader_main(&rb);
    }
    if (!rc && rb.rc) {
        *err = rb.err;
        rc = rb.rc;
    }
    if (!rc && (rc = render(&sa, &sb, out)))
        rc = rs_err_set(err, rc, "out of memory");
    steps_release(&sa);
    steps_release(&sb);
    return rc;
}
