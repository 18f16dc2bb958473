/*
 * infer_yaml.c - a LLaMA-Factory inference YAML (examples/inference, `llamafactory-cli chat|api
 * FILE`) -> struct ml_infer_yaml -> struct ml_infer (see infer.h).
 *
 * The file is read with the training YAML's reader (yaml_walk.h: the same limits and errors) and
 * every key is looked up in one table (key_table): which setting of `memledger infer` it is, for
 * which backend, and the option that overrides it. What a key means comes from LLaMA-Factory
 * itself: hparams/model_args.py (ModelArguments, VllmArguments, SGLangArguments,
 * QuantizationArguments), hparams/generating_args.py, and how chat/{hf,vllm,sglang}_engine.py
 * hand them to the engine. Values are collected first and applied once the model is known
 * (ml_infer_yaml_apply), so the order of the keys never matters. docs/cli/infer.md "--config"
 * lists every key; docs/ledger.md "Inference configs" the defaults.
 */
#include "memledger/infer.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "memledger/edit.h"
#include "memledger/units.h"
#include "memledger/buf.h"
#include "yaml_walk.h"

enum kind {
    K_STR,   /* a path (model_name_or_path, adapter_name_or_path) */
    K_ENUM,  /* one of names[] (v: its index) */
    K_COUNT, /* a whole number in [lo, hi] */
    K_FRAC,  /* a fraction in (0, 1] (v: x 1000) */
    K_BOOL,
    K_MAP,    /* a mapping or a JSON string of sub-keys (vllm_config, sglang_config) */
    K_IGNORE, /* no effect on memory (template, trust_remote_code, ...) */
    K_WARN,   /* changes memory, not modelled: a warning (note) */
    K_REFUSE  /* cannot be modelled: an error (note) */
};

enum scope { SC_ALL, SC_HF, SC_VLLM, SC_SGLANG };

/* What a key sets (ml_infer_yaml_apply). */
enum target {
    T_NONE,
    T_MODEL,
    T_ADAPTER,
    T_ENGINE,
    T_DTYPE,
    T_MAXLEN,
    T_UTIL,
    T_EAGER,
    T_LORA_RANK,
    T_MAX_LORAS,
    T_ENABLE_LORA,
    T_FRACTION,
    T_TP,
    T_PP,
    T_CUTOFF,
    T_NEW_TOKENS,
    T_BEAMS,
    T_QBIT,
    T_QTYPE,
    T_DOUBLE_QUANT,
    T_ATTN,
    T_KV_DTYPE,
    T_SEQS,
    T_BATCHED,
    T_BLOCK
};

struct key_def {
    const char *key;
    enum kind kind;
    enum scope scope;
    enum target target;
    const char *flag;         /* the `memledger infer` option that overrides it */
    uint64_t lo, hi;          /* K_COUNT */
    const char *const *names; /* K_ENUM: the values LLaMA-Factory (or the engine) accepts */
    const char *note;         /* K_WARN / K_REFUSE */
};

static const char *const backends[] = {"huggingface", "vllm", "sglang", "ktransformers", NULL};
static const char *const dtypes[] = {"auto", "float16", "bfloat16", "float32", NULL};
static const char *const qtypes[] = {"nf4", "fp4", NULL};
/* LLaMA-Factory AttentionFunction (extras/constants.py). */
static const char *const attns[] = {"auto", "disabled", "sdpa", "fa2", "fa3", NULL};
static const char *const kv_dtypes[] = {"auto", "fp16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", NULL};

#define C(k, sc, t, fl, lo, hi)                                                                                        \
    {                                                                                                                  \
        k, K_COUNT, sc, t, fl, lo, hi, NULL, NULL                                                                      \
    }
#define E(k, sc, t, fl, names)                                                                                         \
    {                                                                                                                  \
        k, K_ENUM, sc, t, fl, 0, 0, names, NULL                                                                        \
    }
#define FR(k, sc, t, fl)                                                                                               \
    {                                                                                                                  \
        k, K_FRAC, sc, t, fl, 0, 0, NULL, NULL                                                                         \
    }
#define B(k, sc, t, fl)                                                                                                \
    {                                                                                                                  \
        k, K_BOOL, sc, t, fl, 0, 0, NULL, NULL                                                                         \
    }
