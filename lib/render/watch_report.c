/*
 * watch_report.c - what memledger watch prints at the end (stderr) and the summary and
 * out-of-memory records of its timeline (docs/cli/watch.md). Structs in, bytes out; the sampling,
 * the files and the child process stay in src/cmd_watch.c and lib/monitor.
 */
#include "memledger/report.h"

#include <stdio.h>
#include <string.h>

#include "memledger/monitor.h"
#include "memledger/oom.h"
#include "memledger/render.h"
#include "memledger/units.h"
#include "i18n.h"

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

void ml_watch_command_text(struct ml_buf *b, char *const *argv)
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

/* Per GPU: the total, the baseline, the peak and when, the command's own peak, the source. */
static void device_table(struct ml_buf *out, const struct ml_watch *w)
{
    struct ml_buf b;
    ml_buf_init(&b, 1024);
    struct ml_table t;
    ml_table_init(&t, 8);
    for (int k = 2; k < 7; k++)
        t.right[k] = true;
    const char *hdr[8] = {_("GPU"),  _("name"), _("total"),   _("baseline"),
                          _("peak"), _("at"),   _("command"), _("source")};
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
        const char *src = wd->has_peak       ? ml_mem_source_name(wd->peak.source)
                          : wd->has_baseline ? ml_mem_source_name(wd->baseline.source)
                                             : "-";
        const char *row[8] = {idx, wd->info.name[0] ? wd->info.name : "?", total, base, peak, at, tree, src};
        ml_table_row(&t, row);
    }
    (void)ml_table_render(&t, out, 2);
    ml_table_release(&t);
    ml_buf_adds(out, _("  peak: the largest 'used' of the device; command: the largest sum over the command's "
                       "own processes\n"));
    ml_buf_release(&b);
}

/* Other processes holding memory on the same GPUs (the "zombie" check of the seed handbook),
 * then the readings that failed. */
static void other_processes(struct ml_buf *out, const struct ml_watch *w)
{
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

/* The first out-of-memory error the command printed. */
static void first_oom(struct ml_buf *out, const struct ml_incident *inc, const uint64_t *ev_t_ns)
{
    if (!inc->n_events)
        return;
    const struct ml_oom_event *e = &inc->ev[0];
    ml_buf_addf(out, _("out of memory at "));
    secs(out, ev_t_ns[0]);
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
    if (inc->n_events_seen > 1)
        ml_buf_addf(out,
                    _("  and %llu more out-of-memory events; 'memledger diagnose' on the saved log explains "
                      "them\n"),
                    (unsigned long long)(inc->n_events_seen - 1));
    else
        ml_buf_adds(out, _("  'memledger diagnose' on the saved log gives the cause and the fixes\n"));
}

void ml_watch_report(struct ml_buf *out, const struct ml_watch_report *r)
{
    const struct ml_watch *w = r->w;
    const struct ml_child_exit *ex = r->ex;
    struct ml_buf b;
    ml_buf_init(&b, 1024);
    ml_watch_command_text(&b, r->argv);
    if (ex->signaled)
        ml_buf_addf(out, _("memledger watch: %s was killed by signal %d (%s) after "), b.buf, ex->code, r->signal_name);
    else
        ml_buf_addf(out, _("memledger watch: %s exited with status %d after "), b.buf, ex->code);
    secs(out, ex->t_end_ns);
    if (r->n_dev)
        ml_buf_addf(out, _(", %llu samples"), (unsigned long long)w->n_samples);
    ml_buf_adds(out, "\n");
    if (ex->forwarded_signal)
        ml_buf_addf(out, _("  (memledger forwarded signal %d to it)\n"), ex->forwarded_signal);
    if (r->n_dev) {
        device_table(out, w);
        other_processes(out, w);
    }
    first_oom(out, r->inc, r->ev_t_ns);
    if (r->out || r->svg) {
        ml_buf_adds(out, "  ");
        if (r->out)
            ml_buf_addf(out, _("timeline: %s%s"), r->out, r->svg ? "; " : "\n");
        if (r->svg)
            ml_buf_addf(out, _("plot: %s\n"), r->svg);
    }
    ml_buf_release(&b);
}

void ml_watch_summary_line(struct ml_buf *b, const struct ml_watch *w, const struct ml_child_exit *ex,
                           uint64_t oom_events)
{
    ml_buf_addf(b, "{\"type\":\"summary\",\"samples\":%llu,\"duration_ms\":%llu,\"%s\":%d,\"oom_events\":%u,\"gpus\":[",
                (unsigned long long)w->n_samples, (unsigned long long)(ex->t_end_ns / 1000000u),
                ex->signaled ? "signal" : "status", ex->code, (uint32_t)oom_events);
    for (uint32_t d = 0; d < w->n_dev; d++) {
        const struct ml_watch_dev *wd = &w->dev[d];
        ml_buf_addf(b, "%s{\"gpu\":%u", d ? "," : "", d);
        if (wd->has_baseline && (wd->baseline.valid & ML_MEM_USED_OK))
            ml_buf_addf(b, ",\"baseline_bytes\":%llu", (unsigned long long)wd->baseline.used_bytes);
        if (wd->has_peak)
            ml_buf_addf(b, ",\"peak_bytes\":%llu,\"peak_t_ms\":%llu,\"source\":\"%s\"",
                        (unsigned long long)wd->peak.used_bytes, (unsigned long long)(wd->peak_t_ns / 1000000u),
                        ml_mem_source_name(wd->peak.source));
        if (wd->procs_ok)
            ml_buf_addf(b, ",\"tree_peak_bytes\":%llu,\"tree_peak_t_ms\":%llu", (unsigned long long)wd->tree_peak_bytes,
                        (unsigned long long)(wd->tree_peak_t_ns / 1000000u));
        ml_buf_addf(b, ",\"errors\":%u}", wd->n_errors);
    }
    ml_buf_adds(b, "]}\n");
}

void ml_watch_oom_line(struct ml_buf *b, const struct ml_oom_event *e, uint64_t t_ns)
{
    ml_buf_addf(b, "{\"type\":\"oom\",\"t_ms\":%llu,\"stderr_line\":%llu,\"kind\":\"%s\",\"device\":\"%s\"",
                (unsigned long long)(t_ns / 1000000u), (unsigned long long)e->line, ml_oom_kind_name(e->kind),
                ml_oom_device_name(e->device));
    if (e->gpu >= 0)
        ml_buf_addf(b, ",\"gpu\":%d", (int)e->gpu);
    if (e->has & ML_OOM_F_REQUESTED)
        ml_buf_addf(b, ",\"requested_bytes\":%llu", (unsigned long long)e->requested);
    if (e->has & ML_OOM_F_TOTAL)
        ml_buf_addf(b, ",\"total_bytes\":%llu", (unsigned long long)e->total);
    if (e->has & ML_OOM_F_FREE)
        ml_buf_addf(b, ",\"free_bytes\":%llu", (unsigned long long)e->free);
    if (e->has & ML_OOM_F_ALLOCATED)
        ml_buf_addf(b, ",\"allocated_bytes\":%llu", (unsigned long long)e->allocated);
    ml_buf_adds(b, ",\"text\":");
    ml_jsonl_str(b, e->text, strlen(e->text));
    ml_buf_adds(b, "}\n");
}
