/*
 * grammar.c - the OOM message grammar of the scanner (scanner.h): which line is which message.
 *
 * Each message format is one row of formats[] (device and engine messages) or host_formats[]
 * (kill records, exit codes): the anchor group the line holds, its needles, the kind and device
 * of the event, where its text starts and the reader of its numbers. The rows are tried in order
 * and the first that matches makes the event. PyTorch's allocator message (the kinds that wrap,
 * ML_OOM_KINDS) is read by its phrases (labels[]) and may continue on the following lines.
 *
 * The formats and what each number means are the shared field guide's
 * (reference/oom-messages.md, sections A1-A11).
 */
#include <stdio.h>

#include "scanner.h"

/* Needles are "\0"-separated alternatives in one array: "a" OR "b". */
#define OR "\0"
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
    R_CPU_ALLOC,    /* "tried to allocate N bytes" after "CPUAllocator" */
    R_NCCL_CALLOC,  /* "Failed to CUDA calloc N bytes" */
    R_VLLM_FREE,    /* "Free memory on device (F/T GiB) ... utilization (U, D GiB)" */
    R_VLLM_KV,      /* "max seq len (S) ... KV cache (T)", v1's "(X GiB KV cache is needed ...)" */
    R_NPU_CODE,     /* a CANN code: an event only when no NPU allocator message is next to it */
    R_HOST_LINE,    /* a kill record on an "out of memory" line: the host rows read it */
    R_KERNEL_KILL,  /* the kernel's OOM killer record (anon-rss), one event per input */
    R_EXIT_CODE,    /* "exitcode: -9", "exit code 137": an event when it is a SIGKILL's */
    R_SIGKILL_137,  /* OOMKilled */
    R_SIGKILL_9,    /* "Signal 9", SIGKILL */
    R_SHELL_KILLED  /* a shell's "Killed" job line */
};

struct format {
    uint8_t group;   /* enum grp: the anchor group the line holds */
    char any[104];   /* the line holds one of these (OR); the first found is the hit */
    char also[48];   /* ... and one of these too ("": no second test) */
    uint8_t kind;    /* enum ml_oom_kind */
    uint8_t device;  /* enum ml_oom_device or DEV_* */
    uint8_t text;    /* AT_* */
    uint8_t read;    /* enum reader */
};

/* Device and engine messages (A1-A10). */
static const struct format formats[] = {
    {G_HOSTALLOC, "CPUAllocator", "can't allocate" OR "tried to allocate", ML_OOM_HOST_ALLOC, ML_DEV_HOST, AT_LINE,
     R_CPU_ALLOC},
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
    {G_OOM, "NCCL" OR "Cuda failure" OR "nccl", "", ML_OOM_NCCL, ML_DEV_CUDA, AT_LINE, R_NONE},
    {G_OOM, "Prefill out of memory" OR "Decode out of memory", "", ML_OOM_SGLANG, ML_DEV_UNKNOWN, AT_OOM, R_NONE},
    /* raw runtime errors (A2, A7): THC's "cuda runtime error (2) : out of memory", triton */
    {G_OOM, "CUDA error: out of memory" OR "cuda runtime error (2)", "", ML_OOM_RUNTIME, ML_DEV_CUDA, AT_OOM, R_NONE},
    {G_OOM, "HIP error: out of memory" OR "hip error: out of memory", "", ML_OOM_RUNTIME, ML_DEV_HIP, AT_OOM, R_NONE},
    {G_OOM, "triton runtime error: out of memory", "", ML_OOM_RUNTIME, ML_DEV_CUDA, AT_OOM, R_NONE},
    /* a bare exception line: an allocator message whose "Tried to allocate" is on the next line */
    {G_OOM, "Error: CUDA out of memory" OR "Error: HIP out of memory" OR "Error: NPU out of memory" OR
                "Error: XPU out of memory",
     "", ML_OOM_ALLOCATOR, DEV_WORD, AT_OOM, R_NUMBERS},
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
    {G_NCCL, "CUDA calloc", "", ML_OOM_NCCL, ML_DEV_CUDA, AT_LINE, R_NCCL_CALLOC},
    {G_NCCL, "shared memory segment", "NCCL" OR "/dev/shm", ML_OOM_NCCL_SHM, ML_DEV_HOST, AT_LINE, R_NONE},
    /* vLLM and SGLang start-up (A10) */
    {G_VLLMERR, "Free memory on device", "", ML_OOM_VLLM_FREE_MEMORY, ML_DEV_CUDA, AT_HIT, R_VLLM_FREE},
    {G_VLLMERR, "max seq len (", "", ML_OOM_VLLM_KV_TOO_SMALL, ML_DEV_UNKNOWN, AT_HIT, R_VLLM_KV},
    {G_VLLMERR, "No available", "No available memory for the cache blocks", ML_OOM_VLLM_NO_CACHE, ML_DEV_UNKNOWN,
     AT_HIT, R_NONE},
    {G_VLLMERR, "Not enough memory", "mem-fraction" OR "mem_fraction", ML_OOM_SGLANG, ML_DEV_UNKNOWN, AT_HIT, R_NONE},
    /* CANN codes (A3) */
    {G_NPUCODE, "EL0004" OR "ERR00006", "", ML_OOM_RUNTIME, ML_DEV_NPU, AT_LINE, R_NPU_CODE},
    {G_NPUCODE, "207001", "alloc", ML_OOM_RUNTIME, ML_DEV_NPU, AT_LINE, R_NPU_CODE},
};

