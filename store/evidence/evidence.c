/* evidence.c — receipts and seals (DESIGN "Receipts and seals", spec 10): what a run holds
 * up to a boundary, a SHA-256 over exactly those bytes, and a check that they still hold.
 * Digests stream the run's canonical lines; nothing materialises a run. */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
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

#define SEAL_RETRIES 5
#define SEAL_ERROR_MAX (sizeof(((rs_seal_row *)0)->error) - 1)

static int check_run(const rs_target *t, rs_err *err)
{
    if (!t->thread_id || !rs_id_valid(t->thread_id))
        return rs_err_set(err, -EINVAL, "invalid thread id '%.80s': use 1-64 of [A-Za-z0-9_-]",
                          t->thread_id ? t->thread_id : "");
    if (!t->run_id || !rs_id_valid(t->run_id))
        return rs_err_set(err, -EINVAL, "invalid run id '%.80s': use 1-64 of [A-Za-z0-9_-]",
                          t->run_id ? t->run_id : "");
    return 0;
}

/* ---- capture: digest, count and terminal up to a boundary ----------------------------------- */

typedef struct capture {
    int64_t upper_seq;
    int64_t event_count;
    int64_t terminal_seq; /* the valid run.terminal inside the boundary, 0: none */
    char digest[80];      /* "sha256:<hex>" */
    char root[80];        /* with a tree: its Merkle root, "sha256:<hex>" */
    char why[200];        /* why there is no valid terminal */
    int64_t redacted;     /* checking a seal: its events redacted since */
    int64_t redo_seq;     /* the first of them changed after its redaction (0: none) */
} capture;

static const char *const terminal_statuses[] = {"success", "error", "interrupted", "timeout"};

/* DESIGN: a valid run.terminal has category trace, a known content.status, metadata
 * protocol_version 1 (the integer) and a boolean recovered. 1 when valid, else why says. */
static int terminal_valid(const rs_row *row, rs_buf *meta, rs_buf *content, rs_buf *str, char *why,
                          size_t why_len, int *oom)
{
    unsigned markers;
    *oom = 0;
    if (strcmp(row->category, "trace") != 0) {
        (void)rs_fmt(why, why_len, "run.terminal seq %lld has category %.32s, not trace",
                     (long long)row->seq, row->category);
        return 0;
    }
    if (rs_view_meta(meta, row, &markers) || rs_view_content(content, row, markers)) {
        *oom = 1;
        return 0;
    }
    int known = 0;
    if (rs_view_get_str(content->buf, content->len, "status", str))
        for (size_t i = 0; i < sizeof terminal_statuses / sizeof *terminal_statuses; i++)
            known |= strcmp(str->buf, terminal_statuses[i]) == 0;
    if (!known) {
        (void)rs_fmt(why, why_len,
                     "run.terminal seq %lld: content.status is not one of success, "
                     "error, interrupted, timeout",
                     (long long)row->seq);
        return 0;
    }
    const char *v;
    size_t n;
    if (!rs_view_get(meta->buf, meta->len, "protocol_version", &v, &n) || n != 1 || v[0] != '1') {
        (void)rs_fmt(why, why_len, "run.terminal seq %lld: metadata.protocol_version is not 1",
                     (long long)row->seq);
        return 0;
    }
    if (!rs_view_get(meta->buf, meta->len, "recovered", &v, &n) ||
        !((n == 4 && !memcmp(v, "true", 4)) || (n == 5 && !memcmp(v, "false", 5)))) {
        (void)rs_fmt(why, why_len, "run.terminal seq %lld: metadata.recovered is not a boolean",
                     (long long)row->seq);
        return 0;
    }
    return 1;
}

static void rec_put_seq(unsigned char *p, int64_t seq)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)((uint64_t)seq >> (8 * i));
}

/* A new seal's leaf of seq: a fresh random salt, recorded in salts. */
static int leaf_fresh(rs_leaf *how, int64_t seq, rs_buf *salts)
{
    unsigned char rec[RS_SEAL_SALT_REC];
    how->kind = RS_LEAF_SALTED;
    if (RAND_bytes(how->b, RS_SALT_LEN) != 1)
        return -EIO;
    rec_put_seq(rec, seq);
    memcpy(rec + 8, how->b, RS_SALT_LEN);
    return rs_buf_add(salts, rec, sizeof rec);
}

