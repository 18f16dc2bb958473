/*
 * The 80 % interval (lib/ledger/interval.c, docs/ledger.md "The interval") held to measurements:
 * the seed case's own log, which is not in validation/, and ms-swift's benchmark, whose growth of
 * the reserved figure belongs to that trainer's group only. Then the verdict rule of the issue on
 * capacities placed around a run's interval.
 */
#include "ml_test.h"

#include "memledger/arch.h"
#include "memledger/catalog.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/train.h"

#define GIB_D 1073741824.0

static struct ml_arch arch;
static struct ml_inventory inv;
static struct ml_ledger led;
static struct ml_warnings sink;

static void setup(const char *model, const char *gpu, uint32_t n, enum ml_framework fw, struct ml_train *t,
                  struct ml_cluster *c)
{
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_catalog_arch(ml_catalog_find(model), &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    memset(c, 0, sizeof(*c));
    assert_int_equal(ml_gpu_resolve(gpu, &c->gpu, &d), ML_OK);
    c->gpus_per_node = n;
    c->nodes = 1;
    ml_train_defaults(t, fw);
    sink.n = 0;
    t->warnings = &sink;
}

static void run(const struct ml_train *t, const struct ml_cluster *c)
{
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_ledger_train(&arch, &inv, t, c, NULL, &led, &d) != ML_OK)
        fail_msg("%s", d.msg);
}

static void set(struct ml_train *t, const char *kv)
{
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_train_set(t, kv, &d) != ML_OK)
        fail_msg("--set %s: %s", kv, d.msg);
}

static bool inside(enum ml_figure f, double gib)
{
    uint64_t b = (uint64_t)(gib * GIB_D);
    return led.interval[f][0] <= b && b <= led.interval[f][1];
}

/* The seed case as the user runs it: LLaMA-Factory, LoRA r64 on Qwen2.5-14B, ZeRO-3 on 4 DCUs. */
static void seed(struct ml_train *t, struct ml_cluster *c)
{
    static char model[256], ds[256];
    setup("qwen2.5-14b", "dcu-16g", 4, ML_FW_LLAMAFACTORY, t, c);
    struct ml_diag d;
    ml_diag_init(&d);
    size_t len = 0;
    char *y = ml_test_slurp("examples/seed-case/train.yaml", &len);
    assert_non_null(y);
    enum ml_status st = ml_train_apply_yaml(t, y, len, "train.yaml", model, sizeof(model), ds, sizeof(ds), &d);
    free(y);
    if (st != ML_OK)
        fail_msg("train.yaml: %s", d.msg);
    char *j = ml_test_slurp("examples/seed-case/deepspeed_z3_4x16g.json", &len);
    assert_non_null(j);
    st = ml_zero_from_json(t, j, len, "deepspeed_z3_4x16g.json", &d);
    free(j);
    if (st != ML_OK)
        fail_msg("deepspeed_z3_4x16g.json: %s", d.msg);
    assert_int_equal(ml_train_check(t, &arch, c, &d), ML_OK);
}

static void test_seed_log(void **state)
{
    (void)state;
    struct ml_train t;
    struct ml_cluster c;
    seed(&t, &c);
    run(&t, &c);
    /* examples/seed-case/oom.log: "14.81 GiB is allocated by PyTorch" when the first step after
     * the save went out of memory on a 15.98 GiB card. The estimate misses it by 8 %; the interval
     * of its trainer (the HF Trainer family's residuals, every figure) holds it. */
    assert_true((double)led.peak_allocated / GIB_D < 14.81);
    assert_true(inside(ML_FIG_ALLOCATED, 14.81));
    assert_string_equal(led.interval_group, "hf-sharded-dynamic/lora");
    for (int f = 0; f < 3; f++)
        assert_string_equal(led.interval_key[f], "hf*/*/*");
    /* It did not fit, and its low end does not either: no "may fit". */
    assert_int_equal(led.verdict, ML_NO_FIT);
    assert_false(led.may_fit);
}

/* swift-07: ms-swift's benchmark (scripts/benchmark/test_memory_time, A100-80GB), Qwen-7B LoRA r8
 * on c_attn, batch 4 x 2048 with checkpointing and flash attention, variable lengths, the cache
 * never emptied: max_memory_reserved 63.81 GiB (twice the estimate before the replay's stranded sets). */