/* Host kill records and exit codes (A11). */
static const struct format host_formats[] = {
    {G_KILL, "invoked oom-killer" OR "oom-kill:" OR "oom_reaper: reaped" OR "Killed process", "", ML_OOM_HOST_KILLER,
     ML_DEV_HOST, AT_LINE, R_KERNEL_KILL},
    {G_KILL, "OOMKilled", "", ML_OOM_HOST_SIGKILL, ML_DEV_HOST, AT_LINE, R_SIGKILL_137},
    /* "exitcode  : -9", "return code = -9", "exit code 137", "exit status 137", "exited with code 137" */
    {G_KILL, "exitcode" OR "exit code" OR "return code" OR "exit status" OR "exited with code" OR
                 "exited with exit code",
     "", ML_OOM_HOST_SIGKILL, ML_DEV_HOST, AT_LINE, R_EXIT_CODE},
    {G_KILL, "Signal 9" OR "SIGKILL", "", ML_OOM_HOST_SIGKILL, ML_DEV_HOST, AT_LINE, R_SIGKILL_9},
    /* shell job messages: "Killed", "line 3: 1234 Killed   python train.py" */
    {G_KILL, "Killed", "", ML_OOM_HOST_SIGKILL, ML_DEV_HOST, AT_LINE, R_SHELL_KILLED},
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

/* ---- the allocator message (A1-A6) ------------------------------------------------------- */

static enum ml_oom_device device_word(const char *msg, const char *oom)
{
    /* The word right before "out of memory". */
    const char *e = oom;
    while (e > msg && e[-1] == ' ')
        e--;
    const char *b = e;
    while (b > msg && (is_word(b[-1])))
        b--;
    size_t n = (size_t)(e - b);
    static const struct {
        char w[8];
        enum ml_oom_device d;
    } words[] = {
        {"CUDA", ML_DEV_CUDA}, {"HIP", ML_DEV_HIP}, {"NPU", ML_DEV_NPU}, {"XPU", ML_DEV_XPU},
        {"MUSA", ML_DEV_MUSA}, {"MLU", ML_DEV_OTHER}, {"GCU", ML_DEV_OTHER}, {"DIPU", ML_DEV_OTHER},
        {"backend", ML_DEV_MPS}, {"cuda", ML_DEV_CUDA}, {"hip", ML_DEV_HIP},
    };
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (n == strlen(words[i].w) && !strncmp(b, words[i].w, n))
            return words[i].d;
    return ML_DEV_UNKNOWN;
}

/* Does the text just before position p (within msg) end with key? */
static bool before_is(const char *msg, const char *p, const char *key)
{
    size_t k = strlen(key);
    return (size_t)(p - msg) >= k && !strncmp(p - k, key, k);
}

/* Which field a size of the allocator message is, by the words right before or right after it:
 * the first row that matches names it (so "max allowed:" goes before "total capacity", and "is
 * reserved by PyTorch" before "reserved by PyTorch"). Robust to wrapped lines, dropped sentences
 * and the classic "(GPU 0; T total capacity; ...)" tuple. */
enum { BEFORE, AFTER };
#define F_PROCESS 0u /* "Process <pid> has X memory in use": another process, into procs[] */
static const struct label {
    uint8_t side;
    char words[40];
    uint32_t fields; /* the ML_OOM_F_ bits the size goes to, or F_PROCESS */
} labels[] = {
    {BEFORE, "allocate", ML_OOM_F_REQUESTED},
    {BEFORE, "allocate more than", ML_OOM_F_REQUESTED},
    {BEFORE, "max allowed:", ML_OOM_F_TOTAL | ML_OOM_F_ALLOWED}, /* MPS */
    {BEFORE, "capacity of", ML_OOM_F_TOTAL},
    {BEFORE, "capacty of", ML_OOM_F_TOTAL}, /* (sic) */
    {AFTER, "total capacity", ML_OOM_F_TOTAL},
    {AFTER, "total capacty", ML_OOM_F_TOTAL},
    {BEFORE, "of which", ML_OOM_F_FREE},
    {AFTER, "free", ML_OOM_F_FREE},
    {AFTER, "is free", ML_OOM_F_FREE},
    {BEFORE, "this process has", ML_OOM_F_THIS_PROCESS},
    {AFTER, "memory in use", F_PROCESS},
    {AFTER, "allowed", ML_OOM_F_ALLOWED},
    {AFTER, "allocated in private pool", ML_OOM_F_PRIVATE_POOL},
    {BEFORE, "allocated memory", ML_OOM_F_ALLOCATED},
    {AFTER, "is allocated by PyTorch", ML_OOM_F_ALLOCATED},
    {AFTER, "already allocated", ML_OOM_F_ALLOCATED},
    {BEFORE, "MPS allocated:", ML_OOM_F_ALLOCATED},
    {BEFORE, "currently allocated:", ML_OOM_F_ALLOCATED},
    {AFTER, "is reserved by PyTorch but unallocated", ML_OOM_F_RESERVED_UNALLOC},
    {AFTER, "reserved by PyTorch but unallocated", ML_OOM_F_RESERVED_UNALLOC},
    {AFTER, "reserved in total", ML_OOM_F_RESERVED},
    {AFTER, "cached", ML_OOM_F_RESERVED},
    {AFTER, "current active", ML_OOM_F_ACTIVE},
    {BEFORE, "other allocations:", ML_OOM_F_OTHER},
};

/* Where each size field (bits ML_OOM_F_REQUESTED .. ML_OOM_F_OTHER) lives in the event. */
static const size_t size_fields[] = {
    offsetof(struct ml_oom_event, requested),        offsetof(struct ml_oom_event, total),
    offsetof(struct ml_oom_event, free),             offsetof(struct ml_oom_event, allocated),
    offsetof(struct ml_oom_event, reserved_unalloc), offsetof(struct ml_oom_event, reserved),
    offsetof(struct ml_oom_event, active),           offsetof(struct ml_oom_event, allowed),
    offsetof(struct ml_oom_event, private_pool),     offsetof(struct ml_oom_event, this_process),
    offsetof(struct ml_oom_event, other),
};
_Static_assert(ML_OOM_F_OTHER == 1u << (sizeof(size_fields) / sizeof(size_fields[0]) - 1), "a slot per size field");

/* The allocator variable the message's hint names: the first found. */
static const struct {
    char needle[40];
    enum ml_oom_hint hint;
} hints[] = {
    {"PYTORCH_CUDA_ALLOC_CONF=expandable", ML_HINT_CUDA_CONF}, {"PYTORCH_HIP_ALLOC_CONF", ML_HINT_HIP_CONF},
    {"PYTORCH_NPU_ALLOC_CONF", ML_HINT_NPU_CONF},             {"PYTORCH_MUSA_ALLOC_CONF", ML_HINT_MUSA_CONF},
    {"PYTORCH_ALLOC_CONF", ML_HINT_ALLOC_CONF},               {"max_split_size_mb", ML_HINT_MAX_SPLIT},
    {"HIGH_WATERMARK_RATIO", ML_HINT_MPS_WATERMARK},          {"empty_cache", ML_HINT_EMPTY_CACHE},
};

static void put_size(struct ml_oom_event *e, uint32_t fields, uint64_t v)
{
    if ((fields & ML_OOM_F_REQUESTED) && (e->has & ML_OOM_F_REQUESTED))
        return; /* the request is the first size so named */
    for (size_t b = 0; b < sizeof(size_fields) / sizeof(size_fields[0]); b++)
        if (fields >> b & 1)
            memcpy((char *)e + size_fields[b], &v, sizeof(v));
    e->has |= fields;
}

/* "Process <pid> has X memory in use": bp is where X starts (blanks before it trimmed). */
static void put_process(struct ml_oom_event *e, const char *msg, const char *bp, uint64_t v)
{
    if (!before_is(msg, bp, "has"))
        return;
    const char *q = bp - 3;
    while (q > msg && q[-1] == ' ')
        q--;
    const char *d = q;
    while (d > msg && is_digit(d[-1]))
        d--;
    uint64_t pid = 0;
    if (d < q && before_is(msg, d, "Process ") && ml_oom_parse_u64(d, &pid) && e->n_procs < ML_OOM_MAX_PROCS) {
        e->procs[e->n_procs].pid = pid;
        e->procs[e->n_procs].bytes = v;
        e->n_procs++;
    }
}

/* The size at p (of n characters) in msg: its field by labels[]. */
static void label_size(struct ml_oom_event *e, const char *msg, const char *p, size_t n, uint64_t v)
{
    const char *a = skip_blank(p + n);
    const char *bp = p; /* blanks before the number trimmed, for the "before" tests */
    while (bp > msg && bp[-1] == ' ')
        bp--;
    for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
        const struct label *lb = &labels[i];
        if (lb->side == BEFORE ? !before_is(msg, bp, lb->words) : !starts(a, lb->words))
            continue;
        if (lb->fields == F_PROCESS)
            put_process(e, msg, bp, v);
        else
            put_size(e, lb->fields, v);
        return;
    }
}

