/*
 * knobs.c - every change memledger proposes, one row each (fit.h): its cost, its exclusion group,
 * what it does to the run and how each framework writes it. ml_fit_train and ml_fit_infer search
 * these rows; ml_diagnose prices its fixes through them. Pure: no I/O, no allocation.
 *
 * Cost (docs/cli/fit.md, "Knobs and the cost model"): the slowdown of each knob, in permille of
 * step time, with its source.
 *   0    allocator (expandable segments), attention sdpa/flash, Liger kernels, fused AdamW: no
 *        slowdown (most are faster); not gathering the 16-bit model at save; a higher vLLM
 *        gpu_memory_utilization.
 *   10   ZeRO-3 stage3_max_reuse_distance 0 or a lower persistence threshold: one more all-gather
 *        of the lm_head / small params per step.
 *   20   ZeRO-3 smaller buckets: more, smaller collectives. 8-bit AdamW (bitsandbytes) 20, paged 30.
 *        An fp8 KV cache 20 (a quantize/dequantize per attention call).
 *   30   overlap_comm off: collectives no longer hidden behind compute. Halving the ZeRO-3 prefetch
 *        and live budgets with overlap off: 20 + 30 = 50.
 *   50   a smaller vLLM KV pool (gpu_memory_utilization down): fewer sequences, at full load only.
 *   80   per halving of the micro-batch (gradient accumulation doubled): lower GPU utilisation.
 *   100  fewer sequences or tokens per vLLM batch step (max_num_seqs, max_num_batched_tokens,
 *        chunked prefill): lower serving throughput.
 *   150  ZeRO-3 instead of ZeRO-0/1/2 (per-layer all-gathers); 50 for ZeRO-2.
 *   200  a shorter vLLM max_model_len: longer requests are refused (a service change).
 *   300  gradient checkpointing: one more forward per step (~1/3 of forward + backward FLOPs;
 *        Chen et al. 2016); 350 for unsloth's offloaded variant.
 *   300  optimizer offload to the host ("20-40 % slower", seed Q&A); 500 with parameters too.
 *   250  QLoRA: dequantization in every matmul; 50 for fp8 weights in vLLM.
 *   0    more GPUs (twice the GPUs, tensor parallelism over twice as many): no slower; what they
 *        cost is hardware, which ML_COST_HARDWARE ranks (a slowdown figure of 1000 read as
 *        "100 % slower").
 * Sequence length, LoRA rank and quantization change the data or the method, more GPUs need
 * hardware: ml_knob_rank places them after every knob that does not (ML_COST_RESULT,
 * ML_COST_HARDWARE).
 */
#include "knobs.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "memledger/units.h"

static void add(struct ml_edit *e, enum ml_knob_id k, enum ml_setting s, uint64_t value, const char *key,
                const char *from, const char *to)
{
    if (*e->n >= ML_FIT_MAX_CHANGES)
        return;
    struct ml_change *c = &e->ch[(*e->n)++];
    c->knob = k;
    c->set = s;
    c->value = value;
    c->where = ml_settings[s].where;
    enum ml_dialect d = ml_file_dialect(c->where, e->t);
    const char *sp = ml_setting_spelled(s, d, to);
    if (!key)
        key = sp ? ml_settings[s].name[d] : NULL; /* no key, or none for this value: advice, not a key */
    (void)snprintf(c->key, sizeof(c->key), "%s", key ? key : "");
    (void)snprintf(c->from, sizeof(c->from), "%s", ml_setting_value(s, d, from));
    (void)snprintf(c->to, sizeof(c->to), "%s", sp ? sp : to);
}

static const char *u64s(char *buf, size_t n, uint64_t v)
{
    (void)snprintf(buf, n, "%llu", (unsigned long long)v);
    return buf;
}

/* A count change "from -> to". */
static void add_count(struct ml_edit *e, enum ml_knob_id k, enum ml_setting s, uint64_t from, uint64_t to)
{
    char f[24], t[24];
    add(e, k, s, to, NULL, u64s(f, sizeof(f), from), u64s(t, sizeof(t), to));
}

/* A switch, written in the run's trainer dialect (inverted for disable_gradient_checkpointing). */
static void add_bool(struct ml_edit *e, enum ml_knob_id k, enum ml_setting s, bool from, bool to)
{
    bool invert = ml_settings[s].kind == V_NOT && ml_file_dialect(ml_settings[s].where, e->t) == ML_DIALECT_LF;
    add(e, k, s, to, NULL, from != invert ? "true" : "false", to != invert ? "true" : "false");
}

/* ---- training knobs ---------------------------------------------------------------------- */

static bool rocm(const struct ml_cluster *c)
{
    return c->gpu.vendor == ML_VENDOR_AMD || c->gpu.vendor == ML_VENDOR_HYGON;
}

static bool k_expseg(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (e->t->expandable_segments && !x->force)
        return false;
    e->t->expandable_segments = true;
    if (x->alloc_var) {
        add(e, ML_KNOB_EXPANDABLE, ML_SET_ALLOC_CONF, 1, x->alloc_var, "(unset)", "expandable_segments:True");
        return true;
    }
    /* PyTorch reads PYTORCH_HIP_ALLOC_CONF on ROCm builds (c10/cuda/CUDAAllocatorConfig); for a
     * GPU given only by its size, set both. */
    if (e->c->gpu.vendor != ML_VENDOR_NVIDIA)
        add(e, ML_KNOB_EXPANDABLE, ML_SET_ALLOC_CONF, 1, "PYTORCH_HIP_ALLOC_CONF", "(unset)",
            "expandable_segments:True");
    if (!rocm(e->c))
        add(e, ML_KNOB_EXPANDABLE, ML_SET_ALLOC_CONF, 1, "PYTORCH_CUDA_ALLOC_CONF", "(unset)",
            "expandable_segments:True");
    return true;
}

