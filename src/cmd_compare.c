/*
 * cmd_compare.c - memledger compare: a measured run (memledger_hook.py JSON Lines, or a watch
 * timeline) and the training ledger for the same settings, side by side, component by component
 * and for the peaks, with the error of each and the assumption to revisit where one is off (the
 * seed handbook's mem_report homework: within 10 %).
 */
#include "cli.h"
#include "term.h"
#include "train_setup.h"

#include <stdio.h>
#include <string.h>

#include "memledger/monitor.h"
#include "memledger/report.h"
#include "i18n.h"

/* cmd_compare_usage: generated from docs/cli/compare.md (tools/gen_cli_docs.c). */

enum { O_JSON = ML_TO_END, O_TOL, O_CHECK };

struct compare_opts {
    struct ml_train_opts s;
    const char *measured;
    uint64_t tolerance_pct;
    bool json, check, wide;
};

static int compare_opt(void *ctx, int c, const char *name, const char *arg)
{
    (void)name;
    struct compare_opts *o = ctx;
    int r = ml_train_opt(&o->s, c, arg);
    if (r != 0)
        return r < 0 ? ML_EXIT_USAGE : ML_EXIT_OK;
    switch (c) {
    case O_JSON: o->json = true; break;
    case O_CHECK: o->check = true; break;
    case O_TOL:
        if (!ml_opt_u64("compare", "--tolerance", arg, 1, 100, &o->tolerance_pct))
            return ML_EXIT_USAGE;
        break;
    default: o->wide = true; break; /* ML_OPT_WIDE */
    }
    return ML_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct compare_opts *o)
{
    static const struct option longopts[] = {
        ML_TRAIN_LONGOPTS,
        {"json", no_argument, NULL, O_JSON},
        {"tolerance", required_argument, NULL, O_TOL},
        {"check", no_argument, NULL, O_CHECK},
        {"wide", no_argument, NULL, ML_OPT_WIDE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const struct ml_cli_spec spec = {"compare", cmd_compare_usage, longopts, 2, false};
    ml_train_opts_init(&o->s, "compare");
    o->tolerance_pct = 10;
    int first, rc = ml_cli_parse(&spec, argc, argv, compare_opt, o, &first);
    if (rc != ML_EXIT_OK)
        return rc;
    if (first < argc)
        o->measured = argv[first++];
    if (first < argc)
        o->s.model = argv[first];
    if (!o->measured)
        return ml_usage_error("compare", "%s", _("missing MEASURED.jsonl (what python/memledger_hook.py writes)"));
    return ML_EXIT_OK;
}

int cmd_compare(int argc, char **argv)
{
    struct compare_opts o;
    memset(&o, 0, sizeof(o));
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return ML_EXIT_OK;
    if (rc != ML_EXIT_OK)
        return rc;

    /* The measurement first: a bad file is reported before the ledger's own questions. */
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf data;
    ml_buf_init(&data, ML_MEASURED_MAX_BYTES);
    static struct ml_measured m;
    enum ml_status st = ml_read_file(o.measured, ML_MEASURED_MAX_BYTES, &data, &d);
    if (st == ML_OK)
        st = ml_measured_parse(data.buf, data.len, o.measured, &m, &d);
    ml_buf_release(&data);
    if (st != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    if (m.torn_line)
        ml_warnf(
            _("%s:%u: the last line is cut short (the run was killed?): skipped; the %u records before it are used"),
            o.measured, m.torn_line, m.n_records);

    static struct ml_train_setup s;
    rc = ml_train_setup_build(&o.s, &s);
    if (rc != ML_EXIT_OK)
        return rc;

    struct ml_compare_report c = {o.measured, &m, &s.m, &s.t, &s.cl, &s.l, o.tolerance_pct, {{0}}};
    uint32_t n_off = ml_compare_rows(&m, &s.l, o.tolerance_pct, c.rows);
    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status rst = ML_OK;
    if (o.json)
        rst = ml_render_compare_json(&out, &c);
    else {
        struct ml_layout lay;
        ml_term_layout(o.wide, &lay);
        ml_render_compare_text(&out, &c, &lay);
    }
    if (rst == ML_OK)
        rst = ml_write_stdout(&out);
    ml_buf_release(&out);
    if (rst != ML_OK)
        return ML_EXIT_USAGE;
    return o.check && n_off ? ML_EXIT_NEGATIVE : ML_EXIT_OK;
}
