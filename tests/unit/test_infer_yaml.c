/*
 * LLaMA-Factory inference YAMLs (lib/setup/infer_yaml.c) against LLaMA-Factory's own defaults
 * (hparams/model_args.py VllmArguments: vllm_maxlen 4096, vllm_gpu_util 0.7, vllm_max_lora_rank
 * 32; SGLangArguments: sglang_maxlen 4096, sglang_mem_fraction 0.7; data_args.py cutoff_len 2048;
 * generating_args.py max_new_tokens 1024), and vLLM's LoRA slots against the shapes of
 * Qwen3-4B's config.json worked by hand from vllm/lora/layers/base_linear.py create_lora_weights.
 */
#include "ml_test.h"

#include "memledger/catalog.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/model_ref.h"

static struct ml_arch arch;
static struct ml_inventory inv;
static struct ml_infer_yaml y;

static void model(const char *name)
{
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find(name);
    assert_non_null(e);
    assert_int_equal(ml_catalog_arch(e, &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
}

static enum ml_status read_yaml(const char *text, struct ml_diag *d)
{
    ml_diag_init(d);
    return ml_infer_yaml_read(text, strlen(text), "t.yaml", &y, d);
}

/* Read text and apply it to the defaults on n GPUs. */
static struct ml_infer apply(const char *text, uint32_t n)
{
    struct ml_diag d;
    assert_int_equal(read_yaml(text, &d), ML_OK);
    struct ml_infer s;
    ml_infer_defaults(&s);
    ml_infer_yaml_apply(&y, &arch, n, NULL, &s);
    return s;
}

static void test_llamafactory_defaults(void **state)
{
    (void)state;
    model("qwen3-4b-2507");
    /* examples/inference/qwen3_lora_sft.yaml with infer_backend: vllm, on 2 GPUs */
    struct ml_infer s = apply("model_name_or_path: Qwen/Qwen3-4B-Instruct-2507\n"
                              "adapter_name_or_path: saves/qwen3-4b/lora/sft\n"
                              "template: qwen3_nothink\ninfer_backend: vllm\ntrust_remote_code: true\n",
                              2);
    assert_string_equal(y.model, "Qwen/Qwen3-4B-Instruct-2507");
    assert_int_equal(s.engine, ML_ENGINE_VLLM);
    assert_int_equal(s.max_model_len, 4096);
    assert_int_equal(s.gpu_util_permille, 700);
    assert_int_equal(s.tp, 2);
    assert_true(s.enable_lora);
    assert_int_equal(s.max_lora_rank, 32);
    assert_int_equal(s.max_loras, 1);
    assert_int_equal(y.warnings.n, 0);
    /* huggingface (the default backend): 2048 prompt + 1024 new tokens; bf16 for a bf16 checkpoint */
    s = apply("model_name_or_path: Qwen/Qwen3-4B-Instruct-2507\ntemplate: qwen3_nothink\n", 1);
    assert_int_equal(s.engine, ML_ENGINE_HF);
    assert_int_equal(s.context, 3072);
    assert_int_equal(s.prompt, 2048);
    assert_int_equal(s.precision, ML_PREC_BF16);
    assert_false(s.enable_lora);
    /* SGLang */
    s = apply("model_name_or_path: x\ninfer_backend: sglang\nsglang_tp_size: -1\n", 4);
    assert_int_equal(s.max_model_len, 4096);
    assert_int_equal(s.mem_fraction_static_permille, 700);
    assert_int_equal(s.tp, 4);
}

static void test_keys_and_order(void **state)
{
    (void)state;
    model("qwen3-4b-2507");
    /* The engine mapping over LLaMA-Factory's key, whatever the order; a JSON string as LLaMA-Factory
     * json.loads it. */
    struct ml_infer s =
        apply("vllm_config: '{\"max_model_len\": 2048, \"max_num_seqs\": 16, \"enforce_eager\": true}'\n"
              "vllm_maxlen: 8192\nvllm_gpu_util: 0.95\nmodel_name_or_path: m\ninfer_backend: vllm\n",
              1);
    assert_int_equal(s.max_model_len, 2048);
    assert_int_equal(s.max_num_seqs, 16);
    assert_true(s.enforce_eager);
    assert_int_equal(s.gpu_util_permille, 950);
    const char *text = NULL;
    assert_string_equal(ml_infer_yaml_setter(&y, ML_ENGINE_VLLM, "max-model-len", &text), "vllm_config.max_model_len");
    assert_string_equal(text, "2048");
    assert_null(ml_infer_yaml_setter(&y, ML_ENGINE_VLLM, "tp", NULL));
    /* A mapping value, and huggingface's keys */
    s = apply("model_name_or_path: m\ninfer_backend: vllm\nvllm_config:\n  max_loras: 4\n  max_lora_rank: 8\n", 1);
    assert_int_equal(s.max_loras, 4);
    assert_int_equal(s.max_lora_rank, 8);
    s = apply(
        "model_name_or_path: m\ncutoff_len: 1000\nmax_new_tokens: 500\nquantization_bit: 4\nflash_attn: disabled\n"
        "num_beams: 3\n",
        1);
    assert_int_equal(s.context, 1500);
    assert_int_equal(s.prompt, 1000);
    assert_int_equal(s.quant, ML_QUANT_NF4);
    assert_true(s.double_quant); /* QuantizationArguments double_quantization: true */
    assert_int_equal(s.attn, ML_ATTN_EAGER);
    assert_int_equal(s.batch, 3);
    /* adapter_name_or_path: a comma-separated list (ModelArguments.__post_init__); an empty one is none. */
    s = apply("model_name_or_path: m\ninfer_backend: vllm\nadapter_name_or_path: a, b\n", 1);
    assert_int_equal(y.n_adapters, 2);
    assert_true(s.enable_lora);
    s = apply("model_name_or_path: m\ninfer_backend: vllm\nadapter_name_or_path: ''\n", 1);
    assert_int_equal(y.n_adapters, 0);
    assert_false(s.enable_lora);
    /* A key of another backend is ignored with a warning; a near miss is named. */
    s = apply("model_name_or_path: m\nvllm_maxlen: 8192\nvllm_gpu_utill: 0.5\n", 1);
    assert_int_equal(s.max_model_len, 0);
    assert_int_equal(y.warnings.n, 2);
    assert_non_null(strstr(y.warnings.text[0], "did you mean 'vllm_gpu_util'"));
    assert_non_null(strstr(y.warnings.text[1], "vllm backend only"));
}

static void test_dtype_auto(void **state)
{
    (void)state;
    model("qwen3-4b-2507");
    struct ml_infer s = apply("model_name_or_path: m\ninfer_backend: vllm\ninfer_dtype: float32\n", 1);
    assert_int_equal(s.precision, ML_PREC_FP32);
    /* vllm_engine.py: a GPTQ checkpoint with infer_dtype auto is served in float16 */
    arch.wq.method = ML_WQ_GPTQ;
    s = apply("model_name_or_path: m\ninfer_backend: vllm\n", 1);
    assert_int_equal(s.precision, ML_PREC_FP16);
    /* infer_optim_dtype: an fp32 checkpoint under huggingface loads in fp16 */
    arch.wq.method = ML_WQ_NONE;
    arch.torch_dtype = ML_DTYPE_FP32;
    s = apply("model_name_or_path: m\n", 1);
    assert_int_equal(s.precision, ML_PREC_FP16);
}

static void test_errors(void **state)
{
    (void)state;
    struct ml_diag d;
    assert_int_equal(read_yaml("model_name_or_path: m\ninfer_backend: tgi\n", &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "is not one of huggingface, vllm, sglang, ktransformers"));
    assert_int_equal(d.line, 2);
    assert_int_equal(read_yaml("model_name_or_path: m\nstage: sft\ndataset: alpaca\nfinetuning_type: lora\n", &d),
                     ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "memledger train --config t.yaml"));
    assert_int_equal(read_yaml("model_name_or_path: m\ninfer_backend: vllm\nvllm_gpu_util: 0\n", &d), ML_ERR_INVALID);
    assert_int_equal(read_yaml("model_name_or_path: m\nexport_dir: out\n", &d), ML_ERR_INVALID);
    assert_int_equal(read_yaml("model_name_or_path: m\nmodel_name_or_path: n\n", &d), ML_ERR_PARSE);
    assert_int_equal(read_yaml("- a\n- b\n", &d), ML_ERR_PARSE);
}

/* vLLM LoRA slots, by hand from Qwen3-4B's config.json: hidden 2560, 32 heads and 8 KV heads of
 * 128, intermediate 9728, 36 layers. Per layer (in + out): q 2560 + 4096, k and v 2560 + 1024,
 * o 4096 + 2560, gate and up 2560 + 9728, down 9728 + 2560 = 57,344; x rank x 36 x 2 B. At tp 2
 * the column-parallel outputs and the row-parallel inputs halve: 37,632 a layer. */
static void test_lora_slots(void **state)
{
    (void)state;
    model("qwen3-4b-2507");
    struct ml_infer s;
    ml_infer_defaults(&s);
    s.engine = ML_ENGINE_VLLM;
    assert_int_equal(ml_infer_lora_slot_bytes(&inv, &s), 0); /* enable_lora off */
    s.enable_lora = true;
    s.max_lora_rank = 32;
    assert_int_equal(ml_infer_lora_slot_bytes(&inv, &s), 57344ull * 32 * 36 * 2);
    s.tp = 2;
    assert_int_equal(ml_infer_lora_slot_bytes(&inv, &s), 37632ull * 32 * 36 * 2);
    s.tp = 1;
    s.max_loras = 3;
    assert_int_equal(ml_infer_lora_slot_bytes(&inv, &s), 57344ull * 32 * 36 * 2 * 3);
    /* The KV pool shrinks by the slots (weights in vLLM's budget). */
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_gpu_resolve("h100", &c.gpu, &d), ML_OK);
    c.gpus_per_node = c.nodes = 1;
    static struct ml_ledger l;
    struct ml_serve with, without;
    s.max_loras = 1;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &l, &with, &d), ML_OK);
    s.enable_lora = false;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &l, &without, &d), ML_OK);
    assert_int_equal(without.kv_bytes - with.kv_bytes, 57344ull * 32 * 36 * 2);
    /* Qwen3-VL-4B: the same language model; its vision tower gets no slots. */
    model("qwen3-vl-4b-instruct");
    s.enable_lora = true;
    assert_int_equal(ml_infer_lora_slot_bytes(&inv, &s), 57344ull * 32 * 36 * 2);
}

