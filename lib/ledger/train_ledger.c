/*
 * train_ledger.c - the per-GPU training ledger (see ledger.h): the defaults of the allocator,
 * device and NCCL figures (ml_ledger_opts_default), the device terms, and the assembly
 * (ml_ledger_train): the run (train_run.c), then the entries of the model states (train_states.c),
 * the activations (train_acts.c or litgpt_ledger.c), the stage and vision tower
 * (train_stages.c), host RAM (train_host.c), the totals and interval (ledger_common.c, interval.c)
 * and the notes (train_notes.c).
 *
 * One small function per term, each citing the rule of the shared accounting notes
 * (reference/accounting-notes.md, "notes §x.y" below) or the source file it was read from.
 * Bytes are u64 and every product goes through the checked helpers; a count that overflows
 * marks the ledger and the call fails with ML_ERR_OVERFLOW. Ratios are integer rationals.
 *
 * Vocabulary (notes §0): b micro-batch, s sequence, h hidden, a heads, h_kv = kv_heads x head_dim,
 * i FFN width, L layers, V vocab, r LoRA rank, P / P_t / P_f total / trainable / frozen params,
 * N the ranks a ZeRO or FSDP partition spans.
 */
#include "memledger/ledger.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memledger/checked.h"
#include "i18n.h"
#include "memledger/infer.h"
#include "ledger_int.h"
#include "train_compile.h"
#include "train_int.h"

/* ==== allocator and device ================================================================ */

void ml_ledger_opts_default(struct ml_ledger_opts *o, const struct ml_train *t, const struct ml_cluster *c)
{
    memset(o, 0, sizeof(*o));
    /* Fragmentation reserve (notes §5: reserved / peak allocated is typically 1.02-1.3x):
     * 4 % base; + 3 % when collectives run on side streams (overlap_comm, FSDP); expandable
     * segments track the peak to page granularity: 2 % in all. Shapes that vary from step to
     * step strand a loss working set instead (ml_ledger_train, docs/ledger.md R2). */
    uint32_t f = 40;
    bool side =
        (t->deepspeed && t->zero.stage == 3 && ml_zero_overlap(&t->zero)) || (t->fsdp != ML_FSDP_NONE && !t->deepspeed);
    if (side)
        f += 30;
    if (t->expandable_segments)
        f = 20;
    o->frag_permille = f;
    /* After a ZeRO-3 / FSDP save every gathered param is freed and the persistent ones are
     * re-gathered into new blocks (notes §1.9): + 2 % of the peak in the step after it. */
    o->after_save_permille = (t->deepspeed && t->zero.stage == 3) || t->fsdp != ML_FSDP_NONE ? 20 : 0;
    if (t->expandable_segments)
        o->after_save_permille = 0;
    /* CUDA context with lazy module loading: 0.3-0.6 GiB on A100/H100 (notes §5); 512 MiB.
     * PyTorch >= 1.13 sets CUDA_MODULE_LOADING=LAZY when unset (pytorch#86509); before it every
     * kernel image loads at start-up: 1343 MiB measured on a V100 by transformers'
     * perf_train_gpu_one page (docs/ledger.md D1, a measured value). */
    o->context_bytes = (uint64_t)(t->versions.torch < ML_VER(1, 13, 0) ? 1343 : 512) << 20;
    /* NCCL (notes §5, [L]): Simple 4 MiB + LL128 ~4.5 MiB + LL per channel and ring peer; two
     * peers x 8 channels ~ 144 MiB per process once a collective has run. On an 8-GPU NVSwitch
     * board (Hopper, Blackwell) NCCL's NVLS buffers take ~1.85 GiB per GPU: the non-torch growth
     * vLLM logs at TP >= 2 on H100 (docs/ledger.md D2; NCCL_NVLS_ENABLE=0 returns to rings). */
    bool multi = c && c->gpus_per_node * c->nodes > 1;
    bool nvls = multi && c->gpus_per_node >= 8 && c->gpu.vendor == ML_VENDOR_NVIDIA &&
                (!strcmp(c->gpu.arch, "hopper") || !strcmp(c->gpu.arch, "blackwell"));
    o->nccl_bytes = nvls ? (uint64_t)1894 << 20 : multi ? (uint64_t)144 << 20 : 0;
    o->cublas_workspace = ml_ledger_cublas_ws(c);
    o->tight_permille = 50;
}

