/*
 * loader.c - table-driven dlopen/dlsym (see loader.h).
 */
#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"

enum ml_status ml_dl_open_first(const char *explicit_path, const char *const *names, size_t n_names,
                                const char *const *dirs, size_t n_dirs, void **handle, char *path, size_t path_len,
                                struct ml_diag *diag)
{
    *handle = NULL;
    char err[200] = "";
    if (explicit_path && explicit_path[0]) {
        void *h = dlopen(explicit_path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            return ml_diag_set(diag, ML_ERR_NO_DEVICE, _("cannot load %s: %s"), explicit_path, e ? e : "?");
        }
        (void)snprintf(path, path_len, "%s", explicit_path);
        *handle = h;
        return ML_OK;
    }
    static const char *const no_dirs[] = {""};
    if (!dirs || n_dirs == 0) {
        dirs = no_dirs;
        n_dirs = 1;
    }
    for (size_t d = 0; d < n_dirs; d++) {
        if (!dirs[d])
            continue;
        for (size_t i = 0; i < n_names; i++) {
            char p[1024];
            if (dirs[d][0])
                (void)snprintf(p, sizeof(p), "%s/%s", dirs[d], names[i]);
            else
                (void)snprintf(p, sizeof(p), "%s", names[i]);
            void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
            if (h) {
                (void)snprintf(path, path_len, "%s", p);
                *handle = h;
                return ML_OK;
            }
            const char *e = dlerror();
            /* Keep the telling error: a library that exists but fails to load (wrong
             * architecture, missing dependency) beats "cannot open shared object file". */
            if (e && !strstr(e, "No such file"))
                (void)snprintf(err, sizeof(err), "%s", e);
        }
    }
    if (err[0])
        return ml_diag_set(diag, ML_ERR_NO_DEVICE, _("cannot load %s: %s"), names[0], err);
    return ml_diag_set(diag, ML_ERR_NO_DEVICE, _("%s not found"), names[0]);
}

enum ml_status ml_dl_resolve(void *handle, const char *lib_name, const struct ml_sym *syms, size_t n, void *table,
                             int *which, struct ml_diag *diag)
{
    for (size_t i = 0; i < n; i++) {
        void *fn = NULL;
        int got = -1;
        for (int k = 0; k < 3 && syms[i].names[k]; k++) {
            (void)dlerror();
            fn = dlsym(handle, syms[i].names[k]);
            /* Check the value loaded, never the slot (trap 3). */
            if (fn) {
                got = k;
                break;
            }
        }
        if (which)
            which[i] = got;
        if (!fn && syms[i].required)
            return ml_diag_set(diag, ML_ERR_BACKEND, _("%s has no %s (an unsupported driver version?)"), lib_name,
                               syms[i].names[0]);
        /* Store through void ** (dlsym's object pointer into the function-pointer slot). */
        memcpy((char *)table + syms[i].offset, &fn, sizeof(fn));
    }
    return ML_OK;
}

void ml_dl_close(void *handle)
{
    if (handle)
        dlclose(handle);
}
