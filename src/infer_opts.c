/*
 * infer_opts.c - the serving options of `memledger infer`, parsed in one place for every command
 * that takes them (infer, fit --serve, diagnose): ml_infer_option.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "i18n.h"
#include "memledger/infer.h"
#include "memledger/status.h"
#include "memledger/units.h"

/* The index of val in names, or a usage error. */
static bool pick(const char *cmd, const char *opt, const char *val, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(val, names[i])) {
            *out = i;
            return true;
        }
    char list[160] = "";
    size_t k = 0;
    for (int i = 0; i < n && k < sizeof(list); i++)
        k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s", i ? ", " : "", names[i]);
    ml_usage_error(cmd, _("%s: '%s' is not one of %s"), opt, val, list);
    return false;
}

enum ml_infer_opt ml_infer_option(const char *cmd, const char *name, const char *val, struct ml_infer *s)
{
    int x;
    uint64_t v;
    if (!strcmp(name, "engine")) {
        static const char *const e[] = {"hf", "vllm", "sglang"};
        if (!pick(cmd, "--engine", val, e, 3, &x))
            return ML_INFER_OPT_BAD;
        s->engine = (enum ml_engine)x;
    } else if (!strcmp(name, "dtype")) {
        static const char *const d[] = {"bf16", "fp16", "fp32"};
        static const enum ml_precision p[] = {ML_PREC_BF16, ML_PREC_FP16, ML_PREC_FP32};
        if (!pick(cmd, "--dtype", val, d, 3, &x))
            return ML_INFER_OPT_BAD;
        s->precision = p[x];
    } else if (!strcmp(name, "quant")) {
        static const char *const q[] = {"none", "int8", "nf4", "fp4", "gptq", "awq", "fp8", "int4"};
        if (!pick(cmd, "--quant", val, q, 8, &x))
            return ML_INFER_OPT_BAD;
        s->quant = (enum ml_quant)x;
    } else if (!strcmp(name, "group-size")) {
        if (!ml_opt_u64(cmd, "--group-size", val, 1, 1u << 20, &v))
            return ML_INFER_OPT_BAD;
        s->group_size = (uint32_t)v;
    } else if (!strcmp(name, "quant-bits")) {
        static const char *const b[] = {"2", "3", "4", "8"};
        if (!pick(cmd, "--quant-bits", val, b, 4, &x))
            return ML_INFER_OPT_BAD;
        s->quant_bits = (uint32_t)(val[0] - '0');
    } else if (!strcmp(name, "double-quant")) {
        s->double_quant = true;
    } else if (!strcmp(name, "dequantize")) {
        s->dequantize = true;
    } else if (!strcmp(name, "allow-long-max-model-len")) {
        s->allow_long = true;
    } else if (!strcmp(name, "kv-dtype")) {
        static const char *const k[] = {"auto", "fp16", "bf16", "fp8"};
        if (!pick(cmd, "--kv-dtype", val, k, 4, &x))
            return ML_INFER_OPT_BAD;
        s->kv_dtype = (enum ml_kv_dtype)x;
    } else if (!strcmp(name, "batch")) {
        if (!ml_opt_u64(cmd, "--batch", val, 1, 1u << 20, &s->batch))
            return ML_INFER_OPT_BAD;
    } else if (!strcmp(name, "context")) {
        if (!ml_opt_u64(cmd, "--context", val, 1, (uint64_t)1 << 32, &s->context))
            return ML_INFER_OPT_BAD;
    } else if (!strcmp(name, "prompt")) {
        if (!ml_opt_u64(cmd, "--prompt", val, 1, (uint64_t)1 << 32, &s->prompt))
            return ML_INFER_OPT_BAD;
    } else if (!strcmp(name, "static-cache")) {
        s->static_cache = true;
    } else if (!strcmp(name, "attn")) {
        static const char *const a[] = {"eager", "sdpa", "flash"};
        if (!pick(cmd, "--attn", val, a, 3, &x))
            return ML_INFER_OPT_BAD;
        s->attn = (enum ml_attn)x;
    } else if (!strcmp(name, "tp") || !strcmp(name, "pp")) {
        bool tp = name[0] == 't';
        if (!ml_opt_u64(cmd, tp ? "--tp" : "--pp", val, 1, 1024, &v))
            return ML_INFER_OPT_BAD;
        if (tp) {
            s->tp = (uint32_t)v;
            s->tp_set = true;
        } else {
            s->pp = (uint32_t)v;
        }
    } else if (!strcmp(name, "gpu-memory-utilization")) {
        if (!ml_opt_fraction(cmd, "--gpu-memory-utilization", val, &s->gpu_util_permille))
            return ML_INFER_OPT_BAD;
    } else if (!strcmp(name, "mem-fraction-static")) {
        if (!ml_opt_fraction(cmd, "--mem-fraction-static", val, &s->mem_fraction_static_permille))
            return ML_INFER_OPT_BAD;
    } else if (!strcmp(name, "max-model-len")) {
        if (!ml_opt_u64(cmd, "--max-model-len", val, 1, (uint64_t)1 << 32, &s->max_model_len))
            return ML_INFER_OPT_BAD;
    } else if (!strcmp(name, "max-num-seqs")) {
        if (!ml_opt_u64(cmd, "--max-num-seqs", val, 1, 1u << 20, &s->max_num_seqs))
            return ML_INFER_OPT_BAD;
    } else if (!strcmp(name, "max-num-batched-tokens")) {
        if (!ml_opt_u64(cmd, "--max-num-batched-tokens", val, 1, (uint64_t)1 << 32, &s->max_num_batched_tokens))
            return ML_INFER_OPT_BAD;
    } else if (!strcmp(name, "enable-lora")) {
        s->enable_lora = true;
    } else if (!strcmp(name, "max-lora-rank") || !strcmp(name, "max-loras")) {
        bool rank = !strcmp(name, "max-lora-rank");
        if (!ml_opt_u64(cmd, rank ? "--max-lora-rank" : "--max-loras", val, 1, rank ? 1u << 16 : 1024, &v))
            return ML_INFER_OPT_BAD;
        if (rank)
            s->max_lora_rank = (uint32_t)v;
        else
            s->max_loras = (uint32_t)v;
    } else if (!strcmp(name, "offline")) {
        s->offline = true;
    } else if (!strcmp(name, "enforce-eager")) {
        s->enforce_eager = true;
    } else if (!strcmp(name, "vllm-version") || !strcmp(name, "transformers-version")) {
        bool vllm = name[0] == 'v';
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_version_parse(val, vllm ? &s->vllm_version : &s->transformers_version, &d) != ML_OK) {
            ml_usage_error(cmd, "%s: %s", vllm ? "--vllm-version" : "--transformers-version", d.msg);
            return ML_INFER_OPT_BAD;
        }
    } else {
        return ML_INFER_OPT_OTHER;
    }
    return ML_INFER_OPT_OK;
}
