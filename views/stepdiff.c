/* stepdiff.c — see stepdiff.h. A run's steps are its step lines' hashes and seqs and the
 * stats its `# ` lines compare: kept in the store, or read from its rows once (each row's
 * step line, cut to RFS_STEP_LINE_MAX bytes, hashed and dropped). Equal hashes get equal
 * numbers, the numbers are aligned (myers.h), and the lines the hunks show are rendered
 * from their rows again and come out as diff -u prints them. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* SHA-256's own functions, deprecated in OpenSSL 3 for EVP's: EVP's first fetch starts its
 * provider and reads openssl.cnf, about 2 MiB more resident and a millisecond more at every
 * diff that hashes a line (its hunks' lines are checked), for the same block functions. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

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

/* A step line's hash: SHA-256's first 128 bits. Steps are aligned by their hashes alone, so
 * that a diff of kept steps (which has no lines but its hunks') aligns exactly as one read
 * from the rows: equal hashes must mean equal lines. A 64-bit hash of the kind hash maps use
 * could be made to collide on purpose (a run's text is whatever its agent wrote), turning a
 * changed step into an unchanged one; finding two lines with one SHA-256 prefix of 128 bits
 * is beyond reach. */
#define HASH_LEN 16

/* A step as the kept bytes hold it. One per step of both runs, so nothing more: where a
 * line is rendered is in steps.shown, for the few the hunks show. */
typedef struct step {
    unsigned char hash[HASH_LEN];
    int64_t seq;
} step;

/* A line a hunk shows, rendered from its row (only those are): in steps.shown, by step. */
typedef struct shown {
    size_t step, start; /* start: in steps.text */
    size_t len;
} shown;

_Static_assert(sizeof(step) == HASH_LEN + 8, "a kept step is its hash and its seq");

/* A tool result's step: the call it answers (the result's line names the call's tool). */
typedef struct answer {
    int64_t step, seq, index;
} answer;

/* What the `# ` lines compare, as stats.json counts it (stats.c), kept with the steps. */
typedef struct facts {
    int64_t events, model, tokens_in, tokens_out, errors, first_us, last_us, terminal;
    int has_status;
    rs_buf status;  /* the first run.terminal's content.status text */
    rfs_map *tools; /* name -> int64_t calls */
} facts;

typedef struct steps {
    const rs_target *t;
    rs_log_info info;
    int64_t rewrites; /* -1: not known (nothing is kept) */
    rs_buf text;      /* the lines the hunks show, one after another */
    shown *shown;     /* ... in step order */
    size_t nshown, shown_cap;
    step *at;
    size_t n, cap;
    answer *ans;
    size_t nans, ans_cap;
    facts f;
    rfs_calls *calls; /* calls waiting for their result after the last step */
    int from_rows;    /* steps were read (or added) from rows: keep them */
    int no_place;     /* the store has no runfs_steps: a command (io->keep) keeps nothing */
    rs_store *s;      /* the connection rows are read on */
} steps;

static void steps_release(steps *st)
{
    rs_buf_release(&st->text);
    rs_buf_release(&st->f.status);
    rfs_map_free(st->f.tools);
    rfs_calls_free(st->calls);
    free(st->shown);
    free(st->at);
    free(st->ans);
}

/* Back to no step, for a read of every row. */
static int steps_reset(steps *st)
{
    rs_buf_reset(&st->text);
    st->nshown = 0;
    rs_buf_reset(&st->f.status);
    rfs_map_free(st->f.tools);
    rfs_calls_free(st->calls);
    st->calls = NULL;
    st->n = st->nans = 0;
    rs_buf status = st->f.status;
    st->f = (facts){.status = status};
    if (rfs_map_new(&st->f.tools, sizeof(int64_t)) || rfs_calls_new(&st->calls))
        return -ENOMEM;
    return 0;
}

/* SHA-256 by its own functions (see the includes), not OpenSSL 3's one-shot SHA256(), which
 * looks the algorithm up at every call, under a lock (a fifth of a diff's CPU, perf). The
 * context is the caller's stack's: b may be read on a thread of its own. */
static int step_hash(const char *p, size_t n, unsigned char *out)
{
    unsigned char h[SHA256_DIGEST_LENGTH];
    SHA256_CTX ctx;
    if (!SHA256_Init(&ctx) || !SHA256_Update(&ctx, p, n) || !SHA256_Final(h, &ctx))
        return -EIO;
    memcpy(out, h, HASH_LEN);
    return 0;
}

static int count_call(void *ctx, rfs_call *call)
{
    int64_t *n = rfs_map_get(ctx, call->name, strlen(call->name), 1);
    if (!n)
        return -ENOMEM;
    (*n)++;
    return 0;
}

/* The facts of one row, as stats.c counts them for a run. */
static int feed_facts(facts *f, const rfs_ev *ev, const rfs_call *answered)
{
    if (f->events++ == 0)
        f->first_us = ev->t_us;
    f->last_us = ev->t_us;
    switch (ev->kind) {
    case RFS_EV_MODEL:
        f->model++;
        f->tokens_in += ev->usage[0] >= 0 ? ev->usage[0] : 0;
        f->tokens_out += ev->usage[1] >= 0 ? ev->usage[1] : 0;
        return 0;
    case RFS_EV_RESULT: f->errors += answered && ev->error; return 0;
    case RFS_EV_ERROR: f->errors++; return 0;
    case RFS_EV_TERMINAL:
        if (f->terminal)
            return 0;
        f->terminal = 1;
        f->has_status = ev->status.p != NULL;
        return f->has_status ? rfs_jl_text(&f->status, ev->status, 0) : 0;
    default: return 0;
    }
}

