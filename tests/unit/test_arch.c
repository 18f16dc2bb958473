/* config.json -> ml_arch (lib/model/arch_json.c): keys, defaults, and every kind of bad input. */
#include "ml_test.h"

#include "memledger/arch.h"
#include "memledger/catalog.h"
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

#define LLAMA_SIZES                                                                                                    \
    "\"vocab_size\": 32000, \"hidden_size\": 4096, \"num_hidden_layers\": 32, "                                        \
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
                           "\"num_key_value_heads\": 8, \"torch_dtype\": \"bfloat16\"}",
                           &a, &d),
                     ML_OK);
    assert_int_equal(a.head_dim, 96);
    assert_true(a.tie_embeddings);
    assert_true(a.qkv_bias && a.o_bias);
    assert_int_equal(a.n_kv_heads, 8);
    assert_int_equal(a.torch_dtype, ML_DTYPE_BF16);
    /* Partial rotary (Phi): int(0.4 * 80) = 32. */
    assert_int_equal(parse("{\"model_type\": \"phi\", \"vocab_size\": 51200, \"hidden_size\": 2560, "
                           "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                           "\"intermediate_size\": 10240, \"partial_rotary_factor\": 0.4}",
                           &a, &d),
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
                           "\"mlp_only_layers\": [1]}",
                           &a, &d),
                     ML_OK);
    assert_false(ml_arch_layer_is_moe(&a, 0));
    assert_false(ml_arch_layer_is_moe(&a, 1));
    assert_false(ml_arch_layer_is_moe(&a, 2));
    assert_true(ml_arch_layer_is_moe(&a, 3));
    assert_int_equal(ml_arch_n_moe_layers(&a), 1);
    /* deepseek_v3: first_k_dense_replace, moe_layer_freq, MTP counted apart. */
    assert_int_equal(parse("{\"model_type\": \"deepseek_v3\", \"vocab_size\": 1000, \"hidden_size\": 64, "
                           "\"num_hidden_layers\": 6, \"num_attention_heads\": 4, \"num_key_value_heads\": 4, "
                           "\"intermediate_size\": 128, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, "
                           "\"n_group\": 4, \"topk_group\": 2, "
                           "\"moe_intermediate_size\": 16, \"first_k_dense_replace\": 2, \"moe_layer_freq\": 2, "
                           "\"num_nextn_predict_layers\": 1, \"q_lora_rank\": null}",
                           &a, &d),
                     ML_OK);
    assert_int_equal(ml_arch_n_moe_layers(&a), 2); /* layers 2 and 4 */
    assert_true(ml_arch_layer_is_moe(&a, 2) && ml_arch_layer_is_moe(&a, 4));
    assert_int_equal(a.q_lora_rank, 0); /* null: plain q_proj (DeepSeek-V2-Lite) */
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

#define FALCON_SIZES                                                                                                   \
    "\"model_type\": \"falcon\", \"vocab_size\": 1000, \"hidden_size\": 64, "                                          \
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
                         "\"parallel_attn\": false}",
                         "transformer.h.*.post_attention_layernorm"));
    assert_true(has_path("{" FALCON_SIZES ", \"parallel_attn\": false}", "transformer.h.*.post_attention_layernorm"));
    assert_true(has_path("{" FALCON_SIZES "}", "transformer.h.*.input_layernorm"));
    assert_false(has_path("{" FALCON_SIZES "}", "transformer.h.*.post_attention_layernorm"));
}

/* Keys every reader finds what it requires in (each family names its sizes its own way). */
#define ANY_SIZES                                                                                                      \
    "\"vocab_size\": 1000, \"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_key_value_heads\": 4, "                \
    "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"ffn_dim\": 128, "                                       \
    "\"ffn_hidden_size\": 128, \"d_model\": 64, \"num_layers\": 2, \"num_heads\": 4, "                                 \
    "\"vision_config\": {\"depth\": 2, \"hidden_size\": 32, \"intermediate_size\": 64, "                               \
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
                             : !strcmp(name, "t5") ? ML_STACK_ENCODER_DECODER
                                                   : ML_STACK_DECODER;
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

