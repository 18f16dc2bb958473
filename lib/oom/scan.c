/*
 * scan.c - the streaming OOM log scanner (oom.h).
 *
 * Bytes arrive in chunks of any size. Each line (at most ML_OOM_LINE_MAX bytes are kept) goes
 * through the anchor matcher (match.c), one pass that finds its anchors (short literals such
 * as "out of memory", "step", "Saving") and so says which handlers can possibly apply; most
 * lines of a long log match nothing and cost that one pass. Groups whose fact is known once and
 * for all (a platform flag seen, the python version read) are retired from the matcher's tables.
 * Only lines with an anchor are looked at closely. Nothing is allocated: the scanner and the
 * incident are fixed-size values.
 *
 * The message formats and what each number means are the shared field guide's
 * (reference/oom-messages.md, sections A1-A11); the phase cues are its analysis 4 ("the stack
 * frame at the raise tells the phase"), the timing cues its analysis 5.
 */
#include "memledger/oom.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "match.h"
#include "oom_text.h"

/* ---- anchors ----------------------------------------------------------------------------- */

/* Handler groups: bit i of a line's mask is set when an anchor of group i occurs in it. */
enum grp {
    G_OOM,        /* "out of memory" in its spellings */
    G_OOMCLS,     /* OutOfMemory class names, UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY */
    G_LIB,        /* cuBLAS / cuDNN / cuSOLVER status names */
    G_HOSTALLOC,  /* DefaultCPUAllocator */
    G_NCCL,       /* NCCL calloc / shm / Cuda failure */
    G_VLLMERR,    /* vLLM / SGLang start-up errors */
    G_KILL,       /* kill and exit-code lines */
    G_NPUCODE,    /* CANN error codes */
    G_TRACE,      /* "Traceback (most recent call last)" */
    G_FRAME,      /* frame lines */
    G_SERVE,      /* TGI router spans (":prefill:", "decode{"): serving at run time */
    G_TQDM,       /* tqdm bars */
    G_STEP,       /* step / iteration counters */
    G_LOGDICT,    /* HF Trainer log dictionaries */
    G_SAVE,       /* checkpoint saves */
    G_EVAL,       /* evaluation */
    G_LOAD,       /* model loading */
    G_RESUME,     /* resuming from a checkpoint */
    G_VERSION,    /* library versions */
    G_PYVER,      /* python3.X in paths */
    G_DSFLUSH,    /* DeepSpeed allocator cache flushes */
    G_DSMEM,      /* DeepSpeed see_memory_usage */
    G_CPUMEM,     /* "CPU Virtual Memory" */
    G_VLLMINFO,   /* vLLM memory-profiling and KV lines */
    G_RANK,       /* [rankN]: and worker ranks */
    G_REPEATED,   /* Ray's "[repeated Nx across cluster]" */
    G_RANKSUM,    /* torchrun failure summary "rank      : 0" */
    /* stack and platform flags: the bit alone says what was seen */
    S_VLLM, S_SGLANG, S_TGI, S_DS, S_ZERO3, S_FSDP, S_LORA, S_RL, S_DPO, S_EXPSEG, S_EAGER, S_GC,
    S_WSL, S_WIN, S_JETSON,
    G_COUNT
};

#define GB(g) ((uint64_t)1 << (g))

/* The groups known_groups() can retire. */
#define ONE_SHOT ((~(uint64_t)0 << S_VLLM) | ((uint64_t)1 << G_VERSION) | ((uint64_t)1 << G_PYVER))

static const struct ml_oom_anchor anchors[] = {
    {"out of memory", G_OOM}, {"Out of memory", G_OOM}, {"OUT OF MEMORY", G_OOM},
    {"OutOfMemory", G_OOMCLS}, {"OUT_OF_DEVICE_MEMORY", G_OOMCLS},
    {"_ALLOC_FAILED", G_LIB}, {"_NOT_INITIALIZED", G_LIB}, {"CUSOLVER_STATUS_INTERNAL", G_LIB},
    {"CPUAllocator", G_HOSTALLOC},
    {"CUDA calloc", G_NCCL}, {"shared memory segment", G_NCCL},
    {"cache blocks", G_VLLMERR}, {"max seq len", G_VLLMERR}, {"Free memory on device", G_VLLMERR},
    {"Not enough memory", G_VLLMERR},
    {"Killed", G_KILL}, {"oom-kill", G_KILL}, {"oom_kill", G_KILL}, {"OOMKilled", G_KILL},
    {"oom_reaper", G_KILL}, {"SIGKILL", G_KILL}, {"Signal 9", G_KILL}, {"exitcode", G_KILL},
    {"exit code", G_KILL}, {"return code", G_KILL}, {"exit status", G_KILL}, {"exited with", G_KILL},
    {"EL0004", G_NPUCODE}, {"ERR00006", G_NPUCODE}, {"207001", G_NPUCODE},
    {"Traceback (most recent", G_TRACE},
    {"File \"", G_FRAME}, {", in ", G_FRAME}, {" -> ", G_FRAME},
    {":prefill", G_SERVE}, {":decode", G_SERVE}, {"prefill{", G_SERVE}, {"decode{", G_SERVE},
    {"it/s]", G_TQDM}, {"s/it]", G_TQDM}, {"step", G_STEP}, {"Step", G_STEP}, {"iter ", G_STEP},
    {"iteration", G_STEP}, {"Iteration", G_STEP}, {"{'loss'", G_LOGDICT}, {"{\"loss\"", G_LOGDICT},
    {"aving", G_SAVE}, {"saved", G_SAVE}, {"is ready now", G_SAVE},
    {"Evaluat", G_EVAL}, {"evaluat", G_EVAL}, {"eval_loss", G_EVAL}, {"Running Eval", G_EVAL},
    {"Loading", G_LOAD}, {"loading", G_LOAD}, {"weights took", G_LOAD},
    {"esuming", G_RESUME}, {"resume_from_checkpoint", G_RESUME}, {"Continuing training", G_RESUME},
    {"version", G_VERSION}, {"Version", G_VERSION}, {"LLM engine (v", G_VERSION}, {"torch==", G_VERSION}, {"transformers==", G_VERSION}, {"deepspeed==", G_VERSION}, {"vllm==", G_VERSION},
    {"peft==", G_VERSION}, {"trl==", G_VERSION}, {"accelerate==", G_VERSION}, {"sglang==", G_VERSION}, {"python3.", G_PYVER},
    {"cache flushes", G_DSFLUSH}, {"Max_MA", G_DSMEM}, {"CPU Virtual Memory", G_CPUMEM},
    {"Memory profiling", G_VLLMINFO}, {"GPU blocks", G_VLLMINFO}, {"KV cache size", G_VLLMINFO},
    {"Available KV", G_VLLMINFO}, {"preempted", G_VLLMINFO}, {"Maximum concurrency", G_VLLMINFO},
    {"[rank", G_RANK}, {"[Rank ", G_RANK}, {"rank=", G_RANK},
    {"[repeated ", G_REPEATED},
    {"rank    ", G_RANKSUM},
    {"vllm", S_VLLM}, {"vLLM", S_VLLM}, {"VLLM", S_VLLM}, {"Vllm", S_VLLM}, {"EngineCore", S_VLLM},
    {"RayWorkerWrapper", S_VLLM}, {"MQLLMEngine", S_VLLM}, {"LLMEngine", S_VLLM},
    {"sglang", S_SGLANG}, {"SGLang", S_SGLANG},
    {"text_generation", S_TGI},
    {"deepspeed", S_DS}, {"DeepSpeed", S_DS},
    {"stage3", S_ZERO3}, {"zero3", S_ZERO3}, {"ZeRO-3", S_ZERO3}, {"zero_stage3", S_ZERO3},
    {"fsdp", S_FSDP}, {"FSDP", S_FSDP}, {"fully_shard", S_FSDP},
    {"peft", S_LORA}, {"lora", S_LORA}, {"LoRA", S_LORA},
    {"grpo", S_RL}, {"GRPO", S_RL}, {"ppo_trainer", S_RL}, {"PPOT", S_RL}, {"ppo_", S_RL}, {"rollout", S_RL},
    {"dpo_", S_DPO}, {"_dpo", S_DPO}, {"DPOT", S_DPO}, {"DPO ", S_DPO}, {" DPO", S_DPO},
    {"expandable_segments:True", S_EXPSEG},
    {"eager_attention", S_EAGER}, {"attn_implementation=\"eager\"", S_EAGER}, {"flash_attn: disabled", S_EAGER},
    {"torch/utils/checkpoint", S_GC}, {"gradient_checkpointing", S_GC},
    {"WSL2", S_WSL}, {"-WSL", S_WSL}, {"microsoft-standard", S_WSL},
    {":\\Users", S_WIN}, {"\\site-packages", S_WIN},
    {"tegra", S_JETSON}, {"Jetson", S_JETSON}, {"jetson", S_JETSON},
};
#define N_ANCHORS (sizeof(anchors) / sizeof(anchors[0]))
_Static_assert(N_ANCHORS <= ML_OOM_MAX_ANCHORS, "anchor indexes (+ 1) are bytes");

void ml_incident_init(struct ml_incident *inc)
{
    memset(inc, 0, sizeof(*inc));
}

void ml_oom_scanner_init(struct ml_oom_scanner *s, struct ml_incident *inc)
{
    memset(s, 0, sizeof(*s));
    s->inc = inc;
    s->after_ev = -1;
    s->step = -1;
    ml_oom_match_init(ml_oom_matcher(s), anchors, N_ANCHORS);
}

bool ml_oom_scanner_simd(struct ml_oom_scanner *s, bool on)
{
    struct ml_oom_match *mt = ml_oom_matcher(s);
    mt->wide = on && ml_oom_match_simd();
    return mt->wide;
}

/* ---- small parsing helpers --------------------------------------------------------------- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

static const char *find(const char *hay, const char *needle)
{
    return strstr(hay, needle);
}

static const char *skip_blank(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static void ref_set(struct ml_oom_ref *r, uint32_t file, uint64_t line, int64_t step, const char *text)
{
    r->file = file;
    r->line = line;
    r->step = step;
    ml_oom_excerpt(r->text, sizeof(r->text), text, strlen(text));
}

/* Like ref_set, but keeps raw bytes (cheap, for lines that are overwritten at every step);
 * ref_clean turns them into an excerpt when an event takes a copy. */
static void ref_raw(struct ml_oom_ref *r, uint32_t file, uint64_t line, int64_t step, const char *text)
{
    r->file = file;
    r->line = line;
    r->step = step;
    size_t n = strlen(text);
    if (n > sizeof(r->text) - 1)
        n = sizeof(r->text) - 1;
    memcpy(r->text, text, n);
    r->text[n] = '\0';
}

