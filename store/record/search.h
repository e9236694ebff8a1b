/* search.h — a parsed search query as the store's own files see it: the terms a backend's
 * index may narrow by. Matching is search.c's alone (rs_search_match decides): pure work
 * over a row's text, so it is the record's, below backend.h, and the backends use it. */
#ifndef RS_SEARCH_H
#define RS_SEARCH_H

#include "event.h"
#include "runstore.h"

typedef enum rs_term_kind {
    RS_TERM_TEXT,        /* a substring of content or metadata, ASCII letters lowered */
    RS_TERM_TYPE,        /* event_type equals text */
    RS_TERM_TYPE_PREFIX, /* event_type starts with text */
    RS_TERM_CATEGORY,    /* category equals text */
} rs_term_kind;

typedef struct rs_term {
    rs_term_kind kind;
    int negate; /* -term: the event must not match it */
    char *text; /* NUL-terminated; a text term's ASCII letters lowered */
    size_t len;
    size_t anchor; /* a text term's byte that text holds least often: where a search looks first */
    size_t second; /* ... the next rarest other byte (anchor when len < 2) */
} rs_term;

struct rs_search {
    rs_term *terms;
    size_t n;
    int by_run;   /* the term by:run: the answer is one line per run (rs_search_by_run) */
    int streamed; /* rs_search_set_streamed: its first rows are wanted before the rest */
};

/* ASCII letters of s[0..len) lowered into out (appended); every other byte kept. */
int rs_search_lower(rs_buf *out, const char *s, size_t len);

/* Where a canonical line's content and metadata values lie: [*c, *c + *clen) and [*m, *m +
 * *mlen). -EINVAL when the line is not a canonical record. */
int rs_search_spans(const char *line, size_t len, size_t *c, size_t *clen, size_t *m, size_t *mlen);

/* rs_search_match of a record whose content and metadata lie where sp says (NULL: found by
 * rs_search_spans). */
int rs_search_match_at(const rs_search *q, const rs_record *rec, const rs_event_spans *sp);

/* 0 when no line of row can match q, 1 when one may (the row must be rendered and matched
 * to know): decided on the stored columns of a row runfs stored (row->canonical), whose
 * line holds content and metadata as copies (rs_event_stored_meta), with no line made; any
 * other row may. Only content, metadata and canonical of row are read. */
int rs_search_may_match(const rs_search *q, const rs_row *row);

#endif
