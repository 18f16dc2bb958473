/*
 * cmd_gpus.c - memledger gpus: the built-in GPU catalog and the capacity each card gives
 * (ml_render_gpus, lib/render/gpu_list.c).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

#include "memledger/gpu.h"
#include "i18n.h"

/* cmd_gpus_usage: generated from docs/cli/gpus.md (tools/gen_cli_docs.c). */

int cmd_gpus(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'j') {
            json = true;
        } else if (c == 'h') {
            fputs(_(cmd_gpus_usage), stdout);
            return ML_EXIT_OK;
        } else {
            return ml_usage_error("gpus", _("unknown option '%s'"), argv[optind - 1]);
        }
    }
    if (optind + 1 < argc)
        return ml_usage_error("gpus", _("unexpected argument '%s'"), argv[optind + 1]);

    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status st;
    if (optind < argc) {
        struct ml_gpu g;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_gpu_resolve(argv[optind], &g, &d) != ML_OK) {
            ml_diag_at(&d, "--gpu", 0, 0);
            ml_report(&d);
            ml_buf_release(&out);
            return ML_EXIT_USAGE;
        }
        st = ml_render_gpu(&out, argv[optind], &g, json);
    } else {
        st = ml_render_gpus(&out, json);
    }
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    return st == ML_OK ? ML_EXIT_OK : ML_EXIT_USAGE;
}
