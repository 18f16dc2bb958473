/*
 * settings.c - the run a diagnosis prices, from the flags and the log (see oom_settings.h).
 *
 * Moved out of src/cmd_diagnose.c unchanged: the command keeps the options, the files and the
 * error messages; the mapping from what the log says to the settings of the ledgers is here.
 */
#include "memledger/oom_settings.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "memledger/units.h"

void ml_diag_serve_given(struct ml_diag_serve_flags *f, const char *name)
{
#define G(opt, field)                                                                                                  \
    {                                                                                                                  \
        opt, offsetof(struct ml_diag_serve_flags, field)                                                               \
    }
    static const struct {
        const char *opt;
        size_t off;
    } given[] = {G("engine", engine),
                 G("gpu-memory-utilization", util),
                 G("max-model-len", max_model_len),
                 G("vllm-version", vllm_version),
                 G("tp", tp),
                 G("dtype", dtype),
                 G("quant", quant),
                 G("kv-dtype", kv_dtype)};
#undef G
    for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++)
        if (!strcmp(name, given[i].opt))
            *(bool *)((char *)f + given[i].off) = true;
}

bool ml_diag_serving_incident(const struct ml_incident *inc)
{
    int32_t p = ml_diagnose_primary(inc);
    if (p < 0)
        return false;
    const struct ml_oom_event *e = &inc->ev[p];
    if (ml_oom_kind_serving(e->kind) || e->phase == ML_OPH_SERVING_STARTUP || e->phase == ML_OPH_SERVING_RUNTIME)
        return true;
    return (inc->saw_vllm || inc->saw_sglang) && !inc->saw_deepspeed && !inc->saw_fsdp && !inc->saw_rl &&
           e->phase != ML_OPH_BACKWARD && e->phase != ML_OPH_OPTIMIZER_STEP && e->phase != ML_OPH_LOSS;
}

bool ml_diag_gpu_from_log(const struct ml_incident *inc, bool serving, struct ml_gpu *g)
{
    memset(g, 0, sizeof(*g));
    int32_t p = ml_diagnose_primary(inc);
    const struct ml_oom_event *e = p >= 0 ? &inc->ev[p] : NULL;
    uint64_t total = e && (e->has & ML_OOM_F_TOTAL) ? e->total : 0;
    if (!total && serving && inc->has_profile)
        total = inc->prof_total;
    if (!e || total == 0)
        return false;
    ml_fmt_gib_s(g->name, sizeof(g->name), total);
    g->capacity_bytes = total;
    g->nominal_bytes = total;
    g->capacity_measured = true;
    g->vendor = e->device == ML_DEV_HIP    ? ML_VENDOR_AMD
                : e->device == ML_DEV_NPU  ? ML_VENDOR_HUAWEI
                : e->device == ML_DEV_XPU  ? ML_VENDOR_INTEL
                : e->device == ML_DEV_CUDA ? ML_VENDOR_NVIDIA
                                           : ML_VENDOR_UNKNOWN;
    return true;
}

/* vLLM's engine line (struct ml_oom_engine): what the engine ran with, for the settings no flag
 * gave. Names it prints that infer does not model (a quantization method it does not know) are
 * left at infer's defaults. */
