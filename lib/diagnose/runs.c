/*
 * runs.c - advice that fits the run (issue 24): the kinds of run the log shows, the fixes
 * already in effect, and the fixes kept.
 */
#include <stdio.h>
#include <string.h>

#include "diag_int.h"
#include "i18n.h"

/* The kinds of run this log (and setup) shows (ML_RUN_* bits; ML_RUN_ANY when it shows none). */
static uint32_t run_kinds(const struct ctx *x)
{
    const struct ml_incident *inc = x->inc;
    const struct ml_oom_event *e = x->e;
    bool engine = e->kind == ML_OOM_GGML || x->engine || x->su->serve || inc->saw_vllm || inc->saw_sglang ||
                  inc->saw_tgi || inc->saw_engine_proc || e->episode || ml_oom_kind_serving(e->kind) ||
                  e->phase == ML_OPH_SERVING_STARTUP || e->phase == ML_OPH_SERVING_RUNTIME;
    bool trainer = false; /* a trainer's version in the log (trl, peft, deepspeed) */
    for (uint32_t i = 0; i < inc->n_versions; i++)
        trainer |= !strcmp(inc->versions[i].name, "trl") || !strcmp(inc->versions[i].name, "peft") ||
                   !strcmp(inc->versions[i].name, "deepspeed");
    bool trains =
        x->su->train || trainer || inc->saw_train_args || inc->saw_deepspeed || inc->saw_fsdp || inc->saw_rl ||
        inc->saw_dpo || e->phase == ML_OPH_BACKWARD || e->phase == ML_OPH_OPTIMIZER_STEP || e->phase == ML_OPH_LOSS ||
        e->phase == ML_OPH_CHECKPOINT_SAVE || e->phase == ML_OPH_AFTER_SAVE || e->in_save_frames || e->ckpt_frames ||
        (!engine && (inc->saw_lora || inc->saw_grad_ckpt || x->training || (e->step >= 0 && e->timing != ML_TIM_LOAD)));
    uint32_t r = x->su->args ? x->su->args->runs : 0; /* what the printed settings name */
    if (trains)
        r |= ML_RUN_TRAINING;
    if (engine)
        r |= ML_RUN_SERVING;
    if (!engine && (e->phase == ML_OPH_GENERATE || inc->gen_context))
        r |= ML_RUN_OFFLINE;
    if (inc->saw_diffusion)
        r |= ML_RUN_DIFFUSION;
    return r;
}

/* Frames only ZeRO-3 runs (DeepSpeed runtime/zero/partitioned_param_coordinator.py fetches each
 * submodule's partitioned parameters; stage3.py's fp32 sub-groups, its 16-bit gather at save):
 * the run is on ZeRO-3. (The flag zero3_frames also marks stage_1_and_2.py.) */
static bool zero3_only_frames(const struct ml_oom_event *e)
{
    static const char *const cues[] = {"fetch_sub_module",
                                       "pre_sub_module_forward",
                                       "partitioned_param_coordinator",
                                       "_prepare_fp32_grad_for_sub_group",
                                       "_zero3_consolidated",
                                       "partition_parameters.py"};
    for (size_t i = 0; i < sizeof(cues) / sizeof(cues[0]); i++)
        if (strstr(e->phase_cue, cues[i]) || strstr(e->phase_ref.text, cues[i]))
            return true;
    return false;
}

/* Is the fix already in effect in the run the log shows (its lines, its frames, the settings it
 * prints) or the setup describes (--config, --set, --framework: the run's settings as the ledger
 * prices them)? */
