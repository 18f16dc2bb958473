/*
 * edit.h - near misses: the edit distance behind every "did you mean" (GPU names, model names,
 * commands, configuration keys) and the list of the nearest names.
 */
#ifndef ML_EDIT_H
#define ML_EDIT_H

#include <stddef.h>

/* Edit distance between a and b, case-insensitive (capped at 64 characters each): insertions,
 * deletions, substitutions and transpositions of neighbours (optimal string alignment). */
size_t ml_edit_distance(const char *a, const char *b);

/*
 * The nearest names to a key, for "did you mean": offer each candidate with ml_near_offer; the
 * closest ML_NEAR_MAX within the limit are kept, ties in offer order. Shared by the model and
 * GPU lookups.
 */
#define ML_NEAR_MAX 3
struct ml_near {
    const char *name[ML_NEAR_MAX];
    size_t dist[ML_NEAR_MAX];
    size_t n;
};

/* A limit proportionate to the key: a third of its length, at least 2 edits. */
size_t ml_near_limit(const char *key);

void ml_near_offer(struct ml_near *near, const char *key, const char *candidate, size_t limit);

/* Keep candidate at a distance d already known if it is among the nearest within limit. */
void ml_near_insert(struct ml_near *near, const char *candidate, size_t d, size_t limit);

/* "'a', 'b' or 'c'" into out (NUL-terminated, cut at cap); "" when near has none. */
void ml_near_list(const struct ml_near *near, char *out, size_t cap);

#endif /* ML_EDIT_H */
