/*
 * oom.h - the streaming out-of-memory log scanner (bytes in, an incident out; no I/O).
 *
 * ml_oom_scan reads a log of any size as a stream of chunks, in constant memory, and records
 * every out-of-memory event of every family in the field guide (shared reference
 * oom-messages.md, "A1".."A11"): PyTorch caching-allocator messages of every era and backend
 * (CUDA, HIP, NPU incl. the workspace allocator, XPU, MPS, MUSA, ...), cuBLAS/cuDNN failures, raw
 * runtime and driver errors, NCCL, vLLM/SGLang start-up and KV-cache errors, and host OOM
 * (kernel and cgroup OOM killer, SIGKILL exit codes, "Killed", DefaultCPUAllocator). Around the
 * events it collects the context a diagnosis needs: the stack frames that give the phase,
 * [rankN]: prefixes, step counters and tqdm bars, save/eval/load/resume lines, DeepSpeed cache
 * flushes and see_memory_usage lines, vLLM memory-profiling lines, library versions, launcher
 * exit lines and platform hints. ANSI colour codes, CRLF and carriage-return progress bars are
 * handled; a line longer than ML_OOM_LINE_MAX is read whole, in pieces cut at a blank (a message
 * cut between two pieces continues on the next, as a wrapped one does); JSON-formatted lines have
 * their escaped newlines read as lines; a message wrapped by a terminal at a fixed width inside an
 * anchor word is found across the seam.
 *
 * Every struct here is a plain value of bounded size: events beyond ML_OOM_MAX_EVENTS are
 * counted, not stored; identical messages (the same numbers from several ranks, a router
 * repeating a worker's error, "[repeated 6x across cluster]") are merged into one event.
 */
#ifndef ML_OOM_H
#define ML_OOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/status.h"

#define ML_OOM_LINE_MAX     8192 /* bytes of one line that are looked at */
#define ML_OOM_MSG_MAX      2048 /* bytes of one (possibly wrapped) OOM message kept while parsing */
#define ML_OOM_MAX_EVENTS   32   /* events stored (more are counted) */
#define ML_OOM_MAX_PROCS    8    /* "Process N has X memory in use" lines kept per event */
#define ML_OOM_EXCERPT      200  /* bytes of a line kept as evidence */
#define ML_OOM_MAX_VERSIONS 10   /* library versions kept */
#define ML_OOM_CUE_RING     48   /* recent phase cues remembered for the frames before an event */
#define ML_OOM_AFTER_LINES  200  /* lines after an event searched for its traceback */

/*
 * The OOM message kinds, one row each: every per-kind fact derives from this list (the enum
 * below, the names, classes, phases and stories in lib/oom/kinds.c). A row is
 *   X(id, name, class, phase, wraps, serving, story)
 *   id       ML_OOM_<id> of enum ml_oom_kind; the list's order is the enum's, and the text
 *            report lists events of one cause in this order
 *   name     the JSON "kind" (docs/cli/diagnose.md): a contract, never renamed
 *   class    ML_OOM_CLASS_<class>: how directly it states the device's memory (the primary event
 *            of an incident is the first of the lowest class, ml_diagnose_primary)
 *   phase    ML_OPH_<phase> the message itself names (vLLM start-up, NCCL); UNKNOWN: the frames
 *            around it decide
 *   wraps    1: PyTorch's allocator message, whose sentences may wrap onto the following lines;
 *            its formats read it with the allocator grammar (R_NUMBERS), which waits for the rest
 *   serving  1: a serving engine's own error (the incident is a serving one)
 *   story    one line for the text report (translated: xgettext --keyword=X:7)
 *
 * How to add an OOM message format or kind (field guide: reference/oom-messages.md):
 *  1. A new spelling of a known kind is one row of formats[] in lib/oom/grammar.c: the anchor
 *     group of the line, the needles it holds, kind, device, where its text starts and the
 *     reader of its numbers. Rows are tried in order and the first that matches wins, so a
 *     narrower row goes before a wider one. If no anchor of the row's group occurs in every
 *     line the row accepts, add one to anchors[] in lib/oom/scan.c (4 to 31 bytes).
 *  2. Numbers in it: a reader (enum reader and its case in read_numbers, grammar.c) that fills
 *     ml_oom_event fields and sets their ML_OOM_F_ bits. A phrase of the allocator message is
 *     one row of labels[] (grammar.c) instead.
 *  3. A new kind is one row here, plus its name in docs/cli/diagnose.md's list of kinds and
 *     the cause rules that use it in lib/oom/diagnose.c.
 *  4. A test with the message as the field guide prints it (tests/oom/test_oom_scan.c), and a
 *     fixture log with labels when a real one exists (tests/fixtures/oom).
 */
