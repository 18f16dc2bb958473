/*
 * run.h - a training or serving run as the user describes it (a model argument, the LLaMA-Factory
 * YAML, the DeepSpeed JSON, --set, a launcher's command line, the flags) turned into what the
 * ledgers take: the model, struct ml_train, the cluster, the inventory and the ledger.
 *
 * Config layer (lib/run/, library ml_run): it reads the files, asks about paths and the
 * environment and says its notes, warnings and errors only through the caller's struct ml_io,
 * so it does no I/O of its own (tests/check_pure.sh). The command line's struct ml_io is
 * ml_cli_io() over src/io.h (src/cli.c); in the web page the same calls are served from memory
 * (web/io_web.c).
 */
#ifndef ML_RUN_H
#define ML_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/buf.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/model_ref.h"
#include "memledger/status.h"
#include "memledger/train.h"

/* What a path names. */
enum ml_path_kind { ML_PATH_NONE, ML_PATH_FILE, ML_PATH_DIR };

/* What the library asks of the program that embeds it (its host). Every member is set. */
struct ml_io {
    enum ml_path_kind (*path_kind)(const char *path);
    /* A whole file ("-" = standard input), at most max bytes; errors name the file (d->origin). */
    ml_read_fn read_file;
    bool (*same_file)(const char *a, const char *b);
    const char *(*env)(const char *name); /* NULL when unset */
    /* Messages, said when they happen: a diagnostic ("memledger: ORIGIN:LINE: MSG"); an error
     * (cmd NULL: "memledger: MSG"; else a usage error of memledger CMD); a warning; a line of
     * stderr as it is (its own newline). */
    void (*report)(const struct ml_diag *d);
    void (*error)(const char *cmd, const char *msg);
    void (*warn)(const char *msg);
    void (*say)(const char *line);
};

/* Config files are small; a larger "config" is refused before parsing. */
#define ML_CONFIG_READ_MAX ((size_t)16 << 20)

/*
 * A model argument: a config.json or a directory holding one when the host has it; else a
 * built-in name, hub id or a name with known suffixes (-Instruct, -AWQ, ...), or a local path the
 * host lacks by its last component (ml_catalog_resolve; what it assumed is said as a note).
 * Unknown names get "did you mean" suggestions. Duplicated keys of a config.json are warned.
 */
enum ml_status ml_model_resolve(const struct ml_io *io, const char *arg, struct ml_model_ref *out, struct ml_diag *d);

/* The model a config file's model_name_or_path names (yaml_model, as written; a local path in it
 * relative to run_dir, NULL = here), resolved. An empty one is a usage error of cmd; an error
 * resolving it names config and says a MODEL argument overrides it. False after the error. */
bool ml_run_yaml_model(const struct ml_io *io, const char *cmd, const char *config, const char *yaml_model,
                       const char *run_dir, struct ml_model_ref *m);

/* What a serving command needs before its ledger: the model (ml_model_resolve), the card or size
 * named by gpu (cl->gpu; the rest of *cl zeroed) and the inventory. Reports the first problem
 * through the host and returns false. */
bool ml_run_serving(const struct ml_io *io, const char *model, const char *gpu, struct ml_model_ref *m,
                    struct ml_cluster *cl, struct ml_inventory *inv);

/* ml_run_serving for a model already resolved: the card and the inventory. */
bool ml_run_serving_card(const struct ml_io *io, const char *gpu, const struct ml_model_ref *m, struct ml_cluster *cl,
                         struct ml_inventory *inv);

/* A count option in [lo, hi], and a word of names[] (its index in *out): false after a usage
 * error of cmd naming opt, said through the host. */
bool ml_run_opt_u64(const struct ml_io *io, const char *cmd, const char *opt, const char *val, uint64_t lo, uint64_t hi,
                    uint64_t *out);
bool ml_run_opt_word(const struct ml_io *io, const char *cmd, const char *opt, const char *val,
                     const char *const *names, int n, int *out);

#define ML_TRAIN_MAX_SETS 32

/* The training options as given (strings borrowed from argv; NULL = not given). */
struct ml_train_opts {
    const char *cmd; /* "train", "compare": named in usage errors */
    const char *model, *config, *deepspeed, *gpu, *host_ram;
    const char *run_dir;        /* --run-dir: where the framework runs (NULL = here) */
    const char *accelerate;     /* --accelerate FILE: an accelerate config */
    const char *const *lf_argv; /* `train ... -- llamafactory-cli train ...` */
    int lf_argc;                /* 0: none */
    const char *lf_line;        /* --lf "COMMAND LINE" (split in ml_run_build) */
    const char *sets[ML_TRAIN_MAX_SETS];
    int n_sets;
    enum ml_framework fw;
    /* Flag overrides, applied after the files: each row of ML_SETTINGS (settings.h) keeps its
     * flag's text in its field (NULL: not given). */
#define ML_TRAIN_OPTS_FIELD(id, track, flag, field, ...) const char *field;
    ML_SETTINGS(ML_TRAIN_OPTS_FIELD)
#undef ML_TRAIN_OPTS_FIELD
    bool eval, expseg;
    uint64_t num_gpus, nodes;     /* default 1 */
    bool num_gpus_set, nodes_set; /* given on the command line */
};

