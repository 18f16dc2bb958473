/*
 * features.c - the evidence rows this log shows (diagnose.h ML_EVIDENCE; the model in
 * evidence.c), the findings in the ranking's order with the evidence behind each, and what would
 * tell the first two apart when the answer is "cannot tell".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/units.h"
#include "diag_int.h"
#include "i18n.h"

/* The frame context outranks a code line's flag (issue 24): an fp32 copy made while loading or
 * in the optimizer (its constructor, its step) is the designed fp32 master copy of mixed
 * precision, not an accidental upcast; so is a serving engine's sampler casting its logits to
 * fp32 (vLLM's vllm/v1/sample/sampler.py Sampler.forward, which vllm-ascend's sampler inherits):
 * its warm-up's cost is the logits of max_num_seqs requests, not a stray .float(). */
bool ml_dg_designed_fp32(const struct ml_oom_event *e)
{
    return e->phase == ML_OPH_LOAD || e->phase == ML_OPH_OPTIMIZER_STEP || e->episode == ML_EP_SAMPLER;
}

#define ON(id) (f->on[ML_EV_##id] = true)

/* The message's kind as evidence. */
static void kind_features(const struct ctx *x, struct ml_features *f)
{
    switch (x->e->kind) {
    case ML_OOM_VLLM_KV_TOO_SMALL: ON(K_VLLM_KV_SMALL); break;
    case ML_OOM_VLLM_NO_CACHE: ON(K_VLLM_NO_CACHE); break;
    case ML_OOM_VLLM_FREE_MEMORY: ON(K_VLLM_FREE); break;
    case ML_OOM_VLLM_WARMUP: ON(K_VLLM_WARMUP); break;
    case ML_OOM_SGLANG: ON(K_SGLANG); break;
    case ML_OOM_HOST_SIGKILL:
        /* certain only with the kernel's record (A11 caveat) */
        if (x->inc->kernel_oom_lines)
            ON(K_HOST);
        else
            ON(K_SIGKILL);
        break;
    case ML_OOM_HOST_KILLER:
    case ML_OOM_HOST_RAY:
    case ML_OOM_HOST_COMMIT:
    case ML_OOM_NCCL_SHM: ON(K_HOST); break;
    case ML_OOM_HOST_ALLOC:
        /* 2 TiB: more than the largest single training nodes have (rule_host) */
        if (x->has_req && x->req >= (uint64_t)2 << 40)
            ON(K_HOST_HUGE);
        else
            ON(K_HOST);
        break;
    case ML_OOM_NCCL: ON(K_NCCL); break;
    case ML_OOM_IMPOSSIBLE: ON(K_IMPOSSIBLE); break;
    case ML_OOM_DRIVER: ON(K_DRIVER); break;
    case ML_OOM_NPU_WORKSPACE: ON(K_NPU_WORKSPACE); break;
    case ML_OOM_CUBLAS:
    case ML_OOM_CUDNN: ON(K_CUBLAS); break;
    case ML_OOM_RUNTIME: ON(K_RUNTIME); break;
    default: break;
    }
    /* the step of a serving engine's start-up (issue 24); an engine that refused to size its KV
     * pool (vLLM's check of one request, its empty pool, SGLang's) never allocated it: nothing
     * outside a pool ran short, so the pool's and the graphs' episodes say nothing of headroom */
    bool refused = ml_oom_engine_pool_refused(x->e);
    switch (refused ? ML_EP_NONE : x->e->episode) {
    case ML_EP_WEIGHTS: ON(EP_WEIGHTS); break;
    case ML_EP_PROFILE: ON(EP_PROFILE); break;
    case ML_EP_SAMPLER: ON(EP_SAMPLER); break;
    case ML_EP_KV_POOL: ON(EP_KV_POOL); break;
    case ML_EP_GRAPH: ON(EP_GRAPH); break;
    default: break;
    }
    switch (x->e->buffer) {
    case ML_BUF_WEIGHTS: ON(BUF_WEIGHTS); break;
    case ML_BUF_KV: ON(BUF_KV); break;
    case ML_BUF_COMPUTE: ON(BUF_COMPUTE); break;
    case ML_BUF_HOST: ON(BUF_HOST); break;
    default: break;
    }
    /* consistency before ranking: a host cause only for a host event; weights the engine logged
     * at under half the card are not what fills it */
    if (kind_class(x->e->kind) != 2 && x->e->device != ML_DEV_HOST)
        ON(V_DEVICE_EVENT);
    else
        ON(V_HOST_EVENT);
    /* checkpointing frames in the failing stack: it is on, whatever the step or phase suggest */
    if (x->e->ckpt_frames)
        ON(V_CKPT_ON);
    uint64_t card = x->has_cap ? x->cap : x->inc->prof_total;
    if (x->inc->weights_bytes && card && x->inc->weights_bytes < card / 2 && x->e->episode != ML_EP_WEIGHTS)
        ON(V_WEIGHTS_SMALL);
    /* a cause whose remedy cannot free the request cannot lead: defragmenting frees at most the
     * stranded cache, ending the other processes at most their bytes (with what is free already) */
    uint64_t free_now = x->has_free ? x->free : 0;
    if (x->has_req && x->has_unalloc && x->e->kind != ML_OOM_IMPOSSIBLE && x->inc->flush_warnings == 0 &&
        x->unalloc + free_now < x->req)
        ON(V_FRAG_SHORT);
    /* ... nor when the device's free memory alone covers the request (the free_covers margin): the
     * caching allocator maps a new segment when no cached block fits (PyTorch
     * CUDACachingAllocator.cpp malloc: alloc_block after get_free_block), so a split cache cannot
     * explain the failure; the log's numbers belong elsewhere (misleading) */
    if (x->has_req && x->has_free && x->free >= x->req + x->req / 4 && x->free - x->req >= 512 * ML_MIB)
        ON(V_FRAG_FREE);
    const struct ml_oom_attribution *pa = &x->out->procs;
    if (x->has_req && pa->n_others > 0 && pa->n_siblings == 0 && pa->others + free_now < x->req)
        ON(V_OTHERS_SHORT);
    if (x->e->device == ML_DEV_XPU && x->e->kind == ML_OOM_ALLOCATOR && x->has_req && x->req >= 4 * ML_GIB &&
        (!x->has_alloc || x->alloc < ML_GIB))
        ON(D_XPU_BIG); /* a per-allocation limit of the platform (A4) */
}

