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

static int params_opt(void *ctx, int c, const char *name, const char *arg)
{
    (void)name;
    struct params_opts *o = ctx;
    switch (c) {
    case 'r':
        if (!ml_opt_u64("params", "--lora-rank", arg, 1, 65536, &o->rank))
            return ML_EXIT_USAGE;
        o->lora = true;
        break;
    case 't':
        o->targets = arg;
        o->lora = true;
        break;
    default: o->json = true; break; /* 'j' */
    }
    return ML_EXIT_OK;
}

int cmd_params(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"lora-rank", required_argument, NULL, 'r'},
        {"lora-target", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const struct ml_cli_spec spec = {"params", cmd_params_usage, longopts, 1, false};
    struct params_opts o = {NULL, false, false, 8, "all"};
    int first, rc = ml_cli_parse(&spec, argc, argv, params_opt, &o, &first);
    if (rc != ML_EXIT_OK)
        return rc < 0 ? ML_EXIT_OK : rc;
    if (first >= argc)
        return ml_usage_error("params", "%s", _("missing MODEL"));
    o.model = argv[first];

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
