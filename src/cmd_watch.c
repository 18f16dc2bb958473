/*
 * cmd_watch.c - memledger watch: run a command, sample real GPU memory while it runs, and report
 * the peaks, the other processes on the same GPUs and the OOM, if any.
 */
#include "cli.h"
#include "io.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/monitor.h"
#include "memledger/oom.h"
#include "memledger/report.h"
#include "memledger/units.h"
#include "i18n.h"

/* cmd_watch_usage: generated from docs/cli/watch.md (tools/gen_cli_docs.c). */

enum { O_INTERVAL = 256, O_OUT, O_SVG, O_FORCE, O_BACKEND, O_BACKEND_LIB, O_NO_TEE };

enum {
    EXIT_WATCH_FAILED = 125, /* watch's own failure */
    EXIT_CANNOT_RUN = 126,   /* the command exists but cannot be run */
    EXIT_NOT_FOUND = 127     /* the command was not found */
};

struct watch_opts {
    uint64_t interval_ns;
    const char *out, *svg, *backend, *backend_lib;
    bool force, no_tee;
    char **argv;
};

/* What the sampler's callbacks write to. */
struct sink {
    struct ml_out *timeline;             /* NULL without --out */
    bool timeline_failed;                /* a write failed; warned once */
    struct ml_oom_scanner scan;          /* the diagnose scanner over the command's stderr */
    struct ml_incident inc;              /* what it found */
    uint32_t n_recorded;                 /* events already written to the timeline */
    uint64_t ev_t_ns[ML_OOM_MAX_EVENTS]; /* when each stored event was first seen */
};

/* ---- option parsing ---------------------------------------------------------------------- */