static void catalog_arch(const char *name, struct ml_arch *a)
{
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find(name);
    if (!e || ml_catalog_arch(e, a, &d) != ML_OK)
        fail_msg("%s: %s", name, e ? d.msg : "not in the catalog");
}

static void test_layer_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        uint32_t full, sliding, chunked, linear;
    } want[] = {
        /* Gemma3TextConfig: sliding unless (i + 1) % sliding_window_pattern (6) == 0. */
        {"gemma-3-4b-it", 5, 29, 0, 0},
        /* gpt-oss layer_types: alternating sliding (128) / full. */
        {"gpt-oss-20b", 12, 12, 0, 0},
        /* Llama4TextConfig: RoPE layers chunked, every 4th (NoPE) global. */
        {"llama-4-scout-17b-16e-instruct", 12, 36, 0, 0},
        /* full_attention_interval 4: 3 Gated DeltaNet : 1 gated attention. */
        {"qwen3.5-4b", 8, 0, 0, 24},
        {"qwen3-next-80b-a3b-instruct", 12, 0, 0, 36},
        /* Gemma 2: even layers sliding; Mistral v0.1: every layer within a 4096 window. */
        {"gemma-2-9b", 21, 21, 0, 0},
        {"mistral-7b-v0.1", 0, 32, 0, 0},
        {"qwen2.5-7b", 28, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct ml_arch a;
        catalog_arch(want[i].name, &a);
        uint32_t got[4] = {ml_arch_n_layers_attn(&a, ML_LAYER_FULL), ml_arch_n_layers_attn(&a, ML_LAYER_SLIDING),
                           ml_arch_n_layers_attn(&a, ML_LAYER_CHUNKED), ml_arch_n_layers_attn(&a, ML_LAYER_LINEAR)};
        /* Llama 4's chunked layers are counted as the third kind; the table's second column
         * holds them for brevity. */
        if (!strncmp(want[i].name, "llama-4", 7)) {
            got[1] = got[2];
            got[2] = 0;
        }
        if (got[0] != want[i].full || got[1] != want[i].sliding || got[2] != want[i].chunked ||
            got[3] != want[i].linear)
            fail_msg("%s: %u full, %u sliding, %u chunked, %u linear", want[i].name, got[0], got[1], got[2], got[3]);
    }
    struct ml_arch a;
    catalog_arch("llama-4-scout-17b-16e-instruct", &a);
    assert_int_equal(ml_arch_layer_attn(&a, 3), ML_LAYER_FULL);
    assert_int_equal(ml_arch_layer_attn(&a, 0), ML_LAYER_CHUNKED);
    assert_int_equal(a.attn_chunk, 8192);
    catalog_arch("gemma-3-4b-it", &a);
    assert_int_equal(a.sliding_window, 1024);
    assert_int_equal(ml_arch_layer_attn(&a, 5), ML_LAYER_FULL);
    /* Qwen3.5-4B's state per linear-attention layer and sequence, as an SGLang test states it:
     * "24 x (8192 x 3 x 2 + 32 x 128 x 128 x 4)": conv 8192 channels x (K - 1) x bf16 + the fp32
     * recurrent state. */
    catalog_arch("qwen3.5-4b", &a);
    assert_int_equal(ml_arch_linear_state_bytes(&a, 2), 8192 * 3 * 2 + 32 * 128 * 128 * 4);
    assert_int_equal(ml_arch_linear_state_bytes(&a, 2), 2146304);
}

#define TINY                                                                                                           \
    "\"vocab_size\": 1000, \"hidden_size\": 64, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, "                \
    "\"num_key_value_heads\": 4, \"intermediate_size\": 128"