static void ref_clean(struct ml_oom_ref *r)
{
    char tmp[sizeof(r->text)] = {0};
    size_t n = strlen(r->text);
    bool cut = n == sizeof(r->text) - 1;
    ml_oom_excerpt(tmp, sizeof(tmp) - (cut ? 4 : 0), r->text, n);
    if (cut && strlen(tmp) < sizeof(tmp) - 4 && !strstr(tmp, "..."))
        strcat(tmp, "...");
    memcpy(r->text, tmp, sizeof(tmp));
}

/* The size right after the first occurrence of key in msg. */
static bool size_after(const char *msg, const char *key, uint64_t *out)
{
    const char *p = find(msg, key);
    if (!p)
        return false;
    p = skip_blank(p + strlen(key));
    return ml_oom_parse_size(p, out) > 0;
}

/* Whether p[0..n) holds an ANSI escape sequence's start: ESC [ or its printed form ^[[. */
static bool has_ansi(const char *p, size_t n)
{
    const char *end = p + n;
    for (const char *c = memchr(p, '\x1b', n); c; c = memchr(c + 1, '\x1b', (size_t)(end - c - 1)))
        if (end - c >= 2 && c[1] == '[')
            return true;
    for (const char *c = memchr(p, '^', n); c; c = memchr(c + 1, '^', (size_t)(end - c - 1)))
        if (end - c >= 3 && c[1] == '[' && c[2] == '[')
            return true;
    return false;
}

/* Remove ANSI escape sequences (ESC [ ... final byte) and their printed form "^[[...m". */
static size_t strip_ansi(char *p, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t skip = 0;
        if (p[i] == '\x1b' && i + 1 < n && p[i + 1] == '[')
            skip = 2;
        else if (p[i] == '^' && i + 2 < n && p[i + 1] == '[' && p[i + 2] == '[')
            skip = 3;
        if (skip) {
            size_t j = i + skip;
            while (j < n && ((p[j] >= '0' && p[j] <= '9') || p[j] == ';' || p[j] == '?'))
                j++;
            if (j < n && ((p[j] >= 'A' && p[j] <= 'Z') || (p[j] >= 'a' && p[j] <= 'z'))) {
                i = j + 1;
                continue;
            }
        }
        p[o++] = p[i++];
    }
    p[o] = '\0';
    return o;
}

/* "[rank3]:" / "[Rank 3]" / "rank=3" near the start of a line: the rank, -1 if none. */
static int32_t parse_rank(const char *l, const char **body)
{
    *body = l;
    const char *p = find(l, "[rank");
    if (p && p - l < 120 && is_digit(p[5])) {
        uint64_t r = 0;
        size_t k = ml_oom_parse_u64(p + 5, &r);
        if (p[5 + k] == ']') {
            const char *b = p + 6 + k;
            if (*b == ':')
                b++;
            *body = b;
            return r < 100000 ? (int32_t)r : -1;
        }
    }
    p = find(l, "[Rank ");
    if (p && p - l < 120 && is_digit(p[6])) {
        uint64_t r = 0;
        ml_oom_parse_u64(p + 6, &r);
        return r < 100000 ? (int32_t)r : -1;
    }
    p = find(l, " rank=");
    if (p && p - l < 120 && is_digit(p[6])) {
        uint64_t r = 0;
        ml_oom_parse_u64(p + 6, &r);
        return r < 100000 ? (int32_t)r : -1;
    }
    return -1;
}

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

static bool same_numbers(const struct ml_oom_event *a, const struct ml_oom_event *b)
{
    if (a->kind != b->kind || a->device != b->device || a->has != b->has)
        return false;
    if (a->kind == ML_OOM_HOST_SIGKILL)
        return a->file == b->file;
    if (!a->has)
        return a->file == b->file && (b->line - a->line) < 50;
    return a->requested == b->requested && a->total == b->total && a->free == b->free &&
           a->allocated == b->allocated && a->reserved_unalloc == b->reserved_unalloc && a->reserved == b->reserved &&
           a->max_seq_len == b->max_seq_len && a->kv_tokens == b->kv_tokens;
}

/* Phase resolution from the cues of one window: the innermost cue of the highest level. */
static void resolve_phase(struct ml_oom_event *e, const struct ml_oom_cue *best_before, const struct ml_oom_cue *best_after)
{
    for (int lvl = 3; lvl >= 1; lvl--) {
        const struct ml_oom_cue *c = best_before[lvl].line ? &best_before[lvl] : best_after[lvl].line ? &best_after[lvl] : NULL;
        if (c) {
            e->phase = (enum ml_oom_phase)c->phase;
            e->phase_ref.file = e->file;
            e->phase_ref.line = c->line;
            e->phase_ref.step = -1;
            ml_oom_excerpt(e->phase_ref.text, sizeof(e->phase_ref.text), c->text, strnlen(c->text, sizeof(c->text)));
            (void)snprintf(e->phase_cue, sizeof(e->phase_cue), "%s", c->name);
            return;
        }
    }
}

enum cue_flag {
    CF_SAVE = 1, CF_EVAL = 2, CF_FORMAT = 4, CF_ZERO3 = 8, CF_EAGER = 16, CF_FP32 = 32, CF_CKPT = 64
};

static void apply_flags(struct ml_oom_event *e, uint8_t f)
{
    if (f & CF_SAVE)
        e->in_save_frames = true;
    if (f & CF_EVAL)
        e->in_eval_frames = true;
    if (f & CF_FORMAT)
        e->format_error = true;
    if (f & CF_ZERO3)
        e->zero3_frames = true;
    if (f & CF_EAGER)
        e->eager_frames = true;
    if (f & CF_FP32)
        e->fp32_frames = true;
    if (f & CF_CKPT)
        e->ckpt_frames = true;
}

/* Timing from the progress/save/eval/load/resume lines seen before the event (analysis 5). */
static void set_timing(const struct ml_oom_scanner *s, struct ml_oom_event *e)
{
    e->step = s->step;
    e->step_ref = s->step_ref;
    ref_clean(&e->step_ref);
    if (ml_oom_kind_phase(e->kind) == ML_OPH_SERVING_STARTUP) {
        e->timing = ML_TIM_STARTUP;
        return;
    }
    if (s->save_ref.line && s->save_ref.line >= s->step_ref.line && s->progress_since_save == 0) {
        e->timing = ML_TIM_AFTER_SAVE; /* AT_SAVE when the frames say so (finish) */
        e->timing_ref = s->save_ref;
        return;
    }
    if (s->eval_ref.line && s->eval_ref.line >= s->step_ref.line && s->progress_since_eval == 0) {
        e->timing = ML_TIM_AT_EVAL;
        e->timing_ref = s->eval_ref;
        return;
    }
    if (s->resume_ref.line && s->resume_ref.line >= s->step_ref.line) {
        e->timing = ML_TIM_RESUME;
        e->timing_ref = s->resume_ref;
        return;
    }
    if (!s->step_ref.line) {
        if (s->load_ref.line) {
            e->timing = ML_TIM_LOAD;
            e->timing_ref = s->load_ref;
        }
        return;
    }
    e->timing_ref = e->step_ref;
    e->timing = s->step >= 0 && s->step <= 1 ? ML_TIM_FIRST_STEP : ML_TIM_MID_RUN;
    if (s->step < 0)
        e->timing = ML_TIM_MID_RUN;
}

/* Store a finished event (merging it into an identical one). */
static void commit(struct ml_oom_scanner *s, struct ml_oom_event *e)
{
    struct ml_incident *inc = s->inc;
    inc->n_events_seen++;
    /* Frames before the event: the cues since the traceback started (or the last 60 lines). */
    struct ml_oom_cue best[4];
    memset(best, 0, sizeof(best));
    uint64_t start = 0;
    if (s->last_traceback > s->last_event_line && e->line - s->last_traceback <= 400 && s->last_traceback <= e->line)
        start = s->last_traceback - 1;
    else
        start = s->last_event_line > (e->line > 60 ? e->line - 60 : 0) ? s->last_event_line : (e->line > 60 ? e->line - 60 : 0);
    uint8_t flags = 0;
    for (uint32_t i = 0; i < s->ring_n; i++) {
        const struct ml_oom_cue *c = &s->ring[(s->ring_head + ML_OOM_CUE_RING - s->ring_n + i) % ML_OOM_CUE_RING];
        if (c->line <= start || c->line > e->line)
            continue;
        flags |= c->flags;
        if (c->level)
            best[c->level] = *c;
    }
    apply_flags(e, flags);
    struct ml_oom_cue none[4];
    memset(none, 0, sizeof(none));
    resolve_phase(e, best, none);
    if (e->phase == ML_OPH_UNKNOWN)
        e->phase = ml_oom_kind_phase(e->kind);
    set_timing(s, e);
    s->last_event_line = e->line;

    for (uint32_t i = 0; i < inc->n_events; i++) {
        struct ml_oom_event *o = &inc->ev[i];
        if (!same_numbers(o, e))
            continue;
        o->repeats += e->repeats;
        o->rank_mask |= e->rank_mask;
        if (o->rank < 0)
            o->rank = e->rank;
        if (o->gpu < 0)
            o->gpu = e->gpu;
        if (o->phase == ML_OPH_UNKNOWN && e->phase != ML_OPH_UNKNOWN) {
            o->phase = e->phase;
            o->phase_ref = e->phase_ref;
            memcpy(o->phase_cue, e->phase_cue, sizeof(o->phase_cue));
        }
        s->after_ev = (int32_t)i;
        s->after_until = s->lineno + ML_OOM_AFTER_LINES;
        memset(s->after_best, 0, sizeof(s->after_best));
        s->after_flags = 0;
        return;
    }
    if (inc->n_events >= ML_OOM_MAX_EVENTS) {
        s->after_ev = -1;
        return;
    }
    inc->ev[inc->n_events] = *e;
    s->after_ev = (int32_t)inc->n_events;
    s->after_until = s->lineno + ML_OOM_AFTER_LINES;
    memset(s->after_best, 0, sizeof(s->after_best));
    s->after_flags = 0;
    inc->n_events++;
}

