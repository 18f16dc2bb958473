/*
 * rules.c - the diagnosis rules as rows, and the one loop that runs them.
 *
 * Sources, cited at each row: the shared field guide reference/oom-messages.md (sections A1-A11
 * for what each message means, "Analysis" 1-8 and "Ten observations" 1-10 for the decision
 * tree; docs/cli/diagnose.md) and reference/accounting-notes.md (what each knob costs). A row
 * names its cause, the condition it holds on (a small predicate where it must compute), its
 * weight on the fixed confidence scale, its text, the lines it cites and its fixes:
 *   900  the message proves it (a "this process" line next to another process's line, a
 *        request larger than the device, vLLM's own KV-cache arithmetic, a kernel OOM record)
 *   800  a strong numeric rule (stranded cache >= request and > 10 % of reserved; a size
 *        fingerprint within 3 %)
 *   700  the phase from the frames names the tensor class (load, optimizer step, loss, save, eval)
 *   600  a rule on numbers that the field guide calls likely, or a phase plus a setting
 *   450  timing alone (after a save, mid-run step), or a weaker numeric rule
 *   350  background: the card is simply full and the request carries no size information
 * The rows run in their order; a finding of a cause is written once (its first text wins, its
 * evidence lines and fixes gather, ml_dg_finding). A row marked `last` ends its family when it
 * holds (an if / else-if chain of the field guide). The evidence model ranks the causes
 * (features.c, evidence.c); these rows give the findings their texts and fixes.
 */
#include <string.h>

#include "diag_int.h"
#include "i18n.h"
#include "rules.h"

/* ---- conditions ---------------------------------------------------------------------------- */

static bool k_impossible(const struct ctx *x)
{
    return x->e->kind == ML_OOM_IMPOSSIBLE;
}
static bool k_driver(const struct ctx *x)
{
    return x->e->kind == ML_OOM_DRIVER;
}
static bool k_kv_small(const struct ctx *x)
{
    return x->e->kind == ML_OOM_VLLM_KV_TOO_SMALL;
}
static bool k_no_cache(const struct ctx *x)
{
    return x->e->kind == ML_OOM_VLLM_NO_CACHE;
}
static bool k_vllm_free(const struct ctx *x)
{
    return x->e->kind == ML_OOM_VLLM_FREE_MEMORY;
}
static bool k_warmup(const struct ctx *x)
{
    return x->e->kind == ML_OOM_VLLM_WARMUP;
}
/* SGLang's own refusal to size its KV pool ("Not enough memory. Please try to increase
 * --mem-fraction-static.": model_runner.py init_memory_pool) against its other out-of-memory
 * errors (a prefill at run time). */
static bool k_sglang_pool(const struct ctx *x)
{
    return x->e->kind == ML_OOM_SGLANG && ml_oom_engine_pool_refused(x->e);
}
static bool k_sglang(const struct ctx *x)
{
    return x->e->kind == ML_OOM_SGLANG && !ml_oom_engine_pool_refused(x->e);
}
static bool k_library(const struct ctx *x)
{
    return x->e->kind == ML_OOM_CUBLAS || x->e->kind == ML_OOM_CUDNN;
}
static bool k_runtime(const struct ctx *x)
{
    return x->e->kind == ML_OOM_RUNTIME;
}
static bool k_nccl(const struct ctx *x)
{
    return x->e->kind == ML_OOM_NCCL;
}
static bool k_npu_workspace(const struct ctx *x)
{
    return x->e->kind == ML_OOM_NPU_WORKSPACE;
}
static bool k_host_killer(const struct ctx *x)
{
    return x->e->kind == ML_OOM_HOST_KILLER;
}
static bool k_host_alloc(const struct ctx *x)
{
    return x->e->kind == ML_OOM_HOST_ALLOC;
}
static bool k_host_ray(const struct ctx *x)
{
    return x->e->kind == ML_OOM_HOST_RAY;
}
static bool k_host_commit(const struct ctx *x)
{
    return x->e->kind == ML_OOM_HOST_COMMIT;
}
static bool k_sigkill(const struct ctx *x)
{
    return x->e->kind == ML_OOM_HOST_SIGKILL;
}
static bool k_nccl_shm(const struct ctx *x)
{
    return x->e->kind == ML_OOM_NCCL_SHM;
}

static bool format_error(const struct ctx *x)
{
    return x->e->format_error;
}

/* A1 traps: nothing allocated and the card nearly free: the very first allocation fails. */
static bool empty_card(const struct ctx *x)
{
    return x->has_alloc && x->alloc == 0 && x->has_unalloc && x->unalloc == 0 && x->has_free && x->has_cap &&
           x->free >= x->cap / 10 * 9;
}

/* The device reports more free than the request, with a margin (a quarter and 512 MiB). */
static bool free_covers(const struct ctx *x)
{
    return x->has_req && x->has_free && x->free >= x->req + x->req / 4 && x->free - x->req >= 512 * ML_MIB &&
           x->e->kind == ML_OOM_ALLOCATOR;
}

static bool over_card(const struct ctx *x)
{
    return x->has_req && x->has_cap && x->req > x->cap && x->e->kind != ML_OOM_IMPOSSIBLE;
}

static bool siblings(const struct ctx *x)
{
    return x->out->procs.n_siblings >= 2;
}
static bool others_listed(const struct ctx *x)
{
    return x->out->procs.n_others && x->out->procs.others >= ML_GIB;
}

/* Analysis 1: in use well beyond what this process holds (~1 GiB context + 5 % NCCL/library,
 * the A1 trap), and it holds less than nine tenths of the card. */
static bool outside_gap(const struct ctx *x)
{
    uint64_t margin = ML_GIB + (x->has_cap ? x->cap / 20 : 0);
    return !x->e->n_procs && x->has_cap && x->has_free && x->has_alloc && x->used > x->held + margin &&
           x->held < x->cap / 10 * 9;
}

