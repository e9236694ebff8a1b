/* sign.h — signed seals (DESIGN "Receipts and seals"): a seal's text body and its C2SP
 * signed note, made and checked through OpenSSL's EVP API with Ed25519 keys. The public
 * half (key loading, rs_note_verify, rs_proof_verify) is in runstore.h. */
#ifndef RS_SIGN_H
#define RS_SIGN_H

#include "backend.h"
#include "runstore.h"

/* The note's body for a seal: fixed lines, each ending in '\n' (replaces out's bytes). */
int rs_note_body(rs_buf *out, const rs_target *t, const rs_seal_row *row);
/* body, a blank line and the key's signature line, into note (room for RS_NOTE_MAX). */
int rs_note_sign(const rs_seal_key *k, const char *body, size_t len, char *note, rs_err *err);

#endif
