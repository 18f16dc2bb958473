/*
 * inventory.c - exact parameter inventory (see inventory.h).
 *
 * The module lists follow the transformers modeling files (modeling_<family>.py) and, for
 * remote-code models, the model repository's modeling file: every nn.Linear weight and the
 * biases that exist, embeddings, norms (RMSNorm: weight; LayerNorm: weight + bias), routers,
 * experts and the output head. Buffers (rotary inv_freq, causal masks) are not parameters.
 * data/models/params.jsonl holds the exact counts this file must reproduce for 61 models.
 */
#include "memledger/inventory.h"

#include <stdio.h>
#include <string.h>

#include "memledger/checked.h"
#include "family.h"
#include "i18n.h"

/* ---- names ------------------------------------------------------------------------------ */

static const char kind_names[ML_MOD_COUNT][20] = {
    "embedding",   "position_embedding",
    "attn_q",      "attn_k",
    "attn_v",      "attn_qkv",
    "attn_o",      "attn_relative_bias",
    "mla_q_a",     "mla_q_b",
    "mla_kv_a",    "mla_kv_b",
    "mla_norm",    "qk_norm",
    "mlp_gate",    "mlp_up",
    "mlp_gate_up", "mlp_down",
    "expert",      "shared_expert",
    "router",      "norm",
    "lm_head",     "mtp",
    "linear_attn", "attn_sink",
    "indexer",     "vision",
    "projector",
};

static const char group_names[ML_GROUP_COUNT][20] = {
    "embedding", "attention", "linear_attention", "mlp",    "experts",   "shared_experts",
    "router",    "norms",     "lm_head",          "vision", "projector", "mtp",
};

const char *ml_module_kind_name(enum ml_module_kind k)
{
    return (k >= 0 && k < ML_MOD_COUNT) ? kind_names[k] : "unknown";
}

const char *ml_module_group_name(enum ml_module_group g)
{
    return (g >= 0 && g < ML_GROUP_COUNT) ? group_names[g] : "unknown";
}

enum ml_module_group ml_module_kind_group(enum ml_module_kind k)
{
    switch (k) {
    case ML_MOD_EMBEDDING:
    case ML_MOD_POSITION: return ML_GROUP_EMBEDDING;
    case ML_MOD_ATTN_Q:
    case ML_MOD_ATTN_K:
    case ML_MOD_ATTN_V:
    case ML_MOD_ATTN_QKV:
    case ML_MOD_ATTN_O:
    case ML_MOD_ATTN_REL:
    case ML_MOD_MLA_Q_A:
    case ML_MOD_MLA_Q_B:
    case ML_MOD_MLA_KV_A:
    case ML_MOD_MLA_KV_B:
    case ML_MOD_MLA_NORM:
    case ML_MOD_QK_NORM:
    case ML_MOD_ATTN_SINK:
    case ML_MOD_INDEXER: return ML_GROUP_ATTENTION;
    case ML_MOD_LINEAR_ATTN: return ML_GROUP_LINEAR_ATTENTION;
    case ML_MOD_VISION: return ML_GROUP_VISION;
    case ML_MOD_PROJECTOR: return ML_GROUP_PROJECTOR;
    case ML_MOD_MLP_GATE:
    case ML_MOD_MLP_UP:
    case ML_MOD_MLP_GATE_UP:
    case ML_MOD_MLP_DOWN: return ML_GROUP_MLP;
    case ML_MOD_EXPERT: return ML_GROUP_EXPERTS;
    case ML_MOD_SHARED_EXPERT: return ML_GROUP_SHARED_EXPERTS;
    case ML_MOD_ROUTER: return ML_GROUP_ROUTER;
    case ML_MOD_NORM: return ML_GROUP_NORMS;
    case ML_MOD_LM_HEAD: return ML_GROUP_LM_HEAD;
    case ML_MOD_MTP:
    case ML_MOD_COUNT: break;
    }
    return ML_GROUP_MTP;
}

/* ---- builder ---------------------------------------------------------------------------- */

struct builder {
    struct ml_inventory *inv;
    struct ml_diag *diag;
    enum ml_status st;
    bool mtp; /* entries added now belong to the MTP block */
};

static struct ml_tensor *push(struct builder *b, enum ml_module_kind kind, const char *path, const char *param,
                              uint64_t rows, uint64_t cols, uint64_t copies, uint64_t active)
{
    if (b->st != ML_OK || copies == 0)
        return NULL;
    if (b->inv->n >= ML_INVENTORY_MAX) {
        b->st = ml_diag_set(b->diag, ML_ERR_TOOBIG, _("model has more than %d parameter tensors"), ML_INVENTORY_MAX);
        return NULL;
    }
    struct ml_tensor *t = &b->inv->t[b->inv->n++];
    memset(t, 0, sizeof(*t));
    t->kind = b->mtp ? ML_MOD_MTP : kind;
    (void)snprintf(t->path, sizeof(t->path), "%s", path);
    (void)snprintf(t->param, sizeof(t->param), "%s", param);
    t->rows = rows;
    t->cols = cols;
    t->copies = copies;
    t->active_copies = active;
    t->mtp = b->mtp;
    uint64_t n;
    if (!ml_mul3_u64(rows, cols ? cols : 1, copies, &n)) {
        b->st = ml_diag_set(b->diag, ML_ERR_OVERFLOW, _("parameter count of '%s' overflows"), path);
        return NULL;
    }
    t->params = n;
    return t;
}

