/*
 * train_compile.h - torch.compile's saved set (train_compile.c; docs/ledger.md "torch.compile").
 */
#ifndef ML_TRAIN_COMPILE_H
#define ML_TRAIN_COMPILE_H

#include "train_int.h"

/* Bytes per token one decoder layer saves under torch.compile; 0 where the compiled set was not
 * measured and the eager set stands. */
uint64_t ml_compile_layer_bytes(struct run *R, bool moe_layer);

/* The interval's reason to widen under torch.compile (NULL when it is off). */
const char *ml_compile_widen(const struct run *R);

#endif
