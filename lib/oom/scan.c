/*
 * scan.c - the streaming OOM log scanner (oom.h): the driver.
 *
 * Bytes arrive in chunks of any size. Each line (at most ML_OOM_LINE_MAX bytes are kept) gets its
 * anchors from the anchor matcher (match.c): short literals such as "out of memory", "step",
 * "Saving", which say which handlers can possibly apply. With the SIMD pass, 8 KiB of a chunk at a
 * time are marked in one pass before they are cut into lines (scan_window: the newlines, the rare
 * bytes, the anchors found), and a line inside such a window reads its anchors off the marks,
 * from the input's own bytes: it is copied into the line buffer only when a handler reads it. A
 * line across windows or chunks, a line with a rare byte other than CR, and the scalar pass take
 * one pass per line. Most lines of a long log match nothing. Only lines with an anchor are looked at
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
    {"out of memory", G_OOM},
    {"Out of memory", G_OOM},
    {"OUT OF MEMORY", G_OOM},
    {"OutOfMemory", G_OOMCLS},
    {"OUT_OF_DEVICE_MEMORY", G_OOMCLS},
    {"ried to allocate", G_TRIED},
    {"_ALLOC_FAILED", G_LIB},
    {"_NOT_INITIALIZED", G_LIB},
    {"CUSOLVER_STATUS_INTERNAL", G_LIB},
    {"CPUAllocator", G_HOSTALLOC},
    {"rror 1455", G_HOSTALLOC}, /* Windows' "[WinError 1455]", "(os error 1455)": grammar.c */
    {"CUDA calloc", G_NCCL},
    {"shared memory segment", G_NCCL},
    {"cache blocks", G_VLLMERR},
    {"max seq len", G_VLLMERR},
    {"Free memory on device", G_VLLMERR},
    {"Not enough memory", G_VLLMERR},
    {"Killed", G_KILL},
    {"\xe5\xb7\xb2\xe6\x9d\x80\xe6\xad\xbb", G_KILL}, /* bash zh_CN "Killed" (UTF-8) */
    {"oom-kill", G_KILL},
    {"oom_kill", G_KILL},
    {"Out Of Memory", G_KILL},
    {".py in ", G_FRAME},
    {".py](", G_FRAME},
    {"OOMKilled", G_KILL},
    {"oom_reaper", G_KILL},
    {"SIGKILL", G_KILL},
    {"Signal 9", G_KILL},
    {"exitcode", G_KILL},
    {"exit code", G_KILL},
    {"return code", G_KILL},
    {"exit status", G_KILL},
    {"exited with", G_KILL},
    {"EL0004", G_NPUCODE},
    {"ERR00006", G_NPUCODE},
    {"207001", G_NPUCODE},
    {"Traceback (most recent", G_TRACE},
    {"File \"", G_FRAME},
    {", in ", G_FRAME},
    {" -> ", G_FRAME},
    {":prefill", G_SERVE},
    {":decode", G_SERVE},
    {"prefill{", G_SERVE},
    {"decode{", G_SERVE},
    {"it/s]", G_TQDM},
    {"s/it]", G_TQDM},
    {"step", G_STEP},
    {"Step", G_STEP},
    {"iter ", G_STEP},
    {"iteration", G_STEP},
    {"Iteration", G_STEP},
    {"{'loss'", G_LOGDICT},
    {"{\"loss\"", G_LOGDICT},
    {"aving", G_SAVE},
    {"saved", G_SAVE},
    {"is ready now", G_SAVE},
    {"Evaluat", G_EVAL},
    {"evaluat", G_EVAL},
    {"eval_loss", G_EVAL},
    {"Running Eval", G_EVAL},
    {"Loading", G_LOAD},
    {"loading", G_LOAD},
    {"weights took", G_LOAD},
    {"esuming", G_RESUME},
    {"resume_from_checkpoint", G_RESUME},
    {"Continuing training", G_RESUME},
    {"version", G_VERSION},
    {"Version", G_VERSION},
    {"LLM engine (v", G_VERSION},
    {"torch==", G_VERSION},
    {"transformers==", G_VERSION},
    {"deepspeed==", G_VERSION},
    {"vllm==", G_VERSION},
    {"peft==", G_VERSION},
    {"trl==", G_VERSION},
    {"accelerate==", G_VERSION},
    {"sglang==", G_VERSION},
    {"python3.", G_PYVER},
    {"cache flushes", G_DSFLUSH},
    {"Max_MA", G_DSMEM},
    {"CPU Virtual Memory", G_CPUMEM},
    {"Memory profiling", G_VLLMINFO},
    {"GPU blocks", G_VLLMINFO},
    {"KV cache size", G_VLLMINFO},
    {"Available KV", G_VLLMINFO},
    {"preempted", G_VLLMINFO},
    {"Maximum concurrency", G_VLLMINFO},
    {"[rank", G_RANK},
    {"[Rank ", G_RANK_CAP},
    {"rank=", G_RANK_EQ},
    {"[repeated ", G_REPEATED},
    {"Output generated in", G_LINECUE},
    {"EngineCore failed to start", G_LINECUE},
    {"Capturing CUDA graph", G_LINECUE},
    {"while processing method", G_LINECUE},
    {"Malloc failed", G_GGML},
    {"buffer of size", G_GGML},
    {"to allocate compute buffers", G_GGML},
    {"unable to allocate", G_GGML},
    {"buffer for kv cache", G_GGML},
    {"PT_DEVMEM", G_GGML},
    {"Capturing", G_EPISODE},
    {"Capture cuda graph", G_EPISODE},
    {"Cuda Graphs are enabled", G_EPISODE},
    {"Load weight", G_EPISODE},
    {"to load model", G_EPISODE},
    {"Model loading took", G_EPISODE},
    {"Warming up model", G_EPISODE},
    {"Starting profile run", G_EPISODE},
    {"reserved for KV Cache", G_EPISODE},
    {"cuda blocks", G_EPISODE},
    {"npu blocks", G_EPISODE},
    {"KV Cache is allocated", G_EPISODE},
    {"Memory pool end", G_EPISODE},
    {"Graph capturing finished", G_EPISODE},
    {"vLLM API server", G_EPISODE},
    {"Uvicorn running", G_EPISODE},
    {"server is fired up", G_EPISODE},
    {"startup complete", G_EPISODE},
    {"max batch total tokens", G_EPISODE},
    {"During handling of the above", G_CHAIN},
    {"The above exception was", G_CHAIN},
    {"(EngineCore", S_ENGPROC},
    {"(VllmWorker", S_ENGPROC},
    {"(VllmWorkerProcess pid", S_V0WORKER}, /* V0's multiproc workers (multiproc_worker_utils.py) */
    {"(Worker_TP", S_ENGPROC},              /* V1's multiproc workers: "(Worker_TP0 pid=88120)" (vllm-ascend#6611) */
    {"RayWorkerWrapper pid", S_ENGPROC},
    {"Avg prompt throughput", S_SERVED},
    {"Received request", S_SERVED},
    {"POST /v1/", S_SERVED},
    {"rank    ", G_RANKSUM},
    {"vllm", S_VLLM},
    {"vLLM", S_VLLM},
    {"VLLM", S_VLLM},
    {"Vllm", S_VLLM},
    {"EngineCore", S_VLLM},
    {"RayWorkerWrapper", S_VLLM},
    {"MQLLMEngine", S_VLLM},
    {"core_client.py", S_VLLM},
    {"signal from worker processes", S_VLLM},
    {"LLMEngine", S_VLLM},
    {"sglang", S_SGLANG},
    {"SGLang", S_SGLANG},
    {"text_generation", S_TGI},
    {"deepspeed", S_DS},
    {"DeepSpeed", S_DS},
    {"stage3", S_ZERO3},
    {"zero3", S_ZERO3},
    {"ZeRO-3", S_ZERO3},
    {"zero_stage3", S_ZERO3},
    {"fsdp", S_FSDP},
    {"FSDP", S_FSDP},
    {"fully_shard", S_FSDP},
    {"peft", S_LORA},
    {"lora", S_LORA},
    {"LoRA", S_LORA},
    {"grpo", S_RL},
    {"GRPO", S_RL},
    {"ppo_trainer", S_RL},
    {"PPOT", S_RL},
    {"ppo_", S_RL},
    {"rollout", S_RL},
    {"dpo_", S_DPO},
    {"_dpo", S_DPO},
    {"DPOT", S_DPO},
    {"DPO ", S_DPO},
    {" DPO", S_DPO},
    {"expandable_segments:True", S_EXPSEG},
    {"eager_attention", S_EAGER},
    {"attn_implementation=\"eager\"", S_EAGER},
    {"flash_attn: disabled", S_EAGER},
    {"torch/utils/checkpoint", S_GC},
    {"gradient_checkpointing", S_GC},
    {"WSL2", S_WSL},
    {"-WSL", S_WSL},
    {"microsoft-standard", S_WSL},
    {":\\Users", S_WIN},
    {"\\site-packages", S_WIN},
    /* (not "tegra" alone: "integration_utils.py" holds it) */
    {"-tegra", S_JETSON},
    {"tegra1", S_JETSON},
    {"tegra2", S_JETSON},
    {"Jetson", S_JETSON},
    {"jetson", S_JETSON},
    {"TrainingArguments(", S_TRAINARGS},
    {"per_device_train_batch_size", S_TRAINARGS},
    {"Namespace(", S_TRAINARGS},
    {"diffusers", S_DIFFUSION},
    {"DiffusionPipeline", S_DIFFUSION},
    {"StableDiffusion", S_DIFFUSION},
    {"unet/", S_DIFFUSION},
    {"UNet2DCondition", S_DIFFUSION},
    {"AutoencoderKL", S_DIFFUSION},
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
    ml_oom_match_spans(ml_oom_matcher(s), EVENT_GROUPS); /* (seam_across) */
}

