/*
 * litgpt_ledger.c - the LitGPT (Lightning Fabric) terms of the training ledger (docs/ledger.md,
 * "LitGPT"): the per-Block saved set, the fp32 head, the quantized lm_head, the soft-capped
 * attention scores, and the FSDP no_sync gradients. LitGPT's model code differs from transformers' in ways that all keep more
 * bytes, so it gets its own rule rather than the HF one with a different head.
 *
 * Sources (read at the benchmark commits; lit-gpt @8641822 for the 2023 scripts, litgpt
 * @5895df10 / @00af8b0d for the 2024 config hub):
 *   lit_gpt/model.py CausalSelfAttention.forward   fused qkv of width W = h_q + 2 h_kv; q/k/v are
 *                                                   views of it, k.expand/v.expand for grouped
 *                                                   queries, apply_rope + cat makes new q and k
 *   lit_gpt/rmsnorm.py RMSNorm.forward              bf16 math; torch 2.1's mean keeps x*x
 *                                                   (pytorch#109876); litgpt 2024 x.float() first
 *   lit_gpt/lora.py LoRAQKVLinear.forward, zero_pad dropout copy + mask per adapted input; the
 *                                                   index_copy source of the padded q/k/v delta
 *   lit_gpt/utils.py chunked_cross_entropy          fp32 log-probs of every 128-token chunk
 *   lightning fabric plugins/precision HalfPrecision.convert_output / BitsandbytesPrecision:
 *                                                   the model output is cast to fp32
 *   lightning BitsandbytesPrecision.init_context    every nn.Linear, lm_head too, is 4-bit
 *   bitsandbytes autograd/_functions.py MatMul4Bit  ctx.tensors = (A, B) before 0.43.2
 *   scripts/convert_hf_checkpoint.py                tied HF models get an untied lm_head copy
 *   finetune/lora.py (8641822) train                fabric.no_backward_sync -> FSDP no_sync
 *   finetune/full.py fit (5895df10, 0.5.13)         the same no_backward_sync on every flat parameter
 *   torch fsdp _flat_param.py _use_unsharded_views,  use_orig_params (Lightning's default): the forward
 *     _get_unflat_views_aligned                     uses torch.split views of each flat parameter
 *   model.py CausalSelfAttention                    soft-capped logits (Gemma 2): q @ k.mT, tanh,
 *     .scaled_dot_product_attention (2b195c7f)      softmax(dtype=float), cast back; no SDPA
 * Variables as in train_ledger.c: b s h, a heads, kv KV heads, d head_dim, h_q = a d, h_kv = kv d,
 * i FFN width, L layers, V vocab, r LoRA rank, T = b s.
 */
#include "train_int.h"

/* LitGPT's Block layout from the arch attributes: one shared norm for attention and MLP (Falcon,
 * Phi: norms_per_layer 1), or two norms on the same x with a parallel residual (GPT-NeoX: a
 * LayerNorm block without a gated MLP, Falcon's ln_attn/ln_mlp). */
static bool shared_norm(const struct ml_arch *a)
{
    return a->norms_per_layer == 1;
}

static bool parallel_residual(const struct ml_arch *a)
{
    return shared_norm(a) || a->branch_norms || (a->norm == ML_NORM_LAYER && !a->gated_mlp);
}

/* Bytes per token one norm saves: RMSNorm keeps x and (torch 2.1) x*x in bf16 plus the mean,
 * or (2024) an fp32 copy of x plus rstd; LayerNorm keeps x and mean/rstd. */
static uint64_t norm_bytes(const struct run *R)
{
    uint64_t h = R->a->hidden;
    if (R->a->norm == ML_NORM_LAYER)
        return 2 * h + 8;
    return R->litgpt_2023 ? 4 * h + 2 : 4 * h + 4;
}

/* Per-token bytes of the LoRA branches of one Block (lora.py: dropout copy 2 B + mask 1 B per
 * adapted input, lora_A's output 2r, the zero_pad source when not all of q, k, v adapt). */
