/*
 * train_check.c - contradictions in a training setup, found before the ledger runs.
 *
 * Errors are runs the frameworks refuse (LLaMA-Factory's parser.py, DeepSpeed's config checks)
 * or values no run can have. Warnings are settings the frameworks quietly change; where the
 * change is certain (FSDP2 forcing non-reentrant checkpointing, Gemma-2 forcing eager
 * attention) *t is changed to match and the warning says so. Pure: no I/O.
 */
#include "memledger/train.h"

#include <string.h>

#include "i18n.h"

enum ml_ckpt_load ml_train_checkpoint_load(const struct ml_train *t, const struct ml_arch *a)
{
    const struct ml_weight_quant *w = &a->wq;
    bool lf = t->framework == ML_FW_LLAMAFACTORY;
    switch (w->method) {
    case ML_WQ_NONE: return ML_LOAD_PLAIN;
    case ML_WQ_BNB4:
    case ML_WQ_BNB8: return ML_LOAD_BNB;
    case ML_WQ_AWQ:  /* AwqQuantizer.is_trainable: autoawq >= 0.2.0 (PEFT on WQLinear_GEMM) */
    case ML_WQ_GPTQ: /* GptqHfQuantizer.is_trainable: True (PEFT GPTQLoraLinear) */
    case ML_WQ_INT:  /* CompressedTensorsHfQuantizer.is_trainable: True, run_compressed by default */
        return ML_LOAD_PACKED;
    case ML_WQ_FP8:
        /* compressed-tensors float weights stay compressed (is_trainable True); LLaMA-Factory
         * replaces a quant_method "fp8" config by FineGrainedFP8Config(dequantize=True);
         * FineGrainedFP8HfQuantizer and FbgemmFp8HfQuantizer are not trainable as stored. */
        if (!strcmp(w->name, "compressed-tensors"))
            return ML_LOAD_PACKED;
        if (!strcmp(w->name, "fbgemm_fp8"))
            return ML_LOAD_UNTRAINABLE;
        return lf || t->dequantize ? ML_LOAD_DEQUANT : ML_LOAD_UNTRAINABLE;
    case ML_WQ_MXFP4:
        /* LLaMA-Factory loads Mxfp4Config(dequantize=True); Mxfp4HfQuantizer.is_trainable is False. */
        return lf || t->dequantize ? ML_LOAD_DEQUANT : ML_LOAD_UNTRAINABLE;
    }
    return ML_LOAD_PLAIN;
}

enum ml_status ml_train_checkpoint_check(const struct ml_train *t, const struct ml_arch *a, struct ml_diag *diag)
{
    enum ml_ckpt_load ld = ml_train_checkpoint_load(t, a);
    const char *fmt = a->wq.name;
    bool sharded = (t->deepspeed && t->zero.stage == 3) || t->fsdp != ML_FSDP_NONE;
    if (ld == ML_LOAD_PLAIN)
        return ML_OK;
    if (t->framework == ML_FW_LITGPT || t->framework == ML_FW_TORCHTUNE)
        return ml_diag_set(diag, ML_ERR_UNSUPPORTED,
                           _("%s converts a 16-bit checkpoint (its own quantization applies to that); a checkpoint "
                             "stored as %s is not modelled for it"),
                           ml_framework_name(t->framework), fmt);
    if (ld == ML_LOAD_UNTRAINABLE)
        return strcmp(fmt, "fbgemm_fp8")
                   ? ml_diag_set(
                         diag, ML_ERR_UNSUPPORTED,
                         _("the checkpoint is stored as %s (config.json quantization_config), which transformers "
                           "cannot train as stored (its quantizer's is_trainable is False); load it dequantized "
                           "as LLaMA-Factory does (%s(dequantize=True)): --set dequantize=true"),
                         fmt, a->wq.method == ML_WQ_MXFP4 ? "Mxfp4Config" : "FineGrainedFP8Config")
                   : ml_diag_set(diag, ML_ERR_UNSUPPORTED,
                                 _("the checkpoint is stored as fbgemm_fp8 (config.json quantization_config), which "
                                   "transformers cannot train (FbgemmFp8HfQuantizer.is_trainable is False)"));
    if (ld == ML_LOAD_DEQUANT)
        return ML_OK;
    if (t->method == ML_METHOD_FULL || t->method == ML_METHOD_FREEZE)
        return ml_diag_set(
            diag, ML_ERR_UNSUPPORTED,
            _("%s fine-tuning of a checkpoint stored as %s: quantized weights do not train "
              "(LLaMA-Factory: 'Quantized models can only be used for the LoRA or OFT tuning.'; "
              "transformers' Trainer refuses purely quantized models); use LoRA or the unquantized release"),
            ml_method_name(t->method), fmt);
    if (sharded && t->framework == ML_FW_LLAMAFACTORY)
        return ml_diag_set(diag, ML_ERR_UNSUPPORTED,
                           _("DeepSpeed ZeRO-3 or FSDP is incompatible with PTQ-quantized models (LLaMA-Factory "
                             "configure_quantization); the checkpoint is stored as %s"),
                           fmt);
    if (sharded && ld == ML_LOAD_PACKED)
        return ml_diag_set(diag, ML_ERR_UNSUPPORTED,
                           _("sharding a checkpoint stored as %s with ZeRO-3 or FSDP is not modelled (its packed "
                             "weights are buffers, not parameters)"),
                           fmt);
    return ML_OK;
}

