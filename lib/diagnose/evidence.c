/*
 * evidence.c - the evidence model of the diagnosis (diagnose.h, ML_EVIDENCE): its rows, the
 * ranking of causes by fitted weights against the reference "cannot tell", and two pure readings
 * of an event's numbers the rules build on: which process line is which (A1 traps), and which
 * relations between the numbers fail (a retyped or OCR'd message, issue 13).
 *
 * The ranking (validation/DIAGNOSE.md, docs/cli/diagnose.md "How the causes are ranked"): the
 * candidates are the causes that specific evidence names; each scores the sum of the weights of
 * the evidence present; a reference outcome, "none of these", scores 0; p is the softmax over the
 * candidates and the reference. The answer is the first candidate when it beats the reference with
 * p >= tau, else "cannot tell". The weights are fitted on the corpus (lib/diagnose/evidence_weights.inc,
 * written by validation/diagnose_report.c), never set by hand.
 */
#include <math.h>
#include <string.h>

#include "memledger/diagnose.h"
#include "memledger/oom.h"
#include "memledger/units.h"

static const struct ml_evidence_def rows[ML_EV_COUNT] = {
#define ML_EV_ROW(id, nm, sp, grp, rd, oth, src, story)                                                                \
    [ML_EV_##id] = {nm,                                                                                                \
                    sp,                                                                                                \
                    ML_EVG_##grp,                                                                                      \
                    ML_CAUSE_##rd,                                                                                     \
                    (uint32_t)(oth) | (ML_CAUSE_##rd < ML_CAUSE_COUNT ? 1u << (ML_CAUSE_##rd % ML_CAUSE_COUNT) : 0),   \
                    ML_SRC_##src,                                                                                      \
                    story},
    ML_EVIDENCE(ML_EV_ROW)
#undef ML_EV_ROW
};

const struct ml_evidence_def *ml_evidence_row(enum ml_evidence_id id)
{
    return (unsigned)id < ML_EV_COUNT ? &rows[id] : NULL;
}

const struct ml_evidence_weights ml_evidence_fitted =
#include "evidence_weights.inc"
    ;

void ml_evidence_rank(const struct ml_features *f, const struct ml_evidence_weights *w, struct ml_ranking *r)
{
    memset(r, 0, sizeof(*r));
    uint32_t cand = 0, veto = 0;
    for (unsigned i = 0; i < ML_EV_COUNT; i++) {
        if (f->on[i] && rows[i].specific)
            cand |= rows[i].causes;
        if (f->on[i] && rows[i].group == ML_EVG_VETO)
            veto |= rows[i].causes;
    }
    cand &= ~veto;
    double s[ML_CAUSE_COUNT];
    double top = 0; /* the reference scores 0 */
    for (unsigned c = 0; c < ML_CAUSE_COUNT; c++) {
        if (!(cand >> c & 1) || c == ML_CAUSE_UNKNOWN)
            continue;
        int64_t milli = 0;
        for (unsigned i = 0; i < ML_EV_COUNT; i++)
            if (f->on[i])
                milli += w->w[i][c];
        r->cause[r->n] = (enum ml_cause)c;
        r->score_milli[r->n] = (int32_t)milli;
        s[r->n] = (double)milli / 1000.0;
        if (s[r->n] > top)
            top = s[r->n];
        r->n++;
    }
    double z = exp(-top);
    for (uint32_t k = 0; k < r->n; k++)
        z += exp(s[k] - top);
    r->p_none = exp(-top) / z;
    for (uint32_t k = 0; k < r->n; k++)
        r->p[k] = exp(s[k] - top) / z;
    /* Most likely first; ties in the order of the causes. */
    for (uint32_t i = 1; i < r->n; i++)
        for (uint32_t j = i; j > 0 && r->p[j] > r->p[j - 1]; j--) {
            double tp = r->p[j];
            r->p[j] = r->p[j - 1];
            r->p[j - 1] = tp;
            enum ml_cause tc = r->cause[j];
            r->cause[j] = r->cause[j - 1];
            r->cause[j - 1] = tc;
            int32_t ts = r->score_milli[j];
            r->score_milli[j] = r->score_milli[j - 1];
            r->score_milli[j - 1] = ts;
        }
    for (uint32_t k = 0; k < r->n; k++)
        r->p_permille[k] = (uint32_t)lround(r->p[k] * 1000.0);
    r->p_none_permille = (uint32_t)lround(r->p_none * 1000.0);
    /* An exact tie of the first two: no evidence tells them apart. */
    r->cannot_tell = r->n == 0 || r->p[0] <= r->p_none || r->p_permille[0] < w->tau_permille ||
                     (r->n > 1 && r->score_milli[0] == r->score_milli[1]);
}

/* ---- process lines (A1 traps) ------------------------------------------------------------ */

const char *ml_oom_proc_role_name(enum ml_oom_proc_role r)
{
    static const char *const n[] = {"other", "this_process", "sibling_context", "duplicate"};
    _Static_assert(sizeof(n) / sizeof(n[0]) == ML_PROC_ROLE_COUNT, "role names");
    return (unsigned)r < ML_PROC_ROLE_COUNT ? n[r] : "other";
}

/* Two or more lines under 1 GiB within 2 % (or 8 MiB) of each other: one CUDA context each. */
static void find_siblings(const struct ml_oom_event *e, struct ml_oom_attribution *a, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (a->role[i] != ML_PROC_OTHER || e->procs[i].bytes >= ML_GIB)
            continue;
        uint32_t like = 0;
        for (uint32_t j = 0; j < n; j++) {
            uint64_t x = e->procs[i].bytes, y = e->procs[j].bytes;
            uint64_t d = x > y ? x - y : y - x, hi = x > y ? x : y;
            if ((a->role[j] == ML_PROC_OTHER || a->role[j] == ML_PROC_SIBLING) && y < ML_GIB &&
                (d <= hi / 50 || d <= 8 * ML_MIB))
                like++;
        }
        if (like >= 2) {
            a->role[i] = ML_PROC_SIBLING;
            a->n_siblings++;
            if (e->procs[i].bytes > a->sibling_bytes)
                a->sibling_bytes = e->procs[i].bytes;
        }
    }
}

