/*
 * match.h - the anchor matcher of the OOM scanner (private to lib/oom).
 *
 * Which groups of short literals ("anchors": "out of memory", "step", "Saving") occur in a line:
 * a SIMD multi-literal filter (fat Teddy, AVX2) where the CPU has it and a scalar hashed one
 * elsewhere, both exact and both giving the same answer. The matcher knows nothing of what the
 * groups mean: the scanner (scan.c) gives it the anchor table and dispatches on the groups.
 *
 * Its tables live in struct ml_oom_scanner's opaque `matcher` bytes (ml_oom_matcher() below):
 * a plain value of fixed size, built by ml_oom_match_init, no allocation, no static state.
 */
#ifndef ML_OOM_MATCH_H
#define ML_OOM_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/oom.h"

#define ML_OOM_MAX_ANCHORS  254  /* anchor indexes (+ 1) are bytes */
#define ML_OOM_STRIDE       3    /* the scalar pass 1 looks at every third byte; anchors are >= 4 bytes */
#define ML_OOM_ENTRIES      640  /* anchors x stride, + 1 */
#define ML_OOM_PREFIX_SLOTS 1024 /* the scalar pass 1's buckets of prefixes */
#define ML_OOM_BUCKETS      16   /* the SIMD pass 1's buckets of anchors (fat Teddy) */
#define ML_OOM_START_BITS   12   /* its exact check: 2^12 chains of anchors */

/* One literal and its group (bit `group` of the mask a line gets). 4 to 31 bytes, none of them a
 * NUL or CR (ml_oom_match_segment ends at a CR). */
struct ml_oom_anchor {
    char s[32];
    uint8_t group; /* 0..63 */
};

struct ml_oom_prefix {
    uint32_t h[3], m[3]; /* up to three prefixes (four bytes) and their masks */
};

/* may_alias: the tables are kept in a byte array of the public struct. */
struct __attribute__((may_alias)) ml_oom_match {
    const struct ml_oom_anchor *anchors; /* borrowed: the caller's table (static const) */
    uint32_t n_anchors;
    bool wide;                          /* pass 1 uses the SIMD filter (init sets it when the CPU has AVX2) */
    bool evex;                          /* the window pass compiled for AVX-512VL/BW (where the CPU has them) */
    uint64_t retired;                   /* groups no longer looked for (ml_oom_match_retire) */
    uint16_t slot[4096];                /* first entry of each two-byte window's bucket, 0 = none */
    uint8_t ent_anchor[ML_OOM_ENTRIES]; /* entry -> anchor */
    uint8_t ent_off[ML_OOM_ENTRIES];    /* entry -> offset of the window in the anchor */
    uint16_t ent_next[ML_OOM_ENTRIES];  /* next entry of the bucket, 0 = end */
    uint8_t alen[256];                  /* anchor lengths */
    uint8_t agroup[256];                /* anchor groups */
    uint32_t ahead[256];                /* anchor first four bytes (as a 4-byte load reads them) */
    struct ml_oom_prefix pre[ML_OOM_PREFIX_SLOTS]; /* pass-1 prefixes by bucket */
    _Alignas(32) uint8_t teddy_lo[4][32];          /* SIMD pass 1: buckets accepting each low nibble of bytes 0-3 */
    _Alignas(32) uint8_t teddy_hi[4][32];          /* ... and each high nibble */
    uint8_t start_slot[1u << ML_OOM_START_BITS];   /* its candidates' check: anchor + 1 by first four bytes, 0 = none */
    uint8_t start_next[256];                       /* the next anchor (+ 1) of the same slot */
    uint8_t bucket[256];                           /* anchor -> its SIMD pass 1 bucket (chosen by init) */
    uint8_t span_first[32], span_second[32];       /* ml_oom_match_spans: bitsets of bytes */
};

_Static_assert(sizeof(struct ml_oom_match) <= ML_OOM_MATCHER_BYTES, "ML_OOM_MATCHER_BYTES holds the matcher");
_Static_assert(sizeof(struct ml_oom_match) + 1024 > ML_OOM_MATCHER_BYTES, "ML_OOM_MATCHER_BYTES wastes no KiB");

static inline struct ml_oom_match *ml_oom_matcher(struct ml_oom_scanner *s)
{
    return (struct ml_oom_match *)(void *)s->matcher;
}

static inline const struct ml_oom_match *ml_oom_matcher_c(const struct ml_oom_scanner *s)
{
    return (const struct ml_oom_match *)(const void *)s->matcher;
}

/* Build the tables for anchors[0..n) (n <= ML_OOM_MAX_ANCHORS), which must outlive m. */
void ml_oom_match_init(struct ml_oom_match *m, const struct ml_oom_anchor *anchors, size_t n);

/* Whether this CPU runs the SIMD pass 1 (AVX2 on x86-64). */
bool ml_oom_match_simd(void);

/* Note which bytes can be on either side of a cut inside an anchor of the groups in `groups`
 * (retired or not), for ml_oom_match_may_span. */
