/*
 * arch_keys.c - the shared key readers of the config readers (arch_int.h): one key of a config
 * object, checked (a number, whole, within bounds; a boolean; a fraction; a string; a list), with
 * the configuration class's default when absent, and every failure recorded once with the file
 * it came from; readers on a nested object (text_config, vision_config, rope_scaling) and their
 * failures merged back; the per-layer MoE mask and attention pattern the readers set.
 *
 * Each reader reads the keys its transformers configuration class defines
 * (configuration_<family>.py, or the model's remote code for qwen, chatglm, baichuan, internlm2,
 * deepseek); missing keys take the class defaults listed in docs/models.md. The config is reached
 * through struct ml_cfg_ops only (arch_int.h): no JSON library, no I/O.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arch_int.h"
#include "i18n.h"

/* ---- key readers ------------------------------------------------------------------------ */

enum ml_status ml_reader_fail(struct ml_reader *r, enum ml_status st, const char *fmt, ...)
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
void ml_key_value(struct ml_reader *r, const char *key, struct ml_cfg_value *v)
{
    r->ops->value(r->ops->member(r->obj, key), v);
}

/* The first of names present and not null into *v; false (and *v absent) if none is. */
static bool find(struct ml_reader *r, const char *const *names, const char **which, struct ml_cfg_value *v)
{
    for (; *names; names++) {
        ml_key_value(r, *names, v);
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
            ml_reader_fail(r, ML_ERR_INVALID, _("missing '%s' (required for model_type '%s')"), names[0], r->type);
        return def;
    }
    if (it.kind == ML_CFG_BOOL) {
        ml_reader_fail(r, ML_ERR_INVALID, _("'%s' must be a number, not a boolean"), key);
        return def;
    }
    if (it.kind != ML_CFG_NUMBER) {
        ml_reader_fail(r, ML_ERR_INVALID, _("'%s' must be a number"), key);
        return def;
    }
    double v = it.num;
    if (!isfinite(v)) {
        ml_reader_fail(r, ML_ERR_INVALID, _("'%s' is not a finite number"), key);
        return def;
    }
    if (v < 0) {
        ml_reader_fail(r, ML_ERR_INVALID, _("'%s' is negative (%.0f)"), key, v);
        return def;
    }
    if (v != floor(v)) {
        ml_reader_fail(r, ML_ERR_INVALID, _("'%s' must be a whole number, got %g"), key, v);
        return def;
    }
    if (v < (double)lo || v > (double)hi) {
        ml_reader_fail(r, ML_ERR_INVALID, _("'%s' = %.0f is out of range [%llu, %llu]"), key, v, (unsigned long long)lo,
                       (unsigned long long)hi);
        return def;
    }
    return (uint64_t)v;
}

uint64_t ml_key_required(struct ml_reader *r, const char *const *names, uint64_t lo, uint64_t hi)
{
    return get_int(r, names, true, 0, lo, hi);
}

uint64_t ml_key_u64(struct ml_reader *r, const char *const *names, uint64_t def, uint64_t lo, uint64_t hi)
{
    return get_int(r, names, false, def, lo, hi);
}

/* A size key: absent or null, the configuration class's default (family.h ml_size_defaults), as
 * transformers reads it; required where the row has none (def 0). */
uint64_t ml_key_size(struct ml_reader *r, const char *const *names, uint64_t def, uint64_t lo, uint64_t hi)
{
    return def ? ml_key_u64(r, names, def, lo, hi) : ml_key_required(r, names, lo, hi);
}

bool ml_key_bool(struct ml_reader *r, const char *key, bool def)
{
    struct ml_cfg_value it;
    ml_key_value(r, key, &it);
    if (it.kind == ML_CFG_ABSENT || it.kind == ML_CFG_NULL)
        return def;
    if (it.kind == ML_CFG_BOOL)
        return it.b;
    if (it.kind == ML_CFG_NUMBER && (it.num == 0 || it.num == 1))
        return it.num != 0;
    ml_reader_fail(r, ML_ERR_INVALID, _("'%s' must be true or false"), key);
    return def;
}

/* A fraction in [0, 1] (partial_rotary_factor); returns def if absent. */
double ml_key_fraction(struct ml_reader *r, const char *key, double def)
{
    struct ml_cfg_value it;
    ml_key_value(r, key, &it);
    if (it.kind == ML_CFG_ABSENT || it.kind == ML_CFG_NULL)
        return def;
    if (it.kind != ML_CFG_NUMBER || !isfinite(it.num) || it.num < 0 || it.num > 1) {
        ml_reader_fail(r, ML_ERR_INVALID, _("'%s' must be a number between 0 and 1"), key);
        return def;
    }
    return it.num;
}

