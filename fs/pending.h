/* pending.h — the memory of unfinished lines and bodies a mount holds for its open files:
 * bounded for the whole mount (--max-pending) and, where owners are kept apart, per owner,
 * so that one owner can exhaust only its own share. */
#ifndef RFS_PENDING_H
#define RFS_PENDING_H

#include <stddef.h>

/* On an owners-apart mount an owner holds at most this fraction of --max-pending. */
#define RFS_PENDING_SHARES 8

typedef struct rfs_pending rfs_pending;

/* cap: the mount's bytes; share: one owner's (cap for a mount without owners). */
int rfs_pending_new(rfs_pending **out, size_t cap, size_t share);
void rfs_pending_free(rfs_pending *p);
/* Count n more bytes for owner (NULL: the mount's one owner): 0, or -ENOBUFS with nothing
 * counted when the owner's share or the mount's cap would be passed (*held and *limit then
 * say which: the bytes already held and the bound hit). -ENOMEM for a new owner's entry. */
int rfs_pending_take(rfs_pending *p, const char *owner, size_t n, size_t *held, size_t *limit);
/* Give back n bytes owner took. */
void rfs_pending_give(rfs_pending *p, const char *owner, size_t n);

#endif
