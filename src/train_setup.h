/*
 * train_setup.h - the training options that `train` and `compare` share: parsing them, reading
 * the LLaMA-Factory YAML and DeepSpeed JSON, resolving the model and the GPU, and computing the
 * ledger: the options here, the work in the library (memledger/run.h).
 */
#ifndef ML_TRAIN_SETUP_H
#define ML_TRAIN_SETUP_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "memledger/run.h"

/* getopt_long ids of the shared options; a command's own ids start at ML_TO_END. */
enum {
    ML_TO_CONFIG = 256,
    ML_TO_DS,
    ML_TO_SET,
    ML_TO_FW,
    ML_TO_GPU,
    ML_TO_NGPU,
    ML_TO_NODES,
    ML_TO_HOSTRAM,
    ML_TO_METHOD,
    ML_TO_RANK,
    ML_TO_TARGET,
    ML_TO_QBITS,
    ML_TO_BATCH,
    ML_TO_SEQ,
    ML_TO_GA,
    ML_TO_EVAL,
    ML_TO_DTYPE,
    ML_TO_OPTIM,
    ML_TO_GC,
    ML_TO_ATTN,
    ML_TO_ZERO,
    ML_TO_OFFLOAD,
    ML_TO_FSDP,
    ML_TO_EXPSEG,
    ML_TO_TFV,
    ML_TO_DSV,
    ML_TO_TORCHV,
    ML_TO_RUNDIR,
    ML_TO_ACCEL,
    ML_TO_LF,
    ML_TO_END
};

/* The rows of a command's struct option table for the shared options. */
#define ML_TRAIN_LONGOPTS                                                                                              \
    {"config", required_argument, NULL, ML_TO_CONFIG}, {"deepspeed", required_argument, NULL, ML_TO_DS},               \
        {"set", required_argument, NULL, ML_TO_SET}, {"framework", required_argument, NULL, ML_TO_FW},                 \
        {"gpu", required_argument, NULL, ML_TO_GPU}, {"num-gpus", required_argument, NULL, ML_TO_NGPU},                \
        {"nodes", required_argument, NULL, ML_TO_NODES}, {"host-ram", required_argument, NULL, ML_TO_HOSTRAM},         \
        {"method", required_argument, NULL, ML_TO_METHOD}, {"lora-rank", required_argument, NULL, ML_TO_RANK},         \
        {"lora-target", required_argument, NULL, ML_TO_TARGET}, {"quant-bits", required_argument, NULL, ML_TO_QBITS},  \
        {"batch", required_argument, NULL, ML_TO_BATCH}, {"seq", required_argument, NULL, ML_TO_SEQ},                  \
        {"grad-accum", required_argument, NULL, ML_TO_GA}, {"eval", no_argument, NULL, ML_TO_EVAL},                    \
        {"dtype", required_argument, NULL, ML_TO_DTYPE}, {"optim", required_argument, NULL, ML_TO_OPTIM},              \
        {"grad-ckpt", required_argument, NULL, ML_TO_GC}, {"attn", required_argument, NULL, ML_TO_ATTN},               \
        {"zero", required_argument, NULL, ML_TO_ZERO}, {"offload", required_argument, NULL, ML_TO_OFFLOAD},            \
        {"fsdp", required_argument, NULL, ML_TO_FSDP}, {"expandable-segments", no_argument, NULL, ML_TO_EXPSEG},       \
        {"transformers-version", required_argument, NULL, ML_TO_TFV},                                                  \
        {"deepspeed-version", required_argument, NULL, ML_TO_DSV},                                                     \
        {"torch-version", required_argument, NULL, ML_TO_TORCHV}, {"run-dir", required_argument, NULL, ML_TO_RUNDIR},  \
        {"accelerate", required_argument, NULL, ML_TO_ACCEL},                                                          \
    {                                                                                                                  \
        "lf", required_argument, NULL, ML_TO_LF                                                                        \
    }

void ml_train_opts_init(struct ml_train_opts *o, const char *cmd);

/*
 * Take one getopt_long result. Returns 1 if c was a shared option (stored), 0 if it is not one
 * of them, -1 on a bad value (the usage error is printed).
 */
int ml_train_opt(struct ml_train_opts *o, int c, const char *arg);

/* ml_run_build, ml_run_read and ml_run_ds_resolve (run.h) over the command line's host:
 * ML_EXIT_USAGE after the error is printed, else ML_EXIT_OK; true / false. */
int ml_train_setup_build(const struct ml_train_opts *o, struct ml_train_setup *s);

bool ml_train_read(const struct ml_train_files *f, struct ml_train *t, struct ml_train_read *rd);

/* ml_train_read for callers that need only the model and the DeepSpeed path. */
bool ml_train_read_configs(const char *config, const char *cli_ds, const char *const *sets, int n_sets,
                           struct ml_train *t, char *model, size_t model_n, char *ds_path, size_t ds_n);

bool ml_train_ds_resolve(const struct ml_train_files *f, struct ml_train_read *rd);

#endif /* ML_TRAIN_SETUP_H */