/* A kept seal's leaf of seq, from its salts (by seq, walked from *at on); a row the seal
 * kept no salt for (added or moved since) hashes plain, and so shows as a change. */
static const rs_leaf *leaf_kept(rs_leaf *how, int64_t seq, const rs_buf *salts, size_t *at)
{
    const unsigned char *p = (const unsigned char *)salts->buf;
    while (*at + RS_SEAL_SALT_REC <= salts->len && rs_seal_rec_seq(p + *at) < seq)
        *at += RS_SEAL_SALT_REC;
    if (*at + RS_SEAL_SALT_REC > salts->len || rs_seal_rec_seq(p + *at) != seq)
        return NULL;
    how->kind = RS_LEAF_SALTED;
    memcpy(how->b, p + *at + 8, RS_SALT_LEN);
    return how;
}

/* Stream the run's lines with seq <= upper (owner user) into a SHA-256 (with a tree, through
 * a Merkle tree's builder, which digests them on its worker beside the tree, into kept and
 * cap->root); count them and, with want_terminal, check the first run.terminal among
 * them. A tree is built when sealing (kept: each line gets a fresh salt, kept->salts) or
 * when checking a seal that kept a root (sealed: its leaves made as it made them). */
static int capture_run(rs_store *s, const rs_target *t, const char *user, int64_t upper,
                       int want_terminal, const rs_seal_row *sealed, rs_seal_tree *kept,
                       capture *cap, rs_err *err)
{
    memset(cap, 0, sizeof *cap);
    cap->upper_seq = upper;
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.run_id = t->run_id;
    q.user = user;
    q.before_seq = upper + 1; /* exclusive; upper 0 gives no rows */
    EVP_MD_CTX *md = NULL;
    rs_merkle *tree = NULL;
    rs_seal_tree scratch = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    int checking = sealed && sealed->root[0];
    if (checking && !kept)
        kept = &scratch;
    if (kept ? rs_merkle_new(&tree) != 0
             : !(md = EVP_MD_CTX_new()) || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return rs_err_set(err, -ENOMEM, "cannot start a SHA-256 digest");
    }
    int rc = 0;
    rs_redacted *red = NULL;
    size_t nred = 0;
    if (checking && ((sealed->salted &&
                      (rc = s->ops->seal_salts(s->be, t, sealed, 1, upper, &scratch.salts, err))) ||
                     (rc = rs_redacted_load(s, t, 1, upper, &red, &nred, err)))) {
        rs_merkle_free(tree);
        rs_buf_release(&scratch.salts);
        return rc;
    }
    size_t salt_at = 0;
    rs_leaf how;
    rs_cursor *cur;
    rc = rs_store_query(s, &q, &cur, err);
    if (rc) {
        EVP_MD_CTX_free(md);
        rs_merkle_free(tree);
        rs_buf_release(&scratch.salts);
        free(red);
        return rc;
    }
    rs_buf meta = RS_BUF_INIT, content = RS_BUF_INIT, str = RS_BUF_INIT;
    int seen_terminal = 0;
    const rs_record *rec;
    for (;;) {
        if ((rc = rs_cursor_next(cur, &rec)) <= 0) {
            if (rc < 0)
                rs_err_set(err, rc, "reading run %s: %s", t->run_id, rs_errno_name(rc));
            break;
        }
        const rs_leaf *leaf = NULL;
        rc = 0;
        if (tree && !checking) {
            rc = leaf_fresh(&how, rec->seq, &kept->salts);
            leaf = &how;
        } else if (tree && sealed->salted)
            leaf = leaf_kept(&how, rec->seq, &scratch.salts, &salt_at);
        const rs_redacted *r = nred ? rs_redacted_find(red, nred, rec->seq) : NULL;
        if (r && r->has_leaf) {
            /* The kept leaf stands for the line as sealed; the line must be as redacted. */
            unsigned char h[RS_SHA256_LEN];
            unsigned hl;
            cap->redacted++;
            if (EVP_Digest(rec->line, rec->line_len, h, &hl, EVP_sha256(), NULL) != 1 ||
                memcmp(h, r->line_hash, RS_SHA256_LEN) != 0) {
                if (!cap->redo_seq)
                    cap->redo_seq = rec->seq;
            } else {
                how.kind = RS_LEAF_KEPT;
                memcpy(how.b, r->leaf, RS_SHA256_LEN);
                leaf = &how;
            }
        }
        if (rc || (tree ? (rc = rs_merkle_add(tree, rec->seq, leaf, rec->line, rec->line_len)) != 0
                        : EVP_DigestUpdate(md, rec->line, rec->line_len) != 1)) {
            rc = rs_err_set(err, tree ? rc : -EIO, "hashing run %s: %s", t->run_id,
                            rs_errno_name(tree ? rc : -EIO));
            break;
        }
        cap->event_count++;
        if (want_terminal && !seen_terminal && strcmp(rec->event_type, "run.terminal") == 0) {
            int oom;
            seen_terminal = 1;
            if (terminal_valid(&cur->row, &meta, &content, &str, cap->why, sizeof cap->why, &oom))
                cap->terminal_seq = rec->seq;
            else if (oom) {
                rc = rs_err_set(err, -ENOMEM, "out of memory");
                break;
            }
        }
    }
    rs_cursor_free(cur);
    rs_buf_release(&meta);
    rs_buf_release(&content);
    rs_buf_release(&str);
    unsigned char out[EVP_MAX_MD_SIZE], root[RS_SHA256_LEN];
    unsigned len = 0;
    if (rc >= 0 && tree) {
        if ((rc = rs_merkle_finish(tree, root, out, &kept->seqs, &kept->nodes)))
            rs_err_set(err, rc, "building the seal's Merkle tree: %s", rs_errno_name(rc));
        else
            rs_sha256_hex(cap->root, root);
    } else if (rc >= 0 && EVP_DigestFinal_ex(md, out, &len) != 1)
        rc = rs_err_set(err, -EIO, "SHA-256 final failed");
    EVP_MD_CTX_free(md);
    rs_merkle_free(tree);
    rs_buf_release(&scratch.seqs);
    rs_buf_release(&scratch.nodes);
    rs_buf_release(&scratch.salts);
    free(red);
    if (rc < 0)
        return rc;
    rs_sha256_hex(cap->digest, out);
    if (want_terminal && !seen_terminal)
        (void)rs_fmt(cap->why, sizeof cap->why, "no run.terminal up to seq %lld", (long long)upper);
    return 0;
}

