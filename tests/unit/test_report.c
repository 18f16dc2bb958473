/*
 * The reports as a library (lib/render): the JSON contracts of docs/cli/diagnose.md and
 * docs/cli/compare.md from structs filled by hand, without the CLI. Expected bytes and numbers are
 * written from the contract and worked out by hand, not copied from the output.
 */
#include "ml_test.h"

#include "memledger/diagnose.h"
#include "memledger/fit.h"
#include "memledger/infer.h"
#include "memledger/ledger.h"
#include "memledger/monitor.h"
#include "memledger/oom.h"
#include "memledger/oom_settings.h"
#include "memledger/report.h"

static struct ml_incident inc;
static struct ml_diagnosis dg;
static struct ml_diag_run run;

/* Two logs, ten lines, no out-of-memory event: the short document (inputs, lines, bytes, empty
 * events and findings, and the context: what was read, a cut line included) and the one-line text. */
static void test_diagnose_no_event(void **state)
{
    (void)state;
    ml_incident_init(&inc);
    inc.n_files = 2;
    inc.lines = 10;
    inc.bytes = 123;
    const char *names[2] = {"a.log", "<stdin>"};
    struct ml_diag_report rep = {&inc, NULL, &run, names, 2, false, false};
    struct ml_buf out;
    ml_buf_init(&out, 0);
    assert_int_equal(ml_render_diagnose_json(&out, &rep), ML_OK);
    assert_string_equal(out.buf, "{\n"
                                 "  \"schema\": \"memledger/1\",\n"
                                 "  \"inputs\": [\n"
                                 "    \"a.log\",\n"
                                 "    \"<stdin>\"\n"
                                 "  ],\n"
                                 "  \"lines\": 10,\n"
                                 "  \"bytes\": 123,\n"
                                 "  \"events\": [],\n"
                                 "  \"findings\": [],\n"
                                 "  \"context\": {\n"
                                 "    \"versions\": {},\n"
                                 "    \"cache_flush_warnings\": 0,\n"
                                 "    \"truncated_lines\": 0,\n"
                                 "    \"longest_line_bytes\": 0,\n"
                                 "    \"json_lines\": 0,\n"
                                 "    \"cut_messages\": 0\n"
                                 "  }\n"
                                 "}\n");
    ml_buf_reset(&out);
    ml_render_diagnose_text(&out, &rep, NULL);
    assert_string_equal(out.buf, "memledger diagnose: no out-of-memory event in 2 logs (10 lines)\n");
    ml_buf_release(&out);
}

/* One classic allocator message: the numbers it states, null for those it does not, and the
 * reserved-but-unallocated bytes derived from "reserved in total" (1000 - 400 = 600). */
