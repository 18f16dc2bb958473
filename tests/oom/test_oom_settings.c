/*
 * The run a diagnosis prices (lib/oom/settings.c, ml_diag_run_settle): what the log states fills
 * what the flags leave out. vLLM issue 10517's log (tests/fixtures/oom/vllm-10517.log): its
 * profiling line says total_gpu_memory=23.58GiB and gpu_memory_utilization=0.90, its error a max
 * seq len of 29000; Llama-3.1-8B has 32 attention heads (config.json), so --tp 3 cannot serve it.
 * The seed case (examples/seed-case): a training run (Qwen2.5-14B) whose OOM message reports a
 * 15.98 GiB total capacity.
 */
#include "ml_test.h"

#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/infer.h"
#include "memledger/oom.h"
#include "memledger/oom_settings.h"

static struct ml_incident inc;
static struct ml_oom_scanner sc;
static struct ml_diag_run r;
static struct ml_ledger scratch;

static void scan(const char *rel)
{
    size_t n = 0;
    char *log = ml_test_slurp(rel, &n);
    assert_non_null(log);
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    ml_oom_scan_buffer(&sc, log, n);
    free(log);
    assert_true(inc.n_events >= 1);
}

/* r with a built-in model, LLaMA-Factory's defaults. */
static void run_with(const char *model)
{
    memset(&r, 0, sizeof(r));
    ml_train_defaults(&r.t, ML_FW_LLAMAFACTORY);
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find(model);
    assert_non_null(e);
    assert_int_equal(ml_catalog_arch(e, &r.m.arch, &d), ML_OK);
    assert_int_equal(ml_diag_run_model(&r, &d), ML_OK);
    assert_true(r.have);
}

/* Names as the command line resolves them, from the built-in catalogs (no files here). */
static enum ml_status catalog_model(const char *name, struct ml_model_ref *m, struct ml_diag *d)
{
    memset(m, 0, sizeof(*m));
    const struct ml_catalog_entry *e = ml_catalog_find(name);
    if (!e)
        return ml_diag_set(d, ML_ERR_NOTFOUND, "unknown model '%s'", name);
    (void)snprintf(m->name, sizeof(m->name), "%s", e->name);
    return ml_catalog_arch(e, &m->arch, d);
}

static const struct ml_diag_io io = {catalog_model, ml_gpu_resolve};

static enum ml_status settle(const struct ml_diag_run_flags *f, bool *usage, struct ml_diag *d)
{
    ml_diag_init(d);
    return ml_diag_run_settle(&inc, f, &io, &r, &scratch, usage, d);
}

static void test_serving_from_the_log(void **state)
{
    (void)state;
    scan("tests/fixtures/oom/vllm-10517.log");
    struct ml_diag_serve_flags sf;
    memset(&sf, 0, sizeof(sf));
    ml_infer_defaults(&sf.si);
    struct ml_diag_run_flags f = {NULL, NULL, 0, 0, &sf, false, false, ML_FW_LLAMAFACTORY};
    bool usage;
    struct ml_diag d;
    run_with("llama-3.1-8b");
    assert_int_equal(settle(&f, &usage, &d), ML_OK);
    assert_true(r.serving && r.have_cluster && r.capacity_from_log);
    assert_int_equal(r.si.engine, ML_ENGINE_VLLM);
    assert_int_equal(r.si.max_model_len, 29000);
    assert_int_equal(r.si.gpu_util_permille, 900);
    assert_int_equal(r.cl.gpu.capacity_bytes / ((uint64_t)1 << 20), 24145); /* 23.58 GiB in MiB */
    assert_int_equal(r.cl.gpus_per_node, 1);
    /* A flag wins over the log; a card given wins over the log's. */
    sf.si.max_model_len = 8192;
    ml_diag_serve_given(&sf, "max-model-len");
    assert_true(sf.max_model_len);
    f.gpu = "80G";
    run_with("llama-3.1-8b");
    assert_int_equal(settle(&f, &usage, &d), ML_OK);
    assert_int_equal(r.si.max_model_len, 8192);
    assert_false(r.capacity_from_log);
    assert_true(r.cl.gpu.capacity_bytes > (uint64_t)70 << 30); /* an 80 GB card, not the log's 23.58 GiB */
    /* --tp 3: 32 heads do not split three ways; an error as infer's, with no origin. */
    sf.si.tp = 3;
    ml_diag_serve_given(&sf, "tp");
    run_with("llama-3.1-8b");
    assert_int_not_equal(settle(&f, &usage, &d), ML_OK);
    assert_true(usage);
    assert_non_null(strstr(d.msg, "--tp 3"));
    assert_string_equal(d.origin, "");
    /* A card that is none: an error naming --gpu. */
    f.gpu = "h1000";
    run_with("llama-3.1-8b");
    assert_int_not_equal(settle(&f, &usage, &d), ML_OK);
    assert_false(usage);
    assert_string_equal(d.origin, "--gpu");
    /* No model, and the log names none this build knows: the log alone, nothing settled. */
    f.gpu = NULL;
    memset(&r, 0, sizeof(r));
    assert_int_equal(settle(&f, &usage, &d), ML_OK);
    assert_false(r.have || r.serving || r.have_cluster);
    /* Checked before the logs are read when no run uses them. */
    f.gpu = "h1000";
    ml_diag_init(&d);
    assert_int_not_equal(ml_diag_check_flags(&f, &io, &r, &usage, &d), ML_OK);
    assert_string_equal(d.origin, "--gpu");
}

