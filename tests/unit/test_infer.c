/*
 * Inference ledger: KV bytes per token for every attention layout against hand-computed values,
 * the seed handbook's KV figure, and vLLM's start-up budget against its own logs
 * (data/measured-memory.jsonl vllm-05, vllm-10: weights and KV within 5 %).
 */
#include "ml_test.h"

#include "memledger/catalog.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"

static struct ml_arch arch;
static struct ml_inventory inv;
static struct ml_ledger led;
static struct ml_serve sv;

static void model(const char *name)
{
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find(name);
    assert_non_null(e);
    assert_int_equal(ml_catalog_arch(e, &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
}

static struct ml_cluster gpu(const char *g, uint32_t n)
{
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_gpu_resolve(g, &c.gpu, &d), ML_OK);
    c.gpus_per_node = n;
    c.nodes = 1;
    return c;
}

static void test_kv_per_token(void **state)
{
    (void)state;
    struct ml_infer s;
    ml_infer_defaults(&s);
    /* MHA, Llama-2-7B: 2 x 32 layers x 32 heads x 128 x 2 B. */
    model("llama-2-7b");
    assert_int_equal(ml_kv_bytes_per_token(&arch, &s), 2 * 32 * 32 * 128 * 2);
    /* GQA, Llama-3.1-8B: 8 KV heads. */
    model("llama-3.1-8b");
    assert_int_equal(ml_kv_bytes_per_token(&arch, &s), 2 * 32 * 8 * 128 * 2);
    /* ... split over tp 2; replicated (one head per rank) at tp 16. */
    s.tp = 2;
    assert_int_equal(ml_kv_bytes_per_token(&arch, &s), 2 * 32 * 4 * 128 * 2);
    s.tp = 16;
    assert_int_equal(ml_kv_bytes_per_token(&arch, &s), 2 * 32 * 1 * 128 * 2);
    s.tp = 1;
    /* fp8 KV halves it. */
    s.kv_dtype = ML_KV_FP8;
    assert_int_equal(ml_kv_bytes_per_token(&arch, &s), 2 * 32 * 8 * 128 * 1);
    s.kv_dtype = ML_KV_AUTO;
    /* MQA, Falcon-7B: one KV head of 64. */
    model("falcon-7b");
    assert_int_equal(ml_kv_bytes_per_token(&arch, &s), 2 * 32 * 1 * 64 * 2);
    /* MLA, DeepSeek-V3 on vLLM: latent 512 + rope 64 per layer, 61 layers. */
    model("deepseek-v3");
    s.engine = ML_ENGINE_VLLM;
    assert_int_equal(ml_kv_bytes_per_token(&arch, &s), 61 * (512 + 64) * 2);
    /* ... while transformers caches expanded keys and values of all 128 heads. */
    s.engine = ML_ENGINE_HF;
    assert_int_equal(ml_kv_bytes_per_token(&arch, &s), 61ull * 128 * (128 + 64 + 128) * 2);
}

static void test_handbook_kv_and_sliding(void **state)
{
    (void)state;
    /* Seed handbook: 7B (L = 32, d = 4096, MHA, bf16), one 4k-token sequence: ~2.1 GB of KV. */
    model("llama-2-7b");
    struct ml_infer s;
    ml_infer_defaults(&s);
    s.context = 4096;
    s.static_cache = true;
    struct ml_cluster c = gpu("a100-80g", 1);
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
    assert_true(sv.kv_bytes == 2ull * 32 * 4096 * 4096 * 2); /* 2,147,483,648 B = 2.1 GB */
    /* Gemma 2 9B: every other layer attends to a 4096-token window, so at 8192 tokens half of the
     * 42 layers hold 4096 tokens: per layer and token 2 x 8 heads x 256 x 2 B. */
    model("gemma-2-9b");
    s.context = 8192;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
    assert_true(sv.kv_bytes == 21ull * 8192 * 8192 + 21ull * 8192 * 4096);
}

static void test_vllm_budget(void **state)
{
    (void)state;
    /* vllm-05 (vLLM 0.19 start-up log, H100, gpu_memory_utilization 0.95, max_model_len 8192):
     * weights 14.25 GiB, KV 58.53 GiB (1,096,000 tokens). */
    model("qwen2.5-7b");
    struct ml_infer s;
    ml_infer_defaults(&s);
    s.engine = ML_ENGINE_VLLM;
    s.gpu_util_permille = 950;
    s.max_model_len = 8192;
    struct ml_cluster c = gpu("h100", 1);
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
    const double gib = 1073741824.0;
    assert_true(sv.weights_bytes / gib > 14.25 * 0.95 && sv.weights_bytes / gib < 14.25 * 1.05);
    assert_true(sv.kv_bytes / gib > 58.53 * 0.95 && sv.kv_bytes / gib < 58.53 * 1.05);
    assert_true(sv.kv_tokens > 1096000 * 95 / 100 && sv.kv_tokens < 1096000 * 105 / 100);
    assert_int_equal(sv.kv_tokens % 16, 0);
    assert_int_equal(sv.error, ML_SERVE_OK);
    /* Max concurrency = tokens / max_model_len (vLLM "Maximum concurrency ... 133.79x"). */
    assert_true(sv.max_concurrency_x100 / 100 >= 127 && sv.max_concurrency_x100 / 100 <= 140);
    /* vllm-10 (V0 0.6.5, 79.22 GiB, 0.9): weights 14.96, KV 53.29 GiB. */
    model("meta-llama-3-8b");
    struct ml_diag d2;
    ml_diag_init(&d2);
    c = gpu("79.22GiB", 1);
    s.gpu_util_permille = 900;
    s.vllm_version = 605;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d2), ML_OK);
    assert_true(sv.weights_bytes / gib > 14.96 * 0.95 && sv.weights_bytes / gib < 14.96 * 1.05);
    assert_true(sv.kv_bytes / gib > 53.29 * 0.95 && sv.kv_bytes / gib < 53.29 * 1.05);
}

