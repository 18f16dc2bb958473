/*
 * The knob table (lib/fit/knobs.c) against the frameworks' own names and rules, and fit and
 * diagnose against each other: a knob that fit puts in a plan and diagnose offers as a fix must
 * be the same change, written the same way, with the same ledger figure. Each used to carry its
 * own copy (fit's moves, diagnose's apply_fix and ~80 setting texts), and the copies disagreed:
 * gradient_checkpointing: true against disable_gradient_checkpointing: false, cutoff_len halved to
 * a floor of 16 against x 3/4 and / 2 to a floor of 256, ZeRO-3 from LLaMA-Factory's preset
 * against the user's own DeepSpeed file.
 */
#include "ml_test.h"

#include "memledger/catalog.h"
#include "memledger/diagnose.h"
#include "memledger/fit.h"
#include "memledger/gpu.h"
#include "memledger/inventory.h"
#include "memledger/oom.h"
#include "memledger/train.h"

static struct ml_arch arch;
static struct ml_inventory inv;
static struct ml_train t;
static struct ml_cluster cl;
static struct ml_fit_result fr;
static struct ml_diagnosis dg;
static struct ml_incident inc;
static struct ml_oom_scanner sc;
static struct ml_ledger led;

/* ---- the table against the frameworks -------------------------------------------------- */

static void test_rows(void **state)
{
    (void)state;
    for (uint32_t i = 0; i < ML_KNOB_COUNT; i++) {
        const struct ml_knob *k = ml_knob_get((enum ml_knob_id)i);
        assert_non_null(k);
        assert_int_equal(k->id, i);
        assert_non_null(k->name);
        assert_non_null(k->apply);
        /* a training or a serving knob, not both */
        assert_true(!(k->flags & ML_KNOB_TRAIN) != !(k->flags & ML_KNOB_SERVE));
        /* a knob whose value follows the run's can be shown without one */
        if (k->flags & ML_KNOB_RELATIVE)
            assert_true(k->hint && k->hint[0]);
    }
    assert_null(ml_knob_get(ML_KNOB_NONE));
    /* LLaMA-Factory turns checkpointing on unless disable_gradient_checkpointing (hparams/
     * model_args.py, ModelArguments; model/model_utils/checkpointing.py); transformers'
     * TrainingArguments has gradient_checkpointing. */
    assert_string_equal(ml_setting_name(ML_SET_GRAD_CKPT, ML_DIALECT_LF), "disable_gradient_checkpointing");
    assert_string_equal(ml_setting_name(ML_SET_GRAD_CKPT, ML_DIALECT_HF), "gradient_checkpointing");
    assert_string_equal(ml_setting_name(ML_SET_LIGER, ML_DIALECT_LF), "enable_liger_kernel");
    assert_string_equal(ml_setting_name(ML_SET_LIGER, ML_DIALECT_HF), "use_liger_kernel");
    assert_string_equal(ml_setting_name(ML_SET_CUTOFF, ML_DIALECT_LF), "cutoff_len"); /* data_args.py */
    /* TRL: SFTConfig / DPOConfig max_length, ModelConfig lora_r, load_in_4bit, attn_implementation
     * (trl/trainer/sft_config.py, dpo_config.py, model_config.py), transformers' names for the rest. */
    assert_string_equal(ml_setting_name(ML_SET_CUTOFF, ML_DIALECT_TRL), "max_length");
    assert_string_equal(ml_setting_name(ML_SET_LORA_RANK, ML_DIALECT_TRL), "lora_r");
    assert_string_equal(ml_setting_name(ML_SET_QUANT_BIT, ML_DIALECT_TRL), "load_in_4bit");
    assert_string_equal(ml_setting_value(ML_SET_QUANT_BIT, ML_DIALECT_TRL, "4"), "true");
    assert_string_equal(ml_setting_name(ML_SET_FLASH_ATTN, ML_DIALECT_TRL), "attn_implementation");
    assert_string_equal(ml_setting_value(ML_SET_FLASH_ATTN, ML_DIALECT_TRL, "fa2"), "flash_attention_2");
    assert_string_equal(ml_setting_name(ML_SET_GRAD_CKPT, ML_DIALECT_TRL), "gradient_checkpointing");
    /* Each framework's own keys, never another's (recipes/configs/llama3/8B_lora_single_device.yaml
     * in torchtune; litgpt/args.py TrainArgs; ms-swift's examples/train; transformers'
     * TrainingArguments has no sequence length or quantization field). */
    assert_string_equal(ml_setting_name(ML_SET_MICRO_BATCH, ML_DIALECT_TORCHTUNE), "batch_size");
    assert_string_equal(ml_setting_name(ML_SET_CUTOFF, ML_DIALECT_TORCHTUNE), "tokenizer.max_seq_len");
    assert_string_equal(ml_setting_name(ML_SET_GRAD_CKPT, ML_DIALECT_TORCHTUNE), "enable_activation_checkpointing");
    assert_string_equal(ml_setting_value(ML_SET_OPTIM, ML_DIALECT_TORCHTUNE, "paged_adamw_8bit"),
                        "bitsandbytes.optim.PagedAdamW8bit");
    assert_null(ml_setting_name(ML_SET_QUANT_BIT, ML_DIALECT_TORCHTUNE));
    assert_string_equal(ml_setting_name(ML_SET_MICRO_BATCH, ML_DIALECT_LITGPT), "train.micro_batch_size");
    assert_string_equal(ml_setting_value(ML_SET_QUANT_BIT, ML_DIALECT_LITGPT, "4"), "bnb.nf4");
    assert_null(ml_setting_name(ML_SET_GRAD_CKPT, ML_DIALECT_LITGPT));
    assert_null(ml_setting_name(ML_SET_OPTIM, ML_DIALECT_LITGPT));
    assert_string_equal(ml_setting_name(ML_SET_CUTOFF, ML_DIALECT_SWIFT), "max_length");
    assert_null(ml_setting_name(ML_SET_UNSLOTH_GC, ML_DIALECT_SWIFT));
    assert_null(ml_setting_name(ML_SET_LIGER, ML_DIALECT_TORCHTUNE));
    assert_null(ml_setting_name(ML_SET_CUTOFF, ML_DIALECT_HF));
    assert_null(ml_setting_name(ML_SET_QUANT_BIT, ML_DIALECT_HF));
    assert_false(ml_knob_has_key(ML_KNOB_QLORA, ML_DIALECT_HF));
    assert_false(ml_knob_has_key(ML_KNOB_FUSED_ADAMW, ML_DIALECT_TORCHTUNE)); /* no class path for it */
    assert_true(ml_knob_has_key(ML_KNOB_PAGED_ADAMW_8BIT, ML_DIALECT_TORCHTUNE));
    assert_false(ml_knob_has_key(ML_KNOB_ZERO3, ML_DIALECT_TORCHTUNE));
    assert_true(ml_knob_has_key(ML_KNOB_ZERO3, ML_DIALECT_SWIFT));
    /* vLLM EngineArgs and the `vllm serve` flag made from it. */
    assert_string_equal(ml_setting_name(ML_SET_MAX_MODEL_LEN, ML_DIALECT_ENGINE), "max_model_len");
    assert_string_equal(ml_setting_name(ML_SET_MAX_MODEL_LEN, ML_DIALECT_VLLM), "--max-model-len");
    assert_string_equal(ml_setting_name(ML_SET_GATHER16, ML_DIALECT_DEEPSPEED),
                        "stage3_gather_16bit_weights_on_model_save");
}

