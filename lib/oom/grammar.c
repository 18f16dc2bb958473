/*
 * grammar.c - the OOM message grammar of the scanner (scanner.h): which line is which message.
 *
 * Each message format is one row of formats[] (device and engine messages) or host_formats[]
 * (kill records, exit codes): the anchor group the line holds, its needles, the kind and device
 * of the event, where its text starts and the reader of its numbers. The rows are tried in order
 * and the first that matches makes the event. PyTorch's allocator message (the kinds that wrap,
 * ML_OOM_KINDS) may continue on the following lines; its numbers are read by its phrases
 * (alloc_message.c).
 *
 * The formats and what each number means are the shared field guide's
 * (reference/oom-messages.md, sections A1-A11).
 */
#include <stdio.h>

#include "scanner.h"

/* Needles are "\0"-separated alternatives in one array: "a" OR "b". */
#define OR    "\0"
#define TRIED "Tried to allocate" OR "tried to allocate"

/* The event's device: an enum ml_oom_device, or one of these read from the line. */
enum {
    DEV_WORD = ML_DEV_COUNT, /* the word before "out of memory" ("CUDA", "HIP", "backend" = MPS, ...) */
    DEV_MPS_OR_WORD,         /* MPS when the line says "MPS backend", else DEV_WORD */
    DEV_HIP_OR_CUDA          /* HIP when the line says "HIP", else CUDA (library status names) */
};

/* Where the event's text (and an allocator message) starts. */
enum { AT_LINE, AT_OOM /* the exception before "out of memory" */, AT_HIT /* the exception before the needle */ };

/* What reads the numbers (read_numbers). */
enum reader {
    R_NONE,
    R_NUMBERS,      /* the allocator message by its phrases (labels[]); a kind that wraps waits for the rest */
    R_TRIED,        /* the same, for a bare "Tried to allocate": an event only if it states the capacity */
    R_CPU_ALLOC,    /* "tried to allocate N bytes" after "CPUAllocator" */
    R_NCCL_CALLOC,  /* "Failed to CUDA calloc N bytes": the size of the NCCL failure just above, or an event */
    R_NCCL_FAILURE, /* "Cuda failure 'out of memory'": an event, or the companion of a calloc line just above */
    R_VLLM_FREE,    /* "Free memory on device (F/T GiB) ... utilization (U, D GiB)" */
    R_VLLM_KV,      /* "max seq len (S) ... KV cache (T)", v1's "(X GiB KV cache is needed ...)" */
    R_NPU_CODE,     /* a CANN code: an event only when no NPU allocator message is next to it */
    R_HOST_LINE,    /* a kill record on an "out of memory" line: the host rows read it */
    R_KERNEL_KILL,  /* the kernel's OOM killer record (anon-rss), one event per input */
    R_EXIT_CODE,    /* "exitcode: -9", "exit code 137": an event when it is a SIGKILL's */
    R_SIGKILL_137,  /* OOMKilled */
    R_SIGKILL_9,    /* "Signal 9", SIGKILL */
    R_SHELL_KILLED, /* a shell's "Killed" job line */
    R_GGML,         /* a ggml buffer: "allocating X MiB on device D", "buffer of size N", the buffer's role */
    R_HABANA        /* "PT_DEVMEM Allocation failed for size::N (X)MB" */
};

struct format {
    uint8_t group;  /* enum grp: the anchor group the line holds */
    char any[104];  /* the line holds one of these (OR); the first found is the hit */
    char also[48];  /* ... and one of these too ("": no second test) */
    uint8_t kind;   /* enum ml_oom_kind */
    uint8_t device; /* enum ml_oom_device or DEV_* */
    uint8_t text;   /* AT_* */
    uint8_t read;   /* enum reader */
};

