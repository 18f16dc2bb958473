/*
 * train_yaml_int.h - what the files of the LLaMA-Factory YAML reader share (lib/setup/train_yaml*.c,
 * yaml_walk.c): the key tables' row type, the reading state, the scalar converters, the special
 * keys and the event reader. Not a public header.
 *
 *   train_yaml_keys.c     the key tables (v0 and v1 schema) and their lookup
 *   train_yaml_value.c    the reading state and the scalar converters (YAML 1.1 values)
 *   train_yaml_special.c  the keys that take more than a field (method, data, kernels, stages, TRL)
 *   train_yaml_vlm.c      vision-language training
 *   train_yaml_v1.c       the v1 schema's plugin mappings
 *   train_yaml_events.c   the YAML event reader (libyaml), one document of keys
 *   train_yaml.c          resolution after the whole input, the file kinds, overrides, --set,
 *                         the public entry points
 *   yaml_walk.c           the reader for the other LLaMA-Factory configs (yaml_walk.h)
 */
#ifndef ML_TRAIN_YAML_INT_H
#define ML_TRAIN_YAML_INT_H

#include "memledger/train.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "i18n.h"
#include "memledger/edit.h"
#include "memledger/units.h"
#include "yaml_text.h"
#include "yaml_walk.h"

/* A training YAML is a few KiB; anything past this is not one. */
#define YAML_MAX_BYTES ((size_t)4 << 20)
#define YAML_MAX_DEPTH 32
#define KEY_MAX        128  /* longer keys cannot be known ones (still checked for duplicates) */
#define LIST_MAX       1024 /* a YAML list value joined into one string (lora_target: [...]) */
#define SEEN_MAX       512  /* keys remembered for the duplicate check */
#define UNKNOWN_MAX    8    /* unknown keys named in the warning */

/* Upper bounds that catch absurd values before they reach the arithmetic. */
#define MAX_BATCH  ((uint64_t)1 << 20)
#define MAX_ACCUM  ((uint64_t)1 << 24)
#define MAX_CUTOFF ((uint64_t)1 << 26)
#define MAX_RANK   ((uint64_t)1 << 20)

enum kind {
    K_IGNORE, /* known, no effect on memory */
    K_BOOL,   /* a bool field of struct ml_train */
    K_POS,    /* a uint64_t field, 1..max */
    K_U32,    /* a uint32_t field, 0..max */
    K_WARN,   /* changes memory but is not modelled: warn unless the value is off (or quiet) */
    K_REFUSE, /* changes memory in a way memledger cannot model: a one-line error naming the key,
                 unless the value is quiet (quiet NULL: whatever the value) */
    K_SPECIAL /* handled by apply_special() */
};

enum special {
    S_NONE,
    S_MODEL,
    S_STAGE,
    S_FT,
    S_LORA_TARGET,
    S_LORA_DROPOUT,
    S_ADDITIONAL,
    S_FREEZE_LAYERS,
    S_QBIT,
    S_QMETHOD,
    S_CUTOFF,
    S_PACKING,
    S_NEAT,
    S_EVAL_STRATEGY,
    S_BF16,
    S_FP16,
    S_PURE_BF16,
    S_FLASH,
    S_HF_GC,
    S_DISABLE_GC,
    S_UNSLOTH_GC,
    S_REENTRANT_GC,
    S_OPTIM,
    S_GALORE,
    S_DEEPSPEED,
    S_FSDP,
    S_FSDP_CONFIG,
    S_SAVE_STEPS,
    S_EVAL_STEPS,
    /* run settings of the framework stack (special_run; docs/train-config.md) */
    S_BNB_VERSION,
    S_PEFT_VERSION,
    S_TRL_VERSION,
    S_ACCEL_VERSION,
    S_ACCEL_CONFIG,
    S_HEAD,
    S_KBIT_PREPARE,
    S_EMPTY_CACHE,
    S_TRAINER,
    S_LOAD_DTYPE,
    S_TT_SHARDED,
    /* stages (special_stage) */
    S_PREF_LOSS,
    S_REF_MODEL,
    S_REF_QBIT,
    S_REWARD_MODEL,
    S_REWARD_TYPE,
    S_REWARD_QBIT,
    S_MAX_NEW,
    S_NUM_GEN,
    S_STEPS_PER_GEN,
    S_BETA,
    S_PRECOMPUTE,
    S_USE_VLLM,
    S_VLLM_MODE,
    S_VLLM_UTIL,
    /* context parallelism (v0 hyper_parallel_cp_size, v1 cp_size) */
    S_CP_SIZE,
    /* TRL's own keys under --framework trl (ml_ty_special_trl) */
    S_TRL,
    /* vision-language training (ml_ty_special_vlm) */
    S_FREEZE_VISION,
    S_FREEZE_PROJ,
    S_FREEZE_LANG,
    S_IMG_MAX,
    S_IMG_MIN,
    S_VID_MAX,
    S_VID_MIN,
    S_VID_FPS,
    S_VID_MAXLEN,
    S_IMAGES,
    S_VIDEOS,
    S_IMAGE_SIZE,
    S_VIDEO_SECONDS,
    /* the v1 schema (ml_ty_special_v1, the plugin mappings) */
    S_V1_PEFT,
    S_V1_QUANT,
    S_V1_DIST,
    S_V1_KERNEL,
    S_V1_OPTIM,
    S_V1_BATCHING,
    S_V1_ACT_CKPT
};