static bool in_effect(const struct ctx *x, enum ml_fix_kind k)
{
    static const struct ml_log_args none = {
        .grad_ckpt = -1, .optim_8bit = -1, .liger = -1, .attn_efficient = -1, .full_shard = -1, .enforce_eager = -1};
    const struct ml_incident *inc = x->inc;
    const struct ml_oom_event *e = x->e;
    const struct ml_log_args *a = x->su->args ? x->su->args : &none;
    const struct ml_train *t = x->su->train;
    switch (k) {
    case ML_FIX_ZERO3:
        return inc->saw_zero3 || zero3_only_frames(e) || (t && t->deepspeed && t->zero.stage == 3) ||
               (t && t->fsdp == ML_FSDP_FULL_SHARD) || a->full_shard == 1 ||
               /* torchtune has no DeepSpeed; its distributed recipes shard with FSDP2 full_shard
                * (training/_distributed.py shard_model; lib/setup/train_check.c), a single GPU
                * has nothing to shard over */
               (t && t->framework == ML_FW_TORCHTUNE);
    case ML_FIX_GRAD_CKPT:
        return inc->saw_grad_ckpt || e->ckpt_frames || a->grad_ckpt == 1 || (t && t->grad_ckpt != ML_GC_OFF);
    case ML_FIX_ALLOC_EXPANDABLE: return inc->saw_expandable;
    case ML_FIX_LORA: return inc->saw_lora && !(t && t->method == ML_METHOD_FULL);
    case ML_FIX_ENFORCE_EAGER: return inc->engine.enforce_eager || a->enforce_eager == 1;
    case ML_FIX_KV_FP8: return !strncmp(inc->engine.kv_cache_dtype, "fp8", 3);
    case ML_FIX_OPTIM_8BIT:
        return a->optim_8bit == 1 || (t && (t->optim == ML_OPTIM_ADAMW_8BIT || t->optim == ML_OPTIM_PAGED_ADAMW_8BIT));
    case ML_FIX_CHUNKED_LOSS: return a->liger == 1 || (t && t->liger_kernel);
    case ML_FIX_BATCH: return a->batch_named && a->batch == 1 && !(t && t->micro_batch > 1); /* nothing to halve */
    case ML_FIX_GGML_KV:
        /* the KV cache is already q8_0 or narrower: the fix's q8_0 saves nothing (from q4_0 it
         * doubles the cache) */
        return a->kv_bits && a->kv_bits <= 8;
    case ML_FIX_ATTN:
        /* failing inside SDPA or flash attention, or the settings name them: the kernel is already
         * the efficient one */
        return !e->eager_frames &&
               (strstr(e->phase_cue, "scaled_dot_product") || strstr(e->phase_cue, "flash_attn") ||
                strstr(e->phase_ref.text, "scaled_dot_product_attention") || strstr(e->phase_ref.text, "flash_attn") ||
                a->attn_efficient == 1 || (t && t->attn != ML_ATTN_EAGER));
    default: return false;
    }
}

/* Why fp8 weights cannot help this run, NULL when they may: the weights are quantized already
 * (4-bit is smaller than fp8; fp8 or int8 saves nothing), or the device has no fp8 in vLLM (vllm
 * platforms/rocm.py supports_fp8: gfx94x, gfx95x and gfx12xx only; Ascend NPUs). */
static const char *fp8_unusable(const struct ctx *x)
{
    const struct ml_log_args *a = x->su->args;
    if (a && a->quantized == 1)
        return _("the log's model or --quantization is quantized already");
    if (x->e->device == ML_DEV_NPU)
        return _("vLLM has no fp8 weights on Ascend NPUs");
    if (x->e->device == ML_DEV_HIP && !(a && a->rocm_fp8 == 1))
        return a && a->rocm_fp8 == 0
                   ? _("the log's ROCm arch has no fp8 in vLLM (gfx94x, gfx95x and gfx12xx only)")
                   : _("vLLM has fp8 on ROCm only on gfx94x, gfx95x and gfx12xx, and the log names none");
    return NULL;
}

/* Why a fix cannot run on the event's device, NULL when it can. Apple MPS: DeepSpeed's MPS
 * accelerator has no communication backend, one device and no op builders (DeepSpeed
 * accelerator/mps_accelerator.py: communication_backend_name None, device_count 1, get_op_builder
 * NotImplementedBuilder, so no CPU Adam for offload_optimizer), and sharding over one device
 * saves nothing: ZeRO, FSDP and DeepSpeed's CPU offload are left out. */
static const char *device_unusable(const struct ctx *x, enum ml_fix_kind k)
{
    if (x->e->device == ML_DEV_MPS && (k == ML_FIX_ZERO3 || k == ML_FIX_OFFLOAD_OPT || k == ML_FIX_OFFLOAD_ALL))
        return _("ZeRO, FSDP and DeepSpeed's CPU offload do not run on one Apple MPS device (DeepSpeed's MPS "
                 "accelerator has no communication backend and no CPU Adam)");
    return NULL;
}

