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
    case ML_VENDOR_AMD:    return "amd";
    case ML_VENDOR_HYGON:  return "hygon";
    case ML_VENDOR_HUAWEI: return "huawei";
    case ML_VENDOR_INTEL:  return "intel";
    case ML_VENDOR_UNKNOWN: break;
    }
    return "unknown";
}

/* Normalise a name for comparison: lowercase, '_' and ' ' as '-'. */
static void norm_name(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; *in && i + 1 < n; in++) {
        char c = *in;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c == '_' || c == ' ')
            c = '-';
        out[i++] = c;
    }
    out[i] = '\0';
}

static bool alias_match(const char *aliases, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = aliases; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char a[64];
        if (len < sizeof(a)) {
            memcpy(a, p, len);
            a[len] = '\0';
            char na[64];
            norm_name(a, na, sizeof(na));
            if (strlen(na) == klen && !memcmp(na, key, klen))
                return true;
        }
        p = end ? end + 1 : p + len;
    }
    return false;
}

const struct ml_gpu_spec *ml_gpu_find(const char *name)
{
    char key[64];
    if (!name || strlen(name) >= sizeof(key))
        return NULL;
    norm_name(name, key, sizeof(key));
    for (size_t i = 0; i < ml_gpu_table_len; i++)
        if (!strcmp(ml_gpu_table[i].name, key))
            return &ml_gpu_table[i];
    for (size_t i = 0; i < ml_gpu_table_len; i++)
        if (alias_match(ml_gpu_table[i].aliases, key))
            return &ml_gpu_table[i];
    return NULL;
}

uint64_t ml_gpu_spec_capacity(const struct ml_gpu_spec *s, bool *measured)
{
    if (s->reported_bytes) {
        *measured = true;
        return s->reported_bytes;
    }
    *measured = false;
    if ((s->vendor == ML_VENDOR_AMD || s->vendor == ML_VENDOR_HYGON) &&
        s->nominal_bytes > ROCM_RESERVED_BYTES)
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
            (void)snprintf(out->note, sizeof(out->note),
                           _("no measured capacity for %s; ROCm exposes nominal - 16 MiB on every known AMD/Hygon card"),
                           s->name);
        else
            (void)snprintf(out->note, sizeof(out->note),
                           _("no measured capacity for %s; using its nominal size, which the driver reduces"), s->name);
    }
}

/* Bare "<N>G": the card of that nominal size with the largest usable capacity, preferring cards
 * whose capacity is known (measured, or the ROCm rule that every measured AMD/Hygon card obeys)
 * over a bare nominal figure. */
static const struct ml_gpu_spec *largest_of_nominal(uint64_t nominal, size_t *n_cards)
{
    const struct ml_gpu_spec *best = NULL;
    uint64_t best_cap = 0;
    int best_rank = -1;
    *n_cards = 0;
    for (size_t i = 0; i < ml_gpu_table_len; i++) {
        const struct ml_gpu_spec *s = &ml_gpu_table[i];
        if (s->nominal_bytes != nominal)
            continue;
        bool m;
        uint64_t cap = ml_gpu_spec_capacity(s, &m);
        int rank = (m || cap != s->nominal_bytes) ? 1 : 0; /* measured or the ROCm rule */
        (*n_cards)++;
        if (rank > best_rank || (rank == best_rank && cap > best_cap)) {
            best = s;
            best_cap = cap;
            best_rank = rank;
        }
    }
    return best;
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
    if ((arg[0] >= '0' && arg[0] <= '9') || arg[0] == '.' || arg[0] == '-' || arg[0] == '+') {
        uint64_t bytes;
        enum ml_size_unit unit;
        enum ml_status st = ml_size_parse(arg, &bytes, &unit, diag);
        if (st != ML_OK)
            return st;
        if (bytes == 0)
            return ml_diag_set(diag, ML_ERR_INVALID, _("--gpu size '%s' is zero"), arg);
        if (bytes < ML_MIB)
            return ml_diag_set(diag, ML_ERR_INVALID, _("--gpu size '%s' is under 1 MiB; did you forget a unit (16G, 15.98GiB)?"), arg);
        (void)snprintf(out->name, sizeof(out->name), "%s", arg);
        out->nominal_bytes = bytes;
        out->capacity_bytes = bytes;
        out->capacity_measured = true;
        if (unit == ML_UNIT_BARE) {
            size_t n;
            const struct ml_gpu_spec *best = largest_of_nominal(bytes, &n);
            if (best) {
                bool m;
                out->capacity_bytes = ml_gpu_spec_capacity(best, &m);
                out->capacity_measured = m;
                struct ml_buf b;
                ml_buf_init(&b, 128);
                (void)ml_fmt_gib(&b, out->capacity_bytes);
                (void)snprintf(out->note, sizeof(out->note),
                               _("%s read as a card sold as that size: usable %s, the largest of %zu known such cards (%s); name the card or give e.g. 15.5GiB for another figure"),
                               arg, b.buf, n, best->name);
                ml_buf_release(&b);
            } else {
                out->capacity_measured = false;
                (void)snprintf(out->note, sizeof(out->note),
                               _("%s read as a card sold as that size; no known card has it, so the nominal size is used (drivers expose less)"),
                               arg);
            }
        }
        return ML_OK;
    }
    /* Unknown name: suggest close ones. */
    char key[64];
    norm_name(arg, key, sizeof(key));
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < ml_gpu_table_len; i++) {
        size_t d = ml_edit_distance(key, ml_gpu_table[i].name);
        if (d < best_d) {
            best_d = d;
            best = ml_gpu_table[i].name;
        }
    }
    if (best && best_d <= 3)
        return ml_diag_set(diag, ML_ERR_NOTFOUND, _("unknown GPU '%s'; did you mean '%s'? ('memledger gpus' lists them, or give a size such as 16G or 15.98GiB)"),
                           arg, best);
    return ml_diag_set(diag, ML_ERR_NOTFOUND, _("unknown GPU '%s' ('memledger gpus' lists them, or give a size such as 16G or 15.98GiB)"), arg);
}
