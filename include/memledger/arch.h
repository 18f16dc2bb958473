/*
 * arch.h - a model architecture as memledger needs it, read from a Hugging Face config.json.
 *
 * struct ml_arch is a plain value (no pointers, nothing to free). ml_arch_from_json maps the
 * keys of one config.json into it for the supported model_types; missing keys take the
 * defaults of the model family's transformers configuration class (docs/models.md lists them),
 * except the size keys without a sensible default, which are an error naming the key.
 * The mapping is bytes in, struct out: no file I/O.
 */
#ifndef ML_ARCH_H
#define ML_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/status.h"

/*
 * Model families: one per supported Hugging Face model_type (aliases map onto these). Each id is
 * a row of the family table (lib/model/family.c, which says how to add one); code outside
 * lib/model names a family only to display it (ml_family_name) and tests the attributes of
 * struct ml_arch instead.
 */
enum ml_family {
    ML_FAMILY_LLAMA,
    ML_FAMILY_MISTRAL,
    ML_FAMILY_MIXTRAL,
    ML_FAMILY_QWEN, /* Qwen v1, remote code QWenLMHeadModel */
    ML_FAMILY_QWEN2,
    ML_FAMILY_QWEN2_MOE,
    ML_FAMILY_QWEN3,
    ML_FAMILY_QWEN3_MOE,
    ML_FAMILY_GEMMA,
    ML_FAMILY_GEMMA2,
    ML_FAMILY_PHI,
    ML_FAMILY_PHI3,
    ML_FAMILY_GPT2,
    ML_FAMILY_GPT_NEOX,
    ML_FAMILY_FALCON,
    ML_FAMILY_BLOOM,
    ML_FAMILY_OPT,
    ML_FAMILY_STARCODER2,
    ML_FAMILY_INTERNLM2,
    ML_FAMILY_CHATGLM,
    ML_FAMILY_BAICHUAN,
    ML_FAMILY_DEEPSEEK_V2,
    ML_FAMILY_DEEPSEEK_V3,
    ML_FAMILY_BERT,
    ML_FAMILY_T5,
    ML_FAMILY_GEMMA3,      /* Gemma3ForConditionalGeneration: text + SigLIP tower */
    ML_FAMILY_GEMMA3_TEXT, /* Gemma3ForCausalLM (gemma-3-1b) */
    ML_FAMILY_LLAMA4,
    ML_FAMILY_GPT_OSS,
    ML_FAMILY_QWEN2_5_VL,
    ML_FAMILY_QWEN3_VL,
    ML_FAMILY_QWEN3_VL_MOE,
    ML_FAMILY_QWEN3_NEXT,
    ML_FAMILY_QWEN3_5,
    ML_FAMILY_QWEN3_5_MOE,
    ML_FAMILY_DEEPSEEK_V32,
    ML_FAMILY_GLM4_MOE,
    ML_FAMILY_COUNT
};

/* Parameter dtype a checkpoint declares (torch_dtype). */
enum ml_dtype {
    ML_DTYPE_UNKNOWN,
    ML_DTYPE_FP32,
    ML_DTYPE_FP16,
    ML_DTYPE_BF16,
    ML_DTYPE_FP8,
    ML_DTYPE_INT8,
    ML_DTYPE_INT4
};

enum ml_norm_kind {
    ML_NORM_RMS,  /* weight only */
    ML_NORM_LAYER /* weight + bias */
};

/* How the layers are stacked. */
enum ml_stack {
    ML_STACK_DECODER,        /* decoder-only causal LM */
    ML_STACK_ENCODER,        /* encoder-only (BERT): n_layers encoder layers */
    ML_STACK_ENCODER_DECODER /* T5: n_encoder_layers + n_layers decoder layers */
};

/* Most decoder layers memledger accepts; bounds the MoE layer mask. */
#define ML_MAX_LAYERS 1024

