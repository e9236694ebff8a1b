/* node.c — path names to nodes and back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "node.h"
#include "rs_util.h"

static const char *const root_entries[] = {"README",  "contract.json", ".runfs",
                                           "threads", "search",        "changes.jsonl",
                                           "changes", "expired.jsonl", NULL};
static const char *const changes_entries[] = {"since", "follow", NULL};
static const char *const meta_entries[] = {"status.json", "rejects.jsonl", NULL};
/* follow.jsonl never ends: it opens by name and is never listed (nor are since/<seq>). */
static const char *const thread_entries[] = {"events.jsonl",  "messages.jsonl",
                                             "history.jsonl", "transcript.md",
                                             "message-count", "seq",
                                             "runs",          "since",
                                             "message-seqs",  "ai-runs",
                                             "search",        "stats.json",
                                             "report.html",   NULL};
static const char *const run_entries[] = {"events.jsonl",
                                          "messages.jsonl",
                                          "once",
                                          "types",
                                          "tasks",
                                          "since",
                                          "last-visible-ai-seq",
                                          "workspace-changes.json",
                                          "receipt.json",
                                          "seal.json",
                                          "search",
                                          "stats.json",
                                          "timeline.svg",
                                          "otel.json",
                                          "otel",
                                          "timeline",
                                          "report.html",
                                          "seal.note",
                                          "proofs",
                                          "diff",
                                          "redactions.jsonl",
                                          NULL};
/* Past the first window or part, names are looked up (their number is in count). */
static const char *const timeline_entries[] = {"1.svg", "count", NULL};
static const char *const otel_entries[] = {"1.json", "count", NULL};
static const char *const no_entries[] = {NULL};

typedef struct fixed_child {
    rfs_kind parent;
    const char *name;
    rfs_kind kind;
} fixed_child;

static const fixed_child fixed[] = {
    {RFS_ROOT, "README", RFS_README},
    {RFS_ROOT, "contract.json", RFS_CONTRACT},
    {RFS_ROOT, ".runfs", RFS_META},
    {RFS_ROOT, "threads", RFS_THREADS},
    {RFS_ROOT, "search", RFS_SEARCH_DIR},
    {RFS_THREAD, "search", RFS_T_SEARCH_DIR},
    {RFS_RUN, "search", RFS_R_SEARCH_DIR},
    {RFS_ROOT, "changes.jsonl", RFS_CHANGES},
    {RFS_ROOT, "changes", RFS_CHANGES_DIR},
    {RFS_ROOT, "expired.jsonl", RFS_EXPIRED},
    {RFS_CHANGES_DIR, "since", RFS_CHANGES_SINCE_DIR},
    {RFS_CHANGES_DIR, "follow", RFS_CHANGES_FOLLOW_DIR},
    {RFS_META, "status.json", RFS_STATUS},
    {RFS_META, "rejects.jsonl", RFS_REJECTS},
    {RFS_THREAD, "events.jsonl", RFS_T_EVENTS},
    {RFS_THREAD, "messages.jsonl", RFS_T_MESSAGES},
    {RFS_THREAD, "history.jsonl", RFS_T_HISTORY},
    {RFS_THREAD, "message-count", RFS_T_COUNT},
    {RFS_THREAD, "seq", RFS_T_SEQ},
    {RFS_THREAD, "transcript.md", RFS_T_TRANSCRIPT},
    {RFS_THREAD, "follow.jsonl", RFS_T_FOLLOW},
    {RFS_THREAD, "runs", RFS_RUNS},
    {RFS_THREAD, "since", RFS_T_SINCE_DIR},
    {RFS_THREAD, "message-seqs", RFS_T_MSGSEQ_DIR},
    {RFS_THREAD, "ai-runs", RFS_T_AIRUN_DIR},
    {RFS_RUN, "events.jsonl", RFS_R_EVENTS},
    {RFS_RUN, "messages.jsonl", RFS_R_MESSAGES},
    {RFS_RUN, "once", RFS_R_ONCE_DIR},
    {RFS_RUN, "types", RFS_R_TYPES_DIR},
    {RFS_RUN, "tasks", RFS_R_TASKS_DIR},
    {RFS_RUN, "since", RFS_R_SINCE_DIR},
    {RFS_RUN, "last-visible-ai-seq", RFS_R_LASTAI},
    {RFS_RUN, "workspace-changes.json", RFS_R_WORKSPACE},
    {RFS_RUN, "receipt.json", RFS_R_RECEIPT},
    {RFS_RUN, "seal.json", RFS_R_SEAL},
    {RFS_RUN, "follow.jsonl", RFS_R_FOLLOW},
    {RFS_THREAD, "stats.json", RFS_T_STATS},
    {RFS_RUN, "stats.json", RFS_R_STATS},
    {RFS_RUN, "timeline.svg", RFS_R_TIMELINE},
    {RFS_RUN, "otel.json", RFS_R_OTEL},
    {RFS_RUN, "seal.note", RFS_R_NOTE},
    {RFS_RUN, "proofs", RFS_R_PROOFS_DIR},
    {RFS_RUN, "diff", RFS_R_DIFF_DIR},
    {RFS_THREAD, "report.html", RFS_T_REPORT},
    {RFS_RUN, "report.html", RFS_R_REPORT},
    {RFS_RUN, "timeline", RFS_R_TL_DIR},
    {RFS_RUN, "otel", RFS_R_OTEL_DIR},
    {RFS_RUN, "redactions.jsonl", RFS_R_REDACTIONS},
};