static void test_diagnose_event(void **state)
{
    (void)state;
    ml_incident_init(&inc);
    inc.n_files = 1;
    inc.n_events = 1;
    inc.n_events_seen = 3;
    struct ml_oom_event *e = &inc.ev[0];
    e->kind = ML_OOM_ALLOCATOR;
    e->device = ML_DEV_CUDA;
    e->gpu = 1;
    e->rank = -1;
    e->step = -1;
    e->line = 14;
    e->has = ML_OOM_F_REQUESTED | ML_OOM_F_ALLOCATED | ML_OOM_F_RESERVED;
    e->requested = 36;
    e->allocated = 400;
    e->reserved = 1000;
    memset(&dg, 0, sizeof(dg));
    dg.primary = 0;
    const char *names[1] = {"oom.log"};
    struct ml_diag_report rep = {&inc, &dg, &run, names, 1, false, false};
    struct ml_buf out;
    ml_buf_init(&out, 0);
    assert_int_equal(ml_render_diagnose_json(&out, &rep), ML_OK);
    const char *want[] = {
        "  \"messages_seen\": 3,\n",
        "      \"gpu\": 1,\n",
        "      \"rank\": null,\n",
        "      \"ranks\": [],\n",
        "      \"requested_bytes\": 36,\n",
        "      \"total_bytes\": null,\n",
        "      \"allocated_bytes\": 400,\n",
        "      \"reserved_unallocated_bytes\": 600,\n",
        "      \"reserved_bytes\": 1000,\n",
        "      \"step\": null,\n",
        "      \"file\": \"oom.log\",\n",
        "      \"line\": 14,\n",
        "  \"primary\": 0,\n",
        "  \"findings\": [],\n",
        "  \"ledger\": null,\n",
        "  \"serving_ledger\": null,\n",
        "  \"checks\": []\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(out.buf, want[i]))
            fail_msg("missing %s in\n%s", want[i], out.buf);
    ml_buf_release(&out);
}

/* compare: error per mille rounded half away from zero, off only beyond the tolerance. */
static void test_compare_rows(void **state)
{
    (void)state;
    static struct ml_ledger l;
    static struct ml_measured m;
    memset(&l, 0, sizeof(l));
    memset(&m, 0, sizeof(m));
    l.n = 2;
    l.e[0].id = ML_C_WEIGHTS_FROZEN;
    l.e[0].bytes = 1100;
    l.e[1].id = ML_C_GRADIENTS;
    l.e[1].bytes = 4;
    l.peak_allocated = 2000;
    m.weights.ok = true;
    m.weights.bytes = 1000; /* ledger 1100: +10.0 %, exactly the default tolerance */
    m.gradients.ok = true;
    m.gradients.bytes = 3; /* ledger 4: +33.33 % -> 333 */
    struct ml_compare_row r[ML_COMPARE_ROWS];
    assert_int_equal(ml_compare_rows(&m, &l, 10, r), 1); /* gradients */
    assert_string_equal(r[0].id, "weights");
    assert_true(r[0].has_error);
    assert_int_equal(r[0].error_permille, 100);
    assert_false(r[0].off);
    assert_int_equal(r[1].error_permille, 333);
    assert_true(r[1].off);
    assert_false(r[2].measured_ok); /* optimizer: not measured */
    /* activations: peak 2000 - weights 1100 - gradients 4 */
    assert_int_equal(r[3].ledger, 896);
    assert_int_equal(ml_compare_rows(&m, &l, 9, r), 2); /* weights too */
    assert_true(r[0].off);
}

/* The engines' flags as their sources spell them: vLLM vllm/engine/arg_utils.py
 * (EngineArgs.add_cli_args), SGLang python/sglang/srt/server_args.py (ServerArgs fields, each the
 * flag of its name; kv_cache_dtype choices auto, fp8_e5m2, fp8_e4m3, ...: no "fp8"). */
static void test_serve_flags(void **state)
{
    (void)state;
    assert_string_equal(ml_setting_name(ML_SET_MAX_MODEL_LEN, ML_DIALECT_VLLM), "--max-model-len");
    assert_string_equal(ml_setting_name(ML_SET_GPU_UTIL, ML_DIALECT_VLLM), "--gpu-memory-utilization");
    assert_string_equal(ml_setting_name(ML_SET_KV_DTYPE, ML_DIALECT_VLLM), "--kv-cache-dtype");
    assert_string_equal(ml_setting_name(ML_SET_TP, ML_DIALECT_VLLM), "--tensor-parallel-size");
    assert_string_equal(ml_setting_name(ML_SET_MAX_MODEL_LEN, ML_DIALECT_SGLANG), "--context-length");
    assert_string_equal(ml_setting_name(ML_SET_MEM_FRACTION, ML_DIALECT_SGLANG), "--mem-fraction-static");
    assert_string_equal(ml_setting_name(ML_SET_TP, ML_DIALECT_SGLANG), "--tp-size");
    assert_string_equal(ml_setting_name(ML_SET_MAX_NUM_SEQS, ML_DIALECT_SGLANG), "--max-running-requests");
    assert_string_equal(ml_setting_name(ML_SET_MAX_BATCHED_TOKENS, ML_DIALECT_SGLANG), "--chunked-prefill-size");
    assert_null(ml_setting_name(ML_SET_GPU_UTIL, ML_DIALECT_SGLANG));
    assert_string_equal(ml_setting_value(ML_SET_KV_DTYPE, ML_DIALECT_SGLANG, "fp8"), "fp8_e4m3");
    assert_string_equal(ml_setting_value(ML_SET_KV_DTYPE, ML_DIALECT_VLLM, "fp8"), "fp8");

    struct ml_infer s;
    ml_infer_defaults(&s);
    s.engine = ML_ENGINE_VLLM;
    s.gpu_util_permille = 900; /* the default: not written */
    s.kv_dtype = ML_KV_FP8;
    s.max_model_len = 8192;
    struct ml_buf b;
    ml_buf_init(&b, 0);
    assert_int_equal(ml_render_serve_command(&b, "meta-llama/Llama-3.1-8B", &s, false), ML_OK);
    assert_string_equal(b.buf, "vllm serve meta-llama/Llama-3.1-8B --kv-cache-dtype fp8 --max-model-len 8192");
    ml_buf_reset(&b);
    s.gpu_util_permille = 950;
    assert_int_equal(ml_render_serve_command(&b, "/models/my model", &s, true), ML_OK);
    assert_string_equal(b.buf, "LLM(model=\"/models/my model\", kv_cache_dtype=\"fp8\", gpu_memory_utilization=0.95, "
                               "max_model_len=8192)");
    ml_buf_reset(&b);
    s.engine = ML_ENGINE_SGLANG;
    s.tp = 2;
    s.mem_fraction_static_permille = 850;
    assert_int_equal(ml_render_serve_command(&b, "/models/my model", &s, false), ML_OK);
    assert_string_equal(b.buf, "python -m sglang.launch_server --model-path '/models/my model' --tp-size 2 "
                               "--kv-cache-dtype fp8_e4m3 --mem-fraction-static 0.85 --context-length 8192");
    ml_buf_reset(&b);
    assert_int_equal(ml_render_serve_command(&b, "Qwen/Qwen2.5-7B", &s, true), ML_OK);
    assert_string_equal(b.buf, "sgl.Engine(model_path=\"Qwen/Qwen2.5-7B\", tp_size=2, kv_cache_dtype=\"fp8_e4m3\", "
                               "mem_fraction_static=0.85, context_length=8192)");
    ml_buf_release(&b);
}

/* The model vLLM/SGLang load for fit --serve's MODEL: the hub id it is known by, or the directory
 * (`vllm serve DIR` takes a model directory, never its config.json), or the argument itself. */
static void test_serve_model_id(void **state)
{
    (void)state;
    char id[64];
    ml_serve_model_id("llama-3.1-8b", "meta-llama/Llama-3.1-8B", id, sizeof(id));
    assert_string_equal(id, "meta-llama/Llama-3.1-8B");
    ml_serve_model_id("models/qwen/config.json", "", id, sizeof(id));
    assert_string_equal(id, "models/qwen");
    ml_serve_model_id("config.json", "", id, sizeof(id));
    assert_string_equal(id, ".");
    ml_serve_model_id("/srv/m", "", id, sizeof(id));
    assert_string_equal(id, "/srv/m");
    ml_serve_model_id("m/my-config.json", "", id, sizeof(id));
    assert_string_equal(id, "m/my-config.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diagnose_no_event), cmocka_unit_test(test_diagnose_event),
        cmocka_unit_test(test_compare_rows),      cmocka_unit_test(test_serve_flags),
        cmocka_unit_test(test_serve_model_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
