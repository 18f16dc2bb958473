/*
 * oom_settings.h - the run a diagnosis prices, from the command line's flags and the log's own
 * lines (lib/diagnose/settings.c).
 *
 * `memledger diagnose` takes what the flags and the configs give and fills the rest from the log:
 * the card from the OOM message's "total capacity" (or vLLM's profiling line), the GPU count whose
 * ledger matches the log, a serving engine's settings from its error, its profiling line and its
 * engine line (max_model_len, tp/pp, dtype, quantization, KV dtype, eager, the vLLM version).
 * Pure: structs in, structs out; names are resolved through the caller's struct ml_diag_io, and
 * files are read by src/.
 */
#ifndef ML_OOM_SETTINGS_H
#define ML_OOM_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "memledger/diagnose.h"
#include "memledger/gpu.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/model_ref.h"
#include "memledger/oom.h"
#include "memledger/train.h"

/* A serving engine's settings as the flags give them, and which of them the flags gave (the log
 * fills the others). */
struct ml_diag_serve_flags {
    struct ml_infer si; /* infer's defaults, then the flags (ml_infer_option) */
    bool engine, util, max_model_len, vllm_version, tp, dtype, quant, kv_dtype;
};

/* Serving option name ("max-model-len") was given: mark it in f (the others are not tracked). */
void ml_diag_serve_given(struct ml_diag_serve_flags *f, const char *name);

/* The run a diagnosis prices. Large (the inventory): the caller keeps it static or on the heap. */
struct ml_diag_run {
    struct ml_model_ref m; /* the model, when have */
    struct ml_train t;     /* the training settings (defaults without a config) */
    struct ml_inventory inv;
    struct ml_cluster cl;    /* the card and the GPU count */
    struct ml_infer si;      /* a serving engine's settings, when serving */
    bool have;               /* model and settings known */
    bool have_cluster;       /* GPU capacity and count known */
    bool world_guessed;      /* the GPU count is the one whose ledger matches the log */
    bool capacity_from_log;  /* the card is the log's total capacity */
    bool serving;            /* a serving engine: si, with m, inv and cl */
    bool model_from_log;     /* the model is the one vLLM's engine line names */
    char config_name[128];   /* the YAML's file name, "" if none */
    char ds_name[128];       /* the DeepSpeed JSON's file name, "" if none */
    struct ml_log_args args; /* the run settings the log prints (ml_log_args_feed by the reader) */
};

/* Whether the incident is a serving engine's: an engine's own error, a serving phase, or an
 * engine in the log and no training stack. False without events. */
bool ml_diag_serving_incident(const struct ml_incident *inc);

/* The card the log states: the primary event's total capacity, for a serving engine else vLLM's
 * profiling line (total_gpu_memory); its vendor from the event's device. False (and *g zeroed)
 * when the log states none. */
bool ml_diag_gpu_from_log(const struct ml_incident *inc, bool serving, struct ml_gpu *g);

/* A serving engine's settings: the flags, else what the log says (the engine, max_model_len, the
 * utilization of its profiling line or error, the engine line, the vLLM version), else the
 * settings it prints (a, may be NULL: --max-model-len in its command line). The incident has a
 * primary event. */
void ml_diag_serving_settings(const struct ml_incident *inc, const struct ml_diag_serve_flags *f,
                              const struct ml_log_args *a, struct ml_infer *si);

/* GPUs per node and nodes: num_gpus when given (0 = not), else the count whose ledger matches
 * the log (r->world_guessed), split over nodes (0 = not given, 1). r has the model, the settings
 * and the card. */
void ml_diag_cluster_size(const struct ml_incident *inc, uint64_t num_gpus, uint64_t nodes, struct ml_diag_run *r);

/* What ml_diagnose reads of the run: pointers into r (which must outlive su). */
void ml_diag_setup_of(const struct ml_diag_run *r, struct ml_diag_setup *su);