static const char *flash_attn_value(enum ml_attn a)
{
    return a == ML_ATTN_EAGER ? "disabled" : a == ML_ATTN_SDPA ? "sdpa" : "fa2";
}

static bool k_sdpa(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->force && (e->t->attn != ML_ATTN_EAGER || (x->arch && x->arch->attn_softcap) ||
                      ml_attn_refused(x->arch, e->t->framework, ML_ATTN_SDPA)))
        return false;
    add(e, ML_KNOB_SDPA, ML_SET_FLASH_ATTN, ML_ATTN_SDPA, NULL, flash_attn_value(e->t->attn), "sdpa");
    e->t->attn = ML_ATTN_SDPA;
    return true;
}

static bool k_flash(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    /* FlashAttention-2 needs NVIDIA Ampere or newer. */
    const char *arch = e->c->gpu.arch;
    bool ok = e->c->gpu.vendor == ML_VENDOR_NVIDIA && (!strcmp(arch, "ampere") || !strcmp(arch, "ada") ||
                                                       !strcmp(arch, "hopper") || !strcmp(arch, "blackwell"));
    if (!x->force && (!ok || e->t->attn == ML_ATTN_FLASH || ml_attn_refused(x->arch, e->t->framework, ML_ATTN_FLASH)))
        return false;
    add(e, ML_KNOB_FLASH, ML_SET_FLASH_ATTN, ML_ATTN_FLASH, NULL, flash_attn_value(e->t->attn), "fa2");
    e->t->attn = ML_ATTN_FLASH;
    return true;
}

static bool k_liger(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->force && (e->t->liger_kernel || (e->t->framework != ML_FW_LLAMAFACTORY && e->t->framework != ML_FW_HF)))
        return false;
    e->t->liger_kernel = true;
    add_bool(e, ML_KNOB_LIGER, ML_SET_LIGER, false, true);
    return true;
}

static bool k_fused(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->force && e->t->optim != ML_OPTIM_ADAMW_TORCH)
        return false;
    e->t->optim = ML_OPTIM_ADAMW_TORCH_FUSED;
    e->t->optim_set = true;
    add(e, ML_KNOB_FUSED_ADAMW, ML_SET_OPTIM, ML_OPTIM_ADAMW_TORCH_FUSED, NULL, "adamw_torch", "adamw_torch_fused");
    return true;
}

static bool zero3(const struct ml_train *t)
{
    return t->deepspeed && t->zero.stage == 3;
}

/* A DeepSpeed size as the file has it: "auto", its value, or DeepSpeed's default. */
static const char *ds_value(char *buf, size_t n, const struct ml_ds_size *k, uint64_t def)
{
    if (k->is_auto)
        (void)snprintf(buf, n, "auto");
    else
        u64s(buf, n, k->is_set ? k->value : def);
    return buf;
}

/* Set a DeepSpeed size to "auto" (HF's value for the model), recording the change. */
static void size_auto(struct ml_edit *e, enum ml_knob_id k, enum ml_setting s, struct ml_ds_size *z, uint64_t def)
{
    char from[48];
    ds_value(from, sizeof(from), z, def);
    z->is_auto = z->is_set = true;
    add(e, k, s, 0, NULL, from, "auto");
}

/* Set a DeepSpeed size to v. */
static void size_set(struct ml_edit *e, enum ml_knob_id k, enum ml_setting s, struct ml_ds_size *z, uint64_t def,
                     uint64_t v)
{
    char from[48], to[24];
    ds_value(from, sizeof(from), z, def);
    z->is_auto = false;
    z->is_set = true;
    z->value = v;
    add(e, k, s, v, NULL, from, u64s(to, sizeof(to), v));
}

static uint64_t hidden(const struct ml_knob_ctx *x)
{
    return x->arch ? x->arch->hidden : 0;
}

static bool k_reuse(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->force && (!zero3(e->t) || ml_zero_max_reuse(&e->t->zero) == 0))
        return false;
    size_set(e, ML_KNOB_ZERO3_REUSE, ML_SET_MAX_REUSE, &e->t->zero.max_reuse, ML_DS_MAX_REUSE, 0);
    return true;
}

static bool k_persist(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    uint64_t h = hidden(x);
    if (!x->force && (!zero3(e->t) || ml_zero_persistence(&e->t->zero, h) <= 10 * h))
        return false;
    size_auto(e, ML_KNOB_ZERO3_PERSIST, ML_SET_PERSISTENCE, &e->t->zero.persistence, ML_DS_PERSISTENCE);
    return true;
}

static bool k_buckets(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!zero3(e->t) && !x->force)
        return false;
    uint64_t h = hidden(x), hh = h * h;
    bool any = false;
    /* HF's "auto" (h^2, 0.9 h^2) is about one weight matrix: the smallest that keeps collectives
     * efficient; larger settings only add memory. */
    if (ml_zero_reduce_bucket(&e->t->zero, h) > hh) {
        size_auto(e, ML_KNOB_ZERO3_BUCKETS, ML_SET_REDUCE_BUCKET, &e->t->zero.reduce_bucket, ML_DS_REDUCE_BUCKET);
        any = true;
    }
    if (ml_zero_prefetch_bucket(&e->t->zero, h) > ml_zero_auto_prefetch(h)) {
        size_auto(e, ML_KNOB_ZERO3_BUCKETS, ML_SET_PREFETCH_BUCKET, &e->t->zero.prefetch_bucket, ML_DS_PREFETCH_BUCKET);
        any = true;
    }
    return any;
}

static bool k_overlap(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->force && (!e->t->deepspeed || !ml_zero_overlap(&e->t->zero)))
        return false;
    e->t->zero.overlap_comm = false;
    e->t->zero.overlap_comm_set = true;
    add(e, ML_KNOB_OVERLAP_OFF, ML_SET_OVERLAP_COMM, 0, NULL, "true", "false");
    return true;
}

