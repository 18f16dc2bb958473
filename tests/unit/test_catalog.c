/* Catalog lookups: case-insensitive names, hub ids as aliases, suggestions. */
#include "ml_test.h"

#include "memledger/catalog.h"
#include "memledger/report.h"

static void test_find(void **state)
{
    (void)state;
    const struct ml_catalog_entry *e = ml_catalog_find("QWEN2.5-14B");
    assert_non_null(e);
    assert_string_equal(e->name, "qwen2.5-14b");
    assert_ptr_equal(ml_catalog_find("Qwen/Qwen2.5-14B"), e);
    assert_ptr_equal(ml_catalog_find("qwen/qwen2.5-14b"), e);
    assert_ptr_equal(ml_catalog_find("my-mirror/Qwen2.5-14B"), e);
    assert_null(ml_catalog_find("qwen2.5-15b"));
    assert_null(ml_catalog_find(""));
    assert_null(ml_catalog_find(NULL));
}

static void test_suggest(void **state)
{
    (void)state;
    const struct ml_catalog_entry *s[3];
    size_t n = ml_catalog_suggest("qwen2.5-14", s, 3);
    assert_true(n >= 1);
    assert_string_equal(s[0]->name, "qwen2.5-14b");
    n = ml_catalog_suggest("lama-2-7b", s, 3);
    assert_true(n >= 1);
    assert_string_equal(s[0]->name, "llama-2-7b");
    assert_int_equal(ml_catalog_suggest("zzzzzzzzzzzzzzzzzzzz", s, 3), 0);
    assert_int_equal(ml_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(ml_edit_distance("ABC", "abc"), 0);
    assert_int_equal(ml_edit_distance("qwen2.5-41b", "qwen2.5-14b"), 1); /* a transposition */
}

static void test_entries_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < ml_catalog_count(); i++) {
        const struct ml_catalog_entry *e = ml_catalog_get(i);
        struct ml_arch a;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_catalog_arch(e, &a, &d) != ML_OK)
            fail_msg("%s: %s", e->name, d.msg);
        assert_true(e->params > 0);
        assert_non_null(strchr(e->hub_id, '/'));
    }
    assert_null(ml_catalog_get(ml_catalog_count()));
}

static const struct ml_catalog_entry *resolve(const char *name, bool path_like, struct ml_name_match *m)
{
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_catalog_resolve(name, path_like, m, &d) != ML_OK)
        fail_msg("%s: %s", name, d.msg);
    return m->entry;
}

