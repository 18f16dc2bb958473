/*
 * cmd_compare.c - memledger compare: a measured run (memledger_hook.py JSON Lines, or a watch
 * timeline) and the training ledger for the same settings, side by side, component by component
 * and for the peaks, with the error of each and the assumption to revisit where one is off (the
 * seed handbook's mem_report homework: within 10 %).
 */
#include "cli.h"
#include "train_setup.h"

#include <stdio.h>
#include <string.h>

#include "memledger/json.h"
#include "memledger/monitor.h"
#include "memledger/render.h"
#include "memledger/units.h"
#include "i18n.h"

/* cmd_compare_usage: generated from docs/cli/compare.md (tools/gen_cli_docs.c). */

enum { O_JSON = ML_TO_END, O_TOL, O_CHECK };

struct compare_opts {
    struct ml_train_opts s;
    const char *measured;
    uint64_t tolerance_pct;
    bool json, check;
};

enum row_id { R_WEIGHTS, R_GRADS, R_OPTIM, R_ACT, R_PEAK_ALLOC, R_PEAK_RES, R_DEVICE, R_COUNT };

struct row {
    const char *id;           /* JSON id */
    const char *label;        /* table label */
    bool measured_ok;
    uint64_t measured;
    uint64_t ledger;
    bool has_error;
    int64_t error_permille;   /* (ledger - measured) / measured */
    bool off;
    const char *revisit;      /* the assumption to look at when off */
};

static int parse_args(int argc, char **argv, struct compare_opts *o)
{
    static const struct option longopts[] = {
        ML_TRAIN_LONGOPTS,
        {"json", no_argument, NULL, O_JSON}, {"tolerance", required_argument, NULL, O_TOL},
        {"check", no_argument, NULL, O_CHECK}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    ml_train_opts_init(&o->s, "compare");
    o->tolerance_pct = 10;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int r = ml_train_opt(&o->s, c, optarg);
        if (r < 0)
            return ML_EXIT_USAGE;
        if (r > 0)
            continue;
        switch (c) {
        case O_JSON: o->json = true; break;
        case O_CHECK: o->check = true; break;
        case O_TOL:
            if (!ml_opt_u64("compare", "--tolerance", optarg, 1, 100, &o->tolerance_pct))
                return ML_EXIT_USAGE;
            break;
        case 'h':
            fputs(_(cmd_compare_usage), stdout);
            return -1;
        default:
            return ml_usage_error("compare", _("unknown or incomplete option '%s'"), argv[optind - 1]);
        }
    }
    if (optind < argc)
        o->measured = argv[optind++];
    if (optind < argc)
        o->s.model = argv[optind++];
    if (optind < argc)
        return ml_usage_error("compare", _("unexpected argument '%s'"), argv[optind]);
    if (!o->measured)
        return ml_usage_error("compare", "%s", _("missing MEASURED.jsonl (what python/memledger_hook.py writes)"));
    return ML_EXIT_OK;
}

/* The ledger's side of each row. Weights include the fp32 master copy and quantization state
 * (all parameter storages the hook walks); activations are peak - static, as measured. */
static void ledger_side(const struct ml_ledger *l, struct row *r)
{
    uint64_t w = ml_ledger_bytes(l, ML_C_WEIGHTS_FROZEN) + ml_ledger_bytes(l, ML_C_WEIGHTS_TRAINABLE) +
                 ml_ledger_bytes(l, ML_C_QUANT_STATE) + ml_ledger_bytes(l, ML_C_MASTER);
    uint64_t g = ml_ledger_bytes(l, ML_C_GRADIENTS);
    uint64_t o = ml_ledger_bytes(l, ML_C_OPTIMIZER);
    uint64_t stat = w + g + o;
    r[R_WEIGHTS].ledger = w;
    r[R_GRADS].ledger = g;
    r[R_OPTIM].ledger = o;
    r[R_ACT].ledger = l->peak_allocated > stat ? l->peak_allocated - stat : 0;
    r[R_PEAK_ALLOC].ledger = l->peak_allocated;
    r[R_PEAK_RES].ledger = l->peak_reserved;
    r[R_DEVICE].ledger = l->device_used;
}