/* Fill the numbers of an allocator-family message by classifying every size in it by the
 * words around it, then the device ordinal, the classic form and the hint's variable. */
static void parse_numbers(struct ml_oom_event *e, const char *msg)
{
    for (const char *p = msg; *p; p++) {
        if (!is_digit(*p) || (p > msg && (is_word(p[-1]) || p[-1] == '.')))
            continue;
        uint64_t v;
        size_t n = ml_oom_parse_size(p, &v);
        if (!n) {
            while (is_digit(p[1]) || p[1] == '.')
                p++;
            continue;
        }
        label_size(e, msg, p, n, v);
        p += n - 1;
    }
    /* Device ordinal: "(GPU 3;" "(NPU 0;" "GPU 5 has" "NPU 1;". */
    static const char ords[][8] = {"(GPU ", "(NPU ", "GPU ", "NPU ", "(XPU ", "XPU "};
    for (size_t i = 0; i < sizeof(ords) / sizeof(ords[0]) && e->gpu < 0; i++) {
        const char *q = find(msg, ords[i]);
        while (q) {
            uint64_t g;
            size_t k = ml_oom_parse_u64(q + strlen(ords[i]), &g);
            const char *t = q + strlen(ords[i]) + k;
            if (k && g < 4096 && (*t == ';' || !strncmp(t, " has", 4))) {
                e->gpu = (int32_t)g;
                break;
            }
            q = find(q + 1, ords[i]);
        }
    }
    if (find(msg, "total capacity;") || find(msg, "already allocated;"))
        e->classic = true;
    for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
        if (find(msg, hints[i].needle)) {
            e->hint = hints[i].hint;
            break;
        }
    }
}