static void test_layer_types_key(void **state)
{
    (void)state;
    struct ml_arch a;
    struct ml_diag d;
    /* An explicit layer_types wins over the family pattern. */
    assert_int_equal(parse("{\"model_type\": \"gpt_oss\", " TINY ", \"num_local_experts\": 4, "
                           "\"layer_types\": [\"full_attention\", \"full_attention\", \"sliding_attention\", "
                           "\"full_attention\"]}",
                           &a, &d),
                     ML_OK);
    assert_int_equal(ml_arch_n_layers_attn(&a, ML_LAYER_SLIDING), 1);
    assert_int_equal(ml_arch_layer_attn(&a, 2), ML_LAYER_SLIDING);
    /* A sliding layer without a window attends to everything. */
    assert_int_equal(parse("{\"model_type\": \"qwen2\", " TINY ", \"layer_types\": [\"sliding_attention\", "
                           "\"full_attention\", \"full_attention\", \"full_attention\"]}",
                           &a, &d),
                     ML_OK);
    assert_int_equal(ml_arch_n_layers_attn(&a, ML_LAYER_FULL), 4);
    expect_error("{\"model_type\": \"llama\", " TINY ", \"layer_types\": [\"full_attention\"]}", ML_ERR_INVALID,
                 "'layer_types' has 1 entries for 4 layers");
    expect_error("{\"model_type\": \"llama\", " TINY ", \"layer_types\": [\"full_attention\", \"x\", \"y\", \"z\"]}",
                 ML_ERR_UNSUPPORTED, "'layer_types' entry 1");
    expect_error("{\"model_type\": \"llama\", " TINY ", \"layer_types\": [\"linear_attention\", "
                 "\"full_attention\", \"full_attention\", \"full_attention\"]}",
                 ML_ERR_UNSUPPORTED, "linear_attention");
    expect_error("{\"model_type\": \"llama\", " TINY ", \"layer_types\": 3}", ML_ERR_INVALID, "list of strings");
}

static void test_nested_configs(void **state)
{
    (void)state;
    struct ml_arch a;
    struct ml_diag d;
    /* text_config holds the language model; dtype is transformers v5's spelling; the text
     * config's tie_word_embeddings wins over the top level's. */
    assert_int_equal(
        parse("{\"model_type\": \"qwen3_vl\", \"tie_word_embeddings\": false, \"text_config\": {" TINY
              ", \"dtype\": \"bfloat16\", \"tie_word_embeddings\": true}, \"vision_config\": {\"depth\": 2, "
              "\"hidden_size\": 32, \"intermediate_size\": 64, \"out_hidden_size\": 64, "
              "\"deepstack_visual_indexes\": [0, 1]}}",
              &a, &d),
        ML_OK);
    assert_int_equal(a.hidden, 64);
    assert_int_equal(a.torch_dtype, ML_DTYPE_BF16);
    assert_true(a.tie_embeddings);
    assert_int_equal(a.vision.kind, ML_VISION_QWEN3);
    assert_int_equal(a.vision.deepstack, 2);
    assert_int_equal(a.vision.patch, 16);
    /* A vision family needs its vision_config; a text_config must be an object. */
    expect_error("{\"model_type\": \"qwen3_vl\", \"text_config\": {" TINY "}}", ML_ERR_INVALID,
                 "missing 'vision_config'");
    expect_error("{\"model_type\": \"gemma3\", \"text_config\": 5, " TINY "}", ML_ERR_INVALID,
                 "'text_config' must be an object");
    expect_error("{\"model_type\": \"gemma3\", \"text_config\": {" TINY
                 "}, \"vision_config\": {\"vision_use_head\": true}}",
                 ML_ERR_UNSUPPORTED, "vision_use_head");
}

