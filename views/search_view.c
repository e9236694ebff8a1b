/* search_view.c — rendering a search: the scope a node names (the caller's owner and the mount's
 * thread), the store's matching records, their canonical lines in order (or, with by:run, a
 * line per matching run), a page at a time; its size kept until the rows change, and with it
 * the answer its count met (its bytes in a file, or its rows' ids: sizes.h bounds both). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "search_view.h"
#include "sizes.h"
#include "rs_util.h"

/* How far into an answer nothing counted a reader reads by searches resumed at each read
 * (head -c 64K's first read and what it renders ahead): past it, the answer is counted as a
 * stat counts it and its kept bytes read, which costs a reader of the whole answer less than
 * a search resumed at each read (at worst what the count at the open cost before, and the
 * first read). */
#define SEARCH_COUNT_AT ((int64_t)128 << 10)

int rfs_search_is_result(rfs_kind kind)
{
    return kind == RFS_SEARCH || kind == RFS_T_SEARCH || kind == RFS_R_SEARCH;
}

/* The thread and run the node searches, and what its answer is computed from (token: the
 * scope's log info; at the root, where every thread counts, the store's rows version, which
 * only kept sizes are checked against: without them, as `runfs search` reads, it is not
 * asked, two statements less on PostgreSQL). */
static int search_scope(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st,
                        rs_log_info *token, rs_err *err)
{
    memset(token, 0, sizeof *token);
    if (n->kind == RFS_SEARCH) {
        token->exists = 1;
        return sc->sizes && rs_store_rows_version(s, &token->count)
                   ? rs_err_set(err, -EIO, "cannot read the store's version")
                   : 0;
    }
    if (sc->only_thread && strcmp(sc->only_thread, n->thread_id) != 0)
        return -ENOENT;
    int rc = rs_store_log_info(s, n->thread_id, n->kind == RFS_R_SEARCH ? n->run_id : NULL,
                               sc->user, token, err);
    if (rc)
        return rc;
    if (!token->exists)
        return -ENOENT;
    st->mtime_ns = token->mtime_ns;
    st->ctime_ns = token->ctime_ns;
    st->version = rfs_view_version(token);
    return 0;
}

/* One run's share of a by:run answer. */
typedef struct run_hits {
    char run_id[RS_ID_MAX + 1];
    int64_t matches, first_seq, last_seq;
} run_hits;

/* The ids of an answer's rows as its count meets them, while they stay within what the
 * mount keeps (then none). */
typedef struct row_ids {
    int64_t *v;
    size_t n, cap;
    int over;
} row_ids;

static void row_ids_add(row_ids *r, int64_t id)
{
    if (r->over)
        return;
    /* An id the store cannot tell, or past the bound: the read scans as it would. */
    if (id <= 0 || r->n >= RFS_KEPT_ROWS_MAX ||
        rs_array_grow(&r->v, &r->cap, r->n + 1, sizeof *r->v)) {
        free(r->v);
        *r = (row_ids){.over = 1};
        return;
    }
    r->v[r->n++] = id;
}

/* The answer as pieces in order: a matching line each, or with by:run a thread's run lines
 * each (a thread's runs are ordered by their first match, and only the thread's last row
 * tells how many matched). */
typedef struct answer {
    rs_cursor *c;
    int by_run;
    rs_buf lines;               /* by:run: the piece given */
    char thread[RS_ID_MAX + 1]; /* by:run: the thread whose runs are being counted */
    char given[RS_ID_MAX + 1];  /* by:run: the thread of the piece given */
    run_hits *runs;             /* ... its runs, in order of their first match */
    size_t n_runs, cap_runs;
    size_t last_run; /* the run the previous row counted for: a run's rows come together */
    int done;
    size_t taken; /* rows the cursor gave */
    row_ids *ids; /* NULL, or where the rows' ids go as the cursor gives them */
} answer;

