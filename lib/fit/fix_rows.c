/*
 * fix_rows.c - what each kind of fix diagnose proposes is for (fit.h, struct ml_fix_row): the
 * kinds of run, the runtimes, the phases and the causes of each, one row each; the dialects' names. Moved out of
 * knobs.c, whose knob rows write the settings. Pure: no I/O, no allocation.
 */
#include <stdio.h>
#include <string.h>

#include "knobs.h"

/* ---- fixes ----------------------------------------------------------------------------------- */

/* What each kind of fix diagnose proposes is for (docs/cli/diagnose.md, "Advice that fits the
 * run"): the kinds of run it applies to (model-state relief, checkpointing, the loss, the
 * trainer's eval and save are training's; the engines' settings are serving's; the allocator,
 * the device and the tensor itself are everyone's), the runtimes whose settings write it (a
 * DeepSpeed key needs DeepSpeed, a vLLM flag a vLLM or SGLang server, -ngl llama.cpp), the phases
 * whose tensors it shrinks (the optimizer's states exist from the first step on, activations only
 * in forward, the loss and backward, a save's gathered copy at the save and the step after it),
 * and the causes it addresses (diagnose.h ML_CAUSE_*). */
#define T         ML_RUN_TRAINING
#define S         ML_RUN_SERVING
#define O         ML_RUN_OFFLINE
#define D         ML_RUN_DIFFUSION
#define TRAINERS  (ML_RT_LLAMAFACTORY | ML_RT_HF_TRAINER | ML_RT_ACCELERATE | ML_RT_TORCH)
#define SHARDERS  (ML_RT_LLAMAFACTORY | ML_RT_HF_TRAINER | ML_RT_ACCELERATE | ML_RT_DEEPSPEED)
#define ENGINES   (ML_RT_VLLM | ML_RT_SGLANG | ML_RT_TGI)
#define DS_JSON   (ML_RT_DEEPSPEED | ML_RT_LLAMAFACTORY | ML_RT_HF_TRAINER)
#define TORCH_ALL (ML_RT_ANY & ~ML_RT_GGML)
#define TRAIN_PH                                                                                                       \
    (ML_FPH_LOAD | ML_FPH_FORWARD | ML_FPH_LOSS | ML_FPH_BACKWARD | ML_FPH_OPTIMIZER | ML_FPH_SAVE | ML_FPH_EVAL)
#define STEP_PH  (ML_FPH_FORWARD | ML_FPH_LOSS | ML_FPH_BACKWARD | ML_FPH_OPTIMIZER | ML_FPH_SAVE | ML_FPH_EVAL)
#define ACT_PH   (ML_FPH_FORWARD | ML_FPH_LOSS | ML_FPH_BACKWARD | ML_FPH_EVAL | ML_FPH_GENERATE)
#define SERVE_PH (ML_FPH_SERVE_START | ML_FPH_SERVE_RUN)
#define C(c)     (1u << ML_CAUSE_##c)
#define STATES   (C(MODEL_STATES) | C(HOST_RAM) | C(OVERSIZE_TENSOR))
#define ACTS     (C(ACTIVATIONS) | C(LONG_SEQUENCE) | C(LOGITS) | C(EAGER_ATTENTION) | C(NO_GRAD_CHECKPOINTING))
#define ENGINE_C                                                                                                       \
    (C(KV_CACHE_BUDGET) | C(SERVING_HEADROOM) | C(SERVING_FREE_MEMORY) | C(LOGITS) | C(ACTIVATIONS) | C(LONG_SEQUENCE))
