/*
 * diagnose.h - from an incident (oom.h) to ranked causes with evidence and fixes (pure).
 *
 * ml_diagnose walks the decision tree of the shared field guide (reference/oom-messages.md,
 * "Analysis of the corpus": other processes, fragmentation, the request's fingerprint, the
 * phase from the frames, the timing, host RAM, serving arithmetic) with the numbers of the
 * primary event. Each finding carries a cause id of DESIGN.md section 3, a confidence, the
 * log lines that support it and the fixes for it, ordered by cost, each with the exact
 * setting. When the run's settings are known (LLaMA-Factory YAML, DeepSpeed JSON, a model),
 * every fix that maps onto a ledger knob is priced by computing the training ledger again with
 * the fix applied (ml_ledger_train): the bytes it saves and whether the run then fits. For a
 * serving engine (setup.serve) the inference ledger (ml_ledger_infer) prices the engine's knobs
 * the same way: the KV cache and tokens each leaves, and whether the engine then starts and
 * holds one request of max_model_len.
 * Every fix that is a knob is a row of the knob table (fit.h, lib/fit/knobs.c): fit and diagnose
 * apply, price and write it the same way, and rank it on the same cost scale (ml_knob_rank).
 * No I/O, no allocation, no static state; all structs are plain values of bounded size. The
 * what-if ledgers are computed in the caller's struct ml_diagnosis (its scratch member).
 */
#ifndef ML_DIAGNOSE_H
#define ML_DIAGNOSE_H

#include <stdbool.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/fit.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/oom.h"
#include "memledger/status.h"
#include "memledger/train.h"

/* Cause ids of DESIGN.md section 3, in its order. */
enum ml_cause {
    ML_CAUSE_MODEL_STATES,
    ML_CAUSE_ACTIVATIONS,
    ML_CAUSE_LONG_SEQUENCE,
    ML_CAUSE_LOGITS,
    ML_CAUSE_EAGER_ATTENTION,
    ML_CAUSE_NO_GRAD_CHECKPOINTING,
    ML_CAUSE_FP32_UPCAST,
    ML_CAUSE_EVAL_ACCUMULATION,
    ML_CAUSE_TENSOR_LEAK,
    ML_CAUSE_FRAGMENTATION,
    ML_CAUSE_OTHER_PROCESS,
    ML_CAUSE_CHECKPOINT_GATHER,
    ML_CAUSE_KV_CACHE_BUDGET,
    ML_CAUSE_SERVING_FREE_MEMORY,
    ML_CAUSE_HOST_RAM,
    ML_CAUSE_NCCL_BUFFERS,
    ML_CAUSE_OVERSIZE_TENSOR,
    ML_CAUSE_MISLEADING,
    ML_CAUSE_UNKNOWN,
    ML_CAUSE_COUNT
};

