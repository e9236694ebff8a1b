/* node.h — the filesystem's layout as data: what each path names (a node), which names a
 * directory may hold, and each node's type and mode. Pure syntax: whether a thread or run
 * exists is the store's to say (view.h). Shared by the mount and `runfs cat`. */
#ifndef RFS_NODE_H
#define RFS_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "runstore.h"

typedef enum rfs_kind {
    RFS_ROOT = 1,
    RFS_README,
    RFS_CONTRACT,
    RFS_META, /* .runfs/ */
    RFS_STATUS,
    RFS_REJECTS,
    RFS_CHANGES,            /* changes.jsonl */
    RFS_CHANGES_DIR,        /* changes/ */
    RFS_CHANGES_SINCE_DIR,  /* changes/since/ */
    RFS_CHANGES_SINCE,      /* changes/since/<N> */
    RFS_CHANGES_FOLLOW_DIR, /* changes/follow/ */
    RFS_CHANGES_FOLLOW,     /* changes/follow/<N> */
    RFS_EXPIRED,            /* expired.jsonl */
    RFS_THREADS,
    RFS_THREAD,
    RFS_T_EVENTS,
    RFS_T_MESSAGES,
    RFS_T_HISTORY,
    RFS_T_COUNT,
    RFS_T_SEQ,
    RFS_T_TRANSCRIPT,
    RFS_T_SINCE_DIR,
    RFS_T_SINCE,
    RFS_T_FOLLOW,
    RFS_T_MSGSEQ_DIR,
    RFS_T_MSGSEQ,
    RFS_T_AIRUN_DIR,
    RFS_T_AIRUN,
    RFS_T_STATS,
    RFS_T_REPORT,
    RFS_RUNS,
    RFS_RUN,
    RFS_R_EVENTS,
    RFS_R_MESSAGES,
    RFS_R_ONCE_DIR,
    RFS_R_ONCE,
    RFS_R_TYPES_DIR,
    RFS_R_TYPE,
    RFS_R_TASKS_DIR,
    RFS_R_TASK,
    RFS_R_SINCE_DIR,
    RFS_R_SINCE,
    RFS_R_LASTAI,
    RFS_R_WORKSPACE,
    RFS_R_RECEIPT,
    RFS_R_SEAL,
    RFS_R_FOLLOW,
    RFS_SEARCH_DIR, /* search/ at the root, in a thread, in a run (lookup-only) */
    RFS_SEARCH,
    RFS_T_SEARCH_DIR,
    RFS_T_SEARCH,
    RFS_R_SEARCH_DIR,
    RFS_R_SEARCH,
    RFS_R_STATS,
    RFS_R_TIMELINE,
    RFS_R_OTEL,
    RFS_R_NOTE,
    RFS_R_PROOFS_DIR,
    RFS_R_PROOF,
    RFS_R_DIFF_DIR, /* diff/ of a run (lookup-only) */
    RFS_R_DIFF,     /* diff/<run_id> */
    RFS_R_REPORT,
    RFS_R_TL_DIR,    /* timeline/ */
    RFS_R_TL_WIN,    /* timeline/<n>.svg (num n), timeline/count (num 0) */
    RFS_R_OTEL_DIR,  /* otel/ */
    RFS_R_OTEL_PART, /* otel/<n>.json (num n), otel/count (num 0) */
    RFS_R_REDACTIONS,
} rfs_kind;

/* The last kind (fs/ keeps sets of kinds in 128 bits). */
#define RFS_KIND_LAST RFS_R_REDACTIONS

#define RFS_NAME_MAX 255

typedef struct rfs_node {
    rfs_kind kind;
    char thread_id[RS_ID_MAX + 1];
    char run_id[RS_ID_MAX + 1];
    char name[RFS_NAME_MAX + 1]; /* event type, task id, identity, message id, query, the
                                    run a diff compares with */
    int64_t num;                 /* since/<seq>, changes/since/<N>, proofs/<seq> */
} rfs_node;

void rfs_node_root(rfs_node *out);

/* The child called name of directory parent: 0, -ENOENT (no such name here), -EINVAL (a
 * bad id, as DESIGN's errno table says), -ENOTDIR (parent is a file). */
int rfs_node_child(const rfs_node *parent, const char *name, rfs_node *out);

/* Resolve a relative path ("threads/T/runs/R/events.jsonl") from the root. */
int rfs_node_parse(const char *path, rfs_node *out);

/* Append the node's path relative to the root (no leading '/'). */
int rfs_node_path(const rfs_node *n, rs_buf *out);

int rfs_node_is_dir(rfs_kind kind);
/* Files whose lines are the run's or thread's history log (exact size, seekable). */
int rfs_node_is_log(rfs_kind kind);
/* What a writer may change on a writable mount: files it may open for writing (a run's
 * events.jsonl, once/<type>), directories it may create in (threads/, runs/, a run for its
 * seal.json, once/); with deleting allowed, every directory of a thread (rm -r empties
 * them). A sealed seal.json is not writable: a second seal is EEXIST. */
int rfs_node_is_writable(rfs_kind kind, int allow_delete);

/* The fixed entries of a directory kind, NULL-terminated (dynamic entries come from the
 * store). */
const char *const *rfs_node_fixed_entries(rfs_kind kind);

/* Directories of names that are only looked up (since/, search/, proofs/, ...): they list
 * nothing, not even . and .., so a walk learns it in one request (the kernel knows a
 * listing has ended only from an empty reply). */
int rfs_node_lookup_only(rfs_kind kind);

/* The mode (type and permission bits) ls -l shows for kind: w bits only where a mount
 * (writable: not read-only) lets a writer change something, less umask. */
unsigned rfs_node_mode(rfs_kind kind, int writable, int allow_delete, unsigned umask);

#endif
