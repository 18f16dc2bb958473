/*
 * arch_read.c - the config readers: the keys of one config object -> struct ml_arch (family.h).
 *
 * Each reader reads the keys its transformers configuration class defines
 * (configuration_<family>.py, or the model's remote code for qwen, chatglm, baichuan, internlm2,
 * deepseek) and fills the generic struct; families whose configs read alike share one. Missing
 * keys take the class defaults listed in docs/models.md (the MoE ones come from the family's
 * row); the four size keys with no meaningful default (vocabulary, width, depth, heads) are
 * required. The config is reached through struct ml_cfg_ops only: no JSON library, no I/O.
 */
#include "family.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"

/* Upper bounds that catch absurd values before they reach the arithmetic. */
#define MAX_WIDTH     ((uint64_t)1 << 22) /* hidden / ffn widths: 4,194,304 */
#define MAX_VOCAB     ((uint64_t)1 << 25) /* 33,554,432 rows */
#define MAX_HEADS     65536u
#define MAX_EXPERTS   65536u
#define MAX_POSITIONS ((uint64_t)1 << 40)

const char *ml_dtype_name(enum ml_dtype d)
{
    switch (d) {
    case ML_DTYPE_FP32: return "fp32";
    case ML_DTYPE_FP16: return "fp16";
    case ML_DTYPE_BF16: return "bf16";
    case ML_DTYPE_FP8: return "fp8";
    case ML_DTYPE_INT8: return "int8";
    case ML_DTYPE_INT4: return "int4";
    case ML_DTYPE_UNKNOWN: break;
    }
    return "unknown";
}

bool ml_arch_layer_is_moe(const struct ml_arch *a, uint32_t i)
{
    if (i >= ML_MAX_LAYERS || a->n_experts == 0)
        return false;
    return (a->moe_layer_mask[i / 8] >> (i % 8)) & 1u;
}

uint32_t ml_arch_n_moe_layers(const struct ml_arch *a)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < a->n_layers && i < ML_MAX_LAYERS; i++)
        n += ml_arch_layer_is_moe(a, i);
    return n;
}

enum ml_layer_attn ml_arch_layer_attn(const struct ml_arch *a, uint32_t i)
{
    return i < ML_MAX_LAYERS && i < a->n_layers ? (enum ml_layer_attn)a->layer_attn[i] : ML_LAYER_FULL;
}

uint32_t ml_arch_n_layers_attn(const struct ml_arch *a, enum ml_layer_attn k)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < a->n_layers && i < ML_MAX_LAYERS; i++)
        n += a->layer_attn[i] == k;
    return n;
}

const char *ml_layer_attn_name(enum ml_layer_attn k)
{
    switch (k) {
    case ML_LAYER_FULL: return "full";
    case ML_LAYER_SLIDING: return "sliding";
    case ML_LAYER_CHUNKED: return "chunked";
    case ML_LAYER_LINEAR: return "linear";
    }
    return "unknown";
}

static uint64_t dtype_bytes(enum ml_dtype d, uint64_t def)
{
    switch (d) {
    case ML_DTYPE_FP32: return 4;
    case ML_DTYPE_FP16:
    case ML_DTYPE_BF16: return 2;
    case ML_DTYPE_FP8:
    case ML_DTYPE_INT8: return 1;
    case ML_DTYPE_INT4:
    case ML_DTYPE_UNKNOWN: break;
    }
    return def;
}

uint64_t ml_arch_linear_state_bytes(const struct ml_arch *a, uint64_t elem_bytes)
{
    /* Qwen3NextGatedDeltaNet / vLLM MambaStateShapeCalculator.gated_delta_net_state_shape: the
     * conv state holds the last K - 1 inputs of the conv1d over q, k and v (2 key_dim + value_dim
     * channels); the recurrent state one k_dim x v_dim matrix per value head. */
    const struct ml_linear_attn *l = &a->lin;
    if (!l->v_heads || !l->conv_kernel)
        return 0;
    uint64_t conv_dim = 2 * (uint64_t)l->k_heads * l->k_dim + (uint64_t)l->v_heads * l->v_dim;
    uint64_t conv = conv_dim * (l->conv_kernel - 1) * elem_bytes;
    uint64_t state = (uint64_t)l->v_heads * l->k_dim * l->v_dim * dtype_bytes(l->state_dtype, 4);
    return conv + state;
}

static void set_moe_layer(struct ml_arch *a, uint32_t i, bool on)
{
    if (i >= ML_MAX_LAYERS)
        return;
    if (on)
        a->moe_layer_mask[i / 8] |= (uint8_t)(1u << (i % 8));
    else
        a->moe_layer_mask[i / 8] &= (uint8_t) ~(1u << (i % 8));
}

/* ---- key readers ------------------------------------------------------------------------ */

struct ml_reader {
    const struct ml_cfg_ops *ops;
    const void *obj;    /* the config object */
    const char *origin; /* file name for diagnostics */
    struct ml_diag *diag;
    const char *type;                /* model_type, for messages */
    bool failed;                     /* a reader already recorded an error */
    const struct ml_family_def *fam; /* the row being read: its class defaults */
};

