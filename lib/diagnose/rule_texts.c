/*
 * rule_texts.c - the texts, fixes, notes and checks of the rule rows (rules.c) that compute:
 * numbers in the text, a fix priced by the log, a setting written from the run.
 */
#include <stdio.h>
#include <string.h>

#include "memledger/units.h"
#include "i18n.h"
#include "rules.h"

/* ---- the message misleads, the tensor is too large ------------------------------------------ */

void ml_dg_say_format_error(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    ml_dg_why(f,
              _("the OOM is raised while building an error message (%s: repr() of a tensor calls .float()); the real "
                "failure is the call being logged, earlier in the log"),
              e->phase_cue[0] ? e->phase_cue : "c10d_logger");
}

void ml_dg_say_empty_card(struct ctx *x, struct ml_finding *f)
{
    char a[32], b[32];
    ml_dg_why(f,
              _("nothing is allocated yet and %s of %s is free: the first allocation fails, so the device reports less "
                "memory than it has (unified memory, a wrong pool) or the tensor is simply too large"),
              ml_fmt_bytes_s(a, sizeof(a), x->free), ml_fmt_bytes_s(b, sizeof(b), x->cap));
}

void ml_dg_say_free_covers(struct ctx *x, struct ml_finding *f)
{
    char a[32], b[32];
    ml_dg_why(f,
              _("the device reports %s free, more than the %s request: the limit is elsewhere (a per-process "
                "fraction, unified memory, or the driver's accounting)"),
              ml_fmt_bytes_s(a, sizeof(a), x->free), ml_fmt_bytes_s(b, sizeof(b), x->req));
}

void ml_dg_say_over_card(struct ctx *x, struct ml_finding *f)
{
    char a[32], b[32];
    ml_dg_why(f,
              _("one request of %s is larger than the whole %s device: it can never succeed; freeing memory cannot "
                "help, the tensor must shrink"),
              ml_fmt_bytes_s(a, sizeof(a), x->req), ml_fmt_bytes_s(b, sizeof(b), x->cap));
}

/* ---- other processes ------------------------------------------------------------------------- */

void ml_dg_say_siblings(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_attribution *a = &x->out->procs;
    char b1[32];
    ml_dg_why(f,
              _("%u processes hold one CUDA context each (~%s) on this GPU: other ranks' contexts landing here (no "
                "torch.cuda.set_device(local_rank) / LOCAL_RANK before the first CUDA call), not programs to stop"),
              a->n_siblings, ml_fmt_bytes_s(b1, sizeof(b1), a->sibling_bytes));
}

void ml_dg_say_others(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_attribution *a = &x->out->procs;
    char b1[32], b2[32], b3[32];
    if (a->proven)
        ml_dg_why(f, _("another process holds %s of the %s device while this process holds %s"),
                  ml_fmt_bytes_s(b1, sizeof(b1), a->others), ml_fmt_bytes_s(b2, sizeof(b2), x->cap),
                  ml_fmt_bytes_s(b3, sizeof(b3), x->e->this_process));
    else
        ml_dg_why(f,
                  _("besides this process's own line, %u process line%s hold %s of the %s device: another process is "
                    "on it"),
                  a->n_others, a->n_others == 1 ? "" : "s", ml_fmt_bytes_s(b1, sizeof(b1), a->others),
                  ml_fmt_bytes_s(b2, sizeof(b2), x->cap));
}

void ml_dg_say_outside(struct ctx *x, struct ml_finding *f)
{
    char b1[32], b2[32], b3[32];
    ml_dg_why(f, _("%s of the device is in use but PyTorch holds only %s: %s is held outside this process"),
              ml_fmt_bytes_s(b1, sizeof(b1), x->used), ml_fmt_bytes_s(b2, sizeof(b2), x->held),
              ml_fmt_bytes_s(b3, sizeof(b3), x->used - x->held));
}