/* One row: its step line's hash (the line itself is rendered again, from its row, only if
 * a hunk shows it: show_run), its facts counted. raw and line are scratch. */
static int read_step(steps *st, const rfs_ev *ev, rs_buf *raw, rs_buf *line)
{
    rfs_call *call = ev->kind == RFS_EV_RESULT ? rfs_calls_take(st->calls, ev) : NULL;
    rs_buf_reset(raw);
    rs_buf_reset(line);
    int rc = raw_step(raw, ev, call ? call->name : NULL);
    if (!rc)
        rc = feed_facts(&st->f, ev, call);
    if (!rc && call && !(rc = rs_array_grow(&st->ans, &st->ans_cap, st->nans + 1, sizeof *st->ans)))
        st->ans[st->nans++] = (answer){(int64_t)st->n, call->seq, call->index};
    rfs_call_free(call);
    if (!rc && ev->kind == RFS_EV_MODEL)
        rc = rfs_calls_add(st->calls, ev, count_call, st->f.tools);
    if (!rc)
        rc = add_escaped(line, raw->buf, raw->len, RFS_STEP_LINE_MAX);
    if (!rc)
        rc = rs_array_grow(&st->at, &st->cap, st->n + 1, sizeof *st->at);
    if (!rc) {
        step *p = &st->at[st->n++];
        p->seq = ev->rec->seq;
        rc = step_hash(line->buf, line->len, p->hash);
    }
    return rc;
}

/* Whether the run exists for its user, and what is known of its rows (before they are
 * read: what is kept then names rows at least as old as these). */
static int steps_open(rs_store *s, steps *st, rs_err *err)
{
    const rs_target *t = st->t;
    int rc = rs_store_log_info(s, t->thread_id, t->run_id, t->user, &st->info, err);
    if (rc)
        return rc;
    if (!st->info.exists)
        return rs_err_set(err, -ENOENT, "no run %s in thread %s", t->run_id, t->thread_id);
    if (rs_store_rewrites(s, &st->rewrites))
        st->rewrites = -1;
    st->s = s;
    if (steps_reset(st))
        return rs_err_set(err, -ENOMEM, "out of memory");
    return 0;
}

/* Room for n steps, no more (rs_array_grow's doubling would waste up to half of it). */
static int steps_size(steps *st, size_t n)
{
    if (n <= st->cap)
        return 0;
    step *p = n <= SIZE_MAX / sizeof *p ? realloc(st->at, n * sizeof *p) : NULL;
    if (!p)
        return -ENOMEM;
    st->at = p;
    st->cap = n;
    return 0;
}

/* Rows after seq after (0: all) read into st, at most limit of them (0: all); *got: how
 * many (NULL: not wanted). */
static int read_rows(steps *st, int64_t after, int64_t limit, int64_t *got, rs_err *err)
{
    const rs_target *t = st->t;
    rs_buf raw = RS_BUF_INIT, line = RS_BUF_INIT;
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.run_id = t->run_id;
    q.user = t->user;
    q.after_seq = after;
    q.limit = limit;
    /* The array is made once, of the count the run's info gave. */
    if (!after && st->info.count > 0 && steps_size(st, (size_t)st->info.count))
        return rs_err_set(err, -ENOMEM, "out of memory");
    rs_cursor *c;
    int rc = rs_store_query(st->s, &q, &c, err);
    if (!rc) {
        const rs_record *rec;
        rfs_ev ev;
        int64_t n = 0;
        while ((rc = rs_cursor_next(c, &rec)) == 1) {
            rfs_ev_read_all(rec, &ev);
            n++;
            if ((rc = read_step(st, &ev, &raw, &line)))
                break;
        }
        if (got)
            *got = n;
        rs_cursor_free(c);
    }
    rs_buf_release(&raw);
    rs_buf_release(&line);
    st->from_rows = 1;
    return rc;
}

static int read_all(steps *st, rs_err *err)
{
    int rc = steps_reset(st);
    return rc ? rs_err_set(err, rc, "out of memory") : read_rows(st, 0, 0, NULL, err);
}

/* A run's steps read on a thread of its own, on a connection of its own. */
typedef struct reader {
    steps *st;
    rs_err err;
    int rc;
} reader;

static void *reader_main(void *arg)
{
    reader *r = arg;
    r->rc = read_all(r->st, &r->err);
    return NULL;
}

/* The line of step i, rendered (show_run) before. */
static rfs_span line_of(const steps *st, size_t i)
{
    size_t lo = 0, hi = st->nshown;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->shown[mid].step < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    const shown *l = &st->shown[lo];
    return (rfs_span){st->text.buf + l->start, l->len};
}

/* ---- kept steps (rs_store_steps_get/_put) ---- */

/* The bytes' first word: their format, and the byte order that wrote them. */
#define KEPT_MAGIC 0x3270657473736672ULL

static uint64_t kept_kind(const rs_target *t)
{
    uint64_t h = rs_hash(RS_HASH_INIT, "steps 1\n", 8);
    return rs_hash(h, t->user ? t->user : "", t->user ? strlen(t->user) + 1 : 0);
}

static int put64(rs_buf *b, int64_t v)
{
    return rs_buf_add(b, &v, sizeof v);
}

static int put_tool(rs_buf *b, const rfs_map *m, size_t i)
{
    size_t len;
    const char *name = rfs_map_key(m, i, &len);
    int rc = put64(b, (int64_t)len);
    if (!rc)
        rc = rs_buf_add(b, name, len);
    return rc ? rc : put64(b, *(const int64_t *)rfs_map_val(m, i));
}

