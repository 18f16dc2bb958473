/*
 * diagnose.c - the diagnosis (diagnose.h): the primary event and its numbers, the ledgers of the
 * run as configured, the rules (rules.c), the ranking (features.c, evidence.c), the fixes that
 * fit the run (runs.c), priced (price.c), and the order of the output.
 *
 * Sources: the shared field guide reference/oom-messages.md (docs/cli/diagnose.md) and
 * reference/accounting-notes.md, cited at each rule (rules.c). Fixes are knobs of the knob table
 * (fit.h, lib/fit/knobs.c), applied, written and ranked as fit does, or advice (finding.c). They
 * are priced with the ledger (ml_ledger_train or ml_ledger_infer with the knob applied) when the
 * setup allows; otherwise with the log's own numbers, or not at all (saves unknown).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/units.h"
#include "diag_int.h"
#include "i18n.h"

const char *ml_cause_name(enum ml_cause c)
{
    static const char *const n[] = {
        "model_states",    "activations",           "long_sequence",       "logits",
        "eager_attention", "no_grad_checkpointing", "fp32_upcast",         "eval_accumulation",
        "tensor_leak",     "fragmentation",         "other_process",       "checkpoint_gather",
        "kv_cache_budget", "serving_headroom",      "serving_free_memory", "host_ram",
        "nccl_buffers",    "oversize_tensor",       "misleading",          "unknown",
    };
    _Static_assert(sizeof(n) / sizeof(n[0]) == ML_CAUSE_COUNT, "cause names");
    return (unsigned)c < ML_CAUSE_COUNT ? n[c] : "unknown";
}

static int cmp_fix(const void *a, const void *b)
{
    const struct ml_fix *x = *(const struct ml_fix *const *)a, *y = *(const struct ml_fix *const *)b;
    if (x->off_phase != y->off_phase)
        return x->off_phase ? 1 : -1; /* the failing phase's fixes first (runs.c) */
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

size_t ml_diagnosis_fixes(const struct ml_diagnosis *dg, const struct ml_fix **out, size_t max, bool all)
{
    size_t n = 0;
    for (uint32_t i = 0; i < dg->n_findings; i++) {
        if (i && !all && dg->f[i].confidence < 100)
            continue;
        for (uint32_t j = 0; j < dg->f[i].n_fix && n < max; j++) {
            const struct ml_fix *f = &dg->f[i].fix[j];
            bool dup = false;
            for (size_t k = 0; k < n; k++)
                if (out[k]->kind == f->kind)
                    dup = true;
            if (!dup)
                out[n++] = f;
        }
    }
    qsort(out, n, sizeof(out[0]), cmp_fix);
    return n;
}

/* ---- the context ------------------------------------------------------------------------- */

int32_t ml_diagnose_primary(const struct ml_incident *inc)
{
    int32_t best = -1;
    for (uint32_t i = 0; i < inc->n_events; i++) {
        const struct ml_oom_event *e = &inc->ev[i];
        if (best < 0) {
            best = (int32_t)i;
            continue;
        }
        const struct ml_oom_event *b = &inc->ev[best];
        int ce = kind_class(e->kind), cb = kind_class(b->kind);
        if (ce < cb || (ce == cb && (e->file < b->file || (e->file == b->file && e->line < b->line))))
            best = (int32_t)i;
    }
    return best;
}

/* ---- the ledger and what-ifs ------------------------------------------------------------ */

static enum ml_phase ledger_phase(const struct ml_oom_event *e, bool *exact)
{
    *exact = true;
    if (e->timing == ML_TIM_AFTER_SAVE)
        return ML_PHASE_AFTER_SAVE;
    switch (e->phase) {
    case ML_OPH_LOAD: return ML_PHASE_LOAD;
    case ML_OPH_FORWARD: return ML_PHASE_FORWARD;
    case ML_OPH_LOSS: return ML_PHASE_LOSS;
    case ML_OPH_BACKWARD: return ML_PHASE_BACKWARD;
    case ML_OPH_OPTIMIZER_STEP: return ML_PHASE_OPTIMIZER_STEP;
    case ML_OPH_CHECKPOINT_SAVE: return ML_PHASE_CHECKPOINT_SAVE;
    case ML_OPH_AFTER_SAVE: return ML_PHASE_AFTER_SAVE;
    case ML_OPH_EVAL: return ML_PHASE_EVAL;
    default: break;
    }
    *exact = false;
    return ML_PHASE_COUNT;
}

