/*
 * yaml_walk.h - the training YAML's reader offered to the other LLaMA-Factory configs of
 * lib/setup (private to lib/setup): the same libyaml event reader, limits and errors as
 * train_yaml.c (4 MiB, no NUL bytes, no anchors or aliases, 32 levels, duplicate keys, a key glued
 * to its value), and LLaMA-Factory's key table for the "did you mean" of an unknown key.
 */
#ifndef ML_YAML_WALK_H
#define ML_YAML_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/status.h"

/*
 * One top-level entry: key, its value as text (a list of scalars joined with ','), is_null for a
 * plain YAML null. A mapping value comes as one call per scalar sub-key, key "name.sub" (deeper
 * values skipped). Return ML_OK to go on; an error set in diag stops the walk (the walker adds the
 * file, line and column of the value).
 */
typedef enum ml_status (*ml_yaml_entry_fn)(void *arg, const char *key, const char *val, bool is_null,
                                           struct ml_diag *diag);

/* Walk the top-level mapping of data[0..len) (origin names it in errors). */
enum ml_status ml_yaml_walk(const char *data, size_t len, const char *origin, ml_yaml_entry_fn fn, void *arg,
                            struct ml_diag *diag);

/* Is key a key of LLaMA-Factory's (v0) argument dataclasses as the training table knows them? */
bool ml_lf_key_known(const char *key);

/* The training table's key nearest to an unknown one (NULL: none near). */
const char *ml_lf_key_near(const char *key);

#endif /* ML_YAML_WALK_H */
