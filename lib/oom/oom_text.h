/*
 * oom_text.h - small text helpers shared by the scanner and the diagnosis (private to lib/oom).
 */
#ifndef ML_OOM_TEXT_H
#define ML_OOM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copy src (n bytes) into dst (cap bytes incl. NUL) as clean one-line UTF-8: control bytes and
 * invalid sequences become '?', runs of blanks collapse, leading blanks go, and a cut never
 * splits a character ("..." marks a cut). */
void ml_oom_excerpt(char *dst, size_t cap, const char *src, size_t n);

/* Parse an unsigned decimal integer at p (digits, optionally with ',' separators between
 * groups of three); returns characters consumed, 0 if none. Saturates at UINT64_MAX. */
size_t ml_oom_parse_u64(const char *p, uint64_t *out);

/* Parse a decimal fraction "0.9" / "0.90" / "22.6" as value x 1000 (rounded); returns consumed. */
size_t ml_oom_parse_permille(const char *p, uint32_t *out);

/* ml_oom_parse_size for text read with its blanks removed: the unit is taken whatever letter
 * follows it ("14.81GiBisallocated", "20MiBfree"); the longest unit that matches wins. */
size_t ml_oom_parse_size_loose(const char *p, uint64_t *out);

/* src[0..n) without blanks (spaces, tabs, newlines) into dst, and lower-cased into low (both cap
 * bytes incl. NUL): a message read this way reads the same whether a terminal wrapped it inside a
 * word or number, between a number and its unit, or lost the blanks between words. gap (NULL, or
 * cap entries): whether a blank was removed before each byte. Returns the length. */
size_t ml_oom_squeeze(char *dst, char *low, bool *gap, size_t cap, const char *src, size_t n);

#endif /* ML_OOM_TEXT_H */
