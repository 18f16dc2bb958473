/*
 * Training settings from a LLaMA-Factory YAML, a DeepSpeed JSON and --set overrides
 * (lib/setup/train_yaml.c, train_json.c, train_check.c). Expected values are read off the
 * input files by hand, not copied from the code's output.
 */
#include "ml_test.h"

#include "memledger/train.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static char model_name[256], ds_path[256];

/* ml_train_defaults with a warnings sink of its own (the struct only points at one). */
static void defaults(struct ml_train *t, enum ml_framework fw)
{
    static struct ml_warnings sinks[64];
    static unsigned next;
    ml_train_defaults(t, fw);
    t->warnings = &sinks[next++ % 64];
    t->warnings->n = 0;
}

static enum ml_status apply(struct ml_train *t, const char *yaml, struct ml_diag *d)
{
    ml_diag_init(d);
    return ml_train_apply_yaml(t, yaml, strlen(yaml), "train.yaml", model_name, sizeof(model_name), ds_path,
                               sizeof(ds_path), d);
}

static struct ml_train yaml_ok(const char *yaml)
{
    struct ml_train t;
    struct ml_diag d;
    defaults(&t, ML_FW_LLAMAFACTORY);
    if (apply(&t, yaml, &d) != ML_OK)
        fail_msg("%s:%u:%u: %s", d.origin, d.line, d.col, d.msg);
    return t;
}

static struct ml_diag yaml_err(const char *yaml, enum ml_status want)
{
    struct ml_train t;
    struct ml_diag d;
    defaults(&t, ML_FW_LLAMAFACTORY);
    enum ml_status st = apply(&t, yaml, &d);
    if (st != want)
        fail_msg("expected status %d, got %d (%s) for: %s", want, st, d.msg, yaml);
    assert_int_equal(d.code, want);
    assert_true(d.msg[0] != '\0');
    assert_string_equal(d.origin, "train.yaml");
    return d;
}

static enum ml_status json_apply(struct ml_train *t, const char *json, struct ml_diag *d)
{
    ml_diag_init(d);
    return ml_zero_from_json(t, json, strlen(json), "ds.json", d);
}

static struct ml_train json_ok(const char *json)
{
    struct ml_train t;
    struct ml_diag d;
    defaults(&t, ML_FW_LLAMAFACTORY);
    if (json_apply(&t, json, &d) != ML_OK)
        fail_msg("%s:%u:%u: %s", d.origin, d.line, d.col, d.msg);
    return t;
}

static struct ml_diag json_err(const char *json, enum ml_status want)
{
    struct ml_train t;
    struct ml_diag d;
    defaults(&t, ML_FW_LLAMAFACTORY);
    enum ml_status st = json_apply(&t, json, &d);
    if (st != want)
        fail_msg("expected status %d, got %d (%s) for: %s", want, st, d.msg, json);
    assert_true(d.msg[0] != '\0');
    assert_string_equal(d.origin, "ds.json");
    return d;
}

static bool has_warning(const struct ml_train *t, const char *needle)
{
    for (uint32_t i = 0; i < t->warnings->n; i++)
        if (strstr(t->warnings->text[i], needle))
            return true;
    return false;
}

static void set_ok(struct ml_train *t, const char *kv)
{
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_train_set(t, kv, &d) != ML_OK)
        fail_msg("--set %s: %s", kv, d.msg);
}

static struct ml_cluster cluster(uint32_t gpus)
{
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    c.gpus_per_node = gpus;
    c.nodes = 1;
    return c;
}

/* ---- the seed case ---------------------------------------------------------------------- */

static struct ml_train seed_yaml(void)
{
    size_t len = 0;
    char *y = ml_test_slurp("examples/seed-case/train.yaml", &len);
    assert_non_null(y);
    struct ml_train t;
    struct ml_diag d;
    defaults(&t, ML_FW_LLAMAFACTORY);
    ml_diag_init(&d);
    enum ml_status st =
        ml_train_apply_yaml(&t, y, len, "train.yaml", model_name, sizeof(model_name), ds_path, sizeof(ds_path), &d);
    free(y);
    if (st != ML_OK)
        fail_msg("%u:%u: %s", d.line, d.col, d.msg);
    return t;
}

static void test_seed_yaml(void **state)
{
    (void)state;
    struct ml_train t = seed_yaml();
    assert_int_equal(t.method, ML_METHOD_LORA); /* finetuning_type: lora, no quantization */
    assert_int_equal(t.quant_bits, 0);
    assert_int_equal(t.stage, ML_STAGE_SFT);
    assert_true(t.lora_rank == 64);
    assert_false(t.lora_targets.all);
    assert_int_equal(t.lora_targets.n, 7);
    static const char *const want[] = {"q_proj", "v_proj", "k_proj", "o_proj", "up_proj", "gate_proj", "down_proj"};
    for (int i = 0; i < 7; i++)
        assert_string_equal(t.lora_targets.names[i], want[i]);
    assert_true(t.lora_dropout);    /* 0.05 > 0 */
    assert_true(t.seq_len == 1024); /* cutoff_len 1024, already a multiple of 8 */
    assert_false(t.packing);        /* sft, packing not given */
    assert_true(t.micro_batch == 1);
    assert_true(t.grad_accum == 16);
    assert_true(t.eval_batch == 1);
    assert_false(t.do_eval);
    assert_int_equal(t.precision, ML_PREC_BF16);    /* bf16: true, fp16/pure_bf16 false */
    assert_int_equal(t.attn, ML_ATTN_EAGER);        /* flash_attn: disabled */
    assert_int_equal(t.grad_ckpt, ML_GC_REENTRANT); /* LLaMA-Factory default, reentrant */
    assert_true(t.save_only_model);
    assert_int_equal(t.dataloader_workers, 2);
    assert_string_equal(model_name, "Qwen/Qwen2.5-14B");
    assert_string_equal(ds_path, "deepspeed_z3_4x16g.json");
    assert_true(t.deepspeed);
    assert_false(t.optim_set);
    /* Every key in the file is either mapped or known not to change memory. */
    assert_int_equal(t.warnings->n, 0);
}

static void test_seed_deepspeed(void **state)
{
    (void)state;
    struct ml_train t = seed_yaml();
    size_t len = 0;
    char *j = ml_test_slurp("examples/seed-case/deepspeed_z3_4x16g.json", &len);
    assert_non_null(j);
    struct ml_diag d;
    ml_diag_init(&d);
    enum ml_status st = ml_zero_from_json(&t, j, len, "deepspeed_z3_4x16g.json", &d);
    free(j);
    if (st != ML_OK)
        fail_msg("%s", d.msg);
    const struct ml_zero *z = &t.zero;
    assert_true(t.deepspeed);
    assert_int_equal(z->stage, 3);
    assert_true(z->overlap_comm && z->overlap_comm_set);
    assert_true(z->contiguous_gradients);
    assert_true(z->reduce_scatter); /* not in the file: DeepSpeed default */
    assert_false(z->gather_16bit_on_save);
    assert_false(z->offload_optimizer);
    assert_false(z->offload_param);
    assert_false(z->pin_memory);
    assert_true(z->sub_group.is_set && !z->sub_group.is_auto && z->sub_group.value == 1000000000ull);
    assert_true(z->reduce_bucket.is_set && !z->reduce_bucket.is_auto && z->reduce_bucket.value == 100000000ull);
    assert_true(z->prefetch_bucket.is_set && z->prefetch_bucket.value == 100000000ull);
    assert_true(z->persistence.is_set && z->persistence.value == 1000000ull);
    assert_true(z->max_live.is_set && z->max_live.value == 300000000ull);
    assert_true(z->max_reuse.is_set && z->max_reuse.value == 300000000ull);
    assert_false(z->allgather_bucket.is_set);
    assert_true(z->model_persistence == UINT64_MAX);
    assert_int_equal(z->hpz_partition_size, 1);
    assert_int_equal(z->grad_accum_dtype, ML_DTYPE_UNKNOWN);
    assert_int_equal(z->comm_dtype, ML_DTYPE_UNKNOWN);
    assert_false(z->has_optimizer_block);
    /* "auto" micro batch and GA keep the YAML's values. */
    assert_true(t.micro_batch == 1);
    assert_true(t.grad_accum == 16);
    assert_int_equal(t.warnings->n, 0);
    /* Set values resolve to themselves, absent ones to the DeepSpeed default. */
    assert_true(ml_zero_resolve(&z->reduce_bucket, 5120ull * 5120ull, 500000000ull) == 100000000ull);
    assert_true(ml_zero_resolve(&z->allgather_bucket, 0, 500000000ull) == 500000000ull);

    /* The whole seed case passes the check on 4 GPUs without a warning. */
    struct ml_cluster c = cluster(4);
    ml_diag_init(&d);
    assert_int_equal(ml_train_check(&t, NULL, &c, &d), ML_OK);
    assert_int_equal(t.warnings->n, 0);
}

/* ---- YAML value rules ------------------------------------------------------------------- */

