/* view.c — node contents from the store: logs by byte offset, views as seq-ordered streams,
 * small documents rendered whole. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SHA-256's own functions, as stepdiff.c uses them (its note says why not EVP's). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "changes.h"
#include "docs.h"
#include "glance_views.h"
#include "otel.h"
#include "search_view.h"
#include "evidence.h"
#include "sizes.h"
#include "stepdiff.h"
#include "transcript.h"
#include "view.h"
#include "rs_util.h"

static const char readme_text[] =
    "runfs: a run event store as files. Every listed file has an exact size and reads in\n"
    "full (cp -r, rsync, tar and grep -r work); names marked (lookup) open by name and are\n"
    "never listed.\n"
    "\n"
    "  README                     this text\n"
    "  contract.json              the event contract appends are checked against\n"
    "  .runfs/status.json         backend, database, version, counts, mount options\n"
    "  .runfs/rejects.jsonl       your last refused writes and why (grows: tail -f it)\n"
    "  changes.jsonl              every run once, at its latest change, in change order\n"
    "  changes/since/N            (lookup) runs changed after change N: loop on the last N\n"
    "  changes/follow/N           (lookup) the same, then each change as it commits\n"
    "  expired.jsonl              runs removed by retention: what their seals said, when\n"
    "  search/QUERY               (lookup) events of every thread matching QUERY: words\n"
    "                             all found in content or metadata (ASCII case ignored),\n"
    "                             \"a phrase\", type:X, type:X*, category:X, -word excludes\n"
    "  threads/T/events.jsonl     every event of thread T, seq order (read-only)\n"
    "  threads/T/messages.jsonl   its message events\n"
    "  threads/T/history.jsonl    what a chat UI shows of it\n"
    "  threads/T/transcript.md    the conversation for people: runs, messages, tool calls\n"
    "  threads/T/message-count    the number of messages\n"
    "  threads/T/seq              the high-water mark (the last seq given out)\n"
    "  threads/T/since/SEQ        (lookup) events after SEQ\n"
    "  threads/T/follow.jsonl     (lookup) live feed of the thread\n"
    "  threads/T/message-seqs/ID  (lookup) seq of message:ID or tool:ID\n"
    "  threads/T/ai-runs/ID       (lookup) the run of the latest AI message ID\n"
    "  threads/T/search/QUERY     (lookup) the thread's matching events (runs/R/search too)\n"
    "  threads/T/stats.json       the thread at a glance: its runs' stats.json summed\n"
    "  threads/T/runs/R/events.jsonl     the run's events; append to add one\n"
    "  threads/T/runs/R/messages.jsonl   the run's message events\n"
    "  threads/T/runs/R/once/TYPE        singleton events (create exclusively)\n"
    "  threads/T/runs/R/types/TYPE.jsonl the run's events of one type\n"
    "  threads/T/runs/R/tasks/ID.jsonl   events of subagent task ID\n"
    "  threads/T/runs/R/since/SEQ        (lookup) the run's events after SEQ\n"
    "  threads/T/runs/R/last-visible-ai-seq     seq of the last AI message a user sees\n"
    "  threads/T/runs/R/workspace-changes.json  the latest workspace changes\n"
    "  threads/T/runs/R/receipt.json     evidence receipt: upper seq, count, terminal\n"
    "  threads/T/runs/R/seal.json        the seal; create it exclusively to seal the run\n"
    "  threads/T/runs/R/seal.note        the seal signed (a mount with --seal-key)\n"
    "  threads/T/runs/R/proofs/SEQ       (lookup) an event's Merkle proof to the seal's root\n"
    "  threads/T/runs/R/follow.jsonl     (lookup) live feed until run.terminal\n"
    "  threads/T/runs/R/stats.json       counts, duration, tokens, tools, gaps\n"
    "  threads/T/runs/R/timeline.svg     the run drawn over time (open it in a browser)\n"
    "  threads/T/runs/R/otel.json        the run as OpenTelemetry traces (OTLP/JSON)\n"
    "  threads/T/runs/R/diff/R2          (lookup) the run's steps against run R2's, as a\n"
    "                                    unified diff (patch and review tools read it)\n"
    "  threads/T/runs/R/otel/N.json      the same in parts a collector takes (otel/count)\n"
    "  threads/T/runs/R/timeline/N.svg   a big run's timeline, a window each (timeline/count)\n"
    "  threads/T/runs/R/redactions.jsonl the run's redactions (append one with --allow-redact)\n"
    "  threads/T/runs/R/report.html      the run for people: open it in a browser\n"
    "  threads/T/report.html             the thread's runs, each linked\n"
    "\n"
    "Append:  mkdir -p threads/T/runs/R\n"
    "         echo '{\"event_type\":\"run.start\",\"content\":{\"chain\":\"x\"},"
    "\"metadata\":{\"caller\":\"lead_agent\"}}' >> threads/T/runs/R/events.jsonl\n"
    "         One write() is one transaction: its complete lines commit together or not\n"
    "         at all. The log asks for 1 MiB writes (stat %o): cat writes that much, and a\n"
    "         buffered writer (Python's open()) flushes to commit a line on its own.\n"
    "Outcome: set -C; echo '{\"content\":{\"status\":\"success\"},\"metadata\":"
    "{\"protocol_version\":1,\"recovered\":false}}' > threads/T/runs/R/once/run.terminal\n"
    "Receipt: exec 3<>events.jsonl; echo \"$line\" >&3; head -n 1 <&3   (the stored record)\n"
    "Seal:    set -C; : > threads/T/runs/R/seal.json   (close() says EINVAL when nothing\n"
    "         seals: no valid run.terminal; or write {\"state\":\"partial\",\"error\":\"why\"})\n"
    "Retries: a line's \"idempotency_key\":\"K\" (1-128 printable ASCII) stores it once per\n"
    "         thread; resending it confirms the original record, another event under K is EEXIST.\n"
    "Refused writes: errno plus a reason in .runfs/rejects.jsonl. Manual: man runfs.\n"
    "Permissions: ls -l shows who may write, and the kernel holds to it.\n"
    "The store (.runfs/status.json) may be a PostgreSQL database that mounts on other hosts\n"
    "share: their appends show up here as they commit.\n";

/* A reader keeps at most this many stretches of given bytes (each a SHA-256 state, about 120
 * bytes): a reader that jumps about more than that (no tool does: tail, a seek, readahead out
 * of order make a few) gets ESTALE at any rewrite of the store, as it cannot tell whether its
 * bytes changed. */
#define SENT_RANGES 64

typedef struct sent_range {
    int64_t off, end; /* [off, end) given */
    SHA256_CTX sha;   /* their hash */
} sent_range;

struct rfs_reader {
    const rfs_node *node; /* the opener's: it outlives the reader */
    rfs_scope scope;
    rfs_shape shape;
    int64_t mtime_ns;           /* the file's last change when it was opened */
    int64_t version;            /* rfs_stat's version at open */
    int64_t size;               /* a log's or document's size at open; else -1 */
    rfs_doc *doc;               /* RFS_SHAPE_DOC: the whole document, shared by content */
    int64_t next_off;           /* streams: file offset of pending.buf[0] */
    int64_t last_seq;           /* streams: seq of the last row rendered into pending */
    rs_buf pending;             /* streams: rendered bytes from next_off on */
    size_t behind;              /* streams: bytes kept before the last read's offset */
    rfs_transcript *transcript; /* transcript.md: the rendering state */
    int finished;               /* transcript.md: its end was rendered */
    rs_store *store;            /* the store of the read in progress */
    rs_history *history;        /* history.jsonl: its hidden runs, computed once per pass */
    rfs_otel *otel;             /* otel.json: the rendering state */
    rfs_otel_marks *marks;      /* otel.json: kept positions (the mount's, or its own) */
    int64_t mark_at;            /* otel.json: the offset of the next mark due */
    int marks_looked;           /* otel.json: marks was looked for */
    rfs_search_pos search;      /* search/<query>: where the reads are */
    int unkept;                 /* streams: no bytes kept of its version (sizes.h) */
    int64_t ahead;              /* search: bytes of search_ahead_left its pending holds */
    int64_t rewrites;           /* the sizes table's rewrites count its held bytes are of */
    int served;                 /* bytes were read: a document changed under it is stale */
    /* Streams and search results: the bytes given with nothing of their rendering held (a
     * stream's from the bytes a stat kept, a search result's from anywhere), hashed as
     * stretches (a read continuing one extends it), so that a rewrite can tell whether the
     * file still has them where they were given. A stream's bytes it rendered itself are not
     * hashed (nor are a log's, read_log): what it holds of its rendering is past them and
     * tells nothing of them, so a rewrite of its thread fails its reads. */
    sent_range *sent; /* nsent of them, at most SENT_RANGES */
    size_t nsent, sent_cap;
    /* A stretch went unhashed (rendered by the reader, past SENT_RANGES, or out of memory) */
    int sent_over;
    int gave;         /* streams and search results: bytes were given */
    int64_t gave_end; /* ... and where the last read's ended */
    int kept_last;    /* streams: kept_read served the read in progress */
    int stale;        /* rows it was rendered from changed under it: reads fail */
    /* Logs and streams of a thread: the store's rewrites count read at a moment after every
     * byte given so far was read (first at the open), by which the thread's own count
     * (rs_store_thread_rewrites) had not passed it; -1: not known. */
    int64_t base;
    int64_t given_to; /* logs and streams: [0, given_to) was all given by this reader */
    /* Views whose earlier bytes an append may change (grows_back): the view's version its
     * given bytes were last found to be of (at first, the open's). */
    int64_t checked;
    int direct; /* rfs_reader_direct: no byte its caller got came from the kernel's cache */
};

/* A search reopens its cursor at each read (the store's connection is the read's only), and
 * each reopening runs the query again, so a reader renders up to SEARCH_AHEAD bytes past a
 * read and serves the next reads from them: one query per SEARCH_AHEAD bytes however small
 * the reads (wc reads 16 KiB). Those bytes are held only while search_ahead_left, shared by
 * every reader of the process, lasts: 10,000 open handles hold their places, not their
 * answers, and past the budget a reader renders each read alone. A reader near the start
 * renders ahead as much as it has read, from SEARCH_AHEAD_MIN on: one that stops after the
 * first lines (head -c 64K) waits for no megabyte it never reads. */
#define SEARCH_AHEAD ((int64_t)1 << 20)
#define SEARCH_AHEAD_MIN ((int64_t)64 << 10)
#define SEARCH_AHEAD_BUDGET ((int64_t)8 << 20)
static _Atomic int64_t search_ahead_left = SEARCH_AHEAD_BUDGET; /* atomic: no lock */

static int64_t ahead_take(int64_t want)
{
    int64_t left = atomic_load(&search_ahead_left);
    while (left > 0) {
        int64_t got = left < want ? left : want;
        if (atomic_compare_exchange_weak(&search_ahead_left, &left, left - got))
            return got;
    }
    return 0;
}

/* The reader's charge is what its pending holds allocated: taken from the budget, or given
 * back, to match (the budget may go below 0 by a read's own bytes, then no reader gets any
 * until they are given back). */
static void ahead_settle(rfs_reader *r)
{
    if (r->pending.len == 0)
        rs_buf_release(&r->pending);
    int64_t held = (int64_t)r->pending.alloc;
    if (held != r->ahead) {
        atomic_fetch_sub(&search_ahead_left, held - r->ahead);
        r->ahead = held;
    }
}

/* The rewrites count as the store has it now, told to the sizes table (which hears of another
 * process's rewrite only at the hub's next tick), or the table's when the store cannot say. */
static int64_t rewrites_now(rfs_reader *r, rs_store *s)
{
    int64_t now = 0;
    if (rs_store_rewrites(s, &now) == 0)
        rfs_sizes_rewrites(r->scope.sizes, now);
    return rfs_sizes_rewrites_seen(r->scope.sizes);
}

static int reader_rewritten(rfs_reader *r, rs_store *s, rs_err *err);

/* A search result's bytes [off, off + size): from what the reader holds, then rendered from
 * its place in the answer, with what the budget allows beyond them kept for the next reads. */
static int read_search(rfs_reader *r, rs_store *s, int64_t off, size_t size, rs_buf *out,
                       rs_err *err)
{
    size_t taken = 0;
    r->search.from = RFS_SEARCH_FROM_NONE;
    for (int looked = 0;; looked = 1) {
        int64_t at_off = off + (int64_t)taken;
        if (at_off >= r->next_off && at_off - r->next_off < (int64_t)r->pending.len) {
            size_t at = (size_t)(at_off - r->next_off), have = r->pending.len - at;
            size_t take = have < size - taken ? have : size - taken;
            int rc = rs_buf_add(out, r->pending.buf + at, take);
            if (rc)
                return rc;
            rs_buf_remove_front(&r->pending, at + take);
            taken += take;
            r->next_off = off + (int64_t)taken;
        } else {
            rs_buf_reset(&r->pending);
        }
        ahead_settle(r);
        if (taken == size || r->pending.len)
            return 0;
        /* A read where the last one did not end finds its place by offset, from the start
         * of the answer or skipping along it: a reader that gave bytes first looks for
         * another process's rewrite the table has not heard of, and compares what it gave
         * (one reading on goes on after its last row, and costs no query more). */
        if (looked || !r->gave || off == r->gave_end || !r->scope.sizes ||
            rewrites_now(r, s) == r->rewrites)
            break;
        int rc = reader_rewritten(r, s, err);
        if (rc)
            return rc;
    }
    int64_t from = off + (int64_t)taken;
    /* The answer's bytes kept by the mount are read as asked, with nothing held ahead. */
    if (r->search.in_file)
        return rfs_search_read(s, &r->scope, r->node, &r->search, from, size - taken, out, err);
    int64_t grant = ahead_take(from < SEARCH_AHEAD_MIN ? SEARCH_AHEAD_MIN
                               : from < SEARCH_AHEAD   ? from
                                                       : SEARCH_AHEAD);
    size_t want = size - taken + (size_t)grant;
    r->ahead += grant;
    int rc = rs_buf_grow(&r->pending, want);
    if (!rc)
        rc = rfs_search_read(s, &r->scope, r->node, &r->search, from, want, &r->pending, err);
    size_t give = r->pending.len < size - taken ? r->pending.len : size - taken;
    if (!rc)
        rc = rs_buf_add(out, r->pending.buf, give);
    if (rc)
        rs_buf_reset(&r->pending);
    else
        rs_buf_remove_front(&r->pending, give);
    r->next_off = from + (int64_t)give;
    ahead_settle(r);
    return rc;
}

static int thread_visible(const rfs_scope *sc, const char *thread_id)
{
    return !sc->only_thread || strcmp(sc->only_thread, thread_id) == 0;
}

static int put_number(rs_buf *out, int64_t v)
{
    return rs_buf_addf(out, "%lld\n", (long long)v);
}

/* The counts are the caller's: what its owner and the mount's thread let it see (store
 * totals would say how much other owners have). */
static int render_status(rs_store *s, const rfs_scope *sc, rs_buf *out, rs_err *err)
{
    rs_stats st;
    int rc = rs_store_stats(s, sc->user, sc->only_thread, &st, err);
    if (rc)
        return rc;
    /* A scoped or one-thread mount is for people and sandboxes who need not learn the
     * host's paths. */
    const char *db = sc->user || sc->only_thread ? rs_store_name(s) : rs_store_path(s);
    if ((rc = rs_buf_addlit(out, "{\"backend\":")) ||
        (rc = rs_buf_add_json_string(out, rs_store_backend(s), strlen(rs_store_backend(s)))) ||
        (rc = rs_buf_addlit(out, ",\"database\":")) ||
        (rc = rs_buf_add_json_string(out, db, strlen(db))) ||
        (rc = rs_buf_addf(out, ",\"version\":\"%s\",\"threads\":%lld,\"runs\":%lld,\"events\":%lld",
                          RS_VERSION, (long long)st.threads, (long long)st.runs,
                          (long long)st.events)) ||
        (sc->status_extra && (rc = sc->status_extra(sc->ctx, out))))
        return rc;
    return rs_buf_addlit(out, "}\n");
}

/* The earliest stored event of a type in the run (once/<type>). */
static int render_once(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_buf *out,
                       rs_err *err)
{
    const char *types[] = {n->name};
    rs_query q = RS_QUERY_INIT;
    q.thread_id = n->thread_id;
    q.run_id = n->run_id;
    q.user = sc->user;
    q.event_types = types;
    q.n_event_types = 1;
    q.limit = 1;
    rs_cursor *c;
    int rc = rs_store_query(s, &q, &c, err);
    if (rc)
        return rc;
    const rs_record *rec;
    rc = rs_cursor_next(c, &rec);
    if (rc == 1)
        rc = rs_buf_add(out, rec->line, rec->line_len);
    else if (rc == 0)
        rc = -ENOENT;
    rs_cursor_free(c);
    return rc;
}

