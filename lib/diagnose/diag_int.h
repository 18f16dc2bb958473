/*
 * diag_int.h - what the files of the diagnosis share (private to lib/diagnose): the context a
 * diagnosis is built in, the findings and fixes it writes, and the advice rows.
 *
 * The files, one job each: diagnose.c (the driver: the primary event, the ledgers, the order of
 * the output), rules.c (the rule rows and the loop that runs them), rule_texts.c (the rows' texts
 * and fixes that compute), known_issues.c (regressions of the stack), finding.c (findings,
 * evidence lines, fixes and the advice table), price.c (writing and pricing the fixes),
 * features.c (the evidence rows the log shows and the ranking's findings), runs.c (advice that
 * fits the run), request.c (the failing request's size), evidence.c (the evidence model),
 * settings.c (the log's facts as run settings).
 */
#ifndef ML_DIAG_INT_H
#define ML_DIAG_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "memledger/diagnose.h"
#include "memledger/units.h"

/* ---- the context ------------------------------------------------------------------------- */

struct ctx {
    const struct ml_incident *inc;
    const struct ml_diag_setup *su;
    struct ml_diagnosis *out;
    const struct ml_oom_event *e; /* the primary event as the rules see it: ev */
    struct ml_oom_event ev;       /* its copy, the numbers of failed relations masked (C2) */
    bool has_cap, has_free, has_alloc, has_unalloc, has_req;
    uint64_t cap, free, alloc, req, held, used;
    uint64_t unalloc;                    /* reserved by the allocator but unallocated (stranded) */
    const char *var;                     /* the allocator variable for this device, NULL when none */
    const char *no_exp;                  /* why expandable segments must not be suggested, NULL if they may */
    bool training;                       /* the log or setup is a training run */
    bool serving;                        /* a serving engine */
    bool has_ledger;                     /* the setup gives a ledger */
    struct ml_train t0;                  /* the setup's settings (copy, for what-ifs) */
    struct ml_cluster c0;                /* the setup's cluster (copy, for what-ifs: training or serving) */
    bool engine;                         /* the setup names a serving engine */
    bool has_serve_ledger;               /* the setup gives a serving engine's ledger */
    struct ml_infer s0;                  /* its settings (copy, for what-ifs) */
    struct ml_knob_ctx kx;               /* how knobs apply here (the allocator variable, the engine) */
    enum ml_dialect dialect;             /* the trainer the YAML settings are written for (COUNT: unknown) */
    const struct ml_evidence_weights *w; /* the weights that rank (setup's, else the committed fit) */
};

static inline bool has(const struct ml_oom_event *e, uint32_t f)
{
    return (e->has & f) == f;
}

/* The kind's class from the kinds list (oom.h ML_OOM_KINDS): 0 accounted, 1 device, 2 host. */
static inline int kind_class(enum ml_oom_kind k)
{
    return (int)ml_oom_kind_class(k);
}

/* The card is full and the request says nothing about size (analysis 3, last point). */
static inline bool tiny_request(const struct ctx *x)
{
    return x->has_req && x->req <= 64 * ML_MIB;
}

/* ---- findings, evidence lines, fixes (finding.c) ----------------------------------------- */

/* Fixes that are no knob of the ledger, each once with its setting and its place on the one
 * cost scale (finding.c, the advice table). */
enum advice_id {
    A_KILL_CUDA,
    A_KILL_HIP,
    A_KILL_NPU,
    A_LIST_CUDA,
    A_NCCL_DEBUG,
    A_DIST_DEBUG,
    A_VRAM_INFO,
    A_FRACTION_ONE,
    A_RECORD_HISTORY,
    A_TASK_QUEUE,
    A_EXPANDABLE_OFF,
    A_MAX_SPLIT,
    A_SAVE_CALLBACK,
    A_SAVE_STEPS,
    A_EVAL_CPU,
    A_NO_FP32,
    A_NCCL_FRACTION,
    A_EMPTY_CACHE,
    A_NCCL_MARGIN,
    A_SET_DEVICE,
    A_SHM,
    A_LOW_CPU_MEM,
    A_FEWER_RANKS,
    A_HOST_RAM,
    A_MORE_GPUS,
    A_SMALLER_TENSOR,
    A_LORA,
    A_LOAD_4BIT,
    A_GENERATE_SMALLER,
    A_TGI_FRACTION,
    A_SGLANG_FRACTION,
    A_SGLANG_FRACTION_UP,
    A_TGI_PREFILL,
    A_TGI_SHARDS,
    A_TGI_QUANTIZE,
    A_RETRY_FREE,
    A_MPS_WATERMARK,
    A_PAGEFILE,
    A_ENFORCE_EAGER,
    A_SGLANG_NO_GRAPH,
    A_GGML_LAYERS,
    A_GGML_CTX,
    A_GGML_KV,
    A_COUNT
};

