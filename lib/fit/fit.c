/*
 * fit.c - the knob search (see fit.h). Pure: calls the ledger, allocates nothing, prints nothing.
 *
 * Cost model (docs/cli/fit.md): the slowdown of each move, in permille of step time, with its source.
 *   0    allocator (expandable segments), attention sdpa/flash, Liger kernels, fused AdamW: no
 *        slowdown (most are faster).
 *   10   ZeRO-3 stage3_max_reuse_distance 0 or a lower persistence threshold: one more all-gather
 *        of the lm_head / small params per step.
 *   20   ZeRO-3 smaller buckets: more, smaller collectives. 8-bit AdamW (bitsandbytes) 20, paged 30.
 *   30   overlap_comm off: collectives no longer hidden behind compute.
 *   80   per halving of the micro-batch (gradient accumulation doubled): lower GPU utilisation.
 *   150  ZeRO-3 instead of ZeRO-0/1/2 (per-layer all-gathers); 50 for ZeRO-2.
 *   300  gradient checkpointing: one more forward per step (~1/3 of forward + backward FLOPs;
 *        Chen et al. 2016); 350 for unsloth's offloaded variant.
 *   300  optimizer offload to the host ("20-40 % slower", seed Q&A); 500 with parameters too.
 *   250  QLoRA: dequantization in every matmul.
 *   1000 more GPUs (hardware, ranked last).
 * Sequence length and LoRA rank cost no time but change the data or the method: plans that touch
 * them rank after every plan that does not.
 */
#include "memledger/fit.h"

#include <stdio.h>
#include <string.h>

#include "memledger/checked.h"

void ml_fit_opts_default(struct ml_fit_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->headroom_permille = 100;
    o->max_gpus_per_node = 8;
    o->max_plans = 5;
}

/* ---- changes --------------------------------------------------------------------------- */

static void change(struct ml_plan *p, enum ml_where w, const char *key, const char *from, const char *to)
{
    if (p->n >= ML_FIT_MAX_CHANGES)
        return;
    struct ml_change *c = &p->ch[p->n++];
    c->where = w;
    (void)snprintf(c->key, sizeof(c->key), "%s", key);
    (void)snprintf(c->from, sizeof(c->from), "%s", from);
    (void)snprintf(c->to, sizeof(c->to), "%s", to);
}

static void u64s(char *buf, size_t n, uint64_t v)
{
    (void)snprintf(buf, n, "%llu", (unsigned long long)v);
}

struct ctx {
    const struct ml_arch *a;
    const struct ml_fit_opts *o;
};

static bool rocm(const struct ml_cluster *c)
{
    return c->gpu.vendor == ML_VENDOR_AMD || c->gpu.vendor == ML_VENDOR_HYGON;
}

/* One move: applies itself to a plan if it applies to the run; knob groups exclude each other. */
struct move {
    const char *name;
    uint32_t knob;
    uint32_t cost;
    bool (*apply)(const struct ctx *x, struct ml_plan *p);
};

static bool mv_expseg(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    if (p->t.expandable_segments)
        return false;
    p->t.expandable_segments = true;
    /* PyTorch reads PYTORCH_HIP_ALLOC_CONF on ROCm builds (c10/cuda/CUDAAllocatorConfig); for a
     * GPU given only by its size, set both. */
    if (p->c.gpu.vendor != ML_VENDOR_NVIDIA)
        change(p, ML_IN_ENV, "PYTORCH_HIP_ALLOC_CONF", "(unset)", "expandable_segments:True");
    if (!rocm(&p->c))
        change(p, ML_IN_ENV, "PYTORCH_CUDA_ALLOC_CONF", "(unset)", "expandable_segments:True");
    return true;
}

static const char *flash_attn_value(enum ml_attn a)
{
    return a == ML_ATTN_EAGER ? "disabled" : a == ML_ATTN_SDPA ? "sdpa" : "fa2";
}