/* Flags after the file (`memledger infer --config`): a flag that changes what a key set is
 * reported with that key and its text; one that repeats the file's value, or sets what the file
 * leaves out, is not. LLaMA-Factory's keys: vllm_maxlen, vllm_gpu_util, infer_backend. */
static void test_flags_over_file(void **state)
{
    (void)state;
    model("qwen3-8b");
    struct ml_infer s = apply("model_name_or_path: Qwen/Qwen3-8B\ninfer_backend: vllm\nvllm_maxlen: 16384\n", 1);
    struct ml_infer_flag f[4] = {
        {ml_infer_opt_find("max-model-len"), "32768", 32768},
        {ml_infer_opt_find("max-model-len"), "16384", 16384},      /* the file's own value again: no warning */
        {ml_infer_opt_find("gpu-memory-utilization"), "0.8", 800}, /* vllm_gpu_util not in the file */
        {ml_infer_opt_find("engine"), "vllm", ML_ENGINE_VLLM},     /* infer_backend: vllm already */
    };
    const char *key[4], *text[4];
    ml_infer_yaml_flags(&y, f, 1, &s, key, text);
    assert_string_equal(key[0], "vllm_maxlen");
    assert_string_equal(text[0], "16384");
    assert_int_equal(s.max_model_len, 32768);
    s = apply("model_name_or_path: Qwen/Qwen3-8B\ninfer_backend: vllm\nvllm_maxlen: 16384\n", 1);
    ml_infer_yaml_flags(&y, f + 1, 3, &s, key, text);
    assert_null(key[0]);
    assert_null(key[1]);
    assert_null(key[2]);
    assert_int_equal(s.gpu_util_permille, 800);
    struct ml_infer_flag sg = {ml_infer_opt_find("engine"), "sglang", ML_ENGINE_SGLANG};
    ml_infer_yaml_flags(&y, &sg, 1, &s, key, text);
    assert_string_equal(key[0], "infer_backend");
    assert_string_equal(text[0], "vllm");
    assert_int_equal(s.engine, ML_ENGINE_SGLANG);
    ml_infer_yaml_flags(NULL, f, 1, &s, key, text); /* no file: nothing to override */
    assert_null(key[0]);
    /* vllm from the file: the tensor-parallel size is the GPU count unless --tp is given. */
    struct ml_infer_flag tp = {ml_infer_opt_find("tp"), "2", 2};
    s.engine = ML_ENGINE_VLLM;
    assert_true(ml_infer_yaml_tp_is_gpus(&y, &s, f, 4));
    assert_false(ml_infer_yaml_tp_is_gpus(&y, &s, &tp, 1));
    assert_false(ml_infer_yaml_tp_is_gpus(NULL, &s, f, 4));
    s.engine = ML_ENGINE_HF;
    assert_false(ml_infer_yaml_tp_is_gpus(&y, &s, f, 4));
}

