/*
 * price.c - writing and pricing the fixes: a knob applied to the run's settings (fit's knob
 * table, lib/fit/knobs.c) and the ledger run again (ml_ledger_train / ml_ledger_infer), or the
 * log's own numbers; the setting written in the run's dialect.
 */
#include <stdio.h>
#include <string.h>

#include "memledger/units.h"
#include "diag_int.h"
#include "i18n.h"

/* Append to a fix's note ("; " between). */
static void fix_note_more(struct ml_fix *x, const char *text)
{
    size_t n = strlen(x->note);
    (void)snprintf(x->note + n, sizeof(x->note) - n, "%s%s", n ? "; " : "", text);
}

/* The log's own figures already had room for the failing request (free >= request, so in use +
 * request <= capacity) and the allocation still failed: what a fix returns is not shown to help,
 * and no fix may claim the allocation then fits from those figures. */
static bool room_already(const struct ctx *x)
{
    return x->has_cap && x->has_free && x->has_req && x->used + x->req <= x->cap;
}

/* The note for a fix priced by the log's figures when they already had room. */
static void note_room_already(struct ctx *x, struct ml_fix *f)
{
    char a[32], b[32], note[200];
    (void)snprintf(note, sizeof(note),
                   _("the log's figures already had room (%s free for a %s request): the saving is not shown to "
                     "help"),
                   ml_fmt_bytes_s(a, sizeof(a), x->free), ml_fmt_bytes_s(b, sizeof(b), x->req));
    fix_note_more(f, note);
}

/* Apply the fix's knob (with value v) to the training run t, c or the engine s; the changes go to
 * the fix's setting. */
static bool apply_knob(const struct ctx *x, struct ml_fix *f, uint64_t v, struct ml_train *t, struct ml_cluster *c,
                       struct ml_infer *s)
{
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t n = 0;
    struct ml_edit e = {t, c, s, ch, &n, 0};
    if (!ml_knob_apply(f->knob, &x->kx, &e, v))
        return false;
    ml_changes_text(ch, n, x->dialect, f->setting, sizeof(f->setting));
    return true;
}

/* The setting of a knob whose run is unknown (or rules it out): the knob applied to the
 * defaults, or its hint where its value follows the run's (x 1/2, the pool). */
void ml_dg_generic_setting(struct ctx *x, struct ml_fix *f, enum ml_dialect dialect)
{
    const struct ml_knob *k = ml_knob_get(f->knob);
    char hb[160];
    const char *hint = ml_knob_hint(f->knob, dialect, hb, sizeof(hb));
    if ((k->flags & ML_KNOB_RELATIVE) && !f->value) {
        (void)snprintf(f->setting, sizeof(f->setting), "%s", hint ? hint : "");
        return;
    }
    struct ml_train *t = &x->out->scratch.t;
    ml_train_defaults(t, ML_FW_LLAMAFACTORY);
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    c.gpus_per_node = c.nodes = 1;
    struct ml_infer s;
    ml_infer_defaults(&s);
    s.engine = ML_ENGINE_VLLM;
    if (x->su->args && x->su->args->tp)
        s.tp = x->su->args->tp; /* the log's tensor parallelism: a TP fix doubles it */
    struct ml_knob_ctx kx = x->kx;
    kx.force = true;
    kx.base = NULL;
    struct ml_change ch[ML_FIT_MAX_CHANGES];
    uint32_t n = 0;
    struct ml_edit e = {t, &c, &s, ch, &n, 0};
    if (ml_knob_apply(f->knob, &kx, &e, f->value))
        ml_changes_text(ch, n, dialect, f->setting, sizeof(f->setting));
    else
        (void)snprintf(f->setting, sizeof(f->setting), "%s", hint ? hint : "");
}

/* The inference ledger of settings s on the setup's GPU (tp x pp of them). */
bool ml_dg_run_serve(struct ctx *x, const struct ml_infer *s, struct ml_serve *sv)
{
    struct ml_cluster c = x->c0;
    c.gpus_per_node = s->tp * s->pp;
    c.nodes = 1;
    struct ml_diag d;
    ml_diag_init(&d);
    return ml_ledger_infer(x->su->arch, x->su->inv, s, &c, &x->out->scratch.led, sv, &d) == ML_OK;
}

/* The KV cache a what-if leaves, carried by the log: the ledger's pool plus the difference
 * between the KV cache the log states and the ledger's as configured (the engine's own
 * profiling is the better measure of what its activations and non-torch memory took). */
