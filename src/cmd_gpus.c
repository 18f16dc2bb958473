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

static int gpus_opt(void *ctx, int id, const char *name, const char *arg)
{
    (void)id, (void)name, (void)arg;
    *(bool *)ctx = true; /* --json, its one option */
    return ML_EXIT_OK;
}

int cmd_gpus(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const struct ml_cli_spec spec = {"gpus", cmd_gpus_usage, longopts, 1, false};
    bool json = false;
    int first = 0;
    int rc = ml_cli_parse(&spec, argc, argv, gpus_opt, &json, &first);
    if (rc != ML_EXIT_OK)
        return rc < 0 ? ML_EXIT_OK : rc;

    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status st;
    if (first < argc) {
        struct ml_gpu g;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_gpu_resolve(argv[first], &g, &d) != ML_OK) {
            ml_diag_at(&d, "--gpu", 0, 0);
            ml_report(&d);
            ml_buf_release(&out);
            return ML_EXIT_USAGE;
        }
        st = ml_render_gpu(&out, argv[first], &g, json);
    } else {
        st = ml_render_gpus(&out, json);
    }
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    return st == ML_OK ? ML_EXIT_OK : ML_EXIT_USAGE;
}
