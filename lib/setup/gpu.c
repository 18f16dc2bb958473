/*
 * gpu.c - GPU catalog lookups and --gpu resolution (see gpu.h for the unit rules).
 */
#include "memledger/gpu.h"

#include <stdio.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/units.h"
#include "i18n.h"

extern const struct ml_gpu_spec ml_gpu_table[];
extern const size_t ml_gpu_table_len;

/* ROCm exposes nominal - 16 MiB on every AMD/Hygon card with a known figure (data/gpus.md). */
#define ROCM_RESERVED_BYTES ((uint64_t)16 << 20)

size_t ml_gpu_catalog_count(void)
{
    return ml_gpu_table_len;
}

const struct ml_gpu_spec *ml_gpu_catalog_get(size_t i)
{
    return i < ml_gpu_table_len ? &ml_gpu_table[i] : NULL;
}

const char *ml_gpu_vendor_name(enum ml_gpu_vendor v)
{
    switch (v) {
    case ML_VENDOR_NVIDIA: return "nvidia";
    case ML_VENDOR_AMD: return "amd";
    case ML_VENDOR_HYGON: return "hygon";
    case ML_VENDOR_HUAWEI: return "huawei";
    case ML_VENDOR_INTEL: return "intel";
    case ML_VENDOR_UNKNOWN: break;
    }
    return "unknown";
}

/* Normalise a name for comparison: lowercase, '_' and ' ' as '-', then the vendor and brand words
 * the tools print before the model dropped: nvidia-smi's "NVIDIA GeForce RTX 4090", "Tesla T4",
 * rocm-smi's "AMD Instinct MI300X OAM", "Hygon K100_AI", "Huawei Ascend910B3" (data/gpus.md), the
 * form factor after an AMD product dropped too. With
 * compact, the '-' go too, so "RTX 4090", "Ascend910B3" and "rtx4090" meet. */
static void norm_name(const char *in, char *out, size_t n, bool compact)
{
    size_t i = 0;
    for (; *in && i + 1 < n; in++) {
        char c = *in;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c == '_' || c == ' ')
            c = '-';
        if (c == '-' && (i == 0 || out[i - 1] == '-'))
            continue; /* no leading or doubled separators */
        out[i++] = c;
    }
    while (i && out[i - 1] == '-')
        i--;
    out[i] = '\0';
    static const char *const prefixes[] = {"nvidia-", "amd-", "tesla-", "geforce-", "hygon-", "huawei-", "instinct-"};
    for (bool again = true; again;) {
        again = false;
        for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
            size_t l = strlen(prefixes[k]);
            if (!strncmp(out, prefixes[k], l) && out[l]) {
                memmove(out, out + l, strlen(out + l) + 1);
                again = true;
            }
        }
    }
    /* The form factor rocm-smi and amd-smi print after the product ("MI300X OAM", "MI300X VF"). */
    static const char *const suffixes[] = {"-oam", "-vf"};
    for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
        size_t l = strlen(suffixes[k]), len = strlen(out);
        if (len > l && !strcmp(out + len - l, suffixes[k]))
            out[len - l] = '\0';
    }
    if (compact) {
        char *w = out;
        for (const char *r = out; *r; r++)
            if (*r != '-')
                *w++ = *r;
        *w = '\0';
    }
}

static bool alias_match(const char *aliases, const char *key, bool compact)
{
    for (const char *p = aliases; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char a[64];
        if (len < sizeof(a)) {
            memcpy(a, p, len);
            a[len] = '\0';
            char na[64];
            norm_name(a, na, sizeof(na), compact);
            if (!strcmp(na, key))
                return true;
        }
        p = end ? end + 1 : p + len;
    }
    return false;
}