#define ML_OOM_KINDS(X)                                                                                                \
    X(ALLOCATOR, "allocator", ACCOUNTED, UNKNOWN, 1, 0,                                                                \
      "out of memory in PyTorch's caching allocator") /* "<DEV> out of memory. Tried to allocate" [A1-A6] */           \
    X(NPU_WORKSPACE, "npu_workspace", ACCOUNTED, UNKNOWN, 1, 0,                                                        \
      "NPU operator workspace allocation failed") /* "NPUWorkspaceAllocator tried to allocate" [A3] */                 \
    X(MPS, "mps", ACCOUNTED, UNKNOWN, 1, 0, "MPS backend out of memory") /* "MPS backend out of memory" [A5] */        \
    X(IMPOSSIBLE, "impossible_size", DEVICE, UNKNOWN, 0, 0,                                                            \
      "an impossible allocation (more than 1 EB)") /* "Tried to allocate more than 1EB memory" [A1] */                 \
    X(CUBLAS, "cublas", DEVICE, UNKNOWN, 0, 0,                                                                         \
      "cuBLAS could not allocate its handle or workspace") /* CUBLAS_STATUS_ALLOC_FAILED [A7] */                       \
    X(CUDNN, "cudnn", DEVICE, UNKNOWN, 0, 0, "cuDNN/cuSOLVER could not allocate") /* CUDNN_STATUS_* [A7] */            \
    X(RUNTIME, "runtime", DEVICE, UNKNOWN, 0, 0,                                                                       \
      "raw runtime out-of-memory error") /* "CUDA error: out of memory", hipErrorOutOfMemory, CANN [A2-A7] */          \
    X(DRIVER, "driver", DEVICE, UNKNOWN, 0, 0,                                                                         \
      "CUDA driver API out of memory (expandable-segments path)") /* "CUDA driver error" [A7] */                       \
    X(GGML, "ggml_buffer", DEVICE, UNKNOWN, 0, 0,                                                                      \
      "llama.cpp / ggml could not allocate a backend buffer") /* "cudaMalloc failed", "buffer of size N" */            \
    X(HABANA, "habana", DEVICE, UNKNOWN, 0, 0,                                                                         \
      "Habana Gaudi device memory allocation failed") /* "PT_DEVMEM Allocation failed for size::N" */                  \
    X(NCCL, "nccl", DEVICE, COMMUNICATION, 0, 0,                                                                       \
      "NCCL could not allocate device memory") /* "Cuda failure 'out of memory'", "CUDA calloc" [A8] */                \
    X(NCCL_SHM, "nccl_shm", HOST, UNKNOWN, 0, 0,                                                                       \
      "NCCL could not create a /dev/shm segment") /* host shared memory [A8] */                                        \
    X(VLLM_FREE_MEMORY, "vllm_free_memory", ACCOUNTED, SERVING_STARTUP, 0, 1,                                          \
      "vLLM start-up: not enough free memory on the device") /* "Free memory on device (F/T GiB)" [A10] */             \
    X(VLLM_NO_CACHE, "vllm_no_kv_cache", ACCOUNTED, SERVING_STARTUP, 0, 1,                                             \
      "vLLM start-up: no memory left for the KV cache") /* "No available memory for the cache blocks" [A10] */         \
    X(VLLM_KV_TOO_SMALL, "vllm_kv_too_small", ACCOUNTED, SERVING_STARTUP, 0, 1,                                        \
      "vLLM start-up: the KV cache cannot hold one full-length request") /* "max seq len (S)" v0, v1 [A10] */          \
    X(VLLM_WARMUP, "vllm_warmup", ACCOUNTED, SERVING_STARTUP, 0, 1,                                                    \
      "vLLM warm-up out of memory") /* "out of memory occurred when warming up sampler" [A10] */                       \
    X(SGLANG, "sglang", ACCOUNTED, UNKNOWN, 0, 1,                                                                      \
      "SGLang out of memory") /* "Not enough memory", "Prefill out of memory" */                                       \
    X(HOST_KILLER, "host_oom_killer", HOST, UNKNOWN, 0, 0,                                                             \
      "the kernel's OOM killer killed a process (host RAM)") /* kernel / cgroup OOM killer [A11] */                    \
    X(HOST_SIGKILL, "host_sigkill", HOST, UNKNOWN, 0, 0,                                                               \
      "the process was killed by SIGKILL") /* exit -9 / 137, "Killed", OOMKilled [A11] */                              \
    X(HOST_ALLOC, "host_cpu_alloc", HOST, UNKNOWN, 0, 0,                                                               \
      "PyTorch's CPU allocator ran out of host RAM") /* "DefaultCPUAllocator: can't allocate" [A11] */                 \
    X(HOST_RAY, "host_ray", HOST, UNKNOWN, 0, 0,                                                                       \
      "Ray killed the task: node low on memory") /* ray.exceptions.OutOfMemoryError [A11] */                           \
    X(HOST_COMMIT, "host_commit", HOST, UNKNOWN, 0, 0,                                                                 \
      "Windows' commit limit: the paging file is too small") /* WinError 1455, "os error 1455" */

/* The message family. */
enum ml_oom_kind {
#define ML_OOM_KIND_ID(id, name, cls, phase, wraps, serving, story) ML_OOM_##id,
    ML_OOM_KINDS(ML_OOM_KIND_ID)
#undef ML_OOM_KIND_ID
        ML_OOM_KIND_COUNT
};

/* How directly a kind states the device's memory (ml_diagnose_primary takes the lowest). */
enum ml_oom_class {
    ML_OOM_CLASS_ACCOUNTED, /* the allocator or engine accounts for the device's memory */
    ML_OOM_CLASS_DEVICE,    /* a device-side failure without that accounting (runtime, library, NCCL) */
    ML_OOM_CLASS_HOST,      /* host RAM or shared memory */
    ML_OOM_CLASS_COUNT
};

