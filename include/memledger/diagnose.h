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
#include <stddef.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/fit.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/oom.h"
#include "memledger/status.h"
#include "memledger/train.h"

/* The causes (enum ml_cause) and the kinds of fix (enum ml_fix_kind) are fit.h's: every fix is a
 * row of the knob table that knows the causes and phases it addresses (ml_fix_row). */

/*
 * The evidence model (docs/cli/diagnose.md, "How the causes are ranked"; validation/DIAGNOSE.md).
 * Each rule of the diagnosis establishes named evidence, one row of ML_EVIDENCE below; the causes
 * are ranked by the sum of the fitted weights of the evidence present, against a reference
 * outcome "none of these" (cannot tell) that scores 0: p = softmax over the candidates and the
 * reference. Candidates are only the causes that specific evidence names: a full card names no
 * cause ("no default guess", issue 13), it only weighs the candidates. A row is
 *   X(id, name, spec, group, reading, others, source, story)
 *   id       ML_EV_<id> of enum ml_evidence_id
 *   name     as the reports print it ("ph:load"): a contract, never renamed
 *   spec     1: specific (its causes become candidates); 0: context (it weighs candidates only)
 *   group    ML_EVG_<group>: rows of one tied group share one fitted weight, the reading's x 1 and
 *            each other cause's x 1/2 (so a cause with one example in the data still gets the
 *            weight its class of evidence earned on the others); FREE: a weight of its own per
 *            (row, cause)
 *   reading  the cause it reads first (ML_CAUSE_COUNT: none)
 *   others   the other causes it may mean, as EVC() bits
 *   source   ML_SRC_<source>: where evidence of this kind comes from (what would decide it)
 *   story    what it says, in a few words (the report's "why" when no rule tells more)
 * The weights are fitted on the corpus by validation/diagnose_report.c (its --weights mode writes
 * lib/diagnose/evidence_weights.inc; a ctest fails when that table is not the fit of the fixtures).
 */