static bool own_line(const struct ctx *x)
{
    return x->out->procs.own >= 0;
}
static bool nvml_zero(const struct ctx *x)
{
    return has(x->e, ML_OOM_F_THIS_PROCESS) && x->e->this_process == 0 && x->has_alloc && x->alloc > 0;
}

static bool engine_kind_preempted(const struct ctx *x)
{
    enum ml_oom_kind k = x->e->kind;
    return x->inc->preemptions && (k == ML_OOM_VLLM_KV_TOO_SMALL || k == ML_OOM_VLLM_NO_CACHE ||
                                   k == ML_OOM_VLLM_FREE_MEMORY || k == ML_OOM_VLLM_WARMUP || k == ML_OOM_SGLANG);
}

/* 2 TiB is the host RAM of the largest single training nodes (DGX H100/H200: 2 TB); a request
 * above it is a wrong shape, not a shortage. */
static bool host_huge(const struct ctx *x)
{
    return x->e->kind == ML_OOM_HOST_ALLOC && has(x->e, ML_OOM_F_REQUESTED) && x->e->requested >= 2 * (uint64_t)1 << 40;
}

static bool ph_load(const struct ctx *x)
{
    return x->e->phase == ML_OPH_LOAD;
}
static bool ph_optimizer(const struct ctx *x)
{
    return x->e->phase == ML_OPH_OPTIMIZER_STEP;
}
static bool ph_loss(const struct ctx *x)
{
    return x->e->phase == ML_OPH_LOSS;
}
static bool ph_backward(const struct ctx *x)
{
    return x->e->phase == ML_OPH_BACKWARD;
}
static bool ph_forward(const struct ctx *x)
{
    return x->e->phase == ML_OPH_FORWARD;
}
static bool ph_save(const struct ctx *x)
{
    return x->e->phase == ML_OPH_CHECKPOINT_SAVE;
}
static bool ph_eval(const struct ctx *x)
{
    return x->e->phase == ML_OPH_EVAL;
}
static bool ph_generate(const struct ctx *x)
{
    return x->e->phase == ML_OPH_GENERATE;
}
static bool ph_comm(const struct ctx *x)
{
    return x->e->phase == ML_OPH_COMMUNICATION && !x->e->format_error;
}
static bool ph_serving_alloc(const struct ctx *x)
{
    return x->e->phase == ML_OPH_SERVING_RUNTIME && x->e->kind == ML_OOM_ALLOCATOR;
}

static bool ckpt_off(const struct ctx *x)
{
    return x->su->train && x->su->train->grad_ckpt == ML_GC_OFF;
}
static bool backward_no_ckpt(const struct ctx *x)
{
    return ph_backward(x) && ckpt_off(x) && !x->e->ckpt_frames;
}
static bool forward_eager(const struct ctx *x)
{
    return ph_forward(x) && (x->e->eager_frames || (x->su->train && x->su->train->attn == ML_ATTN_EAGER));
}

static bool copy_fp(const struct ctx *x)
{
    return ml_dg_copy_match(x) != 0;
}
static bool logits_fp(const struct ctx *x)
{
    uint64_t want;
    return ml_dg_logits_match(x, &want) != 0;
}
static bool eager_fp(const struct ctx *x)
{
    int k;
    uint64_t smin, smax;
    return ml_dg_eager_match(x, &k, &smin, &smax);
}

/* The run settings the log prints size the request (issue 24 item 5; request.c). */
static bool log_scores(const struct ctx *x)
{
    uint32_t h, k;
    return ml_dg_log_scores(x, &h, &k);
}
static bool log_logits(const struct ctx *x)
{
    uint64_t v;
    uint32_t k;
    return ml_dg_log_logits(x, &v, &k);
}
static bool log_shard(const struct ctx *x)
{
    uint32_t w, k;
    return ml_dg_log_shard(x, &w, &k);
}

static bool t_after_save(const struct ctx *x)
{
    return x->e->timing == ML_TIM_AFTER_SAVE;
}
static bool t_at_save(const struct ctx *x)
{
    return x->e->timing == ML_TIM_AT_SAVE;
}
static bool t_at_eval(const struct ctx *x)
{
    return x->e->timing == ML_TIM_AT_EVAL;
}
static bool t_resume(const struct ctx *x)
{
    return x->e->timing == ML_TIM_RESUME;
}
static bool t_first_step(const struct ctx *x)
{
    enum ml_oom_phase p = x->e->phase;
    return x->e->timing == ML_TIM_FIRST_STEP && (p == ML_OPH_UNKNOWN || p == ML_OPH_FORWARD || p == ML_OPH_BACKWARD);
}
static bool first_step_no_ckpt(const struct ctx *x)
{
    return t_first_step(x) && ckpt_off(x);
}
static bool first_step_states(const struct ctx *x)
{
    return t_first_step(x) && !ckpt_off(x);
}
static bool t_mid_run(const struct ctx *x)
{
    enum ml_oom_phase p = x->e->phase;
    return x->e->timing == ML_TIM_MID_RUN && x->e->step > 1 &&
           (p == ML_OPH_UNKNOWN || p == ML_OPH_FORWARD || p == ML_OPH_BACKWARD || p == ML_OPH_LOSS);
}
static bool chained(const struct ctx *x)
{
    return x->e->chained;
}

/* DeepSpeed's MA (see_memory_usage) grows by more than 5 % over three samples or more. */
static bool ma_rising(const struct ctx *x)
{
    const struct ml_incident *inc = x->inc;
    return inc->mem_samples >= 3 && inc->ma_rising && inc->ma_last > inc->ma_first + inc->ma_first / 20;
}