enum ml_oom_device {
    ML_DEV_UNKNOWN,
    ML_DEV_CUDA,
    ML_DEV_HIP,
    ML_DEV_NPU,
    ML_DEV_XPU,
    ML_DEV_MPS,
    ML_DEV_MUSA,
    ML_DEV_OTHER, /* MLU, GCU, DIPU: other out-of-tree backends with the CUDA template [A6] */
    ML_DEV_HOST,  /* CPU RAM */
    ML_DEV_COUNT
};

/* Phase ids of DESIGN.md section 3. */
enum ml_oom_phase {
    ML_OPH_LOAD,
    ML_OPH_FORWARD,
    ML_OPH_LOSS,
    ML_OPH_BACKWARD,
    ML_OPH_OPTIMIZER_STEP,
    ML_OPH_CHECKPOINT_SAVE,
    ML_OPH_AFTER_SAVE,
    ML_OPH_EVAL,
    ML_OPH_GENERATE,
    ML_OPH_SERVING_STARTUP,
    ML_OPH_SERVING_RUNTIME,
    ML_OPH_COMMUNICATION,
    ML_OPH_UNKNOWN,
    ML_OPH_COUNT
};

/* A serving engine's start-up, step by step (vLLM V0/V1, SGLang, TGI, vllm-ascend): the step the
 * engine was in when it failed, from its own log lines and the frames of the traceback. */
enum ml_serve_episode {
    ML_EP_NONE,
    ML_EP_WEIGHTS, /* loading the weights (load_model, "Load weight begin") */
    ML_EP_PROFILE, /* the profile run: a dummy batch of max_num_batched_tokens (profile_run, TGI warmup) */
    ML_EP_SAMPLER, /* the sampler's warm-up: logits of max_num_seqs dummy requests (_dummy_sampler_run) */
    ML_EP_KV_POOL, /* allocating the KV pool from the engine's static share (initialize_kv_cache, init_memory_pool) */
    ML_EP_GRAPH,   /* capturing CUDA / ACL graphs (capture_model, "Capturing cudagraphs") */
    ML_EP_COUNT
};

/* What a failing backend buffer holds (llama.cpp / ggml / Ollama): its role decides the cause. */
enum ml_buffer_role {
    ML_BUF_NONE,
    ML_BUF_WEIGHTS, /* the model's tensors (load_tensors, alloc_tensor_range, "model buffer") */
    ML_BUF_KV,      /* the KV cache (llama_kv_cache_init) */
    ML_BUF_COMPUTE, /* the compute graph (ggml_gallocr_reserve_n, "compute buffers", graph_reserve) */
    ML_BUF_HOST,    /* a CPU buffer (host RAM) */
    ML_BUF_COUNT
};

/* Which numbers an event carries (bits of ml_oom_event.has); a number may legitimately be 0. */
enum ml_oom_field {
    ML_OOM_F_REQUESTED = 1u << 0,        /* "Tried to allocate" (rounded block size), vLLM desired/needed */
    ML_OOM_F_TOTAL = 1u << 1,            /* total capacity (cudaMemGetInfo), MPS max allowed */
    ML_OOM_F_FREE = 1u << 2,             /* free on the device; vLLM v1: available KV memory */
    ML_OOM_F_ALLOCATED = 1u << 3,        /* allocated by PyTorch (live tensors) */
    ML_OOM_F_RESERVED_UNALLOC = 1u << 4, /* reserved by PyTorch but unallocated (new format) */
    ML_OOM_F_RESERVED = 1u << 5,         /* reserved in total by PyTorch / cached (classic format) */
    ML_OOM_F_ACTIVE = 1u << 6,           /* NPU "current active" */
    ML_OOM_F_ALLOWED = 1u << 7,          /* "X allowed" (set_per_process_memory_fraction) */
    ML_OOM_F_PRIVATE_POOL = 1u << 8,     /* allocated in private pools (CUDA Graphs) */
    ML_OOM_F_THIS_PROCESS = 1u << 9,     /* "this process has X memory in use"; kernel anon-rss */
    ML_OOM_F_OTHER = 1u << 10,           /* MPS "other allocations" (non-PyTorch unified memory) */
    ML_OOM_F_MAX_SEQ_LEN = 1u << 11,     /* vLLM max seq len (tokens) */
    ML_OOM_F_KV_TOKENS = 1u << 12,       /* vLLM v0: tokens the KV cache holds */
    ML_OOM_F_EST_MAX_LEN = 1u << 13,     /* vLLM v1: estimated maximum model length */
    ML_OOM_F_UTIL = 1u << 14,            /* vLLM gpu_memory_utilization (permille) */
    ML_OOM_F_EXIT = 1u << 15,            /* exit code / signal (-9, 137) */
    ML_OOM_F_HOST_KILL = 1u << 16        /* the kernel OOM killer's record: host_pid, host_total_vm, ... */
};

