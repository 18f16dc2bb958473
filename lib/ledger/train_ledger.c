/*
 * train_ledger.c - the per-GPU training ledger (see ledger.h).
 *
 * One small function per term, each citing the rule of the shared accounting notes
 * (reference/accounting-notes.md, "notes §x.y" below) or the source file it was read from.
 * Bytes are u64 and every product goes through the checked helpers; a count that overflows
 * marks the ledger and the call fails with ML_ERR_OVERFLOW. Ratios are integer rationals.
 *
 * Vocabulary (notes §0): b micro-batch, s sequence, h hidden, a heads, h_kv = kv_heads x head_dim,
 * i FFN width, L layers, V vocab, r LoRA rank, P / P_t / P_f total / trainable / frozen params,
 * N the ranks a ZeRO or FSDP partition spans.
 */
#include "memledger/ledger.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memledger/checked.h"
#include "i18n.h"
#include "memledger/infer.h"
#include "ledger_int.h"
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

static const char *leaf_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

static bool resolved(const struct ml_lora_count *lc, const char *leaf)
{
    for (uint32_t i = 0; i < lc->n_resolved; i++)
        if (!strcmp(lc->resolved[i], leaf))
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
        if (x->mtp || !x->linear || strcmp(x->param, "weight") || !resolved(&R->lc, leaf_of(x->path)))
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
        if (x->mtp || !x->linear || strcmp(x->param, "weight") || !resolved(&R->lc, leaf_of(x->path)))
            continue;
        switch (x->kind) {
        case ML_MOD_ATTN_Q: R->ad_q = true; break;
        case ML_MOD_ATTN_K: R->ad_k = true; break;
        case ML_MOD_ATTN_V: R->ad_v = true; break;
        case ML_MOD_ATTN_QKV: R->ad_q = R->ad_v = true; break;
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
        if (R->lora && x->linear && !strcmp(x->param, "weight") && resolved(&R->lc, leaf_of(x->path))) {
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
     * instead. LitGPT and torchtune runs are modelled at their longest batch (the 2023 scripts
     * force it first). */
    R->dynamic_shapes = (t->framework == ML_FW_HF || t->framework == ML_FW_LLAMAFACTORY) && !t->packing &&
                        !t->fixed_length && t->empty_cache_steps == 0 && !t->expandable_segments;
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
    R->dq = t->double_quant;
    /* LoRA on a bitsandbytes checkpoint (Unsloth's -bnb-4bit, its quantization_config) is QLoRA:
     * transformers loads the base as stored (lib/model reads the format). */
    if (lora_any && R->load == ML_LOAD_BNB) {
        R->qlora = true;
        R->qbits = a->wq.bits;
        R->dq = a->wq.double_quant;
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

    /* Adam moments follow the parameter dtype (torch/optim/adamw.py). */
    R->state_bytes = t->precision == ML_PREC_PURE_BF16 && !R->trainable_fp32 ? 2 : 4;
    bool fp32_nocast = R->trainable_fp32 && !R->autocast && t->precision != ML_PREC_FP32;
    if (!R->lora)
        R->ad = AD_SHARED;
    else if (t->lora_dropout)
        R->ad = fp32_nocast ? AD_DROPOUT_FP32 : AD_DROPOUT;
    else if (fp32_nocast)
        R->ad = AD_FP32_NOCAST;
    else if (R->trainable_fp32 && R->autocast)
        R->ad = AD_FP32_AUTOCAST;
    else
        R->ad = AD_SHARED;
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
        enum ml_status st = ml_lora_count(a, inv, &t->lora_targets, t->lora_rank, &R->lc, diag);
        if (st != ML_OK)
            return st;
        lora_layout(R);
        R->P_lora = R->lc.params;
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
         * get_keys_to_not_convert); Lightning's BitsandbytesPrecision replaces every nn.Linear
         * built in its init context, lm_head included. */
        for (uint32_t i = 0; i < inv->n; i++) {
            const struct ml_tensor *x = &inv->t[i];
            if (!x->mtp && x->linear && !strcmp(x->param, "weight") && (x->kind != ML_MOD_LM_HEAD || R->litgpt))
                R->P_quant = add(&R->k, R->P_quant, x->params);
        }
        if (R->litgpt && a->tie_embeddings)
            R->P_quant = add(&R->k, R->P_quant, R->head_numel);
    }
    return ML_OK;
}

static enum ml_status setup_run(struct run *R, struct ml_diag *diag)
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

/* ==== entries ============================================================================== */

/* Full fine-tuning with GA = 1 and unsharded grads: each layer's gradients appear as its saved
 * tensors are freed (autograd releases a node's saved variables once it has run; zero_grad sets
 * grads to None), so the backward peak is the larger of "every grad + one layer" and "the saved
 * set + the head's grad" rather than their sum (plan FT1). */
static bool grads_replace_activations(const struct run *R)
{
    return R->full && R->t->grad_accum <= 1 && !R->zero3 && !R->zero12 && !R->fsdp && !R->grads_kept;
}

/* Phases in which gradients are live: backward and step, plus forward when GA accumulates;
 * when grads replace activations the backward working set carries them. */
static uint32_t grad_phases(const struct run *R)
{
    uint32_t p = ML_PH(ML_PHASE_OPTIMIZER_STEP);
    if (!grads_replace_activations(R))
        p |= ML_PH(ML_PHASE_BACKWARD);
    if (R->grads_kept)
        return ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD);
    if (R->t->grad_accum > 1)
        p |= ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE);
    return p;
}

/* Optimizer state bytes per trainable parameter, as numerator/denominator. */
static void optim_state(const struct run *R, uint64_t *num, uint64_t *den, const char **what)
{
    *den = 1;
    switch (R->t->optim) {
    case ML_OPTIM_ADAMW_TORCH:
    case ML_OPTIM_ADAMW_TORCH_FUSED:
    case ML_OPTIM_PAGED_ADAMW_32BIT:
    case ML_OPTIM_GALORE_ADAMW:
        /* exp_avg + exp_avg_sq in the parameter's dtype (torch/optim/adamw.py). */
        *num = 2u * R->state_bytes;
        *what = R->state_bytes == 4 ? _("8 B (two fp32 moments)") : _("4 B (two bf16 moments)");
        break;
    case ML_OPTIM_ADAMW_8BIT:
    case ML_OPTIM_PAGED_ADAMW_8BIT:
        /* bitsandbytes blockwise 8-bit: 1 B per element per moment + an fp32 absmax per
         * 256-element block: 2 x (1 + 4/256) = 2.03125 B. */
        *num = 520;
        *den = 256;
        *what = "2.03 B (two 8-bit moments + block absmax)";
        break;
    case ML_OPTIM_ADAFACTOR:
        /* Factored second moment (row + column statistics), no first moment (HF default
         * beta1=None): about 4 B per row and column; counted as 4 B x sqrt-ish share, bounded
         * above by 4/64 of a dense fp32 state for the matrix shapes of LLMs. */
        *num = 4;
        *den = 64;
        *what = "~0.06 B (factored second moment)";
        break;
    case ML_OPTIM_SGD:
        *num = 0;
        *what = "0 B (SGD without momentum)";
        break;
    case ML_OPTIM_COUNT:
        *num = 8;
        *what = "8 B";
        break;
    }
}

/* QLoRA frozen weights (notes §4.5): quantized linears at NF4 0.5 B (LLM.int8 1 B) + absmax,
 * the rest 16-bit (fp32 after PEFT's prepare_model_for_kbit_training). Sharded under ZeRO-3 /
 * FSDP (bnb_4bit_quant_storage lets them flatten the packed data), on the host under FSDP CPU
 * offload; the quantization state is a Python attribute of Params4bit, not a parameter, so it is
 * neither sharded nor offloaded: whole on every GPU. */
static void qlora_weights(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    bool sharded = R->zero3 || R->fsdp;
    uint64_t N = sharded ? R->n_shard : 1;
    uint64_t rest = R->P_f > R->P_quant ? R->P_f - R->P_quant : 0;
    /* prepare_model_for_kbit_training casts every non-quantized 16-bit parameter to fp32 (PEFT
     * utils/other.py); TRL's peft_module_casting_to_bf16 returns all but the norms to bf16. */
    bool kbit_full = t->kbit_prepare == ML_KBIT_FULL && t->framework == ML_FW_HF && !sharded;
    uint32_t wb = kbit_full ? 4 : R->act_bytes;
    uint64_t rest_b = mul(k, rest, wb);
    uint64_t qb = R->qbits == 8 ? R->P_quant : frac(k, R->P_quant, 1, 2); /* int8: + ~0 scales */
    if (R->fsdp && t->fsdp_offload) {
        /* CPUOffload(offload_params=True): every shard, 4-bit and 16-bit, lives on the host. */
    } else {
        entry(sk, ML_C_WEIGHTS_FROZEN, part(add(k, qb, rest_b), N), ML_PH_TRAIN, ML_FIG_ALLOCATED,
              kbit_full ? "notes §4.5; PEFT prepare_model_for_kbit_training (fp32 casts)"
                        : "notes §4.5 (bitsandbytes NF4)",
              _("%s B x %llu quantized + %u B x %llu other%s"), R->qbits == 8 ? "1" : "0.5",
              (unsigned long long)R->P_quant, wb, (unsigned long long)rest, sharded ? " / N" : "");
    }
    if (R->qbits != 8) {
        /* absmax: fp32 per 64-block (0.0625 B), or with double quant 8-bit per block plus an
         * fp32 per 256 blocks: 1/64 + 4/16384 B per weight. */
        uint64_t qs =
            R->dq ? add(k, frac(k, R->P_quant, 1, 64), frac(k, R->P_quant, 4, 16384)) : frac(k, R->P_quant, 4, 64);
        entry(sk, ML_C_QUANT_STATE, qs, ML_PH_TRAIN, ML_FIG_ALLOCATED,
              "notes §4.5; bitsandbytes Params4bit.quant_state",
              R->dq ? _("double-quantized absmax: 1/64 + 4/16384 B x %llu (whole on every GPU)")
                    : _("fp32 absmax per 64 weights: 0.0625 B x %llu (whole on every GPU)"),
              (unsigned long long)R->P_quant);
    }
    /* An fp32 lm_head under autocast: the 16-bit copy autocast makes is saved by the matmul. */
    if (kbit_full && R->autocast)
        entry(sk, ML_C_AUTOCAST_CACHE, mul(k, R->head_numel, 2),
              ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_AFTER_SAVE),
              ML_FIG_ALLOCATED, "PEFT prepare_model_for_kbit_training + torch autocast",
              _("2 B x lm_head %llu (16-bit copy of the fp32 head)"), (unsigned long long)R->head_numel);
}

