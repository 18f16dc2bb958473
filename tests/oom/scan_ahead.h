/* The scanner fed in chunks whose windows are marked ahead (oom.h, ml_oom_ahead_*), as
 * src/cmd_diagnose.c feeds it a mapped file's windows: shared by the oom tests. */
#ifndef ML_TEST_SCAN_AHEAD_H
#define ML_TEST_SCAN_AHEAD_H

#include <stdbool.h>
#include <stddef.h>

#include "memledger/oom.h"

/* Scan t[0..len) into i as one input, in chunks of step bytes, each chunk's windows marked into a
 * first: the matcher copied before each chunk, or once at the start (stale: the anchors retired
 * since stay in its marks). after_mark (NULL: none) may change the marks before the chunk is
 * scanned. */
static inline void scan_ahead_chunks(struct ml_oom_scanner *sc, struct ml_incident *i, struct ml_oom_ahead *a,
                                     const char *t, size_t len, size_t step, bool stale,
                                     void (*after_mark)(struct ml_oom_ahead *))
{
    ml_incident_init(i);
    ml_oom_scanner_init(sc, i);
    ml_oom_scan_begin(sc);
    a->copied = false;
    ml_oom_ahead_begin(sc, a);
    for (size_t o = 0; o < len; o += step) {
        size_t k = o + step > len ? len - o : step;
        if (!stale)
            ml_oom_ahead_begin(sc, a);
        ml_oom_ahead_mark(a, t + o, k, o == 0 || t[o - 1] == '\n');
        if (after_mark)
            after_mark(a);
        ml_oom_scan_ahead(sc, t + o, k, a);
    }
    ml_oom_scan_end(sc);
}

#endif
