/*
 * arch_json.c - Hugging Face config.json -> struct ml_arch.
 *
 * One mapping function per family reads the keys its transformers configuration class defines
 * (configuration_<family>.py, or the model's remote code for qwen, chatglm, baichuan,
 * internlm2, deepseek) and fills the generic struct. Missing keys take the class defaults
 * listed in docs/models.md; the four size keys with no meaningful default (vocabulary, width,
 * depth, heads) are required. cJSON's tree never leaves this file (style.md 5.5).
 */
#include "memledger/arch.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "json_in.h"

/* A config.json larger than this is not a config (the largest real ones are ~10 KiB). */
#define ML_CONFIG_MAX_BYTES ((size_t)16 << 20)

/* Upper bounds that catch absurd values before they reach the arithmetic. */
#define MAX_WIDTH ((uint64_t)1 << 22)      /* hidden / ffn widths: 4,194,304 */
#define MAX_VOCAB ((uint64_t)1 << 25)      /* 33,554,432 rows */
#define MAX_HEADS 65536u
#define MAX_EXPERTS 65536u
#define MAX_POSITIONS ((uint64_t)1 << 40)

static const struct {
    const char *type;
    enum ml_family family;
} type_table[] = {
    {"llama", ML_FAMILY_LLAMA},
    {"mistral", ML_FAMILY_MISTRAL},
    {"mixtral", ML_FAMILY_MIXTRAL},
    {"qwen", ML_FAMILY_QWEN},
    {"qwen2", ML_FAMILY_QWEN2},
    {"qwen2_moe", ML_FAMILY_QWEN2_MOE},
    {"qwen3", ML_FAMILY_QWEN3},
    {"qwen3_moe", ML_FAMILY_QWEN3_MOE},
    {"gemma", ML_FAMILY_GEMMA},
    {"gemma2", ML_FAMILY_GEMMA2},
    {"phi", ML_FAMILY_PHI},
    {"phi3", ML_FAMILY_PHI3},
    {"gpt2", ML_FAMILY_GPT2},
    {"gpt_neox", ML_FAMILY_GPT_NEOX},
    {"falcon", ML_FAMILY_FALCON},
    {"RefinedWeb", ML_FAMILY_FALCON},      /* early Falcon remote-code configs */
    {"RefinedWebModel", ML_FAMILY_FALCON},
    {"bloom", ML_FAMILY_BLOOM},
    {"opt", ML_FAMILY_OPT},
    {"starcoder2", ML_FAMILY_STARCODER2},
    {"internlm2", ML_FAMILY_INTERNLM2},
    {"chatglm", ML_FAMILY_CHATGLM},
    {"baichuan", ML_FAMILY_BAICHUAN},
    {"deepseek_v2", ML_FAMILY_DEEPSEEK_V2},
    {"deepseek_v3", ML_FAMILY_DEEPSEEK_V3},
    {"bert", ML_FAMILY_BERT},
    {"t5", ML_FAMILY_T5},
};

static const char *const family_names[ML_FAMILY_COUNT] = {
    "llama", "mistral", "mixtral", "qwen", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
    "gemma2", "phi", "phi3", "gpt2", "gpt_neox", "falcon", "bloom", "opt", "starcoder2",
    "internlm2", "chatglm", "baichuan", "deepseek_v2", "deepseek_v3", "bert", "t5",
};

const char *ml_family_name(enum ml_family f)
{
    return (f >= 0 && f < ML_FAMILY_COUNT) ? family_names[f] : "unknown";
}

const char *ml_dtype_name(enum ml_dtype d)
{
    switch (d) {
    case ML_DTYPE_FP32: return "fp32";
    case ML_DTYPE_FP16: return "fp16";
    case ML_DTYPE_BF16: return "bf16";
    case ML_DTYPE_FP8:  return "fp8";
    case ML_DTYPE_INT8: return "int8";
    case ML_DTYPE_INT4: return "int4";
    case ML_DTYPE_UNKNOWN: break;
    }
    return "unknown";
}

