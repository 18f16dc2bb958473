/*
 * train_stages.c - the entries a stage and a vision tower add to the training ledger
 * (docs/ledger.md "Stages" and "Vision-language training"): the reference, reward and value
 * models, the no-grad forward, rollout generation, and the tower's activations; and which entries
 * live through generation.
 *
 * Each term cites the trainer's source (trl, LLaMA-Factory, transformers) or the shared
 * accounting notes (reference/accounting-notes.md, "notes §x.y"). Vocabulary as in train_ledger.c.
 */
#include <string.h>

#include "i18n.h"
#include "memledger/infer.h"
#include "train_int.h"

/* The tower's activations: a trainable tower keeps, per block and patch, the ViT layer's saved
 * tensors (norm inputs, q/k/v, the attention output, the MLP input and intermediates: e x (8 h +
 * 3 i) for a gated MLP, 2 i plain; attention per image by flash/SDPA, no s^2) or, with gradient
 * checkpointing, the block input (e x h) and one recomputed block in backward; a frozen tower
 * runs without autograd (nothing needs a grad) and holds one block's working set at a time. */
static void vision_terms(struct run *R, struct sink *sk)
{
    const struct ml_vision *v = &R->a->vision;
    if (v->kind == ML_VISION_NONE || !R->vlm.patches)
        return;
    struct calc *k = &R->k;
    uint64_t e = R->act_bytes, h = v->hidden, i = v->intermediate;
    uint64_t patches = mul(k, R->b, R->vlm.patches);
    uint64_t per_block = mul(k, e, add(k, 8 * h, mul(k, v->kind == ML_VISION_QWEN2_5 ? 3 : 2, i)));
    uint64_t block = mul(k, patches, per_block);
    uint32_t fwd = ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE);
    if (!R->vis_trainable) {
        entry(sk, ML_C_VISION_ACT, block, ML_PH(ML_PHASE_FORWARD), ML_FIG_ALLOCATED,
              "LLaMA-Factory visual.py (tower frozen); transformers Qwen2_5_VisionTransformerPretrainedModel",
              _("frozen tower, no autograd: one block's working set on %llu patches"), (unsigned long long)patches);
        return;
    }
    if (R->t->grad_ckpt != ML_GC_OFF) {
        entry(sk, ML_C_VISION_ACT, mul3(k, v->depth, patches, mul(k, e, h)), fwd, ML_FIG_ALLOCATED,
              "notes §4.2 applied to the tower's blocks", _("%u blocks x %llu B x %llu patches x h (checkpoints)"),
              v->depth, (unsigned long long)e, (unsigned long long)patches);
        entry(sk, ML_C_VISION_ACT, block, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
              "notes §4.2 applied to the tower's blocks", _("one recomputed block on %llu patches"),
              (unsigned long long)patches);
    } else {
        entry(sk, ML_C_VISION_ACT, mul(k, v->depth, block), fwd, ML_FIG_ALLOCATED,
              "notes §4.1 applied to the tower's blocks", _("%u blocks x %llu B/patch x %llu patches"), v->depth,
              (unsigned long long)per_block, (unsigned long long)patches);
    }
}

/* ==== stages: the reference, reward and value models, rollout (docs/ledger.md "Stages") ==== */

/* Frozen copy of the policy's architecture (reference or reward model): the compute dtype, or a
 * bitsandbytes 4/8-bit base (every linear but the head) that DeepSpeed and FSDP do not wrap
 * (dpo/trainer.py, ppo/trainer.py: quantized models skip prepare_deepspeed); sharded like the
 * policy under ZeRO-3 and FSDP, whole under ZeRO-0/1/2 (trl prepare_deepspeed runs stage 0). */
static uint64_t frozen_copy_bytes(struct run *R, uint32_t qbits, bool *sharded)
{
    struct calc *k = &R->k;
    *sharded = false;
    if (!qbits) {
        *sharded = R->zero3 || R->fsdp;
        return mul(k, part(R->P, *sharded ? R->n_shard : 1), R->act_bytes);
    }
    uint64_t q = 0;
    for (uint32_t i = 0; i < R->inv->n; i++) {
        const struct ml_tensor *x = &R->inv->t[i];
        if (!x->mtp && (x->linear || x->conv1d) && !strcmp(x->param, "weight") && x->kind != ML_MOD_LM_HEAD)
            q = add(k, q, x->params);
    }
    uint64_t rest = R->P > q ? R->P - q : 0;
    uint64_t qb = qbits == 8 ? q : frac(k, q, 1, 2);
    if (qbits == 4) /* absmax, double-quantized as LLaMA-Factory's default (notes §4.5) */
        qb = add(k, qb, add(k, frac(k, q, 1, 64), frac(k, q, 4, 16384)));
    return add(k, qb, mul(k, rest, 2));
}