/* The row whose name or alias is name, as typed, as the tools print it, then without separators. */
static const struct ml_gpu_spec *find_name(const char *name)
{
    if (!name || strlen(name) >= 64)
        return NULL;
    for (int compact = 0; compact < 2; compact++) {
        char key[64], nm[64];
        norm_name(name, key, sizeof(key), compact);
        for (size_t i = 0; i < ml_gpu_table_len; i++) {
            norm_name(ml_gpu_table[i].name, nm, sizeof(nm), compact);
            if (!strcmp(nm, key))
                return &ml_gpu_table[i];
        }
        for (size_t i = 0; i < ml_gpu_table_len; i++)
            if (alias_match(ml_gpu_table[i].aliases, key, compact))
                return &ml_gpu_table[i];
    }
    return NULL;
}

/* Does s start with p, ignoring case? */
static bool starts_icase(const char *s, const char *p)
{
    for (; *p; s++, p++) {
        char a = *s, b = *p;
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (a != b)
            return false;
    }
    return true;
}

/* Where p (lowercase) first occurs in s, ignoring case; NULL if nowhere. */
static const char *find_icase(const char *s, const char *p)
{
    for (; *s; s++)
        if (starts_icase(s, p))
            return s;
    return NULL;
}

/* [b, e) without the blanks at either end, into out; false when that is empty or does not fit. */
static bool take(const char *b, const char *e, char *out, size_t n)
{
    while (b < e && (*b == ' ' || *b == '\t'))
        b++;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
        e--;
    if (e == b || (size_t)(e - b) >= n)
        return false;
    memcpy(out, b, (size_t)(e - b));
    out[e - b] = '\0';
    return true;
}

/* A rocm-smi card series holds the product in brackets on older ROCm ("Arcturus GL-XL [AMD
 * Instinct MI100]"). */
static bool series(const char *b, const char *e, char *out, size_t n)
{
    const char *o = memchr(b, '[', (size_t)(e - b)), *c = o ? memchr(o, ']', (size_t)(e - o)) : NULL;
    return c ? take(o + 1, c, out, n) : take(b, e, out, n);
}

/*
 * The card name one line of a vendor tool's output carries (docs/cli/gpus.md), so that a line
 * pasted as it was printed names its card:
 *   nvidia-smi -L                     "GPU 0: NVIDIA GeForce RTX 4090 D (UUID: GPU-...)"
 *   rocm-smi --showproductname        "GPU[0]  : Card Series:  AMD Instinct MI300X OAM"
 *   rocm-smi --showproductname --csv  "card0,Arcturus GL-XL [AMD Instinct MI100],0x0c34,..."
 *   npu-smi info                      "| 0     910B3               | OK            | 94.3 ..."
 * false when the line is none of these.
 */
static bool tool_line_name(const char *line, char *out, size_t n)
{
    const char *e = line + strlen(line), *p;
    if (starts_icase(line, "gpu ") && (p = strchr(line, ':')) != NULL) {
        const char *u = find_icase(p, " (uuid");
        return take(p + 1, u ? u : e, out, n);
    }
    if ((p = find_icase(line, "card series:")) != NULL)
        return series(p + strlen("card series:"), e, out, n);
    if (starts_icase(line, "card") && (p = strchr(line, ',')) != NULL) {
        const char *c = strchr(p + 1, ',');
        return series(p + 1, c ? c : e, out, n);
    }
    if (line[0] == '|') {
        p = line + 1 + strspn(line + 1, " ");
        size_t digits = strspn(p, "0123456789");
        const char *c = strchr(p, '|');
        return digits && p[digits] == ' ' && c && take(p + digits, c, out, n);
    }
    return false;
}

const struct ml_gpu_spec *ml_gpu_find(const char *name)
{
    const struct ml_gpu_spec *s = find_name(name);
    char printed[64];
    if (!s && name && tool_line_name(name, printed, sizeof(printed)))
        s = find_name(printed);
    return s;
}

