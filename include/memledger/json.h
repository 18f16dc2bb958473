/*
 * json.h - our own JSON writer: exact integers, stable key order, two-space indent.
 *
 * Parsing goes through cJSON inside lib/; output never does (cJSON's printer saturates
 * integers and changes float formats between releases, which would tie golden files to one
 * cJSON version). Keys are written in the order the caller emits them. The writer records
 * the first failure (NOMEM, TOOBIG) and ignores later calls, so callers check once at the end.
 */
#ifndef ML_JSON_H
#define ML_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include "memledger/buf.h"

#define ML_JSON_MAX_DEPTH 32

struct ml_json {
    struct ml_buf *out;            /* borrowed; the caller owns and releases it */
    enum ml_status status;         /* first failure, ML_OK while all went well */
    int depth;                     /* current nesting depth */
    bool first[ML_JSON_MAX_DEPTH]; /* no element written yet at this depth */
    bool after_key;                /* a key was just written; the value follows */
};

/* The schema id every JSON document memledger writes carries as its first key (docs/json.md);
 * the number goes up on an incompatible change. */
#define ML_JSON_SCHEMA "memledger/1"

/* Start writing into out (appends; does not reset it). */
void ml_json_init(struct ml_json *j, struct ml_buf *out);

/* Open a document: the top-level object, its first key "schema": ML_JSON_SCHEMA. */
void ml_json_document_begin(struct ml_json *j);

void ml_json_object_begin(struct ml_json *j);
void ml_json_object_end(struct ml_json *j);
void ml_json_array_begin(struct ml_json *j);
void ml_json_array_end(struct ml_json *j);

/* Write a key inside an object; the next call writes its value. */
void ml_json_key(struct ml_json *j, const char *key);

void ml_json_str(struct ml_json *j, const char *s); /* NULL writes null */
void ml_json_u64(struct ml_json *j, uint64_t v);
void ml_json_i64(struct ml_json *j, int64_t v);
void ml_json_bool(struct ml_json *j, bool v);
void ml_json_null(struct ml_json *j);
/* A fixed-point number num/10^decimals written exactly ("0.9", "15.98"). */
void ml_json_fixed(struct ml_json *j, uint64_t num, unsigned decimals);

/* A number already formatted as JSON text (e.g. "0.95", "1e-05"); the caller guarantees it. */
void ml_json_number_text(struct ml_json *j, const char *text);

/* Shorthands: key then value. */
void ml_json_kstr(struct ml_json *j, const char *key, const char *s);
void ml_json_ku64(struct ml_json *j, const char *key, uint64_t v);
void ml_json_kbool(struct ml_json *j, const char *key, bool v);

/* Finish: appends the final newline at depth 0 and returns the first failure, if any. */
enum ml_status ml_json_finish(struct ml_json *j);

#endif /* ML_JSON_H */