/* Attention of one decoder layer (the config's layer_types; docs/models.md). */
enum ml_layer_attn {
    ML_LAYER_FULL,    /* full causal attention: the KV cache holds every token */
    ML_LAYER_SLIDING, /* sliding window: at most sliding_window tokens of KV */
    ML_LAYER_CHUNKED, /* chunked local attention (Llama 4): at most attn_chunk tokens of KV */
    ML_LAYER_LINEAR   /* linear attention (Gated DeltaNet): a fixed state per sequence, no KV */
};

/* Gated DeltaNet linear-attention layers (Qwen3-Next, Qwen3.5); all 0 when there are none. */
struct ml_linear_attn {
    uint32_t k_heads, v_heads; /* linear_num_key_heads, linear_num_value_heads */
    uint64_t k_dim, v_dim;     /* linear_key_head_dim, linear_value_head_dim */
    uint32_t conv_kernel;      /* linear_conv_kernel_dim (causal conv1d width) */
    enum ml_dtype state_dtype; /* recurrent state dtype (mamba_ssm_dtype; default fp32) */
};

/* The vision tower of a vision-language model (vision_config); kind NONE for text models. */
enum ml_vision_kind {
    ML_VISION_NONE,
    ML_VISION_SIGLIP,  /* SiglipVisionModel (Gemma 3) */
    ML_VISION_QWEN2_5, /* Qwen2_5_VisionTransformerPretrainedModel */
    ML_VISION_QWEN3,   /* Qwen3VLVisionModel (Qwen3-VL, Qwen3.5) */
    ML_VISION_LLAMA4   /* Llama4VisionModel */
};

struct ml_vision {
    enum ml_vision_kind kind;
    uint32_t depth; /* encoder blocks */
    uint32_t heads;
    uint64_t hidden;                  /* tower width */
    uint64_t intermediate;            /* tower MLP width */
    uint32_t patch;                   /* patch side, pixels */
    uint32_t temporal_patch;          /* frames per patch (Qwen); 1 otherwise */
    uint32_t merge;                   /* spatial merge (Qwen merger, 2 = 2x2 patches per token) */
    uint32_t channels;                /* input channels */
    uint64_t image_size;              /* fixed input side (SigLIP, Llama 4 tiles); 0 = dynamic */
    uint64_t positions;               /* rows of the learned position table; 0 = none */
    uint64_t out_hidden;              /* merger output width (the text width) */
    uint32_t deepstack;               /* Qwen3-VL deepstack mergers (deepstack_visual_indexes) */
    uint64_t adapter_in, adapter_out; /* Llama 4 pixel-shuffle MLP (projector_input/output_dim) */
    uint64_t vision_out;              /* Llama 4 vision_output_dim (the projector's input) */
    uint32_t tokens_per_image; /* fixed tokens per image (Gemma 3 mm_tokens_per_image); 0 = from the resolution */
};

/* The weight format of a quantized checkpoint (config.json quantization_config; docs/ledger.md
 * "Quantized checkpoints"). */
enum ml_wq_method {
    ML_WQ_NONE,
    ML_WQ_FP8,  /* fp8 e4m3 weights; weight_block_size block scales (fp32) or per tensor */
    ML_WQ_AWQ,  /* AutoAWQ: packed bits, fp16 scale + packed zero per group */
    ML_WQ_GPTQ, /* GPTQ: packed bits, fp16 scale + packed zero per group, g_idx with desc_act */
    ML_WQ_BNB4, /* bitsandbytes 4-bit (nf4 / fp4), fp32 absmax per 64 (or double-quantized) */
    ML_WQ_BNB8, /* bitsandbytes LLM.int8: 1 B + an fp32 scale per row */
    ML_WQ_INT,  /* compressed-tensors integer weights (pack-quantized), 16-bit scales per group */
    ML_WQ_MXFP4 /* MXFP4 (gpt-oss): 4-bit E2M1 + an E8M0 scale per 32 values */
};

#define ML_WQ_MAX_SKIP 16

