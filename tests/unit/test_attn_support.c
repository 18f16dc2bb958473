/*
 * Attention transformers refuses (docs/ledger.md "Attention transformers refuses"): the family
 * attribute no_sdpa held to the transformers modeling files, and ml_train_check's resolution.
 *
 * The source fact, read by hand in transformers 4.57.6, 5.0.0 and 5.24.0: BloomPreTrainedModel
 * (models/bloom/modeling_bloom.py) sets no _supports_sdpa (PreTrainedModel's default is False) and
 * GptOssPreTrainedModel (models/gpt_oss/modeling_gpt_oss.py) sets _supports_sdpa = False; every
 * other family of the catalog with a transformers modeling file declares it True in all three,
 * except T5 (not in 4.57.6 / 5.0.0, True in 5.24.0) and Gemma 2 (True in 4.57.6 / 5.0.0, False in
 * 5.24.0), left unmarked. modeling_utils.py get_correct_attn_implementation: no attention asked ->
 * "sdpa", and eager when _sdpa_can_dispatch raises; "sdpa" asked -> the ValueError is raised.
 */
#include "ml_test.h"

#include "memledger/arch.h"
#include "memledger/catalog.h"
#include "memledger/fit.h"
#include "memledger/train.h"

static bool refuses_sdpa(const char *model_type)
{
    return !strcmp(model_type, "bloom") || !strcmp(model_type, "gpt_oss");
}

/* _supports_flash_attn: unset in BloomPreTrainedModel (4.57.6, 5.24.0), unset (4.57.6) or False
 * (5.24.0) in T5PreTrainedModel, False in Llama4PreTrainedModel (both); True in both for the other
 * catalog families with a transformers modeling file (GptOss included), except BERT (unset in
 * 4.57.6, True in 5.24.0), Qwen3-Next (4.57.6 spells it _supports_flash_attn_2) and DeepSeek-V3.2
 * (False in 5.24.0, absent from 4.57.6), left unmarked. */
static bool refuses_flash(const char *model_type)
{
    return !strcmp(model_type, "bloom") || !strcmp(model_type, "t5") || !strcmp(model_type, "llama4");
}

static void test_family_fact(void **state)
{
    (void)state;
    size_t marked = 0;
    for (size_t i = 0; i < ml_catalog_count(); i++) {
        const struct ml_catalog_entry *e = ml_catalog_get(i);
        struct ml_arch a;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_catalog_arch(e, &a, &d) != ML_OK)
            continue;
        if (a.no_sdpa != refuses_sdpa(a.model_type))
            fail_msg("%s (%s): no_sdpa %d", e->name, a.model_type, (int)a.no_sdpa);
        if (a.no_flash != refuses_flash(a.model_type))
            fail_msg("%s (%s): no_flash %d", e->name, a.model_type, (int)a.no_flash);
        marked += a.no_sdpa;
    }
    /* bloom-560m, bloomz-7b1, gpt-oss-20b, gpt-oss-120b at least */
    assert_true(marked >= 4);
}

static struct ml_arch arch_of(const char *name)
{
    struct ml_arch a;
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find(name);
    assert_non_null(e);
    assert_int_equal(ml_catalog_arch(e, &a, &d), ML_OK);
    return a;
}

static struct ml_warnings sink;

static struct ml_train setup(enum ml_framework fw, enum ml_attn attn, bool attn_defaulted)
{
    struct ml_train t;
    ml_train_defaults(&t, fw);
    t.attn = attn;
    t.defaulted = attn_defaulted ? 1u << ML_TK_ATTN : 0;
    sink.n = 0;
    t.warnings = &sink;
    return t;
}

static void check(struct ml_train *t, const struct ml_arch *a)
{
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_train_check(t, a, NULL, &d), ML_OK);
}

static bool warned(const char *what)
{
    for (uint32_t i = 0; i < sink.n; i++)
        if (strstr(sink.text[i], what))
            return true;
    return false;
}

