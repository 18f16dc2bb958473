/*
 * kinds.c - the facts of each OOM message kind, derived from ML_OOM_KINDS (oom.h), and the
 * names of devices, phases and timings.
 *
 * Every table is sized by its enum's count and checked to be so: a kind added to the list is
 * named, classed, phased and told in the same row, and cannot fall through to a default.
 */
#include "memledger/oom.h"

#include <string.h>

#include "i18n.h"

#define KIND_NAME(id, name, cls, phase, wraps, serving, story)    name,
#define KIND_CLASS(id, name, cls, phase, wraps, serving, story)   ML_OOM_CLASS_##cls,
#define KIND_PHASE(id, name, cls, phase, wraps, serving, story)   ML_OPH_##phase,
#define KIND_WRAPS(id, name, cls, phase, wraps, serving, story)   wraps,
#define KIND_SERVING(id, name, cls, phase, wraps, serving, story) serving,
#define KIND_STORY(id, name, cls, phase, wraps, serving, story)   story, /* translated when read */

/* Character arrays, not pointers: the tables need no relocation and stay read-only. */
static const char kind_names[][20] = {ML_OOM_KINDS(KIND_NAME)};
static const unsigned char kind_classes[] = {ML_OOM_KINDS(KIND_CLASS)};
static const unsigned char kind_phases[] = {ML_OOM_KINDS(KIND_PHASE)};
static const bool kind_wraps[] = {ML_OOM_KINDS(KIND_WRAPS)};
static const bool kind_serving[] = {ML_OOM_KINDS(KIND_SERVING)};
static const char kind_stories[][72] = {ML_OOM_KINDS(KIND_STORY)};

/* Each name and story fits its array with its NUL. */
#define KIND_FITS(id, name, cls, phase, wraps, serving, story)                                                         \
    _Static_assert(sizeof(name) <= sizeof(kind_names[0]) && sizeof(story) <= sizeof(kind_stories[0]), #id);
ML_OOM_KINDS(KIND_FITS)

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(N_OF(kind_names) == ML_OOM_KIND_COUNT, "a name per kind");
_Static_assert(N_OF(kind_classes) == ML_OOM_KIND_COUNT, "a class per kind");
_Static_assert(N_OF(kind_phases) == ML_OOM_KIND_COUNT, "a phase per kind");
_Static_assert(N_OF(kind_wraps) == ML_OOM_KIND_COUNT, "wraps or not, per kind");
_Static_assert(N_OF(kind_serving) == ML_OOM_KIND_COUNT, "serving or not, per kind");
_Static_assert(N_OF(kind_stories) == ML_OOM_KIND_COUNT, "a story per kind");

static bool known(enum ml_oom_kind k)
{
    return (unsigned)k < ML_OOM_KIND_COUNT;
}

const char *ml_oom_kind_name(enum ml_oom_kind k)
{
    return known(k) ? kind_names[k] : "unknown";
}

enum ml_oom_class ml_oom_kind_class(enum ml_oom_kind k)
{
    return known(k) ? (enum ml_oom_class)kind_classes[k] : ML_OOM_CLASS_COUNT;
}

enum ml_oom_phase ml_oom_kind_phase(enum ml_oom_kind k)
{
    return known(k) ? (enum ml_oom_phase)kind_phases[k] : ML_OPH_UNKNOWN;
}

bool ml_oom_kind_wraps(enum ml_oom_kind k)
{
    return known(k) && kind_wraps[k];
}

bool ml_oom_kind_serving(enum ml_oom_kind k)
{
    return known(k) && kind_serving[k];
}

bool ml_oom_engine_pool_refused(const struct ml_oom_event *e)
{
    /* (SGLang's kind is also its prefill / decode out of memory at run time: grammar.c's rows) */
    return e->kind == ML_OOM_VLLM_KV_TOO_SMALL || e->kind == ML_OOM_VLLM_NO_CACHE ||
           (e->kind == ML_OOM_SGLANG && strstr(e->text, "Not enough memory"));
}

const char *ml_oom_kind_story(enum ml_oom_kind k)
{
    return known(k) ? _(kind_stories[k]) : "";
}

const char *ml_oom_device_name(enum ml_oom_device d)
{
    static const char n[][12] = {"unknown", "cuda", "hip", "npu", "xpu", "mps", "musa", "other", "cpu-host"};
    _Static_assert(sizeof(n) / sizeof(n[0]) == ML_DEV_COUNT, "device names");
    return (unsigned)d < ML_DEV_COUNT ? n[d] : "unknown";
}

const char *ml_oom_phase_name(enum ml_oom_phase p)
{
    static const char n[][20] = {
        "load",       "forward", "loss",     "backward",        "optimizer_step",  "checkpoint_save",
        "after_save", "eval",    "generate", "serving_startup", "serving_runtime", "communication",
        "unknown",
    };
    _Static_assert(sizeof(n) / sizeof(n[0]) == ML_OPH_COUNT, "phase names");
    return (unsigned)p < ML_OPH_COUNT ? n[p] : "unknown";
}

const char *ml_oom_timing_name(enum ml_oom_timing t)
{
    static const char n[][12] = {
        "unknown", "load", "first_step", "after_save", "at_save", "at_eval", "mid_run", "resume", "startup",
    };
    _Static_assert(sizeof(n) / sizeof(n[0]) == ML_TIM_COUNT, "timing names");
    return (unsigned)t < ML_TIM_COUNT ? n[t] : "unknown";
}

const char *ml_oom_episode_name(enum ml_serve_episode e)
{
    static const char n[][16] = {"", "weights_load", "profile_run", "sampler_warmup", "kv_pool", "graph_capture"};
    _Static_assert(sizeof(n) / sizeof(n[0]) == ML_EP_COUNT, "episode names");
    return (unsigned)e < ML_EP_COUNT ? n[e] : "";
}
