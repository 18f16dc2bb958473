/*
 * ledger_common.c - the names of a ledger's phases, components and figures; entries, notes and
 * the figures of a ledger (see ledger_int.h).
 */
#include "memledger/buf.h"
#include "ledger_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"

/* ==== names ================================================================================ */

const char *ml_phase_name(enum ml_phase p)
{
    static const char *const n[ML_PHASE_COUNT] = {
        "load",       "forward", "loss",     "backward", "optimizer_step", "checkpoint_save",
        "after_save", "eval",    "generate", "serving",
    };
    return (p >= 0 && p < ML_PHASE_COUNT) ? n[p] : "unknown";
}

const char *ml_comp_name(enum ml_comp c)
{
    static const char *const n[ML_C_COUNT] = {
        "weights_frozen",
        "weights_trainable",
        "quant_state",
        "master_weights",
        "gradients",
        "optimizer_states",
        "autocast_weight_cache",
        "ddp_buckets",
        "zero_persistent_params",
        "zero_ipg_bucket",
        "zero_gathered_params",
        "zero_lm_head_retained",
        "zero_reduce_transient",
        "fsdp_unsharded_units",
        "activations",
        "attention_scores",
        "attention_mask",
        "logits_loss",
        "backward_working_set",
        "qlora_dequant",
        "optimizer_step_transient",
        "save_gather",
        "eval_working_set",
        "load_transient",
        "ref_model_weights",
        "reward_model_weights",
        "value_head",
        "ref_forward_logits",
        "rollout_kv",
        "vision_activations",
        "kv_cache",
        "non_torch",
        "cuda_graphs",
        "cublas_workspace",
        "allocator_reserve",
        "cuda_context",
        "nccl_buffers",
    };
    return (c >= 0 && c < ML_C_COUNT) ? n[c] : "unknown";
}

const char *ml_figure_name(enum ml_figure f)
{
    switch (f) {
    case ML_FIG_ALLOCATED: return "allocated";
    case ML_FIG_RESERVED: return "reserved";
    case ML_FIG_DEVICE: return "device";
    }
    return "unknown";
}

const char *ml_verdict_name(enum ml_verdict v)
{
    switch (v) {
    case ML_FITS: return "fits";
    case ML_TIGHT: return "tight";
    case ML_NO_FIT: return "does not fit";
    }
    return "unknown";
}

uint64_t ml_ledger_bytes(const struct ml_ledger *l, enum ml_comp id)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if (l->e[i].id == id)
            s += l->e[i].bytes;
    return s;
}

/* ==== entries and figures =================================================================== */

/* One entry; releasable: cache the caching allocator frees before it reports out of memory. */
static void entry_v(struct sink *sk, enum ml_comp id, uint64_t bytes, uint32_t phases, enum ml_figure fig,
                    const char *source, bool releasable, const char *fmt, va_list ap)
{
    struct ml_ledger *l = sk->l;
    if (bytes == 0 || l->n >= ML_LEDGER_MAX_ENTRIES)
        return;
    struct ml_entry *e = &l->e[l->n++];
    e->id = id;
    e->bytes = bytes;
    e->phases = phases;
    e->figure = fig;
    e->source = source;
    e->releasable = releasable;
    e->rule[0] = '\0';
    if (!sk->no_text)
        (void)ml_vformat(e->rule, sizeof(e->rule), fmt, ap);
}

void ml_ledger_entry(struct sink *sk, enum ml_comp id, uint64_t bytes, uint32_t phases, enum ml_figure fig,
                     const char *source, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    entry_v(sk, id, bytes, phases, fig, source, false, fmt, ap);
    va_end(ap);
}

void ml_ledger_cache_entry(struct sink *sk, uint64_t bytes, uint32_t phases, const char *source, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    entry_v(sk, ML_C_ALLOCATOR, bytes, phases, ML_FIG_RESERVED, source, true, fmt, ap);
    va_end(ap);
}

uint64_t ml_ledger_cublas_ws(const struct ml_cluster *c)
{
    bool big =
        c && c->gpu.vendor == ML_VENDOR_NVIDIA && (!strcmp(c->gpu.arch, "hopper") || !strcmp(c->gpu.arch, "blackwell"));
    return big ? (uint64_t)32 << 20 : 8519680ull;
}

