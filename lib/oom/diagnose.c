/*
 * diagnose.c - the diagnosis rules (diagnose.h): the field guide's decision tree with numbers.
 *
 * Sources, cited at each rule: the shared field guide reference/oom-messages.md (sections
 * A1-A11 for what each message means, "Analysis" 1-8 and "Ten observations" 1-10 for the
 * decision tree) and reference/accounting-notes.md (what each knob costs). Confidences are on
 * a fixed scale, the same for every rule family:
 *   900  the message proves it (a "this process" line next to another process's line, a
 *        request larger than the device, vLLM's own KV-cache arithmetic, a kernel OOM record)
 *   800  a strong numeric rule (stranded cache >= request and > 10 % of reserved; a size
 *        fingerprint within 3 %)
 *   700  the phase from the frames names the tensor class (load, optimizer step, loss, save, eval)
 *   600  a rule on numbers that the field guide calls likely, or a phase plus a setting
 *   450  timing alone (after a save, mid-run step), or a weaker numeric rule
 *   350  background: the card is simply full and the request carries no size information
 * Fixes are knobs of the knob table (fit.h, lib/fit/knobs.c), applied, written and ranked as fit
 * does, or advice (the table below). They are priced with the ledger (ml_ledger_train or
 * ml_ledger_infer with the knob applied) when the setup allows; otherwise with the log's own
 * numbers, or not at all (saves unknown).
 */
#include "memledger/diagnose.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/buf.h"
#include "memledger/units.h"
#include "i18n.h"
#include "oom_text.h"

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

/* The kinds of run each kind of fix applies to (docs/cli/diagnose.md, "Advice that fits the run"):
 * model-state relief, checkpointing, the loss, the trainer's eval and save are training's; the
 * engine's knobs are serving's; the allocator, the device and the tensor itself are everyone's. */
uint32_t ml_fix_runs(enum ml_fix_kind k)
{
    enum { T = ML_RUN_TRAINING, S = ML_RUN_SERVING, O = ML_RUN_OFFLINE, D = ML_RUN_DIFFUSION, ANY = ML_RUN_ANY };
    static const uint8_t runs[ML_FIX_COUNT] = {
        [ML_FIX_FREE_DEVICE] = ANY,
        [ML_FIX_LOOK_EARLIER] = ANY,
        [ML_FIX_KNOWN_ISSUE] = ANY,
        [ML_FIX_ALLOC_EXPANDABLE] = ANY,
        [ML_FIX_ALLOC_MAX_SPLIT] = ANY,
        [ML_FIX_EXPANDABLE_OFF] = ANY,
        [ML_FIX_ZERO3_BUFFERS] = T,
        [ML_FIX_GATHER16_OFF] = T,
        [ML_FIX_ATTN] = T | O | D,
        [ML_FIX_CHUNKED_LOSS] = T,
        [ML_FIX_NO_FP32] = ANY,
        [ML_FIX_EVAL] = T,
        [ML_FIX_VLLM_MAX_LEN] = S,
        [ML_FIX_VLLM_UTIL_UP] = S,
        [ML_FIX_VLLM_UTIL_DOWN] = S,
        [ML_FIX_VLLM_SEQS] = S,
        [ML_FIX_KV_FP8] = S,
        [ML_FIX_SERVE_FRACTION] = S,
        [ML_FIX_ENFORCE_EAGER] = S,
        [ML_FIX_QUANTIZE] = S | O | D,
        [ML_FIX_GGML_LAYERS] = S | O,
        [ML_FIX_GGML_CTX] = S | O,
        [ML_FIX_GGML_KV] = S | O,
        [ML_FIX_CUTOFF] = T,
        [ML_FIX_BATCH] = T | O | D,
        [ML_FIX_EMPTY_CACHE_SAVE] = T,
        [ML_FIX_GRAD_CKPT] = T,
        [ML_FIX_SAVE_STEPS] = T,
        [ML_FIX_NCCL_MARGIN] = ANY,
        [ML_FIX_NCCL_SET_DEVICE] = ANY,
        [ML_FIX_SHM] = ANY,
        [ML_FIX_HOST_LOAD] = ANY,
        [ML_FIX_OPTIM_8BIT] = T,
        [ML_FIX_ZERO3] = T,
        [ML_FIX_OFFLOAD_OPT] = T,
        [ML_FIX_OFFLOAD_ALL] = T,
        [ML_FIX_LORA] = T,
        [ML_FIX_SMALLER_TENSOR] = ANY,
        [ML_FIX_HOST_FEWER_RANKS] = ANY,
        [ML_FIX_MORE_MEMORY] = ANY,
        [ML_FIX_RETRY_FREE] = ANY,
    };
    return (unsigned)k < ML_FIX_COUNT ? runs[k] : 0;
}