#define EVC(c) (1u << ML_CAUSE_##c)
#define ML_EVIDENCE(X)                                                                                                 \
    /* the message names its cause (A1-A11) */                                                                         \
    X(K_VLLM_KV_SMALL, "kind:vllm_kv_too_small", 1, KIND, KV_CACHE_BUDGET, 0, MESSAGE,                                 \
      "vLLM's own arithmetic: the KV cache cannot hold one request of max_model_len")                                  \
    X(K_VLLM_NO_CACHE, "kind:vllm_no_kv_cache", 1, KIND, KV_CACHE_BUDGET, 0, MESSAGE,                                  \
      "vLLM found no memory left for the KV cache after the weights and the profile")                                  \
    X(K_VLLM_FREE, "kind:vllm_free_memory", 1, KIND, SERVING_FREE_MEMORY, EVC(OTHER_PROCESS), SMI,                     \
      "vLLM found less free memory at start-up than gpu_memory_utilization asks for")                                  \
    X(K_VLLM_WARMUP, "kind:vllm_warmup", 1, KIND, LOGITS, 0, MESSAGE,                                                  \
      "vLLM's sampler warm-up materialises the logits of max_num_seqs requests")                                       \
    X(K_SGLANG, "kind:sglang", 1, KIND, KV_CACHE_BUDGET, 0, MESSAGE,                                                   \
      "SGLang's static memory fraction leaves too little for the KV pool or prefill")                                  \
    X(K_HOST, "kind:host", 1, KIND, HOST_RAM, 0, DMESG,                                                                \
      "the host ran out of RAM (the kernel's OOM killer, the CPU allocator, Ray)")                                     \
    X(K_SIGKILL, "kind:sigkill", 1, FREE, HOST_RAM, 0, DMESG,                                                          \
      "killed by SIGKILL with no record of who sent it (the OOM killer, a scheduler or a person)")                     \
    X(K_NCCL, "kind:nccl", 1, KIND, NCCL_BUFFERS, 0, MESSAGE,                                                          \
      "NCCL's own allocation failed, outside PyTorch's allocator")                                                     \
    X(K_IMPOSSIBLE, "kind:impossible_size", 1, KIND, MISLEADING, 0, MESSAGE,                                           \
      "an impossible request: the symptom of an earlier failure")                                                      \
    X(K_DRIVER, "kind:driver", 1, KIND, MISLEADING, 0, MESSAGE,                                                        \
      "the driver API's error on the expandable-segments path")                                                        \
    X(K_NPU_WORKSPACE, "kind:npu_workspace", 1, FREE, ACTIVATIONS, 0, MESSAGE,                                         \
      "an NPU operator's workspace could not be allocated")                                                            \
    X(K_CUBLAS, "kind:cublas", 1, FREE, OTHER_PROCESS, 0, SMI,                                                         \
      "a cuBLAS/cuDNN handle or workspace could not be allocated")                                                     \
    X(K_RUNTIME, "kind:runtime", 0, FREE, COUNT, 0, ASYNC, "a raw runtime error with no accounting")                   \
    /* the step of a serving engine's start-up it failed in (issue 24, oom.h ml_serve_episode) */                      \
    X(EP_WEIGHTS, "ep:weights_load", 1, KIND, MODEL_STATES, 0, STEP,                                                   \
      "the engine was loading its weights: they do not fit the card (tensor parallel, quantization)")                  \
    X(EP_PROFILE, "ep:profile_run", 1, KIND, ACTIVATIONS, 0, STEP,                                                     \
      "the engine's profile run: a dummy batch of max_num_batched_tokens (and images) through the model")              \
    X(EP_SAMPLER, "ep:sampler_warmup", 1, KIND, LOGITS, 0, STEP,                                                       \
      "the sampler's warm-up: vocabulary x max_num_seqs logits in fp32")                                               \
    X(EP_KV_POOL, "ep:kv_pool", 1, KIND, SERVING_HEADROOM, EVC(KV_CACHE_BUDGET), STEP,                                 \
      "the KV pool took the engine's static share; nothing is left outside it")                                        \
    X(EP_GRAPH, "ep:graph_capture", 1, KIND, SERVING_HEADROOM, 0, STEP,                                                \
      "CUDA-graph capture after the KV pool took the engine's static share")                                           \
    /* the role of a failing llama.cpp / ggml buffer (issue 24) */                                                     \
    X(BUF_WEIGHTS, "buf:weights", 1, KIND, MODEL_STATES, 0, MESSAGE,                                                   \
      "a buffer of the model's weights could not be allocated: the layers offloaded do not fit")                       \
    X(BUF_KV, "buf:kv_cache", 1, KIND, KV_CACHE_BUDGET, 0, MESSAGE,                                                    \
      "the KV cache buffer could not be allocated: the context is too long for the memory it goes to")                 \
    X(BUF_COMPUTE, "buf:compute", 1, KIND, ACTIVATIONS, EVC(EAGER_ATTENTION), MESSAGE,                                 \
      "the compute graph's buffer could not be allocated: batch x context activations (and attention)")                \
    X(BUF_HOST, "buf:host", 1, KIND, HOST_RAM, 0, MESSAGE, "a CPU buffer could not be allocated: host RAM")            \
    /* consistency (issue 24): evidence that rules causes out whatever else names them */                              \
    X(V_WEIGHTS_SMALL, "veto:weights_small", 0, VETO, MODEL_STATES, 0, STEP,                                           \
      "the engine logged its weights well below the card: they are not what fills it")                                 \
    X(V_DEVICE_EVENT, "veto:device_event", 0, VETO, HOST_RAM, 0, MESSAGE,                                              \
      "a device's allocation failed: host RAM is not the cause")                                                       \
    X(V_FRAG_SHORT, "veto:frag_short", 0, VETO, FRAGMENTATION, 0, MESSAGE,                                             \
      "the stranded cache and the free memory together are below the request: defragmenting cannot free enough")       \
    X(V_FRAG_FREE, "veto:frag_free_covers", 0, VETO, FRAGMENTATION, 0, MESSAGE,                                        \
      "the device had more free than the request: the allocator would have mapped a new segment, a split cache is "    \
      "not why it failed")                                                                                             \
    X(V_OTHERS_SHORT, "veto:others_short", 0, VETO, OTHER_PROCESS, 0, MESSAGE,                                         \
      "the other processes and the free memory together are below the request: ending them cannot free enough")        \
    X(V_CKPT_ON, "veto:ckpt_frames", 0, VETO, NO_GRAD_CHECKPOINTING, 0, FRAMES,                                        \
      "the failing stack runs through torch.utils.checkpoint: gradient checkpointing is on")                           \
    X(V_HOST_EVENT, "veto:host_event", 0, VETO, FRAGMENTATION, 0, MESSAGE,                                             \
      "host memory ran out: the device allocator's split cache is not the cause")                                      \
    X(N_LIB_TINY, "num:lib_tiny_full", 0, VETO, COUNT, 0, SMI,                                                         \
      "a tiny request failed inside NCCL or cuBLAS: the card was already full, what filled it is the cause")           \
    X(K_HOST_HUGE, "host_alloc_huge", 1, KIND2, OVERSIZE_TENSOR, 0, MESSAGE,                                           \
      "a host allocation larger than any machine has")                                                                 \
    X(D_XPU_BIG, "dev:xpu_big_request", 1, KIND2, OVERSIZE_TENSOR, 0, DEVICE,                                          \
      "one allocation above the platform's per-allocation limit (Intel XPU: 4 GiB)")                                   \
    /* the message's numbers */                                                                                        \
    X(N_REQ_GT_CAP, "num:req_gt_cap", 1, KIND2, OVERSIZE_TENSOR, EVC(MISLEADING), MESSAGE,                             \
      "one request larger than the whole device")                                                                      \
    X(N_EMPTY_CARD, "num:empty_card", 1, KIND2, MISLEADING, EVC(OVERSIZE_TENSOR), MESSAGE,                             \
      "nothing is allocated yet: the first allocation fails")                                                          \
    X(N_FREE_COVERS, "num:free_covers_req", 1, FREE, MISLEADING, 0, MESSAGE,                                           \
      "the device reports more free memory than the request")                                                          \
    X(N_BIG_REQUEST, "num:big_request", 1, FREE, LOGITS,                                                               \
      EVC(EAGER_ATTENTION) | EVC(LONG_SEQUENCE) | EVC(ACTIVATIONS) | EVC(MODEL_STATES) | EVC(FP32_UPCAST), MODEL,      \
      "one big request below the card's size: a tensor of its own")                                                    \
    X(N_FULL, "num:full", 0, FREE, COUNT,                                                                              \
      EVC(MODEL_STATES) | EVC(ACTIVATIONS) | EVC(LONG_SEQUENCE) | EVC(LOGITS) | EVC(KV_CACHE_BUDGET) |                 \
          EVC(FRAGMENTATION) | EVC(TENSOR_LEAK) | EVC(CHECKPOINT_GATHER),                                              \
      CONFIG, "the card is full")                                                                                      \
    X(N_TINY_FULL, "num:tiny_full", 0, FREE, COUNT,                                                                    \
      EVC(MODEL_STATES) | EVC(ACTIVATIONS) | EVC(LONG_SEQUENCE) | EVC(LOGITS) | EVC(KV_CACHE_BUDGET), CONFIG,          \
      "a tiny request on a full card: what filled it is the cause")                                                    \
    X(N_CUT, "num:message_cut", 0, FREE, COUNT,                                                                        \
      EVC(MODEL_STATES) | EVC(ACTIVATIONS) | EVC(FRAGMENTATION) | EVC(OTHER_PROCESS), MESSAGE,                         \
      "the message is cut: its last sentence never came")                                                              \
    X(N_IMPOSSIBLE, "num:impossible", 0, FREE, COUNT, 0, MESSAGE, "the message's numbers cannot all be true")          \
    X(FRAG_HIGH, "frag:high", 1, FREE, FRAGMENTATION, 0, SUMMARY,                                                      \
      "the cache holds more than the request, and over 10 % of reserved, in pieces too small")                         \
    X(FRAG_MID, "frag:mid", 1, FREE, FRAGMENTATION, 0, SUMMARY,                                                        \
      "the cache holds more than the request in split pieces")                                                         \
    X(FRAG_WITH_FREE, "frag:with_free", 1, FREE, FRAGMENTATION, 0, SUMMARY,                                            \
      "with the free memory the cache would hold the request, were it one piece")                                      \
    X(FRAG_LOW, "frag:low", 1, FREE, FRAGMENTATION, 0, SUMMARY,                                                        \
      "the stranded cache exceeds the request but is a small share of reserved")                                       \
    X(DS_FLUSHES, "ds:cache_flushes", 1, FREE, FRAGMENTATION, 0, DS_LOG,                                               \
      "DeepSpeed flushed the allocator cache under pressure")                                                          \
    X(DS_MA_RISING, "ds:ma_rising", 1, FLAG, TENSOR_LEAK, 0, DS_LOG,                                                   \
      "MemoryAllocated grows from sample to sample with a fixed shape")                                                \
    /* the processes on the device (A1 traps) */                                                                       \
    X(P_OTHER_PROVEN, "proc:other_proven", 1, FREE, OTHER_PROCESS, 0, SMI,                                             \
      "a 'this process' line next to another process's line")                                                          \
    X(P_OTHER_AFTER_OWN, "proc:other_after_own", 1, PROC, OTHER_PROCESS, 0, SMI,                                       \
      "process lines beyond this process's own")                                                                       \
    X(P_OUTSIDE_GAP, "proc:outside_gap", 1, PROC, OTHER_PROCESS, 0, SMI,                                               \
      "in use on the device far beyond what PyTorch holds")                                                            \
    X(P_SIBLINGS, "proc:sibling_contexts", 1, FREE, OTHER_PROCESS, 0, SMI,                                             \
      "equal small process lines: other ranks' CUDA contexts on this GPU")                                             \
    /* the phase, from the frames and code lines (analysis 4) */                                                       \
    X(PH_LOAD, "ph:load", 1, PHASE, MODEL_STATES, EVC(HOST_RAM), FRAMES, "raised while loading the model")             \
    X(PH_OPTIMIZER, "ph:optimizer_step", 1, PHASE, MODEL_STATES, 0, FRAMES, "raised in the optimizer step")            \
    X(PH_SAVE, "ph:checkpoint_save", 1, PHASE, CHECKPOINT_GATHER, EVC(HOST_RAM), FRAMES,                               \
      "raised while saving a checkpoint")                                                                              \
    X(PH_EVAL, "ph:eval", 1, PHASE, EVAL_ACCUMULATION, 0, FRAMES, "raised in evaluation")                              \
    X(PH_LOSS, "ph:loss", 1, PHASE, LOGITS, EVC(FP32_UPCAST), FRAMES, "raised in the loss")                            \
    X(PH_SERVING_RUNTIME, "ph:serving_runtime", 1, PHASE, KV_CACHE_BUDGET, EVC(LONG_SEQUENCE) | EVC(FRAGMENTATION),    \
      FRAMES, "raised in a serving engine at run time")                                                                \
    X(PH_COMMUNICATION, "ph:communication", 1, PHASE, NCCL_BUFFERS, EVC(MISLEADING), FRAMES, "raised in a collective") \
    X(PH_BACKWARD, "ph:backward", 1, PHASE_WEAK, ACTIVATIONS, EVC(NO_GRAD_CHECKPOINTING), FRAMES,                      \
      "raised in backward")                                                                                            \
    X(PH_FORWARD, "ph:forward", 1, PHASE_WEAK, ACTIVATIONS, EVC(EAGER_ATTENTION), FRAMES,                              \
      "raised in the forward pass")                                                                                    \
    X(PH_GENERATE, "ph:generate", 1, PHASE_WEAK, ACTIVATIONS, EVC(MODEL_STATES), FRAMES, "raised in generation")       \
    X(PH_SERVING_STARTUP, "ph:serving_startup", 1, PHASE_WEAK, KV_CACHE_BUDGET, EVC(MODEL_STATES), FRAMES,             \
      "raised while a serving engine starts")                                                                          \
    /* what the frames and code lines say about the failing call */                                                    \
    X(FL_FORMAT_ERROR, "fl:format_error", 1, FLAG, MISLEADING, 0, FRAMES, "raised while formatting an error message")  \
    X(FL_EAGER, "fl:eager_code", 1, FLAG, EAGER_ATTENTION, 0, FRAMES,                                                  \
      "the failing code computes attention eagerly (s x s scores)")                                                    \
    X(FL_FP32_BIG, "fl:fp32_big", 1, FLAG, FP32_UPCAST, 0, FRAMES, "the failing code upcasts a big tensor to fp32")    \
    X(FL_RETRY_CHAIN, "fl:retry_chain", 1, FLAG, TENSOR_LEAK, 0, FRAMES, "the OOM was caught and the step retried")    \
    /* when it happened (analysis 5) */                                                                                \
    X(T_AFTER_SAVE, "t:after_save", 1, TIMING, CHECKPOINT_GATHER, EVC(FRAGMENTATION), STEP,                            \
      "right after a checkpoint save")                                                                                 \
    X(T_AT_EVAL, "t:at_eval", 1, TIMING, EVAL_ACCUMULATION, 0, STEP, "during evaluation")                              \
    X(T_MID_RUN, "t:mid_run", 1, TIMING, LONG_SEQUENCE, EVC(FRAGMENTATION), STEP, "mid-run, after steps that fit")     \
    X(T_FIRST_STEP, "t:first_step", 1, TIMING, MODEL_STATES, EVC(NO_GRAD_CHECKPOINTING), STEP, "at the first step")    \
    X(T_RESUME, "t:resume", 1, TIMING, MODEL_STATES, 0, STEP, "right after resuming")                                  \
    /* the kind of run */                                                                                              \
    X(C_GENERATE_SHORT_FULL, "ctx:generate_short_full", 1, CTX, MODEL_STATES, 0, CONFIG,                               \
      "generation with a short context on a full card: the weights fill it")                                           \
    X(C_ENGINE_FULL_NO_PHASE, "ctx:engine_full_no_phase", 1, CTX, MODEL_STATES, 0, CONFIG,                             \
      "a serving engine's card is full with no run-time cue: weights and pools")                                       \
    X(C_SERVING_ENGINE, "ctx:serving_engine", 0, FREE, COUNT,                                                          \
      EVC(KV_CACHE_BUDGET) | EVC(MODEL_STATES) | EVC(SERVING_FREE_MEMORY), CONFIG, "a serving engine")                 \
    /* what the configs and the model say (--config, --deepspeed, --model) */                                          \
    X(FP_MODEL_COPY, "fp:model_copy", 1, KIND2, MODEL_STATES, 0, MODEL,                                                \
      "the request is the model's parameters x 2 or 4 bytes: a whole copy")                                            \
    X(FP_LOGITS, "fp:logits", 1, KIND2, LOGITS, 0, MODEL,                                                              \
      "the request is batch x sequence x vocabulary of the run: the logits")                                           \
    X(FP_EAGER, "fp:eager_scores", 1, KIND2, EAGER_ATTENTION, 0, MODEL,                                                \
      "the request is a heads x s^2 score block of the model")                                                         \
    X(FP_WEIGHTS_EXCEED, "fp:weights_exceed", 1, KIND2, MODEL_STATES, 0, CONFIG,                                       \
      "the run's own ledger: what it loads alone does not fit the card")                                               \
    X(CFG_EAGER, "cfg:eager_attention", 1, FREE, EAGER_ATTENTION, 0, CONFIG, "the config runs attention eagerly")      \
    X(CFG_NO_GRAD_CKPT, "cfg:no_grad_checkpointing", 1, FREE, NO_GRAD_CHECKPOINTING, 0, CONFIG,                        \
      "the config turns gradient checkpointing off")                                                                   \
    X(KI_TRAINING, "issue:trl_grad_ckpt", 1, KIND, NO_GRAD_CHECKPOINTING, 0, CONFIG,                                   \
      "a known issue of the trainer's version")                                                                        \
    X(KI_XPU, "issue:xpu_first_alloc", 1, KIND, MISLEADING, 0, DEVICE, "a known issue of PyTorch on Intel XPU")        \
    X(KI_NCCL, "issue:nccl_cumem", 1, KIND, NCCL_BUFFERS, 0, DEVICE, "a known issue of NCCL's version")                \
    X(KI_SERVING_KV, "issue:vllm_profile", 1, KIND, KV_CACHE_BUDGET, 0, CONFIG, "a known issue of vLLM's version")