/* Device and engine messages (A1-A10). */
static const struct format formats[] = {
    {G_HOSTALLOC, "CPUAllocator", "can't allocate" OR "tried to allocate", ML_OOM_HOST_ALLOC, ML_DEV_HOST, AT_LINE,
     R_CPU_ALLOC},
    /* Windows' ERROR_COMMITMENT_LIMIT family: "OSError: [WinError 1455] The paging file is too small
     * for this operation to complete" (Python's winerror), Rust's "(os error 1455)" (safetensors),
     * in any language of the message */
    {G_HOSTALLOC, "WinError 1455" OR "os error 1455", "", ML_OOM_HOST_COMMIT, ML_DEV_HOST, AT_LINE, R_NONE},
    /* a kernel or cgroup kill record quoting "out of memory" */
    {G_OOM, "Killed process" OR "Memory cgroup out of memory", "", ML_OOM_HOST_KILLER, ML_DEV_HOST, AT_LINE,
     R_HOST_LINE},
    /* the allocator family: "Tried to allocate" */
    {G_OOM, "NPUWorkspaceAllocator", TRIED, ML_OOM_NPU_WORKSPACE, ML_DEV_NPU, AT_OOM, R_NUMBERS},
    {G_OOM, "more than 1EB", TRIED, ML_OOM_IMPOSSIBLE, DEV_WORD, AT_OOM, R_NUMBERS},
    {G_OOM, "when warming up", TRIED, ML_OOM_VLLM_WARMUP, DEV_MPS_OR_WORD, AT_OOM, R_NONE},
    {G_OOM, "MPS backend", TRIED, ML_OOM_MPS, ML_DEV_MPS, AT_OOM, R_NUMBERS},
    {G_OOM, TRIED, "", ML_OOM_ALLOCATOR, DEV_WORD, AT_OOM, R_NUMBERS},
    /* "out of memory" without a request */
    {G_OOM, "MPS backend out of memory", "", ML_OOM_MPS, ML_DEV_MPS, AT_OOM, R_NUMBERS},
    {G_OOM, "when warming up", "", ML_OOM_VLLM_WARMUP, DEV_WORD, AT_OOM, R_NONE},
    {G_OOM, "driver error: out of memory", "", ML_OOM_DRIVER, ML_DEV_CUDA, AT_OOM, R_NONE},
    {G_OOM, "NCCL" OR "Cuda failure" OR "nccl", "", ML_OOM_NCCL, ML_DEV_CUDA, AT_LINE, R_NCCL_FAILURE},
    {G_OOM, "Prefill out of memory" OR "Decode out of memory", "", ML_OOM_SGLANG, ML_DEV_UNKNOWN, AT_OOM, R_NONE},
    /* raw runtime errors (A2, A7): THC's "cuda runtime error (2) : out of memory", triton */
    {G_OOM, "CUDA error: out of memory" OR "cuda runtime error (2)" OR "error=2 : out of memory", "", ML_OOM_RUNTIME,
     ML_DEV_CUDA, AT_OOM, R_NONE},
    {G_OOM, "HIP error: out of memory" OR "hip error: out of memory", "", ML_OOM_RUNTIME, ML_DEV_HIP, AT_OOM, R_NONE},
    {G_OOM, "triton runtime error: out of memory", "", ML_OOM_RUNTIME, ML_DEV_CUDA, AT_OOM, R_NONE},
    /* a bare exception line: an allocator message whose "Tried to allocate" is on the next line */
    {G_OOM,
     "Error: CUDA out of memory" OR "Error: HIP out of memory" OR "Error: NPU out of memory" OR
     "Error: XPU out of memory",
     "", ML_OOM_ALLOCATOR, DEV_WORD, AT_OOM, R_NUMBERS},
    /* the exception class before "Tried to allocate" without "out of memory": a framework that
     * re-raises the allocator's error with a message of its own ("torch.OutOfMemoryError: Tried to
     * allocate X. GPU had F free of T"), a figure's unit possibly missing */
    {G_OOMCLS, "OutOfMemoryError: ", TRIED, ML_OOM_ALLOCATOR, DEV_HIP_OR_CUDA, AT_HIT, R_NUMBERS},
    /* a bare "Tried to allocate X (GPU n; T total capacity; ...)": the poster trimmed the exception */
    {G_TRIED, TRIED, "", ML_OOM_ALLOCATOR, DEV_WORD, AT_HIT, R_TRIED},
    /* class and status names */
    {G_OOMCLS, "hipErrorOutOfMemory", "", ML_OOM_RUNTIME, ML_DEV_HIP, AT_LINE, R_NONE},
    {G_OOMCLS, "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "", ML_OOM_RUNTIME, ML_DEV_XPU, AT_LINE, R_NONE},
    {G_OOMCLS, "ray.exceptions.OutOfMemoryError" OR "node running low on memory", "", ML_OOM_HOST_RAY, ML_DEV_HOST,
     AT_LINE, R_NONE},
    {G_LIB, "CUBLAS_STATUS_ALLOC_FAILED", "", ML_OOM_CUBLAS, DEV_HIP_OR_CUDA, AT_LINE, R_NONE},
    {G_LIB, "CUBLAS_STATUS_NOT_INITIALIZED", "cublasCreate", ML_OOM_CUBLAS, DEV_HIP_OR_CUDA, AT_LINE, R_NONE},
    {G_LIB, "CUDNN_STATUS_ALLOC_FAILED" OR "CUDNN_STATUS_NOT_INITIALIZED" OR "CUSOLVER_STATUS_INTERNAL_ERROR", "",
     ML_OOM_CUDNN, DEV_HIP_OR_CUDA, AT_LINE, R_NONE},
    {G_LIB, "HIPBLAS_STATUS_ALLOC_FAILED" OR "rocblas_status_memory_error", "", ML_OOM_CUBLAS, DEV_HIP_OR_CUDA, AT_LINE,
     R_NONE},
    /* NCCL (A8) */
    {G_NCCL, "CUDA calloc", "", ML_OOM_NCCL, ML_DEV_CUDA, AT_LINE, R_NCCL_CALLOC}, /* "calloc( async)? N bytes" */
    {G_NCCL, "shared memory segment", "NCCL" OR "/dev/shm", ML_OOM_NCCL_SHM, ML_DEV_HOST, AT_LINE, R_NONE},
    /* vLLM and SGLang start-up (A10) */
    {G_VLLMERR, "Free memory on device", "", ML_OOM_VLLM_FREE_MEMORY, ML_DEV_CUDA, AT_HIT, R_VLLM_FREE},
    {G_VLLMERR, "max seq len (", "", ML_OOM_VLLM_KV_TOO_SMALL, ML_DEV_UNKNOWN, AT_HIT, R_VLLM_KV},
    {G_VLLMERR, "No available", "No available memory for the cache blocks", ML_OOM_VLLM_NO_CACHE, ML_DEV_UNKNOWN,
     AT_HIT, R_NONE},
    {G_VLLMERR, "Not enough memory", "mem-fraction" OR "mem_fraction", ML_OOM_SGLANG, ML_DEV_UNKNOWN, AT_HIT, R_NONE},
    /* llama.cpp / ggml / Ollama buffers (ggml-cuda.cu ggml_backend_cuda_buffer_type_alloc_buffer,
     * ggml-alloc.c alloc_tensor_range and ggml_gallocr_reserve_n, llama.cpp's loader and context):
     * one failure prints two or three of these lines, read as one event */
    {G_GGML, "Malloc failed" OR "buffer of size" OR "to allocate compute buffers" OR "buffer for kv cache", "",
     ML_OOM_GGML, ML_DEV_CUDA, AT_LINE, R_GGML},
    {G_GGML, "unable to allocate", "buffer", ML_OOM_GGML, ML_DEV_CUDA, AT_LINE, R_GGML},
    /* Habana Gaudi (habana_frameworks' PT_DEVMEM allocator) */
    {G_GGML, "PT_DEVMEM", "failed", ML_OOM_HABANA, ML_DEV_OTHER, AT_LINE, R_HABANA},
    /* CANN codes (A3) */
    {G_NPUCODE, "EL0004" OR "ERR00006", "", ML_OOM_RUNTIME, ML_DEV_NPU, AT_LINE, R_NPU_CODE},
    {G_NPUCODE, "207001", "alloc", ML_OOM_RUNTIME, ML_DEV_NPU, AT_LINE, R_NPU_CODE},
};

/* Host kill records and exit codes (A11). */
static const struct format host_formats[] = {
    {G_KILL, "invoked oom-killer" OR "oom-kill:" OR "oom_reaper: reaped" OR "Killed process", "", ML_OOM_HOST_KILLER,
     ML_DEV_HOST, AT_LINE, R_KERNEL_KILL},
    {G_KILL, "OOMKilled", "", ML_OOM_HOST_SIGKILL, ML_DEV_HOST, AT_LINE, R_SIGKILL_137},
    /* job schedulers: Slurm's "Detected 1 oom_kill event in StepId=...", srun's "task 0: Out Of Memory" */
    {G_KILL, "oom_kill event" OR "oom-kill event", "", ML_OOM_HOST_KILLER, ML_DEV_HOST, AT_LINE, R_NONE},
    {G_KILL, "Out Of Memory", "task", ML_OOM_HOST_KILLER, ML_DEV_HOST, AT_LINE, R_NONE},
    /* "exitcode  : -9", "return code = -9", "exit code 137", "exit status 137", "exited with code 137" */
    {G_KILL,
     "exitcode" OR "exit code" OR "return code" OR "exit status" OR "exited with code" OR "exited with exit code", "",
     ML_OOM_HOST_SIGKILL, ML_DEV_HOST, AT_LINE, R_EXIT_CODE},
    {G_KILL, "Signal 9" OR "SIGKILL", "", ML_OOM_HOST_SIGKILL, ML_DEV_HOST, AT_LINE, R_SIGKILL_9},
    /* shell job messages: "Killed", "line 3: 1234 Killed   python train.py"; bash's zh_CN
     * translation of "Killed" (bash po/zh_CN.po, UTF-8): "行 12: 12345 已杀死  python train.py" */
    {G_KILL, "Killed" OR "\xe5\xb7\xb2\xe6\x9d\x80\xe6\xad\xbb", "", ML_OOM_HOST_SIGKILL, ML_DEV_HOST, AT_LINE,
     R_SHELL_KILLED},
};

/* ---- events ------------------------------------------------------------------------------ */

static void ev_init(struct ml_oom_scanner *s, struct ml_oom_event *e, enum ml_oom_kind k, enum ml_oom_device d,
                    int32_t rank, const char *text)
{
    memset(e, 0, sizeof(*e));
    e->kind = k;
    e->device = d;
    e->file = s->file;
    e->line = s->lineno;
    e->gpu = -1;
    e->rank = rank;
    if (rank >= 0 && rank < 64)
        e->rank_mask = (uint64_t)1 << rank;
    e->repeats = 1;
    e->phase = ML_OPH_UNKNOWN;
    e->step = -1;
    e->timing = ML_TIM_UNKNOWN;
    ml_oom_excerpt(e->text, sizeof(e->text), text, strlen(text));
}

/* The first of the OR-separated needles alts[0..cap) that occurs in l, NULL if none. */
static const char *first_of(const char *l, const char *alts, size_t cap)
{
    for (const char *a = alts; a < alts + cap && *a;) {
        size_t n = strnlen(a, (size_t)(alts + cap - a));
        const char *p = find(l, a);
        if (p)
            return p;
        a += n + 1;
    }
    return NULL;
}

static const char *first_oom(const char *l);
static bool store(struct ml_oom_scanner *s, struct ml_oom_event *e, enum reader r);
static bool reader_complete(enum reader r, const char *msg);
static void read_gathered(struct ml_oom_event *e, enum reader r, const char *msg);
static const char *message_start(const char *line, const char *hit);

/* Does body (a line without its [rankN]: or process prefix) start a new record of the log, so
 * that it cannot continue the pending message? One row each: a traceback, a frame, a chained
 * exception, a log record (level word, timestamp, "[W ...]"), a process prefix, a blank line. */
static bool starts_record(const char *body)
{
    static const char heads[][24] = {
        "Traceback", "File \"", "During handling", "The above exception",
        ">> ",       "INFO",    "WARNING",         "WARN ",
        "ERROR",     "DEBUG",   "CRITICAL",        "[INFO",
        "[WARN",     "[ERROR",  "[DEBUG",          "[W ",
        "[E ",       "[I ",     "Error executing",
    };
    const char *b = skip_blank(body);
    if (!*b)
        return true;
    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++)
        if (starts(b, heads[i]))
            return true;
    const char *d = *b == '[' ? b + 1 : b;
    /* "2026-03-14 08:16:21", "[2026-03-14T08:16", "12-01 10:00:00" (vLLM), "[W1201 10:00:00" (glog) */
    if (is_digit(d[0]) && is_digit(d[1]) && is_digit(d[2]) && is_digit(d[3]) && d[4] == '-' && is_digit(d[5]))
        return true;
    if (is_digit(d[0]) && is_digit(d[1]) && d[2] == '-' && is_digit(d[3]) && is_digit(d[4]) && d[5] == ' ' &&
        is_digit(d[6]) && is_digit(d[7]) && d[8] == ':')
        return true;
    if (*b == '[' && (b[1] == 'W' || b[1] == 'E' || b[1] == 'I') && is_digit(b[2]) && is_digit(b[3]))
        return true;
    /* the kernel's "[856341.770960] ..." */
    const char *k = b[0] == '`' ? b + 1 : b;
    if (k[0] == '[' && is_digit(k[1])) {
        k++;
        while (is_digit(*k) || *k == ' ')
            k++;
        if (*k == '.')
            return true;
    }
    /* "(EngineCore_DP0 pid=123)", "(RayWorkerWrapper pid=7, ip=...)" */
    if (*b == '(') {
        const char *p = find(b, " pid=");
        if (p && p - b < 48)
            return true;
    }
    return false;
}

