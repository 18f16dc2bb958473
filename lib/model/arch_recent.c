/*
 * arch_recent.c - the config readers of the 2025-2026 families (Gemma 3, Llama 4, gpt-oss,
 * Qwen2.5-VL, Qwen3-VL, Qwen3-Next, Qwen3.5, DeepSeek V3.2, GLM-4 MoE): composite configs with a
 * nested text_config, per-layer attention patterns, hybrid linear-attention layers, and their
 * vision towers (SigLIP, Qwen's, Llama 4's).
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

/* ---- vision towers ------------------------------------------------------------------------- */

static void read_siglip(struct ml_reader *r, struct ml_vision *v)
{
    /* SiglipVisionConfig: hidden 768, intermediate 3072, 12 layers, 12 heads, 224 px, patch 16. */
    v->hidden = ml_key_u64(r, KEYS("hidden_size"), 768, 1, MAX_WIDTH);
    v->intermediate = ml_key_u64(r, KEYS("intermediate_size"), 3072, 1, MAX_WIDTH);
    v->depth = (uint32_t)ml_key_u64(r, KEYS("num_hidden_layers"), 12, 1, ML_MAX_LAYERS);
    v->heads = (uint32_t)ml_key_u64(r, KEYS("num_attention_heads"), 12, 1, MAX_HEADS);
    v->channels = (uint32_t)ml_key_u64(r, KEYS("num_channels"), 3, 1, 64);
    v->image_size = ml_key_u64(r, KEYS("image_size"), 224, 1, 65536);
    v->patch = (uint32_t)ml_key_u64(r, KEYS("patch_size"), 16, 1, 4096);
    v->temporal_patch = 1;
    v->positions = (v->image_size / v->patch) * (v->image_size / v->patch);
    if (ml_key_bool(r, "vision_use_head", false))
        ml_reader_fail(r, ML_ERR_UNSUPPORTED,
                       _("'vision_use_head': the SigLIP attention-pooling head is not modelled"));
}

static void read_qwen_vision(struct ml_reader *r, struct ml_vision *v, bool qwen3)
{
    /* Qwen2_5_VLVisionConfig / Qwen3VLVisionConfig: depth, widths, patch 14 / 16, temporal
     * patch 2, 2x2 merge; Qwen3 adds the position table (2304 rows) and deepstack mergers. */
    /* Absent: the class defaults (Qwen2_5_VLVisionConfig 32 / 3584 / 3420, Qwen3VLVisionConfig and
     * Qwen3_5VisionConfig 27 / 1152 / 4304, out_hidden_size 3584 in all three). */
    v->depth = (uint32_t)ml_key_u64(r, KEYS("depth"), qwen3 ? 27 : 32, 1, ML_MAX_LAYERS);
    v->hidden = ml_key_u64(r, KEYS("hidden_size"), qwen3 ? 1152 : 3584, 1, MAX_WIDTH);
    v->intermediate = ml_key_u64(r, KEYS("intermediate_size"), qwen3 ? 4304 : 3420, 1, MAX_WIDTH);
    v->heads = (uint32_t)ml_key_u64(r, KEYS("num_heads"), 16, 1, MAX_HEADS);
    v->channels = (uint32_t)ml_key_u64(r, KEYS("in_channels", "in_chans"), 3, 1, 64);
    v->patch = (uint32_t)ml_key_u64(r, KEYS("patch_size", "spatial_patch_size"), qwen3 ? 16 : 14, 1, 4096);
    v->temporal_patch = (uint32_t)ml_key_u64(r, KEYS("temporal_patch_size"), 2, 1, 64);
    v->merge = (uint32_t)ml_key_u64(r, KEYS("spatial_merge_size"), 2, 1, 64);
    v->out_hidden = ml_key_u64(r, KEYS("out_hidden_size"), 3584, 1, MAX_WIDTH);
    if (!qwen3)
        return;
    v->positions = ml_key_u64(r, KEYS("num_position_embeddings"), 2304, 0, MAX_VOCAB);
    const void *list = r->ops->member(r->obj, "deepstack_visual_indexes");
    struct ml_cfg_value lv;
    r->ops->value(list, &lv);
    for (const void *e = lv.kind == ML_CFG_ARRAY ? r->ops->first(list) : NULL; e; e = r->ops->next(e))
        v->deepstack++;
    if (!ml_key_has(r, "deepstack_visual_indexes"))
        v->deepstack = r->fam->deepstack;
}