/* Everything a later diff needs of the run without its rows, and what it was made from. */
static int kept_write(const steps *st, rs_buf *b)
{
    const facts *f = &st->f;
    int64_t last = st->n ? st->at[st->n - 1].seq : 0;
    int64_t head[] = {(int64_t)KEPT_MAGIC,
                      st->rewrites,
                      (int64_t)st->n,
                      last,
                      f->events,
                      f->model,
                      f->tokens_in,
                      f->tokens_out,
                      f->errors,
                      f->first_us,
                      f->last_us,
                      f->terminal,
                      f->has_status ? (int64_t)f->status.len : -1};
    /* Who looked, whole: kept_kind's hash of it only places the bytes, and two owners whose
     * names share a hash must not read each other's counts. */
    const char *user = st->t->user ? st->t->user : "";
    int rc = rs_buf_add(b, head, sizeof head);
    if (!rc && !(rc = put64(b, (int64_t)strlen(user))))
        rc = rs_buf_add(b, user, strlen(user));
    if (!rc && f->has_status)
        rc = rs_buf_add(b, f->status.buf, f->status.len);
    if (!rc)
        rc = put64(b, (int64_t)rfs_map_count(f->tools));
    for (size_t i = 0; !rc && i < rfs_map_count(f->tools); i++)
        rc = put_tool(b, f->tools, i);
    /* The calls still waiting (an id-less call never gets its result). */
    int64_t waiting = 0;
    for (rfs_call *c = rfs_calls_first(st->calls); c; c = c->next)
        waiting += c->id != NULL;
    if (!rc)
        rc = put64(b, waiting);
    for (rfs_call *c = rfs_calls_first(st->calls); !rc && c; c = c->next)
        if (c->id && !(rc = put64(b, c->seq)))
            rc = put64(b, c->index);
    if (!rc && !(rc = put64(b, (int64_t)st->nans)))
        rc = rs_buf_add(b, st->ans, st->nans * sizeof *st->ans);
    /* Each step's hash then its seq: the bytes of a step. */
    return rc ? rc : rs_buf_add(b, st->at, st->n * sizeof *st->at);
}

typedef struct kept_in {
    const char *p, *end;
} kept_in;

static int get64(kept_in *in, int64_t *v)
{
    if ((size_t)(in->end - in->p) < sizeof *v)
        return -EINVAL;
    memcpy(v, in->p, sizeof *v);
    in->p += sizeof *v;
    return 0;
}

static int get_bytes(kept_in *in, int64_t n, const char **p)
{
    if (n < 0 || (uint64_t)n > (uint64_t)(in->end - in->p))
        return -EINVAL;
    *p = in->p;
    in->p += n;
    return 0;
}

/* A waiting call the kept bytes name: kept again when its model event is read again. */
typedef struct waiting {
    const int64_t *pairs; /* seq, index */
    size_t n;
} waiting;

static int keep_waiting(void *ctx, rfs_call *call)
{
    const waiting *w = ctx;
    for (size_t i = 0; i < w->n; i++)
        if (w->pairs[2 * i] == call->seq && w->pairs[2 * i + 1] == call->index)
            return 0;
    return 1;
}

/* The model event at seq into ev (its record in *c, to free), 0 or -ESTALE when gone. */
static int read_seq(steps *st, int64_t seq, rs_cursor **c, rfs_ev *ev, rs_err *err)
{
    rs_query q = RS_QUERY_INIT;
    q.thread_id = st->t->thread_id;
    q.run_id = st->t->run_id;
    q.user = st->t->user;
    q.after_seq = seq - 1;
    q.before_seq = seq + 1;
    const rs_record *rec;
    *c = NULL;
    int rc = rs_store_query(st->s, &q, c, err);
    if (!rc && (rc = rs_cursor_next(*c, &rec)) == 1)
        rfs_ev_read_all(rec, ev);
    if (rc != 1 && *c) {
        rs_cursor_free(*c);
        *c = NULL;
    }
    return rc == 1 ? 0 : rc ? rc : -ESTALE;
}

/* The calls waiting after the kept steps, made again from their model events. */
static int kept_calls(steps *st, const int64_t *pairs, size_t n, rs_err *err)
{
    waiting w = {pairs, n};
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        if (i && pairs[2 * i] == pairs[2 * i - 2])
            continue;
        rs_cursor *c;
        rfs_ev ev;
        if (!(rc = read_seq(st, pairs[2 * i], &c, &ev, err))) {
            rc = rfs_calls_add(st->calls, &ev, keep_waiting, &w);
            rs_cursor_free(c);
        }
    }
    return rc;
}

/* The kept steps in b into st: 0, -ESTALE when they are not of this run as it is now (or
 * not grown from it only: then the rows after them are read). */