static void device_terms(struct run *R, struct sink *sk, const struct ml_ledger_opts *o)
{
    entry(sk, ML_C_CUBLAS_WORKSPACE, o->cublas_workspace, ML_PH_STEP | ML_PH(ML_PHASE_EVAL), ML_FIG_ALLOCATED,
          "notes §5 CublasHandlePool.cpp",
          o->cublas_workspace > 10000000 ? "32 MiB (sm90+)" : _("8.125 MiB (one handle/stream)"));
    entry(sk, ML_C_CUDA_CONTEXT, o->context_bytes, ML_PH_TRAIN, ML_FIG_DEVICE, "notes §5 (0.3-0.6 GiB)",
          _("CUDA/HIP context and loaded kernels"));
    if (R->world > 1)
        entry(sk, ML_C_NCCL, o->nccl_bytes, ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_DEVICE, "notes §5 NCCL [L]",
              _("communicator buffers, 8 channels x 2 peers"));
}

/* Hundredths of a loss working set (replay, docs/ledger.md): see struct r2_sets. Checkpointing
 * off (_NC): the records' saved activations are stranded too (32 layers; the 10th percentile from
 * 8, which strand less). Batch > 1 (_B): each step padded to the longest of b samples (b = 4;
 * the 10th percentile no higher than batch 1's). */
#define R2_TRUNC_LO     74
#define R2_TRUNC_MID    176
#define R2_TRUNC_HI     341
#define R2_DEL_LO       176
#define R2_DEL_MID      354
#define R2_DEL_HI       679
#define R2_TRUNC_NC_LO  49
#define R2_TRUNC_NC_MID 323
#define R2_TRUNC_NC_HI  559
#define R2_DEL_NC_LO    155
#define R2_DEL_NC_MID   570
#define R2_DEL_NC_HI    718
#define R2_TRUNC_B_LO   27
#define R2_TRUNC_B_MID  210
#define R2_TRUNC_B_HI   561
#define R2_DEL_B_LO     176
#define R2_DEL_B_MID    561
#define R2_DEL_B_HI     815

/* ==== variable-length steps (docs/ledger.md "Variable-length steps in the caching allocator") ==== */

/* The cache left by steps of varying length, in loss working sets at the run's length (hundredths):
 * the median (the point) and the 10th / 90th percentiles (the reserved interval) of the replay of
 * real step traces through the allocator's policy (validation/oracle/allocator, analyze.py), over
 * 1000 micro-steps of the length distributions that fit how the trainer treats a sample longer
 * than its max length. Truncated (LLaMA-Factory cutoff_len, TRL, torchtune, the HF examples): the
 * samples over the limit make a mass at it, and the first of them ends the records; deleted
 * (ms-swift's truncation_strategy 'delete'): no mass at the limit, records keep coming (their
 * number grows as the harmonic sum of the steps). Without gradient checkpointing the replay
 * strands more (32 layers: the saved activations of the earlier records too), and so do batches of
 * several samples padded to their longest (the longest of b draws is near the max length more
 * often). */
struct r2_sets {
    uint32_t lo, mid, hi;
    const char *source;
};

static const struct r2_sets R2_TRUNCATED = {
    R2_TRUNC_LO, R2_TRUNC_MID, R2_TRUNC_HI,
    "c10/cuda/CUDACachingAllocator.cpp; validation/oracle/allocator, lengths truncated (docs/ledger.md R2)"};
static const struct r2_sets R2_DELETED = {
    R2_DEL_LO, R2_DEL_MID, R2_DEL_HI,
    "c10/cuda/CUDACachingAllocator.cpp; validation/oracle/allocator, ms-swift truncation_strategy 'delete' "
    "(docs/ledger.md R2)"};
static const struct r2_sets R2_TRUNCATED_NC = {
    R2_TRUNC_NC_LO, R2_TRUNC_NC_MID, R2_TRUNC_NC_HI,
    "c10/cuda/CUDACachingAllocator.cpp; validation/oracle/allocator, lengths truncated, no checkpointing "
    "(docs/ledger.md R2)"};
static const struct r2_sets R2_DELETED_NC = {
    R2_DEL_NC_LO, R2_DEL_NC_MID, R2_DEL_NC_HI,
    "c10/cuda/CUDACachingAllocator.cpp; validation/oracle/allocator, ms-swift truncation_strategy 'delete', "
    "no checkpointing (docs/ledger.md R2)"};