const char *ml_arch_supported_types(void)
{
    return "llama, mistral, mixtral, qwen, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, "
           "phi, phi3, gpt2, gpt_neox, falcon, bloom, opt, starcoder2, internlm2, chatglm, "
           "baichuan, deepseek_v2, deepseek_v3, bert, t5";
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

static void set_moe_layer(struct ml_arch *a, uint32_t i, bool on)
{
    if (i >= ML_MAX_LAYERS)
        return;
    if (on)
        a->moe_layer_mask[i / 8] |= (uint8_t)(1u << (i % 8));
    else
        a->moe_layer_mask[i / 8] &= (uint8_t)~(1u << (i % 8));
}

/* ---- key readers ------------------------------------------------------------------------ */

struct reader {
    const cJSON *root;      /* the config object */
    const char *origin;     /* file name for diagnostics */
    struct ml_diag *diag;
    const char *type;       /* model_type, for messages */
    bool failed;            /* a reader already recorded an error */
};

static enum ml_status fail(struct reader *r, enum ml_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum ml_status fail(struct reader *r, enum ml_status st, const char *fmt, ...)
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

/*
 * Read an integer key (first of names present). Checks: a number (JSON number, or a string
 * holding one, as some hand-edited configs do), finite, integral, within [lo, hi].
 * Absent or null: *out = def, or an error if required.
 */
static uint64_t get_int(struct reader *r, const char *const *names, bool required, uint64_t def,
                        uint64_t lo, uint64_t hi)
{
    const char *key = names[0];
    const cJSON *it = ml_json_find(r->root, names, &key);
    if (!it) {
        if (required)
            fail(r, ML_ERR_INVALID, _("missing '%s' (required for model_type '%s')"), names[0], r->type);
        return def;
    }
    double v;
    if (cJSON_IsNumber(it)) {
        v = it->valuedouble;
    } else if (cJSON_IsBool(it)) {
        fail(r, ML_ERR_INVALID, _("'%s' must be a number, not a boolean"), key);
        return def;
    } else {
        fail(r, ML_ERR_INVALID, _("'%s' must be a number"), key);
        return def;
    }
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
        fail(r, ML_ERR_INVALID, _("'%s' = %.0f is out of range [%llu, %llu]"), key, v,
             (unsigned long long)lo, (unsigned long long)hi);
        return def;
    }
    return (uint64_t)v;
}


/* hidden / heads, or 0 when heads failed to parse (the failure is already recorded). */
static uint64_t per_head(uint64_t hidden, uint32_t heads)
{
    return heads ? hidden / heads : 0;
}

static uint64_t req(struct reader *r, const char *const *names, uint64_t lo, uint64_t hi)
{
    return get_int(r, names, true, 0, lo, hi);
}

static uint64_t opt(struct reader *r, const char *const *names, uint64_t def, uint64_t lo,
                    uint64_t hi)
{
    return get_int(r, names, false, def, lo, hi);
}

static bool get_bool(struct reader *r, const char *key, bool def)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(r->root, key);
    if (!it || cJSON_IsNull(it))
        return def;
    if (cJSON_IsBool(it))
        return cJSON_IsTrue(it);
    if (cJSON_IsNumber(it) && (it->valuedouble == 0 || it->valuedouble == 1))
        return it->valuedouble != 0;
    fail(r, ML_ERR_INVALID, _("'%s' must be true or false"), key);
    return def;
}

/* A fraction in [0, 1] (partial_rotary_factor); returns def if absent. */
static double get_fraction(struct reader *r, const char *key, double def)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(r->root, key);
    if (!it || cJSON_IsNull(it))
        return def;
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 0 ||
        it->valuedouble > 1) {
        fail(r, ML_ERR_INVALID, _("'%s' must be a number between 0 and 1"), key);
        return def;
    }
    return it->valuedouble;
}

static const char *get_str(struct reader *r, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(r->root, key);
    if (!it || cJSON_IsNull(it))
        return NULL;
    if (!cJSON_IsString(it)) {
        fail(r, ML_ERR_INVALID, _("'%s' must be a string"), key);
        return NULL;
    }
    return it->valuestring;
}

/* mlp_only_layers: a list of layer indices that keep a dense MLP. */
static void read_dense_layers(struct reader *r, struct ml_arch *a, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(r->root, key);
    if (!it || cJSON_IsNull(it))
        return;
    if (!cJSON_IsArray(it)) {
        fail(r, ML_ERR_INVALID, _("'%s' must be a list of layer indices"), key);
        return;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, it)
    {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0 ||
            e->valuedouble != floor(e->valuedouble) || e->valuedouble >= a->n_layers) {
            fail(r, ML_ERR_INVALID, _("'%s' holds a value that is not a layer index below %u"), key,
                 a->n_layers);
            return;
        }
        set_moe_layer(a, (uint32_t)e->valuedouble, false);
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
    return ML_DTYPE_UNKNOWN;
}

