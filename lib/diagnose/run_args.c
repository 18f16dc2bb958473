/*
 * run_args.c - the run settings a log prints (issue 24 item 5): an argparse Namespace(...), a
 * TrainingArguments dump, a launcher's or an engine's argument line, llama.cpp's context lines.
 * Each key is a row below: the setting it gives, and the kind of run and the runtime its name
 * alone tells. Read from the start of each log (ML_LOG_ARGS_BYTES: settings are printed at
 * start-up), a line at a time; a key is taken where it is followed by '=', ':' (Python and JSON
 * reprs, YAML) or, spelled as a flag, by its value ("--max-num-seqs 64"). Pure, no allocation.
 */
#include <string.h>

#include "diag_int.h"

enum arg_what {
    W_MARK,      /* the name alone tells the kind of run and the runtime */
    W_BATCH,     /* per-device batch */
    W_BATCH_ANY, /* a batch whose scope the name does not say (a script's batch_size) */
    W_SEQ,       /* the sequence length */
    W_TP,        /* tensor parallelism */
    W_PP,        /* pipeline parallelism */
    W_PROCS,     /* processes per node, or the world */
    W_GRAD_CKPT, /* true / false */
    W_OPTIM,     /* an optimizer's name: 8-bit or paged? */
    W_ATTN,      /* an attention implementation: sdpa / flash or eager? */
    W_LIGER,     /* true / false */
    W_FSDP,      /* FSDP's sharding: full_shard? */
    W_DEEPSPEED, /* a DeepSpeed config (a path, not None) */
    W_EAGER,     /* a serving engine without CUDA graphs */
    W_FLASH,     /* flash attention: on / off (llama.cpp's flash_attn = 1, Ollama's variable) */
    W_SDPA_CALL, /* a code line that calls SDPA: the attention is already the efficient kernel */
    W_QUANT,     /* a quantization method (none: not quantized) */
    W_MODEL,     /* the model's path or name: quantized when it names a quantized checkpoint */
    W_KV_TYPE,   /* a KV cache element type (f16, q8_0, q4_0) */
    W_DTYPE,     /* a serving engine's type (vLLM --dtype auto|half|float16|bfloat16|float|float32) */
};

#define T  ML_RUN_TRAINING
#define S  ML_RUN_SERVING
#define O  ML_RUN_OFFLINE
#define D  ML_RUN_DIFFUSION
#define HF ML_RT_HF_TRAINER
#define LF ML_RT_LLAMAFACTORY
/* Keys as transformers' TrainingArguments, TRL's configs, LLaMA-Factory's arguments,
 * accelerate's launcher, DeepSpeed's JSON, vLLM's EngineArgs and `vllm serve` flags, SGLang's
 * ServerArgs, llama.cpp's llama_context lines and common scripts name them; '-' and '_' are one. */
/* A row: its name, the name's length derived from it, then the rest. */
#define K(name, ...)                                                                                                   \
    {                                                                                                                  \
        name, sizeof(name) - 1, __VA_ARGS__                                                                            \
    }
