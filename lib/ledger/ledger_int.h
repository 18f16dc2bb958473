/*
 * ledger_int.h - machinery shared by the training and inference ledgers (private to lib/ledger).
 *
 * Checked arithmetic with a sticky overflow flag (a count that overflows marks the ledger and the
 * call fails once at the end), the entry and note writers, and ml_ledger_finish, which turns the
 * entries into per-phase totals, the allocator reserve, the peak and the three figures.
 */
#ifndef ML_LEDGER_INT_H
#define ML_LEDGER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "memledger/checked.h"
#include "memledger/ledger.h"

struct calc {
    bool overflow; /* some product or sum overflowed u64 */
};

static inline uint64_t mul(struct calc *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (!ml_mul_u64(a, b, &r)) {
        c->overflow = true;
        return UINT64_MAX;
    }
    return r;
}

static inline uint64_t mul3(struct calc *c, uint64_t a, uint64_t b, uint64_t d)
{
    return mul(c, mul(c, a, b), d);
}

static inline uint64_t add(struct calc *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (!ml_add_u64(a, b, &r)) {
        c->overflow = true;
        return UINT64_MAX;
    }
    return r;
}

/* ceil(a / n): the per-rank partition of a count (ZeRO pads to a multiple of N, notes §1.1). */
static inline uint64_t part(uint64_t a, uint64_t n)
{
    return n ? ml_ceil_div_u64(a, n) : a;
}

/* x * num / den, rounded up: fractional bytes per parameter (quantized storage). */
static inline uint64_t frac(struct calc *c, uint64_t x, uint64_t num, uint64_t den)
{
    return ml_ceil_div_u64(mul(c, x, num), den);
}

static inline uint64_t max2(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* Where entries go. */
/* cuBLAS workspace through the allocator (CublasHandlePool.cpp): 4096 x 1024 x 2 + 16 x 1024 x 8
 * = 8,519,680 B before Hopper; 32 MiB on sm90 and later (c may be NULL: the former). */
uint64_t ml_ledger_cublas_ws(const struct ml_cluster *c);

/* FFN width one token passes through: top_k routed experts + shared experts (MoE), else the
 * dense intermediate size. */
static inline uint64_t ffn_width(struct calc *k, const struct ml_arch *a)
{
    return a->n_experts ? add(k, mul(k, a->top_k, a->moe_intermediate), a->shared_intermediate) : a->intermediate;
}

struct sink {
    struct ml_ledger *l;
    struct calc *k;
    bool no_text; /* ml_ledger_opts.figures_only: skip formatting the rules */
};

/* Append an entry (bytes 0 is skipped); rule is printf-formatted. */
void ml_ledger_entry(struct sink *sk, enum ml_comp id, uint64_t bytes, uint32_t phases, enum ml_figure fig,
                     const char *source, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Append a note for the user. */
void ml_ledger_note(struct ml_ledger *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A reserved-figure entry of cached segments the allocator frees before it reports out of memory
 * (docs/ledger.md R2): counted in a phase's reserved figure as far as the card has room, never
 * in what the run needs. */
void ml_ledger_cache_entry(struct sink *sk, uint64_t bytes, uint32_t phases, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/*
 * Derive the figures: allocated per phase (active phases only count for the peak), an allocator
 * reserve of frag_permille of the peak allocated over the `all` phases, extra_permille[p] more in
 * phase p, the peak phase (largest reserved the run needs), device = that reserved + device-only
 * entries live there, the headroom against capacity and the verdict (tight below tight_permille of
 * capacity). A phase's reserved figure adds its releasable cache as far as the card has room.
 */
void ml_ledger_finish(struct ml_ledger *l, struct sink *sk, uint32_t frag_permille,
                      const uint32_t extra_permille[ML_PHASE_COUNT], uint32_t all, uint64_t capacity,
                      uint32_t tight_permille);

/* Notes on the reserve after ml_ledger_finish (docs/ledger.md R2): the releasable cache (cache_hi:
 * its 90th percentile, uncapped), and the steady steps against the step after a save when only the
 * latter does not fit. */
void ml_ledger_reserve_notes(struct ml_ledger *l, uint64_t cache_hi, bool shapes_vary);

/*
 * The 80 % interval of the three figures from the generated table (interval.c), for a training
 * run of family ("litgpt", "torchtune", "hf", "hf-sharded") and method ("full", "lora", "qlora"),
 * and the verdict that follows it, after ml_ledger_finish. widen, when not NULL, names what the
 * ledger does not model exactly in this run: every figure's bounds take in those of every published
 * measurement (the row "*" of every family, method and figure), and a note says why.
 */
void ml_ledger_interval(struct ml_ledger *l, struct calc *k, const char *family, const char *method,
                        uint32_t tight_permille, const char *widen);

/* The 80 % interval of an inference ledger's weights, KV pool and device figure (interval_infer.c,
 * docs/ledger.md "The inference interval") and the verdict that follows it. */
struct ml_infer;
struct ml_serve;
void ml_infer_interval(struct ml_ledger *l, struct calc *k, const struct ml_arch *a, const struct ml_infer *s,
                       struct ml_serve *sv);

/*
 * Quantized checkpoints, shared by the inference and training ledgers (infer_ledger.c; docs/ledger.md
 * "Quantized checkpoints"): is tensor x stored in format f (the linear and packed expert weights
 * inside the layers, less what the format leaves out), and the bytes of one in x out weight in f,
 * its scales / zeros / group indices in *state.
 */
struct ml_tensor;
struct ml_weight_quant;
bool ml_wq_tensor_quantized(const struct ml_tensor *x, const struct ml_weight_quant *f);
uint64_t ml_wq_weight_bytes(struct calc *k, const struct ml_weight_quant *f, uint64_t in, uint64_t out,
                            uint64_t *state);

#define entry ml_ledger_entry
#define note  ml_ledger_note

#endif /* ML_LEDGER_INT_H */
