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
    "embedding", "position_embedding", "attn_q", "attn_k", "attn_v", "attn_qkv", "attn_o",
    "attn_relative_bias", "mla_q_a", "mla_q_b", "mla_kv_a", "mla_kv_b", "mla_norm", "qk_norm",
    "mlp_gate", "mlp_up", "mlp_gate_up", "mlp_down", "expert", "shared_expert", "router", "norm",
    "lm_head", "mtp",
};

static const char group_names[ML_GROUP_COUNT][16] = {
    "embedding", "attention", "mlp", "experts", "shared_experts", "router", "norms", "lm_head", "mtp",
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
    case ML_MOD_POSITION:
        return ML_GROUP_EMBEDDING;
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
        return ML_GROUP_ATTENTION;
    case ML_MOD_MLP_GATE:
    case ML_MOD_MLP_UP:
    case ML_MOD_MLP_GATE_UP:
    case ML_MOD_MLP_DOWN:
        return ML_GROUP_MLP;
    case ML_MOD_EXPERT:
        return ML_GROUP_EXPERTS;
    case ML_MOD_SHARED_EXPERT:
        return ML_GROUP_SHARED_EXPERTS;
    case ML_MOD_ROUTER:
        return ML_GROUP_ROUTER;
    case ML_MOD_NORM:
        return ML_GROUP_NORMS;
    case ML_MOD_LM_HEAD:
        return ML_GROUP_LM_HEAD;
    case ML_MOD_MTP:
    case ML_MOD_COUNT:
        break;
    }
    return ML_GROUP_MTP;
}

/* ---- builder ---------------------------------------------------------------------------- */

struct builder {
    struct ml_inventory *inv;
    struct ml_diag *diag;
    enum ml_status st;
    bool mtp;            /* entries added now belong to the MTP block */
};