/* vLLM's engine line names the model it serves (model='Qwen/Qwen2.5-0.5B'): with no --model, the
 * run is that model's, at the defaults of --framework. */
static void test_model_from_the_log(void **state)
{
    (void)state;
    scan("tests/golden/diagnose/vllm-engine-line/engine.log");
    struct ml_diag_serve_flags sf;
    memset(&sf, 0, sizeof(sf));
    ml_infer_defaults(&sf.si);
    struct ml_diag_run_flags f = {NULL, NULL, 0, 0, &sf, false, false, ML_FW_LLAMAFACTORY};
    memset(&r, 0, sizeof(r));
    assert_string_equal(ml_diag_log_model(&inc, &r, false), "Qwen/Qwen2.5-0.5B");
    assert_null(ml_diag_log_model(&inc, &r, true)); /* a training config: not a serving run */
    bool usage;
    struct ml_diag d;
    assert_int_equal(settle(&f, &usage, &d), ML_OK);
    assert_true(r.have && r.model_from_log && r.serving);
    assert_string_equal(r.m.name, "qwen2.5-0.5b");
    assert_int_equal(r.si.vllm_version, 604); /* vllm 0.6.4, as the report says */
}

static void test_training_from_the_log(void **state)
{
    (void)state;
    scan("examples/seed-case/oom.log");
    struct ml_diag_serve_flags sf;
    memset(&sf, 0, sizeof(sf));
    struct ml_diag_run_flags f = {NULL, "12Q", 0, 0, &sf, false, true, ML_FW_LLAMAFACTORY};
    bool usage;
    struct ml_diag d;
    run_with("qwen2.5-14b");
    assert_false(ml_diag_serving_incident(&inc));
    assert_null(ml_diag_log_model(&inc, &r, true)); /* a training run names no engine model */
    assert_int_not_equal(settle(&f, &usage, &d), ML_OK);
    assert_true(usage);
    assert_string_equal(d.origin, "--host-ram");
    f.host_ram = "64G";
    f.num_gpus = 4;
    run_with("qwen2.5-14b");
    assert_int_equal(settle(&f, &usage, &d), ML_OK);
    assert_false(r.serving);
    assert_true(r.have_cluster && r.capacity_from_log && !r.world_guessed);
    assert_int_equal(r.cl.gpus_per_node, 4);
    assert_int_equal(r.cl.host_ram_bytes, (uint64_t)64 << 30);
    assert_int_equal(r.cl.gpu.capacity_bytes / ((uint64_t)1 << 20), 16363); /* 15.98 GiB in MiB */
    /* The report names the seed case's files as the user sees them in the directory. */
    ml_diag_run_files(&r, "examples/seed-case/train.yaml", "examples/seed-case/deepspeed_z3_4x16g.json");
    struct ml_diag_setup su;
    ml_diag_setup_of(&r, &su);
    assert_string_equal(su.config_name, "train.yaml");
    assert_string_equal(su.ds_name, "deepspeed_z3_4x16g.json");
    ml_diag_run_files(&r, NULL, "");
    ml_diag_setup_of(&r, &su);
    assert_null(su.config_name);
    assert_null(su.ds_name);
}

/* ml_oom_scan_input: a log read 7 bytes at a time is the log read whole; a read error midway is
 * returned, the input still ended. The seed case's log holds one HIP out-of-memory event. */
static const char *src_text;
static size_t src_len, src_at, src_fail_at;

static long chunks_of_7(int h, char *buf, size_t n, struct ml_diag *d)
{
    (void)h;
    if (src_at >= src_fail_at) {
        (void)ml_diag_set(d, ML_ERR_IO, "Input/output error");
        return -1;
    }
    size_t k = src_len - src_at < 7 ? src_len - src_at : 7;
    k = k < n ? k : n;
    memcpy(buf, src_text + src_at, k);
    src_at += k;
    return (long)k;
}

static void test_scan_input(void **state)
{
    (void)state;
    size_t n = 0;
    char *log = ml_test_slurp("examples/seed-case/oom.log", &n);
    assert_non_null(log);
    src_text = log;
    src_len = n;
    src_at = 0;
    src_fail_at = (size_t)-1;
    char chunk[64];
    struct ml_diag d;
    ml_diag_init(&d);
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    assert_int_equal(ml_oom_scan_input(&sc, chunks_of_7, 0, chunk, sizeof(chunk), &d), ML_OK);
    assert_int_equal(inc.n_files, 1);
    assert_int_equal(inc.n_events, 1);
    assert_int_equal(inc.ev[0].device, ML_DEV_HIP);
    src_at = 0;
    src_fail_at = 21;
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    assert_int_equal(ml_oom_scan_input(&sc, chunks_of_7, 0, chunk, sizeof(chunk), &d), ML_ERR_IO);
    assert_int_equal(inc.n_files, 1);
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serving_from_the_log),
        cmocka_unit_test(test_training_from_the_log),
        cmocka_unit_test(test_model_from_the_log),
        cmocka_unit_test(test_scan_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