/* The allocator configuration variable the message's hint names [A1, A2, A3, A6]. */
enum ml_oom_hint {
    ML_HINT_NONE,
    ML_HINT_MAX_SPLIT,     /* "try setting max_split_size_mb" (torch <= 2.1 era) */
    ML_HINT_CUDA_CONF,     /* PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True */
    ML_HINT_HIP_CONF,      /* PYTORCH_HIP_ALLOC_CONF */
    ML_HINT_ALLOC_CONF,    /* PYTORCH_ALLOC_CONF (newest) */
    ML_HINT_NPU_CONF,      /* PYTORCH_NPU_ALLOC_CONF */
    ML_HINT_MUSA_CONF,     /* PYTORCH_MUSA_ALLOC_CONF */
    ML_HINT_MPS_WATERMARK, /* PYTORCH_MPS_HIGH_WATERMARK_RATIO */
    ML_HINT_EMPTY_CACHE    /* XPU: "Please use `empty_cache`" */
};

/* When the event happened relative to the run's progress (field guide analysis 5). */
enum ml_oom_timing {
    ML_TIM_UNKNOWN,
    ML_TIM_LOAD,       /* while loading (no step yet, load lines seen) */
    ML_TIM_FIRST_STEP, /* at step 0/1 */
    ML_TIM_AFTER_SAVE, /* the first step(s) after a checkpoint save */
    ML_TIM_AT_SAVE,    /* during a save */
    ML_TIM_AT_EVAL,    /* during evaluation */
    ML_TIM_MID_RUN,    /* after N steps with no save/eval next to it (a data-dependent step) */
    ML_TIM_RESUME,     /* right after resuming from a checkpoint */
    ML_TIM_STARTUP,    /* serving engine start-up */
    ML_TIM_COUNT
};

struct ml_oom_proc {
    uint64_t pid;   /* as NVML reports it (host PID inside containers) */
    uint64_t bytes; /* memory in use */
};

/* A line of the log, kept as evidence. */
struct ml_oom_ref {
    uint32_t file;             /* index of the input (0 = first) */
    uint64_t line;             /* 1-based line number in it; 0 = none */
    int64_t step;              /* step number it names, -1 = none */
    char text[ML_OOM_EXCERPT]; /* the line, cleaned of ANSI codes and prefixes, truncated */
};

struct ml_oom_event {
    enum ml_oom_kind kind;
    enum ml_oom_device device;
    uint32_t file;             /* input index */
    uint64_t line;             /* 1-based line of the message's first line */
    int32_t gpu;               /* device ordinal the message names (after CUDA_VISIBLE_DEVICES), -1 */
    int32_t rank;              /* [rankN]: or worker rank of the first occurrence, -1 */
    uint64_t rank_mask;        /* ranks 0..63 that printed this same message */
    uint32_t repeats;          /* occurrences merged into this event (1 = once) */
    uint32_t has;              /* enum ml_oom_field bits */
    uint64_t requested;        /* bytes (rounded block size for the allocator, A1) */
    uint64_t total;            /* bytes */
    uint64_t free;             /* bytes */
    uint64_t allocated;        /* bytes */
    uint64_t reserved_unalloc; /* bytes */
    uint64_t reserved;         /* bytes (classic "reserved in total"/"cached") */
    uint64_t active;           /* bytes */
    uint64_t allowed;          /* bytes */
    uint64_t private_pool;     /* bytes */
    uint64_t this_process;     /* bytes */
    uint64_t other;            /* bytes */
    uint64_t max_seq_len;      /* tokens */
    uint64_t kv_tokens;        /* tokens */
    uint64_t est_max_len;      /* tokens */
    uint32_t util_permille;    /* gpu_memory_utilization x 1000 */
    int32_t exit_code;         /* -9, 137, ... */
    uint32_t n_procs;          /* "Process N has X memory in use" lines kept, in the message's order */
    uint32_t n_procs_seen;     /* all such lines (more than ML_OOM_MAX_PROCS are counted, not kept) */
    struct ml_oom_proc procs[ML_OOM_MAX_PROCS];
    uint64_t host_pid;      /* the kernel OOM killer's record: the killed PID, */
    uint64_t host_total_vm; /*   total-vm, file-rss and shmem-rss in bytes (anon-rss: this_process) */
    uint64_t host_file_rss;
    uint64_t host_shmem_rss;
    enum ml_oom_hint hint;         /* allocator variable the hint names */
    bool classic;                  /* the "(GPU n; T total capacity; ...)" tuple form */
    bool cached_form;              /* its oldest spelling: "X cached)" is the cache beyond allocated (reserved) */
    bool wrapped;                  /* the message spanned several lines */
    bool cut;                      /* the message's last sentence never came (the paste or the log cut it) */
    enum ml_oom_phase phase;       /* from the frames around it (ML_OPH_UNKNOWN if none) */
    struct ml_oom_ref phase_ref;   /* the frame or line that gave the phase (its text) */
    char phase_cue[48];            /* the function or code that gave it ("eager_attention_forward") */
    bool phase_new;                /* ... by a row or reading added for issue 13 (validation's strict LOO) */
    enum ml_serve_episode episode; /* a serving engine's start-up step it failed in (ML_EP_NONE: none) */
    enum ml_buffer_role buffer;    /* the role of a failing ggml buffer (ML_BUF_NONE: none or not told) */
    struct ml_oom_ref episode_ref; /* the frame or log line that gave it */
    enum ml_oom_timing timing;     /* from the progress/save/eval lines before it */
    struct ml_oom_ref timing_ref;  /* the line that gave the timing */
    int64_t step;                  /* last step counter seen before the event, -1 */
    struct ml_oom_ref step_ref;    /* the progress line that gave it */
    bool in_save_frames;           /* save functions in its stack */
    bool in_eval_frames;           /* evaluation functions in its stack */
    bool format_error;             /* raised while formatting an error (c10d_logger, tensor repr) [A1 analysis 4] */
    bool zero3_frames;             /* DeepSpeed ZeRO-3 code in its stack */
    bool eager_frames;             /* eager attention / explicit softmax in its stack */
    bool fp32_frames;              /* an explicit fp32 upcast (.float(), dtype=torch.float32, _convert_to_fp32) */
    bool ckpt_frames;              /* torch.utils.checkpoint (gradient checkpointing) in its stack */
    bool chained;                  /* caught, and another exception raised while handling it (a retry) */
    bool save_open;                /* the last save line before it began a save that no line finished */
    char text[ML_OOM_EXCERPT];     /* the message (first bytes, cleaned) */
};

