/*
 * infer.h - inference and serving: the settings, the KV cache, and the serving engines' budgets.
 *
 * ml_ledger_infer fills the same struct ml_ledger as training (components, phases, the three
 * figures, verdict) plus struct ml_serve: KV bytes per token, the KV pool, tokens, blocks,
 * concurrency, the largest max_model_len that fits, and the start-up error the engine would
 * raise. Pure: structs in, numbers out. docs/cli/infer.md lists every rule and its source.
 */
#ifndef ML_INFER_H
#define ML_INFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/buf.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/status.h"
#include "memledger/train.h"

enum ml_engine {
    ML_ENGINE_HF,    /* transformers generate() */
    ML_ENGINE_VLLM,  /* vLLM (V1 engine from 0.7; the V0 budget before) */
    ML_ENGINE_SGLANG /* SGLang (mem_fraction_static) */
};

enum ml_quant {
    ML_QUANT_NONE,
    ML_QUANT_INT8, /* bitsandbytes LLM.int8 (or torchao int8 weight-only): 1 B + row scales */
    ML_QUANT_NF4,  /* bitsandbytes NF4: 0.5 B + absmax (double quant optional) */
    ML_QUANT_FP4,  /* bitsandbytes FP4: as NF4 */
    ML_QUANT_GPTQ, /* 4-bit packed + fp16 scale and 4-bit zero per group */
    ML_QUANT_AWQ,  /* as GPTQ */
    ML_QUANT_FP8,  /* 1 B per weight + per-tensor scales */
    ML_QUANT_INT4, /* torchao int4 weight-only: 0.5 B + bf16 scale and zero per group */
    ML_QUANT_MXFP4 /* MXFP4 experts (gpt-oss): 0.5 B + an E8M0 scale per 32 */
};

enum ml_kv_dtype { ML_KV_AUTO, ML_KV_FP16, ML_KV_BF16, ML_KV_FP8 };

struct ml_infer {
    enum ml_engine engine;
    enum ml_precision precision; /* activation / unquantized weight dtype: bf16, fp16 or fp32 */
    enum ml_quant quant;
    uint32_t group_size; /* GPTQ/AWQ/int4 group (default 128; torchao int4 64) */
    uint32_t quant_bits; /* GPTQ bits (--quant-bits; 0 = 4) */
    bool double_quant;   /* NF4 double quantization */
    enum ml_kv_dtype kv_dtype;
    uint64_t batch;                        /* sequences decoded together (HF) */
    uint64_t context;                      /* prompt + generated tokens per sequence (HF); 0 = max_model_len */
    bool static_cache;                     /* HF StaticCache: allocated for the full context up front */
    enum ml_attn attn;                     /* HF prefill attention (eager materialises s^2 scores) */
    uint32_t tp, pp;                       /* tensor / pipeline parallel sizes */
    uint32_t gpu_util_permille;            /* vLLM gpu_memory_utilization x 1000 (default 900) */
    uint64_t max_model_len;                /* 0 = the model's max_position_embeddings */
    uint64_t max_num_seqs;                 /* 0 = vLLM's default for the GPU and usage */
    uint64_t max_num_batched_tokens;       /* 0 = vLLM's default for the GPU and usage */
    bool offline;                          /* vLLM LLM class (offline) defaults instead of `vllm serve` */
    bool enforce_eager;                    /* no CUDA graphs */
    uint32_t mem_fraction_static_permille; /* SGLang; 0 = its default by tp (ml_sglang_fraction) */
    uint32_t block_size;                   /* vLLM paged block size (16) */
    uint32_t vllm_version;                 /* major*10000 + minor*100 + patch (default 0.19.0) */
    uint32_t transformers_version;         /* HF generate logits (last position only from 4.45) */
    bool tp_set;                           /* --tp given explicitly */
    bool dequantize;                       /* load a quantized checkpoint dequantized to --dtype (transformers'
                                              Mxfp4Config / FineGrainedFP8Config dequantize=True) */
    bool allow_long;        /* VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 / SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1:
                               a max_model_len past the derived limit starts (with a warning) */
    uint64_t prompt;        /* prompt tokens per sequence (HF; transformers < 4.45 keeps their
                               logits at prefill); 0 = the whole context */
    bool enable_lora;       /* vLLM enable_lora: LoRA slots allocated beside the weights */
    uint32_t max_lora_rank; /* vLLM max_lora_rank (LoRAConfig default 16; LLaMA-Factory 32) */
    uint32_t max_loras;     /* vLLM max_loras, adapters on the GPU at once (default 1) */
};