bool ml_oom_scanner_simd(struct ml_oom_scanner *s, bool on)
{
    struct ml_oom_match *mt = ml_oom_matcher(s);
    mt->wide = on && ml_oom_match_simd();
    return mt->wide;
}

/* The "(EngineCore_DP0 pid=123) " prefix a serving engine's worker processes print before each
 * line: where the text after it starts (p itself when there is none). */
static const char *proc_prefix_end(const char *p)
{
    if (*p != '(')
        return p;
    const char *q = find(p, " pid=");
    if (!q || q - p > 48)
        return p;
    const char *c = strchr(q, ')');
    if (!c || c - q > 48)
        return p;
    return skip_blank(c + 1);
}

/* One logical line (a '\r'-segment of a physical line, or a line of a JSON record), NUL-terminated
 * at l[len], ANSI-free, with its anchor groups m; no anchor starts in l[0..from) (match.h), and no
 * anchor of G_STEP in l[0..step_from). */
static void handle_line(struct ml_oom_scanner *s, char *l, size_t len, uint64_t m, size_t from, size_t step_from)
{
    const char *body = l;
    int32_t rank = -1;
    if (m & RANK_GROUPS)
        rank = ml_oom_line_rank(l, m, &body, from);
    body = proc_prefix_end(body);
    size_t pl = (size_t)(body - l);
    if (pl >= sizeof(s->pend_prefix))
        pl = sizeof(s->pend_prefix) - 1;
    if (s->pending) {
        /* A line of another rank or process does not continue this one's message. */
        bool same = pl == 0 || (pl == s->pend_prefix_len && !memcmp(l, s->pend_prefix, pl));
        size_t took = same ? ml_oom_continue_message(s, body, m) : 0;
        if (!same)
            ml_oom_close_message(s);
        if (took) {
            if (!body[took])
                return;
            /* The rest of the line is the next record (a one-line paste). */
            len -= (size_t)(body - l) + took;
            l += (body - l) + took;
            body = l;
            pl = 0;
            rank = -1;
            from = step_from = 0;
        }
    }
    if (m & EVENT_GROUPS) {
        /* (a serving span's own cue comes from the frame tracker) */
        const char *o = (m & GB(G_SERVE)) ? NULL : strstr(l, "out of memory");
        ml_oom_code_before(s, l, o && o - l > 8 ? (size_t)(o - l) : 0);
    }
    bool frame = ml_oom_track_frames(s, l, body, m);
    uint64_t events_before = s->inc->n_events_seen;
    if (m & EVENT_GROUPS) {
        ml_oom_read_events(s, l, m, rank);
        if (s->pending) { /* its continuation lines carry the same prefix, or none */
            memcpy(s->pend_prefix, l, pl);
            s->pend_prefix_len = pl;
        }
        len = strlen(l); /* (the reader may have cut it) */
        from = step_from = 0;
    }
    ml_oom_track_line(s, l, len, m, frame, events_before, step_from);
}

