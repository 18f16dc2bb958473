/*
 * train_states.c - the model-state entries of the training ledger: weights (16-bit, QLoRA 4/8-bit,
 * packed checkpoints), gradients, optimizer states, the ZeRO-1/2 and ZeRO-3 buffers and working
 * set, FSDP's unsharded units, the optimizer step outside DeepSpeed and the load transients.
 *
 * Each term cites the rule of the shared accounting notes (reference/accounting-notes.md, "notes
 * §x.y"; docs/ledger.md has the rules) or the source file it was read from. Bytes are u64 through
 * the checked helpers of ledger_int.h. Vocabulary as in train_ledger.c.
 */
#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "train_int.h"

/* Phases in which gradients are live: backward and step, plus forward when GA accumulates;
 * when grads replace activations the backward working set carries them. */
static uint32_t grad_phases(const struct run *R)
{
    uint32_t p = ML_PH(ML_PHASE_OPTIMIZER_STEP);
    if (!grads_replace_activations(R))
        p |= ML_PH(ML_PHASE_BACKWARD);
    if (R->grads_kept)
        return ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD);
    if (R->t->grad_accum > 1)
        p |= ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE);
    return p;
}

/* The HF Trainer's micro-steps under accelerate's no_sync with FSDP and GA > 1 (docs/ledger.md F4):
 * each trainable unit keeps its whole unsharded grad until the syncing micro-step. Not in
 * torchtune's or Answer.AI's loops (not read). */
static bool fsdp_no_sync(const struct run *R)
{
    const struct ml_train *t = R->t;
    enum ml_framework fw = t->framework;
    /* the Trainer runs no no_sync when accelerate's sync_each_batch is on (transformers
     * Trainer._inner_training_loop); under FSDP2 accelerate's no_sync calls
     * set_requires_gradient_sync(False) only from accelerate 1.11 (ec92b1af), before which it
     * was a no-op for an FSDPModule */
    if (t->sync_each_batch || (t->fsdp_version == 2 && t->versions.accelerate < ML_VER(1, 11, 0)))
        return false;
    return R->fsdp && t->grad_accum > 1 && R->P_t && t->trainer != ML_TRAINER_FSDP_QLORA &&
           (fw == ML_FW_HF || fw == ML_FW_LLAMAFACTORY || fw == ML_FW_TRL);
}

/* Optimizer state bytes per trainable parameter, as numerator/denominator. */
static void optim_state(const struct run *R, uint64_t *num, uint64_t *den, const char **what)
{
    *den = 1;
    switch (R->t->optim) {
    case ML_OPTIM_ADAMW_TORCH:
    case ML_OPTIM_ADAMW_TORCH_FUSED:
    case ML_OPTIM_PAGED_ADAMW_32BIT:
    case ML_OPTIM_GALORE_ADAMW:
        /* exp_avg + exp_avg_sq in the parameter's dtype (torch/optim/adamw.py). */
        *num = 2u * R->state_bytes;
        *what = R->state_bytes == 4 ? _("8 B (two fp32 moments)") : _("4 B (two bf16 moments)");
        break;
    case ML_OPTIM_ADAMW_8BIT:
    case ML_OPTIM_PAGED_ADAMW_8BIT:
        /* bitsandbytes blockwise 8-bit: 1 B per element per moment + an fp32 absmax per
         * 256-element block: 2 x (1 + 4/256) = 2.03125 B. */
        *num = 520;
        *den = 256;
        *what = "2.03 B (two 8-bit moments + block absmax)";
        break;
    case ML_OPTIM_ADAFACTOR:
        /* Factored second moment (row + column statistics), no first moment (HF default
         * beta1=None): about 4 B per row and column; counted as 4 B x sqrt-ish share, bounded
         * above by 4/64 of a dense fp32 state for the matrix shapes of LLMs. */
        *num = 4;
        *den = 64;
        *what = "~0.06 B (factored second moment)";
        break;
    case ML_OPTIM_SGD:
        *num = 0;
        *what = "0 B (SGD without momentum)";
        break;
    case ML_OPTIM_COUNT:
        *num = 8;
        *what = "8 B";
        break;
    }
}

/* Quantization state of n 4-bit weights (notes §4.5): bitsandbytes absmax, fp32 per 64-block
 * (0.0625 B), or with double quant 8-bit per block plus an fp32 per 256 blocks (1/64 + 4/16384 B
 * per weight); torchtune's torchao NF4 always double-quantizes, its per-256 factor in the weight's
 * 16-bit dtype (NF4Tensor.double_quantize_scalers): 1/64 + 2/16384 B (docs/ledger.md TS3). */
static uint64_t nf4_state(struct run *R, uint64_t n)
{
    struct calc *k = &R->k;
    if (R->t->framework == ML_FW_TORCHTUNE)
        return add(k, frac(k, n, 1, 64), frac(k, n, 2, 16384));
    return R->double_quant ? add(k, frac(k, n, 1, 64), frac(k, n, 4, 16384)) : frac(k, n, 4, 64);
}

/* QLoRA frozen weights (notes §4.5): quantized linears at NF4 0.5 B (LLM.int8 1 B) + absmax,
 * the rest 16-bit (fp32 after PEFT's prepare_model_for_kbit_training). Sharded under ZeRO-3 /
 * FSDP (bnb_4bit_quant_storage lets them flatten the packed data), on the host under FSDP CPU
 * offload; the quantization state is a Python attribute of Params4bit, not a parameter, so it is
 * neither sharded nor offloaded: whole on every GPU. */