/* LoRA on a packed checkpoint: the stored weights and their scales (packed_sizes), whole on every
 * GPU (ml_train_check refuses ZeRO-3 and FSDP on these formats). */
static void packed_weights(struct run *R, struct sink *sk)
{
    const struct ml_weight_quant *f = &R->a->wq;
    char fmt[96];
    ml_wq_describe(f, fmt, sizeof(fmt));
    entry(sk, ML_C_WEIGHTS_FROZEN, R->packed_bytes, ML_PH_TRAIN, ML_FIG_ALLOCATED,
          "infer_ledger.c formats (AWQ, GPTQ, compressed-tensors); docs/ledger.md training on a quantized checkpoint",
          _("%s: %llu params as stored + %u B x %llu other"), fmt, (unsigned long long)R->P_quant, R->act_bytes,
          (unsigned long long)R->P_unpacked);
    entry(sk, ML_C_QUANT_STATE, R->packed_state, ML_PH_TRAIN, ML_FIG_ALLOCATED,
          "docs/ledger.md quantized checkpoints (group scales)", _("scales / zeros / group indices of the %s format"),
          f->name);
}

/* ---- model states ------------------------------------------------------------------------ */

static void optimizer_terms(struct run *R, struct sink *sk);

static void model_states(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    uint64_t N = R->n_shard;
    uint32_t wb = R->act_bytes;              /* weight bytes of frozen / compute-dtype params */
    uint32_t tb = R->trainable_fp32 ? 4 : 2; /* fp32 runs: act_bytes 4 and trainable_fp32 */

    /* Frozen weights (notes §0, §4.5): quantized linears at NF4 0.5 B + absmax, others 16-bit. */
    uint64_t frozen = R->P_f;
    if (R->qlora) {
        qlora_weights(R, sk);
    } else if (R->packed) {
        packed_weights(R, sk);
    } else if (frozen && ((R->fsdp && t->fsdp_offload) || (R->zero3 && t->zero.offload_param))) {
        /* FSDP CPUOffload(offload_params=True) / ZeRO-3 offload_param: every partition lives on
         * the host (notes §1.7); the GPU keeps only the gathered working set. */
    } else if (frozen) {
        bool sharded = R->zero3 || R->fsdp;
        entry(sk, ML_C_WEIGHTS_FROZEN, mul(k, part(frozen, sharded ? N : 1), wb), ML_PH_TRAIN, ML_FIG_ALLOCATED,
              sharded ? "notes §1.1 (ZeRO-3 partition) / §3.1" : "notes §0", _("%u B x %llu frozen%s"), wb,
              (unsigned long long)frozen, sharded ? " / N" : "");
    }

    /* Trainable weights. */
    uint64_t Pt = R->P_t;
    if (Pt) {
        if (R->zero3 && t->zero.offload_param) {
            /* the lp partitions are on the host with the rest (notes §1.7) */
        } else if (R->zero3) {
            entry(sk, ML_C_WEIGHTS_TRAINABLE, mul(k, part(Pt, N), tb), ML_PH_TRAIN, ML_FIG_ALLOCATED,
                  "notes §1.1 lp_param_buffer", _("%u B x %llu trainable / %llu ranks"), tb, (unsigned long long)Pt,
                  (unsigned long long)N);
        } else if (R->fsdp && t->fsdp_offload) {
            /* on the host (CPUOffload) */
        } else if (R->fsdp) {
            /* accelerate upcasts trainable flat params to fp32 under mixed precision (§3.1). */
            uint32_t fb = t->precision == ML_PREC_PURE_BF16 ? 2 : 4;
            entry(sk, ML_C_WEIGHTS_TRAINABLE, mul(k, part(Pt, N), fb), ML_PH_TRAIN, ML_FIG_ALLOCATED,
                  "notes §3.1 (accelerate fp32 upcast)", _("%u B x %llu trainable / %llu ranks"), fb,
                  (unsigned long long)Pt, (unsigned long long)N);
        } else {
            /* ZeRO-0/1/2 keep a full bit16 copy on every rank (notes §2); DDP/single full. */
            entry(sk, ML_C_WEIGHTS_TRAINABLE, mul(k, Pt, tb), ML_PH_TRAIN, ML_FIG_ALLOCATED,
                  R->zero12 ? "notes §2 bit16 flat copy" : "notes §6.1", _("%u B x %llu trainable"), tb,
                  (unsigned long long)Pt);
        }
    }
    if (!Pt)
        return;

    /* fp32 master: DeepSpeed keeps one per rank partition unless the trainable partition is
     * already fp32 (ZeRO-3 aliases it, notes §1.1); AMP without DeepSpeed trains the fp32
     * params themselves (no separate master); pure bf16 has none. */
    if (t->deepspeed && t->precision != ML_PREC_PURE_BF16 && !(R->zero3 && R->trainable_fp32) &&
        t->precision != ML_PREC_FP32) {
        uint64_t n = (R->zero3 || R->zero12) ? part(Pt, N) : Pt;
        if (!t->zero.offload_optimizer)
            entry(sk, ML_C_MASTER, mul(k, n, 4), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
                  "notes §1.1 / §2 fp32 master partition", _("4 B x %llu trainable%s"), (unsigned long long)Pt,
                  N > 1 ? " / N" : "");
    }

    /* Gradients. */
    uint32_t gb = tb; /* param.grad in the trainable dtype (pure bf16: never fp32) */
    if (R->zero3) {
        /* ZeRO-3 grad partition buffer (notes §1.1): grad_accum_dtype, default the model dtype. */
        gb = t->zero.grad_accum_dtype == ML_DTYPE_FP32 ? 4 : tb;
        if (!t->zero.offload_optimizer)
            entry(sk, ML_C_GRADIENTS, mul(k, part(Pt, N), gb), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
                  "notes §1.1 gradient partition buffer", _("%u B x %llu / %llu ranks"), gb, (unsigned long long)Pt,
                  (unsigned long long)N);
    } else if (R->zero12) {
        gb = t->zero.grad_accum_dtype == ML_DTYPE_FP32 ? 4 : 2;
        if (t->zero.stage == 2) {
            /* grads_in_partition; with GA > 1 the previous micro-step's buffer coexists (§2). */
            uint64_t copies = t->grad_accum > 1 ? 2 : 1;
            entry(sk, ML_C_GRADIENTS, mul3(k, part(Pt, N), gb, copies), grad_phases(R), ML_FIG_ALLOCATED,
                  "notes §2 grads_in_partition", _("%u B x %llu / %llu ranks%s"), gb, (unsigned long long)Pt,
                  (unsigned long long)N, copies > 1 ? " x 2 (GA > 1)" : "");
        } else {
            entry(sk, ML_C_GRADIENTS, mul(k, Pt, gb), grad_phases(R), ML_FIG_ALLOCATED,
                  "notes §2 (ZeRO-1: full grads until the boundary)", "%u B x %llu", gb, (unsigned long long)Pt);
        }
    } else if (R->fsdp && t->fsdp_offload) {
        /* CPUOffload moves the sharded grads to the host after the reduce-scatter. */
    } else if (R->fsdp) {
        /* Sharded fp32 grads kept until zero_grad (notes §3.1). */
        uint32_t fb = t->precision == ML_PREC_PURE_BF16 ? 2 : 4;
        entry(sk, ML_C_GRADIENTS, mul(k, part(Pt, N), fb), grad_phases(R), ML_FIG_ALLOCATED, "notes §3.1 sharded grads",
              _("%u B x %llu / %llu ranks"), fb, (unsigned long long)Pt, (unsigned long long)N);
    } else {
        entry(sk, ML_C_GRADIENTS, mul(k, Pt, gb), grad_phases(R), ML_FIG_ALLOCATED,
              R->grads_kept ? "notes §4.7; torch < 2.0 zero_grad(set_to_none=False)"
                            : "notes §4.7 (param.grad in the param dtype)",
              _("%u B x %llu trainable%s"), gb, (unsigned long long)Pt,
              R->grads_kept ? _(" (zeroed in place between steps: torch < 2.0)") : "");
        if (R->ddp) {
            /* DDP Reducer buckets hold a second copy of every grad (gradient_as_bucket_view off). */
            entry(sk, ML_C_DDP_BUCKETS, mul(k, Pt, gb), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
                  "torch/nn/parallel/distributed.py Reducer (gradient_as_bucket_view=False)",
                  _("%u B x %llu trainable"), gb, (unsigned long long)Pt);
        }
    }

    optimizer_terms(R, sk);
}

/* Optimizer states (lazy: from the first step on, so in every step phase but load) and the
 * autocast weight cache. */