static int render_doc(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_buf *out, rs_err *err)
{
    rs_target t = {.thread_id = n->thread_id, .run_id = n->run_id, .user = sc->user};
    int64_t v = 0;
    int rc;
    switch (n->kind) {
    case RFS_README: return rs_buf_addstr(out, readme_text);
    case RFS_CONTRACT: {
        size_t len;
        const char *text = rs_store_contract_text(s, &len);
        return rs_buf_add(out, text, len);
    }
    case RFS_STATUS: return render_status(s, sc, out, err);
    case RFS_CHANGES:
    case RFS_CHANGES_SINCE:
        return rfs_changes_render(s, sc->user, sc->only_thread, n->num, out, NULL, err);
    case RFS_EXPIRED: return rs_store_expired(s, sc->user, sc->only_thread, out, err);
    case RFS_T_COUNT:
        rc = rs_store_count_messages(s, n->thread_id, sc->user, &v, err);
        return rc ? rc : put_number(out, v);
    case RFS_T_SEQ: {
        rs_log_info info;
        rc = rs_store_log_info(s, n->thread_id, NULL, sc->user, &info, err);
        return rc ? rc : put_number(out, info.hwm);
    }
    case RFS_T_MSGSEQ:
        rc = rs_store_message_seq(s, n->thread_id, sc->user, n->name, &v, err);
        return rc ? rc : put_number(out, v);
    case RFS_T_AIRUN:
        rc = rs_store_latest_ai_run(s, n->thread_id, sc->user, n->name, out, err);
        return rc ? rc : rs_buf_addch(out, '\n');
    case RFS_R_ONCE: return render_once(s, sc, n, out, err);
    case RFS_R_LASTAI:
        rc = rs_store_last_visible_ai_seq(s, &t, &v, err);
        return rc ? rc : put_number(out, v);
    case RFS_R_WORKSPACE: return rs_store_workspace_changes(s, &t, out, err);
    case RFS_R_RECEIPT: return rs_store_receipt(s, &t, out, err);
    case RFS_R_SEAL: return rs_store_seal_read(s, &t, out, err);
    case RFS_R_REDACTIONS: return rs_store_redactions(s, &t, out, err);
    case RFS_T_STATS:
    case RFS_T_REPORT:
    case RFS_R_STATS:
    case RFS_R_TIMELINE:
    case RFS_R_REPORT:
    case RFS_R_TL_WIN:
    case RFS_R_OTEL_PART:
        return rfs_glance_render(s, n->kind, n->num, sc->service_name, &t, out, err);
    case RFS_R_NOTE:
    case RFS_R_PROOF: return rfs_evidence_render(s, &t, n, out, err);
    case RFS_R_DIFF: {
        rs_target b = {.thread_id = n->thread_id, .run_id = n->name, .user = sc->user};
        /* The runs' step data is kept on this connection: its commit moves the data version
         * the hub watches, as this mount's appends do. */
        return rfs_stepdiff_render(s, NULL, &t, &b, out, err);
    }
    default: return -EISDIR;
    }
}

static rfs_shape shape_of(rfs_kind k)
{
    if (rfs_node_is_dir(k))
        return RFS_SHAPE_DIR;
    switch (k) {
    case RFS_T_EVENTS:
    case RFS_R_EVENTS: return RFS_SHAPE_LOG;
    case RFS_T_MESSAGES:
    case RFS_T_HISTORY:
    case RFS_T_SINCE:
    case RFS_R_MESSAGES:
    case RFS_R_TYPE:
    case RFS_R_TASK:
    case RFS_R_SINCE:
    case RFS_R_OTEL:
    case RFS_T_TRANSCRIPT: return RFS_SHAPE_STREAM;
    case RFS_T_FOLLOW:
    case RFS_R_FOLLOW:
    case RFS_CHANGES_FOLLOW: return RFS_SHAPE_FOLLOW;
    default: return RFS_SHAPE_DOC;
    }
}

/* Open the stream of node n from the rows after after_seq (or, newest, its last limit rows
 * below before_seq). history: the reader's hidden runs (NULL: computed for this cursor
 * alone). */
static int stream_query(rs_store *s, const rfs_scope *sc, const rfs_node *n, int64_t after_seq,
                        int64_t limit, int64_t before_seq, int newest, const rs_history *history,
                        rs_cursor **out, rs_err *err)
{
    const char *types[] = {n->name};
    rs_query q = RS_QUERY_INIT;
    q.thread_id = n->thread_id;
    q.user = sc->user;
    q.after_seq = after_seq;
    q.limit = limit;
    q.before_seq = before_seq;
    q.newest = newest;
    switch (n->kind) {
    case RFS_T_HISTORY:
        if (history && newest)
            return rs_history_newest(s, history, before_seq, limit, out, err);
        if (history)
            return rs_history_query(s, history, after_seq, out, err);
        return rs_store_history(s, n->thread_id, sc->user, after_seq, out, err);
    case RFS_T_MESSAGES: q.messages_only = 1; break;
    case RFS_R_MESSAGES:
        q.messages_only = 1;
        q.run_id = n->run_id;
        break;
    case RFS_R_TYPE:
        q.run_id = n->run_id;
        q.event_types = types;
        q.n_event_types = 1;
        break;
    case RFS_R_TASK:
        q.run_id = n->run_id;
        q.task_id = n->name;
        break;
    case RFS_T_SINCE: q.after_seq = n->num > after_seq ? n->num : after_seq; break;
    case RFS_R_SINCE:
        q.run_id = n->run_id;
        q.after_seq = n->num > after_seq ? n->num : after_seq;
        break;
    case RFS_R_EVENTS:
    case RFS_R_OTEL:
    case RFS_R_FOLLOW: q.run_id = n->run_id; break;
    case RFS_T_EVENTS:
    case RFS_T_FOLLOW:
    case RFS_T_TRANSCRIPT: break;
    default: return -EINVAL;
    }
    return rs_store_query(s, &q, out, err);
}

static int stream_open(rs_store *s, const rfs_scope *sc, const rfs_node *n, int64_t after_seq,
                       int64_t limit, const rs_history *history, rs_cursor **out, rs_err *err)
{
    return stream_query(s, sc, n, after_seq, limit, 0, 0, history, out, err);
}

/* How a stat may learn a rendered view's size (rfs_view_stat_ex). */
typedef struct sizing {
    int lazy;
    rfs_bytes_fn bytes;
    void *ctx;
} sizing;

static int stream_size(rs_store *s, const rfs_scope *sc, const rfs_node *n, const sizing *how,
                       rfs_kept_writer *keep, rs_buf *state, int64_t *size, int64_t *last,
                       rs_err *err);

int rfs_view_kernel_keeps(rfs_kind kind)
{
    return kind == RFS_T_HISTORY || kind == RFS_T_TRANSCRIPT || kind == RFS_R_OTEL;
}

/* Every field of the log info, hashed (FNV-1a): equal info, equal version. */
int64_t rfs_view_version(const rs_log_info *info)
{
    const int64_t v[] = {info->exists, info->exact,         info->size,
                         info->count,  info->message_count, info->last_seq,
                         info->hwm,    info->mtime_ns,      info->ctime_ns};
    return (int64_t)(rs_hash(RS_HASH_INIT, v, sizeof v) >> 1);
}

/* The key of a node's size in scope->sizes: the node and the owner looking. */
static int size_key(const rfs_scope *sc, const rfs_node *n, rs_buf *key)
{
    int rc = rfs_node_path(n, key);
    rc = rc ? rc : rs_buf_addch(key, '\n');
    if (!rc && sc->user)
        rc = rs_buf_addstr(key, sc->user);
    /* A store keeps sizes across upgrades: a view whose bytes a release changed names its
     * format, so the size an older runfs kept is not taken for the new bytes'. otel's bytes
     * name the service too. */
    if (!rc && n->kind == RFS_R_TIMELINE)
        rc = rs_buf_addlit(key, "\nformat 2");
    if (rc || (n->kind != RFS_R_OTEL && n->kind != RFS_R_OTEL_PART))
        return rc;
    rc = rs_buf_addlit(key, "\nformat 3\n");
    return rc ? rc : rs_buf_addstr(key, sc->service_name ? sc->service_name : "runfs");
}

/* A kept size's names: the store's (view: the node and owner, without what changes; token:
 * the rows as info and the rewrites count say) and the mount's (key, which gets the
 * rewrites count too, as an in-place update by another writer leaves info alone). */
typedef struct kept {
    uint64_t view, token;
    int64_t rewrites; /* the store's count the names are of */
    int stored;       /* view and token hold */
} kept;

/* kept_names at the rewrites count the caller read. */
static int kept_names_at(rs_buf *key, const rs_log_info *info, int64_t rewrites, kept *k)
{
    k->rewrites = rewrites;
    k->view = rs_hash(RS_HASH_INIT, key->buf, key->len);
    int64_t v[2] = {rfs_view_version(info), rewrites};
    k->token = rs_hash(RS_HASH_INIT, v, sizeof v);
    /* "\n%lld" by hand: an import names thousands of sizes. */
    char digits[24], *p = digits + sizeof digits;
    uint64_t u = rewrites < 0 ? -(uint64_t)rewrites : (uint64_t)rewrites;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (rewrites < 0)
        *--p = '-';
    *--p = '\n';
    return rs_buf_add(key, p, (size_t)(digits + sizeof digits - p));
}

static int kept_names(rs_store *s, rs_buf *key, const rs_log_info *info, kept *k)
{
    int64_t rewrites = 0;
    k->stored = rs_store_rewrites(s, &rewrites) == 0;
    return kept_names_at(key, info, rewrites, k);
}

/* 1 with *size when the mount or the store kept it (the store's is kept by the mount too). */
static int kept_get(rs_store *s, const rfs_scope *sc, const rs_buf *key, const rs_log_info *info,
                    const kept *k, int64_t *size)
{
    if (sc->sizes && rfs_sizes_get(sc->sizes, key->buf, info, size))
        return 1;
    if (!k->stored || !rs_store_size_get(s, k->view, k->token, size))
        return 0;
    if (sc->sizes)
        rfs_sizes_put(sc->sizes, key->buf, info, *size);
    return 1;
}

/* A scope's keep_size that keeps nothing (the sizes are in the store already). */
static int keep_none(void *ctx, uint64_t view, uint64_t token, int64_t size)
{
    (void)ctx;
    (void)view;
    (void)token;
    (void)size;
    return 0;
}

/* Kept in the store best effort: a read-only store or a busy one renders again next time. */
static void kept_put(rs_store *s, const rfs_scope *sc, const kept *k, int64_t size)
{
    if (k->stored && (!sc->keep_size || sc->keep_size(sc->ctx, k->view, k->token, size)))
        (void)rs_store_size_put(s, k->view, k->token, size);
}

/* The views whose bytes are their rows' lines, each row's line the same whatever came before
 * or after it: the size at an earlier state of the log plus the lines of the rows added since
 * is the size now. */
static int catch_up_kind(rfs_kind k)
{
    return k == RFS_R_TYPE || k == RFS_R_TASK || k == RFS_R_MESSAGES || k == RFS_T_MESSAGES;
}

/* c's rows counted: how many, their lines' bytes and the highest seq (left when none). */
static int sum_rows(rs_cursor *c, int64_t *count, int64_t *bytes, int64_t *last)
{
    const rs_record *rec;
    int rc;
    while ((rc = rs_cursor_next(c, &rec)) == 1) {
        (*count)++;
        *bytes += (int64_t)rec->line_len;
        *last = rec->seq;
    }
    rs_cursor_free(c);
    return rc;
}

/* 1 when n's log is still as info and the rewrites count as k say, else 0. */
static int unchanged(rs_store *s, const rfs_scope *sc, const rfs_node *n, const rs_log_info *info,
                     const kept *k, rs_err *err)
{
    rs_log_info now;
    int64_t rewrites = 0;
    int in_run = n->kind >= RFS_RUN && n->kind != RFS_T_SEARCH_DIR; /* as view_stat says */
    int rc = rs_store_log_info(s, n->thread_id, in_run ? n->run_id : NULL, sc->user, &now, err);
    if (rc)
        return rc;
    return rfs_view_version(&now) == rfs_view_version(info) &&
           rs_store_rewrites(s, &rewrites) == 0 && rewrites == k->rewrites;
}

/* n's size at info from the size this mount kept at an earlier state of its log under the
 * same rewrites count (key names it: a row changed or deleted since leaves nothing to catch
 * up from), and the lines of the view's rows added since, so no stat after an append renders
 * the view whole. 1 with *size set; 0 when nothing is kept or the rows after the kept point do
 * not account for the whole change (a row added below it, an owner's share of a shared log,
 * a rewrite while counting): the caller renders the view as before. */
static int catch_up(rs_store *s, const rfs_scope *sc, const rfs_node *n, const rs_buf *key,
                    const rs_log_info *info, const kept *k, int64_t *size, rs_err *err)
{
    rs_log_info base;
    int64_t base_size;
    if (!sc->sizes || !k->stored || !catch_up_kind(n->kind) ||
        !rfs_sizes_get_base(sc->sizes, key->buf, &base, &base_size))
        return 0;
    if (!base.exists || !base.exact || !info->exact || base.last_seq > info->last_seq ||
        base.count > info->count || base.size > info->size)
        return 0;
    rs_query q = RS_QUERY_INIT;
    q.thread_id = n->thread_id;
    q.run_id = n->kind == RFS_T_MESSAGES ? NULL : n->run_id;
    q.user = sc->user;
    q.after_seq = base.last_seq;
    int64_t count = 0, bytes = 0, last = base.last_seq, lines = 0, view = 0, view_last = 0;
    rs_cursor *c;
    int rc = rs_store_query(s, &q, &c, err);
    rc = rc ? rc : sum_rows(c, &count, &bytes, &last);
    /* The view's rows up to info's last seq only: the two queries are two statements, and a
     * row committed between them (PostgreSQL reads each in its own snapshot) would be counted
     * in the view and not in the log, a size too large kept under info's token. */
    rc = rc ? rc : stream_query(s, sc, n, base.last_seq, 0, info->last_seq + 1, 0, NULL, &c, err);
    rc = rc ? rc : sum_rows(c, &lines, &view, &view_last);
    if (rc)
        return rc;
    /* Every row the log gained is past the kept point, and nothing was rewritten since the
     * key's count was read (a delete and an insert could leave the totals as they were). */
    int64_t rewrites = 0;
    if (base.count + count != info->count || base.size + bytes != info->size ||
        last != info->last_seq || rs_store_rewrites(s, &rewrites) || rewrites != k->rewrites)
        return 0;
    *size = base_size + view;
    return 1;
}

/* The kept names of run view kind of n's run (num: its window, for timeline/): key
 * (emptied first) and k. */
static int run_view_names(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_kind kind,
                          int64_t num, const rs_log_info *info, rs_buf *key, kept *k, rs_err *err)
{
    rfs_node v = *n;
    v.kind = kind;
    v.num = num;
    v.name[0] = '\0';
    rs_target t = {.thread_id = n->thread_id, .run_id = n->run_id, .user = sc->user};
    rs_buf_reset(key);
    int rc = size_key(sc, &v, key);
    if (!rc && rfs_glance_kind(kind))
        rc = rfs_glance_key(s, kind, &t, key, err);
    return rc ? rc : kept_names(s, key, info, k);
}

/* The bytes w holds kept beside key's size when they are all size bytes (sizes.h: a memfd,
 * bounded, dropped at the view's next version or any rewrite), so the open and read after
 * the stat that sized the view (grep -r, tar) render nothing; else only the size. */
static void keep_bytes(const rfs_scope *sc, const char *key, const rs_log_info *info, const kept *k,
                       rfs_kept_writer *w, int64_t size)
{
    rfs_kept_rows *bytes = k->stored ? rfs_kept_writer_finish(w, size) : NULL;
    if (!bytes) {
        rfs_sizes_put(sc->sizes, key, info, size);
        return;
    }
    /* Kept bytes of an older rewrites count go first (they may hold what a redaction
     * erased); these are of the count their key names. */
    rfs_sizes_rewrites(sc->sizes, k->rewrites);
    rfs_sizes_put_rows(sc->sizes, key, info, size, bytes, k->rewrites);
}

/* timeline/count's or otel/count's bytes (kind: RFS_R_TL_WIN or RFS_R_OTEL_PART; count:
 * the windows or parts), and, when the run has one, timeline/1.svg's or otel/1.json's
 * (drawn then as timeline.svg and otel.json are, the same bytes: whole, its doc; or only
 * its size, whole_size), kept as the glance pass keeps what it makes. */
