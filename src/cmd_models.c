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

int cmd_models(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"types", no_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, types = false;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'j') {
            json = true;
        } else if (c == 't') {
            types = true;
        } else if (c == 'h') {
            fputs(_(cmd_models_usage), stdout);
            return ML_EXIT_OK;
        } else {
            return ml_usage_error("models", _("unknown option '%s'"), argv[optind - 1]);
        }
    }
    if (optind < argc)
        return ml_usage_error("models", _("unexpected argument '%s'"), argv[optind]);
    struct ml_buf out;
    ml_buf_init(&out, 0);
    size_t n_bad = 0;
    enum ml_status st = types ? ml_render_model_types(&out, json) : ml_render_models(&out, json, ml_report, &n_bad);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    return st == ML_OK && !n_bad ? ML_EXIT_OK : ML_EXIT_USAGE;
}