/* An nn.Linear(in, out) [with bias]: weight stored out x in. */
static void lin(struct builder *b, enum ml_module_kind kind, const char *path, uint64_t in, uint64_t out,
                uint64_t copies, uint64_t active, bool bias)
{
    struct ml_tensor *t = push(b, kind, path, "weight", out, in, copies, active);
    if (t) {
        t->linear = true;
        t->in_features = in;
        t->out_features = out;
    }
    if (bias)
        push(b, kind, path, "bias", out, 0, copies, active);
}

/* GPT-2 Conv1D(nf=out, nx=in): weight stored in x out, always with a bias. */
static void conv(struct builder *b, enum ml_module_kind kind, const char *path, uint64_t in, uint64_t out,
                 uint64_t copies)
{
    struct ml_tensor *t = push(b, kind, path, "weight", in, out, copies, copies);
    if (t) {
        t->conv1d = true;
        t->in_features = in;
        t->out_features = out;
    }
    push(b, kind, path, "bias", out, 0, copies, copies);
}

/* A norm of width w: RMSNorm has a weight, LayerNorm a weight and a bias. */
static void norm(struct builder *b, enum ml_module_kind kind, const char *path, uint64_t w, uint64_t copies,
                 enum ml_norm_kind nk)
{
    push(b, kind, path, "weight", w, 0, copies, copies);
    if (nk == ML_NORM_LAYER)
        push(b, kind, path, "bias", w, 0, copies, copies);
}

/* An embedding table (rows x width). */
static void emb(struct builder *b, enum ml_module_kind kind, const char *path, uint64_t rows, uint64_t width)
{
    push(b, kind, path, "weight", rows, width, 1, 1);
}

/* The output head: a Linear(h, V) that may share the embedding's storage. */
static void head(struct builder *b, const char *path, uint64_t h, uint64_t vocab, bool tied, bool bias)
{
    struct ml_tensor *t = push(b, ML_MOD_LM_HEAD, path, "weight", vocab, h, 1, 1);
    if (t) {
        t->linear = true;
        t->in_features = h;
        t->out_features = vocab;
        if (tied) {
            t->tied = true;
            t->params = 0;
        }
    }
    if (bias)
        push(b, ML_MOD_LM_HEAD, path, "bias", vocab, 0, 1, 1);
}

static void path2(char *dst, size_t n, const char *a, const char *c)
{
    (void)snprintf(dst, n, "%s.%s", a, c);
}

/* ---- decoder-only families -------------------------------------------------------------- */

/* A bare nn.Parameter of rows x cols under the layer (sinks, dt_bias, packed experts). */
static struct ml_tensor *param(struct builder *b, enum ml_module_kind kind, const char *layer, const char *name,
                               uint64_t rows, uint64_t cols, uint64_t copies, uint64_t active)
{
    char p[128];
    path2(p, sizeof(p), layer, name);
    return push(b, kind, p, "param", rows, cols, copies, active);
}

/* DeepSeek MLA (modeling_deepseek.py DeepseekV3Attention) and the V3.2 lightning indexer
 * (modular_deepseek_v32.py DeepseekV32Indexer: wq_b, wk, k_norm LayerNorm, weights_proj kept
 * in fp32 by _keep_in_fp32_modules). */
static void mla(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm, uint64_t copies)
{
    char p[128];
    uint64_t h = a->hidden, qk = a->qk_nope_head_dim + a->qk_rope_head_dim;
    if (a->q_lora_rank) {
        path2(p, sizeof(p), nm->layer, "self_attn.q_a_proj");
        lin(b, ML_MOD_MLA_Q_A, p, h, a->q_lora_rank, copies, copies, a->qkv_bias);
        path2(p, sizeof(p), nm->layer, "self_attn.q_a_layernorm");
        norm(b, ML_MOD_MLA_NORM, p, a->q_lora_rank, copies, ML_NORM_RMS);
        path2(p, sizeof(p), nm->layer, "self_attn.q_b_proj");
        lin(b, ML_MOD_MLA_Q_B, p, a->q_lora_rank, (uint64_t)a->n_heads * qk, copies, copies, false);
    } else {
        path2(p, sizeof(p), nm->layer, "self_attn.q_proj");
        lin(b, ML_MOD_ATTN_Q, p, h, (uint64_t)a->n_heads * qk, copies, copies, false);
    }
    path2(p, sizeof(p), nm->layer, "self_attn.kv_a_proj_with_mqa");
    lin(b, ML_MOD_MLA_KV_A, p, h, a->kv_lora_rank + a->qk_rope_head_dim, copies, copies, a->qkv_bias);
    path2(p, sizeof(p), nm->layer, "self_attn.kv_a_layernorm");
    norm(b, ML_MOD_MLA_NORM, p, a->kv_lora_rank, copies, ML_NORM_RMS);
    path2(p, sizeof(p), nm->layer, "self_attn.kv_b_proj");
    lin(b, ML_MOD_MLA_KV_B, p, a->kv_lora_rank, (uint64_t)a->n_heads * (a->qk_nope_head_dim + a->v_head_dim), copies,
        copies, false);
    path2(p, sizeof(p), nm->layer, "self_attn.o_proj");
    lin(b, ML_MOD_ATTN_O, p, (uint64_t)a->n_heads * a->v_head_dim, h, copies, copies, a->o_bias);
    if (!a->index_heads)
        return;
    char ix[128];
    path2(ix, sizeof(ix), nm->layer, nm->indexer);
    uint64_t ih = a->index_heads, id = a->index_head_dim;
    path2(p, sizeof(p), ix, "wq_b");
    lin(b, ML_MOD_INDEXER, p, a->q_lora_rank ? a->q_lora_rank : h, ih * id, copies, copies, false);
    path2(p, sizeof(p), ix, "wk");
    lin(b, ML_MOD_INDEXER, p, h, id, copies, copies, false);
    path2(p, sizeof(p), ix, "k_norm");
    norm(b, ML_MOD_INDEXER, p, id, copies, ML_NORM_LAYER);
    path2(p, sizeof(p), ix, "weights_proj");
    lin(b, ML_MOD_INDEXER, p, h, ih, copies, copies, false);
    if (b->st == ML_OK && b->inv->n)
        b->inv->t[b->inv->n - 1].keep_fp32 = true;
}

