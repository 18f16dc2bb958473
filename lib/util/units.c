/*
 * units.c - size and count parsing and formatting with integer arithmetic only.
 *
 * A number is read as an exact decimal mantissa and a power of ten, then multiplied by the
 * unit in 128-bit arithmetic and rounded half up once, so "15.98GiB" is the same byte count on
 * every machine and no floating point or locale is involved (style.md, trap 13).
 */
#include "memledger/units.h"

#include <stdio.h>
#include <string.h>

#include "i18n.h"

__extension__ typedef unsigned __int128 u128;

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

static int is_space(int c)
{
    return c == ' ' || c == '\t';
}

/* 10^k as u128 for k <= 38. */
static u128 pow10_u128(unsigned k)
{
    u128 r = 1;
    while (k--)
        r *= 10;
    return r;
}

/*
 * Read [+]digits[.digits][e[+-]digits] from *pp. Fills mant and exp10 (value = mant*10^exp10).
 * Returns ML_OK, ML_ERR_PARSE, ML_ERR_INVALID (negative sign) or ML_ERR_OVERFLOW.
 */
static enum ml_status read_decimal(const char **pp, uint64_t *mant, int *exp10, int *n_digits)
{
    const char *p = *pp;
    uint64_t m = 0;
    int e = 0, nd = 0, dropped = 0;
    if (*p == '-')
        return ML_ERR_INVALID;
    if (*p == '+')
        p++;
    int seen_dot = 0;
    for (;; p++) {
        if (*p >= '0' && *p <= '9') {
            nd++;
            unsigned d = (unsigned)(*p - '0');
            if (m < UINT64_MAX / 10 || (m == UINT64_MAX / 10 && d <= UINT64_MAX % 10)) {
                m = m * 10 + d;
                if (seen_dot)
                    e--;
            } else if (!seen_dot) {
                /* The integer part alone no longer fits in u64: it overflows unless a negative
                 * exponent follows ("18446744073709551616e-1"). */
                e++;
                dropped = 1;
            }
        } else if ((*p == '_' || *p == ',') && nd > 0 && !seen_dot && p[1] >= '0' && p[1] <= '9') {
            continue; /* digit group separator: 1_000_000 or 1,000,000 */
        } else if (*p == '.' && !seen_dot) {
            seen_dot = 1;
        } else {
            break;
        }
    }
    if (nd == 0)
        return ML_ERR_PARSE;
    if ((*p == 'e' || *p == 'E') &&
        ((p[1] >= '0' && p[1] <= '9') || ((p[1] == '+' || p[1] == '-') && p[2] >= '0' && p[2] <= '9'))) {
        p++;
        int sign = 1;
        if (*p == '+' || *p == '-')
            sign = (*p++ == '-') ? -1 : 1;
        int x = 0;
        while (*p >= '0' && *p <= '9') {
            if (x < 10000)
                x = x * 10 + (*p - '0');
            p++;
        }
        e += sign * x;
    }
    if (dropped && e >= 0)
        return ML_ERR_OVERFLOW;
    *pp = p;
    *mant = m;
    *exp10 = e;
    *n_digits = nd;
    return ML_OK;
}

/* mant * 10^exp10 * unit, rounded half up. */
static enum ml_status scale(uint64_t mant, int exp10, uint64_t unit, uint64_t *out)
{
    if (mant == 0) {
        *out = 0;
        return ML_OK;
    }
    if (exp10 > 0) {
        if (exp10 > 19)
            return ML_ERR_OVERFLOW;
        u128 v = (u128)mant * pow10_u128((unsigned)exp10);
        if (v > UINT64_MAX)
            return ML_ERR_OVERFLOW;
        v *= unit;
        if (v > UINT64_MAX)
            return ML_ERR_OVERFLOW;
        *out = (uint64_t)v;
        return ML_OK;
    }
    unsigned k = (unsigned)(-exp10);
    if (k > 38) {
        *out = 0; /* far below one byte */
        return ML_OK;
    }
    /* mant < 2^64 and unit < 2^64, so the product fits in 128 bits. */
    u128 num = (u128)mant * unit;
    u128 den = pow10_u128(k);
    u128 q = num / den, r = num % den;
    if (r * 2 >= den)
        q++;
    if (q > UINT64_MAX)
        return ML_ERR_OVERFLOW;
    *out = (uint64_t)q;
    return ML_OK;
}

