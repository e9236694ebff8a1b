/* sizes.h — the mount's cache of view sizes. A filtered view (messages.jsonl, history.jsonl,
 * transcript.md, types/, tasks/) has an exact st_size only by rendering it; the size is kept
 * until its thread or run changes, which the token (what rs_store_log_info said) tells. */
#ifndef RFS_SIZES_H
#define RFS_SIZES_H

#include <stdint.h>
#include <sys/types.h>

#include "otel.h"
#include "runstore.h"
#include "rs_util.h"

typedef struct rfs_sizes rfs_sizes;

int rfs_sizes_new(rfs_sizes **out);
void rfs_sizes_free(rfs_sizes *c);
/* A table whose views are never read after their sizing (runfs import --sizes): the sizing
 * passes keep no bytes in it (the kept answers below). Called before the table is shared. */
void rfs_sizes_sizes_only(rfs_sizes *c);
/* 0 for a table rfs_sizes_sizes_only made so, else 1. */
int rfs_sizes_keeps_bytes(const rfs_sizes *c);
/* 1 when tokens a and b say the same version (a size kept under one holds for the other). */
int rfs_sizes_same_token(const rs_log_info *a, const rs_log_info *b);
/* 1 with *size set when key was stored with an equal token, else 0. */
int rfs_sizes_get(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t *size);
void rfs_sizes_put(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size);
/* 1 with *token and *size set when key is kept at any token (a line view's size at an
 * earlier state of its log, which view.c catches up from the rows added since), else 0. */
int rfs_sizes_get_base(rfs_sizes *c, const char *key, rs_log_info *token, int64_t *size);
/* What a size kept at any token resumes from (history.jsonl's and transcript.md's: view.c
 * catches them up from the rows added since with it): 1 with *token, *size and the state
 * appended to state when key keeps one, else 0. A size put at another token drops it. */
int rfs_sizes_get_state(rfs_sizes *c, const char *key, rs_log_info *token, int64_t *size,
                        rs_buf *state);
/* Keep state beside key's size when that is kept at token (bounded: past the bound on all
 * kept states, the others go). */
void rfs_sizes_put_state(rfs_sizes *c, const char *key, const rs_log_info *token, const char *state,
                         size_t len);
#define RFS_DOC_MAX ((size_t)4 << 20) /* a kept document's bytes at most */
/* A small document kept whole with its size (bounded: a large one keeps only its size), so
 * the open after the stat that rendered it does not render it again. 1 with the bytes
 * appended to out when key was stored with an equal token and its bytes, else 0. */
int rfs_sizes_get_doc(rfs_sizes *c, const char *key, const rs_log_info *token, rs_buf *out);
void rfs_sizes_put_doc(rfs_sizes *c, const char *key, const rs_log_info *token, const char *doc,
                       size_t len);
/* otel.json's kept positions (otel.h) beside its size: a reference to those of key at
 * token (made when there are none yet), NULL when key is not kept at token. */
rfs_otel_marks *rfs_sizes_marks(rfs_sizes *c, const char *key, const rs_log_info *token);
/* Keep size as rfs_sizes_put does, and marks beside it unless some are kept already. */
void rfs_sizes_put_marks(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size,
                         rfs_otel_marks *marks);

/* A search answer kept beside its size (search_view.c) so that the read after the stat that
 * counted it does not search again: its bytes in a memfd (fd: shared memory the daemon does
 * not map, so not its heap's) when they fit rfs_kept_file_max(); a search's larger answer in
 * an unlinked file in $TMPDIR (the page cache, which the kernel may write back and reclaim),
 * encrypted under a key of its own that lives in the daemon's memory only, while it fits
 * rfs_kept_disk_max(); else the store's ids of its rows in order (n of them). A streamed
 * view's rendering is kept the same way (view.c: its bytes only, in memory only), so the open
 * and read after the stat that sized it (grep -r, tar) render nothing. gen tells one kept
 * answer from any other (never 0). All the kept answers' bytes in memory together stay within
 * twice rfs_kept_file_max(), those on disk within twice rfs_kept_disk_max(), their files
 * within RFS_KEPT_FILES_MAX, all the ids within RFS_KEPT_ROWS_MAX: past any bound the older
 * answers go (a reader holding one keeps it until its read is done), an answer goes when its
 * size does, and every one when rows are rewritten. A file on disk that goes takes its key
 * with it: what the file system's free blocks keep of it no one can read (a redaction's
 * bytes outlive their drop in no readable form). */