void ml_oom_close_message(struct ml_oom_scanner *s)
{
    if (!s->pending)
        return;
    s->pending = false;
    s->pev.wrapped = s->pending_lines > 0;
    if (s->pend_also && !first_of(s->msg, s->pend_also, 48))
        return;                                          /* its second needle never came: not this row's message */
    s->pev.cut = !reader_complete(s->pend_read, s->msg); /* its last sentence never came: the paste or the log cut it */
    ml_oom_excerpt(s->pev.text, sizeof(s->pev.text), s->msg, s->msg_len);
    if (store(s, &s->pev, (enum reader)s->pend_read) && s->pev.cut)
        s->inc->cut_messages++;
}

/* Where in a continuation line the pending message must end at the latest: a traceback, a frame,
 * a chained exception or another message glued to it (a one-line paste). */
static const char *message_cut(const char *b, uint64_t m)
{
    const char *cut = NULL;
    if (m & (GB(G_OOM) | GB(G_OOMCLS) | GB(G_TRACE) | GB(G_FRAME))) {
        static const char keys[][24] = {"Traceback (most recent", "File \"", "During handling", "The above exception"};
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
            const char *p = find(b, keys[i]);
            if (p && (!cut || p < cut))
                cut = p;
        }
        const char *o = first_oom(b);
        if (o) {
            o = message_start(b, o);
            if (!cut || o < cut)
                cut = o;
        }
    }
    return cut;
}

