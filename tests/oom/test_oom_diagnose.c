/*
 * The diagnosis rules. First the seed case (examples/seed-case: its log, the user's LLaMA-Factory
 * YAML and DeepSpeed JSON) must tell its story with the log's numbers: a HIP card at ~96 %
 * occupancy, 571.62 MiB stranded against a 36 MiB request, eager attention's softmax, the first
 * step after the save at step 100, the ZeRO-3 prefetch/live buffers of the user's file, and the
 * fixes ranked on fit's cost scale, priced by the ledger. Then the field guide's rules one
 * by one on its own strings: the allocator variable per device, never expandable segments on
 * WSL2/Jetson or next to a colocated vLLM, the container-PID trap, the vLLM arithmetic.
 */
#include "ml_test.h"

#include "memledger/catalog.h"
#include "memledger/diagnose.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/oom.h"
#include "memledger/train.h"

static struct ml_incident inc;
static struct ml_oom_scanner sc;
static struct ml_diagnosis dg;

static void scan_text(const char *text)
{
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    ml_oom_scan_buffer(&sc, text, strlen(text));
    assert_true(inc.n_events >= 1);
}

/* Scan a file of the source tree. */
static void scan_fixture(const char *rel)
{
    size_t n = 0;
    char *log = ml_test_slurp(rel, &n);
    assert_non_null(log);
    scan_text(log);
    free(log);
}

static void diagnose(const struct ml_diag_setup *su)
{
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_diagnose(&inc, su, &dg, &d), ML_OK);
    assert_true(dg.n_findings >= 1);
}

static const struct ml_finding *find_cause(enum ml_cause c)
{
    for (uint32_t i = 0; i < dg.n_findings; i++)
        if (dg.f[i].cause == c)
            return &dg.f[i];
    return NULL;
}

static const struct ml_fix *find_fix(enum ml_fix_kind k)
{
    for (uint32_t i = 0; i < dg.n_findings; i++)
        for (uint32_t j = 0; j < dg.f[i].n_fix; j++)
            if (dg.f[i].fix[j].kind == k)
                return &dg.f[i].fix[j];
    return NULL;
}

/* ---- the seed case ------------------------------------------------------------------------ */

static struct ml_train t;
static struct ml_arch arch;
static struct ml_inventory inv;
static struct ml_cluster cl;