static uint64_t lora_branch_bytes(struct run *R, bool drop)
{
    struct calc *k = &R->k;
    const struct ml_arch *a = R->a;
    uint64_t h = a->hidden, r = R->t->lora_rank, i = a->intermediate;
    uint64_t hq = (uint64_t)a->n_heads * a->head_dim, hkv = (uint64_t)a->n_kv_heads * a->head_dim;
    uint64_t n = 0;
    uint64_t n_en = (uint64_t)R->ad_q + R->ad_k + R->ad_v;
    if (n_en) {
        n = add(k, n, add(k, drop ? 3 * h : 0, mul3(k, 2, r, n_en)));
        if (n_en < 3)
            n = add(k, n, mul(k, 2, add(k, add(k, R->ad_q ? hq : 0, R->ad_k ? hkv : 0), R->ad_v ? hkv : 0)));
    }
    if (R->ad_proj)
        n = add(k, n, add(k, drop ? 3 * hq : 0, 2 * r));
    if (R->ad_mlp) {
        /* LLaMAMLP: fc_1 and fc_2 each drop their input, proj drops its own; GptNeoxMLP: fc, proj. */
        uint64_t in_mods = a->gated_mlp ? 2 : 1;
        n = add(k, n, add(k, drop ? mul(k, 3 * h, in_mods) : 0, mul3(k, 2, r, in_mods)));
        n = add(k, n, add(k, drop ? mul(k, 3, i) : 0, 2 * r));
    }
    return n;
}

/* Bytes per token saved by one Block, and the block-0 discount (its input is the frozen
 * embedding: no grad flows into norm_1). */
static uint64_t block_bytes(struct run *R, uint64_t *disc)
{
    struct calc *k = &R->k;
    const struct ml_arch *a = R->a;
    uint64_t h = a->hidden, i = a->intermediate;
    uint64_t hq = (uint64_t)a->n_heads * a->head_dim, hkv = (uint64_t)a->n_kv_heads * a->head_dim;
    uint64_t W = add(k, hq, 2 * hkv);
    bool full = R->full || R->freeze;
    bool drop = R->t->lora_dropout && !full;
    bool shared = shared_norm(a), par = parallel_residual(a);
    bool keeps = full || R->bnb_keeps_input; /* the base linears keep their inputs */

    /* N: the norms (full fine-tuning keeps the normalised product too, 2h); Gemma 2's Block adds
     * post_attention_norm and post_mlp_norm (model.py Block.__init__): norms_per_layer 4. */
    uint64_t per_norm = norm_bytes(R) + (full && a->norm == ML_NORM_RMS ? 2 * h : 0), N;
    if (a->norm == ML_NORM_RMS)
        N = mul(k, shared ? 1 : (a->norms_per_layer > 2 ? a->norms_per_layer : 2), per_norm);
    else
        N = add(k, mul(k, (shared || par) ? 1 : 2, per_norm), par && !shared ? 8 : 0);

    /* K: norm outputs kept by a consumer that keeps its input; with dropout 0 lora_A keeps x. */
    uint64_t K;
    if (keeps)
        K = mul(k, 2 * h, shared ? 1 : 2);
    else if (!drop)
        K = mul(k, 2 * h, (uint64_t)(R->ad_q || R->ad_k || R->ad_v) + (uint64_t)(!shared && R->ad_mlp));
    else
        K = 0;

    /* Attention: q after rope, k, v, the SDPA output, fp32 logsumexp. v is a view of the fused
     * qkv output, so multi-head (and 2023 multi-query) blocks keep all 2W; grouped queries are
     * expanded and reshaped into copies (2024 expands multi-query too). */
    uint64_t kb, vb;
    if (a->n_kv_heads == a->n_heads || (a->n_kv_heads == 1 && R->litgpt_2023)) {
        kb = 2 * hkv;
        vb = 2 * W;
    } else if (a->n_kv_heads == 1) {
        kb = 2 * hq;
        vb = 2 * W;
    } else {
        kb = 2 * hq;
        vb = 2 * hq;
    }
    uint64_t A_attn = add(k, add(k, 4 * hq, add(k, kb, vb)), 4ull * a->n_heads);
    /* Soft-capped attention logits (Gemma 2): scaled_dot_product_attention cannot call SDPA and
     * keeps, for every head, query and key, the tanh output (2 B), the fp32 softmax (4 B) and the
     * bf16 probabilities (2 B) instead of the logsumexp: 8 a s per token (L6). */
    if (a->attn_softcap)
        A_attn = add(k, add(k, 4 * hq, add(k, kb, vb)), mul3(k, 8, a->n_heads, R->s));

    /* MLP: LLaMAMLP keeps fc_1, fc_2 outputs and silu (6i), the product when proj keeps its
     * input; GptNeoxMLP the fc output (2i) and its activation for proj. */
    bool proj_keeps = keeps || (R->ad_mlp && !drop);
    uint64_t A_mlp = mul(k, a->gated_mlp ? 6 : 2, i);
    if (proj_keeps)
        A_mlp = add(k, A_mlp, mul(k, 2, i));

    /* The attention output that proj's 4-bit base keeps (bitsandbytes < 0.43.2): the reshaped copy
     * of the SDPA output (model.py CausalSelfAttention.forward, y.transpose(1, 2).reshape), a
     * tensor of its own beside the SDPA output autograd saves; the LitGPT oracle's QLoRA cases
     * keep 2 h_q more per token and Block than without it (L3). */
    if (R->bnb_keeps_input && !full)
        A_attn = add(k, A_attn, 2 * hq);

    uint64_t A_lora = R->lora ? lora_branch_bytes(R, drop) : 0;
    *disc = 0;
    if (!full) {
        *disc = add(k, norm_bytes(R), R->bnb_keeps_input ? 2 * h : 0);
        if (par && !R->ad_mlp)
            *disc = add(k, *disc, A_mlp);
    }
    return add(k, add(k, add(k, N, K), add(k, A_attn, A_mlp)), A_lora);
}

