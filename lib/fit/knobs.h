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

#endif /* ML_FIT_KNOBS_H */