#define RFS_KEPT_ROWS_MAX ((size_t)1 << 20)   /* ids kept at most, all lists together */
#define RFS_KEPT_FILE_MAX ((int64_t)32 << 20) /* a kept answer's bytes in memory at most */
#define RFS_KEPT_DISK_MAX ((int64_t)1 << 30)  /* a kept answer's bytes on disk at most */
#define RFS_KEPT_FILES_MAX 256                /* kept answers' files at most (descriptors) */
#define RFS_KEPT_KEY 16                       /* the bytes of a file's key (AES-128) */
typedef struct rfs_kept_rows {
    int refs; /* guarded by the table's lock */
    uint64_t gen;
    int fd;        /* the answer's bytes (-1: its rows' ids instead) */
    int64_t bytes; /* ... how many */
    int on_disk;   /* fd is a file on disk, its bytes encrypted under key (AES-128-CTR, the
                      counter the byte offset / 16) */
    unsigned char key[RFS_KEPT_KEY];
    size_t n;
    int64_t ids[];
} rfs_kept_rows;
/* RFS_KEPT_FILE_MAX, or less where RUNFS_KEPT_ANSWER_MAX says (0: no answer's bytes kept, in
 * memory or on disk). */
int64_t rfs_kept_file_max(void);
/* RFS_KEPT_DISK_MAX, or what RUNFS_KEPT_DISK_MAX says (0: none on disk); 0 when
 * rfs_kept_file_max() is. */
int64_t rfs_kept_disk_max(void);
/* A memfd for an answer's bytes: its descriptor, or a negative errno (-ENOSPC: none kept). */
int rfs_kept_file_open(void);
/* A kept answer of the bytes memfd fd holds (the answer takes fd: closed when it is freed,
 * or here when out of memory), NULL when out of memory or over rfs_kept_file_max(). */
rfs_kept_rows *rfs_kept_file_new(int fd, int64_t bytes);
/* An answer's bytes written to a kept file as they are made, a chunk at a time, while they
 * stay within rfs_kept_file_max(), or with RFS_KEEP_DISK on disk past it within
 * rfs_kept_disk_max() (then, or when a write fails, none: fd -1). */
enum { RFS_KEEP_NONE, RFS_KEEP_MEMORY, RFS_KEEP_DISK };
typedef struct rfs_kept_writer {
    int fd;
    int64_t bytes;
    rs_buf chunk;
    int want;    /* an RFS_KEEP_ */
    int on_disk; /* fd is the file on disk: what is written is encrypted first */
    unsigned char key[RFS_KEPT_KEY];
    void *enc; /* on disk: the cipher's state, at bytes */
} rfs_kept_writer;
/* Begin w: with a file when want is not RFS_KEEP_NONE (and one can be made), else one that
 * keeps nothing. */
void rfs_kept_writer_open(rfs_kept_writer *w, int want);
void rfs_kept_writer_add(rfs_kept_writer *w, const char *p, size_t len);
/* The kept answer of w's bytes when they are all size bytes (w's file taken), else NULL. */
rfs_kept_rows *rfs_kept_writer_finish(rfs_kept_writer *w, int64_t size);
/* w's file (unless finish took it) and chunk freed. */
void rfs_kept_writer_drop(rfs_kept_writer *w);
/* Up to size bytes of a kept answer's file from off (fewer only at its end) appended to
 * out. */
int rfs_kept_pread(const rfs_kept_rows *k, int64_t off, size_t size, rs_buf *out);
/* Up to len bytes of a kept answer's file from off into buf (fewer only at its end): how
 * many, or a negative errno. */
ssize_t rfs_kept_read_at(const rfs_kept_rows *k, void *buf, size_t len, int64_t off);
/* A list of room for n ids (refs 1, n set, no file, a fresh gen), NULL when out of memory
 * or over what the table would keep. */
rfs_kept_rows *rfs_kept_rows_new(size_t n);
/* The answer kept beside key's size at token, retained (give back with
 * rfs_sizes_rows_done), or NULL; one kept at another token is dropped. */
rfs_kept_rows *rfs_sizes_rows(rfs_sizes *c, const char *key, const rs_log_info *token);
void rfs_sizes_rows_done(rfs_sizes *c, rfs_kept_rows *rows);
/* The store's count of rewrites (redactions, foreign updates and deletes) now: when it moved
 * since the last call every kept answer and kept document's bytes go, so none keeps a
 * redacted line's old bytes. */
void rfs_sizes_rewrites(rfs_sizes *c, int64_t rewrites);
/* The highest rewrites count told so far: a reader holding bytes rendered at an older one
 * renders them again (a redaction leaves none of its old bytes in a handle either). */
int64_t rfs_sizes_rewrites_seen(rfs_sizes *c);
/* Keep size as rfs_sizes_put does and the answer beside it (the table takes the caller's
 * reference; NULL: none), within the bounds on all kept answers (past one, the others go);
 * rewrites is the count the answer was counted at: one older than the table's is not kept. */
void rfs_sizes_put_rows(rfs_sizes *c, const char *key, const rs_log_info *token, int64_t size,
                        rfs_kept_rows *rows, int64_t rewrites);

#endif
