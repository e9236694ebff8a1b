/* map.c — rs_hash and rs_map (rs_util.h): the one hash function and the one hash map. */
#include <errno.h>
#include <stdlib.h>

#include "rs_util.h"

uint64_t rs_hash(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* The slot of the entry with key, or the empty one where it would go (n_slots > 0). */
static size_t slot_of(const rs_map *m, const void *key)
{
    size_t mask = m->n_slots - 1, i = (size_t)m->type->hash(m->ctx, key) & mask;
    while (m->slots[i] && !m->type->matches(m->ctx, m->slots[i], key))
        i = (i + 1) & mask;
    return i;
}

static void place(uintptr_t *slots, size_t n_slots, uint64_t h, uintptr_t entry)
{
    size_t mask = n_slots - 1, i = (size_t)h & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = entry;
}

uintptr_t rs_map_find(const rs_map *m, const void *key)
{
    return m->n_slots ? m->slots[slot_of(m, key)] : 0;
}

int rs_map_reserve(rs_map *m, size_t count)
{
    if (2 * count <= m->n_slots)
        return 0;
    size_t n = m->n_slots ? m->n_slots : 64;
    while (2 * count > n)
        n *= 2;
    uintptr_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < m->n_slots; i++)
        if (m->slots[i])
            place(slots, n, m->type->entry_hash(m->ctx, m->slots[i]), m->slots[i]);
    free(m->slots);
    m->slots = slots;
    m->n_slots = n;
    return 0;
}

int rs_map_add(rs_map *m, uintptr_t entry)
{
    int rc = rs_map_reserve(m, m->count + 1);
    if (rc)
        return rc;
    place(m->slots, m->n_slots, m->type->entry_hash(m->ctx, entry), entry);
    m->count++;
    return 0;
}

uintptr_t rs_map_remove(rs_map *m, const void *key)
{
    if (!m->n_slots)
        return 0;
    size_t mask = m->n_slots - 1, hole = slot_of(m, key);
    uintptr_t gone = m->slots[hole];
    if (!gone)
        return 0;
    m->slots[hole] = 0;
    m->count--;
    /* Linear probing without tombstones: every entry of the run after the hole that may not
     * stay where it is (its home slot lies outside the stretch from the hole to it) moves
     * into the hole, which moves on to where it was. */
    for (size_t i = (hole + 1) & mask; m->slots[i]; i = (i + 1) & mask) {
        size_t home = (size_t)m->type->entry_hash(m->ctx, m->slots[i]) & mask;
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->slots[hole] = m->slots[i];
            m->slots[i] = 0;
            hole = i;
        }
    }
    return gone;
}

uintptr_t rs_map_next(const rs_map *m, size_t *pos)
{
    while (*pos < m->n_slots)
        if (m->slots[(*pos)++])
            return m->slots[*pos - 1];
    return 0;
}

void rs_map_clear(rs_map *m)
{
    for (size_t i = 0; i < m->n_slots; i++)
        m->slots[i] = 0;
    m->count = 0;
}

void rs_map_release(rs_map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->n_slots = m->count = 0;
}
