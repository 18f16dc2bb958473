/*
 * fit.c - the knob search (see fit.h). Pure: calls the ledger, allocates nothing, prints nothing.
 *
 * The knobs, their costs and what each changes are rows of knobs.c; this file only searches them:
 * breadth-first over combinations of training knobs from distinct exclusion groups, every subset
 * of the serving knobs, each plan ranked on the one cost scale (ml_knob_rank).
 */
#include "memledger/fit.h"

#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "knobs.h"

void ml_fit_opts_default(struct ml_fit_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->headroom_permille = 100;
    o->max_gpus_per_node = ML_FIT_MAX_GPUS_DEFAULT;
    o->max_plans = 5;
}

/* ---- evaluation and ranking ----------------------------------------------------------- */

struct search {
    const struct ml_arch *a;
    const struct ml_inventory *inv;
    const struct ml_fit_opts *o;
    struct ml_fit_result *out;
    uint64_t target;
    struct ml_ledger led; /* scratch */
};

static uint32_t plan_effects(const struct ml_plan *p)
{
    return (p->changes_data ? ML_KNOB_CHANGES_DATA : 0) | (p->changes_method ? ML_KNOB_CHANGES_METHOD : 0) |
           (p->needs_hardware ? ML_KNOB_NEEDS_HARDWARE : 0);
}

/* Rank: the one cost scale (plans that change neither data nor method first, then those that
 * need no new hardware, then by slowdown), then fewer config edits, then room. */
static bool better(const struct ml_plan *x, const struct ml_plan *y)
{
    uint32_t rx = ml_knob_rank(x->cost_permille, plan_effects(x)), ry = ml_knob_rank(y->cost_permille, plan_effects(y));
    if (rx != ry)
        return rx < ry;
    /* At equal cost, the least intrusive: an environment variable before a config edit. */
    uint32_t ex = 0, ey = 0;
    for (uint32_t i = 0; i < x->n; i++)
        ex += x->ch[i].where != ML_IN_ENV;
    for (uint32_t i = 0; i < y->n; i++)
        ey += y->ch[i].where != ML_IN_ENV;
    if (ex != ey)
        return ex < ey;
    return x->device_used < y->device_used;
}

/* The plan's one line, the names of the knobs of set ns: written only for a plan the result keeps
 * (most plans of a search are dropped). */
static void name_plan(struct ml_plan *p, uint64_t ns)
{
    p->why[0] = '\0';
    for (uint32_t q = 0; q < ML_KNOB_TRAIN_SEARCHED; q++)
        if (ns >> q & 1u) {
            size_t l = strlen(p->why);
            (void)snprintf(p->why + l, sizeof(p->why) - l, "%s%s", l ? " + " : "", _(ml_knob_table[q].name));
        }
}

static void keep(struct search *S, struct ml_plan *p, uint64_t ns)
{
    struct ml_fit_result *r = S->out;
    uint32_t cap = S->o->max_plans && S->o->max_plans <= ML_FIT_MAX_PLANS ? S->o->max_plans : ML_FIT_MAX_PLANS;
    uint32_t i = r->n < cap ? r->n : cap;
    if (i == cap && !better(p, &r->plans[cap - 1]))
        return;
    name_plan(p, ns);
    if (i == cap)
        i = cap - 1;
    else
        r->n++;
    while (i > 0 && better(p, &r->plans[i - 1])) {
        r->plans[i] = r->plans[i - 1];
        i--;
    }
    r->plans[i] = *p;
}

/* The figure held to the target: the high end of the device interval, or the estimate. */
static uint64_t fit_figure(const struct ml_fit_opts *o, const struct ml_ledger *l)
{
    return o->point ? l->device_used : l->interval[ML_FIG_DEVICE][1];
}