static int keep_parts(rs_store *s, const rfs_scope *sc, const rfs_node *n, const rs_log_info *info,
                      rfs_kind kind, int64_t count, const rs_buf *whole, int64_t whole_size,
                      rs_err *err)
{
    rs_buf key = RS_BUF_INIT, doc = RS_BUF_INIT;
    kept k = {0};
    int rc = rs_buf_addf(&doc, "%lld\n", (long long)count);
    if (!rc && !(rc = run_view_names(s, sc, n, kind, 0, info, &key, &k, err))) {
        rfs_sizes_put_doc(sc->sizes, key.buf, info, doc.buf, doc.len);
        kept_put(s, sc, &k, (int64_t)doc.len);
    }
    if (!rc && count == 1 && !(rc = run_view_names(s, sc, n, kind, 1, info, &key, &k, err))) {
        if (whole)
            rfs_sizes_put_doc(sc->sizes, key.buf, info, whole->buf, whole->len);
        else
            rfs_sizes_put(sc->sizes, key.buf, info, whole_size);
        kept_put(s, sc, &k, whole ? (int64_t)whole->len : whole_size);
    }
    rs_buf_release(&key);
    rs_buf_release(&doc);
    return rc;
}

/* A run's first stat of stats.json, timeline.svg, report.html, otel.json or the files of
 * timeline/ and otel/ sizes them all in one pass over its rows and keeps them (the mount keeps the
 * documents' bytes too), so the stats of the others, as ls -la and du make them, render
 * nothing. */
static int glance_pass(rs_store *s, const rfs_scope *sc, const rfs_node *n, const rs_log_info *info,
                       const rfs_rows *rows, rs_err *err)
{
    static const rfs_kind kinds[] = {RFS_R_STATS, RFS_R_TIMELINE, RFS_R_REPORT, RFS_R_OTEL};
    rs_buf docs[3] = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT},
           keys[4] = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    kept k[4] = {{0}};
    int64_t otel = 0, windows = 0, parts = 0;
    rs_target t = {.thread_id = n->thread_id, .run_id = n->run_id, .user = sc->user};
    int rc = 0;
    /* The keys first: a seal made during the pass then leaves stats.json's size unkept. */
    for (int i = 0; !rc && i < 4; i++)
        rc = run_view_names(s, sc, n, kinds[i], 0, info, &keys[i], &k[i], err);
    rfs_otel_marks *marks = NULL;
    if (!rc && rfs_otel_marks_new(&marks))
        rc = rs_err_set(err, -ENOMEM, "out of memory");
    /* otel.json's bytes are kept as a streamed view's are (keep_bytes). */
    rfs_kept_writer w;
    rfs_kept_writer_open(&w, !rc && k[3].stored && rfs_sizes_keeps_bytes(sc->sizes));
    if (!rc)
        rc = rfs_glance_run_all(s, &t, sc->service_name, &docs[0], &docs[1], &windows, &docs[2],
                                &otel, &parts, &marks, &w, rows, err);
    for (int i = 0; !rc && i < 3; i++) {
        rfs_sizes_put_doc(sc->sizes, keys[i].buf, info, docs[i].buf, docs[i].len);
        kept_put(s, sc, &k[i], (int64_t)docs[i].len);
    }
    if (!rc) {
        rfs_sizes_put_marks(sc->sizes, keys[3].buf, info, otel, marks);
        keep_bytes(sc, keys[3].buf, info, &k[3], &w, otel);
        kept_put(s, sc, &k[3], otel);
        rc = keep_parts(s, sc, n, info, RFS_R_TL_WIN, windows, &docs[1], 0, err);
        /* otel/1.json is otel.json's bytes: from what was kept of them, its open renders
         * nothing either. */
        rs_buf whole = RS_BUF_INIT;
        rfs_kept_rows *b = !rc && parts == 1 ? rfs_sizes_rows(sc->sizes, keys[3].buf, info) : NULL;
        int have = b && b->fd >= 0 && rfs_kept_pread(b, 0, (size_t)b->bytes, &whole) == 0 &&
                   whole.len == (size_t)otel;
        if (b)
            rfs_sizes_rows_done(sc->sizes, b);
        if (!rc)
            rc =
                keep_parts(s, sc, n, info, RFS_R_OTEL_PART, parts, have ? &whole : NULL, otel, err);
        rs_buf_release(&whole);
    }
    rfs_otel_marks_release(marks);
    rfs_kept_writer_drop(&w);
    for (int i = 0; i < 4; i++)
        rs_buf_release(&keys[i]);
    for (int i = 0; i < 3; i++)
        rs_buf_release(&docs[i]);
    return rc;
}

static int run_terminal(void *ctx, const char *run_id, rs_buf *out);

/* A thread's history.jsonl and transcript.md kept sizes and states, in the store too
 * (runfs_steps, beside a run's step data: a blob by thread and kind), so a later mount
 * catches them up rather than rendering the thread: the format, the rewrites count they are
 * of, the log's state, and each view's size and state (u32 length first). Written by a pass
 * over a thread of at least STORED_ROWS rows (a smaller one renders quickly: no commit for
 * it), read by a catch-up that finds none in the mount's table. */
#define STORED_FORMAT 1u
/* The blob is this build's numbers as they lie in memory: a host of another byte order (a
 * PostgreSQL store is shared) reads this marker reversed and renders rather than misread. */
#define STORED_ORDER 0x01020304u
#define STORED_KIND 0x7468726561645356ULL /* names them apart from step data's kinds */
#define STORED_ROWS 256

typedef struct stored_head {
    uint32_t format, order, size_of_info;
    int64_t rewrites;
    rs_log_info info;
    int64_t sizes[2];
    uint32_t lens[2];
} stored_head;

static void stored_put(rs_store *s, const rfs_node *n, const kept *k, const rs_log_info *info,
                       const int64_t sizes[2], const rs_buf states[2])
{
    stored_head h;
    memset(&h, 0, sizeof h);
    h.format = STORED_FORMAT;
    h.order = STORED_ORDER;
    h.size_of_info = (uint32_t)sizeof h.info;
    h.rewrites = k->rewrites;
    h.info = *info;
    rs_buf b = RS_BUF_INIT;
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        h.sizes[i] = sizes[i];
        if (states[i].len > UINT32_MAX)
            rc = -EFBIG;
        h.lens[i] = (uint32_t)states[i].len;
    }
    rc = rc ? rc : rs_buf_add(&b, (const char *)&h, sizeof h);
    for (int i = 0; !rc && i < 2; i++)
        rc = rs_buf_add(&b, states[i].buf, states[i].len);
    rs_target t = {.thread_id = n->thread_id, .run_id = ""};
    /* Best effort: a store that refuses costs a later mount a rendering. */
    if (!rc)
        (void)rs_store_steps_put(s, &t, k->view ^ STORED_KIND, k->rewrites, b.buf, b.len);
    rs_buf_release(&b);
}

/* The sizes and states stored_put kept for view (k: history.jsonl's names) at the rewrites
 * count k says: 1 with base, sizes and states set, else 0. */
static int stored_get(rs_store *s, const rfs_node *n, const kept *k, rs_log_info *base,
                      int64_t sizes[2], rs_buf states[2])
{
    rs_buf b = RS_BUF_INIT;
    rs_target t = {.thread_id = n->thread_id, .run_id = ""};
    stored_head h;
    int got = k->stored && rs_store_steps_get(s, &t, k->view ^ STORED_KIND, &b) == 1 &&
              b.len >= sizeof h;
    if (got)
        memcpy(&h, b.buf, sizeof h);
    got = got && h.format == STORED_FORMAT && h.order == STORED_ORDER &&
          h.size_of_info == sizeof h.info && h.rewrites == k->rewrites &&
          b.len == sizeof h + (size_t)h.lens[0] + h.lens[1];
    for (int i = 0; got && i < 2; i++)
        got = rs_buf_add(&states[i], b.buf + sizeof h + (i ? h.lens[0] : 0), h.lens[i]) == 0;
    if (got) {
        *base = h.info;
        sizes[0] = h.sizes[0];
        sizes[1] = h.sizes[1];
    }
    rs_buf_release(&b);
    return got;
}

/* history.jsonl's and transcript.md's sizes at info from those this mount kept at an
 * earlier state of the thread under the same rewrites count (the key names it) and what
 * their pass left to resume from: one pass over the rows added since catches up n's view,
 * and the other when it is kept at the same state, and keeps them, so no stat after an
 * append renders them whole. 1 with *size set (n's); 0 when n's is not kept or the rows past
 * the kept point do not account for the whole change of the log (a row added below it, an
 * owner's share of a shared log, a rewrite while counting): the caller renders as before. */
static int thread_catch_up(rs_store *s, const rfs_scope *sc, const rfs_node *n, const rs_buf *key,
                           const rs_log_info *info, const kept *k, int64_t *size, rs_err *err)
{
    int mine = n->kind == RFS_T_TRANSCRIPT;
    rs_buf keys[2] = {RS_BUF_INIT, RS_BUF_INIT}, states[2] = {RS_BUF_INIT, RS_BUF_INIT};
    rs_log_info base[2];
    kept ks[2] = {*k, *k};
    rfs_thread_kept views[2] = {{.next = RS_BUF_INIT}, {.next = RS_BUF_INIT}};
    int have[2] = {0, 0};
    if (!sc->sizes || !k->stored)
        return 0;
    int rc = rs_buf_add(&keys[mine], key->buf, key->len);
    if (!rc)
        rc = run_view_names(s, sc, n, mine ? RFS_T_HISTORY : RFS_T_TRANSCRIPT, 0, info,
                            &keys[!mine], &ks[!mine], err);
    for (int i = 0; !rc && i < 2; i++) {
        have[i] = ks[i].stored && ks[i].rewrites == k->rewrites &&
                  rfs_sizes_get_state(sc->sizes, keys[i].buf, &base[i], &views[i].size, &states[i]);
        views[i].state = states[i].buf;
        views[i].len = states[i].len;
    }
    /* None in the mount's table (a fresh mount): the store's, of both views at once. */
    if (!rc && !have[0] && !have[1]) {
        rs_buf_reset(&states[0]);
        rs_buf_reset(&states[1]);
        int64_t sizes[2];
        if (stored_get(s, n, &ks[0], &base[0], sizes, states)) {
            base[1] = base[0];
            for (int i = 0; i < 2; i++) {
                have[i] = ks[i].stored && ks[i].rewrites == k->rewrites;
                views[i].size = sizes[i];
                views[i].state = states[i].buf;
                views[i].len = states[i].len;
            }
        }
    }
    const rs_log_info *b = &base[mine];
    /* The other view goes along only from the same state of the thread, and when it is not
     * kept at info already. */
    int64_t other = 0;
    if (have[!mine] && (rfs_view_version(&base[!mine]) != rfs_view_version(b) ||
                        rfs_sizes_get(sc->sizes, keys[!mine].buf, info, &other)))
        have[!mine] = 0;
    if (rc || !have[mine] || !b->exists || !b->exact || !info->exact ||
        b->last_seq > info->last_seq || b->count > info->count || b->size > info->size) {
        for (int i = 0; i < 2; i++) {
            rs_buf_release(&keys[i]);
            rs_buf_release(&states[i]);
        }
        return rc;
    }
    rs_target t = {.thread_id = n->thread_id, .user = sc->user};
    rfs_reader r = {.node = n, .scope = *sc, .store = s, .pending = RS_BUF_INIT};
    int64_t count = 0, bytes = 0, last = b->last_seq, rewrites = 0;
    rc = rfs_glance_thread_since(s, &t, run_terminal, &r, b->last_seq, have[0] ? &views[0] : NULL,
                                 have[1] ? &views[1] : NULL, &count, &bytes, &last, err);
    rs_buf_release(&r.pending);
    int bad = rc == -EINVAL; /* a state that does not read: rendered as before */
    rc = bad ? 0 : rc;
    /* Every row the log gained is past the kept point, and nothing was rewritten since the
     * key's count was read (a delete and an insert could leave the totals as they were). */
    int held = !rc && !bad && b->count + count == info->count && b->size + bytes == info->size &&
               last == info->last_seq && rs_store_rewrites(s, &rewrites) == 0 &&
               rewrites == k->rewrites;
    for (int i = 0; held && i < 2; i++) {
        if (!have[i])
            continue;
        rfs_sizes_put(sc->sizes, keys[i].buf, info, views[i].size);
        rfs_sizes_put_state(sc->sizes, keys[i].buf, info, views[i].next.buf, views[i].next.len);
        if (i != mine) /* n's own the caller keeps */
            kept_put(s, sc, &ks[i], views[i].size);
    }
    if (held)
        *size = views[mine].size;
    for (int i = 0; i < 2; i++) {
        rs_buf_release(&keys[i]);
        rs_buf_release(&states[i]);
        rs_buf_release(&views[i].next);
    }
    return rc ? rc : held;
}

/* The thread views a first ls -la renders: sized together by thread_pass. */
static int thread_pass_kind(rfs_kind kind)
{
    return kind == RFS_T_HISTORY || kind == RFS_T_TRANSCRIPT || kind == RFS_T_STATS ||
           kind == RFS_T_REPORT;
}

/* history.jsonl's and transcript.md's sizes and stats.json's and report.html's bytes from
 * one pass over the thread's rows, kept as each view's own rendering keeps them
 * (sc->thread_pass); the bytes of n's view handed to how->bytes as they are made (how NULL
 * or without bytes: none). */
static int thread_pass(rs_store *s, const rfs_scope *sc, const rfs_node *n, const rs_log_info *info,
                       const sizing *how, rs_err *err)
{
    static const rfs_kind kinds[] = {RFS_T_HISTORY, RFS_T_TRANSCRIPT, RFS_T_STATS, RFS_T_REPORT};
    rs_buf docs[2] = {RS_BUF_INIT, RS_BUF_INIT},
           keys[4] = {RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT, RS_BUF_INIT};
    kept k[4] = {{0}};
    int64_t size[4] = {0};
    rs_target t = {.thread_id = n->thread_id, .user = sc->user};
    rfs_reader r = {.node = n, .scope = *sc, .store = s, .pending = RS_BUF_INIT};
    int rc = 0;
    /* The keys first: a change during the pass then leaves the sizes unkept. */
    for (int i = 0; !rc && i < 4; i++)
        rc = run_view_names(s, sc, n, kinds[i], 0, info, &keys[i], &k[i], err);
    /* After an append a stat of history.jsonl caught both up (ls -la stats it before
     * stats.json): the pass that stats.json's stat wants renders neither again. */
    int sized = !rc && (n->kind == RFS_T_STATS || n->kind == RFS_T_REPORT) && sc->sizes &&
                rfs_sizes_get(sc->sizes, keys[0].buf, info, &size[0]) &&
                rfs_sizes_get(sc->sizes, keys[1].buf, info, &size[1]);
    rfs_kept_writer w[2];
    int keep = !rc && !sized && rfs_sizes_keeps_bytes(sc->sizes);
    rfs_kept_writer_open(&w[0], keep && k[0].stored);
    rfs_kept_writer_open(&w[1], keep && k[1].stored);
    rs_buf states[2] = {RS_BUF_INIT, RS_BUF_INIT};
    rfs_glance_sink sink = {.history_keep = &w[0], .transcript_keep = &w[1], .sized = sized};
    if (!rc && !sink.sized && sc->sizes && k[0].stored)
        sink.history_state = &states[0];
    if (!rc && !sink.sized && sc->sizes && k[1].stored)
        sink.transcript_state = &states[1];
    if (how && how->bytes) {
        sink.history = n->kind == RFS_T_HISTORY;
        sink.transcript = n->kind == RFS_T_TRANSCRIPT;
        sink.bytes = how->bytes;
        sink.ctx = how->ctx;
    }
    if (!rc)
        rc = rfs_glance_thread_all(s, &t, run_terminal, &r, &sink, &docs[0], &docs[1], &size[0],
                                   &size[1], err);
    /* What a later stat catches up from must be of info's rows exactly: a pass that read
     * rows come while it ran (or a listing's older info) leaves none. */
    int held = !rc && (sink.history_state || sink.transcript_state) &&
               sink.last_seq <= info->last_seq && unchanged(s, sc, n, info, &k[0], err) == 1;
    if (held && sink.history_state && sink.transcript_state && info->count >= STORED_ROWS &&
        k[1].rewrites == k[0].rewrites)
        stored_put(s, n, &k[0], info, size, states);
    for (int i = sink.sized ? 2 : 0; !rc && i < 4; i++) {
        const rs_buf *doc = i >= 2 ? &docs[i - 2] : NULL;
        if (doc) {
            size[i] = (int64_t)doc->len;
            rfs_sizes_put_doc(sc->sizes, keys[i].buf, info, doc->buf, doc->len);
        } else {
            keep_bytes(sc, keys[i].buf, info, &k[i], &w[i], size[i]);
            if (held && states[i].alloc)
                rfs_sizes_put_state(sc->sizes, keys[i].buf, info, states[i].buf, states[i].len);
        }
        kept_put(s, sc, &k[i], size[i]);
    }
    rs_buf_release(&states[0]);
    rs_buf_release(&states[1]);
    rfs_kept_writer_drop(&w[0]);
    rfs_kept_writer_drop(&w[1]);
    for (int i = 0; i < 4; i++)
        rs_buf_release(&keys[i]);
    for (int i = 0; i < 2; i++)
        rs_buf_release(&docs[i]);
    return rc;
}

