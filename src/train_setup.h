/*
 * train_setup.h - the training options that `train` and `compare` share: parsing them, reading
 * the LLaMA-Factory YAML and DeepSpeed JSON, resolving the model and the GPU, and computing the
 * ledger. CLI code (prints its errors), not a library.
 */
#ifndef ML_TRAIN_SETUP_H
#define ML_TRAIN_SETUP_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/train.h"

#define ML_TRAIN_MAX_SETS 32

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

/* The shared options as given (strings borrowed from argv; NULL = not given). */
struct ml_train_opts {
    const char *cmd; /* "train", "compare": named in usage errors */
    const char *model, *config, *deepspeed, *gpu, *host_ram;
    const char *run_dir;        /* --run-dir: where the framework runs (NULL = here) */
    const char *accelerate;     /* --accelerate FILE: an accelerate config */
    const char *const *lf_argv; /* `train ... -- llamafactory-cli train ...` */
    int lf_argc;                /* 0: none */
    const char *lf_line;        /* --lf "COMMAND LINE" (split in ml_train_setup_build) */
    const char *sets[ML_TRAIN_MAX_SETS];
    int n_sets;
    enum ml_framework fw;
    /* Flag overrides, applied after the files. */
    const char *method, *rank, *target, *qbits, *batch, *seq, *ga, *dtype, *optim, *gc, *attn, *zero, *offload, *fsdp,
        *tfv, *dsv, *torchv;
    bool eval, expseg;
    uint64_t num_gpus, nodes;     /* default 1 */
    bool num_gpus_set, nodes_set; /* given on the command line */
};

/* How the DeepSpeed file of a run was found (ml_train_read). */
enum ml_ds_how {
    ML_DS_NONE,       /* no DeepSpeed file */
    ML_DS_FLAG,       /* --deepspeed, as given */
    ML_DS_RUN_DIR,    /* the YAML's deepspeed: from the run directory, as LLaMA-Factory does */
    ML_DS_BESIDE_YAML /* not in the run directory; the file beside the YAML (warned) */
};

/* The shared config inputs of train, fit, compare and diagnose. */
struct ml_train_files {
    const char *config, *deepspeed, *run_dir; /* as given; run_dir NULL = the working directory */
    const char *const *sets;
    int n_sets;
    const struct ml_train_override *ov; /* a LLaMA-Factory command line's overrides (NULL none) */
    size_t n_ov;
};

/* What ml_train_read read, and where each setting came from. */
struct ml_train_read {
    char model[512];    /* the YAML's model_name_or_path ("" none) */
    char yaml_ds[512];  /* the YAML's deepspeed: as written ("" none) */
    char ds_path[1024]; /* the DeepSpeed file read ("" none) */
    enum ml_ds_how ds_how;
    /* The settings after each input, for which one won (ml_train_setup_build). */
    struct ml_train defaults, after_yaml, after_ds, after_sets;
    struct ml_train alt_yaml, alt_ds; /* the files over perturbed defaults: what they set */
    bool have_alt;
    int8_t set_of[ML_TK_COUNT]; /* per tracked setting: the last --set that changed it, -1 none */
};

/* Everything the ledger needs, and the ledger. Large: keep it static. */
struct ml_train_setup {
    char ds_path[1024]; /* the DeepSpeed file read ("" if none): fit patches it */
    struct ml_train_read rd;
    struct ml_model_ref m;
    struct ml_train t;
    struct ml_warnings warnings; /* t.warnings points here */
    struct ml_cluster cl;
    struct ml_inventory inv;
    struct ml_ledger l;
    char *lf_buf; /* --lf's words (kept: the options point into them) */
    const char **lf_words;
    struct ml_train_override *lf_ov; /* the command line's overrides (into argv or lf_buf) */
    size_t lf_n_ov;
};

void ml_train_opts_init(struct ml_train_opts *o, const char *cmd);

/*
 * Take one getopt_long result. Returns 1 if c was a shared option (stored), 0 if it is not one
 * of them, -1 on a bad value (the usage error is printed).
 */
int ml_train_opt(struct ml_train_opts *o, int c, const char *arg);

/*
 * Read the files, apply --set and the flags, resolve the model and the GPU, build the inventory
 * and the ledger. Prints the error and returns ML_EXIT_USAGE on failure; ML_EXIT_OK otherwise.
 */
int ml_train_setup_build(const struct ml_train_opts *o, struct ml_train_setup *s);

/* Read the run's files over *t (its defaults already set): the YAML, the DeepSpeed JSON
 * (ml_train_ds_resolve), then each --set. Prints the first error and returns false. */
bool ml_train_read(const struct ml_train_files *f, struct ml_train *t, struct ml_train_read *rd);

/* ml_train_read for callers that need only the model and the DeepSpeed path. */
bool ml_train_read_configs(const char *config, const char *cli_ds, const char *const *sets, int n_sets,
                           struct ml_train *t, char *model, size_t model_n, char *ds_path, size_t ds_n);

/*
 * The DeepSpeed JSON a run uses, found as the framework finds it: --deepspeed as given; else the
 * YAML's deepspeed: value, which LLaMA-Factory hands to transformers' TrainingArguments unchanged
 * and accelerate's HfDeepSpeedConfig opens with os.path.exists/open, i.e. relative to the
 * directory the run is started in (run_dir, NULL = the working directory). When it is not there
 * but beside the YAML, that file is read with a warning (a run started there); when --run-dir was
 * given, or it is nowhere, it is an error naming the YAML. Prints which file is read (one line on
 * stderr) and any error; false on an error.
 */
bool ml_train_ds_resolve(const struct ml_train_files *f, struct ml_train_read *rd);

#endif /* ML_TRAIN_SETUP_H */