enum ml_evidence_id {
#define ML_EV_ID(id, name, spec, group, reading, others, source, story) ML_EV_##id,
    ML_EVIDENCE(ML_EV_ID)
#undef ML_EV_ID
        ML_EV_COUNT
};

/* The tied groups of evidence weights. */
enum ml_evidence_group {
    ML_EVG_FREE,
    ML_EVG_KIND,
    ML_EVG_KIND2,
    ML_EVG_PHASE,
    ML_EVG_PHASE_WEAK,
    ML_EVG_FLAG,
    ML_EVG_TIMING,
    ML_EVG_CTX,
    ML_EVG_PROC,
    ML_EVG_VETO, /* no weight: the row's causes are no candidates (a consistency rule) */
    ML_EVG_COUNT
};

/* Where evidence comes from: what to look at to decide between causes. */
enum ml_evidence_source {
    ML_SRC_MESSAGE, /* the whole OOM message */
    ML_SRC_FRAMES,  /* the frames above the cut: the whole traceback of the failing rank */
    ML_SRC_STEP,    /* the progress, save and eval lines before the OOM */
    ML_SRC_SMI,     /* nvidia-smi / rocm-smi / npu-smi at the failure */
    ML_SRC_CONFIG,  /* the run's config: --config, --deepspeed, --model */
    ML_SRC_MODEL,   /* the model: --model (parameters, vocabulary, heads) */
    ML_SRC_SUMMARY, /* torch.cuda.memory_summary() at the failure */
    ML_SRC_DS_LOG,  /* DeepSpeed's log: cache-flush warnings, see_memory_usage */
    ML_SRC_DEVICE,  /* the device, its driver and its per-allocation limits */
    ML_SRC_DMESG,   /* the kernel's log: the OOM killer's record */
    ML_SRC_ASYNC,   /* the failing call itself: CUDA_LAUNCH_BLOCKING=1, mem_get_info, CUDA_VISIBLE_DEVICES */
    ML_SRC_COUNT
};

