/*
 * context_events.c - the OOM scanner's event store (scanner.h): each event is stored with its
 * context - the phase its frames and code lines gave (the innermost cue of the highest level, in
 * the ring before it or the window after it), the timing the progress, save and evaluation lines
 * gave, a serving engine's start-up step - and merged into an identical one; once an input ends,
 * the phase and timing are settled with what the frames after each event said.
 *
 * Frames and code lines give the phase (the field guide's analysis 4, "the stack frame at the
 * raise tells the phase"); progress bars, step counters, saves, evaluation, loading and resuming
 * give the timing (analysis 5); the rest fills the incident (reference/oom-messages.md, A9-A11).
 */
#include <stdio.h>

#include "context_int.h"

/* ---- evidence ---------------------------------------------------------------------------- */

/* A reference kept as raw bytes (ref_raw) made an excerpt, "..." where it was cut. */
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

/* Phase resolution from the cues of one window: the innermost cue of the highest level. */
static void resolve_phase(struct ml_oom_event *e, const struct ml_oom_cue *best_before,
                          const struct ml_oom_cue *best_after, const uint16_t *old)
{
    for (int lvl = CUE_EPISODE; lvl >= CUE_LEAF; lvl--) {
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

/* A serving engine's start-up step past the weights' load (the profile run, the KV pool, graph
 * capture): the event is at start-up, not while loading. */
static bool past_load_step(const struct ml_oom_event *e)
{
    return e->episode && e->episode != ML_EP_WEIGHTS;
}

/* Timing from the progress/save/eval/load/resume lines seen before the event (analysis 5). */
static void set_timing(const struct ml_oom_scanner *s, struct ml_oom_event *e)
{
    e->step = s->step;
    e->step_ref = s->step_ref;
    ml_oom_step_ref_text(s, &e->step_ref); /* (a line left in the input) */
    ref_clean(&e->step_ref);
    /* A serving engine's start-up: the kind names it, or its start-up step does. */
    if (ml_oom_kind_phase(e->kind) == ML_OPH_SERVING_STARTUP || past_load_step(e)) {
        e->timing = ML_TIM_STARTUP;
        return;
    }
    if (s->save_ref.line && s->save_ref.line >= s->step_ref.line && s->progress_since_save == 0) {
        e->timing = ML_TIM_AFTER_SAVE; /* AT_SAVE when the frames or an open save say so (finish) */
        e->timing_ref = s->save_ref;
        e->save_open = s->save_open;
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
    if (!e->episode && s->after_ep.episode && s->after_ep.episode != ML_EP_SAMPLER && engine_seen(s->inc)) {
        set_episode(e, s->after_ep.episode, e->file, s->after_ep.line, s->after_ep.text,
                    strnlen(s->after_ep.text, sizeof(s->after_ep.text)));
        if (past_load_step(e) && e->timing == ML_TIM_LOAD) { /* as set_timing */
            e->timing = ML_TIM_STARTUP;
            memset(&e->timing_ref, 0, sizeof(e->timing_ref));
        }
    }
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
        /* In the save: its frames say so, or no line finished the save and nothing of a step
         * (a killed process, a message without frames) says the next step had begun. */
        if (e->timing == ML_TIM_AFTER_SAVE &&
            (e->in_save_frames || e->phase == ML_OPH_CHECKPOINT_SAVE ||
             (e->save_open && (e->phase == ML_OPH_UNKNOWN || ml_oom_kind_class(e->kind) == ML_OOM_CLASS_HOST))))
            e->timing = ML_TIM_AT_SAVE;
        if (e->timing == ML_TIM_AT_EVAL || e->in_eval_frames) {
            if (e->phase == ML_OPH_FORWARD || e->phase == ML_OPH_LOSS || e->phase == ML_OPH_UNKNOWN)
                e->phase = e->in_eval_frames || e->timing == ML_TIM_AT_EVAL ? ML_OPH_EVAL : e->phase;
        }
    }
}
