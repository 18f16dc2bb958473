/*
 * scanner.h - what the OOM scanner's modules share (private to lib/oom).
 *
 * The scanner is four parts: the anchor matcher (match.c, its own private tables), the driver
 * (scan.c: the public calls, lines, the anchor table and dispatch by anchor group), the message
 * grammar (grammar.c: the message formats as rows, wrapped messages, host kill lines;
 * alloc_message.c: the allocator message's numbers) and the context tracker (context.c: the
 * line dispatcher, progress, launcher lines, stack flags; context_cues.c: frames and phases;
 * context_facts.c: saves, evaluation, loading, versions, DeepSpeed and vLLM lines;
 * context_events.c: it stores each event with its context; context_int.h). The kinds' facts are
 * in kinds.c.
 */
#ifndef ML_OOM_SCANNER_H
#define ML_OOM_SCANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memledger/oom.h"
#include "oom_text.h"

/* Handler groups: bit i of a line's mask is set when an anchor of group i occurs in it. */
enum grp {
    G_OOM,       /* "out of memory" in its spellings */
    G_OOMCLS,    /* OutOfMemory class names, UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY */
    G_TRIED,     /* "Tried to allocate" (a message whose exception line was trimmed) */
    G_LIB,       /* cuBLAS / cuDNN / cuSOLVER status names */
    G_HOSTALLOC, /* DefaultCPUAllocator */
    G_NCCL,      /* NCCL calloc / shm / Cuda failure */
    G_VLLMERR,   /* vLLM / SGLang start-up errors */
    G_KILL,      /* kill and exit-code lines */
    G_NPUCODE,   /* CANN error codes */
    G_TRACE,     /* "Traceback (most recent call last)" */
    G_FRAME,     /* frame lines */
    G_SERVE,     /* TGI router spans (":prefill:", "decode{"): serving at run time */
    G_TQDM,      /* tqdm bars */
    G_STEP,      /* step / iteration counters */
    G_LOGDICT,   /* HF Trainer log dictionaries */
    G_SAVE,      /* checkpoint saves */
    G_EVAL,      /* evaluation */
    G_LOAD,      /* model loading */
    G_RESUME,    /* resuming from a checkpoint */
    G_VERSION,   /* library versions */
    G_PYVER,     /* python3.X in paths */
    G_DSFLUSH,   /* DeepSpeed allocator cache flushes */
    G_DSMEM,     /* DeepSpeed see_memory_usage */
    G_CPUMEM,    /* "CPU Virtual Memory" */
    G_VLLMINFO,  /* vLLM memory-profiling and KV lines */
    G_RANK,      /* [rankN]: and worker ranks ("[rank", and the two below: RANK_GROUPS) */
    G_RANK_CAP,  /* "[Rank " */
    G_RANK_EQ,   /* "rank=" */
    G_REPEATED,  /* Ray's "[repeated Nx across cluster]" */
    G_RANKSUM,   /* torchrun failure summary "rank      : 0" */
    G_LINECUE,   /* log lines that name a phase ("Output generated in", "EngineCore failed to start") */
    G_CHAIN,     /* "During handling of the above exception", "The above exception was" */
    G_EPISODE,   /* a serving engine's start-up steps ("Capturing cudagraphs", "Load weight begin") */
    G_GGML,      /* llama.cpp / ggml buffer failures ("cudaMalloc failed", "buffer of size"), Habana's PT_DEVMEM */
    /* stack and platform flags: the bit alone says what was seen */
    S_VLLM,
    S_SGLANG,
    S_TGI,
    S_DS,
    S_ZERO3,
    S_FSDP,
    S_LORA,
    S_RL,
    S_DPO,
    S_EXPSEG,
    S_EAGER,
    S_GC,
    S_WSL,
    S_WIN,
    S_JETSON,
    S_ENGPROC,
    S_V0WORKER,
    S_SERVED,
    S_DIFFUSION,
    S_TRAINARGS,
    G_COUNT
};
_Static_assert(G_COUNT <= 64, "a line's groups are a 64-bit mask");

#define GB(g) ((uint64_t)1 << (g))

/* The groups that can hold an event (grammar.c reads the line). */
#define EVENT_GROUPS                                                                                                   \
    (GB(G_OOM) | GB(G_OOMCLS) | GB(G_TRIED) | GB(G_LIB) | GB(G_HOSTALLOC) | GB(G_NCCL) | GB(G_VLLMERR) | GB(G_KILL) |  \
     GB(G_NPUCODE) | GB(G_GGML))

/* The groups of the rank prefixes ml_oom_line_rank reads, one group per spelling. */
#define RANK_GROUPS (GB(G_RANK) | GB(G_RANK_CAP) | GB(G_RANK_EQ))

/* The groups ml_oom_known_groups() can retire. */
#define ONE_SHOT ((~(uint64_t)0 << S_VLLM) | GB(G_VERSION) | GB(G_PYVER))

static inline bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static inline bool is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

static inline const char *find(const char *hay, const char *needle)
{
    return strstr(hay, needle);
}