static void qlora_weights(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    bool sharded = R->zero3 || R->fsdp;
    uint64_t N = sharded ? R->n_shard : 1;
    uint64_t rest = R->P_f > R->P_quant ? R->P_f - R->P_quant : 0;
    /* prepare_model_for_kbit_training casts every non-quantized 16-bit parameter to fp32 (PEFT
     * utils/other.py); TRL's peft_module_casting_to_bf16 returns all but the norms to bf16. */
    bool kbit_full = t->kbit_prepare == ML_KBIT_FULL && t->framework == ML_FW_HF && !sharded;
    uint32_t wb = kbit_full ? 4 : R->act_bytes;
    uint64_t rest_b = mul(k, rest, wb);
    uint64_t qb = R->qbits == 8 ? R->P_quant : frac(k, R->P_quant, 1, 2); /* int8: + ~0 scales */
    if (R->fsdp && t->fsdp_offload) {
        /* CPUOffload(offload_params=True): every shard, 4-bit and 16-bit, lives on the host. */
    } else {
        entry(sk, ML_C_WEIGHTS_FROZEN, part(add(k, qb, rest_b), N), ML_PH_TRAIN, ML_FIG_ALLOCATED,
              kbit_full ? "notes §4.5; PEFT prepare_model_for_kbit_training (fp32 casts)"
                        : "notes §4.5 (bitsandbytes NF4)",
              _("%s B x %llu quantized + %u B x %llu other%s"), R->qbits == 8 ? "1" : "0.5",
              (unsigned long long)R->P_quant, wb, (unsigned long long)rest, sharded ? " / N" : "");
    }
    if (R->qbits != 8 && t->framework == ML_FW_TORCHTUNE) {
        /* torchtune quantizes with torchao's NF4Tensor (docs/ledger.md TS3): an int8 scaler per
         * 64-block and a 16-bit factor per 256 scalers; both are inner tensors FSDP2 shards with
         * the data (_INNER_TENSOR_NAMES_FOR_SHARDING), so under FSDP2 each GPU keeps 1/N. */
        bool tq_sharded = R->fsdp && t->fsdp_version == 2;
        /* under CPUOffloadPolicy the shards, these inner tensors included, are on the host */
        if (!(tq_sharded && t->fsdp_offload))
            entry(sk, ML_C_QUANT_STATE, part(nf4_state(R, R->P_quant), tq_sharded ? N : 1), ML_PH_TRAIN,
                  ML_FIG_ALLOCATED,
                  "torchao dtypes/nf4tensor.py NF4Tensor.double_quantize_scalers, fsdp_pre_all_gather",
                  tq_sharded ? _("torchao NF4 scalers: 1/64 + 2/16384 B x %llu / N (sharded by FSDP2)")
                             : _("torchao NF4 scalers: 1/64 + 2/16384 B x %llu"),
                  (unsigned long long)R->P_quant);
    } else if (R->qbits != 8) {
        uint64_t qs = nf4_state(R, R->P_quant);
        entry(sk, ML_C_QUANT_STATE, qs, ML_PH_TRAIN, ML_FIG_ALLOCATED,
              "notes §4.5; bitsandbytes Params4bit.quant_state",
              R->double_quant ? _("double-quantized absmax: 1/64 + 4/16384 B x %llu (whole on every GPU)")
                              : _("fp32 absmax per 64 weights: 0.0625 B x %llu (whole on every GPU)"),
              (unsigned long long)R->P_quant);
    }
    /* An fp32 lm_head under autocast: the 16-bit copy autocast makes is saved by the matmul. The
     * prepared head is frozen, so autocast does not cache it (cached_cast needs requires_grad): an
     * ordinary temporary from the head's forward to its backward, the loss turn (docs/ledger.md O10). */
    if (kbit_full && R->autocast)
        entry(sk, ML_C_AUTOCAST_CACHE, mul(k, R->head_numel, 2), ML_PH(ML_PHASE_LOSS), ML_FIG_ALLOCATED,
              "PEFT prepare_model_for_kbit_training; torch autocast_mode.cpp cached_cast",
              _("2 B x lm_head %llu (16-bit copy of the fp32 head)"), (unsigned long long)R->head_numel);
    /* The same copy of an fp16 head under bf16 autocast (SW1): transformers loads the layers it
     * does not quantize in float16 when from_pretrained gets no torch_dtype (4.36
     * PreTrainedModel.from_pretrained; later Bnb4BitHfQuantizer.update_torch_dtype), and autocast
     * casts the frozen head at each forward without caching it. */
    else if (ml_ledger_load_fp16(R) && !sharded && (t->framework == ML_FW_HF || t->framework == ML_FW_TRL))
        entry(sk, ML_C_AUTOCAST_CACHE, mul(k, R->head_numel, 2), ML_PH(ML_PHASE_LOSS), ML_FIG_ALLOCATED,
              "transformers modeling_utils.py from_pretrained (bitsandbytes: float16 when no torch_dtype); torch "
              "autocast_mode.cpp cached_cast (docs/ledger.md SW1)",
              _("2 B x lm_head %llu (bf16 copy of the fp16 head)"), (unsigned long long)R->head_numel);
}

/* LoRA on a packed checkpoint: the stored weights and their scales (packed_sizes), whole on every
 * GPU (ml_train_check refuses ZeRO-3 and FSDP on these formats). */
static void packed_weights(struct run *R, struct sink *sk)
{
    const struct ml_weight_quant *f = &R->a->wq;
    char fmt[96];
    ml_wq_describe(f, fmt, sizeof(fmt));
    entry(sk, ML_C_WEIGHTS_FROZEN, R->packed_bytes, ML_PH_TRAIN, ML_FIG_ALLOCATED,
          "infer_ledger.c formats (AWQ, GPTQ, compressed-tensors); docs/ledger.md training on a quantized checkpoint",
          _("%s: %llu params as stored + %u B x %llu other"), fmt, (unsigned long long)R->P_quant, R->act_bytes,
          (unsigned long long)R->P_unpacked);
    entry(sk, ML_C_QUANT_STATE, R->packed_state, ML_PH_TRAIN, ML_FIG_ALLOCATED,
          "docs/ledger.md quantized checkpoints (group scales)", _("scales / zeros / group indices of the %s format"),
          f->name);
}

/* ---- model states ------------------------------------------------------------------------ */

static void optimizer_terms(struct run *R, struct sink *sk);

/* Frozen weights loaded fp32 (load_dtype fp32) that stay fp32: under autocast only (DeepSpeed's
 * engine casts the module to its bf16 / fp16 dtype; pure-bf16 and fp32 runs name their dtype). */
bool ml_ledger_load_fp32(const struct run *R)
{
    return R->t->load_dtype == ML_LOAD_FP32 && R->autocast && R->act_bytes == 2;
}

/* Frozen weights loaded fp16 under bf16 autocast (load_dtype fp16): the bytes are the compute
 * dtype's, but every matmul on them casts a bf16 copy (docs/ledger.md SW1). */
bool ml_ledger_load_fp16(const struct run *R)
{
    return R->t->load_dtype == ML_LOAD_FP16 && R->autocast && R->t->precision == ML_PREC_BF16;
}