/* TRL DPO loads the reference at the policy's dtype (dpo_trainer.py __init__:
 * ref_model_init_kwargs dtype defaults to self.model.dtype; utils.py create_model_from_path): a
 * full fine-tune whose master weights are fp32 under autocast (not DeepSpeed, which casts the
 * engine's module) gets an fp32 reference (docs/ledger.md O7). */
static bool trl_ref_fp32(const struct run *R)
{
    return R->t->framework == ML_FW_TRL && R->full && R->trainable_fp32 && R->autocast && R->act_bytes == 2 &&
           !R->stage.ref_quant_bits;
}

static void stage_models(struct run *R, struct sink *sk)
{
    struct calc *k = &R->k;
    const struct ml_stage_plan *p = &R->stage;
    uint64_t vh = add(k, R->a->hidden, 1); /* v_head.summary: Linear(h, 1) with a bias */
    bool sh = false;
    if (p->ref == ML_REF_COPY) {
        uint64_t b = frozen_copy_bytes(R, p->ref_quant_bits, &sh);
        uint32_t wb = R->act_bytes;
        if (trl_ref_fp32(R)) { /* docs/ledger.md O7 */
            b = mul(k, part(R->P, sh ? R->n_shard : 1), 4);
            wb = 4;
        }
        entry(sk, ML_C_REF_WEIGHTS, b, ML_PH_TRAIN, ML_FIG_ALLOCATED, p->source,
              p->ref_quant_bits ? _("frozen %u-bit copy of %llu params (not sharded)")
                                : _("frozen copy: %u B x %llu params%s"),
              p->ref_quant_bits ? p->ref_quant_bits : wb, (unsigned long long)R->P, sh ? " / N" : "");
    }
    if (p->reward_copy) {
        uint64_t b = add(k, frozen_copy_bytes(R, p->reward_quant_bits, &sh), mul(k, vh, 2));
        entry(sk, ML_C_REWARD_WEIGHTS, b, ML_PH_TRAIN, ML_FIG_ALLOCATED, p->source,
              _("reward_model_type full: frozen copy of %llu params + value head%s"), (unsigned long long)R->P,
              sh ? " / N" : "");
    } else if (p->reward_adapter && R->lora) {
        /* load_adapter(reward) upcasts the adapter to fp32 (PEFT autocast_adapter_dtype); its
         * shape is taken to be the policy's adapter. */
        entry(sk, ML_C_REWARD_WEIGHTS, add(k, mul(k, R->P_lora, 4), mul(k, vh, 4)), ML_PH_TRAIN, ML_FIG_ALLOCATED,
              p->source, _("reward_model_type lora: a second adapter, 4 B x %llu (as the policy's) + reward head"),
              (unsigned long long)R->P_lora);
    }
    if (p->value_head)
        entry(sk, ML_C_VALUE_HEAD, mul(k, vh, 16), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
              "trl AutoModelForCausalLMWithValueHead (ValueHead.summary)",
              _("v_head Linear(h, 1): %llu params x 16 B (fp32 weight, grad, two moments)"), (unsigned long long)vh);
}

/* The no-grad forward of each step (reference log-probs, KTO's kl batch) while the policy's
 * logits are still live: bf16 logits, their fp32 copy (6 B), then log_softmax (4 B) while the
 * copy lives: 8 B x sequences x s x V (concatenated_forward + get_batch_logps). */
