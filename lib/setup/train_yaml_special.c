/*
 * train_yaml_special.c - the YAML keys that take more than one field (K_SPECIAL rows): the method,
 * the data, precision and kernels, fsdp, the stages, the stack's run settings and TRL's own keys.
 */
#include "train_yaml_int.h"

/* ---- the special keys ------------------------------------------------------------------- */

/* fsdp: "full_shard auto_wrap", "shard_grad_op offload", a list of those words, or a bool. */
static enum ml_status apply_fsdp(struct ctx *c, const char *key, const char *val)
{
    struct ml_train *t = c->t;
    int b = ml_ty_yaml_bool(val);
    if (b >= 0 && strcmp(val, "0") && strcmp(val, "1")) {
        t->fsdp = b ? ML_FSDP_FULL_SHARD : ML_FSDP_NONE;
        t->fsdp_offload = false;
        return ML_OK;
    }
    enum ml_fsdp_mode mode = ML_FSDP_NONE;
    bool offload = false, sharded = false;
    const char *p = val;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, " ,\t");
        char w[32];
        if (n >= sizeof(w))
            n = sizeof(w) - 1;
        memcpy(w, p, n);
        w[n] = '\0';
        p += strcspn(p, " ,\t");
        if (!strcmp(w, "full_shard")) {
            mode = ML_FSDP_FULL_SHARD;
            sharded = true;
        } else if (!strcmp(w, "shard_grad_op")) {
            mode = ML_FSDP_SHARD_GRAD_OP;
            sharded = true;
        } else if (!strcmp(w, "hybrid_shard") || !strcmp(w, "hybrid_shard_zero2")) {
            mode = ML_FSDP_HYBRID_SHARD;
            sharded = true;
        } else if (!strcmp(w, "no_shard")) {
            mode = ML_FSDP_NONE;
        } else if (!strcmp(w, "offload")) {
            offload = true;
        } else if (strcmp(w, "auto_wrap")) {
            return ml_ty_failf(c, ML_ERR_INVALID,
                               _("'%s': unknown option '%s' (full_shard, shard_grad_op, hybrid_shard, "
                                 "hybrid_shard_zero2, no_shard, offload, auto_wrap)"),
                               key, w);
        }
    }
    if (offload && !sharded)
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s': offload needs full_shard, shard_grad_op or hybrid_shard"), key);
    t->fsdp = mode;
    t->fsdp_offload = offload;
    return ML_OK;
}

/* One key inside fsdp_config (HF strips the "fsdp_" prefix the same way). */
enum ml_status ml_ty_apply_fsdp_config(struct ctx *c, const char *key, const char *val, bool is_null)
{
    if (is_null)
        return ML_OK;
    const char *k = strncmp(key, "fsdp_", 5) ? key : key + 5;
    char full[KEY_MAX + 16];
    (void)snprintf(full, sizeof(full), "fsdp_config.%s", key);
    if (!strcmp(k, "version")) {
        uint64_t v;
        enum ml_status st = ml_ty_get_count(c, full, val, 1, 2, &v);
        if (st != ML_OK)
            return st;
        c->t->fsdp_version = (uint32_t)v;
    } else if (!strcmp(k, "offload_params") || !strcmp(k, "cpu_offload")) {
        return ml_ty_get_bool(c, full, val, &c->t->fsdp_offload);
    } else if (!strcmp(k, "activation_checkpointing")) {
        if (ml_ty_yaml_bool(val) == 1)
            ml_train_warn(c->t,
                          _("'%s' changes memory but is not modelled; FSDP's own activation "
                            "checkpointing is estimated as gradient checkpointing"),
                          full);
    } else if (!strcmp(k, "reshard_after_forward")) {
        if (ml_ty_yaml_bool(val) == 0)
            ml_train_warn(c->t,
                          _("'%s' changes memory but is not modelled; parameters stay "
                            "gathered between forward and backward"),
                          full);
    }
    return ML_OK;
}