/* Settings from the config name a cause directly (observation 10): a training run, a device event. */
static bool config_run(const struct ctx *x)
{
    return x->su->train && kind_class(x->e->kind) != 2 && !x->serving;
}
static bool config_eager(const struct ctx *x)
{
    return config_run(x) && x->su->train->attn == ML_ATTN_EAGER && x->e->phase != ML_OPH_LOAD &&
           x->e->phase != ML_OPH_OPTIMIZER_STEP;
}
static bool config_no_ckpt(const struct ctx *x)
{
    enum ml_oom_phase p = x->e->phase;
    return config_run(x) && ckpt_off(x) &&
           (p == ML_OPH_FORWARD || p == ML_OPH_BACKWARD || p == ML_OPH_LOSS || p == ML_OPH_UNKNOWN);
}

/* Observation 9: an explicit fp32 upcast in the frames of the failing call, not the designed one. */
static bool fp32_frames(const struct ctx *x)
{
    return x->e->fp32_frames && !x->e->format_error && !ml_dg_designed_fp32(x->e);
}

/* ---- weights that compute ------------------------------------------------------------------ */

static bool big_request(const struct ctx *x)
{
    return x->has_req && x->req >= ML_GIB;
}
static uint32_t w_free_covers(const struct ctx *x)
{
    return has(x->e, ML_OOM_F_ALLOWED) ? 500 : 600;
}
static uint32_t w_over_card(const struct ctx *x)
{
    return x->has_alloc && x->alloc == 0 ? 550 : 900;
}
static uint32_t w_comm(const struct ctx *x)
{
    return x->e->kind == ML_OOM_NCCL ? 700 : 500;
}
static uint32_t w_loss(const struct ctx *x)
{
    return big_request(x) ? 700 : 550;
}
static uint32_t w_backward(const struct ctx *x)
{
    return big_request(x) ? 550 : 450;
}
static uint32_t w_forward(const struct ctx *x)
{
    return big_request(x) ? 500 : 350;
}
static uint32_t w_forward_eager(const struct ctx *x)
{
    return x->e->eager_frames ? 550 : 450;
}
static uint32_t w_config_eager(const struct ctx *x)
{
    return x->e->eager_frames ? 550 : 400;
}
static uint32_t w_fp32(const struct ctx *x)
{
    return big_request(x) ? 750 : 500;
}

/* Analysis 5: right after a save -> gather leftovers or fragmentation (transformers#23307,
 * DeepSpeed#3582, verl#5455; accounting notes §1.9); under ZeRO-3, by whether it gathers. */
static uint32_t w_after_save(const struct ctx *x)
{
    const struct ml_train *t = x->su->train;
    if (t && t->deepspeed && t->zero.stage == 3)
        return t->zero.gather_16bit_on_save ? 550 : 400;
    return 450;
}

/* A11 caveat: SIGKILL also comes from schedulers and people; host OOM is certain only with a
 * kernel/cgroup record, likely when it coincides with load/save/offload or high CPU memory. */
static uint32_t w_sigkill(const struct ctx *x)
{
    const struct ml_incident *inc = x->inc;
    enum ml_oom_timing t = x->e->timing;
    if (inc->kernel_oom_lines)
        return 900;
    if (inc->cpu_percent_permille >= 900 || t == ML_TIM_LOAD || t == ML_TIM_AT_SAVE || t == ML_TIM_AFTER_SAVE)
        return 700;
    return 550;
}

/* ---- the rows ------------------------------------------------------------------------------- */

#define ADV(a, text)                                                                                                   \
    {                                                                                                                  \
        (a), ML_FIX_COUNT, ML_KNOB_NONE, 0, (text)                                                                     \
    }
#define KNOB(kind, id, value, text)                                                                                    \
    {                                                                                                                  \
        A_COUNT, (kind), (id), (value), (text)                                                                         \
    }
#define NO_FINDING ML_CAUSE_COUNT