#define IGN(k)                                                                                                         \
    {                                                                                                                  \
        k, K_IGNORE, SC_ALL, T_NONE, NULL, 0, 0, NULL, NULL                                                            \
    }
#define WARN(k, sc, note)                                                                                              \
    {                                                                                                                  \
        k, K_WARN, sc, T_NONE, NULL, 0, 0, NULL, note                                                                  \
    }
#define LEN ((uint64_t)1 << 32)

/* One row per key. Rows of the same setting are applied in this order: an engine mapping's key
 * (vllm_config.max_model_len) after LLaMA-Factory's own (vllm_maxlen), as engine_args.update does. */
static const struct key_def key_table[] = {
    {"model_name_or_path", K_STR, SC_ALL, T_MODEL, NULL, 0, 0, NULL, NULL},
    {"adapter_name_or_path", K_STR, SC_ALL, T_ADAPTER, NULL, 0, 0, NULL, NULL},
    E("infer_backend", SC_ALL, T_ENGINE, "engine", backends),
    E("infer_dtype", SC_ALL, T_DTYPE, "dtype", dtypes),
    /* VllmArguments */
    C("vllm_maxlen", SC_VLLM, T_MAXLEN, "max-model-len", 1, LEN),
    FR("vllm_gpu_util", SC_VLLM, T_UTIL, "gpu-memory-utilization"),
    B("vllm_enforce_eager", SC_VLLM, T_EAGER, "enforce-eager"),
    C("vllm_max_lora_rank", SC_VLLM, T_LORA_RANK, "max-lora-rank", 1, 1u << 16),
    {"vllm_config", K_MAP, SC_VLLM, T_NONE, NULL, 0, 0, NULL, NULL},
    /* vllm_config: EngineArgs keys that change memory (engine_args.update(vllm_config)) */
    C("vllm_config.max_model_len", SC_VLLM, T_MAXLEN, "max-model-len", 1, LEN),
    FR("vllm_config.gpu_memory_utilization", SC_VLLM, T_UTIL, "gpu-memory-utilization"),
    B("vllm_config.enforce_eager", SC_VLLM, T_EAGER, "enforce-eager"),
    C("vllm_config.max_lora_rank", SC_VLLM, T_LORA_RANK, "max-lora-rank", 1, 1u << 16),
    C("vllm_config.max_loras", SC_VLLM, T_MAX_LORAS, "max-loras", 1, 1024),
    B("vllm_config.enable_lora", SC_VLLM, T_ENABLE_LORA, "enable-lora"),
    C("vllm_config.tensor_parallel_size", SC_VLLM, T_TP, "tp", 1, 1024),
    C("vllm_config.pipeline_parallel_size", SC_VLLM, T_PP, "pp", 1, 1024),
    C("vllm_config.max_num_seqs", SC_VLLM, T_SEQS, "max-num-seqs", 1, 1u << 20),
    C("vllm_config.max_num_batched_tokens", SC_VLLM, T_BATCHED, "max-num-batched-tokens", 1, LEN),
    C("vllm_config.block_size", SC_VLLM, T_BLOCK, NULL, 1, 1024),
    E("vllm_config.kv_cache_dtype", SC_VLLM, T_KV_DTYPE, "kv-dtype", kv_dtypes),
    IGN("vllm_config.limit_mm_per_prompt"),
    IGN("vllm_config.trust_remote_code"),
    IGN("vllm_config.disable_log_stats"),
    /* SGLangArguments (sglang_engine.py: --context-length, --mem-fraction-static, --tp-size) */
    C("sglang_maxlen", SC_SGLANG, T_MAXLEN, "max-model-len", 1, LEN),
    FR("sglang_mem_fraction", SC_SGLANG, T_FRACTION, "mem-fraction-static"),
    C("sglang_tp_size", SC_SGLANG, T_TP, "tp", 0, 1024), /* -1 (default): all GPUs, read as 0 */
    {"sglang_config", K_MAP, SC_SGLANG, T_NONE, NULL, 0, 0, NULL, NULL},
    C("sglang_config.context_length", SC_SGLANG, T_MAXLEN, "max-model-len", 1, LEN),
    FR("sglang_config.mem_fraction_static", SC_SGLANG, T_FRACTION, "mem-fraction-static"),
    C("sglang_config.tp_size", SC_SGLANG, T_TP, "tp", 1, 1024),
    E("sglang_config.kv_cache_dtype", SC_SGLANG, T_KV_DTYPE, "kv-dtype", kv_dtypes),
    IGN("sglang_lora_backend"),
    /* the context of the huggingface engine: the prompt (DataArguments cutoff_len) + the reply
     * (GeneratingArguments max_new_tokens); beam search decodes num_beams sequences */
    C("cutoff_len", SC_HF, T_CUTOFF, "context", 1, LEN),
    C("max_new_tokens", SC_HF, T_NEW_TOKENS, "context", 1, LEN),
    C("num_beams", SC_HF, T_BEAMS, "batch", 1, 1u << 10),
    /* QuantizationArguments: on-the-fly bitsandbytes under huggingface (model/model_utils/quantization.py) */
    C("quantization_bit", SC_HF, T_QBIT, "quant", 4, 8),
    E("quantization_type", SC_HF, T_QTYPE, "quant", qtypes),
    B("double_quantization", SC_HF, T_DOUBLE_QUANT, "double-quant"),
    E("flash_attn", SC_HF, T_ATTN, "attn", attns),
    WARN("quantization_method", SC_HF, N_("only bitsandbytes (the default) is modelled")),
    WARN("rope_scaling", SC_ALL, N_("the longer context it allows is not derived; give --max-model-len or --context")),
    WARN("use_kv_cache", SC_HF, N_("generation without a KV cache recomputes the prefix; the ledger keeps the cache")),
    WARN("adapter_folder", SC_ALL, N_("the adapter's weights are not read")),
    WARN("use_unsloth", SC_HF, N_("unsloth's inference kernels are not modelled")),
    {"use_kt", K_REFUSE, SC_ALL, T_NONE, NULL, 0, 0, NULL,
     N_("KTransformers (CPU-offloaded experts) inference is not modelled")},
    {"export_dir", K_REFUSE, SC_ALL, T_NONE, NULL, 0, 0, NULL,
     N_("an export config (export_dir): merging and exporting are not an inference run")},
    IGN("template"),
    IGN("trust_remote_code"),
    IGN("finetuning_type"),
    IGN("default_system"),
    IGN("enable_thinking"),
    IGN("max_length"),
    IGN("do_sample"),
    IGN("temperature"),
    IGN("top_p"),
    IGN("top_k"),
    IGN("repetition_penalty"),
    IGN("length_penalty"),
    IGN("skip_special_tokens"),
    IGN("cache_dir"),
    IGN("model_revision"),
    IGN("hf_hub_token"),
    IGN("ms_hub_token"),
    IGN("om_hub_token"),
    IGN("low_cpu_mem_usage"),
};