/* ---- shared pieces ------------------------------------------------------------------------ */

/* Sizes every decoder config names the same way (LlamaConfig and its descendants). */
static void read_llama_like(struct reader *r, struct ml_arch *a, uint64_t def_inter_required)
{
    a->vocab = req(r, NAMES("vocab_size"), 1, MAX_VOCAB);
    a->hidden = req(r, NAMES("hidden_size"), 1, MAX_WIDTH);
    a->n_layers = (uint32_t)req(r, NAMES("num_hidden_layers"), 1, ML_MAX_LAYERS);
    a->n_heads = (uint32_t)req(r, NAMES("num_attention_heads"), 1, MAX_HEADS);
    a->n_kv_heads = (uint32_t)opt(r, NAMES("num_key_value_heads"), a->n_heads, 1, MAX_HEADS);
    a->head_dim = per_head(a->hidden, a->n_heads);
    a->head_dim = opt(r, NAMES("head_dim"), a->head_dim, 1, MAX_WIDTH);
    if (def_inter_required)
        a->intermediate = req(r, NAMES("intermediate_size"), 1, MAX_WIDTH);
    a->max_positions = opt(r, NAMES("max_position_embeddings"), 2048, 1, MAX_POSITIONS);
    a->rotary_dim = a->head_dim;
    a->norm = ML_NORM_RMS;
    a->norms_per_layer = 2;
    a->final_norm = true;
    a->gated_mlp = true;
}

/* Sliding-window attention as Mistral/Qwen2/Starcoder2 declare it. */
static void read_sliding(struct reader *r, struct ml_arch *a, bool gated_by_use_key)
{
    uint64_t w = opt(r, NAMES("sliding_window"), 0, 0, MAX_POSITIONS);
    if (gated_by_use_key && !get_bool(r, "use_sliding_window", false))
        w = 0;
    if (w >= a->max_positions)
        w = 0; /* a window as long as the context is full attention */
    a->sliding_window = w;
    a->sliding_every = w ? 1 : 0;
}

/* Qwen-MoE style: every decoder_sparse_step-th layer is MoE except mlp_only_layers. */
static void read_qwen_moe(struct reader *r, struct ml_arch *a, uint64_t def_experts,
                          uint64_t def_topk, uint64_t def_moe_inter)
{
    a->n_experts = (uint32_t)opt(r, NAMES("num_experts"), def_experts, 0, MAX_EXPERTS);
    a->top_k = (uint32_t)opt(r, NAMES("num_experts_per_tok"), def_topk, 1, MAX_EXPERTS);
    a->moe_intermediate = opt(r, NAMES("moe_intermediate_size"), def_moe_inter, 1, MAX_WIDTH);
    uint64_t step = opt(r, NAMES("decoder_sparse_step"), 1, 1, ML_MAX_LAYERS);
    for (uint32_t i = 0; i < a->n_layers; i++)
        set_moe_layer(a, i, a->n_experts > 0 && (i + 1) % step == 0);
    read_dense_layers(r, a, "mlp_only_layers");
}

/* ---- per family ------------------------------------------------------------------------- */

