/* contract.c — the event contract loaded as data: event types, categories and a compiled
 * JSON-Schema subset (the keywords the contract uses, nothing more; anything else refuses
 * to load so that a typo in the file is caught). */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "contract_int.h"
#include "json.h"
#include "rs_util.h"

static const struct {
    const char *name;
    unsigned bit;
} type_names[] = {
    {"string", RS_T_STRING}, {"object", RS_T_OBJECT},   {"array", RS_T_ARRAY},
    {"number", RS_T_NUMBER}, {"integer", RS_T_INTEGER}, {"boolean", RS_T_BOOLEAN},
    {"null", RS_T_NULL},
};

typedef rs_schema schema;

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
    const char *prefix; /* "middleware:" of "middleware:{tag}" */
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
    const char **singletons; /* event types marked "singleton": true */
    size_t n_singletons;
    schema *all; /* list of every schema node */
};

/* ---- compiling ------------------------------------------------------------------------ */

typedef struct compiler {
    rs_contract *c;
    rs_err *err;
} compiler;

static const char *annotation_keys[] = {"description", "title",   "$comment",
                                        "examples",    "default", NULL};

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
    (void)rs_fmt(m, sizeof m, fmt, what);
    return rs_err_set(cp->err, -EINVAL, "contract %s: %s", where, m);
}

/* A value for a reason: strings bare, anything else as compact JSON. */
static void render_value(char *dst, size_t cap, const cJSON *v, int quote_strings)
{
    if (cJSON_IsString(v)) {
        (void)rs_fmt(dst, cap, quote_strings ? "\"%s\"" : "%s", v->valuestring);
        return;
    }
    char *t = cJSON_PrintUnformatted(v);
    (void)rs_fmt(dst, cap, "%s", t ? t : "?");
    free(t);
}

static int lit_set(rs_lit *l, const char *canon, size_t len)
{
    if (!(l->text = malloc(len + 1)))
        return -ENOMEM;
    memcpy(l->text, canon, len);
    l->text[len] = '\0';
    l->len = len;
    return 0;
}

/* A name as the scanner writes it as a key. */
static int lit_name(rs_lit *l, const char *name)
{
    rs_buf b = RS_BUF_INIT;
    int rc = rs_buf_add_json_string(&b, name, strlen(name));
    if (!rc)
        rc = lit_set(l, b.buf, b.len);
    rs_buf_release(&b);
    return rc;
}

