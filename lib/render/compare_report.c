/*
 * compare_report.c - memledger compare: a measured run (memledger_hook.py JSON Lines or a watch
 * timeline) held against the training ledger, figure by figure, with the error of each and the
 * assumption to revisit where one is off; as text and JSON (docs/cli/compare.md).
 */
#include "memledger/report.h"

#include <stdio.h>
#include <string.h>

#include "memledger/json.h"
#include "memledger/ledger.h"
#include "memledger/monitor.h"
#include "memledger/render.h"
#include "memledger/train.h"
#include "memledger/units.h"
#include "i18n.h"

/* The figures, in the order of the table. */
enum { CMP_WEIGHTS, CMP_GRADS, CMP_OPTIM, CMP_ACT, CMP_PEAK_ALLOC, CMP_PEAK_RES, CMP_DEVICE, CMP_COUNT };
_Static_assert(CMP_COUNT == ML_COMPARE_ROWS, "one row per compared figure");

/* The ledger's side of each row. Weights include the fp32 master copy and quantization state
 * (all parameter storages the hook walks); activations are peak - static, as measured. */
static void ledger_side(const struct ml_ledger *l, struct ml_compare_row *r)
{
    uint64_t w = ml_ledger_bytes(l, ML_C_WEIGHTS_FROZEN) + ml_ledger_bytes(l, ML_C_WEIGHTS_TRAINABLE) +
                 ml_ledger_bytes(l, ML_C_QUANT_STATE) + ml_ledger_bytes(l, ML_C_MASTER);
    uint64_t g = ml_ledger_bytes(l, ML_C_GRADIENTS);
    uint64_t o = ml_ledger_bytes(l, ML_C_OPTIMIZER);
    uint64_t stat = w + g + o;
    r[CMP_WEIGHTS].ledger = w;
    r[CMP_GRADS].ledger = g;
    r[CMP_OPTIM].ledger = o;
    r[CMP_ACT].ledger = l->peak_allocated > stat ? l->peak_allocated - stat : 0;
    r[CMP_PEAK_ALLOC].ledger = l->peak_allocated;
    r[CMP_PEAK_RES].ledger = l->peak_reserved;
    r[CMP_DEVICE].ledger = l->device_used;
}

uint32_t ml_compare_rows(const struct ml_measured *m, const struct ml_ledger *l, uint64_t tol_pct,
                         struct ml_compare_row *r)
{
    static const struct {
        const char *id, *label, *revisit;
    } def[ML_COMPARE_ROWS] = {
        {"weights", N_("weights"),
         N_("the dtype the weights load in (--dtype, quantization_bit), tied embeddings, and which modules train "
            "in fp32 (LoRA adapters, --method freeze layers)")},
        {"gradients", N_("gradients"),
         N_("which parameters have requires_grad (--method, --lora-target, freeze layers), the gradient dtype, "
            "and ZeRO-2/3 or FSDP partitioning over --num-gpus")},
        {"optimizer", N_("optimizer states"),
         N_("the optimizer and its state dtype (--optim: 8-bit, paged, adafactor), ZeRO partitioning and offload "
            "(--zero, --offload); the states exist only after the first optimizer step")},
        {"activations", N_("activations (peak - static)"),
         N_("the micro-batch and the tokens really fed (--batch, --seq: padding, packing, the longest sample), "
            "gradient checkpointing (--grad-ckpt), attention (--attn), the fp32 logits/loss copies "
            "(--transformers-version)")},
        {"peak_allocated", N_("peak allocated"),
         N_("the activation and logits terms, and the phase where the peak falls (eval without no_grad, the step "
            "after a save)")},
        {"peak_reserved", N_("peak reserved"),
         N_("the allocator's fragmentation reserve (--expandable-segments) and the cold cache after a save")},
        {"device", N_("device used"),
         N_("the CUDA/HIP context, NCCL buffers (--num-gpus, --nodes) and other processes on the GPU (memledger "
            "watch lists them)")},
    };
    const struct ml_measured_fig *figs[ML_COMPARE_ROWS] = {&m->weights,     &m->gradients,      &m->optimizer,
                                                           &m->activations, &m->peak_allocated, &m->peak_reserved,
                                                           &m->device_used};
    memset(r, 0, sizeof(*r) * ML_COMPARE_ROWS);
    ledger_side(l, r);
    for (int i = 0; i < ML_COMPARE_ROWS; i++) {
        r[i].id = def[i].id;
        r[i].label = _(def[i].label);
        r[i].revisit = _(def[i].revisit);
        r[i].measured_ok = figs[i]->ok;
        r[i].measured = figs[i]->bytes;
        if (!r[i].measured_ok)
            continue;
        if (r[i].measured == 0) {
            /* Nothing measured: only a ledger that also says 0 agrees. */
            r[i].has_error = false;
            r[i].off = r[i].ledger != 0;
            continue;
        }
        /* Integer per-mille, rounded half away from zero (no floating point in the output). */
        uint64_t diff = r[i].ledger > r[i].measured ? r[i].ledger - r[i].measured : r[i].measured - r[i].ledger;
        uint64_t pm = diff > UINT64_MAX / 2000 ? UINT64_MAX / 2 : (diff * 2000 / r[i].measured + 1) / 2;
        if (pm > INT64_MAX)
            pm = INT64_MAX;
        r[i].has_error = true;
        r[i].error_permille = r[i].ledger >= r[i].measured ? (int64_t)pm : -(int64_t)pm;
        r[i].off = pm > tol_pct * 10;
    }
    uint32_t n_off = 0;
    for (int i = 0; i < ML_COMPARE_ROWS; i++)
        n_off += r[i].measured_ok && r[i].off;
    return n_off;
}

