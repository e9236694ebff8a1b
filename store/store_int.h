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

#endif