struct ml_weight_quant {
    enum ml_wq_method method;
    uint32_t bits;                /* stored bits per weight */
    uint32_t group;               /* inputs per scale; 0 = one scale per output row (or per tensor, fp8) */
    uint32_t block_out, block_in; /* fp8 weight_block_size, 0 = per-tensor scale */
    uint32_t scale_bytes;         /* bytes per scale */
    bool zero;                    /* a zero point per group, `bits` wide */
    bool g_idx;                   /* GPTQ desc_act: an int32 group index per input column */
    bool double_quant;            /* bitsandbytes bnb_4bit_use_double_quant */
    bool fp4;                     /* bitsandbytes fp4 rather than nf4 */
    bool lm_head;                 /* the output head is quantized too (GPTQ lm_head) */
    bool experts_only;            /* only the routed experts (MXFP4 as gpt-oss ships it) */
    bool from_name;               /* what the checkpoint's name states (ml_arch_apply_name_quant), not its config */
    uint32_t n_skip;
    char skip[ML_WQ_MAX_SKIP][64]; /* module-name patterns kept unquantized (modules_to_not_convert,
                                      compressed-tensors ignore, llm_int8_skip_modules) */
    char name[24];                 /* quant_method as written */
};

/* Rotary scaling as config.json declares it (rope_scaling / rope_parameters). */
enum ml_rope_kind {
    ML_ROPE_NONE,
    ML_ROPE_LINEAR,
    ML_ROPE_DYNAMIC,
    ML_ROPE_YARN,
    ML_ROPE_LLAMA3,
    ML_ROPE_LONGROPE,
    ML_ROPE_OTHER
};

struct ml_arch {
    char model_type[32];       /* model_type as written in the config ("qwen2") */
    char read_note[320];       /* how a model_type transformers does not know was read (through its
                                  architectures, or its nested language model), "" otherwise */
    enum ml_family family;     /* the family it maps to (for display; test the attributes) */
    enum ml_dtype torch_dtype; /* declared checkpoint dtype, ML_DTYPE_UNKNOWN if absent */
    enum ml_stack stack;       /* decoder-only, encoder-only or encoder-decoder */

    uint32_t n_layers;          /* decoder layers (encoder layers for BERT) */
    uint32_t n_encoder_layers;  /* T5 encoder layers (0 for decoder-only models) */
    uint64_t hidden;            /* hidden size d_model */
    uint32_t n_heads;           /* attention (query) heads */
    uint32_t n_kv_heads;        /* key/value heads: = n_heads MHA, < GQA, 1 MQA */
    uint64_t head_dim;          /* per-head width of q and k (and v unless MLA) */
    uint64_t intermediate;      /* dense FFN width (per branch for gated MLPs) */
    uint64_t vocab;             /* embedding rows (padded vocab where the model pads) */
    uint64_t max_positions;     /* context length the config declares, tokens */
    uint64_t learned_positions; /* rows of a learned absolute position table; 0 = none */
    uint64_t type_vocab;        /* BERT token-type rows; 0 = none */
    uint64_t rotary_dim;        /* rotary dimensions per head (partial rotary); 0 = none */

    bool tie_embeddings;            /* lm_head shares the input embedding */
    bool qkv_bias;                  /* q/k/v projections have biases */
    bool o_bias;                    /* attention output projection has a bias */
    bool mlp_bias;                  /* MLP projections have biases */
    bool lm_head_bias;              /* lm_head has a bias (Phi-1/2) */
    bool qk_norm;                   /* per-head norm on q and k (Qwen3; Phi qk_layernorm) */
    enum ml_norm_kind qk_norm_kind; /* its flavour: RMSNorm (Qwen3), LayerNorm (Phi) */
    bool gated_mlp;                 /* gate/up/down (SwiGLU, GeGLU); false = up/down */
    enum ml_norm_kind norm;         /* norm flavour of the blocks */
    uint32_t norms_per_layer;       /* norm modules per decoder layer */
    bool final_norm;                /* a norm after the last layer */
    bool embed_norm;                /* a norm right after the embedding (BLOOM) */
    bool branch_norms;              /* attention and MLP branches each have their own input norm
                                       (Falcon's new decoder architecture: ln_attn, ln_mlp) */

