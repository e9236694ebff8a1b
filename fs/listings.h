/* listings.h — directory listings kept between the requests that read them. The kernel
 * opens directories itself (no OPENDIR, no handle), so a listing is made at offset 0 and
 * its later pages are found by the number its entries' offsets carry. A listing goes when
 * a request reads past its end, or, the oldest unused first, when more than a few dozen or
 * more than a bounded number of entries are kept besides the one used last (readers that
 * stopped halfway: the kernel says nothing when a directory is closed). Thread-safe; its
 * lock is a leaf. */
#ifndef RFS_LISTINGS_H
#define RFS_LISTINGS_H

#include <stdint.h>

typedef struct rfs_listings rfs_listings;

/* free_fn frees a listing when it goes. */
int rfs_listings_new(rfs_listings **out, void (*free_fn)(void *listing));
void rfs_listings_free(rfs_listings *l);
/* Keep listing, a listing of directory ino of entries names, held for the caller: 0 with
 * *id its number (1 to 2^31 - 1), or -ENOMEM (listing not kept, not freed). */
int rfs_listings_put(rfs_listings *l, uint64_t ino, void *listing, size_t entries, uint64_t *id);
/* The listing numbered id of directory ino, held for the caller, or NULL when it went. */
void *rfs_listings_get(rfs_listings *l, uint64_t ino, uint64_t id);
/* Give back a listing put or got; done: it was read to its end and goes. */
void rfs_listings_release(rfs_listings *l, void *listing, int done);

#endif