static uint64_t kv_carried(const struct ctx *x, const struct ml_serve *sv)
{
    const struct ml_diagnosis *o = x->out;
    if (!o->has_kv_log || sv->error == ML_SERVE_NO_CACHE_BLOCKS || o->serve.error == ML_SERVE_NO_CACHE_BLOCKS)
        return sv->kv_bytes;
    int64_t v = (int64_t)sv->kv_bytes + ((int64_t)o->kv_log - (int64_t)o->serve.kv_bytes);
    return v > 0 ? (uint64_t)v : 0;
}

/* Whether the engine starts with sv and its KV cache holds one request of max_model_len. A
 * max_model_len past the derived length is refused before any memory is profiled (vLLM
 * vllm/config/model.py _get_and_verify_max_len; SGLang ModelConfig): no fix that adds memory
 * makes it start. */
static bool serve_holds(const struct ctx *x, const struct ml_serve *sv, uint64_t *tokens)
{
    uint64_t kv = kv_carried(x, sv);
    *tokens = sv->kv_bytes_per_token ? kv / sv->kv_bytes_per_token : 0;
    return sv->error != ML_SERVE_NO_CACHE_BLOCKS && sv->error != ML_SERVE_MAX_LEN_OVER_MODEL && kv > 0 &&
           *tokens >= sv->max_model_len;
}

/* The smallest share, in hundredths, with which the engine holds one request; 0 when none up to
 * 0.99 does. */
static uint32_t least_share(struct ctx *x, struct ml_fix *f)
{
    struct ml_serve sv;
    uint64_t tokens;
    for (uint32_t t = (x->s0.gpu_util_permille / 10 + 1) * 10; t <= 990; t += 10) {
        struct ml_infer s = x->s0;
        if (apply_knob(x, f, t, NULL, NULL, &s) && ml_dg_run_serve(x, &s, &sv) && serve_holds(x, &sv, &tokens))
            return t;
    }
    return 0;
}

/* The value of a serving knob from the log, the inference ledger or the numbers at the failing
 * moment (runtime); 0 keeps the knob's own rule. False when it cannot be priced. */
static bool serve_value(struct ctx *x, struct ml_fix *f, bool runtime, uint64_t *v)
{
    *v = f->value;
    switch (f->knob) {
    case ML_KNOB_MAX_MODEL_LEN:
        if (!*v)
            (void)serve_holds(x, &x->out->serve, v); /* the tokens the pool holds as configured */
        /* Never past the longest the engine accepts (ml_infer_len_limit): the log's estimate
         * or the pool may exceed it. */
        if (x->out->serve.max_len_limit && *v > x->out->serve.max_len_limit)
            *v = x->out->serve.max_len_limit;
        return *v != 0;
    case ML_KNOB_GPU_UTIL:
        if (!*v)
            *v = least_share(x, f);
        return true;
    case ML_KNOB_GPU_UTIL_DOWN:
        if (runtime) {
            /* The KV pool is allocated up front: each hundredth less returns 1 % of the card.
             * The smallest cut that lets the failing allocation through. */
            uint64_t need = x->used + x->req > x->cap ? x->used + x->req - x->cap : 0;
            uint64_t cut = (need * 1000 + x->cap - 1) / x->cap;
            cut = (cut + 9) / 10 * 10;
            if (cut < 10)
                cut = 10;
            *v = x->s0.gpu_util_permille > cut ? x->s0.gpu_util_permille - cut : 0;
            if (*v < 10)
                *v = 0;
        }
        return *v != 0;
    default: return true;
    }
}

/* The device bytes a serving knob returns: the KV pool's share, the weights, the profile peak. */
static uint64_t serve_back(const struct ml_fix *f, const struct ml_serve *base, const struct ml_serve *sv)
{
    switch (f->knob) {
    case ML_KNOB_GPU_UTIL_DOWN:
        return base->budget_bytes > sv->budget_bytes ? base->budget_bytes - sv->budget_bytes : 0;
    case ML_KNOB_TP_2:
    case ML_KNOB_FP8_WEIGHTS:
        return base->weights_bytes > sv->weights_bytes ? base->weights_bytes - sv->weights_bytes : 0;
    case ML_KNOB_SERVE_BUDGET_2:
    case ML_KNOB_CHUNKED_PREFILL:
    case ML_KNOB_MAX_NUM_SEQS:
        return base->activation_bytes > sv->activation_bytes ? base->activation_bytes - sv->activation_bytes : 0;
    default: return 0;
    }
}

/* The engine's knobs as what-ifs on the inference ledger: returns false for a fix it does not
 * price. Sets fits (the engine starts and holds one max_model_len request; for an OOM at run
 * time also: the failing allocation fits in what the change returns) and a note with the KV
 * cache and tokens it leaves; the bytes saved where the change returns device memory. */