/* accelerator_config's keys (transformers trainer_pt_utils.py AcceleratorConfig): key is
 * "gradient_accumulation_kwargs.sync_each_batch" for the one read (the HF Trainer then syncs
 * every micro-step instead of running it under no_sync: docs/ledger.md F4); any other is named
 * in a warning, not dropped silently. */
enum ml_status ml_ty_apply_accel_config(struct ctx *c, const char *key, const char *val, bool is_null)
{
    char full[KEY_MAX + 24];
    (void)snprintf(full, sizeof(full), "accelerator_config.%s", key);
    if (!strcmp(key, "gradient_accumulation_kwargs.sync_each_batch"))
        return is_null ? (c->t->sync_each_batch = false, ML_OK) : ml_ty_get_bool(c, full, val, &c->t->sync_each_batch);
    ml_train_warn(c->t,
                  _("'%s' is not read (of accelerator_config memledger reads "
                    "gradient_accumulation_kwargs.sync_each_batch only)"),
                  full);
    return ML_OK;
}

/* A null value: "not given" for most keys; a few clear what an earlier layer set. */
static enum ml_status special_null(struct ctx *c, const struct key_def *d)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    const char *key = d->key;
    switch (d->id) {
    case S_MODEL: return ml_ty_copy_out(c, key, "", c->model_name, c->model_name_len);
    case S_DEEPSPEED: t->deepspeed = false; return ml_ty_copy_out(c, key, "", c->ds_path, c->ds_path_len);
    case S_QBIT:
        p->quant_bits = 0;
        p->method_touched = true;
        return ML_OK;
    case S_ADDITIONAL: memset(&t->additional, 0, sizeof(t->additional)); return ML_OK;
    case S_FSDP:
        t->fsdp = ML_FSDP_NONE;
        t->fsdp_offload = false;
        return ML_OK;
    case S_PACKING:
        p->packing = -1;
        p->pack_touched = true;
        return ML_OK;
    case S_REF_MODEL: t->sc.ref_model = false; return ML_OK;
    case S_REWARD_MODEL: t->sc.reward_model = false; return ML_OK;
    case S_REF_QBIT: t->sc.ref_quant_bits = 0; return ML_OK;
    case S_REWARD_QBIT: t->sc.reward_quant_bits = 0; return ML_OK;
    default: return ML_OK;
    }
}

/* The stage and the method: finetuning type, LoRA, freeze, quantization. */
enum ml_status ml_ty_special_method(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    const char *key = d->key;
    enum ml_status st = ML_OK;
    uint64_t v = 0;
    switch (d->id) {
    case S_STAGE: {
        static const struct {
            const char *n;
            enum ml_stage s;
        } stages[] = {
            {"pt", ML_STAGE_PT},   {"sft", ML_STAGE_SFT},   {"rm", ML_STAGE_RM},   {"dpo", ML_STAGE_DPO},
            {"kto", ML_STAGE_KTO}, {"orpo", ML_STAGE_ORPO}, {"ppo", ML_STAGE_PPO}, {"grpo", ML_STAGE_GRPO},
        };
        for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++)
            if (!strcmp(val, stages[i].n)) {
                t->stage = stages[i].s;
                p->pack_touched = true; /* packing defaults on for pt */
                return ML_OK;
            }
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be pt, sft, rm, dpo, kto, ppo (or TRL's grpo), got '%.60s'"),
                           key, val);
    }
    case S_FT:
        t->sc.oft = false;
        if (!strcmp(val, "full"))
            p->ft = FT_FULL;
        else if (!strcmp(val, "freeze"))
            p->ft = FT_FREEZE;
        else if (!strcmp(val, "lora"))
            p->ft = FT_LORA;
        else if (!strcmp(val, "oft")) {
            p->ft = FT_OFT;
            t->sc.oft = true;
            ml_train_warn(t, _("finetuning_type oft: modelled as lora"));
        } else
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be full, freeze, lora or oft, got '%.60s'"), key, val);
        p->method_touched = true;
        return ML_OK;
    case S_LORA_TARGET:
    case S_ADDITIONAL: {
        struct ml_diag sub;
        ml_diag_init(&sub);
        struct ml_lora_targets *out = d->id == S_LORA_TARGET ? &t->lora_targets : &t->additional;
        struct ml_lora_targets tmp;
        if (ml_lora_targets_parse(val, &tmp, &sub) != ML_OK)
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s': %s"), key, sub.msg);
        *out = tmp;
        return ML_OK;
    }
    case S_LORA_DROPOUT: {
        double x;
        if (!ml_ty_get_real(val, &x) || x < 0 || x > 1)
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be a number from 0 to 1, got '%.60s'"), key, val);
        t->lora_dropout = x > 0;
        return ML_OK;
    }
    case S_FREEZE_LAYERS:
        /* Negative: the first n layers train instead of the last n; the count is what matters. */
        st = ml_ty_get_count(c, key, val[0] == '-' ? val + 1 : val, 0, 65536, &v);
        if (st == ML_OK)
            t->freeze_trainable_layers = (uint32_t)v;
        return st;
    case S_QBIT:
        st = ml_ty_get_count(c, key, val, 0, 8, &v);
        if (st != ML_OK || (v != 4 && v != 8))
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be 4 or 8, got '%.60s'"), key, val);
        p->quant_bits = (uint32_t)v;
        p->quant_line = c->line;
        p->quant_col = c->col;
        p->method_touched = true;
        return ML_OK;
    case S_QMETHOD:
        if (strcmp(val, "bnb") && strcmp(val, "bitsandbytes"))
            ml_train_warn(t, _("quantization_method '%.40s': modelled as bitsandbytes"), val);
        return ML_OK;
    default: break;
    }
    return ML_OK;
}