/* A segment with anchor groups sm in which the matcher saw a NUL, ESC or '^': cleaned of NUL bytes
 * and ANSI codes when it holds any (*sl: its length after), and its groups then. */
static uint64_t clean_segment(const struct ml_oom_scanner *s, char *seg, size_t *sl, uint64_t sm)
{
    /* NUL bytes (binary junk, UTF-16 logs) would end the line for the string handlers early;
     * ANSI colour codes (ESC[ or printed as ^[[) go before anything is matched. */
    bool changed = false;
    for (char *z = memchr(seg, '\0', *sl); z; z = memchr(z + 1, '\0', (size_t)(seg + *sl - z - 1))) {
        *z = ' ';
        changed = true;
    }
    if (has_ansi(seg, *sl)) {
        *sl = strip_ansi(seg, *sl);
        changed = true;
    }
    bool special;
    /* (a lone '^' or ESC changes nothing) */
    return changed ? ml_oom_match_line(ml_oom_matcher_c(s), seg, *sl, &special) : sm;
}

/* The anchor groups of a segment, cleaned first (clean_segment). */
static uint64_t match_segment(const struct ml_oom_scanner *s, char *seg, size_t *sl)
{
    bool special;
    uint64_t sm = ml_oom_match_line(ml_oom_matcher_c(s), seg, *sl, &special);
    return special ? clean_segment(s, seg, sl, sm) : sm;
}

/* Whether a segment seg[0..sl) with anchor groups sm is handled: anything may apply (an anchor, a
 * message pending, a code or frame line). It only reads seg[0..sl] (the byte at sl ends it: a NUL,
 * CR or newline), so seg may be the input's own bytes; a line that starts with a blank is kept as
 * prev_code on the way. */
static inline bool segment_wanted(struct ml_oom_scanner *s, const char *seg, size_t sl, uint64_t sm)
{
    /* (such a line is not code-like but after a frame line: it holds neither four blanks nor an
     * arrow at its start) */
    if (!s->prev_frame && sl > 2 && seg[0] == ' ' && ((seg[1] | 0x20) >= 'a' && (seg[1] | 0x20) <= 'z')) {
        /* Maybe a traceback's code line that lost its indentation: kept in case an exception line
         * follows (ml_oom_code_before). */
        size_t k = sl < sizeof(s->prev_code) - 1 ? sl : sizeof(s->prev_code) - 1;
        memcpy(s->prev_code, seg, k);
        s->prev_code[k] = '\0';
        s->prev_code_line = s->lineno;
    }
    if (!sl)
        return false;
    if (sm || s->pending || s->prev_frame ||
        (sl > 4 && seg[0] == ' ' && seg[1] == ' ' && seg[2] == ' ' && seg[3] == ' '))
        return true;
    /* a call chain written one call a line, each line starting with " → " (U+2192), which no
     * anchor finds (the anchors are ASCII): the frame tracker reads it (context_cues.c) */
    const char *a = skip_blank(seg);
    return a[0] == '\xe2' && a[1] == '\x86' && a[2] == '\x92' && a[3] == ' ';
}

/* Handle a wanted segment (segment_wanted), NUL-terminated in the line buffer (from, step_from:
 * handle_line's). */
static void handle_wanted(struct ml_oom_scanner *s, char *seg, size_t sl, uint64_t sm, size_t from, size_t step_from)
{
    handle_line(s, seg, sl, sm, from, step_from);
    if (sm & ONE_SHOT) /* stop looking for what is known for good */
        ml_oom_match_retire(ml_oom_matcher(s), ml_oom_known_groups(s->inc));
}

/* One segment with its anchor groups sm (none starting in seg[0..from)): handled when anything may
 * apply. Returns whether it was. */
static bool handle_segment(struct ml_oom_scanner *s, char *seg, size_t sl, uint64_t sm, size_t from)
{
    if (!segment_wanted(s, seg, sl, sm))
        return false;
    handle_wanted(s, seg, sl, sm, from, from);
    return true;
}