/* How the DeepSpeed file of a run was found (ml_run_read). */
enum ml_ds_how {
    ML_DS_NONE,       /* no DeepSpeed file */
    ML_DS_FLAG,       /* --deepspeed, as given */
    ML_DS_RUN_DIR,    /* the YAML's deepspeed: from the run directory, as LLaMA-Factory does */
    ML_DS_BESIDE_YAML /* not in the run directory; the file beside the YAML (warned) */
};

/* The shared config inputs of train, fit, compare and diagnose. */
struct ml_train_files {
    const char *config, *deepspeed, *run_dir; /* as given; run_dir NULL = the working directory */
    const char *const *sets;
    int n_sets;
    const struct ml_train_override *ov; /* a LLaMA-Factory command line's overrides (NULL none) */
    size_t n_ov;
    /* --zero as given (NULL none): it stands in for a YAML's deepspeed: file that is not there,
     * with LLaMA-Factory's ds_zN_config.json values. run_flags: the command has --zero and
     * --run-dir, so the error for a missing file names them as ways on. */
    const char *zero;
    bool run_flags;
};

/* What ml_run_read read, and where each setting came from. */
struct ml_train_read {
    char model[512];    /* the YAML's model_name_or_path ("" none) */
    char yaml_ds[512];  /* the YAML's deepspeed: as written ("" none) */
    char ds_path[1024]; /* the DeepSpeed file read ("" none) */
    enum ml_ds_how ds_how;
    /* The settings after each input, for which one won (ml_run_build). */
    struct ml_train defaults, after_yaml, after_ds, after_sets;
    struct ml_train alt_yaml, alt_ds; /* the files over perturbed defaults: what they set */
    bool have_alt;
    int8_t set_of[ML_TK_COUNT]; /* per tracked setting: the last --set that changed it, -1 none */
};

/* Everything the ledger needs, and the ledger. Large: keep it static or on the heap. */
struct ml_train_setup {
    char ds_path[1024]; /* the DeepSpeed file read ("" if none): fit patches it */
    struct ml_train_read rd;
    struct ml_model_ref m;
    struct ml_train t;
    struct ml_warnings warnings; /* t.warnings points here */
    struct ml_cluster cl;
    struct ml_inventory inv;
    struct ml_ledger l;
    char *lf_buf; /* --lf's words (kept: the options point into them) */
    const char **lf_words;
    struct ml_train_override *lf_ov; /* the command line's overrides (into argv or lf_buf) */
    size_t lf_n_ov;
};

/*
 * The DeepSpeed JSON a run uses, found as the framework finds it: --deepspeed as given; else the
 * YAML's deepspeed: value, which LLaMA-Factory hands to transformers' TrainingArguments unchanged
 * and accelerate's HfDeepSpeedConfig opens with os.path.exists/open, i.e. relative to the
 * directory the run is started in (run_dir, NULL = the working directory). When it is not there
 * but beside the YAML, that file is read with a warning (a run started there); when --run-dir was
 * given, or it is nowhere, f->zero stands in for it with a warning, or it is an error naming the
 * YAML and the options that would go on. Says which file is read (one line) and any error; false
 * on an error.
 */
bool ml_run_ds_resolve(const struct ml_io *io, const struct ml_train_files *f, struct ml_train_read *rd);

/* Read the run's files over *t (its defaults already set): the YAML, the DeepSpeed JSON
 * (ml_run_ds_resolve), then each --set. Reports the first error and returns false. */
bool ml_run_read(const struct ml_io *io, const struct ml_train_files *f, struct ml_train *t, struct ml_train_read *rd);

/*
 * Read the files, apply --set and the flags, resolve the model and the GPU, build the inventory
 * and the ledger. Reports the error and returns false on failure (a usage error: exit 2). The
 * words of --lf and the command line's overrides (s->lf_buf, lf_words, lf_ov) live as long as
 * the setup: the options point into them. *s starts zeroed, or released.
 */
bool ml_run_build(const struct ml_io *io, const struct ml_train_opts *o, struct ml_train_setup *s);

/* Free what ml_run_build allocated in s (NULL afterwards; safe to call twice). */
void ml_run_release(struct ml_train_setup *s);

#endif /* ML_RUN_H */
