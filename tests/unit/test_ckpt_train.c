/*
 * Training on a quantized checkpoint (docs/ledger.md, "Training on a quantized checkpoint"): how
 * each stored format loads (ml_train_checkpoint_load), the refusals in one line, and the bytes of
 * the frozen base. The expected bytes are written from the checkpoints' own tensor layouts
 * (AutoAWQ WQLinear_GEMM / GPTQ QuantLinear buffers), not read back from the code.
 */
#include "ml_test.h"

#include "memledger/catalog.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/train.h"

static struct ml_arch arch;
static struct ml_inventory inv;
static struct ml_ledger led;
static struct ml_warnings sink;

static void model(const char *name, enum ml_name_quant q, uint32_t bits)
{
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find(name);
    assert_non_null(e);
    assert_int_equal(ml_catalog_arch(e, &arch, &d), ML_OK);
    ml_arch_apply_name_quant(&arch, q, bits);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
}

static struct ml_cluster gpu(const char *g, uint32_t n)
{
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_gpu_resolve(g, &c.gpu, &d), ML_OK);
    c.gpus_per_node = n;
    c.nodes = 1;
    return c;
}

static struct ml_train run(enum ml_framework fw, enum ml_method m)
{
    struct ml_train t;
    ml_train_defaults(&t, fw);
    sink.n = 0;
    t.warnings = &sink;
    t.method = m;
    t.lora_rank = 8;
    return t;
}

/* Check and ledger; the check's status. */
static enum ml_status train(struct ml_train *t, const struct ml_cluster *c, struct ml_diag *d)
{
    ml_diag_init(d);
    enum ml_status st = ml_train_check(t, &arch, c, d);
    if (st != ML_OK)
        return st;
    assert_int_equal(ml_ledger_train(&arch, &inv, t, c, NULL, &led, d), ML_OK);
    return ML_OK;
}

static bool noted(const char *what)
{
    for (uint32_t i = 0; i < led.n_notes; i++)
        if (strstr(led.notes[i], what))
            return true;
    return false;
}

/* Meta-Llama-3-8B's linears: per layer q 4096x4096, k and v 4096x1024, o 4096x4096, gate and
 * up 4096x14336, down 14336x4096 = 218,103,808 weights; 32 layers. Outside them: embed_tokens
 * and lm_head 128256 x 4096 each, 65 norms of 4096. */
#define LIN_PER_LAYER 218103808ull
#define LIN           (32ull * LIN_PER_LAYER)
#define REST          (2ull * 128256 * 4096 + 65ull * 4096)

static void test_awq_gptq_bytes(void **state)
{
    (void)state;
    struct ml_cluster c = gpu("h100", 1);
    struct ml_diag d;
    /* TechxGenus/Meta-Llama-3-8B-Instruct-AWQ (the LLaMA-Factory example): AutoAWQ GEMM 4-bit,
     * group 128. WQLinear_GEMM stores qweight int32 (in x out/8), qzeros int32 (in/128 x out/8)
     * and scales fp16 (in/128 x out): in x out x (1/2 + 1/256 + 1/64) B; everything else bf16.
     * 5,727,854,592 B: the 5.73 GB the Hub lists for the Llama-3-8B-Instruct AWQ uploads. */
    model("meta-llama-3-8b", ML_NAME_QUANT_AWQ, 0);
    struct ml_train t = run(ML_FW_LLAMAFACTORY, ML_METHOD_LORA);
    assert_int_equal(train(&t, &c, &d), ML_OK);
    uint64_t awq = LIN / 2 + LIN / 256 + LIN / 64 + 2 * REST;
    assert_int_equal(awq, 5727854592ull);
    assert_int_equal(ml_ledger_bytes(&led, ML_C_WEIGHTS_FROZEN) + ml_ledger_bytes(&led, ML_C_QUANT_STATE), awq);
    assert_int_equal(ml_ledger_bytes(&led, ML_C_QUANT_STATE), LIN / 256 + LIN / 64);
    /* Not the 2 B per parameter of the bf16 model (15.0 GiB). */
    assert_true(ml_ledger_bytes(&led, ML_C_WEIGHTS_FROZEN) < 8030261248ull);
    /* The largest weight (gate/up/down, 4096 x 14336) dequantized per call: 2 B each; AWQ's
     * autograd Function keeps no dequantized copy. */
    assert_int_equal(ml_ledger_bytes(&led, ML_C_QLORA_DEQUANT), 2ull * 4096 * 14336);
    assert_true(noted("LoRA on the checkpoint as stored (awq 4-bit"));
    /* The host reads the checkpoint as stored. */
    assert_int_equal(led.host.load_bytes, awq);

    /* GPTQ 8-bit (a -GPTQ-Int8 upload), group 128: qweight in x out/4 B, qzeros (in/128 x out)
     * 1 B, scales 2 B per group and column. The torch kernel's dequantized weight is kept for
     * backward: one layer's (2 B x 218,103,808) under gradient checkpointing. */
    model("meta-llama-3-8b", ML_NAME_QUANT_GPTQ, 8);
    t = run(ML_FW_LLAMAFACTORY, ML_METHOD_LORA);
    assert_int_equal(train(&t, &c, &d), ML_OK);
    uint64_t gptq8 = LIN + LIN / 128 + LIN / 64 + 2 * REST;
    assert_int_equal(ml_ledger_bytes(&led, ML_C_WEIGHTS_FROZEN) + ml_ledger_bytes(&led, ML_C_QUANT_STATE), gptq8);
    assert_int_equal(ml_ledger_bytes(&led, ML_C_QLORA_DEQUANT), 2ull * 4096 * 14336 + 2 * LIN_PER_LAYER);
    /* Without gradient checkpointing every layer's dequantized weights stay for backward. */
    t = run(ML_FW_LLAMAFACTORY, ML_METHOD_LORA);
    t.grad_ckpt = ML_GC_OFF;
    assert_int_equal(train(&t, &c, &d), ML_OK);
    assert_int_equal(ml_ledger_bytes(&led, ML_C_QLORA_DEQUANT), 2ull * 4096 * 14336 + 2 * LIN);
}