static void build_rows(const struct ml_measured *m, const struct ml_ledger *l, uint64_t tol_pct, struct row *r)
{
    static const struct {
        const char *id, *label, *revisit;
    } def[R_COUNT] = {
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
    const struct ml_measured_fig *figs[R_COUNT] = {&m->weights,        &m->gradients,     &m->optimizer,
                                                   &m->activations,    &m->peak_allocated, &m->peak_reserved,
                                                   &m->device_used};
    memset(r, 0, sizeof(*r) * R_COUNT);
    ledger_side(l, r);
    for (int i = 0; i < R_COUNT; i++) {
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
}

static void fmt_err(char *out, size_t n, const struct row *r)
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

static void render_text(struct ml_buf *out, const struct compare_opts *o, const struct ml_measured *m,
                        const struct ml_train_setup *s, const struct row *r)
{
    ml_buf_addf(out, _("measured: %s"), o->measured);
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
    ml_fmt_gib_s(cap, sizeof(cap), s->cl.gpu.capacity_bytes);
    ml_buf_addf(out, _("\nledger:   %s · %s"), s->m.name, ml_method_name(s->t.method));
    if (s->t.method == ML_METHOD_LORA || s->t.method == ML_METHOD_QLORA)
        ml_buf_addf(out, " r=%llu", (unsigned long long)s->t.lora_rank);
    ml_buf_addf(out, _(" · b=%llu s=%llu · %s · %u x %s (%s)\n\n"), (unsigned long long)s->l.micro_batch,
                (unsigned long long)s->l.seq_len, ml_precision_name(s->t.precision), s->l.world, s->cl.gpu.name, cap);

    struct ml_table t;
    ml_table_init(&t, 5);
    t.right[1] = t.right[2] = t.right[3] = true;
    const char *hdr[5] = {_("figure"), _("measured"), _("ledger"), _("error"), ""};
    ml_table_row(&t, hdr);
    ml_table_rule(&t);
    uint32_t n_ok = 0, n_meas = 0;
    for (int i = 0; i < R_COUNT; i++) {
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
    ml_buf_addf(out, _("\nwithin %llu %%: %u of %u measured figures\n"), (unsigned long long)o->tolerance_pct, n_ok,
                n_meas);
    bool head = false;
    for (int i = 0; i < R_COUNT; i++) {
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
    if (m->trainable_params && s->l.trainable && m->trainable_params != s->l.trainable) {
        struct ml_buf a, b;
        ml_buf_init(&a, 64);
        ml_buf_init(&b, 64);
        ml_fmt_count(&a, m->trainable_params);
        ml_fmt_count(&b, s->l.trainable);
        ml_buf_addf(out, _("note: the run trained %s parameters, the ledger assumes %s (check --method, "
                           "--lora-rank, --lora-target)\n"),
                    a.buf, b.buf);
        ml_buf_release(&a);
        ml_buf_release(&b);
    }
    if (!m->optimizer.ok && m->n_steps)
        ml_buf_adds(out, _("note: no optimizer state was measured; record a step after the first optimizer step\n"));
}

static void render_json(struct ml_json *j, const struct compare_opts *o, const struct ml_measured *m,
                        const struct ml_train_setup *s, const struct row *r)
{
    ml_json_object_begin(j);
    ml_json_key(j, "measured");
    ml_json_object_begin(j);
    ml_json_kstr(j, "file", o->measured);
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
    ml_json_kstr(j, "model", s->m.name);
    ml_json_kstr(j, "method", ml_method_name(s->t.method));
    ml_json_ku64(j, "micro_batch", s->l.micro_batch);
    ml_json_ku64(j, "seq_len", s->l.seq_len);
    ml_json_ku64(j, "trainable_params", s->l.trainable);
    ml_json_kstr(j, "gpu", s->cl.gpu.name);
    ml_json_ku64(j, "capacity_bytes", s->cl.gpu.capacity_bytes);
    ml_json_kstr(j, "peak_phase", ml_phase_name(s->l.peak_phase));
    ml_json_object_end(j);
    ml_json_ku64(j, "tolerance_percent", o->tolerance_pct);
    ml_json_key(j, "figures");
    ml_json_array_begin(j);
    uint32_t n_off = 0;
    for (int i = 0; i < R_COUNT; i++) {
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
}

int cmd_compare(int argc, char **argv)
{
    struct compare_opts o;
    memset(&o, 0, sizeof(o));
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return ML_EXIT_OK;
    if (rc != ML_EXIT_OK)
        return rc;

    /* The measurement first: a bad file is reported before the ledger's own questions. */
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf data;
    ml_buf_init(&data, ML_MEASURED_MAX_BYTES);
    static struct ml_measured m;
    enum ml_status st = ml_read_file(o.measured, ML_MEASURED_MAX_BYTES, &data, &d);
    if (st == ML_OK)
        st = ml_measured_parse(data.buf, data.len, o.measured, &m, &d);
    ml_buf_release(&data);
    if (st != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }

    static struct ml_train_setup s;
    rc = ml_train_setup_build(&o.s, &s);
    if (rc != ML_EXIT_OK)
        return rc;

    struct row r[R_COUNT];
    build_rows(&m, &s.l, o.tolerance_pct, r);
    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status rst = ML_OK;
    if (o.json) {
        struct ml_json j;
        ml_json_init(&j, &out);
        render_json(&j, &o, &m, &s, r);
        rst = ml_json_finish(&j);
    } else {
        render_text(&out, &o, &m, &s, r);
    }
    if (rst == ML_OK)
        rst = ml_write_stdout(&out);
    ml_buf_release(&out);
    if (rst != ML_OK)
        return ML_EXIT_USAGE;
    bool any_off = false;
    for (int i = 0; i < R_COUNT; i++)
        any_off = any_off || (r[i].measured_ok && r[i].off);
    return o.check && any_off ? ML_EXIT_NEGATIVE : ML_EXIT_OK;
}
