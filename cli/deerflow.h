/* deerflow.h — the CLI's commands for DeerFlow's JSONL store folder. */
#ifndef RFS_DEERFLOW_H
#define RFS_DEERFLOW_H

#include "runstore.h"

/* runfs import|export STORE --deerflow-jsonl DIR ...: argv[0] is the command's name;
 * returns the exit status (0 done, 2 not done or not all of it). */
int rfs_cmd_import(int argc, char **argv);
int rfs_cmd_export(int argc, char **argv);

#endif