static void map_family(struct reader *r, struct ml_arch *a)
{
    switch (a->family) {
    case ML_FAMILY_LLAMA:
        /* LlamaConfig: attention_bias covers q/k/v/o, mlp_bias gate/up/down. */
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", false);
        a->mlp_bias = get_bool(r, "mlp_bias", false);
        break;
    case ML_FAMILY_MISTRAL:
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        read_sliding(r, a, false);
        break;
    case ML_FAMILY_MIXTRAL:
        /* MixtralConfig: every layer is sparse; experts are w1/w3 (gate/up) and w2 (down). */
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        read_sliding(r, a, false);
        a->n_experts = (uint32_t)opt(r, NAMES("num_local_experts"), 8, 1, MAX_EXPERTS);
        a->top_k = (uint32_t)opt(r, NAMES("num_experts_per_tok"), 2, 1, MAX_EXPERTS);
        a->moe_intermediate = a->intermediate;
        for (uint32_t i = 0; i < a->n_layers; i++)
            set_moe_layer(a, i, true);
        break;
    case ML_FAMILY_QWEN:
        /* Qwen v1 remote code: c_attn (h -> 3 * kv_channels * heads, biased), c_proj;
         * w1/w2/c_proj each intermediate_size / 2 wide. */
        a->vocab = req(r, NAMES("vocab_size"), 1, MAX_VOCAB);
        a->hidden = req(r, NAMES("hidden_size"), 1, MAX_WIDTH);
        a->n_layers = (uint32_t)req(r, NAMES("num_hidden_layers"), 1, ML_MAX_LAYERS);
        a->n_heads = (uint32_t)req(r, NAMES("num_attention_heads"), 1, MAX_HEADS);
        a->n_kv_heads = a->n_heads;
        a->head_dim = opt(r, NAMES("kv_channels"), per_head(a->hidden, a->n_heads), 1, MAX_WIDTH);
        a->intermediate = req(r, NAMES("intermediate_size"), 2, MAX_WIDTH) / 2;
        a->max_positions = opt(r, NAMES("seq_length", "max_position_embeddings"), 8192, 1, MAX_POSITIONS);
        a->rotary_dim = (uint64_t)((double)a->head_dim * get_fraction(r, "rotary_pct", 1.0));
        a->qkv_bias = true;
        a->o_bias = !get_bool(r, "no_bias", true);
        a->mlp_bias = a->o_bias;
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        a->norm = ML_NORM_RMS;
        a->norms_per_layer = 2;
        a->final_norm = true;
        a->gated_mlp = true;
        break;
    case ML_FAMILY_QWEN2:
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        a->qkv_bias = true; /* Qwen2Attention: q/k/v bias=True, o_proj bias=False */
        read_sliding(r, a, true);
        break;
    case ML_FAMILY_QWEN2_MOE:
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        a->qkv_bias = true;
        read_sliding(r, a, true);
        read_qwen_moe(r, a, 60, 4, 1408);
        a->shared_intermediate = opt(r, NAMES("shared_expert_intermediate_size"), 5632, 0, MAX_WIDTH);
        a->n_shared_experts = a->shared_intermediate ? 1 : 0;
        a->shared_expert_gate = a->n_shared_experts > 0;
        break;
    case ML_FAMILY_QWEN3:
    case ML_FAMILY_QWEN3_MOE:
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", false);
        a->qk_norm = true;
        read_sliding(r, a, true);
        if (a->family == ML_FAMILY_QWEN3_MOE)
            read_qwen_moe(r, a, 128, 8, 768);
        break;
    case ML_FAMILY_GEMMA:
    case ML_FAMILY_GEMMA2:
        /* GemmaConfig: head_dim 256 and tied embeddings by default; Gemma 2 adds
         * pre/post-feedforward norms and sliding windows on every other layer. */
        read_llama_like(r, a, 1);
        a->head_dim = opt(r, NAMES("head_dim"), 256, 1, MAX_WIDTH);
        a->rotary_dim = a->head_dim;
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
        a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", false);
        if (a->family == ML_FAMILY_GEMMA2) {
            a->norms_per_layer = 4;
            a->sliding_window = opt(r, NAMES("sliding_window"), 4096, 0, MAX_POSITIONS);
            a->sliding_every = a->sliding_window ? 2 : 0;
        }
        break;
    case ML_FAMILY_PHI:
        /* PhiConfig: every linear biased, one LayerNorm per (parallel) block, lm_head bias. */
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        a->qkv_bias = a->o_bias = a->mlp_bias = a->lm_head_bias = true;
        a->norm = ML_NORM_LAYER;
        a->norms_per_layer = 1;
        a->gated_mlp = false;
        a->qk_norm = get_bool(r, "qk_layernorm", false);
        a->rotary_dim = (uint64_t)((double)a->head_dim * get_fraction(r, "partial_rotary_factor", 0.5));
        break;
    case ML_FAMILY_PHI3:
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        a->rotary_dim = (uint64_t)((double)a->head_dim * get_fraction(r, "partial_rotary_factor", 1.0));
        read_sliding(r, a, false);
        break;
    case ML_FAMILY_GPT2:
        a->vocab = req(r, NAMES("vocab_size"), 1, MAX_VOCAB);
        a->hidden = req(r, NAMES("n_embd", "hidden_size"), 1, MAX_WIDTH);
        a->n_layers = (uint32_t)req(r, NAMES("n_layer", "num_hidden_layers"), 1, ML_MAX_LAYERS);
        a->n_heads = (uint32_t)req(r, NAMES("n_head", "num_attention_heads"), 1, MAX_HEADS);
        a->n_kv_heads = a->n_heads;
        a->head_dim = per_head(a->hidden, a->n_heads);
        a->intermediate = opt(r, NAMES("n_inner"), 4 * a->hidden, 1, MAX_WIDTH);
        a->max_positions = opt(r, NAMES("n_positions", "max_position_embeddings"), 1024, 1, MAX_POSITIONS);
        a->learned_positions = a->max_positions;
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
        a->qkv_bias = a->o_bias = a->mlp_bias = true;
        a->norm = ML_NORM_LAYER;
        a->norms_per_layer = 2;
        a->final_norm = true;
        break;
    case ML_FAMILY_GPT_NEOX:
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", true);
        a->mlp_bias = true;
        a->norm = ML_NORM_LAYER;
        a->gated_mlp = false;
        a->rotary_dim = (uint64_t)((double)a->head_dim * get_fraction(r, "rotary_pct", 0.25));
        break;
    case ML_FAMILY_FALCON: {
        /* FalconConfig: new_decoder_architecture -> num_kv_heads groups and two LayerNorms;
         * otherwise multi_query -> one K/V head; parallel_attn -> one LayerNorm. */
        a->vocab = req(r, NAMES("vocab_size"), 1, MAX_VOCAB);
        a->hidden = req(r, NAMES("hidden_size", "n_embed"), 1, MAX_WIDTH);
        a->n_layers = (uint32_t)req(r, NAMES("num_hidden_layers", "n_layer"), 1, ML_MAX_LAYERS);
        a->n_heads = (uint32_t)req(r, NAMES("num_attention_heads", "n_head"), 1, MAX_HEADS);
        a->head_dim = per_head(a->hidden, a->n_heads);
        bool new_arch = get_bool(r, "new_decoder_architecture", false);
        bool mq = get_bool(r, "multi_query", true);
        bool parallel = get_bool(r, "parallel_attn", true);
        if (new_arch)
            a->n_kv_heads = (uint32_t)opt(r, NAMES("num_kv_heads", "n_head_kv"), a->n_heads, 1, MAX_HEADS);
        else
            a->n_kv_heads = mq ? 1 : a->n_heads;
        a->intermediate = opt(r, NAMES("ffn_hidden_size"), 4 * a->hidden, 1, MAX_WIDTH);
        a->max_positions = opt(r, NAMES("max_position_embeddings"), 2048, 1, MAX_POSITIONS);
        a->rotary_dim = get_bool(r, "alibi", false) ? 0 : a->head_dim;
        a->qkv_bias = a->o_bias = a->mlp_bias = get_bool(r, "bias", false);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
        a->norm = ML_NORM_LAYER;
        a->norms_per_layer = new_arch ? (uint32_t)opt(r, NAMES("num_ln_in_parallel_attn"), 2, 1, 2)
                                      : (parallel ? 1 : 2);
        a->final_norm = true;
        break;
    }
    case ML_FAMILY_BLOOM:
        a->vocab = req(r, NAMES("vocab_size"), 1, MAX_VOCAB);
        a->hidden = req(r, NAMES("hidden_size", "n_embed"), 1, MAX_WIDTH);
        a->n_layers = (uint32_t)req(r, NAMES("n_layer", "num_hidden_layers"), 1, ML_MAX_LAYERS);
        a->n_heads = (uint32_t)req(r, NAMES("n_head", "num_attention_heads"), 1, MAX_HEADS);
        a->n_kv_heads = a->n_heads;
        a->head_dim = per_head(a->hidden, a->n_heads);
        a->intermediate = 4 * a->hidden; /* BloomMLP: dense_h_to_4h */
        a->max_positions = opt(r, NAMES("seq_length"), 2048, 1, MAX_POSITIONS); /* ALiBi */
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
        a->qkv_bias = a->o_bias = a->mlp_bias = true;
        a->norm = ML_NORM_LAYER;
        a->norms_per_layer = 2;
        a->final_norm = true;
        a->embed_norm = true;
        break;
    case ML_FAMILY_OPT: {
        a->vocab = req(r, NAMES("vocab_size"), 1, MAX_VOCAB);
        a->hidden = req(r, NAMES("hidden_size"), 1, MAX_WIDTH);
        a->n_layers = (uint32_t)req(r, NAMES("num_hidden_layers"), 1, ML_MAX_LAYERS);
        a->n_heads = (uint32_t)req(r, NAMES("num_attention_heads"), 1, MAX_HEADS);
        a->n_kv_heads = a->n_heads;
        a->head_dim = per_head(a->hidden, a->n_heads);
        a->intermediate = req(r, NAMES("ffn_dim"), 1, MAX_WIDTH);
        a->max_positions = opt(r, NAMES("max_position_embeddings"), 2048, 1, MAX_POSITIONS);
        /* OPTLearnedPositionalEmbedding keeps 2 extra rows (offset). */
        a->learned_positions = a->max_positions + 2;
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
        a->qkv_bias = a->o_bias = a->mlp_bias = get_bool(r, "enable_bias", true);
        a->norm = ML_NORM_LAYER;
        a->norms_per_layer = 2;
        a->final_norm = get_bool(r, "do_layer_norm_before", true) &&
                        !get_bool(r, "_remove_final_layer_norm", false);
        /* word_embed_proj_dim != hidden adds project_in/out (OPT-350m): not modelled. */
        uint64_t proj = opt(r, NAMES("word_embed_proj_dim"), a->hidden, 1, MAX_WIDTH);
        if (proj != a->hidden)
            fail(r, ML_ERR_UNSUPPORTED,
                 _("'word_embed_proj_dim' (%llu) differs from 'hidden_size' (%llu): OPT projection layers are not supported"),
                 (unsigned long long)proj, (unsigned long long)a->hidden);
        break;
    }
    case ML_FAMILY_STARCODER2: {
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
        a->qkv_bias = a->o_bias = a->mlp_bias = get_bool(r, "use_bias", true);
        const char *nt = get_str(r, "norm_type");
        a->norm = (nt && !strcmp(nt, "rms_norm")) ? ML_NORM_RMS : ML_NORM_LAYER;
        a->gated_mlp = false;
        read_sliding(r, a, false);
        break;
    }
    case ML_FAMILY_INTERNLM2:
        /* InternLM2 remote code: fused wqkv and wo carry `bias`; w1/w3/w2 never do. */
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        a->qkv_bias = a->o_bias = get_bool(r, "bias", true);
        break;
    case ML_FAMILY_CHATGLM: {
        /* ChatGLM remote code: query_key_value is h -> heads*kv_channels + 2*groups*kv_channels;
         * dense_h_to_4h is fused gate+up (2 * ffn_hidden_size); output_layer is never tied. */
        a->vocab = req(r, NAMES("padded_vocab_size", "vocab_size"), 1, MAX_VOCAB);
        a->hidden = req(r, NAMES("hidden_size"), 1, MAX_WIDTH);
        a->n_layers = (uint32_t)req(r, NAMES("num_layers", "num_hidden_layers"), 1, ML_MAX_LAYERS);
        a->n_heads = (uint32_t)req(r, NAMES("num_attention_heads"), 1, MAX_HEADS);
        a->head_dim = opt(r, NAMES("kv_channels"), per_head(a->hidden, a->n_heads), 1, MAX_WIDTH);
        a->n_kv_heads = get_bool(r, "multi_query_attention", false)
                            ? (uint32_t)opt(r, NAMES("multi_query_group_num"), 1, 1, MAX_HEADS)
                            : a->n_heads;
        a->intermediate = req(r, NAMES("ffn_hidden_size"), 1, MAX_WIDTH);
        a->max_positions = opt(r, NAMES("seq_length"), 2048, 1, MAX_POSITIONS);
        a->rotary_dim = a->head_dim / 2; /* RotaryEmbedding(kv_channels // 2) */
        a->qkv_bias = get_bool(r, "add_qkv_bias", false);
        a->o_bias = a->mlp_bias = get_bool(r, "add_bias_linear", false);
        a->tie_embeddings = false;
        a->norm = get_bool(r, "rmsnorm", true) ? ML_NORM_RMS : ML_NORM_LAYER;
        a->norms_per_layer = 2;
        a->final_norm = get_bool(r, "post_layer_norm", true);
        a->gated_mlp = true;
        break;
    }
    case ML_FAMILY_BAICHUAN:
        /* Baichuan remote code: W_pack (h -> 3h, no bias), NormHead lm_head (V x h). */
        read_llama_like(r, a, 1);
        a->max_positions = opt(r, NAMES("model_max_length", "max_position_embeddings"), 4096, 1, MAX_POSITIONS);
        a->n_kv_heads = a->n_heads;
        a->tie_embeddings = false;
        break;
    case ML_FAMILY_DEEPSEEK_V2:
    case ML_FAMILY_DEEPSEEK_V3: {
        bool v3 = a->family == ML_FAMILY_DEEPSEEK_V3;
        read_llama_like(r, a, 1);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", false);
        a->qkv_bias = a->o_bias = get_bool(r, "attention_bias", false);
        a->q_lora_rank = opt(r, NAMES("q_lora_rank"), 0, 0, MAX_WIDTH);
        if (!cJSON_GetObjectItemCaseSensitive(r->root, "q_lora_rank"))
            a->q_lora_rank = 1536; /* class default; an explicit null means "no q compression" */
        a->kv_lora_rank = opt(r, NAMES("kv_lora_rank"), 512, 1, MAX_WIDTH);
        a->qk_nope_head_dim = opt(r, NAMES("qk_nope_head_dim"), 128, 0, MAX_WIDTH);
        a->qk_rope_head_dim = opt(r, NAMES("qk_rope_head_dim"), 64, 0, MAX_WIDTH);
        a->v_head_dim = opt(r, NAMES("v_head_dim"), 128, 1, MAX_WIDTH);
        a->head_dim = a->qk_nope_head_dim + a->qk_rope_head_dim;
        a->rotary_dim = a->qk_rope_head_dim;
        a->n_experts = (uint32_t)opt(r, NAMES("n_routed_experts"), v3 ? 256 : 0, 0, MAX_EXPERTS);
        a->top_k = (uint32_t)opt(r, NAMES("num_experts_per_tok"), v3 ? 8 : 1, 1, MAX_EXPERTS);
        a->moe_intermediate = opt(r, NAMES("moe_intermediate_size"), v3 ? 2048 : 1407, 1, MAX_WIDTH);
        a->n_shared_experts = (uint32_t)opt(r, NAMES("n_shared_experts"), v3 ? 1 : 0, 0, MAX_EXPERTS);
        a->shared_intermediate = a->moe_intermediate * a->n_shared_experts;
        a->n_group = (uint32_t)opt(r, NAMES("n_group"), v3 ? 8 : 1, 1, MAX_EXPERTS);
        a->topk_group = (uint32_t)opt(r, NAMES("topk_group"), v3 ? 4 : 1, 1, MAX_EXPERTS);
        const char *tm = get_str(r, "topk_method");
        if (!tm)
            tm = v3 ? "noaux_tc" : "greedy";
        a->router_bias = !strcmp(tm, "noaux_tc");
        uint64_t first_dense = opt(r, NAMES("first_k_dense_replace"), v3 ? 3 : 0, 0, ML_MAX_LAYERS);
        uint64_t freq = opt(r, NAMES("moe_layer_freq"), 1, 1, ML_MAX_LAYERS);
        for (uint32_t i = 0; i < a->n_layers; i++)
            set_moe_layer(a, i, a->n_experts > 0 && i >= first_dense && i % freq == 0);
        a->n_mtp_layers = (uint32_t)opt(r, NAMES("num_nextn_predict_layers"), 0, 0, 64);
        break;
    }
    case ML_FAMILY_BERT:
        read_llama_like(r, a, 1);
        a->max_positions = opt(r, NAMES("max_position_embeddings"), 512, 1, MAX_POSITIONS);
        a->learned_positions = a->max_positions;
        a->type_vocab = opt(r, NAMES("type_vocab_size"), 2, 0, MAX_VOCAB);
        a->rotary_dim = 0;
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
        a->qkv_bias = a->o_bias = a->mlp_bias = true;
        a->norm = ML_NORM_LAYER;
        a->final_norm = false;
        a->embed_norm = true;
        a->gated_mlp = false;
        break;
    case ML_FAMILY_T5: {
        a->vocab = req(r, NAMES("vocab_size"), 1, MAX_VOCAB);
        a->hidden = req(r, NAMES("d_model"), 1, MAX_WIDTH);
        a->n_encoder_layers = (uint32_t)req(r, NAMES("num_layers"), 1, ML_MAX_LAYERS);
        a->n_layers = (uint32_t)opt(r, NAMES("num_decoder_layers"), a->n_encoder_layers, 1, ML_MAX_LAYERS);
        a->n_heads = (uint32_t)req(r, NAMES("num_heads"), 1, MAX_HEADS);
        a->n_kv_heads = a->n_heads;
        a->head_dim = opt(r, NAMES("d_kv"), 64, 1, MAX_WIDTH);
        a->intermediate = opt(r, NAMES("d_ff"), 2048, 1, MAX_WIDTH);
        a->max_positions = opt(r, NAMES("n_positions"), 512, 1, MAX_POSITIONS);
        a->rel_attn_buckets = (uint32_t)opt(r, NAMES("relative_attention_num_buckets"), 32, 1, 65536);
        const char *ff = get_str(r, "feed_forward_proj");
        a->gated_mlp = ff && !strncmp(ff, "gated-", 6);
        a->tie_embeddings = get_bool(r, "tie_word_embeddings", true);
        a->norm = ML_NORM_RMS; /* T5LayerNorm: weight only */
        a->final_norm = true;
        break;
    }
    case ML_FAMILY_COUNT:
        break;
    }
}

