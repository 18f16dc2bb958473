/*
 * read.c - a run's files read as the framework reads them (run.h): the LLaMA-Factory YAML with a
 * command line's overrides, the DeepSpeed JSON found where LLaMA-Factory finds it, each --set;
 * and, for the override warnings, which input set each tracked setting.
 */
#include "run_int.h"

#include <stdio.h>
#include <string.h>

#include "i18n.h"

/* The directory part of a path ("" for none), for files named relative to the YAML. */
static void dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        out[0] = '\0';
    else
        (void)snprintf(out, n, "%.*s/", (int)(slash - path), path);
}

static bool is_file(const struct ml_io *io, const char *p)
{
    return io->path_kind(p) == ML_PATH_FILE;
}

bool ml_run_ds_resolve(const struct ml_io *io, const struct ml_train_files *f, struct ml_train_read *rd)
{
    rd->ds_path[0] = '\0';
    rd->ds_how = ML_DS_NONE;
    const char *yname = f->config ? ml_path_base(f->config) : "";
    if (f->deepspeed) {
        (void)snprintf(rd->ds_path, sizeof(rd->ds_path), "%s", f->deepspeed);
        rd->ds_how = ML_DS_FLAG;
        char yaml_file[1024];
        ml_run_join(f->run_dir, rd->yaml_ds, yaml_file, sizeof(yaml_file));
        /* Only when they differ: the page (docs/web.md) names the YAML's own file with --deepspeed. */
        if (rd->yaml_ds[0] && strcmp(f->deepspeed, rd->yaml_ds) && !io->same_file(f->deepspeed, yaml_file))
            ml_io_warnf(io, _("--deepspeed %s wins over %s's deepspeed: %s (the flag overrides the YAML)"),
                        f->deepspeed, yname, rd->yaml_ds);
        return true;
    }
    if (!rd->yaml_ds[0])
        return true;
    /* LLaMA-Factory passes deepspeed: to transformers' TrainingArguments as written (hparams/
     * parser.py); TrainingArguments.__post_init__ builds HfTrainerDeepSpeedConfig from it, and
     * accelerate's HfDeepSpeedConfig.__init__ opens it if os.path.exists(): relative to the
     * directory the run starts in, never to the YAML's folder. */
    char where[1100];
    if (f->run_dir)
        (void)snprintf(where, sizeof(where), _("the run directory %s"), f->run_dir);
    else
        (void)snprintf(where, sizeof(where), "%s", _("the working directory"));
    char run[1024], beside[1024], ydir[1024] = "";
    ml_run_join(f->run_dir, rd->yaml_ds, run, sizeof(run));
    if (f->config)
        dir_of(f->config, ydir, sizeof(ydir));
    ml_run_join(ydir, rd->yaml_ds, beside, sizeof(beside));
    if (is_file(io, run)) {
        (void)snprintf(rd->ds_path, sizeof(rd->ds_path), "%s", run);
        rd->ds_how = ML_DS_RUN_DIR;
        if (strcmp(run, beside) && is_file(io, beside) && !io->same_file(run, beside))
            ml_io_warnf(
                io,
                _("DeepSpeed config: %s, not %s beside the YAML: LLaMA-Factory resolves %s's deepspeed: %s from %s"),
                run, beside, yname, rd->yaml_ds, where);
        else
            ml_io_sayf(
                io, _("memledger: DeepSpeed config: %s (%s's deepspeed: %s, from %s, as LLaMA-Factory resolves it)\n"),
                run, yname, rd->yaml_ds, where);
        return true;
    }
    if (!f->run_dir && rd->yaml_ds[0] != '/' && is_file(io, beside)) {
        (void)snprintf(rd->ds_path, sizeof(rd->ds_path), "%s", beside);
        rd->ds_how = ML_DS_BESIDE_YAML;
        size_t yl = strlen(ydir);
        if (yl > 1 && ydir[yl - 1] == '/')
            ydir[yl - 1] = '\0';
        ml_io_warnf(io,
                    _("DeepSpeed config: %s beside the YAML, as for a run started in %s: LLaMA-Factory started in %s "
                      "would not find %s's deepspeed: %s (--run-dir names where it runs)"),
                    beside, ydir[0] ? ydir : ".", where, yname, rd->yaml_ds);
        return true;
    }
    /* LLaMA-Factory's own examples name examples/deepspeed/ds_zN_config.json, there only in its
     * checkout: --zero N takes that file's values (ml_zero_preset), so the file is not needed. */
    char nowhere[1200];
    if (f->run_dir || rd->yaml_ds[0] == '/')
        (void)snprintf(nowhere, sizeof(nowhere), "%s", where);
    else
        (void)snprintf(nowhere, sizeof(nowhere), _("%s or beside the YAML"), where);
    if (f->zero) {
        ml_io_warnf(io,
                    _("--zero %s wins over %s's deepspeed: %s, which is not in %s: LLaMA-Factory's "
                      "ds_z%s_config.json values are used (--deepspeed FILE reads a file instead)"),
                    f->zero, yname, rd->yaml_ds, nowhere, f->zero);
        return true;
    }
    if (f->run_flags)
        ml_io_errorf(io, NULL,
                     _("%s: deepspeed: %s: no such file in %s, where LLaMA-Factory looks for it; give the file with "
                       "--deepspeed FILE, the directory the run starts in with --run-dir DIR, or LLaMA-Factory's "
                       "ds_zN_config.json with --zero N"),
                     f->config, rd->yaml_ds, nowhere);
    else
        ml_io_errorf(io, NULL,
                     _("%s: deepspeed: %s: no such file in %s, where LLaMA-Factory looks for it; give the file with "
                       "--deepspeed FILE"),
                     f->config, rd->yaml_ds, nowhere);
    return false;
}

