/*
 * cmd_fit.c - memledger fit: the cheapest changes that make a run fit, written as patched files.
 */
#include "cli.h"
#include "infer_opts.h"
#include "io.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/fit.h"
#include "memledger/infer.h"
#include "memledger/units.h"
#include "i18n.h"
#include "term.h"
#include "train_setup.h"

/* cmd_fit_usage: generated from docs/cli/fit.md (tools/gen_cli_docs.c). */

enum { F_HEADROOM = ML_TO_END + 1, F_PLANS, F_MAXGPUS, F_WRITE, F_FORCE, F_JSON, F_PLAN, F_CONFIDENCE };

/* The options both fits take (fit_opt), then --help; its rows end in a comma. */
#define FIT_LONGOPTS                                                                                                   \
    {"plans", required_argument, NULL, F_PLANS}, {"max-gpus", required_argument, NULL, F_MAXGPUS},                     \
        {"write", required_argument, NULL, F_WRITE}, {"plan", required_argument, NULL, F_PLAN},                        \
        {"force", no_argument, NULL, F_FORCE}, {"json", no_argument, NULL, F_JSON},                                    \
        {"wide", no_argument, NULL, ML_OPT_WIDE}, {"help", no_argument, NULL, 'h'},

struct fit_cli {
    struct ml_fit_opts fo;
    const char *write_dir; /* --write DIR */
    uint64_t which;        /* --plan N */
    bool force, json, wide;
};

/* One of FIT_LONGOPTS but --help: 1 taken, 0 another option, -1 after a usage error. */
static int fit_opt(int c, const char *arg, struct fit_cli *f)
{
    uint64_t v;
    switch (c) {
    case F_PLANS:
    case F_MAXGPUS:
        if (!ml_opt_u64("fit", c == F_PLANS ? "--plans" : "--max-gpus", arg, 1, c == F_PLANS ? ML_FIT_MAX_PLANS : 1024,
                        &v))
            return -1;
        *(c == F_PLANS ? &f->fo.max_plans : &f->fo.max_gpus_per_node) = (uint32_t)v;
        return 1;
    case F_PLAN: return ml_opt_u64("fit", "--plan", arg, 1, ML_FIT_MAX_PLANS, &f->which) ? 1 : -1;
    case F_WRITE: f->write_dir = arg; return 1;
    case F_FORCE: f->force = true; return 1;
    case F_JSON: f->json = true; return 1;
    case ML_OPT_WIDE: f->wide = true; return 1;
    default: return 0;
    }
}

/* ---- writing files (docs/files.md) -------------------------------------------------------- */

/* An input of this run that DIR/name would overwrite (even through a link): its name, or NULL. */
static const char *input_at(const char *path, const struct ml_train_opts *o, const struct ml_train_setup *s)
{
    const char *in[3] = {o->config, s->rd.ds_path, s->m.source};
    for (int i = 0; i < 3; i++)
        if (in[i] && in[i][0] && ml_same_file(path, in[i]))
            return in[i];
    return NULL;
}

/* Write the plan into dir, all files or none (docs/files.md): every target is checked and every
 * temporary file written before the first is renamed into place; a failure removes them all
 * (and dir, when this call made it). An input file is never written over, --force or not. */
