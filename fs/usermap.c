/* usermap.c — the --user-map file, read once at mount time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runstore.h"
#include "rs_util.h"
#include "usermap.h"

typedef struct map_entry {
    uid_t uid;
    char owner[RS_ID_MAX + 1];
} map_entry;

struct rfs_usermap {
    map_entry *e;
    size_t n;
};

static int add_entry(rfs_usermap *m, size_t *cap, uid_t uid, const char *owner)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].uid == uid)
            return -EEXIST;
    int rc = rs_array_grow(&m->e, cap, m->n + 1, sizeof *m->e);
    if (rc)
        return rc;
    m->e[m->n].uid = uid;
    if (rs_fmt(m->e[m->n].owner, sizeof m->e[m->n].owner, "%s", owner) < 0)
        return -ENAMETOOLONG;
    m->n++;
    return 0;
}

/* One line: 0 (entry added or nothing on it) or -errno with why filled. */
static int parse_line(rfs_usermap *m, size_t *cap, char *line, const char *where, char *why,
                      size_t why_len)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *save = NULL;
    char *uid_s = strtok_r(line, " \t\r\n", &save);
    if (!uid_s)
        return 0;
    char *owner = strtok_r(NULL, " \t\r\n", &save);
    char *extra = strtok_r(NULL, " \t\r\n", &save);
    char *end;
    errno = 0;
    unsigned long uid = strtoul(uid_s, &end, 10);
    if (*end || errno || uid_s[0] == '-' || uid > (uid_t)-2) {
        (void)rs_fmt(why, why_len, "%s: '%.32s' is not a uid", where, uid_s);
        return -EINVAL;
    }
    if (!owner || extra || !rs_id_valid(owner)) {
        (void)rs_fmt(why, why_len, "%s: expected 'UID OWNER' with OWNER 1-64 of [A-Za-z0-9_-]",
                     where);
        return -EINVAL;
    }
    int rc = add_entry(m, cap, (uid_t)uid, owner);
    if (rc == -EEXIST)
        (void)rs_fmt(why, why_len, "%s: uid %lu is mapped twice", where, uid);
    else if (rc)
        (void)rs_fmt(why, why_len, "%s: out of memory", where);
    return rc ? -EINVAL : 0;
}

int rfs_usermap_load(rfs_usermap **out, const char *path, char *why, size_t why_len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int rc = -errno;
        (void)rs_fmt(why, why_len, "%s: %s", path, strerror(errno));
        return rc;
    }
    rfs_usermap *m = calloc(1, sizeof *m);
    if (!m) {
        fclose(f);
        (void)rs_fmt(why, why_len, "out of memory");
        return -ENOMEM;
    }
    size_t cap = 0, len = 0;
    char *line = NULL;
    long lineno = 0;
    int rc = 0;
    while (!rc && getline(&line, &len, f) >= 0) {
        char where[64 + 4096];
        (void)rs_fmt(where, sizeof where, "%s:%ld", path, ++lineno);
        rc = parse_line(m, &cap, line, where, why, why_len);
    }
    if (!rc && ferror(f)) {
        rc = -EIO;
        (void)rs_fmt(why, why_len, "%s: read error", path);
    }
    free(line);
    fclose(f);
    if (rc) {
        rfs_usermap_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

const char *rfs_usermap_owner(const rfs_usermap *m, uid_t uid)
{
    for (size_t i = 0; m && i < m->n; i++)
        if (m->e[i].uid == uid)
            return m->e[i].owner;
    return NULL;
}

void rfs_usermap_free(rfs_usermap *m)
{
    if (m) {
        free(m->e);
        free(m);
    }
}
