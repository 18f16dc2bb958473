/*
 * arch_int.h - what the config readers share (private to lib/model): the reader on one config
 * object (struct ml_reader), the key readers of arch_keys.c, the pieces several family readers use
 * (arch_families.c) and the quantized-format reader (arch_quant.c). ml_arch_read (arch_read.c)
 * runs them; each failure is recorded once, with the file it came from, and reading goes on so a
 * config's first error is the one reported.
 */
#ifndef ML_ARCH_INT_H
#define ML_ARCH_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "family.h"

/* Upper bounds that catch absurd values before they reach the arithmetic. */
#define MAX_WIDTH     ((uint64_t)1 << 22) /* hidden / ffn widths: 4,194,304 */
#define MAX_VOCAB     ((uint64_t)1 << 25) /* 33,554,432 rows */
#define MAX_HEADS     65536u
#define MAX_EXPERTS   65536u
#define MAX_POSITIONS ((uint64_t)1 << 40)

struct ml_reader {
    const struct ml_cfg_ops *ops;
    const void *obj;    /* the config object */
    const char *origin; /* file name for diagnostics */
    struct ml_diag *diag;
    const char *type;                /* model_type, for messages */
    bool failed;                     /* a reader already recorded an error */
    const struct ml_family_def *fam; /* the row being read: its class defaults */
};

/* Records the reader's first failure (later ones are dropped) at its origin; returns st. */
enum ml_status ml_reader_fail(struct ml_reader *r, enum ml_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- one key (arch_keys.c) ---- */

/* The member key of the config into *v (ML_CFG_ABSENT if there is none). */
void ml_key_value(struct ml_reader *r, const char *key, struct ml_cfg_value *v);
/* An integer key, the first of names present (KEYS(...)): a whole number within [lo, hi];
 * required (absent: a failure) or with the default def. */
uint64_t ml_key_required(struct ml_reader *r, const char *const *names, uint64_t lo, uint64_t hi);
uint64_t ml_key_u64(struct ml_reader *r, const char *const *names, uint64_t def, uint64_t lo, uint64_t hi);
/* A size key: the class default def when absent, required where the row has none (def 0). */
uint64_t ml_key_size(struct ml_reader *r, const char *const *names, uint64_t def, uint64_t lo, uint64_t hi);
bool ml_key_bool(struct ml_reader *r, const char *key, bool def);
double ml_key_fraction(struct ml_reader *r, const char *key, double def); /* in [0, 1] */
const char *ml_key_str(struct ml_reader *r, const char *key);             /* NULL if absent or null */
bool ml_key_has(struct ml_reader *r, const char *key);                    /* present, null included */
/* The list at key, or NULL when absent or null; not a list fails with not_list (takes the key). */
const void *ml_key_list(struct ml_reader *r, const char *key, const char *not_list);
/* mlp_only_layers-style key: the listed layers keep a dense MLP. */
void ml_key_dense_layers(struct ml_reader *r, struct ml_arch *a, const char *key);
enum ml_dtype ml_dtype_parse(const char *s); /* "bfloat16", "fp16", ...; ML_DTYPE_UNKNOWN otherwise */

/* ---- nested objects (arch_keys.c) ---- */

/* A reader on the object under key; *present false (a reader on nothing) when there is none. */
struct ml_reader ml_reader_child(struct ml_reader *r, const char *key, bool *present);
/* A child's failure becomes its parent's. */
void ml_reader_merge(struct ml_reader *r, const struct ml_reader *c);
/* The language model's keys: text_config when nested, else the top level. */
struct ml_reader ml_reader_text(struct ml_reader *r);
/* tie_word_embeddings of a composite model: the text config's when it says, else the top's. */
bool ml_key_tie(struct ml_reader *top, struct ml_reader *t, bool def);

/* ---- what the readers set (arch_keys.c) ---- */

void ml_arch_set_moe_layer(struct ml_arch *a, uint32_t i, bool on);
/* Every interval-th layer (1-based) full attention, the others of kind k. */
void ml_arch_layer_pattern(struct ml_arch *a, uint64_t interval, enum ml_layer_attn k);

/* hidden / heads, or 0 when heads failed to parse (the failure is already recorded). */
static inline uint64_t per_head(uint64_t hidden, uint32_t heads)
{
    return heads ? hidden / heads : 0;
}

/* ---- pieces several families share (arch_families.c) ---- */

/* Sizes every decoder config names the same way (LlamaConfig and its descendants). */
void ml_read_llama_like(struct ml_reader *r, struct ml_arch *a);
/* Qwen-MoE style: every decoder_sparse_step-th layer is MoE except mlp_only_layers. */
void ml_read_qwen_moe(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a);

/* ---- the quantized format (arch_quant.c) ---- */

void ml_read_quant(struct ml_reader *top, struct ml_arch *a);

#endif /* ML_ARCH_INT_H */