static int watch_opt(void *ctx, int c, const char *name, const char *arg)
{
    (void)name;
    struct watch_opts *o = ctx;
    switch (c) {
    case O_INTERVAL:
        if (!ml_duration_parse(arg, &o->interval_ns))
            return ml_usage_error("watch", _("--interval: '%s' is not a duration such as 200ms or 1s"), arg);
        if (o->interval_ns < 10000000u || o->interval_ns > 3600000000000u)
            return ml_usage_error("watch", _("--interval %s is out of range [10ms, 1h]"), arg);
        break;
    case O_OUT: o->out = arg; break;
    case O_SVG: o->svg = arg; break;
    case O_FORCE: o->force = true; break;
    case O_BACKEND:
        if (strcmp(arg, "auto") && !ml_backend_find(arg))
            return ml_usage_error("watch", _("--backend: '%s' is not one of auto, nvml, rocm-smi, none"), arg);
        o->backend = arg;
        break;
    case O_BACKEND_LIB: o->backend_lib = arg; break;
    default: o->no_tee = true; break; /* O_NO_TEE */
    }
    return ML_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct watch_opts *o)
{
    static const struct option longopts[] = {
        {"interval", required_argument, NULL, O_INTERVAL},
        {"out", required_argument, NULL, O_OUT},
        {"svg", required_argument, NULL, O_SVG},
        {"force", no_argument, NULL, O_FORCE},
        {"backend", required_argument, NULL, O_BACKEND},
        {"backend-lib", required_argument, NULL, O_BACKEND_LIB},
        {"no-tee", no_argument, NULL, O_NO_TEE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* Stop at the command: its own options are never ours (trap 11). */
    static const struct ml_cli_spec spec = {"watch", cmd_watch_usage, longopts, -1, true};
    o->interval_ns = 200000000u;
    o->backend = "auto";
    int first, rc = ml_cli_parse(&spec, argc, argv, watch_opt, o, &first);
    if (rc != ML_EXIT_OK)
        return rc;
    if (first >= argc)
        return ml_usage_error("watch", "%s", _("missing the command to run (memledger watch [options] -- COMMAND)"));
    if (argv[first][0] == '\0')
        return ml_usage_error("watch", "%s", _("the command is an empty string"));
    o->argv = argv + first;
    if (o->backend_lib && (!strcmp(o->backend, "auto") || !strcmp(o->backend, "none")))
        return ml_usage_error("watch", "%s", _("--backend-lib needs --backend nvml or rocm-smi"));
    if (o->out && o->svg && !strcmp(o->out, o->svg))
        return ml_usage_error("watch", "%s", _("--out and --svg name the same file"));
    return ML_EXIT_OK;
}

/* ---- output files ------------------------------------------------------------------------- */

/* Both outputs are made before the command starts, so that an unwritable path fails early
 * (io.h's ml_out: a temporary file beside the name, never through a symbolic link). The
 * timeline is put in place at once and written as the run goes (a killed watch leaves a usable
 * file); the plot is renamed into place when the command ends. */
static bool open_outputs(const struct watch_opts *o, struct ml_out *tl, struct ml_out *svg)
{
    tl->h = svg->h = -1;
    if (o->out && !ml_out_open(tl, o->out, o->force, _("timeline")))
        return false;
    if (o->svg && !ml_out_open(svg, o->svg, o->force, _("plot"))) {
        ml_out_abort(tl);
        return false;
    }
    if (o->out && !ml_out_place(tl)) {
        ml_out_abort(tl);
        ml_out_abort(svg);
        return false;
    }
    return true;
}

static void timeline_write(struct sink *s, const char *line, size_t len)
{
    if (!s->timeline || s->timeline_failed)
        return;
    if (!ml_out_write(s->timeline, line, len)) {
        s->timeline_failed = true;
        ml_warnf(_("%s: cannot write the timeline any more (%s); the command goes on"), s->timeline->path,
                 strerror(errno));
    }
}

/* ---- the OOM scan of the command's stderr -------------------------------------------------- */

/*
 * Out-of-memory detection on the command's stderr: the bytes go through the diagnose scanner
 * (ml_oom_scan), which finds every OOM family of the field guide with device, sizes and phase.
 * Write the events it stored since the last call to the timeline.
 */
static void oom_scan_record(struct sink *s, uint64_t t_ns)
{
    for (; s->n_recorded < s->inc.n_events; s->n_recorded++) {
        s->ev_t_ns[s->n_recorded] = t_ns;
        struct ml_buf b;
        ml_buf_init(&b, 16384);
        ml_watch_oom_line(&b, &s->inc.ev[s->n_recorded], t_ns);
        timeline_write(s, b.buf, b.len);
        ml_buf_release(&b);
    }
}

static void on_record(void *ctx, const char *line, size_t len)
{
    timeline_write(ctx, line, len);
}

static void on_stderr(void *ctx, uint64_t t_ns, const char *data, size_t n)
{
    struct sink *s = ctx;
    /* The command's output first, unchanged and at once. */
    ml_stderr_write(data, n);
    ml_oom_scan(&s->scan, data, n);
    oom_scan_record(s, t_ns);
}

/* ---- the report ----------------------------------------------------------------------------- */

static void summary_record(struct sink *s, const struct ml_watch *w, const struct ml_child_exit *ex)
{
    struct ml_buf b;
    ml_buf_init(&b, 1 << 20);
    ml_watch_summary_line(&b, w, ex, s->inc.n_events_seen);
    timeline_write(s, b.buf, b.len);
    ml_buf_release(&b);
}

static bool write_svg(struct ml_out *out, const struct ml_watch *w, const struct ml_series *series, char *const *argv)
{
    struct ml_buf title, svg;
    ml_buf_init(&title, 512);
    ml_buf_init(&svg, 0);
    ml_buf_adds(&title, "memledger watch ");
    ml_watch_command_text(&title, argv);
    bool ok = ml_watch_svg(w, series, title.buf, &svg) == ML_OK;
    if (ok && !ml_out_write(out, svg.buf, svg.len)) {
        ml_warnf(_("%s: cannot write the plot: %s"), out->path, strerror(errno));
        ok = false;
    }
    if (ok)
        ok = ml_out_commit(out);
    else
        ml_out_abort(out);
    ml_buf_release(&title);
    ml_buf_release(&svg);
    return ok;
}

/* The backend: library paths from the environment, here in the CLI. A backend that fails does
 * not stop the run: it says why, once, and samples nothing. */
static void open_monitor(const struct watch_opts *o, struct ml_monitor *m)
{
    struct ml_backend_opts bo;
    memset(&bo, 0, sizeof(bo));
    bo.nvml_lib = ml_env("ML_NVML_LIBRARY");
    bo.rsmi_lib = ml_env("ML_RSMI_LIBRARY");
    if (o->backend_lib) {
        if (!strcmp(o->backend, "nvml"))
            bo.nvml_lib = o->backend_lib;
        else
            bo.rsmi_lib = o->backend_lib;
    }
    bo.rsmi_dirs[0] = ml_env("ROCM_SMI_LIB_PATH");
    char rocm_lib[1024] = "";
    const char *rocm = ml_env("ROCM_PATH");
    if (rocm && rocm[0]) {
        (void)snprintf(rocm_lib, sizeof(rocm_lib), "%s/lib", rocm);
        bo.rsmi_dirs[1] = rocm_lib;
    }
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_monitor_open(m, o->backend, &bo, &d) != ML_OK) {
        /* A named backend that fails does not stop the run: say why, once, and go on. */
        ml_warnf(_("%s backend unavailable: %s; running the command without GPU sampling"), o->backend, d.msg);
        ml_diag_init(&d);
        (void)ml_monitor_open(m, "none", &bo, &d);
    } else if (m->be == &ml_backend_none && m->why_none[0]) {
        ml_warnf(_("no GPU to sample (%s); running the command anyway"), m->why_none);
    } else if (m->be == &ml_backend_none) {
        /* --backend none: asked for, nothing to say. */
    } else if (m->n_dev) {
        ml_stderr_printf(_("memledger watch: %s (%s): %u GPU%s, every %llu ms\n"), m->be->name,
                         m->be->describe(m->state), m->n_dev, m->n_dev == 1 ? "" : "s",
                         (unsigned long long)(o->interval_ns / 1000000u));
        if (m->n_dev_found > m->n_dev)
            ml_warnf(_("%u GPUs found, the first %u sampled"), m->n_dev_found, m->n_dev);
    } else {
        ml_warnf(_("%s: no GPU found; running the command anyway"), m->be->name);
    }
}

int cmd_watch(int argc, char **argv)
{
    struct watch_opts o;
    memset(&o, 0, sizeof(o));
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return ML_EXIT_OK;
    if (rc != ML_EXIT_OK)
        return rc;

    static struct sink s;
    memset(&s, 0, sizeof(s));
    ml_incident_init(&s.inc);
    ml_oom_scanner_init(&s.scan, &s.inc);
    ml_oom_scan_begin(&s.scan);
    static struct ml_out tl, svg;
    if (!open_outputs(&o, &tl, &svg))
        return ML_EXIT_USAGE;
    s.timeline = o.out ? &tl : NULL;

    static struct ml_monitor m;
    open_monitor(&o, &m);

    struct ml_diag d;
    static struct ml_watch w;
    static struct ml_series series[ML_MON_MAX_DEVICES];
    struct ml_watch_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.argv = o.argv;
    cfg.interval_ns = o.interval_ns;
    cfg.tee_stderr = !o.no_tee;
    cfg.proc_root = "/proc";
    cfg.clock = ml_clock_monotonic();
    cfg.hooks.ctx = &s;
    cfg.hooks.record = on_record;
    cfg.hooks.stderr_bytes = on_stderr;
    struct ml_child_exit ex;
    ml_diag_init(&d);
    /* Our own stderr lines and the command's share fd 2: nothing of ours may sit in a buffer. */
    fflush(stderr);
    enum ml_status st = ml_watch_run(&cfg, &m, &w, series, &ex, &d);
    ml_oom_scan_end(&s.scan);
    oom_scan_record(&s, ex.t_end_ns);

    int code;
    if (!ex.started) {
        if (ex.spawn_errno == ENOENT) {
            ml_errorf(_("%s: command not found"), o.argv[0]);
            code = EXIT_NOT_FOUND;
        } else if (ex.spawn_errno) {
            ml_errorf(_("%s: cannot run it: %s"), o.argv[0], strerror(ex.spawn_errno));
            code = EXIT_CANNOT_RUN;
        } else {
            ml_report(&d);
            code = EXIT_WATCH_FAILED;
        }
    } else {
        summary_record(&s, &w, &ex);
        struct ml_buf out;
        ml_buf_init(&out, 0);
        struct ml_watch_report rep = {
            o.argv, ex.signaled ? strsignal(ex.code) : NULL, m.n_dev, &w, &ex, &s.inc, s.ev_t_ns, o.out, o.svg};
        ml_watch_report(&out, &rep);
        ml_stderr_printf("%s", out.buf);
        ml_buf_release(&out);
        if (st != ML_OK)
            ml_report(&d);
        code = ex.signaled ? 128 + ex.code : ex.code;
        if (st != ML_OK && code == 0)
            code = EXIT_WATCH_FAILED;
    }
    if (svg.h >= 0) {
        if (ex.started)
            (void)write_svg(&svg, &w, series, o.argv);
        else
            ml_out_abort(&svg);
    }
    if (tl.h >= 0 && s.timeline_failed)
        ml_out_abort(&tl); /* in place, with what was written; the failure was said */
    else if (tl.h >= 0)
        (void)ml_out_commit(&tl);
    ml_monitor_close(&m);
    return code;
}