/* Stop what holds the device; it returns what the others hold (or the gap). */
void ml_dg_stop_others(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_attribution *a = &x->out->procs;
    enum ml_oom_device d = x->e->device;
    struct ml_fix *k =
        ml_dg_advise(f,
                     d == ML_DEV_HIP   ? A_KILL_HIP
                     : d == ML_DEV_NPU ? A_KILL_NPU
                                       : A_KILL_CUDA,
                     _("stop the process that holds the device (a zombie, a second run, an orphaned engine)"));
    ml_dg_fix_saves_log(k, a->others ? a->others : x->used > x->held ? x->used - x->held : 0);
}

void ml_dg_check_own_line(struct ctx *x, struct ml_finding *f)
{
    (void)f;
    const struct ml_oom_attribution *a = &x->out->procs;
    const struct ml_oom_proc *o = &x->e->procs[a->own];
    char b1[32], b2[32], b3[32];
    ml_dg_check(x,
                _("'Process %llu has %s' is this process itself, seen through a container's PID namespace: PyTorch "
                  "holds %s and %s is outside its allocator%s"),
                (unsigned long long)o->pid, ml_fmt_bytes_s(b1, sizeof(b1), o->bytes),
                ml_fmt_bytes_s(b2, sizeof(b2), a->held), ml_fmt_bytes_s(b3, sizeof(b3), a->own_outside),
                a->own_outside > 2 * ML_GIB
                    ? _(" (more than 2 GiB: NCCL buffers, CUDA graphs or a colocated engine's pool)")
                    : "");
}

void ml_dg_check_nvml_zero(struct ctx *x, struct ml_finding *f)
{
    (void)f;
    char b1[32];
    ml_dg_check(x,
                _("NVML reports 0 bytes for this process while PyTorch holds %s: a container hides the PID; use "
                  "nvidia-smi on the host"),
                ml_fmt_bytes_s(b1, sizeof(b1), x->alloc));
}

/* ---- serving engines ------------------------------------------------------------------------- */

/* A10 / analysis 7: the KV cache cannot hold one full-length request. */
void ml_dg_say_kv_small(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    char a[32], b[32];
    if (has(e, ML_OOM_F_KV_TOKENS))
        ml_dg_why(f,
                  _("the KV cache holds %llu tokens but max_model_len is %llu: one full-length request does not fit"),
                  (unsigned long long)e->kv_tokens, (unsigned long long)e->max_seq_len);
    else if (has(e, ML_OOM_F_REQUESTED | ML_OOM_F_FREE))
        ml_dg_why(f, _("one full-length request needs %s of KV cache, %s is available"),
                  ml_fmt_bytes_s(a, sizeof(a), e->requested), ml_fmt_bytes_s(b, sizeof(b), e->free));
    else
        ml_dg_why(f, _("the KV cache cannot hold one request of max_model_len tokens"));
}

/* KV bytes scale with tokens: need = kv_cache_size x max_len / kv_tokens; the extra share of
 * total_gpu_memory raises gpu_memory_utilization (analysis 7). */
static void kv_share_up(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_incident *inc = x->inc;
    char a[32], b[32], c[32];
    uint64_t need = inc->prof_kv_cache / e->kv_tokens * e->max_seq_len +
                    inc->prof_kv_cache % e->kv_tokens * e->max_seq_len / e->kv_tokens;
    if (need <= inc->prof_kv_cache)
        return;
    uint64_t extra = need - inc->prof_kv_cache;
    uint64_t pm = inc->prof_util_permille + (extra * 1000 + inc->prof_total - 1) / inc->prof_total;
    uint64_t hundredths = (pm + 9) / 10;
    if (hundredths > 100)
        return;
    struct ml_fix *k = ml_dg_knob(f, ML_FIX_VLLM_UTIL_UP, ML_KNOB_GPU_UTIL, hundredths * 10,
                                  _("give vLLM a larger share of the card for the KV cache"));
    ml_dg_fix_note(k, _("%s more KV cache (%s for %llu tokens instead of %s; profiling line)"),
                   ml_fmt_bytes_s(a, sizeof(a), extra), ml_fmt_bytes_s(b, sizeof(b), need),
                   (unsigned long long)e->max_seq_len, ml_fmt_bytes_s(c, sizeof(c), inc->prof_kv_cache));
}