/* Has the allocator message ended? Its last sentence is the hint, the documentation pointer or
 * the accounting in brackets (every era and backend). */
static bool message_complete(const char *msg)
{
    static const char ends[][32] = {
        "ALLOC_CONF", "max_split_size_mb", "See documentation", "unallocated.", "reserved in total by PyTorch)",
        "cached)", " pool.", "empty_cache", "TASK_QUEUE_ENABLE", "more than 1EB",
    };
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
        if (find(msg, ends[i]))
            return true;
    return false;
}

/* Could body continue the pending message (a wrapped or sentence-split OOM message)? */
static bool continues(const char *body, size_t prev_len, char prev_last)
{
    const char *b = skip_blank(body);
    static const char heads[][24] = {
        "GPU ", "NPU ", "XPU ", "Of the allocated", "Process ", "Including non-PyTorch", "If reserved",
        "See documentation", "(GPU", "(NPU", "and ", "with ", "Management", "unallocated", "reserved",
        "allocated", "is allocated", "is reserved", "memory in use", "of which", "total capac",
    };
    if (!*b)
        return false;
    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++)
        if (starts(b, heads[i]))
            return true;
    if (is_digit(*b) && !starts(b, "0%|"))
        return true;
    /* A terminal hard-wrapped the line: a long line cut mid-sentence. */
    return prev_len >= 120 && prev_last != '.' && prev_last != ')' && prev_last != ':' && *b != '[' &&
           !starts(b, "Traceback") && !starts(b, "File ");
}

