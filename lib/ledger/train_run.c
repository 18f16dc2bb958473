/*
 * train_run.c - the run as the training ledger sees it (train_int.h, struct run): the shape, the
 * method, the dtypes, the parameter counts and the framework facts the terms read, set once per
 * estimate by ml_ledger_setup_run (lib/ledger/train_ledger.c assembles the ledger from them).
 * Also the shape that DeepSpeed AutoTP, context parallelism, a stage and a vision tower give it.
 *
 * Each rule cites the shared accounting notes (reference/accounting-notes.md, "notes §x.y";
 * docs/ledger.md has the rules) or the source file it was read from. Bytes are u64 through the
 * checked helpers of ledger_int.h. Vocabulary as in train_ledger.c.
 */
#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "train_int.h"

/* ==== the run as the ledger sees it ======================================================== */

static bool is_down_leaf(const char *leaf)
{
    static const char *const downs[] = {"down_proj", "w2", "c_proj", "fc2", "dense_4h_to_h", "wo", NULL};
    for (const char *const *d = downs; *d; d++)
        if (!strcmp(leaf, *d))
            return true;
    return false;
}

/* Which modules of a layer carry adapters, per token. */
static void lora_layout(struct run *R)
{
    const struct ml_inventory *inv = R->inv;
    uint64_t L = R->a->n_layers ? R->a->n_layers : 1;
    for (uint32_t i = 0; i < inv->n; i++) {
        const struct ml_tensor *x = &inv->t[i];
        /* GPT-2's Conv1D projections take adapters as nn.Linear does (PEFT lora/layer.py Linear,
         * fan_in_fan_out): O13's companion fix, they were left out of the layout. */
        if (x->mtp || !(x->linear || x->conv1d) || strcmp(x->param, "weight") ||
            !resolved(&R->lora_count, leaf_of(x->path)))
            continue;
        /* Modules per layer per token: active copies / layers (experts: top_k per token). */
        uint64_t per = ml_ceil_div_u64(x->active_copies, L);
        switch (x->kind) {
        case ML_MOD_ATTN_Q:
        case ML_MOD_ATTN_K:
        case ML_MOD_ATTN_V:
        case ML_MOD_ATTN_QKV:
        case ML_MOD_MLA_Q_A:
        case ML_MOD_MLA_KV_A: R->ad_attn_in += per; break;
        case ML_MOD_ATTN_O: R->ad_o += per; break;
        case ML_MOD_MLP_GATE:
        case ML_MOD_MLP_UP:
        case ML_MOD_MLP_GATE_UP: R->ad_mlp_in += per; break;
        case ML_MOD_MLP_DOWN: R->ad_down += per; break;
        case ML_MOD_EXPERT:
        case ML_MOD_SHARED_EXPERT:
            if (is_down_leaf(leaf_of(x->path)))
                R->ad_down += per;
            else
                R->ad_mlp_in += per;
            break;
        default: break;
        }
    }
}

/* Parameters of tensors whose leaf name is one of the additional targets. */
static uint64_t additional_params(struct run *R)
{
    uint64_t n = 0;
    const struct ml_lora_targets *add_t = &R->t->additional;
    for (uint32_t i = 0; i < R->inv->n; i++) {
        const struct ml_tensor *x = &R->inv->t[i];
        if (x->mtp)
            continue;
        for (uint32_t k = 0; k < add_t->n; k++) {
            /* modules_to_save matches a module name; its weight and bias both train. */
            char mod[80];
            (void)snprintf(mod, sizeof(mod), "%s", x->path);
            if (!strcmp(leaf_of(mod), add_t->names[k])) {
                uint64_t numel = x->tied ? mul(&R->k, x->rows, x->cols ? x->cols : 1) : x->params;
                n = add(&R->k, n, numel);
            }
        }
    }
    return n;
}

/* LitGPT's LoRA groups (lora_query, lora_key, lora_value, lora_projection, lora_mlp, lora_head)
 * from the resolved PEFT names. LitGPT adapts the q and v slices of a fused qkv. */
