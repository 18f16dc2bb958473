/*
 * cmd_diagnose.c - memledger diagnose: from OOM logs to the cause, its evidence, and fixes with
 * the bytes they save.
 *
 * The logs are streamed through lib/oom's scanner in 64 KiB chunks (constant memory, any size,
 * several files or stdin); the configs, when given, are read as `memledger train` reads them and
 * turned into the run's ledger, which prices every fix.
 */
#include "cli.h"
#include "infer_opts.h"
#include "io.h"
#include "term.h"
#include "train_setup.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/diagnose.h"
#include "memledger/gpu.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/ledger_svg.h"
#include "memledger/oom.h"
#include "memledger/oom_settings.h"
#include "memledger/report.h"
#include "memledger/train.h"
#include "memledger/units.h"
#include "i18n.h"

/* cmd_diagnose_usage: generated from docs/cli/diagnose.md (tools/gen_cli_docs.c). */

#define MAX_SETS 32
#define MAX_LOGS 256
#define CHUNK    ((size_t)64 << 10)

enum {
    O_CONFIG = 256,
    O_DS,
    O_MODEL,
    O_SET,
    O_FW,
    O_GPU,
    O_NGPU,
    O_NODES,
    O_HOSTRAM,
    O_JSON,
    O_ALL,
    O_SERVE,
    O_SVG,
    O_FORCE
};

struct diag_opts {
    const char *config, *deepspeed, *model, *gpu, *host_ram;
    const char *sets[MAX_SETS];
    int n_sets;
    enum ml_framework fw;
    uint64_t num_gpus, nodes; /* 0 = from the log */
    bool json, all, force, wide;
    const char *svg; /* --svg FILE: the event's figures beside the ledger */
    const char *logs[MAX_LOGS];
    int n_logs;
    /* A serving engine's settings (ml_infer_option) and which of them the flags gave. */
    struct ml_diag_serve_flags serve;
    bool serve_opts;
};

/* ---- options ------------------------------------------------------------------------------- */