static bool mv_sdpa(const struct ctx *x, struct ml_plan *p)
{
    if (p->t.attn != ML_ATTN_EAGER || x->a->family == ML_FAMILY_GEMMA2)
        return false;
    change(p, ML_IN_YAML, "flash_attn", flash_attn_value(p->t.attn), "sdpa");
    p->t.attn = ML_ATTN_SDPA;
    return true;
}

static bool mv_flash(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    /* FlashAttention-2 needs NVIDIA Ampere or newer. */
    const char *arch = p->c.gpu.arch;
    bool ok = p->c.gpu.vendor == ML_VENDOR_NVIDIA && (!strcmp(arch, "ampere") || !strcmp(arch, "ada") ||
                                                      !strcmp(arch, "hopper") || !strcmp(arch, "blackwell"));
    if (!ok || p->t.attn == ML_ATTN_FLASH)
        return false;
    change(p, ML_IN_YAML, "flash_attn", flash_attn_value(p->t.attn), "fa2");
    p->t.attn = ML_ATTN_FLASH;
    return true;
}

static bool mv_liger(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    if (p->t.liger_kernel || (p->t.framework != ML_FW_LLAMAFACTORY && p->t.framework != ML_FW_HF))
        return false;
    p->t.liger_kernel = true;
    change(p, ML_IN_YAML, "enable_liger_kernel", "false", "true");
    return true;
}

static bool mv_fused(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    if (p->t.optim != ML_OPTIM_ADAMW_TORCH)
        return false;
    p->t.optim = ML_OPTIM_ADAMW_TORCH_FUSED;
    p->t.optim_set = true;
    change(p, ML_IN_YAML, "optim", "adamw_torch", "adamw_torch_fused");
    return true;
}

static bool zero3(const struct ml_plan *p)
{
    return p->t.deepspeed && p->t.zero.stage == 3;
}

static void ds_value(char *buf, size_t n, const struct ml_ds_size *k, uint64_t def)
{
    if (k->is_auto)
        (void)snprintf(buf, n, "auto");
    else
        u64s(buf, n, k->is_set ? k->value : def);
}

static bool mv_reuse(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    if (!zero3(p) || ml_zero_max_reuse(&p->t.zero) == 0)
        return false;
    char from[48];
    ds_value(from, sizeof(from), &p->t.zero.max_reuse, ML_DS_MAX_REUSE);
    p->t.zero.max_reuse.is_auto = false;
    p->t.zero.max_reuse.is_set = true;
    p->t.zero.max_reuse.value = 0;
    change(p, ML_IN_DEEPSPEED, "stage3_max_reuse_distance", from, "0");
    return true;
}

static bool mv_persist(const struct ctx *x, struct ml_plan *p)
{
    uint64_t h = x->a->hidden;
    if (!zero3(p) || ml_zero_persistence(&p->t.zero, h) <= 10 * h)
        return false;
    char from[48];
    ds_value(from, sizeof(from), &p->t.zero.persistence, ML_DS_PERSISTENCE);
    p->t.zero.persistence.is_auto = true;
    p->t.zero.persistence.is_set = true;
    change(p, ML_IN_DEEPSPEED, "stage3_param_persistence_threshold", from, "auto");
    return true;
}

static bool mv_buckets(const struct ctx *x, struct ml_plan *p)
{
    if (!zero3(p))
        return false;
    uint64_t h = x->a->hidden, hh = h * h;
    uint64_t rb = ml_zero_reduce_bucket(&p->t.zero, h);
    uint64_t pf = ml_zero_prefetch_bucket(&p->t.zero, h);
    bool any = false;
    char from[48];
    /* HF's "auto" (h^2, 0.9 h^2) is about one weight matrix: the smallest that keeps collectives
     * efficient; larger settings only add memory. */
    if (rb > hh) {
        ds_value(from, sizeof(from), &p->t.zero.reduce_bucket, ML_DS_REDUCE_BUCKET);
        p->t.zero.reduce_bucket.is_auto = p->t.zero.reduce_bucket.is_set = true;
        change(p, ML_IN_DEEPSPEED, "reduce_bucket_size", from, "auto");
        any = true;
    }
    if (pf > ml_zero_auto_prefetch(h)) {
        ds_value(from, sizeof(from), &p->t.zero.prefetch_bucket, ML_DS_PREFETCH_BUCKET);
        p->t.zero.prefetch_bucket.is_auto = p->t.zero.prefetch_bucket.is_set = true;
        change(p, ML_IN_DEEPSPEED, "stage3_prefetch_bucket_size", from, "auto");
        any = true;
    }
    return any;
}