void ml_oom_attribute_procs(const struct ml_oom_event *e, struct ml_oom_attribution *a)
{
    memset(a, 0, sizeof(*a));
    a->own = -1;
    uint32_t n = e->n_procs < ML_OOM_MAX_PROCS ? e->n_procs : ML_OOM_MAX_PROCS;
    uint64_t ru = (e->has & ML_OOM_F_RESERVED_UNALLOC)                          ? e->reserved_unalloc
                  : (e->has & ML_OOM_F_RESERVED) && e->cached_form              ? e->reserved
                  : (e->has & ML_OOM_F_RESERVED) && e->reserved >= e->allocated ? e->reserved - e->allocated
                                                                                : 0;
    a->held = ((e->has & ML_OOM_F_ALLOCATED) ? e->allocated : 0) + ru;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < i && a->role[i] == ML_PROC_OTHER; j++)
            if (a->role[j] != ML_PROC_DUPLICATE && e->procs[j].pid == e->procs[i].pid)
                a->role[i] = ML_PROC_DUPLICATE;
    a->proven = (e->has & ML_OOM_F_THIS_PROCESS) && e->this_process > 0;
    if (!a->proven) {
        /* One line is the caller: the least one at or above what PyTorch holds, else the largest. */
        for (uint32_t i = 0; i < n; i++) {
            if (a->role[i] == ML_PROC_DUPLICATE)
                continue;
            uint64_t b = e->procs[i].bytes;
            bool covers = b >= a->held / 100 * 99;
            if (a->own < 0) {
                a->own = (int32_t)i;
                continue;
            }
            uint64_t o = e->procs[a->own].bytes;
            bool own_covers = o >= a->held / 100 * 99;
            if ((covers && (!own_covers || b < o)) || (!covers && !own_covers && b > o))
                a->own = (int32_t)i;
        }
        if (a->own >= 0) {
            a->role[a->own] = ML_PROC_OWN;
            uint64_t o = e->procs[a->own].bytes;
            a->own_outside = o > a->held ? o - a->held : 0;
        }
    }
    find_siblings(e, a, n);
    for (uint32_t i = 0; i < n; i++)
        if (a->role[i] == ML_PROC_OTHER) {
            a->n_others++;
            a->others += e->procs[i].bytes;
        }
}

/* ---- relations between the numbers ------------------------------------------------------- */

const char *ml_oom_check_name(unsigned i)
{
    static const char *const n[] = {
#define ML_OOM_CHECK_NAME(id, text) text,
        ML_OOM_CHECKS(ML_OOM_CHECK_NAME)
#undef ML_OOM_CHECK_NAME
    };
    return i < ML_OOM_CHECK_COUNT ? n[i] : "";
}