static void swift07(struct ml_train *t, struct ml_cluster *c)
{
    setup("qwen-7b", "a100-80g", 1, ML_FW_HF, t, c);
    t->lora_rank = 8;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_lora_targets_parse("c_attn", &t->lora_targets, &d), ML_OK);
    t->lora_dropout = true;
    t->optim = ML_OPTIM_ADAMW_TORCH;
    t->optim_set = true;
    t->attn = ML_ATTN_FLASH;
    t->micro_batch = 4;
    t->grad_accum = 16;
    t->seq_len = 2048;
    t->grad_ckpt = ML_GC_REENTRANT;
    t->versions.torch = ML_VER(2, 1, 0);
    t->versions.transformers = ML_VER(4, 36, 0);
}

static void test_swift_group(void **state)
{
    (void)state;
    struct ml_train t;
    struct ml_cluster c;
    swift07(&t, &c);
    set(&t, "trainer=ms-swift");
    run(&t, &c);
    /* With the stranded sets of the allocator replay at batch 4 (5.61 loss working sets for a
     * trainer that deletes the samples over max_length, each step padded to the longest of its 4;
     * docs/ledger.md R2, "per path") the estimate is within a tenth of the measurement; with the
     * batch-1 sets (3.54) it was 23 % under. */
    double est = (double)led.peak_reserved / GIB_D;
    assert_true(est > 63.81 * 0.9 && est < 63.81 * 1.1);
    assert_string_equal(led.interval_group, "swift/lora");
    /* Its own group (the benchmark's LoRA rows) reaches the measurement. */
    assert_true(inside(ML_FIG_RESERVED, 63.81));
    uint64_t swift_high = led.interval[ML_FIG_RESERVED][1], swift_point = led.peak_reserved;
    /* The same run under the HF Trainer (LLaMA-Factory, TRL): its interval is the HF family's,
     * which ms-swift's rows do not shape; PEFT's MetaMathQA runs (variable lengths, the cache
     * emptied every 10 steps) read within 8 % of the estimate's allocated figure. */
    set(&t, "trainer=hf");
    run(&t, &c);
    assert_string_equal(led.interval_group, "hf-dynamic/lora");
    assert_string_equal(led.interval_key[ML_FIG_RESERVED], "hf*/*/*");
    assert_true(led.interval[ML_FIG_RESERVED][1] < swift_high);
    /* A trainer that truncates the samples over max_length strands fewer sets than one that deletes
     * them (the first sample over the limit is the last record: replay-paths.jsonl, batch 4, 2.10
     * against 5.61 loss working sets). */
    assert_true(led.peak_reserved < swift_point);
}

static void test_bad_trainer(void **state)
{
    (void)state;
    struct ml_train t;
    struct ml_cluster c;
    swift07(&t, &c);
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_train_set(&t, "trainer=swift", &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "hf, ms-swift or fsdp-qlora"));
}

/* The verdict (issue 12): fits only when the device interval's high end fits with 5 % of the card
 * free; tight when the estimate fits and the high end does not; does not fit when the estimate
 * does not, "may fit" when the low end would. */
static void test_verdict_rule(void **state)
{
    (void)state;
    struct ml_train t;
    struct ml_cluster c;
    setup("llama-2-7b", "a100-80g", 1, ML_FW_LITGPT, &t, &c);
    t.seq_len = 1304;
    run(&t, &c);
    uint64_t lo = led.interval[ML_FIG_DEVICE][0], point = led.device_used, hi = led.interval[ML_FIG_DEVICE][1];
    assert_true(lo < point && point < hi);
    c.gpu.capacity_bytes = hi + hi / 19 + (1u << 20); /* hi <= 95 % of it */
    run(&t, &c);
    assert_int_equal(led.verdict, ML_FITS);
    c.gpu.capacity_bytes = hi; /* the high end, but not 5 % more */
    run(&t, &c);
    assert_int_equal(led.verdict, ML_TIGHT);
    c.gpu.capacity_bytes = point;
    run(&t, &c);
    assert_int_equal(led.verdict, ML_TIGHT);
    c.gpu.capacity_bytes = point - 1;
    run(&t, &c);
    assert_int_equal(led.verdict, ML_NO_FIT);
    assert_true(led.may_fit);
    c.gpu.capacity_bytes = lo - 1;
    run(&t, &c);
    assert_int_equal(led.verdict, ML_NO_FIT);
    assert_false(led.may_fit);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_log),
        cmocka_unit_test(test_swift_group),
        cmocka_unit_test(test_bad_trainer),
        cmocka_unit_test(test_verdict_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
