/*
 * finding.c - what a diagnosis writes: findings (one per cause), their evidence lines, their
 * fixes (knobs of the knob table, or rows of the advice table below), the checks to run next;
 * the allocator settings of the device; the fixes each cause gives.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memledger/buf.h"
#include "memledger/units.h"
#include "diag_int.h"
#include "i18n.h"

struct ml_finding *ml_dg_finding(struct ctx *x, enum ml_cause c, uint32_t conf)
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

void ml_dg_why(struct ml_finding *f, const char *fmt, ...)
{
    if (!f || f->why[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    (void)ml_vformat(f->why, sizeof(f->why), fmt, ap);
    va_end(ap);
}

void ml_dg_ev_line(struct ml_finding *f, uint32_t file, uint64_t line, const char *text)
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

void ml_dg_ev_event(struct ml_finding *f, const struct ml_oom_event *e)
{
    ml_dg_ev_line(f, e->file, e->line, e->text);
}

void ml_dg_ev_ref(struct ml_finding *f, const struct ml_oom_ref *r)
{
    if (r->line)
        ml_dg_ev_line(f, r->file, r->line, r->text);
}

void ml_dg_ev_note(struct ml_finding *f, const char *fmt, ...)
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
struct ml_fix *ml_dg_add_fix(struct ml_finding *f, enum ml_fix_kind k, uint32_t cost, const char *action, bool *fresh)
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
struct ml_fix *ml_dg_knob(struct ml_finding *f, enum ml_fix_kind k, enum ml_knob_id id, uint64_t value,
                          const char *action)
{
    const struct ml_knob *kn = ml_knob_get(id);
    bool fresh;
    struct ml_fix *x = ml_dg_add_fix(f, k, ml_knob_rank(kn->cost, kn->flags), action, &fresh);
    if (fresh) {
        x->knob = id;
        x->value = value;
    }
    return x;
}

/* Fixes that are no knob of the ledger, each once with its setting and its place on the one
 * cost scale (ml_knob_rank: nothing to change in the run costs 0; ML_COST_RESULT when the data,
 * the code or the method change; ML_COST_HARDWARE for more hardware). */

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
    /* the setting written for the run once its kind is known (runs.c ml_dg_unwritable) */
    [A_MORE_GPUS] = {ML_FIX_MORE_MEMORY, 1000, ML_KNOB_NEEDS_HARDWARE, N_("more GPUs")},
    [A_SMALLER_TENSOR] = {ML_FIX_SMALLER_TENSOR, 0, ML_KNOB_CHANGES_DATA, ""},
    [A_LORA] = {ML_FIX_LORA, 0, ML_KNOB_CHANGES_METHOD, N_("finetuning_type: lora")},
    [A_LOAD_4BIT] = {ML_FIX_QUANTIZE, 250, ML_KNOB_CHANGES_METHOD,
                     N_("load_in_4bit=True")},                                       /* QLoRA's dequantization */
    [A_GENERATE_SMALLER] = {ML_FIX_BATCH, 80, 0, N_("max_new_tokens / batch size")}, /* a micro-batch halving */
    [A_TGI_FRACTION] = {ML_FIX_SERVE_FRACTION, 50, 0,
                        N_("--cuda-memory-fraction 0.9 (TGI) / --max-batch-prefill-tokens lower")},
    [A_SGLANG_FRACTION] = {ML_FIX_VLLM_SEQS, 100, 0,
                           N_("--mem-fraction-static lower / --chunked-prefill-size smaller")},
    /* SGLang's pool is what the static fraction leaves after the weights and the activations
     * (model_runner.py profile_max_num_token): a pool of nothing wants a larger fraction, as its
     * message says; priced as vLLM's larger share (50) */
    [A_SGLANG_FRACTION_UP] = {ML_FIX_VLLM_UTIL_UP, 50, 0, N_("--mem-fraction-static higher (e.g. 0.9)")},
    /* TGI's warm-up prefills --max-batch-prefill-tokens at once (its launcher's own advice when the
     * warm-up fails); priced as the SGLang fraction row (100) */
    [A_TGI_PREFILL] = {ML_FIX_VLLM_SEQS, 100, 0, N_("--max-batch-prefill-tokens lower (TGI)")},
    /* TGI's launcher spells tensor parallelism and quantization its own way (--num-shard,
     * --quantize); priced as the knobs they are (twice the tensor parallelism, fp8 weights) */
    [A_TGI_SHARDS] = {ML_FIX_MORE_MEMORY, 1000, ML_KNOB_NEEDS_HARDWARE, N_("--num-shard 2 (TGI)")},
    [A_TGI_QUANTIZE] = {ML_FIX_QUANTIZE, 50, ML_KNOB_CHANGES_METHOD, N_("--quantize fp8 (TGI)")},
    /* one more engine setting, priced as the SGLang fraction row (100) */
    [A_ENFORCE_EAGER] = {ML_FIX_ENFORCE_EAGER, 100, 0, N_("--enforce-eager (vLLM) / --disable-cuda-graph (SGLang)")},
    /* the same for a log that names SGLang alone (server_args.py disable_cuda_graph) */
    [A_SGLANG_NO_GRAPH] = {ML_FIX_ENFORCE_EAGER, 100, 0, N_("--disable-cuda-graph")},
    /* llama.cpp / Ollama (llama.cpp's common arguments -ngl, -c, -ub, -fa, -ctk/-ctv; Ollama's
     * num_gpu, num_ctx, OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE): layers left on the CPU run
     * there (fit's "twice the GPUs" scale, 1000); a shorter context changes what the run can do */
    [A_GGML_LAYERS] = {ML_FIX_GGML_LAYERS, 1000, 0, N_("-ngl <fewer layers> (llama.cpp) / num_gpu (Ollama)")},
    [A_GGML_CTX] = {ML_FIX_GGML_CTX, 0, ML_KNOB_CHANGES_DATA,
                    N_("-c <shorter context> -ub <smaller batch> (llama.cpp) / num_ctx (Ollama)")},
    [A_GGML_KV] = {ML_FIX_GGML_KV, 0, 0,
                   N_("-fa on -ctk q8_0 -ctv q8_0 (llama.cpp) / OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0")},
    /* Apple MPS: the high watermark ratio (default 1.7 x the device's recommended working set; 0.0
     * lifts the limit, "may cause system failure": PyTorch's MPS environment variables page).
     * It gives the run memory the system keeps for itself: ranked past every fix that shrinks the
     * run, those that change its data or method included (ML_COST_RESULT). */
    [A_MPS_WATERMARK] = {ML_FIX_MPS_WATERMARK, ML_COST_RESULT + 100, 0, N_("PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0")},
    /* Windows' commit limit is RAM plus the paging file (WinError 1455, ERROR_COMMITMENT_LIMIT's
     * sibling): a larger paging file, or loading with less host memory at once */
    [A_PAGEFILE] = {ML_FIX_PAGEFILE, 0, 0,
                    N_("System Properties > Advanced > Performance > Virtual memory: a larger paging file")},
    [A_RETRY_FREE] =
        {ML_FIX_RETRY_FREE, 0, 0,
         N_("in the except block: del outputs, loss; drop the exception; gc.collect(); torch.cuda.empty_cache()")},
};