static struct ml_tensor *push(struct builder *b, enum ml_module_kind kind, const char *path,
                              const char *param, uint64_t rows, uint64_t cols, uint64_t copies,
                              uint64_t active)
{
    if (b->st != ML_OK || copies == 0)
        return NULL;
    if (b->inv->n >= ML_INVENTORY_MAX) {
        b->st = ml_diag_set(b->diag, ML_ERR_TOOBIG, _("model has more than %d parameter tensors"),
                            ML_INVENTORY_MAX);
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
static void lin(struct builder *b, enum ml_module_kind kind, const char *path, uint64_t in,
                uint64_t out, uint64_t copies, uint64_t active, bool bias)
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
static void conv(struct builder *b, enum ml_module_kind kind, const char *path, uint64_t in,
                 uint64_t out, uint64_t copies)
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
static void norm(struct builder *b, enum ml_module_kind kind, const char *path, uint64_t w,
                 uint64_t copies, enum ml_norm_kind nk)
{
    push(b, kind, path, "weight", w, 0, copies, copies);
    if (nk == ML_NORM_LAYER)
        push(b, kind, path, "bias", w, 0, copies, copies);
}

/* An embedding table (rows x width). */
static void emb(struct builder *b, enum ml_module_kind kind, const char *path, uint64_t rows,
                uint64_t width)
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

static void attention(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm,
                      uint64_t copies)
{
    char p[96];
    uint64_t h = a->hidden, q = (uint64_t)a->n_heads * a->head_dim;
    uint64_t kv = (uint64_t)a->n_kv_heads * a->head_dim;
    if (a->q_lora_rank || a->kv_lora_rank) {
        /* DeepSeek MLA (modeling_deepseek.py DeepseekV3Attention). */
        uint64_t qk = a->qk_nope_head_dim + a->qk_rope_head_dim;
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
        lin(b, ML_MOD_MLA_KV_B, p, a->kv_lora_rank,
            (uint64_t)a->n_heads * (a->qk_nope_head_dim + a->v_head_dim), copies, copies, false);
        path2(p, sizeof(p), nm->layer, "self_attn.o_proj");
        lin(b, ML_MOD_ATTN_O, p, (uint64_t)a->n_heads * a->v_head_dim, h, copies, copies, a->o_bias);
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
        lin(b, ML_MOD_ATTN_Q, p, h, q, copies, copies, a->qkv_bias);
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
}

/* A dense MLP of width w under prefix (gate/up/down or up/down, or fused gate_up). */
static void mlp(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm,
                const char *prefix, enum ml_module_kind k_gate, enum ml_module_kind k_up,
                enum ml_module_kind k_down, uint64_t w, uint64_t copies, uint64_t active, bool bias)
{
    char p[96];
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

/* MoE block: routed experts, router (and its correction bias), shared experts and their gate. */
static void moe(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm, uint64_t m)
{
    char p[96], pre[96];
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
    path2(pre, sizeof(pre), nm->layer, nm->experts);
    mlp(b, a, &en, pre, ML_MOD_EXPERT, ML_MOD_EXPERT, ML_MOD_EXPERT, a->moe_intermediate, cp, act, false);
    path2(p, sizeof(p), nm->layer, nm->router);
    if (nm->router_param) {
        push(b, ML_MOD_ROUTER, p, "weight", e, h, m, m);
        if (a->router_bias) {
            char rb[96];
            path2(rb, sizeof(rb), p, "e_score_correction_bias");
            push(b, ML_MOD_ROUTER, rb, "param", e, 0, m, m);
        }
    } else {
        lin(b, ML_MOD_ROUTER, p, h, e, m, m, false);
    }
    if (a->n_shared_experts && a->shared_intermediate) {
        path2(pre, sizeof(pre), nm->layer, nm->shared_expert);
        mlp(b, a, &en, pre, ML_MOD_SHARED_EXPERT, ML_MOD_SHARED_EXPERT, ML_MOD_SHARED_EXPERT,
            a->shared_intermediate, m, m, false);
        if (a->shared_expert_gate) {
            path2(p, sizeof(p), nm->layer, nm->shared_expert_gate);
            lin(b, ML_MOD_SHARED_EXPERT, p, h, 1, m, m, false);
        }
    }
}

/* One decoder stack of n layers (MoE layers per the arch mask), without embeddings. */
static void decoder_layers(struct builder *b, const struct ml_arch *a, const struct ml_module_names *nm,
                           uint64_t n_layers, uint64_t n_moe)
{
    char p[96];
    attention(b, a, nm, n_layers);
    uint64_t dense = n_layers - n_moe;
    if (dense) {
        mlp(b, a, nm, nm->layer, ML_MOD_MLP_GATE, ML_MOD_MLP_UP, ML_MOD_MLP_DOWN, a->intermediate, dense,
            dense, a->mlp_bias);
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
    decoder_layers(b, a, &nm, a->n_layers, ml_arch_n_moe_layers(a));
    if (a->final_norm)
        norm(b, ML_MOD_NORM, nm.final_norm, h, 1, a->norm);
    head(b, nm.lm_head, h, a->vocab, a->tie_embeddings, a->lm_head_bias);

    if (a->n_mtp_layers) {
        /* DeepSeek-V3 MTP module (model card / inference code): enorm, hnorm, eh_proj (2h -> h),
         * one full decoder layer (an MoE layer), and shared_head.norm; its embed_tokens and
         * shared_head.head share the main model's tensors. transformers does not load it. */
        b->mtp = true;
        uint64_t n = a->n_mtp_layers;
        struct ml_module_names mt = nm;
        mt.layer = "model.layers.mtp.*";
        norm(b, ML_MOD_NORM, "model.layers.mtp.*.enorm", h, n, ML_NORM_RMS);
        norm(b, ML_MOD_NORM, "model.layers.mtp.*.hnorm", h, n, ML_NORM_RMS);
        lin(b, ML_MOD_MTP, "model.layers.mtp.*.eh_proj", 2 * h, h, n, n, false);
        decoder_layers(b, a, &mt, n, a->n_experts ? n : 0);
        norm(b, ML_MOD_NORM, "model.layers.mtp.*.shared_head.norm", h, n, ML_NORM_RMS);
        b->mtp = false;
    }
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

static void t5_attention(struct builder *b, const struct ml_arch *a, const char *pre, uint64_t n,
                         bool rel)
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
    (void)a;
    for (uint32_t i = 0; i < inv->n; i++) {
        const struct ml_tensor *t = &inv->t[i];
        if (t->mtp) {
            if (!ml_add_u64(mtp, t->params, &mtp))
                return ml_diag_set(b->diag, ML_ERR_OVERFLOW, _("parameter total overflows"));
            inv->by_group[ML_GROUP_MTP] += t->params;
            continue;
        }
        uint64_t act = 0;
        if (t->params) {
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
    return ML_OK;
}

enum ml_status ml_inventory_build(const struct ml_arch *arch, struct ml_inventory *inv,
                                  struct ml_diag *diag)
{
    memset(inv, 0, sizeof(*inv));
    enum ml_status st = ml_arch_validate(arch, diag);
    if (st != ML_OK)
        return st;
    struct builder b = {inv, diag, ML_OK, false};
    switch (arch->stack) {
    case ML_STACK_ENCODER:
        build_bert(&b, arch);
        break;
    case ML_STACK_ENCODER_DECODER:
        build_t5(&b, arch);
        break;
    case ML_STACK_DECODER:
        build_decoder(&b, arch);
        break;
    }
    if (b.st != ML_OK)
        return b.st;
    return totals(&b, arch);
}
