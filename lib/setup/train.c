/*
 * train.c - framework profiles: the defaults of struct ml_train (docs/cli/train.md, "Framework
 * profiles"), the DeepSpeed sizes in force, the names of the settings, and version numbers.
 *
 * Each default names the source it follows. Versions default to the releases the accounting
 * notes were read at (shared reference accounting-notes.md, section 0): transformers 4.57,
 * DeepSpeed 0.19.5, torch 2.9.
 */
#include "memledger/train.h"
#include "memledger/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"

const char *ml_framework_name(enum ml_framework f)
{
    static const char *const n[ML_FW_COUNT] = {"llamafactory", "hf", "litgpt", "torchtune", "trl"};
    return (f >= 0 && f < ML_FW_COUNT) ? n[f] : "unknown";
}

const char *ml_method_name(enum ml_method m)
{
    const char *n = ml_spelling_name(ml_method_spellings, (int)m, ML_SP_FLAG);
    return n ? n : "unknown";
}

const char *ml_optim_name(enum ml_optim o)
{
    const char *n = ml_spelling_name(ml_optim_spellings, (int)o, ML_SP_FLAG);
    return n ? n : "unknown";
}

const char *ml_attn_name(enum ml_attn a)
{
    const char *n = ml_spelling_name(ml_attn_spellings, (int)a, ML_SP_FLAG);
    return n ? n : "unknown";
}

const char *ml_grad_ckpt_name(enum ml_grad_ckpt g)
{
    const char *n = ml_spelling_name(ml_grad_ckpt_spellings, (int)g, ML_SP_FLAG);
    return n ? n : "unknown";
}

const char *ml_precision_name(enum ml_precision p)
{
    const char *n = ml_spelling_name(ml_precision_spellings, (int)p, ML_SP_FLAG);
    return n ? n : "unknown";
}

void ml_train_warn(struct ml_train *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ml_warnings_vadd(t->warnings, fmt, ap);
    va_end(ap);
}

void ml_warnings_vadd(struct ml_warnings *w, const char *fmt, va_list ap)
{
    if (!w || w->n >= ML_MAX_WARNINGS)
        return;
    (void)ml_vformat(w->text[w->n], sizeof(w->text[0]), fmt, ap);
    /* The same warning twice says nothing new. */
    for (uint32_t i = 0; i < w->n; i++)
        if (!strcmp(w->text[i], w->text[w->n]))
            return;
    w->n++;
}

static void zero_defaults(struct ml_zero *z)
{
    /* deepspeed/runtime/zero/config.py defaults. */
    memset(z, 0, sizeof(*z));
    z->contiguous_gradients = true;
    z->reduce_scatter = true;
    z->model_persistence = UINT64_MAX;
    z->hpz_partition_size = 1;
    z->grad_accum_dtype = ML_DTYPE_UNKNOWN;
    z->comm_dtype = ML_DTYPE_UNKNOWN;
}

