/*
 * catalog.c - lookups over the generated catalog table (catalog_data.c, built from data/models).
 */
#include "memledger/catalog.h"

#include <stdio.h>
#include <string.h>

/* Defined in the generated catalog_data.c. */
extern const struct ml_catalog_entry ml_catalog_table[];
extern const size_t ml_catalog_table_len;

size_t ml_catalog_count(void)
{
    return ml_catalog_table_len;
}

const struct ml_catalog_entry *ml_catalog_get(size_t i)
{
    return i < ml_catalog_table_len ? &ml_catalog_table[i] : NULL;
}

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

static int eq_nocase(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (lower((unsigned char)*a) != lower((unsigned char)*b))
            return 0;
    return *a == *b;
}

const struct ml_catalog_entry *ml_catalog_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < ml_catalog_table_len; i++) {
        const struct ml_catalog_entry *e = &ml_catalog_table[i];
        if (eq_nocase(name, e->name) || eq_nocase(name, e->hub_id))
            return e;
    }
    /* A hub id whose organisation differs ("someone/Qwen2.5-14B") still names the model. */
    const char *slash = strrchr(name, '/');
    if (slash && slash[1]) {
        for (size_t i = 0; i < ml_catalog_table_len; i++) {
            const char *hs = strrchr(ml_catalog_table[i].hub_id, '/');
            if (hs && eq_nocase(slash + 1, hs + 1))
                return &ml_catalog_table[i];
        }
    }
    return NULL;
}

size_t ml_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64)
        la = 64;
    if (lb > 64)
        lb = 64;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = lower((unsigned char)a[i - 1]) != lower((unsigned char)b[j - 1]);
            size_t best = prev[j - 1] + cost;
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            cur[j] = best;
        }
        memcpy(prev, cur, sizeof(prev));
    }
    return prev[lb];
}

size_t ml_catalog_suggest(const char *name, const struct ml_catalog_entry **out, size_t max)
{
    size_t n = 0;
    size_t best_d[16];
    if (max > 16)
        max = 16;
    /* Only plausible neighbours: within a third of the name's length (at least 2 edits). */
    size_t limit = strlen(name) / 3;
    if (limit < 2)
        limit = 2;
    for (size_t i = 0; i < ml_catalog_table_len && max; i++) {
        const struct ml_catalog_entry *e = &ml_catalog_table[i];
        size_t d = ml_edit_distance(name, e->name);
        const char *hs = strrchr(e->hub_id, '/');
        size_t dh = ml_edit_distance(name, hs ? hs + 1 : e->hub_id);
        if (dh < d)
            d = dh;
        if (d > limit)
            continue;
        /* Insertion into the sorted top-max list; ties keep catalog order. */
        size_t k = n;
        if (n < max)
            n++;
        else if (d >= best_d[max - 1])
            continue;
        else
            k = max - 1;
        while (k > 0 && best_d[k - 1] > d) {
            out[k] = out[k - 1];
            best_d[k] = best_d[k - 1];
            k--;
        }
        out[k] = e;
        best_d[k] = d;
    }
    return n;
}

enum ml_status ml_catalog_arch(const struct ml_catalog_entry *e, struct ml_arch *arch,
                               struct ml_diag *diag)
{
    char origin[96];
    (void)snprintf(origin, sizeof(origin), "<catalog:%s>", e->name);
    return ml_arch_from_json((const char *)e->config, e->config_len, origin, arch, diag);
}
