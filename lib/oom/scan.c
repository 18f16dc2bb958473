/*
 * scan.c - the streaming OOM log scanner (oom.h): the driver.
 *
 * Bytes arrive in chunks of any size. Each line (at most ML_OOM_LINE_MAX bytes are kept) goes
 * through the anchor matcher (match.c), one pass that finds its anchors (short literals such as
 * "out of memory", "step", "Saving") and so says which handlers can possibly apply; most lines
 * of a long log match nothing and cost that one pass. Only lines with an anchor are looked at
 * closely: by the message grammar (grammar.c), which makes the events, and the context tracker
 * (context.c), which reads the lines around them and stores each event with its context.
 * Nothing is allocated: the scanner and the incident are fixed-size values.
 *
 * The message formats and what each number means are the shared field guide's
 * (reference/oom-messages.md, sections A1-A11); the phase cues are its analysis 4 ("the stack
 * frame at the raise tells the phase"), the timing cues its analysis 5.
 */
#include "memledger/oom.h"

#include <string.h>

#include "match.h"
#include "scanner.h"

/* ---- anchors ----------------------------------------------------------------------------- */

/* The literals whose groups (scanner.h) dispatch a line: each >= 4 bytes (both passes of the
 * matcher need it). An anchor need not be a whole needle: it only has to occur in every line the
 * group's handlers take. */
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

/* ---- lines ------------------------------------------------------------------------------ */

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

/* One logical line (a '\r'-segment of a physical line), NUL-terminated, ANSI-free, with its
 * anchor groups m. prev_len, prev_last: the pending message's length and last byte. */
static void handle_line(struct ml_oom_scanner *s, const char *l, uint64_t m, size_t prev_len, char prev_last)
{
    const char *body = l;
    int32_t rank = -1;
    if (m & GB(G_RANK))
        rank = ml_oom_line_rank(l, &body);
    if (s->pending && ml_oom_continue_message(s, body, m, prev_len, prev_last))
        return;
    bool frame = ml_oom_track_frames(s, l, body, m);
    uint64_t events_before = s->inc->n_events_seen;
    if (m & EVENT_GROUPS)
        ml_oom_read_events(s, l, m, rank);
    ml_oom_track_line(s, l, m, frame, events_before);
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
            handle_line(s, seg, sm, prev_len, prev_last);
            any = true;
            if (sm & ONE_SHOT) /* stop looking for what is known for good */
                ml_oom_match_retire(ml_oom_matcher(s), ml_oom_known_groups(s->inc));
        }
        seg = e + 1;
    }
    if (!any) {
        s->prev_frame = false;
        if (s->after_ev >= 0 && s->lineno > s->after_until)
            ml_oom_close_after(s);
    }
}

void ml_oom_scan_begin(struct ml_oom_scanner *s)
{
    s->file = s->inc->n_files++;
    s->lineno = 0;
    s->len = 0;
    s->overflow = false;
    s->pending = false;
    ml_oom_context_begin(s);
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

void ml_oom_scan_end(struct ml_oom_scanner *s)
{
    if (s->len || s->overflow)
        process_line(s);
    s->len = 0;
    s->overflow = false;
    ml_oom_close_message(s);
    ml_oom_close_after(s);
    ml_oom_finish_events(s);
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
