/*
 * card.c - `memledger card` computed: for each GPU size and method the largest built-in model the
 * training or inference ledger fits on one card, then the seed handbook's cells (include/memledger/
 * card.h; lib/render/card_report.c writes it). Config layer: it reads the built-in catalogs.
 */
#include "memledger/card.h"

#include <stdio.h>
#include <string.h>

#include "memledger/gpu.h"
#include "memledger/infer.h"
#include "i18n.h"

/* Device bytes of a model under a method on one GPU of capacity cap. */
static bool device_bytes(const struct ml_catalog_entry *e, enum ml_card_method m, const struct ml_cluster *c,
                         const struct ml_card_settings *st, struct ml_card_scratch *s, uint64_t *dev)
{
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_catalog_arch(e, &s->a, &d) != ML_OK || ml_inventory_build(&s->a, &s->inv, &d) != ML_OK)
        return false;
    if (s->a.stack != ML_STACK_DECODER || s->a.vision.kind != ML_VISION_NONE)
        return false; /* the card is about text decoder LLMs (a VLM's frozen tower would rank it by
                         parameters it does not train) */
    enum ml_wq_method wq = s->a.wq.method;
    if (wq == ML_WQ_AWQ || wq == ML_WQ_GPTQ || wq == ML_WQ_BNB4 || wq == ML_WQ_BNB8)
        return false; /* a quantized upload of a base model the card already ranks */
    if (m >= ML_CARD_INFER16) {
        struct ml_infer in;
        ml_infer_defaults(&in);
        in.context = 4096;
        in.dequantize = true; /* the columns are bf16 and nf4, whatever format the checkpoint ships */
        if (m == ML_CARD_INFER4) {
            in.quant = ML_QUANT_NF4;
            in.double_quant = true;
        }
        struct ml_serve sv;
        if (ml_ledger_infer(&s->a, &s->inv, &in, c, &s->l, &sv, &d) != ML_OK)
            return false;
        *dev = s->l.device_used;
        return true;
    }
    struct ml_train *t = &s->t;
    ml_train_defaults(t, ML_FW_LLAMAFACTORY);
    t->method = m == ML_CARD_FULL ? ML_METHOD_FULL : m == ML_CARD_LORA ? ML_METHOD_LORA : ML_METHOD_QLORA;
    if (m == ML_CARD_QLORA)
        t->quant_bits = 4;
    t->lora_rank = 16;
    t->seq_len = st->seq;
    t->micro_batch = st->batch;
    if (ml_ledger_train(&s->a, &s->inv, t, c, NULL, &s->l, &d) != ML_OK)
        return false;
    *dev = s->l.device_used;
    return true;
}

bool ml_card_fits(const struct ml_catalog_entry *e, enum ml_card_method m, const struct ml_cluster *c,
                  const struct ml_card_settings *st, struct ml_card_scratch *s, uint64_t *dev)
{
    uint64_t cap = c->gpu.capacity_bytes;
    uint64_t limit = cap - cap / 1000 * st->margin_permille;
    return device_bytes(e, m, c, st, s, dev) && *dev <= limit;
}

/* The handbook's card (the seed handbook's quick-reference card, docs/cli/card.md), each cell as a
 * claimed largest model, on the card the handbook names for its column: "24 GB (4090)", "48 GB
 * (A6000 / 2x4090)", "80 GB (A100)". */
static const struct ml_card_claim claims[] = {
    {"rtx4090", ML_CARD_FULL, "<= 2B", "gemma-2b"},
    {"rtx4090", ML_CARD_LORA, "<= 7B", "llama-2-7b"},
    {"rtx4090", ML_CARD_QLORA, "<= 13B (tight)", "llama-2-13b"},
    {"rtx4090", ML_CARD_INFER16, "<= 13B bf16", "llama-2-13b"},
    {"a6000", ML_CARD_FULL, "<= 4B", "qwen3-4b"},
    {"a6000", ML_CARD_LORA, "<= 14B", "qwen2.5-14b"},
    {"a6000", ML_CARD_QLORA, "<= 30B", "yi-34b"},
    {"a6000", ML_CARD_INFER4, "<= 30B 4-bit", "yi-34b"},
    {"a100-80g", ML_CARD_FULL, "<= 13B", "llama-2-13b"},
    {"a100-80g", ML_CARD_LORA, "<= 70B LoRA", "llama-2-70b"},
    {"a100-80g", ML_CARD_QLORA, "70B", "llama-2-70b"},
    {"a100-80g", ML_CARD_INFER4, "70B 4-bit", "llama-2-70b"},
    {"a100-80g", ML_CARD_INFER16, "13B bf16", "llama-2-13b"},
};

#define N_CLAIMS (sizeof(claims) / sizeof(claims[0]))
_Static_assert(N_CLAIMS <= ML_CARD_MAX_CLAIMS, "struct ml_card holds every claim");

/* Which single relaxation would make a false cell true: a shorter sequence, a zero margin (the
 * full card), or 4-bit weights. */