/* Steps, the sequence length, packing, evaluation. */
static enum ml_status special_data(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    const char *key = d->key;
    enum ml_status st = ML_OK;
    bool b = false;
    uint64_t v = 0;
    switch (d->id) {
    case S_SAVE_STEPS:
    case S_EVAL_STEPS: {
        /* transformers TrainingArguments: a whole number of steps, or a float below 1 that is a
         * ratio of the total steps (not known here: left 0). */
        double r;
        uint64_t *dst = d->id == S_SAVE_STEPS ? &t->save_steps : &t->eval_steps;
        if (ml_count_parse(val, &v, NULL) == ML_OK) {
            *dst = v;
            return ML_OK;
        }
        if (ml_ty_get_real(val, &r) && r >= 0 && r < 1) {
            *dst = 0;
            return ML_OK;
        }
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be a whole number of steps or a ratio below 1, got '%.60s'"),
                           key, val);
    }
    case S_CUTOFF:
        st = ml_ty_get_count(c, key, val, 1, MAX_CUTOFF, &v);
        if (st == ML_OK) {
            p->cutoff = v;
            p->pack_touched = true;
        }
        return st;
    case S_PACKING:
        st = ml_ty_get_bool(c, key, val, &b);
        p->packing = b ? 1 : 0;
        p->pack_touched = true;
        return st;
    case S_NEAT:
        st = ml_ty_get_bool(c, key, val, &p->neat);
        p->pack_touched = true;
        return st;
    case S_EVAL_STRATEGY:
        if (strcmp(val, "no") && strcmp(val, "steps") && strcmp(val, "epoch") && ml_ty_yaml_bool(val) != 0)
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be no, steps or epoch, got '%.60s'"), key, val);
        /* PyYAML reads a plain no as false: the same as "no". */
        p->eval_on = ml_ty_yaml_bool(val) != 0;
        return ML_OK;
    default: break;
    }
    return ML_OK;
}