/* A contract value as canonical JSON text. */
static int lit_value(compiler *cp, rs_lit *l, const cJSON *v, const char *where)
{
    char *t = cJSON_PrintUnformatted(v);
    rs_buf b = RS_BUF_INIT;
    int rc = t ? rs_json_canon(&b, t, strlen(t), 0, NULL) : -ENOMEM;
    if (!rc)
        rc = lit_set(l, b.buf, b.len);
    free(t);
    rs_buf_release(&b);
    if (rc == -ENOMEM)
        return rs_err_set(cp->err, -ENOMEM, "out of memory");
    return rc ? bad(cp, where, "%s", "a const or enum value has no JSON form") : 0;
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
            size_t cnt = 0;
            for (const cJSON *t = k->child; t; t = t->next, cnt++)
                if (!cJSON_IsString(t))
                    return bad(cp, where, "%s", "'required' must be an array of strings");
            free(s->required);
            s->n_required = 0;
            if (!(s->required = calloc(cnt ? cnt : 1, sizeof *s->required)))
                return rs_err_set(cp->err, -ENOMEM, "out of memory");
            for (const cJSON *t = k->child; t; t = t->next) {
                s->required[s->n_required].name = t->valuestring;
                if (lit_name(&s->required[s->n_required++].canon, t->valuestring))
                    return rs_err_set(cp->err, -ENOMEM, "out of memory");
            }
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
                (void)rs_fmt(sub, sizeof sub, "%s.properties.%s", where, t->string);
                s->props[s->n_props].name = t->string;
                if (lit_name(&s->props[s->n_props].canon, t->string)) {
                    s->n_props++;
                    return rs_err_set(cp->err, -ENOMEM, "out of memory");
                }
                if ((rc = compile(cp, t, sub, &s->props[s->n_props++].s)))
                    return rc;
            }
        } else if (!strcmp(n, "const")) {
            char m[128];
            render_value(m, sizeof m, k, 1);
            free(s->const_text);
            if (!s->const_v && !(s->const_v = calloc(1, sizeof *s->const_v)))
                return rs_err_set(cp->err, -ENOMEM, "out of memory");
            free(s->const_v->text);
            s->const_v->text = NULL;
            if (!(s->const_text = strdup(m)))
                return rs_err_set(cp->err, -ENOMEM, "out of memory");
            if ((rc = lit_value(cp, s->const_v, k, where)))
                return rc;
        } else if (!strcmp(n, "enum")) {
            if (!cJSON_IsArray(k) || !k->child)
                return bad(cp, where, "%s", "'enum' must be a non-empty array");
            if (s->enum_v)
                return bad(cp, where, "%s", "'enum' given twice");
            size_t cnt = (size_t)cJSON_GetArraySize(k);
            if (!(s->enum_v = calloc(cnt, sizeof *s->enum_v)))
                return rs_err_set(cp->err, -ENOMEM, "out of memory");
            rs_buf m = RS_BUF_INIT; /* the values, for reasons */
            for (const cJSON *e = k->child; e; e = e->next) {
                if ((rc = lit_value(cp, &s->enum_v[s->n_enum++], e, where))) {
                    rs_buf_release(&m);
                    return rc;
                }
                char one[96];
                render_value(one, sizeof one, e, 0);
                if (m.len < 256 && (rc = rs_buf_addf(&m, "%s%s", m.len ? ", " : "", one))) {
                    rs_buf_release(&m);
                    return rs_err_set(cp->err, rc, "out of memory");
                }
            }
            if (!(s->enum_text = rs_buf_detach(&m, NULL)))
                return rs_err_set(cp->err, -ENOMEM, "out of memory");
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
            (void)rs_fmt(sub, sizeof sub, "%s.items", where);
            if (!cJSON_IsObject(k) && !cJSON_IsBool(k))
                return bad(cp, sub, "%s", "only a single 'items' schema is supported");
            if ((rc = compile(cp, k, sub, &s->items)))
                return rc;
        } else if (!strcmp(n, "additionalProperties")) {
            if (cJSON_IsFalse(k))
                s->addl_false = 1;
            else if (!cJSON_IsTrue(k)) {
                (void)rs_fmt(sub, sizeof sub, "%s.additionalProperties", where);
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
                (void)rs_fmt(sub, sizeof sub, "%s.allOf[%zu]", where, s->n_all_of);
                if ((rc = compile(cp, t, sub, &s->all_of[s->n_all_of])))
                    return rc;
                s->n_all_of++;
            }
        } else if (!strcmp(n, "if") || !strcmp(n, "then") || !strcmp(n, "else")) {
            (void)rs_fmt(sub, sizeof sub, "%s.%s", where, n);
            schema **dst = n[0] == 'i' ? &s->if_s : n[0] == 't' ? &s->then_s : &s->else_s;
            if ((rc = compile(cp, k, sub, dst)))
                return rc;
        } else if (!is_annotation(n)) {
            return bad(cp, where, "unsupported schema keyword '%s'", n);
        }
    }
    if ((s->then_s || s->else_s) && !s->if_s)
        return bad(cp, where, "%s", "'then'/'else' without 'if'");
    if (s->types) {
        rs_buf want = RS_BUF_INIT;
        int rc = 0;
        for (size_t i = 0; !rc && i < sizeof type_names / sizeof type_names[0]; i++)
            if (s->types & type_names[i].bit)
                rc = rs_buf_addf(&want, "%s%s", want.len ? " or " : "", type_names[i].name);
        if (rc || !(s->types_text = rs_buf_detach(&want, NULL))) {
            rs_buf_release(&want);
            return rs_err_set(cp->err, -ENOMEM, "out of memory");
        }
    }
    return 0;
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
    (void)rs_fmt(sub, sizeof sub, "%s.%s", where, key);
    return compile(cp, v, sub, out);
}

/* Keys an events[] or dynamic_event_patterns[] entry may have: a misspelt "singleton" must
 * not silently turn a singleton into an ordinary event. */