static bool mv_overlap(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    bool on = ml_zero_overlap(&p->t.zero);
    if (!p->t.deepspeed || !on)
        return false;
    p->t.zero.overlap_comm = false;
    p->t.zero.overlap_comm_set = true;
    change(p, ML_IN_DEEPSPEED, "overlap_comm", "true", "false");
    return true;
}

static bool microbatch(struct ml_plan *p, uint64_t div)
{
    if (p->t.micro_batch < div || p->t.micro_batch % div)
        return false;
    char f[48], t[48];
    u64s(f, sizeof(f), p->t.micro_batch);
    u64s(t, sizeof(t), p->t.micro_batch / div);
    change(p, ML_IN_YAML, "per_device_train_batch_size", f, t);
    u64s(f, sizeof(f), p->t.grad_accum);
    u64s(t, sizeof(t), p->t.grad_accum * div);
    change(p, ML_IN_YAML, "gradient_accumulation_steps", f, t);
    p->t.micro_batch /= div;
    p->t.grad_accum *= div;
    return true;
}

static bool mv_mb2(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    return microbatch(p, 2);
}

static bool mv_mb4(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    return p->t.micro_batch >= 4 && microbatch(p, 4);
}

static bool mv_gc(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    if (p->t.grad_ckpt != ML_GC_OFF)
        return false;
    p->t.grad_ckpt = ML_GC_REENTRANT;
    change(p, ML_IN_YAML, "disable_gradient_checkpointing", "true", "false");
    return true;
}

static bool mv_unsloth(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    if (p->t.grad_ckpt == ML_GC_UNSLOTH || p->t.framework != ML_FW_LLAMAFACTORY)
        return false;
    if (p->t.grad_ckpt == ML_GC_OFF)
        change(p, ML_IN_YAML, "disable_gradient_checkpointing", "true", "false");
    p->t.grad_ckpt = ML_GC_UNSLOTH;
    change(p, ML_IN_YAML, "use_unsloth_gc", "false", "true");
    return true;
}

static bool optim8(struct ml_plan *p, enum ml_optim o, const char *name)
{
    if (p->t.optim == o || p->t.optim == ML_OPTIM_ADAMW_8BIT || p->t.optim == ML_OPTIM_PAGED_ADAMW_8BIT ||
        p->t.optim == ML_OPTIM_SGD || p->t.optim == ML_OPTIM_ADAFACTOR)
        return false;
    change(p, ML_IN_YAML, "optim", ml_optim_name(p->t.optim), name);
    p->t.optim = o;
    p->t.optim_set = true;
    return true;
}

static bool mv_opt8(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    return optim8(p, ML_OPTIM_ADAMW_8BIT, "adamw_bnb_8bit");
}

static bool mv_paged(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    return optim8(p, ML_OPTIM_PAGED_ADAMW_8BIT, "paged_adamw_8bit");
}

static uint32_t world(const struct ml_plan *p)
{
    return p->c.gpus_per_node * p->c.nodes;
}