enum ml_status ml_size_parse(const char *s, uint64_t *out, enum ml_size_unit *unit_out, struct ml_diag *diag)
{
    const char *p = s ? s : "";
    while (is_space(*p))
        p++;
    uint64_t mant;
    int exp10, nd;
    enum ml_status st = read_decimal(&p, &mant, &exp10, &nd);
    if (st == ML_ERR_INVALID)
        return ml_diag_set(diag, st, _("size '%s' is negative"), s ? s : "");
    if (st == ML_ERR_OVERFLOW)
        return ml_diag_set(diag, st, _("size '%s' is too large"), s);
    if (st != ML_OK)
        return ml_diag_set(diag, ML_ERR_PARSE, _("'%s' is not a size (examples: 16G, 15.98GiB, 80GB, 512MiB)"),
                           s ? s : "");
    while (is_space(*p))
        p++;
    uint64_t mult = 1;
    enum ml_size_unit u = ML_UNIT_NONE;
    if (*p) {
        int c = lower((unsigned char)*p);
        int power = 0;
        switch (c) {
        case 'b': power = 0; break;
        case 'k': power = 1; break;
        case 'm': power = 2; break;
        case 'g': power = 3; break;
        case 't': power = 4; break;
        case 'p': power = 5; break;
        default: power = -1; break;
        }
        if (power < 0)
            return ml_diag_set(diag, ML_ERR_PARSE,
                               _("'%s' has an unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB or K, M, G, T)"),
                               s);
        p++;
        if (power == 0) {
            u = ML_UNIT_NONE;
        } else if (lower((unsigned char)p[0]) == 'i' && lower((unsigned char)p[1]) == 'b') {
            u = ML_UNIT_BINARY;
            p += 2;
        } else if (lower((unsigned char)p[0]) == 'b') {
            u = ML_UNIT_DECIMAL;
            p += 1;
        } else {
            u = ML_UNIT_BARE;
        }
        for (int i = 0; i < power; i++)
            mult *= (u == ML_UNIT_DECIMAL) ? 1000u : 1024u;
        while (is_space(*p))
            p++;
        if (*p)
            return ml_diag_set(diag, ML_ERR_PARSE, _("'%s' has trailing characters after the unit"), s);
    }
    st = scale(mant, exp10, mult, out);
    if (st != ML_OK)
        return ml_diag_set(diag, st, _("size '%s' is too large"), s);
    if (unit_out)
        *unit_out = u;
    return ML_OK;
}

enum ml_status ml_count_parse(const char *s, uint64_t *out, struct ml_diag *diag)
{
    const char *p = s ? s : "";
    while (is_space(*p))
        p++;
    uint64_t mant;
    int exp10, nd;
    enum ml_status st = read_decimal(&p, &mant, &exp10, &nd);
    if (st == ML_ERR_INVALID)
        return ml_diag_set(diag, st, _("'%s' is negative"), s ? s : "");
    if (st == ML_ERR_OVERFLOW)
        return ml_diag_set(diag, st, _("'%s' is too large"), s);
    while (is_space(*p))
        p++;
    if (st != ML_OK || *p)
        return ml_diag_set(diag, ML_ERR_PARSE, _("'%s' is not a whole number"), s ? s : "");
    /* A count must be integral: 1.5 is refused, 1.5e3 accepted. */
    if (exp10 < 0) {
        u128 den = pow10_u128((unsigned)(exp10 < -38 ? 38 : -exp10));
        if (exp10 < -38 || (u128)mant % den != 0)
            return ml_diag_set(diag, ML_ERR_INVALID, _("'%s' is not a whole number"), s);
    }
    st = scale(mant, exp10, 1, out);
    if (st != ML_OK)
        return ml_diag_set(diag, st, _("'%s' is too large"), s);
    return ML_OK;
}

/* A decimal number at *p in units of 10^-decimals ("7.5" with 1: 75), the digits past those
 * dropped, never rounded; *p is left after it. False when it has no digit, or its whole part
 * passes 10^9 (never an overflow). */
static bool fixed_point(const char **p, unsigned decimals, uint64_t *v)
{
    const char *q = *p;
    uint64_t ip = 0, fp = 0;
    int nd = 0;
    for (; *q >= '0' && *q <= '9'; q++, nd++) {
        if (ip > 1000000000u)
            return false;
        ip = ip * 10 + (uint64_t)(*q - '0');
    }
    unsigned kept = 0;
    if (*q == '.') {
        for (q++; *q >= '0' && *q <= '9'; q++, nd++)
            if (kept < decimals) {
                fp = fp * 10 + (uint64_t)(*q - '0');
                kept++;
            }
    }
    for (; kept < decimals; kept++)
        fp *= 10;
    uint64_t scale = 1;
    for (unsigned i = 0; i < decimals; i++)
        scale *= 10;
    *v = ip * scale + fp;
    *p = q;
    return nd > 0;
}

bool ml_percent_parse(const char *s, uint32_t *permille)
{
    const char *p = s;
    uint64_t v;
    if (!fixed_point(&p, 1, &v))
        return false;
    if (*p == '%')
        p++;
    if (*p || v >= 1000)
        return false;
    *permille = (uint32_t)v;
    return true;
}

bool ml_pct_parse(const char *s, uint32_t *pct)
{
    uint32_t permille;
    if (!s || strchr(s, '.') || !ml_percent_parse(s, &permille))
        return false;
    *pct = permille / 10;
    return true;
}

/* Append v/100 as "I.FF". */
/* centi / 100 with two decimals and a suffix into out[n]. */
static const char *centi_s(char *out, size_t n, u128 centi, const char *suffix)
{
    uint64_t ip = (uint64_t)(centi / 100), fp = (uint64_t)(centi % 100);
    (void)snprintf(out, n, "%llu.%02llu%s", (unsigned long long)ip, (unsigned long long)fp, suffix);
    return out;
}

