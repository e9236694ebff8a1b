/* glance.h — what stats.json, timeline.svg and otel.json read from a run's rows: each
 * record's facts (DESIGN's rules: a model call, its usage and latency, its tool calls, a
 * tool result, a subagent task's start and end, errors, middleware, run.terminal), and the
 * tables they keep while they walk the rows once (names with counts, calls waiting for
 * their result). Nothing here keeps a row's bytes. */
#ifndef RFS_GLANCE_H
#define RFS_GLANCE_H

#include <stddef.h>
#include <stdint.h>

#include "jline.h"
#include "runstore.h"

typedef enum rfs_ev_kind {
    RFS_EV_OTHER,
    RFS_EV_MODEL,      /* llm.ai.response */
    RFS_EV_RESULT,     /* llm.tool.result */
    RFS_EV_TASK_START, /* subagent.start */
    RFS_EV_TASK_END,   /* subagent.end */
    RFS_EV_TERMINAL,   /* run.terminal */
    RFS_EV_ERROR,      /* run.error, llm.error */
    RFS_EV_MIDDLEWARE, /* middleware:<tag> */
} rfs_ev_kind;

/* The three usage counts, in this order; -1 where a count is not a non-negative integer. */
#define RFS_USAGE_N 3
extern const char *const rfs_usage_names[RFS_USAGE_N];

typedef struct rfs_ev {
    const rs_record *rec;
    rfs_ev_kind kind;
    int64_t t_us;               /* created_at, microseconds since the epoch (0 when unreadable) */
    rfs_span created_at;        /* its literal, with quotes */
    rfs_span content, metadata; /* absent for the types no view reads them of */
    int64_t latency_ms;         /* model calls: -1 when not a count */
    int64_t usage[RFS_USAGE_N]; /* model calls (metadata.usage), task ends (content.usage) */
    rfs_span model;             /* model: content.response_metadata.model_name;
                                       task end: content.model_name */
    rfs_span tool_calls;        /* model: content.tool_calls when an array */
    rfs_span call_id;           /* result: content.tool_call_id */
    int error;                  /* result: content.status is "error" */
    rfs_span task_id;           /* tasks: metadata.task_id */
    rfs_span status;            /* task end and terminal: content.status */
    const char *tag;            /* middleware: the tag after "middleware:" */
    /* Read by rfs_ev_read_all only (what transcript.md shows of a row): */
    rfs_span text;       /* content.content when content is an object, else content */
    rfs_span said_by;    /* metadata.caller */
    rfs_span end_status; /* content.status when a string, else metadata.status */
} rfs_ev;

/* Read the facts of one record. */
void rfs_ev_read(const rs_record *rec, rfs_ev *ev);
/* The same, and in the same walks of content and metadata what transcript.md reads of them
 * (content and metadata are set for every type, and the fields above): one read of a row
 * for stats.json and transcript.md both. */
void rfs_ev_read_all(const rs_record *rec, rfs_ev *ev);

/* ---- a map from byte strings to fixed-size values, in insertion order ---- */
typedef struct rfs_map rfs_map;
int rfs_map_new(rfs_map **out, size_t val_size);
void rfs_map_free(rfs_map *m);
/* The value of key (zeroed when create made it); NULL when absent (create 0) or -ENOMEM. */
void *rfs_map_get(rfs_map *m, const char *key, size_t len, int create);
/* The key of a string literal s, decoded (its text), then rfs_map_get. */
void *rfs_map_get_text(rfs_map *m, rfs_span s, int create);
size_t rfs_map_count(const rfs_map *m);
/* A copy of m: its keys and values, in the same order. */
int rfs_map_clone(const rfs_map *m, rfs_map **out);
/* Entries in bytewise key order (sorted is an array of rfs_map_count indexes, to free). */
int rfs_map_sorted(const rfs_map *m, size_t **sorted);
const char *rfs_map_key(const rfs_map *m, size_t i, size_t *len);
void *rfs_map_val(const rfs_map *m, size_t i);
/* The i of rfs_map_val for a value the map holds (as rfs_map_get returned it). */
size_t rfs_map_index(const rfs_map *m, const void *val);

/* ---- tool calls waiting for their result ----
 * Calls are kept in call order; a result takes the oldest waiting call of its id. */
typedef struct rfs_call {
    int64_t seq;  /* the llm.ai.response that asked */
    int64_t t_us; /* its created_at */
    int index;    /* its place in content.tool_calls */
    char *id;     /* NULL: the call had no id (it can never be answered) */
    size_t id_len;
    char *name;                           /* "" when none was given */
    int64_t user;                         /* the caller's own (an element number) */
    struct rfs_call *prev, *next, *hnext; /* call order; the next waiting call of its id */
} rfs_call;

typedef struct rfs_calls rfs_calls;
int rfs_calls_new(rfs_calls **out);
void rfs_calls_free(rfs_calls *c);
/* Each call of model event ev in turn: fn(ctx, call) with the call kept when fn returns 0
 * (added to the waiting ones), dropped on nonzero > 0; < 0 stops with that error. */
int rfs_calls_add(rfs_calls *c, const rfs_ev *ev, int (*fn)(void *ctx, rfs_call *call), void *ctx);
/* The oldest waiting call result ev answers, taken out (free it with rfs_call_free); NULL
 * when none waits. */
rfs_call *rfs_calls_take(rfs_calls *c, const rfs_ev *ev);
/* A copy of the waiting calls, in the same order. */
int rfs_calls_clone(const rfs_calls *c, rfs_calls **out);
size_t rfs_calls_count(const rfs_calls *c);
/* The waiting calls, oldest first. */
rfs_call *rfs_calls_first(rfs_calls *c);
/* The newest waiting call (walk back by prev), NULL when none waits. */
rfs_call *rfs_calls_last(rfs_calls *c);
void rfs_call_free(rfs_call *call);

/* ---- small helpers shared by the three views ---- */
/* Append s[0..len) escaped for XML text and attributes, cut to max characters (with "…"):
 * the one XML quoter, for every SVG or HTML view. Tab, LF and CR become spaces; each code
 * point XML 1.0 forbids or discourages (other control characters, surrogates, U+FFFE,
 * U+FFFF and the other noncharacters) and each invalid UTF-8 byte becomes U+FFFD. */
int rfs_xml_text(rs_buf *out, const char *s, size_t len, size_t max);
/* A duration for people: "812 ms", "1.5 s", "3 min 20 s", "2 h 5 min", "3 d 4 h". */
int rfs_add_duration(rs_buf *out, int64_t us);
/* v in decimal, as "%lld" prints it (a row's entries number their seqs: no vsnprintf). */
int rfs_add_int(rs_buf *out, int64_t v);

#endif
