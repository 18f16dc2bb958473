/*
 * cmd_card.c - memledger card: what each GPU size can train and serve, from the ledger, and how
 * the seed handbook's card compares cell by cell.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/card.h"
#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/train.h"
#include "memledger/units.h"
#include "i18n.h"

/* cmd_card_usage: generated from docs/cli/card.md (tools/gen_cli_docs.c). */

/* Device bytes of a model under a method on one GPU of capacity cap. */
static bool device_bytes(const struct ml_catalog_entry *e, enum ml_card_method m, const struct ml_cluster *c,
                         const struct ml_card_settings *st, uint64_t *dev)
{
    static struct ml_arch a;
    static struct ml_inventory inv;
    static struct ml_ledger l;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_catalog_arch(e, &a, &d) != ML_OK || ml_inventory_build(&a, &inv, &d) != ML_OK)
        return false;
    if (a.stack != ML_STACK_DECODER || a.vision.kind != ML_VISION_NONE)
        return false; /* the card is about text decoder LLMs (a VLM's frozen tower would rank it by
                         parameters it does not train) */
    if (a.wq.method == ML_WQ_AWQ || a.wq.method == ML_WQ_GPTQ || a.wq.method == ML_WQ_BNB4 || a.wq.method == ML_WQ_BNB8)
        return false; /* a quantized upload of a base model the card already ranks */
    if (m >= ML_CARD_INFER16) {
        struct ml_infer s;
        ml_infer_defaults(&s);
        s.context = 4096;
        s.dequantize = true; /* the columns are bf16 and nf4, whatever format the checkpoint ships */
        if (m == ML_CARD_INFER4) {
            s.quant = ML_QUANT_NF4;
            s.double_quant = true;
        }
        struct ml_serve sv;
        if (ml_ledger_infer(&a, &inv, &s, c, &l, &sv, &d) != ML_OK)
            return false;
        *dev = l.device_used;
        return true;
    }
    static struct ml_train t;
    ml_train_defaults(&t, ML_FW_LLAMAFACTORY);
    t.method = m == ML_CARD_FULL ? ML_METHOD_FULL : m == ML_CARD_LORA ? ML_METHOD_LORA : ML_METHOD_QLORA;
    if (m == ML_CARD_QLORA)
        t.quant_bits = 4;
    t.lora_rank = 16;
    t.seq_len = st->seq;
    t.micro_batch = st->batch;
    if (ml_ledger_train(&a, &inv, &t, c, NULL, &l, &d) != ML_OK)
        return false;
    *dev = l.device_used;
    return true;
}

static bool fits(const struct ml_catalog_entry *e, enum ml_card_method m, const struct ml_cluster *c,
                 const struct ml_card_settings *st, uint64_t *dev)
{
    uint64_t cap = c->gpu.capacity_bytes;
    uint64_t limit = cap - cap / 1000 * st->margin_permille;
    return device_bytes(e, m, c, st, dev) && *dev <= limit;
}

/* The handbook's card (examples/seed-handbook.md), each cell as a claimed largest model. */
static const struct ml_card_claim claims[] = {
    {"24G", ML_CARD_FULL, "<= 2B", "gemma-2b"},
    {"24G", ML_CARD_LORA, "<= 7B", "llama-2-7b"},
    {"24G", ML_CARD_QLORA, "<= 13B (tight)", "llama-2-13b"},
    {"24G", ML_CARD_INFER16, "<= 13B bf16", "llama-2-13b"},
    {"48G", ML_CARD_FULL, "<= 4B", "qwen3-4b"},
    {"48G", ML_CARD_LORA, "<= 14B", "qwen2.5-14b"},
    {"48G", ML_CARD_QLORA, "<= 30B", "yi-34b"},
    {"48G", ML_CARD_INFER4, "<= 30B 4-bit", "yi-34b"},
    {"80G", ML_CARD_FULL, "<= 13B", "llama-2-13b"},
    {"80G", ML_CARD_LORA, "<= 70B LoRA", "llama-2-70b"},
    {"80G", ML_CARD_QLORA, "70B", "llama-2-70b"},
    {"80G", ML_CARD_INFER4, "70B 4-bit", "llama-2-70b"},
    {"80G", ML_CARD_INFER16, "13B bf16", "llama-2-13b"},
};

static int parse_args(int argc, char **argv, const char **gpus, struct ml_card_settings *st, bool *json)
{
    static const struct option longopts[] = {
        {"gpus", required_argument, NULL, 'g'},
        {"margin", required_argument, NULL, 'm'},
        {"seq", required_argument, NULL, 's'},
        {"batch", required_argument, NULL, 'b'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': *gpus = optarg; break;
        case 'm': {
            uint32_t ip = 0;
            const char *p = optarg;
            int nd = 0;
            while (*p >= '0' && *p <= '9' && ip < 1000) {
                ip = ip * 10 + (uint32_t)(*p++ - '0');
                nd++;
            }
            if (*p == '%')
                p++;
            if (*p || !nd || ip >= 100)
                return ml_usage_error("card", _("--margin must be a whole percentage below 100, got '%s'"), optarg);
            st->margin_permille = ip * 10;
            break;
        }
        case 's':
            if (!ml_opt_u64("card", "--seq", optarg, 1, 1u << 24, &st->seq))
                return ML_EXIT_USAGE;
            break;
        case 'b':
            if (!ml_opt_u64("card", "--batch", optarg, 1, 1u << 16, &st->batch))
                return ML_EXIT_USAGE;
            break;
        case 'j': *json = true; break;
        case 'h': fputs(_(cmd_card_usage), stdout); return -1;
        default: return ml_usage_error("card", _("unknown or incomplete option '%s'"), argv[optind - 1]);
        }
    }
    if (optind < argc)
        return ml_usage_error("card", _("unexpected argument '%s'"), argv[optind]);
    return ML_EXIT_OK;
}

