/* receipt.h — the read-back of an events.jsonl handle opened O_RDWR: the records stored
 * through that handle, in order, one line each, as a stream (each read continues where the
 * previous one ended, whatever the file offset). It keeps seq ranges, never the bytes, so
 * its memory does not grow with the amount written. */
#ifndef RFS_RECEIPT_H
#define RFS_RECEIPT_H

#include <stddef.h>
#include <stdint.h>

#include "runstore.h"

typedef struct rfs_seq_range {
    int64_t first;
    int64_t last;
} rfs_seq_range;

/* Starts as RFS_RECEIPT_INIT. */
typedef struct rfs_receipt {
    rs_buf ranges;    /* rfs_seq_range[], in the project's one growable buffer */
    size_t idx;       /* the range being read */
    int64_t next_seq; /* in it, the next record to read (0: its first) */
    size_t skip;      /* bytes of that record already read */
} rfs_receipt;

#define RFS_RECEIPT_INIT \
    { \
        RS_BUF_INIT, 0, 0, 0 \
    }

/* The canonical lines one write stored (new records, or the originals an idempotency key
 * confirmed) are the handle's next records: their seqs are kept (0 or -ENOMEM). */
int rfs_receipt_add_lines(rfs_receipt *r, const char *lines, size_t len);
/* Append up to size more bytes of the stream to out; fewer only at its end. */
int rfs_receipt_read(rfs_receipt *r, rs_store *s, const char *thread_id, const char *run_id,
                     size_t size, rs_buf *out, rs_err *err);
void rfs_receipt_release(rfs_receipt *r);

#endif