static enum ml_status fail(struct ml_reader *r, enum ml_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum ml_status fail(struct ml_reader *r, enum ml_status st, const char *fmt, ...)
{
    if (r->failed)
        return st;
    r->failed = true;
    va_list ap;
    va_start(ap, fmt);
    ml_diag_vset(r->diag, st, fmt, ap);
    va_end(ap);
    ml_diag_at(r->diag, r->origin, 0, 0);
    return st;
}

/* The member key of the config into *v (ML_CFG_ABSENT if there is none). */
static void get(struct ml_reader *r, const char *key, struct ml_cfg_value *v)
{
    r->ops->value(r->ops->member(r->obj, key), v);
}

/* The first of names present and not null into *v; false (and *v absent) if none is. */
static bool find(struct ml_reader *r, const char *const *names, const char **which, struct ml_cfg_value *v)
{
    for (; *names; names++) {
        get(r, *names, v);
        if (v->kind != ML_CFG_ABSENT && v->kind != ML_CFG_NULL) {
            *which = *names;
            return true;
        }
    }
    v->kind = ML_CFG_ABSENT;
    return false;
}

/*
 * Read an integer key (first of names present). Checks: a JSON number, finite, integral, within
 * [lo, hi]. Absent or null: *out = def, or an error if required.
 */
static uint64_t get_int(struct ml_reader *r, const char *const *names, bool required, uint64_t def, uint64_t lo,
                        uint64_t hi)
{
    const char *key = names[0];
    struct ml_cfg_value it;
    if (!find(r, names, &key, &it)) {
        if (required)
            fail(r, ML_ERR_INVALID, _("missing '%s' (required for model_type '%s')"), names[0], r->type);
        return def;
    }
    if (it.kind == ML_CFG_BOOL) {
        fail(r, ML_ERR_INVALID, _("'%s' must be a number, not a boolean"), key);
        return def;
    }
    if (it.kind != ML_CFG_NUMBER) {
        fail(r, ML_ERR_INVALID, _("'%s' must be a number"), key);
        return def;
    }
    double v = it.num;
    if (!isfinite(v)) {
        fail(r, ML_ERR_INVALID, _("'%s' is not a finite number"), key);
        return def;
    }
    if (v < 0) {
        fail(r, ML_ERR_INVALID, _("'%s' is negative (%.0f)"), key, v);
        return def;
    }
    if (v != floor(v)) {
        fail(r, ML_ERR_INVALID, _("'%s' must be a whole number, got %g"), key, v);
        return def;
    }
    if (v < (double)lo || v > (double)hi) {
        fail(r, ML_ERR_INVALID, _("'%s' = %.0f is out of range [%llu, %llu]"), key, v, (unsigned long long)lo,
             (unsigned long long)hi);
        return def;
    }
    return (uint64_t)v;
}

/* hidden / heads, or 0 when heads failed to parse (the failure is already recorded). */
static uint64_t per_head(uint64_t hidden, uint32_t heads)
{
    return heads ? hidden / heads : 0;
}

static uint64_t req(struct ml_reader *r, const char *const *names, uint64_t lo, uint64_t hi)
{
    return get_int(r, names, true, 0, lo, hi);
}

static uint64_t opt(struct ml_reader *r, const char *const *names, uint64_t def, uint64_t lo, uint64_t hi)
{
    return get_int(r, names, false, def, lo, hi);
}

/* A size key: absent or null, the configuration class's default (family.h ml_size_defaults), as
 * transformers reads it; required where the row has none (def 0). */
static uint64_t size_key(struct ml_reader *r, const char *const *names, uint64_t def, uint64_t lo, uint64_t hi)
{
    return def ? opt(r, names, def, lo, hi) : req(r, names, lo, hi);
}

static bool get_bool(struct ml_reader *r, const char *key, bool def)
{
    struct ml_cfg_value it;
    get(r, key, &it);
    if (it.kind == ML_CFG_ABSENT || it.kind == ML_CFG_NULL)
        return def;
    if (it.kind == ML_CFG_BOOL)
        return it.b;
    if (it.kind == ML_CFG_NUMBER && (it.num == 0 || it.num == 1))
        return it.num != 0;
    fail(r, ML_ERR_INVALID, _("'%s' must be true or false"), key);
    return def;
}

/* A fraction in [0, 1] (partial_rotary_factor); returns def if absent. */
static double get_fraction(struct ml_reader *r, const char *key, double def)
{
    struct ml_cfg_value it;
    get(r, key, &it);
    if (it.kind == ML_CFG_ABSENT || it.kind == ML_CFG_NULL)
        return def;
    if (it.kind != ML_CFG_NUMBER || !isfinite(it.num) || it.num < 0 || it.num > 1) {
        fail(r, ML_ERR_INVALID, _("'%s' must be a number between 0 and 1"), key);
        return def;
    }
    return it.num;
}

static const char *get_str(struct ml_reader *r, const char *key)
{
    struct ml_cfg_value it;
    get(r, key, &it);
    if (it.kind == ML_CFG_ABSENT || it.kind == ML_CFG_NULL)
        return NULL;
    if (it.kind != ML_CFG_STRING) {
        fail(r, ML_ERR_INVALID, _("'%s' must be a string"), key);
        return NULL;
    }
    return it.str;
}

/* Is key present at all (an explicit null counts)? */
static bool has_key(struct ml_reader *r, const char *key)
{
    return r->ops->member(r->obj, key) != NULL;
}

/* The list at key, or NULL when the key is absent or null; one that is not a list fails with
 * not_list (a format taking the key). */
static const void *list_at(struct ml_reader *r, const char *key, const char *not_list)
{
    const void *list = r->ops->member(r->obj, key);
    struct ml_cfg_value it;
    r->ops->value(list, &it);
    if (it.kind == ML_CFG_ABSENT || it.kind == ML_CFG_NULL)
        return NULL;
    if (it.kind != ML_CFG_ARRAY) {
        fail(r, ML_ERR_INVALID, not_list, key);
        return NULL;
    }
    return list;
}

/* mlp_only_layers: a list of layer indices that keep a dense MLP. */
static void read_dense_layers(struct ml_reader *r, struct ml_arch *a, const char *key)
{
    const void *list = list_at(r, key, _("'%s' must be a list of layer indices"));
    struct ml_cfg_value it;
    if (!list)
        return;
    for (const void *e = r->ops->first(list); e; e = r->ops->next(e)) {
        r->ops->value(e, &it);
        if (it.kind != ML_CFG_NUMBER || !isfinite(it.num) || it.num < 0 || it.num != floor(it.num) ||
            it.num >= a->n_layers) {
            fail(r, ML_ERR_INVALID, _("'%s' holds a value that is not a layer index below %u"), key, a->n_layers);
            return;
        }
        set_moe_layer(a, (uint32_t)it.num, false);
    }
}

static enum ml_dtype parse_dtype(const char *s)
{
    if (!s)
        return ML_DTYPE_UNKNOWN;
    if (!strcmp(s, "float32") || !strcmp(s, "fp32"))
        return ML_DTYPE_FP32;
    if (!strcmp(s, "float16") || !strcmp(s, "fp16") || !strcmp(s, "half"))
        return ML_DTYPE_FP16;
    if (!strcmp(s, "bfloat16") || !strcmp(s, "bf16"))
        return ML_DTYPE_BF16;
    if (!strncmp(s, "float8", 6) || !strcmp(s, "fp8"))
        return ML_DTYPE_FP8;
    return ML_DTYPE_UNKNOWN;
}

/* ---- shared pieces ------------------------------------------------------------------------ */

/* Sizes every decoder config names the same way (LlamaConfig and its descendants). */
static void read_llama_like(struct ml_reader *r, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &r->fam->sizes;
    a->vocab = size_key(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = size_key(r, KEYS("hidden_size"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)size_key(r, KEYS("num_hidden_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)size_key(r, KEYS("num_attention_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = (uint32_t)opt(r, KEYS("num_key_value_heads"), d->kv_heads ? d->kv_heads : a->n_heads, 1, MAX_HEADS);
    a->head_dim = d->head_dim ? d->head_dim : per_head(a->hidden, a->n_heads);
    a->head_dim = opt(r, KEYS("head_dim"), a->head_dim, 1, MAX_WIDTH);
    a->intermediate = size_key(r, KEYS("intermediate_size"), d->intermediate, 1, MAX_WIDTH);
    a->max_positions = opt(r, KEYS("max_position_embeddings"), d->positions ? d->positions : 2048, 1, MAX_POSITIONS);
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
    uint64_t w =
        opt(r, KEYS("sliding_window"), has_key(r, "sliding_window") ? 0 : r->fam->sizes.window, 0, MAX_POSITIONS);
    if (gated_by_use_key && !get_bool(r, "use_sliding_window", false))
        w = 0;
    if (w >= a->max_positions)
        w = 0; /* a window as long as the context is full attention */
    a->sliding_window = w;
    for (uint32_t i = 0; i < a->n_layers && i < ML_MAX_LAYERS; i++)
        a->layer_attn[i] = w ? ML_LAYER_SLIDING : ML_LAYER_FULL;
}

/* Qwen-MoE style: every decoder_sparse_step-th layer is MoE except mlp_only_layers. */
static void read_qwen_moe(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    a->n_experts = (uint32_t)opt(r, KEYS("num_experts"), f->moe.experts, 0, MAX_EXPERTS);
    a->top_k = (uint32_t)opt(r, KEYS("num_experts_per_tok"), f->moe.top_k, 1, MAX_EXPERTS);
    a->moe_intermediate = opt(r, KEYS("moe_intermediate_size"), f->moe.intermediate, 1, MAX_WIDTH);
    uint64_t step = opt(r, KEYS("decoder_sparse_step"), 1, 1, ML_MAX_LAYERS);
    for (uint32_t i = 0; i < a->n_layers; i++)
        set_moe_layer(a, i, a->n_experts > 0 && (i + 1) % step == 0);
    read_dense_layers(r, a, "mlp_only_layers");
}

/* ---- Llama and its descendants ---------------------------------------------------------- */

void ml_read_llama(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* LlamaConfig: attention_bias covers q/k/v/o, mlp_bias gate/up/down. */
    (void)f;
    read_llama_like(r, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", false);
    a->mlp_bias = get_bool(r, "mlp_bias", false);
}

void ml_read_mistral(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    read_llama_like(r, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    read_sliding(r, a, false);
}

void ml_read_mixtral(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* MixtralConfig: every layer is sparse; each expert is as wide as intermediate_size. */
    ml_read_mistral(r, f, a);
    a->n_experts = (uint32_t)opt(r, KEYS("num_local_experts"), f->moe.experts, 1, MAX_EXPERTS);
    a->top_k = (uint32_t)opt(r, KEYS("num_experts_per_tok"), f->moe.top_k, 1, MAX_EXPERTS);
    a->moe_intermediate = a->intermediate;
    for (uint32_t i = 0; i < a->n_layers; i++)
        set_moe_layer(a, i, true);
}

void ml_read_qwen(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Qwen v1 remote code: c_attn (h -> 3 * kv_channels * heads, biased), c_proj;
     * w1/w2/c_proj each intermediate_size / 2 wide. */
    (void)f;
    a->vocab = req(r, KEYS("vocab_size"), 1, MAX_VOCAB);
    a->hidden = req(r, KEYS("hidden_size"), 1, MAX_WIDTH);
    a->n_layers = (uint32_t)req(r, KEYS("num_hidden_layers"), 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)req(r, KEYS("num_attention_heads"), 1, MAX_HEADS);
    a->n_kv_heads = a->n_heads;
    a->head_dim = opt(r, KEYS("kv_channels"), per_head(a->hidden, a->n_heads), 1, MAX_WIDTH);
    a->intermediate = req(r, KEYS("intermediate_size"), 2, MAX_WIDTH) / 2;
    a->max_positions = opt(r, KEYS("seq_length", "max_position_embeddings"), 8192, 1, MAX_POSITIONS);
    a->rotary_dim = (uint64_t)((double)a->head_dim * get_fraction(r, "rotary_pct", 1.0));
    a->qkv_bias = true;
    a->o_bias = !get_bool(r, "no_bias", true);
    a->mlp_bias = a->o_bias;
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->norm = ML_NORM_RMS;
    a->norms_per_layer = 2;
    a->final_norm = true;
    a->gated_mlp = true;
}

void ml_read_qwen2(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    read_llama_like(r, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = true; /* Qwen2Attention: q/k/v bias=True, o_proj bias=False */
    read_sliding(r, a, true);
}

void ml_read_qwen2_moe(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    ml_read_qwen2(r, f, a);
    read_qwen_moe(r, f, a);
    a->shared_intermediate = opt(r, KEYS("shared_expert_intermediate_size"), f->moe.shared_intermediate, 0, MAX_WIDTH);
    a->n_shared_experts = a->shared_intermediate ? 1 : 0;
    a->shared_expert_gate = a->n_shared_experts > 0;
}

void ml_read_qwen3(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    read_llama_like(r, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", false);
    a->qk_norm = true;
    a->qk_norm_kind = ML_NORM_RMS;
    read_sliding(r, a, true);
}

void ml_read_qwen3_moe(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    ml_read_qwen3(r, f, a);
    read_qwen_moe(r, f, a);
}

void ml_read_gemma(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* GemmaConfig: head_dim 256 and tied embeddings by default. */
    (void)f;
    read_llama_like(r, a);
    a->head_dim = opt(r, KEYS("head_dim"), 256, 1, MAX_WIDTH);
    a->rotary_dim = a->head_dim;
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", false);
}

void ml_read_gemma2(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Gemma2Config: pre/post-feedforward norms, sliding windows on every other layer. */
    ml_read_gemma(r, f, a);
    a->norms_per_layer = 4;
    a->sliding_window = opt(r, KEYS("sliding_window"), 4096, 0, MAX_POSITIONS);
    /* Gemma2DecoderLayer: is_sliding = not bool(layer_idx % 2). */
    for (uint32_t i = 0; i < a->n_layers && i < ML_MAX_LAYERS; i++)
        a->layer_attn[i] = a->sliding_window && i % 2 == 0 ? ML_LAYER_SLIDING : ML_LAYER_FULL;
}

void ml_read_phi(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* PhiConfig: every linear biased, one LayerNorm per (parallel) block, lm_head bias. */
    (void)f;
    read_llama_like(r, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = a->mlp_bias = a->lm_head_bias = true;
    a->norm = ML_NORM_LAYER;
    a->norms_per_layer = 1;
    a->gated_mlp = false;
    a->qk_norm = get_bool(r, "qk_layernorm", false);
    a->qk_norm_kind = ML_NORM_LAYER;
    a->rotary_dim = (uint64_t)((double)a->head_dim * get_fraction(r, "partial_rotary_factor", 0.5));
}

void ml_read_phi3(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    read_llama_like(r, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->rotary_dim = (uint64_t)((double)a->head_dim * get_fraction(r, "partial_rotary_factor", 1.0));
    read_sliding(r, a, false);
}

void ml_read_starcoder2(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    read_llama_like(r, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = a->mlp_bias = get_bool(r, "use_bias", true);
    const char *nt = get_str(r, "norm_type");
    a->norm = (nt && !strcmp(nt, "rms_norm")) ? ML_NORM_RMS : ML_NORM_LAYER;
    a->gated_mlp = false;
    read_sliding(r, a, false);
}

void ml_read_internlm2(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* InternLM2 remote code: fused wqkv and wo carry `bias`; w1/w3/w2 never do. */
    (void)f;
    read_llama_like(r, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = get_bool(r, "bias", true);
}

void ml_read_baichuan(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Baichuan remote code: W_pack (h -> 3h, no bias), NormHead lm_head (V x h). */
    (void)f;
    read_llama_like(r, a);
    a->max_positions = opt(r, KEYS("model_max_length", "max_position_embeddings"), 4096, 1, MAX_POSITIONS);
    a->n_kv_heads = a->n_heads;
    a->tie_embeddings = false;
}

void ml_read_deepseek(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* DeepseekV2Config / DeepseekV3Config: MLA, routed + shared experts, group-limited routing,
     * leading dense layers, MTP; the two differ only in the class defaults (the row's). */
    const struct ml_moe_defaults *m = &f->moe;
    read_llama_like(r, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", false);
    a->q_lora_rank = opt(r, KEYS("q_lora_rank"), 0, 0, MAX_WIDTH);
    if (!has_key(r, "q_lora_rank"))
        a->q_lora_rank = 1536; /* class default; an explicit null means "no q compression" */
    a->kv_lora_rank = opt(r, KEYS("kv_lora_rank"), 512, 1, MAX_WIDTH);
    a->qk_nope_head_dim = opt(r, KEYS("qk_nope_head_dim"), 128, 0, MAX_WIDTH);
    a->qk_rope_head_dim = opt(r, KEYS("qk_rope_head_dim"), 64, 0, MAX_WIDTH);
    a->v_head_dim = opt(r, KEYS("v_head_dim"), 128, 1, MAX_WIDTH);
    a->head_dim = a->qk_nope_head_dim + a->qk_rope_head_dim;
    a->rotary_dim = a->qk_rope_head_dim;
    a->n_experts = (uint32_t)opt(r, KEYS("n_routed_experts"), m->experts, 0, MAX_EXPERTS);
    a->top_k = (uint32_t)opt(r, KEYS("num_experts_per_tok"), m->top_k, 1, MAX_EXPERTS);
    a->moe_intermediate = opt(r, KEYS("moe_intermediate_size"), m->intermediate, 1, MAX_WIDTH);
    a->n_shared_experts = (uint32_t)opt(r, KEYS("n_shared_experts"), m->shared_experts, 0, MAX_EXPERTS);
    a->shared_intermediate = a->moe_intermediate * a->n_shared_experts;
    a->n_group = (uint32_t)opt(r, KEYS("n_group"), m->n_group, 1, MAX_EXPERTS);
    a->topk_group = (uint32_t)opt(r, KEYS("topk_group"), m->topk_group, 1, MAX_EXPERTS);
    const char *tm = get_str(r, "topk_method");
    if (!tm)
        tm = m->topk_method;
    a->router_bias = tm && !strcmp(tm, "noaux_tc");
    uint64_t first_dense = opt(r, KEYS("first_k_dense_replace"), m->first_dense, 0, ML_MAX_LAYERS);
    uint64_t freq = opt(r, KEYS("moe_layer_freq"), 1, 1, ML_MAX_LAYERS);
    for (uint32_t i = 0; i < a->n_layers; i++)
        set_moe_layer(a, i, a->n_experts > 0 && i >= first_dense && i % freq == 0);
    a->n_mtp_layers = (uint32_t)opt(r, KEYS("num_nextn_predict_layers"), 0, 0, 64);
}

/* ---- other decoder layouts ---------------------------------------------------------------- */

void ml_read_gpt2(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = size_key(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = size_key(r, KEYS("n_embd", "hidden_size"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)size_key(r, KEYS("n_layer", "num_hidden_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)size_key(r, KEYS("n_head", "num_attention_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = a->n_heads;
    a->head_dim = per_head(a->hidden, a->n_heads);
    a->intermediate = opt(r, KEYS("n_inner"), 4 * a->hidden, 1, MAX_WIDTH);
    a->max_positions = opt(r, KEYS("n_positions", "max_position_embeddings"), d->positions, 1, MAX_POSITIONS);
    a->learned_positions = a->max_positions;
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = a->mlp_bias = true;
    a->norm = ML_NORM_LAYER;
    a->norms_per_layer = 2;
    a->final_norm = true;
}

void ml_read_gpt_neox(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    read_llama_like(r, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", true);
    a->mlp_bias = true;
    a->norm = ML_NORM_LAYER;
    a->gated_mlp = false;
    a->rotary_dim = (uint64_t)((double)a->head_dim * get_fraction(r, "rotary_pct", 0.25));
}

void ml_read_falcon(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* FalconConfig: new_decoder_architecture -> num_kv_heads groups and two LayerNorms;
     * otherwise multi_query -> one K/V head; parallel_attn -> one LayerNorm. */
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = size_key(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = size_key(r, KEYS("hidden_size", "n_embed"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)size_key(r, KEYS("num_hidden_layers", "n_layer"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)size_key(r, KEYS("num_attention_heads", "n_head"), d->heads, 1, MAX_HEADS);
    a->head_dim = per_head(a->hidden, a->n_heads);
    bool new_arch = get_bool(r, "new_decoder_architecture", false);
    bool mq = get_bool(r, "multi_query", true);
    bool parallel = get_bool(r, "parallel_attn", true);
    if (new_arch)
        a->n_kv_heads = (uint32_t)opt(r, KEYS("num_kv_heads", "n_head_kv"), a->n_heads, 1, MAX_HEADS);
    else
        a->n_kv_heads = mq ? 1 : a->n_heads;
    a->intermediate = opt(r, KEYS("ffn_hidden_size"), 4 * a->hidden, 1, MAX_WIDTH);
    a->max_positions = opt(r, KEYS("max_position_embeddings"), 2048, 1, MAX_POSITIONS);
    a->rotary_dim = get_bool(r, "alibi", false) ? 0 : a->head_dim;
    a->qkv_bias = a->o_bias = a->mlp_bias = get_bool(r, "bias", false);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
    a->norm = ML_NORM_LAYER;
    a->norms_per_layer = new_arch ? (uint32_t)opt(r, KEYS("num_ln_in_parallel_attn"), 2, 1, 2) : (parallel ? 1 : 2);
    /* FalconDecoderLayer: ln_attn + ln_mlp for a parallel block with num_ln_in_parallel_attn 2. */
    a->branch_norms = new_arch && parallel && a->norms_per_layer == 2;
    a->final_norm = true;
}

void ml_read_bloom(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = size_key(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = size_key(r, KEYS("hidden_size", "n_embed"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)size_key(r, KEYS("n_layer", "num_hidden_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)size_key(r, KEYS("n_head", "num_attention_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = a->n_heads;
    a->head_dim = per_head(a->hidden, a->n_heads);
    a->intermediate = 4 * a->hidden;                                       /* BloomMLP: dense_h_to_4h */
    a->max_positions = opt(r, KEYS("seq_length"), 2048, 1, MAX_POSITIONS); /* ALiBi */
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = a->mlp_bias = true;
    a->norm = ML_NORM_LAYER;
    a->norms_per_layer = 2;
    a->final_norm = true;
    a->embed_norm = true;
}

void ml_read_opt(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = size_key(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = size_key(r, KEYS("hidden_size"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)size_key(r, KEYS("num_hidden_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)size_key(r, KEYS("num_attention_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = a->n_heads;
    a->head_dim = per_head(a->hidden, a->n_heads);
    a->intermediate = size_key(r, KEYS("ffn_dim"), d->intermediate, 1, MAX_WIDTH);
    a->max_positions = opt(r, KEYS("max_position_embeddings"), 2048, 1, MAX_POSITIONS);
    /* OPTLearnedPositionalEmbedding keeps 2 extra rows (offset). */
    a->learned_positions = a->max_positions + 2;
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = a->mlp_bias = get_bool(r, "enable_bias", true);
    a->norm = ML_NORM_LAYER;
    a->norms_per_layer = 2;
    a->final_norm = get_bool(r, "do_layer_norm_before", true) && !get_bool(r, "_remove_final_layer_norm", false);
    /* word_embed_proj_dim != hidden adds project_in/out (OPT-350m): not modelled. */
    uint64_t proj = opt(r, KEYS("word_embed_proj_dim"), a->hidden, 1, MAX_WIDTH);
    if (proj != a->hidden)
        fail(r, ML_ERR_UNSUPPORTED,
             _("'word_embed_proj_dim' (%llu) differs from 'hidden_size' (%llu): OPT projection layers are not "
               "supported"),
             (unsigned long long)proj, (unsigned long long)a->hidden);
}

void ml_read_chatglm(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* ChatGLM remote code: query_key_value is h -> heads*kv_channels + 2*groups*kv_channels;
     * dense_h_to_4h is fused gate+up (2 * ffn_hidden_size); output_layer is never tied. */
    (void)f;
    a->vocab = req(r, KEYS("padded_vocab_size", "vocab_size"), 1, MAX_VOCAB);
    a->hidden = req(r, KEYS("hidden_size"), 1, MAX_WIDTH);
    a->n_layers = (uint32_t)req(r, KEYS("num_layers", "num_hidden_layers"), 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)req(r, KEYS("num_attention_heads"), 1, MAX_HEADS);
    a->head_dim = opt(r, KEYS("kv_channels"), per_head(a->hidden, a->n_heads), 1, MAX_WIDTH);
    a->n_kv_heads = get_bool(r, "multi_query_attention", false)
                        ? (uint32_t)opt(r, KEYS("multi_query_group_num"), 1, 1, MAX_HEADS)
                        : a->n_heads;
    a->intermediate = req(r, KEYS("ffn_hidden_size"), 1, MAX_WIDTH);
    a->max_positions = opt(r, KEYS("seq_length"), 2048, 1, MAX_POSITIONS);
    a->rotary_dim = a->head_dim / 2; /* RotaryEmbedding(kv_channels // 2) */
    a->qkv_bias = get_bool(r, "add_qkv_bias", false);
    a->o_bias = a->mlp_bias = get_bool(r, "add_bias_linear", false);
    a->tie_embeddings = false;
    a->norm = get_bool(r, "rmsnorm", true) ? ML_NORM_RMS : ML_NORM_LAYER;
    a->norms_per_layer = 2;
    a->final_norm = get_bool(r, "post_layer_norm", true);
    a->gated_mlp = true;
}

/* ---- encoder and encoder-decoder layouts ---------------------------------------------- */

void ml_read_bert(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    (void)f;
    read_llama_like(r, a);
    a->max_positions = opt(r, KEYS("max_position_embeddings"), 512, 1, MAX_POSITIONS);
    a->learned_positions = a->max_positions;
    a->type_vocab = opt(r, KEYS("type_vocab_size"), 2, 0, MAX_VOCAB);
    a->rotary_dim = 0;
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
    a->qkv_bias = a->o_bias = a->mlp_bias = true;
    a->norm = ML_NORM_LAYER;
    a->final_norm = false;
    a->embed_norm = true;
    a->gated_mlp = false;
}

void ml_read_t5(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = size_key(r, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = size_key(r, KEYS("d_model"), d->hidden, 1, MAX_WIDTH);
    a->n_encoder_layers = (uint32_t)size_key(r, KEYS("num_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_layers = (uint32_t)opt(r, KEYS("num_decoder_layers"), a->n_encoder_layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)size_key(r, KEYS("num_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = a->n_heads;
    a->head_dim = opt(r, KEYS("d_kv"), 64, 1, MAX_WIDTH);
    a->intermediate = opt(r, KEYS("d_ff"), 2048, 1, MAX_WIDTH);
    a->max_positions = opt(r, KEYS("n_positions"), 512, 1, MAX_POSITIONS);
    a->rel_attn_buckets = (uint32_t)opt(r, KEYS("relative_attention_num_buckets"), 32, 1, 65536);
    const char *ff = get_str(r, "feed_forward_proj");
    a->gated_mlp = ff && !strncmp(ff, "gated-", 6);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
    a->norm = ML_NORM_RMS; /* T5LayerNorm: weight only */
    a->final_norm = true;
}

/* ---- nested configs, layer kinds, context ------------------------------------------------ */

/* A reader on the object under key (text_config, vision_config); *present false (and a reader
 * on nothing) when the config has no such object. Failures are merged back by merge(). */
static struct ml_reader child(struct ml_reader *r, const char *key, bool *present)
{
    struct ml_reader c = *r;
    const void *o = r->ops->member(r->obj, key);
    struct ml_cfg_value v;
    r->ops->value(o, &v);
    *present = v.kind == ML_CFG_OBJECT;
    if (v.kind != ML_CFG_ABSENT && v.kind != ML_CFG_NULL && v.kind != ML_CFG_OBJECT)
        fail(r, ML_ERR_INVALID, _("'%s' must be an object"), key);
    c.obj = *present ? o : NULL;
    c.failed = r->failed;
    return c;
}

static void merge(struct ml_reader *r, const struct ml_reader *c)
{
    r->failed = r->failed || c->failed;
}

/* The language model's keys: text_config when the config nests one (transformers' sub_configs),
 * else the top level (Qwen2.5-VL's flat layout). */
static struct ml_reader text_of(struct ml_reader *r)
{
    bool nested;
    struct ml_reader t = child(r, "text_config", &nested);
    return nested ? t : *r;
}

/* tie_word_embeddings of a composite model: the text config's when it says, else the top level's. */
static bool get_tie(struct ml_reader *top, struct ml_reader *t, bool def)
{
    if (t->obj != top->obj && has_key(t, "tie_word_embeddings"))
        return get_bool(t, "tie_word_embeddings", def);
    return get_bool(top, "tie_word_embeddings", def);
}

/* layer_types, when the config lists them, over the family's default pattern already in a. */
static void read_layer_types(struct ml_reader *r, struct ml_arch *a)
{
    static const struct {
        const char *name;
        enum ml_layer_attn kind;
    } names[] = {{"full_attention", ML_LAYER_FULL},
                 {"sliding_attention", ML_LAYER_SLIDING},
                 {"chunked_attention", ML_LAYER_CHUNKED},
                 {"linear_attention", ML_LAYER_LINEAR}};
    const void *list = list_at(r, "layer_types", _("'%s' must be a list of strings"));
    struct ml_cfg_value it;
    if (!list)
        return;
    uint32_t n = 0;
    for (const void *e = r->ops->first(list); e; e = r->ops->next(e), n++) {
        r->ops->value(e, &it);
        size_t k = 0;
        while (k < sizeof(names) / sizeof(names[0]) && !(it.kind == ML_CFG_STRING && !strcmp(it.str, names[k].name)))
            k++;
        if (k == sizeof(names) / sizeof(names[0])) {
            fail(r, ML_ERR_UNSUPPORTED,
                 _("'layer_types' entry %u is not one of full_attention, sliding_attention, chunked_attention, "
                   "linear_attention"),
                 n);
            return;
        }
        if (n < a->n_layers && n < ML_MAX_LAYERS)
            a->layer_attn[n] = (uint8_t)names[k].kind;
    }
    if (n != a->n_layers)
        fail(r, ML_ERR_INVALID, _("'layer_types' has %u entries for %u layers"), n, a->n_layers);
}

/* Every interval-th layer (1-based) full attention, the others of kind k (Qwen3-Next's
 * full_attention_interval, Gemma 3's sliding_window_pattern, gpt-oss's alternation). */
static void layer_pattern(struct ml_arch *a, uint64_t interval, enum ml_layer_attn k)
{
    for (uint32_t i = 0; i < a->n_layers && i < ML_MAX_LAYERS; i++)
        a->layer_attn[i] = interval && (i + 1) % interval ? (uint8_t)k : (uint8_t)ML_LAYER_FULL;
}

static enum ml_rope_kind rope_kind(const char *t)
{
    static const struct {
        const char *name;
        enum ml_rope_kind kind;
    } k[] = {{"default", ML_ROPE_NONE}, {"linear", ML_ROPE_LINEAR}, {"dynamic", ML_ROPE_DYNAMIC},
             {"yarn", ML_ROPE_YARN},    {"llama3", ML_ROPE_LLAMA3}, {"longrope", ML_ROPE_LONGROPE},
             {"su", ML_ROPE_LONGROPE},  {"mrope", ML_ROPE_NONE}};
    for (size_t i = 0; t && i < sizeof(k) / sizeof(k[0]); i++)
        if (!strcmp(t, k[i].name))
            return k[i].kind;
    return t ? ML_ROPE_OTHER : ML_ROPE_NONE;
}

/*
 * rope_scaling (transformers v4) or rope_parameters (v5; per layer type when nested, the full
 * attention layers' entry counts), then the serving engines' derived context: vLLM's
 * _get_and_verify_max_len (vllm/config/model.py; ModelArchitectureConfig derived_max_model_len)
 * takes the smallest of the length keys present, then - unless the rope type is su, longrope or
 * llama3, or the model_type is a Gemma 3 one, whose length already includes its scaling - scales
 * it by the factor, from original_max_position_embeddings for yarn.
 */
static void read_context(struct ml_reader *top, struct ml_reader *t, struct ml_arch *a)
{
    static const char *const len_keys[] = {
        "max_position_embeddings", "n_positions",         "max_seq_len",    "seq_length",
        "model_max_length",        "max_sequence_length", "max_seq_length", "seq_len"};
    uint64_t derived = 0;
    for (size_t i = 0; i < sizeof(len_keys) / sizeof(len_keys[0]); i++) {
        struct ml_cfg_value v;
        get(t, len_keys[i], &v);
        if (v.kind == ML_CFG_NUMBER && isfinite(v.num) && v.num >= 1 && v.num <= (double)MAX_POSITIONS &&
            (!derived || (uint64_t)v.num < derived))
            derived = (uint64_t)v.num;
    }
    if (!derived)
        derived = a->max_positions ? a->max_positions : 2048;
    a->model_max_length = opt(t, KEYS("model_max_length"), 0, 0, MAX_POSITIONS);
    struct ml_reader rs = *t;
    bool present;
    struct ml_reader rp = child(t, "rope_scaling", &present);
    if (!present)
        rp = child(t, "rope_parameters", &present);
    if (present && !has_key(&rp, "rope_type") && !has_key(&rp, "type")) {
        bool nested;
        struct ml_reader full = child(&rp, "full_attention", &nested);
        if (nested)
            rp = full;
    }
    a->rope_factor_milli = 1000;
    if (present) {
        const char *type = has_key(&rp, "rope_type") ? get_str(&rp, "rope_type") : get_str(&rp, "type");
        a->rope = rope_kind(type);
        struct ml_cfg_value f;
        get(&rp, "factor", &f);
        if (f.kind == ML_CFG_NUMBER && isfinite(f.num) && f.num > 0 && f.num < 1e6)
            a->rope_factor_milli = (uint64_t)(f.num * 1000 + 0.5);
        a->rope_original = opt(&rp, KEYS("original_max_position_embeddings"), 0, 0, MAX_POSITIONS);
        merge(&rs, &rp);
    }
    bool gemma3 = strstr(a->model_type, "gemma3") != NULL;
    if (present && !gemma3 && a->rope != ML_ROPE_LLAMA3 && a->rope != ML_ROPE_LONGROPE) {
        if (a->rope == ML_ROPE_YARN && a->rope_original)
            derived = a->rope_original;
        derived = derived * a->rope_factor_milli / 1000;
    }
    a->engine_max_len = derived;
    merge(top, &rs);
}

/* torch_dtype, or dtype as transformers v5 writes it; a nested text config may carry it alone. */
static enum ml_dtype read_dtype(struct ml_reader *top)
{
    struct ml_reader t = text_of(top);
    struct ml_reader *in[2] = {top, &t};
    for (int i = 0; i < 2; i++) {
        const char *d = has_key(in[i], "torch_dtype") ? get_str(in[i], "torch_dtype") : get_str(in[i], "dtype");
        if (d)
            return parse_dtype(d);
    }
    return ML_DTYPE_UNKNOWN;
}

/* ---- vision towers ------------------------------------------------------------------------- */

static void read_siglip(struct ml_reader *r, struct ml_vision *v)
{
    /* SiglipVisionConfig: hidden 768, intermediate 3072, 12 layers, 12 heads, 224 px, patch 16. */
    v->hidden = opt(r, KEYS("hidden_size"), 768, 1, MAX_WIDTH);
    v->intermediate = opt(r, KEYS("intermediate_size"), 3072, 1, MAX_WIDTH);
    v->depth = (uint32_t)opt(r, KEYS("num_hidden_layers"), 12, 1, ML_MAX_LAYERS);
    v->heads = (uint32_t)opt(r, KEYS("num_attention_heads"), 12, 1, MAX_HEADS);
    v->channels = (uint32_t)opt(r, KEYS("num_channels"), 3, 1, 64);
    v->image_size = opt(r, KEYS("image_size"), 224, 1, 65536);
    v->patch = (uint32_t)opt(r, KEYS("patch_size"), 16, 1, 4096);
    v->temporal_patch = 1;
    v->positions = (v->image_size / v->patch) * (v->image_size / v->patch);
    if (get_bool(r, "vision_use_head", false))
        fail(r, ML_ERR_UNSUPPORTED, _("'vision_use_head': the SigLIP attention-pooling head is not modelled"));
}

static void read_qwen_vision(struct ml_reader *r, struct ml_vision *v, bool qwen3)
{
    /* Qwen2_5_VLVisionConfig / Qwen3VLVisionConfig: depth, widths, patch 14 / 16, temporal
     * patch 2, 2x2 merge; Qwen3 adds the position table (2304 rows) and deepstack mergers. */
    /* Absent: the class defaults (Qwen2_5_VLVisionConfig 32 / 3584 / 3420, Qwen3VLVisionConfig and
     * Qwen3_5VisionConfig 27 / 1152 / 4304, out_hidden_size 3584 in all three). */
    v->depth = (uint32_t)opt(r, KEYS("depth"), qwen3 ? 27 : 32, 1, ML_MAX_LAYERS);
    v->hidden = opt(r, KEYS("hidden_size"), qwen3 ? 1152 : 3584, 1, MAX_WIDTH);
    v->intermediate = opt(r, KEYS("intermediate_size"), qwen3 ? 4304 : 3420, 1, MAX_WIDTH);
    v->heads = (uint32_t)opt(r, KEYS("num_heads"), 16, 1, MAX_HEADS);
    v->channels = (uint32_t)opt(r, KEYS("in_channels", "in_chans"), 3, 1, 64);
    v->patch = (uint32_t)opt(r, KEYS("patch_size", "spatial_patch_size"), qwen3 ? 16 : 14, 1, 4096);
    v->temporal_patch = (uint32_t)opt(r, KEYS("temporal_patch_size"), 2, 1, 64);
    v->merge = (uint32_t)opt(r, KEYS("spatial_merge_size"), 2, 1, 64);
    v->out_hidden = opt(r, KEYS("out_hidden_size"), 3584, 1, MAX_WIDTH);
    if (!qwen3)
        return;
    v->positions = opt(r, KEYS("num_position_embeddings"), 2304, 0, MAX_VOCAB);
    const void *list = r->ops->member(r->obj, "deepstack_visual_indexes");
    struct ml_cfg_value lv;
    r->ops->value(list, &lv);
    for (const void *e = lv.kind == ML_CFG_ARRAY ? r->ops->first(list) : NULL; e; e = r->ops->next(e))
        v->deepstack++;
    if (!has_key(r, "deepstack_visual_indexes"))
        v->deepstack = r->fam->deepstack;
}

static void read_llama4_vision(struct ml_reader *r, struct ml_vision *v)
{
    /* Llama4VisionConfig: unfold patch embedding, class token, (image/patch)^2 + 1 positions,
     * pixel-shuffle MLP to projector_output_dim, then multi_modal_projector to the text width. */
    v->hidden = opt(r, KEYS("hidden_size"), 768, 1, MAX_WIDTH);
    v->intermediate = opt(r, KEYS("intermediate_size"), 5632, 1, MAX_WIDTH);
    v->depth = (uint32_t)opt(r, KEYS("num_hidden_layers"), 34, 1, ML_MAX_LAYERS);
    v->heads = (uint32_t)opt(r, KEYS("num_attention_heads"), 16, 1, MAX_HEADS);
    v->channels = (uint32_t)opt(r, KEYS("num_channels"), 3, 1, 64);
    v->image_size = opt(r, KEYS("image_size"), 448, 1, 65536);
    v->patch = (uint32_t)opt(r, KEYS("patch_size"), 14, 1, 4096);
    v->temporal_patch = 1;
    v->positions = (v->image_size / v->patch) * (v->image_size / v->patch) + 1;
    v->adapter_in = opt(r, KEYS("projector_input_dim"), 4096, 1, MAX_WIDTH);
    v->adapter_out = opt(r, KEYS("projector_output_dim"), 4096, 1, MAX_WIDTH);
    v->vision_out = opt(r, KEYS("vision_output_dim"), 7680, 1, MAX_WIDTH);
}

/* The family's tower from vision_config (required when the family has one). */
static void read_vision(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    if (f->vision == ML_VISION_NONE)
        return;
    bool present;
    struct ml_reader v = child(r, "vision_config", &present);
    if (!present) {
        fail(r, ML_ERR_INVALID, _("missing 'vision_config' (required for model_type '%s')"), r->type);
        return;
    }
    a->vision.kind = f->vision;
    switch (f->vision) {
    case ML_VISION_SIGLIP:
        read_siglip(&v, &a->vision);
        a->vision.tokens_per_image = (uint32_t)opt(r, KEYS("mm_tokens_per_image"), 256, 1, 1u << 20);
        break;
    case ML_VISION_QWEN2_5:
    case ML_VISION_QWEN3: read_qwen_vision(&v, &a->vision, f->vision == ML_VISION_QWEN3); break;
    case ML_VISION_LLAMA4: read_llama4_vision(&v, &a->vision); break;
    case ML_VISION_NONE: break;
    }
    merge(r, &v);
}

/* ---- the 2025-2026 families ------------------------------------------------------------------ */

void ml_read_gemma3(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Gemma3TextConfig: head_dim 256, q/k norms, four norms per layer, tied head, 131072
     * positions, a 4096 sliding window on 5 of every 6 layers (sliding_window_pattern). */
    struct ml_reader t = text_of(r);
    read_llama_like(&t, a);
    a->head_dim = opt(&t, KEYS("head_dim"), 256, 1, MAX_WIDTH);
    a->rotary_dim = a->head_dim;
    a->max_positions = opt(&t, KEYS("max_position_embeddings"), 131072, 1, MAX_POSITIONS);
    a->tie_embeddings = get_tie(r, &t, true);
    a->qkv_bias = a->o_bias = get_bool(&t, "attention_bias", false);
    a->qk_norm = true;
    a->qk_norm_kind = ML_NORM_RMS;
    a->norms_per_layer = 4;
    a->sliding_window = opt(&t, KEYS("sliding_window"), 4096, 1, MAX_POSITIONS);
    layer_pattern(a, opt(&t, KEYS("sliding_window_pattern"), 6, 1, ML_MAX_LAYERS), ML_LAYER_SLIDING);
    merge(r, &t);
    read_vision(r, f, a);
}

void ml_read_llama4(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Llama4TextConfig: experts of intermediate_size with one shared expert of the same width,
     * dense layers of intermediate_size_mlp; MoE layers range(step - 1, L, step); chunked
     * attention (attention_chunk_size) on the RoPE layers, global attention on every
     * no_rope_layer_interval-th (NoPE) layer. */
    struct ml_reader t = text_of(r);
    read_llama_like(&t, a);
    a->head_dim = opt(&t, KEYS("head_dim"), 128, 1, MAX_WIDTH);
    a->rotary_dim = a->head_dim;
    a->max_positions = opt(&t, KEYS("max_position_embeddings"), 4096 * 32, 1, MAX_POSITIONS);
    a->tie_embeddings = get_tie(r, &t, false);
    a->qkv_bias = a->o_bias = get_bool(&t, "attention_bias", false);
    a->moe_intermediate = a->intermediate;
    a->intermediate = opt(&t, KEYS("intermediate_size_mlp"), 16384, 1, MAX_WIDTH);
    a->n_experts = (uint32_t)opt(&t, KEYS("num_local_experts"), f->moe.experts, 1, MAX_EXPERTS);
    a->top_k = (uint32_t)opt(&t, KEYS("num_experts_per_tok"), f->moe.top_k, 1, MAX_EXPERTS);
    a->n_shared_experts = 1;
    a->shared_intermediate = a->moe_intermediate;
    uint64_t step = opt(&t, KEYS("interleave_moe_layer_step"), 1, 1, ML_MAX_LAYERS);
    for (uint32_t i = 0; i < a->n_layers; i++)
        set_moe_layer(a, i, (i + 1) % step == 0);
    a->attn_chunk = opt(&t, KEYS("attention_chunk_size"), 8192, 0, MAX_POSITIONS);
    uint64_t nope = opt(&t, KEYS("no_rope_layer_interval"), 4, 1, ML_MAX_LAYERS);
    layer_pattern(a, nope, a->attn_chunk ? ML_LAYER_CHUNKED : ML_LAYER_FULL);
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
    merge(r, &t);
    read_vision(r, f, a);
}

void ml_read_gpt_oss(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* GptOssConfig: biased attention with per-head sinks, every layer MoE with biased packed
     * experts and a biased router, sliding window 128 on the even layers. */
    read_llama_like(r, a);
    a->head_dim = opt(r, KEYS("head_dim"), 64, 1, MAX_WIDTH);
    a->rotary_dim = a->head_dim;
    a->max_positions = opt(r, KEYS("max_position_embeddings"), 131072, 1, MAX_POSITIONS);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", true);
    a->attn_sinks = true;
    a->n_experts = (uint32_t)opt(r, KEYS("num_local_experts"), f->moe.experts, 1, MAX_EXPERTS);
    a->top_k = (uint32_t)opt(r, KEYS("num_experts_per_tok", "experts_per_token"), f->moe.top_k, 1, MAX_EXPERTS);
    a->moe_intermediate = a->intermediate;
    a->expert_bias = a->router_linear_bias = true;
    for (uint32_t i = 0; i < a->n_layers; i++)
        set_moe_layer(a, i, true);
    a->sliding_window = opt(r, KEYS("sliding_window"), 128, 1, MAX_POSITIONS);
    layer_pattern(a, 2, ML_LAYER_SLIDING);
}

void ml_read_qwen2_5_vl(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Qwen2_5_VLTextConfig is Qwen2's (q/k/v biased); older checkpoints keep it at the top level. */
    struct ml_reader t = text_of(r);
    ml_read_qwen2(&t, f, a);
    a->tie_embeddings = get_tie(r, &t, false);
    merge(r, &t);
    read_vision(r, f, a);
}

void ml_read_qwen3_vl(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Qwen3VLTextConfig is Qwen3's; Qwen3VLMoeTextConfig Qwen3-MoE's (packed experts). */
    struct ml_reader t = text_of(r);
    ml_read_qwen3(&t, f, a);
    if (f->moe.experts)
        read_qwen_moe(&t, f, a);
    a->tie_embeddings = get_tie(r, &t, false);
    merge(r, &t);
    read_vision(r, f, a);
}

/* The hybrid stack of Qwen3-Next and Qwen3.5: Gated DeltaNet layers with gated full-attention
 * layers every full_attention_interval-th (default 4), partial rotary 0.25, q/k norms. */
static void read_hybrid(struct ml_reader *t, const struct ml_family_def *f, struct ml_arch *a)
{
    const struct ml_size_defaults *d = &f->sizes;
    a->vocab = size_key(t, KEYS("vocab_size"), d->vocab, 1, MAX_VOCAB);
    a->hidden = size_key(t, KEYS("hidden_size"), d->hidden, 1, MAX_WIDTH);
    a->n_layers = (uint32_t)size_key(t, KEYS("num_hidden_layers"), d->layers, 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)size_key(t, KEYS("num_attention_heads"), d->heads, 1, MAX_HEADS);
    a->n_kv_heads = (uint32_t)opt(t, KEYS("num_key_value_heads"), d->kv_heads, 1, MAX_HEADS);
    a->head_dim = opt(t, KEYS("head_dim"), d->head_dim, 1, MAX_WIDTH);
    a->intermediate = opt(t, KEYS("intermediate_size"), d->intermediate, 0, MAX_WIDTH);
    a->max_positions = opt(t, KEYS("max_position_embeddings"), d->positions, 1, MAX_POSITIONS);
    struct ml_reader rp = *t;
    bool nested;
    struct ml_reader rope = child(t, "rope_parameters", &nested);
    if (nested && has_key(&rope, "partial_rotary_factor"))
        rp = rope;
    a->rotary_dim = (uint64_t)((double)a->head_dim * get_fraction(&rp, "partial_rotary_factor", 0.25));
    merge(t, &rope);
    a->norm = ML_NORM_RMS;
    a->norms_per_layer = 2;
    a->final_norm = a->gated_mlp = true;
    a->qkv_bias = a->o_bias = get_bool(t, "attention_bias", false);
    a->qk_norm = true;
    a->qk_norm_kind = ML_NORM_RMS;
    a->q_gate = get_bool(t, "attn_output_gate", true);
    a->lin.k_heads = (uint32_t)opt(t, KEYS("linear_num_key_heads"), 16, 1, MAX_HEADS);
    a->lin.v_heads = (uint32_t)opt(t, KEYS("linear_num_value_heads"), 32, 1, MAX_HEADS);
    a->lin.k_dim = opt(t, KEYS("linear_key_head_dim"), 128, 1, MAX_WIDTH);
    a->lin.v_dim = opt(t, KEYS("linear_value_head_dim"), 128, 1, MAX_WIDTH);
    a->lin.conv_kernel = (uint32_t)opt(t, KEYS("linear_conv_kernel_dim"), 4, 2, 64);
    const char *sd = get_str(t, "mamba_ssm_dtype");
    a->lin.state_dtype = sd ? parse_dtype(sd) : ML_DTYPE_FP32;
    if (f->moe.experts) {
        read_qwen_moe(t, f, a);
        a->shared_intermediate =
            opt(t, KEYS("shared_expert_intermediate_size"), f->moe.shared_intermediate, 0, MAX_WIDTH);
        a->n_shared_experts = a->shared_intermediate ? 1 : 0;
        a->shared_expert_gate = a->n_shared_experts > 0;
    } else if (!a->intermediate) {
        a->intermediate = req(t, KEYS("intermediate_size"), 1, MAX_WIDTH);
    }
    layer_pattern(a, opt(t, KEYS("full_attention_interval"), 4, 1, ML_MAX_LAYERS), ML_LAYER_LINEAR);
    a->n_mtp_layers = (uint32_t)opt(t, KEYS("mtp_num_hidden_layers", "num_nextn_predict_layers"), 0, 0, 64);
}

void ml_read_qwen3_next(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    read_hybrid(r, f, a);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
}

void ml_read_qwen3_5(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    struct ml_reader t = text_of(r);
    read_hybrid(&t, f, a);
    a->tie_embeddings = get_tie(r, &t, false);
    merge(r, &t);
    read_vision(r, f, a);
}

void ml_read_deepseek_v32(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* DeepseekV32Config = DeepseekV3Config + the lightning indexer (index_n_heads 64,
     * index_head_dim 128). */
    ml_read_deepseek(r, f, a);
    a->index_heads = opt(r, KEYS("index_n_heads"), 64, 1, MAX_HEADS);
    a->index_head_dim = opt(r, KEYS("index_head_dim"), 128, 1, MAX_WIDTH);
}

void ml_read_glm4_moe(struct ml_reader *r, const struct ml_family_def *f, struct ml_arch *a)
{
    /* Glm4MoeConfig: q/k/v biased by attention_bias (o never), optional q/k norms, partial
     * rotary 0.5, first_k_dense_replace dense layers, routed + shared experts with the
     * e_score_correction_bias of noaux_tc routing, MTP layers. */
    const struct ml_moe_defaults *m = &f->moe;
    read_llama_like(r, a);
    a->max_positions = opt(r, KEYS("max_position_embeddings"), 131072, 1, MAX_POSITIONS);
    a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
    a->qkv_bias = get_bool(r, "attention_bias", false);
    a->qk_norm = get_bool(r, "use_qk_norm", false);
    a->qk_norm_kind = ML_NORM_RMS;
    a->rotary_dim = (uint64_t)((double)a->head_dim * get_fraction(r, "partial_rotary_factor", 0.5));
    a->n_experts = (uint32_t)opt(r, KEYS("n_routed_experts"), m->experts, 0, MAX_EXPERTS);
    a->top_k = (uint32_t)opt(r, KEYS("num_experts_per_tok"), m->top_k, 1, MAX_EXPERTS);
    a->moe_intermediate = opt(r, KEYS("moe_intermediate_size"), m->intermediate, 1, MAX_WIDTH);
    a->n_shared_experts = (uint32_t)opt(r, KEYS("n_shared_experts"), m->shared_experts, 0, MAX_EXPERTS);
    a->shared_intermediate = a->moe_intermediate * a->n_shared_experts;
    a->n_group = (uint32_t)opt(r, KEYS("n_group"), m->n_group, 1, MAX_EXPERTS);
    a->topk_group = (uint32_t)opt(r, KEYS("topk_group"), m->topk_group, 1, MAX_EXPERTS);
    a->router_bias = true;
    uint64_t first_dense = opt(r, KEYS("first_k_dense_replace"), m->first_dense, 0, ML_MAX_LAYERS);
    for (uint32_t i = 0; i < a->n_layers; i++)
        set_moe_layer(a, i, a->n_experts > 0 && i >= first_dense);
    a->n_mtp_layers = (uint32_t)opt(r, KEYS("num_nextn_predict_layers"), 0, 0, 64);
}

/* ---- quantized checkpoints ------------------------------------------------------------------- */

/* A group size as quantization configs write it: -1 (or 0) = one group per output row. */
static uint32_t get_group(struct ml_reader *r, const char *key, uint32_t def)
{
    struct ml_cfg_value v;
    get(r, key, &v);
    if (v.kind == ML_CFG_NUMBER && v.num < 0)
        return 0;
    return (uint32_t)opt(r, KEYS(key), def, 0, 1u << 20);
}

/* The module patterns a quantized checkpoint keeps in 16 bits. */
static void read_skip(struct ml_reader *q, const char *key, struct ml_weight_quant *w)
{
    const void *list = list_at(q, key, _("'quantization_config.%s' must be a list of module names"));
    struct ml_cfg_value it;
    if (!list)
        return;
    for (const void *e = q->ops->first(list); e; e = q->ops->next(e)) {
        q->ops->value(e, &it);
        if (it.kind != ML_CFG_STRING) {
            fail(q, ML_ERR_INVALID, _("'quantization_config.%s' must be a list of module names"), key);
            return;
        }
        if (w->n_skip < ML_WQ_MAX_SKIP)
            (void)snprintf(w->skip[w->n_skip++], sizeof(w->skip[0]), "%s", it.str);
    }
}

/* compressed-tensors: the first config group's weight scheme (config_groups.*.weights). */
static void read_compressed(struct ml_reader *q, struct ml_weight_quant *w)
{
    bool present, has = false;
    struct ml_reader groups = child(q, "config_groups", &present), g = groups, wts = groups;
    wts.obj = NULL;
    for (const void *e = present ? q->ops->first(groups.obj) : NULL; e && !wts.obj; e = q->ops->next(e)) {
        g.obj = e;
        wts = child(&g, "weights", &has);
    }
    if (!wts.obj) {
        fail(q, ML_ERR_UNSUPPORTED,
             _("'quantization_config': no compressed-tensors weight scheme under config_groups (group_0)"));
        return;
    }
    w->bits = (uint32_t)opt(&wts, KEYS("num_bits"), 8, 1, 16);
    const char *type = get_str(&wts, "type");
    const char *strategy = get_str(&wts, "strategy");
    bool fp = type && !strcmp(type, "float");
    w->method = fp && w->bits == 8 ? ML_WQ_FP8 : ML_WQ_INT;
    w->group = strategy && !strcmp(strategy, "group") ? get_group(&wts, "group_size", 128) : 0;
    w->zero = !get_bool(&wts, "symmetric", true);
    w->scale_bytes = fp ? 4 : 2;
    if (strategy && !strcmp(strategy, "block")) {
        const void *bs = wts.ops->member(wts.obj, "block_structure");
        const void *e0 = wts.ops->first(bs), *e1 = e0 ? wts.ops->next(e0) : NULL;
        struct ml_cfg_value v0, v1;
        wts.ops->value(e0, &v0);
        wts.ops->value(e1, &v1);
        if (v0.kind == ML_CFG_NUMBER && v1.kind == ML_CFG_NUMBER && v0.num >= 1 && v1.num >= 1 && v0.num < 65536 &&
            v1.num < 65536) {
            w->block_out = (uint32_t)v0.num;
            w->block_in = (uint32_t)v1.num;
        }
    }
    merge(q, &wts);
    merge(q, &g);
    merge(q, &groups);
    read_skip(q, "ignore", w);
}

/* fp8 weight_block_size [out, in]. */
static void read_fp8_blocks(struct ml_reader *q, struct ml_weight_quant *w)
{
    const void *bs = q->ops->member(q->obj, "weight_block_size");
    const void *e0 = q->ops->first(bs), *e1 = e0 ? q->ops->next(e0) : NULL;
    struct ml_cfg_value v0, v1;
    q->ops->value(e0, &v0);
    q->ops->value(e1, &v1);
    if (!bs)
        return;
    if (v0.kind != ML_CFG_NUMBER || v1.kind != ML_CFG_NUMBER || v0.num < 1 || v1.num < 1 || v0.num > 65536 ||
        v1.num > 65536 || v0.num != floor(v0.num) || v1.num != floor(v1.num)) {
        fail(q, ML_ERR_INVALID, _("'quantization_config.weight_block_size' must be two positive whole numbers"));
        return;
    }
    w->block_out = (uint32_t)v0.num;
    w->block_in = (uint32_t)v1.num;
}

/*
 * quantization_config (transformers utils/quantization_config.py: FineGrainedFP8Config / FbgemmFp8Config,
 * AwqConfig, GPTQConfig, BitsAndBytesConfig, CompressedTensorsConfig, Mxfp4Config): the stored
 * format of the weights, the bytes of its scales and zeros, and the modules it leaves alone.
 */
static void read_quant(struct ml_reader *top, struct ml_arch *a)
{
    bool present;
    struct ml_reader q = child(top, "quantization_config", &present);
    struct ml_weight_quant *w = &a->wq;
    if (!present) {
        merge(top, &q);
        return;
    }
    const char *m = get_str(&q, "quant_method");
    bool bnb4 = get_bool(&q, "load_in_4bit", false), bnb8 = get_bool(&q, "load_in_8bit", false);
    if (!m && (bnb4 || bnb8))
        m = "bitsandbytes";
    if (!m) {
        fail(&q, ML_ERR_INVALID, _("'quantization_config' has no 'quant_method'"));
        merge(top, &q);
        return;
    }
    (void)snprintf(w->name, sizeof(w->name), "%s", m);
    if (!strcmp(m, "fp8") || !strcmp(m, "fbgemm_fp8")) {
        /* e4m3 weights; DeepSeek's weight_scale_inv is fp32, one per 128 x 128 block. */
        *w = (struct ml_weight_quant){.method = ML_WQ_FP8, .bits = 8, .scale_bytes = 4};
        read_fp8_blocks(&q, w);
        read_skip(&q, "modules_to_not_convert", w);
    } else if (!strcmp(m, "awq")) {
        *w = (struct ml_weight_quant){.method = ML_WQ_AWQ, .scale_bytes = 2};
        w->bits = (uint32_t)opt(&q, KEYS("bits", "w_bit"), 4, 2, 8);
        w->group = get_group(&q, has_key(&q, "group_size") ? "group_size" : "q_group_size", 128);
        w->zero = get_bool(&q, "zero_point", true);
        read_skip(&q, "modules_to_not_convert", w);
    } else if (!strcmp(m, "gptq")) {
        /* AutoGPTQ / GPTQModel QuantLinear: qweight, qzeros (always), fp16 scales, g_idx. */
        *w = (struct ml_weight_quant){.method = ML_WQ_GPTQ, .scale_bytes = 2, .zero = true};
        w->bits = (uint32_t)opt(&q, KEYS("bits"), 4, 2, 8);
        w->group = get_group(&q, "group_size", 128);
        w->g_idx = get_bool(&q, "desc_act", false);
        w->lm_head = get_bool(&q, "lm_head", false);
    } else if (!strcmp(m, "bitsandbytes")) {
        const char *t = get_str(&q, "bnb_4bit_quant_type");
        if (bnb4)
            *w = (struct ml_weight_quant){.method = ML_WQ_BNB4,
                                          .bits = 4,
                                          .group = 64,
                                          .scale_bytes = 4,
                                          .double_quant = get_bool(&q, "bnb_4bit_use_double_quant", false),
                                          .fp4 = t && !strcmp(t, "fp4")};
        else
            *w = (struct ml_weight_quant){.method = ML_WQ_BNB8, .bits = 8, .scale_bytes = 4};
        read_skip(&q, "llm_int8_skip_modules", w);
    } else if (!strcmp(m, "compressed-tensors")) {
        *w = (struct ml_weight_quant){.method = ML_WQ_INT};
        read_compressed(&q, w);
    } else if (!strcmp(m, "mxfp4")) {
        *w = (struct ml_weight_quant){
            .method = ML_WQ_MXFP4, .bits = 4, .group = 32, .scale_bytes = 1, .experts_only = true};
        read_skip(&q, "modules_to_not_convert", w);
    } else {
        fail(&q, ML_ERR_UNSUPPORTED,
             _("quantization_config quant_method '%.24s' is not modelled (fp8, awq, gptq, bitsandbytes, "
               "compressed-tensors and mxfp4 are)"),
             m);
    }
    (void)snprintf(w->name, sizeof(w->name), "%s", m);
    merge(top, &q);
}

/* Does pattern p match path from its start up to a '.' or the end ('*' one part, digits a '*')? */
static bool glob_prefix(const char *p, const char *path)
{
    while (*p) {
        if (*p == '*') {
            while (*path && *path != '.')
                path++;
            p++;
        } else if (*p >= '0' && *p <= '9' && *path == '*') {
            while (*p >= '0' && *p <= '9')
                p++;
            path++;
        } else if (*p == *path) {
            p++;
            path++;
        } else {
            return false;
        }
    }
    return *path == '\0' || *path == '.';
}

bool ml_wq_skips(const struct ml_weight_quant *wq, const char *path)
{
    size_t n = strlen(path);
    for (uint32_t i = 0; i < wq->n_skip && i < ML_WQ_MAX_SKIP; i++) {
        char core[64];
        const char *p = wq->skip[i];
        bool re = !strncmp(p, "re:", 3);
        if (re) {
            /* "re:.*mlp.gate$": the literal core, unanchored at the start, anchored at "$". */
            p += 3;
            while (p[0] == '.' && p[1] == '*')
                p += 2;
            size_t j = 0;
            for (; *p && j + 1 < sizeof(core); p++)
                if (*p != '\\' && *p != '$' && *p != '^')
                    core[j++] = *p;
            core[j] = '\0';
            if (strstr(path, core))
                return true;
            continue;
        }
        size_t k = strlen(p);
        if (glob_prefix(p, path) || (k <= n && !strcmp(path + n - k, p) && (k == n || path[n - k - 1] == '.')))
            return true;
        /* A bare leaf or inner name ("self_attn", "visual") anywhere in the path. */
        if (!strchr(p, '.') && k && (strstr(path, p) && (path == strstr(path, p) || strstr(path, p)[-1] == '.')))
            return true;
    }
    return false;
}

void ml_wq_describe(const struct ml_weight_quant *wq, char *out, size_t cap)
{
    if (!cap)
        return;
    out[0] = '\0';
    if (wq->method == ML_WQ_NONE)
        return;
    int n = snprintf(out, cap, "%s %u-bit", wq->name, wq->bits);
    if (n < 0 || (size_t)n >= cap)
        return;
    if (wq->block_out)
        (void)snprintf(out + n, cap - (size_t)n, ", %u x %u block scales", wq->block_out, wq->block_in);
    else if (wq->group)
        (void)snprintf(out + n, cap - (size_t)n, ", group %u", wq->group);
    else if (wq->method != ML_WQ_FP8)
        (void)snprintf(out + n, cap - (size_t)n, ", per channel");
}

/* ---- entry points ------------------------------------------------------------------------ */

enum ml_status ml_arch_validate(const struct ml_arch *a, struct ml_diag *diag)
{
    if (a->family >= ML_FAMILY_COUNT || a->stack > ML_STACK_ENCODER_DECODER)
        return ml_diag_set(diag, ML_ERR_INVALID, _("unknown model family"));
    if (!a->vocab || !a->hidden || !a->n_layers || !a->n_heads || !a->n_kv_heads || !a->head_dim)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("vocabulary, width, layers, heads and head width must all be positive"));
    if (a->n_layers > ML_MAX_LAYERS || a->n_encoder_layers > ML_MAX_LAYERS)
        return ml_diag_set(diag, ML_ERR_INVALID, _("more than %d layers"), ML_MAX_LAYERS);
    if (a->n_kv_heads > a->n_heads || a->n_heads % a->n_kv_heads != 0)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("%u attention heads cannot be shared by %u key/value heads (must divide)"), a->n_heads,
                           a->n_kv_heads);
    /* A dense FFN width is needed unless every layer is MoE (Mixtral). */
    if (!a->intermediate && ml_arch_n_moe_layers(a) < a->n_layers)
        return ml_diag_set(diag, ML_ERR_INVALID, _("the feed-forward width must be positive"));
    if (a->n_experts && (a->top_k == 0 || a->top_k > a->n_experts))
        return ml_diag_set(diag, ML_ERR_INVALID, _("%u experts per token out of %u experts"), a->top_k, a->n_experts);
    if (a->n_experts && a->n_group > 1 && (a->n_experts % a->n_group || a->topk_group > a->n_group))
        return ml_diag_set(diag, ML_ERR_INVALID, _("%u experts cannot be split into %u routing groups"), a->n_experts,
                           a->n_group);
    return ML_OK;
}

/* A sliding layer without a window, or a chunked one without a chunk, attends to everything;
 * linear-attention layers need the Gated DeltaNet shape only the hybrid families read. */
static void settle_layers(struct ml_reader *r, struct ml_arch *a)
{
    for (uint32_t i = 0; i < a->n_layers && i < ML_MAX_LAYERS; i++) {
        if ((a->layer_attn[i] == ML_LAYER_SLIDING && !a->sliding_window) ||
            (a->layer_attn[i] == ML_LAYER_CHUNKED && !a->attn_chunk))
            a->layer_attn[i] = ML_LAYER_FULL;
        if (a->layer_attn[i] == ML_LAYER_LINEAR && !a->lin.v_heads) {
            fail(r, ML_ERR_UNSUPPORTED,
                 _("'layer_types' names linear_attention layers, which model_type '%s' does not have"), r->type);
            return;
        }
    }
}

/* The first entry of the object's "architectures" that names a family's class, or NULL. */
static const char *known_class(struct ml_reader *r, enum ml_family *fam)
{
    const void *list = r->ops->member(r->obj, "architectures");
    struct ml_cfg_value v;
    r->ops->value(list, &v);
    for (const void *e = v.kind == ML_CFG_ARRAY ? r->ops->first(list) : NULL; e; e = r->ops->next(e)) {
        r->ops->value(e, &v);
        if (v.kind == ML_CFG_STRING && ml_family_find_class(v.str, fam))
            return v.str;
    }
    return NULL;
}

/*
 * model_type -> the family row and the object holding its keys (*model). A model_type no row
 * reads is read as its checkpoint loads: through "architectures" when it names a class a family
 * has (Kimi K2's "kimi_k2" with DeepseekV3ForCausalLM, which transformers' Kimi_K25Config also
 * rewrites to deepseek_v3), else through the language model the config nests (mistral3's and
 * llava's text_config, internvl_chat's llm_config) when that one's type or class is known - its
 * vision tower then not counted; out->read_note says which. ML_OK or a diagnosed error naming
 * the supported types.
 */
static enum ml_status read_type(struct ml_reader *r, struct ml_arch *out, const void **model, const char **type)
{
    char types[512];
    struct ml_cfg_value mt;
    get(r, "model_type", &mt);
    *model = r->obj;
    if (mt.kind != ML_CFG_STRING || !mt.str[0]) {
        (void)ml_arch_supported_types(types, sizeof(types));
        return ml_diag_set(r->diag, ML_ERR_INVALID, _("no 'model_type' string; supported: %s"), types);
    }
    (void)snprintf(out->model_type, sizeof(out->model_type), "%s", mt.str);
    *type = mt.str;
    if (ml_family_find(mt.str, &out->family))
        return ML_OK;
    const char *cls = known_class(r, &out->family);
    if (cls) {
        (void)snprintf(out->read_note, sizeof(out->read_note),
                       _("model_type '%.32s' has no family here: read as %s, the class its 'architectures' names "
                         "(%.48s)"),
                       mt.str, ml_family_name(out->family), cls);
        return ML_OK;
    }
    static const char *const nested[] = {"text_config", "llm_config", "language_config"};
    for (size_t i = 0; i < sizeof(nested) / sizeof(nested[0]); i++) {
        bool present;
        struct ml_reader c = child(r, nested[i], &present);
        if (!present)
            continue;
        struct ml_cfg_value ct;
        get(&c, "model_type", &ct);
        bool by_type = ct.kind == ML_CFG_STRING && ml_family_find(ct.str, &out->family);
        const char *ccls = by_type ? NULL : known_class(&c, &out->family);
        if (!by_type && !ccls)
            continue;
        *model = c.obj;
        *type = by_type ? ct.str : ml_family_name(out->family);
        (void)snprintf(out->read_note, sizeof(out->read_note),
                       _("model_type '%.32s' is not modelled: its language model ('%s', %s) is read; the vision tower "
                         "and projector are not counted"),
                       mt.str, nested[i], ml_family_name(out->family));
        return ML_OK;
    }
    char shown[40];
    (void)snprintf(shown, sizeof(shown), "%s", mt.str);
    (void)ml_arch_supported_types(types, sizeof(types));
    return ml_diag_set(r->diag, ML_ERR_UNSUPPORTED, _("unsupported model_type '%s'; supported: %s"), shown, types);
}

enum ml_status ml_arch_read(const struct ml_cfg_ops *ops, const void *root, const char *origin, struct ml_arch *out,
                            struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    ml_diag_at(diag, origin, 0, 0);
    struct ml_reader r = {ops, root, origin, diag, "", false, NULL};
    const void *model;
    const char *type = "";
    enum ml_status st = read_type(&r, out, &model, &type);
    if (st != ML_OK)
        return st;
    const struct ml_family_def *f = ml_family_def(out->family);
    r.type = type;
    r.fam = f;
    /* m: the object with the family's keys - the config, or the language model it nests. */
    struct ml_reader m = r;
    m.obj = model;
    out->torch_dtype = read_dtype(&m);
    if (out->torch_dtype == ML_DTYPE_UNKNOWN && model != root)
        out->torch_dtype = read_dtype(&r);
    f->read(&m, f, out);
    struct ml_reader t = text_of(&m);
    read_layer_types(&t, out);
    read_context(&m, &t, out);
    merge(&m, &t);
    read_quant(&m, out);
    if (out->wq.method == ML_WQ_NONE && model != root)
        read_quant(&r, out);
    merge(&r, &m);
    settle_layers(&r, out);
    out->stack = f->stack;
    out->attn_softcap = f->attn_softcap;
    out->loss_in_param_dtype = f->loss_in_param_dtype;
    out->eager_softmax_act_dtype = f->eager_softmax_act_dtype;
    out->attn_dropout = f->attn_dropout;
    if (r.failed)
        return diag ? diag->code : ML_ERR_INVALID;
    st = ml_arch_validate(out, diag);
    if (st != ML_OK)
        ml_diag_at(diag, origin, 0, 0);
    return st;
}
