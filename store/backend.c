/* backend.c — what every backend does alike: rendering a cursor's current row into its
 * record, telling whether a process that holds a reservation is still alive, and keeping
 * a reader's threads indexed in memory bounded. */
#include <errno.h>
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

static size_t id_hash(const char *id)
{
    size_t h = 14695981039346656037ULL;
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 1099511628211ULL;
    return h;
}

size_t *rs_id_slot(const rs_id_index *x, const void *items, size_t size, const char *id)
{
    const char *base = items;
    size_t mask = x->n_slots - 1, i = id_hash(id) & mask;
    while (x->slots[i] && strcmp(base + (x->slots[i] - 1) * size, id) != 0)
        i = (i + 1) & mask;
    return &x->slots[i];
}

size_t rs_id_find(rs_id_index *x, const void *items, size_t size, const char *id)
{
    if (x->last && strcmp((const char *)items + (x->last - 1) * size, id) == 0)
        return x->last;
    size_t *slot = x->n_slots ? rs_id_slot(x, items, size, id) : NULL;
    if (slot && *slot)
        x->last = *slot;
    return slot ? *slot : 0;
}

int rs_id_room(rs_id_index *x, const void *items, size_t size, size_t count)
{
    if (2 * (count + 1) <= x->n_slots)
        return 0;
    size_t n = x->n_slots ? 2 * x->n_slots : 64;
    size_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    free(x->slots);
    x->slots = slots;
    x->n_slots = n;
    for (size_t i = 0; i < count; i++)
        *rs_id_slot(x, items, size, (const char *)items + i * size) = i + 1;
    return 0;
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
