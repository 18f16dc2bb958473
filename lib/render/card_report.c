/*
 * card_report.c - `memledger card` as Markdown and as JSON (docs/cli/card.md, docs/json.md "card"):
 * the largest model per GPU and method, then the seed handbook's cells with what decides each.
 */
#include "memledger/card.h"

#include "memledger/json.h"
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

void ml_render_card_text(struct ml_buf *out, const struct ml_card *k)
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
    for (int m = 0; m < ML_CARD_METHODS; m++)
        ml_buf_addf(out, " %s |", _(method_names[m]));
    ml_buf_adds(out, "\n|---|---:|");
    for (int m = 0; m < ML_CARD_METHODS; m++)
        ml_buf_adds(out, "---|");
    ml_buf_adds(out, "\n");
    for (size_t r = 0; r < k->n_gpus; r++) {
        ml_set_gib(&b, k->gpu[r].capacity);
        ml_buf_addf(out, "| %s | %s |", k->gpu[r].arg, b.buf);
        for (int m = 0; m < ML_CARD_METHODS; m++) {
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
    for (size_t c = 0; c < k->n_cells; c++) {
        const struct ml_card_claim *cl = k->cell[c].cl;
        if (!cl)
            continue;
        ml_set_gib(&b, k->cell[c].dev);
        ml_buf_addf(out, "| %s | %s | %s | %s | %s | %s | %s |\n", cl->gpu, _(method_names[cl->m]), cl->text,
                    cl->reference, b.buf, k->cell[c].why == ML_CARD_HOLDS ? _("true") : _("false"),
                    why_text(k->cell[c].why));
    }
    /* xgettext:no-c-format */
    ml_buf_adds(out, _("\nThe handbook leaves 20% for \"activations and framework overhead\"; memledger counts "
                       "activations, logits, allocator reserve and the CUDA context explicitly, so its margin "
                       "is only what you want free.\n"));
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