enum ml_fix_kind ml_dg_advice_kind(enum advice_id a)
{
    return (unsigned)a < A_COUNT ? advice_table[a].kind : ML_FIX_COUNT;
}

struct ml_fix *ml_dg_advise(struct ml_finding *f, enum advice_id a, const char *action)
{
    const struct advice *ad = &advice_table[a];
    bool fresh;
    struct ml_fix *x = ml_dg_add_fix(f, ad->kind, ml_knob_rank(ad->cost, ad->effects), action, &fresh);
    if (fresh) {
        (void)snprintf(x->setting, sizeof(x->setting), "%s", ad->setting[0] ? _(ad->setting) : "");
        x->gpus_setting = a == A_MORE_GPUS;
    }
    return x;
}

void ml_dg_fix_note(struct ml_fix *x, const char *fmt, ...)
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
void ml_dg_serve_batch_fix(const struct ctx *x, struct ml_finding *f, const char *action)
{
    if (ml_incident_tgi_only(x->inc))
        ml_dg_advise(f, A_TGI_PREFILL, action);
    else if (x->inc->saw_sglang && !x->inc->saw_vllm)
        ml_dg_advise(f, A_SGLANG_FRACTION, action);
    else
        ml_dg_knob(f, ML_FIX_VLLM_SEQS, ML_KNOB_SERVE_BUDGET_2, 0, action);
}

