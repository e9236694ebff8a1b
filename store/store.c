/* store.c — the public store API: validation in front, a backend behind.
 *
 * Everything that enters the store passes rs_event_parse here; the backend only ever sees
 * validated events. Decisions that do not depend on storage (singleton equality, message
 * identity) live here too, so every backend answers alike. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "contract.h"
#include "event.h"
#include "json.h"
#include "policy.h"
#include "rowview.h"
#include "runstore.h"
#include "rs_util.h"
#include "store_int.h"

/* The bytes of rs_options a caller built against the given version holds: an older
 * caller's struct ends before the fields added since. */
static size_t options_size(unsigned int version)
{
    if (version == 1)
        return offsetof(rs_options, busy_notice);
    if (version == 2)
        return offsetof(rs_options, owners_apart);
    if (version == 3)
        return offsetof(rs_options, pin_file);
    if (version == 4)
        return offsetof(rs_options, progress);
    if (version == 5)
        return offsetof(rs_options, seal_key);
    if (version == 6)
        return offsetof(rs_options, notice);
    if (version == 7)
        return offsetof(rs_options, cache_kib);
    return sizeof(rs_options);
}

static int is_pg_uri(const char *uri)
{
    return strncmp(uri, "postgresql://", 13) == 0 || strncmp(uri, "postgres://", 11) == 0;
}

static int backend_of(const char *uri, const rs_backend_ops **ops, rs_err *err)
{
    if (!is_pg_uri(uri)) {
        *ops = &rs_sqlite_backend;
        return 0;
    }
    return rs_pg_load(ops, err);
}

char *rs_uri_display(const char *uri)
{
    const rs_backend_ops *ops;
    if (backend_of(uri, &ops, NULL))
        /* Without libpq's parse no secret can be told apart: the scheme alone is shown (the
         * open that follows says why the backend is missing). */
        return strndup(uri, (size_t)(strchr(uri, ':') - uri) + 3);
    return ops->uri_display(uri);
}

int rs_library_versions(rs_buf *out)
{
    const rs_backend_ops *pg;
    int rc = rs_sqlite_backend.library_version(out);
    if (!rc)
        rc = rs_buf_addstr(out, ", ");
    if (!rc && rs_pg_load(&pg, NULL))
        return rs_buf_addstr(out, "no PostgreSQL backend (" RS_PG_MODULE " not loaded)");
    return rc ? rc : pg->library_version(out);
}

int rs_store_open(rs_store **out, const char *uri, const rs_options *opt, rs_err *err)
{
    rs_options defaults = RS_OPTIONS_INIT;
    if (!opt)
        opt = &defaults;
    if (opt->version < 1 || opt->version > RS_OPTIONS_VERSION)
        return rs_err_set(err, -EINVAL,
                          "rs_options version %u is not %d (start from "
                          "RS_OPTIONS_INIT)",
                          opt->version, RS_OPTIONS_VERSION);
    rs_store *s = calloc(1, sizeof *s);
    if (!s)
        return rs_err_set(err, -ENOMEM, "out of memory");
    s->opt = (rs_options)RS_OPTIONS_INIT;
    memcpy(&s->opt, opt, options_size(opt->version));
    s->opt.version = RS_OPTIONS_VERSION;
    if (!s->opt.max_event_bytes)
        s->opt.max_event_bytes = RS_DEFAULT_MAX_EVENT;
    int rc = backend_of(uri, &s->ops, err);
    if (rc)
        goto fail;
    rc = -ENOMEM;
    /* A URI is shown (status.json, messages) without its password. */
    if (!(s->path = s->ops->uri_display(uri)) || !(s->name = s->ops->uri_name(uri)))
        goto fail;
    if (!(s->terms = calloc(1, sizeof *s->terms)))
        goto fail;
    /* A file named is loaded now: a bad one fails the open, as it always did. */
    const rs_terms *terms;
    if (opt->contract_path && (rc = rs_store_terms(s, &terms, err)))
        goto fail;
    if ((rc = s->ops->open(&s->be, uri, &s->opt, &rs_policy_shared, err)))
        goto fail;
    *out = s;
    return 0;
fail:
    if (s->terms)
        rs_contract_free(s->terms->contract);
    free(s->terms);
    free(s->path);
    free(s->name);
    free(s);
    return rc;
}

