/*
 * train_acts.c - the activation entries of the training ledger: the saved set per decoder layer
 * (notes §4.1), gradient checkpointing (§4.2), eager attention scores, logits and loss (§4.3), the
 * dequantized weights of a packed base, the backward and eval working sets. LitGPT's own rule is
 * litgpt_ledger.c.
 *
 * Each term cites the rule of the shared accounting notes (reference/accounting-notes.md, "notes
 * §x.y"; docs/ledger.md has the rules) or the source file it was read from. Bytes are u64 through
 * the checked helpers of ledger_int.h. Vocabulary as in train_ledger.c.
 */
#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "train_compile.h"
#include "train_int.h"

/* Does SDPA get a materialised padding mask? LLaMA-Factory and the HF Trainer pad batches
 * (to a multiple of 8, notes §6.6), so almost every batch has one; LitGPT and torchtune call
 * SDPA with is_causal and no mask. Flash attention never takes a dense mask. */
static bool sdpa_padded(const struct ml_train *t)
{
    return t->attn == ML_ATTN_SDPA && (t->framework == ML_FW_LLAMAFACTORY || t->framework == ML_FW_HF);
}

/* O13: bytes per token and unit of MLP width that transformers' NewGELUActivation ("gelu_new":
 * GPT-2, Phi) keeps beyond the one input a fused activation keeps. It is Python ops; autograd keeps
 * pow's input, tanh's output, 1 + tanh and 0.5 x (activations.py NewGELUActivation.forward). Under
 * CUDA autocast pow is an fp32 op (autocast_mode.cpp), so pow's input, tanh and 1 + tanh are fp32
 * and the 16-bit x is kept by none: 12 B more than the es B the layer books; without autocast
 * 3 x es more. */