/* What a fix changes: a knob of the knob table, or advice (docs/cli/diagnose.md lists them). */
enum ml_fix_kind {
    ML_FIX_FREE_DEVICE,        /* stop the other process */
    ML_FIX_LOOK_EARLIER,       /* the OOM is a symptom: read the first error */
    ML_FIX_KNOWN_ISSUE,        /* the setting or version that avoids a known issue of the stack */
    ML_FIX_ALLOC_EXPANDABLE,   /* <VAR>=expandable_segments:True */
    ML_FIX_ALLOC_MAX_SPLIT,    /* <VAR>=max_split_size_mb:256 */
    ML_FIX_EXPANDABLE_OFF,     /* driver-error path: turn expandable segments off */
    ML_FIX_ZERO3_BUFFERS,      /* smaller stage3 prefetch / live parameters, overlap_comm false */
    ML_FIX_GATHER16_OFF,       /* stage3_gather_16bit_weights_on_model_save: false */
    ML_FIX_ATTN,               /* flash_attn: sdpa / fa2 */
    ML_FIX_CHUNKED_LOSS,       /* fused / chunked cross-entropy (Liger) */
    ML_FIX_NO_FP32,            /* keep logits / modules in bf16 */
    ML_FIX_EVAL,               /* eval_accumulation_steps, prediction_loss_only, eval batch 1 */
    ML_FIX_VLLM_MAX_LEN,       /* --max-model-len <= what the KV cache holds */
    ML_FIX_VLLM_UTIL_UP,       /* --gpu-memory-utilization higher */
    ML_FIX_VLLM_UTIL_DOWN,     /* --gpu-memory-utilization <= free/total */
    ML_FIX_VLLM_SEQS,          /* --max-num-seqs / batched tokens lower */
    ML_FIX_KV_FP8,             /* --kv-cache-dtype fp8 */
    ML_FIX_SERVE_FRACTION,     /* TGI --cuda-memory-fraction / max batch prefill tokens */
    ML_FIX_CUTOFF,             /* shorter cutoff_len / max sequence */
    ML_FIX_BATCH,              /* smaller micro-batch, more accumulation */
    ML_FIX_EMPTY_CACHE_SAVE,   /* empty_cache + gc after each save (a callback) */
    ML_FIX_GRAD_CKPT,          /* gradient checkpointing on */
    ML_FIX_SAVE_STEPS,         /* save less often */
    ML_FIX_NCCL_MARGIN,        /* leave memory outside PyTorch for NCCL */
    ML_FIX_NCCL_SET_DEVICE,    /* torch.cuda.set_device(local_rank) before init_process_group */
    ML_FIX_SHM,                /* docker --shm-size */
    ML_FIX_HOST_LOAD,          /* low_cpu_mem_usage / zero3 init loading */
    ML_FIX_OPTIM_8BIT,         /* 8-bit or paged optimizer */
    ML_FIX_ZERO3,              /* shard model states: ZeRO-3 / FSDP */
    ML_FIX_OFFLOAD_OPT,        /* offload_optimizer: cpu */
    ML_FIX_OFFLOAD_ALL,        /* offload_optimizer + offload_param: cpu */
    ML_FIX_LORA,               /* LoRA / QLoRA instead of full fine-tuning */
    ML_FIX_SMALLER_TENSOR,     /* the tensor itself must shrink (shape bug, chunking) */
    ML_FIX_HOST_FEWER_RANKS,   /* fewer ranks per node */
    ML_FIX_MORE_MEMORY,        /* more / larger GPUs, tensor parallelism, more host RAM */
    ML_FIX_COUNT
};

#define ML_DIAG_MAX_FINDINGS 8
#define ML_DIAG_MAX_EVIDENCE 4
#define ML_DIAG_MAX_FIXES 6
#define ML_DIAG_MAX_CHECKS 6

/* What the configs say about the run (every pointer may be NULL, every number 0 = unknown). */
struct ml_diag_setup {
    const struct ml_arch *arch;          /* the model (with inv) */
    const struct ml_inventory *inv;
    const struct ml_train *train;        /* the run's settings (with arch, inv and cluster) */
    const struct ml_cluster *cluster;    /* GPU capacity and count */
    const struct ml_infer *serve;        /* a serving engine's settings (with arch, inv and cluster):
                                            serving fixes are priced with the inference ledger */
    uint64_t params;                     /* total parameters, 0 = unknown */
    uint64_t save_steps;                 /* YAML save_steps, 0 = unknown */
    uint64_t eval_steps;                 /* YAML eval_steps, 0 = unknown */
    bool world_guessed;                  /* cluster's GPU count was inferred (ml_diagnose_guess_world) */
    bool capacity_from_log;              /* cluster's capacity is the log's "total capacity" */
    const char *config_name;             /* for messages ("train.yaml"), NULL if none */
    const char *ds_name;                 /* "ds.json", NULL if none */
};

struct ml_evidence {
    uint32_t file;                       /* input index */
    uint64_t line;                       /* 1-based; 0 = derived (no line) */
    char text[ML_OOM_EXCERPT];           /* the line (cleaned) or the derivation */
};