static void fmt_err(char *out, size_t n, const struct ml_compare_row *r)
{
    if (!r->measured_ok) {
        (void)snprintf(out, n, "%s", "");
        return;
    }
    if (!r->has_error) {
        (void)snprintf(out, n, "%s", r->off ? "n/a" : "0.0 %");
        return;
    }
    int64_t v = r->error_permille;
    uint64_t a = v < 0 ? (uint64_t)(-v) : (uint64_t)v;
    (void)snprintf(out, n, "%c%llu.%llu %%", v < 0 ? '-' : '+', (unsigned long long)(a / 10),
                   (unsigned long long)(a % 10));
}

void ml_render_compare_text(struct ml_buf *out, const struct ml_compare_report *c, const struct ml_layout *lay)
{
    size_t start = out->len;
    const struct ml_measured *m = c->measured;
    const struct ml_compare_row *r = c->rows;
    ml_buf_addf(out, _("measured: %s"), c->file);
    if (m->n_steps)
        ml_buf_addf(out, _(" · %u steps"), m->n_steps);
    if (m->n_samples)
        ml_buf_addf(out, _(" · %u device samples"), m->n_samples);
    if (m->device_name[0])
        ml_buf_addf(out, " · %s", m->device_name);
    if (m->torch_version[0])
        ml_buf_addf(out, " · torch %s", m->torch_version);
    if (m->backend[0])
        ml_buf_addf(out, " (%s)", m->backend);
    char cap[32];
    ml_fmt_gib_s(cap, sizeof(cap), c->cl->gpu.capacity_bytes);
    ml_buf_addf(out, _("\nledger:   %s · %s"), c->m->name, ml_method_name(c->t->method));
    if (c->t->method == ML_METHOD_LORA || c->t->method == ML_METHOD_QLORA)
        ml_buf_addf(out, " r=%llu", (unsigned long long)c->t->lora_rank);
    ml_buf_addf(out, _(" · b=%llu s=%llu · %s · %u x %s (%s)\n\n"), (unsigned long long)c->l->micro_batch,
                (unsigned long long)c->l->seq_len, ml_precision_name(c->t->precision), c->l->world, c->cl->gpu.name,
                cap);

    struct ml_table t;
    ml_table_init(&t, 5);
    t.right[1] = t.right[2] = t.right[3] = true;
    const char *hdr[5] = {_("figure"), _("measured"), _("ledger"), _("error"), ""};
    ml_table_row(&t, hdr);
    ml_table_rule(&t);
    uint32_t n_ok = 0, n_meas = 0;
    for (int i = 0; i < ML_COMPARE_ROWS; i++) {
        char mv[32] = "", lv[32], ev[32];
        if (r[i].measured_ok)
            ml_fmt_gib_s(mv, sizeof(mv), r[i].measured);
        else
            (void)snprintf(mv, sizeof(mv), "%s", _("not measured"));
        ml_fmt_gib_s(lv, sizeof(lv), r[i].ledger);
        fmt_err(ev, sizeof(ev), &r[i]);
        const char *verdict = !r[i].measured_ok ? "" : r[i].off ? _("off") : _("ok");
        const char *row[5] = {r[i].label, mv, lv, ev, verdict};
        ml_table_row(&t, row);
        n_meas += r[i].measured_ok;
        n_ok += r[i].measured_ok && !r[i].off;
    }
    (void)ml_table_render(&t, out, 2);
    ml_table_release(&t);
    ml_buf_addf(out, _("\nwithin %llu %%: %u of %u measured figures\n"), (unsigned long long)c->tolerance_pct, n_ok,
                n_meas);
    bool head = false;
    for (int i = 0; i < ML_COMPARE_ROWS; i++) {
        if (!r[i].measured_ok || !r[i].off)
            continue;
        if (!head)
            ml_buf_adds(out, _("revisit:\n"));
        head = true;
        char ev[32];
        fmt_err(ev, sizeof(ev), &r[i]);
        ml_buf_addf(out, "  %s %s: %s\n", r[i].label, ev, r[i].revisit);
    }
    if (m->n_dtypes) {
        ml_buf_adds(out, _("measured weights by dtype:"));
        for (uint32_t i = 0; i < m->n_dtypes; i++) {
            char v[32];
            ml_fmt_gib_s(v, sizeof(v), m->dtypes[i].bytes);
            ml_buf_addf(out, "%s %s %s", i ? "," : "", m->dtypes[i].name, v);
        }
        ml_buf_adds(out, "\n");
    }
    if (m->n_phases > 1) {
        ml_buf_adds(out, _("measured peaks by phase (allocated / reserved):"));
        for (uint32_t i = 0; i < m->n_phases; i++) {
            char a[32], b[32];
            ml_fmt_gib_s(a, sizeof(a), m->phases[i].peak_allocated);
            ml_fmt_gib_s(b, sizeof(b), m->phases[i].peak_reserved);
            ml_buf_addf(out, "%s %s %s / %s", i ? " ·" : "", m->phases[i].name, a, b);
        }
        ml_buf_adds(out, "\n");
    }
    if (m->trainable_params && c->l->trainable && m->trainable_params != c->l->trainable) {
        struct ml_buf a, b;
        ml_buf_init(&a, 64);
        ml_buf_init(&b, 64);
        ml_fmt_count(&a, m->trainable_params);
        ml_fmt_count(&b, c->l->trainable);
        ml_buf_addf(out,
                    _("note: the run trained %s parameters, the ledger assumes %s (check --method, "
                      "--lora-rank, --lora-target)\n"),
                    a.buf, b.buf);
        ml_buf_release(&a);
        ml_buf_release(&b);
    }
    if (!m->optimizer.ok && m->n_steps)
        ml_buf_adds(out, _("note: no optimizer state was measured; record a step after the first optimizer step\n"));
    (void)ml_text_fold(out, start, lay ? lay->width : 0);
}