/* A quantization_bit on a quantized checkpoint is what LLaMA-Factory ignores. */
static enum ml_status checkpoint_check(struct ml_train *t, const struct ml_arch *a, struct ml_diag *diag)
{
    enum ml_ckpt_load ld = ml_train_checkpoint_load(t, a);
    if (t->quant_bits && ld != ML_LOAD_PLAIN && ld != ML_LOAD_UNTRAINABLE) {
        ml_train_warn(t,
                      _("quantization_bit %u is ignored: the checkpoint is already stored as %s (LLaMA-Factory: "
                        "'`quantization_bit` will not affect on the PTQ-quantized models.')"),
                      t->quant_bits, a->wq.name);
        t->quant_bits = 0;
        t->method = ML_METHOD_LORA;
    }
    return ml_train_checkpoint_check(t, a, diag);
}

bool ml_attn_refused(const struct ml_arch *arch, enum ml_framework fw, enum ml_attn attn)
{
    if (!arch || fw == ML_FW_LITGPT || fw == ML_FW_TORCHTUNE)
        return false;
    return attn == ML_ATTN_SDPA ? arch->no_sdpa : attn == ML_ATTN_FLASH ? arch->no_flash : false;
}

/* What torchtune's recipes do with the settings (docs/ledger.md, "torchtune under FSDP2"). */
/* What LitGPT's finetune and pretrain scripts do on more than one device: Fabric's FSDPStrategy
 * with auto_wrap_policy and activation_checkpointing_policy {Block} and limit_all_gathers
 * (litgpt finetune/lora.py, full.py setup(); the 2023 lit-gpt scripts alike): FSDP1 full_shard
 * with every Block checkpointed (checkpoint_wrapper, non-reentrant), never DDP. */