static const struct r2_sets R2_TRUNCATED_B = {
    R2_TRUNC_B_LO, R2_TRUNC_B_MID, R2_TRUNC_B_HI,
    "c10/cuda/CUDACachingAllocator.cpp; validation/oracle/allocator, lengths truncated, batch padded to its "
    "longest (docs/ledger.md R2)"};
static const struct r2_sets R2_DELETED_B = {
    R2_DEL_B_LO, R2_DEL_B_MID, R2_DEL_B_HI,
    "c10/cuda/CUDACachingAllocator.cpp; validation/oracle/allocator, ms-swift truncation_strategy 'delete', "
    "batch padded to its longest (docs/ledger.md R2)"};

/* The replay's sets for this run, or NULL where it strands nothing: full fine-tuning whose
 * gradients are unsharded and freed every step (GA 1, zero_grad(set_to_none)) - the freed
 * gradient segments are larger than a loss working set and the next record is carved from them. */
static const struct r2_sets *r2_sets(const struct run *R)
{
    const struct ml_train *t = R->t;
    if (R->full && t->grad_accum <= 1 && !R->zero3 && !R->zero12 && !R->fsdp && !R->grads_kept)
        return NULL;
    /* Checkpointing off and batch > 1 together were not replayed: the larger, checkpointing off. */
    bool nc = t->grad_ckpt == ML_GC_OFF, batch = R->b > 1;
    if (t->trainer == ML_TRAINER_MS_SWIFT)
        return nc ? &R2_DELETED_NC : batch ? &R2_DELETED_B : &R2_DELETED;
    return nc ? &R2_TRUNCATED_NC : batch ? &R2_TRUNCATED_B : &R2_TRUNCATED;
}

/* ==== FSDP1 initialisation from the CPU (docs/ledger.md R3) ================================= */

/* torch/distributed/fsdp/_init_utils.py PARAM_BROADCAST_BUCKET_SIZE */
#define ML_FSDP_BCAST_BUCKET (250ull << 20)

/* FSDP1 wraps a module that is on the CPU and moves it unit by unit (device_id): the HF Trainer
 * (place_model_on_device is off under FSDP) and Answer.AI's train.py (rank 0 builds the model on
 * the CPU) both do. LitGPT (Fabric) and torchtune build on the device or use FSDP2. */
static bool fsdp1_cpu_init(const struct run *R)
{
    const struct ml_train *t = R->t;
    return R->fsdp && !R->litgpt && !t->deepspeed && t->fsdp_version != 2 && t->framework != ML_FW_TORCHTUNE;
}

/* The bytes the root unit's initialisation frees into the cache (docs/ledger.md R3): per unit,
 * _init_param_handle_from_module moves the unit's parameters to the GPU one by one
 * (_move_module_to_device), FlatParamHandle.flatten_tensors concatenates them into a new tensor
 * of the unit's size, shard() clones this rank's chunk and frees the concatenation, and the moved
 * originals are freed when the function returns. Under sync_module_states the parameters are
 * broadcast first (_sync_module_params_and_buffers -> _broadcast_coalesced, 250 MiB buckets; a
 * bucket of several tensors is flattened into a new tensor, which ProcessGroupNCCL's recordStream
 * keeps from the concatenation and the shard). The root (embedding, final norm, LM head) is the
 * last and the largest unit: its freed blocks are too large for anything after it in the init. */
static uint64_t fsdp1_root_init_cache(struct run *R)
{
    struct calc *k = &R->k;
    const struct ml_train *t = R->t;
    uint64_t parts[3] = {mul(k, R->embed_numel, 2), mul(k, R->a->hidden, 2),
                         R->a->tie_embeddings ? 0 : mul(k, R->head_numel, 2)};
    uint64_t root = add(k, add(k, parts[0], parts[1]), parts[2]);
    uint64_t cache = mul(k, root, 2); /* the moved originals + the concatenation */
    bool sync = t->fsdp_ram_efficient || t->trainer == ML_TRAINER_FSDP_QLORA;
    if (sync) { /* compute_bucket_assignment_by_size: a bucket closes once it reaches the limit */
        uint64_t bucket = 0;
        uint32_t n = 0;
        for (int i = 0; i < 3; i++) {
            if (!parts[i])
                continue;
            bucket = add(k, bucket, parts[i]);
            n++;
            if (bucket >= ML_FSDP_BCAST_BUCKET) {
                cache = add(k, cache, n > 1 ? bucket : 0);
                bucket = 0;
                n = 0;
            }
        }
        cache = add(k, cache, n > 1 ? bucket : 0);
    }
    if (t->fsdp_offload) /* the shard goes to the host (flat_param_to) */
        cache = add(k, cache, part(root, R->n_shard));
    return cache;
}