/* The dialect the fixes are written in: the trainer the setup names (--framework, --set trainer,
 * --config), else the one whose files the log's frames show, else for a run that shows no
 * training the serving engine's own flags when the log names SGLang or TGI alone (vLLM's
 * otherwise) and an inference script's keywords, else unknown (LLaMA-Factory's and
 * TrainingArguments' both). */
static enum ml_dialect run_dialect(const struct ctx *x, uint32_t runs)
{
    const struct ml_train *t = x->su->train;
    const struct ml_log_args *a = x->su->args;
    if (t && (x->su->config_name || t->framework != ML_FW_LLAMAFACTORY || t->trainer != ML_TRAINER_HF))
        return ml_train_dialect(t);
    if (a && a->trainer_files)
        return (enum ml_dialect)(a->trainer_files - 1);
    /* the engine whose server the log shows, when it shows one alone; else the one it names */
    uint32_t eng = a ? a->engine_files : 0;
    if (!(runs & ML_RUN_TRAINING) && (eng == ML_RT_TGI || (!eng && ml_incident_tgi_only(x->inc))))
        return ML_DIALECT_TGI;
    if (!(runs & ML_RUN_TRAINING) && (eng == ML_RT_SGLANG || (!eng && x->inc->saw_sglang && !x->inc->saw_vllm)))
        return ML_DIALECT_SGLANG;
    if (!(runs & ML_RUN_TRAINING))
        return ML_DIALECT_INFER;
    return x->dialect;
}

uint32_t ml_fix_runs(enum ml_fix_kind k)
{
    const struct ml_fix_row *r = ml_fix_row(k);
    return r ? r->runs : 0;
}

static bool has_version(const struct ml_incident *inc, const char *name)
{
    for (uint32_t i = 0; i < inc->n_versions; i++)
        if (!strcmp(inc->versions[i].name, name))
            return true;
    return false;
}

/* The runtimes this log (and setup) shows (ML_RT_* bits; 0 when it shows none): a serving
 * engine's own lines or messages, llama.cpp's buffers, DeepSpeed's and FSDP's lines, the
 * trainer's printed arguments, the configs given. A trainer runs on PyTorch, so a fix written
 * for plain PyTorch fits it too. */
static uint32_t run_runtimes(const struct ctx *x, uint32_t runs)
{
    const struct ml_incident *inc = x->inc;
    const struct ml_train *t = x->su->train;
    uint32_t r = 0;
    for (uint32_t i = 0; i < inc->n_events; i++)
        if (inc->ev[i].kind == ML_OOM_GGML)
            r |= ML_RT_GGML;
    if (inc->saw_vllm || (x->su->serve && x->su->serve->engine == ML_ENGINE_VLLM))
        r |= ML_RT_VLLM;
    if (inc->saw_sglang || (x->su->serve && x->su->serve->engine == ML_ENGINE_SGLANG))
        r |= ML_RT_SGLANG;
    if (inc->saw_tgi)
        r |= ML_RT_TGI;
    const struct ml_log_args *a = x->su->args;
    if (a)
        r |= a->runtimes & ~(uint32_t)(ML_RT_DEEPSPEED | ML_RT_ACCELERATE | ML_RT_LLAMAFACTORY | ML_RT_HF_TRAINER);
    if (!(runs & ML_RUN_TRAINING))
        return r;
    uint32_t tr = a ? a->runtimes & (ML_RT_DEEPSPEED | ML_RT_ACCELERATE | ML_RT_LLAMAFACTORY | ML_RT_HF_TRAINER) : 0;
    if (inc->saw_deepspeed || inc->saw_zero3 || (t && t->deepspeed))
        tr |= ML_RT_DEEPSPEED;
    if (inc->saw_fsdp || has_version(inc, "accelerate"))
        tr |= ML_RT_ACCELERATE;
    if (has_version(inc, "llamafactory") || (t && t->framework == ML_FW_LLAMAFACTORY && x->su->config_name))
        tr |= ML_RT_LLAMAFACTORY | ML_RT_HF_TRAINER;
    if (inc->saw_train_args || has_version(inc, "transformers") || has_version(inc, "trl") ||
        (t && (t->framework == ML_FW_HF || t->framework == ML_FW_TRL)))
        tr |= ML_RT_HF_TRAINER;
    return tr ? r | tr | ML_RT_TORCH : r;
}