/* find() where the needle most often starts at hay itself (a search from the first anchor of the
 * line, which is often the needle's own): that position is compared first, without strstr's set-up. */
static inline const char *find_at(const char *hay, const char *needle)
{
    size_t i = 0;
    while (needle[i] && hay[i] == needle[i])
        i++;
    return needle[i] ? strstr(hay, needle) : hay;
}

/* find() for a needle of two bytes, a and b (not NUL): cheaper where a is rare (tqdm's "%|"). */
static inline const char *find2(const char *hay, char a, char b)
{
    for (const char *p = strchr(hay, a); p; p = strchr(p + 1, a))
        if (p[1] == b)
            return p;
    return NULL;
}

static inline const char *skip_blank(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static inline bool starts(const char *p, const char *w)
{
    return !strncmp(p, w, strlen(w));
}

/* The size right after the first occurrence of key in msg. */
static inline bool size_after(const char *msg, const char *key, uint64_t *out)
{
    const char *p = find(msg, key);
    if (!p)
        return false;
    p = skip_blank(p + strlen(key));
    return ml_oom_parse_size(p, out) > 0;
}

/* ---- grammar.c --------------------------------------------------------------------------- */

/* Read the events of a line whose anchor groups m include EVENT_GROUPS (l: the cleaned line;
 * rank: its [rankN]: prefix, -1). */
void ml_oom_read_events(struct ml_oom_scanner *s, char *l, uint64_t m, int32_t rank);

/* With a message pending: take body (or its start, up to what cannot belong to the message) as its
 * continuation and return the bytes taken, or close it and return 0. */
size_t ml_oom_continue_message(struct ml_oom_scanner *s, const char *body, uint64_t m);

/* Store the pending message, if any. */
void ml_oom_close_message(struct ml_oom_scanner *s);

/* ---- alloc_message.c --------------------------------------------------------------------- */

/* The device named by the word right before "out of memory" (oom, within msg): "CUDA", "HIP",
 * "backend" (MPS), ...; ML_DEV_UNKNOWN for another word. */
enum ml_oom_device ml_oom_device_word(const char *msg, const char *oom);

/* The numbers of an allocator-family message, read whole each time (it grows as continuation
 * lines arrive): the sizes by the words around them, the device ordinal, the form, the hint. */
void ml_oom_alloc_numbers(struct ml_oom_event *e, const char *msg);

/* Has the allocator message ended (its hint, documentation pointer or bracketed accounting)? */
bool ml_oom_alloc_complete(const char *msg);

/* ---- context.c, context_cues.c, context_events.c ----------------------------------------- */

/* "[rank3]:" / "[Rank 3]" / "rank=3" near the start of a line (m: its anchor groups, which say
 * which spellings it may hold; no anchor starts in l[0..from)): the rank, -1 if none; *body is the
 * text after a "[rankN]:" prefix (else l). */
int32_t ml_oom_line_rank(const char *l, uint64_t m, const char **body, size_t from);

/* Store a finished event with its context (frames, phase, timing), merging it into an identical
 * one; its traceback may follow (ml_oom_close_after). */
void ml_oom_commit(struct ml_oom_scanner *s, struct ml_oom_event *e);

/* Close the frames-after window of the last stored event. */
void ml_oom_close_after(struct ml_oom_scanner *s);

/* The context before a line's events: the window of frames after the last event, tracebacks,
 * frame and code lines and serving spans. Returns whether the line is a frame line. */
bool ml_oom_track_frames(struct ml_oom_scanner *s, const char *l, const char *body, uint64_t m);

/* The context after a line's events: launcher lines, progress, saves, evaluation, loading,
 * resuming, versions, DeepSpeed and vLLM lines, stack flags (len: strlen(l)). events_before: the
 * incident's n_events_seen before the line's events were read; no anchor of G_STEP starts in
 * l[0..step_from) (the step counters are looked for from there). */
void ml_oom_track_line(struct ml_oom_scanner *s, const char *l, size_t len, uint64_t m, bool frame,
                       uint64_t events_before, size_t step_from);

/* The step's evidence text (step_ref.text) where it still lies in the input: copied into to->text
 * (an event's copy of step_ref); nothing when step_ref.text holds it. */
void ml_oom_step_ref_text(const struct ml_oom_scanner *s, struct ml_oom_ref *to);

/* Copy the step's evidence text into step_ref.text before the input it lies in is left. */
void ml_oom_step_ref_settle(struct ml_oom_scanner *s);

/* Cues of the lines around an exception line: the code line just before it (the failing frame's
 * code in a traceback), and the text before the message on its own line (before[0..n)). */
void ml_oom_code_before(struct ml_oom_scanner *s, const char *before, size_t n);

/* The groups whose facts the incident knows once and for all (they can be retired). */
uint64_t ml_oom_known_groups(const struct ml_incident *inc);

/* The context of a new input: nothing seen yet. */
void ml_oom_context_begin(struct ml_oom_scanner *s);

/* At the end of an input: timing and phase clean-up once the frames after each event are known. */
void ml_oom_finish_events(struct ml_oom_scanner *s);

#endif /* ML_OOM_SCANNER_H */
