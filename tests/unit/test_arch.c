/* config.json -> ml_arch (lib/model/arch_json.c): keys, defaults, and every kind of bad input. */
#include "ml_test.h"

#include "memledger/arch.h"
#include "memledger/inventory.h"

static enum ml_status parse(const char *json, struct ml_arch *a, struct ml_diag *d)
{
    ml_diag_init(d);
    return ml_arch_from_json(json, strlen(json), "cfg.json", a, d);
}

static void expect_error(const char *json, enum ml_status want, const char *needle)
{
    struct ml_arch a;
    struct ml_diag d;
    enum ml_status st = parse(json, &a, &d);
    if (st != want || !strstr(d.msg, needle))
        fail_msg("want status %d with '%s', got %d: '%s'", want, needle, st, d.msg);
    assert_string_equal(d.origin, "cfg.json");
    assert_null(strchr(d.msg, '\n'));
}

#define LLAMA_SIZES "\"vocab_size\": 32000, \"hidden_size\": 4096, \"num_hidden_layers\": 32, " \
                    "\"num_attention_heads\": 32, \"intermediate_size\": 11008"

static void test_llama_defaults(void **state)
{
    (void)state;
    struct ml_arch a;
    struct ml_diag d;
    assert_int_equal(parse("{\"model_type\": \"llama\", " LLAMA_SIZES "}", &a, &d), ML_OK);
    assert_int_equal(a.family, ML_FAMILY_LLAMA);
    assert_int_equal(a.n_kv_heads, 32); /* num_key_value_heads defaults to heads */
    assert_int_equal(a.head_dim, 128);
    assert_false(a.tie_embeddings);
    assert_false(a.qkv_bias);
    assert_int_equal(a.max_positions, 2048);
    assert_int_equal(a.torch_dtype, ML_DTYPE_UNKNOWN);
}

static void test_explicit_keys(void **state)
{
    (void)state;
    struct ml_arch a;
    struct ml_diag d;
    /* Explicit head_dim (Gemma/Qwen3 style), tie, attention bias, dtype. */
    assert_int_equal(parse("{\"model_type\": \"llama\", " LLAMA_SIZES ", \"head_dim\": 96, "
                           "\"tie_word_embeddings\": true, \"attention_bias\": true, "
                           "\"num_key_value_heads\": 8, \"torch_dtype\": \"bfloat16\"}", &a, &d),
                     ML_OK);
    assert_int_equal(a.head_dim, 96);
    assert_true(a.tie_embeddings);
    assert_true(a.qkv_bias && a.o_bias);
    assert_int_equal(a.n_kv_heads, 8);
    assert_int_equal(a.torch_dtype, ML_DTYPE_BF16);
    /* Partial rotary (Phi): int(0.4 * 80) = 32. */
    assert_int_equal(parse("{\"model_type\": \"phi\", \"vocab_size\": 51200, \"hidden_size\": 2560, "
                           "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                           "\"intermediate_size\": 10240, \"partial_rotary_factor\": 0.4}", &a, &d),
                     ML_OK);
    assert_int_equal(a.rotary_dim, 32);
    assert_true(a.lm_head_bias);
}

static void test_moe_keys(void **state)
{
    (void)state;
    struct ml_arch a;
    struct ml_diag d;
    /* qwen3_moe: decoder_sparse_step 2 and mlp_only_layers [1] -> layers 1,3 sparse, minus 1. */
    assert_int_equal(parse("{\"model_type\": \"qwen3_moe\", \"vocab_size\": 1000, \"hidden_size\": 64, "
                           "\"num_hidden_layers\": 4, \"num_attention_heads\": 4, "
                           "\"intermediate_size\": 128, \"num_experts\": 8, \"num_experts_per_tok\": 2, "
                           "\"moe_intermediate_size\": 32, \"decoder_sparse_step\": 2, "
                           "\"mlp_only_layers\": [1]}", &a, &d),
                     ML_OK);
    assert_false(ml_arch_layer_is_moe(&a, 0));
    assert_false(ml_arch_layer_is_moe(&a, 1));
    assert_false(ml_arch_layer_is_moe(&a, 2));
    assert_true(ml_arch_layer_is_moe(&a, 3));
    assert_int_equal(ml_arch_n_moe_layers(&a), 1);
    /* deepseek_v3: first_k_dense_replace, moe_layer_freq, MTP counted apart. */
    assert_int_equal(parse("{\"model_type\": \"deepseek_v3\", \"vocab_size\": 1000, \"hidden_size\": 64, "
                           "\"num_hidden_layers\": 6, \"num_attention_heads\": 4, "
                           "\"intermediate_size\": 128, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, "
                           "\"n_group\": 4, \"topk_group\": 2, "
                           "\"moe_intermediate_size\": 16, \"first_k_dense_replace\": 2, \"moe_layer_freq\": 2, "
                           "\"num_nextn_predict_layers\": 1, \"q_lora_rank\": null}", &a, &d),
                     ML_OK);
    assert_int_equal(ml_arch_n_moe_layers(&a), 2); /* layers 2 and 4 */
    assert_true(ml_arch_layer_is_moe(&a, 2) && ml_arch_layer_is_moe(&a, 4));
    assert_int_equal(a.q_lora_rank, 0);               /* null: plain q_proj (DeepSeek-V2-Lite) */
    assert_int_equal(a.n_mtp_layers, 1);
    assert_true(a.router_bias);
}