/* Does the run hold a valid run.terminal up to upper? The first one decides, as in
 * capture_run, found where the store's facts say (receipt.json's way) or by a query that
 * reads that one row. A create with no body yet (a partial seal's) would otherwise digest
 * and hash the whole run only to be refused. 1 valid, 0 not (why says), <0 errno. */
static int terminal_probe(rs_store *s, const rs_target *t, int64_t upper, char *why, size_t why_len,
                          rs_err *err)
{
    rs_log_facts facts;
    int rc = rs_store_facts(s, t, &facts, err);
    if (rc)
        return rc;
    static const char *const types[] = {"run.terminal"};
    rs_query q = rs_query_of_type(t, types, 1);
    q.before_seq = upper + 1;
    if (facts.known && (!facts.terminal_seq || facts.terminal_seq > upper)) {
        (void)rs_fmt(why, why_len, "no run.terminal up to seq %lld", (long long)upper);
        return 0;
    }
    if (facts.known)
        q.after_seq = facts.terminal_seq - 1;
    rs_cursor *cur;
    if ((rc = rs_store_query(s, &q, &cur, err)))
        return rc;
    const rs_record *rec;
    rs_buf meta = RS_BUF_INIT, content = RS_BUF_INIT, str = RS_BUF_INIT;
    int oom = 0;
    rc = rs_cursor_next(cur, &rec);
    if (rc < 0)
        rs_err_set(err, rc, "reading run.terminal: %s", rs_errno_name(rc));
    else if (rc == 0)
        (void)rs_fmt(why, why_len, "no run.terminal up to seq %lld", (long long)upper);
    else
        rc = terminal_valid(&cur->row, &meta, &content, &str, why, why_len, &oom);
    rs_cursor_free(cur);
    rs_buf_release(&meta);
    rs_buf_release(&content);
    rs_buf_release(&str);
    return oom ? rs_err_set(err, -ENOMEM, "out of memory") : rc;
}

