/*
 * The scanner against the field guide's own strings (shared reference/oom-messages.md, A1-A11):
 * every family, every era and spelling, with the numbers the text states; plus the stream
 * properties (any chunking gives the same events, CRLF, ANSI codes, tqdm carriage returns,
 * [rankN]: prefixes, lines over the cap) and the context (steps, saves, evals, versions).
 * Expected byte counts are the printed value x 2^unit, rounded half up (labels.jsonl's rule).
 */
#include "ml_test.h"

#include "memledger/oom.h"

static struct ml_incident inc;
static struct ml_oom_scanner sc;

static const struct ml_incident *scan(const char *text)
{
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    ml_oom_scan_buffer(&sc, text, strlen(text));
    return &inc;
}

static const struct ml_oom_event *one(const char *text)
{
    const struct ml_incident *i = scan(text);
    if (i->n_events != 1)
        fail_msg("%u events in: %s", i->n_events, text);
    return &i->ev[0];
}

#define GI(x) ((uint64_t)((x)*1073741824.0 + 0.5))
#define MI(x) ((uint64_t)((x)*1048576.0 + 0.5))

static void test_sizes(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_true(ml_oom_parse_size("14.81 GiB", &v) == 9 && v == 15902116413ull);
    assert_true(ml_oom_parse_size("571.62 MiB", &v) && v == 599387013ull);
    assert_true(ml_oom_parse_size("0 bytes is free", &v) == 7 && v == 0);
    assert_true(ml_oom_parse_size("179.00 KiB cached", &v) && v == 183296);
    assert_true(ml_oom_parse_size("14.9 GiB.", &v) && v == 15998753178ull);
    assert_true(ml_oom_parse_size("15.98GiB", &v) && v == 17158394348ull);
    /* MPS and DeepSpeed print GB for 2^30 (A5, A9). */
    assert_true(ml_oom_parse_size("17.01 GB", &v) && v == 18264348426ull);
    assert_true(ml_oom_parse_size("1EB memory", &v) && v == (uint64_t)1 << 60);
    assert_true(ml_oom_parse_size("4398046511104 bytes", &v) && v == 4398046511104ull);
    assert_int_equal(ml_oom_parse_size("GiB", &v), 0);
    assert_int_equal(ml_oom_parse_size("1.5 bytes", &v), 0);
    assert_int_equal(ml_oom_parse_size("12 apples", &v), 0);
    assert_int_equal(ml_oom_parse_size("99999999999999999999 EiB", &v), 0);
}

