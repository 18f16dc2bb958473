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

#define ML_FIT_MAX_DEPTH   3
#define ML_FIT_MAX_CHANGES 12
#define ML_FIT_MAX_PLANS   8
/* The shortest cutoff_len fit and diagnose propose: below it a cut removes most of an SFT
 * sample (docs/cli/fit.md). */
#define ML_FIT_MIN_CUTOFF 256
/* The "more GPUs" and tensor-parallel knobs stop at this many GPUs per node unless told. */
#define ML_FIT_MAX_GPUS_DEFAULT 8

/* What a change touches, so that it can be written back where the user keeps it. */
enum ml_where {
    ML_IN_ENV,       /* an environment variable (PYTORCH_*_ALLOC_CONF) */
    ML_IN_YAML,      /* a LLaMA-Factory key (or its HF TrainingArguments name) */
    ML_IN_DEEPSPEED, /* a zero_optimization key of the DeepSpeed JSON (or a top-level batch key) */
    ML_IN_LAUNCH,    /* the launch itself (GPU count) */
    ML_IN_ENGINE     /* a serving engine argument */
};

/* ---- knobs: every change memledger proposes, one row each (lib/fit/knobs.c) ---------------- *
 *
 * ml_fit_train searches the training rows marked ML_KNOB_SEARCHED, ml_fit_infer the serving ones,
 * and ml_diagnose prices its fixes through the same rows: one cost, one exclusion group, one
 * apply function and one way of writing each setting per framework dialect. */

enum ml_knob_id {
    /* training, searched by ml_fit_train (in this order) */
    ML_KNOB_EXPANDABLE,
    ML_KNOB_SDPA,
    ML_KNOB_FLASH,
    ML_KNOB_LIGER,
    ML_KNOB_FUSED_ADAMW,
    ML_KNOB_ZERO3_REUSE,
    ML_KNOB_ZERO3_PERSIST,
    ML_KNOB_ZERO3_BUCKETS,
    ML_KNOB_OVERLAP_OFF,
    ML_KNOB_MICRO_BATCH_2,
    ML_KNOB_MICRO_BATCH_4,
    ML_KNOB_GRAD_CKPT,
    ML_KNOB_UNSLOTH_GC,
    ML_KNOB_ADAMW_8BIT,
    ML_KNOB_PAGED_ADAMW_8BIT,
    ML_KNOB_ZERO2,
    ML_KNOB_ZERO3,
    ML_KNOB_OFFLOAD_OPT,
    ML_KNOB_OFFLOAD_ALL,
    ML_KNOB_SEQ_3_4,
    ML_KNOB_SEQ_1_2,
    ML_KNOB_LORA_RANK_2,
    ML_KNOB_QLORA,
    ML_KNOB_GPUS_2,
    /* training, proposed by diagnose only */
    ML_KNOB_ZERO3_BUFFERS_2,
    ML_KNOB_GATHER16_OFF,
    /* serving, searched by ml_fit_infer (in this order; the last is set from the ledger) */
    ML_KNOB_GPU_UTIL,
    ML_KNOB_KV_FP8,
    ML_KNOB_TP_2,
    ML_KNOB_FP8_WEIGHTS,
    ML_KNOB_MAX_NUM_SEQS,
    ML_KNOB_MAX_MODEL_LEN,
    /* serving, proposed by diagnose only */
    ML_KNOB_GPU_UTIL_DOWN,
    ML_KNOB_SERVE_BUDGET_2,
    ML_KNOB_CHUNKED_PREFILL,
    ML_KNOB_COUNT,
    ML_KNOB_NONE = ML_KNOB_COUNT /* a fix that is no knob (advice) */
};