void rs_store_close(rs_store *s)
{
    if (!s)
        return;
    s->ops->close(s->be);
    rs_contract_free(s->terms->contract);
    free(s->terms);
    free(s->path);
    free(s->name);
    free(s);
}

const char *rs_store_backend(const rs_store *s)
{
    return s->ops->name;
}

const char *rs_store_path(const rs_store *s)
{
    return s->path;
}

const char *rs_store_name(const rs_store *s)
{
    return s->name;
}

size_t rs_store_max_event(const rs_store *s)
{
    return s->opt.max_event_bytes;
}

int rs_store_terms(const rs_store *s, const rs_terms **out, rs_err *err)
{
    rs_terms *t = s->terms;
    *out = t;
    if (t->contract)
        return 0;
    const char *path = s->opt.contract_path ? s->opt.contract_path : RS_CONTRACT_DEFAULT;
    int rc = rs_contract_load(&t->contract, path, err);
    if (rc == -ENOENT && !s->opt.contract_path) {
        /* Not installed: the copy built in, and then the miss is no error to report. */
        rc = rs_contract_load_text(&t->contract, "(built in)", rs_contract_shipped_text,
                                   strlen(rs_contract_shipped_text), err);
        if (!rc && err)
            *err = (rs_err){0};
    }
    if (rc) {
        t->contract = NULL;
        return rc;
    }
    t->n_singletons = rs_contract_singletons(t->contract, &t->singletons);
    return 0;
}

const char *rs_store_contract_text(const rs_store *s, size_t *len)
{
    const rs_terms *t;
    if (rs_store_terms(s, &t, NULL)) {
        *len = 0;
        return "";
    }
    return rs_contract_text(t->contract, len);
}

int rs_store_refresh(rs_store *s, rs_err *err)
{
    return s->opt.read_only ? 0 : s->ops->refresh(s->be, err);
}

int rs_store_data_version(rs_store *s, int64_t *version)
{
    return s->ops->data_version(s->be, version);
}

int rs_store_foreign_version(rs_store *s, int64_t *version)
{
    return s->ops->foreign_version ? s->ops->foreign_version(s->be, version)
                                   : s->ops->data_version(s->be, version);
}

int rs_store_rewrites(rs_store *s, int64_t *n)
{
    return s->ops->rewrites(s->be, n);
}

int rs_store_thread_rewrites(rs_store *s, const char *thread_id, int64_t *n)
{
    return s->ops->thread_rewrites(s->be, thread_id, n);
}

int rs_store_rows_version(rs_store *s, int64_t *version)
{
    int64_t v[2] = {0, 0};
    int rc = s->ops->rows_added(s->be, &v[0]);
    if (!rc)
        rc = s->ops->rewrites(s->be, &v[1]);
    if (!rc)
        *version = (int64_t)(rs_hash(RS_HASH_INIT, v, sizeof v) >> 1);
    return rc;
}

void rs_store_one_look(rs_store *s, int on)
{
    if (s->ops->one_look)
        s->ops->one_look(s->be, on);
}

void rs_store_set_wait(rs_store *s, int wait)
{
    if (s->ops->set_wait)
        s->ops->set_wait(s->be, wait);
}

static int check_target(const rs_target *t, int need_run, rs_err *err)
{
    if (!rs_id_valid(t->thread_id))
        return rs_err_set(err, -EINVAL, "invalid thread id '%.80s': use 1-64 of [A-Za-z0-9_-]",
                          t->thread_id ? t->thread_id : "");
    if (need_run && !rs_id_valid(t->run_id))
        return rs_err_set(err, -EINVAL, "invalid run id '%.80s': use 1-64 of [A-Za-z0-9_-]",
                          t->run_id ? t->run_id : "");
    return 0;
}

static int check_writable(rs_store *s, rs_err *err)
{
    return s->opt.read_only ? rs_err_set(err, -EROFS, "the store is mounted read-only") : 0;
}

/* ---- writing ---------------------------------------------------------------------------- */

static int parse_one(rs_store *s, const rs_target *t, const char *event_type, const char *line,
                     size_t len, rs_event **out, rs_err *err)
{
    const rs_terms *terms;
    int rc = rs_store_terms(s, &terms, err);
    if (rc)
        return rc;
    rs_event_ctx ctx = {
        .contract = terms->contract,
        .thread_id = t->thread_id,
        .run_id = t->run_id,
        .event_type = event_type,
        .allow_unknown = s->opt.allow_unknown_events,
        .stamp_time = s->opt.stamp_time,
        .max_bytes = s->opt.max_event_bytes,
    };
    return rs_event_parse(out, line, len, &ctx, err);
}