static bool zero_stage(struct ml_plan *p, uint32_t stage)
{
    if (world(p) < 2 || p->t.fsdp != ML_FSDP_NONE || (p->t.deepspeed && p->t.zero.stage >= stage))
        return false;
    char from[48];
    if (p->t.deepspeed)
        (void)snprintf(from, sizeof(from), "ZeRO-%u", p->t.zero.stage);
    else
        (void)snprintf(from, sizeof(from), "none");
    char to[48];
    (void)snprintf(to, sizeof(to), "ZeRO-%u", stage);
    if (!p->t.deepspeed) {
        ml_zero_preset(&p->t, stage, false);
        change(p, ML_IN_YAML, "deepspeed", from, to);
    } else {
        p->t.zero.stage = stage;
        if (stage == 3) {
            /* The stage-3 knobs LLaMA-Factory's ds_z3_config.json sets. */
            p->t.zero.prefetch_bucket.is_auto = p->t.zero.persistence.is_auto = true;
            p->t.zero.gather_16bit_on_save = true;
        }
        change(p, ML_IN_DEEPSPEED, "stage", from, to);
    }
    return true;
}

static bool mv_zero2(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    return zero_stage(p, 2);
}

static bool mv_zero3(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    return zero_stage(p, 3);
}

static bool mv_offload_opt(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    if (!p->t.deepspeed || p->t.zero.stage == 0 || p->t.zero.offload_optimizer)
        return false;
    p->t.zero.offload_optimizer = true;
    p->t.zero.pin_memory = true;
    change(p, ML_IN_DEEPSPEED, "offload_optimizer", "none", "cpu (pin_memory)");
    return true;
}

static bool mv_offload_all(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    if (!zero3(p) || p->t.zero.offload_param)
        return false;
    if (!p->t.zero.offload_optimizer)
        change(p, ML_IN_DEEPSPEED, "offload_optimizer", "none", "cpu (pin_memory)");
    p->t.zero.offload_optimizer = p->t.zero.offload_param = true;
    p->t.zero.pin_memory = true;
    change(p, ML_IN_DEEPSPEED, "offload_param", "none", "cpu (pin_memory)");
    return true;
}

static bool seq(struct ml_plan *p, uint64_t num, uint64_t den)
{
    uint64_t s = p->t.seq_len * num / den / 8 * 8;
    if (s < 256 || s >= p->t.seq_len)
        return false;
    char f[48], t[48];
    u64s(f, sizeof(f), p->t.seq_len);
    u64s(t, sizeof(t), s);
    change(p, ML_IN_YAML, "cutoff_len", f, t);
    p->t.seq_len = s;
    p->changes_data = true;
    return true;
}

static bool mv_seq34(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    return seq(p, 3, 4);
}

static bool mv_seq12(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    return seq(p, 1, 2);
}

static bool mv_rank(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    bool lora = p->t.method == ML_METHOD_LORA || p->t.method == ML_METHOD_QLORA;
    if (!lora || p->t.lora_rank < 8)
        return false;
    char f[48], t[48];
    u64s(f, sizeof(f), p->t.lora_rank);
    u64s(t, sizeof(t), p->t.lora_rank / 2);
    change(p, ML_IN_YAML, "lora_rank", f, t);
    p->t.lora_rank /= 2;
    p->changes_method = true;
    return true;
}

static bool mv_qlora(const struct ctx *x, struct ml_plan *p)
{
    (void)x;
    if (p->t.method != ML_METHOD_LORA)
        return false;
    p->t.method = ML_METHOD_QLORA;
    p->t.quant_bits = 4;
    change(p, ML_IN_YAML, "quantization_bit", "none", "4");
    p->changes_method = true;
    return true;
}

static bool mv_gpus(const struct ctx *x, struct ml_plan *p)
{
    uint32_t n = p->c.gpus_per_node * 2;
    bool sharded = (p->t.deepspeed && p->t.zero.stage >= 1) || p->t.fsdp != ML_FSDP_NONE;
    if (!sharded || n > x->o->max_gpus_per_node)
        return false;
    char f[48], t[48];
    u64s(f, sizeof(f), p->c.gpus_per_node);
    u64s(t, sizeof(t), n);
    change(p, ML_IN_LAUNCH, "GPUs per node", f, t);
    p->c.gpus_per_node = n;
    p->needs_hardware = true;
    return true;
}