static void litgpt_groups(struct run *R)
{
    for (uint32_t i = 0; i < R->inv->n; i++) {
        const struct ml_tensor *x = &R->inv->t[i];
        /* GPT-2's Conv1D projections take adapters as nn.Linear does (PEFT lora/layer.py Linear,
         * fan_in_fan_out): O13's companion fix, they were left out of the layout. */
        if (x->mtp || !(x->linear || x->conv1d) || strcmp(x->param, "weight") ||
            !resolved(&R->lora_count, leaf_of(x->path)))
            continue;
        switch (x->kind) {
        case ML_MOD_ATTN_Q: R->ad_q = true; break;
        case ML_MOD_ATTN_K: R->ad_k = true; break;
        case ML_MOD_ATTN_V: R->ad_v = true; break;
        case ML_MOD_ATTN_QKV:
            /* LitGPT's fused qkv (litgpt/lora.py LoRAQKVLinear, enable_lora from lora_query /
             * lora_key / lora_value): a named fused target keeps finetune/lora.py's defaults (query
             * and value); "all" is the config hub's every flag on, the key included. */
            R->ad_q = R->ad_v = true;
            R->ad_k = R->ad_k || R->t->lora_targets.all;
            break;
        case ML_MOD_ATTN_O: R->ad_proj = true; break;
        case ML_MOD_MLP_GATE:
        case ML_MOD_MLP_UP:
        case ML_MOD_MLP_GATE_UP:
        case ML_MOD_MLP_DOWN: R->ad_mlp = true; break;
        case ML_MOD_LM_HEAD: R->ad_head = true; break;
        default: break;
        }
    }
}

/* Adapter elements that live in tensors below bitsandbytes' paging threshold, and the largest
 * parameter tensor. */
static void tensor_sizes(struct run *R)
{
    const uint64_t thr = 100000; /* bitsandbytes optim/optimizer.py get_state_buffer: p.numel() < 1e5 */
    for (uint32_t i = 0; i < R->inv->n; i++) {
        const struct ml_tensor *x = &R->inv->t[i];
        if (x->mtp || x->tied)
            continue;
        R->max_param = max2(R->max_param, mul(&R->k, x->rows, x->cols ? x->cols : 1));
        if (R->lora && x->linear && !strcmp(x->param, "weight") && resolved(&R->lora_count, leaf_of(x->path))) {
            uint64_t A = mul(&R->k, R->t->lora_rank, x->in_features);
            uint64_t B = mul(&R->k, x->out_features, R->t->lora_rank);
            if (A < thr)
                R->P_lora_small = add(&R->k, R->P_lora_small, mul(&R->k, A, x->copies));
            if (B < thr)
                R->P_lora_small = add(&R->k, R->P_lora_small, mul(&R->k, B, x->copies));
        }
    }
}