int rs_store_append(rs_store *s, const rs_target *t, const char *buf, size_t len, rs_buf *stored,
                    rs_err *err)
{
    return rs_store_append_at(s, t, buf, len, stored, NULL, err);
}

/* The lines parsed and checked as one batch; stored unless dry. */
static int append_lines(rs_store *s, const rs_target *t, const char *buf, size_t len,
                        rs_buf *stored, rs_placement *at, int dry, rs_err *err)
{
    int rc = dry ? 0 : check_writable(s, err);
    if (rc || (rc = check_target(t, 1, err)))
        return rc;
    rs_event **evs = NULL;
    size_t n = 0, cap = 0;
    long lineno = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        lineno++;
        if (rs_array_grow(&evs, &cap, n + 1, sizeof *evs)) {
            rc = rs_err_set(err, -ENOMEM, "out of memory");
            goto out;
        }
        if ((rc = parse_one(s, t, NULL, buf + pos, end - pos, &evs[n], err))) {
            if (err)
                err->line = lineno;
            goto out;
        }
        if (!dry && rs_contract_is_singleton(s->terms->contract, evs[n]->event_type)) {
            rc = rs_err_set(err, -EINVAL, "%s is a singleton: create it with once/%s",
                            evs[n]->event_type, evs[n]->event_type);
            n++;
            if (err)
                err->line = lineno;
            goto out;
        }
        n++;
        pos = end + 1;
    }
    rc = dry ? 0 : s->ops->put(s->be, t, evs, n, 0, NULL, NULL, stored, at, err);
out:
    for (size_t i = 0; i < n; i++)
        rs_event_free(evs[i]);
    free(evs);
    return rc;
}

int rs_store_line_singleton(const rs_store *s, const char *line, size_t len, rs_buf *type)
{
    /* A contract that cannot be loaded names none: storing the line says why. */
    const rs_terms *t;
    if (rs_store_terms(s, &t, NULL))
        return 0;
    /* Most lines name no singleton anywhere: no scan of their members. */
    size_t i = 0;
    while (i < t->n_singletons && !memmem(line, len, t->singletons[i], strlen(t->singletons[i])))
        i++;
    if (i == t->n_singletons || !rs_view_get_str(line, len, "event_type", type))
        return 0;
    return rs_contract_is_singleton(t->contract, type->buf);
}

int rs_store_append_at(rs_store *s, const rs_target *t, const char *buf, size_t len, rs_buf *stored,
                       rs_placement *at, rs_err *err)
{
    return append_lines(s, t, buf, len, stored, at, 0, err);
}

int rs_store_check_lines(rs_store *s, const rs_target *t, const char *buf, size_t len, rs_err *err)
{
    return append_lines(s, t, buf, len, NULL, NULL, 1, err);
}

static void existing_init(rs_existing *ex)
{
    ex->line = (rs_buf)RS_BUF_INIT;
    ex->category = (rs_buf)RS_BUF_INIT;
    ex->content_db = (rs_buf)RS_BUF_INIT;
    ex->metadata_db = (rs_buf)RS_BUF_INIT;
    ex->seq = 0;
}

static void existing_release(rs_existing *ex)
{
    rs_buf_release(&ex->line);
    rs_buf_release(&ex->category);
    rs_buf_release(&ex->content_db);
    rs_buf_release(&ex->metadata_db);
}

/* DESIGN "Singletons": the same event is equal category and content and equal values for
 * the metadata keys the contract requires, other than recovered. Compared as JSON values,
 * on canonical text: no tree. */
