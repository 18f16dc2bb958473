/*
 * family.c - the model family table: one row per supported Hugging Face model_type (family.h).
 *
 * How to add a model family
 *
 *  1. Read its transformers configuration class (configuration_<x>.py) and modeling file, or the
 *     model repository's remote code: the keys and their defaults, and the module names.
 *  2. Add ML_FAMILY_<X> to enum ml_family (include/memledger/arch.h), before ML_FAMILY_COUNT.
 *  3. Add its row below: model_type and aliases, the reader, the MoE class defaults, the module
 *     names that differ from the defaults (ml_family_modules), the modules LoRA "all" skips,
 *     the attributes.
 *  4. Name an existing reader when the config reads the same way (ml_read_llama reads every
 *     LlamaConfig-style config); otherwise write one in arch_read.c and declare it in family.h.
 *     A reader fills struct ml_arch: a new architectural feature (a layer pattern, an expert
 *     layout, a vision tower) becomes a field of struct ml_arch or a module name here, which the
 *     inventory and the ledger read - never a test of the family outside lib/model.
 *  5. Add its row to docs/models.md (keys read with their defaults, module layout). README.md and
 *     docs/cli/params.md list what `memledger models --types` prints; test_arch checks all three.
 *  6. Add a config.json to data/models and its exact parameter count, from an independent
 *     source, to data/models/params.jsonl (test_params holds the inventory to it).
 */
#include "family.h"

#include <stdio.h>
#include <string.h>

/* The size defaults of a configuration class, in its own order of keys: vocab_size, hidden_size,
 * intermediate_size, max_position_embeddings, head_dim, sliding_window, num_hidden_layers,
 * num_attention_heads, num_key_value_heads (each family's names for them; 0 as in family.h). Read
 * from transformers 5.24 src/transformers/models/<type>/configuration_<type>.py, the class the row
 * names (LlamaConfig ... Glm4MoeConfig; Gemma3TextConfig, Llama4TextConfig, Qwen2_5_VLTextConfig,
 * Qwen3VLTextConfig, Qwen3VLMoeTextConfig, Qwen3_5TextConfig, Qwen3_5MoeTextConfig for the nested
 * text configs); the remote-code families (qwen, internlm2, chatglm, baichuan) have none here. */
#define SIZES(v, h, i, p, hd, w, l, nh, kv)                                                                            \
    {                                                                                                                  \
        .vocab = (v), .hidden = (h), .intermediate = (i), .positions = (p), .head_dim = (hd), .window = (w),           \
        .layers = (l), .heads = (nh), .kv_heads = (kv)                                                                 \
    }

