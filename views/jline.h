/* jline.h — reading values out of a canonical JSON line without building a tree. Records
 * are canonical JSON (compact, valid, strings escaped only for '"', '\\' and control
 * characters), so a value is found by walking bytes: the views read every row this way. */
#ifndef RFS_JLINE_H
#define RFS_JLINE_H

#include <stddef.h>
#include <stdint.h>

#include "runstore.h"

/* A value's bytes inside the line; p NULL when absent. */
typedef struct rfs_span {
    const char *p;
    size_t n;
} rfs_span;

/* Length of the value starting at v (end bounds it). */
size_t rfs_jl_value_len(const char *v, const char *end);
/* The next element of an array or member of an object after *at (on the opening bracket or
 * a value's end): 1 with *key (objects only; its literal) and *val set, 0 at the end. */
int rfs_jl_next(rfs_span c, const char **at, rfs_span *key, rfs_span *val);
/* The first members of object o named names[0..n) (plain ASCII) into vals, in one walk. */
void rfs_jl_members(rfs_span o, const char *const *names, rfs_span *vals, int n);
/* The same of the object at o.p, which o may run past (the rest of the line): the object's
 * length, so one walk finds both its members and where it ends. */
size_t rfs_jl_members_len(rfs_span o, const char *const *names, rfs_span *vals, int n);
rfs_span rfs_jl_member(rfs_span o, const char *name);
/* A record line's content and metadata, with content's members cn[0..nc) into cv and
 * metadata's mn[0..nm) into mv, in one walk of each (the record's keys come in a fixed
 * order: the ids, event_type and category, then content, then metadata): 1, or 0 when the
 * line is not of that form (then read it member by member). */
int rfs_jl_body(rfs_span line, const char *const *cn, rfs_span *cv, int nc, const char *const *mn,
                rfs_span *mv, int nm, rfs_span *content, rfs_span *metadata);
/* 1 when v is present and its first byte is kind ('"', '{', '[', 't', 'n', ...). */
int rfs_jl_is(rfs_span v, char kind);
/* Append the text of string literal s; one_line: newlines as the two characters \n, CRs
 * dropped. */
int rfs_jl_text(rs_buf *out, rfs_span s, int one_line);
/* 1 when v is the string literal of plain ASCII s (no escapes in s). */
int rfs_jl_str_is(rfs_span v, const char *s);
/* DeerFlow's count: 1 with *out set when v is a non-negative integer (no fraction, no
 * exponent, no sign, not a boolean) that fits in 63 bits, else 0. */
int rfs_jl_count(rfs_span v, int64_t *out);
/* The record line without its '\n'. */
rfs_span rfs_jl_line(const rs_record *rec);
/* created_at as the lines show it ("YYYY-MM-DDTHH:MM:SS.ffffff+00:00", in quotes) to
 * microseconds since the Unix epoch: 0, or -EINVAL for another form. */
int rfs_jl_time_us(rfs_span created_at, int64_t *us);

#endif
