/*
 * request.c - the failing request's size: the fingerprints of a tensor class with the model
 * given (a flat copy of the model, the logits, eager attention's scores) and, for one big
 * request, the hypotheses of what it can be (issue 13).
 */
#include <string.h>

#include "memledger/units.h"
#include "diag_int.h"
#include "i18n.h"

/* The parameters the setup knows (--model), 0 when none. */
uint64_t ml_dg_setup_params(const struct ctx *x)
{
    return x->su->params ? x->su->params : x->su->inv ? x->su->inv->total_params : 0;
}

/* params x k B within 3 %: one flat copy of the whole model (k = 2: 16-bit, 4: fp32); 0 if not. */
int ml_dg_copy_match(const struct ctx *x)
{
    uint64_t P = ml_dg_setup_params(x);
    for (int k = 2; P && x->has_req && x->req >= ML_GIB && k <= 4; k += 2) {
        uint64_t w = P * (uint64_t)k;
        if (x->req >= w / 100 * 97 && x->req <= w / 100 * 103 + 2 * ML_MIB)
            return k;
    }
    return 0;
}

/* b x s x V x k B of the run (-10 % / +3 %): the full-sequence logits; k, or 0 if not. */
int ml_dg_logits_match(const struct ctx *x, uint64_t *want)
{
    const struct ml_arch *ar = x->su->arch;
    const struct ml_train *t = x->su->train;
    if (!ar || !t || !t->seq_len || !ar->vocab || !x->has_req || x->req < 64 * ML_MIB)
        return 0;
    uint64_t bsz = t->micro_batch ? t->micro_batch : 1;
    for (int k = 4; k >= 2; k -= 2) {
        *want = bsz * t->seq_len * ar->vocab * (uint64_t)k;
        if (x->req >= *want / 100 * 90 && x->req <= *want / 100 * 103 + 2 * ML_MIB)
            return k;
    }
    return 0;
}

/* b x heads x s^2 x k B of the model: the eager attention matrix; the request is the block
 * rounded up to 2 MiB above 10 MiB (A1), so it bounds s from both sides. */
bool ml_dg_eager_match(const struct ctx *x, int *k, uint64_t *smin, uint64_t *smax)
{
    const struct ml_arch *ar = x->su->arch;
    const struct ml_train *t = x->su->train;
    if (!ar || !t || !ar->n_heads || !x->has_req || x->req <= 64 * ML_MIB ||
        !(t->attn == ML_ATTN_EAGER || x->e->eager_frames))
        return false; /* (a tiny request decomposes into anything: it only says the card was full, C8) */
    uint64_t bsz = t->micro_batch ? t->micro_batch : 1;
    uint64_t hi_bytes = x->req, lo_bytes = x->req > 10 * ML_MIB ? x->req - 2 * ML_MIB : 0;
    *k = 4;
    uint64_t per = bsz * ar->n_heads * (uint64_t)*k;
    *smax = *smin = 0;
    while ((*smax + 1) * (*smax + 1) * per <= hi_bytes)
        (*smax)++;
    while (*smin * *smin * per <= lo_bytes)
        (*smin)++;
    return *smax && *smin <= *smax && (!t->seq_len || *smax <= t->seq_len + 8);
}

/* One big request below the card (issue 13): what its size can be, as hypotheses; the phase or
 * the model given says which is likely. The vocabularies of the common families (their configs'
 * vocab_size) and the head counts of the common sizes. */
static const struct {
    uint64_t vocab;
    const char *families;
} vocabularies[] = {
    {32000, "Llama 2, Mistral 7B"},
    {32064, "Phi-3"},
    {49152, "StarCoder2, SmolLM"},
    {64000, "Yi"},
    {65024, "ChatGLM2/3, Falcon"},
    {100352, "Phi-4"},
    {128256, "Llama 3"},
    {151936, "Qwen2/3 (small)"},
    {152064, "Qwen2.5 (7B+)"},
    {201088, "gpt-oss"},
    {256000, "Gemma"},
};
static const uint32_t head_counts[] = {16, 24, 28, 32, 40, 48, 64, 96, 128};