/* Apply one knob to a copy of *base (1 GPU of 16 GB); the changes, written in dialect yaml. */
static bool apply_one(enum ml_knob_id id, const struct ml_train *base, enum ml_dialect yaml, char *text, size_t n,
                      struct ml_train *out)
{
    *out = *base;
    struct ml_cluster c = cl;
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t nc = 0;
    struct ml_edit e = {out, &c, NULL, ch, &nc, 0};
    struct ml_knob_ctx x = {&arch, 8, NULL, NULL, false};
    if (!ml_knob_apply(id, &x, &e, 0))
        return false;
    ml_changes_text(ch, nc, yaml, text, n);
    return true;
}

/* The sequence cut, one rule for fit and diagnose: x 1/2 (or x 3/4) rounded down to a multiple of
 * 8 (LLaMA-Factory's SFT collator pads to 8: train/sft/workflow.py, pad_to_multiple_of=8), never
 * below ML_FIT_MIN_CUTOFF. */
static void test_cutoff_rule(void **state)
{
    (void)state;
    static struct ml_train base, out;
    ml_train_defaults(&base, ML_FW_LLAMAFACTORY);
    memset(&cl, 0, sizeof(cl));
    cl.gpus_per_node = cl.nodes = 1;
    char text[200];
    static const struct {
        uint64_t s;
        enum ml_knob_id k;
        const char *want; /* NULL: refused */
    } cases[] = {
        {1024, ML_KNOB_SEQ_1_2, "cutoff_len: 512"},
        {1000, ML_KNOB_SEQ_1_2, "cutoff_len: 496"},
        {4096, ML_KNOB_SEQ_3_4, "cutoff_len: 3072"},
        {1000, ML_KNOB_SEQ_3_4, "cutoff_len: 744"},
        {512, ML_KNOB_SEQ_1_2, "cutoff_len: 256"},
        {504, ML_KNOB_SEQ_1_2, NULL}, /* 248 < 256 */
        {300, ML_KNOB_SEQ_3_4, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        base.seq_len = cases[i].s;
        bool ok = apply_one(cases[i].k, &base, ML_DIALECT_LF, text, sizeof(text), &out);
        if (!cases[i].want) {
            assert_false(ok);
            continue;
        }
        assert_true(ok);
        assert_string_equal(text, cases[i].want);
    }
}

/* ---- fit and diagnose on the same run ------------------------------------------------------ */

/* Qwen2.5-1.5B LoRA, micro-batch 2 x 1024 tokens, eager attention, checkpointing off, one 16 GB
 * card: fit finds single-knob plans (sdpa, micro-batch / 2, checkpointing, sequence / 2) and a
 * backward OOM on the same card makes diagnose offer the same four. */
static const char yaml[] =
    "model_name_or_path: Qwen/Qwen2.5-1.5B\nstage: sft\nfinetuning_type: lora\nlora_target: all\n"
    "per_device_train_batch_size: 2\ngradient_accumulation_steps: 4\ncutoff_len: 1024\nbf16: true\n"
    "flash_attn: disabled\ndisable_gradient_checkpointing: true\n";
static const char oom[] =
    "Traceback (most recent call last):\n"
    "  File \"/x/torch/autograd/__init__.py\", line 251, in backward\n"
    "    Variable._execution_engine.run_backward(\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB. GPU 0 has a total capacity "
    "of 15.98 GiB of which 10.00 MiB is free. Of the allocated memory 15.61 GiB is allocated by PyTorch, "
    "and 50.00 MiB is reserved by PyTorch but unallocated.\n";

static void load_run(enum ml_framework fw)
{
    struct ml_diag d;
    ml_diag_init(&d);
    ml_train_defaults(&t, fw);
    char model[256], ds[256];
    assert_int_equal(
        ml_train_apply_yaml(&t, yaml, strlen(yaml), "train.yaml", model, sizeof(model), ds, sizeof(ds), &d), ML_OK);
    assert_int_equal(ml_catalog_arch(ml_catalog_find(model), &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    memset(&cl, 0, sizeof(cl));
    assert_int_equal(ml_gpu_resolve("dcu-16g", &cl.gpu, &d), ML_OK);
    cl.gpus_per_node = cl.nodes = 1;
    assert_int_equal(ml_train_check(&t, &arch, &cl, &d), ML_OK);
}

static void run_fit_and_diagnose(void)
{
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_fit_opts fo;
    ml_fit_opts_default(&fo);
    fo.max_plans = ML_FIT_MAX_PLANS;
    fo.point = true; /* diagnose prices its fixes at the estimate: compare like with like */
    assert_int_equal(ml_fit_train(&arch, &inv, &t, &cl, &fo, &fr, &d), ML_OK);
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    ml_oom_scan_buffer(&sc, oom, strlen(oom));
    struct ml_diag_setup su;
    memset(&su, 0, sizeof(su));
    su.arch = &arch;
    su.inv = &inv;
    su.train = &t;
    su.cluster = &cl;
    su.config_name = "train.yaml";
    assert_int_equal(ml_diagnose(&inc, &su, &dg, &d), ML_OK);
}

/* The knob of a plan made of one knob, ML_KNOB_NONE otherwise. */
static enum ml_knob_id single_knob(const struct ml_plan *p)
{
    enum ml_knob_id k = p->n ? p->ch[0].knob : ML_KNOB_NONE;
    for (uint32_t i = 1; i < p->n; i++)
        if (p->ch[i].knob != k)
            return ML_KNOB_NONE;
    return k;
}

static const struct ml_fix *fix_of(enum ml_knob_id k)
{
    for (uint32_t i = 0; i < dg.n_findings; i++)
        for (uint32_t j = 0; j < dg.f[i].n_fix; j++)
            if (dg.f[i].fix[j].knob == k)
                return &dg.f[i].fix[j];
    return NULL;
}

/* Every knob both fit (as a one-knob plan) and diagnose (as a fix) propose for the run: the same
 * setting text, the same device figure, the same rank. Returns how many were compared. */
static uint32_t compare(enum ml_dialect yaml_dialect)
{
    uint32_t same = 0;
    for (uint32_t i = 0; i < fr.n; i++) {
        const struct ml_plan *p = &fr.plans[i];
        enum ml_knob_id k = single_knob(p);
        const struct ml_fix *f = k == ML_KNOB_NONE ? NULL : fix_of(k);
        if (!f)
            continue;
        char text[200];
        ml_changes_text(p->ch, p->n, yaml_dialect, text, sizeof(text));
        if (strcmp(text, f->setting))
            fail_msg("%s: fit writes '%s', diagnose '%s'", ml_knob_get(k)->name, text, f->setting);
        if (!f->saves_from_ledger || f->device_after != p->device_used)
            fail_msg("%s: fit's plan needs %llu B, diagnose's fix %llu B", ml_knob_get(k)->name,
                     (unsigned long long)p->device_used, (unsigned long long)f->device_after);
        uint32_t effects = (p->changes_data ? ML_KNOB_CHANGES_DATA : 0) |
                           (p->changes_method ? ML_KNOB_CHANGES_METHOD : 0) |
                           (p->needs_hardware ? ML_KNOB_NEEDS_HARDWARE : 0);
        assert_int_equal(ml_knob_rank(p->cost_permille, effects), f->cost);
        same++;
    }
    return same;
}

static void test_agree_llamafactory(void **state)
{
    (void)state;
    load_run(ML_FW_LLAMAFACTORY);
    run_fit_and_diagnose();
    /* sdpa alone no longer fits once the variable-length batches strand a loss set (R2): three. */
    assert_true(compare(ML_DIALECT_LF) >= 3);
    /* LLaMA-Factory's own key, inverted: checkpointing on = disable_gradient_checkpointing false. */
    assert_string_equal(fix_of(ML_KNOB_GRAD_CKPT)->setting, "disable_gradient_checkpointing: false");
    assert_string_equal(fix_of(ML_KNOB_SEQ_1_2)->setting, "cutoff_len: 512");
}

static void test_agree_hf(void **state)
{
    (void)state;
    load_run(ML_FW_HF);
    run_fit_and_diagnose();
    assert_true(compare(ML_DIALECT_HF) >= 3);
    assert_string_equal(fix_of(ML_KNOB_GRAD_CKPT)->setting, "gradient_checkpointing: true");
}

/* Every plan fit returns is its knobs applied from the table, in table order: the same changes,
 * the table's costs summed, and the ledger's device figure of the changed run. */
static void test_plans_are_table_knobs(void **state)
{
    (void)state;
    load_run(ML_FW_LLAMAFACTORY);
    run_fit_and_diagnose();
    assert_true(fr.n > 0);
    for (uint32_t i = 0; i < fr.n; i++) {
        const struct ml_plan *p = &fr.plans[i];
        static struct ml_train rt;
        rt = t;
        struct ml_cluster c = cl;
        struct ml_change ch[ML_FIT_MAX_CHANGES];
        uint32_t n = 0, cost = 0;
        struct ml_edit e = {&rt, &c, NULL, ch, &n, 0};
        struct ml_knob_ctx x = {&arch, 8, NULL, NULL, false};
        enum ml_knob_id last = ML_KNOB_NONE;
        for (uint32_t j = 0; j < p->n; j++) {
            if (p->ch[j].knob == last)
                continue;
            last = p->ch[j].knob;
            assert_true(ml_knob_apply(last, &x, &e, 0));
            cost += ml_knob_get(last)->cost;
        }
        assert_int_equal(n, p->n);
        for (uint32_t j = 0; j < n; j++) {
            assert_string_equal(ch[j].key, p->ch[j].key);
            assert_string_equal(ch[j].from, p->ch[j].from);
            assert_string_equal(ch[j].to, p->ch[j].to);
        }
        assert_int_equal(cost, p->cost_permille);
        struct ml_diag d;
        ml_diag_init(&d);
        assert_int_equal(ml_ledger_train(&arch, &inv, &rt, &c, NULL, &led, &d), ML_OK);
        assert_true(led.device_used == p->device_used);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_cutoff_rule),
        cmocka_unit_test(test_agree_llamafactory),
        cmocka_unit_test(test_agree_hf),
        cmocka_unit_test(test_plans_are_table_knobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
