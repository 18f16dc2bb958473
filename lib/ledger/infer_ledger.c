/*
 * infer_ledger.c - the inference and serving ledger (see infer.h).
 *
 * Three engines. HF generate: weights + KV cache (batch x context) + the prefill working set
 * (MLP intermediates, eager s^2 scores) + the logits of the last position in fp32. vLLM: the
 * start-up budget equation of its memory profiler - capacity x gpu_memory_utilization - weights -
 * the profile run's activation peak - non-torch memory = the KV pool, cut into blocks of 16
 * tokens (vllm/v1/worker/gpu_worker.py determine_available_memory; vllm/v1/core/kv_cache_utils.py).
 * SGLang: capacity x mem_fraction_static - weights = the KV pool (sglang model_runner
 * profile_max_num_token). Checked against vLLM start-up logs in data/measured-memory.jsonl
 * (validation/REPORT.md, tests/unit/test_infer.c).
 */
#include "memledger/infer.h"

#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "ledger_int.h"
#include "memledger/units.h"

void ml_infer_defaults(struct ml_infer *s)
{
    memset(s, 0, sizeof(*s));
    s->engine = ML_ENGINE_HF;
    s->precision = ML_PREC_BF16;
    s->quant = ML_QUANT_NONE;
    s->group_size = 128; /* GPTQ / AWQ default group */
    s->double_quant = false;
    s->kv_dtype = ML_KV_AUTO;
    s->batch = 1;
    s->attn = ML_ATTN_SDPA;
    s->tp = s->pp = 1;
    s->gpu_util_permille = 900; /* vLLM EngineArgs gpu_memory_utilization = 0.9 */
    s->block_size = 16;         /* vLLM CacheConfig block_size on CUDA */
    s->vllm_version = ML_VER(0, 19, 0);
    s->transformers_version = ML_VER(4, 57, 0);
    s->max_lora_rank = 16; /* vLLM LoRAConfig max_lora_rank */
    s->max_loras = 1;      /* vLLM LoRAConfig max_loras */
}

void ml_infer_gpus(struct ml_cluster *c, uint64_t n_gpus, const struct ml_infer *s)
{
    c->gpus_per_node = n_gpus ? (uint32_t)n_gpus : s->tp * s->pp;
    c->nodes = 1;
}

uint32_t ml_infer_idle_gpus(const struct ml_cluster *c, const struct ml_infer *s, char *hint, size_t cap)
{
    /* transformers generate is modelled on one GPU (device_map="auto" splits layers, not
     * modelled); vLLM and SGLang run one replica on tp x pp GPUs: more are a data-parallel
     * setting of their own (vllm --data-parallel-size, sglang --dp-size), which the ledger does
     * not model (docs/cli/infer.md "--num-gpus"). */
    uint32_t given = c->gpus_per_node * (c->nodes ? c->nodes : 1);
    uint32_t used = s->engine == ML_ENGINE_HF ? 1 : s->tp * s->pp;
    hint[0] = '\0';
    if (!used || given <= used)
        return 0;
    if (s->engine == ML_ENGINE_HF)
        (void)snprintf(hint, cap, _("--engine vllm --tp %u splits the model over them"), given);
    else if (given % (s->pp ? s->pp : 1) == 0)
        (void)snprintf(hint, cap, _("--tp %u splits the model over them"), given / (s->pp ? s->pp : 1));
    else
        (void)snprintf(hint, cap, _("--tp x --pp = %u splits the model over them"), given);
    return given - used;
}

const char *ml_quant_name(enum ml_quant q)
{
    static const char *const n[] = {"none", "int8", "nf4", "fp4", "gptq", "awq", "fp8", "int4", "mxfp4"};
    return ((unsigned)q < sizeof(n) / sizeof(n[0])) ? n[q] : "unknown";
}

/* Bytes per element of the activations and unquantized weights. */
static uint64_t elem_bytes(const struct ml_infer *s)
{
    return s->precision == ML_PREC_FP32 ? 4 : 2;
}

static uint64_t kv_elem_bytes(const struct ml_infer *s)
{
    switch (s->kv_dtype) {
    case ML_KV_FP8: return 1;
    case ML_KV_FP16:
    case ML_KV_BF16: return 2;
    case ML_KV_AUTO: break;
    }
    return elem_bytes(s);
}

/* K/V heads held by one tensor-parallel rank: split, or replicated when fewer than tp. */
static uint64_t kv_heads_per_rank(const struct ml_arch *a, uint32_t tp)
{
    return a->n_kv_heads >= tp ? ml_ceil_div_u64(a->n_kv_heads, tp) : 1;
}

/* Per-token, per-layer KV bytes on one rank (a softmax-attention layer). */
static uint64_t kv_layer_token(const struct ml_arch *a, const struct ml_infer *s)
{
    uint64_t e = kv_elem_bytes(s);
    /* DeepSeek-V3.2's indexer caches one key of index_head_dim per token and layer: vLLM stores
     * it as fp8 plus an fp32 scale per 128 values (deepseek_v2.py Indexer, DeepseekV32IndexerCache
     * head_dim + head_dim // quant_block_size * 4); transformers keeps it at the model dtype. */
    uint64_t ix = !a->index_head_dim          ? 0
                  : s->engine != ML_ENGINE_HF ? a->index_head_dim + a->index_head_dim / 128 * 4
                                              : a->index_head_dim * elem_bytes(s);
    if (a->kv_lora_rank && s->engine != ML_ENGINE_HF) {
        /* MLA (vLLM MLACommonImpl, SGLang): one compressed latent + the shared rope key per token
         * and layer, not split by tensor parallelism. */
        return (a->kv_lora_rank + a->qk_rope_head_dim) * e + ix;
    }
    if (a->kv_lora_rank) {
        /* transformers' DeepseekV3Attention caches the expanded keys (nope + rope) and values of
         * every head. */
        uint64_t heads = ml_ceil_div_u64(a->n_heads, s->tp);
        return heads * (a->qk_nope_head_dim + a->qk_rope_head_dim + a->v_head_dim) * e + ix;
    }
    /* K and V: 2 x kv_heads x head_dim (MHA, GQA, MQA alike). */
    return 2 * kv_heads_per_rank(a, s->tp) * a->head_dim * e;
}

/* Layers of attention kind k on the pipeline stage that holds the most (ceil(n / pp)). */
static uint64_t stage_layers(const struct ml_arch *a, const struct ml_infer *s, enum ml_layer_attn k)
{
    return ml_ceil_div_u64(ml_arch_n_layers_attn(a, k), s->pp ? s->pp : 1);
}

uint64_t ml_kv_bytes_per_token(const struct ml_arch *a, const struct ml_infer *s)
{
    /* Every softmax-attention layer caches K/V per token; linear-attention layers hold a state
     * per sequence instead (kv_bytes_for). */
    uint64_t layers = ml_ceil_div_u64(a->n_layers - ml_arch_n_layers_attn(a, ML_LAYER_LINEAR), s->pp ? s->pp : 1);
    return layers * kv_layer_token(a, s);
}

/* Bytes of one sequence's recurrent state in all linear-attention layers of a stage (conv state
 * at the model dtype, the Gated DeltaNet state at mamba_ssm_dtype). */
static uint64_t linear_state_bytes(struct calc *k, const struct ml_arch *a, const struct ml_infer *s)
{
    return mul(k, stage_layers(a, s, ML_LAYER_LINEAR), ml_arch_linear_state_bytes(a, elem_bytes(s)));
}

/* KV bytes for `tokens` tokens of one sequence: full layers hold every token, sliding layers at
 * most their window (Gemma 2/3, gpt-oss, Mistral; HF DynamicSlidingWindowLayer, vLLM's
 * sliding-window KV groups), chunked layers at most the chunk (Llama 4's chunked local attention,
 * HF HybridChunkedCache), linear-attention layers one fixed state (Qwen3-Next, Qwen3.5). */
static uint64_t kv_bytes_for(struct calc *k, const struct ml_arch *a, const struct ml_infer *s, uint64_t tokens)
{
    uint64_t per = kv_layer_token(a, s);
    uint64_t win = a->sliding_window && a->sliding_window < tokens ? a->sliding_window : tokens;
    uint64_t chunk = a->attn_chunk && a->attn_chunk < tokens ? a->attn_chunk : tokens;
    uint64_t n = mul3(k, stage_layers(a, s, ML_LAYER_FULL), per, tokens);
    n = add(k, n, mul3(k, stage_layers(a, s, ML_LAYER_SLIDING), per, win));
    n = add(k, n, mul3(k, stage_layers(a, s, ML_LAYER_CHUNKED), per, chunk));
    return add(k, n, linear_state_bytes(k, a, s));
}

/* Does any layer hold less than the whole context (sliding, chunked, linear)? */
static bool bounded_layers(const struct ml_arch *a)
{
    return ml_arch_n_layers_attn(a, ML_LAYER_FULL) < a->n_layers;
}

/* vLLM V1's hybrid KV cache manager (0.10 on; docs/ledger.md "vLLM hybrid KV cache groups"):
 * layers of each attention kind are cut into groups of `group` layers
 * (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: the smallest kind's count, or the
 * largest's when it is under 1.5 x the smallest; the last group of a kind padded), and one pool of
 * blocks serves all groups, a block being one page of block_size tokens in `group` layers
 * (get_kv_cache_config_from_groups, get_num_blocks: available // page // group). Linear-attention
 * (Mamba) specs pad their page to the attention page: not modelled here. */
struct vllm_hybrid {
    uint64_t n[3];                 /* layers per kind (enum ml_layer_attn full, sliding, chunked) */
    uint64_t group, stage, groups; /* layers per group, of them on the busiest stage; groups */
    uint64_t page;                 /* bytes of one block of one layer */
};

