/* contract_int.h — the compiled contract as the checker (check.c) and the loader (contract.c)
 * share it: JSON-Schema nodes with every literal the checker compares against (names,
 * required keys, const and enum values) precomputed as canonical JSON text, and every
 * reason it may give already rendered, so checking a value allocates nothing. */
#ifndef RS_CONTRACT_INT_H
#define RS_CONTRACT_INT_H

#include <regex.h>
#include <stddef.h>

#include "contract.h"

enum {
    RS_T_STRING = 1 << 0,
    RS_T_OBJECT = 1 << 1,
    RS_T_ARRAY = 1 << 2,
    RS_T_NUMBER = 1 << 3,
    RS_T_INTEGER = 1 << 4,
    RS_T_BOOLEAN = 1 << 5,
    RS_T_NULL = 1 << 6,
};

/* A canonical JSON text (a key with its quotes, or a value). */
typedef struct rs_lit {
    char *text;
    size_t len;
} rs_lit;

typedef struct rs_prop {
    const char *name; /* decoded, for reasons */
    rs_lit canon;     /* the key as the scanner writes it */
    rs_schema *s;
} rs_prop;

struct rs_schema {
    int always;        /* 1: true schema, -1: false schema, 0: keywords */
    unsigned types;    /* RS_T_* bits; 0: any */
    char *types_text;  /* "string or null", for "expected ..." */
    rs_prop *required; /* names only (s unused), in the contract's order */
    size_t n_required;
    rs_prop *props;
    size_t n_props;
    rs_lit *const_v;  /* NULL: none */
    char *const_text; /* "\"success\"" for "must equal ..." */
    rs_lit *enum_v;
    size_t n_enum;
    char *enum_text; /* "a, b, c" for "must be one of ..." */
    int has_min, has_max;
    double minimum, maximum;
    long min_len, max_len; /* -1: none */
    regex_t *re;
    const char *re_src;
    rs_schema *items;
    int addl_false;  /* additionalProperties: false */
    rs_schema *addl; /* additionalProperties: schema */
    rs_schema **all_of;
    size_t n_all_of;
    rs_schema *if_s, *then_s, *else_s;
    rs_schema *next_alloc; /* every node, for freeing */
};

#endif