/* The framework facts the terms read (struct run, "Framework facts"). */
static void setup_facts(struct run *R)
{
    const struct ml_train *t = R->t;
    R->litgpt_2023 = R->litgpt && t->versions.torch < ML_VER(2, 2, 0);
    /* torch/nn/modules/module.py and torch/optim/optimizer.py zero_grad(set_to_none=...): False
     * before torch 2.0 (grads zeroed in place, kept allocated), True from 2.0 (grads freed). The
     * trainers call it with the default (transformers Trainer model.zero_grad(), LitGPT and
     * Lightning optimizer.zero_grad()); DeepSpeed and FSDP keep their own gradient buffers. */
    R->grads_kept = t->versions.torch < ML_VER(2, 0, 0) && !t->deepspeed && t->fsdp == ML_FSDP_NONE;
    /* bitsandbytes MatMul4Bit.forward: ctx.tensors = (A, B) up to 0.43.1, (None, B) from 0.43.2
     * (commit 9e753741, "fix QLoRA mem bug"); MatMul8bitLt keeps A in every version. */
    R->bnb_keeps_input = R->qlora && (R->qbits == 8 || t->versions.bitsandbytes < ML_VER(0, 43, 2));
    /* lit-gpt / litgpt finetune/lora.py: bnb.optim.PagedAdamW whenever the model is quantized. */
    R->paged_optim =
        t->optim == ML_OPTIM_PAGED_ADAMW_8BIT || t->optim == ML_OPTIM_PAGED_ADAMW_32BIT || (R->litgpt && R->qlora);
    /* PEFT prepare_model_for_kbit_training leaves the norms fp32 (TRL's cast keeps them so):
     * fp32 norm outputs, Linear4bit returning its input dtype and the residual adds promote the
     * stream to fp32. TRL skips it for sharded QLoRA (ZeRO-3 / FSDP). */
    R->fp32_stream = R->qlora && !R->zero3 && !R->fsdp && t->kbit_prepare != ML_KBIT_NONE && t->framework == ML_FW_HF;
    /* Variable batch shapes with a cache that is never emptied (plan R2): padded per batch, not
     * packed or padded to a fixed length; expandable segments grow and shrink one segment
     * instead. torchtune pads each batch to its longest sample (torchtune/utils/collate.py
     * padded_collate) unless the dataset is packed, and its recipes never empty the cache
     * (docs/ledger.md R2b). LitGPT runs are modelled at their longest batch (the 2023 scripts
     * force it first). */
    R->dynamic_shapes =
        (t->framework == ML_FW_HF || t->framework == ML_FW_LLAMAFACTORY || t->framework == ML_FW_TORCHTUNE) &&
        !t->packing && !t->fixed_length && t->empty_cache_steps == 0 && !t->expandable_segments;
    if (R->lora && R->litgpt)
        litgpt_groups(R);
    tensor_sizes(R);
}

/* A packed checkpoint's weights as stored (docs/ledger.md "Training on a quantized checkpoint"):
 * PEFT wraps the quantized linears as they load (GPTQLoraLinear, AwqLoraLinear, compressed-tensors'
 * CompressedLinear as an nn.Linear), so each stored weight keeps its format's bytes, by the
 * inference ledger's rule (ml_wq_weight_bytes), and everything else stays at the compute dtype
 * (fp32 where the model keeps it). */
static void packed_sizes(struct run *R)
{
    struct calc *k = &R->k;
    const struct ml_weight_quant *f = &R->a->wq;
    for (uint32_t i = 0; i < R->inv->n; i++) {
        const struct ml_tensor *x = &R->inv->t[i];
        if (x->mtp || x->tied)
            continue;
        if (ml_wq_tensor_quantized(x, f)) {
            uint64_t s1, n = mul(k, x->in_features, x->out_features);
            uint64_t b = ml_wq_weight_bytes(k, f, x->in_features, x->out_features, &s1);
            R->packed_bytes = add(k, R->packed_bytes, mul(k, b - s1, x->copies));
            R->packed_state = add(k, R->packed_state, mul(k, s1, x->copies));
            R->P_quant = add(k, R->P_quant, mul(k, n, x->copies));
            R->max_qweight = max2(R->max_qweight, n);
        } else {
            uint64_t n = mul3(k, x->rows, x->cols ? x->cols : 1, x->copies);
            R->P_unpacked = add(k, R->P_unpacked, n);
            R->packed_bytes = add(k, R->packed_bytes, mul(k, n, x->keep_fp32 ? 4 : R->act_bytes));
        }
    }
}

static void stage_shape(struct run *R);
static void parallel_shape(struct run *R);
static void parallel_counts(struct run *R);
static enum ml_status vision_setup(struct run *R, struct ml_diag *diag);