/* Rows in enum ml_family order; docs/models.md describes each family's keys and modules. */
static const struct ml_family_def families[] =
    {
        [ML_FAMILY_LLAMA] = {.model_type = "llama",
                             .read = ml_read_llama,
                             .classes = {"LlamaForCausalLM"},
                             .sizes = SIZES(32000, 4096, 11008, 2048, 0, 0, 32, 32, 0)},
        [ML_FAMILY_MISTRAL] = {.model_type = "mistral",
                               .read = ml_read_mistral,
                               .classes = {"MistralForCausalLM"},
                               .sizes = SIZES(32000, 4096, 14336, 131072, 0, 4096, 32, 32, 8)},
        [ML_FAMILY_MIXTRAL] =
            {
                .model_type = "mixtral",
                .read = ml_read_mixtral,
                .classes = {"MixtralForCausalLM"},
                .sizes = SIZES(32000, 4096, 14336, 131072, 0, 0, 32, 32, 8),
                .moe = {.experts = 8, .top_k = 2},
                /* MixtralBlockSparseTop2MLP: w1 (gate), w3 (up), w2 (down). */
                .modules = {.experts = "block_sparse_moe.experts.*",
                            .expert_gate = "w1",
                            .expert_up = "w3",
                            .expert_down = "w2",
                            .router = "block_sparse_moe.gate"},
            },
        [ML_FAMILY_QWEN] =
            {
                .model_type = "qwen",
                .read = ml_read_qwen,
                .classes = {"QWenLMHeadModel"},
                /* QWenMLP: a1 = w1(x), a2 = w2(x); c_proj(a1 * silu(a2)). */
                .modules = {.embed = "transformer.wte",
                            .layer = "transformer.h.*",
                            .qkv = "attn.c_attn",
                            .o = "attn.c_proj",
                            .gate = "mlp.w2",
                            .up = "mlp.w1",
                            .down = "mlp.c_proj",
                            .norms = {"ln_1", "ln_2"},
                            .final_norm = "transformer.ln_f"},
                /* QWenLMHeadModel.forward: the loss on lm_head's output, no logits.float(). */
                .loss_in_param_dtype = true,
            },
        [ML_FAMILY_QWEN2] = {.model_type = "qwen2",
                             .read = ml_read_qwen2,
                             .classes = {"Qwen2ForCausalLM"},
                             .sizes = SIZES(151936, 4096, 22016, 32768, 0, 4096, 32, 32, 32)},
        [ML_FAMILY_QWEN2_MOE] =
            {
                .model_type = "qwen2_moe",
                .read = ml_read_qwen2_moe,
                .classes = {"Qwen2MoeForCausalLM"},
                .sizes = SIZES(151936, 2048, 5632, 32768, 0, 4096, 24, 16, 16),
                .moe = {.experts = 60, .top_k = 4, .intermediate = 1408, .shared_intermediate = 5632},
            },
        [ML_FAMILY_QWEN3] = {.model_type = "qwen3",
                             .read = ml_read_qwen3,
                             .classes = {"Qwen3ForCausalLM"},
                             .sizes = SIZES(151936, 4096, 22016, 32768, 128, 4096, 32, 32, 32)},
        [ML_FAMILY_QWEN3_MOE] =
            {
                .model_type = "qwen3_moe",
                .read = ml_read_qwen3_moe,
                .classes = {"Qwen3MoeForCausalLM"},
                .sizes = SIZES(151936, 2048, 6144, 32768, 0, 4096, 24, 32, 4),
                .moe = {.experts = 128, .top_k = 8, .intermediate = 768},
            },
        [ML_FAMILY_GEMMA] = {.model_type = "gemma",
                             .read = ml_read_gemma,
                             .classes = {"GemmaForCausalLM"},
                             .sizes = SIZES(256000, 3072, 24576, 8192, 256, 0, 28, 16, 16)},
        [ML_FAMILY_GEMMA2] =
            {
                .model_type = "gemma2",
                .read = ml_read_gemma2,
                .classes = {"Gemma2ForCausalLM"},
                .sizes = SIZES(256000, 2304, 9216, 8192, 256, 4096, 26, 8, 4),
                .modules = {.norms = {NULL, NULL, "pre_feedforward_layernorm", "post_feedforward_layernorm"}},
                .attn_softcap = true, /* attn_logit_softcapping; LLaMA-Factory's configure_attn_implementation */
            },
        [ML_FAMILY_PHI] =
            {
                .model_type = "phi",
                .read = ml_read_phi,
                .classes = {"PhiForCausalLM"},
                .sizes = SIZES(51200, 2048, 8192, 2048, 0, 0, 24, 32, 0),
                .modules = {.o = "self_attn.dense",
                            .q_norm = "self_attn.q_layernorm",
                            .k_norm = "self_attn.k_layernorm",
                            .up = "mlp.fc1",
                            .down = "mlp.fc2",
                            .final_norm = "model.final_layernorm"},
                .gelu_new_default = true, /* PhiConfig hidden_act */
            },
        [ML_FAMILY_PHI3] =
            {
                .model_type = "phi3",
                .read = ml_read_phi3,
                .classes = {"Phi3ForCausalLM"},
                .sizes = SIZES(32064, 3072, 8192, 4096, 0, 0, 32, 32, 0),
                .modules = {.qkv = "self_attn.qkv_proj", .gate_up = "mlp.gate_up_proj"},
            },
        [ML_FAMILY_GPT2] =
            {
                .model_type = "gpt2",
                .read = ml_read_gpt2,
                .classes = {"GPT2LMHeadModel"},
                .sizes = SIZES(50257, 768, 0, 1024, 0, 0, 12, 12, 0),
                .modules = {.embed = "transformer.wte",
                            .position = "transformer.wpe",
                            .layer = "transformer.h.*",
                            .qkv = "attn.c_attn",
                            .o = "attn.c_proj",
                            .up = "mlp.c_fc",
                            .down = "mlp.c_proj",
                            .norms = {"ln_1", "ln_2"},
                            .final_norm = "transformer.ln_f",
                            .conv1d = true},
                /* GPT2LMHeadModel.forward (<= 4.45): shift and loss on lm_logits as computed;
         * GPT2Attention._attn: softmax without dtype, then attn_dropout (attn_pdrop 0.1). */
                .loss_in_param_dtype = true,
                .eager_softmax_act_dtype = true,
                .attn_dropout = true,
                .gelu_new_default = true, /* GPT2Config activation_function */
            },
        [ML_FAMILY_GPT_NEOX] =
            {
                .model_type = "gpt_neox",
                .read = ml_read_gpt_neox,
                .classes = {"GPTNeoXForCausalLM"},
                .sizes = SIZES(50432, 6144, 24576, 2048, 0, 0, 44, 64, 0),
                .modules = {.embed = "gpt_neox.embed_in",
                            .layer = "gpt_neox.layers.*",
                            .qkv = "attention.query_key_value",
                            .o = "attention.dense",
                            .up = "mlp.dense_h_to_4h",
                            .down = "mlp.dense_4h_to_h",
                            .final_norm = "gpt_neox.final_layer_norm",
                            .lm_head = "embed_out"},
            },
        [ML_FAMILY_FALCON] =
            {
                .model_type = "falcon",
                .aliases = {"RefinedWeb", "RefinedWebModel"}, /* early remote code */
                .read = ml_read_falcon,
                .classes = {"FalconForCausalLM"},
                .sizes = SIZES(65024, 4544, 0, 2048, 0, 0, 32, 71, 0),
                .modules = {.embed = "transformer.word_embeddings",
                            .layer = "transformer.h.*",
                            .qkv = "self_attention.query_key_value",
                            .o = "self_attention.dense",
                            .up = "mlp.dense_h_to_4h",
                            .down = "mlp.dense_4h_to_h",
                            .branch_norms = {"ln_attn", "ln_mlp"},
                            .final_norm = "transformer.ln_f"},
            },
        [ML_FAMILY_BLOOM] =
            {
                .model_type = "bloom",
                .read = ml_read_bloom,
                .classes = {"BloomForCausalLM"},
                .no_sdpa = true,  /* BloomPreTrainedModel sets no _supports_sdpa (4.57.6, 5.0.0, 5.24.0) */
                .no_flash = true, /* ... nor _supports_flash_attn (4.57.6, 5.24.0) */
                .sizes = SIZES(250880, 64, 0, 0, 0, 0, 2, 8, 0),
                .modules = {.embed = "transformer.word_embeddings",
                            .layer = "transformer.h.*",
                            .qkv = "self_attention.query_key_value",
                            .o = "self_attention.dense",
                            .up = "mlp.dense_h_to_4h",
                            .down = "mlp.dense_4h_to_h",
                            .final_norm = "transformer.ln_f"},
            },
        [ML_FAMILY_OPT] =
            {
                .model_type = "opt",
                .read = ml_read_opt,
                .classes = {"OPTForCausalLM"},
                .sizes = SIZES(50272, 768, 3072, 2048, 0, 0, 12, 12, 0),
                .modules = {.embed = "model.decoder.embed_tokens",
                            .layer = "model.decoder.layers.*",
                            .o = "self_attn.out_proj",
                            .up = "fc1",
                            .down = "fc2",
                            .norms = {"self_attn_layer_norm", "final_layer_norm"},
                            .final_norm = "model.decoder.final_layer_norm"},
            },
        [ML_FAMILY_STARCODER2] =
            {
                .model_type = "starcoder2",
                .read = ml_read_starcoder2,
                .classes = {"Starcoder2ForCausalLM"},
                .sizes = SIZES(49152, 3072, 12288, 4096, 0, 0, 30, 24, 2),
                .modules = {.up = "mlp.c_fc", .down = "mlp.c_proj"},
            },
        [ML_FAMILY_INTERNLM2] =
            {
                .model_type = "internlm2",
                .read = ml_read_internlm2,
                .classes = {"InternLM2ForCausalLM"},
                .modules = {.embed = "model.tok_embeddings",
                            .qkv = "attention.wqkv",
                            .o = "attention.wo",
                            .gate = "feed_forward.w1",
                            .up = "feed_forward.w3",
                            .down = "feed_forward.w2",
                            .norms = {"attention_norm", "ffn_norm"},
                            .lm_head = "output",
                            .lora_skip = {"output"}},
            },
        [ML_FAMILY_CHATGLM] =
            {
                .model_type = "chatglm",
                .read = ml_read_chatglm,
                .classes = {"ChatGLMModel", "ChatGLMForConditionalGeneration"},
                .modules = {.embed = "transformer.embedding.word_embeddings",
                            .layer = "transformer.encoder.layers.*",
                            .qkv = "self_attention.query_key_value",
                            .o = "self_attention.dense",
                            .gate_up = "mlp.dense_h_to_4h",
                            .down = "mlp.dense_4h_to_h",
                            .final_norm = "transformer.encoder.final_layernorm",
                            .lm_head = "transformer.output_layer",
                            .lora_skip = {"output_layer"}},
            },
        [ML_FAMILY_BAICHUAN] =
            {
                .model_type = "baichuan",
                .read = ml_read_baichuan,
                .classes = {"BaichuanForCausalLM"},
                .modules = {.qkv = "self_attn.W_pack"},
            },
        [ML_FAMILY_DEEPSEEK_V2] =
            {
                .model_type = "deepseek_v2",
                .read = ml_read_deepseek,
                .classes = {"DeepseekV2ForCausalLM"},
                .sizes = SIZES(102400, 4096, 11008, 2048, 0, 0, 32, 32, 0),
                .moe = {.experts = 0,
                        .top_k = 1,
                        .intermediate = 1407,
                        .n_group = 1,
                        .topk_group = 1,
                        .topk_method = "greedy"},
                /* MoEGate keeps its weight as a plain Parameter (not nn.Linear): not a LoRA target. */
                .modules = {.shared_expert = "mlp.shared_experts", .router_param = true},
            },
        [ML_FAMILY_DEEPSEEK_V3] =
            {
                .model_type = "deepseek_v3",
                .read = ml_read_deepseek,
                .classes = {"DeepseekV3ForCausalLM"},
                .sizes = SIZES(129280, 7168, 18432, 4096, 0, 0, 61, 128, 128),
                .moe = {.experts = 256,
                        .top_k = 8,
                        .intermediate = 2048,
                        .shared_experts = 1,
                        .n_group = 8,
                        .topk_group = 4,
                        .first_dense = 3,
                        .topk_method = "noaux_tc"},
                .modules = {.mtp_copies = true, .shared_expert = "mlp.shared_experts", .router_param = true},
            },
        [ML_FAMILY_BERT] =
            {
                .model_type = "bert",
                .read = ml_read_bert,
                .classes = {"BertForMaskedLM"},
                .sizes = SIZES(30522, 768, 3072, 512, 0, 0, 12, 12, 0),
                .stack = ML_STACK_ENCODER,
                /* BertSelfAttention.forward: softmax without dtype, dropout(attention_probs_dropout_prob 0.1). */
                .eager_softmax_act_dtype = true,
                .attn_dropout = true,
            },
        [ML_FAMILY_T5] = {.model_type = "t5",
                          .read = ml_read_t5,
                          .classes = {"T5ForConditionalGeneration"},
                          .no_flash = true, /* T5PreTrainedModel: no _supports_flash_attn (4.57.6), False (5.24.0) */
                          .sizes = SIZES(32128, 512, 2048, 0, 64, 0, 6, 8, 0),
                          .stack = ML_STACK_ENCODER_DECODER},
        /* The families below come from transformers' modeling_<type>.py (4.57 unless only v5 has it);
     * a vision-language model's text stack sits under model.language_model, its tower and
     * projector keys are LLaMA-Factory's (model/model_utils/visual.py COMPOSITE_MODELS). */
        [ML_FAMILY_GEMMA3] =
            {
                .model_type = "gemma3",
                .read = ml_read_gemma3,
                .classes = {"Gemma3ForConditionalGeneration"},
                .sizes = SIZES(262208, 2304, 9216, 131072, 256, 4096, 26, 8, 4),
                .vision = ML_VISION_SIGLIP,
                .modules = {.embed = "model.language_model.embed_tokens",
                            .layer = "model.language_model.layers.*",
                            .norms = {NULL, NULL, "pre_feedforward_layernorm", "post_feedforward_layernorm"},
                            .final_norm = "model.language_model.norm",
                            .vision = "model.vision_tower.vision_model",
                            .projector = "model.multi_modal_projector",
                            .vision_keys = {"vision_tower"},
                            .projector_keys = {"multi_modal_projector"}},
            },
        [ML_FAMILY_GEMMA3_TEXT] =
            {
                .model_type = "gemma3_text",
                .read = ml_read_gemma3,
                .classes = {"Gemma3ForCausalLM"},
                .sizes = SIZES(262208, 2304, 9216, 131072, 256, 4096, 26, 8, 4),
                .modules = {.norms = {NULL, NULL, "pre_feedforward_layernorm", "post_feedforward_layernorm"}},
            },
        [ML_FAMILY_LLAMA4] =
            {
                /* Llama4ForConditionalGeneration: language_model is a Llama4ForCausalLM; Llama4TextMoe keeps
         * its experts as two 3-D parameters and a router nn.Linear. */
                .model_type = "llama4",
                .read = ml_read_llama4,
                .classes = {"Llama4ForConditionalGeneration"},
                .no_flash = true, /* Llama4PreTrainedModel: _supports_flash_attn = False (4.57.6, 5.24.0) */
                .sizes = SIZES(202048, 5120, 8192, 131072, 128, 0, 48, 40, 8),
                .vision = ML_VISION_LLAMA4,
                .moe = {.experts = 16, .top_k = 1},
                .modules = {.embed = "language_model.model.embed_tokens",
                            .layer = "language_model.model.layers.*",
                            .final_norm = "language_model.model.norm",
                            .lm_head = "language_model.lm_head",
                            .gate = "feed_forward.gate_proj",
                            .up = "feed_forward.up_proj",
                            .down = "feed_forward.down_proj",
                            .experts = "feed_forward.experts",
                            .experts_packed = true,
                            .router = "feed_forward.router",
                            .shared_expert = "feed_forward.shared_expert",
                            .vision = "vision_model",
                            .projector = "multi_modal_projector",
                            .vision_keys = {"vision_model"},
                            .projector_keys = {"multi_modal_projector"}},
            },
        [ML_FAMILY_GPT_OSS] =
            {
                /* GptOssTopKRouter: weight and bias as bare parameters; GptOssExperts: packed, biased. */
                .model_type = "gpt_oss",
                .read = ml_read_gpt_oss,
                .classes = {"GptOssForCausalLM"},
                .no_sdpa = true, /* GptOssPreTrainedModel: _supports_sdpa = False (4.57.6, 5.0.0, 5.24.0) */
                .sizes = SIZES(201088, 2880, 2880, 131072, 64, 128, 36, 64, 8),
                .moe = {.experts = 128, .top_k = 4},
                .modules = {.sinks = "self_attn.sinks",
                            .experts = "mlp.experts",
                            .experts_packed = true,
                            .router = "mlp.router",
                            .router_param = true},
            },
        [ML_FAMILY_QWEN2_5_VL] =
            {
                .model_type = "qwen2_5_vl",
                .read = ml_read_qwen2_5_vl,
                .classes = {"Qwen2_5_VLForConditionalGeneration"},
                .sizes = SIZES(152064, 8192, 29568, 32768, 0, 4096, 80, 64, 8),
                .vision = ML_VISION_QWEN2_5,
                .modules = {.embed = "model.language_model.embed_tokens",
                            .layer = "model.language_model.layers.*",
                            .final_norm = "model.language_model.norm",
                            .vision = "model.visual",
                            .vision_keys = {"visual.patch_embed", "visual.blocks"},
                            .projector_keys = {"visual.merger"}},
            },
        [ML_FAMILY_QWEN3_VL] =
            {
                .model_type = "qwen3_vl",
                .read = ml_read_qwen3_vl,
                .classes = {"Qwen3VLForConditionalGeneration"},
                .sizes = SIZES(151936, 4096, 22016, 128000, 128, 0, 32, 32, 32),
                .vision = ML_VISION_QWEN3,
                .deepstack = 3, /* Qwen3VLVisionConfig deepstack_visual_indexes (8, 16, 24) */
                .modules = {.embed = "model.language_model.embed_tokens",
                            .layer = "model.language_model.layers.*",
                            .final_norm = "model.language_model.norm",
                            .vision = "model.visual",
                            .vision_keys = {"visual.pos_embed", "visual.patch_embed", "visual.blocks",
                                            "visual.deepstack_merger_list"},
                            .projector_keys = {"visual.merger"}},
            },
        [ML_FAMILY_QWEN3_VL_MOE] =
            {
                /* Qwen3VLMoeTextSparseMoeBlock: router nn.Linear, experts packed (Qwen3VLMoeTextExperts). */
                .model_type = "qwen3_vl_moe",
                .read = ml_read_qwen3_vl,
                .classes = {"Qwen3VLMoeForConditionalGeneration"},
                .sizes = SIZES(151936, 2048, 5632, 128000, 0, 0, 24, 16, 16),
                .vision = ML_VISION_QWEN3,
                .deepstack = 3, /* Qwen3VLVisionConfig deepstack_visual_indexes (8, 16, 24) */
                .moe = {.experts = 60, .top_k = 4, .intermediate = 1408}, /* Qwen3VLMoeTextConfig */
                .modules = {.embed = "model.language_model.embed_tokens",
                            .layer = "model.language_model.layers.*",
                            .final_norm = "model.language_model.norm",
                            .experts = "mlp.experts",
                            .experts_packed = true,
                            .vision = "model.visual",
                            .vision_keys = {"visual.pos_embed", "visual.patch_embed", "visual.blocks",
                                            "visual.deepstack_merger_list"},
                            .projector_keys = {"visual.merger"}},
            },
        [ML_FAMILY_QWEN3_NEXT] =
            {
                /* Qwen3NextGatedDeltaNet (fused in_proj_qkvz / in_proj_ba), Qwen3NextSparseMoeBlock. */
                .model_type = "qwen3_next",
                .read = ml_read_qwen3_next,
                .classes = {"Qwen3NextForCausalLM"},
                .sizes = SIZES(151936, 2048, 5632, 32768, 256, 0, 48, 16, 2),
                .moe = {.experts = 512, .top_k = 10, .intermediate = 512, .shared_intermediate = 512},
                .modules = {.linear_attn = "linear_attn",
                            .linear_fused = true,
                            .mtp_layer = "mtp.layers.*",
                            .mtp_fc = "mtp.fc",
                            .mtp_norms = {"mtp.pre_fc_norm_embedding", "mtp.pre_fc_norm_hidden", "mtp.norm"}},
            },
        [ML_FAMILY_QWEN3_5] =
            {
                /* Qwen3_5GatedDeltaNet (split in_proj_qkv / _z / _b / _a); the MTP block is the checkpoint's
         * mtp.* (not loaded by transformers). Only in transformers v5. */
                .model_type = "qwen3_5",
                .read = ml_read_qwen3_5,
                .classes = {"Qwen3_5ForConditionalGeneration"},
                .sizes = SIZES(248320, 4096, 12288, 32768, 256, 0, 32, 16, 4),
                .vision = ML_VISION_QWEN3,
                .modules = {.embed = "model.language_model.embed_tokens",
                            .layer = "model.language_model.layers.*",
                            .final_norm = "model.language_model.norm",
                            .linear_attn = "linear_attn",
                            .mtp_layer = "mtp.layers.*",
                            .mtp_fc = "mtp.fc",
                            .mtp_norms = {"mtp.pre_fc_norm_embedding", "mtp.pre_fc_norm_hidden", "mtp.norm"},
                            .vision = "model.visual",
                            .vision_keys = {"visual.pos_embed", "visual.patch_embed", "visual.blocks"},
                            .projector_keys = {"model.visual.merger"}},
            },
        [ML_FAMILY_QWEN3_5_MOE] =
            {
                .model_type = "qwen3_5_moe",
                .read = ml_read_qwen3_5,
                .classes = {"Qwen3_5MoeForConditionalGeneration"},
                .sizes = SIZES(248320, 2048, 0, 32768, 256, 0, 40, 16, 2),
                .vision = ML_VISION_QWEN3,
                .moe = {.experts = 256, .top_k = 8, .intermediate = 512, .shared_intermediate = 512},
                .modules = {.embed = "model.language_model.embed_tokens",
                            .layer = "model.language_model.layers.*",
                            .final_norm = "model.language_model.norm",
                            .linear_attn = "linear_attn",
                            .experts = "mlp.experts",
                            .experts_packed = true,
                            .experts_out_in = true,
                            .mtp_layer = "mtp.layers.*",
                            .mtp_fc = "mtp.fc",
                            .mtp_norms = {"mtp.pre_fc_norm_embedding", "mtp.pre_fc_norm_hidden", "mtp.norm"},
                            .vision = "model.visual",
                            .vision_keys = {"visual.pos_embed", "visual.patch_embed", "visual.blocks"},
                            .projector_keys = {"model.visual.merger"}},
            },
        [ML_FAMILY_DEEPSEEK_V32] =
            {
                /* DeepseekV32 = DeepSeek-V3 + DeepseekV32Indexer per layer (transformers v5, packed experts). */
                .model_type = "deepseek_v32",
                .read = ml_read_deepseek_v32,
                .classes = {"DeepseekV32ForCausalLM"},
                .sizes = SIZES(129280, 7168, 18432, 163840, 0, 0, 61, 128, 128),
                .moe = {.experts = 256,
                        .top_k = 8,
                        .intermediate = 2048,
                        .shared_experts = 1,
                        .n_group = 8,
                        .topk_group = 4,
                        .first_dense = 3,
                        .topk_method = "noaux_tc"},
                .modules = {.mtp_copies = true,
                            .shared_expert = "mlp.shared_experts",
                            .router_param = true,
                            .indexer = "self_attn.indexer",
                            .experts = "mlp.experts",
                            .experts_packed = true,
                            .experts_out_in = true},
            },
        [ML_FAMILY_GLM4_MOE] =
            {
                /* Glm4MoeTopkRouter keeps its weight as a bare parameter with e_score_correction_bias. */
                .model_type = "glm4_moe",
                .read = ml_read_glm4_moe,
                .classes = {"Glm4MoeForCausalLM"},
                .sizes = SIZES(151552, 4096, 10944, 131072, 0, 0, 46, 96, 8),
                .moe = {.experts = 128,
                        .top_k = 8,
                        .intermediate = 1408,
                        .shared_experts = 1,
                        .n_group = 1,
                        .topk_group = 1,
                        .first_dense = 1,
                        .topk_method = "noaux_tc"},
                .modules = {.mtp_copies = true, .shared_expert = "mlp.shared_experts", .router_param = true},
            },
};