/* Does the inventory of the config hold a tensor at path? */
static bool has_path(const char *json, const char *path)
{
    struct ml_arch a;
    struct ml_diag d;
    static struct ml_inventory inv;
    assert_int_equal(parse(json, &a, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&a, &inv, &d), ML_OK);
    for (uint32_t i = 0; i < inv.n; i++)
        if (!strcmp(inv.t[i].path, path))
            return true;
    return false;
}

#define FALCON_SIZES "\"model_type\": \"falcon\", \"vocab_size\": 1000, \"hidden_size\": 64, " \
                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 8"

static void test_falcon_norm_names(void **state)
{
    (void)state;
    /* FalconDecoderLayer (modeling_falcon.py): a parallel block with num_ln_in_parallel_attn 2
     * (the new architecture's default) has ln_attn and ln_mlp, whatever its K/V heads; a
     * sequential block has input_layernorm and post_attention_layernorm. */
    assert_true(has_path("{" FALCON_SIZES ", \"new_decoder_architecture\": true, \"num_kv_heads\": 1}",
                         "transformer.h.*.ln_attn"));
    assert_true(has_path("{" FALCON_SIZES ", \"new_decoder_architecture\": true, \"num_kv_heads\": 2}",
                         "transformer.h.*.ln_mlp"));
    assert_true(has_path("{" FALCON_SIZES ", \"new_decoder_architecture\": true, \"num_kv_heads\": 2, "
                         "\"parallel_attn\": false}", "transformer.h.*.post_attention_layernorm"));
    assert_true(has_path("{" FALCON_SIZES ", \"parallel_attn\": false}",
                         "transformer.h.*.post_attention_layernorm"));
    assert_true(has_path("{" FALCON_SIZES "}", "transformer.h.*.input_layernorm"));
    assert_false(has_path("{" FALCON_SIZES "}", "transformer.h.*.post_attention_layernorm"));
}

/* Keys every reader finds what it requires in (each family names its sizes its own way). */
#define ANY_SIZES "\"vocab_size\": 1000, \"hidden_size\": 64, \"num_hidden_layers\": 2, " \
                  "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"ffn_dim\": 128, " \
                  "\"ffn_hidden_size\": 128, \"d_model\": 64, \"num_layers\": 2, \"num_heads\": 4, " \
                  "\"vision_config\": {\"depth\": 2, \"hidden_size\": 32, \"intermediate_size\": 64, " \
                  "\"out_hidden_size\": 64, \"num_hidden_layers\": 2, \"image_size\": 64, \"patch_size\": 16}"