size_t ml_oom_continue_message(struct ml_oom_scanner *s, const char *body, uint64_t m)
{
    const char *b = skip_blank(body);
    const char *cut = message_cut(b, m);
    if (s->pending_lines >= 24 || cut == b || starts_record(body)) {
        ml_oom_close_message(s);
        return 0;
    }
    size_t bl = cut ? (size_t)(cut - b) : strlen(b);
    size_t took = (size_t)(b - body) + bl;
    bool sentence = s->msg_len && (s->msg[s->msg_len - 1] == '.' || s->msg[s->msg_len - 1] == ')');
    if (s->msg_len + 1 + bl > ML_OOM_MSG_MAX)
        bl = s->msg_len + 1 < ML_OOM_MSG_MAX ? ML_OOM_MSG_MAX - s->msg_len - 1 : 0;
    if (sentence && bl)
        s->msg[s->msg_len++] = ' ';
    memcpy(s->msg + s->msg_len, b, bl);
    s->msg_len += bl;
    s->msg[s->msg_len] = '\0';
    s->pending_lines++;
    read_gathered(&s->pev, s->pend_read, s->msg);
    if (cut || reader_complete(s->pend_read, s->msg))
        ml_oom_close_message(s);
    return took;
}

/* Start of the exception text on a line ("torch.OutOfMemoryError: HIP out of ..."): back up
 * from the "out of memory" to the start of the word run that names the exception. */
static const char *message_start(const char *line, const char *hit)
{
    const char *p = hit;
    /* Back over "<DEV> " and "ClassName: ". */
    int words = 0;
    while (p > line && words < 3) {
        const char *q = p;
        while (q > line && q[-1] == ' ')
            q--;
        const char *w = q;
        while (w > line && (is_word(w[-1]) || w[-1] == '.' || w[-1] == ':'))
            w--;
        if (w == q)
            break;
        p = w;
        words++;
        if (q > line && q[-1] == ':' && words >= 2)
            break;
    }
    return p;
}

/* Start of the exception text around p: the class name before the nearest "Error: " (or
 * "Exception: ") on the line, else the line itself. */
static const char *exc_start(const char *line, const char *p)
{
    static const char keys[][12] = {"Error: ", "Exception: ", "error: "};
    const char *best = NULL;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        for (const char *q = find(line, keys[i]); q && q < p; q = find(q + 1, keys[i]))
            if (!best || q > best)
                best = q;
    }
    if (!best)
        return skip_blank(line);
    const char *b = best;
    while (b > line && (is_word(b[-1]) || b[-1] == '.'))
        b--;
    return b;
}

/* ---- readers ----------------------------------------------------------------------------- */

/* What a reader says of the row it read. */
enum took {
    TOOK_EVENT, /* the event stands: store it */
    TOOK_NONE,  /* this row's line, but no event (stored or dropped by the reader) */
    TOOK_NEXT   /* not this row's line after all: try the next rows */
};

/* The line a row is tried on. */
struct hit {
    const char *l;    /* the cleaned line */
    const char *oom;  /* its first "out of memory" (any case), else l */
    const char *at;   /* the row's needle in it */
    const char *from; /* where the event's text starts */
    uint64_t m;       /* its anchor groups */
    int32_t rank;
};

static bool read_rows(struct ml_oom_scanner *s, const struct format *rows, size_t n, const struct hit *h0);

/* The readers of the formats other than the allocator's read the message squeezed (sq: without
 * blanks, lo: the same in lower case, ml_oom_squeeze), so that a wrap between a number and its
 * unit, or inside a number, reads the same. */
struct squeezed {
    char sq[ML_OOM_MSG_MAX + 1], lo[ML_OOM_MSG_MAX + 1];
};

static void set_u64(struct ml_oom_event *e, uint32_t bit, uint64_t *field, uint64_t v)
{
    if (e->has & bit)
        return;
    *field = v;
    e->has |= bit;
}

/* The position in sq just after key in lo (-1 when absent). */
static ptrdiff_t after(const struct squeezed *q, const char *key)
{
    const char *p = find(q->lo, key);
    return p ? (p - q->lo) + (ptrdiff_t)strlen(key) : -1;
}

/* vLLM: "Free memory on device (F/T GiB) on startup is less than desired GPU memory utilization
 * (U, D GiB)" (vllm/v1/worker/gpu_worker.py, A10). */
static void read_vllm_free(struct ml_oom_event *e, const struct squeezed *q)
{
    ptrdiff_t d = after(q, "freememoryondevice");
    const char *open = d >= 0 ? strchr(q->sq + d, '(') : NULL;
    uint64_t fr = 0, tot = 0, want;
    if (open) {
        /* "(F/T GiB)": the unit after T applies to both. */
        const char *num = open + 1, *slash = strchr(num, '/');
        if (slash && slash - num < 24 && ml_oom_parse_size_loose(slash + 1, &tot)) {
            const char *u = slash + 1;
            while (is_digit(*u) || *u == '.')
                u++;
            char tmp[64];
            int k = snprintf(tmp, sizeof(tmp), "%.*s%.*s", (int)(slash - num), num, 8, u);
            if (k > 0 && ml_oom_parse_size_loose(tmp, &fr)) {
                set_u64(e, ML_OOM_F_FREE, &e->free, fr);
                set_u64(e, ML_OOM_F_TOTAL, &e->total, tot);
            }
        }
    }
    ptrdiff_t u = after(q, "utilization(");
    uint32_t pm;
    size_t k = u >= 0 ? ml_oom_parse_permille(q->sq + u, &pm) : 0;
    if (k) {
        if (!(e->has & ML_OOM_F_UTIL))
            e->util_permille = pm;
        e->has |= ML_OOM_F_UTIL;
        if (q->sq[u + (ptrdiff_t)k] == ',' && ml_oom_parse_size_loose(q->sq + u + (ptrdiff_t)k + 1, &want))
            set_u64(e, ML_OOM_F_REQUESTED, &e->requested, want);
    }
    if (d >= 0 && starts(q->lo + d, "xpu"))
        e->device = ML_DEV_XPU;
    else if (d >= 0 && starts(q->lo + d, "npu"))
        e->device = ML_DEV_NPU;
}

/* vLLM: v0 "The model's max seq len (S) is larger than the maximum number of tokens that can be
 * stored in KV cache (T)"; v1 "... max seq len (S), (X GiB KV cache is needed, which is larger
 * than the available KV cache memory (Y GiB). ... the estimated maximum model length is L" (A10). */
