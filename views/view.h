/* view.h — what a node holds: existence, attributes and bytes, rendered from the store.
 * The mount and `runfs cat` both read through here, so they print the same bytes. */
#ifndef RFS_VIEW_H
#define RFS_VIEW_H

#include <stdint.h>

#include "node.h"
#include "runstore.h"

/* The log facts of one thread or run, read once for the stats of a directory's entries
 * (they share them): valid 0 until the first stat fills it. */
typedef struct rfs_info_memo {
    int valid;
    char thread_id[RS_ID_MAX + 1];
    char run_id[RS_ID_MAX + 1]; /* "" for the thread's */
    rs_log_info info;
} rfs_info_memo;

/* Who is looking and what the mount shows. */
typedef struct rfs_scope {
    const char *user;        /* owner of this request (NULL: every owner) */
    const char *only_thread; /* --thread: the one visible thread */
    int read_only;
    const char *service_name; /* otel.json's service.name (NULL: "runfs") */
    int denied;               /* a uid --user-map does not name: EACCES below threads/ */
    int64_t mount_ns;         /* times for nodes with no store time */
    /* Mount-only documents; NULL in `runfs cat`. */
    int (*status_extra)(void *ctx, rs_buf *out); /* more "key":value pairs, no braces */
    /* .runfs/rejects.jsonl of owner user (the caller's), a log read at any offset. */
    int64_t (*rejects_size)(void *ctx, const char *user);
    int (*rejects_read)(void *ctx, const char *user, int64_t off, size_t size, rs_buf *out);
    void *ctx;
    struct rfs_sizes *sizes; /* view sizes kept until their thread changes (NULL: none) */
    /* Where a size the store keeps for later mounts goes (NULL: written on the request's
     * own connection); 0 when taken, else the caller writes it itself. A mount hands them
     * to its hub: a commit on another connection is what the hub takes for another
     * process's change, and a walk's sizes would have it check everything every tick. */
    int (*keep_size)(void *ctx, uint64_t view, uint64_t token, int64_t size);
    rfs_info_memo *memo; /* a listing's: stats of one thread or run share its facts */
    /* A listing of the thread asked for its entries' attributes (ls -la): a stat that must
     * render history.jsonl, transcript.md or the thread's stats.json or report.html for its
     * size sizes the four in one pass over the rows (they are stat'ed next). */
    int thread_pass;
} rfs_scope;

typedef enum rfs_shape {
    RFS_SHAPE_DIR,
    RFS_SHAPE_LOG,    /* events.jsonl: exact size, seekable, cacheable */
    RFS_SHAPE_DOC,    /* a small document rendered whole */
    RFS_SHAPE_STREAM, /* a view streamed in seq order; its exact size costs a rendering
                            (kept in scope->sizes) */
    RFS_SHAPE_FOLLOW, /* a live feed */
} rfs_shape;

typedef struct rfs_stat {
    rfs_shape shape;
    int64_t size;
    int64_t mtime_ns;
    int64_t ctime_ns;
    int64_t last_seq; /* logs: the highest seq in the file */
    int64_t version;  /* a fingerprint of what the thread or run was (its log info): a
                         rendering's bytes hold while it stays the same */
    int unsized;      /* rfs_view_stat_ex with lazy: the size is not known (size 0) */
    int kept;         /* the size was kept from an earlier stat: nothing was rendered */
    int thread_pass;  /* this stat sized its thread's history.jsonl, transcript.md,
                         stats.json and report.html in one pass (rfs_scope's thread_pass) */
    int rendered;     /* this stat rendered rows (its view, or a pass over its run's or
                         thread's) to learn the size: it was not kept */
} rfs_stat;

/* Does the node exist for this scope, and what is it. -ENOENT when it does not. */
int rfs_view_stat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_stat *st, rs_err *err);

/* Takes the bytes of a view rendered to learn its size, in order from offset 0; nonzero
 * stops the bytes (not the rendering). */
typedef int (*rfs_bytes_fn)(void *ctx, const char *p, size_t len);

/* rfs_view_stat, where a view rfs_view_kernel_keeps names may be left unsized (lazy: when
 * its size is not kept, st->unsized and no rendering; lazy 2: any streamed view or
 * document whose size is not kept, for a listing's attributes), or its rendering for the
 * size handed to bytes(ctx, ...) as it is made. */
int rfs_view_stat_ex(rs_store *s, const rfs_scope *sc, const rfs_node *n, int lazy,
                     rfs_bytes_fn bytes, void *ctx, rfs_stat *st, rs_err *err);
