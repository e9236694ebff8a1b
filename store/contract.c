/* contract.c — the event contract loaded as data: event types, categories and a compiled
 * JSON-Schema subset (the keywords the contract uses, nothing more; anything else refuses
 * to load so that a typo in the file is caught). */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "json.h"

enum {
    T_STRING = 1 << 0, T_OBJECT = 1 << 1, T_ARRAY = 1 << 2, T_NUMBER = 1 << 3,
    T_INTEGER = 1 << 4, T_BOOLEAN = 1 << 5, T_NULL = 1 << 6,
};

static const struct { const char *name; unsigned bit; } type_names[] = {
    { "string", T_STRING }, { "object", T_OBJECT }, { "array", T_ARRAY },
    { "number", T_NUMBER }, { "integer", T_INTEGER }, { "boolean", T_BOOLEAN },
    { "null", T_NULL },
};

typedef struct schema schema;
typedef struct prop { const char *name; schema *s; } prop;

struct schema {
    int always;                 /* 1: true schema, -1: false schema, 0: keywords */
    unsigned types;             /* 0: any */
    const cJSON *required;      /* array of strings, or NULL */
    prop *props;
    size_t n_props;
    const cJSON *const_v;
    const cJSON *enum_v;
    int has_min, has_max;
    double minimum, maximum;
    long min_len, max_len;      /* -1: none */
    regex_t *re;
    const char *re_src;
    schema *items;
    int addl_false;             /* additionalProperties: false */
    schema *addl;               /* additionalProperties: schema */
    schema **all_of;
    size_t n_all_of;
    schema *if_s, *then_s, *else_s;
    schema *next_alloc;         /* every node, for freeing */
};

typedef struct ev_def {
    const char *event_type;
    const char *category;
    int singleton;
    schema *content, *metadata;
    const cJSON *meta_required;
} ev_def;

typedef struct alias_def {
    const char *event_type;
    const ev_def *canon;
} alias_def;

typedef struct pattern_def {
    const char *prefix;         /* "middleware:" of "middleware:{tag}" */
    size_t prefix_len;
    const char *category;
    schema *type_s, *tag_s, *content, *metadata;
    const cJSON *meta_required;
} pattern_def;

struct rs_contract {
    char *text;
    size_t text_len;
    cJSON *doc;
    ev_def *events;
    size_t n_events;
    alias_def *aliases;
    size_t n_aliases;
    pattern_def *patterns;
    size_t n_patterns;
    const char **singletons;    /* event types marked "singleton": true */
    size_t n_singletons;
    schema *all;                /* list of every schema node */
};

/* ---- compiling ------------------------------------------------------------------------ */

typedef struct compiler {
    rs_contract *c;
    rs_err *err;
} compiler;

static const char *annotation_keys[] = { "description", "title", "$comment", "examples",
                                         "default", NULL };

static int is_annotation(const char *k)
{
    for (size_t i = 0; annotation_keys[i]; i++)
        if (!strcmp(k, annotation_keys[i]))
            return 1;
    return 0;
}

static int bad(compiler *cp, const char *where, const char *fmt, const char *what)
{
    char m[256];
    snprintf(m, sizeof m, fmt, what);
    return rs_err_set(cp->err, -EINVAL, "contract %s: %s", where, m);
}

static int compile(compiler *cp, const cJSON *j, const char *where, schema **out);

static int type_bit(const cJSON *t, unsigned *bits)
{
    if (!cJSON_IsString(t))
        return -1;
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (!strcmp(t->valuestring, type_names[i].name)) {
            *bits |= type_names[i].bit;
            return 0;
        }
    return -1;
}

static int nonneg_int(const cJSON *v, long *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble != floor(v->valuedouble) || v->valuedouble > 1e15)
        return -1;
    *out = (long)v->valuedouble;
    return 0;
}

