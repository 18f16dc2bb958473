/*
 * fit_text.c - memledger fit's plans as text (fit.h): the training plans and the serving plans,
 * each change as "where key: from -> to". Bytes out, nothing else.
 */
#include "memledger/fit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memledger/render.h"
#include "memledger/units.h"
#include "i18n.h"
#include "serve_args.h"

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
    for (uint32_t i = 0; i < n; i++) {
        if (!ch[i].key[0]) {
            /* the trainer has no key for it (knobs.c): advice, not written to the file */
            const struct ml_knob *k = ml_knob_get(ch[i].knob);
            addf(out,
                 _("     %-9s %s: %s -> %s (no such setting in this framework's config: not written, change "
                   "it by hand)\n"),
                 ml_where_name(ch[i].where), k ? _(k->name) : "?", ch[i].from, ch[i].to);
            continue;
        }
        addf(out, "     %-9s %s: %s -> %s\n", ml_where_name(ch[i].where),
             ch[i].where == ML_IN_LAUNCH ? _(ch[i].key) : ch[i].key, ch[i].from, ch[i].to);
    }
}

enum ml_status ml_render_fit_text(struct ml_buf *b, const struct ml_fit_view *v, const struct ml_fit_result *r)
{
    struct txt t = {b, ML_OK}, *out = &t;
    size_t start = b->len;
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
            addf(out, _("; the closest, %s, is still %s short:\n"), r->closest.why,
                 ml_fmt_gib_s(a, sizeof(a), short_by));
            print_changes(out, r->closest.ch, r->closest.n);
        } else {
            addf(out, "\n");
        }
    }
    return t.st == ML_OK ? ml_text_fold(b, start, v->layout ? v->layout->width : 0) : t.st;
}

/* A word as a shell reads it: quoted when it holds anything but [A-Za-z0-9._/:=@%+,-]. */
static void shell_word(struct ml_buf *out, const char *w)
{
    bool plain = *w != '\0';
    for (const char *p = w; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                strchr("._/:=@%+,-", *p);
    if (plain) {
        ml_buf_adds(out, w);
        return;
    }
    ml_buf_addc(out, '\'');
    for (const char *p = w; *p; p++)
        ml_buf_adds(out, *p == '\'' ? "'\\''" : (char[]){*p, '\0'});
    ml_buf_addc(out, '\'');
}

/* A Python string literal. */
static void py_str(struct ml_buf *out, const char *s)
{
    ml_buf_addc(out, '"');
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\')
            ml_buf_addc(out, '\\');
        ml_buf_addc(out, *p);
    }
    ml_buf_addc(out, '"');
}

enum ml_status ml_render_serve_command(struct ml_buf *out, const char *model_id, const struct ml_infer *s, bool python)
{
    struct ml_serve_arg a[ML_SERVE_MAX_ARGS];
    uint32_t n = ml_serve_args(s, a);
    ml_buf_adds(out, ml_serve_program(s->engine, python));
    if (python) {
        py_str(out, model_id);
        for (uint32_t i = 0; i < n; i++) {
            ml_buf_addf(out, ", %s=", a[i].py);
            if (a[i].text)
                py_str(out, a[i].value);
            else
                ml_buf_adds(out, a[i].value);
        }
        return ml_buf_addc(out, ')');
    }
    ml_buf_addc(out, ' ');
    shell_word(out, model_id);
    for (uint32_t i = 0; i < n; i++) {
        ml_buf_addf(out, " %s ", a[i].flag);
        shell_word(out, a[i].value);
    }
    return out->len <= out->max ? ML_OK : ML_ERR_TOOBIG;
}

/* A serving plan's changes as the engine's flags ("--max-model-len 131072 -> 46080") or, with
 * python, its keywords. */
static void print_engine_changes(struct txt *out, const struct ml_change *ch, uint32_t n, enum ml_engine e, bool python)
{
    enum ml_dialect d = ml_serve_dialect(e);
    for (uint32_t i = 0; i < n; i++) {
        const struct ml_change *c = &ch[i];
        const char *flag = ml_setting_name(c->set, d);
        char py[48];
        ml_serve_py_name(c->set, d, py, sizeof(py));
        if (c->where != ML_IN_ENGINE || (!python && !flag) || (python && !py[0])) {
            /* Not a setting of this engine: as the knob table writes it. */
            addf(out, _("     %s: %s -> %s (no %s setting)\n"), c->key, c->from, c->to, ml_engine_name(e));
        } else if (!python && c->set == ML_SET_CHUNKED_PREFILL) {
            addf(out, "     %s\n", flag);
        } else {
            addf(out, "     %s%s %s -> %s\n", python ? py : flag, python ? ":" : "",
                 ml_setting_value(c->set, d, c->from), ml_setting_value(c->set, d, c->to));
        }
    }
}

enum ml_status ml_render_fit_infer_text(struct ml_buf *b, const struct ml_fit_view *v, enum ml_engine engine,
                                        const struct ml_fit_infer_result *r)
{
    struct txt t = {b, ML_OK}, *out = &t;
    size_t start = b->len;
    if (!r->base_fits && r->base_error[0])
        /* The engine's refusal in its own words (infer_ledger.c), quoted as infer prints it. */
        addf(out, _("%s on %s with %s would not start:\n  %s\n"), v->model, v->cluster->gpu.name,
             ml_engine_name(engine), r->base_error);
    else
        addf(out, _("%s on %s with %s: %s\n"), v->model, v->cluster->gpu.name, ml_engine_name(engine),
             r->base_fits ? _("starts as it is") : _("does not fit"));
    for (uint32_t i = 0; i < r->n; i++) {
        const struct ml_fit_infer_plan *p = &r->plans[i];
        addf(out, _("%u. %llu KV tokens, max_model_len %llu, concurrency %llu.%02llux%s%s\n"), i + 1,
             (unsigned long long)p->sv.kv_tokens, (unsigned long long)p->sv.max_model_len,
             (unsigned long long)(p->sv.max_concurrency_x100 / 100),
             (unsigned long long)(p->sv.max_concurrency_x100 % 100),
             p->changes_method ? _(", changes the weights") : "", p->needs_hardware ? _(", needs more GPUs") : "");
        print_engine_changes(out, p->ch, p->n, engine, v->python);
        if (t.st == ML_OK && v->model_id) {
            addf(out, "     ");
            if (t.st == ML_OK)
                t.st = ml_render_serve_command(b, v->model_id, &p->s, v->python);
            addf(out, "\n");
        }
    }
    if (!r->n)
        addf(out, "%s", _("no engine setting within reach makes it start; a larger GPU or more of them is needed\n"));
    return t.st == ML_OK ? ml_text_fold(b, start, v->layout ? v->layout->width : 0) : t.st;
}

enum ml_status ml_render_serve_script(struct ml_buf *out, const struct ml_fit_view *v,
                                      const struct ml_fit_infer_plan *p, uint32_t index)
{
    ml_buf_addf(out,
                "#!/bin/sh\n# memledger fit --serve, plan %u: %s on %s with %s, %llu KV tokens, max_model_len %llu\n"
                "# (docs/cli/fit.md). Extra arguments are passed to the engine.\nexec ",
                index, v->model, v->cluster->gpu.name, ml_engine_name(p->s.engine), (unsigned long long)p->sv.kv_tokens,
                (unsigned long long)p->sv.max_model_len);
    enum ml_status st = ml_render_serve_command(out, v->model_id ? v->model_id : v->model, &p->s, false);
    if (st == ML_OK)
        st = ml_buf_adds(out, " \"$@\"\n");
    return st;
}