/* The settings a knob writes, each named once per dialect (ml_setting_name). */
enum ml_setting {
    ML_SET_ALLOC_CONF,
    ML_SET_FLASH_ATTN,
    ML_SET_LIGER,
    ML_SET_OPTIM,
    ML_SET_MICRO_BATCH,
    ML_SET_GRAD_ACCUM,
    ML_SET_GRAD_CKPT,
    ML_SET_UNSLOTH_GC,
    ML_SET_CUTOFF,
    ML_SET_LORA_RANK,
    ML_SET_QUANT_BIT,
    ML_SET_DEEPSPEED,
    ML_SET_ZERO_STAGE,
    ML_SET_OFFLOAD_OPT,
    ML_SET_OFFLOAD_PARAM,
    ML_SET_OVERLAP_COMM,
    ML_SET_REDUCE_BUCKET,
    ML_SET_PREFETCH_BUCKET,
    ML_SET_PERSISTENCE,
    ML_SET_MAX_REUSE,
    ML_SET_MAX_LIVE,
    ML_SET_GATHER16,
    ML_SET_GPUS_PER_NODE,
    ML_SET_GPU_UTIL,
    ML_SET_KV_DTYPE,
    ML_SET_TP,
    ML_SET_QUANTIZATION,
    ML_SET_MAX_NUM_SEQS,
    ML_SET_MAX_BATCHED_TOKENS,
    ML_SET_CHUNKED_PREFILL,
    ML_SET_MAX_MODEL_LEN,
    ML_SET_MEM_FRACTION, /* SGLang's mem_fraction_static: written from the run's settings, no knob */
    /* top-level DeepSpeed batch keys (not under zero_optimization; ml_setting_ds_top), set to
     * "auto" where the file held an integer and a plan changes them (ML_DS_INT_*, train.h) */
    ML_SET_DS_MICRO_BATCH,
    ML_SET_DS_GRAD_ACCUM,
    ML_SET_DS_TRAIN_BATCH,
    ML_SET_COUNT
};

/* Whether a DeepSpeed setting is a top-level key of the file, not one of zero_optimization. */
static inline bool ml_setting_ds_top(enum ml_setting s)
{
    return s == ML_SET_DS_MICRO_BATCH || s == ML_SET_DS_GRAD_ACCUM || s == ML_SET_DS_TRAIN_BATCH;
}

/* How a framework spells a setting. */
enum ml_dialect {
    ML_DIALECT_LF,        /* LLaMA-Factory YAML key (model_args.py, data_args.py, finetuning_args.py) */
    ML_DIALECT_HF,        /* transformers TrainingArguments field */
    ML_DIALECT_TRL,       /* TRL: its configs' fields (SFTConfig / DPOConfig on TrainingArguments, ModelConfig) */
    ML_DIALECT_DEEPSPEED, /* DeepSpeed JSON key under zero_optimization */
    ML_DIALECT_ENV,       /* environment variable */
    ML_DIALECT_ENGINE,    /* vLLM engine argument (EngineArgs field) */
    ML_DIALECT_VLLM,      /* `vllm serve` flag */
    ML_DIALECT_LAUNCH,    /* the launcher */
    ML_DIALECT_SGLANG,    /* `python -m sglang.launch_server` flag (ServerArgs) */
    ML_DIALECT_TORCHTUNE, /* torchtune recipe YAML key (dotted: a nested key, "tokenizer.max_seq_len") */
    ML_DIALECT_LITGPT,    /* LitGPT finetune YAML key (dotted: "train.micro_batch_size") */
    ML_DIALECT_SWIFT,     /* ms-swift `swift sft` argument (TrainArguments on TrainingArguments) */
    ML_DIALECT_INFER,     /* transformers from_pretrained / generate keyword (an inference script) */
    ML_DIALECT_TGI,       /* `text-generation-launcher` flag (TGI launcher/src/main.rs Args) */
    ML_DIALECT_COUNT
};

struct ml_change {
    enum ml_knob_id knob; /* the knob that made it */
    enum ml_setting set;  /* the setting it writes */
    uint64_t value;       /* the new value, typed: a count, 0/1, permille, a ZeRO stage */
    enum ml_where where;
    char key[48];  /* "stage3_max_reuse_distance", "per_device_train_batch_size" */
    char from[48]; /* old value as the user writes it */
    char to[48];   /* new value */
};

/* What a knob changes beyond the speed: ranked after the rest (ml_knob_rank). */
#define ML_KNOB_CHANGES_DATA   1u /* the samples the model sees change (sequence length) */
#define ML_KNOB_CHANGES_METHOD 2u /* the result changes (LoRA rank, quantization) */
#define ML_KNOB_NEEDS_HARDWARE 4u /* more GPUs */
/* Row flags. */
#define ML_KNOB_TRAIN    8u  /* a training knob (ml_train, ml_cluster) */
#define ML_KNOB_SERVE    16u /* a serving knob (ml_infer) */
#define ML_KNOB_SEARCHED 32u /* ml_fit_train / ml_fit_infer try it */
#define ML_KNOB_RELATIVE                                                                                               \
    64u /* its value follows the run's (x 1/2, the pool): an unknown
                                     run shows the row's hint instead */