static void optimizer_terms(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    uint64_t N = R->n_shard, Pt = R->P_t;
    uint64_t num = 8, den = 1;
    const char *what = "8 B";
    optim_state(R, &num, &den, &what);
    if (R->paged_optim && t->optim != ML_OPTIM_PAGED_ADAMW_8BIT) {
        /* bitsandbytes 32-bit paged AdamW keeps fp32 states whatever the param dtype. */
        num = 8;
        den = 1;
        what = _("8 B (two fp32 moments, paged)");
    }
    if (num && !(t->deepspeed && t->zero.offload_optimizer) && !(R->fsdp && t->fsdp_offload)) {
        uint64_t n = (R->zero3 || R->zero12 || R->fsdp) ? part(Pt, N) : Pt;
        uint64_t on_gpu = n;
        if (R->paged_optim) {
            /* Paged states of tensors >= 1e5 elements are CUDA managed memory: outside the
             * allocator, on the device while resident (bitsandbytes get_state_buffer). */
            on_gpu = R->lora && R->P_lora_small < n ? R->P_lora_small : R->lora ? n : 0;
            entry(sk, ML_C_OPTIMIZER, frac(k, n - on_gpu, num, den), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_DEVICE,
                  "bitsandbytes optim/optimizer.py get_state_buffer (paged)",
                  _("%s x %llu in tensors >= 1e5 elements (managed memory)"), what, (unsigned long long)(n - on_gpu));
        }
        entry(sk, ML_C_OPTIMIZER, frac(k, on_gpu, num, den), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
              "notes §1.5 / §4.7", "%s x %llu %s%s (%s)", what, (unsigned long long)(R->paged_optim ? on_gpu : Pt),
              R->paged_optim ? _("in tensors < 1e5 elements") : _("trainable"),
              N > 1 && (R->zero3 || R->zero12 || R->fsdp) ? " / N" : "", ml_optim_name(t->optim));
    }

    /* Autocast weight cache (notes §4.6): fp32 trainable weights used under autocast are cast
     * to bf16 once per forward and saved by the linears until backward. */
    if (R->autocast && R->trainable_fp32 && t->precision != ML_PREC_FP32 && !R->fsdp) {
        uint64_t cached = R->lora ? R->P_lora : Pt;
        entry(sk, ML_C_AUTOCAST_CACHE, mul(k, cached, 2),
              ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED,
              "notes §4.6", _("2 B x %llu fp32 trainable weights cast to bf16"), (unsigned long long)cached);
    }
}

/* ---- ZeRO-3 buffers and working set ---------------------------------------------------- */

/* Elements of parameters kept whole by stage3_param_persistence_threshold (notes §1.3). */
static uint64_t persistent_numel(struct run *R, uint64_t thr, uint64_t *adapter_numel)
{
    uint64_t n = 0;
    *adapter_numel = 0;
    for (uint32_t i = 0; i < R->inv->n; i++) {
        const struct ml_tensor *x = &R->inv->t[i];
        if (x->mtp || x->tied)
            continue;
        uint64_t per = mul(&R->k, x->rows, x->cols ? x->cols : 1);
        if (per <= thr)
            n = add(&R->k, n, mul(&R->k, per, x->copies));
        if (R->lora && x->linear && !strcmp(x->param, "weight") && resolved(&R->lc, leaf_of(x->path))) {
            uint64_t A = mul(&R->k, R->t->lora_rank, x->in_features);
            uint64_t B = mul(&R->k, x->out_features, R->t->lora_rank);
            if (A <= thr)
                *adapter_numel = add(&R->k, *adapter_numel, mul(&R->k, A, x->copies));
            if (B <= thr)
                *adapter_numel = add(&R->k, *adapter_numel, mul(&R->k, B, x->copies));
        }
    }
    return n;
}

static void zero3_terms(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    uint64_t h = R->a->hidden;
    const struct ml_zero *z = &t->zero;
    /* HF "auto" (transformers/integrations/deepspeed.py) and DeepSpeed defaults (notes §1.8). */
    uint64_t Rb = ml_zero_reduce_bucket(z, h);
    uint64_t Bpf = ml_zero_prefetch_bucket(z, h);
    uint64_t Tp = ml_zero_persistence(z, h);
    uint64_t Mlive = ml_zero_max_live(z);
    uint64_t Dreuse = ml_zero_max_reuse(z);
    uint64_t comm = z->comm_dtype == ML_DTYPE_FP32 ? 4 : 2;
    /* The IPG flat buffer takes the first group's dtype (stage3.py _setup_for_real_optimizer):
     * fp32 when the LoRA adapters stay fp32 (DeepSpeed >= 0.19.2). */
    uint64_t ipg_b = R->trainable_fp32 ? 4 : comm;

    /* Persistent parameters (notes §1.3): kept whole, on top of their partition. */
    uint64_t ad_numel;
    uint64_t pers = persistent_numel(R, Tp, &ad_numel);
    if (z->model_persistence < pers)
        pers = z->model_persistence;
    uint64_t pb = add(k, mul(k, pers, R->act_bytes), mul(k, ad_numel, R->trainable_fp32 ? 4 : 2));
    entry(sk, ML_C_ZERO_PERSISTENT, pb, ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
          "notes §1.3 stage3_param_persistence_threshold",
          _("params with <= %llu elements kept whole: %llu + %llu adapter"), (unsigned long long)Tp,
          (unsigned long long)pers, (unsigned long long)ad_numel);

    /* IPG bucket (notes §1.1, §1.4): persistent with contiguous_gradients. */
    if (z->contiguous_gradients && R->P_t)
        entry(sk, ML_C_ZERO_IPG_BUCKET, mul(k, Rb, ipg_b), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
              "notes §1.1 IPG bucket; stage3.py _setup_for_real_optimizer", "reduce_bucket_size %llu x %llu B",
              (unsigned long long)Rb, (unsigned long long)ipg_b);

    /* Gathered working set (notes §1.2): the module running + the prefetch budget (which
     * overshoots by one param) + the coalesced copy of one bucket. */
    {
        uint64_t pf = Bpf < Mlive ? Bpf : Mlive;
        uint64_t w = add(k, add(k, R->max_linear, pf), R->max_linear);
        uint64_t wb = mul(k, w, R->act_bytes);
        uint64_t transient = mul(k, R->max_linear, R->act_bytes);
        entry(sk, ML_C_ZERO_GATHERED, add(k, wb, transient),
              ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_AFTER_SAVE) |
                  ML_PH(ML_PHASE_EVAL),
              ML_FIG_ALLOCATED, "notes §1.2 working set",
              _("2 B x (module %llu + prefetch %llu + overshoot %llu) + coalesced copy"),
              (unsigned long long)R->max_linear, (unsigned long long)pf, (unsigned long long)R->max_linear);
    }

    /* lm_head gathered for the logits is reused at once by its backward, so with a reuse
     * distance >= 0 it stays resident through the loss (notes §1.2, §9.8); the last layers
     * whose next use lies within the reuse distance stay too. */
    uint64_t head = R->head_numel;
    uint64_t retained = head;
    uint64_t layers_kept = 0;
    uint64_t dist = mul(k, 2, head);
    while (R->layer_params && layers_kept < R->a->n_layers) {
        uint64_t next = add(k, dist, mul3(k, 2, layers_kept + 1, R->layer_params));
        if (next > Dreuse)
            break;
        layers_kept++;
        retained = add(k, retained, R->layer_params);
    }
    /* DeepSpeed applies reuse retention only when max_reuse_distance > 0
     * (partitioned_param_coordinator.py __params_to_release). */
    if (head > Tp && Dreuse > 0)
        entry(sk, ML_C_ZERO_LM_HEAD_RETAINED, mul(k, retained, R->act_bytes),
              ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED,
              "notes §1.2 reuse retention (stage3_max_reuse_distance)", _("2 B x lm_head %llu%s%llu layers"),
              (unsigned long long)head, layers_kept ? _(" + last ") : " + ", (unsigned long long)layers_kept);

    /* Reduce: torch.cat copy of a bucket, and full grads of params larger than the bucket
     * (notes §1.4). */
    if (R->P_t) {
        uint64_t big = 0;
        if (R->full && head > Rb)
            big = mul(k, head, R->act_bytes);
        uint64_t cat = mul(k, Rb < R->P_t ? Rb : R->P_t, comm);
        entry(sk, ML_C_ZERO_REDUCE, add(k, cat, big), ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
              "notes §1.4 reduce_scatter_coalesced", _("cat copy of min(R, P_t) x %llu B%s"), (unsigned long long)comm,
              big ? " + lm_head grad" : "");
    }

    /* Optimizer step (notes §1.5): per sub-group flatten bf16 (2) + fp32 grad (4) = 6 B x n_sg,
     * + 4 B x n_sg for the foreach sqrt; n_sg = min(sub_group_size, P_t / N). */
    uint64_t sg = ml_zero_sub_group(z);
    uint64_t nsg = part(R->P_t, R->n_shard);
    if (sg && sg < nsg)
        nsg = sg;
    if (nsg && !z->offload_optimizer) {
        uint64_t per = t->optim == ML_OPTIM_ADAMW_TORCH ? 10 : 6;
        entry(sk, ML_C_STEP_TRANSIENT, mul(k, nsg, per), ML_PH(ML_PHASE_OPTIMIZER_STEP), ML_FIG_ALLOCATED,
              "notes §1.5 _prepare_sub_group", _("%llu B x sub-group %llu"), (unsigned long long)per,
              (unsigned long long)nsg);
    }

    /* Save (notes §1.9): every rank gathers one module's params at a time; the largest is
     * the embedding or lm_head. */
    if (z->gather_16bit_on_save) {
        uint64_t m = max2(head, R->embed_numel);
        m = max2(m, R->max_linear);
        entry(sk, ML_C_SAVE_GATHER, mul(k, m, R->act_bytes), ML_PH(ML_PHASE_CHECKPOINT_SAVE), ML_FIG_ALLOCATED,
              "notes §1.9 _zero3_consolidated_16bit_state_dict", _("2 B x largest module %llu"), (unsigned long long)m);
    }
}