bool ml_dg_run_ledger(const struct ml_diag_setup *su, const struct ml_train *t, const struct ml_cluster *c,
                      struct ml_ledger *l)
{
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_train tc = *t;
    if (ml_train_check(&tc, su->arch, c, &d) != ML_OK)
        return false;
    ml_diag_init(&d);
    return ml_ledger_train(su->arch, su->inv, &tc, c, NULL, l, &d) == ML_OK;
}

uint32_t ml_diagnose_guess_world(const struct ml_incident *inc, const struct ml_arch *arch,
                                 const struct ml_inventory *inv, const struct ml_train *t, struct ml_cluster *c)
{
    int32_t p = ml_diagnose_primary(inc);
    if (p < 0 || !arch || !inv || !t)
        return 0;
    const struct ml_oom_event *e = &inc->ev[p];
    if (!has(e, ML_OOM_F_ALLOCATED))
        return 0;
    uint32_t lo = 1;
    for (uint32_t i = 0; i < inc->n_events; i++) {
        const struct ml_oom_event *x = &inc->ev[i];
        for (int r = 63; r >= 0; r--)
            if ((x->rank_mask >> r) & 1) {
                if ((uint32_t)r + 1 > lo)
                    lo = (uint32_t)r + 1;
                break;
            }
        if (x->rank + 1 > (int32_t)lo)
            lo = (uint32_t)x->rank + 1;
    }
    struct ml_diag_setup su;
    memset(&su, 0, sizeof(su));
    su.arch = arch;
    su.inv = inv;
    bool exact;
    enum ml_phase ph = ledger_phase(e, &exact);
    uint32_t best = 0;
    uint64_t best_d = UINT64_MAX;
    struct ml_ledger l;
    for (uint32_t n = 1; n <= 1024; n *= 2) {
        if (n < lo)
            continue;
        struct ml_cluster cc = *c;
        cc.gpus_per_node = n;
        cc.nodes = 1;
        if (!ml_dg_run_ledger(&su, t, &cc, &l))
            continue;
        uint64_t v = exact && l.phase_active[ph] ? l.phase_allocated[ph] : l.peak_allocated;
        uint64_t d = v > e->allocated ? v - e->allocated : e->allocated - v;
        if (d < best_d) {
            best_d = d;
            best = n;
        }
    }
    if (best) {
        c->gpus_per_node = best;
        c->nodes = 1;
    }
    return best;
}

/* ---- writing and pricing the knobs ------------------------------------------------------ */

static int cmp_finding(const struct ml_finding *a, const struct ml_finding *b)
{
    if (a->confidence != b->confidence)
        return a->confidence > b->confidence ? -1 : 1;
    return (int)a->cause - (int)b->cause;
}

static void sort_out(struct ml_diagnosis *o)
{
    for (uint32_t i = 1; i < o->n_findings; i++) {
        for (uint32_t j = i; j > 0 && cmp_finding(&o->f[j], &o->f[j - 1]) < 0; j--) {
            struct ml_finding tmp = o->f[j];
            o->f[j] = o->f[j - 1];
            o->f[j - 1] = tmp;
        }
    }
    for (uint32_t i = 0; i < o->n_findings; i++) {
        struct ml_finding *f = &o->f[i];
        for (uint32_t a = 1; a < f->n_fix; a++)
            for (uint32_t b = a;
                 b > 0 && (f->fix[b].cost < f->fix[b - 1].cost ||
                           (f->fix[b].cost == f->fix[b - 1].cost && f->fix[b].kind < f->fix[b - 1].kind));
                 b--) {
                struct ml_fix tmp = f->fix[b];
                f->fix[b] = f->fix[b - 1];
                f->fix[b - 1] = tmp;
            }
    }
}

/* The numbers of the primary event (A1: reserved-unallocated is reserved minus allocated in the
 * classic form) and what kind of run it is. */
