/*
 * fit.h - the cheapest changes that make a run fit (pure search over the ledger) and the patches
 * that write them into the user's own files.
 *
 * ml_fit_train explores the knobs a user can turn - allocator, attention, fused kernels, ZeRO
 * buckets and reuse, micro-batch against gradient accumulation, checkpointing, optimizer, ZeRO
 * stage, offload, sequence length, LoRA rank, QLoRA, more GPUs - evaluating the training ledger
 * for each combination (up to ML_FIT_MAX_DEPTH knobs at once; a combination that already fits is
 * not extended), and ranks the plans that fit: first those that change neither the data nor the
 * method, then by the throughput cost of docs/cli/fit.md, then by the memory they leave.
 * ml_fit_infer does the same for a serving engine. No I/O, no allocation.
 */
#ifndef ML_FIT_H
#define ML_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/buf.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/status.h"
#include "memledger/train.h"

#define ML_FIT_MAX_DEPTH 3
#define ML_FIT_MAX_CHANGES 6
#define ML_FIT_MAX_PLANS 8

/* What a change touches, so that it can be written back where the user keeps it. */
enum ml_where {
    ML_IN_ENV,       /* an environment variable (PYTORCH_*_ALLOC_CONF) */
    ML_IN_YAML,      /* a LLaMA-Factory key */
    ML_IN_DEEPSPEED, /* a zero_optimization key of the DeepSpeed JSON */
    ML_IN_LAUNCH,    /* the launch itself (GPU count) */
    ML_IN_ENGINE     /* a serving engine argument */
};

struct ml_change {
    enum ml_where where;
    char key[48];          /* "stage3_max_reuse_distance", "per_device_train_batch_size" */
    char from[48];         /* old value as the user writes it */
    char to[48];           /* new value */
};

struct ml_plan {
    uint32_t n;                                   /* changes */
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t cost_permille;                       /* estimated slowdown, permille (docs/cli/fit.md) */
    bool changes_data;                            /* sequence length: the samples the model sees change */
    bool changes_method;                          /* LoRA rank, QLoRA: the result changes */
    bool needs_hardware;                          /* more GPUs */
    bool fits;                                    /* within the target headroom */
    uint64_t device_used;                         /* predicted device figure, bytes */
    uint64_t headroom;                            /* capacity - device_used, 0 if short */
    enum ml_phase peak_phase;
    char why[160];                                /* one line: what the plan frees */
    struct ml_train t;                            /* the run with the changes applied */
    struct ml_cluster c;                          /* the hardware with the changes applied */
};

struct ml_fit_opts {
    uint32_t headroom_permille;   /* required headroom, permille of capacity (default 100) */
    uint64_t host_ram_bytes;      /* host RAM per node for offload checks, 0 = unknown */
    uint32_t max_gpus_per_node;   /* the "more GPUs" knob stops here (default 8) */
    uint32_t max_plans;           /* plans to return (<= ML_FIT_MAX_PLANS) */
};

struct ml_fit_result {
    struct ml_plan plans[ML_FIT_MAX_PLANS]; /* ranked, fitting plans */
    uint32_t n;
    struct ml_plan closest;                 /* when nothing fits: the plan with the least deficit */
    bool base_fits;                         /* the run fits the target as it is */
    uint64_t base_device;                   /* its device figure */
    uint64_t target_bytes;                  /* capacity minus the required headroom */
    uint64_t evaluated;                     /* ledgers computed */
};

void ml_fit_opts_default(struct ml_fit_opts *o);

/*
 * Search the training knobs. The result holds up to o->max_plans fitting plans, ranked; with none,
 * `closest` says how far the best one is. Errors are those of ml_ledger_train on the base run.
 */
enum ml_status ml_fit_train(const struct ml_arch *arch, const struct ml_inventory *inv,
                            const struct ml_train *base, const struct ml_cluster *c,
                            const struct ml_fit_opts *o, struct ml_fit_result *out, struct ml_diag *diag);

/* Serving plans use the same result, with the changes as engine arguments. */
struct ml_fit_infer_plan {
    uint32_t n;
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t cost_permille;
    bool changes_method;          /* quantization changes the model's outputs */
    bool needs_hardware;
    struct ml_infer s;
    struct ml_serve sv;
    uint64_t device_used;
};

struct ml_fit_infer_result {
    struct ml_fit_infer_plan plans[ML_FIT_MAX_PLANS];
    uint32_t n;
    bool base_fits;
    uint64_t evaluated;
    char base_error[512];
};

enum ml_status ml_fit_infer(const struct ml_arch *arch, const struct ml_inventory *inv,
                            const struct ml_infer *base, const struct ml_cluster *c,
                            const struct ml_fit_opts *o, struct ml_fit_infer_result *out,
                            struct ml_diag *diag);

/*
 * Patch a LLaMA-Factory YAML (bytes) with the plan's ML_IN_YAML changes: each key's line keeps its
 * place, indentation and trailing comment; a key not in the file is appended under a comment. Only
 * top-level keys are patched. out receives the new text. deepspeed_name, when not NULL, sets the
 * deepspeed: key (the patched DeepSpeed file written next to it).
 */
enum ml_status ml_patch_yaml(const char *data, size_t len, const struct ml_plan *p,
                             const char *deepspeed_name, struct ml_buf *out, struct ml_diag *diag);

/*
 * Patch a DeepSpeed JSON (bytes; NULL/0 to start from LLaMA-Factory's ds_z<stage> config) with
 * the plan's ML_IN_DEEPSPEED changes, keeping the order of the keys; written with our own writer
 * (integers exact, "auto" kept).
 */
enum ml_status ml_patch_deepspeed(const char *data, size_t len, const struct ml_plan *p,
                                  struct ml_buf *out, struct ml_diag *diag);

/* The environment file: one VAR=value line per ML_IN_ENV change. */
enum ml_status ml_patch_env(const struct ml_plan *p, struct ml_buf *out);

#endif /* ML_FIT_H */