static int compile(compiler *cp, const cJSON *j, const char *where, schema **out)
{
    schema *s = calloc(1, sizeof *s);
    if (!s)
        return rs_err_set(cp->err, -ENOMEM, "out of memory");
    s->min_len = s->max_len = -1;
    s->next_alloc = cp->c->all;
    cp->c->all = s;
    *out = s;
    if (cJSON_IsTrue(j)) {
        s->always = 1;
        return 0;
    }
    if (cJSON_IsFalse(j)) {
        s->always = -1;
        return 0;
    }
    if (!cJSON_IsObject(j))
        return bad(cp, where, "%s", "a schema must be an object, true or false");
    char sub[512];
    int rc;
    for (const cJSON *k = j->child; k; k = k->next) {
        const char *n = k->string;
        if (!strcmp(n, "type")) {
            if (cJSON_IsArray(k)) {
                if (!k->child)
                    return bad(cp, where, "%s", "empty 'type' array");
                for (const cJSON *t = k->child; t; t = t->next)
                    if (type_bit(t, &s->types))
                        return bad(cp, where, "unknown type in %s", "'type'");
            } else if (type_bit(k, &s->types))
                return bad(cp, where, "unknown type in %s", "'type'");
        } else if (!strcmp(n, "required")) {
            if (!cJSON_IsArray(k))
                return bad(cp, where, "%s", "'required' must be an array of strings");
            for (const cJSON *t = k->child; t; t = t->next)
                if (!cJSON_IsString(t))
                    return bad(cp, where, "%s", "'required' must be an array of strings");
            s->required = k;
        } else if (!strcmp(n, "properties")) {
            if (!cJSON_IsObject(k))
                return bad(cp, where, "%s", "'properties' must be an object");
            size_t cnt = 0;
            for (const cJSON *t = k->child; t; t = t->next)
                cnt++;
            s->props = calloc(cnt ? cnt : 1, sizeof *s->props);
            if (!s->props)
                return rs_err_set(cp->err, -ENOMEM, "out of memory");
            for (const cJSON *t = k->child; t; t = t->next) {
                snprintf(sub, sizeof sub, "%s.properties.%s", where, t->string);
                s->props[s->n_props].name = t->string;
                if ((rc = compile(cp, t, sub, &s->props[s->n_props].s)))
                    return rc;
                s->n_props++;
            }
        } else if (!strcmp(n, "const")) {
            s->const_v = k;
        } else if (!strcmp(n, "enum")) {
            if (!cJSON_IsArray(k) || !k->child)
                return bad(cp, where, "%s", "'enum' must be a non-empty array");
            s->enum_v = k;
        } else if (!strcmp(n, "minimum") || !strcmp(n, "maximum")) {
            if (!cJSON_IsNumber(k) || !isfinite(k->valuedouble))
                return bad(cp, where, "'%s' must be a number", n);
            if (n[1] == 'i') {
                s->has_min = 1;
                s->minimum = k->valuedouble;
            } else {
                s->has_max = 1;
                s->maximum = k->valuedouble;
            }
        } else if (!strcmp(n, "minLength") || !strcmp(n, "maxLength")) {
            if (nonneg_int(k, n[1] == 'i' ? &s->min_len : &s->max_len))
                return bad(cp, where, "'%s' must be a non-negative integer", n);
        } else if (!strcmp(n, "pattern")) {
            if (!cJSON_IsString(k))
                return bad(cp, where, "%s", "'pattern' must be a string");
            s->re = calloc(1, sizeof *s->re);
            if (!s->re)
                return rs_err_set(cp->err, -ENOMEM, "out of memory");
            if (regcomp(s->re, k->valuestring, REG_EXTENDED | REG_NOSUB)) {
                free(s->re);
                s->re = NULL;
                return bad(cp, where, "pattern '%s' does not compile as a POSIX extended regex",
                           k->valuestring);
            }
            s->re_src = k->valuestring;
        } else if (!strcmp(n, "items")) {
            snprintf(sub, sizeof sub, "%s.items", where);
            if (!cJSON_IsObject(k) && !cJSON_IsBool(k))
                return bad(cp, sub, "%s", "only a single 'items' schema is supported");
            if ((rc = compile(cp, k, sub, &s->items)))
                return rc;
        } else if (!strcmp(n, "additionalProperties")) {
            if (cJSON_IsFalse(k))
                s->addl_false = 1;
            else if (!cJSON_IsTrue(k)) {
                snprintf(sub, sizeof sub, "%s.additionalProperties", where);
                if ((rc = compile(cp, k, sub, &s->addl)))
                    return rc;
            }
        } else if (!strcmp(n, "allOf")) {
            if (!cJSON_IsArray(k) || !k->child)
                return bad(cp, where, "%s", "'allOf' must be a non-empty array");
            size_t cnt = (size_t)cJSON_GetArraySize(k);
            s->all_of = calloc(cnt, sizeof *s->all_of);
            if (!s->all_of)
                return rs_err_set(cp->err, -ENOMEM, "out of memory");
            for (const cJSON *t = k->child; t; t = t->next) {
                snprintf(sub, sizeof sub, "%s.allOf[%zu]", where, s->n_all_of);
                if ((rc = compile(cp, t, sub, &s->all_of[s->n_all_of])))
                    return rc;
                s->n_all_of++;
            }
        } else if (!strcmp(n, "if") || !strcmp(n, "then") || !strcmp(n, "else")) {
            snprintf(sub, sizeof sub, "%s.%s", where, n);
            schema **dst = n[0] == 'i' ? &s->if_s : n[0] == 't' ? &s->then_s : &s->else_s;
            if ((rc = compile(cp, k, sub, dst)))
                return rc;
        } else if (!is_annotation(n)) {
            return bad(cp, where, "unsupported schema keyword '%s'", n);
        }
    }
    if ((s->then_s || s->else_s) && !s->if_s)
        return bad(cp, where, "%s", "'then'/'else' without 'if'");
    return 0;
}

