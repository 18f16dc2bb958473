/*
 * rules.h - the shape of a diagnosis rule row (rules.c) and the texts and fixes of the rows that
 * compute them (rule_texts.c). Private to lib/diagnose.
 */
#ifndef ML_DIAG_RULES_H
#define ML_DIAG_RULES_H

#include "diag_int.h"

/* The families of rows: a row marked `last` that holds ends its family. */
enum rule_family {
    F_MISLEADING,
    F_OVERSIZE,
    F_SIBLINGS,
    F_OTHER_PROCESS,
    F_PROCESS_CHECKS,
    F_SERVING,
    F_KNOWN_ISSUES,
    F_LIBRARY,
    F_HOST,
    F_FRAGMENTATION,
    F_PHASE,
    F_FINGERPRINTS,
    F_TIMING,
    F_CONFIG,
    F_FP32,
};

/* The lines a finding cites, in order (each only when the log has it). */
enum rule_cite {
    C_NONE,
    C_EVENT,          /* the OOM message's own line */
    C_PHASE,          /* the frame that named the phase */
    C_PHASE_IF_EAGER, /* that frame, when it is eager attention's */
    C_TIMING,         /* the line that set the timing (a save, an eval, a step) */
    C_SAVE_TIMING,    /* that line, when the OOM comes right after a save */
    C_CPU,            /* the CPU-memory line */
    C_PROFILE,        /* a serving engine's profiling line */
    C_FLUSH,          /* DeepSpeed's allocator-cache flush warning */
    C_MEM,            /* DeepSpeed's see_memory_usage line */
    C_ALLOWED,        /* a note: the bytes set_per_process_memory_fraction allows */
    C_NO_BLOCKS,      /* a note: vLLM's "# GPU blocks: 0" */
    C_ARGS,           /* the first line of the run settings the log prints */
};

/* How a row's fixed text takes its argument. */
enum rule_arg { ARG_NONE, ARG_CUE /* "%s" is the phase's cue: the frame's function, else the phase */ };

/* A fix a row offers: an advice row (finding.c) or, with advice A_COUNT, a knob of the knob
 * table (lib/fit/knobs.c) with its value (0: the knob's own rule). */
struct rule_fix {
    enum advice_id advice;
    enum ml_fix_kind kind;
    enum ml_knob_id knob;
    uint64_t value;
    const char *action; /* N_() */
};

struct rule {
    enum rule_family family;
    bool last;                              /* ends its family when it holds */
    enum ml_cause cause;                    /* ML_CAUSE_COUNT: no finding, only `then` */
    bool (*when)(const struct ctx *x);      /* the condition; NULL: always */
    uint32_t weight;                        /* its confidence on the fixed scale (rules.c) */
    uint32_t (*weigh)(const struct ctx *x); /* or the confidence computed; NULL: weight */
    const char *why;                        /* its text, N_() (arg says how it takes its argument) */
    enum rule_arg arg;
    void (*say)(struct ctx *x, struct ml_finding *f); /* or the text computed */
    enum rule_cite cite[4];
    struct rule_fix fix[3];
    void (*then)(struct ctx *x, struct ml_finding *f); /* fixes, notes and checks that compute */
};

/* The rows, in the order they run (rules.c; tests/oom/test_fix_rows.c reads them). */
const struct rule *ml_dg_rule_rows(size_t *n);

/* Texts that compute (rule_texts.c). */
void ml_dg_say_format_error(struct ctx *x, struct ml_finding *f);
void ml_dg_say_empty_card(struct ctx *x, struct ml_finding *f);
void ml_dg_say_free_covers(struct ctx *x, struct ml_finding *f);
void ml_dg_say_over_card(struct ctx *x, struct ml_finding *f);
void ml_dg_say_siblings(struct ctx *x, struct ml_finding *f);
void ml_dg_say_others(struct ctx *x, struct ml_finding *f);
void ml_dg_say_outside(struct ctx *x, struct ml_finding *f);
void ml_dg_say_kv_small(struct ctx *x, struct ml_finding *f);
void ml_dg_say_vllm_free(struct ctx *x, struct ml_finding *f);
void ml_dg_say_vllm_held(struct ctx *x, struct ml_finding *f);
void ml_dg_say_nccl(struct ctx *x, struct ml_finding *f);
void ml_dg_say_host_killer(struct ctx *x, struct ml_finding *f);
void ml_dg_say_host_huge(struct ctx *x, struct ml_finding *f);
void ml_dg_say_host_alloc(struct ctx *x, struct ml_finding *f);
void ml_dg_say_sigkill(struct ctx *x, struct ml_finding *f);
void ml_dg_say_frag(struct ctx *x, struct ml_finding *f);
void ml_dg_say_loss(struct ctx *x, struct ml_finding *f);
void ml_dg_say_copy(struct ctx *x, struct ml_finding *f);
void ml_dg_say_logits(struct ctx *x, struct ml_finding *f);
void ml_dg_note_eager(struct ctx *x, struct ml_finding *f);
void ml_dg_say_after_save(struct ctx *x, struct ml_finding *f);
void ml_dg_say_mid_run(struct ctx *x, struct ml_finding *f);
void ml_dg_say_ma_rising(struct ctx *x, struct ml_finding *f);
void ml_dg_say_config_eager(struct ctx *x, struct ml_finding *f);
void ml_dg_say_fp32(struct ctx *x, struct ml_finding *f);
void ml_dg_say_log_scores(struct ctx *x, struct ml_finding *f);
void ml_dg_say_log_logits(struct ctx *x, struct ml_finding *f);
void ml_dg_say_log_shard(struct ctx *x, struct ml_finding *f);

/* The fragmentation row's condition and weight (rule_texts.c). */
bool ml_dg_frag_holds(const struct ctx *x);
uint32_t ml_dg_frag_weight(const struct ctx *x);

/* Fixes, notes and checks that compute (rule_texts.c). */
void ml_dg_stop_others(struct ctx *x, struct ml_finding *f);
void ml_dg_check_own_line(struct ctx *x, struct ml_finding *f);
void ml_dg_check_nvml_zero(struct ctx *x, struct ml_finding *f);
void ml_dg_kv_small_fixes(struct ctx *x, struct ml_finding *f);
void ml_dg_vllm_free_fixes(struct ctx *x, struct ml_finding *f);
void ml_dg_check_preemptions(struct ctx *x, struct ml_finding *f);
void ml_dg_known_issue_rows(struct ctx *x, struct ml_finding *f);
void ml_dg_check_launch_blocking(struct ctx *x, struct ml_finding *f);
void ml_dg_check_nccl_cumem(struct ctx *x, struct ml_finding *f);
void ml_dg_host_fixes(struct ctx *x, struct ml_finding *f);
void ml_dg_frag_fixes(struct ctx *x, struct ml_finding *f);
void ml_dg_forward_fixes(struct ctx *x, struct ml_finding *f);
void ml_dg_serving_runtime_fixes(struct ctx *x, struct ml_finding *f);
void ml_dg_after_save_fixes(struct ctx *x, struct ml_finding *f);
void ml_dg_mid_run_fixes(struct ctx *x, struct ml_finding *f);

#endif /* ML_DIAG_RULES_H */
