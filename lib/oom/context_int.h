/*
 * context_int.h - what the files of the OOM scanner's context tracker share (private to lib/oom):
 * the flags of a phase cue, the evidence references they fill, and the line handlers the
 * dispatcher (ml_oom_track_line, context.c) calls. The tracker is four files: context.c (the
 * dispatcher, rank prefixes, progress, launcher lines, stack and platform flags), context_cues.c
 * (phase cues of frames, code and log lines; the frames window), context_facts.c (versions,
 * saves, evaluation, loading, DeepSpeed and vLLM lines) and context_events.c (the event store).
 */
#ifndef ML_OOM_CONTEXT_INT_H
#define ML_OOM_CONTEXT_INT_H

#include "scanner.h"

/* How much a phase cue says (struct ml_oom_cue.level): the highest level in an event's window
 * gives its phase, the innermost cue of that level wins (context_events.c resolve_phase). */
enum cue_level {
    CUE_FLAG_ONLY, /* sets flags (CF_ below), names no phase */
    CUE_LEAF,      /* the least: mostly the forward and the loss, which outer frames override */
    CUE_OPERATION, /* mostly backward, the optimizer step, a collective, a serving worker's step */
    CUE_EPISODE    /* mostly loading, saving, evaluation, generation, a serving engine's start-up */
};

/* What a phase cue says beside its phase (context_cues.c's tables; read by context_events.c). */
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

static inline void ref_set(struct ml_oom_ref *r, uint32_t file, uint64_t line, int64_t step, const char *text)
{
    r->file = file;
    r->line = line;
    r->step = step;
    ml_oom_excerpt(r->text, sizeof(r->text), text, strlen(text));
}

/* Like ref_set, but keeps raw bytes (cheap, for lines that are overwritten at every step);
 * ref_clean (context_events.c) turns them into an excerpt when an event takes a copy.
 * n: strlen(text). */
static inline void ref_raw(struct ml_oom_ref *r, uint32_t file, uint64_t line, int64_t step, const char *text, size_t n)
{
    r->file = file;
    r->line = line;
    r->step = step;
    if (n > sizeof(r->text) - 1)
        n = sizeof(r->text) - 1;
    memcpy(r->text, text, n);
    r->text[n] = '\0';
}

/* Does a frame of episode a, inner to one of b, name the step? Graph capture runs dummy batches
 * and the sampler (their frames are inner to it), so a capture frame names the step wherever it
 * is; then the sampler inside a profile run; else the innermost. */
static inline bool episode_over(uint8_t a, uint8_t b)
{
    if (b == ML_EP_GRAPH)
        return false;
    if (b == ML_EP_SAMPLER)
        return a == ML_EP_GRAPH;
    return true;
}

/* Line handlers (l: the cleaned line; m: its anchor groups), called by ml_oom_track_line on the
 * lines whose groups name them. context_facts.c: */
void ml_oom_on_version(struct ml_oom_scanner *s, const char *l, uint64_t m); /* versions, the engine line */
void ml_oom_on_save(struct ml_oom_scanner *s, const char *l, bool frame);    /* checkpoint saves */
void ml_oom_on_eval(struct ml_oom_scanner *s, const char *l);                /* evaluation */
void ml_oom_on_load(struct ml_oom_scanner *s, const char *l, bool load_bar); /* model loading */
void ml_oom_on_vllm_info(struct ml_oom_scanner *s, const char *l);           /* vLLM profiling and KV lines */
void ml_oom_on_ds_line(struct ml_oom_scanner *s, const char *l, uint64_t m); /* DeepSpeed flushes and memory */
/* context_cues.c: */
void ml_oom_on_episode(struct ml_oom_scanner *s, const char *l);   /* a serving engine's start-up step */
void ml_oom_on_line_cues(struct ml_oom_scanner *s, const char *l); /* log lines that name a phase */

#endif /* ML_OOM_CONTEXT_INT_H */
