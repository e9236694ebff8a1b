/* docs.h — the documents open files read (contract.json, README, status.json, seq, ...),
 * shared by content: every open handle of the same bytes holds one copy, so 10,000 handles
 * of contract.json cost one rendering of it, not 10,000. */
#ifndef RFS_DOCS_H
#define RFS_DOCS_H

#include <stddef.h>

#include "runstore.h"

typedef struct rfs_doc rfs_doc;

/* The shared document holding b's bytes: b's memory is taken (or freed when an equal
 * document is held already) and b left empty. -ENOMEM leaves b as it was. */
int rfs_doc_intern(rs_buf *b, rfs_doc **out);
const char *rfs_doc_bytes(const rfs_doc *d, size_t *len);
void rfs_doc_release(rfs_doc *d); /* NULL is fine */

#endif
