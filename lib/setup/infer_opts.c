/*
 * infer_opts.c - the serving options of the command line (docs/cli/infer.md), one row each: the
 * name, the kind of value, its choices or range, the field of struct ml_infer it sets, and the
 * other commands that take it (include/memledger/infer.h "Serving options"). src/infer_opts.c
 * parses the values (ml_opt_u64, ml_opt_fraction: the usage errors) and builds each command's
 * getopt table from these rows.
 */
#include "memledger/infer.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"

#define FIELD(f) offsetof(struct ml_infer, f), sizeof(((struct ml_infer *)0)->f)
#define FIT      ML_IOPT_IN_FIT
#define DIAG     ML_IOPT_IN_DIAGNOSE
#define HF       ML_IOPT_ENG_HF
#define VLLM     ML_IOPT_ENG_VLLM
#define SGL      ML_IOPT_ENG_SGLANG

/* The enums are set as 32-bit values (ml_infer_opt_set). */
_Static_assert(sizeof(enum ml_engine) == sizeof(uint32_t) && sizeof(enum ml_precision) == sizeof(uint32_t) &&
                   sizeof(enum ml_quant) == sizeof(uint32_t) && sizeof(enum ml_kv_dtype) == sizeof(uint32_t) &&
                   sizeof(enum ml_attn) == sizeof(uint32_t),
               "enum fields are 32-bit");

static const char *const engines[] = {"hf", "vllm", "sglang", NULL};
static const char *const dtypes[] = {"bf16", "fp16", "fp32", NULL};
static const uint32_t dtype_v[] = {ML_PREC_BF16, ML_PREC_FP16, ML_PREC_FP32};
static const char *const quants[] = {"none", "int8", "nf4", "fp4", "gptq", "awq", "fp8", "int4", NULL};
static const char *const bits[] = {"2", "3", "4", "8", NULL};
static const uint32_t bits_v[] = {2, 3, 4, 8};
static const char *const kv_dtypes[] = {"auto", "fp16", "bf16", "fp8", NULL};
static const char *const attns[] = {"eager", "sdpa", "flash", NULL};
/* vLLM's KV block sizes (vllm/config/cache.py BlockSize, CacheConfig.block_size, default 16 on CUDA):
 * the pool is cut into whole blocks of that many tokens (v1/core/kv_cache_utils.py). */
static const char *const block_sizes[] = {"1", "8", "16", "32", "64", "128", "256", NULL};
static const uint32_t block_sizes_v[] = {1, 8, 16, 32, 64, 128, 256};

/* The order is infer's getopt table: an abbreviation shared by options of the same kind
 * (--max-num) is the first of them (getopt_long). */