/* Whether the engine may prefill whole prompts, so that chunked prefill changes something: vLLM
 * V1 always chunks (its scheduler takes max_num_batched_tokens per step; vllm/engine/arg_utils.py
 * turns enable_chunked_prefill on for V1), and V0 turns it on by itself above a 32K context
 * (arg_utils.py use_long_context, vllm#10517). A V1 engine shows itself by its EngineCore or worker
 * process prefix (V0's "(VllmWorkerProcess pid=N)" is no sign), its "GPU KV cache size: N tokens" line, its estimated maximum length, or a version of
 * 0.8 or later without a V0 line. */
bool ml_dg_vllm_may_prefill_whole(const struct ctx *x)
{
    const struct ml_incident *inc = x->inc;
    const struct ml_oom_event *e = x->e;
    if ((inc->saw_engine_proc && !inc->saw_v0_worker) || inc->prof_kv_tokens || has(e, ML_OOM_F_EST_MAX_LEN))
        return false;
    for (uint32_t i = 0; i < inc->n_versions; i++) {
        const char *v = inc->versions[i].value;
        if (!strcmp(inc->versions[i].name, "vllm") && v[0] == '0' && v[1] == '.' &&
            (v[2] >= '8' || (v[2] >= '1' && v[3] >= '0' && v[3] <= '9')))
            return false;
    }
    return !(has(e, ML_OOM_F_MAX_SEQ_LEN) && e->max_seq_len > 32768);
}

void ml_dg_kv_small_fixes(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    const struct ml_incident *inc = x->inc;
    uint64_t fit = has(e, ML_OOM_F_EST_MAX_LEN) ? e->est_max_len : has(e, ML_OOM_F_KV_TOKENS) ? e->kv_tokens : 0;
    if (fit)
        ml_dg_knob(f, ML_FIX_VLLM_MAX_LEN, ML_KNOB_MAX_MODEL_LEN, fit,
                   _("serve a shorter context: the largest that the KV cache holds"));
    if (has(e, ML_OOM_F_KV_TOKENS | ML_OOM_F_MAX_SEQ_LEN) && inc->has_profile && inc->prof_kv_cache &&
        inc->prof_total && inc->prof_util_permille && e->kv_tokens)
        kv_share_up(x, f);
    else
        ml_dg_knob(f, ML_FIX_VLLM_UTIL_UP, ML_KNOB_GPU_UTIL, 0, _("give vLLM a larger share of the card"));
    ml_dg_knob(f, ML_FIX_KV_FP8, ML_KNOB_KV_FP8, 0, _("store the KV cache in 8 bits: twice the tokens"));
    /* The profile run pushes max_num_batched_tokens (V0: max_model_len) through the model; with
     * chunked prefill it is a small budget and the KV cache gets the rest (vllm#10517: V0 turns
     * it on by itself above 32K, so 35K starts where 29K fails). */
    if (ml_dg_vllm_may_prefill_whole(x))
        ml_dg_knob(f, ML_FIX_VLLM_SEQS, ML_KNOB_CHUNKED_PREFILL, 2048,
                   _("prefill in chunks: the profiling peak shrinks and the KV cache grows"));
    ml_dg_knob(f, ML_FIX_MORE_MEMORY, ML_KNOB_TP_2, 0, _("split the model over more GPUs"));
    if (inc->has_profile)
        ml_dg_check(x,
                    _("KV capacity is not monotonic in max_model_len (vllm#10517): the profiling peak depends on it"));
}

void ml_dg_say_vllm_free(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    char a[32], b[32], c[32], d[32];
    ml_dg_why(f,
              _("at start-up only %s of %s is free but gpu_memory_utilization asks for %s: %s is already used by "
                "something else (the zombie / second-engine signature)"),
              ml_fmt_bytes_s(a, sizeof(a), e->free), ml_fmt_bytes_s(b, sizeof(b), e->total),
              ml_fmt_bytes_s(c, sizeof(c), e->requested),
              ml_fmt_bytes_s(d, sizeof(d), e->total > e->free ? e->total - e->free : 0));
}

