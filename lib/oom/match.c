/*
 * match.c - the anchor matcher of the OOM scanner (match.h).
 *
 * One pass over a line finds which of the scanner's anchors (short literals such as "out of
 * memory", "step", "Saving") occur in it, and so which handlers can possibly apply; most lines
 * of a long log match nothing and cost that one pass. The pass is a SIMD multi-literal filter
 * (fat Teddy, AVX2) where the CPU has it and a scalar hashed one elsewhere; both find exactly the
 * same anchors (tests and the fuzz target compare them). Groups whose fact is known once and for
 * all are retired from the tables (ml_oom_match_retire). Nothing is allocated.
 */
#include "match.h"

#include <string.h>

/* The tables depend on the anchors alone, never on the input: coverage-guided fuzzing (clang's
 * -fsanitize=fuzzer) learns nothing from their loops, which would take most of its time. */
#if defined(__clang__)
#define TABLE_WORK __attribute__((no_sanitize("coverage")))
#else
#define TABLE_WORK
#endif

/* Bucket of a two-byte window: Fibonacci hashing of the 16-bit value, top 12 bits. */
static unsigned hash2(unsigned char a, unsigned char b)
{
    return (unsigned)((((uint32_t)a | (uint32_t)b << 8) * 2654435761u) >> 20);
}

/* Chain of the anchors that start with a four-byte window (as a 4-byte load reads it): Fibonacci
 * hashing, top ML_OOM_START_BITS bits. */
static uint32_t start_hash(uint32_t w)
{
    return (w * 2654435761u) >> (32 - ML_OOM_START_BITS);
}

#define GB(g) ((uint64_t)1 << (g))

/* The first four bytes at p as the word a 4-byte load gives (fewer at the end: zero-padded),
 * and the matching mask: both built through memory, so they agree with memcpy loads on any
 * byte order. */
TABLE_WORK static uint32_t head4(const unsigned char *p, size_t avail)
{
    unsigned char b[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < 4 && i < avail; i++)
        b[i] = p[i];
    uint32_t v;
    memcpy(&v, b, 4);
    return v;
}

TABLE_WORK static uint32_t mask4(size_t len)
{
    unsigned char b[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < 4 && i < len; i++)
        b[i] = 0xFF;
    uint32_t v;
    memcpy(&v, b, 4);
    return v;
}

/* Add a prefix to its pass-1 bucket (three per bucket; a fourth makes the bucket always match). */
TABLE_WORK static void add_prefix(struct ml_oom_match *mt, uint32_t head, uint32_t mask, unsigned b)
{
    struct ml_oom_prefix *e = &mt->pre[b];
    for (int k = 0; k < 3; k++)
        if (e->m[k] == mask && e->h[k] == head)
            return;
    for (int k = 0; k < 3; k++) {
        if (e->m[k] == 0 && e->h[k] == 1) {
            e->h[k] = head;
            e->m[k] = mask;
            return;
        }
    }
    e->h[0] = 0; /* (h & 0) == 0: every position of this bucket goes to pass 2 */
    e->m[0] = 0;
}

/* ---- the SIMD pass 1: fat Teddy ----------------------------------------------------------
 * Teddy is the multi-literal prefilter of Intel's Hyperscan (also in Rust's aho-corasick crate,
 * packed::teddy): each anchor goes into one of 16 buckets, and for each of the first four bytes
 * of the bucket's anchors two 16-entry tables record which low and which high nibbles occur. A
 * position is a candidate when some bucket accepts all four bytes there (PSHUFB looks the nibbles
 * up for 16 positions at once); candidates are then checked exactly. Which anchors share a bucket
 * changes the number of false candidates, never the result. */

/* How often each byte occurs in LLM training logs, in 32768ths (the 108 logs of
 * ../shared/data/oom-logs, 86 KB, counted whole; none below 1), a row per high nibble. A bucket
 * accepts at byte k the bytes whose low nibble is in its set and whose high nibble is in its set,
 * so the share of log bytes it passes there is the sum of their shares, and its cost (the chance
 * that four log bytes pass all its tests) the product of the four sums. The space is 12 %, the
 * lower-case letters 60 %, digits 8 %. (It replaced a high nibble's share times a count of low
 * nibbles, which took a bucket's low nibbles as equally likely: bench/README.md, 2026-12-02.) */
