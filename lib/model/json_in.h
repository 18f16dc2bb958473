/*
 * json_in.h - opening a JSON document for the config mappers (private to lib/; cJSON types stay
 * out of the public headers).
 */
#ifndef ML_JSON_IN_H
#define ML_JSON_IN_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "memledger/status.h"

/*
 * Parse data as one JSON object of at most cap bytes. On success *out is the tree (the caller
 * frees it with cJSON_Delete). Errors, with line and column where there is one: ML_ERR_TOOBIG
 * (what names the kind of file: "config.json"), ML_ERR_PARSE for an empty file, a NUL byte,
 * malformed JSON, text after the object, or a top level that is not an object.
 */
enum ml_status ml_json_open_object(const char *data, size_t len, size_t cap, const char *what, const char *origin,
                                   cJSON **out, struct ml_diag *diag);

/* The member of obj under the first of names (NULL-terminated) present and not null, or NULL;
 * *which (if given) gets that name. NAMES("a", "b") writes such a list. */
const cJSON *ml_json_find(const cJSON *obj, const char *const *names, const char **which);
#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

#endif /* ML_JSON_IN_H */
