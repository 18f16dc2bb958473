/*
 * text.c - text helpers of the OOM scanner: excerpts, bounded search, integers, sizes.
 */
#include "memledger/oom.h"

#include <string.h>

#include "memledger/buf.h"
#include "oom_text.h"

void ml_oom_excerpt(char *dst, size_t cap, const char *src, size_t n)
{
    if (cap == 0)
        return;
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0, i = 0;
    bool blank = true; /* drop leading blanks */
    while (i < n) {
        size_t l = ml_utf8_len(s + i, n - i);
        unsigned char c = s[i];
        if (l == 1 && (c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
            if (!blank) {
                if (o + 1 >= cap)
                    break;
                dst[o++] = ' ';
            }
            blank = true;
            i++;
            continue;
        }
        blank = false;
        if (l == 0 || (l == 1 && (c < 0x20 || c == 0x7F))) {
            if (o + 1 >= cap)
                break;
            dst[o++] = '?';
            i++;
            continue;
        }
        if (o + l >= cap)
            break;
        memcpy(dst + o, s + i, l);
        o += l;
        i += l;
    }
    if (i < n && cap > 4) {
        /* Cut: make room for "..." on a character boundary. */
        while (o + 3 >= cap && o > 0) {
            o--;
            while (o > 0 && ((unsigned char)dst[o] & 0xC0) == 0x80)
                o--;
        }
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    while (o > 0 && dst[o - 1] == ' ')
        o--;
    dst[o] = '\0';
}

size_t ml_oom_parse_u64(const char *p, uint64_t *out)
{
    size_t i = 0;
    uint64_t v = 0;
    bool any = false;
    for (;;) {
        if (p[i] >= '0' && p[i] <= '9') {
            uint64_t d = (uint64_t)(p[i] - '0');
            if (v <= (UINT64_MAX - 9) / 10) /* (no overflow: the test below without its division) */
                v = v * 10 + d;
            else
                v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
            any = true;
            i++;
        } else if (p[i] == ',' && any && p[i + 1] >= '0' && p[i + 1] <= '9' && p[i + 2] >= '0' && p[i + 2] <= '9' &&
                   p[i + 3] >= '0' && p[i + 3] <= '9' && !(p[i + 4] >= '0' && p[i + 4] <= '9')) {
            i++; /* thousands separator: exactly three digits follow */
        } else {
            break;
        }
    }
    if (!any)
        return 0;
    *out = v;
    return i;
}

size_t ml_oom_parse_permille(const char *p, uint32_t *out)
{
    size_t i = 0;
    uint64_t ip = 0;
    while (p[i] >= '0' && p[i] <= '9' && ip < 100000000u)
        ip = ip * 10 + (uint64_t)(p[i++] - '0');
    if (i == 0)
        return 0;
    uint64_t frac = 0, scale = 1;
    if (p[i] == '.' && p[i + 1] >= '0' && p[i + 1] <= '9') {
        i++;
        while (p[i] >= '0' && p[i] <= '9') {
            if (scale < 1000000) {
                frac = frac * 10 + (uint64_t)(p[i] - '0');
                scale *= 10;
            }
            i++;
        }
    }
    uint64_t v = ip * 1000 + (frac * 1000 * 2 + scale) / (2 * scale);
    *out = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    return i;
}

/* Units as the field guide's messages print them. PyTorch's format_size (c10 CUDACachingAllocator,
 * MPSAllocator), DeepSpeed's see_memory_usage and vLLM all divide by powers of 1024 whatever the
 * label says, so GB/MB/KB are binary here (A1, A5, A9, A10). */
static unsigned unit_shift(const char *u, size_t *len, bool loose)
{
    static const struct {
        char s[8];
        unsigned shift;
    } units[] = {
        {"bytes", 0}, {"byte", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"PiB", 50}, {"EiB", 60},
        {"KB", 10},   {"kB", 10},  {"MB", 20},  {"GB", 30},  {"TB", 40},  {"PB", 50},  {"EB", 60},  {"B", 0},
    };
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        size_t l = strlen(units[i].s);
        if (!strncmp(u, units[i].s, l)) {
            char next = u[l];
            /* "B" alone must end the word ("Bytes" and "Based" are not units); in text read with
             * its blanks removed (loose) the next word follows at once ("MiBfree"). */
            if (!loose && ((next >= 'A' && next <= 'Z') || (next >= 'a' && next <= 'z')))
                continue;
            *len = l;
            return units[i].shift;
        }
    }
    *len = 0;
    return 99;
}

static size_t parse_size(const char *p, uint64_t *out, bool loose)
{
    size_t i = 0;
    uint64_t mant = 0;
    unsigned dec = 0;
    bool any = false;
    while (p[i] >= '0' && p[i] <= '9') {
        if (mant > UINT64_MAX / 10 - 10)
            return 0;
        mant = mant * 10 + (uint64_t)(p[i++] - '0');
        any = true;
    }
    if (!any)
        return 0;
    if (p[i] == '.' && p[i + 1] >= '0' && p[i + 1] <= '9') {
        i++;
        while (p[i] >= '0' && p[i] <= '9') {
            if (dec < 6) {
                if (mant > UINT64_MAX / 10 - 10)
                    return 0;
                mant = mant * 10 + (uint64_t)(p[i] - '0');
                dec++;
            }
            i++;
        }
    }
    size_t j = i;
    while (p[j] == ' ')
        j++;
    size_t ul;
    unsigned shift = unit_shift(p + j, &ul, loose);
    if (shift == 99 || (shift == 0 && dec > 0))
        return 0;
    /* bytes = mant * 2^shift / 10^dec = mant * 2^(shift-dec) / 5^dec, rounded half up. */
    uint64_t five = 1;
    for (unsigned k = 0; k < dec; k++)
        five *= 5;
    if (shift < dec) {
        /* Only "bytes" with decimals would get here; refused above. */
        return 0;
    }
    unsigned sh = shift - dec;
    uint64_t q = mant / five, r = mant % five;
    if (sh >= 64 || (q && q > (UINT64_MAX >> sh)))
        return 0;
    uint64_t hi = q << sh;
    /* r < 5^6 = 15625 and sh <= 60 - 0: r << sh may overflow for EiB; guard it. */
    if (r && sh > 49)
        return 0;
    uint64_t lo = ((r << sh) + five / 2) / five;
    if (hi > UINT64_MAX - lo)
        return 0;
    *out = hi + lo;
    return j + ul;
}

size_t ml_oom_parse_size(const char *p, uint64_t *out)
{
    return parse_size(p, out, false);
}

size_t ml_oom_parse_size_loose(const char *p, uint64_t *out)
{
    return parse_size(p, out, true);
}

size_t ml_oom_squeeze(char *dst, char *low, bool *gap, size_t cap, const char *src, size_t n)
{
    size_t o = 0;
    bool blank = false;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        char c = src[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            blank = true;
            continue;
        }
        if (gap)
            gap[o] = blank;
        blank = false;
        dst[o] = c;
        low[o] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
        o++;
    }
    if (cap) {
        dst[o] = '\0';
        low[o] = '\0';
    }
    return o;
}