/* lhs (one or two fields) <= rhs x (1 + tol/1000) + slack; the fields of a failed one are masked. */
static const struct relation {
    uint32_t a, b;  /* ML_OOM_F_ fields summed on the left (b: 0 = none) */
    uint32_t rhs;   /* ML_OOM_F_ field on the right */
    uint32_t tol;   /* permille */
    uint64_t slack; /* bytes */
    bool shared_ok; /* not an error where the driver lends host RAM (WSL, Windows) */
} relations[ML_OOM_CHECK_COUNT] = {
    [ML_OOM_CHECK_ALLOC_TOTAL_BIT] = {ML_OOM_F_ALLOCATED, 0, ML_OOM_F_TOTAL, 10, 0, true},
    [ML_OOM_CHECK_RESERVED_TOTAL_BIT] = {ML_OOM_F_RESERVED, 0, ML_OOM_F_TOTAL, 10, 0, true},
    [ML_OOM_CHECK_UNALLOC_TOTAL_BIT] = {ML_OOM_F_RESERVED_UNALLOC, 0, ML_OOM_F_TOTAL, 0, 0, false},
    [ML_OOM_CHECK_THIS_TOTAL_BIT] = {ML_OOM_F_THIS_PROCESS, 0, ML_OOM_F_TOTAL, 10, 0, true},
    [ML_OOM_CHECK_PROC_TOTAL_BIT] = {0, 0, ML_OOM_F_TOTAL, 10, 0, true}, /* each process line */
    [ML_OOM_CHECK_FREE_TOTAL_BIT] = {ML_OOM_F_FREE, 0, ML_OOM_F_TOTAL, 0, 0, false},
    [ML_OOM_CHECK_SUM_TOTAL_BIT] = {ML_OOM_F_FREE, ML_OOM_F_ALLOCATED, ML_OOM_F_TOTAL, 20, 64 * ML_MIB, true},
    [ML_OOM_CHECK_ALLOC_RESERVED_BIT] = {ML_OOM_F_ALLOCATED, 0, ML_OOM_F_RESERVED, 0, 0, false},
    [ML_OOM_CHECK_MPS_SUM_BIT] = {ML_OOM_F_ALLOCATED, ML_OOM_F_OTHER, ML_OOM_F_ALLOWED, 50, 0, false},
};

static uint64_t field(const struct ml_oom_event *e, uint32_t f)
{
    switch (f) {
    case ML_OOM_F_TOTAL: return e->total;
    case ML_OOM_F_FREE: return e->free;
    case ML_OOM_F_ALLOCATED: return e->allocated;
    case ML_OOM_F_RESERVED_UNALLOC: return e->reserved_unalloc;
    case ML_OOM_F_RESERVED: return e->reserved;
    case ML_OOM_F_THIS_PROCESS: return e->this_process;
    case ML_OOM_F_OTHER: return e->other;
    case ML_OOM_F_ALLOWED: return e->allowed;
    default: return 0;
    }
}

static bool exceeds(uint64_t lhs, uint64_t rhs, uint32_t tol, uint64_t slack)
{
    uint64_t lim = rhs + rhs / 1000 * tol + slack;
    return lim >= rhs && lhs > lim; /* (a limit that overflows holds anything) */
}

uint32_t ml_oom_check_numbers(const struct ml_oom_event *e, bool shared_memory, uint32_t *masked)
{
    uint32_t bad = 0, m = 0;
    /* The vLLM start-up and MPS forms state other quantities under these names (A5, A10). */
    bool allocator = e->kind == ML_OOM_ALLOCATOR || e->kind == ML_OOM_NPU_WORKSPACE;
    for (unsigned i = 0; i < ML_OOM_CHECK_COUNT; i++) {
        const struct relation *r = &relations[i];
        if ((r->shared_ok && shared_memory) || (i == ML_OOM_CHECK_MPS_SUM_BIT) != (e->kind == ML_OOM_MPS) ||
            (!allocator && i != ML_OOM_CHECK_MPS_SUM_BIT) || (e->has & r->rhs) != r->rhs)
            continue;
        uint64_t rhs = field(e, r->rhs);
        if (i == ML_OOM_CHECK_PROC_TOTAL_BIT) {
            for (uint32_t k = 0; k < e->n_procs && k < ML_OOM_MAX_PROCS; k++)
                if (exceeds(e->procs[k].bytes, rhs, r->tol, r->slack))
                    bad |= 1u << i;
            if (bad >> i & 1)
                m |= r->rhs;
            continue;
        }
        uint32_t need = r->a | r->b;
        if ((e->has & need) != need || (i == ML_OOM_CHECK_ALLOC_RESERVED_BIT && (!e->classic || e->cached_form)))
            continue;
        uint64_t lhs = field(e, r->a) + (r->b ? field(e, r->b) : 0);
        if (exceeds(lhs, rhs, r->tol, r->slack)) {
            bad |= 1u << i;
            m |= need | r->rhs;
        }
    }
    if (masked)
        *masked = m;
    return bad;
}
