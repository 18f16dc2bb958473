/*
 * cmd_fit.c - memledger fit: the cheapest changes that make a run fit, written as patched files.
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memledger/fit.h"
#include "memledger/infer.h"
#include "i18n.h"
#include "term.h"
#include "train_setup.h"

/* cmd_fit_usage: generated from docs/cli/fit.md (tools/gen_cli_docs.c). */

enum { F_HEADROOM = ML_TO_END + 1, F_PLANS, F_MAXGPUS, F_WRITE, F_FORCE, F_SERVE, F_JSON, F_HELP, F_PLAN };

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

/* ---- writing files ------------------------------------------------------------------------- */

static bool dir_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return true;
    struct dirent *e;
    bool empty = true;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            empty = false;
    closedir(d);
    return empty;
}

/* Write bytes to dir/name atomically (temporary name, then rename); never over an existing file
 * unless force. */
static bool write_file(const char *dir, const char *name, const struct ml_buf *b, bool force)
{
    char path[2048], tmp[2100];
    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat st;
    if (!force && lstat(path, &st) == 0) {
        ml_errorf(_("%s: exists; not overwritten (use --force)"), path);
        return false;
    }
    (void)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%ld", dir, name, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        ml_errorf("%s: %s", tmp, strerror(errno));
        return false;
    }
    if (!ml_write_all(fd, b->buf, b->len)) {
        ml_errorf("%s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return false;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        ml_errorf("%s: %s", path, strerror(errno));
        unlink(tmp);
        return false;
    }
    return true;
}

/* DIR made if missing; refused when not a directory, or not empty without force. */
static int prepare_dir(const char *dir, bool force)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (mkdir(dir, 0755) != 0) {
            ml_errorf("%s: %s", dir, strerror(errno));
            return ML_EXIT_USAGE;
        }
    } else if (!S_ISDIR(st.st_mode)) {
        ml_errorf(_("%s: not a directory"), dir);
        return ML_EXIT_USAGE;
    } else if (!force && !dir_empty(dir)) {
        ml_errorf(_("%s: directory is not empty; use --force to write into it"), dir);
        return ML_EXIT_USAGE;
    }
    return ML_EXIT_OK;
}