static const struct arg_key {
    const char *name;
    size_t len;
    enum arg_what what;
    uint32_t runs;
    uint32_t runtimes;
} keys[] = {
    K("TrainingArguments", W_MARK, T, HF),
    K("Seq2SeqTrainingArguments", W_MARK, T, HF),
    K("SFTConfig", W_MARK, T, HF),
    K("DPOConfig", W_MARK, T, HF),
    K("GRPOConfig", W_MARK, T, HF),
    K("finetuning_type", W_MARK, T, LF),
    K("num_train_epochs", W_MARK, T, 0),
    K("learning_rate", W_MARK, T, 0),
    K("ServerArgs", W_MARK, S, ML_RT_SGLANG),
    K("mem_fraction_static", W_MARK, S, ML_RT_SGLANG),
    K("EngineArgs", W_MARK, 0, ML_RT_VLLM),
    K("gpu_memory_utilization", W_MARK, S, ML_RT_VLLM),
    K("max_num_seqs", W_MARK, S, ML_RT_VLLM),
    K("max_num_batched_tokens", W_MARK, S, ML_RT_VLLM),
    K("num_inference_steps", W_MARK, D, ML_RT_TORCH),
    K("guidance_scale", W_MARK, D, ML_RT_TORCH),
    K("max_new_tokens", W_MARK, O, 0),
    K("per_device_train_batch_size", W_BATCH, T, HF),
    K("train_micro_batch_size_per_gpu", W_BATCH, T, ML_RT_DEEPSPEED),
    K("micro_batch_size", W_BATCH, T, 0),
    K("batch_size", W_BATCH_ANY, 0, 0),
    K("cutoff_len", W_SEQ, T, LF),
    K("max_seq_length", W_SEQ, T, 0),
    K("max_seq_len", W_SEQ, 0, 0),
    K("model_max_length", W_SEQ, T, HF),
    K("max_length", W_SEQ, 0, 0),
    K("seq_length", W_SEQ, 0, 0),
    K("block_size", W_SEQ, T, 0),
    K("max_model_len", W_SEQ, S, ML_RT_VLLM),
    K("context_length", W_SEQ, S, ML_RT_SGLANG),
    K("n_ctx", W_SEQ, 0, ML_RT_GGML),
    K("ctx_size", W_SEQ, 0, ML_RT_GGML),
    K("tensor_parallel_size", W_TP, 0, 0),
    K("tp_size", W_TP, 0, 0),
    K("num_shard", W_TP, S, ML_RT_TGI), /* TGI's launcher Args (Rust Debug: num_shard: Some(2)) */
    K("tp", W_TP, 0, 0),
    K("pipeline_parallel_size", W_PP, 0, 0),
    K("pp", W_PP, 0, 0),
    K("nproc_per_node", W_PROCS, T, ML_RT_TORCH),
    K("num_processes", W_PROCS, T, ML_RT_ACCELERATE),
    K("gradient_checkpointing", W_GRAD_CKPT, T, 0),
    K("grad_checkpoint", W_GRAD_CKPT, T, 0),
    K("use_grad_checkpoint", W_GRAD_CKPT, T, 0),
    K("activation_checkpointing", W_GRAD_CKPT, T, 0),
    K("optim", W_OPTIM, T, HF),
    K("attn_implementation", W_ATTN, 0, 0),
    K("flash_attn", W_FLASH, 0, 0),
    K("OLLAMA_FLASH_ATTENTION", W_FLASH, 0, ML_RT_GGML),
    K("scaled_dot_product_attention", W_SDPA_CALL, 0, 0),
    K("quantization", W_QUANT, 0, 0),
    K("model", W_MODEL, 0, 0),
    K("model_name_or_path", W_MODEL, 0, 0),
    /* llama.cpp's llama_kv_cache line (src/llama-kv-cache.cpp: "type_k = '%s', type_v = '%s'"),
     * llama-server's --cache-type-k/-v, Ollama's server config (envconfig KvCacheType) */
    K("type_k", W_KV_TYPE, 0, ML_RT_GGML),
    K("type_v", W_KV_TYPE, 0, ML_RT_GGML),
    K("cache_type_k", W_KV_TYPE, 0, ML_RT_GGML),
    K("cache_type_v", W_KV_TYPE, 0, ML_RT_GGML),
    K("kv_cache_type", W_KV_TYPE, 0, ML_RT_GGML),
    K("OLLAMA_KV_CACHE_TYPE", W_KV_TYPE, 0, ML_RT_GGML),
    K("use_liger_kernel", W_LIGER, T, HF),
    K("enable_liger_kernel", W_LIGER, T, LF),
    K("fsdp", W_FSDP, T, ML_RT_ACCELERATE),
    K("deepspeed", W_DEEPSPEED, T, 0),
    K("enforce_eager", W_EAGER, S, ML_RT_VLLM),
    K("disable_cuda_graph", W_EAGER, S, ML_RT_SGLANG),
    /* vLLM EngineArgs.dtype, SGLang ServerArgs.dtype */
    K("dtype", W_DTYPE, 0, 0),
};
#undef K
#undef T
#undef S
#undef O
#undef D
#undef HF
#undef LF

