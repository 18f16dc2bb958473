/*
 * settings.c - the rows of ML_SETTINGS (memledger/settings.h) as data: what reads the table
 * rather than compiling it (the table in docs/train-config.md, tools/gen_settings_doc.c; tests).
 */
#include "memledger/settings.h"

#include <string.h>

#include "memledger/fit.h"

#define YK(dialects, key, how) {key, dialects},
#define ROW(id, track, flag, field, type, unit, owners, yaml, yaml_v1, ds, fsdp, fit, cmp)                             \
    {#id,                                                                                                              \
     ML_SETTING_TRACKED_##track,                                                                                       \
     flag,                                                                                                             \
     type,                                                                                                             \
     unit,                                                                                                             \
     ML_SETTING_OWNERS owners,                                                                                         \
     {yaml yaml_v1{NULL, 0}},                                                                                          \
     ds,                                                                                                               \
     fsdp,                                                                                                             \
     (int)(fit)},

static const struct ml_setting_row rows[] = {ML_SETTINGS(ROW)};

const struct ml_setting_row *ml_setting_rows(size_t *n)
{
    *n = sizeof(rows) / sizeof(rows[0]);
    return rows;
}

const char *ml_tracked_key(enum ml_tracked k, unsigned dialects)
{
    int tk = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (!rows[i].tracked || tk++ != (int)k)
            continue;
        for (int j = 0; rows[i].yaml[j].key; j++)
            if (rows[i].yaml[j].dialects & dialects)
                return rows[i].yaml[j].key;
        return NULL;
    }
    return NULL;
}

#define FLAG ML_SP_FLAG
#define LF   ML_SP_LF
#define V1   ML_SP_V1
#define HF   ML_SP_HF

/* transformers training_args.py OptimizerNames; memledger models each family by its first name
 * (the GaLore variants as GaLore AdamW, apex's fused AdamW as torch's). */
const struct ml_spelling ml_optim_spellings[] = {
    {"adamw_torch", ML_OPTIM_ADAMW_TORCH, FLAG | HF},
    {"adamw_hf", ML_OPTIM_ADAMW_TORCH, HF},
    {"adamw_torch_fused", ML_OPTIM_ADAMW_TORCH_FUSED, FLAG | HF},
    {"adamw_apex_fused", ML_OPTIM_ADAMW_TORCH_FUSED, HF},
    {"adamw_8bit", ML_OPTIM_ADAMW_8BIT, FLAG | HF},
    {"adamw_bnb_8bit", ML_OPTIM_ADAMW_8BIT, HF},
    {"paged_adamw_8bit", ML_OPTIM_PAGED_ADAMW_8BIT, FLAG | HF},
    {"paged_adamw_32bit", ML_OPTIM_PAGED_ADAMW_32BIT, FLAG | HF},
    {"adafactor", ML_OPTIM_ADAFACTOR, FLAG | HF},
    {"sgd", ML_OPTIM_SGD, FLAG | HF},
    {"galore_adamw", ML_OPTIM_GALORE_ADAMW, FLAG | HF},
    {"galore_adamw_8bit", ML_OPTIM_GALORE_ADAMW, HF},
    {"galore_adafactor", ML_OPTIM_GALORE_ADAMW, HF},
    {"galore_adamw_layerwise", ML_OPTIM_GALORE_ADAMW, HF},
    {"galore_adamw_8bit_layerwise", ML_OPTIM_GALORE_ADAMW, HF},
    {"galore_adafactor_layerwise", ML_OPTIM_GALORE_ADAMW, HF},
    {NULL, 0, 0},
};

/* LLaMA-Factory v0 flash_attn (auto: transformers' choice, sdpa on torch >= 2.1.1; fa3 runs as a
 * flash kernel), v1 AttentionFunction, transformers / TRL attn_implementation. */
const struct ml_spelling ml_attn_spellings[] = {
    {"eager", ML_ATTN_EAGER, FLAG | V1 | HF},
    {"sdpa", ML_ATTN_SDPA, FLAG | LF | V1 | HF},
    {"flash", ML_ATTN_FLASH, FLAG},
    {"disabled", ML_ATTN_EAGER, LF},
    {"auto", ML_ATTN_SDPA, LF},
    {"fa2", ML_ATTN_FLASH, LF},
    {"fa3", ML_ATTN_FLASH, LF},
    {"flash_attention_2", ML_ATTN_FLASH, V1 | HF},
    {"flash_attention_3", ML_ATTN_FLASH, HF},
    {NULL, 0, 0},
};

/* memledger's training methods and checkpointing modes (train.h enum ml_method, enum ml_grad_ckpt). */
const struct ml_spelling ml_method_spellings[] = {
    {"full", ML_METHOD_FULL, FLAG},
    {"freeze", ML_METHOD_FREEZE, FLAG},
    {"lora", ML_METHOD_LORA, FLAG},
    {"qlora", ML_METHOD_QLORA, FLAG},
    {NULL, 0, 0},
};

const struct ml_spelling ml_grad_ckpt_spellings[] = {
    {"off", ML_GC_OFF, FLAG},
    {"on", ML_GC_REENTRANT, FLAG},
    {"non-reentrant", ML_GC_NON_REENTRANT, FLAG},
    {"unsloth", ML_GC_UNSLOTH, FLAG},
    {NULL, 0, 0},
};

/* memledger's precision policies (train.h enum ml_precision). */
const struct ml_spelling ml_precision_spellings[] = {
    {"bf16", ML_PREC_BF16, FLAG},
    {"fp16", ML_PREC_FP16, FLAG},
    {"pure_bf16", ML_PREC_PURE_BF16, FLAG},
    {"fp32", ML_PREC_FP32, FLAG},
    {NULL, 0, 0},
};

const char *ml_spelling_name(const struct ml_spelling *tab, int value, unsigned d)
{
    for (; tab->name; tab++)
        if (tab->value == value && (tab->dialects & d))
            return tab->name;
    return NULL;
}

bool ml_spelling_find(const struct ml_spelling *tab, const char *name, unsigned d, int *value)
{
    for (; tab->name; tab++)
        if ((tab->dialects & d) && !strcmp(tab->name, name)) {
            *value = tab->value;
            return true;
        }
    return false;
}

int ml_spelling_words(const struct ml_spelling *tab, unsigned d, const char **words, int cap)
{
    int n = 0;
    while (n < cap && (words[n] = ml_spelling_name(tab, n, d)))
        n++;
    return n;
}
