/* proof.c — what a sealed run proves event by event (proofs/<seq>) and its signed note
 * (seal.note). A proof reads the one chunk of rows its event lies in and the hashes the seal
 * kept (merkle.h), so it costs the same in a run of a hundred events or of millions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merkle.h"
#include "runstore.h"
#include "rs_util.h"
#include "store_int.h"

/* The seal t->user sees on the run: -ENOENT (with why) when there is none. */
static int sealed(rs_store *s, const rs_target *t, rs_seal_row *row, rs_err *err)
{
    if (!t->thread_id || !rs_id_valid(t->thread_id) || !t->run_id || !rs_id_valid(t->run_id))
        return rs_err_set(err, -EINVAL, "invalid thread or run id");
    rs_log_info info;
    int rc = rs_store_run_info(s, t, &info, err);
    if (rc)
        return rc;
    rc = s->ops->seal_get(s->be, t, row, err);
    return rc == -ENOENT ? rs_err_set(err, -ENOENT, "run %s is not sealed", t->run_id) : rc;
}

int rs_store_seal_note(rs_store *s, const rs_target *t, rs_buf *out, rs_err *err)
{
    rs_seal_row row;
    int rc = sealed(s, t, &row, err);
    if (rc)
        return rc;
    if (!row.note[0])
        return rs_err_set(err, -ENOENT, "run %s has a seal without a signature", t->run_id);
    return rs_buf_addstr(out, row.note) ? rs_err_set(err, -ENOMEM, "out of memory") : 0;
}

/* The lines of chunk [from, to) of the sealed rows, and where each ends; *at: the index of
 * seq among them (-1: not there). */
static int chunk_lines(rs_store *s, const rs_target *t, int64_t from, int64_t to, int64_t seq,
                       rs_buf *lines, size_t **ends, int64_t **seqs, int64_t *count, int64_t *at,
                       rs_err *err)
{
    rs_query q = RS_QUERY_INIT;
    q.thread_id = t->thread_id;
    q.run_id = t->run_id;
    q.user = t->user;
    q.after_seq = from - 1;
    q.before_seq = to;
    rs_cursor *cur;
    int rc = rs_store_query(s, &q, &cur, err);
    if (rc)
        return rc;
    size_t cap = 0, cap2 = 0;
    const rs_record *rec;
    *count = 0;
    *at = -1;
    while ((rc = rs_cursor_next(cur, &rec)) > 0) {
        if (rs_array_grow(ends, &cap, (size_t)*count + 1, sizeof **ends) ||
            rs_array_grow(seqs, &cap2, (size_t)*count + 1, sizeof **seqs) ||
            rs_buf_add(lines, rec->line, rec->line_len)) {
            rc = -ENOMEM;
            break;
        }
        if (rec->seq == seq)
            *at = *count;
        (*seqs)[*count] = rec->seq;
        (*ends)[(*count)++] = lines->len;
    }
    rs_cursor_free(cur);
    return rc < 0 ? rs_err_set(err, rc, "reading run %s: %s", t->run_id, rs_errno_name(rc)) : 0;
}

/* How each line of the chunk becomes its leaf: a salted seal's salts, by seq (a row without
 * one hashes plain, and so no longer fits the kept chunk). */
static int chunk_leaves(const rs_buf *salts, const int64_t *seqs, int64_t count, rs_leaf **how)
{
    *how = calloc((size_t)(count ? count : 1), sizeof **how);
    if (!*how)
        return -ENOMEM;
    const unsigned char *p = (const unsigned char *)salts->buf;
    size_t at = 0;
    for (int64_t k = 0; k < count; k++) {
        while (at + RS_SEAL_SALT_REC <= salts->len && rs_seal_rec_seq(p + at) < seqs[k])
            at += RS_SEAL_SALT_REC;
        if (at + RS_SEAL_SALT_REC <= salts->len && rs_seal_rec_seq(p + at) == seqs[k]) {
            (*how)[k].kind = RS_LEAF_SALTED;
            memcpy((*how)[k].b, p + at + 8, RS_SALT_LEN);
        }
    }
    return 0;
}