static int runs_count(answer *a, const rs_record *rec)
{
    size_t i = a->last_run;
    if (i >= a->n_runs || strcmp(a->runs[i].run_id, rec->run_id) != 0)
        for (i = 0; i < a->n_runs && strcmp(a->runs[i].run_id, rec->run_id) != 0; i++)
            ;
    if (i == a->n_runs) {
        if (rs_array_grow(&a->runs, &a->cap_runs, a->n_runs + 1, sizeof *a->runs))
            return -ENOMEM;
        run_hits *r = &a->runs[a->n_runs++];
        /* A record's run id is a valid id: it fits. */
        (void)rs_fmt(r->run_id, sizeof r->run_id, "%s", rec->run_id);
        r->matches = 0;
        r->first_seq = rec->seq;
    }
    a->runs[i].matches++;
    a->runs[i].last_seq = rec->seq;
    a->last_run = i;
    return 0;
}

/* The counted thread's lines into a->lines; its runs forgotten. */
static int runs_lines(answer *a)
{
    rs_buf_reset(&a->lines);
    int rc = 0;
    for (size_t i = 0; !rc && i < a->n_runs; i++) {
        const run_hits *r = &a->runs[i];
        rc = rs_buf_addf(&a->lines,
                         "{\"thread_id\":\"%s\",\"run_id\":\"%s\",\"matches\":%lld,"
                         "\"first_seq\":%lld,\"last_seq\":%lld}\n",
                         a->thread, r->run_id, (long long)r->matches, (long long)r->first_seq,
                         (long long)r->last_seq);
    }
    a->n_runs = a->last_run = 0;
    return rc;
}

/* The next piece: 1 with its bytes and where the answer resumes after it (thread, seq), 0 at
 * the end, or a negative errno. */
static int answer_next(answer *a, const char **p, size_t *len, const char **thread, int64_t *seq)
{
    const rs_record *rec;
    int rc;
    if (!a->by_run) {
        if ((rc = rs_cursor_next(a->c, &rec)) != 1)
            return rc;
        a->taken++;
        if (a->ids)
            row_ids_add(a->ids, rs_search_row_id(a->c));
        *p = rec->line;
        *len = rec->line_len;
        *thread = rec->thread_id;
        *seq = rec->seq;
        return 1;
    }
    while (!a->done) {
        if ((rc = rs_cursor_next(a->c, &rec)) < 0)
            return rc;
        a->done = rc == 0;
        a->taken += (size_t)rc;
        if (rc && a->ids)
            row_ids_add(a->ids, rs_search_row_id(a->c));
        if (!a->done && (!a->n_runs || strcmp(rec->thread_id, a->thread) == 0)) {
            /* A record's thread id is a valid id: it fits. */
            (void)rs_fmt(a->thread, sizeof a->thread, "%s", rec->thread_id);
            if ((rc = runs_count(a, rec)))
                return rc;
            continue;
        }
        if (!a->n_runs)
            return 0;
        /* The thread's runs are all counted: its lines are the piece, and the answer
         * resumes after the whole thread. The row read ahead starts the next one. */
        if ((rc = runs_lines(a)))
            return rc;
        memcpy(a->given, a->thread, sizeof a->given);
        if (!a->done) {
            (void)rs_fmt(a->thread, sizeof a->thread, "%s", rec->thread_id);
            if ((rc = runs_count(a, rec)))
                return rc;
        }
        *p = a->lines.buf;
        *len = a->lines.len;
        *thread = a->given;
        *seq = INT64_MAX;
        return 1;
    }
    return 0;
}

/* The answer of n's query q for the scope, after (after_thread, after_seq). */
static int answer_open(answer *a, rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_search *q,
                       const char *after_thread, int64_t after_seq, rs_err *err)
{
    memset(a, 0, sizeof *a);
    a->lines = (rs_buf)RS_BUF_INIT;
    a->by_run = rs_search_by_run(q);
    const char *thread = n->kind == RFS_SEARCH ? sc->only_thread : n->thread_id;
    const char *run = n->kind == RFS_R_SEARCH ? n->run_id : NULL;
    return rs_store_search(s, q, thread, run, sc->user, after_thread, after_seq, &a->c, err);
}