static void zero12_terms(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    uint64_t Rb = ml_zero_reduce_bucket(&t->zero, R->a->hidden);
    uint64_t comm = t->zero.comm_dtype == ML_DTYPE_FP32 ? 4 : 2;
    bool overlap = ml_zero_overlap(&t->zero);
    uint64_t Rt = Rb < R->P_t ? Rb : R->P_t;
    /* IPG buffers (x2 with overlap_comm) + one flatten per reduction (notes §2). */
    uint64_t ipg = mul3(k, Rt, comm, overlap ? 2 : 1);
    uint64_t flat = mul3(k, Rt, comm, overlap ? 2 : 1);
    entry(sk, ML_C_ZERO_IPG_BUCKET, ipg, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED, "notes §2 setup_buckets",
          "min(R, P_t) x %llu B%s", (unsigned long long)comm, overlap ? " x 2 (overlap_comm)" : "");
    entry(sk, ML_C_ZERO_REDUCE, flat, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED, "notes §2 allreduce_bucket",
          _("flatten of a bucket%s"), overlap ? _(" x 2 (kept by record_stream)") : "");
    /* Step: flatten own grads (2) + fp32 copy (4) [+ foreach sqrt 4] per partition element. */
    if (!t->zero.offload_optimizer) {
        uint64_t per = t->optim == ML_OPTIM_ADAMW_TORCH ? 10 : 6;
        entry(sk, ML_C_STEP_TRANSIENT, mul(k, part(R->P_t, R->n_shard), per), ML_PH(ML_PHASE_OPTIMIZER_STEP),
              ML_FIG_ALLOCATED, "notes §2 step", "%llu B x P_t / N", (unsigned long long)per);
    }
}

static void fsdp_terms(struct run *R, struct sink *sk)
{
    struct calc *k = &R->k;
    /* notes §3.1: the root unit (embeddings, final norm, lm_head) stays unsharded; up to two
     * decoder-layer units are unsharded at once (limit_all_gathers / backward prefetch) and
     * one unit's unsharded grad exists during its reduce-scatter. */
    uint64_t root = add(k, R->embed_numel, R->a->tie_embeddings ? 0 : R->head_numel);
    uint64_t U = R->layer_params;
    uint64_t L = R->a->n_layers ? R->a->n_layers : 1;
    /* A unit is gathered at its storage size: with bnb_4bit_quant_storage the flat parameter of
     * a QLoRA layer holds the packed 4-bit data (0.5 B per quantized weight) and the 16-bit
     * rest (plan F2). */
    uint64_t q_unit = R->qlora ? R->P_quant / L : 0;
    uint64_t unit_b = add(k, R->qbits == 8 ? q_unit : frac(k, q_unit, 1, 2), mul(k, U > q_unit ? U - q_unit : 0, 2));
    /* Only units with trainable parameters get an unsharded gradient: PEFT's
     * fsdp_auto_wrap_policy wraps each LoRA leaf as its own unit (utils/other.py), so a LoRA
     * layer's grad unit is its adapters (plan F3). */
    uint64_t grad_unit = R->lora ? mul(k, 2, R->P_lora / L) : mul(k, 2, U);
    uint64_t units = add(k, mul(k, 2, unit_b), grad_unit);
    if (R->t->fsdp == ML_FSDP_SHARD_GRAD_OP) /* every unit stays unsharded from forward to backward */
        units = add(k, mul(k, L, unit_b), grad_unit);
    entry(sk, ML_C_FSDP_UNSHARDED, add(k, mul(k, root, 2), units), ML_PH_STEP & ~ML_PH(ML_PHASE_OPTIMIZER_STEP),
          ML_FIG_ALLOCATED, "notes §3.1 FSDP1 peak; PEFT fsdp_auto_wrap_policy",
          _("2 B x root %llu + 2 layer units at storage size + 1 grad unit (%s)"), (unsigned long long)root,
          R->lora ? _("its adapters") : _("the layer"));
    if (!R->t->fsdp_offload && R->t->optim == ML_OPTIM_ADAMW_TORCH)
        entry(sk, ML_C_STEP_TRANSIENT, mul(k, part(R->P_t, R->n_shard), R->state_bytes), ML_PH(ML_PHASE_OPTIMIZER_STEP),
              ML_FIG_ALLOCATED, "notes §4.7 foreach sqrt", "%u B x P_t / N", R->state_bytes);
}

/* ---- activations ----------------------------------------------------------------------- */

/* Does SDPA get a materialised padding mask? LLaMA-Factory and the HF Trainer pad batches
 * (to a multiple of 8, notes §6.6), so almost every batch has one; LitGPT and torchtune call
 * SDPA with is_causal and no mask. Flash attention never takes a dense mask. */
static bool sdpa_padded(const struct ml_train *t)
{
    return t->attn == ML_ATTN_SDPA && (t->framework == ML_FW_LLAMAFACTORY || t->framework == ML_FW_HF);
}

/* Bytes saved per token by one decoder layer, excluding s^2 terms (notes §4.1). */
static uint64_t layer_bytes_per_token(struct run *R, bool moe_layer)
{
    const struct ml_arch *a = R->a;
    struct calc *k = &R->k;
    uint64_t e = R->act_bytes;
    uint64_t h = a->hidden;
    uint64_t qw = (uint64_t)a->n_heads * (a->kv_lora_rank ? a->qk_nope_head_dim + a->qk_rope_head_dim : a->head_dim);
    uint64_t kw = a->kv_lora_rank ? qw : (uint64_t)a->n_kv_heads * a->head_dim;
    uint64_t vw = a->kv_lora_rank ? (uint64_t)a->n_heads * a->v_head_dim : kw;
    uint64_t i = a->intermediate;
    if (moe_layer)
        i = ffn_width(k, a);
    bool full = R->full || R->freeze;
    /* bitsandbytes MatMul4Bit before 0.43.2 / MatMul8bitLt keep their input for backward
     * whenever it needs a grad (autograd/_functions.py: ctx.tensors = (A, B)), so such a
     * quantized base layer saves its input like a trained one does; 0.43.2 keeps (None, B). */
    bool base_saves = full || R->bnb_keeps_input || R->packed_keeps_input;
    /* The residual stream's dtype: fp32 once PEFT's k-bit preparation leaves the norms fp32. */
    uint64_t es = R->fp32_stream ? 4 : e;
    uint64_t cin = 0, rb = e;
    switch (R->ad) {
    case AD_SHARED:
        cin = 0;
        rb = e;
        break;
    case AD_DROPOUT:
        cin = es + 1;
        rb = 2;
        break;
    case AD_DROPOUT_FP32:
        cin = 5;
        rb = 4;
        break;
    case AD_FP32_NOCAST:
        cin = 4;
        rb = 4;
        break;
    case AD_FP32_AUTOCAST:
        cin = 2;
        rb = 2;
        break;
    }
    uint64_t n = 0;
    /* Norms: fp32 copy of the input (4h) always; the normalised bf16 product (2h) when the
     * norm weight trains. */
    uint64_t per_norm = 4 * h + (full ? e * h : 0);
    n = add(k, n, mul(k, a->norms_per_layer, per_norm));
    /* Norm outputs saved by the projections that read them. */
    bool x1 = base_saves || (R->ad_attn_in && cin == 0);
    bool x2 = base_saves || (R->ad_mlp_in && cin == 0);
    n = add(k, n, mul(k, es * h, (uint64_t)x1 + (uint64_t)x2));
    /* q (after RoPE); k, v (repeated to all heads under eager or a padded SDPA call). */
    bool rep = R->t->attn == ML_ATTN_EAGER || sdpa_padded(R->t);
    n = add(k, n, mul(k, es, qw));
    n = add(k, n, mul(k, es, rep ? 2 * qw : add(k, kw, vw)));
    /* Attention output: saved by SDPA/flash themselves, or by a trained o_proj. */
    bool out = R->t->attn != ML_ATTN_EAGER || base_saves || (R->ad_o && cin == 0);
    if (out)
        n = add(k, n, mul(k, e, qw));
    /* Softmax statistics of SDPA / flash: fp32 per head. */
    if (R->t->attn != ML_ATTN_EAGER)
        n = add(k, n, mul(k, 4, a->n_heads));
    /* MLP: gated: gate, act(gate), up (6i) + the product read by down_proj; plain: the
     * activation's input (2i) + its output read by the down projection. */
    bool prod = base_saves || (R->ad_down && cin == 0);
    if (a->gated_mlp)
        n = add(k, n, mul(k, es, add(k, mul(k, 3, i), prod ? i : 0)));
    else
        n = add(k, n, mul(k, es, add(k, i, prod ? i : 0)));
    if (moe_layer)
        n = add(k, n, mul(k, 4, a->n_experts)); /* router logits, fp32 */
    /* LoRA: per adapted module its own input copy (cin B per element) and lora_A's output. */
    if (R->lora) {
        uint64_t copies = add(k, mul(k, R->ad_attn_in, h), mul(k, R->ad_o, qw));
        copies = add(k, copies, add(k, mul(k, R->ad_mlp_in, h), mul(k, R->ad_down, i)));
        n = add(k, n, mul(k, cin, copies));
        uint64_t mods = R->ad_attn_in + R->ad_o + R->ad_mlp_in + R->ad_down;
        n = add(k, n, mul3(k, rb, R->t->lora_rank, mods));
    }
    return n;
}

/* Eager attention bytes per score element (b x heads x s^2), saved for backward and as its
 * backward transient. The softmax runs in fp32 when the modeling code asks for it (Llama's
 * eager_attention_forward: softmax(dtype=torch.float32).to(query.dtype)) or under autocast
 * (softmax is on autocast's fp32 list); GPT2Attention._attn and BertSelfAttention run it in the
 * activation dtype. Attention dropout (GPT-2 attn_pdrop, BERT attention_probs_dropout_prob) saves
 * a bool mask and the dropped probabilities, which the value matmul keeps instead of the cast. */
static void eager_bytes(const struct run *R, uint64_t *saved, uint64_t *bwd)
{
    uint64_t e = R->act_bytes;
    uint64_t sb = R->a->eager_softmax_act_dtype && !R->autocast ? e : 4;
    bool drop = R->a->attn_dropout;
    *saved = sb + (drop ? 1 + e : (sb != e ? e : 0));
    /* grad of the probabilities, its cast back to the softmax dtype, softmax backward, dropout. */
    *bwd = e + (sb != e ? sb : 0) + sb + (drop ? e : 0);
}