/* The run's shape: batch, sequence, world and how the states are sharded. */
static enum ml_status setup_shape(struct run *R, struct ml_diag *diag)
{
    const struct ml_train *t = R->t;
    if (t->micro_batch == 0 || t->seq_len == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("micro-batch and sequence length must be positive"));
    if (R->c->gpus_per_node == 0 || R->c->nodes == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("the number of GPUs must be positive"));
    if (R->c->gpu.capacity_bytes == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("the GPU capacity is unknown"));
    R->b = t->micro_batch;
    R->s = t->seq_len;
    stage_shape(R);
    parallel_shape(R);
    R->tokens = mul(&R->k, R->b, R->s);
    R->world = R->c->gpus_per_node * R->c->nodes;
    R->zero3 = t->deepspeed && t->zero.stage == 3;
    R->zero12 = t->deepspeed && (t->zero.stage == 1 || t->zero.stage == 2);
    R->fsdp = !t->deepspeed && t->fsdp != ML_FSDP_NONE;
    R->ddp = !t->deepspeed && !R->fsdp && R->world > 1;
    R->n_shard = 1;
    if (R->zero3 || R->zero12)
        R->n_shard = R->world;
    if (R->fsdp)
        R->n_shard = t->fsdp == ML_FSDP_HYBRID_SHARD ? R->c->gpus_per_node : R->world;
    return ML_OK;
}

/* The method as the checkpoint's stored format lets it run: QLoRA, LoRA on a packed base, full,
 * freeze. */
static enum ml_status setup_method(struct run *R, struct ml_diag *diag)
{
    const struct ml_train *t = R->t;
    const struct ml_arch *a = R->a;
    /* A quantized checkpoint loads as stored unless the framework dequantizes it (fp8, mxfp4);
     * quantization_bit does not apply to it (ml_train_check says so). */
    R->load = ml_train_checkpoint_load(t, a);
    bool lora_any = t->method == ML_METHOD_LORA || t->method == ML_METHOD_QLORA;
    enum ml_status cst = ml_train_checkpoint_check(t, a, diag);
    if (cst != ML_OK)
        return cst;
    R->qlora = t->method == ML_METHOD_QLORA && R->load == ML_LOAD_PLAIN;
    R->qbits = t->quant_bits;
    R->double_quant = t->double_quant;
    /* LoRA on a bitsandbytes checkpoint (Unsloth's -bnb-4bit, its quantization_config) is QLoRA:
     * transformers loads the base as stored (lib/model reads the format). */
    if (lora_any && R->load == ML_LOAD_BNB) {
        R->qlora = true;
        R->qbits = a->wq.bits;
        R->double_quant = a->wq.double_quant;
    }
    R->packed = lora_any && R->load == ML_LOAD_PACKED;
    /* autoawq WQLinearMMFunction.forward: ctx.save_for_backward(x, qweight, qzeros, scales, bias). */
    R->packed_keeps_input = R->packed && a->wq.method == ML_WQ_AWQ;
    R->lora = lora_any || R->qlora;
    R->full = t->method == ML_METHOD_FULL;
    R->freeze = t->method == ML_METHOD_FREEZE;
    return ML_OK;
}

/* The dtypes of the compute, the trainable parameters, the optimizer states and the adapters'
 * inputs. */