/* Close the frames-after window of the current event: fill the phase if still unknown. */
static void close_after(struct ml_oom_scanner *s)
{
    if (s->after_ev < 0)
        return;
    struct ml_oom_event *e = &s->inc->ev[s->after_ev];
    apply_flags(e, s->after_flags);
    if (e->phase == ML_OPH_UNKNOWN || e->phase == ml_oom_kind_phase(e->kind)) {
        struct ml_oom_cue none[4];
        memset(none, 0, sizeof(none));
        enum ml_oom_phase before = e->phase;
        e->phase = ML_OPH_UNKNOWN;
        resolve_phase(e, none, s->after_best);
        if (e->phase == ML_OPH_UNKNOWN)
            e->phase = before;
    } else {
        /* The frames before gave a phase; a higher-level cue after it (an episode such as a
         * save or generate around another rank's identical traceback) does not override it. */
    }
    s->after_ev = -1;
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
        const char *w;
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

/* Fill the numbers of an allocator-family message by classifying every size in it by the
 * words around it (robust to wrapped lines, dropped sentences and the classic tuple). */
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
        const char *after = p + n;
        const char *a = skip_blank(after);
        /* Trim blanks before the number for the "before" tests. */
        const char *bp = p;
        while (bp > msg && bp[-1] == ' ')
            bp--;
        if (before_is(msg, bp, "allocate") || before_is(msg, bp, "allocate more than")) {
            if (!(e->has & ML_OOM_F_REQUESTED)) {
                e->requested = v;
                e->has |= ML_OOM_F_REQUESTED;
            }
        } else if (before_is(msg, bp, "capacity of") || before_is(msg, bp, "capacty of") ||
                   !strncmp(a, "total capacity", 14) || !strncmp(a, "total capacty", 13) ||
                   before_is(msg, bp, "max allowed:")) {
            e->total = v;
            e->has |= ML_OOM_F_TOTAL;
            if (before_is(msg, bp, "max allowed:")) {
                e->allowed = v;
                e->has |= ML_OOM_F_ALLOWED;
            }
        } else if (before_is(msg, bp, "of which") || !strncmp(a, "free", 4) || !strncmp(a, "is free", 7)) {
            e->free = v;
            e->has |= ML_OOM_F_FREE;
        } else if (before_is(msg, bp, "this process has")) {
            e->this_process = v;
            e->has |= ML_OOM_F_THIS_PROCESS;
        } else if (!strncmp(a, "memory in use", 13)) {
            /* "Process <pid> has X memory in use." */
            const char *h = bp;
            if (before_is(msg, h, "has")) {
                const char *q = h - 3;
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
        } else if (!strncmp(a, "allowed", 7)) {
            e->allowed = v;
            e->has |= ML_OOM_F_ALLOWED;
        } else if (!strncmp(a, "allocated in private pool", 25)) {
            e->private_pool = v;
            e->has |= ML_OOM_F_PRIVATE_POOL;
        } else if (before_is(msg, bp, "allocated memory") || !strncmp(a, "is allocated by PyTorch", 23) ||
                   !strncmp(a, "already allocated", 17) || before_is(msg, bp, "MPS allocated:") ||
                   before_is(msg, bp, "currently allocated:")) {
            e->allocated = v;
            e->has |= ML_OOM_F_ALLOCATED;
        } else if (!strncmp(a, "is reserved by PyTorch but unallocated", 38) ||
                   !strncmp(a, "reserved by PyTorch but unallocated", 35)) {
            e->reserved_unalloc = v;
            e->has |= ML_OOM_F_RESERVED_UNALLOC;
        } else if (!strncmp(a, "reserved in total", 17) || !strncmp(a, "cached", 6)) {
            e->reserved = v;
            e->has |= ML_OOM_F_RESERVED;
        } else if (!strncmp(a, "current active", 14)) {
            e->active = v;
            e->has |= ML_OOM_F_ACTIVE;
        } else if (before_is(msg, bp, "other allocations:")) {
            e->other = v;
            e->has |= ML_OOM_F_OTHER;
        }
        p = after - 1;
    }
    /* Device ordinal: "(GPU 3;" "(NPU 0;" "GPU 5 has" "NPU 1;". */
    static const char *const ords[] = {"(GPU ", "(NPU ", "GPU ", "NPU ", "(XPU ", "XPU "};
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
    /* The hint's variable. */
    if (find(msg, "PYTORCH_CUDA_ALLOC_CONF=expandable"))
        e->hint = ML_HINT_CUDA_CONF;
    else if (find(msg, "PYTORCH_HIP_ALLOC_CONF"))
        e->hint = ML_HINT_HIP_CONF;
    else if (find(msg, "PYTORCH_NPU_ALLOC_CONF"))
        e->hint = ML_HINT_NPU_CONF;
    else if (find(msg, "PYTORCH_MUSA_ALLOC_CONF"))
        e->hint = ML_HINT_MUSA_CONF;
    else if (find(msg, "PYTORCH_ALLOC_CONF"))
        e->hint = ML_HINT_ALLOC_CONF;
    else if (find(msg, "max_split_size_mb"))
        e->hint = ML_HINT_MAX_SPLIT;
    else if (find(msg, "HIGH_WATERMARK_RATIO"))
        e->hint = ML_HINT_MPS_WATERMARK;
    else if (find(msg, "empty_cache"))
        e->hint = ML_HINT_EMPTY_CACHE;
}

static bool message_complete(const struct ml_oom_event *e, const char *msg)
{
    if (!ml_oom_kind_wraps(e->kind))
        return true;
    return find(msg, "ALLOC_CONF") || find(msg, "max_split_size_mb") || find(msg, "See documentation") ||
           find(msg, "unallocated.") || find(msg, "reserved in total by PyTorch)") || find(msg, "cached)") ||
           find(msg, " pool.") || find(msg, "empty_cache") || find(msg, "TASK_QUEUE_ENABLE") ||
           find(msg, "more than 1EB");
}

static bool starts(const char *p, const char *w)
{
    return !strncmp(p, w, strlen(w));
}

