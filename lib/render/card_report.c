/*
 * card_report.c - `memledger card` as Markdown and as JSON (docs/cli/card.md, docs/json.md "card"):
 * the largest model per GPU and method, then the seed handbook's cells with what decides each.
 */
#include "memledger/card.h"

#include <stdio.h>
#include <string.h>

#include "memledger/json.h"
#include "memledger/render.h"
#include "memledger/report.h"
#include "memledger/units.h"

#include "i18n.h"

static const char *const method_names[ML_CARD_METHODS] = {N_("full fine-tune"), N_("LoRA"), N_("QLoRA 4-bit"),
                                                          N_("inference bf16"), N_("inference 4-bit")};
static const char *const method_ids[ML_CARD_METHODS] = {"full", "lora", "qlora", "infer_bf16", "infer_4bit"};
static const char *const why_ids[] = {"holds",      "sequence_512",   "no_margin",
                                      "needs_4bit", "needs_sharding", "needs_more_gpus"};

static const char *why_text(enum ml_card_why w)
{
    switch (w) {
    case ML_CARD_HOLDS: return _("holds at these settings");
    case ML_CARD_SEQ512: return _("true only at sequence 512");
    case ML_CARD_NO_MARGIN: return _("true only with no margin left");
    case ML_CARD_NEEDS_4BIT: return _("bf16 weights alone exceed the card: needs 4-bit");
    case ML_CARD_NEEDS_SHARDING: return _("16 B/param of model states alone: needs ZeRO/FSDP across GPUs or offload");
    case ML_CARD_NEEDS_GPUS: return _("does not fit one card at any sequence: needs more GPUs");
    }
    return "";
}

/* A GPU row's label: the card's name, or "24G = a10" for a size read as a card. */
static void gpu_label(const struct ml_card *k, size_t r, char *out, size_t n)
{
    const char *arg = k->gpu[r].arg, *card = k->gpu[r].card;
    if (!card[0] || !strcmp(arg, card))
        (void)snprintf(out, n, "%s", card[0] ? card : arg);
    else
        (void)snprintf(out, n, "%s = %s", arg, card);
}

/* The marketed size, "24 GB" (nominal bytes are N GiB for a card sold as N GB). */
static void sold_as(uint64_t nominal, char *out, size_t n)
{
    (void)snprintf(out, n, "%llu GB", (unsigned long long)(nominal >> 30));
}

static void card_intro(struct ml_buf *out, const struct ml_card *k)
{
    ml_buf_addf(out,
                _("Largest built-in model that fits one GPU with %u%% of it left free. Training: micro-batch %llu, "
                  "sequence %llu, LLaMA-Factory defaults (bf16 autocast, sdpa, gradient checkpointing, fused AdamW); "
                  "LoRA and QLoRA r=16 on every linear layer. Inference: transformers generate, batch 1, 4096 "
                  "tokens.\n\n"),
                k->st.margin_permille / 10, (unsigned long long)k->st.batch, (unsigned long long)k->st.seq);
}

/* The largest model of row r under method m, "qwen3-8b (8.19B)", or "none". */
static void best_cell(const struct ml_card *k, size_t r, int m, char *out, size_t n)
{
    const struct ml_catalog_entry *e = k->gpu[r].best[m];
    if (!e) {
        (void)snprintf(out, n, "%s", _("none"));
        return;
    }
    struct ml_buf b;
    ml_buf_init(&b, 32);
    ml_fmt_count_short(&b, e->params);
    (void)snprintf(out, n, "%s (%s)", e->name, b.buf);
    ml_buf_release(&b);
}

/* The handbook cell c's card, "rtx4090 (24 GB)". */
static void claim_gpu(const struct ml_card *k, size_t c, char *out, size_t n)
{
    (void)snprintf(out, n, "%s (%llu GB)", k->cell[c].cl->gpu, (unsigned long long)(k->cell[c].nominal >> 30));
}

/* xgettext:no-c-format */
#define HANDBOOK_MARGIN                                                                                                \
    N_("The handbook leaves 20% for \"activations and framework overhead\"; memledger counts activations, logits, "    \
       "allocator reserve and the CUDA context explicitly, so its margin is only what you want free.\n")