static void test_resolve_names(void **state)
{
    (void)state;
    struct ml_name_match m;
    /* Exact names and hub ids say nothing more. */
    assert_string_equal(resolve("Qwen/Qwen2.5-14B", false, &m)->name, "qwen2.5-14b");
    assert_string_equal(m.note, "");
    /* A release with a row of its own (variants.jsonl) is read with its own config, said so; one
     * without resolves to the base, and the note names the keys taken from the base. */
    assert_string_equal(resolve("Qwen2.5-14B-Instruct", false, &m)->name, "qwen2.5-14b-instruct");
    assert_non_null(strstr(m.note, "max_position_embeddings 32768 (qwen2.5-14b: 131072)"));
    assert_string_equal(m.served, "Qwen/Qwen2.5-14B-Instruct");
    assert_string_equal(resolve("meta-llama/Llama-3.1-8B-Instruct", false, &m)->name, "llama-3.1-8b");
    assert_non_null(strstr(m.note, "-Instruct: an instruction-tuned release"));
    assert_non_null(strstr(m.note, "max_position_embeddings, rope_scaling, quantization_config, tie_word_embeddings, "
                                   "vocab_size may differ from llama-3.1-8b's, whose values are used"));
    assert_string_equal(m.served, "meta-llama/Llama-3.1-8B-Instruct");
    /* A quantized release without a row: the name's format, its organisation for the command. */
    assert_string_equal(resolve("Qwen2.5-7B-Instruct-GPTQ-Int8", false, &m)->name, "qwen2.5-7b-instruct");
    assert_non_null(strstr(m.note, "quantization_config not read: the format the name states"));
    assert_string_equal(m.served, "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8");
    assert_true(m.served_guessed);
    /* An exact release name: its weight format from the name, its own hub id served. */
    assert_string_equal(resolve("Qwen2.5-32B-Instruct-AWQ", false, &m)->name, "qwen2.5-32b-instruct-awq");
    assert_int_equal(m.quant, ML_NAME_QUANT_AWQ);
    assert_string_equal(m.served, "Qwen/Qwen2.5-32B-Instruct-AWQ");
    assert_false(m.served_guessed);
    /* Large served hub ids, under the repositories' former names too. */
    assert_string_equal(resolve("meta-llama/Meta-Llama-3.1-405B-Instruct-FP8", false, &m)->name, "llama-3.1-405b");
    assert_int_equal(m.quant, ML_NAME_QUANT_FP8);
    assert_non_null(strstr(m.note, "Meta-Llama-3.1-405B is the repository's former name"));
    assert_string_equal(m.served, "meta-llama/Meta-Llama-3.1-405B-Instruct-FP8");
    assert_string_equal(resolve("meta-llama/Llama-3.1-405B-Instruct-FP8", false, &m)->name, "llama-3.1-405b");
    assert_string_equal(resolve("hugging-quants/Meta-Llama-3.1-405B-Instruct-AWQ-INT4", false, &m)->name,
                        "meta-llama-3.1-405b-instruct-awq-int4");
    assert_string_equal(resolve("meta-llama/Llama-2-7b-chat-hf", false, &m)->name, "llama-2-7b");
    assert_string_equal(resolve("google/gemma-3-4b-pt", false, &m)->name, "gemma-3-4b-it");
    /* Qwen3's 2507 releases are rows of their own (262144 positions); -Thinking is stripped. */
    static const struct {
        const char *name, *row;
    } r2507[] = {{"Qwen/Qwen3-4B-Instruct-2507", "qwen3-4b-2507"},
                 {"Qwen3-4B-Thinking-2507", "qwen3-4b-2507"},
                 {"Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b-2507"},
                 {"Qwen/Qwen3-235B-A22B-Thinking-2507-FP8", "qwen3-235b-a22b-2507"}};
    for (size_t i = 0; i < sizeof(r2507) / sizeof(r2507[0]); i++) {
        const struct ml_catalog_entry *e = resolve(r2507[i].name, false, &m);
        assert_string_equal(e->name, r2507[i].row);
        struct ml_arch a;
        struct ml_diag d;
        ml_diag_init(&d);
        assert_int_equal(ml_catalog_arch(e, &a, &d), ML_OK);
        assert_int_equal(a.max_positions, 262144);
    }
    assert_int_equal(m.quant, ML_NAME_QUANT_FP8);
    /* A local path that is not here: its last component, said so. */
    assert_string_equal(resolve("models/Llama-2-7b", true, &m)->name, "llama-2-7b");
    assert_non_null(strstr(m.note, "models/Llama-2-7b is not a path on this machine"));
    assert_string_equal(resolve("/data/ckpt/Qwen2.5-14B-Instruct/", true, &m)->name, "qwen2.5-14b-instruct");
    /* Quantized repositories: the format from the suffix; Qwen2.5-72B's AWQ and GPTQ-Int4
     * checkpoints have their own rows (intermediate_size padded to 29696). */
    assert_string_equal(resolve("TechxGenus/Meta-Llama-3-8B-Instruct-AWQ", false, &m)->name,
                        "meta-llama-3-8b-instruct");
    assert_int_equal(m.quant, ML_NAME_QUANT_AWQ);
    resolve("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", false, &m);
    assert_int_equal(m.quant, ML_NAME_QUANT_GPTQ);
    assert_int_equal(m.quant_bits, 8);
    resolve("unsloth/Qwen2.5-7B-Instruct-unsloth-bnb-4bit", false, &m);
    assert_int_equal(m.quant, ML_NAME_QUANT_BNB4);
    assert_string_equal(resolve("Qwen2.5-72B-Instruct-AWQ", false, &m)->name, "qwen2.5-72b-instruct-awq");
    assert_string_equal(resolve("qwen2.5-72b-gptq-int4", false, &m)->name, "qwen2.5-72b-instruct-gptq-int4");
    assert_ptr_equal(ml_catalog_quant_variant(ml_catalog_find("qwen2.5-72b"), ML_NAME_QUANT_AWQ, 4),
                     ml_catalog_find("qwen2.5-72b-instruct-awq"));
    assert_null(ml_catalog_quant_variant(ml_catalog_find("qwen2.5-7b"), ML_NAME_QUANT_AWQ, 4));
}