static bool vllm_hybrid(const struct ml_arch *a, const struct ml_infer *s, struct vllm_hybrid *h)
{
    memset(h, 0, sizeof(*h));
    if (s->engine != ML_ENGINE_VLLM || s->vllm_version < ML_VER(0, 10, 0) || !bounded_layers(a) ||
        ml_arch_n_layers_attn(a, ML_LAYER_LINEAR))
        return false;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int t = ML_LAYER_FULL; t <= ML_LAYER_CHUNKED; t++) {
        h->n[t] = ml_arch_n_layers_attn(a, (enum ml_layer_attn)t);
        if (h->n[t]) {
            lo = h->n[t] < lo ? h->n[t] : lo;
            hi = h->n[t] > hi ? h->n[t] : hi;
        }
    }
    h->group = 2 * hi < 3 * lo ? hi : lo;
    for (int t = ML_LAYER_FULL; t <= ML_LAYER_CHUNKED; t++)
        h->groups += ml_ceil_div_u64(h->n[t], h->group);
    /* Pipeline stages take layers[i::groups] of each kind: a group's layers spread over them. */
    h->stage = ml_ceil_div_u64(h->group, s->pp ? s->pp : 1);
    h->page = kv_layer_token(a, s) * (s->block_size ? s->block_size : 16);
    return h->page != 0;
}

/* Blocks one request of len tokens takes in all groups (max_memory_usage_bytes of each group's
 * spec over the page, vllm/v1/kv_cache_interface.py): a full layer cdiv(len, block); a sliding
 * layer cdiv(min(window - 1 + T, len), block) + 1 (SlidingWindowSpec: the window may start
 * inside a block); a chunked layer cdiv(min(chunk + T, len), block) (ChunkedLocalAttentionSpec),
 * with T = max_num_batched_tokens. */
static uint64_t vllm_hybrid_blocks(const struct ml_arch *a, const struct ml_infer *s, const struct vllm_hybrid *h,
                                   uint64_t len, uint64_t T)
{
    uint64_t bs = s->block_size ? s->block_size : 16;
    uint64_t sw = a->sliding_window ? a->sliding_window - 1 + T : 0, ch = a->attn_chunk + T;
    uint64_t per[3] = {ml_ceil_div_u64(len, bs), ml_ceil_div_u64(sw < len ? sw : len, bs) + 1,
                       ml_ceil_div_u64(ch < len ? ch : len, bs)};
    uint64_t n = 0;
    for (int t = ML_LAYER_FULL; t <= ML_LAYER_CHUNKED; t++)
        n += ml_ceil_div_u64(h->n[t], h->group) * per[t];
    return n;
}

/* Bytes the start-up check asks for one request (kv_cache_utils.py
 * _max_memory_usage_bytes_from_groups: group x page x blocks). */
static uint64_t vllm_hybrid_bytes(struct calc *k, const struct ml_arch *a, const struct ml_infer *s,
                                  const struct vllm_hybrid *h, uint64_t len, uint64_t T)
{
    return mul3(k, h->stage, h->page, vllm_hybrid_blocks(a, s, h, len, T));
}

/* ---- weights ------------------------------------------------------------------------------ */

struct gpu_weights {
    uint64_t bytes;                /* weights on one GPU */
    uint64_t quant_state;          /* absmax / scales, included in bytes */
    uint64_t quantized;            /* quantized parameters on this GPU */
    uint64_t max_linear;           /* largest quantized linear weight (elements), for dequant transients */
    struct ml_weight_quant format; /* the format in force (checkpoint or --quant) */
    uint64_t lora;                 /* vLLM LoRA slots (ml_infer_lora_slot_bytes) */
};

/* The --quant flag as a weight format on a 16-bit checkpoint (the formats infer.h lists). */
static void flag_format(const struct ml_infer *s, struct ml_weight_quant *f)
{
    memset(f, 0, sizeof(*f));
    uint32_t g = s->group_size ? s->group_size : 128;
    switch (s->quant) {
    case ML_QUANT_INT8: /* LLM.int8 / torchao int8 weight-only: 1 B + one fp32 scale per output row */
        *f = (struct ml_weight_quant){.method = ML_WQ_BNB8, .bits = 8, .scale_bytes = 4, .name = "int8"};
        break;
    case ML_QUANT_NF4:
    case ML_QUANT_FP4: /* bitsandbytes 4-bit: absmax per 64 values */
        *f = (struct ml_weight_quant){.method = ML_WQ_BNB4,
                                      .bits = 4,
                                      .group = 64,
                                      .scale_bytes = 4,
                                      .double_quant = s->double_quant,
                                      .fp4 = s->quant == ML_QUANT_FP4};
        break;
    case ML_QUANT_GPTQ:
        *f = (struct ml_weight_quant){.method = ML_WQ_GPTQ,
                                      .bits = s->quant_bits ? s->quant_bits : 4,
                                      .group = g,
                                      .scale_bytes = 2,
                                      .zero = true};
        break;
    case ML_QUANT_AWQ:
        *f = (struct ml_weight_quant){.method = ML_WQ_AWQ, .bits = 4, .group = g, .scale_bytes = 2, .zero = true};
        break;
    case ML_QUANT_FP8: /* fp8 e4m3 with per-tensor fp32 scales (4 B a matrix, not counted) */
        *f = (struct ml_weight_quant){.method = ML_WQ_FP8, .bits = 8};
        break;
    case ML_QUANT_INT4: /* torchao int4 weight-only: a bf16 scale and a bf16 zero per group */
        *f = (struct ml_weight_quant){.method = ML_WQ_INT, .bits = 4, .group = g, .scale_bytes = 4};
        break;
    case ML_QUANT_MXFP4: /* as gpt-oss ships it: the experts only */
        *f = (struct ml_weight_quant){
            .method = ML_WQ_MXFP4, .bits = 4, .group = 32, .scale_bytes = 1, .experts_only = true};
        break;
    case ML_QUANT_NONE: break;
    }
    (void)snprintf(f->name, sizeof(f->name), "%s", ml_quant_name(s->quant));
}

/* Which enum ml_quant a checkpoint's format is (for the flag's consistency check). */
static enum ml_quant quant_of(const struct ml_weight_quant *w)
{
    switch (w->method) {
    case ML_WQ_FP8: return ML_QUANT_FP8;
    case ML_WQ_AWQ: return ML_QUANT_AWQ;
    case ML_WQ_GPTQ: return ML_QUANT_GPTQ;
    case ML_WQ_BNB4: return w->fp4 ? ML_QUANT_FP4 : ML_QUANT_NF4;
    case ML_WQ_BNB8: return ML_QUANT_INT8;
    case ML_WQ_INT: return ML_QUANT_INT4;
    case ML_WQ_MXFP4: return ML_QUANT_MXFP4;
    case ML_WQ_NONE: break;
    }
    return ML_QUANT_NONE;
}

enum ml_status ml_infer_weight_format(const struct ml_arch *a, const struct ml_infer *s, struct ml_weight_quant *f,
                                      struct ml_diag *diag)
{
    if (a->wq.method == ML_WQ_NONE || s->dequantize) {
        flag_format(s, f);
        return ML_OK;
    }
    /* A quantized checkpoint is loaded as stored (vLLM and transformers read quantization_config);
     * a --quant of another format cannot apply to it. */
    *f = a->wq;
    enum ml_quant q = quant_of(&a->wq);
    if (s->quant != ML_QUANT_NONE && s->quant != q && !(q == ML_QUANT_INT4 && s->quant == ML_QUANT_GPTQ))
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("--quant %s: the checkpoint is stored as %s (its config.json quantization_config), which "
                             "a %s load cannot change"),
                           ml_quant_name(s->quant), a->wq.name, ml_quant_name(s->quant));
    return ML_OK;
}

/* Is the tensor stored in the format? Linear (and packed expert) weights inside the layers,
 * unless the format leaves them out: embeddings, the head (GPTQ lm_head: false), routers, 1-wide
 * gates (shared_expert_gate), the vision tower and projector, the modules the checkpoint lists
 * (modules_to_not_convert, ignore, llm_int8_skip_modules), everything but the experts for MXFP4.
 * bitsandbytes replaces nn.Linear modules only (replace_with_bnb_linear): experts kept as 3-D
 * parameters stay 16-bit under it, where the checkpoint formats (fp8, AWQ, GPTQ, MXFP4) store
 * them quantized and vLLM's fused MoE reads them so. */
bool ml_wq_tensor_quantized(const struct ml_tensor *x, const struct ml_weight_quant *f)
{
    bool bnb = f->method == ML_WQ_BNB4 || f->method == ML_WQ_BNB8;
    if (f->method == ML_WQ_NONE || !((x->linear && !strcmp(x->param, "weight")) || (x->packed && !bnb)))
        return false;
    switch (x->kind) {
    case ML_MOD_EMBEDDING:
    case ML_MOD_POSITION:
    case ML_MOD_LM_HEAD:
    case ML_MOD_ROUTER:
    case ML_MOD_VISION:
    case ML_MOD_PROJECTOR: return false;
    default: break;
    }
    if (x->out_features == 1 || (f->experts_only && x->kind != ML_MOD_EXPERT))
        return false;
    return !ml_wq_skips(f, x->path);
}

