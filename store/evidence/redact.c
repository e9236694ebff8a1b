/* redact.c — forgetting an event's content (DESIGN "Forgetting"): named values (or the whole
 * content) become "[redacted]", the envelope stays, metadata.redaction says when and why,
 * and a sealed run keeps the leaf hash of the line as sealed, so its root and every other
 * proof still hold. The backend leaves no byte of what was erased in the store. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "event.h"
#include "json.h"
#include "merkle.h"
#include "rowview.h"
#include "runstore.h"
#include "rs_util.h"
#include "sign.h"
#include "store_int.h"

#define REDACTED "\"[redacted]\""
#define REDACT_RETRIES 5
#define REASON_MAX 1024

/* ---- values inside canonical JSON ------------------------------------------------------ */

/* The length of the canonical value at v[0..n) (no white space in canonical text). */
static size_t value_len(const char *v, size_t n)
{
    size_t i = 0;
    int depth = 0, in_str = 0;
    for (; i < n; i++) {
        char c = v[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"') {
                in_str = 0;
                if (!depth)
                    return i + 1;
            }
        } else if (c == '"')
            in_str = 1;
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (!depth)
                return i;
            if (!--depth)
                return i + 1;
        } else if (c == ',' && !depth)
            return i;
    }
    return i;
}

/* Element k of the canonical array arr[0..n): 1 with its span, 0 when there is none. */
static int array_at(const char *arr, size_t n, long k, const char **val, size_t *len)
{
    if (n < 2 || arr[0] != '[')
        return 0;
    size_t i = 1;
    for (long at = 0; i < n - 1; at++) {
        size_t l = value_len(arr + i, n - 1 - i);
        if (at == k) {
            *val = arr + i;
            *len = l;
            return 1;
        }
        i += l + 1; /* past its comma */
    }
    return 0;
}

/* The span of path's value (parts after the first, dot-separated) inside doc: 1 found. */
static int path_find(const char *doc, size_t n, const char *path, const char **val, size_t *len)
{
    *val = doc;
    *len = n;
    while (*path) {
        size_t pl = strcspn(path, ".");
        char *end;
        long k = strtol(path, &end, 10);
        int index = pl && end == path + pl && path[0] >= '0' && path[0] <= '9';
        if ((*val)[0] == '[' && index) {
            if (!array_at(*val, *len, k, val, len))
                return 0;
        } else if ((*val)[0] == '{') {
            if (!rs_json_get(*val, *len, path, pl, val, len))
                return 0;
        } else
            return 0;
        path += pl + (path[pl] == '.');
    }
    return 1;
}

/* doc with path's value replaced by "[redacted]" (-ENOENT: no such value). */
static int splice(rs_buf *doc, const char *path)
{
    const char *v;
    size_t len;
    if (!path_find(doc->buf, doc->len, path, &v, &len))
        return -ENOENT;
    size_t at = (size_t)(v - doc->buf);
    rs_buf out = RS_BUF_INIT;
    int rc = rs_buf_add(&out, doc->buf, at) || rs_buf_addlit(&out, REDACTED) ||
                     rs_buf_add(&out, doc->buf + at + len, doc->len - at - len)
                 ? -ENOMEM
                 : 0;
    if (!rc) {
        rs_buf_reset(doc);
        rc = rs_buf_add(doc, out.buf, out.len);
    }
    rs_buf_release(&out);
    return rc;
}

