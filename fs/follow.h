/* follow.h — live readers of follow.jsonl: a read returns what is there, else parks until a
 * commit feeds it through the hub. A follower's state is follow.c's alone. */
#ifndef RFS_FOLLOW_H
#define RFS_FOLLOW_H

#include "hub.h"

/* A reader of node n (RFS_T_FOLLOW or RFS_R_FOLLOW) as owner user (NULL: every owner),
 * registered with m's hub until rfs_follow_close; its feed ends at --follow-timeout.
 * n is kept, not copied: it must outlive the follower. 0 or -ENOMEM. */
int rfs_follow_open(rfs_follow **out, rfs_mount *m, const rfs_node *n, const char *user);
/* Unregister and free f; a parked read is answered EINTR. */
void rfs_follow_close(rfs_follow *f);
/* Reply to a read now (data or EOF) or park it until a commit feeds the feed. */
void rfs_follow_read(rfs_follow *f, fuse_req_t req, size_t size);
/* Reply to a poll: readable now, or ph (if any) is notified when it becomes so. */
void rfs_follow_poll(rfs_follow *f, fuse_req_t req, struct fuse_pollhandle *ph);

/* The hub's side, in its thread, hub lock not held: answer parked followers the queued
 * changes (or, with everything, any change) may have fed. */
void rfs_follow_serve_round(rfs_hub *hub, const rfs_change *queue, size_t queued, int everything);
/* The hub's side, in its thread, hub lock not held: a parked read whose caller has a signal
 * pending is answered EINTR, where libfuse passes on no interrupt (a request over io_uring). */
void rfs_follow_signalled(rfs_hub *hub);
/* The hub's side at unmount, hub lock held: nothing will feed parked readers any more. */
void rfs_follow_end_all(rfs_hub *hub);

#endif
