/*
 * train_yaml_v1.c - LLaMA-Factory's v1 schema: its scalar keys and the plugin mappings
 * (peft_config, quant_config, dist_config, kernel_config, optim_config, ...).
 */
#include "train_yaml_int.h"

/* ---- the v1 schema's keys and plugin mappings ---------------------------------------------- */

/* Scalar v1 keys (and the plugin mappings given as a scalar: only null is one). */
enum ml_status ml_ty_special_v1(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    uint64_t v = 0;
    bool b = false;
    enum ml_status st;
    switch (d->id) {
    case S_CP_SIZE:
        st = ml_ty_get_count(c, d->key, val, 1, 4096, &v);
        if (st == ML_OK)
            t->cp_size = (uint32_t)v;
        return st;
    case S_V1_ACT_CKPT:
        /* v1 core/base_trainer.py: gradient_checkpointing_enable({"use_reentrant": False}). */
        st = ml_ty_get_bool(c, d->key, val, &b);
        p->gc_touched = true;
        p->gc_disabled = !b;
        p->reentrant_gc = false;
        return st;
    case S_V1_BATCHING:
        /* v1 config/arg_utils.py BatchingStrategy; padding-free batches are packed sequences that
         * never attend across samples (flash-attention varlen), as neat_packing does. */
        p->pack_touched = true;
        if (!strcmp(val, "normal")) {
            p->packing = 0;
            p->neat = false;
        } else if (!strcmp(val, "padding_free") || !strcmp(val, "dynamic_padding_free")) {
            p->packing = 1;
            p->neat = true;
        } else if (!strcmp(val, "dynamic_batching")) {
            p->packing = 0;
            ml_train_warn(t, _("'batching_strategy' dynamic_batching fills batches up to a token budget; "
                               "estimated as micro_batch_size sequences of cutoff_len"));
        } else {
            return ml_ty_failf(c, ML_ERR_INVALID,
                               _("'%s' must be normal, padding_free, dynamic_batching or "
                                 "dynamic_padding_free, got '%.60s'"),
                               d->key, val);
        }
        if (!strncmp(val, "dynamic_", 8) && strcmp(val, "dynamic_batching"))
            ml_train_warn(t,
                          _("'batching_strategy' %s fills batches up to a token budget; estimated as "
                            "micro_batch_size packs of cutoff_len"),
                          val);
        return ML_OK;
    default:
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be a mapping with a name (or null), got '%.60s'"), d->key,
                           val);
    }
}

/* peft_config.KEY (v1 plugins/model_plugins/peft.py LoraParams, FreezeParams). */
static enum ml_status v1_peft(struct ctx *c, const char *full, const char *k, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    struct key_def alias = {full, K_SPECIAL, S_NONE, 0, 0, NULL, NULL};
    if (!strcmp(k, "name")) {
        p->method_touched = true;
        if (!strcmp(val, "lora")) {
            p->ft = FT_LORA;
            t->lora_dropout = true; /* LoraParams.lora_dropout = 0.05 */
        } else if (!strcmp(val, "freeze")) {
            p->ft = FT_FREEZE;
        } else {
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be lora or freeze, got '%.60s'"), full, val);
        }
        return ML_OK;
    }
    if (!strcmp(k, "r")) {
        uint64_t v;
        enum ml_status st = ml_ty_get_count(c, full, val, 1, MAX_RANK, &v);
        if (st == ML_OK)
            t->lora_rank = v;
        return st;
    }
    alias.id = !strcmp(k, "lora_dropout")              ? S_LORA_DROPOUT
               : !strcmp(k, "target_modules")          ? S_LORA_TARGET
               : !strcmp(k, "modules_to_save")         ? S_ADDITIONAL
               : !strcmp(k, "freeze_trainable_layers") ? S_FREEZE_LAYERS
                                                       : S_NONE;
    if (alias.id != S_NONE)
        return ml_ty_special_method(c, &alias, val);
    if (!strcmp(k, "export_dir"))
        c->seen_export = true; /* llamafactory-cli merge (v1 plugins/model_plugins/peft.py) */
    if (!strcmp(k, "use_dora") || !strcmp(k, "freeze_extra_modules")) {
        if (!ml_ty_is_off(val) && ++t->unmodelled)
            ml_train_warn(t, _("'%s' changes memory but is not modelled; %s"), full,
                          k[0] == 'u' ? _("DoRA adds a magnitude vector and a full-width weight norm per adapted layer")
                                      : _("extra trainable modules outside the layers are not counted"));
        return ML_OK;
    }
    static const char *const ignored[] = {"lora_alpha",
                                          "use_rslora",
                                          "adapter_name_or_path",
                                          "export_dir",
                                          "export_size",
                                          "export_hub_model_id",
                                          "infer_dtype",
                                          "export_legacy_format",
                                          "freeze_trainable_modules",
                                          "cast_trainable_params_to_fp32"};
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
        if (!strcmp(k, ignored[i]))
            return ML_OK;
    ml_train_warn(t, _("'%s' is not a key of the v1 PEFT plugins; ignored"), full);
    return ML_OK;
}