/* A run being changed: the settings a knob edits and the changes it records. */
struct ml_edit {
    struct ml_train *t; /* training knobs edit these */
    struct ml_cluster *c;
    struct ml_infer *s;   /* serving knobs edit this (and c's GPU count) */
    struct ml_change *ch; /* the changes, appended at ch[*n] (at most ML_FIT_MAX_CHANGES) */
    uint32_t *n;
    uint32_t effects; /* ML_KNOB_CHANGES_* and ML_KNOB_NEEDS_HARDWARE of what was applied */
};

struct ml_knob_ctx {
    const struct ml_arch *arch;
    uint32_t max_gpus_per_node;  /* "more GPUs" and tensor parallelism stop here */
    const char *alloc_var;       /* the allocator variable to set; NULL: by the GPU's vendor */
    const struct ml_serve *base; /* serving: the engine as configured (its resolved budgets) */
    bool force;                  /* apply even where the run rules it out (to write the setting) */
};

struct ml_knob {
    enum ml_knob_id id;
    const char *name; /* "micro-batch / 2": a plan's summary */
    uint32_t cost;    /* slowdown, permille of step (or serving) time: docs/cli/fit.md */
    uint32_t group;   /* knobs of one group exclude each other */
    uint32_t flags;   /* ML_KNOB_* */
    /* Apply to e's run with value (0: the knob's own rule); false when it does not apply. */
    bool (*apply)(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t value);
    const char *hint; /* the setting to show when the run is unknown (ML_KNOB_RELATIVE) */
};

/* ---- fixes: what diagnose proposes, one row each in the knob table (lib/fit/knobs.c) ---------- */

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
    ML_CAUSE_SERVING_HEADROOM,
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
    ML_FIX_FREE_DEVICE,      /* stop the other process */
    ML_FIX_LOOK_EARLIER,     /* the OOM is a symptom: read the first error */
    ML_FIX_KNOWN_ISSUE,      /* the setting or version that avoids a known issue of the stack */
    ML_FIX_ALLOC_EXPANDABLE, /* <VAR>=expandable_segments:True */
    ML_FIX_ALLOC_MAX_SPLIT,  /* <VAR>=max_split_size_mb:256 */
    ML_FIX_EXPANDABLE_OFF,   /* driver-error path: turn expandable segments off */
    ML_FIX_ZERO3_BUFFERS,    /* smaller stage3 prefetch / live parameters, overlap_comm false */
    ML_FIX_GATHER16_OFF,     /* stage3_gather_16bit_weights_on_model_save: false */
    ML_FIX_ATTN,             /* flash_attn: sdpa / fa2 */
    ML_FIX_CHUNKED_LOSS,     /* fused / chunked cross-entropy (Liger) */
    ML_FIX_NO_FP32,          /* keep logits / modules in bf16 */
    ML_FIX_EVAL,             /* eval_accumulation_steps, prediction_loss_only, eval batch 1 */
    ML_FIX_VLLM_MAX_LEN,     /* --max-model-len <= what the KV cache holds */
    ML_FIX_VLLM_UTIL_UP,     /* --gpu-memory-utilization higher */
    ML_FIX_VLLM_UTIL_DOWN,   /* --gpu-memory-utilization <= free/total */
    ML_FIX_VLLM_SEQS,        /* --max-num-seqs / batched tokens lower */
    ML_FIX_KV_FP8,           /* --kv-cache-dtype fp8 */
    ML_FIX_SERVE_FRACTION,   /* TGI --cuda-memory-fraction / max batch prefill tokens */
    ML_FIX_ENFORCE_EAGER,    /* serving without CUDA graphs: --enforce-eager / --disable-cuda-graph */
    ML_FIX_QUANTIZE,         /* quantized weights (fp8, AWQ, GPTQ) */
    ML_FIX_GGML_LAYERS,      /* llama.cpp / Ollama: fewer layers on the GPU (-ngl, num_gpu) */
    ML_FIX_GGML_CTX,         /* llama.cpp / Ollama: a shorter context or smaller batch (-c / -ub, num_ctx) */
    ML_FIX_GGML_KV,          /* llama.cpp / Ollama: flash attention and a quantized KV cache */
    ML_FIX_CUTOFF,           /* shorter cutoff_len / max sequence */
    ML_FIX_BATCH,            /* smaller micro-batch, more accumulation */
    ML_FIX_EMPTY_CACHE_SAVE, /* empty_cache + gc after each save (a callback) */
    ML_FIX_GRAD_CKPT,        /* gradient checkpointing on */
    ML_FIX_SAVE_STEPS,       /* save less often */
    ML_FIX_NCCL_MARGIN,      /* leave memory outside PyTorch for NCCL */
    ML_FIX_NCCL_SET_DEVICE,  /* torch.cuda.set_device(local_rank) before init_process_group */
    ML_FIX_SHM,              /* docker --shm-size */
    ML_FIX_HOST_LOAD,        /* low_cpu_mem_usage / zero3 init loading */
    ML_FIX_OPTIM_8BIT,       /* 8-bit or paged optimizer */
    ML_FIX_ZERO3,            /* shard model states: ZeRO-3 / FSDP */
    ML_FIX_OFFLOAD_OPT,      /* offload_optimizer: cpu */
    ML_FIX_OFFLOAD_ALL,      /* offload_optimizer + offload_param: cpu */
    ML_FIX_LORA,             /* LoRA / QLoRA instead of full fine-tuning */
    ML_FIX_SMALLER_TENSOR,   /* the tensor itself must shrink (shape bug, chunking) */
    ML_FIX_HOST_FEWER_RANKS, /* fewer ranks per node */
    ML_FIX_MORE_MEMORY,      /* more / larger GPUs, tensor parallelism, more host RAM */
    ML_FIX_RETRY_FREE,       /* free the failed step (its exception, outputs) before retrying */
    ML_FIX_MPS_WATERMARK,    /* raise the MPS allocator's hard limit (at the system's risk) */
    ML_FIX_PAGEFILE,         /* a larger Windows paging file: more commit for the host */
    ML_FIX_COUNT
};

