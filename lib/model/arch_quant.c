/*
 * arch_quant.c - a quantized checkpoint's format from its config (quantization_config,
 * compression_config): bitsandbytes, GPTQ, AWQ, compressed-tensors, fp8 block scales, mxfp4;
 * bits, group size and the modules left unquantized (ml_wq_skips), and the format's one-line
 * description (ml_wq_describe). Keys as transformers reads them (utils/quantization_config.py,
 * read_quant below); docs/models.md lists the keys. Through struct ml_cfg_ops only (arch_int.h):
 * no JSON library, no I/O.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch_int.h"
#include "i18n.h"

/* ---- quantized checkpoints ------------------------------------------------------------------- */

/* A group size as quantization configs write it: -1 (or 0) = one group per output row. */
static uint32_t get_group(struct ml_reader *r, const char *key, uint32_t def)
{
    struct ml_cfg_value v;
    ml_key_value(r, key, &v);
    if (v.kind == ML_CFG_NUMBER && v.num < 0)
        return 0;
    return (uint32_t)ml_key_u64(r, KEYS(key), def, 0, 1u << 20);
}

/* The module patterns a quantized checkpoint keeps in 16 bits. */
static void read_skip(struct ml_reader *q, const char *key, struct ml_weight_quant *w)
{
    const void *list = ml_key_list(q, key, _("'quantization_config.%s' must be a list of module names"));
    struct ml_cfg_value it;
    if (!list)
        return;
    for (const void *e = q->ops->first(list); e; e = q->ops->next(e)) {
        q->ops->value(e, &it);
        if (it.kind != ML_CFG_STRING) {
            ml_reader_fail(q, ML_ERR_INVALID, _("'quantization_config.%s' must be a list of module names"), key);
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
    struct ml_reader groups = ml_reader_child(q, "config_groups", &present), g = groups, wts = groups;
    wts.obj = NULL;
    for (const void *e = present ? q->ops->first(groups.obj) : NULL; e && !wts.obj; e = q->ops->next(e)) {
        g.obj = e;
        wts = ml_reader_child(&g, "weights", &has);
    }
    if (!wts.obj) {
        ml_reader_fail(q, ML_ERR_UNSUPPORTED,
                       _("'quantization_config': no compressed-tensors weight scheme under config_groups (group_0)"));
        return;
    }
    w->bits = (uint32_t)ml_key_u64(&wts, KEYS("num_bits"), 8, 1, 16);
    const char *type = ml_key_str(&wts, "type");
    const char *strategy = ml_key_str(&wts, "strategy");
    bool fp = type && !strcmp(type, "float");
    w->method = fp && w->bits == 8 ? ML_WQ_FP8 : ML_WQ_INT;
    w->group = strategy && !strcmp(strategy, "group") ? get_group(&wts, "group_size", 128) : 0;
    w->zero = !ml_key_bool(&wts, "symmetric", true);
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
    ml_reader_merge(q, &wts);
    ml_reader_merge(q, &g);
    ml_reader_merge(q, &groups);
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
        ml_reader_fail(q, ML_ERR_INVALID,
                       _("'quantization_config.weight_block_size' must be two positive whole numbers"));
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
void ml_read_quant(struct ml_reader *top, struct ml_arch *a)
{
    bool present;
    struct ml_reader q = ml_reader_child(top, "quantization_config", &present);
    struct ml_weight_quant *w = &a->wq;
    if (!present) {
        ml_reader_merge(top, &q);
        return;
    }
    const char *m = ml_key_str(&q, "quant_method");
    bool bnb4 = ml_key_bool(&q, "load_in_4bit", false), bnb8 = ml_key_bool(&q, "load_in_8bit", false);
    if (!m && (bnb4 || bnb8))
        m = "bitsandbytes";
    if (!m) {
        ml_reader_fail(&q, ML_ERR_INVALID, _("'quantization_config' has no 'quant_method'"));
        ml_reader_merge(top, &q);
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
        w->bits = (uint32_t)ml_key_u64(&q, KEYS("bits", "w_bit"), 4, 2, 8);
        w->group = get_group(&q, ml_key_has(&q, "group_size") ? "group_size" : "q_group_size", 128);
        w->zero = ml_key_bool(&q, "zero_point", true);
        read_skip(&q, "modules_to_not_convert", w);
    } else if (!strcmp(m, "gptq")) {
        /* AutoGPTQ / GPTQModel QuantLinear: qweight, qzeros (always), fp16 scales, g_idx. */
        *w = (struct ml_weight_quant){.method = ML_WQ_GPTQ, .scale_bytes = 2, .zero = true};
        w->bits = (uint32_t)ml_key_u64(&q, KEYS("bits"), 4, 2, 8);
        w->group = get_group(&q, "group_size", 128);
        w->g_idx = ml_key_bool(&q, "desc_act", false);
        w->lm_head = ml_key_bool(&q, "lm_head", false);
    } else if (!strcmp(m, "bitsandbytes")) {
        const char *t = ml_key_str(&q, "bnb_4bit_quant_type");
        if (bnb4)
            *w = (struct ml_weight_quant){.method = ML_WQ_BNB4,
                                          .bits = 4,
                                          .group = 64,
                                          .scale_bytes = 4,
                                          .double_quant = ml_key_bool(&q, "bnb_4bit_use_double_quant", false),
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
        ml_reader_fail(&q, ML_ERR_UNSUPPORTED,
                       _("quantization_config quant_method '%.24s' is not modelled (fp8, awq, gptq, bitsandbytes, "
                         "compressed-tensors and mxfp4 are)"),
                       m);
    }
    (void)snprintf(w->name, sizeof(w->name), "%s", m);
    ml_reader_merge(top, &q);
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
