/*
 * settings.h - the training settings a command-line flag sets, one row each.
 *
 * A row names the setting once: its command-line flag and the member of struct ml_train_opts
 * (run.h) the flag's text is kept in, whether a flag over a file is tracked (the "... wins over
 * ..." warning and the report's "whose default" line), its type and unit, whose default it is
 * under each framework profile (the value: ml_train_defaults, lib/setup/train.c), its key in
 * each dialect that has it, and the setting `fit` writes for it (enum ml_setting, fit.h;
 * ML_SET_COUNT: none). Everything else is generated from these rows:
 *
 *   enum ml_tracked (train.h), the flag of each and the bytes compared to tell which input set it
 *   (lib/setup/tracked.c);
 *   the LLaMA-Factory YAML key map's rows of these settings (lib/setup/train_yaml_keys.c), the
 *   DeepSpeed keys of the micro batch and accumulation (lib/setup/train_json.c; ml_tracked_key);
 *   the members of struct ml_train_opts (run.h) that keep the flags' text;
 *   the getopt ids and option rows of the commands that share them (src/train_setup.h);
 *   the flags given, per tracked setting (lib/run/build.c);
 *   whose default each tracked setting is (ml_train_default_owner, lib/setup/train.c);
 *   the table in docs/train-config.md (tools/gen_settings_doc.c; the test check_settings_doc
 *   fails when it differs, or when a row's key is not the name fit writes for its setting).
 *
 * Columns of ML_SETTINGS(X):
 *   X(ID, TRACK, "flag", field, "type", "unit", OWNERS, YAML, YAML_V1, "ds", "fsdp", FIT, CMP)
 *   ID      ML_TK_ID when TRACK is TK (tracked); otherwise only a name
 *   TRACK   TK: a flag over a file warns and says which won; NOTK: not tracked
 *   flag    the long option, without "--" (takes a value)
 *   field   the member of struct ml_train_opts
 *   OWNERS  whose default it is under each profile, in enum ml_framework order (LLaMA-Factory, HF,
 *           LitGPT, torchtune, TRL): LF LLaMA-Factory, TA TrainingArguments, PEFT, TF
 *           transformers, TRL, LIT LitGPT, TT torchtune, OWN memledger's own assumption, NONE
 *           (a default that is "none": no owner is named)
 *   YAML    its keys in a training YAML (LLaMA-Factory's v0 schema, which also takes the
 *           TrainingArguments and TRL keys), each YK(DIALECTS, "key", HOW): DIALECTS a mask of
 *           ML_SD_LF (hparams/{model,data,finetuning}_args.py), _TA (training_args.py), _TRL
 *           (trl/trainer/model_config.py, sft_config.py); HOW the reader's rule
 *           (lib/setup/train_yaml_keys.c): POS(field, max) a whole number into a field,
 *           SPECIAL(S_...) the function that computes it (train_yaml_special.c). The YAML readers'
 *           key tables begin with these rows.
 *   YAML_V1 its keys in LLaMA-Factory's v1 schema (v1/config/{model,data,training}_args.py),
 *           YK(ML_SD_V1, ...) the same way
 *   ds      the DeepSpeed JSON path (deepspeed/runtime/zero/config.py, runtime/config.py)
 *   fsdp    the accelerate config key (accelerate/commands/config/cluster.py, fsdp_config)
 *   FIT     the setting `fit` writes (ML_SET_*, fit.h), ML_SET_COUNT for none
 *   CMP     a tracked setting's bytes in struct ml_train, to tell whether an input changed it
 *           (lib/setup/tracked.c): FIELD(member), SPAN(member, n) n members from it, or
 *           FUNC(fn) a function of its own; empty when not tracked
 * Empty where a dialect has no key ("" for a text column). A setting with several keys in a
 * dialect names them joined by " / ".
 *
 * Add a setting: one row here; its rule in docs/ledger.md if it changes bytes; a test
 * (docs/architecture.md, "Checklists").
 */
#ifndef ML_SETTINGS_H
#define ML_SETTINGS_H

