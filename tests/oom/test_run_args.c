/*
 * The run settings a log prints (lib/diagnose/run_args.c, ml_log_args): the lines below are the
 * frameworks' own formats, with the values they print.
 *   - ColossalAI#4537 (tests/fixtures/oom/colossalai-4537.log): the benchmark's argparse line
 *     `args: Namespace(config='7b', plugin='gemini', batch_size=16, ..., grad_checkpoint=True,
 *     max_length=4096, ..., tp=4, pp=2, mbs=1, zero=0)`, read whole and in 7-byte pieces.
 *   - transformers' TrainingArguments printed by its __str__ (training_args.py: one `field=value,`
 *     per line, enums as OptimizerNames.X, fsdp=[] and deepspeed=None when off).
 *   - sentence-transformers#3214 (tests/fixtures/oom/st-3214.log): Optuna's trial parameters as a
 *     Python dict, 'per_device_train_batch_size': 3.
 *   - vLLM's `non-default args: {...}` line (vllm/entrypoints/utils.py log_non_default_args).
 *   - llama.cpp's `llama_context: n_ctx = 4096` line (src/llama-context.cpp).
 * And prose that names a key without a value reads nothing.
 */
#include "ml_test.h"

#include "memledger/diagnose.h"

static struct ml_log_args a;

static void read_text(const char *text)
{
    ml_log_args_init(&a);
    ml_log_args_feed(&a, 0, text, strlen(text));
    ml_log_args_end(&a);
}

static void test_namespace(void **state)
{
    (void)state;
    size_t n = 0;
    char *log = ml_test_slurp("tests/fixtures/oom/colossalai-4537.log", &n);
    assert_non_null(log);
    for (size_t piece = 7; piece <= n; piece = piece == 7 ? n : n + 1) {
        ml_log_args_init(&a);
        for (size_t at = 0; at < n; at += piece)
            ml_log_args_feed(&a, 0, log + at, at + piece <= n ? piece : n - at);
        ml_log_args_end(&a);
        assert_int_equal(a.batch, 16);
        assert_false(a.batch_named); /* a script's batch_size */
        assert_int_equal(a.seq_len, 4096);
        assert_int_equal(a.grad_ckpt, 1);
        assert_int_equal(a.tp, 4);
        assert_int_equal(a.pp, 2);
        assert_int_equal(ml_log_args_world(&a), 8);
        assert_true(a.runs & ML_RUN_TRAINING);
        assert_int_equal(a.ref.line, 1);
    }
    free(log);
}

static void test_training_arguments(void **state)
{
    (void)state;
    read_text("TrainingArguments(\n"
              "_n_gpu=1,\n"
              "deepspeed=None,\n"
              "fsdp=[],\n"
              "gradient_accumulation_steps=8,\n"
              "gradient_checkpointing=True,\n"
              "learning_rate=2e-05,\n"
              "optim=OptimizerNames.ADAMW_TORCH,\n"
              "per_device_train_batch_size=2,\n"
              ")\n");
    assert_true(a.runs & ML_RUN_TRAINING);
    assert_true(a.runtimes & ML_RT_HF_TRAINER);
    assert_false(a.runtimes & (ML_RT_DEEPSPEED | ML_RT_ACCELERATE)); /* deepspeed=None, fsdp=[] */
    assert_int_equal(a.batch, 2);
    assert_true(a.batch_named);
    assert_int_equal(a.grad_ckpt, 1);
    assert_int_equal(a.optim_8bit, 0);
    read_text("optim=OptimizerNames.PAGED_ADAMW_8BIT,\nfsdp=[<FSDPOption.FULL_SHARD: 'full_shard'>],\n");
    assert_int_equal(a.optim_8bit, 1);
    assert_int_equal(a.full_shard, 1);
    assert_true(a.runtimes & ML_RT_ACCELERATE);
}

static void test_trial_dict(void **state)
{
    (void)state;
    size_t n = 0;
    char *log = ml_test_slurp("tests/fixtures/oom/st-3214.log", &n);
    assert_non_null(log);
    ml_log_args_init(&a);
    ml_log_args_feed(&a, 0, log, n);
    ml_log_args_end(&a);
    free(log);
    assert_int_equal(a.batch, 3);
    assert_true(a.runs & ML_RUN_TRAINING);
}

