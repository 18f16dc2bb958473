/*
 * inventory.h - the exact parameter inventory of a model: every parameter tensor by module.
 *
 * ml_inventory_build walks the module list transformers instantiates for the architecture
 * (embeddings, every linear weight and bias that exists, norms, routers, experts, lm_head)
 * and records each tensor once with its shape and the number of copies (layers, experts).
 * Totals are unique parameters: a tied lm_head is listed but not counted; an MTP block
 * (DeepSeek, GLM-4.5, Qwen3.5) is listed but kept out of the total. A vision-language model's
 * tower and projector are in the total and in their own groups. Pure: struct in, struct out,
 * no allocation.
 */
#ifndef ML_INVENTORY_H
#define ML_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/status.h"

enum ml_module_kind {
    ML_MOD_EMBEDDING, /* token embedding */
    ML_MOD_POSITION,  /* learned absolute positions, token types */
    ML_MOD_ATTN_Q,
    ML_MOD_ATTN_K,
    ML_MOD_ATTN_V,
    ML_MOD_ATTN_QKV, /* fused q/k/v projection */
    ML_MOD_ATTN_O,
    ML_MOD_ATTN_REL, /* T5 relative position bias */
    ML_MOD_MLA_Q_A,  /* MLA q down-projection (q_a_proj) */
    ML_MOD_MLA_Q_B,  /* MLA q up-projection (q_b_proj) */
    ML_MOD_MLA_KV_A, /* MLA kv down-projection incl. the rope key (kv_a_proj_with_mqa) */
    ML_MOD_MLA_KV_B, /* MLA kv up-projection (kv_b_proj) */
    ML_MOD_MLA_NORM, /* q_a_layernorm, kv_a_layernorm */
    ML_MOD_QK_NORM,  /* per-head q/k norms */
    ML_MOD_MLP_GATE,
    ML_MOD_MLP_UP,
    ML_MOD_MLP_GATE_UP, /* fused gate+up (Phi-3, ChatGLM) */
    ML_MOD_MLP_DOWN,
    ML_MOD_EXPERT,        /* routed experts' projections */
    ML_MOD_SHARED_EXPERT, /* shared experts' projections and gate */
    ML_MOD_ROUTER,        /* router weights and correction bias */
    ML_MOD_NORM,          /* block and final norms */
    ML_MOD_LM_HEAD,       /* output projection (and its bias) */
    ML_MOD_MTP,           /* DeepSeek next-token-prediction block (outside the total) */
    ML_MOD_LINEAR_ATTN,   /* Gated DeltaNet layers: projections, conv1d, gates, norm */
    ML_MOD_ATTN_SINK,     /* per-head attention sink logits (gpt-oss) */
    ML_MOD_INDEXER,       /* DeepSeek-V3.2 lightning indexer */
    ML_MOD_VISION,        /* vision tower: patch embedding, positions, encoder blocks */
    ML_MOD_PROJECTOR,     /* vision -> text projector / merger */
    ML_MOD_COUNT
};

/* Module groups for display and JSON ("attention", "mlp", ...). */
enum ml_module_group {
    ML_GROUP_EMBEDDING,
    ML_GROUP_ATTENTION,
    ML_GROUP_LINEAR_ATTENTION,
    ML_GROUP_MLP,
    ML_GROUP_EXPERTS,
    ML_GROUP_SHARED_EXPERTS,
    ML_GROUP_ROUTER,
    ML_GROUP_NORMS,
    ML_GROUP_LM_HEAD,
    ML_GROUP_VISION,
    ML_GROUP_PROJECTOR,
    ML_GROUP_MTP,
    ML_GROUP_COUNT
};

struct ml_tensor {
    enum ml_module_kind kind; /* what the tensor is */
    char path[88];            /* module path with '*' for indices: "model.layers.*.self_attn.q_proj" */
    char param[8];            /* "weight" or "bias" */
    uint64_t rows;            /* first stored dimension (out_features for nn.Linear) */
    uint64_t cols;            /* second stored dimension; 0 for a 1-D tensor */
    uint64_t copies;          /* instances in the model (layers, layers x experts) */
    uint64_t active_copies;   /* instances a token uses (MoE: layers x top_k); = copies if dense */
    uint64_t params;          /* copies x rows x max(cols, 1); 0 if tied */
    bool linear;              /* weight of an nn.Linear-class module (LoRA "all" may target it) */
    bool conv1d;              /* weight of a GPT-2 Conv1D (stored in x out; not nn.Linear) */
    bool tied;                /* shares storage with the embedding: listed, not counted */
    bool mtp;                 /* part of the MTP block: counted in mtp_params, not total */
    bool packed;              /* experts stored as one 3-D parameter (E x in x out): a matmul weight
                                 that is not an nn.Linear (LoRA "all" does not see it) */
    bool keep_fp32;           /* kept in fp32 whatever the load dtype (_keep_in_fp32_modules) */
    uint64_t in_features;     /* linear/conv1d/packed only: input width */
    uint64_t out_features;    /* linear/conv1d/packed only: output width */
};

