/*
 * cmd_diagnose.c - memledger diagnose: from OOM logs to the cause, its evidence, and fixes with
 * the bytes they save.
 *
 * The logs are streamed through lib/oom's scanner, a regular file mapped 256 KiB at a time and
 * anything else read in 64 KiB chunks (constant memory, any size, several files or stdin); the
 * configs, when given, are read as `memledger train` reads them and turned into the run's ledger,
 * which prices every fix.
 */
#include "cli.h"
#include "infer_opts.h"
#include "io.h"
#include "term.h"
#include "train_setup.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/diagnose.h"
#include "memledger/gpu.h"
#include "memledger/ledger.h"
#include "memledger/ledger_svg.h"
#include "memledger/oom.h"
#include "memledger/oom_settings.h"
#include "memledger/report.h"
#include "memledger/train.h"
#include "i18n.h"

/* cmd_diagnose_usage: generated from docs/cli/diagnose.md (tools/gen_cli_docs.c). */

#define MAX_SETS   32
#define MAX_LOGS   256
#define CHUNK      ((size_t)64 << 10)
#define MAP_WINDOW ((size_t)256 << 10)

enum { O_CONFIG = 256, O_DS, O_MODEL, O_SET, O_FW, O_GPU, O_NGPU, O_NODES, O_HOSTRAM, O_JSON, O_ALL, O_SERVE };
enum { O_SVG = O_SERVE + 1, O_FORCE };

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
    struct ml_infer_flag flags[32]; /* the serving options, in order */
    int n_flags;
};

/* ---- options ------------------------------------------------------------------------------- */

