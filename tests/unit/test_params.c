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
            print_error("%s: computed %llu, params.jsonl %.0f\n", name, (unsigned long long)v->total_params, want);
            bad++;
        }
        n++;
        cJSON_Delete(j);
    }
    free(text);
    assert_int_equal(bad, 0);
    assert_true(n >= 92); /* the 61 shared configs, qwen2.5-32b, llama-3.1-405b, issue 14's 23 and 6 variant rows */
    /* The release rows of variants.jsonl: their own keys (positions, rope, quantization, tied
     * embeddings, vocabulary) leave the base's shapes, so the count is the base's. */
    text = ml_test_slurp("data/models/variants.jsonl", NULL);
    assert_non_null(text);
    int nv = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        assert_non_null(j);
        const char *name = cJSON_GetObjectItem(j, "name")->valuestring;
        const char *base = cJSON_GetObjectItem(j, "base")->valuestring;
        struct ml_arch a;
        uint64_t own = inventory_of(name, &a)->total_params;
        if (own != inventory_of(base, &a)->total_params || own != ml_catalog_find(base)->params) {
            print_error("%s: computed %llu, its base %s %llu\n", name, (unsigned long long)own, base,
                        (unsigned long long)ml_catalog_find(base)->params);
            bad++;
        }
        nv++;
        cJSON_Delete(j);
    }
    free(text);
    assert_int_equal(bad, 0);
    assert_int_equal(ml_catalog_count(), (size_t)(n + nv));
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
    /* The published totals count the MTP layers as their checkpoints store them, with the MTP
     * layer's own embedding and head (issue 22 item 8): DeepSeek-R1's Hub total; DeepSeek-V3.2's
     * "685B" (its Hub page); GLM-4.5's Hub count as a public calculator gives it ("glm-4.7-mtp
     * (Hugging Face mtp block) 358337791296", same shapes); GLM-4.5-Air's Hub-derived count. */
    assert_true(v->total_params + v->mtp_stored_params == 684489845504ull);
    v = inventory_of("deepseek-v3.2-exp", &a);
    assert_true((v->total_params + v->mtp_stored_params + 500000000ull) / 1000000000ull == 685);
    v = inventory_of("glm-4.5", &a);
    assert_true(v->total_params + v->mtp_stored_params == 358337791296ull);
    v = inventory_of("glm-4.5-air", &a);
    assert_true(v->total_params + v->mtp_stored_params == 110468824832ull);
    /* Qwen3.5's mtp.* block shares the main model's embedding and head: stored = unique, and
     * the Hub count of Qwen/Qwen3.5-35B-A3B (35,951,822,704 in a public table of Hub counts). */
    v = inventory_of("qwen3.5-35b-a3b", &a);
    assert_true(v->mtp_params > 0 && v->mtp_stored_params == v->mtp_params);
    assert_true(v->total_params + v->mtp_stored_params == 35951822704ull);
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
    } gemma[] = {{"gemma-2b", 2506434560ull},
                 {"gemma-7b", 8538074112ull},
                 {"gemma-2-2b", 2614636800ull},
                 {"gemma-2-9b", 9242164736ull},
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

/* Issue 14's families against their published figures (data/models/SOURCES.md gives each source;
 * the configs are mostly reconstructed, so the figure, not the file, is the reference). */
static void test_new_families_published(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        uint64_t published;
    } pub[] = {
        {"gemma-3-1b-it", 999885952ull},                         /* model.parameters() tables */
        {"gemma-3-4b-it", 4300079472ull},                        /* KerasHub preset; HF safetensors metadata */
        {"gemma-3-12b-it", 12187325040ull},                      /* HF-derived table */
        {"gemma-3-27b-it", 27432406640ull},                      /* HF-derived table */
        {"llama-4-scout-17b-16e-instruct", 108641793536ull},     /* HF-derived tables */
        {"llama-4-maverick-17b-128e-instruct", 401583781376ull}, /* Fireworks billing export */
        {"gpt-oss-20b", 20914757184ull},                         /* Fireworks catalog; OpenAI card 20.91B */
        {"gpt-oss-120b", 116829156672ull},                       /* GGUF general.parameter_count; card 116.83B */
        {"qwen2.5-vl-7b-instruct", 8292166656ull},               /* measured sum(numel), transformers 4.57.1 */
        {"qwen3-vl-4b-instruct", 4437815808ull},                 /* measured sum(numel) */
        {"qwen3-vl-8b-instruct", 8767123696ull},                 /* HF API safetensors.total */
        {"qwen3-vl-30b-a3b-instruct", 31070754032ull},           /* Fireworks catalog */
        {"qwen3-vl-235b-a22b-instruct", 235670022896ull},        /* Fireworks catalog */
        {"qwen3-next-80b-a3b-instruct", 79674391296ull},         /* official_parameter_count (Coder-Next) */
        {"qwen3.5-0.8b", 852985920ull},                          /* KerasHub preset; safetensors header */
        {"qwen3.5-4b", 4539265536ull},                           /* KerasHub preset */
        {"qwen3.5-27b", 27356728560ull},                         /* KerasHub preset; HF API */
        {"qwen3.5-35b-a3b", 35107181936ull},                     /* KerasHub preset; HF API */
        {"glm-4.5", 352797829024ull},                            /* Fireworks catalog (GLM-4.5 = 4.6 = 4.7) */
        {"glm-4.5-air", 106852251264ull},                        /* calculator preset; INTELLECT-3 */
    };
    struct ml_arch a;
    for (size_t i = 0; i < sizeof(pub) / sizeof(pub[0]); i++) {
        const struct ml_inventory *v = inventory_of(pub[i].name, &a);
        if (v->total_params != pub[i].published)
            fail_msg("%s: %llu, published %llu", pub[i].name, (unsigned long long)v->total_params,
                     (unsigned long long)pub[i].published);
    }
}

