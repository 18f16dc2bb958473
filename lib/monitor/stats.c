/*
 * stats.c - the sampler's bookkeeping: baseline, peak per device, peak of the command's process
 * tree, other processes at the start and at the peak; the capped series for the plot. No I/O.
 */
#include "memledger/monitor.h"

#include <stdio.h>
#include <string.h>

void ml_watch_init(struct ml_watch *w, const struct ml_monitor *m)
{
    memset(w, 0, sizeof(*w));
    w->n_dev = m ? m->n_dev : 0;
    for (uint32_t i = 0; i < w->n_dev; i++)
        w->dev[i].info = m->dev[i];
}

/* Keep the processes outside the tree, largest first, at most ML_MON_MAX_OTHERS. */
static uint32_t pick_others(const struct ml_sample_proc *procs, uint32_t n, struct ml_watch_proc *out)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (procs[i].in_tree)
            continue;
        const struct ml_watch_proc *p = &procs[i].p;
        uint64_t b = p->bytes_ok ? p->bytes : 0;
        /* Insertion into a sorted list of at most ML_MON_MAX_OTHERS. */
        uint32_t at = k;
        while (at > 0 && (out[at - 1].bytes_ok ? out[at - 1].bytes : 0) < b)
            at--;
        if (at >= ML_MON_MAX_OTHERS)
            continue;
        uint32_t last = k < ML_MON_MAX_OTHERS ? k : ML_MON_MAX_OTHERS - 1;
        for (uint32_t j = last; j > at; j--)
            out[j] = out[j - 1];
        out[at] = *p;
        if (k < ML_MON_MAX_OTHERS)
            k++;
    }
    return k;
}

void ml_watch_add(struct ml_watch *w, uint32_t dev, uint64_t t_ns, bool baseline, const struct ml_mem_reading *r,
                  const struct ml_sample_proc *procs, uint32_t n_procs)
{
    if (dev >= w->n_dev)
        return;
    struct ml_watch_dev *d = &w->dev[dev];
    d->n_ok++;
    if (baseline) {
        d->has_baseline = true;
        d->baseline = *r;
        if (procs)
            d->n_others_start = pick_others(procs, n_procs, d->others_start);
    } else if ((r->valid & ML_MEM_USED_OK) && (!d->has_peak || r->used_bytes > d->peak.used_bytes)) {
        d->has_peak = true;
        d->peak = *r;
        d->peak_t_ns = t_ns;
        d->n_others_peak = procs ? pick_others(procs, n_procs, d->others_peak) : 0;
    }
    if (!procs)
        return;
    d->procs_ok = true;
    uint64_t tree = 0;
    for (uint32_t i = 0; i < n_procs; i++)
        if (procs[i].in_tree && procs[i].p.bytes_ok)
            tree += procs[i].p.bytes;
    if (tree > d->tree_peak_bytes) {
        d->tree_peak_bytes = tree;
        d->tree_peak_t_ns = t_ns;
    }
}

void ml_watch_add_error(struct ml_watch *w, uint32_t dev, const char *msg)
{
    if (dev >= w->n_dev)
        return;
    struct ml_watch_dev *d = &w->dev[dev];
    if (d->n_errors++ == 0)
        (void)snprintf(d->first_error, sizeof(d->first_error), "%s", msg);
}

void ml_series_add(struct ml_series *s, uint64_t t_ms, uint64_t used)
{
    if (s->n == ML_SERIES_MAX) {
        /* Halve the resolution; of each pair keep the larger reading (and its time). */
        uint32_t k = 0;
        for (uint32_t i = 0; i + 1 < s->n; i += 2, k++) {
            uint32_t j = s->used[i + 1] > s->used[i] ? i + 1 : i;
            s->t_ms[k] = s->t_ms[j];
            s->used[k] = s->used[j];
        }
        s->n = k;
    }
    s->t_ms[s->n] = t_ms;
    s->used[s->n] = used;
    s->n++;
}