/* Could body continue the pending message (a wrapped or sentence-split OOM message)? */
static bool continues(const struct ml_oom_scanner *s, const char *body, size_t prev_len, char prev_last)
{
    const char *b = skip_blank(body);
    static const char *const heads[] = {
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
    (void)s;
    /* A terminal hard-wrapped the line: a long line cut mid-sentence. */
    return prev_len >= 120 && prev_last != '.' && prev_last != ')' && prev_last != ':' && *b != '[' &&
           !starts(b, "Traceback") && !starts(b, "File ");
}

/* Start (or directly commit) an event found on this line. */
static void begin_message(struct ml_oom_scanner *s, struct ml_oom_event *e, const char *from)
{
    size_t n = strlen(from);
    if (n > ML_OOM_MSG_MAX)
        n = ML_OOM_MSG_MAX;
    memcpy(s->msg, from, n);
    s->msg[n] = '\0';
    s->msg_len = n;
    if (ml_oom_kind_wraps(e->kind) || e->kind == ML_OOM_IMPOSSIBLE)
        parse_numbers(e, s->msg);
    if (message_complete(e, s->msg)) {
        commit(s, e);
        return;
    }
    s->pev = *e;
    s->pending = true;
    s->pending_lines = 0;
}

static void close_pending(struct ml_oom_scanner *s)
{
    if (!s->pending)
        return;
    s->pending = false;
    s->pev.wrapped = s->pending_lines > 0;
    ml_oom_excerpt(s->pev.text, sizeof(s->pev.text), s->msg, s->msg_len);
    commit(s, &s->pev);
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
    static const char *const keys[] = {"Error: ", "Exception: ", "error: "};
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

/* ---- line handlers ---------------------------------------------------------------------- */

static void add_version(struct ml_incident *inc, const char *name, const char *val, size_t vlen, uint32_t file,
                        uint64_t line)
{
    if (vlen == 0 || vlen >= sizeof(inc->versions[0].value))
        return;
    for (uint32_t i = 0; i < inc->n_versions; i++)
        if (!strcmp(inc->versions[i].name, name))
            return;
    if (inc->n_versions >= ML_OOM_MAX_VERSIONS)
        return;
    struct ml_oom_version *v = &inc->versions[inc->n_versions++];
    (void)snprintf(v->name, sizeof(v->name), "%s", name);
    memcpy(v->value, val, vlen);
    v->value[vlen] = '\0';
    v->file = file;
    v->line = line;
}

static size_t version_token(const char *p)
{
    size_t n = 0;
    if (!is_digit(p[0]))
        return 0;
    while (is_word(p[n]) || p[n] == '.' || p[n] == '+' || p[n] == '-')
        n++;
    while (n && (p[n - 1] == '.' || p[n - 1] == '-'))
        n--;
    return n;
}

/* The value of "key" in a "k=v, k=v" list: its bytes up to the next ',' or ')' (quotes
 * dropped) into out; false when the key is absent. */
static bool config_value(const char *l, const char *key, char *out, size_t cap)
{
    const char *p = find(l, key);
    if (!p || cap == 0)
        return false;
    p += strlen(key);
    if (*p == '\'' || *p == '"')
        p++;
    size_t n = 0;
    while (p[n] && p[n] != ',' && p[n] != ')' && p[n] != '\'' && p[n] != '"' && n + 1 < cap)
        n++;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

static void read_engine(struct ml_oom_scanner *s, const char *l)
{
    struct ml_oom_engine *g = &s->inc->engine;
    char v[32];
    uint64_t u;
    g->seen = true;
    g->file = s->file;
    g->line = s->lineno;
    (void)config_value(l, "model=", g->model, sizeof(g->model));
    if (config_value(l, "max_seq_len=", v, sizeof(v)) && ml_oom_parse_u64(v, &u) && u < ((uint64_t)1 << 32))
        g->max_seq_len = u;
    if (config_value(l, "tensor_parallel_size=", v, sizeof(v)) && ml_oom_parse_u64(v, &u) && u && u <= 1024)
        g->tp = (uint32_t)u;
    if (config_value(l, "pipeline_parallel_size=", v, sizeof(v)) && ml_oom_parse_u64(v, &u) && u && u <= 1024)
        g->pp = (uint32_t)u;
    (void)config_value(l, " dtype=", g->dtype, sizeof(g->dtype));
    (void)config_value(l, "quantization=", g->quantization, sizeof(g->quantization));
    (void)config_value(l, "kv_cache_dtype=", g->kv_cache_dtype, sizeof(g->kv_cache_dtype));
    g->enforce_eager = find(l, "enforce_eager=True") != NULL;
}

static void handle_version(struct ml_oom_scanner *s, const char *l, uint64_t m)
{
    if (!(m & GB(G_VERSION)))
        goto python;
    static const struct {
        const char *key; /* as written before "version" or "==" (case as written) */
        const char *name;
    } libs[] = {
        {"torch", "torch"}, {"PyTorch", "torch"}, {"pytorch", "torch"}, {"transformers", "transformers"},
        {"Transformers", "transformers"}, {"deepspeed", "deepspeed"}, {"DeepSpeed", "deepspeed"},
        {"vllm", "vllm"}, {"vLLM", "vllm"}, {"sglang", "sglang"}, {"peft", "peft"}, {"trl", "trl"},
        {"accelerate", "accelerate"}, {"NCCL", "nccl"}, {"nccl", "nccl"}, {"flash-attn", "flash_attn"},
        {"flash_attn", "flash_attn"}, {"ROCm", "rocm"}, {"CUDA", "cuda"}, {"bitsandbytes", "bitsandbytes"},
        {"llamafactory", "llamafactory"}, {"LLaMA-Factory", "llamafactory"}, {"torch_npu", "torch_npu"},
    };
    /* vLLM's engine line: "Initializing an LLM engine (v0.6.4.post1) with config: ..." (V0) and
     * "Initializing a V1 LLM engine (v0.10.1) with config: ..." (V1). */
    const char *eng = find(l, "LLM engine (v");
    if (eng) {
        size_t n = version_token(eng + 13);
        if (n)
            add_version(s->inc, "vllm", eng + 13, n, s->file, s->lineno);
        if (!s->inc->engine.seen && find(eng, "with config:"))
            read_engine(s, eng);
    }
    for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
        const char *p = find(l, libs[i].key);
        while (p) {
            size_t k = strlen(libs[i].key);
            bool word_start = p == l || !is_word(p[-1]);
            const char *q = p + k;
            if (word_start && !is_word(*q)) {
                /* "name==X", "name X.Y" after "version", "name version: X", "name info: version=X". */
                const char *v = NULL;
                if (q[0] == '=' && q[1] == '=')
                    v = q + 2;
                else {
                    const char *w = find(q, "version");
                    if (w && w - q <= 12) {
                        w += 7;
                        while (*w == ' ' || *w == ':' || *w == '=' || *w == 'v')
                            w++;
                        v = w;
                    }
                }
                if (v) {
                    size_t n = version_token(v);
                    if (n)
                        add_version(s->inc, libs[i].name, v, n, s->file, s->lineno);
                }
            }
            p = find(p + k, libs[i].key);
        }
    }
python:
    if (!(m & GB(G_PYVER)))
        return;
    for (uint32_t i = 0; i < s->inc->n_versions; i++)
        if (!strcmp(s->inc->versions[i].name, "python"))
            return;
    const char *py = find(l, "python3.");
    if (py && is_digit(py[8])) {
        size_t n = 7;
        while (is_digit(py[n + 1]) || py[n + 1] == '.')
            n++;
        while (py[n] == '.')
            n--;
        add_version(s->inc, "python", py + 6, n - 5, s->file, s->lineno);
    }
}

/* Step counters and progress bars (m: the line's anchor groups). Returns true when the line
 * was a progress line. */
static bool handle_progress(struct ml_oom_scanner *s, const char *l, uint64_t m)
{
    int64_t step = -1;
    /* A save line names its step ("checkpoint-100", "global_step100") but is not progress. */
    if (m & GB(G_SAVE))
        return false;
    const char *bar = (m & GB(G_TQDM)) ? find(l, "%|") : NULL;
    if (bar) {
        /* tqdm: "desc:  5%|###   | 101/2000 [...]"; only training bars count. */
        const char *d = bar;
        while (d > l && d[-1] != '\r' && d[-1] != '\n')
            d--;
        char desc[64];
        size_t dn = (size_t)(bar - d) < sizeof(desc) - 1 ? (size_t)(bar - d) : sizeof(desc) - 1;
        memcpy(desc, d, dn);
        desc[dn] = '\0';
        const char *end = find(bar + 2, "| ");
        uint64_t cur = 0;
        if (end && ml_oom_parse_u64(end + 2, &cur) && end[2] != '?') {
            /* HF Trainer's bar has no description (only the percentage): skip the word tests. */
            bool words = false;
            for (size_t k = 0; k < dn && !words; k++)
                words = (desc[k] >= 'a' && desc[k] <= 'z') || (desc[k] >= 'A' && desc[k] <= 'Z');
            bool eval = words && (find(desc, "val") || find(desc, "redict"));
            bool other = words && !eval &&
                         (find(desc, "oading") || find(desc, "okeniz") || find(desc, "onverting") || find(desc, "Map") ||
                          find(desc, "ilter") || find(desc, "ownload") || find(desc, "ataset") ||
                          find(desc, "shards") || find(desc, "Capturing") || find(desc, "Processed"));
            if (eval) {
                ref_set(&s->eval_ref, s->file, s->lineno, -1, l);
                s->progress_since_eval = 0;
                return true;
            }
            if (other) {
                if (find(desc, "oading") || find(desc, "shards")) {
                    /* A finished load bar ("3/3") ends the load. */
                    uint64_t tot = 0;
                    const char *sl = end + 2;
                    while (is_digit(*sl))
                        sl++;
                    if (*sl == '/' && ml_oom_parse_u64(sl + 1, &tot) && tot == cur)
                        memset(&s->load_ref, 0, sizeof(s->load_ref));
                    else
                        ref_set(&s->load_ref, s->file, s->lineno, -1, l);
                }
                return false;
            }
            step = (int64_t)cur;
        }
    }
    if (step < 0 && (m & GB(G_STEP))) {
        static const char *const keys[] = {"step", "Step", "iteration", "Iteration", "iter "};
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && step < 0; i++) {
            size_t k = strlen(keys[i]);
            for (const char *p = find(l, keys[i]); p && step < 0; p = find(p + 1, keys[i])) {
                /* A word of its own ("max_steps", "_optimizer_step" and "steps" are not counters);
                 * "global_step100" and "global_step=7" are. */
                bool global = i == 0 && p - l >= 7 && !strncmp(p - 7, "global_", 7);
                if (!global && p > l && is_word(p[-1]))
                    continue;
                if (keys[i][k - 1] != ' ' && is_word(p[k]) && !(global && is_digit(p[k])))
                    continue;
                const char *q = p + k;
                int skip = 0;
                while ((*q == ' ' || *q == ':' || *q == '=' || *q == '\'' || *q == '"' || *q == '[') && skip < 4) {
                    q++;
                    skip++;
                }
                uint64_t v = 0;
                if (ml_oom_parse_u64(q, &v) && v < ((uint64_t)1 << 40))
                    step = (int64_t)v;
            }
        }
    }
    bool logdict = (m & GB(G_LOGDICT)) != 0;
    if (step < 0 && !logdict)
        return false;
    if (step >= 0)
        s->step = step;
    ref_raw(&s->step_ref, s->file, s->lineno, step >= 0 ? step : s->step, l);
    s->progress_since_save++;
    s->progress_since_eval++;
    return true;
}

static void handle_save(struct ml_oom_scanner *s, const char *l, bool frame)
{
    if (frame)
        return;
    bool saving = find(l, "Saving") || find(l, "saving") || find(l, "saved") || find(l, "is ready now");
    bool what = find(l, "heckpoint") || find(l, "model") || find(l, "adapter") || find(l, "weights") ||
                find(l, "global_step");
    if (!saving || !what || find(l, "out of memory"))
        return;
    int64_t st = -1;
    const char *c = find(l, "checkpoint-");
    uint64_t v = 0;
    if (c && ml_oom_parse_u64(c + 11, &v))
        st = (int64_t)v;
    c = find(l, "global_step");
    if (st < 0 && c && ml_oom_parse_u64(c + 11, &v))
        st = (int64_t)v;
    /* A burst of save lines (model, optimizer shards, "is ready") is one save: keep its first line. */
    if (!(s->save_ref.line && s->progress_since_save == 0 && s->lineno - s->save_ref.line < 50 &&
          s->save_ref.file == s->file))
        ref_set(&s->save_ref, s->file, s->lineno, st, l);
    if (st >= 0) {
        s->step = st;
        if (s->save_ref.step < 0)
            s->save_ref.step = st;
    }
    s->progress_since_save = 0;
}

static void handle_eval(struct ml_oom_scanner *s, const char *l)
{
    if (find(l, "eval_loss") || find(l, "eval_runtime")) {
        /* Results: the evaluation ended. */
        s->progress_since_eval = 1;
        return;
    }
    if (find(l, "Running Eval") || find(l, "Running eval") || find(l, "Evaluating") || find(l, "evaluating") ||
        find(l, "Start evaluat") || find(l, "***** Eval")) {
        ref_set(&s->eval_ref, s->file, s->lineno, -1, l);
        s->progress_since_eval = 0;
    }
}

static void handle_load(struct ml_oom_scanner *s, const char *l)
{
    if (find(l, "Loading checkpoint shards") || find(l, "Loading model") || find(l, "oading weights") ||
        find(l, "weights took") || find(l, "Model loading took") || find(l, "Loading safetensors") ||
        find(l, "loading checkpoint") || find(l, "Loading checkpoint"))
        ref_set(&s->load_ref, s->file, s->lineno, -1, l);
    uint64_t v;
    const char *p = find(l, "weights took");
    if (p && ml_oom_parse_size(skip_blank(p + 12), &v))
        s->inc->weights_bytes = v;
    p = find(l, "Model loading took");
    if (p && ml_oom_parse_size(skip_blank(p + 18), &v))
        s->inc->weights_bytes = v;
}

static void handle_vllm_info(struct ml_oom_scanner *s, const char *l)
{
    struct ml_incident *inc = s->inc;
    uint64_t v;
    if (find(l, "Memory profiling")) {
        inc->has_profile = true;
        ref_set(&inc->profile_ref, s->file, s->lineno, -1, l);
        if (size_after(l, "total_gpu_memory=", &v))
            inc->prof_total = v;
        if (size_after(l, "peak_torch_memory=", &v))
            inc->prof_peak_torch = v;
        if (size_after(l, "non_torch_memory=", &v))
            inc->prof_non_torch = v;
        if (size_after(l, "kv_cache_size=", &v))
            inc->prof_kv_cache = v;
        const char *u = find(l, "gpu_memory_utilization=");
        if (u)
            ml_oom_parse_permille(u + 23, &inc->prof_util_permille);
    }
    const char *b = find(l, "# GPU blocks:");
    if (b && ml_oom_parse_u64(skip_blank(b + 13), &v))
        inc->gpu_blocks = v + 1;
    if (find(l, "preempted") && find(l, "KV cache"))
        inc->preemptions++;
    b = find(l, "Available KV cache memory:");
    if (b && ml_oom_parse_size(skip_blank(b + 26), &v))
        inc->prof_kv_cache = v;
    /* V1 (vllm/v1/core/kv_cache_utils.py): "GPU KV cache size: 441,104 tokens". */
    b = find(l, "GPU KV cache size:");
    if (b && ml_oom_parse_u64(skip_blank(b + 18), &v) && v)
        inc->prof_kv_tokens = v;
}

static void handle_ds(struct ml_oom_scanner *s, const char *l, uint64_t m)
{
    struct ml_incident *inc = s->inc;
    uint64_t v;
    if (m & GB(G_DSFLUSH)) {
        const char *p = find(l, "pytorch allocator cache flushes");
        if (p) {
            const char *d = p;
            while (d > l && d[-1] == ' ')
                d--;
            while (d > l && is_digit(d[-1]))
                d--;
            if (ml_oom_parse_u64(d, &v)) {
                inc->flush_warnings++;
                if (v > inc->flush_max)
                    inc->flush_max = v;
                ref_set(&inc->flush_ref, s->file, s->lineno, -1, l);
            }
        }
    }
    if (m & GB(G_DSMEM)) {
        /* "MA 11.76 GB Max_MA 11.76 GB CA 11.77 GB Max_CA 12 GB" (see_memory_usage, A9). */
        const char *p = find(l, "MA ");
        while (p && p > l && p[-1] != ' ' && p[-1] != '\t' && p[-1] != ']' && p[-1] != '|')
            p = find(p + 1, "MA ");
        if (p && ml_oom_parse_size(skip_blank(p + 3), &v)) {
            if (inc->mem_samples == 0) {
                inc->ma_first = v;
                inc->ma_rising = true;
            } else if (v < inc->ma_last) {
                inc->ma_rising = false;
            }
            inc->ma_last = v;
            inc->mem_samples++;
            ref_set(&inc->mem_ref, s->file, s->lineno, -1, l);
        }
    }
    if (m & GB(G_CPUMEM)) {
        const char *p = find(l, "percent =");
        uint32_t pm;
        if (p && ml_oom_parse_permille(skip_blank(p + 9), &pm)) {
            inc->cpu_percent_permille = pm / 100 ? pm / 100 : 1; /* percent x 10 */
            ref_set(&inc->cpu_ref, s->file, s->lineno, -1, l);
        }
    }
}

/* Exit codes: "exitcode  : -9", "return code = -9", "exit code 137", "exit status 137",
 * "exited with code 137". Returns true and sets *code when a code was read. */
static bool exit_code(const char *l, int32_t *code)
{
    static const char *const keys[] = {"exitcode", "exit code", "return code", "exit status", "exited with code",
                                       "exited with exit code"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *p = find(l, keys[i]);
        if (!p)
            continue;
        p += strlen(keys[i]);
        while (*p == ' ' || *p == ':' || *p == '=')
            p++;
        bool neg = *p == '-';
        if (neg)
            p++;
        uint64_t v;
        if (ml_oom_parse_u64(p, &v) && v < 100000) {
            *code = neg ? -(int32_t)v : (int32_t)v;
            return true;
        }
    }
    return false;
}

static void host_event(struct ml_oom_scanner *s, enum ml_oom_kind k, int32_t rank, const char *l, int32_t code)
{
    struct ml_oom_event e;
    if (rank < 0 && s->sum_rank_line && s->lineno - s->sum_rank_line < 6)
        rank = s->sum_rank;
    ev_init(s, &e, k, ML_DEV_HOST, rank, l);
    if (code) {
        e.exit_code = code;
        e.has |= ML_OOM_F_EXIT;
    }
    commit(s, &e);
}

static void handle_kill(struct ml_oom_scanner *s, const char *l, int32_t rank)
{
    struct ml_incident *inc = s->inc;
    int32_t code = 0;
    if (find(l, "invoked oom-killer") || find(l, "oom-kill:") || find(l, "oom_reaper: reaped") ||
        find(l, "Killed process")) {
        inc->kernel_oom_lines++;
        struct ml_oom_event e;
        ev_init(s, &e, ML_OOM_HOST_KILLER, ML_DEV_HOST, rank, l);
        uint64_t kb;
        const char *p = find(l, "anon-rss:");
        if (p && ml_oom_parse_u64(p + 9, &kb) && kb < ((uint64_t)1 << 50)) {
            e.this_process = kb * 1024;
            e.has |= ML_OOM_F_THIS_PROCESS;
        }
        /* One kill prints several kernel lines: merge by file. */
        for (uint32_t i = 0; i < inc->n_events; i++) {
            struct ml_oom_event *o = &inc->ev[i];
            if (o->kind == ML_OOM_HOST_KILLER && o->file == s->file) {
                if ((e.has & ML_OOM_F_THIS_PROCESS) && !(o->has & ML_OOM_F_THIS_PROCESS)) {
                    o->this_process = e.this_process;
                    o->has |= ML_OOM_F_THIS_PROCESS;
                }
                return;
            }
        }
        commit(s, &e);
        return;
    }
    if (find(l, "OOMKilled")) {
        host_event(s, ML_OOM_HOST_SIGKILL, rank, l, 137);
        return;
    }
    if (exit_code(l, &code)) {
        inc->exit_code = code;
        if (code == -9 || code == 137)
            host_event(s, ML_OOM_HOST_SIGKILL, rank, l, code);
        return;
    }
    if (find(l, "Signal 9") || find(l, "SIGKILL")) {
        host_event(s, ML_OOM_HOST_SIGKILL, rank, l, -9);
        return;
    }
    /* Shell job messages: "Killed", "line 3: 1234 Killed   python train.py". */
    const char *k = find(l, "Killed");
    if (k) {
        const char *b = skip_blank(l);
        const char *before = k;
        while (before > l && before[-1] == ' ')
            before--;
        bool alone = b == k;
        bool after_pid = before > l && is_digit(before[-1]);
        if ((alone || after_pid) && !find(l, "process"))
            host_event(s, ML_OOM_HOST_SIGKILL, rank, l, -9);
    }
}

/* Phase cues in frames and code lines (analysis 4). */
struct cue_def {
    const char *pat;
    uint8_t phase;
    uint8_t level;
    uint8_t flags;
};

/* Function names, matched exactly against "in FUNC" / "FUNC" of a frame. */
static const struct cue_def fn_cues[] = {
    /* episodes */
    {"from_pretrained", ML_OPH_LOAD, 3, 0}, {"_load_pretrained_model", ML_OPH_LOAD, 3, 0},
    {"_load_state_dict_into_meta_model", ML_OPH_LOAD, 3, 0}, {"load_checkpoint_in_model", ML_OPH_LOAD, 3, 0},
    {"load_model", ML_OPH_LOAD, 3, 0}, {"load_weights", ML_OPH_LOAD, 3, 0}, {"dispatch_model", ML_OPH_LOAD, 3, 0},
    {"load_sharded_checkpoint", ML_OPH_LOAD, 3, 0}, {"_load_from_checkpoint", ML_OPH_LOAD, 3, 0},
    {"_load_optimizer_and_scheduler", ML_OPH_LOAD, 3, 0},
    {"_save_checkpoint", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE}, {"save_model", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE},
    {"save_checkpoint", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE},
    {"_zero3_consolidated_16bit_state_dict", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE | CF_ZERO3},
    {"save_pretrained", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE}, {"_save_optimizer_and_scheduler", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE},
    {"get_state_dict", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE}, {"save_16bit_model", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE},
    {"_save_zero_checkpoint", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE}, {"_save", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE},
    {"evaluate", ML_OPH_EVAL, 3, CF_EVAL}, {"evaluation_loop", ML_OPH_EVAL, 3, CF_EVAL},
    {"prediction_loop", ML_OPH_EVAL, 3, CF_EVAL}, {"prediction_step", ML_OPH_EVAL, 3, CF_EVAL},
    {"predict", ML_OPH_EVAL, 3, CF_EVAL}, {"nested_concat", ML_OPH_EVAL, 3, CF_EVAL},
    {"generate", ML_OPH_GENERATE, 3, 0}, {"_sample", ML_OPH_GENERATE, 3, 0}, {"sample", ML_OPH_GENERATE, 3, 0},
    {"greedy_search", ML_OPH_GENERATE, 3, 0}, {"_greedy_search", ML_OPH_GENERATE, 3, 0},
    {"contrastive_search", ML_OPH_GENERATE, 3, 0}, {"_contrastive_search", ML_OPH_GENERATE, 3, 0},
    {"beam_search", ML_OPH_GENERATE, 3, 0}, {"_beam_search", ML_OPH_GENERATE, 3, 0},
    {"generate_with_callback", ML_OPH_GENERATE, 3, 0}, {"generate_stream", ML_OPH_GENERATE, 3, 0},
    {"_assisted_decoding", ML_OPH_GENERATE, 3, 0},
    {"profile_run", ML_OPH_SERVING_STARTUP, 3, 0}, {"determine_num_available_blocks", ML_OPH_SERVING_STARTUP, 3, 0},
    {"determine_available_memory", ML_OPH_SERVING_STARTUP, 3, 0}, {"_initialize_kv_caches", ML_OPH_SERVING_STARTUP, 3, 0},
    {"initialize_cache", ML_OPH_SERVING_STARTUP, 3, 0}, {"init_device", ML_OPH_SERVING_STARTUP, 3, 0},
    {"raise_if_cache_size_invalid", ML_OPH_SERVING_STARTUP, 3, 0},
    {"check_enough_kv_cache_memory", ML_OPH_SERVING_STARTUP, 3, 0},
    {"_check_enough_kv_cache_memory", ML_OPH_SERVING_STARTUP, 3, 0}, {"capture_model", ML_OPH_SERVING_STARTUP, 3, 0},
    {"_dummy_sampler_run", ML_OPH_SERVING_STARTUP, 3, 0}, {"init_memory_pool", ML_OPH_SERVING_STARTUP, 3, 0},
    {"profile_max_num_token", ML_OPH_SERVING_STARTUP, 3, 0}, {"initialize_from_config", ML_OPH_SERVING_STARTUP, 3, 0},
    {"run_engine_loop", ML_OPH_SERVING_RUNTIME, 3, 0}, {"engine_step", ML_OPH_SERVING_RUNTIME, 3, 0},
    {"forward_batch_generation", ML_OPH_SERVING_RUNTIME, 3, 0}, {"event_loop_normal", ML_OPH_SERVING_RUNTIME, 3, 0},
    {"event_loop_overlap", ML_OPH_SERVING_RUNTIME, 3, 0}, {"Prefill", ML_OPH_SERVING_RUNTIME, 3, 0},
    {"Decode", ML_OPH_SERVING_RUNTIME, 3, 0},
    /* operations */
    {"backward", ML_OPH_BACKWARD, 2, 0}, {"_engine_run_backward", ML_OPH_BACKWARD, 2, 0},
    {"run_backward", ML_OPH_BACKWARD, 2, 0},
    {"_optimizer_step", ML_OPH_OPTIMIZER_STEP, 2, 0}, {"_multi_tensor_adamw", ML_OPH_OPTIMIZER_STEP, 2, 0},
    {"_multi_tensor_adam", ML_OPH_OPTIMIZER_STEP, 2, 0}, {"_single_tensor_adamw", ML_OPH_OPTIMIZER_STEP, 2, 0},
    {"_single_tensor_adam", ML_OPH_OPTIMIZER_STEP, 2, 0}, {"_fused_adamw", ML_OPH_OPTIMIZER_STEP, 2, 0},
    {"_fused_adam", ML_OPH_OPTIMIZER_STEP, 2, 0}, {"_init_group", ML_OPH_OPTIMIZER_STEP, 2, 0},
    {"_prepare_fp32_grad_for_sub_group", ML_OPH_OPTIMIZER_STEP, 2, CF_ZERO3},
    {"_copy_main_params_to_model_params", ML_OPH_OPTIMIZER_STEP, 2, 0},
    {"initialize_optimizer_states", ML_OPH_OPTIMIZER_STEP, 2, 0},
    {"all_reduce", ML_OPH_COMMUNICATION, 2, 0}, {"allreduce", ML_OPH_COMMUNICATION, 2, 0},
    {"all_reduce_coalesced", ML_OPH_COMMUNICATION, 2, 0}, {"broadcast", ML_OPH_COMMUNICATION, 2, 0},
    {"reduce_scatter", ML_OPH_COMMUNICATION, 2, 0}, {"reduce_scatter_tensor", ML_OPH_COMMUNICATION, 2, 0},
    {"barrier", ML_OPH_COMMUNICATION, 2, 0}, {"_flatten_dense_tensors", ML_OPH_COMMUNICATION, 2, 0},
    {"allreduce_params", ML_OPH_COMMUNICATION, 2, 0}, {"init_process_group", ML_OPH_COMMUNICATION, 2, 0},
    {"_get_msg_dict", ML_OPH_COMMUNICATION, 2, CF_FORMAT},
    /* leaves */
    {"cross_entropy", ML_OPH_LOSS, 1, 0}, {"log_softmax", ML_OPH_LOSS, 1, 0}, {"nll_loss", ML_OPH_LOSS, 1, 0},
    {"ForCausalLMLoss", ML_OPH_LOSS, 1, 0}, {"fixed_cross_entropy", ML_OPH_LOSS, 1, 0},
    {"get_batch_logps", ML_OPH_LOSS, 1, 0}, {"_get_batch_logps", ML_OPH_LOSS, 1, 0},
    {"_convert_to_fp32", ML_OPH_LOSS, 1, CF_FP32},
    {"forward", ML_OPH_FORWARD, 1, 0}, {"_call_impl", ML_OPH_FORWARD, 1, 0},
    {"eager_attention_forward", ML_OPH_FORWARD, 1, CF_EAGER},
    {"pre_sub_module_forward_function", ML_OPH_FORWARD, 1, CF_ZERO3},
    /* flags only */
    {"__repr__", ML_OPH_UNKNOWN, 0, CF_FORMAT}, {"_tensor_str", ML_OPH_UNKNOWN, 0, CF_FORMAT},
    {"_str_intern", ML_OPH_UNKNOWN, 0, CF_FORMAT},
};

/* Substrings of code lines and frame paths. */
static const struct cue_def code_cues[] = {
    {"optimizer.step(", ML_OPH_OPTIMIZER_STEP, 2, 0}, {".backward(", ML_OPH_BACKWARD, 2, 0},
    {"backward(loss", ML_OPH_BACKWARD, 2, 0},
    {"fetch_sub_module(sub_module, forward=True", ML_OPH_FORWARD, 1, CF_ZERO3},
    {"fetch_sub_module(sub_module, forward=False", ML_OPH_BACKWARD, 2, CF_ZERO3},
    {"model(**", ML_OPH_FORWARD, 1, 0}, {"self._model(", ML_OPH_FORWARD, 1, 0}, {"self.model(", ML_OPH_FORWARD, 1, 0},
    {"self.module(", ML_OPH_FORWARD, 1, 0},
    {"log_softmax(", ML_OPH_LOSS, 1, 0}, {"cross_entropy", ML_OPH_LOSS, 1, 0}, {"lm_head(", ML_OPH_LOSS, 1, 0},
    {".generate(", ML_OPH_GENERATE, 3, 0}, {"save_pretrained(", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE},
    {"save_model(", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE}, {"from_pretrained(", ML_OPH_LOAD, 3, 0},
    {"all_reduce(", ML_OPH_COMMUNICATION, 2, 0}, {"init_process_group(", ML_OPH_COMMUNICATION, 2, 0},
    {":prefill:", ML_OPH_SERVING_RUNTIME, 3, 0}, {":decode:", ML_OPH_SERVING_RUNTIME, 3, 0},
    {"c10d_logger", ML_OPH_COMMUNICATION, 2, CF_FORMAT}, {"ProcessGroupNCCL", ML_OPH_COMMUNICATION, 2, 0},
    {"deepspeed/runtime/zero", ML_OPH_UNKNOWN, 0, CF_ZERO3}, {"torch/utils/checkpoint", ML_OPH_UNKNOWN, 0, CF_CKPT},
    {"softmax(attn", ML_OPH_UNKNOWN, 0, CF_EAGER}, {".float()", ML_OPH_UNKNOWN, 0, CF_FP32},
    {"upcast", ML_OPH_UNKNOWN, 0, CF_FP32},
};

static void push_cue(struct ml_oom_scanner *s, const struct cue_def *d, const char *name, const char *line)
{
    struct ml_oom_cue c;
    memset(&c, 0, sizeof(c));
    c.line = s->lineno;
    c.phase = d->phase;
    c.level = d->level;
    c.flags = d->flags;
    size_t nl = strlen(name);
    while (nl && (name[nl - 1] == '(' || name[nl - 1] == '.'))
        nl--; /* "optimizer.step(" reads "optimizer.step" */
    if (nl >= sizeof(c.name))
        nl = sizeof(c.name) - 1;
    memcpy(c.name, name, nl);
    size_t tl = strlen(line);
    if (tl >= sizeof(c.text))
        tl = sizeof(c.text) - 1;
    memcpy(c.text, line, tl);
    s->ring[s->ring_head] = c;
    s->ring_head = (s->ring_head + 1) % ML_OOM_CUE_RING;
    if (s->ring_n < ML_OOM_CUE_RING)
        s->ring_n++;
    if (s->after_ev >= 0 && s->lineno > s->inc->ev[s->after_ev].line) {
        s->after_flags |= c.flags;
        if (c.level)
            s->after_best[c.level] = c;
    }
}

static void fn_cue(struct ml_oom_scanner *s, const char *fn, size_t n, const char *line)
{
    for (size_t i = 0; i < sizeof(fn_cues) / sizeof(fn_cues[0]); i++) {
        if (strlen(fn_cues[i].pat) == n && !strncmp(fn, fn_cues[i].pat, n)) {
            push_cue(s, &fn_cues[i], fn_cues[i].pat, line);
            return;
        }
    }
}

/* Frame lines: 'File "p", line N, in FUNC', 'line N, in FUNC', 'p.py:N FUNC -> p.py:N FUNC'. */
static bool handle_frame(struct ml_oom_scanner *s, const char *l)
{
    bool frame = false;
    const char *in = find(l, ", in ");
    if (in && (find(l, "File \"") || find(l, "line "))) {
        const char *f = in + 5;
        size_t n = 0;
        while (is_word(f[n]) || f[n] == '<' || f[n] == '>')
            n++;
        fn_cue(s, f, n, l);
        frame = true;
    }
    if (find(l, " -> ") && find(l, ".py:")) {
        /* Arrow form: each "file.py:LINE func" segment. */
        for (const char *p = find(l, ".py:"); p; p = find(p + 4, ".py:")) {
            const char *q = p + 4;
            while (is_digit(*q))
                q++;
            q = skip_blank(q);
            size_t n = 0;
            while (is_word(q[n]))
                n++;
            if (n)
                fn_cue(s, q, n, l);
        }
        frame = true;
    }
    /* Paths in the frame line carry flags (ZeRO-3 code, torch.utils.checkpoint, c10d logger). */
    if (frame) {
        for (size_t i = 0; i < sizeof(code_cues) / sizeof(code_cues[0]); i++)
            if (code_cues[i].level == 0 || !strcmp(code_cues[i].pat, "c10d_logger"))
                if (find(l, code_cues[i].pat))
                    push_cue(s, &code_cues[i], code_cues[i].pat, l);
    }
    return frame;
}

static void handle_code(struct ml_oom_scanner *s, const char *l)
{
    for (size_t i = 0; i < sizeof(code_cues) / sizeof(code_cues[0]); i++) {
        const char *p = find(l, code_cues[i].pat);
        if (!p)
            continue;
        /* ".float()" in an eager-attention softmax is its design (fp32 softmax), not a mistake. */
        push_cue(s, &code_cues[i], code_cues[i].pat, l);
    }
}

/* OOM-family lines. */
static void handle_oom(struct ml_oom_scanner *s, const char *l, uint64_t m, int32_t rank)
{
    struct ml_oom_event e;
    const char *p;
    /* Source lines quoted by a traceback ('raise ValueError("No available memory ..."') are not
     * the error itself. */
    if (find(l, "raise ") && (find(l, "(\"") || find(l, "('") || find(l, "(f\"")))
        return;
    if (m & GB(G_HOSTALLOC)) {
        p = find(l, "CPUAllocator");
        if (p && (find(l, "can't allocate") || find(l, "tried to allocate"))) {
            ev_init(s, &e, ML_OOM_HOST_ALLOC, ML_DEV_HOST, rank, l);
            uint64_t v;
            if (size_after(p, "tried to allocate", &v)) {
                e.requested = v;
                e.has |= ML_OOM_F_REQUESTED;
            }
            commit(s, &e);
            return;
        }
    }
    if (m & GB(G_OOM)) {
        const char *o = find(l, "out of memory");
        if (!o)
            o = find(l, "Out of memory");
        if (!o)
            o = find(l, "OUT OF MEMORY");
        if (!o)
            o = l;
        if (find(l, "Killed process") || find(l, "Memory cgroup out of memory")) {
            handle_kill(s, l, rank);
            return;
        }
        if (find(l, "Tried to allocate") || find(l, "tried to allocate")) {
            if (find(l, "NPUWorkspaceAllocator")) {
                ev_init(s, &e, ML_OOM_NPU_WORKSPACE, ML_DEV_NPU, rank, message_start(l, o));
                begin_message(s, &e, message_start(l, o));
                return;
            }
            if (find(l, "more than 1EB")) {
                ev_init(s, &e, ML_OOM_IMPOSSIBLE, device_word(l, o), rank, message_start(l, o));
                begin_message(s, &e, message_start(l, o));
                return;
            }
            enum ml_oom_device d = device_word(l, o);
            enum ml_oom_kind k = find(l, "MPS backend") ? ML_OOM_MPS : ML_OOM_ALLOCATOR;
            if (k == ML_OOM_MPS)
                d = ML_DEV_MPS;
            if (find(l, "when warming up")) {
                ev_init(s, &e, ML_OOM_VLLM_WARMUP, d, rank, message_start(l, o));
                commit(s, &e);
                return;
            }
            ev_init(s, &e, k, d, rank, message_start(l, o));
            begin_message(s, &e, message_start(l, o));
            return;
        }
        if (find(l, "MPS backend out of memory")) {
            ev_init(s, &e, ML_OOM_MPS, ML_DEV_MPS, rank, message_start(l, o));
            begin_message(s, &e, message_start(l, o));
            return;
        }
        if (find(l, "when warming up")) {
            ev_init(s, &e, ML_OOM_VLLM_WARMUP, device_word(l, o), rank, message_start(l, o));
            commit(s, &e);
            return;
        }
        if (find(l, "driver error: out of memory")) {
            ev_init(s, &e, ML_OOM_DRIVER, ML_DEV_CUDA, rank, message_start(l, o));
            commit(s, &e);
            return;
        }
        if (find(l, "NCCL") || find(l, "Cuda failure") || find(l, "nccl")) {
            ev_init(s, &e, ML_OOM_NCCL, ML_DEV_CUDA, rank, l);
            commit(s, &e);
            return;
        }
        if (find(l, "Prefill out of memory") || find(l, "Decode out of memory")) {
            ev_init(s, &e, ML_OOM_SGLANG, ML_DEV_UNKNOWN, rank, message_start(l, o));
            commit(s, &e);
            return;
        }
        /* Raw runtime errors (A2, A7): "CUDA error: out of memory", "HIP error: out of memory",
         * THC "cuda runtime error (2) : out of memory", triton; and a bare "CUDA out of memory."
         * exception line. Prose that merely mentions OOM is not an event. */
        enum ml_oom_device d = ML_DEV_UNKNOWN;
        bool raw = false;
        if (find(l, "CUDA error: out of memory") || find(l, "cuda runtime error (2)")) {
            d = ML_DEV_CUDA;
            raw = true;
        } else if (find(l, "HIP error: out of memory") || find(l, "hip error: out of memory")) {
            d = ML_DEV_HIP;
            raw = true;
        } else if (find(l, "triton runtime error: out of memory")) {
            d = ML_DEV_CUDA;
            raw = true;
        } else if (o && (find(l, "Error: CUDA out of memory") || find(l, "Error: HIP out of memory") ||
                         find(l, "Error: NPU out of memory") || find(l, "Error: XPU out of memory"))) {
            d = device_word(l, o);
            /* An allocator message whose "Tried to allocate" sits on the next line. */
            ev_init(s, &e, ML_OOM_ALLOCATOR, d, rank, message_start(l, o));
            begin_message(s, &e, message_start(l, o));
            return;
        }
        if (raw) {
            ev_init(s, &e, ML_OOM_RUNTIME, d, rank, message_start(l, o));
            commit(s, &e);
            return;
        }
    }
    if (m & GB(G_OOMCLS)) {
        if (find(l, "hipErrorOutOfMemory")) {
            ev_init(s, &e, ML_OOM_RUNTIME, ML_DEV_HIP, rank, l);
            commit(s, &e);
            return;
        }
        if (find(l, "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY")) {
            ev_init(s, &e, ML_OOM_RUNTIME, ML_DEV_XPU, rank, l);
            commit(s, &e);
            return;
        }
        if (find(l, "ray.exceptions.OutOfMemoryError") || find(l, "node running low on memory")) {
            ev_init(s, &e, ML_OOM_HOST_RAY, ML_DEV_HOST, rank, l);
            commit(s, &e);
            return;
        }
    }
    if (m & GB(G_LIB)) {
        enum ml_oom_kind k = ML_OOM_KIND_COUNT;
        if (find(l, "CUBLAS_STATUS_ALLOC_FAILED") || (find(l, "CUBLAS_STATUS_NOT_INITIALIZED") && find(l, "cublasCreate")))
            k = ML_OOM_CUBLAS;
        else if (find(l, "CUDNN_STATUS_ALLOC_FAILED") || find(l, "CUDNN_STATUS_NOT_INITIALIZED") ||
                 find(l, "CUSOLVER_STATUS_INTERNAL_ERROR"))
            k = ML_OOM_CUDNN;
        else if (find(l, "HIPBLAS_STATUS_ALLOC_FAILED") || find(l, "rocblas_status_memory_error"))
            k = ML_OOM_CUBLAS;
        if (k != ML_OOM_KIND_COUNT) {
            ev_init(s, &e, k, find(l, "HIP") ? ML_DEV_HIP : ML_DEV_CUDA, rank, l);
            commit(s, &e);
            return;
        }
    }
    if (m & GB(G_NCCL)) {
        p = find(l, "CUDA calloc");
        if (p) {
            ev_init(s, &e, ML_OOM_NCCL, ML_DEV_CUDA, rank, l);
            uint64_t v;
            if (ml_oom_parse_size(skip_blank(p + 11), &v)) {
                e.requested = v;
                e.has |= ML_OOM_F_REQUESTED;
            }
            commit(s, &e);
            return;
        }
        if (find(l, "shared memory segment") && (find(l, "NCCL") || find(l, "/dev/shm"))) {
            ev_init(s, &e, ML_OOM_NCCL_SHM, ML_DEV_HOST, rank, l);
            commit(s, &e);
            return;
        }
    }
    if (m & GB(G_VLLMERR)) {
        p = find(l, "Free memory on device");
        if (p) {
            ev_init(s, &e, ML_OOM_VLLM_FREE_MEMORY, ML_DEV_CUDA, rank, exc_start(l, p));
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
                        e.free = fr;
                        e.total = tot;
                        e.has |= ML_OOM_F_FREE | ML_OOM_F_TOTAL;
                    }
                }
            }
            const char *u = find(p, "utilization (");
            if (u) {
                uint32_t pm;
                size_t k = ml_oom_parse_permille(u + 13, &pm);
                if (k) {
                    e.util_permille = pm;
                    e.has |= ML_OOM_F_UTIL;
                    uint64_t want;
                    if (u[13 + k] == ',' && ml_oom_parse_size(skip_blank(u + 14 + k), &want)) {
                        e.requested = want;
                        e.has |= ML_OOM_F_REQUESTED;
                    }
                }
            }
            const char *dev = find(p, "on device ");
            if (dev && !strncmp(dev + 10, "xpu", 3))
                e.device = ML_DEV_XPU;
            else if (dev && !strncmp(dev + 10, "npu", 3))
                e.device = ML_DEV_NPU;
            commit(s, &e);
            return;
        }
        p = find(l, "max seq len (");
        if (p) {
            ev_init(s, &e, ML_OOM_VLLM_KV_TOO_SMALL, ML_DEV_UNKNOWN, rank, exc_start(l, p));
            uint64_t v;
            if (ml_oom_parse_u64(p + 13, &v)) {
                e.max_seq_len = v;
                e.has |= ML_OOM_F_MAX_SEQ_LEN;
            }
            const char *q = find(p, "stored in KV cache (");
            if (q && ml_oom_parse_u64(q + 20, &v)) {
                e.kv_tokens = v;
                e.has |= ML_OOM_F_KV_TOKENS;
            }
            q = find(p, "KV cache is needed");
            if (q) {
                const char *b = q;
                while (b > p && b[-1] != '(')
                    b--;
                if (ml_oom_parse_size(b, &v)) {
                    e.requested = v;
                    e.has |= ML_OOM_F_REQUESTED;
                }
            }
            if (size_after(p, "KV cache memory (", &v)) {
                e.free = v;
                e.has |= ML_OOM_F_FREE;
            }
            q = find(p, "maximum model length is ");
            if (q && ml_oom_parse_u64(q + 24, &v)) {
                e.est_max_len = v;
                e.has |= ML_OOM_F_EST_MAX_LEN;
            }
            commit(s, &e);
            return;
        }
        if (find(l, "No available memory for the cache blocks")) {
            ev_init(s, &e, ML_OOM_VLLM_NO_CACHE, ML_DEV_UNKNOWN, rank, exc_start(l, find(l, "No available")));
            commit(s, &e);
            return;
        }
        p = find(l, "Not enough memory");
        if (p && (find(l, "mem-fraction") || find(l, "mem_fraction"))) {
            ev_init(s, &e, ML_OOM_SGLANG, ML_DEV_UNKNOWN, rank, exc_start(l, p));
            commit(s, &e);
            return;
        }
    }
    if (m & GB(G_NPUCODE)) {
        if (find(l, "EL0004") || find(l, "ERR00006") || (find(l, "207001") && find(l, "alloc"))) {
            /* Companion of an NPU allocator message (A3): an event only when alone. */
            struct ml_incident *inc = s->inc;
            if (inc->n_events && inc->ev[inc->n_events - 1].device == ML_DEV_NPU &&
                inc->ev[inc->n_events - 1].file == s->file && s->lineno - inc->ev[inc->n_events - 1].line < 50)
                return;
            if (s->pending && s->pev.device == ML_DEV_NPU)
                return;
            ev_init(s, &e, ML_OOM_RUNTIME, ML_DEV_NPU, rank, l);
            commit(s, &e);
            return;
        }
    }
    if (m & GB(G_KILL))
        handle_kill(s, l, rank);
}