/* A tiny request failing inside NCCL or cuBLAS (issue 24 item 4): these libraries allocate outside
 * PyTorch's cache, NCCL a few bytes to a few MiB that its calloc line states (A8), cuBLAS a handle
 * and a workspace of a few MiB (A7; PyTorch's CUBLAS_WORKSPACE_CONFIG notes); such a failure says
 * the card was already full. Cause-neutral: it names no cause, it weighs the candidates as a full
 * card and a tiny request do (num:full, num:tiny_full). A cuDNN workspace can be large: not here. */
bool ml_dg_lib_tiny(const struct ctx *x)
{
    return (x->e->kind == ML_OOM_NCCL && x->has_req && x->req <= 64 * ML_MIB) ||
           (x->e->kind == ML_OOM_CUBLAS && !x->has_req);
}

/* The allocator's numbers as evidence: the request against the card, the stranded cache
 * (analysis 2, observation 3), the processes (analysis 1). */
static void number_features(const struct ctx *x, struct ml_features *f)
{
    const struct ml_oom_event *e = x->e;
    if (ml_dg_lib_tiny(x)) {
        ON(N_LIB_TINY);
        ON(N_FULL);
        ON(N_TINY_FULL);
        return;
    }
    if (!(e->kind == ML_OOM_ALLOCATOR || e->kind == ML_OOM_MPS) || !x->has_cap)
        return;
    if (x->has_req && x->req > x->cap)
        ON(N_REQ_GT_CAP);
    else if (x->has_req && x->req >= ML_GIB && x->req >= x->cap / 10)
        ON(N_BIG_REQUEST);
    if (x->has_alloc && x->alloc == 0 && x->unalloc == 0)
        ON(N_EMPTY_CARD);
    if (x->has_req && x->has_free && x->free >= x->req + x->req / 4 && x->free - x->req >= 512 * ML_MIB)
        ON(N_FREE_COVERS);
    if (x->held >= x->cap / 10 * 9 || (x->has_free && x->used >= x->cap / 100 * 95)) {
        ON(N_FULL);
        if (x->has_req && x->req <= 64 * ML_MIB)
            ON(N_TINY_FULL);
    }
    if (x->has_unalloc && x->has_req) {
        /* observation 3: 16 of 19 corpus messages had at most 3.8 % of reserved stranded */
        uint64_t share = x->unalloc * 10000 / (x->held ? x->held : 1); /* per ten thousand */
        if (x->unalloc >= x->req && share > 1000 && x->unalloc > 512 * ML_MIB)
            ON(FRAG_HIGH);
        else if (x->unalloc >= x->req && share > 380)
            ON(FRAG_MID);
        else if (x->unalloc < x->req && x->has_free && x->unalloc + x->free >= x->req && x->unalloc >= 512 * ML_MIB)
            ON(FRAG_WITH_FREE);
        else if (x->unalloc >= x->req)
            ON(FRAG_LOW);
    }
    const struct ml_oom_attribution *a = &x->out->procs;
    uint64_t all = 0;
    for (uint32_t i = 0; i < e->n_procs; i++)
        if (a->role[i] != ML_PROC_DUPLICATE)
            all += e->procs[i].bytes;
    if (e->n_procs && a->proven) {
        if (all >= ML_GIB)
            ON(P_OTHER_PROVEN);
    } else if (e->n_procs) {
        if (a->n_siblings >= 2)
            ON(P_SIBLINGS);
        else if (a->others >= ML_GIB)
            ON(P_OTHER_AFTER_OWN);
    } else if (x->has_free && x->has_alloc && x->used > x->held + ML_GIB + x->cap / 20 && x->held < x->cap / 10 * 9) {
        ON(P_OUTSIDE_GAP);
    }
}