void ml_render_card_text(struct ml_buf *out, const struct ml_card *k, const struct ml_layout *lay, bool handbook)
{
    size_t start = out->len;
    size_t width = lay ? lay->width : 0;
    ml_buf_adds(out, _("What each GPU can train and serve\n\n"));
    card_intro(out, k);
    (void)ml_text_fold(out, start, width);
    /* One column per card (the card it stands for, its marketed size and what a process gets), one
     * row per method: three cards fit an 80-column terminal; more cards go on in further tables. */
    for (size_t first = 0; first < k->n_gpus; first += ML_TABLE_MAX_COLS - 1) {
        size_t ng = k->n_gpus - first < ML_TABLE_MAX_COLS - 1 ? k->n_gpus - first : ML_TABLE_MAX_COLS - 1;
        struct ml_table tb;
        ml_table_init(&tb, 1 + ng);
        for (size_t c = 0; c <= ng; c++)
            tb.wrap[c] = true;
        tb.width = width;
        char cells[ML_TABLE_MAX_COLS][2][120];
        const char *row[ML_TABLE_MAX_COLS], *row2[ML_TABLE_MAX_COLS];
        row[0] = _("GPU");
        row2[0] = "";
        for (size_t c = 0; c < ng; c++) {
            char sold[32], usable[32];
            gpu_label(k, first + c, cells[c][0], sizeof(cells[c][0]));
            sold_as(k->gpu[first + c].nominal, sold, sizeof(sold));
            (void)ml_fmt_gib_s(usable, sizeof(usable), k->gpu[first + c].capacity);
            (void)snprintf(cells[c][1], sizeof(cells[c][1]), _("%s, usable %s"), sold, usable);
            row[1 + c] = cells[c][0];
            row2[1 + c] = cells[c][1];
        }
        ml_table_row(&tb, row);
        ml_table_row(&tb, row2);
        ml_table_rule(&tb);
        for (int m = 0; m < ML_CARD_METHODS; m++) {
            row[0] = _(method_names[m]);
            for (size_t c = 0; c < ng; c++) {
                best_cell(k, first + c, m, cells[c][0], sizeof(cells[c][0]));
                row[1 + c] = cells[c][0];
            }
            ml_table_row(&tb, row);
        }
        if (first)
            ml_buf_adds(out, "\n");
        (void)ml_table_render(&tb, out, 0);
        ml_table_release(&tb);
    }
    size_t tail = out->len;
    if (!handbook) {
        ml_buf_adds(out, _("\n'memledger card --handbook' checks the seed handbook's card cell by cell.\n"));
        (void)ml_text_fold(out, tail, width);
        return;
    }
    ml_buf_addf(out, "\n%s\n\n", _("The seed handbook's card, cell by cell"));
    (void)ml_text_fold(out, tail, width);
    struct ml_table hb;
    ml_table_init(&hb, 7);
    hb.right[4] = true;
    for (int c = 0; c < 6; c++)
        hb.wrap[c] = true;
    hb.flex = 6;
    hb.width = width;
    const char *hh[7] = {_("GPU"),     _("method"),         _("handbook"), _("tested with"), _("memledger needs"),
                         _("verdict"), _("what decides it")};
    ml_table_row(&hb, hh);
    ml_table_rule(&hb);
    for (size_t c = 0; c < k->n_cells; c++) {
        const struct ml_card_claim *cl = k->cell[c].cl;
        if (!cl)
            continue;
        char g[80], need[32];
        claim_gpu(k, c, g, sizeof(g));
        (void)ml_fmt_gib_s(need, sizeof(need), k->cell[c].dev);
        const char *row[7] = {g,
                              _(method_names[cl->m]),
                              cl->text,
                              cl->reference,
                              need,
                              k->cell[c].why == ML_CARD_HOLDS ? _("holds") : _("does not hold"),
                              why_text(k->cell[c].why)};
        ml_table_row(&hb, row);
    }
    (void)ml_table_render(&hb, out, 0);
    ml_table_release(&hb);
    tail = out->len;
    ml_buf_addf(out, "\n%s", _(HANDBOOK_MARGIN));
    (void)ml_text_fold(out, tail, width);
}