void ml_ledger_model_states(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    uint64_t N = R->n_shard;
    uint32_t wb = R->act_bytes;              /* weight bytes of frozen / compute-dtype params */
    uint32_t tb = R->trainable_fp32 ? 4 : 2; /* fp32 runs: act_bytes 4 and trainable_fp32 */

    /* Frozen weights (notes §0, §4.5): quantized linears at NF4 0.5 B + absmax, others 16-bit. */
    uint64_t frozen = R->P_f;
    if (R->qlora) {
        qlora_weights(R, sk);
    } else if (R->packed) {
        packed_weights(R, sk);
    } else if (frozen && ((R->fsdp && t->fsdp_offload) || (R->zero3 && t->zero.offload_param))) {
        /* FSDP CPUOffload(offload_params=True) / ZeRO-3 offload_param: every partition lives on
         * the host (notes §1.7); the GPU keeps only the gathered working set. */
    } else if (frozen && ml_ledger_load_fp32(R)) {
        /* Loaded with torch_dtype float32 under AMP (H6): FSDP's MixedPrecision casts only the
         * gathered copy, so the shards stay fp32; a DDP / single-GPU model keeps fp32 weights. */
        entry(sk, ML_C_WEIGHTS_FROZEN, mul(k, part(frozen, R->fsdp ? N : 1), 4), ML_PH_TRAIN, ML_FIG_ALLOCATED,
              "peft examples/sft/utils.py create_and_prepare_model; torch FSDP MixedPrecision (docs/ledger.md H6)",
              _("4 B x %llu frozen%s (loaded fp32)"), (unsigned long long)frozen, R->fsdp ? " / N" : "");
    } else if (frozen) {
        bool sharded = R->zero3 || R->fsdp;
        entry(sk, ML_C_WEIGHTS_FROZEN, mul(k, part(frozen, sharded ? N : 1), wb), ML_PH_TRAIN, ML_FIG_ALLOCATED,
              sharded ? "notes §1.1 (ZeRO-3 partition) / §3.1" : "notes §0", _("%u B x %llu frozen%s"), wb,
              (unsigned long long)frozen, sharded ? " / N" : "");
        /* SW1: a frozen fp16 head under bf16 autocast, cast at each forward, the copy saved for
         * the backward of its input (as QLoRA's, qlora_weights). */
        if (R->lora && !sharded && ml_ledger_load_fp16(R) && (t->framework == ML_FW_HF || t->framework == ML_FW_TRL))
            entry(sk, ML_C_AUTOCAST_CACHE, mul(k, R->head_numel, 2), ML_PH(ML_PHASE_LOSS), ML_FIG_ALLOCATED,
                  "torch autocast_mode.cpp cached_cast (docs/ledger.md SW1)",
                  _("2 B x lm_head %llu (bf16 copy of the fp16 head)"), (unsigned long long)R->head_numel);
    }

    /* Trainable weights. */
    uint64_t Pt = R->P_t;
    if (Pt) {
        if (R->zero3 && t->zero.offload_param) {
            /* the lp partitions are on the host with the rest (notes §1.7) */
        } else if (R->zero3) {
            entry(sk, ML_C_WEIGHTS_TRAINABLE, mul(k, part(Pt, N), tb), ML_PH_TRAIN, ML_FIG_ALLOCATED,
                  "notes §1.1 lp_param_buffer", _("%u B x %llu trainable / %llu ranks"), tb, (unsigned long long)Pt,
                  (unsigned long long)N);
        } else if (R->fsdp && t->fsdp_offload) {
            /* on the host (CPUOffload) */
        } else if (R->fsdp) {
            /* accelerate upcasts trainable flat params to fp32 under mixed precision (§3.1). */
            uint32_t fb = t->precision == ML_PREC_PURE_BF16 ? 2 : 4;
            entry(sk, ML_C_WEIGHTS_TRAINABLE, mul(k, part(Pt, N), fb), ML_PH_TRAIN, ML_FIG_ALLOCATED,
                  "notes §3.1 (accelerate fp32 upcast)", _("%u B x %llu trainable / %llu ranks"), fb,
                  (unsigned long long)Pt, (unsigned long long)N);
        } else {
            /* ZeRO-0/1/2 keep a full bit16 copy on every rank (notes §2); DDP/single full. */
            entry(sk, ML_C_WEIGHTS_TRAINABLE, mul(k, Pt, tb), ML_PH_TRAIN, ML_FIG_ALLOCATED,
                  R->zero12 ? "notes §2 bit16 flat copy" : "notes §6.1", _("%u B x %llu trainable"), tb,
                  (unsigned long long)Pt);
        }
    }
    if (!Pt)
        return;

    /* fp32 master: DeepSpeed keeps one per rank partition unless the trainable partition is
     * already fp32 (ZeRO-3 aliases it, notes §1.1); AMP without DeepSpeed trains the fp32
     * params themselves (no separate master); pure bf16 has none. */
    if (t->deepspeed && t->precision != ML_PREC_PURE_BF16 && !(R->zero3 && R->trainable_fp32) &&
        t->precision != ML_PREC_FP32) {
        uint64_t n = (R->zero3 || R->zero12) ? part(Pt, N) : Pt;
        if (!t->zero.offload_optimizer)
            entry(sk, ML_C_MASTER, mul(k, n, 4), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
                  "notes §1.1 / §2 fp32 master partition", _("4 B x %llu trainable%s"), (unsigned long long)Pt,
                  N > 1 ? " / N" : "");
    }

    /* Gradients. */
    uint32_t gb = tb; /* param.grad in the trainable dtype (pure bf16: never fp32) */
    if (R->zero3) {
        /* ZeRO-3 grad partition buffer (notes §1.1): grad_accum_dtype, default the model dtype. */
        gb = t->zero.grad_accum_dtype == ML_DTYPE_FP32 ? 4 : tb;
        if (!t->zero.offload_optimizer)
            entry(sk, ML_C_GRADIENTS, mul(k, part(Pt, N), gb), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
                  "notes §1.1 gradient partition buffer", _("%u B x %llu / %llu ranks"), gb, (unsigned long long)Pt,
                  (unsigned long long)N);
    } else if (R->zero12) {
        gb = t->zero.grad_accum_dtype == ML_DTYPE_FP32 ? 4 : 2;
        if (t->zero.stage == 2) {
            /* grads_in_partition; with GA > 1 the previous micro-step's buffer coexists (§2). */
            uint64_t copies = t->grad_accum > 1 ? 2 : 1;
            entry(sk, ML_C_GRADIENTS, mul3(k, part(Pt, N), gb, copies), grad_phases(R), ML_FIG_ALLOCATED,
                  "notes §2 grads_in_partition", _("%u B x %llu / %llu ranks%s"), gb, (unsigned long long)Pt,
                  (unsigned long long)N, copies > 1 ? " x 2 (GA > 1)" : "");
        } else {
            entry(sk, ML_C_GRADIENTS, mul(k, Pt, gb), grad_phases(R), ML_FIG_ALLOCATED,
                  "notes §2 (ZeRO-1: full grads until the boundary)", "%u B x %llu", gb, (unsigned long long)Pt);
        }
    } else if (R->fsdp && t->fsdp_offload) {
        /* CPUOffload moves the sharded grads to the host after the reduce-scatter. */
    } else if (R->fsdp) {
        /* Sharded fp32 grads kept until zero_grad (notes §3.1). Under no_sync (F4) they exist
         * only from the syncing backward to zero_grad(set_to_none): not in forward and loss. */
        uint32_t fb = t->precision == ML_PREC_PURE_BF16 ? 2 : 4;
        uint32_t ph = grad_phases(R) & ~(fsdp_no_sync(R) ? ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) : 0u);
        entry(sk, ML_C_GRADIENTS, mul(k, part(Pt, N), fb), ph, ML_FIG_ALLOCATED, "notes §3.1 sharded grads",
              _("%u B x %llu / %llu ranks"), fb, (unsigned long long)Pt, (unsigned long long)N);
    } else {
        entry(sk, ML_C_GRADIENTS, mul(k, Pt, gb), grad_phases(R), ML_FIG_ALLOCATED,
              R->grads_kept ? "notes §4.7; torch < 2.0 zero_grad(set_to_none=False)"
                            : "notes §4.7 (param.grad in the param dtype)",
              _("%u B x %llu trainable%s"), gb, (unsigned long long)Pt,
              R->grads_kept ? _(" (zeroed in place between steps: torch < 2.0)") : "");
        if (R->ddp) {
            /* DDP Reducer buckets hold a second copy of every grad (gradient_as_bucket_view off). */
            entry(sk, ML_C_DDP_BUCKETS, mul(k, Pt, gb), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
                  "torch/nn/parallel/distributed.py Reducer (gradient_as_bucket_view=False)",
                  _("%u B x %llu trainable"), gb, (unsigned long long)Pt);
        }
    }

    optimizer_terms(R, sk);
}