static int write_plan(const char *dir, bool force, const struct ml_plan *p, const struct ml_train_opts *o,
                      const char *ds_path)
{
    if (prepare_dir(dir, force) != ML_EXIT_OK)
        return ML_EXIT_USAGE;
    bool ds_changed = false, yaml_changed = false, env_changed = false;
    for (uint32_t i = 0; i < p->n; i++) {
        ds_changed |= p->ch[i].where == ML_IN_DEEPSPEED || !strcmp(p->ch[i].key, "deepspeed");
        yaml_changed |= p->ch[i].where == ML_IN_YAML;
        env_changed |= p->ch[i].where == ML_IN_ENV;
    }
    struct ml_diag d;
    ml_diag_init(&d);
    const char *ds_name = ds_path && ds_path[0] ? ml_path_base(ds_path) : "ds_config.json";
    /* DeepSpeed: the user's file patched (or LLaMA-Factory's for a new stage). */
    if (ds_changed || (ds_path && ds_path[0])) {
        struct ml_buf in, out;
        ml_buf_init(&in, (size_t)4 << 20);
        ml_buf_init(&out, 0);
        if (ds_path && ds_path[0] && ml_read_file(ds_path, (size_t)4 << 20, &in, &d) != ML_OK) {
            ml_report(&d);
            ml_buf_release(&in);
            ml_buf_release(&out);
            return ML_EXIT_USAGE;
        }
        enum ml_status s = ml_patch_deepspeed(in.len ? in.buf : NULL, in.len, p, &out, &d);
        bool ok = s == ML_OK && write_file(dir, ds_name, &out, force);
        if (s != ML_OK)
            ml_report(&d);
        ml_buf_release(&in);
        ml_buf_release(&out);
        if (!ok)
            return ML_EXIT_USAGE;
        printf(_("wrote %s/%s\n"), dir, ds_name);
    }
    if (o->config || yaml_changed) {
        struct ml_buf in, out;
        ml_buf_init(&in, (size_t)4 << 20);
        ml_buf_init(&out, 0);
        if (o->config && ml_read_file(o->config, (size_t)4 << 20, &in, &d) != ML_OK) {
            ml_report(&d);
            ml_buf_release(&in);
            ml_buf_release(&out);
            return ML_EXIT_USAGE;
        }
        enum ml_status s = ml_patch_yaml(in.buf, in.len, p, ds_changed || (ds_path && ds_path[0]) ? ds_name : NULL, &out, &d);
        const char *yname = o->config ? ml_path_base(o->config) : "train.yaml";
        bool ok = s == ML_OK && write_file(dir, yname, &out, force);
        if (s != ML_OK)
            ml_report(&d);
        ml_buf_release(&in);
        ml_buf_release(&out);
        if (!ok)
            return ML_EXIT_USAGE;
        printf(_("wrote %s/%s\n"), dir, yname);
    }
    if (env_changed) {
        struct ml_buf out;
        ml_buf_init(&out, 0);
        bool ok = ml_patch_env(p, &out) == ML_OK && write_file(dir, "memledger.env", &out, force);
        ml_buf_release(&out);
        if (!ok)
            return ML_EXIT_USAGE;
        printf(_("wrote %s/memledger.env\n"), dir);
    }
    return ML_EXIT_OK;
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
        {"headroom", required_argument, NULL, F_HEADROOM}, {"plans", required_argument, NULL, F_PLANS},
        {"max-gpus", required_argument, NULL, F_MAXGPUS}, {"write", required_argument, NULL, F_WRITE},
        {"force", no_argument, NULL, F_FORCE}, {"json", no_argument, NULL, F_JSON},
        {"plan", required_argument, NULL, F_PLAN}, {"wide", no_argument, NULL, ML_OPT_WIDE},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
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
        case 'h':
            fputs(_(cmd_fit_usage), stdout);
            return ML_EXIT_OK;
        default:
            return ml_usage_error("fit", _("unknown or incomplete option '%s'"), argv[optind - 1]);
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
        rc = write_plan(write_dir, force, &r.plans[which - 1], &o, s.ds_path);
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
    if (prepare_dir(dir, force) != ML_EXIT_OK)
        return ML_EXIT_USAGE;
    struct ml_buf out;
    ml_buf_init(&out, 0);
    bool ok = ml_render_serve_script(&out, v, &r->plans[which - 1], which) == ML_OK && write_file(dir, "serve.sh", &out, force);
    ml_buf_release(&out);
    if (!ok)
        return ML_EXIT_USAGE;
    printf(_("wrote %s/serve.sh\n"), dir);
    return ML_EXIT_OK;
}

/* Serving: the infer options, then the engine settings that make it start and fit. */
static int fit_serving(int argc, char **argv)
{
    /* Reuse the infer command's parser by building an ml_infer from its flags. */
    /* 'i': a serving option, parsed by ml_infer_option (src/infer_opts.c). */
    static const struct option longopts[] = {
        {"serve", no_argument, NULL, 'S'}, {"gpu", required_argument, NULL, 'g'},
        {"num-gpus", required_argument, NULL, 'n'}, {"engine", required_argument, NULL, 'i'},
        {"max-model-len", required_argument, NULL, 'i'}, {"gpu-memory-utilization", required_argument, NULL, 'i'},
        {"tp", required_argument, NULL, 'i'}, {"max-gpus", required_argument, NULL, 'G'},
        {"plans", required_argument, NULL, 'p'}, {"json", no_argument, NULL, 'j'},
        {"vllm-version", required_argument, NULL, 'i'}, {"mem-fraction-static", required_argument, NULL, 'i'},
        {"python", no_argument, NULL, 'P'}, {"write", required_argument, NULL, 'w'}, {"plan", required_argument, NULL, 'N'},
        {"force", no_argument, NULL, 'f'}, {"wide", no_argument, NULL, ML_OPT_WIDE},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
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
        case 'h':
            fputs(_(cmd_fit_usage), stdout);
            return ML_EXIT_OK;
        default:
            return ml_usage_error("fit", _("unknown or incomplete option '%s' (with --serve)"), argv[optind - 1]);
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
        (void)snprintf(model_id, sizeof(model_id), "%.*s", base > arg ? (int)(base - arg - 1) : 1, base > arg ? arg : ".");
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