/* clang-format off */
#define ML_SETTINGS(X)                                                                                                 \
    X(METHOD, TK, "method", method, "word", "", (LF, OWN, OWN, OWN, OWN),                                              \
      YK(ML_SD_LF, "finetuning_type", SPECIAL(S_FT)) YK(ML_SD_TRL, "use_peft", SPECIAL(S_TRL)),                        \
      YK(ML_SD_V1, "peft_config", SPECIAL(S_V1_PEFT)), "", "", ML_SET_COUNT, FIELD(method))                            \
    X(QBITS, TK, "quant-bits", qbits, "word", "bits", (NONE, NONE, NONE, NONE, NONE),                                  \
      YK(ML_SD_LF, "quantization_bit", SPECIAL(S_QBIT)) YK(ML_SD_TRL, "load_in_4bit", SPECIAL(S_TRL))                  \
      YK(ML_SD_TRL, "load_in_8bit", SPECIAL(S_TRL)),                                                                   \
      YK(ML_SD_V1, "quant_config", SPECIAL(S_V1_QUANT)), "", "", ML_SET_QUANT_BIT, FIELD(quant_bits))                  \
    X(RANK, TK, "lora-rank", rank, "integer", "", (LF, PEFT, LIT, TT, TRL),                                            \
      YK(ML_SD_LF, "lora_rank", POS(lora_rank, MAX_RANK)) YK(ML_SD_TRL, "lora_r", SPECIAL(S_TRL)),                     \
      /* v1: peft_config.r */, "", "", ML_SET_LORA_RANK, FIELD(lora_rank))                                             \
    X(LORA_TARGET, TK, "lora-target", target, "list", "", (LF, PEFT, LIT, OWN, PEFT),                                  \
      YK(ML_SD_LF, "lora_target", SPECIAL(S_LORA_TARGET)),                                                             \
      /* v1: peft_config.target_modules */, "", "", ML_SET_COUNT, FUNC(lora_differs))                                  \
    X(BATCH, TK, "batch", batch, "integer", "sequences", (TA, TA, LIT, TT, TA),                                        \
      YK(ML_SD_LF | ML_SD_TA, "per_device_train_batch_size", POS(micro_batch, MAX_BATCH)),                             \
      YK(ML_SD_V1, "micro_batch_size", POS(micro_batch, MAX_BATCH)),                                                   \
      "train_micro_batch_size_per_gpu", "", ML_SET_MICRO_BATCH, FIELD(micro_batch))                                    \
    X(SEQ, TK, "seq", seq, "integer", "tokens", (LF, OWN, OWN, OWN, TRL),                                              \
      YK(ML_SD_LF, "cutoff_len", SPECIAL(S_CUTOFF)) YK(ML_SD_TRL, "max_length", SPECIAL(S_TRL)),                       \
      YK(ML_SD_V1, "cutoff_len", SPECIAL(S_CUTOFF)), "", "", ML_SET_CUTOFF, FIELD(seq_len))                            \
    X(GA, TK, "grad-accum", ga, "integer", "micro-batches", (TA, TA, LIT, OWN, TA),                                    \
      YK(ML_SD_LF | ML_SD_TA, "gradient_accumulation_steps", POS(grad_accum, MAX_ACCUM)),                              \
      /* v1: global_batch_size */, "gradient_accumulation_steps", "", ML_SET_GRAD_ACCUM, FIELD(grad_accum))            \
    X(DTYPE, TK, "dtype", dtype, "word", "", (OWN, OWN, OWN, TT, TRL),                                                 \
      YK(ML_SD_LF | ML_SD_TA, "bf16", SPECIAL(S_BF16)) YK(ML_SD_LF | ML_SD_TA, "fp16", SPECIAL(S_FP16))                \
      YK(ML_SD_LF, "pure_bf16", SPECIAL(S_PURE_BF16)),                                                                 \
      YK(ML_SD_V1, "bf16", SPECIAL(S_BF16)), "bf16.enabled / fp16.enabled", "mixed_precision", ML_SET_COUNT,          \
      FIELD(precision))                                                                                                \
    X(OPTIM, TK, "optim", optim, "word", "", (TA, TA, LIT, TT, TA),                                                    \
      YK(ML_SD_LF | ML_SD_TA, "optim", SPECIAL(S_OPTIM)),                                                              \
      YK(ML_SD_V1, "optim_config", SPECIAL(S_V1_OPTIM)), "optimizer.type", "", ML_SET_OPTIM, FIELD(optim))             \
    X(GC, TK, "grad-ckpt", gc, "word", "", (LF, TA, LIT, TT, TRL),                                                     \
      YK(ML_SD_LF, "disable_gradient_checkpointing", SPECIAL(S_DISABLE_GC))                                            \
      YK(ML_SD_LF, "use_unsloth_gc", SPECIAL(S_UNSLOTH_GC)) YK(ML_SD_LF, "use_reentrant_gc", SPECIAL(S_REENTRANT_GC))  \
      YK(ML_SD_TA, "gradient_checkpointing", SPECIAL(S_HF_GC)),                                                        \
      YK(ML_SD_V1, "enable_activation_checkpointing", SPECIAL(S_V1_ACT_CKPT)), "",                                     \
      "fsdp_activation_checkpointing", ML_SET_GRAD_CKPT, FIELD(grad_ckpt))                                             \
    X(ATTN, TK, "attn", attn, "word", "", (TF, TF, LIT, TT, TF),                                                       \
      YK(ML_SD_LF, "flash_attn", SPECIAL(S_FLASH)) YK(ML_SD_TRL, "attn_implementation", SPECIAL(S_TRL)),               \
      YK(ML_SD_V1, "flash_attn", SPECIAL(S_FLASH)), "", "", ML_SET_FLASH_ATTN, FIELD(attn))                            \
    X(ZERO, TK, "zero", zero, "word", "stage", (NONE, NONE, NONE, NONE, NONE),                                         \
      YK(ML_SD_LF | ML_SD_TA, "deepspeed", SPECIAL(S_DEEPSPEED)),                                                      \
      /* v1: dist_config */, "zero_optimization.stage", "", ML_SET_ZERO_STAGE, FIELD(zero.stage))                      \
    X(OFFLOAD, TK, "offload", offload, "word", "", (NONE, NONE, NONE, NONE, NONE), , ,                                 \
      "zero_optimization.offload_optimizer.device / zero_optimization.offload_param.device",                           \
      "fsdp_offload_params", ML_SET_OFFLOAD_OPT, SPAN(zero.offload_optimizer, 2))                                      \
    X(FSDP, TK, "fsdp", fsdp, "word", "", (NONE, NONE, LIT, TT, NONE),                                                 \
      YK(ML_SD_LF | ML_SD_TA, "fsdp", SPECIAL(S_FSDP)) YK(ML_SD_TA, "fsdp_config", SPECIAL(S_FSDP_CONFIG)),            \
      /* v1: dist_config */, "", "fsdp_sharding_strategy", ML_SET_COUNT, FIELD(fsdp))                                  \
    X(TRANSFORMERS_VERSION, NOTK, "transformers-version", tfv, "version", "", (OWN, OWN, OWN, OWN, OWN), , ,           \
      "", "", ML_SET_COUNT, )                                                                                          \
    X(DEEPSPEED_VERSION, NOTK, "deepspeed-version", dsv, "version", "", (OWN, OWN, OWN, OWN, OWN), , ,                 \
      "", "", ML_SET_COUNT, )                                                                                          \
    X(TORCH_VERSION, NOTK, "torch-version", torchv, "version", "", (OWN, OWN, OWN, OWN, OWN), , ,                      \
      "", "", ML_SET_COUNT, )                                                                                          \
    X(TRL_VERSION, NOTK, "trl-version", trlv, "version", "", (OWN, OWN, OWN, OWN, OWN), , , "", "", ML_SET_COUNT, )