/* ln_f's saved set and the lm_head input, per token. */
static uint64_t outside_bytes(struct run *R)
{
    struct calc *k = &R->k;
    uint64_t h = R->a->hidden;
    bool full = R->full || R->freeze;
    bool drop = R->t->lora_dropout && !full;
    uint64_t n = add(k, norm_bytes(R), full && R->a->norm == ML_NORM_RMS ? 2 * h : 0);
    if (full || R->bnb_keeps_input || (R->ad_head && !drop))
        n = add(k, n, 2 * h);
    if (R->ad_head && drop)
        n = add(k, n, add(k, 3 * h, 2 * R->t->lora_rank));
    return n;
}

/* Fabric casts the output to fp32 and chunked_cross_entropy keeps fp32 log-probs: 8 B x T x V,
 * + one 128-token chunk's backward (~10 B x 128 x V per sequence); finetune/full.py does not
 * chunk the head: fp32 logits, flatten copy, log-probs, grad concatenation, 12 B x T x V. */
static uint64_t head_bytes(struct run *R)
{
    struct calc *k = &R->k;
    uint64_t V = R->a->vocab;
    if (R->full || R->freeze)
        return mul3(k, 12, V, R->tokens);
    return add(k, mul3(k, 8, V, R->tokens), mul3(k, 1280, V, R->b));
}

void ml_litgpt_terms(struct run *R, struct sink *sk)
{
    struct calc *k = &R->k;
    const struct ml_arch *a = R->a;
    uint64_t h = a->hidden, i = a->intermediate, V = a->vocab, L = a->n_layers, T = R->tokens;
    uint64_t disc;
    uint64_t A_layer = block_bytes(R, &disc);
    uint64_t per_tok = add(k, mul(k, L, A_layer), outside_bytes(R));
    per_tok = per_tok > disc ? per_tok - disc : 0;
    bool gc = R->t->grad_ckpt != ML_GC_OFF;
    uint64_t acts = mul(k, T, per_tok);
    if (gc) /* a Block checkpoint keeps its input: 2 B x T x h per Block */
        acts = mul(k, T, add(k, mul(k, L, 2 * h), outside_bytes(R)));
    uint32_t fwd = ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE);
    entry(sk, ML_C_ACTIVATIONS, acts, fwd, ML_FIG_ALLOCATED, "litgpt model.py / lora.py (docs/ledger.md L1)",
          gc ? "%llu Blocks x 2 B x b x s x h (checkpoints) + ln_f"
             : "%llu Blocks x %llu B/token x b x s + ln_f - block 0",
          (unsigned long long)L, (unsigned long long)A_layer);
    /* Backward: the saved set until the last Block's backward, plus its transients
     * b s (4h + 8i) (with checkpoints: one recomputed Block). */
    uint64_t trans = mul(k, T, add(k, 4 * h, 8 * i));
    if (a->attn_softcap) /* the probabilities' gradient, its fp32 cast and the capped scores' (L6) */
        trans = add(k, trans, mul3(k, mul(k, 8, R->b), a->n_heads, mul(k, R->s, R->s)));
    uint64_t work = add(k, acts, trans);
    if (gc)
        work = add(k, work, mul(k, T, A_layer));
    entry(sk, ML_C_BACKWARD_WORKING, work, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
          "litgpt model.py / lora.py (docs/ledger.md L1)", "saved set + one Block's backward transients");
    entry(sk, ML_C_LOGITS_LOSS, head_bytes(R), ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED,
          "lightning convert_output + litgpt utils.py chunked_cross_entropy (docs/ledger.md L2)",
          R->full || R->freeze ? "12 B x b x s x V (fp32 logits, copies, log-probs; no chunking)"
                               : "8 B x b x s x V (fp32 logits + fp32 log-probs) + one 128-token chunk's backward");
    /* fit keeps `logits` bound until the next step rebinds it: the fp32 logits stay live through
     * the backward, the optimizer step and the next step's forward (L2). */
    entry(sk, ML_C_BACKWARD_WORKING, mul3(k, 4, V, T),
          ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_OPTIMIZER_STEP), ML_FIG_ALLOCATED,
          "litgpt finetune fit + lightning convert_output (docs/ledger.md L2)",
          "4 B x b x s x V fp32 logits still bound by fit, until the next forward returns");
    if (!R->qlora)
        return;
    /* The quantized lm_head is dequantized (fp16, then cast to bf16: 4 B x V x h) for its
     * forward and backward, with every activation still live. */
    entry(sk, ML_C_QLORA_DEQUANT, mul3(k, 4, V, h),
          ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
          "bitsandbytes MatMul4Bit + lightning BitsandbytesPrecision (docs/ledger.md L3)",
          "4 B x lm_head %llu x %llu (dequantized, cast to bf16)", (unsigned long long)V, (unsigned long long)h);
    /* litgpt >= 2024 with bitsandbytes < 0.43.2: the previous step's MatMul4Bit inputs are plain
     * ctx attributes that the Python logits list keeps alive into the next forward (its fp32
     * logits, 4V, are the entry above): per Block the distinct inputs of its 4-bit linears (the
     * norm outputs that feed qkv and the MLP, 2h each, the attention output into proj 2 h_q, the
     * MLP product into proj 2i) and ln_f's output (2h, the lm_head's), met at the end of the next
     * forward by its bf16 logits (2V). Assumes two full-length batches in a row. The LitGPT
     * oracle (tinyllama-qlora-all-bnb042 against tinyllama-qlora-all) keeps 47 KB per token and
     * Block in the second forward beyond the run without it: the saved inputs of both steps. */
    if (!R->litgpt_2023 && R->bnb_keeps_input && !gc) {
        uint64_t fed = shared_norm(a) ? 2 * h : 4 * h;
        uint64_t hq = (uint64_t)a->n_heads * a->head_dim;
        uint64_t per_block = add(k, add(k, fed, 2 * hq), 2 * i);
        uint64_t prev = mul(k, T, add(k, add(k, mul(k, L, per_block), 2 * h), 2 * V));
        entry(sk, ML_C_BACKWARD_WORKING, prev, ML_PH(ML_PHASE_FORWARD), ML_FIG_ALLOCATED,
              "litgpt finetune loop + bitsandbytes < 0.43.2 (docs/ledger.md L3)",
              "previous step's 4-bit inputs, live through the next forward, + its bf16 logits");
    }
}

