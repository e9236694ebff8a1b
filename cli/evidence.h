/* evidence.h — the CLI's commands that make and check evidence with no mount. */
#ifndef RFS_CLI_EVIDENCE_H
#define RFS_CLI_EVIDENCE_H

#include "runstore.h"

/* runfs seal|verify-note|verify-proof|redact ...: argv[0] is the command's name; each returns the
 * exit status (0 done or holds, 1 refused or does not hold, 2 could not check). */
int rfs_cmd_seal(int argc, char **argv);
int rfs_cmd_verify_note(int argc, char **argv);
int rfs_cmd_verify_proof(int argc, char **argv);
/* runfs redact STORE THREAD SEQ [--path P]... --reason TEXT [--seal-key FILE]
 * [--seal-key-name NAME] [--user NAME]: 0 redacted, 1 refused, 2 could not open. */
int rfs_cmd_redact(int argc, char **argv);
/* runfs expire: retention, whole runs by age or by count. */
int rfs_cmd_expire(int argc, char **argv);

#endif