static int kept_read(steps *st, const rs_buf *b, rs_err *err)
{
    kept_in in = {b->buf, b->buf + b->len};
    int64_t head[13], len, v;
    const char *p;
    for (size_t i = 0; i < 13; i++)
        if (get64(&in, &head[i]))
            return -ESTALE;
    /* Made from these rows: no row changed in place or deleted since (by any writer:
     * rewrites), and those kept are still the run's first ones, or all of them. */
    int64_t n = head[2], last = head[3], count = st->info.count;
    if ((uint64_t)head[0] != KEPT_MAGIC || st->rewrites < 0 || head[1] != st->rewrites ||
        n > count || (n == count && last != st->info.last_seq) ||
        (n < count && last >= st->info.last_seq))
        return -ESTALE;
    const char *user = st->t->user ? st->t->user : "";
    if (get64(&in, &len) || len != (int64_t)strlen(user) || get_bytes(&in, len, &p) ||
        memcmp(p, user, (size_t)len) != 0)
        return -ESTALE;
    facts *f = &st->f;
    f->events = head[4];
    f->model = head[5];
    f->tokens_in = head[6];
    f->tokens_out = head[7];
    f->errors = head[8];
    f->first_us = head[9];
    f->last_us = head[10];
    f->terminal = head[11];
    f->has_status = head[12] >= 0;
    if (f->has_status && (get_bytes(&in, head[12], &p) || rs_buf_add(&f->status, p, head[12])))
        return -ESTALE;
    if (get64(&in, &v))
        return -ESTALE;
    for (int64_t i = 0; i < v; i++) {
        int64_t *calls;
        if (get64(&in, &len) || get_bytes(&in, len, &p) ||
            !(calls = rfs_map_get(f->tools, p, (size_t)len, 1)) || get64(&in, calls))
            return -ESTALE;
    }
    const char *pairs;
    if (get64(&in, &v) || v > INT32_MAX || get_bytes(&in, v * 16, &pairs))
        return -ESTALE;
    int64_t *copy = malloc((size_t)v * 16 + 1);
    int rc = copy ? 0 : -ENOMEM;
    if (copy) {
        memcpy(copy, pairs, (size_t)v * 16);
        rc = kept_calls(st, copy, (size_t)v, err);
        free(copy);
    }
    if (rc)
        return rc == -ENOMEM ? rc : -ESTALE;
    if (get64(&in, &v) || v > INT32_MAX || get_bytes(&in, v * (int64_t)sizeof(answer), &p) ||
        rs_array_grow(&st->ans, &st->ans_cap, (size_t)v, sizeof *st->ans))
        return -ESTALE;
    if (v)
        memcpy(st->ans, p, (size_t)v * sizeof(answer));
    st->nans = (size_t)v;
    if ((uint64_t)(in.end - in.p) != (uint64_t)n * sizeof(step) || steps_size(st, (size_t)count))
        return -ESTALE;
    if (n)
        memcpy(st->at, in.p, (size_t)n * sizeof(step));
    st->n = (size_t)n;
    /* Grown since: the new rows only, which must make up the run's count. */
    if (n < count && !(rc = read_rows(st, last, 0, NULL, err)) && (int64_t)st->n != count)
        rc = -ESTALE;
    return rc;
}

/* The run's steps from what is kept: 1, or 0 when its rows must be read (read_all). */
static int steps_kept(steps *st, rs_err *err)
{
    rs_buf b = RS_BUF_INIT;
    int rc = -ESTALE;
    int got = st->rewrites >= 0 ? rs_store_steps_get(st->s, st->t, kept_kind(st->t), &b) : 0;
    if (got == 1)
        rc = kept_read(st, &b, err);
    st->no_place = got == -ENOENT;
    rs_buf_release(&b);
    if (rc != -ESTALE)
        return rc ? rc : 1;
    rc = steps_reset(st);
    return rc ? rs_err_set(err, rc, "out of memory") : 0;
}

/* The tools of the calls of the model events read with a run's shown rows, in (seq, index)
 * order (rows come in seq order, calls in index order). */
typedef struct shown_calls {
    struct shown_call {
        int64_t seq, index;
        size_t at, len; /* its name in names */
    } * call;
    size_t n, cap;
    rs_buf names;
} shown_calls;

static int shown_call_add(void *ctx, rfs_call *call)
{
    shown_calls *h = ctx;
    size_t len = strlen(call->name);
    int rc = rs_array_grow(&h->call, &h->cap, h->n + 1, sizeof *h->call);
    if (!rc) {
        h->call[h->n++] = (struct shown_call){call->seq, call->index, h->names.len, len};
        rc = rs_buf_add(&h->names, call->name, len);
    }
    return rc ? rc : 1; /* 1: not kept waiting (st->calls is the run's last) */
}

/* The name of the call a answered into name; -ESTALE when its model event did not have it. */
static int answer_name(const shown_calls *h, const answer *a, rs_buf *name)
{
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct shown_call *c = &h->call[mid];
        if (c->seq < a->seq || (c->seq == a->seq && c->index < a->index))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == h->n || h->call[lo].seq != a->seq || h->call[lo].index != a->index)
        return -ESTALE;
    rs_buf_reset(name);
    return rs_buf_add(name, h->names.buf + h->call[lo].at, h->call[lo].len);
}