static void test_resolve_examples_and_refusals(void **state)
{
    (void)state;
    /* The model names of LLaMA-Factory's examples/ (issue 14, plan section i). */
    static const char *const names[] = {
        "Qwen/Qwen3-4B-Instruct-2507",
        "Qwen/Qwen3-30B-A3B-Instruct-2507",
        "Qwen/Qwen3-235B-A22B-Instruct-2507",
        "Qwen/Qwen3-8B",
        "Qwen/Qwen3-0.6B",
        "Qwen/Qwen3-VL-4B-Instruct",
        "Qwen/Qwen3-VL-30B-A3B-Instruct",
        "Qwen/Qwen2.5-VL-7B-Instruct",
        "Qwen/Qwen3.5-0.8B",
        "Qwen/Qwen3.5-4B",
        "Qwen/Qwen3.5-35B-A3B",
        "Qwen/Qwen2-1.5B-Instruct",
        "Qwen/Qwen2.5-0.5B-Instruct",
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "meta-llama/Llama-3.2-1B-Instruct",
        "deepseek-ai/DeepSeek-V3-0324-BF16",
        "TechxGenus/Meta-Llama-3-8B-Instruct-AWQ",
        "TechxGenus/Meta-Llama-3-8B-Instruct-GPTQ",
    };
    struct ml_name_match m;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        resolve(names[i], false, &m);
    assert_int_equal(m.quant, ML_NAME_QUANT_GPTQ);
    /* Formats memledger does not model: one line that says so. */
    static const char *const refused[] = {"ISTA-DASLab/Meta-Llama-3-8B-Instruct-AQLM-2Bit-1x16",
                                          "Qwen/Qwen2.5-7B-Instruct-GGUF", "mlx-community/Qwen2.5-7B-Instruct-4bit"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        struct ml_diag d;
        ml_diag_init(&d);
        assert_int_equal(ml_catalog_resolve(refused[i], false, &m, &d), ML_ERR_UNSUPPORTED);
        assert_non_null(strstr(d.msg, "not"));
        assert_null(strchr(d.msg, '\n'));
    }
    /* No match: the three nearest names; a suffix that is not at the end is not stripped. */
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_catalog_resolve("Qwen2.5-41B-Instruct", false, &m, &d), ML_ERR_NOTFOUND);
    assert_non_null(strstr(d.msg, "did you mean 'qwen2.5-14b'"));
    ml_diag_init(&d);
    assert_int_equal(ml_catalog_resolve("mistralai/Mistral-7B-Instruct-v0.2", false, &m, &d), ML_ERR_NOTFOUND);
    struct ml_near near = {{0}, {0}, 0};
    ml_near_offer(&near, "h100", "h200", 2);
    ml_near_offer(&near, "h100", "a100", 2);
    ml_near_offer(&near, "h100", "h20", 2);
    ml_near_offer(&near, "h100", "rtx4090", 2);
    char list[64];
    ml_near_list(&near, list, sizeof(list));
    assert_string_equal(list, "'h200', 'a100' or 'h20'");
}

