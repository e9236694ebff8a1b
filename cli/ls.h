/* ls.h — `runfs ls`: a directory of the layout listed without a mount. */
#ifndef RFS_CLI_LS_H
#define RFS_CLI_LS_H

/* runfs ls [-l] [-a] [--user NAME] STORE [PATH]: argv[0] is the command's name; returns the
 * exit status (0 done, 1 a path not shown, 2 usage or no store). */
int rfs_cmd_ls(int argc, char **argv);

#endif