static void setup_dtypes(struct run *R)
{
    const struct ml_train *t = R->t;
    /* Autocast: accelerate enables native AMP for DDP/FSDP/single GPU, not under DeepSpeed
     * (notes §3.3); pure bf16 and fp32 runs have none. */
    bool mixed = t->precision == ML_PREC_BF16 || t->precision == ML_PREC_FP16;
    R->autocast = mixed && !t->deepspeed;
    R->act_bytes = t->precision == ML_PREC_FP32 ? 4 : 2;

    /* Trainable parameter dtype (notes §6.1): LLaMA-Factory casts trainable params to fp32
     * unless pure_bf16 or ZeRO-3; DeepSpeed ZeRO-0/1/2 casts them back to bf16 (the fp32 copy
     * lives in the optimizer); ZeRO-3 LoRA adapters stay fp32 from DeepSpeed 0.19.2 (notes
     * §1.10). Plain HF + PEFT upcasts adapters (autocast_adapter_dtype); HF full fine-tuning
     * loads fp32 by default. fp16 AMP keeps fp32 params. */
    if (t->precision == ML_PREC_FP32)
        R->trainable_fp32 = true;
    else if (t->precision == ML_PREC_PURE_BF16)
        /* PEFT >= 0.12 get_peft_model(autocast_adapter_dtype=True) makes bf16 adapters fp32
         * (peft_model.py, ae1ae20b7); LLaMA-Factory passes cast_trainable_params_to_fp32 there
         * (model/adapter.py), which pure_bf16 turns off. */
        R->trainable_fp32 =
            t->framework == ML_FW_HF && R->lora && !t->deepspeed && t->versions.peft >= ML_VER(0, 12, 0);
    else if (R->zero3)
        R->trainable_fp32 = R->lora && t->versions.deepspeed >= 1902u;
    else if (t->deepspeed)
        R->trainable_fp32 = false;
    else
        R->trainable_fp32 = true;

    /* TRL DPO on a quantized base casts every trainable parameter to bf16 after wrapping it with
     * PEFT, with no prepare_model_for_kbit_training (dpo_trainer.py __init__, _is_quantized_model):
     * bf16 adapters, grads and AdamW states, no autocast copy (docs/ledger.md O9). GRPO does the
     * same from TRL 0.26.0 (grpo_trainer.py __init__, #4577), KTO (kto_trainer.py __init__) from
     * the release that models it here (docs/ledger.md "TRL's fused LM head"). */
    uint32_t trl_v = ml_trl_version(t);
    bool trl_cast_stage = t->stage == ML_STAGE_DPO || t->stage == ML_STAGE_KTO ||
                          (t->stage == ML_STAGE_GRPO && trl_v >= ML_VER(0, 26, 0));
    bool trl_bf16 = t->framework == ML_FW_TRL && trl_cast_stage && R->qlora && t->precision != ML_PREC_FP32;
    if (trl_bf16)
        R->trainable_fp32 = false;
    R->trl_bf16_cast = trl_bf16;

    /* Adam moments follow the parameter dtype (torch/optim/adamw.py). */
    R->state_bytes = (t->precision == ML_PREC_PURE_BF16 || trl_bf16) && !R->trainable_fp32 ? 2 : 4;
    bool fp32_nocast = R->trainable_fp32 && !R->autocast && t->precision != ML_PREC_FP32;
    if (!R->lora)
        R->adapter_input = AD_SHARED;
    else if (t->lora_dropout)
        R->adapter_input = fp32_nocast ? AD_DROPOUT_FP32 : AD_DROPOUT;
    else if (fp32_nocast)
        R->adapter_input = AD_FP32_NOCAST;
    else if (R->trainable_fp32 && R->autocast)
        R->adapter_input = AD_FP32_AUTOCAST;
    else
        R->adapter_input = AD_SHARED;
}

