/*
 * train_setup.h - the training options that `train`, `compare`, `fit` and `diagnose` share: parsing them, reading
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
#include "memledger/settings.h"

/* The shared options that take a string and are inputs rather than settings, one row each: the
 * long name and the member of struct ml_train_opts (memledger/run.h) it is stored in, as given.
 * The settings' flags are the rows of ML_SETTINGS (memledger/settings.h). */
#define ML_TRAIN_INPUT_OPTS(X)                                                                                         \
    X("config", config)                                                                                                \
    X("deepspeed", deepspeed)                                                                                          \
    X("gpu", gpu)                                                                                                      \
    X("host-ram", host_ram)                                                                                            \
    X("run-dir", run_dir)                                                                                              \
    X("accelerate", accelerate)                                                                                        \
    X("lf", lf_line)

/* getopt_long ids of the shared options; a command's own ids start at ML_TO_END. */
#define ML_TO_ID(name, field)                          ML_TO_##field,
#define ML_TO_SETTING_ID(id, track, name, field, ...)  ML_TO_ID(name, field)
#define ML_TO_ROW(name, field)                         {name, required_argument, NULL, ML_TO_##field},
#define ML_TO_SETTING_ROW(id, track, name, field, ...) ML_TO_ROW(name, field)
enum {
    ML_TO_FIRST = 255,
    ML_TRAIN_INPUT_OPTS(ML_TO_ID) ML_SETTINGS(ML_TO_SETTING_ID) ML_TO_SET,
    ML_TO_FW,
    ML_TO_NGPU,
    ML_TO_NODES,
    ML_TO_EVAL,
    ML_TO_EXPSEG,
    ML_TO_END
};

/* The rows of a command's struct option table for the shared options. */
#define ML_TRAIN_LONGOPTS                                                                                              \
    ML_TRAIN_INPUT_OPTS(ML_TO_ROW)                                                                                     \
    ML_SETTINGS(ML_TO_SETTING_ROW){"set", required_argument, NULL, ML_TO_SET},                                         \
        {"framework", required_argument, NULL, ML_TO_FW}, {"num-gpus", required_argument, NULL, ML_TO_NGPU},           \
        {"nodes", required_argument, NULL, ML_TO_NODES}, {"eval", no_argument, NULL, ML_TO_EVAL},                      \
    {                                                                                                                  \
        "expandable-segments", no_argument, NULL, ML_TO_EXPSEG                                                         \
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