/* Precision, attention, checkpointing, the optimizer, DeepSpeed and FSDP. */
static enum ml_status special_kernels(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    const char *key = d->key;
    enum ml_status st = ML_OK;
    bool b = false;
    int a;
    switch (d->id) {
    case S_BF16:
    case S_FP16:
    case S_PURE_BF16:
        st = ml_ty_get_bool(c, key, val, &b);
        if (st != ML_OK)
            return st;
        p->prec_touched = true;
        if (c->set_mode && b)
            p->bf16 = p->fp16 = p->pure_bf16 = false; /* an override replaces the precision */
        if (d->id == S_BF16 || d->id == S_FP16) {
            bool *flag = d->id == S_BF16 ? &p->bf16 : &p->fp16;
            bool *by_key = d->id == S_BF16 ? &p->bf16_key : &p->fp16_key;
            *flag = *by_key = b;
            if (b) {
                p->prec_line = c->line;
                p->prec_col = c->col;
            }
        } else {
            p->pure_bf16 = b;
        }
        return ML_OK;
    case S_FLASH:
        if (c->schema == SCHEMA_V1) {
            /* v1 utils/types.py AttentionFunction: eager, sdpa, flash_attention_2. */
            if (ml_spelling_find(ml_attn_spellings, val, ML_SP_V1, &a)) {
                t->attn = (enum ml_attn)a;
                return ML_OK;
            }
            return ml_ty_failf(c, ML_ERR_INVALID,
                               _("'%s' must be eager, sdpa or flash_attention_2 (the v1 schema), "
                                 "got '%.60s'"),
                               key, val);
        }
        if (!ml_spelling_find(ml_attn_spellings, val, ML_SP_LF, &a) &&
            ml_spelling_find(ml_attn_spellings, val, ML_SP_V1, &a))
            return ml_ty_failf(c, ML_ERR_INVALID,
                               _("'%s' must be auto, disabled, sdpa, fa2 or fa3, got '%.60s' (a v1-schema "
                                 "name; this file reads as v0, which calls it %s)"),
                               key, val, ml_spelling_name(ml_attn_spellings, a, ML_SP_LF));
        if (ml_spelling_find(ml_attn_spellings, val, ML_SP_LF, &a))
            t->attn = (enum ml_attn)a;
        else if (ml_ty_yaml_bool(val) == 0)
            t->attn = ML_ATTN_EAGER; /* "off" was the name before "disabled" */
        else if (ml_ty_yaml_bool(val) == 1)
            t->attn = ML_ATTN_FLASH;
        else
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be auto, disabled, sdpa, fa2 or fa3, got '%.60s'"), key,
                               val);
        return ML_OK;
    case S_HF_GC:
        st = ml_ty_get_bool(c, key, val, &b);
        if (st != ML_OK)
            return st;
        p->gc_touched = true;
        if (t->framework == ML_FW_LLAMAFACTORY) {
            p->hf_gc = b;
            if (!b)
                ml_train_warn(t, _("gradient_checkpointing: false does not turn checkpointing off in "
                                   "LLaMA-Factory (use disable_gradient_checkpointing: true); "
                                   "modelled as on"));
        } else {
            p->hf_gc = b;
            p->gc_disabled = false;
        }
        return ML_OK;
    case S_DISABLE_GC: p->gc_touched = true; return ml_ty_get_bool(c, key, val, &p->gc_disabled);
    case S_UNSLOTH_GC: p->gc_touched = true; return ml_ty_get_bool(c, key, val, &p->unsloth_gc);
    case S_REENTRANT_GC: p->gc_touched = true; return ml_ty_get_bool(c, key, val, &p->reentrant_gc);
    case S_OPTIM: {
        int o;
        if (ml_spelling_find(ml_optim_spellings, val, ML_SP_HF, &o)) {
            t->optim = (enum ml_optim)o;
            t->optim_set = true;
            return ML_OK;
        }
    }
        ml_train_warn(t, _("optim '%.40s' is not modelled; estimated with %s"), val, ml_optim_name(t->optim));
        return ML_OK;
    case S_GALORE: return ml_ty_get_bool(c, key, val, &p->galore);
    case S_DEEPSPEED:
        st = ml_ty_copy_out(c, key, val, c->ds_path, c->ds_path_len);
        if (st == ML_OK)
            t->deepspeed = val[0] != '\0';
        return st;
    case S_FSDP: return apply_fsdp(c, key, val);
    case S_FSDP_CONFIG:
        /* A path to a JSON file (HF accepts one): not read here. */
        ml_train_warn(t,
                      _("fsdp_config '%.60s' is a file memledger does not read; FSDP version %u "
                        "assumed"),
                      val, t->fsdp_version);
        return ML_OK;
    default: break;
    }
    return ML_OK;
}