/* Softmax attention of `copies` layers. A gated q_proj (Qwen3-Next, Qwen3.5 attn_output_gate)
 * yields the sigmoid gate with the queries: twice the rows. */
static void attention(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm, uint64_t copies)
{
    char p[128];
    uint64_t h = a->hidden, q = (uint64_t)a->n_heads * a->head_dim;
    uint64_t kv = (uint64_t)a->n_kv_heads * a->head_dim;
    if (a->q_lora_rank || a->kv_lora_rank) {
        mla(b, a, nm, copies);
        return;
    }
    if (nm->qkv) {
        path2(p, sizeof(p), nm->layer, nm->qkv);
        if (nm->conv1d)
            conv(b, ML_MOD_ATTN_QKV, p, h, q + 2 * kv, copies);
        else
            lin(b, ML_MOD_ATTN_QKV, p, h, q + 2 * kv, copies, copies, a->qkv_bias);
    } else {
        path2(p, sizeof(p), nm->layer, nm->q);
        lin(b, ML_MOD_ATTN_Q, p, h, a->q_gate ? 2 * q : q, copies, copies, a->qkv_bias);
        path2(p, sizeof(p), nm->layer, nm->k);
        lin(b, ML_MOD_ATTN_K, p, h, kv, copies, copies, a->qkv_bias);
        path2(p, sizeof(p), nm->layer, nm->v);
        lin(b, ML_MOD_ATTN_V, p, h, kv, copies, copies, a->qkv_bias);
    }
    if (a->qk_norm) {
        /* Qwen3: RMSNorm(head_dim) shared by all heads; Phi qk_layernorm: LayerNorm(head_dim). */
        path2(p, sizeof(p), nm->layer, nm->q_norm);
        norm(b, ML_MOD_QK_NORM, p, a->head_dim, copies, a->qk_norm_kind);
        path2(p, sizeof(p), nm->layer, nm->k_norm);
        norm(b, ML_MOD_QK_NORM, p, a->head_dim, copies, a->qk_norm_kind);
    }
    path2(p, sizeof(p), nm->layer, nm->o);
    if (nm->conv1d)
        conv(b, ML_MOD_ATTN_O, p, q, h, copies);
    else
        lin(b, ML_MOD_ATTN_O, p, q, h, copies, copies, a->o_bias);
    if (a->attn_sinks) /* GptOssAttention.sinks: one learned logit per head */
        param(b, ML_MOD_ATTN_SINK, nm->layer, "self_attn.sinks", a->n_heads, 0, copies, copies);
}

/* Gated DeltaNet (modular_qwen3_next.py Qwen3NextGatedDeltaNet; modular_qwen3_5.py
 * Qwen3_5GatedDeltaNet): a depthwise causal conv1d over q, k and v, the input projections
 * (fused qkvz + ba, or split qkv, z, b, a), dt_bias and A_log per value head, a gated
 * RMSNorm of the value head width, out_proj. */
static void linear_attn(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm, uint64_t copies)
{
    char la[128], p[128];
    const struct ml_linear_attn *l = &a->lin;
    uint64_t h = a->hidden, kd = (uint64_t)l->k_heads * l->k_dim, vd = (uint64_t)l->v_heads * l->v_dim;
    path2(la, sizeof(la), nm->layer, nm->linear_attn);
    path2(p, sizeof(p), la, "conv1d");
    push(b, ML_MOD_LINEAR_ATTN, p, "weight", 2 * kd + vd, l->conv_kernel, copies, copies);
    static const char *const fused[] = {"in_proj_qkvz", "in_proj_ba"};
    static const char *const split[] = {"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"};
    uint64_t fused_out[] = {2 * kd + 2 * vd, 2 * (uint64_t)l->v_heads};
    uint64_t split_out[] = {2 * kd + vd, vd, l->v_heads, l->v_heads};
    size_t n = nm->linear_fused ? 2 : 4;
    for (size_t i = 0; i < n; i++) {
        path2(p, sizeof(p), la, nm->linear_fused ? fused[i] : split[i]);
        lin(b, ML_MOD_LINEAR_ATTN, p, h, nm->linear_fused ? fused_out[i] : split_out[i], copies, copies, false);
    }
    param(b, ML_MOD_LINEAR_ATTN, la, "dt_bias", l->v_heads, 0, copies, copies);
    param(b, ML_MOD_LINEAR_ATTN, la, "A_log", l->v_heads, 0, copies, copies);
    path2(p, sizeof(p), la, "norm");
    norm(b, ML_MOD_LINEAR_ATTN, p, l->v_dim, copies, ML_NORM_RMS);
    path2(p, sizeof(p), la, "out_proj");
    lin(b, ML_MOD_LINEAR_ATTN, p, vd, h, copies, copies, false);
}