uint64_t ml_gpu_spec_capacity(const struct ml_gpu_spec *s, bool *measured)
{
    if (s->reported_bytes) {
        *measured = true;
        return s->reported_bytes;
    }
    *measured = false;
    if ((s->vendor == ML_VENDOR_AMD || s->vendor == ML_VENDOR_HYGON) && s->nominal_bytes > ROCM_RESERVED_BYTES)
        return s->nominal_bytes - ROCM_RESERVED_BYTES;
    return s->nominal_bytes;
}

static void from_spec(const struct ml_gpu_spec *s, struct ml_gpu *out)
{
    (void)snprintf(out->name, sizeof(out->name), "%s", s->name);
    out->vendor = s->vendor;
    (void)snprintf(out->arch, sizeof(out->arch), "%s", s->arch);
    out->nominal_bytes = s->nominal_bytes;
    out->capacity_bytes = ml_gpu_spec_capacity(s, &out->capacity_measured);
    if (!out->capacity_measured) {
        if (out->capacity_bytes != s->nominal_bytes)
            (void)snprintf(
                out->note, sizeof(out->note),
                _("no measured capacity for %s; ROCm exposes nominal - 16 MiB on every known AMD/Hygon card"), s->name);
        else
            (void)snprintf(out->note, sizeof(out->note),
                           _("no measured capacity for %s; using its nominal size, which the driver reduces"), s->name);
    }
}

/* "A card sold as N GB": the card of that nominal size with the smallest usable capacity among
 * those whose capacity is known (measured, or the ROCm rule every measured AMD/Hygon card
 * obeys) - conservative, since the ledger answers "does it fit" - and the largest for the note. */
static const struct ml_gpu_spec *smallest_of_nominal(uint64_t nominal, size_t *n_cards,
                                                     const struct ml_gpu_spec **largest)
{
    const struct ml_gpu_spec *best = NULL;
    uint64_t best_cap = 0, top_cap = 0;
    *n_cards = 0;
    *largest = NULL;
    for (size_t i = 0; i < ml_gpu_table_len; i++) {
        const struct ml_gpu_spec *s = &ml_gpu_table[i];
        if (s->nominal_bytes != nominal)
            continue;
        bool m;
        uint64_t cap = ml_gpu_spec_capacity(s, &m);
        if (!m && cap == s->nominal_bytes)
            continue; /* a bare nominal figure says nothing about what a process gets */
        (*n_cards)++;
        if (!best || cap < best_cap) {
            best = s;
            best_cap = cap;
        }
        if (!*largest || cap > top_cap) {
            *largest = s;
            top_cap = cap;
        }
    }
    return best;
}

/* The marketed size a --gpu size names, or 0: "16G" (binary suffix) and "16GB" both mean a card
 * sold as 16 GB, stored as 16 GiB (gpus.md); a size that is not a whole number of GB is exact. */
static uint64_t sold_as(uint64_t bytes, enum ml_size_unit unit)
{
    if (unit == ML_UNIT_BARE && bytes % ML_GIB == 0)
        return bytes;
    if (unit == ML_UNIT_DECIMAL && bytes % 1000000000ull == 0)
        return bytes / 1000000000ull * ML_GIB;
    return 0;
}

