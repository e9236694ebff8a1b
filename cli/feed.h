/* feed.h — `runfs changes`: the store's change feed without a mount. */
#ifndef RFS_CLI_FEED_H
#define RFS_CLI_FEED_H

/* runfs changes STORE [--since N] [--follow] ...: argv[0] is the command's name; returns the
 * exit status (0 done, 1 failed, 2 usage or no store). */
int rfs_cmd_changes(int argc, char **argv);

#endif