/* Decode a JSON string's escapes in place (\n \r \t \" \\ \/ \b \f \uXXXX, surrogate pairs);
 * decoding only shrinks. Returns the new length. */
static size_t json_unescape(char *p, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '\\' || i + 1 >= n) {
            p[o++] = p[i];
            continue;
        }
        char c = p[++i];
        static const char from[] = "nrt\"\\/bf", to[] = "\n\r\t\"\\/\b\f";
        const char *k = strchr(from, c);
        if (k && c) {
            p[o++] = to[k - from];
            continue;
        }
        uint32_t u = 0;
        size_t j = 0;
        for (; c == 'u' && j < 4 && i + 1 + j < n; j++) {
            char h = p[i + 1 + j];
            uint32_t d = is_digit(h)                              ? (uint32_t)(h - '0')
                         : (h | 0x20) >= 'a' && (h | 0x20) <= 'f' ? (uint32_t)((h | 0x20) - 'a' + 10)
                                                                  : 99;
            if (d > 15)
                break;
            u = u << 4 | d;
        }
        if (c != 'u' || j < 4 || (u >= 0xD800 && u < 0xE000)) {
            p[o++] = '\\'; /* not an escape this decoder reads: kept as written */
            p[o++] = c;
            continue;
        }
        i += 4;
        if (u < 0x80) {
            p[o++] = (char)u;
        } else if (u < 0x800) {
            p[o++] = (char)(0xC0 | u >> 6);
            p[o++] = (char)(0x80 | (u & 0x3F));
        } else {
            p[o++] = (char)(0xE0 | u >> 12);
            p[o++] = (char)(0x80 | (u >> 6 & 0x3F));
            p[o++] = (char)(0x80 | (u & 0x3F));
        }
    }
    p[o] = '\0';
    return o;
}

/* Does l[0..n) hold the two bytes of an escaped newline? */
static bool escaped_newline(const char *l, size_t n)
{
    for (const char *b = memchr(l, '\\', n); b; b = memchr(b + 1, '\\', (size_t)(l + n - b - 1)))
        if (b + 1 < l + n && b[1] == 'n')
            return true;
    return false;
}

/* A JSON record ('{"level": ..., "message": "...\n..."}'): its first non-blank byte opens an
 * object, or one opens near its start after a log prefix. */
static bool json_like(const char *l, size_t n)
{
    const char *b = skip_blank(l);
    if (*b == '{')
        return true;
    const char *o = memchr(l, '{', n < 64 ? n : 64);
    return o && o[1] == '"';
}

/* The seam of a hard wrap: a terminal (or a long line's piece) cut the text at a fixed width,
 * maybe inside an anchor ("out of mem" | "ory", "DefaultCPUAllo" | "cator"). When the previous
 * line looks cut there (a piece, a terminal's width, the width of the line before it, or either
 * line holds a message's anchor) and the cut falls inside a word, the anchors across the seam are
 * looked for; one found there and on neither side makes the line l (with anchor groups m) be read
 * with the previous line's end in front of it (seam_open, seam_across). */

/* A bit of prev_m above the groups: the previous line was read from the input's own bytes as they
 * are (window_line, not joined across its own seam), so that its tail holds no anchor its groups
 * lack. */
#define PREV_PLAIN ((uint64_t)1 << 63)
_Static_assert(G_COUNT <= 63, "PREV_PLAIN is a bit above the groups");

/* Does the previous line look cut (the line after it has its first segment n bytes long)? */
static inline bool seam_cut(const struct ml_oom_scanner *s, size_t n)
{
    size_t w = s->prev_w;
    if (s->pieces > 0)
        return true;
    switch (w) { /* terminals' usual widths */
    case 80:
    case 100:
    case 120:
    case 132:
    case 150:
    case 160:
    case 200:
    case 240: return true;
    default: break;
    }
    /* the widest lines of this input, seen more than once: a terminal's fixed width (it prints
     * nothing wider) */
    return w == s->prev_w2 || w == n ||
           (w == s->max_w && w < ML_OOM_WRAP_MIN + ML_OOM_WRAP_WIDTHS && s->widths[w - ML_OOM_WRAP_MIN] >= 2);
}

/* Is the seam before a line (its first segment n bytes long, with anchor groups m) looked at
 * (seam_across)? */
static inline bool seam_open(const struct ml_oom_scanner *s, size_t n, uint64_t m)
{
    size_t w = s->prev_w;
    /* (a pending message gathers this line anyway, and reads it with its blanks removed) */
    if (s->pending || !s->tail_len || !n || (!s->pieces && w < ML_OOM_WRAP_MIN))
        return false;
    return seam_cut(s, n) || ((m | s->prev_m) & EVENT_GROUPS);
}

/* The search across the seam when it is open (out of line: most lines are not looked at there):
 * the bytes to put in front of the line l (it reads only l[0..n) and writes nothing). */
