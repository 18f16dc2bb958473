/*
 * cmd_card.c - memledger card: what each GPU size can train and serve, from the ledger, and how
 * the seed handbook's card compares cell by cell.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/json.h"
#include "memledger/ledger.h"
#include "memledger/train.h"
#include "memledger/units.h"
#include "i18n.h"

/* cmd_card_usage: generated from docs/cli/card.md (tools/gen_cli_docs.c). */

enum method { M_FULL, M_LORA, M_QLORA, M_INFER16, M_INFER4, M_COUNT };
static const char *const method_names[M_COUNT] = {N_("full fine-tune"), N_("LoRA"), N_("QLoRA 4-bit"),
                                                  N_("inference bf16"), N_("inference 4-bit")};

struct settings {
    uint64_t seq, batch;
    uint32_t margin_permille;
};

/* Device bytes of a model under a method on one GPU of capacity cap. */
static bool device_bytes(const struct ml_catalog_entry *e, enum method m, const struct ml_cluster *c,
                         const struct settings *st, uint64_t *dev)
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
    if (m >= M_INFER16) {
        struct ml_infer s;
        ml_infer_defaults(&s);
        s.context = 4096;
        s.dequantize = true; /* the columns are bf16 and nf4, whatever format the checkpoint ships */
        if (m == M_INFER4) {
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
    t.method = m == M_FULL ? ML_METHOD_FULL : m == M_LORA ? ML_METHOD_LORA : ML_METHOD_QLORA;
    if (m == M_QLORA)
        t.quant_bits = 4;
    t.lora_rank = 16;
    t.seq_len = st->seq;
    t.micro_batch = st->batch;
    if (ml_ledger_train(&a, &inv, &t, c, NULL, &l, &d) != ML_OK)
        return false;
    *dev = l.device_used;
    return true;
}

static bool fits(const struct ml_catalog_entry *e, enum method m, const struct ml_cluster *c, const struct settings *st,
                 uint64_t *dev)
{
    uint64_t cap = c->gpu.capacity_bytes;
    uint64_t limit = cap - cap / 1000 * st->margin_permille;
    return device_bytes(e, m, c, st, dev) && *dev <= limit;
}

/* The handbook's card (examples/seed-handbook.md), each cell as a claimed largest model. */
struct claim {
    const char *gpu; /* our size */
    enum method m;
    const char *text;      /* as the handbook prints it */
    const char *reference; /* the catalog model of that size we test it with */
};

static const struct claim claims[] = {
    {"24G", M_FULL, "<= 2B", "gemma-2b"},
    {"24G", M_LORA, "<= 7B", "llama-2-7b"},
    {"24G", M_QLORA, "<= 13B (tight)", "llama-2-13b"},
    {"24G", M_INFER16, "<= 13B bf16", "llama-2-13b"},
    {"48G", M_FULL, "<= 4B", "qwen3-4b"},
    {"48G", M_LORA, "<= 14B", "qwen2.5-14b"},
    {"48G", M_QLORA, "<= 30B", "yi-34b"},
    {"48G", M_INFER4, "<= 30B 4-bit", "yi-34b"},
    {"80G", M_FULL, "<= 13B", "llama-2-13b"},
    {"80G", M_LORA, "<= 70B LoRA", "llama-2-70b"},
    {"80G", M_QLORA, "70B", "llama-2-70b"},
    {"80G", M_INFER4, "70B 4-bit", "llama-2-70b"},
    {"80G", M_INFER16, "13B bf16", "llama-2-13b"},
};

static int parse_args(int argc, char **argv, const char **gpus, struct settings *st, bool *json)
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

#define CARD_MAX_GPUS 16
#define N_CLAIMS      (sizeof(claims) / sizeof(claims[0]))

/* What decides a handbook cell (the JSON's decided_by). */
enum why { W_HOLDS, W_SEQ512, W_NO_MARGIN, W_NEEDS_4BIT, W_NEEDS_SHARDING, W_NEEDS_GPUS };
static const char *const why_ids[] = {"holds",      "sequence_512",   "no_margin",
                                      "needs_4bit", "needs_sharding", "needs_more_gpus"};
static const char *const method_ids[M_COUNT] = {"full", "lora", "qlora", "infer_bf16", "infer_4bit"};

struct card {
    struct settings st;
    size_t n_gpus;
    struct {
        char arg[48]; /* as given in --gpus */
        uint64_t capacity;
        const struct ml_catalog_entry *best[M_COUNT]; /* NULL: none fits */
        uint64_t dev[M_COUNT];                        /* the best model's device bytes */
    } gpu[CARD_MAX_GPUS];
    struct {
        const struct claim *cl; /* NULL: the reference model or GPU is unknown */
        uint64_t dev;
        enum why why;
    } cell[N_CLAIMS];
};

/* Which single relaxation would make a false cell true: a shorter sequence, a zero margin (the
 * full card), or 4-bit weights. */
static enum why decide(const struct claim *cl, const struct ml_catalog_entry *e, const struct ml_cluster *gpu,
                       const struct settings *st)
{
    struct settings s2 = *st, s3 = *st;
    s2.seq = 512;
    s3.margin_permille = 0;
    uint64_t d2 = 0, d3 = 0;
    if (cl->m < M_INFER16 && fits(e, cl->m, gpu, &s2, &d2))
        return W_SEQ512;
    if (fits(e, cl->m, gpu, &s3, &d3))
        return W_NO_MARGIN;
    return cl->m == M_INFER16 ? W_NEEDS_4BIT : cl->m == M_FULL ? W_NEEDS_SHARDING : W_NEEDS_GPUS;
}

/* The largest built-in model each method fits on each GPU, then the handbook's cells. */
static int card_compute(const char *gpus, struct card *k)
{
    char list[256];
    (void)snprintf(list, sizeof(list), "%s", gpus);
    char *save = NULL;
    for (char *g = strtok_r(list, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
        if (k->n_gpus >= CARD_MAX_GPUS)
            return ml_usage_error("card", _("at most %d GPUs in --gpus"), CARD_MAX_GPUS);
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
        for (int m = 0; m < M_COUNT; m++) {
            uint64_t dev = 0;
            for (size_t i = 0; i < ml_catalog_count(); i++) {
                const struct ml_catalog_entry *e = ml_catalog_get(i);
                const struct ml_catalog_entry *b = k->gpu[r].best[m];
                if ((!b || e->params > b->params) && fits(e, (enum method)m, &cl, &k->st, &dev)) {
                    k->gpu[r].best[m] = e;
                    k->gpu[r].dev[m] = dev;
                }
            }
        }
    }
    for (size_t c = 0; c < N_CLAIMS; c++) {
        const struct claim *cl = &claims[c];
        struct ml_cluster gpu;
        memset(&gpu, 0, sizeof(gpu));
        struct ml_diag d;
        ml_diag_init(&d);
        const struct ml_catalog_entry *e = ml_catalog_find(cl->reference);
        if (!e || ml_gpu_resolve(cl->gpu, &gpu.gpu, &d) != ML_OK)
            continue;
        gpu.gpus_per_node = gpu.nodes = 1;
        k->cell[c].cl = cl;
        k->cell[c].why = fits(e, cl->m, &gpu, &k->st, &k->cell[c].dev) ? W_HOLDS : decide(cl, e, &gpu, &k->st);
    }
    return ML_EXIT_OK;
}

/* ---- the card as Markdown and as JSON -------------------------------------------------------- */

static const char *why_text(enum why w)
{
    switch (w) {
    case W_HOLDS: return _("holds at these settings");
    case W_SEQ512: return _("true only at sequence 512");
    case W_NO_MARGIN: return _("true only with no margin left");
    case W_NEEDS_4BIT: return _("bf16 weights alone exceed the card: needs 4-bit");
    case W_NEEDS_SHARDING: return _("16 B/param of model states alone: needs ZeRO/FSDP across GPUs or offload");
    case W_NEEDS_GPUS: return _("does not fit one card at any sequence: needs more GPUs");
    }
    return "";
}

static void card_markdown(struct ml_buf *out, const struct card *k)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_buf_addf(
        out,
        _("# What each GPU can train and serve\n\n"
          "Largest built-in model that fits one GPU with %u%% of it left free. Training: micro-batch %llu, "
          "sequence %llu, LLaMA-Factory defaults (bf16 autocast, sdpa, gradient checkpointing, fused AdamW); "
          "LoRA and QLoRA r=16 on every linear layer. Inference: transformers generate, batch 1, 4096 tokens.\n\n"),
        k->st.margin_permille / 10, (unsigned long long)k->st.batch, (unsigned long long)k->st.seq);
    ml_buf_addf(out, "| %s | %s |", _("GPU"), _("usable"));
    for (int m = 0; m < M_COUNT; m++)
        ml_buf_addf(out, " %s |", _(method_names[m]));
    ml_buf_adds(out, "\n|---|---:|");
    for (int m = 0; m < M_COUNT; m++)
        ml_buf_adds(out, "---|");
    ml_buf_adds(out, "\n");
    for (size_t r = 0; r < k->n_gpus; r++) {
        ml_set_gib(&b, k->gpu[r].capacity);
        ml_buf_addf(out, "| %s | %s |", k->gpu[r].arg, b.buf);
        for (int m = 0; m < M_COUNT; m++) {
            const struct ml_catalog_entry *e = k->gpu[r].best[m];
            ml_buf_reset(&b);
            if (e)
                ml_fmt_count_short(&b, e->params);
            if (e)
                ml_buf_addf(out, " %s (%s) |", e->name, b.buf);
            else
                ml_buf_addf(out, " %s |", _("none"));
        }
        ml_buf_adds(out, "\n");
    }
    ml_buf_addf(out, "\n## %s\n\n| %s | %s | %s | %s | %s | %s | %s |\n|---|---|---|---|---:|---|---|\n",
                _("The seed handbook's card, cell by cell"), _("GPU"), _("method"), _("handbook"), _("tested with"),
                _("memledger needs"), _("verdict"), _("what decides it"));
    for (size_t c = 0; c < N_CLAIMS; c++) {
        const struct claim *cl = k->cell[c].cl;
        if (!cl)
            continue;
        ml_set_gib(&b, k->cell[c].dev);
        ml_buf_addf(out, "| %s | %s | %s | %s | %s | %s | %s |\n", cl->gpu, _(method_names[cl->m]), cl->text,
                    cl->reference, b.buf, k->cell[c].why == W_HOLDS ? _("true") : _("false"), why_text(k->cell[c].why));
    }
    /* xgettext:no-c-format */
    ml_buf_adds(out, _("\nThe handbook leaves 20% for \"activations and framework overhead\"; memledger counts "
                       "activations, logits, allocator reserve and the CUDA context explicitly, so its margin "
                       "is only what you want free.\n"));
    ml_buf_release(&b);
}

/* docs/json.md, "card". */
static enum ml_status card_json(struct ml_buf *out, const struct card *k)
{
    struct ml_json j;
    ml_json_init(&j, out);
    ml_json_document_begin(&j);
    ml_json_key(&j, "settings");
    ml_json_object_begin(&j);
    ml_json_ku64(&j, "seq_len", k->st.seq);
    ml_json_ku64(&j, "micro_batch", k->st.batch);
    ml_json_key(&j, "margin");
    ml_json_fixed(&j, k->st.margin_permille, 3);
    ml_json_ku64(&j, "lora_rank", 16);
    ml_json_ku64(&j, "infer_context", 4096);
    ml_json_object_end(&j);
    ml_json_key(&j, "gpus");
    ml_json_array_begin(&j);
    for (size_t r = 0; r < k->n_gpus; r++) {
        ml_json_object_begin(&j);
        ml_json_kstr(&j, "gpu", k->gpu[r].arg);
        ml_json_ku64(&j, "capacity_bytes", k->gpu[r].capacity);
        ml_json_key(&j, "largest");
        ml_json_object_begin(&j);
        for (int m = 0; m < M_COUNT; m++) {
            const struct ml_catalog_entry *e = k->gpu[r].best[m];
            ml_json_key(&j, method_ids[m]);
            if (!e) {
                ml_json_null(&j);
                continue;
            }
            ml_json_object_begin(&j);
            ml_json_kstr(&j, "model", e->name);
            ml_json_ku64(&j, "params", e->params);
            ml_json_ku64(&j, "device_used_bytes", k->gpu[r].dev[m]);
            ml_json_object_end(&j);
        }
        ml_json_object_end(&j);
        ml_json_object_end(&j);
    }
    ml_json_array_end(&j);
    ml_json_key(&j, "handbook");
    ml_json_array_begin(&j);
    for (size_t c = 0; c < N_CLAIMS; c++) {
        const struct claim *cl = k->cell[c].cl;
        if (!cl)
            continue;
        ml_json_object_begin(&j);
        ml_json_kstr(&j, "gpu", cl->gpu);
        ml_json_kstr(&j, "method", method_ids[cl->m]);
        ml_json_kstr(&j, "claim", cl->text);
        ml_json_kstr(&j, "reference", cl->reference);
        ml_json_ku64(&j, "device_used_bytes", k->cell[c].dev);
        ml_json_kbool(&j, "holds", k->cell[c].why == W_HOLDS);
        ml_json_kstr(&j, "decided_by", why_ids[k->cell[c].why]);
        ml_json_object_end(&j);
    }
    ml_json_array_end(&j);
    ml_json_object_end(&j);
    return ml_json_finish(&j);
}

int cmd_card(int argc, char **argv)
{
    const char *gpus = "24G,48G,80G";
    static struct card k;
    memset(&k, 0, sizeof(k));
    k.st = (struct settings){2048, 1, 100};
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
        st = card_json(&out, &k);
    else
        card_markdown(&out, &k);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    return st == ML_OK ? ML_EXIT_OK : ML_EXIT_USAGE;
}