static void test_every_family_row(void **state)
{
    (void)state;
    char list[1024] = "", json[1024];
    for (int f = 0; f < ML_FAMILY_COUNT; f++) {
        /* Each row has a model_type that reads back as that family, with a reader and module
         * names for every tensor the inventory lists. */
        const char *name = ml_family_name((enum ml_family)f);
        assert_string_not_equal(name, "unknown");
        (void)snprintf(json, sizeof(json), "{\"model_type\": \"%s\", " ANY_SIZES "}", name);
        struct ml_arch a;
        struct ml_diag d;
        if (parse(json, &a, &d) != ML_OK)
            fail_msg("%s: %s", name, d.msg);
        assert_int_equal(a.family, f);
        assert_string_equal(a.model_type, name);
        static struct ml_inventory inv;
        assert_int_equal(ml_inventory_build(&a, &inv, &d), ML_OK);
        for (uint32_t i = 0; i < inv.n; i++)
            if (strstr(inv.t[i].path, "(null)") || !inv.t[i].path[0])
                fail_msg("%s: a tensor without a module name", name);
        /* Stacks: BertForMaskedLM is encoder-only, T5 encoder-decoder, the rest decoder-only.
         * Soft-capped attention: LLaMA-Factory's configure_attn_implementation keys its eager
         * fallback on model_type "gemma2". */
        enum ml_stack want = !strcmp(name, "bert") ? ML_STACK_ENCODER
                             : !strcmp(name, "t5") ? ML_STACK_ENCODER_DECODER : ML_STACK_DECODER;
        assert_int_equal(a.stack, want);
        assert_int_equal(a.attn_softcap, !strcmp(name, "gemma2"));
        (void)snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", f ? ", " : "", name);
    }
    /* The supported list is the table's names, in order; a short buffer is cut, not overrun. */
    char types[1024], small[8];
    assert_int_equal(ml_arch_supported_types(types, sizeof(types)), strlen(list));
    assert_string_equal(types, list);
    assert_int_equal(ml_arch_supported_types(small, sizeof(small)), strlen(list));
    assert_string_equal(small, "llama, ");
    /* Aliases read as their family but keep their own spelling. */
    struct ml_arch a;
    struct ml_diag d;
    assert_int_equal(parse("{\"model_type\": \"RefinedWebModel\", " ANY_SIZES "}", &a, &d), ML_OK);
    assert_int_equal(a.family, ML_FAMILY_FALCON);
    assert_string_equal(a.model_type, "RefinedWebModel");
}

/* Is needle in text once every run of white space in text is one space? */
static bool in_flowed_text(const char *text, const char *needle)
{
    size_t n = strlen(text);
    char *flat = malloc(n + 1), *w = flat;
    assert_non_null(flat);
    for (const char *p = text; *p; p++) {
        bool space = *p == ' ' || *p == '\n' || *p == '\t';
        if (!space)
            *w++ = *p;
        else if (w > flat && w[-1] != ' ')
            *w++ = ' ';
    }
    *w = '\0';
    bool hit = strstr(flat, needle) != NULL;
    free(flat);
    return hit;
}

/* Does a table row of the Markdown text have name as a word of its first cell? */
static bool has_row(const char *doc, const char *name)
{
    size_t n = strlen(name);
    for (const char *line = doc; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "| ", 2) != 0)
            continue;
        const char *end = strstr(line + 2, " |");
        for (const char *p = line + 2; end && p + n <= end; p++)
            if (!strncmp(p, name, n) && p[-1] == ' ' && (p[n] == ' ' || p[n] == '|'))
                return true;
    }
    return false;
}

static void test_docs_list_every_family(void **state)
{
    (void)state;
    /* README.md and docs/cli/params.md print the list `memledger models --types` prints, and
     * docs/models.md has a table row for each family (the checklist in lib/model/family.c). */
    char types[1024];
    (void)ml_arch_supported_types(types, sizeof(types));
    static const char *const lists[] = {"README.md", "docs/cli/params.md"};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        char *text = ml_test_slurp(lists[i], NULL);
        assert_non_null(text);
        if (!in_flowed_text(text, types))
            fail_msg("%s does not list the supported model_types: %s", lists[i], types);
        free(text);
    }
    char *doc = ml_test_slurp("docs/models.md", NULL);
    assert_non_null(doc);
    for (int f = 0; f < ML_FAMILY_COUNT; f++)
        if (!has_row(doc, ml_family_name((enum ml_family)f)))
            fail_msg("docs/models.md has no row for model_type '%s'", ml_family_name((enum ml_family)f));
    free(doc);
}