/* The first answer of a step at or after step i. */
static size_t answer_from(const steps *st, size_t i)
{
    size_t lo = 0, hi = st->nans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->ans[mid].step < (int64_t)i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Steps from..to of a run, that a hunk shows. */
typedef struct span {
    size_t from, to;
} span;

static int cmp_seq(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* The seqs of the rows the spans' lines are rendered from: their steps' and the model
 * events their results answer, ascending, each once. */
static int wanted_seqs(const steps *st, const span *sp, size_t n, int64_t **out, size_t *count)
{
    size_t cap = 0, m = 0;
    int64_t *w = NULL;
    int rc = 0;
    for (size_t s = 0; !rc && s < n; s++) {
        size_t k = answer_from(st, sp[s].from);
        for (size_t i = sp[s].from; !rc && i < sp[s].to; i++) {
            if (!(rc = rs_array_grow(&w, &cap, m + 1, sizeof *w)))
                w[m++] = st->at[i].seq;
            for (; !rc && k < st->nans && st->ans[k].step == (int64_t)i; k++)
                if (!(rc = rs_array_grow(&w, &cap, m + 1, sizeof *w)))
                    w[m++] = st->ans[k].seq;
        }
    }
    if (rc) {
        free(w);
        return rc;
    }
    if (m)
        qsort(w, m, sizeof *w, cmp_seq);
    size_t u = 0;
    for (size_t i = 0; i < m; i++)
        if (!u || w[u - 1] != w[i])
            w[u++] = w[i];
    *out = w;
    *count = u;
    return 0;
}

/* Where show_run is: the span and step whose row comes next, the answer to look at. */
typedef struct show_at {
    const span *sp;
    size_t n, s, i, k;
    shown_calls calls;
    rs_buf raw, name;
} show_at;

/* One row read for the spans: a model event's calls noted, a step's line rendered and
 * checked. A row of no step to show (a model event, a row between two in a range) passes. */
static int show_row(steps *st, show_at *w, const rs_record *rec)
{
    rfs_ev ev;
    rfs_ev_read_all(rec, &ev);
    int rc = ev.kind == RFS_EV_MODEL ? rfs_calls_add(st->calls, &ev, shown_call_add, &w->calls) : 0;
    if (rc || w->s == w->n || rec->seq < st->at[w->i].seq)
        return rc;
    if (rec->seq > st->at[w->i].seq)
        return -ESTALE; /* the step's row is gone */
    const char *call = NULL;
    while (w->k < st->nans && st->ans[w->k].step < (int64_t)w->i)
        w->k++;
    if (ev.kind == RFS_EV_RESULT && w->k < st->nans && st->ans[w->k].step == (int64_t)w->i &&
        !(rc = answer_name(&w->calls, &st->ans[w->k], &w->name)))
        call = w->name.buf;
    rs_buf_reset(&w->raw);
    size_t start = st->text.len;
    unsigned char hash[HASH_LEN];
    if (rc || (rc = raw_step(&w->raw, &ev, call)) ||
        (rc = add_escaped(&st->text, w->raw.buf, w->raw.len, RFS_STEP_LINE_MAX)) ||
        (rc = step_hash(st->text.buf + start, st->text.len - start, hash)))
        return rc;
    if (memcmp(hash, st->at[w->i].hash, HASH_LEN))
        return -ESTALE;
    st->shown[st->nshown++] = (shown){w->i, start, st->text.len - start};
    if (++w->i == w->sp[w->s].to && ++w->s < w->n)
        w->i = w->sp[w->s].from;
    return 0;
}

/* Wanted seqs at most this far apart are read by one query, the rows between passed by: a
 * query costs about what a few rows do. */
#define SEQ_GAP 8

/* The lines of the spans (in step order, apart), rendered from their rows (the name of
 * the call a result answers from its model event): only the hunks' lines are ever held.
 * Each line's hash must be the one its steps were aligned by, else -ESTALE. A query reads
 * the rows of a hunk and the model events just before them that its results answer (a
 * query of its own each was most of a kept diff's per-hunk time). */
static int show_run(steps *st, const span *sp, size_t n, rs_err *err)
{
    size_t lines = 0;
    for (size_t s = 0; s < n; s++)
        lines += sp[s].to - sp[s].from;
    if (!lines)
        return 0;
    int64_t *want;
    size_t nwant;
    if (rs_array_grow(&st->shown, &st->shown_cap, st->nshown + lines, sizeof *st->shown) ||
        wanted_seqs(st, sp, n, &want, &nwant))
        return rs_err_set(err, -ENOMEM, "out of memory");
    show_at w = {.sp = sp,
                 .n = n,
                 .i = sp[0].from,
                 .calls.names = RS_BUF_INIT,
                 .raw = RS_BUF_INIT,
                 .name = RS_BUF_INIT};
    int rc = 0;
    for (size_t c0 = 0, c1; !rc && c0 < nwant; c0 = c1) {
        for (c1 = c0 + 1; c1 < nwant && want[c1] - want[c1 - 1] <= SEQ_GAP; c1++)
            ;
        rs_query q = RS_QUERY_INIT;
        q.thread_id = st->t->thread_id;
        q.run_id = st->t->run_id;
        q.user = st->t->user;
        q.after_seq = want[c0] - 1;
        q.before_seq = want[c1 - 1] + 1;
        rs_cursor *c;
        const rs_record *rec;
        if ((rc = rs_store_query(st->s, &q, &c, err)))
            break;
        while ((rc = rs_cursor_next(c, &rec)) == 1 && !(rc = show_row(st, &w, rec)))
            ;
        rs_cursor_free(c);
    }
    free(want);
    free(w.calls.call);
    rs_buf_release(&w.calls.names);
    rs_buf_release(&w.raw);
    rs_buf_release(&w.name);
    return rc ? rc : w.s == n ? 0 : -ESTALE;
}

/* ---- equal lines, equal numbers ---- */

typedef struct classes {
    uint32_t *slot; /* class + 1, 0 for an empty slot */
    size_t mask;
    const unsigned char **hash; /* each class's */
    int count;
} classes;

static int class_of(classes *k, const unsigned char *h, int *out)
{
    uint64_t start;
    memcpy(&start, h, sizeof start);
    for (size_t i = (size_t)start & k->mask;; i = (i + 1) & k->mask) {
        uint32_t c = k->slot[i];
        if (!c) {
            k->slot[i] = (uint32_t)++k->count;
            k->hash[k->count - 1] = h;
            *out = k->count - 1;
            return 0;
        }
        if (memcmp(k->hash[c - 1], h, HASH_LEN) == 0) {
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
                 .hash = malloc((total ? total : 1) * sizeof *k.hash)};
    int rc = k.slot && k.hash ? 0 : -ENOMEM;
    for (size_t i = 0; !rc && i < a->n; i++)
        rc = class_of(&k, a->at[i].hash, &ids[i]);
    for (size_t i = 0; !rc && i < b->n; i++)
        rc = class_of(&k, b->at[i].hash, &ids[a->n + i]);
    free(k.slot);
    free(k.hash);
    return rc;
}

/* ---- the `# ` lines ---- */

/* Text as stats.json holds it and a `# ` line shows it: a JSON string's text, escaped. */
static int add_text_value(rs_buf *out, const char *p, size_t n)
{
    rs_buf lit = RS_BUF_INIT, t = RS_BUF_INIT;
    int rc = rs_buf_add_json_string(&lit, p, n);
    if (!rc)
        rc = rfs_jl_text(&t, (rfs_span){lit.buf, lit.len}, 0);
    if (!rc)
        rc = add_escaped(out, t.buf, t.len, SIZE_MAX);
    rs_buf_release(&lit);
    rs_buf_release(&t);
    return rc;
}

/* A value of a `# ` line: a number, a text, or none. */
typedef struct value {
    int kind; /* 'n' number, 't' text, 0 none */
    int64_t num;
    const char *p;
    size_t n;
} value;

static value num(int64_t v)
{
    return (value){.kind = 'n', .num = v};
}

static int same_value(value a, value b)
{
    if (a.kind != b.kind)
        return 0;
    return a.kind == 'n'   ? a.num == b.num
           : a.kind == 't' ? a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0)
                           : 1;
}

static int add_val(rs_buf *out, value v)
{
    return v.kind == 'n'   ? rs_buf_addf(out, "%lld", (long long)v.num)
           : v.kind == 't' ? add_text_value(out, v.p, v.n)
                           : rs_buf_addlit(out, "none");
}

/* "# label: A -> B" when the two values differ (name: a tool's, after the label). */
static int stat_line(rs_buf *out, const char *label, const value *name, value a, value b)
{
    if (same_value(a, b))
        return 0;
    int rc = rs_buf_addf(out, "# %s", label);
    if (!rc && name && !(rc = rs_buf_addch(out, ' ')))
        rc = add_val(out, *name);
    if (!rc)
        rc = rs_buf_addlit(out, ": ");
    if (!rc)
        rc = add_val(out, a);
    if (!rc)
        rc = rs_buf_addlit(out, " -> ");
    if (!rc)
        rc = add_val(out, b);
    return rc ? rc : rs_buf_addch(out, '\n');
}

/* Tool calls by name, in name order (stats.json's, bytewise). */
static int tool_lines(rs_buf *out, const rfs_map *a, const rfs_map *b)
{
    size_t *ia, *ib, i = 0, j = 0, na = rfs_map_count(a), nb = rfs_map_count(b);
    int rc = rfs_map_sorted(a, &ia);
    if (rc)
        return rc;
    if ((rc = rfs_map_sorted(b, &ib))) {
        free(ia);
        return rc;
    }
    while (!rc && (i < na || j < nb)) {
        size_t la = 0, lb = 0;
        const char *ka = i < na ? rfs_map_key(a, ia[i], &la) : NULL;
        const char *kb = j < nb ? rfs_map_key(b, ib[j], &lb) : NULL;
        int cmp = !ka ? 1 : !kb ? -1 : 0;
        if (!cmp) {
            cmp = memcmp(ka, kb, la < lb ? la : lb);
            cmp = cmp ? cmp : la < lb ? -1 : la > lb;
        }
        value name = cmp <= 0 ? (value){'t', 0, ka, la} : (value){'t', 0, kb, lb};
        value ca = num(cmp <= 0 ? *(const int64_t *)rfs_map_val(a, ia[i]) : 0);
        value cb = num(cmp >= 0 ? *(const int64_t *)rfs_map_val(b, ib[j]) : 0);
        rc = stat_line(out, "tool calls", &name, ca, cb);
        i += cmp <= 0;
        j += cmp >= 0;
    }
    free(ia);
    free(ib);
    return rc;
}

static int seq_of(rs_buf *out, const steps *st, size_t i)
{
    return i < st->n ? rs_buf_addf(out, "seq %lld", (long long)st->at[i].seq)
                     : rs_buf_addlit(out, "end");
}

static value duration(const facts *f)
{
    return f->events ? num((f->last_us - f->first_us) / 1000) : (value){0};
}

static value status(const facts *f)
{
    return f->has_status ? (value){'t', 0, f->status.buf, f->status.len} : (value){0};
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
    const facts *fa = &a->f, *fb = &b->f;
    if (rc || (rc = stat_line(out, "events", NULL, num(fa->events), num(fb->events))) ||
        (rc = stat_line(out, "model calls", NULL, num(fa->model), num(fb->model))) ||
        (rc = stat_line(out, "tokens in", NULL, num(fa->tokens_in), num(fb->tokens_in))) ||
        (rc = stat_line(out, "tokens out", NULL, num(fa->tokens_out), num(fb->tokens_out))) ||
        (rc = tool_lines(out, fa->tools, fb->tools)) ||
        (rc = stat_line(out, "errors", NULL, num(fa->errors), num(fb->errors))) ||
        (rc = stat_line(out, "duration ms", NULL, duration(fa), duration(fb))))
        return rc;
    return stat_line(out, "status", NULL, status(fa), status(fb));
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

/* The lines a hunk of changes ch[0..n) shows: a's xs..xe and b's ys..ye. */
static void hunk_span(const steps *a, const steps *b, const change *ch, size_t n, size_t *xs,
                      size_t *xe, size_t *ys, size_t *ye)
{
    size_t before = ch[0].x < CONTEXT ? ch[0].x : CONTEXT;
    *xs = ch[0].x - before;
    *ys = ch[0].y - before;
    *xe = ch[n - 1].x + ch[n - 1].nx;
    *ye = ch[n - 1].y + ch[n - 1].ny;
    size_t after = a->n - *xe < CONTEXT ? a->n - *xe : CONTEXT;
    if (b->n - *ye < after)
        after = b->n - *ye;
    *xe += after;
    *ye += after;
}

/* The hunk of changes ch[0..n): context, each change's deletions then insertions. */
static int hunk(rs_buf *out, const steps *a, const steps *b, const change *ch, size_t n)
{
    size_t xs, xe, ys, ye;
    hunk_span(a, b, ch, n, &xs, &xe, &ys, &ye);
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

/* The end of the hunk that starts at change i: changes at most twice the context apart
 * share a hunk, as in diff -u. */
static size_t hunk_end(const change *ch, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && ch[j].x - (ch[j - 1].x + ch[j - 1].nx) <= 2 * CONTEXT)
        j++;
    return j;
}

/* Every line the hunks show rendered (those of kept steps are not yet): -ESTALE with *stale
 * the run whose kept steps did not hold. A hunk's context lines are a's (b's are the same
 * lines: their hashes are equal), so of b only the lines it adds are read. */
static int show_hunks(steps *a, steps *b, const change *ch, size_t n, steps **stale, rs_err *err)
{
    span *sa = malloc((n ? n : 1) * sizeof *sa), *sb = malloc((n ? n : 1) * sizeof *sb);
    size_t na = 0, nb = 0;
    int rc = sa && sb ? 0 : rs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0, j; !rc && i < n; i = j) {
        size_t ys, ye;
        j = hunk_end(ch, n, i);
        hunk_span(a, b, ch + i, j - i, &sa[na].from, &sa[na].to, &ys, &ye);
        na++;
        for (size_t k = i; k < j; k++)
            if (ch[k].ny)
                sb[nb++] = (span){ch[k].y, ch[k].y + ch[k].ny};
    }
    if (!rc && (rc = show_run(a, sa, na, err)) == -ESTALE)
        *stale = a;
    else if (!rc && (rc = show_run(b, sb, nb, err)) == -ESTALE)
        *stale = b;
    free(sa);
    free(sb);
    return rc;
}

static int hunks(rs_buf *out, const steps *a, const steps *b, const change *ch, size_t n)
{
    int rc = 0;
    for (size_t i = 0, j; !rc && i < n; i = j) {
        j = hunk_end(ch, n, i);
        rc = hunk(out, a, b, ch + i, j - i);
    }
    return rc;
}

static int add_header(rs_buf *out, const char *mark, const rs_target *t)
{
    return rs_buf_addf(out, "%s threads/%s/runs/%s\n", mark, t->thread_id, t->run_id);
}

/* The diff into out; -ESTALE with *stale set when a run's kept steps did not hold. */
static int render(steps *a, steps *b, rs_buf *out, steps **stale, rs_err *err)
{
    /* Again after a run was read anew: its lines and the other's are shown again. */
    rs_buf_reset(&a->text);
    rs_buf_reset(&b->text);
    a->nshown = b->nshown = 0;
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
    if (rc)
        rc = rs_err_set(err, rc, "out of memory");
    if (!rc)
        rc = show_hunks(a, b, ch, n, stale, err);
    if (!rc && ((rc = comment_lines(out, a, b, prefix)) || (rc = add_header(out, "---", a->t)) ||
                (rc = add_header(out, "+++", b->t)) || (rc = hunks(out, a, b, ch, n))))
        rc = rs_err_set(err, rc, "out of memory");
    free(ch);
    return rc;
}

/* Runs of at least this many events each are read at once, one per thread: below it, a
 * thread's start and the second connection's first reads cost more than they save. */
#define READ_APART 2048

/* Keep what was read from rows, best effort (a store that keeps nothing diffs from rows):
 * 1 when kept, 0 when there was nothing to keep, or a negative errno. */
static int keep(const rfs_stepdiff_io *io, steps *st)
{
    rs_buf b = RS_BUF_INIT;
    /* A command's keeping opens the store for writing, which would set up runfs's tables
     * in a database no runfs writer has (DeerFlow's): there it keeps nothing. */
    int command = io && io->keep, rc = 0;
    if (st->from_rows && st->rewrites >= 0 && !(command && st->no_place) &&
        !(rc = kept_write(st, &b))) {
        uint64_t kind = kept_kind(st->t);
        if (command)
            rc = io->keep(io->ctx, st->t, kind, st->rewrites, b.buf, b.len);
        else
            rc = rs_store_steps_put(st->s, st->t, kind, st->rewrites, b.buf, b.len);
        rc = rc ? rc : 1;
    }
    rs_buf_release(&b);
    return rc;
}

int rfs_stepdiff_render(rs_store *s, const rfs_stepdiff_io *io, const rs_target *a,
                        const rs_target *b, rs_buf *out, rs_err *err)
{
    steps sa = {.t = a, .text = RS_BUF_INIT, .f.status = RS_BUF_INIT};
    steps sb = {.t = b, .text = RS_BUF_INIT, .f.status = RS_BUF_INIT};
    reader rb = {.st = &sb};
    pthread_t thread;
    int rc = steps_open(s, &sa, err), apart = 0, kept_a = 0, kept_b = 0;
    if (!rc)
        rc = steps_open(s, &sb, err);
    if (!rc && (kept_a = steps_kept(&sa, err)) < 0)
        rc = kept_a;
    if (!rc && (kept_b = steps_kept(&sb, err)) < 0)
        rc = kept_b;
    /* Two big runs read from their rows: b on a second connection, on a thread of its own. */
    rs_store *s2 = !rc && !kept_a && !kept_b && io && io->second && sa.info.count >= READ_APART &&
                           sb.info.count >= READ_APART
                       ? io->second(io->ctx)
                       : NULL;
    if (s2) {
        sb.s = s2;
        apart = pthread_create(&thread, NULL, reader_main, &rb) == 0;
    }
    if (!rc && !kept_a)
        rc = read_all(&sa, err);
    if (apart)
        pthread_join(thread, NULL);
    else if (!rc && !kept_b)
        reader_main(&rb);
    if (!rc && rb.rc) {
        *err = rb.err;
        rc = rb.rc;
    }
    sb.s = s;
    steps *stale = NULL;
    size_t len = out->len;
    /* A line a hunk shows that is not the one hashed (kept steps that did not hold, or a
     * row rewritten since it was read): that run from its rows, and the diff again. */
    for (int tries = 0; !rc && (rc = render(&sa, &sb, out, &stale, err)) == -ESTALE && tries < 2;
         tries++) {
        rs_buf_setlen(out, len);
        rc = read_all(stale, err);
    }
    if (rc == -ESTALE)
        rc = rs_err_set(err, -EIO, "the rows of a run changed while it was compared");
    if (!rc) {
        (void)keep(io, &sa);
        (void)keep(io, &sb);
    }
    steps_release(&sa);
    steps_release(&sb);
    return rc;
}

/* ---- keeping ahead of a diff ---- */

struct rfs_stepkeep {
    steps st;
    rs_target t; /* its strings are the caller's */
};

int rfs_stepkeep_open(rs_store *s, const rs_target *t, rfs_stepkeep **out, rs_err *err)
{
    rfs_stepkeep *k = calloc(1, sizeof *k);
    if (!k)
        return rs_err_set(err, -ENOMEM, "out of memory");
    k->t = *t;
    k->st = (steps){.t = &k->t, .text = RS_BUF_INIT, .f.status = RS_BUF_INIT};
    int rc = steps_open(s, &k->st, err), kept;
    /* What is kept goes on from its last row (the rows since read: from_rows, something new
     * to keep); else (nothing, or kept of rows no longer there) the steps start empty and
     * rfs_stepkeep_more reads every row. */
    if (!rc && k->st.rewrites >= 0 && (kept = steps_kept(&k->st, err)) < 0)
        rc = kept;
    if (rc) {
        rfs_stepkeep_close(k, 0);
        return rc;
    }
    *out = k;
    return 0;
}

int rfs_stepkeep_more(rfs_stepkeep *k, int64_t limit, rs_err *err)
{
    steps *st = &k->st;
    if (st->rewrites < 0)
        return 0; /* nothing can be kept */
    int from_rows = st->from_rows;
    int64_t got = 0;
    int rc = read_rows(st, st->n ? st->at[st->n - 1].seq : 0, limit, &got, err);
    /* No new row leaves what is kept as it was: nothing to write. */
    st->from_rows = from_rows || got > 0;
    return rc ? rc : limit > 0 && got >= limit;
}

int rfs_stepkeep_close(rfs_stepkeep *k, int keep_it)
{
    if (!k)
        return 0;
    int rc = keep_it ? keep(NULL, &k->st) : 0;
    steps_release(&k->st);
    free(k);
    return rc;
}

/* ---- step data of the rows a writer stores ---- */

struct rfs_stepfeed {
    steps st;
    rs_target t; /* its ids are these: */
    char thread_id[RS_ID_MAX + 1], run_id[RS_ID_MAX + 1];
    rs_buf raw, line;
};

int rfs_stepfeed_new(const char *thread_id, const char *run_id, int64_t rewrites,
                     rfs_stepfeed **out)
{
    size_t tn = strlen(thread_id), rn = strlen(run_id);
    if (tn > RS_ID_MAX || rn > RS_ID_MAX)
        return -EINVAL;
    rfs_stepfeed *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    memcpy(f->thread_id, thread_id, tn + 1);
    memcpy(f->run_id, run_id, rn + 1);
    /* Every owner's rows, as a diff that names no owner (runfs diff, a mount's without
     * --user) reads them. */
    f->t = (rs_target){.thread_id = f->thread_id, .run_id = f->run_id};
    f->st = (steps){.t = &f->t, .rewrites = rewrites, .text = RS_BUF_INIT, .f.status = RS_BUF_INIT};
    f->raw = f->line = (rs_buf)RS_BUF_INIT;
    if (steps_reset(&f->st)) {
        rfs_stepfeed_free(f);
        return -ENOMEM;
    }
    *out = f;
    return 0;
}

const char *rfs_stepfeed_run(const rfs_stepfeed *f)
{
    return f->run_id;
}

int rfs_stepfeed_row(rfs_stepfeed *f, const rs_record *rec)
{
    steps *st = &f->st;
    if (strcmp(rec->run_id, f->run_id) != 0 || strcmp(rec->thread_id, f->thread_id) != 0 ||
        (st->n && rec->seq <= st->at[st->n - 1].seq))
        return -EINVAL;
    rfs_ev ev;
    rfs_ev_read_all(rec, &ev);
    return read_step(st, &ev, &f->raw, &f->line);
}

int rfs_stepfeed_bytes(rfs_stepfeed *f, const rs_log_info *info, uint64_t *kind, rs_buf *out)
{
    const steps *st = &f->st;
    /* What kept_read checks a diff's run against: these rows, all of them. */
    if (st->rewrites < 0 || !info->exists || info->count != (int64_t)st->n || !st->n ||
        info->last_seq != st->at[st->n - 1].seq)
        return 0;
    *kind = kept_kind(&f->t);
    int rc = kept_write(st, out);
    return rc ? rc : 1;
}

void rfs_stepfeed_free(rfs_stepfeed *f)
{
    if (!f)
        return;
    steps_release(&f->st);
    rs_buf_release(&f->raw);
    rs_buf_release(&f->line);
    free(f);
}
