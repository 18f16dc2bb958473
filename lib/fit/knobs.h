/*
 * knobs.h - the knob table of knobs.c as the search in fit.c walks it (private to lib/fit).
 */
#ifndef ML_FIT_KNOBS_H
#define ML_FIT_KNOBS_H

#include "memledger/fit.h"

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
