/*
 * yaml_text.h - what a YAML parser cannot say about a hand-pasted config (private to lib/setup):
 * a key glued to its value (`cutoff_len:1024`, which YAML reads as one word), and a config whose
 * line breaks were lost (`model_name_or_path: x template: alpaca cutoff_len: 1024`). Pure text
 * scanning; train_yaml.c decides what is a known key.
 */
#ifndef ML_YAML_TEXT_H
#define ML_YAML_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/status.h"

/* Is key a top-level key of the file's schema? */
typedef bool (*ml_key_known_fn)(const char *key, void *arg);

struct ml_yaml_restore {
    char *buf; /* malloc'ed text with one key per line (NULL: nothing restored) */
    size_t len;
    uint32_t *line_of; /* line i of buf (0-based) comes from line line_of[i] (1-based) */
    uint32_t n_lines;
    uint32_t line;    /* the first line that held several keys (0: none) */
    uint32_t n_keys;  /* the keys found on such lines */
    char blocker[64]; /* a key-like word no table knows, which stopped the restore */
    uint32_t blocker_line;
};

/*
 * Find lines (starting with a key in column 1) that hold further `key:` words outside quotes
 * and comments, at least one of them known. When every such word is a known key, out->buf holds
 * the text with each key on its own line (a glued `key:value` written `key: value`); when one is
 * not, out->blocker names it and nothing is restored. ML_ERR_NOMEM when a buffer cannot be had.
 */
enum ml_status ml_yaml_restore_breaks(const char *data, size_t len, ml_key_known_fn known, void *arg,
                                      struct ml_yaml_restore *out);

void ml_yaml_restore_release(struct ml_yaml_restore *r);

/*
 * The first line at or before line upto (1-based) that starts with a key glued to its value
 * (`cutoff_len:1024`): returns its number and fills word (the glued word) and key; 0 if none.
 */
uint32_t ml_yaml_glued_key(const char *data, size_t len, uint32_t upto, char *word, size_t word_n, char *key,
                           size_t key_n);

#endif /* ML_YAML_TEXT_H */