static enum ml_status get_qbit(struct ctx *c, const char *key, const char *val, uint32_t *out)
{
    uint64_t v = 0;
    if (ml_ty_get_count(c, key, val, 0, 8, &v) != ML_OK || (v != 4 && v != 8))
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be 4 or 8, got '%.60s'"), key, val);
    *out = (uint32_t)v;
    return ML_OK;
}

/* The stage's own keys: the reference and reward models, generation, TRL's trainers. */
static enum ml_status special_stage(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_stage_cfg *sc = &c->t->sc;
    const char *key = d->key;
    uint64_t v = 0;
    double x;
    switch (d->id) {
    case S_PREF_LOSS: {
        static const char *const names[] = {"sigmoid", "hinge", "ipo", "kto_pair", "orpo", "simpo"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (!strcmp(val, names[i])) {
                sc->pref_loss = (enum ml_pref_loss)i;
                return ML_OK;
            }
        return ml_ty_failf(c, ML_ERR_INVALID,
                           _("'%s' must be sigmoid, hinge, ipo, kto_pair, orpo or simpo, got '%.60s'"), key, val);
    }
    case S_REF_MODEL: sc->ref_model = true; return ML_OK;
    case S_REWARD_MODEL: sc->reward_model = true; return ML_OK;
    case S_REF_QBIT: return get_qbit(c, key, val, &sc->ref_quant_bits);
    case S_REWARD_QBIT: return get_qbit(c, key, val, &sc->reward_quant_bits);
    case S_REWARD_TYPE: {
        static const struct choice types[] = {{"lora", ML_REWARD_LORA},
                                              {"oft", ML_REWARD_LORA},
                                              {"full", ML_REWARD_FULL},
                                              {"api", ML_REWARD_API},
                                              {NULL, 0}};
        if (!ml_ty_choose(val, types, &v))
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be lora, full or api, got '%.60s'"), key, val);
        sc->reward_type = (enum ml_reward_type)v;
        return ML_OK;
    }
    case S_MAX_NEW: return ml_ty_get_count(c, key, val, 1, MAX_CUTOFF, &sc->max_new_tokens);
    case S_STEPS_PER_GEN: return ml_ty_get_count(c, key, val, 1, MAX_ACCUM, &sc->steps_per_generation);
    case S_NUM_GEN:
        if (ml_ty_get_count(c, key, val, 1, 1u << 16, &v) != ML_OK)
            return ML_ERR_INVALID;
        sc->num_generations = (uint32_t)v;
        return ML_OK;
    case S_BETA:
        if (!ml_ty_get_real(val, &x) || x < 0)
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be a number of 0 or more, got '%.60s'"), key, val);
        sc->beta = x == 0 ? ML_BETA_ZERO : ML_BETA_NONZERO;
        return ML_OK;
    case S_PRECOMPUTE: return ml_ty_get_bool(c, key, val, &sc->precompute_ref);
    case S_USE_VLLM: return ml_ty_get_bool(c, key, val, &sc->use_vllm);
    case S_VLLM_MODE:
        if (strcmp(val, "server") && strcmp(val, "colocate"))
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be server or colocate, got '%.60s'"), key, val);
        sc->vllm_server = !strcmp(val, "server");
        return ML_OK;
    case S_VLLM_UTIL:
        if (!ml_ty_get_real(val, &x) || x <= 0 || x > 1)
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be a number above 0 and at most 1, got '%.60s'"), key,
                               val);
        sc->vllm_util_permille = (uint32_t)(x * 1000 + 0.5);
        return ML_OK;
    default: break;
    }
    return ML_OK;
}

/* The stack settings that are not LLaMA-Factory keys: versions, the head, the k-bit preparation,
 * the empty_cache interval, the trainer. */
