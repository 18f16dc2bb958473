/*
 * context.c - the context tracker of the OOM scanner (scanner.h): what the lines around the
 * events say, and the events stored with it.
 *
 * Frames and code lines give the phase (the field guide's analysis 4, "the stack frame at the
 * raise tells the phase"): recent cues are kept in a ring for the frames before an event, and a
 * window after it collects a traceback that follows. Progress bars, step counters, saves,
 * evaluation, loading and resuming give the timing (analysis 5). Library versions, vLLM's
 * engine line, DeepSpeed's cache-flush and see_memory_usage lines, vLLM's profiling lines,
 * launcher lines (torchrun's failure summary, Ray's "[repeated Nx]") and stack and platform
 * flags fill the incident (reference/oom-messages.md, A9-A11).
 */
#include <stdio.h>

#include "scanner.h"

/* ---- evidence ---------------------------------------------------------------------------- */

static void ref_set(struct ml_oom_ref *r, uint32_t file, uint64_t line, int64_t step, const char *text)
{
    r->file = file;
    r->line = line;
    r->step = step;
    ml_oom_excerpt(r->text, sizeof(r->text), text, strlen(text));
}

/* Like ref_set, but keeps raw bytes (cheap, for lines that are overwritten at every step);
 * ref_clean turns them into an excerpt when an event takes a copy. n: strlen(text). */
static void ref_raw(struct ml_oom_ref *r, uint32_t file, uint64_t line, int64_t step, const char *text, size_t n)
{
    r->file = file;
    r->line = line;
    r->step = step;
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

/* "[rank3]:" / "[Rank 3]" / "rank=3" near the start of a line: the rank, -1 if none. */
int32_t ml_oom_line_rank(const char *l, uint64_t m, const char **body)
{
    *body = l;
    /* (a spelling whose anchor the line lacks is not looked for) */
    const char *p = (m & GB(G_RANK)) ? find(l, "[rank") : NULL;
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
    p = (m & GB(G_RANK_CAP)) ? find(l, "[Rank ") : NULL;
    if (p && p - l < 120 && is_digit(p[6])) {
        uint64_t r = 0;
        ml_oom_parse_u64(p + 6, &r);
        return r < 100000 ? (int32_t)r : -1;
    }
    p = (m & GB(G_RANK_EQ)) ? find(l, " rank=") : NULL;
    if (p && p - l < 120 && is_digit(p[6])) {
        uint64_t r = 0;
        ml_oom_parse_u64(p + 6, &r);
        return r < 100000 ? (int32_t)r : -1;
    }
    return -1;
}

/* ---- events ------------------------------------------------------------------------------ */

static bool same_numbers(const struct ml_oom_event *a, const struct ml_oom_event *b)
{
    if (a->kind != b->kind || a->device != b->device || a->has != b->has)
        return false;
    if (a->kind == ML_OOM_HOST_SIGKILL)
        return a->file == b->file;
    if (!a->has)
        return a->file == b->file && (b->line - a->line) < 50;
    return a->requested == b->requested && a->total == b->total && a->free == b->free && a->allocated == b->allocated &&
           a->reserved_unalloc == b->reserved_unalloc && a->reserved == b->reserved &&
           a->max_seq_len == b->max_seq_len && a->kv_tokens == b->kv_tokens;
}

enum cue_flag {
    CF_SAVE = 1,
    CF_EVAL = 2,
    CF_FORMAT = 4,
    CF_ZERO3 = 8,
    CF_EAGER = 16,
    CF_FP32 = 32,
    CF_CKPT = 64,
    CF_NEW = 128 /* a row or reading added for issue 13 (validation/DIAGNOSE.md's strict leave-one-out) */
};

/* Phase resolution from the cues of one window: the innermost cue of the highest level. */
static void resolve_phase(struct ml_oom_event *e, const struct ml_oom_cue *best_before,
                          const struct ml_oom_cue *best_after, const uint16_t *old)
{
    for (int lvl = 3; lvl >= 1; lvl--) {
        const struct ml_oom_cue *c = best_before[lvl].line  ? &best_before[lvl]
                                     : best_after[lvl].line ? &best_after[lvl]
                                                            : NULL;
        if (c) {
            e->phase = (enum ml_oom_phase)c->phase;
            e->phase_ref.file = e->file;
            e->phase_ref.line = c->line;
            e->phase_ref.step = -1;
            ml_oom_excerpt(e->phase_ref.text, sizeof(e->phase_ref.text), c->text, strnlen(c->text, sizeof(c->text)));
            (void)snprintf(e->phase_cue, sizeof(e->phase_cue), "%s", c->name);
            /* new only when no cue that predates issue 13 gives the same (old: per level, phases) */
            e->phase_new = (c->flags & CF_NEW) && !(old[lvl] >> c->phase & 1);
            return;
        }
    }
}

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

/* The default phase of a kind that names its own (vLLM start-up errors, NCCL). */

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

/* Does a frame of episode a, inner to one of b, name the step? Graph capture runs dummy batches
 * and the sampler (their frames are inner to it), so a capture frame names the step wherever it
 * is; then the sampler inside a profile run; else the innermost. */
static bool episode_over(uint8_t a, uint8_t b)
{
    if (b == ML_EP_GRAPH)
        return false;
    if (b == ML_EP_SAMPLER)
        return a == ML_EP_GRAPH;
    return true;
}

static bool engine_seen(const struct ml_incident *inc)
{
    return inc->saw_vllm || inc->saw_sglang || inc->saw_tgi || inc->saw_engine_proc;
}

/* The start-up step an event failed in: a serving engine's start-up is its phase, whatever
 * generic frame (a model's forward, a loader's) the traceback ends in (issue 24). A message that
 * names its own phase (a run-time one) keeps it. */
static void set_episode(struct ml_oom_event *e, uint8_t ep, uint32_t file, uint64_t line, const char *text, size_t n)
{
    if (ml_oom_kind_phase(e->kind) != ML_OPH_UNKNOWN && ml_oom_kind_phase(e->kind) != ML_OPH_SERVING_STARTUP)
        return;
    if (e->phase == ML_OPH_SERVING_RUNTIME || e->phase == ML_OPH_COMMUNICATION || e->phase == ML_OPH_BACKWARD ||
        e->phase == ML_OPH_OPTIMIZER_STEP || e->phase == ML_OPH_CHECKPOINT_SAVE || e->phase == ML_OPH_EVAL)
        return;
    e->episode = (enum ml_serve_episode)ep;
    ref_raw(&e->episode_ref, file, line, -1, text, n);
    ref_clean(&e->episode_ref);
    if (e->phase != ML_OPH_SERVING_STARTUP) {
        e->phase = ML_OPH_SERVING_STARTUP;
        e->phase_ref = e->episode_ref;
        (void)snprintf(e->phase_cue, sizeof(e->phase_cue), "%s", ml_oom_episode_name(e->episode));
        e->phase_new = true;
    }
}

void ml_oom_commit(struct ml_oom_scanner *s, struct ml_oom_event *e)
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
        start = s->last_event_line > (e->line > 60 ? e->line - 60 : 0) ? s->last_event_line
                                                                       : (e->line > 60 ? e->line - 60 : 0);
    uint8_t flags = 0;
    uint16_t old[4] = {0};
    const struct ml_oom_cue *ep = NULL;
    bool other_step = false; /* a start-up step other than the sampler's */
    for (uint32_t i = 0; i < s->ring_n; i++) {
        const struct ml_oom_cue *c = &s->ring[(s->ring_head + ML_OOM_CUE_RING - s->ring_n + i) % ML_OOM_CUE_RING];
        if (c->line <= start || c->line > e->line)
            continue;
        flags |= c->flags;
        if (c->episode && (!ep || episode_over(c->episode, ep->episode)))
            ep = c;
        other_step |= c->episode && c->episode != ML_EP_SAMPLER;
        if (c->level)
            best[c->level] = *c;
        if (c->level && !(c->flags & CF_NEW))
            old[c->level] |= (uint16_t)(1u << c->phase);
    }
    apply_flags(e, flags);
    struct ml_oom_cue none[4];
    memset(none, 0, sizeof(none));
    resolve_phase(e, best, none, old);
    if (e->phase == ML_OPH_UNKNOWN)
        e->phase = ml_oom_kind_phase(e->kind);
    /* the sampler runs at run time too: it is a start-up step only inside one */
    if (ep && ep->episode == ML_EP_SAMPLER && !other_step && !s->episode)
        ep = NULL;
    if (!engine_seen(inc))
        ep = NULL;
    if (ep)
        set_episode(e, ep->episode, e->file, ep->line, ep->text, strnlen(ep->text, sizeof(ep->text)));
    else if (s->episode && engine_seen(inc))
        set_episode(e, s->episode, s->episode_ref.file, s->episode_ref.line, s->episode_ref.text,
                    strnlen(s->episode_ref.text, sizeof(s->episode_ref.text)));
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
            o->phase_new = e->phase_new;
            o->phase_ref = e->phase_ref;
            memcpy(o->phase_cue, e->phase_cue, sizeof(o->phase_cue));
        }
        s->after_ev = (int32_t)i;
        s->after_until = s->lineno + ML_OOM_AFTER_LINES;
        memset(s->after_best, 0, sizeof(s->after_best));
        memset(&s->after_ep, 0, sizeof(s->after_ep));
        memset(s->after_old, 0, sizeof(s->after_old));
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
    memset(&s->after_ep, 0, sizeof(s->after_ep));
    memset(s->after_old, 0, sizeof(s->after_old));
    s->after_flags = 0;
    inc->n_events++;
}