static int no_terminal(rs_err *err, const char *why)
{
    return rs_err_set(err, -EINVAL,
                      "no valid run.terminal inside the boundary (%s): "
                      "seal with {\"state\":\"partial\",\"error\":\"why\"}",
                      why);
}

/* Events of the run (owner user) with seq > upper: what a seal does not claim. */
static int count_after(rs_store *s, const rs_target *t, const char *user, int64_t upper, int64_t *n,
                       rs_err *err)
{
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.run_id = t->run_id;
    q.user = user;
    q.after_seq = upper;
    rs_cursor *cur;
    int rc = rs_store_query(s, &q, &cur, err);
    if (rc)
        return rc;
    const rs_record *rec;
    *n = 0;
    while ((rc = rs_cursor_next(cur, &rec)) > 0)
        ++*n;
    rs_cursor_free(cur);
    return rc < 0 ? rs_err_set(err, rc, "counting events after the seal: %s", rs_errno_name(rc))
                  : 0;
}

/* ---- receipt.json ----------------------------------------------------------------------------- */

int rs_store_receipt(rs_store *s, const rs_target *t, rs_buf *out, rs_err *err)
{
    rs_log_info info;
    rs_log_facts facts;
    int rc = check_run(t, err);
    if (rc || (rc = rs_store_run_info(s, t, &info, err)) ||
        (rc = rs_store_facts(s, t, &facts, err)))
        return rc;
    static const char *const types[] = {"run.terminal"};
    rs_query q = rs_query_of_type(t, types, 1);
    /* A log that knows its terminal's seq is read at that seq (or past its end), not
     * scanned. */
    if (facts.known) {
        q.after_seq = facts.terminal_seq ? facts.terminal_seq - 1 : info.last_seq;
        q.before_seq = facts.terminal_seq ? facts.terminal_seq + 1 : 0;
    }
    rs_cursor *cur;
    if ((rc = rs_store_query(s, &q, &cur, err)))
        return rc;
    size_t start = out->len;
    const rs_record *rec;
    int have = rs_cursor_next(cur, &rec);
    if (have < 0) {
        rs_cursor_free(cur);
        return rs_err_set(err, have, "reading run.terminal: %s", rs_errno_name(have));
    }
    if ((rc = rs_buf_addlit(out, "{\"thread_id\":")) ||
        (rc = rs_buf_add_json_string(out, t->thread_id, strlen(t->thread_id))) ||
        (rc = rs_buf_addlit(out, ",\"run_id\":")) ||
        (rc = rs_buf_add_json_string(out, t->run_id, strlen(t->run_id))) ||
        (rc = rs_buf_addf(out, ",\"upper_seq\":%lld,\"event_count\":%lld,\"terminal\":",
                          (long long)info.last_seq, (long long)info.count)))
        goto oom;
    if (have && rec->line_len && rec->line[rec->line_len - 1] == '\n')
        rc = rs_buf_add(out, rec->line, rec->line_len - 1);
    else if (have)
        rc = rs_buf_add(out, rec->line, rec->line_len);
    else
        rc = rs_buf_addlit(out, "null");
    if (rc || (rc = rs_buf_addlit(out, "}\n")))
        goto oom;
    rs_cursor_free(cur);
    return 0;
oom:
    rs_cursor_free(cur);
    rs_buf_setlen(out, start);
    return rs_err_set(err, rc, "out of memory rendering the receipt");
}

/* ---- seal.json ------------------------------------------------------------------------------ */

