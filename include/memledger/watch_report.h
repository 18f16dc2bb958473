/*
 * watch_report.h - what memledger watch prints when the command ends, and the summary and
 * out-of-memory records of its timeline (lib/render/watch_report.c; docs/cli/watch.md).
 *
 * Structs in, bytes out, as the other reports (report.h); apart from them because it reads the
 * monitor's structs and names (monitor.h), which the core does not link.
 */
#ifndef ML_WATCH_REPORT_H
#define ML_WATCH_REPORT_H

#include <stdint.h>

#include "memledger/buf.h"
#include "memledger/monitor.h"
#include "memledger/oom.h"

/* A finished watch. */
struct ml_watch_report {
    char *const *argv;       /* the command */
    const char *signal_name; /* strsignal(ex->code) when a signal killed it */
    uint32_t n_dev;          /* GPUs sampled (0: no backend, or no GPU) */
    const struct ml_watch *w;
    const struct ml_child_exit *ex;
    const struct ml_incident *inc; /* the OOM scan of the command's stderr */
    const uint64_t *ev_t_ns;       /* when each of inc's events was first seen */
    const char *out, *svg;         /* --out and --svg, NULL when not given */
};

/* How it ended, per GPU the peak, the other processes, the first out-of-memory error. */
void ml_watch_report(struct ml_buf *out, const struct ml_watch_report *r);

/* 'the command' as the report and the plot's title quote it (cut after 80 bytes). */
void ml_watch_command_text(struct ml_buf *b, char *const *argv);

/* The timeline's {"type":"summary",...} and {"type":"oom",...} records, each one JSON line. */
void ml_watch_summary_line(struct ml_buf *b, const struct ml_watch *w, const struct ml_child_exit *ex,
                           uint64_t oom_events);
void ml_watch_oom_line(struct ml_buf *b, const struct ml_oom_event *e, uint64_t t_ns);

#endif /* ML_WATCH_REPORT_H */