/* Total, trainable, frozen and quantized parameter counts. */
static enum ml_status setup_counts(struct run *R, struct ml_diag *diag)
{
    const struct ml_train *t = R->t;
    const struct ml_arch *a = R->a;
    const struct ml_inventory *inv = R->inv;
    /* Parameter counts. */
    R->litgpt = t->framework == ML_FW_LITGPT;
    R->P = inv->total_params;
    R->embed_numel = inv->embedding_params;
    R->head_numel = mul(&R->k, a->vocab, a->hidden);
    /* LitGPT builds an untied lm_head for tied HF models (convert_hf_checkpoint copies wte into
     * lm_head.weight; the finetune scripts reject tie_embeddings). */
    if (R->litgpt && a->tie_embeddings)
        R->P = add(&R->k, R->P, R->head_numel);
    /* Outside the decoder layers: embeddings, head, and a vision tower with its projector. */
    uint64_t non_layer = add(&R->k, inv->by_group[ML_GROUP_EMBEDDING], inv->by_group[ML_GROUP_LM_HEAD]);
    non_layer = add(&R->k, non_layer, add(&R->k, inv->by_group[ML_GROUP_VISION], inv->by_group[ML_GROUP_PROJECTOR]));
    R->layer_params = R->P > non_layer ? (R->P - non_layer) / (a->n_layers + a->n_encoder_layers) : 0;
    for (uint32_t i = 0; i < inv->n; i++) {
        const struct ml_tensor *x = &inv->t[i];
        if (x->mtp || !(x->linear || x->conv1d) || x->kind == ML_MOD_LM_HEAD)
            continue;
        R->max_linear = max2(R->max_linear, mul(&R->k, x->rows, x->cols ? x->cols : 1));
    }
    R->trainable_layers = a->n_layers + a->n_encoder_layers;
    if (R->lora) {
        enum ml_status st = ml_lora_count(a, inv, &t->lora_targets, t->lora_rank, &R->lora_count, diag);
        if (st != ML_OK)
            return st;
        lora_layout(R);
        R->P_lora = R->lora_count.params;
        R->P_add = additional_params(R);
        R->P_t = add(&R->k, R->P_lora, R->P_add);
        R->P_f = R->P;
    } else if (R->freeze) {
        uint32_t n = t->freeze_trainable_layers < a->n_layers ? t->freeze_trainable_layers : a->n_layers;
        R->trainable_layers = n;
        R->P_t = mul(&R->k, R->layer_params, n);
        R->P_f = R->P - R->P_t;
    } else {
        R->P_t = R->P;
        R->P_f = 0;
    }
    if (R->qlora) {
        /* bitsandbytes replaces every nn.Linear but the output head (transformers
         * get_keys_to_not_convert), GPT-2's Conv1D included (integrations/bitsandbytes.py
         * replace_with_bnb_linear; docs/ledger.md O8); Lightning's BitsandbytesPrecision replaces
         * every nn.Linear built in its init context, lm_head included. */
        for (uint32_t i = 0; i < inv->n; i++) {
            const struct ml_tensor *x = &inv->t[i];
            bool mm = x->linear || (x->conv1d && !R->litgpt);
            if (!x->mtp && mm && !strcmp(x->param, "weight") && (x->kind != ML_MOD_LM_HEAD || R->litgpt))
                R->P_quant = add(&R->k, R->P_quant, x->params);
        }
        if (R->litgpt && a->tie_embeddings)
            R->P_quant = add(&R->k, R->P_quant, R->head_numel);
    }
    return ML_OK;
}

enum ml_status ml_ledger_setup_run(struct run *R, struct ml_diag *diag)
{
    enum ml_status st = setup_shape(R, diag);
    if (st == ML_OK)
        st = setup_method(R, diag);
    if (st != ML_OK)
        return st;
    setup_dtypes(R);
    st = setup_counts(R, diag);
    if (st != ML_OK)
        return st;
    if (R->packed)
        packed_sizes(R);
    setup_facts(R);
    enum ml_status vst = vision_setup(R, diag);
    parallel_counts(R);
    return vst;
}

/* ==== distributed settings: DeepSpeed AutoTP, context parallelism (docs/ledger.md) ========= */

/* Context parallelism (v0 hyper_parallel_cp_size, v1 cp_size with cp_mode ulysses or ring):
 * each GPU of a cp group holds s / cp tokens of every sequence, so activations and logits are
 * priced for s / cp (v1 plugins/model_plugins/parallelization/sequence_parallel.py). */
static void parallel_shape(struct run *R)
{
    const struct ml_train *t = R->t;
    R->cp = t->cp_size > 1 ? t->cp_size : 1;
    R->tp = t->deepspeed && t->tp_size > 1 ? t->tp_size : 1;
    R->s_full = R->s;
    if (R->cp > 1)
        R->s = ml_ceil_div_u64(R->s, R->cp);
}

/* DeepSpeed AutoTP (tensor_parallel.autotp_size; engine.py _configure_tensor_parallel_states,
 * module_inject/auto_tp.py): every nn.Linear inside the layers is split tp ways (column- or
 * row-wise), the embeddings, norms and lm_head stay whole, and ZeRO partitions over the
 * world / tp data-parallel ranks. */