static void load_seed(void)
{
    scan_fixture("examples/seed-case/oom.log");
    size_t n = 0;
    struct ml_diag d;
    ml_diag_init(&d);
    ml_train_defaults(&t, ML_FW_LLAMAFACTORY);
    char *yaml = ml_test_slurp("examples/seed-case/train.yaml", &n);
    assert_non_null(yaml);
    char model[256], ds[256];
    assert_int_equal(ml_train_apply_yaml(&t, yaml, n, "train.yaml", model, sizeof(model), ds, sizeof(ds), &d), ML_OK);
    free(yaml);
    char *json = ml_test_slurp("examples/seed-case/deepspeed_z3_4x16g.json", &n);
    assert_non_null(json);
    assert_int_equal(ml_zero_from_json(&t, json, n, "deepspeed_z3_4x16g.json", &d), ML_OK);
    free(json);
    const struct ml_catalog_entry *e = ml_catalog_find(model);
    assert_non_null(e);
    assert_int_equal(ml_catalog_arch(e, &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    /* The card: the 15.98 GiB total capacity the OOM message reports. */
    memset(&cl, 0, sizeof(cl));
    const struct ml_oom_event *ev = &inc.ev[ml_diagnose_primary(&inc)];
    cl.gpu.capacity_bytes = ev->total;
    cl.gpu.nominal_bytes = ev->total;
    cl.gpus_per_node = 1;
    cl.nodes = 1;
}

static void test_seed_story(void **state)
{
    (void)state;
    load_seed();
    /* 4 cards: the only world size whose ledger comes near the 14.81 GiB the log reports. */
    assert_int_equal(ml_diagnose_guess_world(&inc, &arch, &inv, &t, &cl), 4);
    struct ml_diag_setup su;
    memset(&su, 0, sizeof(su));
    su.arch = &arch;
    su.inv = &inv;
    su.train = &t;
    su.cluster = &cl;
    su.params = inv.total_params;
    su.save_steps = 100;
    su.world_guessed = true;
    su.capacity_from_log = true;
    diagnose(&su);

    const struct ml_oom_event *e = &inc.ev[dg.primary];
    assert_int_equal(e->device, ML_DEV_HIP);
    assert_int_equal(e->rank, 1);
    assert_int_equal(e->phase, ML_OPH_FORWARD);
    assert_int_equal(e->timing, ML_TIM_AFTER_SAVE);
    assert_int_equal(e->timing_ref.step, 100);
    /* ~96 %: (14.81 GiB + 571.62 MiB) / 15.98 GiB held by PyTorch. */
    assert_true(dg.has_device_numbers && dg.has_stranded);
    assert_true(dg.stranded == 599387013ull); /* 571.62 MiB */
    assert_int_equal(dg.held * 1000 / e->total, 961);
    assert_true(e->requested == 36ull << 20);

    /* Causes, as the evidence weights fitted on the corpus rank them (validation/DIAGNOSE.md): the
     * save just before (its gathers and the cold ZeRO-3 cache) first; the eager softmax it failed in
     * (a 36 MiB request only says the card was full); and the stranded cache, which at 3.6 % of
     * reserved is the share of real demand in 16 of 19 corpus messages (observation 3). */
    assert_int_equal(dg.f[0].cause, ML_CAUSE_CHECKPOINT_GATHER);
    assert_non_null(find_cause(ML_CAUSE_FRAGMENTATION));
    const struct ml_finding *f = find_cause(ML_CAUSE_EAGER_ATTENTION);
    assert_non_null(f);
    /* No size fingerprint of a tiny request (C8): 36 MiB decomposes into anything. */
    for (uint32_t i = 0; i < f->n_ev; i++)
        assert_null(strstr(f->ev[i].text, "heads x s^2"));
    assert_false(dg.big.has);

    /* Fixes in the issue's order, cheapest first, with the user's own numbers. */
    const struct ml_fix *exp = find_fix(ML_FIX_ALLOC_EXPANDABLE);
    const struct ml_fix *z3 = find_fix(ML_FIX_ZERO3_BUFFERS);
    const struct ml_fix *cut = find_fix(ML_FIX_CUTOFF);
    const struct ml_fix *save = find_fix(ML_FIX_SAVE_STEPS);
    const struct ml_fix *off = find_fix(ML_FIX_OFFLOAD_ALL);
    assert_true(exp && z3 && cut && save && off);
    assert_string_equal(exp->setting, "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True");
    assert_true(exp->has_saves && exp->saves_bytes == 599387013ull && exp->fits == 1);
    assert_non_null(strstr(z3->setting, "stage3_prefetch_bucket_size: 5e7"));      /* half of the file's 1e8 */
    assert_non_null(strstr(z3->setting, "stage3_max_live_parameters: 150000000")); /* half of 3e8 */
    assert_non_null(strstr(z3->setting, "overlap_comm: false"));
    assert_string_equal(cut->setting, "cutoff_len: 512");
    assert_string_equal(save->setting, "save_steps: 500");
    /* Ranked on fit's one cost scale (ml_knob_rank): the allocator variable and the save advice
     * cost nothing, the ZeRO-3 buffers 5 % of step time, offload 50 %; the shorter sequence changes
     * the data and comes after every fix that does not. */
    assert_true(exp->cost == 0 && save->cost == 0);
    assert_true(exp->kind < save->kind); /* equal cost: the environment variable first */
    assert_true(save->cost < z3->cost && z3->cost < off->cost && off->cost < cut->cost);
    assert_int_equal(z3->knob, ML_KNOB_ZERO3_BUFFERS_2);
    assert_int_equal(cut->knob, ML_KNOB_SEQ_1_2);
    assert_true(cut->cost >= ML_COST_RESULT);
    assert_true(z3->has_saves && z3->saves_from_ledger && z3->saves_bytes > 0);
    assert_true(cut->has_saves && cut->saves_from_ledger && cut->saves_bytes > z3->saves_bytes);
    assert_true(off->has_saves && off->saves_from_ledger && off->saves_bytes > 0);
    assert_false(save->has_saves); /* saving less often does not lower the peak */
    /* The ledger's peak is the step after the save. Its device figure (with the stranded loss
     * set of variable-length batches) now covers what the log needed, so no gap is carried. */
    assert_true(dg.has_ledger && dg.ledger_phase == ML_PHASE_AFTER_SAVE && dg.gap == 0);
}

/* ---- rules on the field guide's strings ------------------------------------------------- */

static const char cuda_frag[] =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 546.00 MiB. GPU 0 has a total capacity of 15.77 GiB "
    "of which 514.19 MiB is free. Process 562167 has 15.25 GiB memory in use. Of the allocated memory 13.73 GiB is "
    "allocated by PyTorch, and 736.86 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory "
    "is "
    "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n";

static void test_allocator_variable(void **state)
{
    (void)state;
    scan_text(cuda_frag);
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_FRAGMENTATION);
    assert_string_equal(find_fix(ML_FIX_ALLOC_EXPANDABLE)->setting, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
    /* The container-PID trap: one process line and no "this process" line is not another process. */
    assert_null(find_cause(ML_CAUSE_OTHER_PROCESS));

    /* Never expandable segments on WSL2, on Jetson, or next to a colocated vLLM (observation 3). */
    static char buf[4096];
    static const char *const platforms[] = {
        "Linux 5.15.153.1-microsoft-standard-WSL2\n",
        "L4T: NVIDIA Jetson AGX Orin, tegra234\n",
        "INFO vllm/worker: sleep mode on; GRPO trainer colocates the engine\n",
    };
    for (size_t i = 0; i < 3; i++) {
        snprintf(buf, sizeof(buf), "%s%s", platforms[i], cuda_frag);
        scan_text(buf);
        diagnose(NULL);
        assert_null(find_fix(ML_FIX_ALLOC_EXPANDABLE));
        assert_string_equal(find_fix(ML_FIX_ALLOC_MAX_SPLIT)->setting, "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256");
    }

    /* NPU: its own variable (A3). */
    scan_text(
        "RuntimeError: NPU out of memory. Tried to allocate 130.00 MiB (NPU 0; 29.50 GiB total capacity; 20.00 GiB "
        "already allocated; 20.00 GiB current active; 31.40 MiB free; 28.67 GiB reserved in total by PyTorch)\n");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_FRAGMENTATION); /* 8.67 GiB of 28.67 reserved is stranded */
    assert_string_equal(find_fix(ML_FIX_ALLOC_EXPANDABLE)->setting, "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True");

    /* The driver-API error means expandable segments are on and failing (A7). */
    scan_text("RuntimeError: CUDA driver error: out of memory\n");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_MISLEADING);
    assert_non_null(find_fix(ML_FIX_EXPANDABLE_OFF));
}