static const struct rule rules[] = {
    /* The message misleads (analysis 8, A1 traps, A4, A7): the first that holds. */
    {.family = F_MISLEADING,
     .last = true,
     .cause = ML_CAUSE_MISLEADING,
     .when = k_impossible,
     .weight = 900,
     .why = N_("an impossible request (more than 1 EB) is a symptom of an earlier failure, usually a NCCL timeout: "
               "read the first error in the log"),
     .cite = {C_EVENT},
     .fix = {ADV(A_NCCL_DEBUG, N_("read the first error of the run (the collective that timed out)"))}},
    /* Analysis 4: c10d_logger / _tensor_str -> the OOM happened while formatting an error. */
    {.family = F_MISLEADING,
     .last = true,
     .cause = ML_CAUSE_MISLEADING,
     .when = format_error,
     .weight = 850,
     .say = ml_dg_say_format_error,
     .cite = {C_PHASE, C_EVENT},
     .fix = {ADV(A_DIST_DEBUG,
                 N_("read the error the logger was formatting (the collective call and its arguments)"))}},
    {.family = F_MISLEADING,
     .last = true,
     .cause = ML_CAUSE_MISLEADING,
     .when = k_driver,
     .weight = 650,
     .why = N_("\"CUDA driver error: out of memory\" comes from the expandable-segments (cuMemCreate) path, seen on "
               "Jetson and WSL2 while memory is still free"),
     .cite = {C_EVENT},
     .fix = {ADV(A_EXPANDABLE_OFF, N_("turn expandable segments off"))}},
    /* The very first allocation fails on an empty card (A4: false OOMs on the first allocation,
     * llm-scaler#305; unified-memory APUs that expose the wrong pool). */
    {.family = F_MISLEADING,
     .last = true,
     .cause = ML_CAUSE_MISLEADING,
     .when = empty_card,
     .weight = 600,
     .say = ml_dg_say_empty_card,
     .cite = {C_EVENT},
     .fix = {ADV(A_VRAM_INFO,
                 N_("check what the runtime reports as the device's memory (the VRAM carve-out / driver pool)"))}},
    {.family = F_MISLEADING,
     .cause = ML_CAUSE_MISLEADING,
     .when = free_covers,
     .weigh = w_free_covers,
     .say = ml_dg_say_free_covers,
     .cite = {C_EVENT, C_ALLOWED},
     .fix = {ADV(A_FRACTION_ONE,
                 N_("compare torch.cuda.mem_get_info() with the allocator's view; remove memory-fraction limits"))}},

    /* Analysis 3: a request larger than total capacity can never succeed. */
    {.family = F_OVERSIZE,
     .cause = ML_CAUSE_OVERSIZE_TENSOR,
     .when = over_card,
     .weigh = w_over_card,
     .say = ml_dg_say_over_card,
     .cite = {C_EVENT},
     .fix = {ADV(A_SMALLER_TENSOR,
                 N_("shrink the tensor: chunk it, cut the sequence or batch, or fix a wrong shape"))}},

    /* The process lines, attributed (ml_oom_attribute_procs; A1 traps, issue 13). N equal small
     * lines: each rank's CUDA context on this GPU, nothing to stop. */
    {.family = F_SIBLINGS,
     .cause = ML_CAUSE_OTHER_PROCESS,
     .when = siblings,
     .weight = 500,
     .say = ml_dg_say_siblings,
     .cite = {C_EVENT},
     .fix = {ADV(A_SET_DEVICE, N_("bind each rank to its own GPU before its first CUDA call (or start it with "
                                  "CUDA_VISIBLE_DEVICES=<its GPU>)"))}},
    {.family = F_OTHER_PROCESS,
     .last = true,
     .cause = ML_CAUSE_OTHER_PROCESS,
     .when = others_listed,
     .weight = 900,
     .say = ml_dg_say_others,
     .cite = {C_EVENT},
     .then = ml_dg_stop_others},
    /* Analysis 1: free about zero while this process holds much less than the card. */
    {.family = F_OTHER_PROCESS,
     .cause = ML_CAUSE_OTHER_PROCESS,
     .when = outside_gap,
     .weight = 650,
     .say = ml_dg_say_outside,
     .cite = {C_EVENT},
     .then = ml_dg_stop_others},
    {.family = F_PROCESS_CHECKS, .cause = NO_FINDING, .when = own_line, .then = ml_dg_check_own_line},
    {.family = F_PROCESS_CHECKS, .cause = NO_FINDING, .when = nvml_zero, .then = ml_dg_check_nvml_zero},

    /* A serving engine's own messages (A10, analysis 7). */
    {.family = F_SERVING,
     .cause = ML_CAUSE_KV_CACHE_BUDGET,
     .when = k_kv_small,
     .weight = 900,
     .say = ml_dg_say_kv_small,
     .cite = {C_EVENT, C_PROFILE},
     .then = ml_dg_kv_small_fixes},
    {.family = F_SERVING,
     .cause = ML_CAUSE_KV_CACHE_BUDGET,
     .when = k_no_cache,
     .weight = 850,
     .why = N_("after the weights and the profiling peak nothing is left for KV cache at this gpu_memory_utilization"),
     .cite = {C_EVENT, C_PROFILE, C_NO_BLOCKS},
     /* with the inference ledger the smallest share that works is found (price.c) */
     .fix = {KNOB(ML_FIX_VLLM_UTIL_UP, ML_KNOB_GPU_UTIL, 0,
                  N_("give vLLM a larger share of the card (the fraction must cover weights + activations + KV)")),
             KNOB(ML_FIX_VLLM_SEQS, ML_KNOB_SERVE_BUDGET_2, 0, N_("shrink the profiling peak")),
             KNOB(ML_FIX_MORE_MEMORY, ML_KNOB_TP_2, 0, N_("quantized weights or more GPUs"))}},
    {.family = F_SERVING,
     .cause = ML_CAUSE_SERVING_FREE_MEMORY,
     .when = k_vllm_free,
     .weight = 850,
     .say = ml_dg_say_vllm_free,
     .cite = {C_EVENT},
     .then = ml_dg_vllm_free_fixes},
    {.family = F_SERVING,
     .cause = ML_CAUSE_OTHER_PROCESS,
     .when = k_vllm_free,
     .weight = 600,
     .say = ml_dg_say_vllm_held,
     .cite = {C_EVENT}},
    {.family = F_SERVING,
     .cause = ML_CAUSE_LOGITS,
     .when = k_warmup,
     .weight = 600,
     .why = N_("the sampler warm-up materialises logits for max_num_seqs dummy requests: vocab x requests, "
               "often in fp32"),
     .cite = {C_EVENT},
     .fix = {KNOB(ML_FIX_VLLM_SEQS, ML_KNOB_MAX_NUM_SEQS, 64, N_("warm up fewer sequences")),
             KNOB(ML_FIX_VLLM_UTIL_DOWN, ML_KNOB_GPU_UTIL_DOWN, 0, N_("leave more room outside the KV cache"))}},
    {.family = F_SERVING,
     .cause = ML_CAUSE_KV_CACHE_BUDGET,
     .when = k_sglang_pool,
     .weight = 700,
     .why = N_("SGLang's static memory fraction leaves nothing for the KV pool after the weights and the "
               "activations"),
     .cite = {C_EVENT},
     .fix = {ADV(A_SGLANG_FRACTION_UP, N_("give the KV pool a larger static share, as the message asks"))}},
    {.family = F_SERVING,
     .cause = ML_CAUSE_KV_CACHE_BUDGET,
     .when = k_sglang,
     .weight = 700,
     .why = N_("SGLang's static memory fraction leaves too little for the KV pool or for prefill"),
     .cite = {C_EVENT},
     .fix = {ADV(A_SGLANG_FRACTION, N_("lower the static fraction or the prefill chunk"))}},
    {.family = F_SERVING, .cause = NO_FINDING, .when = engine_kind_preempted, .then = ml_dg_check_preemptions},

    /* Regressions of the stack (observation 10; known_issues.c). */
    {.family = F_KNOWN_ISSUES, .cause = NO_FINDING, .then = ml_dg_known_issue_rows},

    /* A7: no memory left for a library handle or workspace: another process or the cache holds
     * the card. */
    {.family = F_LIBRARY,
     .cause = ML_CAUSE_OTHER_PROCESS,
     .when = k_library,
     .weight = 450,
     .why = N_("a cuBLAS/cuDNN handle or workspace could not be allocated: another process or PyTorch's own cache "
               "already holds the card"),
     .cite = {C_EVENT},
     .fix = {ADV(A_LIST_CUDA, N_("check what else holds the device"))}},
    {.family = F_LIBRARY,
     .cause = ML_CAUSE_FRAGMENTATION,
     .when = k_library,
     .weight = 350,
     .why = N_("libraries allocate outside the caching allocator: a full cache starves them"),
     .fix = {ADV(A_EMPTY_CACHE, N_("return cached blocks before the library call"))}},
    {.family = F_LIBRARY,
     .cause = ML_CAUSE_UNKNOWN,
     .when = k_runtime,
     .weight = 400,
     .why = N_("a raw runtime error, outside the caching allocator: context creation, a library or a custom kernel; "
               "the stack may point at a later call"),
     .cite = {C_EVENT},
     .then = ml_dg_check_launch_blocking},
    {.family = F_LIBRARY,
     .cause = ML_CAUSE_NCCL_BUFFERS,
     .when = k_nccl,
     .weight = 700,
     .say = ml_dg_say_nccl,
     .cite = {C_EVENT},
     .fix = {ADV(A_NCCL_MARGIN, N_("leave memory outside PyTorch's cache for NCCL")),
             ADV(A_SET_DEVICE, N_("bind each rank to its own GPU before creating the process group, or every rank's "
                                  "NCCL context lands on GPU 0"))},
     .then = ml_dg_check_nccl_cumem},
    {.family = F_LIBRARY,
     .cause = ML_CAUSE_ACTIVATIONS,
     .when = k_npu_workspace,
     .weight = 450,
     .why = N_("an NPU operator workspace (e.g. FlashAttentionScore) could not be allocated"),
     .cite = {C_EVENT},
     .fix = {ADV(A_TASK_QUEUE, N_("let the task queue reuse workspaces"))},
     .then = ml_dg_activation_fixes},

    /* Host memory (A11; analysis 6). */
    {.family = F_HOST,
     .cause = ML_CAUSE_HOST_RAM,
     .when = k_host_killer,
     .weight = 900,
     .say = ml_dg_say_host_killer,
     .cite = {C_EVENT, C_TIMING, C_CPU},
     .then = ml_dg_host_fixes},
    {.family = F_HOST,
     .cause = ML_CAUSE_OVERSIZE_TENSOR,
     .when = host_huge,
     .weight = 850,
     .say = ml_dg_say_host_huge,
     .cite = {C_EVENT},
     .fix = {ADV(A_SMALLER_TENSOR, N_("find the tensor with the wrong shape: no machine has that much memory"))}},
    {.family = F_HOST,
     .last = true,
     .cause = ML_CAUSE_HOST_RAM,
     .when = host_huge,
     .weight = 350,
     .say = ml_dg_say_host_alloc,
     .cite = {C_EVENT}},
    {.family = F_HOST,
     .cause = ML_CAUSE_HOST_RAM,
     .when = k_host_alloc,
     .weight = 850,
     .say = ml_dg_say_host_alloc,
     .cite = {C_EVENT, C_TIMING, C_CPU},
     .then = ml_dg_host_fixes},
    {.family = F_HOST,
     .cause = ML_CAUSE_HOST_RAM,
     .when = k_host_ray,
     .weight = 850,
     .why = N_("Ray killed the task because the node ran low on memory"),
     .cite = {C_EVENT, C_TIMING, C_CPU},
     .then = ml_dg_host_fixes},
    {.family = F_HOST,
     .cause = ML_CAUSE_HOST_RAM,
     .when = k_host_commit,
     .weight = 850,
     .why = N_("Windows could not commit more memory: RAM plus the paging file is used up (WinError 1455). Loading "
               "a model maps and copies its files in host memory; the GPU is not involved"),
     .cite = {C_EVENT, C_TIMING},
     .fix = {ADV(A_PAGEFILE, N_("increase the Windows paging file, or load with less host RAM at once (fewer models "
                                "or processes loading together)"))}},
    {.family = F_HOST,
     .cause = ML_CAUSE_HOST_RAM,
     .when = k_sigkill,
     .weigh = w_sigkill,
     .say = ml_dg_say_sigkill,
     .cite = {C_EVENT, C_TIMING, C_CPU},
     .then = ml_dg_host_fixes},
    {.family = F_HOST,
     .cause = ML_CAUSE_HOST_RAM,
     .when = k_nccl_shm,
     .weight = 700,
     .why = N_("NCCL could not create its /dev/shm segment: the container's shared memory is exhausted, not the GPU"),
     .cite = {C_EVENT},
     .fix = {ADV(A_SHM, N_("give the container more shared memory"))}},

    /* Analysis 2 / observation 3: stranded cache, absolute and relative; A9's flushes. */
    {.family = F_FRAGMENTATION,
     .cause = ML_CAUSE_FRAGMENTATION,
     .when = ml_dg_frag_holds,
     .weigh = ml_dg_frag_weight,
     .say = ml_dg_say_frag,
     .cite = {C_EVENT, C_SAVE_TIMING, C_FLUSH},
     .then = ml_dg_frag_fixes},

    /* Analysis 4: the phase from the frames names the tensor class. */
    {.family = F_PHASE,
     .cause = ML_CAUSE_MODEL_STATES,
     .when = ph_load,
     .weight = 750,
     .arg = ARG_CUE,
     .why = N_("the OOM is raised while loading weights (%s): the weights alone do not fit per device; check params x "
               "bytes against the card and whether every rank loads a full copy"),
     .cite = {C_PHASE, C_EVENT},
     .fix = {KNOB(ML_FIX_ZERO3, ML_KNOB_ZERO3, 0,
                  N_("shard the weights at load: ZeRO-3 zero.Init (or device_map=\"auto\" / tensor parallelism for "
                     "inference)")),
             KNOB(ML_FIX_LORA, ML_KNOB_QLORA, 0, N_("load the base in 4 or 8 bits (QLoRA / quantized inference)")),
             ADV(A_MORE_GPUS, N_("more or larger GPUs (tensor parallelism for serving)"))}},
    /* optimizer.step / _init_group / _multi_tensor_adamw -> states created lazily */
    {.family = F_PHASE,
     .cause = ML_CAUSE_MODEL_STATES,
     .when = ph_optimizer,
     .weight = 700,
     .arg = ARG_CUE,
     .why = N_("the OOM is raised in the optimizer step (%s): Adam creates its states (8 B/param fp32) at the first "
               "applied step, on top of weights and gradients"),
     .cite = {C_PHASE, C_EVENT},
     .then = ml_dg_model_states_fixes},
    /* observation 9: cross_entropy, lm_head, .float() -> logits */
    {.family = F_PHASE,
     .cause = ML_CAUSE_LOGITS,
     .when = ph_loss,
     .weigh = w_loss,
     .say = ml_dg_say_loss,
     .cite = {C_PHASE, C_EVENT},
     .fix = {KNOB(ML_FIX_CHUNKED_LOSS, ML_KNOB_LIGER, 0,
                  N_("use a fused/chunked cross-entropy that never materialises all logits"))},
     .then = ml_dg_activation_fixes},
    {.family = F_PHASE,
     .cause = ML_CAUSE_ACTIVATIONS,
     .when = ph_backward,
     .weigh = w_backward,
     .arg = ARG_CUE,
     .why = N_("the OOM is raised in backward (%s): saved activations plus the gradients being produced; batch x "
               "sequence sets them"),
     .cite = {C_PHASE, C_EVENT},
     .then = ml_dg_activation_fixes},
    {.family = F_PHASE,
     .cause = ML_CAUSE_NO_GRAD_CHECKPOINTING,
     .when = backward_no_ckpt,
     .weight = 600,
     .why = N_("gradient checkpointing is off in the config: every layer keeps its activations for backward"),
     .cite = {C_PHASE},
     .fix = {KNOB(ML_FIX_GRAD_CKPT, ML_KNOB_GRAD_CKPT, 0, N_("turn gradient checkpointing on"))}},
    {.family = F_PHASE,
     .cause = ML_CAUSE_EAGER_ATTENTION,
     .when = forward_eager,
     .weigh = w_forward_eager,
     .arg = ARG_CUE,
     .why = N_("the OOM is raised in eager attention's softmax (%s): it materialises b x heads x s^2 scores in fp32"),
     .cite = {C_PHASE},
     .then = ml_dg_eager_fixes},
    {.family = F_PHASE,
     .cause = ML_CAUSE_ACTIVATIONS,
     .when = ph_forward,
     .weigh = w_forward,
     .arg = ARG_CUE,
     .why =
         N_("the OOM is raised in the forward pass (%s): activations of batch x sequence on top of the model states"),
     .cite = {C_PHASE},
     .then = ml_dg_forward_fixes},
    {.family = F_PHASE,
     .cause = ML_CAUSE_CHECKPOINT_GATHER,
     .when = ph_save,
     .weight = 750,
     .arg = ARG_CUE,
     .why = N_("the OOM is raised while saving (%s): ZeRO-3/FSDP consolidation gathers each module's full parameters "
               "(2 x V x h for the embedding or lm_head) on every rank"),
     .cite = {C_PHASE, C_EVENT},
     .fix = {KNOB(ML_FIX_GATHER16_OFF, ML_KNOB_GATHER16_OFF, 0,
                  N_("do not gather the 16-bit model at save (LoRA needs only the adapter; rebuild with "
                     "zero_to_fp32.py)")),
             ADV(A_SAVE_CALLBACK, N_("free the cache before and after each save (a TrainerCallback)"))}},
    /* prediction_loop / nested_concat -> eval accumulation */
    {.family = F_PHASE,
     .cause = ML_CAUSE_EVAL_ACCUMULATION,
     .when = ph_eval,
     .weight = 650,
     .arg = ARG_CUE,
     .why =
         N_("the OOM is raised in evaluation (%s): predictions/logits gathered on the GPU across eval steps, or eval "
            "run without no_grad"),
     .cite = {C_PHASE, C_EVENT},
     .fix = {ADV(A_EVAL_CPU, N_("move eval predictions to CPU every step and keep only the loss"))}},
    {.family = F_PHASE,
     .cause = ML_CAUSE_ACTIVATIONS,
     .when = ph_generate,
     .weight = 450,
     .arg = ARG_CUE,
     .why = N_("the OOM is raised in generation (%s): the KV cache and activations grow with batch x (prompt + new "
               "tokens)"),
     .cite = {C_PHASE, C_EVENT},
     .fix = {ADV(A_GENERATE_SMALLER, N_("generate with a smaller batch or fewer new tokens")),
             ADV(A_LOAD_4BIT, N_("load the model in 4 or 8 bits"))}},
    {.family = F_PHASE,
     .cause = ML_CAUSE_NCCL_BUFFERS,
     .when = ph_comm,
     .weigh = w_comm,
     .arg = ARG_CUE,
     .why = N_("the OOM is raised in communication (%s): NCCL allocates its buffers outside PyTorch's allocator and "
               "fails when the cache holds almost all memory"),
     .cite = {C_PHASE, C_EVENT},
     .fix = {ADV(A_NCCL_FRACTION, N_("leave room outside PyTorch's cache for NCCL: empty the cache before collectives "
                                     "or cap PyTorch's share"))}},
    {.family = F_PHASE,
     .cause = ML_CAUSE_KV_CACHE_BUDGET,
     .when = ph_serving_alloc,
     .weight = 600,
     .arg = ARG_CUE,
     .why = N_("a serving engine runs out at run time (%s): it pre-allocates the KV cache to fill the card, leaving no "
               "headroom for prefill activations"),
     .cite = {C_PHASE, C_EVENT},
     .then = ml_dg_serving_runtime_fixes},

    /* The tensor classes by their sizes, with the model given (analysis 3). params x 2 B: a
     * whole-model flat 16-bit buffer (ZeRO-2 init, state-dict gather, merge). */
    {.family = F_FINGERPRINTS,
     .cause = ML_CAUSE_MODEL_STATES,
     .when = copy_fp,
     .weight = 800,
     .say = ml_dg_say_copy,
     .cite = {C_EVENT},
     .fix = {KNOB(ML_FIX_ZERO3, ML_KNOB_ZERO3, 0, N_("shard the model states: DeepSpeed ZeRO-3 (or FSDP full_shard)")),
             KNOB(ML_FIX_OFFLOAD_OPT, ML_KNOB_OFFLOAD_OPT, 0, N_("offload the optimizer states to CPU"))}},
    {.family = F_FINGERPRINTS,
     .cause = ML_CAUSE_LOGITS,
     .when = logits_fp,
     .weight = 800,
     .say = ml_dg_say_logits,
     .cite = {C_EVENT}},
    {.family = F_FINGERPRINTS,
     .cause = ML_CAUSE_EAGER_ATTENTION,
     .when = eager_fp,
     .weight = 0,
     .say = ml_dg_note_eager},

    /* The run settings the log prints size it (issue 24 item 5): batch x heads x s^2 x 4 B is eager
     * attention's score block, batch x s x V x 4 B the logits, params x bytes / GPUs one rank's
     * share of the model. */
    {.family = F_FINGERPRINTS,
     .cause = ML_CAUSE_EAGER_ATTENTION,
     .when = log_scores,
     .weight = 800,
     .say = ml_dg_say_log_scores,
     .cite = {C_ARGS, C_EVENT},
     .then = ml_dg_eager_fixes},
    {.family = F_FINGERPRINTS,
     .cause = ML_CAUSE_LOGITS,
     .when = log_logits,
     .weight = 800,
     .say = ml_dg_say_log_logits,
     .cite = {C_ARGS, C_EVENT},
     .fix = {KNOB(ML_FIX_CHUNKED_LOSS, ML_KNOB_LIGER, 0,
                  N_("use a fused/chunked cross-entropy that never materialises all logits"))}},
    {.family = F_FINGERPRINTS,
     .cause = ML_CAUSE_MODEL_STATES,
     .when = log_shard,
     .weight = 800,
     .say = ml_dg_say_log_shard,
     .cite = {C_ARGS, C_EVENT},
     .then = ml_dg_model_states_fixes},

    /* Analysis 5: when in the run. */
    {.family = F_TIMING,
     .cause = ML_CAUSE_CHECKPOINT_GATHER,
     .when = t_after_save,
     .weigh = w_after_save,
     .say = ml_dg_say_after_save,
     .cite = {C_TIMING},
     .then = ml_dg_after_save_fixes},
    {.family = F_TIMING,
     .cause = ML_CAUSE_CHECKPOINT_GATHER,
     .when = t_at_save,
     .weight = 700,
     .why = N_("the OOM comes during a checkpoint save"),
     .cite = {C_TIMING},
     .fix = {KNOB(ML_FIX_GATHER16_OFF, ML_KNOB_GATHER16_OFF, 0, N_("do not gather the 16-bit model at save"))}},
    {.family = F_TIMING,
     .cause = ML_CAUSE_EVAL_ACCUMULATION,
     .when = t_at_eval,
     .weight = 600,
     .why = N_("the OOM comes during evaluation (at multiples of eval steps -> the eval path)"),
     .cite = {C_TIMING},
     .fix = {ADV(A_EVAL_CPU, N_("move eval predictions to CPU every step and keep only the loss"))}},
    {.family = F_TIMING,
     .cause = ML_CAUSE_MODEL_STATES,
     .when = t_resume,
     .weight = 500,
     .why = N_("the OOM comes right after resuming: the optimizer states are loaded on top of a running model "
               "(LlamaFactory#4710)"),
     .cite = {C_TIMING},
     .then = ml_dg_model_states_fixes},
    {.family = F_TIMING,
     .cause = ML_CAUSE_NO_GRAD_CHECKPOINTING,
     .when = first_step_no_ckpt,
     .weight = 450,
     .why = N_("the OOM comes at the first step whatever the data: a static over-commitment (model states, no "
               "gradient checkpointing or the wrong dtype)"),
     .cite = {C_TIMING},
     .fix = {KNOB(ML_FIX_GRAD_CKPT, ML_KNOB_GRAD_CKPT, 0, N_("turn gradient checkpointing on"))}},
    {.family = F_TIMING,
     .cause = ML_CAUSE_MODEL_STATES,
     .when = first_step_states,
     .weight = 450,
     .why = N_("the OOM comes at the first step whatever the data: a static over-commitment (model states, no "
               "gradient checkpointing or the wrong dtype)"),
     .cite = {C_TIMING},
     .then = ml_dg_model_states_fixes},
    {.family = F_TIMING,
     .cause = ML_CAUSE_LONG_SEQUENCE,
     .when = t_mid_run,
     .weight = 450,
     .say = ml_dg_say_mid_run,
     .cite = {C_TIMING},
     .then = ml_dg_mid_run_fixes},
    /* Caught and retried: the exception's frames keep the failed step's tensors alive, so the
     * retry starts with that memory held (issue 13). */
    {.family = F_TIMING,
     .cause = ML_CAUSE_TENSOR_LEAK,
     .when = chained,
     .weight = 600,
     .why = N_("the OOM is caught and the step retried ('During handling of the above exception'): the exception and "
               "its frames keep the failed step's tensors alive, so the retry starts with that memory held"),
     .cite = {C_EVENT},
     .fix = {ADV(A_RETRY_FREE,
                 N_("free the failed step before retrying: the exception and its frames keep its tensors alive"))}},
    /* Steady growth of DeepSpeed's MA (see_memory_usage) -> retained tensors (analysis 5). */
    {.family = F_TIMING,
     .cause = ML_CAUSE_TENSOR_LEAK,
     .when = ma_rising,
     .weight = 650,
     .say = ml_dg_say_ma_rising,
     .cite = {C_MEM},
     .fix = {ADV(A_RECORD_HISTORY,
                 N_("find what keeps tensors: losses logged without .item(), outputs kept in lists, hooks"))}},

    /* Settings from the config that name a cause directly (observation 10: defaults). */
    {.family = F_CONFIG,
     .cause = ML_CAUSE_EAGER_ATTENTION,
     .when = config_eager,
     .weigh = w_config_eager,
     .say = ml_dg_say_config_eager,
     .cite = {C_PHASE_IF_EAGER},
     .then = ml_dg_eager_fixes},
    {.family = F_CONFIG,
     .cause = ML_CAUSE_NO_GRAD_CHECKPOINTING,
     .when = config_no_ckpt,
     .weight = 500,
     .why = N_("gradient checkpointing is off: every layer keeps its activations until backward"),
     .fix = {KNOB(ML_FIX_GRAD_CKPT, ML_KNOB_GRAD_CKPT, 0, N_("turn gradient checkpointing on"))}},

    /* Observation 9: fp32 upcasts in the forward, in accelerate's output conversion, in samplers
     * and in the PPO trainer caused OOMs. */
    {.family = F_FP32,
     .cause = ML_CAUSE_FP32_UPCAST,
     .when = fp32_frames,
     .weigh = w_fp32,
     .say = ml_dg_say_fp32,
     .cite = {C_PHASE, C_EVENT},
     .fix = {ADV(A_NO_FP32,
                 N_("keep the tensor in 16 bits: drop the .float() / upcast, or compute the loss in chunks"))}},
};