/* Qwen's AWQ and GPTQ-Int4 checkpoints of Qwen2.5-72B pad intermediate_size 29568 -> 29696
 * (their config.json; data/models/params.jsonl): --quant awq on the built-in model reads the
 * AWQ checkpoint's config; a model with no such checkpoint, or read with its own quantization,
 * keeps its own. */
static void test_serving_variant(void **state)
{
    (void)state;
    struct ml_model_ref m;
    memset(&m, 0, sizeof(m));
    (void)snprintf(m.name, sizeof(m.name), "%s", "qwen2.5-72b");
    m.catalog_params = 72706203648ull;
    struct ml_infer s;
    ml_infer_defaults(&s);
    assert_null(ml_catalog_serving_variant(&m, &s)); /* no --quant */
    s.quant = ML_QUANT_AWQ;
    const struct ml_catalog_entry *e = ml_catalog_serving_variant(&m, &s);
    assert_non_null(e);
    assert_string_equal(e->hub_id, "Qwen/Qwen2.5-72B-Instruct-AWQ");
    s.quant = ML_QUANT_GPTQ;
    e = ml_catalog_serving_variant(&m, &s);
    assert_non_null(e);
    assert_string_equal(e->hub_id, "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4");
    m.arch.wq.method = ML_WQ_AWQ; /* the checkpoint says how it is quantized */
    assert_null(ml_catalog_serving_variant(&m, &s));
    m.arch.wq.method = ML_WQ_NONE;
    (void)snprintf(m.name, sizeof(m.name), "%s", "llama-3.1-8b");
    assert_null(ml_catalog_serving_variant(&m, &s));
}

