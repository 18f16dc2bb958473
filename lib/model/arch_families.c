/*
 * arch_families.c - the config readers of the established families (family.h, ml_family_reader):
 * Llama and its descendants (Mistral, Mixtral, Qwen 1-3 and their MoE, Gemma 1-2, Phi, Phi-3,
 * Starcoder2, InternLM2, Baichuan, DeepSeek V2/V3), the other decoder layouts (GPT-2, GPT-NeoX,
 * Falcon, BLOOM, OPT, ChatGLM) and the encoder and encoder-decoder ones (BERT, T5), with the
 * pieces they share (Llama-like sizes, a sliding window, Qwen-style MoE). Families whose configs
 * read alike share one reader.
 *
 * Each reader reads the keys its transformers configuration class defines
 * (configuration_<family>.py, or the model's remote code for qwen, chatglm, baichuan, internlm2,
 * deepseek); missing keys take the class defaults listed in docs/models.md. The config is reached
 * through struct ml_cfg_ops only (arch_int.h): no JSON library, no I/O.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch_int.h"
#include "i18n.h"

/* ---- shared pieces ------------------------------------------------------------------------ */

/* Sizes every decoder config names the same way (LlamaConfig and its descendants). */
void ml_read_llama_like(struct ml_reader *r, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &r->fam->sizes;
    a->vocab = ml_key_size(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = ml_key_size(r, KEYS("hidden_size"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)ml_key_size(r, KEYS("num_hidden_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)ml_key_size(r, KEYS("num_attention_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads =
        (uint32_t)ml_key_u64(r, KEYS("num_key_value_heads"), d->kv_heads ? d->kv_heads : a->n_heads, 1, MAX_HEADS);
    a->head_dim = d->head_dim ? d->head_dim : per_head(a->hidden, a->n_heads);
    a->head_dim = ml_key_u64(r, KEYS("head_dim"), a->head_dim, 1, MAX_WIDTH);
    a->intermediate = ml_key_size(r, KEYS("intermediate_size"), d->intermediate, 1, MAX_WIDTH);
    a->max_positions =
        ml_key_u64(r, KEYS("max_position_embeddings"), d->positions ? d->positions : 2048, 1, MAX_POSITIONS);
    a->rotary_dim = a->head_dim;
    a->norm = ML_NORM_RMS;
    a->norms_per_layer = 2;
    a->final_norm = true;
    a->gated_mlp = true;
}

/* Sliding-window attention as Mistral/Qwen2/Starcoder2 declare it. */
static void read_sliding(struct ml_reader *r, struct ml_arch *a, bool gated_by_use_key)
{
    /* Absent: the class default (MistralConfig 4096); an explicit null: no window. */
    uint64_t w = ml_key_u64(r, KEYS("sliding_window"), ml_key_has(r, "sliding_window") ? 0 : r->fam->sizes.window, 0,
                            MAX_POSITIONS);
    if (gated_by_use_key && !ml_key_bool(r, "use_sliding_window", false))
        w = 0;
    if (w >= a->max_positions)
        w = 0; /* a window as long as the context is full attention */
    a->sliding_window = w;
    for (uint32_t i = 0; i < a->n_layers && i < ML_MAX_LAYERS; i++)
        a->layer_attn[i] = w ? ML_LAYER_SLIDING : ML_LAYER_FULL;
}

/* Qwen-MoE style: every decoder_sparse_step-th layer is MoE except mlp_only_layers. */
void ml_read_qwen_moe(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    a->n_experts = (uint32_t)ml_key_u64(r, KEYS("num_experts"), f->moe.experts, 0, MAX_EXPERTS);
    a->top_k = (uint32_t)ml_key_u64(r, KEYS("num_experts_per_tok"), f->moe.top_k, 1, MAX_EXPERTS);
    a->moe_intermediate = ml_key_u64(r, KEYS("moe_intermediate_size"), f->moe.intermediate, 1, MAX_WIDTH);
    uint64_t step = ml_key_u64(r, KEYS("decoder_sparse_step"), 1, 1, ML_MAX_LAYERS);
    for (uint32_t i = 0; i < a->n_layers; i++)
        ml_arch_set_moe_layer(a, i, a->n_experts > 0 && (i + 1) % step == 0);
    ml_key_dense_layers(r, a, "mlp_only_layers");
}

/* ---- Llama and its descendants ---------------------------------------------------------- */

void ml_read_llama(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* LlamaConfig: attention_bias covers q/k/v/o, mlp_bias gate/up/down. */
    (void)f;
    ml_read_llama_like(r, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = ml_key_bool(r, "attention_bias", false);
    a->mlp_bias = ml_key_bool(r, "mlp_bias", false);
}

void ml_read_mistral(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    ml_read_llama_like(r, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    read_sliding(r, a, false);
}

void ml_read_mixtral(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* MixtralConfig: every layer is sparse; each expert is as wide as intermediate_size. */
    ml_read_mistral(r, f, a);
    a->n_experts = (uint32_t)ml_key_u64(r, KEYS("num_local_experts"), f->moe.experts, 1, MAX_EXPERTS);
    a->top_k = (uint32_t)ml_key_u64(r, KEYS("num_experts_per_tok"), f->moe.top_k, 1, MAX_EXPERTS);
    a->moe_intermediate = a->intermediate;
    for (uint32_t i = 0; i < a->n_layers; i++)
        ml_arch_set_moe_layer(a, i, true);
}

void ml_read_qwen(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Qwen v1 remote code: c_attn (h -> 3 * kv_channels * heads, biased), c_proj;
     * w1/w2/c_proj each intermediate_size / 2 wide. */
    (void)f;
    a->vocab = ml_key_required(r, KEYS("vocab_size"), 1, MAX_VOCAB);
    a->hidden = ml_key_required(r, KEYS("hidden_size"), 1, MAX_WIDTH);
    a->n_layers = (uint32_t)ml_key_required(r, KEYS("num_hidden_layers"), 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)ml_key_required(r, KEYS("num_attention_heads"), 1, MAX_HEADS);
    a->n_kv_heads = a->n_heads;
    a->head_dim = ml_key_u64(r, KEYS("kv_channels"), per_head(a->hidden, a->n_heads), 1, MAX_WIDTH);
    a->intermediate = ml_key_required(r, KEYS("intermediate_size"), 2, MAX_WIDTH) / 2;
    a->max_positions = ml_key_u64(r, KEYS("seq_length", "max_position_embeddings"), 8192, 1, MAX_POSITIONS);
    a->rotary_dim = (uint64_t)((double)a->head_dim * ml_key_fraction(r, "rotary_pct", 1.0));
    a->qkv_bias = true;
    a->o_bias = !ml_key_bool(r, "no_bias", true);
    a->mlp_bias = a->o_bias;
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->norm = ML_NORM_RMS;
    a->norms_per_layer = 2;
    a->final_norm = true;
    a->gated_mlp = true;
}

void ml_read_qwen2(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    ml_read_llama_like(r, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = true; /* Qwen2Attention: q/k/v bias=True, o_proj bias=False */
    read_sliding(r, a, true);
}

void ml_read_qwen2_moe(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    ml_read_qwen2(r, f, a);
    ml_read_qwen_moe(r, f, a);
    a->shared_intermediate =
        ml_key_u64(r, KEYS("shared_expert_intermediate_size"), f->moe.shared_intermediate, 0, MAX_WIDTH);
    a->n_shared_experts = a->shared_intermediate ? 1 : 0;
    a->shared_expert_gate = a->n_shared_experts > 0;
}

void ml_read_qwen3(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    ml_read_llama_like(r, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = ml_key_bool(r, "attention_bias", false);
    a->qk_norm = true;
    a->qk_norm_kind = ML_NORM_RMS;
    read_sliding(r, a, true);
}

void ml_read_qwen3_moe(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    ml_read_qwen3(r, f, a);
    ml_read_qwen_moe(r, f, a);
}

void ml_read_gemma(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* GemmaConfig: head_dim 256 and tied embeddings by default. */
    (void)f;
    ml_read_llama_like(r, a);
    a->head_dim = ml_key_u64(r, KEYS("head_dim"), 256, 1, MAX_WIDTH);
    a->rotary_dim = a->head_dim;
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = ml_key_bool(r, "attention_bias", false);
}

void ml_read_gemma2(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Gemma2Config: pre/post-feedforward norms, sliding windows on every other layer. */
    ml_read_gemma(r, f, a);
    a->norms_per_layer = 4;
    a->sliding_window = ml_key_u64(r, KEYS("sliding_window"), 4096, 0, MAX_POSITIONS);
    /* Gemma2DecoderLayer: is_sliding = not bool(layer_idx % 2). */
    for (uint32_t i = 0; i < a->n_layers && i < ML_MAX_LAYERS; i++)
        a->layer_attn[i] = a->sliding_window && i % 2 == 0 ? ML_LAYER_SLIDING : ML_LAYER_FULL;
}

void ml_read_phi(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* PhiConfig: every linear biased, one LayerNorm per (parallel) block, lm_head bias. */
    (void)f;
    ml_read_llama_like(r, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = a->mlp_bias = a->lm_head_bias = true;
    a->norm = ML_NORM_LAYER;
    a->norms_per_layer = 1;
    a->gated_mlp = false;
    a->qk_norm = ml_key_bool(r, "qk_layernorm", false);
    a->qk_norm_kind = ML_NORM_LAYER;
    a->rotary_dim = (uint64_t)((double)a->head_dim * ml_key_fraction(r, "partial_rotary_factor", 0.5));
}

void ml_read_phi3(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    ml_read_llama_like(r, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->rotary_dim = (uint64_t)((double)a->head_dim * ml_key_fraction(r, "partial_rotary_factor", 1.0));
    read_sliding(r, a, false);
}

void ml_read_starcoder2(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    ml_read_llama_like(r, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = a->mlp_bias = ml_key_bool(r, "use_bias", true);
    const char *nt = ml_key_str(r, "norm_type");
    a->norm = (nt && !strcmp(nt, "rms_norm")) ? ML_NORM_RMS : ML_NORM_LAYER;
    a->gated_mlp = false;
    read_sliding(r, a, false);
}

void ml_read_internlm2(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* InternLM2 remote code: fused wqkv and wo carry `bias`; w1/w3/w2 never do. */
    (void)f;
    ml_read_llama_like(r, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = ml_key_bool(r, "bias", true);
}

void ml_read_baichuan(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Baichuan remote code: W_pack (h -> 3h, no bias), NormHead lm_head (V x h). */
    (void)f;
    ml_read_llama_like(r, a);
    a->max_positions = ml_key_u64(r, KEYS("model_max_length", "max_position_embeddings"), 4096, 1, MAX_POSITIONS);
    a->n_kv_heads = a->n_heads;
    a->tie_embeddings = false;
}

void ml_read_deepseek(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* DeepseekV2Config / DeepseekV3Config: MLA, routed + shared experts, group-limited routing,
     * leading dense layers, MTP; the two differ only in the class defaults (the row's). */
    const struct ml_moe_defaults *m = &f->moe;
    ml_read_llama_like(r, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = ml_key_bool(r, "attention_bias", false);
    a->q_lora_rank = ml_key_u64(r, KEYS("q_lora_rank"), 0, 0, MAX_WIDTH);
    if (!ml_key_has(r, "q_lora_rank"))
        a->q_lora_rank = 1536; /* class default; an explicit null means "no q compression" */
    a->kv_lora_rank = ml_key_u64(r, KEYS("kv_lora_rank"), 512, 1, MAX_WIDTH);
    a->qk_nope_head_dim = ml_key_u64(r, KEYS("qk_nope_head_dim"), 128, 0, MAX_WIDTH);
    a->qk_rope_head_dim = ml_key_u64(r, KEYS("qk_rope_head_dim"), 64, 0, MAX_WIDTH);
    a->v_head_dim = ml_key_u64(r, KEYS("v_head_dim"), 128, 1, MAX_WIDTH);
    a->head_dim = a->qk_nope_head_dim + a->qk_rope_head_dim;
    a->rotary_dim = a->qk_rope_head_dim;
    a->n_experts = (uint32_t)ml_key_u64(r, KEYS("n_routed_experts"), m->experts, 0, MAX_EXPERTS);
    a->top_k = (uint32_t)ml_key_u64(r, KEYS("num_experts_per_tok"), m->top_k, 1, MAX_EXPERTS);
    a->moe_intermediate = ml_key_u64(r, KEYS("moe_intermediate_size"), m->intermediate, 1, MAX_WIDTH);
    a->n_shared_experts = (uint32_t)ml_key_u64(r, KEYS("n_shared_experts"), m->shared_experts, 0, MAX_EXPERTS);
    a->shared_intermediate = a->moe_intermediate * a->n_shared_experts;
    a->n_group = (uint32_t)ml_key_u64(r, KEYS("n_group"), m->n_group, 1, MAX_EXPERTS);
    a->topk_group = (uint32_t)ml_key_u64(r, KEYS("topk_group"), m->topk_group, 1, MAX_EXPERTS);
    const char *tm = ml_key_str(r, "topk_method");
    if (!tm)
        tm = m->topk_method;
    a->router_bias = tm && !strcmp(tm, "noaux_tc");
    uint64_t first_dense = ml_key_u64(r, KEYS("first_k_dense_replace"), m->first_dense, 0, ML_MAX_LAYERS);
    uint64_t freq = ml_key_u64(r, KEYS("moe_layer_freq"), 1, 1, ML_MAX_LAYERS);
    for (uint32_t i = 0; i < a->n_layers; i++)
        ml_arch_set_moe_layer(a, i, a->n_experts > 0 && i >= first_dense && i % freq == 0);
    a->n_mtp_layers = (uint32_t)ml_key_u64(r, KEYS("num_nextn_predict_layers"), 0, 0, 64);
}

/* ---- other decoder layouts ---------------------------------------------------------------- */

void ml_read_gpt2(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = ml_key_size(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = ml_key_size(r, KEYS("n_embd", "hidden_size"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)ml_key_size(r, KEYS("n_layer", "num_hidden_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)ml_key_size(r, KEYS("n_head", "num_attention_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = a->n_heads;
    a->head_dim = per_head(a->hidden, a->n_heads);
    a->intermediate = ml_key_u64(r, KEYS("n_inner"), 4 * a->hidden, 1, MAX_WIDTH);
    a->max_positions = ml_key_u64(r, KEYS("n_positions", "max_position_embeddings"), d->positions, 1, MAX_POSITIONS);
    a->learned_positions = a->max_positions;
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = a->mlp_bias = true;
    a->norm = ML_NORM_LAYER;
    a->norms_per_layer = 2;
    a->final_norm = true;
}

void ml_read_gpt_neox(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    ml_read_llama_like(r, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = ml_key_bool(r, "attention_bias", true);
    a->mlp_bias = true;
    a->norm = ML_NORM_LAYER;
    a->gated_mlp = false;
    a->rotary_dim = (uint64_t)((double)a->head_dim * ml_key_fraction(r, "rotary_pct", 0.25));
}

void ml_read_falcon(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* FalconConfig: new_decoder_architecture -> num_kv_heads groups and two LayerNorms;
     * otherwise multi_query -> one K/V head; parallel_attn -> one LayerNorm. */
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = ml_key_size(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = ml_key_size(r, KEYS("hidden_size", "n_embed"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)ml_key_size(r, KEYS("num_hidden_layers", "n_layer"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)ml_key_size(r, KEYS("num_attention_heads", "n_head"), d->heads, 1, MAX_HEADS);
    a->head_dim = per_head(a->hidden, a->n_heads);
    bool new_arch = ml_key_bool(r, "new_decoder_architecture", false);
    bool mq = ml_key_bool(r, "multi_query", true);
    bool parallel = ml_key_bool(r, "parallel_attn", true);
    if (new_arch)
        a->n_kv_heads = (uint32_t)ml_key_u64(r, KEYS("num_kv_heads", "n_head_kv"), a->n_heads, 1, MAX_HEADS);
    else
        a->n_kv_heads = mq ? 1 : a->n_heads;
    a->intermediate = ml_key_u64(r, KEYS("ffn_hidden_size"), 4 * a->hidden, 1, MAX_WIDTH);
    a->max_positions = ml_key_u64(r, KEYS("max_position_embeddings"), 2048, 1, MAX_POSITIONS);
    a->rotary_dim = ml_key_bool(r, "alibi", false) ? 0 : a->head_dim;
    a->qkv_bias = a->o_bias = a->mlp_bias = ml_key_bool(r, "bias", false);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", true);
    a->norm = ML_NORM_LAYER;
    a->norms_per_layer =
        new_arch ? (uint32_t)ml_key_u64(r, KEYS("num_ln_in_parallel_attn"), 2, 1, 2) : (parallel ? 1 : 2);
    /* FalconDecoderLayer: ln_attn + ln_mlp for a parallel block with num_ln_in_parallel_attn 2. */
    a->branch_norms = new_arch && parallel && a->norms_per_layer == 2;
    a->final_norm = true;
}

void ml_read_bloom(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = ml_key_size(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = ml_key_size(r, KEYS("hidden_size", "n_embed"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)ml_key_size(r, KEYS("n_layer", "num_hidden_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)ml_key_size(r, KEYS("n_head", "num_attention_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = a->n_heads;
    a->head_dim = per_head(a->hidden, a->n_heads);
    a->intermediate = 4 * a->hidden;                                              /* BloomMLP: dense_h_to_4h */
    a->max_positions = ml_key_u64(r, KEYS("seq_length"), 2048, 1, MAX_POSITIONS); /* ALiBi */
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = a->mlp_bias = true;
    a->norm = ML_NORM_LAYER;
    a->norms_per_layer = 2;
    a->final_norm = true;
    a->embed_norm = true;
}

void ml_read_opt(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = ml_key_size(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = ml_key_size(r, KEYS("hidden_size"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)ml_key_size(r, KEYS("num_hidden_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)ml_key_size(r, KEYS("num_attention_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = a->n_heads;
    a->head_dim = per_head(a->hidden, a->n_heads);
    a->intermediate = ml_key_size(r, KEYS("ffn_dim"), d->intermediate, 1, MAX_WIDTH);
    a->max_positions = ml_key_u64(r, KEYS("max_position_embeddings"), 2048, 1, MAX_POSITIONS);
    /* OPTLearnedPositionalEmbedding keeps 2 extra rows (offset). */
    a->learned_positions = a->max_positions + 2;
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = a->mlp_bias = ml_key_bool(r, "enable_bias", true);
    a->norm = ML_NORM_LAYER;
    a->norms_per_layer = 2;
    a->final_norm = ml_key_bool(r, "do_layer_norm_before", true) && !ml_key_bool(r, "_remove_final_layer_norm", false);
    /* word_embed_proj_dim != hidden adds project_in/out (OPT-350m): not modelled. */
    uint64_t proj = ml_key_u64(r, KEYS("word_embed_proj_dim"), a->hidden, 1, MAX_WIDTH);
    if (proj != a->hidden)
        ml_reader_fail(
            r, ML_ERR_UNSUPPORTED,
            _("'word_embed_proj_dim' (%llu) differs from 'hidden_size' (%llu): OPT projection layers are not "
              "supported"),
            (unsigned long long)proj, (unsigned long long)a->hidden);
}

void ml_read_chatglm(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* ChatGLM remote code: query_key_value is h -> heads*kv_channels + 2*groups*kv_channels;
     * dense_h_to_4h is fused gate+up (2 * ffn_hidden_size); output_layer is never tied. */
    (void)f;
    a->vocab = ml_key_required(r, KEYS("padded_vocab_size", "vocab_size"), 1, MAX_VOCAB);
    a->hidden = ml_key_required(r, KEYS("hidden_size"), 1, MAX_WIDTH);
    a->n_layers = (uint32_t)ml_key_required(r, KEYS("num_layers", "num_hidden_layers"), 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)ml_key_required(r, KEYS("num_attention_heads"), 1, MAX_HEADS);
    a->head_dim = ml_key_u64(r, KEYS("kv_channels"), per_head(a->hidden, a->n_heads), 1, MAX_WIDTH);
    a->n_kv_heads = ml_key_bool(r, "multi_query_attention", false)
                        ? (uint32_t)ml_key_u64(r, KEYS("multi_query_group_num"), 1, 1, MAX_HEADS)
                        : a->n_heads;
    a->intermediate = ml_key_required(r, KEYS("ffn_hidden_size"), 1, MAX_WIDTH);
    a->max_positions = ml_key_u64(r, KEYS("seq_length"), 2048, 1, MAX_POSITIONS);
    a->rotary_dim = a->head_dim / 2; /* RotaryEmbedding(kv_channels // 2) */
    a->qkv_bias = ml_key_bool(r, "add_qkv_bias", false);
    a->o_bias = a->mlp_bias = ml_key_bool(r, "add_bias_linear", false);
    a->tie_embeddings = false;
    a->norm = ml_key_bool(r, "rmsnorm", true) ? ML_NORM_RMS : ML_NORM_LAYER;
    a->norms_per_layer = 2;
    a->final_norm = ml_key_bool(r, "post_layer_norm", true);
    a->gated_mlp = true;
}

/* ---- encoder and encoder-decoder layouts ---------------------------------------------- */

void ml_read_bert(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    ml_read_llama_like(r, a);
    a->max_positions = ml_key_u64(r, KEYS("max_position_embeddings"), 512, 1, MAX_POSITIONS);
    a->learned_positions = a->max_positions;
    a->type_vocab = ml_key_u64(r, KEYS("type_vocab_size"), 2, 0, MAX_VOCAB);
    a->rotary_dim = 0;
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = a->mlp_bias = true;
    a->norm = ML_NORM_LAYER;
    a->final_norm = false;
    a->embed_norm = true;
    a->gated_mlp = false;
}

void ml_read_t5(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = ml_key_size(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = ml_key_size(r, KEYS("d_model"), d->hidden, 1, MAX_WIDTH);
    a->n_encoder_layers = (uint32_t)ml_key_size(r, KEYS("num_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_layers = (uint32_t)ml_key_u64(r, KEYS("num_decoder_layers"), a->n_encoder_layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)ml_key_size(r, KEYS("num_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = a->n_heads;
    a->head_dim = ml_key_u64(r, KEYS("d_kv"), 64, 1, MAX_WIDTH);
    a->intermediate = ml_key_u64(r, KEYS("d_ff"), 2048, 1, MAX_WIDTH);
    a->max_positions = ml_key_u64(r, KEYS("n_positions"), 512, 1, MAX_POSITIONS);
    a->rel_attn_buckets = (uint32_t)ml_key_u64(r, KEYS("relative_attention_num_buckets"), 32, 1, 65536);
    const char *ff = ml_key_str(r, "feed_forward_proj");
    a->gated_mlp = ff && !strncmp(ff, "gated-", 6);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", true);
    a->norm = ML_NORM_RMS; /* T5LayerNorm: weight only */
    a->final_norm = true;
}
