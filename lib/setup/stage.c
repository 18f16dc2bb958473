/*
 * stage.c - what a training stage holds beside the policy model (see train.h, ml_stage_resolve).
 *
 * Each rule names the framework function it was read from; docs/ledger.md ("Stages") lists them
 * with the ledger terms they feed. Pure: settings in, a plan out.
 *
 * LLaMA-Factory (src/llamafactory at ff6d4d12):
 *   - data/collator.py PairwiseDataCollatorWithPadding: 2n examples, the n chosen then the n
 *     rejected, in one batch (stages dpo and rm);
 *   - data/collator.py KTODataCollatorWithPadding + train/kto/trainer.py concatenated_forward:
 *     the n targets with grad, then a "kl_" batch of n under torch.no_grad();
 *   - hparams/finetuning_args.py __post_init__: use_ref_model = stage == dpo and pref_loss not in
 *     (orpo, simpo); train/kto/workflow.py always creates one;
 *   - train/trainer_utils.py create_ref_model: ref_model given -> that checkpoint (with
 *     ref_model_quantization_bit); else finetuning_type lora -> None (dpo/kto trainers'
 *     compute_reference_log_probs then disable the adapter), anything else -> a copy of the model;
 *   - train/rm/workflow.py, train/ppo/workflow.py: load_model(add_valuehead=True);
 *     trainer_utils.py create_reward_model: api -> none, lora -> an adapter loaded into the
 *     policy, full -> a third model with a value head;
 *   - train/ppo/trainer.py get_inputs: generation on mini-batches of per_device_train_batch_size,
 *     max_new_tokens from generating_args (default 1024).
 * TRL (trl/trainer at f2cd5771):
 *   - dpo_trainer.py __init__: ref_model None if PEFT or precompute_ref_log_probs, else a copy;
 *   - grpo_trainer.py __init__: ref_model None if beta == 0.0 (grpo_config.py default) or PEFT;
 *     grpo_config.py: num_generations 8, max_completion_length 512, steps_per_generation =
 *     gradient_accumulation_steps, vllm_mode colocate with vllm_gpu_memory_utilization 0.3.
 * TRL 1.15.0 and 1.16.0 (the wheels; the fused head is in neither 1.14.2 nor the f2cd5771 tree):
 *   - dpo_trainer.py / kto_trainer.py / grpo_trainer.py __init__ call trainer/utils.py
 *     add_fused_lm_head, and _compute_loss (GRPO _get_per_token_logps_and_entropies) calls the
 *     model with fused_lm_head=True: log-probs in tiles, no b x s x V logits;
 *   - kto_trainer.py: b (prompt, completion) rows with grad, the collator's KL_input_ids (b rows)
 *     through _compute_kl_logps under torch.no_grad(), the reference as DPO's (__init__).
 */
#include "memledger/train.h"

#include <string.h>

#include "i18n.h"

const char *ml_stage_name(enum ml_stage s)
{
    switch (s) {
    case ML_STAGE_PT: return "pt";
    case ML_STAGE_SFT: return "sft";
    case ML_STAGE_RM: return "rm";
    case ML_STAGE_DPO: return "dpo";
    case ML_STAGE_KTO: return "kto";
    case ML_STAGE_ORPO: return "orpo";
    case ML_STAGE_PPO: return "ppo";
    case ML_STAGE_GRPO: return "grpo";
    }
    return "unknown";
}

/* The reference model of a stage that uses one: a copy, or the adapter disabled. */
static void reference(const struct ml_train *t, bool peft_off, struct ml_stage_plan *p)
{
    bool lora = (t->method == ML_METHOD_LORA || t->method == ML_METHOD_QLORA) && !t->sc.oft;
    if (t->sc.ref_model) {
        p->ref = ML_REF_COPY;
        p->ref_quant_bits = t->sc.ref_quant_bits;
    } else if (lora && peft_off) {
        p->ref = ML_REF_ADAPTER_OFF;
    } else {
        p->ref = ML_REF_COPY;
    }
}

/* TRL's DPO, KTO and GRPO score through the fused LM head from 1.15 (docs/ledger.md "TRL's fused
 * LM head"); a run that names no TRL version is taken as ML_TRL_ASSUMED. */
uint32_t ml_trl_version(const struct ml_train *t)
{
    return t->versions.trl ? t->versions.trl : ML_TRL_ASSUMED;
}

/* A TRL run whose release has the fused head. */
static bool trl_fused(const struct ml_train *t)
{
    return t->framework == ML_FW_TRL && ml_trl_version(t) >= ML_TRL_FUSED_HEAD;
}

bool ml_trl_fused_head(const struct ml_train *t)
{
    return trl_fused(t) && (t->stage == ML_STAGE_DPO || t->stage == ML_STAGE_KTO || t->stage == ML_STAGE_GRPO);
}