/* ---- checking ------------------------------------------------------------------------- */

typedef struct checker {
    rs_err *err;
    int quiet;                  /* inside "if": no reason wanted */
    char path[512];
    size_t path_len;
} checker;

static const char *kind_name(const cJSON *v)
{
    if (cJSON_IsString(v)) return "string";
    if (cJSON_IsObject(v)) return "object";
    if (cJSON_IsArray(v)) return "array";
    if (cJSON_IsBool(v)) return "boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsNumber(v)) return "number";
    return "invalid";
}

static int is_integer(const cJSON *v)
{
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
           v->valuedouble == floor(v->valuedouble);
}

static int type_ok(unsigned types, const cJSON *v)
{
    if ((types & T_STRING) && cJSON_IsString(v)) return 1;
    if ((types & T_OBJECT) && cJSON_IsObject(v)) return 1;
    if ((types & T_ARRAY) && cJSON_IsArray(v)) return 1;
    if ((types & T_NUMBER) && cJSON_IsNumber(v)) return 1;
    if ((types & T_INTEGER) && is_integer(v)) return 1;
    if ((types & T_BOOLEAN) && cJSON_IsBool(v)) return 1;
    if ((types & T_NULL) && cJSON_IsNull(v)) return 1;
    return 0;
}

#define CHECK_FAIL(ck, ...)                                                                   \
    ((ck)->quiet ? -EINVAL : rs_err_set((ck)->err, -EINVAL, __VA_ARGS__))

static size_t codepoints(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xc0) != 0x80;
    return n;
}

/* A value for a reason: strings bare, anything else as compact JSON. */
static void render_value(char *dst, size_t cap, const cJSON *v, int quote_strings)
{
    if (cJSON_IsString(v)) {
        snprintf(dst, cap, quote_strings ? "\"%s\"" : "%s", v->valuestring);
        return;
    }
    char *t = cJSON_PrintUnformatted(v);
    snprintf(dst, cap, "%s", t ? t : "?");
    free(t);
}