__attribute__((noinline)) static size_t seam_across(const struct ml_oom_scanner *s, const char *l, size_t n, uint64_t m)
{
    bool cut = seam_cut(s, n), special, join = false;
    size_t h = n < ML_OOM_SEAM ? n : ML_OOM_SEAM;
    /* A message's anchor on neither side is either across the seam, where its last byte before
     * and its first after are next to each other in it, or on the previous line (a plain one, whose
     * tail is the bytes its anchors were found in: prev_m has it) or on this one (m has it). */
    const struct ml_oom_match *mt = ml_oom_matcher_c(s);
    if (!(s->prev_m & PREV_PLAIN) ||
        ml_oom_match_may_span(mt, (unsigned char)s->tail[s->tail_len - 1], (unsigned char)l[0])) {
        /* An anchor (31 bytes at most) across the seam has at most 30 bytes on either side. */
        char sb[2 * ML_OOM_SEAM + 1 + ML_OOM_PAD];
        size_t t0 = s->tail_len > 30 ? s->tail_len - 30 : 0, h0 = h < 30 ? h : 30;
        memcpy(sb, s->tail + t0, s->tail_len - t0);
        memcpy(sb + s->tail_len - t0, l, h0);
        memset(sb + s->tail_len - t0 + h0, 0, 1 + ML_OOM_PAD);
        uint64_t across = ml_oom_match_line(mt, sb, s->tail_len - t0 + h0, &special);
        join = (across & EVENT_GROUPS & ~s->prev_m & ~m) != 0;
    }
    if (!join && cut && (m & EVENT_GROUPS) && !(s->prev_m & EVENT_GROUPS)) {
        /* An anchor just after a fixed-width cut: its row's needles may start before the cut
         * ("error=2 : " | "out of memory"). */
        char hb[ML_OOM_SEAM + 1 + ML_OOM_PAD] = {0};
        memcpy(hb, l, h);
        join = (ml_oom_match_line(ml_oom_matcher_c(s), hb, h, &special) & EVENT_GROUPS) != 0;
    }
    return join ? s->tail_len : 0;
}

/* The bytes put in front of the line l in the line buffer across the seam (seam_across). */
static size_t seam(struct ml_oom_scanner *s, char *l, size_t n, uint64_t m)
{
    size_t front = seam_open(s, n, m) ? seam_across(s, l, n, m) : 0;
    if (front)
        memcpy(l - front, s->tail, front);
    return front;
}

/* A segment's anchor groups and the rest of ml_oom_match_segment's answers (match.h) for the
 * segment seg[0..n) of the line l: read off the window's marks when the line is a copy of a marked
 * window's bytes from offset base (mk), else by the per-segment pass. */
static uint64_t segment_groups(const struct ml_oom_scanner *s, struct ml_oom_marks *mk, size_t base, const char *l,
                               const char *seg, size_t n, size_t *len, bool *special, bool *bs, size_t *from)
{
    if (mk)
        return ml_oom_match_marked(ml_oom_matcher_c(s), mk, base, l, (size_t)(seg - l), (size_t)(seg - l) + n, len,
                                   special, bs, from);
    return ml_oom_match_segment(ml_oom_matcher_c(s), seg, n, len, special, bs, from);
}

/* After the segments of a line (or a piece) n bytes wide without its trailing CRs, with anchor
 * groups mask, any of them handled or not: the frame window and what the next line's seam reads. */
static inline void line_end(struct ml_oom_scanner *s, size_t n, uint64_t mask, bool any)
{
    if (!any) {
        s->prev_frame = false;
        if (s->after_ev >= 0 && s->lineno > s->after_until)
            ml_oom_close_after(s);
    }
    s->prev_w2 = s->prev_w;
    s->prev_w = n;
    if (n >= ML_OOM_WRAP_MIN && n < ML_OOM_WRAP_MIN + ML_OOM_WRAP_WIDTHS && s->widths[n - ML_OOM_WRAP_MIN] < 255)
        s->widths[n - ML_OOM_WRAP_MIN]++;
    if (n > s->max_w)
        s->max_w = n;
    s->prev_m = mask;
}

/* One piece of a physical line in s->line + ML_OOM_SEAM, [0..n): the whole line, or (more) a
 * piece of a line longer than ML_OOM_LINE_MAX whose rest follows. mk: the marks of the window the
 * whole line was copied from (its offset base), or NULL. */