/* Row-parallel linears (their inputs split over tp): o_proj, down_proj, out_proj. */
static bool row_parallel(const struct ml_tensor *x)
{
    const char *leaf = strrchr(x->path, '.');
    leaf = leaf ? leaf + 1 : x->path;
    return x->kind == ML_MOD_ATTN_O || x->kind == ML_MOD_MLP_DOWN || !strcmp(leaf, "down_proj") ||
           !strcmp(leaf, "w2") || !strcmp(leaf, "out_proj");
}

uint64_t ml_wq_weight_bytes(struct calc *k, const struct ml_weight_quant *f, uint64_t in, uint64_t out, uint64_t *state)
{
    uint64_t n = mul(k, in, out);
    *state = 0;
    switch (f->method) {
    case ML_WQ_BNB8: *state = mul(k, out, 4); return add(k, n, *state);
    case ML_WQ_BNB4:
        /* bitsandbytes 4-bit: 0.5 B + absmax per 64 (fp32 = 4/64 B; double quant: an 8-bit absmax
         * per block + an fp32 per 256 blocks = 1/64 + 4/16384 B). */
        *state = f->double_quant ? add(k, frac(k, n, 1, 64), frac(k, n, 4, 16384)) : frac(k, n, 4, 64);
        return add(k, frac(k, n, 1, 2), *state);
    case ML_WQ_FP8:
        /* e4m3 + one fp32 weight_scale_inv per block_out x block_in block (DeepSeek-V3's 128 x 128:
         * 41,540,496 scales, tests/unit/test_infer.c). */
        if (f->block_out && f->block_in)
            *state = mul3(k, ml_ceil_div_u64(out, f->block_out), ml_ceil_div_u64(in, f->block_in), f->scale_bytes);
        return add(k, n, *state);
    case ML_WQ_MXFP4:
        /* MXFP4: 4-bit E2M1 values + one E8M0 scale byte per 32 (4.25 bits a weight). */
        *state = ml_ceil_div_u64(n, 32);
        return add(k, frac(k, n, 1, 2), *state);
    case ML_WQ_AWQ:
    case ML_WQ_GPTQ:
    case ML_WQ_INT: {
        /* Packed weights + per group of g inputs and output column a scale and, with zero points,
         * a packed zero; GPTQ act-order adds an int32 group index per input. */
        uint64_t groups = mul(k, ml_ceil_div_u64(in, f->group ? f->group : in), out);
        *state = mul(k, groups, f->scale_bytes);
        if (f->zero)
            *state = add(k, *state, frac(k, groups, f->bits, 8));
        if (f->g_idx)
            *state = add(k, *state, mul(k, in, 4));
        return add(k, frac(k, n, f->bits, 8), *state);
    }
    case ML_WQ_NONE: break;
    }
    return n;
}

static struct gpu_weights weights_per_gpu(struct calc *k, const struct ml_arch *a, const struct ml_inventory *inv,
                                          const struct ml_infer *s, const struct ml_weight_quant *f)
{
    struct gpu_weights w;
    memset(&w, 0, sizeof(w));
    uint64_t tp = s->tp ? s->tp : 1, pp = s->pp ? s->pp : 1;
    uint64_t L = a->n_layers + a->n_encoder_layers;
    uint64_t e = elem_bytes(s);
    /* Pipeline stage 0 holds the embedding and ceil(L / pp) layers; the last stage the head.
     * The larger of the two is the GPU that decides. */
    uint64_t stage_layers = ml_ceil_div_u64(L ? L : 1, pp);
    uint64_t first = 0, last = 0, layers = 0;
    for (uint32_t i = 0; i < inv->n; i++) {
        const struct ml_tensor *x = &inv->t[i];
        if (x->mtp || x->tied)
            continue;
        uint64_t numel = mul(k, x->rows, x->cols ? x->cols : 1);
        if (x->kind == ML_MOD_EMBEDDING || x->kind == ML_MOD_POSITION) {
            /* vLLM VocabParallelEmbedding: rows padded to 64 and split over tp. */
            uint64_t rows = s->engine == ML_ENGINE_HF ? x->rows : ml_ceil_div_u64(x->rows, 64) * 64;
            first = add(k, first, mul3(k, part(rows, s->engine == ML_ENGINE_HF ? 1 : tp), x->cols ? x->cols : 1, e));
            continue;
        }
        if (x->kind == ML_MOD_LM_HEAD) {
            uint64_t rows = s->engine == ML_ENGINE_HF ? x->rows : ml_ceil_div_u64(x->rows, 64) * 64;
            uint64_t div = s->engine == ML_ENGINE_HF ? 1 : tp;
            last = add(k, last, mul3(k, part(rows, div), x->cols ? x->cols : 1, e));
            continue;
        }
        /* Inside the layers: linear weights in the format and split over tp; biases split with
         * their linear; norms replicated; fp32-kept tensors (the V3.2 indexer's weights_proj) at
         * 4 B. */
        uint64_t per_copy;
        uint64_t div =
            (x->linear || x->conv1d || x->packed || !strcmp(x->param, "bias")) && x->kind != ML_MOD_NORM ? tp : 1;
        if (ml_wq_tensor_quantized(x, f)) {
            uint64_t st;
            bool row = row_parallel(x);
            uint64_t in = part(x->in_features, row ? tp : 1);
            uint64_t out = part(x->out_features, row ? 1 : tp);
            per_copy = ml_wq_weight_bytes(k, f, in, out, &st);
            w.quant_state = add(k, w.quant_state, mul(k, st, x->copies));
            w.quantized = add(k, w.quantized, mul(k, mul(k, in, out), x->copies));
            w.max_linear = max2(w.max_linear, mul(k, in, out));
        } else {
            per_copy = mul(k, part(numel, div), x->keep_fp32 ? 4 : e);
        }
        layers = add(k, layers, mul(k, per_copy, x->copies));
    }
    /* Share of the layers on the busiest stage. */
    uint64_t layer_share = L ? ml_ceil_div_u64(mul(k, layers, stage_layers), L) : layers;
    if (pp > 1) {
        w.bytes = add(k, layer_share, max2(first, last));
        w.quant_state = ml_ceil_div_u64(mul(k, w.quant_state, stage_layers), L ? L : 1);
        w.quantized = ml_ceil_div_u64(mul(k, w.quantized, stage_layers), L ? L : 1);
    } else {
        w.bytes = add(k, add(k, layers, first), last);
    }
    return w;
}

uint64_t ml_infer_lora_slot_bytes(const struct ml_inventory *inv, const struct ml_infer *s)
{
    if (!s->enable_lora || s->engine != ML_ENGINE_VLLM)
        return 0;
    struct calc k = {false};
    uint64_t tp = s->tp ? s->tp : 1, r = s->max_lora_rank ? s->max_lora_rank : 16, n = s->max_loras ? s->max_loras : 1;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < inv->n; i++) {
        const struct ml_tensor *x = &inv->t[i];
        if (x->mtp || x->tied || !((x->linear && !strcmp(x->param, "weight")) || x->packed) || x->out_features == 1)
            continue;
        /* Only the language model's linears (get_supported_lora_modules; the tower and projector
         * need enable_tower_connector_lora), not the embedding or head. */
        if (x->kind == ML_MOD_EMBEDDING || x->kind == ML_MOD_POSITION || x->kind == ML_MOD_LM_HEAD ||
            x->kind == ML_MOD_ROUTER || x->kind == ML_MOD_VISION || x->kind == ML_MOD_PROJECTOR)
            continue;
        /* A: max_lora_rank x input, B: output x max_lora_rank; a row-parallel layer splits its
         * input, a column-parallel one its output (base_linear.py, row_parallel_linear.py). */
        bool row = row_parallel(x);
        uint64_t in = row ? part(x->in_features, tp) : x->in_features;
        uint64_t out = row ? x->out_features : part(x->out_features, tp);
        sum = add(&k, sum, mul(&k, x->copies, mul(&k, r, add(&k, in, out))));
    }
    uint64_t bytes = mul3(&k, sum, n, elem_bytes(s)); /* lora_dtype auto: the model dtype */
    bytes = ml_ceil_div_u64(bytes, s->pp ? s->pp : 1);
    return k.overflow ? UINT64_MAX : bytes;
}

/* ---- checks ------------------------------------------------------------------------------ */

static enum ml_status check(const struct ml_arch *a, const struct ml_inventory *inv, const struct ml_infer *s,
                            const struct ml_cluster *c, struct ml_diag *diag)
{
    if (!s->tp || !s->pp)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--tp and --pp must be at least 1"));
    if (a->n_heads % s->tp)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--tp %u does not divide the %u attention heads"), s->tp,
                           a->n_heads);
    if (a->n_kv_heads > s->tp && a->n_kv_heads % s->tp)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--tp %u does not divide the %u key/value heads"), s->tp,
                           a->n_kv_heads);
    if (s->pp > a->n_layers)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--pp %u exceeds the %u layers"), s->pp, a->n_layers);
    if (s->engine == ML_ENGINE_HF && (s->tp > 1 || s->pp > 1))
        return ml_diag_set(diag, ML_ERR_INVALID, _("--tp/--pp need a serving engine (--engine vllm or sglang)"));
    if (s->gpu_util_permille == 0 || s->gpu_util_permille > 1000)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--gpu-memory-utilization must be in (0, 1]"));
    if (s->mem_fraction_static_permille > 1000)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--mem-fraction-static must be in (0, 1]"));
    if (s->engine == ML_ENGINE_HF && s->batch == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--batch must be positive"));
    if (s->tp * s->pp > c->gpus_per_node * c->nodes)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--tp %u x --pp %u needs %u GPUs; --num-gpus gives %u"), s->tp,
                           s->pp, s->tp * s->pp, c->gpus_per_node * c->nodes);
    struct ml_weight_quant f;
    enum ml_status st = ml_infer_weight_format(a, s, &f, diag);
    if (st != ML_OK)
        return st;
    if (f.method == ML_WQ_GPTQ || f.method == ML_WQ_AWQ || f.method == ML_WQ_INT) {
        uint64_t g = f.group;
        if (!g && s->quant != ML_QUANT_NONE && a->wq.method == ML_WQ_NONE)
            return ml_diag_set(diag, ML_ERR_INVALID, _("--group-size must be positive"));
        for (uint32_t i = 0; g && i < inv->n; i++) {
            const struct ml_tensor *x = &inv->t[i];
            if (x->mtp || !ml_wq_tensor_quantized(x, &f))
                continue;
            uint64_t in = x->in_features / (row_parallel(x) ? s->tp : 1);
            if (in % g)
                return ml_diag_set(diag, ML_ERR_INVALID,
                                   _("--quant %s: %s has %llu inputs per GPU, not a multiple of --group-size %llu"),
                                   f.name, x->path, (unsigned long long)in, (unsigned long long)g);
        }
    }
    if (f.method != ML_WQ_NONE && s->precision == ML_PREC_FP32)
        return ml_diag_set(diag, ML_ERR_INVALID, _("--quant %s computes in 16 bits; use --dtype bf16 or fp16"), f.name);
    return ML_OK;
}