#undef C
#undef E
#undef FR
#undef B
#undef IGN
#undef WARN

_Static_assert(sizeof(key_table) / sizeof(key_table[0]) <= ML_INFER_YAML_KEYS, "ML_INFER_YAML_KEYS too small");

#define N_KEYS (sizeof(key_table) / sizeof(key_table[0]))

/* Keys only a training run has (LLaMA-Factory's inference parser, get_infer_args, has no
 * TrainingArguments): a file with them and no infer_backend is a training config. */
static const char *const train_keys[] = {"stage",
                                         "do_train",
                                         "dataset",
                                         "output_dir",
                                         "per_device_train_batch_size",
                                         "learning_rate",
                                         "num_train_epochs",
                                         "deepspeed",
                                         "train_dataset",
                                         "micro_batch_size",
                                         "gradient_accumulation_steps"};

struct reader {
    struct ml_infer_yaml *y;
    bool has_backend;
    char train_key[64]; /* the first training key seen */
    uint32_t n_unknown;
};

static void warn(struct ml_infer_yaml *y, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct ml_infer_yaml *y, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ml_warnings_vadd(&y->warnings, fmt, ap);
    va_end(ap);
}

static const struct key_def *lookup(const char *key)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (!strcmp(key_table[i].key, key))
            return &key_table[i];
    return NULL;
}

/* The nearest key of this table, else of LLaMA-Factory's training table. */
static const char *near(const char *key)
{
    struct ml_near n = {{0}, {0}, 0};
    size_t limit = ml_near_limit(key);
    for (size_t i = 0; i < N_KEYS; i++)
        if (!strchr(key_table[i].key, '.'))
            ml_near_offer(&n, key, key_table[i].key, limit);
    return n.n ? n.name[0] : ml_lf_key_near(key);
}