/* Knob ids group moves that exclude each other. */
enum { K_ALLOC, K_ATTN, K_LIGER, K_FUSED, K_REUSE, K_PERSIST, K_BUCKETS, K_OVERLAP, K_MB, K_GC, K_OPT,
       K_ZERO, K_OFFLOAD, K_SEQ, K_RANK, K_QLORA, K_GPUS };

static const struct move moves[] = {
    {"expandable segments", K_ALLOC, 0, mv_expseg},
    {"sdpa attention", K_ATTN, 0, mv_sdpa},
    {"flash attention", K_ATTN, 0, mv_flash},
    {"Liger kernels", K_LIGER, 0, mv_liger},
    {"fused AdamW", K_FUSED, 0, mv_fused},
    {"no lm_head reuse retention", K_REUSE, 10, mv_reuse},
    {"persistence threshold auto", K_PERSIST, 10, mv_persist},
    {"ZeRO-3 buckets auto", K_BUCKETS, 20, mv_buckets},
    {"overlap_comm off", K_OVERLAP, 30, mv_overlap},
    {"micro-batch / 2", K_MB, 80, mv_mb2},
    {"micro-batch / 4", K_MB, 160, mv_mb4},
    {"gradient checkpointing", K_GC, 300, mv_gc},
    {"unsloth checkpointing", K_GC, 350, mv_unsloth},
    {"8-bit AdamW", K_OPT, 20, mv_opt8},
    {"paged 8-bit AdamW", K_OPT, 30, mv_paged},
    {"ZeRO-2", K_ZERO, 50, mv_zero2},
    {"ZeRO-3", K_ZERO, 150, mv_zero3},
    {"offload optimizer", K_OFFLOAD, 300, mv_offload_opt},
    {"offload optimizer and parameters", K_OFFLOAD, 500, mv_offload_all},
    {"sequence x 3/4", K_SEQ, 0, mv_seq34},
    {"sequence / 2", K_SEQ, 0, mv_seq12},
    {"LoRA rank / 2", K_RANK, 0, mv_rank},
    {"QLoRA 4-bit", K_QLORA, 250, mv_qlora},
    {"twice the GPUs", K_GPUS, 1000, mv_gpus},
};

#define N_MOVES (sizeof(moves) / sizeof(moves[0]))

/* ---- evaluation and ranking ----------------------------------------------------------- */

struct search {
    const struct ml_arch *a;
    const struct ml_inventory *inv;
    const struct ml_fit_opts *o;
    struct ml_fit_result *out;
    uint64_t target;
    struct ml_ledger led;   /* scratch */
};

/* Rank: plans that change neither data nor method, then no new hardware, then cost, then room. */
static bool better(const struct ml_plan *x, const struct ml_plan *y)
{
    int cx = (x->changes_data || x->changes_method) * 2 + x->needs_hardware;
    int cy = (y->changes_data || y->changes_method) * 2 + y->needs_hardware;
    if (cx != cy)
        return cx < cy;
    if (x->cost_permille != y->cost_permille)
        return x->cost_permille < y->cost_permille;
    /* At equal cost, the least intrusive: an environment variable before a config edit. */
    uint32_t ex = 0, ey = 0;
    for (uint32_t i = 0; i < x->n; i++)
        ex += x->ch[i].where != ML_IN_ENV;
    for (uint32_t i = 0; i < y->n; i++)
        ey += y->ch[i].where != ML_IN_ENV;
    if (ex != ey)
        return ex < ey;
    return x->device_used < y->device_used;
}