void rfs_node_root(rfs_node *out)
{
    memset(out, 0, sizeof *out);
    out->kind = RFS_ROOT;
}

int rfs_node_is_dir(rfs_kind k)
{
    switch (k) {
    case RFS_ROOT:
    case RFS_META:
    case RFS_CHANGES_DIR:
    case RFS_CHANGES_SINCE_DIR:
    case RFS_CHANGES_FOLLOW_DIR:
    case RFS_THREADS:
    case RFS_THREAD:
    case RFS_T_SINCE_DIR:
    case RFS_T_MSGSEQ_DIR:
    case RFS_T_AIRUN_DIR:
    case RFS_RUNS:
    case RFS_RUN:
    case RFS_R_ONCE_DIR:
    case RFS_R_TYPES_DIR:
    case RFS_R_TASKS_DIR:
    case RFS_R_SINCE_DIR:
    case RFS_SEARCH_DIR:
    case RFS_T_SEARCH_DIR:
    case RFS_R_SEARCH_DIR:
    case RFS_R_PROOFS_DIR:
    case RFS_R_DIFF_DIR:
    case RFS_R_TL_DIR:
    case RFS_R_OTEL_DIR: return 1;
    default: return 0;
    }
}

int rfs_node_is_log(rfs_kind k)
{
    return k == RFS_T_EVENTS || k == RFS_R_EVENTS;
}

int rfs_node_is_writable(rfs_kind k, int allow_delete)
{
    if (k == RFS_R_EVENTS || k == RFS_R_ONCE || k == RFS_THREADS || k == RFS_RUNS || k == RFS_RUN ||
        k == RFS_R_ONCE_DIR || k == RFS_R_REDACTIONS)
        return 1;
    return allow_delete && k >= RFS_THREAD && rfs_node_is_dir(k) && k != RFS_SEARCH_DIR &&
           k != RFS_T_SEARCH_DIR && k != RFS_R_SEARCH_DIR;
}

const char *const *rfs_node_fixed_entries(rfs_kind k)
{
    switch (k) {
    case RFS_ROOT: return root_entries;
    case RFS_META: return meta_entries;
    case RFS_CHANGES_DIR: return changes_entries;
    case RFS_THREAD: return thread_entries;
    case RFS_RUN: return run_entries;
    case RFS_R_TL_DIR: return timeline_entries;
    case RFS_R_OTEL_DIR: return otel_entries;
    default: return no_entries;
    }
}

int rfs_node_lookup_only(rfs_kind kind)
{
    switch (kind) {
    case RFS_CHANGES_SINCE_DIR:
    case RFS_CHANGES_FOLLOW_DIR:
    case RFS_SEARCH_DIR:
    case RFS_T_SEARCH_DIR:
    case RFS_R_SEARCH_DIR:
    case RFS_T_SINCE_DIR:
    case RFS_R_SINCE_DIR:
    case RFS_T_MSGSEQ_DIR:
    case RFS_T_AIRUN_DIR:
    case RFS_R_PROOFS_DIR:
    case RFS_R_DIFF_DIR: return 1;
    default: return 0;
    }
}

unsigned rfs_node_mode(rfs_kind kind, int writable, int allow_delete, unsigned umask)
{
    int dir = rfs_node_is_dir(kind);
    int w = writable && rfs_node_is_writable(kind, allow_delete);
    unsigned mode = (dir ? 0555u : 0444u) | (w ? 0222u : 0u);
    return (dir ? (unsigned)S_IFDIR : (unsigned)S_IFREG) | (mode & ~umask);
}