static void hypothesis(struct ml_big_request *b, enum ml_request_what what, uint64_t count, uint64_t per,
                       uint32_t bytes, bool model)
{
    if (b->n < ML_DIAG_MAX_HYPOTHESES)
        b->h[b->n++] = (struct ml_request_hypothesis){what, count, per, bytes, model, false};
}

/* ---- the run settings the log prints (issue 24 item 5) ------------------------------------- */

/* w within 1 % below and 1 % + 2 MiB above (the block rounding above 10 MiB, A1). */
static bool near(uint64_t req, uint64_t w)
{
    return w && req >= w / 100 * 99 && req <= w / 100 * 101 + 2 * ML_MIB;
}

/* The log's batch and sequence, when both are read and small enough to multiply safely. */
static const struct ml_log_args *sized_args(const struct ctx *x)
{
    const struct ml_log_args *a = x->su->args;
    if (!a || !a->batch || !a->seq_len || a->batch > 4096 || a->seq_len > ((uint64_t)1 << 20) || !x->has_req ||
        x->req <= 64 * ML_MIB)
        return NULL;
    return a;
}

bool ml_dg_log_scores(const struct ctx *x, uint32_t *heads, uint32_t *k)
{
    const struct ml_log_args *a = sized_args(x);
    const struct ml_arch *ar = x->su->arch;
    if (!a)
        return false;
    for (uint32_t kb = 4; kb >= 2; kb -= 2) {
        for (size_t i = 0; i <= sizeof(head_counts) / sizeof(head_counts[0]); i++) {
            uint32_t h = i ? head_counts[i - 1] : ar ? ar->n_heads : 0; /* the model's own first */
            /* batch <= 2^12, heads <= 2^9, s^2 <= 2^40, k <= 4: below 2^63 */
            uint64_t w = h <= 512 ? a->batch * h * a->seq_len * a->seq_len * kb : 0;
            if (h && near(x->req, w)) {
                *heads = h;
                *k = kb;
                return true;
            }
        }
    }
    return false;
}

bool ml_dg_log_logits(const struct ctx *x, uint64_t *vocab, uint32_t *k)
{
    const struct ml_log_args *a = sized_args(x);
    const struct ml_arch *ar = x->su->arch;
    if (!a)
        return false;
    for (uint32_t kb = 4; kb >= 2; kb -= 2) {
        for (size_t i = 0; i <= sizeof(vocabularies) / sizeof(vocabularies[0]); i++) {
            uint64_t v = i ? vocabularies[i - 1].vocab : ar ? ar->vocab : 0;
            if (v && near(x->req, a->batch * a->seq_len * v * kb)) {
                *vocab = v;
                *k = kb;
                return true;
            }
        }
    }
    return false;
}

bool ml_dg_log_shard(const struct ctx *x, uint32_t *world, uint32_t *k)
{
    const struct ml_log_args *a = x->su->args;
    uint64_t P = ml_dg_setup_params(x);
    uint32_t n = a ? ml_log_args_world(a) : 0;
    if (!P || n < 2 || !x->has_req || x->req < ML_GIB)
        return false;
    for (uint32_t kb = 2; kb <= 4; kb += 2) {
        if (near(x->req, P * kb / n)) {
            *world = n;
            *k = kb;
            return true;
        }
    }
    return false;
}

static uint64_t isqrt(uint64_t v)
{
    uint64_t r = 0;
    for (uint64_t bit = (uint64_t)1 << 62; bit; bit >>= 2) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
    }
    return r;
}

/* A hypothesis the log's settings give; the first of them is the likely one. */
static void log_hypothesis(struct ml_big_request *b, enum ml_request_what what, uint64_t count, uint64_t per,
                           uint32_t bytes)
{
    if (b->n >= ML_DIAG_MAX_HYPOTHESES)
        b->n--; /* the last generic one gives way */
    b->h[b->n] = (struct ml_request_hypothesis){what, count, per, bytes, false, true};
    if (b->likely < 0)
        b->likely = (int32_t)b->n;
    b->n++;
}