/* Why a serving engine would refuse to start (the text it prints is in ml_serve.error). */
enum ml_serve_error {
    ML_SERVE_OK,
    ML_SERVE_NO_CACHE_BLOCKS,    /* the budget leaves nothing for the KV cache */
    ML_SERVE_MAX_LEN_TOO_LARGE,  /* one max_model_len sequence does not fit in the KV cache */
    ML_SERVE_MAX_LEN_OVER_MODEL, /* max_model_len past the model's derived length (vLLM's ValueError) */
    ML_SERVE_UTIL_OVER_FREE,     /* vLLM V1: total x gpu_memory_utilization over the free memory at start */
    ML_SERVE_WEIGHTS_OOM,        /* the weights alone do not fit on the GPU: CUDA OOM while loading */
    ML_SERVE_SCHED_SIZES         /* vLLM's scheduler refuses fewer batched tokens than sequences */
};

struct ml_serve {
    uint64_t kv_bytes_per_token;                   /* all layers, this GPU's heads, kv dtype */
    uint64_t kv_bytes;                             /* the KV cache (HF: batch x context; engines: the pool) */
    uint64_t kv_tokens;                            /* tokens the KV cache holds */
    uint64_t kv_blocks;                            /* vLLM blocks of block_size tokens */
    uint64_t budget_bytes;                         /* vLLM: capacity x gpu_memory_utilization; SGLang: x fraction */
    uint64_t weights_bytes;                        /* weights on this GPU */
    uint64_t activation_bytes;                     /* vLLM profile-run peak (max_num_batched_tokens) */
    uint64_t non_torch_bytes;                      /* vLLM non-torch increase */
    uint64_t max_model_len;                        /* the max_model_len in force */
    uint64_t max_num_seqs, max_num_batched_tokens; /* in force */
    uint64_t max_concurrency_x100;                 /* kv_tokens / max_model_len, x 100 */
    uint64_t max_model_len_fit;                    /* largest max_model_len the KV cache can hold */
    enum ml_serve_error error;
    char error_text[512]; /* the engine's own wording */
    /* The 80 % interval of the weights, the KV pool and the device figure (enum ml_infer_fig;
     * lib/ledger/interval_infer.c, docs/ledger.md "The inference interval"), low / high bytes, and
     * the table row each used; an engine's start-up verdict follows the KV pool's low end. */
    uint64_t interval[3][2];
    char interval_key[3][24];
    uint64_t one_request_bytes; /* KV of one max_model_len request (engines) */
    bool may_not_start;         /* engines: the KV pool's low end does not hold one request */
    uint64_t max_len_limit;     /* the longest max_model_len the engine accepts (ml_infer_len_limit); 0 = none */
    uint64_t pool_len_fit;      /* the longest request the pool holds, before max_len_limit caps max_model_len_fit */
    uint32_t page_tokens;       /* tokens per KV block: vLLM block_size, SGLang page_size (1) */
    uint32_t mem_fraction_permille; /* SGLang: mem_fraction_static in force */
    /* SGLang starts when one context_length request does not fit and caps requests instead
     * (tp_worker.py TpModelWorker: max_req_len = min(context_len - 1, max_total_num_tokens - 1)): */
    bool req_capped;                 /* the pool caps requests below context_length */
    uint64_t max_req_len;            /* SGLang's max_req_len (prompts: 5 fewer) */
    uint32_t need_fraction_permille; /* SGLang: the mem_fraction_static whose pool holds one request; 0 = none */
};

/* The figures of the inference interval, and one row of its generated table
 * (lib/ledger/interval_infer_table.c, validation_report --interval-table): the interval on a figure
 * is point x lo_e4 / 1e4 .. point x hi_e4 / 1e4 from n residuals; figure ML_IV_ANY pools all three. */