static void test_engine_context(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        uint64_t max_positions, engine;
    } want[] = {
        {"qwen3-8b", 40960, 40960},        /* no rope_scaling */
        {"llama-3.1-8b", 131072, 131072},  /* llama3 rope type: not scaled again */
        {"deepseek-v3", 163840, 163840},   /* yarn: original 4096 x factor 40 */
        {"gpt-oss-20b", 131072, 131072},   /* yarn: 4096 x 32 */
        {"gemma-3-4b-it", 131072, 131072}, /* linear x 8, but Gemma 3's length already has it */
        {"llama-4-scout-17b-16e-instruct", 10485760, 10485760},
        {"qwen2.5-vl-7b-instruct", 128000, 128000}, /* rope_scaling of type default (mrope) */
        {"baichuan2-7b", 4096, 4096},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct ml_arch a;
        catalog_arch(want[i].name, &a);
        if (a.max_positions != want[i].max_positions || a.engine_max_len != want[i].engine)
            fail_msg("%s: max_positions %llu, engine %llu", want[i].name, (unsigned long long)a.max_positions,
                     (unsigned long long)a.engine_max_len);
    }
    struct ml_arch a;
    struct ml_diag d;
    /* Qwen3's card: yarn factor 4 over 32768 gives vLLM's 131072. */
    assert_int_equal(parse("{\"model_type\": \"qwen3\", " TINY ", \"max_position_embeddings\": 40960, "
                           "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
                           "\"original_max_position_embeddings\": 32768}}",
                           &a, &d),
                     ML_OK);
    assert_int_equal(a.engine_max_len, 131072);
    assert_int_equal(a.rope, ML_ROPE_YARN);
    /* linear / dynamic: the factor times the smallest length key; v5's rope_parameters alike. */
    assert_int_equal(parse("{\"model_type\": \"llama\", " TINY ", \"max_position_embeddings\": 4096, "
                           "\"rope_parameters\": {\"rope_type\": \"linear\", \"factor\": 2}}",
                           &a, &d),
                     ML_OK);
    assert_int_equal(a.engine_max_len, 8192);
    assert_int_equal(parse("{\"model_type\": \"llama\", " TINY ", \"max_position_embeddings\": 4096, "
                           "\"seq_length\": 2048}",
                           &a, &d),
                     ML_OK);
    assert_int_equal(a.engine_max_len, 2048);
}

