/*
 * cmd_watch.c - memledger watch: run a command, sample real GPU memory while it runs, and report
 * the peaks, the other processes on the same GPUs and the OOM, if any.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memledger/monitor.h"
#include "memledger/oom.h"
#include "memledger/render.h"
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
    int timeline_fd;          /* -1 without --out */
    const char *timeline_path;
    bool timeline_failed;     /* a write failed; warned once */
    struct ml_oom_scanner scan;   /* the diagnose scanner over the command's stderr */
    struct ml_incident inc;       /* what it found */
    uint32_t n_recorded;          /* events already written to the timeline */
    uint64_t ev_t_ns[ML_OOM_MAX_EVENTS]; /* when each stored event was first seen */
};

/* ---- option parsing ---------------------------------------------------------------------- */

/* "200ms", "1s", "0.5s", "2m", "1h", "250" (milliseconds). */
static bool parse_duration(const char *s, uint64_t *ns)
{
    uint64_t whole = 0, frac = 0, frac_div = 1;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > 100000000u)
            return false;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (frac_div < 1000000000u) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                frac_div *= 10;
            }
        }
    }
    uint64_t unit;
    if (!strcmp(p, "ms") || !*p)
        unit = 1000000u;
    else if (!strcmp(p, "s"))
        unit = 1000000000u;
    else if (!strcmp(p, "m") || !strcmp(p, "min"))
        unit = 60000000000u;
    else if (!strcmp(p, "h"))
        unit = 3600000000000u;
    else
        return false;
    *ns = whole * unit + frac * unit / frac_div;
    return true;
}