static void test_other_process(void **state)
{
    (void)state;
    /* LlamaFactory#4652 (A1): a "this process" line next to another process's line is proof. */
    scan_text(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 136.00 MiB. GPU 0 has a total capacty "
        "of 31.73 GiB of which 24.69 MiB is free. Process 149826 has 16.98 GiB memory in use. Including "
        "non-PyTorch memory, this process has 14.72 GiB memory in use. Of the allocated memory 14.41 GiB is "
        "allocated by PyTorch, and 11.15 MiB is reserved by PyTorch but unallocated.\n");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_OTHER_PROCESS);
    assert_false(dg.cannot_tell);
    const struct ml_fix *k = find_fix(ML_FIX_FREE_DEVICE);
    assert_true(k && k->has_saves && k->saves_bytes == 18232136172ull); /* 16.98 GiB */

    /* FastMRI#238 (analysis 1): 69 MiB allocated, 24.56 MiB free of 7.92 GiB: someone else holds it. */
    scan_text(
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.92 GiB total capacity; 69.17 MiB "
        "already allocated; 24.56 MiB free; 86.00 MiB reserved in total by PyTorch)\n");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_OTHER_PROCESS);

    /* Issue 24 item 4: the same message as LlamaFactory#4652 with a request (20 GiB) above what
     * ending the other process frees with what is free (16.98 GiB + 24.69 MiB): that remedy
     * cannot free enough, so other_process cannot lead; and the 11.15 MiB stranded cache with
     * the free memory is below it too: no fragmentation. */
    scan_text("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacty "
              "of 31.73 GiB of which 24.69 MiB is free. Process 149826 has 16.98 GiB memory in use. Including "
              "non-PyTorch memory, this process has 14.72 GiB memory in use. Of the allocated memory 14.41 GiB is "
              "allocated by PyTorch, and 11.15 MiB is reserved by PyTorch but unallocated.\n");
    diagnose(NULL);
    assert_true(dg.features.on[ML_EV_V_OTHERS_SHORT]);
    assert_true(dg.features.on[ML_EV_V_FRAG_SHORT]);
    assert_int_not_equal(dg.f[0].cause, ML_CAUSE_OTHER_PROCESS);
    assert_int_not_equal(dg.f[0].cause, ML_CAUSE_FRAGMENTATION);
}