static void test_loads(void **state)
{
    (void)state;
    struct ml_train lf, hf;
    ml_train_defaults(&lf, ML_FW_LLAMAFACTORY);
    ml_train_defaults(&hf, ML_FW_HF);
    model("meta-llama-3-8b", ML_NAME_QUANT_NONE, 0);
    assert_int_equal(ml_train_checkpoint_load(&lf, &arch), ML_LOAD_PLAIN);
    model("meta-llama-3-8b", ML_NAME_QUANT_AWQ, 0);
    assert_int_equal(ml_train_checkpoint_load(&hf, &arch), ML_LOAD_PACKED);
    model("meta-llama-3-8b", ML_NAME_QUANT_BNB4, 0);
    assert_int_equal(ml_train_checkpoint_load(&lf, &arch), ML_LOAD_BNB);
    /* fp8 and mxfp4: LLaMA-Factory dequantizes at load; transformers alone cannot train them. */
    model("qwen3-8b", ML_NAME_QUANT_FP8, 0);
    assert_int_equal(ml_train_checkpoint_load(&lf, &arch), ML_LOAD_DEQUANT);
    assert_int_equal(ml_train_checkpoint_load(&hf, &arch), ML_LOAD_UNTRAINABLE);
    hf.dequantize = true;
    assert_int_equal(ml_train_checkpoint_load(&hf, &arch), ML_LOAD_DEQUANT);
    hf.dequantize = false;
    model("gpt-oss-20b", ML_NAME_QUANT_NONE, 0);
    assert_int_equal(ml_train_checkpoint_load(&lf, &arch), ML_LOAD_DEQUANT);
    assert_int_equal(ml_train_checkpoint_load(&hf, &arch), ML_LOAD_UNTRAINABLE);
    /* compressed-tensors float weights stay compressed; fbgemm_fp8 never trains. */
    arch.wq = (struct ml_weight_quant){.method = ML_WQ_FP8, .bits = 8, .scale_bytes = 4, .name = "compressed-tensors"};
    assert_int_equal(ml_train_checkpoint_load(&lf, &arch), ML_LOAD_PACKED);
    arch.wq = (struct ml_weight_quant){.method = ML_WQ_FP8, .bits = 8, .scale_bytes = 4, .name = "fbgemm_fp8"};
    assert_int_equal(ml_train_checkpoint_load(&lf, &arch), ML_LOAD_UNTRAINABLE);
}

