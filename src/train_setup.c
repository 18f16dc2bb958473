/*
 * train_setup.c - the training options shared by `train`, `compare`, `fit` and `diagnose` (see
 * train_setup.h): getopt's results into struct ml_train_opts, and the library's run (run.h)
 * over the command line's host.
 */
#include "train_setup.h"

#include <stdio.h>
#include <string.h>

#include "i18n.h"

void ml_train_opts_init(struct ml_train_opts *o, const char *cmd)
{
    memset(o, 0, sizeof(*o));
    o->cmd = cmd;
    o->num_gpus = o->nodes = 1;
}

int ml_train_opt(struct ml_train_opts *o, int c, const char *arg)
{
    switch (c) {
#define ML_TO_STORE(name, field)                                                                                       \
    case ML_TO_##field:                                                                                                \
        o->field = arg;                                                                                                \
        break;
#define ML_TO_SETTING_STORE(id, track, name, field, ...) ML_TO_STORE(name, field)
        ML_TRAIN_INPUT_OPTS(ML_TO_STORE)
        ML_SETTINGS(ML_TO_SETTING_STORE)
    case ML_TO_SET:
        if (o->n_sets >= ML_TRAIN_MAX_SETS) {
            ml_usage_error(o->cmd, _("at most %d --set options"), ML_TRAIN_MAX_SETS);
            return -1;
        }
        o->sets[o->n_sets++] = arg;
        break;
    case ML_TO_FW:
        if (!ml_opt_framework(o->cmd, arg, &o->fw))
            return -1;
        break;
    case ML_TO_NGPU:
        if (!ml_opt_u64(o->cmd, "--num-gpus", arg, 1, 4096, &o->num_gpus))
            return -1;
        o->num_gpus_set = true;
        break;
    case ML_TO_NODES:
        if (!ml_opt_u64(o->cmd, "--nodes", arg, 1, 65536, &o->nodes))
            return -1;
        o->nodes_set = true;
        break;
    case ML_TO_EVAL: o->eval = true; break;
    case ML_TO_EXPSEG: o->expseg = true; break;
    default: return 0;
    }
    return 1;
}

bool ml_train_ds_resolve(const struct ml_train_files *f, struct ml_train_read *rd)
{
    return ml_run_ds_resolve(ml_cli_io(), f, rd);
}

bool ml_train_read(const struct ml_train_files *f, struct ml_train *t, struct ml_train_read *rd)
{
    return ml_run_read(ml_cli_io(), f, t, rd);
}

bool ml_train_read_configs(const char *config, const char *cli_ds, const char *const *sets, int n_sets,
                           struct ml_train *t, char *model, size_t model_n, char *ds_path, size_t ds_n)
{
    static struct ml_train_read rd;
    struct ml_train_files f = {config, cli_ds, NULL, sets, n_sets, NULL, 0, NULL, false};
    bool ok = ml_train_read(&f, t, &rd);
    (void)snprintf(model, model_n, "%s", ok ? rd.model : "");
    (void)snprintf(ds_path, ds_n, "%s", ok ? rd.ds_path : "");
    return ok;
}

int ml_train_setup_build(const struct ml_train_opts *o, struct ml_train_setup *s)
{
    ml_run_release(s); /* a setup built before (the web page's commands run many times) */
    return ml_run_build(ml_cli_io(), o, s) ? ML_EXIT_OK : ML_EXIT_USAGE;
}