static u128 round_div(u128 num, u128 den)
{
    return (num + den / 2) / den;
}

const char *ml_fmt_gib_s(char *out, size_t n, uint64_t bytes)
{
    return centi_s(out, n, round_div((u128)bytes * 100, ML_GIB), " GiB");
}

const char *ml_fmt_gib_num_s(char *out, size_t n, uint64_t bytes)
{
    return centi_s(out, n, round_div((u128)bytes * 100, ML_GIB), "");
}

const char *ml_fmt_bytes_s(char *out, size_t n, uint64_t bytes)
{
    static const char *const names[] = {" KiB", " MiB", " GiB", " TiB", " PiB"};
    if (bytes < ML_KIB) {
        (void)snprintf(out, n, "%llu B", (unsigned long long)bytes);
        return out;
    }
    u128 unit = ML_KIB;
    int i = 0;
    /* Move up while the rounded value would reach 1024.00 of the current unit. */
    while (i < 4 && round_div((u128)bytes * 100, unit) >= (u128)1024 * 100) {
        unit *= 1024;
        i++;
    }
    return centi_s(out, n, round_div((u128)bytes * 100, unit), names[i]);
}

enum ml_status ml_fmt_gib(struct ml_buf *b, uint64_t bytes)
{
    char s[ML_FMT_MAX];
    return ml_buf_adds(b, ml_fmt_gib_s(s, sizeof(s), bytes));
}

enum ml_status ml_fmt_bytes(struct ml_buf *b, uint64_t bytes)
{
    char s[ML_FMT_MAX];
    return ml_buf_adds(b, ml_fmt_bytes_s(s, sizeof(s), bytes));
}

enum ml_status ml_fmt_count(struct ml_buf *b, uint64_t n)
{
    char digits[32];
    int len = 0;
    do {
        digits[len++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    char out[48];
    int o = 0;
    for (int i = len - 1; i >= 0; i--) {
        out[o++] = digits[i];
        if (i > 0 && i % 3 == 0)
            out[o++] = ',';
    }
    out[o] = '\0';
    return ml_buf_adds(b, out);
}

enum ml_status ml_fmt_count_short(struct ml_buf *b, uint64_t n)
{
    static const struct {
        uint64_t div;
        const char *suffix;
    } steps[] = {{1000000000000ull, "T"}, {1000000000ull, "B"}, {1000000ull, "M"}, {1000ull, "K"}};
    char s[ML_FMT_MAX];
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        if (n >= steps[i].div)
            return ml_buf_adds(b, centi_s(s, sizeof(s), round_div((u128)n * 100, steps[i].div), steps[i].suffix));
    return ml_buf_addf(b, "%llu", (unsigned long long)n);
}

const char *ml_fmt_percent_s(char *out, size_t n, uint64_t num, uint64_t den)
{
    if (den == 0) {
        (void)snprintf(out, n, "n/a");
        return out;
    }
    u128 t = round_div((u128)num * 1000, den);
    (void)snprintf(out, n, "%llu.%llu%%", (unsigned long long)(t / 10), (unsigned long long)(t % 10));
    return out;
}

enum ml_status ml_fmt_percent(struct ml_buf *b, uint64_t num, uint64_t den)
{
    char s[ML_FMT_MAX];
    return ml_buf_adds(b, ml_fmt_percent_s(s, sizeof(s), num, den));
}

const char *ml_fmt_knob(char *out, size_t n, uint64_t v)
{
    uint64_t m = v;
    int e = 0;
    while (m >= 10 && m % 10 == 0) {
        m /= 10;
        e++;
    }
    if (e >= 6 && m < 10)
        (void)snprintf(out, n, "%llue%d", (unsigned long long)m, e);
    else
        (void)snprintf(out, n, "%llu", (unsigned long long)v);
    return out;
}

bool ml_permille_parse(const char *s, uint32_t *out)
{
    const char *p = s;
    uint64_t v;
    if (!fixed_point(&p, 3, &v) || *p || v == 0 || v > 1000)
        return false;
    *out = (uint32_t)v;
    return true;
}

bool ml_duration_parse(const char *s, uint64_t *ns)
{
    uint64_t whole = 0, frac = 0, frac_div = 1;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > 100000000u)
            return false;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (frac_div < 1000000000u) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                frac_div *= 10;
            }
        }
    }
    uint64_t unit;
    if (!strcmp(p, "ms") || !*p)
        unit = 1000000u;
    else if (!strcmp(p, "s"))
        unit = 1000000000u;
    else if (!strcmp(p, "m") || !strcmp(p, "min"))
        unit = 60000000000u;
    else if (!strcmp(p, "h"))
        unit = 3600000000000u;
    else
        return false;
    u128 t = (u128)whole * unit + (u128)frac * unit / frac_div; /* "5124096h" passes 2^64 ns */
    *ns = t > UINT64_MAX ? UINT64_MAX : (uint64_t)t;
    return true;
}