static int parse_args(int argc, char **argv, struct watch_opts *o)
{
    static const struct option longopts[] = {
        {"interval", required_argument, NULL, O_INTERVAL}, {"out", required_argument, NULL, O_OUT},
        {"svg", required_argument, NULL, O_SVG},           {"force", no_argument, NULL, O_FORCE},
        {"backend", required_argument, NULL, O_BACKEND},   {"backend-lib", required_argument, NULL, O_BACKEND_LIB},
        {"no-tee", no_argument, NULL, O_NO_TEE},           {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    o->interval_ns = 200000000u;
    o->backend = "auto";
    int c;
    /* '+': stop at the command; its own options are never ours (trap 11). */
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case O_INTERVAL:
            if (!parse_duration(optarg, &o->interval_ns))
                return ml_usage_error("watch", _("--interval: '%s' is not a duration such as 200ms or 1s"), optarg);
            if (o->interval_ns < 10000000u || o->interval_ns > 3600000000000u)
                return ml_usage_error("watch", _("--interval %s is out of range [10ms, 1h]"), optarg);
            break;
        case O_OUT: o->out = optarg; break;
        case O_SVG: o->svg = optarg; break;
        case O_FORCE: o->force = true; break;
        case O_BACKEND:
            if (strcmp(optarg, "auto") && !ml_backend_find(optarg))
                return ml_usage_error("watch", _("--backend: '%s' is not one of auto, nvml, rocm-smi, none"), optarg);
            o->backend = optarg;
            break;
        case O_BACKEND_LIB: o->backend_lib = optarg; break;
        case O_NO_TEE: o->no_tee = true; break;
        case 'h':
            fputs(_(cmd_watch_usage), stdout);
            return -1;
        default:
            return ml_usage_error("watch", _("unknown or incomplete option '%s'"), argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return ml_usage_error("watch", "%s", _("missing the command to run (memledger watch [options] -- COMMAND)"));
    if (argv[optind][0] == '\0')
        return ml_usage_error("watch", "%s", _("the command is an empty string"));
    o->argv = argv + optind;
    if (o->backend_lib && (!strcmp(o->backend, "auto") || !strcmp(o->backend, "none")))
        return ml_usage_error("watch", "%s", _("--backend-lib needs --backend nvml or rocm-smi"));
    if (o->out && o->svg && !strcmp(o->out, o->svg))
        return ml_usage_error("watch", "%s", _("--out and --svg name the same file"));
    return ML_EXIT_OK;
}

/* ---- output files ------------------------------------------------------------------------- */

/* The timeline is written to its own name as the run goes (a killed watch leaves a usable
 * file), so it is opened before the command starts: an unwritable path fails early. */
static int open_timeline(const char *path, bool force)
{
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        if (errno == EEXIST)
            ml_errorf(_("%s: exists; use --force to overwrite it"), path);
        else
            ml_errorf(_("%s: cannot write the timeline: %s"), path, strerror(errno));
    }
    return fd;
}

/* The plot is written at the end to a temporary name and renamed; the temporary file is made
 * now, so that an unwritable directory fails before the command starts. */
static int open_svg_tmp(const char *path, bool force, char *tmp, size_t tmp_len)
{
    struct stat st;
    if (!force && lstat(path, &st) == 0) {
        ml_errorf(_("%s: exists; use --force to overwrite it"), path);
        return -1;
    }
    (void)snprintf(tmp, tmp_len, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        ml_errorf(_("%s: cannot write the plot: %s"), path, strerror(errno));
        return -1;
    }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

static void timeline_write(struct sink *s, const char *line, size_t len)
{
    if (s->timeline_fd < 0 || s->timeline_failed)
        return;
    if (!ml_write_all(s->timeline_fd, line, len)) {
        s->timeline_failed = true;
        ml_warnf(_("%s: cannot write the timeline any more (%s); the command goes on"), s->timeline_path,
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
        const struct ml_oom_event *e = &s->inc.ev[s->n_recorded];
        s->ev_t_ns[s->n_recorded] = t_ns;
        struct ml_buf b;
        ml_buf_init(&b, 16384);
        ml_buf_addf(&b, "{\"type\":\"oom\",\"t_ms\":%llu,\"stderr_line\":%llu,\"kind\":\"%s\",\"device\":\"%s\"",
                    (unsigned long long)(t_ns / 1000000u), (unsigned long long)e->line, ml_oom_kind_name(e->kind),
                    ml_oom_device_name(e->device));
        if (e->gpu >= 0)
            ml_buf_addf(&b, ",\"gpu\":%d", (int)e->gpu);
        if (e->has & ML_OOM_F_REQUESTED)
            ml_buf_addf(&b, ",\"requested_bytes\":%llu", (unsigned long long)e->requested);
        if (e->has & ML_OOM_F_TOTAL)
            ml_buf_addf(&b, ",\"total_bytes\":%llu", (unsigned long long)e->total);
        if (e->has & ML_OOM_F_FREE)
            ml_buf_addf(&b, ",\"free_bytes\":%llu", (unsigned long long)e->free);
        if (e->has & ML_OOM_F_ALLOCATED)
            ml_buf_addf(&b, ",\"allocated_bytes\":%llu", (unsigned long long)e->allocated);
        ml_buf_adds(&b, ",\"text\":");
        ml_jsonl_str(&b, e->text, strlen(e->text));
        ml_buf_adds(&b, "}\n");
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
    (void)ml_write_all(STDERR_FILENO, data, n);
    ml_oom_scan(&s->scan, data, n);
    oom_scan_record(s, t_ns);
}

/* ---- the report ---------------------------------------------------------------------------- */

static void secs(struct ml_buf *b, uint64_t ns)
{
    uint64_t ds = (ns + 50000000u) / 100000000u;
    ml_buf_addf(b, "%llu.%llu s", (unsigned long long)(ds / 10), (unsigned long long)(ds % 10));
}

/* The bytes a process held in a list, "-" when it is not in the list, "?" when unknown. */
static void proc_cell(const struct ml_watch_proc *list, uint32_t n, uint32_t pid, char *out, size_t len)
{
    for (uint32_t k = 0; k < n; k++) {
        if (list[k].pid != pid)
            continue;
        if (list[k].bytes_ok)
            ml_fmt_gib_s(out, len, list[k].bytes);
        else
            (void)snprintf(out, len, "?");
        return;
    }
}

static void command_text(struct ml_buf *b, char *const *argv)
{
    ml_buf_adds(b, "'");
    for (size_t i = 0; argv[i]; i++) {
        if (b->len > 80) {
            ml_buf_adds(b, " ...");
            break;
        }
        ml_buf_addf(b, "%s%s", i ? " " : "", argv[i]);
    }
    ml_buf_adds(b, "'");
}

static void report(struct ml_buf *out, const struct watch_opts *o, const struct ml_monitor *m,
                   const struct ml_watch *w, const struct ml_child_exit *ex, const struct sink *s)
{
    struct ml_buf b;
    ml_buf_init(&b, 1024);
    command_text(&b, o->argv);
    if (ex->signaled)
        ml_buf_addf(out, _("memledger watch: %s was killed by signal %d (%s) after "), b.buf, ex->code,
                    strsignal(ex->code));
    else
        ml_buf_addf(out, _("memledger watch: %s exited with status %d after "), b.buf, ex->code);
    secs(out, ex->t_end_ns);
    if (m->n_dev)
        ml_buf_addf(out, _(", %llu samples"), (unsigned long long)w->n_samples);
    ml_buf_adds(out, "\n");
    if (ex->forwarded_signal)
        ml_buf_addf(out, _("  (memledger forwarded signal %d to it)\n"), ex->forwarded_signal);

    if (m->n_dev) {
        struct ml_table t;
        ml_table_init(&t, 8);
        for (int k = 2; k < 7; k++)
            t.right[k] = true;
        const char *hdr[8] = {_("GPU"), _("name"), _("total"), _("baseline"), _("peak"), _("at"), _("command"),
                              _("source")};
        ml_table_row(&t, hdr);
        for (uint32_t d = 0; d < w->n_dev; d++) {
            const struct ml_watch_dev *wd = &w->dev[d];
            char idx[16], total[32] = "?", base[32] = "?", peak[32] = "?", at[32] = "", tree[32] = "n/a";
            (void)snprintf(idx, sizeof(idx), "%u", d);
            if (wd->info.total_bytes)
                ml_fmt_gib_s(total, sizeof(total), wd->info.total_bytes);
            if (wd->has_baseline && (wd->baseline.valid & ML_MEM_USED_OK))
                ml_fmt_gib_s(base, sizeof(base), wd->baseline.used_bytes);
            if (wd->has_peak) {
                ml_fmt_gib_s(peak, sizeof(peak), wd->peak.used_bytes);
                ml_buf_reset(&b);
                secs(&b, wd->peak_t_ns);
                (void)snprintf(at, sizeof(at), "%s", b.buf);
            }
            if (wd->procs_ok)
                ml_fmt_gib_s(tree, sizeof(tree), wd->tree_peak_bytes);
            const char *src = wd->has_peak ? ml_mem_source_name(wd->peak.source)
                              : wd->has_baseline ? ml_mem_source_name(wd->baseline.source) : "-";
            const char *row[8] = {idx, wd->info.name[0] ? wd->info.name : "?", total, base, peak, at, tree, src};
            ml_table_row(&t, row);
        }
        (void)ml_table_render(&t, out, 2);
        ml_table_release(&t);
        ml_buf_adds(out, _("  peak: the largest 'used' of the device; command: the largest sum over the command's "
                           "own processes\n"));

        /* Other processes on the same GPUs: the "zombie" check of the seed handbook. */
        bool any = false;
        struct ml_table p;
        ml_table_init(&p, 5);
        p.right[1] = p.right[3] = p.right[4] = true;
        const char *ph[5] = {_("GPU"), _("pid"), _("name"), _("at start"), _("at peak")};
        ml_table_row(&p, ph);
        for (uint32_t d = 0; d < w->n_dev; d++) {
            const struct ml_watch_dev *wd = &w->dev[d];
            /* The union of the processes at the start and at the peak. */
            struct ml_watch_proc all[2 * ML_MON_MAX_OTHERS];
            uint32_t n = 0;
            for (uint32_t i = 0; i < wd->n_others_start; i++)
                all[n++] = wd->others_start[i];
            for (uint32_t i = 0; i < wd->n_others_peak; i++) {
                bool seen = false;
                for (uint32_t k = 0; k < n; k++)
                    seen = seen || all[k].pid == wd->others_peak[i].pid;
                if (!seen)
                    all[n++] = wd->others_peak[i];
            }
            for (uint32_t i = 0; i < n; i++) {
                char idx[16], pid[16], a[32] = "-", z[32] = "-";
                (void)snprintf(idx, sizeof(idx), "%u", d);
                (void)snprintf(pid, sizeof(pid), "%u", all[i].pid);
                proc_cell(wd->others_start, wd->n_others_start, all[i].pid, a, sizeof(a));
                proc_cell(wd->others_peak, wd->n_others_peak, all[i].pid, z, sizeof(z));
                const char *row[5] = {idx, pid, all[i].name[0] ? all[i].name : _("(gone)"), a, z};
                ml_table_row(&p, row);
                any = true;
            }
        }
        if (any) {
            ml_buf_adds(out, _("other processes holding memory on these GPUs:\n"));
            (void)ml_table_render(&p, out, 2);
        } else {
            ml_buf_adds(out, _("no other process held memory on these GPUs"));
            bool procs = false;
            for (uint32_t d = 0; d < w->n_dev; d++)
                procs = procs || w->dev[d].procs_ok;
            ml_buf_adds(out, procs ? "\n" : _(" (unknown: the driver gave no process list)\n"));
        }
        ml_table_release(&p);
        for (uint32_t d = 0; d < w->n_dev; d++)
            if (w->dev[d].n_errors)
                ml_buf_addf(out, _("GPU %u: %u readings failed (first: %s)\n"), d, w->dev[d].n_errors,
                            w->dev[d].first_error);
    }
    if (s->inc.n_events) {
        const struct ml_oom_event *e = &s->inc.ev[0];
        ml_buf_addf(out, _("out of memory at "));
        secs(out, s->ev_t_ns[0]);
        ml_buf_addf(out, _(" (stderr line %llu): %s %s"), (unsigned long long)e->line, ml_oom_device_name(e->device),
                    ml_oom_kind_name(e->kind));
        if (e->has & ML_OOM_F_REQUESTED) {
            ml_buf_adds(out, _(", tried to allocate "));
            ml_fmt_bytes(out, e->requested);
        }
        if ((e->has & ML_OOM_F_FREE) && (e->has & ML_OOM_F_TOTAL)) {
            ml_buf_adds(out, _(" with "));
            ml_fmt_bytes(out, e->free);
            ml_buf_adds(out, _(" free of "));
            ml_fmt_bytes(out, e->total);
        }
        if (e->phase != ML_OPH_UNKNOWN)
            ml_buf_addf(out, _(", in %s"), ml_oom_phase_name(e->phase));
        ml_buf_addf(out, "\n  %s\n", e->text);
        if (s->inc.n_events_seen > 1)
            ml_buf_addf(out, _("  and %llu more out-of-memory events; 'memledger diagnose' on the saved log explains "
                               "them\n"),
                        (unsigned long long)(s->inc.n_events_seen - 1));
        else
            ml_buf_adds(out, _("  'memledger diagnose' on the saved log gives the cause and the fixes\n"));
    }
    if (o->out || o->svg) {
        ml_buf_adds(out, "  ");
        if (o->out)
            ml_buf_addf(out, _("timeline: %s%s"), o->out, o->svg ? "; " : "\n");
        if (o->svg)
            ml_buf_addf(out, _("plot: %s\n"), o->svg);
    }
    ml_buf_release(&b);
}

static void summary_record(struct sink *s, const struct ml_watch *w, const struct ml_child_exit *ex)
{
    struct ml_buf b;
    ml_buf_init(&b, 1 << 20);
    ml_buf_addf(&b, "{\"type\":\"summary\",\"samples\":%llu,\"duration_ms\":%llu,\"%s\":%d,\"oom_events\":%u,\"gpus\":[",
                (unsigned long long)w->n_samples, (unsigned long long)(ex->t_end_ns / 1000000u),
                ex->signaled ? "signal" : "status", ex->code, (uint32_t)s->inc.n_events_seen);
    for (uint32_t d = 0; d < w->n_dev; d++) {
        const struct ml_watch_dev *wd = &w->dev[d];
        ml_buf_addf(&b, "%s{\"gpu\":%u", d ? "," : "", d);
        if (wd->has_baseline && (wd->baseline.valid & ML_MEM_USED_OK))
            ml_buf_addf(&b, ",\"baseline_bytes\":%llu", (unsigned long long)wd->baseline.used_bytes);
        if (wd->has_peak)
            ml_buf_addf(&b, ",\"peak_bytes\":%llu,\"peak_t_ms\":%llu,\"source\":\"%s\"",
                        (unsigned long long)wd->peak.used_bytes, (unsigned long long)(wd->peak_t_ns / 1000000u),
                        ml_mem_source_name(wd->peak.source));
        if (wd->procs_ok)
            ml_buf_addf(&b, ",\"tree_peak_bytes\":%llu,\"tree_peak_t_ms\":%llu",
                        (unsigned long long)wd->tree_peak_bytes, (unsigned long long)(wd->tree_peak_t_ns / 1000000u));
        ml_buf_addf(&b, ",\"errors\":%u}", wd->n_errors);
    }
    ml_buf_adds(&b, "]}\n");
    timeline_write(s, b.buf, b.len);
    ml_buf_release(&b);
}

static bool write_svg(const char *path, const char *tmp, int fd, const struct ml_watch *w,
                      const struct ml_series *series, char *const *argv)
{
    struct ml_buf title, svg;
    ml_buf_init(&title, 512);
    ml_buf_init(&svg, 0);
    ml_buf_adds(&title, "memledger watch ");
    command_text(&title, argv);
    bool ok = ml_watch_svg(w, series, title.buf, &svg) == ML_OK && ml_write_all(fd, svg.buf, svg.len);
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) != 0)
        ok = false;
    if (!ok) {
        ml_warnf(_("%s: cannot write the plot: %s"), path, strerror(errno));
        (void)unlink(tmp);
    }
    ml_buf_release(&title);
    ml_buf_release(&svg);
    return ok;
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
    s.timeline_fd = -1;
    s.timeline_path = o.out;
    ml_incident_init(&s.inc);
    ml_oom_scanner_init(&s.scan, &s.inc);
    ml_oom_scan_begin(&s.scan);
    if (o.out && (s.timeline_fd = open_timeline(o.out, o.force)) < 0)
        return ML_EXIT_USAGE;
    char svg_tmp[1100] = "";
    int svg_fd = -1;
    if (o.svg && (svg_fd = open_svg_tmp(o.svg, o.force, svg_tmp, sizeof(svg_tmp))) < 0) {
        if (s.timeline_fd >= 0) {
            close(s.timeline_fd);
            if (!o.force)
                (void)unlink(o.out);
        }
        return ML_EXIT_USAGE;
    }

    /* The backend: library paths from the environment, here in the CLI. */
    struct ml_backend_opts bo;
    memset(&bo, 0, sizeof(bo));
    bo.nvml_lib = getenv("ML_NVML_LIBRARY");
    bo.rsmi_lib = getenv("ML_RSMI_LIBRARY");
    if (o.backend_lib) {
        if (!strcmp(o.backend, "nvml"))
            bo.nvml_lib = o.backend_lib;
        else
            bo.rsmi_lib = o.backend_lib;
    }
    bo.rsmi_dirs[0] = getenv("ROCM_SMI_LIB_PATH");
    char rocm_lib[1024] = "";
    const char *rocm = getenv("ROCM_PATH");
    if (rocm && rocm[0]) {
        (void)snprintf(rocm_lib, sizeof(rocm_lib), "%s/lib", rocm);
        bo.rsmi_dirs[1] = rocm_lib;
    }
    static struct ml_monitor m;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_monitor_open(&m, o.backend, &bo, &d) != ML_OK) {
        /* A named backend that fails does not stop the run: say why, once, and go on. */
        ml_warnf(_("%s backend unavailable: %s; running the command without GPU sampling"), o.backend, d.msg);
        ml_diag_init(&d);
        (void)ml_monitor_open(&m, "none", &bo, &d);
    } else if (m.be == &ml_backend_none && m.why_none[0]) {
        ml_warnf(_("no GPU to sample (%s); running the command anyway"), m.why_none);
    } else if (m.be == &ml_backend_none) {
        /* --backend none: asked for, nothing to say. */
    } else if (m.n_dev) {
        fprintf(stderr, _("memledger watch: %s (%s): %u GPU%s, every %llu ms\n"), m.be->name,
                m.be->describe(m.state), m.n_dev, m.n_dev == 1 ? "" : "s",
                (unsigned long long)(o.interval_ns / 1000000u));
        if (m.n_dev_found > m.n_dev)
            ml_warnf(_("%u GPUs found, the first %u sampled"), m.n_dev_found, m.n_dev);
    } else {
        ml_warnf(_("%s: no GPU found; running the command anyway"), m.be->name);
    }

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
        report(&out, &o, &m, &w, &ex, &s);
        fputs(out.buf, stderr);
        ml_buf_release(&out);
        if (st != ML_OK)
            ml_report(&d);
        code = ex.signaled ? 128 + ex.code : ex.code;
        if (st != ML_OK && code == 0)
            code = EXIT_WATCH_FAILED;
    }
    if (svg_fd >= 0) {
        if (ex.started)
            (void)write_svg(o.svg, svg_tmp, svg_fd, &w, series, o.argv);
        else {
            close(svg_fd);
            (void)unlink(svg_tmp);
        }
    }
    if (s.timeline_fd >= 0)
        close(s.timeline_fd);
    ml_monitor_close(&m);
    return code;
}
