/*
 * cmd_train.c - memledger train: the per-GPU training ledger from the user's configs.
 */
#include "cli.h"
#include "io.h"
#include "term.h"
#include "train_setup.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/ledger.h"
#include "memledger/ledger_svg.h"
#include "memledger/report.h"
#include "i18n.h"

/* cmd_train_usage: generated from docs/cli/train.md (tools/gen_cli_docs.c). */

enum { O_JSON = ML_TO_END, O_MD, O_CHECK, O_SVG, O_FORCE, O_MODEL };

struct train_opts {
    struct ml_train_opts s; /* the options shared with compare (train_setup.h) */
    bool json, markdown, check, force, wide;
    const char *svg; /* --svg FILE: the ledger as a picture */
};

/* ---- the command ------------------------------------------------------------------------ */

static int train_opt(void *ctx, int c, const char *name, const char *arg)
{
    (void)name;
    struct train_opts *o = ctx;
    int r = ml_train_opt(&o->s, c, arg);
    if (r != 0)
        return r < 0 ? ML_EXIT_USAGE : ML_EXIT_OK;
    switch (c) {
    case O_JSON: o->json = true; break;
    case O_MD: o->markdown = true; break;
    case O_CHECK: o->check = true; break;
    case O_SVG: o->svg = arg; break;
    case O_FORCE: o->force = true; break;
    case O_MODEL: o->s.model = arg; break; /* as diagnose --model: the positional MODEL */
    default: o->wide = true; break;        /* ML_OPT_WIDE */
    }
    return ML_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct train_opts *o)
{
    /* Everything after `--` is a LLaMA-Factory command line (docs/cli/train.md). */
    int lf = 1;
    while (lf < argc && strcmp(argv[lf], "--"))
        lf++;
    int lf_argc = lf < argc ? argc - lf - 1 : 0;
    argc = lf;
    static const struct option longopts[] = {
        ML_TRAIN_LONGOPTS,
        {"json", no_argument, NULL, O_JSON},
        {"markdown", no_argument, NULL, O_MD},
        {"check", no_argument, NULL, O_CHECK},
        {"svg", required_argument, NULL, O_SVG},
        {"force", no_argument, NULL, O_FORCE},
        {"model", required_argument, NULL, O_MODEL},
        {"wide", no_argument, NULL, ML_OPT_WIDE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const struct ml_cli_spec spec = {"train", cmd_train_usage, longopts, 1, false};
    ml_train_opts_init(&o->s, "train");
    o->s.lf_argc = lf_argc;
    o->s.lf_argv = lf_argc ? (const char *const *)argv + argc + 1 : NULL;
    int first, rc = ml_cli_parse(&spec, argc, argv, train_opt, o, &first);
    if (rc != ML_EXIT_OK)
        return rc;
    if (first < argc && o->s.model)
        return ml_usage_error("train", _("MODEL given twice ('%s' and --model %s)"), argv[first], o->s.model);
    if (first < argc)
        o->s.model = argv[first];
    if (o->json && o->markdown)
        return ml_usage_error("train", "%s", _("--json and --markdown exclude each other"));
    return ML_EXIT_OK;
}

int cmd_train(int argc, char **argv)
{
    struct train_opts o;
    memset(&o, 0, sizeof(o));
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return ML_EXIT_OK;
    if (rc != ML_EXIT_OK)
        return rc;

    if (o.svg && !ml_can_write(o.svg, o.force))
        return ML_EXIT_USAGE;
    static struct ml_train_setup s;
    rc = ml_train_setup_build(&o.s, &s);
    if (rc != ML_EXIT_OK)
        return rc;
    const struct ml_model_ref *m = &s.m;
    const struct ml_train *t = &s.t;
    const struct ml_cluster *cl = &s.cl;
    const struct ml_ledger *l = &s.l;

    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status rst = ML_OK;
    if (o.json)
        rst = ml_render_train_json(&out, m, t, cl, l);
    else if (o.markdown)
        ml_render_train_markdown(&out, m, t, cl, l);
    else {
        struct ml_layout lay;
        ml_term_layout(o.wide, &lay);
        ml_render_train_text(&out, m, t, cl, l, &lay);
    }
    if (rst == ML_OK)
        rst = ml_write_stdout(&out);
    ml_buf_reset(&out);
    if (rst == ML_OK && o.svg)
        rst = ml_write_picture(o.svg, ml_render_train_svg(&out, m, t, cl, l), &out, o.force);
    ml_buf_release(&out);
    if (rst != ML_OK)
        return ML_EXIT_USAGE;
    return o.check && !l->fits ? ML_EXIT_NEGATIVE : ML_EXIT_OK;
}
