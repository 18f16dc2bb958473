/*
 * cmd_fit.c - memledger fit: the cheapest changes that make a run fit, written as patched files.
 */
#include "cli.h"
#include "infer_opts.h"
#include "io.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/fit.h"
#include "memledger/infer.h"
#include "i18n.h"
#include "term.h"
#include "train_setup.h"

/* cmd_fit_usage: generated from docs/cli/fit.md (tools/gen_cli_docs.c). */

enum {
    F_HEADROOM = ML_TO_END + 1,
    F_PLANS,
    F_MAXGPUS,
    F_WRITE,
    F_FORCE,
    F_SERVE,
    F_JSON,
    F_HELP,
    F_PLAN,
    F_CONFIDENCE
};

static bool parse_percent(const char *s, uint32_t *permille)
{
    /* "10%", "10", "7.5%" -> permille; 0 <= p < 100. */
    uint32_t ip = 0, fp = 0;
    const char *p = s;
    int nd = 0;
    while (*p >= '0' && *p <= '9' && ip < 1000) {
        ip = ip * 10 + (uint32_t)(*p++ - '0');
        nd++;
    }
    if (*p == '.') {
        p++;
        if (*p >= '0' && *p <= '9') {
            fp = (uint32_t)(*p++ - '0');
            nd++;
        }
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == '%')
        p++;
    if (*p || !nd || ip >= 100)
        return false;
    *permille = ip * 10 + fp;
    return true;
}

/* ---- writing files (docs/files.md) -------------------------------------------------------- */

/* One file of a plan: its name in DIR and its bytes. */
struct plan_file {
    const char *name;
    struct ml_buf bytes;
    bool want;
    bool names_ds; /* the YAML: its deepspeed: was set (a path from the run directory) */
};

enum { PF_DS, PF_YAML, PF_ENV, PF_N };