static int check(checker *ck, const schema *s, const cJSON *v);

static void path_add(checker *ck, const char *text, size_t n)
{
    size_t room = sizeof ck->path - ck->path_len - 1;
    if (n > room)
        n = room;
    memcpy(ck->path + ck->path_len, text, n);
    ck->path_len += n;
    ck->path[ck->path_len] = '\0';
}

/* Check v at path + ".key" (key given) or "[index]", restoring the path after. The path is
 * kept for the reason of a refusal but built on every node checked: no snprintf here. */
static int check_sub(checker *ck, const schema *s, const cJSON *v, const char *key, size_t index)
{
    size_t saved = ck->path_len;
    if (key) {
        path_add(ck, ".", 1);
        path_add(ck, key, strlen(key));
    } else {
        char digits[24], *d = digits + sizeof digits;
        *--d = ']';
        do
            *--d = (char)('0' + index % 10);
        while ((index /= 10) > 0);
        *--d = '[';
        path_add(ck, d, (size_t)(digits + sizeof digits - d));
    }
    int rc = check(ck, s, v);
    ck->path_len = saved;
    ck->path[saved] = '\0';
    return rc;
}

static int check(checker *ck, const schema *s, const cJSON *v)
{
    const char *path = ck->path;
    if (s->always == 1)
        return 0;
    if (s->always == -1)
        return CHECK_FAIL(ck, "%s: no value is allowed here", path);
    if (s->types && !type_ok(s->types, v)) {
        if (ck->quiet)
            return -EINVAL;
        char want[96] = "";
        size_t w = 0;
        for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
            if (s->types & type_names[i].bit)
                w += (size_t)snprintf(want + w, sizeof want - w, "%s%s", w ? " or " : "",
                                      type_names[i].name);
        return rs_err_set(ck->err, -EINVAL, "%s: expected %s, got %s", path, want,
                          kind_name(v));
    }
    if (s->const_v && !cJSON_Compare(s->const_v, v, 1)) {
        if (ck->quiet)
            return -EINVAL;
        char m[128];
        render_value(m, sizeof m, s->const_v, 1);
        return rs_err_set(ck->err, -EINVAL, "%s: must equal %s", path, m);
    }
    if (s->enum_v) {
        int found = 0;
        for (const cJSON *e = s->enum_v->child; e && !found; e = e->next)
            found = cJSON_Compare(e, v, 1);
        if (!found) {
            if (ck->quiet)
                return -EINVAL;
            char m[256] = "";
            size_t w = 0;
            for (const cJSON *e = s->enum_v->child; e && w < sizeof m; e = e->next) {
                char one[96];
                render_value(one, sizeof one, e, 0);
                w += (size_t)snprintf(m + w, sizeof m - w, "%s%s", w ? ", " : "", one);
            }
            return rs_err_set(ck->err, -EINVAL, "%s: must be one of %s", path, m);
        }
    }
    if (cJSON_IsNumber(v)) {
        if (s->has_min && !(v->valuedouble >= s->minimum))
            return CHECK_FAIL(ck, "%s: must be >= %g", path, s->minimum);
        if (s->has_max && !(v->valuedouble <= s->maximum))
            return CHECK_FAIL(ck, "%s: must be <= %g", path, s->maximum);
    }
    if (cJSON_IsString(v)) {
        if (s->min_len >= 0 || s->max_len >= 0) {
            size_t n = codepoints(v->valuestring);
            if (s->min_len >= 0 && n < (size_t)s->min_len)
                return CHECK_FAIL(ck, "%s: shorter than %ld character%s", path, s->min_len,
                                  s->min_len == 1 ? "" : "s");
            if (s->max_len >= 0 && n > (size_t)s->max_len)
                return CHECK_FAIL(ck, "%s: longer than %ld character%s", path, s->max_len,
                                  s->max_len == 1 ? "" : "s");
        }
        if (s->re && regexec(s->re, v->valuestring, 0, NULL, 0) != 0)
            return CHECK_FAIL(ck, "%s: does not match %s", path, s->re_src);
    }
    int rc;
    if (cJSON_IsObject(v)) {
        if (s->required)
            for (const cJSON *r = s->required->child; r; r = r->next)
                if (!cJSON_GetObjectItemCaseSensitive(v, r->valuestring))
                    return CHECK_FAIL(ck, "%s: missing required field '%s'", path,
                                      r->valuestring);
        if (s->n_props || s->addl_false || s->addl) {
            for (const cJSON *m = v->child; m; m = m->next) {
                const schema *ps = NULL;
                for (size_t i = 0; i < s->n_props; i++)
                    if (!strcmp(s->props[i].name, m->string)) {
                        ps = s->props[i].s;
                        break;
                    }
                if (!ps) {
                    if (s->addl_false)
                        return CHECK_FAIL(ck, "%s: unexpected field '%s'", path, m->string);
                    ps = s->addl;
                }
                if (ps && (rc = check_sub(ck, ps, m, m->string ? m->string : "", 0)))
                    return rc;
            }
        }
    }
    if (cJSON_IsArray(v) && s->items) {
        size_t i = 0;
        for (const cJSON *e = v->child; e; e = e->next, i++)
            if ((rc = check_sub(ck, s->items, e, NULL, i)))
                return rc;
    }
    for (size_t i = 0; i < s->n_all_of; i++)
        if ((rc = check(ck, s->all_of[i], v)))
            return rc;
    if (s->if_s) {
        int quiet = ck->quiet;
        ck->quiet = 1;
        int cond = check(ck, s->if_s, v) == 0;
        ck->quiet = quiet;
        const schema *branch = cond ? s->then_s : s->else_s;
        if (branch && (rc = check(ck, branch, v)))
            return rc;
    }
    return 0;
}