static void read_vllm_kv(struct ml_oom_event *e, const struct squeezed *q)
{
    uint64_t v;
    ptrdiff_t p = after(q, "maxseqlen(");
    if (p >= 0 && ml_oom_parse_u64(q->sq + p, &v))
        set_u64(e, ML_OOM_F_MAX_SEQ_LEN, &e->max_seq_len, v);
    p = after(q, "storedinkvcache(");
    if (p >= 0 && ml_oom_parse_u64(q->sq + p, &v))
        set_u64(e, ML_OOM_F_KV_TOKENS, &e->kv_tokens, v);
    const char *n = find(q->lo, "kvcacheisneeded");
    if (n) {
        const char *b = n;
        while (b > q->lo && b[-1] != '(')
            b--;
        if (ml_oom_parse_size_loose(q->sq + (b - q->lo), &v))
            set_u64(e, ML_OOM_F_REQUESTED, &e->requested, v);
    }
    p = after(q, "kvcachememory(");
    if (p >= 0 && ml_oom_parse_size_loose(q->sq + p, &v))
        set_u64(e, ML_OOM_F_FREE, &e->free, v);
    p = after(q, "maximummodellengthis");
    if (p >= 0 && ml_oom_parse_u64(q->sq + p, &v))
        set_u64(e, ML_OOM_F_EST_MAX_LEN, &e->est_max_len, v);
}

/* The kernel's OOM killer: "Killed process 410126 (python) total-vm:79905000kB, anon-rss:...kB,
 * file-rss:...kB, shmem-rss:...kB" (A11); anon-rss is this process's, the rest host_*. */
static void read_kill(struct ml_oom_event *e, const struct squeezed *q)
{
    static const struct {
        char key[16];
        uint32_t bit;
        size_t off;
    } fields[] = {
        {"anon-rss:", ML_OOM_F_THIS_PROCESS, offsetof(struct ml_oom_event, this_process)},
        {"total-vm:", ML_OOM_F_HOST_KILL, offsetof(struct ml_oom_event, host_total_vm)},
        {"file-rss:", ML_OOM_F_HOST_KILL, offsetof(struct ml_oom_event, host_file_rss)},
        {"shmem-rss:", ML_OOM_F_HOST_KILL, offsetof(struct ml_oom_event, host_shmem_rss)},
    };
    uint64_t kb;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        ptrdiff_t p = after(q, fields[i].key);
        if (p >= 0 && ml_oom_parse_u64(q->sq + p, &kb) && kb < ((uint64_t)1 << 50)) {
            uint64_t b = kb * 1024;
            memcpy((char *)e + fields[i].off, &b, sizeof(b));
            e->has |= fields[i].bit;
        }
    }
    ptrdiff_t p = after(q, "killedprocess");
    if (p >= 0 && ml_oom_parse_u64(q->sq + p, &kb)) {
        e->host_pid = kb;
        e->has |= ML_OOM_F_HOST_KILL;
    }
}

/* Has the kill record ended (its last field, shmem-rss, read)? A kernel line without it is whole. */
static bool kill_complete(const struct squeezed *q)
{
    if (!find(q->lo, "killedprocess"))
        return true;
    ptrdiff_t p = after(q, "shmem-rss:");
    if (p < 0)
        return false;
    while (is_digit(q->lo[p]))
        p++;
    return starts(q->lo + p, "kb");
}

/* The request of "DefaultCPUAllocator: ... tried to allocate N bytes" and of NCCL's "Failed to
 * CUDA calloc( async)? N bytes" (A8, A11). */
static void read_request_after(struct ml_oom_event *e, const struct squeezed *q, const char *key)
{
    ptrdiff_t p = after(q, key);
    uint64_t v;
    if (p >= 0 && starts(q->lo + p, "async"))
        p += 5;
    if (p >= 0 && ml_oom_parse_size_loose(q->sq + p, &v))
        set_u64(e, ML_OOM_F_REQUESTED, &e->requested, v);
}

/* Where each reader's message ends (squeezed, lower case; "\0"-separated alternatives): it is
 * gathered over the following lines until one of them comes (R_NUMBERS: message_complete). */
static const char *const reader_ends[] = {
    [R_CPU_ALLOC] = "bytes" OR "",
    [R_NCCL_CALLOC] = "bytes" OR "",
    [R_VLLM_FREE] = "gib)." OR "mib)." OR "gb)." OR "decreasegpu" OR "",
    [R_VLLM_KV] = "tryincreasing" OR "initializingtheengine" OR "",
};

/* Read the numbers of reader r from the (gathered) message msg. */
static void read_gathered(struct ml_oom_event *e, enum reader r, const char *msg)
{
    if (r == R_NUMBERS || r == R_TRIED) {
        ml_oom_alloc_numbers(e, msg);
        return;
    }
    /* The message is read whole each time it grows: what a cut number gave before is read again. */
    static const uint32_t owned[] = {
        [R_CPU_ALLOC] = ML_OOM_F_REQUESTED,
        [R_NCCL_CALLOC] = ML_OOM_F_REQUESTED,
        [R_VLLM_FREE] = ML_OOM_F_FREE | ML_OOM_F_TOTAL | ML_OOM_F_UTIL | ML_OOM_F_REQUESTED,
        [R_VLLM_KV] =
            ML_OOM_F_MAX_SEQ_LEN | ML_OOM_F_KV_TOKENS | ML_OOM_F_REQUESTED | ML_OOM_F_FREE | ML_OOM_F_EST_MAX_LEN,
        [R_KERNEL_KILL] = ML_OOM_F_THIS_PROCESS | ML_OOM_F_HOST_KILL,
    };
    if ((size_t)r < sizeof(owned) / sizeof(owned[0]))
        e->has &= ~owned[r];
    struct squeezed q;
    (void)ml_oom_squeeze(q.sq, q.lo, NULL, sizeof(q.sq), msg, strlen(msg));
    switch (r) {
    case R_CPU_ALLOC: read_request_after(e, &q, "triedtoallocate"); break;
    case R_NCCL_CALLOC: read_request_after(e, &q, "cudacalloc"); break;
    case R_VLLM_FREE: read_vllm_free(e, &q); break;
    case R_VLLM_KV: read_vllm_kv(e, &q); break;
    case R_KERNEL_KILL: read_kill(e, &q); break;
    default: break;
    }
}

/* Does reader r gather its message over following lines, and has the message msg ended? */
static bool gathers(enum reader r)
{
    return r == R_NUMBERS || r == R_TRIED || r == R_KERNEL_KILL ||
           ((size_t)r < sizeof(reader_ends) / sizeof(reader_ends[0]) && reader_ends[r]);
}

static bool reader_complete(enum reader r, const char *msg)
{
    if (r == R_NUMBERS || r == R_TRIED)
        return ml_oom_alloc_complete(msg);
    if (!gathers(r))
        return true;
    struct squeezed q;
    (void)ml_oom_squeeze(q.sq, q.lo, NULL, sizeof(q.sq), msg, strlen(msg));
    if (r == R_KERNEL_KILL)
        return kill_complete(&q);
    for (const char *a = reader_ends[r]; *a; a += strlen(a) + 1)
        if (find(q.lo, a))
            return true;
    return false;
}