static int cmp_fix(const void *a, const void *b)
{
    const struct ml_fix *x = *(const struct ml_fix *const *)a, *y = *(const struct ml_fix *const *)b;
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

struct ctx {
    const struct ml_incident *inc;
    const struct ml_diag_setup *su;
    struct ml_diagnosis *out;
    const struct ml_oom_event *e; /* the primary event as the rules see it: ev */
    struct ml_oom_event ev;       /* its copy, the numbers of failed relations masked (C2) */
    bool has_cap, has_free, has_alloc, has_ru, has_req;
    uint64_t cap, free, alloc, ru, req, held, used;
    const char *var;                     /* the allocator variable for this device, NULL when none */
    const char *no_exp;                  /* why expandable segments must not be suggested, NULL if they may */
    bool training;                       /* the log or setup is a training run */
    bool serving;                        /* a serving engine */
    bool led;                            /* the setup gives a ledger */
    struct ml_train t0;                  /* the setup's settings (copy, for what-ifs) */
    struct ml_cluster c0;                /* the setup's cluster (copy, for what-ifs: training or serving) */
    bool engine;                         /* the setup names a serving engine */
    bool sled;                           /* the setup gives a serving engine's ledger */
    struct ml_infer s0;                  /* its settings (copy, for what-ifs) */
    struct ml_knob_ctx kx;               /* how knobs apply here (the allocator variable, the engine) */
    enum ml_dialect dialect;             /* the trainer the YAML settings are written for (COUNT: unknown) */
    const struct ml_evidence_weights *w; /* the weights that rank (setup's, else the committed fit) */
};

static bool has(const struct ml_oom_event *e, uint32_t f)
{
    return (e->has & f) == f;
}

static struct ml_finding *finding(struct ctx *x, enum ml_cause c, uint32_t conf)
{
    struct ml_diagnosis *o = x->out;
    for (uint32_t i = 0; i < o->n_findings; i++) {
        if (o->f[i].cause == c) {
            if (conf > o->f[i].confidence)
                o->f[i].confidence = conf;
            return &o->f[i];
        }
    }
    if (o->n_findings >= ML_DIAG_MAX_FINDINGS) {
        /* Replace the weakest if this one is stronger. */
        uint32_t w = 0;
        for (uint32_t i = 1; i < o->n_findings; i++)
            if (o->f[i].confidence < o->f[w].confidence)
                w = i;
        if (o->f[w].confidence >= conf)
            return NULL;
        memset(&o->f[w], 0, sizeof(o->f[w]));
        o->f[w].cause = c;
        o->f[w].confidence = conf;
        return &o->f[w];
    }
    struct ml_finding *f = &o->f[o->n_findings++];
    memset(f, 0, sizeof(*f));
    f->cause = c;
    f->confidence = conf > 1000 ? 1000 : conf;
    return f;
}

static void why(struct ml_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why(struct ml_finding *f, const char *fmt, ...)
{
    if (!f || f->why[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    (void)ml_vformat(f->why, sizeof(f->why), fmt, ap);
    va_end(ap);
}

static void ev_line(struct ml_finding *f, uint32_t file, uint64_t line, const char *text)
{
    if (!f || f->n_ev >= ML_DIAG_MAX_EVIDENCE || !text || !text[0])
        return;
    for (uint32_t i = 0; i < f->n_ev; i++)
        if (f->ev[i].line == line && f->ev[i].file == file && line)
            return;
    struct ml_evidence *v = &f->ev[f->n_ev++];
    v->file = file;
    v->line = line;
    (void)snprintf(v->text, sizeof(v->text), "%s", text);
}

static void ev_event(struct ml_finding *f, const struct ml_oom_event *e)
{
    ev_line(f, e->file, e->line, e->text);
}

static void ev_ref(struct ml_finding *f, const struct ml_oom_ref *r)
{
    if (r->line)
        ev_line(f, r->file, r->line, r->text);
}

static void ev_note(struct ml_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ev_note(struct ml_finding *f, const char *fmt, ...)
{
    if (!f || f->n_ev >= ML_DIAG_MAX_EVIDENCE)
        return;
    struct ml_evidence *v = &f->ev[f->n_ev++];
    memset(v, 0, sizeof(*v));
    va_list ap;
    va_start(ap, fmt);
    (void)ml_vformat(v->text, sizeof(v->text), fmt, ap);
    va_end(ap);
}

/* A fix of kind k at rank cost; *fresh tells a new one from the finding's fix of that kind (the
 * first of a kind in a finding wins). */
static struct ml_fix *add_fix(struct ml_finding *f, enum ml_fix_kind k, uint32_t cost, const char *action, bool *fresh)
{
    *fresh = false;
    if (!f)
        return NULL;
    for (uint32_t i = 0; i < f->n_fix; i++)
        if (f->fix[i].kind == k)
            return &f->fix[i];
    if (f->n_fix >= ML_DIAG_MAX_FIXES)
        return NULL;
    struct ml_fix *x = &f->fix[f->n_fix++];
    memset(x, 0, sizeof(*x));
    x->kind = k;
    x->knob = ML_KNOB_NONE;
    x->cost = cost;
    x->fits = -1;
    (void)snprintf(x->action, sizeof(x->action), "%s", action);
    *fresh = true;
    return x;
}

/* A knob of the knob table; value is what the log says it should be (0: the knob's own rule).
 * Its setting is written when the fixes are settled (settle), from the run where it is known. */
static struct ml_fix *knob(struct ml_finding *f, enum ml_fix_kind k, enum ml_knob_id id, uint64_t value,
                           const char *action)
{
    const struct ml_knob *kn = ml_knob_get(id);
    bool fresh;
    struct ml_fix *x = add_fix(f, k, ml_knob_rank(kn->cost, kn->flags), action, &fresh);
    if (fresh) {
        x->knob = id;
        x->value = value;
    }
    return x;
}

/* Fixes that are no knob of the ledger, each once with its setting and its place on the one
 * cost scale (ml_knob_rank: nothing to change in the run costs 0; ML_COST_RESULT when the data,
 * the code or the method change; ML_COST_HARDWARE for more hardware). */
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
    A_TGI_PREFILL,
    A_TGI_SHARDS,
    A_TGI_QUANTIZE,
    A_RETRY_FREE,
    A_ENFORCE_EAGER,
    A_GGML_LAYERS,
    A_GGML_CTX,
    A_GGML_KV,
    A_COUNT
};

static const struct advice {
    enum ml_fix_kind kind;
    uint32_t cost;    /* permille of step time */
    uint32_t effects; /* ML_KNOB_CHANGES_*, ML_KNOB_NEEDS_HARDWARE */
    const char *setting;
} advice_table[A_COUNT] = {
    [A_KILL_CUDA] = {ML_FIX_FREE_DEVICE, 0, 0,
                     N_("nvidia-smi --query-compute-apps=pid,used_memory --format=csv; kill <pid>")},
    [A_KILL_HIP] = {ML_FIX_FREE_DEVICE, 0, 0, N_("rocm-smi --showpids; kill <pid>")},
    [A_KILL_NPU] = {ML_FIX_FREE_DEVICE, 0, 0, N_("npu-smi info; kill <pid>")},
    [A_LIST_CUDA] = {ML_FIX_FREE_DEVICE, 0, 0, N_("nvidia-smi --query-compute-apps=pid,used_memory --format=csv")},
    [A_NCCL_DEBUG] = {ML_FIX_LOOK_EARLIER, 0, 0, N_("NCCL_DEBUG=INFO; TORCH_NCCL_ASYNC_ERROR_HANDLING=1")},
    [A_DIST_DEBUG] = {ML_FIX_LOOK_EARLIER, 0, 0, N_("TORCH_DISTRIBUTED_DEBUG=DETAIL")},
    [A_VRAM_INFO] = {ML_FIX_LOOK_EARLIER, 0, 0, N_("rocm-smi --showmeminfo vram / torch.cuda.mem_get_info()")},
    [A_FRACTION_ONE] = {ML_FIX_LOOK_EARLIER, 0, 0, N_("torch.cuda.set_per_process_memory_fraction(1.0)")},
    [A_RECORD_HISTORY] = {ML_FIX_LOOK_EARLIER, 0, 0,
                          N_("log loss.item(), not loss; torch.cuda.memory._record_memory_history()")},
    [A_TASK_QUEUE] = {ML_FIX_LOOK_EARLIER, 0, 0, N_("TASK_QUEUE_ENABLE=1")},
    [A_EXPANDABLE_OFF] = {ML_FIX_EXPANDABLE_OFF, 0, 0,
                          N_("unset PYTORCH_CUDA_ALLOC_CONF (or expandable_segments:False)")},
    [A_MAX_SPLIT] = {ML_FIX_ALLOC_MAX_SPLIT, 0, 0, N_("max_split_size_mb:256")}, /* after the allocator variable */
    [A_SAVE_CALLBACK] = {ML_FIX_EMPTY_CACHE_SAVE, 0, 0,
                         N_("callback: on_save -> gc.collect(); torch.cuda.empty_cache()")},
    [A_SAVE_STEPS] = {ML_FIX_SAVE_STEPS, 0, 0, N_("save_steps (larger)")},
    [A_EVAL_CPU] = {ML_FIX_EVAL, 0, 0,
                    N_("eval_accumulation_steps: 1, prediction_loss_only: true, per_device_eval_batch_size: 1")},
    [A_NO_FP32] = {ML_FIX_NO_FP32, 0, 0, N_("upcast_lmhead_output: false; no .float() on logits")},
    [A_NCCL_FRACTION] =
        {ML_FIX_NCCL_MARGIN, 0, 0,
         N_("torch.cuda.set_per_process_memory_fraction(0.95) or torch.cuda.empty_cache() before the collective")},
    [A_EMPTY_CACHE] = {ML_FIX_NCCL_MARGIN, 0, 0, N_("torch.cuda.empty_cache()")},
    [A_NCCL_MARGIN] = {ML_FIX_NCCL_MARGIN, 0, 0,
                       N_("torch.cuda.empty_cache() before collectives / set_per_process_memory_fraction(0.95)")},
    [A_SET_DEVICE] = {ML_FIX_NCCL_SET_DEVICE, 0, 0, N_("torch.cuda.set_device(local_rank) before init_process_group")},
    [A_SHM] = {ML_FIX_SHM, 0, 0, N_("docker run --shm-size=16g (or --ipc=host)")},
    [A_LOW_CPU_MEM] = {ML_FIX_HOST_LOAD, 0, 0, N_("low_cpu_mem_usage: true (ZeRO-3: zero.Init)")},
    /* Half the ranks: the reverse of fit's "twice the GPUs" (1000). */
    [A_FEWER_RANKS] = {ML_FIX_HOST_FEWER_RANKS, 1000, 0, N_("--nproc_per_node smaller")},
    [A_HOST_RAM] = {ML_FIX_MORE_MEMORY, 1000, ML_KNOB_NEEDS_HARDWARE, ""},
    [A_MORE_GPUS] = {ML_FIX_MORE_MEMORY, 1000, ML_KNOB_NEEDS_HARDWARE, N_("--tensor-parallel-size / more GPUs")},
    [A_SMALLER_TENSOR] = {ML_FIX_SMALLER_TENSOR, 0, ML_KNOB_CHANGES_DATA, ""},
    [A_LORA] = {ML_FIX_LORA, 0, ML_KNOB_CHANGES_METHOD, N_("finetuning_type: lora")},
    [A_LOAD_4BIT] = {ML_FIX_LORA, 250, ML_KNOB_CHANGES_METHOD, N_("load_in_4bit=True")}, /* QLoRA's dequantization */
    [A_GENERATE_SMALLER] = {ML_FIX_BATCH, 80, 0, N_("max_new_tokens / batch size")},     /* a micro-batch halving */
    [A_TGI_FRACTION] = {ML_FIX_SERVE_FRACTION, 50, 0,
                        N_("--cuda-memory-fraction 0.9 (TGI) / --max-batch-prefill-tokens lower")},
    [A_SGLANG_FRACTION] = {ML_FIX_VLLM_SEQS, 100, 0,
                           N_("--mem-fraction-static lower / --chunked-prefill-size smaller")},
    /* TGI's warm-up prefills --max-batch-prefill-tokens at once (its launcher's own advice when the
     * warm-up fails); priced as the SGLang fraction row (100) */
    [A_TGI_PREFILL] = {ML_FIX_VLLM_SEQS, 100, 0, N_("--max-batch-prefill-tokens lower (TGI)")},
    /* TGI's launcher spells tensor parallelism and quantization its own way (--num-shard,
     * --quantize); priced as the knobs they are (twice the tensor parallelism, fp8 weights) */
    [A_TGI_SHARDS] = {ML_FIX_MORE_MEMORY, 1000, ML_KNOB_NEEDS_HARDWARE, N_("--num-shard 2 (TGI)")},
    [A_TGI_QUANTIZE] = {ML_FIX_QUANTIZE, 50, ML_KNOB_CHANGES_METHOD, N_("--quantize fp8 (TGI)")},
    /* one more engine setting, priced as the SGLang fraction row (100) */
    [A_ENFORCE_EAGER] = {ML_FIX_ENFORCE_EAGER, 100, 0, N_("--enforce-eager (vLLM) / --disable-cuda-graph (SGLang)")},
    /* llama.cpp / Ollama (llama.cpp's common arguments -ngl, -c, -ub, -fa, -ctk/-ctv; Ollama's
     * num_gpu, num_ctx, OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE): layers left on the CPU run
     * there (fit's "twice the GPUs" scale, 1000); a shorter context changes what the run can do */
    [A_GGML_LAYERS] = {ML_FIX_GGML_LAYERS, 1000, 0, N_("-ngl <fewer layers> (llama.cpp) / num_gpu (Ollama)")},
    [A_GGML_CTX] = {ML_FIX_GGML_CTX, 0, ML_KNOB_CHANGES_DATA,
                    N_("-c <shorter context> -ub <smaller batch> (llama.cpp) / num_ctx (Ollama)")},
    [A_GGML_KV] = {ML_FIX_GGML_KV, 0, 0,
                   N_("-fa on -ctk q8_0 -ctv q8_0 (llama.cpp) / OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0")},
    [A_RETRY_FREE] =
        {ML_FIX_RETRY_FREE, 0, 0,
         N_("in the except block: del outputs, loss; drop the exception; gc.collect(); torch.cuda.empty_cache()")},
};

static struct ml_fix *advise(struct ml_finding *f, enum advice_id a, const char *action)
{
    const struct advice *ad = &advice_table[a];
    bool fresh;
    struct ml_fix *x = add_fix(f, ad->kind, ml_knob_rank(ad->cost, ad->effects), action, &fresh);
    if (fresh)
        (void)snprintf(x->setting, sizeof(x->setting), "%s", ad->setting[0] ? _(ad->setting) : "");
    return x;
}

static void fix_note(struct ml_fix *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fix_note(struct ml_fix *x, const char *fmt, ...)
{
    if (!x)
        return;
    va_list ap;
    va_start(ap, fmt);
    (void)ml_vformat(x->note, sizeof(x->note), fmt, ap);
    va_end(ap);
}

/* A serving engine's settings in its own dialect: the log names SGLang or TGI (and not vLLM);
 * vLLM's flags otherwise. The batch of tokens a step runs, and the engine's static share. */
static void serve_batch_fix(const struct ctx *x, struct ml_finding *f, const char *action)
{
    if (x->inc->saw_tgi && !x->inc->saw_vllm && !x->inc->saw_sglang)
        advise(f, A_TGI_PREFILL, action);
    else if (x->inc->saw_sglang && !x->inc->saw_vllm)
        advise(f, A_SGLANG_FRACTION, action);
    else
        knob(f, ML_FIX_VLLM_SEQS, ML_KNOB_SERVE_BUDGET_2, 0, action);
}

static void serve_share_fix(const struct ctx *x, struct ml_finding *f, const char *action)
{
    if (x->inc->saw_tgi && !x->inc->saw_vllm && !x->inc->saw_sglang)
        advise(f, A_TGI_FRACTION, action);
    else if (x->inc->saw_sglang && !x->inc->saw_vllm)
        advise(f, A_SGLANG_FRACTION, action);
    else
        knob(f, ML_FIX_VLLM_UTIL_DOWN, ML_KNOB_GPU_UTIL_DOWN, 0, action);
}

static void fix_saves_log(struct ml_fix *x, uint64_t bytes)
{
    if (!x)
        return;
    x->has_saves = true;
    x->saves_bytes = bytes;
    x->saves_from_ledger = false;
}

static void check(struct ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(struct ctx *x, const char *fmt, ...)
{
    struct ml_diagnosis *o = x->out;
    if (o->n_checks >= ML_DIAG_MAX_CHECKS)
        return;
    va_list ap;
    va_start(ap, fmt);
    (void)ml_vformat(o->checks[o->n_checks], sizeof(o->checks[0]), fmt, ap);
    va_end(ap);
    for (uint32_t i = 0; i < o->n_checks; i++)
        if (!strcmp(o->checks[i], o->checks[o->n_checks]))
            return;
    o->n_checks++;
}

/* ---- the primary event ------------------------------------------------------------------- */

/* The kind's class from the kinds list (oom.h ML_OOM_KINDS): 0 accounted, 1 device, 2 host. */
static int kind_class(enum ml_oom_kind k)
{
    return (int)ml_oom_kind_class(k);
}

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

static bool run_ledger(const struct ml_diag_setup *su, const struct ml_train *t, const struct ml_cluster *c,
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
        if (!run_ledger(&su, t, &cc, &l))
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

/* Append to a fix's note ("; " between). */
static void fix_note_more(struct ml_fix *x, const char *text)
{
    size_t n = strlen(x->note);
    (void)snprintf(x->note + n, sizeof(x->note) - n, "%s%s", n ? "; " : "", text);
}

/* Apply the fix's knob (with value v) to the training run t, c or the engine s; the changes go to
 * the fix's setting. */
static bool apply_knob(const struct ctx *x, struct ml_fix *f, uint64_t v, struct ml_train *t, struct ml_cluster *c,
                       struct ml_infer *s)
{
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t n = 0;
    struct ml_edit e = {t, c, s, ch, &n, 0};
    if (!ml_knob_apply(f->knob, &x->kx, &e, v))
        return false;
    ml_changes_text(ch, n, x->dialect, f->setting, sizeof(f->setting));
    return true;
}

/* The setting of a knob whose run is unknown (or rules it out): the knob applied to the
 * defaults, or its hint where its value follows the run's (x 1/2, the pool). */
static void generic_setting(struct ctx *x, struct ml_fix *f, enum ml_dialect dialect)
{
    const struct ml_knob *k = ml_knob_get(f->knob);
    if ((k->flags & ML_KNOB_RELATIVE) && !f->value) {
        (void)snprintf(f->setting, sizeof(f->setting), "%s", k->hint ? k->hint : "");
        return;
    }
    struct ml_train *t = &x->out->scratch.t;
    ml_train_defaults(t, ML_FW_LLAMAFACTORY);
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    c.gpus_per_node = c.nodes = 1;
    struct ml_infer s;
    ml_infer_defaults(&s);
    s.engine = ML_ENGINE_VLLM;
    struct ml_knob_ctx kx = x->kx;
    kx.force = true;
    kx.base = NULL;
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t n = 0;
    struct ml_edit e = {t, &c, &s, ch, &n, 0};
    if (ml_knob_apply(f->knob, &kx, &e, f->value))
        ml_changes_text(ch, n, dialect, f->setting, sizeof(f->setting));
    else
        (void)snprintf(f->setting, sizeof(f->setting), "%s", k->hint ? k->hint : "");
}

/* The inference ledger of settings s on the setup's GPU (tp x pp of them). */
static bool run_serve(struct ctx *x, const struct ml_infer *s, struct ml_serve *sv)
{
    struct ml_cluster c = x->c0;
    c.gpus_per_node = s->tp * s->pp;
    c.nodes = 1;
    struct ml_diag d;
    ml_diag_init(&d);
    return ml_ledger_infer(x->su->arch, x->su->inv, s, &c, &x->out->scratch.led, sv, &d) == ML_OK;
}

/* The KV cache a what-if leaves, carried by the log: the ledger's pool plus the difference
 * between the KV cache the log states and the ledger's as configured (the engine's own
 * profiling is the better measure of what its activations and non-torch memory took). */
static uint64_t kv_carried(const struct ctx *x, const struct ml_serve *sv)
{
    const struct ml_diagnosis *o = x->out;
    if (!o->has_kv_log || sv->error == ML_SERVE_NO_CACHE_BLOCKS || o->serve.error == ML_SERVE_NO_CACHE_BLOCKS)
        return sv->kv_bytes;
    int64_t v = (int64_t)sv->kv_bytes + ((int64_t)o->kv_log - (int64_t)o->serve.kv_bytes);
    return v > 0 ? (uint64_t)v : 0;
}

/* Whether the engine starts with sv and its KV cache holds one request of max_model_len. */
static bool serve_holds(const struct ctx *x, const struct ml_serve *sv, uint64_t *tokens)
{
    uint64_t kv = kv_carried(x, sv);
    *tokens = sv->kv_bytes_per_token ? kv / sv->kv_bytes_per_token : 0;
    return sv->error != ML_SERVE_NO_CACHE_BLOCKS && kv > 0 && *tokens >= sv->max_model_len;
}

/* The smallest share, in hundredths, with which the engine holds one request; 0 when none up to
 * 0.99 does. */
static uint32_t least_share(struct ctx *x, struct ml_fix *f)
{
    struct ml_serve sv;
    uint64_t tokens;
    for (uint32_t t = (x->s0.gpu_util_permille / 10 + 1) * 10; t <= 990; t += 10) {
        struct ml_infer s = x->s0;
        if (apply_knob(x, f, t, NULL, NULL, &s) && run_serve(x, &s, &sv) && serve_holds(x, &sv, &tokens))
            return t;
    }
    return 0;
}

/* The value of a serving knob from the log, the inference ledger or the numbers at the failing
 * moment (runtime); 0 keeps the knob's own rule. False when it cannot be priced. */
static bool serve_value(struct ctx *x, struct ml_fix *f, bool runtime, uint64_t *v)
{
    *v = f->value;
    switch (f->knob) {
    case ML_KNOB_MAX_MODEL_LEN:
        if (!*v)
            (void)serve_holds(x, &x->out->serve, v); /* the tokens the pool holds as configured */
        return *v != 0;
    case ML_KNOB_GPU_UTIL:
        if (!*v)
            *v = least_share(x, f);
        return true;
    case ML_KNOB_GPU_UTIL_DOWN:
        if (runtime) {
            /* The KV pool is allocated up front: each hundredth less returns 1 % of the card.
             * The smallest cut that lets the failing allocation through. */
            uint64_t need = x->used + x->req > x->cap ? x->used + x->req - x->cap : 0;
            uint64_t cut = (need * 1000 + x->cap - 1) / x->cap;
            cut = (cut + 9) / 10 * 10;
            if (cut < 10)
                cut = 10;
            *v = x->s0.gpu_util_permille > cut ? x->s0.gpu_util_permille - cut : 0;
            if (*v < 10)
                *v = 0;
        }
        return *v != 0;
    default: return true;
    }
}

/* The device bytes a serving knob returns: the KV pool's share, the weights, the profile peak. */
static uint64_t serve_back(const struct ml_fix *f, const struct ml_serve *base, const struct ml_serve *sv)
{
    switch (f->knob) {
    case ML_KNOB_GPU_UTIL_DOWN:
        return base->budget_bytes > sv->budget_bytes ? base->budget_bytes - sv->budget_bytes : 0;
    case ML_KNOB_TP_2:
    case ML_KNOB_FP8_WEIGHTS:
        return base->weights_bytes > sv->weights_bytes ? base->weights_bytes - sv->weights_bytes : 0;
    case ML_KNOB_SERVE_BUDGET_2:
    case ML_KNOB_CHUNKED_PREFILL:
    case ML_KNOB_MAX_NUM_SEQS:
        return base->activation_bytes > sv->activation_bytes ? base->activation_bytes - sv->activation_bytes : 0;
    default: return 0;
    }
}

/* The engine's knobs as what-ifs on the inference ledger: returns false for a fix it does not
 * price. Sets fits (the engine starts and holds one max_model_len request; for an OOM at run
 * time also: the failing allocation fits in what the change returns) and a note with the KV
 * cache and tokens it leaves; the bytes saved where the change returns device memory. */
static bool price_serve(struct ctx *x, struct ml_fix *f)
{
    const struct ml_knob *k = ml_knob_get(f->knob);
    if (!k || !(k->flags & ML_KNOB_SERVE))
        return false;
    const struct ml_serve *base = &x->out->serve;
    struct ml_serve sv;
    char a[32], note[200];
    uint64_t tokens = 0;
    bool runtime = (x->e->phase == ML_OPH_SERVING_RUNTIME || (x->serving && x->e->phase == ML_OPH_UNKNOWN)) &&
                   x->has_cap && x->has_free && x->has_req;
    uint64_t v;
    if (!serve_value(x, f, runtime, &v))
        return false;
    if (f->knob == ML_KNOB_GPU_UTIL && !v) {
        f->setting[0] = '\0';
        f->fits = 0;
        fix_note_more(f, _("no share up to 0.99 holds one max_model_len request (inference ledger)"));
        return true;
    }
    struct ml_infer s = x->s0;
    if (!apply_knob(x, f, v, NULL, NULL, &s) || !run_serve(x, &s, &sv))
        return false;
    bool holds = serve_holds(x, &sv, &tokens);
    uint64_t back = serve_back(f, base, &sv);
    if (back) {
        f->has_saves = true;
        f->saves_bytes = back;
        f->saves_from_ledger = true;
    }
    f->fits = holds ? 1 : 0;
    bool returns = f->knob == ML_KNOB_GPU_UTIL_DOWN || f->knob == ML_KNOB_SERVE_BUDGET_2 ||
                   f->knob == ML_KNOB_CHUNKED_PREFILL || f->knob == ML_KNOB_MAX_NUM_SEQS;
    if (runtime && returns)
        f->fits = holds && x->used + x->req <= x->cap + back ? 1 : 0;
    if (sv.error == ML_SERVE_NO_CACHE_BLOCKS)
        (void)snprintf(note, sizeof(note),
                       _("then no room is left for the KV cache: weights %s per GPU alone (inference ledger)"),
                       ml_fmt_bytes_s(a, sizeof(a), sv.weights_bytes));
    else
        (void)snprintf(note, sizeof(note),
                       _("then the KV cache holds %llu tokens, max_model_len %llu%s (inference ledger%s)"),
                       (unsigned long long)tokens, (unsigned long long)sv.max_model_len,
                       holds ? "" : _(": one request does not fit"),
                       x->out->has_kv_log ? _(", carried by the log's KV figure") : "");
    fix_note_more(f, note);
    return true;
}

/* The ledger's extra reserve in the step after a save (accounting notes §1.9) is what an
 * empty_cache() after the save returns to the device. */
static void price_save_callback(struct ctx *x, struct ml_fix *f)
{
    const struct ml_diagnosis *o = x->out;
    for (uint32_t i = 0; i < o->ledger.n; i++) {
        const struct ml_entry *en = &o->ledger.e[i];
        if (en->id == ML_C_ALLOCATOR && en->phases == ML_PH(ML_PHASE_AFTER_SAVE)) {
            f->has_saves = true;
            f->saves_bytes = en->bytes;
            f->saves_from_ledger = true;
            uint64_t after = o->ledger.device_used > en->bytes ? o->ledger.device_used - en->bytes : 0;
            f->device_after = after;
            f->fits = after + o->gap <= o->ledger.capacity ? 1 : 0;
        }
    }
}

/* A training knob applied to the run's settings: its setting from them, and with the ledger the
 * bytes it saves and whether the run then fits. */
static void price_train(struct ctx *x, struct ml_fix *f, bool from_log)
{
    const struct ml_knob *k = ml_knob_get(f->knob);
    struct ml_diagnosis *o = x->out;
    if (!k || !(k->flags & ML_KNOB_TRAIN) || !x->su->train)
        return;
    struct ml_train *t = &o->scratch.t;
    *t = *x->su->train;
    struct ml_cluster c = x->c0;
    if (!x->su->cluster) {
        memset(&c, 0, sizeof(c));
        c.gpus_per_node = c.nodes = 1;
    }
    if (!apply_knob(x, f, f->value, t, &c, NULL) || !x->led)
        return;
    struct ml_ledger *l = &o->scratch.led;
    if (!run_ledger(x->su, t, &c, l))
        return;
    char a[32], b[32];
    uint64_t before = o->ledger.device_used, after = l->device_used;
    uint64_t saved = before > after ? before - after : 0;
    if (from_log) {
        /* The log's figure is what the fix returns at the failing moment; the ledger's is the
         * modelled reserve at the peak: both are shown. */
        if (!f->note[0])
            fix_note(f, _("the ledger models %s of allocator reserve it removes at the peak (device %s after)"),
                     ml_fmt_bytes_s(a, sizeof(a), saved), ml_fmt_bytes_s(b, sizeof(b), after));
        return;
    }
    f->has_saves = true;
    f->saves_bytes = saved;
    f->saves_from_ledger = true;
    f->device_after = after;
    f->fits = after + o->gap <= l->capacity ? 1 : 0;
    if (f->knob == ML_KNOB_OFFLOAD_OPT || f->knob == ML_KNOB_OFFLOAD_ALL) {
        if (x->c0.host_ram_bytes && l->host.peak_bytes > x->c0.host_ram_bytes)
            fix_note(f, _("needs %s of host RAM per node, more than the %s given"),
                     ml_fmt_bytes_s(a, sizeof(a), l->host.peak_bytes),
                     ml_fmt_bytes_s(b, sizeof(b), x->c0.host_ram_bytes));
        else if (!f->note[0])
            fix_note(f, _("host RAM per node then: %s (ledger); 20-40%% slower steps"),
                     ml_fmt_bytes_s(a, sizeof(a), l->host.peak_bytes));
    }
}

/* Write and price a fix: serving knobs with the inference ledger, training knobs with the
 * training ledger, advice with the log's numbers; a knob the run does not give gets its
 * generic setting. */
static void settle(struct ctx *x, struct ml_fix *f)
{
    if (!(x->sled && price_serve(x, f))) {
        bool from_log = f->has_saves && !f->saves_from_ledger;
        if (from_log && x->has_cap && x->has_free && x->has_req) {
            /* Priced by the log: would the failing allocation have succeeded (in use + request -
             * what the fix returns <= capacity)? */
            uint64_t need = x->used + x->req;
            uint64_t back = f->saves_bytes < need ? f->saves_bytes : need;
            f->fits = need - back <= x->cap ? 1 : 0;
        }
        if (f->kind == ML_FIX_EMPTY_CACHE_SAVE && x->led)
            price_save_callback(x, f);
        else if (f->knob != ML_KNOB_NONE)
            price_train(x, f, from_log);
    }
    if (f->knob != ML_KNOB_NONE && !f->setting[0])
        generic_setting(x, f, x->dialect);
}

/* ---- settings for this device ------------------------------------------------------------ */

static void device_settings(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_incident *inc = x->inc;
    switch (e->device) {
    case ML_DEV_HIP:
        /* A2: PYTORCH_HIP_ALLOC_CONF in 2.4-era ROCm wheels, PYTORCH_ALLOC_CONF in the newest. */
        x->var = e->hint == ML_HINT_ALLOC_CONF ? "PYTORCH_ALLOC_CONF" : "PYTORCH_HIP_ALLOC_CONF";
        break;
    case ML_DEV_NPU:
        x->var = "PYTORCH_NPU_ALLOC_CONF"; /* A3 */
        break;
    case ML_DEV_MUSA:
        x->var = "PYTORCH_MUSA_ALLOC_CONF"; /* A6 */
        break;
    case ML_DEV_XPU:
    case ML_DEV_MPS:
    case ML_DEV_HOST:
        x->var = NULL; /* A4/A5: no expandable-segments switch in those messages */
        break;
    default: x->var = e->hint == ML_HINT_ALLOC_CONF ? "PYTORCH_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF"; break;
    }
    /* Observation 3 and A7: never expandable segments on WSL2/Windows or Jetson, with a
     * colocated vLLM (CuMemAllocator), nor when the driver-API path already failed. */
    bool driver = false;
    for (uint32_t i = 0; i < inc->n_events; i++)
        if (inc->ev[i].kind == ML_OOM_DRIVER)
            driver = true;
    if (inc->saw_wsl || inc->saw_windows)
        x->no_exp = _("WSL2/Windows (A7: the driver-API path fails there)");
    else if (inc->saw_jetson)
        x->no_exp = "Jetson (A7)";
    else if (inc->saw_vllm && x->training)
        x->no_exp = _("a colocated vLLM engine (its CuMemAllocator; observation 3)");
    else if (driver)
        x->no_exp = "the CUDA driver error shows the expandable-segments path already failing (A7)";
    else if (inc->saw_expandable)
        x->no_exp = _("expandable segments are already on in this log");
    else if (e->classic && e->device != ML_DEV_NPU)
        x->no_exp = _("this message format is torch <= 2.0, before expandable segments (A1)");
}

/* The allocator fix for fragmentation: expandable segments, or max_split_size_mb where those
 * must not be used (observation 3). */
static struct ml_fix *alloc_fix(struct ctx *x, struct ml_finding *f)
{
    if (!x->var)
        return NULL;
    if (!x->no_exp) {
        struct ml_fix *k = knob(f, ML_FIX_ALLOC_EXPANDABLE, ML_KNOB_EXPANDABLE, 0,
                                _("let the caching allocator grow segments instead of stranding split blocks"));
        if (k && x->e->device == ML_DEV_HIP)
            fix_note(k, _("on DCU/ROCm only if the build supports the VMM path: test it (A2, A7)"));
        return k;
    }
    struct ml_fix *k = advise(f, A_MAX_SPLIT, _("stop the allocator splitting large cached blocks"));
    if (k)
        (void)snprintf(k->setting, sizeof(k->setting), "%s=%s", x->var, advice_table[A_MAX_SPLIT].setting);
    fix_note(k, _("not expandable_segments: %s"), x->no_exp);
    return k;
}

/* ---- rules -------------------------------------------------------------------------------- */

/* The card is full and the request says nothing about size (analysis 3, last point). */
static bool tiny_request(const struct ctx *x)
{
    return x->has_req && x->req <= 64 * ML_MIB;
}

/* The process lines, attributed (ml_oom_attribute_procs; A1 traps, issue 13): another process
 * proven or beyond this one's own line, the used-versus-held gap, or sibling ranks' contexts. */
static void rule_other_process(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_oom_attribution *a = &x->out->procs;
    char b1[32], b2[32], b3[32];
    struct ml_finding *f = NULL;
    uint64_t margin = ML_GIB + (x->has_cap ? x->cap / 20 : 0); /* A1 trap: ~1 GiB context; + 5 % NCCL/library */
    if (a->n_siblings >= 2) {
        /* N equal small lines: each rank's CUDA context on this GPU. Nothing to stop. */
        f = finding(x, ML_CAUSE_OTHER_PROCESS, 500);
        why(f,
            _("%u processes hold one CUDA context each (~%s) on this GPU: other ranks' contexts landing here (no "
              "torch.cuda.set_device(local_rank) / LOCAL_RANK before the first CUDA call), not programs to stop"),
            a->n_siblings, ml_fmt_bytes_s(b1, sizeof(b1), a->sibling_bytes));
        ev_event(f, e);
        advise(f, A_SET_DEVICE,
               _("bind each rank to its own GPU before its first CUDA call (or start it with CUDA_VISIBLE_DEVICES=<its "
                 "GPU>)"));
    }
    if (a->n_others && a->others >= ML_GIB) {
        f = finding(x, ML_CAUSE_OTHER_PROCESS, 900);
        if (a->proven)
            why(f, _("another process holds %s of the %s device while this process holds %s"),
                ml_fmt_bytes_s(b1, sizeof(b1), a->others), ml_fmt_bytes_s(b2, sizeof(b2), x->cap),
                ml_fmt_bytes_s(b3, sizeof(b3), e->this_process));
        else
            why(f,
                _("besides this process's own line, %u process line%s hold %s of the %s device: another process is on "
                  "it"),
                a->n_others, a->n_others == 1 ? "" : "s", ml_fmt_bytes_s(b1, sizeof(b1), a->others),
                ml_fmt_bytes_s(b2, sizeof(b2), x->cap));
    } else if (!e->n_procs && x->has_cap && x->has_free && x->has_alloc && x->used > x->held + margin &&
               x->held < x->cap / 10 * 9) {
        /* Analysis 1: free about zero while this process holds much less than the card. */
        f = finding(x, ML_CAUSE_OTHER_PROCESS, 650);
        why(f, _("%s of the device is in use but PyTorch holds only %s: %s is held outside this process"),
            ml_fmt_bytes_s(b1, sizeof(b1), x->used), ml_fmt_bytes_s(b2, sizeof(b2), x->held),
            ml_fmt_bytes_s(b3, sizeof(b3), x->used - x->held));
    } else {
        f = NULL;
    }
    if (f) {
        ev_event(f, e);
        struct ml_fix *k =
            advise(f,
                   e->device == ML_DEV_HIP   ? A_KILL_HIP
                   : e->device == ML_DEV_NPU ? A_KILL_NPU
                                             : A_KILL_CUDA,
                   _("stop the process that holds the device (a zombie, a second run, an orphaned engine)"));
        fix_saves_log(k, a->others ? a->others : x->used > x->held ? x->used - x->held : 0);
    }
    if (a->own >= 0) {
        const struct ml_oom_proc *o = &e->procs[a->own];
        check(x,
              _("'Process %llu has %s' is this process itself, seen through a container's PID namespace: PyTorch holds "
                "%s and %s is outside its allocator%s"),
              (unsigned long long)o->pid, ml_fmt_bytes_s(b1, sizeof(b1), o->bytes),
              ml_fmt_bytes_s(b2, sizeof(b2), a->held), ml_fmt_bytes_s(b3, sizeof(b3), a->own_outside),
              a->own_outside > 2 * ML_GIB
                  ? _(" (more than 2 GiB: NCCL buffers, CUDA graphs or a colocated engine's pool)")
                  : "");
    }
    if (has(e, ML_OOM_F_THIS_PROCESS) && e->this_process == 0 && x->has_alloc && x->alloc > 0)
        check(x,
              _("NVML reports 0 bytes for this process while PyTorch holds %s: a container hides the PID; use "
                "nvidia-smi on the host"),
              ml_fmt_bytes_s(b1, sizeof(b1), x->alloc));
}

static void rule_fragmentation(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    if (!x->has_ru || !x->has_req || e->kind == ML_OOM_IMPOSSIBLE)
        return;
    char a[32], b[32], c[32];
    uint64_t reserved = x->held ? x->held : 1;
    uint64_t share = x->ru / reserved * 10000 + (x->ru % reserved) * 10000 / reserved; /* per ten thousand */
    uint32_t conf = 0;
    const char *what = NULL;
    /* Analysis 2 / observation 3: absolute and relative. 16 of 19 corpus messages had
     * reserved-unallocated <= 3.8 % of reserved: real demand. */
    if (x->ru >= x->req && share > 1000 && x->ru > 512 * ML_MIB) {
        conf = 800;
        what =
            /* xgettext:no-c-format */
            _("more than the request and more than 10% of reserved: the cache is split into pieces too small to use");
    } else if (x->ru >= x->req && share > 380) {
        conf = 600;
        what = _("more than the request: it is split into pieces smaller than the request");
    } else if (x->ru < x->req && x->has_free && x->ru + x->free >= x->req && x->ru >= 512 * ML_MIB) {
        conf = 550;
        what = _("with the free memory it would hold the request, were it one piece");
    } else if (share > 1000 && x->ru > 512 * ML_MIB) {
        conf = 450;
        /* xgettext:no-c-format */
        what = _("more than 10% of reserved is stranded in split cached blocks");
    } else if (x->ru >= x->req) {
        conf = 300;
        what = _("more than the request, though a small share of reserved");
    }
    bool flushes = x->inc->flush_warnings > 0;
    bool after_save = e->timing == ML_TIM_AFTER_SAVE;
    if (!conf && !flushes)
        return;
    if (!conf) {
        conf = 450;
        what = "DeepSpeed flushed the allocator cache under pressure";
    }
    if (flushes)
        conf += 100; /* A9: the leading indicator */
    if (after_save && x->ru >= x->req)
        conf += 300; /* analysis 5: right after a save -> gather leftovers or fragmentation */
    if (conf > 850)
        conf = 850;
    struct ml_finding *f = finding(x, ML_CAUSE_FRAGMENTATION, conf);
    char d[32];
    if (what && x->has_req)
        why(f, _("%s is reserved but unallocated against a %s request (%s of the %s PyTorch reserved): %s%s"),
            ml_fmt_bytes_s(a, sizeof(a), x->ru), ml_fmt_bytes_s(b, sizeof(b), x->req),
            ml_fmt_percent_s(c, sizeof(c), x->ru, reserved), ml_fmt_bytes_s(d, sizeof(d), x->held), what,
            after_save && x->ru >= x->req
                ? _("; and it fails in the first step after a checkpoint save, which frees "
                    "and re-gathers parameters into new blocks (docs/ledger.md allocator_reserve, save_gather)")
                : "");
    else
        why(f, "%s", what);
    ev_event(f, e);
    if (after_save)
        ev_ref(f, &e->timing_ref);
    if (flushes) {
        ev_ref(f, &x->inc->flush_ref);
    }
    struct ml_fix *k = alloc_fix(x, f);
    if (k)
        fix_saves_log(k, x->ru);
    if (x->led && x->t0.deepspeed && x->t0.zero.stage == 3 && ml_zero_overlap(&x->t0.zero)) {
        /* Accounting notes §1.2 and §5: overlap_comm puts gathers on side streams with their own
         * allocator pools. */
        knob(f, ML_FIX_ZERO3_BUFFERS, ML_KNOB_ZERO3_BUFFERS_2, 0, "");
    }
    if (after_save) {
        advise(f, A_SAVE_CALLBACK,
               _("return the cache after each save: torch.cuda.empty_cache() and gc.collect() in a "
                 "TrainerCallback.on_save"));
    }
}

/* The parameters the setup knows (--model), 0 when none. */
static uint64_t setup_params(const struct ctx *x)
{
    return x->su->params ? x->su->params : x->su->inv ? x->su->inv->total_params : 0;
}

/* params x k B within 3 %: one flat copy of the whole model (k = 2: 16-bit, 4: fp32); 0 if not. */
static int copy_match(const struct ctx *x)
{
    uint64_t P = setup_params(x);
    for (int k = 2; P && x->has_req && x->req >= ML_GIB && k <= 4; k += 2) {
        uint64_t w = P * (uint64_t)k;
        if (x->req >= w / 100 * 97 && x->req <= w / 100 * 103 + 2 * ML_MIB)
            return k;
    }
    return 0;
}

/* b x s x V x k B of the run (-10 % / +3 %): the full-sequence logits; k, or 0 if not. */
static int logits_match(const struct ctx *x, uint64_t *want)
{
    const struct ml_arch *ar = x->su->arch;
    const struct ml_train *t = x->su->train;
    if (!ar || !t || !t->seq_len || !ar->vocab || !x->has_req || x->req < 64 * ML_MIB)
        return 0;
    uint64_t bsz = t->micro_batch ? t->micro_batch : 1;
    for (int k = 4; k >= 2; k -= 2) {
        *want = bsz * t->seq_len * ar->vocab * (uint64_t)k;
        if (x->req >= *want / 100 * 90 && x->req <= *want / 100 * 103 + 2 * ML_MIB)
            return k;
    }
    return 0;
}

/* b x heads x s^2 x k B of the model: the eager attention matrix; the request is the block
 * rounded up to 2 MiB above 10 MiB (A1), so it bounds s from both sides. */
static bool eager_match(const struct ctx *x, int *k, uint64_t *smin, uint64_t *smax)
{
    const struct ml_arch *ar = x->su->arch;
    const struct ml_train *t = x->su->train;
    if (!ar || !t || !ar->n_heads || !x->has_req || x->req <= 64 * ML_MIB ||
        !(t->attn == ML_ATTN_EAGER || x->e->eager_frames))
        return false; /* (a tiny request decomposes into anything: it only says the card was full, C8) */
    uint64_t bsz = t->micro_batch ? t->micro_batch : 1;
    uint64_t hi_bytes = x->req, lo_bytes = x->req > 10 * ML_MIB ? x->req - 2 * ML_MIB : 0;
    *k = 4;
    uint64_t per = bsz * ar->n_heads * (uint64_t)*k;
    *smax = *smin = 0;
    while ((*smax + 1) * (*smax + 1) * per <= hi_bytes)
        (*smax)++;
    while (*smin * *smin * per <= lo_bytes)
        (*smin)++;
    return *smax && *smin <= *smax && (!t->seq_len || *smax <= t->seq_len + 8);
}

/* The tensor classes by their sizes, with the model given (analysis 3). */
static void rule_fingerprints(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    char a[32], b[32];
    int k = copy_match(x);
    if (k) {
        /* params x 2 B: a whole-model flat 16-bit buffer (ZeRO-2 init, state-dict gather, merge). */
        struct ml_finding *f = finding(x, ML_CAUSE_MODEL_STATES, 800);
        why(f,
            _("the %s request is params x %d B = %s: one flat %s copy of the whole model (ZeRO-2 init, a state-dict "
              "gather or a merge)"),
            ml_fmt_bytes_s(a, sizeof(a), x->req), k, ml_fmt_bytes_s(b, sizeof(b), setup_params(x) * (uint64_t)k),
            k == 2 ? "16-bit" : "fp32");
        ev_event(f, e);
        knob(f, ML_FIX_ZERO3, ML_KNOB_ZERO3, 0, _("shard the model states: DeepSpeed ZeRO-3 (or FSDP full_shard)"));
        knob(f, ML_FIX_OFFLOAD_OPT, ML_KNOB_OFFLOAD_OPT, 0, _("offload the optimizer states to CPU"));
    }
    uint64_t want;
    k = logits_match(x, &want);
    if (k) {
        const struct ml_train *t = x->su->train;
        struct ml_finding *f = finding(x, ML_CAUSE_LOGITS, 800);
        why(f, _("the %s request matches b x s x V x %d B = %llu x %llu x %llu x %d = %s: the full-sequence %s logits"),
            ml_fmt_bytes_s(a, sizeof(a), x->req), k, (unsigned long long)(t->micro_batch ? t->micro_batch : 1),
            (unsigned long long)t->seq_len, (unsigned long long)x->su->arch->vocab, k,
            ml_fmt_bytes_s(b, sizeof(b), want), k == 4 ? "fp32" : "16-bit");
        ev_event(f, e);
    }
    uint64_t smin, smax;
    if (eager_match(x, &k, &smin, &smax)) {
        struct ml_finding *f = finding(x, ML_CAUSE_EAGER_ATTENTION, 0);
        if (f)
            ev_note(f, _("%s = b x heads x s^2 x %d B (fp32 softmax) with %u heads: a batch of %llu-%llu tokens"),
                    ml_fmt_bytes_s(a, sizeof(a), x->req), k, x->su->arch->n_heads, (unsigned long long)smin,
                    (unsigned long long)smax);
    }
}

static void model_states_fixes(struct ctx *x, struct ml_finding *f)
{
    const struct ml_train *t = x->su->train;
    if (!t || !(t->deepspeed && t->zero.stage == 3))
        knob(f, ML_FIX_ZERO3, ML_KNOB_ZERO3, 0,
             _("shard weights, gradients and optimizer states over the GPUs: DeepSpeed ZeRO-3 (or FSDP full_shard)"));
    if (!t || t->method == ML_METHOD_FULL || t->method == ML_METHOD_FREEZE)
        knob(f, ML_FIX_OPTIM_8BIT, ML_KNOB_ADAMW_8BIT, 0,
             _("use an 8-bit (or paged) optimizer: 2 B of states per parameter instead of 8"));
    if (t && t->deepspeed && t->zero.stage == 3)
        knob(f, ML_FIX_OFFLOAD_ALL, ML_KNOB_OFFLOAD_ALL, 0,
             /* xgettext:no-c-format */
             _("offload optimizer states and parameters to CPU (20-40% slower steps)"));
    else
        knob(f, ML_FIX_OFFLOAD_OPT, ML_KNOB_OFFLOAD_OPT, 0, _("offload the optimizer states to CPU"));
    if (!t || t->method == ML_METHOD_FULL)
        advise(f, A_LORA, _("train LoRA adapters (or QLoRA on a 4-bit base) instead of every weight"));
}

static void activation_fixes(struct ctx *x, struct ml_finding *f)
{
    const struct ml_train *t = x->su->train;
    knob(f, ML_FIX_CUTOFF, ML_KNOB_SEQ_1_2, 0,
         t ? _("cap the sequence length (at the data's real p99 length)")
           : _("cap the sequence length at the data's real p99 length"));
    if (!t || t->micro_batch >= 2)
        knob(f, ML_FIX_BATCH, ML_KNOB_MICRO_BATCH_2, 0,
             t ? _("halve the micro-batch and double the accumulation (same effective batch)")
               : _("halve the micro-batch and double gradient accumulation"));
    if (!t || t->grad_ckpt == ML_GC_OFF)
        knob(f, ML_FIX_GRAD_CKPT, ML_KNOB_GRAD_CKPT, 0,
             /* xgettext:no-c-format */
             _("turn gradient checkpointing on (keeps one input per layer; ~20-30% more compute)"));
}

static void eager_fixes(struct ctx *x, struct ml_finding *f)
{
    struct ml_fix *k =
        knob(f, ML_FIX_ATTN, ML_KNOB_SDPA, 0, _("use SDPA or flash attention: no materialised s x s scores"));
    if (k && (x->e->device == ML_DEV_HIP || x->e->device == ML_DEV_NPU)) {
        /* On ROCm/DCU SDPA falls back to the math kernel where no memory-efficient or flash
         * backend is built: that materialises the same scores (accounting notes §4.1). */
        fix_note(k, _("on ROCm/DCU only if the build's SDPA has a memory-efficient or flash backend; the math fallback "
                      "materialises the same s^2 scores"));
    }
}

/* The phases after training's: generation, communication, a serving engine at run time. */
static void rule_phase_late(struct ctx *x, const char *cue)
{
    const struct ml_oom_event *e = x->e;
    struct ml_finding *f;
    switch (e->phase) {
    case ML_OPH_GENERATE:
        f = finding(x, ML_CAUSE_ACTIVATIONS, 450);
        why(f,
            _("the OOM is raised in generation (%s): the KV cache and activations grow with batch x (prompt + new "
              "tokens)"),
            cue);
        ev_ref(f, &e->phase_ref);
        ev_event(f, e);
        advise(f, A_GENERATE_SMALLER, _("generate with a smaller batch or fewer new tokens"));
        advise(f, A_LOAD_4BIT, _("load the model in 4 or 8 bits"));
        break;
    case ML_OPH_COMMUNICATION:
        if (e->format_error)
            break; /* rule_misleading */
        f = finding(x, ML_CAUSE_NCCL_BUFFERS, e->kind == ML_OOM_NCCL ? 700 : 500);
        why(f,
            _("the OOM is raised in communication (%s): NCCL allocates its buffers outside PyTorch's allocator and "
              "fails when the cache holds almost all memory (A8, analysis 8)"),
            cue);
        ev_ref(f, &e->phase_ref);
        ev_event(f, e);
        advise(f, A_NCCL_FRACTION,
               _("leave room outside PyTorch's cache for NCCL: empty the cache before collectives or cap PyTorch's "
                 "share"));
        break;
    case ML_OPH_SERVING_RUNTIME:
        if (e->kind == ML_OOM_ALLOCATOR) {
            f = finding(x, ML_CAUSE_KV_CACHE_BUDGET, 600);
            why(f,
                _("a serving engine runs out at run time (%s): it pre-allocates the KV cache to fill the card, leaving "
                  "no headroom for prefill activations (analysis 7)"),
                cue);
            ev_ref(f, &e->phase_ref);
            ev_event(f, e);
            serve_share_fix(x, f, _("give the KV cache a smaller share of the card"));
            serve_batch_fix(x, f, _("batch fewer tokens per step"));
        }
        break;
    default: break;
    }
}

static void rule_phase(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_train *t = x->su->train;
    char b[32];
    struct ml_finding *f;
    const char *cue = e->phase_cue[0] ? e->phase_cue : ml_oom_phase_name(e->phase);
    bool big = x->has_req && x->req >= ML_GIB;
    switch (e->phase) {
    case ML_OPH_LOAD:
        /* Analysis 4: from_pretrained / _load_state_dict_into_meta_model / .to() -> load. */
        f = finding(x, ML_CAUSE_MODEL_STATES, 750);
        why(f,
            _("the OOM is raised while loading weights (%s): the weights alone do not fit per device; check params x "
              "bytes against the card and whether every rank loads a full copy"),
            cue);
        ev_ref(f, &e->phase_ref);
        ev_event(f, e);
        knob(f, ML_FIX_ZERO3, ML_KNOB_ZERO3, 0,
             _("shard the weights at load: ZeRO-3 zero.Init (or device_map=\"auto\" / tensor parallelism for "
               "inference)"));
        knob(f, ML_FIX_LORA, ML_KNOB_QLORA, 0, _("load the base in 4 or 8 bits (QLoRA / quantized inference)"));
        advise(f, A_MORE_GPUS, _("more or larger GPUs (tensor parallelism for serving)"));
        break;
    case ML_OPH_OPTIMIZER_STEP:
        /* Analysis 4: optimizer.step / _init_group / _multi_tensor_adamw -> states created lazily. */
        f = finding(x, ML_CAUSE_MODEL_STATES, 700);
        why(f,
            _("the OOM is raised in the optimizer step (%s): Adam creates its states (8 B/param fp32) at the first "
              "applied step, on top of weights and gradients"),
            cue);
        ev_ref(f, &e->phase_ref);
        ev_event(f, e);
        model_states_fixes(x, f);
        break;
    case ML_OPH_LOSS:
        /* Analysis 4 / observation 9: cross_entropy, lm_head, .float() -> logits. */
        f = finding(x, ML_CAUSE_LOGITS, big ? 700 : 550);
        if (big)
            why(f,
                _("the OOM is raised in the loss (%s) for a %s tensor: the logits are tokens x vocab x 4 B in fp32%s"),
                cue, ml_fmt_bytes_s(b, sizeof(b), x->req),
                x->inc->saw_dpo ? _(", doubled for chosen+rejected in DPO") : "");
        else
            why(f, _("the OOM is raised in the loss (%s): the logits are tokens x vocab x 4 B in fp32%s"), cue,
                x->inc->saw_dpo ? _(", doubled for chosen+rejected in DPO") : "");
        ev_ref(f, &e->phase_ref);
        ev_event(f, e);
        knob(f, ML_FIX_CHUNKED_LOSS, ML_KNOB_LIGER, 0,
             _("use a fused/chunked cross-entropy that never materialises all logits"));
        activation_fixes(x, f);
        break;
    case ML_OPH_BACKWARD:
        f = finding(x, ML_CAUSE_ACTIVATIONS, big ? 550 : 450);
        why(f,
            _("the OOM is raised in backward (%s): saved activations plus the gradients being produced; batch x "
              "sequence sets them"),
            cue);
        ev_ref(f, &e->phase_ref);
        ev_event(f, e);
        activation_fixes(x, f);
        if ((t && t->grad_ckpt == ML_GC_OFF) && !e->ckpt_frames) {
            struct ml_finding *g = finding(x, ML_CAUSE_NO_GRAD_CHECKPOINTING, 600);
            why(g, _("gradient checkpointing is off in the config: every layer keeps its activations for backward"));
            ev_ref(g, &e->phase_ref);
            knob(g, ML_FIX_GRAD_CKPT, ML_KNOB_GRAD_CKPT, 0, _("turn gradient checkpointing on"));
        }
        break;
    case ML_OPH_FORWARD:
        if (e->eager_frames || (t && t->attn == ML_ATTN_EAGER)) {
            f = finding(x, ML_CAUSE_EAGER_ATTENTION, e->eager_frames ? 550 : 450);
            why(f,
                _("the OOM is raised in eager attention's softmax (%s): it materialises b x heads x s^2 scores in "
                  "fp32"),
                cue);
            ev_ref(f, &e->phase_ref);
            eager_fixes(x, f);
        }
        f = finding(x, ML_CAUSE_ACTIVATIONS, big ? 500 : 350);
        why(f,
            _("the OOM is raised in the forward pass (%s): activations of batch x sequence on top of the model states"),
            cue);
        ev_ref(f, &e->phase_ref);
        activation_fixes(x, f);
        if (e->zero3_frames)
            knob(f, ML_FIX_ZERO3_BUFFERS, ML_KNOB_ZERO3_BUFFERS_2, 0, "");
        break;
    case ML_OPH_CHECKPOINT_SAVE:
        f = finding(x, ML_CAUSE_CHECKPOINT_GATHER, 750);
        why(f,
            _("the OOM is raised while saving (%s): ZeRO-3/FSDP consolidation gathers each module's full parameters (2 "
              "x V x h for the embedding or lm_head) on every rank"),
            cue);
        ev_ref(f, &e->phase_ref);
        ev_event(f, e);
        knob(f, ML_FIX_GATHER16_OFF, ML_KNOB_GATHER16_OFF, 0,
             _("do not gather the 16-bit model at save (LoRA needs only the adapter; rebuild with zero_to_fp32.py)"));
        advise(f, A_SAVE_CALLBACK, _("free the cache before and after each save (a TrainerCallback)"));
        break;
    case ML_OPH_EVAL:
        /* Analysis 4: prediction_loop / nested_concat -> eval accumulation. */
        f = finding(x, ML_CAUSE_EVAL_ACCUMULATION, 650);
        why(f,
            _("the OOM is raised in evaluation (%s): predictions/logits gathered on the GPU across eval steps, or eval "
              "run without no_grad"),
            cue);
        ev_ref(f, &e->phase_ref);
        ev_event(f, e);
        advise(f, A_EVAL_CPU, _("move eval predictions to CPU every step and keep only the loss"));
        break;
    case ML_OPH_GENERATE:
    case ML_OPH_COMMUNICATION:
    case ML_OPH_SERVING_RUNTIME: rule_phase_late(x, cue); break;
    default: break;
    }
}

static void rule_timing(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_train *t = x->su->train;
    struct ml_finding *f;
    switch (e->timing) {
    case ML_TIM_AFTER_SAVE: {
        /* Analysis 5: right after a save -> gather leftovers or fragmentation (transformers#23307,
         * DeepSpeed#3582, verl#5455; accounting notes §1.9). */
        uint32_t conf = 450;
        if (t && t->deepspeed && t->zero.stage == 3)
            conf = t->zero.gather_16bit_on_save ? 550 : 400;
        f = finding(x, ML_CAUSE_CHECKPOINT_GATHER, conf);
        if (e->timing_ref.step >= 0)
            why(f,
                _("the OOM comes in the first step after the checkpoint save at step %lld: gathered parameters or "
                  "split cached blocks survive the save, and ZeRO-3 re-gathers its parameters cold"),
                (long long)e->timing_ref.step);
        else
            why(f, _("the OOM comes in the first step after a checkpoint save: gathered parameters or split cached "
                     "blocks survive the save"));
        ev_ref(f, &e->timing_ref);
        if (t && t->deepspeed && t->zero.stage == 3 && t->zero.gather_16bit_on_save)
            knob(f, ML_FIX_GATHER16_OFF, ML_KNOB_GATHER16_OFF, 0, _("do not gather the 16-bit model at save"));
        /* The two mechanisms the finding names have their own fixes: split cached blocks -> the
         * allocator's expandable segments (accounting notes §1.9, A2); the cold re-gather under
         * ZeRO-3 -> smaller prefetch and live-parameter budgets (§1.2, §1.6). */
        struct ml_fix *a = alloc_fix(x, f);
        if (a)
            fix_saves_log(a, x->ru);
        if (t && t->deepspeed && t->zero.stage == 3)
            knob(f, ML_FIX_ZERO3_BUFFERS, ML_KNOB_ZERO3_BUFFERS_2, 0, "");
        advise(f, A_SAVE_CALLBACK,
               _("return the cache after each save: gc.collect() and torch.cuda.empty_cache() in a "
                 "TrainerCallback.on_save"));
        struct ml_fix *k = advise(f, A_SAVE_STEPS, _("save less often: fewer steps start from a cold, split cache"));
        if (k && x->su->save_steps)
            (void)snprintf(k->setting, sizeof(k->setting), "save_steps: %llu",
                           (unsigned long long)(x->su->save_steps * 5));
        fix_note(k, _("does not lower the peak of the step after a save; it makes it rarer"));
        break;
    }
    case ML_TIM_AT_SAVE:
        f = finding(x, ML_CAUSE_CHECKPOINT_GATHER, 700);
        why(f, _("the OOM comes during a checkpoint save"));
        ev_ref(f, &e->timing_ref);
        knob(f, ML_FIX_GATHER16_OFF, ML_KNOB_GATHER16_OFF, 0, _("do not gather the 16-bit model at save"));
        break;
    case ML_TIM_AT_EVAL:
        f = finding(x, ML_CAUSE_EVAL_ACCUMULATION, 600);
        why(f, _("the OOM comes during evaluation (analysis 5: at multiples of eval steps -> the eval path)"));
        ev_ref(f, &e->timing_ref);
        advise(f, A_EVAL_CPU, _("move eval predictions to CPU every step and keep only the loss"));
        break;
    case ML_TIM_RESUME:
        f = finding(x, ML_CAUSE_MODEL_STATES, 500);
        why(f, _("the OOM comes right after resuming: the optimizer states are loaded on top of a running model "
                 "(analysis 5, LlamaFactory#4710)"));
        ev_ref(f, &e->timing_ref);
        model_states_fixes(x, f);
        break;
    case ML_TIM_FIRST_STEP:
        if (e->phase == ML_OPH_UNKNOWN || e->phase == ML_OPH_FORWARD || e->phase == ML_OPH_BACKWARD) {
            f = finding(x, t && t->grad_ckpt == ML_GC_OFF ? ML_CAUSE_NO_GRAD_CHECKPOINTING : ML_CAUSE_MODEL_STATES,
                        450);
            why(f, _("the OOM comes at the first step whatever the data: a static over-commitment (model states, no "
                     "gradient checkpointing or the wrong dtype; analysis 5)"));
            ev_ref(f, &e->timing_ref);
            if (t && t->grad_ckpt == ML_GC_OFF)
                knob(f, ML_FIX_GRAD_CKPT, ML_KNOB_GRAD_CKPT, 0, _("turn gradient checkpointing on"));
            else
                model_states_fixes(x, f);
        }
        break;
    case ML_TIM_MID_RUN:
        if (e->step > 1 && (e->phase == ML_OPH_UNKNOWN || e->phase == ML_OPH_FORWARD || e->phase == ML_OPH_BACKWARD ||
                            e->phase == ML_OPH_LOSS)) {
            f = finding(x, ML_CAUSE_LONG_SEQUENCE, 450);
            why(f,
                _("the OOM comes at step %lld, after steps that fit, with no save or eval next to it: a data-dependent "
                  "step, most likely the longest sample so far (analysis 5)"),
                (long long)e->step);
            ev_ref(f, &e->timing_ref);
            activation_fixes(x, f);
            check(
                x,
                _("resume from the last checkpoint: if it dies at the same step, one sample is too long (analysis 5)"));
        }
        break;
    default: break;
    }
    /* Caught and retried: the exception's frames keep the failed step's tensors alive, so the
     * retry starts with that memory held (issue 13). */
    if (e->chained) {
        f = finding(x, ML_CAUSE_TENSOR_LEAK, 600);
        why(f, _("the OOM is caught and the step retried ('During handling of the above exception'): the exception and "
                 "its frames keep the failed step's tensors alive, so the retry starts with that memory held"));
        ev_event(f, e);
        advise(f, A_RETRY_FREE,
               _("free the failed step before retrying: the exception and its frames keep its tensors alive"));
    }
    /* Steady growth of DeepSpeed's MA (see_memory_usage) -> retained tensors (analysis 5). */
    const struct ml_incident *inc = x->inc;
    if (inc->mem_samples >= 3 && inc->ma_rising && inc->ma_last > inc->ma_first + inc->ma_first / 20) {
        char a[32], b[32];
        f = finding(x, ML_CAUSE_TENSOR_LEAK, 650);
        why(f,
            _("MemoryAllocated grows from %s to %s over %u samples with a fixed shape: tensors are kept across steps"),
            ml_fmt_bytes_s(a, sizeof(a), inc->ma_first), ml_fmt_bytes_s(b, sizeof(b), inc->ma_last), inc->mem_samples);
        ev_ref(f, &inc->mem_ref);
        advise(f, A_RECORD_HISTORY,
               _("find what keeps tensors: losses logged without .item(), outputs kept in lists, hooks"));
    }
}

static void rule_misleading(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    char a[32], b[32], c[32];
    struct ml_finding *f;
    if (e->kind == ML_OOM_IMPOSSIBLE) {
        /* A1 traps / analysis 8: "more than 1EB" follows NCCL timeouts. */
        f = finding(x, ML_CAUSE_MISLEADING, 900);
        why(f, _("an impossible request (more than 1 EB) is a symptom of an earlier failure, usually a NCCL timeout: "
                 "read the first error in the log"));
        ev_event(f, e);
        advise(f, A_NCCL_DEBUG, _("read the first error of the run (the collective that timed out)"));
        return;
    }
    if (e->format_error) {
        /* Analysis 4: c10d_logger / _tensor_str -> the OOM happened while formatting an error. */
        f = finding(x, ML_CAUSE_MISLEADING, 850);
        why(f,
            _("the OOM is raised while building an error message (%s: repr() of a tensor calls .float()); the real "
              "failure is the call being logged, earlier in the log"),
            e->phase_cue[0] ? e->phase_cue : "c10d_logger");
        ev_ref(f, &e->phase_ref);
        ev_event(f, e);
        advise(f, A_DIST_DEBUG, _("read the error the logger was formatting (the collective call and its arguments)"));
        return;
    }
    if (e->kind == ML_OOM_DRIVER) {
        f = finding(x, ML_CAUSE_MISLEADING, 650);
        why(f, _("\"CUDA driver error: out of memory\" comes from the expandable-segments (cuMemCreate) path, seen on "
                 "Jetson and WSL2 while memory is still free (A7)"));
        ev_event(f, e);
        advise(f, A_EXPANDABLE_OFF, _("turn expandable segments off"));
        return;
    }
    if (x->has_alloc && x->alloc == 0 && x->has_ru && x->ru == 0 && x->has_free && x->has_cap &&
        x->free >= x->cap / 10 * 9) {
        /* The very first allocation fails on an empty card (A4: false OOMs on the first
         * allocation, llm-scaler#305; unified-memory APUs that expose the wrong pool). */
        f = finding(x, ML_CAUSE_MISLEADING, 600);
        why(f,
            _("nothing is allocated yet and %s of %s is free: the first allocation fails, so the device reports less "
              "memory than it has (unified memory, a wrong pool) or the tensor is simply too large"),
            ml_fmt_bytes_s(a, sizeof(a), x->free), ml_fmt_bytes_s(b, sizeof(b), x->cap));
        ev_event(f, e);
        advise(f, A_VRAM_INFO,
               _("check what the runtime reports as the device's memory (the VRAM carve-out / driver pool)"));
        return;
    }
    if (x->has_req && x->has_free && x->free >= x->req + x->req / 4 && x->free - x->req >= 512 * ML_MIB &&
        e->kind == ML_OOM_ALLOCATOR) {
        f = finding(x, ML_CAUSE_MISLEADING, has(e, ML_OOM_F_ALLOWED) ? 500 : 600);
        why(f,
            _("the device reports %s free, more than the %s request: the limit is elsewhere (a per-process fraction, "
              "unified memory, or the driver's accounting)"),
            ml_fmt_bytes_s(a, sizeof(a), x->free), ml_fmt_bytes_s(b, sizeof(b), x->req));
        ev_event(f, e);
        if (has(e, ML_OOM_F_ALLOWED))
            ev_note(f, _("%s allowed by set_per_process_memory_fraction"), ml_fmt_bytes_s(c, sizeof(c), e->allowed));
        advise(f, A_FRACTION_ONE,
               _("compare torch.cuda.mem_get_info() with the allocator's view; remove memory-fraction limits"));
    }
}

static void rule_oversize(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    char a[32], b[32];
    if (!x->has_req)
        return;
    if (x->has_cap && x->req > x->cap && e->kind != ML_OOM_IMPOSSIBLE) {
        /* Analysis 3: a request larger than total capacity can never succeed. */
        bool empty = x->has_alloc && x->alloc == 0;
        struct ml_finding *f = finding(x, ML_CAUSE_OVERSIZE_TENSOR, empty ? 550 : 900);
        why(f,
            _("one request of %s is larger than the whole %s device: it can never succeed; freeing memory cannot help, "
              "the tensor must shrink"),
            ml_fmt_bytes_s(a, sizeof(a), x->req), ml_fmt_bytes_s(b, sizeof(b), x->cap));
        ev_event(f, e);
        advise(f, A_SMALLER_TENSOR, _("shrink the tensor: chunk it, cut the sequence or batch, or fix a wrong shape"));
    }
}

static void rule_host(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_incident *inc = x->inc;
    const struct ml_train *t = x->su->train;
    char a[32], b[32], c[32];
    struct ml_finding *f = NULL;
    switch (e->kind) {
    case ML_OOM_HOST_KILLER:
        f = finding(x, ML_CAUSE_HOST_RAM, 900);
        if (has(e, ML_OOM_F_THIS_PROCESS))
            why(f, _("the kernel's OOM killer killed a process holding %s of host RAM (anon-rss)"),
                ml_fmt_bytes_s(a, sizeof(a), e->this_process));
        else
            why(f, _("the kernel's OOM killer killed the process: host RAM ran out (A11)"));
        break;
    case ML_OOM_HOST_ALLOC:
        if (has(e, ML_OOM_F_REQUESTED) && e->requested >= 2 * (uint64_t)1 << 40) {
            /* 2 TiB is the host RAM of the largest single training nodes (DGX H100/H200: 2 TB);
             * a request above it is a wrong shape, not a shortage. */
            struct ml_finding *g = finding(x, ML_CAUSE_OVERSIZE_TENSOR, 850);
            why(g,
                _("the host allocator was asked for %s in one piece, more than any single machine has: a wrong shape "
                  "or a runaway size, not a shortage"),
                ml_fmt_bytes_s(a, sizeof(a), e->requested));
            ev_event(g, e);
            advise(g, A_SMALLER_TENSOR, _("find the tensor with the wrong shape: no machine has that much memory"));
            f = finding(x, ML_CAUSE_HOST_RAM, 350);
            why(f, _("PyTorch's CPU allocator could not get %s of host RAM (DefaultCPUAllocator, A11)"),
                ml_fmt_bytes_s(a, sizeof(a), e->requested));
            ev_event(f, e);
            return;
        } else {
            f = finding(x, ML_CAUSE_HOST_RAM, 850);
        }
        if (has(e, ML_OOM_F_REQUESTED))
            why(f, _("PyTorch's CPU allocator could not get %s of host RAM (DefaultCPUAllocator, A11)"),
                ml_fmt_bytes_s(a, sizeof(a), e->requested));
        else
            why(f, _("PyTorch's CPU allocator could not get host RAM (A11)"));
        break;
    case ML_OOM_HOST_RAY:
        f = finding(x, ML_CAUSE_HOST_RAM, 850);
        why(f, _("Ray killed the task because the node ran low on memory (A11)"));
        break;
    case ML_OOM_HOST_SIGKILL: {
        /* A11 caveat: SIGKILL also comes from schedulers and people; host OOM is certain only with
         * a kernel/cgroup record, likely when it coincides with load/save/offload or high CPU memory. */
        uint32_t conf = 550;
        if (inc->kernel_oom_lines)
            conf = 900;
        else if (inc->cpu_percent_permille >= 900 || e->timing == ML_TIM_LOAD || e->timing == ML_TIM_AT_SAVE ||
                 e->timing == ML_TIM_AFTER_SAVE)
            conf = 700;
        f = finding(x, ML_CAUSE_HOST_RAM, conf);
        why(f,
            _("the process was killed by SIGKILL (exit %d) with no Python error: the usual killer is the kernel's OOM "
              "killer, but schedulers and people send SIGKILL too"),
            e->exit_code);
        if (!inc->kernel_oom_lines)
            check(x, _("confirm host OOM: dmesg -T | grep -i -e oom -e 'killed process' (in a container: cat "
                       "/sys/fs/cgroup/memory.events)"));
        break;
    }
    case ML_OOM_NCCL_SHM:
        f = finding(x, ML_CAUSE_HOST_RAM, 700);
        why(f, _("NCCL could not create its /dev/shm segment: the container's shared memory is exhausted, not the GPU "
                 "(A8)"));
        ev_event(f, e);
        advise(f, A_SHM, _("give the container more shared memory"));
        return;
    default: return;
    }
    ev_event(f, e);
    if (e->timing_ref.line)
        ev_ref(f, &e->timing_ref);
    if (inc->cpu_percent_permille)
        ev_ref(f, &inc->cpu_ref);
    /* Analysis 6: ZeRO-3 save gathering the 16-bit model on rank 0, CPU offload, per-rank loads. */
    if (!t || (t->deepspeed && t->zero.stage == 3 && t->zero.gather_16bit_on_save) || inc->saw_zero3)
        knob(f, ML_FIX_GATHER16_OFF, ML_KNOB_GATHER16_OFF, 0,
             _("do not gather the whole 16-bit model on rank 0 at save (then zero_to_fp32.py)"));
    advise(f, A_LOW_CPU_MEM, _("load the model without a full copy per rank in host RAM"));
    advise(f, A_FEWER_RANKS, _("run fewer ranks per node (each loads its own copy)"));
    struct ml_fix *k = advise(f, A_HOST_RAM, _("more host RAM or swap"));
    if (x->led && k) {
        const struct ml_ledger *l = &x->out->ledger;
        k->has_saves = false;
        if (x->c0.host_ram_bytes)
            fix_note(k, _("the ledger needs %s of host RAM per node at its peak; %s given"),
                     ml_fmt_bytes_s(a, sizeof(a), l->host.peak_bytes),
                     ml_fmt_bytes_s(b, sizeof(b), x->c0.host_ram_bytes));
        else
            fix_note(k, _("the ledger needs %s of host RAM per node at its peak (load %s, save %s)"),
                     ml_fmt_bytes_s(a, sizeof(a), l->host.peak_bytes), ml_fmt_bytes_s(b, sizeof(b), l->host.load_bytes),
                     ml_fmt_bytes_s(c, sizeof(c), l->host.save_bytes));
    }
}

static void rule_serving(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_incident *inc = x->inc;
    char a[32], b[32], c[32];
    struct ml_finding *f;
    switch (e->kind) {
    case ML_OOM_VLLM_KV_TOO_SMALL: {
        /* A10 / analysis 7: the KV cache cannot hold one full-length request. */
        f = finding(x, ML_CAUSE_KV_CACHE_BUDGET, 900);
        if (has(e, ML_OOM_F_KV_TOKENS))
            why(f, _("the KV cache holds %llu tokens but max_model_len is %llu: one full-length request does not fit"),
                (unsigned long long)e->kv_tokens, (unsigned long long)e->max_seq_len);
        else if (has(e, ML_OOM_F_REQUESTED | ML_OOM_F_FREE))
            why(f, _("one full-length request needs %s of KV cache, %s is available"),
                ml_fmt_bytes_s(a, sizeof(a), e->requested), ml_fmt_bytes_s(b, sizeof(b), e->free));
        else
            why(f, _("the KV cache cannot hold one request of max_model_len tokens"));
        ev_event(f, e);
        if (inc->has_profile)
            ev_ref(f, &inc->profile_ref);
        uint64_t fit = has(e, ML_OOM_F_EST_MAX_LEN) ? e->est_max_len : has(e, ML_OOM_F_KV_TOKENS) ? e->kv_tokens : 0;
        if (fit)
            knob(f, ML_FIX_VLLM_MAX_LEN, ML_KNOB_MAX_MODEL_LEN, fit,
                 _("serve a shorter context: the largest that the KV cache holds"));
        if (has(e, ML_OOM_F_KV_TOKENS | ML_OOM_F_MAX_SEQ_LEN) && inc->has_profile && inc->prof_kv_cache &&
            inc->prof_total && inc->prof_util_permille && e->kv_tokens) {
            /* KV bytes scale with tokens: need = kv_cache_size x max_len / kv_tokens; the extra
             * share of total_gpu_memory raises gpu_memory_utilization (analysis 7). */
            uint64_t need = e->kv_tokens ? inc->prof_kv_cache / e->kv_tokens * e->max_seq_len +
                                               inc->prof_kv_cache % e->kv_tokens * e->max_seq_len / e->kv_tokens
                                         : 0;
            if (need > inc->prof_kv_cache) {
                uint64_t extra = need - inc->prof_kv_cache;
                uint64_t pm = inc->prof_util_permille + (extra * 1000 + inc->prof_total - 1) / inc->prof_total;
                uint64_t hundredths = (pm + 9) / 10;
                if (hundredths <= 100) {
                    struct ml_fix *k = knob(f, ML_FIX_VLLM_UTIL_UP, ML_KNOB_GPU_UTIL, hundredths * 10,
                                            _("give vLLM a larger share of the card for the KV cache"));
                    fix_note(k, _("%s more KV cache (%s for %llu tokens instead of %s; profiling line)"),
                             ml_fmt_bytes_s(a, sizeof(a), extra), ml_fmt_bytes_s(b, sizeof(b), need),
                             (unsigned long long)e->max_seq_len, ml_fmt_bytes_s(c, sizeof(c), inc->prof_kv_cache));
                }
            }
        } else {
            knob(f, ML_FIX_VLLM_UTIL_UP, ML_KNOB_GPU_UTIL, 0, _("give vLLM a larger share of the card"));
        }
        knob(f, ML_FIX_KV_FP8, ML_KNOB_KV_FP8, 0, _("store the KV cache in 8 bits: twice the tokens"));
        /* The profile run pushes max_num_batched_tokens (V0: max_model_len) through the model; with
         * chunked prefill it is a small budget and the KV cache gets the rest (vllm#10517: V0 turns
         * it on by itself above 32K, so 35K starts where 29K fails). */
        knob(f, ML_FIX_VLLM_SEQS, ML_KNOB_CHUNKED_PREFILL, 2048,
             _("prefill in chunks: the profiling peak shrinks and the KV cache grows"));
        knob(f, ML_FIX_MORE_MEMORY, ML_KNOB_TP_2, 0, _("split the model over more GPUs"));
        if (inc->has_profile)
            check(x, _("KV capacity is not monotonic in max_model_len (vllm#10517): the profiling peak depends on it"));
        break;
    }
    case ML_OOM_VLLM_NO_CACHE:
        f = finding(x, ML_CAUSE_KV_CACHE_BUDGET, 850);
        why(f, _("after the weights and the profiling peak nothing is left for KV cache at this gpu_memory_utilization "
                 "(A10)"));
        ev_event(f, e);
        if (inc->has_profile)
            ev_ref(f, &inc->profile_ref);
        if (inc->gpu_blocks == 1)
            ev_note(f, _("# GPU blocks: 0"));
        /* With the inference ledger the smallest share that works is found (price_serve). */
        knob(f, ML_FIX_VLLM_UTIL_UP, ML_KNOB_GPU_UTIL, 0,
             _("give vLLM a larger share of the card (the fraction must cover weights + activations + KV)"));
        knob(f, ML_FIX_VLLM_SEQS, ML_KNOB_SERVE_BUDGET_2, 0, _("shrink the profiling peak"));
        knob(f, ML_FIX_MORE_MEMORY, ML_KNOB_TP_2, 0, _("quantized weights or more GPUs"));
        break;
    case ML_OOM_VLLM_FREE_MEMORY: {
        f = finding(x, ML_CAUSE_SERVING_FREE_MEMORY, 850);
        char d[32];
        why(f,
            _("at start-up only %s of %s is free but gpu_memory_utilization asks for %s: %s is already used by "
              "something else (A10: the zombie / second-engine signature)"),
            ml_fmt_bytes_s(a, sizeof(a), e->free), ml_fmt_bytes_s(b, sizeof(b), e->total),
            ml_fmt_bytes_s(c, sizeof(c), e->requested),
            ml_fmt_bytes_s(d, sizeof(d), e->total > e->free ? e->total - e->free : 0));
        ev_event(f, e);
        struct ml_fix *k =
            advise(f, A_KILL_CUDA, _("stop what holds the card (an orphaned VLLM::EngineCore, a previous server)"));
        fix_saves_log(k, e->total > e->free ? e->total - e->free : 0);
        if (e->total) {
            uint64_t h = e->free * 100 / e->total;
            if (h >= 1)
                knob(f, ML_FIX_VLLM_UTIL_DOWN, ML_KNOB_GPU_UTIL_DOWN, h * 10,
                     _("or ask for no more than what is free"));
        }
        struct ml_finding *g = finding(x, ML_CAUSE_OTHER_PROCESS, 600);
        why(g, _("%s of the device is held outside this engine"),
            ml_fmt_bytes_s(a, sizeof(a), e->total > e->free ? e->total - e->free : 0));
        ev_event(g, e);
        break;
    }
    case ML_OOM_VLLM_WARMUP:
        f = finding(x, ML_CAUSE_LOGITS, 600);
        why(f, _("the sampler warm-up materialises logits for max_num_seqs dummy requests (A10): vocab x requests, "
                 "often in fp32"));
        ev_event(f, e);
        knob(f, ML_FIX_VLLM_SEQS, ML_KNOB_MAX_NUM_SEQS, 64, _("warm up fewer sequences"));
        knob(f, ML_FIX_VLLM_UTIL_DOWN, ML_KNOB_GPU_UTIL_DOWN, 0, _("leave more room outside the KV cache"));
        break;
    case ML_OOM_SGLANG:
        f = finding(x, ML_CAUSE_KV_CACHE_BUDGET, 700);
        why(f, _("SGLang's static memory fraction leaves too little for the KV pool or for prefill"));
        ev_event(f, e);
        advise(f, A_SGLANG_FRACTION, _("lower the static fraction or the prefill chunk"));
        break;
    default: return;
    }
    if (inc->preemptions)
        check(x, _("%llu preemption warnings: the KV cache was already short at run time"),
              (unsigned long long)inc->preemptions);
}

/* ---- known issues of the stack ------------------------------------------------------------ */

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

static void rule_known_issues(struct ctx *x)
{
    const struct ml_incident *inc = x->inc;
    for (uint32_t i = 0; i < inc->n_versions; i++) {
        const struct ml_oom_version *v = &inc->versions[i];
        for (size_t k = 0; k < sizeof(known_issues) / sizeof(known_issues[0]); k++) {
            const struct known_issue *ki = &known_issues[k];
            if (!issue_holds(x, ki, v))
                continue;
            struct ml_finding *f = finding(x, ki->cause, 650);
            if (!f)
                continue;
            if (!f->why[0])
                why(f, "%s", _(ki->what));
            else
                ev_note(f, "%s", _(ki->what));
            char text[64];
            (void)snprintf(text, sizeof(text), "%s %s", v->name, v->value);
            ev_line(f, v->file, v->line, text);
            if (ki->knob != ML_KNOB_NONE) {
                struct ml_fix *kf = knob(f, ki->fix, ki->knob, 0, _(ki->action));
                if (kf && !x->su->train && !kf->setting[0])
                    generic_setting(x, kf, ki->dialect);
                continue;
            }
            bool fresh;
            struct ml_fix *kf = add_fix(f, ki->fix, 0, _(ki->action), &fresh);
            if (fresh)
                (void)snprintf(kf->setting, sizeof(kf->setting), "%s", ki->setting);
        }
    }
}

static void rule_library(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    struct ml_finding *f;
    switch (e->kind) {
    case ML_OOM_CUBLAS:
    case ML_OOM_CUDNN:
        /* A7: no memory left for a library handle or workspace: another process or the cache
         * holds the card. */
        f = finding(x, ML_CAUSE_OTHER_PROCESS, 450);
        why(f, _("a cuBLAS/cuDNN handle or workspace could not be allocated: another process or PyTorch's own cache "
                 "already holds the card (A7)"));
        ev_event(f, e);
        advise(f, A_LIST_CUDA, _("check what else holds the device"));
        f = finding(x, ML_CAUSE_FRAGMENTATION, 350);
        why(f, _("libraries allocate outside the caching allocator: a full cache starves them"));
        advise(f, A_EMPTY_CACHE, _("return cached blocks before the library call"));
        break;
    case ML_OOM_RUNTIME:
        f = finding(x, ML_CAUSE_UNKNOWN, 400);
        why(f, _("a raw runtime error, outside the caching allocator: context creation, a library or a custom kernel "
                 "(A7); the stack may point at a later call"));
        ev_event(f, e);
        check(x, _("rerun with CUDA_LAUNCH_BLOCKING=1 (HIP_LAUNCH_BLOCKING=1) to get the failing call"));
        break;
    case ML_OOM_NCCL:
        f = finding(x, ML_CAUSE_NCCL_BUFFERS, 700);
        if (has(e, ML_OOM_F_REQUESTED)) {
            char a[32];
            why(f,
                _("NCCL could not allocate %s for its buffers: it allocates outside PyTorch's allocator (A8, analysis "
                  "8)"),
                ml_fmt_bytes_s(a, sizeof(a), e->requested));
        } else {
            why(f, _("NCCL's own CUDA allocation failed ('out of memory'): it allocates outside PyTorch's allocator "
                     "(A8, analysis 8)"));
        }
        ev_event(f, e);
        advise(f, A_NCCL_MARGIN, _("leave memory outside PyTorch's cache for NCCL"));
        advise(f, A_SET_DEVICE,
               _("bind each rank to its own GPU before creating the process group, or every rank's NCCL context lands "
                 "on GPU 0"));
        check(
            x,
            _("with NCCL >= 2.23 cuMem host allocations can fail this way: NCCL_CUMEM_HOST_ENABLE=0 (pytorch#152302)"));
        break;
    case ML_OOM_NPU_WORKSPACE:
        f = finding(x, ML_CAUSE_ACTIVATIONS, 450);
        why(f, _("an NPU operator workspace (e.g. FlashAttentionScore) could not be allocated (A3)"));
        ev_event(f, e);
        advise(f, A_TASK_QUEUE, _("let the task queue reuse workspaces"));
        activation_fixes(x, f);
        break;
    default: break;
    }
}

/* The frame context outranks a code line's flag (issue 24): an fp32 copy made while loading or
 * in the optimizer (its constructor, its step) is the designed fp32 master copy of mixed
 * precision, not an accidental upcast. */
static bool designed_fp32(const struct ml_oom_event *e)
{
    return e->phase == ML_OPH_LOAD || e->phase == ML_OPH_OPTIMIZER_STEP;
}

/* An explicit fp32 upcast in the frames of the failing call (observation 9: fp32 upcasts in the
 * forward, in accelerate's output conversion, in samplers and in the PPO trainer caused OOMs). */
static void rule_fp32(struct ctx *x)
{
    const struct ml_oom_event *e = x->e;
    char a[32];
    if (!e->fp32_frames || e->format_error || designed_fp32(e))
        return;
    bool big = x->has_req && x->req >= ML_GIB;
    struct ml_finding *f = finding(x, ML_CAUSE_FP32_UPCAST, big ? 750 : 500);
    if (big)
        why(f,
            _("the failing call upcasts to fp32 (.float(), an upcast hook or accelerate's _convert_to_fp32) and asks "
              "for %s: a tensor meant to stay 16-bit is copied at twice its bytes"),
            ml_fmt_bytes_s(a, sizeof(a), x->req));
    else
        why(f, _("the failing call upcasts to fp32 (.float(), an upcast hook or accelerate's _convert_to_fp32): a "
                 "tensor meant to stay 16-bit is copied at twice its bytes"));
    ev_ref(f, &e->phase_ref);
    ev_event(f, e);
    advise(f, A_NO_FP32, _("keep the tensor in 16 bits: drop the .float() / upcast, or compute the loss in chunks"));
}

/* Settings from the config that name a cause directly (observation 10: defaults). */
static void rule_config(struct ctx *x)
{
    const struct ml_train *t = x->su->train;
    const struct ml_oom_event *e = x->e;
    if (!t || kind_class(e->kind) == 2 || x->serving)
        return;
    if (t->attn == ML_ATTN_EAGER && e->phase != ML_OPH_LOAD && e->phase != ML_OPH_OPTIMIZER_STEP) {
        struct ml_finding *f = finding(x, ML_CAUSE_EAGER_ATTENTION, e->eager_frames ? 550 : 400);
        why(f,
            _("attention runs eagerly (flash_attn: disabled in %s): b x heads x s^2 scores in fp32 are materialised in "
              "every layer"),
            x->su->config_name ? x->su->config_name : _("the config"));
        if (e->eager_frames)
            ev_ref(f, &e->phase_ref);
        eager_fixes(x, f);
    }
    if (t->grad_ckpt == ML_GC_OFF && (e->phase == ML_OPH_FORWARD || e->phase == ML_OPH_BACKWARD ||
                                      e->phase == ML_OPH_LOSS || e->phase == ML_OPH_UNKNOWN)) {
        struct ml_finding *f = finding(x, ML_CAUSE_NO_GRAD_CHECKPOINTING, 500);
        why(f, _("gradient checkpointing is off: every layer keeps its activations until backward"));
        knob(f, ML_FIX_GRAD_CKPT, ML_KNOB_GRAD_CKPT, 0, _("turn gradient checkpointing on"));
    }
}

/* The ZeRO-3 buffers fix: what it halves in the user's DeepSpeed file (the setting is the knob's). */
static void zero3_action(struct ctx *x, struct ml_fix *k)
{
    const struct ml_train *t = x->su->train;
    char a[24], b[24];
    if (!t || !t->deepspeed || t->zero.stage != 3 || !x->su->arch) {
        (void)snprintf(k->action, sizeof(k->action),
                       _("smaller ZeRO-3 prefetch and live-parameter budgets, no side-stream overlap"));
        return;
    }
    uint64_t pf = ml_zero_prefetch_bucket(&t->zero, x->su->arch->hidden);
    uint64_t ml = ml_zero_max_live(&t->zero);
    (void)snprintf(k->action, sizeof(k->action),
                   _("halve the ZeRO-3 prefetch and live-parameter budgets (now %s and %s)%s"),
                   ml_fmt_knob(a, sizeof(a), pf), ml_fmt_knob(b, sizeof(b), ml),
                   ml_zero_overlap(&t->zero) ? _(" and stop overlapping communication on side streams") : "");
    if (x->su->ds_name && !k->note[0])
        fix_note(k, _("in %s; docs/ledger.md zero_gathered_params (DeepSpeed stage3.py's prefetch and live budgets)"),
                 x->su->ds_name);
}

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
        x->has_ru = true;
        x->ru = e->reserved_unalloc;
    } else if (has(e, ML_OOM_F_RESERVED) && e->cached_form) {
        x->has_ru = true; /* torch 1.0-1.3's "X cached)": the cache beyond allocated (A1) */
        x->ru = e->reserved;
    } else if (has(e, ML_OOM_F_RESERVED | ML_OOM_F_ALLOCATED) && e->reserved >= e->allocated) {
        x->has_ru = true;
        x->ru = e->reserved - e->allocated;
    }
    x->held = x->alloc + (x->has_ru ? x->ru : 0);
    x->used = x->has_cap && x->has_free && x->cap >= x->free ? x->cap - x->free : 0;
    if (kind_class(e->kind) == 0 && x->has_cap && x->has_free && x->has_alloc && e->kind != ML_OOM_VLLM_FREE_MEMORY) {
        out->has_device_numbers = true;
        out->used = x->used;
        out->held = x->held;
        out->has_stranded = x->has_ru;
        out->stranded = x->ru;
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
    if (!run_ledger(x->su, &x->t0, &x->c0, &out->ledger)) {
        ml_diag_set(diag, ML_ERR_INVALID, _("the ledger of the configured run could not be computed"));
        return;
    }
    x->led = true;
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
    if (!run_serve(x, &x->s0, &out->serve)) {
        ml_diag_set(diag, ML_ERR_INVALID, _("the inference ledger of the configured engine could not be computed"));
        return;
    }
    x->sled = true;
    out->has_serve = true;
    x->kx.base = &out->serve;
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
        check(x, _("rocm-smi --showmeminfo vram --showpids: ROCm prints no process lines (A2), so only free memory "
                   "tells about other processes"));
    if (e->timing == ML_TIM_AFTER_SAVE || e->timing == ML_TIM_AT_SAVE)
        check(x, _("compare torch.cuda.max_memory_allocated() (or DeepSpeed's MA/Max_MA) of the steps before and after "
                   "the save"));
    if (e->timing == ML_TIM_AFTER_SAVE && x->inc->flush_warnings == 0)
        check(x, _("look for 'pytorch allocator cache flushes' warnings before the OOM: the leading sign of "
                   "fragmentation (A9)"));
    if (x->has_req && tiny_request(x) && kind_class(e->kind) == 0)
        check(x,
              _("the %s request is rounded (2 MiB / 20 MiB blocks, A1): it says the card is full, not which tensor "
                "filled it"),
              ml_fmt_bytes_s((char[32]){0}, 32, x->req));
    if (out->has_ledger && out->gap)
        check(x,
              _("the ledger's device figure is %s below what the log needed (in use + request); the 'fits' checks add "
                "that gap"),
              ml_fmt_bytes_s((char[32]){0}, 32, out->gap));
}

/* ---- the evidence model ------------------------------------------------------------------ */

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
    /* the step of a serving engine's start-up (issue 24) */
    switch (x->e->episode) {
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
    uint64_t card = x->has_cap ? x->cap : x->inc->prof_total;
    if (x->inc->weights_bytes && card && x->inc->weights_bytes < card / 2 && x->e->episode != ML_EP_WEIGHTS)
        ON(V_WEIGHTS_SMALL);
    /* a cause whose remedy cannot free the request cannot lead: defragmenting frees at most the
     * stranded cache, ending the other processes at most their bytes (with what is free already) */
    uint64_t free_now = x->has_free ? x->free : 0;
    if (x->has_req && x->has_ru && x->e->kind != ML_OOM_IMPOSSIBLE && x->inc->flush_warnings == 0 &&
        x->ru + free_now < x->req)
        ON(V_FRAG_SHORT);
    const struct ml_oom_attribution *pa = &x->out->procs;
    if (x->has_req && pa->n_others > 0 && pa->n_siblings == 0 && pa->others + free_now < x->req)
        ON(V_OTHERS_SHORT);
    if (x->e->device == ML_DEV_XPU && x->e->kind == ML_OOM_ALLOCATOR && x->has_req && x->req >= 4 * ML_GIB &&
        (!x->has_alloc || x->alloc < ML_GIB))
        ON(D_XPU_BIG); /* a per-allocation limit of the platform (A4) */
}

/* The allocator's numbers as evidence: the request against the card, the stranded cache
 * (analysis 2, observation 3), the processes (analysis 1). */
static void number_features(const struct ctx *x, struct ml_features *f)
{
    const struct ml_oom_event *e = x->e;
    if (!(e->kind == ML_OOM_ALLOCATOR || e->kind == ML_OOM_MPS) || !x->has_cap)
        return;
    if (x->has_req && x->req > x->cap)
        ON(N_REQ_GT_CAP);
    else if (x->has_req && x->req >= ML_GIB && x->req >= x->cap / 10)
        ON(N_BIG_REQUEST);
    if (x->has_alloc && x->alloc == 0 && x->ru == 0)
        ON(N_EMPTY_CARD);
    if (x->has_req && x->has_free && x->free >= x->req + x->req / 4 && x->free - x->req >= 512 * ML_MIB)
        ON(N_FREE_COVERS);
    if (x->held >= x->cap / 10 * 9 || (x->has_free && x->used >= x->cap / 100 * 95)) {
        ON(N_FULL);
        if (x->has_req && x->req <= 64 * ML_MIB)
            ON(N_TINY_FULL);
    }
    if (x->has_ru && x->has_req) {
        /* observation 3: 16 of 19 corpus messages had at most 3.8 % of reserved stranded */
        uint64_t share = x->ru * 10000 / (x->held ? x->held : 1); /* per ten thousand */
        if (x->ru >= x->req && share > 1000 && x->ru > 512 * ML_MIB)
            ON(FRAG_HIGH);
        else if (x->ru >= x->req && share > 380)
            ON(FRAG_MID);
        else if (x->ru < x->req && x->has_free && x->ru + x->free >= x->req && x->ru >= 512 * ML_MIB)
            ON(FRAG_WITH_FREE);
        else if (x->ru >= x->req)
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
    if (e->fp32_frames && !e->format_error && !designed_fp32(e) && x->has_req && x->req >= ML_GIB)
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
    if (copy_match(x))
        ON(FP_MODEL_COPY);
    uint64_t want, smin, smax;
    int k;
    if (logits_match(x, &want))
        ON(FP_LOGITS);
    if (eager_match(x, &k, &smin, &smax))
        ON(FP_EAGER);
    const struct ml_train *t = x->su->train;
    if (t && !x->serving && kind_class(e->kind) != 2) {
        if (t->attn == ML_ATTN_EAGER && e->phase != ML_OPH_LOAD && e->phase != ML_OPH_OPTIMIZER_STEP)
            ON(CFG_EAGER);
        if (t->grad_ckpt == ML_GC_OFF && (e->phase == ML_OPH_FORWARD || e->phase == ML_OPH_BACKWARD ||
                                          e->phase == ML_OPH_LOSS || e->phase == ML_OPH_UNKNOWN))
            ON(CFG_NO_GRAD_CKPT);
    }
    for (uint32_t i = 0; i < inc->n_versions; i++)
        for (size_t j = 0; j < sizeof(known_issues) / sizeof(known_issues[0]); j++)
            if (issue_holds(x, &known_issues[j], &inc->versions[i]))
                f->on[issue_evidence(known_issues[j].when)] = true;
    if (x->out->implausible)
        ON(N_IMPOSSIBLE);
}

static void features(const struct ctx *x, struct ml_features *f)
{
    memset(f, 0, sizeof(*f));
    kind_features(x, f);
    number_features(x, f);
    context_features(x, f);
    run_features(x, f);
}

#undef ON

/* Fixes for a cause that no rule wrote: the same ones its rule gives. */
static void cause_fixes(struct ctx *x, struct ml_finding *f)
{
    if (x->e->kind == ML_OOM_GGML && f->cause != ML_CAUSE_HOST_RAM && f->cause != ML_CAUSE_OTHER_PROCESS) {
        /* llama.cpp / Ollama: the buffer's role says which of its settings frees it */
        if ((f->cause == ML_CAUSE_MODEL_STATES || f->cause == ML_CAUSE_OVERSIZE_TENSOR) && x->e->device != ML_DEV_HOST)
            advise(f, A_GGML_LAYERS, _("keep fewer layers on the GPU (or a smaller quantization)"));
        if (f->cause != ML_CAUSE_MODEL_STATES)
            advise(f, A_GGML_KV, _("flash attention and a quantized KV cache"));
        advise(f, A_GGML_CTX, _("a shorter context or a smaller batch"));
        /* fewer layers on the GPU put more on the host: no fix for a buffer in host RAM */
        if (f->cause != ML_CAUSE_MODEL_STATES && x->e->device != ML_DEV_HOST)
            advise(f, A_GGML_LAYERS, _("keep fewer layers on the GPU"));
        return;
    }
    bool serving = x->serving || x->engine || x->inc->saw_vllm || x->inc->saw_sglang || x->inc->saw_tgi;
    if (serving && (f->cause == ML_CAUSE_ACTIVATIONS || f->cause == ML_CAUSE_LONG_SEQUENCE ||
                    (f->cause == ML_CAUSE_LOGITS && !x->training))) {
        /* a serving engine's activations are its batch of tokens (analysis 7); its sampler's
         * logits are vocabulary x max_num_seqs x 4 B */
        serve_batch_fix(x, f,
                        f->cause == ML_CAUSE_LOGITS ? _("warm up and sample fewer sequences at once (max_num_seqs)")
                                                    : _("batch fewer tokens per step"));
        serve_share_fix(x, f, _("leave more headroom outside the KV cache"));
        return;
    }
    if (serving && !x->training && f->cause == ML_CAUSE_MODEL_STATES && x->inc->saw_tgi && !x->inc->saw_vllm &&
        !x->inc->saw_sglang) {
        advise(f, A_TGI_SHARDS, _("split the model over more GPUs"));
        advise(f, A_TGI_QUANTIZE, _("serve quantized weights"));
        return;
    }
    if (serving && !x->training && f->cause == ML_CAUSE_MODEL_STATES) {
        knob(f, ML_FIX_MORE_MEMORY, ML_KNOB_TP_2, 0, _("split the model over more GPUs"));
        knob(f, ML_FIX_QUANTIZE, ML_KNOB_FP8_WEIGHTS, 0, _("serve quantized weights"));
        return;
    }
    if (f->cause == ML_CAUSE_SERVING_HEADROOM) {
        /* each engine's own settings: SGLang's static fraction, TGI's memory fraction, vLLM's
         * utilization and sequences */
        bool sglang = x->inc->saw_sglang && !x->inc->saw_vllm, tgi = x->inc->saw_tgi && !x->inc->saw_vllm;
        if (sglang)
            advise(f, A_SGLANG_FRACTION, _("lower SGLang's static memory fraction"));
        else if (tgi)
            advise(f, A_TGI_FRACTION, _("leave TGI headroom outside its KV budget"));
        else {
            knob(f, ML_FIX_VLLM_UTIL_DOWN, ML_KNOB_GPU_UTIL_DOWN, 0,
                 _("lower the engine's static share, so that graphs, the sampler and activations fit outside it"));
            knob(f, ML_FIX_VLLM_SEQS, ML_KNOB_SERVE_BUDGET_2, 0, _("run fewer sequences at once"));
        }
        if (!x->inc->engine.enforce_eager && !tgi)
            advise(f, A_ENFORCE_EAGER, _("serve without CUDA graphs"));
        return;
    }
    switch (f->cause) {
    case ML_CAUSE_MODEL_STATES: model_states_fixes(x, f); break;
    case ML_CAUSE_ACTIVATIONS:
    case ML_CAUSE_LONG_SEQUENCE:
    case ML_CAUSE_NO_GRAD_CHECKPOINTING: activation_fixes(x, f); break;
    case ML_CAUSE_LOGITS:
        knob(f, ML_FIX_CHUNKED_LOSS, ML_KNOB_LIGER, 0,
             _("use a fused/chunked cross-entropy that never materialises all logits"));
        activation_fixes(x, f);
        break;
    case ML_CAUSE_EAGER_ATTENTION: eager_fixes(x, f); break;
    case ML_CAUSE_FP32_UPCAST: advise(f, A_NO_FP32, _("keep the tensor in 16 bits: drop the .float() / upcast")); break;
    case ML_CAUSE_EVAL_ACCUMULATION:
        advise(f, A_EVAL_CPU, _("move eval predictions to CPU every step and keep only the loss"));
        break;
    case ML_CAUSE_TENSOR_LEAK:
        if (x->e->chained)
            advise(f, A_RETRY_FREE,
                   _("free the failed step before retrying: the exception and its frames keep its tensors alive"));
        advise(f, A_RECORD_HISTORY,
               _("find what keeps tensors: losses logged without .item(), outputs kept in lists, hooks"));
        break;
    case ML_CAUSE_FRAGMENTATION: (void)alloc_fix(x, f); break;
    case ML_CAUSE_OTHER_PROCESS: advise(f, A_LIST_CUDA, _("check what else holds the device")); break;
    case ML_CAUSE_CHECKPOINT_GATHER:
        knob(f, ML_FIX_GATHER16_OFF, ML_KNOB_GATHER16_OFF, 0, _("do not gather the 16-bit model at save"));
        advise(f, A_SAVE_CALLBACK, _("free the cache before and after each save (a TrainerCallback)"));
        break;
    case ML_CAUSE_KV_CACHE_BUDGET:
        serve_share_fix(x, f, _("give the KV cache a smaller share of the card"));
        serve_batch_fix(x, f, _("batch fewer tokens per step"));
        break;
    case ML_CAUSE_HOST_RAM:
        advise(f, A_LOW_CPU_MEM, _("load the model without a full copy per rank in host RAM"));
        break;
    case ML_CAUSE_NCCL_BUFFERS: advise(f, A_NCCL_MARGIN, _("leave memory outside PyTorch's cache for NCCL")); break;
    case ML_CAUSE_OVERSIZE_TENSOR:
        advise(f, A_SMALLER_TENSOR, _("shrink the tensor: chunk it, cut the sequence or batch, or fix a wrong shape"));
        break;
    default: break;
    }
}

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
static void rank_findings(struct ctx *x)
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
            why(f, "%s", d ? _(d->story) : _("named by this log's evidence"));
            ev_event(f, x->e);
        }
        if (!f->n_fix || x->e->kind == ML_OOM_GGML)
            cause_fixes(x, f);
    }
    if (!n) {
        struct ml_finding *f = &keep[n++];
        *f = empty;
        f->cause = ML_CAUSE_UNKNOWN;
        f->confidence = r->p_none_permille;
        why(f, _("no cause is named by this text: the message carries no size, phase or timing clue that singles one "
                 "out"));
        ev_event(f, x->e);
    }
    /* A full card in a training run: making room works whatever filled it, so the first finding
     * also offers the model states' relief (sharding, offload), the costliest fixes last. */
    if (o->features.on[ML_EV_N_FULL] && x->training && keep[0].cause != ML_CAUSE_MODEL_STATES &&
        keep[0].cause != ML_CAUSE_UNKNOWN && keep[0].n_fix < ML_DIAG_MAX_FIXES)
        model_states_fixes(x, &keep[0]);
    memcpy(o->f, keep, sizeof(o->f[0]) * n);
    o->n_findings = n;
}

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
static void fit_fixes_to_run(struct ctx *x)
{
    uint32_t runs = run_kinds(x);
    struct ml_diagnosis *o = x->out;
    if (!runs) {
        /* the log shows no kind of run: the fixes that fit any run; a trainer's own need its
         * evidence (its config, its steps or frames) */
        runs = ML_RUN_ANY & ~ML_RUN_TRAINING;
        check(x, _("the log does not show what kind of run failed: the fixes that need a trainer (ZeRO-3, an "
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

/* What would tell the first two candidates apart, when the answer is "cannot tell"
 * (validation/DIAGNOSE.md): the sources of the evidence rows that name one of them and not the
 * other and that this log lacks, by their weight, closing with the config when none was given;
 * with no candidate, the frames, the step, the config and the device's process list. */
static void decide_by(struct ctx *x)
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
        (void)snprintf(o->decide_by[o->n_decide++], sizeof(o->decide_by[0]), "%s", _(src[ML_SRC_CONFIG]));
}

/* One big request below the card (issue 13): what its size can be, as hypotheses; the phase or
 * the model given says which is likely. The vocabularies of the common families (their configs'
 * vocab_size) and the head counts of the common sizes. */
static const struct {
    uint64_t vocab;
    const char *families;
} vocabularies[] = {
    {32000, "Llama 2, Mistral 7B"},
    {32064, "Phi-3"},
    {49152, "StarCoder2, SmolLM"},
    {64000, "Yi"},
    {65024, "ChatGLM2/3, Falcon"},
    {100352, "Phi-4"},
    {128256, "Llama 3"},
    {151936, "Qwen2/3 (small)"},
    {152064, "Qwen2.5 (7B+)"},
    {201088, "gpt-oss"},
    {256000, "Gemma"},
};
static const uint32_t head_counts[] = {16, 24, 28, 32, 40, 48, 64, 96, 128};

static void hypothesis(struct ml_big_request *b, enum ml_request_what what, uint64_t count, uint64_t per,
                       uint32_t bytes, bool model)
{
    if (b->n < ML_DIAG_MAX_HYPOTHESES)
        b->h[b->n++] = (struct ml_request_hypothesis){what, count, per, bytes, model};
}

static uint64_t isqrt(uint64_t v)
{
    uint64_t r = 0;
    for (uint64_t bit = (uint64_t)1 << 62; bit; bit >>= 2) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
    }
    return r;
}

static void big_request(struct ctx *x)
{
    struct ml_big_request *b = &x->out->big;
    memset(b, 0, sizeof(*b));
    b->likely = -1;
    if (!x->out->features.on[ML_EV_N_BIG_REQUEST])
        return;
    const struct ml_arch *ar = x->su->arch;
    const struct ml_oom_event *e = x->e;
    b->has = true;
    b->bytes = x->req;
    b->share_permille = (uint32_t)(x->req * 1000 / x->cap);
    /* Without the model every decomposition fits the message's rounding: they are hypotheses.
     * With it, a weight matrix of its shape (hidden x intermediate, vocab x hidden) within 1 %. */
    for (uint32_t k = 4; k >= 2; k -= 2) {
        if (ar && ar->vocab)
            hypothesis(b, ML_REQ_LOGITS, x->req / (ar->vocab * k), ar->vocab, k, true);
        for (size_t i = 0; i < sizeof(vocabularies) / sizeof(vocabularies[0]); i++)
            if (!ar || ar->vocab != vocabularies[i].vocab)
                hypothesis(b, ML_REQ_LOGITS, x->req / (vocabularies[i].vocab * k), vocabularies[i].vocab, k, false);
        for (size_t i = 0; i < sizeof(head_counts) / sizeof(head_counts[0]); i++)
            hypothesis(b, ML_REQ_SCORES, isqrt(x->req / (head_counts[i] * k)), head_counts[i], k,
                       ar && ar->n_heads == head_counts[i]);
    }
    int k = copy_match(x);
    hypothesis(b, ML_REQ_WEIGHTS, x->req / 2, 0, 2, k == 2);
    hypothesis(b, ML_REQ_WEIGHTS, x->req / 4, 0, 4, k == 4);
    const uint64_t shapes[][2] = {{ar ? ar->hidden : 0, ar ? ar->intermediate : 0},
                                  {ar ? ar->vocab : 0, ar ? ar->hidden : 0}};
    for (size_t i = 0; i < 2; i++)
        for (uint32_t kb = 2; kb <= 4 && shapes[i][0] && shapes[i][1]; kb += 2) {
            uint64_t w = shapes[i][0] * shapes[i][1] * kb;
            if (x->req >= w / 100 * 99 && x->req <= w / 100 * 101 + 2 * ML_MIB)
                hypothesis(b, ML_REQ_LAYER, shapes[i][0], shapes[i][1], kb, true);
        }
    for (uint32_t i = 0; i < b->n; i++) {
        const struct ml_request_hypothesis *h = &b->h[i];
        bool by_phase = (h->what == ML_REQ_LOGITS && e->phase == ML_OPH_LOSS && h->bytes == 4) ||
                        (h->what == ML_REQ_SCORES && e->eager_frames) ||
                        (h->what == ML_REQ_WEIGHTS && (e->phase == ML_OPH_LOAD || e->phase == ML_OPH_OPTIMIZER_STEP ||
                                                       e->phase == ML_OPH_CHECKPOINT_SAVE));
        if (b->likely < 0 && (by_phase || h->model))
            b->likely = (int32_t)i;
    }
}

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
        check(x,
              _("the message's numbers cannot all be true (%s: allocated %s of a %s device); retyped or OCR'd? paste "
                "the text: no cause is built on them"),
              list, ml_fmt_bytes_s(a, sizeof(a), e0->allocated), ml_fmt_bytes_s(b, sizeof(b), e0->total));
    }
    if (x->has_req && x->req <= 64 * ML_MIB && x->out->features.on[ML_EV_N_FULL]) {
        char a[32];
        check(x,
              _("the failing request is tiny (%s): the card was already full, so the cause is what filled it, not this "
                "allocation"),
              ml_fmt_bytes_s(a, sizeof(a), x->req));
    } else if (x->e->kind == ML_OOM_NCCL && x->has_req && x->req <= 64 * ML_MIB) {
        char a[32];
        check(x, _("NCCL's failing allocation is tiny (%s): the card was already full when NCCL asked for its buffers"),
              ml_fmt_bytes_s(a, sizeof(a), x->req));
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
    device_settings(&x);
    x.dialect = trainer_dialect(x.su->train);
    x.kx.arch = x.su->arch;
    x.kx.max_gpus_per_node = ML_FIT_MAX_GPUS_DEFAULT;
    x.kx.alloc_var = x.var;
    train_ledger(&x, diag);
    serve_ledger(&x, diag);

    rule_misleading(&x);
    rule_oversize(&x);
    rule_other_process(&x);
    rule_serving(&x);
    rule_known_issues(&x);
    rule_library(&x);
    rule_host(&x);
    rule_fragmentation(&x);
    rule_phase(&x);
    rule_fingerprints(&x);
    rule_timing(&x);
    rule_config(&x);
    rule_fp32(&x);
    /* The evidence ranks the causes; the rules' findings give their texts and fixes. */
    features(&x, &out->features);
    ml_evidence_rank(&out->features, x.w, &out->ranking);
    out->cannot_tell = out->ranking.cannot_tell;
    out->p_none = out->ranking.p_none_permille;
    rank_findings(&x);
    fit_fixes_to_run(&x);
    if (out->cannot_tell)
        decide_by(&x);
    big_request(&x);
    number_checks(&x);

    /* Concrete settings and prices. */
    for (uint32_t i = 0; i < out->n_findings; i++) {
        for (uint32_t j = 0; j < out->f[i].n_fix; j++) {
            struct ml_fix *fx = &out->f[i].fix[j];
            if (fx->kind == ML_FIX_ZERO3_BUFFERS)
                zero3_action(&x, fx);
            settle(&x, fx);
        }
    }
    sort_out(out);
    next_checks(&x);
    return ML_OK;
}