    /* Mixture of experts (n_experts == 0 for dense models). */
    uint32_t n_experts;                        /* routed experts per MoE layer */
    uint32_t top_k;                            /* routed experts per token */
    uint64_t moe_intermediate;                 /* expert FFN width */
    uint32_t n_shared_experts;                 /* DeepSeek shared experts (fused into one MLP) */
    uint64_t shared_intermediate;              /* width of the shared-expert MLP (total, fused) */
    bool shared_expert_gate;                   /* Qwen-MoE sigmoid gate on the shared expert (h x 1) */
    bool router_bias;                          /* DeepSeek-V3 e_score_correction_bias (E) */
    uint32_t n_group;                          /* DeepSeek group-limited routing: groups */
    uint32_t topk_group;                       /* ... groups each token may use */
    uint8_t moe_layer_mask[ML_MAX_LAYERS / 8]; /* bit i set: decoder layer i is an MoE layer */

    /* Multi-head latent attention (DeepSeek-V2/V3); all 0 otherwise. */
    uint64_t q_lora_rank;      /* 0 = plain q_proj */
    uint64_t kv_lora_rank;     /* latent width cached per token */
    uint64_t qk_nope_head_dim; /* per-head q/k width without rotary */
    uint64_t qk_rope_head_dim; /* per-head rotary width (shared key part) */
    uint64_t v_head_dim;       /* per-head value width */
    uint32_t n_mtp_layers;     /* next-token-prediction layers; counted apart, not in total */

    /* Attention layout. */
    uint64_t sliding_window;           /* tokens of the sliding layers, 0 = no sliding layers */
    uint64_t attn_chunk;               /* tokens of the chunked layers (attention_chunk_size), 0 = none */
    uint8_t layer_attn[ML_MAX_LAYERS]; /* enum ml_layer_attn of decoder layer i */
    bool q_gate;                       /* q_proj also yields a sigmoid output gate (attn_output_gate: 2x rows) */
    bool attn_sinks;                   /* a learned sink logit per head and layer (gpt-oss `sinks`) */
    struct ml_linear_attn lin;         /* the linear-attention layers' shape */
    uint64_t index_heads;              /* DeepSeek-V3.2 lightning indexer heads (index_n_heads); 0 = none */
    uint64_t index_head_dim;           /* ... and its key width (index_head_dim), cached per token */
    bool expert_bias;                  /* experts' projections have biases (gpt-oss) */
    bool router_linear_bias;           /* the router has a bias (gpt-oss), not a correction bias */
    struct ml_vision vision;           /* the vision tower, counted apart from the language model */

    /* Weights as the checkpoint stores them (quantization_config; method NONE = torch_dtype). */
    struct ml_weight_quant wq;