static const struct ml_fix_row fix_rows[ML_FIX_COUNT] = {
    {ML_FIX_FREE_DEVICE, ML_RUN_ANY, ML_RT_ANY, ML_FPH_ANY, C(OTHER_PROCESS) | C(SERVING_FREE_MEMORY) | C(UNKNOWN)},
    {ML_FIX_LOOK_EARLIER, ML_RUN_ANY, ML_RT_ANY, ML_FPH_ANY,
     C(MISLEADING) | C(TENSOR_LEAK) | C(ACTIVATIONS) | C(UNKNOWN)},
    {ML_FIX_KNOWN_ISSUE, ML_RUN_ANY, ML_RT_ANY, ML_FPH_ANY, ~0u},
    {ML_FIX_ALLOC_EXPANDABLE, ML_RUN_ANY, TORCH_ALL, ML_FPH_ANY, C(FRAGMENTATION) | C(CHECKPOINT_GATHER)},
    {ML_FIX_ALLOC_MAX_SPLIT, ML_RUN_ANY, TORCH_ALL, ML_FPH_ANY, C(FRAGMENTATION) | C(CHECKPOINT_GATHER)},
    {ML_FIX_EXPANDABLE_OFF, ML_RUN_ANY, TORCH_ALL, ML_FPH_ANY, C(MISLEADING)},
    {ML_FIX_ZERO3_BUFFERS, T, ML_RT_DEEPSPEED, ML_FPH_FORWARD | ML_FPH_BACKWARD | ML_FPH_SAVE | ML_FPH_COMM,
     C(FRAGMENTATION) | C(CHECKPOINT_GATHER) | C(ACTIVATIONS)},
    {ML_FIX_GATHER16_OFF, T, ML_RT_DEEPSPEED, ML_FPH_SAVE, C(CHECKPOINT_GATHER) | C(HOST_RAM)},
    {ML_FIX_ATTN, T | O | D, TRAINERS | ML_RT_DEEPSPEED, ACT_PH, C(EAGER_ATTENTION) | C(ACTIVATIONS)},
    {ML_FIX_CHUNKED_LOSS, T, TRAINERS | ML_RT_DEEPSPEED, ML_FPH_LOSS | ML_FPH_BACKWARD, C(LOGITS)},
    {ML_FIX_NO_FP32, ML_RUN_ANY, TORCH_ALL, ML_FPH_ANY, C(FP32_UPCAST) | C(LOGITS)},
    {ML_FIX_EVAL, T, ML_RT_LLAMAFACTORY | ML_RT_HF_TRAINER, ML_FPH_EVAL, C(EVAL_ACCUMULATION)},
    {ML_FIX_VLLM_MAX_LEN, S, ML_RT_VLLM | ML_RT_SGLANG, SERVE_PH, ENGINE_C},
    {ML_FIX_VLLM_UTIL_UP, S, ML_RT_VLLM | ML_RT_SGLANG, SERVE_PH, C(KV_CACHE_BUDGET)},
    {ML_FIX_VLLM_UTIL_DOWN, S, ML_RT_VLLM | ML_RT_SGLANG, SERVE_PH, ENGINE_C},
    {ML_FIX_VLLM_SEQS, S, ENGINES, SERVE_PH, ENGINE_C},
    {ML_FIX_KV_FP8, S, ML_RT_VLLM | ML_RT_SGLANG, SERVE_PH, C(KV_CACHE_BUDGET)},
    {ML_FIX_SERVE_FRACTION, S, ML_RT_TGI, SERVE_PH, ENGINE_C},
    {ML_FIX_ENFORCE_EAGER, S, ML_RT_VLLM | ML_RT_SGLANG, SERVE_PH, C(SERVING_HEADROOM)},
    /* quantized weights leave the room a generation's activations and KV cache need */
    {ML_FIX_QUANTIZE, S | O | D, ENGINES | ML_RT_HF_TRAINER | ML_RT_TORCH, ML_FPH_LOAD | ML_FPH_GENERATE | SERVE_PH,
     STATES | C(ACTIVATIONS)},
    {ML_FIX_GGML_LAYERS, S | O, ML_RT_GGML, ML_FPH_ANY, STATES | ACTS | C(KV_CACHE_BUDGET)},
    {ML_FIX_GGML_CTX, S | O, ML_RT_GGML, ML_FPH_ANY, ACTS | C(KV_CACHE_BUDGET) | C(HOST_RAM) | C(OVERSIZE_TENSOR)},
    {ML_FIX_GGML_KV, S | O, ML_RT_GGML, ML_FPH_ANY, ACTS | C(KV_CACHE_BUDGET) | C(OVERSIZE_TENSOR)},
    {ML_FIX_CUTOFF, T, TRAINERS, ACT_PH, ACTS},
    {ML_FIX_BATCH, T | O | D, TRAINERS | ML_RT_DEEPSPEED, ACT_PH, ACTS},
    {ML_FIX_EMPTY_CACHE_SAVE, T, TRAINERS, ML_FPH_SAVE, C(CHECKPOINT_GATHER) | C(FRAGMENTATION)},
    {ML_FIX_GRAD_CKPT, T, TRAINERS | ML_RT_DEEPSPEED, ML_FPH_FORWARD | ML_FPH_LOSS | ML_FPH_BACKWARD, ACTS},
    {ML_FIX_SAVE_STEPS, T, TRAINERS, ML_FPH_SAVE, C(CHECKPOINT_GATHER)},
    {ML_FIX_NCCL_MARGIN, ML_RUN_ANY, TORCH_ALL, ML_FPH_ANY, C(NCCL_BUFFERS) | C(FRAGMENTATION)},
    {ML_FIX_NCCL_SET_DEVICE, ML_RUN_ANY, TORCH_ALL, ML_FPH_ANY, C(NCCL_BUFFERS) | C(OTHER_PROCESS)},
    {ML_FIX_SHM, ML_RUN_ANY, ML_RT_ANY, ML_FPH_ANY, C(HOST_RAM)},
    {ML_FIX_HOST_LOAD, ML_RUN_ANY, TORCH_ALL, ML_FPH_LOAD | ML_FPH_SAVE, C(HOST_RAM)},
    {ML_FIX_OPTIM_8BIT, T, TRAINERS, STEP_PH, C(MODEL_STATES)},
    {ML_FIX_ZERO3, T, SHARDERS, TRAIN_PH, STATES},
    /* written as DeepSpeed's offload_optimizer / offload_param (the trainers pass the JSON on) */
    {ML_FIX_OFFLOAD_OPT, T, DS_JSON, STEP_PH, C(MODEL_STATES)},
    {ML_FIX_OFFLOAD_ALL, T, DS_JSON, TRAIN_PH, C(MODEL_STATES)},
    {ML_FIX_LORA, T, TRAINERS | ML_RT_DEEPSPEED, TRAIN_PH, C(MODEL_STATES)},
    {ML_FIX_SMALLER_TENSOR, ML_RUN_ANY, ML_RT_ANY, ML_FPH_ANY, C(OVERSIZE_TENSOR) | ACTS},
    {ML_FIX_HOST_FEWER_RANKS, ML_RUN_ANY, TORCH_ALL, ML_FPH_LOAD | ML_FPH_SAVE, C(HOST_RAM)},
    {ML_FIX_MORE_MEMORY, ML_RUN_ANY, ML_RT_ANY, ML_FPH_ANY, ~0u},
    {ML_FIX_RETRY_FREE, ML_RUN_ANY, TORCH_ALL, ML_FPH_ANY, C(TENSOR_LEAK)},
    /* Apple MPS: the allocator's high watermark is a hard limit below unified memory; raising it
     * lets the run take memory macOS keeps for itself (pytorch docs mps_environment_variables) */
    {ML_FIX_MPS_WATERMARK, ML_RUN_ANY, TORCH_ALL, ML_FPH_ANY, STATES | ACTS | C(UNKNOWN)},
    /* Windows: a process's commit is RAM plus the paging file (WinError 1455) */
    {ML_FIX_PAGEFILE, ML_RUN_ANY, ML_RT_ANY, ML_FPH_ANY, C(HOST_RAM)},
};
#undef T
#undef S
#undef O
#undef D
#undef TRAINERS
#undef SHARDERS
#undef ENGINES
#undef DS_JSON
#undef TORCH_ALL
#undef TRAIN_PH
#undef STEP_PH
#undef ACT_PH
#undef SERVE_PH
#undef C
#undef STATES
#undef ACTS
#undef ENGINE_C