const char *ml_key_str(struct ml_reader *r, const char *key)
{
    struct ml_cfg_value it;
    ml_key_value(r, key, &it);
    if (it.kind == ML_CFG_ABSENT || it.kind == ML_CFG_NULL)
        return NULL;
    if (it.kind != ML_CFG_STRING) {
        ml_reader_fail(r, ML_ERR_INVALID, _("'%s' must be a string"), key);
        return NULL;
    }
    return it.str;
}

/* Is key present at all (an explicit null counts)? */
bool ml_key_has(struct ml_reader *r, const char *key)
{
    return r->ops->member(r->obj, key) != NULL;
}

/* The list at key, or NULL when the key is absent or null; one that is not a list fails with
 * not_list (a format taking the key). */
const void *ml_key_list(struct ml_reader *r, const char *key, const char *not_list)
{
    const void *list = r->ops->member(r->obj, key);
    struct ml_cfg_value it;
    r->ops->value(list, &it);
    if (it.kind == ML_CFG_ABSENT || it.kind == ML_CFG_NULL)
        return NULL;
    if (it.kind != ML_CFG_ARRAY) {
        ml_reader_fail(r, ML_ERR_INVALID, not_list, key);
        return NULL;
    }
    return list;
}

/* mlp_only_layers: a list of layer indices that keep a dense MLP. */
void ml_key_dense_layers(struct ml_reader *r, struct ml_arch *a, const char *key)
{
    const void *list = ml_key_list(r, key, _("'%s' must be a list of layer indices"));
    struct ml_cfg_value it;
    if (!list)
        return;
    for (const void *e = r->ops->first(list); e; e = r->ops->next(e)) {
        r->ops->value(e, &it);
        if (it.kind != ML_CFG_NUMBER || !isfinite(it.num) || it.num < 0 || it.num != floor(it.num) ||
            it.num >= a->n_layers) {
            ml_reader_fail(r, ML_ERR_INVALID, _("'%s' holds a value that is not a layer index below %u"), key,
                           a->n_layers);
            return;
        }
        ml_arch_set_moe_layer(a, (uint32_t)it.num, false);
    }
}

enum ml_dtype ml_dtype_parse(const char *s)
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

/* ---- nested configs, layer kinds, context ------------------------------------------------ */

/* A reader on the object under key (text_config, vision_config); *present false (and a reader
 * on nothing) when the config has no such object. Failures are merged back by ml_reader_merge(). */
struct ml_reader ml_reader_child(struct ml_reader *r, const char *key, bool *present)
{
    struct ml_reader c = *r;
    const void *o = r->ops->member(r->obj, key);
    struct ml_cfg_value v;
    r->ops->value(o, &v);
    *present = v.kind == ML_CFG_OBJECT;
    if (v.kind != ML_CFG_ABSENT && v.kind != ML_CFG_NULL && v.kind != ML_CFG_OBJECT)
        ml_reader_fail(r, ML_ERR_INVALID, _("'%s' must be an object"), key);
    c.obj = *present ? o : NULL;
    c.failed = r->failed;
    return c;
}

void ml_reader_merge(struct ml_reader *r, const struct ml_reader *c)
{
    r->failed = r->failed || c->failed;
}

/* The language model's keys: text_config when the config nests one (transformers' sub_configs),
 * else the top level (Qwen2.5-VL's flat layout). */
struct ml_reader ml_reader_text(struct ml_reader *r)
{
    bool nested;
    struct ml_reader t = ml_reader_child(r, "text_config", &nested);
    return nested ? t : *r;
}

/* tie_word_embeddings of a composite model: the text config's when it says, else the top level's. */
bool ml_key_tie(struct ml_reader *top, struct ml_reader *t, bool def)
{
    if (t->obj != top->obj && ml_key_has(t, "tie_word_embeddings"))
        return ml_key_bool(t, "tie_word_embeddings", def);
    return ml_key_bool(top, "tie_word_embeddings", def);
}

/* ---- layers ---------------------------------------------------------------------------------- */

void ml_arch_set_moe_layer(struct ml_arch *a, uint32_t i, bool on)
{
    if (i >= ML_MAX_LAYERS)
        return;
    if (on)
        a->moe_layer_mask[i / 8] |= (uint8_t)(1u << (i % 8));
    else
        a->moe_layer_mask[i / 8] &= (uint8_t) ~(1u << (i % 8));
}

/* Every interval-th layer (1-based) full attention, the others of kind k (Qwen3-Next's
 * full_attention_interval, Gemma 3's sliding_window_pattern, gpt-oss's alternation). */
void ml_arch_layer_pattern(struct ml_arch *a, uint64_t interval, enum ml_layer_attn k)
{
    for (uint32_t i = 0; i < a->n_layers && i < ML_MAX_LAYERS; i++)
        a->layer_attn[i] = interval && (i + 1) % interval ? (uint8_t)k : (uint8_t)ML_LAYER_FULL;
}