static int render_seal(rs_buf *out, const rs_target *t, const rs_seal_row *row, int64_t uncovered,
                       int64_t redacted)
{
    size_t start = out->len;
    int rc;
    if ((rc = rs_buf_addlit(out, "{\"thread_id\":")) ||
        (rc = rs_buf_add_json_string(out, t->thread_id, strlen(t->thread_id))) ||
        (rc = rs_buf_addlit(out, ",\"run_id\":")) ||
        (rc = rs_buf_add_json_string(out, t->run_id, strlen(t->run_id))) ||
        (rc = rs_buf_addlit(out, ",\"state\":")) ||
        (rc = rs_buf_add_json_string(out, row->state, strlen(row->state))) ||
        (rc = rs_buf_addf(out, ",\"upper_seq\":%lld,\"event_count\":%lld,\"terminal_seq\":",
                          (long long)row->upper_seq, (long long)row->event_count)))
        goto oom;
    rc = row->terminal_seq > 0 ? rs_buf_addf(out, "%lld", (long long)row->terminal_seq)
                               : rs_buf_addlit(out, "null");
    if (rc || (rc = rs_buf_addlit(out, ",\"digest\":")) ||
        (rc = rs_buf_add_json_string(out, row->digest, strlen(row->digest))) ||
        (rc = rs_buf_addf(out, ",\"tree_size\":%lld,\"root\":", (long long)row->event_count)))
        goto oom;
    rc = row->root[0] ? rs_buf_add_json_string(out, row->root, strlen(row->root))
                      : rs_buf_addlit(out, "null");
    if (rc || (rc = rs_buf_addf(out, ",\"leaves\":\"%s\"", row->salted ? "salted" : "plain")) ||
        (rc = rs_buf_addlit(out, ",\"error\":")))
        goto oom;
    rc = row->has_error ? rs_buf_add_json_string(out, row->error, strlen(row->error))
                        : rs_buf_addlit(out, "null");
    if (rc || (rc = rs_buf_addlit(out, ",\"sealed_at\":")) ||
        (rc = rs_buf_add_json_string(out, row->sealed_at, strlen(row->sealed_at))) ||
        (rc = rs_buf_addf(out, ",\"uncovered\":%lld,\"redacted\":%lld}\n", (long long)uncovered,
                          (long long)redacted)))
        goto oom;
    return 0;
oom:
    rs_buf_setlen(out, start);
    return rc;
}

static int seal_render(rs_store *s, const rs_target *t, const rs_seal_row *row, rs_buf *out,
                       rs_err *err)
{
    int64_t uncovered;
    rs_redacted *red = NULL;
    size_t nred = 0;
    int rc = count_after(s, t, t->user, row->upper_seq, &uncovered, err);
    if (!rc)
        rc = rs_redacted_load(s, t, 1, row->upper_seq, &red, &nred, err);
    free(red);
    if (!rc && (rc = render_seal(out, t, row, uncovered, (int64_t)nred)))
        rs_err_set(err, rc, "out of memory rendering the seal");
    return rc;
}

int rs_store_seal_read(rs_store *s, const rs_target *t, rs_buf *out, rs_err *err)
{
    rs_log_info info;
    rs_seal_row row;
    int rc = check_run(t, err);
    if (rc || (rc = rs_store_run_info(s, t, &info, err)))
        return rc;
    rc = s->ops->seal_get(s->be, t, &row, err);
    if (rc == -ENOENT)
        return rs_err_set(err, -ENOENT, "run %s is not sealed", t->run_id);
    if (rc)
        return rc;
    return seal_render(s, t, &row, out, err);
}

typedef struct seal_body {
    int partial;
    int has_state, has_error;
    rs_buf error;
    rs_err *err;
    int rc;
} seal_body;

static int on_body_member(void *ctx, const char *key, size_t key_len, const char *val,
                          size_t val_len)
{
    seal_body *b = ctx;
    if (key_len == 5 && memcmp(key, "state", 5) == 0 && !b->has_state) {
        b->has_state = 1;
        if (val_len != 9 || memcmp(val, "\"partial\"", 9) != 0) {
            b->rc = rs_err_set(b->err, -EINVAL,
                               "seal body: state must be \"partial\" (an "
                               "empty body asks for a complete seal)");
            return 1;
        }
        b->partial = 1;
        return 0;
    }
    if (key_len == 5 && memcmp(key, "error", 5) == 0 && !b->has_error) {
        b->has_error = 1;
        if (val[0] != '"' || rs_json_unquote(&b->error, val, val_len) != 0) {
            b->rc = rs_err_set(b->err, -EINVAL, "seal body: error must be a string");
            return 1;
        }
        if (!b->error.len || b->error.len > SEAL_ERROR_MAX ||
            memchr(b->error.buf, '\0', b->error.len)) {
            b->rc = rs_err_set(b->err, -EINVAL,
                               "seal body: error must be 1-%zu bytes of text "
                               "(got %zu)",
                               (size_t)SEAL_ERROR_MAX, b->error.len);
            return 1;
        }
        return 0;
    }
    b->rc = rs_err_set(b->err, -EINVAL, "seal body: %s field '%.*s' (only state and error)",
                       (key_len == 5 && (!memcmp(key, "state", 5) || !memcmp(key, "error", 5)))
                           ? "duplicate"
                           : "unknown",
                       (int)(key_len > 64 ? 64 : key_len), key);
    return 1;
}