const struct ml_fix_row *ml_fix_row(enum ml_fix_kind k)
{
    if ((unsigned)k >= ML_FIX_COUNT || fix_rows[k].kind != k)
        return NULL;
    return &fix_rows[k];
}

const char *ml_dialect_name(enum ml_dialect d)
{
    switch (d) {
    case ML_DIALECT_LF: return "LLaMA-Factory";
    case ML_DIALECT_HF: return "TrainingArguments";
    case ML_DIALECT_TRL: return "TRL";
    case ML_DIALECT_TORCHTUNE: return "torchtune";
    case ML_DIALECT_LITGPT: return "LitGPT";
    case ML_DIALECT_SWIFT: return "ms-swift";
    case ML_DIALECT_INFER: return "from_pretrained";
    case ML_DIALECT_DEEPSPEED: return "DeepSpeed";
    case ML_DIALECT_ENV: return "env";
    case ML_DIALECT_ENGINE:
    case ML_DIALECT_VLLM: return "vLLM";
    case ML_DIALECT_SGLANG: return "SGLang";
    case ML_DIALECT_TGI: return "TGI";
    case ML_DIALECT_LAUNCH: return "launch";
    case ML_DIALECT_COUNT: break;
    }
    return "?";
}

/* ---- the serving engines' own flags ---------------------------------------------------------- */