static void process_piece(struct ml_oom_scanner *s, size_t n, bool more, struct ml_oom_marks *mk, size_t base)
{
    char *l = s->line + ML_OOM_SEAM;
    /* A whole line (the usual case) is first matched up to its first CR: when that segment is the
     * line and holds no backslash, it cannot be a JSON record with escaped newlines, and the tests
     * for one (json_like, escaped_newline) are spared. */
    bool whole = s->pieces == 0 && !more;
    if (s->pieces == 0) {
        s->lineno++;
        s->inc->lines++;
        if (more)
            s->inc->truncated_lines++;
        s->json_line = whole ? ML_JSON_LINE_NO : json_like(l, n) ? ML_JSON_LINE_RECORD : ML_JSON_LINE_NO;
    }
    s->line_bytes += n;
    size_t n_in = n;
    if (!more) {
        if (s->line_bytes > s->inc->longest_line)
            s->inc->longest_line = s->line_bytes;
        while (n && (l[n - 1] == '\r'))
            n--;
    }
    l[n] = '\0';
    size_t sl0 = 0, from0 = 0;
    bool special0 = false, bs0 = true;
    uint64_t sm0 = whole ? segment_groups(s, mk, base, l, l, n, &sl0, &special0, &bs0, &from0) : 0;
    if (whole && (bs0 || sl0 != n)) /* (n_in: the bytes it looked at before, CRs included) */
        s->json_line = json_like(l, n_in) ? ML_JSON_LINE_RECORD : ML_JSON_LINE_NO;
    bool json = s->json_line != ML_JSON_LINE_NO && escaped_newline(l, n);
    if (json) {
        if (s->json_line == ML_JSON_LINE_RECORD)
            s->inc->json_lines++;
        s->json_line = ML_JSON_LINE_COUNTED;
        n = json_unescape(l, n);
    }
    /* Carriage returns split a tqdm line into its updates, newlines a JSON record into its lines:
     * each is a logical line. */
    char *end = l + n;
    bool any = false;
    uint64_t mask = 0;
    char tail[ML_OOM_SEAM]; /* the end of this line, for the seam of the next one */
    size_t tail_len = n < ML_OOM_SEAM ? n : ML_OOM_SEAM;
    if (tail_len == ML_OOM_SEAM)
        memcpy(tail, end - ML_OOM_SEAM, ML_OOM_SEAM); /* (a fixed size: a few moves) */
    else
        memcpy(tail, l, tail_len);
    for (char *seg = l; seg < end;) {
        char *e;
        size_t sl, from = 0; /* (no anchor starts in seg[0..from)) */
        uint64_t sm;
        if (json) {
            for (e = seg; e < end && *e != '\r' && *e != '\n'; e++)
                ;
            *e = '\0';
            sl = (size_t)(e - seg);
            sm = match_segment(s, seg, &sl);
        } else {
            /* one pass: the segment's end (the next CR) and its anchors (the first one's is done) */
            bool special = special0, bs;
            if (whole && seg == l)
                sl = sl0, sm = sm0, from = from0;
            else
                sm = segment_groups(s, mk, base, l, seg, (size_t)(end - seg), &sl, &special, &bs, &from);
            e = seg + sl;
            *e = '\0';
            if (special) {
                sm = clean_segment(s, seg, &sl, sm);
                from = 0;
            }
        }
        if (seg == l) {
            size_t front = seam(s, seg, sl, sm);
            if (front) {
                from = 0;
                seg -= front;
                sl += front;
                sm = match_segment(s, seg, &sl);
            }
        }
        mask |= sm;
        any |= handle_segment(s, seg, sl, sm, from);
        seg = e + 1;
    }
    line_end(s, n, mask, any);
    s->tail_len = tail_len;
    memcpy(s->tail, tail, ML_OOM_SEAM);
    s->pieces = more ? s->pieces + 1 : 0;
    if (!more)
        s->line_bytes = 0;
}

/* The line buffer is full and the line goes on: read a piece, cut after the last escaped newline
 * of a JSON record or the last blank in its last ML_OOM_MSG_MAX bytes (else at the end), and keep
 * the rest. */
static void split_line(struct ml_oom_scanner *s)
{
    char *l = s->line + ML_OOM_SEAM;
    size_t n = s->len, q = n, lo = n - ML_OOM_MSG_MAX;
    for (size_t i = n - 1; i > lo && q == n; i--)
        if (l[i - 1] == '\\' && l[i] == 'n')
            q = i + 1;
    for (size_t i = n - 1; i > lo && q == n; i--)
        if (l[i] == ' ')
            q = i + 1;
    char keep[ML_OOM_MSG_MAX];
    size_t k = n - q;
    memcpy(keep, l + q, k);
    process_piece(s, q, true, NULL, 0);
    memcpy(s->line + ML_OOM_SEAM, keep, k);
    s->len = k;
}

void ml_oom_scan_begin(struct ml_oom_scanner *s)
{
    s->file = s->inc->n_files++;
    s->lineno = 0;
    s->len = 0;
    s->pieces = 0;
    s->line_bytes = 0;
    s->tail_len = s->prev_w = s->prev_w2 = s->max_w = 0;
    memset(s->widths, 0, sizeof(s->widths));
    s->prev_m = 0;
    s->pending = false;
    ml_oom_context_begin(s);
}

/* The lines of a marked window read by window_line: the marks, and where the last line read ends
 * (its tail, copied into s->tail only when it is read: by a seam, another reader, or at the end). */
struct window {
    struct ml_oom_marks *mk;
    const char *tail; /* the last line's end in the window (NULL: s->tail holds it) */
    uint64_t lines;   /* lines read, and the longest, for the incident at the window's end (only */
    size_t longest;   /* the report reads them) */
};

/* s->tail from the window, where the last line left it there. */
static inline void tail_settle(struct ml_oom_scanner *s, struct window *wd)
{
    if (wd->tail) {
        memcpy(s->tail, wd->tail - s->tail_len, s->tail_len);
        wd->tail = NULL;
    }
}

/* The next CR of a line (from the rare bytes' bitmap, which holds no other rare byte in it) at or
 * after bit *b of word *w, as an offset in the line (base: its offset in the window, n: its length
 * without trailing CRs); n when there is none. */
static inline size_t next_cr(const struct ml_oom_marks *mk, size_t base, size_t n, size_t *w, uint64_t *b)
{
    for (;;) {
        if (*b) {
            size_t at = *w * 64 + (size_t)__builtin_ctzll(*b) - base;
            *b &= *b - 1;
            return at < n ? at : n;
        }
        if (++*w * 64 >= base + n)
            return n;
        *b = mk->rare[*w];
    }
}

/* Copy the line p[0..n) into the line buffer, NUL-terminated (its segments' CRs are made NULs as
 * they are read). */
static inline char *line_copy(struct ml_oom_scanner *s, const char *p, size_t n)
{
    char *l = s->line + ML_OOM_SEAM;
    memcpy(l, p, n);
    l[n] = '\0';
    return l;
}

/* A whole line p[0..n) of a marked window, from its offset base, whose rare bytes are CRs alone
 * (no NUL, ESC, '^' or backslash: nothing to clean, no JSON record to decode): what process_piece
 * does with it, its segments' answers read off the marks, and the line copied into the line
 * buffer only when a segment of it is handled or joined across a seam (a line with a CR inside,
 * whose segments are mostly tqdm updates, is copied first). Most lines of a long log are read
 * here. Returns false, having done nothing, for a line with another rare byte. */