static enum ml_status litgpt_check(struct ml_train *t, const struct ml_cluster *c, struct ml_diag *diag)
{
    uint64_t world = c ? (uint64_t)c->gpus_per_node * (c->nodes ? c->nodes : 1) : 1;
    bool mixed = t->precision == ML_PREC_BF16 || t->precision == ML_PREC_FP16;
    if (t->framework == ML_FW_LITGPT && mixed) {
        /* Fabric's bf16-mixed / 16-mixed: the weights stay fp32 under autocast (finetune/lora.py
         * setup(); a 4-bit base refused: "Quantization and mixed precision is not supported.") */
        if (t->method == ML_METHOD_QLORA)
            return ml_diag_set(diag, ML_ERR_INVALID,
                               _("LitGPT quantizes only with a -true precision (finetune: \"Quantization and mixed "
                                 "precision is not supported.\"): give --dtype pure_bf16"));
        ml_train_warn(t,
                      _("%s with LitGPT is Fabric's mixed precision, which keeps every weight in fp32 (frozen "
                        "ones too); the ledger books them as autocast over 16-bit weights, as HF does: it may "
                        "count 2 B a parameter short"),
                      ml_precision_name(t->precision));
        t->unmodelled++; /* (the interval widens: train_ledger.c) */
    }
    if (t->framework != ML_FW_LITGPT || world < 2)
        return ML_OK;
    /* finetune/lora.py setup(): NotImplementedError when devices > 1 and --quantize is set */
    if (t->method == ML_METHOD_QLORA)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("LitGPT quantizes on one GPU only (finetune: \"Quantization is currently not supported "
                             "for multi-GPU training\")"));
    if (t->fsdp == ML_FSDP_NONE) {
        t->fsdp = ML_FSDP_FULL_SHARD;
        t->fsdp_version = 1;
        if (!((t->defaulted >> ML_TK_FSDP) & 1u))
            ml_train_warn(t,
                          _("fsdp none with LitGPT on %llu GPUs: its scripts always use Fabric's FSDPStrategy "
                            "there (no DDP); full_shard wins"),
                          (unsigned long long)world);
    }
    if (t->grad_ckpt != ML_GC_NON_REENTRANT) {
        /* (checkpointing asked for, of another kind: the same bytes in LitGPT's ledger, no warning) */
        if (!((t->defaulted >> ML_TK_GC) & 1u) && (t->grad_ckpt == ML_GC_OFF || t->grad_ckpt == ML_GC_UNSLOTH))
            ml_train_warn(t,
                          _("grad-ckpt %s with LitGPT on %llu GPUs: its FSDPStrategy checkpoints every Block "
                            "(activation_checkpointing_policy); non-reentrant wins"),
                          ml_grad_ckpt_name(t->grad_ckpt), (unsigned long long)world);
        t->grad_ckpt = ML_GC_NON_REENTRANT;
    }
    return ML_OK;
}

static void torchtune_check(struct ml_train *t, const struct ml_cluster *c)
{
    /* torchtune's distributed recipes have no DDP path: _setup_model always calls
     * training.shard_model, which fully_shards every layer and the model (recipes
     * *_distributed.py at 30b8519e8; docs/ledger.md TS1). So on more than one GPU torchtune is
     * FSDP2 full_shard, its default; an explicit none cannot be run and loses, with a warning. */
    uint64_t tt_world = c ? (uint64_t)c->gpus_per_node * (c->nodes ? c->nodes : 1) : 1;
    if (t->framework == ML_FW_TORCHTUNE && !t->deepspeed && t->fsdp == ML_FSDP_NONE && tt_world > 1) {
        t->fsdp = ML_FSDP_FULL_SHARD;
        t->fsdp_version = 2;
        if (!((t->defaulted >> ML_TK_FSDP) & 1u))
            ml_train_warn(t,
                          _("fsdp none with torchtune on %llu GPUs: its distributed recipes always shard with "
                            "FSDP2 (no DDP recipe); full_shard wins"),
                          (unsigned long long)tt_world);
    }
    /* torchtune quantizes with torchao's to_nf4, which always double-quantizes the scalers
     * (NF4Tensor.from_tensor calls double_quantize_scalers; docs/ledger.md TS3). */
    if (t->framework == ML_FW_TORCHTUNE && t->method == ML_METHOD_QLORA && t->quant_bits != 8 && !t->double_quant) {
        t->double_quant = true;
        ml_train_warn(t, _("double_quantization false: torchtune's torchao NF4 always double-quantizes its scalers; "
                           "true wins"));
    }
    /* Both distributed recipes read the list: full_finetune_distributed, and
     * lora_finetune_distributed since torchtune b1aecb19e (2024-11-26, #2072; docs/ledger.md TS1). */
    if ((t->tt_shard_embed || t->tt_shard_head) &&
        (t->framework != ML_FW_TORCHTUNE || t->fsdp == ML_FSDP_NONE || t->fsdp_version != 2))
        ml_train_warn(t, _("custom_sharded_layers is read by torchtune's distributed recipes under FSDP2 only: "
                           "ignored here"));
    if (t->framework != ML_FW_TORCHTUNE || t->fsdp == ML_FSDP_NONE || t->fsdp_version != 2)
        t->tt_shard_embed = t->tt_shard_head = false;
}