/* The kinds of run a fix can apply to (bits). */
enum ml_run_kind {
    ML_RUN_TRAINING = 1u << 0,  /* a training or fine-tuning run */
    ML_RUN_SERVING = 1u << 1,   /* a serving engine (vLLM, SGLang, TGI, llama.cpp server, Ollama) */
    ML_RUN_OFFLINE = 1u << 2,   /* offline inference: generate() in a script or a UI */
    ML_RUN_DIFFUSION = 1u << 3, /* a diffusion pipeline (image / video) */
    ML_RUN_ANY = 0xfu
};

/* The runtimes a fix can be written in (bits): the trainers and launchers, the serving engines. */
enum ml_fix_runtime {
    ML_RT_LLAMAFACTORY = 1u << 0, /* LLaMA-Factory's YAML */
    ML_RT_HF_TRAINER = 1u << 1,   /* transformers' Trainer (TrainingArguments; TRL's configs on it) */
    ML_RT_ACCELERATE = 1u << 2,   /* accelerate / FSDP */
    ML_RT_DEEPSPEED = 1u << 3,    /* DeepSpeed's JSON */
    ML_RT_VLLM = 1u << 4,         /* vLLM (and vllm-ascend) */
    ML_RT_SGLANG = 1u << 5,       /* SGLang */
    ML_RT_TGI = 1u << 6,          /* text-generation-inference */
    ML_RT_GGML = 1u << 7,         /* llama.cpp / Ollama */
    ML_RT_TORCH = 1u << 8,        /* plain PyTorch: a script, diffusers, generate() */
    ML_RT_ANY = 0x1ffu
};

/* The phases a fix addresses (bits, in the order of the OOM scanner's phases, oom.h). */
enum ml_fix_phase {
    ML_FPH_LOAD = 1u << 0,
    ML_FPH_FORWARD = 1u << 1,
    ML_FPH_LOSS = 1u << 2,
    ML_FPH_BACKWARD = 1u << 3,
    ML_FPH_OPTIMIZER = 1u << 4,
    ML_FPH_SAVE = 1u << 5, /* a checkpoint save, and the step after it */
    ML_FPH_EVAL = 1u << 6,
    ML_FPH_GENERATE = 1u << 7,
    ML_FPH_SERVE_START = 1u << 8, /* a serving engine's start-up */
    ML_FPH_SERVE_RUN = 1u << 9,   /* a serving engine at run time */
    ML_FPH_COMM = 1u << 10,       /* collectives */
    ML_FPH_ANY = 0x7ffu
};