/* dist_config.KEY (v1 plugins/trainer_plugins/distributed/{fsdp2,deepspeed,fsdpturbo}.py). */
static enum ml_status v1_dist(struct ctx *c, const char *full, const char *k, const char *val)
{
    struct ml_train *t = c->t;
    if (!strcmp(k, "name")) {
        if (!strcmp(val, "fsdp2")) {
            t->fsdp = ML_FSDP_FULL_SHARD;
            t->fsdp_version = 2;
            t->deepspeed = false;
        } else if (!strcmp(val, "deepspeed")) {
            t->fsdp = ML_FSDP_NONE;
        } else if (!strcmp(val, "fsdpturbo")) {
            return ml_ty_failf(c, ML_ERR_INVALID,
                               _("'%s' fsdpturbo (FSDP with expert parallelism, ep_size) is not "
                                 "modelled; fsdp2 and deepspeed are"),
                               full);
        } else {
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be fsdp2, deepspeed or fsdpturbo, got '%.60s'"), full,
                               val);
        }
        return ML_OK;
    }
    if (!strcmp(k, "config_file")) {
        enum ml_status st = ml_ty_copy_out(c, full, val, c->ds_path, c->ds_path_len);
        if (st == ML_OK)
            t->deepspeed = val[0] != '\0';
        return st;
    }
    if (!strcmp(k, "offload_params"))
        return ml_ty_get_bool(c, full, val, &t->fsdp_offload);
    if (!strcmp(k, "reshard_after_forward")) {
        bool b = true;
        enum ml_status st = ml_ty_get_bool(c, full, val, &b);
        if (st == ML_OK && !b && t->fsdp != ML_FSDP_NONE)
            t->fsdp = ML_FSDP_SHARD_GRAD_OP;
        return st;
    }
    return ML_OK; /* dcp_path, pin_memory, ep_size, ep_dispatcher: no effect modelled here */
}

/* quant_config, kernel_config, optim_config: KEY (v1 quantization.py, kernels, optimizers). */
static enum ml_status v1_other(struct ctx *c, enum special id, const char *full, const char *k, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    if (id == S_V1_QUANT) {
        if (!strcmp(k, "name")) {
            if (strcmp(val, "bnb") && strcmp(val, "auto"))
                ml_train_warn(t, _("'%s' %.40s: modelled as bitsandbytes"), full, val);
            if (!p->quant_bits)
                p->quant_bits = 4; /* quantization.py: "default to 4-bit quantization" */
            p->quant_line = c->line;
            p->quant_col = c->col;
            p->method_touched = true;
            return ML_OK;
        }
        if (!strcmp(k, "quantization_bit")) {
            struct key_def qd = {full, K_SPECIAL, S_QBIT, 0, 0, NULL, NULL};
            return ml_ty_special_method(c, &qd, val);
        }
        return ML_OK;
    }
    if (id == S_V1_KERNEL) {
        if (!strcmp(k, "name") && strstr(val, "liger_kernel"))
            t->liger_kernel = true;
        return ML_OK;
    }
    if (!strcmp(k, "name") && strcmp(val, "adamw") && strcmp(val, "adamw_torch"))
        ml_train_warn(t, _("'%s' %.40s changes memory but is not modelled; estimated with %s"), full, val,
                      ml_optim_name(t->optim));
    return ML_OK;
}

/* One KEY: VALUE inside a v1 plugin mapping (d: the mapping's key). */
enum ml_status ml_ty_apply_v1_sub(struct ctx *c, const struct key_def *d, const char *k, const char *val, bool is_null)
{
    char full[2 * KEY_MAX];
    (void)snprintf(full, sizeof(full), "%s.%s", d->key, k);
    if (is_null)
        return ML_OK;
    switch (d->id) {
    case S_V1_PEFT: return v1_peft(c, full, k, val);
    case S_V1_DIST: return v1_dist(c, full, k, val);
    default: return v1_other(c, d->id, full, k, val);
    }
}

/* A quantization bit of a reference or reward model: 4 or 8. */