/* clang-format off */
static const uint16_t byte_share[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 259, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    4049, 1, 124, 17, 1, 2, 1, 37, 164, 151, 36, 1, 246, 227, 723, 590,
    455, 401, 289, 292, 184, 204, 182, 160, 159, 151, 298, 67, 15, 193, 62, 2,
    1, 117, 205, 204, 81, 89, 118, 192, 39, 64, 1, 8, 103, 152, 77, 197,
    177, 1, 122, 43, 175, 120, 12, 27, 2, 30, 2, 85, 17, 85, 187, 477,
    12, 1620, 295, 930, 679, 2227, 386, 386, 452, 1400, 3, 174, 1110, 768, 1182, 1623,
    525, 15, 1635, 1054, 1620, 516, 212, 113, 89, 613, 50, 4, 8, 4, 7, 1,
    2, 1, 1, 1, 1, 1, 2, 1, 27, 1, 1, 1, 2, 1, 1, 1,
    1, 1, 2, 1, 1, 1, 28, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 31, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};
/* clang-format on */

/* Buckets being filled: the nibble sets of each byte. */
struct teddy_build {
    uint16_t lo[ML_OOM_BUCKETS][4], hi[ML_OOM_BUCKETS][4];
};

/* The share of log bytes whose low nibble is in lo and high nibble in hi (at most 32915 < 2^16). */
TABLE_WORK static uint64_t byte_mass(uint16_t lo, uint16_t hi)
{
    uint64_t m = 0;
    for (unsigned hs = hi; hs; hs &= hs - 1)
        for (unsigned ls = lo; ls; ls &= ls - 1)
            m += byte_share[(unsigned)__builtin_ctz(hs) * 16 + (unsigned)__builtin_ctz(ls)];
    return m;
}

/* The bucket whose cost grows least with an anchor (>= 4 bytes; the first on a tie), which then
 * takes it. (A product of four sums under 2^16 fits in 64 bits.) */
TABLE_WORK static unsigned teddy_add(struct teddy_build *t, const unsigned char *a)
{
    unsigned best = 0;
    uint64_t best_d = UINT64_MAX;
    for (unsigned b = 0; b < ML_OOM_BUCKETS; b++) {
        uint64_t before = 1, after = 1;
        for (int k = 0; k < 4; k++) {
            before *= byte_mass(t->lo[b][k], t->hi[b][k]);
            after *=
                byte_mass((uint16_t)(t->lo[b][k] | 1u << (a[k] & 15)), (uint16_t)(t->hi[b][k] | 1u << (a[k] >> 4)));
        }
        if (after - before < best_d) {
            best_d = after - before;
            best = b;
        }
    }
    for (int k = 0; k < 4; k++) {
        t->lo[best][k] = (uint16_t)(t->lo[best][k] | 1u << (a[k] & 15));
        t->hi[best][k] = (uint16_t)(t->hi[best][k] | 1u << (a[k] >> 4));
    }
    return best;
}

/* Enter an anchor into the PSHUFB tables of its bucket b: byte 16 * (b / 8) + v of table k has
 * bit b % 8 set when bucket b accepts nibble v at byte k (the two 128-bit lanes hold buckets 0-7
 * and 8-15). */
TABLE_WORK static void teddy_enter(struct ml_oom_match *mt, const unsigned char *a, unsigned b)
{
    for (int k = 0; k < 4; k++) {
        mt->teddy_lo[k][16 * (b / 8) + (a[k] & 15)] |= (uint8_t)(1u << (b % 8));
        mt->teddy_hi[k][16 * (b / 8) + (a[k] >> 4)] |= (uint8_t)(1u << (b % 8));
    }
}

