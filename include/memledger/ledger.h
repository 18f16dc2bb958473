/*
 * ledger.h - the per-GPU memory ledger of a training run (pure: structs in, numbers out).
 *
 * ml_ledger_train walks the terms of the shared accounting notes (docs/ledger.md maps each
 * component to its rule and source) and returns a list of entries - component, bytes, the phases
 * in which it is live, and which of the three figures it belongs to:
 *   allocated  live tensors                         (torch.cuda.max_memory_allocated)
 *   reserved   + allocator rounding, fragmentation  (torch.cuda.max_memory_reserved)
 *   device     + CUDA/HIP context, NCCL buffers     (nvidia-smi / rocm-smi)
 * From the entries it derives the live total per phase, the peak phase, the three figures, the
 * headroom against the GPU and a verdict; and the host RAM the run needs. No I/O, no globals,
 * no allocation, no floating point.
 */
#ifndef ML_LEDGER_H
#define ML_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/inventory.h"
#include "memledger/status.h"
#include "memledger/train.h"

enum ml_phase {
    ML_PHASE_LOAD,
    ML_PHASE_FORWARD,
    ML_PHASE_LOSS, /* forward -> backward turn: logits, loss and its backward */
    ML_PHASE_BACKWARD,
    ML_PHASE_OPTIMIZER_STEP,
    ML_PHASE_CHECKPOINT_SAVE,
    ML_PHASE_AFTER_SAVE, /* the first step after a save: same tensors, colder allocator */
    ML_PHASE_EVAL,
    ML_PHASE_GENERATE, /* inference: prefill and decoding (HF generate) */
    ML_PHASE_SERVING,  /* inference: a serving engine at steady state (vLLM, SGLang) */
    ML_PHASE_COUNT
};

#define ML_PH(p) (1u << (p))
#define ML_PH_STEP                                                                                                     \
    (ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_OPTIMIZER_STEP) |      \
     ML_PH(ML_PHASE_AFTER_SAVE))
#define ML_PH_ALL   ((1u << ML_PHASE_COUNT) - 1u)
#define ML_PH_TRAIN (ML_PH_ALL & ~(ML_PH(ML_PHASE_GENERATE) | ML_PH(ML_PHASE_SERVING)))

enum ml_figure {
    ML_FIG_ALLOCATED, /* a tensor PyTorch allocates */
    ML_FIG_RESERVED,  /* held by the caching allocator beyond live tensors */
    ML_FIG_DEVICE     /* outside PyTorch's allocator */
};

enum ml_comp {
    ML_C_WEIGHTS_FROZEN,
    ML_C_WEIGHTS_TRAINABLE,
    ML_C_QUANT_STATE,
    ML_C_MASTER,
    ML_C_GRADIENTS,
    ML_C_OPTIMIZER,
    ML_C_AUTOCAST_CACHE,
    ML_C_DDP_BUCKETS,
    ML_C_ZERO_PERSISTENT,
    ML_C_ZERO_IPG_BUCKET,
    ML_C_ZERO_GATHERED,
    ML_C_ZERO_LM_HEAD_RETAINED,
    ML_C_ZERO_REDUCE,
    ML_C_FSDP_UNSHARDED,
    ML_C_ACTIVATIONS,
    ML_C_ATTN_SCORES,
    ML_C_ATTN_MASK,
    ML_C_LOGITS_LOSS,
    ML_C_BACKWARD_WORKING,
    ML_C_QLORA_DEQUANT,
    ML_C_STEP_TRANSIENT,
    ML_C_SAVE_GATHER,
    ML_C_EVAL_WORKING,
    ML_C_LOAD_TRANSIENT,
    /* preference and RL stages (docs/ledger.md, "Stages") */
    ML_C_REF_WEIGHTS,
    ML_C_REWARD_WEIGHTS,
    ML_C_VALUE_HEAD,
    ML_C_REF_FORWARD,
    ML_C_ROLLOUT_KV,
    ML_C_VISION_ACT, /* vision-language training (docs/ledger.md, "Vision-language training") */
    ML_C_KV_CACHE,
    ML_C_NON_TORCH,
    ML_C_CUDA_GRAPHS,
    ML_C_CUBLAS_WORKSPACE,
    ML_C_ALLOCATOR,
    ML_C_CUDA_CONTEXT,
    ML_C_NCCL,
    ML_C_COUNT
};

