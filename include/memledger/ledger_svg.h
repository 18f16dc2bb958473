/*
 * ledger_svg.h - the ledger as a picture: one stacked bar per phase (pure: struct in, SVG bytes out).
 *
 * ml_ledger_svg draws a training or inference ledger: for every phase the run has (load, forward,
 * loss, backward, optimizer_step, checkpoint_save, after_save, eval; or generate / serving) a bar
 * stacked from the components live in it - first those counted in the allocated figure, then the
 * allocator's reserve, then what sits outside PyTorch's allocator - so the bar's allocated part
 * ends at the ledger's phase_allocated, its reserved part at phase_reserved and the whole bar at
 * the device figure of that phase (device_used for the peak phase). The usable capacity is a
 * dashed line, the peak phase is marked, an optional [low, high] interval of the peak is drawn
 * as a whisker beside it, and a text legend names every colour with its GiB.
 *
 * ml_diagnose_svg draws what an out-of-memory message reports (allocated, reserved, free, the
 * request, the device total) as a bar beside the ledger's bar for the matching phase.
 *
 * Plain SVG 1.1, 800 px wide: presentation attributes only (no CSS, no filters, no
 * foreignObject), an explicit font-family list and text-anchor on every text, coordinates in
 * tenths of a pixel computed with integers, so the same ledger draws the same bytes everywhere.
 * Element ids (for tests and the page): "baseline", "capacity", "bar-<phase>" groups whose rects
 * are the segments, "peak", "interval", "log-bar".
 */
#ifndef ML_LEDGER_SVG_H
#define ML_LEDGER_SVG_H

#include <stdbool.h>
#include <stdint.h>

#include "memledger/buf.h"
#include "memledger/ledger.h"
#include "memledger/status.h"

/* Width of every picture (px); the height follows from the legend. */
#define ML_SVG_WIDTH 800u

struct ml_ledger_svg_opts {
    const char *title;          /* first line (NULL: "GPU memory by phase, per GPU") */
    const char *subtitle;       /* second line (NULL: none), e.g. the model and run */
    const char *capacity_label; /* how the user named the GPU ("16G"; NULL: none) */
    bool has_interval;          /* draw [interval_low, interval_high] beside the peak bar */
    uint64_t interval_low;      /* bytes, device figure of the peak */
    uint64_t interval_high;
    uint32_t interval_permille; /* its coverage, e.g. 800 for "80 %" (0: 800) */
};

/* Fields of struct ml_svg_log that the message gave. */
enum {
    ML_SVG_LOG_ALLOCATED = 1u << 0,
    ML_SVG_LOG_RESERVED = 1u << 1,
    ML_SVG_LOG_FREE = 1u << 2,
    ML_SVG_LOG_REQUESTED = 1u << 3,
    ML_SVG_LOG_TOTAL = 1u << 4
};

/* The numbers of one out-of-memory message, in bytes. */
struct ml_svg_log {
    uint32_t has;       /* ML_SVG_LOG_* bits */
    uint64_t allocated; /* "N is allocated by PyTorch" */
    uint64_t reserved;  /* reserved by PyTorch in total (allocated + reserved-but-unallocated) */
    uint64_t free;      /* "of which N is free" */
    uint64_t requested; /* "Tried to allocate N" */
    uint64_t total;     /* "a total capacity of N" */
    const char *label;  /* where it is, e.g. "oom.log:14, GPU 1" (NULL: "the log") */
};

/* Draw ledger l (NULL opts: defaults). Errors: ML_ERR_INVALID for a ledger without an active
 * phase, ML_ERR_TOOBIG / ML_ERR_NOMEM from the buffer. */
enum ml_status ml_ledger_svg(const struct ml_ledger *l, const struct ml_ledger_svg_opts *o, struct ml_buf *out);

/* Draw the log's numbers beside ledger l's bar for phase (l may be NULL: the log's bar alone).
 * Errors: ML_ERR_INVALID when the log has no number to draw or the phase is not active. */
enum ml_status ml_diagnose_svg(const struct ml_ledger *l, enum ml_phase phase, const struct ml_svg_log *log,
                               const struct ml_ledger_svg_opts *o, struct ml_buf *out);

/* Append s as XML character data: & < > " escaped, control bytes and invalid UTF-8 dropped. */
enum ml_status ml_xml_text(struct ml_buf *b, const char *s);

#endif /* ML_LEDGER_SVG_H */