/* The phase, the frames' flags and the timing as evidence (analyses 4, 5). */
static void context_features(const struct ctx *x, struct ml_features *f)
{
    const struct ml_oom_event *e = x->e;
    static const enum ml_evidence_id phase_row[ML_OPH_COUNT] = {
        [ML_OPH_LOAD] = ML_EV_PH_LOAD,
        [ML_OPH_FORWARD] = ML_EV_PH_FORWARD,
        [ML_OPH_LOSS] = ML_EV_PH_LOSS,
        [ML_OPH_BACKWARD] = ML_EV_PH_BACKWARD,
        [ML_OPH_OPTIMIZER_STEP] = ML_EV_PH_OPTIMIZER,
        [ML_OPH_CHECKPOINT_SAVE] = ML_EV_PH_SAVE,
        [ML_OPH_AFTER_SAVE] = ML_EV_COUNT,
        [ML_OPH_EVAL] = ML_EV_PH_EVAL,
        [ML_OPH_GENERATE] = ML_EV_PH_GENERATE,
        [ML_OPH_SERVING_STARTUP] = ML_EV_PH_SERVING_STARTUP,
        [ML_OPH_SERVING_RUNTIME] = ML_EV_PH_SERVING_RUNTIME,
        [ML_OPH_COMMUNICATION] = ML_EV_PH_COMMUNICATION,
        [ML_OPH_UNKNOWN] = ML_EV_COUNT,
    };
    if ((unsigned)e->phase < ML_OPH_COUNT && phase_row[e->phase] < ML_EV_COUNT)
        f->on[phase_row[e->phase]] = true;
    if (e->format_error) {
        ON(FL_FORMAT_ERROR);
        f->on[ML_EV_PH_COMMUNICATION] = false; /* the collective was being logged, not run */
    }
    if (e->fp32_frames && !e->format_error && !ml_dg_designed_fp32(e) && x->has_req && x->req >= ML_GIB)
        ON(FL_FP32_BIG); /* a small upcast (RMSNorm's variance) is by design */
    /* What the failing call computes names the tensor only when the request is not a tiny one:
     * a tiny request says the card was already full (C8), whatever ran out last. */
    if (e->eager_frames && !(x->has_req && x->req <= 64 * ML_MIB))
        ON(FL_EAGER);
    if (e->chained)
        ON(FL_RETRY_CHAIN);
    if (e->cut)
        ON(N_CUT);
    switch (e->timing) {
    case ML_TIM_AFTER_SAVE:
    case ML_TIM_AT_SAVE: ON(T_AFTER_SAVE); break;
    case ML_TIM_AT_EVAL: ON(T_AT_EVAL); break;
    case ML_TIM_MID_RUN: ON(T_MID_RUN); break;
    case ML_TIM_FIRST_STEP: ON(T_FIRST_STEP); break;
    case ML_TIM_RESUME: ON(T_RESUME); break;
    default: break;
    }
    const struct ml_incident *inc = x->inc;
    if (inc->flush_warnings)
        ON(DS_FLUSHES);
    if (inc->mem_samples >= 3 && inc->ma_rising && inc->ma_last > inc->ma_first + inc->ma_first / 20)
        ON(DS_MA_RISING);
}