/* How a diagnosis resolves names: the caller's (src/: ml_resolve_model, which reads a config.json
 * or directory, and ml_gpu_resolve). Errors in d. */
struct ml_diag_io {
    enum ml_status (*resolve_model)(const char *name, struct ml_model_ref *m, struct ml_diag *d);
    enum ml_status (*resolve_gpu)(const char *name, struct ml_gpu *g, struct ml_diag *d);
};

/* No model given and no training config: the model a serving engine's own engine line names
 * (ml_diag_run_settle resolves it), else NULL. */
const char *ml_diag_log_model(const struct ml_incident *inc, const struct ml_diag_run *r, bool config);

/* r->m resolved: its parameter inventory, and r->have. Errors name r->m.source. */
enum ml_status ml_diag_run_model(struct ml_diag_run *r, struct ml_diag *d);

/* The model named (--model, the YAML's) into r through io, with its inventory (ml_diag_run_model). */
enum ml_status ml_diag_run_resolve(struct ml_diag_run *r, const char *model, const struct ml_diag_io *io,
                                   struct ml_diag *d);

/* --host-ram SIZE (ml_size_parse); errors name "--host-ram" as their origin. */
enum ml_status ml_diag_host_ram(const char *s, uint64_t *bytes, struct ml_diag *d);

/* What the command line gives the run beside the configs. */
struct ml_diag_run_flags {
    const char *gpu;                         /* --gpu as given; NULL: the card the log states */
    const char *host_ram;                    /* --host-ram as given; NULL: none */
    uint64_t num_gpus, nodes;                /* 0: from the log */
    const struct ml_diag_serve_flags *serve; /* the serving options */
    bool serve_opts;                         /* a serving option was given */
    bool config;                             /* a training config was given */
    enum ml_framework fw;                    /* --framework: the defaults of a model the log names */
};

/* --gpu and --host-ram are checked before any log is read, also when no run uses them (r has no
 * model). Errors: --gpu's (origin "--gpu"), else *usage and --host-ram's (origin "--host-ram"). */
enum ml_status ml_diag_check_flags(const struct ml_diag_run_flags *f, const struct ml_diag_io *io,
                                   const struct ml_diag_run *r, bool *usage, struct ml_diag *d);

/*
 * The run of an incident with events. No model and no training config: the model the log's
 * engine line names, when this build knows it (ml_diag_log_model; r->model_from_log). With a
 * model: the card (f->gpu through io, else the log's), then a serving engine (no training config,
 * and a serving option or a serving incident: ml_diag_serving_settings on tp x pp cards) or a
 * training run (ml_diag_cluster_size). Errors: --gpu's (origin "--gpu"); *usage for settings the
 * serving ledger refuses (no origin) and a bad --host-ram (origin "--host-ram"); else training
 * settings that contradict each other (ml_train_check). scratch: the serving ledger's,
 * caller-owned.
 */
enum ml_status ml_diag_run_settle(const struct ml_incident *inc, const struct ml_diag_run_flags *f,
                                  const struct ml_diag_io *io, struct ml_diag_run *r, struct ml_ledger *scratch,
                                  bool *usage, struct ml_diag *d);

/* The names the report gives the run's files: the training YAML's and the DeepSpeed JSON's last
 * components (NULL or "": none). */
void ml_diag_run_files(struct ml_diag_run *r, const char *config, const char *ds_path);

/* ml_diagnose of the incident with the run settled (ml_diag_setup_of). */
enum ml_status ml_diag_run_diagnose(const struct ml_incident *inc, const struct ml_diag_run *r, struct ml_diagnosis *dg,
                                    struct ml_diag *d);

/* The names the report gives the n logs: each path's last component, "-" as "<stdin>"; none
 * given: the one "<stdin>" read (names holds max(n, 1)). */
void ml_diag_log_names(const char *const *paths, uint32_t n, const char **names);

#endif /* ML_OOM_SETTINGS_H */