enum ml_infer_fig { ML_IFIG_WEIGHTS, ML_IFIG_KV, ML_IFIG_DEVICE, ML_IFIG_COUNT };
struct ml_infer_interval_row {
    const char *key;
    uint8_t figure; /* enum ml_infer_fig, or ML_IV_ANY (255) */
    uint32_t n;
    uint32_t lo_e4, hi_e4;
};
extern const struct ml_infer_interval_row ml_infer_interval_rows[];
extern const unsigned ml_infer_interval_n_rows;

/* Defaults: HF engine, bf16, no quantization, batch 1, context 0 (= max_model_len), sdpa, tp 1,
 * pp 1, vLLM 0.19 `vllm serve` defaults, gpu_memory_utilization 0.9, block size 16. */
void ml_infer_defaults(struct ml_infer *s);

/* The GPUs an engine runs on: n_gpus (--num-gpus) when given (not 0), else tp x pp, on one node. */
void ml_infer_gpus(struct ml_cluster *c, uint64_t n_gpus, const struct ml_infer *s);

/* "vllm", "nf4", "fp8"; never NULL. */
const char *ml_engine_name(enum ml_engine e);
const char *ml_quant_name(enum ml_quant q);

/*
 * KV cache bytes per token for all layers on one GPU (notes: 2 x layers x kv_heads x head_dim x
 * bytes; MLA caches its latent + rope key once per layer on vLLM/SGLang; sliding-window layers
 * are counted at their window by the callers that know the context). heads split by tp.
 */
uint64_t ml_kv_bytes_per_token(const struct ml_arch *a, const struct ml_infer *s);

/*
 * The weight format in force: the checkpoint's quantization_config when it has one (a --quant of
 * another format is an error naming both), else the --quant flag on the 16-bit weights.
 */
enum ml_status ml_infer_weight_format(const struct ml_arch *a, const struct ml_infer *s, struct ml_weight_quant *f,
                                      struct ml_diag *diag);

/*
 * The inference ledger on one GPU of c. Errors: ML_ERR_INVALID naming the flag for a tp that
 * does not divide the heads, a utilization outside (0, 1], a quantization the model cannot take
 * (group size not dividing the input width), zero batch; ML_ERR_OVERFLOW.
 */
enum ml_status ml_ledger_infer(const struct ml_arch *arch, const struct ml_inventory *inv, const struct ml_infer *s,
                               const struct ml_cluster *c, struct ml_ledger *out, struct ml_serve *serve,
                               struct ml_diag *diag);

/*
 * The longest max_model_len (SGLang: context_length) the engine accepts: the derived length, or
 * for vLLM up to the config's model_max_length (vllm/config/model.py _get_and_verify_max_len;
 * SGLang ModelConfig); 0 when there is none (transformers, --allow-long-max-model-len, no length
 * key in the config).
 */
/* vLLM V1's highest gpu_memory_utilization (x 1000, in hundredths) whose request the free memory
 * at start (capacity - the CUDA context) meets (vllm/v1/worker/utils.py request_memory). */
uint32_t ml_infer_util_limit(uint64_t capacity_bytes);

uint64_t ml_infer_len_limit(const struct ml_arch *a, const struct ml_infer *s);

/*
 * SGLang's default mem_fraction_static for the tensor-parallel size (server_args.py
 * ServerArgs.__post_init__ in the 0.4 series: 0.88 at tp 1, 0.87 at 2, 0.85 at 4, 0.81 at 8, 0.79
 * at 16), in permille.
 */
uint32_t ml_sglang_fraction(uint32_t tp);

/*
 * vLLM's LoRA slots on one GPU (enable_lora): every linear layer of the language model gets
 * max_loras stacked A (max_lora_rank x input) and B (output x max_lora_rank) buffers in the model
 * dtype, allocated with the weights (vllm/lora/layers/base_linear.py create_lora_weights; the
 * column-parallel input and the row-parallel output are whole, the other side split by tp). 0 when
 * LoRA is off. docs/ledger.md "vLLM LoRA slots".
 */
uint64_t ml_infer_lora_slot_bytes(const struct ml_inventory *inv, const struct ml_infer *s);

