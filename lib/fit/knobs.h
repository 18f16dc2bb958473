/*
 * knobs.h - the knob table of knobs.c as the search in fit.c walks it (private to lib/fit).
 */
#ifndef ML_FIT_KNOBS_H
#define ML_FIT_KNOBS_H

#include "memledger/fit.h"

/* How a setting's value is written. */
enum vkind {
    V_TEXT,   /* the change's own text (an enum name: sdpa, adamw_bnb_8bit, fp8) */
    V_COUNT,  /* an integer */
    V_BOOL,   /* true / false */
    V_NOT,    /* true / false, inverted in LLaMA-Factory (disable_gradient_checkpointing) */
    V_SIZE,   /* a DeepSpeed size: an integer written 5e7, or "auto" */
    V_DEVICE, /* a DeepSpeed offload block: written as its device */
    V_STAGE,  /* a ZeRO stage: a DeepSpeed config in the YAML, the number in the JSON */
    V_SHARE,  /* a fraction of the GPU, permille, written with two decimals */
    V_FLAG    /* a switch without a value (--enable-chunked-prefill) */
};

/* One setting: where it is written and its name in each dialect (NULL: none). */
struct ml_knob_setting {
    enum ml_where where;
    enum vkind kind;
    const char *name[ML_DIALECT_COUNT];
};

/* Every setting, indexed by enum ml_setting (knob_settings.c). */
extern const struct ml_knob_setting ml_settings[ML_SET_COUNT];

/* The spelling of value in dialect d; NULL where d spells only some values and value is not one
 * of them. */
const char *ml_setting_spelled(enum ml_setting s, enum ml_dialect d, const char *value);

/* Whether dialect d can write value v (as given, or already in d's own spelling). */
bool ml_setting_spellable(enum ml_setting s, enum ml_dialect d, const char *v);

/* The dialect a change's key is written in (what fit patches): the run's trainer for YAML. */
enum ml_dialect ml_file_dialect(enum ml_where w, const struct ml_train *t);

/* Every row, indexed by enum ml_knob_id. */
extern const struct ml_knob ml_knob_table[ML_KNOB_COUNT];

/* The rows ml_fit_train searches: ids 0 .. ML_KNOB_TRAIN_SEARCHED - 1. */
#define ML_KNOB_TRAIN_SEARCHED (ML_KNOB_GPUS_2 + 1)

/* The rows ml_fit_infer searches: every subset of ML_KNOB_GPU_UTIL .. ML_KNOB_MAX_NUM_SEQS,
 * each alone and then with ML_KNOB_MAX_MODEL_LEN set from its ledger. */
#define ML_KNOB_SERVE_FIRST    ML_KNOB_GPU_UTIL
#define ML_KNOB_SERVE_SEARCHED (ML_KNOB_MAX_NUM_SEQS - ML_KNOB_GPU_UTIL + 1)

/* Whether engine knob k can be written in engine dialect d (ml_engine_dialect): one of the settings
 * it changes, applied to an engine's defaults, or its hint, has d's flag (fix_rows.c). */
bool ml_engine_knob_has_key(const struct ml_knob *k, enum ml_dialect d);

/* Knob k applied once outside a search, to see which settings it changes (its keys in a dialect):
 * forced, up to 8 GPUs a node, to t / c (training) or s (an engine); the changes in ch[0 .. *n)
 * (ML_FIT_MAX_CHANGES). False when it does not apply. */
bool ml_knob_probe(const struct ml_knob *k, struct ml_train *t, struct ml_cluster *c, struct ml_infer *s,
                   struct ml_change *ch, uint32_t *n);

#endif /* ML_FIT_KNOBS_H */