enum ml_status ml_arch_validate(const struct ml_arch *a, struct ml_diag *diag)
{
    if (a->family >= ML_FAMILY_COUNT)
        return ml_diag_set(diag, ML_ERR_INVALID, _("unknown model family"));
    if (!a->vocab || !a->hidden || !a->n_layers || !a->n_heads || !a->n_kv_heads || !a->head_dim)
        return ml_diag_set(diag, ML_ERR_INVALID, _("vocabulary, width, layers, heads and head width must all be positive"));
    if (a->n_layers > ML_MAX_LAYERS || a->n_encoder_layers > ML_MAX_LAYERS)
        return ml_diag_set(diag, ML_ERR_INVALID, _("more than %d layers"), ML_MAX_LAYERS);
    if (a->n_kv_heads > a->n_heads || a->n_heads % a->n_kv_heads != 0)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("%u attention heads cannot be shared by %u key/value heads (must divide)"),
                           a->n_heads, a->n_kv_heads);
    if (!a->intermediate && a->family != ML_FAMILY_MIXTRAL)
        return ml_diag_set(diag, ML_ERR_INVALID, _("the feed-forward width must be positive"));
    if (a->n_experts && (a->top_k == 0 || a->top_k > a->n_experts))
        return ml_diag_set(diag, ML_ERR_INVALID, _("%u experts per token out of %u experts"), a->top_k,
                           a->n_experts);
    if (a->n_experts && a->n_group > 1 && (a->n_experts % a->n_group || a->topk_group > a->n_group))
        return ml_diag_set(diag, ML_ERR_INVALID, _("%u experts cannot be split into %u routing groups"),
                           a->n_experts, a->n_group);
    return ML_OK;
}