static void read_llama4_vision(struct ml_reader *r, struct ml_vision *v)
{
    /* Llama4VisionConfig: unfold patch embedding, class token, (image/patch)^2 + 1 positions,
     * pixel-shuffle MLP to projector_output_dim, then multi_modal_projector to the text width. */
    v->hidden = ml_key_u64(r, KEYS("hidden_size"), 768, 1, MAX_WIDTH);
    v->intermediate = ml_key_u64(r, KEYS("intermediate_size"), 5632, 1, MAX_WIDTH);
    v->depth = (uint32_t)ml_key_u64(r, KEYS("num_hidden_layers"), 34, 1, ML_MAX_LAYERS);
    v->heads = (uint32_t)ml_key_u64(r, KEYS("num_attention_heads"), 16, 1, MAX_HEADS);
    v->channels = (uint32_t)ml_key_u64(r, KEYS("num_channels"), 3, 1, 64);
    v->image_size = ml_key_u64(r, KEYS("image_size"), 448, 1, 65536);
    v->patch = (uint32_t)ml_key_u64(r, KEYS("patch_size"), 14, 1, 4096);
    v->temporal_patch = 1;
    v->positions = (v->image_size / v->patch) * (v->image_size / v->patch) + 1;
    v->adapter_in = ml_key_u64(r, KEYS("projector_input_dim"), 4096, 1, MAX_WIDTH);
    v->adapter_out = ml_key_u64(r, KEYS("projector_output_dim"), 4096, 1, MAX_WIDTH);
    v->vision_out = ml_key_u64(r, KEYS("vision_output_dim"), 7680, 1, MAX_WIDTH);
}

/* The family's tower from vision_config (required when the family has one). */
static void read_vision(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    if (f->vision == ML_VISION_NONE)
        return;
    bool present;
    struct ml_reader v = ml_reader_child(r, "vision_config", &present);
    if (!present) {
        ml_reader_fail(r, ML_ERR_INVALID, _("missing 'vision_config' (required for model_type '%s')"), r->type);
        return;
    }
    a->vision.kind = f->vision;
    switch (f->vision) {
    case ML_VISION_SIGLIP:
        read_siglip(&v, &a->vision);
        a->vision.tokens_per_image = (uint32_t)ml_key_u64(r, KEYS("mm_tokens_per_image"), 256, 1, 1u << 20);
        break;
    case ML_VISION_QWEN2_5:
    case ML_VISION_QWEN3: read_qwen_vision(&v, &a->vision, f->vision == ML_VISION_QWEN3); break;
    case ML_VISION_LLAMA4: read_llama4_vision(&v, &a->vision); break;
    case ML_VISION_NONE: break;
    }
    ml_reader_merge(r, &v);
}

/* ---- the 2025-2026 families ------------------------------------------------------------------ */

void ml_read_gemma3(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Gemma3TextConfig: head_dim 256, q/k norms, four norms per layer, tied head, 131072
     * positions, a 4096 sliding window on 5 of every 6 layers (sliding_window_pattern). */
    struct ml_reader t = ml_reader_text(r);
    ml_read_llama_like(&t, a);
    a->head_dim = ml_key_u64(&t, KEYS("head_dim"), 256, 1, MAX_WIDTH);
    a->rotary_dim = a->head_dim;
    a->max_positions = ml_key_u64(&t, KEYS("max_position_embeddings"), 131072, 1, MAX_POSITIONS);
    a->tie_embeddings = ml_key_tie(r, &t, true);
    a->qkv_bias = a->o_bias = ml_key_bool(&t, "attention_bias", false);
    a->qk_norm = true;
    a->qk_norm_kind = ML_NORM_RMS;
    a->norms_per_layer = 4;
    a->sliding_window = ml_key_u64(&t, KEYS("sliding_window"), 4096, 1, MAX_POSITIONS);
    ml_arch_layer_pattern(a, ml_key_u64(&t, KEYS("sliding_window_pattern"), 6, 1, ML_MAX_LAYERS), ML_LAYER_SLIDING);
    ml_reader_merge(r, &t);
    read_vision(r, f, a);
}