bool ml_trl_sft_fused(const struct ml_train *t)
{
    return trl_fused(t) && (t->stage == ML_STAGE_SFT || t->stage == ML_STAGE_PT);
}

static void trl_stages(const struct ml_train *t, struct ml_stage_plan *p)
{
    bool peft = t->method == ML_METHOD_LORA || t->method == ML_METHOD_QLORA;
    p->fused_head = ml_trl_fused_head(t);
    if (t->stage == ML_STAGE_KTO) { /* modelled from 1.15 only (ml_stage_check) */
        p->source = "trl kto_trainer.py KTOTrainer.__init__ (KL_input_ids, _compute_kl_logps)";
        p->nograd_factor = 1;
        p->ref = t->sc.precompute_ref       ? ML_REF_PRECOMPUTED
                 : peft && !t->sc.ref_model ? ML_REF_ADAPTER_OFF
                                            : ML_REF_COPY;
        return;
    }
    if (t->stage == ML_STAGE_DPO || t->stage == ML_STAGE_ORPO) {
        p->batch_factor = 2;
        p->source = "trl dpo_trainer.py DPOTrainer.__init__";
        if (t->sc.precompute_ref) {
            p->ref = ML_REF_PRECOMPUTED;
        } else if (t->stage == ML_STAGE_DPO) {
            p->nograd_factor = 2;
            if (peft && !t->sc.ref_model)
                p->ref = ML_REF_ADAPTER_OFF;
            else
                p->ref = ML_REF_COPY;
        }
        return;
    }
    if (t->stage == ML_STAGE_GRPO) {
        p->source = "trl grpo_trainer.py GRPOTrainer.__init__";
        p->nograd_bytes = 2;
        p->completion_logits = true;
        if (t->sc.beta == ML_BETA_NONZERO) {
            p->nograd_factor = 1;
            p->ref = peft ? ML_REF_ADAPTER_OFF : ML_REF_COPY;
        }
        p->gen_tokens = t->sc.max_new_tokens ? t->sc.max_new_tokens : 512;
        uint64_t spg = t->sc.steps_per_generation ? t->sc.steps_per_generation : t->grad_accum;
        p->gen_sequences = t->micro_batch * (spg ? spg : 1);
        if (t->sc.use_vllm) {
            p->gen_sequences = 0; /* vLLM holds the rollout, not HF generate */
            if (!t->sc.vllm_server)
                p->vllm_permille = t->sc.vllm_util_permille ? t->sc.vllm_util_permille : 300;
        }
    }
}

void ml_stage_resolve(const struct ml_train *t, struct ml_stage_plan *p)
{
    memset(p, 0, sizeof(*p));
    p->batch_factor = 1;
    p->nograd_bytes = 8;
    p->source = "";
    if (t->framework == ML_FW_TRL) {
        trl_stages(t, p);
        return;
    }
    switch (t->stage) {
    case ML_STAGE_PT:
    case ML_STAGE_SFT:
    case ML_STAGE_GRPO: /* GRPO is TRL's: without --framework trl it is refused earlier */ return;
    case ML_STAGE_RM:
        p->batch_factor = 2;
        p->value_head = true;
        p->source = "LLaMA-Factory rm/workflow.py (PairwiseDataCollatorWithPadding, add_valuehead)";
        return;
    case ML_STAGE_DPO:
    case ML_STAGE_ORPO:
        p->batch_factor = 2;
        p->source = "LLaMA-Factory dpo/workflow.py (PairwiseDataCollatorWithPadding, create_ref_model)";
        if (t->stage == ML_STAGE_DPO && t->sc.pref_loss != ML_PREF_ORPO && t->sc.pref_loss != ML_PREF_SIMPO) {
            p->nograd_factor = 2;
            reference(t, true, p);
        }
        return;
    case ML_STAGE_KTO:
        p->nograd_factor = 1;
        p->source = "LLaMA-Factory kto/workflow.py (KTODataCollatorWithPadding, create_ref_model)";
        reference(t, true, p);
        return;
    case ML_STAGE_PPO:
        p->value_head = true;
        p->nograd_factor = 1;
        p->source = "LLaMA-Factory ppo/workflow.py (create_ref_model, create_reward_model)";
        reference(t, true, p);
        if (t->sc.reward_type == ML_REWARD_FULL) {
            p->reward_copy = true;
            p->reward_quant_bits = t->sc.reward_quant_bits;
        } else if (t->sc.reward_type == ML_REWARD_LORA) {
            p->reward_adapter = true;
        }
        p->gen_tokens = t->sc.max_new_tokens ? t->sc.max_new_tokens : 1024;
        p->gen_sequences = t->micro_batch;
        return;
    }
}