void ml_train_defaults(struct ml_train *t, enum ml_framework fw)
{
    memset(t, 0, sizeof(*t));
    t->framework = fw;
    t->stage = ML_STAGE_SFT;
    t->method = ML_METHOD_LORA;
    t->lora_rank = 8;               /* LLaMA-Factory finetuning_args lora_rank; PEFT r=8 */
    t->lora_targets.all = true;     /* LLaMA-Factory lora_target: all */
    t->freeze_trainable_layers = 2; /* LLaMA-Factory freeze_trainable_layers */
    t->double_quant = true;         /* LLaMA-Factory double_quantization */
    t->seq_len = 2048;              /* LLaMA-Factory cutoff_len */
    t->micro_batch = 8;             /* HF TrainingArguments per_device_train_batch_size */
    t->grad_accum = 1;
    t->eval_batch = 8;
    t->precision = ML_PREC_BF16;
    t->attn = ML_ATTN_SDPA;                /* transformers' choice on torch >= 2.1.1 (flash_attn: auto) */
    t->grad_ckpt = ML_GC_REENTRANT;        /* LLaMA-Factory: on unless disable_gradient_checkpointing */
    t->optim = ML_OPTIM_ADAMW_TORCH_FUSED; /* transformers >= 4.54 on torch >= 2.8 (derive_defaults) */
    zero_defaults(&t->zero);
    t->fsdp = ML_FSDP_NONE;
    t->fsdp_version = 1;
    t->versions.transformers = ML_VER(4, 57, 0);
    t->versions.deepspeed = ML_VER(0, 19, 5);
    t->versions.torch = ML_VER(2, 9, 0);
    t->versions.bitsandbytes = ML_VER(0, 49, 0);
    t->versions.peft = ML_VER(0, 17, 0);
    t->versions.accelerate = ML_VER(1, 11, 0); /* the release beside transformers 4.57 */
    t->chunked_ce = true;                      /* torchtune recipes: loss CEWithChunkedOutputLoss */

    switch (fw) {
    case ML_FW_LLAMAFACTORY: break;
    case ML_FW_HF:
        /* Plain Trainer + PEFT: no gradient checkpointing unless asked, PEFT needs explicit
         * targets (the model's default mapping is q/v for Llama-style models). */
        t->grad_ckpt = ML_GC_OFF;
        t->lora_targets.all = false;
        t->lora_targets.n = 2;
        (void)snprintf(t->lora_targets.names[0], sizeof(t->lora_targets.names[0]), "q_proj");
        (void)snprintf(t->lora_targets.names[1], sizeof(t->lora_targets.names[1]), "v_proj");
        t->micro_batch = 8;
        /* TRL SFTTrainer on a 4-bit model: prepare_model_for_kbit_training, then
         * peft_module_casting_to_bf16 when bf16 (trl/trainer/sft_trainer.py). */
        t->kbit_prepare = ML_KBIT_TRL_CAST;
        break;
    case ML_FW_LITGPT:
        /* LitGPT finetune/lora.py: precision bf16-true as its config_hub YAMLs set it (params and
         * AdamW states bf16, no master copy; memledger's default: the scripts alone take
         * get_default_supported_precision(training=True), bf16-mixed, litgpt/utils.py, whose fp32
         * weights the ledger does not model for LitGPT: train_check.c warns), torch AdamW, no
         * activation checkpointing, lora_query + lora_value,
         * lora_dropout 0.05 (setup(), litgpt 0.5.13; lit-gpt 2023 module constant lora_dropout
         * 0.05 too), TrainArgs global_batch_size 16 and micro_batch_size 1 (0.5.13; lit-gpt 2023:
         * batch_size 128, set by ml_train_derive_defaults): GA follows (L7). */
        t->precision = ML_PREC_PURE_BF16;
        t->grad_ckpt = ML_GC_OFF;
        t->optim = ML_OPTIM_ADAMW_TORCH;
        t->micro_batch = 1;
        t->lora_targets.all = false;
        t->lora_targets.n = 2;
        (void)snprintf(t->lora_targets.names[0], sizeof(t->lora_targets.names[0]), "q_proj");
        (void)snprintf(t->lora_targets.names[1], sizeof(t->lora_targets.names[1]), "v_proj");
        t->lora_dropout = true;
        t->global_batch = 16;
        break;
    case ML_FW_TORCHTUNE:
        /* torchtune recipes: dtype bf16 (pure), fused AdamW, activation checkpointing on. */
        t->precision = ML_PREC_PURE_BF16;
        t->optim = ML_OPTIM_ADAMW_TORCH_FUSED;
        t->grad_ckpt = ML_GC_NON_REENTRANT;
        t->micro_batch = 2;
        /* The distributed recipes shard with FSDP2: training/_distributed.py shard_model calls
         * fully_shard per unit (torchtune 30b8519e8, 2024-09; docs/ledger.md TS1). */
        t->fsdp_version = 2;
        break;
    case ML_FW_TRL:
        /* TRL's DPOConfig / GRPOConfig: the HF Trainer with gradient_checkpointing and bf16 on
         * by default (trl/trainer/dpo_config.py, grpo_config.py); PEFT targets as for hf. */
        ml_train_defaults(t, ML_FW_HF);
        t->framework = ML_FW_TRL;
        t->grad_ckpt = ML_GC_REENTRANT;
        /* SFTConfig / DPOConfig max_length 1024 (sft_config.py, dpo_config.py); ModelConfig lora_r 16
         * (model_config.py), the keys fit writes for TRL. */
        t->seq_len = 1024;
        t->lora_rank = 16;
        break;
    case ML_FW_COUNT: break;
    }
}