static int lower(int ch)
{
    return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch;
}

static bool ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (lower((unsigned char)*a) != lower((unsigned char)*b))
            return false;
    return *a == *b;
}

/* A fraction in (0, 1] written in decimal, x 1000 (0.7, 0.95, 1, .5); no locale. */
static bool parse_permille(const char *s, uint64_t *out)
{
    uint64_t ip = 0, fp = 0, div = 1;
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++)
        if ((ip = ip * 10 + (uint64_t)(*s - '0')) > 1)
            return false;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++, digits++)
            if (div < 1000) {
                fp = fp * 10 + (uint64_t)(*s - '0');
                div *= 10;
            }
    if (*s || !digits)
        return false;
    *out = ip * 1000 + fp * (1000 / div);
    return *out > 0 && *out <= 1000;
}

/* The value of one table key, checked and kept in y->got. */
static enum ml_status take(struct reader *r, const struct key_def *d, const char *val, struct ml_diag *diag)
{
    struct ml_infer_yaml_got *g = &r->y->got[d - key_table];
    uint64_t v = 0;
    switch (d->kind) {
    case K_STR: {
        char *dst = d->target == T_MODEL ? r->y->model : r->y->adapter;
        size_t cap = d->target == T_MODEL ? sizeof(r->y->model) : sizeof(r->y->adapter);
        if (strlen(val) >= cap)
            return ml_diag_set(diag, ML_ERR_INVALID, _("'%s' is longer than %zu bytes"), d->key, cap - 1);
        (void)snprintf(dst, cap, "%s", val);
        if (d->target == T_ADAPTER && *val) /* comma-separated, merged in order (ModelArguments) */
            for (const char *p = val; p; p = strchr(p + 1, ','))
                r->y->n_adapters++;
        break;
    }
    case K_ENUM: {
        int i = 0;
        while (d->names[i] && !ieq(val, d->names[i]))
            i++;
        if (!d->names[i]) {
            char list[160] = "";
            for (int k = 0; d->names[k]; k++)
                (void)snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? ", " : "", d->names[k]);
            return ml_diag_set(diag, ML_ERR_INVALID, _("'%s': '%.60s' is not one of %s"), d->key, val, list);
        }
        if (d->target == T_ENGINE && i == 3)
            return ml_diag_set(diag, ML_ERR_INVALID,
                               _("'%s': ktransformers (CPU-offloaded experts) inference is not modelled; use "
                                 "huggingface, vllm or sglang"),
                               d->key);
        v = (uint64_t)i;
        r->has_backend = r->has_backend || d->target == T_ENGINE;
        break;
    }
    case K_COUNT:
        if (d->target == T_TP && !strcmp(val, "-1"))
            break; /* sglang_tp_size: -1 = every GPU */
        if (ml_count_parse(val, &v, NULL) != ML_OK || v < d->lo || v > d->hi)
            return ml_diag_set(diag, ML_ERR_INVALID, _("'%s' must be a whole number from %llu to %llu, got '%.60s'"),
                               d->key, (unsigned long long)d->lo, (unsigned long long)d->hi, val);
        break;
    case K_FRAC:
        if (!parse_permille(val, &v))
            return ml_diag_set(diag, ML_ERR_INVALID, _("'%s' must be a fraction in (0, 1], got '%.60s'"), d->key, val);
        break;
    case K_BOOL:
        if (ieq(val, "true") || ieq(val, "yes") || ieq(val, "on") || !strcmp(val, "1"))
            v = 1;
        else if (!(ieq(val, "false") || ieq(val, "no") || ieq(val, "off") || !strcmp(val, "0")))
            return ml_diag_set(diag, ML_ERR_INVALID, _("'%s' must be true or false, got '%.60s'"), d->key, val);
        break;
    case K_WARN: warn(r->y, _("'%s' changes memory but is not modelled: %s"), d->key, _(d->note)); return ML_OK;
    case K_REFUSE: return ml_diag_set(diag, ML_ERR_INVALID, _("'%s': %s"), d->key, _(d->note));
    case K_MAP:
    case K_IGNORE: return ML_OK;
    }
    g->given = true;
    g->v = v;
    (void)snprintf(g->text, sizeof(g->text), "%s", val);
    return ML_OK;
}

