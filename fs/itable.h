/* itable.h — the mount's inode table: node <-> inode number, with the kernel's lookup
 * counts. Inode numbers are a 64-bit hash of the node's identity, so the same path has the
 * same number in every mount and in readdir before any lookup. Thread-safe. */
#ifndef RFS_ITABLE_H
#define RFS_ITABLE_H

#include <stdint.h>

#include "node.h"

typedef struct rfs_itable rfs_itable;

int rfs_itable_new(rfs_itable **out);
void rfs_itable_free(rfs_itable *t);

/* The inode number node n has, or would be given by rfs_itable_ref now (no lookup
 * counted): readdir and lookup agree even after a hash collision. */
uint64_t rfs_itable_ino_of(rfs_itable *t, const rfs_node *n);

/* Count one kernel lookup of n; *ino = its number. */
int rfs_itable_ref(rfs_itable *t, const rfs_node *n, uint64_t *ino);
/* The node of ino: 0, or -ENOENT when the kernel holds no reference (stale). */
int rfs_itable_get(rfs_itable *t, uint64_t ino, rfs_node *out);
/* The kernel dropped nlookup references. */
void rfs_itable_forget(rfs_itable *t, uint64_t ino, uint64_t nlookup);

/* Logs: the store size the kernel's cache is known to match (-1: none), so an append
 * invalidates exactly the pages past the old end. */
void rfs_itable_set_size(rfs_itable *t, uint64_t ino, int64_t size);
int rfs_itable_known_size(rfs_itable *t, uint64_t ino, int64_t *size);

/* Handles that pin a state on a node: a once/ or seal.json file being created (it exists
 * for its writer before anything is stored), or, on a thread, open writers of its runs (its
 * logs are then read without the page cache). */
void rfs_itable_hold(rfs_itable *t, uint64_t ino, int delta);
int rfs_itable_holds(rfs_itable *t, uint64_t ino);

/* Logs: the kernel may hold pages of ino (it was opened through the page cache once);
 * only then must an append wait for the kernel's copy to be invalidated. */
void rfs_itable_mark_cached(rfs_itable *t, uint64_t ino);
int rfs_itable_cached(rfs_itable *t, uint64_t ino);

/* A set of kinds, and the bit of kind in one (every rfs_kind is below 128: the layout has
 * more kinds than 64 bits hold). */
__extension__ typedef unsigned __int128 rfs_kinds;
#define RFS_KIND(kind) ((rfs_kinds)1 << (kind))
/* Call fn for every referenced node of thread_id (NULL: of every thread, and the nodes of
 * none) whose kind is in kinds (RFS_KIND bits), in one pass over the thread's nodes or the
 * table (under the table lock held for reading: fn must not call back). */
void rfs_itable_each(rfs_itable *t, const char *thread_id, rfs_kinds kinds,
                     void (*fn)(void *ctx, uint64_t ino, const rfs_node *n, int64_t size),
                     void *ctx);

#endif
