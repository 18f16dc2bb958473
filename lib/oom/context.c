/*
 * context.c - the context tracker of the OOM scanner (scanner.h): what the lines around the
 * events say. This file dispatches a line to the handlers its anchor groups name
 * (ml_oom_track_line) and reads what most lines carry: rank prefixes, step counters and progress
 * bars, launcher lines (torchrun's failure summary, Ray's "[repeated Nx]"), stack and platform
 * flags. The phase cues are context_cues.c, the other facts (versions, saves, evaluation,
 * loading, DeepSpeed and vLLM lines) context_facts.c, the stored events context_events.c
 * (context_int.h).
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

#include "context_int.h"

/* ---- rank prefixes ----------------------------------------------------------------------- */

/* "[rank3]:" / "[Rank 3]" / "rank=3" near the start of a line: the rank, -1 if none. */
int32_t ml_oom_line_rank(const char *l, uint64_t m, const char **body, size_t from)
{
    *body = l;
    /* (a spelling whose anchor the line lacks is not looked for; none starts before from, and
     * " rank=" one byte before its anchor "rank=") */
    const char *p = (m & GB(G_RANK)) ? find_at(l + from, "[rank") : NULL;
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
    p = (m & GB(G_RANK_CAP)) ? find_at(l + from, "[Rank ") : NULL;
    if (p && p - l < 120 && is_digit(p[6])) {
        uint64_t r = 0;
        ml_oom_parse_u64(p + 6, &r);
        return r < 100000 ? (int32_t)r : -1;
    }
    p = (m & GB(G_RANK_EQ)) ? find_at(l + (from ? from - 1 : 0), " rank=") : NULL;
    if (p && p - l < 120 && is_digit(p[6])) {
        uint64_t r = 0;
        ml_oom_parse_u64(p + 6, &r);
        return r < 100000 ? (int32_t)r : -1;
    }
    return -1;
}

/* ---- progress ----------------------------------------------------------------------------- */

/* ref_raw for the progress line kept as the step's evidence (on most lines of a training log): the
 * same bytes, copied by the C library's memcpy. Where the length's bound is known the compiler
 * inlines the copy as a string instruction (rep movs), whose start-up costs more than the
 * library's vector moves on lines this short; the empty asm hides the bound. */
static inline void step_text_copy(char *to, size_t cap, const char *text, size_t n)
{
    if (n > cap - 1)
        n = cap - 1;
#if defined(__GNUC__)
    __asm__("" : "+r"(n));
#endif
    memcpy(to, text, n);
    to[n] = '\0';
}

/* The progress line l[0..len) as the step's evidence. Where l is (part of) a segment read as it
 * lies in the input (seg_src, set by scan.c's window_line) and no handler may have written into
 * it (an event's reader cuts its line: m has no event group), its bytes are left where they lie
 * and copied only when an event takes them or the input is left (ml_oom_step_ref_text,
 * ml_oom_step_ref_settle): most progress lines are followed by another before any event. */
static inline void step_ref_set(struct ml_oom_scanner *s, int64_t step, const char *l, size_t len, uint64_t m)
{
    struct ml_oom_ref *r = &s->step_ref;
    r->file = s->file;
    r->line = s->lineno;
    r->step = step;
    if (s->seg_src && !(m & EVENT_GROUPS) && l >= s->seg_line && (size_t)(l - s->seg_line) + len <= s->seg_len) {
        s->step_src = s->seg_src + (l - s->seg_line);
        s->step_src_len = len;
        return;
    }
    s->step_src = NULL;
    step_text_copy(r->text, sizeof(r->text), l, len);
}

void ml_oom_step_ref_text(const struct ml_oom_scanner *s, struct ml_oom_ref *to)
{
    if (s->step_src)
        step_text_copy(to->text, sizeof(to->text), s->step_src, s->step_src_len);
}

void ml_oom_step_ref_settle(struct ml_oom_scanner *s)
{
    ml_oom_step_ref_text(s, &s->step_ref);
    s->step_src = NULL;
}

/* Step counters and progress bars (len: strlen(l); m: the line's anchor groups; no anchor of G_STEP
 * starts in l[0..from)). Returns true when the line was a progress line. */
