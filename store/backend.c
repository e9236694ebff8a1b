/* backend.c — what every backend does alike: rendering a cursor's current row into its
 * record, telling whether a process that holds a reservation is still alive, and keeping
 * a reader's threads indexed in memory bounded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "rs_util.h"

int rs_cursor_emit(rs_cursor *c, int log, int64_t *next_off, int64_t skip_to, const rs_record **out)
{
    const rs_row *row = &c->row;
    /* Another writer's row with an id no path can name: in no log, no view, no answer. */
    if (row->odd)
        return 0;
    rs_buf_reset(&c->line);
    int rc = rs_event_encode_spans(&c->line, row, &c->spans, NULL);
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
    if (rs_fmt(path, sizeof path, "/proc/%ld/stat", pid) < 0)
        return -1;
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

static const char *item_id(const void *ctx, uintptr_t entry)
{
    const rs_id_items *it = ctx;
    return (const char *)*it->items + (entry - 1) * it->size;
}

static uint64_t id_hash(const void *ctx, const void *id)
{
    (void)ctx;
    return rs_hash(RS_HASH_INIT, id, strlen(id));
}

static uint64_t id_entry_hash(const void *ctx, uintptr_t entry)
{
    return id_hash(ctx, item_id(ctx, entry));
}

static int id_matches(const void *ctx, uintptr_t entry, const void *id)
{
    return strcmp(item_id(ctx, entry), id) == 0;
}

const rs_map_type rs_id_items_type = {id_hash, id_entry_hash, id_matches};

size_t rs_id_find(const rs_map *ids, size_t *last, const char *id)
{
    if (*last && id_matches(ids->ctx, *last, id))
        return *last;
    uintptr_t found = rs_map_find(ids, id);
    if (found)
        *last = found;
    return found;
}

void *rs_run_set_at(const rs_run_set *rs, size_t i)
{
    return (char *)rs->items + i * rs->size;
}

void *rs_run_set_find(rs_run_set *rs, const char *id)
{
    size_t at = rs_id_find(&rs->ids, &rs->last, id);
    return at ? rs_run_set_at(rs, at - 1) : NULL;
}

int rs_run_set_room(rs_run_set *rs)
{
    return rs_array_grow(&rs->items, &rs->cap, rs->count + 1, rs->size) ||
                   rs_map_reserve(&rs->ids, rs->count + 1)
               ? -ENOMEM
               : 0;
}

void *rs_run_set_slot(rs_run_set *rs)
{
    return rs_run_set_at(rs, rs->count);
}

int rs_run_set_add(rs_run_set *rs, const char *id)
{
    if (rs_fmt(rs_run_set_slot(rs), RS_ID_MAX + 1, "%s", id) < 0)
        return -ENAMETOOLONG;
    if (rs_map_add(&rs->ids, rs->count + 1)) /* never: rs_run_set_room made room */
        return -ENOMEM;
    rs->last = ++rs->count;
    return 0;
}

void rs_run_set_release(rs_run_set *rs)
{
    free(rs->items);
    rs->items = NULL;
    rs->count = rs->cap = 0;
    rs_map_release(&rs->ids);
}

rs_mem_thread *rs_mem_find(rs_mem_list *l, const char *id, int create)
{
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->threads[i].id, id) == 0)
            return &l->threads[i];
    if (!create || rs_array_grow(&l->threads, &l->cap, l->count + 1, sizeof *l->threads))
        return NULL;
    if (strlen(id) >= sizeof l->threads[0].id)
        return NULL;
    rs_mem_thread *t = &l->threads[l->count++];
    *t = (rs_mem_thread){.rows = 0};
    memcpy(t->id, id, strlen(id) + 1);
    return t;
}

int rs_mem_trim(rs_mem_list *l, rs_mem_thread *t, int64_t rows, int64_t max,
                int (*drop)(void *ctx, const char *id), void *ctx, size_t *dropped)
{
    l->rows += rows - t->rows;
    t->rows = rows;
    char keep[sizeof t->id];
    memcpy(keep, t->id, sizeof keep);
    size_t gone = 0;
    int rc = 0;
    while (!rc && l->rows > max && gone < l->count) {
        rs_mem_thread *old = &l->threads[gone++];
        if (strcmp(old->id, keep) == 0)
            continue;
        rc = drop(ctx, old->id);
        l->rows -= old->rows;
        old->rows = 0;
    }
    /* The thread kept stays, first of what is left. */
    size_t n = 0;
    for (size_t i = 0; i < l->count; i++)
        if (i >= gone || strcmp(l->threads[i].id, keep) == 0)
            l->threads[n++] = l->threads[i];
    *dropped = l->count - n;
    l->count = n;
    return rc;
}

void rs_mem_clear(rs_mem_list *l)
{
    l->count = 0;
    l->rows = 0;
}

void rs_mem_release(rs_mem_list *l)
{
    free(l->threads);
    *l = (rs_mem_list){0};
}

int rs_idem_column(char out[RS_IDEM_COLUMN_MAX + 1], const char *user, const char *key)
{
    int n = user ? rs_fmt(out, RS_IDEM_COLUMN_MAX + 1, "%s\x1f%s", user, key)
                 : rs_fmt(out, RS_IDEM_COLUMN_MAX + 1, "%s", key);
    return n < 0 ? -ENAMETOOLONG : 0;
}

int rs_seq_room(const rs_backend_ops *ops, int64_t last, size_t n, rs_err *err)
{
    if (last >= 0 &&
        (uint64_t)n <= (uint64_t)(ops->seq_max - (last < ops->seq_max ? last : ops->seq_max)))
        return 0;
    return rs_err_set(err, -EOVERFLOW,
                      "the thread's seq would pass %lld, the most %s holds: nothing stored",
                      (long long)ops->seq_max, ops->seq_type);
}