/* The HF Trainer family: LLaMA-Factory, plain HF + PEFT, TRL (and ms-swift on it). */
static bool hf_trainer(const struct ml_train *t)
{
    return t->framework == ML_FW_LLAMAFACTORY || t->framework == ML_FW_HF || t->framework == ML_FW_TRL;
}

/* ms-swift's loop on it (--set trainer=ms-swift), whose own defaults replace the profile's. */
static bool ms_swift_loop(const struct ml_train *t)
{
    return hf_trainer(t) && t->trainer == ML_TRAINER_MS_SWIFT;
}

void ml_train_derive_defaults(struct ml_train *t, uint64_t devices, bool ga_given)
{
    /* The HF Trainer's default optimizer follows the versions: TrainingArguments.optim is
     * adamw_torch_fused only from transformers 4.54 on torch >= 2.8 (training_args.py, #37358),
     * adamw_torch before (#25109). The profile's fused default is for its default versions. */
    if (hf_trainer(t) && (t->defaulted >> ML_TK_OPTIM & 1u) && t->optim == ML_OPTIM_ADAMW_TORCH_FUSED &&
        (t->versions.torch < ML_VER(2, 8, 0) || t->versions.transformers < ML_VER(4, 54, 0)))
        t->optim = ML_OPTIM_ADAMW_TORCH;
    /* ms-swift's own TrainingArguments defaults (swift/trainers/arguments.py TrainArgumentsMixin,
     * ms-swift 3.x): per_device_train_batch_size 1, gradient_checkpointing True, and
     * gradient_accumulation_steps = max(1, ceil(16 / batch / world size)) in __post_init__. */
    if (ms_swift_loop(t)) {
        if (t->defaulted >> ML_TK_BATCH & 1u)
            t->micro_batch = 1;
        if (t->defaulted >> ML_TK_GC & 1u)
            t->grad_ckpt = ML_GC_REENTRANT;
        uint64_t per = t->micro_batch * (devices ? devices : 1);
        if (!ga_given && per)
            t->grad_accum = per >= 16 ? 1 : (16 + per - 1) / per;
    }
    if (ga_given || !t->global_batch || t->framework != ML_FW_LITGPT)
        return;
    /* litgpt 0.5.13 args.py: batch_size = global_batch_size // (devices * num_nodes),
     * gradient_accumulation_iters = batch_size // micro_batch_size (asserted > 0). lit-gpt 2023
     * (torch < 2.2, the scripts pinned torch 2.1; finetune/lora.py at 8641822): module constants
     * batch_size 128, gradient_accumulation_iters = batch_size // micro_batch_size, not divided
     * by the devices. */
    bool lit2023 = t->versions.torch < ML_VER(2, 2, 0);
    uint64_t global = lit2023 ? 128 : t->global_batch;
    uint64_t per_rank = lit2023 ? global : global / (devices ? devices : 1);
    uint64_t ga = t->micro_batch ? per_rank / t->micro_batch : 0;
    if (ga == 0) {
        ml_train_warn(t,
                      _("LitGPT's global batch %llu over %llu devices is below the micro batch %llu (LitGPT "
                        "stops there): gradient accumulation 1 assumed; set --grad-accum"),
                      (unsigned long long)global, (unsigned long long)(devices ? devices : 1),
                      (unsigned long long)t->micro_batch);
        ga = 1;
    }
    t->grad_accum = ga;
}

/* Whose each default of ml_train_defaults is, per profile: the OWNERS column of the setting's row
 * (settings.h), the owners the defaults' comments cite (LLaMA-Factory hparams finetuning_args.py /
 * data_args.py; transformers training_args.py TrainingArguments and its attn_implementation
 * choice; PEFT LoraConfig; TRL sft_config.py / model_config.py; LitGPT finetune/lora.py;
 * torchtune's recipe configs), "memledger" where the profile assumes a value (bf16 autocast, the
 * sequence length of frameworks without one, the method). */
