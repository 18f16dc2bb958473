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
#include "io.h"
#include "memledger/infer.h"
#include "memledger/units.h"

/* The engines' own spellings of settings memledger models, one row each (to: memledger's option;
 * vals: engine value = memledger value pairs, NULL-ended; the rest taken as written), and of
 * settings it does not model (to NULL: accepted and said to be left out, never dropped silently).
 * Sources: vllm/engine/arg_utils.py EngineArgs.add_cli_args; SGLang server_args.py
 * ServerArgs.add_cli_args. */
static const char *const kv_vals[] = {"fp8_e4m3", "fp8", "fp8_e5m2", "fp8", "fp8_inc", "fp8", NULL};
static const char *const quant_vals[] = {"bitsandbytes", "nf4", NULL};
static const struct {
    const char *alias, *to, *engine;
    bool has_arg;
    const char *const *vals;
} aliases[] = {
    {"kv-cache-dtype", "kv-dtype", "vLLM and SGLang", true, kv_vals},
    {"tensor-parallel-size", "tp", "vLLM", true, NULL},
    {"tp-size", "tp", "SGLang", true, NULL},
    {"pipeline-parallel-size", "pp", "vLLM", true, NULL},
    {"pp-size", "pp", "SGLang", true, NULL},
    {"context-length", "max-model-len", "SGLang", true, NULL},
    {"quantization", "quant", "vLLM and SGLang", true, quant_vals},
    {"enable-prefix-caching", NULL, "vLLM", false, NULL},
    {"no-enable-prefix-caching", NULL, "vLLM", false, NULL},
    {"disable-radix-cache", NULL, "SGLang", false, NULL},
    {"cpu-offload-gb", NULL, "vLLM and SGLang", true, NULL},
    {"swap-space", NULL, "vLLM", true, NULL},
};

enum ml_infer_opt ml_infer_flag_parse(const char *cmd, const char *name, const char *val, struct ml_infer_flag *f)
{
    const struct ml_infer_opt_def *o = ml_infer_opt_find(name);
    for (size_t i = 0; !o && i < sizeof(aliases) / sizeof(aliases[0]); i++) {
        if (strcmp(name, aliases[i].alias))
            continue;
        if (!aliases[i].to) {
            ml_warnf(_("--%s (%s): not modelled by memledger, the estimate leaves it out"), name, aliases[i].engine);
            *f = (struct ml_infer_flag){NULL, val, 0};
            return ML_INFER_OPT_OK; /* opt NULL: the caller keeps no flag */
        }
        o = ml_infer_opt_find(aliases[i].to);
        for (size_t j = 0; val && aliases[i].vals && aliases[i].vals[j]; j += 2)
            if (!strcmp(val, aliases[i].vals[j]))
                val = aliases[i].vals[j + 1];
        ml_stderr_printf(_("memledger: note: --%s (a flag of %s) read as --%s%s%s\n"), name, aliases[i].engine, o->name,
                         val ? " " : "", val ? val : "");
        name = o->name;
    }
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
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]) && n + 1 < ML_LONGOPTS_MAX; i++) {
        const struct ml_infer_opt_def *t = aliases[i].to ? ml_infer_opt_find(aliases[i].to) : NULL;
        if (!in || (!aliases[i].to && (in & ML_IOPT_IN_FIT)) || (t && (t->in & in)))
            out[n++] =
                (struct option){aliases[i].alias, aliases[i].has_arg ? required_argument : no_argument, NULL, val};
    }
    out[n] = (struct option){NULL, 0, NULL, 0};
}

void ml_infer_alias_engines(int argc, char **argv, enum ml_engine e)
{
    const char *want = e == ML_ENGINE_VLLM ? "vLLM" : e == ML_ENGINE_SGLANG ? "SGLang" : NULL;
    for (int a = 1; want && a < argc; a++) {
        if (strncmp(argv[a], "--", 2))
            continue;
        size_t n = strcspn(argv[a] + 2, "=");
        for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
            if (strlen(aliases[i].alias) == n && !strncmp(argv[a] + 2, aliases[i].alias, n) &&
                !strstr(aliases[i].engine, want))
                ml_warnf(_("--%s is a flag of %s, not of the %s engine in force: %s takes no such flag"),
                         aliases[i].alias, aliases[i].engine, ml_engine_name(e), ml_engine_name(e));
    }
}