static bool handle_progress(struct ml_oom_scanner *s, const char *l, size_t len, uint64_t m, size_t from,
                            bool *load_bar)
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
        const char *end = find2(bar + 2, '|', ' ');
        uint64_t cur = 0;
        if (end && ml_oom_parse_u64(end + 2, &cur) && end[2] != '?') {
            /* HF Trainer's bar has no description (only the percentage): skip the word tests (and
             * the copy they read). */
            bool words = false;
            for (size_t k = 0; k < dn && !words; k++)
                words = (d[k] >= 'a' && d[k] <= 'z') || (d[k] >= 'A' && d[k] <= 'Z');
            if (words) {
                memcpy(desc, d, dn);
                desc[dn] = '\0';
            }
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
                    /* A finished load bar ("3/3") ends the load: the bar's last state on the line
                     * (tqdm redraws it after a '\r'), and the loading words of the same line
                     * (ml_oom_on_load) do not start it again. */
                    *load_bar = true;
                    for (const char *b = find2(end + 2, '%', '|'); b; b = find2(b + 2, '%', '|')) {
                        const char *e2 = find2(b + 2, '|', ' ');
                        uint64_t c2;
                        if (e2 && ml_oom_parse_u64(e2 + 2, &c2)) {
                            end = e2;
                            cur = c2;
                        }
                    }
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
            /* (each key is an anchor of G_STEP: none starts before from) */
            for (const char *p = find_at(l + from, keys[i].s); p && step < 0; p = find(p + 1, keys[i].s)) {
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
    step_ref_set(s, step >= 0 ? step : s->step, l, len, m);
    s->progress_since_save++;
    s->progress_since_eval++;
    s->save_open = false; /* a step runs: the save is over */
    return true;
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
    {S_V0WORKER, offsetof(struct ml_incident, saw_v0_worker)},
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

/* ---- a line's context -------------------------------------------------------------------- */

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
                       uint64_t events_before, size_t step_from)
{
    if (m & (GB(G_REPEATED) | GB(G_RANKSUM)))
        handle_launcher(s, l, m, events_before);
    bool load_bar = false;
    if (m & (GB(G_TQDM) | GB(G_STEP) | GB(G_LOGDICT)))
        handle_progress(s, l, len, m, step_from, &load_bar);
    if (m & GB(G_SAVE))
        ml_oom_on_save(s, l, frame);
    if (m & GB(G_EVAL))
        ml_oom_on_eval(s, l);
    if (m & GB(G_LOAD))
        ml_oom_on_load(s, l, load_bar);
    if (m & GB(G_RESUME)) {
        if (find(l, "esuming from") || find(l, "esuming training") || find(l, "Continuing training"))
            ref_set(&s->resume_ref, s->file, s->lineno, -1, l);
    }
    if ((m & (GB(G_VERSION) | GB(G_PYVER))) && s->inc->n_versions < ML_OOM_MAX_VERSIONS)
        ml_oom_on_version(s, l, m);
    if (m & (GB(G_DSFLUSH) | GB(G_DSMEM) | GB(G_CPUMEM)))
        ml_oom_on_ds_line(s, l, m);
    if (m & GB(G_VLLMINFO))
        ml_oom_on_vllm_info(s, l);
    if (m & GB(G_LINECUE))
        ml_oom_on_line_cues(s, l);
    if (m & (GB(G_EPISODE) | GB(G_VLLMINFO) | GB(G_LOAD)))
        ml_oom_on_episode(s, l);
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
    s->step_src = s->seg_src = s->seg_line = NULL;
    s->step_src_len = s->seg_len = 0;
    memset(&s->save_ref, 0, sizeof(s->save_ref));
    memset(&s->eval_ref, 0, sizeof(s->eval_ref));
    memset(&s->load_ref, 0, sizeof(s->load_ref));
    memset(&s->resume_ref, 0, sizeof(s->resume_ref));
    s->progress_since_save = s->progress_since_eval = 0;
    s->save_open = false;
    s->sum_rank = -1;
    s->sum_rank_line = 0;
    s->episode = ML_EP_NONE;
    memset(&s->episode_ref, 0, sizeof(s->episode_ref));
}