static void read_event(struct ctx *x)
{
    const struct ml_incident *inc = x->inc;
    struct ml_diagnosis *out = x->out;
    /* Numbers that cannot all be true (a retyped or OCR'd message) are not built on (issue 13). */
    uint32_t masked = 0;
    x->ev = *x->e;
    out->implausible = ml_oom_check_numbers(&x->ev, inc->saw_wsl || inc->saw_windows, &masked);
    x->ev.has &= ~masked;
    if (masked & ML_OOM_F_TOTAL)
        x->ev.n_procs = 0;
    x->e = &x->ev;
    const struct ml_oom_event *e = x->e;
    ml_oom_attribute_procs(e, &out->procs);
    x->has_req = has(e, ML_OOM_F_REQUESTED);
    x->req = e->requested;
    x->has_cap = has(e, ML_OOM_F_TOTAL) && e->total > 0;
    x->cap = e->total;
    x->has_free = has(e, ML_OOM_F_FREE);
    x->free = e->free;
    x->has_alloc = has(e, ML_OOM_F_ALLOCATED);
    x->alloc = e->allocated;
    if (has(e, ML_OOM_F_RESERVED_UNALLOC)) {
        x->has_unalloc = true;
        x->unalloc = e->reserved_unalloc;
    } else if (has(e, ML_OOM_F_RESERVED) && e->cached_form) {
        x->has_unalloc = true; /* torch 1.0-1.3's "X cached)": the cache beyond allocated (A1) */
        x->unalloc = e->reserved;
    } else if (has(e, ML_OOM_F_RESERVED | ML_OOM_F_ALLOCATED) && e->reserved >= e->allocated) {
        x->has_unalloc = true;
        x->unalloc = e->reserved - e->allocated;
    }
    x->held = x->alloc + (x->has_unalloc ? x->unalloc : 0);
    x->used = x->has_cap && x->has_free && x->cap >= x->free ? x->cap - x->free : 0;
    if (kind_class(e->kind) == 0 && x->has_cap && x->has_free && x->has_alloc && e->kind != ML_OOM_VLLM_FREE_MEMORY) {
        out->has_device_numbers = true;
        out->used = x->used;
        out->held = x->held;
        out->has_stranded = x->has_unalloc;
        out->stranded = x->unalloc;
    }
    x->serving = e->phase == ML_OPH_SERVING_RUNTIME || e->phase == ML_OPH_SERVING_STARTUP ||
                 (kind_class(e->kind) == 0 && e->kind != ML_OOM_ALLOCATOR && e->kind != ML_OOM_MPS &&
                  e->kind != ML_OOM_NPU_WORKSPACE);
    x->training = x->su->train != NULL || inc->saw_deepspeed || inc->saw_fsdp || inc->saw_rl || inc->saw_lora ||
                  e->phase == ML_OPH_BACKWARD || e->phase == ML_OPH_OPTIMIZER_STEP || e->phase == ML_OPH_LOSS;
    /* The setup says it is a serving engine: an allocator OOM with no phase happened at run time. */
    if (x->su->serve && !x->training) {
        x->engine = true;
        x->serving |= e->phase == ML_OPH_UNKNOWN && e->kind == ML_OOM_ALLOCATOR;
    }
}

/* The training ledger of the run as configured. */
static void train_ledger(struct ctx *x, struct ml_diag *diag)
{
    struct ml_diagnosis *out = x->out;
    if (!(x->su->arch && x->su->inv && x->su->train && x->su->cluster))
        return;
    x->t0 = *x->su->train;
    x->c0 = *x->su->cluster;
    if (!ml_dg_run_ledger(x->su, &x->t0, &x->c0, &out->ledger)) {
        ml_diag_set(diag, ML_ERR_INVALID, _("the ledger of the configured run could not be computed"));
        return;
    }
    x->has_ledger = true;
    out->has_ledger = true;
    bool exact;
    enum ml_phase ph = ledger_phase(x->e, &exact);
    out->ledger_phase = exact && out->ledger.phase_active[ph] ? ph : out->ledger.peak_phase;
    out->ledger_at_phase = out->ledger.phase_allocated[out->ledger_phase];
    /* What the log needed at the failing moment (device in use + the request) beyond the ledger's
     * device figure is carried into every "fits" check. */
    if (x->has_cap && x->has_free && x->has_req) {
        uint64_t need = x->used + x->req;
        out->gap = need > out->ledger.device_used ? need - out->ledger.device_used : 0;
    }
}