/* The views whose rendering the kernel may keep (history.jsonl, transcript.md, otel.json):
 * a first read then renders them once, at the stat that learns their size. */
int rfs_view_kernel_keeps(rfs_kind kind);
/* The version (rfs_stat) of a thread-wide node whose log info is info. */
int64_t rfs_view_version(const rs_log_info *info);

/* A reader of one file node. Reads at any offset; sequential reads are cheapest. n is kept,
 * not copied (10,000 open readers hold no 10,000 copies): it must outlive the reader. */
typedef struct rfs_reader rfs_reader;
int rfs_reader_open(rfs_reader **out, rs_store *s, const rfs_scope *sc, const rfs_node *n,
                    rs_err *err);
/* Append up to size bytes from offset off to out (fewer only at the end of the file). */
int rfs_reader_read(rfs_reader *r, rs_store *s, int64_t off, size_t size, rs_buf *out, rs_err *err);
void rfs_reader_free(rfs_reader *r);
/* When the file last changed, as seen at open. */
int64_t rfs_reader_mtime(const rfs_reader *r);
/* RFS_SHAPE_LOG when the reader's sizes and offsets are exact (the kernel may cache it). */
rfs_shape rfs_reader_shape(const rfs_reader *r);
/* The node's version (rfs_stat) when the reader was opened. */
int64_t rfs_reader_version(const rfs_reader *r);
/* What a search result's reader's last read read (RFS_SEARCH_FROM_..., search_view.h); 0
 * for any other file's. */
int rfs_reader_search_from(const rfs_reader *r);
/* A log's or document's size when the reader was opened; -1 for a stream (its size costs a
 * rendering). */
int64_t rfs_reader_size(const rfs_reader *r);
/* Streams: keep the last bytes read, so that a read a little behind the last one (the
 * kernel's readahead requests, answered in any order) costs no new rendering pass. */
void rfs_reader_keep_behind(rfs_reader *r, size_t bytes);
/* The reader's file is read past the kernel's cache (direct I/O): every byte its caller got,
 * it gave, and a byte it did not give was not read. */
void rfs_reader_direct(rfs_reader *r);

/* Directory entries of node n that come from the store (threads, runs, types, ...), each
 * passed to fn with its name, whether it is a directory, and, where the listing read them
 * (rs_names_times), a thread's or run's times as its stat gives them (ctime, mtime; else
 * NULL). */
typedef int (*rfs_entry_fn)(void *ctx, const char *name, int is_dir, const int64_t *times);
int rfs_view_list(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_entry_fn fn, void *ctx,
                  rs_err *err);

/* Every entry of directory node n as a listing of it on a mount shows it, in its order
 * (without . and ..): the fixed names (those that exist only sometimes, such as seal.json,
 * when they do), then rfs_view_list's; a lookup-only directory's none. */
int rfs_view_entries(rs_store *s, const rfs_scope *sc, const rfs_node *n, rfs_entry_fn fn,
                     void *ctx, rs_err *err);

/* Stat every file below directory node n as a walk of a mount does (du, tar), so each
 * view's size is learnt and kept in the store: a later mount's first walk renders
 * nothing. sc needs sizes; its thread_pass is set for the threads' listings. */
int rfs_view_size_tree(rs_store *s, rfs_scope *sc, const rfs_node *n, rs_err *err);
/* The same for only the views whose bytes are their rows' lines (types/, tasks/,
 * messages.jsonl): their sizes cost a pass over those rows, no rendering, and a later stat
 * after an append catches up from them. */
int rfs_view_size_lines(rs_store *s, rfs_scope *sc, const rfs_node *n, rs_err *err);
/* A thread's rows counted as a writer stores them (rs_import_src's stored): what
 * rfs_view_size_lines reads the rows back for. */
typedef struct rfs_lines rfs_lines;
int rfs_lines_new(rfs_lines **out);
int rfs_lines_add(rfs_lines *l, const rs_record *rec);
void rfs_lines_free(rfs_lines *l);
/* rfs_view_size_lines of thread n from l, no row read: 1 when l's rows are every row of the
 * thread as it is now (its log's count, bytes and last seq), 0 when not (nothing kept: the
 * caller reads the rows, as rfs_view_size_lines does), <0 on failure. */
int rfs_view_size_fed(rs_store *s, rfs_scope *sc, const rfs_node *n, rfs_lines *l, rs_err *err);

/* Render a whole file node to out (runfs cat). */
int rfs_view_cat(rs_store *s, const rfs_scope *sc, const rfs_node *n, rs_buf *out,
                 int (*flush)(void *ctx, rs_buf *out), void *ctx, rs_err *err);

#endif