/* The kind of run, the model and the configs as evidence. */
static void run_features(const struct ctx *x, struct ml_features *f)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_incident *inc = x->inc;
    bool alloc_kind = e->kind == ML_OOM_ALLOCATOR || e->kind == ML_OOM_MPS;
    if (alloc_kind && (inc->saw_vllm || inc->saw_sglang || inc->saw_tgi || x->su->serve)) {
        ON(C_SERVING_ENGINE);
        if (f->on[ML_EV_N_FULL] && (e->phase == ML_OPH_UNKNOWN || e->phase == ML_OPH_SERVING_STARTUP))
            ON(C_ENGINE_FULL_NO_PHASE); /* its weights and pools fill the card (analysis 7) */
    }
    if (e->phase == ML_OPH_GENERATE && f->on[ML_EV_N_FULL] && inc->gen_context && inc->gen_context <= 4096)
        ON(C_GENERATE_SHORT_FULL); /* the KV cache of so few tokens is small: the weights fill the card */
    uint64_t want, smin, smax, vocab;
    uint32_t heads, kb, world;
    int k;
    if (ml_dg_copy_match(x) || ml_dg_log_shard(x, &world, &kb))
        ON(FP_MODEL_COPY);
    if (ml_dg_logits_match(x, &want) || ml_dg_log_logits(x, &vocab, &kb))
        ON(FP_LOGITS);
    if (ml_dg_eager_match(x, &k, &smin, &smax) || ml_dg_log_scores(x, &heads, &kb))
        ON(FP_EAGER);
    /* With --model / --config: the run's own ledger says what it loads does not fit the card (the
     * engine's start-up stops with a CUDA OOM while loading the weights; the training ledger's load
     * phase alone is over the capacity): evidence for the model's states (issue 24, 4), where the
     * failure is at load or start-up or its phase is unknown. */
    bool at_load = e->phase == ML_OPH_LOAD || e->phase == ML_OPH_SERVING_STARTUP || e->phase == ML_OPH_UNKNOWN;
    if (at_load && ((x->has_serve_ledger && x->out->serve.error == ML_SERVE_WEIGHTS_OOM) ||
                    (x->has_ledger && x->out->ledger.phase_allocated[ML_PHASE_LOAD] > x->out->ledger.capacity)))
        ON(FP_WEIGHTS_EXCEED);
    const struct ml_train *t = x->su->train;
    if (t && !x->serving && kind_class(e->kind) != 2) {
        if (t->attn == ML_ATTN_EAGER && e->phase != ML_OPH_LOAD && e->phase != ML_OPH_OPTIMIZER_STEP)
            ON(CFG_EAGER);
        if (t->grad_ckpt == ML_GC_OFF && (e->phase == ML_OPH_FORWARD || e->phase == ML_OPH_BACKWARD ||
                                          e->phase == ML_OPH_LOSS || e->phase == ML_OPH_UNKNOWN))
            ON(CFG_NO_GRAD_CKPT);
    }
    ml_dg_issue_features(x, f);
    if (x->out->implausible)
        ON(N_IMPOSSIBLE);
}

void ml_dg_features(const struct ctx *x, struct ml_features *f)
{
    memset(f, 0, sizeof(*f));
    kind_features(x, f);
    number_features(x, f);
    context_features(x, f);
    run_features(x, f);
}

#undef ON