/* ---- engines ----------------------------------------------------------------------------- */

static void weights_entries(struct sink *sk, const struct ml_infer *s, const struct gpu_weights *w, uint32_t phases)
{
    const struct ml_weight_quant *f = &w->format;
    char fmt[96];
    ml_wq_describe(f, fmt, sizeof(fmt));
    if (f->method == ML_WQ_NONE) {
        entry(sk, ML_C_WEIGHTS_FROZEN, w->bytes, phases, ML_FIG_ALLOCATED, "notes §0", _("%llu B per parameter%s"),
              (unsigned long long)elem_bytes(s), s->tp > 1 ? _(" / tp (vocab padded to 64)") : "");
        return;
    }
    entry(sk, ML_C_WEIGHTS_FROZEN, w->bytes - w->quant_state, phases, ML_FIG_ALLOCATED,
          "infer.h formats (bitsandbytes, GPTQ/AWQ, fp8, mxfp4, torchao); docs/ledger.md quantized checkpoints",
          _("%s: %llu quantized params + 16-bit embeddings, head, norms"), fmt, (unsigned long long)w->quantized);
    entry(sk, ML_C_QUANT_STATE, w->quant_state, phases, ML_FIG_ALLOCATED, "notes §4.5; GPTQ/AWQ group scales",
          _("scales / absmax / zeros of the %s format"), f->name);
}

static void hf_generate(struct calc *k, struct sink *sk, const struct ml_arch *a, const struct ml_infer *s,
                        const struct ml_cluster *c, const struct gpu_weights *w, struct ml_serve *sv)
{
    struct ml_ledger *l = sk->l;
    uint64_t e = elem_bytes(s);
    uint64_t ctx = s->context ? s->context : 4096;
    /* Never clamped: transformers computes RoPE (and its scaling) past the trained length, so
     * the memory is that of the length asked; quality is the risk (ml_ledger_infer's note). */
    uint64_t b = s->batch;
    uint32_t ph = ML_PH(ML_PHASE_LOAD) | ML_PH(ML_PHASE_GENERATE);
    weights_entries(sk, s, w, ph);
    /* KV cache (notes: 2 x layers x kv_heads x head_dim x bytes per token). A DynamicCache grows
     * with torch.cat, so one layer's cache is copied once more at the end of each step. */
    uint64_t kv = mul(k, b, kv_bytes_for(k, a, s, ctx));
    entry(sk, ML_C_KV_CACHE, kv, ML_PH(ML_PHASE_GENERATE), ML_FIG_ALLOCATED, "seed handbook; transformers cache_utils",
          _("%llu B/token x batch %llu x %llu tokens%s"), (unsigned long long)ml_kv_bytes_per_token(a, s),
          (unsigned long long)b, (unsigned long long)ctx, s->static_cache ? " (StaticCache)" : "");
    /* Prefill working set: the MLP intermediates of the layer running (gate, up, act: 3 x i) plus
     * the residual and normed hidden states; eager attention materialises bf16 scores, fp32
     * softmax and bf16 probs (8 B x heads x s^2 per sequence). */
    uint64_t i = ffn_width(k, a);
    uint64_t act = mul3(k, b, ctx, mul(k, e, add(k, mul(k, 3, i), mul(k, 2, a->hidden))));
    uint64_t dyn = s->static_cache ? 0 : ml_ceil_div_u64(kv, a->n_layers ? a->n_layers : 1);
    entry(sk, ML_C_ACTIVATIONS, add(k, act, dyn), ML_PH(ML_PHASE_GENERATE), ML_FIG_ALLOCATED, "notes §4.1 (no_grad)",
          _("prefill of %llu tokens: b x s x (3i + 2h) x %llu B%s"), (unsigned long long)ctx, (unsigned long long)e,
          dyn ? _(" + one layer's cache copy") : "");
    if (s->attn == ML_ATTN_EAGER)
        entry(sk, ML_C_ATTN_SCORES, mul3(k, mul(k, b, a->n_heads), mul(k, ctx, ctx), 8), ML_PH(ML_PHASE_GENERATE),
              ML_FIG_ALLOCATED, "notes §4.1 eager attention", "8 B x b x heads x s^2 at prefill (one layer)");
    /* Logits: generate keeps only the last position from transformers 4.45 (logits_to_keep=1)
     * and copies it to fp32. Older versions computed every prompt position at prefill (only the
     * prompt runs through lm_head at once), and Llama-family forwards then call logits.float():
     * the 16-bit logits and their fp32 copy are live together, and outputs.logits[:, -1, :]
     * keeps the fp32 tensor for the step (LlamaForCausalLM.forward <= 4.44, generation/utils.py
     * _sample); GPT-2 and Qwen v1 keep the 16-bit logits and copy the last position. */
    uint64_t V = a->vocab;
    uint64_t sp = s->prompt && s->prompt < ctx ? s->prompt : ctx;
    bool old = s->transformers_version < ML_VER(4, 45, 0);
    uint64_t lg = !old                     ? mul3(k, b, V, e + 4)
                  : a->loss_in_param_dtype ? add(k, mul3(k, b, sp, mul(k, V, e)), mul3(k, b, V, 4))
                                           : mul3(k, b, sp, mul(k, V, e + 4));
    entry(sk, ML_C_LOGITS_LOSS, lg, ML_PH(ML_PHASE_GENERATE), ML_FIG_ALLOCATED,
          "transformers generation/utils.py; LlamaForCausalLM.forward (<= 4.44)",
          !old                     ? _("last position: b x V x (%llu + 4 fp32) B")
          : a->loss_in_param_dtype ? _("prompt logits b x prompt x V x %llu B + fp32 last position")
                                   : _("prompt logits b x prompt x V x (%llu + 4 fp32) B (logits.float())"),
          (unsigned long long)e);
    if (w->format.method == ML_WQ_BNB4 || w->format.method == ML_WQ_BNB8)
        entry(sk, ML_C_QLORA_DEQUANT, mul(k, w->max_linear, 2), ML_PH(ML_PHASE_GENERATE), ML_FIG_ALLOCATED,
              "notes §4.5 MatMul4Bit", _("2 B x the largest quantized weight (dequantized per call)"));
    entry(sk, ML_C_CUBLAS_WORKSPACE, ml_ledger_cublas_ws(c), ML_PH(ML_PHASE_GENERATE), ML_FIG_ALLOCATED,
          "notes §5 CublasHandlePool.cpp", _("one handle and stream"));
    entry(sk, ML_C_CUDA_CONTEXT, (uint64_t)512 << 20, ph, ML_FIG_DEVICE, "notes §5", _("CUDA/HIP context"));
    l->phase_active[ML_PHASE_LOAD] = l->phase_active[ML_PHASE_GENERATE] = true;
    sv->kv_bytes_per_token = ml_kv_bytes_per_token(a, s);
    sv->kv_bytes = kv;
    sv->kv_tokens = mul(k, b, ctx);
    sv->weights_bytes = w->bytes;
    sv->max_model_len = ctx;
    uint32_t extra[ML_PHASE_COUNT] = {0};
    /* A static graph of shapes (batch 1, a fixed cache) fragments little: 4 %; a dynamic cache
     * re-allocates every step: + 4 % (notes §5 mechanisms (5)). */
    ml_ledger_finish(l, sk, s->static_cache ? 40 : 80, extra, ph, c->gpu.capacity_bytes, 50);
}

/* vLLM's profile-run activation peak (gpu_model_runner profile_run / _dummy_run and
 * _dummy_sampler_run): max_num_batched_tokens tokens through the model - at the MLP the residual
 * and normed hidden states (2h) plus gate/up (2i/tp) and the activation (i/tp) - and the sampler on
 * max_num_seqs rows of full-vocabulary fp32 logits and probabilities (8 B x V each). */
static uint64_t vllm_activation(struct calc *k, const struct ml_arch *a, const struct ml_infer *s, uint64_t T,
                                uint64_t S)
{
    uint64_t e = elem_bytes(s);
    uint64_t tp = s->tp ? s->tp : 1;
    uint64_t i = ffn_width(k, a);
    uint64_t per_token = mul(k, e, add(k, mul(k, 2, a->hidden), ml_ceil_div_u64(mul(k, 3, i), tp)));
    return add(k, mul(k, T, per_token), mul3(k, S, a->vocab, 8));
}

