/* attrs.h — the files' attributes the kernel was told to keep. A reply that lets the kernel
 * cache a file's attributes for RFS_FILE_TIMEOUT is recorded here first, so a change drops
 * exactly the copies still in force: those of one thread after this mount's commit, all of
 * them after another process's. A record expires with the kernel's copy, so what is held is
 * what was handed out in the last RFS_FILE_TIMEOUT, however large the store. Thread-safe;
 * its lock is a leaf. */
#ifndef RFS_ATTRS_H
#define RFS_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#define RFS_FILE_TIMEOUT 1.0 /* seconds the kernel keeps a quiet file's attributes */

typedef struct rfs_attrs rfs_attrs;

int rfs_attrs_new(rfs_attrs **out);
void rfs_attrs_free(rfs_attrs *a);
/* ino, a file of thread_id, is about to be given attributes the kernel keeps for
 * RFS_FILE_TIMEOUT from now_ns (CLOCK_MONOTONIC). 0, or a negative errno when it could not
 * be recorded: the reply must then let the kernel keep nothing. */
int rfs_attrs_add(rfs_attrs *a, uint64_t ino, const char *thread_id, int64_t now_ns);
/* Take out the records still in force at now_ns of thread_id (NULL: of every thread),
 * calling fn with each one's inode (an inode may come more than once). fn runs under the
 * records' lock: it tells the kernel and takes no lock of the mount's. A record handed out
 * moments before stays, unsettled, and is told again (the kernel may not have made its
 * inode yet, and then loses the drop). */
void rfs_attrs_take(rfs_attrs *a, const char *thread_id, int64_t now_ns,
                    void (*fn)(void *ctx, uint64_t ino), void *ctx);
/* fn again for each unsettled record (taken moments after it was handed out), until it
 * settles; cheap when there is none. The hub calls it every round. */
void rfs_attrs_settle(rfs_attrs *a, int64_t now_ns, void (*fn)(void *ctx, uint64_t ino), void *ctx);

#endif
