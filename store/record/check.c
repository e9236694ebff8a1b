/* check.c — a JSON value checked against a compiled schema while the scanner writes it: one
 * pass, no tree. Every schema that applies to a value (its own, allOf's, if/then/else's, a
 * parent's property or item schema) is an item on a stack grouped by value; a value's own
 * keywords are checked when it ends, and each item keeps only its earliest failure in the
 * order the tree checker looked (type, const, enum, bounds, lengths, pattern, required,
 * properties in member order, items, allOf, then/else), so the reason is the one it gave. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "contract_int.h"
#include "rs_util.h"

#define NONE INT_MAX

/* Ranks: the order of the tree checker's tests. allOf[i] is K_ALLOF + i, the if branch
 * K_ALLOF + n_all_of. */
enum {
    K_TYPE,
    K_CONST,
    K_ENUM,
    K_MIN,
    K_MAX,
    K_MINLEN,
    K_MAXLEN,
    K_PATTERN,
    K_REQUIRED,
    K_PROPS,
    K_ITEMS,
    K_ALLOF
};

enum { R_ROOT, R_PROP, R_ITEM, R_ALLOF, R_IF, R_THEN, R_ELSE };

/* ---- storage -------------------------------------------------------------------------- */

static int grow(void **v, size_t *cap, size_t n, size_t size, void *inline_buf)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap * 2;
    void *nv;
    if (*v == inline_buf) {
        if ((nv = malloc(ncap * size)))
            memcpy(nv, *v, n * size);
    } else
        nv = realloc(*v, ncap * size);
    if (!nv)
        return -ENOMEM;
    *v = nv;
    *cap = ncap;
    return 0;
}

void rs_check_init(rs_check *k, const rs_schema *s, const char *root)
{
    k->root = root;
    k->items = k->inline_items;
    k->cap_items = RS_CHECK_INLINE;
    k->n_items = 0;
    k->keys = k->inline_keys;
    k->cap_keys = RS_CHECK_INLINE;
    k->n_keys = 0;
    k->depth = 0;
    k->pending = NULL;
    k->pending_len = 0;
    k->path[0] = '\0';
    k->path_len = 0;
    k->dup = 0;
    k->rank = NONE;
    k->msg = 0;
    k->oom = 0;
    k->msgs = (rs_buf)RS_BUF_INIT;
    k->scratch = (rs_buf)RS_BUF_INIT;
    k->schema = s;
}

void rs_check_release(rs_check *k)
{
    if (k->items != k->inline_items)
        free(k->items);
    if (k->keys != k->inline_keys)
        free(k->keys);
    k->items = k->inline_items;
    k->keys = k->inline_keys;
    rs_buf_release(&k->msgs);
    rs_buf_release(&k->scratch);
}

/* ---- failures ------------------------------------------------------------------------- */

static void take(rs_check_item *c, int rank, size_t msg)
{
    if (rank < c->rank) {
        c->rank = rank;
        c->msg = msg;
    }
}