static void parallel_counts(struct run *R)
{
    R->P_t_all = R->P_t;
    if (R->tp <= 1)
        return;
    uint64_t lin = 0;
    for (uint32_t i = 0; i < R->inv->n; i++) {
        const struct ml_tensor *x = &R->inv->t[i];
        if (!x->mtp && x->linear && x->kind != ML_MOD_LM_HEAD && x->kind != ML_MOD_EMBEDDING)
            lin = add(&R->k, lin, x->params);
    }
    /* What each rank does not hold, split between the trainable and the frozen part. */
    uint64_t saved = lin - part(lin, R->tp);
    uint64_t L = R->a->n_layers ? R->a->n_layers : 1;
    uint64_t t_share = R->full ? saved : R->freeze ? mul(&R->k, saved / L, R->trainable_layers) : 0;
    if (t_share > saved)
        t_share = saved;
    R->P_t = R->P_t > t_share ? R->P_t - t_share : 0;
    R->P_f = R->P_f > saved - t_share ? R->P_f - (saved - t_share) : 0;
    if (R->zero12 || R->zero3)
        R->n_shard = R->world / R->tp ? R->world / R->tp : 1;
}

/* ==== vision-language training (docs/ledger.md "Vision-language training") ================ */

/* Which parameters train (LLaMA-Factory model/model_utils/visual.py get_forbidden_modules and
 * finetuning_args.py: freeze_vision_tower and freeze_multi_modal_projector default true,
 * freeze_language_model false), and the visual tokens a sample carries inside cutoff_len
 * (mm_plugin.py refuses a sample whose visual tokens do not fit). */
static enum ml_status vision_setup(struct run *R, struct ml_diag *diag)
{
    const struct ml_train *t = R->t;
    const struct ml_arch *a = R->a;
    if (a->vision.kind == ML_VISION_NONE)
        return ML_OK;
    ml_vlm_resolve(&t->vlm, a, &R->vlm);
    if (R->vlm.tokens > t->seq_len)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("%llu visual tokens per sample do not fit cutoff_len %llu (LLaMA-Factory stops: raise "
                             "cutoff_len or lower image_max_pixels, video_maxlen or the images per sample)"),
                           (unsigned long long)R->vlm.tokens, (unsigned long long)t->seq_len);
    const char *vk[8], *pk[8];
    size_t nv = ml_arch_freeze_keys(a, 0, vk, 8), np = ml_arch_freeze_keys(a, 1, pk, 8);
    for (uint32_t i = 0; i < R->inv->n; i++) {
        const struct ml_tensor *x = &R->inv->t[i];
        if (x->mtp || x->tied)
            continue;
        if (ml_module_in_keys(x->path, vk, nv) || (!np && x->kind == ML_MOD_VISION))
            R->P_vis = add(&R->k, R->P_vis, x->params);
        else if (ml_module_in_keys(x->path, pk, np) || x->kind == ML_MOD_PROJECTOR)
            R->P_proj = add(&R->k, R->P_proj, x->params);
    }
    R->vis_trainable = t->vlm.vision_trainable;
    R->proj_trainable = t->vlm.projector_trainable;
    R->lang_frozen = t->vlm.language_frozen;
    if (R->full) {
        uint64_t lang = R->P > R->P_vis + R->P_proj ? R->P - R->P_vis - R->P_proj : 0;
        R->P_t = add(&R->k, add(&R->k, R->vis_trainable ? R->P_vis : 0, R->proj_trainable ? R->P_proj : 0),
                     R->lang_frozen ? 0 : lang);
        R->P_f = R->P - R->P_t;
    }
    return ML_OK;
}

/* ==== stages: the reference, reward and value models, rollout (docs/ledger.md "Stages") ==== */

/* The stage's batch and sequence (ml_stage_resolve): the pairwise collator puts the chosen and
 * the rejected sequences of each sample in one batch (2 b), and a PPO/GRPO training forward reads
 * the prompt plus the generated tokens. */
static void stage_shape(struct run *R)
{
    ml_stage_resolve(R->t, &R->stage);
    R->b_sample = R->b;
    R->b = mul(&R->k, R->b, R->stage.batch_factor);
    R->s = add(&R->k, R->s, R->stage.gen_tokens);
}
