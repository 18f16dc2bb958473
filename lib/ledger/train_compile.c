/*
 * train_compile.c - the activations torch.compile keeps (docs/ledger.md "torch.compile").
 *
 * Under torch.compile the tensors a layer saves for backward are chosen by AOTAutograd's
 * partitioner on the joint forward-backward graph (torch/_functorch/partitioners.py
 * min_cut_rematerialization_partition, the default of inductor): pointwise and reduction-free
 * intermediates (norm products, RoPE, SiLU, the upcasts) are recomputed in backward; matmul and
 * attention outputs are not recomputable (get_default_op_list: compute_intensive_ops, and
 * ban_recompute_not_in_allowlist for ops off its list) and are saved where backward reads them.
 * The partitioner reads only the graph and the tensors' sizes and dtypes, not the device; what it
 * sees differs by device where the dispatcher picks a different kernel (SDPA: the CPU flash kernel
 * here, flash or memory-efficient on CUDA, each saving q, k, v, out and an fp32 logsumexp).
 *
 * The set below is the one measured with inductor's CPU backend (validation/oracle/compile/
 * results.json, README.md there: per tensor), decoder layers compiled one by one as torchtune's
 * compile_model does, 16-bit weights without autocast. Per layer: the layer's input (a graph input,
 * which the partitioner keeps for the first norm) and one 16-bit b x s x h tensor for the second
 * norm (its output when the MLP's trained matmuls or 16-bit adapters read it, else its input), each norm's fp32
 * rstd; q, k, v, the attention output and its logsumexp; gate and up outputs; the inputs of the
 * matmuls whose weights train (the first norm's output, o_proj's input - a second copy of the
 * attention output in o_proj's layout - and down_proj's input); LoRA: 16-bit adapters read those
 * same tensors (saved once), fp32 adapters their own fp32 cast of each distinct input (the compiled
 * graph casts a shared input once), and lora_A's output per adapted module. Elsewhere the eager set
 * stands; the interval is widened either way (ml_compile_widen).
 */
#include "train_compile.h"

#include "i18n.h"

/* Is the measured compiled set the run's? */
static bool measured(const struct run *R)
{
    const struct ml_train *t = R->t;
    const struct ml_arch *a = R->a;
    if (!t->torch_compile || R->litgpt || R->autocast || R->qlora || R->packed || R->fp32_stream ||
        R->bnb_keeps_input || R->freeze)
        return false;
    /* torchtune: each layer compiled on its own (compile_model), SDPA called with is_causal and no
     * mask, as measured. The HF Trainer (TrainingArguments.torch_compile, LLaMA-Factory, TRL)
     * compiles the whole model as one graph and pads its batches (a mask; k, v repeated): not
     * measured. */
    if (t->framework != ML_FW_TORCHTUNE || t->attn != ML_ATTN_SDPA)
        return false;
    if (!a->gated_mlp || a->norms_per_layer != 2 || a->kv_lora_rank || ml_arch_n_moe_layers(a))
        return false;
    if (R->lora && R->adapter_input != AD_SHARED && R->adapter_input != AD_FP32_NOCAST)
        return false;
    return R->full || R->lora;
}

uint64_t ml_compile_layer_bytes(struct run *R, bool moe_layer)
{
    if (moe_layer || !measured(R))
        return 0;
    const struct ml_arch *a = R->a;
    struct calc *k = &R->k;
    uint64_t e = R->act_bytes, h = a->hidden, i = a->intermediate;
    uint64_t qw = (uint64_t)a->n_heads * a->head_dim, kw = (uint64_t)a->n_kv_heads * a->head_dim;
    /* the layer's input and the second norm's output (16-bit b x s x h each), an fp32 rstd per norm */
    uint64_t m = mul(k, a->norms_per_layer, add(k, mul(k, e, h), 4));
    /* q, k, v and the attention output (SDPA's backward reads all four); its fp32 logsumexp per head */
    m = add(k, m, mul(k, e, add(k, 2 * qw, 2 * kw)));
    m = add(k, m, mul(k, 4, a->n_heads));
    /* gate and up outputs (SiLU's backward reads both; their product is recomputed) */
    m = add(k, m, mul(k, 2 * e, i));
    /* the inputs of q/k/v (the norm's output), o_proj (a copy of the attention output in its layout)
     * and down_proj (the gate-up product) */
    if (R->full)
        m = add(k, m, mul(k, e, add(k, add(k, h, qw), i)));
    if (R->lora) {
        /* fp32 adapters: a cast of each distinct input; 16-bit ones: the inputs themselves, the
         * MLP's being the second norm's tensor already counted */
        bool cast = R->adapter_input == AD_FP32_NOCAST;
        uint64_t cin = cast ? 4 : e, rb = cin;
        uint64_t widths = add(k, add(k, R->ad_attn_in ? h : 0, R->ad_o ? qw : 0),
                              add(k, R->ad_mlp_in && cast ? h : 0, R->ad_down ? i : 0));
        m = add(k, m, mul(k, cin, widths));
        m = add(k, m, mul3(k, rb, R->t->lora_rank, R->ad_attn_in + R->ad_o + R->ad_mlp_in + R->ad_down));
    }
    return m;
}

const char *ml_compile_widen(const struct run *R)
{
    if (!R->t->torch_compile)
        return NULL;
    if (measured(R))
        return _("torch.compile (saved set measured on the CPU; CUDA kernels may keep other copies)");
    /* torchtune's compiled chunked loss (T1c, train_acts.c) holds wherever the layers' set does not */
    if (R->t->framework == ML_FW_TORCHTUNE && R->t->chunked_ce && !R->litgpt)
        return _("torch.compile (layers estimated in eager mode; the compiled chunked loss measured on the CPU)");
    return _("torch.compile (estimated in eager mode: not measured for this setup)");
}