/* The DeepSpeed file's integer batch keys among bits (ML_DS_INT_*) set to "auto": transformers
 * refuses an integer that no longer equals the training arguments (integrations/deepspeed.py
 * HfTrainerDeepSpeedConfig.trainer_config_process fill_match, trainer_config_finalize), and fills
 * "auto" with them. Called before the run changes (the from values are the file's). */
static void ds_batch_auto(struct ml_edit *e, enum ml_knob_id k, uint32_t bits)
{
    struct ml_train *t = e->t;
    static const struct {
        uint32_t bit;
        enum ml_setting set;
    } keys[] = {{ML_DS_INT_MICRO, ML_SET_DS_MICRO_BATCH},
                {ML_DS_INT_ACCUM, ML_SET_DS_GRAD_ACCUM},
                {ML_DS_INT_GLOBAL, ML_SET_DS_TRAIN_BATCH}};
    if (!t->deepspeed)
        return;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (!(bits & t->zero.int_batch & keys[i].bit))
            continue;
        uint64_t v = keys[i].bit == ML_DS_INT_MICRO   ? t->micro_batch
                     : keys[i].bit == ML_DS_INT_ACCUM ? t->grad_accum
                                                      : t->zero.train_batch_size;
        char from[24];
        add(e, k, keys[i].set, 0, NULL, u64s(from, sizeof(from), v), "auto");
        t->zero.int_batch &= ~keys[i].bit;
    }
}

/* The micro-batch divided by div, gradient accumulation multiplied: the same global batch. */
static bool microbatch(struct ml_edit *e, enum ml_knob_id k, uint64_t div)
{
    struct ml_train *t = e->t;
    if (t->micro_batch < div || t->micro_batch % div)
        return false;
    add_count(e, k, ML_SET_MICRO_BATCH, t->micro_batch, t->micro_batch / div);
    /* LitGPT derives the accumulation from train.global_batch_size (litgpt/args.py
     * TrainArgs.gradient_accumulation_iters): nothing more to write. */
    if (ml_file_dialect(ML_IN_YAML, t) != ML_DIALECT_LITGPT)
        add_count(e, k, ML_SET_GRAD_ACCUM, t->grad_accum, t->grad_accum * div);
    ds_batch_auto(e, k, ML_DS_INT_MICRO | ML_DS_INT_ACCUM);
    t->micro_batch /= div;
    t->grad_accum *= div;
    return true;
}

static bool k_mb2(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)x;
    (void)v;
    return microbatch(e, ML_KNOB_MICRO_BATCH_2, 2);
}

static bool k_mb4(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)x;
    (void)v;
    return microbatch(e, ML_KNOB_MICRO_BATCH_4, 4);
}

static bool k_gc(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->force && e->t->grad_ckpt != ML_GC_OFF)
        return false;
    e->t->grad_ckpt = ML_GC_REENTRANT;
    add_bool(e, ML_KNOB_GRAD_CKPT, ML_SET_GRAD_CKPT, false, true);
    return true;
}

static bool k_unsloth(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->force && (e->t->grad_ckpt == ML_GC_UNSLOTH || e->t->framework != ML_FW_LLAMAFACTORY))
        return false;
    if (e->t->grad_ckpt == ML_GC_OFF)
        add_bool(e, ML_KNOB_UNSLOTH_GC, ML_SET_GRAD_CKPT, false, true);
    e->t->grad_ckpt = ML_GC_UNSLOTH;
    add_bool(e, ML_KNOB_UNSLOTH_GC, ML_SET_UNSLOTH_GC, false, true);
    return true;
}

/* bitsandbytes' 8-bit AdamW: transformers' OptimizerNames ADAMW_BNB ("adamw_bnb_8bit", the name
 * LLaMA-Factory's examples use; "adamw_8bit" is an alias of the same optimizer in trainer.py
 * get_optimizer_cls_and_kwargs). */
static bool optim8(const struct ml_knob_ctx *x, struct ml_edit *e, enum ml_knob_id k, enum ml_optim o, const char *name)
{
    enum ml_optim cur = e->t->optim;
    if (!x->force && (cur == o || cur == ML_OPTIM_ADAMW_8BIT || cur == ML_OPTIM_PAGED_ADAMW_8BIT ||
                      cur == ML_OPTIM_SGD || cur == ML_OPTIM_ADAFACTOR))
        return false;
    add(e, k, ML_SET_OPTIM, o, NULL, ml_optim_name(cur), name);
    e->t->optim = o;
    e->t->optim_set = true;
    return true;
}

static bool k_opt8(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    return optim8(x, e, ML_KNOB_ADAMW_8BIT, ML_OPTIM_ADAMW_8BIT, "adamw_bnb_8bit");
}

static bool k_paged(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    return optim8(x, e, ML_KNOB_PAGED_ADAMW_8BIT, ML_OPTIM_PAGED_ADAMW_8BIT, "paged_adamw_8bit");
}

/*
 * ZeRO stage `stage`, the one way memledger applies it. Without a DeepSpeed file the run gets
 * LLaMA-Factory's examples/deepspeed/ds_z<stage>_config.json (ml_zero_preset, the file fit
 * writes); with one, the user's file keeps its values and gets the stage plus, for stage 3, the
 * keys ds_z3_config.json sets ("auto" prefetch and persistence, the 16-bit gather at save).
 * Sharding needs two ranks or more and excludes FSDP.
 */
