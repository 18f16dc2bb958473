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
#include "memledger/ledger.h"
#include "memledger/train.h"
#include "memledger/units.h"
#include "i18n.h"

/* cmd_card_usage: generated from docs/cli/card.md (tools/gen_cli_docs.c). */

enum method { M_FULL, M_LORA, M_QLORA, M_INFER16, M_INFER4, M_COUNT };
static const char *const method_names[M_COUNT] = {"full fine-tune", "LoRA", "QLoRA 4-bit", "inference bf16",
                                                  "inference 4-bit"};

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
    if (a.stack != ML_STACK_DECODER)
        return false; /* the card is about decoder LLMs */
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
    const char *gpu;       /* our size */
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

static int parse_args(int argc, char **argv, const char **gpus, struct settings *st)
{
    static const struct option longopts[] = {
        {"gpus", required_argument, NULL, 'g'}, {"margin", required_argument, NULL, 'm'},
        {"seq", required_argument, NULL, 's'}, {"batch", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
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
        case 'h':
            fputs(_(cmd_card_usage), stdout);
            return -1;
        default:
            return ml_usage_error("card", _("unknown or incomplete option '%s'"), argv[optind - 1]);
        }
    }
    if (optind < argc)
        return ml_usage_error("card", _("unexpected argument '%s'"), argv[optind]);
    return ML_EXIT_OK;
}

/* One row per GPU: the largest built-in model each method fits. */
static int card_table(struct ml_buf *out, const char *gpus, const struct settings *st)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    char list[256];
    (void)snprintf(list, sizeof(list), "%s", gpus);
    char *save = NULL;
    int rc = ML_EXIT_OK;
    for (char *g = strtok_r(list, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
        struct ml_cluster cl;
        memset(&cl, 0, sizeof(cl));
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_gpu_resolve(g, &cl.gpu, &d) != ML_OK) {
            ml_diag_at(&d, "--gpus", 0, 0);
            ml_report(&d);
            rc = ML_EXIT_USAGE;
            break;
        }
        cl.gpus_per_node = cl.nodes = 1;
        ml_set_gib(&b, cl.gpu.capacity_bytes);
        ml_buf_addf(out, "| %s | %s |", g, b.buf);
        for (int m = 0; m < M_COUNT; m++) {
            const struct ml_catalog_entry *best = NULL;
            uint64_t best_params = 0, dev = 0;
            for (size_t i = 0; i < ml_catalog_count(); i++) {
                const struct ml_catalog_entry *e = ml_catalog_get(i);
                if (e->params > best_params && fits(e, (enum method)m, &cl, st, &dev)) {
                    best = e;
                    best_params = e->params;
                }
            }
            if (best) {
                ml_buf_reset(&b);
                ml_fmt_count_short(&b, best->params);
                ml_buf_addf(out, " %s (%s) |", best->name, b.buf);
            } else {
                ml_buf_adds(out, " none |");
            }
        }
        ml_buf_adds(out, "\n");
    }
    ml_buf_release(&b);
    return rc;
}

/* The seed handbook's card, cell by cell: where it differs, which assumption decides it. */
static void handbook_cells(struct ml_buf *out, const struct settings *st)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_buf_adds(out, _("\n## The seed handbook's card, cell by cell\n\n"
                        "| GPU | method | handbook | tested with | memledger needs | verdict | what decides it |\n"
                        "|---|---|---|---|---:|---|---|\n"));
    for (size_t k = 0; k < sizeof(claims) / sizeof(claims[0]); k++) {
        const struct claim *cl = &claims[k];
        struct ml_cluster gpu;
        memset(&gpu, 0, sizeof(gpu));
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_gpu_resolve(cl->gpu, &gpu.gpu, &d) != ML_OK)
            continue;
        gpu.gpus_per_node = gpu.nodes = 1;
        const struct ml_catalog_entry *e = ml_catalog_find(cl->reference);
        uint64_t dev = 0;
        if (!e)
            continue;
        bool ok = fits(e, cl->m, &gpu, st, &dev);
        ml_set_gib(&b, dev);
        ml_buf_addf(out, "| %s | %s | %s | %s | %s | %s | ", cl->gpu, method_names[cl->m], cl->text, cl->reference,
                    b.buf, ok ? _("true") : _("false"));
        if (ok) {
            ml_buf_adds(out, _("holds at these settings"));
        } else {
            /* Which single relaxation would make the cell true: a shorter sequence, a zero
             * margin (the full card), or 4-bit weights. */
            struct settings s2 = *st;
            s2.seq = 512;
            uint64_t d2 = 0;
            struct settings s3 = *st;
            s3.margin_permille = 0;
            uint64_t d3 = 0;
            if (cl->m < M_INFER16 && fits(e, cl->m, &gpu, &s2, &d2))
                ml_buf_adds(out, _("true only at sequence 512"));
            else if (fits(e, cl->m, &gpu, &s3, &d3))
                ml_buf_adds(out, _("true only with no margin left"));
            else if (cl->m == M_INFER16)
                ml_buf_adds(out, _("bf16 weights alone exceed the card: needs 4-bit"));
            else if (cl->m == M_FULL)
                ml_buf_adds(out, _("16 B/param of model states alone: needs ZeRO/FSDP across GPUs or offload"));
            else
                ml_buf_adds(out, _("does not fit one card at any sequence: needs more GPUs"));
        }
        ml_buf_adds(out, " |\n");
    }
    ml_buf_adds(out, _("\nThe handbook leaves 20% for \"activations and framework overhead\"; memledger counts "
                        "activations, logits, allocator reserve and the CUDA context explicitly, so its margin "
                        "is only what you want free.\n"));
    ml_buf_release(&b);
}

int cmd_card(int argc, char **argv)
{
    const char *gpus = "24G,48G,80G";
    struct settings st = {2048, 1, 100};
    int rc = parse_args(argc, argv, &gpus, &st);
    if (rc < 0)
        return ML_EXIT_OK;
    if (rc != ML_EXIT_OK)
        return rc;

    struct ml_buf out;
    ml_buf_init(&out, 0);
    ml_buf_addf(&out, _("# What each GPU can train and serve\n\n"
                        "Largest built-in model that fits one GPU with %u%% of it left free. Training: micro-batch %llu, "
                        "sequence %llu, LLaMA-Factory defaults (bf16 autocast, sdpa, gradient checkpointing, fused AdamW); "
                        "LoRA and QLoRA r=16 on every linear layer. Inference: transformers generate, batch 1, 4096 tokens.\n\n"),
                st.margin_permille / 10, (unsigned long long)st.batch, (unsigned long long)st.seq);
    ml_buf_adds(&out, "| GPU | usable |");
    for (int m = 0; m < M_COUNT; m++)
        ml_buf_addf(&out, " %s |", method_names[m]);
    ml_buf_adds(&out, "\n|---|---:|");
    for (int m = 0; m < M_COUNT; m++)
        ml_buf_adds(&out, "---|");
    ml_buf_adds(&out, "\n");

    rc = card_table(&out, gpus, &st);
    if (rc == ML_EXIT_OK)
        handbook_cells(&out, &st);
    if (rc == ML_EXIT_OK && ml_write_stdout(&out) != ML_OK)
        rc = ML_EXIT_USAGE;
    ml_buf_release(&out);
    return rc;
}
