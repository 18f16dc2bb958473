/*
 * fit_text.c - memledger fit's plans as text (fit.h): the training plans and the serving plans,
 * each change as "where key: from -> to". Bytes out, nothing else.
 */
#include "memledger/fit.h"

#include <stdarg.h>
#include <stdio.h>

#include "memledger/units.h"
#include "i18n.h"

/* The output and its first failure. */
struct txt {
    struct ml_buf *b;
    enum ml_status st;
};

static void addf(struct txt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(struct txt *t, const char *fmt, ...)
{
    if (t->st != ML_OK)
        return;
    va_list ap;
    va_start(ap, fmt);
    t->st = ml_buf_vaddf(t->b, fmt, ap);
    va_end(ap);
}

static void print_changes(struct txt *out, const struct ml_change *ch, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        addf(out, "     %-9s %s: %s -> %s\n", ml_where_name(ch[i].where), ch[i].key, ch[i].from, ch[i].to);
}

enum ml_status ml_render_fit_text(struct ml_buf *b, const struct ml_fit_view *v, const struct ml_fit_result *r)
{
    struct txt t = {b, ML_OK}, *out = &t;
    char a[ML_FMT_MAX], g[ML_FMT_MAX], c[ML_FMT_MAX];
    const struct ml_cluster *cl = v->cluster;
    uint32_t gpus = cl->gpus_per_node * cl->nodes;
    if (r->point)
        addf(out, _("%s on %u x %s: the estimate is %s per GPU"), v->model, gpus, cl->gpu.name,
                    ml_fmt_gib_s(a, sizeof(a), r->base_device));
    else
        addf(out, _("%s on %u x %s: %s per GPU at the high end of the 80%% interval (estimate %s)"), v->model, gpus,
                    cl->gpu.name, ml_fmt_gib_s(a, sizeof(a), r->base_device), ml_fmt_gib_s(c, sizeof(c), r->base_estimate));
    addf(out, _("; the target is %s (%u.%u%% headroom of "), ml_fmt_gib_s(g, sizeof(g), r->target_bytes),
                v->headroom_permille / 10, v->headroom_permille % 10);
    addf(out, "%s)\n", ml_fmt_gib_s(c, sizeof(c), cl->gpu.capacity_bytes));
    if (r->base_fits)
        addf(out, "%s", _("it already fits the target; plans below leave more room\n"));
    addf(out, _("%llu ledgers evaluated\n\n"), (unsigned long long)r->evaluated);
    for (uint32_t i = 0; i < r->n; i++) {
        const struct ml_plan *p = &r->plans[i];
        addf(out, _("%u. %s — %s per GPU"), i + 1, p->why, ml_fmt_gib_s(a, sizeof(a), p->device_used));
        if (!r->point)
            addf(out, _(" at the high end (estimate %s)"), ml_fmt_gib_s(c, sizeof(c), p->device_estimate));
        addf(out, _(", headroom %s, ~%u.%u%% slower%s%s%s\n"), ml_fmt_gib_s(g, sizeof(g), p->headroom),
                    p->cost_permille / 10, p->cost_permille % 10, p->changes_data ? _(", changes the data") : "",
                    p->changes_method ? _(", changes the method") : "", p->needs_hardware ? _(", needs more GPUs") : "");
        print_changes(out, p->ch, p->n);
    }
    if (!r->n) {
        uint64_t short_by = r->closest.device_used > r->target_bytes ? r->closest.device_used - r->target_bytes : 0;
        addf(out, _("no plan within %u knobs reaches the target"), ML_FIT_MAX_DEPTH);
        if (r->closest.n) {
            addf(out, _("; the closest, %s, is still %s short:\n"), r->closest.why, ml_fmt_gib_s(a, sizeof(a), short_by));
            print_changes(out, r->closest.ch, r->closest.n);
        } else {
            addf(out, "\n");
        }
    }
    return t.st;
}

enum ml_status ml_render_fit_infer_text(struct ml_buf *b, const struct ml_fit_view *v, enum ml_engine engine,
                                        const struct ml_fit_infer_result *r)
{
    struct txt t = {b, ML_OK}, *out = &t;
    addf(out, _("%s on %s with %s: %s\n"), v->model, v->cluster->gpu.name, ml_engine_name(engine),
                r->base_fits ? _("starts as it is") : r->base_error[0] ? r->base_error : _("does not fit"));
    for (uint32_t i = 0; i < r->n; i++) {
        const struct ml_fit_infer_plan *p = &r->plans[i];
        addf(out, _("%u. %llu KV tokens, max_model_len %llu, concurrency %llu.%02llux%s%s\n"), i + 1,
                    (unsigned long long)p->sv.kv_tokens, (unsigned long long)p->sv.max_model_len,
                    (unsigned long long)(p->sv.max_concurrency_x100 / 100),
                    (unsigned long long)(p->sv.max_concurrency_x100 % 100),
                    p->changes_method ? _(", changes the weights") : "", p->needs_hardware ? _(", needs more GPUs") : "");
        print_changes(out, p->ch, p->n);
    }
    if (!r->n)
        addf(out, "%s", _("no engine setting within reach makes it start; a larger GPU or more of them is needed\n"));
    return t.st;
}