static bool zero_stage(const struct ml_knob_ctx *x, struct ml_edit *e, enum ml_knob_id k, uint32_t stage)
{
    struct ml_train *t = e->t;
    uint32_t world = e->c->gpus_per_node * e->c->nodes;
    /* LitGPT and torchtune run no DeepSpeed engine (ml_train_check refuses it) */
    if (t->framework == ML_FW_LITGPT || t->framework == ML_FW_TORCHTUNE)
        return false;
    if (!x->force && (world < 2 || t->fsdp != ML_FSDP_NONE || (t->deepspeed && t->zero.stage >= stage)))
        return false;
    char from[48], to[48];
    if (t->deepspeed)
        (void)snprintf(from, sizeof(from), "ZeRO-%u", t->zero.stage);
    else
        (void)snprintf(from, sizeof(from), "none");
    (void)snprintf(to, sizeof(to), "ZeRO-%u", stage);
    if (!t->deepspeed) {
        ml_zero_preset(t, stage, false);
        add(e, k, ML_SET_DEEPSPEED, stage, NULL, from, to);
    } else {
        t->zero.stage = stage;
        add(e, k, ML_SET_ZERO_STAGE, stage, NULL, from, to);
        /* ds_z3_config.json's keys, written where the user's file does not set them (a value the
         * file sets stays, in the file and in the ledger) */
        struct ml_zero *z = &t->zero;
        if (stage == 3 && !z->prefetch_bucket.is_set)
            size_auto(e, k, ML_SET_PREFETCH_BUCKET, &z->prefetch_bucket, ML_DS_PREFETCH_BUCKET);
        if (stage == 3 && !z->persistence.is_set)
            size_auto(e, k, ML_SET_PERSISTENCE, &z->persistence, ML_DS_PERSISTENCE);
        if (stage == 3 && !z->gather_16bit_set) {
            add(e, k, ML_SET_GATHER16, 1, NULL, z->gather_16bit_on_save ? "true" : "false", "true");
            z->gather_16bit_on_save = z->gather_16bit_set = true;
        }
    }
    return true;
}

static bool k_zero2(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    return zero_stage(x, e, ML_KNOB_ZERO2, 2);
}

static bool k_zero3(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    return zero_stage(x, e, ML_KNOB_ZERO3, 3);
}

static bool k_offload_opt(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    struct ml_zero *z = &e->t->zero;
    if (!x->force && (!e->t->deepspeed || z->stage == 0 || z->offload_optimizer))
        return false;
    z->offload_optimizer = true;
    z->pin_memory = true;
    add(e, ML_KNOB_OFFLOAD_OPT, ML_SET_OFFLOAD_OPT, 1, NULL, "none", "cpu (pin_memory)");
    return true;
}

static bool k_offload_all(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    struct ml_zero *z = &e->t->zero;
    if (!x->force && (!zero3(e->t) || z->offload_param))
        return false;
    if (!z->offload_optimizer)
        add(e, ML_KNOB_OFFLOAD_ALL, ML_SET_OFFLOAD_OPT, 1, NULL, "none", "cpu (pin_memory)");
    z->offload_optimizer = z->offload_param = true;
    z->pin_memory = true;
    add(e, ML_KNOB_OFFLOAD_ALL, ML_SET_OFFLOAD_PARAM, 1, NULL, "none", "cpu (pin_memory)");
    return true;
}

/*
 * The sequence cut, the one rule: s x num / den rounded down to a multiple of 8 (LLaMA-Factory's
 * SFT collator pads to a multiple of 8: train/sft/workflow.py, pad_to_multiple_of=8, so only
 * multiples of 8 change the bytes), never below ML_FIT_MIN_CUTOFF.
 */
static bool seq(struct ml_edit *e, enum ml_knob_id k, uint64_t num, uint64_t den)
{
    uint64_t s = e->t->seq_len * num / den / 8 * 8;
    if (s < ML_FIT_MIN_CUTOFF || s >= e->t->seq_len)
        return false;
    add_count(e, k, ML_SET_CUTOFF, e->t->seq_len, s);
    e->t->seq_len = s;
    return true;
}

static bool k_seq34(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)x;
    (void)v;
    return seq(e, ML_KNOB_SEQ_3_4, 3, 4);
}

static bool k_seq12(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)x;
    (void)v;
    return seq(e, ML_KNOB_SEQ_1_2, 1, 2);
}

static bool k_rank(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)x;
    (void)v;
    struct ml_train *t = e->t;
    bool lora = t->method == ML_METHOD_LORA || t->method == ML_METHOD_QLORA;
    if (!lora || t->lora_rank < 8)
        return false;
    add_count(e, ML_KNOB_LORA_RANK_2, ML_SET_LORA_RANK, t->lora_rank, t->lora_rank / 2);
    t->lora_rank /= 2;
    return true;
}

static bool k_qlora(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    /* quantization_bit does nothing on a checkpoint stored quantized (LLaMA-Factory
     * configure_quantization: the PTQ config wins). */
    if (!x->force && (e->t->method != ML_METHOD_LORA || (x->arch && x->arch->wq.method != ML_WQ_NONE)))
        return false;
    e->t->method = ML_METHOD_QLORA;
    e->t->quant_bits = 4;
    add(e, ML_KNOB_QLORA, ML_SET_QUANT_BIT, 4, NULL, "none", "4");
    return true;
}

static bool k_gpus(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    uint32_t n = e->c->gpus_per_node * 2;
    bool sharded = (e->t->deepspeed && e->t->zero.stage >= 1) || e->t->fsdp != ML_FSDP_NONE;
    if (!sharded || n > x->max_gpus_per_node)
        return false;
    add_count(e, ML_KNOB_GPUS_2, ML_SET_GPUS_PER_NODE, e->c->gpus_per_node, n);
    ds_batch_auto(e, ML_KNOB_GPUS_2, ML_DS_INT_GLOBAL);
    e->c->gpus_per_node = n;
    return true;
}