void ml_dg_serve_share_fix(const struct ctx *x, struct ml_finding *f, const char *action)
{
    /* Before the KV pool is sized from what the weights and the profile run leave, a smaller
     * share frees nothing for them (vLLM worker.py determine_num_available_blocks, v1
     * gpu_worker.py determine_available_memory; SGLang model_runner.py profile_max_num_token);
     * an engine that refused to size its pool wants a larger one (ml_oom_engine_pool_refused). */
    if (x->e->episode == ML_EP_WEIGHTS || x->e->episode == ML_EP_PROFILE || ml_oom_engine_pool_refused(x->e))
        return;
    if (ml_incident_tgi_only(x->inc))
        ml_dg_advise(f, A_TGI_FRACTION, action);
    else if (x->inc->saw_sglang && !x->inc->saw_vllm)
        ml_dg_advise(f, A_SGLANG_FRACTION, action);
    else
        ml_dg_knob(f, ML_FIX_VLLM_UTIL_DOWN, ML_KNOB_GPU_UTIL_DOWN, 0, action);
}

void ml_dg_fix_saves_log(struct ml_fix *x, uint64_t bytes)
{
    if (!x)
        return;
    x->has_saves = true;
    x->saves_bytes = bytes;
    x->saves_from_ledger = false;
}

void ml_dg_check(struct ctx *x, const char *fmt, ...)
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

void ml_dg_device_settings(struct ctx *x)
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
        x->no_exp = _("WSL2/Windows (the driver-API path fails there)");
    else if (inc->saw_jetson)
        x->no_exp = "Jetson";
    else if (inc->saw_vllm && x->training)
        x->no_exp = _("a colocated vLLM engine (its CuMemAllocator; observation 3)");
    else if (driver)
        x->no_exp = "the CUDA driver error shows the expandable-segments path already failing";
    else if (inc->saw_expandable)
        x->no_exp = _("expandable segments are already on in this log");
    else if (e->classic && e->device != ML_DEV_NPU)
        x->no_exp = _("this message format is torch <= 2.0, before expandable segments");
}

/* The allocator fix for fragmentation: expandable segments, or max_split_size_mb where those
 * must not be used (observation 3). */
struct ml_fix *ml_dg_alloc_fix(struct ctx *x, struct ml_finding *f)
{
    if (!x->var)
        return NULL;
    if (!x->no_exp) {
        struct ml_fix *k = ml_dg_knob(f, ML_FIX_ALLOC_EXPANDABLE, ML_KNOB_EXPANDABLE, 0,
                                      _("let the caching allocator grow segments instead of stranding split blocks"));
        if (k && x->e->device == ML_DEV_HIP)
            ml_dg_fix_note(k, _("on DCU/ROCm only if the build supports the VMM path: test it"));
        return k;
    }
    struct ml_fix *k = ml_dg_advise(f, A_MAX_SPLIT, _("stop the allocator splitting large cached blocks"));
    if (k)
        (void)snprintf(k->setting, sizeof(k->setting), "%s=%s", x->var, advice_table[A_MAX_SPLIT].setting);
    ml_dg_fix_note(k, _("not expandable_segments: %s"), x->no_exp);
    return k;
}

/* ---- rules -------------------------------------------------------------------------------- */