/* A row of ML_EVIDENCE. */
struct ml_evidence_def {
    const char *name;
    bool specific;
    enum ml_evidence_group group;
    enum ml_cause reading; /* ML_CAUSE_COUNT: none */
    uint32_t causes;       /* EVC() bits of every cause it names or weighs (the reading too) */
    enum ml_evidence_source source;
    const char *story;
};

const struct ml_evidence_def *ml_evidence_row(enum ml_evidence_id id);

/* The evidence one diagnosis holds. */
struct ml_features {
    bool on[ML_EV_COUNT];
};

/* Weights in milli-units per (evidence, cause), and the least p of an answer (permille). */
struct ml_evidence_weights {
    int32_t w[ML_EV_COUNT][ML_CAUSE_COUNT];
    uint32_t tau_permille;
};

/* The committed fit (lib/diagnose/evidence_weights.inc). */
extern const struct ml_evidence_weights ml_evidence_fitted;

/* The ranked causes of a set of features. */
struct ml_ranking {
    uint32_t n; /* candidates, most likely first */
    enum ml_cause cause[ML_CAUSE_COUNT];
    uint32_t p_permille[ML_CAUSE_COUNT]; /* p of each, permille */
    double p[ML_CAUSE_COUNT];
    int32_t score_milli[ML_CAUSE_COUNT]; /* the sum of its weights */
    uint32_t p_none_permille;            /* p of the reference: none of these (cannot tell) */
    double p_none;
    bool cannot_tell; /* no candidate beats the reference with p >= tau */
};