/* A diff's bytes are of two runs: the other run's version goes into its kept key. */
static int diff_key(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_buf *key, rs_err *err)
{
    rs_log_info other;
    int rc = rs_store_log_info(s, n->thread_id, n->name, sc->user, &other, err);
    if (rc)
        return rc;
    if (!other.exists)
        return rs_err_set(err, -ENOENT, "no run %s in thread %s", n->name, n->thread_id);
    return rs_buf_addf(key, "\n%llx", (unsigned long long)rfs_view_version(&other));
}

/* A document's size is its rendering: into doc when the caller wants the bytes too (an
 * open), else into a scratch buffer. The documents that scan a run (receipt.json,
 * workspace-changes.json) keep their size until the run changes (token), for ls -l. */
static int stat_doc(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st, rs_buf *doc,
                    const rs_log_info *token, int cheap, rs_err *err)
{
    rs_buf scratch = RS_BUF_INIT, key = RS_BUF_INIT;
    rs_buf *out = doc ? doc : &scratch;
    /* A proof, computed from a chunk of rows, a diff, from two runs, and a receipt or the
     * workspace changes, from a scan of the run, keep their bytes as those views do: the
     * open after a stat (tar, grep -r) renders nothing. */
    int glance = rfs_glance_kind(n->kind),
        keep = glance || n->kind == RFS_R_PROOF || n->kind == RFS_R_DIFF ||
               n->kind == RFS_R_RECEIPT || n->kind == RFS_R_WORKSPACE;
    int cache = token && sc->sizes && keep;
    int rc = cache ? size_key(sc, n, &key) : 0;
    rs_target t = {.thread_id = n->thread_id, .run_id = n->run_id, .user = sc->user};
    if (!rc && cache && glance)
        rc = rfs_glance_key(s, n->kind, &t, &key, err);
    if (!rc && cache && n->kind == RFS_R_DIFF)
        rc = diff_key(s, sc, n, &key, err);
    kept k = {0};
    if (!rc && cache)
        rc = kept_names(s, &key, token, &k);
    int run_doc = n->kind == RFS_R_STATS || n->kind == RFS_R_TIMELINE || n->kind == RFS_R_REPORT ||
                  n->kind == RFS_R_TL_WIN || n->kind == RFS_R_OTEL_PART;
    int pass = !rc && cache && !doc && !cheap &&
               (run_doc || (thread_pass_kind(n->kind) && sc->thread_pass)) &&
               !kept_get(s, sc, &key, token, &k, &st->size);
    if (pass && thread_pass_kind(n->kind))
        st->thread_pass = !(rc = thread_pass(s, sc, n, token, NULL, err));
    else if (pass)
        rc = glance_pass(s, sc, n, token, NULL, err);
    st->rendered = pass;
    /* An open of a run's document whose bytes are not kept (a stat found its size kept in
     * the store) renders all the run's documents in the pass, as that stat would have: tar
     * and grep -r open each of them in turn, a pass over the run's rows each otherwise. One
     * too large to be kept whole is rendered alone, as before, and so are the windows and
     * parts after the first (the pass keeps the first only, when it is the only one). */
    int got = 0;
    int64_t kept_size = -1;
    if (!rc && cache && doc && run_doc && n->num <= 1 && rfs_sizes_keeps_bytes(sc->sizes) &&
        !(got = rfs_sizes_get_doc(sc->sizes, key.buf, token, doc)) &&
        kept_get(s, sc, &key, token, &k, &kept_size) && (size_t)kept_size <= RFS_DOC_MAX) {
        /* The store holds this one's size, kept with the run's others by the pass that
         * made it: writing them again would be a commit per run, which every mount's hub
         * takes for another writer's change. */
        rfs_scope quiet = *sc;
        quiet.keep_size = keep_none;
        rc = glance_pass(s, &quiet, n, token, NULL, err);
    }
    if (!rc && cache &&
        (doc ? keep && (got || rfs_sizes_get_doc(sc->sizes, key.buf, token, doc))
             : kept_get(s, sc, &key, token, &k, &st->size))) {
        st->size = doc ? (int64_t)doc->len : st->size;
        rs_buf_release(&key);
        return 0;
    }
    /* A listing's stat renders nothing: a document whose size is not kept goes unsized. */
    if (!rc && cache && cheap && !doc) {
        st->unsized = 1;
        rs_buf_release(&key);
        return 0;
    }
    /* An open renders a document whose size a stat kept: the store holds that size
     * already, and a write each open would be a commit per file of a tar, which every
     * mount's hub takes for another writer's change. */
    int64_t had = -1;
    if (!rc && cache && doc && !kept_get(s, sc, &key, token, &k, &had))
        had = -1;
    if (!rc)
        rc = render_doc(s, sc, n, out, err);
    st->size = (int64_t)out->len;
    st->rendered |= !doc;
    /* The views of a run at a glance keep their bytes too: the open after a stat reads
     * them instead of scanning the run again. */
    if (!rc && cache && keep)
        rfs_sizes_put_doc(sc->sizes, key.buf, token, out->buf, out->len);
    else if (!rc && cache)
        rfs_sizes_put(sc->sizes, key.buf, token, st->size);
    if (!rc && cache && had != st->size)
        kept_put(s, sc, &k, st->size);
    rs_buf_release(&key);
    rs_buf_release(&scratch);
    return rc;
}

/* rs_store_log_info, through the scope's memo when it has one (the last thread or run
 * read: a listing's entries are of one). */
static int memo_log_info(rs_store *s, const rfs_scope *sc, const char *thread_id,
                         const char *run_id, rs_log_info *info, rs_err *err)
{
    rfs_info_memo *m = sc->memo;
    const char *run = run_id ? run_id : "";
    if (m && m->valid && strcmp(m->thread_id, thread_id) == 0 && strcmp(m->run_id, run) == 0) {
        *info = m->info;
        return 0;
    }
    int rc = rs_store_log_info(s, thread_id, run_id, sc->user, info, err);
    if (m)
        m->valid = 0;
    /* ids are 1-64 characters, which the memo's fields hold */
    if (!rc && m && rs_fmt(m->thread_id, sizeof m->thread_id, "%s", thread_id) >= 0 &&
        rs_fmt(m->run_id, sizeof m->run_id, "%s", run) >= 0) {
        m->info = *info;
        m->valid = 1;
    }
    return rc;
}

/* doc: an open's buffer for a document's bytes; how: NULL, or how a view's size may be
 * learnt. */
static int view_stat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st, rs_buf *doc,
                     const sizing *how, rs_err *err)
{
    if (rfs_search_is_result(n->kind)) {
        int rc = rfs_search_stat(s, sc, n, st, doc ? 0 : how && how->lazy ? 1 : 2, err);
        st->rendered = !doc && !st->kept && !st->unsized;
        return rc;
    }
    memset(st, 0, sizeof *st);
    if (sc->denied && (n->kind > RFS_THREADS || (n->kind >= RFS_CHANGES && n->kind < RFS_THREADS)))
        return rs_err_set(err, -EACCES, "this uid is not in the mount's --user-map");
    st->shape = shape_of(n->kind);
    st->mtime_ns = st->ctime_ns = sc->mount_ns;
    if (n->kind == RFS_REJECTS) {
        /* A log that grows while it is read (tail -f): its bytes come at each read. */
        st->size = sc->rejects_size ? sc->rejects_size(sc->ctx, sc->user) : 0;
        return 0;
    }
    if (n->kind == RFS_CHANGES_FOLLOW) {
        /* The feed's lines come later, from the follower: asking for none past the last
         * number says now whether the store can give them. */
        rs_buf none = RS_BUF_INIT;
        int rc = rfs_changes_render(s, sc->user, sc->only_thread, INT64_MAX, &none, NULL, err);
        rs_buf_release(&none);
        return rc;
    }
    if (n->kind < RFS_THREAD || n->kind == RFS_SEARCH_DIR)
        return st->shape == RFS_SHAPE_DOC ? stat_doc(s, sc, n, st, doc, NULL, 0, err) : 0;
    if (!thread_visible(sc, n->thread_id))
        return -ENOENT;
    rs_log_info info;
    int in_run = n->kind >= RFS_RUN && n->kind != RFS_T_SEARCH_DIR;
    int rc = memo_log_info(s, sc, n->thread_id, in_run ? n->run_id : NULL, &info, err);
    if (rc)
        return rc;
    if (!info.exists)
        return -ENOENT;
    st->mtime_ns = info.mtime_ns;
    st->ctime_ns = info.ctime_ns;
    st->last_seq = info.last_seq;
    st->version = rfs_view_version(&info);
    switch (st->shape) {
    case RFS_SHAPE_LOG:
        if (info.exact) {
            st->size = info.size;
            return 0;
        }
        st->shape = RFS_SHAPE_STREAM;
        break;
    case RFS_SHAPE_DOC: return stat_doc(s, sc, n, st, doc, &info, how && how->lazy > 1, err);
    case RFS_SHAPE_STREAM: break;
    default: return 0;
    }
    /* messages.jsonl: the store keeps its size beside the log (not on every backend, nor
     * for an owner's share of a shared log). */
    if (n->kind == RFS_T_MESSAGES || n->kind == RFS_R_MESSAGES) {
        rc = rs_store_messages_size(s, n->thread_id, in_run ? n->run_id : NULL, sc->user, &st->size,
                                    err);
        if (rc)
            return rc < 0 ? rc : 0;
    }
    /* A view's size is its rendering, kept until the thread or run changes (info says). An
     * open (doc given) is about to render it anyway: it needs only to know it exists. */
    int filtered = n->kind == RFS_R_TYPE || n->kind == RFS_R_TASK;
    const sizing *keeps = how && rfs_view_kernel_keeps(n->kind) ? how : NULL;
    rs_buf key = RS_BUF_INIT;
    kept k = {0};
    rc = size_key(sc, n, &key);
    if (!rc)
        rc = kept_names(s, &key, &info, &k);
    int known = !rc && kept_get(s, sc, &key, &info, &k, &st->size);
    int cheap = how && how->lazy > 1;
    if (!rc && !known && !doc && !cheap &&
        (rc = (n->kind == RFS_T_HISTORY || n->kind == RFS_T_TRANSCRIPT)
                  ? thread_catch_up(s, sc, n, &key, &info, &k, &st->size, err)
                  : catch_up(s, sc, n, &key, &info, &k, &st->size, err)) == 1) {
        rfs_sizes_put(sc->sizes, key.buf, &info, st->size);
        kept_put(s, sc, &k, st->size);
        known = 1;
        rc = 0;
    }
    if (!rc && !known && !doc && !cheap && n->kind == RFS_R_OTEL && sc->sizes &&
        !(rc = glance_pass(s, sc, n, &info, NULL, err))) {
        st->rendered = 1;
        known = kept_get(s, sc, &key, &info, &k, &st->size);
    }
    /* A view the kernel keeps waits for its getattr (not lazy), whose pass hands the
     * kernel its bytes: the read after the stat (cat, grep -r) renders nothing. */
    if (!rc && !known && !doc && !cheap && sc->thread_pass && thread_pass_kind(n->kind) &&
        !(keeps && keeps->lazy) && sc->sizes && !(rc = thread_pass(s, sc, n, &info, keeps, err))) {
        st->thread_pass = st->rendered = 1;
        known = kept_get(s, sc, &key, &info, &k, &st->size);
    }
    if (!rc && !known && doc) {
        rs_cursor *c;
        const rs_record *rec;
        if (filtered && !(rc = stream_open(s, sc, n, 0, 1, NULL, &c, err))) {
            rc = rs_cursor_next(c, &rec);
            rs_cursor_free(c);
            rc = rc < 0 ? rc : rc == 0 ? -ENOENT : 0;
        }
    } else if (!rc && !known && ((keeps && keeps->lazy) || cheap)) {
        st->unsized = 1; /* these views exist with their thread (types and tasks: listed) */
    } else if (!rc && !known) {
        /* The bytes counted are kept beside the size, so the open and read that follow the
         * stat (grep -r, tar) render nothing: in a memfd, bounded, dropped at the view's
         * next version or any rewrite (sizes.h). since/<seq> is a parameter: not kept. */
        int keep = sc->sizes && rfs_sizes_keeps_bytes(sc->sizes) && k.stored &&
                   n->kind != RFS_T_SINCE && n->kind != RFS_R_SINCE;
        rfs_kept_writer w;
        rfs_kept_writer_open(&w, keep);
        /* history.jsonl and transcript.md: what a later stat catches them up from too. */
        rs_buf state = RS_BUF_INIT;
        int states = sc->sizes && k.stored &&
                     (n->kind == RFS_T_HISTORY || n->kind == RFS_T_TRANSCRIPT);
        int64_t last = 0;
        rc = stream_size(s, sc, n, keeps, keep ? &w : NULL, states ? &state : NULL, &st->size,
                         &last, err);
        st->rendered = 1;
        /* A size a later stat catches up from must be of info's rows exactly: one rendered
         * while rows came (or of a listing's older info) is not kept, nor one that read a row
         * past info's last seq with info still current (PostgreSQL: another writer's row
         * committed while its thread's mark was being cleared, not in the log's totals yet),
         * which the catch-up after that row is indexed would count again. */
        int held = last <= info.last_seq;
        if (!rc && held && (catch_up_kind(n->kind) || states) &&
            (rc = unchanged(s, sc, n, &info, &k, err)) >= 0) {
            held = rc;
            rc = 0;
        }
        if (!rc && held && sc->sizes)
            keep_bytes(sc, key.buf, &info, &k, &w, st->size);
        if (!rc && held && states)
            rfs_sizes_put_state(sc->sizes, key.buf, &info, state.buf, state.len);
        rs_buf_release(&state);
        rfs_kept_writer_drop(&w);
        /* since/<seq> is a parameter: the store would keep a size for every seq a poller
         * asks for, so only the mount keeps it. */
        if (!rc && held && n->kind != RFS_T_SINCE && n->kind != RFS_R_SINCE)
            kept_put(s, sc, &k, st->size);
    }
    rs_buf_release(&key);
    /* Only types and tasks the run has exist. */
    if (!rc && filtered && st->size == 0 && !st->unsized && (known || !doc))
        rc = -ENOENT;
    return rc;
}

int rfs_view_stat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st, rs_err *err)
{
    return view_stat(s, sc, n, st, NULL, NULL, err);
}

int rfs_view_stat_ex(rs_store *s, const rfs_scope *sc, const rfs_node *n, int lazy,
                     rfs_bytes_fn bytes, void *ctx, rfs_stat *st, rs_err *err)
{
    sizing how = {.lazy = lazy, .bytes = bytes, .ctx = ctx};
    return view_stat(s, sc, n, st, NULL, &how, err);
}

/* The entries of one directory of rfs_view_size_tree. */
typedef struct tree_dir {
    const rfs_node *dir;
    rfs_node *kids;
    size_t n, cap;
} tree_dir;

static int tree_add(void *ctx, const char *name, int is_dir, const int64_t *times)
{
    (void)is_dir;
    (void)times;
    tree_dir *d = ctx;
    if (rs_array_grow(&d->kids, &d->cap, d->n + 1, sizeof *d->kids))
        return -ENOMEM;
    /* The listing gives only names that lead back to a node. */
    if (!rfs_node_child(d->dir, name, &d->kids[d->n]))
        d->n++;
    return 0;
}

/* The directories a walk of only the line views goes into. */
static int lines_dir(rfs_kind k)
{
    return k == RFS_THREAD || k == RFS_RUNS || k == RFS_RUN || k == RFS_R_TYPES_DIR ||
           k == RFS_R_TASKS_DIR;
}

/* rfs_view_size_tree, or with lines only those views whose size a later stat catches up
 * from (catch_up_kind) and the directories that hold them. */
static int size_tree(rs_store *s, rfs_scope *sc, const rfs_node *n, int lines, rs_err *err)
{
    tree_dir d = {.dir = n};
    int rc = rfs_view_entries(s, sc, n, tree_add, &d, err);
    /* A thread's listing with attributes is what asks for its one pass (as on a mount). */
    int pass = sc->thread_pass;
    sc->thread_pass = n->kind == RFS_THREAD && !lines;
    rfs_info_memo memo = {0};
    for (size_t i = 0; !rc && i < d.n; i++) {
        rfs_stat st;
        if (rfs_node_is_dir(d.kids[i].kind)) {
            if (!lines || lines_dir(d.kids[i].kind))
                rc = size_tree(s, sc, &d.kids[i], lines, err);
            sc->thread_pass = n->kind == RFS_THREAD && !lines;
            continue;
        }
        if (lines && !catch_up_kind(d.kids[i].kind))
            continue;
        /* A listing's stats of one thread's or run's files read its facts once. */
        sc->memo = &memo;
        rc = rfs_view_stat(s, sc, &d.kids[i], &st, err);
        sc->memo = NULL;
        /* Types and tasks the run no longer has, after a foreign delete: nothing to size. */
        if (rc == -ENOENT)
            rc = 0;
    }
    sc->thread_pass = pass;
    free(d.kids);
    return rc;
}