/* The failing phase as the fix rows name it (ML_FPH_*; 0 when the log does not say). */
static uint32_t failing_phase(const struct ml_oom_event *e)
{
    static const uint32_t ph[ML_OPH_COUNT] = {
        [ML_OPH_LOAD] = ML_FPH_LOAD,
        [ML_OPH_FORWARD] = ML_FPH_FORWARD,
        [ML_OPH_LOSS] = ML_FPH_LOSS,
        [ML_OPH_BACKWARD] = ML_FPH_BACKWARD,
        [ML_OPH_OPTIMIZER_STEP] = ML_FPH_OPTIMIZER,
        [ML_OPH_CHECKPOINT_SAVE] = ML_FPH_SAVE,
        [ML_OPH_AFTER_SAVE] = ML_FPH_SAVE,
        [ML_OPH_EVAL] = ML_FPH_EVAL,
        [ML_OPH_GENERATE] = ML_FPH_GENERATE,
        [ML_OPH_SERVING_STARTUP] = ML_FPH_SERVE_START,
        [ML_OPH_SERVING_RUNTIME] = ML_FPH_SERVE_RUN,
        [ML_OPH_COMMUNICATION] = ML_FPH_COMM,
    };
    if (e->timing == ML_TIM_AFTER_SAVE || e->timing == ML_TIM_AT_SAVE)
        return ML_FPH_SAVE;
    return (unsigned)e->phase < ML_OPH_COUNT ? ph[e->phase] : 0;
}

/* Whether fix kind k fits the run: its row applies to one of the run's kinds, and to one of its
 * runtimes when the log shows any (a vLLM flag is no fix for a TGI server, a DeepSpeed key none
 * for a run without DeepSpeed). */
static bool fits_run(enum ml_fix_kind k, uint32_t runs, uint32_t runtimes)
{
    const struct ml_fix_row *r = ml_fix_row(k);
    return r && (r->runs & runs) && (!runtimes || (r->runtimes & runtimes));
}

/* Advice that fits the run (issue 24): a fix is kept only when it applies to the kinds of run
 * and the runtimes the log shows and is not already in effect; those for the failing phase are
 * listed first (ml_diagnosis_fixes). */
void ml_dg_fit_fixes_to_run(struct ctx *x)
{
    uint32_t runs = run_kinds(x);
    struct ml_diagnosis *o = x->out;
    o->runs = runs;
    if (!runs) {
        /* the log shows no kind of run: the fixes that fit any run; a trainer's own need its
         * evidence (its config, its steps or frames) */
        runs = ML_RUN_ANY & ~ML_RUN_TRAINING;
        ml_dg_check(x, _("the log does not show what kind of run failed: the fixes that need a trainer (ZeRO-3, an "
                         "8-bit optimizer, gradient checkpointing) are left out; give --config, or paste the "
                         "trainer's log"));
    }
    x->dialect = run_dialect(x, runs);
    uint32_t runtimes = run_runtimes(x, runs), phase = failing_phase(x->e), dropped = 0, no_flag = 0;
    bool engine_dialect = x->dialect == ML_DIALECT_SGLANG || x->dialect == ML_DIALECT_TGI;
    const char *fp8_why = NULL, *dev_why = NULL;
    for (uint32_t i = 0; i < o->n_findings; i++) {
        struct ml_finding *f = &o->f[i];
        uint32_t n = 0;
        for (uint32_t j = 0; j < f->n_fix; j++) {
            struct ml_fix *k = &f->fix[j];
            if (!fits_run(k->kind, runs, runtimes) || in_effect(x, k->kind))
                continue;
            const char *why = k->knob == ML_KNOB_FP8_WEIGHTS ? fp8_unusable(x) : NULL;
            if (why) {
                fp8_why = why;
                continue;
            }
            if ((why = device_unusable(x, k->kind)) != NULL) {
                dev_why = why;
                continue;
            }
            if ((x->dialect == ML_DIALECT_INFER || engine_dialect) && k->knob != ML_KNOB_NONE &&
                !ml_knob_has_key(k->knob, x->dialect)) {
                /* a trainer's key (per_device_train_batch_size) for a run without one, or an
                 * engine setting the log's engine has no flag for (SGLang's gpu_memory_utilization) */
                if (ml_knob_get(k->knob)->flags & ML_KNOB_TRAIN)
                    dropped++;
                else
                    no_flag++;
                continue;
            }
            k->off_phase = phase && !(ml_fix_row(k->kind)->phases & phase);
            f->fix[n++] = *k;
        }
        f->n_fix = n;
    }
    if (dropped)
        ml_dg_check(x, _("left out: %u fix(es) written as a trainer's settings (this run does not show a trainer)"),
                    dropped);
    if (no_flag)
        ml_dg_check(x, _("left out: %u fix(es) %s has no flag for"), no_flag, ml_dialect_name(x->dialect));
    if (fp8_why)
        ml_dg_check(x, _("fp8 weights are left out: %s"), fp8_why);
    if (dev_why)
        ml_dg_check(x, _("left out: %s"), dev_why);
}