/* The largest multimodal item vLLM profiles with, in language-model tokens, and its patches: the
 * Qwen towers' image of the most features, smart_resize of a huge square within the processor's
 * max_pixels (vllm/model_executor/models/qwen2_vl.py Qwen2VLProcessingInfo
 * get_image_size_with_most_features / get_max_image_tokens; Qwen2.5-VL max_pixels 12845056,
 * Qwen3-VL longest_edge 16777216: 16384 tokens each); fixed-size towers their tokens per image. */
static uint64_t mm_max_item(const struct ml_vision *vs, uint64_t *patches)
{
    uint64_t p = vs->patch ? vs->patch : 14, m = vs->merge ? vs->merge : 1;
    if (vs->kind == ML_VISION_QWEN2_5 || vs->kind == ML_VISION_QWEN3) {
        uint64_t lo = vs->kind == ML_VISION_QWEN2_5 ? 3136 : 65536,
                 hi = vs->kind == ML_VISION_QWEN2_5 ? 12845056 : 16777216;
        uint64_t h, w;
        ml_smart_resize(9999999, 9999999, p * m, lo, hi, &h, &w);
        *patches = (h / p) * (w / p);
        return *patches / (m * m);
    }
    uint64_t side = vs->image_size ? vs->image_size / p : 0;
    *patches = side * side;
    return vs->tokens_per_image ? vs->tokens_per_image : *patches / 4;
}

/*
 * vLLM V1's multimodal profile (gpu_model_runner.py profile_run; docs/ledger.md "vLLM multimodal
 * profile"): before the text dummy run the encoder runs on a batch of the largest items, and their
 * outputs stay in the encoder cache through it. Items: max(1, min(budget / T, max_num_seqs x
 * max(1, max_model_len / T))) with budget = max(max_num_batched_tokens, T)
 * (vllm/multimodal/budget.py MultiModalBudget._get_max_items; vllm/v1/core/encoder_cache_manager.py
 * compute_mm_encoder_budget). Peak: max(pixels + tower working set + outputs, outputs + the text
 * profile) - the text profile, with pixels channels x temporal x patch^2 values a patch, the tower
 * e(2h + 3i/tp) a patch (the text model's profile rule), outputs (1 + deepstack) x the text width a
 * token. Returns the bytes above the text profile; items and tokens per item in *n, *t.
 */
static uint64_t vllm_mm_profile(struct calc *k, const struct ml_arch *a, const struct ml_infer *s, uint64_t B,
                                uint64_t S, uint64_t mml, uint64_t lm_act, uint64_t *n, uint64_t *t)
{
    const struct ml_vision *vs = &a->vision;
    uint64_t patches = 0, T = mm_max_item(vs, &patches);
    *n = *t = 0;
    if (vs->kind == ML_VISION_NONE || !T || !patches)
        return 0;
    uint64_t budget = max2(B, T), per_prompt = max2(1, mml / T);
    uint64_t items = max2(1, budget / T < mul(k, S, per_prompt) ? budget / T : mul(k, S, per_prompt));
    uint64_t e = elem_bytes(s), tp = s->tp ? s->tp : 1, p = vs->patch ? vs->patch : 14;
    uint64_t all = mul(k, items, patches);
    uint64_t pix =
        mul3(k, all, mul3(k, vs->channels ? vs->channels : 3, vs->temporal_patch ? vs->temporal_patch : 1, p * p), e);
    uint64_t work = mul3(k, all, e, add(k, mul(k, 2, vs->hidden), ml_ceil_div_u64(mul(k, 3, vs->intermediate), tp)));
    uint64_t width = vs->out_hidden ? vs->out_hidden : a->hidden;
    uint64_t out = mul3(k, mul(k, items, T), mul(k, 1 + (uint64_t)vs->deepstack, width), e);
    uint64_t peak = max2(add(k, add(k, pix, work), out), add(k, out, lm_act));
    *n = items;
    *t = T;
    return peak - lm_act;
}

/* vLLM's _get_and_verify_max_len (vllm/config/model.py): a max_model_len over the derived length
 * is a ValueError unless it is within the config's model_max_length or
 * VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; SGLang's ModelConfig refuses a context_length past its derived
 * one the same way unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1. */
static bool over_derived(const struct ml_arch *a, const struct ml_infer *s, uint64_t mml)
{
    if (s->allow_long || !a->engine_max_len || mml <= a->engine_max_len)
        return false;
    return s->engine == ML_ENGINE_SGLANG || !a->model_max_length || mml > a->model_max_length;
}

static void over_derived_text(const struct ml_arch *a, const struct ml_infer *s, uint64_t mml, char *out, size_t cap)
{
    if (s->engine == ML_ENGINE_SGLANG) {
        (void)snprintf(out, cap,
                       "User-specified context_length (%llu) is greater than the derived context_length (%llu). This "
                       "may lead to incorrect model outputs or CUDA errors. To allow overriding this maximum, set the "
                       "env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 (memledger: --allow-long-max-model-len)",
                       (unsigned long long)mml, (unsigned long long)a->engine_max_len);
        return;
    }
    char mml_s[32] = "None";
    if (a->model_max_length)
        (void)snprintf(mml_s, sizeof(mml_s), "%llu", (unsigned long long)a->model_max_length);
    (void)snprintf(
        out, cap,
        "User-specified max_model_len (%llu) is greater than the derived max_model_len (max_position_embeddings=%llu "
        "or model_max_length=%s in model's config.json). To allow overriding this maximum, set the env var "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (memledger: --allow-long-max-model-len).",
        (unsigned long long)mml, (unsigned long long)a->engine_max_len, mml_s);
}

uint64_t ml_infer_len_limit(const struct ml_arch *a, const struct ml_infer *s)
{
    if (s->engine == ML_ENGINE_HF || s->allow_long || !a->engine_max_len)
        return 0;
    if (s->engine == ML_ENGINE_VLLM && a->model_max_length > a->engine_max_len)
        return a->model_max_length; /* over_derived: accepted within model_max_length */
    return a->engine_max_len;
}

uint32_t ml_sglang_fraction(uint32_t tp)
{
    return tp >= 16 ? 790 : tp >= 8 ? 810 : tp >= 4 ? 850 : tp >= 2 ? 870 : 880;
}

static const uint64_t ctx_bytes = (uint64_t)512 << 20; /* the CUDA context (notes §5) */

uint32_t ml_infer_util_limit(uint64_t capacity_bytes)
{
    if (capacity_bytes <= ctx_bytes)
        return 0;
    /* total x u <= free = total - context; rounded down to hundredths, as a user writes it. */
    uint64_t pm = (capacity_bytes - ctx_bytes) * 1000 / capacity_bytes;
    return (uint32_t)(pm > 1000 ? 1000 : pm / 10 * 10);
}

/* Errors before the KV pool is sized (sv->error, sv->error_text; true when one is raised).
 * vLLM V1's worker asks at start for total x gpu_memory_utilization of free memory, free being the
 * total less the CUDA context (and other processes, not modelled): a higher utilization is a
 * ValueError before any weight loads (vllm/v1/worker/utils.py request_memory, called by
 * gpu_worker.py init_device). Then both engines load the weights into the GPU whatever the
 * utilization or fraction: weights past the free memory are a CUDA out-of-memory error while
 * loading, which no utilization, fraction or max_model_len changes. */
static bool preload_error(const struct ml_infer *s, struct ml_serve *sv, uint64_t cap, bool v1)
{
    /* First vLLM's scheduler refuses fewer batched tokens than sequences as its config is made
     * (vllm/config/scheduler.py SchedulerConfig.verify_max_model_len): only given ones are checked
     * (it bounds its own default by the other sizes). */
    if (s->engine == ML_ENGINE_VLLM && s->max_num_batched_tokens && sv->max_num_batched_tokens < sv->max_num_seqs) {
        sv->error = ML_SERVE_SCHED_SIZES;
        (void)snprintf(sv->error_text, sizeof(sv->error_text),
                       "max_num_batched_tokens (%llu) must be greater than or equal to max_num_seqs (%llu).",
                       (unsigned long long)sv->max_num_batched_tokens, (unsigned long long)sv->max_num_seqs);
        return true;
    }
    char free_s[24], total_s[24], want_s[24], w_s[24];
    uint64_t free = cap > ctx_bytes ? cap - ctx_bytes : 0, want = ml_ceil_div_u64(cap * s->gpu_util_permille, 1000);
    ml_fmt_gib_num_s(free_s, sizeof(free_s), free), ml_fmt_gib_num_s(total_s, sizeof(total_s), cap);
    if (s->engine == ML_ENGINE_VLLM && v1 && free < want) {
        /* the utilization as Python prints the float: "0.85", "1.0" */
        uint32_t u = s->gpu_util_permille;
        char u_s[16];
        (void)snprintf(u_s, sizeof(u_s), "%u.%03u", u / 1000, u % 1000);
        for (size_t k = strlen(u_s); k > 3 && u_s[k - 1] == '0';)
            u_s[--k] = '\0';
        ml_fmt_gib_num_s(want_s, sizeof(want_s), want);
        sv->error = ML_SERVE_UTIL_OVER_FREE;
        (void)snprintf(sv->error_text, sizeof(sv->error_text),
                       "Free memory on device cuda:0 (%s/%s GiB) on startup is less than desired GPU memory "
                       "utilization (%s, %s GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
                       "processes. (memledger: at most --gpu-memory-utilization 0.%02u on this GPU with nothing "
                       "else on it)",
                       free_s, total_s, u_s, want_s, ml_infer_util_limit(cap) / 10);
        return true;
    }
    if (sv->weights_bytes > free) {
        ml_fmt_gib_num_s(w_s, sizeof(w_s), sv->weights_bytes);
        sv->error = ML_SERVE_WEIGHTS_OOM;
        (void)snprintf(sv->error_text, sizeof(sv->error_text),
                       "torch.OutOfMemoryError: CUDA out of memory while loading the weights (memledger: %s GiB of "
                       "weights per GPU, %s GiB free of %s GiB after the CUDA context). No %s helps: quantize the "
                       "weights (--quant), split them over more GPUs (--tp), or use a GPU with more memory.",
                       w_s, free_s, total_s,
                       s->engine == ML_ENGINE_SGLANG ? "--mem-fraction-static" : "--gpu-memory-utilization");
        return true;
    }
    return false;
}