/* Issue 24 item 1: a call chain written with arrows and no file:line is read as frames (the
 * attention's softmax: forward); arrows in prose are not. */
static void test_arrow_chain(void **state)
{
    (void)state;
    static const char msg[] = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB (GPU 0; "
                              "23.65 GiB total capacity; 17.10 GiB already allocated; 3.20 GiB free; 19.80 GiB "
                              "reserved in total by PyTorch)\n";
    char log[1024];
    (void)snprintf(log, sizeof(log), "%s%s",
                   "main -> Trainer.train -> training_step -> LlamaAttention.forward -> torch.softmax()\n", msg);
    scan_text(log);
    assert_int_equal(inc.ev[0].phase, ML_OPH_FORWARD);
    (void)snprintf(log, sizeof(log), "%s%s", "note: data -> tokenizer -> model is slow\n", msg);
    scan_text(log);
    assert_int_equal(inc.ev[0].phase, ML_OPH_UNKNOWN);
}

static void test_serving_arithmetic(void **state)
{
    (void)state;
    /* vllm#10517: 2.89 GiB of KV hold 23648 tokens; 29000 need 2.89 x 29000 / 23648 = 3.544 GiB,
     * 0.654 GiB more = 2.8 % of 23.58 GiB: 0.90 -> 0.93. */
    scan_fixture("tests/fixtures/oom/vllm-10517.log");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_KV_CACHE_BUDGET);
    assert_string_equal(find_fix(ML_FIX_VLLM_MAX_LEN)->setting, "--max-model-len 23648");
    assert_string_equal(find_fix(ML_FIX_VLLM_UTIL_UP)->setting, "--gpu-memory-utilization 0.93");

    /* vllm-23192: 7.34 of 139.72 GiB free at start-up: at most 0.05 of the card is available. */
    scan_fixture("tests/fixtures/oom/vllm-23192.log");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_SERVING_FREE_MEMORY);
    assert_string_equal(find_fix(ML_FIX_VLLM_UTIL_DOWN)->setting, "--gpu-memory-utilization 0.05");
    assert_true(find_fix(ML_FIX_FREE_DEVICE)->saves_bytes == 150023207649ull - 7881264988ull);
}

static void test_sizes_and_host(void **state)
{
    (void)state;
    /* A request larger than the device can never succeed (analysis 3). */
    scan_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 23.41 GiB. GPU 0 has a total capacity of "
        "22.05 GiB of which 10.00 GiB is free. Of the allocated memory 11.00 GiB is allocated by PyTorch, and 20.00 "
        "MiB is reserved by PyTorch but unallocated.\n");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_OVERSIZE_TENSOR);
    /* params x 2 B (dllm#9: 14.9 GiB = 8e9 x 2 B) with the parameter count known. */
    scan_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 14.9 GiB.\n");
    struct ml_diag_setup su;
    memset(&su, 0, sizeof(su));
    su.params = 8000000000ull;
    diagnose(&su);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_MODEL_STATES);
    /* Host: the kernel's record is proof; a bare SIGKILL is likely, not certain (A11). */
    scan_text("Out of memory: Killed process 2481 (python3) total-vm:8123400kB, anon-rss:7981200kB\n");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_HOST_RAM);
    assert_false(dg.cannot_tell);
    uint32_t killer = dg.f[0].confidence;
    scan_text("  exitcode  : -9 (pid: 8158)\n");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_HOST_RAM);
    assert_true(dg.f[0].confidence < killer && dg.n_checks > 0);
    /* "more than 1EB" follows NCCL timeouts (A1 traps). */
    scan_text("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory\n");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_MISLEADING);
    /* An explicit fp32 upcast in the failing frames (observation 9). */
    scan_text("Traceback (most recent call last):\n"
              "  File \"/x/accelerate/utils/operations.py\", line 795, in _convert_to_fp32\n"
              "    return tensor.float()\n"
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.47 GiB. GPU 0 has a total capacity of "
              "14.75 GiB of which 3.78 GiB is free. Process 2116 has 10.95 GiB memory in use.\n");
    diagnose(NULL);
    assert_int_equal(dg.f[0].cause, ML_CAUSE_FP32_UPCAST);
    /* Steady growth of DeepSpeed's MA -> tensors kept across steps. */
    scan_text("MA 10.00 GB Max_MA 10.00 GB CA 10.1 GB Max_CA 11 GB\nMA 11.00 GB Max_MA 11 GB CA 11.1 GB Max_CA 12 GB\n"
              "MA 12.00 GB Max_MA 12 GB CA 12.1 GB Max_CA 13 GB\n"
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
              "14.75 GiB of which 2.00 MiB is free.\n");
    diagnose(NULL);
    assert_non_null(find_cause(ML_CAUSE_TENSOR_LEAK));
}