/* The tables of every anchor whose group is not retired (the buckets are chosen once, by init). */
TABLE_WORK static void build_tables(struct ml_oom_match *mt)
{
    memset(mt->slot, 0, sizeof(mt->slot));
    memset(mt->start_slot, 0, sizeof(mt->start_slot));
    memset(mt->teddy_lo, 0, sizeof(mt->teddy_lo));
    memset(mt->teddy_hi, 0, sizeof(mt->teddy_hi));
    for (unsigned b = 0; b < ML_OOM_PREFIX_SLOTS; b++)
        for (int k = 0; k < 3; k++) {
            mt->pre[b].h[k] = 1; /* never matches: (h & 0) != 1 */
            mt->pre[b].m[k] = 0;
        }
    /* Every anchor (>= ML_OOM_STRIDE + 1 bytes) is entered under the two-byte windows at offsets
     * 0 .. ML_OOM_STRIDE - 1, so that looking at every ML_OOM_STRIDE-th position finds it, and
     * its first four bytes go into the SIMD filter, which looks at every position. */
    unsigned ne = 0;
    for (size_t i = mt->n_anchors; i-- > 0;) {
        const unsigned char *a = (const unsigned char *)mt->anchors[i].s;
        size_t len = mt->alen[i];
        if (mt->retired & GB(mt->agroup[i]))
            continue;
        for (unsigned o = 0; o < ML_OOM_STRIDE && ne + 1 < ML_OOM_ENTRIES; o++) {
            unsigned h = hash2(a[o], a[o + 1]);
            ne++;
            mt->ent_anchor[ne] = (uint8_t)i;
            mt->ent_off[ne] = (uint8_t)o;
            mt->ent_next[ne] = mt->slot[h];
            mt->slot[h] = (uint16_t)ne;
            add_prefix(mt, head4(a + o, len - o), mask4(len - o), h >> 2);
        }
        uint32_t w = start_hash(mt->ahead[i]);
        mt->start_next[i] = mt->start_slot[w];
        mt->start_slot[w] = (uint8_t)(i + 1);
        teddy_enter(mt, a, mt->bucket[i]);
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ML_OOM_HAVE_WIDE 1
#endif

bool ml_oom_match_simd(void)
{
#ifdef ML_OOM_HAVE_WIDE
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

TABLE_WORK void ml_oom_match_init(struct ml_oom_match *mt, const struct ml_oom_anchor *anchors, size_t n)
{
    memset(mt, 0, sizeof(*mt));
    mt->anchors = anchors;
    mt->n_anchors = (uint32_t)(n < ML_OOM_MAX_ANCHORS ? n : ML_OOM_MAX_ANCHORS);
    mt->wide = ml_oom_match_simd();
#ifdef ML_OOM_HAVE_WIDE
    mt->evex = mt->wide && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
#endif
    struct teddy_build t;
    memset(&t, 0, sizeof(t));
    for (size_t i = 0; i < mt->n_anchors; i++) {
        const unsigned char *a = (const unsigned char *)anchors[i].s;
        /* 4 to 31 bytes: >= ML_OOM_STRIDE + 1 = 4, as both passes need */
        mt->alen[i] = (uint8_t)strnlen(anchors[i].s, sizeof(anchors[i].s) - 1);
        mt->agroup[i] = anchors[i].group;
        mt->ahead[i] = head4(a, mt->alen[i]);
        mt->bucket[i] = (uint8_t)teddy_add(&t, a);
    }
    build_tables(mt);
}

TABLE_WORK void ml_oom_match_spans(struct ml_oom_match *mt, uint64_t groups)
{
    memset(mt->span_first, 0, sizeof(mt->span_first));
    memset(mt->span_second, 0, sizeof(mt->span_second));
    for (size_t i = 0; i < mt->n_anchors; i++) {
        if (!(groups & GB(mt->agroup[i])))
            continue;
        const unsigned char *a = (const unsigned char *)mt->anchors[i].s;
        for (size_t j = 0; j + 1 < mt->alen[i]; j++) {
            mt->span_first[a[j] >> 3] = (uint8_t)(mt->span_first[a[j] >> 3] | 1u << (a[j] & 7));
            mt->span_second[a[j + 1] >> 3] = (uint8_t)(mt->span_second[a[j + 1] >> 3] | 1u << (a[j + 1] & 7));
        }
    }
}

TABLE_WORK void ml_oom_match_retire(struct ml_oom_match *mt, uint64_t groups)
{
    if (groups & ~mt->retired) {
        mt->retired |= groups;
        build_tables(mt);
    }
}

/* Exact check of the anchors entered under the two-byte window at p + i. */
static uint64_t check_at(const struct ml_oom_match *mt, const char *p, size_t i, size_t n)
{
    uint64_t m = 0;
    const unsigned char *u = (const unsigned char *)p;
    for (unsigned k = mt->slot[hash2(u[i], u[i + 1])]; k; k = mt->ent_next[k]) {
        size_t o = mt->ent_off[k];
        if (o > i)
            continue;
        size_t a = mt->ent_anchor[k], l = mt->alen[a];
        if (i - o + l > n)
            continue;
        uint32_t h;
        memcpy(&h, p + i - o, 4); /* l >= 4 */
        if (h == mt->ahead[a] && (l == 4 || !memcmp(p + i - o + 4, mt->anchors[a].s + 4, l - 4)))
            m |= GB(mt->agroup[a]);
    }
    return m;
}

#ifdef ML_OOM_HAVE_WIDE
/* Exact check of the anchors that start at p + i, whose first four bytes w hash to h (the SIMD
 * pass's; a build without it, such as WebAssembly, has no caller): their groups go into *mp, and
 * *at becomes i when one is found there and *at is larger. */
static inline __attribute__((always_inline)) void check_start(const struct ml_oom_match *mt, const char *p, size_t i,
                                                              size_t n, uint32_t w, uint32_t h, uint64_t *mp,
                                                              size_t *at)
{
    for (unsigned k = mt->start_slot[h]; k; k = mt->start_next[k - 1]) {
        size_t a = k - 1, l = mt->alen[a];
        if (w != mt->ahead[a] || i + l > n)
            continue;
        size_t j = 4;
        while (j < l && p[i + j] == mt->anchors[a].s[j])
            j++;
        if (j == l) {
            *mp |= GB(mt->agroup[a]);
            *at = *at < i ? *at : i;
        }
    }
}
#endif

/* The anchor groups present in p[0..n), without SIMD. Pass 1 looks at every ML_OOM_STRIDE-th
 * position without a data-dependent branch: the four bytes there are compared with the (at most
 * three) prefixes of its bucket and a hit sets a bit of a 64-bit word, so the loads of one position
 * never wait for the compares of the one before. Pass 2 checks the hits exactly. */
static uint64_t line_mask_narrow(const struct ml_oom_match *mt, const char *p, size_t n)
{
    uint64_t m = 0;
    if (n < 2)
        return 0;
    const unsigned char *u = (const unsigned char *)p;
    size_t fast = n >= 4 ? n - 3 : 0; /* positions with four bytes to load */
    size_t i = 0;
    while (i < fast) {
        uint64_t bits = 0;
        size_t j = 0;
        for (; j < 64 && i + j * ML_OOM_STRIDE < fast; j++) {
            size_t q = i + j * ML_OOM_STRIDE;
            uint32_t h;
            memcpy(&h, u + q, 4);
            const struct ml_oom_prefix *e = &mt->pre[hash2(u[q], u[q + 1]) >> 2];
            uint64_t hit =
                (uint64_t)(((h & e->m[0]) == e->h[0]) | ((h & e->m[1]) == e->h[1]) | ((h & e->m[2]) == e->h[2]));
            bits |= hit << j;
        }
        while (bits) {
            unsigned b = (unsigned)__builtin_ctzll(bits);
            m |= check_at(mt, p, i + b * ML_OOM_STRIDE, n);
            bits &= bits - 1;
        }
        i += j * ML_OOM_STRIDE;
    }
    /* The grid positions with fewer than four bytes left, exactly. */
    for (; i + 1 < n; i += ML_OOM_STRIDE)
        m |= check_at(mt, p, i, n);
    return m;
}

#ifdef ML_OOM_HAVE_WIDE
/* The same with AVX2 (fat Teddy, above), 32 positions per round in two halves of 16. Each byte's
 * nibbles are looked up once, in the tables of byte k = 0..3, giving the buckets that accept it as
 * an anchor's k-th byte (both 128-bit lanes hold the same 16 bytes, lane 0 looks up buckets 0-7,
 * lane 1 buckets 8-15; the low nibble masked, so that a byte >= 0x80 of a UTF-8 anchor is looked up too). The results for k are
 * shifted by 3 - k bytes, the missing ones taken from the half before (PALIGNR), so that the and
 * of the four says at each position where an anchor's first four bytes would end; a byte left
 * non-zero in either lane is a candidate, checked exactly. p[0..n) with p[0..n + ML_OOM_PAD)
 * readable: the last round reads past the end and drops the positions there. *special: p[0..n) holds
 * a NUL, CR, ESC or '^', *bs a backslash (one table lookup finds the five: their low nibbles differ;
 * the rare rounds with one tell them apart byte by byte). stop: the pass ends at the first CR, *len
 * its offset (n when none), and *special no longer counts CRs, nor *bs what follows the CR; no anchor
 * holds a CR, so an anchor found before it does not reach past it. *first: where the first anchor
 * found starts (*len when none; candidates come in order). */
__attribute__((target("avx2"), always_inline)) static inline uint64_t wide_pass(const struct ml_oom_match *mt,
                                                                                const char *p, size_t n, bool stop,
                                                                                size_t *len, bool *special, bool *bs,
                                                                                size_t *first)
{
    const __m256i nib = _mm256_set1_epi8(0x0f);
    /* byte v is special (or a backslash) when entry (v & 15) of this table is v (a byte >= 0x80
     * looks up 0) */
    const __m256i sp_tab = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1b, '\\', '\r', '^', 0, 0, 0, 0, 0, 0, 0,
                                            0, 0, 0, 0, 0, 0x1b, '\\', '\r', '^', 0);
#define TABLE(t, k) _mm256_load_si256((const __m256i *)(const void *)mt->t[k])
    const __m256i lo0 = TABLE(teddy_lo, 0), lo1 = TABLE(teddy_lo, 1), lo2 = TABLE(teddy_lo, 2);
    const __m256i lo3 = TABLE(teddy_lo, 3), hi0 = TABLE(teddy_hi, 0), hi1 = TABLE(teddy_hi, 1);
    const __m256i hi2 = TABLE(teddy_hi, 2), hi3 = TABLE(teddy_hi, 3);
#undef TABLE
#define LOOK(v, h, lo, hi) _mm256_and_si256(_mm256_shuffle_epi8(lo, v), _mm256_shuffle_epi8(hi, h))
    __m256i p0 = _mm256_setzero_si256(), p1 = p0, p2 = p0; /* the half before's results for bytes 0-2 */
    uint64_t m = 0;
    uint32_t any = 0;
    bool back = false;
    size_t i = 0, end = n, at = SIZE_MAX;
    for (; i < n; i += 32) {
        __m256i va = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(p + i)));
        __m256i vb = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(p + i + 16)));
        __m256i ha = _mm256_and_si256(_mm256_srli_epi16(va, 4), nib);
        __m256i hb = _mm256_and_si256(_mm256_srli_epi16(vb, 4), nib);
        va = _mm256_and_si256(va, nib); /* the low nibbles (PSHUFB looks up 0 for a byte >= 0x80) */
        vb = _mm256_and_si256(vb, nib);
        __m256i a0 = LOOK(va, ha, lo0, hi0), a1 = LOOK(va, ha, lo1, hi1), a2 = LOOK(va, ha, lo2, hi2);
        __m256i ca = _mm256_and_si256(_mm256_and_si256(LOOK(va, ha, lo3, hi3), _mm256_alignr_epi8(a2, p2, 15)),
                                      _mm256_and_si256(_mm256_alignr_epi8(a1, p1, 14), _mm256_alignr_epi8(a0, p0, 13)));
        p0 = LOOK(vb, hb, lo0, hi0);
        p1 = LOOK(vb, hb, lo1, hi1);
        p2 = LOOK(vb, hb, lo2, hi2);
        __m256i cb = _mm256_and_si256(_mm256_and_si256(LOOK(vb, hb, lo3, hi3), _mm256_alignr_epi8(p2, a2, 15)),
                                      _mm256_and_si256(_mm256_alignr_epi8(p1, a1, 14), _mm256_alignr_epi8(p0, a0, 13)));
        /* lane 0 of both halves or-ed with lane 1 of both: the 32 positions' candidates */
        __m256i c = _mm256_or_si256(_mm256_permute2x128_si256(ca, cb, 0x20), _mm256_permute2x128_si256(ca, cb, 0x31));
        uint32_t bits = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, _mm256_setzero_si256()));
        __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
        uint32_t sp = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_shuffle_epi8(sp_tab, u), u));
        size_t rem = n - i;
        if (rem < 32) { /* bytes past the end are not looked at, and no anchor ends there */
            sp &= (1u << rem) - 1;
            bits &= (1u << rem) - 1;
        }
        if (sp) {
            for (uint32_t t = sp; t; t &= t - 1) {
                unsigned b = (unsigned)__builtin_ctz(t);
                if (p[i + b] == '\\') {
                    back = true;
                    sp &= ~(1u << b);
                } else if (stop && p[i + b] == '\r') {
                    end = i + b;
                    sp &= (1u << b) - 1;
                    bits &= (1u << b) - 1;
                    break;
                }
            }
            any |= sp;
        }
        while (bits) {
            size_t q = i + (unsigned)__builtin_ctz(bits) - 3;
            uint32_t w;
            memcpy(&w, p + q, 4);
            check_start(mt, p, q, n, w, start_hash(w), &m, &at);
            bits &= bits - 1;
        }
        if (end != n)
            break;
    }