/* Elements of the trainable weights autocast casts to 16 bits and caches (docs/ledger.md O11):
 * the weights and biases of the matmul modules (nn.Linear, GPT-2 Conv1D, packed experts) that
 * train, not the embeddings (a lookup) nor the norms (not on the lower-precision list of
 * autocast_mode.cpp); the head only when with_head (its cast is made in the loss turn, O2). A
 * freeze run trains the last layers: the layers' share of them. */
static uint64_t autocast_matmul_numel(struct run *R, bool with_head)
{
    struct calc *k = &R->k;
    uint64_t layers_mm = 0, other = 0;
    const char *mm_path = NULL;
    for (uint32_t i = 0; i < R->inv->n; i++) {
        const struct ml_tensor *x = &R->inv->t[i];
        bool is_mm =
            !strcmp(x->param, "bias") ? mm_path && !strcmp(mm_path, x->path) : (x->linear || x->conv1d || x->packed);
        if (x->linear || x->conv1d || x->packed)
            mm_path = x->path;
        else if (strcmp(x->param, "bias"))
            mm_path = NULL;
        if (!is_mm || x->mtp)
            continue;
        if (x->kind == ML_MOD_LM_HEAD) {
            if (with_head)
                other = add(k, other, x->tied ? R->head_numel : x->params);
        } else if (x->kind == ML_MOD_VISION) {
            if (R->vis_trainable && R->full)
                other = add(k, other, x->params);
        } else if (x->kind == ML_MOD_PROJECTOR) {
            if (R->proj_trainable && R->full)
                other = add(k, other, x->params);
        } else if (!R->lang_frozen) {
            layers_mm = add(k, layers_mm, x->params);
        }
    }
    if (R->freeze) {
        uint64_t L = R->a->n_layers ? R->a->n_layers : 1;
        return mul(k, layers_mm / L, R->trainable_layers);
    }
    return add(k, layers_mm, other);
}

/* Optimizer states (lazy: from the first step on, so in every step phase but load) and the
 * autocast weight cache. */