/* Rank the candidates of f with the weights w (pure). */
void ml_evidence_rank(const struct ml_features *f, const struct ml_evidence_weights *w, struct ml_ranking *r);

#define ML_DIAG_MAX_FINDINGS   8
#define ML_DIAG_MAX_EVIDENCE   4
#define ML_DIAG_MAX_FIXES      6
#define ML_DIAG_MAX_CHECKS     8
#define ML_DIAG_MAX_FEATURES   6
#define ML_DIAG_MAX_DECIDE     4
#define ML_DIAG_MAX_HYPOTHESES 48

/* What the configs say about the run (every pointer may be NULL, every number 0 = unknown). */
/* The run settings a log prints (issue 24 item 5; lib/diagnose/run_args.c): an argparse
 * Namespace(...), a TrainingArguments dump, a launcher's or an engine's argument line. They name
 * the kind of run and its runtime, say which fixes are in effect, and size the failing request.
 * Read from the first ML_LOG_ARGS_BYTES of each log, a line at a time. */
#define ML_LOG_ARGS_BYTES ((uint64_t)2 << 20)
enum { ML_ARGS_FP32 = 1, ML_ARGS_FP16, ML_ARGS_BF16 }; /* struct ml_log_args dtype */
struct ml_log_args {
    uint32_t runs;          /* ML_RUN_* the settings name */
    uint32_t runtimes;      /* ML_RT_* the settings name */
    uint64_t batch;         /* the per-device batch, 0 = not read */
    bool batch_named;       /* batch is a per-device key's (not a script's batch_size) */
    uint64_t seq_len;       /* the sequence length (max_length, cutoff_len, max_model_len, n_ctx), 0 = not read */
    uint64_t max_model_len; /* a serving engine's own (vLLM max_model_len, SGLang context_length), 0 = not read */
    uint32_t tp, pp;        /* tensor and pipeline parallelism, 0 = not read */
    uint32_t procs;         /* processes (nproc_per_node, num_processes), 0 = not read */
    int8_t grad_ckpt;       /* gradient checkpointing: 1 on, 0 off, -1 not read */
    int8_t optim_8bit;      /* an 8-bit or paged optimizer */
    int8_t liger;           /* Liger's fused kernels (chunked loss) */
    int8_t attn_efficient;  /* SDPA or flash attention (0: eager) */
    int8_t full_shard;      /* FSDP full_shard */
    int8_t enforce_eager;   /* a serving engine without CUDA graphs */
    int8_t quantized;       /* weights already quantized: a --quantization value, or gptq / awq / autoround /
                              4bit / int4 / fp8 ... in the model's path (1), none (0), -1 not read */
    int8_t rocm_fp8;        /* a ROCm arch the log names (gfx...): 1 with fp8 in vLLM (gfx94x, gfx95x,
                              gfx12xx), 0 without, -1 none named */
    uint8_t kv_bits;        /* the KV cache type set (llama.cpp type_k / type_v, --cache-type-k,
                              OLLAMA_KV_CACHE_TYPE): the widest's bits per element, 0 not read */
    uint32_t engine_files;  /* ML_RT_VLLM / _SGLANG / _TGI: the serving engines whose own server files or
                              commands the log names (an SGLang server's frames may run vLLM's layers) */
    uint8_t dtype;          /* a serving engine's --dtype: ML_ARGS_FP32 / _FP16 / _BF16, 0 not read (auto) */
    uint8_t trainer_files;  /* 1 + enum ml_dialect of the trainer whose own files the frames name
                              (ms-swift's swift/cli/rlhf.py), 0 none */
    uint32_t n_read;        /* settings read */
    struct ml_oom_ref ref;  /* the first line a setting was read from */
    /* reading state */
    uint32_t file;
    uint64_t line, bytes;
    size_t carry_len;
    char carry[4096];
};
void ml_log_args_init(struct ml_log_args *a);
/* The next n bytes of input file (a new file index restarts the count of bytes and lines). */
void ml_log_args_feed(struct ml_log_args *a, uint32_t file, const char *buf, size_t n);
/* The last line of the current input, when it has no newline. */
void ml_log_args_end(struct ml_log_args *a);
/* The GPUs a model is split over (tp x pp, or the processes when more), 0 = not read. */
uint32_t ml_log_args_world(const struct ml_log_args *a);