void ml_dg_model_states_fixes(struct ctx *x, struct ml_finding *f)
{
    const struct ml_train *t = x->su->train;
    if (!t || !(t->deepspeed && t->zero.stage == 3))
        ml_dg_knob(
            f, ML_FIX_ZERO3, ML_KNOB_ZERO3, 0,
            _("shard weights, gradients and optimizer states over the GPUs: DeepSpeed ZeRO-3 (or FSDP full_shard)"));
    if (!t || t->method == ML_METHOD_FULL || t->method == ML_METHOD_FREEZE)
        ml_dg_knob(f, ML_FIX_OPTIM_8BIT, ML_KNOB_ADAMW_8BIT, 0,
                   _("use an 8-bit (or paged) optimizer: 2 B of states per parameter instead of 8"));
    if (t && t->deepspeed && t->zero.stage == 3)
        ml_dg_knob(f, ML_FIX_OFFLOAD_ALL, ML_KNOB_OFFLOAD_ALL, 0,
                   /* xgettext:no-c-format */
                   _("offload optimizer states and parameters to CPU (20-40% slower steps)"));
    else
        ml_dg_knob(f, ML_FIX_OFFLOAD_OPT, ML_KNOB_OFFLOAD_OPT, 0, _("offload the optimizer states to CPU"));
    if (!t || t->method == ML_METHOD_FULL)
        ml_dg_advise(f, A_LORA, _("train LoRA adapters (or QLoRA on a 4-bit base) instead of every weight"));
}

void ml_dg_activation_fixes(struct ctx *x, struct ml_finding *f)
{
    const struct ml_train *t = x->su->train;
    ml_dg_knob(f, ML_FIX_CUTOFF, ML_KNOB_SEQ_1_2, 0,
               t ? _("cap the sequence length (at the data's real p99 length)")
                 : _("cap the sequence length at the data's real p99 length"));
    if (!t || t->micro_batch >= 2)
        ml_dg_knob(f, ML_FIX_BATCH, ML_KNOB_MICRO_BATCH_2, 0,
                   t ? _("halve the micro-batch and double the accumulation (same effective batch)")
                     : _("halve the micro-batch and double gradient accumulation"));
    if (!t || t->grad_ckpt == ML_GC_OFF)
        ml_dg_knob(f, ML_FIX_GRAD_CKPT, ML_KNOB_GRAD_CKPT, 0,
                   /* xgettext:no-c-format */
                   _("turn gradient checkpointing on (keeps one input per layer; ~20-30% more compute)"));
}

void ml_dg_eager_fixes(struct ctx *x, struct ml_finding *f)
{
    struct ml_fix *k =
        ml_dg_knob(f, ML_FIX_ATTN, ML_KNOB_SDPA, 0, _("use SDPA or flash attention: no materialised s x s scores"));
    if (k && (x->e->device == ML_DEV_HIP || x->e->device == ML_DEV_NPU)) {
        /* On ROCm/DCU SDPA falls back to the math kernel where no memory-efficient or flash
         * backend is built: that materialises the same scores (accounting notes §4.1). */
        ml_dg_fix_note(
            k, _("on ROCm/DCU only if the build's SDPA has a memory-efficient or flash backend; the math fallback "
                 "materialises the same s^2 scores"));
    }
}

/* vLLM V0 prefilling whole prompts profiles max(max_model_len, 2048) tokens and refuses fewer
 * batched tokens than max_model_len (config.py SchedulerConfig._verify_args): chunked prefill is
 * the profile run's lever, except for encoder-decoder models, which V0 cannot prefill in chunks
 * (utils.py STR_NOT_IMPL_ENC_DEC_CHUNKED_PREFILL). */
static void v0_chunk_fix(const struct ctx *x, struct ml_finding *f)
{
    if (x->e->episode == ML_EP_PROFILE && x->inc->saw_vllm && !strstr(x->e->episode_ref.text, "enc_dec") &&
        ml_dg_vllm_may_prefill_whole(x))
        ml_dg_knob(f, ML_FIX_VLLM_SEQS, ML_KNOB_CHUNKED_PREFILL, 2048,
                   _("prefill in chunks: the profile run pushes one chunk through the model, not a whole "
                     "max_model_len prompt"));
}