static int parse_args(int argc, char **argv, struct diag_opts *o)
{
    static const struct option own[] = {
        {"config", required_argument, NULL, O_CONFIG},
        {"deepspeed", required_argument, NULL, O_DS},
        {"model", required_argument, NULL, O_MODEL},
        {"set", required_argument, NULL, O_SET},
        {"framework", required_argument, NULL, O_FW},
        {"gpu", required_argument, NULL, O_GPU},
        {"num-gpus", required_argument, NULL, O_NGPU},
        {"nodes", required_argument, NULL, O_NODES},
        {"host-ram", required_argument, NULL, O_HOSTRAM},
        {"json", no_argument, NULL, O_JSON},
        {"all", no_argument, NULL, O_ALL},
        {"help", no_argument, NULL, 'h'},
        {"svg", required_argument, NULL, O_SVG},
        {"force", no_argument, NULL, O_FORCE},
        {"wide", no_argument, NULL, ML_OPT_WIDE},
        {NULL, 0, NULL, 0},
    };
    /* O_SERVE: a serving engine's options (lib/setup/infer_opts.c), parsed by ml_infer_option. */
    static struct option longopts[ML_LONGOPTS_MAX];
    ml_serve_longopts(own, ML_IOPT_IN_DIAGNOSE, O_SERVE, longopts);
    ml_infer_defaults(&o->serve.si);
    optind = 0;
    opterr = 0;
    int c, li = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        switch (c) {
        case O_SERVE: {
            const char *name = longopts[li].name;
            struct ml_diag_serve_flags *f = &o->serve;
            if (ml_infer_option("diagnose", name, optarg, &f->si) != ML_INFER_OPT_OK)
                return ML_EXIT_USAGE;
            if (!strcmp(name, "engine") && f->si.engine == ML_ENGINE_HF)
                return ml_usage_error("diagnose", _("--engine: '%s' is not vllm or sglang"), optarg);
            o->serve_opts = true;
            ml_diag_serve_given(f, name);
            break;
        }
        case O_CONFIG: o->config = optarg; break;
        case O_DS: o->deepspeed = optarg; break;
        case O_MODEL: o->model = optarg; break;
        case O_SET:
            if (o->n_sets >= MAX_SETS)
                return ml_usage_error("diagnose", _("at most %d --set options"), MAX_SETS);
            o->sets[o->n_sets++] = optarg;
            break;
        case O_FW: {
            static const char *const f[] = {"llamafactory", "hf", "litgpt", "torchtune", "trl"};
            int v = -1;
            for (int i = 0; i < ML_FW_COUNT; i++)
                if (!strcmp(optarg, f[i]))
                    v = i;
            if (v < 0)
                return ml_usage_error(
                    "diagnose", _("--framework: '%s' is not one of llamafactory, hf, litgpt, torchtune, trl"), optarg);
            o->fw = (enum ml_framework)v;
            break;
        }
        case O_GPU: o->gpu = optarg; break;
        case O_NGPU:
            if (!ml_opt_u64("diagnose", "--num-gpus", optarg, 1, 4096, &o->num_gpus))
                return ML_EXIT_USAGE;
            break;
        case O_NODES:
            if (!ml_opt_u64("diagnose", "--nodes", optarg, 1, 65536, &o->nodes))
                return ML_EXIT_USAGE;
            break;
        case O_HOSTRAM: o->host_ram = optarg; break;
        case O_JSON: o->json = true; break;
        case O_ALL: o->all = true; break;
        case O_SVG: o->svg = optarg; break;
        case O_FORCE: o->force = true; break;
        case ML_OPT_WIDE: o->wide = true; break;
        case 'h': fputs(_(cmd_diagnose_usage), stdout); return -1;
        default: return ml_usage_error("diagnose", _("unknown or incomplete option '%s'"), argv[optind - 1]);
        }
    }
    while (optind < argc) {
        if (o->n_logs >= MAX_LOGS)
            return ml_usage_error("diagnose", _("at most %d log files"), MAX_LOGS);
        o->logs[o->n_logs++] = argv[optind++];
    }
    if (o->deepspeed && !o->config && !o->model)
        return ml_usage_error("diagnose", "%s", _("--deepspeed needs --config or --model"));
    if (o->serve_opts && o->config)
        return ml_usage_error(
            "diagnose", "%s",
            _("serving options and --config exclude each other (a training run or a serving engine)"));
    return ML_EXIT_OK;
}

/* ---- reading the logs ----------------------------------------------------------------------- */

/* Stream one log through the scanner; reports and returns false on a read error. */
static bool scan_file(const char *path, struct ml_oom_scanner *s, char *chunk)
{
    bool in = !strcmp(path, "-");
    struct ml_diag d;
    ml_diag_init(&d);
    int h = ml_in_open(path, &d);
    if (h < 0) {
        ml_errorf("%s: %s", path, d.msg);
        return false;
    }
    ml_oom_scan_begin(s);
    bool ok = true;
    for (;;) {
        long n = ml_in_read(h, chunk, CHUNK, &d);
        if (n < 0) {
            ml_errorf("%s: %s", in ? "<stdin>" : path, d.msg);
            ok = false;
            break;
        }
        if (n == 0)
            break;
        ml_oom_scan(s, chunk, (size_t)n);
    }
    ml_oom_scan_end(s);
    ml_in_close(h);
    return ok;
}

/* ---- the run's configs (as cmd_train.c reads them) -------------------------------------- */

static bool load_run(const struct diag_opts *o, struct ml_diag_run *r)
{
    ml_train_defaults(&r->t, o->fw);
    char yaml_model[512], ds_path[1024];
    if (!ml_train_read_configs(o->config, o->deepspeed, o->sets, o->n_sets, &r->t, yaml_model, sizeof(yaml_model),
                               ds_path, sizeof(ds_path)))
        return false;
    if (o->config)
        (void)snprintf(r->config_name, sizeof(r->config_name), "%s", ml_path_base(o->config));
    if (ds_path[0])
        (void)snprintf(r->ds_name, sizeof(r->ds_name), "%s", ml_path_base(ds_path));
    struct ml_diag d;
    const char *model = o->model ? o->model : yaml_model[0] ? yaml_model : NULL;
    if (!model) {
        if (o->config)
            return ml_usage_error("diagnose", "%s", _("the YAML names no model_name_or_path; give --model")) == 0;
        return true; /* no run: the log alone */
    }
    ml_diag_init(&d);
    if (ml_resolve_model(model, &r->m, &d) != ML_OK) {
        ml_report(&d);
        return false;
    }
    ml_diag_init(&d);
    if (ml_inventory_build(&r->m.arch, &r->inv, &d) != ML_OK) {
        ml_diag_at(&d, r->m.source, 0, 0);
        ml_report(&d);
        return false;
    }
    r->have = true;
    return true;
}