/* A library version found in the log header or paths. */
struct ml_oom_version {
    char name[24];  /* "torch", "transformers", "deepspeed", "vllm", "nccl", "python", "rocm" */
    char value[32]; /* as written: "2.4.1+rocm6.1" */
    uint32_t file;
    uint64_t line;
};

/* vLLM's engine line: "Initializing a[n] [V1] LLM engine (vX) with config: model='...', ...,
 * dtype=torch.bfloat16, max_seq_len=N, ..., tensor_parallel_size=N, pipeline_parallel_size=N, ...,
 * quantization=X, enforce_eager=B, kv_cache_dtype=X, ..." (vllm/engine/llm_engine.py, V1
 * v1/engine/core.py printing VllmConfig): the settings the engine ran with. The first one read. */
struct ml_oom_engine {
    bool seen;
    uint32_t file;
    uint64_t line;
    char model[96];          /* as written (a hub id or a path) */
    uint64_t max_seq_len;    /* 0 = not read */
    uint32_t tp, pp;         /* 0 = not read */
    char dtype[24];          /* "torch.bfloat16" */
    char quantization[24];   /* "None", "fp8", "awq_marlin", ... */
    char kv_cache_dtype[24]; /* "auto", "fp8_e4m3", ... */
    bool enforce_eager;
};

struct ml_incident {
    struct ml_oom_event ev[ML_OOM_MAX_EVENTS];
    uint32_t n_events;        /* stored */
    uint64_t n_events_seen;   /* all, before merging and capping */
    uint32_t n_files;         /* inputs scanned */
    uint64_t bytes;           /* bytes scanned */
    uint64_t lines;           /* lines scanned (all files) */
    uint64_t truncated_lines; /* lines longer than ML_OOM_LINE_MAX (read whole, in pieces) */
    uint64_t longest_line;    /* bytes of the longest line */
    uint64_t json_lines;      /* JSON-formatted lines whose escaped newlines were read as lines */
    uint64_t cut_messages;    /* OOM messages whose last sentence never came */

    /* DeepSpeed (A9). */
    uint64_t flush_warnings;       /* "N pytorch allocator cache flushes since last step" lines */
    uint64_t flush_max;            /* largest N */
    struct ml_oom_ref flush_ref;   /* the last such line */
    uint32_t mem_samples;          /* see_memory_usage "MA ... Max_MA ..." lines */
    uint64_t ma_first, ma_last;    /* bytes */
    bool ma_rising;                /* every sample >= the one before and last > first */
    struct ml_oom_ref mem_ref;     /* the last MA line */
    uint32_t cpu_percent_permille; /* last "CPU Virtual Memory: ... percent = P%" x 10, 0 = none */
    struct ml_oom_ref cpu_ref;

    /* vLLM (A10). */
    bool has_profile;                                                    /* a "Memory profiling results" line */
    uint64_t prof_total, prof_peak_torch, prof_non_torch, prof_kv_cache; /* bytes */
    uint32_t prof_util_permille;
    uint64_t prof_kv_tokens; /* V1 "GPU KV cache size: N tokens", 0 = not seen */
    struct ml_oom_ref profile_ref;
    uint64_t weights_bytes; /* "Loading model weights took X GB" / "Model loading took X GiB" */
    uint64_t gpu_blocks;    /* "# GPU blocks: N" (+1 so that 0 blocks is recorded: 0 = none) */
    uint64_t preemptions;   /* "preempted ... not enough KV cache space" warnings */

    /* Host signals (A11). */
    uint32_t kernel_oom_lines; /* kernel/cgroup OOM killer lines (also an event) */
    int32_t exit_code;         /* its code, 0 = none seen */

    /* What the log says about the stack and platform. */
    bool saw_vllm, saw_sglang, saw_tgi, saw_deepspeed, saw_zero3, saw_fsdp, saw_lora, saw_rl, saw_dpo;
    bool saw_wsl, saw_windows, saw_jetson;
    bool saw_diffusion;  /* a diffusion pipeline (diffusers, a UNet or VAE) */
    bool saw_train_args; /* the run's training settings printed (TrainingArguments, an argparse Namespace) */
    bool saw_expandable; /* expandable_segments set by the user (outside an OOM hint) */
    bool saw_eager, saw_grad_ckpt;
    bool saw_engine_proc; /* a serving engine's worker prefix "(EngineCore_DP0 pid=N)" */
    bool saw_v0_worker;   /* vLLM V0's multiproc worker prefix "(VllmWorkerProcess pid=N)" */
    bool saw_served;      /* a request served ("Avg prompt throughput", "POST /v1/") */
    uint64_t gen_context; /* ooba's "Output generated in ... context N": tokens, 0 = none */
    struct ml_oom_engine engine;
    uint32_t n_versions;
    struct ml_oom_version versions[ML_OOM_MAX_VERSIONS];
};