/* NCCL's debug prefix "host:pid:tid [dev] ": its length in l, 0 when the line has none. */
static size_t nccl_prefix(const char *l)
{
    const char *b = find(l, "] ");
    if (!b || b - l > 64 || !find(l, ":"))
        return 0;
    const char *o = find(l, " [");
    return o && o < b ? (size_t)(b + 2 - l) : 0;
}

/* NCCL prints one failure as two lines of one thread ("Cuda failure 'out of memory'", then
 * "Failed to CUDA calloc N bytes", A8): the second updates the event of the first when both have
 * the same debug prefix within 8 lines, instead of making another. */
static enum took nccl_companion(struct ml_oom_scanner *s, struct ml_oom_event *e, const char *l, bool has_size)
{
    struct ml_incident *inc = s->inc;
    size_t pl = nccl_prefix(l);
    if (!pl || !inc->n_events)
        return TOOK_EVENT;
    struct ml_oom_event *o = &inc->ev[inc->n_events - 1];
    /* (the first line's prefix may be lost: a hard wrap read it from its end, the seam) */
    if (o->kind != ML_OOM_NCCL || o->file != s->file || s->lineno - o->line > 8 ||
        (strncmp(o->text, l, pl) && nccl_prefix(o->text)))
        return TOOK_EVENT;
    if (has_size && !(o->has & ML_OOM_F_REQUESTED)) {
        o->requested = e->requested;
        o->has |= ML_OOM_F_REQUESTED;
    }
    return TOOK_NONE;
}

/* Store a finished event: a NCCL line that is the companion of the NCCL event just before it
 * updates that one instead. */
static bool store(struct ml_oom_scanner *s, struct ml_oom_event *e, enum reader r)
{
    /* A bare "Tried to allocate" is the allocator's message only with its accounting. */
    if (r == R_TRIED && !(e->has & ML_OOM_F_TOTAL))
        return false;
    if (e->kind == ML_OOM_NCCL && nccl_companion(s, e, e->text, (e->has & ML_OOM_F_REQUESTED) != 0) == TOOK_NONE)
        return false;
    ml_oom_commit(s, e);
    return true;
}

/* A CANN code is the companion of an NPU allocator message (A3): an event only when alone. */
static enum took read_npu_code(const struct ml_oom_scanner *s)
{
    const struct ml_incident *inc = s->inc;
    if (inc->n_events && inc->ev[inc->n_events - 1].device == ML_DEV_NPU &&
        inc->ev[inc->n_events - 1].file == s->file && s->lineno - inc->ev[inc->n_events - 1].line < 50)
        return TOOK_NONE;
    if (s->pending && s->pev.device == ML_DEV_NPU)
        return TOOK_NONE;
    return TOOK_EVENT;
}

/* The kernel's OOM killer: one kill prints several kernel lines, one event per input. */
static enum took read_kernel_kill(struct ml_oom_scanner *s, struct ml_oom_event *e, const char *l)
{
    struct ml_incident *inc = s->inc;
    inc->kernel_oom_lines++;
    read_gathered(e, R_KERNEL_KILL, l);
    for (uint32_t i = 0; i < inc->n_events; i++) {
        struct ml_oom_event *o = &inc->ev[i];
        if (o->kind == ML_OOM_HOST_KILLER && o->file == s->file) {
            if ((e->has & ML_OOM_F_THIS_PROCESS) && !(o->has & ML_OOM_F_THIS_PROCESS)) {
                o->this_process = e->this_process;
                o->has |= ML_OOM_F_THIS_PROCESS;
            }
            if ((e->has & ML_OOM_F_HOST_KILL) && !(o->has & ML_OOM_F_HOST_KILL)) {
                o->host_pid = e->host_pid;
                o->host_total_vm = e->host_total_vm;
                o->host_file_rss = e->host_file_rss;
                o->host_shmem_rss = e->host_shmem_rss;
                o->has |= ML_OOM_F_HOST_KILL;
            }
            return TOOK_NONE;
        }
    }
    return TOOK_EVENT;
}

/* A SIGKILL with its exit code; a line without a rank takes the torchrun failure summary's just
 * above it. */
static enum took sigkill(const struct ml_oom_scanner *s, struct ml_oom_event *e, int32_t code)
{
    if (e->rank < 0 && s->sum_rank_line && s->lineno - s->sum_rank_line < 6) {
        e->rank = s->sum_rank;
        e->rank_mask = s->sum_rank >= 0 && s->sum_rank < 64 ? (uint64_t)1 << s->sum_rank : 0;
    }
    if (code) {
        e->exit_code = code;
        e->has |= ML_OOM_F_EXIT;
    }
    return TOOK_EVENT;
}

/* An exit code after one of the row's keys: the incident's; a SIGKILL's (-9, 137) is an event. */
static enum took read_exit_code(struct ml_oom_scanner *s, struct ml_oom_event *e, const struct format *f, const char *l)
{
    for (const char *k = f->any; k < f->any + sizeof(f->any) && *k; k += strnlen(k, sizeof(f->any)) + 1) {
        const char *p = find(l, k);
        if (!p)
            continue;
        p += strlen(k);
        while (*p == ' ' || *p == ':' || *p == '=')
            p++;
        bool neg = *p == '-';
        if (neg)
            p++;
        uint64_t v;
        if (ml_oom_parse_u64(p, &v) && v < 100000) {
            int32_t code = neg ? -(int32_t)v : (int32_t)v;
            s->inc->exit_code = code;
            return code == -9 || code == 137 ? sigkill(s, e, code) : TOOK_NONE;
        }
    }
    return TOOK_NEXT;
}

/* A shell's job line: "Killed" alone or after a PID (not prose about a killed process). */
static enum took read_shell_killed(const struct ml_oom_scanner *s, struct ml_oom_event *e, const struct hit *h)
{
    const char *b = skip_blank(h->l);
    const char *before = h->at;
    while (before > h->l && before[-1] == ' ')
        before--;
    bool alone = b == h->at;
    bool after_pid = before > h->l && is_digit(before[-1]);
    /* the end of a progress bar the kill cut: "52002/52002 [00:10<00:00, 4800.12 examples/s]Killed" */
    bool after_bar = before == h->at && before > h->l && before[-1] == ']' && find(h->l, "%|");
    /* not prose about a killed process ("进程": process) */
    if ((alone || after_pid || after_bar) && !find(h->l, "process") && !find(h->l, "\xe8\xbf\x9b\xe7\xa8\x8b"))
        return sigkill(s, e, -9);
    return TOOK_NONE;
}

