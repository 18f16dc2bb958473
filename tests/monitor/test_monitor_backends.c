/*
 * The vendor backends against the fake libraries: loader failure paths (missing library,
 * missing symbol), the NVML v2 memory call and its version word, the v1 fallback, errors in
 * the middle of a run, ROCm SMI (AMD, Hygon DTK) with its per-device process query, "auto".
 */
#include "ml_test.h"

#include <dlfcn.h>
#include <unistd.h>

#include "memledger/monitor.h"
#include "vendor/nvml_min.h"

#define NVML_LIB     ML_FAKES_DIR "/nvml/libnvidia-ml.so.1"
#define NVML_V1ONLY  ML_FAKES_DIR "/nvml_v1only/libnvidia-ml.so.1"
#define NVML_NOSYM   ML_FAKES_DIR "/nvml_nosym/libnvidia-ml.so.1"
#define RSMI_LIB     ML_FAKES_DIR "/rsmi/librocm_smi64.so"
#define RSMI_NOPROCS ML_FAKES_DIR "/rsmi_noprocs/librocm_smi64.so"

/* Write a script and point the fake at it. */
static void script(const char *env, const char *text)
{
    static char path[64];
    (void)snprintf(path, sizeof(path), "/tmp/ml_fake_script_%d", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    setenv(env, path, 1);
}

static enum ml_status open_nvml(struct ml_monitor *m, const char *lib, struct ml_diag *d)
{
    struct ml_backend_opts o;
    memset(&o, 0, sizeof(o));
    o.nvml_lib = lib;
    ml_diag_init(d);
    return ml_monitor_open(m, "nvml", &o, d);
}

static void test_missing_library(void **state)
{
    (void)state;
    struct ml_monitor m;
    struct ml_diag d;
    assert_int_equal(open_nvml(&m, "/nonexistent/libnvidia-ml.so.1", &d), ML_ERR_NO_DEVICE);
    assert_non_null(strstr(d.msg, "cannot load /nonexistent/libnvidia-ml.so.1"));
    assert_null(m.be);
}

static void test_missing_symbol(void **state)
{
    (void)state;
    struct ml_monitor m;
    struct ml_diag d;
    script("FAKE_NVML_SCRIPT", "count 1\n");
    assert_int_equal(open_nvml(&m, NVML_NOSYM, &d), ML_ERR_BACKEND);
    assert_non_null(strstr(d.msg, "has no nvmlDeviceGetMemoryInfo"));
}

static void test_v2_reading(void **state)
{
    (void)state;
    script("FAKE_NVML_SCRIPT", "count 2\nname 0 Fake H200\ntotal 0 150000000000\nreserved 0 600000000\n"
                               "step 0 used=1000 procs=4242:1000\nstep 0 used=5000 procs=4242:1000,4343:na\n");
    struct ml_monitor m;
    struct ml_diag d;
    assert_int_equal(open_nvml(&m, NVML_LIB, &d), ML_OK);
    assert_int_equal(m.n_dev, 2);
    assert_string_equal(m.dev[0].name, "Fake H200");
    assert_true(m.dev[0].total_bytes == 150000000000ull);
    assert_non_null(strstr(m.be->describe(m.state), "memory API v2"));
    struct ml_mem_reading r;
    assert_int_equal(m.be->read_memory(m.state, 0, &r, &d), ML_OK);
    assert_int_equal(r.source, ML_MEM_SRC_NVML_V2);
    assert_true(r.used_bytes == 1000 && r.reserved_bytes == 600000000ull);
    assert_true((r.valid & (ML_MEM_USED_OK | ML_MEM_RESERVED_OK)) == (ML_MEM_USED_OK | ML_MEM_RESERVED_OK));
    struct ml_proc_mem p[8];
    uint32_t n = 0;
    assert_int_equal(m.be->read_procs(m.state, 0, p, 8, &n, &d), ML_OK);
    assert_int_equal(n, 1);
    assert_int_equal(p[0].pid, 4242);
    assert_int_equal(m.be->read_memory(m.state, 0, &r, &d), ML_OK);
    assert_true(r.used_bytes == 5000);
    assert_int_equal(m.be->read_procs(m.state, 0, p, 8, &n, &d), ML_OK);
    assert_int_equal(n, 2);
    assert_false(p[1].used_ok); /* NVML_VALUE_NOT_AVAILABLE is not 0 bytes */
    ml_monitor_close(&m);
}

/* The fake refuses any version word but NVML_STRUCT_VERSION(Memory, 2), as drivers do. */
static void test_version_word(void **state)
{
    (void)state;
    assert_int_equal(nvmlMemory_v2, 0x02000028u);
    script("FAKE_NVML_SCRIPT", "count 1\n");
    void *h = dlopen(NVML_LIB, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    nvmlInit_fn init;
    nvmlDeviceGetHandleByIndex_fn get;
    nvmlDeviceGetMemoryInfo_v2_fn mem;
    *(void **)(void *)&init = dlsym(h, "nvmlInit_v2");
    *(void **)(void *)&get = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)(void *)&mem = dlsym(h, "nvmlDeviceGetMemoryInfo_v2");
    assert_true(init && get && mem);
    assert_int_equal(init(), NVML_SUCCESS);
    nvmlDevice_t dev;
    assert_int_equal(get(0, &dev), NVML_SUCCESS);
    nvmlMemory_v2_t m;
    memset(&m, 0, sizeof(m));
    m.version = 2; /* the mistake nvtop made */
    assert_int_equal(mem(dev, &m), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    m.version = nvmlMemory_v2;
    assert_int_equal(mem(dev, &m), NVML_SUCCESS);
    dlclose(h);
}

static void test_v1_only_driver(void **state)
{
    (void)state;
    script("FAKE_NVML_SCRIPT", "count 1\nreserved 0 500\nstep 0 used=1000\n");
    struct ml_monitor m;
    struct ml_diag d;
    assert_int_equal(open_nvml(&m, NVML_V1ONLY, &d), ML_OK);
    const char *desc = m.be->describe(m.state);
    assert_non_null(strstr(desc, "memory API v1"));
    assert_non_null(strstr(desc, "no nvmlDeviceGetMemoryInfo_v2"));
    struct ml_mem_reading r;
    assert_int_equal(m.be->read_memory(m.state, 0, &r, &d), ML_OK);
    assert_int_equal(r.source, ML_MEM_SRC_NVML_V1);
    assert_true(r.used_bytes == 1500); /* v1 counts the reserved memory as used */
    assert_false(r.valid & ML_MEM_RESERVED_OK);
    ml_monitor_close(&m);
}

static void test_v2_refused_falls_back(void **state)
{
    (void)state;
    script("FAKE_NVML_SCRIPT", "count 1\nv2 3\nstep 0 used=1000\n");
    struct ml_monitor m;
    struct ml_diag d;
    assert_int_equal(open_nvml(&m, NVML_LIB, &d), ML_OK);
    const char *desc = m.be->describe(m.state);
    assert_non_null(strstr(desc, "memory API v1"));
    assert_non_null(strstr(desc, "refused: Not Supported"));
    struct ml_mem_reading r;
    assert_int_equal(m.be->read_memory(m.state, 0, &r, &d), ML_OK);
    assert_int_equal(r.source, ML_MEM_SRC_NVML_V1);
    ml_monitor_close(&m);
}

static void test_init_fails(void **state)
{
    (void)state;
    script("FAKE_NVML_SCRIPT", "init 9\n");
    struct ml_monitor m;
    struct ml_diag d;
    assert_int_equal(open_nvml(&m, NVML_LIB, &d), ML_ERR_NO_DEVICE);
    assert_non_null(strstr(d.msg, "Driver Not Loaded"));
}

static void test_error_mid_run(void **state)
{
    (void)state;
    script("FAKE_NVML_SCRIPT", "count 1\nstep 0 used=1000\nstep 0 fail=15\nstep 0 used=3000\n");
    struct ml_monitor m;
    struct ml_diag d;
    assert_int_equal(open_nvml(&m, NVML_LIB, &d), ML_OK);
    struct ml_mem_reading r;
    struct ml_proc_mem p[4];
    uint32_t n;
    assert_int_equal(m.be->read_memory(m.state, 0, &r, &d), ML_OK);
    assert_int_equal(m.be->read_procs(m.state, 0, p, 4, &n, &d), ML_OK);
    ml_diag_init(&d);
    assert_int_equal(m.be->read_memory(m.state, 0, &r, &d), ML_ERR_BACKEND);
    assert_non_null(strstr(d.msg, "GPU is lost"));
    assert_int_equal(r.valid, 0);
    ml_diag_init(&d);
    assert_int_equal(m.be->read_memory(m.state, 0, &r, &d), ML_OK); /* sampling goes on */
    assert_true(r.used_bytes == 3000);
    ml_monitor_close(&m);
}

static void test_unified_memory(void **state)
{
    (void)state;
    script("FAKE_NVML_SCRIPT", "count 1\ntotal 0 0\n");
    struct ml_monitor m;
    struct ml_diag d;
    assert_int_equal(open_nvml(&m, NVML_LIB, &d), ML_OK);
    struct ml_mem_reading r;
    assert_int_equal(m.be->read_memory(m.state, 0, &r, &d), ML_ERR_UNSUPPORTED);
    assert_int_equal(r.valid, 0);
    ml_monitor_close(&m);
}

static void test_rsmi(void **state)
{
    (void)state;
    script("FAKE_RSMI_SCRIPT", "count 2\nname 1 K100_AI\ntotal 1 68702699520\n"
                               "step 1 used=2000 procs=777:1500\n");
    struct ml_backend_opts o;
    memset(&o, 0, sizeof(o));
    o.rsmi_lib = RSMI_LIB;
    struct ml_monitor m;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_monitor_open(&m, "rocm-smi", &o, &d), ML_OK);
    assert_string_equal(m.be->name, "rocm-smi");
    assert_int_equal(m.n_dev, 2);
    assert_string_equal(m.dev[1].name, "K100_AI");
    struct ml_mem_reading r;
    assert_int_equal(m.be->read_memory(m.state, 1, &r, &d), ML_OK);
    assert_int_equal(r.source, ML_MEM_SRC_RSMI_VRAM);
    assert_true(r.used_bytes == 2000 && r.total_bytes == 68702699520ull);
    struct ml_proc_mem p[4];
    uint32_t n = 0;
    assert_int_equal(m.be->read_procs(m.state, 1, p, 4, &n, &d), ML_OK);
    assert_int_equal(n, 1);
    assert_int_equal(p[0].pid, 777);
    assert_true(p[0].used_bytes == 1500); /* from the per-device query, not the host-wide list */
    assert_int_equal(m.be->read_procs(m.state, 0, p, 4, &n, &d), ML_OK);
    assert_int_equal(n, 0);
    ml_monitor_close(&m);

    o.rsmi_lib = RSMI_NOPROCS;
    assert_int_equal(ml_monitor_open(&m, "rsmi", &o, &d), ML_OK);
    assert_int_equal(m.be->read_procs(m.state, 0, p, 4, &n, &d), ML_ERR_UNSUPPORTED);
    ml_monitor_close(&m);
}

static void test_rsmi_search_dirs(void **state)
{
    (void)state;
    /* $ROCM_SMI_LIB_PATH-style directory search finds the library by name. */
    struct ml_backend_opts o;
    memset(&o, 0, sizeof(o));
    o.rsmi_dirs[0] = ML_FAKES_DIR "/rsmi";
    script("FAKE_RSMI_SCRIPT", "count 1\n");
    struct ml_monitor m;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_monitor_open(&m, "rocm-smi", &o, &d), ML_OK);
    assert_non_null(strstr(m.be->describe(m.state), ML_FAKES_DIR "/rsmi/librocm_smi64.so"));
    ml_monitor_close(&m);
}