const struct rule *ml_dg_rule_rows(size_t *n)
{
    *n = sizeof(rules) / sizeof(rules[0]);
    return rules;
}

/* ---- the loop ------------------------------------------------------------------------------- */

static void cite(struct ctx *x, struct ml_finding *f, enum rule_cite c)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_incident *inc = x->inc;
    char a[32];
    switch (c) {
    case C_EVENT: ml_dg_ev_event(f, e); break;
    case C_PHASE: ml_dg_ev_ref(f, &e->phase_ref); break;
    case C_PHASE_IF_EAGER:
        if (e->eager_frames)
            ml_dg_ev_ref(f, &e->phase_ref);
        break;
    case C_TIMING: ml_dg_ev_ref(f, &e->timing_ref); break;
    case C_SAVE_TIMING:
        if (e->timing == ML_TIM_AFTER_SAVE)
            ml_dg_ev_ref(f, &e->timing_ref);
        break;
    case C_CPU:
        if (inc->cpu_percent_permille)
            ml_dg_ev_ref(f, &inc->cpu_ref);
        break;
    case C_PROFILE:
        if (inc->has_profile)
            ml_dg_ev_ref(f, &inc->profile_ref);
        break;
    case C_FLUSH:
        if (inc->flush_warnings > 0)
            ml_dg_ev_ref(f, &inc->flush_ref);
        break;
    case C_MEM: ml_dg_ev_ref(f, &inc->mem_ref); break;
    case C_ALLOWED:
        if (has(e, ML_OOM_F_ALLOWED))
            ml_dg_ev_note(f, _("%s allowed by set_per_process_memory_fraction"),
                          ml_fmt_bytes_s(a, sizeof(a), e->allowed));
        break;
    case C_ARGS:
        if (x->su->args)
            ml_dg_ev_ref(f, &x->su->args->ref);
        break;
    case C_NO_BLOCKS:
        if (inc->gpu_blocks == 1)
            ml_dg_ev_note(f, _("# GPU blocks: 0"));
        break;
    default: break;
    }
}

