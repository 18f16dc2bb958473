/*
 * checked.h - overflow-checked unsigned 64-bit arithmetic for byte and parameter counts.
 *
 * Every multiplication or addition of sizes in memledger goes through these helpers, which
 * return false instead of wrapping (the role git's st_mult plays). Header-only, static inline.
 */
#ifndef ML_CHECKED_H
#define ML_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

/* *out = a + b; false on overflow (then *out is unspecified). */
static inline bool ml_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* *out = a * b; false on overflow. */
static inline bool ml_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

/* *out = a * b * c; false on overflow. */
static inline bool ml_mul3_u64(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    uint64_t t;
    return ml_mul_u64(a, b, &t) && ml_mul_u64(t, c, out);
}

/* ceil(a / b) for b > 0, without overflow. */
static inline uint64_t ml_ceil_div_u64(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* Saturating add: a + b, or UINT64_MAX on overflow (for accumulators that flag overflow once). */
static inline uint64_t ml_sat_add_u64(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

#endif /* ML_CHECKED_H */