/* One option of diagnose (ml_cli_parse). */
static int diag_opt(void *ctx, int c, const char *name, const char *arg)
{
    struct diag_opts *o = ctx;
    switch (c) {
    case O_SERVE: {
        struct ml_diag_serve_flags *f = &o->serve;
        if (o->n_flags >= (int)(sizeof(o->flags) / sizeof(o->flags[0])))
            return ml_usage_error("diagnose", _("more than %d serving options"),
                                  (int)(sizeof(o->flags) / sizeof(o->flags[0])));
        if (ml_infer_flag_parse("diagnose", name, arg, &o->flags[o->n_flags]) != ML_INFER_OPT_OK)
            return ML_EXIT_USAGE;
        ml_infer_opt_set(o->flags[o->n_flags].opt, o->flags[o->n_flags].v, &f->si);
        o->n_flags++;
        if (!strcmp(name, "engine") && f->si.engine == ML_ENGINE_HF)
            return ml_usage_error("diagnose", _("--engine: '%s' is not vllm or sglang"), arg);
        o->serve_opts = true;
        ml_diag_serve_given(f, name);
        break;
    }
    case O_CONFIG: o->config = arg; break;
    case O_DS: o->deepspeed = arg; break;
    case O_MODEL: o->model = arg; break;
    case O_SET:
        if (o->n_sets >= MAX_SETS)
            return ml_usage_error("diagnose", _("at most %d --set options"), MAX_SETS);
        o->sets[o->n_sets++] = arg;
        break;
    case O_FW:
        if (!ml_opt_framework("diagnose", arg, &o->fw))
            return ML_EXIT_USAGE;
        break;
    case O_GPU: o->gpu = arg; break;
    case O_NGPU:
        if (!ml_opt_u64("diagnose", "--num-gpus", arg, 1, 4096, &o->num_gpus))
            return ML_EXIT_USAGE;
        break;
    case O_NODES:
        if (!ml_opt_u64("diagnose", "--nodes", arg, 1, 65536, &o->nodes))
            return ML_EXIT_USAGE;
        break;
    case O_HOSTRAM: o->host_ram = arg; break;
    case O_JSON: o->json = true; break;
    case O_ALL: o->all = true; break;
    case O_SVG: o->svg = arg; break;
    case O_FORCE: o->force = true; break;
    default: o->wide = true; break; /* ML_OPT_WIDE */
    }
    return ML_EXIT_OK;
}

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
    static const struct ml_cli_spec spec = {"diagnose", cmd_diagnose_usage, longopts, -1, false};
    int first, rc = ml_cli_parse(&spec, argc, argv, diag_opt, o, &first);
    if (rc != ML_EXIT_OK)
        return rc;
    /* With --engine, an option that engine does not read is refused (lib/setup/infer_opts.c);
     * without it, the engine is the log's, checked once the log is read (cmd_diagnose). */
    enum ml_engine named;
    if (o->n_flags && ml_infer_flags_engine(o->flags, (uint32_t)o->n_flags, &named)) {
        char unused[8];
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_infer_flags_engine_for(o->flags, (uint32_t)o->n_flags, true, &named, unused, sizeof(unused), &d) !=
            ML_OK)
            return ml_usage_error("diagnose", "%s", d.msg);
    }
    while (first < argc) {
        if (o->n_logs >= MAX_LOGS)
            return ml_usage_error("diagnose", _("at most %d log files"), MAX_LOGS);
        o->logs[o->n_logs++] = argv[first++];
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

/* The run settings the logs print (ml_log_args): each chunk read goes to the scanner and to them. */
static struct ml_log_args log_args;
static uint32_t log_index;

static void feed(struct ml_oom_scanner *s, const char *p, size_t n, struct ml_oom_ahead *a)
{
    ml_log_args_feed(&log_args, log_index, p, n);
    ml_oom_scan_ahead(s, p, n, a);
}

/* The scanner's window pass over the next chunk, made on the helper thread (io.h, ml_ahead_*)
 * while this one scans the chunk before: two sets of marks, taken in turn. */
static struct ml_oom_ahead ahead[2];

struct mark_job {
    struct ml_oom_ahead *a;
    const char *p;
    size_t n;
    bool line_start;
};

static void mark_job_run(void *arg)
{
    const struct mark_job *j = arg;
    ml_oom_ahead_mark(j->a, j->p, j->n, j->line_start);
}

/* Where a log's chunks come from: a regular file's windows mapped in place (ml_in_map keeps the
 * last two), then whatever it grew by, or a pipe's bytes, read into two buffers in turn. */
struct source {
    int h;
    bool mapped;
    char *buf[2];
    unsigned next_buf;
    struct ml_diag *d;
};

/* The next chunk at *p: its size, 0 at the end, < 0 on a read error (in src->d). The chunk before
 * stays valid. */
static long next_chunk(struct source *src, const char **p)
{
    if (src->mapped) {
        long got = ml_in_map(src->h, MAP_WINDOW, p);
        if (got > 0)
            return got;
        src->mapped = false;
    }
    char *b = src->buf[src->next_buf];
    src->next_buf ^= 1;
    *p = b;
    return ml_in_read(src->h, b, CHUNK, src->d);
}

/* Stream one log through the scanner; reports and returns false on a read error. Each chunk is
 * scanned while the next is taken (no copy for a mapped file; the memory held stays two chunks);
 * a mapped window is marked on the helper thread meanwhile, where two CPUs are usable (a log of
 * one window makes no thread). */
static bool scan_file(const char *path, struct ml_oom_scanner *s, char *chunks[2])
{
    struct ml_diag d;
    ml_diag_init(&d);
    int h = ml_in_open(path, &d);
    if (h < 0) {
        ml_errorf("%s: %s", path, d.msg);
        return false;
    }
    ml_oom_scan_begin(s);
    struct source src = {h, true, {chunks[0], chunks[1]}, 0, &d};
    const char *p;
    long got = next_chunk(&src, &p);
    bool helper = false, tried = false;
    struct ml_oom_ahead *marks = NULL; /* p's, NULL for the first chunk */
    unsigned k = 0;
    while (got > 0) {
        const char *q;
        long next = next_chunk(&src, &q);
        /* (only a mapped window is marked ahead: a pipe's 64 KiB chunks, read while a writer takes
         * the other core, came out slower with the thread than without it) */
        bool mark = next > 0 && src.mapped;
        if (mark && !tried) {
            helper = ml_ahead_open();
            tried = true;
        }
        mark = mark && helper;
        struct mark_job job = {&ahead[k], q, next > 0 ? (size_t)next : 0, p[got - 1] == '\n'};
        if (mark) {
            ml_oom_ahead_begin(s, &ahead[k]); /* (the matcher copied while the helper waits) */
            ml_ahead_post(mark_job_run, &job);
        }
        feed(s, p, (size_t)got, marks);
        marks = NULL;
        if (mark) {
            ml_ahead_wait();
            marks = &ahead[k];
            k ^= 1;
        }
        p = q;
        got = next;
    }
    if (helper)
        ml_ahead_close();
    ml_in_unmap();
    ml_oom_scan_end(s);
    ml_log_args_end(&log_args);
    log_index++;
    ml_in_close(h);
    if (got < 0)
        ml_errorf("%s: %s", strcmp(path, "-") ? path : "<stdin>", d.msg);
    return got >= 0;
}

/* ---- the run ------------------------------------------------------------------------------- */

/* Names resolved as memledger train resolves them. */
static const struct ml_diag_io diag_io = {ml_resolve_model, ml_gpu_resolve};

/* The configs as cmd_train.c reads them, and the model they or --model name. */
static bool load_run(const struct diag_opts *o, struct ml_diag_run *r)
{
    ml_train_defaults(&r->t, o->fw);
    char yaml_model[512], ds_path[1024];
    if (!ml_train_read_configs(o->config, o->deepspeed, o->sets, o->n_sets, &r->t, yaml_model, sizeof(yaml_model),
                               ds_path, sizeof(ds_path)))
        return false;
    ml_diag_run_files(r, o->config, ds_path);
    const char *model = o->model ? o->model : yaml_model[0] ? yaml_model : NULL;
    if (!model && o->config)
        return ml_usage_error("diagnose", "%s", _("the YAML names no model_name_or_path; give --model")) == 0;
    struct ml_diag d;
    ml_diag_init(&d);
    if (model && ml_diag_run_resolve(r, model, &diag_io, &d) != ML_OK) {
        ml_report(&d);
        return false;
    }
    return true; /* no model: the log alone */
}

/* The flags checked before the logs are read (check), or the run of an incident with events
 * (ml_diag_run_settle); false after the error is printed: a usage error naming the flag, else
 * one line (naming the training config when the error names no file). */
static bool settle_run(const struct diag_opts *o, const struct ml_incident *inc, struct ml_diag_run *r, bool check)
{
    struct ml_diag_run_flags f = {o->gpu,    o->host_ram,   o->num_gpus,       o->nodes,
                                  &o->serve, o->serve_opts, o->config != NULL, o->fw};
    static struct ml_ledger scratch;
    struct ml_diag d;
    ml_diag_init(&d);
    bool usage;
    if ((check ? ml_diag_check_flags(&f, &diag_io, r, &usage, &d)
               : ml_diag_run_settle(inc, &f, &diag_io, r, &scratch, &usage, &d)) == ML_OK)
        return true;
    if (usage)
        return (d.origin[0] ? ml_usage_error("diagnose", "%s: %s", d.origin, d.msg)
                            : ml_usage_error("diagnose", "%s", d.msg)) == 0;
    if (!d.origin[0] && o->config)
        ml_diag_at(&d, o->config, 0, 0);
    ml_report(&d);
    return false;
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
    if (!load_run(&o, &r) || !settle_run(&o, NULL, &r, true))
        return ML_EXIT_USAGE;

    static struct ml_incident inc;
    static struct ml_oom_scanner s;
    static char chunk_a[CHUNK], chunk_b[CHUNK];
    char *chunks[2] = {chunk_a, chunk_b};
    ml_incident_init(&inc);
    ml_oom_scanner_init(&s, &inc);
    ml_log_args_init(&log_args);
    log_index = 0;
    /* No LOG on a terminal: say that the log is read from standard input, rather than wait
     * in silence. */
    if (o.n_logs == 0 && ml_stdin_is_tty())
        ml_stderr_printf("%s\n", _("memledger diagnose: reading the log from standard input (paste it, then Ctrl-D; or "
                                   "give LOG files: 'memledger help diagnose')"));
    if (o.n_logs == 0 && !scan_file("-", &s, chunks))
        return ML_EXIT_USAGE;
    for (int i = 0; i < o.n_logs; i++)
        if (!scan_file(o.logs[i], &s, chunks))
            return ML_EXIT_USAGE;

    const char *names[MAX_LOGS]; /* the names the report prints for the logs */
    ml_diag_log_names(o.logs, (uint32_t)o.n_logs, names);
    struct ml_diag_report rep = {&inc, NULL, &r, names, o.n_logs ? (uint32_t)o.n_logs : 1, o.all, o.config != NULL};

    static struct ml_diagnosis dg;
    if (inc.n_events) {
        r.args = log_args; /* (the settings the log prints: the serving engine's too) */
        if (!settle_run(&o, &inc, &r, false))
            return ML_EXIT_USAGE;
        struct ml_diag d;
        ml_diag_init(&d);
        /* The engine the log names reads every serving option given, or the option is refused
         * (an SGLang log and --gpu-memory-utilization): --engine overrides the log. */
        enum ml_engine named, e = r.si.engine;
        char unused[8];
        if (o.n_flags && !ml_infer_flags_engine(o.flags, (uint32_t)o.n_flags, &named) &&
            ml_infer_flags_engine_for(o.flags, (uint32_t)o.n_flags, true, &e, unused, sizeof(unused), &d) != ML_OK)
            return ml_usage_error("diagnose", "%s", d.msg);
        if (ml_diag_run_diagnose(&inc, &r, &dg, &d) != ML_OK) {
            ml_report(&d);
            return ML_EXIT_USAGE;
        }
        rep.dg = &dg;
    }
    struct ml_buf out;
    ml_buf_init(&out, 0);
    struct ml_layout lay;
    ml_term_layout(o.wide, &lay);
    enum ml_status st = ml_render_diagnose(&out, o.json, &rep, &lay);
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