#undef LOOK
    *len = end;
    *special = any != 0;
    *bs = back;
    *first = at < end ? at : end;
    return m;
}

__attribute__((target("avx2"))) static uint64_t line_mask_wide(const struct ml_oom_match *mt, const char *p, size_t n,
                                                               bool *special)
{
    size_t len, first;
    bool bs;
    return wide_pass(mt, p, n, false, &len, special, &bs, &first);
}

__attribute__((target("avx2"))) static uint64_t segment_mask_wide(const struct ml_oom_match *mt, const char *p,
                                                                  size_t n, size_t *len, bool *special, bool *bs,
                                                                  size_t *first)
{
    return wide_pass(mt, p, n, true, len, special, bs, first);
}
#endif

#ifdef ML_OOM_HAVE_WIDE
/* The Teddy tables of marks_wide and its carry between rounds (the half before's results for
 * bytes 0-2). */
struct teddy_regs {
    __m256i lo0, lo1, lo2, lo3, hi0, hi1, hi2, hi3, p0, p1, p2;
};

/* One round of 32 bytes u of the window pass: its candidates (bit j: an anchor's first four bytes
 * may end at j), *rare its rare bytes and *lf its newlines. */

__attribute__((target("avx2"), always_inline)) static inline uint32_t marks_round(struct teddy_regs *r, __m256i u,
                                                                                  uint32_t *rare, uint32_t *lf)
{
    const __m256i nib = _mm256_set1_epi8(0x0f), nl = _mm256_set1_epi8('\n');
    /* byte v is rare when entry (v & 15) of this table is v (their low nibbles differ) */
    const __m256i rare_tab = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1b, '\\', '\r', '^', 0, 0, 0, 0, 0, 0,
                                              0, 0, 0, 0, 0, 0, 0x1b, '\\', '\r', '^', 0);