/* The inference ledger of the serving engine as configured, and the KV cache the log states. */
static void serve_ledger(struct ctx *x, struct ml_diag *diag)
{
    struct ml_diagnosis *out = x->out;
    const struct ml_oom_event *e = x->e;
    const struct ml_incident *inc = x->inc;
    if (!(x->su->serve && x->su->arch && x->su->inv && x->su->cluster))
        return;
    x->s0 = *x->su->serve;
    x->c0 = *x->su->cluster;
    if (!ml_dg_run_serve(x, &x->s0, &out->serve)) {
        ml_diag_set(diag, ML_ERR_INVALID, _("the inference ledger of the configured engine could not be computed"));
        return;
    }
    x->has_serve_ledger = true;
    out->has_serve = true;
    x->kx.base = &out->serve;
    /* the KV reasoning is the log's max_model_len, read from the settings it prints (settings.c) */
    const struct ml_log_args *a = x->su->args;
    if (a && a->max_model_len && x->s0.max_model_len == a->max_model_len && !has(e, ML_OOM_F_MAX_SEQ_LEN) &&
        !(inc->engine.seen && inc->engine.max_seq_len))
        ml_dg_check(x, _("max_model_len %llu is the engine's own setting the log prints, not the model's context"),
                    (unsigned long long)a->max_model_len);
    /* Token counts are exact (the error's, V1's "GPU KV cache size"); the profiling lines round to
     * hundredths of GiB. */
    if (has(e, ML_OOM_F_KV_TOKENS) && e->kv_tokens) {
        out->has_kv_log = true;
        out->kv_log = e->kv_tokens * out->serve.kv_bytes_per_token;
    } else if (inc->prof_kv_tokens) {
        out->has_kv_log = true;
        out->kv_log = inc->prof_kv_tokens * out->serve.kv_bytes_per_token;
    } else if (inc->prof_kv_cache) {
        out->has_kv_log = true;
        out->kv_log = inc->prof_kv_cache;
    }
}

/* What to check next, from the event and the ledger. */
static void next_checks(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_diagnosis *out = x->out;
    if (e->device == ML_DEV_HIP && x->has_free && x->free == 0)
        ml_dg_check(x, _("rocm-smi --showmeminfo vram --showpids: ROCm prints no process lines, so only free memory "
                         "tells about other processes"));
    if (e->timing == ML_TIM_AFTER_SAVE || e->timing == ML_TIM_AT_SAVE)
        ml_dg_check(
            x, _("compare torch.cuda.max_memory_allocated() (or DeepSpeed's MA/Max_MA) of the steps before and after "
                 "the save"));
    if (e->timing == ML_TIM_AFTER_SAVE && x->inc->flush_warnings == 0)
        ml_dg_check(x, _("look for 'pytorch allocator cache flushes' warnings before the OOM: the leading sign of "
                         "fragmentation"));
    if (x->has_req && tiny_request(x) && kind_class(e->kind) == 0)
        ml_dg_check(x,
                    _("the %s request is rounded (2 MiB / 20 MiB blocks): it says the card is full, not which tensor "
                      "filled it"),
                    ml_fmt_bytes_s((char[32]){0}, 32, x->req));
    if (out->has_ledger && out->gap)
        ml_dg_check(
            x,
            _("the ledger's device figure is %s below what the log needed (in use + request); the 'fits' checks add "
              "that gap"),
            ml_fmt_bytes_s((char[32]){0}, 32, out->gap));
}

/* ---- the evidence model ------------------------------------------------------------------ */

#define ON(id) (f->on[ML_EV_##id] = true)