/* The loss of a reward model (values, not logits) and of TRL GRPO (completion logits only). */
static bool stage_loss_terms(struct run *R, struct sink *sk, uint64_t bsV)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    uint64_t V = R->a->vocab;
    if (t->stage == ML_STAGE_RM && R->sp.value_head) {
        /* A reward model's loss reads the values, not the logits: the value-head wrapper upcasts
         * the bf16 logits to fp32 and drops them (trl AutoModelForCausalLMWithValueHead.forward). */
        entry(sk, ML_C_LOGITS_LOSS, mul(k, bsV, 6), ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED,
              "trl AutoModelForCausalLMWithValueHead.forward",
              _("6 B x b x s x V: bf16 logits + fp32 copy, dropped (the loss reads values)"));
        return true;
    }
    if (R->sp.completion_logits) {
        /* TRL GRPO: logits of the completion tokens only (logits_to_keep), bf16, log-softmaxed row
         * by row (trl/trainer/utils.py selective_log_softmax): bf16 logits + the saved rows (4 B),
         * + their grad in backward (6 B). */
        entry(sk, ML_C_LOGITS_LOSS, mul3(k, mul(k, R->b, R->sp.gen_tokens), V, 6),
              ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED,
              "trl grpo_trainer.py _get_per_token_logps_and_entropies",
              _("6 B x b x completion tokens x V (bf16 logits, selective_log_softmax)"));
        return true;
    }
    return false;
}

/* The packed kernels dequantize each weight per call (docs/ledger.md "Training on a quantized
 * checkpoint"): autoawq WQLinearMMFunction (dequantize, then matmul, in forward and again in
 * backward), gptqmodel TorchQuantLinear (dequantize_weight, then matmul), compressed-tensors
 * CompressedLinear ("decompressed on each forward call", then F.linear). The last two go through
 * autograd, which keeps the dequantized weight for the input's gradient (torch mm backward needs
 * mat2): the layer being recomputed under gradient checkpointing, every layer without it. */
static void packed_dequant(struct run *R, struct sink *sk)
{
    struct calc *k = &R->k;
    const struct ml_arch *a = R->a;
    entry(sk, ML_C_QLORA_DEQUANT, mul(k, R->max_qweight, 2),
          ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_EVAL), ML_FIG_ALLOCATED,
          "autoawq WQLinearMMFunction; gptqmodel TorchQuantLinear; compressed-tensors CompressedLinear",
          _("2 B x the largest %s weight %llu (dequantized per call)"), a->wq.name, (unsigned long long)R->max_qweight);
    if (a->wq.method == ML_WQ_AWQ)
        return; /* its autograd Function saves the packed weight, not the dequantized one */
    bool gc = R->t->grad_ckpt != ML_GC_OFF;
    uint64_t L = a->n_layers ? a->n_layers : 1;
    uint64_t saved = gc ? ml_ceil_div_u64(mul(k, R->P_quant, 2), L) : mul(k, R->P_quant, 2);
    entry(sk, ML_C_QLORA_DEQUANT, saved,
          gc ? ML_PH(ML_PHASE_BACKWARD)
             : ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_AFTER_SAVE),
          ML_FIG_ALLOCATED, "torch autograd (mm saves its weight operand for the input's grad)",
          gc ? _("2 B x one layer's %s weights, kept for backward in the recomputed layer")
             : _("2 B x every %s weight, kept for backward (no gradient checkpointing)"),
          a->wq.name);
}

/* Logits and loss (notes §4.3), the QLoRA dequantization copy and the eval working set. */
static void loss_terms(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    const struct ml_arch *a = R->a;
    struct calc *k = &R->k;
    uint64_t e = R->act_bytes, h = a->hidden, s = R->s, bs = R->tokens;
    uint64_t V = t->head == ML_HEAD_SEQ_CLS ? 0 : a->vocab; /* a classification head: no vocab logits */
    uint64_t bsV = mul(k, bs, V);
    uint64_t fwd_loss, bwd_loss;
    const char *why;
    uint32_t tv = t->versions.transformers;
    if (stage_loss_terms(R, sk, bsV)) {
        fwd_loss = bwd_loss = 0; /* the stage wrote the term; entry() skips 0 bytes */
        why = "";
    } else if (t->head == ML_HEAD_SEQ_CLS) {
        fwd_loss = bwd_loss = 0;
        why = _("sequence classification: a few labels, no vocabulary logits");
    } else if (t->liger_kernel) {
        /* Liger fused linear cross-entropy: logits computed chunk by chunk in fp32, chunk of
         * next_pow2(ceil(BT / ceil(V / H))) tokens (liger_kernel fused_linear_cross_entropy). */
        uint64_t ratio = ml_ceil_div_u64(V, h);
        uint64_t chunk = ml_ceil_div_u64(bs, ratio ? ratio : 1), p2 = 1;
        while (p2 < chunk)
            p2 <<= 1;
        fwd_loss = bwd_loss = mul3(k, p2, V, 4 * 2);
        why = _("liger fused linear cross-entropy: one fp32 chunk of logits + its grad");
    } else if (t->framework == ML_FW_TORCHTUNE && t->chunked_ce) {
        /* torchtune CEWithChunkedOutputLoss: bf16 output chunks, and every chunk's fp32
         * log-softmax (cross_entropy(logits.float())) saved until backward: 2 + 4 B. */
        fwd_loss = bwd_loss = mul(k, bsV, 6);
        why = _("chunked cross-entropy: 2 B bf16 chunks + 4 B fp32 log-probs per b x s x V");
    } else if (t->framework == ML_FW_TORCHTUNE) {
        /* chunked_ce off: self.output(h).float() and a plain cross-entropy, as transformers >= 4.49. */
        fwd_loss = mul(k, bsV, 10);
        bwd_loss = mul(k, bsV, 12);
        why = _("max(10 B fwd, 12 B bwd) x b x s x V (fp32 logits, unchunked loss)");
    } else if (tv < ML_VER(4, 46, 0) && a->loss_in_param_dtype && !t->upcast_lmhead_output) {
        /* Before loss_utils (4.46) GPT-2 / Qwen v1 compute the loss on logits in the parameter
         * dtype: logits + shift_logits.contiguous() + log-softmax output, 3 x e. */
        fwd_loss = bwd_loss = mul3(k, bsV, 3, e);
        why = _("3 x e B x b x s x V (transformers < 4.46, loss on logits in the parameter dtype)");
    } else {
        uint64_t f = tv >= 44900u ? 10 : tv >= 44600u ? 14 : 12;
        if (t->upcast_lmhead_output)
            f += 2;
        fwd_loss = mul(k, bsV, f);
        bwd_loss = mul(k, bsV, 12);
        why = tv >= 44900u   ? _("max(10 B fwd, 12 B bwd) x b x s x V (transformers >= 4.49)")
              : tv >= 44600u ? _("max(14 B fwd, 12 B bwd) x b x s x V (transformers 4.46-4.48)")
                             : _("12 B x b x s x V (transformers <= 4.45)");
    }
    entry(sk, ML_C_LOGITS_LOSS, max2(fwd_loss, bwd_loss), ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE),
          ML_FIG_ALLOCATED, "notes §4.3", "%s", why);

    /* O2: a trainable fp32 head under autocast. The forward keeps its 16-bit copy (2 B x V x h)
     * with the logits; its backward makes the weight grad in 16 bits and casts it to fp32 (the
     * backward of autocast's cast), 6 B x V x h at once after the logits are freed: the loss
     * phase holds max(logits + copy, 6 B x V x h). */
    if (R->full && R->autocast && R->trainable_fp32 && !R->fsdp && !R->litgpt && (fwd_loss | bwd_loss) != 0) {
        uint64_t L = max2(fwd_loss, bwd_loss), Vh = R->head_numel;
        entry(sk, ML_C_BACKWARD_WORKING, max2(mul(k, Vh, 2), mul(k, Vh, 6) > L ? mul(k, Vh, 6) - L : 0),
              ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED,
              "torch autocast cached_cast, ToCopyBackward (docs/ledger.md O2)",
              _("fp32 head under autocast: max(2 B copy, 6 B grad - logits) x V x h"));
    }

    /* QLoRA dequantization (notes §4.5): 2 B x the largest quantized weight, fwd and bwd. */
    if (R->qlora)
        entry(sk, ML_C_QLORA_DEQUANT, mul(k, R->max_linear, 2),
              ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_EVAL), ML_FIG_ALLOCATED,
              "notes §4.5 MatMul4Bit", _("2 B x largest quantized weight %llu"), (unsigned long long)R->max_linear);

    if (R->packed)
        packed_dequant(R, sk);

    /* Eval (no_grad): one layer's tensors at a time + the loss forward of the eval batch. */
    if (t->do_eval && t->eval_batch) {
        uint64_t i = max2(a->intermediate, ffn_width(k, a));
        uint64_t ebs = mul(k, t->eval_batch, s);
        uint64_t f = tv >= 44900u ? 10 : 14;
        uint64_t ev = add(k, mul3(k, ebs, V, f), mul(k, ebs, add(k, 8 * h, 6 * i)));
        if (t->attn == ML_ATTN_EAGER)
            ev = add(k, ev, mul3(k, mul(k, t->eval_batch, a->n_heads), mul(k, s, s), 10));
        entry(sk, ML_C_EVAL_WORKING, ev, ML_PH(ML_PHASE_EVAL), ML_FIG_ALLOCATED, "notes §4.3 (no backward)",
              _("eval batch %llu: logits + one layer"), (unsigned long long)t->eval_batch);
    }
}