/* No model given: a serving engine's own engine line may name one this build knows. */
static void model_from_log(const struct diag_opts *o, const struct ml_incident *inc, struct ml_diag_run *r)
{
    if (r->have || o->config || !inc->engine.seen || !inc->engine.model[0] || !ml_diag_serving_incident(inc))
        return;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_resolve_model(inc->engine.model, &r->m, &d) != ML_OK)
        return;
    ml_diag_init(&d);
    if (ml_inventory_build(&r->m.arch, &r->inv, &d) == ML_OK) {
        ml_train_defaults(&r->t, o->fw);
        r->have = true;
        r->model_from_log = true;
    }
}

/* The card: --gpu, else the log's own (ml_diag_gpu_from_log). False after a reported error; no
 * card leaves r->cl.gpu.capacity_bytes 0. */
static bool setup_gpu(const struct diag_opts *o, const struct ml_incident *inc, bool serving, struct ml_diag_run *r)
{
    memset(&r->cl, 0, sizeof(r->cl));
    if (!o->gpu) {
        r->capacity_from_log = ml_diag_gpu_from_log(inc, serving, &r->cl.gpu);
        return true;
    }
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_gpu_resolve(o->gpu, &r->cl.gpu, &d) != ML_OK) {
        ml_diag_at(&d, "--gpu", 0, 0);
        ml_report(&d);
        return false;
    }
    return true;
}

/* A serving engine: the flags, else what the log says, on tp x pp cards. */
static bool setup_serving(const struct diag_opts *o, const struct ml_incident *inc, struct ml_diag_run *r)
{
    if (!setup_gpu(o, inc, true, r))
        return false;
    r->serving = true;
    ml_diag_serving_settings(inc, &o->serve, &r->si);
    r->cl.gpus_per_node = r->si.tp * r->si.pp;
    r->cl.nodes = 1;
    r->have_cluster = r->cl.gpu.capacity_bytes > 0;
    if (r->have_cluster) {
        /* Settings the ledger refuses (a tp that does not divide the heads, ...) would price
         * nothing: say so, as infer does. */
        static struct ml_ledger l;
        struct ml_serve sv;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_ledger_infer(&r->m.arch, &r->inv, &r->si, &r->cl, &l, &sv, &d) != ML_OK)
            return ml_usage_error("diagnose", "%s", d.msg) == 0;
    }
    return true;
}

/* GPU and world size: the flags, else the log's own "total capacity" and the best-matching count. */
static bool setup_cluster(const struct diag_opts *o, const struct ml_incident *inc, struct ml_diag_run *r)
{
    struct ml_diag d;
    if (!setup_gpu(o, inc, false, r))
        return false;
    if (r->cl.gpu.capacity_bytes == 0)
        return true; /* no capacity: no ledger */
    if (o->host_ram) {
        ml_diag_init(&d);
        if (ml_size_parse(o->host_ram, &r->cl.host_ram_bytes, NULL, &d) != ML_OK)
            return ml_usage_error("diagnose", "--host-ram: %s", d.msg) == 0;
    }
    ml_diag_cluster_size(inc, o->num_gpus, o->nodes, r);
    /* Contradictory settings would make every price wrong: say so, price nothing. */
    ml_diag_init(&d);
    struct ml_train tc = r->t;
    if (ml_train_check(&tc, &r->m.arch, &r->cl, &d) != ML_OK) {
        if (!d.origin[0] && o->config)
            ml_diag_at(&d, o->config, 0, 0);
        ml_report(&d);
        return false;
    }
    r->have_cluster = true;
    return true;
}