static uint64_t text_part(const struct ml_inventory *v)
{
    return v->total_params - v->by_group[ML_GROUP_VISION] - v->by_group[ML_GROUP_PROJECTOR];
}

static void test_vision_towers_apart(void **state)
{
    (void)state;
    struct ml_arch a;
    /* A freeze report of Qwen3-VL-4B: 306,242,560 frozen = patch_embed + pos_embed + blocks. */
    const struct ml_inventory *v = inventory_of("qwen3-vl-4b-instruct", &a);
    assert_true(v->by_group[ML_GROUP_VISION] == 306242560ull);
    /* LLaMA-Factory's freeze_vision_tower keys for qwen3_vl also take deepstack_merger_list;
     * its projector key is visual.merger (model/model_utils/visual.py). */
    const char *keys[4];
    size_t nk = ml_arch_freeze_keys(&a, 0, keys, 4);
    uint64_t frozen = 0, proj = 0;
    for (uint32_t i = 0; i < v->n; i++)
        if (ml_module_in_keys(v->t[i].path, keys, nk))
            frozen += v->t[i].params;
    assert_true(frozen ==
                306242560ull + v->by_group[ML_GROUP_PROJECTOR] - 16777216ull - 10485760ull - 4096 - 2560 - 2048);
    nk = ml_arch_freeze_keys(&a, 1, keys, 4);
    for (uint32_t i = 0; i < v->n; i++)
        if (ml_module_in_keys(v->t[i].path, keys, nk))
            proj += v->t[i].params;
    assert_true(frozen + proj == v->by_group[ML_GROUP_VISION] + v->by_group[ML_GROUP_PROJECTOR]);
    /* Qwen2.5-VL-7B freeze log: visual 676,550,144 (tower + merger), LLM 7,615,616,512. */
    v = inventory_of("qwen2.5-vl-7b-instruct", &a);
    uint64_t tower7 = v->by_group[ML_GROUP_VISION];
    assert_true(tower7 + v->by_group[ML_GROUP_PROJECTOR] == 676550144ull);
    assert_true(text_part(v) == 7615616512ull);
    /* Gemma 3: a printed module tree gives SiglipVisionModel 416,866,032. */
    v = inventory_of("gemma-3-4b-it", &a);
    assert_true(v->by_group[ML_GROUP_VISION] == 416866032ull);
    /* Each VL model's text part is its text-only sibling's Hub total (params.jsonl). */
    static const struct {
        const char *vl, *text;
    } sib[] = {{"qwen3-vl-4b-instruct", "qwen3-4b"},
               {"qwen3-vl-8b-instruct", "qwen3-8b"},
               {"qwen3-vl-235b-a22b-instruct", "qwen3-235b-a22b"},
               {"qwen2.5-vl-3b-instruct", "qwen2.5-3b"},
               {"qwen2.5-vl-72b-instruct", "qwen2.5-72b"}};
    for (size_t i = 0; i < sizeof(sib) / sizeof(sib[0]); i++) {
        uint64_t t = text_part(inventory_of(sib[i].vl, &a));
        const struct ml_catalog_entry *e = ml_catalog_find(sib[i].text);
        assert_non_null(e);
        if (t != strtoull(e->published, NULL, 10))
            fail_msg("%s text %llu, %s published %s", sib[i].vl, (unsigned long long)t, sib[i].text, e->published);
    }
    /* Qwen2.5-VL-3B and -72B (no exact published figure) share the 7B's vision_config: same tower. */
    assert_true(inventory_of("qwen2.5-vl-3b-instruct", &a)->by_group[ML_GROUP_VISION] == tower7);
    assert_true(inventory_of("qwen2.5-vl-72b-instruct", &a)->by_group[ML_GROUP_VISION] == tower7);
    /* The HF page rounds Qwen2.5-VL-72B to 73.4B. */
    assert_int_equal((inventory_of("qwen2.5-vl-72b-instruct", &a)->total_params + 50000000ull) / 100000000ull, 734);
}