static void activation_terms(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    const struct ml_arch *a = R->a;
    struct calc *k = &R->k;
    uint64_t e = R->act_bytes;
    uint64_t h = a->hidden;
    uint64_t b = R->b, s = R->s, bs = R->tokens;
    uint64_t L = R->trainable_layers;
    uint32_t nmoe = ml_arch_n_moe_layers(a);
    /* Per-layer bytes, weighted by dense vs MoE layers among the layers that keep activations. */
    uint64_t per_dense = mul(k, bs, layer_bytes_per_token(R, false));
    uint64_t per_moe = nmoe ? mul(k, bs, layer_bytes_per_token(R, true)) : 0;
    uint64_t layers_moe = L <= nmoe ? L : nmoe;
    uint64_t layers_dense = L - layers_moe;
    uint64_t A_layer = max2(per_dense, per_moe);
    uint64_t all_layers = add(k, mul(k, layers_dense, per_dense), mul(k, layers_moe, per_moe));

    /* s^2 terms (notes §4.1): eager saves the softmax output and probabilities per sequence and
     * layer (eager_bytes) and builds one float mask (2 B x b x s^2); a padded SDPA call gets a
     * bool mask. */
    uint64_t ss = mul(k, s, s);
    uint64_t eager_saved = 0, eager_bwd = 0, mask = 0, per_saved = 0, per_bwd = 0;
    if (t->attn == ML_ATTN_EAGER) {
        eager_bytes(R, &per_saved, &per_bwd);
        eager_saved = mul3(k, mul(k, b, a->n_heads), ss, per_saved);
        eager_bwd = mul3(k, mul(k, b, a->n_heads), ss, per_bwd);
        mask = mul3(k, b, ss, e);
    } else if (sdpa_padded(t)) {
        mask = mul(k, b, ss);
    } else if (t->neat_packing && t->attn != ML_ATTN_FLASH) {
        mask = mul3(k, b, ss, e);
    }

    bool gc = t->grad_ckpt != ML_GC_OFF;
    uint64_t es = R->fp32_stream ? 4 : e; /* fp32 residual stream under k-bit preparation */
    uint64_t ckpt = 0, saved, scores_saved;
    if (gc) {
        /* notes §4.2: the layer input (2 B x b x s x h) per checkpointed layer; unsloth keeps
         * them on the host. */
        ckpt = t->grad_ckpt == ML_GC_UNSLOTH ? 0 : mul3(k, L, bs, es * h);
        saved = ckpt;
        scores_saved = 0;
    } else {
        saved = all_layers;
        scores_saved = mul(k, L, eager_saved);
    }
    /* Outside the layers: the final norm's fp32 input (4h) and the embedding-output grad. */
    uint64_t outside = mul(k, bs, add(k, 4 * h, e * h));
    saved = add(k, saved, outside);

    uint32_t fwd = ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE);
    if (gc)
        entry(sk, ML_C_ACTIVATIONS, saved, fwd, ML_FIG_ALLOCATED, "notes §4.2 gradient checkpointing",
              _("%llu layers x %u B x b x s x h (checkpoints%s) + final norm"), (unsigned long long)L, (unsigned)es,
              t->grad_ckpt == ML_GC_UNSLOTH ? _(" on the host") : "");
    else
        entry(sk, ML_C_ACTIVATIONS, saved, fwd, ML_FIG_ALLOCATED, "notes §4.1",
              _("%llu layers x %llu B/token x b x s + final norm"), (unsigned long long)L,
              (unsigned long long)ml_ceil_div_u64(A_layer, bs ? bs : 1));
    if (scores_saved)
        entry(sk, ML_C_ATTN_SCORES, scores_saved, fwd, ML_FIG_ALLOCATED, "notes §4.1 eager attention",
              _("%llu layers x %llu B x b x heads x s^2"), (unsigned long long)L, (unsigned long long)per_saved);
    if (mask)
        entry(sk, ML_C_ATTN_MASK, mask, fwd | ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
              t->attn == ML_ATTN_EAGER ? "notes §4.1 eager float mask" : "notes §4.1 / §6.6 materialised mask",
              t->attn == ML_ATTN_EAGER ? "%u B x b x s^2" : _("%u B x b x s^2 (padding mask)"),
              t->attn == ML_ATTN_EAGER ? (unsigned)e : 1u);

    /* Backward working set (notes §4.2): checkpoints + one layer recomputed with its saved
     * tensors + its backward transients (b s (4h + 8i) + eager b a s^2) + grad of the hidden
     * states; without GC the saved activations themselves are still mostly live. */
    uint64_t i = a->intermediate;
    if (nmoe)
        i = max2(i, ffn_width(k, a));
    uint64_t trans = add(k, mul(k, bs, add(k, 4 * h, 8 * i)), eager_bwd);
    uint64_t one = add(k, trans, mul(k, bs, e * h)); /* one layer's transients + the hidden grad */
    uint64_t work;
    if (gc)
        work = add(k, add(k, one, ckpt), add(k, A_layer, eager_saved));
    else
        work = add(k, one, add(k, mul(k, L > 0 ? L - 1 : 0, A_layer), mul(k, L > 0 ? L - 1 : 0, eager_saved)));
    if (grads_replace_activations(R)) {
        uint64_t G = mul(k, R->P_t, R->trainable_fp32 ? 4 : 2);
        uint64_t layer = add(k, add(k, one, A_layer), eager_saved);
        uint64_t head_grad = mul3(k, R->trainable_fp32 ? 4 : 2, a->vocab, h);
        uint64_t bw = max2(add(k, G, layer), add(k, work, head_grad));
        /* O3: a tied head's grad and the embedding's meet in autograd's input buffer, which sums
         * them out of place: every grad + both addends. */
        bool tied = a->tie_embeddings && !R->litgpt && R->t->head != ML_HEAD_SEQ_CLS;
        if (tied)
            bw = max2(bw, add(k, G, mul(k, head_grad, 2)));
        entry(sk, ML_C_BACKWARD_WORKING, bw, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
              "torch autograd frees saved tensors as grads appear (docs/ledger.md FT1, O3)",
              tied ? _("max(every grad + one layer, saved set + the head's grad, every grad + tied head and embedding "
                       "grads)")
                   : _("max(every grad + one layer, saved set + the head's grad): GA = 1, grads unsharded"));
    } else {
        entry(sk, ML_C_BACKWARD_WORKING, work, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED, "notes §4.2",
              gc ? _("checkpoints + one recomputed layer + its backward transients")
                 : _("saved activations still live + one layer's backward transients"));
    }
    loss_terms(R, sk);
}

/* ---- optimizer step outside DeepSpeed ---------------------------------------------------- */

static void step_terms(struct run *R, struct sink *sk)
{
    if (R->t->deepspeed || R->fsdp || !R->P_t)
        return;
    /* torch AdamW foreach: _foreach_sqrt(exp_avg_sq) copies the second moments (notes §4.7);
     * fused has no large temporaries. Before torch 2.0 AdamW defaulted to the single-tensor
     * loop (torch/optim/optimizer.py _default_to_fused_or_foreach came with 2.0): the sqrt
     * temporary is one parameter's size, the largest one's at the peak. */
    if (R->t->optim != ML_OPTIM_ADAMW_TORCH && R->t->optim != ML_OPTIM_PAGED_ADAMW_32BIT)
        return;
    if (R->t->versions.torch < ML_VER(2, 0, 0) && R->t->optim == ML_OPTIM_ADAMW_TORCH) {
        uint64_t n = R->max_param < R->P_t ? R->max_param : R->P_t;
        entry(sk, ML_C_STEP_TRANSIENT, mul(&R->k, n, R->state_bytes), ML_PH(ML_PHASE_OPTIMIZER_STEP), ML_FIG_ALLOCATED,
              "torch < 2.0 _single_tensor_adamw", _("%u B x largest parameter %llu"), R->state_bytes,
              (unsigned long long)n);
        return;
    }
    entry(sk, ML_C_STEP_TRANSIENT, mul(&R->k, R->P_t, R->state_bytes), ML_PH(ML_PHASE_OPTIMIZER_STEP), ML_FIG_ALLOCATED,
          "notes §4.7 foreach sqrt", _("%u B x %llu trainable"), R->state_bytes, (unsigned long long)R->P_t);
}

/* ---- load ---------------------------------------------------------------------------------- */

static void load_terms(struct run *R, struct sink *sk)
{
    /* ZeRO-1/2 flatten the bit16 params on the GPU (notes §2): originals + flat = 2 B x P_t more.
     * ZeRO-3 builds each fp32 master sub-group with .to(fp32) then .clone() (notes §1.1):
     * 8 B x n_sg, unless the partition is already fp32 (it is aliased). */
    uint64_t b = 0;
    const char *why = NULL;
    if (R->zero12) {
        b = mul(&R->k, R->P_t, 2);
        why = "notes §2 flatten_dense_tensors_aligned on GPU";
    } else if (R->zero3 && R->P_t && R->t->precision != ML_PREC_PURE_BF16 && !R->trainable_fp32 &&
               !R->t->zero.offload_optimizer) {
        /* With offload_optimizer the fp32 partitions are built on subgroup_to_device = cpu
         * (stage3.py _create_fp32_partitions): nothing on the GPU. */
        uint64_t nsg = part(R->P_t, R->n_shard);
        uint64_t sg = ml_zero_sub_group(&R->t->zero);
        if (sg && sg < nsg)
            nsg = sg;
        b = mul(&R->k, nsg, 8);
        why = "notes §1.1 _create_fp32_partitions";
    }
    if (b)
        entry(sk, ML_C_LOAD_TRANSIENT, b, ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED, why, _("init transient"));
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
    ml_vlm_resolve(&t->vlm, a, &R->vp);
    if (R->vp.tokens > t->seq_len)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("%llu visual tokens per sample do not fit cutoff_len %llu (LLaMA-Factory stops: raise "
                             "cutoff_len or lower image_max_pixels, video_maxlen or the images per sample)"),
                           (unsigned long long)R->vp.tokens, (unsigned long long)t->seq_len);
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