enum ml_status ml_arch_from_json(const char *data, size_t len, const char *origin,
                                 struct ml_arch *out, struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    cJSON *root;
    enum ml_status ost = ml_json_open_object(data, len, ML_CONFIG_MAX_BYTES, "config.json", origin, &root, diag);
    if (ost != ML_OK)
        return ost;

    struct reader r = {root, origin, diag, "", false};
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!mt || !cJSON_IsString(mt) || !mt->valuestring[0]) {
        cJSON_Delete(root);
        return ml_diag_set(diag, ML_ERR_INVALID, _("no 'model_type' string; supported: %s"),
                           ml_arch_supported_types());
    }
    size_t i;
    for (i = 0; i < sizeof(type_table) / sizeof(type_table[0]); i++)
        if (!strcmp(type_table[i].type, mt->valuestring))
            break;
    if (i == sizeof(type_table) / sizeof(type_table[0])) {
        char shown[40];
        (void)snprintf(shown, sizeof(shown), "%s", mt->valuestring);
        cJSON_Delete(root);
        return ml_diag_set(diag, ML_ERR_UNSUPPORTED, _("unsupported model_type '%s'; supported: %s"),
                           shown, ml_arch_supported_types());
    }
    (void)snprintf(out->model_type, sizeof(out->model_type), "%s", mt->valuestring);
    out->family = type_table[i].family;
    r.type = out->model_type;
    out->torch_dtype = parse_dtype(get_str(&r, "torch_dtype"));

    map_family(&r, out);
    cJSON_Delete(root);
    if (r.failed)
        return diag ? diag->code : ML_ERR_INVALID;
    enum ml_status st = ml_arch_validate(out, diag);
    if (st != ML_OK)
        ml_diag_at(diag, origin, 0, 0);
    return st;
}