void ml_dg_vllm_free_fixes(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    struct ml_fix *k =
        ml_dg_advise(f, A_KILL_CUDA, _("stop what holds the card (an orphaned VLLM::EngineCore, a previous server)"));
    ml_dg_fix_saves_log(k, e->total > e->free ? e->total - e->free : 0);
    if (e->total) {
        uint64_t h = e->free * 100 / e->total;
        if (h >= 1)
            ml_dg_knob(f, ML_FIX_VLLM_UTIL_DOWN, ML_KNOB_GPU_UTIL_DOWN, h * 10,
                       _("or ask for no more than what is free"));
    }
}

void ml_dg_say_vllm_held(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    char a[32];
    ml_dg_why(f, _("%s of the device is held outside this engine"),
              ml_fmt_bytes_s(a, sizeof(a), e->total > e->free ? e->total - e->free : 0));
}

void ml_dg_check_preemptions(struct ctx *x, struct ml_finding *f)
{
    (void)f;
    ml_dg_check(x, _("%llu preemption warnings: the KV cache was already short at run time"),
                (unsigned long long)x->inc->preemptions);
}

void ml_dg_serving_runtime_fixes(struct ctx *x, struct ml_finding *f)
{
    ml_dg_serve_share_fix(x, f, _("give the KV cache a smaller share of the card"));
    ml_dg_serve_batch_fix(x, f, _("batch fewer tokens per step"));
}

void ml_dg_known_issue_rows(struct ctx *x, struct ml_finding *f)
{
    (void)f;
    ml_dg_known_issues(x);
}

/* ---- libraries ------------------------------------------------------------------------------- */

void ml_dg_check_launch_blocking(struct ctx *x, struct ml_finding *f)
{
    (void)f;
    ml_dg_check(x, _("rerun with CUDA_LAUNCH_BLOCKING=1 (HIP_LAUNCH_BLOCKING=1) to get the failing call"));
}

void ml_dg_say_nccl(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    if (has(e, ML_OOM_F_REQUESTED)) {
        char a[32];
        ml_dg_why(f, _("NCCL could not allocate %s for its buffers: it allocates outside PyTorch's allocator"),
                  ml_fmt_bytes_s(a, sizeof(a), e->requested));
    } else {
        ml_dg_why(f,
                  _("NCCL's own CUDA allocation failed ('out of memory'): it allocates outside PyTorch's allocator"));
    }
}

void ml_dg_check_nccl_cumem(struct ctx *x, struct ml_finding *f)
{
    (void)f;
    ml_dg_check(
        x, _("with NCCL >= 2.23 cuMem host allocations can fail this way: NCCL_CUMEM_HOST_ENABLE=0 (pytorch#152302)"));
}

/* ---- host memory ----------------------------------------------------------------------------- */

void ml_dg_say_host_killer(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    char a[32];
    if (has(e, ML_OOM_F_THIS_PROCESS))
        ml_dg_why(f, _("the kernel's OOM killer killed a process holding %s of host RAM (anon-rss)"),
                  ml_fmt_bytes_s(a, sizeof(a), e->this_process));
    else
        ml_dg_why(f, _("the kernel's OOM killer killed the process: host RAM ran out"));
}

void ml_dg_say_host_huge(struct ctx *x, struct ml_finding *f)
{
    char a[32];
    ml_dg_why(f,
              _("the host allocator was asked for %s in one piece, more than any single machine has: a wrong shape "
                "or a runaway size, not a shortage"),
              ml_fmt_bytes_s(a, sizeof(a), x->e->requested));
}

void ml_dg_say_host_alloc(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    char a[32];
    if (has(e, ML_OOM_F_REQUESTED))
        ml_dg_why(f, _("PyTorch's CPU allocator could not get %s of host RAM (DefaultCPUAllocator)"),
                  ml_fmt_bytes_s(a, sizeof(a), e->requested));
    else
        ml_dg_why(f, _("PyTorch's CPU allocator could not get host RAM"));
}

void ml_dg_say_sigkill(struct ctx *x, struct ml_finding *f)
{
    ml_dg_why(f,
              _("the process was killed by SIGKILL (exit %d) with no Python error: the usual killer is the kernel's "
                "OOM killer, but schedulers and people send SIGKILL too"),
              x->e->exit_code);
    if (!x->inc->kernel_oom_lines)
        ml_dg_check(x, _("confirm host OOM: dmesg -T | grep -i -e oom -e 'killed process' (in a container: cat "
                         "/sys/fs/cgroup/memory.events)"));
}