static enum ml_status entry(void *arg, const char *key, const char *val, bool is_null, struct ml_diag *diag);

/* vllm_config / sglang_config written as a JSON string (VllmArguments.__post_init__ json.loads). */
static enum ml_status take_json(struct reader *r, const struct key_def *d, const char *val, struct ml_diag *diag)
{
    cJSON *j = cJSON_Parse(val);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return ml_diag_set(diag, ML_ERR_INVALID, _("'%s' must be a mapping or a JSON object string"), d->key);
    }
    enum ml_status st = ML_OK;
    char sub[160], num[64];
    for (const cJSON *it = j->child; it && st == ML_OK; it = it->next) {
        (void)snprintf(sub, sizeof(sub), "%s.%s", d->key, it->string ? it->string : "");
        const char *v = cJSON_IsString(it) ? it->valuestring : NULL;
        if (cJSON_IsBool(it))
            v = cJSON_IsTrue(it) ? "true" : "false";
        else if (cJSON_IsNumber(it)) {
            (void)snprintf(num, sizeof(num), "%.15g", it->valuedouble);
            v = num;
        }
        if (v)
            st = entry(r, sub, v, false, diag);
    }
    cJSON_Delete(j);
    return st;
}

/* One top-level entry (or a sub-key "vllm_config.x") of the file. */
static enum ml_status entry(void *arg, const char *key, const char *val, bool is_null, struct ml_diag *diag)
{
    struct reader *r = arg;
    for (size_t i = 0; i < sizeof(train_keys) / sizeof(train_keys[0]); i++)
        if (!strcmp(key, train_keys[i]) && !r->train_key[0])
            (void)snprintf(r->train_key, sizeof(r->train_key), "%s", key);
    const struct key_def *d = lookup(key);
    if (!d) {
        const char *dot = strchr(key, '.');
        if (dot) {
            warn(r->y, _("'%s' is not read (memledger models the engine arguments its table lists)"), key);
            return ML_OK;
        }
        if (ml_lf_key_known(key))
            return ML_OK; /* a LLaMA-Factory key with no effect on serving memory */
        const char *n = near(key);
        if (n)
            warn(r->y, _("'%s' is not a LLaMA-Factory key (LLaMA-Factory refuses it); ignored; did you mean '%s'?"),
                 key, n);
        else if (r->n_unknown++ < 8)
            warn(r->y, _("'%s': neither LLaMA-Factory nor memledger knows this key; ignored"), key);
        return ML_OK;
    }
    if (is_null)
        return ML_OK; /* null: LLaMA-Factory's default */
    if (d->kind == K_MAP)
        return take_json(r, d, val, diag);
    return take(r, d, val, diag);
}

enum ml_status ml_infer_yaml_read(const char *data, size_t len, const char *origin, struct ml_infer_yaml *y,
                                  struct ml_diag *diag)
{
    memset(y, 0, sizeof(*y));
    struct reader r = {.y = y};
    enum ml_status st = ml_yaml_walk(data, len, origin, entry, &r, diag);
    if (st != ML_OK)
        return st;
    if (r.train_key[0] && !r.has_backend) {
        st = ml_diag_set(diag, ML_ERR_INVALID,
                         _("a training config ('%s', no infer_backend), not an inference one: "
                           "its memory is 'memledger train --config %s'"),
                         r.train_key, origin ? origin : "FILE");
        ml_diag_at(diag, origin, 0, 0);
    }
    return st;
}

/* The backend a key belongs to, as the engine enum. */
static bool in_scope(enum scope sc, enum ml_engine e)
{
    return sc == SC_ALL || (sc == SC_HF && e == ML_ENGINE_HF) || (sc == SC_VLLM && e == ML_ENGINE_VLLM) ||
           (sc == SC_SGLANG && e == ML_ENGINE_SGLANG);
}

static const char *scope_name(enum scope sc)
{
    return sc == SC_HF ? "huggingface" : sc == SC_VLLM ? "vllm" : "sglang";
}

/* infer_dtype: auto as each engine resolves it. huggingface: LLaMA-Factory's infer_optim_dtype
 * (extras/misc.py; model/patcher.py) - bf16 for a bf16 or undeclared checkpoint, else fp16;
 * vllm / sglang: the checkpoint's torch_dtype (fp32 served in 16 bits), GPTQ in fp16
 * (vllm_engine.py, sglang_engine.py: "gptq models should use float16"). */