/* The bytes of each file the plan changes (none other: an env-only plan writes only the env file). */
static bool plan_bytes(const char *dir, const struct ml_plan *p, const struct ml_train_opts *o,
                       const struct ml_train_setup *s, struct plan_file *f)
{
    const char *ds_path = s->rd.ds_path;
    bool ds_changed = false, yaml_changed = false, env_changed = false;
    for (uint32_t i = 0; i < p->n; i++) {
        ds_changed |= p->ch[i].where == ML_IN_DEEPSPEED || !strcmp(p->ch[i].key, "deepspeed");
        yaml_changed |= p->ch[i].where == ML_IN_YAML && strcmp(p->ch[i].key, "deepspeed");
        env_changed |= p->ch[i].where == ML_IN_ENV;
    }
    f[PF_DS].name = ds_path[0] ? ml_path_base(ds_path) : "ds_config.json";
    f[PF_YAML].name = o->config ? ml_path_base(o->config) : "train.yaml";
    f[PF_ENV].name = "memledger.env";
    f[PF_DS].want = ds_changed;
    f[PF_YAML].want = yaml_changed || (ds_changed && (o->config || !ds_path[0]));
    f[PF_ENV].want = env_changed;
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf in;
    ml_buf_init(&in, (size_t)4 << 20);
    bool ok = true;
    if (f[PF_DS].want) {
        ok = !ds_path[0] || ml_read_file(ds_path, (size_t)4 << 20, &in, &d) == ML_OK;
        ok = ok && ml_patch_deepspeed(in.len ? in.buf : NULL, in.len, p, &f[PF_DS].bytes, &d) == ML_OK;
    }
    /* The YAML's deepspeed: names the file in force as the framework finds it from its run
     * directory: the patched copy in DIR, else the user's file (rewritten only when the YAML's
     * own value would not find it from there). */
    char ds_value[4096 + 8], written[4096 + 64];
    const char *ds_arg = NULL;
    if (ok && f[PF_YAML].want && (ds_changed || (ds_path[0] && s->rd.ds_how != ML_DS_RUN_DIR))) {
        (void)snprintf(written, sizeof(written), "%s/%s", dir, f[PF_DS].name);
        ok = ml_path_from(o->run_dir, ds_changed ? written : ds_path, ds_value, sizeof(ds_value));
        ds_arg = ds_value;
        f[PF_YAML].names_ds = true;
    }
    if (ok && f[PF_YAML].want) {
        ml_buf_reset(&in);
        ok = !o->config || ml_read_file(o->config, (size_t)4 << 20, &in, &d) == ML_OK;
        ok = ok && ml_patch_yaml(in.buf, in.len, p, ds_arg, &f[PF_YAML].bytes, &d) == ML_OK;
    }
    if (ok && f[PF_ENV].want && ml_patch_env(p, &f[PF_ENV].bytes) != ML_OK)
        ok = ml_diag_set(&d, ML_ERR_NOMEM, "%s", _("the environment file is too large")) == ML_OK;
    if (!ok && d.code != ML_OK)
        ml_report(&d);
    ml_buf_release(&in);
    return ok;
}

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
    struct plan_file f[PF_N];
    memset(f, 0, sizeof(f));
    for (int i = 0; i < PF_N; i++)
        ml_buf_init(&f[i].bytes, 0);
    char path[PF_N][4096];
    bool ok = plan_bytes(dir, p, o, s, f);
    for (int i = 0; i < PF_N && ok; i++) {
        if (!f[i].want)
            continue;
        (void)snprintf(path[i], sizeof(path[i]), "%s/%s", dir, f[i].name);
        const char *in = input_at(path[i], o, s);
        if (in) {
            ml_errorf(_("%s: is %s, an input of this run; memledger never writes over an input file (write the plan "
                        "into another directory)"),
                      path[i], in);
            ok = false;
        } else {
            ok = ml_staged_add(&st, path[i], &f[i].bytes, force, _("file"));
        }
    }
    size_t n = st.n;
    if (ok)
        ok = ml_staged_commit(&st);
    else
        ml_staged_abort(&st);
    for (int i = 0; i < PF_N; i++) {
        if (ok && f[i].want)
            ml_stdout_printf(_("wrote %s\n"), path[i]);
        ml_buf_release(&f[i].bytes);
    }
    if (ok && !n)
        ml_stdout_printf("%s\n", _("nothing to write: the plan changes no file (see the changes above)"));
    if (ok && f[PF_YAML].want && f[PF_YAML].names_ds)
        ml_stdout_printf(_("its deepspeed: is found from %s%s: start the run there\n"),
                         o->run_dir ? "the run directory " : "", o->run_dir ? o->run_dir : _("the working directory"));
    return ok ? ML_EXIT_OK : ML_EXIT_USAGE;
}

/* ---- the command ------------------------------------------------------------------------- */

static int fit_serving(int argc, char **argv);

