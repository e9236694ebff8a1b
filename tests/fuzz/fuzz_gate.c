/* fuzz_gate.c — differential libFuzzer target: the one-pass gate (rs_event_parse, whose
 * scanner checks the contract while it writes canonical bytes) against the tree gate it
 * replaced (canonical text, cJSON trees, the tree checker), which lives on only here.
 *
 * Every input is one line, tried under four contexts (the shipped contract on a run's
 * events.jsonl; once/run.terminal with no thread in the path; a contract using every
 * schema keyword, with unknown types allowed; a DeerFlow import line, contract unchecked). Property: both gates accept the same lines,
 * giving the same event, and refuse the rest with the same errno and the same reason.
 * Build and run: scripts/fuzz. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contract_int.h"
#include "event.h"
#include "json.h"
#include "rs_util.h"

#ifndef RS_CONTRACT_SOURCE
#define RS_CONTRACT_SOURCE "contracts/run_event_stream_contract.json"
#endif

/* Every keyword the schema subset has, nested, for types the fuzzer's lines name. */
static const char rich_contract[] =
    "{\"events\":["
    "{\"event_type\":\"llm.ai.response\",\"category\":\"message\",\"content_schema\":"
    "{\"type\":[\"object\",\"string\"],\"required\":[\"type\"],\"properties\":{\"type\":"
    "{\"enum\":[\"ai\",1,[1,{\"a\":null}],{\"x\":[true]},2.5e0]},\"content\":{\"type\":\"string\","
    "\"minLength\":1,\"maxLength\":40,\"pattern\":\"^[a-z ]*$\"},\"tool_calls\":{\"type\":\"array\","
    "\"items\":{\"type\":\"object\",\"required\":[\"name\"],\"properties\":{\"name\":{\"const\":"
    "\"ls\"}},\"additionalProperties\":{\"type\":[\"integer\",\"null\"],\"minimum\":-3,"
    "\"maximum\":1e3}}},\"no\":false,\"any\":true},\"allOf\":[{\"if\":{\"properties\":{\"type\":"
    "{\"const\":\"ai\"}}},\"then\":{\"required\":[\"tool_calls\"]},\"else\":{\"properties\":"
    "{\"content\":{\"const\":{\"k\":[1,2]}}}}},{\"if\":{\"required\":[\"id\"]},\"then\":"
    "{\"properties\":{\"id\":{\"type\":\"string\",\"minLength\":3}}}}],\"additionalProperties\":"
    "{\"type\":[\"string\",\"number\",\"boolean\",\"array\",\"object\"]}},\"metadata_schema\":"
    "{\"type\":\"object\",\"properties\":{\"caller\":{\"type\":\"string\",\"pattern\":\"^(lead|sub)\"},"
    "\"n\":{\"type\":\"integer\",\"minimum\":0}},\"additionalProperties\":false}},"
    "{\"event_type\":\"run.terminal\",\"category\":\"trace\",\"singleton\":true,\"content_schema\":"
    "{\"type\":\"object\",\"required\":[\"status\"],\"properties\":{\"status\":{\"enum\":"
    "[\"success\",\"error\"]}}},\"metadata_schema\":{\"required\":[\"protocol_version\"],"
    "\"properties\":{\"protocol_version\":{\"const\":1}}}}],"
    "\"legacy_event_aliases\":[{\"event_type\":\"ai_message\",\"canonical_event_type\":"
    "\"llm.ai.response\"}],"
    "\"dynamic_event_patterns\":[{\"pattern\":\"middleware:{tag}\",\"category\":\"middleware\","
    "\"tag_schema\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":21},\"event_type_schema\":"
    "{\"pattern\":\"^middleware:[a-z]\"},\"content_schema\":{\"type\":\"object\"},"
    "\"metadata_schema\":true}]}";

static rs_contract *shipped, *rich;

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "fuzz_gate: property violated: %s\n  ", #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            abort(); \
        } \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rs_err err = {0};
    char path[] = "/tmp/fuzz_gate_contract.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 ||
        write(fd, rich_contract, sizeof rich_contract - 1) != (ssize_t)(sizeof rich_contract - 1)) {
        fprintf(stderr, "fuzz_gate: cannot write the test contract\n");
        exit(2);
    }
    close(fd);
    int rc = rs_contract_load(&rich, path, &err);
    unlink(path);
    if (rc || rs_contract_load(&shipped, RS_CONTRACT_SOURCE, &err)) {
        fprintf(stderr, "fuzz_gate: contract: %s\n", err.msg);
        exit(2);
    }
    return 0;
}

