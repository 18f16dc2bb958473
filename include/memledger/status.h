/*
 * status.h - status codes and the diagnostic record every library call fills.
 *
 * Library functions never print, exit or abort. They return an enum ml_status and,
 * on failure, describe the problem in a caller-provided struct ml_diag, which src/
 * prints as one line: "memledger: ORIGIN:LINE: MESSAGE".
 */
#ifndef ML_STATUS_H
#define ML_STATUS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum ml_status {
    ML_OK = 0,
    ML_ERR_NOMEM,       /* an allocation failed */
    ML_ERR_TOOBIG,      /* input or output exceeded its documented cap */
    ML_ERR_IO,          /* a file could not be read or written (src/ only) */
    ML_ERR_PARSE,       /* malformed JSON / YAML / text */
    ML_ERR_INVALID,     /* well-formed but semantically wrong value */
    ML_ERR_UNSUPPORTED, /* valid input that memledger does not model */
    ML_ERR_OVERFLOW,    /* a byte or parameter count overflowed u64 */
    ML_ERR_NOTFOUND,    /* a named model, GPU or key is unknown */
    ML_ERR_BACKEND,     /* a vendor library call failed */
    ML_ERR_NO_DEVICE,   /* no usable GPU or vendor backend */
    ML_ERR_CHILD        /* a child process could not be started */
};

/* Diagnostic record. Plain value; nothing to free. */
struct ml_diag {
    enum ml_status code; /* ML_OK until something fails */
    char msg[320];       /* one line, no trailing newline, lowercase start, no full stop */
    char origin[256];    /* file name (or "--gpu", "<stdin>") the problem is in; "" if none */
    uint32_t line;       /* 1-based line in origin, 0 if unknown */
    uint32_t col;        /* 1-based column in origin, 0 if unknown */
};

/* Reset a diagnostic to "no error". */
void ml_diag_init(struct ml_diag *d);

/*
 * Record an error: sets d->code and formats the message (printf style). Returns code so
 * that callers can write "return ml_diag_set(d, ML_ERR_PARSE, ...)". Safe with d == NULL.
 * An existing origin is kept.
 */
enum ml_status ml_diag_set(struct ml_diag *d, enum ml_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ml_diag_set with a va_list, for callers' own printf-style error helpers. */
enum ml_status ml_diag_vset(struct ml_diag *d, enum ml_status code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Set the origin (copied, truncated to fit) and position. Safe with d == NULL. */
void ml_diag_at(struct ml_diag *d, const char *origin, uint32_t line, uint32_t col);

/* Line and column (1-based) of byte offset off in data[0..len): for positions in diagnostics. */
void ml_diag_locate(const char *data, size_t len, size_t off, uint32_t *line, uint32_t *col);

/* The last component of a path ("a/b/ds.json" -> "ds.json"); the path itself if it has no '/'.
 * For naming an origin briefly. */
const char *ml_path_base(const char *path);

/* The last component of a path without its trailing slashes ("models/Qwen2.5-7B/" -> "Qwen2.5-7B"),
 * into out (truncated to fit). */
void ml_path_last(const char *path, char *out, size_t n);

/* Static English name of a status ("parse error"); never NULL. */
const char *ml_status_str(enum ml_status s);

#endif /* ML_STATUS_H */