void ml_read_llama4(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Llama4TextConfig: experts of intermediate_size with one shared expert of the same width,
     * dense layers of intermediate_size_mlp; MoE layers range(step - 1, L, step); chunked
     * attention (attention_chunk_size) on the RoPE layers, global attention on every
     * no_rope_layer_interval-th (NoPE) layer. */
    struct ml_reader t = ml_reader_text(r);
    ml_read_llama_like(&t, a);
    a->head_dim = ml_key_u64(&t, KEYS("head_dim"), 128, 1, MAX_WIDTH);
    a->rotary_dim = a->head_dim;
    a->max_positions = ml_key_u64(&t, KEYS("max_position_embeddings"), 4096 * 32, 1, MAX_POSITIONS);
    a->tie_embeddings = ml_key_tie(r, &t, false);
    a->qkv_bias = a->o_bias = ml_key_bool(&t, "attention_bias", false);
    a->moe_intermediate = a->intermediate;
    a->intermediate = ml_key_u64(&t, KEYS("intermediate_size_mlp"), 16384, 1, MAX_WIDTH);
    a->n_experts = (uint32_t)ml_key_u64(&t, KEYS("num_local_experts"), f->moe.experts, 1, MAX_EXPERTS);
    a->top_k = (uint32_t)ml_key_u64(&t, KEYS("num_experts_per_tok"), f->moe.top_k, 1, MAX_EXPERTS);
    a->n_shared_experts = 1;
    a->shared_intermediate = a->moe_intermediate;
    uint64_t step = ml_key_u64(&t, KEYS("interleave_moe_layer_step"), 1, 1, ML_MAX_LAYERS);
    for (uint32_t i = 0; i < a->n_layers; i++)
        ml_arch_set_moe_layer(a, i, (i + 1) % step == 0);
    a->attn_chunk = ml_key_u64(&t, KEYS("attention_chunk_size"), 8192, 0, MAX_POSITIONS);
    uint64_t nope = ml_key_u64(&t, KEYS("no_rope_layer_interval"), 4, 1, ML_MAX_LAYERS);
    ml_arch_layer_pattern(a, nope, a->attn_chunk ? ML_LAYER_CHUNKED : ML_LAYER_FULL);
    const void *list = t.ops->member(t.obj, "no_rope_layers");
    struct ml_cfg_value lv;
    t.ops->value(list, &lv);
    uint32_t i = 0;
    for (const void *e = lv.kind == ML_CFG_ARRAY ? t.ops->first(list) : NULL; e && i < a->n_layers && i < ML_MAX_LAYERS;
         e = t.ops->next(e), i++) {
        struct ml_cfg_value v;
        t.ops->value(e, &v);
        a->layer_attn[i] = v.kind == ML_CFG_NUMBER && v.num != 0 && a->attn_chunk ? ML_LAYER_CHUNKED : ML_LAYER_FULL;
    }
    ml_reader_merge(r, &t);
    read_vision(r, f, a);
}

void ml_read_gpt_oss(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* GptOssConfig: biased attention with per-head sinks, every layer MoE with biased packed
     * experts and a biased router, sliding window 128 on the even layers. */
    ml_read_llama_like(r, a);
    a->head_dim = ml_key_u64(r, KEYS("head_dim"), 64, 1, MAX_WIDTH);
    a->rotary_dim = a->head_dim;
    a->max_positions = ml_key_u64(r, KEYS("max_position_embeddings"), 131072, 1, MAX_POSITIONS);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = ml_key_bool(r, "attention_bias", true);
    a->attn_sinks = true;
    a->n_experts = (uint32_t)ml_key_u64(r, KEYS("num_local_experts"), f->moe.experts, 1, MAX_EXPERTS);
    a->top_k = (uint32_t)ml_key_u64(r, KEYS("num_experts_per_tok", "experts_per_token"), f->moe.top_k, 1, MAX_EXPERTS);
    a->moe_intermediate = a->intermediate;
    a->expert_bias = a->router_linear_bias = true;
    for (uint32_t i = 0; i < a->n_layers; i++)
        ml_arch_set_moe_layer(a, i, true);
    a->sliding_window = ml_key_u64(r, KEYS("sliding_window"), 128, 1, MAX_POSITIONS);
    ml_arch_layer_pattern(a, 2, ML_LAYER_SLIDING);
}