static void optimizer_terms(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    uint64_t N = R->n_shard, Pt = R->P_t;
    uint64_t num = 8, den = 1;
    const char *what = "8 B";
    optim_state(R, &num, &den, &what);
    if (R->paged_optim && t->optim != ML_OPTIM_PAGED_ADAMW_8BIT) {
        /* bitsandbytes 32-bit paged AdamW keeps fp32 states whatever the param dtype. */
        num = 8;
        den = 1;
        what = _("8 B (two fp32 moments, paged)");
    }
    if (num && !(t->deepspeed && t->zero.offload_optimizer) && !(R->fsdp && t->fsdp_offload)) {
        uint64_t n = (R->zero3 || R->zero12 || R->fsdp) ? part(Pt, N) : Pt;
        uint64_t on_gpu = n;
        if (R->paged_optim) {
            /* Paged states of tensors >= 1e5 elements are CUDA managed memory: outside the
             * allocator, on the device while resident (bitsandbytes get_state_buffer). */
            on_gpu = R->lora && R->P_lora_small < n ? R->P_lora_small : R->lora ? n : 0;
            entry(sk, ML_C_OPTIMIZER, frac(k, n - on_gpu, num, den), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_DEVICE,
                  "bitsandbytes optim/optimizer.py get_state_buffer (paged)",
                  _("%s x %llu in tensors >= 1e5 elements (managed memory)"), what, (unsigned long long)(n - on_gpu));
        }
        entry(sk, ML_C_OPTIMIZER, frac(k, on_gpu, num, den), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
              "notes §1.5 / §4.7", "%s x %llu %s%s (%s)", what, (unsigned long long)(R->paged_optim ? on_gpu : Pt),
              R->paged_optim ? _("in tensors < 1e5 elements") : _("trainable"),
              N > 1 && (R->zero3 || R->zero12 || R->fsdp) ? " / N" : "", ml_optim_name(t->optim));
    }

    /* Autocast weight cache (notes §4.6; docs/ledger.md O11): fp32 trainable weights used under
     * autocast are cast to bf16 once per forward and saved by the linears until backward. Only the
     * matmul weights are cast (a full fine-tune's embedding lookup and norms are not on autocast's
     * lower-precision list), and the head's copy is made in the loss turn (O2). */
    if (R->autocast && R->trainable_fp32 && t->precision != ML_PREC_FP32 && !R->fsdp) {
        uint64_t cached = R->lora ? R->P_lora : autocast_matmul_numel(R, R->litgpt);
        entry(sk, ML_C_AUTOCAST_CACHE, mul(k, cached, 2),
              ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED,
              R->lora ? "notes §4.6" : "notes §4.6; torch autocast_mode.cpp cached_cast (docs/ledger.md O11)",
              R->lora ? _("2 B x %llu fp32 trainable weights cast to bf16")
                      : _("2 B x %llu fp32 trainable matmul weights cast to bf16"),
              (unsigned long long)cached);
        /* O12: generation in the policy (HF generate, not vLLM) under accelerate's autocast wrapper
         * of model.forward: every generate forward caches the casts of the full fine-tune's matmul
         * weights, the head's included, until it returns. A PEFT model's generate reaches the base
         * model's own forward, which accelerate did not wrap: nothing for LoRA. */
        if (R->full && !R->lora && R->stage.gen_sequences) {
            uint64_t g = autocast_matmul_numel(R, true);
            entry(sk, ML_C_AUTOCAST_CACHE, mul(k, g, 2), ML_PH(ML_PHASE_GENERATE), ML_FIG_ALLOCATED,
                  "accelerate accelerator.py prepare_model (forward under autocast); torch autocast_mode.cpp "
                  "cached_cast (docs/ledger.md O12)",
                  _("2 B x %llu fp32 matmul weights (head included) cast per generate forward"), (unsigned long long)g);
        }
    }
    /* O14: TRL's bf16 adapters (O9) under fp16 autocast: each adapter matmul casts its bf16 weight to
     * fp16; autocast caches only fp32 leaves (cached_cast's can_try_cache), so the copy is not cached
     * but the matmul saves it for its input's gradient until its own backward, so the backward's
     * peak (the last layer's) still holds the others: 2 B x the adapters in forward, loss and
     * backward (the first layer's attention-input lora_A, whose input needs no grad, keeps none,
     * and the layers already passed have freed theirs: over by those). */
    /* Under gradient checkpointing a layer's forward saves nothing (torch utils/checkpoint.py: reentrant
     * under no_grad, non-reentrant dropping the saved tensors), so the copies are freed at once and only
     * the recomputed layer's come back in the backward: none booked. */
    if (R->autocast && R->trl_bf16_cast && t->precision == ML_PREC_FP16 && R->lora && t->grad_ckpt == ML_GC_OFF)
        entry(sk, ML_C_AUTOCAST_CACHE, mul(k, R->P_lora, 2),
              ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_AFTER_SAVE),
              ML_FIG_ALLOCATED, "torch autocast_mode.cpp cached_cast; trl dpo_trainer.py __init__ (docs/ledger.md O14)",
              _("2 B x %llu bf16 adapters cast to fp16 per forward, saved by their matmuls"),
              (unsigned long long)R->P_lora);
}

/* ---- ZeRO-3 buffers and working set ---------------------------------------------------- */

/* Elements of parameters kept whole by stage3_param_persistence_threshold (notes §1.3). */
static uint64_t persistent_numel(struct run *R, uint64_t thr, uint64_t *adapter_numel)
{
    uint64_t n = 0;
    *adapter_numel = 0;
    for (uint32_t i = 0; i < R->inv->n; i++) {
        const struct ml_tensor *x = &R->inv->t[i];
        if (x->mtp || x->tied)
            continue;
        uint64_t per = mul(&R->k, x->rows, x->cols ? x->cols : 1);
        if (per <= thr)
            n = add(&R->k, n, mul(&R->k, per, x->copies));
        if (R->lora && x->linear && !strcmp(x->param, "weight") && resolved(&R->lora_count, leaf_of(x->path))) {
            uint64_t A = mul(&R->k, R->t->lora_rank, x->in_features);
            uint64_t B = mul(&R->k, x->out_features, R->t->lora_rank);
            if (A <= thr)
                *adapter_numel = add(&R->k, *adapter_numel, mul(&R->k, A, x->copies));
            if (B <= thr)
                *adapter_numel = add(&R->k, *adapter_numel, mul(&R->k, B, x->copies));
        }
    }
    return n;
}

