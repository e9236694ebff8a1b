/* deerflow.h — the CLI's commands for DeerFlow's JSONL store folder. */
#ifndef RFS_DEERFLOW_H
#define RFS_DEERFLOW_H

#include <stdio.h>

#include "runstore.h"

/* runfs import|export STORE --deerflow-jsonl DIR ...: argv[0] is the command's name;
 * returns the exit status (0 done, 2 not done or not all of it). */
int rfs_cmd_import(int argc, char **argv);
int rfs_cmd_export(int argc, char **argv);

/* Name on out, one line each after prefix, every (thread, run) of rows whose ids no path can
 * name, which export and verify skip (ids JSON-quoted: any byte shows). 0 with *count set, or
 * a negative errno with the reason in err. */
int rfs_odd_ids_name(rs_store *s, FILE *out, const char *prefix, long *count, rs_err *err);

#endif