/* meta (a canonical object) with its member redaction set to rec. */
static int set_redaction(rs_buf *meta, const rs_buf *rec)
{
    const char *v;
    size_t len;
    rs_buf out = RS_BUF_INIT;
    int rc;
    if (rs_json_get(meta->buf, meta->len, "redaction", 9, &v, &len)) {
        size_t at = (size_t)(v - meta->buf);
        rc = rs_buf_add(&out, meta->buf, at) || rs_buf_add(&out, rec->buf, rec->len) ||
                     rs_buf_add(&out, meta->buf + at + len, meta->len - at - len)
                 ? -ENOMEM
                 : 0;
    } else
        rc = rs_buf_add(&out, meta->buf, meta->len - 1) ||
                     (meta->len > 2 && rs_buf_addch(&out, ',')) ||
                     rs_buf_addlit(&out, "\"redaction\":") ||
                     rs_buf_add(&out, rec->buf, rec->len) || rs_buf_addch(&out, '}')
                 ? -ENOMEM
                 : 0;
    if (!rc) {
        rs_buf_reset(meta);
        rc = rs_buf_add(meta, out.buf, out.len);
    }
    rs_buf_release(&out);
    return rc;
}

static void sha_hex(const char *p, size_t n, char *hex)
{
    unsigned char h[RS_SHA256_LEN];
    unsigned len;
    EVP_Digest(p, n, h, &len, EVP_sha256(), NULL);
    rs_sha256_hex(hex, h);
}

/* ---- the redactions a seal's checks need ---------------------------------------------- */

typedef struct load_ctx {
    rs_redacted *v;
    size_t n, cap;
    int rc;
} load_ctx;

static int on_load(void *ctx, const rs_redact_row *r)
{
    load_ctx *c = ctx;
    /* Rows come by seq then time: a later redaction of a seq keeps the first's leaf and
     * gives the hash of the line as it is now. */
    if (!c->n || c->v[c->n - 1].seq != r->seq) {
        if (rs_array_grow(&c->v, &c->cap, c->n + 1, sizeof *c->v))
            return c->rc = -ENOMEM;
        memset(&c->v[c->n], 0, sizeof *c->v);
        c->v[c->n].seq = r->seq;
        c->v[c->n].has_leaf = r->leaf &&
                              !rs_sha256_parse(r->leaf, strlen(r->leaf), c->v[c->n].leaf);
        c->n++;
    }
    (void)rs_sha256_parse(r->line_hash, strlen(r->line_hash), c->v[c->n - 1].line_hash);
    return 0;
}

int rs_redacted_load(rs_store *s, const rs_target *t, int64_t from, int64_t to, rs_redacted **out,
                     size_t *n, rs_err *err)
{
    load_ctx c = {0};
    int rc = s->ops->redaction_each(s->be, t, from, to, on_load, &c, err);
    if (c.rc)
        rc = rs_err_set(err, c.rc, "out of memory");
    if (rc) {
        free(c.v);
        return rc;
    }
    *out = c.v;
    *n = c.n;
    return 0;
}

const rs_redacted *rs_redacted_find(const rs_redacted *v, size_t n, int64_t seq)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo].seq == seq ? &v[lo] : NULL;
}

/* ---- redactions.jsonl ------------------------------------------------------------------ */

static int render(rs_buf *out, const rs_redact_row *r)
{
    size_t start = out->len;
    int rc =
        rs_buf_addf(out, "{\"seq\":%lld,\"paths\":%s,\"reason\":", (long long)r->seq, r->paths) ||
        rs_buf_add_json_string(out, r->reason, strlen(r->reason)) ||
        rs_buf_addlit(out, ",\"at\":") || rs_buf_add_json_string(out, r->at, strlen(r->at)) ||
        rs_buf_addlit(out, ",\"leaf\":") ||
        (r->leaf ? rs_buf_add_json_string(out, r->leaf, strlen(r->leaf))
                 : rs_buf_addlit(out, "null")) ||
        rs_buf_addlit(out, ",\"note\":") ||
        (r->note ? rs_buf_add_json_string(out, r->note, strlen(r->note))
                 : rs_buf_addlit(out, "null")) ||
        rs_buf_addlit(out, "}\n");
    if (rc)
        rs_buf_setlen(out, start);
    return rc ? -ENOMEM : 0;
}