/* The floor under max_memory_reserved that FSDP1's initialisation leaves (docs/ledger.md R3):
 * nothing empties the cache after it (a reset of the peak statistics keeps the current reserved
 * bytes), the all-gathers run on FSDP's unshard stream (_unshard: the unsharded flat parameter is
 * allocated under state._device_handle.stream(unshard_stream)), and the caching allocator never
 * gives a block of one stream to a request of another (CUDACachingAllocator.cpp get_free_block).
 * So the default stream holds at least what the init left (the persistent shards and the root's
 * freed blocks) plus the optimizer states and gradient shards made after it, and the unshard
 * stream's gathered units come on top. Booked as cache: whole free segments, released before an
 * out-of-memory error. */
static void fsdp1_init_floor(struct run *R, struct sink *sk, struct ml_ledger *out, uint32_t frag_permille)
{
    if (!fsdp1_cpu_init(R))
        return;
    struct calc *k = &R->k;
    uint64_t phase[ML_PHASE_COUNT] = {0}, held[ML_PHASE_COUNT] = {0}, gathered = 0, after = 0;
    for (uint32_t i = 0; i < out->n; i++) {
        const struct ml_entry *e = &out->e[i];
        for (int p = 0; p < ML_PHASE_COUNT; p++)
            if (e->phases & ML_PH(p)) {
                if (e->figure == ML_FIG_ALLOCATED)
                    phase[p] = add(k, phase[p], e->bytes);
                else if (e->figure == ML_FIG_RESERVED) /* the stranded sets (R2), booked before */
                    held[p] = add(k, held[p], e->bytes);
            }
        if (e->figure != ML_FIG_ALLOCATED)
            continue;
        if (e->id == ML_C_FSDP_UNSHARDED)
            gathered = max2(gathered, e->bytes);
        if ((e->id == ML_C_OPTIMIZER || e->id == ML_C_GRADIENTS) && (e->phases & ML_PH(ML_PHASE_OPTIMIZER_STEP)))
            after = add(k, after, e->bytes);
    }
    uint64_t peak = 0, reserved = 0;
    for (int p = 0; p < ML_PHASE_COUNT; p++)
        if (out->phase_active[p] && p != ML_PHASE_LOAD) {
            peak = max2(peak, phase[p]);
            reserved = max2(reserved, add(k, phase[p], held[p]));
        }
    uint64_t init = fsdp1_root_init_cache(R);
    uint64_t floor = add(k, add(k, add(k, phase[ML_PHASE_LOAD], init), after), gathered);
    uint64_t need = add(k, reserved, ml_ceil_div_u64(mul(k, peak, frag_permille), 1000));
    if (floor <= need)
        return;
    ml_ledger_cache_entry(sk, floor - need, ML_PH_STEP,
                          "torch/distributed/fsdp/_init_utils.py _init_param_handle_from_module, _flat_param.py "
                          "shard, _runtime_utils.py _unshard; c10/cuda/CUDACachingAllocator.cpp get_free_block; "
                          "validation/oracle/allocator/fsdp1.py (docs/ledger.md R3)",
                          _("FSDP1 init: the root unit's freed blocks (cache, freed before an OOM)"));
}

/* ==== assembly ============================================================================= */

/* The family whose validation residuals give this run's interval (interval.c; docs/ledger.md, "The
 * interval"): LitGPT, torchtune and ms-swift's trainer by name; the HF Trainer (LLaMA-Factory, TRL)
 * on one GPU or DDP ("hf") or sharded by DeepSpeed/FSDP ("hf-sharded"), with "-dynamic" when batch
 * shapes vary and the cache is never emptied (the stranded-set rule R2). The part before the first
 * '-' names the trainer, whose residuals of every figure are the family's fallback. */