void ml_oom_match_spans(struct ml_oom_match *m, uint64_t groups);

/* Can a cut between the bytes a and b fall inside an anchor of those groups (a is followed by
 * another byte of the anchor, and b follows one)? When not, no such anchor occurs across it. */
static inline bool ml_oom_match_may_span(const struct ml_oom_match *m, unsigned char a, unsigned char b)
{
    return (m->span_first[a >> 3] >> (a & 7) & 1) && (m->span_second[b >> 3] >> (b & 7) & 1);
}

/* Stop looking for the anchors of the groups in `groups` (their facts are known once and for
 * all); rebuilds the tables when that adds a group. Changes no answer for the other groups. */
void ml_oom_match_retire(struct ml_oom_match *m, uint64_t groups);

/* ---- the window pass (SIMD only) ----------------------------------------------------------
 * One pass over a window of the input, before it is cut into lines: it marks the newlines and the
 * rare bytes (NUL, CR, ESC, '^', backslash) in two bitmaps and checks the Teddy candidates exactly
 * at once, keeping each anchor found (its start and its groups) in a list in order. A line inside
 * the window then needs no pass of its own: ml_oom_match_marked reads its segments' answers off the
 * bitmaps and the list. The list holds the anchors of the tables at the window's start; a group
 * retired since (ml_oom_match_retire) is masked out, which gives what the current tables would. */
#define ML_OOM_WINDOW   8192 /* bytes per window (a multiple of 64); a line not inside one goes the per-line way */
#define ML_OOM_HITS     1024 /* anchors kept per window; a window with more ends at the first one left out */
#define ML_OOM_PREFETCH 2048 /* bytes ahead of its rounds the window pass asks the input into the cache */

struct ml_oom_marks {
    size_t n;                          /* the window's bytes marked (less than asked when the list filled) */
    uint32_t n_hits, cursor;           /* anchors listed; the first not yet passed by the segments read */
    uint64_t nl[ML_OOM_WINDOW / 64];   /* '\n' */
    uint64_t rare[ML_OOM_WINDOW / 64]; /* NUL, CR, ESC, '^', backslash */
    uint16_t hit_at[ML_OOM_HITS];      /* where each anchor found starts, ascending */
    uint64_t hit_groups[ML_OOM_HITS];  /* the groups of the anchors that start there */
};
_Static_assert(sizeof(struct ml_oom_marks) == ML_OOM_MARKS_BYTES, "ML_OOM_MARKS_BYTES is a window's marks");

/* The bytes of a marked window that its whole lines take: up to and with its last newline among
 * the bytes marked (k->n); 0 when it holds none. */
static inline size_t ml_oom_marks_took(const struct ml_oom_marks *k)
{
    for (size_t w = (k->n + 63) / 64; w-- > 0;) {
        uint64_t b = k->nl[w];
        if (k->n < (w + 1) * 64)
            b &= ((uint64_t)1 << (k->n % 64)) - 1; /* (k->n % 64 > 0 here) */
        if (b)
            return w * 64 + 64 - (size_t)__builtin_clzll(b);
    }
    return 0;
}

/* Mark p[0..n), n <= ML_OOM_WINDOW (reads nothing past p[n - 1]); k->n says how far. Only where
 * ml_oom_match_simd(). */
void ml_oom_match_marks(const struct ml_oom_match *m, const char *p, size_t n, struct ml_oom_marks *k);

/* ml_oom_match_segment's answers for the segment l[a..n) of a line l that is a copy of the marked
 * window's bytes from offset base (the bytes past l[n - 1] are not read). A line's segments are read
 * in order, the lines of a window in order (the list's cursor moves on). */
uint64_t ml_oom_match_marked(const struct ml_oom_match *m, struct ml_oom_marks *k, size_t base, const char *l, size_t a,
                             size_t n, size_t *len, bool *special, bool *bs, size_t *first);

/* The groups whose anchors occur in p[0..n): p[n] is NUL and p[0..n + ML_OOM_PAD) is readable
 * (the SIMD pass reads past the end and ignores it). *special: p[0..n) holds a NUL, CR, ESC or '^'. */
uint64_t ml_oom_match_line(const struct ml_oom_match *m, const char *p, size_t n, bool *special);

/* The same for the segment of p[0..n) up to its first CR: *len is the CR's offset (n when there is
 * none), the groups are those of p[0..*len), *special says whether p[0..*len) holds a NUL, ESC
 * or '^' and *bs whether it holds a backslash. One pass finds both where a tqdm update ends and
 * what it holds. *first: no anchor (of a group not retired) starts in p[0..*first), so that a
 * handler looking for one of them may start there (the SIMD pass gives the first anchor's offset,
 * or *len; the scalar one 0). */
uint64_t ml_oom_match_segment(const struct ml_oom_match *m, const char *p, size_t n, size_t *len, bool *special,
                              bool *bs, size_t *first);

#endif /* ML_OOM_MATCH_H */
