/*
 * vLLM V1's multimodal profile (docs/ledger.md "vLLM multimodal profile") against numbers worked by
 * hand from vLLM's own rule (vllm/multimodal/budget.py MultiModalBudget._get_max_items,
 * vllm/v1/core/encoder_cache_manager.py compute_mm_encoder_budget, qwen2_vl.py
 * get_max_image_tokens) and Qwen3-VL-4B-Instruct's config.json: text hidden 2560, intermediate
 * 9728, vocab 151936; vision depth 24, hidden 1024, intermediate 4096, patch 16, temporal patch 2,
 * spatial merge 2, out_hidden 2560, 3 deepstack mergers; processor longest_edge 16777216.
 */
#include "ml_test.h"

#include "memledger/catalog.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"

static struct ml_arch arch;
static struct ml_inventory inv;
static struct ml_ledger led;
static struct ml_serve sv;

static void test_qwen3_vl_profile(void **state)
{
    (void)state;
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find("qwen3-vl-4b-instruct");
    assert_non_null(e);
    assert_int_equal(ml_catalog_arch(e, &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(ml_gpu_resolve("h100", &c.gpu, &d), ML_OK);
    c.gpus_per_node = c.nodes = 1;
    struct ml_infer s;
    ml_infer_defaults(&s);
    s.engine = ML_ENGINE_VLLM;
    s.max_model_len = 4096;
    /* The largest image: a 4096 x 4096 square (sqrt(16777216), a multiple of 16 x 2) = 65,536
     * patches, 16,384 tokens. H100 `vllm serve`: 8192 batched tokens, 1024 sequences; budget
     * max(8192, 16384) = 16384: one item. Pixels 65,536 x 3 x 2 x 16 x 16 x 2 B = 201,326,592; the
     * tower 65,536 x 2 B x (2 x 1024 + 3 x 4096) = 1,879,048,192; outputs 16,384 x 4 x 2560 x 2 B =
     * 335,544,320. Text profile 8192 x 2 B x (2 x 2560 + 3 x 9728) + 1024 x 151,936 x 8 B =
     * 1,806,696,448. Peak max(2,415,919,104, 2,142,240,768). */
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
    assert_int_equal(sv.activation_bytes, 2415919104ull);
    /* 32768 batched tokens: two items (min(32768 / 16384, 1024 x max(1, 4096 / 16384))). Pixels
     * 402,653,184 + tower 3,758,096,384 + outputs 671,088,640 = 4,831,838,208 against outputs +
     * text 32768 x 68,608 + 1,244,659,712 = 4,163,895,296. */
    s.max_num_batched_tokens = 32768;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
    assert_int_equal(sv.activation_bytes, 4831838208ull);
    /* A text model has no multimodal term: the text profile alone. */
    e = ml_catalog_find("qwen3-4b-2507");
    assert_int_equal(ml_catalog_arch(e, &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    s.max_num_batched_tokens = 0;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d), ML_OK);
    assert_int_equal(sv.activation_bytes, 1806696448ull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3_vl_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
