/* pg_load.c — the PostgreSQL backend, found when a postgres:// store is first named.
 *
 * libpq brings some twenty libraries (Kerberos, LDAP, GnuTLS...) whose loading and
 * relocation cost every command its start, SQLite's included: the shared library leaves the
 * backend in a module of its own (RS_PG_MODULE, installed beside librunstore.so) and
 * dlopen()s it on the first postgres:// URI. The static library (RS_PG_BUILTIN) carries the
 * backend in, as a static link takes libpq anyway. */
#include <errno.h>
#include <stddef.h>

#include "backend.h"
#include "rs_util.h"
#include "store_int.h"

#ifdef RS_PG_BUILTIN

int rs_pg_load(const rs_backend_ops **out, rs_err *err)
{
    (void)err;
    *out = &rs_pg_backend;
    return 0;
}

#else

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The first try decides for the process's life (a module that did not load is not looked
 * for again); pg_ops, pg_rc and pg_err are written once, under pg_once. The module is never
 * closed: libpq and OpenSSL keep exit handlers in it. */
static pthread_once_t pg_once = PTHREAD_ONCE_INIT;
static const rs_backend_ops *pg_ops;
static int pg_rc;
static rs_err pg_err;

static void pg_load_once(void)
{
    Dl_info self;
    if (!dladdr((void *)pg_load_once, &self) || !self.dli_fname) {
        pg_rc = rs_err_set(&pg_err, -ELIBACC,
                           "cannot load the PostgreSQL backend: librunstore's file is unknown, "
                           "so is where " RS_PG_MODULE " lies");
        return;
    }
    /* Beside librunstore.so, in the build tree as where meson installs both. */
    const char *slash = strrchr(self.dli_fname, '/');
    size_t dir = slash ? (size_t)(slash - self.dli_fname) + 1 : 0;
    rs_buf path = RS_BUF_INIT;
    if (rs_buf_add(&path, self.dli_fname, dir) || rs_buf_addstr(&path, RS_PG_MODULE)) {
        pg_rc = rs_err_set(&pg_err, -ENOMEM, "out of memory");
        rs_buf_release(&path);
        return;
    }
    void *h = dlopen(path.buf, RTLD_NOW | RTLD_LOCAL);
    const rs_backend_ops *ops = h ? dlsym(h, "rs_pg_backend") : NULL;
    if (!ops) {
        const char *why = dlerror();
        pg_rc = rs_err_set(&pg_err, -ELIBACC, "cannot load the PostgreSQL backend %s: %s", path.buf,
                           why ? why : "no rs_pg_backend in it");
        if (h)
            dlclose(h);
    }
    pg_ops = ops;
    rs_buf_release(&path);
}

int rs_pg_load(const rs_backend_ops **out, rs_err *err)
{
    int rc = pthread_once(&pg_once, pg_load_once);
    if (rc)
        return rs_err_set(err, -rc, "cannot load the PostgreSQL backend: pthread_once failed");
    if (pg_rc) {
        if (err)
            *err = pg_err;
        return pg_rc;
    }
    *out = pg_ops;
    return 0;
}

#endif
