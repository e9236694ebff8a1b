/* event.h — one event between the outside world and the database: parsing and validating
 * an input line (the only gate into the store), and the canonical line of an event: from a
 * stored row (rs_event_encode: every view, the CLI and every backend) or from a parsed event
 * about to be stored (rs_event_line: the same bytes, which the fuzz target checks). */
#ifndef RS_EVENT_H
#define RS_EVENT_H

#include "contract.h"
#include "runstore.h"

#define RS_TIME_LEN 32 /* "YYYY-MM-DDTHH:MM:SS.ffffff+00:00" */
#define RS_IDEM_KEY_MAX 128

/* A validated event awaiting storage. Strings are NUL-terminated and owned. */
typedef struct rs_event {
    char thread_id[RS_ID_MAX + 1];
    char run_id[RS_ID_MAX + 1];
    char event_type[RS_EVENT_TYPE_MAX + 1];
    char category[RS_CATEGORY_MAX + 1];
    char created_at[RS_TIME_LEN + 1];   /* canonical UTC: 2026-01-02T03:04:05.678901+00:00 */
    char created_db[27];                /* DeerFlow's DATETIME text: 2026-01-02 03:04:05.678901 */
    char idem_key[RS_IDEM_KEY_MAX + 1]; /* "" when the line gave no idempotency_key */
    int64_t seq;                        /* an import line's seq; 0 for every other line */
    /* Read-only views of bytes kept with the event (NUL-terminated; never grown or released
     * on their own: rs_event_free frees them with the event). */
    rs_buf content;     /* canonical JSON of the content value (the "content" of the line) */
    rs_buf content_db;  /* run_events.content: the decoded string, or canonical JSON text */
    rs_buf metadata;    /* canonical JSON object of the metadata as given ({} when absent) */
    rs_buf metadata_db; /* run_events.event_metadata: metadata plus DeerFlow's markers */
    char bytes[];       /* where they live */
} rs_event;

typedef struct rs_event_ctx {
    const rs_contract *contract;
    const char *thread_id;  /* from the path: a given thread_id must equal it */
    const char *run_id;     /* likewise */
    const char *event_type; /* once/<type>: the type when the line omits it; NULL else */
    int allow_unknown;
    int stamp_time;   /* created_at is the store's clock only: giving one is EINVAL */
    size_t max_bytes; /* the line's limit: larger is -EMSGSIZE */
    int import;       /* a DeerFlow JSONL line: seq and created_at required, the
                                  * envelope checked, content schemas only when strict */
    int strict;
} rs_event_ctx;

/* Parse one line (without its '\n') into a validated event. Refusals: -EINVAL (malformed
 * JSON, not an object, unknown or mistyped field, seq or user_id given, id mismatch, bad
 * created_at, contract violation, category mismatch), -EMSGSIZE (over max_bytes). */
int rs_event_parse(rs_event **out, const char *line, size_t len, const rs_event_ctx *ctx,
                   rs_err *err);
void rs_event_free(rs_event *ev);

/* The parts of the gate, for a second gate to compare against (tests/fuzz): a line's
 * top-level members, as canonical bytes (NULL: absent). */
enum {
    RS_F_EVENT_TYPE,
    RS_F_CATEGORY,
    RS_F_CONTENT,
    RS_F_METADATA,
    RS_F_CREATED_AT,
    RS_F_THREAD_ID,
    RS_F_RUN_ID,
    RS_F_IDEM_KEY,
    RS_F_SEQ,
    RS_F_COUNT
};
extern const char *const rs_event_field_names[RS_F_COUNT];
typedef struct rs_event_fields {
    const char *val[RS_F_COUNT];
    size_t len[RS_F_COUNT];
    const char *marker; /* the first storage-marker key of metadata, or NULL */
    size_t marker_len;
} rs_event_fields;

/* The field index of top-level key key[0..kl) (raw, as inside its quotes), or -EINVAL with
 * the reason: a known field given twice, seq (unless import), user_id, an unknown field. */
int rs_event_member(const rs_event_fields *f, const char *key, size_t kl, int import, rs_err *err);

/* Everything but content and metadata's values, from the members: event_type, ids,
 * category, metadata's form and markers, created_at, an import's seq, the idempotency key,
 * into ev. */