static void test_new_families_active_and_mtp(void **state)
{
    (void)state;
    struct ml_arch a;
    /* OpenAI's gpt-oss card: 3.61B / 5.13B active, counted without the input embedding. */
    const struct ml_inventory *v = inventory_of("gpt-oss-20b", &a);
    assert_true(v->active_params - v->embedding_params == 3608307264ull);
    assert_int_equal((v->active_params - v->embedding_params + 5000000ull) / 10000000ull, 361);
    v = inventory_of("gpt-oss-120b", &a);
    assert_int_equal((v->active_params - v->embedding_params + 5000000ull) / 10000000ull, 513);
    /* Llama 4 "17B active"; Qwen3-VL-30B-A3B "A3B" (its text model, the tower apart): the text
     * model's active count equals Qwen3-30B-A3B's 3,353,032,704 (a published count test). */
    assert_int_equal((inventory_of("llama-4-scout-17b-16e-instruct", &a)->active_params + 500000000ull) / 1000000000ull,
                     17);
    assert_int_equal(
        (inventory_of("llama-4-maverick-17b-128e-instruct", &a)->active_params + 500000000ull) / 1000000000ull, 17);
    assert_true(inventory_of("qwen3-vl-30b-a3b-instruct", &a)->active_params == 3353032704ull);
    /* MTP blocks, outside the total: with the block's own embedding and head copies GLM-4.5 and
     * GLM-4.5-Air reach the HF-derived 358,337,791,296 and 110,468,824,832; Qwen3.5-27B's
     * checkpoint holds 27,781,427,952 (its MTP shares the embedding). */
    v = inventory_of("glm-4.5", &a);
    assert_true(v->total_params + v->mtp_params + 2 * a.vocab * a.hidden == 358337791296ull);
    v = inventory_of("glm-4.5-air", &a);
    assert_true(v->total_params + v->mtp_params + 2 * a.vocab * a.hidden == 110468824832ull);
    v = inventory_of("qwen3.5-27b", &a);
    assert_true(v->total_params + v->mtp_params == 27781427952ull);
    /* DeepSeek-V3.2 = DeepSeek-V3 (Hub-verified) + per layer DeepseekV32Indexer: wq_b
     * (q_lora_rank 1536 -> 64 x 128), wk (7168 -> 128), k_norm LayerNorm(128), weights_proj
     * (7168 -> 64); with its MTP block, the MTP's own embedding and head and the FP8 scales it
     * rounds to the HF page's 685B. */
    uint64_t v3 = inventory_of("deepseek-v3", &a)->total_params;
    uint64_t indexer = 1536ull * 64 * 128 + 7168ull * 128 + 2 * 128 + 7168ull * 64;
    v = inventory_of("deepseek-v3.2-exp", &a);
    assert_true(indexer == 13959424ull);
    assert_true(v->total_params == v3 + 61 * indexer);
    assert_int_equal((v->total_params + v->mtp_params + 2 * a.vocab * a.hidden + 500000000ull) / 1000000000ull, 685);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_catalog_model_exact), cmocka_unit_test(test_issue_examples),
        cmocka_unit_test(test_moe_active_and_mtp),        cmocka_unit_test(test_published_differences),
        cmocka_unit_test(test_inventory_shapes),          cmocka_unit_test(test_new_families_published),
        cmocka_unit_test(test_vision_towers_apart),       cmocka_unit_test(test_new_families_active_and_mtp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