/* A1: every era of the CUDA caching allocator's message. */
static void test_cuda_eras(void **state)
{
    (void)state;
    const struct ml_oom_event *e =
        one("RuntimeError: CUDA out of memory. Tried to allocate 16.00 GiB (GPU 0; 11.93 GiB total capacity; 4.00 GiB "
            "already allocated; 7.33 GiB free; 179.00 KiB cached)");
    assert_int_equal(e->kind, ML_OOM_ALLOCATOR);
    assert_int_equal(e->device, ML_DEV_CUDA);
    assert_true(e->classic);
    assert_true(e->requested == GI(16) && e->total == GI(11.93) && e->allocated == GI(4) && e->free == GI(7.33));
    assert_true(e->reserved == 183296);

    e = one(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.14 GiB (GPU 5; 31.75 GiB total "
        "capacity; 28.28 GiB already allocated; 1.95 GiB free; 28.28 GiB reserved in total by PyTorch) If reserved "
        "memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for "
        "Memory Management and PYTORCH_CUDA_ALLOC_CONF");
    assert_int_equal(e->gpu, 5);
    assert_true(e->reserved == GI(28.28) && e->allocated == GI(28.28));
    assert_int_equal(e->hint, ML_HINT_MAX_SPLIT);

    /* 2.1: "capacty", a process line and this process. */
    e = one(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 138.00 MiB. GPU 0 has a total capacty "
        "of 15.90 GiB of which 8.44 MiB is free. Process 1246069 has 577.00 MiB memory in use. Including non-PyTorch "
        "memory, this process has 15.32 GiB memory in use. Of the allocated memory 14.12 GiB is allocated by "
        "PyTorch, and 410.41 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
        "try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
        "PYTORCH_CUDA_ALLOC_CONF");
    assert_false(e->classic);
    assert_true(e->requested == MI(138) && e->total == GI(15.90) && e->free == MI(8.44));
    assert_int_equal(e->n_procs, 1);
    assert_true(e->procs[0].pid == 1246069 && e->procs[0].bytes == MI(577));
    assert_true(e->this_process == GI(15.32) && e->allocated == GI(14.12) && e->reserved_unalloc == MI(410.41));

    /* Later 2.x: "allowed" and private pools; the newest PYTORCH_ALLOC_CONF hint. */
    e = one(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.39 GiB. GPU 1 has a total capacity of "
        "79.32 GiB of which 2.40 GiB is free. Process 105400 has 76.92 GiB memory in use. 70.00 GiB allowed; Of the "
        "allocated memory 73.28 GiB is allocated by PyTorch, with 1.00 GiB allocated in private pools (e.g., CUDA "
        "Graphs), and 1.59 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
        "try setting PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
    assert_true(e->allowed == GI(70) && (e->has & ML_OOM_F_ALLOWED));
    assert_true(e->private_pool == GI(1) && e->allocated == GI(73.28) && e->reserved_unalloc == GI(1.59));
    assert_int_equal(e->hint, ML_HINT_ALLOC_CONF);

    /* The device-agnostic template has no device word. */
    e = one(
        "torch.OutOfMemoryError: Out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.55 GiB "
        "of which 1.00 GiB is free.");
    assert_int_equal(e->kind, ML_OOM_ALLOCATOR);
    assert_int_equal(e->device, ML_DEV_UNKNOWN);

    /* Impossible sizes (A1 traps). */
    e = one("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory");
    assert_int_equal(e->kind, ML_OOM_IMPOSSIBLE);
    assert_true(e->requested == (uint64_t)1 << 60);
}

/* A2-A6: ROCm/HIP (incl. Hygon's missing period), Ascend, XPU, MPS, MUSA. */
static void test_backends(void **state)
{
    (void)state;
    const struct ml_oom_event *e = one(
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 4.50 GiB. GPU 0 has a total capacity of 15.98 "
        "GiB of which 1.40 GiB is free. Of the allocated memory 1.26 GiB is allocated by PyTorch, and 152.50 MiB is "
        "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
    assert_int_equal(e->device, ML_DEV_HIP);
    assert_int_equal(e->hint, ML_HINT_HIP_CONF);
    assert_true(e->requested == GI(4.5) && e->reserved_unalloc == MI(152.5));

    e = one("torch.cuda.OutOfMemoryError: HIP out of memory. Tried to allocate 39.41 GiB GPU 0 has a total capacity of "
            "31.98 GiB");
    assert_true(e->requested == GI(39.41) && e->total == GI(31.98) && e->gpu == 0);

    e = one("RuntimeError: NPU out of memory. Tried to allocate 130.00 MiB (NPU 0; 29.50 GiB total capacity; 28.45 GiB "
            "already allocated; 28.45 GiB current active; 31.40 MiB free; 28.67 GiB reserved in total by PyTorch) If "
            "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.");
    assert_int_equal(e->device, ML_DEV_NPU);
    assert_true(e->active == GI(28.45) && e->free == MI(31.4) && e->reserved == GI(28.67));

    e = one(
        "NPU out of memory. NPUWorkspaceAllocator tried to allocate 180.00 MiB(NPU 1; 60.96 GiB total capacity; 86.81 "
        "MiB free). If you want to reduce memory usage, take a try to set the environment variable "
        "TASK_QUEUE_ENABLE=1.");
    assert_int_equal(e->kind, ML_OOM_NPU_WORKSPACE);
    assert_true(e->requested == MI(180) && e->total == GI(60.96) && e->free == MI(86.81) && e->gpu == 1);

    /* A CANN code alone is an event; next to an NPU message it is its companion. */
    assert_int_equal(scan("[ERROR] ERR00006 PTA memory error\n")->n_events, 1);
    assert_int_equal(
        scan("RuntimeError: NPU out of memory. Tried to allocate 30.00 MiB (NPU 3; 60.96 GiB total capacity; "
             "60.34 GiB already allocated; 14.24 MiB free; 60.60 GiB reserved in total by PyTorch)\n"
             "Memory_Allocation_Failure(EL0004): Failed to allocate memory\n")
            ->n_events,
        1);

    e = one("RuntimeError: XPU out of memory. Tried to allocate 1.00 GiB (GPU 0; 15.56 GiB total capacity; 990.00 MiB "
            "already allocated; 990.00 MiB reserved in total by PyTorch)");
    assert_int_equal(e->device, ML_DEV_XPU);
    assert_true(e->allocated == MI(990) && e->reserved == MI(990));
    e = one("XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.56 GiB. Of the allocated "
            "memory 12.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated. Please use "
            "`empty_cache` to release all unoccupied cached memory.");
    assert_int_equal(e->hint, ML_HINT_EMPTY_CACHE);
    e = one("RuntimeError: UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY");
    assert_true(e->kind == ML_OOM_RUNTIME && e->device == ML_DEV_XPU);

    e = one(
        "RuntimeError: MPS backend out of memory (MPS allocated: 17.01 GB, other allocations: 1.07 GB, max allowed: "
        "18.13 GB). Tried to allocate 152.30 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable "
        "upper limit for memory allocations (may cause system failure).");
    assert_int_equal(e->kind, ML_OOM_MPS);
    assert_true(e->allocated == GI(17.01) && e->other == GI(1.07) && e->total == GI(18.13) &&
                e->requested == MI(152.3));
    e = one(
        "MPS backend out of memory (currently allocated: 10.00 GiB, max allowed: 18.13 GiB). Tried to allocate 1.00 "
        "GiB on private pool.");
    assert_true(e->allocated == GI(10) && e->total == GI(18.13));
    e = one(
        "MPS backend out of memory (MPS allocated: 20.00 GiB, other allocations: 2.00 GiB). Tried to allocate 1.00 GiB "
        "on shared pool.");
    assert_false(e->has & ML_OOM_F_TOTAL);

    e = one(
        "MUSA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 47.98 GiB of which 1.00 GiB is "
        "free. See documentation for Memory Management and PYTORCH_MUSA_ALLOC_CONF");
    assert_int_equal(e->device, ML_DEV_MUSA);
    assert_int_equal(e->hint, ML_HINT_MUSA_CONF);
}

/* A7, A8: libraries, raw runtime and driver errors, NCCL. */
static void test_libraries(void **state)
{
    (void)state;
    assert_int_equal(
        one("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")->kind,
        ML_OOM_CUBLAS);
    assert_int_equal(
        one("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`")->kind,
        ML_OOM_CUBLAS);
    assert_int_equal(one("RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED")->kind, ML_OOM_CUDNN);
    assert_int_equal(
        one("RuntimeError: cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling `cusolverDnCreate(handle)`")
            ->kind,
        ML_OOM_CUDNN);
    const struct ml_oom_event *e =
        one("RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously "
            "reported at some other API call, so the stacktrace below might be incorrect.\n");
    assert_true(e->kind == ML_OOM_RUNTIME && e->device == ML_DEV_CUDA);
    assert_int_equal(
        one("RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/THCCachingAllocator.cpp:510")
            ->kind,
        ML_OOM_RUNTIME);
    assert_int_equal(one("RuntimeError: HIP error: out of memory")->device, ML_DEV_HIP);
    assert_int_equal(one("hipErrorOutOfMemory")->device, ML_DEV_HIP);
    assert_int_equal(one("RuntimeError: triton runtime error: out of memory")->kind, ML_OOM_RUNTIME);
    assert_int_equal(one("RuntimeError: CUDA driver error: out of memory")->kind, ML_OOM_DRIVER);

    e = one("node1:1234:1300 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'");
    assert_int_equal(e->kind, ML_OOM_NCCL);
    e = one("node1:1234:1300 [0] NCCL WARN Failed to CUDA calloc 6291456 bytes");
    assert_true(e->kind == ML_OOM_NCCL && e->requested == 6291456);
    e = one("Cuda failure 2 'out of memory'");
    assert_int_equal(e->kind, ML_OOM_NCCL);
    e = one(
        "node1:1234:1300 [0] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-3l3x (size 9637888)");
    assert_int_equal(e->kind, ML_OOM_NCCL_SHM);
}

/* A10: vLLM start-up and warm-up errors (v0 and v1 wording). */
static void test_vllm(void **state)
{
    (void)state;
    const struct ml_oom_event *e = one(
        "ValueError: Free memory on device (59.32/79.15 GiB) on startup is less than desired GPU memory utilization "
        "(0.9, 71.24 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.");
    assert_int_equal(e->kind, ML_OOM_VLLM_FREE_MEMORY);
    assert_true(e->free == GI(59.32) && e->total == GI(79.15) && e->requested == GI(71.24) && e->util_permille == 900);
    e = one("ValueError: Free memory on device xpu:0 (0.22/30.3 GiB) on startup is less than desired GPU memory "
            "utilization (0.9, 27.27 GiB).");
    assert_int_equal(e->device, ML_DEV_XPU);
    /* V1's KV lines (gpu_worker, kv_cache_utils): the pool in GiB and in tokens. */
    const struct ml_incident *vi = scan("INFO [gpu_worker.py:276] Available KV cache memory: 58.53 GiB\n"
                                        "INFO [kv_cache_utils.py:1087] GPU KV cache size: 1,095,984 tokens\n");
    assert_true(vi->prof_kv_cache == GI(58.53) && vi->prof_kv_tokens == 1095984);

    e = one("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
            "initializing the engine.");
    assert_int_equal(e->kind, ML_OOM_VLLM_NO_CACHE);
    e = one(
        "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in "
        "KV cache (3664). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
        "engine.");
    assert_true(e->kind == ML_OOM_VLLM_KV_TOO_SMALL && e->max_seq_len == 4096 && e->kv_tokens == 3664);
    e = one("ValueError: To serve at least one request with the models's max seq len (262144), (7.17 GiB KV cache is "
            "needed, which is larger than the available KV cache memory (6.74 GiB). Based on the available memory, the "
            "estimated maximum model length is 232000. Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.");
    assert_true(e->max_seq_len == 262144 && e->requested == GI(7.17) && e->free == GI(6.74) &&
                e->est_max_len == 232000);
    e = one("RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy requests. Please try "
            "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.");
    assert_int_equal(e->kind, ML_OOM_VLLM_WARMUP);

    const struct ml_incident *i = scan(
        "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.98GiB "
        "memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=2.89GiB "
        "gpu_memory_utilization=0.90\n"
        "# GPU blocks: 1478, # CPU blocks: 2048\n"
        "WARNING scheduler.py:1057 Sequence group 0 is preempted by PreemptionMode.RECOMPUTE mode because there is "
        "not enough KV cache space.\n");
    assert_int_equal(i->n_events, 0);
    assert_true(i->has_profile && i->prof_total == GI(23.58) && i->prof_kv_cache == GI(2.89) &&
                i->prof_util_permille == 900);
    assert_true(i->gpu_blocks == 1479 && i->preemptions == 1);

    /* The source line a traceback quotes is not the error. */
    assert_int_equal(scan("    raise ValueError(\"No available memory for the cache blocks. \"\n")->n_events, 0);
}

/* A9, A11: DeepSpeed signals and host OOM. */
static void test_host_and_deepspeed(void **state)
{
    (void)state;
    const struct ml_oom_event *e =
        one("Out of memory: Killed process 2481 (python3) total-vm:8123400kB, anon-rss:7981200kB, file-rss:0kB, "
            "shmem-rss:0kB, UID:1000 pgtables:11264kB oom_score_adj:0");
    assert_true(e->kind == ML_OOM_HOST_KILLER && e->this_process == 7981200ull * 1024);
    assert_int_equal(one("Memory cgroup out of memory: Killed process 77 (python)")->kind, ML_OOM_HOST_KILLER);
    assert_int_equal(one("python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0")->kind,
                     ML_OOM_HOST_KILLER);
    e = one("  exitcode  : -9 (pid: 8158)\n  traceback : Signal 9 (SIGKILL) received by PID 8158\n");
    assert_true(e->kind == ML_OOM_HOST_SIGKILL && e->exit_code == -9 && e->repeats == 2);
    assert_int_equal(one("failed (exitcode: -9) local_rank: 0 (pid: 4242) of binary: /usr/bin/python")->exit_code, -9);
    assert_int_equal(one("[launch.py:319:sigkill_handler] ... exits with return code = -9")->exit_code, -9);
    assert_int_equal(one("command terminated with exit code 137")->exit_code, 137);
    assert_int_equal(one("Killed")->kind, ML_OOM_HOST_SIGKILL);
    assert_int_equal(one("./train.sh: line 12: 30211 Killed                  python train.py")->kind,
                     ML_OOM_HOST_SIGKILL);
    e = one(
        "RuntimeError: [enforce fail at alloc_cpu.cpp:83] err == 0. DefaultCPUAllocator: can't allocate memory: you "
        "tried to allocate 268435456 bytes. Error code 12 (Cannot allocate memory)");
    assert_true(e->kind == ML_OOM_HOST_ALLOC && e->requested == 268435456);
    assert_int_equal(
        one("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.")->kind,
        ML_OOM_HOST_RAY);
    /* An exit code 1 is a launcher line, not an event. */
    const struct ml_incident *i = scan("  exitcode  : 1 (pid: 4853)\n");
    assert_true(i->n_events == 0 && i->exit_code == 1);

    i = scan(
        "[WARNING] [stage3.py:2171:step] 3 pytorch allocator cache flushes since last step. this happens when there "
        "is high memory pressure and is detrimental to performance.\n"
        "[INFO] [utils.py:781:see_memory_usage] MA 11.76 GB         Max_MA 11.76 GB         CA 11.77 GB         Max_CA "
        "12 GB\n"
        "[INFO] [utils.py:789:see_memory_usage] CPU Virtual Memory:  used = 28.43 GB, percent = 22.6%\n"
        "[INFO] [utils.py:781:see_memory_usage] MA 12.10 GB         Max_MA 12.2 GB         CA 12.3 GB         Max_CA "
        "13 GB\n"
        "[INFO] [utils.py:781:see_memory_usage] MA 12.90 GB         Max_MA 13 GB         CA 13.1 GB         Max_CA 13 "
        "GB\n");
    assert_true(i->flush_warnings == 1 && i->flush_max == 3);
    assert_true(i->mem_samples == 3 && i->ma_first == GI(11.76) && i->ma_last == GI(12.90) && i->ma_rising);
    assert_int_equal(i->cpu_percent_permille, 226);
    /* Prose that mentions OOM is not an event. */
    assert_int_equal(scan("Tip: to avoid out of memory errors lower the batch size.\n")->n_events, 0);
}

/* Streams: chunking, CRLF, ANSI codes, tqdm carriage returns, ranks, long lines, wrapped messages. */
static const char wrapped[] =
    "[rank1]:     per_token_logps = torch.gather(logits.log_softmax(-1), dim=2)\r\n"
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.36 GiB. GPU 1 has a total capacity of "
    "47.50 GiB of which 1.52 GiB is free. Including non-PyTorch memory, this process has 45.97 GiB memory in use. Of "
    "the allocated memory 4\r\n"
    "0.30 GiB is allocated by PyTorch, and 4.91 GiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated\r\n"
    " memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\r\n"
    "[rank6]: Traceback (most recent call last):\r\n"
    "[rank6]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.36 GiB. GPU 6 has a total capacity of "
    "47.50 GiB of which 1.52 GiB is free. Including non-PyTorch memory, this process has 45.97 GiB memory in use. Of "
    "the allocated memory 40.30 GiB is allocated by PyTorch, and 4.91 GiB is reserved by PyTorch but unallocated.\r\n";

static void test_stream(void **state)
{
    (void)state;
    struct ml_incident whole;
    ml_incident_init(&whole);
    ml_oom_scanner_init(&sc, &whole);
    ml_oom_scan_buffer(&sc, wrapped, strlen(wrapped));
    assert_int_equal(whole.n_events, 1);
    const struct ml_oom_event *e = &whole.ev[0];
    assert_true(e->allocated == GI(40.30) && e->reserved_unalloc == GI(4.91) && e->wrapped);
    assert_true(e->rank == 1 && e->repeats == 2 && e->rank_mask == ((1u << 1) | (1u << 6)));
    assert_int_equal(e->phase, ML_OPH_LOSS);
    for (size_t step = 1; step <= 97; step += 8) {
        ml_incident_init(&inc);
        ml_oom_scanner_init(&sc, &inc);
        ml_oom_scan_begin(&sc);
        for (size_t o = 0; o < strlen(wrapped); o += step)
            ml_oom_scan(&sc, wrapped + o, o + step > strlen(wrapped) ? strlen(wrapped) - o : step);
        ml_oom_scan_end(&sc);
        assert_int_equal(inc.n_events, 1);
        assert_memory_equal(&inc.ev[0], &whole.ev[0], sizeof(whole.ev[0]));
    }

    /* ANSI colour codes, escaped or printed as ^[[ (vllm-33297). */
    e = one("\x1b[0;36m(EngineCore_DP0 pid=738)\x1b[0;0m \x1b[31mERROR\x1b[0m ValueError: Free memory on device cuda:0 "
            "(1.54/22.05 GiB) on startup is less than desired GPU memory utilization (0.9, 19.84 GiB).");
    assert_true(e->free == GI(1.54) && e->total == GI(22.05));
    e = one("^[[0;36m(EngineCore_DP0 pid=738)^[[0;0m ^[[31mERROR^[[0m ValueError: Free memory on device cuda:0 "
            "(1.54/22.05 GiB) on startup is less than desired GPU memory utilization (0.9, 19.84 GiB).");
    assert_true(e->total == GI(22.05));
    /* A colour code inside the message: the numbers are read once it is gone. */
    e = one("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate \x1b[1m2.00 GiB\x1b[0m. GPU 0 has a total "
            "capacity of 79.15 GiB of which 10.00 MiB is free.");
    assert_true(e->requested == GI(2.00) && e->total == GI(79.15));

    /* Lines over the cap are read whole, in pieces: the OOM in the first 8 KiB is read, and so is
     * one past it, and the line is counted. */
    static char big[3 * ML_OOM_LINE_MAX];
    const char msg[] = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                       "capacity of 79.15 GiB of which 10.00 MiB is free.";
    for (size_t at = 0; at < sizeof(big) - sizeof(msg); at += 1999) {
        memset(big, 'x', sizeof(big) - 1);
        for (size_t k = 0; k < sizeof(big) - 1; k += 97)
            big[k] = ' '; /* words, so that the pieces are cut at a blank */
        memcpy(big + at, msg, sizeof(msg) - 1);
        big[sizeof(big) - 1] = '\0';
        const struct ml_incident *i = scan(big);
        if (i->n_events != 1 || i->ev[0].total != GI(79.15) || i->ev[0].requested != GI(2.00))
            fail_msg("the message at byte %zu of a %zu-byte line: %u events", at, sizeof(big) - 1, i->n_events);
        assert_true(i->truncated_lines == 1 && i->longest_line == sizeof(big) - 1 && i->lines == 1);
    }
}

/* Damaged text (issue 13): a wrap between a number and its unit or inside a number, words run
 * together, a one-line paste, a JSON record, a terminal's hard wrap inside an anchor. */
static void test_damaged_text(void **state)
{
    (void)state;
    const struct ml_oom_event *e;
    e = one(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 39.56\n"
        "GiB of which 10.00 MiB is free. Of the allocated memory 38.00 GiB is allocated by PyTorch, and 1.0\n"
        "0 GiB is reserved by PyTorch but unallocated.\n");
    assert_true(e->total == GI(39.56) && e->free == MI(10) && e->allocated == GI(38) && e->reserved_unalloc == GI(1));
    /* Units glued to the next word. */
    e = one("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 8.00 GiBtotal "
            "capacity; 7.06 GiBalready allocated; 0 bytesfree; 7.29 GiBreserved in total by PyTorch)\n");
    assert_true(e->requested == MI(20) && e->total == GI(8) && e->allocated == GI(7.06) && e->free == 0 &&
                e->reserved == GI(7.29) && e->classic);
    /* A one-line paste: the traceback runs on after the message, and a second message follows. */
    const struct ml_incident *i = scan(
        "RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 15.78 GiB total capacity; 14.2 GiB "
        "already allocated; 4.00 MiB free; 14.5 GiB reserved in total by PyTorch) Traceback (most recent call last): "
        "File \"a.py\", line 3, in f RuntimeError: CUDA out of memory. Tried to allocate 128.00 MiB (GPU 1; 15.78 GiB "
        "total capacity; 15.0 GiB already allocated; 2.00 MiB free; 15.2 GiB reserved in total by PyTorch)\n");
    assert_int_equal(i->n_events, 2);
    assert_true(i->ev[0].requested == MI(64) && i->ev[0].gpu == 0 && i->ev[0].reserved == GI(14.5));
    assert_true(i->ev[1].requested == MI(128) && i->ev[1].gpu == 1 && i->ev[1].reserved == GI(15.2));
    /* A JSON record: its escaped newlines are lines, its quotes decoded; past 8 KiB of the line too. */
    static char rec[12000];
    int k =
        snprintf(rec, sizeof(rec),
                 "{\"ts\": \"2026-01-01T00:00:00Z\", \"pad\": \"%09000d\", \"message\": "
                 "\"Traceback (most recent call last):\\n  File \\\"train.py\\\", line 9, in <module>\\n    "
                 "trainer.train()\\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has "
                 "a total capacity of 79.15 GiB of which 8.00 MiB is free.\\n\"}\n",
                 7);
    assert_true(k > 9000 && (size_t)k < sizeof(rec));
    i = scan(rec);
    assert_true(i->n_events == 1 && i->ev[0].requested == GI(1) && i->ev[0].total == GI(79.15));
    assert_true(i->json_lines == 1 && i->truncated_lines == 1);
    /* A terminal hard-wrapped the message at 80 columns inside "out of memory". */
    e = one(
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total \n"
        "capacity of 79.15 GiB of which 10.00 MiB is free. Process 1234 has 79.14 GiB memory in use. Of the alloc\n");
    assert_true(e->total == GI(79.15) && e->n_procs == 1 && e->procs[0].bytes == GI(79.14) && e->cut);
    i = scan("2026-01-01 10:00:00 ERROR worker.py:12 RuntimeError: NCCL error: unhandled cuda error, CUDA out of m\n"
             "emory. Tried to allocate 3.00 GiB. GPU 2 has a total capacity of 23.65 GiB of which 12.00 MiB is fr\n"
             "ee.\n");
    assert_true(i->n_events == 1 && i->ev[0].requested == GI(3) && i->ev[0].free == MI(12));
    /* The seam also joins a wrapped class name: "DefaultCPUAllo" + "cator". */
    e = one("RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllo\n"
            "cator: can't allocate memory: you tried to allocate 180355072 bytes. Error code 12\n");
    assert_true(e->kind == ML_OOM_HOST_ALLOC && e->requested == 180355072);
    /* A message whose last sentence never came is marked cut. */
    i = scan("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU\n\n");
    assert_true(i->n_events == 1 && i->ev[0].cut && i->cut_messages == 1);
    /* Lines of another rank or process do not continue a message. */
    i = scan("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total\n"
             "[rank1]: capacity of 9.00 GiB of which 1 GiB is free.\n");
    assert_true(i->n_events == 1 && !(i->ev[0].has & ML_OOM_F_TOTAL));
}

/* Phase cues that are not 'File "...", line N' frames (issue 13). */
static void test_cues_beyond_frames(void **state)
{
    (void)state;
    static const char oom[] = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 56.00 MiB. GPU 0 has a "
                              "total capacity of 79.33 GiB of which 49.81 MiB is free.\n";
    static char t[2048];
    /* A code line that calls a function the frame rows know, after a frame. */
    snprintf(t, sizeof(t),
             "%s[rank5]: Traceback (most recent call last):\n[rank5]:   File \"w.py\", line 52, in run_sft\n"
             "[rank5]:     model = load_model(tokenizer, model_args)\n",
             oom);
    const struct ml_oom_event *e = one(t);
    assert_int_equal(e->phase, ML_OPH_LOAD);
    /* A constructor that places the model: Trainer(...) -> __init__. */
    snprintf(t, sizeof(t),
             "%sTraceback (most recent call last):\n  File \"w.py\", line 38, in run_rm\n    trainer = "
             "PairwiseTrainer(\n  File \"t.py\", line 23, in __init__\n    super().__init__(*args, **kwargs)\n",
             oom);
    assert_int_equal(one(t)->phase, ML_OPH_LOAD);
    /* The failing frame's code line just before the exception, its indentation lost. */
    snprintf(t, sizeof(t), " attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))\n%s", oom);
    e = one(t);
    assert_true(e->eager_frames && e->phase == ML_OPH_UNKNOWN);
    /* The text before the message on its line: FSDP's state_dict warning. */
    e = one(
        "fsdp.py:2224: UserWarning: Failed to clone() tensor with name lm_head.weight. This may mean that this "
        "state_dict entry could point to invalid memory regions. Error: CUDA out of memory. Tried to allocate 502.00 "
        "MiB (GPU 0; 39.59 GiB total capacity; 35.54 GiB already allocated; 276.19 MiB free; 37.22 GiB reserved in "
        "total by PyTorch)");
    assert_true(e->phase == ML_OPH_CHECKPOINT_SAVE && e->in_save_frames);
    /* ooba's summary line after the OOM: generation, and its context. */
    const struct ml_incident *i =
        scan("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; "
             "8.00 GiB total capacity; 7.06 GiB already allocated; 0 bytes free; 7.29 GiB "
             "reserved in total by PyTorch)\nOutput generated in 0.28 seconds (0.00 tokens/s, 0 "
             "tokens, context 500, seed 1597093298)\n");
    assert_true(i->ev[0].phase == ML_OPH_GENERATE && i->gen_context == 500);
    /* vLLM's workers: the method being run is at run time; worker prefixes and no request: start-up. */
    i = scan("(VllmWorkerProcess pid=4) ERROR 03-19 10:55:18 [w.py:242] torch.OutOfMemoryError: CUDA out of memory. "
             "Tried to allocate 128.00 MiB. GPU 2 has a total capacity of 79.33 GiB of which 16.00 MiB is free.\n"
             "(VllmWorkerProcess pid=3) ERROR 03-19 10:55:18 [w.py:242] Exception in worker VllmWorkerProcess while "
             "processing method start_worker_execution_loop.\n");
    assert_int_equal(i->ev[0].phase, ML_OPH_SERVING_RUNTIME);
    i = scan("(EngineCore_DP0 pid=972) ERROR 01-28 15:59:42 [core.py:935] torch.OutOfMemoryError: HIP out of memory. "
             "Tried to allocate 12.95 GiB. GPU 0 has a total capacity of 127.00 GiB of which 18.55 GiB is free.\n");
    assert_true(i->saw_engine_proc && i->ev[0].phase == ML_OPH_SERVING_STARTUP);
    i = scan(
        "INFO 01-28 15:50:00 Avg prompt throughput: 10.0 tokens/s\n(EngineCore_DP0 pid=972) ERROR torch."
        "OutOfMemoryError: HIP out of memory. Tried to allocate 12.95 GiB. GPU 0 has a total capacity of 127.00 GiB "
        "of which 18.55 GiB is free.\n");
    assert_int_equal(i->ev[0].phase, ML_OPH_UNKNOWN);
    /* Caught and retried: the exception raised while handling the OOM marks it. */
    snprintf(t, sizeof(t),
             "Traceback (most recent call last):\n  File \"t.py\", line 9, in step\n    out = model(x)\n%s\n"
             "During handling of the above exception, another exception occurred:\n\nTraceback (most recent call "
             "last):\n  File \"t.py\", line 12, in step\n",
             oom);
    e = one(t);
    assert_true(e->chained);
}

/* Event forms without "out of memory" or split over two lines (issue 13, C8, C11, C12). */
static void test_event_forms(void **state)
{
    (void)state;
    /* The poster trimmed the exception: a bare "Tried to allocate" with the allocator's accounting. */
    const struct ml_oom_event *e =
        one("Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total capacity; 69.17 MiB already "
            "allocated; 24.56 MiB free; 86.00 MiB reserved in total by PyTorch)");
    assert_true(e->kind == ML_OOM_ALLOCATOR && e->requested == MI(216) && e->total == GI(7.92) && e->free == MI(24.56));
    assert_int_equal(scan("we tried to allocate a bigger buffer and it failed\n")->n_events, 0);
    /* THC's check, glued to a tqdm bar. */
    e = one("Valid epoch 1:   9%|##   | 1/11 [00:01<00:13,  1.33s/it]THCudaCheck FAIL file=/pytorch/aten/src/THC/"
            "generic/THCStorage.cu line=58 error=2 : out of memory");
    assert_true(e->kind == ML_OOM_RUNTIME && e->device == ML_DEV_CUDA);
    /* NCCL prints one failure as two lines of one thread: one event with the size (A8). */
    const struct ml_incident *i =
        scan("ng1:306:315 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n\n"
             "ng1:306:315 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes\n"
             "ng1:306:315 [3] NCCL INFO transport/p2p.cc:204 -> 1\n");
    assert_true(i->n_events == 1 && i->ev[0].kind == ML_OOM_NCCL && i->ev[0].requested == 6291456);
    e = one("host:1:2 [0] misc/alloc.cc:55 NCCL WARN Failed to CUDA calloc async 24 bytes\n");
    assert_true(e->kind == ML_OOM_NCCL && e->requested == 24);
    /* The kernel's OOM killer: the killed PID and its memory (A11). */
    e = one("[856341.770960] Out of memory: Killed process 410126 (python) total-vm:79905000kB, anon-rss:22957108kB, "
            "file-rss:72036kB, shmem-rss:15143164kB, UID:1000 pgtables:78032kB oom_score_adj:0");
    assert_true(e->kind == ML_OOM_HOST_KILLER && e->host_pid == 410126 && e->this_process == 22957108ull * 1024 &&
                e->host_total_vm == 79905000ull * 1024 && e->host_file_rss == 72036ull * 1024 &&
                e->host_shmem_rss == 15143164ull * 1024);
    /* MPS: other allocations (A5). */
    e = one(
        "RuntimeError: MPS backend out of memory (MPS allocated: 15.05 GB, other allocations: 11.91 GB, max allowed: "
        "27.20 GB). Tried to allocate 1.16 GB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable "
        "upper limit for memory allocations (may cause system failure).");
    assert_true(e->other == GI(11.91) && (e->has & ML_OOM_F_OTHER) && e->allocated == GI(15.05));
}

/* Context: step counters, tqdm bars, saves, evals, versions, platform hints. */
static void test_context(void **state)
{
    (void)state;
    const struct ml_incident *i = scan(
        "torch==2.4.1+rocm6.1\n"
        "[INFO] DeepSpeed info: version=0.14.4, git-hash=unknown\n"
        "  5%|▌         | 99/2000 [01:40<30:00,  1.00s/it]\r  5%|▌         | 100/2000 [01:41<30:00,  1.00s/it]\n"
        "[INFO|trainer.py:3984] >> Saving model checkpoint to out/checkpoint-100\n"
        "[INFO] [engine.py:3645:_save_zero_checkpoint] zero checkpoint saved out/checkpoint-100/global_step100/x.pt\n"
        "Traceback (most recent call last):\n"
        "  File \"/x/transformers/trainer.py\", line 3731, in compute_loss\n"
        "    outputs = model(**inputs)\n"
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 36.00 MiB. GPU 1 has a total capacity of 15.98 "
        "GiB "
        "of which 0 bytes is free. Of the allocated memory 14.81 GiB is allocated by PyTorch, and 571.62 MiB is "
        "reserved "
        "by PyTorch but unallocated.\n");
    assert_int_equal(i->n_events, 1);
    const struct ml_oom_event *e = &i->ev[0];
    assert_int_equal(e->timing, ML_TIM_AFTER_SAVE);
    assert_int_equal(e->timing_ref.line, 4);
    assert_int_equal(e->timing_ref.step, 100);
    assert_int_equal(e->phase, ML_OPH_FORWARD);
    assert_int_equal(i->n_versions, 2);
    assert_string_equal(i->versions[0].name, "torch");
    assert_string_equal(i->versions[0].value, "2.4.1+rocm6.1");
    assert_string_equal(i->versions[1].name, "deepspeed");
    assert_string_equal(i->versions[1].value, "0.14.4");

    /* vLLM's engine line (V0 and V1) names its version without the word "version". */
    i = scan("INFO 11-18 18:07:20 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: model='Q'\n"
             "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
             "initializing the engine.\n");
    assert_true(i->n_versions == 1 && !strcmp(i->versions[0].name, "vllm") &&
                !strcmp(i->versions[0].value, "0.6.4.post1"));
    i = scan("(EngineCore_0 pid=1) INFO [core.py:70] Initializing a V1 LLM engine (v0.10.1) with config: model='Q'\n");
    assert_true(i->n_versions == 1 && !strcmp(i->versions[0].value, "0.10.1"));
    /* ... and the settings it ran with (V0 llm_engine.py's format; V1 prints VllmConfig alike). */
    i = scan(
        "INFO 11-18 18:07:20 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: "
        "model='meta-llama/Llama-3.1-8B', speculative_config=None, tokenizer='meta-llama/Llama-3.1-8B', "
        "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, trust_remote_code=False, dtype=torch.float16, "
        "max_seq_len=29000, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=2, "
        "pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=fp8, enforce_eager=True, "
        "kv_cache_dtype=fp8_e4m3, quantization_param_path=None, device_config=cuda, seed=0\n");
    const struct ml_oom_engine *g = &i->engine;
    assert_true(g->seen && g->line == 1 && g->max_seq_len == 29000 && g->tp == 2 && g->pp == 1 && g->enforce_eager);
    assert_string_equal(g->model, "meta-llama/Llama-3.1-8B");
    assert_string_equal(g->dtype, "torch.float16");
    assert_string_equal(g->quantization, "fp8");
    assert_string_equal(g->kv_cache_dtype, "fp8_e4m3");

    /* Evaluation: the frames say eval, the timing says during evaluation. */
    i = scan(
        "***** Running Evaluation *****\n"
        "Traceback (most recent call last):\n"
        "  File \"/x/transformers/trainer.py\", line 4100, in evaluation_loop\n"
        "  File \"/x/transformers/trainer.py\", line 4300, in prediction_step\n"
        "  File \"/x/torch/nn/functional.py\", line 3479, in cross_entropy\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.15 "
        "GiB of which 1.00 GiB is free.\n");
    assert_int_equal(i->ev[0].phase, ML_OPH_EVAL);
    assert_int_equal(i->ev[0].timing, ML_TIM_AT_EVAL);

    /* A mid-run step (litgpt's "iter N step M"). */
    i = scan(
        "iter 3436 step 53: loss 2.9911, iter time: 400.10ms\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.06 GiB. GPU 0 has a total capacty of "
        "23.70 GiB of which 1.27 GiB is free.\n");
    assert_true(i->ev[0].step == 53 && i->ev[0].timing == ML_TIM_MID_RUN);

    /* Platforms: WSL kernel strings and Windows paths; the user's own expandable_segments. */
    i = scan("Linux "
             "5.15.153.1-microsoft-standard-WSL2\nC:\\Users\\me\\train.py\nPYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
             "True python x.py\n");
    assert_true(i->saw_wsl && i->saw_windows && i->saw_expandable);
    /* The OOM message's own hint is not the user's setting. */
    i = scan("try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation. If reserved but\n");
    assert_false(i->saw_expandable);
}

/* The SIMD pass 1 (fat Teddy, AVX2) and the scalar one find the same anchors, so the incidents are
 * byte for byte the same: random lines made of anchor pieces, near-misses, multi-byte UTF-8, CRs,
 * ANSI codes, NULs and line lengths around the 16-byte rounds (a fixed-seed generator). Skipped
 * where the CPU has no AVX2 (there the scalar pass is the only one). */
static struct ml_incident wide_inc;
static char random_log[1 << 20];

static void test_wide_equals_narrow(void **state)
{
    (void)state;
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    if (!ml_oom_scanner_simd(&sc, true))
        skip();
    static const char *const piece[] = {
        "out of memory",
        "Out of memory",
        "OutOfMemoryError",
        "CUBLAS_STATUS_ALLOC_FAILED",
        "step",
        "Step 12",
        "global_step=40",
        "iteration 7",
        "iter 3",
        "s/it]",
        "it/s]",
        " 42%|",
        "| 7/100 [",
        "{'loss': 1.2",
        "Saving",
        "saved",
        "checkpoint-200",
        "Evaluat",
        "eval_loss",
        "Loading",
        "loading",
        "esuming",
        "version",
        "torch==2.4.0",
        "vllm==0.6.5",
        "python3.10",
        "cache flushes",
        "Max_MA 3.2 GB",
        "CPU Virtual Memory",
        "GPU blocks: 10",
        "KV cache size",
        "[rank3]:",
        "[Rank 1]",
        "rank=2",
        "[repeated 3x across cluster]",
        "Killed",
        "\xe5\xb7\xb2\xe6\x9d\x80\xe6\xad\xbb", /* "已杀死": an anchor of bytes >= 0x80 */
        "\xe5\xb7\xb2\xe6\x9d\x80",             /* a near-miss of it */
        "exitcode",
        "SIGKILL",
        "oom-kill",
        "EL0004",
        "207001",
        "Traceback (most recent call last):",
        "  File \"x.py\", line 3, in f",
        " -> ",
        "vllm",
        "vLLM",
        "deepspeed",
        "stage3",
        "fsdp",
        "lora",
        "peft",
        "grpo",
        "dpo_",
        " DPO",
        "WSL2",
        "-tegra",
        ":\\Users",
        "expandable_segments:True",
        "eager_attention",
        "gradient_checkpointing",
        "ste",
        "tep",
        "Kille",
        "memor",
        "out of memor",
        "vll",
        "\x1b[0;31m",
        "\x1b[0m",
        "^[[0m",
        "^[[",
        "\r",
        "\r\n",
        "\t",
        "\xe2\x96\x88",
        "\xe2\x96\x8f",
        "    ",
        " ",
        "0123456789",
        "Tried to allocate 2.00 GiB",
        "GiB",
        "MiB",
    };
    const size_t np = sizeof(piece) / sizeof(piece[0]);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    size_t len = 0;
    while (len + 512 < sizeof(random_log)) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(x >> 33);
        if (r % 7 == 0) {
            random_log[len++] = '\n';
        } else if (r % 11 == 0) {
            random_log[len++] = (char)(r >> 8); /* any byte, NUL included */
        } else if (r % 5 == 0) {
            size_t k = (r >> 8) % 40; /* filler of a length around the round size */
            memset(random_log + len, 'a' + (char)(r % 26), k);
            len += k;
        } else {
            const char *pc = piece[(r >> 8) % np];
            memcpy(random_log + len, pc, strlen(pc));
            len += strlen(pc);
        }
    }
    /* Each piece at every offset of lines of every length up to 50: pass 1 itself, the rounds'
     * edges included (a NUL-free strcspn-clean line is what the scanner hands it). */
    static char line[128];
    for (size_t k = 0; k < np; k++) {
        size_t pl = strlen(piece[k]);
        for (size_t before = 0; before < 40; before++)
            for (size_t after = 0; after < 10; after++) {
                memset(line, '.', before);
                memcpy(line + before, piece[k], pl);
                memset(line + before + pl, ',', after);
                size_t n = before + pl + after;
                (void)ml_oom_scanner_simd(&sc, true);
                uint64_t w = ml_oom_anchor_groups(&sc, line, n);
                (void)ml_oom_scanner_simd(&sc, false);
                uint64_t s1 = ml_oom_anchor_groups(&sc, line, n);
                if (w != s1)
                    fail_msg("pass 1 differs on \"%.*s\": %llx (SIMD) vs %llx", (int)n, line, (unsigned long long)w,
                             (unsigned long long)s1);
            }
    }
    /* Whole random lines. */
    for (size_t o = 0, e; o < len; o = e + 1) {
        const char *nl = memchr(random_log + o, '\n', len - o);
        e = nl ? (size_t)(nl - random_log) : len;
        (void)ml_oom_scanner_simd(&sc, true);
        uint64_t w = ml_oom_anchor_groups(&sc, random_log + o, e - o);
        (void)ml_oom_scanner_simd(&sc, false);
        assert_true(w == ml_oom_anchor_groups(&sc, random_log + o, e - o));
    }
    ml_incident_init(&wide_inc);
    ml_oom_scanner_init(&sc, &wide_inc);
    ml_oom_scan_buffer(&sc, random_log, len);
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    (void)ml_oom_scanner_simd(&sc, false);
    ml_oom_scan_buffer(&sc, random_log, len);
    assert_true(inc.n_events > 10 && inc.saw_vllm && inc.n_versions > 1); /* the pieces were found */
    assert_memory_equal(&wide_inc, &inc, sizeof(inc));
}

/* The window pass (match.h) lists the anchors and rare bytes of 8 KiB at a time, up to 1024 of
 * each; a window whose list fills ends early and the line it cuts goes the per-line way. Lines so
 * dense in anchors, CRs, backslashes and ANSI codes that both lists fill, lines across windows at
 * many offsets, lines longer than a window and a message among them: the incident is byte for byte
 * the scalar pass's, whole and fed in 4093-byte chunks (a line cut by a chunk goes the per-line way). */
static char dense_log[3 << 20];

static void test_window_lists(void **state)
{
    (void)state;
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    if (!ml_oom_scanner_simd(&sc, true))
        skip();
    /* (anchors of groups that are never retired, most of them four or five bytes long) */
    static const char *const piece[] = {"step",  "step",     "Killed",  "\\",    "\r",      "\r", "it/s]",
                                        "aving", "[rank2]:", "\x1b[0m", "^[[1m", "{'loss'", "x",  "out of memory"};
    const size_t np = sizeof(piece) / sizeof(piece[0]);
    uint64_t x = 0x2545F4914F6CDD1Dull;
    size_t len = 0;
    for (unsigned line = 0; len + 40000 < sizeof(dense_log); line++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        /* mostly short lines, some of 2-9 KiB (they reach over a window), all dense */
        size_t want = line % 97 == 0 ? 2000 + (x >> 40) % 7000 : (x >> 40) % 300;
        for (size_t k = 0; k < want;) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const char *pc = piece[(x >> 33) % np];
            memcpy(dense_log + len, pc, strlen(pc));
            len += strlen(pc);
            k += strlen(pc);
        }
        if (line == 5000) {
            const char *oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
            memcpy(dense_log + len, oom, strlen(oom));
            len += strlen(oom);
        }
        dense_log[len++] = '\n';
    }
    for (int chunked = 0; chunked < 2; chunked++) {
        for (int wide = 1; wide >= 0; wide--) {
            struct ml_incident *i = wide ? &wide_inc : &inc;
            ml_incident_init(i);
            ml_oom_scanner_init(&sc, i);
            (void)ml_oom_scanner_simd(&sc, wide);
            ml_oom_scan_begin(&sc);
            size_t step = chunked ? 4093 : len;
            for (size_t o = 0; o < len; o += step)
                ml_oom_scan(&sc, dense_log + o, o + step > len ? len - o : step);
            ml_oom_scan_end(&sc);
        }
        assert_true(inc.n_events >= 1 && inc.lines > 10000);
        assert_memory_equal(&wide_inc, &inc, sizeof(inc));
    }
}

/* The kinds are a JSON contract (docs/cli/diagnose.md lists every event `kind`): each kind of the
 * list is documented, and the documentation names no other. */
static void test_kinds_documented(void **state)
{
    (void)state;
    size_t len = 0;
    char *doc = ml_test_slurp("docs/cli/diagnose.md", &len);
    assert_non_null(doc);
    const char *p = strstr(doc, "event `kind`s:");
    assert_non_null(p);
    const char *end = strchr(p, '.');
    assert_non_null(end);
    unsigned named = 0;
    for (const char *q = strchr(p + 14, '`'); q && q < end; q = strchr(q + 1, '`')) {
        const char *c = strchr(q + 1, '`');
        assert_non_null(c);
        bool found = false;
        for (int k = 0; k < ML_OOM_KIND_COUNT && !found; k++) {
            const char *n = ml_oom_kind_name((enum ml_oom_kind)k);
            found = strlen(n) == (size_t)(c - q - 1) && !strncmp(q + 1, n, (size_t)(c - q - 1));
        }
        if (!found)
            fail_msg("documented kind %.*s is not a kind", (int)(c - q - 1), q + 1);
        named++;
        q = c;
    }
    assert_int_equal(named, ML_OOM_KIND_COUNT);
    for (int k = 0; k < ML_OOM_KIND_COUNT; k++)
        assert_true(ml_oom_kind_story((enum ml_oom_kind)k)[0] != '\0');
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_cuda_eras),
        cmocka_unit_test(test_backends),
        cmocka_unit_test(test_libraries),
        cmocka_unit_test(test_vllm),
        cmocka_unit_test(test_host_and_deepspeed),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_context),
        cmocka_unit_test(test_wide_equals_narrow),
        cmocka_unit_test(test_window_lists),
        cmocka_unit_test(test_kinds_documented),
        cmocka_unit_test(test_damaged_text),
        cmocka_unit_test(test_event_forms),
        cmocka_unit_test(test_cues_beyond_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