static int on_render(void *ctx, const rs_redact_row *r)
{
    return render(ctx, r);
}

int rs_store_redactions(rs_store *s, const rs_target *t, rs_buf *out, rs_err *err)
{
    rs_log_info info;
    int rc = rs_store_run_info(s, t, &info, err);
    if (rc)
        return rc;
    rc = s->ops->redaction_each(s->be, t, 1, INT64_MAX, on_render, out, err);
    return rc == -ENOMEM ? rs_err_set(err, rc, "out of memory") : rc;
}

/* ---- rs_store_redact -------------------------------------------------------------------- */

typedef struct redaction {
    rs_buf content, meta, paths, rec, content_db, meta_db, line, note;
    char at[RS_TIME_LEN + 1];
    char leaf[80], line_hash[80];
    int has_leaf, plain;
} redaction;

/* The paths as given checked and applied to the row's content and metadata (canonical). */
static int apply_paths(redaction *d, const char *const *paths, size_t n, int64_t seq, rs_err *err)
{
    int rc = rs_buf_addch(&d->paths, '[');
    for (size_t i = 0; !rc && i < (n ? n : 1); i++) {
        const char *p = n ? paths[i] : "content";
        rs_buf *doc = strncmp(p, "content", 7) == 0     ? &d->content
                      : strncmp(p, "metadata.", 9) == 0 ? &d->meta
                                                        : NULL;
        const char *rest = doc == &d->content ? p + 7 : doc ? p + 8 : p;
        if (!doc || (rest[0] && rest[0] != '.') || (doc == &d->meta && !rest[1]) ||
            (rest[0] == '.' && !rest[1]) || strstr(p, ".."))
            return rs_err_set(err, -EINVAL,
                              "path '%.80s': name a value inside the event, as content, "
                              "content.KEY... or metadata.KEY... (numbers index arrays)",
                              p);
        if (!rest[0]) {
            rs_buf_reset(&d->content);
            rc = rs_buf_addlit(&d->content, REDACTED) ? -ENOMEM : 0;
        } else if ((rc = splice(doc, rest + 1)) == -ENOENT)
            return rs_err_set(err, -EINVAL, "path '%.80s' does not exist in event seq %lld", p,
                              (long long)seq);
        if (!rc)
            rc = (i && rs_buf_addch(&d->paths, ',')) ||
                         rs_buf_add_json_string(&d->paths, p, strlen(p))
                     ? -ENOMEM
                     : 0;
    }
    if (!rc)
        rc = rs_buf_addch(&d->paths, ']');
    return rc ? rs_err_set(err, -ENOMEM, "out of memory") : 0;
}

/* run_events' columns of the redacted event: content decoded when a string, else JSON text
 * with DeerFlow's markers in the metadata (as event.c stores a put's). */
static int to_columns(redaction *d)
{
    if (d->content.buf[0] == '"') {
        if (rs_json_unquote(&d->content_db, d->content.buf, d->content.len) ||
            rs_buf_add(&d->meta_db, d->meta.buf, d->meta.len))
            return -ENOMEM;
        return 0;
    }
    if (rs_buf_add(&d->content_db, d->content.buf, d->content.len) ||
        rs_buf_add(&d->meta_db, d->meta.buf, d->meta.len - 1) ||
        (d->meta.len > 2 && rs_buf_addch(&d->meta_db, ',')) ||
        rs_buf_addlit(&d->meta_db, "\"content_is_json\":true") ||
        (d->content.buf[0] == '{' && rs_buf_addlit(&d->meta_db, ",\"content_is_dict\":true")) ||
        rs_buf_addch(&d->meta_db, '}'))
        return -ENOMEM;
    return 0;
}

/* The leaf hash of the line as sealed, when a seal covers seq (t->user's; for an unscoped
 * redactor without a seal of its own, that of the row's owner, who saw the row): kept from an
 * earlier redaction, else made now from the line (after its salt when the seal's leaves are). */
