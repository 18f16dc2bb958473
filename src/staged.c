/*
 * The part of a staged set of files (io.h ml_staged_*) that is the same on every backend: adding
 * a file through ml_out_open / ml_out_write, and the abort. ml_staged_begin and ml_staged_commit
 * are the backend's own (src/io.c, web/io_web.c): they make directories and place files.
 */
#include "io.h"
#include "io_backend.h"

#include <errno.h>
#include <string.h>

#include "cli.h"
#include "i18n.h"

void ml_staged_unmake_dirs(struct ml_staged *s)
{
    while (s->n_made > 0)
        ml_io_rmdir(s->made[--s->n_made]);
}

bool ml_staged_add(struct ml_staged *s, const char *path, const struct ml_buf *b, bool force, const char *what)
{
    if (s->n >= ML_STAGED_FILES) {
        ml_errorf(_("%s: too many files in one plan"), path);
        ml_staged_abort(s);
        return false;
    }
    struct ml_out *o = &s->f[s->n];
    if (!ml_out_open(o, path, force, what)) {
        ml_staged_abort(s);
        return false;
    }
    s->n++;
    if (!ml_out_write(o, b->buf, b->len)) {
        ml_errorf(_("%s: cannot write the %s: %s"), path, what, strerror(errno));
        ml_staged_abort(s);
        return false;
    }
    return true;
}

void ml_staged_abort(struct ml_staged *s)
{
    for (size_t i = 0; i < s->n; i++)
        ml_out_abort(&s->f[i]);
    s->n = 0;
    ml_staged_unmake_dirs(s);
}