/* ---- serving options (lib/setup/infer_opts.c) --------------------------------------------- */

/* The kind of value a serving option takes. */
enum ml_infer_opt_kind {
    ML_IOPT_FLAG,     /* no value: sets a bool */
    ML_IOPT_CHOICE,   /* one of choices (its index, or values[index]) */
    ML_IOPT_COUNT,    /* a count in [lo, hi] */
    ML_IOPT_FRACTION, /* a fraction in (0, 1], as permille */
    ML_IOPT_VERSION   /* a version (ml_version_parse) */
};

/* The commands besides infer (which takes them all) that take an option. */
enum { ML_IOPT_IN_FIT = 1, ML_IOPT_IN_DIAGNOSE = 2 };

/* One serving option of the command line: `--name`, what it takes and the field it sets. */
struct ml_infer_opt_def {
    const char *name; /* the long name without the dashes ("max-model-len") */
    enum ml_infer_opt_kind kind;
    size_t offset, size;        /* the field of struct ml_infer */
    const char *const *choices; /* CHOICE: the values, NULL-terminated */
    const uint32_t *values;     /* CHOICE: the value of each choice; NULL = its index */
    uint64_t lo, hi;            /* COUNT: the range */
    unsigned in;                /* ML_IOPT_IN_*: the other commands that take it */
    unsigned engines;           /* ML_IOPT_ENG_*: the engines that read it, 0 = every engine */
};

/* The engines a serving option applies to (struct ml_infer_opt_def engines). */
#define ML_IOPT_ENG(e)     (1u << (e))
#define ML_IOPT_ENG_HF     ML_IOPT_ENG(ML_ENGINE_HF)
#define ML_IOPT_ENG_VLLM   ML_IOPT_ENG(ML_ENGINE_VLLM)
#define ML_IOPT_ENG_SGLANG ML_IOPT_ENG(ML_ENGINE_SGLANG)

/* Row i of the table (in infer's order), NULL past the end. */
const struct ml_infer_opt_def *ml_infer_opt_at(size_t i);

/* The row of option name ("tp"), NULL when it is not a serving option. */
const struct ml_infer_opt_def *ml_infer_opt_find(const char *name);

/* CHOICE: the index of val among the choices; false when it is none of them. */
bool ml_infer_opt_choice(const struct ml_infer_opt_def *o, const char *val, uint64_t *index);

/* CHOICE: the choices as a list for a message ("bf16, fp16, fp32"), truncated to n. */
void ml_infer_opt_choices(const struct ml_infer_opt_def *o, char *out, size_t n);

/* Set the option's field to v: 1 for a FLAG, the index of a CHOICE, a count, permille, a version
 * (--tp also marks tp_set). */
void ml_infer_opt_set(const struct ml_infer_opt_def *o, uint64_t v, struct ml_infer *s);

/* ---- a LLaMA-Factory inference YAML (examples/inference; lib/setup/infer_yaml.c) ---------- */

#define ML_INFER_YAML_KEYS 96 /* rows of the key table (infer_yaml.c) */

/* One key of the table as the file gave it. */
struct ml_infer_yaml_got {
    bool given;
    uint64_t v;    /* the value: a count, x1000 for a fraction, 0/1, an enum index */
    char text[64]; /* as written, for the warning when a flag wins */
};

/* What the file says, before the model is known (its dtype, quantization and the GPU count are
 * needed to resolve infer_dtype: auto and the tensor-parallel size: ml_infer_yaml_apply). */
struct ml_infer_yaml {
    char model[1024];   /* model_name_or_path ("" = none) */
    char adapter[1024]; /* adapter_name_or_path as written (comma-separated: merged in order) */
    uint32_t n_adapters;
    struct ml_infer_yaml_got got[ML_INFER_YAML_KEYS];
    struct ml_warnings warnings; /* keys read but not modelled, unknown keys (did you mean) */
};

/*
 * Read a LLaMA-Factory inference YAML (bytes in, struct out; origin names the file in errors).
 * Errors (one line, file:line): a training config (training keys, no infer_backend: "use train"),
 * an export config, an infer_backend or infer_dtype that is not one of LLaMA-Factory's, a value
 * of the wrong type, malformed YAML.
 */
