/* contract.h — the event contract (contracts/run_event_stream_contract.json), loaded as data:
 * which event types exist, their categories, and the JSON-Schema subset their content and
 * metadata must satisfy. Adding an event type is a change to the file, not to this code. */
#ifndef RS_CONTRACT_H
#define RS_CONTRACT_H

#include <cjson/cJSON.h>
#include "runstore.h"

typedef struct rs_contract rs_contract;

/* Load and check a contract file. -EINVAL (with reason) for a malformed one. */
int rs_contract_load(rs_contract **out, const char *path, rs_err *err);

/* Load and check a contract from text[0..len), named name in reasons. */
int rs_contract_load_text(rs_contract **out, const char *name, const char *text, size_t len,
                          rs_err *err);

/* The contract that ships, as the build read it from contracts/ (contract_text.c, made by
 * meson): a binary needs no file of the source tree (it may run where that tree is out of
 * reach). */
extern const char rs_contract_shipped_text[];
void rs_contract_free(rs_contract *c);

/* The file's raw bytes. */
const char *rs_contract_text(const rs_contract *c, size_t *len);

/* Category of a known event type, a legacy alias or a dynamic pattern (middleware:{tag});
 * NULL when the contract does not name it. */
const char *rs_contract_category(const rs_contract *c, const char *event_type);

/* 1 when the contract marks event_type as a singleton (written only by put_if_absent). */
int rs_contract_is_singleton(const rs_contract *c, const char *event_type);

/* The event types the contract marks singleton; *out stays valid while c lives. */
size_t rs_contract_singletons(const rs_contract *c, const char *const **out);

/* A compiled JSON-Schema node (contract_int.h; checked by check.h). */
typedef struct rs_schema rs_schema;

/* How the contract checks an event type. */
typedef struct rs_rule {
    int known;                /* an event, a legacy alias or a dynamic pattern */
    const rs_schema *content; /* NULL: not checked (an alias, or not known) */
    const rs_schema *metadata;
    const rs_schema *type_s; /* a dynamic pattern's schemas for the name and its tag */
    const rs_schema *tag_s;
    size_t prefix_len; /* the pattern's prefix before {tag} */
} rs_rule;
void rs_contract_rule(const rs_contract *c, const char *event_type, rs_rule *out);

/* A dynamic pattern's checks of the event type's name and tag ("event_type tag: ..."). */
int rs_contract_check_name(const rs_rule *r, const char *event_type, rs_err *err);

/* For singleton confirmation: the metadata keys the type's schema requires. */
const cJSON *rs_contract_required_metadata(const rs_contract *c, const char *event_type);

#endif