static const struct ml_infer_opt_def opts[] = {
    /* the last column: the engines that read it (0: all). transformers generate models one
     * sequence batch (--batch, --context, --prompt, its cache and attention); the engines'
     * options are their own start-up settings (vllm/engine/arg_utils.py EngineArgs, SGLang
     * server_args.py ServerArgs: --mem-fraction-static; --context-length is --max-model-len). */
    {"engine", ML_IOPT_CHOICE, FIELD(engine), engines, NULL, 0, 0, FIT | DIAG, 0},
    {"dtype", ML_IOPT_CHOICE, FIELD(precision), dtypes, dtype_v, 0, 0, DIAG, 0},
    {"quant", ML_IOPT_CHOICE, FIELD(quant), quants, NULL, 0, 0, FIT | DIAG, 0},
    {"group-size", ML_IOPT_COUNT, FIELD(group_size), NULL, NULL, 1, 1u << 20, 0, 0},
    {"double-quant", ML_IOPT_FLAG, FIELD(double_quant), NULL, NULL, 0, 0, 0, 0},
    {"kv-dtype", ML_IOPT_CHOICE, FIELD(kv_dtype), kv_dtypes, NULL, 0, 0, FIT | DIAG, 0},
    {"quant-bits", ML_IOPT_CHOICE, FIELD(quant_bits), bits, bits_v, 0, 0, 0, 0},
    {"dequantize", ML_IOPT_FLAG, FIELD(dequantize), NULL, NULL, 0, 0, 0, 0},
    {"allow-long-max-model-len", ML_IOPT_FLAG, FIELD(allow_long), NULL, NULL, 0, 0, 0, VLLM | SGL},
    {"batch", ML_IOPT_COUNT, FIELD(batch), NULL, NULL, 1, 1u << 20, 0, HF},
    {"context", ML_IOPT_COUNT, FIELD(context), NULL, NULL, 1, (uint64_t)1 << 32, 0, HF},
    {"prompt", ML_IOPT_COUNT, FIELD(prompt), NULL, NULL, 1, (uint64_t)1 << 32, 0, HF},
    {"static-cache", ML_IOPT_FLAG, FIELD(static_cache), NULL, NULL, 0, 0, 0, HF},
    {"attn", ML_IOPT_CHOICE, FIELD(attn), attns, NULL, 0, 0, 0, HF},
    {"tp", ML_IOPT_COUNT, FIELD(tp), NULL, NULL, 1, 1024, FIT | DIAG, VLLM | SGL},
    {"pp", ML_IOPT_COUNT, FIELD(pp), NULL, NULL, 1, 1024, 0, VLLM | SGL},
    {"gpu-memory-utilization", ML_IOPT_FRACTION, FIELD(gpu_util_permille), NULL, NULL, 0, 0, FIT | DIAG, VLLM},
    {"max-model-len", ML_IOPT_COUNT, FIELD(max_model_len), NULL, NULL, 1, (uint64_t)1 << 32, FIT | DIAG, VLLM | SGL},
    {"max-num-seqs", ML_IOPT_COUNT, FIELD(max_num_seqs), NULL, NULL, 1, 1u << 20, FIT | DIAG, VLLM},
    {"max-num-batched-tokens", ML_IOPT_COUNT, FIELD(max_num_batched_tokens), NULL, NULL, 1, (uint64_t)1 << 32,
     FIT | DIAG, VLLM},
    {"block-size", ML_IOPT_CHOICE, FIELD(block_size), block_sizes, block_sizes_v, 0, 0, 0, VLLM},
    {"offline", ML_IOPT_FLAG, FIELD(offline), NULL, NULL, 0, 0, 0, VLLM},
    {"enforce-eager", ML_IOPT_FLAG, FIELD(enforce_eager), NULL, NULL, 0, 0, DIAG, VLLM | SGL},
    {"mem-fraction-static", ML_IOPT_FRACTION, FIELD(mem_fraction_static_permille), NULL, NULL, 0, 0, FIT | DIAG, SGL},
    {"enable-lora", ML_IOPT_FLAG, FIELD(enable_lora), NULL, NULL, 0, 0, 0, VLLM},
    {"max-lora-rank", ML_IOPT_COUNT, FIELD(max_lora_rank), NULL, NULL, 1, 1u << 16, 0, VLLM},
    {"max-loras", ML_IOPT_COUNT, FIELD(max_loras), NULL, NULL, 1, 1024, 0, VLLM},
    {"vllm-version", ML_IOPT_VERSION, FIELD(vllm_version), NULL, NULL, 0, 0, FIT | DIAG, VLLM},
    {"transformers-version", ML_IOPT_VERSION, FIELD(transformers_version), NULL, NULL, 0, 0, 0, HF},
};

#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

const struct ml_infer_opt_def *ml_infer_opt_at(size_t i)
{
    return i < N_OPTS ? &opts[i] : NULL;
}

const struct ml_infer_opt_def *ml_infer_opt_find(const char *name)
{
    for (const struct ml_infer_opt_def *o = opts; o < opts + N_OPTS; o++)
        if (!strcmp(o->name, name))
            return o;
    return NULL;
}

bool ml_infer_opt_choice(const struct ml_infer_opt_def *o, const char *val, uint64_t *index)
{
    for (uint64_t i = 0; o->choices && o->choices[i]; i++)
        if (!strcmp(val, o->choices[i])) {
            *index = i;
            return true;
        }
    return false;
}

void ml_infer_opt_choices(const struct ml_infer_opt_def *o, char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; o->choices && o->choices[i] && k < n; i++)
        k += (size_t)snprintf(out + k, n - k, "%s%s", i ? ", " : "", o->choices[i]);
}

