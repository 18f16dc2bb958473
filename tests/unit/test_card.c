/*
 * The card computed (lib/run/card.c): which built-in model fits one GPU under each method. The
 * expectations are bounds from sizes alone, not the ledger's formulas: mixed-precision AdamW
 * holds 16 bytes of model states per parameter (2 bf16 weights + 2 gradients + 4 fp32 master +
 * 8 Adam moments; Rajbhandari et al. 2020, ZeRO, section 3.1), bf16 weights are 2 bytes per
 * parameter and 4-bit weights half a byte, so nothing that fits can need less than those.
 */
#include "ml_test.h"

#include "memledger/card.h"
#include "memledger/gpu.h"

static struct ml_card_scratch scratch;
static struct ml_card card;
static const struct ml_card_settings defaults = {2048, 1, 100}; /* card's own: --seq 2048 --batch 1 --margin 10% */

static struct ml_cluster one_gpu(const char *arg)
{
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_gpu_resolve(arg, &c.gpu, &d) != ML_OK)
        fail_msg("%s: %s", arg, d.msg);
    c.gpus_per_node = c.nodes = 1;
    return c;
}

static const struct ml_catalog_entry *model(const char *name)
{
    const struct ml_catalog_entry *e = ml_catalog_find(name);
    if (!e)
        fail_msg("%s is not in the catalog", name);
    return e;
}

/* Single pairs whose answer the sizes alone settle. */
static void test_obvious_pairs(void **state)
{
    (void)state;
    struct ml_cluster g80 = one_gpu("80G"), g24 = one_gpu("24G");
    uint64_t dev = 0;
    /* A 70B full fine-tune: 16 B/param is over a terabyte, on an 80 GB card. */
    const struct ml_catalog_entry *l70 = model("llama-2-70b");
    assert_false(ml_card_fits(l70, ML_CARD_FULL, &g80, &defaults, &scratch, &dev));
    assert_true(dev >= 16 * l70->params);
    /* A 0.5B LoRA: about 1 GB of bf16 weights, on a 24 GB card. */
    const struct ml_catalog_entry *q05 = model("qwen2.5-0.5b");
    assert_true(ml_card_fits(q05, ML_CARD_LORA, &g24, &defaults, &scratch, &dev));
    assert_true(dev >= 2 * q05->params && dev <= g24.gpu.capacity_bytes);
    /* 13B in bf16 is 26 GB of weights: not on 24 GB; in 4 bits, 6.5 GB: yes. */
    const struct ml_catalog_entry *l13 = model("llama-2-13b");
    assert_false(ml_card_fits(l13, ML_CARD_INFER16, &g24, &defaults, &scratch, &dev));
    assert_true(dev >= 2 * l13->params);
    assert_true(ml_card_fits(l13, ML_CARD_INFER4, &g24, &defaults, &scratch, &dev));
    assert_true(dev >= l13->params / 2 && dev <= g24.gpu.capacity_bytes);
    /* QLoRA fine-tunes a 65B model on one 48 GB GPU (Dettmers et al. 2023, QLoRA, abstract): a
     * 70B one fits 80 GB. */
    assert_true(ml_card_fits(l70, ML_CARD_QLORA, &g80, &defaults, &scratch, &dev));
    /* The card ranks text decoders only: an encoder never fits, whatever its size. */
    assert_false(ml_card_fits(model("bert-large-uncased"), ML_CARD_LORA, &g80, &defaults, &scratch, &dev));
}

/* What decides the handbook's cell for gpu and method m in card. */
static enum ml_card_why cell_why(const char *gpu, enum ml_card_method m)
{
    for (size_t c = 0; c < card.n_cells; c++) {
        const struct ml_card_claim *cl = card.cell[c].cl;
        assert_non_null(cl);
        if (!strcmp(cl->gpu, gpu) && cl->m == m)
            return card.cell[c].why;
    }
    fail_msg("no handbook cell for %s, method %d", gpu, (int)m);
    return ML_CARD_HOLDS;
}