static void test_resolution(void **state)
{
    (void)state;
    struct ml_arch bloom = arch_of("bloom-560m"), llama = arch_of("llama-3.1-8b");
    /* No attention set: transformers falls back to eager; no warning (the ledger's note says so). */
    struct ml_train t = setup(ML_FW_HF, ML_ATTN_SDPA, true);
    check(&t, &bloom);
    assert_int_equal(t.attn, ML_ATTN_EAGER);
    assert_false(warned("refuses sdpa"));
    /* sdpa asked: transformers raises; eager wins and a warning says so. */
    t = setup(ML_FW_LLAMAFACTORY, ML_ATTN_SDPA, false);
    check(&t, &bloom);
    assert_int_equal(t.attn, ML_ATTN_EAGER);
    assert_true(warned("refuses sdpa"));
    /* Eager asked: nothing to say. */
    t = setup(ML_FW_TRL, ML_ATTN_EAGER, false);
    check(&t, &bloom);
    assert_int_equal(t.attn, ML_ATTN_EAGER);
    assert_false(warned("refuses sdpa"));
    /* flash asked: refused too (BloomPreTrainedModel sets no _supports_flash_attn); eager wins. */
    t = setup(ML_FW_HF, ML_ATTN_FLASH, false);
    check(&t, &bloom);
    assert_int_equal(t.attn, ML_ATTN_EAGER);
    assert_true(warned("refuses flash"));
    /* gpt-oss declares FlashAttention (_supports_flash_attn = True): kept (LLaMA-Factory, which loads
     * its mxfp4 checkpoint dequantized). */
    struct ml_arch oss = arch_of("gpt-oss-20b");
    t = setup(ML_FW_LLAMAFACTORY, ML_ATTN_FLASH, false);
    check(&t, &oss);
    assert_int_equal(t.attn, ML_ATTN_FLASH);
    /* LitGPT builds its own model (its CausalSelfAttention calls SDPA): unchanged. */
    t = setup(ML_FW_LITGPT, ML_ATTN_SDPA, true);
    check(&t, &bloom);
    assert_int_equal(t.attn, ML_ATTN_SDPA);
    /* A model class that declares SDPA keeps it. */
    t = setup(ML_FW_HF, ML_ATTN_SDPA, false);
    check(&t, &llama);
    assert_int_equal(t.attn, ML_ATTN_SDPA);
    assert_false(warned("refuses sdpa"));
}

/* fit never offers an attention the model class refuses (lib/fit/knobs.c attn_refused): before it
 * was added, `memledger fit` on bloom-560m's eager run proposed "flash_attn: disabled -> sdpa". */
static bool offered(enum ml_knob_id k, const struct ml_arch *a, enum ml_framework fw)
{
    struct ml_train t = setup(fw, ML_ATTN_EAGER, false);
    struct ml_cluster c;
    memset(&c, 0, sizeof c);
    c.gpu.vendor = ML_VENDOR_NVIDIA;
    strcpy(c.gpu.arch, "ampere");
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t n = 0;
    struct ml_edit e = {.t = &t, .c = &c, .ch = ch, .n = &n};
    struct ml_knob_ctx x = {.arch = a};
    return ml_knob_apply(k, &x, &e, 0);
}

static void test_fit_offers(void **state)
{
    (void)state;
    struct ml_arch bloom = arch_of("bloom-560m"), llama = arch_of("llama-3.1-8b");
    assert_false(offered(ML_KNOB_SDPA, &bloom, ML_FW_LLAMAFACTORY));
    assert_false(offered(ML_KNOB_FLASH, &bloom, ML_FW_HF));
    assert_true(offered(ML_KNOB_SDPA, &llama, ML_FW_LLAMAFACTORY));
    assert_true(offered(ML_KNOB_FLASH, &llama, ML_FW_HF));
    /* LitGPT builds its own attention: still offered. */
    assert_true(offered(ML_KNOB_SDPA, &bloom, ML_FW_LITGPT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_fact),
        cmocka_unit_test(test_resolution),
        cmocka_unit_test(test_fit_offers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