/* clang-format on */

/* Whose default a setting is (the OWNERS column). */
#define ML_OWN_LF   "LLaMA-Factory"
#define ML_OWN_TA   "TrainingArguments"
#define ML_OWN_PEFT "PEFT"
#define ML_OWN_TF   "transformers"
#define ML_OWN_TRL  "TRL"
#define ML_OWN_LIT  "LitGPT"
#define ML_OWN_TT   "torchtune"
#define ML_OWN_OWN  "memledger"
#define ML_OWN_NONE NULL
#define ML_SETTING_OWNERS(a, b, c, d, e)                                                                               \
    {                                                                                                                  \
        ML_OWN_##a, ML_OWN_##b, ML_OWN_##c, ML_OWN_##d, ML_OWN_##e                                                     \
    }

/* Expand only the tracked rows (TRACK TK): ML_SETTING_IF_##TRACK(expansion). */
#define ML_SETTING_IF_TK(...)   __VA_ARGS__
#define ML_SETTING_IF_NOTK(...) /* not tracked */
#define ML_SETTING_TRACKED_TK   true
#define ML_SETTING_TRACKED_NOTK false

/* The dialects of a YAML key (the YK entries' mask). */
#define ML_SD_LF  1u
#define ML_SD_TA  2u
#define ML_SD_TRL 4u
#define ML_SD_V1  8u