enum ml_status ml_train_check(struct ml_train *t, const struct ml_arch *arch, const struct ml_cluster *c,
                              struct ml_diag *diag)
{
    const bool zero3 = t->deepspeed && t->zero.stage == 3;
    const bool lora = t->method == ML_METHOD_LORA || t->method == ML_METHOD_QLORA;

    /* ---- errors ---- */
    if ((unsigned)t->precision > (unsigned)ML_PREC_FP32)
        return ml_diag_set(diag, ML_ERR_INVALID, _("precision must be one of bf16, fp16, pure_bf16, fp32"));
    /* LitGPT's finetune scripts shard with Fabric's FSDPStrategy and torchtune's recipes with
     * FSDP2 (training/_distributed.py shard_model): neither runs a DeepSpeed engine. */
    if (t->deepspeed && (t->framework == ML_FW_LITGPT || t->framework == ML_FW_TORCHTUNE))
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("%s runs no DeepSpeed ZeRO: its recipes shard with FSDP (--fsdp full_shard)"),
                           t->framework == ML_FW_LITGPT ? "LitGPT" : "torchtune");
    if (t->precision == ML_PREC_PURE_BF16 && zero3)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("pure_bf16 cannot be used with DeepSpeed ZeRO-3 (LLaMA-Factory rejects it)"));
    if (t->zero.stage > 3)
        return ml_diag_set(diag, ML_ERR_INVALID, _("ZeRO stage %u does not exist (0 to 3)"), t->zero.stage);
    if (t->deepspeed && t->zero.offload_param && t->zero.stage != 3)
        return ml_diag_set(diag, ML_ERR_INVALID, _("offload_param needs ZeRO stage 3 (zero_optimization.stage is %u)"),
                           t->zero.stage);
    if (t->quant_bits != 0 && t->quant_bits != 4 && t->quant_bits != 8)
        return ml_diag_set(diag, ML_ERR_INVALID, _("quantization_bit must be 4 or 8, got %u"), t->quant_bits);
    if (t->method == ML_METHOD_QLORA && t->quant_bits == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("QLoRA needs quantization_bit 4 or 8"));
    if (t->quant_bits && !lora)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("quantization_bit %u needs LoRA (LLaMA-Factory quantizes only for LoRA/OFT), got %s"),
                           t->quant_bits, ml_method_name(t->method));
    if (t->micro_batch == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("the micro batch (per_device_train_batch_size) must be positive"));
    if (t->grad_accum == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("gradient_accumulation_steps must be positive"));
    if (t->seq_len == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("the sequence length (cutoff_len) must be positive"));
    if (lora && t->lora_rank == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("lora_rank must be positive for LoRA"));
    if (t->deepspeed && t->fsdp != ML_FSDP_NONE)
        return ml_diag_set(diag, ML_ERR_INVALID, _("DeepSpeed ZeRO and FSDP cannot be used together"));
    if (t->neat_packing && t->stage != ML_STAGE_SFT && t->framework == ML_FW_LLAMAFACTORY)
        return ml_diag_set(diag, ML_ERR_INVALID, _("neat_packing is only for stage sft (LLaMA-Factory rejects it)"));
    if (t->fsdp != ML_FSDP_NONE && t->fsdp_version != 1 && t->fsdp_version != 2)
        return ml_diag_set(diag, ML_ERR_INVALID, _("fsdp_version must be 1 or 2, got %u"), t->fsdp_version);
    enum ml_status sst = arch ? checkpoint_check(t, arch, diag) : ML_OK;
    if (sst == ML_OK)
        sst = ml_stage_check(t, c, diag);
    if (sst == ML_OK)
        sst = ml_parallel_check(t, c, diag);
    if (sst != ML_OK)
        return sst;

    /* ---- warnings (and the changes the frameworks make) ---- */
    /* FlashAttention-2's kernels need sm80+ (flash-attn README: "Ampere, Ada, or Hopper GPUs"; its
     * csrc raises "FlashAttention only supports Ampere GPUs or newer"): priced as asked, said. */
    if (t->attn == ML_ATTN_FLASH && c && c->gpu.vendor == ML_VENDOR_NVIDIA &&
        (!strcmp(c->gpu.arch, "pascal") || !strcmp(c->gpu.arch, "volta") || !strcmp(c->gpu.arch, "turing")))
        ml_train_warn(t,
                      _("flash attention 2 needs an Ampere or newer NVIDIA GPU: on a %s card (%s) the run stops at "
                        "its first attention call (--attn sdpa prices what runs there); priced as given"),
                      c->gpu.arch, c->gpu.name);
    if (t->neat_packing && t->attn != ML_ATTN_FLASH)
        ml_train_warn(t,
                      _("neat_packing without flash attention: LLaMA-Factory builds a dense 4-D "
                        "attention mask (2*b*s^2 bytes) and %s attends over the whole pack"),
                      ml_attn_name(t->attn));
    if (t->deepspeed && t->zero.offload_optimizer && t->zero.stage == 0)
        ml_train_warn(t, _("offload_optimizer has no effect at ZeRO stage 0"));
    if (t->deepspeed && c) {
        uint64_t world = (uint64_t)c->gpus_per_node * (c->nodes ? c->nodes : 1);
        if (world == 1)
            ml_train_warn(t, _("DeepSpeed on a single GPU: nothing is sharded (it still runs; "
                               "offload still applies)"));
    }
    if (litgpt_check(t, c, diag) != ML_OK)
        return diag->code;
    torchtune_check(t, c);
    if (t->fsdp != ML_FSDP_NONE && t->fsdp_version == 2 && t->grad_ckpt == ML_GC_REENTRANT &&
        t->framework == ML_FW_LLAMAFACTORY) {
        t->grad_ckpt = ML_GC_NON_REENTRANT;
        ml_train_warn(t, _("FSDP2: LLaMA-Factory uses non-reentrant gradient checkpointing; "
                           "modelled as non-reentrant"));
    }
    if (arch && arch->attn_softcap && t->attn == ML_ATTN_SDPA && t->framework == ML_FW_LLAMAFACTORY) {
        t->attn = ML_ATTN_EAGER;
        ml_train_warn(t,
                      _("%s: LLaMA-Factory uses eager attention (soft-capping) unless "
                        "flash_attn is fa2; modelled as eager"),
                      arch->model_type);
    }
    /* A model class without SDPA support (arch->no_sdpa, the family table): transformers' default
     * attention falls back to eager (the ledger's notes say so) and an explicit "sdpa" is refused
     * (modeling_utils.py get_correct_attn_implementation, _sdpa_can_dispatch). LitGPT and torchtune
     * build their own models. */
    if (t->attn == ML_ATTN_SDPA && ml_attn_refused(arch, t->framework, ML_ATTN_SDPA)) {
        t->attn = ML_ATTN_EAGER;
        if (!((t->defaulted >> ML_TK_ATTN) & 1u))
            ml_train_warn(t,
                          _("%s: transformers refuses sdpa attention for this model (its model class does not declare "
                            "SDPA support); eager wins, the attention it runs by default"),
                          arch->model_type);
    }
    /* flash_attention_2 on a class without FlashAttention support raises (_flash_attn_can_dispatch):
     * the attention transformers would run by default wins. */
    if (t->attn == ML_ATTN_FLASH && ml_attn_refused(arch, t->framework, ML_ATTN_FLASH)) {
        t->attn = ml_attn_refused(arch, t->framework, ML_ATTN_SDPA) ? ML_ATTN_EAGER : ML_ATTN_SDPA;
        ml_train_warn(t,
                      _("%s: transformers refuses flash attention for this model (its model class does not declare "
                        "FlashAttention support); %s wins, the attention it runs by default"),
                      arch->model_type, ml_attn_name(t->attn));
    }
    if (t->method == ML_METHOD_QLORA && t->quant_bits == 8 && zero3)
        ml_train_warn(t, _("8-bit QLoRA with DeepSpeed ZeRO-3: bitsandbytes int8 weights are not "
                           "sharded the way the estimate assumes"));
    return ML_OK;
}