int rfs_view_size_tree(rs_store *s, rfs_scope *sc, const rfs_node *n, rs_err *err)
{
    return size_tree(s, sc, n, 0, err);
}

/* What one pass over a thread's rows counts of one run (or, run "", of the whole thread):
 * its rows, their lines' bytes and highest seq, its message rows' bytes, and each event
 * type's bytes (types[i] named by names[i]). */
typedef struct lines_count {
    char run_id[RS_ID_MAX + 1];
    int64_t count, bytes, last_seq, messages;
    int tasks; /* a row names a task_id: tasks/ is sized as a walk sizes it */
    /* The log as the store says it is, when it said so for every run at once (given). */
    int given;
    rs_log_info info;
    int64_t msg_size; /* -1: the store keeps none */
    /* The rows as a writer stored them (rfs_lines_new's), for the run's glance pass: each
     * one's event_type, category and line after each other in held, NUL-separated. */
    rs_buf held;
    struct held_row *rows;
    size_t nrows, rows_cap;
    char **names;
    int64_t *types;
    size_t ntypes, names_cap, types_cap;
} lines_count;

/* Whether line holds "task_id" (quotes included): found by its '_', which few bytes of a
 * line are (memmem was a third of counting a row). */
static int names_task(const char *line, size_t len)
{
    const char *p = line, *end = line + len;
    while ((p = memchr(p, '_', (size_t)(end - p))) != NULL) {
        if (p - line >= 5 && end - p >= 4 && memcmp(p - 5, "\"task_id\"", 9) == 0)
            return 1;
        p++;
    }
    return 0;
}

/* rec counted into c; types: c is a run's, whose types/ and tasks/ views are counted too
 * (the thread has only its messages.jsonl). */
static int lines_add(lines_count *c, const rs_record *rec, int types)
{
    c->count++;
    c->bytes += (int64_t)rec->line_len;
    /* A writer's rows come a run's file at a time, not by seq. */
    if (rec->seq > c->last_seq)
        c->last_seq = rec->seq;
    if (rec->category && strcmp(rec->category, "message") == 0)
        c->messages += (int64_t)rec->line_len;
    if (!types)
        return 0;
    /* The store's own canonical line: a metadata task_id is spelled so in it. */
    if (!c->tasks && names_task(rec->line, rec->line_len))
        c->tasks = 1;
    if (!rec->event_type)
        return 0;
    size_t i = 0;
    while (i < c->ntypes && strcmp(c->names[i], rec->event_type) != 0)
        i++;
    if (i == c->ntypes) {
        if (rs_array_grow(&c->names, &c->names_cap, i + 1, sizeof *c->names) ||
            rs_array_grow(&c->types, &c->types_cap, i + 1, sizeof *c->types) ||
            !(c->names[i] = strdup(rec->event_type)))
            return -ENOMEM;
        c->types[i] = 0;
        c->ntypes++;
    }
    c->types[i] += (int64_t)rec->line_len;
    return 0;
}

/* A row held: its seq and where its three strings are in the run's held. */
typedef struct held_row {
    int64_t seq;
    size_t off, line_len;
    uint32_t type_len, cat_len;
} held_row;

/* A thread's rows held for its runs' glance passes, at most (a bigger run's are read back). */
#define HELD_MAX ((size_t)64 << 20)

static void held_release(lines_count *c)
{
    rs_buf_release(&c->held);
    free(c->rows);
    c->rows = NULL;
    c->nrows = c->rows_cap = 0;
}

static int held_add(lines_count *c, const rs_record *rec)
{
    const char *type = rec->event_type ? rec->event_type : "",
               *cat = rec->category ? rec->category : "";
    size_t tl = strlen(type), cl = strlen(cat), off = c->held.len;
    if (rs_array_grow(&c->rows, &c->rows_cap, c->nrows + 1, sizeof *c->rows) ||
        rs_buf_grow(&c->held, tl + cl + 2 + rec->line_len))
        return -ENOMEM;
    char *p = c->held.buf + off;
    memcpy(p, type, tl + 1);
    memcpy(p + tl + 1, cat, cl + 1);
    memcpy(p + tl + cl + 2, rec->line, rec->line_len);
    rs_buf_setlen(&c->held, off + tl + cl + 2 + rec->line_len);
    c->rows[c->nrows++] = (held_row){rec->seq, off, rec->line_len, (uint32_t)tl, (uint32_t)cl};
    return 0;
}

static void lines_release(lines_count *c)
{
    held_release(c);
    for (size_t i = 0; i < c->ntypes; i++)
        free(c->names[i]);
    free(c->names);
    free(c->types);
}

/* One pass's counts of a thread: the whole thread's (all) and each run's. */
struct rfs_lines {
    lines_count all, *runs;
    size_t nruns, cap, at; /* at: the run the last row was of */
    /* Rows are held (a writer's feed), while held_bytes stays under HELD_MAX and every row
     * is of one thread and owner (held_ok), for the runs' passes. */
    int hold, held_ok;
    size_t held_bytes;
    char thread_id[RS_ID_MAX + 1];
    char *user;
};

/* Keep view n's size at info and rewrites (named as view_stat names it) in the store (the
 * caller checks the count after: lines_keep_all). Not in the command's table: nothing of the
 * command reads a line view's size there. */
static int lines_keep(rs_store *s, const rfs_scope *sc, const rfs_node *n, const rs_log_info *info,
                      int64_t rewrites, int64_t size)
{
    rs_buf key = RS_BUF_INIT;
    kept k = {.stored = 1};
    int rc = size_key(sc, n, &key);
    rc = rc ? rc : kept_names_at(&key, info, rewrites, &k);
    if (!rc)
        kept_put(s, sc, &k, size);
    rs_buf_release(&key);
    return rc;
}

/* The sizes a glance pass of the upkeep made, held until its run's log is known unchanged. */
typedef struct held_sizes {
    rs_size *v;
    size_t n, cap;
} held_sizes;

static int hold_size(void *ctx, uint64_t view, uint64_t token, int64_t size)
{
    held_sizes *h = ctx;
    if (rs_array_grow(&h->v, &h->cap, h->n + 1, sizeof *h->v))
        return -ENOMEM;
    h->v[h->n++] = (rs_size){view, token, size};
    return 0;
}

/* 1 when c's held rows are in ascending seq, as a pass reads a run's. */
static int rows_ascend(const lines_count *c)
{
    for (size_t i = 1; i < c->nrows; i++)
        if (c->rows[i].seq <= c->rows[i - 1].seq)
            return 0;
    return 1;
}

/* The rows a writer's feed held of a run, as rs_records, for its pass. */
typedef struct held_iter {
    const lines_count *c;
    size_t i;
    rs_record rec;
} held_iter;

static int held_next(void *ctx, const rs_record **out)
{
    held_iter *h = ctx;
    if (h->i == h->c->nrows)
        return 0;
    const held_row *w = &h->c->rows[h->i++];
    const char *at = h->c->held.buf + w->off;
    h->rec.seq = w->seq;
    h->rec.event_type = w->type_len ? at : NULL;
    h->rec.category = w->cat_len ? at + w->type_len + 1 : NULL;
    h->rec.line = at + w->type_len + w->cat_len + 2;
    h->rec.line_len = w->line_len;
    *out = &h->rec;
    return 1;
}

/* Run r's stats.json, timeline.svg, report.html, otel.json and timeline/ and otel/ sized by
 * the pass a mount's first stat of one makes, and kept as the line views are: so the first
 * ls -la, du or tar of the run on a fresh mount renders none of them. The sizes go to sc's
 * keep_size only when the run's log and the rewrites count are still as info and rewrites
 * say after the pass (another writer's rows during it would make them of a later state). */
static int glance_upkeep(rs_store *s, const rfs_scope *sc, const rfs_node *r,
                         const rs_log_info *info, int64_t rewrites, const rfs_lines *l,
                         const lines_count *c, rs_err *err)
{
    held_sizes held = {0};
    rfs_scope quiet = *sc;
    quiet.keep_size = hold_size;
    quiet.ctx = &held;
    kept k = {.stored = 1, .rewrites = rewrites};
    /* The rows the writer stored, when they are every row of the run (its log's count) in
     * seq order (one file of the import each): none is read back. */
    held_iter it = {.c = c,
                    .rec = {.thread_id = l->thread_id,
                            .run_id = c->run_id,
                            .user_id = l->user,
                            .run_off = -1,
                            .thread_off = -1}};
    rfs_rows rows = {held_next, &it};
    int whole = l->held_ok && c->nrows == (size_t)info->count && rows_ascend(c);
    int rc = glance_pass(s, &quiet, r, info, whole ? &rows : NULL, err);
    int same = rc ? rc : unchanged(s, sc, r, info, &k, err);
    for (size_t i = 0; same == 1 && i < held.n; i++) {
        kept one = {.view = held.v[i].view, .token = held.v[i].token, .stored = 1};
        kept_put(s, sc, &one, held.v[i].size);
    }
    free(held.v);
    /* Best effort, as the line views' sizes: a pass that fails here fails at the mount's
     * first stat too, which says so; only memory running out stops the import's upkeep. */
    return same == -ENOMEM ? same : 0;
}

/* The line views of one run (c) or of the thread (c->run_id ""), whose log must still be
 * what the pass counted: else nothing is kept of it (its views render at their first stat)
 * and *missed is set. */
static int lines_keep_log(rs_store *s, rfs_scope *sc, const rfs_node *thread, const rfs_lines *l,
                          const lines_count *c, int64_t rewrites, int *missed, rs_err *err)
{
    const char *run = c->run_id[0] ? c->run_id : NULL;
    rs_log_info info = c->info;
    int64_t kept_messages = c->msg_size;
    rfs_node runs, r, dir, v;
    int rc = c->given ? 0 : rs_store_log_info(s, thread->thread_id, run, sc->user, &info, err);
    if (rc || !info.exists || !info.exact || info.count != c->count || info.size != c->bytes ||
        info.last_seq != c->last_seq) {
        *missed = 1;
        return rc;
    }
    if (!run) {
        if (rfs_node_child(thread, "messages.jsonl", &v))
            return 0;
        rc = rs_store_messages_size(s, thread->thread_id, NULL, sc->user, &kept_messages, err);
        return rc ? (rc < 0 ? rc : 0) : lines_keep(s, sc, &v, &info, rewrites, c->messages);
    }
    /* Ids the listing would not give (rfs_node_child refuses them) have no views. */
    if (rfs_node_child(thread, "runs", &runs) || rfs_node_child(&runs, run, &r))
        return 0;
    if (c->given)
        rc = kept_messages >= 0;
    else
        rc = rs_store_messages_size(s, thread->thread_id, run, sc->user, &kept_messages, err);
    if (rc == 0 && !rfs_node_child(&r, "messages.jsonl", &v))
        rc = lines_keep(s, sc, &v, &info, rewrites, c->messages);
    rc = rc < 0 ? rc : 0;
    rs_buf name = RS_BUF_INIT;
    int has_types = !rfs_node_child(&r, "types", &dir);
    for (size_t i = 0; !rc && has_types && i < c->ntypes; i++) {
        rs_buf_reset(&name);
        if (!(rc = rs_buf_addstr(&name, c->names[i])) && !(rc = rs_buf_addlit(&name, ".jsonl")) &&
            !rfs_node_child(&dir, name.buf, &v) && v.kind == RFS_R_TYPE &&
            strcmp(v.name, c->names[i]) == 0)
            rc = lines_keep(s, sc, &v, &info, rewrites, c->types[i]);
    }
    rs_buf_release(&name);
    /* Tasks: their filter (metadata.task_id as text) is the store's; sized as a walk would. */
    if (!rc && c->tasks && !rfs_node_child(&r, "tasks", &dir))
        rc = size_tree(s, sc, &dir, 1, err);
    /* A run of fewer rows renders its documents in a millisecond or two at its first stat,
     * and their fixed part (the timeline's axis and legend, the report's page) would cost
     * the import of a store of small runs more than its rows. */
    return rc || c->count < STORED_ROWS ? rc : glance_upkeep(s, sc, &r, &info, rewrites, l, c, err);
}

int rfs_lines_new(rfs_lines **out)
{
    rfs_lines *l = calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    l->hold = l->held_ok = 1;
    l->all.held = (rs_buf)RS_BUF_INIT;
    *out = l;
    return 0;
}

/* rec held for its run c, when it may be: else nothing more is held. */
static int lines_hold(rfs_lines *l, lines_count *c, const rs_record *rec)
{
    if (!l->held_ok)
        return 0;
    if (!l->thread_id[0] && strlen(rec->thread_id) <= RS_ID_MAX) {
        memcpy(l->thread_id, rec->thread_id, strlen(rec->thread_id) + 1);
        if (rec->user_id && !(l->user = strdup(rec->user_id)))
            return -ENOMEM;
    }
    int same = strcmp(l->thread_id, rec->thread_id) == 0 &&
               (l->user ? rec->user_id && strcmp(l->user, rec->user_id) == 0 : !rec->user_id);
    if (!same || l->held_bytes + rec->line_len > HELD_MAX) {
        l->held_ok = 0;
        for (size_t i = 0; i < l->nruns; i++)
            held_release(&l->runs[i]);
        return 0;
    }
    size_t had = c->held.len;
    int rc = held_add(c, rec);
    l->held_bytes += c->held.len - had;
    return rc;
}

int rfs_lines_add(rfs_lines *l, const rs_record *rec)
{
    int rc = lines_add(&l->all, rec, 0);
    if (rc || !rec->run_id)
        return rc;
    /* Rows come a run at a time (by seq: mostly; a writer's: a run's file each). */
    size_t at = l->at;
    if (at >= l->nruns || strcmp(l->runs[at].run_id, rec->run_id) != 0)
        for (at = 0; at < l->nruns && strcmp(l->runs[at].run_id, rec->run_id) != 0; at++)
            ;
    if (at == l->nruns) {
        /* Ids the listing would not give have no views. */
        if (strlen(rec->run_id) > RS_ID_MAX)
            return 0;
        if (rs_array_grow(&l->runs, &l->cap, l->nruns + 1, sizeof *l->runs))
            return -ENOMEM;
        l->runs[at] = (lines_count){.held = RS_BUF_INIT};
        memcpy(l->runs[at].run_id, rec->run_id, strlen(rec->run_id) + 1);
        l->nruns++;
    }
    /* A run the writer left with too few rows for its documents to be sized (glance_upkeep)
     * needs none held. */
    if (at != l->at && l->at < l->nruns && l->runs[l->at].count < STORED_ROWS) {
        lines_count *was = &l->runs[l->at], *now = &l->runs[at];
        l->held_bytes -= was->held.len;
        /* Its room serves the next run, which holds nothing yet (a run's rows come together). */
        if (!now->rows && !now->nrows) {
            now->held = was->held;
            now->rows = was->rows;
            now->rows_cap = was->rows_cap;
            rs_buf_reset(&now->held);
            was->held = (rs_buf)RS_BUF_INIT;
            was->rows = NULL;
            was->nrows = was->rows_cap = 0;
        } else {
            held_release(was);
        }
    }
    l->at = at;
    rc = lines_add(&l->runs[at], rec, 1);
    return rc || !l->hold ? rc : lines_hold(l, &l->runs[at], rec);
}

void rfs_lines_free(rfs_lines *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nruns; i++)
        lines_release(&l->runs[i]);
    lines_release(&l->all);
    free(l->runs);
    free(l->user);
    free(l);
}

/* Keep the sizes l counted, the thread's log first; *missed set when a log is not what l
 * counted (with stop, nothing more is kept then: l's rows may be only some of the thread's). */
static int lines_keep_all(rs_store *s, rfs_scope *sc, const rfs_node *n, const rfs_lines *l,
                          int64_t rewrites, int stop, int *missed, rs_err *err)
{
    held_sizes held = {0};
    rfs_scope quiet = *sc;
    quiet.keep_size = hold_size;
    quiet.ctx = &held;
    int rc = lines_keep_log(s, &quiet, n, l, &l->all, rewrites, missed, err);
    for (size_t i = 0; rc >= 0 && !(stop && *missed) && i < l->nruns; i++)
        rc = lines_keep_log(s, &quiet, n, l, &l->runs[i], rewrites, missed, err);
    /* A rewrite since the rows were counted: their sums may be of rows as they were. The
     * count only grows: one look after every size was made serves them all (a look a size
     * was a round trip each on PostgreSQL). */
    int64_t now = 0;
    int same = rc >= 0 && held.n && rs_store_rewrites(s, &now) == 0 && now == rewrites;
    if (rc >= 0 && held.n && !same)
        *missed = 1;
    for (size_t i = 0; same && i < held.n; i++) {
        kept one = {.view = held.v[i].view, .token = held.v[i].token, .stored = 1};
        kept_put(s, sc, &one, held.v[i].size);
    }
    free(held.v);
    return rc < 0 ? rc : 0;
}