static bool price_serve(struct ctx *x, struct ml_fix *f)
{
    const struct ml_knob *k = ml_knob_get(f->knob);
    if (!k || !(k->flags & ML_KNOB_SERVE))
        return false;
    const struct ml_serve *base = &x->out->serve;
    struct ml_serve sv;
    char a[32], note[200];
    uint64_t tokens = 0;
    bool runtime = (x->e->phase == ML_OPH_SERVING_RUNTIME || (x->serving && x->e->phase == ML_OPH_UNKNOWN)) &&
                   x->has_cap && x->has_free && x->has_req;
    uint64_t v;
    if (!serve_value(x, f, runtime, &v))
        return false;
    if (f->knob == ML_KNOB_GPU_UTIL && !v && base->error == ML_SERVE_MAX_LEN_OVER_MODEL) {
        f->setting[0] = '\0';
        f->fits = 0;
        (void)snprintf(note, sizeof(note),
                       _("max_model_len %llu is still past the derived %llu: the engine refuses it before it "
                         "looks at memory (inference ledger)"),
                       (unsigned long long)base->max_model_len, (unsigned long long)x->su->arch->engine_max_len);
        fix_note_more(f, note);
        return true;
    }
    if (f->knob == ML_KNOB_GPU_UTIL && !v) {
        f->setting[0] = '\0';
        f->fits = 0;
        fix_note_more(f, _("no share up to 0.99 holds one max_model_len request (inference ledger)"));
        return true;
    }
    struct ml_infer s = x->s0;
    if (!apply_knob(x, f, v, NULL, NULL, &s) || !ml_dg_run_serve(x, &s, &sv))
        return false;
    bool holds = serve_holds(x, &sv, &tokens);
    uint64_t back = serve_back(f, base, &sv);
    if (back) {
        f->has_saves = true;
        f->saves_bytes = back;
        f->saves_from_ledger = true;
    }
    f->fits = holds ? 1 : 0;
    bool returns = f->knob == ML_KNOB_GPU_UTIL_DOWN || f->knob == ML_KNOB_SERVE_BUDGET_2 ||
                   f->knob == ML_KNOB_CHUNKED_PREFILL || f->knob == ML_KNOB_MAX_NUM_SEQS;
    if (runtime && returns && room_already(x)) {
        f->fits = -1;
        note_room_already(x, f);
    } else if (runtime && returns)
        f->fits = holds && x->used + x->req <= x->cap + back ? 1 : 0;
    if (sv.error == ML_SERVE_NO_CACHE_BLOCKS)
        (void)snprintf(note, sizeof(note),
                       _("then no room is left for the KV cache: weights %s per GPU alone (inference ledger)"),
                       ml_fmt_bytes_s(a, sizeof(a), sv.weights_bytes));
    else if (sv.error == ML_SERVE_MAX_LEN_OVER_MODEL)
        (void)snprintf(note, sizeof(note),
                       _("max_model_len %llu is still past the derived %llu: the engine refuses it before it "
                         "looks at memory (inference ledger)"),
                       (unsigned long long)sv.max_model_len, (unsigned long long)x->su->arch->engine_max_len);
    else
        (void)snprintf(note, sizeof(note),
                       _("then the KV cache holds %llu tokens, max_model_len %llu%s (inference ledger%s)"),
                       (unsigned long long)tokens, (unsigned long long)sv.max_model_len,
                       holds ? "" : _(": one request does not fit"),
                       x->out->has_kv_log ? _(", carried by the log's KV figure") : "");
    fix_note_more(f, note);
    return true;
}

/* The ledger's extra reserve in the step after a save (accounting notes §1.9) is what an
 * empty_cache() after the save returns to the device. */
static void price_save_callback(struct ctx *x, struct ml_fix *f)
{
    const struct ml_diagnosis *o = x->out;
    for (uint32_t i = 0; i < o->ledger.n; i++) {
        const struct ml_entry *en = &o->ledger.e[i];
        if (en->id == ML_C_ALLOCATOR && en->phases == ML_PH(ML_PHASE_AFTER_SAVE)) {
            f->has_saves = true;
            f->saves_bytes = en->bytes;
            f->saves_from_ledger = true;
            uint64_t after = o->ledger.device_used > en->bytes ? o->ledger.device_used - en->bytes : 0;
            f->device_after = after;
            f->fits = after + o->gap <= o->ledger.capacity ? 1 : 0;
        }
    }
}

/* A training knob applied to the run's settings: its setting from them, and with the ledger the
 * bytes it saves and whether the run then fits. */