/* What a kind of fix is for: the kinds of run it applies to, the runtimes whose settings write
 * it, the phases and the causes it addresses (bits of 1u << enum ml_cause). */
struct ml_fix_row {
    enum ml_fix_kind kind;
    uint32_t runs;     /* ML_RUN_* */
    uint32_t runtimes; /* ML_RT_* */
    uint32_t phases;   /* ML_FPH_* */
    uint32_t causes;   /* 1u << ML_CAUSE_* */
};

/* The row of fix kind k, NULL out of range. */
const struct ml_fix_row *ml_fix_row(enum ml_fix_kind k);

/* The row of a knob, NULL for ML_KNOB_NONE or out of range. */
const struct ml_knob *ml_knob_get(enum ml_knob_id id);

/* Apply knob id to e (see struct ml_knob); ORs its effects into e->effects. */
bool ml_knob_apply(enum ml_knob_id id, const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t value);

/*
 * The one cost scale: cost permille of step time, + ML_COST_HARDWARE when it needs more GPUs,
 * + ML_COST_RESULT when it changes the data or the method. Lower is cheaper; fit ranks its
 * plans and diagnose its fixes by it.
 */
#define ML_COST_HARDWARE 10000u
#define ML_COST_RESULT   20000u
uint32_t ml_knob_rank(uint32_t cost, uint32_t effects);

/* A setting's name in a dialect, NULL when that dialect has none. */
const char *ml_setting_name(enum ml_setting s, enum ml_dialect d);

/* The dialect a training run's YAML is written in: its trainer's (ms-swift), else its
 * framework's (LLaMA-Factory for none). */
enum ml_dialect ml_train_dialect(const struct ml_train *t);

/* A dialect's name for the user ("torchtune", "ms-swift", "TrainingArguments"). */
const char *ml_dialect_name(enum ml_dialect d);

/* Whether every YAML setting knob id changes has a key in dialect d (applied to the defaults). */
bool ml_knob_has_key(enum ml_knob_id id, enum ml_dialect d);

/* The engine whose flags a dialect writes: d itself for SGLang and TGI, vLLM's flags otherwise. */
enum ml_dialect ml_engine_dialect(enum ml_dialect d);

/* The setting to show for knob id when the run is unknown (struct ml_knob hint), an engine's
 * flags written in dialect d (ml_engine_dialect); NULL when it has none. */
const char *ml_knob_hint(enum ml_knob_id id, enum ml_dialect d, char *buf, size_t n);

/* A value as dialect d spells it: value itself, or the dialect's own name for it (SGLang's
 * --kv-cache-dtype has fp8_e4m3 where vLLM has fp8). */
const char *ml_setting_value(enum ml_setting s, enum ml_dialect d, const char *value);

/*
 * Write changes as the user types them: env "VAR=value", YAML "key: value" (LLaMA-Factory's key,
 * or TrainingArguments' for yaml == ML_DIALECT_HF, or both "lf (LLaMA-Factory) / hf (HF)" for
 * yaml == ML_DIALECT_COUNT, the framework unknown), DeepSpeed "zero_optimization.key: value",
 * `vllm serve` flags "--flag value". Returns out.
 */
const char *ml_changes_text(const struct ml_change *ch, uint32_t n, enum ml_dialect yaml, char *out, size_t cap);

struct ml_plan {
    uint32_t n; /* changes */
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t cost_permille;   /* estimated slowdown, permille (docs/cli/fit.md) */
    bool changes_data;        /* sequence length: the samples the model sees change */
    bool changes_method;      /* LoRA rank, QLoRA: the result changes */
    bool needs_hardware;      /* more GPUs */
    bool fits;                /* within the target headroom */
    uint64_t device_used;     /* the device figure the search held to the target
                                                     (the 80 % high end, or the estimate), bytes */
    uint64_t device_estimate; /* the device estimate itself, bytes */
    uint64_t headroom;        /* capacity - device_used, 0 if short */
    enum ml_phase peak_phase;
    char why[160];       /* one line: what the plan frees */
    struct ml_train t;   /* the run with the changes applied */
    struct ml_cluster c; /* the hardware with the changes applied */
};