/* rs_store_runs_info's fn: the store's facts of a run l counted, for lines_keep_log. */
static int run_given(void *ctx, const char *run_id, const rs_log_info *info, int64_t msg_size)
{
    rfs_lines *l = ctx;
    /* The store's order is mostly the runs' as the import stored them. */
    size_t at = l->at < l->nruns ? l->at : 0;
    if (strcmp(l->runs[at].run_id, run_id) != 0)
        for (at = 0; at < l->nruns && strcmp(l->runs[at].run_id, run_id) != 0; at++)
            ;
    if (at == l->nruns)
        return 0; /* a run with no row the import stored: l's count of the thread misses it */
    l->runs[at].given = 1;
    l->runs[at].info = *info;
    l->runs[at].msg_size = msg_size;
    l->at = at + 1;
    return 0;
}

int rfs_view_size_fed(rs_store *s, rfs_scope *sc, const rfs_node *n, rfs_lines *l, rs_err *err)
{
    int64_t rewrites = 0;
    int missed = 0;
    if (n->kind != RFS_THREAD)
        return 0;
    int rc = rs_store_rewrites(s, &rewrites);
    /* Every run's log facts in one read where the store gives them so (else one a run), for
     * every owner's view only: an owner's share of a shared log has its own. */
    l->at = 0;
    if (!rc && !sc->user && l->nruns &&
        (rc = rs_store_runs_info(s, n->thread_id, run_given, l, err)) == -ENOSYS)
        rc = 0;
    rc = rc ? rc : lines_keep_all(s, sc, n, l, rewrites, 1, &missed, err);
    return rc ? rc : !missed;
}

int rfs_view_size_lines(rs_store *s, rfs_scope *sc, const rfs_node *n, rs_err *err)
{
    if (n->kind != RFS_THREAD)
        return size_tree(s, sc, n, 1, err);
    /* One pass over the thread's rows counts every run's line views: a query per view (and
     * the listings of types/) would read each row again. */
    int64_t rewrites = 0;
    int missed = 0;
    rs_query q = RS_QUERY_INIT;
    q.thread_id = n->thread_id;
    q.user = sc->user;
    rfs_lines *l = NULL;
    rs_cursor *c = NULL;
    const rs_record *rec;
    int rc = rfs_lines_new(&l) ? rs_err_set(err, -ENOMEM, "out of memory") : 0;
    if (!rc)
        l->hold = 0; /* read here: a run's pass reads its rows as fast */
    rc = rc ? rc : rs_store_rewrites(s, &rewrites);
    rc = rc ? rc : rs_store_query(s, &q, &c, err);
    while (!rc && (rc = rs_cursor_next(c, &rec)) == 1)
        rc = rfs_lines_add(l, rec);
    rs_cursor_free(c);
    if (rc >= 0)
        rc = lines_keep_all(s, sc, n, l, rewrites, 0, &missed, err);
    rfs_lines_free(l);
    return rc < 0 ? rc : 0;
}

/* The reader's file as it is now: one rendering of a document serves both its existence and
 * its bytes, held in r->doc (what it held before let go). */
static int reader_stat(rfs_reader *r, rs_store *s, rfs_stat *st, rs_err *err)
{
    rs_buf doc = RS_BUF_INIT;
    rfs_doc *fresh = NULL;
    int rc = view_stat(s, &r->scope, r->node, st, &doc, NULL, err);
    if (!rc && st->shape == RFS_SHAPE_DOC && rfs_doc_intern(&doc, &fresh))
        rc = rs_err_set(err, -ENOMEM, "out of memory");
    rs_buf_release(&doc);
    if (!rc) {
        rfs_doc_release(r->doc);
        r->doc = fresh;
    }
    return rc;
}

int rfs_reader_open(rfs_reader **out, rs_store *s, const rfs_scope *sc, const rfs_node *n,
                    rs_err *err)
{
    rfs_reader *r = calloc(1, sizeof *r);
    if (!r)
        return rs_err_set(err, -ENOMEM, "out of memory");
    r->node = n;
    r->scope = *sc;
    r->pending = (rs_buf)RS_BUF_INIT;
    r->rewrites = sc->sizes ? rfs_sizes_rewrites_seen(sc->sizes) : 0;
    rfs_stat st;
    int rc = reader_stat(r, s, &st, err);
    if (!rc && st.shape == RFS_SHAPE_DIR)
        rc = -EISDIR;
    if (rc) {
        rfs_reader_free(r);
        return rc;
    }
    r->shape = st.shape == RFS_SHAPE_FOLLOW ? RFS_SHAPE_STREAM : st.shape;
    /* Read after the stat's look, so on SQLite the count kept for its data version: no
     * query more for most opens. */
    r->base = -1;
    if (n->thread_id[0] && (r->shape == RFS_SHAPE_LOG || r->shape == RFS_SHAPE_STREAM) &&
        rs_store_rewrites(s, &r->base))
        r->base = -1;
    r->mtime_ns = st.mtime_ns;
    r->version = r->checked = st.version;
    r->size = r->shape == RFS_SHAPE_LOG || r->shape == RFS_SHAPE_DOC ? st.size : -1;
    *out = r;
    return 0;
}

void rfs_reader_free(rfs_reader *r)
{
    if (!r)
        return;
    rfs_transcript_free(r->transcript);
    rfs_otel_free(r->otel);
    rfs_otel_marks_release(r->marks);
    rfs_doc_release(r->doc);
    rs_buf_release(&r->pending);
    rs_history_free(r->history);
    rs_buf_reset(&r->pending);
    ahead_settle(r);
    free(r->sent);
    free(r);
}

rfs_shape rfs_reader_shape(const rfs_reader *r)
{
    return r->shape;
}

int64_t rfs_reader_mtime(const rfs_reader *r)
{
    return r->mtime_ns;
}

int64_t rfs_reader_version(const rfs_reader *r)
{
    return r->version;
}

int rfs_reader_search_from(const rfs_reader *r)
{
    return r->search.from;
}

int64_t rfs_reader_size(const rfs_reader *r)
{
    return r->size;
}

void rfs_reader_keep_behind(rfs_reader *r, size_t bytes)
{
    r->behind = bytes;
}

void rfs_reader_direct(rfs_reader *r)
{
    r->direct = 1;
}

/* The log's bytes [off, off + size) as the rows are now. */
static int log_copy(rfs_reader *r, rs_store *s, int64_t off, size_t size, rs_buf *out, rs_err *err)
{
    const rfs_node *n = r->node;
    int is_run = n->kind == RFS_R_EVENTS;
    rs_cursor *c;
    int rc = rs_store_log_seek(s, n->thread_id, is_run ? n->run_id : NULL, off, &c, err);
    if (rc)
        return rc;
    size_t want = out->len + size;
    if ((rc = rs_buf_grow(out, size))) {
        rs_cursor_free(c);
        return rc;
    }
    const rs_record *rec;
    while (out->len < want && (rc = rs_cursor_next(c, &rec)) == 1) {
        /* Offsets hold for one owner only: another owner's row means the log stopped being
         * exact after this reader opened; end here rather than show that row. */
        if (r->scope.user && (!rec->user_id || strcmp(rec->user_id, r->scope.user) != 0))
            break;
        int64_t line_off = is_run ? rec->run_off : rec->thread_off;
        if (line_off + (int64_t)rec->line_len <= off)
            continue;
        size_t skip = off > line_off ? (size_t)(off - line_off) : 0;
        size_t take = rec->line_len - skip;
        if (take > want - out->len)
            take = want - out->len;
        rs_buf_add(out, rec->line + skip, take);
    }
    rs_cursor_free(c);
    return rc < 0 ? rc : 0;
}

/* Whether a row of r's thread was rewritten (changed in place or deleted, by anyone) since
 * r->base: 0 when not (r->base moves on to the count read now), 1 when it was (*now: the
 * store's count, read before the thread's), or a negative errno. Asked after the bytes it
 * vouches for were read: a rewrite's count is higher than every count read before it
 * committed, so a thread's count no higher than base says none came since base was read.
 * The store's count is asked first (on SQLite kept per data version: a reader reading on
 * through a quiet store pays no query); the thread's only once that moved. */
static int thread_moved(rfs_reader *r, rs_store *s, int64_t *now)
{
    int64_t t = 0;
    int rc = rs_store_rewrites(s, now);
    if (rc)
        return rc < 0 ? rc : -EIO;
    if (r->base >= 0 && *now == r->base)
        return 0;
    if ((rc = rs_store_thread_rewrites(s, r->node->thread_id, &t)))
        return rc < 0 ? rc : -EIO;
    if (r->base < 0 || t > r->base)
        return 1;
    r->base = *now;
    return 0;
}

/* Whether the reader gave every byte of [0, end) itself (none came from the kernel's
 * cache, whose pages may be of a rendering it cannot compare). */
static int given_below(const rfs_reader *r, int64_t end)
{
    if (end <= r->given_to)
        return 1;
    for (int64_t at = 0;;) {
        int64_t next = at;
        for (size_t i = 0; i < r->nsent; i++)
            if (r->sent[i].off <= at && r->sent[i].end > next)
                next = r->sent[i].end;
        if (next >= end)
            return 1;
        if (next == at)
            return 0;
        at = next;
    }
}

static int sent_same(rfs_reader *r, rfs_reader *fresh, rs_store *s, rs_err *err);
static int stale(rfs_reader *r, rs_err *err);

/* A read of a log that goes on from bytes given before: a log is read by byte offset in the
 * rendering of the rows as they are, so after another writer's UPDATE or DELETE (or a
 * redaction) of a row of its thread an offset may point into another line. The read is kept
 * only where no row of the thread was rewritten since the bytes before it were read (by this
 * reader or, for pages the kernel kept, by another): where one was, it fails with ESTALE. A
 * rewrite is rare beside reads, and comparing instead would hash every byte every log reader
 * gives (a quarter more of a cat's CPU); a rewrite in another thread costs the store's count
 * alone. */
static int read_log(rfs_reader *r, rs_store *s, int64_t off, size_t size, rs_buf *out, rs_err *err)
{
    /* A read from the start continues nothing: the reader reads the log again, as it is now
     * (what it gave before, it no longer stands by). */
    if (off == 0) {
        r->gave = 0;
        r->given_to = 0;
    }
    size_t had = out->len;
    int rc = log_copy(r, s, off, size, out, err);
    if (rc || (!r->gave && off == 0))
        return rc;
    int64_t now = 0;
    int moved = thread_moved(r, s, &now);
    if (moved <= 0)
        return moved;
    rs_buf_setlen(out, had);
    return stale(r, err);
}

/* transcript.md asks for each run's outcome: the line of its run.terminal. */
static int run_terminal(void *ctx, const char *run_id, rs_buf *out)
{
    rfs_reader *r = ctx;
    rfs_node once = *r->node;
    once.kind = RFS_R_ONCE;
    if (rs_fmt(once.run_id, sizeof once.run_id, "%s", run_id) < 0 ||
        rs_fmt(once.name, sizeof once.name, "run.terminal") < 0)
        return -ENAMETOOLONG;
    int rc = render_once(r->store, &r->scope, &once, out, NULL);
    return rc == -ENOENT ? 0 : rc;
}

/* otel.json's marks: the mount's, kept beside its size, or (not kept there) the reader's
 * own, which serve its own reads back. */
static int otel_marks(rfs_reader *r, rs_store *s, rs_err *err)
{
    if (r->marks_looked)
        return 0;
    r->marks_looked = 1;
    const rfs_node *n = r->node;
    int rc = 0;
    if (r->scope.sizes) {
        rs_log_info info;
        rs_buf key = RS_BUF_INIT;
        kept k;
        if (!(rc = rs_store_log_info(s, n->thread_id, n->run_id, r->scope.user, &info, err)) &&
            !(rc = size_key(&r->scope, n, &key)) && !(rc = kept_names(s, &key, &info, &k)))
            r->marks = rfs_sizes_marks(r->scope.sizes, key.buf, &info);
        rs_buf_release(&key);
    }
    if (!rc && !r->marks && rfs_otel_marks_new(&r->marks))
        rc = -ENOMEM;
    return rc;
}

/* Rows after last_seq into pending: their lines, or for transcript.md their rendering. */
/* The next row of a transcript.md (tr) or otel.json (ot) rendering, read as that view reads. */
static int feed_row(rfs_transcript *tr, rfs_otel *ot, const rs_record *rec, rs_buf *out)
{
    rfs_ev ev;
    if (tr) {
        rfs_ev_read_all(rec, &ev);
        return rfs_transcript_feed(tr, &ev, out);
    }
    rfs_ev_read(rec, &ev);
    return rfs_otel_feed(ot, &ev, out);
}

static int stream_fill(rfs_reader *r, rs_store *s, int64_t want_end, rs_err *err)
{
    int rc = 0;
    int transcript = r->node->kind == RFS_T_TRANSCRIPT, otel = r->node->kind == RFS_R_OTEL;
    if (transcript && !r->transcript &&
        (rc = rfs_transcript_new(&r->transcript, r->node->thread_id, run_terminal, r)))
        return rc;
    rs_target t = {
        .thread_id = r->node->thread_id, .run_id = r->node->run_id, .user = r->scope.user};
    if (otel && !r->otel && (rc = rfs_glance_otel_new(s, &t, r->scope.service_name, &r->otel, err)))
        return rc;
    if (otel && (rc = otel_marks(r, s, err)))
        return rc;
    r->store = s;
    if (r->node->kind == RFS_T_HISTORY && !r->history &&
        (rc = rs_history_open(s, r->node->thread_id, r->scope.user, &r->history, err)))
        return rc;
    while (r->next_off + (int64_t)r->pending.len < want_end) {
        rs_cursor *c;
        rc = stream_open(s, &r->scope, r->node, r->last_seq, 0, r->history, &c, err);
        if (rc)
            return rc;
        const rs_record *rec;
        int rows = 0, end = 0;
        while (r->next_off + (int64_t)r->pending.len < want_end) {
            /* The rows end only when the cursor says so, not when pending is full. */
            if ((rc = rs_cursor_next(c, &rec)) != 1) {
                end = rc == 0;
                break;
            }
            rows++;
            r->last_seq = rec->seq;
            rc = transcript || otel
                     ? feed_row(transcript ? r->transcript : NULL, r->otel, rec, &r->pending)
                     : rs_buf_add(&r->pending, rec->line, rec->line_len);
            if (rc)
                break;
            int64_t made = r->next_off + (int64_t)r->pending.len;
            if (otel && r->marks && made >= r->mark_at)
                r->mark_at = rfs_otel_mark(r->marks, r->otel, made, rec->seq);
        }
        rs_cursor_free(c);
        if (rc < 0)
            return rc;
        if (end && (transcript || otel) && !r->finished) {
            r->finished = 1;
            if ((rc = transcript ? rfs_transcript_finish(r->transcript, &r->pending)
                                 : rfs_otel_finish(r->otel, &r->pending)))
                return rc;
            continue;
        }
        if (rows == 0 || end)
            break;
    }
    return 0;
}

/* A read this far from what a stream reader holds finds its row from the end instead of
 * rendering every row before it (tail -n 50 of a large messages.jsonl). */
#define SEEK_GAP (64 * 1024)
/* The most rows a seek looks back through before it renders from the start instead. */
#define SEEK_ROWS_MAX (64 * 1024)

/* Views whose bytes are their rows' lines, nothing added or left out by other rows
 * (history.jsonl leaves rows out, each by what it holds and the thread's hidden runs). */
static int lines_view(rfs_kind k)
{
    return k == RFS_T_MESSAGES || k == RFS_R_MESSAGES || k == RFS_R_TYPE || k == RFS_R_TASK ||
           k == RFS_T_HISTORY;
}

/* The view's size as the store or the size cache keeps it, with the log's highest seq it
 * holds: 1 when known and unchanged while asked, else 0. */
static int known_size(rfs_reader *r, rs_store *s, int64_t *size, int64_t *last_seq, rs_err *err)
{
    const rfs_node *n = r->node;
    const rfs_scope *sc = &r->scope;
    const char *run = n->kind == RFS_T_MESSAGES || n->kind == RFS_T_HISTORY ? NULL : n->run_id;
    rs_log_info before, after;
    int rc = rs_store_log_info(s, n->thread_id, run, sc->user, &before, err);
    if (rc || !before.exists)
        return rc;
    if (n->kind == RFS_T_MESSAGES || n->kind == RFS_R_MESSAGES)
        rc = rs_store_messages_size(s, n->thread_id, run, sc->user, size, err);
    if (rc == 0) {
        /* Kept by this mount, or in the store by any (a stat computed it). */
        rs_buf key = RS_BUF_INIT;
        kept k = {0};
        rc = size_key(sc, n, &key);
        rc = rc ? rc : kept_names(s, &key, &before, &k);
        rc = rc ? rc : kept_get(s, sc, &key, &before, &k, size);
        rs_buf_release(&key);
    }
    if (rc <= 0)
        return rc;
    /* The size and the seq are of one state of the log: no row came or went between. */
    if ((rc = rs_store_log_info(s, n->thread_id, run, sc->user, &after, err)))
        return rc;
    *last_seq = before.last_seq;
    return rfs_view_version(&before) == rfs_view_version(&after);
}