/* The known-issue fix diagnose gives for a log of a version line and an OOM, NULL if none. */
static const struct ml_fix *known_issue_fix(const char *version_line, const char *oom)
{
    static char text[1024];
    (void)snprintf(text, sizeof(text), "%s\n%s", version_line, oom);
    scan_text(text);
    diagnose(NULL);
    return find_fix(ML_FIX_KNOWN_ISSUE);
}

/* Known issues of the stack (observation 10): the version line in the log names the issue and its
 * setting, only inside the version range and only for the events it explains. The OOM lines are
 * the field guide's (A1, A8); the version lines as pip and NCCL print them. */
static void test_known_issues(void **state)
{
    (void)state;
    static const char oom[] =
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
        "capacity of 39.39 GiB of which 612.00 MiB is free.\n";
    static char text[1024];
    /* trl#876: trl 0.7.2 stopped turning gradient checkpointing on; 0.7.1 did not. */
    (void)snprintf(text, sizeof(text), "trl==0.7.2\n%s", oom);
    scan_text(text);
    diagnose(NULL);
    int gi = -1;
    for (uint32_t i = 0; i < dg.n_findings; i++)
        if (dg.f[i].cause == ML_CAUSE_NO_GRAD_CHECKPOINTING)
            gi = (int)i;
    assert_true(gi >= 0);
    assert_non_null(strstr(dg.f[gi].why, "trl#876"));
    assert_true(dg.f[gi].ev[0].line == 1);
    const struct ml_fix *gc = find_fix(ML_FIX_GRAD_CKPT);
    assert_non_null(gc);
    /* TRL's SFTConfig is a TrainingArguments: the HF key, not LLaMA-Factory's inverted one. */
    assert_string_equal(gc->setting, "gradient_checkpointing: true");
    (void)snprintf(text, sizeof(text), "trl==0.7.1\n%s", oom);
    scan_text(text);
    diagnose(NULL);
    assert_null(find_cause(ML_CAUSE_NO_GRAD_CHECKPOINTING));
    /* pytorch#152302: NCCL 2.26's cuMem host allocations; not for 2.21, not for a non-NCCL OOM. */
    static const char nccl[] = "node1:123:456 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n";
    const struct ml_fix *ki = known_issue_fix("NCCL version 2.26.2+cuda12.2", nccl);
    assert_non_null(ki);
    assert_string_equal(ki->setting, "NCCL_CUMEM_HOST_ENABLE=0");
    assert_null(known_issue_fix("NCCL version 2.21.5+cuda12.4", nccl));
    assert_null(known_issue_fix("NCCL version 2.26.2+cuda12.2", oom));
    /* llm-scaler#305: PyTorch 2.10 on XPU only. */
    static const char xpu[] =
        "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
        "capacity of 11.33 GiB of which 11.33 GiB is free. Of the allocated memory 0 bytes is allocated "
        "by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.\n";
    assert_non_null(known_issue_fix("torch==2.10.0+xpu", xpu));
    assert_null(known_issue_fix("torch==2.9.1+xpu", xpu));
}

/* ---- serving, priced by the inference ledger ------------------------------------------------ */

/* The KV cache (tokens) that settings s leave, carried by the log as diagnose carries it: the
 * ledger's pool plus (the log's KV - the ledger's KV as the log ran). */
