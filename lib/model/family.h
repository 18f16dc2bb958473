/*
 * family.h - the model family table (family.c) and the config readers (arch_read.c); private to
 * lib/model.
 *
 * One row per family holds everything memledger knows about it: the model_type spellings, the
 * reader that maps its config keys onto struct ml_arch, the class defaults of its MoE keys, the
 * module names its modeling file uses (for the inventory and PEFT's target names), the modules
 * LLaMA-Factory keeps out of LoRA "all", and the attributes copied into struct ml_arch. Code
 * outside lib/model sees only struct ml_arch: it tests attributes, never families.
 *
 * The readers see a config through struct ml_cfg_ops (objects, arrays, scalars), not through a
 * JSON library, so the table, the readers and the inventory are pure; arch_json.c supplies the
 * cJSON side.
 */
#ifndef ML_FAMILY_H
#define ML_FAMILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/status.h"

/* ---- a config document, as the readers see it ------------------------------------------- */

enum ml_cfg_kind {
    ML_CFG_ABSENT, /* no such member */
    ML_CFG_NULL,
    ML_CFG_BOOL,
    ML_CFG_NUMBER,
    ML_CFG_STRING,
    ML_CFG_ARRAY,
    ML_CFG_OBJECT
};

struct ml_cfg_value {
    enum ml_cfg_kind kind;
    bool b;          /* ML_CFG_BOOL */
    double num;      /* ML_CFG_NUMBER */
    const char *str; /* ML_CFG_STRING: NUL-terminated, owned by the document */
};

/* Nodes are opaque handles owned by the document; NULL stands for "absent". */
struct ml_cfg_ops {
    const void *(*member)(const void *obj, const char *key); /* NULL if obj has no such member */
    const void *(*first)(const void *list);                  /* first item of an array, or first member
                                                                value of an object; NULL if none */
    const void *(*next)(const void *item);                   /* following item, NULL at the end */
    void (*value)(const void *node, struct ml_cfg_value *v); /* NULL node: ML_CFG_ABSENT */
};

/* A NULL-terminated list of spellings of one key, the first present wins: KEYS("n_embd", "hidden_size"). */
#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/*
 * Map the config object root onto *out (zeroed first): model_type -> row, torch_dtype, the row's
 * reader, the row's attributes, then ml_arch_validate. Errors as ml_arch_from_json's, with
 * origin in the diagnostic.
 */
enum ml_status ml_arch_read(const struct ml_cfg_ops *ops, const void *root, const char *origin, struct ml_arch *out,
                            struct ml_diag *diag);

/* ---- the family table ----------------------------------------------------------------- */

/* Module names as the family's modeling file spells them. In a row, NULL means the default
 * (ml_family_modules fills it in: the Llama spelling most families share). */
struct ml_module_names {
    const char *embed;      /* token embedding: "model.embed_tokens" */
    const char *position;   /* learned absolute positions, when the arch has them */
    const char *embed_norm; /* norm right after the embedding, when the arch has one */
    const char *layer;      /* one decoder layer, '*' for the index: "model.layers.*" */
    const char *q, *k, *v;  /* separate projections (unused when qkv is set) */
    const char *qkv;        /* fused q/k/v projection; naming one fuses them */
    const char *o;
    const char *q_norm, *k_norm; /* per-head q/k norms, when the arch has them */
    const char *gate, *up;       /* MLP branches (up alone for a plain MLP) */
    const char *gate_up;         /* fused gate+up; naming one fuses them */
    const char *down;
    const char *norms[4];        /* per-layer norms in order, norms_per_layer of them */
    const char *branch_norms[2]; /* instead of norms[0..1] when arch->branch_norms */
    const char *final_norm;
    const char *lm_head;
    const char *experts; /* routed experts, '*' for the index: "mlp.experts.*" */
    const char *expert_gate, *expert_up, *expert_down;
    const char *router;             /* "mlp.gate" */
    const char *shared_expert;      /* the shared expert MLP: "mlp.shared_expert" */
    const char *shared_expert_gate; /* its sigmoid gate (arch->shared_expert_gate) */
    const char *sinks;              /* per-head attention sinks (arch->attn_sinks) */
    const char *indexer;            /* DeepSeek-V3.2 lightning indexer module */
    const char *linear_attn;        /* Gated DeltaNet module of a linear-attention layer */
    bool linear_fused;              /* its input projections fused (in_proj_qkvz, in_proj_ba: Qwen3-Next)
                                       rather than split (in_proj_qkv/_z/_b/_a: Qwen3.5) */
    bool experts_packed;            /* experts stored as two 3-D parameters (experts.gate_up_proj,
                                       experts.down_proj), not one nn.Linear per expert */
    bool experts_out_in;            /* ... stored out x in (transformers v5), not in x out */
    const char *mtp_layer;          /* the MTP decoder layer, '*' for the index */
    const char *mtp_fc;             /* its input projection (2h -> h) */
    const char *mtp_norms[3];       /* its three norms: embedding, hidden state, output */
    bool mtp_copies;                /* the checkpoint's MTP layer also stores its own embed_tokens
                                       and shared_head.head (DeepSeek-V3's layer 61, GLM-4.5's 92) */
    const char *vision;             /* the vision tower module ("model.visual") */
    const char *projector;          /* the multimodal projector, when not inside the tower */
    const char *vision_keys[4];     /* LLaMA-Factory's vision_model_keys (freeze_vision_tower), NULL-ended */
    const char *projector_keys[2];  /* LLaMA-Factory's projector_keys (freeze_multi_modal_projector) */
    const char *lora_skip[3];       /* module-name parts LoRA "all" skips besides lm_head, NULL-ended:
                                       LLaMA-Factory's forbidden_modules (find_all_linear_modules;
                                       a multimodal family adds its projector keys) */
    bool conv1d;                    /* projections are GPT-2 Conv1D (in x out, biased), not nn.Linear */
    bool router_param;              /* the router weight is a bare nn.Parameter, not an nn.Linear */
};