/* Rows of the answer in the pieces given so far (with by:run, the row read ahead starts the
 * next piece). */
static size_t answer_rows(const answer *a)
{
    return a->taken - (a->by_run && !a->done && a->taken ? 1 : 0);
}

/* The answer read again from the kept rows from the start-th on. */
static int answer_rows_open(answer *a, rs_store *s, rs_search *q, const rfs_kept_rows *rows,
                            size_t start, rs_err *err)
{
    memset(a, 0, sizeof *a);
    a->lines = (rs_buf)RS_BUF_INIT;
    a->by_run = rs_search_by_run(q);
    return rs_store_search_rows(s, rows->ids + start, rows->n - start, &a->c, err);
}

static void answer_close(answer *a)
{
    rs_cursor_free(a->c);
    rs_buf_release(&a->lines);
    free(a->runs);
}

/* The exact size: every piece counted, one pass; the ids of its rows in ids and its bytes in
 * file when not NULL. */
static int answer_size(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_search *q,
                       int64_t *size, row_ids *ids, rfs_kept_writer *file, rs_err *err)
{
    answer a;
    int rc = answer_open(&a, s, sc, n, q, NULL, 0, err);
    const char *p, *thread;
    size_t len;
    int64_t seq;
    *size = 0;
    a.ids = ids;
    while (!rc && (rc = answer_next(&a, &p, &len, &thread, &seq)) == 1) {
        *size += (int64_t)len;
        rfs_kept_writer_add(file, p, len);
        rc = 0;
    }
    answer_close(&a);
    if (rc == -ENOMEM)
        rs_err_set(err, rc, "out of memory");
    return rc < 0 ? rc : 0;
}

/* The name of n's size among the scope's kept sizes: the query, its scope and who asks; the
 * rewrites count too, as another writer's update in place leaves a thread's info alone. */
static int size_key(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_buf *key,
                    int64_t *rewrites_out)
{
    int64_t rewrites = 0;
    int rc = rs_store_rewrites(s, &rewrites) ? -EIO : rfs_node_path(n, key);
    *rewrites_out = rewrites;
    if (!rc && sc->sizes)
        rfs_sizes_rewrites(sc->sizes, rewrites);
    if (!rc)
        rc = rs_buf_addf(key, "\n%s\n%s\n%lld", sc->user ? sc->user : "",
                         sc->only_thread ? sc->only_thread : "", (long long)rewrites);
    return rc;
}

int rfs_search_stat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st, int sized,
                    rs_err *err)
{
    memset(st, 0, sizeof *st);
    st->shape = RFS_SHAPE_STREAM;
    st->mtime_ns = st->ctime_ns = sc->mount_ns;
    if (sc->denied)
        return rs_err_set(err, -EACCES, "this uid is not in the mount's --user-map");
    rs_log_info token;
    int rc = search_scope(s, sc, n, st, &token, err);
    rs_search *q = NULL;
    if (rc || (rc = rs_search_parse(&q, n->name, err)) || !sized) {
        rs_search_free(q);
        return rc;
    }
    /* Kept by the mount only: a query is a parameter, and the store would keep a row for
     * every one anybody asked. */
    rs_buf key = RS_BUF_INIT;
    int64_t rewrites = 0;
    if (sc->sizes && size_key(s, sc, n, &key, &rewrites) == 0 &&
        rfs_sizes_get(sc->sizes, key.buf, &token, &st->size)) {
        st->kept = 1;
    } else if (sized == 1) {
        st->unsized = 1;
    } else {
        /* The answer counted is kept with the size: the read after this stat (cat) reads
         * its bytes (in memory, or past what memory keeps on disk: a common word's answer
         * read again from its rows cost the cat as much as the count), or failing those
         * (too large) its rows alone, with no second pass over the candidates. */
        row_ids ids = {0};
        int keep = sc->sizes && key.len;
        rfs_kept_writer file;
        rfs_kept_writer_open(&file, keep ? RFS_KEEP_DISK : RFS_KEEP_NONE);
        rc = answer_size(s, sc, n, q, &st->size, keep ? &ids : NULL, &file, err);
        rfs_kept_rows *rows = rc ? NULL : rfs_kept_writer_finish(&file, st->size);
        if (!rows && !rc && keep && !ids.over && (rows = rfs_kept_rows_new(ids.n)) && ids.n)
            memcpy(rows->ids, ids.v, ids.n * sizeof *ids.v);
        rfs_kept_writer_drop(&file);
        free(ids.v);
        if (!rc && keep)
            rfs_sizes_put_rows(sc->sizes, key.buf, &token, st->size, rows, rewrites);
    }
    rs_buf_release(&key);
    rs_search_free(q);
    return rc;
}