#include <stdbool.h>
#include <stddef.h>

/* One row of ML_SETTINGS as data, for what reads the table rather than compiling it (the docs'
 * table, tests). Keys are "" where the dialect has none. */
struct ml_setting_row {
    const char *id;       /* "RANK" */
    bool tracked;         /* TRACK is TK */
    const char *flag;     /* "lora-rank" */
    const char *type;     /* "integer", "word", "list", "version" */
    const char *unit;     /* "tokens", "" */
    const char *owner[5]; /* whose default, per framework profile (NULL: none) */
    struct ml_setting_key {
        const char *key;   /* NULL: no more */
        unsigned dialects; /* ML_SD_* */
    } yaml[8];             /* the YAML and YAML_V1 columns */
    const char *ds, *fsdp;
    int fit; /* enum ml_setting (fit.h); ML_SET_COUNT: none */
};

/* The rows, in table order; *n their number (lib/setup/settings.c). */
const struct ml_setting_row *ml_setting_rows(size_t *n);

/* ---- spellings: every name a value of a setting goes by, written once -------------------------- */

/* The dialects a spelling belongs to (a mask). */
#define ML_SP_FLAG 1u /* memledger's flag word (--optim, --attn, --dtype): the value's name */
#define ML_SP_LF   2u /* a LLaMA-Factory v0 YAML value (flash_attn: fa2) */
#define ML_SP_V1   4u /* a LLaMA-Factory v1 schema value (flash_attn: flash_attention_2) */
#define ML_SP_HF   8u /* a transformers value (TrainingArguments optim, attn_implementation) */

/* One spelling of a value (an enum of train.h); a table ends with a NULL name. The first row of a
 * value in a dialect is its name there. */
struct ml_spelling {
    const char *name;
    int value;
    unsigned dialects;
};

/* The spellings of enum ml_optim (transformers training_args.py OptimizerNames), enum ml_attn
 * (LLaMA-Factory model_args.py flash_attn, v1 utils/types.py AttentionFunction, transformers
 * attn_implementation), enum ml_precision, enum ml_method and enum ml_grad_ckpt
 * (lib/setup/settings.c). */
extern const struct ml_spelling ml_optim_spellings[];
extern const struct ml_spelling ml_attn_spellings[];
extern const struct ml_spelling ml_precision_spellings[];
extern const struct ml_spelling ml_method_spellings[];
extern const struct ml_spelling ml_grad_ckpt_spellings[];

/* value's first spelling in dialect d (NULL: none). */
const char *ml_spelling_name(const struct ml_spelling *tab, int value, unsigned d);

/* The value name spells in dialect d: true and *value, or false. */
bool ml_spelling_find(const struct ml_spelling *tab, const char *name, unsigned d, int *value);

/* The names of values 0, 1, ... in dialect d into words (at most cap): how many. */
int ml_spelling_words(const struct ml_spelling *tab, unsigned d, const char **words, int cap);

#endif /* ML_SETTINGS_H */