static int parse_seq(const char *name, int64_t *out)
{
    if (!*name || strlen(name) > 18)
        return -ENOENT;
    int64_t v = 0;
    for (const char *p = name; *p; p++) {
        if (*p < '0' || *p > '9')
            return -ENOENT;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return 0;
}

static int strip_suffix(const char *name, const char *suffix, char *out, size_t outsz)
{
    size_t n = strlen(name), s = strlen(suffix);
    if (n <= s || strcmp(name + n - s, suffix) != 0 || n - s >= outsz)
        return -ENOENT;
    memcpy(out, name, n - s);
    out[n - s] = '\0';
    return 0;
}

/* Names that stand for a free-form string (event types, task ids, identities). */
static int plain_name(const char *name, size_t max)
{
    size_t n = strlen(name);
    return n >= 1 && n <= max && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
           !strchr(name, '/');
}

int rfs_node_child(const rfs_node *parent, const char *name, rfs_node *out)
{
    if (!rfs_node_is_dir(parent->kind))
        return -ENOTDIR;
    if (strlen(name) > RFS_NAME_MAX)
        return -ENAMETOOLONG;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (fixed[i].parent == parent->kind && strcmp(fixed[i].name, name) == 0) {
            *out = *parent;
            out->kind = fixed[i].kind;
            out->name[0] = '\0';
            out->num = 0;
            return 0;
        }
    *out = *parent;
    out->name[0] = '\0';
    out->num = 0;
    switch (parent->kind) {
    case RFS_THREADS:
        if (!rs_id_valid(name))
            return -EINVAL;
        out->kind = RFS_THREAD;
        return rs_fmt(out->thread_id, sizeof out->thread_id, "%s", name) < 0 ? -ENAMETOOLONG : 0;
    case RFS_RUNS:
        if (!rs_id_valid(name))
            return -EINVAL;
        out->kind = RFS_RUN;
        return rs_fmt(out->run_id, sizeof out->run_id, "%s", name) < 0 ? -ENAMETOOLONG : 0;
    case RFS_CHANGES_SINCE_DIR:
    case RFS_CHANGES_FOLLOW_DIR:
        out->kind = parent->kind == RFS_CHANGES_SINCE_DIR ? RFS_CHANGES_SINCE : RFS_CHANGES_FOLLOW;
        return parse_seq(name, &out->num);
    case RFS_T_SINCE_DIR:
    case RFS_R_SINCE_DIR:
        out->kind = parent->kind == RFS_T_SINCE_DIR ? RFS_T_SINCE : RFS_R_SINCE;
        return parse_seq(name, &out->num);
    case RFS_R_PROOFS_DIR: out->kind = RFS_R_PROOF; return parse_seq(name, &out->num);
    case RFS_R_DIFF_DIR:
        if (!rs_id_valid(name))
            return -EINVAL;
        out->kind = RFS_R_DIFF;
        return rs_fmt(out->name, sizeof out->name, "%s", name) < 0 ? -ENAMETOOLONG : 0;
    case RFS_R_TL_DIR:
    case RFS_R_OTEL_DIR: {
        out->kind = parent->kind == RFS_R_TL_DIR ? RFS_R_TL_WIN : RFS_R_OTEL_PART;
        if (strcmp(name, "count") == 0)
            return 0;
        char num[24];
        if (strip_suffix(name, parent->kind == RFS_R_TL_DIR ? ".svg" : ".json", num, sizeof num) ||
            num[0] == '0' || parse_seq(num, &out->num) || out->num == 0)
            return -ENOENT;
        return 0;
    }
    case RFS_T_MSGSEQ_DIR:
    case RFS_T_AIRUN_DIR:
        if (!plain_name(name, RFS_NAME_MAX))
            return -ENOENT;
        out->kind = parent->kind == RFS_T_MSGSEQ_DIR ? RFS_T_MSGSEQ : RFS_T_AIRUN;
        return rs_fmt(out->name, sizeof out->name, "%s", name) < 0 ? -ENAMETOOLONG : 0;
    case RFS_SEARCH_DIR:
    case RFS_T_SEARCH_DIR:
    case RFS_R_SEARCH_DIR:
        /* The query is checked where its errors can say why (views/search_view.c). */
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            return -ENOENT;
        out->kind = parent->kind + 1;
        return rs_fmt(out->name, sizeof out->name, "%s", name) < 0 ? -ENAMETOOLONG : 0;
    case RFS_R_ONCE_DIR:
        if (!plain_name(name, RS_EVENT_TYPE_MAX))
            return -EINVAL;
        out->kind = RFS_R_ONCE;
        return rs_fmt(out->name, sizeof out->name, "%s", name) < 0 ? -ENAMETOOLONG : 0;
    case RFS_R_TYPES_DIR:
        out->kind = RFS_R_TYPE;
        if (strip_suffix(name, ".jsonl", out->name, RS_EVENT_TYPE_MAX + 1))
            return -ENOENT;
        return plain_name(out->name, RS_EVENT_TYPE_MAX) ? 0 : -ENOENT;
    case RFS_R_TASKS_DIR:
        out->kind = RFS_R_TASK;
        if (strip_suffix(name, ".jsonl", out->name, sizeof out->name))
            return -ENOENT;
        return plain_name(out->name, RFS_NAME_MAX) ? 0 : -ENOENT;
    default: return -ENOENT;
    }
}

int rfs_node_parse(const char *path, rfs_node *out)
{
    rfs_node cur;
    rfs_node_root(&cur);
    char comp[RFS_NAME_MAX + 1];
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > RFS_NAME_MAX)
            return -ENAMETOOLONG;
        memcpy(comp, p, n);
        comp[n] = '\0';
        p += n;
        if (strcmp(comp, ".") == 0)
            continue;
        rfs_node next;
        int rc = rfs_node_child(&cur, comp, &next);
        if (rc)
            return rc;
        cur = next;
    }
    *out = cur;
    return 0;
}