/* Combinations the frameworks refuse (finetuning_args.py __post_init__, grpo_config.py
 * __post_init__), as one-line errors. */
enum ml_status ml_stage_check(const struct ml_train *t, const struct ml_cluster *c, struct ml_diag *diag)
{
    bool lora = t->method == ML_METHOD_LORA || t->method == ML_METHOD_QLORA;
    const char *st = ml_stage_name(t->stage);
    /* LitGPT's commands are pretrain and finetune (full, lora, adapter, adapter_v2): supervised
     * only (litgpt/__main__.py); it has no preference or RL trainer. */
    if (t->framework == ML_FW_LITGPT && t->stage != ML_STAGE_SFT && t->stage != ML_STAGE_PT)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("stage %s has no LitGPT recipe (litgpt pretrain and finetune train next-token "
                             "prediction only)"),
                           st);
    if (t->stage == ML_STAGE_GRPO && t->framework != ML_FW_TRL)
        return ml_diag_set(diag, ML_ERR_INVALID, _("stage grpo is TRL's GRPOTrainer: use --framework trl"));
    if (t->framework == ML_FW_TRL && t->stage == ML_STAGE_KTO && !ml_trl_fused_head(t))
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("stage kto under --framework trl is modelled from TRL 1.15 (its fused LM head); "
                             "trl_version %u.%u is older"),
                           t->versions.trl / 10000u, t->versions.trl / 100u % 100u);
    if (t->framework == ML_FW_TRL && t->stage != ML_STAGE_SFT && t->stage != ML_STAGE_PT && t->stage != ML_STAGE_DPO &&
        t->stage != ML_STAGE_GRPO && t->stage != ML_STAGE_KTO)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("stage %s under --framework trl is not modelled (TRL's SFTTrainer, DPOTrainer, "
                             "KTOTrainer and GRPOTrainer are)"),
                           st);
    if (t->framework != ML_FW_TRL && t->stage == ML_STAGE_PPO) {
        if (!t->sc.reward_model)
            return ml_diag_set(diag, ML_ERR_INVALID,
                               _("stage ppo needs reward_model (LLaMA-Factory refuses PPO "
                                 "without one)"));
        if (t->sc.reward_type == ML_REWARD_LORA && !lora)
            return ml_diag_set(diag, ML_ERR_INVALID,
                               _("reward_model_type lora needs finetuning_type lora "
                                 "(LLaMA-Factory refuses it for full/freeze PPO)"));
    }
    if (t->stage == ML_STAGE_GRPO && c) {
        uint64_t g = t->sc.num_generations ? t->sc.num_generations : 8;
        uint64_t eff = (uint64_t)c->gpus_per_node * (c->nodes ? c->nodes : 1) * t->micro_batch *
                       (t->sc.steps_per_generation ? t->sc.steps_per_generation : t->grad_accum);
        if (g < 2)
            return ml_diag_set(diag, ML_ERR_INVALID, _("num_generations must be at least 2 (TRL GRPOConfig)"));
        if (eff % g)
            return ml_diag_set(diag, ML_ERR_INVALID,
                               _("num_generations %llu does not divide the generation batch %llu (GPUs x "
                                 "per_device_train_batch_size x steps_per_generation; TRL GRPOConfig refuses it)"),
                               (unsigned long long)g, (unsigned long long)eff);
    }
    return ML_OK;
}

/* The parallel sizes must tile the GPUs (DeepSpeed engine.py _configure_tensor_parallel_states
 * asserts ZeRO <= 2 with AutoTP; v1 training_args.py dp_size = world // cp_size). */
enum ml_status ml_parallel_check(const struct ml_train *t, const struct ml_cluster *c, struct ml_diag *diag)
{
    uint64_t world = c ? (uint64_t)c->gpus_per_node * (c->nodes ? c->nodes : 1) : 1;
    if (t->deepspeed && t->tp_size > 1) {
        if (t->zero.stage == 3)
            return ml_diag_set(diag, ML_ERR_INVALID,
                               _("tensor_parallel.autotp_size %u with ZeRO-3: DeepSpeed "
                                 "allows AutoTP with ZeRO stages 0 to 2 only"),
                               t->tp_size);
        if (world % t->tp_size)
            return ml_diag_set(diag, ML_ERR_INVALID, _("tensor_parallel.autotp_size %u does not divide the %llu GPUs"),
                               t->tp_size, (unsigned long long)world);
    }
    if (t->cp_size > 1 && world % t->cp_size)
        return ml_diag_set(diag, ML_ERR_INVALID, _("context parallel size %u does not divide the %llu GPUs"),
                           t->cp_size, (unsigned long long)world);
    return ML_OK;
}