static void price_train(struct ctx *x, struct ml_fix *f, bool from_log)
{
    const struct ml_knob *k = ml_knob_get(f->knob);
    struct ml_diagnosis *o = x->out;
    if (!k || !(k->flags & ML_KNOB_TRAIN) || !x->su->train)
        return;
    struct ml_train *t = &o->scratch.t;
    *t = *x->su->train;
    struct ml_cluster c = x->c0;
    if (!x->su->cluster) {
        memset(&c, 0, sizeof(c));
        c.gpus_per_node = c.nodes = 1;
    }
    if (!apply_knob(x, f, f->value, t, &c, NULL) || !x->has_ledger)
        return;
    struct ml_ledger *l = &o->scratch.led;
    if (!ml_dg_run_ledger(x->su, t, &c, l))
        return;
    char a[32], b[32];
    uint64_t before = o->ledger.device_used, after = l->device_used;
    uint64_t saved = before > after ? before - after : 0;
    if (from_log) {
        /* The log's figure is what the fix returns at the failing moment; the ledger's is the
         * modelled reserve at the peak: both are shown. */
        if (!f->note[0])
            ml_dg_fix_note(f, _("the ledger models %s of allocator reserve it removes at the peak (device %s after)"),
                           ml_fmt_bytes_s(a, sizeof(a), saved), ml_fmt_bytes_s(b, sizeof(b), after));
        return;
    }
    f->has_saves = true;
    f->saves_bytes = saved;
    f->saves_from_ledger = true;
    f->device_after = after;
    f->fits = after + o->gap <= l->capacity ? 1 : 0;
    if (f->knob == ML_KNOB_OFFLOAD_OPT || f->knob == ML_KNOB_OFFLOAD_ALL) {
        if (x->c0.host_ram_bytes && l->host.peak_bytes > x->c0.host_ram_bytes)
            ml_dg_fix_note(f, _("needs %s of host RAM per node, more than the %s given"),
                           ml_fmt_bytes_s(a, sizeof(a), l->host.peak_bytes),
                           ml_fmt_bytes_s(b, sizeof(b), x->c0.host_ram_bytes));
        else if (!f->note[0])
            ml_dg_fix_note(f, _("host RAM per node then: %s (ledger); 20-40%% slower steps"),
                           ml_fmt_bytes_s(a, sizeof(a), l->host.peak_bytes));
    }
}

/* Write and price a fix: serving knobs with the inference ledger, training knobs with the
 * training ledger, advice with the log's numbers; a knob the run does not give gets its
 * generic setting. */
void ml_dg_settle(struct ctx *x, struct ml_fix *f)
{
    if (!(x->has_serve_ledger && price_serve(x, f))) {
        bool from_log = f->has_saves && !f->saves_from_ledger;
        if (from_log && room_already(x))
            f->fits = -1;
        else if (from_log && x->has_cap && x->has_free && x->has_req) {
            /* Priced by the log: would the failing allocation have succeeded (in use + request -
             * what the fix returns <= capacity)? */
            uint64_t need = x->used + x->req;
            uint64_t back = f->saves_bytes < need ? f->saves_bytes : need;
            f->fits = need - back <= x->cap ? 1 : 0;
        }
        if (f->kind == ML_FIX_EMPTY_CACHE_SAVE && x->has_ledger)
            price_save_callback(x, f);
        else if (f->knob != ML_KNOB_NONE)
            price_train(x, f, from_log);
        if (from_log && room_already(x))
            note_room_already(x, f);
    }
    if (f->knob != ML_KNOB_NONE && !f->setting[0])
        ml_dg_generic_setting(x, f, x->dialect);
}

/* ---- settings for this device ------------------------------------------------------------ */

void ml_dg_zero3_action(struct ctx *x, struct ml_fix *k)
{
    const struct ml_train *t = x->su->train;
    char a[24], b[24];
    if (!t || !t->deepspeed || t->zero.stage != 3 || !x->su->arch) {
        (void)snprintf(k->action, sizeof(k->action),
                       _("smaller ZeRO-3 prefetch and live-parameter budgets, no side-stream overlap"));
        return;
    }
    uint64_t pf = ml_zero_prefetch_bucket(&t->zero, x->su->arch->hidden);
    uint64_t ml = ml_zero_max_live(&t->zero);
    (void)snprintf(k->action, sizeof(k->action),
                   _("halve the ZeRO-3 prefetch and live-parameter budgets (now %s and %s)%s"),
                   ml_fmt_knob(a, sizeof(a), pf), ml_fmt_knob(b, sizeof(b), ml),
                   ml_zero_overlap(&t->zero) ? _(" and stop overlapping communication on side streams") : "");
    if (x->su->ds_name && !k->note[0])
        ml_dg_fix_note(
            k, _("in %s; docs/ledger.md zero_gathered_params (DeepSpeed stage3.py's prefetch and live budgets)"),
            x->su->ds_name);
}