void ml_log_args_init(struct ml_log_args *a)
{
    memset(a, 0, sizeof(*a));
    a->grad_ckpt = a->optim_8bit = a->liger = a->attn_efficient = a->full_shard = a->enforce_eager = -1;
    a->quantized = a->rocm_fp8 = -1;
}

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

#define N_KEYS    (sizeof(keys) / sizeof(keys[0]))
#define KEY_WORDS 2 /* a length's keys are a mask of KEY_WORDS 64-bit words */
_Static_assert(N_KEYS <= 64 * KEY_WORDS, "a length's keys fit its mask");
#define KEY_LENS 32 /* names shorter than this are looked up by their length */

/* The keys of each length below KEY_LENS (bit i: keys[i]), so that a word is compared with the
 * few rows of its own length; a name of KEY_LENS bytes or more is looked for in every row. Built
 * for each chunk fed (on the stack: no state kept). */
struct key_index {
    uint64_t by_len[KEY_LENS][KEY_WORDS];
};

static void index_keys(struct key_index *x)
{
    memset(x, 0, sizeof(*x));
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].len < KEY_LENS)
            x->by_len[keys[i].len][i / 64] |= (uint64_t)1 << (i % 64);
}

/* The key row named by p[0..n) ('-' read as '_'), NULL when none. */
static const struct arg_key *find_key(const struct key_index *x, const char *p, size_t n)
{
    for (size_t w = 0; w < KEY_WORDS; w++) {
        size_t in_word = N_KEYS > 64 * w ? N_KEYS - 64 * w : 0;
        uint64_t every = in_word >= 64 ? ~(uint64_t)0 : in_word ? ((uint64_t)1 << in_word) - 1 : 0;
        for (uint64_t rows = n < KEY_LENS ? x->by_len[n][w] : every; rows; rows &= rows - 1) {
            size_t i = 64 * w + (size_t)__builtin_ctzll(rows);
            const char *k = keys[i].name;
            if (keys[i].len != n || k[0] != p[0])
                continue;
            size_t j = 0;
            while (j < n && k[j] && (p[j] == k[j] || (p[j] == '-' && k[j] == '_')))
                j++;
            if (j == n && !k[j])
                return &keys[i];
        }
    }
    return NULL;
}

/* The value after a key: past quotes, blanks and one '=' or ':' (or, for a flag, blanks alone);
 * [*v, *v + returned) up to ',', ')', '}', a quote or a blank. */
static size_t value_at(const char *p, const char *end, bool flag, const char **v)
{
    while (p < end && (*p == '\'' || *p == '"'))
        p++;
    while (p < end && *p == ' ')
        p++;
    if (p < end && (*p == '=' || *p == ':'))
        p++;
    else if (!flag)
        return 0;
    while (p < end && (*p == ' ' || *p == '\'' || *p == '"'))
        p++;
    *v = p;
    const char *q = p;
    while (q < end && *q != ',' && *q != ')' && *q != '}' && *q != '\'' && *q != '"' && *q != ' ' && *q != '\r')
        q++;
    return (size_t)(q - p);
}

static bool value_is(const char *v, size_t n, const char *s)
{
    size_t m = strlen(s);
    if (n != m)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = v[i] >= 'A' && v[i] <= 'Z' ? (char)(v[i] - 'A' + 'a') : v[i];
        if (c != s[i])
            return false;
    }
    return true;
}

static int8_t value_bool(const char *v, size_t n)
{
    if (value_is(v, n, "true") || value_is(v, n, "1") || value_is(v, n, "on"))
        return 1;
    if (value_is(v, n, "false") || value_is(v, n, "0") || value_is(v, n, "off") || value_is(v, n, "none"))
        return 0;
    return -1;
}

/* Whether v[0..n) holds s (lower case), whatever the case of v (OptimizerNames.PAGED_ADAMW_8BIT). */
static bool value_has(const char *v, size_t n, const char *s)
{
    size_t m = strlen(s);
    for (size_t i = 0; i + m <= n; i++) {
        size_t j = 0;
        while (j < m && (v[i + j] >= 'A' && v[i + j] <= 'Z' ? (char)(v[i + j] - 'A' + 'a') : v[i + j]) == s[j])
            j++;
        if (j == m)
            return true;
    }
    return false;
}