static enum ml_precision auto_dtype(const struct ml_arch *a, enum ml_engine e)
{
    if (e == ML_ENGINE_HF)
        return a->torch_dtype == ML_DTYPE_BF16 || a->torch_dtype == ML_DTYPE_UNKNOWN ? ML_PREC_BF16 : ML_PREC_FP16;
    if (a->wq.method == ML_WQ_GPTQ || a->torch_dtype == ML_DTYPE_FP16)
        return ML_PREC_FP16;
    return ML_PREC_BF16;
}

/* One given key onto s. */
static void set_one(const struct key_def *d, uint64_t v, struct ml_infer *s, uint64_t *cutoff, uint64_t *new_tokens,
                    uint32_t *qbit, bool *fp4)
{
    static const enum ml_attn attn_of[] = {ML_ATTN_SDPA, ML_ATTN_EAGER, ML_ATTN_SDPA, ML_ATTN_FLASH, ML_ATTN_FLASH};
    static const enum ml_kv_dtype kv_of[] = {ML_KV_AUTO, ML_KV_FP16, ML_KV_BF16, ML_KV_FP8, ML_KV_FP8, ML_KV_FP8};
    static const enum ml_precision prec_of[] = {ML_PREC_BF16, ML_PREC_FP16, ML_PREC_BF16, ML_PREC_FP32};
    switch (d->target) {
    case T_DTYPE:
        if (v)
            s->precision = prec_of[v];
        break;
    case T_MAXLEN: s->max_model_len = v; break;
    case T_UTIL: s->gpu_util_permille = (uint32_t)v; break;
    case T_EAGER: s->enforce_eager = v != 0; break;
    case T_LORA_RANK: s->max_lora_rank = (uint32_t)v; break;
    case T_MAX_LORAS: s->max_loras = (uint32_t)v; break;
    case T_ENABLE_LORA: s->enable_lora = v != 0; break;
    case T_FRACTION: s->mem_fraction_static_permille = (uint32_t)v; break;
    case T_TP:
        if (v) {
            s->tp = (uint32_t)v;
            s->tp_set = true;
        }
        break;
    case T_PP: s->pp = (uint32_t)v; break;
    case T_CUTOFF: *cutoff = v; break;
    case T_NEW_TOKENS: *new_tokens = v; break;
    case T_BEAMS: s->batch = v; break;
    case T_QBIT: *qbit = (uint32_t)v; break;
    case T_QTYPE: *fp4 = v == 1; break;
    case T_DOUBLE_QUANT: s->double_quant = v != 0; break;
    case T_ATTN: s->attn = attn_of[v]; break;
    case T_KV_DTYPE: s->kv_dtype = kv_of[v]; break;
    case T_SEQS: s->max_num_seqs = v; break;
    case T_BATCHED: s->max_num_batched_tokens = v; break;
    case T_BLOCK: s->block_size = (uint32_t)v; break;
    case T_NONE:
    case T_MODEL:
    case T_ADAPTER:
    case T_ENGINE: break;
    }
}

