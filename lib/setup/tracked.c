/*
 * tracked.c - the training settings a command-line flag sets, compared and named, so the command
 * line can say which input (the YAML, the DeepSpeed file, --set, a flag) set each one and which won
 * (src/train_setup.c; include/memledger/train.h "Tracked settings").
 */
#include "memledger/train.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static bool lora_differs(const struct ml_train *a, const struct ml_train *b)
{
    const struct ml_lora_targets *x = &a->lora_targets, *y = &b->lora_targets;
    if (x->all != y->all || x->n != y->n)
        return true;
    for (uint32_t i = 0; i < x->n; i++)
        if (strcmp(x->names[i], y->names[i]))
            return true;
    return false;
}

static void name_lora(const struct ml_train *t, char *out, size_t n)
{
    const struct ml_lora_targets *x = &t->lora_targets;
    (void)snprintf(out, n, "%s", x->all ? "all" : "");
    for (uint32_t i = 0; i < x->n; i++) {
        size_t l = strlen(out);
        (void)snprintf(out + l, n - l, "%s%s", l ? "," : "", x->names[i]);
    }
}

static void name_offload(const struct ml_train *t, char *out, size_t n)
{
    const struct ml_zero *z = &t->zero;
    (void)snprintf(out, n, "offload %s",
                   z->offload_optimizer && z->offload_param ? "all"
                   : z->offload_optimizer                   ? "optimizer"
                   : z->offload_param                       ? "param"
                                                            : "none");
}

/* Each tracked setting's bytes in struct ml_train, unless it has its own test: the CMP column of
 * its row of ML_SETTINGS (settings.h). */
#define FIELD(f)                                                                                                       \
    {                                                                                                                  \
        offsetof(struct ml_train, f), sizeof(((struct ml_train *)0)->f), NULL                                          \
    }
#define SPAN(f, n)                                                                                                     \
    {                                                                                                                  \
        offsetof(struct ml_train, f), (n) * sizeof(((struct ml_train *)0)->f), NULL                                    \
    }
#define FUNC(fn)                                                                                                       \
    {                                                                                                                  \
        0, 0, fn                                                                                                       \
    }
#define CMP(id, track, flag, field, type, unit, owners, yaml, yaml_v1, ds, fsdp, fit, cmp)                             \
    ML_SETTING_IF_##track([ML_TK_##id] = cmp, )
static const struct tracked {
    size_t off, size;
    bool (*differs)(const struct ml_train *a, const struct ml_train *b);
} tracked[ML_TK_COUNT] = {ML_SETTINGS(CMP)};
#undef CMP

bool ml_tracked_differs(enum ml_tracked k, const struct ml_train *a, const struct ml_train *b)
{
    if (tracked[k].differs)
        return tracked[k].differs(a, b);
    return memcmp((const char *)a + tracked[k].off, (const char *)b + tracked[k].off, tracked[k].size) != 0;
}

void ml_tracked_value(const struct ml_train *t, enum ml_tracked k, char *out, size_t n)
{
    switch (k) {
    case ML_TK_METHOD: (void)snprintf(out, n, "%s", ml_method_name(t->method)); break;
    case ML_TK_QBITS: (void)snprintf(out, n, "quantization_bit %u", t->quant_bits); break;
    case ML_TK_RANK: (void)snprintf(out, n, "lora_rank %llu", (unsigned long long)t->lora_rank); break;
    case ML_TK_LORA_TARGET: name_lora(t, out, n); break;
    case ML_TK_BATCH: (void)snprintf(out, n, "batch %llu", (unsigned long long)t->micro_batch); break;
    case ML_TK_SEQ: (void)snprintf(out, n, "cutoff_len %llu", (unsigned long long)t->seq_len); break;
    case ML_TK_GA: (void)snprintf(out, n, "gradient_accumulation_steps %llu", (unsigned long long)t->grad_accum); break;
    case ML_TK_DTYPE: (void)snprintf(out, n, "%s", ml_precision_name(t->precision)); break;
    case ML_TK_OPTIM: (void)snprintf(out, n, "%s", ml_optim_name(t->optim)); break;
    case ML_TK_GC: (void)snprintf(out, n, "grad-ckpt %s", ml_grad_ckpt_name(t->grad_ckpt)); break;
    case ML_TK_ATTN: (void)snprintf(out, n, "%s attention", ml_attn_name(t->attn)); break;
    case ML_TK_ZERO: (void)snprintf(out, n, "ZeRO-%u", t->zero.stage); break;
    case ML_TK_OFFLOAD: name_offload(t, out, n); break;
    case ML_TK_FSDP:
    case ML_TK_COUNT: (void)snprintf(out, n, "fsdp %d", (int)t->fsdp); break;
    }
}

void ml_tracked_perturb(struct ml_train *t)
{
    t->method = t->method == ML_METHOD_FULL ? ML_METHOD_LORA : ML_METHOD_FULL;
    /* quant_bits is left: any value would turn a LoRA YAML into QLoRA (compared by value). */
    t->lora_rank += 1;
    t->lora_targets.all = !t->lora_targets.all;
    t->lora_targets.n = 0;
    t->micro_batch += 1;
    t->seq_len += 1;
    t->grad_accum += 1;
    t->precision = t->precision == ML_PREC_FP32 ? ML_PREC_BF16 : ML_PREC_FP32;
    t->optim = t->optim == ML_OPTIM_SGD ? ML_OPTIM_ADAMW_TORCH : ML_OPTIM_SGD;
    t->grad_ckpt = t->grad_ckpt == ML_GC_OFF ? ML_GC_REENTRANT : ML_GC_OFF;
    t->attn = t->attn == ML_ATTN_EAGER ? ML_ATTN_SDPA : ML_ATTN_EAGER;
    t->zero.stage = t->zero.stage == 1 ? 2 : 1;
    t->zero.offload_optimizer = !t->zero.offload_optimizer;
    t->zero.offload_param = !t->zero.offload_param;
    t->fsdp = t->fsdp == ML_FSDP_NONE ? ML_FSDP_FULL_SHARD : ML_FSDP_NONE;
}

const char *ml_tracked_flag(enum ml_tracked k)
{
#define FLAG(id, track, flag, ...) ML_SETTING_IF_##track([ML_TK_##id] = "--" flag, )
    static const char *const flags[ML_TK_COUNT] = {ML_SETTINGS(FLAG)};
#undef FLAG
    return (unsigned)k < ML_TK_COUNT ? flags[k] : "";
}
