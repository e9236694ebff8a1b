/* evidence.c — see evidence.h. */
#include <errno.h>

#include "evidence.h"

int rfs_evidence_render(rs_store *s, const rs_target *t, const rfs_node *n, rs_buf *out,
                        rs_err *err)
{
    switch (n->kind) {
    case RFS_R_NOTE: return rs_store_seal_note(s, t, out, err);
    case RFS_R_PROOF: return rs_store_proof(s, t, n->num, out, err);
    default: return -EINVAL;
    }
}