/* The stack and platform flags: the anchor group and the incident's fact it sets. */
static const struct {
    enum grp g;
    size_t off; /* offsetof(struct ml_incident, saw_...) */
} flag_facts[] = {
    {S_VLLM, offsetof(struct ml_incident, saw_vllm)},
    {S_SGLANG, offsetof(struct ml_incident, saw_sglang)},
    {S_TGI, offsetof(struct ml_incident, saw_tgi)},
    {S_DS, offsetof(struct ml_incident, saw_deepspeed)},
    {S_ZERO3, offsetof(struct ml_incident, saw_zero3)},
    {S_FSDP, offsetof(struct ml_incident, saw_fsdp)},
    {S_LORA, offsetof(struct ml_incident, saw_lora)},
    {S_RL, offsetof(struct ml_incident, saw_rl)},
    {S_DPO, offsetof(struct ml_incident, saw_dpo)},
    {S_EXPSEG, offsetof(struct ml_incident, saw_expandable)},
    {S_EAGER, offsetof(struct ml_incident, saw_eager)},
    {S_GC, offsetof(struct ml_incident, saw_grad_ckpt)},
    {S_WSL, offsetof(struct ml_incident, saw_wsl)},
    {S_WIN, offsetof(struct ml_incident, saw_windows)},
    {S_JETSON, offsetof(struct ml_incident, saw_jetson)},
};
#define N_FLAG_FACTS (sizeof(flag_facts) / sizeof(flag_facts[0]))