static void test_quantization_config(void **state)
{
    (void)state;
    struct ml_arch a;
    struct ml_diag d;
#define Q(x) "{\"model_type\": \"llama\", " TINY ", \"quantization_config\": " x "}"
    /* AutoAWQ GEMM (Qwen2.5-*-AWQ). */
    assert_int_equal(parse(Q("{\"bits\": 4, \"group_size\": 128, \"quant_method\": \"awq\", \"version\": \"gemm\", "
                             "\"zero_point\": true, \"modules_to_not_convert\": [\"visual\"]}"),
                           &a, &d),
                     ML_OK);
    assert_int_equal(a.wq.method, ML_WQ_AWQ);
    assert_int_equal(a.wq.bits, 4);
    assert_int_equal(a.wq.group, 128);
    assert_true(a.wq.zero);
    assert_true(ml_wq_skips(&a.wq, "model.visual.blocks.*.attn.qkv"));
    assert_false(ml_wq_skips(&a.wq, "model.layers.*.self_attn.q_proj"));
    /* GPTQ-Int8 with act-order; group -1 = per channel. */
    assert_int_equal(
        parse(Q("{\"bits\": 8, \"group_size\": -1, \"desc_act\": true, \"quant_method\": \"gptq\"}"), &a, &d), ML_OK);
    assert_int_equal(a.wq.method, ML_WQ_GPTQ);
    assert_int_equal(a.wq.bits, 8);
    assert_int_equal(a.wq.group, 0);
    assert_true(a.wq.g_idx && a.wq.zero);
    /* bitsandbytes (Unsloth's -bnb-4bit uploads). */
    assert_int_equal(
        parse(Q("{\"load_in_4bit\": true, \"bnb_4bit_quant_type\": \"nf4\", \"bnb_4bit_use_double_quant\": true, "
                "\"llm_int8_skip_modules\": [\"lm_head\", \"multi_modal_projector\"], \"quant_method\": "
                "\"bitsandbytes\"}"),
              &a, &d),
        ML_OK);
    assert_int_equal(a.wq.method, ML_WQ_BNB4);
    assert_true(a.wq.double_quant && !a.wq.fp4);
    assert_int_equal(a.wq.n_skip, 2);
    /* compressed-tensors W4A16 (group 128, asymmetric) with a regex ignore. */
    assert_int_equal(
        parse(Q("{\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\", "
                "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4, "
                "\"type\": \"int\", \"strategy\": \"group\", \"group_size\": 128, \"symmetric\": false}}}, "
                "\"ignore\": [\"lm_head\", \"re:.*mlp.gate$\"]}"),
              &a, &d),
        ML_OK);
    assert_int_equal(a.wq.method, ML_WQ_INT);
    assert_int_equal(a.wq.bits, 4);
    assert_int_equal(a.wq.group, 128);
    assert_true(a.wq.zero);
    assert_true(ml_wq_skips(&a.wq, "model.layers.*.mlp.gate"));
    /* gpt-oss MXFP4: the experts only. */
    assert_int_equal(parse(Q("{\"quant_method\": \"mxfp4\", \"modules_to_not_convert\": [\"model.layers.*.self_attn\", "
                             "\"model.layers.*.mlp.router\", \"model.embed_tokens\", \"lm_head\"]}"),
                           &a, &d),
                     ML_OK);
    assert_int_equal(a.wq.method, ML_WQ_MXFP4);
    assert_true(a.wq.experts_only);
    assert_true(ml_wq_skips(&a.wq, "model.layers.*.self_attn.q_proj"));
    assert_true(ml_wq_skips(&a.wq, "lm_head"));
    assert_false(ml_wq_skips(&a.wq, "model.layers.*.mlp.experts.gate_up_proj"));
    char desc[96];
    ml_wq_describe(&a.wq, desc, sizeof(desc));
    assert_string_equal(desc, "mxfp4 4-bit, group 32");
    expect_error(Q("{\"quant_method\": \"aqlm\"}"), ML_ERR_UNSUPPORTED, "quant_method 'aqlm' is not modelled");
    expect_error(Q("{\"bits\": 4}"), ML_ERR_INVALID, "no 'quant_method'");
    expect_error(Q("{\"quant_method\": \"fp8\", \"weight_block_size\": [128, 0]}"), ML_ERR_INVALID,
                 "weight_block_size");
    expect_error(Q("{\"quant_method\": \"awq\", \"modules_to_not_convert\": [1]}"), ML_ERR_INVALID,
                 "modules_to_not_convert");
#undef Q
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

/* A published config.json under tests/fixtures/configs (README.md there names each source). */
static void read_fixture(const char *file, struct ml_arch *a, struct ml_inventory *inv)
{
    char rel[256];
    (void)snprintf(rel, sizeof(rel), "tests/fixtures/configs/%s", file);
    size_t len = 0;
    char *text = ml_test_slurp(rel, &len);
    assert_non_null(text);
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_arch_from_json(text, len, rel, a, &d) != ML_OK)
        fail_msg("%s: %s", file, d.msg);
    free(text);
    if (ml_inventory_build(a, inv, &d) != ML_OK)
        fail_msg("%s: %s", file, d.msg);
}

/* Configs as the Hub publishes them, read as transformers reads them (issue 22 item 8): absent
 * keys take the configuration class's defaults; a model_type transformers does not know is read
 * through its architectures or its nested language model, and says so. Each count is a
 * published figure, not this code's. */
