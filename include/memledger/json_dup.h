/*
 * json_dup.h - duplicated keys in a JSON document, read as Python's json reads it: the last value
 * of a key is the one in force (json.loads builds a dict; a later key replaces the earlier value).
 * transformers reads config.json so (PretrainedConfig._dict_from_json_file), and accelerate's
 * HfDeepSpeedConfig the DeepSpeed JSON; DeepSpeed's own DeepSpeedConfig, given a file path,
 * rejects duplicates (runtime/config_utils.py dict_raise_error_on_duplicate_keys), but under the
 * HF Trainer it receives the already-loaded dict. The config readers keep the last value
 * (lib/model/json_dup.h); callers warn with both lines.
 */
#ifndef ML_JSON_DUP_H
#define ML_JSON_DUP_H

#include <stddef.h>
#include <stdint.h>

struct ml_json_dup {
    char key[96];        /* the key with its parents: "zero_optimization.stage" */
    uint32_t first_line; /* 1-based line of its first occurrence */
    uint32_t last_line;  /* line of the last one, the value in force */
};

/* The duplicated keys of the JSON text (a key of a value that is itself dropped as a duplicate
 * does not count), at most max of them in out; returns how many there are. 0 when the text is not
 * JSON (the readers report that). */
size_t ml_json_duplicates(const char *data, size_t len, struct ml_json_dup *out, size_t max);

#endif /* ML_JSON_DUP_H */