#define ML_LEDGER_MAX_ENTRIES 40
#define ML_LEDGER_MAX_NOTES   12

struct ml_entry {
    enum ml_comp id;       /* component */
    uint64_t bytes;        /* per GPU */
    uint32_t phases;       /* ML_PH() bits of the phases it is live in */
    enum ml_figure figure; /* which figure it counts in */
    char rule[112];        /* the formula with its numbers, e.g. "2 B x 14.5B frozen" */
    const char *source;    /* static: the rule it follows (accounting notes section, source file) */
    bool releasable;       /* reserved cache in whole free segments, freed before an OOM (docs/ledger.md R2) */
};

enum ml_verdict { ML_FITS, ML_TIGHT, ML_NO_FIT };

/* Host RAM per node. */
struct ml_host {
    uint64_t load_bytes;         /* model loading (state-dict shards, low_cpu_mem_usage) */
    uint64_t offload_pinned;     /* pinned offload buffers, all ranks of the node */
    uint64_t offload_pageable;   /* pageable offload buffers */
    uint64_t save_bytes;         /* rank-0 gather of the 16-bit model on save */
    uint64_t checkpoint_offload; /* unsloth GC: checkpointed activations on the host */
    uint64_t peak_bytes;         /* the largest of load, steady (offload + checkpoints) and save */
};

/* Allocator and device settings, with documented defaults (ml_ledger_opts_default). */
struct ml_ledger_opts {
    uint32_t frag_permille;       /* fragmentation reserve, permille of peak allocated */
    uint32_t after_save_permille; /* extra reserve in the step after a save (ZeRO-3 / FSDP) */
    uint64_t context_bytes;       /* CUDA/HIP context outside the allocator */
    uint64_t nccl_bytes;          /* NCCL buffers per process when world size > 1 */
    uint64_t cublas_workspace;    /* cuBLAS workspace per handle and stream */
    uint32_t tight_permille;      /* headroom below this share of capacity is "tight" (50) */
    bool figures_only;            /* leave rule texts empty and add no notes: for searches that read
                                     only the figures (false) */
};

struct ml_ledger {
    struct ml_entry e[ML_LEDGER_MAX_ENTRIES]; /* components in enum order */
    uint32_t n;
    uint64_t phase_allocated[ML_PHASE_COUNT]; /* live allocated bytes per phase */
    uint64_t phase_reserved[ML_PHASE_COUNT];  /* + reserved-only entries live in the phase */
    bool phase_active[ML_PHASE_COUNT];        /* the phase happens in this run */
    enum ml_phase peak_phase;                 /* phase of the largest reserved figure */
    uint64_t peak_allocated;                  /* max over phases, allocated */
    uint64_t peak_reserved;                   /* max over phases, reserved */
    uint64_t device_used;                     /* reserved the run needs + device-only entries */
    uint64_t cache_reserved;                  /* of peak_reserved: releasable cache (R2), not needed */
    uint64_t capacity;                        /* usable bytes of one GPU */
    uint64_t headroom;                        /* capacity - device_used, 0 if negative */
    uint64_t deficit;                         /* device_used - capacity, 0 if it fits */
    enum ml_verdict verdict;
    bool fits;

    uint64_t params;               /* total parameters */
    uint64_t trainable;            /* trainable parameters (LoRA: adapters) */
    uint64_t seq_len, micro_batch; /* s, b actually modelled */
    uint32_t world;                /* data-parallel ranks */
    uint32_t sharding;             /* ranks a ZeRO/FSDP partition spans */
    struct ml_host host;

    uint32_t n_notes;
    /* assumptions and corrections to show the user (room for the longest, translated, with its figures) */
    char notes[ML_LEDGER_MAX_NOTES][512];

    /* The 80 % prediction interval of each figure (training; lib/ledger/interval.c, docs/ledger.md
     * "The interval"): from the validation residuals of the run's framework family and method;
     * the verdict follows it. Inference ledgers set the device figure's only (interval_infer.c). */
    uint64_t interval[3][2];  /* [enum ml_figure][0 = low, 1 = high], bytes */
    char interval_group[32];  /* "litgpt/lora": family/method it looked up */
    char interval_key[3][48]; /* the table row each figure used, "litgpt/lora/allocated",
                                                  "hf*" rows (every figure of the trainer hf); "+reserve" marks
                                                  bounds carried up from the allocated row's */
    bool may_fit;             /* does not fit, but the low end of the device interval would */