/* The log shows TGI and neither vLLM nor SGLang: its fixes are written in TGI's flags, and no
 * ledger prices them. */
static inline bool ml_incident_tgi_only(const struct ml_incident *inc)
{
    return inc->saw_tgi && !inc->saw_vllm && !inc->saw_sglang;
}

/* The scanner's private state (opaque in use; a plain value of fixed size). */
#define ML_OOM_PAD           32    /* bytes after a line that the matcher may read (and ignore) */
#define ML_OOM_SEAM          48    /* bytes of the previous line looked at across a hard wrap */
#define ML_OOM_WRAP_MIN      60    /* the narrowest width taken for a terminal's hard wrap */
#define ML_OOM_WRAP_WIDTHS   452   /* widths counted (60 .. 511 bytes) */
#define ML_OOM_MATCHER_BYTES 42496 /* the anchor matcher's tables (lib/oom/match.h checks the size) */

struct ml_oom_cue {
    uint64_t line;
    uint8_t phase;   /* enum ml_oom_phase */
    uint8_t episode; /* enum ml_serve_episode (frames of a serving engine's start-up) */
    uint8_t level;   /* 3 episode, 2 operation, 1 leaf, 0 flag only */
    uint8_t flags;   /* save/eval/format/zero3/eager/fp32/ckpt bits */
    char name[45];
    char text[128]; /* the line (raw bytes, cleaned when an event takes it) */
};

/* Whether the scanner's current line is a JSON record (a log shipped as JSON lines). */
enum ml_json_line {
    ML_JSON_LINE_NO,      /* plain text */
    ML_JSON_LINE_RECORD,  /* a JSON record whose escaped newlines are not counted yet */
    ML_JSON_LINE_COUNTED, /* a JSON record already counted in inc->json_lines */
};

struct ml_oom_scanner {
    struct ml_incident *inc;                                   /* borrowed; filled as lines arrive */
    uint32_t file;                                             /* current input index */
    uint64_t lineno;                                           /* lines completed in this input */
    char line[ML_OOM_SEAM + ML_OOM_LINE_MAX + 1 + ML_OOM_PAD]; /* the current line from line +
                                       ML_OOM_SEAM (room before it for the seam of a hard wrap;
                                       NUL-terminated when processed), and padding the SIMD pass 1
                                       may read past its end */
    size_t len;                                                /* bytes in line */
    uint32_t pieces;     /* pieces of the current line already read (long lines) */
    uint64_t line_bytes; /* bytes of the current line in those pieces */
    uint8_t json_line;   /* enum ml_json_line: is the current line a JSON record, and were its
                            escaped newlines counted (inc->json_lines) */

    /* The seam of a hard wrap: the end of the previous line, and the widths of the last two. */
    char tail[ML_OOM_SEAM];
    size_t tail_len;
    size_t prev_w, prev_w2, max_w;      /* (max_w: the widest line of this input) */
    uint8_t widths[ML_OOM_WRAP_WIDTHS]; /* lines seen of each width from ML_OOM_WRAP_MIN (saturating) */
    uint64_t prev_m;                    /* the previous line's anchor groups */

    /* An OOM message still being read (it may wrap onto following lines). */
    bool pending;
    uint8_t pend_read;     /* the reader of its numbers (lib/oom/grammar.c) */
    const char *pend_also; /* its row's second needles, still to come (NULL: none) */
    uint32_t pending_lines;
    char pend_prefix[48]; /* its line's "[rankN]:" or "(Name pid=N)" prefix */
    size_t pend_prefix_len;
    struct ml_oom_event pev;
    char msg[ML_OOM_MSG_MAX + 1];
    size_t msg_len;

    /* Frames: recent cues, the last traceback start, the event whose traceback may follow. */
    struct ml_oom_cue ring[ML_OOM_CUE_RING];
    uint32_t ring_n, ring_head;
    uint64_t last_traceback;
    uint64_t last_event_line;
    int32_t after_ev; /* stored event collecting the frames that follow, -1 */
    uint64_t after_until;
    struct ml_oom_cue after_best[4]; /* per level, innermost so far */
    uint16_t after_old[4];           /* per level, the phases cues that predate issue 13 gave */
    uint8_t after_flags;
    struct ml_oom_cue after_ep; /* the frame after it that names a serving start-up step */
    bool prev_frame;            /* the previous line was a "File ..." frame line */
    char prev_code[128];        /* the last line that starts with a blank (maybe code) */
    uint64_t prev_code_line;

