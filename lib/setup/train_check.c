/*
 * train_check.c - contradictions in a training setup, found before the ledger runs.
 *
 * Errors are runs the frameworks refuse (LLaMA-Factory's parser.py, DeepSpeed's config checks)
 * or values no run can have. Warnings are settings the frameworks quietly change; where the
 * change is certain (FSDP2 forcing non-reentrant checkpointing, Gemma-2 forcing eager
 * attention) *t is changed to match and the warning says so. Pure: no I/O.
 */
#include "memledger/train.h"

#include "i18n.h"

enum ml_status ml_train_check(struct ml_train *t, const struct ml_arch *arch,
                              const struct ml_cluster *c, struct ml_diag *diag)
{
    const bool zero3 = t->deepspeed && t->zero.stage == 3;
    const bool lora = t->method == ML_METHOD_LORA || t->method == ML_METHOD_QLORA;

    /* ---- errors ---- */
    if ((unsigned)t->precision > (unsigned)ML_PREC_FP32)
        return ml_diag_set(diag, ML_ERR_INVALID, _("precision must be one of bf16, fp16, pure_bf16, fp32"));
    if (t->precision == ML_PREC_PURE_BF16 && zero3)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("pure_bf16 cannot be used with DeepSpeed ZeRO-3 (LLaMA-Factory rejects it)"));
    if (t->zero.stage > 3)
        return ml_diag_set(diag, ML_ERR_INVALID, _("ZeRO stage %u does not exist (0 to 3)"), t->zero.stage);
    if (t->deepspeed && t->zero.offload_param && t->zero.stage != 3)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("offload_param needs ZeRO stage 3 (zero_optimization.stage is %u)"),
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
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("neat_packing is only for stage sft (LLaMA-Factory rejects it)"));
    if (t->fsdp != ML_FSDP_NONE && t->fsdp_version != 1 && t->fsdp_version != 2)
        return ml_diag_set(diag, ML_ERR_INVALID, _("fsdp_version must be 1 or 2, got %u"), t->fsdp_version);
    enum ml_status sst = ml_stage_check(t, c, diag);
    if (sst == ML_OK)
        sst = ml_parallel_check(t, c, diag);
    if (sst != ML_OK)
        return sst;

    /* ---- warnings (and the changes the frameworks make) ---- */
    if (t->neat_packing && t->attn != ML_ATTN_FLASH)
        ml_train_warn(t, "neat_packing without flash attention: LLaMA-Factory builds a dense 4-D "
                         "attention mask (2*b*s^2 bytes) and %s attends over the whole pack",
                      ml_attn_name(t->attn));
    if (t->deepspeed && t->zero.offload_optimizer && t->zero.stage == 0)
        ml_train_warn(t, "offload_optimizer has no effect at ZeRO stage 0");
    if (t->deepspeed && c) {
        uint64_t world = (uint64_t)c->gpus_per_node * (c->nodes ? c->nodes : 1);
        if (world == 1)
            ml_train_warn(t, "DeepSpeed on a single GPU: nothing is sharded (it still runs; "
                             "offload still applies)");
    }
    if (t->fsdp != ML_FSDP_NONE && t->fsdp_version == 2 && t->grad_ckpt == ML_GC_REENTRANT &&
        t->framework == ML_FW_LLAMAFACTORY) {
        t->grad_ckpt = ML_GC_NON_REENTRANT;
        ml_train_warn(t, "FSDP2: LLaMA-Factory uses non-reentrant gradient checkpointing; "
                         "modelled as non-reentrant");
    }
    if (arch && arch->attn_softcap && t->attn == ML_ATTN_SDPA &&
        t->framework == ML_FW_LLAMAFACTORY) {
        t->attn = ML_ATTN_EAGER;
        ml_train_warn(t, "%s: LLaMA-Factory uses eager attention (soft-capping) unless "
                         "flash_attn is fa2; modelled as eager", arch->model_type);
    }
    if (t->method == ML_METHOD_QLORA && t->quant_bits == 8 && zero3)
        ml_train_warn(t, "8-bit QLoRA with DeepSpeed ZeRO-3: bitsandbytes int8 weights are not "
                         "sharded the way the estimate assumes");
    return ML_OK;
}
