/*
 * serve_args.c - a serving engine's settings as its flags and its Python keywords (serve_args.h).
 *
 * vLLM: `vllm serve MODEL` (vllm/entrypoints/cli/serve.py) takes EngineArgs' fields as
 * --kebab-case flags (vllm/engine/arg_utils.py, EngineArgs.add_cli_args); LLM(model=..., **kwargs)
 * (vllm/entrypoints/llm.py) passes its keywords to EngineArgs. SGLang: `python -m
 * sglang.launch_server --model-path MODEL` and sgl.Engine(model_path=..., **kwargs) both fill
 * ServerArgs (python/sglang/srt/server_args.py), each field the flag of its name. The flag names
 * are the knob table's dialect rows (lib/fit/knobs.c).
 */
#include "serve_args.h"

#include <stdio.h>
#include <string.h>

enum ml_dialect ml_serve_dialect(enum ml_engine e)
{
    return e == ML_ENGINE_SGLANG ? ML_DIALECT_SGLANG : ML_DIALECT_VLLM;
}

void ml_serve_py_name(enum ml_setting set, enum ml_dialect d, char *out, size_t n)
{
    const char *name = d == ML_DIALECT_SGLANG ? ml_setting_name(set, d) : ml_setting_name(set, ML_DIALECT_ENGINE);
    out[0] = '\0';
    if (!name || !n)
        return;
    size_t k = 0;
    for (const char *p = d == ML_DIALECT_SGLANG && !strncmp(name, "--", 2) ? name + 2 : name; *p && k + 1 < n; p++)
        out[k++] = *p == '-' ? '_' : *p;
    out[k] = '\0';
}

/* A share in permille as the engines take it: "0.95", "0.925", "1". */
static void share(char *buf, size_t n, uint32_t pm)
{
    if (pm % 1000 == 0)
        (void)snprintf(buf, n, "%u", pm / 1000);
    else if (pm % 10)
        (void)snprintf(buf, n, "%u.%03u", pm / 1000, pm % 1000);
    else if (pm % 100)
        (void)snprintf(buf, n, "%u.%02u", pm / 1000, pm % 1000 / 10);
    else
        (void)snprintf(buf, n, "%u.%u", pm / 1000, pm % 1000 / 100);
}

static void add(struct ml_serve_arg *out, uint32_t *n, enum ml_dialect d, enum ml_setting set, const char *value,
                bool text)
{
    const char *flag = ml_setting_name(set, d);
    if (!flag || *n >= ML_SERVE_MAX_ARGS)
        return;
    struct ml_serve_arg *a = &out[(*n)++];
    a->set = set;
    a->flag = flag;
    ml_serve_py_name(set, d, a->py, sizeof(a->py));
    (void)snprintf(a->value, sizeof(a->value), "%s", ml_setting_value(set, d, value));
    a->text = text;
}

uint32_t ml_serve_args(const struct ml_infer *s, struct ml_serve_arg *out)
{
    enum ml_dialect d = ml_serve_dialect(s->engine);
    uint32_t n = 0;
    char v[32];
    if (s->tp > 1) {
        (void)snprintf(v, sizeof(v), "%u", s->tp);
        add(out, &n, d, ML_SET_TP, v, false);
    }
    if (s->quant != ML_QUANT_NONE)
        add(out, &n, d, ML_SET_QUANTIZATION, ml_quant_name(s->quant), true);
    if (s->kv_dtype != ML_KV_AUTO)
        add(out, &n, d, ML_SET_KV_DTYPE,
            s->kv_dtype == ML_KV_FP8    ? "fp8"
            : s->kv_dtype == ML_KV_FP16 ? "fp16"
                                        : "bf16",
            true);
    if (s->engine == ML_ENGINE_VLLM && s->gpu_util_permille && s->gpu_util_permille != 900) {
        share(v, sizeof(v), s->gpu_util_permille); /* EngineArgs.gpu_memory_utilization = 0.9 */
        add(out, &n, d, ML_SET_GPU_UTIL, v, false);
    }
    if (s->engine == ML_ENGINE_SGLANG && s->mem_fraction_static_permille) {
        share(v, sizeof(v), s->mem_fraction_static_permille);
        add(out, &n, d, ML_SET_MEM_FRACTION, v, false);
    }
    const uint64_t counts[3] = {s->max_num_seqs, s->max_num_batched_tokens, s->max_model_len};
    const enum ml_setting sets[3] = {ML_SET_MAX_NUM_SEQS, ML_SET_MAX_BATCHED_TOKENS, ML_SET_MAX_MODEL_LEN};
    for (int i = 0; i < 3; i++) {
        if (!counts[i])
            continue;
        (void)snprintf(v, sizeof(v), "%llu", (unsigned long long)counts[i]);
        add(out, &n, d, sets[i], v, false);
    }
    return n;
}

const char *ml_serve_program(enum ml_engine e, bool python)
{
    if (e == ML_ENGINE_SGLANG)
        return python ? "sgl.Engine(model_path=" : "python -m sglang.launch_server --model-path";
    return python ? "LLM(model=" : "vllm serve";
}

void ml_serve_model_id(const char *arg, const char *hub_id, char *out, size_t n)
{
    const char *base = ml_path_base(arg);
    if (hub_id[0])
        (void)snprintf(out, n, "%s", hub_id);
    else if (!strcmp(base, "config.json")) /* its directory ("." for a bare "config.json") */
        (void)snprintf(out, n, "%.*s", base > arg ? (int)(base - arg - 1) : 1, base > arg ? arg : ".");
    else
        (void)snprintf(out, n, "%s", arg);
}