static enum ml_status special_run(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    uint64_t v = 0;
    enum ml_status st = ML_OK;
    switch (d->id) {
    case S_BNB_VERSION:
    case S_PEFT_VERSION:
    case S_TRL_VERSION:
    case S_ACCEL_VERSION: {
        struct ml_diag vd;
        ml_diag_init(&vd);
        uint32_t *dst = d->id == S_BNB_VERSION    ? &t->versions.bitsandbytes
                        : d->id == S_PEFT_VERSION ? &t->versions.peft
                        : d->id == S_TRL_VERSION  ? &t->versions.trl
                                                  : &t->versions.accelerate;
        if (ml_version_parse(val, dst, &vd) != ML_OK)
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be a version like 0.43.2, got '%.60s'"), d->key, val);
        return ML_OK;
    }
    case S_HEAD: {
        static const struct choice heads[] = {
            {"causal_lm", ML_HEAD_CAUSAL_LM}, {"seq_cls", ML_HEAD_SEQ_CLS}, {NULL, 0}};
        if (!ml_ty_choose(val, heads, &v))
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be causal_lm or seq_cls, got '%.60s'"), d->key, val);
        t->head = (enum ml_head)v;
        return ML_OK;
    }
    case S_KBIT_PREPARE: {
        static const struct choice kbit[] = {
            {"none", ML_KBIT_NONE}, {"full", ML_KBIT_FULL}, {"trl_cast", ML_KBIT_TRL_CAST}, {NULL, 0}};
        if (!ml_ty_choose(val, kbit, &v))
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be none, full or trl_cast, got '%.60s'"), d->key, val);
        t->kbit_prepare = (enum ml_kbit_prepare)v;
        return ML_OK;
    }
    case S_TRAINER: {
        static const struct choice trainers[] = {
            {"hf", ML_TRAINER_HF}, {"ms-swift", ML_TRAINER_MS_SWIFT}, {"fsdp-qlora", ML_TRAINER_FSDP_QLORA}, {NULL, 0}};
        if (!ml_ty_choose(val, trainers, &v))
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be hf, ms-swift or fsdp-qlora, got '%.60s'"), d->key,
                               val);
        t->trainer = (enum ml_trainer)v;
        return ML_OK;
    }
    case S_LOAD_DTYPE: {
        static const struct choice dts[] = {{"compute", ML_LOAD_COMPUTE}, {"fp32", ML_LOAD_FP32},
                                            {"float32", ML_LOAD_FP32},    {"fp16", ML_LOAD_FP16},
                                            {"float16", ML_LOAD_FP16},    {NULL, 0}};
        if (!ml_ty_choose(val, dts, &v))
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be compute, fp16 or fp32, got '%.60s'"), d->key, val);
        t->load_dtype = (enum ml_load_dtype)v;
        return ML_OK;
    }
    case S_ACCEL_CONFIG:
        /* TrainingArguments takes a JSON string or a path here too: not read */
        ml_train_warn(t,
                      _("accelerator_config '%.60s' is text or a file memledger does not read; sync_each_batch "
                        "false assumed"),
                      val);
        return ML_OK;
    case S_TT_SHARDED: {
        /* torchtune's distributed recipes' _setup_model (full_finetune_distributed; LoRA since
         * torchtune b1aecb19e): a module named in the list is its own fully_shard unit
         * (docs/ledger.md TS1). The names it can take here: the two modules outside the layers
         * that hold parameters of size (tok_embeddings, output); a YAML list (flow or block, as
         * torchtune's configs write it), a list's text or a comma list (spaces or tabs between);
         * null / none / [] for none. */
        bool emb = false, head = false;
        const char *p = val;
        while (*p) {
            while (*p == ' ' || *p == '\t' || *p == ',' || *p == '[' || *p == ']' || *p == '\'' || *p == '"')
                p++;
            size_t n = strcspn(p, " \t,[]'\"");
            if (!n)
                continue;
            if (n == 14 && !strncmp(p, "tok_embeddings", n)) {
                emb = true;
            } else if (n == 6 && !strncmp(p, "output", n)) {
                head = true;
            } else if (!((n == 4 && (!strncmp(p, "null", n) || !strncmp(p, "none", n))))) {
                return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' takes tok_embeddings and output, got '%.*s'"), d->key,
                                   (int)(n > 60 ? 60 : n), p);
            }
            p += n;
        }
        t->tt_shard_embed = emb;
        t->tt_shard_head = head;
        return ML_OK;
    }
    case S_EMPTY_CACHE:
        st = ml_ty_get_count(c, d->key, val, 0, MAX_ACCUM, &v);
        if (st == ML_OK)
            t->empty_cache_steps = v;
        return st;
    default: return ML_OK;
    }
}