    /* Context length. */
    enum ml_rope_kind rope;     /* rope_scaling / rope_parameters type; NONE if absent or default */
    uint64_t rope_factor_milli; /* its factor x 1000 (1000 when absent) */
    uint64_t rope_original;     /* original_max_position_embeddings (yarn), 0 if absent */
    uint64_t engine_max_len;    /* the serving engines' derived max_model_len (vLLM's rule, docs/models.md) */
    uint64_t model_max_length;  /* model_max_length when the config has one (vLLM accepts up to it), else 0 */
    uint32_t rel_attn_buckets;  /* T5 relative-position buckets (first layer of each stack) */
    bool attn_softcap;          /* attention logits are soft-capped (Gemma 2): SDPA kernels
                                   cannot, so LLaMA-Factory runs eager attention unless fa2 */
    /* Training-time behaviour of the family's modeling code (family table). */
    bool loss_in_param_dtype;     /* before transformers 4.46 the causal-LM loss runs on logits in
                                     the parameter dtype (no logits.float(): GPT-2, Qwen v1) */
    bool eager_softmax_act_dtype; /* eager softmax in the activation dtype, not dtype=float32
                                     (GPT2Attention._attn, BertSelfAttention) */
    bool attn_dropout;            /* attention-probability dropout is on in training by the config's
                                     default (GPT-2 attn_pdrop, BERT attention_probs_dropout_prob) */
    bool mlp_gelu_new;            /* the MLP activation is transformers' NewGELUActivation (the config's
                                     hidden_act / activation_function "gelu_new": GPT-2, Phi), written in
                                     Python ops that each keep a tensor for backward (docs/ledger.md O13) */
    bool no_sdpa;                 /* the model class declares no SDPA support (_supports_sdpa unset):
                                     transformers picks eager by default and refuses "sdpa" */
    bool no_flash;                /* ... no FlashAttention support (_supports_flash_attn unset):
                                     transformers refuses "flash_attention_2" */
};

/* "qwen2" for ML_FAMILY_QWEN2; never NULL. */
const char *ml_family_name(enum ml_family f);

/* "bf16"; never NULL. */
const char *ml_dtype_name(enum ml_dtype d);

/*
 * The supported model_type values, comma-separated in family-table order ("llama, mistral, ...";
 * aliases left out), into out (NUL-terminated, cut at cap - 1 bytes). Returns the full length.
 */
size_t ml_arch_supported_types(char *out, size_t cap);

/* Is decoder layer i an MoE layer? */
bool ml_arch_layer_is_moe(const struct ml_arch *a, uint32_t i);

/* Attention kind of decoder layer i (ML_LAYER_FULL past the last layer). */
enum ml_layer_attn ml_arch_layer_attn(const struct ml_arch *a, uint32_t i);

/* Number of decoder layers of attention kind k. */
uint32_t ml_arch_n_layers_attn(const struct ml_arch *a, enum ml_layer_attn k);

/* Bytes of one sequence's recurrent state in one linear-attention layer: the causal conv1d's
 * last (K - 1) inputs at elem_bytes + the v_heads x k_dim x v_dim state at the state dtype. */
uint64_t ml_arch_linear_state_bytes(const struct ml_arch *a, uint64_t elem_bytes);

/* Is the module at path kept unquantized by wq's skip patterns? A pattern matches as
 * transformers' should_convert_module does: the module path starts with it (its '*' matching one
 * path part, "model.layers.*.self_attn") or ends with it ("lm_head", "mlp.gate"); a
 * compressed-tensors "re:" pattern by its literal core. Digits in a pattern match the path's '*'. */
bool ml_wq_skips(const struct ml_weight_quant *wq, const char *path);

/* "awq 4-bit, group 128" into out; "" for NONE. */
void ml_wq_describe(const struct ml_weight_quant *wq, char *out, size_t cap);

/* "full", "sliding", "chunked", "linear"; never NULL. */
const char *ml_layer_attn_name(enum ml_layer_attn k);

/* Number of MoE decoder layers. */
uint32_t ml_arch_n_moe_layers(const struct ml_arch *a);

/*
 * Parse config.json bytes into *out. origin names the file for diagnostics. Errors:
 * ML_ERR_PARSE (malformed JSON, with line and column), ML_ERR_INVALID (wrong type, negative,
 * non-integral or absurd value, naming the key), ML_ERR_UNSUPPORTED (unknown model_type,
 * naming the supported ones), ML_ERR_TOOBIG (input over 16 MiB).
 */
enum ml_status ml_arch_from_json(const char *data, size_t len, const char *origin, struct ml_arch *out,
                                 struct ml_diag *diag);

/* Structural checks shared by every source of an ml_arch (dimensions nonzero and in range). */
enum ml_status ml_arch_validate(const struct ml_arch *a, struct ml_diag *diag);

#endif /* ML_ARCH_H */