/* ---- the card, computed ------------------------------------------------------------------- */

#define N_CLAIMS (sizeof(claims) / sizeof(claims[0]))
_Static_assert(N_CLAIMS <= ML_CARD_MAX_CLAIMS, "struct ml_card holds every claim");

/* Which single relaxation would make a false cell true: a shorter sequence, a zero margin (the
 * full card), or 4-bit weights. */
static enum ml_card_why decide(const struct ml_card_claim *cl, const struct ml_catalog_entry *e,
                               const struct ml_cluster *gpu, const struct ml_card_settings *st)
{
    struct ml_card_settings s2 = *st, s3 = *st;
    s2.seq = 512;
    s3.margin_permille = 0;
    uint64_t d2 = 0, d3 = 0;
    if (cl->m < ML_CARD_INFER16 && fits(e, cl->m, gpu, &s2, &d2))
        return ML_CARD_SEQ512;
    if (fits(e, cl->m, gpu, &s3, &d3))
        return ML_CARD_NO_MARGIN;
    return cl->m == ML_CARD_INFER16 ? ML_CARD_NEEDS_4BIT
           : cl->m == ML_CARD_FULL  ? ML_CARD_NEEDS_SHARDING
                                    : ML_CARD_NEEDS_GPUS;
}

/* The largest built-in model each method fits on each GPU, then the handbook's cells. */
static int card_compute(const char *gpus, struct ml_card *k)
{
    char list[256];
    (void)snprintf(list, sizeof(list), "%s", gpus);
    char *save = NULL;
    for (char *g = strtok_r(list, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
        if (k->n_gpus >= ML_CARD_MAX_GPUS)
            return ml_usage_error("card", _("at most %d GPUs in --gpus"), ML_CARD_MAX_GPUS);
        struct ml_cluster cl;
        memset(&cl, 0, sizeof(cl));
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_gpu_resolve(g, &cl.gpu, &d) != ML_OK) {
            ml_diag_at(&d, "--gpus", 0, 0);
            ml_report(&d);
            return ML_EXIT_USAGE;
        }
        cl.gpus_per_node = cl.nodes = 1;
        size_t r = k->n_gpus++;
        (void)snprintf(k->gpu[r].arg, sizeof(k->gpu[r].arg), "%s", g);
        k->gpu[r].capacity = cl.gpu.capacity_bytes;
        for (int m = 0; m < ML_CARD_METHODS; m++) {
            uint64_t dev = 0;
            for (size_t i = 0; i < ml_catalog_count(); i++) {
                const struct ml_catalog_entry *e = ml_catalog_get(i);
                const struct ml_catalog_entry *b = k->gpu[r].best[m];
                if ((!b || e->params > b->params) && fits(e, (enum ml_card_method)m, &cl, &k->st, &dev)) {
                    k->gpu[r].best[m] = e;
                    k->gpu[r].dev[m] = dev;
                }
            }
        }
    }
    k->n_cells = N_CLAIMS;
    for (size_t c = 0; c < N_CLAIMS; c++) {
        const struct ml_card_claim *cl = &claims[c];
        struct ml_cluster gpu;
        memset(&gpu, 0, sizeof(gpu));
        struct ml_diag d;
        ml_diag_init(&d);
        const struct ml_catalog_entry *e = ml_catalog_find(cl->reference);
        if (!e || ml_gpu_resolve(cl->gpu, &gpu.gpu, &d) != ML_OK)
            continue;
        gpu.gpus_per_node = gpu.nodes = 1;
        k->cell[c].cl = cl;
        k->cell[c].why = fits(e, cl->m, &gpu, &k->st, &k->cell[c].dev) ? ML_CARD_HOLDS : decide(cl, e, &gpu, &k->st);
    }
    return ML_EXIT_OK;
}

int cmd_card(int argc, char **argv)
{
    const char *gpus = "24G,48G,80G";
    static struct ml_card k;
    memset(&k, 0, sizeof(k));
    k.st = (struct ml_card_settings){2048, 1, 100};
    bool json = false;
    int rc = parse_args(argc, argv, &gpus, &k.st, &json);
    if (rc < 0)
        return ML_EXIT_OK;
    if (rc != ML_EXIT_OK)
        return rc;
    rc = card_compute(gpus, &k);
    if (rc != ML_EXIT_OK)
        return rc;
    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status st = ML_OK;
    if (json)
        st = ml_render_card_json(&out, &k);
    else
        ml_render_card_text(&out, &k);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    return st == ML_OK ? ML_EXIT_OK : ML_EXIT_USAGE;
}