/* A dense MLP of width w under prefix (gate/up/down or up/down, or fused gate_up). */
static void mlp(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm, const char *prefix,
                enum ml_module_kind k_gate, enum ml_module_kind k_up, enum ml_module_kind k_down, uint64_t w,
                uint64_t copies, uint64_t active, bool bias)
{
    char p[128];
    uint64_t h = a->hidden;
    bool fused = nm->gate_up != NULL;
    if (nm->conv1d) {
        path2(p, sizeof(p), prefix, nm->up);
        conv(b, k_up, p, h, w, copies);
        path2(p, sizeof(p), prefix, nm->down);
        conv(b, k_down, p, w, h, copies);
        return;
    }
    if (a->gated_mlp && fused) {
        path2(p, sizeof(p), prefix, nm->gate_up);
        lin(b, k_gate == ML_MOD_MLP_GATE ? ML_MOD_MLP_GATE_UP : k_gate, p, h, 2 * w, copies, active, bias);
    } else {
        if (a->gated_mlp) {
            path2(p, sizeof(p), prefix, nm->gate);
            lin(b, k_gate, p, h, w, copies, active, bias);
        }
        path2(p, sizeof(p), prefix, nm->up);
        lin(b, k_up, p, h, w, copies, active, bias);
    }
    path2(p, sizeof(p), prefix, nm->down);
    lin(b, k_down, p, w, h, copies, active, bias);
}

/* Experts kept as two 3-D parameters (GptOssExperts, Llama4TextExperts, Qwen3VLMoeTextExperts,
 * transformers v5's MoE blocks): gate_up_proj (E, h, 2f) and down_proj (E, f, h), with biases
 * for gpt-oss; v5 stores them transposed, (E, 2f, h) and (E, h, f). */
static void packed_experts(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm, uint64_t cp,
                           uint64_t act)
{
    char ex[128];
    uint64_t h = a->hidden, f = a->moe_intermediate;
    path2(ex, sizeof(ex), nm->layer, nm->experts);
    static const char *const names[2] = {"gate_up_proj", "down_proj"};
    uint64_t in[2] = {h, f}, out[2] = {2 * f, h};
    for (int i = 0; i < 2; i++) {
        struct ml_tensor *t = nm->experts_out_in ? param(b, ML_MOD_EXPERT, ex, names[i], out[i], in[i], cp, act)
                                                 : param(b, ML_MOD_EXPERT, ex, names[i], in[i], out[i], cp, act);
        if (t) {
            t->packed = true;
            t->in_features = in[i];
            t->out_features = out[i];
        }
        if (a->expert_bias) {
            char bn[32];
            (void)snprintf(bn, sizeof(bn), "%s_bias", names[i]);
            param(b, ML_MOD_EXPERT, ex, bn, out[i], 0, cp, act);
        }
    }
}

/* MoE block: routed experts, router (and its correction bias), shared experts and their gate. */
static void moe(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm, uint64_t m)
{
    char p[128], pre[128];
    uint64_t h = a->hidden, e = a->n_experts;
    uint64_t cp = m * e, act = m * a->top_k;
    if (!ml_mul_u64(m, e, &cp)) {
        b->st = ml_diag_set(b->diag, ML_ERR_OVERFLOW, _("expert count overflows"));
        return;
    }
    struct ml_module_names en = *nm;
    en.gate = nm->expert_gate;
    en.up = nm->expert_up;
    en.down = nm->expert_down;
    en.gate_up = NULL;
    if (nm->experts_packed) {
        packed_experts(b, a, nm, cp, act);
    } else {
        path2(pre, sizeof(pre), nm->layer, nm->experts);
        mlp(b, a, &en, pre, ML_MOD_EXPERT, ML_MOD_EXPERT, ML_MOD_EXPERT, a->moe_intermediate, cp, act, a->expert_bias);
    }
    path2(p, sizeof(p), nm->layer, nm->router);
    if (nm->router_param) {
        push(b, ML_MOD_ROUTER, p, "weight", e, h, m, m);
        if (a->router_linear_bias)
            push(b, ML_MOD_ROUTER, p, "bias", e, 0, m, m);
        if (a->router_bias) {
            char rb[128];
            path2(rb, sizeof(rb), p, "e_score_correction_bias");
            push(b, ML_MOD_ROUTER, rb, "param", e, 0, m, m);
        }
    } else {
        lin(b, ML_MOD_ROUTER, p, h, e, m, m, a->router_linear_bias);
    }
    if (a->n_shared_experts && a->shared_intermediate) {
        path2(pre, sizeof(pre), nm->layer, nm->shared_expert);
        mlp(b, a, &en, pre, ML_MOD_SHARED_EXPERT, ML_MOD_SHARED_EXPERT, ML_MOD_SHARED_EXPERT, a->shared_intermediate, m,
            m, false);
        if (a->shared_expert_gate) {
            path2(p, sizeof(p), nm->layer, nm->shared_expert_gate);
            lin(b, ML_MOD_SHARED_EXPERT, p, h, 1, m, m, false);
        }
    }
}

/* One decoder stack of n layers, n_linear of them linear-attention layers and n_moe MoE
 * layers, without embeddings. */
static void decoder_layers(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm,
                           uint64_t n_layers, uint64_t n_linear, uint64_t n_moe)
{
    char p[128];
    if (n_layers > n_linear)
        attention(b, a, nm, n_layers - n_linear);
    if (n_linear)
        linear_attn(b, a, nm, n_linear);
    uint64_t dense = n_layers - n_moe;
    if (dense) {
        mlp(b, a, nm, nm->layer, ML_MOD_MLP_GATE, ML_MOD_MLP_UP, ML_MOD_MLP_DOWN, a->intermediate, dense, dense,
            a->mlp_bias);
    }
    if (n_moe)
        moe(b, a, nm, n_moe);
    for (uint32_t i = 0; i < a->norms_per_layer && i < 4; i++) {
        const char *name = nm->norms[i];
        if (a->branch_norms && i < 2 && nm->branch_norms[i])
            name = nm->branch_norms[i];
        path2(p, sizeof(p), nm->layer, name);
        norm(b, ML_MOD_NORM, p, a->hidden, n_layers, a->norm);
    }
}