/* Evaluate the plan of knob set ns; returns true if it fits the target. */
static bool evaluate(struct search *S, struct ml_plan *p, uint64_t ns)
{
    struct ml_diag d;
    ml_diag_init(&d);
    S->out->evaluated++;
    struct ml_ledger_opts o; /* the search reads only the figures: no rule texts */
    ml_ledger_opts_default(&o, &p->t, &p->c);
    o.figures_only = true;
    if (ml_ledger_train(S->a, S->inv, &p->t, &p->c, &o, &S->led, &d) != ML_OK)
        return false;
    /* The device figure the search holds to the target (--confidence): the high end of the 80 %
     * interval by default, the estimate with --confidence point. */
    p->device_used = fit_figure(S->o, &S->led);
    p->device_estimate = S->led.device_used;
    p->peak_phase = S->led.peak_phase;
    p->headroom = S->led.capacity > p->device_used ? S->led.capacity - p->device_used : 0;
    bool host_ok = !S->o->host_ram_bytes || S->led.host.peak_bytes <= S->o->host_ram_bytes;
    p->fits = p->device_used <= S->target && host_ok;
    if (!p->fits && (!S->out->closest.n || p->device_used < S->out->closest.device_used) && host_ok) {
        name_plan(p, ns);
        S->out->closest = *p;
    }
    return p->fits;
}

/* Apply the knobs of set ns to a copy of the base plan; false when one does not apply. */
static bool build(const struct ml_knob_ctx *x, const struct ml_plan *p0, uint64_t ns, struct ml_plan *p)
{
    *p = *p0;
    struct ml_edit e = {&p->t, &p->c, NULL, p->ch, &p->n, 0};
    uint32_t cost = 0;
    for (uint32_t q = 0; q < ML_KNOB_TRAIN_SEARCHED; q++) {
        if (!(ns >> q & 1u))
            continue;
        if (!ml_knob_table[q].apply(x, &e, 0))
            return false;
        e.effects |= ml_knob_table[q].flags & (ML_KNOB_CHANGES_DATA | ML_KNOB_CHANGES_METHOD | ML_KNOB_NEEDS_HARDWARE);
        cost += ml_knob_table[q].cost;
    }
    p->cost_permille = cost;
    p->changes_data = e.effects & ML_KNOB_CHANGES_DATA;
    p->changes_method = e.effects & ML_KNOB_CHANGES_METHOD;
    p->needs_hardware = e.effects & ML_KNOB_NEEDS_HARDWARE;
    p->why[0] = '\0'; /* name_plan, once kept */
    return true;
}

enum ml_status ml_fit_train(const struct ml_arch *arch, const struct ml_inventory *inv, const struct ml_train *base,
                            const struct ml_cluster *c, const struct ml_fit_opts *o, struct ml_fit_result *out,
                            struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    struct ml_fit_opts def;
    if (!o) {
        ml_fit_opts_default(&def);
        o = &def;
    }
    _Static_assert(ML_KNOB_TRAIN_SEARCHED < 64, "the search marks knobs in a 64-bit set");
    struct search S;
    memset(&S, 0, sizeof(S));
    S.a = arch;
    S.inv = inv;
    S.o = o;
    S.out = out;
    uint64_t cap = c->gpu.capacity_bytes;
    S.target = cap - cap / 1000 * o->headroom_permille;
    out->target_bytes = S.target;
    struct ml_knob_ctx x = {arch, o->max_gpus_per_node, NULL, NULL, false};

    /* The run as it is. */
    struct ml_plan p0;
    memset(&p0, 0, sizeof(p0));
    p0.t = *base;
    p0.c = *c;
    enum ml_status st = ml_ledger_train(arch, inv, base, c, NULL, &S.led, diag);
    if (st != ML_OK)
        return st;
    out->evaluated = 1;
    out->base_device = fit_figure(o, &S.led);
    out->base_estimate = S.led.device_used;
    out->point = o->point;
    out->base_fits = out->base_device <= S.target && (!o->host_ram_bytes || S.led.host.peak_bytes <= o->host_ram_bytes);

    /* Breadth-first over combinations of knobs from distinct groups, up to ML_FIT_MAX_DEPTH; a
     * combination that fits is kept and not extended (any extension costs more). */
    uint64_t fit_sets[512];
    uint32_t n_fit_sets = 0;
    uint64_t frontier[2][1024];
    uint32_t nf[2] = {1, 0};
    frontier[0][0] = 0;
    for (int depth = 1; depth <= ML_FIT_MAX_DEPTH; depth++) {
        uint32_t cur = (uint32_t)(depth - 1) & 1, nxt = (uint32_t)depth & 1;
        nf[nxt] = 0;
        for (uint32_t f = 0; f < nf[cur]; f++) {
            uint64_t set = frontier[cur][f];
            uint32_t start = 0;
            for (uint32_t m = 0; m < ML_KNOB_TRAIN_SEARCHED; m++)
                if (set >> m & 1u)
                    start = m + 1;
            for (uint32_t m = start; m < ML_KNOB_TRAIN_SEARCHED; m++) {
                uint64_t ns = set | ((uint64_t)1 << m);
                /* one knob per group */
                bool clash = false;
                for (uint32_t q = 0; q < ML_KNOB_TRAIN_SEARCHED && !clash; q++)
                    clash = (set >> q & 1u) && ml_knob_table[q].group == ml_knob_table[m].group;
                /* a superset of a fitting set is dominated */
                for (uint32_t q = 0; q < n_fit_sets && !clash; q++)
                    clash = (fit_sets[q] & ns) == fit_sets[q];
                struct ml_plan p;
                if (clash || !build(&x, &p0, ns, &p))
                    continue;
                if (evaluate(&S, &p, ns)) {
                    keep(&S, &p, ns);
                    if (n_fit_sets < sizeof(fit_sets) / sizeof(fit_sets[0]))
                        fit_sets[n_fit_sets++] = ns;
                } else if (nf[nxt] < sizeof(frontier[0]) / sizeof(frontier[0][0])) {
                    frontier[nxt][nf[nxt]++] = ns;
                }
            }
        }
    }
    return ML_OK;
}