enum ml_dialect ml_engine_dialect(enum ml_dialect d)
{
    return d == ML_DIALECT_SGLANG || d == ML_DIALECT_TGI ? d : ML_DIALECT_VLLM;
}

/* The hints of the engine knobs whose value follows the run's (ML_KNOB_RELATIVE) for an engine
 * other than vLLM (the knob rows' hints are vLLM's flags): the settings they change, each in the
 * engine's own flag (a setting the engine lacks left out), and what to do with them. */
static const struct {
    enum ml_knob_id id;
    enum ml_setting set[2]; /* ML_SET_COUNT: none */
    const char *what;
} engine_hints[] = {
    {ML_KNOB_MAX_MODEL_LEN, {ML_SET_MAX_MODEL_LEN, ML_SET_COUNT}, "(shorter)"},
    {ML_KNOB_GPU_UTIL_DOWN, {ML_SET_GPU_UTIL, ML_SET_COUNT}, "lower (e.g. 0.85)"},
    {ML_KNOB_SERVE_BUDGET_2, {ML_SET_MAX_NUM_SEQS, ML_SET_MAX_BATCHED_TOKENS}, "lower"},
};

const char *ml_knob_hint(enum ml_knob_id id, enum ml_dialect d, char *buf, size_t n)
{
    const struct ml_knob *k = ml_knob_get(id);
    if (!k || !n || ml_engine_dialect(d) == ML_DIALECT_VLLM)
        return k ? k->hint : NULL;
    for (size_t i = 0; i < sizeof(engine_hints) / sizeof(engine_hints[0]); i++) {
        if (engine_hints[i].id != id)
            continue;
        const char *a = ml_setting_name(engine_hints[i].set[0], ml_engine_dialect(d));
        const char *b = ml_setting_name(engine_hints[i].set[1], ml_engine_dialect(d));
        if (!a && !b)
            return NULL;
        (void)snprintf(buf, n, "%s%s%s %s", a ? a : "", a && b ? " / " : "", b ? b : "", engine_hints[i].what);
        return buf;
    }
    return k->hint;
}

/* Whether an engine knob can be written in engine dialect d: one of the settings it changes
 * (applied to the defaults, or its hint) has d's flag. */
bool ml_knob_probe(const struct ml_knob *k, struct ml_train *t, struct ml_cluster *c, struct ml_infer *s,
                   struct ml_change *ch, uint32_t *n)
{
    struct ml_knob_ctx kx;
    memset(&kx, 0, sizeof(kx));
    kx.force = true;
    kx.max_gpus_per_node = 8;
    *n = 0;
    struct ml_edit e = {t, c, s, ch, n, 0};
    return k->apply(&kx, &e, 0);
}

bool ml_engine_knob_has_key(const struct ml_knob *k, enum ml_dialect d)
{
    char h[160];
    if (ml_knob_hint(k->id, d, h, sizeof(h)) && (k->flags & ML_KNOB_RELATIVE))
        return true;
    struct ml_infer s; /* (knobs link no ledger: the few fields the engine knobs read) */
    memset(&s, 0, sizeof(s));
    s.tp = s.pp = 1;
    s.gpu_util_permille = 900;
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t n;
    if (!ml_knob_probe(k, NULL, NULL, &s, ch, &n))
        return false;
    for (uint32_t i = 0; i < n; i++)
        if (ch[i].where == ML_IN_ENGINE && ml_setting_name(ch[i].set, ml_engine_dialect(d)))
            return true;
    return false;
}