/* Analysis 6: ZeRO-3 save gathering the 16-bit model on rank 0, CPU offload, per-rank loads. */
void ml_dg_host_fixes(struct ctx *x, struct ml_finding *f)
{
    const struct ml_train *t = x->su->train;
    char a[32], b[32], c[32];
    /* A kill while the model loads is not the save's, nor one in a save the load's. */
    enum ml_oom_timing tm = x->e->timing;
    bool at_save = tm == ML_TIM_AT_SAVE || tm == ML_TIM_AFTER_SAVE;
    if (tm != ML_TIM_LOAD &&
        (!t || (t->deepspeed && t->zero.stage == 3 && t->zero.gather_16bit_on_save) || x->inc->saw_zero3))
        ml_dg_knob(f, ML_FIX_GATHER16_OFF, ML_KNOB_GATHER16_OFF, 0,
                   _("do not gather the whole 16-bit model on rank 0 at save (then zero_to_fp32.py)"));
    if (!at_save) {
        ml_dg_advise(f, A_LOW_CPU_MEM, _("load the model without a full copy per rank in host RAM"));
        ml_dg_advise(f, A_FEWER_RANKS, _("run fewer ranks per node (each loads its own copy)"));
    }
    struct ml_fix *k = ml_dg_advise(f, A_HOST_RAM, _("more host RAM or swap"));
    if (!x->has_ledger || !k)
        return;
    const struct ml_ledger *l = &x->out->ledger;
    k->has_saves = false;
    if (x->c0.host_ram_bytes)
        ml_dg_fix_note(k, _("the ledger needs %s of host RAM per node at its peak; %s given"),
                       ml_fmt_bytes_s(a, sizeof(a), l->host.peak_bytes),
                       ml_fmt_bytes_s(b, sizeof(b), x->c0.host_ram_bytes));
    else
        ml_dg_fix_note(k, _("the ledger needs %s of host RAM per node at its peak (load %s, save %s)"),
                       ml_fmt_bytes_s(a, sizeof(a), l->host.peak_bytes),
                       ml_fmt_bytes_s(b, sizeof(b), l->host.load_bytes),
                       ml_fmt_bytes_s(c, sizeof(c), l->host.save_bytes));
}

/* ---- fragmentation --------------------------------------------------------------------------- */

/* Analysis 2 / observation 3, absolute and relative: 16 of 19 corpus messages had
 * reserved-unallocated <= 3.8 % of reserved (real demand). The weight, and what the cache is. */
static uint32_t frag_grade(const struct ctx *x, const char **what)
{
    uint64_t reserved = x->held ? x->held : 1;
    uint64_t share = x->unalloc / reserved * 10000 + (x->unalloc % reserved) * 10000 / reserved; /* per ten thousand */
    *what = NULL;
    if (x->unalloc >= x->req && share > 1000 && x->unalloc > 512 * ML_MIB) {
        /* xgettext:no-c-format */
        *what = _("more than the request and more than 10% of reserved: the cache is split into pieces too small to "
                  "use");
        return 800;
    }
    if (x->unalloc >= x->req && share > 380) {
        *what = _("more than the request: it is split into pieces smaller than the request");
        return 600;
    }
    if (x->unalloc < x->req && x->has_free && x->unalloc + x->free >= x->req && x->unalloc >= 512 * ML_MIB) {
        *what = _("with the free memory it would hold the request, were it one piece");
        return 550;
    }
    if (share > 1000 && x->unalloc > 512 * ML_MIB) {
        /* xgettext:no-c-format */
        *what = _("more than 10% of reserved is stranded in split cached blocks");
        return 450;
    }
    if (x->unalloc >= x->req) {
        *what = _("more than the request, though a small share of reserved");
        return 300;
    }
    return 0;
}

