/* usermap.h — --user-map FILE: which owner each calling uid writes and reads as, so a
 * sandbox's uid can act as a DeerFlow user id. */
#ifndef RFS_USERMAP_H
#define RFS_USERMAP_H

#include <sys/types.h>

typedef struct rfs_usermap rfs_usermap;

/* Read FILE: lines of "UID OWNER" separated by blanks, '#' starts a comment, OWNER 1-64 of
 * [A-Za-z0-9_-]. -EINVAL with "FILE:LINE: reason" in why for anything else. */
int rfs_usermap_load(rfs_usermap **out, const char *path, char *why, size_t why_len);
/* The owner uid maps to, or NULL when it is not in the map. */
const char *rfs_usermap_owner(const rfs_usermap *m, uid_t uid);
void rfs_usermap_free(rfs_usermap *m);

#endif