/* The largest model per method: under the size bounds, and never smaller on a bigger card. */
static void test_best_per_gpu(void **state)
{
    (void)state;
    memset(&card, 0, sizeof(card));
    card.st = defaults;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_card_compute(&card, ",24G,,80G,", &scratch, &d), ML_OK);
    assert_int_equal(card.n_gpus, 2); /* empty items skipped */
    assert_string_equal(card.gpu[0].arg, "24G");
    assert_string_equal(card.gpu[1].arg, "80G");
    const uint64_t min_bytes_per_param_x2[ML_CARD_METHODS] = {32, 4, 1, 4, 1}; /* bytes per param, doubled */
    for (size_t r = 0; r < 2; r++) {
        uint64_t cap = card.gpu[r].capacity;
        for (int m = 0; m < ML_CARD_METHODS; m++) {
            const struct ml_catalog_entry *b = card.gpu[r].best[m];
            assert_non_null(b);
            assert_true(card.gpu[r].dev[m] <= cap - cap / 10);
            assert_true(b->params * min_bytes_per_param_x2[m] / 2 <= card.gpu[r].dev[m]);
            assert_true(b->params >= card.gpu[0].best[m]->params);
        }
    }
    /* 0.5B trains with LoRA on 24 GB, so the best LoRA model there is at least that big. */
    assert_true(card.gpu[0].best[ML_CARD_LORA]->params >= model("qwen2.5-0.5b")->params);
    /* The handbook's cells, each decided by sizes: 2B full needs 40 GB of model states (sharding),
     * 70B LoRA needs 140 GB of bf16 weights (more GPUs), 13B bf16 serving 26 GB (4-bit). */
    assert_int_equal(cell_why("rtx4090", ML_CARD_FULL), ML_CARD_NEEDS_SHARDING);
    assert_int_equal(cell_why("a100-80g", ML_CARD_LORA), ML_CARD_NEEDS_GPUS);
    assert_int_equal(cell_why("rtx4090", ML_CARD_INFER16), ML_CARD_NEEDS_4BIT);
    assert_int_equal(cell_why("a100-80g", ML_CARD_QLORA), ML_CARD_HOLDS);
    /* A size names the card it is read as: 24G is the smallest card sold as 24 GB, an A10 with
     * 21.99 GiB usable, not the 4090 people mean by "24 GB". */
    assert_string_equal(card.gpu[0].card, "a10");
    assert_int_equal(card.gpu[0].nominal, 24ull << 30);
}

/* The card's default columns are the cards the seed handbook names for its columns: "24 GB (4090)",
 * "48 GB (A6000 / 2x4090)", "80 GB (A100)" (docs/cli/card.md), each with its own capacity; and
 * every handbook cell is checked on one of them. */
static void test_default_cards_are_the_handbooks(void **state)
{
    (void)state;
    memset(&card, 0, sizeof(card));
    card.st = defaults;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_card_compute(&card, ML_CARD_DEFAULT_GPUS, &scratch, &d), ML_OK);
    assert_int_equal(card.n_gpus, 3);
    static const char *const want[3] = {"rtx4090", "a6000", "a100-80g"};
    static const uint64_t sold_gb[3] = {24, 48, 80};
    for (size_t r = 0; r < 3; r++) {
        assert_string_equal(card.gpu[r].card, want[r]);
        assert_int_equal(card.gpu[r].nominal, sold_gb[r] << 30);
        assert_int_equal(card.gpu[r].capacity, one_gpu(want[r]).gpu.capacity_bytes);
    }
    /* The 4090 a process sees is larger than the A10 24G used to stand for. */
    assert_true(card.gpu[0].capacity > one_gpu("24G").gpu.capacity_bytes);
    for (size_t c = 0; c < card.n_cells; c++) {
        assert_non_null(card.cell[c].cl);
        bool on_default = false;
        for (size_t r = 0; r < 3; r++)
            on_default |= !strcmp(card.cell[c].cl->gpu, want[r]);
        assert_true(on_default);
    }
}

static void test_errors(void **state)
{
    (void)state;
    struct ml_diag d;
    memset(&card, 0, sizeof(card));
    card.st = defaults;
    ml_diag_init(&d);
    assert_int_equal(ml_card_compute(&card, "24G,no-such-card", &scratch, &d), ML_ERR_NOTFOUND);
    assert_string_equal(d.origin, "--gpus");
    memset(&card, 0, sizeof(card));
    card.st = defaults;
    ml_diag_init(&d);
    char many[128] = "";
    for (int i = 0; i <= ML_CARD_MAX_GPUS; i++)
        (void)snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s1G", i ? "," : "");
    assert_int_equal(ml_card_compute(&card, many, &scratch, &d), ML_ERR_TOOBIG);
    assert_int_equal(card.n_gpus, ML_CARD_MAX_GPUS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_obvious_pairs),
        cmocka_unit_test(test_best_per_gpu),
        cmocka_unit_test(test_default_cards_are_the_handbooks),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