enum ml_status ml_render_compare_json(struct ml_buf *out, const struct ml_compare_report *c)
{
    const struct ml_measured *m = c->measured;
    const struct ml_compare_row *r = c->rows;
    struct ml_json js;
    struct ml_json *j = &js;
    ml_json_init(j, out);
    ml_json_document_begin(j);
    ml_json_key(j, "measured");
    ml_json_object_begin(j);
    ml_json_kstr(j, "file", c->file);
    ml_json_ku64(j, "records", m->n_records);
    ml_json_ku64(j, "steps", m->n_steps);
    ml_json_ku64(j, "device_samples", m->n_samples);
    ml_json_kstr(j, "device_name", m->device_name[0] ? m->device_name : NULL);
    ml_json_kstr(j, "torch", m->torch_version[0] ? m->torch_version : NULL);
    ml_json_kstr(j, "backend", m->backend[0] ? m->backend : NULL);
    ml_json_kstr(j, "device_source", m->device_source[0] ? m->device_source : NULL);
    ml_json_key(j, "trainable_params");
    if (m->trainable_params)
        ml_json_u64(j, m->trainable_params);
    else
        ml_json_null(j);
    ml_json_object_end(j);
    ml_json_key(j, "ledger");
    ml_json_object_begin(j);
    ml_json_kstr(j, "model", c->m->name);
    ml_json_kstr(j, "method", ml_method_name(c->t->method));
    ml_json_ku64(j, "micro_batch", c->l->micro_batch);
    ml_json_ku64(j, "seq_len", c->l->seq_len);
    ml_json_ku64(j, "trainable_params", c->l->trainable);
    ml_json_kstr(j, "gpu", c->cl->gpu.name);
    ml_json_ku64(j, "capacity_bytes", c->cl->gpu.capacity_bytes);
    ml_json_kstr(j, "peak_phase", ml_phase_name(c->l->peak_phase));
    ml_json_object_end(j);
    ml_json_ku64(j, "tolerance_percent", c->tolerance_pct);
    ml_json_key(j, "figures");
    ml_json_array_begin(j);
    uint32_t n_off = 0;
    for (int i = 0; i < ML_COMPARE_ROWS; i++) {
        ml_json_object_begin(j);
        ml_json_kstr(j, "id", r[i].id);
        ml_json_key(j, "measured_bytes");
        if (r[i].measured_ok)
            ml_json_u64(j, r[i].measured);
        else
            ml_json_null(j);
        ml_json_ku64(j, "ledger_bytes", r[i].ledger);
        ml_json_key(j, "error_permille");
        if (r[i].has_error)
            ml_json_i64(j, r[i].error_permille);
        else
            ml_json_null(j);
        ml_json_key(j, "within_tolerance");
        if (r[i].measured_ok)
            ml_json_bool(j, !r[i].off);
        else
            ml_json_null(j);
        ml_json_kstr(j, "revisit", r[i].measured_ok && r[i].off ? r[i].revisit : NULL);
        ml_json_object_end(j);
        n_off += r[i].measured_ok && r[i].off;
    }
    ml_json_array_end(j);
    ml_json_ku64(j, "figures_off", n_off);
    ml_json_object_end(j);
    return ml_json_finish(j);
}