static const char *fixed_name(rfs_kind kind)
{
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (fixed[i].kind == kind)
            return fixed[i].name;
    return NULL;
}

/* head, name and tail appended: a path is made for every view's kept size (an import's
 * thousands), where formatting each part was most of the cost. */
static int add_name(rs_buf *out, const char *head, const char *name, const char *tail)
{
    int rc = rs_buf_addstr(out, head);
    rc = rc ? rc : rs_buf_addstr(out, name);
    return rc ? rc : rs_buf_addstr(out, tail);
}

int rfs_node_path(const rfs_node *n, rs_buf *out)
{
    int rc = 0;
    if (n->kind == RFS_ROOT)
        return rs_buf_addstr(out, ".");
    if (n->kind == RFS_SEARCH_DIR || n->kind == RFS_SEARCH)
        return rs_buf_addf(out, n->kind == RFS_SEARCH ? "search/%s" : "search", n->name);
    switch (n->kind) {
    case RFS_CHANGES_DIR: return rs_buf_addstr(out, "changes");
    case RFS_CHANGES_SINCE_DIR: return rs_buf_addstr(out, "changes/since");
    case RFS_CHANGES_FOLLOW_DIR: return rs_buf_addstr(out, "changes/follow");
    case RFS_CHANGES_SINCE: return rs_buf_addf(out, "changes/since/%lld", (long long)n->num);
    case RFS_CHANGES_FOLLOW: return rs_buf_addf(out, "changes/follow/%lld", (long long)n->num);
    default: break;
    }
    if (n->kind <= RFS_THREADS) {
        if (n->kind == RFS_STATUS || n->kind == RFS_REJECTS)
            rc = rs_buf_addstr(out, ".runfs/");
        return rc ? rc : rs_buf_addstr(out, fixed_name(n->kind));
    }
    rc = add_name(out, "threads/", n->thread_id, "");
    if (rc || n->kind == RFS_THREAD)
        return rc;
    int in_run = n->kind >= RFS_RUN && n->kind != RFS_T_SEARCH_DIR && n->kind != RFS_T_SEARCH;
    if (in_run)
        rc = add_name(out, "/runs/", n->run_id, "");
    else if (n->kind == RFS_RUNS)
        return rs_buf_addstr(out, "/runs");
    if (rc || n->kind == RFS_RUN)
        return rc;
    switch (n->kind) {
    case RFS_T_SINCE:
    case RFS_R_SINCE: return rs_buf_addf(out, "/since/%lld", (long long)n->num);
    case RFS_R_PROOF: return rs_buf_addf(out, "/proofs/%lld", (long long)n->num);
    case RFS_R_DIFF: return add_name(out, "/diff/", n->name, "");
    case RFS_R_TL_WIN:
        return n->num ? rs_buf_addf(out, "/timeline/%lld.svg", (long long)n->num)
                      : rs_buf_addstr(out, "/timeline/count");
    case RFS_R_OTEL_PART:
        return n->num ? rs_buf_addf(out, "/otel/%lld.json", (long long)n->num)
                      : rs_buf_addstr(out, "/otel/count");
    case RFS_T_MSGSEQ: return add_name(out, "/message-seqs/", n->name, "");
    case RFS_T_AIRUN: return add_name(out, "/ai-runs/", n->name, "");
    case RFS_R_ONCE: return add_name(out, "/once/", n->name, "");
    case RFS_R_TYPE: return add_name(out, "/types/", n->name, ".jsonl");
    case RFS_R_TASK: return add_name(out, "/tasks/", n->name, ".jsonl");
    case RFS_T_SEARCH:
    case RFS_R_SEARCH: return add_name(out, "/search/", n->name, "");
    case RFS_T_SEARCH_DIR:
    case RFS_R_SEARCH_DIR: return rs_buf_addstr(out, "/search");
    default: return add_name(out, "/", fixed_name(n->kind), "");
    }
}