static const char *interval_family(const struct run *R)
{
    if (R->litgpt)
        return "litgpt";
    if (R->t->framework == ML_FW_TORCHTUNE)
        return "torchtune";
    if (R->t->trainer == ML_TRAINER_MS_SWIFT)
        return "swift";
    if (R->t->deepspeed || R->fsdp)
        return R->dynamic_shapes ? "hf-sharded-dynamic" : "hf-sharded";
    return R->dynamic_shapes ? "hf-dynamic" : "hf";
}

/* The cache left by variable-length steps (R2): booked as releasable in the step phases; in the step
 * after a ZeRO-3 / FSDP save one set is pinned (needed), the rest stays releasable. */
static void stranded_cache(struct run *R, struct sink *sk, struct ml_ledger *out, const struct ml_ledger_opts *o)
{
    /* Variable batch shapes, cache never emptied (docs/ledger.md R2 and "Variable-length steps in the
     * caching allocator"): every step longer than all before it (a record) needs blocks larger
     * than any cached free block for its loss working set, so new segments are reserved and the
     * earlier record's stay cached (c10/cuda/CUDACachingAllocator.cpp get_free_block best fit,
     * no merge across segments, no release without a failed cudaMalloc). The replay of real step
     * traces through the allocator's policy (validation/oracle/allocator) strands, in loss
     * working sets at the run's length, r2_sets(): cache, not need - whole free segments the
     * allocator frees before it reports out of memory. After a ZeRO-3 / FSDP save the
     * re-gathered parameters are placed in cached blocks first and split them; a split segment
     * with a live block cannot be freed, so in the step after the save one set counts as needed
     * (the segments the re-gather lands in, at most one set: R2). */
    const struct r2_sets *rs = r2_sets(R);
    if (!rs)
        return;
    uint64_t set = ml_ledger_bytes(out, ML_C_LOGITS_LOSS);
    uint64_t cache = ml_ceil_div_u64(mul(&R->k, set, rs->mid), 100);
    uint32_t pinned = o->after_save_permille && out->phase_active[ML_PHASE_AFTER_SAVE] ? ML_PH(ML_PHASE_AFTER_SAVE) : 0;
    ml_ledger_cache_entry(sk, cache, ML_PH_STEP & ~pinned, rs->source,
                          _("%u.%02u loss working sets stranded by longer steps (cache, freed before an OOM)"),
                          rs->mid / 100, rs->mid % 100);
    if (pinned) {
        entry(sk, ML_C_ALLOCATOR, set, pinned, ML_FIG_RESERVED,
              "c10/cuda/CUDACachingAllocator.cpp, notes §1.9 (docs/ledger.md R2)",
              _("the stranded loss working set, pinned by the re-gathered parameters after the save"));
        ml_ledger_cache_entry(sk, cache > set ? cache - set : 0, pinned, rs->source,
                              _("the rest of the stranded sets (cache, freed before an OOM)"));
    }
}

static void stranded_interval(struct run *R, struct ml_ledger *out)
{
    if (!out->cache_reserved)
        return;
    /* The stranded sets depend on the order and spread of the lengths, which the ledger does not
     * know: the reserved interval takes in the replay's 10th-90th percentiles of the cache it
     * books (as far as the card has room: max_memory_reserved never passes it). */
    const struct r2_sets *rs = r2_sets(R);
    out->interval_stranded[0] = mul(&R->k, out->cache_reserved, rs->mid - rs->lo) / rs->mid;
    out->interval_stranded[1] = mul(&R->k, out->cache_reserved, rs->hi - rs->mid) / rs->mid;
    ml_interval_widen(out->interval[ML_FIG_RESERVED], out->interval_stranded, R->c->gpu.capacity_bytes);
}

/* The stranded cache at the replay's 90th percentile, before the card's room caps it (the note). */
static uint64_t stranded_hi(struct run *R, const struct ml_ledger *out)
{
    const struct r2_sets *rs = R->dynamic_shapes ? r2_sets(R) : NULL;
    return rs ? ml_ceil_div_u64(mul(&R->k, ml_ledger_bytes(out, ML_C_LOGITS_LOSS), rs->hi), 100) : 0;
}

