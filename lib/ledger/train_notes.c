/*
 * train_notes.c - the notes of a training ledger: what the user should know about how it reads
 * the run (fp32 adapters, checkpointing, eager attention, the stage, AutoTP and context
 * parallelism, a vision tower, a quantized checkpoint) and the allocator reserve.
 *
 * Each note names the rule of docs/ledger.md or the shared accounting notes
 * (reference/accounting-notes.md, "notes §x.y") it explains. Vocabulary as in train_ledger.c.
 */
#include "i18n.h"
#include "train_int.h"

static void vision_notes(const struct run *R, const struct ml_train *t, struct ml_ledger *out)
{
    if (R->a->vision.kind == ML_VISION_NONE)
        return;
    note(out,
         _("vision-language model: %llu visual tokens per sample (%u image%s of %llu tokens%s) inside cutoff_len %llu; "
           "the tower (%llu params) is %s, the projector (%llu) %s"),
         (unsigned long long)R->vlm.tokens, t->vlm.images_set ? t->vlm.images_per_sample : 1u,
         (t->vlm.images_set ? t->vlm.images_per_sample : 1u) == 1 ? "" : "s",
         (unsigned long long)R->vlm.tokens_per_image, t->vlm.videos_per_sample ? _(", and videos") : "",
         (unsigned long long)t->seq_len, (unsigned long long)R->P_vis,
         R->vis_trainable && R->full ? _("trained") : _("frozen"), (unsigned long long)R->P_proj,
         R->proj_trainable && R->full ? _("trained") : _("frozen"));
    if ((R->vis_trainable || R->proj_trainable) && !R->full)
        note(out,
             _("freeze_vision_tower / freeze_multi_modal_projector false with %s: adapters or layers in the tower are "
               "not counted; estimated frozen"),
             ml_method_name(t->method));
}

/* How AutoTP and context parallelism split the run. */
static void parallel_notes(const struct run *R, struct ml_ledger *out)
{
    if (R->tp > 1)
        note(out,
             _("DeepSpeed AutoTP %u: each GPU holds 1/%u of every linear weight in the layers (embeddings, norms and "
               "lm_head whole) and ZeRO shards over %u data-parallel ranks; activations are priced unsplit"),
             R->tp, R->tp, R->n_shard);
    if (R->cp > 1)
        note(out,
             _("context parallel %u: each GPU holds %llu of the %llu tokens of a sequence (activations and logits); "
               "model states are not split by it"),
             R->cp, (unsigned long long)R->s, (unsigned long long)R->s_full);
}

/* How the stage shaped the run (docs/ledger.md "Stages"). */
static void stage_notes(const struct run *R, const struct ml_train *t, struct ml_ledger *out)
{
    const struct ml_stage_plan *p = &R->stage;
    if (p->batch_factor > 1)
        note(out,
             _("stage %s: the pairwise collator puts chosen and rejected in one batch: b = %llu x "
               "per_device_train_batch_size %llu"),
             ml_stage_name(t->stage), (unsigned long long)p->batch_factor, (unsigned long long)R->b_sample);
    if (p->ref == ML_REF_ADAPTER_OFF)
        note(out,
             _("stage %s with LoRA: no reference model is loaded; the reference log-probs come from the policy with "
               "its adapter disabled"),
             ml_stage_name(t->stage));
    else if (p->ref == ML_REF_PRECOMPUTED)
        note(out, _("precompute_ref_log_probs: the reference log-probs are computed once before training; no reference "
                    "model is kept"));
    else if (p->ref == ML_REF_COPY && !t->sc.ref_model)
        note(out, _("stage %s with %s fine-tuning: the reference model is a frozen copy of the policy"),
             ml_stage_name(t->stage), ml_method_name(t->method));
    else if (p->ref == ML_REF_COPY)
        note(out, _("ref_model: the reference checkpoint is modelled with the policy's architecture"));
    if (p->gen_tokens)
        note(out, _("stage %s: sequences are the prompt (%llu) + %llu generated tokens"), ml_stage_name(t->stage),
             (unsigned long long)t->seq_len, (unsigned long long)p->gen_tokens);
    /* docs/ledger.md "TRL's fused LM head" */
    if (p->fused_head && !t->versions.trl)
        note(out,
             _("TRL version not given (--trl-version): TRL %u.%u assumed, whose %s trainer scores through its fused LM "
               "head (from 1.15; older releases build whole b x s x V logits)"),
             ML_TRL_ASSUMED / 10000u, ML_TRL_ASSUMED / 100u % 100u, ml_stage_name(t->stage));
    if (ml_trl_sft_fused(t))
        note(out, _("TRL's SFTTrainer scores through its fused LM head from 1.15 (--trl-version); the ledger prices "
                    "whole b x s x V logits for it, an upper bound"));
    if (p->fused_head && !p->gen_tokens && !t->sc.max_new_tokens)
        note(out,
             _("stage %s: every token of the sequence is taken as labelled (TRL labels the completion only; "
               "--set max_completion_length=N gives its length)"),
             ml_stage_name(t->stage));
}