void ml_render_card_markdown(struct ml_buf *out, const struct ml_card *k, bool handbook)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_buf_addf(out, "# %s\n\n", _("What each GPU can train and serve"));
    card_intro(out, k);
    ml_buf_addf(out, "| %s | %s | %s |", _("GPU"), _("sold as"), _("usable"));
    for (int m = 0; m < ML_CARD_METHODS; m++)
        ml_buf_addf(out, " %s |", _(method_names[m]));
    ml_buf_adds(out, "\n|---|---|---:|");
    for (int m = 0; m < ML_CARD_METHODS; m++)
        ml_buf_adds(out, "---|");
    ml_buf_adds(out, "\n");
    char label[120], sold[32], cell[120];
    for (size_t r = 0; r < k->n_gpus; r++) {
        gpu_label(k, r, label, sizeof(label));
        sold_as(k->gpu[r].nominal, sold, sizeof(sold));
        ml_set_gib(&b, k->gpu[r].capacity);
        ml_buf_addf(out, "| %s | %s | %s |", label, sold, b.buf);
        for (int m = 0; m < ML_CARD_METHODS; m++) {
            best_cell(k, r, m, cell, sizeof(cell));
            ml_buf_addf(out, " %s |", cell);
        }
        ml_buf_adds(out, "\n");
    }
    if (handbook) {
        ml_buf_addf(out, "\n## %s\n\n| %s | %s | %s | %s | %s | %s | %s |\n|---|---|---|---|---:|---|---|\n",
                    _("The seed handbook's card, cell by cell"), _("GPU"), _("method"), _("handbook"), _("tested with"),
                    _("memledger needs"), _("verdict"), _("what decides it"));
        for (size_t c = 0; c < k->n_cells; c++) {
            const struct ml_card_claim *cl = k->cell[c].cl;
            if (!cl)
                continue;
            char g[80];
            claim_gpu(k, c, g, sizeof(g));
            ml_set_gib(&b, k->cell[c].dev);
            ml_buf_addf(out, "| %s | %s | %s | %s | %s | %s | %s |\n", g, _(method_names[cl->m]), cl->text,
                        cl->reference, b.buf, k->cell[c].why == ML_CARD_HOLDS ? _("holds") : _("does not hold"),
                        why_text(k->cell[c].why));
        }
        ml_buf_addf(out, "\n%s", _(HANDBOOK_MARGIN));
    } else {
        ml_buf_adds(out, _("\n'memledger card --handbook' checks the seed handbook's card cell by cell.\n"));
    }
    ml_buf_release(&b);
}

/* docs/json.md, "card". */
enum ml_status ml_render_card_json(struct ml_buf *out, const struct ml_card *k)
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
        ml_json_kstr(&j, "card", k->gpu[r].card);
        ml_json_ku64(&j, "nominal_bytes", k->gpu[r].nominal);
        ml_json_ku64(&j, "capacity_bytes", k->gpu[r].capacity);
        ml_json_key(&j, "largest");
        ml_json_object_begin(&j);
        for (int m = 0; m < ML_CARD_METHODS; m++) {
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
    for (size_t c = 0; c < k->n_cells; c++) {
        const struct ml_card_claim *cl = k->cell[c].cl;
        if (!cl)
            continue;
        ml_json_object_begin(&j);
        ml_json_kstr(&j, "gpu", cl->gpu);
        ml_json_kstr(&j, "method", method_ids[cl->m]);
        ml_json_kstr(&j, "claim", cl->text);
        ml_json_kstr(&j, "reference", cl->reference);
        ml_json_ku64(&j, "device_used_bytes", k->cell[c].dev);
        ml_json_kbool(&j, "holds", k->cell[c].why == ML_CARD_HOLDS);
        ml_json_kstr(&j, "decided_by", why_ids[k->cell[c].why]);
        ml_json_object_end(&j);
    }
    ml_json_array_end(&j);
    ml_json_object_end(&j);
    return ml_json_finish(&j);
}