static int singleton_same(const rs_store *s, const rs_event *ev, const rs_existing *ex)
{
    if (strcmp(ev->category, ex->category.buf) != 0)
        return 0;
    rs_buf meta = RS_BUF_INIT, content = RS_BUF_INIT;
    unsigned markers;
    int meta_ok = rs_json_canon(&meta, ex->metadata_db.buf, ex->metadata_db.len, 0, NULL) == 0 &&
                  meta.buf[0] == '{';
    int same = rs_json_markers(ex->metadata_db.buf, ex->metadata_db.len, &markers) == 0;
    if (same &&
        (!markers || rs_json_canon(&content, ex->content_db.buf, ex->content_db.len, 0, NULL))) {
        rs_buf_reset(&content);
        same = rs_buf_add_json_string(&content, ex->content_db.buf, ex->content_db.len) == 0;
    }
    same = same && rs_json_equal(content.buf, content.len, ev->content.buf, ev->content.len);
    /* ev was parsed: the contract is loaded. */
    const cJSON *req = rs_contract_required_metadata(s->terms->contract, ev->event_type);
    const cJSON *key;
    cJSON_ArrayForEach(key, req)
    {
        if (!same)
            break;
        if (!cJSON_IsString(key) || strcmp(key->valuestring, "recovered") == 0)
            continue;
        const char *a, *b;
        size_t al, bl;
        same = meta_ok && rs_view_get(meta.buf, meta.len, key->valuestring, &a, &al) &&
               rs_view_get(ev->metadata.buf, ev->metadata.len, key->valuestring, &b, &bl) &&
               rs_json_equal(a, al, b, bl);
    }
    rs_buf_release(&content);
    rs_buf_release(&meta);
    return same;
}

int rs_store_put_singleton(rs_store *s, const rs_target *t, const char *event_type,
                           const char *body, size_t len, int exclusive, rs_buf *stored, rs_err *err)
{
    int rc = check_writable(s, err);
    if (rc || (rc = check_target(t, 1, err)))
        return rc;
    while (len && (body[len - 1] == '\n' || body[len - 1] == '\r'))
        len--;
    if (memchr(body, '\n', len))
        return rs_err_set(err, -EINVAL, "once/%s takes exactly one event line", event_type);
    rs_event *ev;
    if ((rc = parse_one(s, t, event_type, body, len, &ev, err)))
        return rc;
    rs_existing ex;
    existing_init(&ex);
    int created = 0;
    rc = s->ops->put(s->be, t, &ev, 1, 1, &created, &ex, stored, NULL, err);
    if (!rc && created) {
        rc = RS_CONFIRMED_NEW;
    } else if (!rc) {
        if (exclusive)
            rc = rs_err_set(err, -EEXIST, "once/%s already exists (seq %lld)", event_type,
                            (long long)ex.seq);
        else if (!singleton_same(s, ev, &ex))
            rc = rs_err_set(err, -EEXIST, "once/%s conflicts with the stored event (seq %lld)",
                            event_type, (long long)ex.seq);
        else if (stored && (rc = rs_buf_add(stored, ex.line.buf, ex.line.len)) == 0)
            rc = RS_CONFIRMED_EXISTING;
        else if (!stored)
            rc = RS_CONFIRMED_EXISTING;
    }
    existing_release(&ex);
    rs_event_free(ev);
    return rc;
}

int rs_store_put_if_absent(rs_store *s, const rs_target *t, const char *body, size_t len,
                           rs_buf *stored, int *created, rs_err *err)
{
    int rc = check_writable(s, err);
    if (rc || (rc = check_target(t, 1, err)))
        return rc;
    rs_event *ev;
    if ((rc = parse_one(s, t, NULL, body, len, &ev, err)))
        return rc;
    rs_existing ex;
    existing_init(&ex);
    rc = s->ops->put(s->be, t, &ev, 1, 1, created, &ex, stored, NULL, err);
    if (!rc && !*created && stored)
        rc = rs_buf_add(stored, ex.line.buf, ex.line.len);
    existing_release(&ex);
    rs_event_free(ev);
    return rc;
}

static int check_type_name(const char *event_type, rs_err *err)
{
    size_t n = event_type ? strlen(event_type) : 0;
    if (n < 1 || n > RS_EVENT_TYPE_MAX || strchr(event_type, '/'))
        return rs_err_set(err, -EINVAL, "invalid event type '%.80s'", event_type ? event_type : "");
    return 0;
}

int rs_store_reserve_singleton(rs_store *s, const rs_target *t, const char *event_type, rs_err *err)
{
    int rc = check_writable(s, err);
    if (rc || (rc = check_target(t, 1, err)) || (rc = check_type_name(event_type, err)))
        return rc;
    return rs_once_reserve(s->ops->sql, s->be, t, event_type, err);
}