/*
 * lit-gpt 2023 multi-GPU LoRA: FSDPStrategy(auto_wrap_policy={Block}, activation_checkpointing=
 * {Block}, limit_all_gathers), use_orig_params (Lightning's default), so each Block's flat
 * parameter holds its LoRA weights and requires grad as a whole. Micro-steps run under
 * fabric.no_backward_sync -> FSDP no_sync, which keeps the full unsharded gradient of every flat
 * parameter until the syncing step (torch fsdp FullyShardedDataParallel.no_sync). The root unit
 * (wte, lm_head, ln_f) stays unsharded; the full-state-dict load unshards one unit at a time
 * (torch fsdp _state_dict_utils _full_pre_load_state_dict_hook).
 */
void ml_litgpt_fsdp_terms(struct run *R, struct sink *sk)
{
    struct calc *k = &R->k;
    const struct ml_arch *a = R->a;
    uint64_t h = a->hidden, V = a->vocab, L = a->n_layers ? a->n_layers : 1, T = R->tokens;
    uint64_t root = add(k, mul3(k, 2, V, h), h);
    uint64_t blocks = R->P > root ? R->P - root : 0;
    uint64_t P_block = blocks / L;
    uint32_t step =
        ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_AFTER_SAVE);
    entry(sk, ML_C_FSDP_UNSHARDED, mul(k, 2, root), step | ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
          "torch FSDP root unit (docs/ledger.md L5)", "2 B x root unit %llu (wte + lm_head + ln_f, not resharded)",
          (unsigned long long)root);
    entry(sk, ML_C_FSDP_UNSHARDED, mul3(k, 2, 2, P_block), ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
          "torch FSDP backward prefetch (docs/ledger.md L5)", "2 B x 2 Blocks %llu gathered",
          (unsigned long long)P_block);
    entry(sk, ML_C_FSDP_UNSHARDED, mul(k, 2, P_block), ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
          "torch fsdp _full_pre_load_state_dict_hook (docs/ledger.md L5)", "2 B x one Block unsharded while loading");
    if (R->t->grad_accum > 1 && R->lora)
        entry(sk, ML_C_GRADIENTS, mul(k, 2, blocks), step, ML_FIG_ALLOCATED,
              "torch fsdp no_sync under lightning no_backward_sync (docs/ledger.md L5)",
              "2 B x %llu: unsharded grads of every Block (frozen slices too) between syncs",
              (unsigned long long)blocks);
    /* finetune/full.py fit runs its micro-steps under the same fabric.no_backward_sync: every flat
     * parameter, the root unit's too, keeps its whole gradient until the syncing step, beside
     * the shard the gradients row counts (2 B x P / N). */
    if (R->t->grad_accum > 1 && R->full && R->n_shard > 1) {
        uint64_t P_t = R->P_t;
        entry(sk, ML_C_GRADIENTS, mul(k, 2, P_t - P_t / R->n_shard), step, ML_FIG_ALLOCATED,
              "torch fsdp no_sync under lightning no_backward_sync, litgpt finetune/full.py fit (docs/ledger.md L5)",
              "2 B x %llu trainable x (1 - 1/%u): unsharded grads between syncs, beyond the shard",
              (unsigned long long)P_t, (unsigned)R->n_shard);
    }
    uint64_t disc;
    uint64_t A_layer = block_bytes(R, &disc);
    uint64_t ckpt = mul(k, T, add(k, mul(k, L, 2 * h), norm_bytes(R)));
    entry(sk, ML_C_ACTIVATIONS, ckpt, step, ML_FIG_ALLOCATED,
          "lightning FSDPStrategy activation_checkpointing (docs/ledger.md L5)",
          "%llu Blocks x 2 B x b x s x h (checkpoints) + ln_f", (unsigned long long)L);
    entry(sk, ML_C_BACKWARD_WORKING, mul(k, T, A_layer), ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
          "litgpt model.py / lora.py (docs/ledger.md L1)", "one recomputed Block: %llu B/token x b x s",
          (unsigned long long)A_layer);
    entry(sk, ML_C_LOGITS_LOSS, head_bytes(R), ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED,
          "lightning convert_output + litgpt utils.py chunked_cross_entropy (docs/ledger.md L2)",
          R->full || R->freeze ? "12 B x b x s x V (fp32 logits, copies, log-probs; no chunking)"
                               : "8 B x b x s x V (fp32 logits + fp32 log-probs) + one 128-token chunk's backward");
    /* The fp32 logits chunks stay referenced through the backward of the Blocks. */
    entry(sk, ML_C_LOGITS_LOSS, mul3(k, 4, V, T), ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
          "lightning convert_output (docs/ledger.md L5)", "4 B x b x s x V fp32 logits still referenced");
    if (!R->full)
        return;
    /* Lightning's FSDPStrategy sets use_orig_params=True: in the forward each module's weights are
     * views of its unit's flat parameter (torch fsdp _flat_param.py _use_unsharded_views(as_params=
     * False), the views made by torch.split in _get_unflat_views_*), so autograd reaches the flat
     * parameter through one SplitWithSizesBackward that waits for every view's gradient and then
     * concatenates them. The root unit's first gradient is the lm_head's (2 B x V x h, at the
     * start of the backward) and its last the embedding's (at its end): the lm_head's is held
     * through the whole backward, and at its end the embedding's and the concatenated root
     * gradient (2 B x root) join it. The backward's figure is the larger of the two moments: the
     * Blocks' transients (checkpoints, two gathered Blocks, one recomputed Block) are gone at the
     * end. The CPU run of torch FSDP (validation/oracle/litgpt/fsdp_probe.py) holds these bytes. */
    uint64_t head_grad = mul3(k, 2, V, h);
    entry(sk, ML_C_BACKWARD_WORKING, head_grad, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
          "torch fsdp _flat_param.py _get_unflat_views (split views, use_orig_params) (docs/ledger.md L5)",
          "2 B x lm_head %llu x %llu gradient, held by the root unit's split until the embedding's",
          (unsigned long long)V, (unsigned long long)h);
    uint64_t four_root = mul(k, 4, root);
    uint64_t end = four_root > head_grad ? four_root - head_grad : 0;
    uint64_t gone = add(k, add(k, ckpt, mul3(k, 2, 2, P_block)), mul(k, T, A_layer));
    if (end > gone)
        entry(sk, ML_C_BACKWARD_WORKING, end - gone, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
              "torch fsdp _flat_param.py _get_unflat_views (split views, use_orig_params) (docs/ledger.md L5)",
              "end of the backward: embedding gradient + the root unit's concatenated gradient (2 B x %llu), "
              "beyond the Blocks' transients then freed",
              (unsigned long long)root);
}
