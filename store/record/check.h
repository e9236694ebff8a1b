/* check.h — one JSON value (an event's content or metadata) checked as the scanner writes
 * it: against a compiled schema (contract_int.h) and for duplicate keys, in the same pass
 * and without a tree. Feed it the scanner's tokens for the
 * value (rs_check_key/open/close/scalar, in order), then ask for the verdicts. */
#ifndef RS_CHECK_H
#define RS_CHECK_H

#include <stddef.h>

#include "contract.h"
#include "json.h"

#define RS_CHECK_INLINE 48 /* checks and keys held without allocating */

/* One schema applied to one value, and the first failure found so far in the order the
 * schema's keywords are checked (rank: lower is earlier). */
typedef struct rs_check_item {
    const rs_schema *s;
    int parent;               /* the check this one reports to; -1 for the root */
    unsigned char role;       /* how: a property, an item, allOf, if, then, else */
    unsigned char quiet;      /* inside an "if": a verdict, no reason */
    unsigned short index;     /* allOf position */
    int rank;                 /* INT_MAX: no failure */
    size_t msg;               /* offset of the reason in msgs */
    int if_pass;              /* this check's "if" held */
    int then_rank, else_rank; /* verdicts of its "then" and "else" */
    size_t then_msg, else_msg;
} rs_check_item;

typedef struct rs_check_key {
    const char *key; /* canonical, with quotes */
    size_t len;
} rs_check_key;

/* A value being scanned: its checks are items[first, end). */
typedef struct rs_check_node {
    size_t first, end;
    size_t key_base;   /* its keys start here (objects) */
    size_t count;      /* members or elements so far */
    const char *key;   /* the member key it is the value of (canonical), or NULL: */
    size_t key_len;    /* ... */
    size_t index;      /* ... the element index it is */
    const char *start; /* where its canonical bytes start (containers) */
} rs_check_node;

typedef struct rs_check {
    const rs_schema *schema; /* NULL: form only */
    const char *root;        /* "content" or "metadata", the start of every reason */
    rs_check_item *items;    /* checks in force, grouped by node */
    size_t n_items, cap_items;
    rs_check_key *keys; /* keys of the open objects */
    size_t n_keys, cap_keys;
    size_t depth;        /* open values */
    const char *pending; /* the key whose value comes next */
    size_t pending_len;
    char path[512]; /* the open value's path, written only for a reason (path_write) */
    size_t path_len;
    int dup; /* a duplicate key was found (dup_msg) */
    char dup_msg[200];
    int rank; /* the root check's verdict */
    size_t msg;
    int oom;
    rs_buf msgs; /* reasons, each NUL-terminated */
    rs_buf scratch;
    rs_check_item inline_items[RS_CHECK_INLINE];
    rs_check_key inline_keys[RS_CHECK_INLINE];
    rs_check_node nodes[RS_JSON_MAX_DEPTH + 2];
} rs_check;

/* Start checking a value against s (NULL: only duplicate keys). */
void rs_check_init(rs_check *k, const rs_schema *s, const char *root);
void rs_check_release(rs_check *k);

/* The scanner's tokens for the value (rs_json_visitor callbacks, ctx = the rs_check). */
extern const rs_json_visitor rs_check_visitor;

/* Verdicts once the value is complete, each 0 or -EINVAL with the reason the tree gate
 * gave: the value's form (a duplicate key), then its schema. -ENOMEM when memory ran out
 * while checking. */
int rs_check_form(const rs_check *k, rs_err *err);
int rs_check_schema(const rs_check *k, rs_err *err);

/* Check the whole canonical text of one value (a second scanner pass: for a value whose
 * schema was not known when it was scanned, and for defaults). */
int rs_check_text(rs_check *k, const char *text, size_t len, rs_err *err);

#endif
