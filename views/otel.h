/* otel.h — otel.json of a run: one OTLP/JSON ExportTraceServiceRequest following the
 * OpenTelemetry GenAI semantic conventions (a root invoke_agent span, a chat span per model
 * call, an execute_tool span per tool call, an invoke_agent span per subagent task), ids
 * derived from the thread, the run and the seqs, no message text. Rendered row by row: a
 * span goes out when it ends, the root and what never ended at the finish, so memory holds
 * only the calls and tasks still open. */
#ifndef RFS_OTEL_H
#define RFS_OTEL_H

#include "runstore.h"

typedef struct rfs_otel rfs_otel;

int rfs_otel_new(rfs_otel **out, const char *thread_id, const char *run_id);
void rfs_otel_free(rfs_otel *o);
/* Render the next record of the run (seq order) to out. */
int rfs_otel_feed(rfs_otel *o, const rs_record *rec, rs_buf *out);
/* The rows ended: open spans, the root, the end of the document. */
int rfs_otel_finish(rfs_otel *o, rs_buf *out);

#endif