void ml_infer_yaml_apply(struct ml_infer_yaml *y, const struct ml_arch *a, uint32_t n_gpus,
                         const enum ml_engine *engine, struct ml_infer *s)
{
    const struct ml_infer_yaml_got *eg = &y->got[lookup("infer_backend") - key_table];
    s->engine = engine ? *engine : eg->given ? (enum ml_engine)eg->v : ML_ENGINE_HF; /* default huggingface */
    s->precision = auto_dtype(a, s->engine);
    /* LLaMA-Factory's defaults, passed to the engine whether the file names them or not
     * (VllmArguments, SGLangArguments; vllm_engine.py tensor_parallel_size = get_device_count();
     * sglang_engine.py --tp-size). */
    if (s->engine != ML_ENGINE_HF) {
        s->max_model_len = 4096;
        s->tp = n_gpus ? n_gpus : 1;
        s->tp_set = true;
    }
    if (s->engine == ML_ENGINE_VLLM) {
        s->gpu_util_permille = 700;
        s->max_lora_rank = 32;
        s->max_loras = 1;                       /* vLLM LoRAConfig max_loras */
        s->enable_lora = y->adapter[0] != '\0'; /* vllm_engine.py enable_lora */
    } else if (s->engine == ML_ENGINE_SGLANG) {
        s->mem_fraction_static_permille = 700;
    }
    uint64_t cutoff = 2048, new_tokens = 1024; /* DataArguments cutoff_len, GeneratingArguments max_new_tokens */
    uint32_t qbit = 0;
    bool fp4 = false;
    s->double_quant = true; /* QuantizationArguments double_quantization */
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct key_def *d = &key_table[i];
        if (!y->got[i].given)
            continue;
        if (!in_scope(d->scope, s->engine)) {
            warn(y, _("'%s' is read by the %s backend only (the backend in force: %s); ignored"), d->key,
                 scope_name(d->scope), backends[s->engine]);
            continue;
        }
        set_one(d, y->got[i].v, s, &cutoff, &new_tokens, &qbit, &fp4);
    }
    if (s->engine == ML_ENGINE_HF) {
        s->context = cutoff + new_tokens;
        s->prompt = cutoff;
        s->quant = qbit == 8 ? ML_QUANT_INT8 : qbit == 4 ? (fp4 ? ML_QUANT_FP4 : ML_QUANT_NF4) : ML_QUANT_NONE;
    }
    /* huggingface merges the adapters into the weights at load (model/adapter.py merge_and_unload):
     * no memory of their own, except on a quantized model, where the last one stays unmerged. */
    if (y->adapter[0] && s->engine == ML_ENGINE_HF && (qbit || a->wq.method != ML_WQ_NONE))
        warn(y, _("adapter_name_or_path on a quantized model stays unmerged (model/adapter.py); its weights are not "
                  "counted (its rank is in adapter_config.json)"));
    if (y->adapter[0] && s->engine == ML_ENGINE_SGLANG)
        warn(y, _("adapter_name_or_path: SGLang's LoRA memory pool (--max-loras-per-batch 1) is not counted"));
}

const char *ml_infer_yaml_setter(const struct ml_infer_yaml *y, enum ml_engine engine, const char *flag,
                                 const char **text)
{
    const char *key = NULL;
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct key_def *d = &key_table[i];
        if (!y->got[i].given || !d->flag || strcmp(d->flag, flag) || !in_scope(d->scope, engine))
            continue;
        key = d->key;
        if (text)
            *text = y->got[i].text;
    }
    return key;
}

/* ASCII case-insensitive equality (the file's infer_backend against the engine's name). */
static bool same_nocase(const char *a, const char *b)
{
    for (;; a++, b++) {
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a, z = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;
        if (x != z)
            return false;
        if (!x)
            return true;
    }
}

void ml_infer_yaml_flags(const struct ml_infer_yaml *y, const struct ml_infer_flag *f, uint32_t n, struct ml_infer *s,
                         const char **key, const char **text)
{
    for (uint32_t i = 0; i < n; i++) {
        struct ml_infer before;
        memcpy(&before, s, sizeof(before));
        ml_infer_opt_set(f[i].opt, f[i].v, s);
        const char *t = NULL;
        const char *k = y ? ml_infer_yaml_setter(y, s->engine, f[i].opt->name, &t) : NULL;
        /* The backend is applied with the file (its defaults follow it): compare with the key. */
        bool changed =
            !strcmp(f[i].opt->name, "engine")
                ? k && !same_nocase(t, s->engine == ML_ENGINE_HF ? "huggingface" : f[i].opt->choices[s->engine])
                : memcmp(&before, s, sizeof(before)) != 0;
        key[i] = k && changed ? k : NULL;
        text[i] = key[i] ? t : NULL;
    }
}

bool ml_infer_yaml_tp_is_gpus(const struct ml_infer_yaml *y, const struct ml_infer *s, const struct ml_infer_flag *f,
                              uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(f[i].opt->name, "tp"))
            return false;
    return y && s->engine != ML_ENGINE_HF;
}

enum ml_status ml_infer_yaml_load(const char *path, ml_read_fn read, struct ml_infer_yaml *y, struct ml_diag *d)
{
    struct ml_buf b;
    ml_buf_init(&b, 0);
    enum ml_status st = read(path, ML_INFER_YAML_MAX, &b, d);
    if (st == ML_OK)
        st = ml_infer_yaml_read(b.buf, b.len, path, y, d);
    ml_buf_release(&b);
    return st;
}
