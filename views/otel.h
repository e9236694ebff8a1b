/* otel.h — otel.json of a run: one OTLP/JSON ExportTraceServiceRequest following the
 * OpenTelemetry GenAI semantic conventions (a root invoke_agent span, a chat span per model
 * call, an execute_tool span per tool call, an invoke_agent span per subagent task), ids
 * derived from the thread, the run and the seqs, no message text. Rendered row by row: a
 * span goes out when it ends, the root and what never ended at the finish, so memory holds
 * only the calls and tasks still open. */
#ifndef RFS_OTEL_H
#define RFS_OTEL_H

#include "glance.h"
#include "runstore.h"

typedef struct rfs_otel rfs_otel;

/* service: the resource's service.name (NULL: "runfs"); agent: gen_ai.agent.name, the run's
 * run.start caller (NULL: none known). */
int rfs_otel_new(rfs_otel **out, const char *thread_id, const char *run_id, const char *service,
                 const char *agent);
void rfs_otel_free(rfs_otel *o);
/* Render the next record of the run (seq order) to out. */
int rfs_otel_feed(rfs_otel *o, const rfs_ev *ev, rs_buf *out);
/* The rows ended: open spans, the root, the end of the document. */
int rfs_otel_finish(rfs_otel *o, rs_buf *out);
/* otel/<n>.json: complete requests of at most this many spans and bytes each. */
#define RFS_OTEL_PART_SPANS 10000
#define RFS_OTEL_PART_BYTES ((size_t)4 << 20)
/* Render only part n (1, 2, ...) of the spans, as a request of its own (n < 0: none, to
 * count them); set before the first row. Its finish is -ENOENT when the run has fewer
 * parts. */
void rfs_otel_set_part(rfs_otel *o, int64_t part);
/* The parts the rows so far make (after the finish: the run's). */
int64_t rfs_otel_parts(const rfs_otel *o);
/* A copy of o's state, to render on from. */
int rfs_otel_clone(const rfs_otel *o, rfs_otel **out);

/* Kept positions in one run's otel.json (as the logs keep line offsets): the state of its
 * rendering at offsets about a MiB apart, so a read anywhere renders from the nearest one
 * at or before it, not from the first row. Shared by the renderers of the same bytes (the
 * mount keeps it beside the size, sizes.h); every call takes its lock. */
typedef struct rfs_otel_marks rfs_otel_marks;
int rfs_otel_marks_new(rfs_otel_marks **out);
rfs_otel_marks *rfs_otel_marks_retain(rfs_otel_marks *m);
void rfs_otel_marks_release(rfs_otel_marks *m);
/* o has rendered the rows up to seq, whose bytes end at off: kept when a mark is due there.
 * Returns the offset at which the next one is due (call again once off reaches it). */
int64_t rfs_otel_mark(rfs_otel_marks *m, const rfs_otel *o, int64_t off, int64_t seq);
/* The mark nearest at or before off, when it lies past after: 1 with *o a copy of its state,
 * *at its offset and *seq its last row; 0 when none; -ENOMEM. */
int rfs_otel_resume(rfs_otel_marks *m, int64_t off, int64_t after, rfs_otel **o, int64_t *at,
                    int64_t *seq);

#endif