static int run_check(const schema *s, const cJSON *v, const char *root, rs_err *err)
{
    if (!s)
        return 0;
    checker ck = { .err = err };
    snprintf(ck.path, sizeof ck.path, "%s", root);
    ck.path_len = strlen(ck.path);
    return check(&ck, s, v);
}

/* ---- loading -------------------------------------------------------------------------- */

static int req_string(compiler *cp, const cJSON *obj, const char *key, const char *where,
                      size_t max, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return bad(cp, where, "missing or empty string '%s'", key);
    if (max && strlen(v->valuestring) > max)
        return bad(cp, where, "'%s' is too long", key);
    *out = v->valuestring;
    return 0;
}

static int req_schema(compiler *cp, const cJSON *obj, const char *key, const char *where,
                      schema **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return bad(cp, where, "missing '%s'", key);
    char sub[256];
    snprintf(sub, sizeof sub, "%s.%s", where, key);
    return compile(cp, v, sub, out);
}

/* Keys an events[] or dynamic_event_patterns[] entry may have: a misspelt "singleton" must
 * not silently turn a singleton into an ordinary event. */
static const char *entry_keys[] = {
    "event_type", "category", "singleton", "producer", "content_schema", "metadata_schema",
    "content_description", "metadata_description", "storage_semantics", "description",
    "notes", "pattern", "known_tags", "event_type_schema", "tag_schema", NULL,
};

static int check_entry_keys(compiler *cp, const cJSON *entry, const char *where, int pattern)
{
    for (const cJSON *k = entry->child; k; k = k->next) {
        size_t i;
        for (i = 0; entry_keys[i]; i++)
            if (!strcmp(k->string, entry_keys[i]))
                break;
        /* the last four belong to dynamic patterns only; patterns are never singletons */
        if (!entry_keys[i] || (!pattern && i >= 11) || (pattern && i == 2))
            return bad(cp, where, "unknown key '%s'", k->string);
    }
    return 0;
}