static void test_dequantized(void **state)
{
    (void)state;
    struct ml_cluster c = gpu("h100", 8);
    struct ml_diag d;
    /* Qwen3-8B-FP8 under LLaMA-Factory: FineGrainedFP8Config(dequantize=True) leaves a bf16
     * model, so full fine-tuning under ZeRO-3 runs (the PTQ check exempts fp8), 2 B per
     * parameter for the bf16 copy ZeRO-3 partitions. */
    model("qwen3-8b", ML_NAME_QUANT_FP8, 0);
    struct ml_train t = run(ML_FW_LLAMAFACTORY, ML_METHOD_FULL);
    ml_zero_preset(&t, 3, false);
    assert_int_equal(train(&t, &c, &d), ML_OK);
    assert_true(noted("loads it dequantized to bf16 (FineGrainedFP8Config(dequantize=True))"));
    assert_int_equal(ml_ledger_bytes(&led, ML_C_QUANT_STATE), 0);
    /* gpt-oss-20b LoRA: every parameter at 2 B (the experts dequantized from MXFP4). */
    model("gpt-oss-20b", ML_NAME_QUANT_NONE, 0);
    c = gpu("h100", 1);
    t = run(ML_FW_LLAMAFACTORY, ML_METHOD_LORA);
    assert_int_equal(train(&t, &c, &d), ML_OK);
    assert_int_equal(ml_ledger_bytes(&led, ML_C_WEIGHTS_FROZEN), 2 * inv.total_params);
    /* quantization_bit on it is ignored, as LLaMA-Factory warns. */
    t = run(ML_FW_LLAMAFACTORY, ML_METHOD_QLORA);
    t.quant_bits = 4;
    assert_int_equal(train(&t, &c, &d), ML_OK);
    assert_int_equal(t.method, ML_METHOD_LORA);
    assert_int_equal(t.quant_bits, 0);
    assert_non_null(strstr(sink.text[0], "will not affect on the PTQ-quantized models"));
    assert_int_equal(ml_ledger_bytes(&led, ML_C_WEIGHTS_FROZEN), 2 * inv.total_params);
}

static void test_refusals(void **state)
{
    (void)state;
    struct ml_cluster c1 = gpu("h100", 1), c8 = gpu("h100", 8);
    struct ml_diag d;
    /* Full fine-tuning of a checkpoint kept quantized (AWQ, GPTQ, bitsandbytes). */
    model("meta-llama-3-8b", ML_NAME_QUANT_AWQ, 0);
    struct ml_train t = run(ML_FW_LLAMAFACTORY, ML_METHOD_FULL);
    assert_int_equal(train(&t, &c1, &d), ML_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "stored as awq"));
    assert_non_null(strstr(d.msg, "Quantized models can only be used for the LoRA or OFT tuning."));
    t = run(ML_FW_HF, ML_METHOD_FREEZE);
    model("meta-llama-3-8b", ML_NAME_QUANT_BNB4, 0);
    assert_int_equal(train(&t, &c1, &d), ML_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "stored as bitsandbytes"));
    /* LLaMA-Factory refuses ZeRO-3 / FSDP with a PTQ checkpoint. */
    model("meta-llama-3-8b", ML_NAME_QUANT_GPTQ, 4);
    t = run(ML_FW_LLAMAFACTORY, ML_METHOD_LORA);
    ml_zero_preset(&t, 3, false);
    assert_int_equal(train(&t, &c8, &d), ML_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "DeepSpeed ZeRO-3 or FSDP is incompatible with PTQ-quantized models"));
    t = run(ML_FW_TRL, ML_METHOD_LORA);
    t.fsdp = ML_FSDP_FULL_SHARD;
    t.fsdp_version = 2;
    assert_int_equal(train(&t, &c8, &d), ML_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "stored as gptq with ZeRO-3 or FSDP is not modelled"));
    /* fp8 / mxfp4 under transformers alone: named, with the way out. */
    model("qwen3-8b", ML_NAME_QUANT_FP8, 0);
    t = run(ML_FW_HF, ML_METHOD_LORA);
    assert_int_equal(train(&t, &c1, &d), ML_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "stored as fp8"));
    assert_non_null(strstr(d.msg, "FineGrainedFP8Config(dequantize=True)): --set dequantize=true"));
    t.dequantize = true;
    assert_int_equal(train(&t, &c1, &d), ML_OK);
    model("gpt-oss-20b", ML_NAME_QUANT_NONE, 0);
    t = run(ML_FW_TRL, ML_METHOD_LORA);
    assert_int_equal(train(&t, &c1, &d), ML_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "Mxfp4Config(dequantize=True)"));
    arch.wq = (struct ml_weight_quant){.method = ML_WQ_FP8, .bits = 8, .scale_bytes = 4, .name = "fbgemm_fp8"};
    t = run(ML_FW_LLAMAFACTORY, ML_METHOD_LORA);
    assert_int_equal(train(&t, &c1, &d), ML_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "FbgemmFp8HfQuantizer.is_trainable is False"));
    /* LitGPT converts a 16-bit checkpoint. */
    model("meta-llama-3-8b", ML_NAME_QUANT_AWQ, 0);
    t = run(ML_FW_LITGPT, ML_METHOD_LORA);
    assert_int_equal(train(&t, &c1, &d), ML_ERR_UNSUPPORTED);
    /* The ledger refuses an unchecked full fine-tuning too, never 2 B per parameter. */
    t = run(ML_FW_LLAMAFACTORY, ML_METHOD_FULL);
    ml_diag_init(&d);
    assert_int_equal(ml_ledger_train(&arch, &inv, &t, &c1, NULL, &led, &d), ML_ERR_UNSUPPORTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_awq_gptq_bytes),
        cmocka_unit_test(test_loads),
        cmocka_unit_test(test_dequantized),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
