/* rowview.c — fields of a stored row's JSON, decoded the way DeerFlow reads them. */
#include <errno.h>
#include <string.h>

#include "json.h"
#include "rowview.h"
#include "rs_util.h"

int rs_view_meta(rs_buf *meta, const rs_row *row, unsigned *markers)
{
    unsigned m = 0;
    size_t keep;
    rs_buf_reset(meta);
    /* As runfs stored it: canonical already, the markers at its end. */
    if (rs_event_stored_meta(row, &keep, &m)) {
        int rc = rs_buf_add(meta, row->metadata, keep);
        if (!rc && m)
            rc = rs_buf_addch(meta, '}');
        if (!rc && markers)
            *markers = m;
        return rc;
    }
    if (row->metadata && row->metadata_len) {
        int rc = rs_buf_grow(meta, row->metadata_len + 1);
        if (rc)
            return rc;
        size_t n = 0;
        if (rs_json_canon_to(meta->buf, &n, row->metadata, row->metadata_len,
                             RS_JSON_LENIENT | RS_JSON_DROP_MARKERS, &m, NULL) == 0 &&
            meta->buf[0] == '{') {
            rs_buf_setlen(meta, n);
            if (markers)
                *markers = m;
            return 0;
        }
    }
    if (markers)
        *markers = 0;
    rs_buf_reset(meta);
    return row->metadata ? rs_event_meta_other(meta, row->metadata, row->metadata_len)
                         : rs_buf_addlit(meta, "{}");
}

int rs_view_content(rs_buf *content, const rs_row *row, unsigned markers)
{
    rs_buf_reset(content);
    if (!row->content)
        return rs_buf_addlit(content, "null");
    if (markers) {
        int rc = rs_json_canon(content, row->content, row->content_len, RS_JSON_LENIENT, NULL);
        if (rc != -EINVAL)
            return rc;
        rs_buf_reset(content);
    }
    return rs_buf_add_json_string(content, row->content, row->content_len);
}

int rs_view_get(const char *obj, size_t len, const char *key, const char **val, size_t *val_len)
{
    return rs_json_get(obj, len, key, strlen(key), val, val_len);
}

int rs_view_get_str(const char *obj, size_t len, const char *key, rs_buf *out)
{
    const char *v;
    size_t n;
    rs_buf_reset(out);
    if (!rs_view_get(obj, len, key, &v, &n) || n < 2 || v[0] != '"')
        return 0;
    if (rs_json_unquote(out, v, n) != 0) {
        rs_buf_reset(out);
        return 0;
    }
    return 1;
}