/* --gpu and --host-ram are checked before any log is read, also when no run uses them. */
static bool check_flags(const struct diag_opts *o, const struct ml_diag_run *r)
{
    struct ml_diag d;
    if (o->gpu && !r->have) {
        struct ml_gpu g;
        ml_diag_init(&d);
        if (ml_gpu_resolve(o->gpu, &g, &d) != ML_OK) {
            ml_diag_at(&d, "--gpu", 0, 0);
            ml_report(&d);
            return false;
        }
    }
    if (o->host_ram && !r->have) {
        uint64_t v;
        ml_diag_init(&d);
        if (ml_size_parse(o->host_ram, &v, NULL, &d) != ML_OK)
            return ml_usage_error("diagnose", "--host-ram: %s", d.msg) == 0;
    }
    return true;
}

/* ---- the command ------------------------------------------------------------------------ */

int cmd_diagnose(int argc, char **argv)
{
    static struct diag_opts o;
    memset(&o, 0, sizeof(o));
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return ML_EXIT_OK;
    if (rc != ML_EXIT_OK)
        return rc;

    if (o.svg && !ml_can_write(o.svg, o.force))
        return ML_EXIT_USAGE;
    /* The run first: a bad config is a usage error before any log is read. */
    static struct ml_diag_run r;
    memset(&r, 0, sizeof(r));
    if (!load_run(&o, &r) || !check_flags(&o, &r))
        return ML_EXIT_USAGE;

    static struct ml_incident inc;
    static struct ml_oom_scanner s;
    static char chunk[CHUNK];
    ml_incident_init(&inc);
    ml_oom_scanner_init(&s, &inc);
    /* No LOG on a terminal: say that the log is read from standard input, rather than wait
     * in silence. */
    if (o.n_logs == 0 && ml_stdin_is_tty())
        ml_stderr_printf("%s\n", _("memledger diagnose: reading the log from standard input (paste it, then Ctrl-D; or "
                                   "give LOG files: 'memledger help diagnose')"));
    if (o.n_logs == 0 && !scan_file("-", &s, chunk))
        return ML_EXIT_USAGE;
    for (int i = 0; i < o.n_logs; i++)
        if (!scan_file(o.logs[i], &s, chunk))
            return ML_EXIT_USAGE;

    /* The names the report prints for the logs. */
    const char *names[MAX_LOGS];
    for (int i = 0; i < o.n_logs; i++)
        names[i] = strcmp(o.logs[i], "-") ? ml_path_base(o.logs[i]) : "<stdin>";
    if (o.n_logs == 0)
        names[0] = "<stdin>";
    struct ml_diag_report rep = {&inc, NULL, &r, names, o.n_logs ? (uint32_t)o.n_logs : 1, o.all, o.config != NULL};

    static struct ml_diagnosis dg;
    if (inc.n_events) {
        model_from_log(&o, &inc, &r);
        /* A model and no training config: a serving engine when the log (or a serving flag) says so. */
        bool serving = r.have && !o.config && (o.serve_opts || ml_diag_serving_incident(&inc));
        if (serving ? !setup_serving(&o, &inc, &r) : r.have && !setup_cluster(&o, &inc, &r))
            return ML_EXIT_USAGE;
        struct ml_diag_setup su;
        ml_diag_setup_of(&r, &su);
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_diagnose(&inc, &su, &dg, &d) != ML_OK) {
            ml_report(&d);
            return ML_EXIT_USAGE;
        }
        rep.dg = &dg;
    }
    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status st = ML_OK;
    if (o.json)
        st = ml_render_diagnose_json(&out, &rep);
    else {
        struct ml_layout lay;
        ml_term_layout(o.wide, &lay);
        ml_render_diagnose_text(&out, &rep, &lay);
    }
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_reset(&out);
    if (st == ML_OK && o.svg)
        st = ml_write_picture(o.svg, ml_render_diagnose_svg(&out, &rep), &out, o.force);
    ml_buf_release(&out);
    if (st != ML_OK)
        return ML_EXIT_USAGE;
    return inc.n_events ? ML_EXIT_OK : ML_EXIT_NEGATIVE;
}