static void serving_from_engine_line(const struct ml_diag_serve_flags *f, const struct ml_oom_engine *g,
                                     struct ml_infer *s)
{
    if (!g->seen)
        return;
    if (g->max_seq_len && !f->max_model_len)
        s->max_model_len = g->max_seq_len;
    if (g->tp && !f->tp)
        s->tp = g->tp;
    if (g->pp)
        s->pp = g->pp;
    if (!f->dtype) {
        if (!strcmp(g->dtype, "torch.bfloat16"))
            s->precision = ML_PREC_BF16;
        else if (!strcmp(g->dtype, "torch.float16"))
            s->precision = ML_PREC_FP16;
        else if (!strcmp(g->dtype, "torch.float32"))
            s->precision = ML_PREC_FP32;
    }
    if (!f->quant && g->quantization[0]) {
        /* vLLM method names (vllm/model_executor/layers/quantization): fp8, awq[_marlin], gptq[_marlin],
         * bitsandbytes (4-bit NF4 when the checkpoint says so; the common case). */
        static const struct {
            const char *prefix;
            enum ml_quant q;
        } qm[] = {{"None", ML_QUANT_NONE},
                  {"fp8", ML_QUANT_FP8},
                  {"awq", ML_QUANT_AWQ},
                  {"gptq", ML_QUANT_GPTQ},
                  {"bitsandbytes", ML_QUANT_NF4}};
        for (size_t i = 0; i < sizeof(qm) / sizeof(qm[0]); i++)
            if (!strncmp(g->quantization, qm[i].prefix, strlen(qm[i].prefix)))
                s->quant = qm[i].q;
    }
    if (!f->kv_dtype && !strncmp(g->kv_cache_dtype, "fp8", 3))
        s->kv_dtype = ML_KV_FP8;
    if (g->enforce_eager)
        s->enforce_eager = true;
}

void ml_diag_serving_settings(const struct ml_incident *inc, const struct ml_diag_serve_flags *f,
                              const struct ml_log_args *a, struct ml_infer *si)
{
    *si = f->si;
    const struct ml_oom_event *e = &inc->ev[ml_diagnose_primary(inc)];
    if (!f->engine)
        si->engine = inc->saw_sglang && !inc->saw_vllm ? ML_ENGINE_SGLANG : ML_ENGINE_VLLM;
    if (!f->max_model_len && (e->has & ML_OOM_F_MAX_SEQ_LEN) && e->max_seq_len)
        si->max_model_len = e->max_seq_len;
    if (!f->util) {
        if (inc->has_profile && inc->prof_util_permille)
            si->gpu_util_permille = inc->prof_util_permille;
        else if ((e->has & ML_OOM_F_UTIL) && e->util_permille)
            si->gpu_util_permille = e->util_permille;
    }
    /* the engine's own --dtype the log prints; its engine line, when it prints one, says the same */
    if (!f->dtype && a && a->dtype)
        si->precision = a->dtype == ML_ARGS_FP32   ? ML_PREC_FP32
                        : a->dtype == ML_ARGS_FP16 ? ML_PREC_FP16
                                                   : ML_PREC_BF16;
    serving_from_engine_line(f, &inc->engine, si);
    /* the engine's tensor parallelism its arguments print (SGLang's ServerArgs tp_size, a
     * Namespace's tensor_parallel_size) where no engine line gave it: the weights split over them */
    if (!f->tp && si->tp <= 1 && a && a->tp > 1)
        si->tp = a->tp;
    /* the engine's own flag in the log (vllm serve --max-model-len, SGLang --context-length)
     * over the model's context: the engine ran with it */
    if (!f->max_model_len && !si->max_model_len && a && a->max_model_len)
        si->max_model_len = a->max_model_len;
    if (!f->vllm_version)
        for (uint32_t i = 0; i < inc->n_versions; i++) {
            struct ml_diag d;
            ml_diag_init(&d);
            uint32_t v;
            if (!strcmp(inc->versions[i].name, "vllm") && ml_version_parse(inc->versions[i].value, &v, &d) == ML_OK)
                si->vllm_version = v;
        }
}

void ml_diag_cluster_size(const struct ml_incident *inc, uint64_t num_gpus, uint64_t nodes, struct ml_diag_run *r)
{
    r->cl.nodes = (uint32_t)(nodes ? nodes : 1);
    if (num_gpus) {
        r->cl.gpus_per_node = (uint32_t)num_gpus;
        return;
    }
    r->cl.gpus_per_node = 1;
    if (ml_diagnose_guess_world(inc, &r->m.arch, &r->inv, &r->t, &r->cl))
        r->world_guessed = true;
    if (nodes) {
        uint32_t per = r->cl.gpus_per_node / (uint32_t)nodes;
        r->cl.gpus_per_node = per ? per : 1;
        r->cl.nodes = (uint32_t)nodes;
    }
}