/* The evidence behind cause c: the rows present with a weight for it, largest first. */
static void finding_features(const struct ml_diagnosis *o, const struct ml_evidence_weights *w, struct ml_finding *f)
{
    f->n_feat = 0;
    for (unsigned i = 0; i < ML_EV_COUNT; i++) {
        int32_t v = w->w[i][f->cause];
        if (!o->features.on[i] || !v)
            continue;
        uint32_t k = f->n_feat < ML_DIAG_MAX_FEATURES ? f->n_feat++ : ML_DIAG_MAX_FEATURES - 1;
        if (k == ML_DIAG_MAX_FEATURES - 1 && f->n_feat == ML_DIAG_MAX_FEATURES &&
            abs(f->feat[k].weight_milli) >= abs(v))
            continue;
        f->feat[k] = (struct ml_finding_feature){(enum ml_evidence_id)i, v};
        for (; k > 0 && abs(f->feat[k].weight_milli) > abs(f->feat[k - 1].weight_milli); k--) {
            struct ml_finding_feature t = f->feat[k];
            f->feat[k] = f->feat[k - 1];
            f->feat[k - 1] = t;
        }
    }
}

/* The findings are the candidates of the ranking, in its order, with its p: the rules' texts and
 * fixes where a rule wrote them, else the strongest evidence's story and the cause's fixes. */
void ml_dg_rank_findings(struct ctx *x)
{
    struct ml_diagnosis *o = x->out;
    const struct ml_ranking *r = &o->ranking;
    static const struct ml_finding empty;
    struct ml_finding *keep = &o->scratch.f[0];
    uint32_t n = 0;
    for (uint32_t k = 0; k < r->n && n < ML_DIAG_MAX_FINDINGS; k++) {
        struct ml_finding *f = &keep[n++];
        *f = empty;
        for (uint32_t i = 0; i < o->n_findings; i++)
            if (o->f[i].cause == r->cause[k])
                *f = o->f[i];
        f->cause = r->cause[k];
        f->confidence = r->p_permille[k];
        finding_features(o, x->w, f);
        if (!f->why[0]) {
            /* the specific evidence that reads it first, else any that names it */
            const struct ml_evidence_def *d = NULL;
            for (int pass = 0; pass < 2 && !d; pass++)
                for (unsigned j = 0; j < ML_EV_COUNT && !d; j++) {
                    const struct ml_evidence_def *row = ml_evidence_row((enum ml_evidence_id)j);
                    if (o->features.on[j] && row->specific &&
                        (pass ? (row->causes >> f->cause & 1) : row->reading == f->cause))
                        d = row;
                }
            ml_dg_why(f, "%s", d ? _(d->story) : _("named by this log's evidence"));
            ml_dg_ev_event(f, x->e);
        }
        if (!f->n_fix || x->e->kind == ML_OOM_GGML)
            ml_dg_cause_fixes(x, f);
    }
    if (!n) {
        struct ml_finding *f = &keep[n++];
        *f = empty;
        f->cause = ML_CAUSE_UNKNOWN;
        f->confidence = r->p_none_permille;
        ml_dg_why(
            f, _("no cause is named by this text: the message carries no size, phase or timing clue that singles one "
                 "out"));
        ml_dg_ev_event(f, x->e);
    }
    /* A full card in a training run: making room works whatever filled it, so the first finding
     * also offers the model states' relief (sharding, offload), the costliest fixes last. */
    if (o->features.on[ML_EV_N_FULL] && x->training && keep[0].cause != ML_CAUSE_MODEL_STATES &&
        keep[0].cause != ML_CAUSE_UNKNOWN && keep[0].n_fix < ML_DIAG_MAX_FIXES)
        ml_dg_model_states_fixes(x, &keep[0]);
    memcpy(o->f, keep, sizeof(o->f[0]) * n);
    o->n_findings = n;
}

/* What would tell the first two candidates apart, when the answer is "cannot tell"
 * (validation/DIAGNOSE.md): the sources of the evidence rows that name one of them and not the
 * other and that this log lacks, by their weight, closing with the config when none was given;
 * with no candidate, the frames, the step, the config and the device's process list. */