static void test_startup_errors(void **state)
{
    (void)state;
    struct ml_infer s;
    ml_infer_defaults(&s);
    s.engine = ML_ENGINE_VLLM;
    struct ml_diag d;
    ml_diag_init(&d);
    /* A 14B model in bf16 on a 24 GB card: weights alone exceed the budget. */
    model("qwen2.5-14b");
    struct ml_cluster c = gpu("rtx4090", 1);
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
    assert_int_equal(sv.error, ML_SERVE_NO_CACHE_BLOCKS);
    assert_non_null(strstr(sv.error_text, "No available memory for the cache blocks"));
    assert_false(led.fits);
    /* Llama-3.1-8B at its full 131072 context on a 24 GB card: the KV pool holds fewer tokens. */
    model("llama-3.1-8b");
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
    assert_int_equal(sv.error, ML_SERVE_MAX_LEN_TOO_LARGE);
    assert_non_null(strstr(sv.error_text, "estimated maximum model length"));
    assert_true(sv.max_model_len_fit < 131072 && sv.max_model_len_fit > 0);
    /* ... and with --max-model-len at or below that estimate it starts. */
    s.max_model_len = sv.max_model_len_fit;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
    assert_int_equal(sv.error, ML_SERVE_OK);
}

static void test_bad_settings(void **state)
{
    (void)state;
    struct ml_infer s;
    ml_infer_defaults(&s);
    struct ml_cluster c = gpu("h100", 8);
    struct ml_diag d;
    model("qwen2.5-14b"); /* 40 heads, 8 KV heads */
    s.engine = ML_ENGINE_VLLM;
    s.tp = 3;
    ml_diag_init(&d);
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "--tp 3"));
    s.tp = 1;
    s.gpu_util_permille = 1200;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "gpu-memory-utilization"));
    s.gpu_util_permille = 900;
    /* GPTQ groups of 128 must divide every input width: 13824 / 128 = 108 does, 100 does not. */
    s.quant = ML_QUANT_GPTQ;
    s.group_size = 100;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "group-size"));
    s.group_size = 128;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
}

static void test_quantized_weights(void **state)
{
    (void)state;
    /* GPTQ 4-bit g128: 0.5 B + 2.5/128 B per linear weight; embeddings and head stay 16-bit. */
    model("llama-2-7b");
    struct ml_infer s;
    ml_infer_defaults(&s);
    s.quant = ML_QUANT_GPTQ;
    struct ml_cluster c = gpu("a100-80g", 1);
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
    uint64_t lin = 6738415616ull - 2ull * 32000 * 4096 - (65ull * 4096); /* minus embed, head, norms */
    uint64_t expect = lin / 2 + (lin / 128) * 5 / 2 + 2ull * (2ull * 32000 * 4096) + 2ull * 65 * 4096;
    uint64_t got = sv.weights_bytes;
    assert_true(got > expect - expect / 1000 && got < expect + expect / 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_per_token),
        cmocka_unit_test(test_handbook_kv_and_sliding),
        cmocka_unit_test(test_vllm_budget),
        cmocka_unit_test(test_startup_errors),
        cmocka_unit_test(test_bad_settings),
        cmocka_unit_test(test_quantized_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