bool ml_run_load(const struct ml_io *io, const char *path, bool yaml, struct ml_train *t, char *model, size_t model_n,
                 char *ds, size_t ds_n, bool quiet)
{
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf b;
    ml_buf_init(&b, (size_t)4 << 20);
    enum ml_status st = io->read_file(path, (size_t)4 << 20, &b, &d);
    if (st == ML_OK)
        st = yaml ? ml_train_apply_yaml(t, b.buf, b.len, path, model, model_n, ds, ds_n, &d)
                  : ml_zero_from_json(t, b.buf, b.len, path, &d);
    ml_buf_release(&b);
    if (st != ML_OK && !quiet)
        io->report(&d);
    return st == ML_OK;
}

/* The YAML with a LLaMA-Factory command line's overrides merged over it (f->ov; no YAML at all
 * for the --key value form). */
static bool read_yaml(const struct ml_io *io, const struct ml_train_files *f, struct ml_train *t, char *model,
                      size_t model_n, char *ds, size_t ds_n, bool quiet)
{
    if (!f->n_ov)
        return !f->config || ml_run_load(io, f->config, true, t, model, model_n, ds, ds_n, quiet);
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf b;
    ml_buf_init(&b, (size_t)4 << 20);
    enum ml_status st = f->config ? io->read_file(f->config, (size_t)4 << 20, &b, &d) : ML_OK;
    if (st == ML_OK)
        st = ml_train_apply_yaml_with(t, b.buf, b.len, f->config, f->ov, f->n_ov, "command line", model, model_n, ds,
                                      ds_n, &d);
    ml_buf_release(&b);
    if (st != ML_OK && !quiet)
        io->report(&d);
    return st == ML_OK;
}

/* ---- where each setting came from -------------------------------------------------------- */

/* The files read again, quietly, over perturbed defaults (rd->alt_yaml, rd->alt_ds); false when
 * that reading fails (then a setting counts as a file's when its value differs from the default). */
static bool read_alt(const struct ml_io *io, const struct ml_train_files *f, struct ml_train_read *rd)
{
    if ((f->config && !strcmp(f->config, "-")) || !strcmp(rd->ds_path, "-"))
        return false; /* standard input cannot be read twice */
    struct ml_train t = rd->defaults;
    ml_tracked_perturb(&t);
    t.warnings = NULL;
    char model[512], ds[512];
    if (!read_yaml(io, f, &t, model, sizeof(model), ds, sizeof(ds), true))
        return false;
    rd->alt_yaml = t;
    if (rd->ds_path[0] && !ml_run_load(io, rd->ds_path, false, &t, NULL, 0, NULL, 0, true))
        return false;
    rd->alt_ds = t;
    return true;
}

const char *ml_run_set_by(const struct ml_train_files *f, const struct ml_train_read *rd, int k)
{
    if (rd->set_of[k] >= 0)
        return f->sets[rd->set_of[k]];
    bool alt = rd->have_alt && k != ML_TK_QBITS;
    bool by_files = alt ? !ml_tracked_differs((enum ml_tracked)k, &rd->after_ds, &rd->alt_ds)
                        : ml_tracked_differs((enum ml_tracked)k, &rd->after_ds, &rd->defaults);
    if (!by_files)
        return NULL;
    bool by_yaml = alt ? !ml_tracked_differs((enum ml_tracked)k, &rd->after_yaml, &rd->alt_yaml)
                       : ml_tracked_differs((enum ml_tracked)k, &rd->after_yaml, &rd->defaults);
    return !by_yaml || ml_tracked_differs((enum ml_tracked)k, &rd->after_ds, &rd->after_yaml) ? rd->ds_path : f->config;
}

bool ml_run_read(const struct ml_io *io, const struct ml_train_files *f, struct ml_train *t, struct ml_train_read *rd)
{
    rd->model[0] = rd->yaml_ds[0] = rd->ds_path[0] = '\0';
    rd->ds_how = ML_DS_NONE;
    for (int k = 0; k < ML_TK_COUNT; k++)
        rd->set_of[k] = -1;
    rd->defaults = *t;
    if (!read_yaml(io, f, t, rd->model, sizeof(rd->model), rd->yaml_ds, sizeof(rd->yaml_ds), false))
        return false;
    rd->after_yaml = *t;
    if (!ml_run_ds_resolve(io, f, rd))
        return false;
    if (rd->ds_path[0] && !ml_run_load(io, rd->ds_path, false, t, NULL, 0, NULL, 0, false))
        return false;
    rd->after_ds = *t;
    ml_train_set_repeats(t, f->sets, f->n_sets);
    for (int i = 0; i < f->n_sets; i++) {
        struct ml_diag d;
        ml_diag_init(&d);
        struct ml_train before = *t;
        if (ml_train_set(t, f->sets[i], &d) != ML_OK) {
            ml_diag_at(&d, "--set", 0, 0);
            io->report(&d);
            return false;
        }
        /* Over perturbed settings too: a --set to the value already in force still sets it. */
        struct ml_train alt = before;
        alt.warnings = NULL;
        ml_tracked_perturb(&alt);
        struct ml_train alt_before = alt;
        struct ml_diag e;
        ml_diag_init(&e);
        bool alt_ok = ml_train_set(&alt, f->sets[i], &e) == ML_OK;
        for (int k = 0; k < ML_TK_COUNT; k++)
            if (ml_tracked_differs((enum ml_tracked)k, &before, t) ||
                (alt_ok && ml_tracked_differs((enum ml_tracked)k, &alt_before, &alt)))
                rd->set_of[k] = (int8_t)i;
    }
    rd->after_sets = *t;
    rd->have_alt = read_alt(io, f, rd);
    return true;
}