    /* Progress and episodes, snapshot into each event. */
    int64_t step; /* last step seen, -1 */
    struct ml_oom_ref step_ref;
    /* step_ref's text while it lies in the input being scanned: copied into step_ref.text when an
     * event takes it or the input is left (ml_oom_scan's end); NULL when step_ref.text holds it */
    const char *step_src;
    size_t step_src_len;
    /* the segment being handled as it lies in the input: seg_line (in line) is a copy of seg_src
     * (NULL when the segment is not the input's bytes) */
    const char *seg_src;
    const char *seg_line;
    size_t seg_len;
    struct ml_oom_ref save_ref, eval_ref, load_ref, resume_ref;
    uint64_t progress_since_save; /* progress lines after the last save */
    bool save_open;               /* the last save line began a save ("Saving model checkpoint to") and no
                                     line has finished it ("Model weights saved in", "is ready now") */
    uint64_t progress_since_eval;
    int32_t sum_rank; /* rank of the last torchrun failure summary, -1 */
    uint8_t episode;  /* enum ml_serve_episode the engine's log lines say is under way */
    struct ml_oom_ref episode_ref;
    uint64_t sum_rank_line;

    /* The anchor matcher: its tables, private to lib/oom (match.h), built by ml_oom_scanner_init. */
    _Alignas(32) unsigned char matcher[ML_OOM_MATCHER_BYTES];
};

/* What a "Process N has X memory in use" line is (ml_oom_attribute_procs). */
enum ml_oom_proc_role {
    ML_PROC_OTHER,     /* another process */
    ML_PROC_OWN,       /* this process itself, under another PID (a container's namespace) */
    ML_PROC_SIBLING,   /* one of N equal small CUDA contexts: other ranks' contexts on this GPU */
    ML_PROC_DUPLICATE, /* the same PID as an earlier line */
    ML_PROC_ROLE_COUNT
};

/* The process lines of an event, attributed (pure; A1 traps, issue 13). */
struct ml_oom_attribution {
    uint8_t role[ML_OOM_MAX_PROCS]; /* enum ml_oom_proc_role of each line of procs[] */
    int32_t own;                    /* the line that is this process, -1 */
    bool proven;                    /* the message has a "this process has X" line (X > 0) */
    uint64_t held;                  /* PyTorch's holdings: allocated + reserved-unallocated */
    uint64_t own_outside;           /* the own line's bytes beyond held (context, NCCL, graphs) */
    uint32_t n_siblings;
    uint64_t sibling_bytes; /* one sibling context's bytes (the largest of them) */
    uint32_t n_others;
    uint64_t others; /* bytes of the other processes */
};

/* Attribute e's process lines: duplicate PIDs are one process; with a "this process" line every
 * other line is another process; without one (containers: NVML lists the caller under its host
 * PID) one line is the caller, the line with the least bytes at or above PyTorch's holdings (else
 * the largest); two or more of the rest under 1 GiB and within 2 % (or 8 MiB) of each other are
 * sibling ranks' CUDA contexts; what remains is another process. */
void ml_oom_attribute_procs(const struct ml_oom_event *e, struct ml_oom_attribution *a);

const char *ml_oom_proc_role_name(enum ml_oom_proc_role r);

/* Relations between an event's numbers that must hold (bits of ml_oom_check_numbers). */
#define ML_OOM_CHECKS(X)                                                                                               \
    X(ALLOC_TOTAL, "allocated > total")                                                                                \
    X(RESERVED_TOTAL, "reserved > total")                                                                              \
    X(UNALLOC_TOTAL, "reserved-but-unallocated > total")                                                               \
    X(THIS_TOTAL, "this process > total")                                                                              \
    X(PROC_TOTAL, "a process line > total")                                                                            \
    X(FREE_TOTAL, "free > total")                                                                                      \
    X(SUM_TOTAL, "free + allocated > total")                                                                           \
    X(ALLOC_RESERVED, "allocated > reserved")                                                                          \
    X(MPS_SUM, "MPS allocated + other > max allowed")

enum ml_oom_check {
#define ML_OOM_CHECK_BIT(id, text) ML_OOM_CHECK_##id##_BIT,
    ML_OOM_CHECKS(ML_OOM_CHECK_BIT)
#undef ML_OOM_CHECK_BIT
        ML_OOM_CHECK_COUNT
};

/* The relations e's numbers break (bit i: check i), with a tolerance for the message's rounding;
 * *masked: the ML_OOM_F_ fields of those relations (the rules see them as absent). On WSL and
 * Windows (shared_memory) the driver may lend host RAM: allocated above total is no error there. */
uint32_t ml_oom_check_numbers(const struct ml_oom_event *e, bool shared_memory, uint32_t *masked);

/* "allocated > total" for check i ("" out of range). */
const char *ml_oom_check_name(unsigned i);

/* Names (static strings, never NULL). */
const char *ml_oom_kind_name(enum ml_oom_kind k);
const char *ml_oom_device_name(enum ml_oom_device d);
const char *ml_oom_phase_name(enum ml_oom_phase p);
const char *ml_oom_timing_name(enum ml_oom_timing t);
const char *ml_oom_episode_name(enum ml_serve_episode e); /* "weights_load", ...; "" for none */

/* The facts of a kind (its row of ML_OOM_KINDS; out-of-range kinds: ML_OOM_CLASS_COUNT,
 * ML_OPH_UNKNOWN, false, ""). The story is translated. */
enum ml_oom_class ml_oom_kind_class(enum ml_oom_kind k);
enum ml_oom_phase ml_oom_kind_phase(enum ml_oom_kind k);
bool ml_oom_kind_wraps(enum ml_oom_kind k);
bool ml_oom_kind_serving(enum ml_oom_kind k);
const char *ml_oom_kind_story(enum ml_oom_kind k);