/* Half the ZeRO-3 prefetch bucket and live-parameter budget, and no side-stream overlap
 * (accounting notes §1.2, §1.6: overlap_comm gathers on side streams with their own pools). */
static bool k_zero3_buffers(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    struct ml_zero *z = &e->t->zero;
    if (!zero3(e->t) || !x->arch)
        return false;
    uint64_t pf = ml_zero_prefetch_bucket(z, x->arch->hidden), live = ml_zero_max_live(z);
    size_set(e, ML_KNOB_ZERO3_BUFFERS_2, ML_SET_PREFETCH_BUCKET, &z->prefetch_bucket, ML_DS_PREFETCH_BUCKET, pf / 2);
    size_set(e, ML_KNOB_ZERO3_BUFFERS_2, ML_SET_MAX_LIVE, &z->max_live, ML_DS_MAX_LIVE, live / 2);
    if (ml_zero_overlap(z))
        add(e, ML_KNOB_ZERO3_BUFFERS_2, ML_SET_OVERLAP_COMM, 0, NULL, "true", "false");
    z->overlap_comm = false;
    z->overlap_comm_set = true;
    return true;
}

static bool k_gather16(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->force && (!zero3(e->t) || !e->t->zero.gather_16bit_on_save))
        return false;
    e->t->zero.gather_16bit_on_save = false;
    add(e, ML_KNOB_GATHER16_OFF, ML_SET_GATHER16, 0, NULL, "true", "false");
    return true;
}

/* ---- serving knobs ------------------------------------------------------------------------ */

/* A GPU share in permille as the engine argument writes it ("0.95"). */
static const char *share(char *buf, size_t n, uint64_t pm)
{
    (void)snprintf(buf, n, "%llu.%02llu", (unsigned long long)(pm / 1000), (unsigned long long)(pm % 1000 / 10));
    return buf;
}

/* vLLM's gpu_memory_utilization up to value (0: 0.95, the most that leaves room for the CUDA
 * context and NCCL). */
static bool k_util(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    uint32_t pm = v ? (uint32_t)v : 950;
    if (!x->force && (e->s->engine != ML_ENGINE_VLLM || e->s->gpu_util_permille >= pm))
        return false;
    char f[24], t[24];
    (void)snprintf(f, sizeof(f), "%u.%03u", e->s->gpu_util_permille / 1000, e->s->gpu_util_permille % 1000);
    add(e, ML_KNOB_GPU_UTIL, ML_SET_GPU_UTIL, pm, NULL, f, share(t, sizeof(t), pm));
    e->s->gpu_util_permille = pm;
    return true;
}

/* A smaller share, down to value: what is free at start-up, or room for an allocation at run time. */
static bool k_util_down(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    if (!v || (!x->force && v >= e->s->gpu_util_permille))
        return false;
    char f[24], t[24];
    (void)snprintf(f, sizeof(f), "%u.%03u", e->s->gpu_util_permille / 1000, e->s->gpu_util_permille % 1000);
    add(e, ML_KNOB_GPU_UTIL_DOWN, ML_SET_GPU_UTIL, v, NULL, f, share(t, sizeof(t), v));
    e->s->gpu_util_permille = (uint32_t)v;
    return true;
}

static bool k_kv_fp8(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->force && e->s->kv_dtype == ML_KV_FP8)
        return false;
    add(e, ML_KNOB_KV_FP8, ML_SET_KV_DTYPE, ML_KV_FP8, NULL, "auto", "fp8");
    e->s->kv_dtype = ML_KV_FP8;
    return true;
}

/* Tensor parallelism over twice the GPUs: the heads must split evenly. */
static bool k_tp2(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    uint32_t tp = e->s->tp * 2;
    if (!x->force && (tp > x->max_gpus_per_node || (x->arch && x->arch->n_heads % tp)))
        return false;
    add_count(e, ML_KNOB_TP_2, ML_SET_TP, e->s->tp, tp);
    e->s->tp = tp;
    if (e->c && tp * e->s->pp > e->c->gpus_per_node)
        e->c->gpus_per_node = tp * e->s->pp;
    return true;
}

static bool k_fp8_weights(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->force && e->s->quant != ML_QUANT_NONE)
        return false;
    add(e, ML_KNOB_FP8_WEIGHTS, ML_SET_QUANTIZATION, ML_QUANT_FP8, NULL, "none", "fp8");
    e->s->quant = ML_QUANT_FP8;
    return true;
}

/* Fewer sequences per batch step: value, or a quarter of the setting (64 when unset). */
static bool k_seqs(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    struct ml_infer *s = e->s;
    if (!v && !x->force && s->max_num_seqs && s->max_num_seqs <= 64)
        return false;
    uint64_t seqs = v ? v : s->max_num_seqs ? s->max_num_seqs / 4 : 64;
    uint64_t from = s->max_num_seqs ? s->max_num_seqs : x->base ? x->base->max_num_seqs : 0;
    add_count(e, ML_KNOB_MAX_NUM_SEQS, ML_SET_MAX_NUM_SEQS, from, seqs);
    s->max_num_seqs = seqs;
    return true;
}

/* max_model_len = value (ml_fit_infer: what the pool holds, rounded down to 1024). */
static bool k_max_len(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    uint64_t from = x->base ? x->base->max_model_len : e->s->max_model_len;
    if (!v || (!x->force && v >= from))
        return false;
    add_count(e, ML_KNOB_MAX_MODEL_LEN, ML_SET_MAX_MODEL_LEN, from, v);
    e->s->max_model_len = v;
    return true;
}

/* Half of each batch budget in force (the engine's resolved defaults when unset); vLLM V0 prefilling
 * whole prompts refuses batched tokens under max_model_len (vllm/config.py SchedulerConfig). */