/* Fixes for a cause that no rule wrote: the same ones its rule gives. */
void ml_dg_cause_fixes(struct ctx *x, struct ml_finding *f)
{
    if (x->e->kind == ML_OOM_GGML && f->cause != ML_CAUSE_HOST_RAM && f->cause != ML_CAUSE_OTHER_PROCESS) {
        /* llama.cpp / Ollama: the buffer's role says which of its settings frees it */
        if ((f->cause == ML_CAUSE_MODEL_STATES || f->cause == ML_CAUSE_OVERSIZE_TENSOR) && x->e->device != ML_DEV_HOST)
            ml_dg_advise(f, A_GGML_LAYERS, _("keep fewer layers on the GPU (or a smaller quantization)"));
        if (f->cause != ML_CAUSE_MODEL_STATES)
            ml_dg_advise(f, A_GGML_KV, _("flash attention and a quantized KV cache"));
        ml_dg_advise(f, A_GGML_CTX, _("a shorter context or a smaller batch"));
        /* fewer layers on the GPU put more on the host: no fix for a buffer in host RAM */
        if (f->cause != ML_CAUSE_MODEL_STATES && x->e->device != ML_DEV_HOST)
            ml_dg_advise(f, A_GGML_LAYERS, _("keep fewer layers on the GPU"));
        return;
    }
    if (x->e->kind == ML_OOM_GGML && f->cause == ML_CAUSE_HOST_RAM) {
        /* a llama.cpp / Ollama buffer in host RAM: a shorter context shrinks its KV and compute
         * buffers, not the weights loaded at start-up (llama-model.cpp load_tensors) */
        if (x->e->buffer == ML_BUF_KV || x->e->buffer == ML_BUF_COMPUTE || x->e->phase != ML_OPH_LOAD)
            ml_dg_advise(f, A_GGML_CTX, _("a shorter context or a smaller batch"));
        ml_dg_advise(f, A_HOST_RAM, _("more host RAM or swap"));
        return;
    }
    bool serving = x->serving || x->engine || x->inc->saw_vllm || x->inc->saw_sglang || x->inc->saw_tgi;
    if (serving && (f->cause == ML_CAUSE_ACTIVATIONS || f->cause == ML_CAUSE_LONG_SEQUENCE ||
                    (f->cause == ML_CAUSE_LOGITS && !x->training))) {
        /* a serving engine's activations are its batch of tokens (analysis 7); its sampler's
         * logits are vocabulary x max_num_seqs x 4 B */
        if (f->cause != ML_CAUSE_LOGITS)
            v0_chunk_fix(x, f);
        ml_dg_serve_batch_fix(x, f,
                              f->cause == ML_CAUSE_LOGITS
                                  ? _("warm up and sample fewer sequences at once (max_num_seqs)")
                                  : _("batch fewer tokens per step"));
        ml_dg_serve_share_fix(x, f, _("leave more headroom outside the KV cache"));
        return;
    }
    if (serving && !x->training && f->cause == ML_CAUSE_MODEL_STATES && ml_incident_tgi_only(x->inc)) {
        struct ml_fix *k = ml_dg_advise(f, A_TGI_SHARDS, _("split the model over more GPUs"));
        /* the launcher's Args line says how many shards run now (num_shard: Some(N)): twice those */
        uint32_t tp = x->su->args ? x->su->args->tp : 0;
        if (k && tp >= 2)
            (void)snprintf(k->setting, sizeof(k->setting), _("--num-shard %u (TGI)"), 2 * tp);
        ml_dg_advise(f, A_TGI_QUANTIZE, _("serve quantized weights"));
        return;
    }
    if (serving && !x->training && f->cause == ML_CAUSE_MODEL_STATES) {
        ml_dg_knob(f, ML_FIX_MORE_MEMORY, ML_KNOB_TP_2, 0, _("split the model over more GPUs"));
        ml_dg_knob(f, ML_FIX_QUANTIZE, ML_KNOB_FP8_WEIGHTS, 0, _("serve quantized weights"));
        return;
    }
    if (f->cause == ML_CAUSE_SERVING_HEADROOM) {
        /* each engine's own settings: SGLang's static fraction, TGI's memory fraction, vLLM's
         * utilization and sequences */
        bool sglang = x->inc->saw_sglang && !x->inc->saw_vllm, tgi = x->inc->saw_tgi && !x->inc->saw_vllm;
        if (sglang)
            ml_dg_advise(f, A_SGLANG_FRACTION, _("lower SGLang's static memory fraction"));
        else if (tgi)
            ml_dg_advise(f, A_TGI_FRACTION, _("leave TGI headroom outside its KV budget"));
        else {
            ml_dg_knob(
                f, ML_FIX_VLLM_UTIL_DOWN, ML_KNOB_GPU_UTIL_DOWN, 0,
                _("lower the engine's static share, so that graphs, the sampler and activations fit outside it"));
            ml_dg_knob(f, ML_FIX_VLLM_SEQS, ML_KNOB_SERVE_BUDGET_2, 0, _("run fewer sequences at once"));
        }
        if (!x->inc->engine.enforce_eager && !tgi)
            ml_dg_advise(f, sglang ? A_SGLANG_NO_GRAPH : A_ENFORCE_EAGER, _("serve without CUDA graphs"));
        return;
    }
    switch (f->cause) {
    case ML_CAUSE_MODEL_STATES: ml_dg_model_states_fixes(x, f); break;
    case ML_CAUSE_ACTIVATIONS:
    case ML_CAUSE_LONG_SEQUENCE:
    case ML_CAUSE_NO_GRAD_CHECKPOINTING: ml_dg_activation_fixes(x, f); break;
    case ML_CAUSE_LOGITS:
        ml_dg_knob(f, ML_FIX_CHUNKED_LOSS, ML_KNOB_LIGER, 0,
                   _("use a fused/chunked cross-entropy that never materialises all logits"));
        ml_dg_activation_fixes(x, f);
        break;
    case ML_CAUSE_EAGER_ATTENTION: ml_dg_eager_fixes(x, f); break;
    case ML_CAUSE_FP32_UPCAST:
        ml_dg_advise(f, A_NO_FP32, _("keep the tensor in 16 bits: drop the .float() / upcast"));
        break;
    case ML_CAUSE_EVAL_ACCUMULATION:
        ml_dg_advise(f, A_EVAL_CPU, _("move eval predictions to CPU every step and keep only the loss"));
        break;
    case ML_CAUSE_TENSOR_LEAK:
        if (x->e->chained)
            ml_dg_advise(
                f, A_RETRY_FREE,
                _("free the failed step before retrying: the exception and its frames keep its tensors alive"));
        ml_dg_advise(f, A_RECORD_HISTORY,
                     _("find what keeps tensors: losses logged without .item(), outputs kept in lists, hooks"));
        break;
    case ML_CAUSE_FRAGMENTATION: (void)ml_dg_alloc_fix(x, f); break;
    case ML_CAUSE_OTHER_PROCESS: ml_dg_advise(f, A_LIST_CUDA, _("check what else holds the device")); break;
    case ML_CAUSE_CHECKPOINT_GATHER:
        ml_dg_knob(f, ML_FIX_GATHER16_OFF, ML_KNOB_GATHER16_OFF, 0, _("do not gather the 16-bit model at save"));
        ml_dg_advise(f, A_SAVE_CALLBACK, _("free the cache before and after each save (a TrainerCallback)"));
        break;
    case ML_CAUSE_KV_CACHE_BUDGET:
        ml_dg_serve_share_fix(x, f, _("give the KV cache a smaller share of the card"));
        ml_dg_serve_batch_fix(x, f, _("batch fewer tokens per step"));
        break;
    case ML_CAUSE_HOST_RAM:
        ml_dg_advise(f, A_LOW_CPU_MEM, _("load the model without a full copy per rank in host RAM"));
        break;
    case ML_CAUSE_NCCL_BUFFERS:
        ml_dg_advise(f, A_NCCL_MARGIN, _("leave memory outside PyTorch's cache for NCCL"));
        break;
    case ML_CAUSE_OVERSIZE_TENSOR:
        ml_dg_advise(f, A_SMALLER_TENSOR,
                     _("shrink the tensor: chunk it, cut the sequence or batch, or fix a wrong shape"));
        break;
    default: break;
    }
}
