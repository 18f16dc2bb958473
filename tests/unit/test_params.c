/*
 * Exact parameter counts against data/models/params.jsonl (computed from the transformers module
 * lists and checked there against published figures), and the published-vs-computed differences
 * that file explains (stored buffers, vocabulary padding, pre-training heads, MTP).
 */
#include "ml_test.h"

#include <cjson/cJSON.h>

#include "memledger/catalog.h"
#include "memledger/inventory.h"

static struct ml_inventory inv; /* large: keep off the stack */

static const struct ml_inventory *inventory_of(const char *name, struct ml_arch *a)
{
    const struct ml_catalog_entry *e = ml_catalog_find(name);
    if (!e)
        fail_msg("catalog has no '%s'", name);
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_catalog_arch(e, a, &d) != ML_OK)
        fail_msg("%s: %s", name, d.msg);
    if (ml_inventory_build(a, &inv, &d) != ML_OK)
        fail_msg("%s: %s", name, d.msg);
    return &inv;
}

static void test_every_catalog_model_exact(void **state)
{
    (void)state;
    char *text = ml_test_slurp("data/models/params.jsonl", NULL);
    assert_non_null(text);
    int n = 0, bad = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        assert_non_null(j);
        const char *name = cJSON_GetObjectItem(j, "name")->valuestring;
        double want = cJSON_GetObjectItem(j, "params")->valuedouble;
        struct ml_arch a;
        const struct ml_inventory *v = inventory_of(name, &a);
        if ((double)v->total_params != want) {
            print_error("%s: computed %llu, params.jsonl %.0f\n", name,
                        (unsigned long long)v->total_params, want);
            bad++;
        }
        n++;
        cJSON_Delete(j);
    }
    free(text);
    assert_int_equal(bad, 0);
    assert_true(n >= 63); /* the 61 shared configs + qwen2.5-32b and llama-3.1-405b */
    assert_int_equal(ml_catalog_count(), (size_t)n);
}

static void test_issue_examples(void **state)
{
    (void)state;
    struct ml_arch a;
    assert_true(inventory_of("qwen2.5-14b", &a)->total_params == 14770033664ull);
    assert_true(inventory_of("llama-2-7b", &a)->total_params == 6738415616ull);
    assert_true(inventory_of("mixtral-8x7b", &a)->total_params == 46702792704ull);
    assert_true(inventory_of("deepseek-v3", &a)->total_params == 671026419200ull);
}

static void test_moe_active_and_mtp(void **state)
{
    (void)state;
    struct ml_arch a;
    /* Active parameters as params.jsonl's notes give them. */
    assert_true(inventory_of("mixtral-8x7b", &a)->active_params == 12879925248ull);
    assert_true(inventory_of("mixtral-8x22b", &a)->active_params == 39152031744ull);
    assert_true(inventory_of("qwen3-235b-a22b", &a)->active_params == 22190763520ull);
    assert_true(inventory_of("qwen1.5-moe-a2.7b", &a)->active_params == 2689173504ull);
    /* DeepSeek-V3 Hub total 684,531,386,000 = main + MTP with its own embed/head copies
     * (11,610,068,224 unique + 2 x vocab x hidden) + 41,540,496 FP8 scale tensors. */
    const struct ml_inventory *v = inventory_of("deepseek-v3", &a);
    assert_true(v->mtp_params == 11610068224ull);
    uint64_t hub = v->total_params + v->mtp_params + 2 * a.vocab * a.hidden + 41540496ull;
    assert_true(hub == 684531386000ull);
    assert_true(v->by_group[ML_GROUP_MTP] == v->mtp_params);
}