/* Class defaults of the MoE keys (what the configuration class assumes when a key is absent). */
struct ml_moe_defaults {
    uint32_t experts;             /* routed experts */
    uint32_t top_k;               /* routed experts per token */
    uint64_t intermediate;        /* expert FFN width */
    uint64_t shared_intermediate; /* shared expert width (Qwen-MoE) */
    uint32_t shared_experts;      /* shared experts fused into one MLP (DeepSeek) */
    uint32_t n_group, topk_group; /* group-limited routing (DeepSeek) */
    uint32_t first_dense;         /* leading dense layers (first_k_dense_replace) */
    const char *topk_method;      /* routing method ("noaux_tc" adds a correction bias) */
};

/* Class defaults of the size keys of the family's (text) configuration class: what transformers
 * reads when the key is absent (a Gemma 3 text_config without vocab_size has 262,208 rows).
 * 0: the key has no default here and is required (remote-code configs), or, for kv_heads and
 * head_dim, "as many as the attention heads" and "hidden / heads". docs/models.md lists them. */
struct ml_size_defaults {
    uint64_t vocab, hidden, intermediate, positions, head_dim;
    uint64_t window; /* sliding_window when the key is absent (not when it is null) */
    uint32_t layers, heads, kv_heads;
};

struct ml_family_def;
struct ml_reader; /* arch_int.h: the config being read, its origin and diagnostics */

/* Fills *a from the config (sizes, biases, norms, MoE, attention layout) for one family. */
typedef void ml_family_reader(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a);

struct ml_family_def {
    const char *model_type;         /* canonical model_type, as `memledger models --types` lists it */
    const char *aliases[3];         /* other model_type spellings read the same way; NULL-ended */
    const char *classes[3];         /* the model classes a config's "architectures" names for it
                                       (modeling_<type>.py), for a model_type read through them */
    ml_family_reader *read;         /* config keys -> struct ml_arch */
    struct ml_size_defaults sizes;  /* the configuration class's size defaults */
    struct ml_moe_defaults moe;     /* for MoE readers */
    struct ml_module_names modules; /* for the inventory and LoRA */
    /* Attributes copied into struct ml_arch (see arch.h). */
    enum ml_stack stack;
    bool attn_softcap;
    enum ml_vision_kind vision; /* the tower the family's vision_config describes */
    uint32_t deepstack;         /* deepstack mergers when vision_config has no deepstack_visual_indexes */
    bool loss_in_param_dtype, eager_softmax_act_dtype, attn_dropout;
    /* The configuration class's default activation is "gelu_new" (GPT2Config activation_function,
     * PhiConfig hidden_act): read when the config names none (docs/ledger.md O13). */
    bool gelu_new_default;
    /* The family's transformers model class does not set _supports_sdpa (modeling_<type>.py):
     * get_correct_attn_implementation falls back to eager when no attention is asked and raises
     * when "sdpa" is (modeling_utils.py _sdpa_can_dispatch). Read on transformers 4.57.6, 5.0.0 and
     * 5.24.0; families whose declaration changed between those releases are not marked (docs/ledger.md
     * "Attention transformers refuses"). */
    bool no_sdpa;
    /* The model class does not set _supports_flash_attn: "flash_attention_2" raises
     * (modeling_utils.py _flash_attn_can_dispatch). Read on 4.57.6 and 5.24.0. */
    bool no_flash;
};

/* Row of family f, or NULL if f is out of range. */
const struct ml_family_def *ml_family_def(enum ml_family f);

/* Family whose model_type or alias is exactly type; false if none. */
bool ml_family_find(const char *type, enum ml_family *out);

/* Family one of whose classes is exactly cls ("DeepseekV3ForCausalLM"); false if none. */
bool ml_family_find_class(const char *cls, enum ml_family *out);

/* The module names of family f: its row's names over the defaults (never NULL where the default
 * has a name). Unknown f: the defaults. */
void ml_family_modules(enum ml_family f, struct ml_module_names *out);

/* ---- readers (arch_read.c), one per config layout; a row names one ----------------------- */

ml_family_reader ml_read_llama, ml_read_mistral, ml_read_mixtral, ml_read_qwen, ml_read_qwen2, ml_read_qwen2_moe,
    ml_read_qwen3, ml_read_qwen3_moe, ml_read_gemma, ml_read_gemma2, ml_read_phi, ml_read_phi3, ml_read_gpt2,
    ml_read_gpt_neox, ml_read_falcon, ml_read_bloom, ml_read_opt, ml_read_starcoder2, ml_read_internlm2,
    ml_read_chatglm, ml_read_baichuan, ml_read_deepseek, ml_read_bert, ml_read_t5, ml_read_gemma3, ml_read_llama4,
    ml_read_gpt_oss, ml_read_qwen2_5_vl, ml_read_qwen3_vl, ml_read_qwen3_next, ml_read_qwen3_5, ml_read_deepseek_v32,
    ml_read_glm4_moe;

#endif /* ML_FAMILY_H */