static void test_published_configs(void **state)
{
    (void)state;
    struct ml_arch a;
    static struct ml_inventory inv;
    /* google/gemma-3-12b-it: text_config names no vocab_size or head_dim; Gemma3TextConfig's
     * 262,208 and 256. 12,187,325,040 parameters (data/models/params.jsonl, an HF-derived table). */
    read_fixture("gemma-3-12b-it.json", &a, &inv);
    assert_int_equal(a.vocab, 262208);
    assert_int_equal(a.head_dim, 256);
    assert_string_equal(a.read_note, "");
    assert_true(inv.total_params == 12187325040ull);
    /* moonshotai/Kimi-K2-Instruct: model_type kimi_k2, architectures DeepseekV3ForCausalLM. Its
     * safetensors hold 1,026,470,731,056 values, of which 62,498,608 are FP8 weight_scale_inv
     * tensors and rotary inv_freq buffers (the same public listing, tensor by tensor). */
    read_fixture("kimi-k2-instruct.json", &a, &inv);
    assert_int_equal(a.family, ML_FAMILY_DEEPSEEK_V3);
    assert_string_equal(a.model_type, "kimi_k2");
    assert_non_null(strstr(a.read_note, "DeepseekV3ForCausalLM"));
    assert_int_equal(a.n_experts, 384);
    assert_true(inv.total_params + 62498608ull == 1026470731056ull);
    /* mistralai/Mistral-Small-3.1-24B-Instruct-2503 (mistral3): the text model is read and the
     * Pixtral tower said to be left out; 23,572,403,200 = KerasHub's Magistral Small 2506 preset
     * (the same text model) and GGUF general.parameter_count of the mistral3 text weights. */
    read_fixture("mistral-small-3.1-24b-instruct-2503.json", &a, &inv);
    assert_int_equal(a.family, ML_FAMILY_MISTRAL);
    assert_non_null(strstr(a.read_note, "not counted"));
    assert_int_equal(a.sliding_window, 0); /* "sliding_window": null, not MistralConfig's 4096 */
    assert_true(inv.total_params == 23572403200ull);
    /* OpenGVLab/InternVL3-1B-Pretrained (internvl_chat): llm_config is a Qwen2ForCausalLM, as
     * its printed module tree shows: embed_tokens 151674 x 896, 24 layers, k_proj 896 -> 128,
     * a separate lm_head. */
    read_fixture("internvl3-1b-pretrained.json", &a, &inv);
    assert_int_equal(a.family, ML_FAMILY_QWEN2);
    assert_int_equal(a.vocab, 151674);
    assert_int_equal(a.n_layers, 24);
    assert_int_equal(a.n_kv_heads * a.head_dim, 128);
    assert_false(a.tie_embeddings);
    assert_non_null(strstr(a.read_note, "llm_config"));
    /* llava-hf/llava-1.5-7b-hf (llava): its text_config names only the vocabulary and positions and
     * leans on LlamaConfig's defaults (4096 wide, 32 layers of 32 heads, FFN 11008): Vicuna-7B,
     * i.e. Llama-2-7B's published 6,738,415,616 with 64 more rows in the embedding and the head. */
    read_fixture("llava-1.5-7b-hf.json", &a, &inv);
    assert_int_equal(a.family, ML_FAMILY_LLAMA);
    assert_int_equal(a.n_layers, 32);
    assert_true(inv.total_params == 6738415616ull + 2ull * 64 * 4096);
    assert_non_null(strstr(a.read_note, "'text_config'"));
    /* Neither a known model_type, nor a known class, nor a nested language model: refused. */
    expect_error("{\"model_type\": \"mamba\", \"architectures\": [\"MambaForCausalLM\"], " LLAMA_SIZES "}",
                 ML_ERR_UNSUPPORTED, "unsupported model_type 'mamba'");
    /* A vision_config without sizes: Qwen2_5_VLVisionConfig's 32 blocks of 3584 (3420 wide). */
    assert_int_equal(parse("{\"model_type\": \"qwen2_5_vl\", \"vision_config\": {}}", &a, &(struct ml_diag){0}), ML_OK);
    assert_int_equal(a.vision.depth, 32);
    assert_int_equal(a.vision.hidden, 3584);
    assert_int_equal(a.vision.intermediate, 3420);
    /* Qwen3VLVisionConfig: deepstack_visual_indexes (8, 16, 24) when absent; Qwen3.5 has none. */
    assert_int_equal(parse("{\"model_type\": \"qwen3_vl\", \"vision_config\": {}}", &a, &(struct ml_diag){0}), ML_OK);
    assert_int_equal(a.vision.deepstack, 3);
    assert_int_equal(a.vision.depth, 27);
    assert_int_equal(parse("{\"model_type\": \"qwen3_5\", \"vision_config\": {}}", &a, &(struct ml_diag){0}), ML_OK);
    assert_int_equal(a.vision.deepstack, 0);
    /* Absent keys of a transformers family take its class defaults (MistralConfig: 8 KV heads,
     * a 4096 window, 131072 positions). */
    assert_int_equal(parse("{\"model_type\": \"mistral\"}", &a, &(struct ml_diag){0}), ML_OK);
    assert_int_equal(a.hidden, 4096);
    assert_int_equal(a.n_kv_heads, 8);
    assert_int_equal(a.sliding_window, 4096);
    assert_int_equal(a.max_positions, 131072);
}