static uint64_t carried_tokens(const struct ml_infer *s, const struct ml_cluster *c)
{
    static struct ml_ledger l;
    struct ml_serve sv;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_ledger_infer(&arch, &inv, s, c, &l, &sv, &d), ML_OK);
    int64_t kv = (int64_t)sv.kv_bytes + ((int64_t)dg.kv_log - (int64_t)dg.serve.kv_bytes);
    return kv > 0 ? (uint64_t)kv / sv.kv_bytes_per_token : 0;
}

/* vllm#10517 (Llama-3.1-8B, RTX 3090 reporting 23.58 GiB, V0 about 0.6.4, utilization 0.9): the
 * reporter's own runs, independent of this code: max_model_len 29000 fails with 23648 tokens of KV
 * cache, while 20000, 35000 and 45000 start (V0 switches chunked prefill on above 32K). The
 * ledger, carried by the log's KV figure, must agree on all four; and every fix diagnose offers
 * must be priced so that the engine then starts. vllm-23192 (Mixtral-8x7B FP8 on an H200 with
 * 7.34 of 139.72 GiB free): asking only for what is free cannot work, the weights alone are more. */
static void test_serving_ledger(void **state)
{
    (void)state;
    scan_fixture("tests/fixtures/oom/vllm-10517.log");
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_catalog_arch(ml_catalog_find("llama-3.1-8b"), &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    memset(&cl, 0, sizeof(cl));
    cl.gpu.capacity_bytes = cl.gpu.nominal_bytes = inc.prof_total;
    cl.gpus_per_node = cl.nodes = 1;
    struct ml_infer s;
    ml_infer_defaults(&s);
    s.engine = ML_ENGINE_VLLM;
    s.vllm_version = ML_VER(0, 6, 4);
    s.max_model_len = 29000;
    struct ml_diag_setup su;
    memset(&su, 0, sizeof(su));
    su.arch = &arch;
    su.inv = &inv;
    su.cluster = &cl;
    su.serve = &s;
    diagnose(&su);
    assert_true(dg.has_serve && dg.has_kv_log);
    assert_int_equal(dg.kv_log, 23648ull * 131072); /* the error's tokens x Llama-3.1-8B's 128 KiB */
    assert_true(carried_tokens(&s, &cl) < 29000);
    static const uint64_t starts[] = {20000, 35000, 45000};
    for (size_t i = 0; i < 3; i++) {
        struct ml_infer w = s;
        w.max_model_len = starts[i];
        if (carried_tokens(&w, &cl) < starts[i])
            fail_msg("max_model_len %llu: the reporter's engine started", (unsigned long long)starts[i]);
    }
    static const enum ml_fix_kind kinds[] = {ML_FIX_VLLM_MAX_LEN, ML_FIX_VLLM_UTIL_UP, ML_FIX_VLLM_SEQS, ML_FIX_KV_FP8,
                                             ML_FIX_MORE_MEMORY};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const struct ml_fix *f = find_fix(kinds[i]);
        assert_non_null(f);
        if (f->fits != 1)
            fail_msg("fix '%s' is not priced to start the engine", f->setting);
    }
    assert_string_equal(find_fix(ML_FIX_VLLM_MAX_LEN)->setting, "--max-model-len 23648");

    scan_fixture("tests/fixtures/oom/vllm-23192.log");
    assert_int_equal(ml_catalog_arch(ml_catalog_find("mixtral-8x7b"), &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    const struct ml_oom_event *e = &inc.ev[ml_diagnose_primary(&inc)];
    cl.gpu.capacity_bytes = cl.gpu.nominal_bytes = e->total;
    ml_infer_defaults(&s);
    s.engine = ML_ENGINE_VLLM;
    s.quant = ML_QUANT_FP8;
    diagnose(&su);
    const struct ml_fix *down = find_fix(ML_FIX_VLLM_UTIL_DOWN);
    assert_non_null(down);
    assert_int_equal(down->fits, 0);
    assert_true(dg.serve.weights_bytes > e->free);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_story),     cmocka_unit_test(test_allocator_variable),
        cmocka_unit_test(test_serving_ledger), cmocka_unit_test(test_known_issues),
        cmocka_unit_test(test_other_process),  cmocka_unit_test(test_serving_arithmetic),
        cmocka_unit_test(test_sizes_and_host), cmocka_unit_test(test_arrow_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