/* ---- the tree gate, as it was ----------------------------------------------------------- */

typedef struct checker {
    rs_err *err;
    int quiet; /* inside "if": no reason wanted */
    char path[512];
    size_t path_len;
} checker;

static const char *kind_name(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsObject(v))
        return "object";
    if (cJSON_IsArray(v))
        return "array";
    if (cJSON_IsBool(v))
        return "boolean";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsNumber(v))
        return "number";
    return "invalid";
}

static int type_ok(unsigned types, const cJSON *v)
{
    if ((types & RS_T_STRING) && cJSON_IsString(v))
        return 1;
    if ((types & RS_T_OBJECT) && cJSON_IsObject(v))
        return 1;
    if ((types & RS_T_ARRAY) && cJSON_IsArray(v))
        return 1;
    if ((types & RS_T_NUMBER) && cJSON_IsNumber(v))
        return 1;
    if ((types & RS_T_INTEGER) && cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
        v->valuedouble == floor(v->valuedouble))
        return 1;
    if ((types & RS_T_BOOLEAN) && cJSON_IsBool(v))
        return 1;
    if ((types & RS_T_NULL) && cJSON_IsNull(v))
        return 1;
    return 0;
}

#define CHECK_FAIL(ck, ...) ((ck)->quiet ? -EINVAL : rs_err_set((ck)->err, -EINVAL, __VA_ARGS__))

static int equal_lit(const rs_lit *l, const cJSON *v)
{
    cJSON *t = cJSON_ParseWithLength(l->text, l->len);
    int eq = t && cJSON_Compare(t, v, 1);
    cJSON_Delete(t);
    return eq;
}

static int check(checker *ck, const rs_schema *s, const cJSON *v);

static void path_add(checker *ck, const char *text, size_t n)
{
    size_t room = sizeof ck->path - ck->path_len - 1;
    if (n > room)
        n = room;
    memcpy(ck->path + ck->path_len, text, n);
    ck->path_len += n;
    ck->path[ck->path_len] = '\0';
}

static int check_sub(checker *ck, const rs_schema *s, const cJSON *v, const char *key, size_t index)
{
    size_t saved = ck->path_len;
    char seg[32];
    if (key) {
        path_add(ck, ".", 1);
        path_add(ck, key, strlen(key));
    } else
        path_add(ck, seg, (size_t)snprintf(seg, sizeof seg, "[%zu]", index));
    int rc = check(ck, s, v);
    ck->path_len = saved;
    ck->path[saved] = '\0';
    return rc;
}

