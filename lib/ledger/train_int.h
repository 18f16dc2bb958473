/*
 * train_int.h - the run as the training ledger sees it (private to lib/ledger): struct run, filled
 * by ml_ledger_setup_run (train_run.c) and read by the terms: model states (train_states.c),
 * activations (train_acts.c), stages and vision (train_stages.c), host RAM (train_host.c), the
 * notes (train_notes.c) and the framework-specific terms (litgpt_ledger.c); train_ledger.c
 * assembles them (ml_ledger_train).
 */
#ifndef ML_TRAIN_INT_H
#define ML_TRAIN_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ledger_int.h"
#include "memledger/arch.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/train.h"

/* How a trainable adapter's input is kept (notes §4.1, LoRA variants). */
enum adapter_mode {
    AD_SHARED,       /* adapters in the activation dtype, dropout 0: share the saved input */
    AD_DROPOUT,      /* lora_dropout > 0: dropped copy (2 B) + bool mask (1 B) per module */
    AD_DROPOUT_FP32, /* lora_dropout > 0 on fp32 adapters without autocast: 4 B copy + 1 B mask */
    AD_FP32_NOCAST,  /* fp32 adapters without autocast (ZeRO-3, DeepSpeed >= 0.19.2): fp32 copy */
    AD_FP32_AUTOCAST /* fp32 adapters under autocast: a new bf16 copy per module */
};

struct run {
    const struct ml_arch *a;
    const struct ml_inventory *inv;
    const struct ml_train *t;
    const struct ml_cluster *c;
    struct calc k;

    uint64_t b, s, tokens; /* micro-batch, sequence, b*s */
    uint32_t world;        /* data-parallel ranks */
    uint32_t n_shard;      /* ranks a ZeRO / FSDP partition spans */
    bool zero3, zero12, fsdp, ddp;
    bool lora, full, freeze, qlora;
    enum ml_ckpt_load load;  /* how the checkpoint's stored format loads (ml_train_checkpoint_load) */
    bool packed;             /* LoRA on a packed AWQ / GPTQ / compressed-tensors base (P_quant of its
                                weights stored packed, docs/ledger.md "Training on a quantized checkpoint") */
    bool packed_keeps_input; /* the packed kernel saves its input for backward (AWQ WQLinearMMFunction) */
    uint64_t max_qweight;    /* largest weight stored packed (elements) */
    uint64_t packed_bytes;   /* its weights as stored + the rest at the compute dtype (packed_sizes) */
    uint64_t packed_state;   /* its scales, zeros and group indices */
    uint64_t P_unpacked;     /* parameters it keeps at the compute dtype */
    uint32_t qbits;
    bool double_quant;               /* QLoRA base: bits and double quantization (flags or the checkpoint) */
    bool autocast;                   /* torch autocast wraps the forward (not under DeepSpeed) */
    bool trainable_fp32;             /* trainable params stored in fp32 on the GPU */
    bool trl_bf16_cast;              /* TRL cast a quantized model's trainable params to bf16 (O9) */
    uint32_t act_bytes;              /* bytes per activation element: 2 (bf16/fp16) or 4 (fp32) */
    uint32_t state_bytes;            /* bytes per element of Adam moments: 4, or 2 for pure bf16 */
    enum adapter_mode adapter_input; /* how the adapters keep their input */

    uint64_t P, P_t, P_f;      /* total, trainable, frozen parameters */
    uint64_t P_lora;           /* adapter parameters */
    uint64_t P_quant;          /* frozen parameters stored quantized (QLoRA linears, packed weights) */
    uint64_t P_add;            /* additional_target (modules_to_save) parameters */
    uint64_t max_linear;       /* largest nn.Linear weight inside a layer (elements) */
    uint64_t head_numel;       /* lm_head elements (V x h) */
    uint64_t embed_numel;      /* input embedding elements */
    uint64_t layer_params;     /* parameters of one decoder layer (average) */
    uint32_t trainable_layers; /* layers that keep activations for backward */

    /* LoRA adaptation per layer, counted per token (MoE experts: top_k of them run). */
    uint64_t ad_attn_in;             /* adapted modules reading the attention input (q/k/v, fused) */
    uint64_t ad_o;                   /* adapted output projections */
    uint64_t ad_mlp_in;              /* adapted gate/up (or up) projections */
    uint64_t ad_down;                /* adapted down projections */
    struct ml_lora_count lora_count; /* the adapted modules and their parameters */

    /* Framework facts the terms read (issue 12; docs/ledger.md). */
    bool litgpt;          /* Lightning LitGPT rules (litgpt_ledger.c) */
    bool litgpt_2023;     /* lit-gpt 2023 scripts: torch < 2.2 (lit-gpt pinned torch 2.1) */
    bool grads_kept;      /* zero_grad zeroes the grads in place (torch < 2.0), so they stay
                             allocated between steps; not under DeepSpeed or FSDP */
    bool bnb_keeps_input; /* MatMul4Bit saves its input (bitsandbytes < 0.43.2); LLM.int8 always */
    bool paged_optim;     /* bitsandbytes paged optimizer: big states in managed memory */
    bool fp32_stream;     /* QLoRA with fp32 norms (kbit_prepare): the residual stream is fp32 */
    bool dynamic_shapes;  /* batch shapes vary step to step and the cache is never emptied */
    bool ad_q, ad_k, ad_v, ad_proj, ad_mlp, ad_head; /* LitGPT's LoRA groups (lora_query, ...) */
    uint64_t P_lora_small;                           /* adapter elements in tensors below 1e5 elements */
    uint64_t max_param;                              /* largest parameter tensor (elements) */