static uint64_t value_u64(const char *v, size_t n)
{
    uint64_t x = 0;
    size_t i = 0;
    /* a Rust Option as Debug prints it (TGI's launcher Args): Some(2), the value read up to its ')' */
    if (n > 5 && !memcmp(v, "Some(", 5)) {
        v += 5;
        n -= 5;
        if (v[n - 1] == ')')
            n--;
    }
    for (; i < n && v[i] >= '0' && v[i] <= '9' && x < (uint64_t)1 << 40; i++)
        x = x * 10 + (uint64_t)(v[i] - '0');
    return i == n ? x : 0;
}

/* Whether a model's path or name names a quantized checkpoint (GPTQ, AWQ, AutoRound, bitsandbytes
 * 4/8-bit, int4/int8, fp8, compressed-tensors' w4a16 / w8a8, GGUF). */
static bool quantized_name(const char *v, size_t n)
{
    static const char *const marks[] = {"gptq", "awq",  "autoround", "4bit", "4-bit", "int4", "w4a16", "w4a8",
                                        "w8a8", "int8", "8bit",      "fp8",  "nf4",   "bnb",  "gguf",  "exl2"};
    for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
        if (value_has(v, n, marks[i]))
            return true;
    return false;
}

/* The bits per element of a ggml KV cache type (ggml.c type_traits: f32, f16, bf16, q8_0, q5_0,
 * q5_1, q4_0, q4_1, iq4_nl), 0 when not one of these. */