/* The frames after it fill the phase if still unknown. */
void ml_oom_close_after(struct ml_oom_scanner *s)
{
    if (s->after_ev < 0)
        return;
    struct ml_oom_event *e = &s->inc->ev[s->after_ev];
    apply_flags(e, s->after_flags);
    if (!e->episode && s->after_ep.episode && s->after_ep.episode != ML_EP_SAMPLER && engine_seen(s->inc))
        set_episode(e, s->after_ep.episode, e->file, s->after_ep.line, s->after_ep.text,
                    strnlen(s->after_ep.text, sizeof(s->after_ep.text)));
    if (e->phase == ML_OPH_UNKNOWN || e->phase == ml_oom_kind_phase(e->kind)) {
        struct ml_oom_cue none[4];
        memset(none, 0, sizeof(none));
        enum ml_oom_phase before = e->phase;
        e->phase = ML_OPH_UNKNOWN;
        resolve_phase(e, none, s->after_best, s->after_old);
        if (e->phase == ML_OPH_UNKNOWN || e->phase == before)
            e->phase_new = false; /* (the kind's own phase) */
        if (e->phase == ML_OPH_UNKNOWN)
            e->phase = before;
    } else {
        /* The frames before gave a phase; a higher-level cue after it (an episode such as a
         * save or generate around another rank's identical traceback) does not override it. */
    }
    s->after_ev = -1;
}