static bool window_line(struct ml_oom_scanner *s, struct window *wd, const char *p, size_t base, size_t n)
{
    struct ml_oom_marks *mk = wd->mk;
    size_t w0 = base / 64;
    uint64_t b0 = mk->rare[w0] & ~(uint64_t)0 << (base % 64);
    bool cr = false; /* a CR in the line */
    for (size_t w = w0; w * 64 < base + n; w++) {
        for (uint64_t b = w == w0 ? b0 : mk->rare[w]; b; b &= b - 1) {
            size_t at = w * 64 + (size_t)__builtin_ctzll(b) - base;
            if (at >= n)
                break;
            if (p[at] != '\r')
                return false;
            cr = true;
        }
    }
    s->lineno++;
    wd->lines++;
    if (n > wd->longest)
        wd->longest = n;
    while (cr && n && p[n - 1] == '\r')
        n--;
    /* a CR inside: the line is cut into segments at each, and copied first */
    size_t cw = w0, e = n;
    uint64_t cb = b0;
    char *l = NULL; /* the line's copy in the line buffer, once made */
    if (cr) {
        e = next_cr(mk, base, n, &cw, &cb);
        if (e < n)
            l = line_copy(s, p, n);
    }
    const struct ml_oom_match *mt = ml_oom_matcher_c(s);
    uint64_t live = ~mt->retired, mask = 0;
    uint32_t h = mk->cursor;
    bool any = false, plain = true;
    for (size_t a = 0; a < n;) {
        size_t sl = e - a, from = sl, step_from = sl;
        /* the anchors that start in [a, e) (none holds a CR or newline: each ends before e) */
        uint64_t sm = 0;
        while (h < mk->n_hits && mk->hit_at[h] < base + a)
            h++;
        for (; h < mk->n_hits && mk->hit_at[h] < base + e; h++) {
            uint64_t g = mk->hit_groups[h] & live;
            if (g && from == sl)
                from = mk->hit_at[h] - base - a;
            if ((g & GB(G_STEP)) && step_from == sl)
                step_from = mk->hit_at[h] - base - a;
            sm |= g;
        }
        char *seg = NULL;
        if (l) {
            l[e] = '\0';
            seg = l + a;
        }
        if (!a && seam_open(s, sl, sm)) {
            tail_settle(s, wd);
            size_t front = seam_across(s, p, sl, sm);
            if (front) {
                plain = false;
                if (!l)
                    l = line_copy(s, p, n);
                memcpy(l - front, s->tail, front);
                seg = l - front;
                sl += front;
                from = step_from = 0;
                sm = match_segment(s, seg, &sl);
            }
        }
        mask |= sm;
        if (segment_wanted(s, seg ? seg : p + a, sl, sm)) {
            if (!seg) /* (a single segment: the line) */
                seg = l = line_copy(s, p, n);
            if (seg >= l) { /* (the input's own bytes, with no seam's front before them) */
                s->seg_src = p + (seg - l);
                s->seg_line = seg;
                s->seg_len = sl;
            }
            handle_wanted(s, seg, sl, sm, from, step_from);
            s->seg_src = NULL;
            live = ~mt->retired;
            any = true;
        }
        a = e + 1;
        if (a < n)
            e = next_cr(mk, base, n, &cw, &cb);
    }
    mk->cursor = h;
    line_end(s, n, plain ? mask | PREV_PLAIN : mask, any);
    s->tail_len = n < ML_OOM_SEAM ? n : ML_OOM_SEAM;
    wd->tail = p + n;
    return true;
}

/* The whole lines of a window of p[0..n) that starts at a line's start: the window is marked in one
 * pass (match.h; ahead: its marks made ahead, else NULL), and each line inside it is read with its answers off the marks (window_line; the
 * others copied and read by process_piece). Returns the bytes taken (up to the window's last
 * newline; 0 when it holds none). */
_Static_assert(ML_OOM_WINDOW <= ML_OOM_LINE_MAX, "a window's line is copied whole into the line buffer");

static size_t scan_window(struct ml_oom_scanner *s, const char *p, size_t n, struct ml_oom_marks *ahead)
{
    struct window wd;
    struct ml_oom_marks own;
    wd.tail = NULL;
    wd.lines = 0;
    wd.longest = 0;
    wd.mk = ahead ? ahead : &own;
    if (!ahead)
        ml_oom_match_marks(ml_oom_matcher_c(s), p, n < ML_OOM_WINDOW ? n : ML_OOM_WINDOW, &own);
    size_t start = 0, marked = wd.mk->n; /* (kept here: the lines read change only the cursor) */
    for (size_t i = 0; i < (marked + 63) / 64; i++) {
        for (uint64_t b = wd.mk->nl[i]; b; b &= b - 1) {
            size_t e = i * 64 + (size_t)__builtin_ctzll(b);
            if (e >= marked) /* (the window ended early: its list was full) */
                goto done;
            if (!window_line(s, &wd, p + start, start, e - start)) {
                tail_settle(s, &wd);
                memcpy(s->line + ML_OOM_SEAM, p + start, e - start);
                process_piece(s, e - start, false, wd.mk, start);
            }
            start = e + 1;
        }
    }
done:
    tail_settle(s, &wd);
    s->inc->lines += wd.lines;
    if (wd.longest > s->inc->longest_line)
        s->inc->longest_line = wd.longest;
    return start;
}

/* The marks of a's window that starts at offset off of the chunk (*i: the first of a's windows
 * not passed yet), or NULL. */