static int check(checker *ck, const rs_schema *s, const cJSON *v)
{
    const char *path = ck->path;
    int rc;
    if (s->always == 1)
        return 0;
    if (s->always == -1)
        return CHECK_FAIL(ck, "%s: no value is allowed here", path);
    if (s->types && !type_ok(s->types, v))
        return CHECK_FAIL(ck, "%s: expected %s, got %s", path, s->types_text, kind_name(v));
    if (s->const_v && !equal_lit(s->const_v, v))
        return CHECK_FAIL(ck, "%s: must equal %s", path, s->const_text);
    if (s->n_enum) {
        int found = 0;
        for (size_t e = 0; e < s->n_enum && !found; e++)
            found = equal_lit(&s->enum_v[e], v);
        if (!found)
            return CHECK_FAIL(ck, "%s: must be one of %s", path, s->enum_text);
    }
    if (cJSON_IsNumber(v)) {
        if (s->has_min && !(v->valuedouble >= s->minimum))
            return CHECK_FAIL(ck, "%s: must be >= %g", path, s->minimum);
        if (s->has_max && !(v->valuedouble <= s->maximum))
            return CHECK_FAIL(ck, "%s: must be <= %g", path, s->maximum);
    }
    if (cJSON_IsString(v)) {
        if (s->min_len >= 0 || s->max_len >= 0) {
            size_t n = 0;
            for (const unsigned char *p = (const unsigned char *)v->valuestring; *p; p++)
                n += (*p & 0xc0) != 0x80;
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
    if (cJSON_IsObject(v)) {
        for (size_t r = 0; r < s->n_required; r++)
            if (!cJSON_GetObjectItemCaseSensitive(v, s->required[r].name))
                return CHECK_FAIL(ck, "%s: missing required field '%s'", path, s->required[r].name);
        if (s->n_props || s->addl_false || s->addl) {
            for (const cJSON *m = v->child; m; m = m->next) {
                const rs_schema *ps = NULL;
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
                if (ps && (rc = check_sub(ck, ps, m, m->string, 0)))
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
        const rs_schema *branch = cond ? s->then_s : s->else_s;
        if (branch && (rc = check(ck, branch, v)))
            return rc;
    }
    return 0;
}

static int run_check(const rs_schema *s, const cJSON *v, const char *root, rs_err *err)
{
    if (!s)
        return 0;
    checker ck = {.err = err};
    ck.path_len = (size_t)snprintf(ck.path, sizeof ck.path, "%s", root);
    return check(&ck, s, v);
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int no_duplicates(const cJSON *v, const char *root, rs_err *err)
{
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return 0;
    size_t n = 0;
    int rc;
    for (const cJSON *c = v->child; c; c = c->next) {
        n++;
        if ((rc = no_duplicates(c, root, err)))
            return rc;
    }
    if (!cJSON_IsObject(v) || n < 2)
        return 0;
    if (n <= 16) {
        for (const cJSON *a = v->child; a; a = a->next)
            for (const cJSON *b = a->next; b; b = b->next)
                if (!strcmp(a->string, b->string))
                    return rs_err_set(err, -EINVAL, "%s: duplicate field '%.64s'", root, a->string);
        return 0;
    }
    const char **keys = malloc(n * sizeof *keys);
    CHECK(keys, "out of memory");
    size_t i = 0;
    for (const cJSON *c = v->child; c; c = c->next)
        keys[i++] = c->string;
    qsort(keys, n, sizeof *keys, cmp_keys);
    rc = 0;
    for (i = 1; i < n && !rc; i++)
        if (!strcmp(keys[i - 1], keys[i]))
            rc = rs_err_set(err, -EINVAL, "%s: duplicate field '%.64s'", root, keys[i]);
    free(keys);
    return rc;
}

static int parse_tree(cJSON **out, const char *v, size_t n, const char *root, rs_err *err)
{
    *out = cJSON_ParseWithLength(v, n);
    if (!*out)
        return rs_err_set(err, -EINVAL,
                          "%s: the JSON parser refused it (a number over 63 characters?)", root);
    return no_duplicates(*out, root, err);
}

typedef struct walk {
    rs_event_fields *f;
    int import;
    rs_err *err;
} walk;

static int on_member(void *ctx, const char *key, size_t kl, const char *val, size_t vl)
{
    walk *w = ctx;
    int i = rs_event_member(w->f, key, kl, w->import, w->err);
    if (i < 0)
        return i;
    w->f->val[i] = val;
    w->f->len[i] = vl;
    return 0;
}

static int on_meta_member(void *ctx, const char *key, size_t kl, const char *val, size_t vl)
{
    rs_event_fields *f = ctx;
    (void)val;
    (void)vl;
    if ((kl == 15 && !memcmp(key, "content_is_json", 15)) ||
        (kl == 15 && !memcmp(key, "content_is_dict", 15))) {
        f->marker = key;
        f->marker_len = kl;
        return 1;
    }
    return 0;
}

static int check_name(const rs_schema *s, const char *name, const char *root, rs_err *err)
{
    if (!s)
        return 0;
    cJSON *v = cJSON_CreateString(name);
    CHECK(v, "out of memory");
    int rc = run_check(s, v, root, err);
    cJSON_Delete(v);
    return rc;
}

/* The old rs_event_parse: 0 with ev filled, or the refusal. */
static int tree_gate(rs_event *ev, rs_buf *content, rs_buf *metadata, const char *line, size_t len,
                     const rs_event_ctx *ctx, rs_err *err)
{
    size_t max = ctx->max_bytes ? ctx->max_bytes : RS_DEFAULT_MAX_EVENT;
    if (len > max)
        return rs_err_set(err, -EMSGSIZE, "event is %zu bytes, over the %zu-byte limit", len, max);
    rs_buf canon = RS_BUF_INIT;
    rs_event_fields f;
    memset(&f, 0, sizeof f);
    cJSON *ct = NULL, *mt = NULL;
    int rc = rs_json_canon(&canon, line, len, 0, err);
    if (rc)
        goto done;
    if (canon.buf[0] != '{') {
        rc = rs_err_set(err, -EINVAL, "event is not a JSON object (got %s)",
                        rs_json_kind(canon.buf));
        goto done;
    }
    walk w = {&f, ctx->import, err};
    if ((rc = rs_json_members(canon.buf, canon.len, on_member, &w)))
        goto done;
    if (f.val[RS_F_METADATA] && f.val[RS_F_METADATA][0] == '{')
        rs_json_members(f.val[RS_F_METADATA], f.len[RS_F_METADATA], on_meta_member, &f);
    if ((rc = rs_event_envelope(ev, &f, ctx, err)))
        goto done;
    const char *cv = f.val[RS_F_CONTENT] ? f.val[RS_F_CONTENT] : "\"\"";
    size_t cl = f.val[RS_F_CONTENT] ? f.len[RS_F_CONTENT] : 2;
    const char *mv = f.val[RS_F_METADATA] ? f.val[RS_F_METADATA] : "{}";
    size_t ml = f.val[RS_F_METADATA] ? f.len[RS_F_METADATA] : 2;
    if ((rc = parse_tree(&ct, cv, cl, "content", err)) ||
        (rc = parse_tree(&mt, mv, ml, "metadata", err)))
        goto done;
    rs_rule r;
    rs_contract_rule(ctx->contract, ev->event_type, &r);
    if (ctx->import && !ctx->strict)
        goto bytes; /* history is stored as it happened: no contract */
    if (!r.known && !ctx->allow_unknown) {
        rc = rs_err_set(err, -EINVAL, "unknown event type '%.64s' (not in the contract)",
                        ev->event_type);
        goto done;
    }
    if ((rc = check_name(r.type_s, ev->event_type, "event_type", err)) ||
        (rc = check_name(r.tag_s, ev->event_type + r.prefix_len, "event_type tag", err)) ||
        (rc = run_check(r.content, ct, "content", err)) ||
        (rc = run_check(r.metadata, mt, "metadata", err)))
        goto done;
bytes:
    CHECK(!rs_buf_add(content, cv, cl) && !rs_buf_add(metadata, mv, ml), "out of memory");
done:
    cJSON_Delete(ct);
    cJSON_Delete(mt);
    rs_buf_release(&canon);
    if (rc && err)
        for (char *p = err->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
    return rc;
}

/* ---- the property ----------------------------------------------------------------------- */

static void compare(const char *line, size_t len, const rs_event_ctx *ctx, const char *label)
{
    rs_err e1 = {0}, e2 = {0};
    rs_event *ev = NULL;
    int r1 = rs_event_parse(&ev, line, len, ctx, &e1);
    rs_event old;
    memset(&old, 0, sizeof old);
    rs_buf content = RS_BUF_INIT, metadata = RS_BUF_INIT;
    int r2 = tree_gate(&old, &content, &metadata, line, len, ctx, &e2);
    int n = len > 300 ? 300 : (int)len;
    CHECK(r1 == r2, "%s: one-pass %d '%s', tree %d '%s' for %.*s", label, r1, e1.msg, r2, e2.msg, n,
          line);
    if (r1) {
        CHECK(!strcmp(e1.msg, e2.msg), "%s: reasons differ: one-pass '%s', tree '%s' for %.*s",
              label, e1.msg, e2.msg, n, line);
    } else {
        CHECK(!strcmp(ev->event_type, old.event_type) && !strcmp(ev->category, old.category) &&
                  !strcmp(ev->thread_id, old.thread_id) && !strcmp(ev->run_id, old.run_id) &&
                  !strcmp(ev->idem_key, old.idem_key) && ev->seq == old.seq,
              "%s: envelopes differ for %.*s", label, n, line);
        CHECK(ev->content.len == content.len && !memcmp(ev->content.buf, content.buf, content.len),
              "%s: content differs for %.*s", label, n, line);
        CHECK(ev->metadata.len == metadata.len &&
                  !memcmp(ev->metadata.buf, metadata.buf, metadata.len),
              "%s: metadata differs for %.*s", label, n, line);
    }
    rs_event_free(ev);
    rs_buf_release(&content);
    rs_buf_release(&metadata);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *line = (const char *)data;
    rs_event_ctx run = {.contract = shipped, .thread_id = "t1", .run_id = "r1", .max_bytes = 4096};
    rs_event_ctx once = {.contract = shipped, .run_id = "r1", .event_type = "run.terminal"};
    rs_event_ctx open = {.contract = rich, .thread_id = "t1", .run_id = "r1", .allow_unknown = 1};
    compare(line, size, &run, "events.jsonl");
    compare(line, size, &once, "once/run.terminal");
    rs_event_ctx import = {.contract = shipped, .thread_id = "t1", .run_id = "r1", .import = 1};
    compare(line, size, &open, "rich contract");
    compare(line, size, &import, "import");
    return 0;
}