void ml_dg_unwritable(struct ctx *x)
{
    enum ml_dialect d = x->dialect;
    /* more GPUs: a serving engine's run splits the model with its tensor parallelism, in its own
     * flag (vLLM --tensor-parallel-size, SGLang --tp-size, TGI --num-shard); other runs add GPUs */
    bool engine = (x->out->runs & ML_RUN_SERVING) && !(x->out->runs & ML_RUN_TRAINING) && x->e->kind != ML_OOM_GGML;
    for (uint32_t i = 0; i < x->out->n_findings; i++)
        for (uint32_t j = 0; j < x->out->f[i].n_fix; j++) {
            struct ml_fix *k = &x->out->f[i].fix[j];
            if (k->gpus_setting && engine)
                (void)snprintf(k->setting, sizeof(k->setting), _("%s / more GPUs"),
                               ml_setting_name(ML_SET_TP, ml_engine_dialect(d)));
        }
    if (d == ML_DIALECT_COUNT)
        return;
    for (uint32_t i = 0; i < x->out->n_findings; i++)
        for (uint32_t j = 0; j < x->out->f[i].n_fix; j++) {
            struct ml_fix *k = &x->out->f[i].fix[j];
            if (k->kind == ML_FIX_NO_FP32 && d != ML_DIALECT_LF && strstr(k->setting, "upcast_lmhead_output"))
                (void)snprintf(k->setting, sizeof(k->setting), "%s", _("no .float() on logits")); /* LF's key */
            if (k->knob == ML_KNOB_NONE || ml_knob_has_key(k->knob, d))
                continue;
            k->setting[0] = '\0';
            ml_dg_fix_note(k, _("%s has no setting for this: change it in the run's own code"), ml_dialect_name(d));
        }
}

void ml_dg_drop_no_change(struct ctx *x)
{
    uint32_t dropped = 0;
    bool tp_same = false;
    for (uint32_t i = 0; i < x->out->n_findings; i++) {
        struct ml_finding *f = &x->out->f[i];
        uint32_t n = 0;
        for (uint32_t j = 0; j < f->n_fix; j++) {
            const struct ml_fix *k = &f->fix[j];
            /* priced by the inference ledger: no KV cache gained and still short */
            if (k->knob == ML_KNOB_CHUNKED_PREFILL && x->out->has_kv_log && !k->has_saves && k->fits == 0) {
                dropped++;
                continue;
            }
            /* priced on the engine's settings, twice a tensor parallelism the log already runs
             * with (or less) is no change */
            if (k->knob == ML_KNOB_TP_2 && x->has_serve_ledger && x->su->args && x->su->args->tp &&
                x->s0.tp * 2 <= x->su->args->tp) {
                tp_same = true;
                continue;
            }
            f->fix[n++] = *k;
        }
        f->n_fix = n;
    }
    if (dropped)
        ml_dg_check(x, _("chunked prefill is left out: the inference ledger gains no KV cache from it here"));
    if (tp_same)
        ml_dg_check(x,
                    _("twice the tensor parallelism given (%u) is left out: the log runs with %u already; give --tp "
                      "%u to price the next step"),
                    2 * x->s0.tp, x->su->args->tp, x->su->args->tp);
}