void ml_ledger_zero3_terms(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    uint64_t h = R->a->hidden;
    const struct ml_zero *z = &t->zero;
    /* HF "auto" (transformers/integrations/deepspeed.py) and DeepSpeed defaults (notes §1.8). */
    uint64_t Rb = ml_zero_reduce_bucket(z, h);
    uint64_t Bpf = ml_zero_prefetch_bucket(z, h);
    uint64_t Tp = ml_zero_persistence(z, h);
    uint64_t Mlive = ml_zero_max_live(z);
    uint64_t Dreuse = ml_zero_max_reuse(z);
    uint64_t comm = z->comm_dtype == ML_DTYPE_FP32 ? 4 : 2;
    /* The IPG flat buffer takes the first group's dtype (stage3.py _setup_for_real_optimizer):
     * fp32 when the LoRA adapters stay fp32 (DeepSpeed >= 0.19.2). */
    uint64_t ipg_b = R->trainable_fp32 ? 4 : comm;

    /* Persistent parameters (notes §1.3): kept whole, on top of their partition. */
    uint64_t ad_numel;
    uint64_t pers = persistent_numel(R, Tp, &ad_numel);
    if (z->model_persistence < pers)
        pers = z->model_persistence;
    uint64_t pb = add(k, mul(k, pers, R->act_bytes), mul(k, ad_numel, R->trainable_fp32 ? 4 : 2));
    entry(sk, ML_C_ZERO_PERSISTENT, pb, ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
          "notes §1.3 stage3_param_persistence_threshold",
          _("params with <= %llu elements kept whole: %llu + %llu adapter"), (unsigned long long)Tp,
          (unsigned long long)pers, (unsigned long long)ad_numel);

    /* IPG bucket (notes §1.1, §1.4): persistent with contiguous_gradients. */
    if (z->contiguous_gradients && R->P_t)
        entry(sk, ML_C_ZERO_IPG_BUCKET, mul(k, Rb, ipg_b), ML_PH_TRAIN & ~ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED,
              "notes §1.1 IPG bucket; stage3.py _setup_for_real_optimizer", "reduce_bucket_size %llu x %llu B",
              (unsigned long long)Rb, (unsigned long long)ipg_b);

    /* Gathered working set (notes §1.2): the module running + the prefetch budget (which
     * overshoots by one param) + the coalesced copy of one bucket. */
    {
        uint64_t pf = Bpf < Mlive ? Bpf : Mlive;
        uint64_t w = add(k, add(k, R->max_linear, pf), R->max_linear);
        uint64_t wb = mul(k, w, R->act_bytes);
        uint64_t transient = mul(k, R->max_linear, R->act_bytes);
        entry(sk, ML_C_ZERO_GATHERED, add(k, wb, transient),
              ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_AFTER_SAVE) |
                  ML_PH(ML_PHASE_EVAL),
              ML_FIG_ALLOCATED, "notes §1.2 working set",
              _("2 B x (module %llu + prefetch %llu + overshoot %llu) + coalesced copy"),
              (unsigned long long)R->max_linear, (unsigned long long)pf, (unsigned long long)R->max_linear);
    }

    /* lm_head gathered for the logits is reused at once by its backward, so with a reuse
     * distance >= 0 it stays resident through the loss (notes §1.2, §9.8); the last layers
     * whose next use lies within the reuse distance stay too. */
    uint64_t head = R->head_numel;
    uint64_t retained = head;
    uint64_t layers_kept = 0;
    uint64_t dist = mul(k, 2, head);
    while (R->layer_params && layers_kept < R->a->n_layers) {
        uint64_t next = add(k, dist, mul3(k, 2, layers_kept + 1, R->layer_params));
        if (next > Dreuse)
            break;
        layers_kept++;
        retained = add(k, retained, R->layer_params);
    }
    /* DeepSpeed applies reuse retention only when max_reuse_distance > 0
     * (partitioned_param_coordinator.py __params_to_release). */
    if (head > Tp && Dreuse > 0)
        entry(sk, ML_C_ZERO_LM_HEAD_RETAINED, mul(k, retained, R->act_bytes),
              ML_PH(ML_PHASE_LOSS) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED,
              "notes §1.2 reuse retention (stage3_max_reuse_distance)", _("2 B x lm_head %llu%s%llu layers"),
              (unsigned long long)head, layers_kept ? _(" + last ") : " + ", (unsigned long long)layers_kept);

    /* Reduce: torch.cat copy of a bucket, and full grads of params larger than the bucket
     * (notes §1.4). */
    if (R->P_t) {
        uint64_t big = 0;
        if (R->full && head > Rb)
            big = mul(k, head, R->act_bytes);
        uint64_t cat = mul(k, Rb < R->P_t ? Rb : R->P_t, comm);
        entry(sk, ML_C_ZERO_REDUCE, add(k, cat, big), ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED,
              "notes §1.4 reduce_scatter_coalesced", _("cat copy of min(R, P_t) x %llu B%s"), (unsigned long long)comm,
              big ? " + lm_head grad" : "");
    }

    /* Optimizer step (notes §1.5): per sub-group flatten bf16 (2) + fp32 grad (4) = 6 B x n_sg,
     * + 4 B x n_sg for the foreach sqrt; n_sg = min(sub_group_size, P_t / N). */
    uint64_t sg = ml_zero_sub_group(z);
    uint64_t nsg = part(R->P_t, R->n_shard);
    if (sg && sg < nsg)
        nsg = sg;
    if (nsg && !z->offload_optimizer) {
        uint64_t per = t->optim == ML_OPTIM_ADAMW_TORCH ? 10 : 6;
        entry(sk, ML_C_STEP_TRANSIENT, mul(k, nsg, per), ML_PH(ML_PHASE_OPTIMIZER_STEP), ML_FIG_ALLOCATED,
              "notes §1.5 _prepare_sub_group", _("%llu B x sub-group %llu"), (unsigned long long)per,
              (unsigned long long)nsg);
    }

    /* Save (notes §1.9): every rank gathers one module's params at a time; the largest is
     * the embedding or lm_head. */
    if (z->gather_16bit_on_save) {
        uint64_t m = max2(head, R->embed_numel);
        m = max2(m, R->max_linear);
        entry(sk, ML_C_SAVE_GATHER, mul(k, m, R->act_bytes), ML_PH(ML_PHASE_CHECKPOINT_SAVE), ML_FIG_ALLOCATED,
              "notes §1.9 _zero3_consolidated_16bit_state_dict", _("2 B x largest module %llu"), (unsigned long long)m);
    }
}

void ml_ledger_zero12_terms(struct run *R, struct sink *sk)
{
    const struct ml_train *t = R->t;
    struct calc *k = &R->k;
    uint64_t Rb = ml_zero_reduce_bucket(&t->zero, R->a->hidden);
    uint64_t comm = t->zero.comm_dtype == ML_DTYPE_FP32 ? 4 : 2;
    bool overlap = ml_zero_overlap(&t->zero);
    uint64_t Rt = Rb < R->P_t ? Rb : R->P_t;
    /* IPG buffers (x2 with overlap_comm) + one flatten per reduction (notes §2). */
    uint64_t ipg = mul3(k, Rt, comm, overlap ? 2 : 1);
    uint64_t flat = mul3(k, Rt, comm, overlap ? 2 : 1);
    entry(sk, ML_C_ZERO_IPG_BUCKET, ipg, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED, "notes §2 setup_buckets",
          "min(R, P_t) x %llu B%s", (unsigned long long)comm, overlap ? " x 2 (overlap_comm)" : "");
    entry(sk, ML_C_ZERO_REDUCE, flat, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED, "notes §2 allreduce_bucket",
          _("flatten of a bucket%s"), overlap ? _(" x 2 (kept by record_stream)") : "");
    /* Step: flatten own grads (2) + fp32 copy (4) [+ foreach sqrt 4] per partition element. */
    if (!t->zero.offload_optimizer) {
        uint64_t per = t->optim == ML_OPTIM_ADAMW_TORCH ? 10 : 6;
        entry(sk, ML_C_STEP_TRANSIENT, mul(k, part(R->P_t, R->n_shard), per), ML_PH(ML_PHASE_OPTIMIZER_STEP),
              ML_FIG_ALLOCATED, "notes §2 step", "%llu B x P_t / N", (unsigned long long)per);
    }
}