struct ml_fit_opts {
    uint32_t headroom_permille; /* required headroom, permille of capacity (default 100) */
    uint64_t host_ram_bytes;    /* host RAM per node for offload checks, 0 = unknown */
    uint32_t max_gpus_per_node; /* the "more GPUs" knob stops here (default 8) */
    uint32_t max_plans;         /* plans to return (<= ML_FIT_MAX_PLANS) */
    bool point;                 /* --confidence point: the estimate meets the target (default: the
                                   high end of its 80 % device interval, docs/ledger.md) */
};

struct ml_fit_result {
    struct ml_plan plans[ML_FIT_MAX_PLANS]; /* ranked, fitting plans */
    uint32_t n;
    struct ml_plan closest; /* when nothing fits: the plan with the least deficit */
    bool base_fits;         /* the run fits the target as it is */
    uint64_t base_device;   /* its device figure (as plans' device_used) */
    uint64_t base_estimate; /* its device estimate */
    bool point;             /* the figure is the estimate (--confidence point) */
    uint64_t target_bytes;  /* capacity minus the required headroom */
    uint64_t evaluated;     /* ledgers computed */
};

void ml_fit_opts_default(struct ml_fit_opts *o);

/*
 * Search the training knobs. The result holds up to o->max_plans fitting plans, ranked; with none,
 * `closest` says how far the best one is. Errors are those of ml_ledger_train on the base run.
 */
enum ml_status ml_fit_train(const struct ml_arch *arch, const struct ml_inventory *inv, const struct ml_train *base,
                            const struct ml_cluster *c, const struct ml_fit_opts *o, struct ml_fit_result *out,
                            struct ml_diag *diag);