static const char *entry_keys[] = {
    "event_type",
    "category",
    "singleton",
    "producer",
    "content_schema",
    "metadata_schema",
    "content_description",
    "metadata_description",
    "storage_semantics",
    "description",
    "notes",
    "pattern",
    "known_tags",
    "event_type_schema",
    "tag_schema",
    NULL,
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

/* The contract's events: each type once, with its category, singleton flag and schemas. */
static int load_events(compiler *cp, const cJSON *doc)
{
    rs_contract *c = cp->c;
    rs_err *err = cp->err;
    char where[128];
    int rc;
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "events");
    if (!cJSON_IsArray(events) || !events->child)
        return rs_err_set(err, -EINVAL, "contract: 'events' must be a non-empty array");
    size_t n = (size_t)cJSON_GetArraySize(events);
    c->events = calloc(n, sizeof *c->events);
    if (!c->events)
        return rs_err_set(err, -ENOMEM, "out of memory");
    for (const cJSON *e = events->child; e; e = e->next) {
        ev_def *d = &c->events[c->n_events];
        (void)rs_fmt(where, sizeof where, "events[%zu]", c->n_events);
        if (!cJSON_IsObject(e))
            return bad(cp, where, "%s", "not an object");
        if ((rc = check_entry_keys(cp, e, where, 0)))
            return rc;
        if ((rc = req_string(cp, e, "event_type", where, RS_EVENT_TYPE_MAX, &d->event_type)) ||
            (rc = req_string(cp, e, "category", where, RS_CATEGORY_MAX, &d->category)))
            return rc;
        (void)rs_fmt(where, sizeof where, "events[%zu] (%s)", c->n_events, d->event_type);
        if (find_event(c, d->event_type))
            return bad(cp, where, "%s", "duplicate event_type");
        const cJSON *sg = cJSON_GetObjectItemCaseSensitive(e, "singleton");
        if (sg && !cJSON_IsBool(sg))
            return bad(cp, where, "%s", "'singleton' must be a boolean");
        d->singleton = cJSON_IsTrue(sg);
        (void)rs_fmt(where, sizeof where, "%s", d->event_type);
        if ((rc = req_schema(cp, e, "content_schema", where, &d->content)) ||
            (rc = req_schema(cp, e, "metadata_schema", where, &d->metadata)))
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
    return 0;
}

/* legacy_event_aliases: old names DeerFlow still writes, each for an event of the contract. */
static int load_aliases(compiler *cp, const cJSON *doc)
{
    rs_contract *c = cp->c;
    rs_err *err = cp->err;
    char where[128];
    int rc;
    const cJSON *aliases = cJSON_GetObjectItemCaseSensitive(doc, "legacy_event_aliases");
    if (!aliases)
        return 0;
    if (!cJSON_IsArray(aliases))
        return rs_err_set(err, -EINVAL, "contract: 'legacy_event_aliases' must be an array");
    size_t n = (size_t)cJSON_GetArraySize(aliases);
    c->aliases = calloc(n ? n : 1, sizeof *c->aliases);
    if (!c->aliases)
        return rs_err_set(err, -ENOMEM, "out of memory");
    for (const cJSON *a = aliases->child; a; a = a->next) {
        alias_def *d = &c->aliases[c->n_aliases];
        const char *canon = NULL;
        (void)rs_fmt(where, sizeof where, "legacy_event_aliases[%zu]", c->n_aliases);
        if (!cJSON_IsObject(a))
            return bad(cp, where, "%s", "not an object");
        if ((rc = req_string(cp, a, "event_type", where, RS_EVENT_TYPE_MAX, &d->event_type)) ||
            (rc = req_string(cp, a, "canonical_event_type", where, 0, &canon)))
            return rc;
        if (!(d->canon = find_event(c, canon)))
            return bad(cp, where, "canonical_event_type '%s' is not an event", canon);
        if (find_event(c, d->event_type))
            return bad(cp, where, "alias '%s' is also an event", d->event_type);
        c->n_aliases++;
    }
    return 0;
}

/* dynamic_event_patterns: families of types named by a prefix and a {tag}. */
static int load_patterns(compiler *cp, const cJSON *doc)
{
    rs_contract *c = cp->c;
    rs_err *err = cp->err;
    char where[128];
    int rc;
    const cJSON *pats = cJSON_GetObjectItemCaseSensitive(doc, "dynamic_event_patterns");
    if (!pats)
        return 0;
    if (!cJSON_IsArray(pats))
        return rs_err_set(err, -EINVAL, "contract: 'dynamic_event_patterns' must be an array");
    size_t n = (size_t)cJSON_GetArraySize(pats);
    c->patterns = calloc(n ? n : 1, sizeof *c->patterns);
    if (!c->patterns)
        return rs_err_set(err, -ENOMEM, "out of memory");
    for (const cJSON *p = pats->child; p; p = p->next) {
        pattern_def *d = &c->patterns[c->n_patterns];
        const char *pat = NULL;
        (void)rs_fmt(where, sizeof where, "dynamic_event_patterns[%zu]", c->n_patterns);
        if (!cJSON_IsObject(p))
            return bad(cp, where, "%s", "not an object");
        if ((rc = check_entry_keys(cp, p, where, 1)))
            return rc;
        if ((rc = req_string(cp, p, "pattern", where, 0, &pat)) ||
            (rc = req_string(cp, p, "category", where, RS_CATEGORY_MAX, &d->category)))
            return rc;
        size_t pl = strlen(pat);
        if (pl < 6 || strcmp(pat + pl - 5, "{tag}") || memchr(pat, '{', pl - 5))
            return bad(cp, where, "pattern '%s' must be a prefix followed by {tag}", pat);
        d->prefix = pat;
        d->prefix_len = pl - 5;
        (void)rs_fmt(where, sizeof where, "%s", pat);
        if ((rc = req_schema(cp, p, "content_schema", where, &d->content)) ||
            (rc = req_schema(cp, p, "metadata_schema", where, &d->metadata)))
            return rc;
        char sub[160];
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(p, "tag_schema");
        (void)rs_fmt(sub, sizeof sub, "%s.tag_schema", where);
        if (ts && (rc = compile(cp, ts, sub, &d->tag_s)))
            return rc;
        ts = cJSON_GetObjectItemCaseSensitive(p, "event_type_schema");
        (void)rs_fmt(sub, sizeof sub, "%s.event_type_schema", where);
        if (ts && (rc = compile(cp, ts, sub, &d->type_s)))
            return rc;
        d->meta_required = meta_required(p);
        c->n_patterns++;
    }
    return 0;
}

static int load_doc(rs_contract *c, rs_err *err)
{
    compiler cp = {c, err};
    const cJSON *doc = c->doc;
    if (!cJSON_IsObject(doc))
        return rs_err_set(err, -EINVAL, "contract: not a JSON object");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
    if (version && !(cJSON_IsNumber(version) && version->valuedouble == 1))
        return rs_err_set(err, -EINVAL, "contract: unsupported version (runfs reads version 1)");
    int rc;
    if ((rc = load_events(&cp, doc)) || (rc = load_aliases(&cp, doc)))
        return rc;
    return load_patterns(&cp, doc);
}

/* Takes the text (detached from a buffer) whatever happens. */
static int contract_from_text(rs_contract **out, const char *name, char *text, size_t len,
                              rs_err *err)
{
    rs_contract *c = calloc(1, sizeof *c);
    if (!c) {
        free(text);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    c->text = text;
    c->text_len = len;
    c->doc = rs_cjson_parse(c->text, c->text_len);
    if (!c->doc) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= c->text && at <= c->text + c->text_len ? (long)(at - c->text) : -1;
        rs_contract_free(c);
        return rs_err_set(err, -EINVAL, "contract %s: not valid JSON (near byte %ld)", name, off);
    }
    int rc = load_doc(c, err);
    if (rc) {
        rs_contract_free(c);
        return rc;
    }
    *out = c;
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
    size_t len;
    char *text = rs_buf_detach(&b, &len);
    if (!text)
        return rs_err_set(err, -ENOMEM, "out of memory");
    return contract_from_text(out, path, text, len, err);
}

int rs_contract_load_text(rs_contract **out, const char *name, const char *text, size_t len,
                          rs_err *err)
{
    *out = NULL;
    char *copy = malloc(len + 1);
    if (!copy)
        return rs_err_set(err, -ENOMEM, "out of memory");
    memcpy(copy, text, len);
    copy[len] = '\0';
    return contract_from_text(out, name, copy, len, err);
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
        for (size_t i = 0; i < s->n_props; i++)
            free(s->props[i].canon.text);
        for (size_t i = 0; i < s->n_required; i++)
            free(s->required[i].canon.text);
        for (size_t i = 0; i < s->n_enum; i++)
            free(s->enum_v[i].text);
        if (s->const_v)
            free(s->const_v->text);
        free(s->const_v);
        free(s->const_text);
        free(s->enum_v);
        free(s->enum_text);
        free(s->types_text);
        free(s->required);
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

void rs_contract_rule(const rs_contract *c, const char *event_type, rs_rule *out)
{
    memset(out, 0, sizeof *out);
    const ev_def *d = c && event_type ? find_event(c, event_type) : NULL;
    if (d) {
        out->known = 1;
        out->content = d->content;
        out->metadata = d->metadata;
        return;
    }
    if (c && event_type)
        for (size_t i = 0; i < c->n_aliases; i++)
            if (!strcmp(c->aliases[i].event_type, event_type)) {
                out->known = 1; /* read-only alias: recognised, not checked */
                return;
            }
    const pattern_def *p = c && event_type ? find_pattern(c, event_type) : NULL;
    if (p) {
        out->known = 1;
        out->content = p->content;
        out->metadata = p->metadata;
        out->type_s = p->type_s;
        out->tag_s = p->tag_s;
        out->prefix_len = p->prefix_len;
    }
}

static int check_name(const schema *s, const char *name, const char *root, rs_err *err)
{
    if (!s)
        return 0;
    rs_buf lit = RS_BUF_INIT;
    rs_check k;
    rs_check_init(&k, s, root);
    int rc = rs_buf_add_json_string(&lit, name, strlen(name));
    if (!rc)
        rc = rs_check_text(&k, lit.buf, lit.len, err);
    if (!rc)
        rc = rs_check_schema(&k, err);
    rs_check_release(&k);
    rs_buf_release(&lit);
    return rc;
}

int rs_contract_check_name(const rs_rule *r, const char *event_type, rs_err *err)
{
    int rc = check_name(r->type_s, event_type, "event_type", err);
    return rc ? rc : check_name(r->tag_s, event_type + r->prefix_len, "event_type tag", err);
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