int cmd_fit(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--serve"))
            return fit_serving(argc, argv);
    static const struct option longopts[] = {
        ML_TRAIN_LONGOPTS,
        {"headroom", required_argument, NULL, F_HEADROOM},
        {"plans", required_argument, NULL, F_PLANS},
        {"max-gpus", required_argument, NULL, F_MAXGPUS},
        {"write", required_argument, NULL, F_WRITE},
        {"force", no_argument, NULL, F_FORCE},
        {"json", no_argument, NULL, F_JSON},
        {"plan", required_argument, NULL, F_PLAN},
        {"confidence", required_argument, NULL, F_CONFIDENCE},
        {"wide", no_argument, NULL, ML_OPT_WIDE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t which = 1;
    struct ml_train_opts o;
    ml_train_opts_init(&o, "fit");
    struct ml_fit_opts fo;
    ml_fit_opts_default(&fo);
    const char *write_dir = NULL;
    bool force = false, json = false, wide = false;
    uint64_t v;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int r = ml_train_opt(&o, c, optarg);
        if (r < 0)
            return ML_EXIT_USAGE;
        if (r > 0)
            continue;
        switch (c) {
        case F_HEADROOM:
            if (!parse_percent(optarg, &fo.headroom_permille))
                return ml_usage_error("fit", _("--headroom must be a percentage below 100, got '%s'"), optarg);
            break;
        case F_CONFIDENCE:
            if (strcmp(optarg, "point") && strcmp(optarg, "80"))
                return ml_usage_error("fit", _("%s: '%s' is not one of %s"), "--confidence", optarg, "point, 80");
            fo.point = !strcmp(optarg, "point");
            break;
        case F_PLANS:
            if (!ml_opt_u64("fit", "--plans", optarg, 1, ML_FIT_MAX_PLANS, &v))
                return ML_EXIT_USAGE;
            fo.max_plans = (uint32_t)v;
            break;
        case F_MAXGPUS:
            if (!ml_opt_u64("fit", "--max-gpus", optarg, 1, 1024, &v))
                return ML_EXIT_USAGE;
            fo.max_gpus_per_node = (uint32_t)v;
            break;
        case F_WRITE: write_dir = optarg; break;
        case F_PLAN:
            if (!ml_opt_u64("fit", "--plan", optarg, 1, ML_FIT_MAX_PLANS, &which))
                return ML_EXIT_USAGE;
            break;
        case F_FORCE: force = true; break;
        case F_JSON: json = true; break;
        case ML_OPT_WIDE: wide = true; break;
        case 'h': fputs(_(cmd_fit_usage), stdout); return ML_EXIT_OK;
        default: return ml_usage_error("fit", _("unknown or incomplete option '%s'"), argv[optind - 1]);
        }
    }
    if (optind < argc)
        o.model = argv[optind++];
    if (optind < argc)
        return ml_usage_error("fit", _("unexpected argument '%s'"), argv[optind]);
    /* --write patches the files as they are on disk, read again then: standard input is gone. */
    if (write_dir && ((o.config && !strcmp(o.config, "-")) || (o.deepspeed && !strcmp(o.deepspeed, "-"))))
        return ml_usage_error("fit", "%s", _("--write needs --config and --deepspeed as files, not standard input"));
    static struct ml_train_setup s;
    int rc = ml_train_setup_build(&o, &s);
    if (rc != ML_EXIT_OK)
        return rc;
    fo.host_ram_bytes = s.cl.host_ram_bytes;
    static struct ml_fit_result r;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_fit_train(&s.m.arch, &s.inv, &s.t, &s.cl, &fo, &r, &d) != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    struct ml_buf out;
    ml_buf_init(&out, 0);
    struct ml_layout lay;
    ml_term_layout(wide, &lay);
    struct ml_fit_view view = {s.m.name, &s.cl, fo.headroom_permille, &lay, NULL, false};
    enum ml_status st = json ? ml_render_fit_json(&out, &view, &r) : ml_render_fit_text(&out, &view, &r);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    if (st != ML_OK)
        return ML_EXIT_USAGE;
    if (write_dir) {
        if (!r.n) {
            ml_errorf(_("nothing to write: no plan fits"));
            return ML_EXIT_NEGATIVE;
        }
        if (which > r.n)
            return ml_usage_error("fit", _("--plan %llu: only %u plans fit"), (unsigned long long)which, r.n);
        rc = write_plan(write_dir, force, &r.plans[which - 1], &o, &s);
        if (rc != ML_EXIT_OK)
            return rc;
    }
    return r.n || r.base_fits ? ML_EXIT_OK : ML_EXIT_NEGATIVE;
}

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

/* Serving: the infer options, then the engine settings that make it start and fit. */
static int fit_serving(int argc, char **argv)
{
    static const struct option own[] = {
        {"serve", no_argument, NULL, 'S'},
        {"gpu", required_argument, NULL, 'g'},
        {"num-gpus", required_argument, NULL, 'n'},
        {"max-gpus", required_argument, NULL, 'G'},
        {"plans", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},
        {"python", no_argument, NULL, 'P'},
        {"write", required_argument, NULL, 'w'},
        {"plan", required_argument, NULL, 'N'},
        {"force", no_argument, NULL, 'f'},
        {"wide", no_argument, NULL, ML_OPT_WIDE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* 'i': the serving options fit takes (lib/setup/infer_opts.c), parsed by ml_infer_option. */
    static struct option longopts[ML_LONGOPTS_MAX];
    ml_serve_longopts(own, ML_IOPT_IN_FIT, 'i', longopts);
    struct ml_infer si;
    ml_infer_defaults(&si);
    si.engine = ML_ENGINE_VLLM;
    struct ml_fit_opts fo;
    ml_fit_opts_default(&fo);
    const char *gpu = NULL;
    uint64_t v, ngpu = 0, which = 1;
    bool json = false, wide = false, python = false, force = false;
    const char *write_dir = NULL;
    optind = 0;
    opterr = 0;
    int c, li = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        switch (c) {
        case 'S': break;
        case 'g': gpu = optarg; break;
        case 'n':
            if (!ml_opt_u64("fit", "--num-gpus", optarg, 1, 4096, &ngpu))
                return ML_EXIT_USAGE;
            break;
        case 'i':
            if (ml_infer_option("fit", longopts[li].name, optarg, &si) != ML_INFER_OPT_OK)
                return ML_EXIT_USAGE;
            if (si.engine == ML_ENGINE_HF)
                return ml_usage_error("fit", _("--engine: '%s' is not vllm or sglang"), optarg);
            break;
        case 'G':
            if (!ml_opt_u64("fit", "--max-gpus", optarg, 1, 1024, &v))
                return ML_EXIT_USAGE;
            fo.max_gpus_per_node = (uint32_t)v;
            break;
        case 'p':
            if (!ml_opt_u64("fit", "--plans", optarg, 1, ML_FIT_MAX_PLANS, &v))
                return ML_EXIT_USAGE;
            fo.max_plans = (uint32_t)v;
            break;
        case 'j': json = true; break;
        case 'P': python = true; break;
        case 'w': write_dir = optarg; break;
        case 'f': force = true; break;
        case 'N':
            if (!ml_opt_u64("fit", "--plan", optarg, 1, ML_FIT_MAX_PLANS, &which))
                return ML_EXIT_USAGE;
            break;
        case ML_OPT_WIDE: wide = true; break;
        case 'h': fputs(_(cmd_fit_usage), stdout); return ML_EXIT_OK;
        default: return ml_usage_error("fit", _("unknown or incomplete option '%s' (with --serve)"), argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return ml_usage_error("fit", "%s", _("missing MODEL"));
    if (!gpu)
        return ml_usage_error("fit", "%s", _("--gpu is needed"));
    static struct ml_model_ref m;
    static struct ml_inventory inv;
    struct ml_cluster cl;
    if (!ml_resolve_serving(argv[optind], gpu, &m, &cl, &inv))
        return ML_EXIT_USAGE;
    cl.gpus_per_node = ngpu ? (uint32_t)ngpu : si.tp;
    cl.nodes = 1;
    struct ml_diag d;
    ml_diag_init(&d);
    static struct ml_fit_infer_result r;
    if (ml_fit_infer(&m.arch, &inv, &si, &cl, &fo, &r, &d) != ML_OK)
        return ml_usage_error("fit", "%s", d.msg);
    struct ml_buf out;
    ml_buf_init(&out, 0);
    struct ml_layout lay;
    ml_term_layout(wide, &lay);
    /* The engine loads the hub id, or the model directory the user named. */
    char model_id[1024];
    const char *arg = argv[optind], *base = ml_path_base(arg);
    if (m.hub_id[0])
        (void)snprintf(model_id, sizeof(model_id), "%s", m.hub_id);
    else if (!strcmp(base, "config.json"))
        (void)snprintf(model_id, sizeof(model_id), "%.*s", base > arg ? (int)(base - arg - 1) : 1,
                       base > arg ? arg : ".");
    else
        (void)snprintf(model_id, sizeof(model_id), "%s", arg);
    struct ml_fit_view view = {m.name, &cl, 0, &lay, model_id, python};
    enum ml_status st = json ? ml_render_fit_infer_json(&out, &view, si.engine, &r)
                             : ml_render_fit_infer_text(&out, &view, si.engine, &r);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    if (st != ML_OK)
        return ML_EXIT_USAGE;
    if (write_dir)
        return write_serve(write_dir, force, &view, &r, (uint32_t)which);
    return r.n || r.base_fits ? ML_EXIT_OK : ML_EXIT_NEGATIVE;
}