static void keep(struct search *S, const struct ml_plan *p)
{
    struct ml_fit_result *r = S->out;
    uint32_t cap = S->o->max_plans && S->o->max_plans <= ML_FIT_MAX_PLANS ? S->o->max_plans : ML_FIT_MAX_PLANS;
    uint32_t i = r->n < cap ? r->n : cap;
    if (i == cap && !better(p, &r->plans[cap - 1]))
        return;
    if (i == cap)
        i = cap - 1;
    else
        r->n++;
    while (i > 0 && better(p, &r->plans[i - 1])) {
        r->plans[i] = r->plans[i - 1];
        i--;
    }
    r->plans[i] = *p;
}

/* Evaluate a plan; returns true if it fits the target. */
static bool evaluate(struct search *S, struct ml_plan *p)
{
    struct ml_diag d;
    ml_diag_init(&d);
    S->out->evaluated++;
    struct ml_ledger_opts o; /* the search reads only the figures: no rule texts */
    ml_ledger_opts_default(&o, &p->t, &p->c);
    o.figures_only = true;
    if (ml_ledger_train(S->a, S->inv, &p->t, &p->c, &o, &S->led, &d) != ML_OK)
        return false;
    p->device_used = S->led.device_used;
    p->peak_phase = S->led.peak_phase;
    p->headroom = S->led.capacity > S->led.device_used ? S->led.capacity - S->led.device_used : 0;
    bool host_ok = !S->o->host_ram_bytes || S->led.host.peak_bytes <= S->o->host_ram_bytes;
    p->fits = S->led.device_used <= S->target && host_ok;
    if (!p->fits && (!S->out->closest.n || p->device_used < S->out->closest.device_used) && host_ok)
        S->out->closest = *p;
    return p->fits;
}

enum ml_status ml_fit_train(const struct ml_arch *arch, const struct ml_inventory *inv,
                            const struct ml_train *base, const struct ml_cluster *c,
                            const struct ml_fit_opts *o, struct ml_fit_result *out, struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    struct ml_fit_opts def;
    if (!o) {
        ml_fit_opts_default(&def);
        o = &def;
    }
    _Static_assert(N_MOVES < 64, "the search marks moves in a 64-bit set");
    struct search S;
    memset(&S, 0, sizeof(S));
    S.a = arch;
    S.inv = inv;
    S.o = o;
    S.out = out;
    uint64_t cap = c->gpu.capacity_bytes;
    S.target = cap - cap / 1000 * o->headroom_permille;
    out->target_bytes = S.target;
    struct ctx x = {arch, o};

    /* The run as it is. */
    struct ml_plan p0;
    memset(&p0, 0, sizeof(p0));
    p0.t = *base;
    p0.c = *c;
    enum ml_status st = ml_ledger_train(arch, inv, base, c, NULL, &S.led, diag);
    if (st != ML_OK)
        return st;
    out->evaluated = 1;
    out->base_device = S.led.device_used;
    out->base_fits = S.led.device_used <= S.target &&
                     (!o->host_ram_bytes || S.led.host.peak_bytes <= o->host_ram_bytes);

    /* Breadth-first over combinations of moves from distinct knobs, up to ML_FIT_MAX_DEPTH; a
     * combination that fits is kept and not extended (any extension costs more). */
    uint64_t fit_sets[512];
    uint32_t n_fit_sets = 0;
    uint64_t frontier[2][1024];
    uint32_t nf[2] = {1, 0};
    frontier[0][0] = 0;
    for (int depth = 1; depth <= ML_FIT_MAX_DEPTH; depth++) {
        uint32_t cur = (uint32_t)(depth - 1) & 1, nxt = (uint32_t)depth & 1;
        nf[nxt] = 0;
        for (uint32_t f = 0; f < nf[cur]; f++) {
            uint64_t set = frontier[cur][f];
            uint32_t start = 0;
            for (uint32_t m = 0; m < N_MOVES; m++)
                if (set >> m & 1u)
                    start = m + 1;
            for (uint32_t m = start; m < N_MOVES; m++) {
                uint64_t ns = set | ((uint64_t)1 << m);
                /* one move per knob */
                bool clash = false;
                for (uint32_t q = 0; q < N_MOVES && !clash; q++)
                    clash = (set >> q & 1u) && moves[q].knob == moves[m].knob;
                /* a superset of a fitting set is dominated */
                for (uint32_t q = 0; q < n_fit_sets && !clash; q++)
                    clash = (fit_sets[q] & ns) == fit_sets[q];
                if (clash)
                    continue;
                struct ml_plan p = p0;
                bool ok = true;
                uint32_t cost = 0;
                for (uint32_t q = 0; q < N_MOVES && ok; q++) {
                    if (!(ns >> q & 1u))
                        continue;
                    ok = moves[q].apply(&x, &p);
                    cost += moves[q].cost;
                }
                if (!ok)
                    continue;
                p.cost_permille = cost;
                p.why[0] = '\0';
                for (uint32_t q = 0; q < N_MOVES; q++)
                    if (ns >> q & 1u) {
                        size_t l = strlen(p.why);
                        (void)snprintf(p.why + l, sizeof(p.why) - l, "%s%s", l ? " + " : "", moves[q].name);
                    }
                if (evaluate(&S, &p)) {
                    keep(&S, &p);
                    if (n_fit_sets < sizeof(fit_sets) / sizeof(fit_sets[0]))
                        fit_sets[n_fit_sets++] = ns;
                } else if (nf[nxt] < sizeof(frontier[0]) / sizeof(frontier[0][0])) {
                    frontier[nxt][nf[nxt]++] = ns;
                }
            }
        }
    }
    return ML_OK;
}

