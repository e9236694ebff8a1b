/* pool.h — the mount's store connections: SQLite handles are single-threaded, so each
 * request borrows one and gives it back; WAL lets them read beside a writer. */
#ifndef RFS_POOL_H
#define RFS_POOL_H

#include "runstore.h"

#define RFS_POOL_MAX 16

typedef struct rfs_mount rfs_mount;
typedef struct rfs_pool rfs_pool;

/* Give m an empty pool for its store (connections open on demand). 0 or -ENOMEM. */
int rfs_pool_start(rfs_mount *m);
/* Close every connection; all must have been given back. */
void rfs_pool_stop(rfs_mount *m);
/* Borrow a connection (waits while RFS_POOL_MAX are lent). */
int rfs_pool_get(rfs_mount *m, rs_store **out, rs_err *err);
/* Give s back (NULL: nothing). */
void rfs_pool_put(rfs_mount *m, rs_store *s);

#endif