static bool *flag_fact(struct ml_incident *inc, size_t i)
{
    return (bool *)(void *)((char *)inc + flag_facts[i].off);
}

static void handle_flags(struct ml_oom_scanner *s, const char *l, uint64_t m)
{
    for (size_t i = 0; i < N_FLAG_FACTS; i++) {
        if (!(m & GB(flag_facts[i].g)))
            continue;
        /* expandable_segments set by the user, not the OOM message's own hint. */
        if (flag_facts[i].g == S_EXPSEG && (find(l, "try setting") || find(l, "If reserved")))
            continue;
        *flag_fact(s->inc, i) = true;
    }
}

/* Groups whose facts are known once and for all: a flag already seen, the python version already
 * read, no room for more versions. The scanner stops looking for their anchors (retire()), which
 * changes no result: a line whose only anchors are retired would be handled like a line without. */
static uint64_t known_groups(struct ml_incident *inc)
{
    uint64_t g = 0;
    for (size_t i = 0; i < N_FLAG_FACTS; i++)
        if (*flag_fact(inc, i))
            g |= GB(flag_facts[i].g);
    for (uint32_t i = 0; i < inc->n_versions; i++)
        if (!strcmp(inc->versions[i].name, "python"))
            g |= GB(G_PYVER);
    if (inc->n_versions >= ML_OOM_MAX_VERSIONS)
        g |= GB(G_VERSION) | GB(G_PYVER);
    return g;
}