int rs_store_release_singleton(rs_store *s, const rs_target *t, const char *event_type)
{
    return s->ops->release(s->be, t, event_type);
}

int rs_store_create_thread(rs_store *s, const char *thread_id, const char *user, rs_err *err)
{
    rs_target t = {.thread_id = thread_id, .user = user};
    int rc = check_writable(s, err);
    if (rc || (rc = check_target(&t, 0, err)))
        return rc;
    return s->ops->create(s->be, &t, err);
}

int rs_store_create_run(rs_store *s, const rs_target *t, rs_err *err)
{
    int rc = check_writable(s, err);
    if (rc || (rc = check_target(t, 1, err)))
        return rc;
    return s->ops->create(s->be, t, err);
}

int rs_store_delete_run(rs_store *s, const rs_target *t, int64_t *count, rs_err *err)
{
    int rc = check_writable(s, err);
    if (rc || (rc = check_target(t, 1, err)))
        return rc;
    return s->ops->delete (s->be, t, count, err);
}

int rs_store_delete_thread(rs_store *s, const char *thread_id, const char *user, int64_t *count,
                           rs_err *err)
{
    rs_target t = {.thread_id = thread_id, .user = user};
    int rc = check_writable(s, err);
    if (rc || (rc = check_target(&t, 0, err)))
        return rc;
    return s->ops->delete (s->be, &t, count, err);
}

/* ---- reading ---------------------------------------------------------------------------- */

int rs_cursor_next(rs_cursor *c, const rs_record **out)
{
    return c->next(c, out);
}

void rs_cursor_free(rs_cursor *c)
{
    if (c)
        c->free(c);
}

int rs_names_next(rs_names *n, const char **name)
{
    return n->next(n, name);
}

int rs_names_times(rs_names *n, int64_t *ctime_ns, int64_t *mtime_ns)
{
    if (!n->timed)
        return 0;
    *ctime_ns = n->ctime_ns;
    *mtime_ns = n->mtime_ns;
    return 1;
}

void rs_names_free(rs_names *n)
{
    if (n)
        n->free(n);
}

int rs_store_query(rs_store *s, const rs_query *q, rs_cursor **out, rs_err *err)
{
    if (q->version < 1 || q->version > RS_QUERY_VERSION)
        return rs_err_set(err, -EINVAL,
                          "rs_query version %u is not %d (start from "
                          "RS_QUERY_INIT)",
                          q->version, RS_QUERY_VERSION);
    rs_target t = {.thread_id = q->thread_id, .run_id = q->run_id};
    int rc = check_target(&t, q->run_id != NULL, err);
    if (rc)
        return rc;
    if (q->limit < 0)
        return rs_err_set(err, -EINVAL, "limit must be at least 1");
    if (q->n_event_types > 64)
        return rs_err_set(err, -EINVAL, "at most 64 event types in one query");
    return s->ops->query(s->be, q, out, err);
}

int rs_store_run_info(rs_store *s, const rs_target *t, rs_log_info *info, rs_err *err)
{
    int rc = rs_store_log_info(s, t->thread_id, t->run_id, t->user, info, err);
    if (rc)
        return rc;
    if (!info->exists)
        return rs_err_set(err, -ENOENT, "no run %s in thread %s", t->run_id, t->thread_id);
    return 0;
}

int rs_store_query_first(rs_store *s, const rs_query *q, rs_cursor **cur, const rs_record **rec,
                         rs_err *err)
{
    int rc = rs_store_query(s, q, cur, err);
    if (rc) {
        *cur = NULL;
        return rc;
    }
    if ((rc = rs_cursor_next(*cur, rec)) > 0)
        return 1;
    rs_cursor_free(*cur);
    *cur = NULL;
    return rc < 0 ? rs_err_set(err, rc, "reading thread %s: %s", q->thread_id ? q->thread_id : "*",
                               rs_errno_name(rc))
                  : 0;
}

int rs_store_log_info(rs_store *s, const char *thread_id, const char *run_id, const char *user,
                      rs_log_info *out, rs_err *err)
{
    rs_target t = {.thread_id = thread_id, .run_id = run_id};
    int rc = check_target(&t, run_id != NULL, err);
    if (rc)
        return rc;
    return s->ops->log_info(s->be, thread_id, run_id, user, out, err);
}