static const cJSON *meta_required(const cJSON *def)
{
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(def, "metadata_schema");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(ms, "required");
    return cJSON_IsArray(r) && r->child ? r : NULL;
}

static const ev_def *find_event(const rs_contract *c, const char *t)
{
    for (size_t i = 0; i < c->n_events; i++)
        if (!strcmp(c->events[i].event_type, t))
            return &c->events[i];
    return NULL;
}

static int load_doc(rs_contract *c, rs_err *err)
{
    compiler cp = { c, err };
    const cJSON *doc = c->doc;
    char where[128];
    int rc;
    if (!cJSON_IsObject(doc))
        return rs_err_set(err, -EINVAL, "contract: not a JSON object");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
    if (version && !(cJSON_IsNumber(version) && version->valuedouble == 1))
        return rs_err_set(err, -EINVAL, "contract: unsupported version (runfs reads version 1)");
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "events");
    if (!cJSON_IsArray(events) || !events->child)
        return rs_err_set(err, -EINVAL, "contract: 'events' must be a non-empty array");
    size_t n = (size_t)cJSON_GetArraySize(events);
    c->events = calloc(n, sizeof *c->events);
    if (!c->events)
        return rs_err_set(err, -ENOMEM, "out of memory");
    for (const cJSON *e = events->child; e; e = e->next) {
        ev_def *d = &c->events[c->n_events];
        snprintf(where, sizeof where, "events[%zu]", c->n_events);
        if (!cJSON_IsObject(e))
            return bad(&cp, where, "%s", "not an object");
        if ((rc = check_entry_keys(&cp, e, where, 0)))
            return rc;
        if ((rc = req_string(&cp, e, "event_type", where, RS_EVENT_TYPE_MAX, &d->event_type)) ||
            (rc = req_string(&cp, e, "category", where, RS_CATEGORY_MAX, &d->category)))
            return rc;
        snprintf(where, sizeof where, "events[%zu] (%s)", c->n_events, d->event_type);
        if (find_event(c, d->event_type))
            return bad(&cp, where, "%s", "duplicate event_type");
        const cJSON *sg = cJSON_GetObjectItemCaseSensitive(e, "singleton");
        if (sg && !cJSON_IsBool(sg))
            return bad(&cp, where, "%s", "'singleton' must be a boolean");
        d->singleton = cJSON_IsTrue(sg);
        snprintf(where, sizeof where, "%s", d->event_type);
        if ((rc = req_schema(&cp, e, "content_schema", where, &d->content)) ||
            (rc = req_schema(&cp, e, "metadata_schema", where, &d->metadata)))
            return rc;
        d->meta_required = meta_required(e);
        c->n_events++;
    }
    c->singletons = calloc(c->n_events, sizeof *c->singletons);
    if (!c->singletons)
        return rs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < c->n_events; i++)
        if (c->events[i].singleton)
            c->singletons[c->n_singletons++] = c->events[i].event_type;

    const cJSON *aliases = cJSON_GetObjectItemCaseSensitive(doc, "legacy_event_aliases");
    if (aliases) {
        if (!cJSON_IsArray(aliases))
            return rs_err_set(err, -EINVAL, "contract: 'legacy_event_aliases' must be an array");
        n = (size_t)cJSON_GetArraySize(aliases);
        c->aliases = calloc(n ? n : 1, sizeof *c->aliases);
        if (!c->aliases)
            return rs_err_set(err, -ENOMEM, "out of memory");
        for (const cJSON *a = aliases->child; a; a = a->next) {
            alias_def *d = &c->aliases[c->n_aliases];
            const char *canon = NULL;
            snprintf(where, sizeof where, "legacy_event_aliases[%zu]", c->n_aliases);
            if (!cJSON_IsObject(a))
                return bad(&cp, where, "%s", "not an object");
            if ((rc = req_string(&cp, a, "event_type", where, RS_EVENT_TYPE_MAX, &d->event_type)) ||
                (rc = req_string(&cp, a, "canonical_event_type", where, 0, &canon)))
                return rc;
            if (!(d->canon = find_event(c, canon)))
                return bad(&cp, where, "canonical_event_type '%s' is not an event", canon);
            if (find_event(c, d->event_type))
                return bad(&cp, where, "alias '%s' is also an event", d->event_type);
            c->n_aliases++;
        }
    }

    const cJSON *pats = cJSON_GetObjectItemCaseSensitive(doc, "dynamic_event_patterns");
    if (pats) {
        if (!cJSON_IsArray(pats))
            return rs_err_set(err, -EINVAL, "contract: 'dynamic_event_patterns' must be an array");
        n = (size_t)cJSON_GetArraySize(pats);
        c->patterns = calloc(n ? n : 1, sizeof *c->patterns);
        if (!c->patterns)
            return rs_err_set(err, -ENOMEM, "out of memory");
        for (const cJSON *p = pats->child; p; p = p->next) {
            pattern_def *d = &c->patterns[c->n_patterns];
            const char *pat = NULL;
            snprintf(where, sizeof where, "dynamic_event_patterns[%zu]", c->n_patterns);
            if (!cJSON_IsObject(p))
                return bad(&cp, where, "%s", "not an object");
            if ((rc = check_entry_keys(&cp, p, where, 1)))
                return rc;
            if ((rc = req_string(&cp, p, "pattern", where, 0, &pat)) ||
                (rc = req_string(&cp, p, "category", where, RS_CATEGORY_MAX, &d->category)))
                return rc;
            size_t pl = strlen(pat);
            if (pl < 6 || strcmp(pat + pl - 5, "{tag}") || memchr(pat, '{', pl - 5))
                return bad(&cp, where, "pattern '%s' must be a prefix followed by {tag}", pat);
            d->prefix = pat;
            d->prefix_len = pl - 5;
            snprintf(where, sizeof where, "%s", pat);
            if ((rc = req_schema(&cp, p, "content_schema", where, &d->content)) ||
                (rc = req_schema(&cp, p, "metadata_schema", where, &d->metadata)))
                return rc;
            char sub[160];
            const cJSON *ts = cJSON_GetObjectItemCaseSensitive(p, "tag_schema");
            snprintf(sub, sizeof sub, "%s.tag_schema", where);
            if (ts && (rc = compile(&cp, ts, sub, &d->tag_s)))
                return rc;
            ts = cJSON_GetObjectItemCaseSensitive(p, "event_type_schema");
            snprintf(sub, sizeof sub, "%s.event_type_schema", where);
            if (ts && (rc = compile(&cp, ts, sub, &d->type_s)))
                return rc;
            d->meta_required = meta_required(p);
            c->n_patterns++;
        }
    }
    return 0;
}