/* Place a lines view's reader at the row holding off, found from the view's end: its
 * newest rows' lengths, summed back to off, cost what is read rather than what precedes
 * it. 1 when placed, 0 when it cannot be or when rendering on is the shorter way (ahead:
 * the bytes a rendering from where the reader is passes before off), and the caller
 * renders on (or from the start). */
static int stream_seek(rfs_reader *r, rs_store *s, int64_t off, int64_t ahead, rs_err *err)
{
    int64_t size = 0, last_seq = 0;
    int rc = known_size(r, s, &size, &last_seq, err);
    /* A cat's readahead arrives out of order: a read a few pages on is no tail. */
    if (rc <= 0)
        return rc;
    if (size - off > ahead)
        return 0;
    /* The hidden runs as they are now: the rows after the seek follow from them too. */
    if (r->node->kind == RFS_T_HISTORY) {
        rs_history_free(r->history);
        r->history = NULL;
        if ((rc = rs_history_open(s, r->node->thread_id, r->scope.user, &r->history, err)))
            return rc;
    }
    rc = 0;
    int64_t need = size - off, start = size, seq = last_seq + 1;
    struct row_len {
        int64_t seq, len;
    } *rows = NULL;
    size_t cap = 0, n = 0;
    for (int64_t want = 64; need > 0 && rc == 0; want *= 4) {
        if (want > SEEK_ROWS_MAX)
            want = SEEK_ROWS_MAX;
        rs_cursor *c;
        if ((rc = stream_query(s, &r->scope, r->node, 0, want, last_seq + 1, 1, r->history, &c,
                               err)))
            break;
        const rs_record *rec;
        n = 0;
        while ((rc = rs_cursor_next(c, &rec)) == 1) {
            if (rs_array_grow(&rows, &cap, n + 1, sizeof *rows)) {
                rc = rs_err_set(err, -ENOMEM, "out of memory");
                break;
            }
            rows[n++] = (struct row_len){rec->seq, (int64_t)rec->line_len};
        }
        rs_cursor_free(c);
        if (rc < 0)
            break;
        int64_t sum = 0;
        for (size_t i = n; i-- > 0;) {
            sum += rows[i].len;
            if (sum >= need) {
                start = size - sum;
                seq = rows[i].seq;
                rc = 1;
                break;
            }
        }
        /* Every row below the seq and still short of off, or as far back as a seek goes. */
        if (rc == 0 && ((int64_t)n < want || want == SEEK_ROWS_MAX))
            break;
    }
    free(rows);
    if (need <= 0)
        rc = 1; /* at or past the end it held: rows after last_seq follow */
    if (rc != 1 || start < 0)
        return rc < 0 ? rc : 0;
    rs_buf_reset(&r->pending);
    r->next_off = start;
    r->last_seq = seq - 1;
    return 1;
}

/* Drop the bytes before off but the last r->behind of them (dropped in steps of that much,
 * so that what is kept is not moved at every read). */
static void stream_trim(rfs_reader *r, int64_t off)
{
    int64_t lag = off - r->next_off;
    if (lag <= 2 * (int64_t)r->behind)
        return;
    size_t drop = (size_t)(lag - (int64_t)r->behind);
    if (drop > r->pending.len)
        drop = r->pending.len;
    rs_buf_remove_front(&r->pending, drop);
    r->next_off += (int64_t)drop;
}

/* Place an otel.json reader at the mark nearest before off, when one lies past what it
 * holds (or off is behind it): 1 when placed, 0 when not (it renders on, or from the start). */
static int otel_seek(rfs_reader *r, rs_store *s, int64_t off, rs_err *err)
{
    int rc = otel_marks(r, s, err);
    if (rc || !r->marks)
        return rc;
    rfs_otel *o;
    int64_t at, seq, held = off < r->next_off ? -1 : r->next_off + (int64_t)r->pending.len;
    if ((rc = rfs_otel_resume(r->marks, off, held, &o, &at, &seq)) != 1)
        return rc;
    rfs_otel_free(r->otel);
    r->otel = o;
    r->next_off = at;
    r->last_seq = seq;
    r->finished = 0;
    rs_buf_reset(&r->pending);
    return 1;
}

/* A read of the bytes the stat that sized the view kept (view_stat), while the view is of
 * the version the reader opened: 1 when read from them, 0 when none are kept, 2 when a
 * rewrite the reader has not seen dropped them (reader_rewritten first). The kept bytes are
 * looked up at each read, not held by the reader, so a rewrite drops them at once. */
static int kept_read(rfs_reader *r, rs_store *s, int64_t off, size_t size, rs_buf *out, rs_err *err)
{
    const rfs_node *n = r->node;
    const rfs_scope *sc = &r->scope;
    if (r->unkept || !sc->sizes || n->kind == RFS_T_SINCE || n->kind == RFS_R_SINCE)
        return 0;
    rs_log_info info;
    int in_run = n->kind >= RFS_RUN && n->kind != RFS_T_SEARCH_DIR;
    int rc = rs_store_log_info(s, n->thread_id, in_run ? n->run_id : NULL, sc->user, &info, err);
    if (rc || !info.exists || rfs_view_version(&info) != r->version) {
        /* The rows changed since it opened. After an append the bytes it gave are still the
         * file's, but after a rewrite by another process (which the table learns only at the
         * hub's next tick) its offsets may be of another rendering: it must not render on
         * from them before it compares what it gave. */
        if (!rc && r->gave && rewrites_now(r, s) != r->rewrites)
            return 2;
        r->unkept = !rc;
        return rc;
    }
    rs_buf key = RS_BUF_INIT;
    kept k = {0};
    rfs_kept_rows *bytes = NULL;
    rc = size_key(sc, n, &key);
    if (!rc)
        rc = kept_names(s, &key, &info, &k);
    if (!rc && k.stored) {
        /* Another writer's rewrite the hub has not told yet drops them here. */
        rfs_sizes_rewrites(sc->sizes, k.rewrites);
        if (r->gave && rfs_sizes_rewrites_seen(sc->sizes) != r->rewrites) {
            rs_buf_release(&key);
            return 2;
        }
        bytes = rfs_sizes_rows(sc->sizes, key.buf, &info);
    }
    rs_buf_release(&key);
    if (rc || !bytes || bytes->fd < 0) {
        if (bytes)
            rfs_sizes_rows_done(sc->sizes, bytes);
        r->unkept = !rc;
        return rc;
    }
    rc = rfs_kept_pread(bytes, off, size, out);
    rfs_sizes_rows_done(sc->sizes, bytes);
    if (rc < 0)
        return rs_err_set(err, rc, "cannot read a kept rendering");
    r->kept_last = 1;
    return 1;
}

/* Render a stream again from its start at the next read, holding nothing rendered before. */
static void stream_restart(rfs_reader *r)
{
    r->next_off = 0;
    r->last_seq = 0;
    r->finished = 0;
    rfs_transcript_free(r->transcript);
    r->transcript = NULL;
    rfs_otel_free(r->otel);
    r->otel = NULL;
    rs_history_free(r->history); /* a new pass sees the runs as they are now */
    r->history = NULL;
    rs_buf_reset(&r->pending);
}

static int stale(rfs_reader *r, rs_err *err);

static int read_stream(rfs_reader *r, rs_store *s, int64_t off, size_t size, rs_buf *out,
                       rs_err *err)
{
    int kept = kept_read(r, s, off, size, out, err);
    if (kept == 2) {
        int rc = reader_rewritten(r, s, err);
        if (rc)
            return rc;
        kept = kept_read(r, s, off, size, out, err);
        if (kept == 2)
            return stale(r, err);
    }
    if (kept)
        return kept < 0 ? kept : 0;
    int64_t ahead = off < r->next_off ? off : off - r->next_off - (int64_t)r->pending.len;
    int far = ahead >= SEEK_GAP;
    /* A reader that gave bytes and now finds its place by offset (a seek, or from the start)
     * must do so in the rendering it gave them from: another process's rewrite the table has
     * not heard of is looked for in the store first (on these paths only: a reader reading
     * on renders on from its last row). */
    if ((far || off < r->next_off) && r->gave && r->scope.sizes && !r->stale &&
        rewrites_now(r, s) != r->rewrites) {
        int rc = reader_rewritten(r, s, err);
        if (rc)
            return rc;
        ahead = off < r->next_off ? off : off - r->next_off - (int64_t)r->pending.len;
        far = ahead >= SEEK_GAP;
    }
    int rc = far && lines_view(r->node->kind) ? stream_seek(r, s, off, ahead, err) : 0;
    if (rc == 0 && r->node->kind == RFS_R_OTEL && (far || off < r->next_off))
        rc = otel_seek(r, s, off, err);
    if (rc < 0)
        return rc;
    if (rc == 0 && off < r->next_off)
        stream_restart(r);
    stream_trim(r, off);
    rc = stream_fill(r, s, off + (int64_t)size, err);
    if (rc)
        return rc;
    stream_trim(r, off);
    if (off < r->next_off || off - r->next_off >= (int64_t)r->pending.len)
        return 0;
    size_t at = (size_t)(off - r->next_off), take = r->pending.len - at;
    if (take > size)
        take = size;
    if ((rc = rs_buf_add(out, r->pending.buf + at, take)))
        return rc;
    /* What was delivered goes (but the last r->behind bytes): a handle between reads holds
     * no more than the rest of the row it is in, whatever the read's size. */
    stream_trim(r, off + (int64_t)take);
    if (r->pending.len == 0)
        rs_buf_release(&r->pending);
    return 0;
}

/* The exact size of a streamed view: render it through one cursor, counting bytes (a
 * reader's chunks each open a cursor, which a view like history.jsonl pays for again); the
 * bytes to keep too (NULL: not kept). */
/* history.jsonl's size (and its bytes to keep and how->bytes) with its kept state
 * (rfs_glance_history_count's): the thread's message rows read through h, each counted by
 * run before the hidden runs filter it, as rs_store_history's cursor would. */
static int history_size(rs_store *s, const rfs_scope *sc, const rfs_node *n, const sizing *how,
                        rfs_kept_writer *keep, rs_buf *state, int64_t *size, int64_t *last,
                        rs_err *err)
{
    int give = how && how->bytes;
    rs_history *h = NULL;
    rfs_map *runs = NULL;
    rs_cursor *c = NULL;
    const rs_record *rec;
    rs_query q = RS_QUERY_INIT;
    q.thread_id = n->thread_id;
    q.user = sc->user;
    q.messages_only = 1;
    *size = 0;
    int rc = rfs_map_new(&runs, sizeof(int64_t)) ? rs_err_set(err, -ENOMEM, "out of memory") : 0;
    rc = rc ? rc : rs_history_open(s, n->thread_id, sc->user, &h, err);
    rc = rc ? rc : rs_store_query(s, &q, &c, err);
    while (!rc && (rc = rs_cursor_next(c, &rec)) == 1) {
        int shows;
        *last = rec->seq;
        if ((rc = rfs_glance_history_count(h, c, rec, runs, &shows)) || !shows)
            continue;
        *size += (int64_t)rec->line_len;
        rfs_kept_writer_add(keep, rec->line, rec->line_len);
        give = give && how->bytes(how->ctx, rec->line, rec->line_len) == 0;
    }
    rs_cursor_free(c);
    if (!rc)
        rc = rfs_glance_history_save(runs, state);
    rfs_map_free(runs);
    rs_history_free(h);
    return rc;
}

/* state: where a history.jsonl's or transcript.md's kept state goes (NULL: none made).
 * *last: the highest seq of the rows read (left when none). */
static int stream_size(rs_store *s, const rfs_scope *sc, const rfs_node *n, const sizing *how,
                       rfs_kept_writer *keep, rs_buf *state, int64_t *size, int64_t *last,
                       rs_err *err)
{
    if (state && n->kind == RFS_T_HISTORY)
        return history_size(s, sc, n, how, keep, state, size, last, err);
    int give = how && how->bytes;
    rfs_reader r = {.node = n, .scope = *sc, .store = s, .pending = RS_BUF_INIT};
    int transcript = n->kind == RFS_T_TRANSCRIPT, otel = n->kind == RFS_R_OTEL;
    rs_target t = {.thread_id = n->thread_id, .run_id = n->run_id, .user = sc->user};
    rs_cursor *c;
    int rc = transcript ? rfs_transcript_new(&r.transcript, n->thread_id, run_terminal, &r)
             : otel     ? rfs_glance_otel_new(s, &t, sc->service_name, &r.otel, err)
                        : 0;
    if (!rc && transcript && state && (rc = rfs_transcript_tally(r.transcript)))
        rc = rs_err_set(err, rc, "out of memory");
    if (rc || (rc = stream_open(s, sc, n, 0, 0, NULL, &c, err))) {
        rfs_transcript_free(r.transcript);
        rfs_otel_free(r.otel);
        return rc;
    }
    const rs_record *rec;
    *size = 0;
    while ((rc = rs_cursor_next(c, &rec)) == 1) {
        *last = rec->seq;
        if (!transcript && !otel) {
            *size += (int64_t)rec->line_len;
            rfs_kept_writer_add(keep, rec->line, rec->line_len);
            give = give && how->bytes(how->ctx, rec->line, rec->line_len) == 0;
            continue;
        }
        if ((rc = feed_row(transcript ? r.transcript : NULL, r.otel, rec, &r.pending)))
            break;
        *size += (int64_t)r.pending.len;
        rfs_kept_writer_add(keep, r.pending.buf, r.pending.len);
        give = give && how->bytes(how->ctx, r.pending.buf, r.pending.len) == 0;
        rs_buf_reset(&r.pending);
    }
    rs_cursor_free(c);
    if (rc == 0 && (transcript || otel) &&
        !(rc = transcript ? rfs_transcript_finish_kept(r.transcript, &r.pending, state)
                          : rfs_otel_finish(r.otel, &r.pending))) {
        *size += (int64_t)r.pending.len;
        rfs_kept_writer_add(keep, r.pending.buf, r.pending.len);
        if (give)
            how->bytes(how->ctx, r.pending.buf, r.pending.len);
    }
    rfs_transcript_free(r.transcript);
    rfs_otel_free(r.otel);
    rs_buf_release(&r.pending);
    return rc;
}

/* A stream reader takes what fresh rendered in place of its own: the same bytes, from rows as
 * they are now (its transcript's, otel's and history's state with them). */
static void stream_take(rfs_reader *r, rfs_reader *fresh)
{
    rfs_transcript_free(r->transcript);
    rfs_otel_free(r->otel);
    rfs_otel_marks_release(r->marks);
    rs_history_free(r->history);
    rs_buf_release(&r->pending);
    r->next_off = fresh->next_off;
    r->last_seq = fresh->last_seq;
    r->pending = fresh->pending;
    r->transcript = fresh->transcript;
    if (r->transcript)
        rfs_transcript_set_ctx(r->transcript, r); /* run_terminal reads its reader */
    r->finished = fresh->finished;
    r->history = fresh->history;
    r->otel = fresh->otel;
    r->marks = fresh->marks;
    r->mark_at = fresh->mark_at;
    r->marks_looked = fresh->marks_looked;
    fresh->pending = (rs_buf)RS_BUF_INIT;
    fresh->transcript = NULL;
    fresh->history = NULL;
    fresh->otel = NULL;
    fresh->marks = NULL;
}

/* The reader's reads fail from now on, and it lets go of everything it rendered. */
static int stale(rfs_reader *r, rs_err *err)
{
    if (!r->stale) {
        r->stale = 1;
        rfs_doc_release(r->doc);
        r->doc = NULL;
        rfs_transcript_free(r->transcript);
        r->transcript = NULL;
        rfs_otel_free(r->otel);
        r->otel = NULL;
        rfs_otel_marks_release(r->marks);
        r->marks = NULL;
        rs_history_free(r->history);
        r->history = NULL;
        rs_buf_release(&r->pending);
        ahead_settle(r);
    }
    return rs_err_set(err, -ESTALE,
                      "rows this file was rendered from were rewritten while it was read (a "
                      "redaction, another writer's update or delete): open it again");
}

/* Note the bytes [off, off + n) given to the reader's caller: a re-read of given bytes changes
 * nothing, a read from inside or at the end of a stretch extends it, any other starts one. */
static void sent_note(rfs_reader *r, int64_t off, const char *p, size_t n)
{
    int64_t end = off + (int64_t)n;
    if (n == 0 || r->sent_over)
        return;
    sent_range *g = NULL;
    for (size_t i = 0; i < r->nsent; i++) {
        sent_range *h = &r->sent[i];
        if (h->off <= off && end <= h->end)
            return;
        if (h->off <= off && off <= h->end && (!g || h->end > g->end))
            g = h;
    }
    if (!g) {
        if (r->nsent == SENT_RANGES ||
            rs_array_grow(&r->sent, &r->sent_cap, r->nsent + 1, sizeof *r->sent)) {
            r->sent_over = 1;
            return;
        }
        g = &r->sent[r->nsent++];
        g->off = g->end = off;
        SHA256_Init(&g->sha);
    }
    size_t skip = (size_t)(g->end - off);
    SHA256_Update(&g->sha, p + skip, n - skip);
    g->end = end;
}