/* torchtune's distributed recipes under FSDP2 (docs/ledger.md TS1, TS2): shard_model calls
 * fully_shard on every layers.i, on each module custom_sharded_layers names, then on the model,
 * whose unit (the root) keeps the rest. The root is never resharded after forward
 * (FSDPState._lazy_init) and, its forward input being token ids, reshards only in the
 * post-backward final callback: gathered from the forward's start to the backward's end, with
 * the grads of its trainable parameters. Per phase, at storage size: forward, the unit in use and
 * the next one's all-gather; the loss turn, the head's own unit and the last layer, prefetched by
 * the first pre-backward (FSDPParamGroup._backward_prefetch); backward, the layer in use, the
 * next one prefetched, its unsharded grads and the previous layer's reduce-scatter input (kept in
 * reduce_scatter_state until the next post_backward), or at the end the embedding's grad (with
 * its own unit, the unit too). unit_b and grad_unit as in ml_ledger_fsdp_terms. */
static void tt_fsdp2_terms(struct run *R, struct sink *sk, uint64_t unit_b, uint64_t grad_unit)
{
    struct calc *k = &R->k;
    uint64_t wb = R->act_bytes;
    bool tied = R->a->tie_embeddings;
    /* both recipes read the list (LoRA since torchtune b1aecb19e); a tied head reads
     * tok_embeddings.weight without calling its forward: left in the root. A LoRA run's own
     * embedding unit is not gathered again in backward (no grad, and its input is token ids). */
    bool own_emb = R->t->tt_shard_embed && !tied, own_head = R->t->tt_shard_head && !tied;
    uint64_t emb_b = mul(k, R->embed_numel, wb), head_b = tied ? 0 : mul(k, R->head_numel, wb);
    uint64_t root = add(k, own_emb ? 0 : emb_b, own_head ? 0 : head_b);
    /* a full fine-tune's head grad held in the root from the head's backward to the final
     * callback; tied, it is the embedding's weight's grad, of the embedding's size (TS1) */
    uint64_t root_head_grad = R->full && !own_head ? (tied ? emb_b : head_b) : 0;
    /* consecutive units in the forward order (embedding, layers, head): the one in use and the
     * next one's all-gather, the previous one resharded in its post_forward */
    uint64_t fwd = add(k, max2(max2(unit_b, own_head ? head_b : 0), own_emb ? emb_b : 0), unit_b);
    /* The head's own unit re-runs its pre-backward per chunk, each popping one post-forward
     * index: the last layer is prefetched at the last chunk, where T1c holds less than at its
     * own peak; the term counts the layer beyond that peak (docs/ledger.md TS2). */
    uint64_t prefetch = unit_b, t1c_peak, t1c_last;
    if (own_head && ml_ledger_tt_head_chunks(R, &t1c_peak, &t1c_last))
        prefetch = add(k, unit_b, t1c_last) > t1c_peak ? add(k, unit_b, t1c_last) - t1c_peak : 0;
    uint64_t loss = add(k, own_head ? head_b : 0, prefetch);
    uint64_t bwd = add(k, add(k, mul(k, 2, unit_b), mul(k, 2, grad_unit)), root_head_grad);
    if (R->full)
        bwd = max2(bwd, add(k, add(k, mul(k, own_emb ? 2 : 1, emb_b), grad_unit), tied ? 0 : root_head_grad));
    const char *src = "torchtune training/_distributed.py shard_model, recipes *_distributed.py _setup_model; torch "
                      "FSDPState._lazy_init, FSDPParamGroup (docs/ledger.md TS1, TS2)";
    entry(sk, ML_C_FSDP_UNSHARDED, add(k, root, fwd), ML_PH(ML_PHASE_FORWARD), ML_FIG_ALLOCATED, src,
          _("FSDP2: root (%llu B) + the unit in use + the next one's all-gather"), (unsigned long long)root);
    entry(sk, ML_C_FSDP_UNSHARDED, add(k, root, loss), ML_PH(ML_PHASE_LOSS), ML_FIG_ALLOCATED, src,
          own_head ? _("FSDP2: root + the output unit + the last layer (prefetched at the last chunk)")
                   : _("FSDP2: root + the last layer (backward prefetch)"));
    entry(sk, ML_C_FSDP_UNSHARDED, add(k, root, bwd), ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED, src,
          R->full
              ? _("FSDP2: root (+ its grads) + 2 layer units + 2 grad units (%s), or the embedding's grad at the end")
              : _("FSDP2: root + 2 layer units + 2 grad units (%s)"),
          R->lora ? _("its adapters") : _("the layer"));
}