static int sealed_leaf(rs_store *s, const rs_target *tt, const char *owner, int64_t seq,
                       const rs_buf *line, redaction *d, rs_err *err)
{
    rs_seal_row row;
    rs_target own = *tt;
    const rs_target *t = tt;
    int rc = s->ops->seal_get(s->be, t, &row, err);
    if (rc == -ENOENT && !tt->user && owner) {
        own.user = owner;
        t = &own;
        rc = s->ops->seal_get(s->be, t, &row, err);
    }
    if (rc == -ENOENT)
        return 0;
    if (rc || !row.root[0] || seq > row.upper_seq)
        return rc;
    rs_redacted *v = NULL;
    size_t n = 0;
    if ((rc = rs_redacted_load(s, t, seq, seq, &v, &n, err)))
        return rc;
    d->has_leaf = 1;
    d->plain = !row.salted;
    if (n && v[0].has_leaf) {
        rs_sha256_hex(d->leaf, v[0].leaf);
        free(v);
        return 0;
    }
    free(v);
    rs_seal_tree salts = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    rs_leaf how = {.kind = RS_LEAF_PLAIN};
    unsigned char h[RS_SHA256_LEN];
    if ((rc = s->ops->seal_salts(s->be, t, &row, seq, seq, &salts.salts, err)) == 0) {
        if (salts.salts.len == RS_SEAL_SALT_REC) {
            how.kind = RS_LEAF_SALTED;
            memcpy(how.b, salts.salts.buf + 8, RS_SALT_LEN);
        }
        if ((rc = rs_merkle_leaf(&how, line->buf, line->len, h)))
            rs_err_set(err, rc, "hashing the sealed line");
        else
            rs_sha256_hex(d->leaf, h);
    }
    rs_buf_release(&salts.salts);
    return rc;
}

static int note_sign(rs_store *s, const rs_target *t, int64_t seq, const char *const *paths,
                     size_t n, const char *reason, redaction *d, rs_err *err)
{
    if (!s->opt.seal_key)
        return 0;
    rs_buf body = RS_BUF_INIT;
    int rc = rs_buf_addf(&body, "runfs redaction v1\nthread %s\nrun %s\nseq %lld\nleaf %s\npaths ",
                         t->thread_id, t->run_id, (long long)seq, d->has_leaf ? d->leaf : "null");
    for (size_t i = 0; !rc && i < (n ? n : 1); i++)
        rc = rs_buf_addf(&body, "%s%s", i ? "," : "", n ? paths[i] : "content");
    if (!rc)
        rc = rs_buf_addf(&body, "\nreason %s\nat %s\n", reason, d->at);
    if (!rc && !(rc = rs_buf_grow(&d->note, RS_NOTE_MAX)))
        rc = rs_note_sign(s->opt.seal_key, body.buf, body.len, d->note.buf, err);
    else if (rc)
        rc = rs_err_set(err, -ENOMEM, "out of memory");
    if (!rc)
        rs_buf_setlen(&d->note, strlen(d->note.buf));
    rs_buf_release(&body);
    return rc;
}

static int check_reason(const char *reason, rs_err *err)
{
    size_t n = reason ? strlen(reason) : 0;
    int blank = 1;
    for (size_t i = 0; i < n; i++)
        blank &= reason[i] == ' ' || reason[i] == '\t';
    if (!n || blank)
        return rs_err_set(err, -EINVAL, "a redaction needs a reason (--reason TEXT)");
    if (n > REASON_MAX || strchr(reason, '\n') || !rs_utf8_valid(reason, n))
        return rs_err_set(err, -EINVAL, "the reason must be one line of text, at most %d bytes",
                          REASON_MAX);
    return 0;
}