static int render_proof(rs_buf *out, int64_t seq, int64_t index, const rs_seal_row *row,
                        const rs_buf *path, const rs_leaf *how)
{
    size_t start = out->len;
    int rc = rs_buf_addf(out,
                         "{\"seq\":%lld,\"leaf_index\":%lld,\"tree_size\":%lld,\"root\":\"%s\""
                         ",\"path\":[",
                         (long long)seq, (long long)index, (long long)row->event_count, row->root);
    for (size_t k = 0; !rc && k < path->len / RS_SHA256_LEN; k++) {
        char hex[80];
        rs_sha256_hex(hex, (const unsigned char *)path->buf + k * RS_SHA256_LEN);
        rc = rs_buf_addf(out, "%s\"%s\"", k ? "," : "", hex);
    }
    if (!rc)
        rc = rs_buf_addch(out, ']');
    if (!rc && how && how->kind == RS_LEAF_SALTED) {
        rc = rs_buf_addlit(out, ",\"salt\":\"");
        if (!rc)
            rc = rs_buf_add_hex(out, how->b, RS_SALT_LEN);
        if (!rc)
            rc = rs_buf_addch(out, '"');
    }
    if (!rc)
        rc = rs_buf_addlit(out, "}\n");
    if (rc)
        rs_buf_setlen(out, start);
    return rc;
}

int rs_store_proof(rs_store *s, const rs_target *t, int64_t seq, rs_buf *out, rs_err *err)
{
    rs_seal_row row;
    int rc = sealed(s, t, &row, err);
    if (rc)
        return rc;
    if (!row.root[0])
        return rs_err_set(err, -ENOENT, "run %s was sealed before seals kept a Merkle root",
                          t->run_id);
    if (seq < 1 || seq > row.upper_seq)
        return rs_err_set(err, -ENOENT, "seq %lld is outside the seal's boundary (upper_seq %lld)",
                          (long long)seq, (long long)row.upper_seq);
    rs_seal_tree tree = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    rs_buf lines = RS_BUF_INIT, path = RS_BUF_INIT;
    size_t *ends = NULL;
    int64_t *seqs = NULL;
    rs_leaf *how = NULL;
    int64_t j, from, to, count, at;
    if ((rc = s->ops->seal_tree(s->be, t, &row, &tree, err)))
        goto out;
    rc = rs_merkle_chunk_of(&tree.seqs, row.event_count, seq, &j, &from, &to);
    if (rc == -ENOENT)
        rc = rs_err_set(err, -ENOENT, "no event seq %lld among the sealed rows", (long long)seq);
    if (rc == -EINVAL)
        rc = rs_err_set(err, -EIO, "the seal's kept tree does not fit its %lld events",
                        (long long)row.event_count);
    int64_t end = to < row.upper_seq + 1 ? to : row.upper_seq + 1;
    if (rc || (rc = chunk_lines(s, t, from, end, seq, &lines, &ends, &seqs, &count, &at, err)) ||
        (rc = s->ops->seal_salts(s->be, t, &row, from, end - 1, &tree.salts, err)))
        goto out;
    if (chunk_leaves(&tree.salts, seqs, count, &how)) {
        rc = rs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    /* A redacted event's kept leaf stands for its line as sealed. */
    rs_redacted *red = NULL;
    size_t nred = 0;
    if ((rc = rs_redacted_load(s, t, from, end - 1, &red, &nred, err)))
        goto out;
    for (int64_t k = 0; k < count; k++) {
        const rs_redacted *r = rs_redacted_find(red, nred, seqs[k]);
        if (r && r->has_leaf) {
            how[k].kind = RS_LEAF_KEPT;
            memcpy(how[k].b, r->leaf, RS_SHA256_LEN);
        }
    }
    free(red);
    if (at < 0) {
        rc = rs_err_set(err, -ENOENT, "no event seq %lld among the sealed rows", (long long)seq);
        goto out;
    }
    rc = rs_merkle_path(row.event_count, &tree.nodes, j, &lines, ends, how, count, at, &path);
    if (rc == -EBADMSG || rc == -EINVAL)
        rc = rs_err_set(err, -EIO,
                        "the run's rows around seq %lld changed since it was sealed (runfs "
                        "verify says which runs changed)",
                        (long long)seq);
    else if (rc || (rc = render_proof(out, seq, j * RS_MERKLE_CHUNK + at, &row, &path, &how[at])))
        rc = rs_err_set(err, rc, "out of memory");
out:
    rs_buf_release(&tree.seqs);
    rs_buf_release(&tree.nodes);
    rs_buf_release(&tree.salts);
    rs_buf_release(&lines);
    rs_buf_release(&path);
    free(ends);
    free(seqs);
    free(how);
    return rc;
}