int rs_store_log_seek(rs_store *s, const char *thread_id, const char *run_id, int64_t off,
                      rs_cursor **out, rs_err *err)
{
    return s->ops->log_seek(s->be, thread_id, run_id, off, out, err);
}

int rs_store_facts(rs_store *s, const rs_target *t, rs_log_facts *out, rs_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = check_target(t, t->run_id != NULL, err);
    if (rc || !s->ops->log_facts)
        return rc;
    return s->ops->log_facts(s->be, t->thread_id, t->run_id, t->user, out, err);
}

int rs_store_runs_info(rs_store *s, const char *thread_id, rs_run_info_fn fn, void *ctx,
                       rs_err *err)
{
    rs_target t = {.thread_id = thread_id};
    int rc = check_target(&t, 0, err);
    if (rc)
        return rc;
    return s->ops->runs_info ? s->ops->runs_info(s->be, thread_id, fn, ctx, err) : -ENOSYS;
}

int rs_store_messages_size(rs_store *s, const char *thread_id, const char *run_id, const char *user,
                           int64_t *size, rs_err *err)
{
    rs_target t = {.thread_id = thread_id, .run_id = run_id, .user = user};
    rs_log_facts facts;
    int rc = rs_store_facts(s, &t, &facts, err);
    if (!rc && facts.known)
        *size = facts.msg_size;
    return rc ? rc : facts.known;
}

/* v as 16 lowercase hex digits at p (as %016llx writes it: an import keeps thousands of keys). */
static char *hex16(char *p, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, v >>= 4)
        p[i] = digits[v & 15];
    return p + 16;
}

/* The keys of a view's kept size: "size:VIEW:TOKEN"; its tokens all lie in [lo, hi). */
#define SIZE_KEY_LEN (sizeof "size:" - 1 + 16 + 1 + 16)
static void size_keys(uint64_t view, uint64_t token, char key[static SIZE_KEY_LEN + 1],
                      char lo[static SIZE_KEY_LEN + 1], char hi[static SIZE_KEY_LEN + 1])
{
    char *p = hex16(key + 5, view);
    memcpy(key, "size:", 5);
    *p = ':';
    *hex16(p + 1, token) = '\0';
    memcpy(lo, key, 22);
    lo[22] = '\0';
    memcpy(hi, key, 21);
    memcpy(hi + 21, ";", 2);
}

int rs_store_size_get(rs_store *s, uint64_t view, uint64_t token, int64_t *size)
{
    char key[SIZE_KEY_LEN + 1], lo[SIZE_KEY_LEN + 1], hi[SIZE_KEY_LEN + 1];
    int found = 0;
    size_keys(view, token, key, lo, hi);
    if (!s->ops->size_get || s->ops->size_get(s->be, key, size, &found))
        return 0;
    return found;
}

int rs_store_size_put(rs_store *s, uint64_t view, uint64_t token, int64_t size)
{
    rs_size v = {view, token, size};
    return rs_store_sizes_put(s, &v, 1);
}

static int key_order(const void *a, const void *b)
{
    return strcmp(((const rs_size_key *)a)->key, ((const rs_size_key *)b)->key);
}

static int sizes_put(rs_store *s, const rs_size *v, size_t n, int fresh)
{
    if (s->opt.read_only || !s->ops->size_put || n == 0)
        return 0;
    rs_size_key *keys = malloc(n * sizeof *keys);
    if (!keys)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        keys[i].size = v[i].size;
        size_keys(v[i].view, v[i].token, keys[i].key, keys[i].lo, keys[i].hi);
    }
    /* In key order, the table's B-tree is written a page after the next rather than at
     * random (an import keeps thousands). */
    if (fresh)
        qsort(keys, n, sizeof *keys, key_order);
    int rc = s->ops->size_put(s->be, keys, n, fresh);
    free(keys);
    return rc;
}

int rs_store_sizes_put(rs_store *s, const rs_size *v, size_t n)
{
    return sizes_put(s, v, n, 0);
}

int rs_store_sizes_add(rs_store *s, const rs_size *v, size_t n)
{
    return sizes_put(s, v, n, 1);
}

/* kind as text: both backends key it alike, and PostgreSQL has no unsigned 64 bits. */
static int steps_kind(uint64_t kind, char *out, size_t cap)
{
    return rs_fmt(out, cap, "%016llx", (unsigned long long)kind) < 0 ? -EOVERFLOW : 0;
}