/*
 * Every tuned or quantized release in the catalog, with the max_position_embeddings its own
 * config.json declares and where that was read (data/models/variants.jsonl, SOURCES.md): the
 * expected values are the published ones, typed here from the sources, not read from the catalog.
 * The rows whose configs were reconstructed without a published copy of these keys are listed
 * apart, so that a new release row cannot go unlisted.
 */
static void test_release_rows(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        uint64_t positions;
        const char *source; /* a piece of the row's source */
    } rows[] = {
        {"qwen2.5-0.5b-instruct", 32768, "Qwen_Qwen2.5-0.5B-Instruct.md"},
        {"qwen2.5-1.5b-instruct", 32768, "Qwen_Qwen2.5-1.5B-Instruct.md"},
        {"qwen2.5-3b-instruct", 32768, "Qwen_Qwen2.5-3B-Instruct.md"},
        {"qwen2.5-7b-instruct", 32768, "Qwen_Qwen2.5-7B-Instruct.md"},
        {"qwen2.5-14b-instruct", 32768, "Qwen_Qwen2.5-14B-Instruct.md"},
        {"qwen2.5-32b-instruct", 32768, "Qwen_Qwen2.5-32B-Instruct.md"},
        {"qwen2.5-72b-instruct", 32768, "Qwen_Qwen2.5-72B-Instruct.md"},
        {"qwen2.5-14b-instruct-awq", 32768, "Qwen_Qwen2.5-14B-Instruct-AWQ.md"},
        {"qwen2.5-32b-instruct-awq", 32768, "Qwen_Qwen2.5-32B-Instruct-AWQ.md"},
        {"qwen2.5-7b-instruct-bnb-4bit", 32768, "unsloth_Qwen2.5-7B-Instruct-bnb-4bit.md"},
        {"qwen2-7b-instruct", 32768, "Qwen_Qwen2-7B-Instruct.md"},
        {"qwen2-72b-instruct", 32768, "Qwen_Qwen2-72B-Instruct.md"},
        {"llama-3.2-1b-instruct", 131072, "hf_llama/llama_config.py"},
        {"meta-llama-3-8b-instruct", 8192, "llama_3_8B_Instruct_config.py"},
        {"gemma-2-9b-it", 8192, "gemma2/gemma2_config.py"},
        /* hugging-quants' cards give the quantization only: positions are the base's */
        {"meta-llama-3.1-8b-instruct-awq-int4", 131072, "hugging-quants_Meta-Llama-3.1-8B-Instruct-AWQ-INT4.md"},
        {"meta-llama-3.1-70b-instruct-awq-int4", 131072, "hugging-quants_Meta-Llama-3.1-70B-Instruct-AWQ-INT4.md"},
        {"meta-llama-3.1-405b-instruct-awq-int4", 131072, "hugging-quants_Meta-Llama-3.1-405B-Instruct-AWQ-INT4.md"},
        {"meta-llama-3.1-8b-instruct-gptq-int4", 131072, "hugging-quants_Meta-Llama-3.1-8B-Instruct-GPTQ-INT4.md"},
        {"meta-llama-3.1-70b-instruct-gptq-int4", 131072, "hugging-quants_Meta-Llama-3.1-70B-Instruct-GPTQ-INT4.md"},
        /* a row of its own (params.jsonl): the card's 32,768 */
        {"qwen2.5-72b-instruct-awq", 32768, NULL},
    };
    /* Own rows whose configs were reconstructed (params.jsonl "config"): their positions are not
     * checked against a published config.json here. */
    static const char *const unchecked[] = {
        "phi-3-mini-4k-instruct",
        "gemma-3-1b-it",
        "gemma-3-4b-it",
        "gemma-3-12b-it",
        "gemma-3-27b-it",
        "llama-4-scout-17b-16e-instruct",
        "llama-4-maverick-17b-128e-instruct",
        "qwen2.5-vl-3b-instruct",
        "qwen2.5-vl-7b-instruct",
        "qwen2.5-vl-72b-instruct",
        "qwen3-vl-4b-instruct",
        "qwen3-vl-8b-instruct",
        "qwen3-vl-30b-a3b-instruct",
        "qwen3-vl-235b-a22b-instruct",
        "qwen3-next-80b-a3b-instruct",
        "qwen2.5-72b-instruct-gptq-int4",
        "chatglm3-6b",
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct ml_catalog_entry *e = ml_catalog_find(rows[i].name);
        if (!e)
            fail_msg("no row %s", rows[i].name);
        struct ml_arch a;
        struct ml_diag d;
        ml_diag_init(&d);
        assert_int_equal(ml_catalog_arch(e, &a, &d), ML_OK);
        if (a.max_positions != rows[i].positions)
            fail_msg("%s: %llu positions, its config.json %llu", rows[i].name, (unsigned long long)a.max_positions,
                     (unsigned long long)rows[i].positions);
        if (rows[i].source && (!e->source || !strstr(e->source, rows[i].source)))
            fail_msg("%s: source '%s'", rows[i].name, e->source ? e->source : "(none)");
        /* its base, when it has one, is a row of its own with the same shapes */
        if (e->base)
            assert_non_null(ml_catalog_find(e->base));
    }
    /* Every release row of the catalog is in one of the two lists. */
    for (size_t i = 0; i < ml_catalog_count(); i++) {
        const struct ml_catalog_entry *e = ml_catalog_get(i);
        bool release = e->base || strstr(e->name, "instruct") || strstr(e->name, "chat") || strstr(e->name, "-it") ||
                       strstr(e->name, "awq") || strstr(e->name, "gptq") || strstr(e->name, "fp8") ||
                       strstr(e->name, "bnb");
        bool listed = false;
        for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++)
            listed = listed || !strcmp(e->name, rows[k].name);
        for (size_t k = 0; k < sizeof(unchecked) / sizeof(unchecked[0]); k++)
            listed = listed || !strcmp(e->name, unchecked[k]);
        if (release && !listed)
            fail_msg("%s: a release row not listed with its positions and source", e->name);
    }
}