    /* How far the stranded cache's spread moved the reserved interval down and up (R2,
     * ml_interval_widen), bytes. */
    uint64_t interval_stranded[2];
};

/* Default options for a GPU and run (docs/ledger.md: context, NCCL, workspace, fragmentation). */
void ml_ledger_opts_default(struct ml_ledger_opts *o, const struct ml_train *t, const struct ml_cluster *c);

/*
 * Compute the training ledger. arch/inv describe the model (inv from ml_inventory_build), t the
 * run, c the hardware, o the allocator/device settings (NULL = defaults).
 * Errors: ML_ERR_OVERFLOW, ML_ERR_INVALID (zero batch or sequence, no GPUs, LoRA targets that
 * match nothing).
 */
enum ml_status ml_ledger_train(const struct ml_arch *arch, const struct ml_inventory *inv, const struct ml_train *t,
                               const struct ml_cluster *c, const struct ml_ledger_opts *o, struct ml_ledger *out,
                               struct ml_diag *diag);

const char *ml_phase_name(enum ml_phase p);
const char *ml_comp_name(enum ml_comp c);
const char *ml_figure_name(enum ml_figure f);
const char *ml_verdict_name(enum ml_verdict v);

/* The pools of the interval table (lib/ledger/interval.c, docs/ledger.md "The interval"): the
 * framework families a training run's interval is looked up under (train_ledger.c interval_family;
 * a family's trainer is its name up to the first '-') and the methods ("lora+qlora": the two
 * pooled). The generated table names them ML_IVF_<NAME>, ML_IVM_<NAME> (upper case, '-' and '+' as
 * '_'); "*" (any) is ML_IV_ANY in each of family, method and figure. */
#define ML_IV_FAMILIES(X)                                                                                              \
    X(HF, "hf")                                                                                                        \
    X(HF_DYNAMIC, "hf-dynamic")                                                                                        \
    X(HF_SHARDED, "hf-sharded")                                                                                        \
    X(HF_SHARDED_DYNAMIC, "hf-sharded-dynamic")                                                                        \
    X(LITGPT, "litgpt")                                                                                                \
    X(TORCHTUNE, "torchtune")                                                                                          \
    X(SWIFT, "swift")
#define ML_IV_METHODS(X) X(FULL, "full") X(LORA, "lora") X(QLORA, "qlora") X(LORA_QLORA, "lora+qlora")

#define ML_IVF_ENUM_(id, name) ML_IVF_##id,
#define ML_IVM_ENUM_(id, name) ML_IVM_##id,
enum ml_iv_family { ML_IV_FAMILIES(ML_IVF_ENUM_) ML_IVF_COUNT };
enum ml_iv_method { ML_IV_METHODS(ML_IVM_ENUM_) ML_IVM_COUNT };
#undef ML_IVF_ENUM_
#undef ML_IVM_ENUM_
#define ML_IV_ANY 255

/* One row of the interval table (lib/ledger/interval_table.c, generated from validation/ by
 * validation_report --interval-table): the interval on a figure is point x lo_e4 / 1e4 .. point x
 * hi_e4 / 1e4, from n residuals of the group key "family/method/figure" ("*" = any; "hf*" = every
 * family of the trainer hf). The lookup compares the ids; key is the same group as text, for the
 * output (per_gpu.interval_rows). */
struct ml_interval_row {
    const char *key;
    uint8_t family; /* enum ml_iv_family, or ML_IV_ANY */
    bool trainer;   /* "hf*": every family of family's trainer */
    uint8_t method; /* enum ml_iv_method, or ML_IV_ANY */
    uint8_t figure; /* enum ml_figure, or ML_IV_ANY */
    uint32_t n;
    uint32_t lo_e4, hi_e4;
};
/* Widen iv by by[0] down (to 0 at most) and by[1] up, the high end no higher than cap (unless it
 * already was; cap 0: no cap): the reserved interval's R2 widening (docs/ledger.md, "Variable-length
 * steps in the caching allocator"), which validation/report.c applies to its rebuilt intervals. */
void ml_interval_widen(uint64_t iv[2], const uint64_t by[2], uint64_t cap);

extern const struct ml_interval_row ml_interval_rows[];
extern const unsigned ml_interval_n_rows;

/* Bytes of component id in the ledger (0 if absent). */
uint64_t ml_ledger_bytes(const struct ml_ledger *l, enum ml_comp id);

#endif /* ML_LEDGER_H */