bool ml_dg_frag_holds(const struct ctx *x)
{
    const char *what;
    if (!x->has_unalloc || !x->has_req || x->e->kind == ML_OOM_IMPOSSIBLE)
        return false;
    /* A stranded cache fails a request only when the device has no room for a new segment: with
     * free memory past the request (a quarter and 512 MiB of margin, as the misleading rule's) the
     * allocator would have mapped one (PyTorch CUDACachingAllocator.cpp malloc: alloc_block after
     * get_free_block fails), so fragmentation cannot explain the failure (issue 24 item 4). */
    if (x->has_free && x->free >= x->req + x->req / 4 && x->free - x->req >= 512 * ML_MIB)
        return false;
    return frag_grade(x, &what) || x->inc->flush_warnings > 0;
}

uint32_t ml_dg_frag_weight(const struct ctx *x)
{
    const char *what;
    uint32_t conf = frag_grade(x, &what);
    bool flushes = x->inc->flush_warnings > 0;
    if (!conf)
        conf = 450;
    if (flushes)
        conf += 100; /* A9: the leading indicator */
    if (x->e->timing == ML_TIM_AFTER_SAVE && x->unalloc >= x->req)
        conf += 300; /* analysis 5: right after a save -> gather leftovers or fragmentation */
    return conf > 850 ? 850 : conf;
}

void ml_dg_say_frag(struct ctx *x, struct ml_finding *f)
{
    const char *what;
    char a[32], b[32], c[32], d[32];
    if (!frag_grade(x, &what))
        what = "DeepSpeed flushed the allocator cache under pressure";
    uint64_t reserved = x->held ? x->held : 1;
    bool after_save = x->e->timing == ML_TIM_AFTER_SAVE;
    ml_dg_why(f, _("%s is reserved but unallocated against a %s request (%s of the %s PyTorch reserved): %s%s"),
              ml_fmt_bytes_s(a, sizeof(a), x->unalloc), ml_fmt_bytes_s(b, sizeof(b), x->req),
              ml_fmt_percent_s(c, sizeof(c), x->unalloc, reserved), ml_fmt_bytes_s(d, sizeof(d), x->held), what,
              after_save && x->unalloc >= x->req
                  ? _("; and it fails in the first step after a checkpoint save, which frees and re-gathers "
                      "parameters into new blocks (docs/ledger.md allocator_reserve, save_gather)")
                  : "");
}

void ml_dg_frag_fixes(struct ctx *x, struct ml_finding *f)
{
    struct ml_fix *k = ml_dg_alloc_fix(x, f);
    if (k)
        ml_dg_fix_saves_log(k, x->unalloc);
    if (x->has_ledger && x->t0.deepspeed && x->t0.zero.stage == 3 && ml_zero_overlap(&x->t0.zero)) {
        /* Accounting notes §1.2 and §5: overlap_comm puts gathers on side streams with their own
         * allocator pools. */
        ml_dg_knob(f, ML_FIX_ZERO3_BUFFERS, ML_KNOB_ZERO3_BUFFERS_2, 0, "");
    }
    if (x->e->timing == ML_TIM_AFTER_SAVE)
        ml_dg_advise(f, A_SAVE_CALLBACK,
                     _("return the cache after each save: torch.cuda.empty_cache() and gc.collect() in a "
                       "TrainerCallback.on_save"));
}

/* ---- the phase ------------------------------------------------------------------------------- */

void ml_dg_say_loss(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    const char *cue = e->phase_cue[0] ? e->phase_cue : ml_oom_phase_name(e->phase);
    const char *dpo = x->inc->saw_dpo ? _(", doubled for chosen+rejected in DPO") : "";
    char b[32];
    if (x->has_req && x->req >= ML_GIB)
        ml_dg_why(f,
                  _("the OOM is raised in the loss (%s) for a %s tensor: the logits are tokens x vocab x 4 B in "
                    "fp32%s"),
                  cue, ml_fmt_bytes_s(b, sizeof(b), x->req), dpo);
    else
        ml_dg_why(f, _("the OOM is raised in the loss (%s): the logits are tokens x vocab x 4 B in fp32%s"), cue, dpo);
}

void ml_dg_forward_fixes(struct ctx *x, struct ml_finding *f)
{
    ml_dg_activation_fixes(x, f);
    if (x->e->zero3_frames)
        ml_dg_knob(f, ML_FIX_ZERO3_BUFFERS, ML_KNOB_ZERO3_BUFFERS_2, 0, "");
}