struct ml_finding *ml_dg_finding(struct ctx *x, enum ml_cause c, uint32_t conf);
void ml_dg_why(struct ml_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ml_dg_ev_line(struct ml_finding *f, uint32_t file, uint64_t line, const char *text);
void ml_dg_ev_event(struct ml_finding *f, const struct ml_oom_event *e);
void ml_dg_ev_ref(struct ml_finding *f, const struct ml_oom_ref *r);
void ml_dg_ev_note(struct ml_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct ml_fix *ml_dg_add_fix(struct ml_finding *f, enum ml_fix_kind k, uint32_t cost, const char *action, bool *fresh);
struct ml_fix *ml_dg_knob(struct ml_finding *f, enum ml_fix_kind k, enum ml_knob_id id, uint64_t value,
                          const char *action);
struct ml_fix *ml_dg_advise(struct ml_finding *f, enum advice_id a, const char *action);
/* The kind of fix advice row a is (ML_FIX_COUNT out of range). */
enum ml_fix_kind ml_dg_advice_kind(enum advice_id a);
void ml_dg_fix_note(struct ml_fix *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ml_dg_fix_saves_log(struct ml_fix *x, uint64_t bytes);
void ml_dg_check(struct ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ml_dg_serve_batch_fix(const struct ctx *x, struct ml_finding *f, const char *action);
/* Whether the log's vLLM may be V0 prefilling whole prompts (no chunked prefill): no V1 sign, no
 * version of 0.8 or later, max_model_len not over 32K (rule_texts.c). */
bool ml_dg_vllm_may_prefill_whole(const struct ctx *x);
void ml_dg_serve_share_fix(const struct ctx *x, struct ml_finding *f, const char *action);
void ml_dg_device_settings(struct ctx *x);
struct ml_fix *ml_dg_alloc_fix(struct ctx *x, struct ml_finding *f);
void ml_dg_model_states_fixes(struct ctx *x, struct ml_finding *f);
void ml_dg_activation_fixes(struct ctx *x, struct ml_finding *f);
void ml_dg_eager_fixes(struct ctx *x, struct ml_finding *f);
void ml_dg_cause_fixes(struct ctx *x, struct ml_finding *f);

/* ---- the rules (rules.c, rule_texts.c, known_issues.c) ----------------------------------- */

void ml_dg_run_rules(struct ctx *x);
void ml_dg_known_issues(struct ctx *x);
/* The evidence rows the stack's known issues put on (features.c). */
void ml_dg_issue_features(const struct ctx *x, struct ml_features *f);
/* An fp32 copy made while loading or in the optimizer is the designed master copy (issue 24). */
bool ml_dg_designed_fp32(const struct ml_oom_event *e);
/* A tiny request failed inside NCCL or cuBLAS: the card was already full (issue 24 item 4). */
bool ml_dg_lib_tiny(const struct ctx *x);

/* ---- the request's size (request.c) -------------------------------------------------------- */

uint64_t ml_dg_setup_params(const struct ctx *x);
int ml_dg_copy_match(const struct ctx *x);
int ml_dg_logits_match(const struct ctx *x, uint64_t *want);
bool ml_dg_eager_match(const struct ctx *x, int *k, uint64_t *smin, uint64_t *smax);
void ml_dg_big_request(struct ctx *x);
/* The run settings the log prints size the request (issue 24 item 5): batch x heads x s^2 x k B,
 * batch x s x V x k B, params x k B / the GPUs the model is split over. */
bool ml_dg_log_scores(const struct ctx *x, uint32_t *heads, uint32_t *k);
bool ml_dg_log_logits(const struct ctx *x, uint64_t *vocab, uint32_t *k);
bool ml_dg_log_shard(const struct ctx *x, uint32_t *world, uint32_t *k);

/* ---- pricing (price.c) --------------------------------------------------------------------- */

bool ml_dg_run_ledger(const struct ml_diag_setup *su, const struct ml_train *t, const struct ml_cluster *c,
                      struct ml_ledger *l);
bool ml_dg_run_serve(struct ctx *x, const struct ml_infer *s, struct ml_serve *sv);
void ml_dg_generic_setting(struct ctx *x, struct ml_fix *f, enum ml_dialect dialect);
void ml_dg_settle(struct ctx *x, struct ml_fix *f);
void ml_dg_zero3_action(struct ctx *x, struct ml_fix *k);

/* ---- the evidence and the ranking (features.c), the run's fixes (runs.c) ------------------ */

void ml_dg_features(const struct ctx *x, struct ml_features *f);
void ml_dg_rank_findings(struct ctx *x);
void ml_dg_decide_by(struct ctx *x);
void ml_dg_fit_fixes_to_run(struct ctx *x);
/* A fix whose knob has no key in the run's dialect: its setting cleared, a note saying so
 * (advice, never another framework's key). */
void ml_dg_unwritable(struct ctx *x);
/* A serving fix whose price shows it changes nothing (chunked prefill that gains no KV cache). */
void ml_dg_drop_no_change(struct ctx *x);

#endif /* ML_DIAG_INT_H */