struct ml_fix {
    enum ml_fix_kind kind;
    enum ml_knob_id knob;                /* the knob it applies, ML_KNOB_NONE for advice */
    uint64_t value;                      /* the knob's value from the log (0: the knob's own rule) */
    uint32_t cost;                       /* the one cost scale, lower is cheaper (ml_knob_rank) */
    char action[200];                    /* what to do */
    char setting[200];                   /* the exact setting: env var, YAML/JSON key, flag */
    bool has_saves;                      /* saves_bytes is known */
    uint64_t saves_bytes;                /* device bytes saved at the peak (ledger) or freed (log) */
    bool saves_from_ledger;              /* true: ledger with the fix; false: the log's own numbers */
    int8_t fits;                         /* 1 then fits, 0 still short, -1 unknown */
    uint64_t device_after;               /* ledger device figure with the fix, 0 = none */
    char note[200];                      /* caveat ("on ROCm only if ...") or "" */
};

struct ml_finding {
    enum ml_cause cause;
    uint32_t confidence;                 /* permille, 0..1000 */
    char why[360];                       /* one or two sentences with the numbers */
    uint32_t n_ev;
    struct ml_evidence ev[ML_DIAG_MAX_EVIDENCE];
    uint32_t n_fix;
    struct ml_fix fix[ML_DIAG_MAX_FIXES];
};

struct ml_diagnosis {
    int32_t primary;                     /* index of the event diagnosed, -1 when none */
    uint32_t n_findings;                 /* sorted by confidence, highest first */
    struct ml_finding f[ML_DIAG_MAX_FINDINGS];

    /* Derived from the primary event (valid when has_device_numbers). */
    bool has_device_numbers;
    uint64_t used;                       /* total - free */
    uint64_t held;                       /* PyTorch reserved: allocated + reserved-unallocated */
    uint64_t stranded;                   /* reserved but unallocated */
    bool has_stranded;

    /* The training ledger of the run, when the configs were given. */
    bool has_ledger;
    struct ml_ledger ledger;             /* as configured */
    enum ml_phase ledger_phase;          /* the ledger phase matching the event */
    uint64_t ledger_at_phase;            /* allocated bytes the ledger predicts there */
    uint64_t gap;                        /* bytes the log needed beyond the ledger's device figure */

    /* The inference ledger of the serving engine, when its settings were given (setup.serve). */
    bool has_serve;
    struct ml_serve serve;               /* as configured */
    bool has_kv_log;                     /* the log states the KV cache (profiling line, or tokens) */
    uint64_t kv_log;                     /* its bytes; what-ifs carry kv_log - serve.kv_bytes along */

    uint32_t n_checks;
    char checks[ML_DIAG_MAX_CHECKS][200];/* what to look at next */

    /* Working memory of the what-ifs (not part of the result). */
    struct ml_diag_scratch {
        struct ml_ledger led;
        struct ml_train t;
    } scratch;
};

const char *ml_cause_name(enum ml_cause c);

/* The event to diagnose: the first device OOM (allocator family first), else the first event;
 * -1 when the incident has none. */
int32_t ml_diagnose_primary(const struct ml_incident *inc);

/*
 * Diagnose inc (the primary event and its context) with what setup knows (NULL = nothing).
 * Errors: ML_ERR_INVALID when inc has no event; ledger errors (ML_ERR_OVERFLOW, ML_ERR_INVALID)
 * when the setup's ledger cannot be computed.
 */
enum ml_status ml_diagnose(const struct ml_incident *inc, const struct ml_diag_setup *setup,
                           struct ml_diagnosis *out, struct ml_diag *diag);

/*
 * The world size (GPUs in all) whose training ledger best matches the log: the event's
 * allocated bytes against the ledger's allocated bytes in the event's phase, over powers of two
 * from the largest rank seen + 1 up to 1024 GPUs. c->gpus_per_node and c->nodes are set to the
 * answer (nodes 1). Returns the chosen count, 0 when nothing could be compared.
 */
uint32_t ml_diagnose_guess_world(const struct ml_incident *inc, const struct ml_arch *arch,
                                 const struct ml_inventory *inv, const struct ml_train *t,
                                 struct ml_cluster *c);

#endif /* ML_DIAGNOSE_H */