#define ML_INVENTORY_MAX 128

struct ml_inventory {
    struct ml_tensor t[ML_INVENTORY_MAX]; /* tensors in module order */
    uint32_t n;                           /* used entries */
    uint64_t total_params;                /* unique parameters, MTP excluded */
    uint64_t active_params;               /* parameters a token uses: = total for a dense model; for
                                             an MoE model its text model with the top-k routed experts
                                             (the vision tower left out, as the cards count) */
    uint64_t embedding_params;            /* token + position embeddings (incl. untied lm_head? no) */
    uint64_t mtp_params;                  /* unique MTP parameters (shared embedding/head excluded) */
    uint64_t mtp_stored_params;           /* the MTP layers as the checkpoint stores them: unique, plus
                                             the embedding and head copies DeepSeek-V3 and GLM-4.5 keep
                                             in them (total + this = the Hub's count) */
    uint64_t by_group[ML_GROUP_COUNT];    /* total_params split by group (MTP in its own group) */
};

/* Display names: "attention", "q_proj weight" kinds etc.; never NULL. */
const char *ml_module_kind_name(enum ml_module_kind k);
const char *ml_module_group_name(enum ml_module_group g);
enum ml_module_group ml_module_kind_group(enum ml_module_kind k);

/*
 * Build the inventory of arch into *inv. Errors: ML_ERR_OVERFLOW if a count overflows u64,
 * ML_ERR_INVALID for an arch that fails ml_arch_validate.
 */
enum ml_status ml_inventory_build(const struct ml_arch *arch, struct ml_inventory *inv, struct ml_diag *diag);

/* LoRA targets as PEFT matches them: module leaf names, or "all". */
#define ML_LORA_MAX_TARGETS 32

struct ml_lora_targets {
    bool all;                            /* "all": every linear but the output head */
    uint32_t n;                          /* explicit names */
    char names[ML_LORA_MAX_TARGETS][32]; /* leaf names: "q_proj" */
};

/*
 * Parse a target list "q_proj,v_proj" or "all" (spaces allowed; empty items between commas are
 * skipped). ML_ERR_INVALID for a list with no name at all, a name over 31 characters, or more
 * than ML_LORA_MAX_TARGETS names.
 */
enum ml_status ml_lora_targets_parse(const char *s, struct ml_lora_targets *out, struct ml_diag *diag);

struct ml_lora_count {
    uint64_t params;       /* LoRA A + B parameters: r x (in + out) per matched module */
    uint64_t modules;      /* matched module instances */
    uint32_t n_resolved;   /* leaf names the targets resolved to */
    char resolved[24][32]; /* those names, in inventory order */
    uint32_t n_unmatched;  /* explicit names that matched nothing */
    char unmatched[ML_LORA_MAX_TARGETS][32];
};

/*
 * Count the trainable LoRA parameters of rank r for the targets. "all" resolves as
 * LLaMA-Factory's find_all_linear_modules does: the leaf names of every module whose class name
 * contains "Linear", except those under lm_head (and output_layer for ChatGLM, output for
 * InternLM2); GPT-2's Conv1D is not nn.Linear and is left out of "all" (name it explicitly).
 * Explicit names match a module whose leaf name is equal (PEFT's suffix match).
 * ML_ERR_INVALID if nothing matches; ML_ERR_OVERFLOW on overflow.
 */
enum ml_status ml_lora_count(const struct ml_arch *arch, const struct ml_inventory *inv,
                             const struct ml_lora_targets *targets, uint64_t rank, struct ml_lora_count *out,
                             struct ml_diag *diag);

/*
 * LLaMA-Factory's module keys of a vision-language model (model/model_utils/visual.py
 * COMPOSITE_MODELS): which = 0 the vision tower's (freeze_vision_tower), 1 the projector's
 * (freeze_multi_modal_projector). Up to max keys into out; returns how many (0 for a text model).
 * A tensor belongs to a key set when its path contains one of the keys (LLaMA-Factory's
 * substring test): ml_module_in_keys.
 */
size_t ml_arch_freeze_keys(const struct ml_arch *arch, int which, const char **out, size_t max);
bool ml_module_in_keys(const char *path, const char *const *keys, size_t n);

#endif /* ML_INVENTORY_H */