static uint8_t kv_type_bits(const char *v, size_t n)
{
    static const struct {
        const char *name;
        uint8_t bits;
    } types[] = {{"f32", 32}, {"f16", 16}, {"bf16", 16}, {"q8_0", 8},  {"q5_0", 5},
                 {"q5_1", 5}, {"q4_0", 4}, {"q4_1", 4},  {"iq4_nl", 4}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (value_is(v, n, types[i].name))
            return types[i].bits;
    return 0;
}

/* An attention implementation's name: SDPA or flash (1), eager (0), -1 neither. */
static int8_t attn_value(const char *v, size_t n)
{
    return value_has(v, n, "sdpa") || value_has(v, n, "flash") || value_has(v, n, "fa2") ? 1
           : value_has(v, n, "eager") || value_has(v, n, "disabled")                     ? 0
                                                                                         : -1;
}

/* One setting: what its value says. */
static void take(struct ml_log_args *a, const struct arg_key *k, const char *v, size_t n)
{
    uint64_t u = value_u64(v, n);
    int8_t b = value_bool(v, n);
    switch (k->what) {
    case W_MARK: break;
    case W_BATCH:
        if (u)
            a->batch = u, a->batch_named = true;
        break;
    case W_BATCH_ANY:
        if (u && !a->batch_named)
            a->batch = u;
        break;
    case W_SEQ:
        if (u && !a->seq_len)
            a->seq_len = u;
        if (u && !a->max_model_len && (k->runs & ML_RUN_SERVING))
            a->max_model_len = u; /* max_model_len, context_length: the engine's */
        break;
    case W_TP:
        if (u)
            a->tp = (uint32_t)u;
        break;
    case W_PP:
        if (u)
            a->pp = (uint32_t)u;
        break;
    case W_PROCS:
        if (u)
            a->procs = (uint32_t)u;
        break;
    case W_GRAD_CKPT: a->grad_ckpt = b; break;
    case W_OPTIM:
        if (n)
            a->optim_8bit = value_has(v, n, "8bit") || value_has(v, n, "paged") ? 1 : 0;
        break;
    case W_FLASH:
        /* on / off (llama.cpp's flash_attn = 1, Ollama's variable), or, as LLaMA-Factory's
         * flash_attn, an implementation's name (fa2, sdpa, disabled); auto leaves it to the engine */
        if (n)
            a->attn_efficient = b == 1 || value_is(v, n, "enabled") ? 1 : b == 0 ? 0 : attn_value(v, n);
        break;
    case W_ATTN:
        if (n)
            a->attn_efficient = attn_value(v, n);
        break;
    case W_LIGER: a->liger = b; break;
    case W_FSDP:
        if (n)
            a->full_shard = value_has(v, n, "full_shard") ? 1 : 0;
        if (a->full_shard != 1 && !value_has(v, n, "shard") && !value_has(v, n, "offload"))
            return; /* fsdp=[] or '': no FSDP */
        break;
    case W_DEEPSPEED:
        if (!n || b == 0)
            return; /* deepspeed=None */
        a->runtimes |= ML_RT_DEEPSPEED;
        break;
    case W_EAGER: a->enforce_eager = b; break;
    case W_SDPA_CALL:
        if (a->attn_efficient == -1)
            a->attn_efficient = 1; /* a setting read keeps its word */
        return;                    /* a call is no setting (no run kind, no reference line) */
    case W_QUANT:
        if (!n)
            return;
        if (a->quantized != 1)
            a->quantized = b == 0 ? 0 : 1;
        break;
    case W_MODEL:
        if (!quantized_name(v, n))
            return; /* only a quantized checkpoint's name says something */
        a->quantized = 1;
        break;
    case W_DTYPE:
        /* float / float32: fp32; half / float16: fp16; bfloat16: bf16; auto: the checkpoint's */
        a->dtype = value_is(v, n, "float") || value_is(v, n, "float32")  ? ML_ARGS_FP32
                   : value_is(v, n, "half") || value_is(v, n, "float16") ? ML_ARGS_FP16
                   : value_is(v, n, "bfloat16")                          ? ML_ARGS_BF16
                                                                         : a->dtype;
        if (!a->dtype)
            return;
        break;
    case W_KV_TYPE: {
        uint8_t bits = kv_type_bits(v, n);
        if (!bits)
            return;
        if (bits > a->kv_bits)
            a->kv_bits = bits;
        break;
    }
    }
    a->runs |= k->runs;
    a->runtimes |= k->runtimes;
    a->n_read++;
}

/* The bytes a key is found from: the separators a key's name comes before ('=', ':', '('), and
 * '-', which may start a flag ("--max-num-seqs 64"). */
enum { C_SEP = 1, C_DASH = 2 };
static const unsigned char byte_class[256] = {['='] = C_SEP, [':'] = C_SEP, ['('] = C_SEP, ['-'] = C_DASH};

/* One line: every key row named in it, followed by its value. A key is a word (a run of
 * word_char) followed, past quotes and blanks, by '=', ':' or '(', or a word that starts with
 * "--" (a flag). The line is scanned for those bytes alone: from a separator the word before it
 * is found by looking back, from "--" at a word's start the flag after it; the words are taken
 * in the order they start (each once), as a scan of every word would take them. */
/* The bytes of x (eight, as a little-endian load reads them) that are '=', ':', '(' or '-': bit
 * 8i + 7 set for byte i (exact: a zero byte is found by adding to its low seven bits). */
static uint64_t class_bytes(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101u, low7 = 0x7F7F7F7F7F7F7F7Fu;
    uint64_t e = x ^ (ones * '='), c = x ^ (ones * ':'), o = x ^ (ones * '('), d = x ^ (ones * '-');
    uint64_t nz = (((e & low7) + low7) | e) & (((c & low7) + low7) | c) & (((o & low7) + low7) | o) &
                  (((d & low7) + low7) | d); /* high bit: the byte is none of the four */
    return ~nz & ~low7;
}

/* The key whose word ends at the separator c, or whose flag starts at the '-' c, in the line
 * p[0..end): taken unless a word that starts before *done was (each word once, in order). */
static void key_at(struct ml_log_args *a, const struct key_index *x, const char *p, const char *end, const char *c,
                   const char **done)
{
    const char *w, *s; /* the word [w, s) */
    if (byte_class[(unsigned char)*c] == C_DASH) {
        if (c + 1 >= end || c[1] != '-' || (c > p && word_char(c[-1])))
            return;
        w = s = c;
        while (s < end && word_char(*s))
            s++;
    } else {
        const char *b = c;
        while (b > p && (b[-1] == '\'' || b[-1] == '"' || b[-1] == ' '))
            b--;
        if (b == p || !word_char(b[-1]))
            return;
        w = s = b;
        while (w > p && word_char(w[-1]))
            w--;
    }
    if (w < *done)
        return; /* (a flag followed by '=': taken at its "--") */
    *done = s;
    const char *name = w;
    while (name < s && *name == '-')
        name++;
    bool flag = name - w >= 2; /* --max-num-seqs 64 */
    const struct arg_key *k = find_key(x, name, (size_t)(s - name));
    if (!k)
        return;
    if (k->what == W_SDPA_CALL) {
        if (s < end && *s == '(')
            take(a, k, s, 0); /* F.scaled_dot_product_attention( */
        return;
    }
    if (k->what == W_MARK && s < end && *s == '(') {
        take(a, k, s, 0); /* TrainingArguments(, ServerArgs( */
        return;
    }
    const char *v = NULL;
    size_t vn = value_at(s, end, flag, &v);
    if (v && (vn || k->what == W_MARK))
        take(a, k, v, vn);
}

/* A trainer's own source files in a frame ("File \".../swift/cli/rlhf.py\""): the trainer whose
 * keys its settings take. Most specific first: ms-swift and LLaMA-Factory call TRL and
 * transformers, so their frames come with those. */
static const struct {
    const char *path;
    enum ml_dialect d;
} trainer_paths[] = {
    {"/swift/cli/", ML_DIALECT_SWIFT},
    {"/swift/llm/", ML_DIALECT_SWIFT},
    {"/swift/trainers/", ML_DIALECT_SWIFT},
    {"/llamafactory/", ML_DIALECT_LF},
    {"/torchtune/", ML_DIALECT_TORCHTUNE},
    {"/recipes/lora_finetune", ML_DIALECT_TORCHTUNE},
    {"/recipes/full_finetune", ML_DIALECT_TORCHTUNE},
    {"/litgpt/", ML_DIALECT_LITGPT},
    {"/trl/trainer/", ML_DIALECT_TRL},
};

/* The first row of trainer_paths the line holds, in one pass over its slashes (each row starts
 * with one); N_TRAINER_PATHS when none. */
#define N_TRAINER_PATHS (sizeof(trainer_paths) / sizeof(trainer_paths[0]))
static size_t trainer_row(const char *p, size_t n, size_t below)
{
    size_t best = below;
    for (const char *q = memchr(p, '/', n); q && best; q = memchr(q + 1, '/', (size_t)(p + n - q - 1))) {
        size_t left = (size_t)(p + n - q);
        for (size_t i = 0; i < best && left > 1; i++) {
            if (q[1] != trainer_paths[i].path[1]) /* (most slashes fail here) */
                continue;
            size_t k = strlen(trainer_paths[i].path);
            if (left >= k && !memcmp(q, trainer_paths[i].path, k)) {
                best = i;
                break;
            }
        }
        if (left <= 1)
            break;
    }
    return best;
}

static void read_trainer_files(struct ml_log_args *a, const char *p, size_t n)
{
    /* A row already seen keeps its place against the rows after it (more specific first). */
    size_t seen = N_TRAINER_PATHS;
    for (size_t j = 0; a->trainer_files && j < N_TRAINER_PATHS && seen == N_TRAINER_PATHS; j++)
        if ((uint8_t)(1 + trainer_paths[j].d) == a->trainer_files)
            seen = j;
    size_t i = trainer_row(p, n, seen == N_TRAINER_PATHS ? N_TRAINER_PATHS : seen + 1);
    if (i < N_TRAINER_PATHS && (seen == N_TRAINER_PATHS || i <= seen))
        a->trainer_files = (uint8_t)(1 + trainer_paths[i].d);
}

/* A training entry point's own file in a frame, wherever the frame is (a traceback printed after
 * the error message, a second rank's): the run trains. LLaMA-Factory's launcher.py (torchrun's
 * entry, which calls train/tuner.py run_exp) and its train/ package; TRL's trainers
 * (trl/trainer/, its *_trainer.py files); ms-swift's trainers and its sft / rlhf / pt entry points
 * (swift/trainers/, swift/llm/train/); torchtune's finetuning recipes; LitGPT's finetune/ and
 * pretrain.py; transformers' Trainer (trainer.py _inner_training_loop). */
static const char *const training_paths[] = {
    "/llamafactory/launcher.py", "/llamafactory/train/",     "/trl/trainer/",          "/swift/trainers/",
    "/swift/llm/train/",         "/recipes/lora_finetune",   "/recipes/full_finetune", "/litgpt/finetune/",
    "/litgpt/pretrain.py",       "/transformers/trainer.py",
};

static bool holds(const char *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (const char *q = memchr(p, s[0], n); q && (size_t)(p + n - q) >= k;
         q = memchr(q + 1, s[0], (size_t)(p + n - q - 1)))
        if (!memcmp(q, s, k))
            return true;
    return false;
}

static void read_training_files(struct ml_log_args *a, const char *p, size_t n)
{
    if ((a->runs & ML_RUN_TRAINING) || !memchr(p, '/', n))
        return;
    for (size_t i = 0; i < sizeof(training_paths) / sizeof(training_paths[0]); i++)
        if (holds(p, n, training_paths[i])) {
            a->runs |= ML_RUN_TRAINING;
            return;
        }
}

/* A serving engine's own server: its command or the files of its server and engine (not the
 * layers: SGLang's first releases ran vLLM's model_executor layers). SGLang
 * python/sglang/launch_server.py and sglang/srt/{managers,model_executor}; vLLM's `vllm serve`,
 * vllm/entrypoints, vllm/engine, vllm/v1/engine, vllm/worker; TGI's text-generation-launcher and
 * its Python server text_generation_server. */
static const struct {
    const char *cue;
    uint32_t rt;
} engine_paths[] = {
    {"sglang.launch_server", ML_RT_SGLANG},
    {"/sglang/srt/managers/", ML_RT_SGLANG},
    {"/sglang/srt/model_executor/", ML_RT_SGLANG},
    {"vllm serve", ML_RT_VLLM},
    {"vllm.entrypoints", ML_RT_VLLM},
    {"/vllm/entrypoints/", ML_RT_VLLM},
    {"/vllm/engine/", ML_RT_VLLM},
    {"/vllm/v1/engine/", ML_RT_VLLM},
    {"/vllm/worker/", ML_RT_VLLM},
    {"text-generation-launcher", ML_RT_TGI},
    {"text_generation_server", ML_RT_TGI},
    {"text_generation_launcher", ML_RT_TGI},
};

static void read_engine_files(struct ml_log_args *a, const char *p, size_t n)
{
    /* Most lines name no engine: every cue above holds one of these words, looked for first. */
    if (!holds(p, n, "vllm") && !holds(p, n, "sglang") && !holds(p, n, "text_generation") &&
        !holds(p, n, "text-generation"))
        return;
    for (size_t i = 0; i < sizeof(engine_paths) / sizeof(engine_paths[0]); i++)
        if (!(a->engine_files & engine_paths[i].rt) && holds(p, n, engine_paths[i].cue))
            a->engine_files |= engine_paths[i].rt;
}

/* A ROCm arch the line names ("gfx906", "gfx942:sramecc+"): whether vLLM has fp8 on it (vllm
 * platforms/rocm.py supports_fp8: gfx94x, gfx95x and gfx12xx only). One that has it wins. */
static void read_rocm_arch(struct ml_log_args *a, const char *p, size_t n)
{
    for (const char *q = memchr(p, 'g', n); q && a->rocm_fp8 != 1; q = memchr(q + 1, 'g', (size_t)(p + n - q - 1))) {
        size_t left = (size_t)(p + n - q);
        if (left < 5 || memcmp(q, "gfx", 3) || q[3] < '0' || q[3] > '9' || (q > p && word_char(q[-1])))
            continue;
        a->rocm_fp8 = !memcmp(q + 3, "94", 2) || !memcmp(q + 3, "95", 2) || !memcmp(q + 3, "12", 2) ? 1 : 0;
        if (left <= 1)
            break;
    }
}

/* "vllm serve <model>": the model is the first word after the subcommand (vllm/entrypoints/cli/
 * serve.py); a quantized checkpoint's name says the weights are quantized already. */
static void read_serve_model(struct ml_log_args *a, const char *p, size_t n)
{
    static const char cmd[] = "vllm serve ";
    const char *end = p + n;
    for (const char *q = p; (size_t)(end - q) > sizeof(cmd) - 1; q++) {
        q = memchr(q, 'v', (size_t)(end - q));
        if (!q || (size_t)(end - q) <= sizeof(cmd) - 1)
            return;
        if (memcmp(q, cmd, sizeof(cmd) - 1))
            continue;
        const char *v = q + sizeof(cmd) - 1, *w = v;
        while (w < end && *w != ' ' && *w != '\t' && *w != '\r')
            w++;
        if (w > v && *v != '-' && quantized_name(v, (size_t)(w - v)))
            a->quantized = 1;
        return;
    }
}

static void read_line(struct ml_log_args *a, const struct key_index *x, const char *p, size_t n)
{
    read_trainer_files(a, p, n);
    read_training_files(a, p, n);
    read_engine_files(a, p, n);
    read_rocm_arch(a, p, n);
    read_serve_model(a, p, n);
    const char *end = p + n, *done = p; /* the words that start before done are taken */
    uint32_t before = a->n_read;
    for (const char *blk = p; blk < end; blk += 8) { /* eight bytes at a time */
        size_t m = (size_t)(end - blk) < 8 ? (size_t)(end - blk) : 8;
        uint64_t hits = 0; /* bit 8i + 7: blk[i] is one of the four */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (m == 8) {
            uint64_t v;
            memcpy(&v, blk, 8);
            hits = class_bytes(v);
        } else
#endif
            for (size_t i = 0; i < m; i++)
                if (byte_class[(unsigned char)blk[i]])
                    hits |= (uint64_t)0x80 << (8 * i);
        for (; hits; hits &= hits - 1)
            key_at(a, x, p, end, blk + __builtin_ctzll(hits) / 8, &done);
    }
    if (a->n_read > before && !a->ref.line) {
        a->ref.file = a->file;
        a->ref.line = a->line;
        a->ref.step = -1;
        size_t m = n < sizeof(a->ref.text) - 1 ? n : sizeof(a->ref.text) - 1;
        memcpy(a->ref.text, p, m);
        a->ref.text[m] = '\0';
        for (size_t i = 0; i < m; i++)
            if ((unsigned char)a->ref.text[i] < 0x20)
                a->ref.text[i] = ' ';
    }
}

void ml_log_args_feed(struct ml_log_args *a, uint32_t file, const char *buf, size_t n)
{
    if (file != a->file) {
        ml_log_args_end(a);
        a->file = file;
        a->bytes = 0;
        a->line = 0;
    }
    if (a->bytes >= ML_LOG_ARGS_BYTES)
        return;
    if (n > ML_LOG_ARGS_BYTES - a->bytes)
        n = (size_t)(ML_LOG_ARGS_BYTES - a->bytes);
    a->bytes += n;
    struct key_index x;
    index_keys(&x);
    const char *p = buf, *end = buf + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        size_t room = sizeof(a->carry) - a->carry_len;
        size_t take_n = len < room ? len : room;
        if (!nl || a->carry_len) {
            memcpy(a->carry + a->carry_len, p, take_n);
            a->carry_len += take_n;
        }
        if (!nl)
            break;
        a->line++;
        if (a->carry_len) {
            read_line(a, &x, a->carry, a->carry_len);
            a->carry_len = 0;
        } else {
            read_line(a, &x, p, len);
        }
        p = nl + 1;
    }
}

void ml_log_args_end(struct ml_log_args *a)
{
    if (a->carry_len) {
        struct key_index x;
        index_keys(&x);
        a->line++;
        read_line(a, &x, a->carry, a->carry_len);
        a->carry_len = 0;
    }
}

uint32_t ml_log_args_world(const struct ml_log_args *a)
{
    uint32_t mp = (a->tp ? a->tp : 1) * (a->pp ? a->pp : 1);
    return a->procs > mp ? a->procs : a->tp || a->pp ? mp : 0;
}