void ml_ledger_note(struct ml_ledger *l, const char *fmt, ...)
{
    if (l->n_notes >= ML_LEDGER_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    (void)ml_vformat(l->notes[l->n_notes++], sizeof(l->notes[0]), fmt, ap);
    va_end(ap);
}

void ml_ledger_finish(struct ml_ledger *out, struct sink *sk, uint32_t frag_permille,
                      const uint32_t extra_permille[ML_PHASE_COUNT], uint32_t all, uint64_t capacity,
                      uint32_t tight_permille)
{
    struct calc *k = sk->k;
    for (int p = 0; p < ML_PHASE_COUNT; p++) {
        uint64_t sum = 0;
        for (uint32_t i = 0; i < out->n; i++)
            if (out->e[i].figure == ML_FIG_ALLOCATED && (out->e[i].phases & ML_PH(p)))
                sum = add(k, sum, out->e[i].bytes);
        out->phase_allocated[p] = sum;
    }
    uint64_t peak_alloc = 0;
    for (int p = 0; p < ML_PHASE_COUNT; p++)
        if (out->phase_active[p])
            peak_alloc = max2(peak_alloc, out->phase_allocated[p]);
    uint64_t reserve = ml_ceil_div_u64(mul(k, peak_alloc, frag_permille), 1000);
    entry(sk, ML_C_ALLOCATOR, reserve, all, ML_FIG_RESERVED, "notes §5 caching allocator",
          _("%u.%u %% of peak allocated (rounding, split segments, per-stream pools)"), frag_permille / 10,
          frag_permille % 10);
    for (int p = 0; p < ML_PHASE_COUNT; p++) {
        if (!extra_permille[p] || !out->phase_active[p])
            continue;
        bool save = p == ML_PHASE_AFTER_SAVE;
        entry(sk, ML_C_ALLOCATOR, ml_ceil_div_u64(mul(k, peak_alloc, extra_permille[p]), 1000), ML_PH(p),
              ML_FIG_RESERVED, save ? "notes §1.9 after a save" : "notes §5", _("+%u.%u %% in %s%s"),
              extra_permille[p] / 10, extra_permille[p] % 10,
              save ? _("the step after a save") : ml_phase_name((enum ml_phase)p),
              save ? _(" (cache split by re-gathers)") : "");
    }
    /* Per phase: the reserved the run needs (allocated + the reserve), the releasable cache and
     * the device-only bytes. The cache sits in whole free segments, which the allocator frees
     * (release_cached_blocks) and retries before it reports out of memory
     * (c10/cuda/CUDACachingAllocator.cpp; docs/ledger.md R2): max_memory_reserved and nvidia-smi
     * show it as far as the card has room; what must fit is the rest. */
    uint64_t best = 0, need_peak = 0, dev_peak = 0;
    out->peak_phase = ML_PHASE_LOAD;
    out->peak_reserved = 0;
    for (int p = 0; p < ML_PHASE_COUNT; p++) {
        uint64_t r = out->phase_allocated[p], cache = 0, dev = 0;
        for (uint32_t i = 0; i < out->n; i++) {
            const struct ml_entry *e = &out->e[i];
            if (!(e->phases & ML_PH(p)))
                continue;
            if (e->figure == ML_FIG_RESERVED && e->releasable)
                cache = add(k, cache, e->bytes);
            else if (e->figure == ML_FIG_RESERVED)
                r = add(k, r, e->bytes);
            else if (e->figure == ML_FIG_DEVICE)
                dev = add(k, dev, e->bytes);
        }
        uint64_t used = add(k, r, dev);
        uint64_t room = capacity > used ? capacity - used : 0;
        out->phase_reserved[p] = add(k, r, cache < room ? cache : room);
        if (!out->phase_active[p])
            continue;
        out->peak_reserved = max2(out->peak_reserved, out->phase_reserved[p]);
        if (r > best) {
            best = r;
            need_peak = r;
            dev_peak = dev;
            out->peak_phase = (enum ml_phase)p;
        }
    }
    out->peak_allocated = peak_alloc;
    out->cache_reserved = out->peak_reserved - need_peak;
    uint64_t dev = add(k, need_peak, dev_peak);
    out->device_used = dev;
    out->capacity = capacity;
    out->fits = dev <= capacity;
    out->headroom = out->fits ? capacity - dev : 0;
    out->deficit = out->fits ? 0 : dev - capacity;
    uint64_t tight_line = ml_ceil_div_u64(mul(k, capacity, tight_permille), 1000);
    out->verdict = !out->fits ? ML_NO_FIT : out->headroom < tight_line ? ML_TIGHT : ML_FITS;
}

/* "12.34" for bytes in GiB, rounded to the hundredth (integer arithmetic). */
static void gib2(char *dst, size_t n, uint64_t bytes)
{
    uint64_t c = (bytes / 1024 * 100 + (1u << 19)) >> 20; /* hundredths of a GiB */
    (void)snprintf(dst, n, "%llu.%02llu", (unsigned long long)(c / 100), (unsigned long long)(c % 100));
}

/* The device bytes phase p needs: allocated, the reserve that cannot be freed, the device-only. */
static uint64_t phase_need(const struct ml_ledger *l, int p)
{
    uint64_t s = l->phase_allocated[p];
    for (uint32_t i = 0; i < l->n; i++)
        if ((l->e[i].phases & ML_PH(p)) && l->e[i].figure != ML_FIG_ALLOCATED && !l->e[i].releasable)
            s += l->e[i].bytes;
    return s;
}

void ml_ledger_reserve_notes(struct ml_ledger *l, uint64_t cache_hi, bool shapes_vary)
{
    /* What max_memory_reserved and nvidia-smi show beyond the need over the phases that fit (the
     * run stops at one that does not): the peak reserved, cache counted as far as the card has
     * room (the median of the replay), less the peak of what the run needs; and the cache's 90th
     * percentile on the same room (the reserved interval takes it in: stranded_interval). */
    char a[24], b[24];
    uint64_t peak = 0, need_res = 0, need_dev = 0;
    for (int p = 0; p < ML_PHASE_COUNT; p++) {
        uint64_t dev = phase_need(l, p), res = l->phase_allocated[p];
        if (!l->phase_active[p] || dev > l->capacity)
            continue;
        for (uint32_t i = 0; i < l->n; i++)
            if ((l->e[i].phases & ML_PH(p)) && l->e[i].figure == ML_FIG_RESERVED && !l->e[i].releasable)
                res += l->e[i].bytes;
        peak = max2(peak, l->phase_reserved[p]);
        need_res = max2(need_res, res);
        need_dev = max2(need_dev, dev);
    }
    uint64_t shown = peak > need_res ? peak - need_res : 0;
    uint64_t room = l->capacity > need_dev ? l->capacity - need_dev : 0;
    uint64_t hi = cache_hi < room ? cache_hi : room;
    if (shown && hi > shown) {
        gib2(a, sizeof(a), shown);
        gib2(b, sizeof(b), hi);
        ml_ledger_note(l,
                       _("batch shapes vary: max_memory_reserved and nvidia-smi can show about %s GiB more (up to "
                         "%s at the replay's 90th percentile), cached free segments freed before an OOM: not part of "
                         "the fit"),
                       a, b);
    } else if (shown && !shapes_vary) {
        gib2(a, sizeof(a), shown);
        ml_ledger_note(l,
                       _("FSDP1's initialisation leaves cached blocks the all-gathers' stream cannot use: "
                         "max_memory_reserved and nvidia-smi can show about %s GiB more (as far as the card has room), "
                         "cached free segments freed before an OOM: not part of the fit (docs/ledger.md R3)"),
                       a);
    } else if (shown) {
        gib2(a, sizeof(a), shown);
        ml_ledger_note(l,
                       _("batch shapes vary: max_memory_reserved and nvidia-smi can show about %s GiB more (as far as "
                         "the card has room), cached free segments freed before an OOM: not part of the fit"),
                       a);
    }
    /* The steady steps against the step after a save, when only the latter does not fit. */
    if (l->fits || l->peak_phase != ML_PHASE_AFTER_SAVE)
        return;
    uint64_t steady = 0;
    for (int p = 0; p < ML_PHASE_COUNT; p++)
        if (l->phase_active[p] && p != ML_PHASE_AFTER_SAVE)
            steady = steady > phase_need(l, p) ? steady : phase_need(l, p);
    if (steady > l->capacity)
        return;
    gib2(a, sizeof(a), steady);
    gib2(b, sizeof(b), l->device_used);
    ml_ledger_note(l,
                   _("the steady steps fit (%s GiB of the device); the first step after a checkpoint save does not "
                     "(%s GiB): the save frees and re-gathers parameters into the cached segments"),
                   a, b);
}