static enum ml_card_why decide(const struct ml_card_claim *cl, const struct ml_catalog_entry *e,
                               const struct ml_cluster *gpu, const struct ml_card_settings *st,
                               struct ml_card_scratch *s)
{
    struct ml_card_settings s2 = *st, s3 = *st;
    s2.seq = 512;
    s3.margin_permille = 0;
    uint64_t d2 = 0, d3 = 0;
    if (cl->m < ML_CARD_INFER16 && ml_card_fits(e, cl->m, gpu, &s2, s, &d2))
        return ML_CARD_SEQ512;
    if (ml_card_fits(e, cl->m, gpu, &s3, s, &d3))
        return ML_CARD_NO_MARGIN;
    return cl->m == ML_CARD_INFER16 ? ML_CARD_NEEDS_4BIT
           : cl->m == ML_CARD_FULL  ? ML_CARD_NEEDS_SHARDING
                                    : ML_CARD_NEEDS_GPUS;
}

/* One GPU row: the largest catalog model each method fits. */
static void card_gpu(struct ml_card *k, size_t r, const struct ml_cluster *cl, struct ml_card_scratch *s)
{
    for (int m = 0; m < ML_CARD_METHODS; m++) {
        uint64_t dev = 0;
        for (size_t i = 0; i < ml_catalog_count(); i++) {
            const struct ml_catalog_entry *e = ml_catalog_get(i);
            const struct ml_catalog_entry *b = k->gpu[r].best[m];
            if ((!b || e->params > b->params) && ml_card_fits(e, (enum ml_card_method)m, cl, &k->st, s, &dev)) {
                k->gpu[r].best[m] = e;
                k->gpu[r].dev[m] = dev;
            }
        }
    }
}

/* The card a resolved --gpus item stands for: a catalog card by its name; a size (no vendor) by the
 * card ml_gpu_resolve read it as, the one of that marketed size with that usable capacity. */
static void card_name(const struct ml_gpu *g, char *out, size_t n)
{
    out[0] = '\0';
    if (g->vendor != ML_VENDOR_UNKNOWN) {
        (void)snprintf(out, n, "%s", g->name);
        return;
    }
    for (size_t i = 0; i < ml_gpu_catalog_count(); i++) {
        const struct ml_gpu_spec *sp = ml_gpu_catalog_get(i);
        bool m;
        if (sp->nominal_bytes == g->nominal_bytes && ml_gpu_spec_capacity(sp, &m) == g->capacity_bytes) {
            (void)snprintf(out, n, "%s", sp->name);
            return;
        }
    }
}

/* The next GPU row, for g as given. */
static enum ml_status card_add_gpu(struct ml_card *k, const char *g, struct ml_card_scratch *s, struct ml_diag *d)
{
    if (k->n_gpus >= ML_CARD_MAX_GPUS)
        return ml_diag_set(d, ML_ERR_TOOBIG, _("at most %d GPUs in --gpus"), ML_CARD_MAX_GPUS);
    struct ml_cluster cl;
    memset(&cl, 0, sizeof(cl));
    enum ml_status st = ml_gpu_resolve(g, &cl.gpu, d);
    if (st != ML_OK) {
        ml_diag_at(d, "--gpus", 0, 0);
        return st;
    }
    cl.gpus_per_node = cl.nodes = 1;
    size_t r = k->n_gpus++;
    (void)snprintf(k->gpu[r].arg, sizeof(k->gpu[r].arg), "%s", g);
    k->gpu[r].nominal = cl.gpu.nominal_bytes;
    k->gpu[r].capacity = cl.gpu.capacity_bytes;
    card_name(&cl.gpu, k->gpu[r].card, sizeof(k->gpu[r].card));
    card_gpu(k, r, &cl, s);
    return ML_OK;
}

enum ml_status ml_card_compute(struct ml_card *k, const char *gpus, struct ml_card_scratch *s, struct ml_diag *d)
{
    char list[256];
    (void)snprintf(list, sizeof(list), "%s", gpus);
    for (char *g = list; *g;) { /* empty items are skipped */
        size_t n = strcspn(g, ",");
        char *next = g + n + (g[n] == ',');
        g[n] = '\0';
        enum ml_status st = n ? card_add_gpu(k, g, s, d) : ML_OK;
        if (st != ML_OK)
            return st;
        g = next;
    }
    k->n_cells = N_CLAIMS;
    for (size_t c = 0; c < N_CLAIMS; c++) {
        const struct ml_card_claim *cl = &claims[c];
        struct ml_cluster gpu;
        memset(&gpu, 0, sizeof(gpu));
        struct ml_diag dg;
        ml_diag_init(&dg);
        const struct ml_catalog_entry *e = ml_catalog_find(cl->reference);
        if (!e || ml_gpu_resolve(cl->gpu, &gpu.gpu, &dg) != ML_OK)
            continue;
        gpu.gpus_per_node = gpu.nodes = 1;
        k->cell[c].cl = cl;
        k->cell[c].nominal = gpu.gpu.nominal_bytes;
        k->cell[c].why =
            ml_card_fits(e, cl->m, &gpu, &k->st, s, &k->cell[c].dev) ? ML_CARD_HOLDS : decide(cl, e, &gpu, &k->st, s);
    }
    return ML_OK;
}