_Static_assert(sizeof(families) / sizeof(families[0]) == ML_FAMILY_COUNT,
               "every enum ml_family needs its row in families[]");

const struct ml_family_def *ml_family_def(enum ml_family f)
{
    return (f >= 0 && f < ML_FAMILY_COUNT) ? &families[f] : NULL;
}

bool ml_family_find(const char *type, enum ml_family *out)
{
    for (int f = 0; f < ML_FAMILY_COUNT; f++) {
        const struct ml_family_def *d = &families[f];
        bool hit = d->model_type && !strcmp(d->model_type, type);
        for (size_t i = 0; !hit && i < sizeof(d->aliases) / sizeof(d->aliases[0]) && d->aliases[i]; i++)
            hit = !strcmp(d->aliases[i], type);
        if (hit) {
            *out = (enum ml_family)f;
            return true;
        }
    }
    return false;
}

bool ml_family_find_class(const char *cls, enum ml_family *out)
{
    for (int f = 0; f < ML_FAMILY_COUNT; f++)
        for (size_t i = 0; i < sizeof(families[f].classes) / sizeof(families[f].classes[0]) && families[f].classes[i];
             i++)
            if (!strcmp(families[f].classes[i], cls)) {
                *out = (enum ml_family)f;
                return true;
            }
    return false;
}