void ml_dg_big_request(struct ctx *x)
{
    struct ml_big_request *b = &x->out->big;
    memset(b, 0, sizeof(*b));
    b->likely = -1;
    if (!x->out->features.on[ML_EV_N_BIG_REQUEST])
        return;
    const struct ml_arch *ar = x->su->arch;
    const struct ml_oom_event *e = x->e;
    b->has = true;
    b->bytes = x->req;
    b->share_permille = (uint32_t)(x->req * 1000 / x->cap);
    /* Without the model every decomposition fits the message's rounding: they are hypotheses.
     * With it, a weight matrix of its shape (hidden x intermediate, vocab x hidden) within 1 %. */
    for (uint32_t k = 4; k >= 2; k -= 2) {
        if (ar && ar->vocab)
            hypothesis(b, ML_REQ_LOGITS, x->req / (ar->vocab * k), ar->vocab, k, true);
        for (size_t i = 0; i < sizeof(vocabularies) / sizeof(vocabularies[0]); i++)
            if (!ar || ar->vocab != vocabularies[i].vocab)
                hypothesis(b, ML_REQ_LOGITS, x->req / (vocabularies[i].vocab * k), vocabularies[i].vocab, k, false);
        for (size_t i = 0; i < sizeof(head_counts) / sizeof(head_counts[0]); i++)
            hypothesis(b, ML_REQ_SCORES, isqrt(x->req / (head_counts[i] * k)), head_counts[i], k,
                       ar && ar->n_heads == head_counts[i]);
    }
    int k = ml_dg_copy_match(x);
    hypothesis(b, ML_REQ_WEIGHTS, x->req / 2, 0, 2, k == 2);
    hypothesis(b, ML_REQ_WEIGHTS, x->req / 4, 0, 4, k == 4);
    const uint64_t shapes[][2] = {{ar ? ar->hidden : 0, ar ? ar->intermediate : 0},
                                  {ar ? ar->vocab : 0, ar ? ar->hidden : 0}};
    for (size_t i = 0; i < 2; i++)
        for (uint32_t kb = 2; kb <= 4 && shapes[i][0] && shapes[i][1]; kb += 2) {
            uint64_t w = shapes[i][0] * shapes[i][1] * kb;
            if (x->req >= w / 100 * 99 && x->req <= w / 100 * 101 + 2 * ML_MIB)
                hypothesis(b, ML_REQ_LAYER, shapes[i][0], shapes[i][1], kb, true);
        }
    /* The run settings the log prints size it: the reading they give is the likely one. */
    uint32_t heads, kb, world;
    uint64_t vocab;
    if (ml_dg_log_scores(x, &heads, &kb))
        log_hypothesis(b, ML_REQ_SCORES, x->su->args->seq_len, heads, kb);
    if (ml_dg_log_logits(x, &vocab, &kb))
        log_hypothesis(b, ML_REQ_LOGITS, x->su->args->batch * x->su->args->seq_len, vocab, kb);
    if (ml_dg_log_shard(x, &world, &kb))
        log_hypothesis(b, ML_REQ_WEIGHTS, ml_dg_setup_params(x) / world, world, kb);
    for (uint32_t i = 0; i < b->n; i++) {
        const struct ml_request_hypothesis *h = &b->h[i];
        bool by_phase = (h->what == ML_REQ_LOGITS && e->phase == ML_OPH_LOSS && h->bytes == 4) ||
                        (h->what == ML_REQ_SCORES && e->eager_frames) ||
                        (h->what == ML_REQ_WEIGHTS && (e->phase == ML_OPH_LOAD || e->phase == ML_OPH_OPTIMIZER_STEP ||
                                                       e->phase == ML_OPH_CHECKPOINT_SAVE));
        if (b->likely < 0 && (by_phase || h->model))
            b->likely = (int32_t)i;
    }
}
