/*
 * units.h - byte sizes and counts as text, with integer arithmetic only.
 *
 * Unit rules (docs/units.md): KiB/MiB/GiB/TiB and the bare suffixes K/M/G/T are powers of
 * 1024; KB/MB/GB/TB are powers of 1000; a number without a unit is bytes. Decimals are
 * allowed ("15.98GiB") and rounded to the nearest byte; a scientific form is accepted for
 * plain numbers ("1e9"). Negative, NaN, infinite and overflowing values are rejected.
 * Formatting never uses floating point or the locale, so output is identical everywhere.
 */
#ifndef ML_UNITS_H
#define ML_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/buf.h"
#include "memledger/status.h"

#define ML_KIB ((uint64_t)1 << 10)
#define ML_MIB ((uint64_t)1 << 20)
#define ML_GIB ((uint64_t)1 << 30)
#define ML_TIB ((uint64_t)1 << 40)

/* How a size string named its unit; lets callers give "16G" a meaning of their own. */
enum ml_size_unit {
    ML_UNIT_NONE,    /* plain number: bytes */
    ML_UNIT_BINARY,  /* KiB, MiB, GiB, TiB (explicit "iB") */
    ML_UNIT_DECIMAL, /* KB, MB, GB, TB */
    ML_UNIT_BARE     /* K, M, G, T without "B": binary multiples */
};

/*
 * Parse a size such as "16G", "15.98 GiB", "80GB", "512MiB", "1e9", "17179869184".
 * Case-insensitive units; spaces between number and unit allowed. On success *out holds the
 * byte count (rounded half up) and *unit (if not NULL) how the unit was written.
 * Errors: ML_ERR_PARSE (not a size), ML_ERR_INVALID (negative), ML_ERR_OVERFLOW.
 */
enum ml_status ml_size_parse(const char *s, uint64_t *out, enum ml_size_unit *unit, struct ml_diag *diag);

/*
 * Parse a non-negative integer count: decimal digits, optionally "1e9"-style or with
 * '_' / ',' digit separators. Errors as for ml_size_parse.
 */
enum ml_status ml_count_parse(const char *s, uint64_t *out, struct ml_diag *diag);

/* A fraction in (0, 1] with up to three decimals ("0.9", "1", ".95"; further digits are
 * dropped) as permille. False when it is not one. */
bool ml_permille_parse(const char *s, uint32_t *out);

/* A duration: "200ms", "1s", "0.5s", "2m" (or "2min"), "1h", or bare digits as milliseconds; up
 * to nine decimals. In nanoseconds, UINT64_MAX for anything longer (never a wrap); false when it
 * is not one, or its whole part passes about 10^9. */
bool ml_duration_parse(const char *s, uint64_t *ns);

/* ml_percent_parse without decimals: a whole percentage below 100, the '%' optional ("10%", "0",
 * "07"); false for anything else ("", "%", "100", "5.5%", " 5"). */
bool ml_pct_parse(const char *s, uint32_t *pct);
/* Parse a percentage below 100 ("10%", "10", "7.5%", fit's --headroom) as permille, to the tenth
 * (the rest dropped); false when it is not one. */
bool ml_percent_parse(const char *s, uint32_t *permille);

/* Append bytes as GiB with two decimals, rounded half up: "14.50 GiB". */
enum ml_status ml_fmt_gib(struct ml_buf *b, uint64_t bytes);

/* Append bytes in the most readable binary unit with two decimals ("571.00 MiB", "1.50 GiB"). */
enum ml_status ml_fmt_bytes(struct ml_buf *b, uint64_t bytes);

/* Append an integer with thousands separators: 14,770,033,664. */
enum ml_status ml_fmt_count(struct ml_buf *b, uint64_t n);

/* Append a count in short form with two decimals: "14.77B", "494.03M", "12.3K". */
enum ml_status ml_fmt_count_short(struct ml_buf *b, uint64_t n);

/* Append num/den as a percentage with one decimal ("12.3%"); den 0 prints "n/a". */
enum ml_status ml_fmt_percent(struct ml_buf *b, uint64_t num, uint64_t den);

/* The same three into out[n] (ML_FMT_MAX is always enough), for callers without a buffer;
 * each returns out. */
#define ML_FMT_MAX 48
const char *ml_fmt_gib_s(char *out, size_t n, uint64_t bytes);
/* The same number without its unit ("14.81"), for messages that write the unit apart. */
const char *ml_fmt_gib_num_s(char *out, size_t n, uint64_t bytes);
const char *ml_fmt_bytes_s(char *out, size_t n, uint64_t bytes);
const char *ml_fmt_percent_s(char *out, size_t n, uint64_t num, uint64_t den);

/* Write a DeepSpeed size the way its JSON files write it into out[n]: "1e8" for a single digit
 * times a power of ten of 10^6 or more, else plain digits ("50000", "123456789"). Returns out. */
const char *ml_fmt_knob(char *out, size_t n, uint64_t v);

#endif /* ML_UNITS_H */