static void test_bad_values(void **state)
{
    (void)state;
    expect_error("{\"hidden_size\": 4096}", ML_ERR_INVALID, "model_type");
    expect_error("{\"model_type\": \"mamba\", " LLAMA_SIZES "}", ML_ERR_UNSUPPORTED, "deepseek_v3");
    /* Remote-code families (chatglm, qwen, baichuan, internlm2) have no class defaults here. */
    expect_error("{\"model_type\": \"chatglm\", \"padded_vocab_size\": 65024, \"num_layers\": 28, "
                 "\"num_attention_heads\": 32, \"ffn_hidden_size\": 13696}",
                 ML_ERR_INVALID, "missing 'hidden_size'");
    expect_error("{\"model_type\": \"llama\", " LLAMA_SIZES ", \"num_key_value_heads\": -8}", ML_ERR_INVALID,
                 "'num_key_value_heads' is negative");
    expect_error("{\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": 4096.5, "
                 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"intermediate_size\": 1}",
                 ML_ERR_INVALID, "whole number");
    expect_error("{\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": 1e30, "
                 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"intermediate_size\": 1}",
                 ML_ERR_INVALID, "out of range");
    expect_error("{\"model_type\": \"llama\", \"vocab_size\": \"32000\", \"hidden_size\": 4096, "
                 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"intermediate_size\": 1}",
                 ML_ERR_INVALID, "'vocab_size' must be a number");
    expect_error("{\"model_type\": \"llama\", " LLAMA_SIZES ", \"tie_word_embeddings\": \"yes\"}", ML_ERR_INVALID,
                 "true or false");
    expect_error("{\"model_type\": \"llama\", " LLAMA_SIZES ", \"num_key_value_heads\": 5}", ML_ERR_INVALID,
                 "must divide");
    expect_error("{\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": 4096, "
                 "\"num_hidden_layers\": 0, \"num_attention_heads\": 32, \"intermediate_size\": 1}",
                 ML_ERR_INVALID, "out of range");
    expect_error("{\"model_type\": \"mixtral\", " LLAMA_SIZES ", \"num_local_experts\": 2, "
                 "\"num_experts_per_tok\": 3}",
                 ML_ERR_INVALID, "experts per token");
    expect_error("{\"model_type\": \"qwen2_moe\", " LLAMA_SIZES ", \"mlp_only_layers\": [40]}", ML_ERR_INVALID,
                 "mlp_only_layers");
    expect_error("{\"model_type\": \"phi\", " LLAMA_SIZES ", \"partial_rotary_factor\": 2}", ML_ERR_INVALID,
                 "between 0 and 1");
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
                           "\"num_local_experts\": 65536, \"num_experts_per_tok\": 1}",
                           &a, &d),
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
        cmocka_unit_test(test_layer_kinds),
        cmocka_unit_test(test_layer_types_key),
        cmocka_unit_test(test_nested_configs),
        cmocka_unit_test(test_engine_context),
        cmocka_unit_test(test_quantization_config),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_published_configs),
        cmocka_unit_test(test_overflow_in_inventory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
