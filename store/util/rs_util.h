/* rs_util.h — the helpers store/, views/, fs/ and cli/ share: buffers, the map, formatting,
 * hashing, hex, the clock, error reasons and JSON string text. An internal static library
 * (store/util/), linked into librunstore and by the programs, never exported by the shared
 * library: runstore.h is its API. */
#ifndef RS_UTIL_H
#define RS_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "runstore.h"

/* ---- rs_buf (the type and RS_BUF_INIT are runstore.h's) ---------------------------------- */
int rs_buf_grow(rs_buf *b, size_t extra); /* room for extra more bytes */
/* Set len, and the NUL after it: to cut the buffer back, or to take bytes written into the
 * room rs_buf_grow made. len must lie within that room. */
void rs_buf_setlen(rs_buf *b, size_t len);
int rs_buf_add(rs_buf *b, const void *data, size_t len);
int rs_buf_addstr(rs_buf *b, const char *s);
#define rs_buf_addlit(b, lit) rs_buf_add((b), "" lit, sizeof(lit) - 1) /* a string literal */
int rs_buf_addch(rs_buf *b, char c);
int rs_buf_addf(rs_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rs_buf_reset(rs_buf *b);                  /* len = 0, memory kept */
void rs_buf_remove_front(rs_buf *b, size_t n); /* drop the first n bytes */
/* Append s[0..len) as a JSON string literal in canonical escaping ('"', '\\' and control
 * characters escaped, NUL as \u0000); each invalid UTF-8 sequence becomes U+FFFD, so any
 * bytes render. The project's one JSON string quoter. */
int rs_buf_add_json_string(rs_buf *b, const char *s, size_t len);
/* 1 when rs_buf_add_json_string puts s[0..len) between its quotes as it is (no escape, no
 * replacement), else 0. */
int rs_json_string_plain(const char *s, size_t len);
/* Just past the closing quote of the JSON string whose body (after the opening quote) starts
 * at p, or NULL when it does not close before end: a quote after an odd run of backslashes is
 * escaped. The project's one string scanner, for the views' light JSON walkers too. */
const char *rs_quote_end(const char *p, const char *end);

/* ---- formatting into a fixed array: the one way (scripts/check-fmt bans snprintf) ----
 * Format into dst[0..cap): the length written, or -EOVERFLOW when the text does not fit
 * (dst then holds what fits, ending in "..." so a cut never passes for whole text), or
 * -EINVAL for an encoding error. A caller keeping a cut human reason says so with (void). */
int rs_fmt(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int rs_vfmt(char *dst, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Room for need elements of size bytes in the array *items (a T **) of *cap elements:
 * realloc doubling, *cap updated. 0 or -ENOMEM (the array is then unchanged). */
int rs_array_grow(void *items, size_t *cap, size_t need, size_t size);

/* ---- rs_hash, rs_map: the one hash function and the one hash map ----------------------
 * rs_hash continues the FNV-1a hash h (start from RS_HASH_INIT) over data[0..len). */
#define RS_HASH_INIT 14695981039346656037ULL
uint64_t rs_hash(uint64_t h, const void *data, size_t len);

/* Entries found by key, as redis's dict finds them: one map, whose type gives a key's hash,
 * an entry's hash (its key's) and whether an entry has a key. An entry is a nonzero value of
 * the caller's (a pointer to an item, or an index + 1 into an array that may move); the map
 * holds entries only, never keys or items. Open addressing, at most half full. */
typedef struct rs_map_type {
    uint64_t (*hash)(const void *ctx, const void *key);
    uint64_t (*entry_hash)(const void *ctx, uintptr_t entry);
    int (*matches)(const void *ctx, uintptr_t entry, const void *key);
} rs_map_type;

typedef struct rs_map {
    const rs_map_type *type;
    const void *ctx; /* handed to the type's functions */
    uintptr_t *slots;
    size_t n_slots; /* 0 or a power of two */
    size_t count;
} rs_map;
/* clang-format off */
#define RS_MAP_INIT(type, ctx) { (type), (ctx), NULL, 0, 0 }
/* clang-format on */

uintptr_t rs_map_find(const rs_map *m, const void *key); /* the entry with key; 0: none */
/* Add an entry whose key the map does not hold yet: 0, or -ENOMEM with the map unchanged
 * (after rs_map_reserve of room for it, never -ENOMEM). */
int rs_map_add(rs_map *m, uintptr_t entry);
int rs_map_reserve(rs_map *m, size_t count);         /* room for count entries in all, or -ENOMEM */
uintptr_t rs_map_remove(rs_map *m, const void *key); /* the entry taken out; 0: none */
/* The entries in turn: *pos from 0, 0 after the last (nothing added or removed meanwhile). */
uintptr_t rs_map_next(const rs_map *m, size_t *pos);
void rs_map_clear(rs_map *m);   /* no entries, the memory kept */
void rs_map_release(rs_map *m); /* no entries, no memory */

/* ---- hex: the one encoder ---------------------------------------------------------------- */
extern const char rs_hex_digits[16]; /* "0123456789abcdef" */
/* Append data[0..n) as 2n lowercase hex digits. */
int rs_buf_add_hex(rs_buf *out, const void *data, size_t n);
/* data[0..n) as 2n lowercase hex digits into dst (room for 2n + 1: NUL-terminated). */
void rs_hex(char *dst, const void *data, size_t n);

/* ---- errors, the clock ------------------------------------------------------------------- */
/* Fill err (may be NULL) and return code. */
int rs_err_set(rs_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Now on clock in nanoseconds: CLOCK_REALTIME for times people read, CLOCK_MONOTONIC for
 * deadlines and durations. */
int64_t rs_clock_ns(clockid_t clock);

#endif