static bool k_budget2(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    (void)v;
    if (!x->base)
        return false;
    struct ml_infer *s = e->s;
    const struct ml_serve *b = x->base;
    uint64_t seqs = b->max_num_seqs > 1 ? b->max_num_seqs / 2 : 1;
    bool v0 = s->engine == ML_ENGINE_VLLM && s->vllm_version < ML_VER(0, 8, 0);
    uint64_t least = v0 && b->max_num_batched_tokens >= b->max_model_len ? b->max_model_len : 1;
    uint64_t toks = b->max_num_batched_tokens / 2 > least ? b->max_num_batched_tokens / 2 : least;
    add_count(e, ML_KNOB_SERVE_BUDGET_2, ML_SET_MAX_NUM_SEQS, b->max_num_seqs, seqs);
    if (toks != b->max_num_batched_tokens)
        add_count(e, ML_KNOB_SERVE_BUDGET_2, ML_SET_MAX_BATCHED_TOKENS, b->max_num_batched_tokens, toks);
    s->max_num_seqs = seqs;
    s->max_num_batched_tokens = toks;
    return true;
}

/* Chunked prefill with value tokens per step (0: 2048): the profile run's peak shrinks. */
static bool k_chunked(const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t v)
{
    uint64_t toks = v ? v : 2048;
    uint64_t from = e->s->max_num_batched_tokens ? e->s->max_num_batched_tokens
                    : x->base                    ? x->base->max_num_batched_tokens
                                                 : 0;
    add(e, ML_KNOB_CHUNKED_PREFILL, ML_SET_CHUNKED_PREFILL, 1, NULL, "false", "true");
    add_count(e, ML_KNOB_CHUNKED_PREFILL, ML_SET_MAX_BATCHED_TOKENS, from, toks);
    e->s->max_num_batched_tokens = toks;
    return true;
}

/* ---- the table ----------------------------------------------------------------------------- */

/* Exclusion groups: one knob of each at most in a plan. */
enum {
    G_ALLOC,
    G_ATTN,
    G_LIGER,
    G_FUSED,
    G_REUSE,
    G_PERSIST,
    G_BUCKETS,
    G_OVERLAP,
    G_MB,
    G_GC,
    G_OPT,
    G_ZERO,
    G_OFFLOAD,
    G_SEQ,
    G_RANK,
    G_QLORA,
    G_GPUS,
    G_Z3BUF,
    G_GATHER,
    G_UTIL,
    G_KV,
    G_TP,
    G_QUANT,
    G_SEQS,
    G_LEN,
    G_BUDGET
};

#define TS  (ML_KNOB_TRAIN | ML_KNOB_SEARCHED)
#define SS  (ML_KNOB_SERVE | ML_KNOB_SEARCHED)
#define REL ML_KNOB_RELATIVE