/* The error the engine would raise at start-up, in its own words (sv->error, sv->error_text).
 * SGLang refuses to start only when the pool is empty (model_runner.py init_memory_pool: "Not
 * enough memory. Please try to increase --mem-fraction-static.") or too small for a request of a
 * few tokens (tp_worker.py TpModelWorker: max_req_input_len = max_req_len - 5 must be positive,
 * "Memory pool size is too small"). A pool under one context_length request is no error there:
 * it starts and caps every request at max_req_len = min(context_len - 1, max_total_num_tokens -
 * 1); a longer prompt is refused (managers/utils.py validate_input_length) - sv->req_capped. */
static void startup_error(struct calc *k, const struct ml_arch *a, const struct ml_infer *s, struct ml_serve *sv,
                          uint64_t kv, uint64_t one_seq, uint64_t mml, bool v1)
{
    if (over_derived(a, s, mml)) {
        sv->error = ML_SERVE_MAX_LEN_OVER_MODEL;
        over_derived_text(a, s, mml, sv->error_text, sizeof(sv->error_text));
    } else if (s->engine == ML_ENGINE_SGLANG) {
        uint64_t toks = sv->pool_len_fit < sv->kv_tokens ? sv->pool_len_fit : sv->kv_tokens;
        uint64_t ctx_cap = mml ? mml - 1 : UINT64_MAX; /* no length known: the pool alone */
        sv->max_req_len = toks ? (ctx_cap < toks - 1 ? ctx_cap : toks - 1) : 0;
        if (kv == 0 || sv->kv_tokens == 0) {
            sv->error = ML_SERVE_NO_CACHE_BLOCKS;
            (void)snprintf(sv->error_text, sizeof(sv->error_text),
                           "Not enough memory. Please try to increase --mem-fraction-static.");
        } else if (sv->max_req_len <= 5) {
            sv->error = ML_SERVE_NO_CACHE_BLOCKS;
            (void)snprintf(sv->error_text, sizeof(sv->error_text), "Memory pool size is too small");
        } else {
            sv->req_capped = one_seq > kv;
        }
    } else if (kv == 0 || sv->kv_blocks == 0) {
        sv->error = ML_SERVE_NO_CACHE_BLOCKS;
        (void)snprintf(sv->error_text, sizeof(sv->error_text),
                       "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                       "initializing the engine.");
    } else if (one_seq > kv) {
        sv->error = ML_SERVE_MAX_LEN_TOO_LARGE;
        /* GiB with two decimals by integer arithmetic (no floating point in the core). */
        uint64_t need = (mul(k, one_seq, 100) + ((uint64_t)1 << 29)) >> 30;
        uint64_t have = (mul(k, kv, 100) + ((uint64_t)1 << 29)) >> 30;
        if (v1)
            (void)snprintf(sv->error_text, sizeof(sv->error_text),
                           "To serve at least one request with the models's max seq len (%llu), %llu.%02llu GiB KV "
                           "cache is needed, which is larger than the available KV cache memory (%llu.%02llu GiB). "
                           "Based on the available memory, the estimated maximum model length is %llu. Try increasing "
                           "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
                           (unsigned long long)mml, (unsigned long long)(need / 100), (unsigned long long)(need % 100),
                           (unsigned long long)(have / 100), (unsigned long long)(have % 100),
                           (unsigned long long)sv->max_model_len_fit);
        else
            (void)snprintf(sv->error_text, sizeof(sv->error_text),
                           "The model's max seq len (%llu) is larger than the maximum number of tokens that can be "
                           "stored in KV cache (%llu). Try increasing `gpu_memory_utilization` or decreasing "
                           "`max_model_len` when initializing the engine.",
                           (unsigned long long)mml, (unsigned long long)sv->kv_tokens);
    }
}

/* The profile run's size (max_model_len, max_num_batched_tokens, max_num_seqs into sv). V1 (vllm/v1/worker/gpu_model_runner.py profile_run: _dummy_run of
 * max_num_tokens, then _dummy_sampler_run) always prefills in chunks, with the scheduler
 * defaults of vllm/engine/arg_utils.py get_batch_defaults: GPUs of >= 70 GiB that are not
 * A100s: 8192 batched tokens for `vllm serve`, 16384 offline, 1024 sequences; others 2048 /
 * 8192 and 256. V0 (vllm/worker/model_runner.py GPUModelRunnerBase.profile_run, called by
 * vllm/worker/worker.py determine_num_available_blocks: max_num_seqs dummy sequences holding
 * max_num_batched_tokens tokens in all) prefills whole prompts, so with chunked prefill off
 * SchedulerConfig sizes it max(max_model_len, 2048) tokens and 256 sequences: at a long
 * max_model_len the activation profile is large and the KV pool small. Except that above 32K
 * tokens of max_model_len V0 switches chunked prefill on by itself (use_long_context:
 * EngineArgs.create_engine_config in 0.5-0.7, _set_default_args_v0 from 0.8) on GPUs for
 * models without a sliding window and without LoRA (nor speculative decoding, not modelled;
 * from 0.8, where V0 is VLLM_USE_V1=0 only, not modelled either, nor for multimodal or MLA
 * models); SchedulerConfig then takes 512 batched tokens ("Chunked prefill
 * is enabled with max_num_batched_tokens=512"): the profile run shrinks, the KV cache grows
 * (vllm#10517: 29K fails where 35K and 45K start). */
static void scheduler_sizes(const struct ml_arch *a, const struct ml_infer *s, const struct ml_cluster *c, bool v1,
                            struct ml_serve *sv)
{
    uint64_t cap = c->gpu.capacity_bytes;
    uint64_t mml = s->max_model_len ? s->max_model_len : a->engine_max_len;
    bool big = cap >= ((uint64_t)70 << 30) && strncmp(c->gpu.name, "a100", 4) != 0;
    bool v0_long = !v1 && mml > 32768 && !a->sliding_window && !s->enable_lora;
    uint64_t T = s->max_num_batched_tokens, S = s->max_num_seqs;
    if (s->engine == ML_ENGINE_SGLANG) {
        /* SGLang's chunked_prefill_size by the GPU's memory (server_args.py ServerArgs.__post_init__
         * in the 0.4 series: 2048 under 25,000 MiB, 8192 above); max_running_requests follows the
         * KV pool and is set in serving() (sglang_requests). */
        sv->max_model_len = mml;
        sv->max_num_batched_tokens = T ? T : cap < ((uint64_t)25000 << 20) ? 2048 : 8192;
        sv->max_num_seqs = S;
        return;
    }
    if (!T)
        T = v0_long ? 512 : !v1 ? max2(mml, 2048) : big ? (s->offline ? 16384 : 8192) : (s->offline ? 8192 : 2048);
    if (!S)
        S = v1 && big ? 1024 : 256;
    sv->max_model_len = mml;
    sv->max_num_batched_tokens = T;
    sv->max_num_seqs = S;
}

/* SGLang's max_running_requests: as given, else from the pool (model_runner.py init_memory_pool:
 * the req_to_token_pool holds min(max(tokens / context_len x 512, 2048), 4096) requests;
 * tp_worker.py TpModelWorker: max_running_requests = min(max_total_num_tokens // 2, that)). */
static uint64_t sglang_requests(const struct ml_infer *s, uint64_t tokens, uint64_t context_len)
{
    if (s->max_num_seqs)
        return s->max_num_seqs;
    uint64_t est = context_len ? tokens / context_len * 512 + tokens % context_len * 512 / context_len : 0;
    est = est < 2048 ? 2048 : est > 4096 ? 4096 : est;
    return tokens / 2 < est ? tokens / 2 : est;
}

/* One max_model_len request's KV bytes (returned) and the longest length the pool of kv bytes
 * holds (sv->pool_len_fit), capped at the engine's limit (sv->max_model_len_fit); SGLang's
 * max_running_requests from the pool. */
static uint64_t length_fit(struct calc *k, const struct ml_arch *a, const struct ml_infer *s, struct ml_serve *sv,
                           uint64_t kv, uint64_t mml, const struct vllm_hybrid *hy)
{
    uint64_t per_tok = sv->kv_bytes_per_token;
    /* Sliding-window models need fewer bytes per token at long lengths; the largest length that
     * fits is found on the full-attention layers. */
    uint64_t one_seq =
        hy ? vllm_hybrid_bytes(k, a, s, hy, mml, sv->max_num_batched_tokens) : kv_bytes_for(k, a, s, mml);
    sv->one_request_bytes = one_seq;
    sv->max_model_len_fit = sv->kv_tokens;
    if (hy) {
        /* vLLM's estimate_max_model_len: the longest length whose request the check passes,
         * by bisection (the blocks grow with the length). */
        uint64_t lo = 0, hi = (uint64_t)1 << 36;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo + 1) / 2;
            if (vllm_hybrid_bytes(k, a, s, hy, mid, sv->max_num_batched_tokens) <= kv)
                lo = mid;
            else
                hi = mid - 1;
        }
        sv->max_model_len_fit = lo;
    } else if (bounded_layers(a) && one_seq != mul(k, per_tok, mml)) {
        /* Past the windows only the full layers grow: fixed = the bounded layers at their bound
         * and the linear states, per_full = the full layers per token. */
        uint64_t bound = a->sliding_window > a->attn_chunk ? a->sliding_window : a->attn_chunk;
        uint64_t per_full = mul(k, stage_layers(a, s, ML_LAYER_FULL), kv_layer_token(a, s));
        uint64_t fixed = kv_bytes_for(k, a, s, bound) - mul(k, per_full, bound);
        sv->max_model_len_fit = per_full && kv > fixed ? (kv - fixed) / per_full
                                : per_full             ? 0
                                                       : (kv >= fixed ? UINT64_MAX : 0);
        if (sv->max_model_len_fit == UINT64_MAX)
            sv->max_model_len_fit = a->engine_max_len;
    }
    /* The longest length the pool holds is no setting the engine takes past its limit: vLLM's
     * ValueError, SGLang's (over_derived). The cap, not memory, is then the limit. */
    sv->pool_len_fit = sv->max_model_len_fit;
    sv->max_len_limit = ml_infer_len_limit(a, s);
    if (sv->max_len_limit && sv->max_model_len_fit > sv->max_len_limit)
        sv->max_model_len_fit = sv->max_len_limit;
    if (s->engine == ML_ENGINE_SGLANG)
        sv->max_num_seqs = sglang_requests(s, sv->kv_tokens, mml);
    return one_seq;
}