static void test_engine_lines(void **state)
{
    (void)state;
    read_text("INFO 08-05 10:12:01 [utils.py:326] non-default args: {'model': 'Qwen/Qwen2.5-7B-Instruct', "
              "'max_model_len': 8192, 'gpu_memory_utilization': 0.95, 'enforce_eager': True}\n");
    assert_true(a.runs & ML_RUN_SERVING);
    assert_true(a.runtimes & ML_RT_VLLM);
    assert_int_equal(a.seq_len, 8192);
    assert_int_equal(a.enforce_eager, 1);
    read_text("vllm serve Qwen/Qwen2.5-7B-Instruct --max-num-seqs 64 --max-model-len 4096");
    assert_true(a.runtimes & ML_RT_VLLM);
    assert_int_equal(a.seq_len, 4096);
    read_text("llama_context: n_ctx         = 4096\nllama_context: n_batch       = 2048\n");
    assert_true(a.runtimes & ML_RT_GGML);
    assert_int_equal(a.seq_len, 4096);
}

/* What the log says is in effect already: the model's quantization, the ROCm arch, llama.cpp's and
 * Ollama's flash attention and KV cache type, an SDPA call. Lines as the programs print them:
 * nlzy/vllm-gfx906#14's command; vllm-project/vllm#16474's collect_env (MI300X gfx942); llama.cpp
 * src/llama-context.cpp ("%s: flash_attn = %d") and src/llama-kv-cache.cpp ("%s: kv_size = %u,
 * ..., type_k = '%s', type_v = '%s'"); Ollama's server config (envconfig: OLLAMA_KV_CACHE_TYPE);
 * CogVideo#63's code line. */
static void test_in_effect(void **state)
{
    (void)state;
    read_text("nalanzeyu/vllm-gfx906 vllm serve /model/Qwen3-32B-autoround-4bit-gptq --tensor-parallel-size 2 "
              "--gpu-memory-utilization 0.9 --max-model-len 4000 --swap-space 4\n");
    assert_int_equal(a.quantized, 1);
    assert_int_equal(a.tp, 2);
    assert_int_equal(a.rocm_fp8, -1); /* "gfx906" in an image's name is no arch line */
    read_text("vllm serve Qwen/Qwen3-32B --quantization None --tensor-parallel-size 2\n");
    assert_int_equal(a.quantized, 0);
    read_text("GPU models and configuration: AMD Instinct MI300X (gfx942:sramecc+:xnack-)\n");
    assert_int_equal(a.rocm_fp8, 1);
    read_text("Name:                    gfx906\n");
    assert_int_equal(a.rocm_fp8, 0);
    read_text("llama_context: flash_attn    = 1\n"
              "llama_kv_cache_unified: kv_size = 8192, type_k = 'q8_0', type_v = 'q8_0', n_layer = 32, "
              "can_shift = 1, padding = 256\n");
    assert_int_equal(a.attn_efficient, 1);
    assert_int_equal(a.kv_bits, 8);
    read_text("llama_new_context_with_model: flash_attn = 0\n");
    assert_int_equal(a.attn_efficient, 0);
    assert_int_equal(a.kv_bits, 0);
    read_text("time=2025-01-10T10:00:00.000Z level=INFO source=routes.go:1259 msg=\"server config\" "
              "env=\"map[OLLAMA_FLASH_ATTENTION:true OLLAMA_KV_CACHE_TYPE:q4_0 OLLAMA_NUM_PARALLEL:0]\"\n");
    assert_int_equal(a.attn_efficient, 1);
    assert_int_equal(a.kv_bits, 4);
    read_text("llama-server -m model.gguf --cache-type-k q4_0 --cache-type-v f16\n");
    assert_int_equal(a.kv_bits, 16); /* the widest: V at f16 still halves with q8_0 */
    read_text("    hidden_states = F.scaled_dot_product_attention(\n");
    assert_int_equal(a.attn_efficient, 1);
    assert_int_equal(a.n_read, 0); /* a call, not a setting */
}

static void test_prose_reads_nothing(void **state)
{
    (void)state;
    read_text("the batch_size is too large for gradient_checkpointing to help\n");
    assert_int_equal(a.n_read, 0);
    assert_int_equal(a.batch, 0);
    assert_int_equal(a.grad_ckpt, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_namespace),           cmocka_unit_test(test_training_arguments),
        cmocka_unit_test(test_trial_dict),          cmocka_unit_test(test_engine_lines),
        cmocka_unit_test(test_prose_reads_nothing), cmocka_unit_test(test_in_effect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