/* The MTP block (DeepSeek-V3 model card / inference code, GLM-4.5, Qwen3.5's mtp.*): two input
 * norms, the 2h -> h projection, one full-attention decoder layer (MoE when the model is), an
 * output norm; its embedding and head share the main model's. transformers does not load it. */
static void mtp_block(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm)
{
    uint64_t h = a->hidden, n = a->n_mtp_layers;
    struct ml_module_names mt = *nm;
    mt.layer = nm->mtp_layer;
    b->mtp = true;
    norm(b, ML_MOD_NORM, nm->mtp_norms[0], h, n, ML_NORM_RMS);
    norm(b, ML_MOD_NORM, nm->mtp_norms[1], h, n, ML_NORM_RMS);
    lin(b, ML_MOD_MTP, nm->mtp_fc, 2 * h, h, n, n, false);
    decoder_layers(b, a, &mt, n, 0, a->n_experts ? n : 0);
    norm(b, ML_MOD_NORM, nm->mtp_norms[2], h, n, ML_NORM_RMS);
    b->mtp = false;
}

/* ---- vision towers ---------------------------------------------------------------------------- */

/* An encoder block of `depth` copies: q/k/v/o or fused qkv + proj, two norms, an MLP, all biased
 * (SiglipEncoderLayer, Llama4VisionEncoderLayer, Qwen3VLVisionBlock, Qwen2_5_VLVisionBlock). */
struct tower_block {
    const char *layer;               /* "encoder.layers.*" under the tower */
    const char *q, *k, *v, *o, *qkv; /* attention leaf paths (qkv fused when set) */
    const char *norm1, *norm2;
    const char *gate, *up, *down; /* gate for a gated MLP (Qwen2.5), else up/down */
    enum ml_norm_kind nk;
};

static void vision_block(struct builder *b, const struct ml_vision *v, const char *tower, const struct tower_block *vb)
{
    char layer[128], p[128];
    uint64_t d = v->hidden, f = v->intermediate, n = v->depth;
    path2(layer, sizeof(layer), tower, vb->layer);
    if (vb->qkv) {
        path2(p, sizeof(p), layer, vb->qkv);
        lin(b, ML_MOD_VISION, p, d, 3 * d, n, n, true);
    } else {
        const char *qkv[3] = {vb->q, vb->k, vb->v};
        for (int i = 0; i < 3; i++) {
            path2(p, sizeof(p), layer, qkv[i]);
            lin(b, ML_MOD_VISION, p, d, d, n, n, true);
        }
    }
    path2(p, sizeof(p), layer, vb->o);
    lin(b, ML_MOD_VISION, p, d, d, n, n, true);
    path2(p, sizeof(p), layer, vb->norm1);
    norm(b, ML_MOD_VISION, p, d, n, vb->nk);
    path2(p, sizeof(p), layer, vb->norm2);
    norm(b, ML_MOD_VISION, p, d, n, vb->nk);
    if (vb->gate) {
        path2(p, sizeof(p), layer, vb->gate);
        lin(b, ML_MOD_VISION, p, d, f, n, n, true);
    }
    path2(p, sizeof(p), layer, vb->up);
    lin(b, ML_MOD_VISION, p, d, f, n, n, true);
    path2(p, sizeof(p), layer, vb->down);
    lin(b, ML_MOD_VISION, p, f, d, n, n, true);
}

/* A patch embedding convolution (d x channels x [temporal x] p x p), with or without a bias. */
static void patch_conv(struct builder *b, const struct ml_vision *v, const char *path, bool bias)
{
    uint64_t in = (uint64_t)v->channels * v->temporal_patch * v->patch * v->patch;
    push(b, ML_MOD_VISION, path, "weight", v->hidden, in, 1, 1);
    if (bias)
        push(b, ML_MOD_VISION, path, "bias", v->hidden, 0, 1, 1);
}

/* Gemma 3: SiglipVisionModel (modeling_siglip.py) + Gemma3MultiModalProjector
 * (mm_input_projection_weight d x h, mm_soft_emb_norm). */
static void siglip(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm)
{
    const struct ml_vision *v = &a->vision;
    char p[128];
    static const struct tower_block vb = {"encoder.layers.*",
                                          "self_attn.q_proj",
                                          "self_attn.k_proj",
                                          "self_attn.v_proj",
                                          "self_attn.out_proj",
                                          NULL,
                                          "layer_norm1",
                                          "layer_norm2",
                                          NULL,
                                          "mlp.fc1",
                                          "mlp.fc2",
                                          ML_NORM_LAYER};
    path2(p, sizeof(p), nm->vision, "embeddings.patch_embedding");
    patch_conv(b, v, p, true);
    path2(p, sizeof(p), nm->vision, "embeddings.position_embedding");
    push(b, ML_MOD_VISION, p, "weight", v->positions, v->hidden, 1, 1);
    vision_block(b, v, nm->vision, &vb);
    path2(p, sizeof(p), nm->vision, "post_layernorm");
    norm(b, ML_MOD_VISION, p, v->hidden, 1, ML_NORM_LAYER);
    param(b, ML_MOD_PROJECTOR, nm->projector, "mm_input_projection_weight", v->hidden, a->hidden, 1, 1);
    path2(p, sizeof(p), nm->projector, "mm_soft_emb_norm");
    norm(b, ML_MOD_PROJECTOR, p, v->hidden, 1, ML_NORM_RMS);
}