#define LOOK(v, h, lo, hi) _mm256_and_si256(_mm256_shuffle_epi8(lo, v), _mm256_shuffle_epi8(hi, h))
    __m256i va = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(u));
    __m256i vb = _mm256_broadcastsi128_si256(_mm256_extracti128_si256(u, 1));
    __m256i ha = _mm256_and_si256(_mm256_srli_epi16(va, 4), nib);
    __m256i hb = _mm256_and_si256(_mm256_srli_epi16(vb, 4), nib);
    va = _mm256_and_si256(va, nib); /* the low nibbles (PSHUFB looks up 0 for a byte >= 0x80) */
    vb = _mm256_and_si256(vb, nib);
    __m256i a0 = LOOK(va, ha, r->lo0, r->hi0), a1 = LOOK(va, ha, r->lo1, r->hi1), a2 = LOOK(va, ha, r->lo2, r->hi2);
    __m256i ca =
        _mm256_and_si256(_mm256_and_si256(LOOK(va, ha, r->lo3, r->hi3), _mm256_alignr_epi8(a2, r->p2, 15)),
                         _mm256_and_si256(_mm256_alignr_epi8(a1, r->p1, 14), _mm256_alignr_epi8(a0, r->p0, 13)));
    r->p0 = LOOK(vb, hb, r->lo0, r->hi0);
    r->p1 = LOOK(vb, hb, r->lo1, r->hi1);
    r->p2 = LOOK(vb, hb, r->lo2, r->hi2);
    __m256i cb =
        _mm256_and_si256(_mm256_and_si256(LOOK(vb, hb, r->lo3, r->hi3), _mm256_alignr_epi8(r->p2, a2, 15)),
                         _mm256_and_si256(_mm256_alignr_epi8(r->p1, a1, 14), _mm256_alignr_epi8(r->p0, a0, 13)));