void ml_ledger_fsdp_terms(struct run *R, struct sink *sk)
{
    struct calc *k = &R->k;
    /* notes §3.1: the root unit (embeddings, final norm, lm_head) stays unsharded; up to two
     * decoder-layer units are unsharded at once (limit_all_gathers / backward prefetch) and
     * one unit's unsharded grad exists during its reduce-scatter. */
    uint64_t root = add(k, R->embed_numel, R->a->tie_embeddings ? 0 : R->head_numel);
    uint64_t U = R->layer_params;
    uint64_t L = R->a->n_layers ? R->a->n_layers : 1;
    /* A unit is gathered at its storage size: with bnb_4bit_quant_storage the flat parameter of
     * a QLoRA layer holds the packed 4-bit data (0.5 B per quantized weight) and the 16-bit
     * rest (plan F2). */
    uint64_t q_unit = R->qlora ? R->P_quant / L : 0;
    uint64_t unit_b = add(k, R->qbits == 8 ? q_unit : frac(k, q_unit, 1, 2), mul(k, U > q_unit ? U - q_unit : 0, 2));
    /* Only units with trainable parameters get an unsharded gradient: PEFT's
     * fsdp_auto_wrap_policy wraps each LoRA leaf as its own unit (utils/other.py), so a LoRA
     * layer's grad unit is its adapters (plan F3). */
    uint64_t grad_unit = R->lora ? mul(k, 2, R->P_lora / L) : mul(k, 2, U);
    uint64_t units = add(k, mul(k, 2, unit_b), grad_unit);
    if (R->t->fsdp == ML_FSDP_SHARD_GRAD_OP) /* every unit stays unsharded from forward to backward */
        units = add(k, mul(k, L, unit_b), grad_unit);
    if (R->t->framework == ML_FW_TORCHTUNE && R->t->fsdp_version == 2 && R->t->fsdp != ML_FSDP_SHARD_GRAD_OP) {
        /* torchao NF4 gathers its scalers with the data (TS3) */
        if (R->qlora && R->qbits != 8)
            unit_b = add(k, unit_b, nf4_state(R, q_unit));
        tt_fsdp2_terms(R, sk, unit_b, grad_unit);
    } else {
        entry(sk, ML_C_FSDP_UNSHARDED, add(k, mul(k, root, 2), units), ML_PH_STEP & ~ML_PH(ML_PHASE_OPTIMIZER_STEP),
              ML_FIG_ALLOCATED, "notes §3.1 FSDP1 peak; PEFT fsdp_auto_wrap_policy",
              _("2 B x root %llu + 2 layer units at storage size + 1 grad unit (%s)"), (unsigned long long)root,
              R->lora ? _("its adapters") : _("the layer"));
    }
    /* The HF Trainer runs every micro-step but the last of an accumulation under accelerate's
     * no_sync, which is FSDP's own no_sync: each trainable unit keeps its whole unsharded
     * gradient, in the dtype the backward made it (MixedPrecision's param_dtype), until the
     * syncing micro-step reduce-scatters it (docs/ledger.md F4). In forward and loss only the
     * whole grads exist (the sharded ones are set to None by zero_grad after each step); in the
     * syncing backward each unit's whole grad turns into its shard, so beside the sharded term
     * the whole less one shard. Under CPU offload no_sync does not offload (FSDP1 no_sync: "only
     * offloaded right after the eventual sync"; FSDP2 post_backward returns before foreach_reduce
     * when reduce_grads is off) and the shards go to the host: the whole grads in every phase. */
    if (fsdp_no_sync(R)) {
        uint32_t gb = R->t->precision == ML_PREC_FP32 ? 4 : 2;
        uint64_t whole = mul(k, R->P_t, gb), shard = mul(k, part(R->P_t, R->n_shard), gb);
        const char *src = "torch FullyShardedDataParallel.no_sync, FSDPParamGroup.post_backward; accelerate "
                          "Accelerator.no_sync, accumulate; transformers Trainer._inner_training_loop "
                          "(docs/ledger.md F4)";
        bool off = R->t->fsdp_offload;
        entry(sk, ML_C_GRADIENTS, whole,
              ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_LOSS) | (off ? ML_PH(ML_PHASE_BACKWARD) : 0u), ML_FIG_ALLOCATED,
              src, _("%u B x %llu: unsharded grads kept by no_sync (GA > 1)"), gb, (unsigned long long)R->P_t);
        if (!off)
            entry(sk, ML_C_GRADIENTS, whole > shard ? whole - shard : 0,
                  ML_PH(ML_PHASE_BACKWARD) | ML_PH(ML_PHASE_AFTER_SAVE), ML_FIG_ALLOCATED, src,
                  _("%u B x %llu x (1 - 1/N): unsharded grads kept by no_sync (GA > 1)"), gb,
                  (unsigned long long)R->P_t);
    }
    if (!R->t->fsdp_offload && R->t->optim == ML_OPTIM_ADAMW_TORCH)
        entry(sk, ML_C_STEP_TRANSIENT, mul(k, part(R->P_t, R->n_shard), R->state_bytes), ML_PH(ML_PHASE_OPTIMIZER_STEP),
              ML_FIG_ALLOCATED, "notes §4.7 foreach sqrt", "%u B x P_t / N", R->state_bytes);
}

/* ---- optimizer step outside DeepSpeed ---------------------------------------------------- */

void ml_ledger_step_terms(struct run *R, struct sink *sk)
{
    if (R->t->deepspeed || R->fsdp || !R->P_t)
        return;
    /* torch AdamW foreach: _foreach_sqrt(exp_avg_sq) copies the second moments (notes §4.7);
     * fused has no large temporaries. Before torch 2.0 AdamW defaulted to the single-tensor
     * loop (torch/optim/optimizer.py _default_to_fused_or_foreach came with 2.0): the sqrt
     * temporary is one parameter's size, the largest one's at the peak. */
    if (R->t->optim != ML_OPTIM_ADAMW_TORCH && R->t->optim != ML_OPTIM_PAGED_ADAMW_32BIT)
        return;
    if (R->t->versions.torch < ML_VER(2, 0, 0) && R->t->optim == ML_OPTIM_ADAMW_TORCH) {
        uint64_t n = R->max_param < R->P_t ? R->max_param : R->P_t;
        entry(sk, ML_C_STEP_TRANSIENT, mul(&R->k, n, R->state_bytes), ML_PH(ML_PHASE_OPTIMIZER_STEP), ML_FIG_ALLOCATED,
              "torch < 2.0 _single_tensor_adamw", _("%u B x largest parameter %llu"), R->state_bytes,
              (unsigned long long)n);
        return;
    }
    entry(sk, ML_C_STEP_TRANSIENT, mul(&R->k, R->P_t, R->state_bytes), ML_PH(ML_PHASE_OPTIMIZER_STEP), ML_FIG_ALLOCATED,
          "notes §4.7 foreach sqrt", _("%u B x %llu trainable"), R->state_bytes, (unsigned long long)R->P_t);
}

/* ---- load ---------------------------------------------------------------------------------- */

void ml_ledger_load_terms(struct run *R, struct sink *sk)
{
    /* ZeRO-1/2 flatten the bit16 params on the GPU (notes §2): originals + flat = 2 B x P_t more.
     * ZeRO-3 builds each fp32 master sub-group with .to(fp32) then .clone() (notes §1.1):
     * 8 B x n_sg, unless the partition is already fp32 (it is aliased). */
    uint64_t b = 0;
    const char *why = NULL;
    if (R->zero12) {
        b = mul(&R->k, R->P_t, 2);
        why = "notes §2 flatten_dense_tensors_aligned on GPU";
    } else if (R->zero3 && R->P_t && R->t->precision != ML_PREC_PURE_BF16 && !R->trainable_fp32 &&
               !R->t->zero.offload_optimizer) {
        /* With offload_optimizer the fp32 partitions are built on subgroup_to_device = cpu
         * (stage3.py _create_fp32_partitions): nothing on the GPU. */
        uint64_t nsg = part(R->P_t, R->n_shard);
        uint64_t sg = ml_zero_sub_group(&R->t->zero);
        if (sg && sg < nsg)
            nsg = sg;
        b = mul(&R->k, nsg, 8);
        why = "notes §1.1 _create_fp32_partitions";
    }
    if (b)
        entry(sk, ML_C_LOAD_TRANSIENT, b, ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED, why, _("init transient"));
}
