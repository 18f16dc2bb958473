/*
 * json_dup.h - the config readers' side of include/memledger/json_dup.h (cJSON types, private to
 * lib/), and a scanner over JSON text that cJSON has already accepted: positions, not values, for
 * the readers' line numbers and for the patch writer (lib/fit/patch.c).
 */
#ifndef ML_JSON_DUP_PRIVATE_H
#define ML_JSON_DUP_PRIVATE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "memledger/json_dup.h"

/* Make the tree parsed from data read as Python's json reads the text: in every object only the
 * last member of each name stays (the earlier ones are deleted). The duplicates found go to
 * out[0..max) (out may be NULL); returns how many there were. */
size_t ml_json_keep_last(cJSON *root, const char *data, size_t len, struct ml_json_dup *out, size_t max);

/* The scanner: i is a byte offset into s[0..n). */
size_t ml_jtext_ws(const char *s, size_t n, size_t i);                    /* past white space */
size_t ml_jtext_skip_string(const char *s, size_t n, size_t i);           /* past the string at i */
size_t ml_jtext_skip_value(const char *s, size_t n, size_t i);            /* past the value at i */
bool ml_jtext_key_is(const char *s, size_t n, size_t i, const char *key); /* the string at i spells key */

#endif /* ML_JSON_DUP_PRIVATE_H */