int rfs_search_cat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_buf *out, size_t chunk,
                   int (*flush)(void *ctx, rs_buf *out), void *ctx, rs_err *err)
{
    rs_search *q;
    int rc = rs_search_parse(&q, n->name, err);
    if (rc)
        return rc;
    answer a;
    rc = answer_open(&a, s, sc, n, q, NULL, 0, err);
    const char *p, *thread;
    size_t len;
    int64_t seq;
    while (!rc && (rc = answer_next(&a, &p, &len, &thread, &seq)) == 1) {
        rc = rs_buf_add(out, p, len);
        if (!rc && flush && out->len >= chunk)
            rc = flush(ctx, out);
    }
    answer_close(&a);
    rs_search_free(q);
    if (rc == -ENOMEM)
        rs_err_set(err, rc, "out of memory");
    return rc < 0 ? rc : 0;
}

/* What n's answer at the store's version now is kept under in the mount's sizes (key,
 * token, rewrites: as rfs_search_stat keeps it): 0, or -1 where nothing is kept. */
static int answer_key(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_buf *key,
                      rs_log_info *token, int64_t *rewrites)
{
    if (!sc->sizes || sc->denied)
        return -1;
    rfs_stat st;
    rs_err ignored = {0};
    return search_scope(s, sc, n, &st, token, &ignored) == 0 &&
                   size_key(s, sc, n, key, rewrites) == 0
               ? 0
               : -1;
}

/* The end of the last line of k's bytes that ends at or before end (0: none). */
static int64_t line_end_before(const rfs_kept_rows *k, int64_t end)
{
    char buf[4096];
    while (end > 0) {
        int64_t from = end > (int64_t)sizeof buf ? end - (int64_t)sizeof buf : 0;
        ssize_t r = rfs_kept_read_at(k, buf, (size_t)(end - from), from);
        if (r != end - from)
            return -1;
        for (int64_t i = end - from - 1; i >= 0; i--)
            if (buf[i] == '\n')
                return from + i + 1;
        end = from;
    }
    return 0;
}

/* The thread id and seq a line of k's bytes from at begins with (every answer line begins
 * {"thread_id":"T","run_id":"R", then an event's "seq":N): 0, or -1 when it does not. */
static int line_head(const rfs_kept_rows *k, int64_t at, char thread[RS_ID_MAX + 1], int64_t *seq)
{
    static const char tk[] = "{\"thread_id\":\"", sk[] = "\"seq\":";
    char head[2 * RS_ID_MAX + 64];
    ssize_t r = rfs_kept_read_at(k, head, sizeof head - 1, at);
    if (r < (ssize_t)sizeof tk || memcmp(head, tk, sizeof tk - 1) != 0)
        return -1;
    head[r] = '\0';
    const char *t = head + sizeof tk - 1, *q = strchr(t, '"');
    if (!q || q - t > RS_ID_MAX)
        return -1;
    memcpy(thread, t, (size_t)(q - t));
    thread[q - t] = '\0';
    const char *sp = strstr(q, sk);
    *seq = sp ? strtoll(sp + sizeof sk - 1, NULL, 10) : 0;
    return 0;
}