struct ml_diag_setup {
    const struct ml_arch *arch; /* the model (with inv) */
    const struct ml_inventory *inv;
    const struct ml_train *train;              /* the run's settings (with arch, inv and cluster) */
    const struct ml_cluster *cluster;          /* GPU capacity and count */
    const struct ml_infer *serve;              /* a serving engine's settings (with arch, inv and cluster):
                                         serving fixes are priced with the inference ledger */
    uint64_t params;                           /* total parameters, 0 = unknown */
    uint64_t save_steps;                       /* YAML save_steps, 0 = unknown */
    uint64_t eval_steps;                       /* YAML eval_steps, 0 = unknown */
    bool world_guessed;                        /* cluster's GPU count was inferred (ml_diagnose_guess_world) */
    bool capacity_from_log;                    /* cluster's capacity is the log's "total capacity" */
    const char *config_name;                   /* for messages ("train.yaml"), NULL if none */
    const char *ds_name;                       /* "ds.json", NULL if none */
    const struct ml_evidence_weights *weights; /* NULL: the committed fit (ml_evidence_fitted); the
                                                  validation's held-out fits pass their own */
    const struct ml_log_args *args;            /* the run settings the log prints, NULL if none read */
};

struct ml_evidence {
    uint32_t file;             /* input index */
    uint64_t line;             /* 1-based; 0 = derived (no line) */
    char text[ML_OOM_EXCERPT]; /* the line (cleaned) or the derivation */
};

