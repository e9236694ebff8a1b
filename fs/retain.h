/* retain.h — a mount's --retain DURATION: retention (rs_store_expire) in the background, once
 * right after the mount is ready and then every hour, on a thread and a store of its own. */
#ifndef RFS_RETAIN_H
#define RFS_RETAIN_H

#include "mount.h"

/* Start the passes when m->opt.retain_s is set (0 otherwise, or -errno). */
int rfs_retain_start(rfs_mount *m);
/* Stop them: a pass under way finishes first. */
void rfs_retain_stop(rfs_mount *m);

#endif
