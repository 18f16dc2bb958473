/*
 * cmd_params.c - memledger params: the exact parameter inventory of a model.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/inventory.h"
#include "memledger/report.h"
#include "i18n.h"

/* cmd_params_usage: generated from docs/cli/params.md (tools/gen_cli_docs.c). */

struct params_opts {
    const char *model;
    bool json;
    bool lora;
    uint64_t rank;
    const char *targets;
};

int cmd_params(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"lora-rank", required_argument, NULL, 'r'},
        {"lora-target", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct params_opts o = {NULL, false, false, 8, "all"};
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (!ml_opt_u64("params", "--lora-rank", optarg, 1, 65536, &o.rank))
                return ML_EXIT_USAGE;
            o.lora = true;
            break;
        case 't':
            o.targets = optarg;
            o.lora = true;
            break;
        case 'j': o.json = true; break;
        case 'h': fputs(_(cmd_params_usage), stdout); return ML_EXIT_OK;
        default: return ml_usage_error("params", _("unknown or incomplete option '%s'"), argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return ml_usage_error("params", "%s", _("missing MODEL"));
    if (optind + 1 < argc)
        return ml_usage_error("params", _("unexpected argument '%s'"), argv[optind + 1]);
    o.model = argv[optind];

    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_model_ref m;
    enum ml_status st = ml_resolve_model(o.model, &m, &d);
    if (st != ML_OK) {
        ml_report(&d);
        return ml_exit_code(st);
    }
    struct ml_inventory inv;
    ml_diag_init(&d);
    st = ml_inventory_build(&m.arch, &inv, &d);
    if (st != ML_OK) {
        ml_diag_at(&d, m.source, 0, 0);
        ml_report(&d);
        return ml_exit_code(st);
    }
    struct ml_lora_count lc;
    memset(&lc, 0, sizeof(lc));
    if (o.lora) {
        struct ml_lora_targets tg;
        ml_diag_init(&d);
        st = ml_lora_targets_parse(o.targets, &tg, &d);
        if (st == ML_OK)
            st = ml_lora_count(&m.arch, &inv, &tg, o.rank, &lc, &d);
        if (st != ML_OK)
            return ml_usage_error("params", "--lora-target: %s", d.msg);
        for (uint32_t i = 0; i < lc.n_unmatched; i++)
            ml_warnf(_("LoRA target '%s' matches no module of %s"), lc.unmatched[i], m.name);
    }
    struct ml_params_report p = {&m, &inv, o.lora ? &lc : NULL, o.rank, o.targets};
    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status rst = ML_OK;
    if (o.json)
        rst = ml_render_params_json(&out, &p);
    else
        ml_render_params_text(&out, &p);
    if (rst == ML_OK)
        rst = ml_write_stdout(&out);
    else
        ml_errorf("%s", ml_status_str(rst));
    ml_buf_release(&out);
    return rst == ML_OK ? ML_EXIT_OK : ML_EXIT_USAGE;
}
