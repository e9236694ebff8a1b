/* json.h — strict JSON text checking and canonical rendering, byte for byte.
 *
 * Canonical JSON is compact (no insignificant white space), UTF-8 (no \u escapes but for
 * '"', '\\' and control characters, which use \" \\ \b \f \n \r \t or \u00XX), keeps object
 * key order and number lexemes exactly as written. cJSON is used for trees; this module is
 * for bytes, so that what was written is what is read back. */
#ifndef RS_JSON_H
#define RS_JSON_H

#include <cjson/cJSON.h>

#include "jtext.h" /* rs_cjson_parse */
#include "rs_util.h"

#define RS_JSON_MAX_DEPTH 128

enum {
    RS_JSON_LENIENT = 1 << 0,      /* reading foreign rows: accept NaN, Infinity, -Infinity */
    RS_JSON_DROP_MARKERS = 1 << 1, /* drop top-level "content_is_json" and "content_is_dict" */
};

/* Append the canonical form of the one JSON value in in[0..len) (white space around it
 * allowed) to out. -EINVAL with a reason for anything not strict RFC 8259: bad syntax,
 * invalid or overlong UTF-8, a lone surrogate in a \u escape, NUL bytes, nesting deeper
 * than RS_JSON_MAX_DEPTH, a number beyond double range, duplicate-free is not checked. */
int rs_json_canon(rs_buf *out, const char *in, size_t len, unsigned flags, rs_err *err);

/* Python's truthiness of the canonical JSON value v[0..n) (false, null, 0, "", [] and {}
 * are false): DeerFlow's rule for its storage markers. */
int rs_json_truthy(const char *v, size_t n);

/* The storage markers of a row's metadata text meta[0..len) (lenient; not an object: none):
 * 1 for a truthy "content_is_json", 2 for a truthy "content_is_dict". 0 or -ENOMEM. */
int rs_json_markers(const char *meta, size_t len, unsigned *markers);

/* rs_json_canon into dst, which has room for len + 1 bytes (canonical text is never longer
 * than its input); *dst_len = bytes written (dst is NUL-terminated). markers (may be NULL)
 * gets 1 for a truthy dropped "content_is_json", 2 for a truthy dropped "content_is_dict". */
int rs_json_canon_to(char *dst, size_t *dst_len, const char *in, size_t len, unsigned flags,
                     unsigned *markers, rs_err *err);

/* What a checking pass sees as the scanner writes canonical bytes, in document order: each
 * object key (canonical, with its quotes), each container's start (kind '{' or '[', at: where
 * its bracket is written) and end (end: just past its closing bracket), each scalar's
 * canonical bytes. A callback returns 0 to go on, or a negative errno to stop the scan. */
typedef struct rs_json_visitor {
    int (*key)(void *ctx, const char *key, size_t len);
    int (*open)(void *ctx, char kind, const char *at);
    int (*close)(void *ctx, const char *end);
    int (*scalar)(void *ctx, const char *v, size_t len);
} rs_json_visitor;

/* rs_json_canon_to (strict, no flags) that shows every token to vis with ctx. */
int rs_json_scan(char *dst, size_t *dst_len, const char *in, size_t len, const rs_json_visitor *vis,
                 void *ctx, rs_err *err);

/* The number a canonical lexeme stands for, as strtod (and so cJSON) reads it. */
double rs_json_number(const char *v, size_t len);

/* 1 when the canonical JSON values a and b are equal as cJSON_Compare (case-sensitive) says:
 * same kind, strings byte-equal, numbers within DBL_EPSILON, arrays element by element,
 * objects with the same keys holding equal values, in any order. */
int rs_json_equal(const char *a, size_t alen, const char *b, size_t blen);

/* 1 when s[0..len) is valid UTF-8 with no NUL, no surrogates, no overlong forms. */
int rs_utf8_valid(const char *s, size_t len);

/* Call fn for each member of the canonical JSON object text obj[0..len): key (raw, as
 * inside the quotes) and the value's canonical bytes. fn returns 0 to go on, non-zero to
 * stop (that value is returned). -EINVAL when obj is not an object. */
typedef int (*rs_json_member_fn)(void *ctx, const char *key, size_t key_len, const char *val,
                                 size_t val_len);
int rs_json_members(const char *obj, size_t len, rs_json_member_fn fn, void *ctx);

/* The first member key[0..key_len) (raw, as inside the quotes) of canonical object obj:
 * 1 with *val (its canonical bytes) set, 0 when absent or obj is not an object. */
int rs_json_get(const char *obj, size_t len, const char *key, size_t key_len, const char **val,
                size_t *val_len);

/* The kind of a canonical value, for reasons: "string", "object", "array", "boolean",
 * "null" or "number". */
const char *rs_json_kind(const char *v);

/* The length of the literal rs_buf_add_json_string writes for s[0..len), without writing it. */
size_t rs_json_string_len(const char *s, size_t len);

/* Decode a canonical JSON string literal lit[0..len) (with its quotes) into out. */
int rs_json_unquote(rs_buf *out, const char *lit, size_t len);

#endif