#undef LOOK
    __m256i c = _mm256_or_si256(_mm256_permute2x128_si256(ca, cb, 0x20), _mm256_permute2x128_si256(ca, cb, 0x31));
    *rare = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_shuffle_epi8(rare_tab, u), u));
    *lf = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(u, nl));
    return ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, _mm256_setzero_si256()));
}

/* The window pass (match.h): the rounds of wide_pass over the whole window with no per-line set-up;
 * the rare bytes and newlines are kept as bitmaps, the anchors found in a list. Two rounds (one
 * bitmap word) at a time while 64 bytes are left, then the rest one round at a time, the last from
 * a zeroed copy (nothing is read past p[n - 1]). */
__attribute__((target("avx2"), always_inline)) static inline void
marks_body(const struct ml_oom_match *mt, const char *p, size_t n, struct ml_oom_marks *k)
{
    struct teddy_regs r;
#define TABLE(t, j) _mm256_load_si256((const __m256i *)(const void *)mt->t[j])
    r.lo0 = TABLE(teddy_lo, 0), r.lo1 = TABLE(teddy_lo, 1), r.lo2 = TABLE(teddy_lo, 2), r.lo3 = TABLE(teddy_lo, 3);
    r.hi0 = TABLE(teddy_hi, 0), r.hi1 = TABLE(teddy_hi, 1), r.hi2 = TABLE(teddy_hi, 2), r.hi3 = TABLE(teddy_hi, 3);
#undef TABLE
    r.p0 = r.p1 = r.p2 = _mm256_setzero_si256();
    /* first the rounds, the candidates kept as a bitmap like the newlines; then their checks, in
     * order (the rounds' loop keeps its registers for the tables) */
    uint64_t cand[ML_OOM_WINDOW / 64];
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint32_t r0, r1, l0, l1;
        /* the input 2 KiB ahead: a mapped file's pages are read from memory here, where the
         * kernel's copy into a read buffer used to bring them in (src/in_map.c); an address
         * past the input is not dereferenced by a prefetch */
        __builtin_prefetch((const void *)((uintptr_t)p + i + ML_OOM_PREFETCH));
        uint32_t c0 = marks_round(&r, _mm256_loadu_si256((const __m256i *)(const void *)(p + i)), &r0, &l0);
        uint32_t c1 = marks_round(&r, _mm256_loadu_si256((const __m256i *)(const void *)(p + i + 32)), &r1, &l1);
        k->rare[i / 64] = r0 | (uint64_t)r1 << 32;
        k->nl[i / 64] = l0 | (uint64_t)l1 << 32;
        cand[i / 64] = c0 | (uint64_t)c1 << 32;
    }
    for (; i < n; i += 32) {
        const char *q = p + i;
        size_t rem = n - i;
        _Alignas(32) char last[32];
        if (rem < 32) { /* the last round: its bytes into a zeroed copy */
            memset(last, 0, sizeof(last));
            memcpy(last, q, rem);
            q = last;
        }
        uint32_t rare, lf;
        uint32_t c = marks_round(&r, _mm256_loadu_si256((const __m256i *)(const void *)q), &rare, &lf);
        if (rem < 32) {
            uint32_t keep = (1u << rem) - 1;
            c &= keep;
            rare &= keep;
            lf &= keep;
        }
        if (i & 63) {
            k->rare[i / 64] |= (uint64_t)rare << 32;
            k->nl[i / 64] |= (uint64_t)lf << 32;
            cand[i / 64] |= (uint64_t)c << 32;
        } else {
            k->rare[i / 64] = rare;
            k->nl[i / 64] = lf;
            cand[i / 64] = c;
        }
    }
    uint32_t nh = 0;
    k->n = n;
    for (size_t w = 0; w < (n + 63) / 64; w++) {
        for (uint64_t c = cand[w]; c; c &= c - 1) {
            size_t at = w * 64 + (size_t)__builtin_ctzll(c) - 3;
            uint32_t x;
            memcpy(&x, p + at, 4);
            uint64_t g = 0;
            size_t first = SIZE_MAX;
            check_start(mt, p, at, n, x, start_hash(x), &g, &first);
            if (!g)
                continue;
            if (nh == ML_OOM_HITS) { /* full: the window ends before this anchor */
                k->n = at;
                k->n_hits = nh;
                k->cursor = 0;
                return;
            }
            k->hit_at[nh] = (uint16_t)at;
            k->hit_groups[nh++] = g;
        }
    }
    k->n_hits = nh;
    k->cursor = 0;
}