/* Where a reader of k's bytes up to end resumes if the bytes go (the store's answer then
 * read after a row, as a reader of it would): the end of the last whole piece before end
 * (an event's line; with by:run, a thread's run lines) and the row it ends with. */
static void file_resume(const rfs_kept_rows *k, int by_run, int64_t end, rfs_search_pos *pos)
{
    char thread[RS_ID_MAX + 1], next[RS_ID_MAX + 1];
    int64_t seq = 0, ignored, at = line_end_before(k, end), from = -1;
    /* by:run: a thread's lines are one piece, whole only where the next line's thread
     * differs (or the bytes end). */
    while (at > 0 && (from = line_end_before(k, at - 1)) >= 0 &&
           line_head(k, from, thread, &seq) == 0 && by_run && at < k->bytes &&
           line_head(k, at, next, &ignored) == 0 && strcmp(thread, next) == 0)
        at = from;
    pos->off = 0;
    pos->thread[0] = '\0';
    pos->seq = 0;
    if (at <= 0 || from < 0 || line_head(k, from, thread, &seq) != 0)
        return;
    pos->off = at;
    memcpy(pos->thread, thread, sizeof thread);
    pos->seq = by_run ? INT64_MAX : seq;
}

int rfs_search_read(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_search_pos *pos,
                    int64_t off, size_t size, rs_buf *out, rs_err *err)
{
    if (off < pos->off)
        *pos = (rfs_search_pos){0};
    /* The query is parsed again at each read: a parsed one keeps a scratch buffer as long as
     * the longest row it matched, which 10,000 open handles would each hold. */
    rs_search *q;
    int rc = rs_search_parse(&q, n->name, err);
    if (rc)
        return rc;
    /* Each read searches again from where the last stopped: the store gives the first rows
     * as it finds them (a reader that stops after them waits for no more). */
    rs_search_set_streamed(q, 1);
    /* The answer a stat counted at this version, where the mount keeps it: its bytes read
     * at any offset, or its rows read from where this reader is in them (its last read was
     * of them), with no match. */
    rs_buf key = RS_BUF_INIT;
    rs_log_info token;
    int64_t rewrites = 0;
    int keyed = answer_key(s, sc, n, &key, &token, &rewrites) == 0;
    int64_t size_kept;
    /* At or past the end of an answer whose size is kept (a reader's read after its last
     * bytes): nothing to search. */
    if (keyed && rfs_sizes_get(sc->sizes, key.buf, &token, &size_kept) && off >= size_kept) {
        rs_search_free(q);
        rs_buf_release(&key);
        return 0;
    }
    rfs_kept_rows *rows = keyed ? rfs_sizes_rows(sc->sizes, key.buf, &token) : NULL;
    /* Every byte this reader has is of the answer at this version: bytes kept of it are
     * the same bytes. */
    int same = pos->one_version && rewrites == pos->rewrites &&
               rfs_sizes_same_token(&token, &pos->token);
    /* A reader past SEARCH_COUNT_AT of an answer nothing counted is likely reading it all
     * (dd): counted once, its bytes kept, it is read from them. */
    int counted = 0;
    if (keyed && !rows && same && off >= SEARCH_COUNT_AT) {
        rfs_stat st;
        rs_err ignored = {0};
        if (rfs_search_stat(s, sc, n, &st, 2, &ignored) == 0)
            rows = rfs_sizes_rows(sc->sizes, key.buf, &token);
        counted = rows != NULL;
    }
    /* Kept bytes serve a reader that starts on them, read these same ones last, or read
     * this version's: one that read other bytes (the store's at another version, or an
     * earlier answer's) reads on after its row. */
    int fresh = (!pos->in_file && pos->off == 0 && !pos->thread[0]) || same;
    if (rows && rows->fd >= 0 && (fresh || (pos->in_file && pos->rows_gen == rows->gen))) {
        size_t had = out->len;
        rc = rfs_kept_pread(rows, off, size, out);
        if (!rc)
            file_resume(rows, rs_search_by_run(q), off + (int64_t)(out->len - had), pos);
        pos->in_file = 1;
        pos->rows_gen = rows->gen;
        pos->from = counted ? RFS_SEARCH_FROM_COUNTED : RFS_SEARCH_FROM_FILE;
        pos->one_version = 0;
        rfs_sizes_rows_done(sc->sizes, rows);
        rs_search_free(q);
        rs_buf_release(&key);
        return rc ? rs_err_set(err, rc, "cannot read the kept answer") : 0;
    }
    if (rows && rows->fd >= 0) {
        rfs_sizes_rows_done(sc->sizes, rows);
        rows = NULL;
    }
    /* The kept bytes are gone: the answer read after the last whole piece given, skipping
     * to off. */
    if (pos->in_file) {
        pos->in_file = 0;
        pos->rows_gen = 0;
    }
    size_t start = 0;
    if (rows && pos->off > 0 && (pos->rows_gen != rows->gen || pos->rows_at > rows->n)) {
        rfs_sizes_rows_done(sc->sizes, rows);
        rows = NULL;
    } else if (rows && pos->off > 0) {
        start = pos->rows_at;
    }
    pos->from = rows ? RFS_SEARCH_FROM_KEPT : RFS_SEARCH_FROM_SEARCH;
    /* The size a reader learns is kept only when all its pieces were searched at the version
     * it is kept under: a piece of another version (rows appended or rewritten between two
     * reads) makes the sum no version's size. */
    if (!rows && pos->off == 0 && !pos->thread[0]) {
        pos->one_version = keyed;
        pos->token = token;
        pos->rewrites = rewrites;
    } else if (rows || !keyed || rewrites != pos->rewrites ||
               !rfs_sizes_same_token(&token, &pos->token)) {
        pos->one_version = 0;
    }
    answer a;
    rc = rows ? answer_rows_open(&a, s, q, rows, start, err)
              : answer_open(&a, s, sc, n, q, pos->thread[0] ? pos->thread : NULL, pos->seq, err);
    if (rc) {
        answer_close(&a);
        if (rows)
            rfs_sizes_rows_done(sc->sizes, rows);
        rs_search_free(q);
        rs_buf_release(&key);
        return rc;
    }
    int64_t end = off + (int64_t)size, seq;
    const char *p, *thread;
    size_t len;
    int ended = 0;
    while (pos->off < end) {
        if ((rc = answer_next(&a, &p, &len, &thread, &seq)) != 1) {
            ended = rc == 0;
            break;
        }
        int64_t piece_end = pos->off + (int64_t)len;
        if (piece_end > off) {
            int64_t from = off > pos->off ? off : pos->off, to = piece_end < end ? piece_end : end;
            if ((rc = rs_buf_add(out, p + (from - pos->off), (size_t)(to - from))))
                break;
        }
        /* A piece given in part is rendered again by the next read: nothing is held. */
        if (piece_end > end)
            break;
        pos->off = piece_end;
        pos->seq = seq;
        /* A record's thread id is a valid id: it fits. */
        (void)rs_fmt(pos->thread, sizeof pos->thread, "%s", thread);
        pos->rows_gen = rows ? rows->gen : 0;
        pos->rows_at = start + answer_rows(&a);
    }
    answer_close(&a);
    if (rows)
        rfs_sizes_rows_done(sc->sizes, rows);
    rs_search_free(q);
    /* The whole answer at one version was counted as it was read: the stat after this
     * read (ls -l after cat) counts nothing. */
    if (ended && pos->one_version)
        rfs_sizes_put(sc->sizes, key.buf, &token, pos->off);
    rs_buf_release(&key);
    if (rc == -ENOMEM)
        rs_err_set(err, rc, "out of memory");
    return rc < 0 ? rc : 0;
}