    /* The stage (train_stages.c; docs/ledger.md "Stages"). */
    struct ml_stage_plan stage; /* what the stage holds beside the policy (stage_shape) */
    uint64_t b_sample;          /* per_device_train_batch_size, before the stage's batch factor */
    uint64_t s_full;            /* the sequence before context parallelism splits it */
    uint32_t tp, cp;            /* AutoTP and context-parallel sizes (1 = none) */
    uint64_t P_t_all;           /* trainable parameters over all tensor-parallel ranks */

    /* A vision-language model (train_stages.c). */
    struct ml_vlm_plan vlm; /* visual tokens and patches per sample */
    uint64_t P_vis, P_proj; /* vision tower and projector parameters (LLaMA-Factory's keys) */
    bool vis_trainable, proj_trainable, lang_frozen;
};

/* The leaf of a module path ("model.layers.0.mlp.down_proj" -> "down_proj"). */
static inline const char *leaf_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

/* Does LoRA adapt modules named leaf (one of the resolved target names)? */
static inline bool resolved(const struct ml_lora_count *lc, const char *leaf)
{
    for (uint32_t i = 0; i < lc->n_resolved; i++)
        if (!strcmp(lc->resolved[i], leaf))
            return true;
    return false;
}

/* Full fine-tuning with GA = 1 and unsharded grads: each layer's gradients appear as its saved
 * tensors are freed (autograd releases a node's saved variables once it has run; zero_grad sets
 * grads to None), so the backward peak is the larger of "every grad + one layer" and "the saved
 * set + the head's grad" rather than their sum (plan FT1). */
static inline bool grads_replace_activations(const struct run *R)
{
    return R->full && R->t->grad_accum <= 1 && !R->zero3 && !R->zero12 && !R->fsdp && !R->grads_kept;
}

/* The run (train_run.c): shape, method, dtypes, counts, framework facts; ML_OK or why not. */
enum ml_status ml_ledger_setup_run(struct run *R, struct ml_diag *diag);

/* Model states, ZeRO / FSDP buffers, the optimizer step and the load transients (train_states.c). */
void ml_ledger_model_states(struct run *R, struct sink *sk);
/* Frozen weights loaded fp32 that stay fp32 under autocast (load_dtype fp32; docs/ledger.md H6). */
bool ml_ledger_load_fp32(const struct run *R);
/* Frozen weights loaded fp16 under bf16 autocast (load_dtype fp16; docs/ledger.md SW1). */
bool ml_ledger_load_fp16(const struct run *R);
void ml_ledger_zero3_terms(struct run *R, struct sink *sk);
void ml_ledger_zero12_terms(struct run *R, struct sink *sk);
void ml_ledger_fsdp_terms(struct run *R, struct sink *sk);
void ml_ledger_step_terms(struct run *R, struct sink *sk);
void ml_ledger_load_terms(struct run *R, struct sink *sk);

/* Activations, logits and loss, the backward and eval working sets (train_acts.c). */
bool ml_ledger_tt_head_chunks(struct run *R, uint64_t *peak, uint64_t *last);
void ml_ledger_activation_terms(struct run *R, struct sink *sk);
/* TRL's fused LM head (train_acts.c; docs/ledger.md "TRL's fused LM head"): the bytes one call
 * holds for `rows` sequences of `toks` labelled tokens, at the peak of its forward (fwd) and, with
 * grad, of its backward (bwd); what it keeps for the backward (saved). */
struct fused_head {
    uint64_t fwd, bwd, saved;
};
uint64_t ml_trl_labelled_tokens(const struct run *R);
void ml_trl_fused_head_bytes(struct run *R, uint64_t rows, bool grad, bool fp32_model, struct fused_head *f);

/* The stage's models, forward and rollout and the vision tower (train_stages.c); the phases the
 * run has (with generation, the persistent entries gain it). */
void ml_ledger_stage_terms(struct run *R, struct sink *sk);
uint32_t ml_ledger_stage_phases(struct run *R, struct ml_ledger *l);

/* Host RAM (train_host.c) and the notes (train_notes.c). */
void ml_ledger_host_terms(struct run *R, struct ml_ledger *l);
void ml_ledger_train_notes(const struct run *R, const struct ml_train *t, struct ml_ledger *out);

/* LitGPT (Lightning Fabric) replaces the HF activation, head and FSDP rules (litgpt_ledger.c). */
void ml_litgpt_terms(struct run *R, struct sink *sk);
void ml_litgpt_fsdp_terms(struct run *R, struct sink *sk);

#endif /* ML_TRAIN_INT_H */
