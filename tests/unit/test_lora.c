/*
 * LoRA trainable parameters: PEFT's r x (in + out) per wrapped module, and "all" resolved as
 * LLaMA-Factory's find_all_linear_modules does.
 */
#include "ml_test.h"

#include "memledger/catalog.h"
#include "memledger/inventory.h"

static struct ml_inventory inv;
static struct ml_arch arch;

static enum ml_status count(const char *model, const char *targets, uint64_t rank, struct ml_lora_count *out)
{
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find(model);
    assert_non_null(e);
    assert_int_equal(ml_catalog_arch(e, &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    struct ml_lora_targets t;
    assert_int_equal(ml_lora_targets_parse(targets, &t, &d), ML_OK);
    return ml_lora_count(&arch, &inv, &t, rank, out, &d);
}

static int resolved(const struct ml_lora_count *c, const char *name)
{
    for (uint32_t i = 0; i < c->n_resolved; i++)
        if (!strcmp(c->resolved[i], name))
            return 1;
    return 0;
}

static void test_peft_documented_example(void **state)
{
    (void)state;
    /* PEFT's print_trainable_parameters example for Llama-2-7b, r=8 on q_proj,v_proj:
     * "trainable params: 4,194,304 || all params: 6,742,609,920". */
    struct ml_lora_count c;
    assert_int_equal(count("llama-2-7b", "q_proj,v_proj", 8, &c), ML_OK);
    assert_true(c.params == 4194304ull);
    assert_true(inv.total_params + c.params == 6742609920ull);
    assert_int_equal(c.modules, 64);
}

static void test_seed_case_targets(void **state)
{
    (void)state;
    /* The seed case: Qwen2.5-14B, r=64 on the seven projections. Per layer:
     * q,o 64x(5120+5120); k,v 64x(5120+1024); gate,up,down 64x(5120+13824); x 48 layers. */
    struct ml_lora_count c;
    assert_int_equal(count("qwen2.5-14b", "q_proj,v_proj,k_proj,o_proj,up_proj,gate_proj,down_proj", 64, &c), ML_OK);
    uint64_t per_layer = 2 * 64 * (5120 + 5120) + 2 * 64 * (5120 + 1024) + 3 * 64 * (5120 + 13824);
    assert_true(c.params == per_layer * 48);
    assert_int_equal(c.n_unmatched, 0);
}

static void test_all_resolution(void **state)
{
    (void)state;
    struct ml_lora_count c;
    /* qwen2: the seven projections, never lm_head. */
    assert_int_equal(count("qwen2.5-14b", "all", 64, &c), ML_OK);
    assert_int_equal(c.n_resolved, 7);
    assert_false(resolved(&c, "lm_head"));
    /* Same parameters as naming the seven explicitly. */
    uint64_t all = c.params;
    assert_int_equal(count("qwen2.5-14b", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", 64, &c), ML_OK);
    assert_true(c.params == all);
    /* chatglm: output_layer is excluded as well. */
    assert_int_equal(count("chatglm3-6b", "all", 8, &c), ML_OK);
    assert_true(resolved(&c, "query_key_value") && resolved(&c, "dense_h_to_4h"));
    assert_false(resolved(&c, "output_layer"));
    /* internlm2: "output" is excluded. */
    assert_int_equal(count("internlm2.5-7b", "all", 8, &c), ML_OK);
    assert_true(resolved(&c, "wqkv") && resolved(&c, "w2"));
    assert_false(resolved(&c, "output"));
    /* mixtral: the router "gate" is an nn.Linear, so "all" adapts it too. */
    assert_int_equal(count("mixtral-8x7b", "all", 8, &c), ML_OK);
    assert_true(resolved(&c, "gate") && resolved(&c, "w1") && resolved(&c, "w3"));
    /* deepseek-v3: MoEGate is not nn.Linear; MTP is not loaded. */
    assert_int_equal(count("deepseek-v3", "all", 8, &c), ML_OK);
    assert_false(resolved(&c, "gate"));
    assert_false(resolved(&c, "eh_proj"));
    assert_true(resolved(&c, "kv_b_proj"));
    /* gpt2: Conv1D is not nn.Linear, lm_head is excluded: "all" finds nothing. */
    assert_int_equal(count("gpt2", "all", 8, &c), ML_ERR_INVALID);
}

static void test_explicit_targets(void **state)
{
    (void)state;
    struct ml_lora_count c;
    /* GPT-2 Conv1D named explicitly: c_attn is 768 -> 2304. */
    assert_int_equal(count("gpt2", "c_attn", 8, &c), ML_OK);
    assert_true(c.params == 8ull * (768 + 2304) * 12);
    /* An embedding: A is r x num_embeddings, B is dim x r. */
    assert_int_equal(count("llama-2-7b", "embed_tokens", 8, &c), ML_OK);
    assert_true(c.params == 8ull * (32000 + 4096));
    /* A tied lm_head can still be adapted. */
    assert_int_equal(count("qwen2.5-0.5b", "lm_head", 4, &c), ML_OK);
    assert_true(c.params == 4ull * (896 + 151936));
    /* Unknown names are reported; if nothing matches it is an error. */
    assert_int_equal(count("llama-2-7b", "q_proj,query", 8, &c), ML_OK);
    assert_int_equal(c.n_unmatched, 1);
    assert_string_equal(c.unmatched[0], "query");
    assert_int_equal(count("llama-2-7b", "query", 8, &c), ML_ERR_INVALID);
}

static void test_target_parse(void **state)
{
    (void)state;
    struct ml_lora_targets t;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_lora_targets_parse(" q_proj, v_proj ,", &t, &d), ML_OK);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.names[1], "v_proj");
    assert_int_equal(ml_lora_targets_parse(",,", &t, &d), ML_ERR_INVALID);
    assert_int_equal(ml_lora_targets_parse("all", &t, &d), ML_OK);
    assert_true(t.all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peft_documented_example),
        cmocka_unit_test(test_seed_case_targets),
        cmocka_unit_test(test_all_resolution),
        cmocka_unit_test(test_explicit_targets),
        cmocka_unit_test(test_target_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