/* What the reader should know of the numbers themselves: relations that fail, a tiny request. */
static void number_checks(struct ctx *x)
{
    const struct ml_oom_event *e0 = &x->inc->ev[x->out->primary];
    if (x->out->implausible) {
        char list[160] = "", a[32], b[32];
        for (unsigned i = 0; i < ML_OOM_CHECK_COUNT; i++)
            if (x->out->implausible >> i & 1)
                (void)snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", list[0] ? ", " : "",
                               _(ml_oom_check_name(i)));
        ml_dg_check(
            x,
            _("the message's numbers cannot all be true (%s: allocated %s of a %s device); retyped or OCR'd? paste "
              "the text: no cause is built on them"),
            list, ml_fmt_bytes_s(a, sizeof(a), e0->allocated), ml_fmt_bytes_s(b, sizeof(b), e0->total));
    }
    if (x->has_req && x->req <= 64 * ML_MIB && x->out->features.on[ML_EV_N_FULL] && x->e->kind != ML_OOM_NCCL) {
        char a[32];
        ml_dg_check(
            x,
            _("the failing request is tiny (%s): the card was already full, so the cause is what filled it, not this "
              "allocation"),
            ml_fmt_bytes_s(a, sizeof(a), x->req));
    } else if (x->e->kind == ML_OOM_NCCL && x->has_req && x->req <= 64 * ML_MIB) {
        char a[32];
        ml_dg_check(
            x, _("NCCL's failing allocation is tiny (%s): the card was already full when NCCL asked for its buffers"),
            ml_fmt_bytes_s(a, sizeof(a), x->req));
    } else if (ml_dg_lib_tiny(x)) {
        ml_dg_check(x, _("a cuBLAS handle and its workspace take a few MiB: the card was already full, so the cause is "
                         "what filled it, not this allocation"));
    }
}

/* The trainer the YAML settings are written for: the run's, or both when it is unknown. */
static enum ml_dialect trainer_dialect(const struct ml_train *t)
{
    if (!t)
        return ML_DIALECT_COUNT;
    return t->framework == ML_FW_LLAMAFACTORY ? ML_DIALECT_LF
           : t->framework == ML_FW_HF         ? ML_DIALECT_HF
           : t->framework == ML_FW_TRL        ? ML_DIALECT_TRL
                                              : ML_DIALECT_COUNT;
}

enum ml_status ml_diagnose(const struct ml_incident *inc, const struct ml_diag_setup *setup, struct ml_diagnosis *out,
                           struct ml_diag *diag)
{
    static const struct ml_diag_setup none;
    memset(out, 0, sizeof(*out));
    out->primary = ml_diagnose_primary(inc);
    if (out->primary < 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("no out-of-memory event to diagnose"));
    struct ctx x;
    memset(&x, 0, sizeof(x));
    x.inc = inc;
    x.su = setup ? setup : &none;
    x.w = x.su->weights ? x.su->weights : &ml_evidence_fitted;
    x.out = out;
    const struct ml_oom_event *e = &inc->ev[out->primary];
    x.e = e;
    read_event(&x);
    ml_dg_device_settings(&x);
    x.dialect = trainer_dialect(x.su->train);
    x.kx.arch = x.su->arch;
    x.kx.max_gpus_per_node = ML_FIT_MAX_GPUS_DEFAULT;
    x.kx.alloc_var = x.var;
    train_ledger(&x, diag);
    serve_ledger(&x, diag);

    ml_dg_run_rules(&x);
    /* The evidence ranks the causes; the rules' findings give their texts and fixes. */
    ml_dg_features(&x, &out->features);
    ml_evidence_rank(&out->features, x.w, &out->ranking);
    out->cannot_tell = out->ranking.cannot_tell;
    out->p_none = out->ranking.p_none_permille;
    ml_dg_rank_findings(&x);
    if (e->device == ML_DEV_MPS && out->n_findings) {
        /* the message's own advice, with its caveat, after the first finding's fixes */
        struct ml_fix *k =
            ml_dg_advise(&out->f[0], A_MPS_WATERMARK,
                         _("raise the MPS allocator's limit, only when a smaller batch or sequence is not enough"));
        ml_dg_fix_note(k, _("0.0 removes the limit: the run may then take the memory macOS keeps for itself, swap "
                            "heavily or bring the system down (PyTorch's own warning); a ratio above the default 1.7 "
                            "(say 2.0) raises it by less"));
    }
    ml_dg_fit_fixes_to_run(&x);
    if (out->cannot_tell)
        ml_dg_decide_by(&x);
    ml_dg_big_request(&x);
    number_checks(&x);

    /* Concrete settings and prices. */
    for (uint32_t i = 0; i < out->n_findings; i++) {
        for (uint32_t j = 0; j < out->f[i].n_fix; j++) {
            struct ml_fix *fx = &out->f[i].fix[j];
            if (fx->kind == ML_FIX_ZERO3_BUFFERS)
                ml_dg_zero3_action(&x, fx);
            ml_dg_settle(&x, fx);
        }
    }
    ml_dg_unwritable(&x);
    ml_dg_drop_no_change(&x);
    sort_out(out);
    next_checks(&x);
    return ML_OK;
}