/* ---- serving --------------------------------------------------------------------------- */

static bool ibetter(const struct ml_fit_infer_plan *x, const struct ml_fit_infer_plan *y)
{
    uint32_t ex = (x->changes_method ? ML_KNOB_CHANGES_METHOD : 0) | (x->needs_hardware ? ML_KNOB_NEEDS_HARDWARE : 0);
    uint32_t ey = (y->changes_method ? ML_KNOB_CHANGES_METHOD : 0) | (y->needs_hardware ? ML_KNOB_NEEDS_HARDWARE : 0);
    uint32_t rx = ml_knob_rank(x->cost_permille, ex), ry = ml_knob_rank(y->cost_permille, ey);
    if (rx != ry)
        return rx < ry;
    return x->sv.kv_tokens > y->sv.kv_tokens;
}

static void ikeep(struct ml_fit_infer_result *out, const struct ml_fit_opts *o, const struct ml_fit_infer_plan *p)
{
    uint32_t cap = o->max_plans && o->max_plans <= ML_FIT_MAX_PLANS ? o->max_plans : ML_FIT_MAX_PLANS;
    uint32_t i = out->n < cap ? out->n : cap;
    if (i == cap && !ibetter(p, &out->plans[cap - 1]))
        return;
    if (i == cap)
        i = cap - 1;
    else
        out->n++;
    while (i > 0 && ibetter(p, &out->plans[i - 1])) {
        out->plans[i] = out->plans[i - 1];
        i--;
    }
    out->plans[i] = *p;
}

/* Apply a knob to a serving plan, adding its cost and effects. */
static bool iapply(const struct ml_knob_ctx *x, struct ml_fit_infer_plan *p, struct ml_cluster *cc, enum ml_knob_id k,
                   uint64_t value)
{
    struct ml_edit e = {NULL, cc, &p->s, p->ch, &p->n, 0};
    if (!ml_knob_apply(k, x, &e, value))
        return false;
    p->cost_permille += ml_knob_table[k].cost;
    p->changes_method |= (e.effects & ML_KNOB_CHANGES_METHOD) != 0;
    p->needs_hardware |= (e.effects & ML_KNOB_NEEDS_HARDWARE) != 0;
    return true;
}