static void stage_forward(struct run *R, struct sink *sk)
{
    const struct ml_stage_plan *p = &R->stage;
    if (!p->nograd_factor || p->ref == ML_REF_PRECOMPUTED)
        return;
    if (p->fused_head) {
        /* TRL >= 1.15: each no-grad forward (the reference's, one batch at a time; KTO's KL rows
         * after the policy's) runs through the fused head while the policy's head keeps only its
         * saved set: what it holds beyond the policy head's backward peak (docs/ledger.md "TRL's
         * fused LM head"; dpo_trainer.py _compute_loss, kto_trainer.py _compute_loss). */
        struct fused_head pol, ref;
        ml_trl_fused_head_bytes(R, R->b, true, R->full && R->trainable_fp32, &pol);
        ml_trl_fused_head_bytes(R, R->b, false, trl_ref_fp32(R), &ref);
        uint64_t at = add(&R->k, pol.saved, ref.fwd), top = max2(pol.fwd, pol.bwd);
        entry(sk, ML_C_REF_FORWARD, at > top ? at - top : 0, ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE),
              ML_FIG_ALLOCATED, "trl trainer/utils.py add_fused_lm_head (the reference's log-probs)",
              _("no-grad fused head (%s) over the policy head's peak"),
              p->ref == ML_REF_ADAPTER_OFF ? _("adapter disabled") : _("reference model"));
        return;
    }
    uint64_t seqs = mul(&R->k, R->b_sample, p->nograd_factor);
    uint64_t toks = p->completion_logits ? p->gen_tokens : R->s;
    entry(sk, ML_C_REF_FORWARD, mul3(&R->k, mul(&R->k, seqs, toks), R->a->vocab, p->nograd_bytes),
          ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED, p->source,
          _("no-grad forward (%s), %llu sequence%s: %u B x %s x V"),
          p->ref == ML_REF_ADAPTER_OFF ? _("adapter disabled")
          : p->ref == ML_REF_COPY      ? _("reference model")
                                       : _("kl batch"),
          (unsigned long long)seqs, seqs == 1 ? "" : "s", p->nograd_bytes,
          p->completion_logits ? _("completion tokens") : "s");
}

/* Generation (PPO, GRPO): the KV cache of one generation batch, the whole policy gathered under
 * ZeRO-3 (trl unwrap_model_for_generation; GRPO ds3_gather_for_generation), or a colocated vLLM. */
static void stage_rollout(struct run *R, struct sink *sk)
{
    struct calc *k = &R->k;
    const struct ml_stage_plan *p = &R->stage;
    if (p->vllm_permille)
        entry(sk, ML_C_ROLLOUT_KV, ml_ceil_div_u64(mul(k, R->c->gpu.capacity_bytes, p->vllm_permille), 1000),
              ML_PH_TRAIN | ML_PH(ML_PHASE_GENERATE), ML_FIG_ALLOCATED, "trl grpo_config.py vllm_mode colocate",
              _("colocated vLLM: %u.%u%% of the card (vllm_gpu_memory_utilization)"), p->vllm_permille / 10,
              p->vllm_permille % 10);
    if (!p->gen_sequences)
        return;
    struct ml_infer inf;
    ml_infer_defaults(&inf);
    uint64_t per_tok = ml_kv_bytes_per_token(R->a, &inf);
    entry(sk, ML_C_ROLLOUT_KV, mul3(k, per_tok, p->gen_sequences, R->s), ML_PH(ML_PHASE_GENERATE), ML_FIG_ALLOCATED,
          p->source, _("generate KV: %llu B/token x %llu sequences x %llu tokens (prompt + %llu new)"),
          (unsigned long long)per_tok, (unsigned long long)p->gen_sequences, (unsigned long long)R->s,
          (unsigned long long)p->gen_tokens);
    if (R->zero3)
        entry(sk, ML_C_ROLLOUT_KV, mul(k, R->P, R->act_bytes), ML_PH(ML_PHASE_GENERATE), ML_FIG_ALLOCATED,
              "trl unwrap_model_for_generation (ZeRO-3 GatheredParameters)",
              _("whole policy gathered for generation: %u B x %llu"), R->act_bytes, (unsigned long long)R->P);
}

/* What lives through generation: the model states that persist across a step (live in the
 * forward and the optimizer step), not the gradients (zeroed before the next rollout). */
uint32_t ml_ledger_stage_phases(struct run *R, struct ml_ledger *l)
{
    if (!R->stage.gen_tokens)
        return ML_PH_TRAIN;
    uint32_t both = ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_OPTIMIZER_STEP);
    for (uint32_t i = 0; i < l->n; i++) {
        struct ml_entry *e = &l->e[i];
        if ((e->phases & both) == both && e->id != ML_C_GRADIENTS)
            e->phases |= ML_PH(ML_PHASE_GENERATE);
    }
    return ML_PH_TRAIN | ML_PH(ML_PHASE_GENERATE);
}

void ml_ledger_stage_terms(struct run *R, struct sink *sk)
{
    vision_terms(R, sk);
    stage_models(R, sk);
    stage_forward(R, sk);
    stage_rollout(R, sk);
}