enum ml_status ml_ledger_train(const struct ml_arch *arch, const struct ml_inventory *inv, const struct ml_train *t,
                               const struct ml_cluster *c, const struct ml_ledger_opts *opts, struct ml_ledger *out,
                               struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    struct run R;
    memset(&R, 0, sizeof(R));
    R.a = arch;
    R.inv = inv;
    R.t = t;
    R.c = c;
    enum ml_status st = ml_ledger_setup_run(&R, diag);
    if (st != ML_OK)
        return st;
    struct ml_ledger_opts o;
    if (opts)
        o = *opts;
    else
        ml_ledger_opts_default(&o, t, c);

    struct sink sk = {out, &R.k, o.figures_only};
    ml_ledger_model_states(&R, &sk);
    if (R.zero3)
        ml_ledger_zero3_terms(&R, &sk);
    else if (R.zero12)
        ml_ledger_zero12_terms(&R, &sk);
    else if (R.fsdp && R.litgpt)
        ml_litgpt_fsdp_terms(&R, &sk);
    else if (R.fsdp)
        ml_ledger_fsdp_terms(&R, &sk);
    ml_ledger_step_terms(&R, &sk);
    if (R.litgpt && !R.fsdp)
        ml_litgpt_terms(&R, &sk);
    else if (!R.litgpt)
        ml_ledger_activation_terms(&R, &sk);
    ml_ledger_stage_terms(&R, &sk);
    ml_ledger_load_terms(&R, &sk);
    device_terms(&R, &sk, &o);
    ml_ledger_host_terms(&R, out);

    /* Phases that happen in this run. */
    for (int p = 0; p < ML_PHASE_COUNT; p++)
        out->phase_active[p] = (ML_PH_TRAIN >> p) & 1u;
    out->phase_active[ML_PHASE_EVAL] = t->do_eval;
    /* The step after a mid-run save happens only when the run saves (save_steps given). */
    out->phase_active[ML_PHASE_AFTER_SAVE] = t->save_steps > 0;
    uint32_t all = ml_ledger_stage_phases(&R, out);
    out->phase_active[ML_PHASE_GENERATE] = (all >> ML_PHASE_GENERATE) & 1u;

    if (R.dynamic_shapes)
        stranded_cache(&R, &sk, out, &o);
    fsdp1_init_floor(&R, &sk, out, o.frag_permille);

    /* The allocator reserve on top of the allocated peak, the after-save reserve, the figures. */
    uint32_t extra[ML_PHASE_COUNT] = {0};
    extra[ML_PHASE_AFTER_SAVE] = o.after_save_permille;
    ml_ledger_finish(out, &sk, o.frag_permille, extra, all, c->gpu.capacity_bytes, o.tight_permille);

    /* What the ledger does not model exactly widens the interval (docs/ledger.md, "The interval"):
     * settings read but not modelled (their warnings: torch.compile, unsloth and fused kernels,
     * ...), and parameter offload under FSDP-QLoRA (the 4-bit shards on the host, the quant
     * state on the GPU: F1, an approximation). */
    const char *widen = t->unmodelled ? _("settings the ledger reads but does not model (see the warnings)")
                        : R.fsdp && R.qlora && t->fsdp_offload ? _("parameter offload under FSDP-QLoRA")
                        : R.stage.fused_head && !t->versions.trl
                            ? _("the TRL version, not given (its fused LM head from 1.15 changes the loss bytes)")
                        : ml_trl_sft_fused(t) ? _("TRL's SFTTrainer fused LM head (from 1.15), not modelled")
                                              : ml_compile_widen(&R);
    ml_ledger_interval(out, &R.k, interval_family(&R),
                       R.qlora  ? "qlora"
                       : R.lora ? "lora"
                                : "full",
                       o.tight_permille, widen);

    if (R.dynamic_shapes)
        stranded_interval(&R, out);

    out->params = R.P;
    out->trainable = R.P_t_all;
    out->seq_len = R.s;
    out->micro_batch = R.b;
    out->world = R.world;
    out->sharding = R.n_shard;

    if (!o.figures_only) {
        ml_ledger_train_notes(&R, t, out);
        ml_ledger_reserve_notes(out, stranded_hi(&R, out), R.dynamic_shapes);
    }
    if (R.k.overflow)
        return ml_diag_set(diag, ML_ERR_OVERFLOW, _("a byte count of this run overflows 64 bits"));
    return ML_OK;
}