int rs_contract_load(rs_contract **out, const char *path, rs_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return rs_err_set(err, -errno, "contract %s: %s", path, strerror(errno));
    rs_buf b = RS_BUF_INIT;
    char chunk[8192];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if ((rc = rs_buf_add(&b, chunk, n)))
            break;
    int rerr = ferror(f);
    fclose(f);
    if (rc || rerr) {
        rs_buf_release(&b);
        return rs_err_set(err, rc ? rc : -EIO, "contract %s: could not read it", path);
    }
    rs_contract *c = calloc(1, sizeof *c);
    if (!c) {
        rs_buf_release(&b);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    c->text = rs_buf_detach(&b, &c->text_len);
    if (!c->text) {
        free(c);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    c->doc = rs_cjson_parse(c->text, c->text_len);
    if (!c->doc) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= c->text && at <= c->text + c->text_len ? (long)(at - c->text) : -1;
        rs_contract_free(c);
        return rs_err_set(err, -EINVAL, "contract %s: not valid JSON (near byte %ld)", path, off);
    }
    if ((rc = load_doc(c, err))) {
        rs_contract_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void rs_contract_free(rs_contract *c)
{
    if (!c)
        return;
    for (schema *s = c->all, *next; s; s = next) {
        next = s->next_alloc;
        if (s->re) {
            regfree(s->re);
            free(s->re);
        }
        free(s->props);
        free(s->all_of);
        free(s);
    }
    free(c->singletons);
    free(c->events);
    free(c->aliases);
    free(c->patterns);
    cJSON_Delete(c->doc);
    free(c->text);
    free(c);
}

const char *rs_contract_text(const rs_contract *c, size_t *len)
{
    if (len)
        *len = c->text_len;
    return c->text;
}

static const pattern_def *find_pattern(const rs_contract *c, const char *t)
{
    for (size_t i = 0; i < c->n_patterns; i++)
        if (!strncmp(t, c->patterns[i].prefix, c->patterns[i].prefix_len))
            return &c->patterns[i];
    return NULL;
}

const char *rs_contract_category(const rs_contract *c, const char *event_type)
{
    if (!c || !event_type)
        return NULL;
    const ev_def *d = find_event(c, event_type);
    if (d)
        return d->category;
    for (size_t i = 0; i < c->n_aliases; i++)
        if (!strcmp(c->aliases[i].event_type, event_type))
            return c->aliases[i].canon->category;
    const pattern_def *p = find_pattern(c, event_type);
    return p ? p->category : NULL;
}

int rs_contract_is_singleton(const rs_contract *c, const char *event_type)
{
    const ev_def *d = c && event_type ? find_event(c, event_type) : NULL;
    return d ? d->singleton : 0;
}

size_t rs_contract_singletons(const rs_contract *c, const char *const **out)
{
    *out = c ? c->singletons : NULL;
    return c ? c->n_singletons : 0;
}

static int check_name(const schema *s, const char *name, const char *root, rs_err *err)
{
    if (!s)
        return 0;
    cJSON *v = cJSON_CreateString(name);
    if (!v)
        return rs_err_set(err, -ENOMEM, "out of memory");
    int rc = run_check(s, v, root, err);
    cJSON_Delete(v);
    return rc;
}

int rs_contract_check(const rs_contract *c, const char *event_type, const cJSON *content,
                      const cJSON *metadata, int allow_unknown, rs_err *err)
{
    int rc;
    const ev_def *d = c ? find_event(c, event_type) : NULL;
    if (d) {
        if ((rc = run_check(d->content, content, "content", err)))
            return rc;
        return run_check(d->metadata, metadata, "metadata", err);
    }
    if (c)
        for (size_t i = 0; i < c->n_aliases; i++)
            if (!strcmp(c->aliases[i].event_type, event_type))
                return 0;           /* read-only alias: recognised, not checked */
    const pattern_def *p = c ? find_pattern(c, event_type) : NULL;
    if (p) {
        if ((rc = check_name(p->type_s, event_type, "event_type", err)) ||
            (rc = check_name(p->tag_s, event_type + p->prefix_len, "event_type tag", err)))
            return rc;
        if ((rc = run_check(p->content, content, "content", err)))
            return rc;
        return run_check(p->metadata, metadata, "metadata", err);
    }
    if (allow_unknown)
        return 0;
    return rs_err_set(err, -EINVAL, "unknown event type '%.64s' (not in the contract)",
                      event_type);
}

const cJSON *rs_contract_required_metadata(const rs_contract *c, const char *event_type)
{
    if (!c || !event_type)
        return NULL;
    const ev_def *d = find_event(c, event_type);
    if (d)
        return d->meta_required;
    const pattern_def *p = find_pattern(c, event_type);
    return p ? p->meta_required : NULL;
}