/* The tower's activations: a trainable tower keeps, per block and patch, the ViT layer's saved
 * tensors (norm inputs, q/k/v, the attention output, the MLP input and intermediates: e x (8 h +
 * 3 i) for a gated MLP, 2 i plain; attention per image by flash/SDPA, no s^2) or, with gradient
 * checkpointing, the block input (e x h) and one recomputed block in backward; a frozen tower
 * runs without autograd (nothing needs a grad) and holds one block's working set at a time. */
static void vision_terms(struct run *R, struct sink *sk)
{
    const struct ml_vision *v = &R->a->vision;
    if (v->kind == ML_VISION_NONE || !R->vp.patches)
        return;
    struct calc *k = &R->k;
    uint64_t e = R->act_bytes, h = v->hidden, i = v->intermediate;
    uint64_t patches = mul(k, R->b, R->vp.patches);
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

static void vision_notes(const struct run *R, const struct ml_train *t, struct ml_ledger *out)
{
    if (R->a->vision.kind == ML_VISION_NONE)
        return;
    note(out,
         _("vision-language model: %llu visual tokens per sample (%u image%s of %llu tokens%s) inside cutoff_len %llu; "
           "the tower (%llu params) is %s, the projector (%llu) %s"),
         (unsigned long long)R->vp.tokens, t->vlm.images_set ? t->vlm.images_per_sample : 1u,
         (t->vlm.images_set ? t->vlm.images_per_sample : 1u) == 1 ? "" : "s",
         (unsigned long long)R->vp.tokens_per_image, t->vlm.videos_per_sample ? _(", and videos") : "",
         (unsigned long long)t->seq_len, (unsigned long long)R->P_vis,
         R->vis_trainable && R->full ? _("trained") : _("frozen"), (unsigned long long)R->P_proj,
         R->proj_trainable && R->full ? _("trained") : _("frozen"));
    if ((R->vis_trainable || R->proj_trainable) && !R->full)
        note(out,
             _("freeze_vision_tower / freeze_multi_modal_projector false with %s: adapters or layers in the tower are "
               "not counted; estimated frozen"),
             ml_method_name(t->method));
}

/* ==== stages: the reference, reward and value models, rollout (docs/ledger.md "Stages") ==== */

/* The stage's batch and sequence (ml_stage_resolve): the pairwise collator puts the chosen and
 * the rejected sequences of each sample in one batch (2 b), and a PPO/GRPO training forward reads
 * the prompt plus the generated tokens. */
static void stage_shape(struct run *R)
{
    ml_stage_resolve(R->t, &R->sp);
    R->b_sample = R->b;
    R->b = mul(&R->k, R->b, R->sp.batch_factor);
    R->s = add(&R->k, R->s, R->sp.gen_tokens);
}

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
        if (!x->mtp && x->linear && !strcmp(x->param, "weight") && x->kind != ML_MOD_LM_HEAD)
            q = add(k, q, x->params);
    }
    uint64_t rest = R->P > q ? R->P - q : 0;
    uint64_t qb = qbits == 8 ? q : frac(k, q, 1, 2);
    if (qbits == 4) /* absmax, double-quantized as LLaMA-Factory's default (notes §4.5) */
        qb = add(k, qb, add(k, frac(k, q, 1, 64), frac(k, q, 4, 16384)));
    return add(k, qb, mul(k, rest, 2));
}