static uint64_t gelu_new_extra(const struct run *R)
{
    uint64_t es = R->fp32_stream ? 4 : R->act_bytes;
    return R->a->mlp_gelu_new ? (R->autocast ? 12 : 3 * es) : 0;
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
    uint64_t compiled = ml_compile_layer_bytes(R, moe_layer); /* torch.compile's saved set (train_compile.c) */
    if (compiled)
        return compiled;
    bool full = R->full || R->freeze;
    /* bitsandbytes MatMul4Bit before 0.43.2 / MatMul8bitLt keep their input for backward
     * whenever it needs a grad (autograd/_functions.py: ctx.tensors = (A, B)), so such a
     * quantized base layer saves its input like a trained one does; 0.43.2 keeps (None, B). */
    bool base_saves = full || R->bnb_keeps_input || R->packed_keeps_input;
    /* The residual stream's dtype: fp32 once PEFT's k-bit preparation leaves the norms fp32. */
    uint64_t es = R->fp32_stream ? 4 : e;
    uint64_t cin = 0, rb = e;
    switch (R->adapter_input) {
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
    /* O13: NewGELUActivation's further saved tensors (gelu_new_extra). */
    n = add(k, n, mul(k, gelu_new_extra(R), i));
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

/* ==== TRL's fused LM head (docs/ledger.md "TRL's fused LM head") ====
 * TRL >= 1.15 (trainer/utils.py add_fused_lm_head, _fused_forward; kernels/chunked_logprob.py
 * ChunkedLogProbFunction.forward / .backward, TOKEN_CHUNK_SIZE 4096; utils.py
 * _CHUNKED_LOGPROB_CHUNK_SIZE 32768). On CUDA only the labelled positions are scored (compact:
 * hidden_states[mask], a copy). The forward keeps one tile buffer mm_buf of min(N, 4096) x 32768
 * elements in the compute dtype (32768 columns even when V is narrower), the hidden chunk cast to
 * the compute dtype, a 32768-row chunk of the head cast to it, seven fp32 per-token accumulators
 * and the per-token outputs; the backward the tile buffer again, the grad of the hidden states
 * made in fp32 (torch.zeros) and cast back to their dtype, and for a trainable head its whole
 * fp32 weight grad (torch.zeros, V x h x 4 B). */
#define TRL_TOKEN_CHUNK 4096u
#define TRL_VOCAB_CHUNK 32768u

/* Labelled tokens per sequence: the completion (GRPO's max_completion_length; DPO / KTO label only
 * the completion too, whose length TRL's configs do not name: max_completion_length when given,
 * else the whole sequence, an upper bound). */
uint64_t ml_trl_labelled_tokens(const struct run *R)
{
    uint64_t c = R->stage.gen_tokens ? R->stage.gen_tokens : R->t->sc.max_new_tokens;
    return c && c < R->s ? c : R->s;
}

void ml_trl_fused_head_bytes(struct run *R, uint64_t rows, bool grad, bool fp32_model, struct fused_head *f)
{
    struct calc *k = &R->k;
    uint64_t h = R->a->hidden, V = R->a->vocab;
    uint64_t N = mul(k, rows, ml_trl_labelled_tokens(R));
    uint64_t T = N < TRL_TOKEN_CHUNK ? N : TRL_TOKEN_CHUNK;
    uint64_t ec = R->act_bytes; /* autocast's dtype, else the hidden states' */
    /* the backbone's output dtype: fp32 when the residual stream is (fp32 weights under autocast,
     * PEFT's k-bit preparation), else the compute dtype; the head's weight likewise */
    uint64_t eh = fp32_model || R->fp32_stream ? 4 : ec;
    uint64_t mm = mul3(k, T, TRL_VOCAB_CHUNK, ec);
    uint64_t hid = mul3(k, N, h, eh);
    uint64_t hcast = eh != ec ? mul3(k, T, h, ec) : 0;
    uint64_t wcast = eh != ec ? mul3(k, V < TRL_VOCAB_CHUNK ? V : TRL_VOCAB_CHUNK, h, ec) : 0;
    /* seven fp32 accumulators + log_z + log_probs; the policy also asks entropy, mean_logits (fp32)
     * and is_top1 (bool): dpo_trainer.py __init__ outputs */
    uint64_t stats = mul(k, N, grad ? 7 * 4 + 2 * 4 + 2 * 4 + 1 : 7 * 4 + 2 * 4);
    f->saved = add(k, hid, stats);
    f->fwd = add(k, add(k, mm, hid), add(k, add(k, hcast, wcast), stats));
    f->bwd = 0;
    if (grad) {
        uint64_t ghid = add(k, mul3(k, N, h, 4), eh != 4 ? hid : 0);
        uint64_t gw = R->full ? mul3(k, V, h, 4) : 0; /* the head trains with the full fine-tune */
        f->bwd = add(k, f->fwd, add(k, ghid, gw));
    }
}

/* The loss of a reward model (values, not logits) and of TRL GRPO (completion logits only). */
static bool stage_loss_terms(struct run *R, struct sink *sk, uint64_t bsV)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    uint64_t V = R->a->vocab;
    if (R->stage.fused_head) {
        /* TRL >= 1.15: the policy's log-probs through the fused head; the oracle's loss turn runs
         * to the gradient of the backbone's output, so it holds the head's backward too. */
        struct fused_head f;
        ml_trl_fused_head_bytes(R, R->b, true, R->full && R->trainable_fp32, &f);
        entry(sk, ML_C_LOGITS_LOSS, max2(f.fwd, f.bwd), ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE),
              ML_FIG_ALLOCATED,
              "trl trainer/utils.py add_fused_lm_head; kernels/chunked_logprob.py ChunkedLogProbFunction",
              R->full ? _("fused LM head, %llu labelled tokens: 32768-column tile, fp32 grads, fp32 head grad")
                      : _("fused LM head, %llu labelled tokens: 32768-column tile, fp32 grads"),
              (unsigned long long)mul(k, R->b, ml_trl_labelled_tokens(R)));
        return true;
    }
    if (t->stage == ML_STAGE_RM && R->stage.value_head) {
        /* A reward model's loss reads the values, not the logits: the value-head wrapper upcasts
         * the bf16 logits to fp32 and drops them (trl AutoModelForCausalLMWithValueHead.forward). */
        entry(sk, ML_C_LOGITS_LOSS, mul(k, bsV, 6), ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED,
              "trl AutoModelForCausalLMWithValueHead.forward",
              _("6 B x b x s x V: bf16 logits + fp32 copy, dropped (the loss reads values)"));
        return true;
    }
    if (R->stage.completion_logits) {
        /* TRL GRPO: logits of the completion tokens only (logits_to_keep), bf16, log-softmaxed row
         * by row (trl/trainer/utils.py selective_log_softmax): bf16 logits + the saved rows (4 B),
         * + their grad in backward (6 B). */
        entry(sk, ML_C_LOGITS_LOSS, mul3(k, mul(k, R->b, R->stage.gen_tokens), V, 6),
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

/* torchtune CEWithChunkedOutputLoss's num_output_chunks (modules/loss/ce_chunked_output_loss.py,
 * default 8; no recipe config sets another). */
#define ML_TT_CE_CHUNKS 8u

/* torchtune CEWithChunkedOutputLoss: eager (T1) or compiled (T1c); the forward's and backward's
 * bytes per b x s x V, and the rule's text. */
static const char *torchtune_chunked_ce(struct run *R, uint64_t bsV, uint64_t *fwd, uint64_t *bwd, uint64_t *last)
{
    *last = 0;
    struct calc *k = &R->k;
    uint64_t e = R->act_bytes, V = R->a->vocab, h = R->a->hidden;
    if (R->t->torch_compile) {
        /* T1c: under compile the recipes compile CEWithChunkedOutputLoss.compute_cross_entropy
     * (training/_compile.py compile_loss, since the chunked loss came in, torchtune 4fba6cd44):
     * inductor fuses the chunk's .float(), log-softmax and nll, and the partitioner saves the
     * chunk itself and two fp32 numbers per row, not the fp32 log-probs. Forward: the output
     * chunks (e B); backward: each chunk's grad (e B) is made before its saved chunk is freed,
     * and every loss node runs before the head's (autograd runs the later-created first): one
     * chunk more (validation/oracle/compile/loss.json: 2.00 / 2.25 B per logit, bf16). A head
     * that trains then takes its grad chunk by chunk while the chunks' grads are live: at the
     * second chunk the first chunk's head grad, the second's and their out-of-place sum
     * (autograd's InputBuffer::accumulate) with n - 2 chunks' grads left (loss.json
     * compiled-head_trains: 5.50 B per logit less the grads, to the byte). */
        uint64_t n = ML_TT_CE_CHUNKS;
        *fwd = mul(k, bsV, e);
        *bwd = add(k, *fwd, ml_ceil_div_u64(*fwd, n));
        if (R->full) {
            uint64_t head_grad = mul3(k, R->trainable_fp32 ? 4 : e, V, h);
            *bwd = max2(*bwd, add(k, ml_ceil_div_u64(mul(k, *fwd, n - 2), n), mul(k, head_grad, 3)));
            /* at the head's last chunk: that chunk's grad and the same three head grads */
            *last = add(k, ml_ceil_div_u64(*fwd, n), mul(k, head_grad, 3));
        }
        return !R->full ? _("compiled chunked CE: 9/8 x the logit chunks (+ one chunk's grad)")
                        : _("compiled chunked CE: max(9/8 x chunks, 3/4 x chunks + 3 head grads)");
    }
    /* torchtune CEWithChunkedOutputLoss: bf16 output chunks, and every chunk's fp32
     * log-softmax (cross_entropy(logits.float())) saved until backward: 2 + 4 B; the last
     * chunk's fp32 upcast is live while its log-softmax is written (the forward's peak; the
     * upcast is not saved: ToCopyBackward keeps no tensor). 16-bit: 6.5 B (loss.json). */
    uint64_t upcast = e < 4 ? ml_ceil_div_u64(mul(k, bsV, 4), ML_TT_CE_CHUNKS) : 0;
    *fwd = *bwd = add(k, mul(k, bsV, e + 4), upcast);
    return e < 4 ? _("chunked CE: 6.5 B x b x s x V (bf16 chunks, fp32 log-probs, one upcast)")
                 : _("chunked CE: 8 B x b x s x V (fp32 chunks + fp32 log-probs)");
}

/* T1c with a trained head, where loss_terms takes it: the loss turn's bytes at T1c's own peak
 * and at the head's last chunk, where TS2's prefetched last layer meets it (train_states.c,
 * docs/ledger.md TS2). False elsewhere. */
bool ml_ledger_tt_head_chunks(struct run *R, uint64_t *peak, uint64_t *last)
{
    const struct ml_train *t = R->t;
    bool staged = R->stage.fused_head || (t->stage == ML_STAGE_RM && R->stage.value_head) || R->stage.completion_logits;
    if (staged || t->head == ML_HEAD_SEQ_CLS || t->liger_kernel || t->framework != ML_FW_TORCHTUNE || !t->chunked_ce)
        return false;
    uint64_t fwd, bwd;
    (void)torchtune_chunked_ce(R, mul(&R->k, R->tokens, R->a->vocab), &fwd, &bwd, last);
    *peak = max2(fwd, bwd);
    return *last != 0;
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
        uint64_t last;
        why = torchtune_chunked_ce(R, bsV, &fwd_loss, &bwd_loss, &last);
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

    /* A1: Answer.AI's fsdp_qlora train.py binds `output = model(...)` and drops it only after
     * loss.backward() and optimizer.step() ("output = None"), so the logits the model returns stay
     * live through both: fp32 before transformers 4.46 (LlamaForCausalLM.forward's
     * logits.float()), the model's dtype from 4.46 (the loss upcasts inside loss_utils). */
    if (t->trainer == ML_TRAINER_FSDP_QLORA && bsV && (fwd_loss | bwd_loss) != 0) {
        bool fp32 = tv < ML_VER(4, 46, 0) || e == 4;
        entry(sk, ML_C_BACKWARD_WORKING, mul(k, bsV, fp32 ? 4 : e),
              ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_OPTIMIZER_STEP), ML_FIG_ALLOCATED,
              "fsdp_qlora train.py train loop (50efa1e) + transformers LlamaForCausalLM.forward (docs/ledger.md A1)",
              "%s",
              fp32 ? _("4 B x b x s x V: the model output's logits, still bound by the loop")
                   : _("2 B x b x s x V: the model output's logits, still bound by the loop"));
    }

    /* H6: frozen weights loaded fp32 on one GPU or DDP under autocast: every matmul casts its
     * weight to 16 bits (not cached: autocast caches only leaves that require grad), and the
     * matmul saves that copy for the backward of its input: 2 B x each layer's weights until its
     * backward; with checkpointing one layer's, recomputed in backward. FSDP gathers 16-bit units
     * (MixedPrecision param_dtype) and re-gathers them in backward: nothing more there. */
    /* SW1: fp16 frozen weights under bf16 autocast are cast the same way (not QLoRA's quantized
     * linears, which dequantize themselves; its 16-bit head: train_states.c). */
    if ((ml_ledger_load_fp32(R) || (ml_ledger_load_fp16(R) && !R->qlora)) && !R->fsdp && R->P_f) {
        bool gc = t->grad_ckpt != ML_GC_OFF;
        uint64_t layers = gc ? 1 : R->trainable_layers;
        entry(sk, ML_C_ACTIVATIONS, mul3(k, 2, R->layer_params, layers),
              gc ? ML_PH(ML_PHASE_BACKWARD)
                 : ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_BACKWARD) |
                       ML_PH(ML_PHASE_AFTER_SAVE),
              ML_FIG_ALLOCATED, "torch aten/src/ATen/autocast_mode.cpp cached_cast (docs/ledger.md H6)", "%s",
              ml_ledger_load_fp32(R) ? _("autocast's 16-bit copies of the fp32 frozen weights, saved for backward")
                                     : _("autocast's bf16 copies of the fp16 frozen weights, saved for backward"));
    }

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

/* F5: FSDP1 frozen units under the model's own reentrant checkpointing. Before transformers 4.52
 * (modeling_layers.py GradientCheckpointingLayer) the model's layer loop checkpoints
 * `decoder_layer.__call__`, and under FSDP the layer is the FSDP unit, so the recomputed forward
 * enters FSDP's `_pre_forward` with the checkpoint's detached input: a leaf that requires grad.
 * A unit whose flat parameter is frozen (PEFT's fsdp_auto_wrap_policy puts the adapters in
 * units of their own) gets `_register_post_backward_reshard_only_hook` there (torch >= 2.1,
 * pytorch#101982), a multi-grad hook whose closure keeps the leaf's AccumulateGrad node, which
 * keeps the leaf, its storage (the checkpoint) and the `.grad` CheckpointFunction.backward reads;
 * `_finalize_params` removes it only in the final callback. So every layer's checkpoint and input
 * grad stay live to the end of the backward: at the last layer, L - 1 retained grads beside the
 * checkpoints, one of them the incoming grad `one` already holds. Returns the extra bytes, 0 off
 * this path (FSDP2, full fine-tuning, non-reentrant, the Answer.AI loop's checkpoint wrapper
 * inside the unit, transformers >= 4.52, torch < 2.1). */
static uint64_t fsdp1_reentrant_kept(struct run *R, uint64_t per_layer)
{
    const struct ml_train *t = R->t;
    bool hf = t->framework == ML_FW_HF || t->framework == ML_FW_TRL || t->framework == ML_FW_LLAMAFACTORY;
    uint64_t L = R->trainable_layers;
    if (!R->fsdp || t->fsdp_version != 1 || !R->lora || !hf || t->trainer == ML_TRAINER_FSDP_QLORA ||
        t->grad_ckpt != ML_GC_REENTRANT || t->versions.transformers >= ML_VER(4, 52, 0) ||
        t->versions.torch < ML_VER(2, 1, 0) || L < 3)
        return 0;
    return mul(&R->k, L - 2, per_layer);
}

void ml_ledger_activation_terms(struct run *R, struct sink *sk)
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
    /* O13: the recomputed layer's NewGELUActivation tensors are freed in its MLP's backward, which
     * autograd runs before its attention's (the MLP ends the layer), so they and eager attention's
     * backward transients are never live together: the larger of the two, not their sum. */
    uint64_t g = ml_compile_layer_bytes(R, false) ? 0 : mul(k, bs, mul(k, gelu_new_extra(R), a->intermediate));
    uint64_t A_rec = A_layer - (g < eager_bwd ? g : eager_bwd);
    uint64_t work;
    if (gc)
        work = add(k, add(k, one, ckpt), add(k, A_rec, eager_saved));
    else
        work = add(k, one, add(k, mul(k, L > 0 ? L - 1 : 0, A_layer), mul(k, L > 0 ? L - 1 : 0, eager_saved)));
    if (grads_replace_activations(R)) {
        uint64_t G = mul(k, R->P_t, R->trainable_fp32 ? 4 : 2);
        uint64_t layer = add(k, add(k, one, A_rec), eager_saved);
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
        if (gc)
            entry(sk, ML_C_BACKWARD_WORKING, fsdp1_reentrant_kept(R, mul(k, bs, es * h)), ML_PH(ML_PHASE_BACKWARD),
                  ML_FIG_ALLOCATED,
                  "torch FSDP1 _register_post_backward_reshard_only_hook, autograd register_multi_grad_hook; "
                  "docs/ledger.md F5",
                  _("%llu layers x %u B x b x s x h: input grads FSDP1 keeps (reentrant checkpoints)"),
                  (unsigned long long)(R->trainable_layers - 2), (unsigned)es);
    }
    loss_terms(R, sk);
}