void ml_read_qwen2_5_vl(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Qwen2_5_VLTextConfig is Qwen2's (q/k/v biased); older checkpoints keep it at the top level. */
    struct ml_reader t = ml_reader_text(r);
    ml_read_qwen2(&t, f, a);
    a->tie_embeddings = ml_key_tie(r, &t, false);
    ml_reader_merge(r, &t);
    read_vision(r, f, a);
}

void ml_read_qwen3_vl(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Qwen3VLTextConfig is Qwen3's; Qwen3VLMoeTextConfig Qwen3-MoE's (packed experts). */
    struct ml_reader t = ml_reader_text(r);
    ml_read_qwen3(&t, f, a);
    if (f->moe.experts)
        ml_read_qwen_moe(&t, f, a);
    a->tie_embeddings = ml_key_tie(r, &t, false);
    ml_reader_merge(r, &t);
    read_vision(r, f, a);
}

/* The hybrid stack of Qwen3-Next and Qwen3.5: Gated DeltaNet layers with gated full-attention
 * layers every full_attention_interval-th (default 4), partial rotary 0.25, q/k norms. */
static void read_hybrid(struct ml_reader *t, const struct ml_family_def *f, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = ml_key_size(t, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = ml_key_size(t, KEYS("hidden_size"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)ml_key_size(t, KEYS("num_hidden_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)ml_key_size(t, KEYS("num_attention_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = (uint32_t)ml_key_u64(t, KEYS("num_key_value_heads"), d->kv_heads, 1, MAX_HEADS);
    a->head_dim = ml_key_u64(t, KEYS("head_dim"), d->head_dim, 1, MAX_WIDTH);
    a->intermediate = ml_key_u64(t, KEYS("intermediate_size"), d->intermediate, 0, MAX_WIDTH);
    a->max_positions = ml_key_u64(t, KEYS("max_position_embeddings"), d->positions, 1, MAX_POSITIONS);
    struct ml_reader rp = *t;
    bool nested;
    struct ml_reader rope = ml_reader_child(t, "rope_parameters", &nested);
    if (nested && ml_key_has(&rope, "partial_rotary_factor"))
        rp = rope;
    a->rotary_dim = (uint64_t)((double)a->head_dim * ml_key_fraction(&rp, "partial_rotary_factor", 0.25));
    ml_reader_merge(t, &rope);
    a->norm = ML_NORM_RMS;
    a->norms_per_layer = 2;
    a->final_norm = a->gated_mlp = true;
    a->qkv_bias = a->o_bias = ml_key_bool(t, "attention_bias", false);
    a->qk_norm = true;
    a->qk_norm_kind = ML_NORM_RMS;
    a->q_gate = ml_key_bool(t, "attn_output_gate", true);
    a->lin.k_heads = (uint32_t)ml_key_u64(t, KEYS("linear_num_key_heads"), 16, 1, MAX_HEADS);
    a->lin.v_heads = (uint32_t)ml_key_u64(t, KEYS("linear_num_value_heads"), 32, 1, MAX_HEADS);
    a->lin.k_dim = ml_key_u64(t, KEYS("linear_key_head_dim"), 128, 1, MAX_WIDTH);
    a->lin.v_dim = ml_key_u64(t, KEYS("linear_value_head_dim"), 128, 1, MAX_WIDTH);
    a->lin.conv_kernel = (uint32_t)ml_key_u64(t, KEYS("linear_conv_kernel_dim"), 4, 2, 64);
    const char *sd = ml_key_str(t, "mamba_ssm_dtype");
    a->lin.state_dtype = sd ? ml_dtype_parse(sd) : ML_DTYPE_FP32;
    if (f->moe.experts) {
        ml_read_qwen_moe(t, f, a);
        a->shared_intermediate =
            ml_key_u64(t, KEYS("shared_expert_intermediate_size"), f->moe.shared_intermediate, 0, MAX_WIDTH);
        a->n_shared_experts = a->shared_intermediate ? 1 : 0;
        a->shared_expert_gate = a->n_shared_experts > 0;
    } else if (!a->intermediate) {
        a->intermediate = ml_key_required(t, KEYS("intermediate_size"), 1, MAX_WIDTH);
    }
    ml_arch_layer_pattern(a, ml_key_u64(t, KEYS("full_attention_interval"), 4, 1, ML_MAX_LAYERS), ML_LAYER_LINEAR);
    a->n_mtp_layers = (uint32_t)ml_key_u64(t, KEYS("mtp_num_hidden_layers", "num_nextn_predict_layers"), 0, 0, 64);
}

void ml_read_qwen3_next(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    read_hybrid(r, f, a);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
}

void ml_read_qwen3_5(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    struct ml_reader t = ml_reader_text(r);
    read_hybrid(&t, f, a);
    a->tie_embeddings = ml_key_tie(r, &t, false);
    ml_reader_merge(r, &t);
    read_vision(r, f, a);
}

void ml_read_deepseek_v32(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* DeepseekV32Config = DeepseekV3Config + the lightning indexer (index_n_heads 64,
     * index_head_dim 128). */
    ml_read_deepseek(r, f, a);
    a->index_heads = ml_key_u64(r, KEYS("index_n_heads"), 64, 1, MAX_HEADS);
    a->index_head_dim = ml_key_u64(r, KEYS("index_head_dim"), 128, 1, MAX_WIDTH);
}

void ml_read_glm4_moe(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Glm4MoeConfig: q/k/v biased by attention_bias (o never), optional q/k norms, partial
     * rotary 0.5, first_k_dense_replace dense layers, routed + shared experts with the
     * e_score_correction_bias of noaux_tc routing, MTP layers. */
    const struct ml_moe_defaults *m = &f->moe;
    ml_read_llama_like(r, a);
    a->max_positions = ml_key_u64(r, KEYS("max_position_embeddings"), 131072, 1, MAX_POSITIONS);
    a->tie_embeddings = ml_key_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = ml_key_bool(r, "attention_bias", false);
    a->qk_norm = ml_key_bool(r, "use_qk_norm", false);
    a->qk_norm_kind = ML_NORM_RMS;
    a->rotary_dim = (uint64_t)((double)a->head_dim * ml_key_fraction(r, "partial_rotary_factor", 0.5));
    a->n_experts = (uint32_t)ml_key_u64(r, KEYS("n_routed_experts"), m->experts, 0, MAX_EXPERTS);
    a->top_k = (uint32_t)ml_key_u64(r, KEYS("num_experts_per_tok"), m->top_k, 1, MAX_EXPERTS);
    a->moe_intermediate = ml_key_u64(r, KEYS("moe_intermediate_size"), m->intermediate, 1, MAX_WIDTH);
    a->n_shared_experts = (uint32_t)ml_key_u64(r, KEYS("n_shared_experts"), m->shared_experts, 0, MAX_EXPERTS);
    a->shared_intermediate = a->moe_intermediate * a->n_shared_experts;
    a->n_group = (uint32_t)ml_key_u64(r, KEYS("n_group"), m->n_group, 1, MAX_EXPERTS);
    a->topk_group = (uint32_t)ml_key_u64(r, KEYS("topk_group"), m->topk_group, 1, MAX_EXPERTS);
    a->router_bias = true;
    uint64_t first_dense = ml_key_u64(r, KEYS("first_k_dense_replace"), m->first_dense, 0, ML_MAX_LAYERS);
    for (uint32_t i = 0; i < a->n_layers; i++)
        ml_arch_set_moe_layer(a, i, a->n_experts > 0 && i >= first_dense);
    a->n_mtp_layers = (uint32_t)ml_key_u64(r, KEYS("num_nextn_predict_layers"), 0, 0, 64);
}