/* ---- versions, progress, saves, evaluation, loading, DeepSpeed and vLLM lines ------------- */

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
        char key[16]; /* as written before "version" or "==" (case as written) */
        char name[16];
    } libs[] = {
        {"torch", "torch"},
        {"PyTorch", "torch"},
        {"pytorch", "torch"},
        {"transformers", "transformers"},
        {"Transformers", "transformers"},
        {"deepspeed", "deepspeed"},
        {"DeepSpeed", "deepspeed"},
        {"vllm", "vllm"},
        {"vLLM", "vllm"},
        {"sglang", "sglang"},
        {"peft", "peft"},
        {"trl", "trl"},
        {"accelerate", "accelerate"},
        {"NCCL", "nccl"},
        {"nccl", "nccl"},
        {"flash-attn", "flash_attn"},
        {"flash_attn", "flash_attn"},
        {"ROCm", "rocm"},
        {"CUDA", "cuda"},
        {"bitsandbytes", "bitsandbytes"},
        {"llamafactory", "llamafactory"},
        {"LLaMA-Factory", "llamafactory"},
        {"torch_npu", "torch_npu"},
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

/* Step counters and progress bars (len: strlen(l); m: the line's anchor groups). Returns true when
 * the line was a progress line. */
static bool handle_progress(struct ml_oom_scanner *s, const char *l, size_t len, uint64_t m)
{
    int64_t step = -1;
    /* A save line names its step ("checkpoint-100", "global_step100") but is not progress. */
    if (m & GB(G_SAVE))
        return false;
    const char *bar = (m & GB(G_TQDM)) ? find2(l, '%', '|') : NULL;
    if (bar) {
        /* tqdm: "desc:  5%|###   | 101/2000 [...]"; only training bars count. */
        const char *d = bar;
        while (d > l && d[-1] != '\r' && d[-1] != '\n')
            d--;
        char desc[64];
        size_t dn = (size_t)(bar - d) < sizeof(desc) - 1 ? (size_t)(bar - d) : sizeof(desc) - 1;
        memcpy(desc, d, dn);
        desc[dn] = '\0';
        const char *end = find2(bar + 2, '|', ' ');
        uint64_t cur = 0;
        if (end && ml_oom_parse_u64(end + 2, &cur) && end[2] != '?') {
            /* HF Trainer's bar has no description (only the percentage): skip the word tests. */
            bool words = false;
            for (size_t k = 0; k < dn && !words; k++)
                words = (desc[k] >= 'a' && desc[k] <= 'z') || (desc[k] >= 'A' && desc[k] <= 'Z');
            bool eval = words && (find(desc, "val") || find(desc, "redict"));
            bool other = words && !eval &&
                         (find(desc, "oading") || find(desc, "okeniz") || find(desc, "onverting") ||
                          find(desc, "Map") || find(desc, "ilter") || find(desc, "ownload") || find(desc, "ataset") ||
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
#define KEY(w)                                                                                                         \
    {                                                                                                                  \
        w, sizeof(w) - 1                                                                                               \
    }
        static const struct {
            char s[12];
            size_t n;
        } keys[] = {KEY("step"), KEY("Step"), KEY("iteration"), KEY("Iteration"), KEY("iter ")};
#undef KEY
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && step < 0; i++) {
            size_t k = keys[i].n;
            for (const char *p = find(l, keys[i].s); p && step < 0; p = find(p + 1, keys[i].s)) {
                /* A word of its own ("max_steps", "_optimizer_step" and "steps" are not counters);
                 * "global_step100" and "global_step=7" are. */
                bool global = i == 0 && p - l >= 7 && !memcmp(p - 7, "global_", 7);
                if (!global && p > l && is_word(p[-1]))
                    continue;
                if (keys[i].s[k - 1] != ' ' && is_word(p[k]) && !(global && is_digit(p[k])))
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
    ref_raw(&s->step_ref, s->file, s->lineno, step >= 0 ? step : s->step, l, len);
    s->progress_since_save++;
    s->progress_since_eval++;
    return true;
}

static void handle_save(struct ml_oom_scanner *s, const char *l, bool frame)
{
    if (frame)
        return;
    bool saving = find(l, "Saving") || find(l, "saving") || find(l, "saved") || find(l, "is ready now");
    bool what =
        find(l, "heckpoint") || find(l, "model") || find(l, "adapter") || find(l, "weights") || find(l, "global_step");
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

/* ---- frames ------------------------------------------------------------------------------ */

/* Phase cues in frames and code lines (analysis 4). */
struct cue_def {
    char pat[44];
    uint8_t phase;
    uint8_t level;
    uint8_t flags;
    uint8_t episode; /* enum ml_serve_episode: a step of a serving engine's start-up */
};

/* Function names, matched exactly against "in FUNC" / "FUNC" of a frame. */
static const struct cue_def fn_cues[] = {
    /* episodes */
    {"from_pretrained", ML_OPH_LOAD, 3, 0, 0},
    {"_load_pretrained_model", ML_OPH_LOAD, 3, 0, 0},
    {"_load_state_dict_into_meta_model", ML_OPH_LOAD, 3, 0, 0},
    {"load_checkpoint_in_model", ML_OPH_LOAD, 3, 0, 0},
    {"load_model", ML_OPH_LOAD, 3, 0, 0},
    {"load_weights", ML_OPH_LOAD, 3, 0, 0},
    {"dispatch_model", ML_OPH_LOAD, 3, 0, 0},
    {"_move_model_to_device", ML_OPH_LOAD, 3, CF_NEW, 0}, /* Trainer.__init__ places the model */
    /* device placement (issue 24): Module.to / .cuda / .half walk the parameters in _apply */
    {"_apply", ML_OPH_LOAD, 3, CF_NEW, 0},
    {"convert", ML_OPH_LOAD, 3, CF_NEW, 0},
    {"load_sharded_checkpoint", ML_OPH_LOAD, 3, 0, 0},
    {"_load_from_checkpoint", ML_OPH_LOAD, 3, 0, 0},
    {"_load_optimizer_and_scheduler", ML_OPH_LOAD, 3, 0, 0},
    {"_save_checkpoint", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"save_model", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"save_checkpoint", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"_zero3_consolidated_16bit_state_dict", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE | CF_ZERO3, 0},
    {"save_pretrained", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"_save_optimizer_and_scheduler", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"get_state_dict", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"save_16bit_model", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"_save_zero_checkpoint", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"_save", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"evaluate", ML_OPH_EVAL, 3, CF_EVAL, 0},
    {"evaluation_loop", ML_OPH_EVAL, 3, CF_EVAL, 0},
    {"prediction_loop", ML_OPH_EVAL, 3, CF_EVAL, 0},
    {"prediction_step", ML_OPH_EVAL, 3, CF_EVAL, 0},
    {"predict", ML_OPH_EVAL, 3, CF_EVAL, 0},
    {"nested_concat", ML_OPH_EVAL, 3, CF_EVAL, 0},
    {"torch_pad_and_concatenate", ML_OPH_EVAL, 3, CF_EVAL | CF_NEW, 0},
    {"_nested_gather", ML_OPH_EVAL, 3, CF_EVAL | CF_NEW, 0},
    {"generate", ML_OPH_GENERATE, 3, 0, 0},
    {"_sample", ML_OPH_GENERATE, 3, 0, 0},
    {"sample", ML_OPH_GENERATE, 3, 0, 0},
    {"greedy_search", ML_OPH_GENERATE, 3, 0, 0},
    {"_greedy_search", ML_OPH_GENERATE, 3, 0, 0},
    {"contrastive_search", ML_OPH_GENERATE, 3, 0, 0},
    {"_contrastive_search", ML_OPH_GENERATE, 3, 0, 0},
    {"beam_search", ML_OPH_GENERATE, 3, 0, 0},
    {"_beam_search", ML_OPH_GENERATE, 3, 0, 0},
    {"generate_with_callback", ML_OPH_GENERATE, 3, 0, 0},
    {"generate_stream", ML_OPH_GENERATE, 3, 0, 0},
    {"_assisted_decoding", ML_OPH_GENERATE, 3, 0, 0},
    {"profile_run", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_PROFILE},
    {"determine_num_available_blocks", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_PROFILE},
    {"determine_available_memory", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_PROFILE},
    {"_initialize_kv_caches", ML_OPH_SERVING_STARTUP, 3, 0, 0},
    {"initialize_cache", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_KV_POOL},
    {"init_device", ML_OPH_SERVING_STARTUP, 3, 0, 0},
    {"raise_if_cache_size_invalid", ML_OPH_SERVING_STARTUP, 3, 0, 0},
    {"check_enough_kv_cache_memory", ML_OPH_SERVING_STARTUP, 3, 0, 0},
    {"_check_enough_kv_cache_memory", ML_OPH_SERVING_STARTUP, 3, 0, 0},
    {"capture_model", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_GRAPH},
    {"_dummy_sampler_run", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_SAMPLER},
    {"init_memory_pool", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_KV_POOL},
    {"profile_max_num_token", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_PROFILE},
    {"initialize_from_config", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_KV_POOL},
    {"_dummy_run", ML_OPH_SERVING_STARTUP, 3, CF_NEW, ML_EP_PROFILE},
    {"_allocate_kv_cache_tensors", ML_OPH_SERVING_STARTUP, 3, CF_NEW, ML_EP_KV_POOL},
    {"initialize_kv_cache", ML_OPH_SERVING_STARTUP, 3, CF_NEW, ML_EP_KV_POOL},
    /* the steps of a serving engine's start-up (issue 24): vLLM V0 (worker, model_runner,
     * cache_engine), V1 (gpu_worker, gpu_model_runner, kv_cache_utils), SGLang (model_runner,
     * cuda_graph_runner), TGI (flash_causal_lm warmup), vllm-ascend (model_runner_v1, ACL graphs) */
    {"_init_cache_engine", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_KV_POOL},
    {"init_cache_engine", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_KV_POOL},
    {"_allocate_kv_cache", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_KV_POOL},
    {"allocate_gpu_cache", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_KV_POOL},
    {"_reshape_kv_cache_tensors", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_KV_POOL},
    {"init_memory_pool_and_cache", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_KV_POOL},
    {"_capture_cudagraphs", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_GRAPH},
    {"capture_one_batch_size", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_GRAPH},
    {"init_cuda_graphs", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_GRAPH},
    {"init_device_graphs", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_GRAPH},
    {"_capture_model", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_GRAPH},
    {"_dummy_pooler_run", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_SAMPLER},
    {"_profile_multimodal", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_PROFILE},
    {"profile_cudagraph_memory", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_GRAPH},
    {"run_engine_loop", ML_OPH_SERVING_RUNTIME, 3, 0, 0},
    {"engine_step", ML_OPH_SERVING_RUNTIME, 3, 0, 0},
    /* vLLM's workers at run time; operations (level 2), because the start-up profile runs the
     * model through them too and its episode (level 3) must win */
    {"start_worker_execution_loop", ML_OPH_SERVING_RUNTIME, 2, CF_NEW, 0},
    {"execute_model", ML_OPH_SERVING_RUNTIME, 2, CF_NEW, 0},
    {"execute_model_spmd", ML_OPH_SERVING_RUNTIME, 2, CF_NEW, 0},
    {"_run_workers", ML_OPH_SERVING_RUNTIME, 2, CF_NEW, 0},
    {"step_async", ML_OPH_SERVING_RUNTIME, 2, CF_NEW, 0},
    {"forward_batch_generation", ML_OPH_SERVING_RUNTIME, 3, 0, 0},
    {"event_loop_normal", ML_OPH_SERVING_RUNTIME, 3, 0, 0},
    {"event_loop_overlap", ML_OPH_SERVING_RUNTIME, 3, 0, 0},
    {"Prefill", ML_OPH_SERVING_RUNTIME, 3, 0, 0},
    {"Decode", ML_OPH_SERVING_RUNTIME, 3, 0, 0},
    /* operations */
    {"backward", ML_OPH_BACKWARD, 2, 0, 0},
    {"_engine_run_backward", ML_OPH_BACKWARD, 2, 0, 0},
    {"run_backward", ML_OPH_BACKWARD, 2, 0, 0},
    {"_optimizer_step", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {"_multi_tensor_adamw", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {"_multi_tensor_adam", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {"_single_tensor_adamw", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {"_single_tensor_adam", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {"_fused_adamw", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {"_fused_adam", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {"_init_group", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {"_prepare_fp32_grad_for_sub_group", ML_OPH_OPTIMIZER_STEP, 2, CF_ZERO3, 0},
    {"_copy_main_params_to_model_params", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {"initialize_optimizer_states", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {"all_reduce", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"allreduce", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"all_gather", ML_OPH_COMMUNICATION, 2, CF_NEW, 0},
    {"allgather", ML_OPH_COMMUNICATION, 2, CF_NEW, 0},
    {"_all_gather_base", ML_OPH_COMMUNICATION, 2, CF_NEW, 0},
    {"all_gather_into_tensor", ML_OPH_COMMUNICATION, 2, CF_NEW, 0},
    {"all_reduce_coalesced", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"broadcast", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"reduce_scatter", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"reduce_scatter_tensor", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"barrier", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"_flatten_dense_tensors", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"allreduce_params", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"init_process_group", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"_get_msg_dict", ML_OPH_COMMUNICATION, 2, CF_FORMAT, 0},
    /* leaves */
    {"cross_entropy", ML_OPH_LOSS, 1, 0, 0},
    {"log_softmax", ML_OPH_LOSS, 1, 0, 0},
    {"nll_loss", ML_OPH_LOSS, 1, 0, 0},
    {"ForCausalLMLoss", ML_OPH_LOSS, 1, 0, 0},
    {"fixed_cross_entropy", ML_OPH_LOSS, 1, 0, 0},
    {"get_batch_logps", ML_OPH_LOSS, 1, 0, 0},
    {"_get_batch_logps", ML_OPH_LOSS, 1, 0, 0},
    {"_convert_to_fp32", ML_OPH_LOSS, 1, CF_FP32, 0},
    {"forward", ML_OPH_FORWARD, 1, 0, 0},
    {"_call_impl", ML_OPH_FORWARD, 1, 0, 0},
    {"eager_attention_forward", ML_OPH_FORWARD, 1, CF_EAGER, 0},
    /* attention calls (issue 24): the forward pass */
    {"scaled_dot_product_attention", ML_OPH_FORWARD, 1, CF_NEW, 0},
    {"softmax", ML_OPH_FORWARD, 1, CF_NEW, 0},
    {"baddbmm", ML_OPH_FORWARD, 1, CF_NEW, 0},
    {"pre_sub_module_forward_function", ML_OPH_FORWARD, 1, CF_ZERO3, 0},
    /* flags only */
    {"__repr__", ML_OPH_UNKNOWN, 0, CF_FORMAT, 0},
    {"_tensor_str", ML_OPH_UNKNOWN, 0, CF_FORMAT, 0},
    {"_str_intern", ML_OPH_UNKNOWN, 0, CF_FORMAT, 0},
};

/* Substrings of code lines and frame paths. */
static const struct cue_def code_cues[] = {
    {"optimizer.step(", ML_OPH_OPTIMIZER_STEP, 2, 0, 0},
    {".backward(", ML_OPH_BACKWARD, 2, 0, 0},
    {"backward(loss", ML_OPH_BACKWARD, 2, 0, 0},
    {"fetch_sub_module(sub_module, forward=True", ML_OPH_FORWARD, 1, CF_ZERO3, 0},
    {"fetch_sub_module(sub_module, forward=False", ML_OPH_BACKWARD, 2, CF_ZERO3, 0},
    {"model(**", ML_OPH_FORWARD, 1, 0, 0},
    {"self._model(", ML_OPH_FORWARD, 1, 0, 0},
    {"self.model(", ML_OPH_FORWARD, 1, 0, 0},
    {"self.module(", ML_OPH_FORWARD, 1, 0, 0},
    {"log_softmax(", ML_OPH_LOSS, 1, 0, 0},
    {"cross_entropy", ML_OPH_LOSS, 1, 0, 0},
    {"lm_head(", ML_OPH_LOSS, 1, 0, 0},
    {".generate(", ML_OPH_GENERATE, 3, 0, 0},
    {"save_pretrained(", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"save_model(", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE, 0},
    {"from_pretrained(", ML_OPH_LOAD, 3, 0, 0},
    {"all_reduce(", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"init_process_group(", ML_OPH_COMMUNICATION, 2, 0, 0},
    {":prefill:", ML_OPH_SERVING_RUNTIME, 3, 0, 0},
    {":decode:", ML_OPH_SERVING_RUNTIME, 3, 0, 0},
    {"c10d_logger", ML_OPH_COMMUNICATION, 2, CF_FORMAT, 0},
    {"ProcessGroupNCCL", ML_OPH_COMMUNICATION, 2, 0, 0},
    {"deepspeed/runtime/zero", ML_OPH_UNKNOWN, 0, CF_ZERO3, 0},
    {"torch/utils/checkpoint", ML_OPH_UNKNOWN, 0, CF_CKPT, 0},
    {"softmax(attn", ML_OPH_UNKNOWN, 0, CF_EAGER, 0},
    {".float()", ML_OPH_UNKNOWN, 0, CF_FP32, 0},
    {"upcast", ML_OPH_UNKNOWN, 0, CF_FP32, 0},
    /* constructors that place the model on the device (issue 13): loading */
    {"Trainer(", ML_OPH_LOAD, 3, CF_NEW, 0},
    {"DistributedDataParallel(", ML_OPH_LOAD, 3, CF_NEW, 0},
    {"FullyShardedDataParallel(", ML_OPH_LOAD, 3, CF_NEW, 0},
    {"FSDP(", ML_OPH_LOAD, 3, CF_NEW, 0},
    {"deepspeed.initialize(", ML_OPH_LOAD, 3, CF_NEW, 0},
    {"accelerator.prepare(", ML_OPH_LOAD, 3, CF_NEW, 0},
    {"prepare_model(", ML_OPH_LOAD, 3, CF_NEW, 0},
    /* the state dict gathered at save (FSDP's "Failed to clone() tensor" warning, analysis 4) */
    {"state_dict(", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE | CF_NEW, 0},
    {"Failed to clone() tensor", ML_OPH_CHECKPOINT_SAVE, 3, CF_SAVE | CF_NEW, 0},
    /* eager attention written out (analysis 3): the s x s scores are materialised */
    {"matmul(query", ML_OPH_UNKNOWN, 0, CF_EAGER | CF_NEW, 0},
    {"key_states.transpose(", ML_OPH_UNKNOWN, 0, CF_EAGER | CF_NEW, 0},
    {"attn_weights =", ML_OPH_UNKNOWN, 0, CF_EAGER | CF_NEW, 0},
    {".to(torch.float32)", ML_OPH_UNKNOWN, 0, CF_FP32 | CF_NEW, 0},
    /* a serving engine's start-up steps in paths and code (issue 24): its sampler's file, whose
     * generic forward is the sampler's; a dummy batch (the profile run and the warm-ups) */
    {"/sampler.py", ML_OPH_UNKNOWN, 0, 0, ML_EP_SAMPLER},
    {"torch.cuda.graph(", ML_OPH_UNKNOWN, 0, 0, ML_EP_GRAPH},
    {"capture_end", ML_OPH_UNKNOWN, 0, 0, ML_EP_GRAPH},
    {"capture_begin", ML_OPH_UNKNOWN, 0, 0, ML_EP_GRAPH},
    {"dummy", ML_OPH_UNKNOWN, 0, 0, ML_EP_PROFILE},
};

/* A frame of a serving engine's own code: loading its weights is its start-up, not a trainer's
 * load (tried before fn_cues when the frame's path is vLLM's). */
static const struct cue_def serving_fn_cues[] = {
    {"load_model", ML_OPH_SERVING_STARTUP, 3, CF_NEW, ML_EP_WEIGHTS},
    {"load_weights", ML_OPH_SERVING_STARTUP, 3, CF_NEW, ML_EP_WEIGHTS},
    {"warmup", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_PROFILE}, /* TGI's warm-up: a prefill of max batch tokens */
    /* the sampler: a step of the start-up only inside one (its dummy run), so no phase of its own */
    {"sample", ML_OPH_UNKNOWN, 0, 0, ML_EP_SAMPLER},
    {"_sample", ML_OPH_UNKNOWN, 0, 0, ML_EP_SAMPLER},
    {"capture", ML_OPH_SERVING_STARTUP, 3, 0, ML_EP_GRAPH},
};

/* Log lines that name a phase (not frames): ooba's summary of a generation, vLLM's start-up. */
static const struct cue_def line_cues[] = {
    {"Output generated in", ML_OPH_GENERATE, 3, CF_NEW, 0},
    {"EngineCore failed to start", ML_OPH_SERVING_STARTUP, 3, CF_NEW, 0},
    {"Capturing CUDA graph", ML_OPH_SERVING_STARTUP, 1, CF_NEW, 0},
};

static void push_cue_x(struct ml_oom_scanner *s, const struct cue_def *d, const char *name, const char *line,
                       uint8_t extra);

static void push_cue(struct ml_oom_scanner *s, const struct cue_def *d, const char *name, const char *line)
{
    push_cue_x(s, d, name, line, 0);
}

/* (extra: flags the way the cue was read adds, CF_NEW) */
static void push_cue_x(struct ml_oom_scanner *s, const struct cue_def *d, const char *name, const char *line,
                       uint8_t extra)
{
    struct ml_oom_cue c;
    memset(&c, 0, sizeof(c));
    c.line = s->lineno;
    c.phase = d->phase;
    c.level = d->level;
    c.flags = (uint8_t)(d->flags | extra);
    c.episode = d->episode;
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
        if (c.episode && episode_over(c.episode, s->after_ep.episode))
            s->after_ep = c;
        if (c.level)
            s->after_best[c.level] = c;
        if (c.level && !(c.flags & CF_NEW))
            s->after_old[c.level] |= (uint16_t)(1u << c.phase);
    }
}

/* The cue of function fn[0..n) in a frame (extra: flags of how it was read, CF_NEW). */
static void fn_cue(struct ml_oom_scanner *s, const char *fn, size_t n, const char *line, uint8_t extra)
{
    if (find(line, "vllm/") || find(line, "vllm_") || find(line, "sglang/") || find(line, "text_generation_server/")) {
        for (size_t i = 0; i < sizeof(serving_fn_cues) / sizeof(serving_fn_cues[0]); i++) {
            if (strlen(serving_fn_cues[i].pat) == n && !strncmp(fn, serving_fn_cues[i].pat, n)) {
                push_cue_x(s, &serving_fn_cues[i], serving_fn_cues[i].pat, line, extra);
                return;
            }
        }
    }
    for (size_t i = 0; i < sizeof(fn_cues) / sizeof(fn_cues[0]); i++) {
        if (strlen(fn_cues[i].pat) == n && !strncmp(fn, fn_cues[i].pat, n)) {
            push_cue_x(s, &fn_cues[i], fn_cues[i].pat, line, extra);
            return;
        }
    }
}

/* A call chain written with arrows and no file:line ("main -> Trainer.train -> model.forward ->
 * torch.softmax"): three or more segments, each one dotted name (an optional "()"), read as
 * frames by the last name of each segment. A line with any other word in a segment is prose. */
static bool arrow_chain(struct ml_oom_scanner *s, const char *l)
{
    const char *seg[16], *end[16];
    size_t n = 0;
    const char *p = skip_blank(l);
    while (n < 16) {
        const char *a = find(p, " -> ");
        const char *e = a ? a : p + strlen(p);
        while (e > p && (e[-1] == ' ' || e[-1] == '\r' || e[-1] == '\n'))
            e--;
        if (e - p >= 2 && e[-1] == ')' && e[-2] == '(')
            e -= 2;
        if (e == p)
            return false;
        for (const char *q = p; q < e; q++)
            if (!is_word(*q) && *q != '.' && *q != '<' && *q != '>')
                return false;
        seg[n] = p;
        end[n] = e;
        n++;
        if (!a)
            break;
        p = skip_blank(a + 4);
    }
    if (n < 3)
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *b = end[i];
        while (b > seg[i] && b[-1] != '.')
            b--;
        if (end[i] > b)
            fn_cue(s, b, (size_t)(end[i] - b), l, CF_NEW);
    }
    return true;
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
        fn_cue(s, f, n, l, 0);
        frame = true;
    }
    /* IPython and Colab: "/p/trainer.py in train(self, ...)", "[/p/module.py](https://...) in
     * _call_impl(self, ...)" (the code lines follow as "---> 88 ...", "    87 ...") */
    const char *ip = find(l, ".py in ");
    if (!ip && find(l, ".py]("))
        ip = find(find(l, ".py]("), ") in ");
    if (!frame && ip) {
        const char *f = find(ip, " in ") + 4;
        size_t n = 0;
        while (is_word(f[n]))
            n++;
        if (n && f[n] == '(') {
            fn_cue(s, f, n, l, CF_NEW);
            frame = true;
        }
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
                fn_cue(s, q, n, l, 0);
        }
        frame = true;
    }
    if (!frame && arrow_chain(s, l))
        frame = true;
    /* Paths in the frame line carry flags (ZeRO-3 code, torch.utils.checkpoint, c10d logger). */
    if (frame) {
        for (size_t i = 0; i < sizeof(code_cues) / sizeof(code_cues[0]); i++)
            if (code_cues[i].level == 0 || !strcmp(code_cues[i].pat, "c10d_logger"))
                if (find(l, code_cues[i].pat))
                    push_cue(s, &code_cues[i], code_cues[i].pat, l);
    }
    return frame;
}

/* A code line's cues (extra: flags of how the line was found, CF_NEW). */
static void handle_code(struct ml_oom_scanner *s, const char *l, uint8_t extra)
{
    for (size_t i = 0; i < sizeof(code_cues) / sizeof(code_cues[0]); i++) {
        const char *p = find(l, code_cues[i].pat);
        if (!p)
            continue;
        push_cue_x(s, &code_cues[i], code_cues[i].pat, l, extra);
    }
    /* SDPA with an explicit mask falls back to the math kernel, which materialises s x s. */
    static const struct cue_def masked_sdpa = {"scaled_dot_product_attention", ML_OPH_UNKNOWN, 0, CF_EAGER | CF_NEW, 0};
    if (find(l, "scaled_dot_product_attention(") && find(l, "attn_mask"))
        push_cue(s, &masked_sdpa, masked_sdpa.pat, l);
    /* A call of a function the frame rows know ("model = load_model(", "loss = cross_entropy(")
     * is that function's frame: the line is its caller's code, the next frame would be it. */
    for (const char *p = strchr(l, '('); p; p = strchr(p + 1, '(')) {
        const char *b = p;
        while (b > l && is_word(b[-1]))
            b--;
        if (p - b >= 4)
            fn_cue(s, b, (size_t)(p - b), l, CF_NEW);
    }
}

void ml_oom_code_before(struct ml_oom_scanner *s, const char *before, size_t n)
{
    /* The line just before an exception line is, in a traceback, the failing frame's code. */
    if (s->prev_code_line && s->prev_code_line + 1 == s->lineno) {
        handle_code(s, s->prev_code, CF_NEW);
        s->prev_code_line = 0;
    }
    /* The text before the message on its own line (a warning that quotes the error, a prefix). */
    if (n) {
        char pre[256];
        (void)snprintf(pre, sizeof(pre), "%.*s", (int)(n < sizeof(pre) ? n : sizeof(pre) - 1), before);
        handle_code(s, pre, CF_NEW);
    }
}

/* A serving engine's start-up lines: the step each one says is now under way (vLLM V0 and V1's
 * worker and model-runner lines, SGLang's model_runner, TGI's router, vllm-ascend's ACL graphs). */
static const struct {
    char pat[40];
    uint8_t episode; /* ML_EP_NONE: the start-up is over */
} episode_lines[] = {
    {"Starting to load model", ML_EP_WEIGHTS},
    {"Load weight begin", ML_EP_WEIGHTS},
    {"Load weight end", ML_EP_KV_POOL}, /* SGLang: the memory pool comes next */
    {"weights took", ML_EP_PROFILE},    /* vLLM V0: the profile run comes next */
    {"Model loading took", ML_EP_PROFILE},
    {"Warming up model", ML_EP_PROFILE},     /* TGI */
    {"Starting profile run", ML_EP_PROFILE}, /* vLLM V0's multi-modal profile run */
    {"Memory profiling", ML_EP_KV_POOL},
    {"reserved for KV Cache", ML_EP_KV_POOL},
    {"Available KV cache memory", ML_EP_KV_POOL},
    {"# GPU blocks", ML_EP_KV_POOL},
    {"# cuda blocks", ML_EP_KV_POOL},
    {"# npu blocks", ML_EP_KV_POOL},
    {"GPU KV cache size", ML_EP_KV_POOL},
    {"KV Cache is allocated", ML_EP_KV_POOL},
    {"Memory pool end", ML_EP_KV_POOL},
    {"Capturing cudagraphs", ML_EP_GRAPH},
    {"Capturing the model for CUDA graphs", ML_EP_GRAPH},
    {"Capturing CUDA graph", ML_EP_GRAPH},
    {"Capture cuda graph begin", ML_EP_GRAPH},
    {"Capturing batches", ML_EP_GRAPH},
    {"Capturing ACL graph", ML_EP_GRAPH},
    {"Cuda Graphs are enabled", ML_EP_GRAPH},
    {"Graph capturing finished", ML_EP_NONE},
    {"Capture cuda graph end", ML_EP_NONE},
    {"Starting vLLM API server", ML_EP_NONE},
    {"Uvicorn running", ML_EP_NONE},
    {"The server is fired up", ML_EP_NONE},
    {"Application startup complete", ML_EP_NONE},
    {"Setting max batch total tokens", ML_EP_NONE},
};

static void handle_episode(struct ml_oom_scanner *s, const char *l)
{
    for (size_t i = 0; i < sizeof(episode_lines) / sizeof(episode_lines[0]); i++)
        if (find(l, episode_lines[i].pat)) {
            s->episode = episode_lines[i].episode;
            ref_set(&s->episode_ref, s->file, s->lineno, -1, l);
            return;
        }
}

static void handle_line_cues(struct ml_oom_scanner *s, const char *l)
{
    for (size_t i = 0; i < sizeof(line_cues) / sizeof(line_cues[0]); i++)
        if (find(l, line_cues[i].pat))
            push_cue(s, &line_cues[i], line_cues[i].pat, l);
    /* ooba: "Output generated in 0.28 seconds (0.00 tokens/s, 0 tokens, context 500, seed 1)" */
    /* vLLM: "Exception in worker VllmWorkerProcess while processing method start_worker_execution_loop." */
    const char *m = find(l, "while processing method ");
    if (m) {
        m += 24;
        size_t n = 0;
        while (is_word(m[n]))
            n++;
        fn_cue(s, m, n, l, CF_NEW);
    }
    const char *c = find(l, "Output generated in") ? find(l, "context ") : NULL;
    uint64_t v;
    if (c && ml_oom_parse_u64(c + 8, &v) && v < ((uint64_t)1 << 32))
        s->inc->gen_context = v;
}

/* ---- stack and platform flags ------------------------------------------------------------ */

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
    {S_ENGPROC, offsetof(struct ml_incident, saw_engine_proc)},
    {S_SERVED, offsetof(struct ml_incident, saw_served)},
    {S_DIFFUSION, offsetof(struct ml_incident, saw_diffusion)},
    {S_TRAINARGS, offsetof(struct ml_incident, saw_train_args)},
};
#define N_FLAG_FACTS (sizeof(flag_facts) / sizeof(flag_facts[0]))

static bool flag_fact(const struct ml_incident *inc, size_t i)
{
    bool v;
    memcpy(&v, (const char *)inc + flag_facts[i].off, sizeof(v));
    return v;
}

/* Does l print setting key off ("key=False", "key: false", "'key': False", "disable_key: true")? */
static bool setting_off(const char *l, const char *key)
{
    char dis[48];
    (void)snprintf(dis, sizeof(dis), "disable_%s", key);
    const char *d = find(l, dis);
    if (d) {
        const char *v = d + strlen(dis);
        while (*v == '\'' || *v == '"' || *v == ':' || *v == '=' || *v == ' ')
            v++;
        return *v == 't' || *v == 'T';
    }
    const char *p = find(l, key);
    if (!p)
        return false;
    const char *v = p + strlen(key);
    while (*v == '\'' || *v == '"' || *v == ':' || *v == '=' || *v == ' ')
        v++;
    return *v == 'f' || *v == 'F' || *v == '0';
}

static void handle_flags(struct ml_oom_scanner *s, const char *l, uint64_t m)
{
    for (size_t i = 0; i < N_FLAG_FACTS; i++) {
        if (!(m & GB(flag_facts[i].g)))
            continue;
        /* expandable_segments set by the user, not the OOM message's own hint. */
        if (flag_facts[i].g == S_EXPSEG && (find(l, "try setting") || find(l, "If reserved")))
            continue;
        /* a setting printed off ("gradient_checkpointing=False", "gradient_checkpointing: false") */
        if (flag_facts[i].g == S_GC && setting_off(l, "gradient_checkpointing"))
            continue;
        /* an argparse Namespace is a training run's when it holds a learning rate or epochs */
        if (flag_facts[i].g == S_TRAINARGS && !find(l, "TrainingArguments(") &&
            !find(l, "per_device_train_batch_size") && !find(l, "learning_rate=") && !find(l, "lr=") &&
            !find(l, "epochs="))
            continue;
        *(bool *)(void *)((char *)s->inc + flag_facts[i].off) = true;
    }
}

/* Groups whose facts are known once and for all: a flag already seen, the python version already
 * read, no room for more versions. The scanner stops looking for their anchors (retire()), which
 * changes no result: a line whose only anchors are retired would be handled like a line without. */
uint64_t ml_oom_known_groups(const struct ml_incident *inc)
{
    uint64_t g = 0;
    for (size_t i = 0; i < N_FLAG_FACTS; i++)
        if (flag_fact(inc, i))
            g |= GB(flag_facts[i].g);
    for (uint32_t i = 0; i < inc->n_versions; i++)
        if (!strcmp(inc->versions[i].name, "python"))
            g |= GB(G_PYVER);
    if (inc->n_versions >= ML_OOM_MAX_VERSIONS)
        g |= GB(G_VERSION) | GB(G_PYVER);
    return g;
}

void ml_oom_finish_events(struct ml_oom_scanner *s)
{
    for (uint32_t i = 0; i < s->inc->n_events; i++) {
        struct ml_oom_event *e = &s->inc->ev[i];
        if (e->file != s->file)
            continue;
        /* A serving engine's worker processes printed it, and the log shows no request served:
         * the engine was starting (issue 13; the weakest cue, any frame overrides it). */
        if (e->phase == ML_OPH_UNKNOWN && s->inc->saw_engine_proc && !s->inc->saw_served &&
            ml_oom_kind_class(e->kind) != ML_OOM_CLASS_HOST) {
            e->phase = ML_OPH_SERVING_STARTUP;
            (void)snprintf(e->phase_cue, sizeof(e->phase_cue), "%s", "engine process, no request served");
            e->phase_new = true;
        }
        if (e->timing == ML_TIM_AFTER_SAVE && (e->in_save_frames || e->phase == ML_OPH_CHECKPOINT_SAVE))
            e->timing = ML_TIM_AT_SAVE;
        if (e->timing == ML_TIM_AT_EVAL || e->in_eval_frames) {
            if (e->phase == ML_OPH_FORWARD || e->phase == ML_OPH_LOSS || e->phase == ML_OPH_UNKNOWN)
                e->phase = e->in_eval_frames || e->timing == ML_TIM_AT_EVAL ? ML_OPH_EVAL : e->phase;
        }
    }
}

/* ---- a line's context -------------------------------------------------------------------- */

/* (Out of line: the test in ml_oom_track_frames spares most lines its call.) */
__attribute__((noinline)) static bool track_frames(struct ml_oom_scanner *s, const char *l, uint64_t m, bool code)
{
    if (s->after_ev >= 0 && (s->lineno > s->after_until || (m & (GB(G_OOM) | GB(G_VLLMERR) | GB(G_HOSTALLOC)))))
        ml_oom_close_after(s);
    if (m & GB(G_TRACE))
        s->last_traceback = s->lineno;
    bool frame = false;
    if (m & GB(G_FRAME))
        frame = handle_frame(s, l);
    else if (s->prev_frame || code)
        handle_code(s, l, 0);
    s->prev_frame = frame;
    if (m & GB(G_SERVE)) {
        static const struct cue_def serve = {"prefill/decode", ML_OPH_SERVING_RUNTIME, 3, 0, 0};
        push_cue(s, &serve, find(l, "refill") ? "prefill" : "decode", l);
    }
    return frame;
}

bool ml_oom_track_frames(struct ml_oom_scanner *s, const char *l, const char *body, uint64_t m)
{
    bool code = body[0] == ' ' && body[1] == ' ' && body[2] == ' ' && body[3] == ' ';
    /* after a worker's prefix ("(EngineCore_DP0 pid=8884)     return ..."), its indentation */
    code |=
        body - l >= 6 && body[-1] == ' ' && body[-2] == ' ' && body[-3] == ' ' && body[-4] == ' ' && body[-5] == ' ';
    if (s->after_ev < 0 && !(m & (GB(G_TRACE) | GB(G_FRAME) | GB(G_SERVE))) && !s->prev_frame && !code)
        return false; /* most lines: no event's window open, no traceback, frame, code line or span */
    return track_frames(s, l, m, code);
}

/* Launcher lines: Ray's "[repeated Nx across cluster]" after an event, torchrun's failure
 * summary "rank      : 0 (local_rank: 0)" (the rank of the failure record). */
static void handle_launcher(struct ml_oom_scanner *s, const char *l, uint64_t m, uint64_t events_before)
{
    if ((m & GB(G_REPEATED)) && (s->inc->n_events_seen > events_before || s->pending)) {
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
}

void ml_oom_track_line(struct ml_oom_scanner *s, const char *l, size_t len, uint64_t m, bool frame,
                       uint64_t events_before)
{
    if (m & (GB(G_REPEATED) | GB(G_RANKSUM)))
        handle_launcher(s, l, m, events_before);
    if (m & (GB(G_TQDM) | GB(G_STEP) | GB(G_LOGDICT)))
        handle_progress(s, l, len, m);
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
    if (m & GB(G_LINECUE))
        handle_line_cues(s, l);
    if (m & (GB(G_EPISODE) | GB(G_VLLMINFO) | GB(G_LOAD)))
        handle_episode(s, l);
    /* "During handling of the above exception, another exception occurred": raised while handling
     * it (a retry); "The above exception was the direct cause" is `raise ... from`: chaining, the
     * same failure re-raised (issue 24) */
    if ((m & GB(G_CHAIN)) && find(l, "During handling") && s->after_ev >= 0 && s->lineno > s->inc->ev[s->after_ev].line)
        s->inc->ev[s->after_ev].chained = true; /* caught, and another error raised while handling it */
    if (m >> S_VLLM)
        handle_flags(s, l, m);
}

void ml_oom_context_begin(struct ml_oom_scanner *s)
{
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
    s->episode = ML_EP_NONE;
    memset(&s->episode_ref, 0, sizeof(s->episode_ref));
}
