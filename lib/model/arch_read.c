/*
 * arch_read.c - the config readers' entry point: the keys of one config object -> struct ml_arch
 * (family.h). ml_arch_read finds the family from model_type (or the class "architectures" names,
 * or a nested language model), runs its reader (arch_families.c, arch_recent.c), then what every
 * family shares: the dtype, layer_types, the rope scaling and the engines' derived context, the
 * quantized format (arch_quant.c); ml_arch_validate checks the result. Also the dtype and layer
 * names and the per-layer queries of struct ml_arch.
 *
 * Each reader reads the keys its transformers configuration class defines
 * (configuration_<family>.py, or the model's remote code for qwen, chatglm, baichuan, internlm2,
 * deepseek) and fills the generic struct; families whose configs read alike share one. Missing
 * keys take the class defaults listed in docs/models.md (the MoE ones come from the family's
 * row); the four size keys with no meaningful default (vocabulary, width, depth, heads) are
 * required. The config is reached through struct ml_cfg_ops only (the key readers of arch_keys.c):
 * no JSON library, no I/O.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch_int.h"
#include "i18n.h"

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

/* ---- layer kinds, context -------------------------------------------------------------------- */

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
    const void *list = ml_key_list(r, "layer_types", _("'%s' must be a list of strings"));
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
            ml_reader_fail(
                r, ML_ERR_UNSUPPORTED,
                _("'layer_types' entry %u is not one of full_attention, sliding_attention, chunked_attention, "
                  "linear_attention"),
                n);
            return;
        }
        if (n < a->n_layers && n < ML_MAX_LAYERS)
            a->layer_attn[n] = (uint8_t)names[k].kind;
    }
    if (n != a->n_layers)
        ml_reader_fail(r, ML_ERR_INVALID, _("'layer_types' has %u entries for %u layers"), n, a->n_layers);
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
        ml_key_value(t, len_keys[i], &v);
        if (v.kind == ML_CFG_NUMBER && isfinite(v.num) && v.num >= 1 && v.num <= (double)MAX_POSITIONS &&
            (!derived || (uint64_t)v.num < derived))
            derived = (uint64_t)v.num;
    }
    if (!derived)
        derived = a->max_positions ? a->max_positions : 2048;
    a->model_max_length = ml_key_u64(t, KEYS("model_max_length"), 0, 0, MAX_POSITIONS);
    struct ml_reader rs = *t;
    bool present;
    struct ml_reader rp = ml_reader_child(t, "rope_scaling", &present);
    if (!present)
        rp = ml_reader_child(t, "rope_parameters", &present);
    if (present && !ml_key_has(&rp, "rope_type") && !ml_key_has(&rp, "type")) {
        bool nested;
        struct ml_reader full = ml_reader_child(&rp, "full_attention", &nested);
        if (nested)
            rp = full;
    }
    a->rope_factor_milli = 1000;
    if (present) {
        const char *type = ml_key_has(&rp, "rope_type") ? ml_key_str(&rp, "rope_type") : ml_key_str(&rp, "type");
        a->rope = rope_kind(type);
        struct ml_cfg_value f;
        ml_key_value(&rp, "factor", &f);
        if (f.kind == ML_CFG_NUMBER && isfinite(f.num) && f.num > 0 && f.num < 1e6)
            a->rope_factor_milli = (uint64_t)(f.num * 1000 + 0.5);
        a->rope_original = ml_key_u64(&rp, KEYS("original_max_position_embeddings"), 0, 0, MAX_POSITIONS);
        ml_reader_merge(&rs, &rp);
    }
    bool gemma3 = strstr(a->model_type, "gemma3") != NULL;
    if (present && !gemma3 && a->rope != ML_ROPE_LLAMA3 && a->rope != ML_ROPE_LONGROPE) {
        if (a->rope == ML_ROPE_YARN && a->rope_original)
            derived = a->rope_original;
        derived = derived * a->rope_factor_milli / 1000;
    }
    a->engine_max_len = derived;
    ml_reader_merge(top, &rs);
}

/* torch_dtype, or dtype as transformers v5 writes it; a nested text config may carry it alone. */
static enum ml_dtype read_dtype(struct ml_reader *top)
{
    struct ml_reader t = ml_reader_text(top);
    struct ml_reader *in[2] = {top, &t};
    for (int i = 0; i < 2; i++) {
        const char *d =
            ml_key_has(in[i], "torch_dtype") ? ml_key_str(in[i], "torch_dtype") : ml_key_str(in[i], "dtype");
        if (d)
            return ml_dtype_parse(d);
    }
    return ML_DTYPE_UNKNOWN;
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
            ml_reader_fail(r, ML_ERR_UNSUPPORTED,
                           _("'layer_types' names linear_attention layers, which model_type '%s' does not have"),
                           r->type);
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
    ml_key_value(r, "model_type", &mt);
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
        struct ml_reader c = ml_reader_child(r, nested[i], &present);
        if (!present)
            continue;
        struct ml_cfg_value ct;
        ml_key_value(&c, "model_type", &ct);
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

/* Is the MLP activation transformers' NewGELUActivation? ACT2FN maps "gelu_new" to it
 * (activations.py); the config names it as hidden_act or, in GPT-2's, activation_function
 * (docs/ledger.md O13); absent, the configuration class's default (family table). Other
 * activations are one autograd op that keeps its input. */
static bool read_gelu_new(struct ml_reader *t, const struct ml_family_def *f)
{
    static const char *const keys[] = {"hidden_act", "activation_function"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (!ml_key_has(t, keys[i]))
            continue;
        struct ml_cfg_value v;
        ml_key_value(t, keys[i], &v);
        return v.kind == ML_CFG_STRING && !strcmp(v.str, "gelu_new");
    }
    return f->gelu_new_default;
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
    struct ml_reader t = ml_reader_text(&m);
    read_layer_types(&t, out);
    read_context(&m, &t, out);
    ml_reader_merge(&m, &t);
    ml_read_quant(&m, out);
    if (out->wq.method == ML_WQ_NONE && model != root)
        ml_read_quant(&r, out);
    ml_reader_merge(&r, &m);
    settle_layers(&r, out);
    out->stack = f->stack;
    out->attn_softcap = f->attn_softcap;
    out->loss_in_param_dtype = f->loss_in_param_dtype;
    out->eager_softmax_act_dtype = f->eager_softmax_act_dtype;
    out->attn_dropout = f->attn_dropout;
    out->mlp_gelu_new = read_gelu_new(&t, f);
    out->no_sdpa = f->no_sdpa;
    out->no_flash = f->no_flash;
    if (r.failed)
        return diag ? diag->code : ML_ERR_INVALID;
    st = ml_arch_validate(out, diag);
    if (st != ML_OK)
        ml_diag_at(diag, origin, 0, 0);
    return st;
}