/* The stretches' bytes of [at, at + n) (p) into their hashes ctx. */
static void sent_feed(const rfs_reader *r, SHA256_CTX *ctx, int64_t at, const char *p, size_t n)
{
    for (size_t i = 0; i < r->nsent; i++) {
        int64_t lo = r->sent[i].off > at ? r->sent[i].off : at;
        int64_t hi = r->sent[i].end < at + (int64_t)n ? r->sent[i].end : at + (int64_t)n;
        if (lo < hi)
            SHA256_Update(&ctx[i], p + (lo - at), (size_t)(hi - lo));
    }
}

/* Whether fresh renders every stretch r gave as the bytes r gave there (their hashes): the
 * stretches' span rendered in order, a megabyte at a time, the gaps between them skipped
 * (fresh finds a far offset as any reader does). 1 when it does, 0 when not, or a negative
 * errno. */
static int sent_same(rfs_reader *r, rfs_reader *fresh, rs_store *s, rs_err *err)
{
    if (r->nsent == 0)
        return 1;
    SHA256_CTX *ctx = calloc(r->nsent, sizeof *ctx);
    if (!ctx)
        return rs_err_set(err, -ENOMEM, "out of memory");
    int search = rfs_search_is_result(r->node->kind), rc = 0, whole = 1;
    for (size_t i = 0; i < r->nsent; i++)
        SHA256_Init(&ctx[i]);
    rs_buf got = RS_BUF_INIT;
    int64_t at = INT64_MAX;
    for (size_t i = 0; i < r->nsent; i++)
        at = r->sent[i].off < at ? r->sent[i].off : at;
    for (;;) {
        /* The end of the stretches' bytes from at on (those overlapping at, or the next). */
        int64_t stop = -1, next = INT64_MAX;
        for (size_t i = 0; i < r->nsent; i++) {
            if (r->sent[i].off <= at && r->sent[i].end > at && r->sent[i].end > stop)
                stop = r->sent[i].end;
            if (r->sent[i].off > at && r->sent[i].off < next)
                next = r->sent[i].off;
        }
        if (stop < 0 && next == INT64_MAX)
            break;
        if (stop < 0) {
            at = next;
            continue;
        }
        int64_t left = stop - at;
        size_t want = left < ((int64_t)1 << 20) ? (size_t)left : (size_t)1 << 20;
        rs_buf_reset(&got);
        rc = search ? read_search(fresh, s, at, want, &got, err)
                    : read_stream(fresh, s, at, want, &got, err);
        if (rc || got.len == 0) {
            whole = 0; /* the file ends before bytes r gave */
            break;
        }
        sent_feed(r, ctx, at, got.buf, got.len);
        at += (int64_t)got.len;
    }
    rs_buf_release(&got);
    for (size_t i = 0; !rc && whole && i < r->nsent; i++) {
        unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
        SHA256_CTX mine = r->sent[i].sha; /* r's hash goes on over what it gives next */
        SHA256_Final(a, &mine);
        SHA256_Final(b, &ctx[i]);
        whole = !memcmp(a, b, sizeof a);
    }
    free(ctx);
    return rc ? rc : whole;
}

/* r goes on from where fresh is (search results: its place, its bytes held). */
static void search_take(rfs_reader *r, rfs_reader *fresh)
{
    rs_buf_release(&r->pending);
    r->pending = fresh->pending;
    fresh->pending = (rs_buf)RS_BUF_INIT;
    r->next_off = fresh->next_off;
    r->search = fresh->search;
    ahead_settle(fresh);
    ahead_settle(r);
}

/* Rows were changed in place or deleted (a redaction, another writer's UPDATE or DELETE)
 * since the reader rendered what it holds. The reader renders again, to where it is, from
 * the rows as they are now: where the bytes it gave (a document's, and a stream's or search
 * result's by their hashes) come out the same, it goes on from that rendering, so none of
 * its state is of the old rows; where they differ, or a stream gave bytes it did not hash,
 * its reads fail with ESTALE rather than splice two renderings, and it keeps none of the old
 * bytes. */
static int reader_rewritten(rfs_reader *r, rs_store *s, rs_err *err)
{
    if (r->stale)
        return stale(r, err);
    int64_t now = r->scope.sizes ? rfs_sizes_rewrites_seen(r->scope.sizes) : 0;
    if (now == r->rewrites || r->shape == RFS_SHAPE_LOG)
        return 0;
    int search = rfs_search_is_result(r->node->kind);
    if (r->shape != RFS_SHAPE_DOC && r->shape != RFS_SHAPE_STREAM) {
        r->rewrites = now;
        return 0;
    }
    /* A stream of one thread is as it was after a rewrite elsewhere: its thread's count says
     * so for a query, where comparing would render again what it gave. */
    int64_t at = 0;
    int moved = r->shape == RFS_SHAPE_STREAM && r->base >= 0 ? thread_moved(r, s, &at) : 1;
    if (moved < 0)
        return moved;
    if (!moved) {
        r->rewrites = now;
        return 0;
    }
    if (r->sent_over)
        return stale(r, err);
    /* A document is rendered again by an open; a stream renders as it is read. */
    rfs_reader *fresh = NULL;
    int rc = 0;
    if (r->shape == RFS_SHAPE_DOC) {
        rc = rfs_reader_open(&fresh, s, &r->scope, r->node, err);
    } else if (!(fresh = calloc(1, sizeof *fresh))) {
        rc = rs_err_set(err, -ENOMEM, "out of memory");
    } else {
        *fresh = (rfs_reader){.node = r->node,
                              .scope = r->scope,
                              .shape = r->shape,
                              .size = -1,
                              .pending = RS_BUF_INIT,
                              .behind = r->behind,
                              .rewrites = now};
    }
    if (rc == -ENOENT || rc == -EISDIR)
        return stale(r, err);
    if (rc)
        return rc;
    int same = 0;
    if (r->shape == RFS_SHAPE_DOC) {
        size_t had = 0, has = 0;
        const char *a = r->doc ? rfs_doc_bytes(r->doc, &had) : "";
        const char *b = fresh->doc ? rfs_doc_bytes(fresh->doc, &has) : "";
        if (fresh->shape == RFS_SHAPE_DOC && (!r->served || (had == has && !memcmp(a, b, had)))) {
            rfs_doc_release(r->doc);
            r->doc = fresh->doc;
            fresh->doc = NULL;
            r->size = fresh->size;
            same = 1;
        }
    } else {
        rc = sent_same(r, fresh, s, err);
        same = rc == 1;
        rc = rc < 0 ? rc : 0;
        if (same && search)
            search_take(r, fresh);
        else if (same)
            stream_take(r, fresh);
    }
    rfs_reader_free(fresh);
    if (rc)
        return rc;
    if (!same)
        return stale(r, err);
    r->rewrites = now;
    return 0;
}

/* Views whose bytes before their end an append may change: history.jsonl (a later run's
 * start or terminal hides an earlier run), transcript.md (a run's heading says the status its
 * terminal gives later; a call's line waits for its result) and otel.json (its document's
 * closing bytes come before the spans of rows added after). */
static int grows_back(rfs_kind kind)
{
    return kind == RFS_T_HISTORY || kind == RFS_T_TRANSCRIPT || kind == RFS_R_OTEL;
}

/* A read of a view whose earlier bytes an append may change (grows_back), its bytes just
 * rendered into out from had: where the view's rows changed since what it gave was last found
 * to be of them (the version read after the read: equal, no row came since), every byte it
 * gave is compared, by their hashes, with a rendering of the rows as they are now, and the
 * reader goes on from that rendering where they are the same; else the read fails with
 * ESTALE rather than splice two renderings. Bytes the kernel's cache may have given it (a
 * file not read direct, whose bytes before off this reader did not all give) cannot be
 * compared: it fails where the rows changed since they were last found the same. A reader of
 * a quiet view pays one look at its log's info per read. */
static int appended(rfs_reader *r, rs_store *s, int64_t off, rs_buf *out, size_t had, rs_err *err)
{
    const rfs_node *n = r->node;
    sent_note(r, off, out->buf + had, out->len - had);
    /* A first read is found the same or not at the next, against the open's version: an
     * open that pushes a small file whole to the kernel's cache pays no look more. */
    if (off == 0 && !r->gave)
        return 0;
    rs_log_info info;
    int in_run = n->kind >= RFS_RUN && n->kind != RFS_T_SEARCH_DIR;
    int rc =
        rs_store_log_info(s, n->thread_id, in_run ? n->run_id : NULL, r->scope.user, &info, err);
    if (rc)
        return rc;
    int64_t now = info.exists ? rfs_view_version(&info) : -1;
    if (now == r->checked)
        return 0;
    int same = 0;
    rfs_reader *fresh = NULL;
    if (!r->sent_over && (r->direct || given_below(r, off))) {
        if (!(fresh = calloc(1, sizeof *fresh)))
            return rs_err_set(err, -ENOMEM, "out of memory");
        *fresh = (rfs_reader){.node = n,
                              .scope = r->scope,
                              .shape = r->shape,
                              .size = -1,
                              .pending = RS_BUF_INIT,
                              .behind = r->behind,
                              .rewrites = r->rewrites};
        rc = sent_same(r, fresh, s, err);
        same = rc == 1;
        if (same)
            stream_take(r, fresh);
        rfs_reader_free(fresh);
        if (rc < 0)
            return rc;
    }
    if (same) {
        r->checked = now;
        return 0;
    }
    rs_buf_setlen(out, had);
    stale(r, err);
    return rs_err_set(err, -ESTALE,
                      "rows appended to its thread changed bytes this file gave before (a "
                      "run's status, a call's result, a run hidden by its regeneration): open "
                      "it again");
}

/* n bytes were given from off. */
static void gave(rfs_reader *r, int64_t off, size_t n)
{
    r->gave = r->gave || n > 0;
    r->gave_end = off + (int64_t)n;
    if (off <= r->given_to && off + (int64_t)n > r->given_to)
        r->given_to = off + (int64_t)n;
}

int rfs_reader_read(rfs_reader *r, rs_store *s, int64_t off, size_t size, rs_buf *out, rs_err *err)
{
    if (off < 0)
        return -EINVAL;
    if (r->node->kind == RFS_REJECTS)
        return r->scope.rejects_read
                   ? r->scope.rejects_read(r->scope.ctx, r->scope.user, off, size, out)
                   : 0;
    int rc = reader_rewritten(r, s, err);
    if (rc)
        return rc;
    switch (r->shape) {
    case RFS_SHAPE_DOC: {
        size_t len;
        const char *bytes = r->doc ? rfs_doc_bytes(r->doc, &len) : "";
        if (!r->doc || off >= (int64_t)len)
            return 0;
        size_t n = len - (size_t)off;
        r->served = 1;
        return rs_buf_add(out, bytes + off, n < size ? n : size);
    }
    case RFS_SHAPE_LOG: {
        size_t had = out->len;
        rc = read_log(r, s, off, size, out, err);
        if (!rc)
            gave(r, off, out->len - had);
        return rc;
    }
    default: {
        size_t had = out->len;
        int search = rfs_search_is_result(r->node->kind), first = off == 0 && !r->gave;
        r->kept_last = 0;
        rc = search ? read_search(r, s, off, size, out, err)
                    : read_stream(r, s, off, size, out, err);
        /* A stream read on from bytes the kernel's cache gave (the handle gave none of
         * them) has nothing to compare them with: where a row of its thread was rewritten
         * since it opened, they may be of another rendering than its own bytes. */
        int64_t now;
        int moved = !rc && !search && r->base >= 0 && off > 0 && !given_below(r, off)
                        ? thread_moved(r, s, &now)
                        : 0;
        if (moved) {
            rs_buf_setlen(out, had);
            return moved < 0 ? moved : stale(r, err);
        }
        int back = !search && grows_back(r->node->kind);
        if (!rc && back)
            rc = appended(r, s, off, out, had, err);
        if (!rc)
            gave(r, off, out->len - had);
        /* A stream's kept bytes and a search result's are told by their hashes at a rewrite
         * (a view an append changes before its end noted all it gave, above); bytes it
         * rendered by itself are not hashed, as every cat would pay for it. */
        if (!rc && !back && (search || r->kept_last))
            sent_note(r, off, out->buf + had, out->len - had);
        else if (!rc && !back && out->len > had)
            r->sent_over = 1;
        /* A stream reading on renders on from its last row: another process's rewrite (which
         * the table hears of only at the hub's next tick) is looked for after the rendering,
         * as a log's reader does, so that no byte rendered after it goes out behind bytes
         * given before it unless they are all still the file's. On SQLite the count is kept
         * per data version: a read through a quiet store asks nothing more. Kept bytes are
         * looked up against the count at each read (kept_read). */
        if (!rc && !search && !first && !r->kept_last && r->scope.sizes &&
            rewrites_now(r, s) != r->rewrites && (rc = reader_rewritten(r, s, err)))
            rs_buf_setlen(out, had);
        return rc;
    }
    }
}

int rfs_view_list(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_entry_fn fn, void *ctx,
                  rs_err *err)
{
    rs_names_kind kind;
    const char *suffix = "";
    int is_dir = 0;
    if (sc->denied && n->kind >= RFS_THREADS)
        return rs_err_set(err, -EACCES, "this uid is not in the mount's --user-map");
    switch (n->kind) {
    case RFS_THREADS:
        kind = RS_NAMES_THREADS;
        is_dir = 1;
        break;
    case RFS_RUNS:
        kind = RS_NAMES_RUNS;
        is_dir = 1;
        break;
    case RFS_R_TYPES_DIR:
        kind = RS_NAMES_TYPES;
        suffix = ".jsonl";
        break;
    case RFS_R_TASKS_DIR:
        kind = RS_NAMES_TASKS;
        suffix = ".jsonl";
        break;
    case RFS_R_ONCE_DIR: kind = RS_NAMES_SINGLETONS; break;
    default: return 0;
    }
    rs_names *names;
    int rc = rs_store_names(s, kind, n->thread_id, n->run_id, sc->user, &names, err);
    if (rc)
        return rc;
    rs_buf name = RS_BUF_INIT;
    const char *v;
    while ((rc = rs_names_next(names, &v)) == 1) {
        if (kind == RS_NAMES_THREADS && !thread_visible(sc, v))
            continue;
        rs_buf_reset(&name);
        if ((rc = rs_buf_addstr(&name, v)) || (rc = rs_buf_addstr(&name, suffix)))
            break;
        rfs_node child;
        /* Only names that lead back to the same node are listed. */
        if (rfs_node_child(n, name.buf, &child) != 0)
            continue;
        int64_t times[2];
        int timed = rs_names_times(names, &times[0], &times[1]);
        if ((rc = fn(ctx, name.buf, is_dir, timed ? times : NULL)))
            break;
    }
    rs_buf_release(&name);
    rs_names_free(names);
    return rc < 0 ? rc : 0;
}

int rfs_view_entries(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_entry_fn fn,
                     void *ctx, rs_err *err)
{
    if (rfs_node_lookup_only(n->kind))
        return 0;
    int rc = 0;
    for (const char *const *f = rfs_node_fixed_entries(n->kind); !rc && *f; f++) {
        rfs_node child;
        rfs_stat cst;
        if (rfs_node_child(n, *f, &child))
            continue;
        /* Files that exist only sometimes are listed only when they do. */
        if ((child.kind == RFS_R_LASTAI || child.kind == RFS_R_SEAL || child.kind == RFS_R_NOTE) &&
            rfs_view_stat(s, sc, &child, &cst, err))
            continue;
        rc = fn(ctx, *f, rfs_node_is_dir(child.kind), NULL);
    }
    return rc ? rc : rfs_view_list(s, sc, n, fn, ctx, err);
}

int rfs_view_cat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_buf *out,
                 int (*flush)(void *ctx, rs_buf *out), void *ctx, rs_err *err)
{
    rfs_reader *r;
    int rc = rfs_reader_open(&r, s, sc, n, err);
    if (rc)
        return rc;
    int64_t off = 0;
    const size_t chunk = 256 * 1024;
    /* A search's reads would each run its query again from where the last stopped (and
     * PostgreSQL's candidates are all sorted at each run): one pass gives every line. */
    if (rfs_search_is_result(n->kind)) {
        rc = rfs_search_cat(s, sc, n, out, chunk, flush, ctx, err);
        if (!rc && flush)
            rc = flush(ctx, out);
        rfs_reader_free(r);
        return rc;
    }
    for (;;) {
        size_t before = out->len;
        if ((rc = rfs_reader_read(r, s, off, chunk, out, err)))
            break;
        size_t got = out->len - before;
        off += (int64_t)got;
        if (flush && (rc = flush(ctx, out)))
            break;
        if (got == 0)
            break;
    }
    rfs_reader_free(r);
    return rc;
}