static int write_plan(const char *dir, bool force, const struct ml_plan *p, const struct ml_train_opts *o,
                      const struct ml_train_setup *s)
{
    static struct ml_staged st;
    if (!ml_staged_begin(&st, dir, force))
        return ML_EXIT_USAGE;
    struct ml_plan_files f;
    struct ml_buf bytes[ML_PLAN_FILES];
    for (int i = 0; i < ML_PLAN_FILES; i++)
        ml_buf_init(&bytes[i], 0);
    char path[ML_PLAN_FILES][4096];
    struct ml_plan_src u = {dir, o->config, s->rd.ds_path, s->rd.ds_how == ML_DS_RUN_DIR, o->run_dir};
    struct ml_plan_io io = {ml_read_file, ml_path_from}; /* the user's files as they are on disk now */
    struct ml_diag d;
    ml_diag_init(&d);
    bool names_ds = false, ok = ml_plan_bytes(p, &u, &io, &f, bytes, &names_ds, &d);
    if (!ok && d.code != ML_OK)
        ml_report(&d);
    for (int i = 0; i < ML_PLAN_FILES && ok; i++) {
        if (!f.want[i])
            continue;
        (void)snprintf(path[i], sizeof(path[i]), "%s/%s", dir, f.name[i]);
        const char *in = input_at(path[i], o, s);
        if (in) {
            ml_errorf(_("%s: is %s, an input of this run; memledger never writes over an input file (write the plan "
                        "into another directory)"),
                      path[i], in);
            ok = false;
        } else {
            ok = ml_staged_add(&st, path[i], &bytes[i], force, _("file"));
        }
    }
    size_t n = st.n;
    if (ok)
        ok = ml_staged_commit(&st);
    else
        ml_staged_abort(&st);
    for (int i = 0; i < ML_PLAN_FILES; i++) {
        if (ok && f.want[i])
            ml_stdout_printf(_("wrote %s\n"), path[i]);
        ml_buf_release(&bytes[i]);
    }
    if (ok && !n)
        ml_stdout_printf("%s\n", _("nothing to write: the plan changes no file (see the changes above)"));
    if (ok && f.want[ML_PLAN_YAML] && names_ds)
        ml_stdout_printf(_("its deepspeed: is found from %s%s: start the run there\n"),
                         o->run_dir ? "the run directory " : "", o->run_dir ? o->run_dir : _("the working directory"));
    return ok ? ML_EXIT_OK : ML_EXIT_USAGE;
}

/* ---- the command ------------------------------------------------------------------------- */

/* --serve --write DIR: serve.sh, the engine started with plan `which`. */
static int write_serve(const char *dir, bool force, const struct ml_fit_view *v, const struct ml_fit_infer_result *r,
                       uint32_t which)
{
    if (!r->n) {
        ml_errorf(_("nothing to write: no plan makes the engine start"));
        return ML_EXIT_NEGATIVE;
    }
    if (which > r->n)
        return ml_usage_error("fit", _("--plan %u: only %u plans fit"), which, r->n);
    static struct ml_staged st;
    if (!ml_staged_begin(&st, dir, force))
        return ML_EXIT_USAGE;
    struct ml_buf out;
    ml_buf_init(&out, 0);
    char path[4096];
    (void)snprintf(path, sizeof(path), "%s/serve.sh", dir);
    bool ok = ml_render_serve_script(&out, v, &r->plans[which - 1], which) == ML_OK &&
              ml_staged_add(&st, path, &out, force, _("file"));
    ok = ok ? ml_staged_commit(&st) : (ml_staged_abort(&st), false);
    ml_buf_release(&out);
    if (!ok)
        return ML_EXIT_USAGE;
    ml_stdout_printf(_("wrote %s/serve.sh\n"), dir);
    return ML_EXIT_OK;
}

/* What fit --serve's command line says. */
struct fit_serve_cli {
    struct fit_cli f;
    struct ml_infer si;
    struct ml_infer_flag flags[32]; /* the serving options, in order */
    int n_flags;
    const char *gpu;
    uint64_t ngpu;
    bool python;
};

static int fit_serve_opt(void *ctx, int c, const char *name, const char *arg)
{
    struct fit_serve_cli *o = ctx;
    int r = fit_opt(c, arg, &o->f);
    if (r != 0)
        return r < 0 ? ML_EXIT_USAGE : ML_EXIT_OK;
    const int cap = (int)(sizeof(o->flags) / sizeof(o->flags[0]));
    switch (c) {
    case 'S': break;
    case 'g': o->gpu = arg; break;
    case 'n': return ml_opt_u64("fit", "--num-gpus", arg, 1, 4096, &o->ngpu) ? ML_EXIT_OK : ML_EXIT_USAGE;
    case 'i':
        if (o->n_flags >= cap)
            return ml_usage_error("fit", _("more than %d serving options"), cap);
        if (ml_infer_flag_parse("fit", name, arg, &o->flags[o->n_flags]) != ML_INFER_OPT_OK)
            return ML_EXIT_USAGE;
        if (!o->flags[o->n_flags].opt)
            break; /* an engine setting not modelled: said, not kept */
        ml_infer_opt_set(o->flags[o->n_flags].opt, o->flags[o->n_flags].v, &o->si);
        o->n_flags++;
        if (o->si.engine == ML_ENGINE_HF)
            return ml_usage_error("fit", _("--engine: '%s' is not vllm or sglang"), arg);
        break;
    default: o->python = true; break; /* 'P' */
    }
    return ML_EXIT_OK;
}

