/* rowview.h — reading fields out of a stored row's JSON (metadata.caller, content.status, ...)
 * for the projections and the evidence code, byte for byte, with DeerFlow's marker rule. */
#ifndef RS_ROWVIEW_H
#define RS_ROWVIEW_H

#include "event.h"
#include "runstore.h"

/* The row's metadata as canonical JSON with DeerFlow's markers dropped (when it is not an
 * object, what rs_event_meta_other shows; "{}" when there is none); *markers (may be NULL) is non-zero when a truthy marker said the
 * content is JSON. 0 or -ENOMEM. */
int rs_view_meta(rs_buf *meta, const rs_row *row, unsigned *markers);

/* The row's content as one canonical JSON value: decoded when markers is non-zero and the
 * text parses, else the text as a JSON string. 0 or -ENOMEM. */
int rs_view_content(rs_buf *content, const rs_row *row, unsigned markers);

/* Member key of the canonical object obj[0..len): 1 with *val (canonical bytes) set, 0 when
 * absent or obj is not an object. */
int rs_view_get(const char *obj, size_t len, const char *key, const char **val, size_t *val_len);

/* Member key decoded into out (reset first): 1 when it is a string, else 0. */
int rs_view_get_str(const char *obj, size_t len, const char *key, rs_buf *out);

#endif