enum ml_status ml_fit_infer(const struct ml_arch *arch, const struct ml_inventory *inv, const struct ml_infer *base,
                            const struct ml_cluster *c, const struct ml_fit_opts *o, struct ml_fit_infer_result *out,
                            struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    struct ml_fit_opts def;
    if (!o) {
        ml_fit_opts_default(&def);
        o = &def;
    }
    struct ml_ledger led;
    struct ml_serve sv;
    enum ml_status st = ml_ledger_infer(arch, inv, base, c, &led, &sv, diag);
    if (st != ML_OK)
        return st;
    out->evaluated = 1;
    out->base_fits = led.fits;
    /* The engine's refusal only: SGLang starts with requests capped (sv.req_capped), no error. */
    (void)snprintf(out->base_error, sizeof(out->base_error), "%s", sv.error == ML_SERVE_OK ? "" : sv.error_text);
    struct ml_knob_ctx x = {arch, o->max_gpus_per_node, NULL, &sv, false};
    /* A utilization over the free memory at start is refused before anything loads (vLLM's
     * request_memory): every plan first lowers it to the highest that starts. */
    uint32_t util_down = sv.error == ML_SERVE_UTIL_OVER_FREE ? ml_infer_util_limit(c->gpu.capacity_bytes) : 0;
    /* A utilization the user set so high that what lies outside the budget (CUDA graphs, the
     * context) no longer fits: the highest in hundredths, down to the default, whose device figure
     * does. */
    for (uint32_t pm = (util_down ? util_down : base->gpu_util_permille) / 10 * 10;
         base->engine == ML_ENGINE_VLLM && base->gpu_util_permille > 900 && !led.fits && pm >= 900; pm -= 10) {
        struct ml_infer t = *base;
        struct ml_serve tsv;
        struct ml_ledger tl;
        t.gpu_util_permille = pm;
        if (pm == base->gpu_util_permille || ml_ledger_infer(arch, inv, &t, c, &tl, &tsv, NULL) != ML_OK)
            continue;
        out->evaluated++;
        if (tsv.error != ML_SERVE_UTIL_OVER_FREE && tl.device_used <= tl.capacity) {
            util_down = pm;
            break;
        }
    }
    /* What each subset left (KV tokens, max_model_len, device bytes), to drop a plan with a knob
     * that changes nothing: SGLang's --max-running-requests sizes the request table outside its
     * static share, not the KV pool (model_runner.py init_memory_pool), and a no-op is no plan. */
    struct {
        bool ok;
        uint64_t tokens, len, device;
    } seen[2][1u << ML_KNOB_SERVE_SEARCHED];
    memset(seen, 0, sizeof(seen));
    /* Every subset of the serving knobs (the utilization up to 0.95, an fp8 KV cache, tensor
     * parallelism x 2, fp8 weights, fewer sequences per step), each alone and then with the
     * max_model_len its pool holds (rounded down to 1024). */
    for (uint32_t cut = 0; cut < 2; cut++) {
        for (uint32_t mask = 0; mask < (1u << ML_KNOB_SERVE_SEARCHED); mask++) {
            struct ml_fit_infer_plan p;
            memset(&p, 0, sizeof(p));
            p.s = *base;
            struct ml_cluster cc = *c;
            bool ok = !util_down || iapply(&x, &p, &cc, ML_KNOB_GPU_UTIL_DOWN, util_down);
            for (uint32_t b = 0; b < ML_KNOB_SERVE_SEARCHED && ok; b++)
                if (mask >> b & 1u)
                    ok = iapply(&x, &p, &cc, (enum ml_knob_id)(ML_KNOB_SERVE_FIRST + b), 0);
            if (!ok)
                continue;
            /* More tensor parallelism within the GPUs --num-gpus gives needs none more. */
            if (p.needs_hardware && p.s.tp * p.s.pp <= c->gpus_per_node * (c->nodes ? c->nodes : 1))
                p.needs_hardware = false;
            struct ml_diag d;
            ml_diag_init(&d);
            out->evaluated++;
            if (ml_ledger_infer(arch, inv, &p.s, &cc, &led, &p.sv, &d) != ML_OK)
                continue;
            if (cut) {
                if (!iapply(&x, &p, &cc, ML_KNOB_MAX_MODEL_LEN, p.sv.max_model_len_fit / 1024 * 1024))
                    continue;
                out->evaluated++;
                if (ml_ledger_infer(arch, inv, &p.s, &cc, &led, &p.sv, &d) != ML_OK)
                    continue;
            }
            seen[cut][mask].ok = true;
            seen[cut][mask].tokens = p.sv.kv_tokens;
            seen[cut][mask].len = p.sv.max_model_len;
            seen[cut][mask].device = led.device_used;
            bool noop = false;
            for (uint32_t b = 0; b < ML_KNOB_SERVE_SEARCHED && !noop; b++) {
                uint32_t m = mask & ~(1u << b);
                noop = m != mask && seen[cut][m].ok && seen[cut][m].tokens == p.sv.kv_tokens &&
                       seen[cut][m].len == p.sv.max_model_len && seen[cut][m].device == led.device_used;
            }
            if (!led.fits || !p.n || noop)
                continue;
            p.device_used = led.device_used;
            ikeep(out, o, &p);
        }
    }
    return ML_OK;
}
