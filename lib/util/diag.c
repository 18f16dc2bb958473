/*
 * diag.c - status names and the diagnostic record.
 */
#include "memledger/status.h"
#include "memledger/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"

void ml_diag_init(struct ml_diag *d)
{
    if (!d)
        return;
    memset(d, 0, sizeof(*d));
}

enum ml_status ml_diag_vset(struct ml_diag *d, enum ml_status code, const char *fmt, va_list ap)
{
    if (!d)
        return code;
    d->code = code;
    (void)ml_vformat(d->msg, sizeof(d->msg), fmt, ap);
    /* One line only: a value quoted from the input must not break the message. */
    for (char *p = d->msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return code;
}

enum ml_status ml_diag_set(struct ml_diag *d, enum ml_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum ml_status st = ml_diag_vset(d, code, fmt, ap);
    va_end(ap);
    return st;
}

void ml_diag_at(struct ml_diag *d, const char *origin, uint32_t line, uint32_t col)
{
    if (!d)
        return;
    if (origin)
        (void)snprintf(d->origin, sizeof(d->origin), "%s", origin);
    d->line = line;
    d->col = col;
}

const char *ml_path_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void ml_path_last(const char *path, char *out, size_t n)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/')
        start--;
    (void)snprintf(out, n, "%.*s", (int)(len - start), path + start);
}

void ml_diag_locate(const char *data, size_t len, size_t off, uint32_t *line, uint32_t *col)
{
    uint32_t l = 1, c = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (data[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

const char *ml_status_str(enum ml_status s)
{
    switch (s) {
    case ML_OK: return _("success");
    case ML_ERR_NOMEM: return _("out of memory");
    case ML_ERR_TOOBIG: return _("input or output too large");
    case ML_ERR_IO: return _("input/output error");
    case ML_ERR_PARSE: return _("parse error");
    case ML_ERR_INVALID: return _("invalid value");
    case ML_ERR_UNSUPPORTED: return _("unsupported");
    case ML_ERR_OVERFLOW: return _("arithmetic overflow");
    case ML_ERR_NOTFOUND: return _("not found");
    case ML_ERR_BACKEND: return _("GPU backend error");
    case ML_ERR_NO_DEVICE: return _("no GPU device");
    case ML_ERR_CHILD: return _("child process error");
    }
    return _("unknown status");
}