/* The row at seq (any owner's) into d, its columns into old; -EACCES for another owner's. */
static int read_row(rs_store *s, const rs_target *t, int64_t seq, redaction *d, rs_buf *old_content,
                    rs_buf *old_meta, rs_buf *line, char *owner, rs_err *err)
{
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.run_id = t->run_id;
    q.after_seq = seq - 1;
    q.before_seq = seq + 1;
    rs_cursor *cur;
    const rs_record *rec;
    int rc = rs_store_query_first(s, &q, &cur, &rec, err);
    if (rc <= 0)
        return rc < 0 ? rc
                      : rs_err_set(err, -ENOENT, "no event seq %lld in run %s", (long long)seq,
                                   t->run_id);
    const rs_row *row = &cur->row;
    if (t->user && (!row->user_id || strcmp(row->user_id, t->user) != 0)) {
        rs_cursor_free(cur);
        return rs_err_set(err, -EACCES, "event seq %lld is another owner's: not redacted",
                          (long long)seq);
    }
    unsigned markers;
    owner[0] = '\0';
    int has_owner = row->user_id != NULL;
    if (has_owner && rs_fmt(owner, RS_ID_MAX + 1, "%s", row->user_id) < 0)
        has_owner = 0;
    rc = rs_view_meta(&d->meta, row, &markers) || rs_view_content(&d->content, row, markers) ||
                 rs_buf_add(old_content, row->content, row->content_len) ||
                 rs_buf_add(old_meta, row->metadata, row->metadata_len) ||
                 rs_buf_add(line, rec->line, rec->line_len)
             ? rs_err_set(err, -ENOMEM, "out of memory")
             : 0;
    if (!rc && d->meta.buf[0] != '{')
        rc = rs_err_set(err, -EINVAL, "event seq %lld has metadata that is no object",
                        (long long)seq);
    rs_cursor_free(cur);
    return rc ? rc : has_owner;
}

static void redaction_release(redaction *d)
{
    rs_buf *bufs[] = {&d->content,    &d->meta,    &d->paths, &d->rec,
                      &d->content_db, &d->meta_db, &d->line,  &d->note};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        rs_buf_release(bufs[i]);
}