const char *ml_train_default_owner_of(const struct ml_train *t, enum ml_tracked k)
{
    /* (ml_train_derive_defaults: ms-swift's own batch, accumulation and checkpointing) */
    /* (its TunerArguments: lora_rank 8, target_modules all-linear, the values the profile has; its
     * max_length defaults to the model's own limit, so s=2048 is memledger's assumption there) */
    if (ms_swift_loop(t) && k == ML_TK_SEQ)
        return "memledger";
    if (ms_swift_loop(t) &&
        (k == ML_TK_BATCH || k == ML_TK_GA || k == ML_TK_GC || k == ML_TK_RANK || k == ML_TK_LORA_TARGET))
        return "ms-swift";
    return ml_train_default_owner(t->framework, k);
}

const char *ml_train_default_owner(enum ml_framework fw, enum ml_tracked k)
{
#define OWNERS(id, track, flag, field, type, unit, owners, ...)                                                        \
    ML_SETTING_IF_##track([ML_TK_##id] = ML_SETTING_OWNERS owners, )
    static const char *const by[ML_TK_COUNT][ML_FW_COUNT] = {ML_SETTINGS(OWNERS)};
#undef OWNERS
    return (unsigned)fw < ML_FW_COUNT && (unsigned)k < ML_TK_COUNT ? by[k][fw] : NULL;
}

uint64_t ml_zero_resolve(const struct ml_ds_size *k, uint64_t auto_value, uint64_t ds_default)
{
    if (k->is_auto)
        return auto_value;
    if (k->is_set)
        return k->value;
    return ds_default;
}

uint64_t ml_zero_auto_prefetch(uint64_t h)
{
    uint64_t hh = h * h; /* h <= 2^22 (arch_json.c MAX_WIDTH) */
    return hh / 10 * 9 + (hh % 10) * 9 / 10;
}

uint64_t ml_zero_reduce_bucket(const struct ml_zero *z, uint64_t h)
{
    return ml_zero_resolve(&z->reduce_bucket, h * h, ML_DS_REDUCE_BUCKET);
}

uint64_t ml_zero_prefetch_bucket(const struct ml_zero *z, uint64_t h)
{
    return ml_zero_resolve(&z->prefetch_bucket, ml_zero_auto_prefetch(h), ML_DS_PREFETCH_BUCKET);
}

uint64_t ml_zero_persistence(const struct ml_zero *z, uint64_t h)
{
    return ml_zero_resolve(&z->persistence, 10 * h, ML_DS_PERSISTENCE);
}

uint64_t ml_zero_max_live(const struct ml_zero *z)
{
    return ml_zero_resolve(&z->max_live, 0, ML_DS_MAX_LIVE);
}

uint64_t ml_zero_max_reuse(const struct ml_zero *z)
{
    return ml_zero_resolve(&z->max_reuse, 0, ML_DS_MAX_REUSE);
}

uint64_t ml_zero_sub_group(const struct ml_zero *z)
{
    return ml_zero_resolve(&z->sub_group, 0, ML_DS_SUB_GROUP);
}

bool ml_zero_overlap(const struct ml_zero *z)
{
    return z->overlap_comm_set ? z->overlap_comm : z->stage == 3;
}

/* LLaMA-Factory's examples/deepspeed/ds_z{2,3}_config.json as the files write them (notes §6.8):
 * what fit --write starts from when the run had no DeepSpeed file (lib/fit/patch.c). ml_zero_preset
 * below sets the same values; test_train_config reads these texts and compares. */
static const char ds_z2[] =
    "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": \"auto\","
    " \"gradient_accumulation_steps\": \"auto\", \"gradient_clipping\": \"auto\","
    " \"zero_allow_untested_optimizer\": true, \"fp16\": {\"enabled\": \"auto\", \"loss_scale\": 0,"
    " \"loss_scale_window\": 1000, \"initial_scale_power\": 16, \"hysteresis\": 2, \"min_loss_scale\": 1},"
    " \"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 2, \"allgather_partitions\": true,"
    " \"allgather_bucket_size\": 500000000, \"overlap_comm\": false, \"reduce_scatter\": true,"
    " \"reduce_bucket_size\": 500000000, \"contiguous_gradients\": true, \"round_robin_gradients\": true}}";