/* Serving: the infer options, then the engine settings that make it start and fit. */
static int fit_serving(int argc, char **argv)
{
    static const struct option own[] = {
        {"serve", no_argument, NULL, 'S'},
        {"gpu", required_argument, NULL, 'g'},
        {"num-gpus", required_argument, NULL, 'n'},
        {"python", no_argument, NULL, 'P'},
        FIT_LONGOPTS /* (with its commas) */
        {NULL, 0, NULL, 0},
    };
    /* 'i': the serving options fit takes (lib/setup/infer_opts.c), parsed by ml_infer_option. */
    static struct option longopts[ML_LONGOPTS_MAX];
    ml_serve_longopts(own, ML_IOPT_IN_FIT, 'i', longopts);
    static const struct ml_cli_spec spec = {"fit", cmd_fit_usage, longopts, 1, false};
    static struct fit_serve_cli o;
    memset(&o, 0, sizeof(o));
    ml_infer_defaults(&o.si);
    o.si.engine = ML_ENGINE_VLLM;
    o.f.which = 1;
    ml_fit_opts_default(&o.f.fo);
    int first, rc = ml_cli_parse(&spec, argc, argv, fit_serve_opt, &o, &first);
    if (rc != ML_EXIT_OK)
        return rc < 0 ? ML_EXIT_OK : rc;
    if (first >= argc)
        return ml_usage_error("fit", "%s", _("missing MODEL"));
    struct fit_cli f = o.f;
    struct ml_infer si = o.si;
    struct ml_infer_flag *flags = o.flags;
    int n_flags = o.n_flags;
    const char *gpu = o.gpu;
    uint64_t ngpu = o.ngpu;
    bool python = o.python;
    /* --python writes LLM(...) plans: the LLM class's scheduler defaults, not `vllm serve`'s
     * (vllm/engine/arg_utils.py get_batch_defaults, as infer --offline). */
    if (python)
        si.offline = true;
    const char *model = argv[first];
    if (!gpu)
        return ml_usage_error("fit", "%s", _("--gpu is needed"));
    {
        /* An engine's own flag selects it (vLLM by default), or is refused with --engine. */
        char note[256];
        enum ml_engine e = si.engine, named;
        struct ml_diag dd;
        ml_diag_init(&dd);
        if (ml_infer_flags_engine_for(flags, (uint32_t)n_flags, ml_infer_flags_engine(flags, (uint32_t)n_flags, &named),
                                      &e, note, sizeof(note), &dd) != ML_OK)
            return ml_usage_error("fit", "%s", dd.msg);
        if (note[0])
            ml_stderr_printf(_("memledger: note: %s\n"), note);
        si.engine = e;
        ml_infer_alias_engines(argc, argv, si.engine);
    }
    static struct ml_model_ref m;
    static struct ml_inventory inv;
    struct ml_cluster cl;
    if (!ml_resolve_serving(model, gpu, &m, &cl, &inv))
        return ML_EXIT_USAGE;
    ml_infer_gpus(&cl, ngpu, &si); /* --num-gpus, else tp (fit takes no --pp) */
    struct ml_diag d;
    ml_diag_init(&d);
    static struct ml_fit_infer_result r;
    if (ml_fit_infer(&m.arch, &inv, &si, &cl, &f.fo, &r, &d) != ML_OK)
        return ml_usage_error("fit", "%s", d.msg);
    struct ml_buf out;
    ml_buf_init(&out, 0);
    struct ml_layout lay;
    ml_term_layout(f.wide, &lay);
    char model_id[1024]; /* the engine loads the hub id, or the model directory the user named */
    ml_serve_model_id(model, m.hub_id, model_id, sizeof(model_id));
    struct ml_fit_view view = {m.name, &cl, 0, &lay, model_id, python};
    enum ml_status st = f.json ? ml_render_fit_infer_json(&out, &view, si.engine, &r)
                               : ml_render_fit_infer_text(&out, &view, si.engine, &r);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    if (st != ML_OK)
        return ML_EXIT_USAGE;
    if (f.write_dir)
        return write_serve(f.write_dir, f.force, &view, &r, (uint32_t)f.which);
    return r.n || r.base_fits ? ML_EXIT_OK : ML_EXIT_NEGATIVE;
}