/* The KV pool in blocks and tokens (sv->kv_blocks, sv->kv_tokens) and its ledger entry; true
 * when vLLM's hybrid KV cache manager sizes it (*hy). */
static bool kv_pool(struct calc *k, struct sink *sk, const struct ml_arch *a, const struct ml_infer *s,
                    struct ml_serve *sv, uint64_t kv, uint32_t page, bool v1, struct vllm_hybrid *hy)
{
    uint64_t per_tok = sv->kv_bytes_per_token, blk = mul(k, per_tok, page);
    bool hybrid = v1 && vllm_hybrid(a, s, hy);
    sv->page_tokens = page;
    sv->kv_blocks = hybrid ? kv / hy->page / hy->stage : blk ? kv / blk : 0;
    /* vLLM logs "GPU KV cache size: N tokens" as blocks / groups x block_size
     * (kv_cache_utils.py _report_kv_cache_config). */
    sv->kv_tokens = mul(k, hybrid ? sv->kv_blocks / hy->groups : sv->kv_blocks, page);
    sv->kv_bytes = kv;
    if (hybrid)
        entry(sk, ML_C_KV_CACHE, kv, ML_PH(ML_PHASE_SERVING), ML_FIG_ALLOCATED,
              "vllm gpu_worker determine_available_memory; kv_cache_utils.py get_kv_cache_config_from_groups",
              _("budget - weights - activations - non-torch = %llu blocks x %llu layers x %llu B"),
              (unsigned long long)sv->kv_blocks, (unsigned long long)hy->stage, (unsigned long long)hy->page);
    else
        entry(sk, ML_C_KV_CACHE, kv, ML_PH(ML_PHASE_SERVING), ML_FIG_ALLOCATED,
              s->engine == ML_ENGINE_VLLM ? "vllm gpu_worker determine_available_memory"
                                          : "sglang profile_max_num_token",
              s->engine == ML_ENGINE_VLLM ? _("budget - weights - activations - non-torch = %llu tokens x %llu B")
                                          : _("capacity x mem_fraction_static - weights = %llu tokens x %llu B"),
              (unsigned long long)sv->kv_tokens, (unsigned long long)per_tok);
    return hybrid;
}

static void serving(struct calc *k, struct sink *sk, const struct ml_arch *a, const struct ml_infer *s,
                    const struct ml_cluster *c, const struct gpu_weights *w, struct ml_serve *sv)
{
    struct ml_ledger *l = sk->l;
    uint64_t cap = c->gpu.capacity_bytes;
    /* The engine a version starts by default: V1 from 0.8.0 (vllm#13726, "V1 is now enabled by
     * default"; VLLM_USE_V1=0 kept V0 selectable, not modelled), V0 before. */
    bool v1 = s->vllm_version >= ML_VER(0, 8, 0);
    uint32_t ph = ML_PH(ML_PHASE_LOAD) | ML_PH(ML_PHASE_SERVING);
    scheduler_sizes(a, s, c, v1, sv);
    uint64_t T = sv->max_num_batched_tokens, S = sv->max_num_seqs, mml = sv->max_model_len;
    weights_entries(sk, s, w, ph);
    uint64_t budget, act = 0, nt = 0;
    if (s->engine == ML_ENGINE_VLLM) {
        budget = ml_ceil_div_u64(mul(k, cap, s->gpu_util_permille), 1000);
        act = vllm_activation(k, a, s, T, S);
        /* Non-torch memory the profiler books (start-up logs): V1 0.13-0.24 GiB at tp 1, so
         * 0.25 GiB, + 0.5 GiB of NCCL / custom all-reduce buffers at tp > 1 [L]; V0 (0.6.5,
         * vLLM PR #10511): 1.79 GiB at tp 1, 3.58 GiB at tp 2. */
        if (v1)
            nt = ((uint64_t)256 << 20) + (s->tp > 1 ? (uint64_t)512 << 20 : 0);
        else
            nt = s->tp > 1 ? 3843995812ull : 1921997906ull;
        entry(sk, ML_C_ACTIVATIONS, act, ML_PH(ML_PHASE_SERVING), ML_FIG_ALLOCATED, "vllm gpu_model_runner profile_run",
              _("profile run: %llu tokens x e(2h + 3i/tp) + %llu seqs x V x 8 B"), (unsigned long long)T,
              (unsigned long long)S);
        uint64_t mm_items = 0, mm_tok = 0;
        uint64_t mm = v1 ? vllm_mm_profile(k, a, s, T, S, mml, act, &mm_items, &mm_tok) : 0;
        entry(sk, ML_C_VISION_ACT, mm, ML_PH(ML_PHASE_SERVING), ML_FIG_ALLOCATED,
              "vllm gpu_model_runner profile_run; multimodal/budget.py _get_max_items",
              _("multimodal profile: %llu item(s) of %llu tokens through the tower, outputs cached"),
              (unsigned long long)mm_items, (unsigned long long)mm_tok);
        act = add(k, act, mm);
        entry(sk, ML_C_NON_TORCH, nt, ML_PH(ML_PHASE_SERVING), ML_FIG_DEVICE, "vllm start-up logs (non-torch increase)",
              v1 ? _("V1 engine%s") : _("V0 engine%s"), s->tp > 1 ? _(", tensor parallel buffers") : "");
    } else {
        /* SGLang: mem_fraction_static of the memory holds weights and the KV pool; the rest is
         * for activations and CUDA graphs (python/sglang/srt/model_executor/model_runner.py).
         * profile_max_num_token: rest = available - total x (1 - f), with total the free memory
         * after init_torch_distributed (the context already in use) and available the free memory
         * after loading: the pool is f x (capacity - context) - weights, not capacity x f - weights
         * (issue 12 item 6). */
        uint32_t f = s->mem_fraction_static_permille ? s->mem_fraction_static_permille : ml_sglang_fraction(s->tp);
        uint64_t ctx0 = (uint64_t)512 << 20;
        budget = ml_ceil_div_u64(mul(k, cap > ctx0 ? cap - ctx0 : 0, f), 1000);
        sv->mem_fraction_permille = f;
    }
    sv->budget_bytes = budget;
    sv->weights_bytes = add(k, w->bytes, w->lora); /* vLLM's "model loading" figure includes the LoRA slots */
    sv->activation_bytes = act;
    sv->non_torch_bytes = nt;
    if (w->lora)
        entry(sk, ML_C_WEIGHTS_FROZEN, w->lora, ph, ML_FIG_ALLOCATED,
              "vllm/lora/layers/base_linear.py create_lora_weights",
              _("LoRA slots: %u adapter(s) x rank %u x (in + out) x %llu B per linear layer"),
              s->max_loras ? s->max_loras : 1, s->max_lora_rank ? s->max_lora_rank : 16,
              (unsigned long long)elem_bytes(s));
    uint64_t used = add(k, add(k, add(k, w->bytes, w->lora), act), nt);
    uint64_t per_tok = ml_kv_bytes_per_token(a, s);
    sv->kv_bytes_per_token = per_tok;
    uint64_t kv = budget > used ? budget - used : 0;
    /* vLLM cuts the pool into blocks of block_size tokens; SGLang into pages of page_size, 1 by
     * default (server_args.py ServerArgs.page_size; model_runner.py: max_total_num_tokens //
     * page_size * page_size). */
    uint32_t page = s->engine == ML_ENGINE_SGLANG ? 1 : s->block_size ? s->block_size : 16;
    struct vllm_hybrid hy;
    bool hybrid = kv_pool(k, sk, a, s, sv, kv, page, v1, &hy);
    uint64_t one_seq = length_fit(k, a, s, sv, kv, mml, hybrid ? &hy : NULL);
    /* vLLM's "Maximum concurrency" (get_max_concurrency_for_kv_cache_config): blocks over one
     * request's blocks; elsewhere bytes over one request's bytes. */
    uint64_t req_blocks = hybrid ? vllm_hybrid_blocks(a, s, &hy, mml, T) : 0;
    sv->max_concurrency_x100 = req_blocks ? mul(k, sv->kv_blocks, 100) / req_blocks
                               : one_seq  ? mul(k, kv, 100) / one_seq
                                          : 0;
    if (!preload_error(s, sv, cap, v1))
        startup_error(k, a, s, sv, kv, one_seq, mml, v1);
    if (sv->req_capped && c->gpu.capacity_bytes > ((uint64_t)512 << 20)) {
        /* The fraction whose pool holds one context_length request: (weights + one request) /
         * (capacity - context), as profile_max_num_token divides. */
        uint64_t need = ml_ceil_div_u64(mul(k, add(k, sv->weights_bytes, one_seq), 1000),
                                        c->gpu.capacity_bytes - ((uint64_t)512 << 20));
        sv->need_fraction_permille = need <= 1000 ? (uint32_t)need : 0;
    }
    /* CUDA graphs are captured after the KV cache is allocated, in the memory the utilization
     * leaves free (vLLM logs "Graph capturing finished ... took ~0.5 GiB" for 7-8B models) [L]. */
    if (!s->enforce_eager)
        entry(sk, ML_C_CUDA_GRAPHS, (uint64_t)512 << 20, ML_PH(ML_PHASE_SERVING), ML_FIG_DEVICE,
              s->engine == ML_ENGINE_SGLANG ? "sglang cuda_graph_runner.py; vllm start-up logs [L]"
                                            : "vllm start-up logs [L]",
              s->engine == ML_ENGINE_SGLANG ? _("captured decode graphs (SGLang's --disable-cuda-graph removes them)")
                                            : _("captured decode graphs (--enforce-eager removes them)"));
    entry(sk, ML_C_CUDA_CONTEXT, (uint64_t)512 << 20, ph, ML_FIG_DEVICE, "notes §5", _("CUDA/HIP context"));
    l->phase_active[ML_PHASE_LOAD] = l->phase_active[ML_PHASE_SERVING] = true;
    uint32_t extra[ML_PHASE_COUNT] = {0};
    /* The KV pool is one allocation per layer group; rounding only: 1 %. */
    ml_ledger_finish(l, sk, 10, extra, ph, cap, 10); /* an engine fills its budget by design: tight below 1 % */
    if (sv->error != ML_SERVE_OK || sv->req_capped) {
        l->fits = false;
        l->verdict = ML_NO_FIT;
        if (!l->deficit)
            l->deficit = one_seq > kv ? one_seq - kv : 1;
        l->headroom = 0;
    }
}

