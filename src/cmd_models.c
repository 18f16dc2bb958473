/*
 * cmd_models.c - memledger models: the built-in model catalog (ml_render_models,
 * lib/render/catalog_list.c).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

#include "memledger/catalog.h"
#include "i18n.h"

/* cmd_models_usage: generated from docs/cli/models.md (tools/gen_cli_docs.c). */

static int models_opt(void *ctx, int id, const char *name, const char *arg)
{
    (void)name, (void)arg;
    ((bool *)ctx)[id == 't'] = true;
    return ML_EXIT_OK;
}

int cmd_models(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"types", no_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const struct ml_cli_spec spec = {"models", cmd_models_usage, longopts, 0, false};
    bool flags[2] = {false, false}; /* --json, --types */
    int first;
    int rc = ml_cli_parse(&spec, argc, argv, models_opt, flags, &first);
    if (rc != ML_EXIT_OK)
        return rc < 0 ? ML_EXIT_OK : rc;
    bool json = flags[0], types = flags[1];
    struct ml_buf out;
    ml_buf_init(&out, 0);
    size_t n_bad = 0;
    enum ml_status st = types ? ml_render_model_types(&out, json) : ml_render_models(&out, json, ml_report, &n_bad);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    return st == ML_OK && !n_bad ? ML_EXIT_OK : ML_EXIT_USAGE;
}
