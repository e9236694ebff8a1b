/* merkle.h — RFC 6962 Merkle tree hashes over a run's lines (section 2.1: leaf
 * SHA-256(0x00 || line), or SHA-256(0x00 || salt || line) for a salted seal, node
 * SHA-256(0x01 || left || right), split at the largest power of two below the size), built
 * in one pass at seal time, and audit paths from what it keeps.
 *
 * What a seal keeps (the seqs and nodes rs_merkle_finish fills): the leaves fall into chunks
 * of RS_MERKLE_CHUNK; seqs holds the first seq of every chunk (int64, little-endian), nodes
 * the hashes of every complete aligned subtree of a chunk or more, level by level (level L:
 * n / (CHUNK << L) hashes), then the hash of the last, incomplete chunk when there is one. A
 * proof reads one chunk's rows and about 2 log n kept hashes. */
#ifndef RS_MERKLE_H
#define RS_MERKLE_H

#include <stdint.h>

#include "runstore.h"

#define RS_MERKLE_CHUNK 256
#define RS_SHA256_LEN 32
#define RS_SALT_LEN 16

typedef struct rs_merkle rs_merkle;

/* How one line becomes its leaf: its bytes alone (a seal made before salts), after its
 * salt (b's first RS_SALT_LEN bytes), or a leaf hash kept for it (b: a redacted line's). */
enum { RS_LEAF_PLAIN, RS_LEAF_SALTED, RS_LEAF_KEPT };
typedef struct rs_leaf {
    int kind;
    unsigned char b[RS_SHA256_LEN];
} rs_leaf;

/* The leaf hash of a line made as how says (NULL: plain). */
int rs_merkle_leaf(const rs_leaf *how, const char *line, size_t len,
                   unsigned char out[RS_SHA256_LEN]);

/* A builder: rs_merkle_add each line in seq order (how: its leaf's making, NULL plain), then
 * rs_merkle_finish. The hashing runs
 * on a thread of the builder's own, a batch behind the adds; rs_merkle_free stops it. */
int rs_merkle_new(rs_merkle **out);
int rs_merkle_add(rs_merkle *m, int64_t seq, const rs_leaf *how, const char *line, size_t len);
/* The root (the hash of no leaves for an empty run), the SHA-256 of the lines end to end
 * (the seal's digest) and what a seal keeps. */
int rs_merkle_finish(rs_merkle *m, unsigned char root[RS_SHA256_LEN],
                     unsigned char digest[RS_SHA256_LEN], rs_buf *seqs, rs_buf *nodes);
void rs_merkle_free(rs_merkle *m);

/* The chunk holding seq among n leaves whose chunks start at seqs (-ENOENT before the first):
 * its index, its first seq and the seq its next chunk starts at (INT64_MAX for the last). */
int rs_merkle_chunk_of(const rs_buf *seqs, int64_t n, int64_t seq, int64_t *chunk, int64_t *from,
                       int64_t *to);
/* The chunks of two trees of n leaves (what two rs_merkle_finish kept: seqs and nodes_a of
 * one, nodes_b of the other) whose hashes differ: fn(ctx, from, to) for each in order, from
 * its first seq (by seqs) to the seq its next chunk starts at (INT64_MAX for the last); fn's
 * nonzero return stops. -EINVAL when either does not fit n. */
int rs_merkle_diff(int64_t n, const rs_buf *seqs, const rs_buf *nodes_a, const rs_buf *nodes_b,
                   int (*fn)(void *ctx, int64_t from, int64_t to), void *ctx);
/* The number of leaves of chunk j of n. */
int64_t rs_merkle_chunk_size(int64_t n, int64_t j);

/* The audit path (leaf to root, RS_SHA256_LEN bytes each, appended to path) of leaf i of
 * chunk j of a tree of n leaves, given the chunk's leaves (their lines, and how each
 * becomes its leaf: count of them, or NULL for plain leaves) and what the seal kept.
 * -EBADMSG when the lines do not hash to the kept chunk (the rows changed), -EINVAL when
 * what was kept does not fit n. */
int rs_merkle_path(int64_t n, const rs_buf *nodes, int64_t j, const rs_buf *lines,
                   const size_t *ends, const rs_leaf *how, int64_t count, int64_t i, rs_buf *path);

/* RFC 9162 2.1.3.2: does the path lead leaf (its line, after salt unless NULL) at index i of a
 * tree of n to root? */
int rs_merkle_check(const unsigned char *salt, const char *line, size_t len, int64_t i, int64_t n,
                    const unsigned char *path, size_t depth,
                    const unsigned char root[RS_SHA256_LEN]);

/* "sha256:<hex>" of a hash into dst (72 bytes), and back (0 or -EINVAL). */
void rs_sha256_hex(char *dst, const unsigned char *h);
int rs_sha256_parse(const char *s, size_t len, unsigned char *h);

#endif