const struct ml_knob ml_knob_table[ML_KNOB_COUNT] = {
    {ML_KNOB_EXPANDABLE, N_("expandable segments"), 0, G_ALLOC, TS, k_expseg, NULL},
    {ML_KNOB_SDPA, N_("sdpa attention"), 0, G_ATTN, TS, k_sdpa, NULL},
    {ML_KNOB_FLASH, N_("flash attention"), 0, G_ATTN, TS, k_flash, NULL},
    {ML_KNOB_LIGER, N_("Liger kernels"), 0, G_LIGER, TS, k_liger, NULL},
    {ML_KNOB_FUSED_ADAMW, N_("fused AdamW"), 0, G_FUSED, TS, k_fused, NULL},
    {ML_KNOB_ZERO3_REUSE, N_("no lm_head reuse retention"), 10, G_REUSE, TS, k_reuse, NULL},
    {ML_KNOB_ZERO3_PERSIST, N_("persistence threshold auto"), 10, G_PERSIST, TS, k_persist, NULL},
    {ML_KNOB_ZERO3_BUCKETS, N_("ZeRO-3 buckets auto"), 20, G_BUCKETS, TS | REL, k_buckets,
     "reduce_bucket_size, stage3_prefetch_bucket_size: auto"},
    {ML_KNOB_OVERLAP_OFF, N_("overlap_comm off"), 30, G_OVERLAP, TS, k_overlap, NULL},
    {ML_KNOB_MICRO_BATCH_2, N_("micro-batch / 2"), 80, G_MB, TS | REL, k_mb2, "per_device_train_batch_size"},
    {ML_KNOB_MICRO_BATCH_4, N_("micro-batch / 4"), 160, G_MB, TS | REL, k_mb4, "per_device_train_batch_size"},
    {ML_KNOB_GRAD_CKPT, N_("gradient checkpointing"), 300, G_GC, TS, k_gc, NULL},
    {ML_KNOB_UNSLOTH_GC, N_("unsloth checkpointing"), 350, G_GC, TS, k_unsloth, NULL},
    {ML_KNOB_ADAMW_8BIT, N_("8-bit AdamW"), 20, G_OPT, TS, k_opt8, NULL},
    {ML_KNOB_PAGED_ADAMW_8BIT, N_("paged 8-bit AdamW"), 30, G_OPT, TS, k_paged, NULL},
    {ML_KNOB_ZERO2, N_("ZeRO-2"), 50, G_ZERO, TS, k_zero2, NULL},
    {ML_KNOB_ZERO3, N_("ZeRO-3"), 150, G_ZERO, TS, k_zero3, NULL},
    {ML_KNOB_OFFLOAD_OPT, N_("offload optimizer"), 300, G_OFFLOAD, TS, k_offload_opt, NULL},
    {ML_KNOB_OFFLOAD_ALL, N_("offload optimizer and parameters"), 500, G_OFFLOAD, TS, k_offload_all, NULL},
    {ML_KNOB_SEQ_3_4, N_("sequence x 3/4"), 0, G_SEQ, TS | REL | ML_KNOB_CHANGES_DATA, k_seq34,
     "cutoff_len / max_seq_length"},
    {ML_KNOB_SEQ_1_2, N_("sequence / 2"), 0, G_SEQ, TS | REL | ML_KNOB_CHANGES_DATA, k_seq12,
     "cutoff_len / max_seq_length"},
    {ML_KNOB_LORA_RANK_2, N_("LoRA rank / 2"), 0, G_RANK, TS | REL | ML_KNOB_CHANGES_METHOD, k_rank,
     "lora_rank (smaller)"},
    {ML_KNOB_QLORA, N_("QLoRA 4-bit"), 250, G_QLORA, TS | ML_KNOB_CHANGES_METHOD, k_qlora, NULL},
    {ML_KNOB_GPUS_2, N_("twice the GPUs"), 0, G_GPUS, TS | REL | ML_KNOB_NEEDS_HARDWARE, k_gpus, "more GPUs"},
    {ML_KNOB_ZERO3_BUFFERS_2, N_("ZeRO-3 buffers / 2"), 50, G_Z3BUF, ML_KNOB_TRAIN | REL, k_zero3_buffers,
     "stage3_prefetch_bucket_size, stage3_max_live_parameters (smaller), overlap_comm: false"},
    {ML_KNOB_GATHER16_OFF, N_("no 16-bit gather at save"), 0, G_GATHER, ML_KNOB_TRAIN, k_gather16, NULL},
    {ML_KNOB_GPU_UTIL, N_("gpu_memory_utilization up"), 0, G_UTIL, SS, k_util, NULL},
    {ML_KNOB_KV_FP8, N_("fp8 KV cache"), 20, G_KV, SS, k_kv_fp8, NULL},
    {ML_KNOB_TP_2, N_("twice the tensor parallelism"), 0, G_TP, SS | ML_KNOB_NEEDS_HARDWARE, k_tp2, NULL},
    {ML_KNOB_FP8_WEIGHTS, N_("fp8 weights"), 50, G_QUANT, SS | ML_KNOB_CHANGES_METHOD, k_fp8_weights, NULL},
    {ML_KNOB_MAX_NUM_SEQS, N_("fewer sequences per step"), 100, G_SEQS, SS, k_seqs, NULL},
    {ML_KNOB_MAX_MODEL_LEN, N_("shorter max_model_len"), 200, G_LEN, SS | REL, k_max_len, "--max-model-len (shorter)"},
    {ML_KNOB_GPU_UTIL_DOWN, N_("gpu_memory_utilization down"), 50, G_UTIL, ML_KNOB_SERVE | REL, k_util_down,
     "--gpu-memory-utilization lower (e.g. 0.85)"},
    {ML_KNOB_SERVE_BUDGET_2, N_("half the batch budgets"), 100, G_BUDGET, ML_KNOB_SERVE | REL, k_budget2,
     "--max-num-seqs / --max-num-batched-tokens lower"},
    {ML_KNOB_CHUNKED_PREFILL, N_("chunked prefill"), 100, G_BUDGET, ML_KNOB_SERVE, k_chunked, NULL},
};

#undef TS
#undef SS
#undef REL

const struct ml_knob *ml_knob_get(enum ml_knob_id id)
{
    return (unsigned)id < ML_KNOB_COUNT ? &ml_knob_table[id] : NULL;
}

bool ml_knob_apply(enum ml_knob_id id, const struct ml_knob_ctx *x, struct ml_edit *e, uint64_t value)
{
    const struct ml_knob *k = ml_knob_get(id);
    if (!k || ((k->flags & ML_KNOB_TRAIN) && (!e->t || !e->c)) || ((k->flags & ML_KNOB_SERVE) && !e->s))
        return false;
    if (!k->apply(x, e, value))
        return false;
    e->effects |= k->flags & (ML_KNOB_CHANGES_DATA | ML_KNOB_CHANGES_METHOD | ML_KNOB_NEEDS_HARDWARE);
    return true;
}

uint32_t ml_knob_rank(uint32_t cost, uint32_t effects)
{
    uint32_t r = cost;
    if (effects & ML_KNOB_NEEDS_HARDWARE)
        r += ML_COST_HARDWARE;
    if (effects & (ML_KNOB_CHANGES_DATA | ML_KNOB_CHANGES_METHOD))
        r += ML_COST_RESULT;
    return r;
}

/* ---- writing changes as the user types them ---------------------------------------------- */

/* One change's value in dialect d. */
static const char *value_text(const struct ml_change *c, enum ml_dialect d, char *buf, size_t n)
{
    switch (ml_settings[c->set].kind) {
    case V_COUNT: return ml_setting_value(c->set, d, u64s(buf, n, c->value));
    case V_BOOL: return c->value ? "true" : "false";
    case V_NOT: return (c->value != 0) != (d == ML_DIALECT_LF) ? "true" : "false";
    case V_SIZE: return strcmp(c->to, "auto") ? ml_fmt_knob(buf, n, c->value) : "auto";
    case V_DEVICE: return "cpu";
    case V_STAGE:
        if (d == ML_DIALECT_DEEPSPEED)
            return u64s(buf, n, c->value);
        if (d == ML_DIALECT_SWIFT) {
            (void)snprintf(buf, n, "zero%llu", (unsigned long long)c->value);
            return buf;
        }
        (void)snprintf(buf, n, "ds_z%llu_config.json (zero_optimization.stage: %llu)", (unsigned long long)c->value,
                       (unsigned long long)c->value);
        return buf;
    case V_SHARE: return share(buf, n, c->value);
    case V_FLAG:
    case V_TEXT: break;
    }
    return c->to;
}

/* Text appended into a fixed buffer (the core allocates nothing); cut short when full. */
struct txt {
    char *p;
    size_t cap, len;
};