/* ml_infer_yaml_load through the caller's read: the golden case's YAML (Qwen/Qwen3-8B, vllm_maxlen
 * 16384); a read that fails is the error. */
static enum ml_status slurp_read(const char *path, size_t max, struct ml_buf *out, struct ml_diag *d)
{
    size_t n = 0;
    char *text = ml_test_slurp(path, &n);
    ml_diag_at(d, path, 0, 0);
    if (!text)
        return ml_diag_set(d, ML_ERR_IO, "No such file or directory");
    assert_true(n <= max);
    enum ml_status st = ml_buf_add(out, text, n);
    free(text);
    return st;
}

static void test_load(void **state)
{
    (void)state;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_infer_yaml_load("tests/golden/infer/lf-vllm-keys-override/config.yaml", slurp_read, &y, &d),
                     ML_OK);
    assert_string_equal(y.model, "Qwen/Qwen3-8B");
    model("qwen3-8b");
    struct ml_infer s;
    ml_infer_defaults(&s);
    ml_infer_yaml_apply(&y, &arch, 1, NULL, &s);
    assert_int_equal(s.max_model_len, 16384);
    assert_int_equal(ml_infer_yaml_load("tests/none.yaml", slurp_read, &y, &d), ML_ERR_IO);
    assert_string_equal(d.origin, "tests/none.yaml");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llamafactory_defaults),
        cmocka_unit_test(test_keys_and_order),
        cmocka_unit_test(test_dtype_auto),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_lora_slots),
        cmocka_unit_test(test_flags_over_file),
        cmocka_unit_test(test_serving_variant),
        cmocka_unit_test(test_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
