/*
 * buf.h - growable, NUL-terminated byte buffer with a hard cap (git strbuf + curl dynbuf).
 *
 * Every renderer writes into a struct ml_buf; every reader fills one. A buffer never grows
 * beyond its max: the append that would exceed it fails with ML_ERR_TOOBIG and leaves the
 * buffer unchanged, so a fuzzer or a 2 GB log cannot exhaust memory.
 */
#ifndef ML_BUF_H
#define ML_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "memledger/status.h"

struct ml_buf {
    char *buf;    /* never NULL after ml_buf_init; NUL-terminated */
    size_t len;   /* bytes used, excluding the NUL */
    size_t alloc; /* bytes allocated, 0 while buf points at the shared empty string */
    size_t max;   /* cap on len; appends beyond it fail with ML_ERR_TOOBIG */
};

/* Default cap for output buffers: 64 MiB. */
#define ML_BUF_DEFAULT_MAX ((size_t)64 << 20)

/* Set up an empty buffer with the given cap (0 = ML_BUF_DEFAULT_MAX). Allocates nothing. */
void ml_buf_init(struct ml_buf *b, size_t max);

/* Free the contents; the buffer is left initialised and empty (same cap). */
void ml_buf_release(struct ml_buf *b);

/* Empty the buffer, keeping its allocation. */
void ml_buf_reset(struct ml_buf *b);

/* Append n bytes. ML_ERR_TOOBIG past the cap, ML_ERR_NOMEM if allocation fails. */
enum ml_status ml_buf_add(struct ml_buf *b, const void *data, size_t n);

/* Append a NUL-terminated string. */
enum ml_status ml_buf_adds(struct ml_buf *b, const char *s);

/* Append one byte. */
enum ml_status ml_buf_addc(struct ml_buf *b, char c);

/* Append formatted text (printf style; integers only in the pure core, see units.h). */
enum ml_status ml_buf_addf(struct ml_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
enum ml_status ml_buf_vaddf(struct ml_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Append n copies of c. */
enum ml_status ml_buf_addn(struct ml_buf *b, char c, size_t n);

/*
 * Hand the bytes over: returns a malloc'ed NUL-terminated string (never NULL unless
 * allocation fails) and leaves b empty. The caller frees the result with free().
 */
char *ml_buf_detach(struct ml_buf *b, size_t *len);

/* Length of the valid UTF-8 sequence at s (n >= 1 bytes available): 1-4, or 0 when the bytes
 * there are not one (stray continuation, overlong form, surrogate, above U+10FFFF, cut short). */
size_t ml_utf8_len(const unsigned char *s, size_t n);

/* vsnprintf into dst[size] (size > 0), except that text cut to fit ends on a whole UTF-8
 * character: a translated note or rule that outgrows its fixed field loses its last characters,
 * never half of one. Returns the length written. */
size_t ml_vformat(char *dst, size_t size, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* The caller's way to read a whole file, for library code that reads files it is told of
 * (src/: ml_read_file): its bytes, at most max; errors in d, naming the file. */
typedef enum ml_status (*ml_read_fn)(const char *path, size_t max, struct ml_buf *out, struct ml_diag *d);

#endif /* ML_BUF_H */