static void ref_line(const struct ml_oom_scanner *s, struct ml_oom_ref *r, const char *l)
{
    r->file = s->file;
    r->line = s->lineno;
    r->step = -1;
    ml_oom_excerpt(r->text, sizeof(r->text), l, strlen(l));
}

/* The phase of a ggml buffer's failure: the weights are loaded; the KV cache and the compute
 * graph are the context the engine (llama.cpp's server, Ollama's runner) builds at start-up. */
static enum ml_oom_phase ggml_phase(enum ml_buffer_role role)
{
    return role == ML_BUF_WEIGHTS || role == ML_BUF_HOST ? ML_OPH_LOAD : ML_OPH_SERVING_STARTUP;
}

/* The role a ggml line names for its buffer (ML_BUF_NONE: none). */
static enum ml_buffer_role ggml_role(const char *l)
{
    if (find(l, "CPU buffer") || find(l, "CPU_Mapped") || find(l, "CUDA_Host") || find(l, "CPU KV"))
        return ML_BUF_HOST;
    if (find(l, "kv cache") || find(l, "KV buffer") || find(l, "kv_cache"))
        return ML_BUF_KV;
    if (find(l, "gallocr") || find(l, "compute buffer") || find(l, "graph_reserve") || find(l, "sched_reserve"))
        return ML_BUF_COMPUTE;
    /* not alloc_tensor_range (ggml-alloc.c): ggml_backend_alloc_ctx_tensors_from_buft calls it for
     * the weights (llama-model.cpp load_tensors) and for the KV cache (llama-kv-cache.cpp) alike,
     * so the role comes from the loader's line around it */
    if (find(l, "model buffer") || find(l, "llama_model_load") || find(l, "load_tensors") ||
        find(l, "error loading model"))
        return ML_BUF_WEIGHTS;
    return ML_BUF_NONE;
}

/* A ggml buffer line: "allocating 144817.04 MiB on device 0: cudaMalloc failed: out of memory",
 * "failed to allocate CUDA0 buffer of size 151851674624", "unable to allocate CUDA0 buffer",
 * "failed to allocate compute buffers". The lines of one failure are one event: a line right
 * after a ggml event adds its exact size, device and role to it. */
static enum took read_ggml(struct ml_oom_scanner *s, struct ml_oom_event *e, const char *l)
{
    uint64_t v = 0;
    bool has_req = false;
    const char *p = find(l, "allocating ");
    if (p && ml_oom_parse_size(p + 11, &v))
        has_req = true;
    p = find(l, "buffer of size ");
    if (p && ml_oom_parse_u64(p + 15, &v))
        has_req = true;
    int32_t gpu = -1;
    p = find(l, "on device ");
    uint64_t d;
    if (p && ml_oom_parse_u64(p + 10, &d) && d < 1024)
        gpu = (int32_t)d;
    enum ml_oom_device dev = find(l, "hipMalloc") || find(l, "ROCm") ? ML_DEV_HIP : ML_DEV_CUDA;
    static const char *const names[] = {"CUDA", "ROCm", "Vulkan", "Metal", "SYCL"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && gpu < 0; i++) {
        const char *n = find(l, names[i]);
        size_t k = strlen(names[i]);
        if (n && is_digit(n[k]) && ml_oom_parse_u64(n + k, &d) && d < 1024) {
            gpu = (int32_t)d;
            dev = i == 1 ? ML_DEV_HIP : i == 0 ? ML_DEV_CUDA : ML_DEV_OTHER;
        }
    }
    enum ml_buffer_role role = ggml_role(l);
    /* the CPU backend's allocator (ggml-backend.c ggml_backend_cpu_buffer_type_alloc_buffer) names
     * the device, host RAM, not the buffer's role: the next line says what the buffer holds */
    if (role == ML_BUF_HOST || find(l, "cpu_buffer_type"))
        dev = ML_DEV_HOST;
    /* the same failure's next line */
    if (s->after_ev >= 0 && s->inc->ev[s->after_ev].kind == ML_OOM_GGML && s->lineno - s->last_event_line <= 4) {
        struct ml_oom_event *o = &s->inc->ev[s->after_ev];
        if (has_req && (!(o->has & ML_OOM_F_REQUESTED) || v > o->requested / 2)) {
            o->requested = v; /* the exact bytes after the MiB figure */
            o->has |= ML_OOM_F_REQUESTED;
        }
        if (o->gpu < 0)
            o->gpu = gpu;
        if (role && !o->buffer)
            o->buffer = role;
        if (role && (o->phase == ML_OPH_UNKNOWN || o->phase == ML_OPH_LOAD)) {
            o->phase = ggml_phase(role);
            ref_line(s, &o->phase_ref, l);
            (void)snprintf(o->phase_cue, sizeof(o->phase_cue), "%s", "ggml buffer");
        }
        if (role == ML_BUF_HOST)
            o->device = ML_DEV_HOST;
        s->last_event_line = s->lineno;
        return TOOK_NONE;
    }
    e->device = dev;
    e->gpu = gpu;
    e->buffer = role;
    if (role) {
        e->phase = ggml_phase(role);
        ref_line(s, &e->phase_ref, l);
        (void)snprintf(e->phase_cue, sizeof(e->phase_cue), "%s", "ggml buffer");
    }
    if (has_req) {
        e->requested = v;
        e->has |= ML_OOM_F_REQUESTED;
    }
    return TOOK_EVENT;
}

/* Habana: "PT_DEVMEM Allocation failed for size::1073741824 (1024)MB" (bytes after "size::"). */
static enum took read_habana(struct ml_oom_event *e, const char *l)
{
    const char *p = find(l, "size::");
    uint64_t v;
    if (p && ml_oom_parse_u64(p + 6, &v)) {
        e->requested = v;
        e->has |= ML_OOM_F_REQUESTED;
    }
    return TOOK_EVENT;
}

