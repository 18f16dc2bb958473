/*
 * catalog.h - the built-in model catalog, compiled into the binary.
 *
 * At build time tools/gen_catalog.c turns data/models/<name>.json and params.jsonl into a C
 * table (name, hub id, the exact and published parameter counts, and the config bytes); the
 * table is const data, so looking a model up reads no file. Names are case-insensitive and a
 * hub id ("Qwen/Qwen2.5-14B") is an alias of its entry.
 */
#ifndef ML_CATALOG_H
#define ML_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/buf.h"
#include "memledger/edit.h"
#include "memledger/status.h"

struct ml_catalog_entry {
    const char *name;            /* "qwen2.5-14b" */
    const char *hub_id;          /* "Qwen/Qwen2.5-14B" */
    uint64_t params;             /* exact unique parameter count from params.jsonl */
    const char *published;       /* the published figure as written in params.jsonl */
    const unsigned char *config; /* config.json bytes (not NUL-terminated) */
    size_t config_len;           /* their length */
    /* A published checkpoint of another row (data/models/variants.jsonl: an Instruct, AWQ, ...
     * release whose own config.json values were read); all NULL on a row of its own. */
    const char *base; /* the row its config starts from: "qwen2.5-7b" */
    const char
        *differs;     /* its keys that differ, with both values: "max_position_embeddings 32768 (qwen2.5-7b: 131072)" */
    const char *same; /* its keys read equal to the base's: "tie_word_embeddings, vocab_size" */
    const char *from_base; /* the serving keys its source does not give, the base's values used */
    const char *source;    /* where its values were read */
};

/* Number of entries. */
size_t ml_catalog_count(void);

/* Entry i (0 <= i < count), or NULL. Borrowed, static storage. */
const struct ml_catalog_entry *ml_catalog_get(size_t i);

/* Entry by name or hub id, case-insensitive; NULL if none. */
const struct ml_catalog_entry *ml_catalog_find(const char *name);

/*
 * Up to max entries whose names are closest to name (edit distance, then prefix), for
 * "did you mean" messages. Returns how many were written to out.
 */
size_t ml_catalog_suggest(const char *name, const struct ml_catalog_entry **out, size_t max);

/* Parse the entry's config into *arch (origin "<catalog:NAME>" in diagnostics). */
enum ml_status ml_catalog_arch(const struct ml_catalog_entry *e, struct ml_arch *arch, struct ml_diag *diag);

/* Weight format a model name states (its suffix), for the quantization the caller applies. */
enum ml_name_quant {
    ML_NAME_QUANT_NONE,
    ML_NAME_QUANT_FP8,  /* -FP8: fp8 e4m3 weights, 128 x 128 block scales */
    ML_NAME_QUANT_AWQ,  /* -AWQ: AutoAWQ 4-bit, group 128 */
    ML_NAME_QUANT_GPTQ, /* -GPTQ, -GPTQ-Int4, -GPTQ-Int8: GPTQ, group 128 */
    ML_NAME_QUANT_BNB4, /* -bnb-4bit: bitsandbytes NF4 (Unsloth's pre-quantized uploads) */
    ML_NAME_QUANT_BF16  /* -BF16: a 16-bit conversion of an fp8 release */
};

/* A model name resolved against the catalog. */
struct ml_name_match {
    const struct ml_catalog_entry *entry; /* the built-in entry, NULL when none */
    char note[1024];                      /* what the name said besides the entry, "" for an exact name */
    enum ml_name_quant quant;             /* the weight format the name states */
    uint32_t quant_bits;                  /* its bits (GPTQ-Int8: 8), 0 = the format's default */
    char served[256];                     /* the checkpoint a serving command loads: the hub id or path
                                           * given, the entry's hub id for its own name, else the name
                                           * under the entry's organisation (served_guessed) */
    bool served_guessed;
};

/*
 * Resolve a model name that is not a file on this machine (src/ checks that first): the
 * name or hub id exactly; else the last path component (a hub id's repository, a local path
 * that is absent: path_like, said in the note), its known suffixes stripped one by one from the
 * end (-Instruct, -Chat, -it, -Base, -hf, -Thinking, dates, -FP8, -AWQ, -GPTQ-Int4/Int8,
 * -bnb-4bit, ...: the table in catalog.c, each named in the note; -2507 is kept, for Qwen3's
 * 2507 rows with their own context), each stem tried in turn. Errors: ML_ERR_UNSUPPORTED for a
 * format memledger does not model (AQLM, GGUF, MLX: one line that says so), ML_ERR_NOTFOUND
 * with up to three near names.
 */
enum ml_status ml_catalog_resolve(const char *arg, bool path_like, struct ml_name_match *m, struct ml_diag *diag);

/* The weight format a name states, applied to an architecture read without one (its config's
 * quantization_config wins; -BF16 clears an fp8 release's). */
void ml_arch_apply_name_quant(struct ml_arch *a, enum ml_name_quant q, uint32_t bits);

/* The catalog's row for base quantized as the name quant states (Qwen's AWQ / GPTQ-Int4
 * checkpoints of Qwen2.5-72B pad intermediate_size): "<base>-instruct-awq" etc.; NULL if none. */
const struct ml_catalog_entry *ml_catalog_quant_variant(const struct ml_catalog_entry *base, enum ml_name_quant q,
                                                        uint32_t bits);

/* --quant awq/gptq on a built-in model read without a quantization (catalog_params, no
 * quantization_config) whose quantized checkpoint has its own shapes: that checkpoint's row
 * (ml_catalog_quant_variant), else NULL. */
struct ml_model_ref;
struct ml_infer;
const struct ml_catalog_entry *ml_catalog_serving_variant(const struct ml_model_ref *m, const struct ml_infer *s);

#endif /* ML_CATALOG_H */
