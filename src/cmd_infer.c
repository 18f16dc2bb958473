/*
 * cmd_infer.c - memledger infer: the inference and serving ledger, before launch.
 */
#include "cli.h"
#include "infer_opts.h"
#include "io.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/ledger_svg.h"
#include "memledger/report.h"
#include "i18n.h"
#include "term.h"

/* cmd_infer_usage: generated from docs/cli/infer.md (tools/gen_cli_docs.c). */

enum { I_GPU = 300, I_NGPU, I_SERVE, I_JSON, I_MD, I_CHECK, I_SVG, I_FORCE, I_CONFIG };

#define SERVE_MAX 64 /* serving options on one command line */

/* What the command line says, before the files are read. */
struct infer_cli {
    const char *gpu, *svg, *config, *model;
    uint64_t ngpu;
    bool json, md, check, force, wide;
    struct ml_infer_flag flags[SERVE_MAX]; /* the serving options, in order */
    int n_serve;
};

/* The command's own options; I_SERVE: the serving options of lib/setup/infer_opts.c, all of them
 * (ml_serve_longopts), parsed by ml_infer_option (src/infer_opts.c). */
static const struct option own_opts[] = {
    {"gpu", required_argument, NULL, I_GPU},
    {"num-gpus", required_argument, NULL, I_NGPU},
    {"config", required_argument, NULL, I_CONFIG},
    {"json", no_argument, NULL, I_JSON},
    {"markdown", no_argument, NULL, I_MD},
    {"check", no_argument, NULL, I_CHECK},
    {"svg", required_argument, NULL, I_SVG},
    {"force", no_argument, NULL, I_FORCE},
    {"wide", no_argument, NULL, ML_OPT_WIDE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int infer_opt(void *ctx, int c, const char *name, const char *arg)
{
    struct infer_cli *o = ctx;
    switch (c) {
    case I_GPU: o->gpu = arg; break;
    case I_CONFIG: o->config = arg; break;
    case I_NGPU:
        if (!ml_opt_u64("infer", "--num-gpus", arg, 1, 4096, &o->ngpu))
            return ML_EXIT_USAGE;
        break;
    case I_SERVE:
        if (o->n_serve >= SERVE_MAX)
            return ml_usage_error("infer", _("more than %d serving options"), SERVE_MAX);
        if (ml_infer_flag_parse("infer", name, arg, &o->flags[o->n_serve++]) != ML_INFER_OPT_OK)
            return ML_EXIT_USAGE;
        if (!o->flags[o->n_serve - 1].opt)
            o->n_serve--; /* an engine setting not modelled: said, not kept */
        break;
    case I_JSON: o->json = true; break;
    case I_MD: o->md = true; break;
    case I_CHECK: o->check = true; break;
    case I_SVG: o->svg = arg; break;
    case I_FORCE: o->force = true; break;
    default: o->wide = true; break; /* ML_OPT_WIDE */
    }
    return ML_EXIT_OK;
}

/* Parse argv into o (each serving option checked as it is read); -1 to go on, else the exit. */
static int parse_args(int argc, char **argv, struct infer_cli *o)
{
    static struct option longopts[ML_LONGOPTS_MAX];
    ml_serve_longopts(own_opts, 0, I_SERVE, longopts);
    static const struct ml_cli_spec spec = {"infer", cmd_infer_usage, longopts, 1, false};
    int first, rc = ml_cli_parse(&spec, argc, argv, infer_opt, o, &first);
    if (rc != ML_EXIT_OK)
        return rc < 0 ? ML_EXIT_OK : rc;
    o->model = first < argc ? argv[first] : NULL;
    if (!o->model && !o->config)
        return ml_usage_error(
            "infer", "%s",
            _("missing MODEL (give a name, config.json or directory, or --config with model_name_or_path)"));
    if (o->json && o->md)
        return ml_usage_error("infer", "%s", _("--json and --markdown exclude each other"));
    if (!o->gpu)
        return ml_usage_error("infer", "%s", _("--gpu is needed (a card such as h100, or a size such as 24G)"));
    if (o->svg && !ml_can_write(o->svg, o->force))
        return ML_EXIT_USAGE;
    return -1;
}

/* The model: MODEL, else the config's model_name_or_path (named in the error, as train does). */
static bool resolve(const struct infer_cli *o, const struct ml_infer_yaml *y, struct ml_model_ref *m,
                    struct ml_cluster *cl, struct ml_inventory *inv)
{
    if (o->model) {
        if (y && y->model[0] && strcmp(o->model, y->model))
            ml_warnf(_("MODEL %s wins over model_name_or_path %s (%s): the argument overrides the YAML"), o->model,
                     y->model, ml_path_base(o->config));
        return ml_resolve_serving(o->model, o->gpu, m, cl, inv);
    }
    return ml_run_yaml_model(ml_cli_io(), "infer", o->config, y->model, NULL, m) &&
           ml_run_serving_card(ml_cli_io(), o->gpu, m, cl, inv); /* resolved once: its note said once */
}

static int render(const struct infer_cli *o, const struct ml_model_ref *m, const struct ml_infer *s,
                  const struct ml_cluster *cl, const struct ml_ledger *l, const struct ml_serve *sv)
{
    struct ml_buf out;
    ml_buf_init(&out, 0);
    struct ml_layout lay;
    ml_term_layout(o->wide, &lay);
    enum ml_report_form form = o->json ? ML_FORM_JSON : o->md ? ML_FORM_MARKDOWN : ML_FORM_TEXT;
    enum ml_status st = ml_render_infer(&out, form, &lay, m, s, cl, l, sv);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_reset(&out);
    if (st == ML_OK && o->svg)
        st = ml_write_picture(o->svg, ml_render_infer_svg(&out, m, s, cl, l, sv), &out, o->force);
    ml_buf_release(&out);
    if (st != ML_OK)
        return ML_EXIT_USAGE;
    return o->check && !l->fits ? ML_EXIT_NEGATIVE : ML_EXIT_OK;
}

int cmd_infer(int argc, char **argv)
{
    static struct infer_cli o;
    memset(&o, 0, sizeof(o));
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    static struct ml_infer_yaml y; /* --config: a LLaMA-Factory inference YAML (lib/setup/infer_yaml.c) */
    struct ml_diag d;
    ml_diag_init(&d);
    if (o.config && ml_infer_yaml_load(o.config, ml_read_file, &y, &d) != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    static struct ml_model_ref m;
    static struct ml_inventory inv;
    struct ml_cluster cl;
    if (!resolve(&o, o.config ? &y : NULL, &m, &cl, &inv))
        return ML_EXIT_USAGE;
    struct ml_infer s;
    ml_infer_defaults(&s);
    enum ml_engine engine;
    if (o.config) /* an --engine decides which of the file's keys apply */
        ml_infer_yaml_apply(&y, &m.arch, (uint32_t)o.ngpu, ml_infer_flags_engine(o.flags, (uint32_t)o.n_serve, &engine),
                            &s);
    /* The flags over the config's settings: each that changes what the file set says so. */
    const char *key[SERVE_MAX], *text[SERVE_MAX];
    ml_infer_yaml_flags(o.config ? &y : NULL, o.flags, (uint32_t)o.n_serve, &s, key, text);
    for (int i = 0; i < o.n_serve; i++)
        if (key[i])
            ml_warnf(_("--%s%s%s wins over %s: %s (%s): flags are applied after the config file"), o.flags[i].opt->name,
                     o.flags[i].val ? " " : "", o.flags[i].val ? o.flags[i].val : "", key[i], text[i],
                     ml_path_base(o.config));
    for (uint32_t i = 0; o.config && i < y.warnings.n; i++)
        ml_warnf("%s: %s", ml_path_base(o.config), y.warnings.text[i]);
    /* Each flag is read by the engine in force: an engine's own flag selects it when neither
     * --engine nor the config names one; otherwise it is refused (lib/setup/infer_opts.c). */
    {
        char note[256];
        enum ml_engine e = s.engine;
        bool fixed = ml_infer_flags_engine(o.flags, (uint32_t)o.n_serve, &engine) || o.config;
        ml_diag_init(&d);
        if (ml_infer_flags_engine_for(o.flags, (uint32_t)o.n_serve, fixed, &e, note, sizeof(note), &d) != ML_OK)
            return ml_usage_error("infer", "%s", d.msg);
        if (note[0])
            ml_stderr_printf(_("memledger: note: %s\n"), note);
        s.engine = e;
        ml_infer_alias_engines(argc, argv, s.engine);
    }
    /* --quant awq/gptq of a built-in model: its quantized checkpoint's config (lib/model/catalog.c). */
    const struct ml_catalog_entry *qv = ml_catalog_serving_variant(&m, &s);
    if (qv)
        ml_stderr_printf(_("memledger: note: --quant %s: the config of %s, the quantized checkpoint of %s\n"),
                         ml_quant_name(s.quant), qv->hub_id, m.name);
    if (qv && !ml_resolve_serving(qv->hub_id, o.gpu, &m, &cl, &inv))
        return ML_EXIT_USAGE;
    ml_infer_gpus(&cl, o.ngpu, &s);
    /* Settings the engine in force has no way to run: estimated as asked, said once. */
    if (s.engine == ML_ENGINE_HF && s.kv_dtype == ML_KV_FP8)
        ml_warnf("%s", _("--kv-dtype fp8: transformers generate has no fp8 KV cache (its caches are dynamic, static, "
                         "offloaded, or quantized to 1-8 bit integers by quanto or HQQ, transformers cache_utils.py); "
                         "estimated as asked - an fp8 KV cache is --engine vllm or sglang's --kv-cache-dtype fp8"));
    if (s.engine == ML_ENGINE_VLLM && s.quant == ML_QUANT_INT8 && m.arch.wq.method == ML_WQ_NONE)
        ml_warnf("%s", _("--quant int8: vLLM quantizes a 16-bit checkpoint in flight to fp8 (--quantization fp8) or "
                         "to 4-bit bitsandbytes (--quantization bitsandbytes), not to int8; int8 weights need an int8 "
                         "checkpoint (vLLM docs, quantization/bnb); estimated as asked"));
    static struct ml_ledger l;
    struct ml_serve sv;
    ml_diag_init(&d);
    if (ml_ledger_infer(&m.arch, &inv, &s, &cl, &l, &sv, &d) != ML_OK) {
        /* A size from the GPU count, as LLaMA-Factory's engines take it: say so. */
        if (!strncmp(d.msg, "--tp ", 5) &&
            ml_infer_yaml_tp_is_gpus(o.config ? &y : NULL, &s, o.flags, (uint32_t)o.n_serve))
            return ml_usage_error("infer",
                                  _("%s (with %s, the tensor-parallel size is the GPU count, --num-gpus, as "
                                    "LLaMA-Factory's %s engine takes it)"),
                                  d.msg, ml_path_base(o.config), ml_engine_name(s.engine));
        return ml_usage_error("infer", "%s", d.msg);
    }
    /* GPUs given and left idle are said, with the flag that would use them. */
    char hint[128];
    uint32_t idle = ml_infer_idle_gpus(&cl, &s, hint, sizeof(hint));
    if (idle)
        ml_warnf(_("--num-gpus %llu: the %s engine as modelled runs on %u of them, %u stay idle: %s"),
                 (unsigned long long)o.ngpu, ml_engine_name(s.engine), (unsigned)(o.ngpu - idle), (unsigned)idle, hint);
    return render(&o, &m, &s, &cl, &l, &sv);
}
