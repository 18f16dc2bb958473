/*
 * ml_test.h - the one header every cmocka test includes (cmocka 1.1.5 needs these first).
 */
#ifndef ML_TEST_H
#define ML_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Source tree root (for data/ and tests/ fixtures), set by CMake. */
#ifndef ML_SOURCE_DIR
#error "ML_SOURCE_DIR must be defined by the build"
#endif

/* Read a whole file under the source tree into a malloc'ed NUL-terminated buffer. */
static inline char *ml_test_slurp(const char *rel, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", ML_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = n;
    }
    return buf;
}

#endif /* ML_TEST_H */