static void test_key_order_does_not_matter(void **state)
{
    (void)state;
    struct ml_train a = yaml_ok("quantization_bit: 4\nfinetuning_type: lora\nbf16: true\n");
    struct ml_train b = yaml_ok("bf16: true\nfinetuning_type: lora\nquantization_bit: 4\n");
    assert_int_equal(a.method, ML_METHOD_QLORA);
    assert_int_equal(b.method, ML_METHOD_QLORA);
    assert_int_equal(a.quant_bits, 4);
    struct ml_train c = yaml_ok("quantization_bit: 8\nfinetuning_type: oft\nbf16: true\n");
    assert_int_equal(c.method, ML_METHOD_QLORA);
    assert_int_equal(c.quant_bits, 8);
    assert_true(has_warning(&c, "finetuning_type oft: modelled as lora"));
    /* Quantization with full fine-tuning is refused by LLaMA-Factory, whatever the order. */
    struct ml_diag d = yaml_err("quantization_bit: 4\nfinetuning_type: full\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "quantization_bit"));
    assert_int_equal(d.line, 1);
    d = yaml_err("finetuning_type: freeze\nquantization_bit: 4\n", ML_ERR_INVALID);
    assert_int_equal(d.line, 2);
    /* use_galore overrides optim wherever it is. */
    struct ml_train g = yaml_ok("use_galore: true\noptim: adamw_torch\nbf16: true\n");
    assert_int_equal(g.optim, ML_OPTIM_GALORE_ADAMW);
    struct ml_train f = yaml_ok("finetuning_type: full\nbf16: true\n");
    assert_int_equal(f.method, ML_METHOD_FULL);
    f = yaml_ok("finetuning_type: freeze\nfreeze_trainable_layers: -4\nbf16: true\n");
    assert_int_equal(f.method, ML_METHOD_FREEZE);
    assert_int_equal(f.freeze_trainable_layers, 4);
}

static void test_sequence_length(void **state)
{
    (void)state;
    /* s = ceil(cutoff_len / 8) * 8. */
    assert_true(yaml_ok("cutoff_len: 1000\nbf16: true\n").seq_len == 1000);
    assert_true(yaml_ok("cutoff_len: 1001\nbf16: true\n").seq_len == 1008);
    assert_true(yaml_ok("cutoff_len: 2047\nbf16: true\n").seq_len == 2048);
    assert_true(yaml_ok("cutoff_len: 1\nbf16: true\n").seq_len == 8);
    assert_true(yaml_ok("bf16: true\n").seq_len == 2048); /* default cutoff_len */
    struct ml_train t = yaml_ok("cutoff_len: 4095\npacking: true\nbf16: true\n");
    assert_true(t.packing);
    assert_true(t.seq_len == 4096);
    /* Packing defaults on for pre-training only; an explicit false wins. */
    assert_true(yaml_ok("stage: pt\nbf16: true\n").packing);
    assert_false(yaml_ok("stage: pt\npacking: false\nbf16: true\n").packing);
    assert_false(yaml_ok("stage: sft\nbf16: true\n").packing);
    /* neat_packing implies packing, before or after packing: false. */
    t = yaml_ok("neat_packing: true\npacking: false\nbf16: true\n");
    assert_true(t.neat_packing && t.packing);
}

static void test_numbers_and_booleans(void **state)
{
    (void)state;
    struct ml_train t = yaml_ok("per_device_train_batch_size: \"2\"\n"
                                "gradient_accumulation_steps: 1_000\n"
                                "per_device_eval_batch_size: 1e1\n"
                                "lora_rank: 16.0\n"
                                "dataloader_num_workers: 0\n"
                                "bf16: yes\n"
                                "save_only_model: on\n"
                                "upcast_layernorm: True\n"
                                "upcast_lmhead_output: TRUE\n"
                                "enable_liger_kernel: off\n"
                                "double_quantization: no\n"
                                "do_eval: false\n");
    assert_true(t.micro_batch == 2);
    assert_true(t.grad_accum == 1000);
    assert_true(t.eval_batch == 10);
    assert_true(t.lora_rank == 16);
    assert_int_equal(t.dataloader_workers, 0);
    assert_int_equal(t.precision, ML_PREC_BF16);
    assert_true(t.save_only_model && t.upcast_layernorm && t.upcast_lmhead_output);
    assert_false(t.liger_kernel);
    assert_false(t.double_quant);
    assert_false(t.do_eval);
    /* eval_strategy other than no turns evaluation on. */
    assert_true(yaml_ok("eval_strategy: steps\nbf16: true\n").do_eval);
    assert_true(yaml_ok("evaluation_strategy: epoch\nbf16: true\n").do_eval);
    assert_false(yaml_ok("eval_strategy: \"no\"\nbf16: true\n").do_eval);
    /* lora_dropout: only whether it is above zero matters. */
    assert_false(yaml_ok("lora_dropout: 0\nbf16: true\n").lora_dropout);
    assert_true(yaml_ok("lora_dropout: 1e-2\nbf16: true\n").lora_dropout);
    /* A null leaves the default. */
    t = yaml_ok("per_device_train_batch_size: ~\nquantization_bit: null\nbf16: true\n");
    assert_true(t.micro_batch == 8);
    assert_int_equal(t.quant_bits, 0);
    /* lora_target as a YAML list, additional_target. */
    t = yaml_ok("lora_target: [q_proj, v_proj]\nadditional_target: embed_tokens,lm_head\nbf16: true\n");
    assert_int_equal(t.lora_targets.n, 2);
    assert_string_equal(t.lora_targets.names[1], "v_proj");
    assert_int_equal(t.additional.n, 2);
    assert_string_equal(t.additional.names[0], "embed_tokens");
    assert_true(yaml_ok("lora_target: all\nbf16: true\n").lora_targets.all);
}

static void test_precision(void **state)
{
    (void)state;
    assert_int_equal(yaml_ok("pure_bf16: true\n").precision, ML_PREC_PURE_BF16);
    assert_int_equal(yaml_ok("fp16: true\n").precision, ML_PREC_FP16);
    assert_int_equal(yaml_ok("bf16: true\nfp16: false\n").precision, ML_PREC_BF16);
    /* None of the three: bf16 with a warning about the checkpoint dtype. */
    struct ml_train t = yaml_ok("stage: sft\n");
    assert_int_equal(t.precision, ML_PREC_BF16);
    assert_true(has_warning(&t, "checkpoint dtype"));
    /* Both bf16 and fp16: an error naming both, at the second one. */
    struct ml_diag d = yaml_err("stage: sft\nbf16: true\nfp16: true\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "'bf16'"));
    assert_non_null(strstr(d.msg, "'fp16'"));
    assert_int_equal(d.line, 3);
}

static void test_attention_and_checkpointing(void **state)
{
    (void)state;
    assert_int_equal(yaml_ok("flash_attn: auto\nbf16: true\n").attn, ML_ATTN_SDPA);
    assert_int_equal(yaml_ok("flash_attn: sdpa\nbf16: true\n").attn, ML_ATTN_SDPA);
    assert_int_equal(yaml_ok("flash_attn: disabled\nbf16: true\n").attn, ML_ATTN_EAGER);
    assert_int_equal(yaml_ok("flash_attn: fa2\nbf16: true\n").attn, ML_ATTN_FLASH);
    assert_int_equal(yaml_ok("flash_attn: fa3\nbf16: true\n").attn, ML_ATTN_FLASH);
    struct ml_diag d = yaml_err("bf16: true\nflash_attn: turbo\n", ML_ERR_INVALID);
    assert_string_equal(d.msg, "'flash_attn' must be auto, disabled, sdpa, fa2 or fa3, got 'turbo'");
    assert_int_equal(d.line, 2);
    assert_int_equal(d.col, 13);

    assert_int_equal(yaml_ok("disable_gradient_checkpointing: true\nbf16: true\n").grad_ckpt, ML_GC_OFF);
    assert_int_equal(yaml_ok("use_unsloth_gc: true\nbf16: true\n").grad_ckpt, ML_GC_UNSLOTH);
    assert_int_equal(yaml_ok("use_reentrant_gc: false\nbf16: true\n").grad_ckpt, ML_GC_NON_REENTRANT);
    /* LLaMA-Factory checkpoints unless disable_gradient_checkpointing: the HF key alone does
     * not turn it off (model/model_utils/checkpointing.py), and the warning says so. */
    struct ml_train t = yaml_ok("gradient_checkpointing: false\nbf16: true\n");
    assert_int_equal(t.grad_ckpt, ML_GC_REENTRANT);
    assert_true(has_warning(&t, "disable_gradient_checkpointing"));
    /* The plain HF profile: the key is what turns it on or off. */
    struct ml_diag dd;
    defaults(&t, ML_FW_HF);
    assert_int_equal(apply(&t, "gradient_checkpointing: true\nbf16: true\n", &dd), ML_OK);
    assert_int_equal(t.grad_ckpt, ML_GC_REENTRANT);
}

static void test_optimizer_and_sharding(void **state)
{
    (void)state;
    struct ml_train t = yaml_ok("optim: adamw_bnb_8bit\nbf16: true\n");
    assert_int_equal(t.optim, ML_OPTIM_ADAMW_8BIT);
    assert_true(t.optim_set);
    assert_int_equal(yaml_ok("optim: adamw_8bit\nbf16: true\n").optim, ML_OPTIM_ADAMW_8BIT);
    assert_int_equal(yaml_ok("optim: paged_adamw_32bit\nbf16: true\n").optim, ML_OPTIM_PAGED_ADAMW_32BIT);
    assert_int_equal(yaml_ok("optim: adamw_torch\nbf16: true\n").optim, ML_OPTIM_ADAMW_TORCH);
    assert_int_equal(yaml_ok("optim: galore_adamw_8bit\nbf16: true\n").optim, ML_OPTIM_GALORE_ADAMW);
    t = yaml_ok("optim: lion_32bit\nbf16: true\n");
    assert_int_equal(t.optim, ML_OPTIM_ADAMW_TORCH_FUSED); /* default kept */
    assert_false(t.optim_set);
    assert_true(has_warning(&t, "lion_32bit"));

    t = yaml_ok("fsdp: full_shard auto_wrap\nbf16: true\n");
    assert_int_equal(t.fsdp, ML_FSDP_FULL_SHARD);
    assert_false(t.fsdp_offload);
    assert_int_equal(t.fsdp_version, 1);
    t = yaml_ok("fsdp: shard_grad_op offload\nfsdp_config:\n  fsdp_version: 2\n  nested: {a: 1}\nbf16: true\n");
    assert_int_equal(t.fsdp, ML_FSDP_SHARD_GRAD_OP);
    assert_true(t.fsdp_offload);
    assert_int_equal(t.fsdp_version, 2);
    assert_int_equal(yaml_ok("fsdp: [hybrid_shard, auto_wrap]\nbf16: true\n").fsdp, ML_FSDP_HYBRID_SHARD);
    struct ml_diag d = yaml_err("fsdp: full_shard turbo\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "'fsdp'"));
    d = yaml_err("fsdp_config:\n  fsdp_version: 3\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "fsdp_config.fsdp_version"));
    assert_int_equal(d.line, 2);
}

/* ---- YAML errors ------------------------------------------------------------------------ */

static void test_malformed_yaml(void **state)
{
    (void)state;
    /* Line 3 is indented under a scalar value: not a valid mapping. */
    struct ml_diag d = yaml_err("stage: sft\nfinetuning_type: lora\n  lora_rank: 8\n", ML_ERR_PARSE);
    assert_int_equal(d.line, 3);
    assert_non_null(strstr(d.msg, "malformed YAML"));
    /* An unclosed flow list. */
    /* A syntax error after a value that looks wrong only because of it: the syntax error. */
    d = yaml_err("stage: sft\ncutoff_len: 1024\n bf16: true\n", ML_ERR_PARSE);
    assert_int_equal(d.line, 3);
    /* The first bad value is reported, not a later one. */
    d = yaml_err("cutoff_len: x\nlora_rank: y\n", ML_ERR_INVALID);
    assert_int_equal(d.line, 1);
    assert_non_null(strstr(d.msg, "cutoff_len"));
    d = yaml_err("lora_target: [q_proj, [v_proj]]\nlora_rank: y\n", ML_ERR_INVALID);
    assert_int_equal(d.line, 1);
    d = yaml_err("stage: sft\nreport_to: [tensorboard\n", ML_ERR_PARSE);
    assert_true(d.line >= 2);
    yaml_err("", ML_ERR_PARSE);
    yaml_err("# nothing but a comment\n", ML_ERR_PARSE);
    yaml_err("- a\n- b\n", ML_ERR_PARSE);
    yaml_err("just text\n", ML_ERR_PARSE);
    d = yaml_err("stage: sft\nstage: pt\n", ML_ERR_PARSE);
    assert_non_null(strstr(d.msg, "duplicate key 'stage'"));
    assert_int_equal(d.line, 2);
    yaml_err("stage: sft\n---\nstage: pt\n", ML_ERR_PARSE);
    yaml_err("? [a, b]\n: c\n", ML_ERR_PARSE);
    /* A NUL byte. */
    struct ml_train t;
    defaults(&t, ML_FW_LLAMAFACTORY);
    ml_diag_init(&d);
    assert_int_equal(ml_train_apply_yaml(&t, "stage: sft\n\0x", 13, "train.yaml", NULL, 0, NULL, 0, &d), ML_ERR_PARSE);
    assert_int_equal(d.line, 2);
    /* Over 4 MiB. */
    size_t big = ((size_t)4 << 20) + 1;
    char *buf = malloc(big);
    assert_non_null(buf);
    memset(buf, '#', big);
    ml_diag_init(&d);
    assert_int_equal(ml_train_apply_yaml(&t, buf, big, "train.yaml", NULL, 0, NULL, 0, &d), ML_ERR_TOOBIG);
    free(buf);
}

static void test_alias_bomb_and_nesting(void **state)
{
    (void)state;
    struct ml_diag d = yaml_err("a: &a [x]\nb: *a\n", ML_ERR_PARSE);
    assert_string_equal(d.msg, "anchors and aliases are not supported");
    assert_int_equal(d.line, 1);
    d = yaml_err("stage: &s sft\n", ML_ERR_PARSE);
    assert_string_equal(d.msg, "anchors and aliases are not supported");

    /* 40 nested lists under one key: over the 32-level cap (the top mapping is level 1). */
    char y[128] = "report_to: ";
    size_t n = strlen(y);
    for (int i = 0; i < 40; i++)
        y[n++] = '[';
    for (int i = 0; i < 40; i++)
        y[n++] = ']';
    y[n++] = '\n';
    y[n] = '\0';
    d = yaml_err(y, ML_ERR_PARSE);
    assert_non_null(strstr(d.msg, "nested deeper than 32"));
    /* 30 levels are fine (and skipped: report_to does not change memory). */
    char ok[128] = "report_to: ";
    n = strlen(ok);
    for (int i = 0; i < 30; i++)
        ok[n++] = '[';
    for (int i = 0; i < 30; i++)
        ok[n++] = ']';
    ok[n++] = '\n';
    memcpy(ok + n, "bf16: true\n", 12);
    (void)yaml_ok(ok);
}

static void test_bad_values(void **state)
{
    (void)state;
    struct ml_diag d = yaml_err("per_device_train_batch_size: abc\n", ML_ERR_INVALID);
    assert_string_equal(d.msg, "'per_device_train_batch_size' must be a positive whole number, got 'abc'");
    assert_int_equal(d.line, 1);
    assert_int_equal(d.col, 30);
    d = yaml_err("bf16: true\nper_device_train_batch_size: -1\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "'per_device_train_batch_size'"));
    assert_int_equal(d.line, 2);
    yaml_err("per_device_train_batch_size: 0\n", ML_ERR_INVALID);
    yaml_err("per_device_train_batch_size: 1.5\n", ML_ERR_INVALID);
    yaml_err("gradient_accumulation_steps: [1]\n", ML_ERR_INVALID);
    yaml_err("gradient_accumulation_steps: {a: 1}\n", ML_ERR_INVALID);
    d = yaml_err("cutoff_len: 1e9\n", ML_ERR_INVALID); /* beyond 2^26 tokens */
    assert_non_null(strstr(d.msg, "out of range"));
    yaml_err("lora_rank: 0\n", ML_ERR_INVALID);
    d = yaml_err("quantization_bit: 3\n", ML_ERR_INVALID);
    assert_string_equal(d.msg, "'quantization_bit' must be 4 or 8, got '3'");
    yaml_err("lora_dropout: -0.1\n", ML_ERR_INVALID);
    yaml_err("lora_dropout: lots\n", ML_ERR_INVALID);
    yaml_err("bf16: maybe\n", ML_ERR_INVALID);
    yaml_err("stage: sftt\n", ML_ERR_INVALID);
    yaml_err("finetuning_type: qlora\n", ML_ERR_INVALID);
    yaml_err("lora_target: \",\"\n", ML_ERR_INVALID);
    yaml_err("eval_strategy: sometimes\n", ML_ERR_INVALID);
    d = yaml_err("fsdp: offload\n", ML_ERR_INVALID); /* offload needs a sharding */
    assert_non_null(strstr(d.msg, "offload"));
    /* A failed file leaves the struct as it was. */
    struct ml_train t, before;
    defaults(&t, ML_FW_LLAMAFACTORY);
    before = t;
    assert_int_equal(apply(&t, "per_device_train_batch_size: 4\ncutoff_len: x\n", &d), ML_ERR_INVALID);
    assert_memory_equal(&t, &before, sizeof(t));
}

static void test_memory_keys_warn(void **state)
{
    (void)state;
    struct ml_train t = yaml_ok("use_dora: true\nbf16: true\n");
    assert_true(has_warning(&t, "'use_dora' changes memory but is not modelled"));
    assert_int_equal(yaml_ok("use_dora: false\nbf16: true\n").warnings->n, 0);
    assert_int_equal(yaml_ok("use_rslora: true\npref_beta: 0.1\nbf16: true\n").warnings->n, 0);
    assert_int_equal(yaml_ok("freeze_vision_tower: true\nbf16: true\n").warnings->n, 0);
    /* The vision switches are modelled now (docs/ledger.md, "Vision-language training"). */
    t = yaml_ok("freeze_vision_tower: false\nfreeze_language_model: true\nimage_max_pixels: 262144\n"
                "images_per_sample: 3\nimage_size: 1920x1080\nvideo_fps: 1.5\nbf16: true\n");
    assert_int_equal(t.warnings->n, 0);
    assert_true(t.vlm.vision_trainable && t.vlm.language_frozen && !t.vlm.projector_trainable);
    assert_int_equal(t.vlm.image_max_pixels, 262144);
    assert_int_equal(t.vlm.images_per_sample, 3);
    assert_int_equal(t.vlm.image_width, 1920);
    assert_int_equal(t.vlm.image_height, 1080);
    assert_int_equal(t.vlm.video_fps_milli, 1500);
    yaml_err("image_size: 1920\n", ML_ERR_INVALID);
    t = yaml_ok("rope_scaling: {rope_type: linear, factor: 2.0}\nbf16: true\n");
    assert_true(has_warning(&t, "'rope_scaling'"));
    t = yaml_ok("rope_scaling: linear\nshift_attn: true\nbf16: true\n");
    assert_true(has_warning(&t, "'rope_scaling'"));
    assert_true(has_warning(&t, "'shift_attn'"));
    assert_int_equal(yaml_ok("infer_backend: huggingface\nstage: sft\nbf16: true\n").warnings->n, 0);
    /* Unknown keys are ignored with a warning naming them (LLaMA-Factory refuses them), near
     * misses with a suggestion (issue 15, item 4). */
    t = yaml_ok("some_future_key: 1\nanother: [1, 2]\nbf16: true\n");
    assert_int_equal(t.warnings->n, 1);
    assert_true(has_warning(
        &t, "2 keys that neither LLaMA-Factory nor memledger knows, ignored: 'some_future_key', 'another'"));
    t = yaml_ok("per_device_train_bach_size: 2\nlora_rnak: 16\nbf16: true\n");
    assert_true(has_warning(&t, "'per_device_train_bach_size' is not a LLaMA-Factory key"));
    assert_true(has_warning(&t, "did you mean 'per_device_train_batch_size'?"));
    assert_true(has_warning(&t, "did you mean 'lora_rank'?"));
    assert_int_equal(t.micro_batch, 8); /* ignored: the default stays */
    /* quantization_method other than bitsandbytes. */
    t = yaml_ok("quantization_bit: 4\nquantization_method: hqq\nbf16: true\n");
    assert_true(has_warning(&t, "modelled as bitsandbytes"));
}

/* ---- --set ------------------------------------------------------------------------------ */

static void test_set_overrides(void **state)
{
    (void)state;
    struct ml_train t = seed_yaml();
    set_ok(&t, "cutoff_len=4096");
    assert_true(t.seq_len == 4096);
    /* An unknown key (issue 15, item 4): a warning, with the near miss when there is one. */
    set_ok(&t, "bogus_key=1");
    assert_true(has_warning(&t, "--set bogus_key: neither LLaMA-Factory nor memledger knows this key; ignored"));
    set_ok(&t, "cutof_len=1024");
    assert_true(has_warning(&t, "did you mean 'cutoff_len'?"));
    assert_true(t.seq_len == 4096);
    set_ok(&t, "packing=true");
    assert_true(t.packing);
    set_ok(&t, "cutoff_len = 3000");
    assert_true(t.seq_len == 3000);
    /* A precision override replaces the one from the file (no bf16+fp16 conflict). */
    set_ok(&t, "fp16=true");
    assert_int_equal(t.precision, ML_PREC_FP16);
    set_ok(&t, "pure_bf16=yes");
    assert_int_equal(t.precision, ML_PREC_PURE_BF16);
    /* Quantization turns the file's LoRA into QLoRA; null takes it away again. */
    set_ok(&t, "quantization_bit=4");
    assert_int_equal(t.method, ML_METHOD_QLORA);
    set_ok(&t, "quantization_bit=null");
    assert_int_equal(t.method, ML_METHOD_LORA);
    set_ok(&t, "lora_target=q_proj,v_proj");
    assert_int_equal(t.lora_targets.n, 2);
    set_ok(&t, "lora_target=[q_proj, k_proj, v_proj]");
    assert_int_equal(t.lora_targets.n, 3);
    assert_string_equal(t.lora_targets.names[0], "q_proj");
    assert_string_equal(t.lora_targets.names[2], "v_proj");
    set_ok(&t, "flash_attn=fa2");
    assert_int_equal(t.attn, ML_ATTN_FLASH);
    set_ok(&t, "fsdp_config.fsdp_version=2");
    assert_int_equal(t.fsdp_version, 2);
    set_ok(&t, "disable_gradient_checkpointing=true");
    assert_int_equal(t.grad_ckpt, ML_GC_OFF);
    set_ok(&t, "per_device_train_batch_size=\"4\"");
    assert_true(t.micro_batch == 4);
    /* Unchanged by the overrides above. */
    assert_true(t.grad_accum == 16);
    assert_true(t.lora_rank == 64);
    /* Unknown keys: a warning, not an error. */
    set_ok(&t, "no_such_key=1");
    assert_true(has_warning(&t, "no_such_key"));

    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_train_set(&t, "per_device_train_batch_size=abc", &d), ML_ERR_INVALID);
    assert_string_equal(d.msg, "'per_device_train_batch_size' must be a positive whole number, got 'abc'");
    assert_string_equal(d.origin, "--set");
    ml_diag_init(&d);
    assert_int_equal(ml_train_set(&t, "cutoff_len", &d), ML_ERR_INVALID);
    ml_diag_init(&d);
    assert_int_equal(ml_train_set(&t, "=4", &d), ML_ERR_INVALID);
    ml_diag_init(&d);
    assert_int_equal(ml_train_set(&t, "finetuning_type=full", &d), ML_OK);
    ml_diag_init(&d);
    set_ok(&t, "finetuning_type=lora");
    set_ok(&t, "quantization_bit=8");
    assert_int_equal(ml_train_set(&t, "finetuning_type=full", &d), ML_ERR_INVALID);
    assert_int_equal(t.method, ML_METHOD_QLORA); /* unchanged by the failed override */
}

/* ---- DeepSpeed JSON --------------------------------------------------------------------- */

static void test_ds_number_forms(void **state)
{
    (void)state;
    struct ml_train t = json_ok("{\"zero_optimization\": {\"stage\": 2,"
                                " \"reduce_bucket_size\": \"auto\","
                                " \"allgather_bucket_size\": \"1e9\","
                                " \"stage3_prefetch_bucket_size\": 5e8,"
                                " \"sub_group_size\": 1000000000,"
                                " \"stage3_max_live_parameters\": 0.9e9,"
                                " \"stage3_param_persistence_threshold\": \"5e8\","
                                " \"max_reuse_distance\": \"1_000\"}}");
    const struct ml_zero *z = &t.zero;
    assert_int_equal(z->stage, 2);
    assert_true(t.deepspeed);
    assert_true(z->reduce_bucket.is_auto);
    assert_true(z->allgather_bucket.is_set && z->allgather_bucket.value == 1000000000ull);
    assert_true(z->prefetch_bucket.value == 500000000ull);
    assert_true(z->sub_group.value == 1000000000ull);
    assert_true(z->max_live.value == 900000000ull);
    assert_true(z->persistence.value == 500000000ull);
    assert_true(z->max_reuse.is_set && z->max_reuse.value == 1000ull); /* the plain field name */
    assert_false(z->overlap_comm_set);
    /* "auto" resolves as HF fills it: h*h for the reduce bucket (h = 5120). */
    assert_true(ml_zero_resolve(&z->reduce_bucket, 5120ull * 5120ull, 500000000ull) == 26214400ull);

    /* "auto" on a knob transformers does not fill: a warning, the DeepSpeed default. */
    t = json_ok("{\"zero_optimization\": {\"stage\": 3, \"stage3_max_live_parameters\": \"auto\"}}");
    assert_false(t.zero.max_live.is_set);
    assert_false(t.zero.max_live.is_auto);
    assert_true(has_warning(&t, "stage3_max_live_parameters"));

    /* LLaMA-Factory's ds_z2 / ds_z3 example configs, read as files, give what --zero 2 / 3 sets
     * without one (ml_zero_preset): the preset is the file, whichever way it arrives. */
    for (uint32_t stage = 2; stage <= 3; stage++) {
        struct ml_train preset;
        defaults(&preset, ML_FW_LLAMAFACTORY);
        ml_zero_preset(&preset, stage, false);
        t = json_ok(ml_zero_preset_json(stage));
        assert_int_equal(t.zero.stage, stage);
        assert_memory_equal(&t.zero, &preset.zero, sizeof(t.zero));
    }
    assert_null(ml_zero_preset_json(1));

    /* memory_efficient_linear false: torch's F.linear keeps the gathered weights (ZeRO-3 only;
     * deepspeed runtime/zero/partition_parameters.py, linear.py): warned, not priced. */
    t = json_ok("{\"zero_optimization\": {\"stage\": 3, \"memory_efficient_linear\": false}}");
    assert_true(has_warning(&t, "'zero_optimization.memory_efficient_linear' changes memory but is not modelled"));
    t = json_ok("{\"zero_optimization\": {\"stage\": 3, \"memory_efficient_linear\": true}}");
    assert_false(has_warning(&t, "memory_efficient_linear"));
    t = json_ok("{\"zero_optimization\": {\"stage\": 2, \"memory_efficient_linear\": false}}");
    assert_false(has_warning(&t, "memory_efficient_linear"));

    struct ml_diag d = json_err("{\"zero_optimization\": {\"reduce_bucket_size\": -1}}", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "zero_optimization.reduce_bucket_size"));
    json_err("{\"zero_optimization\": {\"reduce_bucket_size\": 1.5}}", ML_ERR_INVALID);
    json_err("{\"zero_optimization\": {\"reduce_bucket_size\": true}}", ML_ERR_INVALID);
    json_err("{\"zero_optimization\": {\"reduce_bucket_size\": \"lots\"}}", ML_ERR_INVALID);
    json_err("{\"zero_optimization\": {\"sub_group_size\": 1e300}}", ML_ERR_INVALID);
    json_err("{\"zero_optimization\": {\"overlap_comm\": \"yes\"}}", ML_ERR_INVALID);
}

static void test_ds_errors(void **state)
{
    (void)state;
    /* The trailing comma on line 3 leaves line 4's closing brace where a key should be. */
    struct ml_diag d = json_err("{\n  \"zero_optimization\": {\n    \"stage\": 3,\n  }\n}\n", ML_ERR_PARSE);
    assert_string_equal(d.msg, "malformed JSON");
    assert_int_equal(d.line, 4);
    d = json_err("{\"zero_optimization\": {\"stage\": 5}}", ML_ERR_INVALID);
    assert_string_equal(d.msg, "zero_optimization.stage must be 0, 1, 2 or 3");
    json_err("{\"zero_optimization\": {\"stage\": \"3\"}}", ML_ERR_INVALID);
    json_err("{\"zero_optimization\": {\"stage\": 2.5}}", ML_ERR_INVALID);
    json_err("{\"zero_optimization\": 3}", ML_ERR_INVALID);
    d = json_err("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"gpu\"}}}", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "zero_optimization.offload_optimizer.device"));
    json_err("", ML_ERR_PARSE);
    json_err("[1, 2]", ML_ERR_PARSE);
    json_err("{} trailing", ML_ERR_PARSE);
    json_err("{\"bf16\": {\"enabled\": \"yes\"}}", ML_ERR_INVALID);
    json_err("{\"bf16\": {\"enabled\": true}, \"fp16\": {\"enabled\": true}}", ML_ERR_INVALID);
    json_err("{\"data_types\": {\"grad_accum_dtype\": \"fp64\"}}", ML_ERR_INVALID);
    json_err("{\"gradient_accumulation_steps\": 0}", ML_ERR_INVALID);
    json_err("{\"optimizer\": {\"type\": 5}}", ML_ERR_INVALID);
    struct ml_train t;
    defaults(&t, ML_FW_LLAMAFACTORY);
    ml_diag_init(&d);
    assert_int_equal(ml_zero_from_json(&t, "{\"a\":\0}", 7, "ds.json", &d), ML_ERR_PARSE);
    assert_false(t.deepspeed); /* nothing applied on error */
}

static void test_ds_offload_and_types(void **state)
{
    (void)state;
    struct ml_train t = json_ok("{\"bf16\": {\"enabled\": \"auto\"},"
                                " \"zero_optimization\": {\"stage\": 3,"
                                "  \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true},"
                                "  \"offload_param\": {\"device\": \"nvme\", \"pin_memory\": false},"
                                "  \"stage3_gather_16bit_weights_on_model_save\": true,"
                                "  \"overlap_comm\": false, \"zero_hpz_partition_size\": 8,"
                                "  \"round_robin_gradients\": true},"
                                " \"data_types\": {\"grad_accum_dtype\": \"fp32\"},"
                                " \"communication_data_type\": \"bf16\","
                                " \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": \"auto\"}},"
                                " \"train_micro_batch_size_per_gpu\": \"auto\"}");
    const struct ml_zero *z = &t.zero;
    assert_true(z->offload_optimizer && z->offload_param && z->pin_memory);
    assert_true(z->gather_16bit_on_save);
    assert_true(z->overlap_comm_set && !z->overlap_comm);
    assert_int_equal(z->hpz_partition_size, 8);
    assert_int_equal(z->grad_accum_dtype, ML_DTYPE_FP32);
    assert_int_equal(z->comm_dtype, ML_DTYPE_BF16);
    assert_true(z->has_optimizer_block);
    assert_true(t.micro_batch == 8);
    assert_int_equal(t.warnings->n, 0);

    t = json_ok("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"none\", \"pin_memory\": true},"
                " \"gather_16bit_weights_on_model_save\": true}}");
    assert_false(t.zero.offload_optimizer);
    assert_false(t.zero.pin_memory);
    assert_true(t.zero.gather_16bit_on_save);
    assert_int_equal(t.zero.stage, 0);

    /* Integer batch settings override the YAML's, with a note about the mismatch. */
    t = json_ok("{\"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": 8,"
                " \"optimizer\": {\"type\": \"Lamb\"}, \"fp16\": {\"enabled\": true}}");
    assert_true(t.micro_batch == 4);
    assert_true(t.grad_accum == 8);
    assert_true(has_warning(&t, "train_micro_batch_size_per_gpu"));
    assert_true(has_warning(&t, "Lamb"));
    assert_true(has_warning(&t, "fp16.enabled"));
    /* An optimizer block without a type builds no DeepSpeed optimizer. */
    assert_false(json_ok("{\"optimizer\": {\"params\": {\"lr\": 1e-5}}}").zero.has_optimizer_block);
}

/* ---- ml_train_check --------------------------------------------------------------------- */

static struct ml_train base(void)
{
    struct ml_train t;
    defaults(&t, ML_FW_LLAMAFACTORY);
    return t;
}

static enum ml_status check(struct ml_train *t, const struct ml_arch *a, uint32_t gpus, struct ml_diag *d)
{
    struct ml_cluster c = cluster(gpus);
    ml_diag_init(d);
    return ml_train_check(t, a, &c, d);
}

/* TrainingArguments accelerator_config (transformers trainer_pt_utils.py AcceleratorConfig):
 * gradient_accumulation_kwargs.sync_each_batch is read (the Trainer then runs no no_sync,
 * docs/ledger.md F4); the other keys are named in a warning; accelerate_version is a version. */
static void test_accelerator_config(void **state)
{
    (void)state;
    struct ml_train t = yaml_ok("accelerator_config:\n  split_batches: false\n  gradient_accumulation_kwargs:\n"
                                "    sync_each_batch: true\n    num_steps: 4\n");
    assert_true(t.sync_each_batch);
    assert_true(has_warning(&t, "'accelerator_config.split_batches' is not read"));
    assert_true(has_warning(&t, "'accelerator_config.gradient_accumulation_kwargs.num_steps' is not read"));
    t = yaml_ok("accelerator_config: accel.json\n");
    assert_false(t.sync_each_batch);
    assert_true(has_warning(&t, "accelerator_config 'accel.json'"));
    defaults(&t, ML_FW_HF);
    assert_false(t.sync_each_batch);
    set_ok(&t, "accelerator_config.gradient_accumulation_kwargs.sync_each_batch=true");
    assert_true(t.sync_each_batch);
    set_ok(&t, "accelerate_version=1.10.1");
    assert_true(t.versions.accelerate == ML_VER(1, 10, 1));
}

/* A key given twice to --set: one warning, naming the last value (the one applied last). */
static void test_set_repeats(void **state)
{
    (void)state;
    struct ml_train t;
    defaults(&t, ML_FW_LLAMAFACTORY);
    const char *const sets[] = {"cutoff_len=1024", "lora_rank=4", " cutoff_len =2048"};
    ml_train_set_repeats(&t, sets, 3);
    assert_int_equal(t.warnings->n, 1);
    assert_true(has_warning(&t, "--set cutoff_len given 2 times: the last, 2048, wins"));
    defaults(&t, ML_FW_LLAMAFACTORY);
    ml_train_set_repeats(&t, sets, 2);
    assert_int_equal(t.warnings->n, 0);
}

/* torchtune has no DDP recipe: full_finetune_distributed and lora_finetune_distributed call
 * training.shard_model (fully_shard per layer and on the model) in _setup_model whatever the
 * config (torchtune 30b8519e8, the recipes named *_distributed.py), so on 8 GPUs it is FSDP2 full_shard; an
 * explicit none loses with a warning; one GPU (the single-device recipes) is left alone. */
static void test_check_torchtune_shards(void **state)
{
    (void)state;
    struct ml_diag d;
    struct ml_train t;
    defaults(&t, ML_FW_TORCHTUNE);
    t.method = ML_METHOD_LORA;
    t.defaulted = 1u << ML_TK_FSDP;
    assert_int_equal(check(&t, NULL, 8, &d), ML_OK);
    assert_int_equal(t.fsdp, ML_FSDP_FULL_SHARD);
    assert_int_equal(t.fsdp_version, 2);
    assert_int_equal(t.warnings->n, 0);
    assert_string_equal(ml_train_default_owner(ML_FW_TORCHTUNE, ML_TK_FSDP), "torchtune");
    defaults(&t, ML_FW_TORCHTUNE);
    t.defaulted = 0; /* --fsdp none given */
    assert_int_equal(check(&t, NULL, 8, &d), ML_OK);
    assert_int_equal(t.fsdp, ML_FSDP_FULL_SHARD);
    assert_true(has_warning(&t, "full_shard wins"));
    defaults(&t, ML_FW_TORCHTUNE);
    assert_int_equal(check(&t, NULL, 1, &d), ML_OK);
    assert_int_equal(t.fsdp, ML_FSDP_NONE);
    /* torchao's to_nf4 always double-quantizes (NF4Tensor.from_tensor -> double_quantize_scalers,
     * torchao 2dea31543): a false is overridden, with a warning */
    defaults(&t, ML_FW_TORCHTUNE);
    t.method = ML_METHOD_QLORA;
    t.quant_bits = 4;
    t.double_quant = false;
    assert_int_equal(check(&t, NULL, 1, &d), ML_OK);
    assert_true(t.double_quant);
    assert_true(has_warning(&t, "always double-quantizes"));
    /* custom_sharded_layers as torchtune's configs write it (llama3_1/70B_full.yaml:
     * [tok_embeddings, output]; a block list; a tab between names), read by the LoRA recipe too
     * (torchtune b1aecb19e) */
    static const char *const lists[] = {"custom_sharded_layers: ['tok_embeddings', 'output']\n",
                                        "custom_sharded_layers:\n  - tok_embeddings\n  - output\n",
                                        "custom_sharded_layers: tok_embeddings,\toutput\n"};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        defaults(&t, ML_FW_TORCHTUNE);
        t.method = ML_METHOD_LORA;
        if (apply(&t, lists[i], &d) != ML_OK)
            fail_msg("%s: %s", lists[i], d.msg);
        assert_int_equal(check(&t, NULL, 8, &d), ML_OK);
        assert_true(t.tt_shard_embed && t.tt_shard_head);
        assert_false(has_warning(&t, "custom_sharded_layers"));
    }
    /* the HF Trainer's DDP stays DDP */
    defaults(&t, ML_FW_HF);
    assert_int_equal(check(&t, NULL, 8, &d), ML_OK);
    assert_int_equal(t.fsdp, ML_FSDP_NONE);
}

static void test_check_errors(void **state)
{
    (void)state;
    struct ml_diag d;
    struct ml_train t = base();
    assert_int_equal(check(&t, NULL, 4, &d), ML_OK);
    assert_int_equal(t.warnings->n, 0);

    t = yaml_ok("pure_bf16: true\ndeepspeed: ds_z3.json\n");
    struct ml_diag jd;
    assert_int_equal(json_apply(&t, "{\"zero_optimization\": {\"stage\": 3}}", &jd), ML_OK);
    assert_int_equal(check(&t, NULL, 4, &d), ML_ERR_INVALID);
    assert_string_equal(d.msg, "pure_bf16 cannot be used with DeepSpeed ZeRO-3 (LLaMA-Factory rejects it)");

    t = base();
    t.deepspeed = true;
    t.zero.stage = 2;
    t.zero.offload_param = true;
    assert_int_equal(check(&t, NULL, 4, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "offload_param"));

    t = base();
    t.quant_bits = 3;
    assert_int_equal(check(&t, NULL, 4, &d), ML_ERR_INVALID);
    t = base();
    t.micro_batch = 0;
    assert_int_equal(check(&t, NULL, 4, &d), ML_ERR_INVALID);
    t = base();
    t.seq_len = 0;
    assert_int_equal(check(&t, NULL, 4, &d), ML_ERR_INVALID);
    t = base();
    t.lora_rank = 0;
    assert_int_equal(check(&t, NULL, 4, &d), ML_ERR_INVALID);
    t.method = ML_METHOD_FULL; /* the rank does not matter without LoRA */
    assert_int_equal(check(&t, NULL, 4, &d), ML_OK);
    t = base();
    t.deepspeed = true;
    t.fsdp = ML_FSDP_FULL_SHARD;
    assert_int_equal(check(&t, NULL, 4, &d), ML_ERR_INVALID);
    t = yaml_ok("stage: pt\nneat_packing: true\nflash_attn: fa2\nbf16: true\n");
    assert_int_equal(check(&t, NULL, 4, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "neat_packing"));
    t = base();
    t.precision = (enum ml_precision)9;
    assert_int_equal(check(&t, NULL, 4, &d), ML_ERR_INVALID);
}

static void test_check_warnings(void **state)
{
    (void)state;
    struct ml_diag d;
    /* neat_packing with SDPA: the dense 4-D mask. */
    struct ml_train t = yaml_ok("neat_packing: true\nflash_attn: sdpa\nbf16: true\n");
    assert_int_equal(check(&t, NULL, 4, &d), ML_OK);
    assert_true(has_warning(&t, "neat_packing"));
    t = yaml_ok("neat_packing: true\nflash_attn: fa2\nbf16: true\n");
    assert_int_equal(check(&t, NULL, 4, &d), ML_OK);
    assert_false(has_warning(&t, "neat_packing"));

    t = base();
    t.deepspeed = true;
    t.zero.offload_optimizer = true;
    assert_int_equal(check(&t, NULL, 1, &d), ML_OK);
    assert_true(has_warning(&t, "stage 0"));
    assert_true(has_warning(&t, "single GPU"));

    /* FSDP2 with reentrant checkpointing: switched to non-reentrant. */
    t = yaml_ok("fsdp: full_shard\nfsdp_config: {fsdp_version: 2}\nbf16: true\n");
    assert_int_equal(t.grad_ckpt, ML_GC_REENTRANT);
    assert_int_equal(check(&t, NULL, 8, &d), ML_OK);
    assert_int_equal(t.grad_ckpt, ML_GC_NON_REENTRANT);
    assert_true(has_warning(&t, "FSDP2"));

    /* Gemma-2 with SDPA: eager. */
    struct ml_arch a;
    memset(&a, 0, sizeof(a));
    a.attn_softcap = true; /* what the gemma2 row sets */
    (void)snprintf(a.model_type, sizeof(a.model_type), "gemma2");
    t = base();
    assert_int_equal(check(&t, &a, 4, &d), ML_OK);
    assert_int_equal(t.attn, ML_ATTN_EAGER);
    assert_true(has_warning(&t, "gemma2"));
    t = base();
    t.attn = ML_ATTN_FLASH;
    assert_int_equal(check(&t, &a, 4, &d), ML_OK);
    assert_int_equal(t.attn, ML_ATTN_FLASH);

    /* 8-bit QLoRA under ZeRO-3. */
    t = yaml_ok("quantization_bit: 8\nbf16: true\n");
    assert_int_equal(json_apply(&t, "{\"zero_optimization\": {\"stage\": 3}}", &d), ML_OK);
    assert_int_equal(check(&t, NULL, 4, &d), ML_OK);
    assert_true(has_warning(&t, "8-bit QLoRA"));
}

static void test_version_parse(void **state)
{
    (void)state;
    struct ml_diag d;
    uint32_t v = 0;
    ml_diag_init(&d);
    assert_int_equal(ml_version_parse("4.49.0", &v, &d), ML_OK);
    assert_int_equal(v, 44900);
    assert_int_equal(ml_version_parse("4.49", &v, &d), ML_OK);
    assert_int_equal(v, 44900);
    assert_int_equal(ml_version_parse("0.19.5", &v, &d), ML_OK);
    assert_int_equal(v, 1905);
    assert_int_equal(ml_version_parse("2.9.0+cu128", &v, &d), ML_OK);
    assert_int_equal(v, 20900);
    assert_int_equal(ml_version_parse("4.57.0.dev0", &v, &d), ML_OK);
    assert_int_equal(v, 45700);
    assert_int_equal(ml_version_parse("4", &v, &d), ML_ERR_PARSE);
    assert_int_equal(ml_version_parse("4.100", &v, &d), ML_ERR_PARSE);
    assert_int_equal(ml_version_parse("latest", &v, &d), ML_ERR_PARSE);
    assert_int_equal(ml_version_parse("4.49.0x", &v, &d), ML_OK); /* a pre-release suffix */
    assert_int_equal(ml_version_parse("4.49.0/", &v, &d), ML_ERR_PARSE);
}

/* save_steps / eval_steps: whole steps as written; transformers reads a float below 1 as a ratio
 * of the total steps (training_args.py), which a YAML alone cannot turn into steps. */
static void test_save_eval_steps(void **state)
{
    (void)state;
    struct ml_train t = yaml_ok("save_steps: 100\neval_steps: 500\n");
    assert_int_equal(t.save_steps, 100);
    assert_int_equal(t.eval_steps, 500);
    t = yaml_ok("save_steps: 0.1\n");
    assert_int_equal(t.save_steps, 0);
    t = yaml_ok("learning_rate: 1.0e-4\n");
    assert_int_equal(t.save_steps, 0);
    assert_int_equal(t.eval_steps, 0);
    struct ml_diag d = yaml_err("save_steps: often\n", ML_ERR_INVALID);
    assert_int_equal(d.line, 1);
    yaml_err("eval_steps: -5\n", ML_ERR_INVALID);
}

/* ---- LLaMA-Factory's v1 schema, the file kind, refused keys ------------------------------ */

/* v1 config/{model,training}_args.py defaults and plugin mappings, as examples/v1 writes them. */
static void test_v1_schema(void **state)
{
    (void)state;
    /* examples/v1/train_lora/train_lora_sft.yaml, cut down. */
    struct ml_train t = yaml_ok("model: Qwen/Qwen3-4B\nmodel_class: llm\npeft_config:\n  name: lora\n  r: 16\n"
                                "  lora_alpha: 32\n  lora_dropout: 0.05\n  target_modules: all\n"
                                "kernel_config:\n  name: auto\ndist_config:\n  name: fsdp2\n  dcp_path: null\n"
                                "train_dataset: data/v1_sft_demo.yaml\nmicro_batch_size: 1\ncutoff_len: 2048\n"
                                "learning_rate: 1.0e-4\nmax_steps: 10\nsample_backend: hf\nmax_new_tokens: 128\n");
    assert_string_equal(model_name, "Qwen/Qwen3-4B");
    assert_int_equal(t.method, ML_METHOD_LORA);
    assert_int_equal(t.lora_rank, 16);
    assert_true(t.lora_dropout);
    assert_true(t.lora_targets.all);
    assert_int_equal(t.fsdp, ML_FSDP_FULL_SHARD);
    assert_int_equal(t.fsdp_version, 2);
    assert_int_equal(t.micro_batch, 1);
    assert_int_equal(t.seq_len, 2048);
    assert_int_equal(t.precision, ML_PREC_BF16);        /* bf16 defaults to true */
    assert_int_equal(t.grad_ckpt, ML_GC_NON_REENTRANT); /* use_reentrant False */
    assert_int_equal(t.warnings->n, 0);
    /* No peft_config: full fine-tuning; micro_batch_size defaults to 1. */
    t = yaml_ok("model: Qwen/Qwen3-0.6B\ndist_config:\n  name: deepspeed\n  config_file: "
                "examples/deepspeed/ds_z3_config.json\n");
    assert_int_equal(t.method, ML_METHOD_FULL);
    assert_int_equal(t.micro_batch, 1);
    assert_true(t.deepspeed);
    assert_string_equal(ds_path, "examples/deepspeed/ds_z3_config.json");
    /* quant_config, freeze, flash_attention_2, padding-free batching, cp_size, bf16 false. */
    t = yaml_ok("model: m\npeft_config: {name: lora, target_modules: [q_proj, v_proj]}\n"
                "quant_config: {name: bnb, quantization_bit: 8}\n");
    assert_int_equal(t.method, ML_METHOD_QLORA);
    assert_int_equal(t.quant_bits, 8);
    assert_int_equal(t.lora_targets.n, 2);
    t = yaml_ok("model: m\nquant_config:\n  name: bnb\npeft_config:\n  name: lora\n");
    assert_int_equal(t.quant_bits, 4); /* "default to 4-bit quantization" */
    t = yaml_ok("model: m\npeft_config:\n  name: freeze\n  freeze_trainable_layers: 4\n");
    assert_int_equal(t.method, ML_METHOD_FREEZE);
    assert_int_equal(t.freeze_trainable_layers, 4);
    t = yaml_ok("model: m\nflash_attn: flash_attention_2\nbatching_strategy: padding_free\ncp_size: 2\nbf16: false\n"
                "enable_activation_checkpointing: false\nkernel_config: {name: liger_kernel}\n");
    assert_int_equal(t.attn, ML_ATTN_FLASH);
    assert_true(t.packing && t.neat_packing);
    assert_int_equal(t.cp_size, 2);
    assert_int_equal(t.precision, ML_PREC_FP32);
    assert_int_equal(t.grad_ckpt, ML_GC_OFF);
    assert_true(t.liger_kernel);
    t = yaml_ok("model: m\ndist_config: {name: fsdp2, reshard_after_forward: false, offload_params: true}\n");
    assert_int_equal(t.fsdp, ML_FSDP_SHARD_GRAD_OP);
    assert_true(t.fsdp_offload);
    struct ml_diag d = yaml_err("model: m\ndist_config:\n  name: fsdpturbo\n  ep_size: 16\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "'dist_config.name' fsdpturbo"));
    assert_int_equal(d.line, 3);
    /* v1 keys are unknown to v0 and the other way round, with the near miss of the file's schema. */
    t = yaml_ok("model: m\nmicro_batch_sise: 2\n");
    assert_true(has_warning(&t, "'micro_batch_sise' is not a LLaMA-Factory v1 key"));
    assert_true(has_warning(&t, "did you mean 'micro_batch_size'?"));
    d = yaml_err("model_name_or_path: m\nflash_attn: flash_attention_2\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "which calls it fa2"));
}

static void test_file_kinds_and_refused_keys(void **state)
{
    (void)state;
    /* An accelerate config given as --config: one line saying to use --accelerate. */
    struct ml_diag d =
        yaml_err("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "accelerate config"));
    assert_non_null(strstr(d.msg, "--accelerate"));
    /* A YAML with no training key at all (examples/extras/multi_tokens/tokens_cfg.yaml). */
    d = yaml_err("\"<|START_OF_SVG|>\": \"Marks the beginning\"\n\"<|END_OF_SVG|>\": \"Marks the end\"\n",
                 ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "not a training YAML"));
    /* Keys memledger cannot model: one line naming the key and its line. */
    d = yaml_err("model_name_or_path: m\nuse_kt: true\nkt_config: {a: 1}\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "'use_kt'"));
    assert_int_equal(d.line, 2);
    assert_int_equal(yaml_ok("model_name_or_path: m\nbf16: true\nuse_kt: false\n").warnings->n, 0);
    d = yaml_err("model_name_or_path: m\nbf16: true\ntensor_model_parallel_size: 1\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "'tensor_model_parallel_size': Megatron-Core"));
    d = yaml_err("model_name_or_path: m\nuse_mca: true\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "'use_mca'"));
    /* examples/inference and examples/merge_lora: not training runs. */
    d = yaml_err("model_name_or_path: m\ntemplate: qwen3\ninfer_backend: vllm\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "inference config"));
    d = yaml_err("model_name_or_path: m\nadapter_name_or_path: a\nexport_dir: out\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "export config"));
    d = yaml_err("model: m\npeft_config:\n  name: lora\n  export_dir: out\n", ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "export config"));
    /* Known keys without memory effect stay silent; the stale sequence_parallel_size warns. */
    struct ml_train t = yaml_ok("model_name_or_path: m\nbf16: true\nray_num_workers: 4\nuse_swanlab: true\n"
                                "export_size: 5\noft_target: all\npissa_iter: 16\nfp8_backend: te\n");
    assert_int_equal(t.warnings->n, 0);
    t = yaml_ok("model_name_or_path: m\nbf16: true\nsequence_parallel_size: 4\n");
    assert_true(has_warning(&t, "hyper_parallel_cp_size"));
    t = yaml_ok("model_name_or_path: m\nbf16: true\nuse_hyper_parallel: true\nhyper_parallel_cp_size: 4\n");
    assert_int_equal(t.cp_size, 4);
}

/* ---- hand-pasted YAML (issue 15, item 8) ------------------------------------------------ */

static void test_pasted_yaml(void **state)
{
    (void)state;
    /* The seed's config as it reached us: every line break lost, one key glued to its value. */
    struct ml_train t = yaml_ok("model_name_or_path: Qwen/Qwen2.5-14B-Instruct template: alpaca cutoff_len:1024 "
                                "stage: sft finetuning_type: lora lora_rank: 64 per_device_train_batch_size: 2 "
                                "default_system: \"You are: helpful\" bf16: true\n");
    assert_string_equal(model_name, "Qwen/Qwen2.5-14B-Instruct");
    assert_int_equal(t.seq_len, 1024);
    assert_int_equal(t.lora_rank, 64);
    assert_int_equal(t.micro_batch, 2);
    assert_int_equal(t.precision, ML_PREC_BF16);
    assert_true(has_warning(&t, "line 1 holds 9 keys: its line breaks seem lost"));
    /* A file that YAML reads without complaint but that hides a key inside a value. */
    t = yaml_ok("model_name_or_path: m\ntemplate: alpaca cutoff_len: 4096\nbf16: true\n");
    assert_int_equal(t.seq_len, 4096);
    assert_true(has_warning(&t, "line 2 holds 2 keys"));
    /* Quoted values, URLs and Windows paths are not keys; nothing is re-split. */
    t = yaml_ok("model_name_or_path: C:/models/x\ndefault_system: \"remember: stage: sft\"\nbf16: true\n"
                "report_to: http://host:80\n");
    assert_int_equal(t.warnings->n, 0);
    /* A word that is not a known key: a hint on its line, nothing guessed. */
    struct ml_diag d = yaml_err("bf16: true\nmodel_name_or_path: x template: alpaca bogus: 3\n", ML_ERR_PARSE);
    assert_int_equal(d.line, 2);
    assert_non_null(strstr(d.msg, "line breaks seem lost"));
    assert_non_null(strstr(d.msg, "'bogus'"));
    /* A key glued to its value: the line of the key, not one past the end of the file. */
    d = yaml_err("model_name_or_path: x\ntemplate: qwen\ncutoff_len:1024\n", ML_ERR_PARSE);
    assert_int_equal(d.line, 3);
    assert_int_equal(d.col, 1);
    assert_non_null(strstr(d.msg, "'cutoff_len:1024': no space after ':'"));
    d = yaml_err("model_name_or_path: x\ncutoff_len:1024\nbf16: true\n", ML_ERR_PARSE);
    assert_int_equal(d.line, 2);
    d = yaml_err("cutoff_len:1024\n", ML_ERR_PARSE);
    assert_int_equal(d.line, 1);
    assert_non_null(strstr(d.msg, "write 'cutoff_len: 1024'"));
}

/* ---- accelerate configs (as LLaMA-Factory's examples/accelerate write them) ----------------- */

static enum ml_status acc_apply(struct ml_train *t, const char *y, struct ml_accelerate *a, struct ml_diag *d)
{
    ml_diag_init(d);
    return ml_train_apply_accelerate(t, y, strlen(y), "acc.yaml", a, d);
}

static void test_accelerate_config(void **state)
{
    (void)state;
    struct ml_train t;
    struct ml_accelerate a;
    struct ml_diag d;
    /* examples/accelerate/fsdp_config_multiple_nodes.yaml, cut down. */
    defaults(&t, ML_FW_LLAMAFACTORY);
    assert_int_equal(
        acc_apply(&t,
                  "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\ndowncast_bf16: 'no'\n"
                  "fsdp_config:\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                  "  fsdp_backward_prefetch: BACKWARD_PRE\n  fsdp_cpu_ram_efficient_loading: true\n"
                  "  fsdp_offload_params: false\n  fsdp_sharding_strategy: FULL_SHARD\n"
                  "  fsdp_state_dict_type: FULL_STATE_DICT\n  fsdp_use_orig_params: true\n"
                  "mixed_precision: bf16  # or fp16\nmain_process_ip: 192.168.0.1\n"
                  "num_machines: 2  # the number of nodes\nnum_processes: 16\ntpu_env: []\nuse_cpu: false\n",
                  &a, &d),
        ML_OK);
    assert_int_equal(t.fsdp, ML_FSDP_FULL_SHARD);
    assert_int_equal(t.fsdp_version, 1);
    assert_false(t.fsdp_offload);
    assert_true(t.fsdp_full_state_dict);
    assert_true(t.fsdp_ram_efficient);
    assert_int_equal(a.num_processes, 16);
    assert_int_equal(a.num_machines, 2);
    assert_int_equal(t.warnings->n, 0);
    /* fsdp2_config.yaml: version 2, reshard_after_forward true = FULL_SHARD; false = SHARD_GRAD_OP. */
    defaults(&t, ML_FW_LLAMAFACTORY);
    assert_int_equal(acc_apply(&t,
                               "distributed_type: FSDP\nfsdp_config:\n  fsdp_reshard_after_forward: false\n"
                               "  fsdp_version: 2\n  fsdp_offload_params: true\nnum_processes: 2\n",
                               &a, &d),
                     ML_OK);
    assert_int_equal(t.fsdp, ML_FSDP_SHARD_GRAD_OP);
    assert_int_equal(t.fsdp_version, 2);
    assert_true(t.fsdp_offload);
    /* FSDP1 strategies by name or number; HYBRID_SHARD shards within a node. */
    defaults(&t, ML_FW_LLAMAFACTORY);
    assert_int_equal(acc_apply(&t, "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: 4\n", &a, &d),
                     ML_OK);
    assert_int_equal(t.fsdp, ML_FSDP_HYBRID_SHARD);
    defaults(&t, ML_FW_LLAMAFACTORY);
    assert_int_equal(
        acc_apply(&t, "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: NO_SHARD\n", &a, &d), ML_OK);
    assert_int_equal(t.fsdp, ML_FSDP_NONE);
    /* DeepSpeed through accelerate: a file to read, or zero_stage presets. */
    defaults(&t, ML_FW_LLAMAFACTORY);
    assert_int_equal(
        acc_apply(&t, "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n", &a, &d),
        ML_OK);
    assert_string_equal(a.deepspeed_file, "ds.json");
    defaults(&t, ML_FW_LLAMAFACTORY);
    assert_int_equal(acc_apply(&t,
                               "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n"
                               "  offload_optimizer_device: cpu\n",
                               &a, &d),
                     ML_OK);
    assert_true(t.deepspeed);
    assert_int_equal(t.zero.stage, 3);
    assert_true(t.zero.offload_optimizer);
    /* Precision that disagrees with the training arguments warns. */
    defaults(&t, ML_FW_LLAMAFACTORY);
    assert_int_equal(acc_apply(&t, "distributed_type: MULTI_GPU\nmixed_precision: fp16\nnum_processes: 4\n", &a, &d),
                     ML_OK);
    assert_true(has_warning(&t, "mixed_precision fp16 differs"));
    /* Errors: one line, the file, the key. */
    defaults(&t, ML_FW_LLAMAFACTORY);
    assert_int_equal(
        acc_apply(&t, "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: HALF_SHARD\n", &a, &d),
        ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "fsdp_sharding_strategy"));
    assert_string_equal(d.origin, "acc.yaml");
    assert_int_equal(acc_apply(&t,
                               "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\n"
                               "  fsdp_reshard_after_forward: FULL_SHARD\n",
                               &a, &d),
                     ML_ERR_INVALID);
    assert_int_equal(acc_apply(&t, "distributed_type: MEGATRON_LM\n", &a, &d), ML_ERR_INVALID);
    assert_int_equal(acc_apply(&t, "num_processes: 3\nnum_machines: 2\n", &a, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "not a multiple of num_machines"));
    assert_int_equal(acc_apply(&t, "model_name_or_path: x\nstage: sft\n", &a, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "--config"));
    assert_int_equal(acc_apply(&t, "learning_rate: 1\n", &a, &d), ML_ERR_INVALID);
    assert_int_equal(acc_apply(&t, "a: &x 1\nb: *x\n", &a, &d), ML_ERR_PARSE);
    /* AutoTP from the DeepSpeed JSON (examples/deepspeed/ds_z2_autotp_config.json). */
    t = json_ok("{\"zero_optimization\": {\"stage\": 2}, \"tensor_parallel\": {\"autotp_size\": 2}}");
    assert_int_equal(t.tp_size, 2);
    json_err("{\"tensor_parallel\": {\"autotp_size\": 0}}", ML_ERR_INVALID);
    json_err("{\"tensor_parallel\": 2}", ML_ERR_INVALID);
}

/* ---- LLaMA-Factory command lines ---------------------------------------------------------- */

static struct ml_lf_cmdline lf_parse(const char *line, struct ml_train_override *ov, size_t cap, enum ml_status want)
{
    static char buf[4096];
    const char *words[256];
    int n = ml_lf_split(line, buf, sizeof(buf), words, 256);
    assert_true(n > 0);
    struct ml_lf_cmdline c;
    struct ml_diag d;
    ml_diag_init(&d);
    enum ml_status st = ml_lf_cmdline_parse(n, words, &c, ov, cap, &d);
    if (st != want)
        fail_msg("%s: status %d (%s)", line, st, d.msg);
    return c;
}

static void test_lf_command_line(void **state)
{
    (void)state;
    struct ml_train_override ov[64];
    /* LLaMA-Factory README: environment, the program, the YAML, dotlist overrides. */
    struct ml_lf_cmdline c = lf_parse("FORCE_TORCHRUN=1 NNODES=2 NODE_RANK=0 MASTER_ADDR=192.168.0.1 "
                                      "llamafactory-cli train examples/train_lora/qwen3_lora_sft.yaml "
                                      "learning_rate=1e-5 lora_rank=16 'template=a b'",
                                      ov, 64, ML_OK);
    assert_string_equal(c.config, "examples/train_lora/qwen3_lora_sft.yaml");
    assert_string_equal(c.command, "train");
    assert_int_equal(c.nnodes, 2);
    assert_int_equal(c.nproc_per_node, 0);
    assert_int_equal(c.n_ov, 3);
    assert_int_equal(ov[1].key_len, 9);
    assert_memory_equal(ov[1].key, "lora_rank", 9);
    assert_string_equal(ov[1].value, "16");
    assert_string_equal(ov[2].value, "a b");
    /* The HfArgumentParser form: --key value, --key=value, bare --flag. */
    c = lf_parse("CUDA_VISIBLE_DEVICES=0,1,2,3 lmf train --stage dpo --model_name_or_path Qwen/Qwen3-4B --do_train "
                 "--per_device_train_batch_size=2 --bf16",
                 ov, 64, ML_OK);
    assert_null(c.config);
    assert_int_equal(c.visible_devices, 4);
    assert_int_equal(c.n_ov, 5);
    assert_null(ov[2].value); /* --do_train */
    assert_string_equal(ov[3].value, "2");
    /* accelerate launch and torchrun, as examples/extras/fsdp_qlora/train.sh writes them. */
    c = lf_parse("accelerate launch --config_file examples/accelerate/fsdp_config.yaml --main_process_port 29500 "
                 "src/train.py examples/extras/fsdp_qlora/llama3_lora_sft.yaml",
                 ov, 64, ML_OK);
    assert_string_equal(c.accelerate, "examples/accelerate/fsdp_config.yaml");
    assert_string_equal(c.config, "examples/extras/fsdp_qlora/llama3_lora_sft.yaml");
    c = lf_parse("torchrun --nproc_per_node 8 --nnodes=2 src/train.py x.yaml", ov, 64, ML_OK);
    assert_int_equal(c.nproc_per_node, 8);
    assert_int_equal(c.nnodes, 2);
    /* v1: the command is the stage. */
    c = lf_parse("llamafactory-cli dpo examples/v1/train_lora/train_lora_dpo.yaml", ov, 64, ML_OK);
    assert_int_equal(c.n_ov, 1);
    assert_string_equal(ov[0].value, "dpo");
    /* Refused: not a training command, Megatron, --key after a YAML, no arguments. */
    lf_parse("llamafactory-cli webui", ov, 64, ML_ERR_INVALID);
    lf_parse("USE_MCA=1 llamafactory-cli train x.yaml", ov, 64, ML_ERR_INVALID);
    lf_parse("llamafactory-cli train x.yaml --lora_rank 4", ov, 64, ML_ERR_INVALID);
    lf_parse("llamafactory-cli train", ov, 64, ML_ERR_INVALID);
    lf_parse("deepspeed train.py", ov, 64, ML_ERR_INVALID);
    /* Overrides through the YAML's key table, more than --set's 32, replacing the file's values. */
    char line[2048] = "llamafactory-cli train x.yaml";
    for (int i = 0; i < 40; i++)
        strcat(line, " learning_rate=1e-5");
    strcat(line, " lora_rank=32 cutoff_len=1000 stage=dpo peft_typo=3");
    c = lf_parse(line, ov, 64, ML_OK);
    assert_int_equal(c.n_ov, 44);
    struct ml_train t;
    defaults(&t, ML_FW_LLAMAFACTORY);
    const char *yaml = "model_name_or_path: m\nlora_rank: 8\ncutoff_len: 2048\nbf16: true\n";
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_train_apply_yaml_with(&t, yaml, strlen(yaml), "x.yaml", ov, c.n_ov, "command line", model_name,
                                              sizeof(model_name), ds_path, sizeof(ds_path), &d),
                     ML_OK);
    assert_int_equal(t.lora_rank, 32);
    assert_int_equal(t.seq_len, 1000);
    assert_int_equal(t.stage, ML_STAGE_DPO);
    assert_true(has_warning(&t, "'peft_typo'"));
    /* A bad override names the command line, not the file. */
    struct ml_train_override bad = {"lora_rank", 9, "many"};
    defaults(&t, ML_FW_LLAMAFACTORY);
    assert_int_equal(ml_train_apply_yaml_with(&t, yaml, strlen(yaml), "x.yaml", &bad, 1, "command line", model_name,
                                              sizeof(model_name), ds_path, sizeof(ds_path), &d),
                     ML_ERR_INVALID);
    assert_string_equal(d.origin, "command line");
    /* No YAML: model_name_or_path and deepspeed come from the overrides. */
    struct ml_train_override only[] = {
        {"model_name_or_path", 18, "Qwen/Qwen3-4B"}, {"deepspeed", 9, "ds.json"}, {"bf16", 4, NULL}};
    defaults(&t, ML_FW_LLAMAFACTORY);
    assert_int_equal(ml_train_apply_yaml_with(&t, NULL, 0, NULL, only, 3, "command line", model_name,
                                              sizeof(model_name), ds_path, sizeof(ds_path), &d),
                     ML_OK);
    assert_string_equal(model_name, "Qwen/Qwen3-4B");
    assert_string_equal(ds_path, "ds.json");
    assert_int_equal(t.precision, ML_PREC_BF16);
    assert_int_equal(t.warnings->n, 0);
    /* ml_lf_split: quotes, escapes, an unterminated quote. */
    char b2[64];
    const char *w2[8];
    assert_int_equal(ml_lf_split("a 'b c' \"d\\\"e\" f\\ g", b2, sizeof(b2), w2, 8), 4);
    assert_string_equal(w2[1], "b c");
    assert_string_equal(w2[2], "d\"e");
    assert_string_equal(w2[3], "f g");
    assert_int_equal(ml_lf_split("a 'b", b2, sizeof(b2), w2, 8), -1);
}

/* TRL's own keys under --framework trl (trl/trainer/sft_config.py max_length: the sequence cap;
 * model_config.py ModelConfig use_peft, lora_r, load_in_4bit, attn_implementation); under
 * LLaMA-Factory max_length is generation's and the ModelConfig keys are not read (a warning). */
static void test_trl_keys(void **state)
{
    (void)state;
    static const char yaml[] = "model_name_or_path: Qwen/Qwen2.5-7B\nuse_peft: true\nlora_r: 32\n"
                               "load_in_4bit: true\nattn_implementation: eager\nmax_length: 4096\n";
    struct ml_train t;
    struct ml_diag d;
    defaults(&t, ML_FW_TRL);
    assert_int_equal(apply(&t, yaml, &d), ML_OK);
    assert_int_equal(t.method, ML_METHOD_QLORA);
    assert_int_equal(t.quant_bits, 4);
    assert_int_equal(t.lora_rank, 32);
    assert_int_equal(t.attn, ML_ATTN_EAGER);
    assert_int_equal(t.seq_len, 4096);
    defaults(&t, ML_FW_TRL);
    assert_int_equal(apply(&t, "model_name_or_path: x\nuse_peft: false\nattn_implementation: flash_attention_2\n", &d),
                     ML_OK);
    assert_int_equal(t.method, ML_METHOD_FULL);
    assert_int_equal(t.attn, ML_ATTN_FLASH);
    defaults(&t, ML_FW_TRL);
    assert_int_not_equal(apply(&t, "model_name_or_path: x\nattn_implementation: fa2\n", &d), ML_OK);
    assert_non_null(strstr(d.msg, "flash_attention_2"));
    /* LLaMA-Factory: max_length is not the cutoff, lora_r is not read. */
    defaults(&t, ML_FW_LLAMAFACTORY);
    uint64_t seq = t.seq_len, rank = t.lora_rank;
    assert_int_equal(apply(&t, "model_name_or_path: x\nmax_length: 4096\nlora_r: 32\n", &d), ML_OK);
    assert_int_equal(t.seq_len, seq);
    assert_int_equal(t.lora_rank, rank);
    assert_true(t.warnings->n >= 1);
    assert_non_null(strstr(t.warnings->text[0], "lora_r"));
}

/* The tracked settings (lib/setup/tracked.c): a perturbed copy differs in every one, and each is
 * named the way the override warning prints it. */
static void test_tracked_settings(void **state)
{
    (void)state;
    struct ml_train a, b;
    defaults(&a, ML_FW_LLAMAFACTORY);
    b = a;
    ml_tracked_perturb(&b);
    for (int k = 0; k < ML_TK_COUNT; k++) {
        assert_false(ml_tracked_differs((enum ml_tracked)k, &a, &a));
        if (k != ML_TK_QBITS) /* left alone: any value would make a LoRA run QLoRA */
            assert_true(ml_tracked_differs((enum ml_tracked)k, &a, &b));
        assert_true(ml_tracked_flag((enum ml_tracked)k)[0] == '-');
    }
    char v[64];
    a.lora_rank = 16;
    ml_tracked_value(&a, ML_TK_RANK, v, sizeof(v));
    assert_string_equal(v, "lora_rank 16");
    a.zero.stage = 3;
    ml_tracked_value(&a, ML_TK_ZERO, v, sizeof(v));
    assert_string_equal(v, "ZeRO-3");
    assert_string_equal(ml_tracked_flag(ML_TK_GA), "--grad-accum");
    /* The keys of the rows, as the frameworks name them: LLaMA-Factory / TrainingArguments
     * per_device_train_batch_size, TRL ModelConfig lora_r, LLaMA-Factory v1 micro_batch_size. */
    assert_string_equal(ml_tracked_key(ML_TK_BATCH, ML_SD_LF), "per_device_train_batch_size");
    assert_string_equal(ml_tracked_key(ML_TK_BATCH, ML_SD_TA), "per_device_train_batch_size");
    assert_string_equal(ml_tracked_key(ML_TK_RANK, ML_SD_TRL), "lora_r");
    assert_string_equal(ml_tracked_key(ML_TK_BATCH, ML_SD_V1), "micro_batch_size");
    assert_null(ml_tracked_key(ML_TK_OFFLOAD, ML_SD_LF | ML_SD_TA | ML_SD_TRL | ML_SD_V1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_yaml),
        cmocka_unit_test(test_seed_deepspeed),
        cmocka_unit_test(test_key_order_does_not_matter),
        cmocka_unit_test(test_sequence_length),
        cmocka_unit_test(test_numbers_and_booleans),
        cmocka_unit_test(test_precision),
        cmocka_unit_test(test_attention_and_checkpointing),
        cmocka_unit_test(test_optimizer_and_sharding),
        cmocka_unit_test(test_malformed_yaml),
        cmocka_unit_test(test_alias_bomb_and_nesting),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_memory_keys_warn),
        cmocka_unit_test(test_set_overrides),
        cmocka_unit_test(test_ds_number_forms),
        cmocka_unit_test(test_ds_errors),
        cmocka_unit_test(test_ds_offload_and_types),
        cmocka_unit_test(test_check_errors),
        cmocka_unit_test(test_check_torchtune_shards),
        cmocka_unit_test(test_accelerator_config),
        cmocka_unit_test(test_set_repeats),
        cmocka_unit_test(test_check_warnings),
        cmocka_unit_test(test_version_parse),
        cmocka_unit_test(test_save_eval_steps),
        cmocka_unit_test(test_v1_schema),
        cmocka_unit_test(test_file_kinds_and_refused_keys),
        cmocka_unit_test(test_pasted_yaml),
        cmocka_unit_test(test_trl_keys),
        cmocka_unit_test(test_tracked_settings),
        cmocka_unit_test(test_accelerate_config),
        cmocka_unit_test(test_lf_command_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