static void retire(struct ml_oom_scanner *s)
{
    ml_oom_match_retire(ml_oom_matcher(s), known_groups(s->inc));
}

/* One logical line (a '\r'-segment of a physical line), NUL-terminated, ANSI-free. */
static void handle_line(struct ml_oom_scanner *s, char *l, size_t n, uint64_t m, size_t prev_len, char prev_last)
{
    const char *body = l;
    int32_t rank = -1;
    if (m & GB(G_RANK))
        rank = parse_rank(l, &body);
    /* A pending message: continue it or close it. */
    if (s->pending) {
        if (s->pending_lines < 8 && !(m & (GB(G_OOM) | GB(G_TRACE))) && continues(s, body, prev_len, prev_last)) {
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
            if (message_complete(&s->pev, s->msg))
                close_pending(s);
            return;
        }
        close_pending(s);
    }
    if (s->after_ev >= 0 && (s->lineno > s->after_until || (m & (GB(G_OOM) | GB(G_VLLMERR) | GB(G_HOSTALLOC)))))
        close_after(s);
    if (m & GB(G_TRACE))
        s->last_traceback = s->lineno;
    bool frame = false;
    if (m & GB(G_FRAME))
        frame = handle_frame(s, l);
    else if (s->prev_frame || (body[0] == ' ' && body[1] == ' ' && body[2] == ' ' && body[3] == ' '))
        handle_code(s, l);
    s->prev_frame = frame;
    if (m & GB(G_SERVE)) {
        static const struct cue_def serve = {"prefill/decode", ML_OPH_SERVING_RUNTIME, 3, 0};
        push_cue(s, &serve, find(l, "refill") ? "prefill" : "decode", l);
    }
    uint64_t seen_before = s->inc->n_events_seen;
    if (m & (GB(G_OOM) | GB(G_OOMCLS) | GB(G_LIB) | GB(G_HOSTALLOC) | GB(G_NCCL) | GB(G_VLLMERR) | GB(G_KILL) |
             GB(G_NPUCODE)))
        handle_oom(s, l, m, rank);
    if ((m & GB(G_REPEATED)) && (s->inc->n_events_seen > seen_before || s->pending)) {
        const char *r = find(l, "[repeated ");
        uint64_t k;
        if (r && ml_oom_parse_u64(r + 10, &k) && k > 1 && k < 1000000) {
            if (s->pending)
                s->pev.repeats += (uint32_t)(k - 1);
            else if (s->after_ev >= 0)
                s->inc->ev[s->after_ev].repeats += (uint32_t)(k - 1);
        }
    }
    if (m & GB(G_RANKSUM)) {
        /* torchrun summary "rank      : 0 (local_rank: 0)": the rank of the failure record. */
        const char *p = find(l, "rank ");
        const char *c = p ? find(p, ":") : NULL;
        uint64_t r;
        if (c && c - p < 12 && ml_oom_parse_u64(skip_blank(c + 1), &r) && r < 64) {
            s->sum_rank = (int32_t)r;
            s->sum_rank_line = s->lineno;
            /* A SIGKILL just above gets this rank. */
            if (s->inc->n_events && s->inc->ev[s->inc->n_events - 1].kind == ML_OOM_HOST_SIGKILL &&
                s->lineno - s->inc->ev[s->inc->n_events - 1].line < 6) {
                struct ml_oom_event *e = &s->inc->ev[s->inc->n_events - 1];
                if (e->rank < 0)
                    e->rank = (int32_t)r;
                e->rank_mask |= (uint64_t)1 << r;
            }
        }
    }
    if (m & (GB(G_TQDM) | GB(G_STEP) | GB(G_LOGDICT)))
        handle_progress(s, l, m);
    if (m & GB(G_SAVE))
        handle_save(s, l, frame);
    if (m & GB(G_EVAL))
        handle_eval(s, l);
    if (m & GB(G_LOAD))
        handle_load(s, l);
    if (m & GB(G_RESUME)) {
        if (find(l, "esuming from") || find(l, "esuming training") || find(l, "Continuing training"))
            ref_set(&s->resume_ref, s->file, s->lineno, -1, l);
    }
    if ((m & (GB(G_VERSION) | GB(G_PYVER))) && s->inc->n_versions < ML_OOM_MAX_VERSIONS)
        handle_version(s, l, m);
    if (m & (GB(G_DSFLUSH) | GB(G_DSMEM) | GB(G_CPUMEM)))
        handle_ds(s, l, m);
    if (m & GB(G_VLLMINFO))
        handle_vllm_info(s, l);
    if (m >> S_VLLM)
        handle_flags(s, l, m);
    (void)n;
}

