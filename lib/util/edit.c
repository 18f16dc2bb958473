/*
 * edit.c - the edit distance and nearest names of "did you mean" messages (see edit.h); moved
 * here from lib/model/catalog.c so that the configuration readers share them.
 */
#include "memledger/edit.h"

#include <stdio.h>
#include <string.h>

static int lower(int ch)
{
    return (ch >= 'A' && ch <= 'Z') ? ch - 'A' + 'a' : ch;
}

size_t ml_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64)
        la = 64;
    if (lb > 64)
        lb = 64;
    /* Optimal string alignment: three rows (the one before last for transpositions). */
    size_t pp[65], prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = pp[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            int ca = lower((unsigned char)a[i - 1]), cb = lower((unsigned char)b[j - 1]);
            size_t best = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == lower((unsigned char)b[j - 2]) && lower((unsigned char)a[i - 2]) == cb &&
                pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1;
            cur[j] = best;
        }
        memcpy(pp, prev, sizeof(pp));
        memcpy(prev, cur, sizeof(prev));
    }
    return prev[lb];
}

size_t ml_near_limit(const char *key)
{
    size_t limit = strlen(key) / 3;
    return limit < 2 ? 2 : limit;
}

void ml_near_insert(struct ml_near *near, const char *candidate, size_t d, size_t limit)
{
    if (d > limit)
        return;
    for (size_t i = 0; i < near->n; i++)
        if (!strcmp(near->name[i], candidate))
            return;
    /* Insertion into the sorted list; ties keep offer order. */
    size_t k = near->n;
    if (near->n < ML_NEAR_MAX)
        near->n++;
    else if (d >= near->dist[ML_NEAR_MAX - 1])
        return;
    else
        k = ML_NEAR_MAX - 1;
    while (k > 0 && near->dist[k - 1] > d) {
        near->name[k] = near->name[k - 1];
        near->dist[k] = near->dist[k - 1];
        k--;
    }
    near->name[k] = candidate;
    near->dist[k] = d;
}

void ml_near_offer(struct ml_near *near, const char *key, const char *candidate, size_t limit)
{
    ml_near_insert(near, candidate, ml_edit_distance(key, candidate), limit);
}

void ml_near_list(const struct ml_near *near, char *out, size_t cap)
{
    if (!cap)
        return;
    out[0] = '\0';
    size_t len = 0;
    for (size_t i = 0; i < near->n && len < cap; i++) {
        const char *sep = i == 0 ? "" : i + 1 == near->n ? " or " : ", ";
        int w = snprintf(out + len, cap - len, "%s'%s'", sep, near->name[i]);
        len += w > 0 ? (size_t)w : 0;
    }
}
