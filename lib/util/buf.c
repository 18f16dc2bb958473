/*
 * buf.c - capped growable buffer (see buf.h).
 */
#include "memledger/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shared empty string so that buf is never NULL before the first allocation (git's slop). Read
 * only: nothing writes through buf while alloc is 0 (every append allocates first), so it can be
 * const and the library holds no writable static state (tests/check_pure.sh). */
static const char ml_buf_empty[1];

void ml_buf_init(struct ml_buf *b, size_t max)
{
    b->buf = (char *)(uintptr_t)ml_buf_empty; /* never written: see above */
    b->len = 0;
    b->alloc = 0;
    b->max = max ? max : ML_BUF_DEFAULT_MAX;
}

void ml_buf_release(struct ml_buf *b)
{
    if (b->alloc)
        free(b->buf);
    ml_buf_init(b, b->max);
}

void ml_buf_reset(struct ml_buf *b)
{
    b->len = 0;
    if (b->alloc)
        b->buf[0] = '\0';
}

/* Make room for n more bytes plus the NUL. */
static enum ml_status grow(struct ml_buf *b, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return ML_ERR_TOOBIG;
    size_t need = b->len + n + 1;
    if (need <= b->alloc)
        return ML_OK;
    size_t cap = b->alloc ? b->alloc : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > b->max + 1)
        cap = b->max + 1;
    char *p = realloc(b->alloc ? b->buf : NULL, cap);
    if (!p)
        return ML_ERR_NOMEM;
    if (!b->alloc)
        p[0] = '\0';
    b->buf = p;
    b->alloc = cap;
    return ML_OK;
}

enum ml_status ml_buf_add(struct ml_buf *b, const void *data, size_t n)
{
    if (n == 0)
        return ML_OK;
    enum ml_status st = grow(b, n);
    if (st != ML_OK)
        return st;
    memcpy(b->buf + b->len, data, n);
    b->len += n;
    b->buf[b->len] = '\0';
    return ML_OK;
}

enum ml_status ml_buf_adds(struct ml_buf *b, const char *s)
{
    return ml_buf_add(b, s, strlen(s));
}

enum ml_status ml_buf_addc(struct ml_buf *b, char c)
{
    return ml_buf_add(b, &c, 1);
}

enum ml_status ml_buf_addn(struct ml_buf *b, char c, size_t n)
{
    enum ml_status st = grow(b, n);
    if (st != ML_OK)
        return st;
    memset(b->buf + b->len, c, n);
    b->len += n;
    if (b->alloc)
        b->buf[b->len] = '\0';
    return ML_OK;
}

enum ml_status ml_buf_vaddf(struct ml_buf *b, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return ML_ERR_INVALID;
    enum ml_status st = grow(b, (size_t)n);
    if (st != ML_OK)
        return st;
    (void)vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return ML_OK;
}

enum ml_status ml_buf_addf(struct ml_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum ml_status st = ml_buf_vaddf(b, fmt, ap);
    va_end(ap);
    return st;
}

char *ml_buf_detach(struct ml_buf *b, size_t *len)
{
    char *r;
    if (b->alloc) {
        r = b->buf;
    } else {
        r = malloc(1);
        if (!r)
            return NULL;
        r[0] = '\0';
    }
    if (len)
        *len = b->len;
    ml_buf_init(b, b->max);
    return r;
}

size_t ml_utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    /* Overlong and surrogate forms. */
    if (c == 0xE0 && s[1] < 0xA0)
        return 0;
    if (c == 0xED && s[1] > 0x9F)
        return 0;
    if (c == 0xF0 && s[1] < 0x90)
        return 0;
    if (c == 0xF4 && s[1] > 0x8F)
        return 0;
    return len;
}

size_t ml_vformat(char *dst, size_t size, const char *fmt, va_list ap)
{
    int n = vsnprintf(dst, size, fmt, ap);
    if (n < 0) {
        dst[0] = '\0';
        return 0;
    }
    size_t len = (size_t)n < size ? (size_t)n : size - 1;
    if ((size_t)n >= size) {
        /* Back off over continuation bytes to the lead byte of the last character, and drop it
         * when the cut left it incomplete. */
        size_t at = len;
        while (at > 0 && ((unsigned char)dst[at - 1] & 0xC0) == 0x80)
            at--;
        if (at > 0 && ((unsigned char)dst[at - 1] & 0x80) &&
            ml_utf8_len((const unsigned char *)dst + at - 1, len - (at - 1)) != len - (at - 1))
            len = at - 1;
        dst[len] = '\0';
    }
    return len;
}