static void test_bad_json(void **state)
{
    (void)state;
    expect_error("", ML_ERR_PARSE, "empty");
    expect_error("{\"model_type\": \"llama\",", ML_ERR_PARSE, "malformed JSON");
    expect_error("[1, 2, 3]", ML_ERR_PARSE, "JSON object");
    expect_error("{} trailing", ML_ERR_PARSE, "unexpected text");
    expect_error("{\"a\": NaN}", ML_ERR_PARSE, "malformed");
    char bin[8] = {'{', 0, 1, 2, (char)0xff, '}', 0, 0};
    struct ml_arch a;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_arch_from_json(bin, 6, "bin.json", &a, &d), ML_ERR_PARSE);
    assert_non_null(strstr(d.msg, "binary"));
    /* Line and column of a syntax error. */
    assert_int_equal(parse("{\n  \"model_type\": \"llama\",\n  \"x\": ]\n}", &a, &d), ML_ERR_PARSE);
    assert_int_equal(d.line, 3);
    /* Deep nesting is refused by cJSON's nesting limit, not by a crash. */
    char deep[4003];
    memset(deep, '[', 4000);
    deep[4000] = '\0';
    expect_error(deep, ML_ERR_PARSE, "malformed");
}

static void test_bad_values(void **state)
{
    (void)state;
    expect_error("{\"hidden_size\": 4096}", ML_ERR_INVALID, "model_type");
    expect_error("{\"model_type\": \"mamba\", " LLAMA_SIZES "}", ML_ERR_UNSUPPORTED, "deepseek_v3");
    expect_error("{\"model_type\": \"llama\", \"vocab_size\": 32000, \"num_hidden_layers\": 32, "
                 "\"num_attention_heads\": 32, \"intermediate_size\": 11008}",
                 ML_ERR_INVALID, "missing 'hidden_size'");
    expect_error("{\"model_type\": \"llama\", " LLAMA_SIZES ", \"num_key_value_heads\": -8}",
                 ML_ERR_INVALID, "'num_key_value_heads' is negative");
    expect_error("{\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": 4096.5, "
                 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"intermediate_size\": 1}",
                 ML_ERR_INVALID, "whole number");
    expect_error("{\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": 1e30, "
                 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"intermediate_size\": 1}",
                 ML_ERR_INVALID, "out of range");
    expect_error("{\"model_type\": \"llama\", \"vocab_size\": \"32000\", \"hidden_size\": 4096, "
                 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"intermediate_size\": 1}",
                 ML_ERR_INVALID, "'vocab_size' must be a number");
    expect_error("{\"model_type\": \"llama\", " LLAMA_SIZES ", \"tie_word_embeddings\": \"yes\"}",
                 ML_ERR_INVALID, "true or false");
    expect_error("{\"model_type\": \"llama\", " LLAMA_SIZES ", \"num_key_value_heads\": 5}",
                 ML_ERR_INVALID, "must divide");
    expect_error("{\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": 4096, "
                 "\"num_hidden_layers\": 0, \"num_attention_heads\": 32, \"intermediate_size\": 1}",
                 ML_ERR_INVALID, "out of range");
    expect_error("{\"model_type\": \"mixtral\", " LLAMA_SIZES ", \"num_local_experts\": 2, "
                 "\"num_experts_per_tok\": 3}", ML_ERR_INVALID, "experts per token");
    expect_error("{\"model_type\": \"qwen2_moe\", " LLAMA_SIZES ", \"mlp_only_layers\": [40]}",
                 ML_ERR_INVALID, "mlp_only_layers");
    expect_error("{\"model_type\": \"phi\", " LLAMA_SIZES ", \"partial_rotary_factor\": 2}",
                 ML_ERR_INVALID, "between 0 and 1");
}

static void test_overflow_in_inventory(void **state)
{
    (void)state;
    /* Values inside each key's range whose product overflows u64 stop with ML_ERR_OVERFLOW. */
    struct ml_arch a;
    struct ml_diag d;
    assert_int_equal(parse("{\"model_type\": \"mixtral\", \"vocab_size\": 33554432, "
                           "\"hidden_size\": 4194304, \"num_hidden_layers\": 1024, "
                           "\"num_attention_heads\": 65536, \"intermediate_size\": 4194304, "
                           "\"num_local_experts\": 65536, \"num_experts_per_tok\": 1}", &a, &d),
                     ML_OK);
    static struct ml_inventory inv;
    ml_diag_init(&d);
    assert_int_equal(ml_inventory_build(&a, &inv, &d), ML_ERR_OVERFLOW);
    assert_non_null(strstr(d.msg, "overflow"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_defaults),
        cmocka_unit_test(test_explicit_keys),
        cmocka_unit_test(test_moe_keys),
        cmocka_unit_test(test_falcon_norm_names),
        cmocka_unit_test(test_every_family_row),
        cmocka_unit_test(test_docs_list_every_family),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_overflow_in_inventory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