/* How the checkpoint's stored format was loaded (docs/ledger.md "Training on a quantized checkpoint"). */
static void checkpoint_notes(const struct run *R, const struct ml_train *t, struct ml_ledger *out)
{
    char fmt[96];
    ml_wq_describe(&R->a->wq, fmt, sizeof(fmt));
    if (R->load == ML_LOAD_DEQUANT)
        note(out,
             _("the checkpoint is stored as %s; %s loads it dequantized to %s (%s(dequantize=True)): %u B per "
               "parameter, trainable like an unquantized model"),
             fmt, t->framework == ML_FW_LLAMAFACTORY ? "LLaMA-Factory (configure_quantization)" : "dequantize=true",
             ml_precision_name(t->precision), R->a->wq.method == ML_WQ_MXFP4 ? "Mxfp4Config" : "FineGrainedFP8Config",
             R->act_bytes);
    else if (R->packed)
        note(out,
             _("LoRA on the checkpoint as stored (%s): the base keeps its packed weights and scales; each quantized "
               "linear is dequantized per call"),
             fmt);
}

/* What the user should know about how this ledger reads the run. */
void ml_ledger_train_notes(const struct run *R, const struct ml_train *t, struct ml_ledger *out)
{
    /* Two paths reach fp32 adapters without autocast (train_run.c): DeepSpeed ZeRO-3 >= 0.19.2, and
     * PEFT >= 0.12 in a pure-bf16 run (get_peft_model autocast_adapter_dtype). Name the one this run takes. */
    if ((R->adapter_input == AD_FP32_NOCAST || R->adapter_input == AD_DROPOUT_FP32) && t->deepspeed)
        note(out, _("LoRA adapters stay fp32 under ZeRO-3 with DeepSpeed >= 0.19.2 (no autocast): each adapted module "
                    "saves an fp32 copy of its input; --deepspeed-version 0.18 models the older bf16 cast"));
    else if (R->adapter_input == AD_FP32_NOCAST || R->adapter_input == AD_DROPOUT_FP32)
        note(out, _("LoRA adapters are fp32 (PEFT >= 0.12 upcasts them: get_peft_model autocast_adapter_dtype) and a "
                    "pure-bf16 run has no autocast: each adapted module saves an fp32 copy of its input; "
                    "--set peft_version=0.11 models bf16 adapters"));
    if (t->grad_ckpt != ML_GC_OFF && t->grad_ckpt != ML_GC_UNSLOTH) {
        /* Seed handbook: checkpointing cuts activations "down to about 1/sqrt(layers)". That is
         * Chen et al.'s sqrt(L)-segment schedule; HF checkpoints every layer (notes §4.2). */
        note(out,
             _("gradient checkpointing here keeps each layer's input (2 B x b x s x h) plus one recomputed layer, not "
               "1/sqrt(layers) of the activations: that figure is for sqrt(L) segments, which HF does not use"));
    }
    /* TRL loads a model it is given by name in float32 unless told (TRL 1.16 trainer/model_config.py
     * ModelConfig.dtype and trainer/utils.py create_model_from_path, both "float32"; the trl CLI and
     * every trainer given a model id). A model object the user loaded keeps its own dtype, which
     * memledger cannot see: the compute dtype stays the assumption, said here (docs/ledger.md
     * "TRL's load dtype"). */
    if (t->framework == ML_FW_TRL && t->load_dtype == ML_LOAD_COMPUTE && R->P_f && !R->qlora && !R->packed &&
        R->act_bytes == 2)
        note(out, _("TRL loads a model given by name in float32 unless told (TRL's ModelConfig.dtype default); "
                    "priced as loaded in the compute dtype (a model object loaded in bf16, or TRL's --dtype bfloat16): "
                    "--set load_dtype=fp32 for a run that sets no dtype"));
    if (t->attn == ML_ATTN_EAGER && R->a->no_sdpa)
        note(out,
             _("%s: eager attention, transformers' default for this model (its model class declares no SDPA "
               "support): it materialises b x heads x s^2 scores"),
             R->a->model_type);
    else if (t->attn == ML_ATTN_EAGER)
        note(out, _("eager attention materialises b x heads x s^2 scores (fp32 softmax); sdpa or flash attention "
                    "avoids them"));
    stage_notes(R, t, out);
    parallel_notes(R, out);
    vision_notes(R, t, out);
    checkpoint_notes(R, t, out);
}