/* The listing of `memledger models` (lib/render/catalog_list.c): one JSON object per entry, none
 * left out, and the model_type values split into one string each. */
static void test_listing(void **state)
{
    (void)state;
    struct ml_buf out;
    ml_buf_init(&out, 0);
    size_t n_bad = 99;
    assert_int_equal(ml_render_models(&out, true, NULL, &n_bad), ML_OK);
    assert_int_equal(n_bad, 0);
    size_t n = 0;
    for (const char *p = out.buf; (p = strstr(p, "\"hub_id\": ")); p++)
        n++;
    assert_int_equal(n, ml_catalog_count());
    assert_non_null(strstr(out.buf, "\"name\": \"llama-2-7b\",\n      \"hub_id\": \"meta-llama/Llama-2-7b-hf\""));
    ml_buf_reset(&out);
    assert_int_equal(ml_render_model_types(&out, true), ML_OK);
    assert_non_null(strstr(out.buf, "\"model_types\": [\n    \"llama\",\n    \"mistral\","));
    assert_null(strstr(out.buf, "families")); /* --types: the model_types only */
    ml_buf_reset(&out);
    assert_int_equal(ml_render_model_types(&out, false), ML_OK);
    assert_int_equal(strncmp(out.buf, "llama, mistral, ", 16), 0);
    ml_buf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find),          cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_entries_parse), cmocka_unit_test(test_resolve_names),
        cmocka_unit_test(test_release_rows),  cmocka_unit_test(test_resolve_examples_and_refusals),
        cmocka_unit_test(test_listing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