__attribute__((target("avx2"))) static void marks_wide(const struct ml_oom_match *mt, const char *p, size_t n,
                                                       struct ml_oom_marks *k)
{
    marks_body(mt, p, n, k);
}

/* The same instructions where the CPU has AVX-512VL and BW: the compiler may then use 32 vector
 * registers (and the EVEX forms of the same operations), and the rounds' loop keeps its tables and
 * carries in registers instead of spilling them to the stack. */
__attribute__((target("avx2,avx512f,avx512vl,avx512bw"))) static void
marks_evex(const struct ml_oom_match *mt, const char *p, size_t n, struct ml_oom_marks *k)
{
    marks_body(mt, p, n, k);
}
#endif

void ml_oom_match_marks(const struct ml_oom_match *mt, const char *p, size_t n, struct ml_oom_marks *k)
{
#ifdef ML_OOM_HAVE_WIDE
    if (mt->evex)
        marks_evex(mt, p, n < ML_OOM_WINDOW ? n : ML_OOM_WINDOW, k);
    else
        marks_wide(mt, p, n < ML_OOM_WINDOW ? n : ML_OOM_WINDOW, k);
#else
    (void)mt;
    (void)p;
    (void)n;
    memset(k, 0, sizeof(*k));
#endif
}

uint64_t ml_oom_match_marked(const struct ml_oom_match *mt, struct ml_oom_marks *k, size_t base, const char *l,
                             size_t a, size_t n, size_t *len, bool *special, bool *bs, size_t *first)
{
    /* window positions of the segment: [lo, hi); cr: its end (the first CR, else hi) */
    size_t lo = base + a, hi = base + n, cr = hi;
    bool sp = false, back = false;
    for (size_t w = lo / 64; w * 64 < hi && cr == hi; w++) {
        uint64_t b = k->rare[w];
        if (w == lo / 64)
            b &= ~(uint64_t)0 << (lo % 64);
        for (; b; b &= b - 1) {
            size_t pos = w * 64 + (size_t)__builtin_ctzll(b);
            if (pos >= hi)
                break;
            char c = l[pos - base];
            if (c == '\r') {
                cr = pos;
                break;
            }
            if (c == '\\')
                back = true;
            else
                sp = true;
        }
    }
    /* the anchors that start in [lo, cr) (none holds a CR or newline: each ends before cr) */
    uint64_t m = 0, live = ~mt->retired;
    size_t at = cr;
    uint32_t h = k->cursor;
    while (h < k->n_hits && k->hit_at[h] < lo)
        h++;
    for (; h < k->n_hits && k->hit_at[h] < cr; h++) {
        uint64_t g = k->hit_groups[h] & live;
        if (g && at == cr)
            at = k->hit_at[h];
        m |= g;
    }
    k->cursor = h;
    *len = cr - lo;
    *special = sp;
    *bs = back;
    *first = at - lo;
    return m;
}