static void run_row(struct ctx *x, const struct rule *r)
{
    if (r->cause == NO_FINDING) {
        r->then(x, NULL);
        return;
    }
    struct ml_finding *f = ml_dg_finding(x, r->cause, r->weigh ? r->weigh(x) : r->weight);
    if (r->say)
        r->say(x, f);
    else if (r->arg == ARG_CUE)
        ml_dg_why(f, _(r->why), x->e->phase_cue[0] ? x->e->phase_cue : ml_oom_phase_name(x->e->phase));
    else if (r->why)
        ml_dg_why(f, "%s", _(r->why));
    for (size_t i = 0; i < sizeof(r->cite) / sizeof(r->cite[0]) && r->cite[i]; i++)
        cite(x, f, r->cite[i]);
    for (size_t i = 0; i < sizeof(r->fix) / sizeof(r->fix[0]) && r->fix[i].action; i++) {
        const struct rule_fix *k = &r->fix[i];
        const char *action = k->action[0] ? _(k->action) : "";
        if (k->advice != A_COUNT)
            ml_dg_advise(f, k->advice, action);
        else
            ml_dg_knob(f, k->kind, k->knob, k->value, action);
    }
    if (r->then)
        r->then(x, f);
}

void ml_dg_run_rules(struct ctx *x)
{
    size_t n = sizeof(rules) / sizeof(rules[0]);
    for (size_t i = 0; i < n; i++) {
        const struct rule *r = &rules[i];
        if (r->when && !r->when(x))
            continue;
        run_row(x, r);
        if (r->last)
            while (i + 1 < n && rules[i + 1].family == r->family)
                i++;
    }
}