void ml_infer_opt_set(const struct ml_infer_opt_def *o, uint64_t v, struct ml_infer *s)
{
    char *field = (char *)s + o->offset;
    if (o->kind == ML_IOPT_CHOICE && o->values)
        v = o->values[v];
    if (o->size == sizeof(bool)) {
        bool b = true;
        memcpy(field, &b, sizeof(b));
    } else if (o->size == sizeof(uint32_t)) {
        uint32_t u = (uint32_t)v; /* an enum or a 32-bit count */
        memcpy(field, &u, sizeof(u));
    } else {
        memcpy(field, &v, sizeof(v));
    }
    if (o->offset == offsetof(struct ml_infer, tp))
        s->tp_set = true;
}

const enum ml_engine *ml_infer_flags_engine(const struct ml_infer_flag *f, uint32_t n, enum ml_engine *e)
{
    const enum ml_engine *given = NULL;
    for (uint32_t i = 0; i < n; i++)
        if (f[i].opt->offset == offsetof(struct ml_infer, engine)) {
            *e = (enum ml_engine)f[i].v;
            given = e;
        }
    return given;
}

/* The engines of mask as a list for a message ("vllm, sglang"). */
static void engine_list(unsigned mask, char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    for (unsigned e = 0; e < 3 && k < n; e++)
        if (mask & ML_IOPT_ENG(e))
            k += (size_t)snprintf(out + k, n - k, "%s%s", k ? ", " : "", ml_engine_name((enum ml_engine)e));
}

static unsigned opt_engines(const struct ml_infer_opt_def *o)
{
    return o->engines ? o->engines : ML_IOPT_ENG_HF | ML_IOPT_ENG_VLLM | ML_IOPT_ENG_SGLANG;
}

enum ml_status ml_infer_flags_engine_for(const struct ml_infer_flag *f, uint32_t n, bool fixed, enum ml_engine *engine,
                                         char *note, size_t cap, struct ml_diag *diag)
{
    note[0] = '\0';
    unsigned mask = ML_IOPT_ENG_HF | ML_IOPT_ENG_VLLM | ML_IOPT_ENG_SGLANG;
    const struct ml_infer_opt_def *first_off = NULL, *chooser = NULL;
    char list[48];
    for (uint32_t i = 0; i < n; i++) {
        unsigned m = opt_engines(f[i].opt);
        if (!(m & ML_IOPT_ENG(*engine)) && !first_off)
            first_off = f[i].opt;
        if (!(mask & m)) {
            char l1[48];
            engine_list(m, list, sizeof(list));
            engine_list(mask, l1, sizeof(l1));
            return ml_diag_set(diag, ML_ERR_INVALID,
                               _("--%s (read by %s) and the other serving options given (read by %s) belong to "
                                 "different engines: give --engine"),
                               f[i].opt->name, list, l1);
        }
        if ((mask & m) != mask && !chooser)
            chooser = f[i].opt;
        mask &= m;
    }
    if (!first_off)
        return ML_OK;
    unsigned om = opt_engines(first_off);
    engine_list(om, list, sizeof(list));
    if (fixed)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("--%s is read by %s, not by the %s engine: give --engine %s or drop it"), first_off->name,
                           list, ml_engine_name(*engine),
                           ml_engine_name((om & ML_IOPT_ENG_VLLM)     ? ML_ENGINE_VLLM
                                          : (om & ML_IOPT_ENG_SGLANG) ? ML_ENGINE_SGLANG
                                                                      : ML_ENGINE_HF));
    enum ml_engine was = *engine;
    *engine = (mask & ML_IOPT_ENG_VLLM)     ? ML_ENGINE_VLLM
              : (mask & ML_IOPT_ENG_SGLANG) ? ML_ENGINE_SGLANG
                                            : ML_ENGINE_HF;
    (void)snprintf(note, cap, _("--%s is read by %s, not by the %s engine: the ledger is --engine %s's"),
                   (chooser ? chooser : first_off)->name, list, ml_engine_name(was), ml_engine_name(*engine));
    return ML_OK;
}