static enum took read_numbers(struct ml_oom_scanner *s, const struct format *f, struct ml_oom_event *e,
                              const struct hit *h)
{
    switch ((enum reader)f->read) {
    case R_NONE: break;
    case R_NUMBERS:
    case R_TRIED:
    case R_CPU_ALLOC:
    case R_NCCL_CALLOC:
    case R_VLLM_FREE:
    case R_VLLM_KV: {
        size_t n = strlen(h->from);
        if (n > ML_OOM_MSG_MAX)
            n = ML_OOM_MSG_MAX;
        memcpy(s->msg, h->from, n);
        s->msg[n] = '\0';
        s->msg_len = n;
        read_gathered(e, (enum reader)f->read, s->msg);
        break;
    }
    case R_NCCL_FAILURE: /* one line may hold both NCCL lines (a one-line paste) */
        read_gathered(e, R_NCCL_CALLOC, h->l);
        break;
    case R_NPU_CODE: return read_npu_code(s);
    case R_HOST_LINE: {
        struct hit k = *h;
        k.m = ~(uint64_t)0;
        (void)read_rows(s, host_formats, sizeof(host_formats) / sizeof(host_formats[0]), &k);
        return TOOK_NONE;
    }
    case R_KERNEL_KILL: {
        size_t n = strlen(h->l) < ML_OOM_MSG_MAX ? strlen(h->l) : ML_OOM_MSG_MAX;
        memcpy(s->msg, h->l, n);
        s->msg[n] = '\0';
        s->msg_len = n;
        return read_kernel_kill(s, e, h->l);
    }
    case R_EXIT_CODE: return read_exit_code(s, e, f, h->l);
    case R_SIGKILL_137: return sigkill(s, e, 137);
    case R_SIGKILL_9: return sigkill(s, e, -9);
    case R_SHELL_KILLED: return read_shell_killed(s, e, h);
    case R_GGML: return read_ggml(s, e, h->l);
    case R_HABANA: return read_habana(e, h->l);
    }
    return TOOK_EVENT;
}

/* ---- the rows ---------------------------------------------------------------------------- */

static enum ml_oom_device row_device(const struct format *f, const struct hit *h)
{
    switch (f->device) {
    case DEV_WORD: return ml_oom_device_word(h->l, h->oom);
    case DEV_MPS_OR_WORD: return find(h->l, "MPS backend") ? ML_DEV_MPS : ml_oom_device_word(h->l, h->oom);
    case DEV_HIP_OR_CUDA: return find(h->l, "HIP") ? ML_DEV_HIP : ML_DEV_CUDA;
    default: return (enum ml_oom_device)f->device;
    }
}

/* The first of rows[0..n) that h0's line is: its event made, read and stored (or left pending,
 * for an allocator message that may go on). Returns whether a row took the line. */
static bool read_rows(struct ml_oom_scanner *s, const struct format *rows, size_t n, const struct hit *h0)
{
    for (size_t i = 0; i < n; i++) {
        const struct format *f = &rows[i];
        if (!(h0->m & GB(f->group)))
            continue;
        struct hit h = *h0;
        h.at = first_of(h.l, f->any, sizeof(f->any));
        if (!h.at)
            continue;
        /* The second needle may be on the next line when the first ends this one (a wrap after
         * "DefaultCPUAllocator:"): a row that gathers its message then checks it there. */
        bool later = false;
        if (f->also[0] && !first_of(h.l, f->also, sizeof(f->also))) {
            later = gathers((enum reader)f->read) && strlen(h.at) <= 40;
            if (!later)
                continue;
        }
        h.from = f->text == AT_LINE ? h.l : f->text == AT_OOM ? message_start(h.l, h.oom) : exc_start(h.l, h.at);
        struct ml_oom_event e;
        ev_init(s, &e, (enum ml_oom_kind)f->kind, row_device(f, &h), h.rank, h.from);
        enum took t = read_numbers(s, f, &e, &h);
        if (t == TOOK_NEXT)
            continue;
        if (t == TOOK_EVENT) {
            enum reader r = (enum reader)f->read;
            if (later || (gathers(r) && (r != R_NUMBERS || ml_oom_kind_wraps(e.kind)) && !reader_complete(r, s->msg))) {
                s->pev = e; /* the rest of the message is on the following lines */
                s->pend_read = r;
                s->pend_also = later ? f->also : NULL;
                s->pending = true;
                s->pending_lines = 0;
            } else {
                (void)store(s, &e, r);
            }
        }
        return true;
    }
    return false;
}

/* The first "out of memory" of l in any spelling, NULL if none. */
static const char *first_oom(const char *l)
{
    static const char spellings[][16] = {"out of memory", "Out of memory", "OUT OF MEMORY"};
    const char *o = NULL;
    for (size_t i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
        const char *p = find(l, spellings[i]);
        if (p && (!o || p < o))
            o = p;
    }
    return o;
}

static void read_message(struct ml_oom_scanner *s, const char *l, uint64_t m, int32_t rank)
{
    struct hit h = {l, l, NULL, NULL, m, rank};
    const char *o = (m & GB(G_OOM)) ? first_oom(l) : NULL;
    if (o)
        h.oom = o;
    if (read_rows(s, formats, sizeof(formats) / sizeof(formats[0]), &h))
        return;
    (void)read_rows(s, host_formats, sizeof(host_formats) / sizeof(host_formats[0]), &h);
}

void ml_oom_read_events(struct ml_oom_scanner *s, char *l, uint64_t m, int32_t rank)
{
    /* Source lines quoted by a traceback ('raise ValueError("No available memory ...")') are not
     * the error itself; in a one-line paste the error may follow the quote on the same line. */
    const char *r = find(l, "raise ");
    const char *dq = r ? strchr(r, '"') : NULL, *sq1 = r ? strchr(r, '\'') : NULL;
    const char *open = !dq ? sq1 : !sq1 ? dq : dq < sq1 ? dq : sq1;
    /* the literal opens the call's argument: raise X("...") or raise X(f"...") */
    if (open && open - r < 48 && (open[-1] == '(' || (open[-1] == 'f' && open - 1 > r && open[-2] == '('))) {
        const char *close = strchr(open + 1, *open); /* the quoted literal's end */
        if (!close)
            return;
        l += close + 1 - l;
    }
    /* One line may hold several messages (a router repeating a worker's error, a one-line paste
     * of two ranks): each ends where the next "out of memory" message starts. */
    for (unsigned k = 0; k < ML_OOM_MAX_EVENTS; k++) {
        const char *o = (m & GB(G_OOM)) ? first_oom(l) : NULL;
        const char *o2 = o && strlen(o) > 20 ? first_oom(o + 20) : NULL;
        char *next = o2 ? l + (message_start(l, o2) - l) : NULL;
        if (next && next <= o)
            next = NULL;
        /* a message without the words ("... larger than 4GB! Tried to allocate X (GPU 0; ...)")
         * ends where the first "out of memory" message starts */
        const char *t = o ? find(l, TRIED) : NULL;
        const char *o_start = t ? message_start(l, o) : NULL;
        if (t && t < o_start && o_start > l) {
            const char *e = exc_start(l, o);
            next = l + ((e > t && e < o_start ? e : o_start) - l);
        }
        char save = next ? *next : '\0';
        if (next)
            *next = '\0';
        read_message(s, l, m, rank);
        if (!next)
            return;
        *next = save;
        ml_oom_close_message(s); /* the message ended where the next one starts */
        l = next;
    }
}