static void test_published_differences(void **state)
{
    (void)state;
    struct ml_arch a;
    const struct ml_inventory *v;
    /* gpt2: safetensors also stores a causal-mask buffer of n_positions^2 per layer. */
    v = inventory_of("gpt2", &a);
    assert_true(v->total_params + a.n_layers * a.max_positions * a.max_positions == 137022720ull);
    /* Llama-2 checkpoints store a 64-element rotary inv_freq buffer per layer. */
    v = inventory_of("llama-2-7b", &a);
    assert_true(v->total_params + a.n_layers * 64ull == 6738417664ull);
    v = inventory_of("llama-2-13b", &a);
    assert_true(v->total_params + a.n_layers * 64ull == 13015866880ull);
    v = inventory_of("llama-2-70b", &a);
    assert_true(v->total_params + a.n_layers * 64ull == 68976653312ull);
    /* Gemma papers count a 256,128-row vocabulary; the checkpoints have 256,000. */
    static const struct {
        const char *name;
        uint64_t published;
    } gemma[] = {{"gemma-2b", 2506434560ull}, {"gemma-7b", 8538074112ull},
                 {"gemma-2-2b", 2614636800ull}, {"gemma-2-9b", 9242164736ull},
                 {"gemma-2-27b", 27227718144ull}};
    for (size_t i = 0; i < sizeof(gemma) / sizeof(gemma[0]); i++) {
        v = inventory_of(gemma[i].name, &a);
        assert_true(v->total_params + 128 * a.hidden == gemma[i].published);
    }
    /* BERT checkpoint = BertForPreTraining: + pooler (h x h + h) + NSP head (2h + 2). */
    v = inventory_of("bert-large-uncased", &a);
    assert_true(v->total_params + a.hidden * a.hidden + a.hidden + 2 * a.hidden + 2 == 336226108ull);
    /* Non-embedding counts published in the Pythia and Gemma 2 papers. */
    v = inventory_of("pythia-6.9b", &a);
    assert_true(v->total_params - v->embedding_params - v->by_group[ML_GROUP_LM_HEAD] == 6444163072ull);
    v = inventory_of("gemma-2-2b", &a);
    assert_true(v->total_params - v->embedding_params == 2024517888ull);
    /* Qwen2.5-32B card: 31.0B non-embedding = 31,206,740,992 (embedding and head excluded). */
    v = inventory_of("qwen2.5-32b", &a);
    assert_true(v->total_params - v->embedding_params - v->by_group[ML_GROUP_LM_HEAD] == 31206740992ull);
    /* Llama-3.1-405B's launch revision declared 16 KV heads: 410,081,247,232 by the same rules. */
    inventory_of("llama-3.1-405b", &a);
    a.n_kv_heads = 16;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_inventory_build(&a, &inv, &d), ML_OK);
    assert_true(inv.total_params == 410081247232ull);
    /* Qwen3-0.6B: a tied lm_head is listed once and not counted (Hub shows 751,632,384). */
    v = inventory_of("qwen3-0.6b", &a);
    assert_true(a.tie_embeddings);
    assert_true(v->total_params + a.vocab * a.hidden == 751632384ull);
}

static void test_inventory_shapes(void **state)
{
    (void)state;
    struct ml_arch a;
    const struct ml_inventory *v = inventory_of("qwen2.5-14b", &a);
    /* Qwen2: q/k/v biased, o not; k_proj is kv_heads x head_dim = 1024 rows. */
    int found_k = 0, found_o_bias = 0;
    for (uint32_t i = 0; i < v->n; i++) {
        const struct ml_tensor *t = &v->t[i];
        if (strstr(t->path, "k_proj") && !strcmp(t->param, "weight")) {
            found_k = 1;
            assert_int_equal(t->rows, 1024);
            assert_int_equal(t->cols, 5120);
            assert_int_equal(t->copies, 48);
        }
        if (strstr(t->path, "o_proj") && !strcmp(t->param, "bias"))
            found_o_bias = 1;
    }
    assert_true(found_k);
    assert_false(found_o_bias);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_catalog_model_exact),
        cmocka_unit_test(test_issue_examples),
        cmocka_unit_test(test_moe_active_and_mtp),
        cmocka_unit_test(test_published_differences),
        cmocka_unit_test(test_inventory_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