/* body: empty (or white space) = a complete seal; else {"state":"partial","error":"why"}. */
static int parse_body(seal_body *b, const char *body, size_t len, rs_err *err)
{
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r'))
        i++;
    if (i == len)
        return 0;
    rs_buf canon = RS_BUF_INIT;
    int rc = rs_json_canon(&canon, body, len, 0, err);
    if (rc) {
        rs_buf_release(&canon);
        if (rc == -EINVAL && err) {
            char why[sizeof err->msg];
            (void)rs_fmt(why, sizeof why, "%s", err->msg);
            return rs_err_set(err, -EINVAL, "seal body: %s", why);
        }
        return rc;
    }
    b->err = err;
    if (canon.buf[0] != '{')
        rc = rs_err_set(err, -EINVAL,
                        "seal body must be empty or {\"state\":\"partial\","
                        "\"error\":\"why\"}");
    else if (rs_json_members(canon.buf, canon.len, on_body_member, b) < 0)
        rc = rs_err_set(err, -EINVAL, "seal body: not a JSON object");
    else if (b->rc)
        rc = b->rc;
    else if (!b->has_state || !b->has_error)
        rc = rs_err_set(err, -EINVAL,
                        "seal body needs both \"state\":\"partial\" and "
                        "\"error\":\"why\"");
    rs_buf_release(&canon);
    return rc;
}

/* The signed note of row, when the store has a key. */
static int seal_sign(rs_store *s, const rs_target *t, rs_seal_row *row, rs_err *err)
{
    if (!s->opt.seal_key)
        return 0;
    rs_buf body = RS_BUF_INIT;
    int rc = rs_note_body(&body, t, row)
                 ? rs_err_set(err, -ENOMEM, "out of memory")
                 : rs_note_sign(s->opt.seal_key, body.buf, body.len, row->note, err);
    rs_buf_release(&body);
    return rc;
}

int rs_store_seal(rs_store *s, const rs_target *t, const char *body, size_t len, rs_buf *out,
                  rs_err *err)
{
    if (s->opt.read_only)
        return rs_err_set(err, -EROFS, "the store is mounted read-only");
    int rc = check_run(t, err);
    if (rc)
        return rc;
    seal_body b = {.error = RS_BUF_INIT};
    rs_seal_row row;
    rs_seal_tree kept = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    if ((rc = parse_body(&b, body ? body : "", body ? len : 0, err)))
        goto out;
    rc = s->ops->seal_get(s->be, t, &row, err);
    if (rc == 0) {
        rc = rs_err_set(err, -EEXIST, "run %s is already sealed", t->run_id);
        goto out;
    }
    if (rc != -ENOENT)
        goto out;
    for (int attempt = 0; attempt <= SEAL_RETRIES; attempt++) {
        rs_log_info info;
        capture cap;
        if ((rc = rs_store_run_info(s, t, &info, err)))
            goto out;
        if (!b.partial &&
            (rc = terminal_probe(s, t, info.last_seq, cap.why, sizeof cap.why, err)) <= 0) {
            rc = rc < 0 ? rc : no_terminal(err, cap.why);
            goto out;
        }
        rs_buf_reset(&kept.salts);
        if ((rc = capture_run(s, t, t->user, info.last_seq, 1, NULL, &kept, &cap, err)))
            goto out;
        if (!cap.terminal_seq && !b.partial) {
            rc = no_terminal(err, cap.why);
            goto out;
        }
        memset(&row, 0, sizeof row);
        memcpy(row.state, b.partial ? "partial" : "sealed", b.partial ? 8 : 7);
        row.upper_seq = cap.upper_seq;
        row.event_count = cap.event_count;
        row.terminal_seq = cap.terminal_seq;
        memcpy(row.digest, cap.digest, sizeof row.digest);
        memcpy(row.root, cap.root, sizeof row.root);
        row.salted = 1;
        if (b.partial) {
            memcpy(row.error, b.error.buf, b.error.len + 1);
            row.has_error = 1;
        }
        rs_time_now(row.sealed_at, NULL);
        if ((rc = seal_sign(s, t, &row, err)))
            goto out;
        rc = s->ops->seal_insert(s->be, t, &row, &kept, err);
        if (rc != -EAGAIN)
            break;
    }
    if (rc == -EAGAIN)
        rc = rs_err_set(err, -EAGAIN, "run %s kept changing while it was being sealed", t->run_id);
    if (!rc && out)
        rc = seal_render(s, t, &row, out, err);
out:
    rs_buf_release(&b.error);
    rs_buf_release(&kept.seqs);
    rs_buf_release(&kept.nodes);
    rs_buf_release(&kept.salts);
    return rc;
}