/* TRL's own keys (--framework trl; trl/trainer/sft_config.py and dpo_config.py max_length, the
 * sequence cap; model_config.py ModelConfig use_peft, lora_r, load_in_4bit / load_in_8bit,
 * attn_implementation), read as the LLaMA-Factory keys they stand for. Under another framework
 * max_length is a generation length (generating_args.py: no memory of its own here) and the
 * ModelConfig keys are not read, with a warning. */
enum ml_status ml_ty_special_trl(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    const char *key = d->key;
    if (t->framework != ML_FW_TRL) {
        if (strcmp(key, "max_length"))
            ml_train_warn(t, _("'%s' is a key of TRL's ModelConfig, read under --framework trl; ignored"), key);
        return ML_OK;
    }
    struct key_def as = *d;
    bool b = false;
    enum ml_status st;
    if (!strcmp(key, "max_length")) {
        as.id = S_CUTOFF;
        return special_data(c, &as, val);
    }
    if (!strcmp(key, "lora_r")) {
        uint64_t v;
        st = ml_ty_get_count(c, key, val, 1, MAX_RANK, &v);
        if (st == ML_OK)
            t->lora_rank = v;
        return st;
    }
    if (!strcmp(key, "attn_implementation")) {
        int v;
        if (!ml_spelling_find(ml_attn_spellings, val, ML_SP_HF, &v))
            return ml_ty_failf(c, ML_ERR_INVALID,
                               _("'%s' must be eager, sdpa, flash_attention_2 or flash_attention_3, got '%.60s'"), key,
                               val);
        as.id = S_FLASH;
        return special_kernels(c, &as, ml_spelling_name(ml_attn_spellings, v, ML_SP_LF));
    }
    st = ml_ty_get_bool(c, key, val, &b);
    if (st != ML_OK)
        return st;
    if (!strcmp(key, "use_peft")) {
        as.id = S_FT;
        return ml_ty_special_method(c, &as, b ? "lora" : "full");
    }
    if (!b) /* load_in_4bit / load_in_8bit: false */
        return ML_OK;
    as.id = S_QBIT;
    return ml_ty_special_method(c, &as, key[8] == '4' ? "4" : "8");
}