void ml_oom_close_message(struct ml_oom_scanner *s)
{
    if (!s->pending)
        return;
    s->pending = false;
    s->pev.wrapped = s->pending_lines > 0;
    ml_oom_excerpt(s->pev.text, sizeof(s->pev.text), s->msg, s->msg_len);
    ml_oom_commit(s, &s->pev);
}

bool ml_oom_continue_message(struct ml_oom_scanner *s, const char *body, uint64_t m, size_t prev_len,
                             char prev_last)
{
    if (s->pending_lines >= 8 || (m & (GB(G_OOM) | GB(G_TRACE))) || !continues(body, prev_len, prev_last)) {
        ml_oom_close_message(s);
        return false;
    }
    const char *b = skip_blank(body);
    size_t bl = strlen(b);
    bool sentence = s->msg_len && (s->msg[s->msg_len - 1] == '.' || s->msg[s->msg_len - 1] == ')');
    if (s->msg_len + 1 + bl <= ML_OOM_MSG_MAX) {
        if (sentence)
            s->msg[s->msg_len++] = ' ';
        memcpy(s->msg + s->msg_len, b, bl);
        s->msg_len += bl;
        s->msg[s->msg_len] = '\0';
    }
    s->pending_lines++;
    parse_numbers(&s->pev, s->msg);
    if (message_complete(s->msg))
        ml_oom_close_message(s);
    return true;
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

/* vLLM: "Free memory on device (F/T GiB) on startup is less than desired GPU memory utilization
 * (U, D GiB)" (vllm/v1/worker/gpu_worker.py, A10). */
static void read_vllm_free(struct ml_oom_event *e, const char *p)
{
    const char *q = find(p, "(");
    if (q) {
        /* "(F/T GiB)": the unit after T applies to both. */
        uint64_t fr = 0, tot = 0;
        const char *num = q + 1;
        const char *slash = find(num, "/");
        if (slash && slash - num < 24 && ml_oom_parse_size(slash + 1, &tot)) {
            /* Re-read F with T's unit: copy "F" + unit text. */
            const char *u = slash + 1;
            while (is_digit(*u) || *u == '.')
                u++;
            char tmp[64];
            int k = snprintf(tmp, sizeof(tmp), "%.*s%.*s", (int)(slash - num), num, 8, u);
            if (k > 0 && ml_oom_parse_size(tmp, &fr)) {
                e->free = fr;
                e->total = tot;
                e->has |= ML_OOM_F_FREE | ML_OOM_F_TOTAL;
            }
        }
    }
    const char *u = find(p, "utilization (");
    if (u) {
        uint32_t pm;
        size_t k = ml_oom_parse_permille(u + 13, &pm);
        if (k) {
            e->util_permille = pm;
            e->has |= ML_OOM_F_UTIL;
            uint64_t want;
            if (u[13 + k] == ',' && ml_oom_parse_size(skip_blank(u + 14 + k), &want)) {
                e->requested = want;
                e->has |= ML_OOM_F_REQUESTED;
            }
        }
    }
    const char *dev = find(p, "on device ");
    if (dev && !strncmp(dev + 10, "xpu", 3))
        e->device = ML_DEV_XPU;
    else if (dev && !strncmp(dev + 10, "npu", 3))
        e->device = ML_DEV_NPU;
}

/* vLLM: v0 "The model's max seq len (S) is larger than the maximum number of tokens that can be
 * stored in KV cache (T)"; v1 "... max seq len (S), (X GiB KV cache is needed, which is larger
 * than the available KV cache memory (Y GiB). ... the estimated maximum model length is L" (A10). */
static void read_vllm_kv(struct ml_oom_event *e, const char *p)
{
    uint64_t v;
    if (ml_oom_parse_u64(p + 13, &v)) {
        e->max_seq_len = v;
        e->has |= ML_OOM_F_MAX_SEQ_LEN;
    }
    const char *q = find(p, "stored in KV cache (");
    if (q && ml_oom_parse_u64(q + 20, &v)) {
        e->kv_tokens = v;
        e->has |= ML_OOM_F_KV_TOKENS;
    }
    q = find(p, "KV cache is needed");
    if (q) {
        const char *b = q;
        while (b > p && b[-1] != '(')
            b--;
        if (ml_oom_parse_size(b, &v)) {
            e->requested = v;
            e->has |= ML_OOM_F_REQUESTED;
        }
    }
    if (size_after(p, "KV cache memory (", &v)) {
        e->free = v;
        e->has |= ML_OOM_F_FREE;
    }
    q = find(p, "maximum model length is ");
    if (q && ml_oom_parse_u64(q + 24, &v)) {
        e->est_max_len = v;
        e->has |= ML_OOM_F_EST_MAX_LEN;
    }
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
    uint64_t kb;
    const char *p = find(l, "anon-rss:");
    if (p && ml_oom_parse_u64(p + 9, &kb) && kb < ((uint64_t)1 << 50)) {
        e->this_process = kb * 1024;
        e->has |= ML_OOM_F_THIS_PROCESS;
    }
    for (uint32_t i = 0; i < inc->n_events; i++) {
        struct ml_oom_event *o = &inc->ev[i];
        if (o->kind == ML_OOM_HOST_KILLER && o->file == s->file) {
            if ((e->has & ML_OOM_F_THIS_PROCESS) && !(o->has & ML_OOM_F_THIS_PROCESS)) {
                o->this_process = e->this_process;
                o->has |= ML_OOM_F_THIS_PROCESS;
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
static enum took read_exit_code(struct ml_oom_scanner *s, struct ml_oom_event *e, const struct format *f,
                                const char *l)
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
    if ((alone || after_pid) && !find(h->l, "process"))
        return sigkill(s, e, -9);
    return TOOK_NONE;
}

static enum took read_numbers(struct ml_oom_scanner *s, const struct format *f, struct ml_oom_event *e,
                              const struct hit *h)
{
    uint64_t v;
    switch ((enum reader)f->read) {
    case R_NONE:
        break;
    case R_NUMBERS: {
        size_t n = strlen(h->from);
        if (n > ML_OOM_MSG_MAX)
            n = ML_OOM_MSG_MAX;
        memcpy(s->msg, h->from, n);
        s->msg[n] = '\0';
        s->msg_len = n;
        parse_numbers(e, s->msg);
        break;
    }
    case R_CPU_ALLOC:
        if (size_after(h->at, "tried to allocate", &v)) {
            e->requested = v;
            e->has |= ML_OOM_F_REQUESTED;
        }
        break;
    case R_NCCL_CALLOC:
        if (ml_oom_parse_size(skip_blank(h->at + 11), &v)) {
            e->requested = v;
            e->has |= ML_OOM_F_REQUESTED;
        }
        break;
    case R_VLLM_FREE:
        read_vllm_free(e, h->at);
        break;
    case R_VLLM_KV:
        read_vllm_kv(e, h->at);
        break;
    case R_NPU_CODE:
        return read_npu_code(s);
    case R_HOST_LINE: {
        struct hit k = *h;
        k.m = ~(uint64_t)0;
        (void)read_rows(s, host_formats, sizeof(host_formats) / sizeof(host_formats[0]), &k);
        return TOOK_NONE;
    }
    case R_KERNEL_KILL:
        return read_kernel_kill(s, e, h->l);
    case R_EXIT_CODE:
        return read_exit_code(s, e, f, h->l);
    case R_SIGKILL_137:
        return sigkill(s, e, 137);
    case R_SIGKILL_9:
        return sigkill(s, e, -9);
    case R_SHELL_KILLED:
        return read_shell_killed(s, e, h);
    }
    return TOOK_EVENT;
}

/* ---- the rows ---------------------------------------------------------------------------- */

static enum ml_oom_device row_device(const struct format *f, const struct hit *h)
{
    switch (f->device) {
    case DEV_WORD:
        return device_word(h->l, h->oom);
    case DEV_MPS_OR_WORD:
        return find(h->l, "MPS backend") ? ML_DEV_MPS : device_word(h->l, h->oom);
    case DEV_HIP_OR_CUDA:
        return find(h->l, "HIP") ? ML_DEV_HIP : ML_DEV_CUDA;
    default:
        return (enum ml_oom_device)f->device;
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
        if (!h.at || (f->also[0] && !first_of(h.l, f->also, sizeof(f->also))))
            continue;
        h.from = f->text == AT_LINE ? h.l : f->text == AT_OOM ? message_start(h.l, h.oom) : exc_start(h.l, h.at);
        struct ml_oom_event e;
        ev_init(s, &e, (enum ml_oom_kind)f->kind, row_device(f, &h), h.rank, h.from);
        enum took t = read_numbers(s, f, &e, &h);
        if (t == TOOK_NEXT)
            continue;
        if (t == TOOK_EVENT) {
            if (f->read == R_NUMBERS && ml_oom_kind_wraps(e.kind) && !message_complete(s->msg)) {
                s->pev = e; /* the rest of the message is on the following lines */
                s->pending = true;
                s->pending_lines = 0;
            } else {
                ml_oom_commit(s, &e);
            }
        }
        return true;
    }
    return false;
}

void ml_oom_read_events(struct ml_oom_scanner *s, const char *l, uint64_t m, int32_t rank)
{
    /* Source lines quoted by a traceback ('raise ValueError("No available memory ...")') are not
     * the error itself. */
    if (find(l, "raise ") && (find(l, "(\"") || find(l, "('") || find(l, "(f\"")))
        return;
    struct hit h = {l, l, NULL, NULL, m, rank};
    if (m & GB(G_OOM)) {
        static const char spellings[][16] = {"out of memory", "Out of memory", "OUT OF MEMORY"};
        const char *o = NULL;
        for (size_t i = 0; i < sizeof(spellings) / sizeof(spellings[0]) && !o; i++)
            o = find(l, spellings[i]);
        if (o)
            h.oom = o;
    }
    if (read_rows(s, formats, sizeof(formats) / sizeof(formats[0]), &h))
        return;
    (void)read_rows(s, host_formats, sizeof(host_formats) / sizeof(host_formats[0]), &h);
}