/* What fit's command line says about a training run. */
struct fit_train_cli {
    struct ml_train_opts o;
    struct fit_cli f;
};

static int fit_train_opt(void *ctx, int c, const char *name, const char *arg)
{
    (void)name;
    struct fit_train_cli *t = ctx;
    int r = ml_train_opt(&t->o, c, arg);
    if (r == 0)
        r = fit_opt(c, arg, &t->f);
    if (r != 0)
        return r < 0 ? ML_EXIT_USAGE : ML_EXIT_OK;
    if (c == F_HEADROOM) {
        if (!ml_percent_parse(arg, &t->f.fo.headroom_permille))
            return ml_usage_error("fit", _("--headroom must be a percentage below 100, got '%s'"), arg);
        return ML_EXIT_OK;
    }
    /* F_CONFIDENCE */
    if (strcmp(arg, "point") && strcmp(arg, "80"))
        return ml_usage_error("fit", _("%s: '%s' is not one of %s"), "--confidence", arg, "point, 80");
    t->f.fo.point = !strcmp(arg, "point");
    return ML_EXIT_OK;
}

int cmd_fit(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--serve"))
            return fit_serving(argc, argv);
    static const struct option longopts[] = {
        ML_TRAIN_LONGOPTS,
        {"headroom", required_argument, NULL, F_HEADROOM},
        {"confidence", required_argument, NULL, F_CONFIDENCE},
        FIT_LONGOPTS /* (with its commas) */
        {NULL, 0, NULL, 0},
    };
    static const struct ml_cli_spec spec = {"fit", cmd_fit_usage, longopts, 1, false};
    struct fit_train_cli t;
    ml_train_opts_init(&t.o, "fit");
    t.f = (struct fit_cli){.which = 1};
    ml_fit_opts_default(&t.f.fo);
    int first, rc = ml_cli_parse(&spec, argc, argv, fit_train_opt, &t, &first);
    if (rc != ML_EXIT_OK)
        return rc < 0 ? ML_EXIT_OK : rc;
    struct ml_train_opts o = t.o;
    struct fit_cli f = t.f;
    if (first < argc)
        o.model = argv[first];
    /* --write patches the files as they are on disk, read again then: standard input is gone. */
    if (f.write_dir && ((o.config && !strcmp(o.config, "-")) || (o.deepspeed && !strcmp(o.deepspeed, "-"))))
        return ml_usage_error("fit", "%s", _("--write needs --config and --deepspeed as files, not standard input"));
    static struct ml_train_setup s;
    rc = ml_train_setup_build(&o, &s);
    if (rc != ML_EXIT_OK)
        return rc;
    f.fo.host_ram_bytes = s.cl.host_ram_bytes;
    static struct ml_fit_result r;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_fit_train(&s.m.arch, &s.inv, &s.t, &s.cl, &f.fo, &r, &d) != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    struct ml_buf out;
    ml_buf_init(&out, 0);
    struct ml_layout lay;
    ml_term_layout(f.wide, &lay);
    struct ml_fit_view view = {s.m.name, &s.cl, f.fo.headroom_permille, &lay, NULL, false};
    enum ml_status st = f.json ? ml_render_fit_json(&out, &view, &r) : ml_render_fit_text(&out, &view, &r);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    if (st != ML_OK)
        return ML_EXIT_USAGE;
    if (f.write_dir) {
        if (!r.n) {
            ml_errorf(_("nothing to write: no plan fits"));
            return ML_EXIT_NEGATIVE;
        }
        if (f.which > r.n)
            return ml_usage_error("fit", _("--plan %llu: only %u plans fit"), (unsigned long long)f.which, r.n);
        rc = write_plan(f.write_dir, f.force, &r.plans[f.which - 1], &o, &s);
        if (rc != ML_EXIT_OK)
            return rc;
    }
    return r.n || r.base_fits ? ML_EXIT_OK : ML_EXIT_NEGATIVE;
}
