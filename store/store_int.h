/* store_int.h — the store handle as the store's own files see it (never outside store/). */
#ifndef RS_STORE_INT_H
#define RS_STORE_INT_H

#include "backend.h"
#include "contract.h"
#include "runstore.h"

struct rs_store {
    const rs_backend_ops *ops;
    rs_backend *be;
    rs_contract *contract;
    rs_options opt;
    char *path;
    char *name; /* rs_store_name */
    const char *const *singletons;
    size_t n_singletons;
};

/* What t's log keeps beside its totals (see rs_log_facts); known 0 from a backend that keeps
 * nothing. -ENOENT when the thread or run does not exist for t->user. */
int rs_store_facts(rs_store *s, const rs_target *t, rs_log_facts *out, rs_err *err);

#endif