/* A size: exact bytes, or a card sold as that size (the note says which card and why). */
static enum ml_status resolve_size(const char *arg, struct ml_gpu *out, struct ml_diag *diag)
{
    uint64_t bytes;
    enum ml_size_unit unit;
    enum ml_status st = ml_size_parse(arg, &bytes, &unit, diag);
    if (st != ML_OK)
        return st;
    if (bytes == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--gpu size '%s' is zero"), arg);
    if (bytes < ML_MIB)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("--gpu size '%s' is under 1 MiB; did you forget a unit (16G, 15.98GiB)?"), arg);
    (void)snprintf(out->name, sizeof(out->name), "%s", arg);
    out->nominal_bytes = out->capacity_bytes = bytes;
    out->capacity_measured = true;
    uint64_t nominal = sold_as(bytes, unit);
    if (!nominal)
        return ML_OK;
    out->nominal_bytes = out->capacity_bytes = nominal;
    size_t n;
    const struct ml_gpu_spec *top, *best = smallest_of_nominal(nominal, &n, &top);
    if (!best) {
        out->capacity_measured = false;
        (void)snprintf(out->note, sizeof(out->note),
                       _("%s read as a card sold as that size; no known card has it, so the nominal size is used "
                         "(drivers expose less)"),
                       arg);
        return ML_OK;
    }
    bool m;
    out->capacity_bytes = ml_gpu_spec_capacity(best, &m);
    out->capacity_measured = m;
    char lo[ML_FMT_MAX], hi[ML_FMT_MAX];
    bool tm;
    (void)ml_fmt_gib_s(lo, sizeof(lo), out->capacity_bytes);
    (void)ml_fmt_gib_s(hi, sizeof(hi), ml_gpu_spec_capacity(top, &tm));
    if (n > 1)
        (void)snprintf(out->note, sizeof(out->note),
                       _("%s read as a card sold as that size: usable %s, the smallest of %zu such cards (%s; %s has "
                         "%s); name the card for its own figure"),
                       arg, lo, n, best->name, top->name, hi);
    else
        (void)snprintf(out->note, sizeof(out->note), _("%s read as a card sold as that size: usable %s (%s)"), arg, lo,
                       best->name);
    return ML_OK;
}

enum ml_status ml_gpu_resolve(const char *arg, struct ml_gpu *out, struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    if (!arg || !*arg)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--gpu needs a card name or a size"));
    const struct ml_gpu_spec *s = ml_gpu_find(arg);
    if (s) {
        from_spec(s, out);
        return ML_OK;
    }
    /* Unknown name: the three nearest rows, each by the nearest of its name and aliases as the
     * tools print them (the model lookup's near-miss code), from the name a tool line carries. */
    char printed[64], key[64], one[64], nm[64];
    if (!tool_line_name(arg, printed, sizeof(printed)))
        (void)snprintf(printed, sizeof(printed), "%s", arg);
    norm_name(printed, key, sizeof(key), true);
    struct ml_near near = {{0}, {0}, 0};
    size_t limit = ml_near_limit(key);
    for (size_t i = 0; i < ml_gpu_table_len; i++) {
        norm_name(ml_gpu_table[i].name, nm, sizeof(nm), true);
        size_t best = ml_edit_distance(key, nm);
        for (const char *a = ml_gpu_table[i].aliases; *a;) {
            size_t len = strcspn(a, ",");
            (void)snprintf(one, sizeof(one), "%.*s", (int)len, a);
            norm_name(one, nm, sizeof(nm), true);
            size_t d = ml_edit_distance(key, nm);
            best = d < best ? d : best;
            a += len + (a[len] == ',');
        }
        ml_near_insert(&near, ml_gpu_table[i].name, best, limit);
    }
    /* A leading digit is a size ("16G"), unless it is no size and names something near a card
     * ("4090D" before the catalog had it). */
    if ((arg[0] >= '0' && arg[0] <= '9') || arg[0] == '.' || arg[0] == '-' || arg[0] == '+') {
        enum ml_status st = resolve_size(arg, out, diag);
        if (st != ML_ERR_PARSE || !near.n)
            return st;
        memset(out, 0, sizeof(*out));
    }
    char list[160];
    ml_near_list(&near, list, sizeof(list));
    if (near.n)
        return ml_diag_set(diag, ML_ERR_NOTFOUND,
                           _("unknown GPU '%s'; did you mean %s? ('memledger gpus' lists them, or give a size such as "
                             "16G or 15.98GiB)"),
                           arg, list);
    return ml_diag_set(diag, ML_ERR_NOTFOUND,
                       _("unknown GPU '%s' ('memledger gpus' lists them, or give a size such as 16G or 15.98GiB)"),
                       arg);
}