const char *ml_family_name(enum ml_family f)
{
    const struct ml_family_def *d = ml_family_def(f);
    return d && d->model_type ? d->model_type : "unknown";
}

size_t ml_arch_supported_types(char *out, size_t cap)
{
    size_t len = 0;
    if (out && cap)
        out[0] = '\0';
    for (int f = 0; f < ML_FAMILY_COUNT; f++) {
        char *dst = out && len < cap ? out + len : NULL;
        int n = snprintf(dst, dst ? cap - len : 0, "%s%s", f ? ", " : "", ml_family_name((enum ml_family)f));
        len += n > 0 ? (size_t)n : 0;
    }
    return len;
}

/* One name: the row's if it names one, else the default. */
static const char *pick(const char *row, const char *def)
{
    return row ? row : def;
}

/*
 * The defaults are the spelling most families share (LlamaForCausalLM and the many models built
 * on its layout); position and embed_norm are OPT's and BLOOM's, the only decoders with them.
 * Written as code, not as a second table, so that nothing here needs relocating at load time.
 */
void ml_family_modules(enum ml_family f, struct ml_module_names *out)
{
    const struct ml_family_def *fd = ml_family_def(f);
    static const struct ml_module_names none;
    *out = fd ? fd->modules : none;
    out->embed = pick(out->embed, "model.embed_tokens");
    out->position = pick(out->position, "model.decoder.embed_positions");
    out->embed_norm = pick(out->embed_norm, "transformer.word_embeddings_layernorm");
    out->layer = pick(out->layer, "model.layers.*");
    out->q = pick(out->q, "self_attn.q_proj");
    out->k = pick(out->k, "self_attn.k_proj");
    out->v = pick(out->v, "self_attn.v_proj");
    out->o = pick(out->o, "self_attn.o_proj");
    out->q_norm = pick(out->q_norm, "self_attn.q_norm");
    out->k_norm = pick(out->k_norm, "self_attn.k_norm");
    out->gate = pick(out->gate, "mlp.gate_proj");
    out->up = pick(out->up, "mlp.up_proj");
    out->down = pick(out->down, "mlp.down_proj");
    out->norms[0] = pick(out->norms[0], "input_layernorm");
    out->norms[1] = pick(out->norms[1], "post_attention_layernorm");
    out->final_norm = pick(out->final_norm, "model.norm");
    out->lm_head = pick(out->lm_head, "lm_head");
    out->experts = pick(out->experts, "mlp.experts.*");
    out->expert_gate = pick(out->expert_gate, "gate_proj");
    out->expert_up = pick(out->expert_up, "up_proj");
    out->expert_down = pick(out->expert_down, "down_proj");
    out->router = pick(out->router, "mlp.gate");
    out->shared_expert = pick(out->shared_expert, "mlp.shared_expert");
    out->shared_expert_gate = pick(out->shared_expert_gate, "mlp.shared_expert_gate");
    out->sinks = pick(out->sinks, "self_attn.sinks");
    out->indexer = pick(out->indexer, "self_attn.indexer");
    out->linear_attn = pick(out->linear_attn, "linear_attn");
    out->mtp_layer = pick(out->mtp_layer, "model.layers.mtp.*");
    out->mtp_fc = pick(out->mtp_fc, "model.layers.mtp.*.eh_proj");
    out->mtp_norms[0] = pick(out->mtp_norms[0], "model.layers.mtp.*.enorm");
    out->mtp_norms[1] = pick(out->mtp_norms[1], "model.layers.mtp.*.hnorm");
    out->mtp_norms[2] = pick(out->mtp_norms[2], "model.layers.mtp.*.shared_head.norm");
    out->vision = pick(out->vision, "model.visual");
}
