/* backend.c — what every backend does alike: rendering a cursor's current row into its
 * record, and telling whether a process that holds a reservation is still alive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

int rs_cursor_emit(rs_cursor *c, int log, int64_t *next_off, int64_t skip_to, const rs_record **out)
{
    const rs_row *row = &c->row;
    rs_buf_reset(&c->line);
    int rc = rs_event_encode(&c->line, row, NULL);
    if (rc)
        return rc;
    rs_record *r = &c->rec;
    r->seq = row->seq;
    r->thread_id = row->thread_id;
    r->run_id = row->run_id;
    r->event_type = row->event_type;
    r->category = row->category;
    r->user_id = row->user_id;
    r->line = c->line.buf;
    r->line_len = c->line.len;
    r->run_off = r->thread_off = -1;
    if (log) {
        int64_t off = *next_off;
        *next_off += (int64_t)c->line.len;
        if (*next_off <= skip_to)
            return 0;
        if (log == 1)
            r->run_off = off;
        else
            r->thread_off = off;
    }
    *out = r;
    return 1;
}

int64_t rs_process_start(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "pid (comm) state ...": comm may hold spaces and parens, so start after the last ')'.
     * starttime is field 22, the 20th after the state. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
        return -1;
    p += 2;
    for (int field = 3; field < 22 && p; field++)
        if ((p = strchr(p, ' ')))
            p++;
    return p ? strtoll(p, NULL, 10) : -1;
}
