/*
 * runs.c - advice that fits the run (issue 24): the kinds of run the log shows, the fixes
 * already in effect, and the fixes kept.
 */
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
    uint32_t r = 0;
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

/* Is the fix already in effect in the run the log shows? */
static bool in_effect(const struct ctx *x, enum ml_fix_kind k)
{
    const struct ml_incident *inc = x->inc;
    const struct ml_oom_event *e = x->e;
    switch (k) {
    case ML_FIX_ZERO3:
        return inc->saw_zero3 || (x->su->train && x->su->train->deepspeed && x->su->train->zero.stage == 3);
    case ML_FIX_GRAD_CKPT: return inc->saw_grad_ckpt || e->ckpt_frames;
    case ML_FIX_ALLOC_EXPANDABLE: return inc->saw_expandable;
    case ML_FIX_LORA: return inc->saw_lora && !(x->su->train && x->su->train->method == ML_METHOD_FULL);
    case ML_FIX_ENFORCE_EAGER: return inc->engine.enforce_eager;
    case ML_FIX_KV_FP8: return !strncmp(inc->engine.kv_cache_dtype, "fp8", 3);
    case ML_FIX_ATTN:
        /* failing inside SDPA or flash attention: the kernel is already the efficient one */
        return !e->eager_frames &&
               (strstr(e->phase_cue, "scaled_dot_product") || strstr(e->phase_cue, "flash_attn") ||
                strstr(e->phase_ref.text, "scaled_dot_product_attention") || strstr(e->phase_ref.text, "flash_attn"));
    default: return false;
    }
}

/* Advice that fits the run (issue 24): a fix is kept only when it applies to the kinds of run the
 * log shows and is not already in effect. */
void ml_dg_fit_fixes_to_run(struct ctx *x)
{
    uint32_t runs = run_kinds(x);
    struct ml_diagnosis *o = x->out;
    if (!runs) {
        /* the log shows no kind of run: the fixes that fit any run; a trainer's own need its
         * evidence (its config, its steps or frames) */
        runs = ML_RUN_ANY & ~ML_RUN_TRAINING;
        ml_dg_check(x, _("the log does not show what kind of run failed: the fixes that need a trainer (ZeRO-3, an "
                         "8-bit optimizer, gradient checkpointing) are left out; give --config, or paste the trainer's "
                         "log"));
    }
    for (uint32_t i = 0; i < o->n_findings; i++) {
        struct ml_finding *f = &o->f[i];
        uint32_t n = 0;
        for (uint32_t j = 0; j < f->n_fix; j++)
            if ((ml_fix_runs(f->fix[j].kind) & runs) && !in_effect(x, f->fix[j].kind))
                f->fix[n++] = f->fix[j];
        f->n_fix = n;
    }
}
