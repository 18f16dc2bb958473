/*
 * known_issues.c - regressions of the stack that turn a run that fit into an OOM (the field
 * guide's observation 10): rows of a library's version range, the events they explain, their
 * cause and the setting that avoids them; the rule that names them and the evidence they give.
 */
#include <stdio.h>
#include <string.h>

#include "diag_int.h"
#include "i18n.h"

/* Which events a known issue explains. */
enum { KI_TRAINING = 1, KI_SERVING_KV = 2, KI_XPU = 4, KI_NCCL = 8 };

/* Regressions of the stack that turn a run that fit into an OOM (the field guide's observation 10:
 * "known issue in X; upgrade or set Y" before bigger hardware). A library as the scanner names its
 * version line, the range [from, until) it holds for (until 0: not known to be fixed), the events
 * it explains, and the setting that avoids it. Each has its source; none is inferred here. */
static const struct known_issue {
    const char *lib;
    uint32_t from, until;
    uint32_t when;
    enum ml_cause cause;
    const char *what;
    enum ml_fix_kind fix;
    enum ml_knob_id knob; /* the knob that avoids it (written in `dialect`), or ML_KNOB_NONE and: */
    enum ml_dialect dialect;
    const char *action, *setting;
} known_issues[] = {
    {"trl", ML_VER(0, 7, 2), ML_VER(0, 8, 0), KI_TRAINING, ML_CAUSE_NO_GRAD_CHECKPOINTING,
     N_("known issue in trl 0.7.2: SFTTrainer stopped turning gradient checkpointing on by default (trl PR #725; "
        "trl#876: OOM at any batch size, fine on 0.7.1)"),
     ML_FIX_GRAD_CKPT, ML_KNOB_GRAD_CKPT, ML_DIALECT_HF,
     N_("turn gradient checkpointing on explicitly (TrainingArguments / SFTConfig)"), NULL},
    {"torch", ML_VER(2, 10, 0), ML_VER(2, 11, 0), KI_XPU, ML_CAUSE_MISLEADING,
     N_("known issue in PyTorch 2.10 on Intel XPU: a false out-of-memory on the first allocation with two devices "
        "visible, while memory is free (llm-scaler#305, a regression against 2.9)"),
     ML_FIX_KNOWN_ISSUE, ML_KNOB_NONE, ML_DIALECT_COUNT, N_("show one device per process, or use a PyTorch 2.9 build"),
     "ZE_AFFINITY_MASK=<device index>"},
    {"nccl", ML_VER(2, 26, 0), 0, KI_NCCL, ML_CAUSE_NCCL_BUFFERS,
     N_("known issue from NCCL 2.26: cuMem host allocations are on by default and fail where 2.25 ran "
        "(pytorch#152302)"),
     ML_FIX_KNOWN_ISSUE, ML_KNOB_NONE, ML_DIALECT_COUNT, N_("turn NCCL's cuMem host allocations off"),
     "NCCL_CUMEM_HOST_ENABLE=0"},
    {"vllm", ML_VER(0, 15, 0), ML_VER(0, 17, 0), KI_SERVING_KV, ML_CAUSE_KV_CACHE_BUDGET,
     N_("known issue in vLLM 0.15-0.16: the start-up profile books about 2.5x the activation memory of 0.17+ for the "
        "same model, so the KV cache comes out smaller (start-up logs in validation/data: Qwen3-14B on an H100)"),
     ML_FIX_KNOWN_ISSUE, ML_KNOB_NONE, ML_DIALECT_COUNT, N_("upgrade vLLM"), "pip install 'vllm>=0.17'"},
};

static bool issue_applies(const struct ctx *x, uint32_t when)
{
    const struct ml_oom_event *e = x->e;
    if ((when & KI_TRAINING) && !(x->training || (!x->serving && !x->engine)))
        return false;
    if ((when & KI_SERVING_KV) && !(e->kind == ML_OOM_VLLM_KV_TOO_SMALL || e->kind == ML_OOM_VLLM_NO_CACHE ||
                                    e->phase == ML_OPH_SERVING_STARTUP || e->phase == ML_OPH_SERVING_RUNTIME))
        return false;
    if ((when & KI_XPU) && e->device != ML_DEV_XPU)
        return false;
    if ((when & KI_NCCL) && e->kind != ML_OOM_NCCL && e->phase != ML_OPH_COMMUNICATION)
        return false;
    return true;
}

/* Does the known issue ki hold for the version line v? */
static bool issue_holds(const struct ctx *x, const struct known_issue *ki, const struct ml_oom_version *v)
{
    uint32_t ver;
    struct ml_diag d;
    ml_diag_init(&d);
    if (strcmp(v->name, ki->lib) || ml_version_parse(v->value, &ver, &d) != ML_OK)
        return false;
    return ver >= ki->from && (!ki->until || ver < ki->until) && issue_applies(x, ki->when);
}

/* The evidence row of a known issue (one per class of events it explains). */
static enum ml_evidence_id issue_evidence(uint32_t when)
{
    return when & KI_TRAINING ? ML_EV_KI_TRAINING
           : when & KI_XPU    ? ML_EV_KI_XPU
           : when & KI_NCCL   ? ML_EV_KI_NCCL
                              : ML_EV_KI_SERVING_KV;
}

void ml_dg_known_issues(struct ctx *x)
{
    const struct ml_incident *inc = x->inc;
    for (uint32_t i = 0; i < inc->n_versions; i++) {
        const struct ml_oom_version *v = &inc->versions[i];
        for (size_t k = 0; k < sizeof(known_issues) / sizeof(known_issues[0]); k++) {
            const struct known_issue *ki = &known_issues[k];
            if (!issue_holds(x, ki, v))
                continue;
            struct ml_finding *f = ml_dg_finding(x, ki->cause, 650);
            if (!f)
                continue;
            if (!f->why[0])
                ml_dg_why(f, "%s", _(ki->what));
            else
                ml_dg_ev_note(f, "%s", _(ki->what));
            char text[64];
            (void)snprintf(text, sizeof(text), "%s %s", v->name, v->value);
            ml_dg_ev_line(f, v->file, v->line, text);
            if (ki->knob != ML_KNOB_NONE) {
                struct ml_fix *kf = ml_dg_knob(f, ki->fix, ki->knob, 0, _(ki->action));
                if (kf && !x->su->train && !kf->setting[0])
                    ml_dg_generic_setting(x, kf, ki->dialect);
                continue;
            }
            bool fresh;
            struct ml_fix *kf = ml_dg_add_fix(f, ki->fix, 0, _(ki->action), &fresh);
            if (fresh)
                (void)snprintf(kf->setting, sizeof(kf->setting), "%s", ki->setting);
        }
    }
}

void ml_dg_issue_features(const struct ctx *x, struct ml_features *f)
{
    const struct ml_incident *inc = x->inc;
    for (uint32_t i = 0; i < inc->n_versions; i++)
        for (size_t j = 0; j < sizeof(known_issues) / sizeof(known_issues[0]); j++)
            if (issue_holds(x, &known_issues[j], &inc->versions[i]))
                f->on[issue_evidence(known_issues[j].when)] = true;
}