static void test_auto_falls_to_none(void **state)
{
    (void)state;
    struct ml_backend_opts o;
    memset(&o, 0, sizeof(o));
    o.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
    o.rsmi_lib = "/nonexistent/librocm_smi64.so";
    struct ml_monitor m;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_monitor_open(&m, "auto", &o, &d), ML_OK);
    assert_string_equal(m.be->name, "none");
    assert_int_equal(m.n_dev, 0);
    assert_non_null(strstr(m.why_none, "libnvidia-ml.so.1"));
    assert_non_null(strstr(m.why_none, "librocm_smi64.so"));
    ml_monitor_close(&m);

    /* NVML present with no GPU: auto moves on. */
    script("FAKE_NVML_SCRIPT", "count 0\n");
    o.nvml_lib = NVML_LIB;
    assert_int_equal(ml_monitor_open(&m, "auto", &o, &d), ML_OK);
    assert_string_equal(m.be->name, "none");
    assert_non_null(strstr(m.why_none, "nvml: no GPU"));
    ml_monitor_close(&m);

    assert_int_equal(ml_monitor_open(&m, "cuda", &o, &d), ML_ERR_INVALID);
    assert_null(ml_backend_find("cuda"));
    assert_ptr_equal(ml_backend_find("rsmi"), &ml_backend_rsmi);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_library),  cmocka_unit_test(test_missing_symbol),
        cmocka_unit_test(test_v2_reading),       cmocka_unit_test(test_version_word),
        cmocka_unit_test(test_v1_only_driver),   cmocka_unit_test(test_v2_refused_falls_back),
        cmocka_unit_test(test_init_fails),       cmocka_unit_test(test_error_mid_run),
        cmocka_unit_test(test_unified_memory),   cmocka_unit_test(test_rsmi),
        cmocka_unit_test(test_rsmi_search_dirs), cmocka_unit_test(test_auto_falls_to_none),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char path[64];
    (void)snprintf(path, sizeof(path), "/tmp/ml_fake_script_%d", (int)getpid());
    unlink(path);
    return rc;
}