/* A Qwen merger: a norm of the patch width, then Linear(4d, 4d), GELU, Linear(4d, out). */
static void qwen_merger(struct builder *b, const struct ml_vision *v, const char *pre, const char *norm_name,
                        uint64_t norm_w, const char *fc1, const char *fc2, enum ml_norm_kind nk, uint64_t copies)
{
    char p[128];
    uint64_t md = v->hidden * v->merge * v->merge;
    path2(p, sizeof(p), pre, norm_name);
    norm(b, ML_MOD_PROJECTOR, p, norm_w, copies, nk);
    path2(p, sizeof(p), pre, fc1);
    lin(b, ML_MOD_PROJECTOR, p, md, md, copies, copies, true);
    path2(p, sizeof(p), pre, fc2);
    lin(b, ML_MOD_PROJECTOR, p, md, v->out_hidden, copies, copies, true);
}

/* Qwen2.5-VL (modeling_qwen2_5_vl.py): Conv3d patch embedding without bias, RMSNorm blocks with
 * a gated MLP, the merger (ln_q, mlp.0, mlp.2). Qwen3-VL / Qwen3.5 (modeling_qwen3_vl.py):
 * biased Conv3d, a learned position table, LayerNorm blocks, merger (norm, linear_fc1/2) and one
 * deepstack merger per deepstack_visual_indexes entry (LayerNorm over the merged width). */
static void qwen_vision(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm)
{
    const struct ml_vision *v = &a->vision;
    char p[128];
    bool q3 = v->kind == ML_VISION_QWEN3;
    static const struct tower_block v25 = {"blocks.*",
                                           NULL,
                                           NULL,
                                           NULL,
                                           "attn.proj",
                                           "attn.qkv",
                                           "norm1",
                                           "norm2",
                                           "mlp.gate_proj",
                                           "mlp.up_proj",
                                           "mlp.down_proj",
                                           ML_NORM_RMS};
    static const struct tower_block v3 = {"blocks.*",       NULL,         NULL,    NULL, "attn.proj",
                                          "attn.qkv",       "norm1",      "norm2", NULL, "mlp.linear_fc1",
                                          "mlp.linear_fc2", ML_NORM_LAYER};
    path2(p, sizeof(p), nm->vision, "patch_embed.proj");
    patch_conv(b, v, p, q3);
    if (q3 && v->positions) {
        path2(p, sizeof(p), nm->vision, "pos_embed");
        push(b, ML_MOD_VISION, p, "weight", v->positions, v->hidden, 1, 1);
    }
    vision_block(b, v, nm->vision, q3 ? &v3 : &v25);
    path2(p, sizeof(p), nm->vision, "merger");
    if (!q3) {
        qwen_merger(b, v, p, "ln_q", v->hidden, "mlp.0", "mlp.2", ML_NORM_RMS, 1);
        return;
    }
    qwen_merger(b, v, p, "norm", v->hidden, "linear_fc1", "linear_fc2", ML_NORM_LAYER, 1);
    if (v->deepstack) {
        path2(p, sizeof(p), nm->vision, "deepstack_merger_list.*");
        qwen_merger(b, v, p, "norm", v->hidden * v->merge * v->merge, "linear_fc1", "linear_fc2", ML_NORM_LAYER,
                    v->deepstack);
    }
}

/* Llama 4 (modeling_llama4.py Llama4VisionModel): unfold patch embedding (a Linear without bias),
 * class embedding, positions, pre/post LayerNorms, encoder layers, the pixel-shuffle MLP
 * (vision_adapter, no biases); Llama4MultiModalProjector linear_1 outside the tower. */
static void llama4_vision(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm)
{
    const struct ml_vision *v = &a->vision;
    char p[128];
    uint64_t d = v->hidden;
    static const struct tower_block vb = {"model.layers.*",
                                          "self_attn.q_proj",
                                          "self_attn.k_proj",
                                          "self_attn.v_proj",
                                          "self_attn.o_proj",
                                          NULL,
                                          "input_layernorm",
                                          "post_attention_layernorm",
                                          NULL,
                                          "mlp.fc1",
                                          "mlp.fc2",
                                          ML_NORM_LAYER};
    path2(p, sizeof(p), nm->vision, "patch_embedding.linear");
    lin(b, ML_MOD_VISION, p, (uint64_t)v->channels * v->patch * v->patch, d, 1, 1, false);
    param(b, ML_MOD_VISION, nm->vision, "class_embedding", d, 0, 1, 1);
    param(b, ML_MOD_VISION, nm->vision, "positional_embedding_vlm", v->positions, d, 1, 1);
    path2(p, sizeof(p), nm->vision, "layernorm_pre");
    norm(b, ML_MOD_VISION, p, d, 1, ML_NORM_LAYER);
    path2(p, sizeof(p), nm->vision, "layernorm_post");
    norm(b, ML_MOD_VISION, p, d, 1, ML_NORM_LAYER);
    vision_block(b, v, nm->vision, &vb);
    path2(p, sizeof(p), nm->vision, "vision_adapter.mlp.fc1");
    lin(b, ML_MOD_VISION, p, v->intermediate, v->adapter_in, 1, 1, false);
    path2(p, sizeof(p), nm->vision, "vision_adapter.mlp.fc2");
    lin(b, ML_MOD_VISION, p, v->adapter_out, v->adapter_out, 1, 1, false);
    path2(p, sizeof(p), nm->projector, "linear_1");
    lin(b, ML_MOD_PROJECTOR, p, v->vision_out, a->hidden, 1, 1, false);
}