/* One attempt: read, redact, write (-EAGAIN when the row changed between). */
static int redact_once(rs_store *s, const rs_target *t, int64_t seq, const char *const *paths,
                       size_t n, const char *reason, rs_buf *out, rs_buf *warn, rs_err *err)
{
    redaction d;
    memset(&d, 0, sizeof d);
    rs_buf *bufs[] = {&d.content,    &d.meta,    &d.paths, &d.rec,
                      &d.content_db, &d.meta_db, &d.line,  &d.note};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        *bufs[i] = (rs_buf)RS_BUF_INIT;
    rs_buf old_content = RS_BUF_INIT, old_meta = RS_BUF_INIT, sealed = RS_BUF_INIT;
    char owner[RS_ID_MAX + 1];
    int has_owner = read_row(s, t, seq, &d, &old_content, &old_meta, &sealed, owner, err), rc;
    if ((rc = has_owner < 0 ? has_owner : 0) || (rc = apply_paths(&d, paths, n, seq, err)))
        goto out;
    rs_time_now(d.at, NULL);
    if (rs_buf_addlit(&d.rec, "{\"at\":") || rs_buf_add_json_string(&d.rec, d.at, strlen(d.at)) ||
        rs_buf_addlit(&d.rec, ",\"reason\":") ||
        rs_buf_add_json_string(&d.rec, reason, strlen(reason)) ||
        rs_buf_addlit(&d.rec, ",\"paths\":") || rs_buf_add(&d.rec, d.paths.buf, d.paths.len) ||
        rs_buf_addch(&d.rec, '}') || set_redaction(&d.meta, &d.rec) || to_columns(&d)) {
        rc = rs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = sealed_leaf(s, t, has_owner ? owner : NULL, seq, &sealed, &d, err)))
        goto out;
    {
        /* The line as redacted: the old one with its content and metadata replaced (the
         * canonical line's members are the values rs_view_* gave). */
        rs_buf tmp = RS_BUF_INIT;
        const char *v;
        size_t vl;
        rs_buf canon = RS_BUF_INIT;
        rc = rs_json_canon(&canon, sealed.buf, sealed.len ? sealed.len - 1 : 0, 0, err);
        if (!rc && rs_json_get(canon.buf, canon.len, "content", 7, &v, &vl)) {
            size_t at = (size_t)(v - canon.buf);
            rc = rs_buf_add(&tmp, canon.buf, at) ||
                         rs_buf_add(&tmp, d.content.buf, d.content.len) ||
                         rs_buf_add(&tmp, canon.buf + at + vl, canon.len - at - vl)
                     ? -ENOMEM
                     : 0;
        }
        rs_buf_reset(&canon);
        if (!rc && rs_json_get(tmp.buf, tmp.len, "metadata", 8, &v, &vl)) {
            size_t at = (size_t)(v - tmp.buf);
            rc = rs_buf_add(&canon, tmp.buf, at) || rs_buf_add(&canon, d.meta.buf, d.meta.len) ||
                         rs_buf_add(&canon, tmp.buf + at + vl, tmp.len - at - vl) ||
                         rs_buf_addch(&canon, '\n')
                     ? -ENOMEM
                     : 0;
        }
        if (!rc)
            rc = rs_buf_add(&d.line, canon.buf, canon.len) ? -ENOMEM : 0;
        rs_buf_release(&tmp);
        rs_buf_release(&canon);
        if (rc) {
            rc = rs_err_set(err, rc, "rendering the redacted line");
            goto out;
        }
    }
    sha_hex(d.line.buf, d.line.len, d.line_hash);
    if ((rc = note_sign(s, t, seq, paths, n, reason, &d, err)))
        goto out;
    rs_redact_row w = {
        .seq = seq,
        .owner = has_owner ? owner : NULL,
        .at = d.at,
        .paths = d.paths.buf,
        .reason = reason,
        .leaf = d.has_leaf ? d.leaf : NULL,
        .line_hash = d.line_hash,
        .note = d.note.len ? d.note.buf : NULL,
        .old_content = old_content.buf,
        .old_content_len = old_content.len,
        .old_meta = old_meta.buf,
        .old_meta_len = old_meta.len,
        .content = d.content_db.buf,
        .content_len = d.content_db.len,
        .meta = d.meta_db.buf,
        .meta_len = d.meta_db.len,
    };
    if ((rc = s->ops->redact(s->be, t, &w, warn, err)))
        goto out;
    if (d.plain && warn)
        (void)rs_buf_addf(warn,
                          "%sthe run's seal has plain leaves (made before salts): its kept "
                          "leaf hash could confirm a guess at a short value",
                          warn->len ? "; " : "");
    if (out && render(out, &w))
        rc = rs_err_set(err, -ENOMEM, "out of memory");
out:
    /* The old bytes leave this process's memory too. */
    OPENSSL_cleanse(old_content.buf, old_content.len);
    OPENSSL_cleanse(old_meta.buf, old_meta.len);
    OPENSSL_cleanse(sealed.buf, sealed.len);
    rs_buf_release(&old_content);
    rs_buf_release(&old_meta);
    rs_buf_release(&sealed);
    redaction_release(&d);
    return rc;
}

/* The run event seq of the thread lies in. */
static int run_of(rs_store *s, const rs_target *t, int64_t seq, char *run, rs_err *err)
{
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.after_seq = seq - 1;
    q.before_seq = seq + 1;
    rs_cursor *cur;
    const rs_record *rec;
    int rc = rs_store_query_first(s, &q, &cur, &rec, err);
    if (rc > 0)
        rc = rs_fmt(run, RS_ID_MAX + 1, "%s", rec->run_id) < 0 ? -EOVERFLOW : 0;
    else if (rc == 0)
        rc = rs_err_set(err, -ENOENT, "no event seq %lld in thread %s", (long long)seq,
                        t->thread_id);
    rs_cursor_free(cur);
    return rc;
}