void ml_diag_setup_of(const struct ml_diag_run *r, struct ml_diag_setup *su)
{
    memset(su, 0, sizeof(*su));
    if (r->have) {
        su->arch = &r->m.arch;
        su->inv = &r->inv;
        su->params = r->inv.total_params;
        if (r->serving)
            su->serve = &r->si;
        else
            su->train = &r->t;
        if (r->have_cluster)
            su->cluster = &r->cl;
        su->world_guessed = r->world_guessed;
        su->capacity_from_log = r->capacity_from_log;
    }
    su->save_steps = r->t.save_steps;
    su->eval_steps = r->t.eval_steps;
    su->config_name = r->config_name[0] ? r->config_name : NULL;
    su->ds_name = r->ds_name[0] ? r->ds_name : NULL;
    /* (an SDPA call, a quantized model after "vllm serve" and a ROCm arch are read, not settings) */
    const struct ml_log_args *a = &r->args;
    su->args = a->n_read || a->trainer_files || a->engine_files || (a->runs & ML_RUN_TRAINING) ||
                       a->attn_efficient != -1 || a->quantized != -1 || a->rocm_fp8 != -1
                   ? a
                   : NULL;
}

const char *ml_diag_log_model(const struct ml_incident *inc, const struct ml_diag_run *r, bool config)
{
    if (r->have || config || !inc->engine.seen || !inc->engine.model[0] || !ml_diag_serving_incident(inc))
        return NULL;
    return inc->engine.model;
}

enum ml_status ml_diag_run_model(struct ml_diag_run *r, struct ml_diag *d)
{
    if (ml_inventory_build(&r->m.arch, &r->inv, d) != ML_OK) {
        ml_diag_at(d, r->m.source, 0, 0);
        return d->code;
    }
    r->have = true;
    return ML_OK;
}

enum ml_status ml_diag_run_resolve(struct ml_diag_run *r, const char *model, const struct ml_diag_io *io,
                                   struct ml_diag *d)
{
    if (io->resolve_model(model, &r->m, d) != ML_OK)
        return d->code;
    ml_diag_init(d);
    return ml_diag_run_model(r, d);
}

enum ml_status ml_diag_host_ram(const char *s, uint64_t *bytes, struct ml_diag *d)
{
    if (ml_size_parse(s, bytes, NULL, d) != ML_OK)
        ml_diag_at(d, "--host-ram", 0, 0);
    return d->code;
}

/* --gpu NAME through io; errors name "--gpu". */
static enum ml_status flag_gpu(const char *name, const struct ml_diag_io *io, struct ml_gpu *g, struct ml_diag *d)
{
    if (io->resolve_gpu(name, g, d) != ML_OK)
        ml_diag_at(d, "--gpu", 0, 0);
    return d->code;
}

enum ml_status ml_diag_check_flags(const struct ml_diag_run_flags *f, const struct ml_diag_io *io,
                                   const struct ml_diag_run *r, bool *usage, struct ml_diag *d)
{
    struct ml_gpu g;
    uint64_t v;
    *usage = false;
    if (f->gpu && !r->have && flag_gpu(f->gpu, io, &g, d) != ML_OK)
        return d->code;
    if (f->host_ram && !r->have && ml_diag_host_ram(f->host_ram, &v, d) != ML_OK)
        *usage = true;
    return d->code;
}

/* A serving engine: the flags, else what the log says, on tp x pp cards. Settings the ledger
 * refuses (a tp that does not divide the heads, ...) would price nothing: an error, as infer's. */