struct key_def {
    const char *key;
    enum kind kind;
    enum special id;   /* K_SPECIAL */
    size_t off;        /* K_BOOL, K_POS, K_U32: offsetof(struct ml_train, field) */
    uint64_t max;      /* K_POS, K_U32 */
    const char *note;  /* K_WARN: what the estimate leaves out */
    const char *quiet; /* K_WARN: a value that is the default and warns nothing (else: off) */
};

enum schema { SCHEMA_V0, SCHEMA_V1 };

enum ft { FT_FULL, FT_FREEZE, FT_LORA, FT_OFT };

/* Settings resolved after the whole input (the order of keys must not matter). */
struct pending {
    bool prec_touched, method_touched, gc_touched, pack_touched;
    bool bf16, fp16, pure_bf16;   /* the three switches as they stand */
    bool bf16_key, fp16_key;      /* set true by a key of this input (both: a contradiction) */
    uint32_t prec_line, prec_col; /* where the second of them was */
    enum ft ft;
    uint32_t quant_bits;
    uint32_t quant_line, quant_col;
    int packing; /* -1 unset (stage pt packs), 0, 1 */
    bool neat;
    uint64_t cutoff; /* 0: not given */
    bool hf_gc;      /* gradient_checkpointing: true (HF Trainer enables it too) */
    bool gc_disabled, unsloth_gc, reentrant_gc;
    bool galore;
    bool eval_on; /* eval_strategy other than "no" */
};

struct ctx {
    struct ml_train *t; /* the working copy */
    struct pending p;
    bool set_mode; /* one --set override rather than a file */
    const char *origin;
    struct ml_diag *diag;
    uint32_t line, col; /* position of what is being applied, 1-based (0: unknown) */
    char *model_name;
    size_t model_name_len;
    char *ds_path;
    size_t ds_path_len;
    enum schema schema;                       /* the file's schema (sniff_schema) */
    uint32_t n_keys, n_known;                 /* top-level keys read, and those a table knows */
    uint32_t n_unknown;                       /* keys neither LLaMA-Factory nor memledger knows */
    char unknown[UNKNOWN_MAX][KEY_MAX];       /* the first of them, for the warning */
    bool seen_train, seen_infer, seen_export; /* keys of a training, inference or export run */
    const struct ml_train_override *ov;       /* command-line overrides (ml_train_apply_yaml_with) */
    size_t n_ov;
    const char *ov_origin;
};

enum ml_status ml_ty_failf(struct ctx *c, enum ml_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One value of a key that takes one of a few words; a table ends with a NULL name. */
struct choice {
    const char *name;
    int value;
};

struct yp {
    yaml_parser_t parser;
    yaml_event_t ev;
    bool have;      /* ev holds an event to delete */
    uint32_t depth; /* open mappings and sequences */
    struct ctx *c;
    const char *data;
    size_t len;
};
/* train_yaml_keys.c */
const struct key_def *ml_ty_lookup(const char *key);
const struct key_def *ml_ty_lookup_in(enum schema sc, const char *key);
const char *ml_ty_near_key(enum schema sc, const char *key);

/* train_yaml_value.c */
bool ml_ty_choose(const char *val, const struct choice *tab, uint64_t *out);
enum ml_status ml_ty_copy_out(struct ctx *c, const char *key, const char *val, char *buf, size_t cap);
enum ml_status ml_ty_get_bool(struct ctx *c, const char *key, const char *val, bool *out);
enum ml_status ml_ty_get_count(struct ctx *c, const char *key, const char *val, uint64_t lo, uint64_t hi,
                               uint64_t *out);
bool ml_ty_get_real(const char *s, double *out);
bool ml_ty_ieq(const char *a, const char *b);
bool ml_ty_is_off(const char *s);
void ml_ty_pending_init(struct pending *p, const struct ml_train *t, bool set_mode);
int ml_ty_yaml_bool(const char *s);
bool ml_ty_yaml_null(const char *s, bool plain);

/* train_yaml_special.c */
enum ml_status ml_ty_apply_fsdp_config(struct ctx *c, const char *key, const char *val, bool is_null);
/* accelerator_config's key (a sub-key path "a.b"), its value: sync_each_batch read, others warned. */
enum ml_status ml_ty_apply_accel_config(struct ctx *c, const char *key, const char *val, bool is_null);
enum ml_status ml_ty_apply_scalar(struct ctx *c, const struct key_def *d, const char *val, bool plain);
enum ml_status ml_ty_special_method(struct ctx *c, const struct key_def *d, const char *val);
enum ml_status ml_ty_special_trl(struct ctx *c, const struct key_def *d, const char *val);

/* train_yaml_vlm.c */
enum ml_status ml_ty_special_vlm(struct ctx *c, const struct key_def *d, const char *val);

/* train_yaml_v1.c */
enum ml_status ml_ty_apply_v1_sub(struct ctx *c, const struct key_def *d, const char *k, const char *val, bool is_null);
enum ml_status ml_ty_special_v1(struct ctx *c, const struct key_def *d, const char *val);

/* train_yaml_events.c */
enum ml_status ml_ty_document_end(struct yp *y);
enum ml_status ml_ty_document_start(struct yp *y);
enum ml_status ml_ty_read_document(struct yp *y);
enum ml_status ml_ty_read_list(struct yp *y, const char *key, char sep, char *buf, size_t cap);
bool ml_ty_scalar_plain(const yaml_event_t *e);
const char *ml_ty_scalar_text(const yaml_event_t *e);
bool ml_ty_takes_mapping(const struct key_def *d);
enum ml_status ml_ty_yp_next(struct yp *y);
enum ml_status ml_ty_yp_skip(struct yp *y);
uint64_t ml_ty_hash_key(const char *s);

#endif /* ML_TRAIN_YAML_INT_H */