/* Serving plans use the same result, with the changes as engine arguments. */
struct ml_fit_infer_plan {
    uint32_t n;
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t cost_permille;
    bool changes_method; /* quantization changes the model's outputs */
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

enum ml_status ml_fit_infer(const struct ml_arch *arch, const struct ml_inventory *inv, const struct ml_infer *base,
                            const struct ml_cluster *c, const struct ml_fit_opts *o, struct ml_fit_infer_result *out,
                            struct ml_diag *diag);

/*
 * Patch a LLaMA-Factory YAML (bytes) with the plan's ML_IN_YAML changes: each key's line keeps its
 * place, indentation and trailing comment; a key not in the file is appended under a comment. Only
 * top-level keys are patched. out receives the new text. deepspeed_name, when not NULL, sets the
 * deepspeed: key (the DeepSpeed file's path as the framework will find it from its run directory;
 * quoted when it is not plain).
 */
enum ml_status ml_patch_yaml(const char *data, size_t len, const struct ml_plan *p, const char *deepspeed_name,
                             struct ml_buf *out, struct ml_diag *diag);

/*
 * Patch a DeepSpeed JSON (bytes; NULL/0 to start from LLaMA-Factory's ds_z<stage> config) with
 * the plan's ML_IN_DEEPSPEED changes: only the changed values are rewritten (the last of a
 * duplicated key, the one in force), a missing key is added at the end of zero_optimization, and
 * every other byte of the user's text is kept (1e8 stays 1e8).
 */
enum ml_status ml_patch_deepspeed(const char *data, size_t len, const struct ml_plan *p, struct ml_buf *out,
                                  struct ml_diag *diag);

/* The environment file: one VAR=value line per ML_IN_ENV change. */
enum ml_status ml_patch_env(const struct ml_plan *p, struct ml_buf *out);

/* The files a plan writes (docs/files.md), each only when the plan changes it. */
enum { ML_PLAN_DS, ML_PLAN_YAML, ML_PLAN_ENV, ML_PLAN_FILES };
struct ml_plan_files {
    const char *name[ML_PLAN_FILES]; /* its name in the plan's directory */
    bool want[ML_PLAN_FILES];        /* the plan changes it */
};

/* Which files plan p changes: the DeepSpeed JSON (ds_name, the user's file's name; NULL: none,
 * "ds_config.json"), the YAML (yaml_name, NULL: "train.yaml"; also when a changed DeepSpeed file
 * is to be named by its deepspeed: key: a YAML was given, or the user has no DeepSpeed file) and
 * "memledger.env". An env-only plan writes only the environment file. */
void ml_plan_files(const struct ml_plan *p, const char *yaml_name, const char *ds_name, struct ml_plan_files *f);

/* The user's run as the plan writer patches it. */
struct ml_plan_src {
    const char *dir;     /* where the plan is written */
    const char *config;  /* the YAML; NULL: none */
    const char *ds_path; /* the DeepSpeed file in force; NULL or "": none */
    bool ds_in_run_dir;  /* the YAML's own deepspeed: value finds it from the run directory */
    const char *run_dir; /* --run-dir; NULL: the working directory */
};

/* How the plan writer reaches the user's files: the caller's I/O (src/: ml_read_file, ml_path_from). */
struct ml_plan_io {
    /* The bytes of the file at path, at most max; errors in d (naming the file). */
    ml_read_fn read;
    /* file's path as a program started in run_dir (NULL: the working directory) finds it, into
     * out[n]; false after the caller reported why not. */
    bool (*path_from)(const char *run_dir, const char *file, char *out, size_t n);
};

/* The bytes of each file plan p changes (ml_plan_files) into bytes[ML_PLAN_FILES]: the user's
 * DeepSpeed JSON and YAML read through io and patched (ml_patch_deepspeed, ml_patch_yaml; a new
 * DeepSpeed file from LLaMA-Factory's template), the environment file. The YAML's deepspeed:
 * names the DeepSpeed file in force as the framework finds it from the run directory: the
 * patched copy in u->dir, else the user's file (rewritten only when the YAML's own value would
 * not find it: *names_ds). False on an error: in d, or d->code ML_OK when io reported it. */
bool ml_plan_bytes(const struct ml_plan *p, const struct ml_plan_src *u, const struct ml_plan_io *io,
                   struct ml_plan_files *f, struct ml_buf *bytes, bool *names_ds, struct ml_diag *d);

/* ---- renderers (lib/render/fit_text.c, fit_json.c): what memledger fit prints ---------------- */

/* "env", "yaml", "deepspeed", "launch", "engine" (the "in" of fit's JSON). */
const char *ml_where_name(enum ml_where w);

/* What the renderers print besides the result. */
struct ml_layout;
struct ml_fit_view {
    const char *model;                /* "qwen2.5-14b" */
    const struct ml_cluster *cluster; /* the GPUs as given */
    uint32_t headroom_permille;       /* the target's headroom (training) */
    const struct ml_layout *layout;   /* text: width and colour (render.h); NULL: the natural layout */
    /* serving (--serve) */
    const char *model_id; /* the model as the engine loads it: hub id or path */
    bool python;          /* text: the engine's Python arguments instead of its flags */
};

/* The ranked plans (or the closest one) as text and as JSON (docs/cli/fit.md); the first failure. */
enum ml_status ml_render_fit_text(struct ml_buf *out, const struct ml_fit_view *v, const struct ml_fit_result *r);
enum ml_status ml_render_fit_json(struct ml_buf *out, const struct ml_fit_view *v, const struct ml_fit_result *r);
enum ml_status ml_render_fit_infer_text(struct ml_buf *out, const struct ml_fit_view *v, enum ml_engine engine,
                                        const struct ml_fit_infer_result *r);
enum ml_status ml_render_fit_infer_json(struct ml_buf *out, const struct ml_fit_view *v, enum ml_engine engine,
                                        const struct ml_fit_infer_result *r);

/* A serving plan as the engine is started: "vllm serve MODEL --flag value ..." or
 * "python -m sglang.launch_server --model-path MODEL ..." (python: the engine's Python call,
 * LLM(model=..., name=value) or sgl.Engine(model_path=..., ...)), every setting of s that is not
 * the engine's default; words a shell would split are quoted. */
enum ml_status ml_render_serve_command(struct ml_buf *out, const char *model_id, const struct ml_infer *s, bool python);

/* The model a serving engine loads for the MODEL argument arg: the hub id it resolved to (hub_id,
 * "" when none), else the directory of a config.json the user named ("m/config.json" -> "m"),
 * else arg as given (lib/render/serve_args.c). */
void ml_serve_model_id(const char *arg, const char *hub_id, char *out, size_t n);

/* The file `fit --serve --write DIR` writes (serve.sh): a shell script that starts the engine
 * with plan p, passing on its own arguments. */
enum ml_status ml_render_serve_script(struct ml_buf *out, const struct ml_fit_view *v,
                                      const struct ml_fit_infer_plan *p, uint32_t index);

#endif /* ML_FIT_H */