static enum ml_status apply_special(struct ctx *c, const struct key_def *d, const char *val, bool is_null)
{
    if (is_null)
        return special_null(c, d);
    switch (d->id) {
    case S_NONE: break;
    case S_MODEL: return ml_ty_copy_out(c, d->key, val, c->model_name, c->model_name_len);
    case S_STAGE:
    case S_FT:
    case S_LORA_TARGET:
    case S_ADDITIONAL:
    case S_LORA_DROPOUT:
    case S_FREEZE_LAYERS:
    case S_QBIT:
    case S_QMETHOD: return ml_ty_special_method(c, d, val);
    case S_SAVE_STEPS:
    case S_EVAL_STEPS:
    case S_CUTOFF:
    case S_PACKING:
    case S_NEAT:
    case S_EVAL_STRATEGY: return special_data(c, d, val);
    case S_BF16:
    case S_FP16:
    case S_PURE_BF16:
    case S_FLASH:
    case S_HF_GC:
    case S_DISABLE_GC:
    case S_UNSLOTH_GC:
    case S_REENTRANT_GC:
    case S_OPTIM:
    case S_GALORE:
    case S_DEEPSPEED:
    case S_FSDP:
    case S_FSDP_CONFIG: return special_kernels(c, d, val);
    case S_BNB_VERSION:
    case S_PEFT_VERSION:
    case S_TRL_VERSION:
    case S_ACCEL_VERSION:
    case S_ACCEL_CONFIG:
    case S_HEAD:
    case S_KBIT_PREPARE:
    case S_EMPTY_CACHE:
    case S_TRAINER:
    case S_LOAD_DTYPE:
    case S_TT_SHARDED: return special_run(c, d, val);
    case S_PREF_LOSS:
    case S_REF_MODEL:
    case S_REF_QBIT:
    case S_REWARD_MODEL:
    case S_REWARD_TYPE:
    case S_REWARD_QBIT:
    case S_MAX_NEW:
    case S_NUM_GEN:
    case S_STEPS_PER_GEN:
    case S_BETA:
    case S_PRECOMPUTE:
    case S_USE_VLLM:
    case S_VLLM_MODE:
    case S_VLLM_UTIL: return special_stage(c, d, val);
    case S_FREEZE_VISION:
    case S_FREEZE_PROJ:
    case S_FREEZE_LANG:
    case S_IMG_MAX:
    case S_IMG_MIN:
    case S_VID_MAX:
    case S_VID_MIN:
    case S_VID_FPS:
    case S_VID_MAXLEN:
    case S_IMAGES:
    case S_VIDEOS:
    case S_IMAGE_SIZE:
    case S_VIDEO_SECONDS: return ml_ty_special_vlm(c, d, val);
    case S_CP_SIZE:
    case S_V1_PEFT:
    case S_V1_QUANT:
    case S_V1_DIST:
    case S_V1_KERNEL:
    case S_V1_OPTIM:
    case S_V1_BATCHING:
    case S_V1_ACT_CKPT: return ml_ty_special_v1(c, d, val);
    case S_TRL: return ml_ty_special_trl(c, d, val);
    }
    return ML_OK;
}

/* Apply one scalar value to the key it belongs to (d NULL: an unknown key). */
enum ml_status ml_ty_apply_scalar(struct ctx *c, const struct key_def *d, const char *val, bool plain)
{
    bool is_null = ml_ty_yaml_null(val, plain);
    if (!d)
        return ML_OK;
    struct ml_train *t = c->t;
    uint64_t v;
    enum ml_status st;
    switch (d->kind) {
    case K_IGNORE: return ML_OK;
    case K_REFUSE:
        if (is_null || (d->quiet && (ml_ty_yaml_bool(val) == ml_ty_yaml_bool(d->quiet) || ml_ty_ieq(val, d->quiet))))
            return ML_OK;
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s': %s"), d->key, _(d->note));
    case K_WARN: {
        if (is_null)
            return ML_OK;
        bool quiet = d->quiet ? (ml_ty_ieq(val, d->quiet) ||
                                 (ml_ty_yaml_bool(d->quiet) >= 0 && ml_ty_yaml_bool(val) == ml_ty_yaml_bool(d->quiet)))
                              : ml_ty_is_off(val);
        if (!quiet && ++t->unmodelled)
            ml_train_warn(t, _("'%s' changes memory but is not modelled; %s"), d->key, _(d->note));
        return ML_OK;
    }
    case K_BOOL:
        if (is_null)
            return ML_OK;
        return ml_ty_get_bool(c, d->key, val, (bool *)((char *)t + d->off));
    case K_POS:
        if (is_null)
            return ML_OK;
        st = ml_ty_get_count(c, d->key, val, 1, d->max, &v);
        if (st == ML_OK)
            *(uint64_t *)((char *)t + d->off) = v;
        return st;
    case K_U32:
        if (is_null)
            return ML_OK;
        st = ml_ty_get_count(c, d->key, val, 0, d->max, &v);
        if (st == ML_OK)
            *(uint32_t *)((char *)t + d->off) = (uint32_t)v;
        return st;
    case K_SPECIAL: return apply_special(c, d, val, is_null);
    }
    return ML_OK;
}