void ml_dg_decide_by(struct ctx *x)
{
    static const char *const src[ML_SRC_COUNT] = {
        [ML_SRC_MESSAGE] = N_("the whole OOM message (every number after \"Tried to allocate\")"),
        [ML_SRC_FRAMES] = N_("the frames above the cut: the whole traceback of the failing rank"),
        [ML_SRC_STEP] = N_("the step: the progress, save and eval lines before the OOM"),
        [ML_SRC_SMI] =
            N_("nvidia-smi --query-compute-apps=pid,used_memory at the failure (rocm-smi --showpids, npu-smi info)"),
        [ML_SRC_CONFIG] =
            N_("the config (--config/--deepspeed, or --model): model size, method, batch, sequence, ZeRO stage"),
        [ML_SRC_MODEL] = N_("the model (--model): its parameters, vocabulary and heads price the request"),
        [ML_SRC_SUMMARY] = N_("torch.cuda.memory_summary() at the failure: how the cache is split"),
        [ML_SRC_DS_LOG] = N_("DeepSpeed's log: allocator cache-flush warnings, see_memory_usage lines"),
        [ML_SRC_DEVICE] = N_("the device and its driver: its per-allocation limit and the memory it reports"),
        [ML_SRC_DMESG] = N_("dmesg -T | grep -i -e oom -e 'killed process' (the kernel's OOM-killer record)"),
        [ML_SRC_ASYNC] = N_("CUDA_LAUNCH_BLOCKING=1 (the call that failed), torch.cuda.mem_get_info() at the failure "
                            "(a full card or a driver error), CUDA_VISIBLE_DEVICES (the right device)"),
    };
    struct ml_diagnosis *o = x->out;
    const struct ml_ranking *r = &o->ranking;
    bool want[ML_SRC_COUNT] = {0};
    int32_t best[ML_SRC_COUNT] = {0};
    const struct ml_oom_event *e = x->e;
    bool have_config = x->su->train || x->su->arch || x->su->serve || x->su->params;
    if (e->kind == ML_OOM_RUNTIME)
        want[ML_SRC_ASYNC] = true, best[ML_SRC_ASYNC] = 1 << 30;
    if (r->n) {
        uint32_t c1 = 1u << r->cause[0], c2 = r->n > 1 ? 1u << r->cause[1] : 0;
        for (unsigned i = 0; i < ML_EV_COUNT; i++) {
            const struct ml_evidence_def *d = ml_evidence_row((enum ml_evidence_id)i);
            if (o->features.on[i] || !d->specific || !(d->causes & c1) == !(d->causes & c2))
                continue;
            int32_t v = abs(x->w->w[i][d->causes & c1 ? r->cause[0] : r->cause[1]]);
            want[d->source] = true;
            if (v >= best[d->source])
                best[d->source] = v + 1;
        }
    } else {
        want[ML_SRC_FRAMES] = want[ML_SRC_STEP] = want[ML_SRC_CONFIG] = want[ML_SRC_SMI] = true;
        best[ML_SRC_FRAMES] = 4, best[ML_SRC_STEP] = 3, best[ML_SRC_CONFIG] = 2, best[ML_SRC_SMI] = 1;
    }
    /* Not what the log already has: a complete message, the frames of a known phase. */
    if (!e->cut && (e->has & (ML_OOM_F_REQUESTED | ML_OOM_F_TOTAL)))
        want[ML_SRC_MESSAGE] = false;
    if (e->phase != ML_OPH_UNKNOWN)
        want[ML_SRC_FRAMES] = false;
    if (have_config)
        want[ML_SRC_CONFIG] = want[ML_SRC_MODEL] = false;
    /* an inference run (a serving engine, a script's generate) has no steps, saves or evals, no
     * DeepSpeed training log, and its settings are the engine's, not a training config's */
    bool infer = (o->runs & (ML_RUN_SERVING | ML_RUN_OFFLINE)) && !(o->runs & ML_RUN_TRAINING);
    if (infer)
        want[ML_SRC_STEP] = want[ML_SRC_DS_LOG] = false;
    const char *config =
        infer ? N_("the engine's settings (--model and its flags: max_model_len, memory utilization, sequences, "
                   "tensor parallelism)")
              : src[ML_SRC_CONFIG];
    o->n_decide = 0;
    while (o->n_decide < ML_DIAG_MAX_DECIDE - (have_config ? 0 : 1)) {
        int k = -1;
        for (int i = 0; i < ML_SRC_COUNT; i++)
            if (want[i] && i != ML_SRC_CONFIG && (k < 0 || best[i] > best[k]))
                k = i;
        if (k < 0)
            break;
        want[k] = false;
        (void)snprintf(o->decide_by[o->n_decide++], sizeof(o->decide_by[0]), "%s", _(src[k]));
    }
    if (!have_config)
        (void)snprintf(o->decide_by[o->n_decide++], sizeof(o->decide_by[0]), "%s", _(config));
}