static void vision_tower(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm)
{
    switch (a->vision.kind) {
    case ML_VISION_SIGLIP: siglip(b, a, nm); break;
    case ML_VISION_QWEN2_5:
    case ML_VISION_QWEN3: qwen_vision(b, a, nm); break;
    case ML_VISION_LLAMA4: llama4_vision(b, a, nm); break;
    case ML_VISION_NONE: break;
    }
}

static void build_decoder(struct builder *b, const struct ml_arch *a)
{
    struct ml_module_names nm;
    ml_family_modules(a->family, &nm);
    uint64_t h = a->hidden;
    emb(b, ML_MOD_EMBEDDING, nm.embed, a->vocab, h);
    if (a->learned_positions)
        emb(b, ML_MOD_POSITION, nm.position, a->learned_positions, h);
    if (a->embed_norm)
        norm(b, ML_MOD_NORM, nm.embed_norm, h, 1, a->norm);
    decoder_layers(b, a, &nm, a->n_layers, ml_arch_n_layers_attn(a, ML_LAYER_LINEAR), ml_arch_n_moe_layers(a));
    if (a->final_norm)
        norm(b, ML_MOD_NORM, nm.final_norm, h, 1, a->norm);
    head(b, nm.lm_head, h, a->vocab, a->tie_embeddings, a->lm_head_bias);
    if (a->vision.kind != ML_VISION_NONE)
        vision_tower(b, a, &nm);
    if (a->n_mtp_layers)
        mtp_block(b, a, &nm);
}

/* ---- encoder and encoder-decoder families ----------------------------------------------- */

static void build_bert(struct builder *b, const struct ml_arch *a)
{
    uint64_t h = a->hidden, n = a->n_layers;
    emb(b, ML_MOD_EMBEDDING, "bert.embeddings.word_embeddings", a->vocab, h);
    emb(b, ML_MOD_POSITION, "bert.embeddings.position_embeddings", a->learned_positions, h);
    if (a->type_vocab)
        emb(b, ML_MOD_POSITION, "bert.embeddings.token_type_embeddings", a->type_vocab, h);
    norm(b, ML_MOD_NORM, "bert.embeddings.LayerNorm", h, 1, ML_NORM_LAYER);
    uint64_t q = (uint64_t)a->n_heads * a->head_dim;
    lin(b, ML_MOD_ATTN_Q, "bert.encoder.layer.*.attention.self.query", h, q, n, n, true);
    lin(b, ML_MOD_ATTN_K, "bert.encoder.layer.*.attention.self.key", h, q, n, n, true);
    lin(b, ML_MOD_ATTN_V, "bert.encoder.layer.*.attention.self.value", h, q, n, n, true);
    lin(b, ML_MOD_ATTN_O, "bert.encoder.layer.*.attention.output.dense", q, h, n, n, true);
    norm(b, ML_MOD_NORM, "bert.encoder.layer.*.attention.output.LayerNorm", h, n, ML_NORM_LAYER);
    lin(b, ML_MOD_MLP_UP, "bert.encoder.layer.*.intermediate.dense", h, a->intermediate, n, n, true);
    lin(b, ML_MOD_MLP_DOWN, "bert.encoder.layer.*.output.dense", a->intermediate, h, n, n, true);
    norm(b, ML_MOD_NORM, "bert.encoder.layer.*.output.LayerNorm", h, n, ML_NORM_LAYER);
    /* BertForMaskedLM head: transform (dense + LayerNorm), decoder tied to the embedding, bias. */
    lin(b, ML_MOD_LM_HEAD, "cls.predictions.transform.dense", h, h, 1, 1, true);
    norm(b, ML_MOD_LM_HEAD, "cls.predictions.transform.LayerNorm", h, 1, ML_NORM_LAYER);
    head(b, "cls.predictions.decoder", h, a->vocab, a->tie_embeddings, true);
}

static void t5_attention(struct builder *b, const struct ml_arch *a, const char *pre, uint64_t n, bool rel)
{
    char p[96];
    uint64_t h = a->hidden, q = (uint64_t)a->n_heads * a->head_dim;
    static const char qkv[3][2] = {"q", "k", "v"};
    static const enum ml_module_kind kinds[3] = {ML_MOD_ATTN_Q, ML_MOD_ATTN_K, ML_MOD_ATTN_V};
    for (int i = 0; i < 3; i++) {
        path2(p, sizeof(p), pre, qkv[i]);
        lin(b, kinds[i], p, h, q, n, n, false);
    }
    path2(p, sizeof(p), pre, "o");
    lin(b, ML_MOD_ATTN_O, p, q, h, n, n, false);
    if (rel) {
        /* relative_attention_bias exists in block 0 only (has_relative_attention_bias). */
        char r0[96];
        (void)snprintf(r0, sizeof(r0), "%s", pre);
        char *star = strchr(r0, '*');
        if (star)
            *star = '0';
        path2(p, sizeof(p), r0, "relative_attention_bias");
        push(b, ML_MOD_ATTN_REL, p, "weight", a->rel_attn_buckets, a->n_heads, 1, 1);
    }
}

