/*
 * loader.h - table-driven dlopen/dlsym for the vendor backends (private to lib/monitor).
 *
 * One helper opens the first library that loads from a candidate list; one resolves a table of
 * symbols into a struct of function pointers, trying alternative names newest first. It checks
 * the loaded value, not the slot (trap 3 of reference/style.md: ollama's old loader tested the
 * slot's address and never noticed a missing symbol), and opens with RTLD_NOW | RTLD_LOCAL so a
 * broken library fails at open rather than in the middle of sampling.
 */
#ifndef ML_MONITOR_LOADER_H
#define ML_MONITOR_LOADER_H

#include <stdbool.h>
#include <stddef.h>

#include "memledger/status.h"

/* One symbol: up to three names tried in order, stored at offset in the function table. */
struct ml_sym {
    const char *names[3]; /* newest first; NULL-terminated when fewer */
    size_t offset;        /* offsetof(struct fns, slot) */
    bool required;        /* a missing required symbol fails the load */
};

/*
 * Open explicit (if not NULL, and only it), else each of names[] in each of dirs[] (NULL or ""
 * = the dynamic linker's search path), in order. On success *handle is set and path receives
 * what was opened. On failure diag says what was tried and the last dlerror().
 */
enum ml_status ml_dl_open_first(const char *explicit_path, const char *const *names, size_t n_names,
                                const char *const *dirs, size_t n_dirs, void **handle, char *path, size_t path_len,
                                struct ml_diag *diag);

/*
 * Resolve syms[] from handle into table. Optional symbols that are missing stay NULL. which[i]
 * (if which is not NULL) receives the index of the name that resolved, -1 if none. On a missing
 * required symbol diag names it (and lib_name).
 */
enum ml_status ml_dl_resolve(void *handle, const char *lib_name, const struct ml_sym *syms, size_t n, void *table,
                             int *which, struct ml_diag *diag);

void ml_dl_close(void *handle);

#endif /* ML_MONITOR_LOADER_H */