struct ml_fix {
    enum ml_fix_kind kind;
    enum ml_knob_id knob;   /* the knob it applies, ML_KNOB_NONE for advice */
    uint64_t value;         /* the knob's value from the log (0: the knob's own rule) */
    uint32_t cost;          /* the one cost scale, lower is cheaper (ml_knob_rank) */
    char action[200];       /* what to do */
    char setting[200];      /* the exact setting: env var, YAML/JSON key, flag */
    bool has_saves;         /* saves_bytes is known */
    uint64_t saves_bytes;   /* device bytes saved at the peak (ledger) or freed (log) */
    bool saves_from_ledger; /* true: ledger with the fix; false: the log's own numbers */
    int8_t fits;            /* 1 then fits, 0 still short, -1 unknown */
    uint64_t device_after;  /* ledger device figure with the fix, 0 = none */
    char note[200];         /* caveat ("on ROCm only if ...") or "" */
    bool off_phase;         /* it shrinks none of the failing phase's tensors (ml_fix_row): listed after */
    bool gpus_setting;      /* more GPUs: its setting is written for the run (the engine's tensor parallelism) */
};

/* A row of evidence behind a finding and its fitted weight for the finding's cause. */
struct ml_finding_feature {
    enum ml_evidence_id id;
    int32_t weight_milli;
};

struct ml_finding {
    enum ml_cause cause;
    uint32_t confidence; /* permille, 0..1000: p of the cause (the evidence model) */
    char why[360];       /* one or two sentences with the numbers */
    uint32_t n_ev;
    struct ml_evidence ev[ML_DIAG_MAX_EVIDENCE];
    uint32_t n_fix;
    struct ml_fix fix[ML_DIAG_MAX_FIXES];
    uint32_t n_feat; /* the evidence that named or weighed it, largest weight first */
    struct ml_finding_feature feat[ML_DIAG_MAX_FEATURES];
};

/* What one big request may be, from its size alone (issue 13): a hypothesis, not evidence, unless
 * it matches the model given (--model). */
enum ml_request_what {
    ML_REQ_LOGITS,  /* tokens x vocabulary x bytes: the logits of a batch */
    ML_REQ_SCORES,  /* heads x s^2 x bytes: eager attention's score block (per sequence) */
    ML_REQ_WEIGHTS, /* parameters x bytes: a whole copy of the weights */
    ML_REQ_LAYER,   /* one weight matrix of the model given (rows x columns x bytes) */
    ML_REQ_COUNT
};

struct ml_request_hypothesis {
    enum ml_request_what what;
    uint64_t count; /* tokens; s (the sequence); parameters; rows */
    uint64_t per;   /* vocabulary; heads; -; columns */
    uint32_t bytes; /* bytes per element: 4 (fp32) or 2 (16-bit) */
    bool model;     /* it matches the model given (within 1 %) */
    bool log;       /* it matches the run settings the log prints (ml_log_args, within 1 %) */
};

