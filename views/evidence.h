/* evidence.h — the files of a sealed run that prove it: seal.note (the seal as a signed
 * note) and proofs/<seq> (one event's audit path to the seal's root). */
#ifndef RFS_EVIDENCE_H
#define RFS_EVIDENCE_H

#include "node.h"
#include "runstore.h"

/* The bytes of an RFS_R_NOTE or RFS_R_PROOF node of run t; -ENOENT when the run has no
 * signed seal, or the event is outside the seal. */
int rfs_evidence_render(rs_store *s, const rs_target *t, const rfs_node *n, rs_buf *out,
                        rs_err *err);

#endif
