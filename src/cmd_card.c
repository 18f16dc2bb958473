/*
 * cmd_card.c - memledger card: what each GPU size can train and serve, from the ledger, and how
 * the seed handbook's card compares cell by cell (ml_card_compute, lib/run/card.c).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/card.h"
#include "memledger/render.h"
#include "memledger/units.h"
#include "i18n.h"
#include "term.h"

/* cmd_card_usage: generated from docs/cli/card.md (tools/gen_cli_docs.c). */

struct card_opts {
    const char *gpus;
    bool json, markdown, handbook, wide;
};

struct card_cli {
    struct card_opts *o;
    struct ml_card_settings *st;
};

static int card_opt(void *ctx, int c, const char *name, const char *arg)
{
    (void)name;
    struct card_opts *o = ((struct card_cli *)ctx)->o;
    struct ml_card_settings *st = ((struct card_cli *)ctx)->st;
    switch (c) {
    case 'g': o->gpus = arg; break;
    case 'm': {
        uint32_t pct = 0;
        if (!ml_pct_parse(arg, &pct))
            return ml_usage_error("card", _("--margin must be a whole percentage below 100, got '%s'"), arg);
        st->margin_permille = pct * 10;
        break;
    }
    case 's':
        if (!ml_opt_u64("card", "--seq", arg, 1, 1u << 24, &st->seq))
            return ML_EXIT_USAGE;
        break;
    case 'b':
        if (!ml_opt_u64("card", "--batch", arg, 1, 1u << 16, &st->batch))
            return ML_EXIT_USAGE;
        break;
    case 'j': o->json = true; break;
    case 'k': o->markdown = true; break;
    case 'H': o->handbook = true; break;
    default: o->wide = true; break; /* 'w' */
    }
    return ML_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct card_opts *o, struct ml_card_settings *st)
{
    static const struct option longopts[] = {
        {"gpus", required_argument, NULL, 'g'}, {"margin", required_argument, NULL, 'm'},
        {"seq", required_argument, NULL, 's'},  {"batch", required_argument, NULL, 'b'},
        {"json", no_argument, NULL, 'j'},       {"markdown", no_argument, NULL, 'k'},
        {"handbook", no_argument, NULL, 'H'},   {"wide", no_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    static const struct ml_cli_spec spec = {"card", cmd_card_usage, longopts, 0, false};
    struct card_cli cli = {o, st};
    int first, rc = ml_cli_parse(&spec, argc, argv, card_opt, &cli, &first);
    if (rc != ML_EXIT_OK)
        return rc;
    if (o->json && o->markdown)
        return ml_usage_error("card", "%s", _("--json and --markdown exclude each other"));
    /* An empty list (--gpus '' or ','): no card to print, said as such, not an empty card. */
    if (o->gpus && !o->gpus[strspn(o->gpus, ", ")])
        return ml_usage_error("card", "%s",
                              _("--gpus names no GPU (a comma-separated list, e.g. --gpus rtx4090,h100)"));
    return ML_EXIT_OK;
}

int cmd_card(int argc, char **argv)
{
    struct card_opts o = {ML_CARD_DEFAULT_GPUS, false, false, false, false};
    static struct ml_card k;
    memset(&k, 0, sizeof(k));
    k.st = (struct ml_card_settings){2048, 1, 100};
    int rc = parse_args(argc, argv, &o, &k.st);
    if (rc < 0)
        return ML_EXIT_OK;
    if (rc != ML_EXIT_OK)
        return rc;
    static struct ml_card_scratch scratch;
    struct ml_diag d;
    ml_diag_init(&d);
    enum ml_status cst = ml_card_compute(&k, o.gpus, &scratch, &d);
    if (cst != ML_OK && !d.origin[0]) /* too many cards: a usage error (an unknown card names --gpus) */
        return ml_usage_error("card", "%s", d.msg);
    if (cst != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status st = ML_OK;
    if (o.json)
        st = ml_render_card_json(&out, &k);
    else if (o.markdown)
        ml_render_card_markdown(&out, &k, o.handbook);
    else {
        struct ml_layout lay;
        ml_term_layout(o.wide, &lay);
        ml_render_card_text(&out, &k, &lay, o.handbook);
    }
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    return st == ML_OK ? ML_EXIT_OK : ML_EXIT_USAGE;
}