static void fail(rs_check *k, rs_check_item *c, int rank, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void path_add(rs_check *k, const char *text, size_t n)
{
    size_t room = sizeof k->path - k->path_len - 1;
    if (n > room)
        n = room;
    memcpy(k->path + k->path_len, text, n);
    k->path_len += n;
    k->path[k->path_len] = '\0';
}

/* The open value's path ("content.items[2].name") into k->path. Only a reason needs it,
 * so it is written when one is, not for every value scanned. Keys are decoded apart from
 * scratch, which may hold an argument of the reason. */
static void path_write(rs_check *k)
{
    k->path_len = 0;
    path_add(k, k->root, strlen(k->root));
    rs_buf key = RS_BUF_INIT;
    for (size_t d = 1; d < k->depth; d++) {
        const rs_check_node *n = &k->nodes[d];
        if (n->key) {
            rs_buf_reset(&key);
            path_add(k, ".", 1);
            if (rs_json_unquote(&key, n->key, n->key_len))
                k->oom = 1;
            path_add(k, key.buf, key.len);
            continue;
        }
        char digits[24], *dp = digits + sizeof digits;
        size_t index = n->index;
        *--dp = ']';
        do
            *--dp = (char)('0' + index % 10);
        while ((index /= 10) > 0);
        *--dp = '[';
        path_add(k, dp, (size_t)(digits + sizeof digits - dp));
    }
    rs_buf_release(&key);
}

static void fail(rs_check *k, rs_check_item *c, int rank, const char *fmt, ...)
{
    if (rank >= c->rank)
        return;
    c->rank = rank;
    if (c->quiet)
        return;
    path_write(k);
    char m[sizeof((rs_err *)0)->msg];
    va_list ap;
    va_start(ap, fmt);
    (void)rs_vfmt(m, sizeof m, fmt, ap); /* a reason: a cut is marked "..." */
    va_end(ap);
    c->msg = k->msgs.len;
    if (rs_buf_add(&k->msgs, m, strlen(m) + 1))
        k->oom = 1;
}

/* ---- checks in force ------------------------------------------------------------------ */

static int expand(rs_check *k, size_t i);

static int push(rs_check *k, const rs_schema *s, int parent, int role, size_t index, int quiet)
{
    if (grow((void **)&k->items, &k->cap_items, k->n_items, sizeof *k->items, k->inline_items))
        return -ENOMEM;
    k->items[k->n_items++] = (rs_check_item){
        .s = s,
        .parent = parent,
        .role = (unsigned char)role,
        .quiet = (unsigned char)quiet,
        .index = (unsigned short)index,
        .rank = NONE,
        .then_rank = NONE,
        .else_rank = NONE,
    };
    return expand(k, k->n_items - 1);
}

/* The schemas that apply to the same value as item i: allOf, if, then, else. */
static int expand(rs_check *k, size_t i)
{
    const rs_schema *s = k->items[i].s;
    int quiet = k->items[i].quiet, rc;
    if (s->always)
        return 0;
    for (size_t a = 0; a < s->n_all_of; a++)
        if ((rc = push(k, s->all_of[a], (int)i, R_ALLOF, a, quiet)))
            return rc;
    if (s->if_s) {
        if ((rc = push(k, s->if_s, (int)i, R_IF, 0, 1)) ||
            (s->then_s && (rc = push(k, s->then_s, (int)i, R_THEN, 0, quiet))) ||
            (s->else_s && (rc = push(k, s->else_s, (int)i, R_ELSE, 0, quiet))))
            return rc;
    }
    return 0;
}

/* ---- values --------------------------------------------------------------------------- */

/* The decoded text of canonical string literal lit (into scratch unless it has no escape). */
static const char *decoded(rs_check *k, const char *lit, size_t len, size_t *out_len)
{
    if (!memchr(lit, '\\', len)) {
        rs_buf_reset(&k->scratch);
        if (rs_buf_add(&k->scratch, lit + 1, len - 2)) {
            k->oom = 1;
            return "";
        }
    } else {
        rs_buf_reset(&k->scratch);
        if (rs_json_unquote(&k->scratch, lit, len)) {
            k->oom = 1;
            return "";
        }
    }
    if (out_len)
        *out_len = k->scratch.len;
    return k->scratch.buf;
}

static const rs_schema *prop_schema(const rs_schema *s, const char *key, size_t len, int *found)
{
    for (size_t i = 0; i < s->n_props; i++)
        if (s->props[i].canon.len == len && !memcmp(s->props[i].canon.text, key, len)) {
            *found = 1;
            return s->props[i].s;
        }
    *found = 0;
    return s->addl;
}

/* A value starts at start: where it sits in its parent (for its path), and the property or
 * item schemas of the checks on its parent. */
static int begin(rs_check *k, const char *start)
{
    rs_check_node *n = &k->nodes[k->depth];
    n->first = k->n_items;
    n->key_base = k->n_keys;
    n->count = 0;
    n->start = start;
    n->key = k->pending;
    n->key_len = k->pending_len;
    int rc = 0;
    if (k->depth == 0) {
        if (k->schema)
            rc = push(k, k->schema, -1, R_ROOT, 0, 0);
    } else {
        rs_check_node *p = &k->nodes[k->depth - 1];
        int member = k->pending != NULL;
        n->index = p->count++;
        for (size_t i = p->first; i < p->end && !rc; i++) {
            const rs_schema *s = k->items[i].s, *cs;
            if (s->always)
                continue;
            if (member) {
                int found;
                if (k->items[i].rank <= K_PROPS ||
                    !(cs = prop_schema(s, k->pending, k->pending_len, &found)))
                    continue;
                rc = push(k, cs, (int)i, R_PROP, 0, k->items[i].quiet);
            } else {
                if (k->items[i].rank <= K_ITEMS || !(cs = s->items))
                    continue;
                rc = push(k, cs, (int)i, R_ITEM, 0, k->items[i].quiet);
            }
        }
    }
    n->end = k->n_items;
    k->pending = NULL;
    k->depth++;
    return rc;
}

static int is_number(char c)
{
    return c == '-' || (c >= '0' && c <= '9');
}

static int type_ok(unsigned types, char c, const char *v, size_t len)
{
    if ((types & RS_T_STRING) && c == '"')
        return 1;
    if ((types & RS_T_OBJECT) && c == '{')
        return 1;
    if ((types & RS_T_ARRAY) && c == '[')
        return 1;
    if ((types & RS_T_NUMBER) && is_number(c))
        return 1;
    if ((types & RS_T_INTEGER) && is_number(c)) {
        double d = rs_json_number(v, len);
        if (isfinite(d) && d == floor(d))
            return 1;
    }
    if ((types & RS_T_BOOLEAN) && (c == 't' || c == 'f'))
        return 1;
    if ((types & RS_T_NULL) && c == 'n')
        return 1;
    return 0;
}

static size_t codepoints(const char *s, size_t n)
{
    size_t cp = 0;
    for (size_t i = 0; i < n; i++)
        cp += ((unsigned char)s[i] & 0xc0) != 0x80;
    return cp;
}

/* Item i's own keywords against the value v[0..len) of node n. */
static void own(rs_check *k, size_t i, const rs_check_node *n, const char *v, size_t len)
{
    rs_check_item *c = &k->items[i];
    const rs_schema *s = c->s;
    const char *path = k->path;
    char kind = v[0];
    if (s->always == 1)
        return;
    if (s->always == -1) {
        fail(k, c, K_TYPE, "%s: no value is allowed here", path);
        return;
    }
    if (s->types && !type_ok(s->types, kind, v, len)) {
        fail(k, c, K_TYPE, "%s: expected %s, got %s", path, s->types_text, rs_json_kind(v));
        return;
    }
    if (s->const_v && !rs_json_equal(s->const_v->text, s->const_v->len, v, len)) {
        fail(k, c, K_CONST, "%s: must equal %s", path, s->const_text);
        return;
    }
    if (s->n_enum) {
        size_t e = 0;
        while (e < s->n_enum && !rs_json_equal(s->enum_v[e].text, s->enum_v[e].len, v, len))
            e++;
        if (e == s->n_enum) {
            fail(k, c, K_ENUM, "%s: must be one of %s", path, s->enum_text);
            return;
        }
    }
    if (is_number(kind) && (s->has_min || s->has_max)) {
        double d = rs_json_number(v, len);
        if (s->has_min && !(d >= s->minimum)) {
            fail(k, c, K_MIN, "%s: must be >= %g", path, s->minimum);
            return;
        }
        if (s->has_max && !(d <= s->maximum)) {
            fail(k, c, K_MAX, "%s: must be <= %g", path, s->maximum);
            return;
        }
    }
    if (kind == '"' && (s->min_len >= 0 || s->max_len >= 0 || s->re)) {
        /* A literal without escapes is its own text: no copy unless a pattern needs one. */
        size_t dl = len - 2;
        const char *d = v + 1;
        if (s->re || memchr(v, '\\', len))
            d = decoded(k, v, len, &dl);
        if (s->min_len >= 0 || s->max_len >= 0) {
            size_t cp = codepoints(d, dl);
            if (s->min_len >= 0 && cp < (size_t)s->min_len) {
                fail(k, c, K_MINLEN, "%s: shorter than %ld character%s", path, s->min_len,
                     s->min_len == 1 ? "" : "s");
                return;
            }
            if (s->max_len >= 0 && cp > (size_t)s->max_len) {
                fail(k, c, K_MAXLEN, "%s: longer than %ld character%s", path, s->max_len,
                     s->max_len == 1 ? "" : "s");
                return;
            }
        }
        if (s->re && regexec(s->re, d, 0, NULL, 0) != 0) {
            fail(k, c, K_PATTERN, "%s: does not match %s", path, s->re_src);
            return;
        }
    }
    if (kind == '{')
        for (size_t r = 0; r < s->n_required; r++) {
            size_t j = n->key_base;
            while (j < k->n_keys &&
                   !(k->keys[j].len == s->required[r].canon.len &&
                     !memcmp(k->keys[j].key, s->required[r].canon.text, k->keys[j].len)))
                j++;
            if (j == k->n_keys) {
                fail(k, c, K_REQUIRED, "%s: missing required field '%s'", path,
                     s->required[r].name);
                return;
            }
        }
}

/* Item i is complete: settle its if/then/else and hand its verdict to its parent. */
static void settle(rs_check *k, size_t i)
{
    rs_check_item *c = &k->items[i];
    const rs_schema *s = c->s;
    if (!s->always && s->if_s) {
        int r = c->if_pass ? c->then_rank : c->else_rank;
        if (r != NONE)
            take(c, K_ALLOF + (int)s->n_all_of, c->if_pass ? c->then_msg : c->else_msg);
    }
    if (c->parent < 0) {
        k->rank = c->rank;
        k->msg = c->msg;
        return;
    }
    rs_check_item *p = &k->items[c->parent];
    switch (c->role) {
    case R_PROP:
        if (c->rank != NONE)
            take(p, K_PROPS, c->msg);
        break;
    case R_ITEM:
        if (c->rank != NONE)
            take(p, K_ITEMS, c->msg);
        break;
    case R_ALLOF:
        if (c->rank != NONE)
            take(p, K_ALLOF + c->index, c->msg);
        break;
    case R_IF: p->if_pass = c->rank == NONE; break;
    case R_THEN:
        p->then_rank = c->rank;
        p->then_msg = c->msg;
        break;
    case R_ELSE:
        p->else_rank = c->rank;
        p->else_msg = c->msg;
        break;
    }
}

static int cmp_key(const void *a, const void *b)
{
    const rs_check_key *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static void dup_found(rs_check *k, const rs_check_key *key)
{
    const char *d = decoded(k, key->key, key->len, NULL);
    k->dup = 1;
    (void)rs_fmt(k->dup_msg, sizeof k->dup_msg,
                 /* a reason: a cut is marked */ "%s: duplicate field '%.64s'", k->root, d);
}

/* Duplicate keys of the object ending now, named as the tree checker named them: the first
 * key with a later twin in a small object, the smallest twin in a large one. */
static void duplicates(rs_check *k, const rs_check_node *n)
{
    size_t nk = k->n_keys - n->key_base;
    rs_check_key *ks = &k->keys[n->key_base];
    if (k->dup || nk < 2)
        return;
    if (nk <= 16) {
        for (size_t a = 0; a < nk; a++)
            for (size_t b = a + 1; b < nk; b++)
                if (!cmp_key(&ks[a], &ks[b])) {
                    dup_found(k, &ks[a]);
                    return;
                }
        return;
    }
    rs_check_key *sorted = malloc(nk * sizeof *sorted);
    if (!sorted) {
        k->oom = 1;
        return;
    }
    memcpy(sorted, ks, nk * sizeof *sorted);
    qsort(sorted, nk, sizeof *sorted, cmp_key);
    rs_buf best = RS_BUF_INIT;
    int have = 0;
    const rs_check_key *best_key = NULL;
    for (size_t i = 1; i < nk; i++) {
        if (cmp_key(&sorted[i - 1], &sorted[i]))
            continue;
        size_t dl;
        const char *d = decoded(k, sorted[i].key, sorted[i].len, &dl);
        if (!have || strcmp(d, best.buf) < 0) {
            rs_buf_reset(&best);
            if (rs_buf_add(&best, d, dl))
                k->oom = 1;
            best_key = &sorted[i];
            have = 1;
        }
    }
    if (have && best_key)
        dup_found(k, best_key);
    rs_buf_release(&best);
    free(sorted);
}

/* The value of the innermost open node is v[0..len). */
static void finish(rs_check *k, const char *v, size_t len)
{
    rs_check_node *n = &k->nodes[k->depth - 1];
    if (v[0] == '{')
        duplicates(k, n);
    for (size_t i = n->end; i-- > n->first;) {
        own(k, i, n, v, len);
        settle(k, i);
    }
    k->n_items = n->first;
    k->n_keys = n->key_base;
    k->depth--;
}

/* ---- the scanner's tokens ------------------------------------------------------------- */

static int on_key(void *ctx, const char *key, size_t len)
{
    rs_check *k = ctx;
    if (grow((void **)&k->keys, &k->cap_keys, k->n_keys, sizeof *k->keys, k->inline_keys))
        return -ENOMEM;
    k->keys[k->n_keys++] = (rs_check_key){key, len};
    k->pending = key;
    k->pending_len = len;
    const rs_check_node *n = &k->nodes[k->depth - 1];
    for (size_t i = n->first; i < n->end; i++) {
        const rs_schema *s = k->items[i].s;
        int found;
        if (s->always || !s->addl_false || k->items[i].rank <= K_PROPS)
            continue;
        prop_schema(s, key, len, &found);
        if (!found)
            fail(k, &k->items[i], K_PROPS, "%s: unexpected field '%s'", k->path,
                 decoded(k, key, len, NULL));
    }
    return k->oom ? -ENOMEM : 0;
}

static int on_open(void *ctx, char kind, const char *at)
{
    rs_check *k = ctx;
    (void)kind;
    int rc = begin(k, at);
    return rc ? rc : k->oom ? -ENOMEM : 0;
}

static int on_close(void *ctx, const char *end)
{
    rs_check *k = ctx;
    const char *start = k->nodes[k->depth - 1].start;
    finish(k, start, (size_t)(end - start));
    return k->oom ? -ENOMEM : 0;
}

static int on_scalar(void *ctx, const char *v, size_t len)
{
    rs_check *k = ctx;
    int rc = begin(k, v);
    if (rc)
        return rc;
    finish(k, v, len);
    return k->oom ? -ENOMEM : 0;
}

const rs_json_visitor rs_check_visitor = {
    .key = on_key,
    .open = on_open,
    .close = on_close,
    .scalar = on_scalar,
};

/* ---- verdicts ------------------------------------------------------------------------- */

int rs_check_form(const rs_check *k, rs_err *err)
{
    if (k->oom)
        return rs_err_set(err, -ENOMEM, "out of memory checking %s", k->root);
    if (k->dup)
        return rs_err_set(err, -EINVAL, "%s", k->dup_msg);
    return 0;
}

int rs_check_schema(const rs_check *k, rs_err *err)
{
    if (k->rank == NONE)
        return 0;
    return rs_err_set(err, -EINVAL, "%s", k->msgs.len > k->msg ? k->msgs.buf + k->msg : "");
}

int rs_check_text(rs_check *k, const char *text, size_t len, rs_err *err)
{
    char small[256];
    char *dst = len < sizeof small ? small : malloc(len + 1);
    if (!dst)
        return rs_err_set(err, -ENOMEM, "out of memory");
    size_t n;
    int rc = rs_json_scan(dst, &n, text, len, &rs_check_visitor, k, err);
    if (dst != small)
        free(dst);
    return rc;
}