static void t5_ff(struct builder *b, const struct ml_arch *a, const char *pre, uint64_t n)
{
    char p[96];
    uint64_t h = a->hidden;
    if (a->gated_mlp) {
        path2(p, sizeof(p), pre, "wi_0");
        lin(b, ML_MOD_MLP_GATE, p, h, a->intermediate, n, n, false);
        path2(p, sizeof(p), pre, "wi_1");
        lin(b, ML_MOD_MLP_UP, p, h, a->intermediate, n, n, false);
    } else {
        path2(p, sizeof(p), pre, "wi");
        lin(b, ML_MOD_MLP_UP, p, h, a->intermediate, n, n, false);
    }
    path2(p, sizeof(p), pre, "wo");
    lin(b, ML_MOD_MLP_DOWN, p, a->intermediate, h, n, n, false);
}

static void build_t5(struct builder *b, const struct ml_arch *a)
{
    uint64_t h = a->hidden, ne = a->n_encoder_layers, nd = a->n_layers;
    emb(b, ML_MOD_EMBEDDING, "shared", a->vocab, h);
    t5_attention(b, a, "encoder.block.*.layer.0.SelfAttention", ne, true);
    norm(b, ML_MOD_NORM, "encoder.block.*.layer.0.layer_norm", h, ne, ML_NORM_RMS);
    t5_ff(b, a, "encoder.block.*.layer.1.DenseReluDense", ne);
    norm(b, ML_MOD_NORM, "encoder.block.*.layer.1.layer_norm", h, ne, ML_NORM_RMS);
    norm(b, ML_MOD_NORM, "encoder.final_layer_norm", h, 1, ML_NORM_RMS);
    t5_attention(b, a, "decoder.block.*.layer.0.SelfAttention", nd, true);
    norm(b, ML_MOD_NORM, "decoder.block.*.layer.0.layer_norm", h, nd, ML_NORM_RMS);
    t5_attention(b, a, "decoder.block.*.layer.1.EncDecAttention", nd, false);
    norm(b, ML_MOD_NORM, "decoder.block.*.layer.1.layer_norm", h, nd, ML_NORM_RMS);
    t5_ff(b, a, "decoder.block.*.layer.2.DenseReluDense", nd);
    norm(b, ML_MOD_NORM, "decoder.block.*.layer.2.layer_norm", h, nd, ML_NORM_RMS);
    norm(b, ML_MOD_NORM, "decoder.final_layer_norm", h, 1, ML_NORM_RMS);
    head(b, "lm_head", h, a->vocab, a->tie_embeddings, false);
}

/* ---- totals ----------------------------------------------------------------------------- */

static enum ml_status totals(struct builder *b, const struct ml_arch *a)
{
    struct ml_inventory *inv = b->inv;
    uint64_t total = 0, active = 0, embed = 0, mtp = 0;
    for (uint32_t i = 0; i < inv->n; i++) {
        const struct ml_tensor *t = &inv->t[i];
        if (t->mtp) {
            if (!ml_add_u64(mtp, t->params, &mtp))
                return ml_diag_set(b->diag, ML_ERR_OVERFLOW, _("parameter total overflows"));
            inv->by_group[ML_GROUP_MTP] += t->params;
            continue;
        }
        uint64_t act = 0;
        /* An MoE model's active count is its text model's (the card convention: Qwen3-VL-30B-A3B
         * is "A3B" without its tower); a dense model uses every parameter. */
        bool text = a->n_experts == 0 || (t->kind != ML_MOD_VISION && t->kind != ML_MOD_PROJECTOR);
        if (t->params && text) {
            if (!ml_mul3_u64(t->rows, t->cols ? t->cols : 1, t->active_copies, &act))
                return ml_diag_set(b->diag, ML_ERR_OVERFLOW, _("parameter total overflows"));
        }
        if (!ml_add_u64(total, t->params, &total) || !ml_add_u64(active, act, &active))
            return ml_diag_set(b->diag, ML_ERR_OVERFLOW, _("parameter total overflows"));
        if (t->kind == ML_MOD_EMBEDDING || t->kind == ML_MOD_POSITION)
            embed += t->params;
        inv->by_group[ml_module_kind_group(t->kind)] += t->params;
    }
    inv->total_params = total;
    inv->active_params = active;
    inv->embedding_params = embed;
    inv->mtp_params = mtp;
    /* DeepSeek-V3's model card: "671B main model weights and 14B MTP module weights" - the 14B
     * counts the MTP layer's own embed_tokens and shared_head.head, which its checkpoint stores. */
    struct ml_module_names nm;
    ml_family_modules(a->family, &nm);
    uint64_t copies = 0;
    if (mtp && nm.mtp_copies && !ml_mul3_u64(2ull * a->n_mtp_layers, a->vocab, a->hidden, &copies))
        return ml_diag_set(b->diag, ML_ERR_OVERFLOW, _("parameter total overflows"));
    if (!ml_add_u64(mtp, copies, &inv->mtp_stored_params))
        return ml_diag_set(b->diag, ML_ERR_OVERFLOW, _("parameter total overflows"));
    return ML_OK;
}

enum ml_status ml_inventory_build(const struct ml_arch *arch, struct ml_inventory *inv, struct ml_diag *diag)
{
    memset(inv, 0, sizeof(*inv));
    enum ml_status st = ml_arch_validate(arch, diag);
    if (st != ML_OK)
        return st;
    struct builder b = {inv, diag, ML_OK, false};
    switch (arch->stack) {
    case ML_STACK_ENCODER: build_bert(&b, arch); break;
    case ML_STACK_ENCODER_DECODER: build_t5(&b, arch); break;
    case ML_STACK_DECODER: build_decoder(&b, arch); break;
    }
    if (b.st != ML_OK)
        return b.st;
    return totals(&b, arch);
}
