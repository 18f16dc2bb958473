/*
 * host.c - messages said through the caller's host, and the option values every command
 * parses the same way (run.h).
 */
#include "run_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memledger/units.h"
#include "i18n.h"

enum say { SAY_ERROR, SAY_WARN, SAY_LINE };

/* The message formatted whole (no length cap: a path is never cut), then handed over. */
static void vsay(const struct ml_io *io, enum say k, const char *cmd, const char *fmt, va_list ap)
{
    struct ml_buf b;
    ml_buf_init(&b, 0);
    (void)ml_buf_vaddf(&b, fmt, ap);
    if (k == SAY_ERROR)
        io->error(cmd, b.buf);
    else if (k == SAY_WARN)
        io->warn(b.buf);
    else
        io->say(b.buf);
    ml_buf_release(&b);
}

bool ml_io_errorf(const struct ml_io *io, const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(io, SAY_ERROR, cmd, fmt, ap);
    va_end(ap);
    return false;
}

void ml_io_warnf(const struct ml_io *io, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(io, SAY_WARN, NULL, fmt, ap);
    va_end(ap);
}

void ml_io_sayf(const struct ml_io *io, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(io, SAY_LINE, NULL, fmt, ap);
    va_end(ap);
}

bool ml_run_opt_u64(const struct ml_io *io, const char *cmd, const char *opt, const char *val, uint64_t lo, uint64_t hi,
                    uint64_t *out)
{
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_count_parse(val, out, &d) != ML_OK) {
        ml_io_errorf(io, cmd, _("%s: %s"), opt, d.msg);
        return false;
    }
    if (*out < lo || *out > hi) {
        ml_io_errorf(io, cmd, _("%s %s is out of range [%llu, %llu]"), opt, val, (unsigned long long)lo,
                     (unsigned long long)hi);
        return false;
    }
    return true;
}

bool ml_run_opt_word(const struct ml_io *io, const char *cmd, const char *opt, const char *val,
                     const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(val, names[i])) {
            *out = i;
            return true;
        }
    }
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        size_t l = strlen(list);
        (void)snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "", names[i]);
    }
    ml_io_errorf(io, cmd, _("%s: '%s' is not one of %s"), opt, val, list);
    return false;
}

void ml_run_join(const char *dir, const char *rel, char *out, size_t n)
{
    if (rel[0] == '/' || !dir || !dir[0] || !strcmp(dir, "."))
        (void)snprintf(out, n, "%s", rel);
    else
        (void)snprintf(out, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", rel);
}
