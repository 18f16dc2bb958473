/*
 * infer_opts.c - the serving options of `memledger infer`, parsed in one place for every command
 * that takes them (infer, fit --serve, diagnose): ml_infer_option over the rows of
 * lib/setup/infer_opts.c, and each command's getopt table from those rows.
 */
#include "infer_opts.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "i18n.h"
#include "memledger/infer.h"
#include "memledger/units.h"

enum ml_infer_opt ml_infer_flag_parse(const char *cmd, const char *name, const char *val, struct ml_infer_flag *f)
{
    const struct ml_infer_opt_def *o = ml_infer_opt_find(name);
    if (!o)
        return ML_INFER_OPT_OTHER;
    char opt[64], list[160];
    (void)snprintf(opt, sizeof(opt), "--%s", name);
    uint64_t v = 1;
    uint32_t u = 0;
    struct ml_diag d;
    ml_diag_init(&d);
    bool ok = true;
    if (o->kind == ML_IOPT_CHOICE && !(ok = ml_infer_opt_choice(o, val, &v))) {
        ml_infer_opt_choices(o, list, sizeof(list));
        ml_usage_error(cmd, _("%s: '%s' is not one of %s"), opt, val, list);
    } else if (o->kind == ML_IOPT_COUNT) {
        ok = ml_opt_u64(cmd, opt, val, o->lo, o->hi, &v);
    } else if (o->kind == ML_IOPT_FRACTION || o->kind == ML_IOPT_VERSION) {
        ok = o->kind == ML_IOPT_FRACTION ? ml_opt_fraction(cmd, opt, val, &u) : ml_version_parse(val, &u, &d) == ML_OK;
        if (!ok && o->kind == ML_IOPT_VERSION)
            ml_usage_error(cmd, "%s: %s", opt, d.msg);
        v = u;
    }
    *f = (struct ml_infer_flag){o, val, v};
    return ok ? ML_INFER_OPT_OK : ML_INFER_OPT_BAD;
}

enum ml_infer_opt ml_infer_option(const char *cmd, const char *name, const char *val, struct ml_infer *s)
{
    struct ml_infer_flag f;
    enum ml_infer_opt r = ml_infer_flag_parse(cmd, name, val, &f);
    if (r == ML_INFER_OPT_OK)
        ml_infer_opt_set(f.opt, f.v, s);
    return r;
}

void ml_serve_longopts(const struct option *own, unsigned in, int val, struct option *out)
{
    size_t n = 0;
    for (; own->name && n + 1 < ML_LONGOPTS_MAX; own++)
        out[n++] = *own;
    const struct ml_infer_opt_def *o;
    for (size_t i = 0; (o = ml_infer_opt_at(i)) && n + 1 < ML_LONGOPTS_MAX; i++)
        if (!in || (o->in & in))
            out[n++] = (struct option){o->name, o->kind == ML_IOPT_FLAG ? no_argument : required_argument, NULL, val};
    out[n] = (struct option){NULL, 0, NULL, 0};
}