/* A complete physical line in s->line[0..s->len). */
static void process_line(struct ml_oom_scanner *s)
{
    s->lineno++;
    s->inc->lines++;
    if (s->overflow)
        s->inc->truncated_lines++;
    size_t n = s->len;
    char *l = s->line;
    while (n && (l[n - 1] == '\r'))
        n--;
    l[n] = '\0';
    /* The pending message's facts, for wrapped messages. */
    size_t prev_len = s->pending ? s->msg_len : 0;
    char prev_last = s->pending && s->msg_len ? s->msg[s->msg_len - 1] : '\0';
    bool code_like = s->prev_frame || (n > 4 && l[0] == ' ' && l[1] == ' ' && l[2] == ' ' && l[3] == ' ');
    /* Carriage returns split a tqdm line into its updates: each is a logical line. */
    bool has_cr = memchr(l, '\r', n) != NULL;
    char *seg = l;
    char *end = l + n;
    bool any = false;
    while (seg < end) {
        char *e = has_cr ? memchr(seg, '\r', (size_t)(end - seg)) : NULL;
        if (!e)
            e = end;
        *e = '\0';
        size_t sl = (size_t)(e - seg);
        /* Most segments hold no NUL or ANSI code: the pass that finds the anchors tells. */
        bool special;
        uint64_t sm = ml_oom_match_line(ml_oom_matcher_c(s), seg, sl, &special);
        if (special) {
            /* NUL bytes (binary junk, UTF-16 logs) would end the line for the string handlers
             * early; ANSI colour codes (ESC[ or printed as ^[[) go before anything is matched. */
            bool changed = false;
            for (char *z = memchr(seg, '\0', sl); z; z = memchr(z + 1, '\0', (size_t)(e - z - 1))) {
                *z = ' ';
                changed = true;
            }
            if (has_ansi(seg, sl)) {
                sl = strip_ansi(seg, sl);
                changed = true;
            }
            if (changed) /* (a lone '^' or ESC changes nothing) */
                sm = ml_oom_match_line(ml_oom_matcher_c(s), seg, sl, &special);
        }
        if (sl && (sm || s->pending || code_like)) {
            handle_line(s, seg, sl, sm, prev_len, prev_last);
            any = true;
            if (sm & ONE_SHOT)
                retire(s);
        }
        seg = e + 1;
    }
    if (!any) {
        s->prev_frame = false;
        if (s->after_ev >= 0 && s->lineno > s->after_until)
            close_after(s);
    }
}

void ml_oom_scan_begin(struct ml_oom_scanner *s)
{
    s->file = s->inc->n_files++;
    s->lineno = 0;
    s->len = 0;
    s->overflow = false;
    s->pending = false;
    s->ring_n = s->ring_head = 0;
    s->last_traceback = s->last_event_line = 0;
    s->after_ev = -1;
    s->prev_frame = false;
    s->step = -1;
    memset(&s->step_ref, 0, sizeof(s->step_ref));
    memset(&s->save_ref, 0, sizeof(s->save_ref));
    memset(&s->eval_ref, 0, sizeof(s->eval_ref));
    memset(&s->load_ref, 0, sizeof(s->load_ref));
    memset(&s->resume_ref, 0, sizeof(s->resume_ref));
    s->progress_since_save = s->progress_since_eval = 0;
    s->sum_rank = -1;
    s->sum_rank_line = 0;
}

void ml_oom_scan(struct ml_oom_scanner *s, const void *data, size_t n)
{
    const char *p = data;
    s->inc->bytes += n;
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        size_t room = ML_OOM_LINE_MAX - s->len;
        if (take > room) {
            s->overflow = true;
            memcpy(s->line + s->len, p, room);
            s->len += room;
        } else {
            memcpy(s->line + s->len, p, take);
            s->len += take;
        }
        if (!nl)
            return;
        process_line(s);
        s->len = 0;
        s->overflow = false;
        p = nl + 1;
        n -= take + 1;
    }
}

/* Timing and phase clean-up once the frames after each event are known. */
static void finish_events(struct ml_oom_scanner *s)
{
    for (uint32_t i = 0; i < s->inc->n_events; i++) {
        struct ml_oom_event *e = &s->inc->ev[i];
        if (e->file != s->file)
            continue;
        if (e->timing == ML_TIM_AFTER_SAVE && (e->in_save_frames || e->phase == ML_OPH_CHECKPOINT_SAVE))
            e->timing = ML_TIM_AT_SAVE;
        if (e->timing == ML_TIM_AT_EVAL || e->in_eval_frames) {
            if (e->phase == ML_OPH_FORWARD || e->phase == ML_OPH_LOSS || e->phase == ML_OPH_UNKNOWN)
                e->phase = e->in_eval_frames || e->timing == ML_TIM_AT_EVAL ? ML_OPH_EVAL : e->phase;
        }
    }
}

void ml_oom_scan_end(struct ml_oom_scanner *s)
{
    if (s->len || s->overflow)
        process_line(s);
    s->len = 0;
    s->overflow = false;
    close_pending(s);
    close_after(s);
    finish_events(s);
}

uint64_t ml_oom_anchor_groups(struct ml_oom_scanner *s, const char *text, size_t n)
{
    if (n > ML_OOM_LINE_MAX)
        n = ML_OOM_LINE_MAX;
    memcpy(s->line, text, n);
    s->line[n] = '\0';
    bool special;
    return ml_oom_match_line(ml_oom_matcher_c(s), s->line, n, &special);
}

void ml_oom_scan_buffer(struct ml_oom_scanner *s, const void *data, size_t n)
{
    ml_oom_scan_begin(s);
    ml_oom_scan(s, data, n);
    ml_oom_scan_end(s);
}