struct ml_big_request {
    bool has; /* the request is >= 1 GiB, >= 10 % of the card and fits it */
    uint64_t bytes;
    uint32_t share_permille; /* of the card */
    int32_t likely;          /* the hypothesis the phase (or the model) points at, -1 */
    uint32_t n;
    struct ml_request_hypothesis h[ML_DIAG_MAX_HYPOTHESES];
};

struct ml_diagnosis {
    int32_t primary;     /* index of the event diagnosed, -1 when none */
    uint32_t n_findings; /* sorted by confidence, highest first */
    struct ml_finding f[ML_DIAG_MAX_FINDINGS];

    /* Derived from the primary event (valid when has_device_numbers). */
    bool has_device_numbers;
    uint64_t used;     /* total - free */
    uint64_t held;     /* PyTorch reserved: allocated + reserved-unallocated */
    uint64_t stranded; /* reserved but unallocated */
    bool has_stranded;

    /* The training ledger of the run, when the configs were given. */
    bool has_ledger;
    struct ml_ledger ledger;    /* as configured */
    enum ml_phase ledger_phase; /* the ledger phase matching the event */
    uint64_t ledger_at_phase;   /* allocated bytes the ledger predicts there */
    uint64_t gap;               /* bytes the log needed beyond the ledger's device figure */

    /* The inference ledger of the serving engine, when its settings were given (setup.serve). */
    bool has_serve;
    struct ml_serve serve; /* as configured */
    bool has_kv_log;       /* the log states the KV cache (profiling line, or tokens) */
    uint64_t kv_log;       /* its bytes; what-ifs carry kv_log - serve.kv_bytes along */

    uint32_t n_checks;
    char checks[ML_DIAG_MAX_CHECKS][512]; /* what to look at next */
    uint32_t runs;                        /* ML_RUN_* the log and the setup show (the fixes were fitted to) */

    /* The evidence model: what the log holds (features: also what validation/diagnose_report.c
     * fits the weights on), the ranking it gives, and when it cannot tell. */
    struct ml_features features;
    struct ml_ranking ranking;
    bool cannot_tell; /* the first cause is not clearly more likely than none */
    uint32_t p_none;  /* permille: none of the candidates (cannot tell) */
    uint32_t n_decide;
    char decide_by[ML_DIAG_MAX_DECIDE][200]; /* what would decide it */

    /* What the rules read of the primary event. */
    uint32_t implausible;            /* ml_oom_check_numbers bits: relations that fail */
    struct ml_oom_attribution procs; /* its process lines */
    struct ml_big_request big;       /* one big request below the card */

    /* Working memory of the what-ifs and the ranking (not part of the result). */
    struct ml_diag_scratch {
        struct ml_ledger led;
        struct ml_train t;
        struct ml_finding f[ML_DIAG_MAX_FINDINGS];
    } scratch;
};

const char *ml_cause_name(enum ml_cause c);

/* The kinds of run a fix of kind k applies to (ML_RUN_* bits; its row, ml_fix_row). */
uint32_t ml_fix_runs(enum ml_fix_kind k);

/* The fixes as the report lists them: every fix of every finding once by kind (not those of the
 * causes under 0.10 but the first's, unless all), those for the failing phase first, each group
 * cheapest first; returns how many (<= max). */
size_t ml_diagnosis_fixes(const struct ml_diagnosis *dg, const struct ml_fix **out, size_t max, bool all);

/* The event to diagnose: the first device OOM (allocator family first), else the first event;
 * -1 when the incident has none. */
int32_t ml_diagnose_primary(const struct ml_incident *inc);

/*
 * Diagnose inc (the primary event and its context) with what setup knows (NULL = nothing).
 * Errors: ML_ERR_INVALID when inc has no event; ledger errors (ML_ERR_OVERFLOW, ML_ERR_INVALID)
 * when the setup's ledger cannot be computed.
 */
enum ml_status ml_diagnose(const struct ml_incident *inc, const struct ml_diag_setup *setup, struct ml_diagnosis *out,
                           struct ml_diag *diag);

/*
 * The world size (GPUs in all) whose training ledger best matches the log: the event's
 * allocated bytes against the ledger's allocated bytes in the event's phase, over powers of two
 * from the largest rank seen + 1 up to 1024 GPUs. c->gpus_per_node and c->nodes are set to the
 * answer (nodes 1). Returns the chosen count, 0 when nothing could be compared.
 */
uint32_t ml_diagnose_guess_world(const struct ml_incident *inc, const struct ml_arch *arch,
                                 const struct ml_inventory *inv, const struct ml_train *t, struct ml_cluster *c);

#endif /* ML_DIAGNOSE_H */