static struct ml_oom_marks *ahead_window(struct ml_oom_ahead *a, uint32_t *i, size_t off)
{
    while (*i < a->n && a->start[*i] < off)
        ++*i;
    if (*i < a->n && a->start[*i] == off)
        return (struct ml_oom_marks *)(void *)a->marks[(*i)++];
    return NULL;
}

static void scan_chunk(struct ml_oom_scanner *s, const void *data, size_t n, struct ml_oom_ahead *a)
{
    const char *p = data, *p0 = data;
    s->inc->bytes += n;
    bool wide = ml_oom_matcher_c(s)->wide;
    uint32_t ai = 0;
    while (n) {
        if (wide && !s->len && !s->pieces) {
            /* at a line's start: the lines of a window at a time; the line it cuts starts the next
             * window, and only a line longer than a window or cut by the chunk's end is read below */
            size_t took = scan_window(s, p, n, a ? ahead_window(a, &ai, (size_t)(p - p0)) : NULL);
            p += took;
            n -= took;
            if (!n)
                return;
            if (took)
                continue;
        }
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        for (;;) {
            size_t room = ML_OOM_LINE_MAX - s->len;
            size_t c = take < room ? take : room;
            memcpy(s->line + ML_OOM_SEAM + s->len, p, c);
            s->len += c;
            p += c;
            n -= c;
            take -= c;
            if (!take)
                break;
            split_line(s); /* full, and the line goes on */
        }
        if (!nl)
            return;
        process_piece(s, s->len, false, NULL, 0);
        s->len = 0;
        p++;
        n--;
    }
}

void ml_oom_scan(struct ml_oom_scanner *s, const void *data, size_t n)
{
    ml_oom_scan_ahead(s, data, n, NULL);
}

void ml_oom_scan_ahead(struct ml_oom_scanner *s, const void *data, size_t n, struct ml_oom_ahead *a)
{
    /* a copy that still looks for every anchor the scanner does (its marks may hold more, which
     * window_line and ml_oom_match_marked drop: they read a hit's groups through ~retired) */
    const struct ml_oom_match *mine = ml_oom_matcher_c(s);
    if (a && (!a->copied || !mine->wide ||
              (((const struct ml_oom_match *)(const void *)a->matcher)->retired & ~mine->retired)))
        a = NULL;
    scan_chunk(s, data, n, a);
    ml_oom_step_ref_settle(s); /* (the step's line may lie in data, which the caller reuses) */
}

void ml_oom_ahead_begin(const struct ml_oom_scanner *s, struct ml_oom_ahead *a)
{
    const struct ml_oom_match *mine = ml_oom_matcher_c(s);
    if (!a->copied || ((const struct ml_oom_match *)(const void *)a->matcher)->retired != mine->retired)
        memcpy(a->matcher, s->matcher, sizeof(a->matcher));
    a->copied = true;
    a->n = 0;
}

void ml_oom_ahead_mark(struct ml_oom_ahead *a, const char *p, size_t n, bool line_start)
{
    const struct ml_oom_match *mt = (const struct ml_oom_match *)(const void *)a->matcher;
    a->n = 0;
    if (!a->copied || !mt->wide)
        return;
    /* the windows scan_chunk reads, in its order: one at each line start it reaches with no line
     * pending, a window's whole lines taken at a time, and a line no window holds whole read on
     * its own to its newline */
    size_t off = 0;
    if (!line_start) {
        const char *nl = memchr(p, '\n', n);
        if (!nl)
            return;
        off = (size_t)(nl - p) + 1;
    }
    while (off < n && off <= UINT32_MAX && a->n < ML_OOM_AHEAD_WINDOWS) {
        struct ml_oom_marks *k = (struct ml_oom_marks *)(void *)a->marks[a->n];
        ml_oom_match_marks(mt, p + off, n - off < ML_OOM_WINDOW ? n - off : ML_OOM_WINDOW, k);
        a->start[a->n++] = (uint32_t)off;
        size_t took = ml_oom_marks_took(k);
        if (!took) {
            const char *nl = memchr(p + off, '\n', n - off);
            if (!nl)
                return;
            took = (size_t)(nl - (p + off)) + 1;
        }
        off += took;
    }
}

void ml_oom_scan_end(struct ml_oom_scanner *s)
{
    if (s->len || s->pieces)
        process_piece(s, s->len, false, NULL, 0);
    s->len = 0;
    ml_oom_close_message(s);
    ml_oom_close_after(s);
    ml_oom_finish_events(s);
}

enum ml_status ml_oom_scan_input(struct ml_oom_scanner *s, long (*read)(int h, char *buf, size_t n, struct ml_diag *d),
                                 int h, char *chunk, size_t n, struct ml_diag *d)
{
    ml_oom_scan_begin(s);
    long got;
    while ((got = read(h, chunk, n, d)) > 0)
        ml_oom_scan(s, chunk, (size_t)got);
    ml_oom_scan_end(s);
    return got < 0 ? d->code : ML_OK;
}

uint64_t ml_oom_anchor_groups(struct ml_oom_scanner *s, const char *text, size_t n)
{
    if (n > ML_OOM_LINE_MAX)
        n = ML_OOM_LINE_MAX;
    char *l = s->line + ML_OOM_SEAM;
    memcpy(l, text, n);
    l[n] = '\0';
    bool special;
    return ml_oom_match_line(ml_oom_matcher_c(s), l, n, &special);
}

void ml_oom_scan_buffer(struct ml_oom_scanner *s, const void *data, size_t n)
{
    ml_oom_scan_begin(s);
    ml_oom_scan(s, data, n);
    ml_oom_scan_end(s);
}
