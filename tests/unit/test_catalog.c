/* Catalog lookups: case-insensitive names, hub ids as aliases, suggestions. */
#include "ml_test.h"

#include "memledger/catalog.h"

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
    /* A bare tuned name, and the hub id of one, resolve to the base and say why. */
    assert_string_equal(resolve("Qwen2.5-14B-Instruct", false, &m)->name, "qwen2.5-14b");
    assert_non_null(strstr(m.note, "-Instruct: instruction tuning keeps the config"));
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
    assert_string_equal(resolve("/data/ckpt/Qwen2.5-14B-Instruct/", true, &m)->name, "qwen2.5-14b");
    /* Quantized repositories: the format from the suffix; Qwen2.5-72B's AWQ and GPTQ-Int4
     * checkpoints have their own rows (intermediate_size padded to 29696). */
    assert_string_equal(resolve("TechxGenus/Meta-Llama-3-8B-Instruct-AWQ", false, &m)->name, "meta-llama-3-8b");
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

/* The listing of `memledger models` (lib/model/catalog_list.c): one JSON object per entry, none
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
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_entries_parse),
        cmocka_unit_test(test_resolve_names),
        cmocka_unit_test(test_resolve_examples_and_refusals),
        cmocka_unit_test(test_listing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