enum ml_status ml_infer_yaml_read(const char *data, size_t len, const char *origin, struct ml_infer_yaml *y,
                                  struct ml_diag *diag);

#define ML_INFER_YAML_MAX ((size_t)4 << 20) /* the largest inference YAML read */

/* The inference YAML at path, read through read and parsed (ml_infer_yaml_read). */
enum ml_status ml_infer_yaml_load(const char *path, ml_read_fn read, struct ml_infer_yaml *y, struct ml_diag *d);

/*
 * The file's settings onto s, with LLaMA-Factory's defaults for what it leaves out (vllm_maxlen
 * 4096, vllm_gpu_util 0.7, sglang_mem_fraction 0.7, the tensor-parallel size = n_gpus, cutoff_len
 * 2048 + max_new_tokens 1024 of context under huggingface), infer_dtype: auto resolved against a's
 * torch_dtype (GPTQ under vllm/sglang: fp16, vllm_engine.py). Warnings (keys of another backend)
 * go to y->warnings. engine (NULL: the file's infer_backend) is the backend the command line asks for.
 */
void ml_infer_yaml_apply(struct ml_infer_yaml *y, const struct ml_arch *a, uint32_t n_gpus,
                         const enum ml_engine *engine, struct ml_infer *s);

/* The key of the file that set the setting of command-line option flag ("max-model-len"), and the
 * value as written; NULL when the file did not set it. */
const char *ml_infer_yaml_setter(const struct ml_infer_yaml *y, enum ml_engine engine, const char *flag,
                                 const char **text);

/* A serving option as the command line gave it (parsed by src/infer_opts.c). */
struct ml_infer_flag {
    const struct ml_infer_opt_def *opt;
    const char *val; /* as written; NULL for a FLAG */
    uint64_t v;      /* its value for ml_infer_opt_set */
};

/*
 * No serving option is dropped silently: the engine the n flags are read by (docs/cli/infer.md
 * "Options and engines"). Every flag must apply to *engine (ML_IOPT_ENG_*). When one does not and
 * the engine is fixed (an --engine flag, a config file's backend), ML_ERR_INVALID with one line
 * naming the flag and the engines that take it; when not fixed, *engine becomes the first of vLLM,
 * SGLang that every flag applies to, and *note (cap bytes) says which flag chose it; flags of
 * engines with nothing in common are refused. *note is "" when nothing changed.
 */
enum ml_status ml_infer_flags_engine_for(const struct ml_infer_flag *f, uint32_t n, bool fixed, enum ml_engine *engine,
                                         char *note, size_t cap, struct ml_diag *diag);

/* GPUs given (c's count) that the engine leaves idle: one for transformers generate as modelled,
 * tp x pp for vLLM and SGLang (one engine replica). 0 when none; the flag that would use them in
 * *hint (cap bytes). */
uint32_t ml_infer_idle_gpus(const struct ml_cluster *c, const struct ml_infer *s, char *hint, size_t cap);

/* The engine the last --engine among the n flags names, in *e: e, or NULL when none does. */
const enum ml_engine *ml_infer_flags_engine(const struct ml_infer_flag *f, uint32_t n, enum ml_engine *e);

/* The n flags in order over s, after the file's settings (ml_infer_yaml_apply; y NULL: no file).
 * key[i]: the file's key that flag i changes (its value as written in text[i]), NULL when it
 * changes none (the flag wins, with a warning naming both); --engine is compared with the
 * file's infer_backend. */
void ml_infer_yaml_flags(const struct ml_infer_yaml *y, const struct ml_infer_flag *f, uint32_t n, struct ml_infer *s,
                         const char **key, const char **text);

/* Is the tensor-parallel size in force the GPU count (a file's vllm or sglang engine: LLaMA-Factory
 * passes the device count as tensor_parallel_size), not a --tp among the n flags? */
bool ml_infer_yaml_tp_is_gpus(const struct ml_infer_yaml *y, const struct ml_infer *s, const struct ml_infer_flag *f,
                              uint32_t n);

#endif /* ML_INFER_H */