/* ---- runfs verify ---------------------------------------------------------------------------- */

typedef struct verify_ctx {
    rs_store *s;
    const rs_seal_pub *key; /* NULL: notes are not checked */
    rs_verify_fn fn;
    void *ctx;
    rs_err *err;
    int changed;
} verify_ctx;

/* Does the seal carry a note by key over its own body? 1 yes, 0 no (why says), <0 errno. */
static int note_holds(const rs_seal_pub *key, const rs_target *t, const rs_seal_row *row, char *why,
                      size_t why_len)
{
    if (!row->note[0]) {
        (void)rs_fmt(why, why_len, "unsigned: the seal has no note");
        return 0;
    }
    rs_err nerr = {0};
    size_t len = strlen(row->note);
    if (rs_note_verify(key, row->note, len, &nerr)) {
        (void)rs_fmt(why, why_len, "seal.note: %s", nerr.msg);
        return 0;
    }
    rs_buf body = RS_BUF_INIT;
    if (rs_note_body(&body, t, row)) {
        rs_buf_release(&body);
        return -ENOMEM;
    }
    int same = body.len < len && memcmp(body.buf, row->note, body.len) == 0 &&
               row->note[body.len] == '\n';
    rs_buf_release(&body);
    if (!same)
        (void)rs_fmt(why, why_len, "seal.note: its signed body is not this seal's");
    return same;
}

/* The seqs a changed root's chunks span, "A-B" each, comma-separated (three at most named). */
typedef struct changed_seqs {
    rs_buf text;
    int64_t upper, chunks;
} changed_seqs;

static int add_changed(void *ctx, int64_t from, int64_t to)
{
    changed_seqs *c = ctx;
    if (c->chunks++ == 3)
        return rs_buf_addlit(&c->text, ", ...");
    if (c->chunks > 3)
        return 0;
    return rs_buf_addf(&c->text, "%s%lld-%lld", c->chunks > 1 ? ", " : "", (long long)from,
                       (long long)(to == INT64_MAX ? c->upper : to - 1));
}

/* Why what (the digest or the root) changed from sealed to now, naming the smallest ranges of
 * seqs the kept tree can show: the chunks (RS_MERKLE_CHUNK events) whose hash is not the one
 * sealed. */
static void changed_at(verify_ctx *v, const rs_target *t, const rs_seal_row *row,
                       const rs_seal_tree *fresh, const char *what, const char *now,
                       const char *sealed, char *why, size_t why_len)
{
    rs_seal_tree kept = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    changed_seqs c = {RS_BUF_INIT, row->upper_seq, 0};
    rs_err ignored = {0};
    int named = row->root[0] && v->s->ops->seal_tree(v->s->be, t, row, &kept, &ignored) == 0 &&
                rs_merkle_diff(row->event_count, &kept.seqs, &kept.nodes, &fresh->nodes,
                               add_changed, &c) == 0 &&
                c.chunks > 0;
    if (!named ||
        rs_fmt(why, why_len, "%s changed in seqs %s: %s != %s", what, c.text.buf, now, sealed) < 0)
        (void)rs_fmt(why, why_len, "%s changed: %s != %s", what, now, sealed);
    rs_buf_release(&c.text);
    rs_buf_release(&kept.seqs);
    rs_buf_release(&kept.nodes);
    rs_buf_release(&kept.salts);
}