int rs_event_envelope(rs_event *ev, const rs_event_fields *f, const rs_event_ctx *ctx, rs_err *err);

/* A stored row as the backend reads it. */
typedef struct rs_row {
    const char *thread_id;
    const char *run_id;
    int64_t seq;
    const char *event_type;
    const char *category;
    const char *content; /* run_events.content */
    size_t content_len;
    const char *metadata; /* run_events.event_metadata */
    size_t metadata_len;
    const char *created_at; /* DATETIME text as stored (any of DeerFlow's forms) */
    const char *user_id;    /* NULL: no owner */
    int canonical;          /* the columns are as runfs's put stores them: copied, not scanned */
    int odd; /* thread_id or run_id outside the id rule (another writer's): never shown */
} rs_row;

/* Append the canonical line of row, '\n' included, to out: keys thread_id, run_id, seq,
 * event_type, category, content, metadata, created_at, then user_id when the row has one;
 * storage markers dropped; content decoded only when a marker says it is JSON; metadata that
 * is not an object as rs_event_meta_other shows it. */
int rs_event_encode(rs_buf *out, const rs_row *row, rs_err *err);

/* Where a line's content and metadata values lie: [c, c + clen) and [m, m + mlen), offsets
 * from the line's first byte. */
typedef struct rs_event_spans {
    size_t c, clen, m, mlen;
} rs_event_spans;

/* rs_event_encode, telling *sp where the line's content and metadata are (what a search
 * looks in) so that nothing parses the line again to find them. */
int rs_event_encode_spans(rs_buf *out, const rs_row *row, rs_event_spans *sp, rs_err *err);

/* A row runfs stored (rs_row.canonical): its metadata's own members, canonical, are
 * row->metadata[0..*keep), followed in the line by a closing brace when *markers (DeerFlow's
 * markers, 1 for content_is_json, 3 with content_is_dict, cut off its end) is non-zero. 1
 * when the row has that shape, 0 when its metadata must be read the general way. */
int rs_event_stored_meta(const rs_row *row, size_t *keep, unsigned *markers);

/* Append metadata another writer stored that is not a JSON object, as what it holds: its
 * canonical JSON value when it parses (a string, an array, ...), else its text as a JSON
 * string; never "{}", which would claim an empty object. 0 or -ENOMEM. */
int rs_event_meta_other(rs_buf *out, const char *meta, size_t len);

/* The canonical line of ev stored with seq and owner user (NULL: none): the bytes
 * rs_event_encode renders from its stored row, built from the parsed parts directly. */
int rs_event_line(rs_buf *out, const rs_event *ev, int64_t seq, const char *user);
/* The length of that line, without writing it. */
size_t rs_event_line_len(const rs_event *ev, int64_t seq, const char *user);

/* An imported ev whose seq already holds the record have (its canonical line without
 * owner): 0 when it is the same row (the import skips it), -EEXIST naming the seq otherwise.
 * line is scratch space. */
int rs_event_reimport(const rs_event *ev, const char *thread_id, const rs_buf *have, rs_buf *line,
                      rs_err *err);

/* A resend under ev's idempotency key, whose first write is the stored record line (a
 * canonical line, at seq): 0 when it is the same event written by user (NULL: no owner),
 * i.e. equal run_id, event_type, category and owner, content and metadata equal as JSON
 * values (DESIGN "Appending"); -EEXIST naming the key otherwise. Both backends say the same. */
int rs_event_resend(const rs_event *ev, const char *user, const rs_buf *line, int64_t seq,
                    rs_err *err);

/* Parse an RFC 3339 / ISO-8601 timestamp with any offset (or 'Z'; a naive one is UTC) and
 * write it as canonical UTC (canon, RS_TIME_LEN+1 bytes) and DeerFlow DATETIME text (db, 27
 * bytes). Either output may be NULL. -EINVAL for anything unparsable or out of range. */
int rs_time_parse(const char *s, size_t len, char *canon, char *db);

/* A timestamp rs_time_parse reads (NUL-terminated) as nanoseconds since the epoch: a file's
 * time. -EINVAL as rs_time_parse, -ERANGE outside 1677..2262. */
int rs_time_ns(const char *s, int64_t *ns);

/* The current time in both forms. */
void rs_time_now(char *canon, char *db);

#endif