int rs_store_steps_get(rs_store *s, const rs_target *t, uint64_t kind, rs_buf *out)
{
    char k[24];
    int found = 0;
    size_t len = out->len;
    if (!s->ops->steps_get || steps_kind(kind, k, sizeof k) ||
        s->ops->steps_get(s->be, t->thread_id, t->run_id, k, out, &found) || found != 1) {
        if (out->len > len)
            rs_buf_setlen(out, len);
        return found < 0 ? -ENOENT : 0;
    }
    return 1;
}

int rs_store_steps_put(rs_store *s, const rs_target *t, uint64_t kind, int64_t rewrites,
                       const void *data, size_t len)
{
    rs_steps one = {t, kind, rewrites, data, len};
    return rs_store_steps_put_many(s, &one, 1);
}

int rs_store_steps_put_many(rs_store *s, const rs_steps *v, size_t n)
{
    if (s->opt.read_only || !s->ops->steps_put || !n)
        return 0;
    char(*kinds)[24] = n <= SIZE_MAX / sizeof *kinds ? malloc(n * sizeof *kinds) : NULL;
    int rc = kinds ? 0 : -ENOMEM;
    for (size_t i = 0; !rc && i < n; i++)
        rc = steps_kind(v[i].kind, kinds[i], sizeof kinds[i]);
    if (!rc)
        rc = s->ops->steps_put(s->be, v, (const char(*)[24])kinds, n);
    free(kinds);
    return rc;
}

int rs_store_names(rs_store *s, rs_names_kind kind, const char *thread_id, const char *run_id,
                   const char *user, rs_names **out, rs_err *err)
{
    const rs_terms *t;
    int rc = kind == RS_NAMES_SINGLETONS ? rs_store_terms(s, &t, err) : 0;
    if (rc)
        return rc;
    return s->ops->names(s->be, kind, thread_id, run_id, user,
                         kind == RS_NAMES_SINGLETONS ? t->singletons : NULL,
                         kind == RS_NAMES_SINGLETONS ? t->n_singletons : 0, out, err);
}

int rs_store_odd_ids(rs_store *s, rs_odd_id_fn fn, void *ctx, rs_err *err)
{
    return s->ops->odd_ids(s->be, fn, ctx, err);
}

/* The thread's log info counts its messages on either backend. */
int rs_store_count_messages(rs_store *s, const char *thread_id, const char *user, int64_t *count,
                            rs_err *err)
{
    rs_log_info info;
    int rc = s->ops->log_info(s->be, thread_id, NULL, user, &info, err);
    if (!rc)
        *count = info.message_count;
    return rc;
}

int rs_store_last_visible_ai_seq(rs_store *s, const rs_target *t, int64_t *seq, rs_err *err)
{
    return s->ops->last_visible_ai_seq(s->be, t, seq, err);
}

/* A LIKE pattern that finds raw in content text, or NULL when raw holds characters whose
 * JSON spelling differs from their raw bytes (then every object row is checked). */
static char *like_pattern(const char *raw)
{
    size_t n = strlen(raw);
    for (size_t i = 0; i < n; i++)
        if (raw[i] == '"' || raw[i] == '\\' || (unsigned char)raw[i] < 0x20)
            return NULL;
    char *p = malloc(2 * n + 3), *w = p;
    if (!p)
        return NULL;
    *w++ = '%';
    for (size_t i = 0; i < n; i++) {
        if (raw[i] == '%' || raw[i] == '_')
            *w++ = '\\';
        *w++ = raw[i];
    }
    *w++ = '%';
    *w = '\0';
    return p;
}

/* A message row's content object, read once per row into reusable buffers. */
typedef struct msg_view {
    rs_buf content;
    rs_buf a, b;
} msg_view;

/* A non-empty string member of the content object, decoded into out. */
static const char *str_item(const msg_view *m, const char *key, rs_buf *out)
{
    return rs_view_get_str(m->content.buf, m->content.len, key, out) && out->len ? out->buf : NULL;
}

/* DeerFlow's message identity (message_identity.py): tool:<tool_call_id>, else
 * message:<id> with a human message's trailing "__user" dropped. */