static int verify_one(void *ctx, const rs_target *t, const rs_seal_row *row)
{
    verify_ctx *v = ctx;
    capture cap;
    memset(&cap, 0, sizeof cap);
    /* Over the rows the sealing owner saw (every row for an unscoped seal); a tombstone's
     * run has none left (the backends' drop_gone). */
    int deleted = strcmp(row->state, "deleted") == 0, rc;
    rs_seal_tree fresh = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    if (!deleted && (rc = capture_run(v->s, t, t->user, row->upper_seq, 0, row,
                                      row->root[0] ? &fresh : NULL, &cap, v->err))) {
        rs_buf_release(&fresh.seqs);
        rs_buf_release(&fresh.nodes);
        return rc;
    }
    char why[512];
    int ok = 0;
    /* Every row gone (another writer's retention delete) is no change to the evidence: told
     * apart, not counted. */
    if (deleted || (cap.event_count == 0 && row->event_count > 0)) {
        (void)rs_fmt(why, sizeof why, "deleted after sealing");
        ok = RS_VERIFY_DELETED;
    } else if (cap.event_count != row->event_count)
        (void)rs_fmt(why, sizeof why, "event count %lld != sealed %lld", (long long)cap.event_count,
                     (long long)row->event_count);
    else if (cap.redo_seq)
        (void)rs_fmt(why, sizeof why, "seq %lld changed after its redaction",
                     (long long)cap.redo_seq);
    else if (!cap.redacted && strcmp(cap.digest, row->digest) != 0)
        changed_at(v, t, row, &fresh, "digest", cap.digest, row->digest, why, sizeof why);
    else if (row->root[0] && strcmp(cap.root, row->root) != 0)
        changed_at(v, t, row, &fresh, "root", cap.root, row->root, why, sizeof why);
    else if (v->key && (ok = note_holds(v->key, t, row, why, sizeof why)) <= 0) {
        if (ok < 0) {
            rs_buf_release(&fresh.seqs);
            rs_buf_release(&fresh.nodes);
            return rs_err_set(v->err, ok, "out of memory");
        }
    } else if (cap.redacted) {
        /* A redacted run is checked by its root (its flat digest cannot be recomputed). */
        (void)rs_fmt(why, sizeof why, "%lld redacted%s", (long long)cap.redacted,
                     row->salted ? ""
                                 : "; warning: its leaves are plain (sealed before salts): a "
                                   "kept leaf hash could confirm a guess at a short value");
        ok = RS_VERIFY_REDACTED;
    } else {
        (void)rs_fmt(why, sizeof why, "ok");
        ok = 1;
    }
    rs_buf_release(&fresh.seqs);
    rs_buf_release(&fresh.nodes);
    v->changed += ok == 0;
    return v->fn ? v->fn(v->ctx, t->thread_id, t->run_id, ok, why) : 0;
}

/* An expired run is listed by what its seal said, apart from changes. */
static int verify_expired(void *ctx, const rs_expire_row *x)
{
    verify_ctx *v = ctx;
    char why[256];
    if (rs_fmt(why, sizeof why, "expired %s (%s)%s%s", x->expired_at, x->policy,
               x->root ? "; sealed root " : "", x->root ? x->root : "") < 0)
        (void)rs_fmt(why, sizeof why, "expired %s", x->expired_at);
    return v->fn ? v->fn(v->ctx, x->thread_id, x->run_id, RS_VERIFY_EXPIRED, why) : 0;
}

int rs_store_verify(rs_store *s, rs_verify_fn fn, void *ctx, rs_err *err)
{
    return rs_store_verify_key(s, NULL, fn, ctx, err);
}

int rs_store_verify_key(rs_store *s, const rs_seal_pub *key, rs_verify_fn fn, void *ctx,
                        rs_err *err)
{
    verify_ctx v = {.s = s, .key = key, .fn = fn, .ctx = ctx, .err = err};
    int rc = s->ops->seal_each(s->be, verify_one, &v, err);
    if (!rc)
        rc = s->ops->expired_each(s->be, NULL, verify_expired, &v, err);
    if (rc > 0)
        rc = 0; /* the caller's fn asked to stop */
    return rc < 0 ? rc : v.changed;
}