/* The scalar passes (out of line: the calls below stay plain jumps). */
__attribute__((noinline)) static uint64_t line_narrow(const struct ml_oom_match *mt, const char *p, size_t n,
                                                      bool *special)
{
    *special = strcspn(p, "\r\x1b^") != n;
    return line_mask_narrow(mt, p, n);
}

__attribute__((noinline)) static uint64_t segment_narrow(const struct ml_oom_match *mt, const char *p, size_t n,
                                                         size_t *len, bool *special, bool *bs, size_t *first)
{
    *first = 0; /* (no anchor starts before 0: the scalar pass does not say where) */
    const char *cr = memchr(p, '\r', n);
    size_t e = cr ? (size_t)(cr - p) : n;
    *len = e;
    *special = memchr(p, '\0', e) || memchr(p, '\x1b', e) || memchr(p, '^', e);
    *bs = memchr(p, '\\', e) != NULL;
    return line_mask_narrow(mt, p, e);
}

uint64_t ml_oom_match_line(const struct ml_oom_match *mt, const char *p, size_t n, bool *special)
{
#ifdef ML_OOM_HAVE_WIDE
    if (mt->wide)
        return line_mask_wide(mt, p, n, special);
#endif
    return line_narrow(mt, p, n, special);
}

uint64_t ml_oom_match_segment(const struct ml_oom_match *mt, const char *p, size_t n, size_t *len, bool *special,
                              bool *bs, size_t *first)
{
#ifdef ML_OOM_HAVE_WIDE
    if (mt->wide)
        return segment_mask_wide(mt, p, n, len, special, bs, first);
#endif
    return segment_narrow(mt, p, n, len, special, bs, first);
}