static void stage_models(struct run *R, struct sink *sk)
{
    struct calc *k = &R->k;
    const struct ml_stage_plan *p = &R->sp;
    uint64_t vh = add(k, R->a->hidden, 1); /* v_head.summary: Linear(h, 1) with a bias */
    bool sh = false;
    if (p->ref == ML_REF_COPY) {
        uint64_t b = frozen_copy_bytes(R, p->ref_quant_bits, &sh);
        entry(sk, ML_C_REF_WEIGHTS, b, ML_PH_TRAIN, ML_FIG_ALLOCATED, p->source,
              p->ref_quant_bits ? _("frozen %u-bit copy of %llu params (not sharded)")
                                : _("frozen copy: %u B x %llu params%s"),
              p->ref_quant_bits ? p->ref_quant_bits : R->act_bytes, (unsigned long long)R->P, sh ? " / N" : "");
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
    const struct ml_stage_plan *p = &R->sp;
    if (!p->nograd_factor || p->ref == ML_REF_PRECOMPUTED)
        return;
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
    const struct ml_stage_plan *p = &R->sp;
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
static uint32_t stage_phases(struct run *R, struct ml_ledger *l)
{
    if (!R->sp.gen_tokens)
        return ML_PH_TRAIN;
    uint32_t both = ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_OPTIMIZER_STEP);
    for (uint32_t i = 0; i < l->n; i++) {
        struct ml_entry *e = &l->e[i];
        if ((e->phases & both) == both && e->id != ML_C_GRADIENTS)
            e->phases |= ML_PH(ML_PHASE_GENERATE);
    }
    return ML_PH_TRAIN | ML_PH(ML_PHASE_GENERATE);
}

static void stage_terms(struct run *R, struct sink *sk)
{
    vision_terms(R, sk);
    stage_models(R, sk);
    stage_forward(R, sk);
    stage_rollout(R, sk);
}

/* ==== allocator, device, host ============================================================== */

void ml_ledger_opts_default(struct ml_ledger_opts *o, const struct ml_train *t, const struct ml_cluster *c)
{
    memset(o, 0, sizeof(*o));
    /* Fragmentation reserve (notes §5: reserved / peak allocated is typically 1.02-1.3x):
     * 4 % base; + 3 % when collectives run on side streams (overlap_comm, FSDP); expandable
     * segments track the peak to page granularity: 2 % in all. Shapes that vary from step to
     * step strand a loss working set instead (ml_ledger_train, docs/ledger.md R2). */
    uint32_t f = 40;
    bool side =
        (t->deepspeed && t->zero.stage == 3 && ml_zero_overlap(&t->zero)) || (t->fsdp != ML_FSDP_NONE && !t->deepspeed);
    if (side)
        f += 30;
    if (t->expandable_segments)
        f = 20;
    o->frag_permille = f;
    /* After a ZeRO-3 / FSDP save every gathered param is freed and the persistent ones are
     * re-gathered into new blocks (notes §1.9): + 2 % of the peak in the step after it. */
    o->after_save_permille = (t->deepspeed && t->zero.stage == 3) || t->fsdp != ML_FSDP_NONE ? 20 : 0;
    if (t->expandable_segments)
        o->after_save_permille = 0;
    /* CUDA context with lazy module loading: 0.3-0.6 GiB on A100/H100 (notes §5); 512 MiB.
     * PyTorch >= 1.13 sets CUDA_MODULE_LOADING=LAZY when unset (pytorch#86509); before it every
     * kernel image loads at start-up: 1343 MiB measured on a V100 by transformers'
     * perf_train_gpu_one page (docs/ledger.md D1, a measured value). */
    o->context_bytes = (uint64_t)(t->versions.torch < ML_VER(1, 13, 0) ? 1343 : 512) << 20;
    /* NCCL (notes §5, [L]): Simple 4 MiB + LL128 ~4.5 MiB + LL per channel and ring peer; two
     * peers x 8 channels ~ 144 MiB per process once a collective has run. On an 8-GPU NVSwitch
     * board (Hopper, Blackwell) NCCL's NVLS buffers take ~1.85 GiB per GPU: the non-torch growth
     * vLLM logs at TP >= 2 on H100 (docs/ledger.md D2; NCCL_NVLS_ENABLE=0 returns to rings). */
    bool multi = c && c->gpus_per_node * c->nodes > 1;
    bool nvls = multi && c->gpus_per_node >= 8 && c->gpu.vendor == ML_VENDOR_NVIDIA &&
                (!strcmp(c->gpu.arch, "hopper") || !strcmp(c->gpu.arch, "blackwell"));
    o->nccl_bytes = nvls ? (uint64_t)1894 << 20 : multi ? (uint64_t)144 << 20 : 0;
    o->cublas_workspace = ml_ledger_cublas_ws(c);
    o->tight_permille = 50;
}

static void device_terms(struct run *R, struct sink *sk, const struct ml_ledger_opts *o)
{
    entry(sk, ML_C_CUBLAS_WORKSPACE, o->cublas_workspace, ML_PH_STEP | ML_PH(ML_PHASE_EVAL), ML_FIG_ALLOCATED,
          "notes §5 CublasHandlePool.cpp",
          o->cublas_workspace > 10000000 ? "32 MiB (sm90+)" : _("8.125 MiB (one handle/stream)"));
    entry(sk, ML_C_CUDA_CONTEXT, o->context_bytes, ML_PH_TRAIN, ML_FIG_DEVICE, "notes §5 (0.3-0.6 GiB)",
          _("CUDA/HIP context and loaded kernels"));
    if (R->world > 1)
        entry(sk, ML_C_NCCL, o->nccl_bytes, ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_DEVICE, "notes §5 NCCL [L]",
              _("communicator buffers, 8 channels x 2 peers"));
}

static void host_terms(struct run *R, struct ml_ledger *l)
{
    struct calc *k = &R->k;
    const struct ml_train *t = R->t;
    uint64_t g = R->c->gpus_per_node;
    struct ml_host *hst = &l->host;
    /* A packed checkpoint is read as stored. */
    uint64_t wbytes = R->packed ? add(k, R->packed_bytes, R->packed_state) : mul(k, R->P, R->act_bytes);
    /* Loading: from_pretrained materialises the checkpoint on the host per process, shard by
     * shard under ZeRO-3's zero.Init (a 5 GB shard at a time), whole otherwise. */
    uint64_t shard = (uint64_t)5000000000ull;
    hst->load_bytes = R->zero3 ? mul(k, g, shard < wbytes ? shard : wbytes) : mul(k, g, wbytes);
    /* accelerate fsdp_cpu_ram_efficient_loading: rank 0 reads the checkpoint, the others build
     * the model on the meta device (utils/dataclasses.py FullyShardedDataParallelPlugin). */
    if (R->fsdp && t->fsdp_ram_efficient)
        hst->load_bytes = wbytes;
    /* Offload (notes §1.7): per rank, times ranks on the node. */
    uint64_t Pt_n = part(R->P_t, R->n_shard);
    if (t->deepspeed && t->zero.offload_optimizer) {
        uint64_t pinned = mul(k, Pt_n, 2 + 4);   /* grad partition + fp32 grads */
        uint64_t pageable = mul(k, Pt_n, 4 + 8); /* master + Adam */
        if (t->zero.pin_memory) {
            hst->offload_pinned = add(k, hst->offload_pinned, mul(k, g, pinned));
            hst->offload_pageable = add(k, hst->offload_pageable, mul(k, g, pageable));
        } else {
            hst->offload_pageable = add(k, hst->offload_pageable, mul(k, g, add(k, pinned, pageable)));
        }
    }
    if (t->deepspeed && t->zero.offload_param) {
        uint64_t p = mul(k, part(R->P, R->n_shard), 2);
        if (t->zero.pin_memory)
            hst->offload_pinned = add(k, hst->offload_pinned, mul(k, g, p));
        else
            hst->offload_pageable = add(k, hst->offload_pageable, mul(k, g, p));
    }
    if (R->fsdp && t->fsdp_offload)
        hst->offload_pinned = add(k, hst->offload_pinned, mul(k, g, mul(k, part(R->P_t, R->n_shard), 16)));
    /* Save: rank 0 gathers the 16-bit model (ZeRO-3 gather_16bit_weights_on_model_save). */
    if (R->zero3 && t->zero.gather_16bit_on_save)
        hst->save_bytes = wbytes;
    /* fsdp_state_dict_type FULL_STATE_DICT: each save gathers the full model on rank 0's CPU. */
    if (R->fsdp && t->fsdp_full_state_dict)
        hst->save_bytes = wbytes;
    if (t->grad_ckpt == ML_GC_UNSLOTH)
        hst->checkpoint_offload = mul(k, g, mul3(k, R->trainable_layers, R->tokens, 2 * R->a->hidden));
    uint64_t steady = add(k, add(k, hst->offload_pinned, hst->offload_pageable), hst->checkpoint_offload);
    hst->peak_bytes = max2(hst->load_bytes, add(k, steady, hst->save_bytes));
}

/* ==== assembly ============================================================================= */

/* The family whose validation residuals give this run's interval (interval.c; docs/ledger.md, "The
 * interval"): LitGPT, torchtune and ms-swift's trainer by name; the HF Trainer (LLaMA-Factory, TRL)
 * on one GPU or DDP ("hf") or sharded by DeepSpeed/FSDP ("hf-sharded"), with "-dynamic" when batch
 * shapes vary and the cache is never emptied (the stranded-set rule R2). The part before the first
 * '-' names the trainer, whose residuals of every figure are the family's fallback. */
static const char *interval_family(const struct run *R)
{
    if (R->litgpt)
        return "litgpt";
    if (R->t->framework == ML_FW_TORCHTUNE)
        return "torchtune";
    if (R->t->trainer == ML_TRAINER_MS_SWIFT)
        return "swift";
    if (R->t->deepspeed || R->fsdp)
        return R->dynamic_shapes ? "hf-sharded-dynamic" : "hf-sharded";
    return R->dynamic_shapes ? "hf-dynamic" : "hf";
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
    const struct ml_stage_plan *p = &R->sp;
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
static void train_notes(const struct run *R, const struct ml_train *t, struct ml_ledger *out)
{
    if (R->ad == AD_FP32_NOCAST || R->ad == AD_DROPOUT_FP32)
        note(out, _("LoRA adapters stay fp32 under ZeRO-3 with DeepSpeed >= 0.19.2 (no autocast): each adapted module "
                    "saves an fp32 copy of its input; --deepspeed-version 0.18 models the older bf16 cast"));
    if (t->grad_ckpt != ML_GC_OFF && t->grad_ckpt != ML_GC_UNSLOTH) {
        /* Seed handbook: checkpointing cuts activations "down to about 1/sqrt(layers)". That is
         * Chen et al.'s sqrt(L)-segment schedule; HF checkpoints every layer (notes §4.2). */
        note(out,
             _("gradient checkpointing here keeps each layer's input (2 B x b x s x h) plus one recomputed layer, not "
               "1/sqrt(layers) of the activations: that figure is for sqrt(L) segments, which HF does not use"));
    }
    if (t->attn == ML_ATTN_EAGER)
        note(out, _("eager attention materialises b x heads x s^2 scores (fp32 softmax); sdpa or flash attention "
                    "avoids them"));
    stage_notes(R, t, out);
    parallel_notes(R, out);
    vision_notes(R, t, out);
    checkpoint_notes(R, t, out);
    ml_ledger_reserve_notes(out);
}

enum ml_status ml_ledger_train(const struct ml_arch *arch, const struct ml_inventory *inv, const struct ml_train *t,
                               const struct ml_cluster *c, const struct ml_ledger_opts *opts, struct ml_ledger *out,
                               struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    struct run R;
    memset(&R, 0, sizeof(R));
    R.a = arch;
    R.inv = inv;
    R.t = t;
    R.c = c;
    enum ml_status st = setup_run(&R, diag);
    if (st != ML_OK)
        return st;
    struct ml_ledger_opts o;
    if (opts)
        o = *opts;
    else
        ml_ledger_opts_default(&o, t, c);

    struct sink sk = {out, &R.k, o.figures_only};
    model_states(&R, &sk);
    if (R.zero3)
        zero3_terms(&R, &sk);
    else if (R.zero12)
        zero12_terms(&R, &sk);
    else if (R.fsdp && R.litgpt)
        ml_litgpt_fsdp_terms(&R, &sk);
    else if (R.fsdp)
        fsdp_terms(&R, &sk);
    step_terms(&R, &sk);
    if (R.litgpt && !R.fsdp)
        ml_litgpt_terms(&R, &sk);
    else if (!R.litgpt)
        activation_terms(&R, &sk);
    stage_terms(&R, &sk);
    load_terms(&R, &sk);
    device_terms(&R, &sk, &o);
    host_terms(&R, out);

    /* Phases that happen in this run. */
    for (int p = 0; p < ML_PHASE_COUNT; p++)
        out->phase_active[p] = (ML_PH_TRAIN >> p) & 1u;
    out->phase_active[ML_PHASE_EVAL] = t->do_eval;
    /* The step after a mid-run save happens only when the run saves (save_steps given). */
    out->phase_active[ML_PHASE_AFTER_SAVE] = t->save_steps > 0;
    uint32_t all = stage_phases(&R, out);
    out->phase_active[ML_PHASE_GENERATE] = (all >> ML_PHASE_GENERATE) & 1u;

    /* Variable batch shapes, cache never emptied: a longer batch after a shorter one needs a
     * larger loss working set than any cached free block, so a new segment is reserved and the
     * old stays cached (c10/cuda/CUDACachingAllocator.cpp; docs/ledger.md R2): one stranded set.
     * It sits in whole free segments, which the allocator frees before it reports out of memory:
     * cache, not need. After a ZeRO-3 / FSDP save the re-gathered parameters are placed in cached
     * blocks first and split them; a split segment with a live block cannot be freed, so in the
     * step after the save the set counts as needed (at most all of it: the bound is taken). */
    if (R.dynamic_shapes) {
        uint64_t set = ml_ledger_bytes(out, ML_C_LOGITS_LOSS);
        uint32_t pinned =
            o.after_save_permille && out->phase_active[ML_PHASE_AFTER_SAVE] ? ML_PH(ML_PHASE_AFTER_SAVE) : 0;
        ml_ledger_cache_entry(&sk, set, ML_PH_STEP & ~pinned, "c10/cuda/CUDACachingAllocator.cpp (docs/ledger.md R2)",
                              _("one stranded loss working set, cached: freed before an OOM (batch shapes vary)"));
        entry(&sk, ML_C_ALLOCATOR, set, ML_PH_STEP & pinned, ML_FIG_RESERVED,
              "c10/cuda/CUDACachingAllocator.cpp, notes §1.9 (docs/ledger.md R2)",
              _("the stranded loss working set, pinned by the re-gathered parameters after the save"));
    }

    /* The allocator reserve on top of the allocated peak, the after-save reserve, the figures. */
    uint32_t extra[ML_PHASE_COUNT] = {0};
    extra[ML_PHASE_AFTER_SAVE] = o.after_save_permille;
    ml_ledger_finish(out, &sk, o.frag_permille, extra, all, c->gpu.capacity_bytes, o.tight_permille);

    /* What the ledger does not model exactly widens the interval (docs/ledger.md, "The interval"):
     * settings read but not modelled (their warnings: torch.compile, unsloth and fused kernels,
     * ...), and parameter offload under FSDP-QLoRA (the 4-bit shards on the host, the quant
     * state on the GPU: F1, an approximation). */
    const char *widen = t->unmodelled ? _("settings the ledger reads but does not model (see the warnings)")
                        : R.fsdp && R.qlora && t->fsdp_offload ? _("parameter offload under FSDP-QLoRA")
                                                               : NULL;
    ml_ledger_interval(out, &R.k, interval_family(&R),
                       R.qlora  ? "qlora"
                       : R.lora ? "lora"
                                : "full",
                       o.tight_permille, widen);

    out->params = R.P;
    out->trainable = R.P_t_all;
    out->seq_len = R.s;
    out->micro_batch = R.b;
    out->world = R.world;
    out->sharding = R.n_shard;

    if (!o.figures_only)
        train_notes(&R, t, out);
    if (R.k.overflow)
        return ml_diag_set(diag, ML_ERR_OVERFLOW, _("a byte count of this run overflows 64 bits"));
    return ML_OK;
}