/* ---- serving --------------------------------------------------------------------------- */

static void ichange(struct ml_fit_infer_plan *p, const char *key, const char *from, const char *to)
{
    if (p->n >= ML_FIT_MAX_CHANGES)
        return;
    struct ml_change *c = &p->ch[p->n++];
    c->where = ML_IN_ENGINE;
    (void)snprintf(c->key, sizeof(c->key), "%s", key);
    (void)snprintf(c->from, sizeof(c->from), "%s", from);
    (void)snprintf(c->to, sizeof(c->to), "%s", to);
}

static bool ibetter(const struct ml_fit_infer_plan *x, const struct ml_fit_infer_plan *y)
{
    int cx = x->changes_method * 2 + x->needs_hardware, cy = y->changes_method * 2 + y->needs_hardware;
    if (cx != cy)
        return cx < cy;
    if (x->cost_permille != y->cost_permille)
        return x->cost_permille < y->cost_permille;
    return x->sv.kv_tokens > y->sv.kv_tokens;
}

enum ml_status ml_fit_infer(const struct ml_arch *arch, const struct ml_inventory *inv,
                            const struct ml_infer *base, const struct ml_cluster *c,
                            const struct ml_fit_opts *o, struct ml_fit_infer_result *out,
                            struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    struct ml_fit_opts def;
    if (!o) {
        ml_fit_opts_default(&def);
        o = &def;
    }
    struct ml_ledger led;
    struct ml_serve sv;
    enum ml_status st = ml_ledger_infer(arch, inv, base, c, &led, &sv, diag);
    if (st != ML_OK)
        return st;
    out->evaluated = 1;
    out->base_fits = led.fits;
    (void)snprintf(out->base_error, sizeof(out->base_error), "%s", sv.error_text);
    uint64_t mml = sv.max_model_len;
    /* Candidate engine settings, cheapest first: the utilization up to 0.95, an fp8 KV cache,
     * a max_model_len the pool can hold (rounded down to 1024), fewer sequences per batch step,
     * tensor parallelism over 2 / 4 / 8 GPUs, and fp8 / AWQ weights. Each alone and with the
     * max_model_len cut. */
    for (uint32_t combo = 0; combo < 64; combo++) {
        struct ml_fit_infer_plan p;
        memset(&p, 0, sizeof(p));
        p.s = *base;
        struct ml_cluster cc = *c;
        bool ok = true;
        char f[48], t[48];
        if (combo & 1) {
            if (p.s.engine != ML_ENGINE_VLLM || p.s.gpu_util_permille >= 950) {
                ok = false;
            } else {
                (void)snprintf(f, sizeof(f), "0.%03u", p.s.gpu_util_permille);
                ichange(&p, "gpu_memory_utilization", f, "0.95");
                p.s.gpu_util_permille = 950;
            }
        }
        if (ok && (combo & 2)) {
            if (p.s.kv_dtype == ML_KV_FP8) {
                ok = false;
            } else {
                ichange(&p, "kv_cache_dtype", "auto", "fp8");
                p.s.kv_dtype = ML_KV_FP8;
                p.cost_permille += 20;
            }
        }
        if (ok && (combo & 4)) {
            uint32_t tp = p.s.tp * 2;
            if (tp > o->max_gpus_per_node || arch->n_heads % tp) {
                ok = false;
            } else {
                u64s(f, sizeof(f), p.s.tp);
                u64s(t, sizeof(t), tp);
                ichange(&p, "tensor_parallel_size", f, t);
                p.s.tp = tp;
                cc.gpus_per_node = tp * p.s.pp > cc.gpus_per_node ? tp * p.s.pp : cc.gpus_per_node;
                p.needs_hardware = true;
                p.cost_permille += 1000;
            }
        }
        if (ok && (combo & 8)) {
            if (p.s.quant != ML_QUANT_NONE) {
                ok = false;
            } else {
                ichange(&p, "quantization", "none", "fp8");
                p.s.quant = ML_QUANT_FP8;
                p.changes_method = true;
                p.cost_permille += 50;
            }
        }
        if (ok && (combo & 16)) {
            if (p.s.max_num_seqs && p.s.max_num_seqs <= 64) {
                ok = false;
            } else {
                uint64_t seqs = p.s.max_num_seqs ? p.s.max_num_seqs / 4 : 64;
                u64s(f, sizeof(f), p.s.max_num_seqs ? p.s.max_num_seqs : sv.max_num_seqs);
                u64s(t, sizeof(t), seqs);
                ichange(&p, "max_num_seqs", f, t);
                p.s.max_num_seqs = seqs;
                p.cost_permille += 100;
            }
        }
        if (!ok)
            continue;
        struct ml_diag d;
        ml_diag_init(&d);
        out->evaluated++;
        if (ml_ledger_infer(arch, inv, &p.s, &cc, &led, &p.sv, &d) != ML_OK)
            continue;
        if (combo & 32) {
            /* Cut max_model_len to what the pool holds, rounded down to 1024. */
            uint64_t fit = p.sv.max_model_len_fit / 1024 * 1024;
            if (!fit || fit >= mml)
                continue;
            u64s(f, sizeof(f), mml);
            u64s(t, sizeof(t), fit);
            ichange(&p, "max_model_len", f, t);
            p.s.max_model_len = fit;
            p.cost_permille += 200; /* shorter requests are refused: a service change */
            out->evaluated++;
            if (ml_ledger_infer(arch, inv, &p.s, &cc, &led, &p.sv, &d) != ML_OK)
                continue;
        }
        if (!led.fits || !p.n)
            continue;
        p.device_used = led.device_used;
        uint32_t cap = o->max_plans && o->max_plans <= ML_FIT_MAX_PLANS ? o->max_plans : ML_FIT_MAX_PLANS;
        uint32_t i = out->n < cap ? out->n : cap;
        if (i == cap && !ibetter(&p, &out->plans[cap - 1]))
            continue;
        if (i == cap)
            i = cap - 1;
        else
            out->n++;
        while (i > 0 && ibetter(&p, &out->plans[i - 1])) {
            out->plans[i] = out->plans[i - 1];
            i--;
        }
        out->plans[i] = p;
    }
    return ML_OK;
}