static int identity_matches(msg_view *m, const char *identity)
{
    const char *tool = str_item(m, "tool_call_id", &m->a);
    if (tool)
        return strncmp(identity, "tool:", 5) == 0 && strcmp(identity + 5, tool) == 0;
    const char *id = str_item(m, "id", &m->a);
    if (!id || strncmp(identity, "message:", 8) != 0)
        return 0;
    size_t n = m->a.len;
    const char *type = str_item(m, "type", &m->b);
    if (type && strcmp(type, "human") == 0 && n > 6 && strcmp(id + n - 6, "__user") == 0)
        n -= 6;
    return strlen(identity + 8) == n && strncmp(identity + 8, id, n) == 0;
}

/* 1 when a marker says the row's content is JSON and it is an object (into m->content). */
static int row_content_object(const rs_row *row, msg_view *m, int *rc)
{
    unsigned markers;
    if ((*rc = rs_json_markers(row->metadata, row->metadata_len, &markers)) || !markers)
        return 0;
    rs_buf_reset(&m->content);
    int r = rs_json_canon(&m->content, row->content, row->content_len, 0, NULL);
    if (r == -ENOMEM)
        *rc = r;
    return r == 0 && m->content.buf[0] == '{';
}

/* Scan message rows holding an object; fn decides. */
static int scan_messages(rs_store *s, const char *thread_id, const char *user, int newest,
                         const char *raw, int (*fn)(const rs_row *, msg_view *, void *), void *ctx,
                         rs_err *err)
{
    rs_target t = {.thread_id = thread_id};
    int rc = check_target(&t, 0, err);
    if (rc)
        return rc;
    char *like = like_pattern(raw);
    rs_cursor *c;
    rc = s->ops->message_objects(s->be, thread_id, user, newest, like, &c, err);
    free(like);
    if (rc)
        return rc;
    msg_view m = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    rc = -ENOENT;
    int step, vrc = 0;
    for (;;) {
        /* The matchers read the raw row (c->row), not the rendered line. */
        const rs_record *rec;
        step = rs_cursor_next(c, &rec);
        if (step <= 0)
            break;
        if (row_content_object(&c->row, &m, &vrc) && fn(&c->row, &m, ctx)) {
            rc = 0;
            break;
        }
        if (vrc) {
            step = rs_err_set(err, vrc, "out of memory reading messages");
            break;
        }
    }
    rs_cursor_free(c);
    rs_buf_release(&m.content);
    rs_buf_release(&m.a);
    rs_buf_release(&m.b);
    return step < 0 ? step : rc;
}

typedef struct seq_find {
    const char *identity;
    int64_t seq;
} seq_find;

static int match_identity(const rs_row *row, msg_view *m, void *ctx)
{
    seq_find *f = ctx;
    if (!identity_matches(m, f->identity))
        return 0;
    f->seq = row->seq;
    return 1;
}

int rs_store_message_seq(rs_store *s, const char *thread_id, const char *user, const char *identity,
                         int64_t *seq, rs_err *err)
{
    const char *raw = strchr(identity, ':');
    if (!raw || !raw[1])
        return rs_err_set(err, -ENOENT, "identity must be tool:<id> or message:<id>");
    seq_find f = {.identity = identity};
    int rc = scan_messages(s, thread_id, user, 0, raw + 1, match_identity, &f, err);
    if (!rc)
        *seq = f.seq;
    return rc;
}

typedef struct run_find {
    const char *message_id;
    rs_buf *run_id;
    int rc;
} run_find;

static int match_ai(const rs_row *row, msg_view *m, void *ctx)
{
    run_find *f = ctx;
    const char *type = str_item(m, "type", &m->a);
    const char *id = str_item(m, "id", &m->b);
    if (!type || strcmp(type, "ai") != 0 || !id || strcmp(id, f->message_id) != 0 ||
        !row->run_id[0])
        return 0;
    rs_buf_reset(f->run_id);
    f->rc = rs_buf_addstr(f->run_id, row->run_id);
    return 1;
}

int rs_store_latest_ai_run(rs_store *s, const char *thread_id, const char *user,
                           const char *message_id, rs_buf *run_id, rs_err *err)
{
    run_find f = {.message_id = message_id, .run_id = run_id};
    int rc = scan_messages(s, thread_id, user, 1, message_id, match_ai, &f, err);
    return rc ? rc : f.rc;
}

int rs_store_stats(rs_store *s, const char *user, const char *thread_id, rs_stats *out, rs_err *err)
{
    return s->ops->stats(s->be, user, thread_id, out, err);
}