static const char ds_z3[] =
    "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": \"auto\","
    " \"gradient_accumulation_steps\": \"auto\", \"gradient_clipping\": \"auto\","
    " \"zero_allow_untested_optimizer\": true, \"fp16\": {\"enabled\": \"auto\", \"loss_scale\": 0,"
    " \"loss_scale_window\": 1000, \"initial_scale_power\": 16, \"hysteresis\": 2, \"min_loss_scale\": 1},"
    " \"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 3, \"overlap_comm\": false,"
    " \"contiguous_gradients\": true, \"sub_group_size\": 1000000000, \"reduce_bucket_size\": \"auto\","
    " \"stage3_prefetch_bucket_size\": \"auto\", \"stage3_param_persistence_threshold\": \"auto\","
    " \"stage3_max_live_parameters\": 1000000000, \"stage3_max_reuse_distance\": 1000000000,"
    " \"stage3_gather_16bit_weights_on_model_save\": true}}";

const char *ml_zero_preset_json(uint32_t stage)
{
    return stage == 3 ? ds_z3 : stage == 2 ? ds_z2 : NULL;
}

void ml_zero_preset(struct ml_train *t, uint32_t stage, bool offload)
{
    /* LLaMA-Factory examples/deepspeed/ds_z{0,2,3}[_offload]_config.json (notes §6.8). */
    zero_defaults(&t->zero);
    t->deepspeed = true;
    t->zero.stage = stage;
    t->zero.overlap_comm = false;
    t->zero.overlap_comm_set = true;
    t->zero.reduce_bucket.is_auto = t->zero.reduce_bucket.is_set = true; /* "auto" is in the file */
    if (stage == 2) {
        t->zero.reduce_bucket.is_auto = false;
        t->zero.reduce_bucket.is_set = true;
        t->zero.reduce_bucket.value = 500000000ull;
        t->zero.allgather_bucket.is_set = true;
        t->zero.allgather_bucket.value = 500000000ull;
    }
    if (stage == 3) {
        t->zero.prefetch_bucket.is_auto = t->zero.prefetch_bucket.is_set = true;
        t->zero.persistence.is_auto = t->zero.persistence.is_set = true;
        t->zero.max_live.is_set = true;
        t->zero.max_live.value = 1000000000ull;
        t->zero.max_reuse.is_set = true;
        t->zero.max_reuse.value = 1000000000ull;
        t->zero.sub_group.is_set = true;
        t->zero.sub_group.value = 1000000000ull;
        t->zero.gather_16bit_on_save = t->zero.gather_16bit_set = true;
    }
    if (offload) {
        t->zero.offload_optimizer = true;
        t->zero.offload_param = stage == 3;
        t->zero.pin_memory = true;
    }
}

/* ---- versions --------------------------------------------------------------------------- */

static bool read_part(const char **pp, uint32_t *out, uint32_t max)
{
    const char *p = *pp;
    uint32_t v = 0;
    if (!(*p >= '0' && *p <= '9'))
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (uint32_t)(*p - '0');
        if (v > max)
            return false;
    }
    *pp = p;
    *out = v;
    return true;
}

enum ml_status ml_version_parse(const char *s, uint32_t *out, struct ml_diag *diag)
{
    const char *p = s ? s : "";
    uint32_t major = 0, minor = 0, patch = 0;
    if (*p == 'v' || *p == 'V')
        p++;
    bool ok = read_part(&p, &major, 42000) && *p == '.';
    if (ok) {
        p++;
        ok = read_part(&p, &minor, 99);
    }
    if (ok && *p == '.' && p[1] >= '0' && p[1] <= '9') {
        p++;
        ok = read_part(&p, &patch, 99);
    }
    /* A local or pre-release suffix: 2.9.0+cu128, 4.57.0.dev0, 0.19.5rc1, 1.0-beta. */
    if (ok && *p && !(*p == '+' || *p == '-' || (*p >= 'a' && *p <= 'z') || (*p == '.' && p[1] >= 'a' && p[1] <= 'z')))
        ok = false;
    if (!ok)
        return ml_diag_set(diag, ML_ERR_PARSE, _("'%.40s' is not a version like 4.49.0 (minor and patch below 100)"),
                           s ? s : "");
    *out = major * 10000u + minor * 100u + patch;
    return ML_OK;
}