/* Whether a serving engine refused to size its KV pool, before allocating it: vLLM's check of one
 * max_model_len request, its pool of no blocks, SGLang's "Not enough memory" (not its prefill out
 * of memory at run time). */
bool ml_oom_engine_pool_refused(const struct ml_oom_event *e);

/* Clear an incident. */
void ml_incident_init(struct ml_incident *inc);

/* Set up a scanner that fills inc (which it does not clear). */
void ml_oom_scanner_init(struct ml_oom_scanner *s, struct ml_incident *inc);

/* The scanner cannot fail: every input, however malformed, is a log with or without events. */

/* Start the next input (file index = inc->n_files, then incremented). */
void ml_oom_scan_begin(struct ml_oom_scanner *s);

/* Feed bytes of the current input; any chunking gives the same result. */
void ml_oom_scan(struct ml_oom_scanner *s, const void *data, size_t n);

/* End the current input (a last line without '\n' counts). */
void ml_oom_scan_end(struct ml_oom_scanner *s);

/* The window pass (pass 1 over 8 KiB of a chunk at a time: the newlines, the rare bytes, the
 * anchors) made ahead of the scan, apart from it: on another thread, while the scanner reads the
 * chunk before (src/cmd_diagnose.c). ml_oom_ahead_begin copies the scanner's anchor matcher as it
 * is (the scanner's thread, between chunks); ml_oom_ahead_mark then reads only the struct and the
 * chunk, so another thread may run it; ml_oom_scan_ahead scans the chunk as ml_oom_scan does,
 * taking each window marked there where it starts where the scanner's own would, and marking the
 * others itself. The result is ml_oom_scan's, byte for byte, whatever the copy's age: anchors the
 * scanner stopped looking for since are dropped as it reads the marks. Constant size, no
 * allocation. */
#define ML_OOM_MARKS_BYTES   12304 /* one window's marks (lib/oom/match.h checks the size) */
#define ML_OOM_AHEAD_WINDOWS 40    /* windows marked ahead per chunk; a chunk of 256 KiB takes 32 or more */

struct ml_oom_ahead {
    _Alignas(32) unsigned char matcher[ML_OOM_MATCHER_BYTES]; /* the scanner's, when copied */
    bool copied;                                              /* matcher holds a copy */
    uint32_t n;                                               /* windows marked */
    uint32_t start[ML_OOM_AHEAD_WINDOWS];                     /* where each starts in the chunk */
    _Alignas(8) unsigned char marks[ML_OOM_AHEAD_WINDOWS][ML_OOM_MARKS_BYTES];
};

/* Copy the scanner's matcher into a (only when the scanner has stopped looking for more anchors
 * since the last copy: the matcher is 41.5 KiB). */
void ml_oom_ahead_begin(const struct ml_oom_scanner *s, struct ml_oom_ahead *a);

/* Mark the windows the scanner will read in p[0..n), the chunk it is given next (line_start: a
 * line starts at p[0], as it does after a chunk that ends with a newline and at an input's
 * start). Reads p and a, writes a; nothing where the CPU has no SIMD pass 1. */
void ml_oom_ahead_mark(struct ml_oom_ahead *a, const char *p, size_t n, bool line_start);

/* ml_oom_scan with the windows of a (marked for these bytes by ml_oom_ahead_mark; NULL: none). */
void ml_oom_scan_ahead(struct ml_oom_scanner *s, const void *data, size_t n, struct ml_oom_ahead *a);

/* One input streamed through the scanner in chunk[n] (constant memory for any size): read(h, ...)
 * (the caller's I/O: bytes read, 0 at the end, < 0 on an error described in d) until its end or
 * an error, between ml_oom_scan_begin and ml_oom_scan_end. ML_OK, or the read's error. */
enum ml_status ml_oom_scan_input(struct ml_oom_scanner *s, long (*read)(int h, char *buf, size_t n, struct ml_diag *d),
                                 int h, char *chunk, size_t n, struct ml_diag *d);

/* One-call convenience: scan a whole buffer as one input. */
void ml_oom_scan_buffer(struct ml_oom_scanner *s, const void *data, size_t n);

/* The anchor groups (a bit set; what each bit means is the scanner's own) that pass 1 finds in
 * text[0..n), n <= ML_OOM_LINE_MAX: what decides which handlers look at a line. It borrows the
 * scanner's line buffer, so call it between inputs only. For tests and benchmarks: with
 * ml_oom_scanner_simd on and off it compares the SIMD pass 1 with the scalar one. */
uint64_t ml_oom_anchor_groups(struct ml_oom_scanner *s, const char *text, size_t n);

/* Use the SIMD pass 1 (on, where the CPU has AVX2; ml_oom_scanner_init's choice) or the scalar
 * one (off); returns whether the SIMD one is now used. Both give the same results. */
bool ml_oom_scanner_simd(struct ml_oom_scanner *s, bool on);

/* Bytes to ml_oom_event fields: parse "14.81 GiB", "0 bytes", "571.62 MiB", "15.98GiB".
 * Units are binary whatever their spelling (PyTorch, DeepSpeed and vLLM print GB for 2^30);
 * decimals round half up. Returns the characters consumed, 0 if p does not start a size. */
size_t ml_oom_parse_size(const char *p, uint64_t *out);

#endif /* ML_OOM_H */