/* ---- sizes that fingerprint the tensor --------------------------------------------------------- */

void ml_dg_say_copy(struct ctx *x, struct ml_finding *f)
{
    char a[32], b[32];
    int k = ml_dg_copy_match(x);
    ml_dg_why(f,
              _("the %s request is params x %d B = %s: one flat %s copy of the whole model (ZeRO-2 init, a state-dict "
                "gather or a merge)"),
              ml_fmt_bytes_s(a, sizeof(a), x->req), k,
              ml_fmt_bytes_s(b, sizeof(b), ml_dg_setup_params(x) * (uint64_t)k), k == 2 ? "16-bit" : "fp32");
}

void ml_dg_say_logits(struct ctx *x, struct ml_finding *f)
{
    const struct ml_train *t = x->su->train;
    char a[32], b[32];
    uint64_t want = 0;
    int k = ml_dg_logits_match(x, &want);
    ml_dg_why(f,
              _("the %s request matches b x s x V x %d B = %llu x %llu x %llu x %d = %s: the full-sequence %s logits"),
              ml_fmt_bytes_s(a, sizeof(a), x->req), k, (unsigned long long)(t->micro_batch ? t->micro_batch : 1),
              (unsigned long long)t->seq_len, (unsigned long long)x->su->arch->vocab, k,
              ml_fmt_bytes_s(b, sizeof(b), want), k == 4 ? "fp32" : "16-bit");
}

void ml_dg_note_eager(struct ctx *x, struct ml_finding *f)
{
    char a[32];
    int k;
    uint64_t smin, smax;
    if (!ml_dg_eager_match(x, &k, &smin, &smax))
        return;
    ml_dg_ev_note(f, _("%s = b x heads x s^2 x %d B (fp32 softmax) with %u heads: a batch of %llu-%llu tokens"),
                  ml_fmt_bytes_s(a, sizeof(a), x->req), k, x->su->arch->n_heads, (unsigned long long)smin,
                  (unsigned long long)smax);
}

void ml_dg_say_log_scores(struct ctx *x, struct ml_finding *f)
{
    const struct ml_log_args *a = x->su->args;
    char b[32];
    uint32_t h = 0, k = 0;
    (void)ml_dg_log_scores(x, &h, &k);
    ml_dg_why(f,
              _("the %s request is the log's batch %llu x %u heads x %llu^2 tokens x %u B: eager attention's score "
                "block in %s, materialised because attention does not run fused"),
              ml_fmt_bytes_s(b, sizeof(b), x->req), (unsigned long long)a->batch, h, (unsigned long long)a->seq_len, k,
              k == 4 ? "fp32" : "16-bit");
}

void ml_dg_say_log_logits(struct ctx *x, struct ml_finding *f)
{
    const struct ml_log_args *a = x->su->args;
    char b[32];
    uint64_t v = 0;
    uint32_t k = 0;
    (void)ml_dg_log_logits(x, &v, &k);
    ml_dg_why(f,
              _("the %s request is the log's batch %llu x %llu tokens x a %llu vocabulary x %u B: the full-sequence "
                "logits in %s"),
              ml_fmt_bytes_s(b, sizeof(b), x->req), (unsigned long long)a->batch, (unsigned long long)a->seq_len,
              (unsigned long long)v, k, k == 4 ? "fp32" : "16-bit");
}

void ml_dg_say_log_shard(struct ctx *x, struct ml_finding *f)
{
    char b[32], c[32];
    uint32_t w = 0, k = 0;
    (void)ml_dg_log_shard(x, &w, &k);
    ml_dg_why(f, _("the %s request is params x %u B / %u GPUs = %s: one rank's share of the whole model"),
              ml_fmt_bytes_s(b, sizeof(b), x->req), k, w, ml_fmt_bytes_s(c, sizeof(c), ml_dg_setup_params(x) * k / w));
}

/* ---- the timing ------------------------------------------------------------------------------ */