/* The length against the model's own: hf past the trained context (a note; the estimate is for the
 * length asked), an engine let past its derived limit by the environment variable (its warning). */
static void context_notes(const struct ml_arch *a, const struct ml_infer *s, const struct ml_serve *sv,
                          struct ml_ledger *out)
{
    uint64_t limit = a->engine_max_len ? a->engine_max_len : a->max_positions;
    if (s->engine == ML_ENGINE_HF && sv->max_model_len > limit)
        note(out,
             _("%llu tokens is past the model's trained context (%llu); transformers computes the positions anyway, "
               "the estimate uses your length and quality is the risk"),
             (unsigned long long)sv->max_model_len, (unsigned long long)limit);
    if (s->engine != ML_ENGINE_HF && s->allow_long && sv->max_model_len > limit)
        note(out,
             _("max_model_len %llu is past the derived %llu and starts only with %s=1: with RoPE, positions past it "
               "can produce NaN"),
             (unsigned long long)sv->max_model_len, (unsigned long long)limit,
             s->engine == ML_ENGINE_VLLM ? "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
                                         : "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN");
    /* V0's non-torch figure is one published log's (vllm PR #10511); another books 0.46 GiB
     * (vllm#10517): docs/ledger.md, Known gaps. */
    const uint64_t v0_low = (uint64_t)471 << 20; /* vllm#10517's 0.46 GiB */
    if (s->engine == ML_ENGINE_VLLM && s->vllm_version < ML_VER(0, 8, 0) && sv->non_torch_bytes > v0_low)
        note(out,
             _("V0 non-torch memory taken as %.2f GiB (vllm PR #10511); vllm#10517 shows 0.46 GiB: the KV pool may "
               "be up to %.2f GiB larger"),
             (double)sv->non_torch_bytes / (1 << 30), (double)(sv->non_torch_bytes - v0_low) / (1 << 30));
}

/* One note per bounded layer kind: what each holds instead of the whole context. */
static void kv_notes(const struct ml_arch *a, const struct ml_infer *s, const struct ml_serve *sv,
                     struct ml_ledger *out)
{
    uint32_t sl = ml_arch_n_layers_attn(a, ML_LAYER_SLIDING), ch = ml_arch_n_layers_attn(a, ML_LAYER_CHUNKED);
    uint32_t li = ml_arch_n_layers_attn(a, ML_LAYER_LINEAR);
    struct vllm_hybrid hy;
    if (sv->page_tokens && vllm_hybrid(a, s, &hy)) {
        /* vLLM holds more than the window: what the hybrid KV cache manager holds instead. */
        sl = ch = 0;
        uint64_t T = sv->max_num_batched_tokens, mml = sv->max_model_len;
        note(out,
             _("vLLM's hybrid KV cache manager: %llu groups of %llu layers (%llu full, %llu sliding, %llu chunked; "
               "a kind's last group padded) share %llu blocks of %u tokens; one %llu-token request takes %llu "
               "blocks: a full layer's every token, a sliding layer min(window - 1 + %llu batched tokens, length) "
               "+ 1 block"),
             (unsigned long long)hy.groups, (unsigned long long)hy.group, (unsigned long long)hy.n[ML_LAYER_FULL],
             (unsigned long long)hy.n[ML_LAYER_SLIDING], (unsigned long long)hy.n[ML_LAYER_CHUNKED],
             (unsigned long long)sv->kv_blocks, sv->page_tokens, (unsigned long long)mml,
             (unsigned long long)vllm_hybrid_blocks(a, s, &hy, mml, T), (unsigned long long)T);
    }
    if (sl)
        note(out, _("%u of %u layers use a sliding window: at most %llu tokens of KV each"), sl, a->n_layers,
             (unsigned long long)a->sliding_window);
    if (ch)
        note(out, _("%u of %u layers use chunked attention: at most %llu tokens of KV each"), ch, a->n_layers,
             (unsigned long long)a->attn_chunk);
    if (li)
        note(out,
             _("%u of %u layers are linear attention: no KV cache, a %llu B state per sequence each (conv + %s "
               "recurrent state)"),
             li, a->n_layers, (unsigned long long)ml_arch_linear_state_bytes(a, elem_bytes(s)),
             ml_dtype_name(a->lin.state_dtype ? a->lin.state_dtype : ML_DTYPE_FP32));
}

enum ml_status ml_ledger_infer(const struct ml_arch *arch, const struct ml_inventory *inv, const struct ml_infer *s,
                               const struct ml_cluster *c, struct ml_ledger *out, struct ml_serve *serve,
                               struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    memset(serve, 0, sizeof(*serve));
    if (!c->gpus_per_node || !c->nodes || !c->gpu.capacity_bytes)
        return ml_diag_set(diag, ML_ERR_INVALID, _("the GPU and its count must be given"));
    enum ml_status st = check(arch, inv, s, c, diag);
    if (st != ML_OK)
        return st;
    struct calc k = {false};
    struct sink sk = {out, &k, false};
    struct ml_weight_quant f;
    (void)ml_infer_weight_format(arch, s, &f, NULL); /* check() accepted it */
    struct gpu_weights w = weights_per_gpu(&k, arch, inv, s, &f);
    w.format = f;
    w.lora = ml_infer_lora_slot_bytes(inv, s);
    if (arch->wq.method != ML_WQ_NONE) {
        char fmt[96];
        ml_wq_describe(&f, fmt, sizeof(fmt));
        if (arch->wq.from_name)
            note(out,
                 _("weights in the format the checkpoint's name states (its usual quantization_config, not "
                   "read): %s"),
                 fmt);
        else
            note(out, _("weights as the checkpoint stores them (config.json quantization_config): %s"), fmt);
    }
    if (s->engine == ML_ENGINE_HF)
        hf_generate(&k, &sk, arch, s, c, &w, serve);
    else
        serving(&k, &sk, arch, s, c, &w, serve);
    ml_infer_interval(out, &k, arch, s, serve);
    context_notes(arch, s, serve, out);
    out->params = inv->total_params;
    out->world = s->tp * s->pp;
    out->sharding = s->tp;
    out->micro_batch = s->batch;
    out->seq_len = serve->max_model_len;
    kv_notes(arch, s, serve, out);
    uint64_t mm_patches = 0, mm_tok = arch->vision.kind != ML_VISION_NONE ? mm_max_item(&arch->vision, &mm_patches) : 0;
    if (s->engine == ML_ENGINE_VLLM && mm_tok && serve->max_model_len >= 2 * mm_tok)
        note(out,
             _("vLLM profiles the modality with the most tokens per item: a dummy video of up to max_model_len %llu "
               "tokens outgrows one %llu-token image, which the multimodal profile does not model"),
             (unsigned long long)serve->max_model_len, (unsigned long long)mm_tok);
    if (s->engine == ML_ENGINE_VLLM && s->vllm_version < ML_VER(0, 17, 0) && s->vllm_version >= ML_VER(0, 15, 0))
        note(out, _("vLLM 0.15-0.16 profiled about 2.5x more activation memory than 0.17+ for the same model (start-up "
                    "logs); the KV pool is then smaller than shown"));
    if (k.overflow)
        return ml_diag_set(diag, ML_ERR_OVERFLOW, _("a byte count of this model overflows 64 bits"));
    return ML_OK;
}