int rs_store_redact(rs_store *s, const rs_target *t, int64_t seq, const char *const *paths,
                    size_t n, const char *reason, rs_buf *out, rs_buf *warn, rs_err *err)
{
    if (s->opt.read_only)
        return rs_err_set(err, -EROFS, "the store is opened read-only");
    if (!t->thread_id || !rs_id_valid(t->thread_id) || (t->run_id && !rs_id_valid(t->run_id)))
        return rs_err_set(err, -EINVAL, "invalid thread or run id");
    int rc = check_reason(reason, err);
    if (rc)
        return rc;
    if (seq < 1)
        return rs_err_set(err, -EINVAL, "seq %lld: a seq is 1 or more", (long long)seq);
    char run[RS_ID_MAX + 1];
    rs_target rt = *t;
    if (!t->run_id && (rc = run_of(s, t, seq, run, err)))
        return rc;
    if (!t->run_id)
        rt.run_id = run;
    for (int attempt = 0; attempt <= REDACT_RETRIES; attempt++)
        if ((rc = redact_once(s, &rt, seq, paths, n, reason, out, warn, err)) != -EAGAIN)
            break;
    return rc;
}

int rs_store_redact_line(rs_store *s, const rs_target *t, const char *line, size_t len, rs_buf *out,
                         rs_buf *warn, rs_err *err)
{
    rs_buf canon = RS_BUF_INIT, reason = RS_BUF_INIT, strs = RS_BUF_INIT;
    const char **paths = NULL;
    size_t n = 0;
    const char *v;
    size_t vl;
    int64_t seq = 0;
    int rc = rs_json_canon(&canon, line, len, 0, err);
    if (!rc && (canon.buf[0] != '{' || !rs_json_get(canon.buf, canon.len, "seq", 3, &v, &vl) ||
                vl > 18 || strspn(v, "0123456789") != vl || (seq = strtoll(v, NULL, 10)) < 1))
        rc = rs_err_set(err, -EINVAL,
                        "a redaction is {\"seq\": N, \"paths\": [...], \"reason\": \"why\"}");
    if (!rc && rs_json_get(canon.buf, canon.len, "reason", 6, &v, &vl) &&
        (v[0] != '"' || rs_json_unquote(&reason, v, vl)))
        rc = rs_err_set(err, -EINVAL, "reason: a string");
    if (!rc && rs_json_get(canon.buf, canon.len, "paths", 5, &v, &vl)) {
        /* Each path decoded and NUL-terminated, end to end in strs; then pointed at. */
        rc = v[0] == '[' ? 0 : rs_err_set(err, -EINVAL, "paths: an array of strings");
        for (size_t i = 1; !rc && i + 1 < vl;) {
            size_t l = value_len(v + i, vl - 1 - i);
            rs_buf one = RS_BUF_INIT;
            if (v[i] != '"' || rs_json_unquote(&one, v + i, l) ||
                rs_buf_add(&strs, one.buf, one.len) || rs_buf_addch(&strs, '\0'))
                rc = rs_err_set(err, -EINVAL, "paths: an array of strings");
            rs_buf_release(&one);
            n++;
            i += l + 1;
        }
        if (!rc && n && !(paths = calloc(n, sizeof *paths)))
            rc = rs_err_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0, at = 0; !rc && i < n; i++, at += strlen(strs.buf + at) + 1)
            paths[i] = strs.buf + at;
    }
    if (!rc)
        rc = rs_store_redact(s, t, seq, paths, n, reason.len ? reason.buf : "", out, warn, err);
    free(paths);
    rs_buf_release(&canon);
    rs_buf_release(&reason);
    rs_buf_release(&strs);
    return rc;
}