void ml_dg_say_after_save(struct ctx *x, struct ml_finding *f)
{
    const struct ml_oom_event *e = x->e;
    if (e->timing_ref.step >= 0)
        ml_dg_why(f,
                  _("the OOM comes in the first step after the checkpoint save at step %lld: gathered parameters or "
                    "split cached blocks survive the save, and ZeRO-3 re-gathers its parameters cold"),
                  (long long)e->timing_ref.step);
    else
        ml_dg_why(f, _("the OOM comes in the first step after a checkpoint save: gathered parameters or split cached "
                       "blocks survive the save"));
}

/* The two mechanisms the finding names have their own fixes: split cached blocks -> the
 * allocator's expandable segments (accounting notes §1.9, A2); the cold re-gather under ZeRO-3
 * -> smaller prefetch and live-parameter budgets (§1.2, §1.6). */
void ml_dg_after_save_fixes(struct ctx *x, struct ml_finding *f)
{
    const struct ml_train *t = x->su->train;
    bool zero3 = t && t->deepspeed && t->zero.stage == 3;
    if (zero3 && t->zero.gather_16bit_on_save)
        ml_dg_knob(f, ML_FIX_GATHER16_OFF, ML_KNOB_GATHER16_OFF, 0, _("do not gather the 16-bit model at save"));
    struct ml_fix *a = ml_dg_alloc_fix(x, f);
    if (a)
        ml_dg_fix_saves_log(a, x->unalloc);
    if (zero3)
        ml_dg_knob(f, ML_FIX_ZERO3_BUFFERS, ML_KNOB_ZERO3_BUFFERS_2, 0, "");
    ml_dg_advise(f, A_SAVE_CALLBACK,
                 _("return the cache after each save: gc.collect() and torch.cuda.empty_cache() in a "
                   "TrainerCallback.on_save"));
    struct ml_fix *k = ml_dg_advise(f, A_SAVE_STEPS, _("save less often: fewer steps start from a cold, split cache"));
    if (k && x->su->save_steps)
        (void)snprintf(k->setting, sizeof(k->setting), "save_steps: %llu", (unsigned long long)(x->su->save_steps * 5));
    ml_dg_fix_note(k, _("does not lower the peak of the step after a save; it makes it rarer"));
}

void ml_dg_say_mid_run(struct ctx *x, struct ml_finding *f)
{
    ml_dg_why(f,
              _("the OOM comes at step %lld, after steps that fit, with no save or eval next to it: a data-dependent "
                "step, most likely the longest sample so far"),
              (long long)x->e->step);
}

void ml_dg_mid_run_fixes(struct ctx *x, struct ml_finding *f)
{
    ml_dg_activation_fixes(x, f);
    ml_dg_check(x, _("resume from the last checkpoint: if it dies at the same step, one sample is too long"));
}

void ml_dg_say_ma_rising(struct ctx *x, struct ml_finding *f)
{
    const struct ml_incident *inc = x->inc;
    char a[32], b[32];
    ml_dg_why(f,
              _("MemoryAllocated grows from %s to %s over %u samples with a fixed shape: tensors are kept across "
                "steps"),
              ml_fmt_bytes_s(a, sizeof(a), inc->ma_first), ml_fmt_bytes_s(b, sizeof(b), inc->ma_last),
              inc->mem_samples);
}

/* ---- the config, fp32 ------------------------------------------------------------------------ */

void ml_dg_say_config_eager(struct ctx *x, struct ml_finding *f)
{
    ml_dg_why(f,
              _("attention runs eagerly (flash_attn: disabled in %s): b x heads x s^2 scores in fp32 are materialised "
                "in every layer"),
              x->su->config_name ? x->su->config_name : _("the config"));
}

void ml_dg_say_fp32(struct ctx *x, struct ml_finding *f)
{
    char a[32];
    if (x->has_req && x->req >= ML_GIB)
        ml_dg_why(f,
                  _("the failing call upcasts to fp32 (.float(), an upcast hook or accelerate's _convert_to_fp32) and "
                    "asks for %s: a tensor meant to stay 16-bit is copied at twice its bytes"),
                  ml_fmt_bytes_s(a, sizeof(a), x->req));
    else
        ml_dg_why(f, _("the failing call upcasts to fp32 (.float(), an upcast hook or accelerate's _convert_to_fp32): "
                       "a tensor meant to stay 16-bit is copied at twice its bytes"));
}