static void put(struct txt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct txt *t, const char *fmt, ...)
{
    if (t->len + 1 >= t->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (w > 0)
        t->len = t->len + (size_t)w < t->cap ? t->len + (size_t)w : t->cap - 1;
}

/* One change as typed in dialect d; false (nothing written) for a YAML change d has no key for. */
static bool one(struct txt *b, const struct ml_change *c, enum ml_dialect d)
{
    char v[96];
    const char *name = ml_settings[c->set].name[d];
    switch (c->where) {
    case ML_IN_ENV: put(b, "%s=%s", c->key, c->to); return true;
    case ML_IN_DEEPSPEED:
        put(b, "%s%s%s: %s", ml_setting_ds_top(c->set) ? "" : "zero_optimization.",
            ml_settings[c->set].name[ML_DIALECT_DEEPSPEED], ml_settings[c->set].kind == V_DEVICE ? ".device" : "",
            value_text(c, ML_DIALECT_DEEPSPEED, v, sizeof(v)));
        return true;
    case ML_IN_ENGINE: /* the engine's own flag, or none */
        if (!(name = ml_settings[c->set].name[ml_engine_dialect(d)]))
            return false;
        if (ml_settings[c->set].kind == V_FLAG)
            put(b, "%s", name);
        else
            put(b, "%s %s", name, value_text(c, ml_engine_dialect(d), v, sizeof(v)));
        return true;
    case ML_IN_LAUNCH: put(b, "%s: %s", name ? name : c->key, value_text(c, d, v, sizeof(v))); return true;
    case ML_IN_YAML: {
        const char *val = value_text(c, d, v, sizeof(v));
        if (!name || (ml_settings[c->set].kind == V_TEXT && !ml_setting_spellable(c->set, d, c->to)))
            return false;
        put(b, "%s: %s", name, val);
        return true;
    }
    }
    return false;
}

/* The changes, YAML ones in trainer dialect yaml, joined (engine flags by spaces). */
static void all(struct txt *b, const struct ml_change *ch, uint32_t n, enum ml_dialect yaml)
{
    bool any = false;
    for (uint32_t i = 0; i < n; i++) {
        size_t at = b->len;
        if (any)
            put(b, "%s", ch[i].where == ML_IN_ENGINE && ch[i - 1].where == ML_IN_ENGINE ? " " : ", ");
        enum ml_where w = ch[i].where;
        if (one(b, &ch[i], w == ML_IN_YAML || w == ML_IN_ENGINE ? yaml : ml_file_dialect(w, NULL)))
            any = true;
        else if (at < b->cap) {
            b->len = at; /* no key in this dialect: nothing written for it */
            b->p[at] = '\0';
        }
    }
}

bool ml_knob_has_key(enum ml_knob_id id, enum ml_dialect d)
{
    const struct ml_knob *k = ml_knob_get(id);
    if (k && (k->flags & ML_KNOB_SERVE) && !(k->flags & ML_KNOB_TRAIN) && ml_engine_dialect(d) != ML_DIALECT_VLLM)
        return ml_engine_knob_has_key(k, d);
    if (!k || !(k->flags & ML_KNOB_TRAIN))
        return true;
    struct ml_train t;
    ml_train_defaults(&t, ML_FW_LLAMAFACTORY);
    t.seq_len = 2048;
    t.micro_batch = 4;
    t.lora_rank = 16;
    t.method = ML_METHOD_LORA;
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    c.gpus_per_node = 2;
    c.nodes = 1;
    c.gpu.vendor = ML_VENDOR_NVIDIA;
    (void)snprintf(c.gpu.arch, sizeof(c.gpu.arch), "hopper");
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t n;
    if (!ml_knob_probe(k, &t, &c, NULL, ch, &n))
        return true;
    char v[96];
    /* DeepSpeed's JSON is read by the trainers that take a deepspeed: config (transformers'
     * integration, LLaMA-Factory, TRL, ms-swift); torchtune and LitGPT have none. */
    bool ds = d == ML_DIALECT_LF || d == ML_DIALECT_HF || d == ML_DIALECT_TRL || d == ML_DIALECT_SWIFT ||
              d == ML_DIALECT_COUNT;
    for (uint32_t i = 0; i < n; i++) {
        if (ch[i].where == ML_IN_DEEPSPEED && !ds)
            return false;
        if (ch[i].where == ML_IN_YAML && (!ml_settings[ch[i].set].name[d] ||
                                          (ml_settings[ch[i].set].kind == V_TEXT &&
                                           !ml_setting_spellable(ch[i].set, d, value_text(&ch[i], d, v, sizeof(v))))))
            return false;
    }
    return true;
}

const char *ml_changes_text(const struct ml_change *ch, uint32_t n, enum ml_dialect yaml, char *out, size_t cap)
{
    struct txt b = {out, cap, 0};
    if (cap)
        out[0] = '\0';
    if (yaml != ML_DIALECT_COUNT) {
        all(&b, ch, n, yaml);
        return out;
    }
    /* The trainer unknown: LLaMA-Factory's keys, and TrainingArguments' where they differ. */
    char lf[200], hf[200];
    struct txt bl = {lf, sizeof(lf), 0}, bh = {hf, sizeof(hf), 0};
    lf[0] = hf[0] = '\0';
    all(&bl, ch, n, ML_DIALECT_LF);
    all(&bh, ch, n, ML_DIALECT_HF);
    if (!strcmp(lf, hf))
        put(&b, "%s", lf);
    else if (!hf[0]) /* TrainingArguments has no such field */
        put(&b, "%s (LLaMA-Factory)", lf);
    else if (!lf[0])
        put(&b, "%s (HF)", hf);
    else
        put(&b, "%s (LLaMA-Factory) / %s (HF)", lf, hf);
    return out;
}