static enum ml_status settle_serving(const struct ml_incident *inc, const struct ml_diag_run_flags *f,
                                     struct ml_diag_run *r, struct ml_ledger *scratch, struct ml_diag *d)
{
    r->serving = true;
    ml_diag_serving_settings(inc, f->serve, &r->args, &r->si);
    ml_infer_gpus(&r->cl, 0, &r->si);
    r->have_cluster = r->cl.gpu.capacity_bytes > 0;
    struct ml_serve sv;
    if (r->have_cluster && ml_ledger_infer(&r->m.arch, &r->inv, &r->si, &r->cl, scratch, &sv, d) != ML_OK)
        d->origin[0] = '\0';
    return d->code;
}

/* The card (f->gpu, else the log's) and the settings of the serving engine or the training run. */
static enum ml_status settle_cluster(const struct ml_incident *inc, const struct ml_diag_run_flags *f,
                                     const struct ml_diag_io *io, struct ml_diag_run *r, struct ml_ledger *scratch,
                                     bool *usage, struct ml_diag *d)
{
    bool serving = !f->config && (f->serve_opts || ml_diag_serving_incident(inc));
    memset(&r->cl, 0, sizeof(r->cl));
    if (f->gpu && flag_gpu(f->gpu, io, &r->cl.gpu, d) != ML_OK)
        return d->code;
    if (!f->gpu)
        r->capacity_from_log = ml_diag_gpu_from_log(inc, serving, &r->cl.gpu);
    if (serving) {
        *usage = settle_serving(inc, f, r, scratch, d) != ML_OK;
        return d->code;
    }
    if (r->cl.gpu.capacity_bytes == 0)
        return ML_OK; /* no capacity: no ledger */
    if (f->host_ram && ml_diag_host_ram(f->host_ram, &r->cl.host_ram_bytes, d) != ML_OK) {
        *usage = true;
        return d->code;
    }
    ml_diag_cluster_size(inc, f->num_gpus, f->nodes, r);
    /* Contradictory settings would make every price wrong: an error, price nothing. */
    struct ml_train tc = r->t;
    if (ml_train_check(&tc, &r->m.arch, &r->cl, d) != ML_OK)
        return d->code;
    r->have_cluster = true;
    return ML_OK;
}

enum ml_status ml_diag_run_settle(const struct ml_incident *inc, const struct ml_diag_run_flags *f,
                                  const struct ml_diag_io *io, struct ml_diag_run *r, struct ml_ledger *scratch,
                                  bool *usage, struct ml_diag *d)
{
    *usage = false;
    const char *log_model = ml_diag_log_model(inc, r, f->config);
    struct ml_diag quiet; /* a model the log names but this build cannot price: the log alone */
    ml_diag_init(&quiet);
    if (log_model && ml_diag_run_resolve(r, log_model, io, &quiet) == ML_OK) {
        ml_train_defaults(&r->t, f->fw);
        r->model_from_log = true;
    }
    return r->have ? settle_cluster(inc, f, io, r, scratch, usage, d) : ML_OK;
}

void ml_diag_log_names(const char *const *paths, uint32_t n, const char **names)
{
    for (uint32_t i = 0; i < n; i++)
        names[i] = !strcmp(paths[i], "-") ? "<stdin>" : ml_path_base(paths[i]);
    if (n == 0)
        names[0] = "<stdin>";
}

enum ml_status ml_diag_run_diagnose(const struct ml_incident *inc, const struct ml_diag_run *r, struct ml_diagnosis *dg,
                                    struct ml_diag *d)
{
    struct ml_diag_setup su;
    ml_diag_setup_of(r, &su);
    return ml_diagnose(inc, &su, dg, d);
}

void ml_diag_run_files(struct ml_diag_run *r, const char *config, const char *ds_path)
{
    (void)snprintf(r->config_name, sizeof(r->config_name), "%s", config ? ml_path_base(config) : "");
    (void)snprintf(r->ds_name, sizeof(r->ds_name), "%s", ds_path ? ml_path_base(ds_path) : "");
}
